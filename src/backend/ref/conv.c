/* Ref kernels: Conv2D and its two backprops. x NHWC, w HWIO [kh, kw, Cin/groups, Cout].
 * Input row of output row oh, kernel row i: ih = oh*sh - pt + i*dh (same for columns). */
#include "ops/ref_kernels.h"

typedef struct conv_dims {
    int64_t N, H, W, C;          /* x */
    int64_t OH, OW, CO;          /* y / dy */
    int64_t KH, KW, CIG, COG;    /* kernel; in/out channels per group */
} conv_dims;

static conv_dims dims_of(kiln_shape x, kiln_shape w, kiln_shape y, int groups) {
    conv_dims d = { x.dim[0], x.dim[1], x.dim[2], x.dim[3], y.dim[1], y.dim[2], y.dim[3],
                    w.dim[0], w.dim[1], w.dim[2], w.dim[3] / groups };
    return d;
}

static int64_t at4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t B, int64_t C, int64_t D) {
    return ((a * B + b) * C + c) * D + d;
}

kiln_status kiln_ref_conv2d(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *x = &c->in[0], *w = &c->in[1], *y = &c->out;
    conv_dims d = dims_of(x->shape, w->shape, y->shape, at->groups);
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t oh = 0; oh < d.OH; oh++)
            for (int64_t ow = 0; ow < d.OW; ow++)
                for (int64_t co = 0; co < d.CO; co++) {
                    int64_t g = co / d.COG;
                    double acc = 0.0;
                    for (int64_t i = 0; i < d.KH; i++) {
                        int64_t ih = oh * at->sh - at->pt + i * at->dh;
                        if (ih < 0 || ih >= d.H) continue;
                        for (int64_t j = 0; j < d.KW; j++) {
                            int64_t iw = ow * at->sw - at->pl + j * at->dw;
                            if (iw < 0 || iw >= d.W) continue;
                            for (int64_t ci = 0; ci < d.CIG; ci++)
                                acc += kiln_load(x->data, x->dtype, at4(n, ih, iw, g * d.CIG + ci, d.H, d.W, d.C)) *
                                       kiln_load(w->data, w->dtype, at4(i, j, ci, co, d.KW, d.CIG, d.CO));
                        }
                    }
                    kiln_store(y->data, y->dtype, at4(n, oh, ow, co, d.OH, d.OW, d.CO), acc);
                }
    return KILN_OK;
}

/* dx[n,ih,iw,c] = sum over (i, j, co in c's group) of w[i,j,c%CIG,co] * dy[n,oh,ow,co] for every
 * output position (oh, ow) whose window puts kernel tap (i, j) on (ih, iw). */
kiln_status kiln_ref_conv2d_bwd_input(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *w = &c->in[0], *dy = &c->in[1], *dx = &c->out;
    conv_dims d = dims_of(dx->shape, w->shape, dy->shape, at->groups);
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t ih = 0; ih < d.H; ih++)
            for (int64_t iw = 0; iw < d.W; iw++)
                for (int64_t ch = 0; ch < d.C; ch++) {
                    int64_t g = ch / d.CIG, ci = ch % d.CIG;
                    double acc = 0.0;
                    for (int64_t i = 0; i < d.KH; i++) {
                        int64_t th = ih + at->pt - i * at->dh;     /* = oh * sh when tap i hits ih */
                        if (th < 0 || th % at->sh != 0 || th / at->sh >= d.OH) continue;
                        int64_t oh = th / at->sh;
                        for (int64_t j = 0; j < d.KW; j++) {
                            int64_t tw = iw + at->pl - j * at->dw;
                            if (tw < 0 || tw % at->sw != 0 || tw / at->sw >= d.OW) continue;
                            int64_t ow = tw / at->sw;
                            for (int64_t co = g * d.COG; co < (g + 1) * d.COG; co++)
                                acc += kiln_load(w->data, w->dtype, at4(i, j, ci, co, d.KW, d.CIG, d.CO)) *
                                       kiln_load(dy->data, dy->dtype, at4(n, oh, ow, co, d.OH, d.OW, d.CO));
                        }
                    }
                    kiln_store(dx->data, dx->dtype, at4(n, ih, iw, ch, d.H, d.W, d.C), acc);
                }
    return KILN_OK;
}

/* dw[i,j,ci,co] = sum over (n, oh, ow) of x[n,ih,iw,g*CIG+ci] * dy[n,oh,ow,co], g = co's group. */
kiln_status kiln_ref_conv2d_bwd_filter(const kiln_kctx *c) {
    const kiln_attrs *at = &c->node->attrs;
    const kiln_view *x = &c->in[0], *dy = &c->in[1], *dw = &c->out;
    conv_dims d = dims_of(x->shape, dw->shape, dy->shape, at->groups);
    for (int64_t i = 0; i < d.KH; i++)
        for (int64_t j = 0; j < d.KW; j++)
            for (int64_t ci = 0; ci < d.CIG; ci++)
                for (int64_t co = 0; co < d.CO; co++) {
                    int64_t ch = (co / d.COG) * d.CIG + ci;
                    double acc = 0.0;
                    for (int64_t n = 0; n < d.N; n++)
                        for (int64_t oh = 0; oh < d.OH; oh++) {
                            int64_t ih = oh * at->sh - at->pt + i * at->dh;
                            if (ih < 0 || ih >= d.H) continue;
                            for (int64_t ow = 0; ow < d.OW; ow++) {
                                int64_t iw = ow * at->sw - at->pl + j * at->dw;
                                if (iw < 0 || iw >= d.W) continue;
                                acc += kiln_load(x->data, x->dtype, at4(n, ih, iw, ch, d.H, d.W, d.C)) *
                                       kiln_load(dy->data, dy->dtype, at4(n, oh, ow, co, d.OH, d.OW, d.CO));
                            }
                        }
                    kiln_store(dw->data, dw->dtype, at4(i, j, ci, co, d.KW, d.CIG, d.CO), acc);
                }
    return KILN_OK;
}
