/* Data movement and Cast: Reshape/Identity (device copy when not aliased), Transpose, ConcatV2,
 * Slice, Pad, BroadcastTo for every dtype (moved as 1/2/4/8-byte words, exact like ref), Cast
 * between every pair of dtypes with ref's rules (float -> int saturates, NaN -> 0; int <-> int via
 * int64 with wrap-around; -> bool is v != 0). Also the helpers the conv code uses. */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"

typedef struct idx_map {       /* out element o -> input offset base + sum((o_d) * st[d]) */
    int rank;
    int64_t dim[KILN_MAX_DIMS], st[KILN_MAX_DIMS];
    int64_t base;
} idx_map;

template <typename W>
__global__ void gather_kernel(const W *__restrict__ x, W *__restrict__ y, int64_t n, idx_map m) {
    CU_LOOP(o, n) y[o] = x[m.base + kiln_offset_of(o, m.dim, m.st, m.rank)];
}

static kiln_status launch_gather(const kiln_kctx *c, const void *x, void *y, size_t es, int64_t n, const idx_map *m) {
    if (n == 0) return KILN_OK;
    cudaStream_t s = cu_stream();
    switch (es) {
    case 1: CU_LAUNCH(gather_kernel<uint8_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint8_t *)x, (uint8_t *)y, n, *m); break;
    case 2: CU_LAUNCH(gather_kernel<uint16_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint16_t *)x, (uint16_t *)y, n, *m); break;
    case 4: CU_LAUNCH(gather_kernel<uint32_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint32_t *)x, (uint32_t *)y, n, *m); break;
    default: CU_LAUNCH(gather_kernel<unsigned long long>, cu_blocks(n), CU_THREADS, 0, s)((const unsigned long long *)x, (unsigned long long *)y, n, *m); break;
    }
    return cu_launch_check(c);
}

static kiln_status k_copy(const kiln_kctx *c) {
    if (c->out.data == c->in[0].data) return KILN_OK;
    size_t b = (size_t)c->out.numel * kiln_dtype_size_cu(c->out.dtype);
    return cu_check(cudaMemcpyAsync(c->out.data, c->in[0].data, b, cudaMemcpyDeviceToDevice, cu_stream()), "Reshape/Identity copy");
}

static kiln_status k_transpose(const kiln_kctx *c) {
    idx_map m;
    int64_t xst[KILN_MAX_DIMS];
    kiln_row_strides(c->in[0].shape, xst);
    m.rank = c->out.shape.rank;
    m.base = 0;
    for (int d = 0; d < m.rank; d++) { m.dim[d] = c->out.shape.dim[d]; m.st[d] = xst[c->node->attrs.perm[d]]; }
    return launch_gather(c, c->in[0].data, c->out.data, kiln_dtype_size_cu(c->out.dtype), c->out.numel, &m);
}

static kiln_status k_slice(const kiln_kctx *c) {
    idx_map m;
    int64_t xst[KILN_MAX_DIMS];
    kiln_row_strides(c->in[0].shape, xst);
    m.rank = c->out.shape.rank;
    m.base = 0;
    for (int d = 0; d < m.rank; d++) { m.dim[d] = c->out.shape.dim[d]; m.st[d] = xst[d]; m.base += c->node->attrs.begin[d] * xst[d]; }
    return launch_gather(c, c->in[0].data, c->out.data, kiln_dtype_size_cu(c->out.dtype), c->out.numel, &m);
}

static kiln_status k_broadcast_to(const kiln_kctx *c) {
    idx_map m;
    kiln_shape os = c->out.shape;
    m.rank = os.rank;
    m.base = 0;
    for (int d = 0; d < os.rank; d++) m.dim[d] = os.dim[d];
    kiln_bcast_strides(os, c->in[0].shape, m.st);     /* stride 0 where x is broadcast */
    return launch_gather(c, c->in[0].data, c->out.data, kiln_dtype_size_cu(c->out.dtype), c->out.numel, &m);
}

/* Concat: each input is a [outer, len_i] block (len_i = dim_i[axis] * inner) written at column
 * offset col of the [outer, total] output. */
template <typename W>
__global__ void concat_kernel(const W *__restrict__ x, W *__restrict__ y, int64_t outer, int64_t len, int64_t total, int64_t col) {
    CU_LOOP(i, outer * len) {
        int64_t r = i / len, k = i - r * len;
        y[r * total + col + k] = x[i];
    }
}

static kiln_status k_concat(const kiln_kctx *c) {
    int axis = c->node->attrs.axis;
    kiln_shape os = c->out.shape;
    size_t es = kiln_dtype_size_cu(c->out.dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= os.dim[d];
    for (int d = axis + 1; d < os.rank; d++) inner *= os.dim[d];
    int64_t total = os.dim[axis] * inner, col = 0;
    cudaStream_t s = cu_stream();
    for (int i = 0; i < c->n_in; i++) {
        int64_t len = c->in[i].shape.dim[axis] * inner, n = outer * len;
        if (n > 0) {
            const void *x = c->in[i].data;
            void *y = c->out.data;
            switch (es) {
            case 1: CU_LAUNCH(concat_kernel<uint8_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint8_t *)x, (uint8_t *)y, outer, len, total, col); break;
            case 2: CU_LAUNCH(concat_kernel<uint16_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint16_t *)x, (uint16_t *)y, outer, len, total, col); break;
            case 4: CU_LAUNCH(concat_kernel<uint32_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint32_t *)x, (uint32_t *)y, outer, len, total, col); break;
            default: CU_LAUNCH(concat_kernel<unsigned long long>, cu_blocks(n), CU_THREADS, 0, s)((const unsigned long long *)x, (unsigned long long *)y, outer, len, total, col); break;
            }
            kiln_status st = cu_launch_check(c);
            if (st) return st;
        }
        col += len;
    }
    return KILN_OK;
}

/* Pad: out element o is x's (coords - before) when inside, else the fill word. */
typedef struct pad_map {
    int rank;
    int64_t odim[KILN_MAX_DIMS], xdim[KILN_MAX_DIMS], xst[KILN_MAX_DIMS], before[KILN_MAX_DIMS];
} pad_map;

template <typename W>
__global__ void pad_kernel(const W *__restrict__ x, W *__restrict__ y, int64_t n, pad_map m, W fill) {
    CU_LOOP(o, n) {
        int64_t i = o, off = 0;
        bool inside = true;
        for (int d = m.rank - 1; d >= 0; d--) {
            int64_t k = i % m.odim[d] - m.before[d];
            i /= m.odim[d];
            if (k < 0 || k >= m.xdim[d]) { inside = false; break; }
            off += k * m.xst[d];
        }
        y[o] = inside ? x[off] : fill;
    }
}

/* The bytes of v stored as dtype t, as kiln_store writes them. */
static unsigned long long host_store_bits(kiln_dtype t, double v) {
    unsigned long long bits = 0;
    switch (t) {
    case KILN_F32: { float f = (float)v; memcpy(&bits, &f, 4); break; }
    case KILN_F64: memcpy(&bits, &v, 8); break;
    case KILN_F16: { __half h = __float2half_rn((float)v); memcpy(&bits, &h, 2); break; }
    case KILN_BF16: { __nv_bfloat16 h = __float2bfloat16_rn((float)v); memcpy(&bits, &h, 2); break; }
    case KILN_I32: { int32_t x = isnan(v) ? 0 : (int32_t)v; memcpy(&bits, &x, 4); break; }
    case KILN_I64: { int64_t x = isnan(v) ? 0 : (int64_t)v; memcpy(&bits, &x, 8); break; }
    case KILN_U8: { uint8_t x = isnan(v) ? 0 : (uint8_t)(int64_t)v; memcpy(&bits, &x, 1); break; }
    case KILN_BOOL: { uint8_t x = v != 0.0; memcpy(&bits, &x, 1); break; }
    default: break;
    }
    return bits;
}

static kiln_status launch_pad(const kiln_kctx *c, const void *x, void *y, size_t es, int64_t n, const pad_map *m,
                              unsigned long long fill) {
    if (n == 0) return KILN_OK;
    cudaStream_t s = cu_stream();
    switch (es) {
    case 1: CU_LAUNCH(pad_kernel<uint8_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint8_t *)x, (uint8_t *)y, n, *m, (uint8_t)fill); break;
    case 2: CU_LAUNCH(pad_kernel<uint16_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint16_t *)x, (uint16_t *)y, n, *m, (uint16_t)fill); break;
    case 4: CU_LAUNCH(pad_kernel<uint32_t>, cu_blocks(n), CU_THREADS, 0, s)((const uint32_t *)x, (uint32_t *)y, n, *m, (uint32_t)fill); break;
    default: CU_LAUNCH(pad_kernel<unsigned long long>, cu_blocks(n), CU_THREADS, 0, s)((const unsigned long long *)x, (unsigned long long *)y, n, *m, fill); break;
    }
    return cu_launch_check(c);
}

static kiln_status k_pad(const kiln_kctx *c) {
    pad_map m;
    kiln_shape xs = c->in[0].shape;
    m.rank = c->out.shape.rank;
    kiln_row_strides(xs, m.xst);
    for (int d = 0; d < m.rank; d++) { m.odim[d] = c->out.shape.dim[d]; m.xdim[d] = xs.dim[d]; m.before[d] = c->node->attrs.begin[d]; }
    return launch_pad(c, c->in[0].data, c->out.data, kiln_dtype_size_cu(c->out.dtype), c->out.numel, &m,
                      host_store_bits(c->out.dtype, c->node->attrs.alpha));
}

/* ---- conv helpers ---- */
kiln_status cu_pad4(const void *src, void *dst, size_t es, const int64_t *sdim, const int64_t *before, const int64_t *ddim) {
    pad_map m;
    m.rank = 4;
    int64_t k = 1;
    for (int d = 3; d >= 0; d--) { m.xst[d] = k; k *= sdim[d]; }
    int64_t n = 1;
    for (int d = 0; d < 4; d++) { m.odim[d] = ddim[d]; m.xdim[d] = sdim[d]; m.before[d] = before[d]; n *= ddim[d]; }
    return launch_pad(NULL, src, dst, es, n, &m, 0);
}

kiln_status cu_crop4(const void *src, void *dst, size_t es, const int64_t *sdim, const int64_t *before, const int64_t *ddim) {
    idx_map m;
    m.rank = 4;
    m.base = 0;
    int64_t k = 1, st[4];
    for (int d = 3; d >= 0; d--) { st[d] = k; k *= sdim[d]; }
    int64_t n = 1;
    for (int d = 0; d < 4; d++) { m.dim[d] = ddim[d]; m.st[d] = st[d]; m.base += before[d] * st[d]; n *= ddim[d]; }
    return launch_gather(NULL, src, dst, es, n, &m);
}

/* [R, C] -> [C, R] through 32x32 shared tiles. */
template <typename W>
__global__ void transpose2d_kernel(const W *__restrict__ x, W *__restrict__ y, int64_t R, int64_t C) {
    __shared__ W tile[32][33];
    int64_t c0 = (int64_t)blockIdx.x * 32, r0 = (int64_t)blockIdx.y * 32;
    for (int k = threadIdx.y; k < 32; k += blockDim.y) {
        int64_t r = r0 + k, cc = c0 + threadIdx.x;
        if (r < R && cc < C) tile[k][threadIdx.x] = x[r * C + cc];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < 32; k += blockDim.y) {
        int64_t cc = c0 + k, r = r0 + threadIdx.x;
        if (r < R && cc < C) y[cc * R + r] = tile[threadIdx.x][k];
    }
}

kiln_status cu_transpose2d(const void *src, void *dst, size_t es, int64_t R, int64_t C) {
    if (R == 0 || C == 0) return KILN_OK;
    dim3 grid((unsigned)((C + 31) / 32), (unsigned)((R + 31) / 32)), block(32, 8);
    cudaStream_t s = cu_stream();
    if (es == 2) CU_LAUNCH(transpose2d_kernel<uint16_t>, grid, block, 0, s)((const uint16_t *)src, (uint16_t *)dst, R, C);
    else if (es == 4) CU_LAUNCH(transpose2d_kernel<uint32_t>, grid, block, 0, s)((const uint32_t *)src, (uint32_t *)dst, R, C);
    else CU_LAUNCH(transpose2d_kernel<unsigned long long>, grid, block, 0, s)((const unsigned long long *)src, (unsigned long long *)dst, R, C);
    return cu_launch_check(NULL);
}

/* ---- Cast ---- */
__device__ __forceinline__ bool dt_int(int t) { return t == KILN_I32 || t == KILN_I64 || t == KILN_U8 || t == KILN_BOOL; }

__device__ __forceinline__ long long ld_i64(const void *p, int t, int64_t i) {
    switch (t) {
    case KILN_I32: return ((const int32_t *)p)[i];
    case KILN_I64: return ((const long long *)p)[i];
    case KILN_U8: return ((const uint8_t *)p)[i];
    default: return ((const uint8_t *)p)[i] != 0;
    }
}

__device__ __forceinline__ void st_i64(void *p, int t, int64_t i, long long v) {
    switch (t) {
    case KILN_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(unsigned long long)v; break;
    case KILN_I64: ((long long *)p)[i] = v; break;
    case KILN_U8: ((uint8_t *)p)[i] = (uint8_t)(unsigned long long)v; break;
    default: ((uint8_t *)p)[i] = v != 0; break;
    }
}

__device__ __forceinline__ void st_f(void *p, int t, int64_t i, double v) {
    switch (t) {
    case KILN_F32: ((float *)p)[i] = (float)v; break;
    case KILN_F64: ((double *)p)[i] = v; break;
    case KILN_F16: ((__half *)p)[i] = __float2half_rn((float)v); break;
    case KILN_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v); break;
    case KILN_I32: v = isnan(v) ? 0.0 : fmin(fmax(v, -2147483648.0), 2147483647.0); ((int32_t *)p)[i] = (int32_t)v; break;
    case KILN_I64: v = isnan(v) ? 0.0 : fmin(fmax(v, -9223372036854775808.0), 9223372036854774784.0); ((long long *)p)[i] = (long long)v; break;
    case KILN_U8: v = isnan(v) ? 0.0 : fmin(fmax(v, 0.0), 255.0); ((uint8_t *)p)[i] = (uint8_t)(long long)v; break;
    default: ((uint8_t *)p)[i] = v != 0.0; break;
    }
}

__global__ void cast_kernel(const void *x, int from, void *y, int to, int64_t n) {
    bool ii = dt_int(from) && dt_int(to);
    CU_LOOP(i, n) {
        if (ii) st_i64(y, to, i, ld_i64(x, from, i));
        else st_f(y, to, i, cu_ld_any(x, from, i));
    }
}

static kiln_status k_cast(const kiln_kctx *c) {
    if (c->in[0].dtype == c->out.dtype) return k_copy(c);
    if (c->out.numel == 0) return KILN_OK;
    CU_LAUNCH(cast_kernel, cu_blocks(c->out.numel), CU_THREADS, 0, cu_stream())(c->in[0].data, (int)c->in[0].dtype, c->out.data,
                                                                          (int)c->out.dtype, c->out.numel);
    return cu_launch_check(c);
}

kiln_kernel_fn cu_shape_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_RESHAPE: case KILN_OP_IDENTITY: return k_copy;
    case KILN_OP_TRANSPOSE: return k_transpose;
    case KILN_OP_CONCAT: return k_concat;
    case KILN_OP_SLICE: return k_slice;
    case KILN_OP_PAD: return k_pad;
    case KILN_OP_BROADCAST_TO: return k_broadcast_to;
    case KILN_OP_CAST: return k_cast;
    default: return NULL;
    }
}
