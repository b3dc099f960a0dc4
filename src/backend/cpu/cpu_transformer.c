/* f32 kernels for Embedding, EmbeddingGrad and LayerNorm (+ its gradient ops). Row statistics in
 * double, two passes, as ref. The sums over rows (the embedding's scatter-add, LayerNorm's dgamma)
 * never depend on the thread count: EmbeddingGrad gives each thread a range of vocabulary rows
 * and adds positions in order (ref's order, so it equals ref bit for bit); dgamma adds partial
 * sums of a fixed number of row chunks in chunk order, as batch norm does. */
#include <stdio.h>
#include "backend/cpu/cpu_internal.h"

#define LN_CHUNKS 16

static int64_t ld_id(const kiln_view *v, int64_t i) {
    return v->dtype == KILN_I64 ? ((const int64_t *)v->data)[i] : (int64_t)((const int32_t *)v->data)[i];
}

static kiln_status check_ids(const kiln_kctx *c, const kiln_view *ids, int64_t V) {
    for (int64_t p = 0; p < ids->numel; p++) {
        int64_t id = ld_id(ids, p);
        if (id < 0 || id >= V) {
            char b[96];
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s (%s): token id %lld at position %lld of ids %s is outside [0, %lld) (vocabulary size %lld)",
                                  c->node->name, kiln_op_get(c->node->op)->name, (long long)id, (long long)p,
                                  kiln_shape_str(ids->shape, b, sizeof b), (long long)V, (long long)V);
        }
    }
    return KILN_OK;
}

static kiln_status k_embedding(const kiln_kctx *c) {
    const kiln_view *t = &c->in[0], *ids = &c->in[1];
    int64_t V = t->shape.dim[0], D = t->shape.dim[1], N = ids->numel;
    kiln_status s = check_ids(c, ids, V);
    if (s || D == 0) return s;
    const float *T = cpu_f(t);
    float *Y = cpu_f(&c->out);
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, N * D))
    for (int64_t p = 0; p < N; p++) memcpy(Y + p * D, T + ld_id(ids, p) * D, sizeof(float) * (size_t)D);
    return KILN_OK;
}

static kiln_status k_embedding_grad(const kiln_kctx *c) {
    const kiln_view *ids = &c->in[0];
    int64_t V = c->out.shape.dim[0], D = c->out.shape.dim[1], N = ids->numel;
    kiln_status s = check_ids(c, ids, V);
    if (s) return s;
    const float *G = cpu_f(&c->in[1]);
    float *Y = cpu_f(&c->out);
    int nt = cpu_par(c, (N + V) * D);
    #pragma omp parallel num_threads(nt)
    {
        int t = 0, T = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        T = omp_get_num_threads();
#endif
        int64_t v0 = V * t / T, v1 = V * (t + 1) / T;
        memset(Y + v0 * D, 0, sizeof(float) * (size_t)((v1 - v0) * D));
        for (int64_t p = 0; p < N; p++) {
            int64_t id = ld_id(ids, p);
            if (id < v0 || id >= v1) continue;
            float *y = Y + id * D;
            const float *g = G + p * D;
            #pragma omp simd
            for (int64_t d = 0; d < D; d++) y[d] += g[d];
        }
    }
    return KILN_OK;
}

static int64_t last_dim(const kiln_view *v) { return v->shape.rank > 0 ? v->shape.dim[v->shape.rank - 1] : 1; }

static void row_stats(const float *x, int64_t D, double eps, double *mean, double *rstd) {
    double m = 0.0, v = 0.0;
    for (int64_t d = 0; d < D; d++) m += x[d];
    m = D > 0 ? m / (double)D : 0.0;
    for (int64_t d = 0; d < D; d++) { double e = x[d] - m; v += e * e; }
    v = D > 0 ? v / (double)D : 0.0;
    *mean = m;
    *rstd = 1.0 / sqrt(v + eps);
}

static kiln_status k_layer_norm(const kiln_kctx *c) {
    const float *X = cpu_f(&c->in[0]), *Ga = cpu_f(&c->in[1]), *Be = cpu_f(&c->in[2]);
    float *Y = cpu_f(&c->out);
    int64_t D = last_dim(&c->in[0]), R = D > 0 ? c->in[0].numel / D : 0;
    double eps = c->node->attrs.epsilon;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, R * D))
    for (int64_t r = 0; r < R; r++) {
        double m, rs;
        row_stats(X + r * D, D, eps, &m, &rs);
        const float *x = X + r * D;
        float *y = Y + r * D;
        for (int64_t d = 0; d < D; d++) y[d] = (float)((x[d] - m) * rs * Ga[d] + Be[d]);
    }
    return KILN_OK;
}

static kiln_status k_layer_norm_grad(const kiln_kctx *c) {
    const float *X = cpu_f(&c->in[0]), *Ga = cpu_f(&c->in[1]), *G = cpu_f(&c->in[2]);
    float *Y = cpu_f(&c->out);
    int64_t D = last_dim(&c->in[0]), R = D > 0 ? c->in[0].numel / D : 0;
    double eps = c->node->attrs.epsilon;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, R * D))
    for (int64_t r = 0; r < R; r++) {
        const float *x = X + r * D, *dy = G + r * D;
        double m, rs, sg = 0.0, sgx = 0.0;
        row_stats(x, D, eps, &m, &rs);
        for (int64_t d = 0; d < D; d++) {
            double g = (double)dy[d] * Ga[d];
            sg += g;
            sgx += g * (x[d] - m) * rs;
        }
        sg /= (double)D;
        sgx /= (double)D;
        float *y = Y + r * D;
        for (int64_t d = 0; d < D; d++) {
            double g = (double)dy[d] * Ga[d];
            y[d] = (float)(rs * (g - sg - (x[d] - m) * rs * sgx));
        }
    }
    return KILN_OK;
}

static int64_t n_chunks(int64_t R) { return R < LN_CHUNKS ? (R > 0 ? R : 1) : LN_CHUNKS; }

static kiln_status k_layer_norm_gamma_grad(const kiln_kctx *c) {
    const float *X = cpu_f(&c->in[0]), *G = cpu_f(&c->in[1]);
    float *Y = cpu_f(&c->out);
    int64_t D = last_dim(&c->in[0]), R = D > 0 ? c->in[0].numel / D : 0, K = n_chunks(R);
    double eps = c->node->attrs.epsilon, *part = c->workspace;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, R * D))
    for (int64_t k = 0; k < K; k++) {
        double *p = part + k * D;
        memset(p, 0, sizeof(double) * (size_t)D);
        for (int64_t r = R * k / K; r < R * (k + 1) / K; r++) {
            const float *x = X + r * D, *dy = G + r * D;
            double m, rs;
            row_stats(x, D, eps, &m, &rs);
            for (int64_t d = 0; d < D; d++) p[d] += (double)dy[d] * (x[d] - m) * rs;
        }
    }
    for (int64_t d = 0; d < D; d++) {
        double s = 0.0;
        for (int64_t k = 0; k < K; k++) s += part[k * D + d];
        Y[d] = (float)s;
    }
    return KILN_OK;
}

kiln_kernel_fn cpu_transformer_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_EMBEDDING:
        return n->dtype == KILN_F32 && n->in[0]->dtype == KILN_F32 ? k_embedding : NULL;
    case KILN_OP_EMBEDDING_GRAD:
        return n->dtype == KILN_F32 && n->in[1]->dtype == KILN_F32 ? k_embedding_grad : NULL;
    case KILN_OP_LAYER_NORM: return cpu_is_f32(n) ? k_layer_norm : NULL;
    case KILN_OP_LAYER_NORM_GRAD: return cpu_is_f32(n) ? k_layer_norm_grad : NULL;
    case KILN_OP_LAYER_NORM_GAMMA_GRAD: return cpu_is_f32(n) ? k_layer_norm_gamma_grad : NULL;
    case KILN_OP_ATTENTION: case KILN_OP_ATTENTION_GRAD: return cpu_attention_kernel(n);
    default: return NULL;
    }
}

size_t cpu_transformer_workspace(const kiln_node *n) {
    if (n->op != KILN_OP_LAYER_NORM_GAMMA_GRAD) return 0;
    const kiln_shape *s = &n->in[0]->shape;
    return (size_t)LN_CHUNKS * (size_t)(s->rank > 0 ? s->dim[s->rank - 1] : 1) * sizeof(double);
}
