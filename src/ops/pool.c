/* Pooling (NHWC): MaxPool, AvgPool and their gradient ops, GlobalAvgPool.
 * attrs: window kh x kw, stride sh x sw, resolved pads pt, pb, pl, pr (SAME exactly as
 * TensorFlow). Pads are always smaller than the window, so every window holds an input cell. */
#include <stdio.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

static void same_pads(int64_t in, int k, int stride, int *before, int *after) {
    int64_t out = (in + stride - 1) / stride;
    int64_t total = (out - 1) * stride + k - in;
    if (total < 0) total = 0;
    *before = (int)(total / 2);
    *after = (int)(total - total / 2);
}

/* Validates x's shape against attrs and writes the pooled shape. */
static kiln_status pool_shapes(kiln_node *n, kiln_shape xs, kiln_shape *ys) {
    kiln_attrs *at = &n->attrs;
    char sx[96];
    kiln_shape_str(xs, sx, sizeof sx);
    if (xs.rank != 4)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x is %s: expected NHWC (rank 4)", sx);
    if (at->padding != KILN_VALID && at->padding != KILN_SAME)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "padding %d: pooling takes KILN_VALID or KILN_SAME", (int)at->padding);
    if (at->kh < 1 || at->kw < 1 || at->sh < 1 || at->sw < 1)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "window %dx%d and strides (%d, %d) must be >= 1",
                               at->kh, at->kw, at->sh, at->sw);
    if (at->pt < 0 || at->pb < 0 || at->pl < 0 || at->pr < 0 ||
        at->pt >= at->kh || at->pb >= at->kh || at->pl >= at->kw || at->pr >= at->kw)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT,
                               "padding (top %d, bottom %d, left %d, right %d) must be >= 0 and smaller than the %dx%d window",
                               at->pt, at->pb, at->pl, at->pr, at->kh, at->kw);
    int64_t ph = xs.dim[1] + at->pt + at->pb, pw = xs.dim[2] + at->pl + at->pr;
    if (ph < at->kh || pw < at->kw)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x is %s: %s input %lldx%lld is smaller than the %dx%d window", sx,
                               at->padding == KILN_SAME ? "padded" : "(VALID)", (long long)ph, (long long)pw, at->kh, at->kw);
    at->dh = at->dw = 1;     /* no dilation in pooling; set so attrs read the same as conv's */
    *ys = KILN_SHAPE(xs.dim[0], (ph - at->kh) / at->sh + 1, (pw - at->kw) / at->sw + 1, xs.dim[3]);
    return KILN_OK;
}

static kiln_status numeric(kiln_node *n, kiln_dtype t) {
    if (t == KILN_BOOL) return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input is bool: a numeric dtype is needed");
    return KILN_OK;
}

static kiln_status expect_shape(kiln_node *n, const char *what, kiln_shape got, kiln_shape want) {
    if (kiln_shape_equal(got, want)) return KILN_OK;
    char a[96], b[96];
    return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s is %s, the forward pooling gives %s", what,
                           kiln_shape_str(got, a, sizeof a), kiln_shape_str(want, b, sizeof b));
}

static kiln_status pool_infer(kiln_node *n) {           /* MaxPool, AvgPool: (x) */
    kiln_shape ys;
    kiln_status st = pool_shapes(n, n->in[0]->shape, &ys);
    if (!st) st = numeric(n, n->in[0]->dtype);
    if (st) return st;
    n->dtype = n->in[0]->dtype;
    n->shape = ys;
    return KILN_OK;
}

static kiln_status max_pool_grad_infer(kiln_node *n) {  /* (x, y, dy) -> dx */
    kiln_node *x = n->in[0], *y = n->in[1], *dy = n->in[2];
    kiln_shape ys;
    kiln_status st = pool_shapes(n, x->shape, &ys);
    if (!st) st = expect_shape(n, "y", y->shape, ys);
    if (!st) st = expect_shape(n, "dy", dy->shape, ys);
    if (!st) st = numeric(n, x->dtype);
    if (st) return st;
    if (x->dtype != y->dtype || x->dtype != dy->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "x is %s, y is %s, dy is %s: dtypes must match",
                               kiln_dtype_name(x->dtype), kiln_dtype_name(y->dtype), kiln_dtype_name(dy->dtype));
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}

static kiln_status avg_pool_grad_infer(kiln_node *n) {  /* (dy), attrs.shape = x's -> dx */
    kiln_shape ys;
    kiln_status st = pool_shapes(n, n->attrs.shape, &ys);
    if (!st) st = expect_shape(n, "dy", n->in[0]->shape, ys);
    if (!st) st = numeric(n, n->in[0]->dtype);
    if (st) return st;
    n->dtype = n->in[0]->dtype;
    n->shape = n->attrs.shape;
    return KILN_OK;
}

static kiln_status global_avg_pool_infer(kiln_node *n) {
    kiln_shape xs = n->in[0]->shape;
    if (xs.rank != 4) {
        char sx[96];
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x is %s: expected NHWC (rank 4)", kiln_shape_str(xs, sx, sizeof sx));
    }
    kiln_status st = numeric(n, n->in[0]->dtype);
    if (st) return st;
    n->dtype = n->in[0]->dtype;
    n->shape = KILN_SHAPE(xs.dim[0], xs.dim[3]);
    return KILN_OK;
}

static kiln_status grad_result(kiln_graph *g, kiln_node *dx) {
    if (dx) return KILN_OK;
    kiln_status s = kiln_graph_status(g);
    return s != KILN_OK ? s : KILN_INTERNAL;
}

static kiln_status max_pool_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    dx[0] = kiln_node_new(g, KILN_OP_MAX_POOL_GRAD, (kiln_node *[]){ n->in[0], n, dy }, 3, &n->attrs);
    return grad_result(g, dx[0]);
}

static kiln_status avg_pool_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_attrs at = n->attrs;
    at.shape = n->in[0]->shape;
    dx[0] = kiln_node_new(g, KILN_OP_AVG_POOL_GRAD, &dy, 1, &at);
    return grad_result(g, dx[0]);
}

/* dx = broadcast(dy as [N,1,1,C]) / (H*W); scaling before the broadcast touches fewer elements. */
static kiln_status global_avg_pool_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_shape xs = n->in[0]->shape;
    kiln_node *r = kiln_reshape(g, dy, KILN_SHAPE(xs.dim[0], 1, 1, xs.dim[3]));
    kiln_node *s = kiln_mul(g, r, kiln_scalar_like(g, dy, 1.0 / (double)(xs.dim[1] * xs.dim[2])));
    dx[0] = kiln_broadcast_to(g, s, xs);
    return grad_result(g, dx[0]);
}

const kiln_op_def kiln_opdef_max_pool = { "MaxPool", 1, 1, 0, pool_infer, max_pool_grad, kiln_ref_max_pool, NULL };
const kiln_op_def kiln_opdef_max_pool_grad = { "MaxPoolGrad", 3, 3, KILN_OPF_NO_GRAD, max_pool_grad_infer, NULL,
                                               kiln_ref_max_pool_grad, NULL };
const kiln_op_def kiln_opdef_avg_pool = { "AvgPool", 1, 1, 0, pool_infer, avg_pool_grad, kiln_ref_avg_pool, NULL };
const kiln_op_def kiln_opdef_avg_pool_grad = { "AvgPoolGrad", 1, 1, KILN_OPF_NO_GRAD, avg_pool_grad_infer, NULL,
                                               kiln_ref_avg_pool_grad, NULL };
const kiln_op_def kiln_opdef_global_avg_pool = { "GlobalAvgPool", 1, 1, 0, global_avg_pool_infer, global_avg_pool_grad,
                                                 kiln_ref_global_avg_pool, NULL };

static kiln_node *pool_build(kiln_graph *g, kiln_op op, kiln_node *x, const kiln_pool_params *p) {
    if (!g || !x) return NULL;
    if (!p) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s: NULL params", kiln_op_get(op)->name); return NULL; }
    kiln_attrs at = { 0 };
    at.kh = p->size_h;
    at.kw = p->size_w;
    at.sh = p->stride_h ? p->stride_h : p->size_h;     /* stride 0 -> window size, like Keras */
    at.sw = p->stride_w ? p->stride_w : p->size_w;
    at.padding = p->padding;
    if (p->padding == KILN_SAME && x->shape.rank == 4 && at.kh > 0 && at.kw > 0 && at.sh > 0 && at.sw > 0) {
        same_pads(x->shape.dim[1], at.kh, at.sh, &at.pt, &at.pb);
        same_pads(x->shape.dim[2], at.kw, at.sw, &at.pl, &at.pr);
    }
    return kiln_node_new(g, op, &x, 1, &at);    /* inference reports bad shapes/params, naming the node */
}

kiln_node *kiln_max_pool2d(kiln_graph *g, kiln_node *x, const kiln_pool_params *p) {
    return pool_build(g, KILN_OP_MAX_POOL, x, p);
}

kiln_node *kiln_avg_pool2d(kiln_graph *g, kiln_node *x, const kiln_pool_params *p) {
    return pool_build(g, KILN_OP_AVG_POOL, x, p);
}

kiln_node *kiln_global_avg_pool2d(kiln_graph *g, kiln_node *x) {
    if (!g || !x) return NULL;
    return kiln_node_new(g, KILN_OP_GLOBAL_AVG_POOL, &x, 1, NULL);
}
