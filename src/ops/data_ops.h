/* RandomCropFlip's per-example draw, shared by the ref and cpu kernels and by the host augment
 * (src/data/augment.c kiln_aug_apply), so all of them draw the same crop and flip for one example
 * key. The CUDA kernel (src/backend/cuda/cuda_data.cu) has a __device__ copy of the same
 * arithmetic; change both together. Semantics: src/ops/SEMANTICS.md. */
#ifndef KILN_DATA_OPS_H
#define KILN_DATA_OPS_H
#include "ops/op.h"

/* Counters of an example key: crop rows, crop columns, flip (augment.c's cutout counters follow). */
enum { KILN_AUG_CTR_CROP_Y, KILN_AUG_CTR_CROP_X, KILN_AUG_CTR_FLIP, KILN_AUG_CTR_NEXT };

/* Uniform integer in [0, n) from counter ctr of key (the cast truncates; u * n can round up to n
 * when u is within an ulp of 1, hence the clamp). */
static inline int kiln_aug_rand_int(uint64_t key, uint64_t ctr, int n) {
    int v = (int)(kiln_rand_uniform(key, ctr) * n);
    return v < n ? v : n - 1;
}

/* The crop offset (dy, dx in [-pad, pad]; 0 when pad is 0) and flip (probability rate) of the
 * example with key `key`. Output pixel (i, j) reads input pixel (i + dy, (flip ? W-1-j : j) + dx),
 * 0 outside the image: a crop of the zero-padded image, then a flip. */
static inline void kiln_crop_flip_params(uint64_t key, int pad, double rate, int *dy, int *dx, bool *flip) {
    *dy = kiln_aug_rand_int(key, KILN_AUG_CTR_CROP_Y, 2 * pad + 1) - pad;
    *dx = kiln_aug_rand_int(key, KILN_AUG_CTR_CROP_X, 2 * pad + 1) - pad;
    *flip = rate > 0 && kiln_rand_uniform(key, KILN_AUG_CTR_FLIP) < rate;
}
#endif
