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

/* dx: the max-pool gradient, bf16: tiling windows select dy (exact); overlapping ones add up in
 * an f32 image of the workspace, rounded once, as ref (cpu_max_pool_grad.h, shared with f32). */
#define MPG_T bf16
#define MPG_LD(v) cpu_from_bf16(v)
#define MPG_ST(f) cpu_to_bf16(f)
#define MPG_NAN_ROW nan_row
#define MPG_WIDE 1
#include "backend/cpu/cpu_max_pool_grad.h"

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
