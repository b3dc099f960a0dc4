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

/* dx: the max-pool gradient, f32 (dx adds up in place); cpu_bf16_act.c has the bf16 one. */
#define MPG_T float
#define MPG_LD(v) (v)
#define MPG_ST(f) (f)
#define MPG_NAN_ROW nan_row
#define MPG_WIDE 0
#include "backend/cpu/cpu_max_pool_grad.h"

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
