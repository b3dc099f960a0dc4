/* Ops of transformer layers: Embedding (a gather of table rows by integer ids, with its
 * scatter-add gradient) and LayerNorm over the last axis (fused forward; its gradient recomputes
 * each row's statistics, as batch norm's does, so nothing but x is kept for the backward pass).
 * Semantics: src/ops/SEMANTICS.md. Attention is in attention.c. */
#include <math.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

static const char *shp(kiln_shape s, char *buf) { return kiln_shape_str(s, buf, 96); }
static bool is_id_dtype(kiln_dtype t) { return t == KILN_I32 || t == KILN_I64; }

static kiln_status built(kiln_graph *g, kiln_node *const *dx, int n) {
    for (int i = 0; i < n; i++)
        if (!dx[i]) {
            kiln_status s = kiln_graph_status(g);
            return s ? s : KILN_INTERNAL;
        }
    return KILN_OK;
}

/* ---- Embedding: table [V, D] float, ids [...] i32/i64 -> [..., D] ---- */
static kiln_status check_ids(kiln_node *n, kiln_node *ids) {
    char b[96];
    if (!is_id_dtype(ids->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "ids '%s' are %s; token ids must be i32 or i64", ids->name, kiln_dtype_name(ids->dtype));
    if (ids->shape.rank >= KILN_MAX_DIMS)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "ids '%s' have shape %s; at most %d dims (one more is added for the embedding)",
                               ids->name, shp(ids->shape, b), KILN_MAX_DIMS - 1);
    return KILN_OK;
}

static kiln_shape ids_plus(kiln_shape ids, int64_t D) {
    kiln_shape s = ids;
    s.dim[s.rank++] = D;
    return s;
}

static kiln_status embedding_infer(kiln_node *n) {
    kiln_node *t = n->in[0], *ids = n->in[1];
    char b[96];
    if (!kiln_dtype_is_float(t->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "table '%s' is %s; a float dtype is needed", t->name, kiln_dtype_name(t->dtype));
    if (t->shape.rank != 2)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "table '%s' has shape %s; expected [vocabulary, dim]", t->name, shp(t->shape, b));
    kiln_status s = check_ids(n, ids);
    if (s) return s;
    n->dtype = t->dtype;
    n->shape = ids_plus(ids->shape, t->shape.dim[1]);
    return KILN_OK;
}

static kiln_status embedding_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_attrs a = { 0 };
    a.shape = n->in[0]->shape;
    dx[0] = kiln_node_new(g, KILN_OP_EMBEDDING_GRAD, (kiln_node *[]){ n->in[1], dy }, 2, &a);
    dx[1] = NULL;
    return built(g, dx, 1);
}

const kiln_op_def kiln_opdef_embedding = {
    "Embedding", 2, 2, 0, embedding_infer, embedding_grad, kiln_ref_embedding, NULL
};

/* ---- EmbeddingGrad: (ids, dy [..., D]) -> dtable attrs.shape [V, D]: rows summed per id ---- */
static kiln_status embedding_grad_infer(kiln_node *n) {
    kiln_node *ids = n->in[0], *dy = n->in[1];
    kiln_shape ts = n->attrs.shape;
    char b1[96], b2[96];
    kiln_status s = check_ids(n, ids);
    if (s) return s;
    if (ts.rank != 2 || ts.dim[0] < 1 || ts.dim[1] < 0)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "table shape %s must be [vocabulary >= 1, dim]", shp(ts, b1));
    if (!kiln_dtype_is_float(dy->dtype) || !kiln_shape_equal(dy->shape, ids_plus(ids->shape, ts.dim[1])))
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "dy '%s' is %s %s; expected a float [ids..., %lld] (ids '%s' are %s)", dy->name,
                               kiln_dtype_name(dy->dtype), shp(dy->shape, b1), (long long)ts.dim[1], ids->name, shp(ids->shape, b2));
    n->dtype = dy->dtype;
    n->shape = ts;
    return KILN_OK;
}

const kiln_op_def kiln_opdef_embedding_grad = {
    "EmbeddingGrad", 2, 2, KILN_OPF_NO_GRAD, embedding_grad_infer, NULL, kiln_ref_embedding_grad, NULL
};

kiln_node *kiln_embedding_lookup(kiln_graph *g, kiln_node *table, kiln_node *ids) {
    return kiln_node_new(g, KILN_OP_EMBEDDING, (kiln_node *[]){ table, ids }, 2, NULL);
}

/* ---- LayerNorm: (x [..., D], gamma [D], beta [D]) attrs.epsilon -> y ---- */
static kiln_status check_epsilon(kiln_node *n) {
    double e = n->attrs.epsilon;
    if (!(e > 0.0) || !isfinite(e))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "epsilon must be a positive finite number, got %g", e);
    return KILN_OK;
}

static kiln_status check_x_like(kiln_node *n, int i, const char *what) {
    kiln_node *x = n->in[0], *o = n->in[i];
    char b1[96], b2[96];
    if (!kiln_shape_equal(o->shape, x->shape) || o->dtype != x->dtype)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s '%s' is %s %s but x '%s' is %s %s", what, o->name, kiln_dtype_name(o->dtype),
                               shp(o->shape, b1), x->name, kiln_dtype_name(x->dtype), shp(x->shape, b2));
    return KILN_OK;
}

static kiln_status check_ln_x(kiln_node *n) {
    kiln_node *x = n->in[0];
    char b[96];
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "x '%s' is %s; a float dtype is needed", x->name, kiln_dtype_name(x->dtype));
    if (x->shape.rank < 1)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x '%s' has shape %s; normalised over its last axis, so rank >= 1 is needed",
                               x->name, shp(x->shape, b));
    return check_epsilon(n);
}

static kiln_status check_feature_param(kiln_node *n, int i, const char *what) {
    kiln_node *x = n->in[0], *p = n->in[i];
    int64_t D = x->shape.dim[x->shape.rank - 1];
    char b1[96], b2[96];
    if (p->shape.rank != 1 || p->shape.dim[0] != D)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s '%s' has shape %s, expected [%lld] (the last axis of x '%s' %s)",
                               what, p->name, shp(p->shape, b1), (long long)D, x->name, shp(x->shape, b2));
    if (p->dtype != x->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "%s '%s' is %s but x '%s' is %s (cast one of them)", what, p->name,
                               kiln_dtype_name(p->dtype), x->name, kiln_dtype_name(x->dtype));
    return KILN_OK;
}

static kiln_status layer_norm_infer(kiln_node *n) {
    kiln_status s;
    if ((s = check_ln_x(n)) || (s = check_feature_param(n, 1, "gamma")) || (s = check_feature_param(n, 2, "beta"))) return s;
    n->dtype = n->in[0]->dtype;
    n->shape = n->in[0]->shape;
    return KILN_OK;
}

static kiln_status layer_norm_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *x = n->in[0], *gamma = n->in[1];
    kiln_attrs a = { 0 };
    a.epsilon = n->attrs.epsilon;
    dx[0] = kiln_node_new(g, KILN_OP_LAYER_NORM_GRAD, (kiln_node *[]){ x, gamma, dy }, 3, &a);
    dx[1] = kiln_node_new(g, KILN_OP_LAYER_NORM_GAMMA_GRAD, (kiln_node *[]){ x, dy }, 2, &a);
    dx[2] = kiln_sum_to(g, dy, gamma->shape);
    return built(g, dx, 3);
}

const kiln_op_def kiln_opdef_layer_norm = {
    "LayerNorm", 3, 3, 0, layer_norm_infer, layer_norm_grad, kiln_ref_layer_norm, NULL
};

/* ---- LayerNormGrad: (x, gamma, dy) -> dx ---- */
static kiln_status layer_norm_grad_infer(kiln_node *n) {
    kiln_status s;
    if ((s = check_ln_x(n)) || (s = check_feature_param(n, 1, "gamma")) || (s = check_x_like(n, 2, "dy"))) return s;
    n->dtype = n->in[0]->dtype;
    n->shape = n->in[0]->shape;
    return KILN_OK;
}

const kiln_op_def kiln_opdef_layer_norm_grad = {
    "LayerNormGrad", 3, 3, KILN_OPF_NO_GRAD, layer_norm_grad_infer, NULL, kiln_ref_layer_norm_grad, NULL
};

/* ---- LayerNormGammaGrad: (x, dy) -> dgamma [D] = sum over rows of dy * xhat ---- */
static kiln_status ln_gamma_grad_infer(kiln_node *n) {
    kiln_status s;
    if ((s = check_ln_x(n)) || (s = check_x_like(n, 1, "dy"))) return s;
    kiln_node *x = n->in[0];
    n->dtype = x->dtype;
    n->shape = kiln_shape_make(&x->shape.dim[x->shape.rank - 1], 1);
    return KILN_OK;
}

const kiln_op_def kiln_opdef_layer_norm_gamma_grad = {
    "LayerNormGammaGrad", 2, 2, KILN_OPF_NO_GRAD, ln_gamma_grad_infer, NULL, kiln_ref_layer_norm_gamma_grad, NULL
};

kiln_node *kiln_layer_norm(kiln_graph *g, kiln_node *x, kiln_node *gamma, kiln_node *beta, double epsilon) {
    kiln_attrs a = { 0 };
    a.epsilon = epsilon;
    return kiln_node_new(g, KILN_OP_LAYER_NORM, (kiln_node *[]){ x, gamma, beta }, 3, &a);
}
