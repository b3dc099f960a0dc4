/* Preprocessing and parametrised activation layer types: Rescaling, Normalization, LeakyReLU,
 * ELU. Each reads its resolved options from l->cfg in its forward. */
#include <math.h>
#include <stdio.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

/* ---- Rescaling: x * scale + offset ---- */
static const nn_opt_spec rescale_opts[] = {
    { "scale", NN_T_FLOAT, NN_CFG(scale), 0, { 0 } },
    { "offset", NN_T_FLOAT, NN_CFG(offset), 0, NN_DFLOAT(0) },
    { NULL },
};
static kiln_status same_shape(kiln_layer *l, const nn_layer_cfg *c) {
    (void)c;
    l->out = l->in[0]->out;
    return KILN_OK;
}
static kiln_node *rescale_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *y = kiln_mul(f->g, x, kiln_scalar_like(f->g, x, l->cfg->scale));
    return l->cfg->offset != 0 ? kiln_add(f->g, y, kiln_scalar_like(f->g, x, l->cfg->offset)) : y;
}
const nn_layer_def nn_def_rescaling = { "Rescaling", "rescaling", rescale_opts, 1, 1, same_shape, NULL, rescale_forward };

/* ---- Normalization over the last axis: (x - mean) / max(sqrt(variance), 1e-7), as Keras 3.
 * mean and variance given in the config are constants (a number, or one per channel); null
 * (a layer Keras adapts, e.g. EfficientNet's) makes Keras's non-trainable weights mean (zeros),
 * variance (ones) and count, set by loading weights: Kiln does not adapt. ---- */
static const nn_opt_spec norm_opts[] = {
    { "mean", NN_T_FLOATS, NN_CFG(mean), 0, NN_DNULL },
    { "variance", NN_T_FLOATS, NN_CFG(variance), 0, NN_DNULL },
    { NULL },
};
static kiln_status norm_shape(kiln_layer *l, const nn_layer_cfg *c) {
    int64_t ch = l->in[0]->out.dim[l->in[0]->out.rank - 1];
    if ((c->mean.n == 0) != (c->variance.n == 0))
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "'mean' and 'variance' must both be given or both be null (weights, as after Keras's adapt)");
    for (int i = 0; i < c->variance.n; i++)
        if (c->variance.v[i] < 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "'variance' %g is negative", c->variance.v[i]);
    if ((c->mean.n > 1 && c->mean.n != ch) || (c->variance.n > 1 && c->variance.n != ch))
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "'mean' has %d values and 'variance' %d; give one, or one per channel (%lld)", c->mean.n, c->variance.n, (long long)ch);
    l->out = l->in[0]->out;
    return KILN_OK;
}
static void norm_vars(kiln_layer *l, const nn_layer_cfg *c) {
    if (c->mean.n) return;
    int64_t ch = l->out.dim[l->out.rank - 1];
    nn_layer_add_var(l, "mean", KILN_SHAPE(ch), kiln_init_zeros(), false, 0);
    nn_layer_add_var(l, "variance", KILN_SHAPE(ch), kiln_init_ones(), false, 0);
    nn_layer_add_var(l, "count", (kiln_shape){ 0 }, kiln_init_zeros(), false, 0);   /* Keras's int64 count of adapt: unused */
}
static kiln_node *values(const nn_fwd *f, kiln_node *like, const nn_floats *v) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(v->n));
    if (!t) { kiln_graph_fail(f->g, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    for (int i = 0; i < v->n; i++) ((float *)t->data)[i] = (float)v->v[i];
    kiln_node *n = kiln_constant(f->g, t);
    kiln_tensor_free(t);
    return n && n->dtype != like->dtype ? kiln_cast(f->g, n, like->dtype) : n;
}
static kiln_node *norm_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    const nn_layer_cfg *c = l->cfg;
    kiln_node *mean, *var;
    if (c->mean.n) { mean = values(f, x, &c->mean); var = values(f, x, &c->variance); }
    else { mean = nn_layer_var(f, l, "mean"); var = nn_layer_var(f, l, "variance"); }
    if (mean && mean->dtype != x->dtype) { mean = kiln_cast(f->g, mean, x->dtype); var = kiln_cast(f->g, var, x->dtype); }
    kiln_node *sd = kiln_maximum(f->g, kiln_sqrt(f->g, var), kiln_scalar_like(f->g, x, 1e-7));
    return kiln_div(f->g, kiln_sub(f->g, x, mean), sd);
}
const nn_layer_def nn_def_normalization = { "Normalization", "normalization", norm_opts, 1, 1, norm_shape, norm_vars, norm_forward };

/* ---- ReLU with a max_value other than 6 or a slope other than 0.2 (Keras's ReLU layer; the
 * plain ones are Activation layers): min(relu(x), max_value) - negative_slope * relu(-x) ---- */
static const nn_opt_spec relu_opts[] = {
    { "max_value", NN_T_FLOAT, NN_CFG(max_value), 0, NN_DNULL },    /* null: no upper bound */
    { "negative_slope", NN_T_FLOAT, NN_CFG(alpha), 0, NN_DFLOAT(0) },
    { NULL },
};
static kiln_status relu_shape(kiln_layer *l, const nn_layer_cfg *c) {
    if (!(c->max_value >= 0) || !(c->alpha >= 0))
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "max_value (%g) must be > 0 or null and negative_slope (%g) >= 0", c->max_value, c->alpha);
    l->out = l->in[0]->out;
    return KILN_OK;
}
static kiln_node *relu_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    const nn_layer_cfg *c = l->cfg;
    kiln_node *y = c->max_value > 0 ? kiln_clipped_relu(f->g, x, c->max_value) : kiln_relu(f->g, x);
    if (c->alpha == 0) return y;
    return kiln_sub(f->g, y, kiln_mul(f->g, kiln_relu(f->g, kiln_neg(f->g, x)), kiln_scalar_like(f->g, x, c->alpha)));
}
const nn_layer_def nn_def_relu = { "ReLU", "re_lu", relu_opts, 1, 1, relu_shape, NULL, relu_forward };

/* ---- LeakyReLU (negative_slope, Keras 3's default 0.3), ELU (alpha) ---- */
static const nn_opt_spec leaky_opts[] = {
    { "negative_slope", NN_T_FLOAT, NN_CFG(alpha), 0, NN_DFLOAT(0.3) },
    { NULL },
};
static const nn_opt_spec elu_opts[] = {
    { "alpha", NN_T_FLOAT, NN_CFG(alpha), 0, NN_DFLOAT(1.0) },
    { NULL },
};
static kiln_node *leaky_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) { return kiln_leaky_relu(f->g, x, l->cfg->alpha); }
static kiln_node *elu_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) { return kiln_elu(f->g, x, l->cfg->alpha); }
const nn_layer_def nn_def_leaky_relu = { "LeakyReLU", "leaky_re_lu", leaky_opts, 1, 1, same_shape, NULL, leaky_forward };
const nn_layer_def nn_def_elu = { "ELU", "elu", elu_opts, 1, 1, same_shape, NULL, elu_forward };
