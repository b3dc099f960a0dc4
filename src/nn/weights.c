/* What a front end reads and sets between steps: the learning rate (Keras's
 * optimizer.learning_rate), and a model's weights one by one, as Keras' model.weights / get_weights / set_weights see them:
 * per layer in order, each layer's variables in the order it made them (Dense kernel, bias;
 * BatchNormalization gamma, beta, moving_mean, moving_variance). Values are read from and written
 * to the session, which is built (weights initialised) on first use. */
#include <math.h>
#include "nn/nn_model.h"

static const nn_var *var_at(const kiln_layer *l, int i) { return l && i >= 0 && i < l->n_vars ? &l->vars[i] : NULL; }

int kiln_layer_weight_count(const kiln_layer *l) { return l ? l->n_vars : 0; }
const char *kiln_layer_weight_name(const kiln_layer *l, int i) { const nn_var *v = var_at(l, i); return v ? v->name : NULL; }
kiln_shape kiln_layer_weight_shape(const kiln_layer *l, int i) { const nn_var *v = var_at(l, i); return v ? v->shape : (kiln_shape){ 0 }; }
bool kiln_layer_weight_trainable(const kiln_layer *l, int i) { const nn_var *v = var_at(l, i); return v && v->trainable; }

/* The variable named `name`, its graph node once the session exists. */
static kiln_status find(kiln_model *m, const char *name, const char *what, const nn_var **var) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!name || !nn_is_weight_name(m, name, var) || !*var)
        return kiln_set_error(KILN_NOT_FOUND, "%s: model '%s' has no weight '%s'", what, m->name, name ? name : "(null)");
    return KILN_OK;
}

static int session_batch(const kiln_model *m) { return m->last_fit_batch > 0 ? m->last_fit_batch : 32; }

kiln_status kiln_model_get_weight(kiln_model *m, const char *name, kiln_tensor **out) {
    if (out) *out = NULL;
    if (!m || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_get_weight: NULL argument");
    const nn_var *v;
    kiln_status st = find(m, name, "kiln_model_get_weight", &v);
    if (st || (st = nn_ensure_session(m, session_batch(m)))) return st;
    kiln_node *n = kiln_graph_find(m->g, name);
    if (!n) return kiln_set_error(KILN_INTERNAL, "kiln_model_get_weight: '%s' is not in the model's graph", name);
    kiln_tensor *t = kiln_tensor_new(kiln_node_dtype(n), kiln_node_shape(n));
    if (!t) return KILN_OUT_OF_MEMORY;
    if ((st = kiln_session_read_variable(m->s, n, t))) { kiln_tensor_free(t); return st; }
    *out = t;
    return KILN_OK;
}

kiln_status kiln_model_set_weight(kiln_model *m, const char *name, const kiln_tensor *value) {
    if (!m || !value) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_set_weight: NULL argument");
    const nn_var *v;
    kiln_status st = find(m, name, "kiln_model_set_weight", &v);
    if (st) return st;
    char a[96], b[96];
    if (!kiln_shape_equal(value->shape, v->shape))
        return kiln_set_error(KILN_SHAPE_MISMATCH, "kiln_model_set_weight: weight '%s' has shape %s; the value given has %s", name,
                              kiln_shape_str(v->shape, a, sizeof a), kiln_shape_str(value->shape, b, sizeof b));
    if (value->dtype != KILN_F32)
        return kiln_set_error(KILN_DTYPE_MISMATCH, "kiln_model_set_weight: weight '%s' is float32; the value given is %s", name, kiln_dtype_name(value->dtype));
    if ((st = nn_ensure_session(m, session_batch(m)))) return st;
    kiln_node *n = kiln_graph_find(m->g, name);
    if (!n) return kiln_set_error(KILN_INTERNAL, "kiln_model_set_weight: '%s' is not in the model's graph", name);
    return kiln_session_assign_variable(m->s, n, value);
}

double kiln_model_learning_rate(const kiln_model *m) { return m && m->compiled ? m->base_lr : 0.0; }

kiln_status kiln_model_set_learning_rate(kiln_model *m, double lr) {
    if (!m) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_set_learning_rate: NULL model");
    if (!m->compiled) return kiln_set_error(KILN_INVALID_ARGUMENT, "model '%s' is not compiled: the learning rate is the optimizer's", m->name);
    if (!(lr >= 0) || !isfinite(lr)) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_set_learning_rate: %g is not a learning rate (>= 0)", lr);
    m->base_lr = lr;       /* the schedule runs from it; the next step's update reads it (nn_set_lr) */
    return KILN_OK;
}
