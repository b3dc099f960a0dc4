/* Randomness in layers: the RandomNormal op's statistics and reproducibility; attention dropout's
 * dropped fraction and scale, the same on ref and cpu; gradients of GaussianNoise,
 * GaussianDropout, recurrent dropout, MultiHeadAttention and GPTBlock dropout against finite
 * differences of the TRAINING loss with the masks held fixed (the session step reset before each
 * run); inference unchanged by the noise; Keras 3 files with these layers predict as Keras. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/kiln.h"
#include "core/core.h"      /* kiln_rng */

static void fill(kiln_tensor *t, uint64_t seed, double scale) {
    kiln_rng r = kiln_rng_new(seed);
    for (int64_t i = 0; i < kiln_shape_numel(t->shape); i++) kiln_tensor_set(t, i, scale * (2 * kiln_rng_uniform(&r) - 1));
}

/* ---- RandomNormal ---- */
static kiln_tensor *run1(kiln_graph *g, kiln_backend_kind be, kiln_node *x, const kiln_tensor *tx, kiln_node *y, uint64_t step) {
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = be, .num_threads = 2, .seed = 3 });
    kiln_tensor *out = NULL;
    if (s) kiln_session_set_step(s, step);
    if (s) CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { x, tx } }, 1, &y, &out, 1, NULL, 0));
    kiln_session_free(s);
    return out;
}
static void test_random_normal(void) {
    enum { N = 200000 };
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(N));
    kiln_node *a = kiln_random_normal_like(g, x, 5), *b = kiln_random_normal_like(g, x, 5);
    kiln_tensor *tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(N));
    kiln_tensor *r = run1(g, KILN_BACKEND_REF, x, tx, a, 7), *c = run1(g, KILN_BACKEND_CPU, x, tx, a, 7);
    kiln_tensor *c8 = run1(g, KILN_BACKEND_CPU, x, tx, a, 8), *cb = run1(g, KILN_BACKEND_CPU, x, tx, b, 7);
    CHECK(r && c && c8 && cb);
    if (r && c && c8 && cb) {
        CHECK_MSG(!memcmp(r->data, c->data, kiln_tensor_nbytes(r)), "ref and cpu draw different noise for one (seed, step)");
        double s1 = 0, s2 = 0, in1 = 0, in2 = 0, same8 = 0, sameb = 0;
        for (int64_t i = 0; i < N; i++) {
            double v = kiln_tensor_get(c, i);
            s1 += v; s2 += v * v;
            in1 += fabs(v) < 1; in2 += fabs(v) < 2;
            same8 += v == kiln_tensor_get(c8, i);
            sameb += v == kiln_tensor_get(cb, i);
        }
        double mean = s1 / N, sd = sqrt(s2 / N - mean * mean);
        printf("RandomNormal: %d draws, mean %.4f, std %.4f, within 1 sd %.4f, within 2 sd %.4f\n", N, mean, sd, in1 / N, in2 / N);
        CHECK_MSG(fabs(mean) < 0.01 && fabs(sd - 1) < 0.01, "mean %g std %g", mean, sd);
        CHECK_MSG(fabs(in1 / N - 0.6827) < 0.005 && fabs(in2 / N - 0.9545) < 0.003, "not normal: %g within 1, %g within 2", in1 / N, in2 / N);
        CHECK_MSG(same8 < 10 && sameb < 10, "another step (%g equal) or node (%g equal) must draw other noise", same8, sameb);
    }
    kiln_tensor_free(r); kiln_tensor_free(c); kiln_tensor_free(c8); kiln_tensor_free(cb); kiln_tensor_free(tx);
    kiln_graph_free(g);
}

/* ---- attention dropout: q = k = 0 makes every probability 1/T; v the identity [T, T] makes
 * O[i, j] = z_ij / T, so O shows each entry's keep ---- */
static void test_attention_dropout(void) {
    enum { B = 2, H = 2, T = 64 };
    const double rate = 0.3;
    kiln_graph *g = kiln_graph_new();
    kiln_node *q = kiln_placeholder(g, "q", KILN_F32, KILN_SHAPE(B, H, T, T)), *v = kiln_placeholder(g, "v", KILN_F32, KILN_SHAPE(B, H, T, T));
    kiln_node *od = kiln_attention_dropout(g, q, q, v, false, 0, rate, 11), *o0 = kiln_attention_dropout(g, q, q, v, true, 0, 0.0, 11);
    kiln_node *plain = kiln_attention(g, q, q, v, true, 0);
    kiln_tensor *tq = kiln_tensor_new(KILN_F32, KILN_SHAPE(B, H, T, T)), *tv = kiln_tensor_new(KILN_F32, KILN_SHAPE(B, H, T, T));
    fill(tq, 1, 0);
    fill(tv, 1, 0);
    for (int bh = 0; bh < B * H; bh++) for (int j = 0; j < T; j++) kiln_tensor_set(tv, ((int64_t)bh * T + j) * T + j, 1);
    kiln_tensor *out[2][3] = { { 0 } };
    kiln_backend_kind be[2] = { KILN_BACKEND_REF, KILN_BACKEND_CPU };
    for (int k = 0; k < 2; k++) {
        kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = be[k], .num_threads = 2 });
        kiln_node *f[3] = { od, o0, plain };
        CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { q, tq }, { v, tv } }, 2, f, out[k], 3, NULL, 0));
        kiln_session_free(s);
    }
    if (out[0][0] && out[1][0]) {
        int64_t n = kiln_shape_numel(out[0][0]->shape), dropped = 0, bad = 0;
        double worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double r = kiln_tensor_get(out[0][0], i), c = kiln_tensor_get(out[1][0], i);
            worst = fmax(worst, fabs(r - c));
            dropped += r == 0;
            bad += r != 0 && fabs(r * T - 1 / (1 - rate)) > 1e-5;
        }
        printf("attention dropout %.2f: %lld of %lld probabilities dropped (%.4f), cpu vs ref %.2g\n", rate, (long long)dropped, (long long)n,
               (double)dropped / n, worst);
        CHECK_MSG(fabs((double)dropped / n - rate) < 0.015, "dropped fraction %g, rate %g", (double)dropped / n, rate);
        CHECK_MSG(bad == 0, "%lld kept probabilities not scaled by 1/(1 - rate)", (long long)bad);
        CHECK_MSG(worst < 1e-6, "cpu and ref keep different entries (%g)", worst);
        for (int k = 0; k < 2; k++)
            CHECK_MSG(out[k][1] && out[k][2] && !memcmp(out[k][1]->data, out[k][2]->data, kiln_tensor_nbytes(out[k][1])),
                      "rate 0 must be kiln_attention exactly");
    }
    for (int k = 0; k < 2; k++) for (int j = 0; j < 3; j++) kiln_tensor_free(out[k][j]);
    kiln_tensor_free(tq); kiln_tensor_free(tv);
    CHECK(kiln_attention_dropout(g, q, q, v, false, 0, 1.0, 1) == NULL);
    kiln_graph_free(g);
}

/* ---- training-mode gradients with the noise held fixed ---- */
enum { NB = 6, CLASSES = 3 };
typedef kiln_layer *(*body_fn)(kiln_model *m, kiln_layer *x);

static double train_loss(kiln_model *m, const kiln_tensor *x, const kiln_tensor *y, uint64_t step, double lr) {
    double loss = NAN;
    CHECK_OK(kiln_model_set_learning_rate(m, lr));
    kiln_session *s = kiln_model_session(m);
    if (s) kiln_session_set_step(s, step);
    CHECK_OK(kiln_train_on_batch(m, x, y, &loss));
    return loss;
}
static double eval_loss(kiln_model *m, const kiln_tensor *x, const kiln_tensor *y) {
    kiln_dataset *ds = kiln_dataset_from_tensors(x, y, CLASSES);
    kiln_eval_result r = { 0 };
    CHECK_OK(kiln_evaluate(m, ds, &(kiln_eval_opts){ .batch_size = NB }, &r));
    kiln_dataset_free(ds);
    return r.loss;
}

/* One SGD step (lr 1) gives w0 - w1 = the gradient at the step's masks; central differences of
 * the training loss at the same step (lr 0, so nothing moves) must agree. */
static void check_train_grads(const char *what, kiln_shape in, body_fn body, const char *const *weights, int n_weights) {
    kiln_model *m = kiln_model_new("g");
    kiln_layer *x = kiln_input(m, in);
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .name = "head", .input = kiln_layer_flatten(m, &(kiln_layer_opts){ .input = body(m, x) }),
                                                          .units = CLASSES });
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(1.0), .from_logits = true, .device = "cpu", .num_threads = 1 }));
    kiln_shape xs_shape = { in.rank + 1, { NB } };
    for (int d = 0; d < in.rank; d++) xs_shape.dim[d + 1] = in.dim[d];
    kiln_tensor *xs = kiln_tensor_new(KILN_F32, xs_shape), *ys = kiln_tensor_new(KILN_I32, KILN_SHAPE(NB));
    fill(xs, 5, 1.5);
    for (int i = 0; i < NB; i++) ((int32_t *)ys->data)[i] = i % CLASSES;
    kiln_tensor *w0[4] = { 0 }, *fd[4] = { 0 }, *after[4] = { 0 };
    for (int k = 0; k < n_weights; k++) {
        CHECK_OK(kiln_model_get_weight(m, weights[k], &w0[k]));
        if (!w0[k]) continue;
        fill(w0[k], 11 + (uint64_t)k, 0.6);
        CHECK_OK(kiln_model_set_weight(m, weights[k], w0[k]));
    }
    const uint64_t step = 1234;
    double l0 = train_loss(m, xs, ys, step, 0), l0b = train_loss(m, xs, ys, step, 0), l1 = train_loss(m, xs, ys, step + 1, 0);
    double le = eval_loss(m, xs, ys);
    CHECK_MSG(l0 == l0b, "%s: the training loss at one step must repeat (%.9g, %.9g)", what, l0, l0b);
    CHECK_MSG(l0 != l1 && l0 != le, "%s: the noise must change the training loss with the step (%.9g, %.9g) and differ from inference (%.9g)",
              what, l0, l1, le);
    double worst = 0;
    int checked = 0;
    for (int k = 0; k < n_weights; k++) {
        int64_t n = w0[k] ? kiln_shape_numel(w0[k]->shape) : 0;
        for (int64_t i = 0; i < n; i += n / 5 + 1) {
            const double eps = 1e-2, v = kiln_tensor_get(w0[k], i);
            kiln_tensor_set(w0[k], i, v + eps);
            CHECK_OK(kiln_model_set_weight(m, weights[k], w0[k]));
            double lp = train_loss(m, xs, ys, step, 0);
            kiln_tensor_set(w0[k], i, v - eps);
            CHECK_OK(kiln_model_set_weight(m, weights[k], w0[k]));
            double lm = train_loss(m, xs, ys, step, 0);
            kiln_tensor_set(w0[k], i, v);
            CHECK_OK(kiln_model_set_weight(m, weights[k], w0[k]));
            fd[k] = fd[k] ? fd[k] : kiln_tensor_new(KILN_F32, w0[k]->shape);
            kiln_tensor_set(fd[k], i, (lp - lm) / (2 * eps));
        }
    }
    train_loss(m, xs, ys, step, 1.0);
    for (int k = 0; k < n_weights; k++) {
        if (!w0[k]) continue;
        CHECK_OK(kiln_model_get_weight(m, weights[k], &after[k]));
        int64_t n = kiln_shape_numel(w0[k]->shape);
        for (int64_t i = 0; after[k] && i < n; i += n / 5 + 1) {
            double gr = kiln_tensor_get(w0[k], i) - kiln_tensor_get(after[k], i), f = kiln_tensor_get(fd[k], i);
            worst = fmax(worst, fabs(gr - f) / (1e-3 + fabs(f)));
            checked++;
            CHECK_MSG(fabs(gr - f) <= 2e-3 + 3e-2 * fabs(f), "%s: d loss / d %s[%lld]: backprop %.6g, finite differences %.6g", what, weights[k],
                      (long long)i, gr, f);
        }
    }
    printf("%s: %d gradient entries in training mode, worst relative difference %.2g\n", what, checked, worst);
    CHECK(checked >= 3 * n_weights);
    for (int k = 0; k < n_weights; k++) { kiln_tensor_free(w0[k]); kiln_tensor_free(fd[k]); kiln_tensor_free(after[k]); }
    kiln_tensor_free(xs);
    kiln_tensor_free(ys);
    kiln_model_free(m);
}

static kiln_layer *noise_body(kiln_model *m, kiln_layer *x) {
    kiln_layer *d = kiln_layer_dense(m, &(kiln_dense_opts){ .name = "d1", .input = x, .units = 5, .activation = KILN_TANH });
    return kiln_layer_gaussian_noise(m, &(kiln_gaussian_noise_opts){ .input = d, .stddev = 0.5, .seed = 3 });
}
static kiln_layer *gdrop_body(kiln_model *m, kiln_layer *x) {
    kiln_layer *d = kiln_layer_dense(m, &(kiln_dense_opts){ .name = "d1", .input = x, .units = 5, .activation = KILN_TANH });
    return kiln_layer_gaussian_dropout(m, &(kiln_dropout_opts){ .input = d, .rate = 0.4 });
}
static kiln_layer *lstm_body(kiln_model *m, kiln_layer *x) {
    return kiln_layer_lstm(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 4, .dropout = 0.3, .recurrent_dropout = 0.3 });
}
static kiln_layer *lstm_in_body(kiln_model *m, kiln_layer *x) {
    return kiln_layer_lstm(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 4, .dropout = 0.4, .go_backwards = true });
}
static kiln_layer *gru_before_body(kiln_model *m, kiln_layer *x) {
    return kiln_layer_gru(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 3, .no_reset_after = true, .dropout = 0.25,
                                               .recurrent_dropout = 0.25, .return_sequences = true });
}
static kiln_layer *gru_after_body(kiln_model *m, kiln_layer *x) {
    return kiln_layer_gru(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 3, .recurrent_dropout = 0.4 });
}
static kiln_layer *simple_body(kiln_model *m, kiln_layer *x) {
    return kiln_layer_simple_rnn(m, &(kiln_rnn_opts){ .name = "rnn", .input = x, .units = 4, .dropout = 0.3, .recurrent_dropout = 0.3,
                                                      .return_sequences = true });
}
static kiln_layer *mha_body(kiln_model *m, kiln_layer *x) {
    return kiln_layer_multi_head_attention(m, &(kiln_mha_opts){ .name = "mha", .inputs = &x, .n_inputs = 1, .num_heads = 2, .key_dim = 3,
                                                                .causal = true, .dropout = 0.3 });
}
static kiln_layer *gpt_body(kiln_model *m, kiln_layer *x) {
    return kiln_layer_gpt_block(m, &(kiln_gpt_block_opts){ .name = "blk", .input = x, .num_heads = 2, .dropout = 0.3 });
}

static void test_train_grads(void) {
    static const char *const dense[] = { "d1/kernel", "head/kernel" };
    static const char *const rnn[] = { "rnn/kernel", "rnn/recurrent_kernel", "rnn/bias" };
    static const char *const mha[] = { "mha/query/kernel", "mha/key/kernel", "mha/value/kernel" };
    static const char *const gpt[] = { "blk/attn/c_attn/kernel", "blk/attn/c_proj/kernel" };
    check_train_grads("GaussianNoise(0.5)", KILN_SHAPE(4), noise_body, dense, 2);
    check_train_grads("GaussianDropout(0.4)", KILN_SHAPE(4), gdrop_body, dense, 2);
    check_train_grads("LSTM dropout 0.3 recurrent_dropout 0.3", KILN_SHAPE(5, 3), lstm_body, rnn, 3);
    check_train_grads("LSTM dropout 0.4 go_backwards", KILN_SHAPE(5, 3), lstm_in_body, rnn, 3);
    check_train_grads("GRU reset_after=False dropout 0.25 recurrent 0.25", KILN_SHAPE(5, 3), gru_before_body, rnn, 3);
    check_train_grads("GRU recurrent_dropout 0.4", KILN_SHAPE(5, 3), gru_after_body, rnn, 3);
    check_train_grads("SimpleRNN dropout 0.3 recurrent 0.3", KILN_SHAPE(5, 3), simple_body, rnn, 3);
    check_train_grads("MultiHeadAttention dropout 0.3 causal", KILN_SHAPE(6, 4), mha_body, mha, 3);
    check_train_grads("GPTBlock dropout 0.3 (attention probabilities too)", KILN_SHAPE(6, 4), gpt_body, gpt, 2);
}

/* ---- inference: the noise layers are the identity; recurrent dropout changes nothing ---- */
static void test_inference(void) {
    kiln_model *m = kiln_sequential("ident", KILN_SHAPE(3, 4));
    kiln_layer_gaussian_noise(m, &(kiln_gaussian_noise_opts){ .stddev = 2 });
    kiln_layer_gaussian_dropout(m, &(kiln_dropout_opts){ .rate = 0.5 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .device = "cpu" }));
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(5, 3, 4)), *y = NULL;
    fill(x, 9, 3);
    CHECK_OK(kiln_predict(m, x, NULL, &y));
    CHECK_MSG(y && !memcmp(x->data, y->data, kiln_tensor_nbytes(x)), "GaussianNoise/GaussianDropout must be the identity in predict");
    kiln_tensor_free(y);
    kiln_model_free(m);
    kiln_model *a = kiln_sequential("a", KILN_SHAPE(3, 4)), *b = kiln_sequential("b", KILN_SHAPE(3, 4));
    kiln_layer_lstm(a, &(kiln_rnn_opts){ .name = "rnn", .units = 3, .dropout = 0.5, .recurrent_dropout = 0.5 });
    kiln_layer_lstm(b, &(kiln_rnn_opts){ .name = "rnn", .units = 3 });
    CHECK_OK(kiln_compile(a, &(kiln_compile_opts){ .device = "cpu" }));
    CHECK_OK(kiln_compile(b, &(kiln_compile_opts){ .device = "cpu" }));
    kiln_tensor *ya = NULL, *yb = NULL;
    CHECK_OK(kiln_predict(a, x, NULL, &ya));
    static const char *const w[] = { "rnn/kernel", "rnn/recurrent_kernel", "rnn/bias" };
    for (int k = 0; k < 3; k++) {
        kiln_tensor *t = NULL;
        CHECK_OK(kiln_model_get_weight(a, w[k], &t));
        if (t) CHECK_OK(kiln_model_set_weight(b, w[k], t));
        kiln_tensor_free(t);
    }
    CHECK_OK(kiln_predict(b, x, NULL, &yb));
    CHECK_MSG(ya && yb && !memcmp(ya->data, yb->data, kiln_tensor_nbytes(ya)), "LSTM dropout must not change inference");
    kiln_tensor_free(ya); kiln_tensor_free(yb);
    kiln_model_free(a); kiln_model_free(b);
    kiln_tensor_free(x);
    m = kiln_sequential("bad", KILN_SHAPE(3, 4));
    kiln_layer_gru(m, &(kiln_rnn_opts){ .units = 2, .recurrent_dropout = 1.0 });
    CHECK_MSG(strstr(kiln_model_error(m), "recurrent_dropout") != NULL, "%s", kiln_model_error(m));
    kiln_model_free(m);
}

/* ---- Keras 3 files (tests/data/keras/noise/make_noise.py): inference as Keras's ---- */
/* NAME.values: "path n v..." a weight, set by name (Keras's weight paths are Kiln's names) */
static int set_values(kiln_model *m, const char *path) {
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    char name[256];
    long n;
    int set = 0;
    while (f && fscanf(f, "%255s %ld", name, &n) == 2 && n > 0) {
        kiln_tensor *w = NULL;
        CHECK_MSG(kiln_model_get_weight(m, name, &w) == KILN_OK && w && kiln_shape_numel(w->shape) == n, "weight %s: %s", name, kiln_last_error());
        for (long i = 0; i < n; i++) {
            double v;
            if (fscanf(f, "%lf", &v) != 1) break;
            if (w && i < kiln_shape_numel(w->shape)) kiln_tensor_set(w, i, v);
        }
        if (w) { CHECK_OK(kiln_model_set_weight(m, name, w)); set++; }
        kiln_tensor_free(w);
    }
    if (f) fclose(f);
    return set;
}

static void check_keras_file(const char *name, kiln_shape xshape, bool json) {
    char path[1024];
    snprintf(path, sizeof path, "%s/noise/%s.%s", KILN_KERAS_DATA, name, json ? "json" : "keras");
    kiln_model *m = NULL;
    CHECK_OK(json ? kiln_model_from_json_file(path, &m) : kiln_model_from_keras_file(path, &m));
    if (!m) return;
    if (json) {
        snprintf(path, sizeof path, "%s/noise/%s.values", KILN_KERAS_DATA, name);
        int set = set_values(m, path);
        CHECK_MSG(set == 10, "%s: %d weights set (Keras has 10)", name, set);
    }
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .device = "cpu" }));
    kiln_tensor *x = kiln_tensor_new(KILN_F32, xshape), *y = NULL;
    for (int64_t i = 0; i < kiln_shape_numel(xshape); i++) kiln_tensor_set(x, i, sin((double)i * 0.37));
    CHECK_OK(kiln_predict(m, x, NULL, &y));
    snprintf(path, sizeof path, "%s/noise/%s.expected", KILN_KERAS_DATA, name);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    double worst = 0, v;
    int64_t n = 0;
    while (f && y && fscanf(f, "%lf", &v) == 1) {
        if (n < kiln_shape_numel(y->shape)) worst = fmax(worst, fabs(v - kiln_tensor_get(y, n)));
        n++;
    }
    if (f) fclose(f);
    CHECK_MSG(y && n == kiln_shape_numel(y->shape), "%s: %lld values expected", name, (long long)n);
    CHECK_MSG(worst < 1e-5, "%s: Kiln vs Keras differ by %g", name, worst);
    printf("%s.%s: %lld predictions, largest difference from Keras %.2g\n", name, json ? "json" : "keras", (long long)n, worst);
    kiln_tensor_free(x); kiln_tensor_free(y);
    kiln_model_free(m);
}

int main(void) {
    test_random_normal();
    test_attention_dropout();
    test_inference();
    test_train_grads();
    check_keras_file("noise_mha", KILN_SHAPE(2, 5, 4), true);
    if (kiln_keras_files_available()) {
        check_keras_file("noise_rnn", KILN_SHAPE(2, 6, 3), false);
        check_keras_file("noise_mha", KILN_SHAPE(2, 5, 4), false);    /* MultiHeadAttention's nested weights */
    } else printf("Keras files not read (built without HDF5): noise_rnn.keras and noise_mha.keras skipped\n");
    return check_summary("test_noise");
}
