/* Ref (oracle) kernels for the data ops (src/ops/data_ops.c): GatherRows, RandomCropFlip.
 * Semantics: src/ops/SEMANTICS.md. */
#ifndef KILN_REF_DATA_OPS_H
#define KILN_REF_DATA_OPS_H
#include "ops/op.h"

/* data_ops.c */
kiln_status kiln_ref_gather_rows(const kiln_kctx *c);
kiln_status kiln_ref_random_crop_flip(const kiln_kctx *c);
#endif
