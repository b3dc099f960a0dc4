/* Ref kernels: Embedding (+ its scatter-add gradient) and LayerNorm (+ gradients). Statistics and
 * sums in double over kiln_load/kiln_store, so every dtype works. */
#include <math.h>
#include "ops/ref_kernels.h"

static int64_t load_id(const kiln_view *v, int64_t i) {
    return v->dtype == KILN_I64 ? ((const int64_t *)v->data)[i] : (int64_t)((const int32_t *)v->data)[i];
}

/* Every id in [0, V), or the data error naming the first bad one. */
static kiln_status check_ids(const kiln_kctx *c, const kiln_view *ids, int64_t V) {
    for (int64_t p = 0; p < ids->numel; p++) {
        int64_t id = load_id(ids, p);
        if (id < 0 || id >= V) {
            char b[96];
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s (%s): token id %lld at position %lld of ids %s is outside [0, %lld) (vocabulary size %lld)",
                                  c->node->name, kiln_op_get(c->node->op)->name, (long long)id, (long long)p,
                                  kiln_shape_str(ids->shape, b, sizeof b), (long long)V, (long long)V);
        }
    }
    return KILN_OK;
}

kiln_status kiln_ref_embedding(const kiln_kctx *c) {
    const kiln_view *t = &c->in[0], *ids = &c->in[1];
    int64_t V = t->shape.dim[0], D = t->shape.dim[1];
    kiln_status s = check_ids(c, ids, V);
    if (s) return s;
    for (int64_t p = 0; p < ids->numel; p++) {
        int64_t id = load_id(ids, p);
        for (int64_t d = 0; d < D; d++)
            kiln_store(c->out.data, c->out.dtype, p * D + d, kiln_load(t->data, t->dtype, id * D + d));
    }
    return KILN_OK;
}

/* dtable[id] += dy[p] for each position p in order (every backend sums in this order). */
kiln_status kiln_ref_embedding_grad(const kiln_kctx *c) {
    const kiln_view *ids = &c->in[0], *dy = &c->in[1];
    int64_t V = c->out.shape.dim[0], D = c->out.shape.dim[1];
    kiln_status s = check_ids(c, ids, V);
    if (s) return s;
    for (int64_t i = 0; i < c->out.numel; i++) kiln_store(c->out.data, c->out.dtype, i, 0.0);
    for (int64_t p = 0; p < ids->numel; p++) {
        int64_t id = load_id(ids, p);
        for (int64_t d = 0; d < D; d++) {
            int64_t o = id * D + d;
            kiln_store(c->out.data, c->out.dtype, o, kiln_load(c->out.data, c->out.dtype, o) + kiln_load(dy->data, dy->dtype, p * D + d));
        }
    }
    return KILN_OK;
}

/* Row r's mean and 1/sqrt(biased variance + eps), two passes in double. */
static void row_stats(const kiln_view *x, int64_t r, int64_t D, double eps, double *mean, double *rstd) {
    double m = 0.0, v = 0.0;
    for (int64_t d = 0; d < D; d++) m += kiln_load(x->data, x->dtype, r * D + d);
    m = D > 0 ? m / (double)D : 0.0;
    for (int64_t d = 0; d < D; d++) {
        double e = kiln_load(x->data, x->dtype, r * D + d) - m;
        v += e * e;
    }
    v = D > 0 ? v / (double)D : 0.0;
    *mean = m;
    *rstd = 1.0 / sqrt(v + eps);
}

static int64_t last_dim(const kiln_view *x) { return x->shape.rank > 0 ? x->shape.dim[x->shape.rank - 1] : 1; }

kiln_status kiln_ref_layer_norm(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *ga = &c->in[1], *be = &c->in[2];
    int64_t D = last_dim(x), R = D > 0 ? x->numel / D : 0;
    double eps = c->node->attrs.epsilon;
    for (int64_t r = 0; r < R; r++) {
        double m, rs;
        row_stats(x, r, D, eps, &m, &rs);
        for (int64_t d = 0; d < D; d++) {
            double xh = (kiln_load(x->data, x->dtype, r * D + d) - m) * rs;
            kiln_store(c->out.data, c->out.dtype, r * D + d,
                       xh * kiln_load(ga->data, ga->dtype, d) + kiln_load(be->data, be->dtype, d));
        }
    }
    return KILN_OK;
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma. */
kiln_status kiln_ref_layer_norm_grad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *ga = &c->in[1], *dy = &c->in[2];
    int64_t D = last_dim(x), R = D > 0 ? x->numel / D : 0;
    double eps = c->node->attrs.epsilon;
    for (int64_t r = 0; r < R; r++) {
        double m, rs, sg = 0.0, sgx = 0.0;
        row_stats(x, r, D, eps, &m, &rs);
        for (int64_t d = 0; d < D; d++) {
            double g = kiln_load(dy->data, dy->dtype, r * D + d) * kiln_load(ga->data, ga->dtype, d);
            sg += g;
            sgx += g * (kiln_load(x->data, x->dtype, r * D + d) - m) * rs;
        }
        sg /= (double)D;
        sgx /= (double)D;
        for (int64_t d = 0; d < D; d++) {
            double g = kiln_load(dy->data, dy->dtype, r * D + d) * kiln_load(ga->data, ga->dtype, d);
            double xh = (kiln_load(x->data, x->dtype, r * D + d) - m) * rs;
            kiln_store(c->out.data, c->out.dtype, r * D + d, rs * (g - sg - xh * sgx));
        }
    }
    return KILN_OK;
}

kiln_status kiln_ref_layer_norm_gamma_grad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *dy = &c->in[1];
    int64_t D = last_dim(x), R = D > 0 ? x->numel / D : 0;
    double eps = c->node->attrs.epsilon;
    for (int64_t d = 0; d < D; d++) kiln_store(c->out.data, c->out.dtype, d, 0.0);
    for (int64_t r = 0; r < R; r++) {   /* summed row by row in the output dtype */
        double m, rs;
        row_stats(x, r, D, eps, &m, &rs);
        for (int64_t d = 0; d < D; d++) {
            double t = kiln_load(dy->data, dy->dtype, r * D + d) * (kiln_load(x->data, x->dtype, r * D + d) - m) * rs;
            kiln_store(c->out.data, c->out.dtype, d, kiln_load(c->out.data, c->out.dtype, d) + t);
        }
    }
    return KILN_OK;
}
