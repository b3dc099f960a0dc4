/* Ref kernels of the fused recurrent op: RNN and RNNGrad (src/ops/rnn.c), in double over any
 * float dtype (inputs loaded into the scratch with kiln_load), the recurrence of rnn_core.h with
 * a plain triple-loop product. Semantics: src/ops/SEMANTICS.md. */
#include "ops/ref_kernels.h"
#include "backend/rnn_attrs.h"

static void ref_gemm(int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double *A, int64_t lda, const double *B, int64_t ldb,
                     double beta, double *C, int64_t ldc) {
    (void)threads;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += (ta ? A[k * lda + m] : A[m * lda + k]) * (tb ? B[n * ldb + k] : B[k * ldb + n]);
            C[m * ldc + n] = acc + (beta != 0 ? beta * C[m * ldc + n] : 0);
        }
}
#define RNN_T double
#define RNN_FN(name) ref_rnn_##name
#define RNN_GEMM ref_gemm
#define RNN_EXP exp
#define RNN_TANH tanh
#include "backend/rnn_core.h"

static double *load_all(const kiln_view *v, double *dst) {
    for (int64_t i = 0; i < v->numel; i++) dst[i] = kiln_load(v->data, v->dtype, i);
    return dst + v->numel;
}

/* Scratch (doubles): xp, R, br, dy copies, H, C, G for every step, and the step buffers. */
size_t kiln_rnn_ref_workspace(const kiln_node *n) {
    rnn_dims d = kiln_rnn_dims(n);
    int64_t kU = d.k * d.U, BU = d.B * d.U;
    int64_t elems = d.B * d.T * kU * 2 + d.U * kU * 2 + kU * 2 + d.B * d.T * d.U + d.T * BU * 2 + d.T * d.B * 4 * d.U + d.B * kU * 2 + BU * 4;
    return (size_t)elems * sizeof(double);
}

kiln_status kiln_ref_rnn(const kiln_kctx *c) {
    rnn_dims d = kiln_rnn_dims(c->node);
    int64_t BU = d.B * d.U, kU = d.k * d.U;
    double *xp = c->workspace, *R = load_all(&c->in[0], xp), *br = load_all(&c->in[1], R), *H = br;
    if (c->n_in > 2) H = load_all(&c->in[2], br);
    double *C = H + d.T * BU, *Z = C + d.T * BU, *RH = Z + d.B * kU;
    ref_rnn_fwd(&d, xp, R, c->n_in > 2 ? br : NULL, H, BU, d.U, C, BU, NULL, Z, RH);
    for (int64_t b = 0; b < d.B; b++)
        for (int64_t i = 0; i < d.T; i++)
            for (int64_t j = 0; j < d.U; j++) kiln_store(c->out.data, c->out.dtype, (b * d.T + i) * d.U + j, H[i * BU + b * d.U + j]);
    return KILN_OK;
}

kiln_status kiln_ref_rnn_grad(const kiln_kctx *c) {
    rnn_dims d = kiln_rnn_dims(c->node);
    int64_t BU = d.B * d.U, kU = d.k * d.U;
    bool has_br = c->n_in > 3;
    double *xp = c->workspace, *R = load_all(&c->in[0], xp), *br = load_all(&c->in[1], R), *dy = br;
    if (has_br) dy = load_all(&c->in[2], br);
    double *H = load_all(&c->in[c->n_in - 1], dy), *C = H + d.T * BU, *G = C + d.T * BU, *Z = G + d.T * d.B * 4 * d.U;
    double *RH = Z + d.B * kU, *dh = RH + BU, *dc = dh + BU, *dZ = dc + BU, *out = dZ + d.B * kU;
    ref_rnn_fwd(&d, xp, R, has_br ? br : NULL, H, BU, d.U, C, BU, G, Z, RH);
    double *dxp = out, *dR = dxp + d.B * d.T * kU, *dbr = dR + d.U * kU;
    ref_rnn_bwd(&d, R, H, C, G, dy, dxp, dR, has_br ? dbr : NULL, dh, dc, RH, dZ);
    for (int64_t i = 0; i < c->out.numel; i++) kiln_store(c->out.data, c->out.dtype, i, out[i]);
    return KILN_OK;
}
