/* Shared helpers for the cpu backend's f32 kernels (OpenBLAS + OpenMP). */
#ifndef KILN_CPU_INTERNAL_H
#define KILN_CPU_INTERNAL_H
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "backend/backend.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* glibc's libmvec has AVX-512 / AVX2 forms of these (_ZGVeN16v_expf, ...): declared "simd", gcc
 * calls them from vectorized loops, 16 lanes a call instead of one libm call per element (erff:
 * ~20x faster for GELU; within 4 ulp, as the scalar ones; glibc sets errno from neither, and the
 * library is built with -fno-math-errno). glibc's own math.h declares them so only under
 * -ffast-math, which Kiln does not use (NaN must pass through). erff / tanhf / expm1f / log1pf
 * came in glibc 2.35. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && defined(__GLIBC_PREREQ)
#if __GLIBC_PREREQ(2, 35) && !defined(KILN_NO_LIBMVEC)
float expf(float) __attribute__((simd("notinbranch")));
float logf(float) __attribute__((simd("notinbranch")));
float erff(float) __attribute__((simd("notinbranch")));
float tanhf(float) __attribute__((simd("notinbranch")));
float expm1f(float) __attribute__((simd("notinbranch")));
#endif
#endif

/* Below this many elements a parallel region costs more than it saves. */
#define CPU_PAR_MIN 32768

/* Threads for this kernel: the session's setting, or omp's current one. */
static inline int cpu_threads(const kiln_kctx *c) {
    int t = c->num_threads;
#ifdef _OPENMP
    if (t <= 0) t = omp_get_max_threads();
#endif
    return t > 0 ? t : 1;
}
/* Threads worth using for a loop of `work` elements. */
static inline int cpu_par(const kiln_kctx *c, int64_t work) {
    return work >= CPU_PAR_MIN ? cpu_threads(c) : 1;
}

/* Threads a workspace is planned for (before the step knows its own count): the session default
 * or OpenMP's, whichever is larger, so any run fits. */
static inline int cpu_plan_threads(void) {
    int t = kiln_threads_resolve(0);
#ifdef _OPENMP
    if (omp_get_max_threads() > t) t = omp_get_max_threads();
#endif
    return t > 0 ? t : 1;
}

static inline size_t cpu_align64(size_t b) { return (b + 63) & ~(size_t)63; }

static inline bool cpu_is_f32(const kiln_node *n) {
    if (n->dtype != KILN_F32) return false;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]->dtype != KILN_F32) return false;
    return true;
}
static inline float *cpu_f(const kiln_view *v) { return (float *)v->data; }

/* bf16 <-> f32 as src/core/dtype.c (round to nearest even, NaN kept quiet), inline so loops vectorise. */
static inline uint16_t cpu_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float cpu_from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Single-threaded / multi-threaded sgemm: row-major C[M,N] = alpha*op(A)*op(B) + beta*C.
 * cpu_sgemm lets OpenBLAS thread; cpu_sgemm1 runs on the calling thread only (for use inside our
 * own parallel regions, where nested BLAS threads would oversubscribe the cores). */
void cpu_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc, int nthreads);
void cpu_sgemm1_begin(void);
void cpu_sgemm1(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* Kernel lookups per family: NULL when the node's shape/attrs are not handled here. */
kiln_kernel_fn cpu_attention_kernel(const kiln_node *n);   /* cpu_attention.c: Attention, AttentionGrad */
kiln_kernel_fn cpu_rnn_kernel(const kiln_node *n);         /* cpu_rnn.c: RNN, RNNGrad (f32) */
kiln_kernel_fn cpu_shape_kernel(const kiln_node *n);       /* cpu_shape.c: Transpose, Slice, Pad, Concat (any dtype) */
size_t cpu_rnn_workspace(const kiln_node *n);
/* The fused epilogue on rows [rows, C] of an output: y = relu(y + bias) (NaN passes relu, as
 * the Relu kernel does); nothing when the step has none. */
static inline void cpu_epilogue(const kiln_kctx *c, float *y, int64_t rows, int64_t C) {
    const float *b = c->epi_bias ? (const float *)c->epi_bias->data : NULL;
    bool relu = c->epi_relu;
    if (!b && !relu) return;
    for (int64_t r = 0; r < rows; r++) {
        float *row = y + r * C;
        if (b && relu) for (int64_t k = 0; k < C; k++) { float v = row[k] + b[k]; row[k] = v <= 0.0f ? 0.0f : v; }
        else if (b) for (int64_t k = 0; k < C; k++) row[k] += b[k];
        else for (int64_t k = 0; k < C; k++) row[k] = row[k] <= 0.0f ? 0.0f : row[k];
    }
}

kiln_kernel_fn cpu_matmul_kernel(const kiln_node *n);
/* oneDNN convolutions (cpu_conv_dnnl.c): NULL when the build has no oneDNN, it cannot run the
 * node, or KILN_CPU_DNNL=0 */
kiln_kernel_fn cpu_dnnl_conv_kernel(const kiln_node *n);
size_t cpu_dnnl_conv_workspace(const kiln_node *n);
kiln_kernel_fn cpu_conv_kernel(const kiln_node *n);
kiln_kernel_fn cpu_winograd_kernel(const kiln_node *n);   /* stride-1 3x3/5x5 (cpu_winograd.c); NULL: not worth it */
size_t cpu_winograd_workspace(const kiln_node *n);
size_t cpu_conv_workspace(const kiln_node *n);
kiln_kernel_fn cpu_pool_kernel(const kiln_node *n);
kiln_kernel_fn cpu_elementwise_kernel(const kiln_node *n);
/* SumTo / Sum / Mean that reduce x's leading dims (x as [R, C] -> [C]): bias gradients */
bool cpu_sums_leading(const kiln_node *n);
kiln_kernel_fn cpu_norm_kernel(const kiln_node *n);       /* cpu_norm.c: batch norm and its gradients */
size_t cpu_norm_workspace(const kiln_node *n);
kiln_kernel_fn cpu_loss_optim_kernel(const kiln_node *n);
size_t cpu_loss_optim_workspace(const kiln_node *n);
/* cpu_bf16.c: mixed precision (casts; bf16 MatMul with f32 accumulation through oneDNN) */
bool cpu_has_bf16(void);                                  /* AVX512-BF16 or AMX-BF16 (KILN_CPU_BF16=0: no) */
kiln_kernel_fn cpu_cast_kernel(const kiln_node *n);
/* cpu_bf16_act.c: bf16 activations (mixed_bfloat16 keeps them bf16 between layers) */
kiln_kernel_fn cpu_bf16_act_kernel(const kiln_node *n);
size_t cpu_bf16_act_workspace(const kiln_node *n);
kiln_kernel_fn cpu_bf16_matmul_kernel(const kiln_node *n);
size_t cpu_bf16_matmul_workspace(const kiln_node *n);   /* also the f32 one's below */
kiln_kernel_fn cpu_dnnl_matmul_kernel(const kiln_node *n);    /* f32 MatMul through oneDNN (NULL: OpenBLAS) */
kiln_kernel_fn cpu_all_finite_kernel(const kiln_node *n);   /* loss scaling */
#endif
