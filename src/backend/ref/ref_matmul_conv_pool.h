/* Ref (oracle) kernels for the matmul, convolution and pooling families. Semantics: src/ops/SEMANTICS.md.
 * Plain loops over kiln_load/kiln_store with double accumulation, so every dtype works; each
 * output element is computed by one gather and stored once (output buffers arrive unzeroed). */
#ifndef KILN_REF_MATMUL_CONV_POOL_H
#define KILN_REF_MATMUL_CONV_POOL_H
#include "ops/op.h"

kiln_status kiln_ref_matmul(const kiln_kctx *c);
kiln_status kiln_ref_batch_matmul(const kiln_kctx *c);

kiln_status kiln_ref_conv2d(const kiln_kctx *c);
kiln_status kiln_ref_conv2d_bwd_input(const kiln_kctx *c);
kiln_status kiln_ref_conv2d_bwd_filter(const kiln_kctx *c);

kiln_status kiln_ref_max_pool(const kiln_kctx *c);
kiln_status kiln_ref_max_pool_grad(const kiln_kctx *c);
kiln_status kiln_ref_avg_pool(const kiln_kctx *c);
kiln_status kiln_ref_avg_pool_grad(const kiln_kctx *c);
kiln_status kiln_ref_global_avg_pool(const kiln_kctx *c);
#endif
