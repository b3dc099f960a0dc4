/* Pooling geometry shared by the f32 kernels (cpu_pool.c) and the bf16 ones (cpu_bf16_act.c):
 * NHWC shapes, each window's clipped cells, and which fast path a window shape takes. */
#ifndef KILN_CPU_POOL_SHAPE_H
#define KILN_CPU_POOL_SHAPE_H
#include "backend/cpu/cpu_internal.h"

typedef struct pool_p { int64_t N, H, W, C, OH, OW; int kh, kw, sh, sw, pt, pl; } pool_p;

static inline bool pool_params(const kiln_node *n, kiln_shape xs, kiln_shape ys, pool_p *p) {
    const kiln_attrs *a = &n->attrs;
    if (xs.rank != 4 || ys.rank != 4 || xs.dim[0] != ys.dim[0] || xs.dim[3] != ys.dim[3]) return false;
    *p = (pool_p){ xs.dim[0], xs.dim[1], xs.dim[2], xs.dim[3], ys.dim[1], ys.dim[2],
                   a->kh, a->kw, a->sh, a->sw, a->pt, a->pl };
    return p->kh > 0 && p->kw > 0 && p->sh > 0 && p->sw > 0;
}

/* Valid window rows/cols for output (oh, ow). */
static inline void window(const pool_p *p, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1) {
    int64_t hs = oh * p->sh - p->pt, ws = ow * p->sw - p->pl;
    *h0 = hs < 0 ? 0 : hs; *h1 = hs + p->kh < p->H ? hs + p->kh : p->H;
    *w0 = ws < 0 ? 0 : ws; *w1 = ws + p->kw < p->W ? ws + p->kw : p->W;
}

/* Windows that tile x exactly (stride = window, no padding, no cells left over): every cell of
 * dx is written once, so no zeroing pass and no accumulation. */
static inline bool pool_tiles(const pool_p *p) {
    return p->sh == p->kh && p->sw == p->kw && p->pt == 0 && p->pl == 0 && p->OH * p->kh == p->H && p->OW * p->kw == p->W;
}

/* 2x2 windows, stride 2, no padding, tiling x (the CNNs' pooling): each output's four cells held
 * in registers, channels vectorised; the generic loops keep per-window arrays on the stack and
 * ran at a fraction of the memory bandwidth. */
static inline bool pool_2x2(const pool_p *p) {
    return p->kh == 2 && p->kw == 2 && p->sh == 2 && p->sw == 2 && p->pt == 0 && p->pl == 0 && p->OH * 2 == p->H && p->OW * 2 == p->W;
}

/* Windows of up to 3x3 cells (3x3 stride 2): nine cell pointers per window, cells in the padding
 * pointing at a row of -inf of POOL9_MAXC channels. */
#define POOL9_MAXC 1024
static inline bool pool_9(const pool_p *p) { return p->kh <= 3 && p->kw <= 3 && p->C <= POOL9_MAXC; }

/* The nine cells of window (oh, ow), row-major, as element offsets into its image; -1: past the
 * window or in the padding. */
static inline void pool9_cells(const pool_p *p, int64_t oh, int64_t ow, int64_t off[9]) {
    int64_t hs = oh * p->sh - p->pt, ws = ow * p->sw - p->pl;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            int64_t h = hs + i, w = ws + j;
            bool in = i < p->kh && j < p->kw && h >= 0 && h < p->H && w >= 0 && w < p->W;
            off[i * 3 + j] = in ? (h * p->W + w) * p->C : -1;
        }
}

static inline float max_nan(float m, float v) { return ((v > m) | (v != v)) ? v : m; }   /* NaN wins, as ref */
#endif
