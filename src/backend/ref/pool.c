/* Ref kernels: pooling. x NHWC; window (kh, kw), stride (sh, sw), pads (pt, pb, pl, pr).
 * Window (oh, ow) covers rows oh*sh - pt .. + kh-1 and columns ow*sw - pl .. + kw-1; padded cells
 * take no part (never win a max, not counted in an average). */
#include "ops/ref_kernels.h"

typedef struct pool_dims { int64_t N, H, W, C, OH, OW; } pool_dims;

static pool_dims dims_of(kiln_shape x, kiln_shape y) {
    pool_dims d = { x.dim[0], x.dim[1], x.dim[2], x.dim[3], y.dim[1], y.dim[2] };
    return d;
}

static int64_t at4(int64_t n, int64_t h, int64_t w, int64_t c, int64_t H, int64_t W, int64_t C) {
    return ((n * H + h) * W + w) * C + c;
}

/* Clipped window rows [*h0, *h1) and columns [*w0, *w1) of output cell (oh, ow). */
static void window(const kiln_attrs *at, const pool_dims *d, int64_t oh, int64_t ow,
                   int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1) {
    int64_t hs = oh * at->sh - at->pt, ws = ow * at->sw - at->pl;
    *h0 = hs < 0 ? 0 : hs;
    *h1 = hs + at->kh > d->H ? d->H : hs + at->kh;
    *w0 = ws < 0 ? 0 : ws;
    *w1 = ws + at->kw > d->W ? d->W : ws + at->kw;
}

/* NaN propagates: a window holding a NaN has max NaN. */
kiln_status kiln_ref_max_pool(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *x = &c->in[0], *y = &c->out;
    pool_dims d = dims_of(x->shape, y->shape);
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t oh = 0; oh < d.OH; oh++)
            for (int64_t ow = 0; ow < d.OW; ow++)
                for (int64_t ch = 0; ch < d.C; ch++) {
                    int64_t h0, h1, w0, w1;
                    window(at, &d, oh, ow, &h0, &h1, &w0, &w1);
                    double m = -INFINITY;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++) {
                            double v = kiln_load(x->data, x->dtype, at4(n, h, w, ch, d.H, d.W, d.C));
                            if (v > m || isnan(v)) m = v;
                        }
                    kiln_store(y->data, y->dtype, at4(n, oh, ow, ch, d.OH, d.OW, d.C), m);
                }
    return KILN_OK;
}

/* dx[n,h,w,c] gathers dy of every window whose first (row-major) cell equal to the window's max
 * y is (h, w). */
kiln_status kiln_ref_max_pool_grad(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *x = &c->in[0], *y = &c->in[1], *dy = &c->in[2], *dx = &c->out;
    pool_dims d = dims_of(x->shape, y->shape);
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t h = 0; h < d.H; h++)
            for (int64_t w = 0; w < d.W; w++)
                for (int64_t ch = 0; ch < d.C; ch++) {
                    double acc = 0.0;
                    for (int64_t oh = 0; oh < d.OH; oh++)
                        for (int64_t ow = 0; ow < d.OW; ow++) {
                            int64_t h0, h1, w0, w1;
                            window(at, &d, oh, ow, &h0, &h1, &w0, &w1);
                            if (h < h0 || h >= h1 || w < w0 || w >= w1) continue;
                            int64_t yi = at4(n, oh, ow, ch, d.OH, d.OW, d.C);
                            double m = kiln_load(y->data, y->dtype, yi);
                            int64_t ah = -1, aw = -1;     /* the window's argmax */
                            for (int64_t hh = h0; hh < h1 && ah < 0; hh++)
                                for (int64_t ww = w0; ww < w1; ww++)
                                    if (kiln_load(x->data, x->dtype, at4(n, hh, ww, ch, d.H, d.W, d.C)) == m) {
                                        ah = hh; aw = ww;
                                        break;
                                    }
                            if (ah == h && aw == w) acc += kiln_load(dy->data, dy->dtype, yi);
                        }
                    kiln_store(dx->data, dx->dtype, at4(n, h, w, ch, d.H, d.W, d.C), acc);
                }
    return KILN_OK;
}

kiln_status kiln_ref_avg_pool(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *x = &c->in[0], *y = &c->out;
    pool_dims d = dims_of(x->shape, y->shape);
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t oh = 0; oh < d.OH; oh++)
            for (int64_t ow = 0; ow < d.OW; ow++)
                for (int64_t ch = 0; ch < d.C; ch++) {
                    int64_t h0, h1, w0, w1;
                    window(at, &d, oh, ow, &h0, &h1, &w0, &w1);
                    double acc = 0.0;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++)
                            acc += kiln_load(x->data, x->dtype, at4(n, h, w, ch, d.H, d.W, d.C));
                    kiln_store(y->data, y->dtype, at4(n, oh, ow, ch, d.OH, d.OW, d.C),
                               acc / (double)((h1 - h0) * (w1 - w0)));
                }
    return KILN_OK;
}

/* dx[n,h,w,c] = sum over windows containing (h, w) of dy / (unpadded cells of that window). */
kiln_status kiln_ref_avg_pool_grad(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *dy = &c->in[0], *dx = &c->out;
    pool_dims d = dims_of(dx->shape, dy->shape);
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t h = 0; h < d.H; h++)
            for (int64_t w = 0; w < d.W; w++)
                for (int64_t ch = 0; ch < d.C; ch++) {
                    double acc = 0.0;
                    for (int64_t oh = 0; oh < d.OH; oh++)
                        for (int64_t ow = 0; ow < d.OW; ow++) {
                            int64_t h0, h1, w0, w1;
                            window(at, &d, oh, ow, &h0, &h1, &w0, &w1);
                            if (h < h0 || h >= h1 || w < w0 || w >= w1) continue;
                            acc += kiln_load(dy->data, dy->dtype, at4(n, oh, ow, ch, d.OH, d.OW, d.C)) /
                                   (double)((h1 - h0) * (w1 - w0));
                        }
                    kiln_store(dx->data, dx->dtype, at4(n, h, w, ch, d.H, d.W, d.C), acc);
                }
    return KILN_OK;
}

kiln_status kiln_ref_global_avg_pool(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *y = &c->out;
    int64_t N = x->shape.dim[0], H = x->shape.dim[1], W = x->shape.dim[2], C = x->shape.dim[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            double acc = 0.0;
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++)
                    acc += kiln_load(x->data, x->dtype, at4(n, h, w, ch, H, W, C));
            kiln_store(y->data, y->dtype, n * C + ch, acc / (double)(H * W));
        }
    return KILN_OK;
}
