/* Keras' losses after mse (issue 29): each against its hand formula (Keras' definition, written
 * out here in double) on fixed outputs and one-hot / value targets, its gradient against central
 * finite differences, and the compiled loss of a model (kiln_evaluate) equal to the same formula. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/pipeline.h"
#include "nn/nn_step.h"

#define B 4
#define C 3

static double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Keras' per-example formula, mean over the batch; t: targets (hinge conversion done here). */
static double hand(kiln_loss_kind k, const double *p, const double *t, int n, int c) {
    double sum = 0;
    bool bin = true;
    for (int i = 0; i < n * c; i++) bin = bin && (t[i] == 0 || t[i] == 1);
    for (int i = 0; i < n; i++) {
        const double *pr = p + i * c, *tr = t + i * c;
        double e = 0, pos = 0, neg = -1e300, nt = 0, np_ = 0, dot = 0;
        for (int j = 0; j < c; j++) {
            double d = pr[j] - tr[j], a = fabs(d), h = (bin ? 2 * tr[j] - 1 : tr[j]);
            switch (k) {
            case KILN_LOSS_MAE: e += a / c; break;
            case KILN_LOSS_HUBER: e += (a <= 1 ? 0.5 * d * d : a - 0.5) / c; break;
            case KILN_LOSS_LOG_COSH: e += log(cosh(d)) / c; break;
            case KILN_LOSS_KL_DIVERGENCE: { double tc = clip(tr[j], 1e-7, 1), pc = clip(pr[j], 1e-7, 1); e += tc * log(tc / pc); break; }
            case KILN_LOSS_POISSON: e += (pr[j] - tr[j] * log(pr[j] + 1e-7)) / c; break;
            case KILN_LOSS_HINGE: e += fmax(1 - h * pr[j], 0) / c; break;
            case KILN_LOSS_SQUARED_HINGE: e += pow(fmax(1 - h * pr[j], 0), 2) / c; break;
            case KILN_LOSS_CATEGORICAL_HINGE: pos += tr[j] * pr[j]; neg = fmax(neg, (1 - tr[j]) * pr[j]); break;
            case KILN_LOSS_COSINE_SIMILARITY: nt += tr[j] * tr[j]; np_ += pr[j] * pr[j]; dot += tr[j] * pr[j]; break;
            default: e += d * d / c; break;
            }
        }
        if (k == KILN_LOSS_CATEGORICAL_HINGE) e = fmax(neg - pos + 1, 0);
        if (k == KILN_LOSS_COSINE_SIMILARITY) e = -dot / sqrt(nt) / sqrt(np_);
        sum += e;
    }
    return sum / n;
}

static const kiln_loss_kind kinds[] = { KILN_LOSS_MSE, KILN_LOSS_MAE, KILN_LOSS_HUBER, KILN_LOSS_LOG_COSH, KILN_LOSS_KL_DIVERGENCE,
                                        KILN_LOSS_POISSON, KILN_LOSS_HINGE, KILN_LOSS_SQUARED_HINGE, KILN_LOSS_CATEGORICAL_HINGE,
                                        KILN_LOSS_COSINE_SIMILARITY };
#define NK ((int)(sizeof kinds / sizeof kinds[0]))

static double P[B * C], T[B * C];
static const int32_t LAB[B] = { 2, 0, 1, 2 };

static void fill(void) {
    uint64_t s = 12345;
    for (int i = 0; i < B * C; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        P[i] = 0.1 + 0.8 * (double)(s >> 11) / 9007199254740992.0;   /* away from the kinks and clips */
    }
    P[1] = 1.7; P[4] = 0.02;                                        /* huber's |d| > 1, kl_divergence's clip */
    for (int i = 0; i < B; i++) for (int j = 0; j < C; j++) T[i * C + j] = j == LAB[i];
}

static kiln_tensor *tensor(const double *v, kiln_shape sh) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, sh);
    for (int64_t i = 0; i < kiln_shape_numel(sh); i++) kiln_tensor_set(t, i, v[i]);
    return t;
}

/* The graph's loss and gradient at P, against the formula and finite differences. */
static void check_graph(kiln_loss_kind k) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *p = kiln_placeholder(g, "p", KILN_F32, KILN_SHAPE(B, C));
    kiln_tensor *tt = tensor(T, KILN_SHAPE(B, C));
    kiln_node *t = kiln_constant(g, tt);
    kiln_node *loss = kiln_reduce_mean(g, nn_example_loss(g, k, 1.0, p, t), NULL, 0, false), *dp = NULL;
    CHECK_OK(kiln_gradients(g, loss, &p, 1, &dp));
    kiln_session *s = kiln_session_new(g, NULL);
    CHECK(s != NULL);
    kiln_tensor *pt = tensor(P, KILN_SHAPE(B, C)), *outs[2] = { NULL, NULL };
    CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { p, pt } }, 1, (kiln_node *[]){ loss, dp }, outs, 2, NULL, 0));
    double want = hand(k, P, T, B, C);
    CHECK_MSG(fabs(kiln_tensor_get(outs[0], 0) - want) < 1e-5, "%s: %.7f, formula %.7f", kiln_loss_name(k), kiln_tensor_get(outs[0], 0), want);
    for (int i = 0; i < B * C; i++) {           /* central differences of the formula in double */
        double q[B * C], h = 1e-4;
        memcpy(q, P, sizeof q);
        q[i] = P[i] + h;
        double up = hand(k, q, T, B, C);
        q[i] = P[i] - h;
        double fd = (up - hand(k, q, T, B, C)) / (2 * h), an = kiln_tensor_get(outs[1], i);
        CHECK_MSG(fabs(an - fd) < 1e-4 + 1e-3 * fabs(fd), "%s d/dp[%d]: %.6f, finite differences %.6f", kiln_loss_name(k), i, an, fd);
    }
    kiln_tensor_free(outs[0]); kiln_tensor_free(outs[1]); kiln_tensor_free(pt); kiln_tensor_free(tt);
    kiln_session_free(s);
    kiln_graph_free(g);
}

/* The compiled loss: an identity model outputs its input; class ids become one-hot targets. */
static void check_model(kiln_loss_kind k) {
    kiln_model *m = kiln_sequential("identity", KILN_SHAPE(C));
    kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_LINEAR });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .loss = k, .device = "cpu", .num_threads = 1 }));
    kiln_tensor *x = tensor(P, KILN_SHAPE(B, C)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(B));
    memcpy(y->data, LAB, sizeof LAB);
    kiln_dataset *d = kiln_dataset_from_tensors(x, y, C);
    kiln_eval_result r;
    CHECK_OK(kiln_evaluate(m, d, NULL, &r));
    double want = hand(k, P, T, B, C);
    CHECK_MSG(fabs(r.loss - want) < 1e-5, "%s compiled: %.7f, formula %.7f", kiln_loss_name(k), r.loss, want);
    kiln_dataset_free(d);
    kiln_tensor_free(x); kiln_tensor_free(y);
    kiln_model_free(m);
}

/* one output unit with f32 values: hinge keeps -1/1 targets, huber's delta applies */
static void check_values(void) {
    double p[4] = { 0.3, -1.2, 2.5, 0.9 }, t[4] = { 1, -1, 1, -1 };
    kiln_model *m = kiln_sequential("identity1", KILN_SHAPE(1));
    kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_LINEAR });
    kiln_tensor *x = tensor(p, KILN_SHAPE(4, 1)), *y = tensor(t, KILN_SHAPE(4));
    kiln_data *d = kiln_data_batch(kiln_data_from_arrays(x, y, 0), 4, false);   /* f32 labels: values */
    kiln_eval_result r;
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .loss = KILN_LOSS_HINGE, .device = "cpu", .num_threads = 1 }));
    CHECK_OK(kiln_evaluate_data(m, d, NULL, &r));
    CHECK_NEAR(r.loss, hand(KILN_LOSS_HINGE, p, t, 4, 1), 1e-6);
    kiln_model_free(m);                          /* a fresh model: evaluation graphs are kept per model */
    m = kiln_sequential("identity1", KILN_SHAPE(1));
    kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_LINEAR });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .loss = KILN_LOSS_HUBER, .huber_delta = 0.5, .device = "cpu", .num_threads = 1 }));
    CHECK_OK(kiln_evaluate_data(m, d, NULL, &r));
    double h = 0;
    for (int i = 0; i < 4; i++) { double a = fabs(p[i] - t[i]); h += a <= 0.5 ? 0.5 * a * a : 0.5 * a - 0.125; }
    CHECK_NEAR(r.loss, h / 4, 1e-6);
    kiln_data_free(d);
    kiln_tensor_free(x); kiln_tensor_free(y);
    kiln_model_free(m);
}

int main(void) {
    fill();
    for (int i = 0; i < NK; i++) { check_graph(kinds[i]); check_model(kinds[i]); }
    check_values();
    const char *names[] = { "mae", "mean_absolute_error", "huber", "Huber", "log_cosh", "logcosh", "kl_divergence", "kld", "poisson",
                            "hinge", "squared_hinge", "categorical_hinge", "cosine_similarity", "CosineSimilarity" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        kiln_loss_kind k;
        CHECK_MSG(kiln_loss_from_name(names[i], &k) == KILN_OK && kiln_loss_from_name(kiln_loss_name(k), &k) == KILN_OK, "%s", names[i]);
    }
    kiln_loss_kind k;
    CHECK(kiln_loss_from_name("cosine", &k) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "cosine_similarity"));
    return check_summary("test_keras_losses");
}
