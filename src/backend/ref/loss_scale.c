/* Ref kernels of the loss-scaling ops (src/ops/loss_scale.c). */
#include <math.h>
#include "ops/ref_kernels.h"

kiln_status kiln_ref_all_finite(const kiln_kctx *c) {
    bool ok = true;
    for (int k = 0; k < c->n_in && ok; k++)
        for (int64_t i = 0; i < c->in[k].numel && ok; i++) ok = isfinite(kiln_load(c->in[k].data, c->in[k].dtype, i));
    kiln_store(c->out.data, c->out.dtype, 0, ok ? 1.0 : 0.0);
    return KILN_OK;
}

kiln_status kiln_ref_loss_scale_update(const kiln_kctx *c) {
    float *scale = c->in[0].data, *good = c->in[1].data, *skipped = c->in[2].data;
    bool finite = ((const float *)c->in[3].data)[0] != 0.0f;
    if (finite) {
        good[0] += 1.0f;
        if (good[0] >= (float)c->node->attrs.alpha) {
            float s = scale[0] * 2.0f;
            if (isfinite(s)) scale[0] = s;
            good[0] = 0.0f;
        }
    } else {
        scale[0] = scale[0] * 0.5f >= 1.0f ? scale[0] * 0.5f : 1.0f;
        good[0] = 0.0f;
        skipped[0] += 1.0f;
    }
    ((float *)c->out.data)[0] = 0.0f;
    return KILN_OK;
}
