/* Normalisation and regularisation ops: FusedBatchNorm (+ its gradient ops) and Dropout. */
#include <math.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

static const char *shp(kiln_shape s, char *buf) { return kiln_shape_str(s, buf, 96); }

/* gamma/beta/moving statistics: [C] with x's dtype (C = x's last dim). */
static kiln_status check_channel_param(kiln_node *n, int i, const char *what) {
    kiln_node *x = n->in[0], *p = n->in[i];
    int64_t C = x->shape.dim[x->shape.rank - 1];
    char b1[96], b2[96];
    if (p->shape.rank != 1 || p->shape.dim[0] != C)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s '%s' has shape %s, expected [%lld] (the channels, last dim of x %s)",
                               what, p->name, shp(p->shape, b1), (long long)C, shp(x->shape, b2));
    if (p->dtype != x->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "%s '%s' is %s but x is %s (cast one of them)",
                               what, p->name, kiln_dtype_name(p->dtype), kiln_dtype_name(x->dtype));
    return KILN_OK;
}

static kiln_status check_float_x(kiln_node *n, kiln_node *x, int min_rank) {
    char b[96];
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "x '%s' is %s; a float dtype is needed", x->name, kiln_dtype_name(x->dtype));
    if (x->shape.rank < min_rank)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x '%s' has shape %s; rank >= %d needed (channels last)", x->name, shp(x->shape, b), min_rank);
    return KILN_OK;
}

static kiln_status check_epsilon(kiln_node *n) {
    double e = n->attrs.epsilon;
    if (!(e > 0.0) || !isfinite(e))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "epsilon must be a positive finite number, got %g", e);
    return KILN_OK;
}

/* ---- FusedBatchNorm ---- */
static kiln_status batch_norm_infer(kiln_node *n) {
    static const char *what[5] = { "x", "gamma", "beta", "moving_mean", "moving_var" };
    kiln_status s;
    if ((s = check_float_x(n, n->in[0], 2)) || (s = check_epsilon(n))) return s;
    for (int i = 1; i < 5; i++)
        if ((s = check_channel_param(n, i, what[i]))) return s;
    double m = n->attrs.momentum;
    if (!(m >= 0.0 && m <= 1.0))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "momentum must be in [0, 1] (Keras default 0.99), got %g", m);
    /* training writes the moving statistics back: they must be state, not computed values */
    if (n->attrs.training)
        for (int i = 3; i < 5; i++)
            if (n->in[i]->op != KILN_OP_VARIABLE)
                return kiln_node_error(n, KILN_INVALID_ARGUMENT, "%s '%s' must be a variable in training mode (it is updated each run), but is a %s",
                                       what[i], n->in[i]->name, kiln_op_get(n->in[i]->op)->name);
    n->dtype = n->in[0]->dtype;
    n->shape = n->in[0]->shape;
    return KILN_OK;
}

static kiln_status batch_norm_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *x = n->in[0], *gamma = n->in[1];
    kiln_shape cs = gamma->shape;
    kiln_attrs a = { 0 };
    a.epsilon = n->attrs.epsilon;
    if (n->attrs.training) {
        dx[0] = kiln_node_new(g, KILN_OP_BATCH_NORM_GRAD, (kiln_node *[]){ x, gamma, dy }, 3, &a);
        dx[1] = kiln_node_new(g, KILN_OP_BN_GRAD_GAMMA, (kiln_node *[]){ x, dy }, 2, &a);
    } else {
        /* moving statistics are constants here: y = (x - mean) * gamma * rstd + beta */
        kiln_node *rstd = kiln_rsqrt(g, kiln_add(g, n->in[4], kiln_scalar_like(g, n->in[4], a.epsilon)));
        dx[0] = kiln_mul(g, dy, kiln_mul(g, gamma, rstd));
        dx[1] = kiln_sum_to(g, kiln_mul(g, dy, kiln_mul(g, kiln_sub(g, x, n->in[3]), rstd)), cs);
    }
    dx[2] = kiln_sum_to(g, dy, cs);
    dx[3] = dx[4] = NULL;        /* moving statistics are not trained */
    return (dx[0] && dx[1] && dx[2]) ? KILN_OK : (kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL);
}

const kiln_op_def kiln_opdef_batch_norm = {
    "FusedBatchNorm", 5, 5, KILN_OPF_MUTATES, batch_norm_infer, batch_norm_grad, kiln_ref_batch_norm, NULL
};

/* ---- FusedBatchNormGrad (x, gamma, dy) -> dx ---- */
static kiln_status batch_norm_grad_infer(kiln_node *n) {
    kiln_status s;
    char b1[96], b2[96];
    if ((s = check_float_x(n, n->in[0], 1)) || (s = check_epsilon(n)) || (s = check_channel_param(n, 1, "gamma"))) return s;
    kiln_node *x = n->in[0], *dy = n->in[2];
    if (!kiln_shape_equal(x->shape, dy->shape) || dy->dtype != x->dtype)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "dy is %s %s but x is %s %s", kiln_dtype_name(dy->dtype), shp(dy->shape, b1),
                               kiln_dtype_name(x->dtype), shp(x->shape, b2));
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}

const kiln_op_def kiln_opdef_batch_norm_grad = {
    "FusedBatchNormGrad", 3, 3, KILN_OPF_NO_GRAD, batch_norm_grad_infer, NULL, kiln_ref_batch_norm_grad, NULL
};

/* ---- BatchNormGammaGrad (x, dy) -> dgamma [C] ---- */
static kiln_status bn_grad_gamma_infer(kiln_node *n) {
    kiln_status s;
    char b1[96], b2[96];
    if ((s = check_float_x(n, n->in[0], 1)) || (s = check_epsilon(n))) return s;
    kiln_node *x = n->in[0], *dy = n->in[1];
    if (!kiln_shape_equal(x->shape, dy->shape) || dy->dtype != x->dtype)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "dy is %s %s but x is %s %s", kiln_dtype_name(dy->dtype), shp(dy->shape, b1),
                               kiln_dtype_name(x->dtype), shp(x->shape, b2));
    n->dtype = x->dtype;
    n->shape = kiln_shape_make(&x->shape.dim[x->shape.rank - 1], 1);
    return KILN_OK;
}

const kiln_op_def kiln_opdef_bn_grad_gamma = {
    "BatchNormGammaGrad", 2, 2, KILN_OPF_NO_GRAD, bn_grad_gamma_infer, NULL, kiln_ref_bn_grad_gamma, NULL
};

kiln_node *kiln_batch_norm(kiln_graph *g, kiln_node *x, kiln_node *gamma, kiln_node *beta,
                           kiln_node *moving_mean, kiln_node *moving_var, double momentum,
                           double epsilon, bool training) {
    kiln_attrs a = { 0 };
    a.momentum = momentum;
    a.epsilon = epsilon;
    a.training = training;
    return kiln_node_new(g, KILN_OP_BATCH_NORM, (kiln_node *[]){ x, gamma, beta, moving_mean, moving_var }, 5, &a);
}

/* ---- Dropout / DropoutGrad ---- */
static kiln_status dropout_infer(kiln_node *n) {
    kiln_node *x = n->in[0];
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input '%s' is %s; a float dtype is needed", x->name, kiln_dtype_name(x->dtype));
    if (!(n->attrs.rate >= 0.0 && n->attrs.rate < 1.0))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "rate must be in [0, 1), got %g", n->attrs.rate);
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}

/* The gradient applies the forward's own mask: same attrs (seed already mixed with its id). */
static kiln_status dropout_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    dx[0] = kiln_node_new(g, KILN_OP_DROPOUT_GRAD, &dy, 1, &n->attrs);
    return dx[0] ? KILN_OK : kiln_graph_status(g);
}

const kiln_op_def kiln_opdef_dropout = {
    "Dropout", 1, 1, KILN_OPF_INPLACE0, dropout_infer, dropout_grad, kiln_ref_dropout, NULL
};
const kiln_op_def kiln_opdef_dropout_grad = {
    "DropoutGrad", 1, 1, KILN_OPF_NO_GRAD | KILN_OPF_INPLACE0, dropout_infer, NULL, kiln_ref_dropout_grad, NULL
};

kiln_node *kiln_dropout(kiln_graph *g, kiln_node *x, double rate, uint64_t seed, bool training) {
    if (!g || !x) return NULL;
    if (!(rate >= 0.0 && rate < 1.0)) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_dropout on '%s': rate must be in [0, 1), got %g", x->name, rate);
        return NULL;
    }
    if (!training || rate == 0.0) return kiln_identity(g, x);
    kiln_attrs a = { 0 };
    a.rate = rate;
    a.training = true;
    kiln_node *n = kiln_node_new(g, KILN_OP_DROPOUT, &x, 1, &a);
    /* mix in the node id so two dropout layers built with the same seed draw different masks */
    if (n) n->attrs.seed = kiln_mix64(kiln_mix64(seed) ^ ((uint64_t)n->id * 0x9E3779B97F4A7C15ull));
    return n;
}

/* ---- RandomNormal: noise like x (x only gives the shape and dtype) ---- */
static kiln_status random_normal_infer(kiln_node *n) {
    kiln_node *x = n->in[0];
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input '%s' is %s; a float dtype is needed", x->name, kiln_dtype_name(x->dtype));
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}

/* A source of noise: x only gives the shape, so no gradient flows to it (dx stays NULL), and a
 * path through the noise to a variable is no error (as for x + noise). */
static kiln_status random_normal_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    (void)g; (void)n; (void)dy; (void)dx;
    return KILN_OK;
}

const kiln_op_def kiln_opdef_random_normal = {
    "RandomNormal", 1, 1, 0, random_normal_infer, random_normal_grad, kiln_ref_random_normal, NULL
};

kiln_node *kiln_random_normal_like(kiln_graph *g, kiln_node *x, uint64_t seed) {
    if (!g || !x) return NULL;
    kiln_node *n = kiln_node_new(g, KILN_OP_RANDOM_NORMAL, &x, 1, NULL);
    /* as Dropout: two noise nodes built with one seed draw different values */
    if (n) n->attrs.seed = kiln_mix64(kiln_mix64(seed) ^ ((uint64_t)n->id * 0x9E3779B97F4A7C15ull));
    return n;
}
