/* bf16 activations (mixed_bfloat16 keeps them bf16 between layers, src/graph/autocast.c): the
 * memory-bound ops between the convolutions read and write half the bytes of their f32 versions.
 * Arithmetic is f32 (bf16 widened exactly), each result rounded once to bf16 as the ref kernels
 * do; max, relu and their gradients only select values, so they are exact. Convolutions and
 * matmuls with bf16 outputs are oneDNN's (cpu_conv_dnnl.c, cpu_bf16.c). */
#include <stdlib.h>
#include "backend/cpu/cpu_pool_shape.h"

typedef uint16_t bf16;
static inline const bf16 *hin(const kiln_kctx *c, int i) { return (const bf16 *)c->in[i].data; }
static inline bf16 *hout(const kiln_kctx *c) { return (bf16 *)c->out.data; }

/* ---- elementwise ---- */

static kiln_status k_relu(const kiln_kctx *c) {     /* NaN passes, as the f32 kernel */
    const bf16 *x = hin(c, 0);
    bf16 *y = hout(c);
    int64_t n = c->out.numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) y[i] = cpu_from_bf16(x[i]) <= 0.0f ? 0 : x[i];
    return KILN_OK;
}

static kiln_status k_relu_grad(const kiln_kctx *c) {   /* (x or y, dy) */
    const bf16 *x = hin(c, 0), *g = hin(c, 1);
    bf16 *y = hout(c);
    int64_t n = c->out.numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) y[i] = cpu_from_bf16(x[i]) > 0.0f ? g[i] : 0;
    return KILN_OK;
}

static kiln_status k_add(const kiln_kctx *c) {         /* same shapes */
    const bf16 *a = hin(c, 0), *b = hin(c, 1);
    bf16 *y = hout(c);
    int64_t n = c->out.numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) y[i] = cpu_to_bf16(cpu_from_bf16(a[i]) + cpu_from_bf16(b[i]));
    return KILN_OK;
}

static kiln_status k_bias_add(const kiln_kctx *c) {    /* x [..., C] + b [C] */
    const bf16 *x = hin(c, 0), *b = hin(c, 1);
    bf16 *y = hout(c);
    int64_t n = c->out.numel, C = c->in[1].numel, R = C > 0 ? n / C : 0;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, n))
    for (int64_t r = 0; r < R; r++)
        for (int64_t k = 0; k < C; k++) y[r * C + k] = cpu_to_bf16(cpu_from_bf16(x[r * C + k]) + cpu_from_bf16(b[k]));
    return KILN_OK;
}

/* Sum over leading dims, x as [R, C] -> [C] (bias gradients): columns split over the threads, each
 * summed in row order in f64 (as the f32 kernel), rounded once. */
static kiln_status k_sum_leading(const kiln_kctx *c) {
    int64_t C = c->out.numel, R = C > 0 ? c->in[0].numel / C : 0;
    const bf16 *x = hin(c, 0);
    bf16 *y = hout(c);
    double scale = c->node->op == KILN_OP_REDUCE_MEAN ? (R > 0 ? 1.0 / (double)R : NAN) : 1.0;
    int64_t nblk = (C + 63) / 64;
    #pragma omp parallel for schedule(static) num_threads(nblk > 1 ? cpu_par(c, R * C) : 1)
    for (int64_t b = 0; b < nblk; b++) {
        int64_t k0 = b * 64, k1 = k0 + 64 < C ? k0 + 64 : C;
        double acc[64] = { 0 };
        for (int64_t r = 0; r < R; r++)
            for (int64_t k = k0; k < k1; k++) acc[k - k0] += cpu_from_bf16(x[r * C + k]);
        for (int64_t k = k0; k < k1; k++) y[k] = cpu_to_bf16((float)(acc[k - k0] * scale));
    }
    return KILN_OK;
}

/* ---- max pooling (NHWC, channels innermost; threads split the batch; cpu_pool_shape.h) ---- */

/* 2x2 windows tiling x (the CNNs' pooling): the four cells in registers (cpu_pool.c's f32 twin). */
static void max_pool_2x2(const pool_p *p, const bf16 *x, bf16 *y, int nt) {
    const int64_t C = p->C, row = p->W * C;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                const bf16 *restrict a = x + ((n * p->H + 2 * oh) * p->W + 2 * ow) * C, *restrict b = a + C, *restrict e = a + row,
                                     *restrict f = e + C;
                bf16 *restrict o = y + ((n * p->OH + oh) * p->OW + ow) * C;
                #pragma omp simd
                for (int64_t k = 0; k < C; k++)
                    o[k] = cpu_to_bf16(max_nan(max_nan(max_nan(cpu_from_bf16(a[k]), cpu_from_bf16(b[k])), cpu_from_bf16(e[k])),
                                               cpu_from_bf16(f[k])));
            }
}

static void max_pool_grad_2x2(const pool_p *p, const bf16 *x, const bf16 *y, const bf16 *dy, bf16 *dx, int nt) {
    const int64_t C = p->C, row = p->W * C;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                int64_t i = ((n * p->H + 2 * oh) * p->W + 2 * ow) * C, o = ((n * p->OH + oh) * p->OW + ow) * C;
                const bf16 *restrict a = x + i, *restrict b = a + C, *restrict e = a + row, *restrict f = e + C;
                bf16 *restrict da = dx + i, *restrict db = da + C, *restrict de = da + row, *restrict df = de + C;
                const bf16 *restrict ym = y + o, *restrict g = dy + o;
                #pragma omp simd
                for (int64_t k = 0; k < C; k++) {    /* the first cell equal to the max takes dy */
                    float m = cpu_from_bf16(ym[k]);
                    bf16 r = g[k];
                    bool h = cpu_from_bf16(a[k]) == m;
                    da[k] = h ? r : 0; r = h ? 0 : r;
                    h = cpu_from_bf16(b[k]) == m;
                    db[k] = h ? r : 0; r = h ? 0 : r;
                    h = cpu_from_bf16(e[k]) == m;
                    de[k] = h ? r : 0; r = h ? 0 : r;
                    df[k] = cpu_from_bf16(f[k]) == m ? r : 0;
                }
            }
}

/* Windows of up to 3x3 cells (3x3 stride 2, the other CNN pooling): nine cell pointers per
 * window, cells in the padding pointing at a row of -inf, so the channel loop is one expression
 * in registers. Row-major order keeps the first of equal values, as ref. The gradient's cells
 * outside a window read NaN (never equal). */
static const bf16 neg_inf_row[POOL9_MAXC] = { [0 ... POOL9_MAXC - 1] = 0xff80 };
static const bf16 nan_row[POOL9_MAXC] = { [0 ... POOL9_MAXC - 1] = 0x7fc0 };

static void max_pool_9(const pool_p *p, const bf16 *x, bf16 *y, int nt) {
    const int64_t C = p->C;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                const bf16 *c9[9];
                int64_t off[9];
                pool9_cells(p, oh, ow, off);
                for (int i = 0; i < 9; i++) c9[i] = off[i] >= 0 ? x + n * p->H * p->W * C + off[i] : neg_inf_row;
                bf16 *restrict o = y + ((n * p->OH + oh) * p->OW + ow) * C;
                const bf16 *restrict a = c9[0], *restrict b = c9[1], *restrict cc = c9[2], *restrict d = c9[3], *restrict e = c9[4],
                                     *restrict f = c9[5], *restrict g = c9[6], *restrict h = c9[7], *restrict q = c9[8];
                #pragma omp simd
                for (int64_t k = 0; k < C; k++) {
                    float m = cpu_from_bf16(a[k]);
                    m = max_nan(m, cpu_from_bf16(b[k])); m = max_nan(m, cpu_from_bf16(cc[k]));
                    m = max_nan(m, cpu_from_bf16(d[k])); m = max_nan(m, cpu_from_bf16(e[k])); m = max_nan(m, cpu_from_bf16(f[k]));
                    m = max_nan(m, cpu_from_bf16(g[k])); m = max_nan(m, cpu_from_bf16(h[k])); m = max_nan(m, cpu_from_bf16(q[k]));
                    o[k] = cpu_to_bf16(m);
                }
            }
}

static kiln_status k_max_pool(const kiln_kctx *c) {
    pool_p p;
    if (!pool_params(c->node, c->in[0].shape, c->out.shape, &p)) return kiln_set_error(KILN_INTERNAL, "cpu pool: bad shapes");
    const bf16 *x = hin(c, 0);
    bf16 *y = hout(c);
    const int64_t C = p.C;
    if (pool_2x2(&p)) { max_pool_2x2(&p, x, y, cpu_par(c, c->in[0].numel)); return KILN_OK; }
    if (pool_9(&p)) { max_pool_9(&p, x, y, cpu_par(c, c->in[0].numel)); return KILN_OK; }
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, c->in[0].numel))
    for (int64_t n = 0; n < p.N; n++) {
        const bf16 *xn = x + n * p.H * p.W * C;
        float m[256];
        for (int64_t oh = 0; oh < p.OH; oh++)
            for (int64_t ow = 0; ow < p.OW; ow++) {
                bf16 *o = y + ((n * p.OH + oh) * p.OW + ow) * C;
                int64_t h0, h1, w0, w1;
                window(&p, oh, ow, &h0, &h1, &w0, &w1);
                for (int64_t c0 = 0; c0 < C; c0 += 256) {
                    int64_t cn = C - c0 < 256 ? C - c0 : 256;
                    for (int64_t k = 0; k < cn; k++) m[k] = -INFINITY;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            const bf16 *s = xn + (ih * p.W + iw) * C + c0;
                            for (int64_t k = 0; k < cn; k++) {
                                float v = cpu_from_bf16(s[k]);
                                m[k] = (v > m[k] || v != v) ? v : m[k];   /* NaN wins, as ref */
                            }
                        }
                    for (int64_t k = 0; k < cn; k++) o[c0 + k] = cpu_to_bf16(m[k]);   /* exact: m is a bf16 value */
                }
            }
    }
    return KILN_OK;
}

/* One overlapping window of up to 3x3 cells into the f32 image (cpu_pool.c's grad9): r held in
 * registers across the nine cells; cells outside the window read NaN and write a scratch row. */
static inline void grad9(const bf16 *const s[9], float *const d[9], const bf16 *restrict ym, const bf16 *restrict g, int64_t C) {
    const bf16 *restrict s0 = s[0], *restrict s1 = s[1], *restrict s2 = s[2], *restrict s3 = s[3], *restrict s4 = s[4],
                         *restrict s5 = s[5], *restrict s6 = s[6], *restrict s7 = s[7], *restrict s8 = s[8];
    float *restrict d0 = d[0], *restrict d1 = d[1], *restrict d2 = d[2], *restrict d3 = d[3], *restrict d4 = d[4],
                    *restrict d5 = d[5], *restrict d6 = d[6], *restrict d7 = d[7], *restrict d8 = d[8];
    #pragma omp simd
    for (int64_t k = 0; k < C; k++) {
        float m = cpu_from_bf16(ym[k]), r = cpu_from_bf16(g[k]);
        bool h;
        h = cpu_from_bf16(s0[k]) == m; d0[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = cpu_from_bf16(s1[k]) == m; d1[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = cpu_from_bf16(s2[k]) == m; d2[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = cpu_from_bf16(s3[k]) == m; d3[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = cpu_from_bf16(s4[k]) == m; d4[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = cpu_from_bf16(s5[k]) == m; d5[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = cpu_from_bf16(s6[k]) == m; d6[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = cpu_from_bf16(s7[k]) == m; d7[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = cpu_from_bf16(s8[k]) == m; d8[k] += h ? r : 0.0f;
    }
}

/* dx: each window's dy goes to the first cell (row-major) equal to the window's max y. Windows
 * that tile x write each cell once (a selection, exact); overlapping ones add up in an f32 image
 * of the workspace, rounded once, as ref. */
static kiln_status k_max_pool_grad(const kiln_kctx *c) {
    pool_p p;
    if (!pool_params(c->node, c->in[0].shape, c->in[1].shape, &p)) return kiln_set_error(KILN_INTERNAL, "cpu pool: bad shapes");
    const bf16 *x = hin(c, 0), *y = hin(c, 1), *dy = hin(c, 2);
    bf16 *dx = hout(c);
    const int64_t C = p.C, img = p.H * p.W * C;
    if (pool_2x2(&p)) { max_pool_grad_2x2(&p, x, y, dy, dx, cpu_par(c, c->out.numel)); return KILN_OK; }
    const bool tiles = pool_tiles(&p);
    int nt = cpu_par(c, c->out.numel);
    float *acc = NULL;
    if (!tiles) {
        size_t per = (size_t)img * sizeof(float);
        acc = (float *)(((uintptr_t)c->workspace + 63) & ~(uintptr_t)63);
        int fit = c->workspace && c->ws_bytes > per + 64 ? (int)((c->ws_bytes - 64) / per) : 0;
        if (fit < 1) return kiln_set_error(KILN_INTERNAL, "%s: max-pool gradient workspace %zu bytes, needs %zu", c->node->name, c->ws_bytes, per + 64);
        if (nt > fit) nt = fit;
    }
    const bool nine = acc && pool_9(&p);
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p.N; n++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        const bf16 *xn = x + n * img;
        bf16 *dxn = dx + n * img;
        float *an = acc ? acc + (size_t)t * (size_t)img : NULL;
        float scratch[nine ? 9 * C : 1];   /* where cells outside a window write (zeros added) */
        if (nine) memset(scratch, 0, sizeof scratch);
        /* the f32 image's rows are zeroed just before the first window reaching them and rounded
         * to dx as soon as no later window can reach them, so each row is hot in cache for all
         * three passes instead of three sweeps over the image */
        const int64_t row = p.W * C;
        int64_t zeroed = 0, flushed = 0;
        float rem[256];    /* the window's dy not yet given to a cell (cpu_pool.c's rule) */
        for (int64_t oh = 0; oh < p.OH; oh++) {
            if (an) {
                int64_t he = oh * p.sh - p.pt + p.kh;
                for (he = he < p.H ? he : p.H; zeroed < he; zeroed++) memset(an + zeroed * row, 0, sizeof(float) * (size_t)row);
            }
            for (int64_t ow = 0; ow < p.OW; ow++) {
                int64_t o = ((n * p.OH + oh) * p.OW + ow) * C;
                if (nine) {
                    int64_t off[9];
                    const bf16 *s[9];
                    float *d[9];
                    pool9_cells(&p, oh, ow, off);
                    for (int i = 0; i < 9; i++) {
                        s[i] = off[i] >= 0 ? xn + off[i] : nan_row;
                        d[i] = off[i] >= 0 ? an + off[i] : scratch + i * C;
                    }
                    grad9(s, d, y + o, dy + o, C);
                    continue;
                }
                int64_t h0, h1, w0, w1;
                window(&p, oh, ow, &h0, &h1, &w0, &w1);
                for (int64_t c0 = 0; c0 < C; c0 += 256) {
                    int64_t cn = C - c0 < 256 ? C - c0 : 256;
                    const bf16 *restrict ym = y + o + c0, *restrict g = dy + o + c0;
                    for (int64_t k = 0; k < cn; k++) rem[k] = cpu_from_bf16(g[k]);
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            int64_t off = (ih * p.W + iw) * C + c0;
                            const bf16 *restrict s = xn + off;
                            if (!an) {
                                bf16 *restrict d = dxn + off;
                                #pragma omp simd
                                for (int64_t k = 0; k < cn; k++) {
                                    bool hit = cpu_from_bf16(s[k]) == cpu_from_bf16(ym[k]);
                                    d[k] = cpu_to_bf16(hit ? rem[k] : 0.0f);   /* exact: rem is dy or 0 */
                                    rem[k] = hit ? 0.0f : rem[k];
                                }
                            } else {
                                float *restrict d = an + off;
                                #pragma omp simd
                                for (int64_t k = 0; k < cn; k++) {
                                    bool hit = cpu_from_bf16(s[k]) == cpu_from_bf16(ym[k]);
                                    d[k] += hit ? rem[k] : 0.0f;
                                    rem[k] = hit ? 0.0f : rem[k];
                                }
                            }
                        }
                }
            }
            if (an) {          /* rows above the next window's first row are complete */
                int64_t done = oh + 1 < p.OH ? (oh + 1) * p.sh - p.pt : p.H;
                for (done = done < p.H ? done : p.H; flushed < done; flushed++) {
                    if (flushed >= zeroed) { memset(an + flushed * row, 0, sizeof(float) * (size_t)row); zeroed = flushed + 1; }
                    const float *restrict a = an + flushed * row;
                    bf16 *restrict d = dxn + flushed * row;
                    #pragma omp simd
                    for (int64_t i = 0; i < row; i++) d[i] = cpu_to_bf16(a[i]);
                }
            }
        }
    }
    return KILN_OK;
}

static bool all_bf16(const kiln_node *n) {
    if (n->dtype != KILN_BF16) return false;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]->dtype != KILN_BF16) return false;
    return true;
}

kiln_kernel_fn cpu_bf16_act_kernel(const kiln_node *n) {
    if (!n || !all_bf16(n)) return NULL;
    pool_p p;
    switch (n->op) {
    case KILN_OP_CONV2D: case KILN_OP_CONV2D_BWD_INPUT: case KILN_OP_CONV2D_BWD_FILTER: {
        kiln_kernel_fn f = cpu_winograd_kernel(n);
        return f ? f : cpu_dnnl_conv_kernel(n);
    }
    case KILN_OP_MATMUL:
        return cpu_bf16_matmul_kernel(n);
    case KILN_OP_RELU:
        return kiln_shape_equal(n->in[0]->shape, n->shape) ? k_relu : NULL;
    case KILN_OP_RELU_GRAD:
        return kiln_shape_equal(n->in[0]->shape, n->shape) && kiln_shape_equal(n->in[1]->shape, n->shape) ? k_relu_grad : NULL;
    case KILN_OP_ADD:
        return kiln_shape_equal(n->in[0]->shape, n->shape) && kiln_shape_equal(n->in[1]->shape, n->shape) ? k_add : NULL;
    case KILN_OP_BIAS_ADD:
        return n->in[1]->shape.rank == 1 && n->shape.rank >= 1 && n->in[1]->shape.dim[0] == n->shape.dim[n->shape.rank - 1] &&
               kiln_shape_equal(n->in[0]->shape, n->shape) ? k_bias_add : NULL;
    case KILN_OP_SUM_TO: case KILN_OP_REDUCE_SUM: case KILN_OP_REDUCE_MEAN:
        return cpu_sums_leading(n) ? k_sum_leading : NULL;
    case KILN_OP_MAX_POOL:
        return n->n_in == 1 && pool_params(n, n->in[0]->shape, n->shape, &p) ? k_max_pool : NULL;
    case KILN_OP_MAX_POOL_GRAD:
        return n->n_in == 3 && pool_params(n, n->in[0]->shape, n->in[1]->shape, &p) &&
               kiln_shape_equal(n->in[1]->shape, n->in[2]->shape) && kiln_shape_equal(n->shape, n->in[0]->shape) ? k_max_pool_grad : NULL;
    default: return NULL;
    }
}

/* Overlapping max-pool windows: one f32 image per thread. */
size_t cpu_bf16_act_workspace(const kiln_node *n) {
    pool_p p;
    if (!n || n->op != KILN_OP_MAX_POOL_GRAD || cpu_bf16_act_kernel(n) != k_max_pool_grad ||
        !pool_params(n, n->in[0]->shape, n->in[1]->shape, &p) || pool_tiles(&p))
        return 0;
    int t = 1;
#ifdef _OPENMP
    t = omp_get_max_threads();
#endif
    return (size_t)t * (size_t)(p.H * p.W * p.C) * sizeof(float) + 64;
}
