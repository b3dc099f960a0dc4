/* Ref kernels: Attention and AttentionGrad, row by row in double (the oracle: no tiling). The
 * forward keeps one row of scores in its scratch, the backward one (b, h)'s dk and dv sums:
 * linear in T like the fast kernels. Semantics: src/ops/SEMANTICS.md. */
#include <math.h>
#include "ops/ref_kernels.h"

typedef struct att_dims { int64_t BH, Tq, Tk, Dh, off; double scale; bool causal; double rate; uint64_t seed, step; } att_dims;

static att_dims dims_of(const kiln_kctx *c) {
    const kiln_shape *q = &c->in[0].shape, *k = &c->in[1].shape;
    const kiln_attrs *a = &c->node->attrs;
    att_dims d = { q->dim[0] * q->dim[1], q->dim[2], k->dim[2], q->dim[3], k->dim[2] - q->dim[2],
                   a->alpha, a->causal, a->training ? a->rate : 0.0, a->seed, c->step };
    return d;
}

/* Dropout's factor on P[bh, i, j]: 0 or 1/(1 - rate) (1 without dropout). */
static double keep_scale(const att_dims *d, int64_t bh, int64_t i, int64_t j) {
    if (d->rate <= 0.0) return 1.0;
    return kiln_dropout_keep(d->seed, d->step, (bh * d->Tq + i) * d->Tk + j, d->rate) ? 1.0 / (1.0 - d->rate) : 0.0;
}

/* Keys query i sees: [0, n). */
static int64_t visible(const att_dims *d, int64_t i) { return d->causal ? i + d->off + 1 : d->Tk; }

static double ld(const kiln_view *v, int64_t i) { return kiln_load(v->data, v->dtype, i); }

/* s[j] = scale * q_i . k_j for the visible keys; returns the row's max (NaN skipped, as a
 * comparison does). */
static double scores(const kiln_kctx *c, const att_dims *d, int64_t bh, int64_t i, int64_t nv, double *s) {
    const kiln_view *q = &c->in[0], *k = &c->in[1];
    double mx = -INFINITY;
    for (int64_t j = 0; j < nv; j++) {
        double acc = 0.0;
        for (int64_t e = 0; e < d->Dh; e++)
            acc += ld(q, (bh * d->Tq + i) * d->Dh + e) * ld(k, (bh * d->Tk + j) * d->Dh + e);
        s[j] = acc * d->scale;
        if (s[j] > mx) mx = s[j];
    }
    return mx;
}

kiln_status kiln_ref_attention(const kiln_kctx *c) {
    att_dims d = dims_of(c);
    const kiln_view *v = &c->in[2];
    double *s = c->workspace, *o = s + d.Tk;
    int64_t W = d.Dh + 1;
    for (int64_t bh = 0; bh < d.BH; bh++)
        for (int64_t i = 0; i < d.Tq; i++) {
            int64_t nv = visible(&d, i);
            double mx = scores(c, &d, bh, i, nv, s), l = 0.0;
            for (int64_t e = 0; e < d.Dh; e++) o[e] = 0.0;
            for (int64_t j = 0; j < nv; j++) {
                double p = exp(s[j] - mx), pz = p * keep_scale(&d, bh, i, j);   /* the sum is the undropped one */
                l += p;
                for (int64_t e = 0; e < d.Dh; e++) o[e] += pz * ld(v, (bh * d.Tk + j) * d.Dh + e);
            }
            int64_t row = (bh * d.Tq + i) * W;
            for (int64_t e = 0; e < d.Dh; e++) kiln_store(c->out.data, c->out.dtype, row + e, o[e] / l);
            kiln_store(c->out.data, c->out.dtype, row + d.Dh, mx + log(l));
        }
    return KILN_OK;
}

/* With P = exp(S - lse) and Z the dropout factors: dv = (P Z)^T dO; dS = P * (Z dO v^T -
 * rowsum(dO * O) + dlse) (rowsum(dO * O) is still sum_j P_ij dP_ij: O holds the dropped P);
 * dq = scale dS k; dk = scale dS^T q. */
kiln_status kiln_ref_attention_grad(const kiln_kctx *c) {
    att_dims d = dims_of(c);
    const kiln_view *q = &c->in[0], *k = &c->in[1], *v = &c->in[2], *out = &c->in[3], *dout = &c->in[4];
    double *dk = c->workspace, *dv = dk + d.Tk * d.Dh, *dq = dv + d.Tk * d.Dh, *s = dq + d.Dh;
    int64_t W = d.Dh + 1, R = d.Tq + 2 * d.Tk;
    for (int64_t bh = 0; bh < d.BH; bh++) {
        for (int64_t t = 0; t < 2 * d.Tk * d.Dh; t++) dk[t] = 0.0;
        for (int64_t i = 0; i < d.Tq; i++) {
            int64_t nv = visible(&d, i), row = (bh * d.Tq + i) * W;
            scores(c, &d, bh, i, nv, s);
            double lse = ld(out, row + d.Dh), dt = -ld(dout, row + d.Dh);
            for (int64_t e = 0; e < d.Dh; e++) dt += ld(dout, row + e) * ld(out, row + e);
            for (int64_t e = 0; e < d.Dh; e++) dq[e] = 0.0;
            for (int64_t j = 0; j < nv; j++) {
                double p = exp(s[j] - lse), z = keep_scale(&d, bh, i, j), dp = 0.0;
                for (int64_t e = 0; e < d.Dh; e++) {
                    dp += ld(dout, row + e) * ld(v, (bh * d.Tk + j) * d.Dh + e);
                    dv[j * d.Dh + e] += p * z * ld(dout, row + e);
                }
                double ds = p * (z * dp - dt) * d.scale;
                for (int64_t e = 0; e < d.Dh; e++) {
                    dq[e] += ds * ld(k, (bh * d.Tk + j) * d.Dh + e);
                    dk[j * d.Dh + e] += ds * ld(q, (bh * d.Tq + i) * d.Dh + e);
                }
            }
            for (int64_t e = 0; e < d.Dh; e++) kiln_store(c->out.data, c->out.dtype, (bh * R + i) * d.Dh + e, dq[e]);
        }
        for (int64_t j = 0; j < d.Tk; j++)
            for (int64_t e = 0; e < d.Dh; e++) {
                kiln_store(c->out.data, c->out.dtype, (bh * R + d.Tq + j) * d.Dh + e, dk[j * d.Dh + e]);
                kiln_store(c->out.data, c->out.dtype, (bh * R + d.Tq + d.Tk + j) * d.Dh + e, dv[j * d.Dh + e]);
            }
    }
    return KILN_OK;
}
