/* Softmax, LogSoftmax (last axis), SparseSoftmaxCrossEntropy(+Grad) and optimizer updates. */
#include "backend/cpu/cpu_internal.h"

/* ---- softmax over the last axis ---- */
static void softmax_row(const float *x, float *y, int64_t C, bool log_out) {
    float m = -INFINITY;
    for (int64_t k = 0; k < C; k++) m = x[k] > m ? x[k] : m;
    double s = 0.0;
    for (int64_t k = 0; k < C; k++) s += exp((double)x[k] - m);
    if (log_out) {
        float ls = (float)log(s);
        for (int64_t k = 0; k < C; k++) y[k] = (x[k] - m) - ls;
    } else {
        double inv = 1.0 / s;
        for (int64_t k = 0; k < C; k++) y[k] = (float)(exp((double)x[k] - m) * inv);
    }
}

static kiln_status k_softmax(const kiln_kctx *c) {
    int64_t C = c->out.shape.dim[c->out.shape.rank - 1], R = C > 0 ? c->out.numel / C : 0;
    const float *X = cpu_f(&c->in[0]);
    float *Y = cpu_f(&c->out);
    bool lg = c->node->op == KILN_OP_LOG_SOFTMAX;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, c->out.numel))
    for (int64_t r = 0; r < R; r++) softmax_row(X + r * C, Y + r * C, C, lg);
    return KILN_OK;
}

/* ---- sparse softmax cross-entropy ---- */
static inline int64_t label_at(const kiln_view *l, int64_t i) {
    return l->dtype == KILN_I32 ? ((const int32_t *)l->data)[i] : ((const int64_t *)l->data)[i];
}

static kiln_status check_labels(const kiln_kctx *c, int64_t N, int64_t C) {
    for (int64_t i = 0; i < N; i++) {
        int64_t y = label_at(&c->in[1], i);
        if (y < 0 || y >= C)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s (SparseSoftmaxCrossEntropy): label %lld at row %lld is outside [0, %lld)",
                                  c->node->name ? c->node->name : "?", (long long)y, (long long)i, (long long)C);
    }
    return KILN_OK;
}

static kiln_status k_sparse_xent(const kiln_kctx *c) {
    int64_t N = c->in[0].shape.dim[0], C = c->in[0].shape.dim[1];
    kiln_status s = check_labels(c, N, C);
    if (s != KILN_OK) return s;
    const float *X = cpu_f(&c->in[0]);
    double total = 0.0;
    #pragma omp parallel for schedule(static) reduction(+:total) num_threads(cpu_par(c, N * C))
    for (int64_t i = 0; i < N; i++) {
        const float *x = X + i * C;
        float m = -INFINITY;
        for (int64_t k = 0; k < C; k++) m = x[k] > m ? x[k] : m;
        double e = 0.0;
        for (int64_t k = 0; k < C; k++) e += exp((double)x[k] - m);
        total += log(e) + m - x[label_at(&c->in[1], i)];
    }
    cpu_f(&c->out)[0] = N > 0 ? (float)(total / (double)N) : 0.0f;
    return KILN_OK;
}

static kiln_status k_sparse_xent_grad(const kiln_kctx *c) {
    int64_t N = c->in[0].shape.dim[0], C = c->in[0].shape.dim[1];
    kiln_status s = check_labels(c, N, C);
    if (s != KILN_OK) return s;
    const float *X = cpu_f(&c->in[0]);
    float *G = cpu_f(&c->out);
    double scale = (double)cpu_f(&c->in[2])[0] / (double)(N > 0 ? N : 1);
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, N * C))
    for (int64_t i = 0; i < N; i++) {
        const float *x = X + i * C;
        float *g = G + i * C;
        float m = -INFINITY;
        for (int64_t k = 0; k < C; k++) m = x[k] > m ? x[k] : m;
        double e = 0.0;
        for (int64_t k = 0; k < C; k++) e += exp((double)x[k] - m);
        double inv = 1.0 / e;
        int64_t y = label_at(&c->in[1], i);
        for (int64_t k = 0; k < C; k++)
            g[k] = (float)((exp((double)x[k] - m) * inv - (k == y ? 1.0 : 0.0)) * scale);
    }
    return KILN_OK;
}

/* ---- optimizer updates, in place through the variable inputs (same formulas as ref, Keras 3);
 * per-step scalars in double, element math in float. Output: f32 scalar 0. ---- */
/* A learning rate that is not finite skips the update (loss scaling: see ref's optim.c). */
static kiln_status skip_update(const kiln_kctx *c) {
    cpu_f(&c->out)[0] = 0.0f;
    return KILN_OK;
}

static kiln_status k_apply_sgd(const kiln_kctx *c) {
    const kiln_attrs *a = &c->node->attrs;
    float *w = cpu_f(&c->in[0]), *vel = c->n_in > 3 ? cpu_f(&c->in[3]) : NULL;
    const float *g = cpu_f(&c->in[1]);
    const float lr = cpu_f(&c->in[2])[0], m = (float)a->momentum, decay = (float)(1.0 - (double)lr * a->weight_decay);
    if (!isfinite(lr)) return skip_update(c);
    const bool wd = a->weight_decay > 0.0, nest = a->nesterov;
    int64_t n = c->in[0].numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) {
        float x = wd ? w[i] * decay : w[i];
        if (vel) {
            float v = m * vel[i] - lr * g[i];
            vel[i] = v;
            x += nest ? m * v - lr * g[i] : v;
        } else {
            x -= lr * g[i];
        }
        w[i] = x;
    }
    cpu_f(&c->out)[0] = 0.0f;
    return KILN_OK;
}

static kiln_status k_apply_adam(const kiln_kctx *c) {
    const kiln_attrs *a = &c->node->attrs;
    float *w = cpu_f(&c->in[0]), *mv = cpu_f(&c->in[3]), *vv = cpu_f(&c->in[4]), *tv = cpu_f(&c->in[5]);
    const float *g = cpu_f(&c->in[1]);
    double lr = cpu_f(&c->in[2])[0], t = (double)tv[0] + 1.0;
    if (!isfinite(lr)) return skip_update(c);
    tv[0] = (float)t;
    const float alpha = (float)(lr * sqrt(1.0 - pow(a->beta2, t)) / (1.0 - pow(a->beta1, t)));
    const float b1c = (float)(1.0 - a->beta1), b2c = (float)(1.0 - a->beta2), eps = (float)a->epsilon;
    const float decay = (float)(1.0 - lr * a->weight_decay);
    const bool wd = a->weight_decay > 0.0;
    int64_t n = c->in[0].numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) {
        float x = wd ? w[i] * decay : w[i], gi = g[i];
        float m = mv[i] + (gi - mv[i]) * b1c;
        float v = vv[i] + (gi * gi - vv[i]) * b2c;
        mv[i] = m; vv[i] = v;
        w[i] = x - alpha * m / (sqrtf(v) + eps);
    }
    cpu_f(&c->out)[0] = 0.0f;
    return KILN_OK;
}

static kiln_status k_apply_rmsprop(const kiln_kctx *c) {
    const kiln_attrs *a = &c->node->attrs;
    float *w = cpu_f(&c->in[0]), *ms = cpu_f(&c->in[3]), *mom = c->n_in > 4 ? cpu_f(&c->in[4]) : NULL;
    const float *g = cpu_f(&c->in[1]);
    const float lr = cpu_f(&c->in[2])[0], rho = (float)a->rho, rc = (float)(1.0 - a->rho);
    const float eps = (float)a->epsilon, mm = (float)a->momentum;
    if (!isfinite(lr)) return skip_update(c);
    int64_t n = c->in[0].numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i], s = rho * ms[i] + rc * gi * gi;
        ms[i] = s;
        float inc = lr * gi / sqrtf(s + eps);
        if (mom) { inc = mm * mom[i] + inc; mom[i] = inc; }
        w[i] -= inc;
    }
    cpu_f(&c->out)[0] = 0.0f;
    return KILN_OK;
}

static kiln_status k_apply_adagrad(const kiln_kctx *c) {
    float *w = cpu_f(&c->in[0]), *acc = cpu_f(&c->in[3]);
    const float *g = cpu_f(&c->in[1]);
    const float lr = cpu_f(&c->in[2])[0], eps = (float)c->node->attrs.epsilon;
    if (!isfinite(lr)) return skip_update(c);
    int64_t n = c->in[0].numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i], s = acc[i] + gi * gi;
        acc[i] = s;
        w[i] -= lr * gi / sqrtf(s + eps);
    }
    cpu_f(&c->out)[0] = 0.0f;
    return KILN_OK;
}

/* var, grad and the slots share one shape; lr (and Adam's t) are scalars. */
static bool optim_ok(const kiln_node *n, int min_in, int max_in, int n_slots_from3, bool t_last) {
    if (!cpu_is_f32(n) || n->n_in < min_in || n->n_in > max_in) return false;
    kiln_shape s = n->in[0]->shape;
    if (!kiln_shape_equal(n->in[1]->shape, s) || kiln_shape_numel(n->in[2]->shape) != 1) return false;
    int last = t_last ? n->n_in - 1 : n->n_in;
    for (int i = 3; i < last && i < 3 + n_slots_from3; i++)
        if (!kiln_shape_equal(n->in[i]->shape, s)) return false;
    return !t_last || kiln_shape_numel(n->in[n->n_in - 1]->shape) == 1;
}

kiln_kernel_fn cpu_loss_optim_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_APPLY_SGD: return optim_ok(n, 3, 4, 1, false) ? k_apply_sgd : NULL;
    case KILN_OP_APPLY_ADAM: return optim_ok(n, 6, 6, 2, true) ? k_apply_adam : NULL;
    case KILN_OP_APPLY_RMSPROP: return optim_ok(n, 4, 5, 2, false) ? k_apply_rmsprop : NULL;
    case KILN_OP_APPLY_ADAGRAD: return optim_ok(n, 4, 4, 1, false) ? k_apply_adagrad : NULL;
    case KILN_OP_SOFTMAX: case KILN_OP_LOG_SOFTMAX:
        return cpu_is_f32(n) && n->n_in == 1 && n->shape.rank >= 1 && n->attrs.axis == n->shape.rank - 1 &&
               kiln_shape_equal(n->shape, n->in[0]->shape) ? k_softmax : NULL;
    case KILN_OP_SPARSE_SOFTMAX_XENT: case KILN_OP_SPARSE_SOFTMAX_XENT_GRAD: {
        bool grad = n->op == KILN_OP_SPARSE_SOFTMAX_XENT_GRAD;
        if (n->n_in != (grad ? 3 : 2)) return NULL;
        const kiln_node *x = n->in[0], *l = n->in[1];
        if (x->dtype != KILN_F32 || x->shape.rank != 2 || l->shape.rank != 1 || l->shape.dim[0] != x->shape.dim[0])
            return NULL;
        if (l->dtype != KILN_I32 && l->dtype != KILN_I64) return NULL;
        if (grad && (n->in[2]->dtype != KILN_F32 || kiln_shape_numel(n->in[2]->shape) != 1 ||
                     !kiln_shape_equal(n->shape, x->shape))) return NULL;
        return grad ? k_sparse_xent_grad : k_sparse_xent;
    }
    default: return NULL;
    }
}

size_t cpu_loss_optim_workspace(const kiln_node *n) { (void)n; return 0; }
