/* Layer types without windows or merges: InputLayer, Dense, Flatten, Reshape, Dropout,
 * BatchNormalization, Activation. Each: options schema, shape, variables and forward ops
 * (its typed builder is in layers_api.c). */
#include <stdio.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

/* ---- InputLayer ---- */
static const nn_opt_spec input_opts[] = {
    { "shape", NN_T_SHAPE, NN_CFG(shape), 0, { 0 } },
    { NULL },
};
static kiln_status input_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape shape = c->shape;
    char b[96];
    if (shape.rank < 1 || shape.rank > KILN_MAX_DIMS - 1) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "input shape %s must have 1..%d dims (batch excluded)", kiln_shape_str(shape, b, sizeof b), KILN_MAX_DIMS - 1);
    for (int i = 0; i < shape.rank; i++)
        if (shape.dim[i] <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "input shape %s has a dimension <= 0", kiln_shape_str(shape, b, sizeof b));
    l->out = shape;
    return KILN_OK;
}
static kiln_node *input_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) { return x; }   /* the forward's input node */
const nn_layer_def nn_def_input = { "InputLayer", "input", input_opts, 0, 0, input_shape, NULL, input_forward };

/* ---- Dense ---- */
static const nn_opt_spec dense_opts[] = {
    { "units", NN_T_INT, NN_CFG(units), 1, { 0 } },
    { "activation", NN_T_ACTIVATION, NN_CFG(activation), 0, NN_DSTR("linear") },
    { "use_bias", NN_T_BOOL, NN_CFG(use_bias), 0, NN_DBOOL(true) },
    { "kernel_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { "bias_initializer", NN_T_INIT, NN_CFG(bias_init), 0, NN_DINIT(KILN_INIT_ZEROS) },
    { "kernel_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },    /* the L2 factor of {"class_name": "L2"} */
    { NULL },
};
static kiln_status dense_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    /* (None, ..., features): Keras's Dense acts on the last axis; kiln_layer_dense keeps its flat input */
    if (s.rank != 1 && c->flat_only)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s has %d dims; Dense needs flat input (None, features): add a Flatten layer (kiln_layer_flatten) before it",
                             nn_batched_str(s, b, sizeof b), s.rank + 1);
    if (c->units <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "set .units to the number of outputs (got %d)", c->units);
    if ((unsigned)c->activation >= KILN_ACTIVATION_COUNT) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)c->activation);
    l->units = c->units;
    l->act = c->activation;
    l->use_bias = c->use_bias;
    l->out = s;
    l->out.dim[s.rank - 1] = c->units;
    return KILN_OK;
}
static void dense_vars(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    nn_layer_add_var(l, "kernel", KILN_SHAPE(s.dim[s.rank - 1], l->units), c->kernel_init, true, c->l2);
    if (l->use_bias) nn_layer_add_var(l, "bias", KILN_SHAPE(l->units), c->bias_init, true, 0);
}
static kiln_node *dense_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *bias = l->use_bias ? kiln_autocast_weight(f->g, nn_layer_var(f, l, "bias")) : NULL;   /* cast first: fusable */
    kiln_shape s = l->in[0]->out;
    int64_t rows = f->batch;
    for (int i = 0; i < s.rank - 1; i++) rows *= s.dim[i];
    if (s.rank > 1) x = kiln_reshape(f->g, x, KILN_SHAPE(rows, s.dim[s.rank - 1]));     /* (None, ..., C): every position */
    kiln_node *y = kiln_matmul(f->g, x, nn_layer_var(f, l, "kernel"), false, false);
    if (l->use_bias) y = kiln_bias_add(f->g, y, bias);
    y = nn_activate(f->g, y, l->act);
    if (s.rank == 1) return y;
    kiln_shape o = { l->out.rank + 1, { f->batch } };
    for (int i = 0; i < l->out.rank; i++) o.dim[i + 1] = l->out.dim[i];
    return kiln_reshape(f->g, y, o);
}
const nn_layer_def nn_def_dense = { "Dense", "dense", dense_opts, 1, 1, dense_shape, dense_vars, dense_forward };

/* ---- Flatten ---- */
static const nn_opt_spec no_opts[] = { { NULL } };
static kiln_status flatten_shape(kiln_layer *l, const nn_layer_cfg *c) {
    l->out = KILN_SHAPE(kiln_shape_numel(l->in[0]->out));
    return KILN_OK;
}
static kiln_node *flatten_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    return kiln_reshape(f->g, x, KILN_SHAPE(f->batch, l->out.dim[0]));
}
const nn_layer_def nn_def_flatten = { "Flatten", "flatten", no_opts, 1, 1, flatten_shape, NULL, flatten_forward };

/* ---- Reshape ---- */
static const nn_opt_spec reshape_opts[] = {
    { "target_shape", NN_T_SHAPE, NN_CFG(shape), 0, { 0 } },
    { NULL },
};
static kiln_status reshape_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape t = c->shape, s = l->in[0]->out;
    char b[96], d[96];
    if (t.rank < 1 || t.rank > KILN_MAX_DIMS - 1) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "target shape must have 1..%d dims (batch excluded)", KILN_MAX_DIMS - 1);
    int64_t known = 1;
    int infer = -1;
    for (int i = 0; i < t.rank; i++) {
        if (t.dim[i] == -1 && infer < 0) infer = i;
        else if (t.dim[i] <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "target shape %s: dims must be positive (one may be -1)", kiln_shape_str(t, b, sizeof b));
        else if (nn_layer_mul(l, "target shape values", known, t.dim[i], &known)) return KILN_INVALID_ARGUMENT;
    }
    int64_t n = kiln_shape_numel(s);
    if (infer >= 0) {
        if (n % known) return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "cannot reshape input %s (%lld values) to %s", nn_batched_str(s, b, sizeof b), (long long)n, kiln_shape_str(t, d, sizeof d));
        t.dim[infer] = n / known;
    } else if (known != n)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "cannot reshape input %s (%lld values) to %s (%lld values)", nn_batched_str(s, b, sizeof b), (long long)n,
                             kiln_shape_str(t, d, sizeof d), (long long)known);
    l->target = t;
    l->out = t;
    return KILN_OK;
}
static kiln_node *reshape_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_shape s = { .rank = l->target.rank + 1 };
    s.dim[0] = f->batch;
    for (int i = 0; i < l->target.rank; i++) s.dim[i + 1] = l->target.dim[i];
    return kiln_reshape(f->g, x, s);
}
const nn_layer_def nn_def_reshape = { "Reshape", "reshape", reshape_opts, 1, 1, reshape_shape, NULL, reshape_forward };

/* ---- Dropout ---- */
static const nn_opt_spec dropout_opts[] = {
    { "rate", NN_T_FLOAT, NN_CFG(rate), 0, { 0 } },
    { "seed", NN_T_SEED, NN_CFG(seed), 0, NN_DNULL },      /* None: from the model seed */
    { "noise_shape", NN_T_NOISE, NN_CFG(noise), 0, NN_DNULL },   /* null: each element on its own */
    { NULL },
};
static kiln_status dropout_shape(kiln_layer *l, const nn_layer_cfg *c) {
    if (!(c->rate >= 0 && c->rate < 1)) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "rate %g must be in [0, 1)", c->rate);
    l->rate = c->rate;
    l->seed = c->seed;
    l->out = l->in[0]->out;
    kiln_shape ns = c->noise, s = l->out;
    char b[96], d[96];
    if (ns.rank && ns.rank != s.rank + 1)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "noise_shape has %d dims; the input %s has %d (the batch included)", ns.rank, nn_batched_str(s, b, sizeof b), s.rank + 1);
    for (int i = 1; i < ns.rank; i++)
        if (ns.dim[i] != 0 && ns.dim[i] != 1 && ns.dim[i] != s.dim[i - 1])
            return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "noise_shape %s does not broadcast to the input %s (each dim None, 1 or the input's)",
                                 kiln_shape_str(ns, d, sizeof d), nn_batched_str(s, b, sizeof b));
    if (ns.rank && ns.dim[0] != 0 && ns.dim[0] != 1) return nn_layer_fail(l, KILN_UNSUPPORTED, "noise_shape's batch dim must be None or 1");
    return KILN_OK;
}
static kiln_node *dropout_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    if (!f->training || l->rate == 0) return x;
    uint64_t seed = l->seed ? l->seed : kiln_mix64(f->m->seed ^ (0xD0D0ull + (uint64_t)l->index));
    kiln_shape ns = l->cfg->noise;
    if (!ns.rank) return kiln_dropout(f->g, x, l->rate, seed, true);
    /* noise_shape: a mask of that shape (None: the input's dim) dropped out, broadcast over x */
    ns.dim[0] = f->batch;
    for (int i = 1; i < ns.rank; i++) if (!ns.dim[i]) ns.dim[i] = l->out.dim[i - 1];
    kiln_node *ones = kiln_broadcast_to(f->g, kiln_scalar_like(f->g, x, 1.0), ns);
    return kiln_mul(f->g, x, kiln_dropout(f->g, ones, l->rate, seed, true));
}
const nn_layer_def nn_def_dropout = { "Dropout", "dropout", dropout_opts, 1, 1, dropout_shape, NULL, dropout_forward };

/* ---- BatchNormalization (over the last axis) ---- */
static const nn_opt_spec bn_opts[] = {
    { "momentum", NN_T_FLOAT, NN_CFG(momentum), 0, NN_DFLOAT(0.99) },
    { "epsilon", NN_T_FLOAT, NN_CFG(epsilon), 0, NN_DFLOAT(1e-3) },
    { "center", NN_T_BOOL, NN_CFG(center), 0, NN_DBOOL(true) },     /* false: no beta (0) */
    { "scale", NN_T_BOOL, NN_CFG(scale_on), 0, NN_DBOOL(true) },     /* false: no gamma (1) */
    { NULL },
};
static kiln_status bn_shape(kiln_layer *l, const nn_layer_cfg *c) {
    l->momentum = c->momentum;
    l->epsilon = c->epsilon;
    if (!(l->momentum > 0 && l->momentum < 1) || !(l->epsilon > 0)) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "momentum must be in (0, 1) and epsilon > 0");
    l->out = l->in[0]->out;
    return KILN_OK;
}
static void bn_vars(kiln_layer *l, const nn_layer_cfg *c) {
    int64_t ch = l->out.dim[l->out.rank - 1];
    if (c->scale_on) nn_layer_add_var(l, "gamma", KILN_SHAPE(ch), kiln_init_ones(), true, 0);
    if (c->center) nn_layer_add_var(l, "beta", KILN_SHAPE(ch), kiln_init_zeros(), true, 0);
    nn_layer_add_var(l, "moving_mean", KILN_SHAPE(ch), kiln_init_zeros(), false, 0);
    nn_layer_add_var(l, "moving_variance", KILN_SHAPE(ch), kiln_init_ones(), false, 0);
}
/* center / scale false: a constant beta of zeros / gamma of ones in their place */
static kiln_node *bn_param(const nn_fwd *f, kiln_layer *l, const char *name, bool has, double v, kiln_node *like) {
    if (has) return nn_layer_var(f, l, name);
    return kiln_broadcast_to(f->g, kiln_scalar_like(f->g, like, v), like->shape);
}
static kiln_node *bn_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *mm = nn_layer_var(f, l, "moving_mean"), *mv = nn_layer_var(f, l, "moving_variance");
    kiln_node *gamma = bn_param(f, l, "gamma", l->cfg->scale_on, 1.0, mm), *beta = bn_param(f, l, "beta", l->cfg->center, 0.0, mm);
    if (f->training && f->m->copts.sync_batchnorm)   /* statistics of the global batch over the replicas */
        return kiln_sync_batch_norm(f->g, x, gamma, beta, mm, mv, l->momentum, l->epsilon);
    return kiln_batch_norm(f->g, x, gamma, beta, mm, mv, l->momentum, l->epsilon, f->training);
}
const nn_layer_def nn_def_batch_norm = { "BatchNormalization", "batch_normalization", bn_opts, 1, 1, bn_shape, bn_vars, bn_forward };

/* ---- Activation ---- */
static const nn_opt_spec activation_opts[] = {
    { "activation", NN_T_ACTIVATION, NN_CFG(activation), 0, { 0 } },
    { NULL },
};
static kiln_status activation_shape(kiln_layer *l, const nn_layer_cfg *c) {
    if ((unsigned)c->activation >= KILN_ACTIVATION_COUNT) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)c->activation);
    l->act = c->activation;
    l->out = l->in[0]->out;
    return KILN_OK;
}
static kiln_node *activation_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) { return nn_activate(f->g, x, l->act); }
const nn_layer_def nn_def_activation = { "Activation", "activation", activation_opts, 1, 1, activation_shape, NULL, activation_forward };
