/* CPU kernels of the fused recurrent op (src/ops/rnn.c), f32: the recurrence of rnn_core.h with
 * one sgemm per time step for the recurrent product (OpenBLAS threads it) and the gate math in
 * plain loops. The forward writes each step's h straight into the output (the next step's
 * product reads it there); the gradient recomputes the forward keeping h, c and the gates of
 * every step in its scratch, then runs back through time. */
#include "backend/cpu/cpu_internal.h"
#include "backend/rnn_attrs.h"

/* One step's products are small (batch x k*units x units): threads only pay off for large ones,
 * and on busy cores a parallel region per step mostly waits. */
static void cpu_rnn_gemm(int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                         float beta, float *C, int64_t ldc) {
    cpu_sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc, M * N * K >= ((int64_t)1 << 24) ? threads : 1);
}
#define RNN_T float
#define RNN_FN(name) cpu_rnn_##name
#define RNN_GEMM cpu_rnn_gemm
#define RNN_EXP expf
#define RNN_TANH tanhf
#include "backend/rnn_core.h"

static kiln_status k_rnn(const kiln_kctx *c) {
    rnn_dims d = kiln_rnn_dims(c->node);
    int64_t kU = d.k * d.U;
    float *Z = c->workspace, *RH = Z + d.B * kU, *C = RH + d.B * d.U;
    d.threads = c->num_threads > 0 ? c->num_threads : 1;
    cpu_rnn_fwd(&d, c->in[0].data, c->in[1].data, c->n_in > 2 ? c->in[2].data : NULL, c->out.data, d.U, d.T * d.U,
                d.cell == RNN_CELL_LSTM ? C : NULL, 0, NULL, Z, RH);
    return KILN_OK;
}

static kiln_status k_rnn_grad(const kiln_kctx *c) {
    rnn_dims d = kiln_rnn_dims(c->node);
    int64_t kU = d.k * d.U, BU = d.B * d.U;
    bool has_br = c->n_in > 3;
    float *H = c->workspace, *C = H + d.T * BU, *G = C + d.T * BU, *Z = G + d.T * d.B * rnn_saved(&d);
    float *RH = Z + d.B * kU, *dh = RH + BU, *dc = dh + BU, *dZ = dc + BU;
    float *dxp = c->out.data, *dR = dxp + d.B * d.T * kU, *dbr = dR + d.U * kU;
    const float *br = has_br ? c->in[2].data : NULL;
    d.threads = c->num_threads > 0 ? c->num_threads : 1;
    cpu_rnn_fwd(&d, c->in[0].data, c->in[1].data, br, H, BU, d.U, C, BU, rnn_saved(&d) ? G : NULL, Z, RH);
    cpu_rnn_bwd(&d, c->in[1].data, H, C, G, c->in[c->n_in - 1].data, dxp, dR, has_br ? dbr : NULL, dh, dc, RH, dZ);
    return KILN_OK;
}

kiln_kernel_fn cpu_rnn_kernel(const kiln_node *n) {
    if (n->dtype != KILN_F32) return NULL;
    return n->op == KILN_OP_RNN ? k_rnn : n->op == KILN_OP_RNN_GRAD ? k_rnn_grad : NULL;
}

size_t cpu_rnn_workspace(const kiln_node *n) {
    rnn_dims d = kiln_rnn_dims(n);
    int64_t kU = d.k * d.U, BU = d.B * d.U;
    if (n->op == KILN_OP_RNN) return (size_t)(d.B * kU + 2 * BU) * sizeof(float);
    return (size_t)(2 * d.T * BU + d.T * d.B * rnn_saved(&d) + 2 * d.B * kU + 4 * BU) * sizeof(float);
}
