/* Ref kernels: GatherRows (row bytes copied, so every dtype is exact) and RandomCropFlip (per
 * element through kiln_load/kiln_store; the per-example draw is kiln_crop_flip_params of the
 * example's key). */
#include <string.h>
#include "ops/ref_kernels.h"
#include "ops/data_ops.h"

static int64_t load_index(const kiln_view *v, int64_t i) {
    return v->dtype == KILN_I64 ? ((const int64_t *)v->data)[i] : (int64_t)((const int32_t *)v->data)[i];
}

kiln_status kiln_ref_gather_rows(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *idx = &c->in[1];
    int64_t N = x->shape.dim[0], B = idx->numel;
    size_t row = (size_t)(N > 0 ? x->numel / N : 0) * kiln_dtype_size(x->dtype);
    for (int64_t b = 0; b < B; b++) {
        int64_t k = load_index(idx, b);
        if (k < 0 || k >= N)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s (%s): index %lld in row %lld is outside [0, %lld) (x has %lld rows)",
                                  c->node->name, kiln_op_get(c->node->op)->name, (long long)k, (long long)b, (long long)N, (long long)N);
        if (row) memcpy((char *)c->out.data + (size_t)b * row, (const char *)x->data + (size_t)k * row, row);
    }
    return KILN_OK;
}

kiln_status kiln_ref_random_crop_flip(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    const kiln_attrs *a = &c->node->attrs;
    const int64_t *keys = c->in[1].data;
    int64_t N = x->shape.dim[0], H = x->shape.dim[1], W = x->shape.dim[2], C = x->shape.dim[3];
    if (!a->training || (a->kh == 0 && a->rate <= 0.0)) {
        for (int64_t i = 0; i < x->numel; i++) kiln_store(c->out.data, c->out.dtype, i, kiln_load(x->data, x->dtype, i));
        return KILN_OK;
    }
    for (int64_t b = 0; b < N; b++) {
        int dy, dx;
        bool flip;
        kiln_crop_flip_params((uint64_t)keys[b], a->kh, a->rate, &dy, &dx, &flip);
        for (int64_t i = 0; i < H; i++)
            for (int64_t j = 0; j < W; j++) {
                int64_t si = i + dy, sj = (flip ? W - 1 - j : j) + dx;
                bool in = si >= 0 && si < H && sj >= 0 && sj < W;
                int64_t o = ((b * H + i) * W + j) * C, s = ((b * H + si) * W + sj) * C;
                for (int64_t ch = 0; ch < C; ch++)
                    kiln_store(c->out.data, c->out.dtype, o + ch, in ? kiln_load(x->data, x->dtype, s + ch) : 0.0);
            }
    }
    return KILN_OK;
}
