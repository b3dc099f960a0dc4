/* GPT layer types: GPTBlock (a pre-LayerNorm transformer block as GPT-2 and nanoGPT build it) and
 * TiedOutput (the language-model head that shares the token embedding matrix: weight tying).
 * GPTBlock's variables follow Hugging Face GPT-2's layout (Conv1D weights [in, out], the fused
 * query/key/value projection c_attn), so a GPT-2 checkpoint maps onto it tensor for tensor:
 *   ln_1/gamma, ln_1/beta, attn/c_attn/kernel [D, 3D], attn/c_attn/bias [3D],
 *   attn/c_proj/kernel [D, D], attn/c_proj/bias, ln_2/gamma, ln_2/beta,
 *   mlp/c_fc/kernel [D, 4D], mlp/c_fc/bias, mlp/c_proj/kernel [4D, D], mlp/c_proj/bias.
 * Not Keras layers: a Keras file cannot hold them (Keras's own GPT-2, keras_hub's, calls its
 * ReversibleEmbedding twice, a shared layer); ONNX export writes them as opset 17 ops (src/onnx/onnx_export.c: export_gpt_block). */
#include <math.h>
#include <stdio.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

/* GPT-2's initialisation: N(0, 0.02) kernels, zero biases */
#define NN_DINIT_GPT { .kind = NN_V_INIT, .init = { .kind = KILN_INIT_NORMAL, .a = 0, .b = 0.02 } }

static const nn_opt_spec gpt_block_opts[] = {
    { "num_heads", NN_T_INT, NN_CFG(num_heads), 1, { 0 } },
    { "dropout", NN_T_FLOAT, NN_CFG(rate), 0, NN_DFLOAT(0) },
    { "epsilon", NN_T_FLOAT, NN_CFG(epsilon), 0, NN_DFLOAT(1e-5) },
    { "gelu_approximate", NN_T_BOOL, NN_CFG(approximate), 0, NN_DBOOL(false) },
    { "kernel_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT_GPT },
    /* the two projections into the residual stream (GPT-2: N(0, 0.02 / sqrt(2 n_layer))) */
    { "projection_initializer", NN_T_INIT, NN_CFG(pointwise_init), 0, NN_DINIT_GPT },
    { "seed", NN_T_SEED, NN_CFG(seed), 0, NN_DNULL },
    { NULL },
};
static kiln_status gpt_block_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (s.rank != 2)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s must be a sequence (None, T, features)", nn_batched_str(s, b, sizeof b));
    if (c->num_heads < 1 || s.dim[1] % c->num_heads)
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "num_heads %d must divide the width %lld", c->num_heads, (long long)s.dim[1]);
    if (!(c->rate >= 0 && c->rate < 1)) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "dropout must be in [0, 1), got %g", c->rate);
    if (!(c->epsilon > 0) || !isfinite(c->epsilon))
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "epsilon must be a positive number, got %g", c->epsilon);
    l->heads = c->num_heads;
    l->key_dim = (int)(s.dim[1] / c->num_heads);
    l->rate = c->rate;
    l->epsilon = c->epsilon;
    l->approximate = c->approximate;
    l->seed = c->seed;
    l->causal = true;
    l->use_bias = true;
    l->out = s;
    return KILN_OK;
}
static void gpt_block_vars(kiln_layer *l, const nn_layer_cfg *c) {
    int64_t d = l->out.dim[1];
    kiln_init ones = { .kind = KILN_INIT_ONES }, zeros = { .kind = KILN_INIT_ZEROS };
    nn_layer_add_var(l, "ln_1/gamma", KILN_SHAPE(d), ones, true, 0);
    nn_layer_add_var(l, "ln_1/beta", KILN_SHAPE(d), zeros, true, 0);
    nn_layer_add_var(l, "attn/c_attn/kernel", KILN_SHAPE(d, 3 * d), c->kernel_init, true, 0);
    nn_layer_add_var(l, "attn/c_attn/bias", KILN_SHAPE(3 * d), zeros, true, 0);
    nn_layer_add_var(l, "attn/c_proj/kernel", KILN_SHAPE(d, d), c->pointwise_init, true, 0);
    nn_layer_add_var(l, "attn/c_proj/bias", KILN_SHAPE(d), zeros, true, 0);
    nn_layer_add_var(l, "ln_2/gamma", KILN_SHAPE(d), ones, true, 0);
    nn_layer_add_var(l, "ln_2/beta", KILN_SHAPE(d), zeros, true, 0);
    nn_layer_add_var(l, "mlp/c_fc/kernel", KILN_SHAPE(d, 4 * d), c->kernel_init, true, 0);
    nn_layer_add_var(l, "mlp/c_fc/bias", KILN_SHAPE(4 * d), zeros, true, 0);
    nn_layer_add_var(l, "mlp/c_proj/kernel", KILN_SHAPE(4 * d, d), c->pointwise_init, true, 0);
    nn_layer_add_var(l, "mlp/c_proj/bias", KILN_SHAPE(d), zeros, true, 0);
}

/* rows [N, in] @ kernel + bias, the bias cast first (fusable) as Dense does */
static kiln_node *linear(const nn_fwd *f, kiln_layer *l, kiln_node *x, const char *which) {
    char nm[40];
    snprintf(nm, sizeof nm, "%s/bias", which);
    kiln_node *bias = kiln_autocast_weight(f->g, nn_layer_var(f, l, nm));
    snprintf(nm, sizeof nm, "%s/kernel", which);
    return kiln_bias_add(f->g, kiln_matmul(f->g, x, nn_layer_var(f, l, nm), false, false), bias);
}
static kiln_node *drop(const nn_fwd *f, kiln_layer *l, kiln_node *x, uint64_t which) {
    if (!f->training || l->rate == 0) return x;
    uint64_t seed = l->seed ? l->seed + which : kiln_mix64(f->m->seed ^ (0x6B70ull + 2 * (uint64_t)l->index + which));
    return kiln_dropout(f->g, x, l->rate, seed, true);
}
static kiln_node *same_type(kiln_graph *g, kiln_node *y, kiln_node *like) {
    return kiln_node_dtype(y) == kiln_node_dtype(like) ? y : kiln_cast(g, y, kiln_node_dtype(like));
}
static kiln_node *f32(kiln_graph *g, kiln_node *x) { return kiln_node_dtype(x) == KILN_F32 ? x : kiln_cast(g, x, KILN_F32); }

/* causal self-attention of h [B*T, D] -> [B*T, D] (before c_proj) */
static kiln_node *self_attention(const nn_fwd *f, kiln_layer *l, kiln_node *h, int64_t B, int64_t T) {
    static const int perm[4] = { 0, 2, 1, 3 };
    kiln_graph *g = f->g;
    int64_t D = l->out.dim[1], H = l->heads, K = l->key_dim;
    kiln_node *qkv = linear(f, l, h, "attn/c_attn"), *p[3];
    for (int i = 0; i < 3; i++) {
        kiln_node *c = kiln_slice(g, qkv, (int64_t[]){ 0, i * D }, (int64_t[]){ B * T, D });
        p[i] = f32(g, kiln_transpose(g, kiln_reshape(g, c, KILN_SHAPE(B, T, H, K)), perm));
    }
    /* nanoGPT's attn_dropout: the block's dropout on the attention probabilities too (training) */
    double rate = f->training ? l->rate : 0.0;
    uint64_t seed = l->seed ? l->seed + 2 : kiln_mix64(f->m->seed ^ (0x6B70ull + 2 * (uint64_t)l->index + 2));
    kiln_node *o = kiln_attention_dropout(g, p[0], p[1], p[2], true, 1.0 / sqrt((double)K), rate, seed);
    return kiln_reshape(g, kiln_transpose(g, o, perm), KILN_SHAPE(B * T, D));
}

static kiln_node *gpt_block_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_graph *g = f->g;
    kiln_shape s = kiln_node_shape(x);
    int64_t B = s.dim[0], T = s.dim[1], D = s.dim[2];
    kiln_node *h = kiln_layer_norm(g, x, nn_layer_var(f, l, "ln_1/gamma"), nn_layer_var(f, l, "ln_1/beta"), l->epsilon);
    kiln_node *a = linear(f, l, self_attention(f, l, kiln_reshape(g, h, KILN_SHAPE(B * T, D)), B, T), "attn/c_proj");
    x = kiln_add(g, x, same_type(g, drop(f, l, kiln_reshape(g, a, s), 0), x));
    h = kiln_reshape(g, kiln_layer_norm(g, x, nn_layer_var(f, l, "ln_2/gamma"), nn_layer_var(f, l, "ln_2/beta"), l->epsilon), KILN_SHAPE(B * T, D));
    h = linear(f, l, h, "mlp/c_fc");
    h = l->approximate ? kiln_gelu_tanh(g, h) : kiln_gelu(g, h);
    h = linear(f, l, h, "mlp/c_proj");
    return kiln_add(g, x, same_type(g, drop(f, l, kiln_reshape(g, h, s), 1), x));
}
const nn_layer_def nn_def_gpt_block = { "GPTBlock", "gpt_block", gpt_block_opts, 1, 1, gpt_block_shape, gpt_block_vars, gpt_block_forward };

/* ---- TiedOutput: (hidden (None, T, D), Embedding (None, T, D)) -> (None, T, V) ---- */
static const nn_opt_spec tied_opts[] = { { NULL } };
static kiln_status tied_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (l->n_in != 2 || l->in[1]->kind != NN_EMBEDDING)
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "needs two inputs: the hidden sequence and the Embedding layer whose matrix it shares");
    if (s.rank != 2 || s.dim[1] != l->in[1]->units)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s must be a sequence (None, T, %d), the width of embedding '%s'", nn_batched_str(s, b, sizeof b),
                             l->in[1]->units, l->in[1]->name);
    l->units = l->in[1]->input_dim;
    l->out = KILN_SHAPE(s.dim[0], l->units);
    return KILN_OK;
}
/* logits = h E^T: the gradient reaches E from both of its uses (the lookup and this product) */
static kiln_node *tied_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_shape s = kiln_node_shape(x);
    kiln_node *e = nn_layer_var(f, l->in[1], "embeddings");
    kiln_node *y = kiln_matmul(f->g, kiln_reshape(f->g, x, KILN_SHAPE(s.dim[0] * s.dim[1], s.dim[2])), e, false, true);
    return kiln_reshape(f->g, y, KILN_SHAPE(s.dim[0], s.dim[1], l->units));
}
const nn_layer_def nn_def_tied_output = { "TiedOutput", "tied_output", tied_opts, 2, 2, tied_shape, NULL, tied_forward };
