/* Keras' sample_weight (issue 29): kiln_fit_opts.sample_weight gives the training loss
 * sum(w_i * loss_i) / B for every loss: one full batch with a learning rate too small to move
 * the weights is checked against each example's own loss (kiln_evaluate of that example alone);
 * weights all 1 train exactly as no weights; the errors. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/pipeline.h"

#define N 8
#define D 3

static float X[N * D], YV[N];
static int32_t YI[N];
static const float W[N] = { 1, 0, 2.5f, 0.5f, 1, 3, 0, 1.25f };

static kiln_model *model(kiln_loss_kind loss, int units, bool logits) {
    kiln_model *m = kiln_sequential("w", KILN_SHAPE(D));
    kiln_model_set_seed(m, 11);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 5, .activation = KILN_TANH });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = units, .activation = logits ? KILN_LINEAR : units == 1 ? KILN_SIGMOID : KILN_SOFTMAX });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(1e-12), .loss = loss, .from_logits = logits, .device = "cpu", .num_threads = 1 }));
    return m;
}

static kiln_data *arrays(int64_t from, int64_t n, bool values, int batch) {
    kiln_tensor x = { .dtype = KILN_F32, .shape = KILN_SHAPE(n, D), .data = X + from * D };
    kiln_tensor y = { .dtype = values ? KILN_F32 : KILN_I32, .shape = KILN_SHAPE(n), .data = values ? (void *)(YV + from) : (void *)(YI + from) };
    return kiln_data_batch(kiln_data_from_arrays(&x, &y, values ? 0 : 3), batch, true);
}

static void check_loss(kiln_loss_kind loss, int units, bool logits, bool values) {
    kiln_model *m = model(loss, units, logits);
    double want = 0;
    for (int i = 0; i < N; i++) {            /* each example's own loss, before training */
        kiln_data *one = arrays(i, 1, values, 1);
        kiln_eval_result r;
        CHECK_OK(kiln_evaluate_data(m, one, NULL, &r));
        want += W[i] * r.loss / N;
        kiln_data_free(one);
    }
    kiln_data *d = arrays(0, N, values, N);
    CHECK_OK(kiln_fit_data(m, d, &(kiln_fit_opts){ .epochs = 1, .sample_weight = W, .n_sample_weight = N }));
    int n = 0;
    const kiln_logs *h = kiln_model_history(m, &n);
    CHECK_MSG(n == 1 && fabs(h[0].loss - want) < 1e-5 * (1 + fabs(want)), "%s: weighted loss %g, by example %g", kiln_loss_name(loss), n ? h[0].loss : -1, want);
    kiln_data_free(d);
    kiln_model_free(m);
}

/* weights all 1 follow the unweighted training step for step (the per-example composition of the
 * cross-entropy equals the fused op) */
static void check_ones(void) {
    float ones[N];
    for (int i = 0; i < N; i++) ones[i] = 1;
    double loss[2];
    for (int k = 0; k < 2; k++) {
        kiln_model *m = kiln_sequential("w1", KILN_SHAPE(D));
        kiln_model_set_seed(m, 5);
        kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
        CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.1), .from_logits = true, .device = "cpu", .num_threads = 1 }));
        kiln_data *d = arrays(0, N, false, 4);
        CHECK_OK(kiln_fit_data(m, d, &(kiln_fit_opts){ .epochs = 5, .sample_weight = k ? ones : NULL, .n_sample_weight = k ? N : 0 }));
        int n = 0;
        loss[k] = kiln_model_history(m, &n)[4].loss;
        kiln_data_free(d);
        kiln_model_free(m);
    }
    CHECK_MSG(fabs(loss[0] - loss[1]) < 1e-5, "unweighted %g, weights 1 %g", loss[0], loss[1]);
}

static void check_errors(void) {
    float neg[N] = { 1, 1, -1, 1, 1, 1, 1, 1 };
    kiln_model *m = model(KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 3, true);
    kiln_data *d = arrays(0, N, false, 4);
    CHECK(kiln_fit_data(m, d, &(kiln_fit_opts){ .sample_weight = W, .n_sample_weight = N - 1 }) == KILN_INVALID_ARGUMENT &&
          strstr(kiln_last_error(), "7 sample weights for 8"));
    CHECK(kiln_fit_data(m, d, &(kiln_fit_opts){ .sample_weight = neg, .n_sample_weight = N }) == KILN_INVALID_ARGUMENT &&
          strstr(kiln_last_error(), "sample weight 2 is -1"));
    CHECK(kiln_fit_data(m, d, &(kiln_fit_opts){ .sample_weight = W, .n_sample_weight = N, .accumulate_steps = 2 }) == KILN_INVALID_ARGUMENT &&
          strstr(kiln_last_error(), "accumulate_steps"));
    CHECK_OK(kiln_fit_data(m, d, &(kiln_fit_opts){ .epochs = 1 }));    /* and unweighted again afterwards */
    kiln_data_free(d);
    kiln_model_free(m);
}

int main(void) {
    uint64_t s = 3;
    for (int i = 0; i < N * D; i++) { s = s * 6364136223846793005ull + 1442695040888963407ull; X[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1); }
    for (int i = 0; i < N; i++) { YI[i] = i % 3; YV[i] = (float)(i % 2); }
    check_loss(KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 3, true, false);
    check_loss(KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 3, false, false);
    check_loss(KILN_LOSS_CATEGORICAL_CROSSENTROPY, 3, false, false);
    check_loss(KILN_LOSS_BINARY_CROSSENTROPY, 1, false, true);
    check_loss(KILN_LOSS_BINARY_CROSSENTROPY, 1, true, true);
    check_loss(KILN_LOSS_MSE, 1, true, true);
    check_loss(KILN_LOSS_HUBER, 1, true, true);
    check_loss(KILN_LOSS_KL_DIVERGENCE, 3, false, false);
    check_loss(KILN_LOSS_HINGE, 1, true, true);
    check_ones();
    check_errors();
    return check_summary("test_sample_weights");
}
