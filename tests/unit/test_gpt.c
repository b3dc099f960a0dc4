/* GPT models: the GPTBlock and TiedOutput layers, the gpt_char / gpt2 presets, generation.
 * - a small GPT's logits from kiln_predict (a forward over the whole sequence, no cache) equal
 *   those kiln_generate decodes token by token with its KV cache (within 1e-5), and greedy ids
 *   are the argmax of the uncached logits; seeded sampling repeats, top_k 1 is greedy;
 *   generation past the context keeps going;
 * - weight tying: the head has no variable of its own, and the logits follow the embedding;
 * - a checkpoint rebuilds the model (GPTBlock, TiedOutput) with the same logits;
 * - presets: parameter counts (gpt_char 10.77M with its position table, gpt2 124.4M), and the
 *   planned step memory grows linearly in the context;
 * - errors: a non-GPT model, a prompt id outside the vocabulary. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "core/core.h"

enum { T = 12, V = 11, D = 16, H = 2, L = 2 };

static kiln_model *small_gpt(void) {
    kiln_model *m = kiln_model_new("small_gpt");
    kiln_init big = kiln_init_normal(0, 1.0, 5);
    kiln_layer *x = kiln_input(m, KILN_SHAPE(T));
    kiln_layer *tok = kiln_layer_embedding(m, &(kiln_embedding_opts){ .name = "wte", .input = x, .input_dim = V, .output_dim = D,
                                                                     .embeddings_initializer = &big });
    kiln_layer *pos = kiln_layer_position_embedding(m, &(kiln_position_embedding_opts){ .name = "wpe", .input = tok, .sequence_length = T });
    kiln_layer *h = kiln_layer_add(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ tok, pos }, .n_inputs = 2 });
    for (int i = 0; i < L; i++)
        h = kiln_layer_gpt_block(m, &(kiln_gpt_block_opts){ .input = h, .num_heads = H, .dropout = 0.1, .gelu_approximate = i == 1, .init_stddev = 0.3 });
    h = kiln_layer_layer_norm(m, &(kiln_layer_norm_opts){ .input = h, .epsilon = 1e-5 });
    kiln_layer *out = kiln_layer_tied_output(m, "lm_head", h, tok);
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adamw(1e-3, 0.1), .from_logits = true, .device = "cpu" }));
    return m;
}

/* logits [T, V] of the sequence ids (n of them, the rest 0: causal, so they change nothing before n) */
static kiln_tensor *full_logits(kiln_model *m, const int32_t *ids, int n) {
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(1, T)), *y = NULL;
    for (int t = 0; t < T; t++) kiln_tensor_set(x, t, t < n ? ids[t] : 0);
    CHECK_OK(kiln_predict(m, x, NULL, &y));
    kiln_tensor_free(x);
    return y;
}

static void test_cached_equals_uncached(kiln_model *m) {
    int32_t prompt[3] = { 3, 7, 1 }, *ids = NULL;
    int n = 0;
    kiln_tensor *lg = NULL;
    CHECK_OK(kiln_generate(m, prompt, 3, &(kiln_generate_opts){ .tokens = T - 3, .logits = &lg }, &ids, &n));
    CHECK(n == T && ids && lg);
    if (!ids || !lg) return;
    kiln_tensor *full = full_logits(m, ids, n);
    double worst = 0, spread = 0;
    int argmax_ok = 1;
    for (int k = 0; full && k < T - 3; k++) {
        const float *a = (const float *)lg->data + k * V, *b = (const float *)full->data + (2 + k) * V;
        int best = 0;
        for (int v = 0; v < V; v++) {
            double e = fabs((double)a[v] - b[v]);
            if (e > worst) worst = e;
            if (fabs(b[v] - b[0]) > spread) spread = fabs(b[v] - b[0]);
            if (b[v] > b[best]) best = v;
        }
        if (ids[3 + k] != best) argmax_ok = 0;
    }
    printf("cached vs uncached logits over %d new tokens: max |diff| %.3g (logit spread %.3g)\n", T - 3, worst, spread);
    CHECK_MSG(worst < 1e-5 && spread > 0.5, "max diff %g, spread %g", worst, spread);
    CHECK_MSG(argmax_ok, "greedy ids are not the argmax of the uncached logits");
    kiln_tensor_free(full);
    kiln_tensor_free(lg);
    /* sampling: the seed repeats it, top_k 1 is greedy */
    int32_t *s1 = NULL, *s2 = NULL, *s3 = NULL;
    int n1 = 0, n2 = 0, n3 = 0;
    CHECK_OK(kiln_generate(m, prompt, 3, &(kiln_generate_opts){ .tokens = 8, .temperature = 1.5, .seed = 9 }, &s1, &n1));
    CHECK_OK(kiln_generate(m, prompt, 3, &(kiln_generate_opts){ .tokens = 8, .temperature = 1.5, .seed = 9 }, &s2, &n2));
    CHECK_OK(kiln_generate(m, prompt, 3, &(kiln_generate_opts){ .tokens = 8, .temperature = 1.5, .top_k = 1, .seed = 4 }, &s3, &n3));
    CHECK(s1 && s2 && s3 && n1 == 11 && !memcmp(s1, s2, sizeof *s1 * 11) && !memcmp(s3, ids, sizeof *s3 * 11));
    free(s1);
    free(s2);
    free(s3);
    /* past the context (12): 30 new tokens, all in the vocabulary */
    CHECK_OK(kiln_generate(m, prompt, 3, &(kiln_generate_opts){ .tokens = 30, .temperature = 1, .top_k = 5, .seed = 2 }, &s1, &n1));
    int in_vocab = s1 && n1 == 33;
    for (int i = 0; in_vocab && i < n1; i++) in_vocab = s1[i] >= 0 && s1[i] < V;
    CHECK_MSG(in_vocab, "generation past the context: %d ids", n1);
    free(s1);
    free(ids);
}

/* tying: no head variable; changing the embedding matrix changes the logits through both uses */
static void test_tying_and_checkpoint(kiln_model *m) {
    int64_t per_block = 12LL * D * D + 13LL * D;
    CHECK_MSG(kiln_model_param_count(m, false) == V * D + T * D + L * per_block + 2 * D, "params %lld", (long long)kiln_model_param_count(m, false));
    int32_t ids[4] = { 1, 2, 3, 4 };
    kiln_tensor *before = full_logits(m, ids, 4);
    char dir[] = "/tmp/kiln_test_gpt_XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/gpt.safetensors", dir);
    CHECK_OK(kiln_model_save(m, path, false));
    kiln_model *r = NULL;
    CHECK_OK(kiln_model_from_checkpoint(path, &r));
    if (r) {
        CHECK_OK(kiln_compile(r, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-3), .from_logits = true, .device = "cpu" }));
        kiln_tensor *again = full_logits(r, ids, 4);
        double e = 0;
        for (int i = 0; before && again && i < T * V; i++) e = fmax(e, fabs(kiln_tensor_get(before, i) - kiln_tensor_get(again, i)));
        CHECK_MSG(e == 0, "logits after the checkpoint differ by %g", e);
        kiln_tensor_free(again);
        kiln_model_free(r);
    }
    unlink(path);
    rmdir(dir);
    kiln_tensor *w = NULL;
    CHECK_OK(kiln_model_get_weight(m, "wte/embeddings", &w));
    if (w) {
        for (int i = 0; i < D; i++) kiln_tensor_set(w, 5 * D + i, 0);     /* token 5's row: its logit becomes exactly 0 */
        CHECK_OK(kiln_model_set_weight(m, "wte/embeddings", w));
        kiln_tensor *after = full_logits(m, ids, 4);
        int zero = 1;
        for (int t = 0; after && t < T; t++) zero &= kiln_tensor_get(after, t * V + 5) == 0;
        CHECK_MSG(zero, "the head does not use the embedding matrix");
        kiln_tensor_free(after);
        kiln_tensor_free(w);
    }
    kiln_tensor_free(before);
}

static size_t step_bytes(const char *name, int64_t ctx) {
    kiln_model *m = kiln_model_preset(name, KILN_SHAPE(ctx), 0);
    CHECK(m != NULL);
    if (!m) return 0;
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adamw(6e-4, 0.1), .from_logits = true, .device = "cpu" }));
    kiln_memory_report r = { 0 };
    CHECK_OK(kiln_model_memory(m, 8, 1, &r));
    size_t b = r.peak_bytes;
    kiln_memory_report_free(&r);
    kiln_model_free(m);
    return b;
}

static void test_presets(void) {
    kiln_model *c = kiln_model_preset("gpt_char", KILN_SCALAR, 0), *g = kiln_model_preset("gpt2", KILN_SCALAR, 0);
    CHECK(c && g);
    if (c) CHECK_MSG(kiln_model_param_count(c, false) == 10770816, "gpt_char %lld", (long long)kiln_model_param_count(c, false));
    /* GPT-2 small: 124,439,808 (Hugging Face's count, the head tied) */
    if (g) CHECK_MSG(kiln_model_param_count(g, false) == 124439808, "gpt2 %lld", (long long)kiln_model_param_count(g, false));
    kiln_model_free(c);
    kiln_model_free(g);
    size_t a = step_bytes("gpt_char", 256), b = step_bytes("gpt_char", 1024);
    printf("gpt_char planned step (batch 8, adamw): context 256 %.1f MiB, 1024 %.1f MiB\n", a / 1048576.0, b / 1048576.0);
    CHECK_MSG(b > 2 * a && b < 5 * a, "%zu %zu not linear", a, b);
}

static void test_errors(kiln_model *gpt) {
    int32_t bad[2] = { 1, V }, *ids = NULL;
    int n = 0;
    kiln_status st = kiln_generate(gpt, bad, 2, &(kiln_generate_opts){ .tokens = 2 }, &ids, &n);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "token id 11") && strstr(kiln_last_error(), "vocabulary size 11"), "%s", kiln_last_error());
    kiln_model *mlp = kiln_model_preset("mlp", KILN_SCALAR, 10);
    st = kiln_generate(mlp, bad, 1, &(kiln_generate_opts){ .tokens = 2 }, &ids, &n);
    CHECK_MSG(st == KILN_UNSUPPORTED && strstr(kiln_last_error(), "not a GPT"), "%s", kiln_last_error());
    kiln_model_free(mlp);
}

int main(void) {
    kiln_model *m = small_gpt();
    test_cached_equals_uncached(m);
    test_tying_and_checkpoint(m);
    test_errors(m);
    kiln_model_free(m);
    test_presets();
    return check_summary("test_gpt");
}
