/* RandomCropFlip's per-example draw, shared by the ref and cpu kernels so they agree bit for bit.
 * The CUDA kernel (src/backend/cuda/cuda_data.cu) has a __device__ copy of the same arithmetic;
 * change both together. Semantics: src/ops/SEMANTICS.md. */
#ifndef KILN_DATA_OPS_H
#define KILN_DATA_OPS_H
#include <math.h>
#include "ops/op.h"

/* Example b of a RandomCropFlip with attrs seed (already mixed with the node id), attrs.kh = pad,
 * attrs.rate = flip probability, at session step `step`:
 *   key = kiln_mix64(seed ^ kiln_mix64(step + 0x1234567)), uk = kiln_rand_uniform(key, 3*b + k)
 *   dy = floor(u0 * (2*pad + 1)) - pad, dx likewise from u1 (both in [-pad, pad]; the floor is
 *   clamped to 2*pad against the product rounding up when u is within an ulp of 1)
 *   flip = u2 < rate
 * Output pixel (i, j) reads input pixel (i + dy, (flip ? W-1-j : j) + dx), 0 outside the image. */
static inline void kiln_crop_flip_params(uint64_t seed, uint64_t step, int64_t b, int pad, double rate,
                                         int *dy, int *dx, bool *flip) {
    uint64_t key = kiln_mix64(seed ^ kiln_mix64(step + 0x1234567ull));
    double u0 = kiln_rand_uniform(key, 3 * (uint64_t)b + 0);
    double u1 = kiln_rand_uniform(key, 3 * (uint64_t)b + 1);
    double u2 = kiln_rand_uniform(key, 3 * (uint64_t)b + 2);
    int span = 2 * pad + 1;
    int qy = (int)floor(u0 * (double)span), qx = (int)floor(u1 * (double)span);
    if (qy > 2 * pad) qy = 2 * pad;
    if (qx > 2 * pad) qx = 2 * pad;
    *dy = qy - pad;
    *dx = qx - pad;
    *flip = u2 < rate;
}
#endif
