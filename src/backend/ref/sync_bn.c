/* Ref kernels: synchronised batch norm (src/ops/sync_bn.c). Channels are the last dim, every
 * other dim a row (M rows of C channels); statistics are f64 [2C+1]: sums, sums of squares, rows. */
#include <math.h>
#include <string.h>
#include "ops/ref_kernels.h"

static int64_t last_dim(const kiln_view *v) { return v->shape.dim[v->shape.rank - 1]; }

/* Alone it is the identity: the executor sums the output over the replicas when a session hook is set. */
kiln_status kiln_ref_cross_replica_sum(const kiln_kctx *c) {
    if (c->out.data != c->in[0].data) memcpy(c->out.data, c->in[0].data, (size_t)c->out.numel * kiln_dtype_size(c->out.dtype));
    return KILN_OK;
}

kiln_status kiln_ref_bn_stats(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    int64_t C = last_dim(x), M = x->numel / C;
    double *o = c->out.data;
    for (int64_t ch = 0; ch < C; ch++) {
        double s = 0, ss = 0;
        for (int64_t m = 0; m < M; m++) {
            double v = kiln_load(x->data, x->dtype, m * C + ch);
            s += v;
            ss += v * v;
        }
        o[ch] = s;
        o[C + ch] = ss;
    }
    o[2 * C] = (double)M;
    return KILN_OK;
}

kiln_status kiln_ref_bn_stats_grad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    const double *ds = c->in[1].data;
    int64_t C = last_dim(x);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t ch = i % C;
        kiln_store(c->out.data, c->out.dtype, i, ds[ch] + 2.0 * kiln_load(x->data, x->dtype, i) * ds[C + ch]);
    }
    return KILN_OK;
}

/* The global mean, biased variance and 1/sqrt(var + eps) of channel ch. */
static void moments(const double *st, int64_t C, int64_t ch, double eps, double *mean, double *var, double *rstd) {
    double n = st[2 * C] > 0 ? st[2 * C] : 1;
    *mean = st[ch] / n;
    *var = st[C + ch] / n - *mean * *mean;
    if (*var < 0) *var = 0;       /* rounding of sum-of-squares minus squared mean */
    *rstd = 1.0 / sqrt(*var + eps);
}

kiln_status kiln_ref_bn_sync(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *gm = &c->in[1], *bt = &c->in[2], *mm = &c->in[3], *mv = &c->in[4];
    const double *st = c->in[5].data;
    const kiln_attrs *a = &c->node->attrs;
    int64_t C = last_dim(x), M = x->numel / C;
    double n = st[2 * C];
    for (int64_t ch = 0; ch < C; ch++) {
        double mean, var, rstd;
        moments(st, C, ch, a->epsilon, &mean, &var, &rstd);
        double unb = n > 1 ? var * n / (n - 1) : var;   /* unbiased like TF */
        kiln_store(mm->data, mm->dtype, ch, a->momentum * kiln_load(mm->data, mm->dtype, ch) + (1.0 - a->momentum) * mean);
        kiln_store(mv->data, mv->dtype, ch, a->momentum * kiln_load(mv->data, mv->dtype, ch) + (1.0 - a->momentum) * unb);
        double scale = kiln_load(gm->data, gm->dtype, ch) * rstd, shift = kiln_load(bt->data, bt->dtype, ch);
        for (int64_t m = 0; m < M; m++) {
            int64_t i = m * C + ch;
            kiln_store(c->out.data, c->out.dtype, i, (kiln_load(x->data, x->dtype, i) - mean) * scale + shift);
        }
    }
    return KILN_OK;
}

/* mode 0: dx = dy * gamma * rstd (statistics held fixed); 1: dgamma = sum(dy * xhat);
 * 2: d(stats) through mean = S1/N and var = S2/N - mean^2 (the row count is not differentiated). */
kiln_status kiln_ref_bn_sync_grad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *gm = &c->in[1], *dy = &c->in[2];
    const double *st = c->in[3].data;
    int mode = c->node->attrs.axis;
    int64_t C = last_dim(x), M = x->numel / C;
    double n = st[2 * C] > 0 ? st[2 * C] : 1;
    if (mode == 2) ((double *)c->out.data)[2 * C] = 0;
    for (int64_t ch = 0; ch < C; ch++) {
        double mean, var, rstd;
        moments(st, C, ch, c->node->attrs.epsilon, &mean, &var, &rstd);
        double g = kiln_load(gm->data, gm->dtype, ch), sum_a = 0, sum_b = 0;
        for (int64_t m = 0; m < M; m++) {
            int64_t i = m * C + ch;
            double d = kiln_load(dy->data, dy->dtype, i), xc = kiln_load(x->data, x->dtype, i) - mean;
            if (mode == 0) kiln_store(c->out.data, c->out.dtype, i, d * g * rstd);
            sum_a += d;
            sum_b += d * xc;
        }
        if (mode == 1) kiln_store(c->out.data, c->out.dtype, ch, sum_b * rstd);
        if (mode == 2) {
            double dmean = -g * rstd * sum_a, dvar = -0.5 * g * rstd * rstd * rstd * sum_b;
            double *o = c->out.data;
            o[ch] = dmean / n - 2.0 * mean * dvar / n;
            o[C + ch] = dvar / n;
        }
    }
    return KILN_OK;
}
