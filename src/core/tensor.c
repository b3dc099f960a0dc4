#include <string.h>
#include "core/core.h"
#include "core/load_store.h"

static bool shape_ok(kiln_dtype dtype, kiln_shape shape) {
    if ((unsigned)dtype >= KILN_DTYPE_COUNT) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "tensor: unknown dtype %d", (int)dtype);
        return false;
    }
    if (shape.rank < 0 || shape.rank > KILN_MAX_DIMS) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "tensor: rank %d outside 0..%d", shape.rank, KILN_MAX_DIMS);
        return false;
    }
    for (int i = 0; i < shape.rank; i++)
        if (shape.dim[i] < 0) {
            kiln_set_error(KILN_INVALID_ARGUMENT, "tensor: negative dimension %lld", (long long)shape.dim[i]);
            return false;
        }
    int64_t n = kiln_shape_numel(shape);
    if (n == INT64_MAX || (uint64_t)n > SIZE_MAX / kiln_dtype_size(dtype)) {
        char b[160];
        kiln_set_error(KILN_INVALID_ARGUMENT, "tensor: shape %s has too many elements to address", kiln_shape_str(shape, b, sizeof b));
        return false;
    }
    return true;
}

kiln_tensor *kiln_tensor_new(kiln_dtype dtype, kiln_shape shape) {
    if (!shape_ok(dtype, shape)) return NULL;
    kiln_tensor *t = kiln_calloc(1, sizeof *t);
    if (!t) { kiln_set_error(KILN_OUT_OF_MEMORY, "tensor: out of host memory"); return NULL; }
    t->dtype = dtype;
    t->shape = shape;
    size_t n = kiln_tensor_nbytes(t);
    t->data = kiln_malloc_aligned(n);
    if (!t->data) {
        kiln_free(t);
        kiln_set_error(KILN_OUT_OF_MEMORY, "tensor: cannot allocate %zu bytes of host memory", n);
        return NULL;
    }
    memset(t->data, 0, n);
    t->owns_data = true;
    return t;
}

kiln_tensor *kiln_tensor_wrap(kiln_dtype dtype, kiln_shape shape, void *data) {
    if (!shape_ok(dtype, shape)) return NULL;
    kiln_tensor *t = kiln_calloc(1, sizeof *t);
    if (!t) { kiln_set_error(KILN_OUT_OF_MEMORY, "tensor: out of host memory"); return NULL; }
    t->dtype = dtype;
    t->shape = shape;
    t->data = data;
    return t;
}

void kiln_tensor_free(kiln_tensor *t) {
    if (!t) return;
    if (t->owns_data) kiln_free_aligned(t->data);
    kiln_free(t);
}

size_t kiln_tensor_nbytes(const kiln_tensor *t) {
    uint64_t n = (uint64_t)kiln_shape_numel(t->shape), es = kiln_dtype_size(t->dtype);
    return es && n > SIZE_MAX / es ? SIZE_MAX : (size_t)(n * es);    /* saturates: no wrap to a small size */
}

double kiln_tensor_get(const kiln_tensor *t, int64_t i) { return kiln_load(t->data, t->dtype, i); }
void kiln_tensor_set(kiln_tensor *t, int64_t i, double v) { kiln_store(t->data, t->dtype, i, v); }
