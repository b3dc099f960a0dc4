/* Shared state and helpers of the CUDA backend module (libkiln_cuda.so). CUDA C++ kept C-like:
 * templates only for the element type of a kernel. */
#ifndef KILN_CUDA_INTERNAL_CUH
#define KILN_CUDA_INTERNAL_CUH
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <cudnn.h>
#include "backend/backend.h"
#include "backend/cuda/cuda_module.h"
#include "backend/cuda/cuda_alloc_pool.h"
#include "backend/broadcast.h"

/* Kernel launch. Written as a macro so the CPU simulator (tests/cudasim) can run the same kernels
 * without a GPU: it defines CU_LAUNCH before including this header. */
#ifndef CU_LAUNCH
#define CU_LAUNCH(kernel, grid, block, shmem, stream) kernel<<<grid, block, shmem, stream>>>
#endif

#define CU_MAX_DEVICES 16
#define CU_THREADS 256

/* A data error found on the device (e.g. a label outside [0, C)): the first one is kept in mapped
 * pinned host memory and reported by sync(), since kernels cannot fail synchronously. */
typedef struct cu_dev_error {
    int set;
    int op;                 /* kiln_op */
    long long a, b, c;      /* op-specific values (label, row, classes) */
    unsigned long long node;   /* the const kiln_node * of the kernel that found it */
} cu_dev_error;

typedef struct cu_device {
    bool ready;
    cudaStream_t stream;
    cudaStream_t copy_stream;      /* host -> device copies ahead of the step that reads them */
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    void *blas_ws;                 /* cuBLAS workspace (graph capture safe) */
    kiln_pool pool;
    cu_dev_error *err_host;        /* mapped pinned */
    cu_dev_error *err_dev;         /* its device alias */
    bool capturing;
    unsigned long long *step_dev;  /* the session step for kernels replayed from a CUDA graph */
} cu_device;

typedef struct cu_state {
    const kiln_cuda_host *host;
    int count;
    /* TF32 tensor cores for f32, as PyTorch's defaults: convolutions yes, matmuls no.
     * KILN_CUDA_TF32=0: neither (exact f32 FMA); KILN_CUDA_TF32=1: both. */
    bool tf32_conv, tf32_matmul;
    size_t conv_ws_limit;          /* cuDNN workspace budget per conv (KILN_CUDNN_WORKSPACE_MB) */
    cu_device dev[CU_MAX_DEVICES];
} cu_state;

extern cu_state cu;
/* The GPU this thread's kernels run on: CUDA's current device is per host thread, so is this
 * mirror of it (both start at 0). Changed only through cu_use. */
extern thread_local int cu_cur;

/* Makes GPU index current on this thread (cudaSetDevice when it is not already). */
kiln_status cu_use(int index);
/* The current device, initialised lazily (stream, handles, error flag). NULL after reporting. */
cu_device *cu_dev(void);
static inline cudaStream_t cu_stream(void) { return cu.dev[cu_cur].stream; }

/* Device word holding the step that captured Dropout kernels read (set by kiln_cuda_set_step). */
const unsigned long long *cu_step_ptr(void);

/* Errors: report through libkiln and return the status. */
kiln_status cu_fail(kiln_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
kiln_status cu_check(cudaError_t e, const char *what);
kiln_status cu_launch_check(const kiln_kctx *c);   /* after a launch: cudaGetLastError */
kiln_status cu_blas_check(cublasStatus_t s, const char *what);
kiln_status cu_dnn_check(cudnnStatus_t s, const char *what);

/* Host memory for the module's own records (descriptor caches, communicators); callers handle
 * NULL. Plain calloc/free, not kiln_malloc: the module never links libkiln (cuda_module.h) and
 * kiln_cuda_host hands it no allocator, so the allocation-failure sweep (kiln_alloc_fail_at)
 * cannot reach these until it does; this is the one place to change then. */
static inline void *cu_host_calloc(size_t bytes) { return calloc(1, bytes); }
static inline void cu_host_free(void *p) { free(p); }

/* Grid size for n elements with grid-stride loops. */
static inline unsigned cu_blocks(int64_t n) {
    int64_t b = (n + CU_THREADS - 1) / CU_THREADS;
    if (b < 1) b = 1;
    if (b > 65535LL * 8) b = 65535LL * 8;
    return (unsigned)b;
}

#define CU_LOOP(i, n) for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

/* ---- element access: every float dtype computes in float (f64 in double) ---- */
template <typename T> struct cu_acc { typedef float type; };
template <> struct cu_acc<double> { typedef double type; };

__device__ __forceinline__ float cu_ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ double cu_ld(const double *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float cu_ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float cu_ld(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void cu_st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void cu_st(double *p, int64_t i, double v) { p[i] = v; }
__device__ __forceinline__ void cu_st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void cu_st(__nv_bfloat16 *p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

/* Any dtype as double (labels, scalars of a run-time dtype). */
__device__ __forceinline__ double cu_ld_any(const void *p, int dt, int64_t i) {
    switch (dt) {
    case KILN_F32: return ((const float *)p)[i];
    case KILN_F64: return ((const double *)p)[i];
    case KILN_F16: return __half2float(((const __half *)p)[i]);
    case KILN_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case KILN_I32: return ((const int32_t *)p)[i];
    case KILN_I64: return (double)((const int64_t *)p)[i];
    case KILN_U8: return ((const uint8_t *)p)[i];
    case KILN_BOOL: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
    default: return 0.0;
    }
}
/* Integer labels read exactly. */
__device__ __forceinline__ long long cu_ld_label(const void *p, int dt, int64_t i) {
    if (dt == KILN_I64) return ((const long long *)p)[i];
    if (dt == KILN_I32) return ((const int32_t *)p)[i];
    return (long long)cu_ld_any(p, dt, i);
}
/* Device twins of kiln_mix64 and kiln_rand_uniform (src/core): Dropout's masks and
 * RandomCropFlip's draws must match the host's bit for bit. */
__device__ __forceinline__ unsigned long long cu_mix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
__device__ __forceinline__ double cu_uniform(unsigned long long key, unsigned long long ctr) {
    return (double)(cu_mix64(key ^ cu_mix64(ctr)) >> 11) * (1.0 / 9007199254740992.0);
}

/* First error wins. */
__device__ __forceinline__ void cu_report(cu_dev_error *e, int op, long long a, long long b, long long c,
                                          unsigned long long node) {
    if (atomicCAS(&e->set, 0, -1) == 0) {
        e->op = op; e->a = a; e->b = b; e->c = c; e->node = node;
        __threadfence_system();
        atomicExch(&e->set, 1);
    }
}

/* Float dtypes the elementwise templates cover. */
static inline bool cu_is_float(kiln_dtype t) { return t == KILN_F32 || t == KILN_F64 || t == KILN_F16 || t == KILN_BF16; }
/* f32 plus the cheap half types (f64 where noted per family). */
static inline bool cu_is_fhb(kiln_dtype t) { return t == KILN_F32 || t == KILN_F16 || t == KILN_BF16; }
static inline bool cu_all_dtype(const kiln_node *n, kiln_dtype t) {
    if (n->dtype != t) return false;
    for (int i = 0; i < n->n_in; i++) if (n->in[i]->dtype != t) return false;
    return true;
}

/* Dispatches a statement on a float dtype: T is the element type. */
#define CU_FLOAT_SWITCH(dt, T, ...) \
    switch (dt) { \
    case KILN_F32: { typedef float T; __VA_ARGS__; } break; \
    case KILN_F64: { typedef double T; __VA_ARGS__; } break; \
    case KILN_F16: { typedef __half T; __VA_ARGS__; } break; \
    case KILN_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; } break; \
    default: return cu_fail(KILN_UNSUPPORTED, "cuda: dtype %d not handled", (int)(dt)); \
    }

/* Rank/stride description passed by value to kernels. */
typedef struct cu_shape { int rank; int64_t dim[KILN_MAX_DIMS]; } cu_shape;
static inline cu_shape cu_shape_of(kiln_shape s) { cu_shape r; r.rank = s.rank; for (int d = 0; d < KILN_MAX_DIMS; d++) r.dim[d] = d < s.rank ? s.dim[d] : 1; return r; }
typedef struct cu_strides { int64_t s[KILN_MAX_DIMS]; } cu_strides;
/* Row-major and broadcast strides, element offsets: backend/broadcast.h (shared with ref). */

static inline size_t kiln_dtype_size_cu(kiln_dtype t) {
    switch (t) {
    case KILN_F64: case KILN_I64: return 8;
    case KILN_F32: case KILN_I32: return 4;
    case KILN_F16: case KILN_BF16: return 2;
    default: return 1;
    }
}
static inline int64_t cu_numel(kiln_shape s) { int64_t n = 1; for (int d = 0; d < s.rank; d++) n *= s.dim[d]; return n; }
static inline size_t cu_align(size_t b) { return (b + 255) / 256 * 256; }

/* Per-family lookups: NULL when unsupported (op, dtype, shape). */
kiln_kernel_fn cu_blas_kernel(const kiln_node *n);
kiln_kernel_fn cu_dnn_kernel(const kiln_node *n);
size_t cu_dnn_workspace(const kiln_node *n);
void cu_dnn_release(void);
kiln_kernel_fn cu_pool_kernel(const kiln_node *n);
size_t cu_pool_workspace(const kiln_node *n);
/* pooling and batch norm through cuDNN where it computes what the ops say (cuda_dnn_ops.cu) */
kiln_kernel_fn cu_dnn_ops_kernel(const kiln_node *n);
size_t cu_dnn_ops_workspace(const kiln_node *n);
kiln_kernel_fn cu_elementwise_kernel(const kiln_node *n);
kiln_kernel_fn cu_reduce_kernel(const kiln_node *n);
size_t cu_reduce_workspace(const kiln_node *n);
kiln_kernel_fn cu_shape_kernel(const kiln_node *n);
kiln_kernel_fn cu_loss_optim_kernel(const kiln_node *n);
size_t cu_loss_optim_workspace(const kiln_node *n);
kiln_kernel_fn cu_norm_kernel(const kiln_node *n);
kiln_kernel_fn cu_sync_bn_kernel(const kiln_node *n);   /* cuda_sync_bn.cu */
size_t cu_norm_workspace(const kiln_node *n);
kiln_kernel_fn cu_data_kernel(const kiln_node *n);
kiln_kernel_fn cu_precision_kernel(const kiln_node *n);   /* cuda_precision.cu: loss scaling */
/* Embedding, LayerNorm (cuda_transformer.cu) and Attention (cuda_attention.cu) */
kiln_kernel_fn cu_transformer_kernel(const kiln_node *n);
size_t cu_transformer_workspace(const kiln_node *n);
kiln_kernel_fn cu_attention_kernel(const kiln_node *n);
size_t cu_attention_workspace(const kiln_node *n);
/* RNN, RNNGrad (cuda_rnn.cu) */
kiln_kernel_fn cu_rnn_kernel(const kiln_node *n);
size_t cu_rnn_workspace(const kiln_node *n);
/* Applies the kctx epilogue (fused BiasAdd + Relu) to c->out; conv/matmul kernels call it last. */
kiln_status cu_epilogue(const kiln_kctx *c);   /* GatherRows, RandomCropFlip (cuda_data.cu) */

/* Shared device helpers (cuda_shape.cu): pad a NHWC tensor into dst (for asymmetric conv pads),
 * slice it back, and 2-D transposes [R, C] -> [C, R] of 2- or 4-byte elements. */
kiln_status cu_pad4(const void *src, void *dst, size_t es, const int64_t *sdim, const int64_t *before,
                    const int64_t *ddim);
kiln_status cu_crop4(const void *src, void *dst, size_t es, const int64_t *sdim, const int64_t *before,
                     const int64_t *ddim);
kiln_status cu_transpose2d(const void *src, void *dst, size_t es, int64_t R, int64_t C);

/* Two-pass sum of squares, partials in double; used by GlobalNorm (cuda_loss_optim.cu). */
#define CU_RED_BLOCKS 240
#endif
