/* Synchronised batch norm's ops on the GPU (src/ops/sync_bn.c; the ref kernels in
 * src/backend/ref/sync_bn.c are the oracle): statistics f64 [2C+1] (sums, sums of squares, rows),
 * one thread per channel for the per-channel sums (C threads, each over the M rows: simple, not
 * tuned), a grid-stride loop for the elementwise parts. CrossReplicaSum is a copy here; the
 * session sums it over the replicas. */
#include "backend/cuda/cuda_internal.cuh"

template <typename T>
__global__ void stats_kernel(const T *x, int64_t M, int64_t C, double *o) {
    CU_LOOP(c, C) {
        double s = 0, ss = 0;
        for (int64_t m = 0; m < M; m++) { double v = (double)cu_ld(x, m * C + c); s += v; ss += v * v; }
        o[c] = s;
        o[C + c] = ss;
        if (c == 0) o[2 * C] = (double)M;
    }
}

template <typename T>
__global__ void stats_grad_kernel(const T *x, const double *ds, int64_t n, int64_t C, T *dx) {
    CU_LOOP(i, n) {
        int64_t c = i % C;
        cu_st(dx, i, (typename cu_acc<T>::type)(ds[c] + 2.0 * (double)cu_ld(x, i) * ds[C + c]));
    }
}

__device__ __forceinline__ void moments(const double *st, int64_t C, int64_t c, double eps, double *mean, double *var, double *rstd) {
    double n = st[2 * C] > 0 ? st[2 * C] : 1;
    *mean = st[c] / n;
    *var = st[C + c] / n - *mean * *mean;
    if (*var < 0) *var = 0;
    *rstd = 1.0 / sqrt(*var + eps);
}

template <typename T>
__global__ void moving_kernel(const double *st, int64_t C, T *mm, T *mv, double momentum, double eps) {
    CU_LOOP(c, C) {
        double mean, var, rstd, n = st[2 * C];
        moments(st, C, c, eps, &mean, &var, &rstd);
        double unb = n > 1 ? var * n / (n - 1) : var;
        cu_st(mm, c, (typename cu_acc<T>::type)(momentum * (double)cu_ld(mm, c) + (1.0 - momentum) * mean));
        cu_st(mv, c, (typename cu_acc<T>::type)(momentum * (double)cu_ld(mv, c) + (1.0 - momentum) * unb));
    }
}

template <typename T>
__global__ void apply_kernel(const T *x, const T *gamma, const T *beta, const double *st, int64_t n, int64_t C, double eps, T *y) {
    CU_LOOP(i, n) {
        int64_t c = i % C;
        double mean, var, rstd;
        moments(st, C, c, eps, &mean, &var, &rstd);
        cu_st(y, i, (typename cu_acc<T>::type)(((double)cu_ld(x, i) - mean) * (double)cu_ld(gamma, c) * rstd + (double)cu_ld(beta, c)));
    }
}

template <typename T>
__global__ void dx_kernel(const T *gamma, const T *dy, const double *st, int64_t n, int64_t C, double eps, T *dx) {
    CU_LOOP(i, n) {
        int64_t c = i % C;
        double mean, var, rstd;
        moments(st, C, c, eps, &mean, &var, &rstd);
        cu_st(dx, i, (typename cu_acc<T>::type)((double)cu_ld(dy, i) * (double)cu_ld(gamma, c) * rstd));
    }
}

/* mode 1: dgamma (x's dtype); mode 2: d(stats) (f64) */
template <typename T>
__global__ void channel_grad_kernel(const T *x, const T *gamma, const T *dy, const double *st, int64_t M, int64_t C, double eps,
                                    int mode, T *dgamma, double *dstats) {
    CU_LOOP(c, C) {
        double mean, var, rstd, n = st[2 * C] > 0 ? st[2 * C] : 1;
        moments(st, C, c, eps, &mean, &var, &rstd);
        double a = 0, b = 0;
        for (int64_t m = 0; m < M; m++) {
            double d = (double)cu_ld(dy, m * C + c);
            a += d;
            b += d * ((double)cu_ld(x, m * C + c) - mean);
        }
        if (mode == 1) { cu_st(dgamma, c, (typename cu_acc<T>::type)(b * rstd)); continue; }
        double g = (double)cu_ld(gamma, c), dmean = -g * rstd * a, dvar = -0.5 * g * rstd * rstd * rstd * b;
        dstats[c] = dmean / n - 2.0 * mean * dvar / n;
        dstats[C + c] = dvar / n;
        if (c == 0) dstats[2 * C] = 0;
    }
}

template <typename T>
static void run(const kiln_kctx *c) {
    const kiln_node *nd = c->node;
    cudaStream_t s = cu_stream();
    const kiln_view *x = &c->in[0];
    int64_t C = x->shape.dim[x->shape.rank - 1], n = x->numel, M = n / C;
    double eps = nd->attrs.epsilon;
    const T *xd = (const T *)x->data;
    switch (nd->op) {
    case KILN_OP_BN_STATS:
        CU_LAUNCH(stats_kernel<T>, cu_blocks(C), CU_THREADS, 0, s)(xd, M, C, (double *)c->out.data);
        break;
    case KILN_OP_BN_STATS_GRAD:
        CU_LAUNCH(stats_grad_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)(xd, (const double *)c->in[1].data, n, C, (T *)c->out.data);
        break;
    case KILN_OP_BN_SYNC: {
        const double *st = (const double *)c->in[5].data;
        CU_LAUNCH(apply_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)(xd, (const T *)c->in[1].data, (const T *)c->in[2].data, st, n, C, eps,
                                                                  (T *)c->out.data);
        CU_LAUNCH(moving_kernel<T>, cu_blocks(C), CU_THREADS, 0, s)(st, C, (T *)c->in[3].data, (T *)c->in[4].data, nd->attrs.momentum, eps);
        break;
    }
    default: {   /* BN_SYNC_GRAD (x, gamma, dy, stats) */
        const T *gamma = (const T *)c->in[1].data, *dy = (const T *)c->in[2].data;
        const double *st = (const double *)c->in[3].data;
        if (nd->attrs.axis == 0)
            CU_LAUNCH(dx_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)(gamma, dy, st, n, C, eps, (T *)c->out.data);
        else
            CU_LAUNCH(channel_grad_kernel<T>, cu_blocks(C), CU_THREADS, 0, s)(xd, gamma, dy, st, M, C, eps, nd->attrs.axis,
                                                                              (T *)c->out.data, (double *)c->out.data);
        break;
    }
    }
}

static kiln_status k_sync_bn(const kiln_kctx *c) {
    if (c->in[0].numel == 0) return KILN_OK;
    CU_FLOAT_SWITCH(c->in[0].dtype, T, run<T>(c))
    return cu_launch_check(c);
}

static kiln_status k_cross_replica_sum(const kiln_kctx *c) {
    if (c->out.data == c->in[0].data || c->out.numel == 0) return KILN_OK;
    size_t bytes = (size_t)c->out.numel * (c->out.dtype == KILN_F64 ? 8 : c->out.dtype == KILN_F32 ? 4 : 2);
    return cu_check(cudaMemcpyAsync(c->out.data, c->in[0].data, bytes, cudaMemcpyDeviceToDevice, cu_stream()), "CrossReplicaSum");
}

kiln_kernel_fn cu_sync_bn_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_CROSS_REPLICA_SUM: return cu_is_float(n->dtype) ? k_cross_replica_sum : NULL;
    case KILN_OP_BN_STATS: case KILN_OP_BN_STATS_GRAD: case KILN_OP_BN_SYNC: case KILN_OP_BN_SYNC_GRAD:
        return cu_is_float(n->in[0]->dtype) ? k_sync_bn : NULL;
    default: return NULL;
    }
}
