/* f32 Attention and AttentionGrad (FlashAttention-2 on the CPU). Forward: threads over (b, h,
 * query tile of ATT_BR rows); each tile walks the key tiles of ATT_BC keys keeping each row's
 * running max and sum, rescales its O accumulator when the max grows, and writes O / sum and the
 * log-sum-exp. Backward: threads over (b, h), each computing its dq, dk, dv alone (so sums never
 * depend on the thread count) query tile by query tile: the tile's probabilities are recomputed
 * from the log-sum-exp, and dv, dk are summed into the output, dq in a tile accumulator. The tile
 * products are single-threaded sgemm calls; the scratch (two tiles of scores, one O / dq tile)
 * lives on the stack, so memory is O and the log-sum-exp only: linear in T. */
#include "backend/cpu/cpu_internal.h"

#define ATT_BR 32
#define ATT_BC 64
#define ATT_DH_MAX 256

typedef struct att { int64_t BH, Tq, Tk, Dh, W, off; float scale; bool causal; double rate; uint64_t seed, step; } att;

static att att_of(const kiln_kctx *c) {
    const kiln_shape *q = &c->in[0].shape, *k = &c->in[1].shape;
    const kiln_attrs *n = &c->node->attrs;
    att a = { q->dim[0] * q->dim[1], q->dim[2], k->dim[2], q->dim[3], q->dim[3] + 1, k->dim[2] - q->dim[2],
              (float)n->alpha, n->causal, n->training ? n->rate : 0.0, n->seed, c->step };
    return a;
}

/* Attention dropout on a tile of probabilities (rows i0.., keys j0.. of head bh): P Z into D,
 * with the keep of each entry regenerated from its index (kiln_dropout_keep, as ref). */
static void tile_dropout(const att *a, int64_t bh, int64_t i0, int64_t br, int64_t j0, int64_t bc, const float *P, float *D) {
    float sc = (float)(1.0 / (1.0 - a->rate));
    for (int64_t r = 0; r < br; r++) {
        int64_t base = (bh * a->Tq + i0 + r) * a->Tk + j0;
        for (int64_t cc = 0; cc < bc; cc++)
            D[r * ATT_BC + cc] = P[r * ATT_BC + cc] * (kiln_dropout_keep(a->seed, a->step, base + cc, a->rate) ? sc : 0.0f);   /* NaN * 0 stays NaN, as ref */
    }
}

/* Keys rows [i0, i1) may see: [0, end). */
static int64_t keys_end(const att *a, int64_t i1) {
    int64_t e = a->causal ? i1 - 1 + a->off + 1 : a->Tk;
    return e < a->Tk ? e : a->Tk;
}

/* S[br, bc] = scale q k^T for query rows i0.. and keys j0..; masked entries -inf. */
static void tile_scores(const att *a, const float *Q, const float *K, int64_t i0, int64_t br, int64_t j0, int64_t bc, float *S) {
    cpu_sgemm1(false, true, br, bc, a->Dh, a->scale, Q + i0 * a->Dh, a->Dh, K + j0 * a->Dh, a->Dh, 0.0f, S, ATT_BC);
    if (!a->causal) return;
    for (int64_t r = 0; r < br; r++)
        for (int64_t cc = 0; cc < bc; cc++)
            if (j0 + cc > i0 + r + a->off) S[r * ATT_BC + cc] = -INFINITY;
}

static void forward_tile(const att *a, int64_t bh, const float *Q, const float *K, const float *V, float *out, int64_t i0) {
    float S[ATT_BR * ATT_BC], O[ATT_BR * ATT_DH_MAX], m[ATT_BR], l[ATT_BR];
    int64_t br = a->Tq - i0 < ATT_BR ? a->Tq - i0 : ATT_BR, jend = keys_end(a, i0 + br), Dh = a->Dh;
    for (int64_t r = 0; r < br; r++) { m[r] = -INFINITY; l[r] = 0.0f; }
    memset(O, 0, sizeof(float) * (size_t)(br * Dh));
    for (int64_t j0 = 0; j0 < jend; j0 += ATT_BC) {
        int64_t bc = jend - j0 < ATT_BC ? jend - j0 : ATT_BC;
        tile_scores(a, Q, K, i0, br, j0, bc, S);
        for (int64_t r = 0; r < br; r++) {
            float *s = S + r * ATT_BC, mx = m[r];
            for (int64_t cc = 0; cc < bc; cc++) if (s[cc] > mx) mx = s[cc];
            float corr = expf(m[r] - mx), sum = 0.0f;   /* m = -inf at the first tile: corr 0 */
            for (int64_t cc = 0; cc < bc; cc++) { s[cc] = expf(s[cc] - mx); sum += s[cc]; }
            l[r] = l[r] * corr + sum;
            m[r] = mx;
            if (corr != 1.0f) for (int64_t e = 0; e < Dh; e++) O[r * Dh + e] *= corr;
        }
        if (a->rate > 0.0) tile_dropout(a, bh, i0, br, j0, bc, S, S);   /* after the sums: l is the undropped one */
        cpu_sgemm1(false, false, br, Dh, bc, 1.0f, S, ATT_BC, V + j0 * Dh, Dh, 1.0f, O, Dh);
    }
    for (int64_t r = 0; r < br; r++) {
        float *o = out + (i0 + r) * a->W, inv = 1.0f / l[r];
        for (int64_t e = 0; e < Dh; e++) o[e] = O[r * Dh + e] * inv;
        o[Dh] = m[r] + logf(l[r]);
    }
}

static kiln_status k_attention(const kiln_kctx *c) {
    att a = att_of(c);
    const float *Q = cpu_f(&c->in[0]), *K = cpu_f(&c->in[1]), *V = cpu_f(&c->in[2]);
    float *Y = cpu_f(&c->out);
    int64_t nt = (a.Tq + ATT_BR - 1) / ATT_BR, items = a.BH * nt;
    int th = cpu_par(c, a.BH * a.Tq * a.Tk * a.Dh / 8);
    if (th > 1) cpu_sgemm1_begin();
    #pragma omp parallel for schedule(dynamic) num_threads(th)
    for (int64_t it = 0; it < items; it++) {
        int64_t bh = it / nt, i0 = (it % nt) * ATT_BR;
        forward_tile(&a, bh, Q + bh * a.Tq * a.Dh, K + bh * a.Tk * a.Dh, V + bh * a.Tk * a.Dh, Y + bh * a.Tq * a.W, i0);
    }
    return KILN_OK;
}

/* One (b, h): dq rows [0, Tq), dk [Tq, Tq + Tk), dv [Tq + Tk, Tq + 2 Tk) of G. */
static void backward_bh(const att *a, int64_t bh, const float *Q, const float *K, const float *V, const float *O, const float *dO, float *G) {
    float P[ATT_BR * ATT_BC], PZ[ATT_BR * ATT_BC], dS[ATT_BR * ATT_BC], dq[ATT_BR * ATT_DH_MAX], dt[ATT_BR];
    const float *Pd = a->rate > 0.0 ? PZ : P;     /* the dropped probabilities (P itself without dropout) */
    int64_t Dh = a->Dh, W = a->W;
    float *dK = G + a->Tq * Dh, *dV = dK + a->Tk * Dh;
    memset(dK, 0, sizeof(float) * (size_t)(2 * a->Tk * Dh));
    for (int64_t i0 = 0; i0 < a->Tq; i0 += ATT_BR) {
        int64_t br = a->Tq - i0 < ATT_BR ? a->Tq - i0 : ATT_BR, jend = keys_end(a, i0 + br);
        for (int64_t r = 0; r < br; r++) {   /* rowsum(dO * O) - dlse */
            const float *o = O + (i0 + r) * W, *g = dO + (i0 + r) * W;
            float s = -g[Dh];
            for (int64_t e = 0; e < Dh; e++) s += g[e] * o[e];
            dt[r] = s;
        }
        memset(dq, 0, sizeof(float) * (size_t)(br * Dh));
        for (int64_t j0 = 0; j0 < jend; j0 += ATT_BC) {
            int64_t bc = jend - j0 < ATT_BC ? jend - j0 : ATT_BC;
            tile_scores(a, Q, K, i0, br, j0, bc, P);
            for (int64_t r = 0; r < br; r++) {
                float lse = O[(i0 + r) * W + Dh];
                for (int64_t cc = 0; cc < bc; cc++) P[r * ATT_BC + cc] = expf(P[r * ATT_BC + cc] - lse);
            }
            if (a->rate > 0.0) tile_dropout(a, bh, i0, br, j0, bc, P, PZ);
            cpu_sgemm1(true, false, bc, Dh, br, 1.0f, Pd, ATT_BC, dO + i0 * W, W, 1.0f, dV + j0 * Dh, Dh);
            cpu_sgemm1(false, true, br, bc, Dh, 1.0f, dO + i0 * W, W, V + j0 * Dh, Dh, 0.0f, dS, ATT_BC);
            for (int64_t r = 0; r < br; r++)
                for (int64_t cc = 0; cc < bc; cc++) {
                    int64_t t = r * ATT_BC + cc;   /* with dropout dS = P (Z dP - dt) = (P Z) dP - P dt */
                    dS[t] = a->rate > 0.0 ? (Pd[t] * dS[t] - P[t] * dt[r]) * a->scale : P[t] * (dS[t] - dt[r]) * a->scale;
                }
            cpu_sgemm1(false, false, br, Dh, bc, 1.0f, dS, ATT_BC, K + j0 * Dh, Dh, 1.0f, dq, Dh);
            cpu_sgemm1(true, false, bc, Dh, br, 1.0f, dS, ATT_BC, Q + i0 * Dh, Dh, 1.0f, dK + j0 * Dh, Dh);
        }
        memcpy(G + i0 * Dh, dq, sizeof(float) * (size_t)(br * Dh));
    }
}

static kiln_status k_attention_grad(const kiln_kctx *c) {
    att a = att_of(c);
    const float *Q = cpu_f(&c->in[0]), *K = cpu_f(&c->in[1]), *V = cpu_f(&c->in[2]);
    const float *O = cpu_f(&c->in[3]), *dO = cpu_f(&c->in[4]);
    float *G = cpu_f(&c->out);
    int64_t R = a.Tq + 2 * a.Tk;
    int th = cpu_par(c, a.BH * a.Tq * a.Tk * a.Dh / 8);
    if (th > 1) cpu_sgemm1_begin();
    #pragma omp parallel for schedule(dynamic) num_threads(th)
    for (int64_t bh = 0; bh < a.BH; bh++)
        backward_bh(&a, bh, Q + bh * a.Tq * a.Dh, K + bh * a.Tk * a.Dh, V + bh * a.Tk * a.Dh, O + bh * a.Tq * a.W,
                    dO + bh * a.Tq * a.W, G + bh * R * a.Dh);
    return KILN_OK;
}

kiln_kernel_fn cpu_attention_kernel(const kiln_node *n) {
    if (!cpu_is_f32(n) || n->in[0]->shape.dim[3] > ATT_DH_MAX) return NULL;
    return n->op == KILN_OP_ATTENTION ? k_attention : k_attention_grad;
}
