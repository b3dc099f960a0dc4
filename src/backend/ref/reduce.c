/* Ref kernels: Sum, Mean, Max, SumTo, BroadcastTo. Accumulation in double. */
#include <math.h>
#include <string.h>
#include "ops/ref_kernels.h"
#include "backend/broadcast.h"

typedef enum { RED_SUM, RED_MEAN, RED_MAX } red_mode;

/* Reduces input 0 over the dims flagged in rmask. The output enumerates the kept dims in
 * row-major order, which is the same order whether reduced dims are kept as 1 or dropped, and
 * also covers SumTo (leading dims and 1-dims flagged). */
static kiln_status reduce_mask(const kiln_kctx *c, unsigned rmask, red_mode mode) {
    const kiln_view *x = &c->in[0];
    int64_t st[KILN_MAX_DIMS], kd[KILN_MAX_DIMS], ks[KILN_MAX_DIMS], rd[KILN_MAX_DIMS], rs[KILN_MAX_DIMS];
    int nk = 0, nr = 0;
    int64_t nout = 1, nred = 1;
    kiln_row_strides(x->shape, st);
    for (int d = 0; d < x->shape.rank; d++) {
        if (rmask >> d & 1) { rd[nr] = x->shape.dim[d]; rs[nr++] = st[d]; nred *= x->shape.dim[d]; }
        else { kd[nk] = x->shape.dim[d]; ks[nk++] = st[d]; nout *= x->shape.dim[d]; }
    }
    if (nout != c->out.numel)
        return kiln_set_error(KILN_INTERNAL, "%s: output has %lld elements, expected %lld",
                              c->node ? c->node->name : "reduce", (long long)c->out.numel, (long long)nout);
    double empty_max = kiln_dtype_is_float(c->out.dtype) ? -INFINITY : 0.0;
    for (int64_t o = 0; o < nout; o++) {
        int64_t base = kiln_offset_of(o, kd, ks, nk);
        double acc = (mode == RED_MAX) ? -INFINITY : 0.0;
        for (int64_t j = 0; j < nred; j++) {
            double v = kiln_load(x->data, x->dtype, base + kiln_offset_of(j, rd, rs, nr));
            if (mode != RED_MAX) acc += v;
            else if (v > acc || isnan(v)) acc = v;     /* once NaN, stays NaN (numpy) */
        }
        if (mode == RED_MEAN) acc /= (double)nred;     /* empty -> NaN, like numpy */
        if (mode == RED_MAX && nred == 0) acc = empty_max;
        kiln_store(c->out.data, c->out.dtype, o, acc);
    }
    return KILN_OK;
}

/* Axes from the (normalised) attrs; n_axes 0 means every axis. */
static unsigned axes_mask(const kiln_kctx *c) {
    const kiln_attrs *a = &c->node->attrs;
    int rank = c->in[0].shape.rank;
    if (a->n_axes == 0) return (1u << rank) - 1u;
    unsigned m = 0;
    for (int i = 0; i < a->n_axes; i++)
        if (a->axes[i] >= 0 && a->axes[i] < rank) m |= 1u << a->axes[i];
    return m;
}

kiln_status kiln_ref_reduce_sum(const kiln_kctx *c) { return reduce_mask(c, axes_mask(c), RED_SUM); }
kiln_status kiln_ref_reduce_mean(const kiln_kctx *c) { return reduce_mask(c, axes_mask(c), RED_MEAN); }
kiln_status kiln_ref_reduce_max(const kiln_kctx *c) { return reduce_mask(c, axes_mask(c), RED_MAX); }

/* Broadcast reversal: reduce the leading extra dims and the dims where the target has 1. */
kiln_status kiln_ref_sum_to(const kiln_kctx *c) {
    kiln_shape xs = c->in[0].shape, ts = c->out.shape;
    int lead = xs.rank - ts.rank;
    unsigned m = 0;
    for (int d = 0; d < xs.rank; d++)
        if (d < lead || (ts.dim[d - lead] == 1 && xs.dim[d] != 1)) m |= 1u << d;
    return reduce_mask(c, m, RED_SUM);
}

kiln_status kiln_ref_broadcast_to(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    kiln_shape os = c->out.shape;
    int64_t st[KILN_MAX_DIMS];
    kiln_bcast_strides(os, x->shape, st);      /* stride 0 where x is broadcast */
    size_t es = kiln_dtype_size(x->dtype);     /* same dtype: copy bytes, nothing rounds */
    for (int64_t o = 0; o < c->out.numel; o++)
        memcpy((char *)c->out.data + (size_t)o * es,
               (const char *)x->data + (size_t)kiln_offset_of(o, os.dim, st, os.rank) * es, es);
    return KILN_OK;
}
