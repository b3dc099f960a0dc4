/* Image layer types over NHWC: Conv2DTranspose (the transposed convolution: Kiln's
 * Conv2DBackpropInput op run forward, kiln_conv2d_transpose) and SpatialDropout2D (whole channels
 * dropped). */
#include <stdio.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

static kiln_status need_image(kiln_layer *l) {
    char b[96];
    if (l->in[0]->out.rank == 3) return KILN_OK;
    return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s must be an image batch (None, height, width, channels)", nn_batched_str(l->in[0]->out, b, sizeof b));
}

/* ---- Conv2DTranspose: kernel [kh, kw, filters, in] (Keras's shape: the forward conv's HWIO) ---- */
static const nn_opt_spec deconv_opts[] = {
    { "filters", NN_T_INT, NN_CFG(filters), 1, { 0 } },
    { "kernel_size", NN_T_INT2, NN_CFG(kernel), 1, { 0 } },
    { "strides", NN_T_INT2, NN_CFG(strides), 1, NN_DINT(1) },
    { "padding", NN_T_PADDING, NN_CFG(padding), 0, NN_DSTR("valid") },
    { "dilation_rate", NN_T_INT2, NN_CFG(dilation), 1, NN_DINT(1) },
    { "output_padding", NN_T_INT2, NN_CFG(out_pad), 0, NN_DNULL },    /* None (-1): Keras's default size */
    { "activation", NN_T_ACTIVATION, NN_CFG(activation), 0, NN_DSTR("linear") },
    { "use_bias", NN_T_BOOL, NN_CFG(use_bias), 0, NN_DBOOL(true) },
    { "kernel_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { "bias_initializer", NN_T_INIT, NN_CFG(bias_init), 0, NN_DINIT(KILN_INIT_ZEROS) },
    { "kernel_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },
    { NULL },
};
/* Keras's deconv_output_length: with output_padding None valid in * s + max(k - s, 0), same in * s;
 * with output_padding p (each < stride) (in - 1) * s + k - 2 * pad + p, pad 0 (valid) or k / 2 (same).
 * The op then takes the forward conv's padding for that output size (TF's conv2d_transpose). */
static kiln_status deconv_len(kiln_layer *l, const char *what, int64_t in, int k, int s, int op, int64_t *out) {
    if (op < 0) {
        if (nn_layer_mul(l, what, in, s, out)) return KILN_INVALID_ARGUMENT;
        if (l->padding == KILN_VALID) *out += k > s ? k - s : 0;
        return KILN_OK;
    }
    if (op >= s) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "output_padding %d of the %s must be less than its stride %d (as Keras requires)", op, what, s);
    if (nn_layer_mul(l, what, in - 1, s, out)) return KILN_INVALID_ARGUMENT;
    *out += k - (l->padding == KILN_SAME ? 2 * (k / 2) : 0) + op;
    /* the forward conv of that size must give back `in` rows: same ceil(out / s), valid floor((out - k) / s) + 1 */
    int64_t back = l->padding == KILN_SAME ? (*out + s - 1) / s : *out >= k ? (*out - k) / s + 1 : 0;
    if (*out < 1 || back != in)
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "output_padding %d with kernel_size %d, stride %d and padding \"%s\" gives an %s of %lld that a convolution does not map back to %lld (TensorFlow refuses it too)",
                             op, k, s, l->padding == KILN_SAME ? "same" : "valid", what, (long long)*out, (long long)in);
    return KILN_OK;
}
static kiln_status deconv_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l);
    if (st) return st;
    kiln_shape s = l->in[0]->out;
    l->kh = c->kernel[0];
    l->kw = c->kernel[1];
    l->sh = c->strides[0];
    l->sw = c->strides[1];
    l->dil = 1;
    l->groups = 1;
    l->padding = c->padding;
    l->act = c->activation;
    l->use_bias = c->use_bias;
    l->filters = c->filters;
    if (l->kh <= 0 || l->kw <= 0 || l->sh <= 0 || l->sw <= 0 || c->filters <= 0)
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "filters (%d), kernel_size (%d, %d) and strides (%d, %d) must be positive", c->filters, l->kh, l->kw, l->sh, l->sw);
    if (c->dilation[0] != 1 || c->dilation[1] != 1)
        return nn_layer_fail(l, KILN_UNSUPPORTED, "dilation_rate (%d, %d): Kiln's Conv2DTranspose takes dilation_rate 1", c->dilation[0], c->dilation[1]);
    if ((unsigned)l->padding > KILN_SAME) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "padding must be \"valid\" or \"same\"");
    if ((unsigned)l->act >= KILN_ACTIVATION_COUNT) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)l->act);
    int64_t h, w;
    if (deconv_len(l, "output height", s.dim[0], l->kh, l->sh, c->out_pad[0], &h) || deconv_len(l, "output width", s.dim[1], l->kw, l->sw, c->out_pad[1], &w))
        return KILN_INVALID_ARGUMENT;
    l->out = KILN_SHAPE(h, w, c->filters);
    return KILN_OK;
}
static void deconv_vars(kiln_layer *l, const nn_layer_cfg *c) {
    nn_layer_add_var(l, "kernel", KILN_SHAPE(l->kh, l->kw, l->filters, l->in[0]->out.dim[2]), c->kernel_init, true, c->l2);
    if (l->use_bias) nn_layer_add_var(l, "bias", KILN_SHAPE(l->filters), c->bias_init, true, 0);
}
static kiln_node *deconv_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_conv_params p = { .stride_h = l->sh, .stride_w = l->sw, .padding = l->padding };
    kiln_node *bias = l->use_bias ? kiln_autocast_weight(f->g, nn_layer_var(f, l, "bias")) : NULL;
    kiln_node *y = kiln_conv2d_transpose(f->g, x, nn_layer_var(f, l, "kernel"), &p, l->out.dim[0], l->out.dim[1]);
    if (l->use_bias) y = kiln_bias_add(f->g, y, bias);
    return nn_activate(f->g, y, l->act);
}
const nn_layer_def nn_def_conv2d_transpose = { "Conv2DTranspose", "conv2d_transpose", deconv_opts, 1, 1, deconv_shape, deconv_vars, deconv_forward };

/* ---- SpatialDropout2D: one draw per (example, channel), as Keras's noise shape (batch, 1, 1, channels) ---- */
static const nn_opt_spec sdrop_opts[] = {
    { "rate", NN_T_FLOAT, NN_CFG(rate), 0, { 0 } },
    { "seed", NN_T_SEED, NN_CFG(seed), 0, NN_DNULL },      /* None: from the model seed */
    { NULL },
};
static kiln_status sdrop_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = need_image(l);
    if (st) return st;
    if (!(c->rate >= 0 && c->rate < 1)) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "rate %g must be in [0, 1)", c->rate);
    l->rate = c->rate;
    l->seed = c->seed;
    l->out = l->in[0]->out;
    return KILN_OK;
}
static kiln_node *sdrop_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    if (!f->training || l->rate == 0) return x;          /* inference: the identity */
    uint64_t seed = l->seed ? l->seed : kiln_mix64(f->m->seed ^ (0xD0D0ull + (uint64_t)l->index));
    kiln_node *ones = kiln_broadcast_to(f->g, kiln_scalar_like(f->g, x, 1.0), KILN_SHAPE(f->batch, 1, 1, l->out.dim[2]));
    return kiln_mul(f->g, x, kiln_dropout(f->g, ones, l->rate, seed, true));
}
const nn_layer_def nn_def_spatial_dropout2d = { "SpatialDropout2D", "spatial_dropout2d", sdrop_opts, 1, 1, sdrop_shape, NULL, sdrop_forward };
