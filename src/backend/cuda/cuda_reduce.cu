/* Reductions (Sum, Mean, Max over any axes; SumTo), Softmax/LogSoftmax on any axis, ArgMax and
 * GlobalAvgPool. Accumulation in double like ref. A reduction runs in two passes when its
 * outputs alone cannot fill the GPU: pass 1 splits the reduced range into S chunks (partials in
 * the planned workspace, S*outputs doubles, each output's S together), pass 2 combines them in a
 * fixed order (a block per output and a shared-memory tree when S is large), so results are
 * deterministic. Max: NaN wins and stays (numpy); Mean of nothing is NaN; Max of nothing -inf. */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"

enum { RED_SUM, RED_MEAN, RED_MAX };

typedef struct red_plan {
    int nk, nr;
    int64_t kd[KILN_MAX_DIMS], ks[KILN_MAX_DIMS], rd[KILN_MAX_DIMS], rs[KILN_MAX_DIMS];
    int64_t nout, nred, S, chunk;
} red_plan;

/* Adjacent dims of one kind merge when their strides stay affine. */
static void push_dim(int64_t *dim, int64_t *st, int *n, int64_t d, int64_t s) {
    if (d == 1) return;
    if (*n > 0 && st[*n - 1] == s * d) { dim[*n - 1] *= d; st[*n - 1] = s; return; }
    dim[*n] = d; st[*n] = s; (*n)++;
}

static red_plan plan_reduce(kiln_shape xs, unsigned rmask) {
    red_plan p;
    int64_t st[KILN_MAX_DIMS];
    kiln_row_strides(xs, st);
    p.nk = p.nr = 0;
    p.nout = p.nred = 1;
    for (int d = 0; d < xs.rank; d++) {
        if (rmask >> d & 1) { push_dim(p.rd, p.rs, &p.nr, xs.dim[d], st[d]); p.nred *= xs.dim[d]; }
        else { push_dim(p.kd, p.ks, &p.nk, xs.dim[d], st[d]); p.nout *= xs.dim[d]; }
    }
    const int64_t target = 1 << 18;
    int64_t S = p.nout > 0 ? (target + p.nout - 1) / p.nout : 1;
    int64_t maxs = (p.nred + 63) / 64;
    if (S > maxs) S = maxs;
    if (S > 1024) S = 1024;
    if (S < 1) S = 1;
    p.chunk = (p.nred + S - 1) / S;
    if (p.chunk < 1) p.chunk = 1;
    p.S = p.nred > 0 ? (p.nred + p.chunk - 1) / p.chunk : 1;
    return p;
}

static unsigned axes_mask(const kiln_node *n) {
    const kiln_attrs *a = &n->attrs;
    int rank = n->in[0]->shape.rank;
    if (a->n_axes == 0) return (1u << rank) - 1u;
    unsigned m = 0;
    for (int i = 0; i < a->n_axes; i++)
        if (a->axes[i] >= 0 && a->axes[i] < rank) m |= 1u << a->axes[i];
    return m;
}

static unsigned sum_to_mask(kiln_shape xs, kiln_shape ts) {
    int lead = xs.rank - ts.rank;
    unsigned m = 0;
    for (int d = 0; d < xs.rank; d++)
        if (d < lead || (ts.dim[d - lead] == 1 && xs.dim[d] != 1)) m |= 1u << d;
    return m;
}

static unsigned node_mask(const kiln_node *n) {
    return n->op == KILN_OP_SUM_TO ? sum_to_mask(n->in[0]->shape, n->shape) : axes_mask(n);
}

__device__ __forceinline__ double red_combine(int mode, double acc, double v) {
    if (mode != RED_MAX) return acc + v;
    return (v > acc || isnan(v)) ? v : acc;
}

template <typename T>
__global__ void reduce_pass1(const T *__restrict__ x, T *y, double *part, red_plan p, int mode) {
    int64_t workers = p.nout * p.S;
    CU_LOOP(w, workers) {
        int64_t o = w % p.nout, s = w / p.nout;
        int64_t base = kiln_offset_of(o, p.kd, p.ks, p.nk);
        int64_t j0 = s * p.chunk, j1 = j0 + p.chunk < p.nred ? j0 + p.chunk : p.nred;
        double acc = mode == RED_MAX ? -INFINITY : 0.0;
        if (p.nr == 1) {
            for (int64_t j = j0; j < j1; j++) acc = red_combine(mode, acc, (double)cu_ld(x, base + j * p.rs[0]));
        } else {
            for (int64_t j = j0; j < j1; j++) acc = red_combine(mode, acc, (double)cu_ld(x, base + kiln_offset_of(j, p.rd, p.rs, p.nr)));
        }
        if (p.S == 1) {
            if (mode == RED_MEAN) acc /= (double)p.nred;
            cu_st(y, o, (typename cu_acc<T>::type)acc);
        } else {
            part[o * p.S + s] = acc;
        }
    }
}

template <typename T>
__global__ void reduce_pass2(T *y, const double *part, red_plan p, int mode) {
    CU_LOOP(o, p.nout) {
        double acc = mode == RED_MAX ? -INFINITY : 0.0;
        for (int64_t s = 0; s < p.S; s++) acc = red_combine(mode, acc, part[o * p.S + s]);
        if (mode == RED_MEAN) acc /= (double)p.nred;
        cu_st(y, o, (typename cu_acc<T>::type)acc);
    }
}

/* Pass 2 for many partials (few outputs, e.g. a bias gradient): one block per output, each thread
 * combines a strided share, then a fixed-order tree, instead of one thread's long serial chain. */
#define P2_THREADS 256
#define P2_MIN_S 32
template <typename T>
__global__ void reduce_pass2_block(T *y, const double *part, red_plan p, int mode) {
    __shared__ double sh[P2_THREADS];
    for (int64_t o = blockIdx.x; o < p.nout; o += gridDim.x) {
        double acc = mode == RED_MAX ? -INFINITY : 0.0;
        for (int64_t s = threadIdx.x; s < p.S; s += P2_THREADS) acc = red_combine(mode, acc, part[o * p.S + s]);
        sh[threadIdx.x] = acc;
        __syncthreads();
        for (int k = P2_THREADS / 2; k > 0; k >>= 1) {
            if ((int)threadIdx.x < k) sh[threadIdx.x] = red_combine(mode, sh[threadIdx.x], sh[threadIdx.x + k]);
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            double r = sh[0];
            if (mode == RED_MEAN) r /= (double)p.nred;
            cu_st(y, o, (typename cu_acc<T>::type)r);
        }
        __syncthreads();
    }
}

static kiln_status k_reduce(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    int mode = n->op == KILN_OP_REDUCE_MAX ? RED_MAX : n->op == KILN_OP_REDUCE_MEAN ? RED_MEAN : RED_SUM;
    red_plan p = plan_reduce(c->in[0].shape, node_mask(n));
    if (p.nout != c->out.numel)
        return cu_fail(KILN_INTERNAL, "%s: output has %lld elements, expected %lld", n->name, (long long)c->out.numel, (long long)p.nout);
    if (p.nout == 0) return KILN_OK;
    double *part = (double *)c->workspace;
    if (p.S > 1 && (!part || c->ws_bytes < (size_t)(p.S * p.nout) * sizeof(double)))
        return cu_fail(KILN_INTERNAL, "%s: reduction workspace missing", n->name);
    cudaStream_t s = cu_stream();
    int64_t workers = p.nout * p.S;
    CU_FLOAT_SWITCH(c->out.dtype, T,
        CU_LAUNCH(reduce_pass1<T>, cu_blocks(workers), CU_THREADS, 0, s)((const T *)c->in[0].data, (T *)c->out.data, part, p, mode);
        if (p.S >= P2_MIN_S) CU_LAUNCH(reduce_pass2_block<T>, (unsigned)(p.nout < 65536 ? p.nout : 65536), P2_THREADS, 0, s)((T *)c->out.data, part, p, mode);
        else if (p.S > 1) CU_LAUNCH(reduce_pass2<T>, cu_blocks(p.nout), CU_THREADS, 0, s)((T *)c->out.data, part, p, mode))
    return cu_launch_check(c);
}

size_t cu_reduce_workspace(const kiln_node *n) {
    red_plan p = plan_reduce(n->in[0]->shape, node_mask(n));
    return p.S > 1 ? cu_align((size_t)(p.S * p.nout) * sizeof(double)) : 0;
}

/* ---- Softmax / LogSoftmax: one thread per row (outer x inner), three passes like ref ---- */
template <typename T>
__global__ void softmax_kernel(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, bool log_out) {
    typedef typename cu_acc<T>::type C;
    CU_LOOP(r, outer * inner) {
        int64_t o = r / inner, in = r - o * inner, base = o * len * inner + in;
        C m = (C)-INFINITY;
        for (int64_t k = 0; k < len; k++) {
            C v = cu_ld(x, base + k * inner);
            if (v > m || isnan(v)) m = v;
        }
        double sum = 0.0;
        for (int64_t k = 0; k < len; k++) sum += exp((double)cu_ld(x, base + k * inner) - (double)m);
        double ls = log(sum);
        for (int64_t k = 0; k < len; k++) {
            int64_t j = base + k * inner;
            double z = (double)cu_ld(x, j) - (double)m;
            cu_st(y, j, (C)(log_out ? z - ls : exp(z) / sum));
        }
    }
}

static kiln_status k_softmax(const kiln_kctx *c) {
    int axis = c->node->attrs.axis;
    kiln_shape xs = c->in[0].shape;
    int64_t outer = 1, len = xs.dim[axis], inner = 1;
    for (int d = 0; d < axis; d++) outer *= xs.dim[d];
    for (int d = axis + 1; d < xs.rank; d++) inner *= xs.dim[d];
    int64_t rows = outer * inner;
    if (rows == 0 || len == 0) return KILN_OK;
    bool lg = c->node->op == KILN_OP_LOG_SOFTMAX;
    cudaStream_t s = cu_stream();
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(softmax_kernel<T>, cu_blocks(rows), 128, 0, s)((const T *)c->in[0].data, (T *)c->out.data, outer, len, inner, lg))
    return cu_launch_check(c);
}

/* ---- ArgMax: first max wins, NaN counts as the max ---- */
__global__ void argmax_kernel(const void *x, int dt, long long *y, int64_t outer, int64_t n, int64_t inner) {
    CU_LOOP(r, outer * inner) {
        int64_t o = r / inner, in = r - o * inner, base = o * n * inner + in;
        int64_t best = 0;
        double bv = cu_ld_any(x, dt, base);
        for (int64_t k = 1; k < n && !isnan(bv); k++) {
            double v = cu_ld_any(x, dt, base + k * inner);
            if (v > bv || isnan(v)) { bv = v; best = k; }
        }
        y[r] = best;
    }
}

static kiln_status k_argmax(const kiln_kctx *c) {
    int ax = c->node->attrs.axis;
    kiln_shape xs = c->in[0].shape;
    int64_t outer = 1, inner = 1, n = xs.dim[ax];
    for (int d = 0; d < ax; d++) outer *= xs.dim[d];
    for (int d = ax + 1; d < xs.rank; d++) inner *= xs.dim[d];
    if (outer * inner == 0) return KILN_OK;
    if (n == 0)
        return cu_check(cudaMemsetAsync(c->out.data, 0, (size_t)(outer * inner) * 8, cu_stream()), "ArgMax");
    CU_LAUNCH(argmax_kernel, cu_blocks(outer * inner), CU_THREADS, 0, cu_stream())(c->in[0].data, (int)c->in[0].dtype,
                                                                            (long long *)c->out.data, outer, n, inner);
    return cu_launch_check(c);
}

/* ---- GlobalAvgPool [N,H,W,C] -> [N,C] ---- */
template <typename T>
__global__ void gap_kernel(const T *x, T *y, int64_t N, int64_t HW, int64_t C) {
    CU_LOOP(r, N * C) {
        int64_t n = r / C, ch = r - n * C;
        double acc = 0.0;
        for (int64_t k = 0; k < HW; k++) acc += (double)cu_ld(x, (n * HW + k) * C + ch);
        cu_st(y, r, (typename cu_acc<T>::type)(acc / (double)HW));
    }
}

static kiln_status k_gap(const kiln_kctx *c) {
    kiln_shape xs = c->in[0].shape;
    int64_t N = xs.dim[0], HW = xs.dim[1] * xs.dim[2], C = xs.dim[3];
    if (N * C == 0) return KILN_OK;
    cudaStream_t s = cu_stream();
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(gap_kernel<T>, cu_blocks(N * C), CU_THREADS, 0, s)((const T *)c->in[0].data, (T *)c->out.data, N, HW, C))
    return cu_launch_check(c);
}

kiln_kernel_fn cu_reduce_kernel(const kiln_node *n) {
    bool fl = cu_is_float(n->dtype) && cu_all_dtype(n, n->dtype);
    switch (n->op) {
    case KILN_OP_REDUCE_SUM: case KILN_OP_REDUCE_MEAN: case KILN_OP_REDUCE_MAX: case KILN_OP_SUM_TO:
        return fl && n->in[0]->shape.rank <= KILN_MAX_DIMS ? k_reduce : NULL;
    case KILN_OP_SOFTMAX: case KILN_OP_LOG_SOFTMAX:
        return fl ? k_softmax : NULL;
    case KILN_OP_ARGMAX:
        return n->in[0]->dtype != KILN_BOOL ? k_argmax : NULL;
    case KILN_OP_GLOBAL_AVG_POOL:
        return fl && n->in[0]->shape.rank == 4 ? k_gap : NULL;
    default:
        return NULL;
    }
}
