/* In-memory labelled datasets: construction, synthetic data, validation split, seeded shuffling
 * and batch gathering. */
#include <math.h>
#include <string.h>
#include "core/core.h"
#include "data/data_internal.h"

struct kiln_dataset {
    kiln_tensor *x;     /* f32 [N, ...] */
    kiln_tensor *y;     /* i32 [N], or NULL (unlabelled) */
    int num_classes;
};

kiln_dataset *kiln_dataset_adopt(kiln_tensor *x, kiln_tensor *y, int num_classes) {
    kiln_dataset *d = kiln_calloc(1, sizeof *d);
    if (!d) {
        kiln_tensor_free(x);
        kiln_tensor_free(y);
        kiln_set_error(KILN_OUT_OF_MEMORY, "dataset: out of host memory");
        return NULL;
    }
    d->x = x;
    d->y = y;
    d->num_classes = num_classes;
    return d;
}

void kiln_dataset_free(kiln_dataset *d) {
    if (!d) return;
    kiln_tensor_free(d->x);
    kiln_tensor_free(d->y);
    kiln_free(d);
}

static bool is_int_dtype(kiln_dtype t) { return t == KILN_I32 || t == KILN_I64 || t == KILN_U8; }

kiln_dataset *kiln_dataset_from_tensors(const kiln_tensor *x, const kiln_tensor *y, int num_classes) {
    if (!x) { kiln_set_error(KILN_INVALID_ARGUMENT, "dataset: x must not be NULL"); return NULL; }
    if (x->shape.rank < 1) {
        kiln_set_error(KILN_SHAPE_MISMATCH, "dataset: x must have rank >= 1 ([N, ...]), got a scalar");
        return NULL;
    }
    if ((unsigned)x->dtype >= KILN_DTYPE_COUNT) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "dataset: x has unknown dtype %d", (int)x->dtype);
        return NULL;
    }
    int64_t n = x->shape.dim[0];
    if (y) {
        char sb[96];
        if (y->shape.rank < 1 || y->shape.dim[0] != n) {
            kiln_set_error(KILN_SHAPE_MISMATCH, "dataset: y must be [%lld] (or [%lld, ...]: several labels per example) to match x's first dimension, got %s",
                           (long long)n,
                           (long long)n, kiln_shape_str(y->shape, sb, sizeof sb));
            return NULL;
        }
        if (!is_int_dtype(y->dtype)) {
            kiln_set_error(KILN_DTYPE_MISMATCH, "dataset: y must hold integer class ids (i32, i64 or u8), got %s",
                           kiln_dtype_name(y->dtype));
            return NULL;
        }
        int64_t maxl = -1, ny = kiln_shape_numel(y->shape);
        for (int64_t i = 0; i < ny; i++) {
            double v = kiln_tensor_get(y, i);
            if (v < 0 || v > 2147483647.0 || (num_classes > 0 && v >= num_classes)) {
                if (num_classes > 0)
                    kiln_set_error(KILN_INVALID_ARGUMENT, "dataset: label %.0f at index %lld is outside 0..%d", v,
                                   (long long)i, num_classes - 1);
                else
                    kiln_set_error(KILN_INVALID_ARGUMENT, "dataset: label %.0f at index %lld is negative or too large", v,
                                   (long long)i);
                return NULL;
            }
            if ((int64_t)v > maxl) maxl = (int64_t)v;
        }
        if (num_classes <= 0) num_classes = (int)(maxl + 1);
    } else if (num_classes < 0) {
        num_classes = 0;
    }

    kiln_tensor *cx = kiln_tensor_new(KILN_F32, x->shape);
    kiln_tensor *cy = y ? kiln_tensor_new(KILN_I32, y->shape) : NULL;
    if (!cx || (y && !cy)) {
        kiln_tensor_free(cx);
        kiln_tensor_free(cy);
        kiln_set_error(KILN_OUT_OF_MEMORY, "dataset: out of host memory copying %lld examples", (long long)n);
        return NULL;
    }
    int64_t total = kiln_shape_numel(x->shape);
    float *fx = cx->data;
    if (x->dtype == KILN_F32) memcpy(fx, x->data, (size_t)total * sizeof(float));
    else for (int64_t i = 0; i < total; i++) fx[i] = (float)kiln_tensor_get(x, i);
    if (cy) {
        int32_t *iy = cy->data;
        for (int64_t i = 0, ny = kiln_shape_numel(y->shape); i < ny; i++) iy[i] = (int32_t)kiln_tensor_get(y, i);
    }
    return kiln_dataset_adopt(cx, cy, num_classes);
}

kiln_dataset *kiln_dataset_synthetic(kiln_shape example_shape, int num_classes, int64_t n, uint64_t seed) {
    if (example_shape.rank < 0 || example_shape.rank >= KILN_MAX_DIMS) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_synthetic: example rank %d must be 0..%d", example_shape.rank,
                       KILN_MAX_DIMS - 1);
        return NULL;
    }
    if (num_classes < 1 || n < 0) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_synthetic: need num_classes >= 1 and n >= 0, got %d and %lld",
                       num_classes, (long long)n);
        return NULL;
    }
    kiln_shape xs = { example_shape.rank + 1, { n } };
    for (int i = 0; i < example_shape.rank; i++) {
        if (example_shape.dim[i] < 0) {
            kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_synthetic: negative example dimension %lld",
                           (long long)example_shape.dim[i]);
            return NULL;
        }
        xs.dim[i + 1] = example_shape.dim[i];
    }
    kiln_tensor *x = kiln_tensor_new(KILN_F32, xs);
    kiln_tensor *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    if (!x || !y) {
        kiln_tensor_free(x);
        kiln_tensor_free(y);
        kiln_set_error(KILN_OUT_OF_MEMORY, "dataset_synthetic: out of host memory for %lld examples", (long long)n);
        return NULL;
    }
    kiln_rng r = kiln_rng_new(seed);
    float *fx = x->data;
    int64_t total = kiln_shape_numel(xs);
    for (int64_t i = 0; i < total; i++) {
        float v = (float)kiln_rng_uniform(&r);
        fx[i] = v < 1.0f ? v : 0x1.fffffep-1f;   /* rounding to f32 can reach 1.0 */
    }
    int32_t *iy = y->data;
    for (int64_t i = 0; i < n; i++) {
        int32_t c = (int32_t)(kiln_rng_uniform(&r) * num_classes);
        iy[i] = c < num_classes ? c : num_classes - 1;
    }
    return kiln_dataset_adopt(x, y, num_classes);
}

int64_t kiln_dataset_size(const kiln_dataset *d) { return d ? d->x->shape.dim[0] : 0; }

kiln_shape kiln_dataset_example_shape(const kiln_dataset *d) {
    kiln_shape s = { 0, { 0 } };
    if (!d) return s;
    s.rank = d->x->shape.rank - 1;
    for (int i = 0; i < s.rank; i++) s.dim[i] = d->x->shape.dim[i + 1];
    return s;
}

int kiln_dataset_num_classes(const kiln_dataset *d) { return d ? d->num_classes : 0; }
const kiln_tensor *kiln_dataset_x(const kiln_dataset *d) { return d ? d->x : NULL; }
const kiln_tensor *kiln_dataset_y(const kiln_dataset *d) { return d ? d->y : NULL; }

/* Rows [begin, end) of t (first dimension) as a new tensor. */
static kiln_tensor *slice_rows(const kiln_tensor *t, int64_t begin, int64_t end) {
    kiln_shape s = t->shape;
    s.dim[0] = end - begin;
    kiln_tensor *r = kiln_tensor_new(t->dtype, s);
    if (!r) return NULL;
    size_t row = t->shape.dim[0] ? kiln_tensor_nbytes(t) / (size_t)t->shape.dim[0] : 0;
    if (row && end > begin) memcpy(r->data, (const char *)t->data + (size_t)begin * row, (size_t)(end - begin) * row);
    return r;
}

kiln_dataset *kiln_dataset_split_tail(kiln_dataset *d, double fraction) {
    if (!d) { kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_split_tail: dataset is NULL"); return NULL; }
    if (!(fraction > 0.0 && fraction < 1.0)) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_split_tail: fraction %g must be in (0, 1)", fraction);
        return NULL;
    }
    int64_t n = d->x->shape.dim[0];
    int64_t keep = (int64_t)((double)n * (1.0 - fraction));   /* like Keras: split_at = int(N * (1 - split)) */
    if (keep < 0) keep = 0;
    if (keep > n) keep = n;
    if (keep == 0 || keep == n) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_split_tail: a split of %g of %lld examples leaves %s empty",
                       fraction, (long long)n, keep == 0 ? "the training set" : "the validation set");
        return NULL;
    }
    kiln_tensor *hx = slice_rows(d->x, 0, keep), *tx = slice_rows(d->x, keep, n);
    kiln_tensor *hy = d->y ? slice_rows(d->y, 0, keep) : NULL, *ty = d->y ? slice_rows(d->y, keep, n) : NULL;
    if (!hx || !tx || (d->y && (!hy || !ty))) {
        kiln_tensor_free(hx); kiln_tensor_free(tx); kiln_tensor_free(hy); kiln_tensor_free(ty);
        kiln_set_error(KILN_OUT_OF_MEMORY, "dataset_split_tail: out of host memory");
        return NULL;                       /* d unchanged */
    }
    kiln_dataset *tail = kiln_dataset_adopt(tx, ty, d->num_classes);
    if (!tail) { kiln_tensor_free(hx); kiln_tensor_free(hy); return NULL; }
    kiln_tensor_free(d->x);
    kiln_tensor_free(d->y);
    d->x = hx;
    d->y = hy;
    return tail;
}

/* Unbiased integer in [0, bound) (bound >= 1): rejection sampling over 64 random bits. */
static uint64_t rng_below(kiln_rng *r, uint64_t bound) {
    uint64_t threshold = (0 - bound) % bound;   /* 2^64 mod bound */
    for (;;) {
        uint64_t v = kiln_rng_next(r);
        if (v >= threshold) return v % bound;
    }
}

void kiln_dataset_order(const kiln_dataset *d, bool shuffle, uint64_t seed, uint64_t epoch, int64_t *order) {
    if (!d || !order) return;
    int64_t n = d->x->shape.dim[0];
    for (int64_t i = 0; i < n; i++) order[i] = i;
    if (!shuffle || n < 2) return;
    kiln_rng r = kiln_rng_new(seed ^ kiln_mix64(epoch ^ 0xD1B54A32D192ED03ull));
    for (int64_t i = n - 1; i > 0; i--) {            /* Fisher-Yates */
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

kiln_status kiln_dataset_gather(const kiln_dataset *d, const int64_t *order, int64_t start, int64_t count,
                                kiln_tensor *bx, kiln_tensor *by) {
    if (!d || !order || !bx) return kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_gather: d, order and bx must not be NULL");
    int64_t n = d->x->shape.dim[0];
    if (count < 1 || start < 0 || start > n || count > n - start)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_gather: examples [%lld, %lld) are outside the dataset's %lld",
                              (long long)start, (long long)start + (long long)count, (long long)n);
    if (bx->dtype != KILN_F32)
        return kiln_set_error(KILN_DTYPE_MISMATCH, "dataset_gather: bx must be f32, got %s", kiln_dtype_name(bx->dtype));
    kiln_shape want = d->x->shape;
    want.dim[0] = count;
    if (!kiln_shape_equal(bx->shape, want)) {
        char a[96], b[96];
        return kiln_set_error(KILN_SHAPE_MISMATCH, "dataset_gather: bx is %s, expected %s (a batch of %lld examples)",
                              kiln_shape_str(bx->shape, a, sizeof a), kiln_shape_str(want, b, sizeof b), (long long)count);
    }
    if (by) {
        if (!d->y)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_gather: the dataset has no labels; pass by = NULL");
        if (by->dtype != KILN_I32)
            return kiln_set_error(KILN_DTYPE_MISMATCH, "dataset_gather: by must be i32, got %s", kiln_dtype_name(by->dtype));
        kiln_shape wy = d->y->shape;
        wy.dim[0] = count;
        if (!kiln_shape_equal(by->shape, wy)) {
            char a[96], b[96];
            return kiln_set_error(KILN_SHAPE_MISMATCH, "dataset_gather: by is %s, expected %s",
                                  kiln_shape_str(by->shape, a, sizeof a), kiln_shape_str(wy, b, sizeof b));
        }
    }
    for (int64_t k = 0; k < count; k++) {
        int64_t i = order[start + k];
        if (i < 0 || i >= n)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "dataset_gather: order[%lld] = %lld is outside 0..%lld",
                                  (long long)(start + k), (long long)i, (long long)n - 1);
    }
    size_t row = (size_t)kiln_shape_numel(want) / (size_t)count * sizeof(float);
    const char *src = d->x->data;
    char *dst = bx->data;
    for (int64_t k = 0; k < count; k++) memcpy(dst + (size_t)k * row, src + (size_t)order[start + k] * row, row);
    if (by) {
        const int32_t *sy = d->y->data;
        int32_t *dy = by->data;
        size_t per = (size_t)(kiln_shape_numel(d->y->shape) / n);   /* labels per example */
        for (int64_t k = 0; k < count; k++) memcpy(dy + (size_t)k * per, sy + (size_t)order[start + k] * per, per * sizeof *sy);
    }
    return KILN_OK;
}
