/* What the cuDNN shims share: sim_dnn.cpp (convolutions) and sim_dnn_ops.cpp (pooling, batch norm). */
#ifndef CUSIM_SIM_DNN_H
#define CUSIM_SIM_DNN_H
#include "cudnn.h"
#include "sim_internal.h"

struct cudnnContext { cudaStream_t stream = 0; };
struct cudnnTensorStruct { bool set = false; cudnnTensorFormat_t f; cudnnDataType_t t; int n, c, h, w; };

namespace cusim {
inline bool elem_of(cudnnDataType_t t, elem *e) {
    switch (t) {
    case CUDNN_DATA_FLOAT: *e = elem::f32; return true;
    case CUDNN_DATA_DOUBLE: *e = elem::f64; return true;
    case CUDNN_DATA_HALF: *e = elem::f16; return true;
    case CUDNN_DATA_BFLOAT16: *e = elem::bf16; return true;
    default: return false;
    }
}
/* The element type of t for load/store (descriptors hold only types elem_of accepted). */
inline elem elem_t(cudnnDataType_t t) {
    elem e = elem::f32;
    elem_of(t, &e);
    return e;
}
inline bool fmt_ok(cudnnTensorFormat_t f) { return f == CUDNN_TENSOR_NCHW || f == CUDNN_TENSOR_NHWC; }

inline size_t tidx(const cudnnTensorStruct &d, int n, int c, int h, int w) {
    return d.f == CUDNN_TENSOR_NCHW ? (((size_t)n * d.c + c) * d.h + h) * d.w + w : (((size_t)n * d.h + h) * d.w + w) * d.c + c;
}
inline bool resident(const char *fn, const void *p, size_t elems, cudnnDataType_t t) {
    if (in_device_memory(p, elems * elem_size(elem_t(t)))) return true;
    fail("%s: a %zu-element operand at %p is not inside one device allocation", fn, elems, p);
    set_error(cudaErrorIllegalAddress);
    return false;
}

inline size_t numel(const cudnnTensorStruct *d) { return (size_t)d->n * d->c * d->h * d->w; }
}  // namespace cusim
#endif
