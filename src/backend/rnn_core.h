/* The recurrence of the fused RNN op (src/ops/rnn.c), written once over the element type and the
 * matrix product: the ref kernel includes it with double and a plain triple loop, the CPU kernel
 * with float and sgemm (one product per time step for the recurrent term, gate math in loops
 * the compiler vectorises). The includer defines, before including:
 *   RNN_T                 the element type
 *   RNN_FN(name)          the prefix of the functions made here (static)
 *   RNN_EXP, RNN_TANH     exp and tanh in that type
 *   RNN_GEMM(threads, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc)   C = op(A) op(B) + beta C (row-major)
 * Layout (Keras's): xp [B, T, k*U] the input projection with the input bias, R [U, k*U], br [k*U]
 * (GRU reset_after's recurrent bias; NULL: none); gates LSTM i, f, c, o; GRU z, r, h. Step i
 * reads time t = go_backwards ? T-1-i : i and its output is step i's h. */
#include <math.h>
#include <string.h>
#include "kiln/nn.h"

#ifndef KILN_RNN_CORE_ONCE
#define KILN_RNN_CORE_ONCE
enum { RNN_CELL_SIMPLE, RNN_CELL_LSTM, RNN_CELL_GRU };
typedef struct rnn_dims {
    int64_t B, T, U, k;     /* k gates */
    int cell, act, rec_act; /* kiln_activation: linear, relu, sigmoid, tanh, hard_sigmoid */
    bool reset_after, backwards;
    int threads;            /* for the product (the CPU kernel's sgemm) */
} rnn_dims;
/* Values one step keeps for the backward pass, per example: LSTM i, f, g, o; GRU z, r, hh and
 * (reset_after) the recurrent candidate term; SimpleRNN none (h is kept). */
static inline int64_t rnn_saved(const rnn_dims *d) { return d->cell == RNN_CELL_SIMPLE ? 0 : 4 * d->U; }
#endif

#ifdef RNN_T
static inline RNN_T RNN_FN(act)(int a, RNN_T x) {
    switch (a) {
    case KILN_RELU: return x > 0 ? x : (x == x ? 0 : x);
    case KILN_SIGMOID: return 1 / (1 + RNN_EXP(-x));
    case KILN_TANH: return RNN_TANH(x);
    case KILN_HARD_SIGMOID: return x != x ? x : x <= -3 ? 0 : x >= 3 ? 1 : (x + 3) / 6;
    default: return x;
    }
}
/* The derivative from the output y (each supported activation is monotone). */
static inline RNN_T RNN_FN(dact)(int a, RNN_T y) {
    switch (a) {
    case KILN_RELU: return y > 0 ? 1 : 0;
    case KILN_SIGMOID: return y * (1 - y);
    case KILN_TANH: return 1 - y * y;
    case KILN_HARD_SIGMOID: return y > 0 && y < 1 ? (RNN_T)1 / 6 : 0;
    default: return 1;
    }
}

/* One step's gate math for example rows [B]: x the step's input projection (row stride xs),
 * Z the recurrent products [B, kU] (GRU reset_before: only its z, r columns, see fwd), hp / h
 * the previous and new h (row stride hs), c the cell state (LSTM: updated in place; cp the old
 * one when kept apart), G the saved gates (NULL: not kept). */
static void RNN_FN(gates)(const rnn_dims *d, const RNN_T *x, int64_t xs, const RNN_T *Z, const RNN_T *hp, RNN_T *h, int64_t hs,
                          const RNN_T *cp, RNN_T *c, RNN_T *G) {
    int64_t U = d->U, kU = d->k * U;
    for (int64_t b = 0; b < d->B; b++) {
        const RNN_T *xb = x + b * xs, *zb = Z + b * kU, *hpb = hp ? hp + b * hs : NULL;
        RNN_T *hb = h + b * hs, *gb = G ? G + b * 4 * U : NULL;
        if (d->cell == RNN_CELL_SIMPLE) {
            for (int64_t j = 0; j < U; j++) hb[j] = RNN_FN(act)(d->act, xb[j] + zb[j]);
        } else if (d->cell == RNN_CELL_LSTM) {
            const RNN_T *cpb = cp ? cp + b * U : NULL;
            RNN_T *cb = c + b * U;
            for (int64_t j = 0; j < U; j++) {
                RNN_T i = RNN_FN(act)(d->rec_act, xb[j] + zb[j]), f = RNN_FN(act)(d->rec_act, xb[U + j] + zb[U + j]);
                RNN_T g = RNN_FN(act)(d->act, xb[2 * U + j] + zb[2 * U + j]), o = RNN_FN(act)(d->rec_act, xb[3 * U + j] + zb[3 * U + j]);
                RNN_T cv = f * (cpb ? cpb[j] : 0) + i * g;
                cb[j] = cv;
                hb[j] = o * RNN_FN(act)(d->act, cv);
                if (gb) { gb[j] = i; gb[U + j] = f; gb[2 * U + j] = g; gb[3 * U + j] = o; }
            }
        } else {
            for (int64_t j = 0; j < U; j++) {
                RNN_T z = RNN_FN(act)(d->rec_act, xb[j] + zb[j]), r = RNN_FN(act)(d->rec_act, xb[U + j] + zb[U + j]);
                RNN_T rec = zb[2 * U + j];          /* reset_after: h R_h + b_h, scaled by r here; before: (r h) R_h, done */
                RNN_T hh = RNN_FN(act)(d->act, xb[2 * U + j] + (d->reset_after ? r * rec : rec));
                RNN_T hv = hpb ? hpb[j] : 0;
                hb[j] = z * hv + (1 - z) * hh;
                if (gb) { gb[j] = z; gb[U + j] = r; gb[2 * U + j] = hh; gb[3 * U + j] = rec; }
            }
        }
    }
}

/* The forward pass over the sequence. h of step i is H + i*hstep (row stride hs); c of step i is
 * C + i*cstep (cstep 0: one buffer, updated in place); G: saved gates, 4U per example per step
 * (NULL: none). Z: scratch [B, kU]; RH: scratch [B, U] (GRU reset_before). */
static void RNN_FN(fwd)(const rnn_dims *d, const RNN_T *xp, const RNN_T *R, const RNN_T *br, RNN_T *H, int64_t hstep, int64_t hs,
                        RNN_T *C, int64_t cstep, RNN_T *G, RNN_T *Z, RNN_T *RH) {
    int64_t U = d->U, kU = d->k * U, T = d->T;
    for (int64_t i = 0; i < T; i++) {
        int64_t t = d->backwards ? T - 1 - i : i;
        const RNN_T *hp = i ? H + (i - 1) * hstep : NULL;
        bool before = d->cell == RNN_CELL_GRU && !d->reset_after;
        int64_t n = before ? 2 * U : kU;          /* reset_before: z, r first; the candidate needs r */
        if (hp) RNN_GEMM(d->threads, false, false, d->B, n, U, hp, hs, R, kU, 0, Z, kU);
        else for (int64_t q = 0; q < d->B * kU; q++) Z[q] = 0;
        if (br) for (int64_t b = 0; b < d->B; b++) for (int64_t j = 0; j < kU; j++) Z[b * kU + j] += br[j];
        const RNN_T *x = xp + t * kU;
        if (before) {               /* Z_h = (r * hp) R_h, r from this step's z, r columns */
            for (int64_t b = 0; b < d->B; b++)
                for (int64_t j = 0; j < U; j++) {
                    RNN_T r = RNN_FN(act)(d->rec_act, x[b * T * kU + U + j] + Z[b * kU + U + j]);
                    RH[b * U + j] = hp ? r * hp[b * hs + j] : 0;
                }
            if (hp) RNN_GEMM(d->threads, false, false, d->B, U, U, RH, U, R + 2 * U, kU, 0, Z + 2 * U, kU);
            else for (int64_t b = 0; b < d->B; b++) for (int64_t j = 0; j < U; j++) Z[b * kU + 2 * U + j] = 0;
        }
        RNN_T *c = C ? C + i * cstep : NULL;
        const RNN_T *cp = C && i ? (cstep ? C + (i - 1) * cstep : C) : NULL;
        RNN_FN(gates)(d, x, T * kU, Z, hp, H + i * hstep, hs, cp, c, G ? G + i * d->B * 4 * U : NULL);
    }
}

/* The backward pass, after fwd kept H (h of each step, [B, U] each, hstep B*U), C and G:
 * dy [B, T, U] (by step), writes dxp [B, T, kU], dR [U, kU], dbr [kU] (when br). Scratch: dh,
 * dc, RH [B, U] each, dZ [B, kU]. */
static void RNN_FN(bwd)(const rnn_dims *d, const RNN_T *R, const RNN_T *H, const RNN_T *C, const RNN_T *G, const RNN_T *dy,
                        RNN_T *dxp, RNN_T *dR, RNN_T *dbr, RNN_T *dh, RNN_T *dc, RNN_T *RH, RNN_T *dZ) {
    int64_t B = d->B, T = d->T, U = d->U, kU = d->k * U, BU = B * U;
    bool before = d->cell == RNN_CELL_GRU && !d->reset_after;
    memset(dR, 0, (size_t)(U * kU) * sizeof *dR);
    if (dbr) memset(dbr, 0, (size_t)kU * sizeof *dbr);
    memset(dh, 0, (size_t)BU * sizeof *dh);
    memset(dc, 0, (size_t)BU * sizeof *dc);
    for (int64_t i = T - 1; i >= 0; i--) {
        int64_t t = d->backwards ? T - 1 - i : i;
        const RNN_T *hp = i ? H + (i - 1) * BU : NULL, *g = G ? G + i * B * 4 * U : NULL;
        for (int64_t b = 0; b < B; b++) {
            RNN_T *dzb = dZ + b * kU, *dhb = dh + b * U, *dx = dxp + (b * T + t) * kU;
            const RNN_T *dyb = dy + (b * T + i) * U, *gb = g ? g + b * 4 * U : NULL;
            for (int64_t j = 0; j < U; j++) {
                RNN_T dht = dyb[j] + dhb[j], hv = hp ? hp[b * U + j] : 0;
                if (d->cell == RNN_CELL_SIMPLE) {
                    dzb[j] = dht * RNN_FN(dact)(d->act, H[i * BU + b * U + j]);
                    dhb[j] = 0;
                } else if (d->cell == RNN_CELL_LSTM) {
                    RNN_T ig = gb[j], f = gb[U + j], gg = gb[2 * U + j], o = gb[3 * U + j];
                    RNN_T tc = RNN_FN(act)(d->act, C[i * BU + b * U + j]), cpv = i ? C[(i - 1) * BU + b * U + j] : 0;
                    RNN_T dct = dc[b * U + j] + dht * o * RNN_FN(dact)(d->act, tc);
                    dzb[j] = dct * gg * RNN_FN(dact)(d->rec_act, ig);
                    dzb[U + j] = dct * cpv * RNN_FN(dact)(d->rec_act, f);
                    dzb[2 * U + j] = dct * ig * RNN_FN(dact)(d->act, gg);
                    dzb[3 * U + j] = dht * tc * RNN_FN(dact)(d->rec_act, o);
                    dc[b * U + j] = dct * f;
                    dhb[j] = 0;
                } else {
                    RNN_T z = gb[j], r = gb[U + j], hh = gb[2 * U + j], rec = gb[3 * U + j];
                    RNN_T dhh = dht * (1 - z) * RNN_FN(dact)(d->act, hh);
                    dzb[j] = dht * (hv - hh) * RNN_FN(dact)(d->rec_act, z);
                    dzb[U + j] = d->reset_after ? dhh * rec * RNN_FN(dact)(d->rec_act, r) : 0;   /* before: below */
                    dzb[2 * U + j] = dhh;
                    dhb[j] = dht * z;
                }
            }
            for (int64_t j = 0; j < kU; j++) dx[j] = dzb[j];
        }
        if (d->cell == RNN_CELL_GRU && d->reset_after)        /* the recurrent candidate term is scaled by r */
            for (int64_t b = 0; b < B; b++) for (int64_t j = 0; j < U; j++) dZ[b * kU + 2 * U + j] *= g[b * 4 * U + U + j];
        if (before) {               /* d(r hp) = dhh R_h^T; dR_h += (r hp)^T dhh; dr from d(r hp) */
            RNN_GEMM(d->threads, false, true, B, U, U, dZ + 2 * U, kU, R + 2 * U, kU, 0, RH, U);
            for (int64_t b = 0; b < B; b++)
                for (int64_t j = 0; j < U; j++) {
                    RNN_T r = g[b * 4 * U + U + j], hv = hp ? hp[b * U + j] : 0, drh = RH[b * U + j];
                    RNN_T dr = drh * hv * RNN_FN(dact)(d->rec_act, r);
                    dZ[b * kU + U + j] = dr;
                    dxp[(b * T + t) * kU + U + j] = dr;
                    dh[b * U + j] += drh * r;
                    RH[b * U + j] = r * hv;
                }
            if (hp) RNN_GEMM(d->threads, true, false, U, U, B, RH, U, dZ + 2 * U, kU, 1, dR + 2 * U, kU);
        }
        if (dbr) for (int64_t b = 0; b < B; b++) for (int64_t j = 0; j < kU; j++) dbr[j] += dZ[b * kU + j];
        if (!hp) continue;
        int64_t n = before ? 2 * U : kU;
        RNN_GEMM(d->threads, true, false, U, n, B, hp, U, dZ, kU, 1, dR, kU);
        RNN_GEMM(d->threads, false, true, B, U, n, dZ, kU, R, kU, 1, dh, U);
    }
}
#endif /* RNN_T */
