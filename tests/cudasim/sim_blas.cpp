/* cuBLAS GEMMs on the CPU, with the documented column-major semantics: C = alpha op(A) op(B) +
 * beta C, op(A) m x k stored in an lda x (k or m) matrix, C m x n; beta == 0 means C is not read.
 * Arguments are validated as cuBLAS does (CUBLAS_STATUS_INVALID_VALUE for negative sizes or
 * leading dimensions below the rows they hold), and every matrix must lie inside device memory.
 * Products in double with OpenBLAS (more exact than any cuBLAS path; TF32 is not modelled). */
#include <cblas.h>
#include <vector>
#include "cublas_v2.h"
#include "sim_internal.h"

struct cublasContext {
    cudaStream_t stream = 0;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

using namespace cusim;

namespace {
struct operand { const void *p; elem t; int ld; long long stride; bool trans; };

/* Bytes spanned by batch b of an rows x cols (stored) matrix with leading dimension ld. */
bool resident(const char *what, const void *p, elem t, int rows, int cols, int ld, long long stride, int batch) {
    if (rows == 0 || cols == 0 || batch == 0) return true;
    long long lo = stride < 0 ? stride * (batch - 1) : 0, hi = stride > 0 ? stride * (batch - 1) : 0;
    size_t es = elem_size(t), span = (size_t)((long long)(cols - 1) * ld + rows + hi - lo) * es;
    const char *base = (const char *)p + lo * (long long)es;
    if (in_device_memory(base, span)) return true;
    fail("cuBLAS: matrix %s (%d x %d, ld %d, stride %lld, %d batches) at %p is not inside one device allocation", what,
         rows, cols, ld, stride, batch, p);
    return false;
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, double alpha,
                    operand A, operand B, double beta, void *C, elem ct, int ldc, long long sc, int batch) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (ta < CUBLAS_OP_N || ta > CUBLAS_OP_C || tb < CUBLAS_OP_N || tb > CUBLAS_OP_C) return CUBLAS_STATUS_INVALID_VALUE;
    A.trans = ta != CUBLAS_OP_N;
    B.trans = tb != CUBLAS_OP_N;
    int arows = A.trans ? k : m, brows = B.trans ? n : k;
    auto mx1 = [](int v) { return v > 1 ? v : 1; };
    if (m < 0 || n < 0 || k < 0 || batch < 0 || A.ld < mx1(arows) || B.ld < mx1(brows) || ldc < mx1(m)) {
        fail("cuBLAS gemm: invalid value (m %d n %d k %d, lda %d ldb %d ldc %d, %d batches)", m, n, k, A.ld, B.ld, ldc, batch);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    bool ok = resident("C", C, ct, m, n, ldc, sc, batch);
    if (k > 0 && alpha != 0.0)
        ok = ok && resident("A", A.p, A.t, arows, A.trans ? m : k, A.ld, A.stride, batch) &&
             resident("B", B.p, B.t, brows, B.trans ? k : n, B.ld, B.stride, batch);
    if (!ok) { set_error(cudaErrorIllegalAddress); return CUBLAS_STATUS_EXECUTION_FAILED; }
    if (!launchable("cuBLAS", h->stream)) return CUBLAS_STATUS_EXECUTION_FAILED;
    enqueue(h->stream, [=] {
        /* op(A) by rows, op(B) by columns, in double; c = a b^T row-major */
        std::vector<double> a((size_t)m * k), b((size_t)n * k), c((size_t)m * n, 0.0);
        for (int bt = 0; bt < batch; bt++) {
            for (int i = 0; i < m; i++)
                for (int l = 0; l < k; l++)
                    a[(size_t)i * k + l] = load(A.p, A.t, A.stride * bt + (A.trans ? (long long)i * A.ld + l : (long long)l * A.ld + i));
            for (int j = 0; j < n; j++)
                for (int l = 0; l < k; l++)
                    b[(size_t)j * k + l] = load(B.p, B.t, B.stride * bt + (B.trans ? (long long)l * B.ld + j : (long long)j * B.ld + l));
            if (k > 0) cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0, a.data(), k, b.data(), k, 0.0, c.data(), n);
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++) {
                    size_t ci = (size_t)(sc * bt + (long long)j * ldc + i);
                    store(C, ct, ci, alpha * c[(size_t)i * n + j] + (beta == 0.0 ? 0.0 : beta * load(C, ct, ci)));
                }
        }
    });
    return CUBLAS_STATUS_SUCCESS;
}

bool elem_of(cudaDataType t, elem *e) {
    switch (t) {
    case CUDA_R_32F: *e = elem::f32; return true;
    case CUDA_R_64F: *e = elem::f64; return true;
    case CUDA_R_16F: *e = elem::f16; return true;
    case CUDA_R_16BF: *e = elem::bf16; return true;
    default: return false;
    }
}

/* The GemmEx type combinations cuBLAS documents for these compute types; alpha/beta are float
 * for the 32F compute types, double for 64F. */
cublasStatus_t gemm_ex(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                       const void *alpha, const void *A, cudaDataType at, int lda, long long sa, const void *B,
                       cudaDataType bt, int ldb, long long sb, const void *beta, void *C, cudaDataType ct, int ldc,
                       long long sc, int batch, cublasComputeType_t comp) {
    elem ea, eb, ec;
    if (!elem_of(at, &ea) || !elem_of(bt, &eb) || !elem_of(ct, &ec) || at != bt) return CUBLAS_STATUS_NOT_SUPPORTED;
    bool c32 = comp == CUBLAS_COMPUTE_32F || comp == CUBLAS_COMPUTE_32F_PEDANTIC || comp == CUBLAS_COMPUTE_32F_FAST_16F ||
               comp == CUBLAS_COMPUTE_32F_FAST_16BF || comp == CUBLAS_COMPUTE_32F_FAST_TF32;
    bool c64 = comp == CUBLAS_COMPUTE_64F || comp == CUBLAS_COMPUTE_64F_PEDANTIC;
    bool ok = c64 ? (at == CUDA_R_64F && ct == CUDA_R_64F)
            : c32 && (at == CUDA_R_32F ? ct == CUDA_R_32F : (at == CUDA_R_16F || at == CUDA_R_16BF) && (ct == at || ct == CUDA_R_32F));
    if (!ok) { fail("cublasGemmEx: types A %d C %d with compute type %d are not supported", (int)at, (int)ct, (int)comp); return CUBLAS_STATUS_NOT_SUPPORTED; }
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    double al = c64 ? *(const double *)alpha : *(const float *)alpha, be = c64 ? *(const double *)beta : *(const float *)beta;
    return gemm(h, ta, tb, m, n, k, al, operand{ A, ea, lda, sa, false }, operand{ B, eb, ldb, sb, false }, be, C, ec, ldc, sc, batch);
}
}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t *h) { *h = new cublasContext(); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy(cublasHandle_t h) { delete h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!stream_of(s)) return CUBLAS_STATUS_INVALID_VALUE;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}
/* The documented rule: a device buffer aligned to 256 bytes. */
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && ((uintptr_t)ws % 256 || !in_device_memory(ws, bytes))) return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "unknown error";
    }
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *alpha,
                           const float *A, int lda, const float *B, int ldb, const float *beta, float *C, int ldc) {
    return gemm(h, ta, tb, m, n, k, *alpha, operand{ A, elem::f32, lda, 0, false }, operand{ B, elem::f32, ldb, 0, false }, *beta,
                C, elem::f32, ldc, 0, 1);
}
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double *alpha,
                           const double *A, int lda, const double *B, int ldb, const double *beta, double *C, int ldc) {
    return gemm(h, ta, tb, m, n, k, *alpha, operand{ A, elem::f64, lda, 0, false }, operand{ B, elem::f64, ldb, 0, false }, *beta,
                C, elem::f64, ldc, 0, 1);
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda, long long sa, const float *B, int ldb,
                                         long long sb, const float *beta, float *C, int ldc, long long sc, int batch) {
    return gemm(h, ta, tb, m, n, k, *alpha, operand{ A, elem::f32, lda, sa, false }, operand{ B, elem::f32, ldb, sb, false }, *beta,
                C, elem::f32, ldc, sc, batch);
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                         const double *alpha, const double *A, int lda, long long sa, const double *B, int ldb,
                                         long long sb, const double *beta, double *C, int ldc, long long sc, int batch) {
    return gemm(h, ta, tb, m, n, k, *alpha, operand{ A, elem::f64, lda, sa, false }, operand{ B, elem::f64, ldb, sb, false }, *beta,
                C, elem::f64, ldc, sc, batch);
}
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t comp, cublasGemmAlgo_t) {
    return gemm_ex(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, comp);
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at, int lda, long long sa,
                                          const void *B, cudaDataType bt, int ldb, long long sb, const void *beta, void *C,
                                          cudaDataType ct, int ldc, long long sc, int batch, cublasComputeType_t comp,
                                          cublasGemmAlgo_t) {
    return gemm_ex(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, comp);
}
