/* FLOPs of one example's forward pass per layer (the rules are in include/kiln/nn.h, at
 * kiln_layer_flops). A switch over every layer kind, without a default, so that a new kind in
 * layers.def is a compiler warning here until its cost is written down. */
#include <stdio.h>
#include "nn/nn_layers.h"
#include "core/checked.h"

/* Products and sums over sizes from file input: the first overflow is kept (its operands for the
 * message) and every later step is skipped. */
typedef struct acc { bool over; char op; int64_t a, b; } acc;
static int64_t mul(acc *c, int64_t a, int64_t b) {
    int64_t r;
    if (c->over) return 0;
    if (kiln_mul_i64(a, b, &r)) return r;
    *c = (acc){ true, 'x', a, b };
    return 0;
}
static int64_t add(acc *c, int64_t a, int64_t b) {
    int64_t r;
    if (c->over) return 0;
    if (kiln_add_i64(a, b, &r)) return r;
    *c = (acc){ true, '+', a, b };
    return 0;
}

static int64_t act_flops(const kiln_layer *l) { return l->act == KILN_LINEAR ? 0 : kiln_shape_numel(l->out); }

static int64_t flops(const kiln_layer *l, acc *c) {
    int64_t out = kiln_shape_numel(l->out);
    kiln_shape in = l->n_in ? l->in[0]->out : l->out;
    switch (l->kind) {
    case NN_CONV2D:
    case NN_DWCONV2D: {
        int64_t macs = mul(c, mul(c, mul(c, out, l->kh), l->kw), in.dim[2] / l->groups);
        return add(c, add(c, mul(c, 2, macs), l->use_bias ? out : 0), act_flops(l));
    }
    case NN_DENSE: return add(c, add(c, mul(c, mul(c, mul(c, 2, in.dim[in.rank - 1]), l->units), out / l->units), l->use_bias ? out : 0), act_flops(l));
    case NN_BN: return mul(c, 2, out);
    case NN_ACTIVATION: return act_flops(l);
    case NN_MAXPOOL:
    case NN_AVGPOOL: return mul(c, mul(c, out, l->kh), l->kw);
    case NN_GAP: return kiln_shape_numel(in);
    case NN_ADD: return mul(c, l->n_in - 1, out);
    case NN_INPUT:
    case NN_FLATTEN:
    case NN_RESHAPE:
    case NN_DROPOUT:
    case NN_CONCAT: return 0;
    case NN_EMBEDDING:
    case NN_POS_EMBEDDING: return 0;    /* lookups */
    case NN_LAYER_NORM: return mul(c, 5, out);
    case NN_MHA: {    /* 3 input and 1 output projections (2 d k h per position), q k^T and p v (2 Tq Tk k h each) */
        int64_t T = in.dim[0], D = in.dim[1], hk = mul(c, l->heads, l->key_dim);
        int64_t tk = l->n_in > 1 ? l->in[1]->out.dim[0] : T;
        int64_t proj = mul(c, mul(c, 2, T), mul(c, add(c, mul(c, 3, D), l->out.dim[1]), hk));
        int64_t att = mul(c, mul(c, 4, mul(c, T, tk)), hk);
        return add(c, proj, l->causal ? att / 2 : att);
    }
    case NN_GPT_BLOCK: {   /* projections 2 T (3 + 1 + 8) D^2, causal q k^T and p v 2 T^2 D, 2 norms, GELU */
        int64_t T = in.dim[0], D = in.dim[1];
        int64_t proj = mul(c, mul(c, 24, T), mul(c, D, D)), att = mul(c, mul(c, 2, mul(c, T, T)), D);
        return add(c, add(c, proj, att), mul(c, 14, out));
    }
    case NN_TIED_OUTPUT: return mul(c, mul(c, 2, in.dim[0]), mul(c, in.dim[1], l->units));
    case NN_IMPORTED: return l->ext && l->ext->flops ? l->ext->flops(l->ext_data) : 0;     /* an ONNX graph: its ops' (onnx_model.c) */
    case NN_SEPCONV2D: {            /* depthwise multiply-adds at its output size, then the pointwise product */
        int64_t pix = mul(c, l->out.dim[0], l->out.dim[1]), mid = mul(c, in.dim[2], l->cfg ? l->cfg->depth_multiplier : 1);
        int64_t macs = add(c, mul(c, mul(c, mul(c, pix, mid), l->kh), l->kw), mul(c, mul(c, pix, mid), l->out.dim[2]));
        return add(c, add(c, mul(c, 2, macs), l->use_bias ? out : 0), act_flops(l));
    }
    case NN_GMP: return kiln_shape_numel(in);
    case NN_RESCALING: return mul(c, 2, out);
    case NN_NORMALIZATION: return mul(c, 2, out);
    case NN_LAYER_SCALE:
    case NN_LEAKY_RELU:
    case NN_ELU: return out;
    case NN_PRELU: return mul(c, 4, out);
    case NN_RELU: return l->cfg && l->cfg->alpha != 0 ? mul(c, 4, out) : out;
    case NN_MULTIPLY:
    case NN_SUBTRACT:
    case NN_MAXIMUM:
    case NN_MINIMUM: return mul(c, l->n_in - 1, out);
    case NN_AVERAGE: return mul(c, l->n_in, out);
    case NN_ZEROPAD2D:
    case NN_CROPPING2D:
    case NN_UPSAMPLE2D: return l->cfg && l->cfg->mode == 1 ? mul(c, 5, out) : 0;   /* bilinear: 3 products and 2 sums per output per axis, ~5 */
    case NN_CONV1D: {
        int64_t macs = mul(c, mul(c, out, l->kw), in.dim[1] / l->groups);
        return add(c, add(c, mul(c, 2, macs), l->use_bias ? out : 0), act_flops(l));
    }
    case NN_MAXPOOL1D:
    case NN_AVGPOOL1D: return mul(c, out, l->kw);
    case NN_GAP1D:
    case NN_GMP1D: return kiln_shape_numel(in);
    case NN_UPSAMPLE1D:
    case NN_SPATIAL_DROPOUT2D: return 0;
    case NN_GAUSSIAN_NOISE:
    case NN_GAUSSIAN_DROPOUT: return 0;    /* training-only noise: nothing in inference, as Dropout */
    case NN_CONV2D_TRANSPOSE: {     /* every input value times the kernel window to every filter */
        int64_t macs = mul(c, mul(c, mul(c, kiln_shape_numel(in), l->kh), l->kw), l->filters);
        return add(c, add(c, mul(c, 2, macs), l->use_bias ? out : 0), act_flops(l));
    }
    case NN_SIMPLE_RNN:
    case NN_LSTM:
    case NN_GRU:
    case NN_BIDIRECTIONAL: {   /* per step: 2 (F + U) kU for the products, ~4 kU for bias, gates and state */
        int64_t k = l->cell == 1 ? 4 : l->cell == 2 ? 3 : 1, kU = mul(c, k, l->units);
        int64_t per = add(c, mul(c, mul(c, 2, add(c, in.dim[1], l->units)), kU), mul(c, 4, kU));
        int64_t one = mul(c, in.dim[0], per);
        return l->kind == NN_BIDIRECTIONAL ? add(c, mul(c, 2, one), out) : one;
    }
    case NN_KIND_COUNT: break;
    }
    return 0;
}

kiln_status nn_layer_flops_checked(kiln_layer *l, int64_t *out) {
    acc c = { 0 };
    int64_t f = flops(l, &c);
    if (c.over)
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "FLOPs per example: %lld %c %lld overflows a 64-bit count; the sizes in the model description are too large",
                             (long long)c.a, c.op, (long long)c.b);
    *out = f;
    return KILN_OK;
}

/* Every layer of a model passed nn_layer_flops_checked when it was added; INT64_MAX otherwise. */
int64_t kiln_layer_flops(const kiln_layer *l) {
    if (!l) return 0;
    acc c = { 0 };
    int64_t f = flops(l, &c);
    return c.over ? INT64_MAX : f;
}

int64_t kiln_model_flops(const kiln_model *m) {
    int64_t n = 0;
    for (int i = 0; m && i < m->n_layers; i++) n = kiln_sat_add_i64(n, kiln_layer_flops(m->layers[i]));   /* a total past int64 saturates */
    return n;
}
