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
    /* the loss on [B, T, V] logits and [B, T] ids (reshaped to rows inside, no copy) */
    m->loss = kiln_sparse_softmax_cross_entropy(g, kiln_reshape(g, m->logits, KILN_SHAPE(B, T, V)), m->targets);
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

/* Token ids (None, t) -> Embedding(vocab, 32) -> LayerNormalization -> causal MultiHeadAttention
 * (2 heads of 16) -> Add -> LayerNormalization -> Flatten -> Dense(classes), compiled with Adam. */
static kiln_model *seq_classifier(int64_t t, int vocab, int classes, kiln_precision prec) {
    kiln_model *m = kiln_model_new("seq");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(t));
    kiln_layer *e = kiln_layer_embedding(m, &(kiln_embedding_opts){ .input = x, .input_dim = vocab, .output_dim = 32 });
    kiln_layer *n = kiln_layer_layer_norm(m, &(kiln_layer_norm_opts){ .input = e, .epsilon = 1e-5 });
    kiln_layer *a = kiln_layer_multi_head_attention(m, &(kiln_mha_opts){ .inputs = &n, .n_inputs = 1, .num_heads = 2, .key_dim = 16,
                                                                        .causal = true });
    kiln_layer *s = kiln_layer_add(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ e, a }, .n_inputs = 2 });
    kiln_layer *n2 = kiln_layer_layer_norm(m, &(kiln_layer_norm_opts){ .input = s });
    kiln_layer *f = kiln_layer_flatten(m, &(kiln_layer_opts){ .input = n2 });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = f, .units = classes });
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(3e-3), .from_logits = true, .device = "cpu", .precision = prec }));
    return m;
}

/* The model's planned training step (kiln summary --batch-size) at T = 256, 1024, 4096: linear. */
static void test_model_memory_linear(void) {
    size_t peak[3] = { 0 }, arena[3] = { 0 };
    for (int i = 0; i < 3; i++) {
        kiln_model *m = seq_classifier(256 << (2 * i), 65, 4, KILN_PRECISION_FLOAT32);
        kiln_memory_report r = { 0 };
        CHECK_OK(kiln_model_memory(m, 8, 1, &r));
        peak[i] = r.peak_bytes;
        arena[i] = r.arena_bytes;
        kiln_memory_report_free(&r);
        kiln_model_free(m);
    }
    printf("model step memory (batch 8, adam, cpu): arena T=256 %zu, T=1024 %zu, T=4096 %zu; peak %zu, %zu, %zu\n", arena[0], arena[1],
           arena[2], peak[0], peak[1], peak[2]);
    CHECK_MSG(arena[1] <= 5 * arena[0] && arena[2] <= 5 * arena[1], "arena %zu %zu %zu is not linear in T", arena[0], arena[1], arena[2]);
}

/* kiln_fit on f32 token ids: the label is the first token's class (id mod 4), which position 0
 * carries; f32 and mixed_bfloat16 both learn it. */
static void test_fit_ids(kiln_precision prec, const char *what) {
    enum { N = 256, TT = 8, VOC = 16 };
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, TT)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(N));
    kiln_rng r = kiln_rng_new(3);
    for (int i = 0; i < N; i++) {
        for (int t = 0; t < TT; t++) ((float *)x->data)[i * TT + t] = (float)((int)(kiln_rng_uniform(&r) * VOC) % VOC);
        ((int32_t *)y->data)[i] = (int32_t)((float *)x->data)[i * TT] % 4;
    }
    kiln_dataset *ds = kiln_dataset_from_tensors(x, y, 4);
    kiln_model *m = seq_classifier(TT, VOC, 4, prec);
    kiln_eval_result before = { 0 }, after = { 0 };
    CHECK_OK(kiln_evaluate(m, ds, NULL, &before));
    CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 15, .batch_size = 32, .verbose = KILN_VERBOSE_SILENT }));
    CHECK_OK(kiln_evaluate(m, ds, NULL, &after));
    printf("kiln_fit on token ids (%s): loss %.3f -> %.3f, accuracy %.2f\n", what, before.loss, after.loss, after.accuracy);
    CHECK_MSG(after.loss < 0.5 * before.loss && after.accuracy > 0.9, "%s: loss %g -> %g, accuracy %g", what, before.loss, after.loss, after.accuracy);
    kiln_model_free(m);
    kiln_dataset_free(ds);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
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

/* keras.Input(shape=(4,), dtype="int32") before an Embedding: ids fed as floats. */
static void test_int_input_json(void) {
    static const char *js = "{\"module\": \"keras\", \"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": ["
        "{\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": [null, 4], \"dtype\": \"int32\", \"name\": \"ids\"}},"
        "{\"class_name\": \"Embedding\", \"config\": {\"name\": \"e\", \"input_dim\": 7, \"output_dim\": 3}}]}}";
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json(js, &m));
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(2, 4)), *y = NULL, *w = NULL;
    for (int i = 0; i < 8; i++) kiln_tensor_set(x, i, i % 7);
    if (m) CHECK_OK(kiln_predict(m, x, NULL, &y));
    if (m) CHECK_OK(kiln_model_get_weight(m, "e/embeddings", &w));
    if (y && w) CHECK(kiln_tensor_get(y, 5 * 3 + 1) == kiln_tensor_get(w, 5 * 3 + 1));   /* position 5 holds id 5 */
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_tensor_free(w);
    kiln_model_free(m);
}

int main(void) {
    test_bad_id(KILN_BACKEND_REF, "ref");
    test_bad_id(KILN_BACKEND_CPU, "cpu");
    if (kiln_gpu_available()) test_bad_id(KILN_BACKEND_CUDA, "cuda");
    test_tiny_lm(device_kind(), kiln_gpu_available() ? "cuda" : "cpu");
    test_attention_memory_linear();
    test_keras_model();
    test_int_input_json();
    test_model_memory_linear();
    test_fit_ids(KILN_PRECISION_FLOAT32, "float32");
    test_fit_ids(KILN_PRECISION_MIXED_BFLOAT16, "mixed_bfloat16");
    return check_summary("test_transformer");
}
