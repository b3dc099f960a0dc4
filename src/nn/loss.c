/* The compiled loss on the model output: cross-entropies (from probabilities or logits), MSE and
 * Keras' other losses (composed of graph ops, so autodiff gives their gradients). */
#include <math.h>
#include "nn/nn_step.h"

#define PROB_EPS 1e-7

static const char *const loss_names[KILN_LOSS_COUNT] = {
    "sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy", "mse",
    "mae", "huber", "log_cosh", "kl_divergence", "poisson", "hinge", "squared_hinge", "categorical_hinge", "cosine_similarity",
};

const char *kiln_loss_name(kiln_loss_kind k) { return (unsigned)k < KILN_LOSS_COUNT ? loss_names[k] : "?"; }

kiln_status kiln_loss_from_name(const char *name, kiln_loss_kind *out) {
    static const struct { const char *name; kiln_loss_kind k; } alias[] = {
        { "mean_squared_error", KILN_LOSS_MSE }, { "MeanSquaredError", KILN_LOSS_MSE },
        { "SparseCategoricalCrossentropy", KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY },
        { "CategoricalCrossentropy", KILN_LOSS_CATEGORICAL_CROSSENTROPY }, { "BinaryCrossentropy", KILN_LOSS_BINARY_CROSSENTROPY },
        { "mean_absolute_error", KILN_LOSS_MAE }, { "MeanAbsoluteError", KILN_LOSS_MAE },
        { "Huber", KILN_LOSS_HUBER }, { "huber_loss", KILN_LOSS_HUBER },
        { "logcosh", KILN_LOSS_LOG_COSH }, { "LogCosh", KILN_LOSS_LOG_COSH },
        { "kld", KILN_LOSS_KL_DIVERGENCE }, { "KLD", KILN_LOSS_KL_DIVERGENCE }, { "KLDivergence", KILN_LOSS_KL_DIVERGENCE },
        { "kullback_leibler_divergence", KILN_LOSS_KL_DIVERGENCE }, { "Poisson", KILN_LOSS_POISSON },
        { "Hinge", KILN_LOSS_HINGE }, { "SquaredHinge", KILN_LOSS_SQUARED_HINGE },
        { "CategoricalHinge", KILN_LOSS_CATEGORICAL_HINGE }, { "CosineSimilarity", KILN_LOSS_COSINE_SIMILARITY },
    };
    for (int i = 0; name && i < KILN_LOSS_COUNT; i++)
        if (!strcmp(name, loss_names[i])) { *out = (kiln_loss_kind)i; return KILN_OK; }
    for (size_t i = 0; name && i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(name, alias[i].name)) { *out = alias[i].k; return KILN_OK; }
    return kiln_set_error(KILN_INVALID_ARGUMENT, "unknown loss '%s': use sparse_categorical_crossentropy (class ids), "
                          "categorical_crossentropy (class ids or one-hot rows), binary_crossentropy (0/1, one output unit), mse, "
                          "mae (mean_absolute_error), huber, log_cosh, kl_divergence, poisson, hinge, squared_hinge, "
                          "categorical_hinge or cosine_similarity", name ? name : "(null)");
}

static kiln_node *labels_f32(kiln_graph *g, kiln_node *y, int batch) {
    return kiln_reshape(g, kiln_node_dtype(y) == KILN_F32 ? y : kiln_cast(g, y, KILN_F32), KILN_SHAPE(batch, 1));
}

static kiln_node *one_hot(kiln_graph *g, kiln_node *y, int batch, int64_t classes) {
    kiln_tensor *iota = kiln_tensor_new(KILN_F32, KILN_SHAPE(1, classes));
    if (!iota) return NULL;
    for (int64_t i = 0; i < classes; i++) kiln_tensor_set(iota, i, (double)i);
    kiln_node *c = kiln_constant(g, iota);
    kiln_tensor_free(iota);
    return kiln_cast(g, kiln_equal(g, labels_f32(g, y, batch), c), KILN_F32);
}

static kiln_node *sc(kiln_graph *g, double v) { return kiln_scalar(g, KILN_F32, v); }
static kiln_node *row_sum(kiln_graph *g, kiln_node *x) { return kiln_reduce_sum(g, x, (int[]){ 1 }, 1, false); }
static kiln_node *row_mean(kiln_graph *g, kiln_node *x) { return kiln_reduce_mean(g, x, (int[]){ 1 }, 1, false); }

/* Keras' convert_binary_labels_to_hinge: targets all 0 or 1 (over the batch) become -1 / 1. */
static kiln_node *hinge_targets(kiln_graph *g, kiln_node *t) {
    kiln_node *is01 = kiln_add(g, kiln_cast(g, kiln_equal(g, t, sc(g, 0)), KILN_F32), kiln_cast(g, kiln_equal(g, t, sc(g, 1)), KILN_F32));
    kiln_node *all = kiln_neg(g, kiln_reduce_max(g, kiln_neg(g, is01), NULL, 0, false));   /* min */
    return kiln_add(g, t, kiln_mul(g, all, kiln_sub(g, t, sc(g, 1))));                    /* all ? 2t - 1 : t */
}

/* x * min(rsqrt(sum x^2), 1/eps) over rows: Keras' normalize. */
static kiln_node *l2_normalize(kiln_graph *g, kiln_node *x) {
    kiln_node *ss = kiln_reduce_sum(g, kiln_square(g, x), (int[]){ 1 }, 1, true);
    return kiln_mul(g, x, kiln_minimum(g, kiln_rsqrt(g, ss), sc(g, 1 / PROB_EPS)));
}

/* Per-example losses [B] of Keras' formulas: p the outputs [B, C], t the targets [B, C]. */
kiln_node *nn_example_loss(kiln_graph *g, kiln_loss_kind k, double delta, kiln_node *p, kiln_node *t) {
    kiln_node *d = kiln_sub(g, p, t);
    switch (k) {
    case KILN_LOSS_MSE: return row_mean(g, kiln_square(g, d));
    case KILN_LOSS_MAE: return row_mean(g, kiln_abs(g, d));
    case KILN_LOSS_HUBER: {          /* 0.5 q^2 + delta (|d| - q), q = min(|d|, delta) */
        kiln_node *a = kiln_abs(g, d), *q = kiln_minimum(g, a, sc(g, delta));
        return row_mean(g, kiln_add(g, kiln_mul(g, sc(g, 0.5), kiln_square(g, q)), kiln_mul(g, sc(g, delta), kiln_sub(g, a, q))));
    }
    case KILN_LOSS_LOG_COSH:         /* x + softplus(-2x) - log 2 */
        return row_mean(g, kiln_sub(g, kiln_add(g, d, kiln_softplus(g, kiln_mul(g, d, sc(g, -2)))), sc(g, log(2.0))));
    case KILN_LOSS_KL_DIVERGENCE: {
        kiln_node *tc = kiln_minimum(g, kiln_maximum(g, t, sc(g, PROB_EPS)), sc(g, 1));
        kiln_node *pc = kiln_minimum(g, kiln_maximum(g, p, sc(g, PROB_EPS)), sc(g, 1));
        return row_sum(g, kiln_mul(g, tc, kiln_sub(g, kiln_log(g, tc), kiln_log(g, pc))));
    }
    case KILN_LOSS_POISSON:
        return row_mean(g, kiln_sub(g, p, kiln_mul(g, t, kiln_log(g, kiln_add(g, p, sc(g, PROB_EPS))))));
    case KILN_LOSS_HINGE:
    case KILN_LOSS_SQUARED_HINGE: {
        kiln_node *h = kiln_relu(g, kiln_sub(g, sc(g, 1), kiln_mul(g, hinge_targets(g, t), p)));
        return row_mean(g, k == KILN_LOSS_HINGE ? h : kiln_square(g, h));
    }
    case KILN_LOSS_CATEGORICAL_HINGE: {
        kiln_node *pos = row_sum(g, kiln_mul(g, t, p));
        kiln_node *neg = kiln_reduce_max(g, kiln_mul(g, kiln_sub(g, sc(g, 1), t), p), (int[]){ 1 }, 1, false);
        return kiln_relu(g, kiln_add(g, kiln_sub(g, neg, pos), sc(g, 1)));
    }
    case KILN_LOSS_COSINE_SIMILARITY:
        return kiln_neg(g, row_sum(g, kiln_mul(g, l2_normalize(g, t), l2_normalize(g, p))));
    default: return NULL;
    }
}

/* The cross-entropies per example [B] (sample weights): the fused ops' formulas composed. */
static kiln_node *xent_examples(kiln_model *m, kiln_graph *g, kiln_node *out, kiln_node *y, int batch, int64_t classes) {
    bool logits = m->copts.from_logits;
    if (m->copts.loss == KILN_LOSS_BINARY_CROSSENTROPY) {   /* softplus(z) - z y, z the logit */
        kiln_node *z = out;
        if (!logits) {
            kiln_node *p = kiln_minimum(g, kiln_maximum(g, out, sc(g, PROB_EPS)), sc(g, 1 - PROB_EPS));
            z = kiln_sub(g, kiln_log(g, p), kiln_log(g, kiln_sub(g, sc(g, 1), p)));
        }
        return row_mean(g, kiln_sub(g, kiln_softplus(g, z), kiln_mul(g, z, labels_f32(g, y, batch))));
    }
    kiln_node *z = logits ? out : kiln_log(g, kiln_maximum(g, out, sc(g, PROB_EPS)));
    return kiln_neg(g, row_sum(g, kiln_mul(g, one_hot(g, y, batch, classes), kiln_log_softmax(g, z, -1))));
}

/* sum(w_i * loss_i) / B: Keras' sum_over_batch_size with sample weights. */
static kiln_node *weighted_loss(kiln_model *m, kiln_graph *g, kiln_node *out, kiln_node *y, kiln_node *w, int batch) {
    int64_t classes = kiln_node_shape(out).dim[1];
    kiln_loss_kind k = m->copts.loss;
    kiln_node *e;
    if (k == KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY || k == KILN_LOSS_CATEGORICAL_CROSSENTROPY || k == KILN_LOSS_BINARY_CROSSENTROPY)
        e = xent_examples(m, g, out, y, batch, classes);
    else
        e = nn_example_loss(g, k, m->copts.huber_delta > 0 ? m->copts.huber_delta : 1.0, out,
                            classes == 1 ? labels_f32(g, y, batch) : one_hot(g, y, batch, classes));
    return e ? kiln_reduce_mean(g, kiln_mul(g, e, w), NULL, 0, false) : NULL;
}

kiln_node *nn_build_loss(kiln_model *m, kiln_graph *g, kiln_node *out, kiln_node *y, kiln_node *w, int batch) {
    if (!out) return NULL;
    int64_t classes = kiln_node_shape(out).dim[1];
    bool logits = m->copts.from_logits;
    kiln_node *loss = NULL;
    if (w && kiln_node_shape(out).rank > 2) {
        nn_fail(m, KILN_UNSUPPORTED, "model '%s': sample weights weigh one label per example; output %s has a label per position",
                m->name, m->output->name);
        return NULL;
    }
    kiln_graph_push_scope(g, "loss");
    switch (w ? KILN_LOSS_COUNT : m->copts.loss) {
    case KILN_LOSS_COUNT:
        loss = weighted_loss(m, g, out, y, w, batch);
        break;
    case KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY:
        /* probabilities p: softmax(log p) == p, so log p serves as logits */
        loss = kiln_sparse_softmax_cross_entropy(g, logits ? out : kiln_log(g, kiln_maximum(g, out, kiln_scalar(g, KILN_F32, PROB_EPS))), y);
        break;
    case KILN_LOSS_CATEGORICAL_CROSSENTROPY:
        loss = kiln_softmax_cross_entropy(g, logits ? out : kiln_log(g, kiln_maximum(g, out, kiln_scalar(g, KILN_F32, PROB_EPS))),
                                          one_hot(g, y, batch, classes));
        break;
    case KILN_LOSS_BINARY_CROSSENTROPY: {
        kiln_node *z = out;
        if (!logits) {       /* logit(p) = log p - log(1 - p), p clipped away from 0 and 1 */
            kiln_node *p = kiln_minimum(g, kiln_maximum(g, out, kiln_scalar(g, KILN_F32, PROB_EPS)), kiln_scalar(g, KILN_F32, 1 - PROB_EPS));
            z = kiln_sub(g, kiln_log(g, p), kiln_log(g, kiln_sub(g, kiln_scalar(g, KILN_F32, 1), p)));
        }
        loss = kiln_sigmoid_cross_entropy(g, z, labels_f32(g, y, batch));
        break;
    }
    case KILN_LOSS_MSE:
        loss = kiln_mean_squared_error(g, out, classes == 1 ? labels_f32(g, y, batch) : one_hot(g, y, batch, classes));
        break;
    default: {
        double delta = m->copts.huber_delta > 0 ? m->copts.huber_delta : 1.0;
        kiln_node *t = classes == 1 ? labels_f32(g, y, batch) : one_hot(g, y, batch, classes);
        kiln_node *e = nn_example_loss(g, m->copts.loss, delta, out, t);
        loss = e ? kiln_reduce_mean(g, e, NULL, 0, false) : NULL;
        break;
    }
    }
    kiln_graph_pop_scope(g);
    if (!loss) nn_fail(m, kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL, "model '%s': building the loss on output %s: %s",
                       m->name, m->output->name, kiln_graph_error(g));
    return loss;
}
