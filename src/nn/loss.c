/* The compiled loss on the model output: cross-entropies (from probabilities or logits) and MSE. */
#include "nn/nn_step.h"

#define PROB_EPS 1e-7

static const char *const loss_names[KILN_LOSS_COUNT] = {
    "sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy", "mse",
};

const char *kiln_loss_name(kiln_loss_kind k) { return (unsigned)k < KILN_LOSS_COUNT ? loss_names[k] : "?"; }

kiln_status kiln_loss_from_name(const char *name, kiln_loss_kind *out) {
    static const struct { const char *name; kiln_loss_kind k; } alias[] = {
        { "mean_squared_error", KILN_LOSS_MSE }, { "MeanSquaredError", KILN_LOSS_MSE },
        { "SparseCategoricalCrossentropy", KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY },
        { "CategoricalCrossentropy", KILN_LOSS_CATEGORICAL_CROSSENTROPY }, { "BinaryCrossentropy", KILN_LOSS_BINARY_CROSSENTROPY },
    };
    for (int i = 0; name && i < KILN_LOSS_COUNT; i++)
        if (!strcmp(name, loss_names[i])) { *out = (kiln_loss_kind)i; return KILN_OK; }
    for (size_t i = 0; name && i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(name, alias[i].name)) { *out = alias[i].k; return KILN_OK; }
    return kiln_set_error(KILN_INVALID_ARGUMENT, "unknown loss '%s': use sparse_categorical_crossentropy (class ids), "
                          "categorical_crossentropy (class ids or one-hot rows), binary_crossentropy (0/1, one output unit) or mse",
                          name ? name : "(null)");
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

kiln_node *nn_build_loss(kiln_model *m, kiln_graph *g, kiln_node *out, kiln_node *y, int batch) {
    if (!out) return NULL;
    int64_t classes = kiln_node_shape(out).dim[1];
    bool logits = m->copts.from_logits;
    kiln_node *loss = NULL;
    kiln_graph_push_scope(g, "loss");
    switch (m->copts.loss) {
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
    default: break;
    }
    kiln_graph_pop_scope(g);
    if (!loss) nn_fail(m, kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL, "model '%s': building the loss on output %s: %s",
                       m->name, m->output->name, kiln_graph_error(g));
    return loss;
}
