/* CUDA RNN and RNNGrad (src/ops/rnn.c), f32 and f64: Kiln's own kernels in their simplest
 * correct form (not tuned; tested on the simulator), one launch per time step. Forward: one thread
 * per (example, unit) computes its k recurrent dot products and the cell's gate math (GRU
 * reset_before: two launches, as r must scale every unit of h before the candidate's product).
 * Backward: the forward again keeping h, c, the gates and (reset_before) r * h_prev of every step
 * in the workspace, then per step (from the last) a launch summing dh from the later step's gate
 * gradients, a launch of the gate gradients, and after the loop one launch for drec (a dot over
 * steps and examples per element) and one for the recurrent bias: no atomics, deterministic.
 * cuDNN's RNN API is not used yet. Gate layout and step order as the ref kernel (rnn_core.h). */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"
#include "kiln/nn.h"

enum { CELL_SIMPLE, CELL_LSTM, CELL_GRU };
typedef struct cu_rnn {
    int64_t B, T, U, k, kU;
    int cell, act, rec_act, reset_after, backwards;
} cu_rnn;

static cu_rnn rnn_of(const kiln_node *n) {
    const kiln_shape *x = &n->in[0]->shape;
    int k = n->attrs.groups == CELL_LSTM ? 4 : n->attrs.groups == CELL_GRU ? 3 : 1;
    cu_rnn r = { x->dim[0], x->dim[1], x->dim[2] / k, k, x->dim[2], n->attrs.groups, n->attrs.kh, n->attrs.kw, n->attrs.keepdims ? 1 : 0,
                 n->attrs.trans_a ? 1 : 0 };
    return r;
}

template <typename T> __device__ __forceinline__ T rnn_act(int a, T x) {
    switch (a) {
    case KILN_RELU: return x > 0 ? x : (x == x ? (T)0 : x);
    case KILN_SIGMOID: return (T)1 / ((T)1 + exp(-x));
    case KILN_TANH: return tanh(x);
    case KILN_HARD_SIGMOID: return x != x ? x : x <= (T)-3 ? (T)0 : x >= (T)3 ? (T)1 : (x + (T)3) / (T)6;
    default: return x;
    }
}
template <typename T> __device__ __forceinline__ T rnn_dact(int a, T y) {
    switch (a) {
    case KILN_RELU: return y > 0 ? (T)1 : (T)0;
    case KILN_SIGMOID: return y * ((T)1 - y);
    case KILN_TANH: return (T)1 - y * y;
    case KILN_HARD_SIGMOID: return y > 0 && y < 1 ? (T)1 / (T)6 : (T)0;
    default: return (T)1;
    }
}
/* sum_m h[m] R[m, col] over U rows (h NULL: 0) */
template <typename T> __device__ __forceinline__ T rnn_dot(const T *h, const T *R, int64_t U, int64_t kU, int64_t col) {
    T s = 0;
    if (h) for (int64_t m = 0; m < U; m++) s += h[m] * R[m * kU + col];
    return s;
}

/* One step forward for every (b, j). h_prev row b at hp + b*hs (NULL at step 0), h at h + b*hs;
 * c [B, U] (LSTM; cp: the previous, NULL at step 0, may equal c); G saved gates [B, 4U] or NULL;
 * RH (GRU reset_before) r * h_prev [B, U], written by phase 0 and read by phase 1. */
template <typename T>
__global__ void rnn_fwd_kernel(cu_rnn d, int phase, int64_t t, const T *xp, const T *R, const T *br, const T *hp, T *h, int64_t hs,
                               const T *cp, T *c, T *G, T *RH) {
    int64_t U = d.U, kU = d.kU;
    CU_LOOP(q, d.B * U) {
        int64_t b = q / U, j = q - b * U;
        const T *x = xp + (b * d.T + t) * kU, *hpb = hp ? hp + b * hs : NULL;
        T hv = hpb ? hpb[j] : (T)0;
        T *gb = G ? G + b * 4 * U : NULL;
        if (d.cell == CELL_SIMPLE) {
            h[b * hs + j] = rnn_act<T>(d.act, x[j] + rnn_dot<T>(hpb, R, U, kU, j));
        } else if (d.cell == CELL_LSTM) {
            T z[4];
            for (int g = 0; g < 4; g++) z[g] = x[g * U + j] + rnn_dot<T>(hpb, R, U, kU, g * U + j);
            T i = rnn_act<T>(d.rec_act, z[0]), f = rnn_act<T>(d.rec_act, z[1]), gg = rnn_act<T>(d.act, z[2]), o = rnn_act<T>(d.rec_act, z[3]);
            T cv = f * (cp ? cp[b * U + j] : (T)0) + i * gg;
            c[b * U + j] = cv;
            h[b * hs + j] = o * rnn_act<T>(d.act, cv);
            if (gb) { gb[j] = i; gb[U + j] = f; gb[2 * U + j] = gg; gb[3 * U + j] = o; }
        } else if (phase == 0 && !d.reset_after) {       /* z, r; r * h_prev for the candidate */
            T z = rnn_act<T>(d.rec_act, x[j] + rnn_dot<T>(hpb, R, U, kU, j));
            T r = rnn_act<T>(d.rec_act, x[U + j] + rnn_dot<T>(hpb, R, U, kU, U + j));
            gb[j] = z; gb[U + j] = r;
            RH[b * U + j] = r * hv;
        } else {
            T z, r, rec;
            if (d.reset_after) {
                z = rnn_act<T>(d.rec_act, x[j] + rnn_dot<T>(hpb, R, U, kU, j) + (br ? br[j] : (T)0));
                r = rnn_act<T>(d.rec_act, x[U + j] + rnn_dot<T>(hpb, R, U, kU, U + j) + (br ? br[U + j] : (T)0));
                rec = rnn_dot<T>(hpb, R, U, kU, 2 * U + j) + (br ? br[2 * U + j] : (T)0);
            } else {
                z = gb[j]; r = gb[U + j];
                rec = hpb ? rnn_dot<T>(RH + b * U, R, U, kU, 2 * U + j) : (T)0;
            }
            T hh = rnn_act<T>(d.act, x[2 * U + j] + (d.reset_after ? r * rec : rec));
            h[b * hs + j] = z * hv + ((T)1 - z) * hh;
            gb[j] = z; gb[U + j] = r; gb[2 * U + j] = hh; gb[3 * U + j] = rec;
        }
    }
}

/* dh [B, U] entering step i from step i + 1: direct (GRU's z dh and r d(r h)) + dZ_{i+1} R^T
 * over the columns the recurrent product used (reset_before: z, r). */
template <typename T>
__global__ void rnn_dh_kernel(cu_rnn d, const T *dZn, const T *R, const T *direct, T *dh) {
    int64_t U = d.U, kU = d.kU, n = d.cell == CELL_GRU && !d.reset_after ? 2 * U : kU;
    CU_LOOP(q, d.B * U) {
        int64_t b = q / U, j = q - b * U;
        T s = direct[q];
        for (int64_t m = 0; m < n; m++) s += dZn[b * kU + m] * R[j * kU + m];
        dh[q] = s;
    }
}

/* Step i's gate gradients: dZ [B, kU] (the recurrent pre-activations'), dxp's row, direct, dc.
 * Phase 1 (GRU reset_before): d(r h_prev) = dhh R_h^T, then dr. */
template <typename T>
__global__ void rnn_bwd_kernel(cu_rnn d, int phase, int64_t i, int64_t t, const T *R, const T *H, const T *C, const T *G, const T *dy,
                               const T *dh, T *dc, T *direct, T *dZ, T *dxp) {
    int64_t U = d.U, kU = d.kU, BU = d.B * U;
    CU_LOOP(q, BU) {
        int64_t b = q / U, j = q - b * U;
        const T *gb = G + (i * d.B + b) * 4 * U;
        T *dz = dZ + b * kU, *dx = dxp + (b * d.T + t) * kU;
        T hv = i ? H[(i - 1) * BU + q] : (T)0;
        if (phase == 1) {
            T drh = 0;
            for (int64_t m = 0; m < U; m++) drh += dz[2 * U + m] * R[j * kU + 2 * U + m];
            T r = gb[U + j], dr = drh * hv * rnn_dact<T>(d.rec_act, r);
            dz[U + j] = dr;
            dx[U + j] = dr;
            direct[q] += drh * r;
            continue;
        }
        T dht = dy[(b * d.T + i) * U + j] + dh[q];
        if (d.cell == CELL_SIMPLE) {
            dz[j] = dht * rnn_dact<T>(d.act, H[i * BU + q]);
            direct[q] = 0;
        } else if (d.cell == CELL_LSTM) {
            T ig = gb[j], f = gb[U + j], gg = gb[2 * U + j], o = gb[3 * U + j];
            T tc = rnn_act<T>(d.act, C[i * BU + q]), cpv = i ? C[(i - 1) * BU + q] : (T)0;
            T dct = dc[q] + dht * o * rnn_dact<T>(d.act, tc);
            dz[j] = dct * gg * rnn_dact<T>(d.rec_act, ig);
            dz[U + j] = dct * cpv * rnn_dact<T>(d.rec_act, f);
            dz[2 * U + j] = dct * ig * rnn_dact<T>(d.act, gg);
            dz[3 * U + j] = dht * tc * rnn_dact<T>(d.rec_act, o);
            dc[q] = dct * f;
            direct[q] = 0;
        } else {
            T z = gb[j], r = gb[U + j], hh = gb[2 * U + j], rec = gb[3 * U + j];
            T dhh = dht * ((T)1 - z) * rnn_dact<T>(d.act, hh);
            dz[j] = dht * (hv - hh) * rnn_dact<T>(d.rec_act, z);
            if (d.reset_after) dz[U + j] = dhh * rec * rnn_dact<T>(d.rec_act, r);
            dz[2 * U + j] = d.reset_after ? dhh * r : dhh;
            dx[2 * U + j] = dhh;
            direct[q] = dht * z;
        }
        for (int g = 0; g < d.k; g++)
            if (!(d.cell == CELL_GRU && g >= 1 && (g == 2 || !d.reset_after))) dx[g * U + j] = dz[g * U + j];
    }
}

/* drec[m, n] = sum over steps i >= 1 and examples of h_{i-1}[b, m] dZ_i[b, n] (reset_before's
 * candidate columns: (r h_prev)_i instead of h_{i-1}); drec_bias[n] = sum of dZ[., ., n]. */
template <typename T>
__global__ void rnn_dw_kernel(cu_rnn d, const T *H, const T *RH, const T *dZ, T *dR, T *dbr) {
    int64_t U = d.U, kU = d.kU, BU = d.B * U;
    CU_LOOP(q, U * kU + (dbr ? kU : 0)) {
        T s = 0;
        if (q >= U * kU) {
            int64_t n = q - U * kU;
            for (int64_t i = 0; i < d.T; i++) for (int64_t b = 0; b < d.B; b++) s += dZ[(i * d.B + b) * kU + n];
            dbr[n] = s;
            continue;
        }
        int64_t m = q / kU, n = q - m * kU;
        bool cand = d.cell == CELL_GRU && !d.reset_after && n >= 2 * U;
        for (int64_t i = 1; i < d.T; i++)
            for (int64_t b = 0; b < d.B; b++)
                s += (cand ? RH[i * BU + b * U + m] : H[(i - 1) * BU + b * U + m]) * dZ[(i * d.B + b) * kU + n];
        dR[q] = s;
    }
}

typedef struct rnn_ws { int64_t H, C, G, RH, dZ, dh, dir, dc, total; } rnn_ws;
static rnn_ws ws_of(const cu_rnn &d, bool grad) {     /* offsets in elements */
    int64_t BU = d.B * d.U;
    rnn_ws w;
    w.H = 0;
    w.C = grad ? d.T * BU : 0;
    w.G = w.C + (grad ? d.T * BU : BU);
    w.RH = w.G + (grad ? d.T : 1) * d.B * 4 * d.U;
    w.dZ = w.RH + (grad ? d.T : 1) * BU;
    w.dh = w.dZ + (grad ? d.T * d.B * d.kU : 0);
    w.dir = w.dh + BU;
    w.dc = w.dir + BU;
    w.total = w.dc + BU;
    return w;
}

template <typename T>
static void rnn_forward(const cu_rnn &d, cudaStream_t s, const T *xp, const T *R, const T *br, T *H, int64_t hstep, int64_t hs, T *C,
                        int64_t cstep, T *G, int64_t gstep, T *RH, int64_t rhstep) {
    unsigned nb = cu_blocks(d.B * d.U);
    for (int64_t i = 0; i < d.T; i++) {
        int64_t t = d.backwards ? d.T - 1 - i : i;
        const T *hp = i ? H + (i - 1) * hstep : NULL;
        T *c = C + i * cstep, *g = G + i * gstep, *rh = RH + i * rhstep;
        const T *cp = i ? C + (i - 1) * cstep : NULL;
        if (d.cell == CELL_GRU && !d.reset_after)
            CU_LAUNCH(rnn_fwd_kernel<T>, nb, CU_THREADS, 0, s)(d, 0, t, xp, R, br, hp, H + i * hstep, hs, cp, c, g, rh);
        CU_LAUNCH(rnn_fwd_kernel<T>, nb, CU_THREADS, 0, s)(d, 1, t, xp, R, br, hp, H + i * hstep, hs, cp, c, g, rh);
    }
}

template <typename T>
static void rnn_run(const kiln_kctx *c, const cu_rnn &d) {
    cudaStream_t s = cu_stream();
    bool grad = c->node->op == KILN_OP_RNN_GRAD, has_br = c->n_in > (grad ? 3 : 2);
    rnn_ws w = ws_of(d, grad);
    T *ws = (T *)c->workspace, *out = (T *)c->out.data;
    const T *xp = (const T *)c->in[0].data, *R = (const T *)c->in[1].data, *br = has_br ? (const T *)c->in[2].data : NULL;
    int64_t BU = d.B * d.U;
    if (!grad) {       /* h straight into the output; c, gates, r h_prev: one step's */
        rnn_forward<T>(d, s, xp, R, br, out, d.U, d.T * d.U, ws + w.C, 0, ws + w.G, 0, ws + w.RH, 0);
        return;
    }
    const T *dy = (const T *)c->in[c->n_in - 1].data;
    T *H = ws + w.H, *C = ws + w.C, *G = ws + w.G, *RH = ws + w.RH, *dZ = ws + w.dZ, *dh = ws + w.dh, *dir = ws + w.dir, *dc = ws + w.dc;
    rnn_forward<T>(d, s, xp, R, br, H, BU, d.U, C, BU, G, d.B * 4 * d.U, RH, BU);
    cudaMemsetAsync(dh, 0, (size_t)(3 * BU) * sizeof(T), s);      /* dh, direct, dc */
    unsigned nb = cu_blocks(BU);
    T *dxp = out, *dR = out + d.B * d.T * d.kU, *dbr = has_br ? dR + d.U * d.kU : NULL;
    for (int64_t i = d.T - 1; i >= 0; i--) {
        int64_t t = d.backwards ? d.T - 1 - i : i;
        if (i < d.T - 1) CU_LAUNCH(rnn_dh_kernel<T>, nb, CU_THREADS, 0, s)(d, dZ + (i + 1) * d.B * d.kU, R, dir, dh);
        CU_LAUNCH(rnn_bwd_kernel<T>, nb, CU_THREADS, 0, s)(d, 0, i, t, R, H, C, G, dy, dh, dc, dir, dZ + i * d.B * d.kU, dxp);
        if (d.cell == CELL_GRU && !d.reset_after)
            CU_LAUNCH(rnn_bwd_kernel<T>, nb, CU_THREADS, 0, s)(d, 1, i, t, R, H, C, G, dy, dh, dc, dir, dZ + i * d.B * d.kU, dxp);
    }
    CU_LAUNCH(rnn_dw_kernel<T>, cu_blocks(d.U * d.kU + d.kU), CU_THREADS, 0, s)(d, H, RH, dZ, dR, dbr);
}

static kiln_status k_rnn(const kiln_kctx *c) {
    cu_rnn d = rnn_of(c->node);
    switch (c->out.dtype) {
    case KILN_F32: rnn_run<float>(c, d); break;
    case KILN_F64: rnn_run<double>(c, d); break;
    default: return cu_fail(KILN_UNSUPPORTED, "cuda: RNN dtype %d not handled", (int)c->out.dtype);
    }
    return cu_launch_check(c);
}

kiln_kernel_fn cu_rnn_kernel(const kiln_node *n) {
    if (n->op != KILN_OP_RNN && n->op != KILN_OP_RNN_GRAD) return NULL;
    return (n->dtype == KILN_F32 || n->dtype == KILN_F64) && cu_all_dtype(n, n->dtype) ? k_rnn : NULL;
}

size_t cu_rnn_workspace(const kiln_node *n) {
    cu_rnn d = rnn_of(n);
    return cu_align((size_t)ws_of(d, n->op == KILN_OP_RNN_GRAD).total * (n->dtype == KILN_F64 ? 8 : 4));
}
