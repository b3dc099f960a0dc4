/* Ref kernels: FusedBatchNorm (+ grads) and Dropout (+ grad). Channels are the last dim; every
 * other dim is a "row" of the reduction (M rows of C channels). */
#include <math.h>
#include "ops/ref_kernels.h"

static int64_t last_dim(const kiln_view *v) { return v->shape.rank > 0 ? v->shape.dim[v->shape.rank - 1] : 1; }

/* Batch mean and biased variance of channel ch (two passes: exact for the oracle). */
static void channel_moments(const kiln_view *x, int64_t C, int64_t ch, double *mean, double *var) {
    int64_t M = x->numel / C;
    double s = 0.0, ss = 0.0;
    for (int64_t m = 0; m < M; m++) s += kiln_load(x->data, x->dtype, m * C + ch);
    double mu = M > 0 ? s / (double)M : 0.0;
    for (int64_t m = 0; m < M; m++) {
        double d = kiln_load(x->data, x->dtype, m * C + ch) - mu;
        ss += d * d;
    }
    *mean = mu;
    *var = M > 0 ? ss / (double)M : 0.0;
}

kiln_status kiln_ref_batch_norm(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *gm = &c->in[1], *bt = &c->in[2], *mm = &c->in[3], *mv = &c->in[4];
    const kiln_attrs *a = &c->node->attrs;
    int64_t C = last_dim(x), M = x->numel / C;
    for (int64_t ch = 0; ch < C; ch++) {
        double mean, var;
        if (a->training) {
            channel_moments(x, C, ch, &mean, &var);
            /* moving statistics are updated in place (MUTATES); the variance is unbiased like TF */
            double unb = M > 1 ? var * (double)M / (double)(M - 1) : var;
            double om = kiln_load(mm->data, mm->dtype, ch), ov = kiln_load(mv->data, mv->dtype, ch);
            kiln_store(mm->data, mm->dtype, ch, a->momentum * om + (1.0 - a->momentum) * mean);
            kiln_store(mv->data, mv->dtype, ch, a->momentum * ov + (1.0 - a->momentum) * unb);
        } else {
            mean = kiln_load(mm->data, mm->dtype, ch);
            var = kiln_load(mv->data, mv->dtype, ch);
        }
        double scale = kiln_load(gm->data, gm->dtype, ch) / sqrt(var + a->epsilon);
        double shift = kiln_load(bt->data, bt->dtype, ch);
        for (int64_t m = 0; m < M; m++) {
            int64_t i = m * C + ch;
            kiln_store(c->out.data, c->out.dtype, i, (kiln_load(x->data, x->dtype, i) - mean) * scale + shift);
        }
    }
    return KILN_OK;
}

/* dx = gamma * rstd / M * (M*dy - sum(dy) - xhat * sum(dy*xhat)), batch statistics. */
kiln_status kiln_ref_batch_norm_grad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *gm = &c->in[1], *dy = &c->in[2];
    int64_t C = last_dim(x), M = x->numel / C;
    for (int64_t ch = 0; ch < C; ch++) {
        double mean, var;
        channel_moments(x, C, ch, &mean, &var);
        double rstd = 1.0 / sqrt(var + c->node->attrs.epsilon);
        double sdy = 0.0, sdyx = 0.0;
        for (int64_t m = 0; m < M; m++) {
            int64_t i = m * C + ch;
            double g = kiln_load(dy->data, dy->dtype, i);
            sdy += g;
            sdyx += g * (kiln_load(x->data, x->dtype, i) - mean) * rstd;
        }
        double k = kiln_load(gm->data, gm->dtype, ch) * rstd / (double)M;
        for (int64_t m = 0; m < M; m++) {
            int64_t i = m * C + ch;
            double xh = (kiln_load(x->data, x->dtype, i) - mean) * rstd;
            double g = kiln_load(dy->data, dy->dtype, i);
            kiln_store(c->out.data, c->out.dtype, i, k * ((double)M * g - sdy - xh * sdyx));
        }
    }
    return KILN_OK;
}

/* dgamma[c] = sum over rows of dy * xhat. */
kiln_status kiln_ref_bn_grad_gamma(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *dy = &c->in[1];
    int64_t C = last_dim(x), M = x->numel / C;
    for (int64_t ch = 0; ch < C; ch++) {
        double mean, var;
        channel_moments(x, C, ch, &mean, &var);
        double rstd = 1.0 / sqrt(var + c->node->attrs.epsilon), s = 0.0;
        for (int64_t m = 0; m < M; m++) {
            int64_t i = m * C + ch;
            s += kiln_load(dy->data, dy->dtype, i) * (kiln_load(x->data, x->dtype, i) - mean) * rstd;
        }
        kiln_store(c->out.data, c->out.dtype, ch, s);
    }
    return KILN_OK;
}

/* Shared by Dropout and DropoutGrad: both apply the same mask and 1/(1-rate) scale. */
static kiln_status dropout_apply(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    const kiln_attrs *a = &c->node->attrs;
    if (!a->training || a->rate <= 0.0) {
        for (int64_t i = 0; i < x->numel; i++)
            kiln_store(c->out.data, c->out.dtype, i, kiln_load(x->data, x->dtype, i));
        return KILN_OK;
    }
    double scale = 1.0 / (1.0 - a->rate);
    for (int64_t i = 0; i < x->numel; i++) {
        double v = kiln_dropout_keep(a->seed, c->step, i, a->rate) ? kiln_load(x->data, x->dtype, i) * scale : 0.0;
        kiln_store(c->out.data, c->out.dtype, i, v);
    }
    return KILN_OK;
}

kiln_status kiln_ref_dropout(const kiln_kctx *c) { return dropout_apply(c); }
kiln_status kiln_ref_dropout_grad(const kiln_kctx *c) { return dropout_apply(c); }

kiln_status kiln_ref_random_normal(const kiln_kctx *c) {
    for (int64_t i = 0; i < c->out.numel; i++)
        kiln_store(c->out.data, c->out.dtype, i, kiln_normal_draw(c->node->attrs.seed, c->step, i));
    return KILN_OK;
}
