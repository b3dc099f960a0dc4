/* Pooling (NHWC). Loops run over channels innermost so they vectorise; images are independent,
 * so threads split the batch (windows overlap inside an image, which matters for the gradients). */
#include "backend/cpu/cpu_pool_shape.h"

/* 2x2 windows tiling x (pool_2x2): the four cells in registers. */
static void max_pool_2x2(const pool_p *p, const float *x, float *y, int nt) {
    const int64_t C = p->C, row = p->W * C;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                const float *restrict a = x + ((n * p->H + 2 * oh) * p->W + 2 * ow) * C, *restrict b = a + C, *restrict e = a + row,
                                      *restrict f = e + C;
                float *restrict o = y + ((n * p->OH + oh) * p->OW + ow) * C;
                #pragma omp simd
                for (int64_t k = 0; k < C; k++) o[k] = max_nan(max_nan(max_nan(a[k], b[k]), e[k]), f[k]);
            }
}

/* The first of the four cells (row-major) equal to the max takes dy, the others 0. */
static void max_pool_grad_2x2(const pool_p *p, const float *x, const float *y, const float *dy, float *dx, int nt) {
    const int64_t C = p->C, row = p->W * C;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                int64_t i = ((n * p->H + 2 * oh) * p->W + 2 * ow) * C, o = ((n * p->OH + oh) * p->OW + ow) * C;
                const float *restrict a = x + i, *restrict b = a + C, *restrict e = a + row, *restrict f = e + C;
                float *restrict da = dx + i, *restrict db = da + C, *restrict de = da + row, *restrict df = de + C;
                const float *restrict ym = y + o, *restrict g = dy + o;
                #pragma omp simd
                for (int64_t k = 0; k < C; k++) {
                    float m = ym[k], r = g[k];
                    bool h = a[k] == m;
                    da[k] = h ? r : 0.0f; r = h ? 0.0f : r;
                    h = b[k] == m;
                    db[k] = h ? r : 0.0f; r = h ? 0.0f : r;
                    h = e[k] == m;
                    de[k] = h ? r : 0.0f; r = h ? 0.0f : r;
                    df[k] = f[k] == m ? r : 0.0f;
                }
            }
}

/* Windows of up to 3x3 cells (pool_9): the channel loop is one expression in registers. Row-major
 * order keeps the first of equal values, as ref. Cells outside a window read a constant row:
 * -inf for the max (never wins), NaN for the gradient (never equal). */
static const float neg_inf_row[POOL9_MAXC] = { [0 ... POOL9_MAXC - 1] = -INFINITY };
static const float nan_row[POOL9_MAXC] = { [0 ... POOL9_MAXC - 1] = NAN };

static void max_pool_9(const pool_p *p, const float *x, float *y, int nt) {
    const int64_t C = p->C;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                const float *c9[9];
                int64_t off[9];
                pool9_cells(p, oh, ow, off);
                for (int i = 0; i < 9; i++) c9[i] = off[i] >= 0 ? x + n * p->H * p->W * C + off[i] : neg_inf_row;
                float *restrict o = y + ((n * p->OH + oh) * p->OW + ow) * C;
                const float *restrict a = c9[0], *restrict b = c9[1], *restrict cc = c9[2], *restrict d = c9[3], *restrict e = c9[4],
                                      *restrict f = c9[5], *restrict g = c9[6], *restrict h = c9[7], *restrict q = c9[8];
                #pragma omp simd
                for (int64_t k = 0; k < C; k++) {
                    float m = max_nan(max_nan(max_nan(a[k], b[k]), cc[k]), d[k]);
                    m = max_nan(max_nan(max_nan(m, e[k]), f[k]), g[k]);
                    o[k] = max_nan(max_nan(m, h[k]), q[k]);
                }
            }
}

static kiln_status k_max_pool(const kiln_kctx *c) {
    pool_p p;
    if (!pool_params(c->node, c->in[0].shape, c->out.shape, &p)) return kiln_set_error(KILN_INTERNAL, "cpu pool: bad shapes");
    const float *x = cpu_f(&c->in[0]);
    float *y = cpu_f(&c->out);
    const int64_t C = p.C;
    if (pool_2x2(&p)) { max_pool_2x2(&p, x, y, cpu_par(c, c->in[0].numel)); return KILN_OK; }
    if (pool_9(&p)) { max_pool_9(&p, x, y, cpu_par(c, c->in[0].numel)); return KILN_OK; }
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, c->in[0].numel))
    for (int64_t n = 0; n < p.N; n++) {
        const float *xn = x + n * p.H * p.W * C;
        float m[256];     /* the window's max of a block of channels, in registers */
        for (int64_t oh = 0; oh < p.OH; oh++)
            for (int64_t ow = 0; ow < p.OW; ow++) {
                float *restrict o = y + ((n * p.OH + oh) * p.OW + ow) * C;
                int64_t h0, h1, w0, w1;
                window(&p, oh, ow, &h0, &h1, &w0, &w1);
                for (int64_t c0 = 0; c0 < C; c0 += 256) {
                    int64_t cn = C - c0 < 256 ? C - c0 : 256;
                    for (int64_t k = 0; k < cn; k++) m[k] = -INFINITY;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            const float *restrict s = xn + (ih * p.W + iw) * C + c0;
                            #pragma omp simd
                            for (int64_t k = 0; k < cn; k++) m[k] = ((s[k] > m[k]) | (s[k] != s[k])) ? s[k] : m[k];   /* NaN wins, as ref */
                        }
                    for (int64_t k = 0; k < cn; k++) o[c0 + k] = m[k];
                }
            }
    }
    return KILN_OK;
}

/* The gradient of one overlapping window of up to 3x3 cells: its dy goes to the first cell
 * (row-major) equal to its max, added into dx; r is held in registers across the nine cells.
 * Cells outside the window read NaN (never equal) and write a scratch row. */
static inline void grad9(const float *const s[9], float *const d[9], const float *restrict ym, const float *restrict g, int64_t C) {
    const float *restrict s0 = s[0], *restrict s1 = s[1], *restrict s2 = s[2], *restrict s3 = s[3], *restrict s4 = s[4],
                          *restrict s5 = s[5], *restrict s6 = s[6], *restrict s7 = s[7], *restrict s8 = s[8];
    float *restrict d0 = d[0], *restrict d1 = d[1], *restrict d2 = d[2], *restrict d3 = d[3], *restrict d4 = d[4],
                    *restrict d5 = d[5], *restrict d6 = d[6], *restrict d7 = d[7], *restrict d8 = d[8];
    #pragma omp simd
    for (int64_t k = 0; k < C; k++) {
        float m = ym[k], r = g[k];
        bool h;
        h = s0[k] == m; d0[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = s1[k] == m; d1[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = s2[k] == m; d2[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = s3[k] == m; d3[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = s4[k] == m; d4[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = s5[k] == m; d5[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = s6[k] == m; d6[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = s7[k] == m; d7[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = s8[k] == m; d8[k] += h ? r : 0.0f;
    }
}

/* dx: each window's dy goes to the first cell (row-major) equal to the window's max y. */
static kiln_status k_max_pool_grad(const kiln_kctx *c) {
    pool_p p;
    if (!pool_params(c->node, c->in[0].shape, c->in[1].shape, &p)) return kiln_set_error(KILN_INTERNAL, "cpu pool: bad shapes");
    const float *x = cpu_f(&c->in[0]), *y = cpu_f(&c->in[1]), *dy = cpu_f(&c->in[2]);
    float *dx = cpu_f(&c->out);
    const int64_t C = p.C;
    if (pool_2x2(&p)) { max_pool_grad_2x2(&p, x, y, dy, dx, cpu_par(c, c->out.numel)); return KILN_OK; }
    const bool tiles = pool_tiles(&p), nine = !tiles && pool_9(&p);
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, c->out.numel))
    for (int64_t n = 0; n < p.N; n++) {
        const float *xn = x + n * p.H * p.W * C;
        float *dxn = dx + n * p.H * p.W * C;
        float scratch[nine ? 9 * C : 1];   /* where cells outside a window write (zeros added) */
        if (nine) memset(scratch, 0, sizeof scratch);
        /* overlapping windows add up: each row of dx is zeroed just before the first window
         * reaching it (hot in cache for the adds), rows no window reaches at the end */
        const int64_t row = p.W * C;
        int64_t zeroed = 0;
        /* rem: the window's dy not yet given to a cell; the first cell equal to the max takes it
         * (rem becomes 0, so later equal cells take 0): all f32 selects, no flags */
        float rem[256];
        for (int64_t oh = 0; oh < p.OH; oh++) {
            if (!tiles) {
                int64_t he = oh * p.sh - p.pt + p.kh;
                for (he = he < p.H ? he : p.H; zeroed < he; zeroed++) memset(dxn + zeroed * row, 0, sizeof(float) * (size_t)row);
            }
            for (int64_t ow = 0; ow < p.OW; ow++) {
                int64_t o = ((n * p.OH + oh) * p.OW + ow) * C;
                if (nine) {
                    int64_t off[9];
                    const float *s[9];
                    float *d[9];
                    pool9_cells(&p, oh, ow, off);
                    for (int i = 0; i < 9; i++) {
                        s[i] = off[i] >= 0 ? xn + off[i] : nan_row;
                        d[i] = off[i] >= 0 ? dxn + off[i] : scratch + i * C;
                    }
                    grad9(s, d, y + o, dy + o, C);
                    continue;
                }
                int64_t h0, h1, w0, w1;
                window(&p, oh, ow, &h0, &h1, &w0, &w1);
                for (int64_t c0 = 0; c0 < C; c0 += 256) {   /* channel blocks keep `rem` on the stack */
                    int64_t cn = C - c0 < 256 ? C - c0 : 256;
                    const float *restrict ym = y + o + c0, *restrict g = dy + o + c0;
                    for (int64_t k = 0; k < cn; k++) rem[k] = g[k];
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            int64_t off = (ih * p.W + iw) * C + c0;
                            const float *restrict s = xn + off;
                            float *restrict d = dxn + off;
                            if (tiles) {
                                #pragma omp simd
                                for (int64_t k = 0; k < cn; k++) {
                                    bool hit = s[k] == ym[k];
                                    d[k] = hit ? rem[k] : 0.0f;
                                    rem[k] = hit ? 0.0f : rem[k];
                                }
                            } else {
                                #pragma omp simd
                                for (int64_t k = 0; k < cn; k++) {
                                    bool hit = s[k] == ym[k];
                                    d[k] += hit ? rem[k] : 0.0f;
                                    rem[k] = hit ? 0.0f : rem[k];
                                }
                            }
                        }
                }
            }
        }
        if (!tiles)
            for (; zeroed < p.H; zeroed++) memset(dxn + zeroed * row, 0, sizeof(float) * (size_t)row);
    }
    return KILN_OK;
}

static kiln_status k_avg_pool(const kiln_kctx *c) {
    pool_p p;
    if (!pool_params(c->node, c->in[0].shape, c->out.shape, &p)) return kiln_set_error(KILN_INTERNAL, "cpu pool: bad shapes");
    const float *x = cpu_f(&c->in[0]);
    float *y = cpu_f(&c->out);
    const int64_t C = p.C;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, c->in[0].numel))
    for (int64_t n = 0; n < p.N; n++) {
        const float *xn = x + n * p.H * p.W * C;
        for (int64_t oh = 0; oh < p.OH; oh++)
            for (int64_t ow = 0; ow < p.OW; ow++) {
                float *o = y + ((n * p.OH + oh) * p.OW + ow) * C;
                int64_t h0, h1, w0, w1;
                window(&p, oh, ow, &h0, &h1, &w0, &w1);
                for (int64_t k = 0; k < C; k++) o[k] = 0.0f;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) {
                        const float *s = xn + (ih * p.W + iw) * C;
                        for (int64_t k = 0; k < C; k++) o[k] += s[k];
                    }
                int64_t cnt = (h1 > h0 ? h1 - h0 : 0) * (w1 > w0 ? w1 - w0 : 0);
                for (int64_t k = 0; k < C; k++) o[k] = cnt > 0 ? o[k] / (float)cnt : 0.0f;
            }
    }
    return KILN_OK;
}

static kiln_status k_avg_pool_grad(const kiln_kctx *c) {
    pool_p p;
    if (!pool_params(c->node, c->out.shape, c->in[0].shape, &p)) return kiln_set_error(KILN_INTERNAL, "cpu pool: bad shapes");
    const float *dy = cpu_f(&c->in[0]);
    float *dx = cpu_f(&c->out);
    const int64_t C = p.C;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, c->out.numel))
    for (int64_t n = 0; n < p.N; n++) {
        float *dxn = dx + n * p.H * p.W * C;
        memset(dxn, 0, sizeof(float) * (size_t)(p.H * p.W * C));
        for (int64_t oh = 0; oh < p.OH; oh++)
            for (int64_t ow = 0; ow < p.OW; ow++) {
                const float *g = dy + ((n * p.OH + oh) * p.OW + ow) * C;
                int64_t h0, h1, w0, w1;
                window(&p, oh, ow, &h0, &h1, &w0, &w1);
                int64_t cnt = (h1 > h0 ? h1 - h0 : 0) * (w1 > w0 ? w1 - w0 : 0);
                if (cnt <= 0) continue;
                float fc = (float)cnt;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) {
                        float *d = dxn + (ih * p.W + iw) * C;
                        for (int64_t k = 0; k < C; k++) d[k] += g[k] / fc;
                    }
            }
    }
    return KILN_OK;
}

static kiln_status k_global_avg_pool(const kiln_kctx *c) {
    const kiln_shape *xs = &c->in[0].shape;
    int64_t N = xs->dim[0], HW = xs->dim[1] * xs->dim[2], C = xs->dim[3];
    const float *x = cpu_f(&c->in[0]);
    float *y = cpu_f(&c->out);
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, c->in[0].numel))
    for (int64_t n = 0; n < N; n++) {
        float *o = y + n * C;
        for (int64_t k = 0; k < C; k++) o[k] = 0.0f;
        for (int64_t i = 0; i < HW; i++) {
            const float *s = x + (n * HW + i) * C;
            for (int64_t k = 0; k < C; k++) o[k] += s[k];
        }
        for (int64_t k = 0; k < C; k++) o[k] = HW > 0 ? o[k] / (float)HW : 0.0f;
    }
    return KILN_OK;
}

kiln_kernel_fn cpu_pool_kernel(const kiln_node *n) {
    if (!cpu_is_f32(n) || n->n_in < 1) return NULL;
    pool_p p;
    switch (n->op) {
    case KILN_OP_MAX_POOL:
        return n->n_in == 1 && pool_params(n, n->in[0]->shape, n->shape, &p) ? k_max_pool : NULL;
    case KILN_OP_MAX_POOL_GRAD:
        return n->n_in == 3 && pool_params(n, n->in[0]->shape, n->in[1]->shape, &p) &&
               kiln_shape_equal(n->in[1]->shape, n->in[2]->shape) && kiln_shape_equal(n->shape, n->in[0]->shape)
               ? k_max_pool_grad : NULL;
    case KILN_OP_AVG_POOL:
        return n->n_in == 1 && pool_params(n, n->in[0]->shape, n->shape, &p) ? k_avg_pool : NULL;
    case KILN_OP_AVG_POOL_GRAD:
        return n->n_in == 1 && pool_params(n, n->shape, n->in[0]->shape, &p) ? k_avg_pool_grad : NULL;
    case KILN_OP_GLOBAL_AVG_POOL:
        return n->n_in == 1 && n->in[0]->shape.rank == 4 && n->shape.rank == 2 ? k_global_avg_pool : NULL;
    default: return NULL;
    }
}
