/* FusedBatchNorm (training and inference), FusedBatchNormGrad (dx) and BatchNormGammaGrad with
 * our own kernels where cuDNN's (cuda_dnn_ops.cu) do not run: f64/f16/bf16 (Kiln keeps gamma and
 * the statistics in x's dtype, cuDNN in f32), training on one row per channel, and
 * KILN_CUDA_OWN_POOL_NORM=1. They follow ref exactly: channels are the last dim (M rows of C),
 * batch mean and biased variance by two passes in double, moving = momentum*moving + (1-momentum)*batch with the
 * unbiased variance n/(n-1), dx = gamma*rstd/M * (M*dy - sum(dy) - xhat*sum(dy*xhat)).
 * Column sums split the rows into S chunks (partials in the workspace, combined in order:
 * deterministic). Workspace: 2*S*C partials + 4*C per-channel values, all double. */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"

typedef struct bn_plan { int64_t M, C, S, chunk; } bn_plan;

static bn_plan plan_of(kiln_shape xs) {
    bn_plan p;
    p.C = xs.rank > 0 ? xs.dim[xs.rank - 1] : 1;
    int64_t n = cu_numel(xs);
    p.M = p.C > 0 ? n / p.C : 0;
    int64_t S = p.C > 0 ? ((1 << 17) + p.C - 1) / p.C : 1, maxs = (p.M + 63) / 64;
    if (S > maxs) S = maxs;
    if (S > 1024) S = 1024;
    if (S < 1) S = 1;
    p.chunk = (p.M + S - 1) / S;
    if (p.chunk < 1) p.chunk = 1;
    p.S = p.M > 0 ? (p.M + p.chunk - 1) / p.chunk : 1;
    return p;
}

size_t cu_norm_workspace(const kiln_node *n) {
    bn_plan p = plan_of(n->in[0]->shape);
    return cu_align((size_t)(2 * p.S * p.C) * sizeof(double)) + cu_align((size_t)(4 * p.C) * sizeof(double));
}

enum { COL_SUM, COL_SQDEV, COL_GRAD };

/* Worker (c, s) sums its chunk of rows of channel c. SUM: x; SQDEV: (x-mean)^2;
 * GRAD: dy and dy*(x-mean)*rstd (second partial in part2). */
template <typename T>
__global__ void col_kernel(const T *x, const T *dy, bn_plan p, int mode, const double *mean, const double *rstd,
                           double *part1, double *part2) {
    CU_LOOP(w, p.C * p.S) {
        int64_t c = w % p.C, s = w / p.C;
        int64_t m0 = s * p.chunk, m1 = m0 + p.chunk < p.M ? m0 + p.chunk : p.M;
        double a = 0.0, b = 0.0;
        double mu = mode == COL_SUM ? 0.0 : mean[c], rs = mode == COL_GRAD ? rstd[c] : 0.0;
        for (int64_t m = m0; m < m1; m++) {
            double v = (double)cu_ld(x, m * p.C + c);
            if (mode == COL_SUM) a += v;
            else if (mode == COL_SQDEV) { double d = v - mu; a += d * d; }
            else { double g = (double)cu_ld(dy, m * p.C + c); a += g; b += g * (v - mu) * rs; }
        }
        part1[w] = a;
        if (mode == COL_GRAD) part2[w] = b;
    }
}

__device__ __forceinline__ double col_total(const double *part, bn_plan p, int64_t c) {
    double t = 0.0;
    for (int64_t s = 0; s < p.S; s++) t += part[s * p.C + c];
    return t;
}

__global__ void mean_kernel(const double *part, bn_plan p, double *mean) {
    CU_LOOP(c, p.C) mean[c] = p.M > 0 ? col_total(part, p, c) / (double)p.M : 0.0;
}

/* var from the SQDEV partials (or the moving variance in inference), then rstd and, in training,
 * the moving statistics (same dtype as x). */
template <typename T>
__global__ void stats_kernel(const double *part, bn_plan p, double *mean, double *rstd, T *mm, T *mv, bool training,
                             bool update, double momentum, double eps) {
    CU_LOOP(c, p.C) {
        double mu, var;
        if (training) {
            mu = mean[c];
            var = p.M > 0 ? col_total(part, p, c) / (double)p.M : 0.0;
            if (update) {
                double unb = p.M > 1 ? var * (double)p.M / (double)(p.M - 1) : var;
                double om = (double)cu_ld(mm, c), ov = (double)cu_ld(mv, c);
                cu_st(mm, c, (typename cu_acc<T>::type)(momentum * om + (1.0 - momentum) * mu));
                cu_st(mv, c, (typename cu_acc<T>::type)(momentum * ov + (1.0 - momentum) * unb));
            }
        } else {
            mu = (double)cu_ld(mm, c);
            var = (double)cu_ld(mv, c);
            mean[c] = mu;
        }
        rstd[c] = 1.0 / sqrt(var + eps);
    }
}

template <typename T>
__global__ void bn_apply_kernel(const T *x, const T *gamma, const T *beta, const double *mean, const double *rstd, T *y, bn_plan p) {
    CU_LOOP(i, p.M * p.C) {
        int64_t c = i % p.C;
        double scale = (double)cu_ld(gamma, c) * rstd[c];
        cu_st(y, i, (typename cu_acc<T>::type)(((double)cu_ld(x, i) - mean[c]) * scale + (double)cu_ld(beta, c)));
    }
}

__global__ void grad_sums_kernel(const double *p1, const double *p2, bn_plan p, double *sdy, double *sdyx) {
    CU_LOOP(c, p.C) { sdy[c] = col_total(p1, p, c); sdyx[c] = col_total(p2, p, c); }
}

template <typename T>
__global__ void bn_dx_kernel(const T *x, const T *gamma, const T *dy, const double *mean, const double *rstd,
                             const double *sdyv, const double *sdyxv, T *dx, bn_plan p) {
    CU_LOOP(i, p.M * p.C) {
        int64_t c = i % p.C;
        double sdy = sdyv[c], sdyx = sdyxv[c];
        double k = (double)cu_ld(gamma, c) * rstd[c] / (double)p.M;
        double xh = ((double)cu_ld(x, i) - mean[c]) * rstd[c];
        cu_st(dx, i, (typename cu_acc<T>::type)(k * ((double)p.M * (double)cu_ld(dy, i) - sdy - xh * sdyx)));
    }
}

template <typename T>
__global__ void bn_dgamma_kernel(const double *sdyx, T *out, bn_plan p) {
    CU_LOOP(c, p.C) cu_st(out, c, (typename cu_acc<T>::type)sdyx[c]);
}

template <typename T>
static void bn_run(const kiln_kctx *c, bn_plan p, double *part1, double *part2, double *mean, double *rstd) {
    const kiln_node *n = c->node;
    const kiln_attrs *a = &n->attrs;
    cudaStream_t s = cu_stream();
    const T *x = (const T *)c->in[0].data;
    unsigned gw = cu_blocks(p.C * p.S), gc = cu_blocks(p.C), ge = cu_blocks(p.M * p.C);
    bool training = n->op != KILN_OP_BATCH_NORM || a->training;
    T *mm = n->op == KILN_OP_BATCH_NORM ? (T *)c->in[3].data : NULL, *mv = n->op == KILN_OP_BATCH_NORM ? (T *)c->in[4].data : NULL;
    if (training) {
        CU_LAUNCH(col_kernel<T>, gw, CU_THREADS, 0, s)(x, NULL, p, COL_SUM, NULL, NULL, part1, NULL);
        CU_LAUNCH(mean_kernel, gc, CU_THREADS, 0, s)(part1, p, mean);
        CU_LAUNCH(col_kernel<T>, gw, CU_THREADS, 0, s)(x, NULL, p, COL_SQDEV, mean, NULL, part1, NULL);
    }
    CU_LAUNCH(stats_kernel<T>, gc, CU_THREADS, 0, s)(part1, p, mean, rstd, mm, mv, training, n->op == KILN_OP_BATCH_NORM, a->momentum, a->epsilon);
    if (n->op == KILN_OP_BATCH_NORM) {
        CU_LAUNCH(bn_apply_kernel<T>, ge, CU_THREADS, 0, s)(x, (const T *)c->in[1].data, (const T *)c->in[2].data, mean, rstd, (T *)c->out.data, p);
        return;
    }
    const T *dy = (const T *)c->in[n->op == KILN_OP_BATCH_NORM_GRAD ? 2 : 1].data;
    double *sdy = rstd + p.C, *sdyx = sdy + p.C;
    CU_LAUNCH(col_kernel<T>, gw, CU_THREADS, 0, s)(x, dy, p, COL_GRAD, mean, rstd, part1, part2);
    CU_LAUNCH(grad_sums_kernel, gc, CU_THREADS, 0, s)(part1, part2, p, sdy, sdyx);
    if (n->op == KILN_OP_BATCH_NORM_GRAD)
        CU_LAUNCH(bn_dx_kernel<T>, ge, CU_THREADS, 0, s)(x, (const T *)c->in[1].data, dy, mean, rstd, sdy, sdyx, (T *)c->out.data, p);
    else
        CU_LAUNCH(bn_dgamma_kernel<T>, gc, CU_THREADS, 0, s)(sdyx, (T *)c->out.data, p);
}

static kiln_status k_bn(const kiln_kctx *c) {
    bn_plan p = plan_of(c->in[0].shape);
    if (p.C == 0) return KILN_OK;
    size_t need = cu_norm_workspace(c->node);
    if (!c->workspace || c->ws_bytes < need)
        return cu_fail(KILN_INTERNAL, "%s: batch norm workspace is %zu bytes, needs %zu", c->node->name, c->ws_bytes, need);
    double *part1 = (double *)c->workspace, *part2 = part1 + p.S * p.C;
    double *mean = (double *)((char *)c->workspace + cu_align((size_t)(2 * p.S * p.C) * sizeof(double))), *rstd = mean + p.C;
    CU_FLOAT_SWITCH(c->out.dtype, T, bn_run<T>(c, p, part1, part2, mean, rstd))
    return cu_launch_check(c);
}

kiln_kernel_fn cu_norm_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_BATCH_NORM: case KILN_OP_BATCH_NORM_GRAD: case KILN_OP_BN_GRAD_GAMMA:
        return cu_is_float(n->dtype) && cu_all_dtype(n, n->dtype) ? k_bn : NULL;
    default:
        return NULL;
    }
}
