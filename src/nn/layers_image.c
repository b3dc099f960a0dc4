/* Image layer types without weights or with Keras's separable kernels: ZeroPadding2D, Cropping2D,
 * UpSampling2D (nearest, bilinear), GlobalMaxPooling2D, SeparableConv2D (depthwise, then a 1x1 pointwise
 * convolution). NHWC; each reads its resolved options from l->cfg in its forward. */
#include <limits.h>
#include <stdio.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

static kiln_status need_image(kiln_layer *l) {
    char b[96];
    if (l->in[0]->out.rank == 3) return KILN_OK;
    return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s must be an image batch (None, height, width, channels)", nn_batched_str(l->in[0]->out, b, sizeof b));
}

/* ---- ZeroPadding2D, Cropping2D: padding / cropping ((top, bottom), (left, right)) ---- */
static const nn_opt_spec zpad_opts[] = {
    { "padding", NN_T_PAD4, NN_CFG(pads), 0, NN_DINT(1) },
    { NULL },
};
static const nn_opt_spec crop_opts[] = {
    { "cropping", NN_T_PAD4, NN_CFG(pads), 0, NN_DINT(0) },
    { NULL },
};
static kiln_status pad_crop_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l);
    if (st) return st;
    kiln_shape s = l->in[0]->out;
    const int *q = c->pads;
    int sign = l->kind == NN_ZEROPAD2D ? 1 : -1;
    int64_t h = s.dim[0] + sign * ((int64_t)q[0] + q[1]), w = s.dim[1] + sign * ((int64_t)q[2] + q[3]);
    char b[96];
    if (h < 1 || w < 1)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "cropping ((%d, %d), (%d, %d)) leaves nothing of input %s", q[0], q[1], q[2], q[3], nn_batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(h, w, s.dim[2]);
    return KILN_OK;
}
static kiln_node *zpad_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    const int *q = l->cfg->pads;
    int64_t pads[8] = { 0, 0, q[0], q[1], q[2], q[3], 0, 0 };
    return kiln_pad(f->g, x, pads, 0.0);
}
static kiln_node *crop_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    const int *q = l->cfg->pads;
    int64_t begin[4] = { 0, q[0], q[2], 0 }, size[4] = { -1, l->out.dim[0], l->out.dim[1], -1 };
    return kiln_slice(f->g, x, begin, size);
}
const nn_layer_def nn_def_zero_padding2d = { "ZeroPadding2D", "zero_padding2d", zpad_opts, 1, 1, pad_crop_shape, NULL, zpad_forward };
const nn_layer_def nn_def_cropping2d = { "Cropping2D", "cropping2d", crop_opts, 1, 1, pad_crop_shape, NULL, crop_forward };

/* ---- UpSampling2D: nearest (each pixel repeated size_h x size_w times) or bilinear ---- */
static const char *const interp_names[] = { "nearest", "bilinear", NULL };
static const nn_opt_spec upsample_opts[] = {
    { "size", NN_T_INT2, NN_CFG(size), 1, NN_DINT(2) },
    { "interpolation", NN_T_ENUM, NN_CFG(mode), 0, NN_DSTR("nearest"), interp_names },
    { NULL },
};
static kiln_status upsample_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l);
    if (st) return st;
    kiln_shape s = l->in[0]->out;
    int64_t h, w;
    if (nn_layer_mul(l, "output height", s.dim[0], c->size[0], &h) || nn_layer_mul(l, "output width", s.dim[1], c->size[1], &w)) return KILN_INVALID_ARGUMENT;
    l->out = KILN_SHAPE(h, w, s.dim[2]);
    return KILN_OK;
}
/* Bilinear along one axis (1: height, 2: width) by an integer factor k, as tf.image.resize
 * (half-pixel centres, edges clamped): output p * k + r samples input p + o_r, o_r = (r + 0.5) / k
 * - 0.5 in (-0.5, 0.5), so it is a_r x[p - 1] + b_r x[p] + c_r x[p + 1] with the neighbours
 * clamped at the edges. Built from Slice, Concat, Mul and Add, whose gradients Kiln has. */
static kiln_node *lerp_axis(const nn_fwd *f, kiln_node *x, int axis, int k) {
    if (k == 1 || !x) return x;
    kiln_graph *g = f->g;
    kiln_shape s = x->shape;
    int64_t n = s.dim[axis];
    kiln_node *prev = x, *next = x;
    if (n > 1) {
        int64_t b0[4] = { 0 }, sz[4] = { -1, -1, -1, -1 };
        sz[axis] = 1;
        kiln_node *first = kiln_slice(g, x, b0, sz);
        b0[axis] = n - 1;
        kiln_node *last = kiln_slice(g, x, b0, sz);
        sz[axis] = n - 1;
        b0[axis] = 0;
        kiln_node *head = kiln_slice(g, x, b0, sz);
        b0[axis] = 1;
        kiln_node *tail = kiln_slice(g, x, b0, sz);
        prev = kiln_concat(g, (kiln_node *[]){ first, head }, 2, axis);
        next = kiln_concat(g, (kiln_node *[]){ tail, last }, 2, axis);
    }
    kiln_shape ex = { .rank = 5 }, ws = { .rank = 5 };     /* a unit axis after `axis` for the k phases */
    for (int i = 0, j = 0; i < 5; i++) {
        ex.dim[i] = i == axis + 1 ? 1 : s.dim[j++];
        ws.dim[i] = i == axis + 1 ? k : 1;
    }
    kiln_node *t[3] = { prev, x, next }, *y = NULL;
    for (int q = 0; q < 3; q++) {
        kiln_tensor *w = kiln_tensor_new(KILN_F32, ws);
        if (!w) { kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "UpSampling2D: out of host memory"); return NULL; }
        for (int r = 0; r < k; r++) {
            double o = (r + 0.5) / k - 0.5;
            ((float *)w->data)[r] = (float)(q == 0 ? (o < 0 ? -o : 0) : q == 1 ? 1 - (o < 0 ? -o : o) : (o > 0 ? o : 0));
        }
        kiln_node *c = kiln_constant(g, w);
        kiln_tensor_free(w);
        if (c && c->dtype != x->dtype) c = kiln_cast(g, c, x->dtype);
        kiln_node *term = kiln_mul(g, kiln_reshape(g, t[q], ex), c);
        y = y ? kiln_add(g, y, term) : term;
    }
    s.dim[axis] = n * k;
    return kiln_reshape(g, y, s);
}

/* Nearest: [B, H, 1, W, 1, C] broadcast to [B, H, sh, W, sw, C]: its gradient is BroadcastTo's sum. */
static kiln_node *upsample_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_shape s = l->in[0]->out;
    if (l->cfg->mode == 1) return lerp_axis(f, lerp_axis(f, x, 1, l->cfg->size[0]), 2, l->cfg->size[1]);
    int sh = l->cfg->size[0], sw = l->cfg->size[1];
    kiln_node *y = kiln_reshape(f->g, x, KILN_SHAPE(f->batch, s.dim[0], 1, s.dim[1], 1, s.dim[2]));
    y = kiln_broadcast_to(f->g, y, KILN_SHAPE(f->batch, s.dim[0], sh, s.dim[1], sw, s.dim[2]));
    return kiln_reshape(f->g, y, KILN_SHAPE(f->batch, l->out.dim[0], l->out.dim[1], l->out.dim[2]));
}
const nn_layer_def nn_def_upsampling2d = { "UpSampling2D", "up_sampling2d", upsample_opts, 1, 1, upsample_shape, NULL, upsample_forward };

/* ---- GlobalMaxPooling2D ---- */
static const nn_opt_spec gmp_opts[] = {
    { "keepdims", NN_T_BOOL, NN_CFG(keepdims), 0, NN_DBOOL(false) },
    { NULL },
};
static kiln_status gmp_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l);
    if (st) return st;
    int64_t ch = l->in[0]->out.dim[2];
    l->out = c->keepdims ? KILN_SHAPE(1, 1, ch) : KILN_SHAPE(ch);
    return KILN_OK;
}
static kiln_node *gmp_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    static const int axes[2] = { 1, 2 };
    return kiln_reduce_max(f->g, x, axes, 2, l->cfg->keepdims);
}
const nn_layer_def nn_def_global_max_pool2d = { "GlobalMaxPooling2D", "global_max_pooling2d", gmp_opts, 1, 1, gmp_shape, NULL, gmp_forward };

/* ---- SeparableConv2D: depthwise kernel [kh, kw, in, depth_multiplier] (Keras's shape), then a
 * pointwise kernel [1, 1, in * depth_multiplier, filters]; strides, padding and dilation are the
 * depthwise step's, as in Keras ---- */
static const nn_opt_spec sep_opts[] = {
    { "filters", NN_T_INT, NN_CFG(filters), 1, { 0 } },
    { "kernel_size", NN_T_INT2, NN_CFG(kernel), 1, { 0 } },
    { "strides", NN_T_INT2, NN_CFG(strides), 1, NN_DINT(1) },
    { "padding", NN_T_PADDING, NN_CFG(padding), 0, NN_DSTR("valid") },
    { "dilation_rate", NN_T_INT2, NN_CFG(dilation), 1, NN_DINT(1) },
    { "depth_multiplier", NN_T_INT, NN_CFG(depth_multiplier), 1, NN_DINT(1) },
    { "activation", NN_T_ACTIVATION, NN_CFG(activation), 0, NN_DSTR("linear") },
    { "use_bias", NN_T_BOOL, NN_CFG(use_bias), 0, NN_DBOOL(true) },
    { "depthwise_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { "pointwise_initializer", NN_T_INIT, NN_CFG(pointwise_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { "bias_initializer", NN_T_INIT, NN_CFG(bias_init), 0, NN_DINIT(KILN_INIT_ZEROS) },
    { "depthwise_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },
    { "pointwise_regularizer", NN_T_FLOAT, NN_CFG(pointwise_l2), 0, NN_DFLOAT(0) },
    { NULL },
};
static int64_t sep_out_dim(int64_t in, int k, int s, int d, kiln_padding p) {
    if (p == KILN_SAME) return in / s + (in % s != 0);
    int64_t eff = (int64_t)(k - 1) * d + 1;
    return in < eff ? -1 : (in - eff) / s + 1;
}
static kiln_status sep_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l);
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
    l->filters = c->filters;
    if (c->dilation[1] != c->dilation[0])
        return nn_layer_fail(l, KILN_UNSUPPORTED, "dilation_rate (%d, %d): one rate for both axes is supported", c->dilation[0], c->dilation[1]);
    if ((unsigned)l->padding > KILN_SAME) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "padding must be \"valid\" or \"same\"");
    if ((unsigned)l->act >= KILN_ACTIVATION_COUNT) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)l->act);
    int64_t mid;
    if (nn_layer_mul(l, "depthwise channels (input channels x depth_multiplier)", s.dim[2], c->depth_multiplier, &mid)) return KILN_INVALID_ARGUMENT;
    if (mid > INT_MAX) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "%lld depthwise channels; at most %d", (long long)mid, INT_MAX);
    l->groups = (int)s.dim[2];
    int64_t oh = sep_out_dim(s.dim[0], l->kh, l->sh, l->dil, l->padding), ow = sep_out_dim(s.dim[1], l->kw, l->sw, l->dil, l->padding);
    if (oh <= 0 || ow <= 0)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "kernel %dx%d (dilation %d) does not fit input %s with padding valid", l->kh, l->kw, l->dil,
                             nn_batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(oh, ow, c->filters);
    return KILN_OK;
}
static void sep_vars(kiln_layer *l, const nn_layer_cfg *c) {
    int64_t cin = l->in[0]->out.dim[2], dm = c->depth_multiplier;
    nn_layer_add_var(l, "depthwise_kernel", KILN_SHAPE(l->kh, l->kw, cin, dm), c->kernel_init, true, c->l2);
    nn_layer_add_var(l, "pointwise_kernel", KILN_SHAPE(1, 1, cin * dm, l->filters), c->pointwise_init, true, c->pointwise_l2);
    if (l->use_bias) nn_layer_add_var(l, "bias", KILN_SHAPE(l->filters), c->bias_init, true, 0);
}
static kiln_node *sep_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    int64_t cin = l->in[0]->out.dim[2], dm = l->cfg->depth_multiplier;
    kiln_conv_params dw = { .stride_h = l->sh, .stride_w = l->sw, .dilation_h = l->dil, .dilation_w = l->dil, .padding = l->padding, .groups = l->groups };
    kiln_conv_params pw = { .padding = KILN_VALID };
    /* Keras's [kh, kw, in, dm] is, element for element, the grouped conv's HWIO [kh, kw, 1, in * dm] */
    kiln_node *k = kiln_reshape(f->g, nn_layer_var(f, l, "depthwise_kernel"), KILN_SHAPE(l->kh, l->kw, 1, cin * dm));
    kiln_node *bias = l->use_bias ? kiln_autocast_weight(f->g, nn_layer_var(f, l, "bias")) : NULL;
    kiln_node *y = kiln_conv2d(f->g, kiln_conv2d(f->g, x, k, &dw), nn_layer_var(f, l, "pointwise_kernel"), &pw);
    if (l->use_bias) y = kiln_bias_add(f->g, y, bias);
    return nn_activate(f->g, y, l->act);
}
const nn_layer_def nn_def_separable_conv2d = { "SeparableConv2D", "separable_conv2d", sep_opts, 1, 1, sep_shape, sep_vars, sep_forward };
