/* Ref kernels: cross-entropy losses (+ grads), MSE, ArgMax, Equal, Accuracy.
 * Softmax losses use log-sum-exp with the row max subtracted, so large logits do not overflow. */
#include <math.h>
#include "ops/ref_kernels.h"
#include "backend/broadcast.h"

/* Integer labels read exactly (i64 beyond 2^53 would round through double). */
static int64_t load_label(const kiln_view *v, int64_t i) {
    if (v->dtype == KILN_I64) return ((const int64_t *)v->data)[i];
    if (v->dtype == KILN_I32) return ((const int32_t *)v->data)[i];
    return (int64_t)kiln_load(v->data, v->dtype, i);
}

/* Checks every label of a [N] tensor against [0, C): a bad id is the caller's data error. */
static kiln_status check_labels(const kiln_kctx *c, const kiln_view *lab, int64_t C) {
    for (int64_t r = 0; r < lab->numel; r++) {
        int64_t y = load_label(lab, r);
        if (y < 0 || y >= C)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s (%s): label %lld in row %lld is outside [0, %lld) (logits have %lld classes)",
                                  c->node->name, kiln_op_get(c->node->op)->name, (long long)y, (long long)r, (long long)C, (long long)C);
    }
    return KILN_OK;
}

/* Log-sum-exp of row r of an [N, C] tensor, max subtracted. A NaN or +-Inf in the row makes it
 * NaN (inf - inf), as the usual formula does on every backend. */
static double row_lse(const kiln_view *x, int64_t r, int64_t C) {
    double mx = -INFINITY, s = 0.0;
    for (int64_t j = 0; j < C; j++) {
        double v = kiln_load(x->data, x->dtype, r * C + j);
        if (v > mx) mx = v;
    }
    for (int64_t j = 0; j < C; j++) s += exp(kiln_load(x->data, x->dtype, r * C + j) - mx);
    return mx + log(s);
}

kiln_status kiln_ref_sparse_softmax_xent(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *lab = &c->in[1];
    int64_t N = x->shape.dim[0], C = x->shape.dim[1];
    kiln_status s = check_labels(c, lab, C);
    if (s) return s;
    double tot = 0.0;
    for (int64_t r = 0; r < N; r++)
        tot += row_lse(x, r, C) - kiln_load(x->data, x->dtype, r * C + load_label(lab, r));
    kiln_store(c->out.data, c->out.dtype, 0, N > 0 ? tot / (double)N : 0.0);
    return KILN_OK;
}

/* (softmax - onehot) * dy / N */
kiln_status kiln_ref_sparse_softmax_xent_grad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *lab = &c->in[1], *dy = &c->in[2];
    int64_t N = x->shape.dim[0], C = x->shape.dim[1];
    kiln_status s = check_labels(c, lab, C);
    if (s) return s;
    double k = kiln_load(dy->data, dy->dtype, 0) / (double)(N > 0 ? N : 1);
    for (int64_t r = 0; r < N; r++) {
        double lse = row_lse(x, r, C);
        int64_t y = load_label(lab, r);
        for (int64_t j = 0; j < C; j++) {
            double p = exp(kiln_load(x->data, x->dtype, r * C + j) - lse);
            kiln_store(c->out.data, c->out.dtype, r * C + j, (p - (j == y ? 1.0 : 0.0)) * k);
        }
    }
    return KILN_OK;
}

/* mean over rows of -sum(z * log_softmax(x)) = sum(z) * lse - sum(z * x) */
kiln_status kiln_ref_softmax_xent(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *z = &c->in[1];
    int64_t N = x->shape.dim[0], C = x->shape.dim[1];
    double tot = 0.0;
    for (int64_t r = 0; r < N; r++) {
        double lse = row_lse(x, r, C);
        for (int64_t j = 0; j < C; j++) {
            double zj = kiln_load(z->data, z->dtype, r * C + j);
            if (zj != 0.0) tot += zj * (lse - kiln_load(x->data, x->dtype, r * C + j));
        }
    }
    kiln_store(c->out.data, c->out.dtype, 0, N > 0 ? tot / (double)N : 0.0);
    return KILN_OK;
}

/* (softmax * sum(z) - z) * dy / N: exact also when a label row does not sum to 1 */
kiln_status kiln_ref_softmax_xent_grad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *z = &c->in[1], *dy = &c->in[2];
    int64_t N = x->shape.dim[0], C = x->shape.dim[1];
    double k = kiln_load(dy->data, dy->dtype, 0) / (double)(N > 0 ? N : 1);
    for (int64_t r = 0; r < N; r++) {
        double lse = row_lse(x, r, C), sz = 0.0;
        for (int64_t j = 0; j < C; j++) sz += kiln_load(z->data, z->dtype, r * C + j);
        for (int64_t j = 0; j < C; j++) {
            int64_t i = r * C + j;
            double p = exp(kiln_load(x->data, x->dtype, i) - lse);
            kiln_store(c->out.data, c->out.dtype, i, (p * sz - kiln_load(z->data, z->dtype, i)) * k);
        }
    }
    return KILN_OK;
}

/* mean of max(x,0) - x*z + log(1 + exp(-|x|)) (TF's stable form) */
kiln_status kiln_ref_sigmoid_xent(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *z = &c->in[1];
    double tot = 0.0;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = kiln_load(x->data, x->dtype, i), zi = kiln_load(z->data, z->dtype, i);
        tot += (v > 0.0 ? v : 0.0) - v * zi + log1p(exp(-fabs(v)));
    }
    kiln_store(c->out.data, c->out.dtype, 0, x->numel > 0 ? tot / (double)x->numel : 0.0);
    return KILN_OK;
}

static double sigmoid(double v) {
    if (v >= 0.0) return 1.0 / (1.0 + exp(-v));
    double e = exp(v);
    return e / (1.0 + e);
}

kiln_status kiln_ref_sigmoid_xent_grad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *z = &c->in[1], *dy = &c->in[2];
    double k = kiln_load(dy->data, dy->dtype, 0) / (double)(x->numel > 0 ? x->numel : 1);
    for (int64_t i = 0; i < x->numel; i++)
        kiln_store(c->out.data, c->out.dtype, i,
                   (sigmoid(kiln_load(x->data, x->dtype, i)) - kiln_load(z->data, z->dtype, i)) * k);
    return KILN_OK;
}

/* ---- numpy broadcasting for the kernels that take two shapes ---- */
static kiln_shape bcast_shape(kiln_shape a, kiln_shape b) {
    kiln_shape o = { a.rank > b.rank ? a.rank : b.rank, { 0 } };
    for (int d = 0; d < o.rank; d++) {
        int ia = d - (o.rank - a.rank), ib = d - (o.rank - b.rank);
        int64_t da = ia >= 0 ? a.dim[ia] : 1, db = ib >= 0 ? b.dim[ib] : 1;
        o.dim[d] = da == 1 ? db : da;
    }
    return o;
}

/* Index into `in` of element i of the broadcast shape `out` (in right-aligned, 1-dims repeat). */
static int64_t bcast_index(int64_t i, const kiln_shape *out, const kiln_shape *in) {
    return kiln_bcast_index(i, out->dim, out->rank, in->dim, in->rank);
}

kiln_status kiln_ref_mse(const kiln_kctx *c) {
    const kiln_view *p = &c->in[0], *t = &c->in[1];
    kiln_shape o = bcast_shape(p->shape, t->shape);
    int64_t n = kiln_shape_numel(o);
    double tot = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = kiln_load(p->data, p->dtype, bcast_index(i, &o, &p->shape)) -
                   kiln_load(t->data, t->dtype, bcast_index(i, &o, &t->shape));
        tot += d * d;
    }
    kiln_store(c->out.data, c->out.dtype, 0, n > 0 ? tot / (double)n : 0.0);
    return KILN_OK;
}

kiln_status kiln_ref_equal(const kiln_kctx *c) {
    const kiln_view *a = &c->in[0], *b = &c->in[1];
    const kiln_shape *o = &c->out.shape;
    bool ints = !kiln_dtype_is_float(a->dtype) && !kiln_dtype_is_float(b->dtype);
    for (int64_t i = 0; i < c->out.numel; i++) {
        int64_t ia = bcast_index(i, o, &a->shape), ib = bcast_index(i, o, &b->shape);
        bool eq = ints ? load_label(a, ia) == load_label(b, ib)
                       : kiln_load(a->data, a->dtype, ia) == kiln_load(b->data, b->dtype, ib);
        kiln_store(c->out.data, c->out.dtype, i, eq ? 1.0 : 0.0);
    }
    return KILN_OK;
}

/* Index of the first maximum of n values at stride `st` from `base` (NaN counts as the max). */
static int64_t first_argmax(const kiln_view *x, int64_t base, int64_t n, int64_t st) {
    int64_t best = 0;
    double bv = kiln_load(x->data, x->dtype, base);
    for (int64_t k = 1; k < n && !isnan(bv); k++) {
        double v = kiln_load(x->data, x->dtype, base + k * st);
        if (v > bv || isnan(v)) { bv = v; best = k; }
    }
    return best;
}

kiln_status kiln_ref_argmax(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    int ax = c->node->attrs.axis;
    int64_t outer = 1, inner = 1, n = x->shape.dim[ax];
    for (int d = 0; d < ax; d++) outer *= x->shape.dim[d];
    for (int d = ax + 1; d < x->shape.rank; d++) inner *= x->shape.dim[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t k = first_argmax(x, o * n * inner + in, n, inner);
            ((int64_t *)c->out.data)[o * inner + in] = k;      /* i64 output: exact store */
        }
    return KILN_OK;
}

/* Labels outside [0, C) simply never match (a metric, not a loss: no run-time error). */
kiln_status kiln_ref_accuracy(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *lab = &c->in[1];
    int64_t N = x->shape.dim[0], C = x->shape.dim[1], hits = 0;
    for (int64_t r = 0; r < N; r++)
        if (first_argmax(x, r * C, C, 1) == load_label(lab, r)) hits++;
    kiln_store(c->out.data, c->out.dtype, 0, N > 0 ? (double)hits / (double)N : 0.0);
    return KILN_OK;
}
