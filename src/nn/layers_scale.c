/* Layer types with a learned elementwise factor: PReLU (Keras's learned negative slope `alpha`,
 * one per input element, shared over `shared_axes`) and LayerScale (keras.applications.convnext's
 * per-channel `gamma`, a constant `init_values` at start). Both compose existing ops (relu, mul,
 * sub), so their gradients and every backend come with those ops. Typed builders: none; they
 * are built by type name and options (Keras JSON, nn_layer_from_options, the Python classes). */
#include <math.h>
#include <stdio.h>
#include "nn/nn_layers.h"

/* The variable of shape p read as [1, p...] so that it broadcasts over the batch. */
static kiln_node *batched_var(const nn_fwd *f, const kiln_layer *l, const char *suffix, kiln_shape p) {
    kiln_shape s = { p.rank + 1, { 1 } };
    for (int i = 0; i < p.rank; i++) s.dim[i + 1] = p.dim[i];
    kiln_node *v = nn_layer_var(f, l, suffix);
    return v ? kiln_reshape(f->g, v, s) : NULL;
}

/* ---- PReLU: y = relu(x) - alpha * relu(-x), alpha of the input's shape with the shared axes 1 ---- */
static const nn_opt_spec prelu_opts[] = {
    { "alpha_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_ZEROS) },
    { "alpha_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },
    { "shared_axes", NN_T_SHAPE, NN_CFG(shared_axes), 0, NN_DNULL },     /* 1-based (axis 0 is the batch) */
    { NULL },
};
/* alpha's shape: the input's (batch excluded) with each shared axis 1 */
static kiln_shape prelu_alpha_shape(const kiln_layer *l) {
    kiln_shape p = l->in[0]->out, sa = l->cfg ? l->cfg->shared_axes : (kiln_shape){ 0 };
    for (int i = 0; i < sa.rank; i++) p.dim[sa.dim[i] - 1] = 1;
    return p;
}
static kiln_status prelu_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    for (int i = 0; i < c->shared_axes.rank; i++) {
        int64_t a = c->shared_axes.dim[i];
        if (a < 1 || a > s.rank)
            return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "shared_axes: axis %lld is not an axis of the input %s (1..%d; 0 is the batch)",
                                 (long long)a, nn_batched_str(s, b, sizeof b), s.rank);
    }
    l->out = s;
    return KILN_OK;
}
static void prelu_vars(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape p = l->in[0]->out;
    for (int i = 0; i < c->shared_axes.rank; i++) p.dim[c->shared_axes.dim[i] - 1] = 1;
    nn_layer_add_var(l, "alpha", p, c->kernel_init, true, c->l2);
}
static kiln_node *prelu_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *alpha = batched_var(f, l, "alpha", prelu_alpha_shape(l));
    if (!alpha) return NULL;
    return kiln_sub(f->g, kiln_relu(f->g, x), kiln_mul(f->g, alpha, kiln_relu(f->g, kiln_neg(f->g, x))));
}
const nn_layer_def nn_def_prelu = { "PReLU", "p_re_lu", prelu_opts, 1, 1, prelu_shape, prelu_vars, prelu_forward };

/* ---- LayerScale (ConvNeXt): y = x * gamma over the last axis, gamma [projection_dim] ---- */
static const nn_opt_spec layer_scale_opts[] = {
    { "init_values", NN_T_FLOAT, NN_CFG(init_value), 0, { 0 } },
    { "projection_dim", NN_T_INT, NN_CFG(units), 1, { 0 } },
    { NULL },
};
static kiln_status layer_scale_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (c->units < 1 || s.dim[s.rank - 1] != c->units)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "projection_dim %d must equal the input's last dim: %s", c->units, nn_batched_str(s, b, sizeof b));
    if (!isfinite(c->init_value)) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "init_values must be a finite number, got %g", c->init_value);
    l->units = c->units;
    l->out = s;
    return KILN_OK;
}
static void layer_scale_vars(kiln_layer *l, const nn_layer_cfg *c) {
    nn_layer_add_var(l, "gamma", KILN_SHAPE(c->units), (kiln_init){ .kind = KILN_INIT_CONSTANT, .a = c->init_value }, true, 0);
}
static kiln_node *layer_scale_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *g = nn_layer_var(f, l, "gamma");
    return g ? kiln_mul(f->g, x, g) : NULL;       /* [C] broadcasts over [N, ..., C] */
}
const nn_layer_def nn_def_layer_scale = { "LayerScale", "layer_scale", layer_scale_opts, 1, 1, layer_scale_shape, layer_scale_vars, layer_scale_forward };
