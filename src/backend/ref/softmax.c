/* Ref kernels for Softmax and LogSoftmax: max-subtracted, accumulated in double. Three passes per
 * row (max, sum, write) that read x[k] before writing out[k], so the output may alias the input;
 * exp is recomputed in the last pass so each output is rounded to its dtype only once. */
#include <math.h>
#include "ops/ref_kernels.h"

static kiln_status softmax_common(const kiln_kctx *c, bool log_out) {
    const kiln_view *X = &c->in[0];
    kiln_dtype dt = c->out.dtype;
    int axis = c->node->attrs.axis;
    int64_t outer = 1, len = X->shape.dim[axis], inner = 1;
    for (int d = 0; d < axis; d++) outer *= X->shape.dim[d];
    for (int d = axis + 1; d < X->shape.rank; d++) inner *= X->shape.dim[d];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in;
            double m = -INFINITY;
            for (int64_t k = 0; k < len; k++) {
                double v = kiln_load(X->data, dt, base + k * inner);
                if (v > m || isnan(v)) m = v;          /* a NaN makes the whole row NaN */
            }
            double s = 0;
            for (int64_t k = 0; k < len; k++) s += exp(kiln_load(X->data, dt, base + k * inner) - m);
            double ls = log(s);
            for (int64_t k = 0; k < len; k++) {
                int64_t j = base + k * inner;
                double z = kiln_load(X->data, dt, j) - m;
                kiln_store(c->out.data, dt, j, log_out ? z - ls : exp(z) / s);
            }
        }
    }
    return KILN_OK;
}

kiln_status kiln_ref_softmax(const kiln_kctx *c) { return softmax_common(c, false); }
kiln_status kiln_ref_log_softmax(const kiln_kctx *c) { return softmax_common(c, true); }
