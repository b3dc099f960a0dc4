/* Ref kernels of synchronised batch norm (src/ops/sync_bn.c). */
#ifndef KILN_REF_SYNC_BN_H
#define KILN_REF_SYNC_BN_H
#include "ops/op.h"
kiln_status kiln_ref_cross_replica_sum(const kiln_kctx *c);
kiln_status kiln_ref_bn_stats(const kiln_kctx *c);
kiln_status kiln_ref_bn_stats_grad(const kiln_kctx *c);
kiln_status kiln_ref_bn_sync(const kiln_kctx *c);
kiln_status kiln_ref_bn_sync_grad(const kiln_kctx *c);
#endif
