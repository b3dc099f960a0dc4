/* Ref (oracle) kernels for the reduction and shape op families (src/ops/reduce.c, shape.c).
 * Plain loops, every dtype: arithmetic goes through kiln_load/kiln_store in double; pure data
 * movement copies element bytes so nothing is rounded (i64 above 2^53, NaN payloads). */
#ifndef KILN_REF_REDUCE_SHAPE_H
#define KILN_REF_REDUCE_SHAPE_H
#include "ops/op.h"

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
