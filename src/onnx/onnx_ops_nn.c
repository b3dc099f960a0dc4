/* ONNX network ops: Conv, MaxPool, AveragePool (1-D and 2-D, on Kiln's NHWC kernels),
 * GlobalAveragePool / GlobalMaxPool, BatchNormalization, InstanceNormalization,
 * LayerNormalization, MeanVarianceNormalization, Gemm, MatMul, Softmax / LogSoftmax, Dropout.
 * Images stay channels-last in Kiln: an NCHW tensor is an NHWC node (layout {0, 2, 3, 1}); a
 * 1-D [N, C, L] one is an [N, L, C] node run as [N, 1, L, C]. */
#include <math.h>
#include <string.h>
#include "onnx/onnx_ops.h"
#include "ops/op.h"

/* ---- windows ---- */
/* The largest kernel, stride, dilation or padding read (Kiln's ops keep them in an int, and sums
 * of two of them must stay one too). */
#define WIN_MAX (1 << 30)
typedef struct win {
    int nsp;                       /* spatial dims: 1 or 2 (Kiln's H is 1 for 1-D) */
    int64_t in[2], out[2];
    int k[2], s[2], d[2], pb[2], pe[2];
} win;

/* Reads the window attributes for input x (logical [N, C, spatial...]) and the kernel's
 * spatial sizes k (Conv: from the weights unless kernel_shape says). */
static kiln_status window(ox_importer *im, const Onnx__NodeProto *n, const ox_val *x, const int64_t *kdims, bool ceil_ok, win *w) {
    int r = x->shape.rank;
    if (r != 3 && r != 4)
        return ox_fail(im, KILN_UNSUPPORTED, "input '%s' has rank %d: Kiln runs 1-D and 2-D windows ([N, C, L] or [N, C, H, W]), not %d-D", x->name, r, r - 2);
    memset(w, 0, sizeof *w);
    w->nsp = r - 2;
    int64_t ks[2], st[2] = { 1, 1 }, dl[2] = { 1, 1 }, pads[4] = { 0 };
    /* each window attribute is an int in Kiln's ops: checked here, and every size built from them in int64 below */
    int nk = ox_attr_ints_in(im, n, "kernel_shape", ks, 2, 1, WIN_MAX);
    if (nk == -2) return ox_status(im);
    if (nk == -1 && kdims) { for (int i = 0; i < w->nsp; i++) ks[i] = kdims[i]; nk = w->nsp; }
    if (nk != w->nsp) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'kernel_shape' must have %d values", w->nsp);
    if (kdims) for (int i = 0; i < w->nsp; i++)
        if (kdims[i] != ks[i]) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'kernel_shape' does not match the weights' spatial sizes");
    int c;
    if ((c = ox_attr_ints_in(im, n, "strides", st, 2, 1, WIN_MAX)) != -1 && c != w->nsp) return ox_status(im) ? ox_status(im) : ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'strides' must have %d values", w->nsp);
    if ((c = ox_attr_ints_in(im, n, "dilations", dl, 2, 1, WIN_MAX)) != -1 && c != w->nsp) return ox_status(im) ? ox_status(im) : ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'dilations' must have %d values", w->nsp);
    if ((c = ox_attr_ints_in(im, n, "pads", pads, 4, 0, WIN_MAX)) != -1 && c != 2 * w->nsp) return ox_status(im) ? ox_status(im) : ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'pads' must have %d values", 2 * w->nsp);
    char ap[32];
    ox_attr_str(n, "auto_pad", ap, sizeof ap);
    bool ceil = ox_attr_int(n, "ceil_mode", 0) != 0;
    for (int i = 0; i < w->nsp; i++) {
        if (ks[i] < 1 || ks[i] > WIN_MAX) return ox_fail(im, KILN_UNSUPPORTED, "a kernel of %lld cells on spatial axis %d", (long long)ks[i], i);
        w->in[i] = x->shape.dim[2 + i];
        w->k[i] = (int)ks[i];
        w->s[i] = (int)st[i];
        w->d[i] = (int)dl[i];
        if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1) return ox_fail(im, KILN_INVALID_ARGUMENT, "kernel, strides and dilations must be >= 1");
        int64_t eff = (int64_t)(w->k[i] - 1) * w->d[i] + 1;       /* < 2^62 */
        if (eff > w->in[i] + 2 * (int64_t)WIN_MAX)
            return ox_fail(im, KILN_SHAPE_MISMATCH, "the window (kernel %d, dilation %d) spans %lld cells, more than input '%s' and any padding", w->k[i], w->d[i],
                           (long long)eff, x->name);
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t o = (w->in[i] + w->s[i] - 1) / w->s[i], total = (o - 1) * w->s[i] + eff - w->in[i];     /* (o - 1) s < in */
            if (total < 0) total = 0;
            if (total > INT32_MAX) return ox_fail(im, KILN_SHAPE_MISMATCH, "SAME padding of %lld cells for input '%s'", (long long)total, x->name);
            int small = (int)(total / 2), big = (int)(total - total / 2);
            w->pb[i] = ap[5] == 'U' ? small : big;
            w->pe[i] = ap[5] == 'U' ? big : small;
        } else if (!strcmp(ap, "VALID")) {
            w->pb[i] = w->pe[i] = 0;
        } else if (!*ap || !strcmp(ap, "NOTSET")) {
            w->pb[i] = (int)pads[i];
            w->pe[i] = (int)pads[i + w->nsp];
            if (w->pb[i] < 0 || w->pe[i] < 0) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'pads': negative padding");
        } else return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'auto_pad' = '%s' is not an ONNX value", ap);
        int64_t span = w->in[i] + w->pb[i] + w->pe[i] - eff;
        if (span < 0) return ox_fail(im, KILN_SHAPE_MISMATCH, "the window does not fit input '%s'", x->name);
        w->out[i] = span / w->s[i] + 1;
        if (ceil && span % w->s[i]) {
            if (!ceil_ok) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'ceil_mode' = 1 with a partial last window");
            w->out[i]++;
            w->pe[i] += (int)((w->out[i] - 1) * w->s[i] + eff - (w->in[i] + w->pb[i] + w->pe[i]));
        }
    }
    return KILN_OK;
}

/* x as an NHWC node (1-D: [N, 1, L, C]). */
static kiln_node *nhwc_in(ox_importer *im, ox_val *x) {
    int r = x->shape.rank, p[KILN_MAX_DIMS];
    ox_perm_nhwc(p, r);
    kiln_node *y = ox_node_as(im, x, p, false);
    if (y && r == 3) y = kiln_reshape(ox_graph(im), y, KILN_SHAPE(x->shape.dim[0], 1, x->shape.dim[2], x->shape.dim[1]));
    return y;
}

/* An NHWC result as the node's output of rank r (1-D: back to [N, L, C]). */
static kiln_status nhwc_out(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_node *y, int r) {
    int p[KILN_MAX_DIMS];
    ox_perm_nhwc(p, r);
    if (y && r == 3) {
        kiln_shape s = kiln_node_shape(y);
        y = kiln_reshape(ox_graph(im), y, KILN_SHAPE(s.dim[0], s.dim[2], s.dim[3]));
    }
    return ox_set(im, n, i, y, p);
}

/* Kiln's pads from the window (1-D: the H axis is unpadded). */
static void kiln_pads(const win *w, int *t, int *b, int *l, int *rr) {
    int h = w->nsp == 2 ? 0 : -1, x = w->nsp - 1;
    *t = h >= 0 ? w->pb[h] : 0;
    *b = h >= 0 ? w->pe[h] : 0;
    *l = w->pb[x];
    *rr = w->pe[x];
}

/* ---- Conv ---- */
static kiln_status op_conv(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *wv = ox_in(im, n, 1), *b = ox_in(im, n, 2);
    if (!x || !wv) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs X and W");
    int r = x->shape.rank;
    if (wv->shape.rank != r) return ox_fail(im, KILN_SHAPE_MISMATCH, "W '%s' has rank %d, X has %d", wv->name, wv->shape.rank, r);
    win w;
    if (window(im, n, x, &wv->shape.dim[2], false, &w)) return ox_status(im);
    int64_t groups, cin = x->shape.dim[1], m = wv->shape.dim[0], wc;
    if (!ox_attr_int_in(im, n, "group", 1, 1, INT32_MAX, &groups)) return ox_status(im);
    if (cin % groups || m % groups || __builtin_mul_overflow(wv->shape.dim[1], groups, &wc) || wc != cin)
        return ox_fail(im, KILN_SHAPE_MISMATCH, "group %lld does not fit X's %lld channels and W '%s' [%lld, %lld, ...]", (long long)groups,
                       (long long)cin, wv->name, (long long)m, (long long)wv->shape.dim[1]);
    kiln_graph *g = ox_graph(im);
    kiln_node *xn = nhwc_in(im, x);
    kiln_node *k;
    if (r == 4) k = ox_node_as(im, wv, (const int[]){ 2, 3, 1, 0 }, false);                       /* OIHW -> HWIO */
    else {
        k = ox_node_as(im, wv, (const int[]){ 2, 1, 0 }, false);                                  /* OIL -> LIO -> 1LIO */
        if (k) k = kiln_reshape(g, k, KILN_SHAPE(1, wv->shape.dim[2], wv->shape.dim[1], m));
    }
    if (!xn || !k) return ox_graph_fail(im);
    kiln_conv_params p = { .stride_h = w.nsp == 2 ? w.s[0] : 1, .stride_w = w.s[w.nsp - 1], .dilation_h = w.nsp == 2 ? w.d[0] : 1,
                           .dilation_w = w.d[w.nsp - 1], .padding = KILN_EXPLICIT, .groups = (int)groups };
    kiln_pads(&w, &p.pad_top, &p.pad_bottom, &p.pad_left, &p.pad_right);
    kiln_node *y = kiln_conv2d(g, xn, k, &p);
    if (b) {
        kiln_node *bn = ox_node(im, b);
        y = y && bn ? kiln_bias_add(g, y, bn) : NULL;
    }
    return nhwc_out(im, n, 0, y, r);
}

/* ---- ConvTranspose: Kiln's Conv2DBackpropInput, the gradient of a convolution by its input ---- */
static kiln_status op_conv_transpose(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *wv = ox_in(im, n, 1), *b = ox_in(im, n, 2);
    if (!x || !wv) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs X and W");
    if (ox_training(im)) return ox_fail(im, KILN_UNSUPPORTED, "training through ConvTranspose (Kiln's Conv2DBackpropInput has no gradient)");
    int r = x->shape.rank, nsp = r - 2;
    if ((r != 3 && r != 4) || wv->shape.rank != r)
        return ox_fail(im, KILN_UNSUPPORTED, "input '%s' has rank %d: Kiln runs 1-D and 2-D ConvTranspose", x->name, r);
    int64_t groups, c = x->shape.dim[1], m;
    if (!ox_attr_int_in(im, n, "group", 1, 1, INT32_MAX, &groups)) return ox_status(im);
    if (__builtin_mul_overflow(wv->shape.dim[1], groups, &m) || wv->shape.dim[0] != c || c % groups)
        return ox_fail(im, KILN_SHAPE_MISMATCH, "W '%s' does not fit X's %lld channels in %lld groups", wv->name, (long long)c, (long long)groups);
    int64_t st[2] = { 1, 1 }, dl[2] = { 1, 1 }, op[2] = { 0, 0 }, pads[4] = { 0 }, os[2], ks[2];
    int k;
    if (((k = ox_attr_ints_in(im, n, "strides", st, 2, 1, WIN_MAX)) != -1 && k != nsp) ||
        ((k = ox_attr_ints_in(im, n, "dilations", dl, 2, 1, WIN_MAX)) != -1 && k != nsp) ||
        ((k = ox_attr_ints_in(im, n, "output_padding", op, 2, 0, WIN_MAX)) != -1 && k != nsp) ||
        ((k = ox_attr_ints_in(im, n, "pads", pads, 4, 0, WIN_MAX)) != -1 && k != 2 * nsp) ||
        ((k = ox_attr_ints_in(im, n, "kernel_shape", ks, 2, 1, WIN_MAX)) != -1 && k != nsp))
        return ox_status(im) ? ox_status(im) : ox_fail(im, KILN_INVALID_ARGUMENT, "strides, dilations, output_padding, kernel_shape or pads has the wrong length");
    int n_os = ox_attr_ints_in(im, n, "output_shape", os, 2, 1, WIN_MAX);
    if (ox_status(im)) return ox_status(im);
    if (n_os >= 0 && n_os != nsp) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'output_shape' with the batch and channel sizes");
    char ap[32];
    ox_attr_str(n, "auto_pad", ap, sizeof ap);
    int64_t pb[2], pe[2], out[2];
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->shape.dim[2 + i], kk = wv->shape.dim[2 + i], eff, span;
        if (kk < 1 || kk > INT32_MAX || in > INT32_MAX) return ox_fail(im, KILN_UNSUPPORTED, "W '%s' or X '%s' is larger than Kiln's ConvTranspose takes", wv->name, x->name);
        eff = (kk - 1) * dl[i] + 1;                                 /* every factor < 2^31: no overflow */
        span = st[i] * (in - 1) + op[i] + eff;                      /* < 2^63 */
        if (k != -1 && ks[i] != kk) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'kernel_shape' does not match W");
        if (op[i] < 0 || op[i] >= st[i]) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'output_padding' %lld not in [0, stride)", (long long)op[i]);
        bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
        if (n_os >= 0 || same) {
            out[i] = n_os >= 0 ? os[i] : in * st[i];
            int64_t total = span - out[i];
            if (total > 2 * (int64_t)INT32_MAX) return ox_fail(im, KILN_UNSUPPORTED, "padding of %lld cells", (long long)total);
            if (total < 0) return ox_fail(im, KILN_UNSUPPORTED, "an output larger than the input covers (negative padding)");
            bool upper = !strcmp(ap, "SAME_UPPER");
            pb[i] = upper ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
        } else if (!*ap || !strcmp(ap, "NOTSET") || !strcmp(ap, "VALID")) {
            pb[i] = *ap == 'V' ? 0 : pads[i];
            pe[i] = *ap == 'V' ? 0 : pads[i + nsp];
            out[i] = span - pb[i] - pe[i];
            if (pb[i] < 0 || pe[i] < 0 || out[i] < 1) return ox_fail(im, KILN_INVALID_ARGUMENT, "pads give no output");
        } else return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'auto_pad' = '%s'", ap);
    }
    kiln_graph *g = ox_graph(im);
    kiln_node *xn = nhwc_in(im, x), *kn;
    if (r == 4) kn = ox_node_as(im, wv, (const int[]){ 2, 3, 1, 0 }, false);                     /* [C, M/g, kh, kw] -> [kh, kw, M/g, C] */
    else {
        kn = ox_node_as(im, wv, (const int[]){ 2, 1, 0 }, false);
        if (kn) kn = kiln_reshape(g, kn, KILN_SHAPE(1, wv->shape.dim[2], wv->shape.dim[1], c));
    }
    if (!xn || !kn) return ox_graph_fail(im);
    kiln_attrs at = { 0 };
    int h = nsp == 2 ? 0 : -1, w = nsp - 1;
    at.sh = h >= 0 ? (int)st[h] : 1; at.sw = (int)st[w];
    at.dh = h >= 0 ? (int)dl[h] : 1; at.dw = (int)dl[w];
    at.pt = h >= 0 ? (int)pb[h] : 0; at.pb = h >= 0 ? (int)pe[h] : 0; at.pl = (int)pb[w]; at.pr = (int)pe[w];
    at.groups = (int)groups;
    at.padding = KILN_EXPLICIT;
    at.shape = KILN_SHAPE(x->shape.dim[0], h >= 0 ? out[h] : 1, out[w], m);
    kiln_node *y = kiln_node_new(g, KILN_OP_CONV2D_BWD_INPUT, (kiln_node *[]){ kn, xn }, 2, &at);
    if (b) {
        kiln_node *bn = ox_node(im, b);
        y = y && bn ? kiln_bias_add(g, y, bn) : NULL;
    }
    return nhwc_out(im, n, 0, y, r);
}

/* ---- pooling ---- */
static bool is_same(const win *w) {      /* Kiln's SAME (TensorFlow's): extra padding at the end */
    for (int i = 0; i < w->nsp; i++) {
        int64_t o = (w->in[i] + w->s[i] - 1) / w->s[i], total = (o - 1) * w->s[i] + w->k[i] - w->in[i];
        if (total < 0) total = 0;
        if (w->pb[i] != total / 2 || w->pe[i] != total - total / 2 || w->out[i] != o) return false;
    }
    return true;
}
static bool no_pads(const win *w) {
    for (int i = 0; i < w->nsp; i++) if (w->pb[i] || w->pe[i]) return false;
    return true;
}

static kiln_status op_pool(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    bool max = !strcmp(n->op_type, "MaxPool");
    win w;
    if (window(im, n, x, NULL, max, &w)) return ox_status(im);
    for (int i = 0; i < w.nsp; i++)
        if (w.d[i] != 1) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'dilations' other than 1 (Kiln's pooling has no dilation)");
    bool include_pad = ox_attr_int(n, "count_include_pad", 0) != 0;
    kiln_graph *g = ox_graph(im);
    kiln_node *xn = nhwc_in(im, x);
    if (!xn) return ox_graph_fail(im);
    kiln_pool_params p = { .size_h = w.nsp == 2 ? w.k[0] : 1, .size_w = w.k[w.nsp - 1], .stride_h = w.nsp == 2 ? w.s[0] : 1,
                           .stride_w = w.s[w.nsp - 1], .padding = KILN_VALID };
    if (no_pads(&w)) p.padding = KILN_VALID;
    else if (is_same(&w) && (max || !include_pad)) p.padding = KILN_SAME;
    else if (max || include_pad) {        /* pad explicitly: -inf never wins a max; zeros count in the average */
        int64_t pads[8] = { 0 };
        int t, b, l, rr;
        kiln_pads(&w, &t, &b, &l, &rr);
        pads[2] = t; pads[3] = b; pads[4] = l; pads[5] = rr;
        xn = kiln_pad(g, xn, pads, max ? -INFINITY : 0.0);
    } else return ox_fail(im, KILN_UNSUPPORTED, "attribute 'pads' other than none or SAME_UPPER's with count_include_pad = 0 (Kiln "
                          "divides by the unpadded cells only for TensorFlow's SAME padding)");
    kiln_node *y = max ? kiln_max_pool2d(g, xn, &p) : kiln_avg_pool2d(g, xn, &p);
    return nhwc_out(im, n, 0, y, x->shape.rank);
}

/* GlobalAveragePool / GlobalMaxPool: over every axis after the channels, kept as 1s. */
static kiln_status op_global_pool(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank, p[KILN_MAX_DIMS];
    if (r < 3) return ox_fail(im, KILN_INVALID_ARGUMENT, "input '%s' needs rank >= 3 ([N, C, spatial...])", x->name);
    ox_perm_nhwc(p, r);
    kiln_node *xn = ox_node_as(im, x, p, false);
    if (!xn) return ox_graph_fail(im);
    kiln_graph *g = ox_graph(im);
    bool max = !strcmp(n->op_type, "GlobalMaxPool");
    kiln_node *y;
    if (!max && r == 4) {
        y = kiln_global_avg_pool2d(g, xn);
        y = kiln_reshape(g, y, KILN_SHAPE(x->shape.dim[0], 1, 1, x->shape.dim[1]));
    } else {
        int axes[KILN_MAX_DIMS];
        for (int i = 1; i < r - 1; i++) axes[i - 1] = i;
        y = max ? kiln_reduce_max(g, xn, axes, r - 2, true) : kiln_reduce_mean(g, xn, axes, r - 2, true);
    }
    return ox_set(im, n, 0, y, p);
}

/* ---- normalisation ---- */
static kiln_status op_batch_norm(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *sc = ox_in(im, n, 1), *bi = ox_in(im, n, 2), *mean = ox_in(im, n, 3), *var = ox_in(im, n, 4);
    if (!x || !sc || !bi || !mean || !var) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs X, scale, B, input_mean and input_var");
    if (ox_attr_int(n, "spatial", 1) != 1) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'spatial' = 0 (statistics per element)");
    if (ox_attr_int(n, "training_mode", 0) != 0)
        return ox_fail(im, KILN_UNSUPPORTED, "attribute 'training_mode' = 1 (batch statistics with the running statistics as outputs); Kiln "
                       "imports inference graphs and trains them with kiln_model_from_onnx");
    int r = x->shape.rank, p[KILN_MAX_DIMS];
    if (r < 2) return ox_fail(im, KILN_INVALID_ARGUMENT, "input '%s' needs rank >= 2", x->name);
    ox_perm_nhwc(p, r);
    kiln_node *xn = ox_node_as(im, x, p, false);
    kiln_node *gamma = ox_node(im, sc), *beta = ox_node(im, bi);
    kiln_node *mm = ox_node_as(im, mean, NULL, true), *mv = ox_node_as(im, var, NULL, true);
    if (!xn || !gamma || !beta || !mm || !mv) return ox_graph_fail(im);
    kiln_node *y = kiln_batch_norm(ox_graph(im), xn, gamma, beta, mm, mv, ox_attr_float(n, "momentum", 0.9),
                                   ox_attr_float(n, "epsilon", 1e-5), ox_training(im));
    return ox_set(im, n, 0, y, p);
}

/* (x - mean) / sqrt(var + eps) over axes (of the node), keepdims; *mean_out and *inv_out when asked. */
static kiln_node *normalize(ox_importer *im, kiln_node *x, const int *axes, int na, double eps, kiln_node **mean_out, kiln_node **inv_out) {
    kiln_graph *g = ox_graph(im);
    kiln_dtype dt = kiln_node_dtype(x);
    kiln_node *mean = kiln_reduce_mean(g, x, axes, na, true);
    kiln_node *d = kiln_sub(g, x, mean);
    kiln_node *var = kiln_reduce_mean(g, kiln_square(g, d), axes, na, true);
    kiln_node *inv = kiln_rsqrt(g, kiln_add(g, var, ox_scalar(im, dt, eps)));
    if (mean_out) *mean_out = mean;
    if (inv_out) *inv_out = inv;
    return kiln_mul(g, d, inv);
}

static kiln_status op_instance_norm(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *sc = ox_in(im, n, 1), *bi = ox_in(im, n, 2);
    if (!x || !sc || !bi) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs input, scale and B");
    int r = x->shape.rank, p[KILN_MAX_DIMS], axes[KILN_MAX_DIMS];
    if (r < 3) return ox_fail(im, KILN_INVALID_ARGUMENT, "input '%s' needs rank >= 3", x->name);
    ox_perm_nhwc(p, r);
    kiln_node *xn = ox_node_as(im, x, p, false), *gs = ox_node(im, sc), *bs = ox_node(im, bi);
    if (!xn || !gs || !bs) return ox_graph_fail(im);
    for (int i = 1; i < r - 1; i++) axes[i - 1] = i;
    kiln_graph *g = ox_graph(im);
    kiln_node *y = normalize(im, xn, axes, r - 2, ox_attr_float(n, "epsilon", 1e-5), NULL, NULL);
    return ox_set(im, n, 0, kiln_bias_add(g, kiln_mul(g, y, gs), bs), p);
}

static kiln_status op_layer_norm(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *sc = ox_in(im, n, 1), *bi = ox_in(im, n, 2);
    if (!x || !sc) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs X and Scale");
    if (ox_attr_int(n, "stash_type", 1) != 1) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'stash_type' other than 1 (float)");
    int r = x->shape.rank, axes[KILN_MAX_DIMS];
    int a = ox_axis(im, ox_attr_int(n, "axis", -1), r, "attribute 'axis'");
    if (a < 0) return ox_status(im);
    for (int i = a; i < r; i++) axes[i - a] = i;
    kiln_graph *g = ox_graph(im);
    kiln_node *xn = ox_node(im, x), *gs = ox_node(im, sc), *bs = bi ? ox_node(im, bi) : NULL;
    if (!xn || !gs || (bi && !bs)) return ox_graph_fail(im);
    kiln_node *mean, *inv;
    kiln_node *y = kiln_mul(g, normalize(im, xn, axes, r - a, ox_attr_float(n, "epsilon", 1e-5), &mean, &inv), gs);
    if (bs) y = kiln_add(g, y, bs);
    kiln_status st = ox_set(im, n, 0, y, NULL);
    if (!st && ox_has_out(n, 1)) st = ox_set(im, n, 1, mean, NULL);
    if (!st && ox_has_out(n, 2)) st = ox_set(im, n, 2, inv, NULL);
    return st;
}

/* ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9). */
static kiln_status op_mvn(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int64_t ax[KILN_MAX_DIMS] = { 0, 2, 3 };
    int na = ox_attr_ints_in(im, n, "axes", ax, KILN_MAX_DIMS, INT64_MIN, INT64_MAX), axes[KILN_MAX_DIMS];
    if (ox_status(im)) return ox_status(im);
    if (na == -1) na = 3;
    int r = x->shape.rank;
    for (int i = 0; i < na; i++) if ((axes[i] = ox_axis(im, ax[i], r, "axes")) < 0) return ox_status(im);
    kiln_graph *g = ox_graph(im);
    kiln_node *xn = ox_node(im, x);
    if (!xn) return ox_graph_fail(im);
    kiln_node *m = kiln_reduce_mean(g, xn, axes, na, true);
    kiln_node *var = kiln_sub(g, kiln_reduce_mean(g, kiln_square(g, xn), axes, na, true), kiln_square(g, m));
    kiln_node *den = kiln_add(g, kiln_sqrt(g, var), ox_scalar(im, x->dtype, 1e-9));
    return ox_set(im, n, 0, kiln_div(g, kiln_sub(g, xn, m), den), NULL);
}

/* ---- Gemm, MatMul ---- */
static kiln_status op_gemm(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *a = ox_in(im, n, 0), *b = ox_in(im, n, 1), *c = ox_in(im, n, 2);
    if (!a || !b) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs A and B");
    if (a->shape.rank != 2 || b->shape.rank != 2) return ox_fail(im, KILN_SHAPE_MISMATCH, "A and B must be matrices");
    double alpha = ox_attr_float(n, "alpha", 1.0), beta = ox_attr_float(n, "beta", 1.0);
    kiln_graph *g = ox_graph(im);
    kiln_node *an = ox_node(im, a), *bn = ox_node(im, b);
    if (!an || !bn) return ox_graph_fail(im);
    kiln_node *y = kiln_matmul(g, an, bn, ox_attr_int(n, "transA", 0) != 0, ox_attr_int(n, "transB", 0) != 0);
    if (y && alpha != 1.0) y = kiln_mul(g, y, ox_scalar(im, a->dtype, alpha));
    if (y && c && beta != 0.0) {
        kiln_node *cn = ox_node(im, c);
        if (!cn) return ox_graph_fail(im);
        if (beta != 1.0) cn = kiln_mul(g, cn, ox_scalar(im, c->dtype, beta));
        kiln_shape ys = kiln_node_shape(y);
        y = c->shape.rank == 1 && c->shape.dim[0] == ys.dim[1] && c->shape.dim[0] > 1 ? kiln_bias_add(g, y, cn) : kiln_add(g, y, cn);
    }
    return ox_set(im, n, 0, y, NULL);
}

static kiln_status op_matmul(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *a = ox_in(im, n, 0), *b = ox_in(im, n, 1);
    if (!a || !b) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs A and B");
    kiln_graph *g = ox_graph(im);
    kiln_node *an = ox_node(im, a), *bn = ox_node(im, b);
    if (!an || !bn) return ox_graph_fail(im);
    kiln_shape as = a->shape, bs = b->shape;
    bool sq_a = as.rank == 1, sq_b = bs.rank == 1;
    if (sq_a) { as = KILN_SHAPE(1, as.dim[0]); an = kiln_reshape(g, an, as); }
    if (sq_b) { bs = KILN_SHAPE(bs.dim[0], 1); bn = kiln_reshape(g, bn, bs); }
    int r = as.rank > bs.rank ? as.rank : bs.rank;
    kiln_shape *ss[2] = { &as, &bs };
    kiln_node **ns[2] = { &an, &bn };
    for (int k = 0; k < 2; k++)
        if (ss[k]->rank < r) {       /* leading 1s: batch dims broadcast */
            kiln_shape s = { .rank = r };
            int lead = r - ss[k]->rank;
            for (int i = 0; i < r; i++) s.dim[i] = i < lead ? 1 : ss[k]->dim[i - lead];
            *ns[k] = kiln_reshape(g, *ns[k], s);
            *ss[k] = s;
        }
    kiln_node *y = r == 2 ? kiln_matmul(g, an, bn, false, false) : kiln_batch_matmul(g, an, bn, false, false);
    if (y && (sq_a || sq_b)) {
        kiln_shape s = kiln_node_shape(y), o = { 0 };
        for (int i = 0; i < s.rank; i++) {
            if ((sq_a && i == s.rank - 2) || (sq_b && i == s.rank - 1)) continue;
            o.dim[o.rank++] = s.dim[i];
        }
        y = kiln_reshape(g, y, o);
    }
    return ox_set(im, n, 0, y, NULL);
}

/* ---- Softmax, LogSoftmax ---- */
static kiln_status op_softmax(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank;
    bool log = !strcmp(n->op_type, "LogSoftmax");
    kiln_graph *g = ox_graph(im);
    if (ox_opset(im) >= 13) {
        int a = ox_axis(im, ox_attr_int(n, "axis", -1), r, "attribute 'axis'"), p[KILN_MAX_DIMS];
        if (a < 0) return ox_status(im);
        kiln_node *xn = ox_node_any(im, x, p);
        if (!xn) return ox_graph_fail(im);
        int ax = ox_perm_find(p, r, a);
        return ox_set(im, n, 0, log ? kiln_log_softmax(g, xn, ax) : kiln_softmax(g, xn, ax), p);
    }
    /* before opset 13: over the flattened [prod(dims < axis), prod(dims >= axis)] */
    int a = ox_axis(im, ox_attr_int(n, "axis", 1), r, "attribute 'axis'");
    if (a < 0) return ox_status(im);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < r; i++) *(i < a ? &outer : &inner) *= x->shape.dim[i];
    kiln_node *xn = ox_node(im, x);
    if (!xn) return ox_graph_fail(im);
    kiln_node *f = kiln_reshape(g, xn, KILN_SHAPE(outer, inner));
    f = log ? kiln_log_softmax(g, f, -1) : kiln_softmax(g, f, -1);
    return ox_set(im, n, 0, kiln_reshape(g, f, x->shape), NULL);
}

/* ---- Dropout ---- */
static kiln_status op_dropout(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *rv = ox_in(im, n, 1), *tv = ox_in(im, n, 2);
    double ratio = ox_attr_float(n, "ratio", 0.5);
    bool training = ox_training(im);
    if (ox_opset(im) < 7 && ox_attr_int(n, "is_test", 0)) training = false;
    if (rv) {
        const kiln_tensor *t = ox_static(im, rv);
        if (!t) return ox_need_static(im, rv, "ratio");
        ratio = kiln_tensor_get(t, 0);
    }
    if (tv) {
        const kiln_tensor *t = ox_static(im, tv);
        if (!t) return ox_need_static(im, tv, "training_mode");
        if (kiln_tensor_get(t, 0) != 0 && ratio > 0 && !ox_training(im))
            return ox_fail(im, KILN_UNSUPPORTED, "training_mode = true: a random mask, which no other framework reproduces (Kiln drops "
                           "only when a model trains)");
        training = training || kiln_tensor_get(t, 0) != 0;
    }
    if (!(ratio >= 0 && ratio < 1)) return ox_fail(im, KILN_INVALID_ARGUMENT, "ratio %g must be in [0, 1)", ratio);
    if (ox_has_out(n, 1)) {
        if (training && ratio > 0) return ox_fail(im, KILN_UNSUPPORTED, "output 'mask' while dropping (Kiln's Dropout does not return its mask)");
        kiln_tensor *mask = ox_host_new(im, KILN_BOOL, x->shape, false);
        if (mask) memset(mask->data, 1, kiln_tensor_nbytes(mask));
        kiln_status st = ox_set_host(im, n, 1, mask);
        if (st) return st;
    }
    if (!training || ratio == 0) return ox_alias(im, n, 0, x);
    int p[KILN_MAX_DIMS];
    kiln_node *xn = ox_node_any(im, x, p);
    return ox_set(im, n, 0, xn ? kiln_dropout(ox_graph(im), xn, ratio, ox_seed(im), true) : NULL, p);
}

const ox_op ox_ops_nn[] = {
    { "Conv", op_conv, "auto_pad,dilations,group,kernel_shape,pads,strides", OX_FLOAT },
    { "ConvTranspose", op_conv_transpose, "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides", OX_FLOAT },
    { "MaxPool", op_pool, "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides", OX_FLOAT },
    { "AveragePool", op_pool, "auto_pad,ceil_mode,count_include_pad,kernel_shape,pads,strides", OX_FLOAT },
    { "GlobalAveragePool", op_global_pool, "", OX_FLOAT },
    { "GlobalMaxPool", op_global_pool, "", OX_FLOAT },
    { "BatchNormalization", op_batch_norm, "epsilon,momentum,spatial,training_mode,is_test,consumed_inputs", OX_FLOAT },
    { "InstanceNormalization", op_instance_norm, "epsilon", OX_FLOAT },
    { "LayerNormalization", op_layer_norm, "axis,epsilon,stash_type", OX_FLOAT },
    { "MeanVarianceNormalization", op_mvn, "axes", OX_FLOAT },
    { "Gemm", op_gemm, "alpha,beta,transA,transB", OX_FLOAT },
    { "MatMul", op_matmul, "", OX_FLOAT },
    { "Softmax", op_softmax, "axis", OX_FLOAT },
    { "LogSoftmax", op_softmax, "axis", OX_FLOAT },
    { "Dropout", op_dropout, "ratio,seed,is_test", OX_FLOAT },
    { NULL },
};
