/* Kiln dtypes, shapes and host tensors. */
#ifndef KILN_TENSOR_H
#define KILN_TENSOR_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "status.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_dtype {
    KILN_F32 = 0, KILN_F64, KILN_F16, KILN_BF16, KILN_I32, KILN_I64, KILN_U8, KILN_BOOL,
    KILN_DTYPE_COUNT
} kiln_dtype;

#define KILN_MAX_DIMS 6

typedef struct kiln_shape {
    int rank;
    int64_t dim[KILN_MAX_DIMS];
} kiln_shape;

/* KILN_SHAPE(64, 784) -> rank-2 shape (1 to 6 dims; also usable in static tables);
 * KILN_SCALAR -> rank 0. */
#define KILN_NARGS_(a, b, c, d, e, f, N, ...) N
#define KILN_NARGS(...) KILN_NARGS_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0)
#ifdef __cplusplus   /* a compound literal is C only: C++ spells the same value kiln_shape{...} */
#define KILN_SHAPE(...) (kiln_shape{ KILN_NARGS(__VA_ARGS__), { __VA_ARGS__ } })
#define KILN_SCALAR (kiln_shape{ 0, { 0 } })
#else
#define KILN_SHAPE(...) ((kiln_shape){ KILN_NARGS(__VA_ARGS__), { __VA_ARGS__ } })
#define KILN_SCALAR ((kiln_shape){ 0, { 0 } })
#endif
kiln_shape kiln_shape_make(const int64_t *dims, int rank);
int64_t kiln_shape_numel(kiln_shape s);   /* 0 if a dimension is 0; INT64_MAX when the product overflows */
bool kiln_shape_equal(kiln_shape a, kiln_shape b);
/* Writes "[64, 28, 28, 1]" into buf (always NUL-terminated); returns buf. */
char *kiln_shape_str(kiln_shape s, char *buf, size_t n);

size_t kiln_dtype_size(kiln_dtype t);
const char *kiln_dtype_name(kiln_dtype t);
bool kiln_dtype_is_float(kiln_dtype t);

/* Half-precision conversions (round to nearest even). */
uint16_t kiln_f32_to_f16(float f);
float kiln_f16_to_f32(uint16_t h);
uint16_t kiln_f32_to_bf16(float f);
float kiln_bf16_to_f32(uint16_t h);

/* A dense host tensor, row-major (image layout NHWC). */
typedef struct kiln_tensor {
    kiln_dtype dtype;
    kiln_shape shape;
    void *data;        /* kiln_tensor_nbytes(t) bytes */
    bool owns_data;
} kiln_tensor;

/* New zero-filled tensor; NULL (and kiln_last_error) on failure. Free with kiln_tensor_free. */
kiln_tensor *kiln_tensor_new(kiln_dtype dtype, kiln_shape shape);
/* Tensor that borrows `data` (caller keeps it alive). */
kiln_tensor *kiln_tensor_wrap(kiln_dtype dtype, kiln_shape shape, void *data);
void kiln_tensor_free(kiln_tensor *t);
size_t kiln_tensor_nbytes(const kiln_tensor *t);
/* Element i converted to/from double (any dtype). */
double kiln_tensor_get(const kiln_tensor *t, int64_t i);
void kiln_tensor_set(kiln_tensor *t, int64_t i, double v);

#ifdef __cplusplus
}
#endif
#endif
