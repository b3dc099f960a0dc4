/* Pooling (NHWC) with our own kernels where cuDNN's (cuda_dnn_ops.cu) cannot do what SEMANTICS.md
 * says: SAME padding with the extra cell at the bottom/right (cuDNN pads symmetrically), and
 * MaxPoolGrad, which sends each window's dy to the FIRST cell (row-major) equal to its max and
 * nothing when the max is NaN (cuDNN promises neither); also everything with
 * KILN_CUDA_OWN_POOL_NORM=1. Padded cells never win a max and are not counted in an average; a
 * window holding a NaN has max NaN. The gradients gather per input cell (no atomics: deterministic);
 * MaxPoolGrad first records each window's pick in the workspace (one int per output cell). */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"

typedef struct pool_geo {
    int64_t N, H, W, C, OH, OW;
    int kh, kw, sh, sw, pt, pl;
} pool_geo;

static pool_geo geo_of(const kiln_node *n, kiln_shape x, kiln_shape y) {
    const kiln_attrs *a = &n->attrs;
    pool_geo g = { x.dim[0], x.dim[1], x.dim[2], x.dim[3], y.dim[1], y.dim[2], a->kh, a->kw, a->sh, a->sw, a->pt, a->pl };
    return g;
}

__device__ __forceinline__ void win(const pool_geo &g, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1) {
    int64_t hs = oh * g.sh - g.pt, ws = ow * g.sw - g.pl;
    *h0 = hs < 0 ? 0 : hs;
    *h1 = hs + g.kh > g.H ? g.H : hs + g.kh;
    *w0 = ws < 0 ? 0 : ws;
    *w1 = ws + g.kw > g.W ? g.W : ws + g.kw;
}

/* Output rows/cols whose window covers input row h (col w): [lo, hi]. */
__device__ __forceinline__ void covering(int64_t h, int pad, int k, int s, int64_t O, int64_t *lo, int64_t *hi) {
    int64_t t = h + pad - k + 1;
    *lo = t <= 0 ? 0 : (t + s - 1) / s;
    int64_t u = h + pad;
    *hi = u < 0 ? -1 : u / s;
    if (*hi > O - 1) *hi = O - 1;
}

template <typename T>
__global__ void pool_fwd_kernel(const T *x, T *y, pool_geo g, bool is_max) {
    typedef typename cu_acc<T>::type Cc;
    int64_t total = g.N * g.OH * g.OW * g.C;
    CU_LOOP(i, total) {
        int64_t ch = i % g.C, r = i / g.C, ow = r % g.OW;
        r /= g.OW;
        int64_t oh = r % g.OH, n = r / g.OH;
        int64_t h0, h1, w0, w1;
        win(g, oh, ow, &h0, &h1, &w0, &w1);
        if (is_max) {
            Cc m = (Cc)-INFINITY;
            for (int64_t h = h0; h < h1; h++)
                for (int64_t w = w0; w < w1; w++) {
                    Cc v = cu_ld(x, ((n * g.H + h) * g.W + w) * g.C + ch);
                    if (v > m || isnan(v)) m = v;
                }
            cu_st(y, i, m);
        } else {
            double acc = 0.0;
            for (int64_t h = h0; h < h1; h++)
                for (int64_t w = w0; w < w1; w++) acc += (double)cu_ld(x, ((n * g.H + h) * g.W + w) * g.C + ch);
            cu_st(y, i, (Cc)(acc / (double)((h1 - h0) * (w1 - w0))));
        }
    }
}

/* MaxPoolGrad in two passes: each window finds the first cell (row-major) equal to its max y
 * (-1 when y is NaN or no cell equals it), then each input cell sums the dy of the windows whose
 * pick it is: a window is scanned once, not once per cell it covers. */
template <typename T>
__global__ void max_pool_pick_kernel(const T *x, const T *y, int *pick, pool_geo g) {
    typedef typename cu_acc<T>::type Cc;
    int64_t total = g.N * g.OH * g.OW * g.C;
    CU_LOOP(i, total) {
        int64_t ch = i % g.C, r = i / g.C, ow = r % g.OW;
        r /= g.OW;
        int64_t oh = r % g.OH, n = r / g.OH;
        int64_t h0, h1, w0, w1;
        win(g, oh, ow, &h0, &h1, &w0, &w1);
        Cc m = cu_ld(y, i);
        int p = -1;
        for (int64_t h = h0; h < h1 && p < 0; h++)
            for (int64_t w = w0; w < w1; w++)
                if (cu_ld(x, ((n * g.H + h) * g.W + w) * g.C + ch) == m) { p = (int)((h - h0) * g.kw + (w - w0)); break; }
        pick[i] = p;
    }
}

template <typename T>
__global__ void max_pool_grad_kernel(const int *pick, const T *dy, T *dx, pool_geo g) {
    typedef typename cu_acc<T>::type Cc;
    int64_t total = g.N * g.H * g.W * g.C;
    CU_LOOP(i, total) {
        int64_t ch = i % g.C, r = i / g.C, w = r % g.W;
        r /= g.W;
        int64_t h = r % g.H, n = r / g.H;
        int64_t ohl, ohh, owl, owh;
        covering(h, g.pt, g.kh, g.sh, g.OH, &ohl, &ohh);
        covering(w, g.pl, g.kw, g.sw, g.OW, &owl, &owh);
        double acc = 0.0;
        for (int64_t oh = ohl; oh <= ohh; oh++)
            for (int64_t ow = owl; ow <= owh; ow++) {
                int64_t h0, h1, w0, w1;
                win(g, oh, ow, &h0, &h1, &w0, &w1);
                int64_t yi = ((n * g.OH + oh) * g.OW + ow) * g.C + ch;
                if (pick[yi] == (int)((h - h0) * g.kw + (w - w0))) acc += (double)cu_ld(dy, yi);
            }
        cu_st(dx, i, (Cc)acc);
    }
}

template <typename T>
__global__ void avg_pool_grad_kernel(const T *dy, T *dx, pool_geo g) {
    typedef typename cu_acc<T>::type Cc;
    int64_t total = g.N * g.H * g.W * g.C;
    CU_LOOP(i, total) {
        int64_t ch = i % g.C, r = i / g.C, w = r % g.W;
        r /= g.W;
        int64_t h = r % g.H, n = r / g.H;
        int64_t ohl, ohh, owl, owh;
        covering(h, g.pt, g.kh, g.sh, g.OH, &ohl, &ohh);
        covering(w, g.pl, g.kw, g.sw, g.OW, &owl, &owh);
        double acc = 0.0;
        for (int64_t oh = ohl; oh <= ohh; oh++)
            for (int64_t ow = owl; ow <= owh; ow++) {
                int64_t h0, h1, w0, w1;
                win(g, oh, ow, &h0, &h1, &w0, &w1);
                acc += (double)cu_ld(dy, ((n * g.OH + oh) * g.OW + ow) * g.C + ch) / (double)((h1 - h0) * (w1 - w0));
            }
        cu_st(dx, i, (Cc)acc);
    }
}

static kiln_status k_pool_fwd(const kiln_kctx *c) {
    pool_geo g = geo_of(c->node, c->in[0].shape, c->out.shape);
    int64_t total = c->out.numel;
    if (total == 0) return KILN_OK;
    bool mx = c->node->op == KILN_OP_MAX_POOL;
    cudaStream_t s = cu_stream();
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(pool_fwd_kernel<T>, cu_blocks(total), CU_THREADS, 0, s)((const T *)c->in[0].data, (T *)c->out.data, g, mx))
    return cu_launch_check(c);
}

size_t cu_pool_workspace(const kiln_node *n) {
    return n->op == KILN_OP_MAX_POOL_GRAD ? cu_align((size_t)cu_numel(n->in[1]->shape) * sizeof(int)) : 0;
}

static kiln_status k_max_pool_grad(const kiln_kctx *c) {
    pool_geo g = geo_of(c->node, c->in[0].shape, c->in[1].shape);
    int64_t total = c->out.numel, outs = c->in[1].numel;
    if (total == 0) return KILN_OK;
    if (!c->workspace || c->ws_bytes < (size_t)outs * sizeof(int))
        return cu_fail(KILN_INTERNAL, "%s: MaxPoolGrad workspace is %zu bytes, needs %zu", c->node->name, c->ws_bytes, (size_t)outs * sizeof(int));
    int *pick = (int *)c->workspace;
    cudaStream_t s = cu_stream();
    if (outs > 0)
        CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(max_pool_pick_kernel<T>, cu_blocks(outs), CU_THREADS, 0, s)(
            (const T *)c->in[0].data, (const T *)c->in[1].data, pick, g))
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(max_pool_grad_kernel<T>, cu_blocks(total), CU_THREADS, 0, s)(
        pick, (const T *)c->in[2].data, (T *)c->out.data, g))
    return cu_launch_check(c);
}

static kiln_status k_avg_pool_grad(const kiln_kctx *c) {
    pool_geo g = geo_of(c->node, c->out.shape, c->in[0].shape);
    int64_t total = c->out.numel;
    if (total == 0) return KILN_OK;
    cudaStream_t s = cu_stream();
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(avg_pool_grad_kernel<T>, cu_blocks(total), CU_THREADS, 0, s)(
        (const T *)c->in[0].data, (T *)c->out.data, g))
    return cu_launch_check(c);
}

kiln_kernel_fn cu_pool_kernel(const kiln_node *n) {
    if (!cu_is_float(n->dtype) || !cu_all_dtype(n, n->dtype)) return NULL;
    if (n->shape.rank != 4 || n->in[0]->shape.rank != 4) return NULL;
    if (n->attrs.sh <= 0 || n->attrs.sw <= 0) return NULL;
    switch (n->op) {
    case KILN_OP_MAX_POOL: case KILN_OP_AVG_POOL: return k_pool_fwd;
    case KILN_OP_MAX_POOL_GRAD: return k_max_pool_grad;
    case KILN_OP_AVG_POOL_GRAD: return k_avg_pool_grad;
    default: return NULL;
    }
}
