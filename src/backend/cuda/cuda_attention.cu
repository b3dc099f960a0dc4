/* CUDA Attention and AttentionGrad, f32 and f64: Kiln's own FlashAttention-2-style kernels in
 * their simplest correct form (not tuned; tested on the simulator). Forward: one thread per query
 * row, an online softmax over the keys (running max and sum, its O accumulator rescaled when the
 * max grows), writing O and the row's log-sum-exp; nothing of size [Tq, Tk] exists. Backward, no
 * atomics (deterministic): one thread per query row computes dt = rowsum(dO * O) - dlse into the
 * workspace ([B H Tq] values: linear in T) and its dq; then one thread per key row sums its dk and
 * dv over the queries that see it, recomputing p = exp(s - lse). Dh <= ATT_DH_MAX. */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"

/* f32 and f64 only (the lookup refuses other dtypes). */
#define F32_F64_SWITCH(dt, T, ...) \
    switch (dt) { \
    case KILN_F32: { typedef float T; __VA_ARGS__; } break; \
    case KILN_F64: { typedef double T; __VA_ARGS__; } break; \
    default: return cu_fail(KILN_UNSUPPORTED, "cuda: dtype %d not handled", (int)(dt)); \
    }

#define ATT_DH_MAX 128

/* rate > 0: attention dropout, the keep of P[bh, i, j] = kiln_dropout_keep(seed, step, (bh Tq + i)
 * Tk + j) (op.h) bit for bit; step_ptr (graph capture): the step read from the device word. */
typedef struct cu_att {
    int64_t BH, Tq, Tk, Dh, W, off; double scale; int causal;
    double rate; unsigned long long seed, step; const unsigned long long *step_ptr;
} cu_att;

static cu_att att_of(const kiln_kctx *c) {
    const kiln_shape *q = &c->in[0].shape, *k = &c->in[1].shape;
    const kiln_attrs *n = &c->node->attrs;
    cu_att a = { q->dim[0] * q->dim[1], q->dim[2], k->dim[2], q->dim[3], q->dim[3] + 1, k->dim[2] - q->dim[2],
                 n->alpha, n->causal ? 1 : 0, n->training ? n->rate : 0.0, (unsigned long long)n->seed,
                 (unsigned long long)c->step, NULL };
    if (a.rate > 0.0 && cu.dev[cu_cur].capturing) a.step_ptr = cu_step_ptr();
    return a;
}

/* The dropout key of this run (kiln_dropout_keep's), and P[bh, i, j]'s factor: 0 or 1/(1 - rate). */
__device__ __forceinline__ unsigned long long att_key(const cu_att &a) {
    unsigned long long st = a.step_ptr ? *a.step_ptr : a.step;
    return cu_mix64(a.seed ^ cu_mix64(st + 0x1234567ull));
}
__device__ __forceinline__ double att_keep(const cu_att &a, unsigned long long key, int64_t bh, int64_t i, int64_t j) {
    if (a.rate <= 0.0) return 1.0;
    return cu_uniform(key, (unsigned long long)((bh * a.Tq + i) * a.Tk + j)) >= a.rate ? 1.0 / (1.0 - a.rate) : 0.0;
}

__device__ __forceinline__ int64_t att_visible(const cu_att &a, int64_t i) {
    int64_t e = a.causal ? i + a.off + 1 : a.Tk;
    return e < a.Tk ? e : a.Tk;
}

template <typename T, typename A>
__device__ __forceinline__ A att_dot(const T *x, const T *y, int64_t n) {
    A s = (A)0;
    for (int64_t e = 0; e < n; e++) s += (A)x[e] * (A)y[e];
    return s;
}

template <typename T>
__global__ void att_fwd_kernel(const T *Q, const T *K, const T *V, T *out, cu_att a) {
    typedef typename cu_acc<T>::type A;
    CU_LOOP(t, a.BH * a.Tq) {
        int64_t bh = t / a.Tq, i = t - bh * a.Tq, nv = att_visible(a, i);
        const T *q = Q + t * a.Dh, *k = K + bh * a.Tk * a.Dh, *v = V + bh * a.Tk * a.Dh;
        A o[ATT_DH_MAX], m = (A)-INFINITY, l = (A)0;
        unsigned long long key = a.rate > 0.0 ? att_key(a) : 0ull;
        for (int64_t e = 0; e < a.Dh; e++) o[e] = (A)0;
        for (int64_t j = 0; j < nv; j++) {
            A s = att_dot<T, A>(q, k + j * a.Dh, a.Dh) * (A)a.scale;
            A mx = s > m ? s : m;          /* NaN scores do not raise the max, as ref */
            A corr = exp(m - mx), p = exp(s - mx);
            l = l * corr + p;              /* the undropped sum */
            if (a.rate > 0.0) p *= (A)att_keep(a, key, bh, i, j);
            for (int64_t e = 0; e < a.Dh; e++) o[e] = o[e] * corr + p * (A)v[j * a.Dh + e];
            m = mx;
        }
        T *y = out + t * a.W;
        for (int64_t e = 0; e < a.Dh; e++) y[e] = (T)(o[e] / l);
        y[a.Dh] = (T)(m + log(l));
    }
}

/* dq and dt for one query row. */
template <typename T>
__global__ void att_dq_kernel(const T *Q, const T *K, const T *V, const T *O, const T *dO, T *G, double *dt, cu_att a) {
    typedef typename cu_acc<T>::type A;
    CU_LOOP(t, a.BH * a.Tq) {
        int64_t bh = t / a.Tq, i = t - bh * a.Tq, nv = att_visible(a, i);
        const T *q = Q + t * a.Dh, *k = K + bh * a.Tk * a.Dh, *v = V + bh * a.Tk * a.Dh;
        const T *o = O + t * a.W, *g = dO + t * a.W;
        A lse = (A)o[a.Dh], d = -(A)g[a.Dh], dq[ATT_DH_MAX];
        for (int64_t e = 0; e < a.Dh; e++) { d += (A)g[e] * (A)o[e]; dq[e] = (A)0; }
        dt[t] = (double)d;
        unsigned long long key = a.rate > 0.0 ? att_key(a) : 0ull;
        for (int64_t j = 0; j < nv; j++) {
            A p = exp(att_dot<T, A>(q, k + j * a.Dh, a.Dh) * (A)a.scale - lse), dp = att_dot<T, A>(g, v + j * a.Dh, a.Dh);
            if (a.rate > 0.0) dp *= (A)att_keep(a, key, bh, i, j);    /* ds = p (z dp - dt) */
            A ds = p * (dp - d) * (A)a.scale;
            for (int64_t e = 0; e < a.Dh; e++) dq[e] += ds * (A)k[j * a.Dh + e];
        }
        T *y = G + (bh * (a.Tq + 2 * a.Tk) + i) * a.Dh;
        for (int64_t e = 0; e < a.Dh; e++) y[e] = (T)dq[e];
    }
}

/* dk and dv for one key row: the queries i with j < i + off + 1 (all when not causal). */
template <typename T>
__global__ void att_dkv_kernel(const T *Q, const T *K, const T *V, const T *O, const T *dO, T *G, const double *dt, cu_att a) {
    typedef typename cu_acc<T>::type A;
    CU_LOOP(t, a.BH * a.Tk) {
        int64_t bh = t / a.Tk, j = t - bh * a.Tk, i0 = a.causal ? j - a.off : 0;
        if (i0 < 0) i0 = 0;
        const T *k = K + t * a.Dh, *v = V + t * a.Dh;
        A dk[ATT_DH_MAX], dv[ATT_DH_MAX];
        for (int64_t e = 0; e < a.Dh; e++) dk[e] = dv[e] = (A)0;
        unsigned long long key = a.rate > 0.0 ? att_key(a) : 0ull;
        for (int64_t i = i0; i < a.Tq; i++) {
            int64_t r = bh * a.Tq + i;
            const T *q = Q + r * a.Dh, *g = dO + r * a.W;
            A p = exp(att_dot<T, A>(q, k, a.Dh) * (A)a.scale - (A)O[r * a.W + a.Dh]), dp = att_dot<T, A>(g, v, a.Dh), pz = p;
            if (a.rate > 0.0) { A z = (A)att_keep(a, key, bh, i, j); dp *= z; pz = p * z; }
            A ds = p * (dp - (A)dt[r]) * (A)a.scale;
            for (int64_t e = 0; e < a.Dh; e++) { dv[e] += pz * (A)g[e]; dk[e] += ds * (A)q[e]; }
        }
        T *y = G + (bh * (a.Tq + 2 * a.Tk) + a.Tq + j) * a.Dh;
        for (int64_t e = 0; e < a.Dh; e++) { y[e] = (T)dk[e]; y[a.Tk * a.Dh + e] = (T)dv[e]; }
    }
}

/* Rows per block kept small: each thread holds one or two Dh-long accumulators. */
#define ATT_THREADS 64
static unsigned att_blocks(int64_t n) {
    int64_t b = (n + ATT_THREADS - 1) / ATT_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535LL * 8 ? 65535LL * 8 : b);
}

static kiln_status k_attention(const kiln_kctx *c) {
    cu_att a = att_of(c);
    cudaStream_t s = cu_stream();
    if (a.BH * a.Tq == 0) return KILN_OK;
    F32_F64_SWITCH(c->out.dtype, T, CU_LAUNCH(att_fwd_kernel<T>, att_blocks(a.BH * a.Tq), ATT_THREADS, 0, s)(
        (const T *)c->in[0].data, (const T *)c->in[1].data, (const T *)c->in[2].data, (T *)c->out.data, a))
    return cu_launch_check(c);
}

static kiln_status k_attention_grad(const kiln_kctx *c) {
    cu_att a = att_of(c);
    cudaStream_t s = cu_stream();
    double *dt = (double *)c->workspace;
    if (a.BH == 0) return KILN_OK;
    F32_F64_SWITCH(c->out.dtype, T,
        const T *Q = (const T *)c->in[0].data; const T *K = (const T *)c->in[1].data; const T *V = (const T *)c->in[2].data;
        const T *O = (const T *)c->in[3].data; const T *dO = (const T *)c->in[4].data; T *G = (T *)c->out.data;
        if (a.Tq > 0) CU_LAUNCH(att_dq_kernel<T>, att_blocks(a.BH * a.Tq), ATT_THREADS, 0, s)(Q, K, V, O, dO, G, dt, a);
        CU_LAUNCH(att_dkv_kernel<T>, att_blocks(a.BH * a.Tk), ATT_THREADS, 0, s)(Q, K, V, O, dO, G, dt, a))
    return cu_launch_check(c);
}

kiln_kernel_fn cu_attention_kernel(const kiln_node *n) {
    if ((n->dtype != KILN_F32 && n->dtype != KILN_F64) || !cu_all_dtype(n, n->dtype) || n->in[0]->shape.dim[3] > ATT_DH_MAX)
        return NULL;
    return n->op == KILN_OP_ATTENTION ? k_attention : k_attention_grad;
}

size_t cu_attention_workspace(const kiln_node *n) {
    const kiln_shape *q = &n->in[0]->shape;
    return cu_align((size_t)(q->dim[0] * q->dim[1] * q->dim[2]) * sizeof(double));
}
