/* Element transforms of the input pipeline: per-channel normalisation and random augmentation of
 * HWC images (crop with padding, horizontal flip, cutout). Randomness: counter hashing of the
 * example's key, so results depend only on (seed, epoch, example index). */
#include <string.h>
#include "core/core.h"
#include "data/pipeline_internal.h"
#include "ops/data_ops.h"   /* the crop/flip draw, shared with the RandomCropFlip op */

void kiln_aug_normalize(float *x, int64_t numel, const float *mean, const float *std, int channels) {
    float inv[64];
    if (channels <= 64) {
        for (int c = 0; c < channels; c++) inv[c] = 1.0f / std[c];
        for (int64_t i = 0; i < numel; i += channels)
            for (int c = 0; c < channels; c++) x[i + c] = (x[i + c] - mean[c]) * inv[c];
        return;
    }
    for (int64_t i = 0; i < numel; i++) {
        int c = (int)(i % channels);
        x[i] = (x[i] - mean[c]) / std[c];
    }
}

/* Counters after the crop/flip ones of src/ops/data_ops.h. */
enum { CTR_CUTOUT = KILN_AUG_CTR_NEXT, CTR_CUT_Y, CTR_CUT_X };

void kiln_aug_apply(const kiln_augment_opts *o, float *x, int h, int w, int c, uint64_t key, float *scratch) {
    size_t row = (size_t)w * (size_t)c;
    /* source offset of the crop in -pad..pad (0, 0 without crop), then the flip: exactly what the
     * RandomCropFlip op draws for this key (data on the device) */
    int oy, ox;
    bool flip;
    kiln_crop_flip_params(key, o->crop_pad, o->flip ? 0.5 : 0.0, &oy, &ox, &flip);
    if (oy != 0 || ox != 0) {
        memcpy(scratch, x, sizeof(float) * row * (size_t)h);
        for (int yy = 0; yy < h; yy++) {
            float *dst = x + (size_t)yy * row;
            int sy = yy + oy;
            if (sy < 0 || sy >= h) {
                for (size_t i = 0; i < row; i++) dst[i] = o->fill;
                continue;
            }
            const float *src = scratch + (size_t)sy * row;
            int x0 = ox < 0 ? -ox : 0;          /* first dst column with a source pixel */
            int x1 = ox > 0 ? w - ox : w;       /* one past the last */
            if (x0 > w) x0 = w;
            if (x1 < x0) x1 = x0;
            for (size_t i = 0; i < (size_t)x0 * (size_t)c; i++) dst[i] = o->fill;
            if (x1 > x0) memcpy(dst + (size_t)x0 * c, src + (size_t)(x0 + ox) * c, sizeof(float) * (size_t)(x1 - x0) * c);
            for (size_t i = (size_t)x1 * c; i < row; i++) dst[i] = o->fill;
        }
    }
    if (flip) {
        for (int yy = 0; yy < h; yy++) {
            float *r = x + (size_t)yy * row;
            for (int a = 0, b = w - 1; a < b; a++, b--)
                for (int k = 0; k < c; k++) {
                    float t = r[(size_t)a * c + k];
                    r[(size_t)a * c + k] = r[(size_t)b * c + k];
                    r[(size_t)b * c + k] = t;
                }
        }
    }
    if (o->cutout_size > 0) {
        double prob = o->cutout_prob > 0 ? o->cutout_prob : 1.0;
        if (kiln_rand_uniform(key, CTR_CUTOUT) < prob) {
            int s = o->cutout_size;
            int cy = kiln_aug_rand_int(key, CTR_CUT_Y, h), cx = kiln_aug_rand_int(key, CTR_CUT_X, w);
            int y0 = cy - s / 2, x0 = cx - s / 2, y1 = y0 + s, x1 = x0 + s;
            if (y0 < 0) y0 = 0;
            if (x0 < 0) x0 = 0;
            if (y1 > h) y1 = h;
            if (x1 > w) x1 = w;
            for (int yy = y0; yy < y1; yy++)
                for (size_t i = (size_t)x0 * c; i < (size_t)x1 * c; i++) x[(size_t)yy * row + i] = o->fill;
        }
    }
}
