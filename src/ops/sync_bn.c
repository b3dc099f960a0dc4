/* Synchronised batch norm (TF's SyncBatchNormalization, PyTorch's SyncBatchNorm): in training the
 * batch mean and variance are those of the global batch over the data-parallel replicas.
 *   stats = CrossReplicaSum(BatchNormStats(x))      per-channel sum, sum of squares, row count
 *   y     = SyncBatchNorm(x, gamma, beta, moving_mean, moving_var, stats)
 * Autodiff does the rest: the gradient of CrossReplicaSum is CrossReplicaSum of its upstream
 * gradient, so the backward pass all-reduces d(stats) too (the "matching terms"), and each
 * replica's dx is that of the global batch. Alone (no hook, one replica) it is batch norm over
 * the local batch. Statistics are f64 whatever x's dtype (sums of squares lose little). */
#include <math.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

static kiln_status check_x(kiln_node *n, kiln_node *x) {
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "x '%s' is %s; a float dtype is needed", x->name, kiln_dtype_name(x->dtype));
    if (x->shape.rank < 2)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x '%s' has rank %d; rank >= 2 needed (channels last)", x->name, x->shape.rank);
    return KILN_OK;
}
static int64_t channels(const kiln_node *x) { return x->shape.dim[x->shape.rank - 1]; }

static kiln_status check_stats(kiln_node *n, kiln_node *x, kiln_node *st) {
    int64_t C = channels(x);
    if (st->dtype != KILN_F64 || st->shape.rank != 1 || st->shape.dim[0] != 2 * C + 1)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "stats '%s' must be f64 [%lld] (2 x %lld channels + the row count), got %s of %lld "
                               "elements", st->name, (long long)(2 * C + 1), (long long)C, kiln_dtype_name(st->dtype),
                               (long long)kiln_shape_numel(st->shape));
    return KILN_OK;
}

static kiln_status check_param(kiln_node *n, kiln_node *x, kiln_node *p, const char *what) {
    if (p->shape.rank != 1 || p->shape.dim[0] != channels(x) || p->dtype != x->dtype)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s '%s' must be %s [%lld] (x's dtype, its last dim)", what, p->name,
                               kiln_dtype_name(x->dtype), (long long)channels(x));
    return KILN_OK;
}

/* ---- CrossReplicaSum ---- */
static kiln_status crs_infer(kiln_node *n) {
    kiln_node *x = n->in[0];
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "'%s' is %s; replicas sum float tensors", x->name, kiln_dtype_name(x->dtype));
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}
static kiln_status crs_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    (void)n;
    dx[0] = kiln_node_new(g, KILN_OP_CROSS_REPLICA_SUM, &dy, 1, NULL);
    return dx[0] ? KILN_OK : kiln_graph_status(g);
}
const kiln_op_def kiln_opdef_cross_replica_sum = { "CrossReplicaSum", 1, 1, 0, crs_infer, crs_grad, kiln_ref_cross_replica_sum, NULL };

/* ---- BatchNormStats / BatchNormStatsGrad ---- */
static kiln_status stats_infer(kiln_node *n) {
    kiln_status s = check_x(n, n->in[0]);
    if (s) return s;
    n->dtype = KILN_F64;
    int64_t d = 2 * channels(n->in[0]) + 1;
    n->shape = kiln_shape_make(&d, 1);
    return KILN_OK;
}
static kiln_status stats_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    dx[0] = kiln_node_new(g, KILN_OP_BN_STATS_GRAD, (kiln_node *[]){ n->in[0], dy }, 2, NULL);
    return dx[0] ? KILN_OK : kiln_graph_status(g);
}
const kiln_op_def kiln_opdef_bn_stats = { "BatchNormStats", 1, 1, 0, stats_infer, stats_grad, kiln_ref_bn_stats, NULL };

static kiln_status stats_grad_infer(kiln_node *n) {
    kiln_status s;
    if ((s = check_x(n, n->in[0])) || (s = check_stats(n, n->in[0], n->in[1]))) return s;
    n->dtype = n->in[0]->dtype;
    n->shape = n->in[0]->shape;
    return KILN_OK;
}
const kiln_op_def kiln_opdef_bn_stats_grad = { "BatchNormStatsGrad", 2, 2, KILN_OPF_NO_GRAD, stats_grad_infer, NULL, kiln_ref_bn_stats_grad, NULL };

/* ---- SyncBatchNorm / SyncBatchNormGrad ---- */
static kiln_status sync_infer(kiln_node *n) {
    static const char *what[5] = { "x", "gamma", "beta", "moving_mean", "moving_var" };
    kiln_node *x = n->in[0];
    kiln_status s;
    if ((s = check_x(n, x)) || (s = check_stats(n, x, n->in[5]))) return s;
    for (int i = 1; i < 5; i++)
        if ((s = check_param(n, x, n->in[i], what[i]))) return s;
    for (int i = 3; i < 5; i++)
        if (n->in[i]->op != KILN_OP_VARIABLE)
            return kiln_node_error(n, KILN_INVALID_ARGUMENT, "%s '%s' must be a variable (it is updated each run)", what[i], n->in[i]->name);
    if (!(n->attrs.epsilon > 0) || !isfinite(n->attrs.epsilon) || !(n->attrs.momentum >= 0 && n->attrs.momentum <= 1))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "epsilon must be > 0 and momentum in [0, 1], got %g and %g", n->attrs.epsilon, n->attrs.momentum);
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}
static kiln_node *sync_grad_node(kiln_graph *g, kiln_node *n, kiln_node *dy, int mode) {
    kiln_attrs a = { 0 };
    a.epsilon = n->attrs.epsilon;
    a.axis = mode;
    return kiln_node_new(g, KILN_OP_BN_SYNC_GRAD, (kiln_node *[]){ n->in[0], n->in[1], dy, n->in[5] }, 4, &a);
}
static kiln_status sync_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    dx[0] = sync_grad_node(g, n, dy, 0);
    dx[1] = sync_grad_node(g, n, dy, 1);
    dx[2] = kiln_sum_to(g, dy, n->in[2]->shape);
    dx[3] = dx[4] = NULL;        /* moving statistics are not trained */
    dx[5] = sync_grad_node(g, n, dy, 2);
    return dx[0] && dx[1] && dx[2] && dx[5] ? KILN_OK : (kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL);
}
const kiln_op_def kiln_opdef_bn_sync = { "SyncBatchNorm", 6, 6, KILN_OPF_MUTATES, sync_infer, sync_grad, kiln_ref_bn_sync, NULL };

static kiln_status sync_grad_infer(kiln_node *n) {
    kiln_node *x = n->in[0], *dy = n->in[2];
    kiln_status s;
    if ((s = check_x(n, x)) || (s = check_param(n, x, n->in[1], "gamma")) || (s = check_stats(n, x, n->in[3]))) return s;
    if (dy->dtype != x->dtype || !kiln_shape_equal(dy->shape, x->shape))
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "dy '%s' must have x's dtype and shape", dy->name);
    int mode = n->attrs.axis;
    if (mode < 0 || mode > 2) return kiln_node_error(n, KILN_INVALID_ARGUMENT, "mode (axis) %d: 0 dx, 1 dgamma, 2 dstats", mode);
    n->dtype = mode == 2 ? KILN_F64 : x->dtype;
    n->shape = mode == 0 ? x->shape : mode == 1 ? n->in[1]->shape : n->in[3]->shape;
    return KILN_OK;
}
const kiln_op_def kiln_opdef_bn_sync_grad = { "SyncBatchNormGrad", 4, 4, KILN_OPF_NO_GRAD, sync_grad_infer, NULL, kiln_ref_bn_sync_grad, NULL };

kiln_node *kiln_sync_batch_norm(kiln_graph *g, kiln_node *x, kiln_node *gamma, kiln_node *beta, kiln_node *moving_mean,
                                kiln_node *moving_var, double momentum, double epsilon) {
    kiln_node *stats = kiln_node_new(g, KILN_OP_BN_STATS, &x, 1, NULL);
    kiln_node *global = stats ? kiln_node_new(g, KILN_OP_CROSS_REPLICA_SUM, &stats, 1, NULL) : NULL;
    if (!global) return NULL;
    kiln_attrs a = { 0 };
    a.momentum = momentum;
    a.epsilon = epsilon;
    a.training = true;
    return kiln_node_new(g, KILN_OP_BN_SYNC, (kiln_node *[]){ x, gamma, beta, moving_mean, moving_var, global }, 6, &a);
}
