/* Labels per position in kiln_fit / kiln_evaluate, and text files as training data:
 * - a token model (Embedding -> 1x1 Conv1D, logits [T, V]) on [N, T] labels: fit lowers the loss;
 *   evaluate's loss, token accuracy and perplexity equal a hand computation from kiln_predict's
 *   logits (mean cross-entropy over all N * T tokens, its exp);
 * - per-pixel labels [H, W] for a [H, W, C] output (a 1x1 convolution) train too (not only text);
 * - kiln_data_from_text: windows and their shifted labels, the held-out tail's consecutive windows,
 *   the epoch's window count; fit_data on it lowers the validation loss;
 * - errors: a text too short for the block size, a missing file, labels of the wrong shape, a data
 *   vocabulary larger than the model's (the message names both). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "core/core.h"

enum { T = 8, V = 7, D = 12, N = 64 };

static kiln_model *token_model(int vocab, int t, const char *metrics) {
    kiln_model *m = kiln_model_new("tok");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(t));
    kiln_layer *e = kiln_layer_embedding(m, &(kiln_embedding_opts){ .input = x, .input_dim = vocab, .output_dim = D });
    kiln_layer *out = kiln_layer_conv1d(m, &(kiln_conv1d_opts){ .input = e, .filters = vocab, .kernel = 1 });   /* Dense per position */
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    kiln_model_set_seed(m, 3);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.02), .from_logits = true, .metrics = KILN_METRIC_ACCURACY,
                                                   .device = "cpu", .num_threads = 1, .metric_list = metrics }));
    return m;
}

/* x [N, T] ids, y [N, T] the next id of a fixed rule (y = (3 x + 1) mod V): learnable per token. */
static kiln_dataset *token_data(void) {
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, T)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(N, T));
    kiln_rng r = kiln_rng_new(9);
    for (int i = 0; i < N * T; i++) {
        int v = (int)(kiln_rng_next(&r) % V);
        ((float *)x->data)[i] = (float)v;
        ((int32_t *)y->data)[i] = (3 * v + 1) % V;
    }
    kiln_dataset *d = kiln_dataset_from_tensors(x, y, V);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return d;
}

/* Mean cross-entropy and accuracy over every token, from the logits. */
static void by_hand(const kiln_tensor *logits, const kiln_tensor *y, double *xent, double *acc) {
    const float *o = logits->data;
    const int32_t *lab = y->data;
    int64_t rows = kiln_shape_numel(y->shape);
    double s = 0, hit = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *r = o + i * V;
        double mx = r[0], z = 0;
        int best = 0;
        for (int v = 1; v < V; v++) { if (r[v] > mx) mx = r[v]; if (r[v] > r[best]) best = v; }
        for (int v = 0; v < V; v++) z += exp(r[v] - mx);
        s += mx + log(z) - r[lab[i]];
        hit += best == lab[i];
    }
    *xent = s / (double)rows;
    *acc = hit / (double)rows;
}

static void test_token_fit_and_evaluate(void) {
    kiln_dataset *d = token_data();
    CHECK(d != NULL);
    if (!d) return;
    kiln_model *m = token_model(V, T, "perplexity");
    kiln_eval_result r0, r1;
    CHECK_OK(kiln_evaluate(m, d, &(kiln_eval_opts){ .batch_size = 16 }, &r0));
    CHECK_OK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 15, .batch_size = 16, .verbose = KILN_VERBOSE_SILENT }));
    CHECK_OK(kiln_evaluate(m, d, &(kiln_eval_opts){ .batch_size = 24 }, &r1));   /* a partial last batch too */
    CHECK_MSG(r1.loss < 0.5 * r0.loss, "loss %g -> %g", r0.loss, r1.loss);
    CHECK(r1.count == N);
    int nh = 0;
    const kiln_logs *h = kiln_model_history(m, &nh);
    CHECK(nh == 15 && h && h[nh - 1].loss < h[0].loss);
    CHECK(h && h[0].n_metrics == 1 && h[0].metrics[0] > 1);
    kiln_tensor *lg = NULL;
    CHECK_OK(kiln_predict(m, kiln_dataset_x(d), NULL, &lg));
    CHECK(lg && lg->shape.rank == 3 && lg->shape.dim[1] == T && lg->shape.dim[2] == V);
    if (lg) {
        double xent, acc;
        by_hand(lg, kiln_dataset_y(d), &xent, &acc);
        CHECK_NEAR(r1.loss, xent, 1e-5);
        CHECK_NEAR(r1.accuracy, acc, 1e-9);
        CHECK(r1.n_metrics == 1 && !strcmp(kiln_model_metric_name(m, 0), "perplexity"));
        CHECK_NEAR(r1.metrics[0], exp(xent), 1e-4 * exp(xent));
    }
    kiln_tensor_free(lg);
    CHECK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 1, .batch_size = 16, .data_on_device = true, .verbose = KILN_VERBOSE_SILENT }) == KILN_UNSUPPORTED &&
          strstr(kiln_last_error(), "per position"));
    /* one label per example for a model with a label per position */
    kiln_tensor *x1 = kiln_tensor_new(KILN_F32, KILN_SHAPE(4, T)), *y1 = kiln_tensor_new(KILN_I32, KILN_SHAPE(4));
    kiln_dataset *bad = kiln_dataset_from_tensors(x1, y1, V);
    kiln_eval_result rb;
    CHECK(kiln_evaluate(m, bad, NULL, &rb) == KILN_SHAPE_MISMATCH && strstr(kiln_last_error(), "per position"));
    kiln_dataset_free(bad);
    kiln_tensor_free(x1);
    kiln_tensor_free(y1);
    kiln_model_free(m);
    kiln_dataset_free(d);
}

/* Per-pixel classes (segmentation-like): [4, 4, 2] images, a 1x1 convolution to 3 classes, labels
 * [4, 4]: class = which channel is larger, or 2 when both are small. */
static void test_per_pixel_labels(void) {
    enum { S = 4, C = 3, M = 48 };
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(M, S, S, 2)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(M, S, S));
    kiln_rng r = kiln_rng_new(4);
    for (int i = 0; i < M * S * S; i++) {
        float a = (float)(kiln_rng_next(&r) % 1000) / 1000.f, b = (float)(kiln_rng_next(&r) % 1000) / 1000.f;
        ((float *)x->data)[2 * i] = a;
        ((float *)x->data)[2 * i + 1] = b;
        ((int32_t *)y->data)[i] = a + b < 0.5f ? 2 : a > b ? 0 : 1;
    }
    kiln_dataset *d = kiln_dataset_from_tensors(x, y, C);
    kiln_model *m = kiln_model_new("pix");
    kiln_layer *in = kiln_input(m, KILN_SHAPE(S, S, 2));
    kiln_layer *h = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = in, .filters = 16, .kernel = 1, .activation = KILN_RELU });
    kiln_layer *out = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = h, .filters = C, .kernel = 1 });
    CHECK_OK(kiln_model_functional(m, &in, 1, &out, 1));
    kiln_model_set_seed(m, 5);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.02), .from_logits = true, .metrics = KILN_METRIC_ACCURACY,
                                                   .device = "cpu", .num_threads = 1 }));
    kiln_eval_result r0, r1;
    CHECK_OK(kiln_evaluate(m, d, NULL, &r0));
    CHECK_OK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 20, .batch_size = 8, .verbose = KILN_VERBOSE_SILENT }));
    CHECK_OK(kiln_evaluate(m, d, NULL, &r1));
    CHECK_MSG(r1.loss < 0.7 * r0.loss && r1.accuracy > 0.8, "loss %g -> %g, accuracy %g", r0.loss, r1.loss, r1.accuracy);
    kiln_model_free(m);
    kiln_dataset_free(d);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
}

static void write_file(const char *path, const char *s, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) { fwrite(s, 1, n, f); fclose(f); }
}

static void test_text_source(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/t.txt", dir);
    char text[1000];
    for (int i = 0; i < 1000; i++) text[i] = "abcab\n"[i % 6];   /* 900 training tokens, 100 held out */
    write_file(path, text, sizeof text);
    kiln_data *tr = NULL, *va = NULL;
    CHECK_OK(kiln_data_from_text(path, &(kiln_text_data_opts){ .block_size = T }, &tr, &va));
    if (!tr || !va) return;
    CHECK(kiln_data_source_size(tr) == 900 - T && kiln_data_source_size(va) == (100 - 1) / T);
    CHECK(kiln_data_num_classes(tr) == 256 && kiln_data_label_shape(tr).rank == 1 && kiln_data_label_shape(tr).dim[0] == T);
    CHECK(kiln_text_epoch_windows(tr) == 900 / T);
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    CHECK_OK(kiln_data_iter_new(va, 0, &it));
    int k = 0, ok = 1;
    while (kiln_data_iter_next(it, &x, &y) == KILN_OK && x) {   /* window k of the tail: tokens 900 + kT ... */
        CHECK(y->shape.rank == 2 && y->shape.dim[1] == T);
        for (int t = 0; t < T; t++)
            ok &= ((float *)x->data)[t] == (float)(unsigned char)text[900 + k * T + t] && ((int32_t *)y->data)[t] == (unsigned char)text[900 + k * T + t + 1];
        k++;
    }
    kiln_data_iter_free(it);
    CHECK(ok && k == (100 - 1) / T);
    /* a model of a smaller vocabulary than the data's 256 byte values: named both */
    kiln_model *small = token_model(V, T, NULL);
    kiln_data *bv = kiln_data_batch(va, 4, false);
    kiln_eval_result er;
    CHECK(kiln_evaluate_data(small, bv, NULL, &er) != KILN_OK && strstr(kiln_last_error(), "256") && strstr(kiln_last_error(), "7"));
    kiln_model_free(small);
    /* training on random windows lowers the held-out loss */
    kiln_model *m = token_model(256, T, NULL);
    kiln_data *tp = kiln_data_batch(kiln_data_take(kiln_data_shuffle(tr, kiln_data_source_size(tr), 7), kiln_text_epoch_windows(tr)), 16, true);
    kiln_eval_result r0, r1;
    CHECK_OK(kiln_evaluate_data(m, bv, NULL, &r0));
    CHECK_OK(kiln_fit_data(m, tp, &(kiln_fit_opts){ .epochs = 4, .verbose = KILN_VERBOSE_SILENT, .validation_data = bv }));
    CHECK_OK(kiln_evaluate_data(m, bv, NULL, &r1));
    CHECK_MSG(r1.loss < 0.5 * r0.loss, "val loss %g -> %g", r0.loss, r1.loss);
    kiln_model_free(m);
    kiln_data_free(tp);
    kiln_data_free(bv);
    /* errors */
    CHECK(kiln_data_from_text(path, &(kiln_text_data_opts){ .block_size = 100 }, &tr, &va) == KILN_INVALID_ARGUMENT &&
          strstr(kiln_last_error(), "too few") && !tr && !va);
    snprintf(path, sizeof path, "%s/missing.txt", dir);
    CHECK(kiln_data_from_text(path, &(kiln_text_data_opts){ .block_size = 4 }, &tr, &va) != KILN_OK && strstr(kiln_last_error(), "missing.txt"));
}

int main(void) {
    char dir[] = "/tmp/kiln_text_fit_XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    test_token_fit_and_evaluate();
    test_per_pixel_labels();
    test_text_source(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_text_fit");
}
