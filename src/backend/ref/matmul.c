/* Ref kernels: MatMul and BatchMatMul. */
#include "ops/ref_kernels.h"

/* out[i,j] = sum_k A[i,k] * B[k,j] for one matrix pair at element offsets a0, b0, o0.
 * A is stored [M,K] (or [K,M] when trans_a), B [K,N] (or [N,K] when trans_b). */
static void matmul_one(const kiln_view *a, int64_t a0, const kiln_view *b, int64_t b0,
                       const kiln_view *o, int64_t o0, int64_t M, int64_t N, int64_t K,
                       bool trans_a, bool trans_b) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double av = kiln_load(a->data, a->dtype, a0 + (trans_a ? k * M + i : i * K + k));
                double bv = kiln_load(b->data, b->dtype, b0 + (trans_b ? j * K + k : k * N + j));
                acc += av * bv;
            }
            kiln_store(o->data, o->dtype, o0 + i * N + j, acc);
        }
}

kiln_status kiln_ref_matmul(const kiln_kctx *c) {
    const kiln_view *a = &c->in[0], *b = &c->in[1];
    bool ta = c->node->attrs.trans_a, tb = c->node->attrs.trans_b;
    int64_t M = c->out.shape.dim[0], N = c->out.shape.dim[1];
    int64_t K = ta ? a->shape.dim[0] : a->shape.dim[1];
    matmul_one(a, 0, b, 0, &c->out, 0, M, N, K, ta, tb);
    return KILN_OK;
}

/* Offset (in matrices) of the operand batch that output batch `ob` reads: leading dims are
 * right-aligned against the output's, and a dim of size 1 broadcasts. */
static int64_t batch_offset(const kiln_view *v, const kiln_shape *out, int64_t ob) {
    int out_lead = out->rank - 2, v_lead = v->shape.rank - 2;
    int64_t off = 0, stride = 1;
    for (int d = out_lead - 1; d >= 0; d--) {
        int64_t idx = ob % out->dim[d];
        ob /= out->dim[d];
        int vd = d - (out_lead - v_lead);
        if (vd < 0) continue;
        int64_t size = v->shape.dim[vd];
        if (size != 1) off += idx * stride;
        stride *= size;
    }
    return off;
}

kiln_status kiln_ref_batch_matmul(const kiln_kctx *c) {
    const kiln_view *a = &c->in[0], *b = &c->in[1];
    bool ta = c->node->attrs.trans_a, tb = c->node->attrs.trans_b;
    const kiln_shape *os = &c->out.shape;
    int r = os->rank;
    int64_t M = os->dim[r - 2], N = os->dim[r - 1];
    int64_t K = ta ? a->shape.dim[a->shape.rank - 2] : a->shape.dim[a->shape.rank - 1];
    int64_t batches = 1;
    for (int d = 0; d < r - 2; d++) batches *= os->dim[d];
    for (int64_t ob = 0; ob < batches; ob++)
        matmul_one(a, batch_offset(a, os, ob) * M * K, b, batch_offset(b, os, ob) * K * N,
                   &c->out, ob * M * N, M, N, K, ta, tb);
    return KILN_OK;
}
