/* Losses (mean over the batch, fused and numerically stable) and metrics. */
#include "ops/op.h"
#include "ops/ref_kernels.h"

static const char *shp(kiln_shape s, char *buf) { return kiln_shape_str(s, buf, 96); }
static bool is_label_dtype(kiln_dtype t) { return t == KILN_I32 || t == KILN_I64; }
static bool is_intlike(kiln_dtype t) { return t == KILN_I32 || t == KILN_I64 || t == KILN_U8 || t == KILN_BOOL; }

static kiln_status need_float(kiln_node *n, int i, const char *what) {
    kiln_node *x = n->in[i];
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "%s '%s' is %s; a float dtype is needed", what, x->name, kiln_dtype_name(x->dtype));
    return KILN_OK;
}

static kiln_status need_rank2(kiln_node *n, int i, const char *what) {
    char b[96];
    kiln_node *x = n->in[i];
    if (x->shape.rank != 2)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s '%s' has shape %s; expected rank 2 [batch, classes]", what, x->name, shp(x->shape, b));
    return KILN_OK;
}

/* in[1]: class ids [N] (i32/i64) for logits in[0] of shape [N, C]. */
static kiln_status check_class_ids(kiln_node *n) {
    kiln_node *x = n->in[0], *y = n->in[1];
    char b1[96], b2[96];
    if (!is_label_dtype(y->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "labels '%s' are %s; class ids must be i32 or i64", y->name, kiln_dtype_name(y->dtype));
    if (y->shape.rank != 1 || y->shape.dim[0] != x->shape.dim[0])
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "labels '%s' have shape %s but logits '%s' are %s; expected labels [%lld] (one class id per row)",
                               y->name, shp(y->shape, b1), x->name, shp(x->shape, b2), (long long)x->shape.dim[0]);
    return KILN_OK;
}

/* in[1] has exactly in[0]'s shape and dtype (dense labels / targets). */
static kiln_status check_same(kiln_node *n, const char *what) {
    kiln_node *x = n->in[0], *y = n->in[1];
    char b1[96], b2[96];
    if (!kiln_shape_equal(x->shape, y->shape))
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s '%s' have shape %s but logits '%s' are %s; they must match",
                               what, y->name, shp(y->shape, b1), x->name, shp(x->shape, b2));
    if (x->dtype != y->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "%s '%s' are %s but logits '%s' are %s", what, y->name,
                               kiln_dtype_name(y->dtype), x->name, kiln_dtype_name(x->dtype));
    return KILN_OK;
}

/* Gradient ops: in[2] is dL/dloss, a scalar of the logits' dtype. */
static kiln_status check_dy_scalar(kiln_node *n) {
    kiln_node *dy = n->in[2];
    char b[96];
    if (kiln_shape_numel(dy->shape) != 1 || dy->dtype != n->in[0]->dtype)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "dy '%s' is %s %s; expected a %s scalar", dy->name,
                               kiln_dtype_name(dy->dtype), shp(dy->shape, b), kiln_dtype_name(n->in[0]->dtype));
    return KILN_OK;
}

static kiln_status set_scalar(kiln_node *n, kiln_dtype t) { n->dtype = t; n->shape = KILN_SCALAR; return KILN_OK; }
static kiln_status set_like0(kiln_node *n) { n->dtype = n->in[0]->dtype; n->shape = n->in[0]->shape; return KILN_OK; }

/* ---- SparseSoftmaxCrossEntropy ---- */
static kiln_status sparse_xent_check(kiln_node *n) {
    kiln_status s;
    if ((s = need_float(n, 0, "logits")) || (s = need_rank2(n, 0, "logits")) || (s = check_class_ids(n))) return s;
    return KILN_OK;
}
static kiln_status sparse_xent_infer(kiln_node *n) {
    kiln_status s = sparse_xent_check(n);
    return s ? s : set_scalar(n, n->in[0]->dtype);
}
static kiln_status sparse_xent_grad_infer(kiln_node *n) {
    kiln_status s = sparse_xent_check(n);
    if (!s) s = check_dy_scalar(n);
    return s ? s : set_like0(n);
}

/* Fused loss gradients: one op (logits, labels, dy) -> dlogits; labels get none. */
static kiln_status fused_grad(kiln_graph *g, kiln_node *n, kiln_op op, kiln_node *dy, kiln_node **dx) {
    dx[0] = kiln_node_new(g, op, (kiln_node *[]){ n->in[0], n->in[1], dy }, 3, NULL);
    dx[1] = NULL;
    return dx[0] ? KILN_OK : kiln_graph_status(g);
}
static kiln_status sparse_xent_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    return fused_grad(g, n, KILN_OP_SPARSE_SOFTMAX_XENT_GRAD, dy, dx);
}

const kiln_op_def kiln_opdef_sparse_softmax_xent = {
    "SparseSoftmaxCrossEntropy", 2, 2, 0, sparse_xent_infer, sparse_xent_grad, kiln_ref_sparse_softmax_xent, NULL
};
const kiln_op_def kiln_opdef_sparse_softmax_xent_grad = {
    "SparseSoftmaxCrossEntropyGrad", 3, 3, KILN_OPF_NO_GRAD, sparse_xent_grad_infer, NULL, kiln_ref_sparse_softmax_xent_grad, NULL
};

/* ---- SoftmaxCrossEntropy ---- */
static kiln_status softmax_xent_check(kiln_node *n) {
    kiln_status s;
    if ((s = need_float(n, 0, "logits")) || (s = need_rank2(n, 0, "logits")) || (s = check_same(n, "labels"))) return s;
    return KILN_OK;
}
static kiln_status softmax_xent_infer(kiln_node *n) {
    kiln_status s = softmax_xent_check(n);
    return s ? s : set_scalar(n, n->in[0]->dtype);
}
static kiln_status softmax_xent_grad_infer(kiln_node *n) {
    kiln_status s = softmax_xent_check(n);
    if (!s) s = check_dy_scalar(n);
    return s ? s : set_like0(n);
}
static kiln_status softmax_xent_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    return fused_grad(g, n, KILN_OP_SOFTMAX_XENT_GRAD, dy, dx);
}

const kiln_op_def kiln_opdef_softmax_xent = {
    "SoftmaxCrossEntropy", 2, 2, 0, softmax_xent_infer, softmax_xent_grad, kiln_ref_softmax_xent, NULL
};
const kiln_op_def kiln_opdef_softmax_xent_grad = {
    "SoftmaxCrossEntropyGrad", 3, 3, KILN_OPF_NO_GRAD, softmax_xent_grad_infer, NULL, kiln_ref_softmax_xent_grad, NULL
};

/* ---- SigmoidCrossEntropy ---- */
static kiln_status sigmoid_xent_check(kiln_node *n) {
    kiln_status s;
    if ((s = need_float(n, 0, "logits")) || (s = check_same(n, "labels"))) return s;
    return KILN_OK;
}
static kiln_status sigmoid_xent_infer(kiln_node *n) {
    kiln_status s = sigmoid_xent_check(n);
    return s ? s : set_scalar(n, n->in[0]->dtype);
}
static kiln_status sigmoid_xent_grad_infer(kiln_node *n) {
    kiln_status s = sigmoid_xent_check(n);
    if (!s) s = check_dy_scalar(n);
    return s ? s : set_like0(n);
}
static kiln_status sigmoid_xent_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    return fused_grad(g, n, KILN_OP_SIGMOID_XENT_GRAD, dy, dx);
}

const kiln_op_def kiln_opdef_sigmoid_xent = {
    "SigmoidCrossEntropy", 2, 2, 0, sigmoid_xent_infer, sigmoid_xent_grad, kiln_ref_sigmoid_xent, NULL
};
const kiln_op_def kiln_opdef_sigmoid_xent_grad = {
    "SigmoidCrossEntropyGrad", 3, 3, KILN_OPF_NO_GRAD, sigmoid_xent_grad_infer, NULL, kiln_ref_sigmoid_xent_grad, NULL
};

/* ---- MeanSquaredError (pred, target broadcast like numpy) ---- */
static kiln_status mse_infer(kiln_node *n) {
    kiln_status s;
    kiln_shape o;
    if ((s = need_float(n, 0, "pred"))) return s;
    if (n->in[1]->dtype != n->in[0]->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "target '%s' is %s but pred '%s' is %s", n->in[1]->name,
                               kiln_dtype_name(n->in[1]->dtype), n->in[0]->name, kiln_dtype_name(n->in[0]->dtype));
    if ((s = kiln_broadcast_shapes(n, n->in[0]->shape, n->in[1]->shape, &o))) return s;
    return set_scalar(n, n->in[0]->dtype);
}

/* d/dpred = 2 (pred - target) dy / numel, summed back over broadcast dims; d/dtarget = -that. */
static kiln_status mse_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *p = n->in[0], *t = n->in[1];
    kiln_shape o = p->shape;
    if (kiln_broadcast_shapes(n, p->shape, t->shape, &o)) return kiln_graph_status(g);
    int64_t numel = kiln_shape_numel(o);
    kiln_node *k = kiln_mul(g, dy, kiln_scalar_like(g, p, 2.0 / (double)(numel > 0 ? numel : 1)));
    kiln_node *gd = kiln_mul(g, kiln_sub(g, p, t), k);
    dx[0] = kiln_sum_to(g, gd, p->shape);
    dx[1] = kiln_neg(g, kiln_sum_to(g, gd, t->shape));
    return (dx[0] && dx[1]) ? KILN_OK : (kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL);
}

const kiln_op_def kiln_opdef_mse = {
    "MeanSquaredError", 2, 2, 0, mse_infer, mse_grad, kiln_ref_mse, NULL
};

/* ---- ArgMax ---- */
static kiln_status argmax_infer(kiln_node *n) {
    kiln_node *x = n->in[0];
    char b[96];
    if (x->dtype == KILN_BOOL)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input '%s' is bool; argmax needs a numeric dtype", x->name);
    int r = x->shape.rank, ax = n->attrs.axis;
    if (r < 1 || ax < -r || ax >= r)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "axis %d is out of range for input '%s' of shape %s", ax, x->name, shp(x->shape, b));
    if (ax < 0) ax += r;
    n->attrs.axis = ax;           /* kernels see the normalised axis */
    kiln_shape o = { r - 1, { 0 } };
    for (int d = 0, k = 0; d < r; d++)
        if (d != ax) o.dim[k++] = x->shape.dim[d];
    n->dtype = KILN_I64;
    n->shape = o;
    return KILN_OK;
}

const kiln_op_def kiln_opdef_argmax = { "ArgMax", 1, 1, KILN_OPF_NO_GRAD, argmax_infer, NULL, kiln_ref_argmax, NULL };

/* ---- Equal ---- */
static kiln_status equal_infer(kiln_node *n) {
    kiln_node *a = n->in[0], *b = n->in[1];
    kiln_status s;
    /* integer ids of different widths compare exactly (argmax i64 vs labels i32) */
    if (a->dtype != b->dtype && !(is_intlike(a->dtype) && is_intlike(b->dtype)))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "'%s' is %s but '%s' is %s (cast one of them)", a->name,
                               kiln_dtype_name(a->dtype), b->name, kiln_dtype_name(b->dtype));
    if ((s = kiln_broadcast_shapes(n, a->shape, b->shape, &n->shape))) return s;
    n->dtype = KILN_BOOL;
    return KILN_OK;
}

const kiln_op_def kiln_opdef_equal = { "Equal", 2, 2, KILN_OPF_NO_GRAD, equal_infer, NULL, kiln_ref_equal, NULL };

/* ---- Accuracy ---- */
static kiln_status accuracy_infer(kiln_node *n) {
    kiln_status s;
    if (n->in[0]->dtype == KILN_BOOL)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "logits '%s' are bool; a numeric dtype is needed", n->in[0]->name);
    if ((s = need_rank2(n, 0, "logits")) || (s = check_class_ids(n))) return s;
    return set_scalar(n, KILN_F32);
}

const kiln_op_def kiln_opdef_accuracy = { "Accuracy", 2, 2, KILN_OPF_NO_GRAD, accuracy_infer, NULL, kiln_ref_accuracy, NULL };

/* ---- public builders ---- */
static kiln_node *bin(kiln_graph *g, kiln_op op, kiln_node *a, kiln_node *b) {
    return kiln_node_new(g, op, (kiln_node *[]){ a, b }, 2, NULL);
}
/* Sequence logits [..., C] with labels [...] (a language model's [B, T, V] and [B, T]) are seen
 * as [N, C] and [N] through reshapes, which alias: the fused op keeps no probabilities (its
 * gradient op recomputes them into dlogits). */
kiln_node *kiln_sparse_softmax_cross_entropy(kiln_graph *g, kiln_node *logits, kiln_node *labels) {
    if (logits && labels && logits->shape.rank > 2 && labels->shape.rank == logits->shape.rank - 1) {
        bool lead = true;
        for (int d = 0; d < labels->shape.rank; d++) lead = lead && labels->shape.dim[d] == logits->shape.dim[d];
        int64_t C = logits->shape.dim[logits->shape.rank - 1], N = kiln_shape_numel(labels->shape);
        if (lead) {
            logits = kiln_reshape(g, logits, KILN_SHAPE(N, C));
            labels = kiln_reshape(g, labels, KILN_SHAPE(N));
        }
    }
    return bin(g, KILN_OP_SPARSE_SOFTMAX_XENT, logits, labels);
}
kiln_node *kiln_softmax_cross_entropy(kiln_graph *g, kiln_node *logits, kiln_node *labels) {
    return bin(g, KILN_OP_SOFTMAX_XENT, logits, labels);
}
kiln_node *kiln_sigmoid_cross_entropy(kiln_graph *g, kiln_node *logits, kiln_node *labels) {
    return bin(g, KILN_OP_SIGMOID_XENT, logits, labels);
}
kiln_node *kiln_mean_squared_error(kiln_graph *g, kiln_node *pred, kiln_node *target) {
    return bin(g, KILN_OP_MSE, pred, target);
}
kiln_node *kiln_equal(kiln_graph *g, kiln_node *a, kiln_node *b) { return bin(g, KILN_OP_EQUAL, a, b); }
kiln_node *kiln_accuracy(kiln_graph *g, kiln_node *logits, kiln_node *labels) {
    return bin(g, KILN_OP_ACCURACY, logits, labels);
}
kiln_node *kiln_argmax(kiln_graph *g, kiln_node *x, int axis) {
    kiln_attrs a = { 0 };
    a.axis = axis;
    return kiln_node_new(g, KILN_OP_ARGMAX, &x, 1, &a);
}
