/* Strides and offsets over row-major shapes with numpy broadcasting, shared by the ref kernels
 * (src/backend/ref) and the CUDA module (src/backend/cuda), so both index a broadcast operand
 * the same way. Plain C; under nvcc each function is also a device function. */
#ifndef KILN_BACKEND_BROADCAST_H
#define KILN_BACKEND_BROADCAST_H
#include <stdint.h>
#include "kiln/tensor.h"

#ifdef __CUDACC__
#define KILN_HD static __host__ __device__ __forceinline__
#else
#define KILN_HD static inline
#endif

/* Row-major strides (in elements) of shape s. */
KILN_HD void kiln_row_strides(kiln_shape s, int64_t *st) {
    int64_t k = 1;
    for (int d = s.rank - 1; d >= 0; d--) { st[d] = k; k *= s.dim[d]; }
}

/* Strides of `in` over the index space of `out` (in right-aligned, numpy rules): 0 along the
 * dims where in has 1 or that it lacks (leading), so the same element repeats there. */
KILN_HD void kiln_bcast_strides(kiln_shape out, kiln_shape in, int64_t *st) {
    int off = out.rank - in.rank;
    int64_t s = 1;
    for (int d = out.rank - 1; d >= 0; d--) {
        int k = d - off;
        if (k < 0) { st[d] = 0; continue; }
        st[d] = in.dim[k] == 1 ? 0 : s;
        s *= in.dim[k];
    }
}

/* Offset of the i-th element (row-major over dim[0..n)) in a buffer with strides str. */
KILN_HD int64_t kiln_offset_of(int64_t i, const int64_t *dim, const int64_t *str, int n) {
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) { off += (i % dim[d]) * str[d]; i /= dim[d]; }
    return off;
}

/* Index into `in` (idim[0..irank)) of element i of its broadcast shape odim[0..orank): the
 * strides of kiln_bcast_strides, computed on the way (one element, no stride array). */
KILN_HD int64_t kiln_bcast_index(int64_t i, const int64_t *odim, int orank, const int64_t *idim, int irank) {
    int64_t idx = 0, stride = 1;
    for (int d = orank - 1, e = irank - 1; d >= 0; d--, e--) {
        int64_t coord = i % odim[d];
        i /= odim[d];
        if (e >= 0) {
            if (idim[e] != 1) idx += coord * stride;
            stride *= idim[e];
        }
    }
    return idx;
}

#undef KILN_HD
#endif
