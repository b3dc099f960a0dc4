/* Ref (oracle) kernels for the reduction and shape op families (src/ops/reduce.c, shape.c).
 * Plain loops, every dtype: arithmetic goes through kiln_load/kiln_store in double; pure data
 * movement copies element bytes so nothing is rounded (i64 above 2^53, NaN payloads). */
#ifndef KILN_REF_REDUCE_SHAPE_H
#define KILN_REF_REDUCE_SHAPE_H
#include "ops/op.h"

/* Row-major strides of a shape (shared by reduce.c and shape.c). */
static inline void strides_of(kiln_shape s, int64_t *st) {
    int64_t k = 1;
    for (int d = s.rank - 1; d >= 0; d--) { st[d] = k; k *= s.dim[d]; }
}

/* Offset of the i-th element (row-major over dim[0..n)) in a buffer with strides str. */
static inline int64_t offset_of(int64_t i, const int64_t *dim, const int64_t *str, int n) {
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) { off += (i % dim[d]) * str[d]; i /= dim[d]; }
    return off;
}

/* reduce.c */
kiln_status kiln_ref_reduce_sum(const kiln_kctx *c);
kiln_status kiln_ref_reduce_mean(const kiln_kctx *c);
kiln_status kiln_ref_reduce_max(const kiln_kctx *c);    /* NaN propagates; empty -> -inf (0 for ints) */
kiln_status kiln_ref_sum_to(const kiln_kctx *c);
kiln_status kiln_ref_broadcast_to(const kiln_kctx *c);

/* shape.c */
kiln_status kiln_ref_copy(const kiln_kctx *c);           /* Reshape, Identity: no-op when aliased */
kiln_status kiln_ref_transpose(const kiln_kctx *c);
kiln_status kiln_ref_concat(const kiln_kctx *c);
kiln_status kiln_ref_slice(const kiln_kctx *c);
kiln_status kiln_ref_pad(const kiln_kctx *c);
kiln_status kiln_ref_cast(const kiln_kctx *c);
kiln_status kiln_ref_bias_add(const kiln_kctx *c);       /* safe with out == x (in place) */
#endif
