/* cpu kernel for RandomCropFlip (f32): whole pixel runs copied per output row instead of ref's
 * per-element loads. The draw is kiln_crop_flip_params (src/ops/data_ops.h) of each example's
 * key, as on ref and CUDA, so the batch is bit-identical. GatherRows runs on ref (a memcpy per row already). */
#include "backend/cpu/cpu_internal.h"
#include "ops/data_ops.h"

kiln_kernel_fn cpu_data_kernel(const kiln_node *n);

static kiln_status k_random_crop_flip(const kiln_kctx *c) {
    const kiln_attrs *a = &c->node->attrs;
    const float *x = cpu_f(&c->in[0]);
    const int64_t *keys = c->in[1].data;
    float *y = cpu_f(&c->out);
    int64_t N = c->in[0].shape.dim[0], H = c->in[0].shape.dim[1], W = c->in[0].shape.dim[2], C = c->in[0].shape.dim[3];
    if (!a->training || (a->kh == 0 && a->rate <= 0.0)) {
        if (y != x) memmove(y, x, (size_t)c->out.numel * sizeof(float));
        return KILN_OK;
    }
    int pad = a->kh;
    double rate = a->rate;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, c->out.numel))
    for (int64_t b = 0; b < N; b++) {
        int dy, dx;
        bool flip;
        kiln_crop_flip_params((uint64_t)keys[b], pad, rate, &dy, &dx, &flip);
        /* output columns j with source column inside the image: [j0, j1) */
        int64_t j0, j1;
        if (!flip) { j0 = -dx; j1 = W - dx; }            /* sj = j + dx */
        else { j0 = dx; j1 = W + dx; }                    /* sj = W-1-j + dx */
        if (j0 < 0) j0 = 0;
        if (j1 > W) j1 = W;
        for (int64_t i = 0; i < H; i++) {
            float *yr = y + (b * H + i) * W * C;
            int64_t si = i + dy;
            if (si < 0 || si >= H || j0 >= j1) { memset(yr, 0, (size_t)(W * C) * sizeof(float)); continue; }
            const float *xr = x + (b * H + si) * W * C;
            if (j0 > 0) memset(yr, 0, (size_t)(j0 * C) * sizeof(float));
            if (j1 < W) memset(yr + j1 * C, 0, (size_t)((W - j1) * C) * sizeof(float));
            if (!flip) memcpy(yr + j0 * C, xr + (j0 + dx) * C, (size_t)((j1 - j0) * C) * sizeof(float));
            else
                for (int64_t j = j0; j < j1; j++) memcpy(yr + j * C, xr + (W - 1 - j + dx) * C, (size_t)C * sizeof(float));
        }
    }
    return KILN_OK;
}

kiln_kernel_fn cpu_data_kernel(const kiln_node *n) {
    if (n->op == KILN_OP_RANDOM_CROP_FLIP && cpu_is_f32(n)) return k_random_crop_flip;
    return NULL;
}
