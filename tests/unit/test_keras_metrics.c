/* Keras' metrics of compile's metric_list (issue 29): their values on fixed predictions against
 * hand computations (Keras' definitions, written out here), counted over the whole evaluation
 * across batches; their names in the history, the CSV logger's header and the monitor of
 * callbacks; regression from in-memory f32 targets (kiln_data_from_arrays); the errors. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/pipeline.h"

#define N 40
#define C 3

static float P[N * C];
static int32_t LAB[N];

static void fill(void) {
    uint64_t s = 99;
    for (int i = 0; i < N * C; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        P[i] = (float)((double)(s >> 11) / 9007199254740992.0);
    }
    for (int i = 0; i < N; i++) LAB[i] = (i * 7 + (P[i * C] > 0.6f)) % C;
}

static kiln_model *identity(int c, const char *list) {
    kiln_model *m = kiln_sequential("identity", KILN_SHAPE(c));
    kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_LINEAR });
    kiln_status st = kiln_compile(m, &(kiln_compile_opts){ .loss = KILN_LOSS_MSE, .metric_list = list, .device = "cpu", .num_threads = 1 });
    CHECK_MSG(st == KILN_OK, "compile %s: %s", list, kiln_last_error());
    return m;
}

/* Keras' ROC AUC: 200 thresholds, counts of predictions above each, trapezoids. */
static double hand_auc(const double *p, const double *y, int n) {
    double tp[200] = { 0 }, fp[200] = { 0 }, np = 0, nn = 0, area = 0;
    for (int i = 0; i < n; i++) {
        if (y[i] != 0) np++; else nn++;
        for (int t = 0; t < 200; t++) {
            double th = t == 0 ? -1e-7 : t == 199 ? 1 + 1e-7 : t / 199.0;
            if (p[i] > th) { if (y[i] != 0) tp[t]++; else fp[t]++; }
        }
    }
    for (int t = 0; t < 199; t++) area += (fp[t] / nn - fp[t + 1] / nn) * (tp[t] / np + tp[t + 1] / np) / 2;
    return area;
}

static void check_values(void) {
    const char *list = "binary_accuracy,categorical_accuracy,sparse_top_k_categorical_accuracy:2,precision,recall,auc,mae,mse,rmse@rms";
    kiln_model *m = identity(C, list);
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, C)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(N));
    memcpy(x->data, P, sizeof P);
    memcpy(y->data, LAB, sizeof LAB);
    kiln_data *d = kiln_data_batch(kiln_data_from_arrays(x, y, C), 16, false);   /* 16 + 16 + 8: counts across batches */
    kiln_eval_result r;
    CHECK_OK(kiln_evaluate_data(m, d, NULL, &r));
    CHECK(r.n_metrics == 9 && !strcmp(kiln_model_metric_name(m, 8), "rms") && !strcmp(kiln_model_metric_name(m, 5), "auc") && !kiln_model_metric_name(m, 9));
    double bin = 0, cat = 0, top2 = 0, tp = 0, fp = 0, fn = 0, ae = 0, se = 0, pf[N * C], yf[N * C];
    for (int i = 0; i < N; i++) {
        const float *r_ = P + i * C;
        int best = 0, above = 0;
        for (int j = 0; j < C; j++) {
            double t = j == LAB[i], p = r_[j];
            pf[i * C + j] = p; yf[i * C + j] = t;
            bin += (p > 0.5) == (t == 1);
            tp += p > 0.5 && t == 1; fp += p > 0.5 && t == 0; fn += p <= 0.5 && t == 1;
            ae += fabs(p - t); se += (p - t) * (p - t);
            if (r_[j] > r_[best]) best = j;
            if (r_[j] > r_[LAB[i]]) above++;
        }
        cat += best == LAB[i];
        top2 += above < 2;
    }
    double want[9] = { bin / (N * C), cat / N, top2 / N, tp / (tp + fp), tp / (tp + fn), hand_auc(pf, yf, N * C), ae / (N * C), se / (N * C), sqrt(se / (N * C)) };
    for (int i = 0; i < 9; i++)
        CHECK_MSG(fabs(r.metrics[i] - want[i]) < 1e-6, "%s: %.7f, by hand %.7f", kiln_model_metric_name(m, i), r.metrics[i], want[i]);
    CHECK_NEAR(r.metrics[7], r.loss, 1e-6);   /* the mse metric is the mse loss */
    CHECK(want[5] > 0.3 && want[5] < 0.9);     /* not a degenerate curve */
    kiln_data_free(d);
    kiln_tensor_free(x); kiln_tensor_free(y);
    kiln_model_free(m);
}

/* fit: the history, the CSV header and rows, a monitor by the metric's name; f32 targets */
static void check_fit(void) {
    char dir[] = "/tmp/kiln_metrics_XXXXXX", csv[300];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(csv, sizeof csv, "%s/h.csv", dir);
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(64, 2)), *y = kiln_tensor_new(KILN_F32, KILN_SHAPE(64));
    for (int i = 0; i < 64; i++) {
        ((float *)x->data)[2 * i] = (float)(i % 8) / 8; ((float *)x->data)[2 * i + 1] = (float)(i / 8) / 8;
        ((float *)y->data)[i] = 0.5f * (float)(i % 8) - 0.25f * (float)(i / 8) + 0.1f;
    }
    kiln_model *m = kiln_sequential("reg", KILN_SHAPE(2));
    kiln_model_set_seed(m, 3);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 1 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.05), .loss = KILN_LOSS_HUBER, .metric_list = "mae,rmse",
                                                     .device = "cpu", .num_threads = 1 }));
    kiln_data *tr = kiln_data_batch(kiln_data_from_arrays(x, y, 0), 16, true), *va = kiln_data_batch(kiln_data_from_arrays(x, y, 0), 64, false);
    kiln_callback cbs[2] = { kiln_callback_csv_logger(csv), kiln_callback_early_stopping("val_mae", 50, 0) };
    CHECK_OK(kiln_fit_data(m, tr, &(kiln_fit_opts){ .epochs = 30, .validation_data = va, .callbacks = cbs, .n_callbacks = 2 }));
    int n = 0;
    const kiln_logs *h = kiln_model_history(m, &n);
    CHECK(n == 30 && h[0].n_metrics == 2);
    if (n == 30) {
        CHECK_MSG(h[29].val_metrics[0] < 0.5 * h[0].val_metrics[0], "val_mae %g -> %g", h[0].val_metrics[0], h[29].val_metrics[0]);
        CHECK(h[29].metrics[1] >= h[29].metrics[0] - 1e-9);     /* rmse >= mae */
    }
    FILE *f = fopen(csv, "r");
    char line[512] = "";
    CHECK(f && fgets(line, sizeof line, f));
    CHECK_MSG(strstr(line, ",mae,val_mae,rmse,val_rmse") != NULL, "header %s", line);
    if (f) fclose(f);
    kiln_eval_result r;
    CHECK_OK(kiln_evaluate_data(m, va, NULL, &r));
    if (n == 30) CHECK_NEAR(r.metrics[0], h[29].val_metrics[0], 1e-6);
    kiln_data_free(tr); kiln_data_free(va);
    kiln_tensor_free(x); kiln_tensor_free(y);
    kiln_model_free(m);
    unlink(csv);
    rmdir(dir);
}

static void check_errors(void) {
    const char *bad[] = { "f1", "precision:3", "auc@", "top_k_categorical_accuracy:0", "mae,mae,mae,mae,mae,mae,mae,mae,mae,mae,mae,mae,mae,mae,mae,mae,mae" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kiln_model *m = kiln_sequential("e", KILN_SHAPE(2));
        kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_LINEAR });
        kiln_status st = kiln_compile(m, &(kiln_compile_opts){ .loss = KILN_LOSS_MSE, .metric_list = bad[i], .device = "cpu" });
        CHECK_MSG(st == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "metric"), "%s: %s", bad[i], kiln_last_error());
        CHECK(kiln_metric_list_check(bad[i]) == KILN_INVALID_ARGUMENT);
        kiln_model_free(m);
    }
    CHECK(kiln_metric_list_check("auc,recall@r,top_k_categorical_accuracy:3") == KILN_OK);
}

int main(void) {
    fill();
    check_values();
    check_fit();
    check_errors();
    return check_summary("test_keras_metrics");
}
