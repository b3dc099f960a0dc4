/* ONNX ops built on one-hot masks: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (class
 * axis 1, optional weights, ignore_index, reductions none / sum / mean), and Hardmax. A one-hot
 * mask is Equal(labels, [0, 1, ..., C-1]) cast to the input's type, broadcast along axis 1, so
 * the losses are products and sums Kiln differentiates. */
#include <string.h>
#include "onnx/onnx_ops.h"

/* [1, C, 1, ...] (rank r, C on axis) int64 0..C-1 as a constant node. */
static kiln_node *arange_on(ox_importer *im, int64_t c, int r, int axis) {
    kiln_shape s = { .rank = r };
    for (int i = 0; i < r; i++) s.dim[i] = i == axis ? c : 1;
    kiln_tensor *t = ox_host_new(im, KILN_I64, s, false);
    for (int64_t i = 0; t && i < c; i++) ((int64_t *)t->data)[i] = i;
    kiln_node *n = t ? kiln_constant(ox_graph(im), t) : NULL;
    kiln_tensor_free(t);
    return n;
}

/* NLL of log-probabilities lp (logical [N, C, d...], a node) against target; output 0 set. */
static kiln_status nll(ox_importer *im, const Onnx__NodeProto *n, kiln_node *lp, kiln_shape ls, ox_val *target, ox_val *weight) {
    kiln_graph *g = ox_graph(im);
    int r = ls.rank;
    char red[16];
    ox_attr_str(n, "reduction", red, sizeof red);
    if (!*red) strcpy(red, "mean");
    if (strcmp(red, "mean") && strcmp(red, "sum") && strcmp(red, "none"))
        return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'reduction' = '%s'", red);
    if (r < 2 || target->shape.rank != r - 1) return ox_fail(im, KILN_SHAPE_MISMATCH, "input must be [N, C, ...] and target [N, ...]");
    if (target->dtype != KILN_I64 && target->dtype != KILN_I32) return ox_fail(im, KILN_INVALID_ARGUMENT, "target must be int32 or int64");
    kiln_dtype dt = kiln_node_dtype(lp);
    kiln_node *t = ox_node(im, target);
    if (!t || !lp) return ox_graph_fail(im);
    if (target->dtype != KILN_I64) t = kiln_cast(g, t, KILN_I64);
    kiln_shape ts = { .rank = r };                      /* target with a 1 at the class axis */
    for (int i = 0, k = 0; i < r; i++) ts.dim[i] = i == 1 ? 1 : target->shape.dim[k++];
    kiln_node *t1 = kiln_reshape(g, t, ts);
    kiln_node *onehot = kiln_cast(g, kiln_equal(g, t1, arange_on(im, ls.dim[1], r, 1)), dt);
    if (weight) {
        kiln_shape ws = { .rank = r };
        for (int i = 0; i < r; i++) ws.dim[i] = i == 1 ? ls.dim[1] : 1;
        kiln_node *w = ox_node(im, weight);
        onehot = w ? kiln_mul(g, onehot, kiln_reshape(g, w, ws)) : NULL;
    }
    int axis1 = 1;
    kiln_node *wsel = kiln_reduce_sum(g, onehot, &axis1, 1, false);                    /* w[target], 0 where ignored */
    kiln_node *loss = kiln_neg(g, kiln_reduce_sum(g, kiln_mul(g, lp, onehot), &axis1, 1, false));
    const Onnx__AttributeProto *ii = ox_attr(n, "ignore_index");
    if (ii && ii->has_i) {
        kiln_tensor *v = ox_host_new(im, KILN_I64, KILN_SCALAR, false);
        if (v) *(int64_t *)v->data = ii->i;
        kiln_node *keep = v ? kiln_sub(g, ox_scalar(im, dt, 1), kiln_cast(g, kiln_equal(g, t, kiln_constant(g, v)), dt)) : NULL;
        kiln_tensor_free(v);
        wsel = kiln_mul(g, wsel, keep);
        loss = kiln_mul(g, loss, keep);
    }
    if (!strcmp(red, "sum")) loss = kiln_reduce_sum(g, loss, NULL, 0, false);
    else if (!strcmp(red, "mean")) loss = kiln_div(g, kiln_reduce_sum(g, loss, NULL, 0, false), kiln_reduce_sum(g, wsel, NULL, 0, false));
    return ox_set(im, n, 0, loss, NULL);
}

static kiln_status op_nll(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *t = ox_in(im, n, 1);
    if (!t) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs input and target");
    return nll(im, n, ox_node(im, x), x->shape, t, ox_in(im, n, 2));
}

static kiln_status op_sce(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *t = ox_in(im, n, 1);
    if (!t) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs scores and labels");
    int p[KILN_MAX_DIMS];
    kiln_node *xn = ox_node_any(im, x, p);
    if (!xn || x->shape.rank < 2) return xn ? ox_fail(im, KILN_SHAPE_MISMATCH, "scores must be [N, C, ...]") : ox_graph_fail(im);
    kiln_node *lp = kiln_log_softmax(ox_graph(im), xn, ox_perm_find(p, x->shape.rank, 1));
    if (ox_has_out(n, 1)) {
        kiln_status st = ox_set(im, n, 1, lp, p);
        if (st) return st;
    }
    int t_[KILN_MAX_DIMS];
    bool same = true;
    for (int i = 0; i < x->shape.rank; i++) { t_[i] = ox_perm_find(p, x->shape.rank, i); same &= t_[i] == i; }
    if (!same) lp = kiln_transpose(ox_graph(im), lp, t_);         /* the logical layout for the loss */
    return nll(im, n, lp, x->shape, t, ox_in(im, n, 2));
}

/* 1 at the first maximum along axis, 0 elsewhere. */
static kiln_status op_hardmax(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank;
    if (ox_opset(im) < 13) return ox_fail(im, KILN_UNSUPPORTED, "Hardmax before opset 13 (over a flattened 2-D view)");
    int a = ox_axis(im, ox_attr_int(n, "axis", -1), r, "attribute 'axis'");
    if (a < 0) return ox_status(im);
    kiln_graph *g = ox_graph(im);
    kiln_node *xn = ox_node(im, x);
    if (!xn) return ox_graph_fail(im);
    kiln_shape ks = x->shape;
    ks.dim[a] = 1;
    kiln_node *idx = kiln_reshape(g, kiln_argmax(g, xn, a), ks);
    return ox_set(im, n, 0, kiln_cast(g, kiln_equal(g, idx, arange_on(im, x->shape.dim[a], r, a)), x->dtype), NULL);
}

const ox_op ox_ops_loss[] = {
    { "NegativeLogLikelihoodLoss", op_nll, "ignore_index,reduction", OX_FLOAT },
    { "SoftmaxCrossEntropyLoss", op_sce, "ignore_index,reduction", OX_FLOAT },
    { "Hardmax", op_hardmax, "axis", OX_FLOAT },
    { NULL },
};
