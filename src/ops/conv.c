/* Conv2D (NHWC x, HWIO kernel [kh, kw, Cin/groups, Cout]) and its two backprop ops.
 * Padding is resolved into attrs (pt, pb, pl, pr) by the builder; the backprops carry the same
 * attrs plus attrs.shape (the forward input's or kernel's shape), so every kernel reads one set
 * of numbers. */
#include <stdio.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

/* TensorFlow SAME: out = ceil(in / stride); the padding total is split with the extra cell after. */
static void same_pads(int64_t in, int k_eff, int stride, int *before, int *after) {
    int64_t out = (in + stride - 1) / stride;
    int64_t total = (out - 1) * stride + k_eff - in;
    if (total < 0) total = 0;
    *before = (int)(total / 2);
    *after = (int)(total - total / 2);
}

/* Validates x and w shapes against attrs (the common part of all three ops) and writes the
 * forward output shape. Fills attrs.kh/kw from the kernel shape. */
static kiln_status conv_shapes(kiln_node *n, kiln_shape xs, kiln_shape ws, kiln_shape *ys) {
    kiln_attrs *at = &n->attrs;
    char sx[96], sw[96];
    kiln_shape_str(xs, sx, sizeof sx);
    kiln_shape_str(ws, sw, sizeof sw);
    if (xs.rank != 4)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x is %s: expected NHWC (rank 4)", sx);
    if (ws.rank != 4)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "kernel is %s: expected HWIO [kh, kw, in/groups, out] (rank 4)", sw);
    if (at->sh < 1 || at->sw < 1 || at->dh < 1 || at->dw < 1 || at->groups < 1)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "strides (%d, %d), dilations (%d, %d) and groups %d must be >= 1",
                               at->sh, at->sw, at->dh, at->dw, at->groups);
    if (at->pt < 0 || at->pb < 0 || at->pl < 0 || at->pr < 0)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "padding (top %d, bottom %d, left %d, right %d) must be >= 0",
                               at->pt, at->pb, at->pl, at->pr);
    int64_t C = xs.dim[3], G = at->groups, cout = ws.dim[3];
    if (C % G != 0)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x is %s, kernel is %s: %lld input channels do not split into %lld groups",
                               sx, sw, (long long)C, (long long)G);
    if (ws.dim[2] * G != C)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH,
                               "x is %s, kernel is %s: input has %lld channels, kernel expects %lld (%lld per group x %lld groups)",
                               sx, sw, (long long)C, (long long)(ws.dim[2] * G), (long long)ws.dim[2], (long long)G);
    if (cout % G != 0)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "kernel is %s: %lld output channels do not split into %lld groups",
                               sw, (long long)cout, (long long)G);
    at->kh = (int)ws.dim[0];
    at->kw = (int)ws.dim[1];
    int64_t ekh = (int64_t)(at->kh - 1) * at->dh + 1, ekw = (int64_t)(at->kw - 1) * at->dw + 1;
    int64_t ph = xs.dim[1] + at->pt + at->pb, pw = xs.dim[2] + at->pl + at->pr;
    if (ph < ekh || pw < ekw)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH,
                               "x is %s, kernel is %s: padded input %lldx%lld is smaller than the (dilated) kernel %lldx%lld",
                               sx, sw, (long long)ph, (long long)pw, (long long)ekh, (long long)ekw);
    *ys = KILN_SHAPE(xs.dim[0], (ph - ekh) / at->sh + 1, (pw - ekw) / at->sw + 1, cout);
    return KILN_OK;
}

static kiln_status same_dtype(kiln_node *n, const char *na, const char *nb) {
    kiln_dtype a = n->in[0]->dtype, b = n->in[1]->dtype;
    if (a != b)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "%s is %s, %s is %s: dtypes must match",
                               na, kiln_dtype_name(a), nb, kiln_dtype_name(b));
    if (a == KILN_BOOL) return kiln_node_error(n, KILN_DTYPE_MISMATCH, "inputs are bool: a numeric dtype is needed");
    if (n->attrs.acc_f32 && a != KILN_BF16 && a != KILN_F16)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "inputs are %s: f32 accumulation (mixed precision) takes bf16 or f16",
                               kiln_dtype_name(a));
    return KILN_OK;
}

static kiln_status conv2d_infer(kiln_node *n) {
    kiln_shape ys;
    kiln_status st = conv_shapes(n, n->in[0]->shape, n->in[1]->shape, &ys);
    if (!st) st = same_dtype(n, "x", "kernel");
    if (st) return st;
    n->dtype = n->attrs.acc_f32 ? KILN_F32 : n->in[0]->dtype;
    n->shape = ys;
    return KILN_OK;
}

/* dy must be what the forward op would have produced from (x, w). */
static kiln_status check_dy(kiln_node *n, kiln_shape ys, kiln_shape dys) {
    if (kiln_shape_equal(ys, dys)) return KILN_OK;
    char a[96], b[96];
    return kiln_node_error(n, KILN_SHAPE_MISMATCH, "dy is %s, the forward convolution gives %s",
                           kiln_shape_str(dys, a, sizeof a), kiln_shape_str(ys, b, sizeof b));
}

static kiln_status conv2d_bwd_input_infer(kiln_node *n) {     /* (w, dy), attrs.shape = x's */
    kiln_shape ys;
    kiln_status st = conv_shapes(n, n->attrs.shape, n->in[0]->shape, &ys);
    if (!st) st = check_dy(n, ys, n->in[1]->shape);
    if (!st) st = same_dtype(n, "kernel", "dy");
    if (st) return st;
    n->dtype = n->attrs.acc_f32 ? KILN_F32 : n->in[1]->dtype;
    n->shape = n->attrs.shape;
    return KILN_OK;
}

static kiln_status conv2d_bwd_filter_infer(kiln_node *n) {    /* (x, dy), attrs.shape = w's */
    kiln_shape ys;
    kiln_status st = conv_shapes(n, n->in[0]->shape, n->attrs.shape, &ys);
    if (!st) st = check_dy(n, ys, n->in[1]->shape);
    if (!st) st = same_dtype(n, "x", "dy");
    if (st) return st;
    n->dtype = n->attrs.acc_f32 ? KILN_F32 : n->in[1]->dtype;
    n->shape = n->attrs.shape;
    return KILN_OK;
}

static kiln_status conv2d_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *x = n->in[0], *w = n->in[1];
    kiln_attrs at = n->attrs;
    if (dy->dtype != x->dtype) dy = kiln_cast(g, dy, x->dtype);   /* mixed: both backprops read dy in x's dtype */
    at.shape = x->shape;
    at.acc_f32 = n->attrs.acc_f32 || kiln_is_half_cast(x);
    dx[0] = kiln_node_new(g, KILN_OP_CONV2D_BWD_INPUT, (kiln_node *[]){ w, dy }, 2, &at);
    at.shape = w->shape;
    at.acc_f32 = n->attrs.acc_f32 || kiln_is_half_cast(w);
    dx[1] = kiln_node_new(g, KILN_OP_CONV2D_BWD_FILTER, (kiln_node *[]){ x, dy }, 2, &at);
    if (dx[0] && dx[1]) return KILN_OK;
    kiln_status s = kiln_graph_status(g);
    return s != KILN_OK ? s : KILN_INTERNAL;
}

/* Conv2DBackpropInput is linear in both inputs, so its gradients are the other two conv ops: with
 * respect to dy (as a transposed convolution's input) the forward Conv2D of the incoming
 * gradient; with respect to the kernel the filter gradient of that forward conv. This makes the
 * op usable as a layer's forward (Conv2DTranspose). */
static kiln_status conv2d_bwd_input_grad(kiln_graph *g, kiln_node *n, kiln_node *dz, kiln_node **dx) {
    kiln_node *w = n->in[0], *dy = n->in[1];
    kiln_attrs at = n->attrs;
    if (dz->dtype != dy->dtype) dz = kiln_cast(g, dz, dy->dtype);
    at.shape = w->shape;
    at.acc_f32 = n->attrs.acc_f32 || kiln_is_half_cast(w);
    dx[0] = kiln_node_new(g, KILN_OP_CONV2D_BWD_FILTER, (kiln_node *[]){ dz, dy }, 2, &at);
    at.shape = (kiln_shape){ 0 };
    at.acc_f32 = n->attrs.acc_f32;
    dx[1] = kiln_node_new(g, KILN_OP_CONV2D, (kiln_node *[]){ dz, w }, 2, &at);
    if (dx[0] && dx[1]) return KILN_OK;
    kiln_status s = kiln_graph_status(g);
    return s != KILN_OK ? s : KILN_INTERNAL;
}

const kiln_op_def kiln_opdef_conv2d = { "Conv2D", 2, 2, 0, conv2d_infer, conv2d_grad, kiln_ref_conv2d, NULL };
const kiln_op_def kiln_opdef_conv2d_bwd_input = { "Conv2DBackpropInput", 2, 2, 0,
                                                  conv2d_bwd_input_infer, conv2d_bwd_input_grad, kiln_ref_conv2d_bwd_input, NULL };
const kiln_op_def kiln_opdef_conv2d_bwd_filter = { "Conv2DBackpropFilter", 2, 2, KILN_OPF_NO_GRAD,
                                                   conv2d_bwd_filter_infer, NULL, kiln_ref_conv2d_bwd_filter, NULL };

kiln_node *kiln_conv2d(kiln_graph *g, kiln_node *x, kiln_node *kernel, const kiln_conv_params *p) {
    if (!g || !x || !kernel) return NULL;
    if (!p) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_conv2d: NULL params"); return NULL; }
    if ((unsigned)p->padding >= KILN_PADDING_COUNT) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_conv2d: unknown padding %d", (int)p->padding);
        return NULL;
    }
    kiln_attrs at = { 0 };
    at.sh = p->stride_h ? p->stride_h : 1;
    at.sw = p->stride_w ? p->stride_w : 1;
    at.dh = p->dilation_h ? p->dilation_h : 1;
    at.dw = p->dilation_w ? p->dilation_w : 1;
    at.groups = p->groups ? p->groups : 1;
    at.padding = p->padding;
    if (p->padding == KILN_EXPLICIT) {
        at.pt = p->pad_top; at.pb = p->pad_bottom; at.pl = p->pad_left; at.pr = p->pad_right;
    } else if (p->padding == KILN_SAME && x->shape.rank == 4 && kernel->shape.rank == 4 &&
               at.sh > 0 && at.sw > 0 && at.dh > 0 && at.dw > 0) {
        /* (bad shapes or params are left for inference to report, naming the node) */
        same_pads(x->shape.dim[1], (int)(kernel->shape.dim[0] - 1) * at.dh + 1, at.sh, &at.pt, &at.pb);
        same_pads(x->shape.dim[2], (int)(kernel->shape.dim[1] - 1) * at.dw + 1, at.sw, &at.pl, &at.pr);
    }
    at.acc_f32 = kiln_autocast_operands(g, &x, &kernel);
    return kiln_node_new(g, KILN_OP_CONV2D, (kiln_node *[]){ x, kernel }, 2, &at);
}

kiln_node *kiln_conv2d_transpose(kiln_graph *g, kiln_node *x, kiln_node *kernel, const kiln_conv_params *p, int64_t out_h, int64_t out_w) {
    if (!g || !x || !kernel) return NULL;
    if (!p) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_conv2d_transpose: NULL params"); return NULL; }
    if ((unsigned)p->padding >= KILN_PADDING_COUNT || (p->groups && p->groups != 1) || out_h < 1 || out_w < 1 || x->shape.rank != 4 || kernel->shape.rank != 4) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_conv2d_transpose: needs NHWC x, an HWIO kernel, one group, a known padding and an output size >= 1 (got padding %d, groups %d, %lldx%lld)",
                        (int)p->padding, p->groups, (long long)out_h, (long long)out_w);
        return NULL;
    }
    kiln_attrs at = { 0 };
    at.sh = p->stride_h ? p->stride_h : 1;
    at.sw = p->stride_w ? p->stride_w : 1;
    at.dh = p->dilation_h ? p->dilation_h : 1;
    at.dw = p->dilation_w ? p->dilation_w : 1;
    at.groups = 1;
    at.padding = p->padding;
    if (p->padding == KILN_EXPLICIT) {
        at.pt = p->pad_top; at.pb = p->pad_bottom; at.pl = p->pad_left; at.pr = p->pad_right;
    } else if (p->padding == KILN_SAME && at.sh > 0 && at.sw > 0 && at.dh > 0 && at.dw > 0) {   /* the forward conv's, from the output size */
        same_pads(out_h, (int)(kernel->shape.dim[0] - 1) * at.dh + 1, at.sh, &at.pt, &at.pb);
        same_pads(out_w, (int)(kernel->shape.dim[1] - 1) * at.dw + 1, at.sw, &at.pl, &at.pr);
    }
    at.shape = KILN_SHAPE(x->shape.dim[0], out_h, out_w, kernel->shape.dim[2]);
    at.acc_f32 = kiln_autocast_operands(g, &x, &kernel);
    return kiln_node_new(g, KILN_OP_CONV2D_BWD_INPUT, (kiln_node *[]){ kernel, x }, 2, &at);
}
