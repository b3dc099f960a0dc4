/* Recurrent layers (src/nn/layers_rnn.c): gradients through time against finite differences of
 * the model's loss, for every cell kind and direction; a sequence classifier (Embedding -> LSTM
 * -> Dense) trains from the C API under float32 and mixed_bfloat16; Keras's Orthogonal
 * initializer is orthonormal. Predictions equal to Keras's are checked by test_keras_files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/kiln.h"
#include "core/core.h"      /* kiln_rng */

enum { N = 8, T = 5, F = 3, CLASSES = 3 };

static void fill(kiln_tensor *t, uint64_t seed, double scale) {
    kiln_rng r = kiln_rng_new(seed);
    for (int64_t i = 0; i < kiln_shape_numel(t->shape); i++) kiln_tensor_set(t, i, scale * (2 * kiln_rng_uniform(&r) - 1));
}

typedef kiln_layer *(*rnn_fn)(kiln_model *m, kiln_layer *x);
static kiln_layer *simple_seq(kiln_model *m, kiln_layer *x) {
    kiln_layer *r = kiln_layer_simple_rnn(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 4, .return_sequences = true });
    return kiln_layer_flatten(m, &(kiln_layer_opts){ .input = r });
}
static kiln_layer *lstm_back(kiln_model *m, kiln_layer *x) {
    return kiln_layer_lstm(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 4, .go_backwards = true });
}
static kiln_layer *gru_after(kiln_model *m, kiln_layer *x) { return kiln_layer_gru(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 4 }); }
static kiln_layer *gru_before(kiln_model *m, kiln_layer *x) {
    kiln_layer *g = kiln_layer_gru(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 4, .no_reset_after = true, .return_sequences = true });
    return kiln_layer_flatten(m, &(kiln_layer_opts){ .input = g });
}
static kiln_layer *bidir_lstm(kiln_model *m, kiln_layer *x) {
    kiln_layer *b = kiln_layer_bidirectional(m, &(kiln_bidirectional_opts){ .layer = KILN_RNN_LSTM,
                                                                            .rnn = { .name = "rnn", .input = x, .units = 3, .return_sequences = true } });
    return kiln_layer_flatten(m, &(kiln_layer_opts){ .input = b });
}

static double loss_of(kiln_model *m, const kiln_dataset *ds) {
    kiln_eval_result r = { 0 };
    CHECK_OK(kiln_evaluate(m, ds, &(kiln_eval_opts){ .batch_size = N }, &r));
    return r.loss;
}

/* The gradient one plain SGD step (lr 1) applies, (w0 - w1), against central differences of the
 * loss for a few entries of each of the layer's weights. */
static void check_grads(const char *what, rnn_fn make, const char *const *weights, int n_weights) {
    kiln_model *m = kiln_model_new("g");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(T, F));
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = make(m, x), .units = CLASSES });
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(1.0), .from_logits = true, .device = "cpu", .num_threads = 1 }));
    kiln_tensor *xs = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, T, F)), *ys = kiln_tensor_new(KILN_I32, KILN_SHAPE(N));
    fill(xs, 5, 1.5);
    for (int i = 0; i < N; i++) ((int32_t *)ys->data)[i] = i % CLASSES;
    kiln_dataset *ds = kiln_dataset_from_tensors(xs, ys, CLASSES);
    kiln_tensor *w0[6] = { 0 }, *w1[6] = { 0 };     /* w1: the finite-difference estimates */
    for (int k = 0; k < n_weights; k++) {        /* weights away from zero so every gate and bias matters */
        CHECK_OK(kiln_model_get_weight(m, weights[k], &w0[k]));
        if (!w0[k]) continue;
        fill(w0[k], 11 + (uint64_t)k, 0.7);
        CHECK_OK(kiln_model_set_weight(m, weights[k], w0[k]));
    }
    double worst = 0;
    int checked = 0;
    for (int k = 0; k < n_weights; k++) {
        int64_t n = w0[k] ? kiln_shape_numel(w0[k]->shape) : 0;
        for (int64_t i = 0; i < n; i += n / 4 + 1) {
            const double eps = 1e-2, v = kiln_tensor_get(w0[k], i);
            kiln_tensor_set(w0[k], i, v + eps);
            CHECK_OK(kiln_model_set_weight(m, weights[k], w0[k]));
            double lp = loss_of(m, ds);
            kiln_tensor_set(w0[k], i, v - eps);
            CHECK_OK(kiln_model_set_weight(m, weights[k], w0[k]));
            double lm = loss_of(m, ds);
            kiln_tensor_set(w0[k], i, v);
            CHECK_OK(kiln_model_set_weight(m, weights[k], w0[k]));
            w1[k] = w1[k] ? w1[k] : kiln_tensor_new(KILN_F32, w0[k]->shape);
            kiln_tensor_set(w1[k], i, (lp - lm) / (2 * eps));
        }
    }
    kiln_tensor *after[6] = { 0 };
    CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 1, .batch_size = N, .no_shuffle = true, .verbose = 0 }));
    for (int k = 0; k < n_weights; k++) {
        if (!w0[k]) continue;
        CHECK_OK(kiln_model_get_weight(m, weights[k], &after[k]));
        int64_t n = kiln_shape_numel(w0[k]->shape);
        for (int64_t i = 0; after[k] && i < n; i += n / 4 + 1) {
            double g = kiln_tensor_get(w0[k], i) - kiln_tensor_get(after[k], i), fd = kiln_tensor_get(w1[k], i);
            double err = fabs(g - fd) / (1e-3 + fabs(fd));
            worst = err > worst ? err : worst;
            checked++;
            CHECK_MSG(fabs(g - fd) <= 2e-3 + 3e-2 * fabs(fd), "%s: d loss / d %s[%lld]: backprop %.6g, finite differences %.6g", what, weights[k], (long long)i, g, fd);
        }
    }
    printf("%s: %d gradient entries through %d steps, worst relative difference %.2g\n", what, checked, T, worst);
    CHECK(checked >= 3 * n_weights);
    for (int k = 0; k < n_weights; k++) { kiln_tensor_free(w0[k]); kiln_tensor_free(w1[k]); kiln_tensor_free(after[k]); }
    kiln_dataset_free(ds);
    kiln_tensor_free(xs);
    kiln_tensor_free(ys);
    kiln_model_free(m);
}

static void test_grads(void) {
    static const char *const one[] = { "rnn/kernel", "rnn/recurrent_kernel", "rnn/bias" };
    static const char *const two[] = { "rnn/forward/kernel", "rnn/forward/recurrent_kernel", "rnn/forward/bias",
                                       "rnn/backward/kernel", "rnn/backward/recurrent_kernel", "rnn/backward/bias" };
    check_grads("SimpleRNN return_sequences", simple_seq, one, 3);
    check_grads("LSTM go_backwards", lstm_back, one, 3);
    check_grads("GRU reset_after", gru_after, one, 3);
    check_grads("GRU reset_after=False", gru_before, one, 3);
    check_grads("Bidirectional(LSTM)", bidir_lstm, two, 6);
}

/* Token ids -> Embedding -> LSTM -> Dense: the label is the first token's class, which the LSTM
 * must carry through every later step. */
static void test_train(kiln_precision prec, const char *what) {
    enum { NS = 256, TT = 6, VOC = 12 };
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(NS, TT)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(NS));
    kiln_rng r = kiln_rng_new(3);
    for (int i = 0; i < NS; i++) {
        for (int t = 0; t < TT; t++) ((float *)x->data)[i * TT + t] = (float)((int)(kiln_rng_uniform(&r) * VOC) % VOC);
        ((int32_t *)y->data)[i] = (int32_t)((float *)x->data)[i * TT] % 3;
    }
    kiln_dataset *ds = kiln_dataset_from_tensors(x, y, 3);
    kiln_model *m = kiln_model_new("seq");
    kiln_layer *in = kiln_input(m, KILN_SHAPE(TT));
    kiln_layer *e = kiln_layer_embedding(m, &(kiln_embedding_opts){ .input = in, .input_dim = VOC, .output_dim = 8 });
    kiln_layer *l = kiln_layer_lstm(m, &(kiln_rnn_opts){ .input = e, .units = 16 });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = l, .units = 3 });
    CHECK_OK(kiln_model_functional(m, &in, 1, &out, 1));
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-2), .from_logits = true, .device = "cpu", .num_threads = 1, .precision = prec }));
    kiln_tensor *bias = NULL;
    CHECK_OK(kiln_model_get_weight(m, "lstm/bias", &bias));       /* unit_forget_bias: [0, 1, 0, 0] per quarter */
    CHECK(bias && kiln_tensor_get(bias, 0) == 0 && kiln_tensor_get(bias, 16) == 1 && kiln_tensor_get(bias, 31) == 1 && kiln_tensor_get(bias, 32) == 0);
    kiln_tensor_free(bias);
    kiln_eval_result before = { 0 }, after = { 0 };
    CHECK_OK(kiln_evaluate(m, ds, NULL, &before));
    CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 12, .batch_size = 32, .verbose = 0 }));
    CHECK_OK(kiln_evaluate(m, ds, NULL, &after));
    printf("Embedding -> LSTM -> Dense (%s): loss %.4f -> %.6f, accuracy %.2f\n", what, before.loss, after.loss, after.accuracy);
    CHECK_MSG(after.loss < 0.5 * before.loss && after.accuracy > 0.9, "%s: loss %g -> %g, accuracy %g", what, before.loss, after.loss, after.accuracy);
    kiln_model_free(m);
    kiln_dataset_free(ds);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
}

/* W W^T = I along the shorter side, for both orientations; the gain scales it. */
static void test_orthogonal(void) {
    for (int o = 0; o < 2; o++) {
        int64_t rows = o ? 8 : 5, cols = o ? 5 : 8, k = rows < cols ? rows : cols;
        kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(rows, cols));
        CHECK_OK(kiln_init_fill((kiln_init){ .kind = KILN_INIT_ORTHOGONAL, .a = 2, .seed = 9 }, t));
        double worst = 0;
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < k; j++) {
                double d = 0;
                for (int64_t q = 0; q < (rows < cols ? cols : rows); q++)
                    d += rows < cols ? kiln_tensor_get(t, i * cols + q) * kiln_tensor_get(t, j * cols + q)
                                     : kiln_tensor_get(t, q * cols + i) * kiln_tensor_get(t, q * cols + j);
                worst = fmax(worst, fabs(d - (i == j ? 4 : 0)));
            }
        CHECK_MSG(worst < 1e-5, "orthogonal %lldx%lld: |W W^T - 4 I| = %g", (long long)rows, (long long)cols, worst);
        kiln_tensor_free(t);
    }
}

static void write_f32(const char *dir, const char *name, const kiln_tensor *t) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    CHECK(f && fwrite(t->data, 4, (size_t)kiln_shape_numel(t->shape), f) == (size_t)kiln_shape_numel(t->shape));
    if (f) fclose(f);
}

/* The fused RNN op (src/ops/rnn.c) against the unrolled graph the layers build under
 * KILN_RNN_UNROLLED=1: the model rebuilt from its JSON with m's weights predicts within 1e-5. */
static void compare_unrolled(kiln_model *m, const char *js, const kiln_tensor *xs, const kiln_tensor *y) {
    kiln_model *u = NULL;
    kiln_tensor *yu = NULL;
    setenv("KILN_RNN_UNROLLED", "1", 1);
    CHECK_OK(kiln_model_from_json(js, &u));
    for (int i = 0; u && i < kiln_model_layer_count(m); i++)
        for (int j = 0; j < kiln_layer_weight_count(kiln_model_layer(m, i)); j++) {
            kiln_tensor *w = NULL;
            const char *wn = kiln_layer_weight_name(kiln_model_layer(m, i), j);
            if (kiln_model_get_weight(m, wn, &w) == KILN_OK) CHECK_OK(kiln_model_set_weight(u, wn, w));
            kiln_tensor_free(w);
        }
    if (u) CHECK_OK(kiln_predict(u, xs, NULL, &yu));
    unsetenv("KILN_RNN_UNROLLED");
    double worst = yu && y ? 0 : INFINITY;
    for (int64_t i = 0; yu && y && i < kiln_shape_numel(y->shape); i++) worst = fmax(worst, fabs(kiln_tensor_get(y, i) - kiln_tensor_get(yu, i)));
    CHECK_MSG(worst <= 1e-5, "fused vs unrolled recurrent layers: max difference %g", worst);
    kiln_tensor_free(yu);
    kiln_model_free(u);
}

/* Every variant in one functional model, at random weights: Kiln's JSON rebuilds it with the same
 * predictions; its ONNX export (RNN / LSTM / GRU ops) is written, with inputs and Kiln's
 * predictions, into $KILN_RNN_ONNX for tests/onnx/test_rnn_ort.sh to run in onnxruntime. */
static void test_json_and_onnx(void) {
    kiln_activation relu = KILN_RELU, hard = KILN_HARD_SIGMOID;
    kiln_model *m = kiln_model_new("rnn_all");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(T, F));
    kiln_layer *a = kiln_layer_simple_rnn(m, &(kiln_rnn_opts){ .input = x, .units = 4, .return_sequences = true, .activation = &relu });
    kiln_layer *b = kiln_layer_lstm(m, &(kiln_rnn_opts){ .input = a, .units = 3, .return_sequences = true, .go_backwards = true, .recurrent_activation = &hard });
    kiln_layer *c = kiln_layer_gru(m, &(kiln_rnn_opts){ .input = b, .units = 3, .return_sequences = true, .no_reset_after = true });
    kiln_layer *d = kiln_layer_bidirectional(m, &(kiln_bidirectional_opts){ .layer = KILN_RNN_LSTM, .rnn = { .input = c, .units = 2, .return_sequences = true } });
    kiln_layer *e = kiln_layer_bidirectional(m, &(kiln_bidirectional_opts){ .layer = KILN_RNN_SIMPLE, .merge_mode = KILN_MERGE_MUL,
                                                                            .rnn = { .input = d, .units = 2, .return_sequences = true } });
    kiln_layer *g = kiln_layer_bidirectional(m, &(kiln_bidirectional_opts){ .layer = KILN_RNN_GRU, .merge_mode = KILN_MERGE_AVE, .rnn = { .input = e, .units = 3 } });
    kiln_layer *h = kiln_layer_lstm(m, &(kiln_rnn_opts){ .input = x, .units = 3, .no_bias = true });
    kiln_layer *s = kiln_layer_bidirectional(m, &(kiln_bidirectional_opts){ .layer = KILN_RNN_GRU, .merge_mode = KILN_MERGE_SUM, .rnn = { .input = x, .units = 3 } });
    kiln_layer *cat = kiln_layer_concatenate(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ g, h, s }, .n_inputs = 3 });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = cat, .units = 2 });
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .device = "cpu", .num_threads = 1 }));
    kiln_tensor *xs = kiln_tensor_new(KILN_F32, KILN_SHAPE(4, T, F)), *y = NULL, *y2 = NULL;
    fill(xs, 21, 1.5);
    CHECK_OK(kiln_predict(m, xs, NULL, &y));        /* builds the model: its weights exist */
    uint64_t seed = 40;
    for (int i = 0; i < kiln_model_layer_count(m); i++)
        for (int j = 0; j < kiln_layer_weight_count(kiln_model_layer(m, i)); j++) {
            kiln_tensor *w = NULL;
            const char *wn = kiln_layer_weight_name(kiln_model_layer(m, i), j);
            CHECK_OK(kiln_model_get_weight(m, wn, &w));
            if (w) { fill(w, seed++, 0.7); CHECK_OK(kiln_model_set_weight(m, wn, w)); }
            kiln_tensor_free(w);
        }
    kiln_tensor_free(y);
    y = NULL;
    CHECK_OK(kiln_predict(m, xs, NULL, &y));
    char *js = NULL;
    kiln_model *m2 = NULL;
    CHECK_OK(kiln_model_to_json(m, &js));
    CHECK_MSG(js && !strstr(js, "backward_layer") && strstr(js, "forward_bidirectional"), "Bidirectional's wrapped layer as Keras writes it");
    if (js) CHECK_OK(kiln_model_from_json(js, &m2));
    if (js) compare_unrolled(m, js, xs, y);
    free(js);
    for (int i = 0; m2 && i < kiln_model_layer_count(m); i++)
        for (int j = 0; j < kiln_layer_weight_count(kiln_model_layer(m, i)); j++) {
            kiln_tensor *w = NULL;
            const char *wn = kiln_layer_weight_name(kiln_model_layer(m, i), j);
            if (kiln_model_get_weight(m, wn, &w) == KILN_OK) CHECK_OK(kiln_model_set_weight(m2, wn, w));
            kiln_tensor_free(w);
        }
    if (m2) CHECK_OK(kiln_predict(m2, xs, NULL, &y2));
    CHECK_MSG(y && y2 && !memcmp(y->data, y2->data, kiln_tensor_nbytes(y)), "Kiln's JSON of the recurrent model predicts differently");
    const char *dir = getenv("KILN_RNN_ONNX");
    if (dir && y) {
        char p[512];
        snprintf(p, sizeof p, "%s/rnn.onnx", dir);
        CHECK_OK(kiln_model_export_onnx(m, p, NULL));
        write_f32(dir, "x.f32", xs);
        write_f32(dir, "y.f32", y);
    }
    kiln_tensor_free(y);
    kiln_tensor_free(y2);
    kiln_tensor_free(xs);
    kiln_model_free(m2);
    kiln_model_free(m);
}

int main(void) {
    test_json_and_onnx();
    test_orthogonal();
    test_grads();
    test_train(KILN_PRECISION_FLOAT32, "float32");
    test_train(KILN_PRECISION_MIXED_BFLOAT16, "mixed_bfloat16");
    return check_summary("test_rnn");
}
