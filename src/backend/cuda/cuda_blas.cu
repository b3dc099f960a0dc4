/* MatMul and BatchMatMul through cuBLAS, row-major by the usual trick: C[M,N] = A B is
 * C^T[N,M] = B^T A^T in cuBLAS's column-major view, so B is passed first.
 * f32: cublasSgemm(StridedBatched) (no TF32 unless KILN_CUDA_TF32=1, as PyTorch's matmul default); f64: Dgemm; f16/bf16:
 * GemmEx with f32 accumulation. BatchMatMul: each operand's batch dims must either equal the
 * output's (stride M*K) or be all 1 (stride 0); other broadcasts run on the CPU (kernel NULL). */
#include <limits.h>
#include "backend/cuda/cuda_internal.cuh"

typedef struct gemm_dims {
    int M, N, K;
    long long batches, stride_a, stride_b;
    bool ta, tb;
} gemm_dims;

/* Batch stride of operand v for output shape os, or -1 if not a plain stride. */
static long long batch_stride(kiln_shape v, kiln_shape os, long long mat) {
    int out_lead = os.rank - 2, v_lead = v.rank - 2;
    bool all_one = true, equal = v_lead == out_lead;
    for (int d = 0; d < v_lead; d++) {
        if (v.dim[d] != 1) all_one = false;
        if (equal && v.dim[d] != os.dim[d]) equal = false;
    }
    if (all_one) return 0;
    if (equal) return mat;
    /* leading 1s missing on v's side are fine when the remaining dims match exactly */
    if (v_lead < out_lead) {
        for (int d = 0; d < out_lead - v_lead; d++) if (os.dim[d] != 1) return -1;
        for (int d = 0; d < v_lead; d++) if (v.dim[d] != os.dim[d + out_lead - v_lead]) return -1;
        return mat;
    }
    return -1;
}

static bool dims_of(const kiln_node *n, gemm_dims *g) {
    kiln_shape a = n->in[0]->shape, b = n->in[1]->shape, o = n->shape;
    if (a.rank < 2 || b.rank < 2 || o.rank < 2) return false;
    g->ta = n->attrs.trans_a;
    g->tb = n->attrs.trans_b;
    int64_t M = o.dim[o.rank - 2], N = o.dim[o.rank - 1];
    int64_t K = g->ta ? a.dim[a.rank - 2] : a.dim[a.rank - 1];
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX) return false;
    g->M = (int)M; g->N = (int)N; g->K = (int)K;
    g->batches = 1;
    for (int d = 0; d < o.rank - 2; d++) g->batches *= o.dim[d];
    g->stride_a = batch_stride(a, o, (long long)M * K);
    g->stride_b = batch_stride(b, o, (long long)K * N);
    if (n->op == KILN_OP_MATMUL) { g->stride_a = g->stride_b = 0; g->batches = 1; }
    return g->stride_a >= 0 && g->stride_b >= 0;
}

static kiln_status k_gemm(const kiln_kctx *c) {
    gemm_dims g;
    if (!dims_of(c->node, &g)) return cu_fail(KILN_INTERNAL, "%s: unsupported matmul shape", c->node->name);
    cu_device *d = cu_dev();
    if (!d) return KILN_DEVICE_ERROR;
    size_t es = c->out.dtype == KILN_F64 ? 8 : c->out.dtype == KILN_F32 ? 4 : 2;
    if (g.M == 0 || g.N == 0 || g.batches == 0) return KILN_OK;
    if (g.K == 0) {
        kiln_status z = cu_check(cudaMemsetAsync(c->out.data, 0, (size_t)c->out.numel * es, d->stream), "MatMul (K=0)");
        return z ? z : cu_epilogue(c);
    }
    cublasOperation_t opa = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    int lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N, ldc = g.N;
    const void *A = c->in[0].data, *B = c->in[1].data;
    void *C = c->out.data;
    long long sc = (long long)g.M * g.N;
    cublasStatus_t st;
    if (c->out.dtype == KILN_F32 && c->in[0].dtype == KILN_F32) {
        const float one = 1.0f, zero = 0.0f;
        if (g.batches == 1)
            st = cublasSgemm(d->blas, opb, opa, g.N, g.M, g.K, &one, (const float *)B, ldb, (const float *)A, lda, &zero, (float *)C, ldc);
        else
            st = cublasSgemmStridedBatched(d->blas, opb, opa, g.N, g.M, g.K, &one, (const float *)B, ldb, g.stride_b,
                                           (const float *)A, lda, g.stride_a, &zero, (float *)C, ldc, sc, (int)g.batches);
    } else if (c->out.dtype == KILN_F64) {
        const double one = 1.0, zero = 0.0;
        if (g.batches == 1)
            st = cublasDgemm(d->blas, opb, opa, g.N, g.M, g.K, &one, (const double *)B, ldb, (const double *)A, lda, &zero, (double *)C, ldc);
        else
            st = cublasDgemmStridedBatched(d->blas, opb, opa, g.N, g.M, g.K, &one, (const double *)B, ldb, g.stride_b,
                                           (const double *)A, lda, g.stride_a, &zero, (double *)C, ldc, sc, (int)g.batches);
    } else {
        /* half operands; the output half too, or f32 (acc_f32: mixed precision) */
        cudaDataType_t t = c->in[0].dtype == KILN_F16 ? CUDA_R_16F : CUDA_R_16BF;
        cudaDataType_t tc = c->out.dtype == KILN_F32 ? CUDA_R_32F : t;
        const float one = 1.0f, zero = 0.0f;
        if (g.batches == 1)
            st = cublasGemmEx(d->blas, opb, opa, g.N, g.M, g.K, &one, B, t, ldb, A, t, lda, &zero, C, tc, ldc,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        else
            st = cublasGemmStridedBatchedEx(d->blas, opb, opa, g.N, g.M, g.K, &one, B, t, ldb, g.stride_b, A, t, lda, g.stride_a,
                                            &zero, C, tc, ldc, sc, (int)g.batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "%s (MatMul %dx%dx%d, %lld batches)", c->node->name, g.M, g.N, g.K, g.batches);
        return cu_blas_check(st, what);
    }
    return cu_epilogue(c);
}

kiln_kernel_fn cu_blas_kernel(const kiln_node *n) {
    if (n->op != KILN_OP_MATMUL && n->op != KILN_OP_BATCH_MATMUL) return NULL;
    bool mixed = n->attrs.acc_f32 && n->dtype == KILN_F32 && cu_is_fhb(n->in[0]->dtype) && n->in[0]->dtype != KILN_F32 &&
                 n->in[1]->dtype == n->in[0]->dtype;
    if (!mixed && (!cu_is_float(n->dtype) || !cu_all_dtype(n, n->dtype))) return NULL;
    gemm_dims g;
    if (!dims_of(n, &g) || g.batches > INT_MAX) return NULL;
    return k_gemm;
}
