/* Batch norm (f32) over the last dim: M rows of C channels (NHWC images, or [N, C]). The
 * statistics are summed in double, two passes as the ref kernels do. Rows are split into a fixed
 * number of chunks (not one per thread) whose partial sums are added in chunk order, so results
 * do not depend on the thread count. Scratch (planned, see cpu_norm_workspace): the chunks'
 * partial sums, then mean, variance and two per-channel factors. */
#include "backend/cpu/cpu_internal.h"

#define BN_CHUNKS 16

static int64_t last_dim(const kiln_view *v) { return v->shape.rank > 0 ? v->shape.dim[v->shape.rank - 1] : 1; }
static int64_t n_chunks(int64_t M) { return M < BN_CHUNKS ? (M > 0 ? M : 1) : BN_CHUNKS; }

size_t cpu_norm_workspace(const kiln_node *n) {
    const kiln_shape *s = &n->in[0]->shape;
    int64_t C = s->rank > 0 ? s->dim[s->rank - 1] : 1;
    return (size_t)(2 * BN_CHUNKS + 4) * (size_t)C * sizeof(double);
}

typedef struct bn_ws { double *part, *mean, *var, *a, *b; } bn_ws;
static bn_ws ws_of(const kiln_kctx *c, int64_t C) {
    double *w = c->workspace;
    return (bn_ws){ w, w + 2 * BN_CHUNKS * C, w + (2 * BN_CHUNKS + 1) * C, w + (2 * BN_CHUNKS + 2) * C, w + (2 * BN_CHUNKS + 3) * C };
}

/* Per-channel sums over the rows: s1 = sum x (mean == NULL), or sum (x - mean)^2; with dy:
 * s1 = sum dy, s2 = sum dy * (x - mean) * rstd. Into out1 (and out2). */
static void channel_sums(const kiln_kctx *c, const float *x, const float *dy, int64_t M, int64_t C, const double *mean,
                         const double *rstd, double *part, double *out1, double *out2) {
    int64_t K = n_chunks(M);
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, M * C))
    for (int64_t k = 0; k < K; k++) {
        double *p1 = part + k * C, *p2 = part + (K + k) * C;
        memset(p1, 0, sizeof(double) * (size_t)C);
        if (dy) memset(p2, 0, sizeof(double) * (size_t)C);
        for (int64_t r = M * k / K; r < M * (k + 1) / K; r++) {
            const float *xr = x + r * C;
            if (dy) {
                const float *g = dy + r * C;
                for (int64_t ch = 0; ch < C; ch++) {
                    p1[ch] += g[ch];
                    p2[ch] += (double)g[ch] * ((double)xr[ch] - mean[ch]) * rstd[ch];
                }
            } else if (mean) {
                for (int64_t ch = 0; ch < C; ch++) { double d = (double)xr[ch] - mean[ch]; p1[ch] += d * d; }
            } else {
                for (int64_t ch = 0; ch < C; ch++) p1[ch] += xr[ch];
            }
        }
    }
    for (int64_t ch = 0; ch < C; ch++) {
        double s1 = 0, s2 = 0;
        for (int64_t k = 0; k < K; k++) { s1 += part[k * C + ch]; if (dy) s2 += part[(K + k) * C + ch]; }
        out1[ch] = s1;
        if (dy) out2[ch] = s2;
    }
}

/* Batch mean and biased variance. */
static void moments(const kiln_kctx *c, const float *x, int64_t M, int64_t C, bn_ws *w) {
    channel_sums(c, x, NULL, M, C, NULL, NULL, w->part, w->mean, NULL);
    for (int64_t ch = 0; ch < C; ch++) w->mean[ch] = M > 0 ? w->mean[ch] / (double)M : 0.0;
    channel_sums(c, x, NULL, M, C, w->mean, NULL, w->part, w->var, NULL);
    for (int64_t ch = 0; ch < C; ch++) w->var[ch] = M > 0 ? w->var[ch] / (double)M : 0.0;
}

/* out[r, ch] = (x - mean) * a + b per channel, rounded once to f32. */
static void normalise(const kiln_kctx *c, const float *x, float *out, int64_t M, int64_t C, const bn_ws *w) {
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, M * C))
    for (int64_t r = 0; r < M; r++) {
        const float *xr = x + r * C;
        float *o = out + r * C;
        for (int64_t ch = 0; ch < C; ch++) o[ch] = (float)(((double)xr[ch] - w->mean[ch]) * w->a[ch] + w->b[ch]);
    }
}

static kiln_status k_batch_norm(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const float *x = cpu_f(&c->in[0]), *gamma = cpu_f(&c->in[1]), *beta = cpu_f(&c->in[2]);
    float *mm = cpu_f(&c->in[3]), *mv = cpu_f(&c->in[4]);      /* MUTATES: the moving statistics */
    int64_t C = last_dim(&c->in[0]), M = c->in[0].numel / C;
    bn_ws w = ws_of(c, C);
    if (at->training) {
        moments(c, x, M, C, &w);
        for (int64_t ch = 0; ch < C; ch++) {      /* the variance is unbiased in the moving average (as TF, ref) */
            double unb = M > 1 ? w.var[ch] * (double)M / (double)(M - 1) : w.var[ch];
            mm[ch] = (float)(at->momentum * mm[ch] + (1.0 - at->momentum) * w.mean[ch]);
            mv[ch] = (float)(at->momentum * mv[ch] + (1.0 - at->momentum) * unb);
        }
    } else {
        for (int64_t ch = 0; ch < C; ch++) { w.mean[ch] = mm[ch]; w.var[ch] = mv[ch]; }
    }
    for (int64_t ch = 0; ch < C; ch++) { w.a[ch] = gamma[ch] / sqrt(w.var[ch] + at->epsilon); w.b[ch] = beta[ch]; }
    normalise(c, x, cpu_f(&c->out), M, C, &w);
    return KILN_OK;
}

/* dx = gamma * rstd / M * (M*dy - sum(dy) - xhat * sum(dy*xhat)) with the batch statistics. */
static kiln_status k_batch_norm_grad(const kiln_kctx *c) {
    const float *x = cpu_f(&c->in[0]), *gamma = cpu_f(&c->in[1]), *dy = cpu_f(&c->in[2]);
    float *dx = cpu_f(&c->out);
    int64_t C = last_dim(&c->in[0]), M = c->in[0].numel / C;
    bn_ws w = ws_of(c, C);
    moments(c, x, M, C, &w);
    for (int64_t ch = 0; ch < C; ch++) w.var[ch] = 1.0 / sqrt(w.var[ch] + c->node->attrs.epsilon);   /* now rstd */
    channel_sums(c, x, dy, M, C, w.mean, w.var, w.part, w.a, w.b);                                   /* a = sum dy, b = sum dy*xhat */
    const double *rstd = w.var, *sdy = w.a, *sdyx = w.b;
    double *k = w.part;                                          /* the partial sums are spent */
    for (int64_t ch = 0; ch < C; ch++) k[ch] = gamma[ch] * rstd[ch] / (double)M;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, M * C))
    for (int64_t r = 0; r < M; r++) {
        const float *xr = x + r * C, *g = dy + r * C;
        float *o = dx + r * C;
        for (int64_t ch = 0; ch < C; ch++) {
            double xh = ((double)xr[ch] - w.mean[ch]) * rstd[ch];
            o[ch] = (float)(k[ch] * ((double)M * g[ch] - sdy[ch] - xh * sdyx[ch]));
        }
    }
    return KILN_OK;
}

/* dgamma[ch] = sum over rows of dy * xhat. */
static kiln_status k_bn_grad_gamma(const kiln_kctx *c) {
    const float *x = cpu_f(&c->in[0]), *dy = cpu_f(&c->in[1]);
    float *out = cpu_f(&c->out);
    int64_t C = last_dim(&c->in[0]), M = c->in[0].numel / C;
    bn_ws w = ws_of(c, C);
    moments(c, x, M, C, &w);
    for (int64_t ch = 0; ch < C; ch++) w.var[ch] = 1.0 / sqrt(w.var[ch] + c->node->attrs.epsilon);
    channel_sums(c, x, dy, M, C, w.mean, w.var, w.part, w.a, w.b);
    for (int64_t ch = 0; ch < C; ch++) out[ch] = (float)w.b[ch];
    return KILN_OK;
}

kiln_kernel_fn cpu_norm_kernel(const kiln_node *n) {
    if (!cpu_is_f32(n) || n->in[0]->shape.rank < 1) return NULL;
    switch (n->op) {
    case KILN_OP_BATCH_NORM: return k_batch_norm;
    case KILN_OP_BATCH_NORM_GRAD: return k_batch_norm_grad;
    case KILN_OP_BN_GRAD_GAMMA: return k_bn_grad_gamma;
    default: return NULL;
    }
}
