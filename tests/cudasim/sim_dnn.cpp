/* cuDNN's legacy convolution API on the CPU, from its documented semantics: NCHW/NHWC tensors,
 * KCRS (NCHW) / KRSC (NHWC) filters, symmetric padding, stride, dilation, groups, cross-
 * correlation or convolution (flipped filter), y = alpha * op + beta * y (beta == 0: y not read).
 * Descriptors are validated like cuDNN (CUDNN_STATUS_BAD_PARAM when shapes disagree). Algorithm
 * queries offer, fastest first, an FFT algorithm (stride 1, no dilation, one group) and a GEMM one,
 * both deterministic and workspace-free. The FFT one computes the same values but, like a real
 * transform, turns a whole image's output NaN (a whole filter gradient, for backward-filter) when
 * any of its inputs is NaN or Inf. Math in double (OpenBLAS). */
#include <cblas.h>
#include <cmath>
#include <vector>
#include "sim_dnn.h"

struct cudnnFilterStruct { bool set = false; cudnnTensorFormat_t f; cudnnDataType_t t; int k, c, h, w; };
struct cudnnConvolutionStruct {
    bool set = false;
    int ph, pw, u, v, dh, dw, groups = 1;
    cudnnConvolutionMode_t mode;
    cudnnDataType_t comp;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

using namespace cusim;

namespace {
using cusim::numel;   /* the tensor overload, beside the filter one below */
size_t fidx(const cudnnFilterStruct &d, int k, int c, int r, int s) {
    return d.f == CUDNN_TENSOR_NCHW ? (((size_t)k * d.c + c) * d.h + r) * d.w + s : (((size_t)k * d.h + r) * d.w + s) * d.c + c;
}

int out_dim(int in, int pad, int filt, int dil, int stride) { return 1 + (in + 2 * pad - ((filt - 1) * dil + 1)) / stride; }

/* The one consistency check every entry point shares: x, w, conv and y describe one problem. */
cudnnStatus_t check(const char *fn, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t cd,
                    cudnnTensorDescriptor_t y) {
    const char *why = nullptr;
    if (!x || !w || !cd || !y || !x->set || !w->set || !cd->set || !y->set) why = "a descriptor is NULL or not set";
    else if (x->t != w->t || x->t != y->t) why = "data types differ";
    else if ((x->t == CUDNN_DATA_DOUBLE) != (cd->comp == CUDNN_DATA_DOUBLE)) why = "compute type does not fit the data type";
    else if (x->c != w->c * cd->groups || w->k % cd->groups) why = "channels do not match the filter and group count";
    else if (y->n != x->n || y->c != w->k) why = "output batch/channels do not match";
    else if (y->h != out_dim(x->h, cd->ph, w->h, cd->dh, cd->u) || y->w != out_dim(x->w, cd->pw, w->w, cd->dw, cd->v))
        why = "output size does not match the convolution";
    if (!why) return CUDNN_STATUS_SUCCESS;
    fail("%s: CUDNN_STATUS_BAD_PARAM: %s", fn, why);
    return CUDNN_STATUS_BAD_PARAM;
}

size_t numel(const cudnnFilterStruct *d) { return (size_t)d->k * d->c * d->h * d->w; }

enum class dir { fwd, bwd_data, bwd_filter };

/* The convolution as GEMMs (double, OpenBLAS), per image and group: the im2col matrix col[p, q]
 * holds x at output position p = (oh, ow) under filter tap q = (fr, fs, c), where (fr, fs) is the
 * filter element applied there (flipped in CUDNN_CONVOLUTION mode) and positions in the padding
 * are 0; wm[k, q] is the filter. fwd: y = col wm^T; data: dx += scatter(dy wm); filter: dw += dy^T col. */
struct conv_problem {
    cudnnTensorStruct X, Y;
    cudnnFilterStruct W;
    cudnnConvolutionStruct C;
    /* x offset of (p, q) for image n, group g, or -1 in the padding */
    long long xoff(int n, int g, int p, int q) const {
        int oh = p / Y.w, ow = p % Y.w, c = q % W.c, t = q / W.c, fr = t / W.w, fs = t % W.w;
        int r = C.mode == CUDNN_CONVOLUTION ? W.h - 1 - fr : fr, s = C.mode == CUDNN_CONVOLUTION ? W.w - 1 - fs : fs;
        int ih = oh * C.u - C.ph + r * C.dh, iw = ow * C.v - C.pw + s * C.dw;
        if (ih < 0 || ih >= X.h || iw < 0 || iw >= X.w) return -1;
        return (long long)tidx(X, n, g * W.c + c, ih, iw);
    }
};

void compute(dir d, const conv_problem &pr, elem e, const void *x, const void *w, const void *y, std::vector<double> &acc) {
    const cudnnTensorStruct &X = pr.X, &Y = pr.Y;
    const cudnnFilterStruct &W = pr.W;
    int G = pr.C.groups, kg = W.k / G, P = Y.h * Y.w, Q = W.h * W.w * W.c;
    std::vector<double> wm((size_t)W.k * Q), col((size_t)P * Q), ym((size_t)P * kg), dw;
    for (int k = 0; k < W.k; k++)
        for (int q = 0; q < Q; q++) {
            int c = q % W.c, t = q / W.c;
            wm[(size_t)k * Q + q] = d == dir::bwd_filter ? 0.0 : load(w, e, fidx(W, k, c, t / W.w, t % W.w));
        }
    if (d == dir::bwd_filter) dw.assign((size_t)W.k * Q, 0.0);
    for (int n = 0; n < X.n; n++)
        for (int g = 0; g < G; g++) {
            double *wg = &wm[(size_t)g * kg * Q];
            if (d != dir::bwd_data)
                for (int p = 0; p < P; p++)
                    for (int q = 0; q < Q; q++) { long long o = pr.xoff(n, g, p, q); col[(size_t)p * Q + q] = o < 0 ? 0.0 : load(x, e, (size_t)o); }
            if (d != dir::fwd)
                for (int p = 0; p < P; p++)
                    for (int k = 0; k < kg; k++) ym[(size_t)p * kg + k] = load(y, e, tidx(Y, n, g * kg + k, p / Y.w, p % Y.w));
            if (d == dir::fwd) {
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, kg, Q, 1.0, col.data(), Q, wg, Q, 0.0, ym.data(), kg);
                for (int p = 0; p < P; p++)
                    for (int k = 0; k < kg; k++) acc[tidx(Y, n, g * kg + k, p / Y.w, p % Y.w)] = ym[(size_t)p * kg + k];
            } else if (d == dir::bwd_data) {
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, kg, 1.0, ym.data(), kg, wg, Q, 0.0, col.data(), Q);
                for (int p = 0; p < P; p++)
                    for (int q = 0; q < Q; q++) { long long o = pr.xoff(n, g, p, q); if (o >= 0) acc[(size_t)o] += col[(size_t)p * Q + q]; }
            } else {
                cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kg, Q, P, 1.0, ym.data(), kg, col.data(), Q, 1.0,
                            &dw[(size_t)g * kg * Q], Q);
            }
        }
    if (d == dir::bwd_filter)
        for (int k = 0; k < W.k; k++)
            for (int q = 0; q < Q; q++) { int c = q % W.c, t = q / W.c; acc[fidx(W, k, c, t / W.w, t % W.w)] = dw[(size_t)k * Q + q]; }
}

/* What a transform algorithm does with a non-finite input: image n's outputs (all outputs for the
 * filter gradient, a sum over images) become NaN when any input of image n is NaN or Inf. */
void spread_nonfinite(dir d, const conv_problem &pr, elem e, const void *x, const void *w, const void *y, std::vector<double> &acc) {
    const cudnnTensorStruct &X = pr.X, &Y = pr.Y;
    size_t wn = (size_t)pr.W.k * pr.W.c * pr.W.h * pr.W.w, xi = numel(&X) / X.n, yi = numel(&Y) / Y.n;
    bool w_bad = false;
    if (d != dir::bwd_filter)
        for (size_t i = 0; i < wn && !w_bad; i++) w_bad = !std::isfinite(load(w, e, i));
    for (int n = 0; n < X.n; n++) {
        bool bad = w_bad;   /* NCHW or NHWC: image n is one contiguous block either way */
        if (d != dir::bwd_data)
            for (size_t i = 0; i < xi && !bad; i++) bad = !std::isfinite(load(x, e, n * xi + i));
        if (d != dir::fwd)
            for (size_t i = 0; i < yi && !bad; i++) bad = !std::isfinite(load(y, e, n * yi + i));
        if (!bad) continue;
        if (d == dir::bwd_filter) { for (double &v : acc) v = NAN; return; }
        size_t per = d == dir::fwd ? yi : xi;
        for (size_t i = 0; i < per; i++) acc[n * per + i] = NAN;
    }
}

bool fft_ok(const cudnnConvolutionStruct *cd) { return cd->u == 1 && cd->v == 1 && cd->dh == 1 && cd->dw == 1 && cd->groups == 1; }

cudnnStatus_t run(const char *fn, dir d, bool fft, cudnnHandle_t h, const void *alpha, const void *beta, cudnnTensorDescriptor_t xd,
                  const void *x, cudnnFilterDescriptor_t wd, const void *w, cudnnConvolutionDescriptor_t cd,
                  cudnnTensorDescriptor_t yd, const void *y, void *out) {
    if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
    cudnnStatus_t st = check(fn, xd, wd, cd, yd);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM;
    if (fft && !fft_ok(cd)) { fail("%s: the FFT algorithm does not support this convolution", fn); return CUDNN_STATUS_NOT_SUPPORTED; }
    if (!resident(fn, x, numel(xd), xd->t) || !resident(fn, w, numel(wd), wd->t) || !resident(fn, y, numel(yd), yd->t))
        return CUDNN_STATUS_EXECUTION_FAILED;
    bool dbl = xd->t == CUDNN_DATA_DOUBLE;   /* alpha/beta: double for double data, else float */
    double al = dbl ? *(const double *)alpha : *(const float *)alpha, be = dbl ? *(const double *)beta : *(const float *)beta;
    conv_problem pr{ *xd, *yd, *wd, *cd };
    elem e = elem_t(xd->t);
    if (!launchable("cuDNN", h->stream)) return CUDNN_STATUS_EXECUTION_FAILED;
    enqueue(h->stream, [=] {
        size_t nout = d == dir::fwd ? numel(&pr.Y) : d == dir::bwd_data ? numel(&pr.X) : numel(&pr.W);
        std::vector<double> acc(nout, 0.0);
        compute(d, pr, e, x, w, y, acc);
        if (fft) spread_nonfinite(d, pr, e, x, w, y, acc);
        for (size_t i = 0; i < nout; i++) store(out, e, i, al * acc[i] + (be == 0.0 ? 0.0 : be * load(out, e, i)));
    });
    return CUDNN_STATUS_SUCCESS;
}

/* One deterministic, workspace-free algorithm. cudnnFind* runs the convolutions (and
 * synchronises): under stream capture that breaks the capture, as on a GPU. */
template <typename Perf, typename Algo>
cudnnStatus_t offer(const char *fn, bool find, cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                    cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t y, int requested, int *returned, Perf *perf,
                    Algo fft, Algo algo) {
    if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
    if (!returned || !perf || requested < 1) return CUDNN_STATUS_BAD_PARAM;
    cudnnStatus_t st = check(fn, x, w, cd, y);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    CUstream_st *s = stream_of(h->stream);
    if (find && s && s->capturing) {
        fail("%s during stream capture", fn);
        s->invalidated = true;
        return CUDNN_STATUS_EXECUTION_FAILED;
    }
    Algo menu[2] = { fft, algo };
    int k = 0;
    for (int i = fft_ok(cd) ? 0 : 1; i < 2 && k < requested; i++, k++) {
        perf[k] = Perf{};
        perf[k].algo = menu[i];
        perf[k].status = CUDNN_STATUS_SUCCESS;
        perf[k].memory = 0;
        perf[k].determinism = CUDNN_DETERMINISTIC;
        perf[k].mathType = cd->math;
    }
    *returned = k;
    return CUDNN_STATUS_SUCCESS;
}
}  // namespace

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }
const char *cudnnGetErrorString(cudnnStatus_t s) {
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_INTERNAL_ERROR";
    }
}
cudnnStatus_t cudnnCreate(cudnnHandle_t *h) { *h = new cudnnContext(); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) { delete h; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
    if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
    if (!stream_of(s)) return CUDNN_STATUS_BAD_PARAM;
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) { *d = new cudnnTensorStruct(); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { delete d; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f, cudnnDataType_t t, int n, int c, int h, int w) {
    elem e = elem::f32;
    if (!d || !fmt_ok(f) || !elem_of(t, &e) || n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
    *d = cudnnTensorStruct{ true, f, t, n, c, h, w };
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) { *d = new cudnnFilterStruct(); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { delete d; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t f, int k, int c, int h, int w) {
    elem e = elem::f32;
    if (!d || !fmt_ok(f) || !elem_of(t, &e) || k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
    *d = cudnnFilterStruct{ true, f, t, k, c, h, w };
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) { *d = new cudnnConvolutionStruct(); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { delete d; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int u, int v, int dh, int dw,
                                              cudnnConvolutionMode_t mode, cudnnDataType_t comp) {
    elem e = elem::f32;
    if (!d || ph < 0 || pw < 0 || u <= 0 || v <= 0 || dh <= 0 || dw <= 0 || !elem_of(comp, &e) ||
        (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION))
        return CUDNN_STATUS_BAD_PARAM;
    d->set = true;
    d->ph = ph; d->pw = pw; d->u = u; d->v = v; d->dh = dh; d->dw = dw; d->mode = mode; d->comp = comp;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
    if (!d || groups < 1) return CUDNN_STATUS_BAD_PARAM;
    d->groups = groups;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m) {
    if (!d || m < CUDNN_DEFAULT_MATH || m > CUDNN_FMA_MATH) return CUDNN_STATUS_BAD_PARAM;
    d->math = m;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t x,
                                                    cudnnFilterDescriptor_t w, int *n, int *c, int *h, int *wd) {
    if (!cd || !x || !w || !cd->set || !x->set || !w->set || x->c != w->c * cd->groups) return CUDNN_STATUS_BAD_PARAM;
    *n = x->n;
    *c = w->k;
    *h = out_dim(x->h, cd->ph, w->h, cd->dh, cd->u);
    *wd = out_dim(x->w, cd->pw, w->w, cd->dw, cd->v);
    return *h > 0 && *wd > 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

#define CUSIM_QUERY(name, find, perf_t, fft, algo, a1t, a1, a2t, a2, a4t, a4, X, W, Y) \
    cudnnStatus_t name(cudnnHandle_t h, a1t a1, a2t a2, cudnnConvolutionDescriptor_t cd, a4t a4, int req, int *ret, perf_t *p) { \
        return offer(#name, find, h, X, W, cd, Y, req, ret, p, fft, algo); \
    }
CUSIM_QUERY(cudnnFindConvolutionForwardAlgorithm, true, cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
            cudnnTensorDescriptor_t, x, cudnnFilterDescriptor_t, w, cudnnTensorDescriptor_t, y, x, w, y)
CUSIM_QUERY(cudnnGetConvolutionForwardAlgorithm_v7, false, cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
            cudnnTensorDescriptor_t, x, cudnnFilterDescriptor_t, w, cudnnTensorDescriptor_t, y, x, w, y)
CUSIM_QUERY(cudnnFindConvolutionBackwardDataAlgorithm, true, cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
            cudnnFilterDescriptor_t, w, cudnnTensorDescriptor_t, dy, cudnnTensorDescriptor_t, dx, dx, w, dy)
CUSIM_QUERY(cudnnGetConvolutionBackwardDataAlgorithm_v7, false, cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
            cudnnFilterDescriptor_t, w, cudnnTensorDescriptor_t, dy, cudnnTensorDescriptor_t, dx, dx, w, dy)
CUSIM_QUERY(cudnnFindConvolutionBackwardFilterAlgorithm, true, cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
            cudnnTensorDescriptor_t, x, cudnnTensorDescriptor_t, dy, cudnnFilterDescriptor_t, dw, x, dw, dy)
CUSIM_QUERY(cudnnGetConvolutionBackwardFilterAlgorithm_v7, false, cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
            cudnnTensorDescriptor_t, x, cudnnTensorDescriptor_t, dy, cudnnFilterDescriptor_t, dw, x, dw, dy)
#undef CUSIM_QUERY

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t xd, const void *x,
                                      cudnnFilterDescriptor_t wd, const void *w, cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t algo, void *, size_t, const void *beta, cudnnTensorDescriptor_t yd, void *y) {
    return run("cudnnConvolutionForward", dir::fwd, algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT, h, alpha, beta, xd, x, wd, w, cd, yd, y, y);
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, cudnnFilterDescriptor_t wd, const void *w,
                                           cudnnTensorDescriptor_t dyd, const void *dy, cudnnConvolutionDescriptor_t cd,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *, size_t, const void *beta,
                                           cudnnTensorDescriptor_t dxd, void *dx) {
    return run("cudnnConvolutionBackwardData", dir::bwd_data, algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, h, alpha, beta, dxd, dx, wd, w, cd, dyd, dy, dx);
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t xd, const void *x,
                                             cudnnTensorDescriptor_t dyd, const void *dy, cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *, size_t, const void *beta,
                                             cudnnFilterDescriptor_t dwd, void *dw) {
    return run("cudnnConvolutionBackwardFilter", dir::bwd_filter, algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, h, alpha, beta, xd, x, dwd, dw, cd, dyd, dy, dw);
}
