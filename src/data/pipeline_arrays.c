/* A pipeline source over caller-owned arrays (what a front end hands over: NumPy arrays from
 * Python), borrowed without a copy: x f32 [N, ...], labels i32 class ids or f32 values. */
#include <math.h>
#include <string.h>
#include "core/core.h"
#include "data/pipeline_internal.h"
#include "data/tabular.h"

typedef struct arr_impl { const float *x; const void *y; bool float_y; int64_t row, lrow; } arr_impl;

static kiln_status arr_get(const kiln_source *s, int64_t i, float *x, int32_t *label) {
    const arr_impl *im = s->impl;
    memcpy(x, im->x + (size_t)i * (size_t)im->row, sizeof(float) * (size_t)im->row);
    if (!im->y) *label = -1;
    else memcpy(label, (const char *)im->y + (size_t)i * 4 * (size_t)im->lrow, 4 * (size_t)im->lrow);    /* i32 ids, or the f32 values' bits */
    return KILN_OK;
}

static void arr_destroy(kiln_source *s) { kiln_free(s->impl); }

/* Class ids in 0..KILN_MAX_CLASSES-1, and below num_classes when it is given; *top: the largest. */
static kiln_status check_ids(const int32_t *y, int64_t n, int num_classes, int *top) {
    int32_t t = -1;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] < 0 || y[i] >= KILN_MAX_CLASSES || (num_classes > 0 && y[i] >= num_classes))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_from_arrays: label %d of example %lld is not a class id in 0..%d",
                                  (int)y[i], (long long)i, (num_classes > 0 ? num_classes : KILN_MAX_CLASSES) - 1);
        if (y[i] > t) t = y[i];
    }
    *top = t;
    return KILN_OK;
}

kiln_data *kiln_data_from_arrays(const kiln_tensor *x, const kiln_tensor *y, int num_classes) {
    char a[96], b[96];
    if (!x || x->dtype != KILN_F32 || x->shape.rank < 2) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_from_arrays: x must be an f32 tensor [N, ...] of rank 2 or more%s%s",
                       x ? ", not " : "", x ? kiln_shape_str(x->shape, a, sizeof a) : "");
        return NULL;
    }
    int64_t n = x->shape.dim[0];
    if (y && (y->shape.rank < 1 || y->shape.dim[0] != n || (y->dtype != KILN_I32 && y->dtype != KILN_F32) || (y->shape.rank > 1 && y->dtype != KILN_I32))) {
        kiln_set_error(KILN_SHAPE_MISMATCH, "kiln_data_from_arrays: y must be [%lld] i32 class ids or f32 values (or [%lld, ...] i32 ids) to match x %s; it is %s %s",
                       (long long)n,
                       (long long)n, kiln_shape_str(x->shape, a, sizeof a), kiln_dtype_name(y->dtype), kiln_shape_str(y->shape, b, sizeof b));
        return NULL;
    }
    int top = -1;
    int64_t ny = y ? kiln_shape_numel(y->shape) : 0;
    if (y && y->dtype == KILN_I32 && check_ids(y->data, ny, num_classes, &top)) return NULL;
    if (y && y->dtype == KILN_F32)
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(((const float *)y->data)[i])) {
                kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_from_arrays: label of example %lld is %g", (long long)i, ((const float *)y->data)[i]);
                return NULL;
            }
    arr_impl *im = kiln_calloc(1, sizeof *im);
    kiln_source *s = im ? kiln_source_new() : NULL;
    if (!s) {
        kiln_free(im);
        kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory");
        return NULL;
    }
    im->x = x->data;
    im->y = y ? y->data : NULL;
    im->float_y = y && y->dtype == KILN_F32;
    im->row = kiln_shape_numel(x->shape) / (n > 0 ? n : 1);
    s->shape.rank = x->shape.rank - 1;
    for (int i = 1; i < x->shape.rank; i++) s->shape.dim[i - 1] = x->shape.dim[i];
    s->n = n;
    if (y && y->shape.rank > 1) {
        s->label_shape.rank = y->shape.rank - 1;
        for (int i = 1; i < y->shape.rank; i++) s->label_shape.dim[i - 1] = y->shape.dim[i];
    }
    im->lrow = kiln_source_label_numel(s);
    s->num_classes = im->float_y || !y ? 0 : num_classes > 0 ? num_classes : top + 1;
    s->float_labels = im->float_y;
    s->get = arr_get;
    s->destroy = arr_destroy;
    s->impl = im;
    return kiln_data_from_source(s);
}
