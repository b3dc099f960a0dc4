/* cuDNN's legacy pooling and batch-norm API on the CPU, from its documented semantics (cudnn_ops.h):
 * - pooling: out = 1 + (in + 2*pad - window) / stride; padded cells never win a max and are not
 *   counted by AVERAGE_COUNT_EXCLUDE_PADDING; PROPAGATE_NAN: a window holding a NaN has max NaN.
 *   Backward is implemented for the average modes only (Kiln runs its own MaxPoolGrad): the max
 *   modes answer CUDNN_STATUS_NOT_SUPPORTED here, so a call would show up in the tests.
 * - batch norm, SPATIAL: statistics per channel over N*H*W; scale/bias/mean/variance described by
 *   cudnnDeriveBNTensorDescriptor (1xCx1x1, float for float/half/bf16 data); training updates
 *   running = (1 - factor) * running + factor * batch, with the unbiased batch variance for the
 *   running variance; saves mean and 1/sqrt(var + eps) when asked. Backward gives dx, dscale and
 *   dbias, each blended as alpha * result + beta * old.
 * Descriptors and operands are validated (BAD_PARAM, operands inside device allocations); work runs
 * on the handle's stream. Math in double. */
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "sim_dnn.h"

struct cudnnPoolingStruct { bool set = false; cudnnPoolingMode_t mode; cudnnNanPropagation_t nan; int wh, ww, ph, pw, sh, sw; };

using namespace cusim;

namespace {
int pool_out(int in, int pad, int win, int stride) { return 1 + (in + 2 * pad - win) / stride; }

bool is_max(cudnnPoolingMode_t m) { return m == CUDNN_POOLING_MAX || m == CUDNN_POOLING_MAX_DETERMINISTIC; }

cudnnStatus_t bad(const char *fn, const char *why) {
    fail("%s: CUDNN_STATUS_BAD_PARAM: %s", fn, why);
    return CUDNN_STATUS_BAD_PARAM;
}

bool ready(cudnnTensorDescriptor_t d) { return d && d->set; }
bool same(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b) {
    return a->f == b->f && a->t == b->t && a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w;
}

cudnnStatus_t pool_check(const char *fn, cudnnPoolingDescriptor_t pd, cudnnTensorDescriptor_t xd, cudnnTensorDescriptor_t yd) {
    if (!pd || !pd->set || !ready(xd) || !ready(yd)) return bad(fn, "a descriptor is NULL or not set");
    if (xd->t != yd->t || xd->t == CUDNN_DATA_DOUBLE) return bad(fn, "x and y data types differ or are double");
    if (yd->n != xd->n || yd->c != xd->c || yd->h != pool_out(xd->h, pd->ph, pd->wh, pd->sh) ||
        yd->w != pool_out(xd->w, pd->pw, pd->ww, pd->sw))
        return bad(fn, "y's size does not match the pooling of x");
    return CUDNN_STATUS_SUCCESS;
}

double scalar(const void *p) { return *(const float *)p; }   /* alpha/beta: float for non-double data */

/* CUSIM_DNN_REFUSE=<part of a function name>: those calls answer NOT_SUPPORTED, as a cuDNN
 * lacking a layout would, so Kiln's fallback to its own kernels can be tested. */
bool refused(const char *fn) {
    const char *v = getenv("CUSIM_DNN_REFUSE");
    return v && *v && strstr(fn, v);
}

/* Window of output (oh, ow) clipped to x: rows [h0, h1), cols [w0, w1). */
void window(const cudnnPoolingStruct &p, const cudnnTensorStruct &X, int oh, int ow, int *h0, int *h1, int *w0, int *w1) {
    int hs = oh * p.sh - p.ph, ws = ow * p.sw - p.pw;
    *h0 = hs < 0 ? 0 : hs;
    *h1 = hs + p.wh > X.h ? X.h : hs + p.wh;
    *w0 = ws < 0 ? 0 : ws;
    *w1 = ws + p.ww > X.w ? X.w : ws + p.ww;
}

double avg_count(const cudnnPoolingStruct &p, int h0, int h1, int w0, int w1) {
    return p.mode == CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING ? (double)(h1 - h0) * (w1 - w0) : (double)p.wh * p.ww;
}

cudnnStatus_t bn_check(const char *fn, cudnnBatchNormMode_t mode, cudnnTensorDescriptor_t xd, cudnnTensorDescriptor_t yd,
                       cudnnTensorDescriptor_t bnd, double eps) {
    if (!ready(xd) || !ready(yd) || !ready(bnd)) return bad(fn, "a descriptor is NULL or not set");
    if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) return bad(fn, "the simulator has SPATIAL modes only");
    if (!same(xd, yd)) return bad(fn, "x and y (dy, dx) descriptors differ");
    cudnnDataType_t pt = xd->t == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    if (bnd->n != 1 || bnd->c != xd->c || bnd->h != 1 || bnd->w != 1 || bnd->t != pt)
        return bad(fn, "the scale/bias/mean/var descriptor is not the derived 1xCx1x1 one");
    if (!(eps >= CUDNN_BN_MIN_EPSILON)) return bad(fn, "epsilon below CUDNN_BN_MIN_EPSILON");
    return CUDNN_STATUS_SUCCESS;
}

bool all_resident(const char *fn, std::initializer_list<std::pair<const void *, size_t>> ops, cudnnDataType_t t) {
    for (auto &o : ops)
        if (o.first && !resident(fn, o.first, o.second, t)) return false;
    return true;
}

/* Per-channel mean and biased variance of x over N*H*W. */
void channel_stats(const cudnnTensorStruct &X, const void *x, elem e, std::vector<double> &mean, std::vector<double> &var) {
    size_t M = (size_t)X.n * X.h * X.w;
    mean.assign(X.c, 0.0);
    var.assign(X.c, 0.0);
    for (int n = 0; n < X.n; n++)
        for (int h = 0; h < X.h; h++)
            for (int w = 0; w < X.w; w++)
                for (int c = 0; c < X.c; c++) mean[c] += load(x, e, tidx(X, n, c, h, w));
    for (int c = 0; c < X.c; c++) mean[c] /= (double)M;
    for (int n = 0; n < X.n; n++)
        for (int h = 0; h < X.h; h++)
            for (int w = 0; w < X.w; w++)
                for (int c = 0; c < X.c; c++) { double d = load(x, e, tidx(X, n, c, h, w)) - mean[c]; var[c] += d * d; }
    for (int c = 0; c < X.c; c++) var[c] /= (double)M;
}

template <typename F>
void each(const cudnnTensorStruct &X, F f) {
    for (int n = 0; n < X.n; n++)
        for (int h = 0; h < X.h; h++)
            for (int w = 0; w < X.w; w++)
                for (int c = 0; c < X.c; c++) f(tidx(X, n, c, h, w), c);
}
}  // namespace

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *d) { *d = new cudnnPoolingStruct(); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) { delete d; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode, cudnnNanPropagation_t nan_opt,
                                          int wh, int ww, int ph, int pw, int sh, int sw) {
    if (!d || wh <= 0 || ww <= 0 || ph < 0 || pw < 0 || sh <= 0 || sw <= 0 || mode < CUDNN_POOLING_MAX ||
        mode > CUDNN_POOLING_MAX_DETERMINISTIC || (nan_opt != CUDNN_NOT_PROPAGATE_NAN && nan_opt != CUDNN_PROPAGATE_NAN))
        return CUDNN_STATUS_BAD_PARAM;
    if (ph >= wh || pw >= ww) return bad("cudnnSetPooling2dDescriptor", "padding must be smaller than the window");
    *d = cudnnPoolingStruct{ true, mode, nan_opt, wh, ww, ph, pw, sh, sw };
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetPooling2dForwardOutputDim(cudnnPoolingDescriptor_t d, cudnnTensorDescriptor_t x, int *n, int *c, int *h, int *w) {
    if (!d || !d->set || !ready(x)) return CUDNN_STATUS_BAD_PARAM;
    *n = x->n;
    *c = x->c;
    *h = pool_out(x->h, d->ph, d->wh, d->sh);
    *w = pool_out(x->w, d->pw, d->ww, d->sw);
    return *h > 0 && *w > 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t h, cudnnPoolingDescriptor_t pd, const void *alpha, cudnnTensorDescriptor_t xd,
                                  const void *x, const void *beta, cudnnTensorDescriptor_t yd, void *y) {
    const char *fn = "cudnnPoolingForward";
    if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
    if (refused(fn)) return CUDNN_STATUS_NOT_SUPPORTED;
    cudnnStatus_t st = pool_check(fn, pd, xd, yd);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (!alpha || !beta) return bad(fn, "alpha or beta is NULL");
    if (!all_resident(fn, { { x, numel(xd) }, { y, numel(yd) } }, xd->t)) return CUDNN_STATUS_EXECUTION_FAILED;
    cudnnPoolingStruct P = *pd;
    cudnnTensorStruct X = *xd, Y = *yd;
    double al = scalar(alpha), be = scalar(beta);
    elem e = elem_t(X.t);
    if (!launchable("cuDNN", h->stream)) return CUDNN_STATUS_EXECUTION_FAILED;
    enqueue(h->stream, [=] {
        for (int n = 0; n < Y.n; n++)
            for (int oh = 0; oh < Y.h; oh++)
                for (int ow = 0; ow < Y.w; ow++)
                    for (int c = 0; c < Y.c; c++) {
                        int h0, h1, w0, w1;
                        window(P, X, oh, ow, &h0, &h1, &w0, &w1);
                        double r = is_max(P.mode) ? -INFINITY : 0.0;
                        for (int ih = h0; ih < h1; ih++)
                            for (int iw = w0; iw < w1; iw++) {
                                double v = load(x, e, tidx(X, n, c, ih, iw));
                                if (!is_max(P.mode)) r += v;
                                else if (std::isnan(v)) { if (P.nan == CUDNN_PROPAGATE_NAN) r = v; }
                                else if (v > r && !std::isnan(r)) r = v;
                            }
                        if (!is_max(P.mode)) r /= avg_count(P, h0, h1, w0, w1);
                        size_t i = tidx(Y, n, c, oh, ow);
                        store(y, e, i, al * r + (be == 0.0 ? 0.0 : be * load(y, e, i)));
                    }
    });
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t h, cudnnPoolingDescriptor_t pd, const void *alpha, cudnnTensorDescriptor_t yd,
                                   const void *y, cudnnTensorDescriptor_t dyd, const void *dy, cudnnTensorDescriptor_t xd,
                                   const void *x, const void *beta, cudnnTensorDescriptor_t dxd, void *dx) {
    const char *fn = "cudnnPoolingBackward";
    if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
    if (refused(fn)) return CUDNN_STATUS_NOT_SUPPORTED;
    cudnnStatus_t st = pool_check(fn, pd, xd, yd);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (!ready(dyd) || !ready(dxd) || !same(yd, dyd) || !same(xd, dxd)) return bad(fn, "dy/dx descriptors differ from y/x");
    if (!alpha || !beta) return bad(fn, "alpha or beta is NULL");
    if (is_max(pd->mode)) {
        fail("%s: the simulator has no max-pooling backward (Kiln uses its own MaxPoolGrad)", fn);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (!all_resident(fn, { { y, numel(yd) }, { dy, numel(yd) }, { x, numel(xd) }, { dx, numel(xd) } }, xd->t))
        return CUDNN_STATUS_EXECUTION_FAILED;
    cudnnPoolingStruct P = *pd;
    cudnnTensorStruct X = *xd, Y = *yd;
    double al = scalar(alpha), be = scalar(beta);
    elem e = elem_t(X.t);
    if (!launchable("cuDNN", h->stream)) return CUDNN_STATUS_EXECUTION_FAILED;
    enqueue(h->stream, [=] {
        std::vector<double> acc(numel(&X), 0.0);
        for (int n = 0; n < Y.n; n++)
            for (int oh = 0; oh < Y.h; oh++)
                for (int ow = 0; ow < Y.w; ow++)
                    for (int c = 0; c < Y.c; c++) {
                        int h0, h1, w0, w1;
                        window(P, X, oh, ow, &h0, &h1, &w0, &w1);
                        double g = load(dy, e, tidx(Y, n, c, oh, ow)) / avg_count(P, h0, h1, w0, w1);
                        for (int ih = h0; ih < h1; ih++)
                            for (int iw = w0; iw < w1; iw++) acc[tidx(X, n, c, ih, iw)] += g;
                    }
        for (size_t i = 0; i < acc.size(); i++) store(dx, e, i, al * acc[i] + (be == 0.0 ? 0.0 : be * load(dx, e, i)));
    });
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derived, cudnnTensorDescriptor_t xd, cudnnBatchNormMode_t mode) {
    if (!derived || !ready(xd)) return CUDNN_STATUS_BAD_PARAM;
    if (mode == CUDNN_BATCHNORM_PER_ACTIVATION) return CUDNN_STATUS_NOT_SUPPORTED;   /* not modelled */
    *derived = cudnnTensorStruct{ true, xd->f, xd->t == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT, 1, xd->c, 1, 1 };
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
                                                     cudnnTensorDescriptor_t xd, const void *x, cudnnTensorDescriptor_t yd, void *y,
                                                     cudnnTensorDescriptor_t bnd, const void *scale, const void *bias, double factor,
                                                     void *running_mean, void *running_var, double eps, void *save_mean,
                                                     void *save_inv_var) {
    const char *fn = "cudnnBatchNormalizationForwardTraining";
    if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
    if (refused(fn)) return CUDNN_STATUS_NOT_SUPPORTED;
    cudnnStatus_t st = bn_check(fn, mode, xd, yd, bnd, eps);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (!alpha || !beta || !scale || !bias) return bad(fn, "alpha, beta, scale or bias is NULL");
    if (!running_mean != !running_var || !save_mean != !save_inv_var) return bad(fn, "running (or saved) mean and variance must be given together");
    if (!(factor >= 0.0 && factor <= 1.0)) return bad(fn, "exponentialAverageFactor outside [0, 1]");
    size_t C = (size_t)xd->c;
    if (!all_resident(fn, { { x, numel(xd) }, { y, numel(xd) } }, xd->t) ||
        !all_resident(fn, { { scale, C }, { bias, C }, { running_mean, C }, { running_var, C }, { save_mean, C }, { save_inv_var, C } }, bnd->t))
        return CUDNN_STATUS_EXECUTION_FAILED;
    cudnnTensorStruct X = *xd;
    double al = scalar(alpha), be = scalar(beta);
    elem e = elem_t(X.t), pe = elem_t(bnd->t);
    if (!launchable("cuDNN", h->stream)) return CUDNN_STATUS_EXECUTION_FAILED;
    enqueue(h->stream, [=] {
        std::vector<double> mean, var;
        channel_stats(X, x, e, mean, var);
        double M = (double)X.n * X.h * X.w;
        each(X, [&](size_t i, int c) {
            double r = load(scale, pe, c) * (load(x, e, i) - mean[c]) / std::sqrt(var[c] + eps) + load(bias, pe, c);
            store(y, e, i, al * r + (be == 0.0 ? 0.0 : be * load(y, e, i)));
        });
        for (int c = 0; c < X.c; c++) {
            if (running_mean) {
                double unb = M > 1 ? var[c] * M / (M - 1) : var[c];
                store(running_mean, pe, c, (1 - factor) * load(running_mean, pe, c) + factor * mean[c]);
                store(running_var, pe, c, (1 - factor) * load(running_var, pe, c) + factor * unb);
            }
            if (save_mean) { store(save_mean, pe, c, mean[c]); store(save_inv_var, pe, c, 1.0 / std::sqrt(var[c] + eps)); }
        }
    });
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
                                                      cudnnTensorDescriptor_t xd, const void *x, cudnnTensorDescriptor_t yd, void *y,
                                                      cudnnTensorDescriptor_t bnd, const void *scale, const void *bias,
                                                      const void *mean, const void *var, double eps) {
    const char *fn = "cudnnBatchNormalizationForwardInference";
    if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
    if (refused(fn)) return CUDNN_STATUS_NOT_SUPPORTED;
    cudnnStatus_t st = bn_check(fn, mode, xd, yd, bnd, eps);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (!alpha || !beta || !scale || !bias || !mean || !var) return bad(fn, "a pointer argument is NULL");
    size_t C = (size_t)xd->c;
    if (!all_resident(fn, { { x, numel(xd) }, { y, numel(xd) } }, xd->t) ||
        !all_resident(fn, { { scale, C }, { bias, C }, { mean, C }, { var, C } }, bnd->t))
        return CUDNN_STATUS_EXECUTION_FAILED;
    cudnnTensorStruct X = *xd;
    double al = scalar(alpha), be = scalar(beta);
    elem e = elem_t(X.t), pe = elem_t(bnd->t);
    if (!launchable("cuDNN", h->stream)) return CUDNN_STATUS_EXECUTION_FAILED;
    enqueue(h->stream, [=] {
        each(X, [&](size_t i, int c) {
            double r = load(scale, pe, c) * (load(x, e, i) - load(mean, pe, c)) / std::sqrt(load(var, pe, c) + eps) + load(bias, pe, c);
            store(y, e, i, al * r + (be == 0.0 ? 0.0 : be * load(y, e, i)));
        });
    });
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationBackward(cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alpha_data,
                                              const void *beta_data, const void *alpha_param, const void *beta_param,
                                              cudnnTensorDescriptor_t xd, const void *x, cudnnTensorDescriptor_t dyd, const void *dy,
                                              cudnnTensorDescriptor_t dxd, void *dx, cudnnTensorDescriptor_t bnd, const void *scale,
                                              void *dscale, void *dbias, double eps, const void *saved_mean,
                                              const void *saved_inv_var) {
    const char *fn = "cudnnBatchNormalizationBackward";
    if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
    if (refused(fn)) return CUDNN_STATUS_NOT_SUPPORTED;
    cudnnStatus_t st = bn_check(fn, mode, xd, dyd, bnd, eps);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (!ready(dxd) || !same(xd, dxd)) return bad(fn, "x and dx descriptors differ");
    if (!alpha_data || !beta_data || !alpha_param || !beta_param || !scale || !dscale || !dbias || !dx)
        return bad(fn, "a pointer argument is NULL");
    if (!saved_mean != !saved_inv_var) return bad(fn, "saved mean and inverse variance must be given together");
    size_t C = (size_t)xd->c;
    if (!all_resident(fn, { { x, numel(xd) }, { dy, numel(xd) }, { dx, numel(xd) } }, xd->t) ||
        !all_resident(fn, { { scale, C }, { dscale, C }, { dbias, C }, { saved_mean, C }, { saved_inv_var, C } }, bnd->t))
        return CUDNN_STATUS_EXECUTION_FAILED;
    cudnnTensorStruct X = *xd;
    double ad = scalar(alpha_data), bd = scalar(beta_data), ap = scalar(alpha_param), bp = scalar(beta_param);
    elem e = elem_t(X.t), pe = elem_t(bnd->t);
    if (!launchable("cuDNN", h->stream)) return CUDNN_STATUS_EXECUTION_FAILED;
    enqueue(h->stream, [=] {
        std::vector<double> mean, var, rstd(X.c), sdy(X.c, 0.0), sdyx(X.c, 0.0);
        channel_stats(X, x, e, mean, var);
        for (int c = 0; c < X.c; c++) {
            if (saved_mean) mean[c] = load(saved_mean, pe, c);
            rstd[c] = saved_inv_var ? load(saved_inv_var, pe, c) : 1.0 / std::sqrt(var[c] + eps);
        }
        double M = (double)X.n * X.h * X.w;
        each(X, [&](size_t i, int c) {
            double g = load(dy, e, i);
            sdy[c] += g;
            sdyx[c] += g * (load(x, e, i) - mean[c]) * rstd[c];
        });
        each(X, [&](size_t i, int c) {
            double xh = (load(x, e, i) - mean[c]) * rstd[c];
            double r = load(scale, pe, c) * rstd[c] / M * (M * load(dy, e, i) - sdy[c] - xh * sdyx[c]);
            store(dx, e, i, ad * r + (bd == 0.0 ? 0.0 : bd * load(dx, e, i)));
        });
        for (int c = 0; c < X.c; c++) {
            store(dscale, pe, c, ap * sdyx[c] + (bp == 0.0 ? 0.0 : bp * load(dscale, pe, c)));
            store(dbias, pe, c, ap * sdy[c] + (bp == 0.0 ? 0.0 : bp * load(dbias, pe, c)));
        }
    });
    return CUDNN_STATUS_SUCCESS;
}
