/* MatMul / BatchMatMul on OpenBLAS, and the sgemm wrappers the conv kernels share. */
#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "backend/cpu/cpu_internal.h"

/* OpenBLAS (pthread build) keeps one global thread count: only touch it when it differs, since
 * the call is not free. */
static void blas_threads(int n) {
    if (n < 1) n = 1;
    if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

static void sgemm_raw(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                      int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {   /* BLAS would leave C untouched when alpha*A*B is empty; scale it ourselves */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)M, (blasint)N, (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, C,
                (blasint)ldc);
}

/* Multi-threaded GEMM with OpenMP threads over blocks of C, each a single-threaded sgemm.
 * OpenBLAS's own pthread pool stays at one thread: two thread pools spinning on the same cores
 * (OpenBLAS's and OpenMP's, which the other kernels use) cost more than either saves. */
void cpu_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc, int nthreads) {
    blas_threads(1);
    int nt = nthreads;
    if (nt < 2 || M * N * K < (int64_t)64 * 64 * 64) { sgemm_raw(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); return; }
    bool by_rows = M >= 32 * (int64_t)nt;       /* else split the columns */
    int64_t len = by_rows ? M : N;
    #pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
        int t = omp_get_thread_num(), T = omp_get_num_threads();
#else
        int t = 0, T = 1;
#endif
        int64_t chunk = (len + T - 1) / T;
        if (by_rows) chunk = (chunk + 7) & ~(int64_t)7;             /* keep row blocks SIMD-friendly */
        else chunk = (chunk + 15) & ~(int64_t)15;
        int64_t lo = t * chunk, hi = lo + chunk < len ? lo + chunk : len;
        if (lo < hi) {
            if (by_rows)
                sgemm_raw(ta, tb, hi - lo, N, K, alpha, ta ? A + lo : A + lo * lda, lda, B, ldb, beta, C + lo * ldc, ldc);
            else
                sgemm_raw(ta, tb, M, hi - lo, K, alpha, A, lda, tb ? B + lo * ldb : B + lo, ldb, beta, C + lo, ldc);
        }
    }
}

/* Callers set the BLAS thread count to 1 (cpu_sgemm1_begin) before entering their parallel region. */
void cpu_sgemm1(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    sgemm_raw(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void cpu_sgemm1_begin(void) { blas_threads(1); }

/* ---- MatMul: a [M,K] (or [K,M]) x b [K,N] (or [N,K]) ---- */
static kiln_status k_matmul(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *a = &c->in[0], *b = &c->in[1];
    int64_t M = c->out.shape.dim[0], N = c->out.shape.dim[1];
    int64_t K = at->trans_a ? a->shape.dim[0] : a->shape.dim[1];
    float *y = cpu_f(&c->out);
    cpu_sgemm(at->trans_a, at->trans_b, M, N, K, 1.0f, cpu_f(a), a->shape.dim[1], cpu_f(b),
              b->shape.dim[1], 0.0f, y, N, cpu_threads(c));
    if (c->epi_bias || c->epi_relu) {
        #pragma omp parallel for schedule(static) num_threads(cpu_par(c, M * N))
        for (int64_t r = 0; r < M; r++) cpu_epilogue(c, y + r * N, 1, N);
    }
    return KILN_OK;
}

/* ---- BatchMatMul: [...,M,K] x [...,K,N], leading dims broadcast (numpy) ---- */
static kiln_status k_batch_matmul(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *a = &c->in[0], *b = &c->in[1];
    const kiln_shape *os = &c->out.shape;
    int r = os->rank, ra = a->shape.rank, rb = b->shape.rank;
    int64_t M = os->dim[r - 2], N = os->dim[r - 1];
    int64_t K = at->trans_a ? a->shape.dim[ra - 2] : a->shape.dim[ra - 1];
    int64_t lda = a->shape.dim[ra - 1], ldb = b->shape.dim[rb - 1];
    int64_t sa_mat = a->shape.dim[ra - 2] * lda, sb_mat = b->shape.dim[rb - 2] * ldb;
    /* Per output batch dim: its size and the matching element strides of a and b (0: broadcast). */
    int nb = r - 2;
    int64_t bdim[KILN_MAX_DIMS], sa[KILN_MAX_DIMS], sb[KILN_MAX_DIMS];
    int64_t acc_a = sa_mat, acc_b = sb_mat, batch = 1;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a->shape.dim[ia] : 1, db = ib >= 0 ? b->shape.dim[ib] : 1;
        bdim[i] = os->dim[i];
        sa[i] = da == 1 ? 0 : acc_a;
        sb[i] = db == 1 ? 0 : acc_b;
        acc_a *= da; acc_b *= db; batch *= bdim[i];
    }
    const float *A = cpu_f(a), *B = cpu_f(b);
    float *C = cpu_f(&c->out);
    int nt = cpu_threads(c);
    /* Many small products: one thread per product; few large ones: let BLAS thread each. */
    bool per_batch = nt > 1 && batch >= nt && M * N * K < (int64_t)128 * 128 * 128;
    if (per_batch) cpu_sgemm1_begin();
    #pragma omp parallel for schedule(static) num_threads(nt) if (per_batch)
    for (int64_t t = 0; t < batch; t++) {
        int64_t rem = t, oa = 0, ob = 0;
        for (int i = nb - 1; i >= 0; i--) {
            int64_t idx = rem % bdim[i]; rem /= bdim[i];
            oa += idx * sa[i]; ob += idx * sb[i];
        }
        if (per_batch)
            cpu_sgemm1(at->trans_a, at->trans_b, M, N, K, 1.0f, A + oa, lda, B + ob, ldb, 0.0f, C + t * M * N, N);
        else
            cpu_sgemm(at->trans_a, at->trans_b, M, N, K, 1.0f, A + oa, lda, B + ob, ldb, 0.0f, C + t * M * N, N, nt);
    }
    return KILN_OK;
}

kiln_kernel_fn cpu_matmul_kernel(const kiln_node *n) {
    if (n->n_in != 2 || !cpu_is_f32(n)) return NULL;
    if (n->op == KILN_OP_MATMUL)
        return n->in[0]->shape.rank == 2 && n->in[1]->shape.rank == 2 && n->shape.rank == 2 ? k_matmul : NULL;
    if (n->op == KILN_OP_BATCH_MATMUL)
        return n->in[0]->shape.rank >= 2 && n->in[1]->shape.rank >= 2 && n->shape.rank >= 2 ? k_batch_matmul : NULL;
    return NULL;
}
