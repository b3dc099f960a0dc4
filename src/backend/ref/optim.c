/* Ref kernels: optimizer updates (Keras 3 formulas, applied in place through the variable inputs),
 * GlobalNorm, ClipScale and NoOp. Update ops output an f32 scalar 0. */
#include <math.h>
#include "ops/ref_kernels.h"

#define LD(v, i) kiln_load((v)->data, (v)->dtype, (i))
#define ST(v, i, x) kiln_store((v)->data, (v)->dtype, (i), (x))

static kiln_status done(const kiln_kctx *c) {
    kiln_store(c->out.data, c->out.dtype, 0, 0.0);
    return KILN_OK;
}

/* Keras SGD: v = m*v - lr*g; var += v (nesterov: var += m*v - lr*g); plain: var -= lr*g.
 * weight_decay is decoupled and applied first, as Keras 3 does: var -= lr*wd*var. */
/* A learning rate that is not finite skips the update: variable and slots stay as they are (loss
 * scaling feeds lr / finite(grads), so a step with an overflowed gradient changes nothing). */
static kiln_status skip_update(const kiln_kctx *c) {
    kiln_store(c->out.data, c->out.dtype, 0, 0.0);
    return KILN_OK;
}

kiln_status kiln_ref_apply_sgd(const kiln_kctx *c) {
    const kiln_view *w = &c->in[0], *gr = &c->in[1], *vel = c->n_in > 3 ? &c->in[3] : NULL;
    const kiln_attrs *a = &c->node->attrs;
    double lr = LD(&c->in[2], 0), m = a->momentum, wd = a->weight_decay;
    if (!isfinite(lr)) return skip_update(c);
    for (int64_t i = 0; i < w->numel; i++) {
        double x = LD(w, i), g = LD(gr, i);
        if (wd > 0.0) x -= lr * wd * x;
        if (vel) {
            double v = m * LD(vel, i) - lr * g;
            ST(vel, i, v);
            x += a->nesterov ? m * v - lr * g : v;
        } else {
            x -= lr * g;
        }
        ST(w, i, x);
    }
    return done(c);
}

/* Keras Adam: t += 1; alpha = lr*sqrt(1-b2^t)/(1-b1^t); m += (g-m)(1-b1); v += (g^2-v)(1-b2);
 * var -= alpha*m/(sqrt(v)+eps). AdamW: var -= lr*wd*var first. */
kiln_status kiln_ref_apply_adam(const kiln_kctx *c) {
    const kiln_view *w = &c->in[0], *gr = &c->in[1], *mv = &c->in[3], *vv = &c->in[4], *tv = &c->in[5];
    const kiln_attrs *a = &c->node->attrs;
    double lr = LD(&c->in[2], 0), b1 = a->beta1, b2 = a->beta2, eps = a->epsilon, wd = a->weight_decay;
    if (!isfinite(lr)) return skip_update(c);
    double t = LD(tv, 0) + 1.0;
    ST(tv, 0, t);
    double alpha = lr * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t));
    for (int64_t i = 0; i < w->numel; i++) {
        double x = LD(w, i), g = LD(gr, i), m = LD(mv, i), v = LD(vv, i);
        if (wd > 0.0) x -= lr * wd * x;
        m += (g - m) * (1.0 - b1);
        v += (g * g - v) * (1.0 - b2);
        ST(mv, i, m);
        ST(vv, i, v);
        ST(w, i, x - alpha * m / (sqrt(v) + eps));
    }
    return done(c);
}

/* Keras RMSprop: ms = rho*ms + (1-rho)*g^2; inc = lr*g/sqrt(ms + eps);
 * momentum: mom = momentum*mom + inc; var -= mom; else var -= inc. */
kiln_status kiln_ref_apply_rmsprop(const kiln_kctx *c) {
    const kiln_view *w = &c->in[0], *gr = &c->in[1], *ms = &c->in[3], *mom = c->n_in > 4 ? &c->in[4] : NULL;
    const kiln_attrs *a = &c->node->attrs;
    double lr = LD(&c->in[2], 0), rho = a->rho, eps = a->epsilon;
    if (!isfinite(lr)) return skip_update(c);
    for (int64_t i = 0; i < w->numel; i++) {
        double g = LD(gr, i), s = rho * LD(ms, i) + (1.0 - rho) * g * g;
        ST(ms, i, s);
        double inc = lr * g / sqrt(s + eps);
        if (mom) {
            double m = a->momentum * LD(mom, i) + inc;
            ST(mom, i, m);
            inc = m;
        }
        ST(w, i, LD(w, i) - inc);
    }
    return done(c);
}

/* Keras Adagrad: acc += g^2; var -= lr*g/sqrt(acc + eps). */
kiln_status kiln_ref_apply_adagrad(const kiln_kctx *c) {
    const kiln_view *w = &c->in[0], *gr = &c->in[1], *acc = &c->in[3];
    double lr = LD(&c->in[2], 0), eps = c->node->attrs.epsilon;
    if (!isfinite(lr)) return skip_update(c);
    for (int64_t i = 0; i < w->numel; i++) {
        double g = LD(gr, i), s = LD(acc, i) + g * g;
        ST(acc, i, s);
        ST(w, i, LD(w, i) - lr * g / sqrt(s + eps));
    }
    return done(c);
}

/* sqrt of the sum of squares over every element of every input. */
kiln_status kiln_ref_global_norm(const kiln_kctx *c) {
    double s = 0.0;
    for (int k = 0; k < c->n_in; k++)
        for (int64_t i = 0; i < c->in[k].numel; i++) {
            double v = LD(&c->in[k], i);
            s += v * v;
        }
    kiln_store(c->out.data, c->out.dtype, 0, sqrt(s));
    return KILN_OK;
}

/* min(1, clip/norm); 1 when norm is 0; NaN when the norm is not finite (like TF, so a blown-up
 * step shows as NaN instead of silently zeroing the gradients). */
kiln_status kiln_ref_clip_scale(const kiln_kctx *c) {
    double norm = LD(&c->in[0], 0), clip = c->node->attrs.clip, s;
    if (!isfinite(norm)) s = NAN;
    else if (norm <= clip || norm == 0.0) s = 1.0;
    else s = clip / norm;
    kiln_store(c->out.data, c->out.dtype, 0, s);
    return KILN_OK;
}

kiln_status kiln_ref_group(const kiln_kctx *c) { return done(c); }
