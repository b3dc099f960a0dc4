/* 1-D layer types over [batch, steps, channels] (Keras's channels_last): Conv1D, MaxPooling1D,
 * AveragePooling1D, GlobalAveragePooling1D, GlobalMaxPooling1D, UpSampling1D. Each runs Kiln's
 * 2-D ops on an [N, 1, steps, C] view (reshapes alias their input: no copies), so the kernels,
 * gradients and mixed precision are the 2-D layers'. Causal padding pads the left by
 * dilation * (kernel - 1), as Keras does. */
#include <limits.h>
#include <stdio.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

static const char *const pad1d_names[] = { "valid", "same", "causal", NULL };

static kiln_status need_seq(kiln_layer *l) {
    char b[96];
    if (l->in[0]->out.rank == 2) return KILN_OK;
    return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s must be a sequence batch (None, steps, channels)", nn_batched_str(l->in[0]->out, b, sizeof b));
}

/* Output length along the steps; -1 when the window does not fit. */
static int64_t out_len(int64_t in, int k, int s, int d, int mode) {
    int64_t eff = (int64_t)(k - 1) * d + 1;
    if (mode == NN_PAD1D_SAME) return in / s + (in % s != 0);
    if (mode == NN_PAD1D_CAUSAL) in += eff - 1;
    return in < eff ? -1 : (in - eff) / s + 1;
}

static kiln_node *as_image(const nn_fwd *f, kiln_node *x, kiln_shape s) { return kiln_reshape(f->g, x, KILN_SHAPE(f->batch, 1, s.dim[0], s.dim[1])); }
static kiln_node *as_seq(const nn_fwd *f, kiln_node *y, kiln_shape s) { return kiln_reshape(f->g, y, KILN_SHAPE(f->batch, s.dim[0], s.dim[1])); }

/* ---- Conv1D: kernel [kernel_size, in / groups, filters] (Keras's shape) ---- */
static const nn_opt_spec conv1d_opts[] = {
    { "filters", NN_T_INT, NN_CFG(filters), 1, { 0 } },
    { "kernel_size", NN_T_INT1, NN_CFG(kernel), 1, { 0 } },
    { "strides", NN_T_INT1, NN_CFG(strides), 1, NN_DINT(1) },
    { "padding", NN_T_ENUM, NN_CFG(mode), 0, NN_DSTR("valid"), pad1d_names },
    { "dilation_rate", NN_T_INT1, NN_CFG(dilation), 1, NN_DINT(1) },
    { "groups", NN_T_INT, NN_CFG(groups), 1, NN_DINT(1) },
    { "activation", NN_T_ACTIVATION, NN_CFG(activation), 0, NN_DSTR("linear") },
    { "use_bias", NN_T_BOOL, NN_CFG(use_bias), 0, NN_DBOOL(true) },
    { "kernel_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { "bias_initializer", NN_T_INIT, NN_CFG(bias_init), 0, NN_DINIT(KILN_INIT_ZEROS) },
    { "kernel_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },
    { NULL },
};
static kiln_status conv1d_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_seq(l);
    if (st) return st;
    kiln_shape s = l->in[0]->out;
    char b[96];
    l->kh = l->sh = 1;
    l->kw = c->kernel[0];
    l->sw = c->strides[0];
    l->dil = c->dilation[0];
    l->act = c->activation;
    l->use_bias = c->use_bias;
    l->groups = c->groups;
    l->filters = c->filters;
    if (l->kw <= 0 || l->sw <= 0 || l->dil <= 0 || c->filters <= 0)
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "filters (%d), kernel_size (%d), strides (%d) and dilation_rate (%d) must be positive", c->filters, l->kw, l->sw, l->dil);
    if (l->sw > 1 && l->dil > 1) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "strides %d with dilation_rate %d: Keras takes one of them above 1", l->sw, l->dil);
    if ((unsigned)c->mode > NN_PAD1D_CAUSAL) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "padding must be \"valid\", \"same\" or \"causal\"");
    if ((unsigned)l->act >= KILN_ACTIVATION_COUNT) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)l->act);
    if (l->groups <= 0 || s.dim[1] % l->groups || c->filters % l->groups)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "groups=%d must divide the input channels (%lld) and the filters (%d)", l->groups, (long long)s.dim[1], c->filters);
    l->padding = c->mode == NN_PAD1D_SAME ? KILN_SAME : c->mode == NN_PAD1D_CAUSAL ? KILN_EXPLICIT : KILN_VALID;
    int64_t w = out_len(s.dim[0], l->kw, l->sw, l->dil, c->mode);
    if (w <= 0)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "kernel_size %d (dilation_rate %d) does not fit input %s with padding valid; use padding \"same\" or \"causal\"",
                             l->kw, l->dil, nn_batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(w, c->filters);
    return KILN_OK;
}
static void conv1d_vars(kiln_layer *l, const nn_layer_cfg *c) {
    nn_layer_add_var(l, "kernel", KILN_SHAPE(l->kw, l->in[0]->out.dim[1] / l->groups, l->filters), c->kernel_init, true, c->l2);
    if (l->use_bias) nn_layer_add_var(l, "bias", KILN_SHAPE(l->filters), c->bias_init, true, 0);
}
static kiln_node *conv1d_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_shape s = l->in[0]->out;
    kiln_conv_params p = { .stride_h = 1, .stride_w = l->sw, .dilation_h = 1, .dilation_w = l->dil, .padding = l->padding, .groups = l->groups,
                           .pad_left = l->padding == KILN_EXPLICIT ? l->dil * (l->kw - 1) : 0 };
    kiln_node *k = kiln_reshape(f->g, nn_layer_var(f, l, "kernel"), KILN_SHAPE(1, l->kw, s.dim[1] / l->groups, l->filters));
    kiln_node *bias = l->use_bias ? kiln_autocast_weight(f->g, nn_layer_var(f, l, "bias")) : NULL;
    kiln_node *y = kiln_conv2d(f->g, as_image(f, x, s), k, &p);
    if (l->use_bias) y = kiln_bias_add(f->g, y, bias);
    return nn_activate(f->g, as_seq(f, y, l->out), l->act);
}
const nn_layer_def nn_def_conv1d = { "Conv1D", "conv1d", conv1d_opts, 1, 1, conv1d_shape, conv1d_vars, conv1d_forward };

/* ---- MaxPooling1D, AveragePooling1D ---- */
static const nn_opt_spec pool1d_opts[] = {
    { "pool_size", NN_T_INT1, NN_CFG(pool), 1, NN_DINT(2) },
    { "strides", NN_T_INT1, NN_CFG(pool_strides), 1, NN_DNULL },          /* None: pool_size */
    { "padding", NN_T_PADDING, NN_CFG(padding), 0, NN_DSTR("valid") },
    { NULL },
};
static kiln_status pool1d_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_seq(l);
    if (st) return st;
    kiln_shape s = l->in[0]->out;
    char b[96];
    l->kh = l->sh = l->dil = 1;
    l->kw = c->pool[0];
    l->sw = c->pool_strides[0] ? c->pool_strides[0] : l->kw;
    l->padding = c->padding;
    if (l->kw <= 0 || l->sw <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "pool_size and strides must be positive");
    if ((unsigned)l->padding > KILN_SAME) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "padding must be \"valid\" or \"same\"");
    int64_t w = out_len(s.dim[0], l->kw, l->sw, 1, l->padding == KILN_SAME ? NN_PAD1D_SAME : NN_PAD1D_VALID);
    if (w <= 0)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "pool_size %d does not fit input %s with padding valid; use padding \"same\" or a smaller window",
                             l->kw, nn_batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(w, s.dim[1]);
    return KILN_OK;
}
static kiln_node *pool1d_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_pool_params p = { .size_h = 1, .size_w = l->kw, .stride_h = 1, .stride_w = l->sw, .padding = l->padding };
    kiln_node *xi = as_image(f, x, l->in[0]->out);
    return as_seq(f, l->kind == NN_MAXPOOL1D ? kiln_max_pool2d(f->g, xi, &p) : kiln_avg_pool2d(f->g, xi, &p), l->out);
}
const nn_layer_def nn_def_max_pool1d = { "MaxPooling1D", "max_pooling1d", pool1d_opts, 1, 1, pool1d_shape, NULL, pool1d_forward };
const nn_layer_def nn_def_avg_pool1d = { "AveragePooling1D", "average_pooling1d", pool1d_opts, 1, 1, pool1d_shape, NULL, pool1d_forward };

/* ---- GlobalAveragePooling1D, GlobalMaxPooling1D: over the steps ---- */
static const nn_opt_spec gpool1d_opts[] = {
    { "keepdims", NN_T_BOOL, NN_CFG(keepdims), 0, NN_DBOOL(false) },   /* true: (None, 1, channels) */
    { NULL },
};
static kiln_status gpool1d_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_seq(l);
    if (st) return st;
    int64_t ch = l->in[0]->out.dim[1];
    l->out = c->keepdims ? KILN_SHAPE(1, ch) : KILN_SHAPE(ch);
    return KILN_OK;
}
static kiln_node *gpool1d_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    static const int axis[1] = { 1 };
    bool keep = l->cfg->keepdims;
    return l->kind == NN_GAP1D ? kiln_reduce_mean(f->g, x, axis, 1, keep) : kiln_reduce_max(f->g, x, axis, 1, keep);
}
const nn_layer_def nn_def_global_avg_pool1d = { "GlobalAveragePooling1D", "global_average_pooling1d", gpool1d_opts, 1, 1, gpool1d_shape, NULL, gpool1d_forward };
const nn_layer_def nn_def_global_max_pool1d = { "GlobalMaxPooling1D", "global_max_pooling1d", gpool1d_opts, 1, 1, gpool1d_shape, NULL, gpool1d_forward };

/* ---- UpSampling1D: each step repeated `size` times ---- */
static const nn_opt_spec upsample1d_opts[] = {
    { "size", NN_T_INT, NN_CFG(size), 1, NN_DINT(2) },
    { NULL },
};
static kiln_status upsample1d_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_seq(l);
    if (st) return st;
    kiln_shape s = l->in[0]->out;
    int64_t w;
    if (c->size[0] < 1) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "size must be >= 1, got %d", c->size[0]);
    if (nn_layer_mul(l, "output steps", s.dim[0], c->size[0], &w)) return KILN_INVALID_ARGUMENT;
    l->out = KILN_SHAPE(w, s.dim[1]);
    return KILN_OK;
}
/* [B, W, 1, C] broadcast to [B, W, size, C]: its gradient is BroadcastTo's sum. */
static kiln_node *upsample1d_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_shape s = l->in[0]->out;
    kiln_node *y = kiln_reshape(f->g, x, KILN_SHAPE(f->batch, s.dim[0], 1, s.dim[1]));
    y = kiln_broadcast_to(f->g, y, KILN_SHAPE(f->batch, s.dim[0], l->cfg->size[0], s.dim[1]));
    return as_seq(f, y, l->out);
}
const nn_layer_def nn_def_upsampling1d = { "UpSampling1D", "up_sampling1d", upsample1d_opts, 1, 1, upsample1d_shape, NULL, upsample1d_forward };
