/* Reduction ops (Sum, Mean, Max) and the broadcast pair (SumTo, BroadcastTo): shape inference,
 * gradients and builders. Kernels: src/backend/ref/reduce.c. */
#include <string.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

#define SHAPE_STR(s, buf) kiln_shape_str((s), (buf), sizeof(buf))

/* Resolves negative axes, sorts and deduplicates (via a bitmask). n == 0 means every axis.
 * Returns the number of axes written to out; *bad = index of an out-of-range axis, else -1. */
static int norm_axes(int rank, const int *axes, int n, int *out, int *bad) {
    unsigned mask = n == 0 ? (1u << rank) - 1u : 0u;
    *bad = -1;
    for (int i = 0; i < n; i++) {
        int a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank) { *bad = i; return 0; }
        mask |= 1u << a;
    }
    int k = 0;
    for (int d = 0; d < rank; d++)
        if (mask >> d & 1) out[k++] = d;
    return k;
}

/* Shape after reducing `axes` (normalised): reduced dims become 1 (keep) or vanish. */
static kiln_shape reduced_shape(kiln_shape s, const int *axes, int n, bool keep) {
    unsigned mask = 0;
    for (int i = 0; i < n; i++) mask |= 1u << axes[i];
    kiln_shape o = { 0, { 0 } };
    for (int d = 0; d < s.rank; d++) {
        if (!(mask >> d & 1)) o.dim[o.rank++] = s.dim[d];
        else if (keep) o.dim[o.rank++] = 1;
    }
    return o;
}

/* Normalises attrs.axes in place (so kernels of every backend read sorted, non-negative axes and
 * an explicit list: "all" is expanded). */
static kiln_status reduce_infer(kiln_node *n) {
    const kiln_node *x = n->in[0];
    kiln_attrs *a = &n->attrs;
    char xs[96];
    if (a->n_axes < 0 || a->n_axes > KILN_MAX_DIMS)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "n_axes %d outside 0..%d", a->n_axes, KILN_MAX_DIMS);
    int axes[KILN_MAX_DIMS] = { 0 }, bad;
    int k = norm_axes(x->shape.rank, a->axes, a->n_axes, axes, &bad);
    if (bad >= 0)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "axis %d out of range for input '%s' of shape %s (rank %d)",
                               a->axes[bad], x->name, SHAPE_STR(x->shape, xs), x->shape.rank);
    memcpy(a->axes, axes, sizeof axes);
    a->n_axes = k;
    n->dtype = x->dtype;
    n->shape = reduced_shape(x->shape, a->axes, a->n_axes, a->keepdims);
    return KILN_OK;
}

static kiln_status grad_done(kiln_graph *g, kiln_node *dx) {
    if (dx) return KILN_OK;
    kiln_status s = kiln_graph_status(g);
    return s != KILN_OK ? s : KILN_INTERNAL;
}

/* t (shaped like the reduction's output) with the reduced axes kept as 1, so it broadcasts
 * against the input. */
static kiln_node *keepdims_of(kiln_graph *g, const kiln_node *n, kiln_node *t) {
    kiln_shape k = reduced_shape(n->in[0]->shape, n->attrs.axes, n->attrs.n_axes, true);
    if (!t || kiln_shape_equal(t->shape, k)) return t;
    return kiln_reshape(g, t, k);
}

static kiln_status sum_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *x = n->in[0];
    if (!kiln_dtype_is_float(x->dtype)) return KILN_OK;
    dx[0] = kiln_broadcast_to(g, keepdims_of(g, n, dy), x->shape);
    return grad_done(g, dx[0]);
}

static kiln_status mean_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *x = n->in[0];
    if (!kiln_dtype_is_float(x->dtype)) return KILN_OK;
    int64_t count = 1;
    for (int i = 0; i < n->attrs.n_axes; i++) count *= x->shape.dim[n->attrs.axes[i]];
    /* Scale the small tensor before broadcasting it. */
    kiln_node *scaled = kiln_mul(g, dy, kiln_scalar_like(g, dy, count ? 1.0 / (double)count : 0.0));
    dx[0] = kiln_broadcast_to(g, keepdims_of(g, n, scaled), x->shape);
    return grad_done(g, dx[0]);
}

/* Max: the gradient is split evenly among tied maxima (as TensorFlow does), so it sums to dy:
 * mask = (x == max), dx = mask * dy / count(mask). */
static kiln_status max_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *x = n->in[0];
    if (!kiln_dtype_is_float(x->dtype)) return KILN_OK;
    kiln_node *mask = kiln_cast(g, kiln_equal(g, x, keepdims_of(g, n, n)), x->dtype);
    kiln_node *count = kiln_reduce_sum(g, mask, n->attrs.axes, n->attrs.n_axes, true);
    dx[0] = kiln_mul(g, mask, kiln_div(g, keepdims_of(g, n, dy), count));
    return grad_done(g, dx[0]);
}

static kiln_node *reduce_build(kiln_graph *g, kiln_op op, kiln_node *x, const int *axes, int n_axes, bool keepdims) {
    if (!x) return kiln_node_new(g, op, &x, 1, NULL);      /* NULL input: no new graph error */
    const char *name = kiln_op_get(op)->name;
    kiln_attrs a = { 0 };
    a.keepdims = keepdims;
    if (n_axes < 0 || (n_axes > 0 && !axes)) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s of '%s': n_axes = %d with axes %s", name, x->name,
                        n_axes, axes ? "given" : "NULL");
        return NULL;
    }
    if (n_axes > KILN_MAX_DIMS) {      /* only possible with duplicates: fold them here */
        int bad;
        a.n_axes = norm_axes(x->shape.rank, axes, n_axes, a.axes, &bad);
        if (bad >= 0) {
            char xs[96];
            kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s of '%s': axis %d out of range for shape %s (rank %d)",
                            name, x->name, axes[bad], SHAPE_STR(x->shape, xs), x->shape.rank);
            return NULL;
        }
    } else {
        if (n_axes > 0) memcpy(a.axes, axes, (size_t)n_axes * sizeof *axes);
        a.n_axes = n_axes;
    }
    return kiln_node_new(g, op, &x, 1, &a);
}

kiln_node *kiln_reduce_sum(kiln_graph *g, kiln_node *x, const int *axes, int n_axes, bool keepdims) {
    return reduce_build(g, KILN_OP_REDUCE_SUM, x, axes, n_axes, keepdims);
}
kiln_node *kiln_reduce_mean(kiln_graph *g, kiln_node *x, const int *axes, int n_axes, bool keepdims) {
    return reduce_build(g, KILN_OP_REDUCE_MEAN, x, axes, n_axes, keepdims);
}
kiln_node *kiln_reduce_max(kiln_graph *g, kiln_node *x, const int *axes, int n_axes, bool keepdims) {
    return reduce_build(g, KILN_OP_REDUCE_MAX, x, axes, n_axes, keepdims);
}

/* ---- SumTo / BroadcastTo ---- */

static kiln_status check_target(kiln_node *n, kiln_shape t) {
    char ts[96];
    if (t.rank < 0 || t.rank > KILN_MAX_DIMS)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "target rank %d outside 0..%d", t.rank, KILN_MAX_DIMS);
    for (int d = 0; d < t.rank; d++)
        if (t.dim[d] < 0)
            return kiln_node_error(n, KILN_INVALID_ARGUMENT, "target shape %s has a negative dimension", SHAPE_STR(t, ts));
    return KILN_OK;
}

/* Whether `small` broadcasts (numpy rules) to exactly `big`. */
static bool broadcasts_to(kiln_shape small, kiln_shape big) {
    int lead = big.rank - small.rank;
    if (lead < 0) return false;
    for (int d = 0; d < small.rank; d++)
        if (small.dim[d] != 1 && small.dim[d] != big.dim[d + lead]) return false;
    return true;
}

static kiln_status sum_to_infer(kiln_node *n) {
    const kiln_node *x = n->in[0];
    char xs[96], ts[96];
    kiln_status s = check_target(n, n->attrs.shape);
    if (s) return s;
    if (!broadcasts_to(n->attrs.shape, x->shape))
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "cannot sum '%s' of shape %s down to %s: %s does not broadcast to %s",
                               x->name, SHAPE_STR(x->shape, xs), SHAPE_STR(n->attrs.shape, ts), ts, xs);
    n->dtype = x->dtype;
    n->shape = n->attrs.shape;
    return KILN_OK;
}

static kiln_status broadcast_to_infer(kiln_node *n) {
    const kiln_node *x = n->in[0];
    char xs[96], ts[96];
    kiln_status s = check_target(n, n->attrs.shape);
    if (s) return s;
    if (!broadcasts_to(x->shape, n->attrs.shape))
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "cannot broadcast '%s' of shape %s to %s",
                               x->name, SHAPE_STR(x->shape, xs), SHAPE_STR(n->attrs.shape, ts));
    n->dtype = x->dtype;
    n->shape = n->attrs.shape;
    return KILN_OK;
}

static kiln_status sum_to_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    if (!kiln_dtype_is_float(n->in[0]->dtype)) return KILN_OK;
    dx[0] = kiln_broadcast_to(g, dy, n->in[0]->shape);
    return grad_done(g, dx[0]);
}

static kiln_status broadcast_to_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    if (!kiln_dtype_is_float(n->in[0]->dtype)) return KILN_OK;
    dx[0] = kiln_sum_to(g, dy, n->in[0]->shape);
    return grad_done(g, dx[0]);
}

/* Both return their input itself when the shapes already match: every broadcasting op's
 * gradient calls kiln_sum_to, and the common same-shape case should cost no node. */
kiln_node *kiln_sum_to(kiln_graph *g, kiln_node *grad, kiln_shape shape) {
    if (grad && kiln_shape_equal(grad->shape, shape)) return grad;
    kiln_attrs a = { 0 };
    a.shape = shape;
    return kiln_node_new(g, KILN_OP_SUM_TO, &grad, 1, &a);
}

kiln_node *kiln_broadcast_to(kiln_graph *g, kiln_node *x, kiln_shape shape) {
    if (x && kiln_shape_equal(x->shape, shape)) return x;
    kiln_attrs a = { 0 };
    a.shape = shape;
    return kiln_node_new(g, KILN_OP_BROADCAST_TO, &x, 1, &a);
}

const kiln_op_def kiln_opdef_reduce_sum = { "Sum", 1, 1, 0, reduce_infer, sum_grad, kiln_ref_reduce_sum, NULL };
const kiln_op_def kiln_opdef_reduce_mean = { "Mean", 1, 1, 0, reduce_infer, mean_grad, kiln_ref_reduce_mean, NULL };
const kiln_op_def kiln_opdef_reduce_max = { "Max", 1, 1, 0, reduce_infer, max_grad, kiln_ref_reduce_max, NULL };
const kiln_op_def kiln_opdef_sum_to = { "SumTo", 1, 1, 0, sum_to_infer, sum_to_grad, kiln_ref_sum_to, NULL };
const kiln_op_def kiln_opdef_broadcast_to = { "BroadcastTo", 1, 1, 0, broadcast_to_infer, broadcast_to_grad, kiln_ref_broadcast_to, NULL };
