/* The transformer ops end to end in C (the layers come later): a token id outside the vocabulary
 * is a run-time error naming the id and the vocabulary size on every backend; a tiny causal
 * language model (token + position embeddings, LayerNorm, one attention block, GELU (tanh), the
 * softmax cross-entropy over [B*T, V] logits) trains, and its logits at position t do not depend
 * on tokens after t; the planned step memory of attention grows linearly in T; a Keras 3 model
 * (Embedding, LayerNormalization, causal MultiHeadAttention) loaded from its JSON with Keras's
 * weights predicts what Keras predicts (tests/data/keras/make_transformer.py). Also run on the
 * CUDA simulator (test_transformer_cudasim). */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/device.h"
#include "core/core.h"
#include "kiln/onnx.h"

static kiln_backend_kind device_kind(void) { return kiln_gpu_available() ? KILN_BACKEND_CUDA : KILN_BACKEND_CPU; }

static void test_bad_id(kiln_backend_kind kind, const char *what) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *table = kiln_variable(g, "table", KILN_F32, KILN_SHAPE(50, 4), kiln_init_uniform(-1, 1, 3));
    kiln_node *ids = kiln_placeholder(g, "ids", KILN_I32, KILN_SHAPE(2, 3));
    kiln_node *y = kiln_embedding_lookup(g, table, ids);
    kiln_node *loss = kiln_reduce_sum(g, y, NULL, 0, false), *dt = NULL;
    CHECK_OK(kiln_gradients(g, loss, &table, 1, &dt));
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = kind });
    kiln_tensor *t = kiln_tensor_new(KILN_I32, KILN_SHAPE(2, 3));
    int32_t good[6] = { 0, 49, 3, 3, 7, 1 }, bad[6] = { 0, 1, 2, 3, 70, 5 };
    memcpy(t->data, good, sizeof good);
    kiln_feed f = { ids, t };
    kiln_tensor *out = NULL;
    CHECK_OK(kiln_session_run(s, &f, 1, &dt, &out, 1, NULL, 0));
    if (out) CHECK_NEAR(kiln_tensor_get(out, 3 * 4), 2.0, 0);   /* row 3 gathered twice: its gradient is 2 */
    kiln_tensor_free(out);
    out = NULL;
    memcpy(t->data, bad, sizeof bad);
    kiln_status st = kiln_session_run(s, &f, 1, &y, &out, 1, NULL, 0);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "token id 70") &&
              strstr(kiln_last_error(), "vocabulary size 50"), "%s: %s: %s", what, kiln_status_name(st), kiln_last_error());
    kiln_tensor_free(out);
    kiln_tensor_free(t);
    kiln_session_free(s);
    kiln_graph_free(g);
}

enum { B = 4, T = 16, V = 13, D = 16, H = 2, DH = 8 };

typedef struct lm { kiln_graph *g; kiln_node *ids, *targets, *logits, *loss, *step, *vars[9]; } lm;

/* [B*T, D] -> [B, H, T, DH] */
static kiln_node *heads(kiln_graph *g, kiln_node *x) {
    static const int perm[4] = { 0, 2, 1, 3 };
    return kiln_transpose(g, kiln_reshape(g, x, KILN_SHAPE(B, T, H, DH)), perm);
}

static void lm_build(lm *m) {
    kiln_graph *g = m->g = kiln_graph_new();
    static const int perm[4] = { 0, 2, 1, 3 };
    kiln_node **w = m->vars;
    w[0] = kiln_variable(g, "tok", KILN_F32, KILN_SHAPE(V, D), kiln_init_normal(0, 0.3, 1));
    w[1] = kiln_variable(g, "pos", KILN_F32, KILN_SHAPE(T, D), kiln_init_normal(0, 0.3, 2));
    w[2] = kiln_variable(g, "ln_g", KILN_F32, KILN_SHAPE(D), kiln_init_ones());
    w[3] = kiln_variable(g, "ln_b", KILN_F32, KILN_SHAPE(D), kiln_init_zeros());
    w[4] = kiln_variable(g, "wq", KILN_F32, KILN_SHAPE(D, D), kiln_init_glorot_uniform(3));
    w[5] = kiln_variable(g, "wk", KILN_F32, KILN_SHAPE(D, D), kiln_init_glorot_uniform(4));
    w[6] = kiln_variable(g, "wv", KILN_F32, KILN_SHAPE(D, D), kiln_init_glorot_uniform(5));
    w[7] = kiln_variable(g, "wo", KILN_F32, KILN_SHAPE(D, D), kiln_init_glorot_uniform(6));
    w[8] = kiln_variable(g, "head", KILN_F32, KILN_SHAPE(D, V), kiln_init_glorot_uniform(7));
    m->ids = kiln_placeholder(g, "ids", KILN_I32, KILN_SHAPE(B, T));
    m->targets = kiln_placeholder(g, "targets", KILN_I32, KILN_SHAPE(B, T));
    kiln_node *x = kiln_add(g, kiln_embedding_lookup(g, w[0], m->ids), w[1]);          /* [B, T, D] */
    kiln_node *h = kiln_reshape(g, kiln_layer_norm(g, x, w[2], w[3], 1e-5), KILN_SHAPE(B * T, D));
    kiln_node *o = kiln_attention(g, heads(g, kiln_matmul(g, h, w[4], false, false)), heads(g, kiln_matmul(g, h, w[5], false, false)),
                                  heads(g, kiln_matmul(g, h, w[6], false, false)), true, 0);
    o = kiln_reshape(g, kiln_transpose(g, o, perm), KILN_SHAPE(B * T, D));
    kiln_node *r = kiln_add(g, kiln_reshape(g, x, KILN_SHAPE(B * T, D)), kiln_matmul(g, o, w[7], false, false));
    m->logits = kiln_matmul(g, kiln_gelu_tanh(g, r), w[8], false, false);                            /* [B*T, V] */
    m->loss = kiln_sparse_softmax_cross_entropy(g, m->logits, kiln_reshape(g, m->targets, KILN_SHAPE(B * T)));
    kiln_node *dw[9];
    CHECK_OK(kiln_gradients(g, m->loss, w, 9, dw));
    m->step = kiln_apply_adam(g, w, dw, 9, &(kiln_adam_opts){ .lr = 1e-2 });
    CHECK_MSG(m->step && kiln_graph_status(g) == KILN_OK, "%s", kiln_graph_error(g));
}

/* Sequences counting up from a random start mod V: the next token is the current one + 1, a rule
 * that needs the token itself (not only the position). */
static void lm_batch(kiln_tensor *ids, kiln_tensor *tg, kiln_rng *r) {
    int32_t *a = ids->data, *b = tg->data;
    for (int i = 0; i < B; i++) {
        int s = (int)(kiln_rng_uniform(r) * V) % V;
        for (int t = 0; t < T; t++) { a[i * T + t] = (s + t) % V; b[i * T + t] = (s + t + 1) % V; }
    }
}

static void test_tiny_lm(kiln_backend_kind kind, const char *what) {
    lm m;
    lm_build(&m);
    kiln_session *s = kiln_session_new(m.g, &(kiln_session_opts){ .backend = kind });
    kiln_tensor *ids = kiln_tensor_new(KILN_I32, KILN_SHAPE(B, T)), *tg = kiln_tensor_new(KILN_I32, KILN_SHAPE(B, T));
    kiln_tensor *lv = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    kiln_rng r = kiln_rng_new(11);
    kiln_feed f[2] = { { m.ids, ids }, { m.targets, tg } };
    double first = 0, last = 0;
    for (int it = 0; it < 80; it++) {
        lm_batch(ids, tg, &r);
        kiln_status st = kiln_session_run(s, f, 2, &m.loss, &lv, 1, &m.step, 1);
        CHECK_MSG(st == KILN_OK, "%s step %d: %s", what, it, kiln_last_error());
        if (st) break;
        if (it == 0) first = kiln_tensor_get(lv, 0);
        last = kiln_tensor_get(lv, 0);
    }
    printf("tiny LM (%s): loss %.4f -> %.4f after 80 Adam steps (log V = %.4f)\n", what, first, last, log((double)V));
    CHECK_MSG(first > 2.0 && last < 0.3 * first, "%s: loss %g -> %g", what, first, last);
    /* causality: changing the last token changes no logit of an earlier position */
    kiln_tensor *l1 = NULL, *l2 = NULL;
    CHECK_OK(kiln_session_run(s, f, 2, &m.logits, &l1, 1, NULL, 0));
    ((int32_t *)ids->data)[T - 1] = (((int32_t *)ids->data)[T - 1] + 5) % V;
    CHECK_OK(kiln_session_run(s, f, 2, &m.logits, &l2, 1, NULL, 0));
    if (l1 && l2) {
        int same = 1, last_differs = 0;
        for (int t = 0; t < T; t++)
            for (int v = 0; v < V; v++) {
                float a = ((float *)l1->data)[t * V + v], b = ((float *)l2->data)[t * V + v];
                if (t < T - 1 && a != b) same = 0;
                if (t == T - 1 && a != b) last_differs = 1;
            }
        CHECK_MSG(same && last_differs, "%s: causal mask (earlier rows unchanged %d, last row changed %d)", what, same, last_differs);
    }
    kiln_tensor_free(l1);
    kiln_tensor_free(l2);
    kiln_tensor_free(ids);
    kiln_tensor_free(tg);
    kiln_tensor_free(lv);
    kiln_session_free(s);
    kiln_graph_free(m.g);
}

/* Planned bytes of one attention training step (forward, backward, SGD on q, k, v as variables)
 * at T tokens: B = 1, H = 4, Dh = 64. */
static size_t attention_step_bytes(int64_t t) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *w[3];
    for (int i = 0; i < 3; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "w%d", i);
        w[i] = kiln_variable(g, nm, KILN_F32, KILN_SHAPE(1, 4, t, 64), kiln_init_uniform(-1, 1, (uint64_t)i + 1));
    }
    kiln_node *o = kiln_attention(g, w[0], w[1], w[2], true, 0);
    kiln_node *loss = kiln_reduce_sum(g, kiln_square(g, o), NULL, 0, false), *dw[3];
    CHECK_OK(kiln_gradients(g, loss, w, 3, dw));
    kiln_node *step = kiln_apply_sgd(g, w, dw, 3, &(kiln_sgd_opts){ .lr = 0.1 });
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU, .measure_only = true });
    CHECK_OK(kiln_session_run(s, NULL, 0, &loss, NULL, 0, &step, 1));
    size_t b = kiln_session_planned_bytes(s);
    kiln_session_free(s);
    kiln_graph_free(g);
    return b;
}

static void test_attention_memory_linear(void) {
    size_t m256 = attention_step_bytes(256), m1k = attention_step_bytes(1024), m4k = attention_step_bytes(4096);
    printf("attention step (B 1, H 4, Dh 64, causal) planned bytes: T=256 %zu, T=1024 %zu, T=4096 %zu (a [T, T] f32 score "
           "matrix alone at 4096 would be %lld)\n", m256, m1k, m4k, 4LL * 4096 * 4096 * 4);
    /* linear: x4 tokens -> about x4 bytes (a quadratic term would give x16) */
    CHECK_MSG(m1k <= 5 * m256 && m4k <= 5 * m1k, "%zu %zu %zu", m256, m1k, m4k);
}

#ifndef KILN_KERAS_DATA
#define KILN_KERAS_DATA "tests/data/keras"
#endif

/* One "TAG [NAME] N v..." line of transformer.values into a new f32 tensor of shape s (numel N). */
static kiln_tensor *read_values(FILE *f, char *name, size_t cap, kiln_shape *s_or_null) {
    char tag[8];
    long n;
    if (fscanf(f, "%7s", tag) != 1) return NULL;
    if (tag[0] == 'w') { if (fscanf(f, "%255s", name) != 1) return NULL; } else snprintf(name, cap, "%s", tag);
    if (fscanf(f, "%ld", &n) != 1 || n <= 0) return NULL;
    kiln_tensor *t = kiln_tensor_new(KILN_F32, s_or_null ? *s_or_null : KILN_SHAPE(n));
    for (long i = 0; t && i < n; i++) {
        double v;
        if (fscanf(f, "%lf", &v) != 1) { kiln_tensor_free(t); return NULL; }
        kiln_tensor_set(t, i, v);
    }
    return t;
}

static void test_keras_model(void) {
    const char *dir = getenv("KILN_KERAS_DATA") ? getenv("KILN_KERAS_DATA") : KILN_KERAS_DATA;
    char path[512], name[256];
    snprintf(path, sizeof path, "%s/keras3/transformer.json", dir);
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json_file(path, &m));
    if (!m) return;
    snprintf(path, sizeof path, "%s/keras3/transformer.values", dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    kiln_tensor *x = NULL, *want = NULL;
    int weights = 0;
    while (f) {
        long pos = ftell(f);
        char tag[8];
        if (fscanf(f, "%7s", tag) != 1) break;
        fseek(f, pos, SEEK_SET);
        if (tag[0] == 'w') {
            /* the weight's own shape: found by name among the model's layers */
            kiln_tensor *v = read_values(f, name, sizeof name, NULL), *w = NULL;
            CHECK_MSG(v && kiln_model_get_weight(m, name, &w) == KILN_OK, "weight %s: %s", name, kiln_last_error());
            if (v && w && kiln_shape_numel(w->shape) == kiln_shape_numel(v->shape)) {
                memcpy(w->data, v->data, kiln_tensor_nbytes(v));
                CHECK_OK(kiln_model_set_weight(m, name, w));
                weights++;
            }
            kiln_tensor_free(v);
            kiln_tensor_free(w);
        } else if (tag[0] == 'x') {
            kiln_shape s = KILN_SHAPE(3, 10);
            x = read_values(f, name, sizeof name, &s);
        } else {
            kiln_shape s = KILN_SHAPE(3, 5);
            want = read_values(f, name, sizeof name, &s);
        }
    }
    if (f) fclose(f);
    CHECK_MSG(weights == 14, "%d weights set (Keras has 14)", weights);
    kiln_tensor *got = NULL;
    if (x && want) CHECK_OK(kiln_predict(m, x, &(kiln_eval_opts){ .batch_size = 3 }, &got));
    if (got && want) {
        double worst = 0;
        for (int64_t i = 0; i < 15; i++) worst = fmax(worst, fabs(kiln_tensor_get(got, i) - kiln_tensor_get(want, i)));
        printf("Keras 3 transformer (Embedding, LayerNormalization, causal MultiHeadAttention) vs Kiln: largest |difference| %.3g\n", worst);
        CHECK_MSG(worst < 1e-5, "Kiln vs Keras predictions differ by %g", worst);
    }
    /* ONNX export (opset 17: LayerNormalization, attention as MatMul / Softmax); a build without
     * ONNX refuses it. tests/onnx/test_transformer_ort.sh runs the file in onnxruntime. */
    const char *onnx = getenv("KILN_TRANSFORMER_ONNX") ? getenv("KILN_TRANSFORMER_ONNX") : "test_transformer.onnx";
    kiln_status est = kiln_model_export_onnx(m, onnx, NULL);
    CHECK_MSG(est == KILN_OK || est == KILN_UNSUPPORTED, "export: %s", kiln_last_error());
    if (est == KILN_OK) printf("exported %s\n", onnx);
    /* Kiln's own JSON (the causal mask a call argument again) rebuilds the same model */
    char *js = NULL;
    kiln_model *m2 = NULL;
    CHECK_OK(kiln_model_to_json(m, &js));
    CHECK_MSG(js && strstr(js, "use_causal_mask"), "no use_causal_mask in Kiln's JSON");
    if (js) CHECK_OK(kiln_model_from_json(js, &m2));
    free(js);
    for (int i = 0; m2 && i < kiln_model_layer_count(m); i++)
        for (int j = 0; j < kiln_layer_weight_count(kiln_model_layer(m, i)); j++) {
            kiln_tensor *w = NULL;
            const char *wn = kiln_layer_weight_name(kiln_model_layer(m, i), j);
            if (kiln_model_get_weight(m, wn, &w) == KILN_OK) CHECK_OK(kiln_model_set_weight(m2, wn, w));
            kiln_tensor_free(w);
        }
    kiln_tensor *got2 = NULL;
    if (m2 && x) CHECK_OK(kiln_predict(m2, x, &(kiln_eval_opts){ .batch_size = 3 }, &got2));
    CHECK(got && got2 && !memcmp(got->data, got2->data, kiln_tensor_nbytes(got)));
    kiln_tensor_free(got2);
    kiln_model_free(m2);
    kiln_tensor_free(got);
    kiln_tensor_free(x);
    kiln_tensor_free(want);
    kiln_model_free(m);
}

int main(void) {
    test_bad_id(KILN_BACKEND_REF, "ref");
    test_bad_id(KILN_BACKEND_CPU, "cpu");
    if (kiln_gpu_available()) test_bad_id(KILN_BACKEND_CUDA, "cuda");
    test_tiny_lm(device_kind(), kiln_gpu_available() ? "cuda" : "cpu");
    test_attention_memory_linear();
    test_keras_model();
    return check_summary("test_transformer");
}
