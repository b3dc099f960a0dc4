/* The GPT presets (Radford et al. 2019; Karpathy's nanoGPT):
 *   gpt_char  nanoGPT's shakespeare-char model: 6 layers, 6 heads, width 384, context 256,
 *             dropout 0.2, exact GELU (PyTorch nn.GELU); vocabulary from the data (default 65)
 *   gpt2      GPT-2 small (124M): 12 layers, 12 heads, width 768, context 1024, vocabulary 50257,
 *             tanh GELU, dropout 0 (nanoGPT's setting for it; Hugging Face's config says 0.1)
 * Token embedding + learned position embedding -> dropout -> pre-LayerNorm blocks -> final
 * LayerNorm -> logits through the token embedding's transpose (weight tying). The input is the
 * context (T) of token ids; the output (T, vocabulary) logits, for the sparse cross-entropy on
 * (T) next-token ids. Initialisation as GPT-2: N(0, 0.02), the residual projections scaled by
 * 1/sqrt(2 n_layer). Each block's dropout applies to the attention probabilities and the two
 * residual branches, as nanoGPT's attn_dropout and resid_dropout. */
#include <stdio.h>
#include <string.h>
#include "nn/nn_zoo.h"

void nn_zoo_gpt_build(kiln_model *m, kiln_shape in, const nn_gpt_config *c) {
    kiln_init wte = kiln_init_normal(0, 0.02, 0), wpe = kiln_init_normal(0, 0.01, 0);   /* GPT-2: wpe 0.01 */
    kiln_layer *input = kiln_input(m, in);
    kiln_layer *tok = kiln_layer_embedding(m, &(kiln_embedding_opts){ .name = "wte", .input = input, .input_dim = c->vocab, .output_dim = c->width,
                                                                     .embeddings_initializer = &wte });
    kiln_layer *pos = kiln_layer_position_embedding(m, &(kiln_position_embedding_opts){ .name = "wpe", .input = tok,
                                                                                        .sequence_length = c->positions > 0 ? c->positions : (int)in.dim[0],
                                                                                        .initializer = &wpe });
    kiln_layer *x = kiln_layer_add(m, &(kiln_merge_opts){ .name = "embed", .inputs = (kiln_layer *[]){ tok, pos }, .n_inputs = 2 });
    if (c->dropout > 0) x = kiln_layer_dropout(m, &(kiln_dropout_opts){ .name = "drop", .input = x, .rate = c->dropout });
    char n[32];
    for (int i = 0; i < c->layers; i++) {
        snprintf(n, sizeof n, "h_%d", i);
        x = kiln_layer_gpt_block(m, &(kiln_gpt_block_opts){ .name = n, .input = x, .num_heads = c->heads, .dropout = c->dropout, .epsilon = c->epsilon,
                                                            .gelu_approximate = c->gelu_tanh, .residual_scale_layers = c->layers });
    }
    x = kiln_layer_layer_norm(m, &(kiln_layer_norm_opts){ .name = "ln_f", .input = x, .epsilon = c->epsilon });
    kiln_layer *out = kiln_layer_tied_output(m, "lm_head", x, tok);
    kiln_model_functional(m, &input, 1, &out, 1);
}

void nn_zoo_gpt(kiln_model *m, kiln_shape in, int classes) {
    bool small = !strcmp(kiln_model_name(m), "gpt_char");
    nn_gpt_config c = small ? (nn_gpt_config){ .layers = 6, .heads = 6, .width = 384, .dropout = 0.2, .epsilon = 1e-5 }
                            : (nn_gpt_config){ .layers = 12, .heads = 12, .width = 768, .dropout = 0, .epsilon = 1e-5, .gelu_tanh = true };
    c.vocab = classes;
    nn_zoo_gpt_build(m, in, &c);
}
