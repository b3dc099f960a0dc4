/* Softmax and LogSoftmax over one axis. Gradients are composed from elementwise ops and a keepdims
 * reduce_sum, so every backend that has those runs them without a dedicated grad kernel. */
#include "ops/op.h"
#include "ops/ref_kernels.h"

static kiln_status infer_softmax(kiln_node *n) {
    kiln_node *x = n->in[0];
    char s[96];
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input '%s' is %s %s; softmax needs a float dtype "
            "(f32, f64, f16, bf16)", x->name, kiln_dtype_name(x->dtype), kiln_shape_str(x->shape, s, sizeof s));
    if (x->shape.rank < 1)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "input '%s' is a scalar; softmax needs rank >= 1",
                               x->name);
    int axis = n->attrs.axis;
    if (axis < -x->shape.rank || axis >= x->shape.rank)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "axis %d out of range for input '%s' %s (valid: "
            "%d..%d)", axis, x->name, kiln_shape_str(x->shape, s, sizeof s), -x->shape.rank, x->shape.rank - 1);
    n->attrs.axis = axis < 0 ? axis + x->shape.rank : axis;   /* kernels see axis >= 0 only */
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}

/* y = softmax(x): dx = y * (dy - sum(dy * y, axis, keepdims)). */
static kiln_status grad_softmax(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *y = n;
    int axis = n->attrs.axis;
    kiln_node *s = kiln_reduce_sum(g, kiln_mul(g, dy, y), &axis, 1, true);
    dx[0] = kiln_mul(g, y, kiln_sub(g, dy, s));
    if (dx[0]) return KILN_OK;
    return kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL;
}

/* y = log_softmax(x): dx = dy - exp(y) * sum(dy, axis, keepdims). */
static kiln_status grad_log_softmax(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    int axis = n->attrs.axis;
    kiln_node *s = kiln_reduce_sum(g, dy, &axis, 1, true);
    dx[0] = kiln_sub(g, dy, kiln_mul(g, kiln_exp(g, n), s));
    if (dx[0]) return KILN_OK;
    return kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL;
}

static kiln_node *build(kiln_graph *g, kiln_op op, kiln_node *x, int axis) {
    kiln_attrs at = { 0 };
    at.axis = axis;
    return kiln_node_new(g, op, &x, 1, &at);
}

kiln_node *kiln_softmax(kiln_graph *g, kiln_node *x, int axis) { return build(g, KILN_OP_SOFTMAX, x, axis); }
kiln_node *kiln_log_softmax(kiln_graph *g, kiln_node *x, int axis) { return build(g, KILN_OP_LOG_SOFTMAX, x, axis); }

/* INPLACE0: the ref kernel reads each row element before overwriting it (see its comment). */
const kiln_op_def kiln_opdef_softmax = { "Softmax", 1, 1, KILN_OPF_INPLACE0, infer_softmax, grad_softmax, kiln_ref_softmax, NULL };
const kiln_op_def kiln_opdef_log_softmax = { "LogSoftmax", 1, 1, KILN_OPF_INPLACE0, infer_softmax, grad_log_softmax, kiln_ref_log_softmax, NULL };
