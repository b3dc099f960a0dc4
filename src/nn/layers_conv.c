/* Windowed layer types over NHWC images: Conv2D, DepthwiseConv2D, MaxPooling2D,
 * AveragePooling2D, GlobalAveragePooling2D (schema, shape, variables, forward). */
#include <limits.h>
#include <stdio.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

/* Output size of a window op along one axis; -1 when the window does not fit. */
static int64_t out_dim(int64_t in, int k, int s, int d, kiln_padding p) {
    if (p == KILN_SAME) return in / s + (in % s != 0);     /* ceil(in / s); in + s - 1 could overflow */
    int64_t eff = (int64_t)(k - 1) * d + 1;
    if (in < eff) return -1;
    return (in - eff) / s + 1;
}

static kiln_status need_image(kiln_layer *l, const char *hint) {
    char b[96];
    if (l->in[0]->out.rank == 3) return KILN_OK;
    return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s must be an image batch (None, height, width, channels)%s",
                         nn_batched_str(l->in[0]->out, b, sizeof b), hint);
}

/* ---- Conv2D, DepthwiseConv2D ---- */
#define CONV_COMMON_OPTS \
    { "kernel_size", NN_T_INT2, NN_CFG(kernel), 1, { 0 } }, \
    { "strides", NN_T_INT2, NN_CFG(strides), 1, NN_DINT(1) }, \
    { "padding", NN_T_PADDING, NN_CFG(padding), 0, NN_DSTR("valid") }, \
    { "dilation_rate", NN_T_INT2, NN_CFG(dilation), 1, NN_DINT(1) }, \
    { "activation", NN_T_ACTIVATION, NN_CFG(activation), 0, NN_DSTR("linear") }, \
    { "use_bias", NN_T_BOOL, NN_CFG(use_bias), 0, NN_DBOOL(true) }, \
    { "bias_initializer", NN_T_INIT, NN_CFG(bias_init), 0, NN_DINIT(KILN_INIT_ZEROS) }
static const nn_opt_spec conv_opts[] = {
    { "filters", NN_T_INT, NN_CFG(filters), 1, { 0 } },
    CONV_COMMON_OPTS,
    { "groups", NN_T_INT, NN_CFG(groups), 1, NN_DINT(1) },
    { "kernel_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { "kernel_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },     /* the L2 factor */
    { NULL },
};
static const nn_opt_spec dwconv_opts[] = {
    CONV_COMMON_OPTS,
    { "depth_multiplier", NN_T_INT, NN_CFG(depth_multiplier), 1, NN_DINT(1) },
    { "depthwise_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { "depthwise_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },
    { NULL },
};

static kiln_status conv_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l, "; add a Reshape layer (kiln_layer_reshape) before it");
    if (st) return st;
    kiln_shape s = l->in[0]->out;
    char b[96];
    l->kh = c->kernel[0];
    l->kw = c->kernel[1];
    l->sh = c->strides[0];
    l->sw = c->strides[1];
    l->dil = c->dilation[0];
    l->padding = c->padding;
    l->act = c->activation;
    l->use_bias = c->use_bias;
    if (l->kh <= 0 || l->kw <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "set .kernel (e.g. 3) or .kernel_h/.kernel_w (got %dx%d)", l->kh, l->kw);
    if (l->sh <= 0 || l->sw <= 0 || l->dil <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "strides and dilation must be positive");
    if (c->dilation[1] != c->dilation[0])
        return nn_layer_fail(l, KILN_UNSUPPORTED, "dilation_rate (%d, %d): one rate for both axes is supported", c->dilation[0], c->dilation[1]);
    if ((unsigned)l->padding > KILN_SAME) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "padding must be KILN_VALID or KILN_SAME");
    if ((unsigned)l->act >= KILN_ACTIVATION_COUNT) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)l->act);
    int64_t cin = s.dim[2], cout;
    if (l->kind == NN_DWCONV2D) {
        if (c->depth_multiplier <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "depth_multiplier must be positive");
        if (nn_layer_mul(l, "output channels (input channels x depth_multiplier)", cin, c->depth_multiplier, &cout)) return KILN_INVALID_ARGUMENT;
        if (cout > INT_MAX)
            return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "%lld input channels x depth_multiplier %d = %lld output channels; at most %d",
                                 (long long)cin, c->depth_multiplier, (long long)cout, INT_MAX);
        l->groups = (int)cin;
        l->filters = (int)cout;
    } else {
        l->groups = c->groups;
        l->filters = c->filters;
        if (c->filters <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "set .filters to the number of output channels (got %d)", c->filters);
        if (l->groups <= 0 || cin % l->groups || c->filters % l->groups)
            return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "groups=%d must divide the input channels (%lld) and the filters (%d)", l->groups, (long long)cin, c->filters);
        cout = c->filters;
    }
    int64_t oh = out_dim(s.dim[0], l->kh, l->sh, l->dil, l->padding), ow = out_dim(s.dim[1], l->kw, l->sw, l->dil, l->padding);
    if (oh <= 0 || ow <= 0)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "kernel %dx%d (dilation %d) does not fit input %s with padding valid; use .padding = KILN_SAME or a smaller kernel",
                             l->kh, l->kw, l->dil, nn_batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(oh, ow, cout);
    return KILN_OK;
}
static void conv_vars(kiln_layer *l, const nn_layer_cfg *c) {
    int64_t cin = l->in[0]->out.dim[2], cout = l->out.dim[2];
    nn_layer_add_var(l, l->kind == NN_DWCONV2D ? "depthwise_kernel" : "kernel", KILN_SHAPE(l->kh, l->kw, cin / l->groups, cout), c->kernel_init, true, c->l2);
    if (l->use_bias) nn_layer_add_var(l, "bias", KILN_SHAPE(cout), c->bias_init, true, 0);
}
static kiln_node *conv_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_conv_params p = { .stride_h = l->sh, .stride_w = l->sw, .dilation_h = l->dil, .dilation_w = l->dil,
                           .padding = l->padding, .groups = l->groups };
    kiln_node *bias = l->use_bias ? kiln_autocast_weight(f->g, nn_layer_var(f, l, "bias")) : NULL;   /* cast first: fusable */
    kiln_node *y = kiln_conv2d(f->g, x, nn_layer_var(f, l, l->kind == NN_DWCONV2D ? "depthwise_kernel" : "kernel"), &p);
    if (l->use_bias) y = kiln_bias_add(f->g, y, bias);
    return nn_activate(f->g, y, l->act);
}
const nn_layer_def nn_def_conv2d = { "Conv2D", "conv2d", conv_opts, 1, 1, conv_shape, conv_vars, conv_forward };
const nn_layer_def nn_def_depthwise_conv2d = { "DepthwiseConv2D", "depthwise_conv2d", dwconv_opts, 1, 1, conv_shape, conv_vars, conv_forward };

/* ---- MaxPooling2D, AveragePooling2D ---- */
static const nn_opt_spec pool_opts[] = {
    { "pool_size", NN_T_INT2, NN_CFG(pool), 1, NN_DINT(2) },
    { "strides", NN_T_INT2, NN_CFG(pool_strides), 1, NN_DNULL },          /* None: pool_size */
    { "padding", NN_T_PADDING, NN_CFG(padding), 0, NN_DSTR("valid") },
    { NULL },
};
static kiln_status pool_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l, "");
    if (st) return st;
    kiln_shape s = l->in[0]->out;
    char b[96];
    l->kh = c->pool[0];
    l->kw = c->pool[1];
    l->sh = c->pool_strides[0] ? c->pool_strides[0] : l->kh;
    l->sw = c->pool_strides[1] ? c->pool_strides[1] : l->kw;
    l->padding = c->padding;
    l->dil = 1;
    if (l->kh <= 0 || l->kw <= 0 || l->sh <= 0 || l->sw <= 0) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "window and strides must be positive");
    if ((unsigned)l->padding > KILN_SAME) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "padding must be KILN_VALID or KILN_SAME");
    int64_t oh = out_dim(s.dim[0], l->kh, l->sh, 1, l->padding), ow = out_dim(s.dim[1], l->kw, l->sw, 1, l->padding);
    if (oh <= 0 || ow <= 0)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "window %dx%d does not fit input %s with padding valid; use .padding = KILN_SAME or a smaller window",
                             l->kh, l->kw, nn_batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(oh, ow, s.dim[2]);
    return KILN_OK;
}
static kiln_node *pool_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_pool_params p = { .size_h = l->kh, .size_w = l->kw, .stride_h = l->sh, .stride_w = l->sw, .padding = l->padding };
    return l->kind == NN_MAXPOOL ? kiln_max_pool2d(f->g, x, &p) : kiln_avg_pool2d(f->g, x, &p);
}
const nn_layer_def nn_def_max_pool2d = { "MaxPooling2D", "max_pooling2d", pool_opts, 1, 1, pool_shape, NULL, pool_forward };
const nn_layer_def nn_def_avg_pool2d = { "AveragePooling2D", "average_pooling2d", pool_opts, 1, 1, pool_shape, NULL, pool_forward };

/* ---- GlobalAveragePooling2D ---- */
static const nn_opt_spec gap_opts[] = {
    { "keepdims", NN_T_BOOL, NN_CFG(keepdims), 0, NN_DBOOL(false) },   /* true: (None, 1, 1, channels) */
    { NULL },
};
static kiln_status gap_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l, "");
    if (st) return st;
    int64_t ch = l->in[0]->out.dim[2];
    l->out = c->keepdims ? KILN_SHAPE(1, 1, ch) : KILN_SHAPE(ch);
    return KILN_OK;
}
static kiln_node *gap_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *y = kiln_global_avg_pool2d(f->g, x);
    return l->out.rank == 3 ? kiln_reshape(f->g, y, KILN_SHAPE(f->batch, 1, 1, l->out.dim[2])) : y;
}
const nn_layer_def nn_def_global_avg_pool2d = { "GlobalAveragePooling2D", "global_average_pooling2d", gap_opts, 1, 1, gap_shape, NULL, gap_forward };
