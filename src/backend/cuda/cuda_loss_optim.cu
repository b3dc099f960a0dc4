/* Losses (+ grads), MeanSquaredError, Equal, Accuracy, optimizer updates (ApplySGD / Adam /
 * RMSProp / Adagrad, Keras formulas of SEMANTICS.md, in place, math in double like ref),
 * GlobalNorm and ClipScale. Scalars (lr, Adam's t, dy of a loss) stay on the device.
 * A label outside [0, C) in a sparse cross-entropy is recorded in the device error flag and
 * reported by sync() as KILN_INVALID_ARGUMENT; its row is skipped (the loss reads no memory out
 * of bounds). Sums over elements use CU_RED_BLOCKS block partials (workspace) combined in order. */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"

#define RB 256   /* threads of the reduction blocks */

__device__ double block_sum(double v) {
    __shared__ double sh[RB];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = RB / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

template <typename T> __device__ double row_lse(const T *x, int64_t r, int64_t C) {
    double mx = -INFINITY, s = 0.0;
    for (int64_t j = 0; j < C; j++) { double v = (double)cu_ld(x, r * C + j); if (v > mx) mx = v; }
    for (int64_t j = 0; j < C; j++) s += exp((double)cu_ld(x, r * C + j) - mx);
    return mx + log(s);
}

/* ---- cross-entropies: one block; each thread takes rows ---- */
template <typename T>
__global__ void sparse_xent_kernel(const T *x, const void *lab, int ldt, T *out, int64_t N, int64_t C, cu_dev_error *err,
                                   int op, unsigned long long node) {
    double tot = 0.0;
    for (int64_t r = threadIdx.x; r < N; r += RB) {
        long long y = cu_ld_label(lab, ldt, r);
        if (y < 0 || y >= C) { cu_report(err, op, y, r, C, node); continue; }
        tot += row_lse(x, r, C) - (double)cu_ld(x, r * C + y);
    }
    tot = block_sum(tot);
    if (threadIdx.x == 0) cu_st(out, 0, (typename cu_acc<T>::type)(N > 0 ? tot / (double)N : 0.0));
}

template <typename T>
__global__ void sparse_xent_grad_kernel(const T *x, const void *lab, int ldt, const T *dy, T *out, int64_t N, int64_t C,
                                        cu_dev_error *err, int op, unsigned long long node) {
    CU_LOOP(r, N) {
        double k = (double)cu_ld(dy, 0) / (double)(N > 0 ? N : 1);
        long long y = cu_ld_label(lab, ldt, r);
        if (y < 0 || y >= C) cu_report(err, op, y, r, C, node);
        double lse = row_lse(x, r, C);
        for (int64_t j = 0; j < C; j++) {
            double p = exp((double)cu_ld(x, r * C + j) - lse);
            cu_st(out, r * C + j, (typename cu_acc<T>::type)((p - (j == y ? 1.0 : 0.0)) * k));
        }
    }
}

template <typename T>
__global__ void xent_kernel(const T *x, const T *z, T *out, int64_t N, int64_t C) {
    double tot = 0.0;
    for (int64_t r = threadIdx.x; r < N; r += RB) {
        double lse = row_lse(x, r, C);
        for (int64_t j = 0; j < C; j++) {
            double zj = (double)cu_ld(z, r * C + j);
            if (zj != 0.0) tot += zj * (lse - (double)cu_ld(x, r * C + j));
        }
    }
    tot = block_sum(tot);
    if (threadIdx.x == 0) cu_st(out, 0, (typename cu_acc<T>::type)(N > 0 ? tot / (double)N : 0.0));
}

template <typename T>
__global__ void xent_grad_kernel(const T *x, const T *z, const T *dy, T *out, int64_t N, int64_t C) {
    CU_LOOP(r, N) {
        double k = (double)cu_ld(dy, 0) / (double)(N > 0 ? N : 1);
        double lse = row_lse(x, r, C), sz = 0.0;
        for (int64_t j = 0; j < C; j++) sz += (double)cu_ld(z, r * C + j);
        for (int64_t j = 0; j < C; j++) {
            int64_t i = r * C + j;
            double p = exp((double)cu_ld(x, i) - lse);
            cu_st(out, i, (typename cu_acc<T>::type)((p * sz - (double)cu_ld(z, i)) * k));
        }
    }
}

/* ---- element sums in two passes: SIGMOID_XENT, MSE (broadcast), GLOBAL_NORM ---- */
typedef struct bshape { int rank; int64_t dim[KILN_MAX_DIMS]; } bshape;

__device__ __forceinline__ int64_t bcast_index(int64_t i, const bshape &out, const bshape &in) {
    return kiln_bcast_index(i, out.dim, out.rank, in.dim, in.rank);
}

typedef struct sum_args {
    int mode;                 /* 0 sigmoid xent, 1 mse, 2 global norm */
    int n;                    /* inputs (global norm) */
    const void *p[8];
    int dt[8];
    int64_t numel[8];
    bshape o, a, b;           /* mse broadcast shapes */
} sum_args;

__device__ __forceinline__ double sum_term(const sum_args &g, int k, int64_t i) {
    if (g.mode == 0) {
        double v = cu_ld_any(g.p[0], g.dt[0], i), z = cu_ld_any(g.p[1], g.dt[1], i);
        return (v > 0.0 ? v : 0.0) - v * z + log1p(exp(-fabs(v)));
    }
    if (g.mode == 1) {
        double d = cu_ld_any(g.p[0], g.dt[0], bcast_index(i, g.o, g.a)) - cu_ld_any(g.p[1], g.dt[1], bcast_index(i, g.o, g.b));
        return d * d;
    }
    double v = cu_ld_any(g.p[k], g.dt[k], i);
    return v * v;
}

__global__ void sum_pass1(sum_args g, double *part) {
    double acc = 0.0;
    int nk = g.mode == 2 ? g.n : 1;
    for (int k = 0; k < nk; k++)
        for (int64_t i = (int64_t)blockIdx.x * RB + threadIdx.x; i < g.numel[k]; i += (int64_t)RB * gridDim.x)
            acc += sum_term(g, k, i);
    acc = block_sum(acc);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

__global__ void sum_pass2(const double *part, int nparts, void *out, int odt, int mode, int64_t count) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < nparts; i += RB) acc += part[i];
    acc = block_sum(acc);
    if (threadIdx.x != 0) return;
    double r = mode == 2 ? sqrt(acc) : count > 0 ? acc / (double)count : 0.0;
    if (odt == KILN_F32) ((float *)out)[0] = (float)r;
    else if (odt == KILN_F64) ((double *)out)[0] = r;
    else if (odt == KILN_F16) ((__half *)out)[0] = __float2half_rn((float)r);
    else ((__nv_bfloat16 *)out)[0] = __float2bfloat16_rn((float)r);
}

static kiln_status k_sum(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    sum_args g;
    memset(&g, 0, sizeof g);
    g.mode = n->op == KILN_OP_SIGMOID_XENT ? 0 : n->op == KILN_OP_MSE ? 1 : 2;
    int64_t count;
    if (g.mode == 2) {
        g.n = c->n_in;
        for (int k = 0; k < c->n_in; k++) { g.p[k] = c->in[k].data; g.dt[k] = c->in[k].dtype; g.numel[k] = c->in[k].numel; }
        count = 1;
    } else {
        for (int k = 0; k < 2; k++) { g.p[k] = c->in[k].data; g.dt[k] = c->in[k].dtype; }
        if (g.mode == 0) count = c->in[0].numel;
        else {
            kiln_shape a = c->in[0].shape, b = c->in[1].shape;
            g.o.rank = a.rank > b.rank ? a.rank : b.rank;
            for (int d = 0; d < g.o.rank; d++) {
                int ia = d - (g.o.rank - a.rank), ib = d - (g.o.rank - b.rank);
                int64_t da = ia >= 0 ? a.dim[ia] : 1, db = ib >= 0 ? b.dim[ib] : 1;
                g.o.dim[d] = da == 1 ? db : da;
            }
            g.a.rank = a.rank; g.b.rank = b.rank;
            for (int d = 0; d < a.rank; d++) g.a.dim[d] = a.dim[d];
            for (int d = 0; d < b.rank; d++) g.b.dim[d] = b.dim[d];
            count = 1;
            for (int d = 0; d < g.o.rank; d++) count *= g.o.dim[d];
        }
        g.numel[0] = count;
    }
    if (!c->workspace || c->ws_bytes < CU_RED_BLOCKS * sizeof(double))
        return cu_fail(KILN_INTERNAL, "%s: reduction workspace missing", n->name);
    cudaStream_t s = cu_stream();
    CU_LAUNCH(sum_pass1, CU_RED_BLOCKS, RB, 0, s)(g, (double *)c->workspace);
    CU_LAUNCH(sum_pass2, 1, RB, 0, s)((const double *)c->workspace, CU_RED_BLOCKS, c->out.data, (int)c->out.dtype, g.mode, count);
    return cu_launch_check(c);
}

template <typename T>
__global__ void sigmoid_xent_grad_kernel(const T *x, const T *z, const T *dy, T *out, int64_t n) {
    CU_LOOP(i, n) {
        double k = (double)cu_ld(dy, 0) / (double)(n > 0 ? n : 1);
        double v = (double)cu_ld(x, i);
        double sg = v >= 0.0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
        cu_st(out, i, (typename cu_acc<T>::type)((sg - (double)cu_ld(z, i)) * k));
    }
}

static kiln_status k_loss(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    cu_device *d = cu_dev();
    if (!d) return KILN_DEVICE_ERROR;
    cudaStream_t s = d->stream;
    int64_t N = c->in[0].shape.rank > 0 ? c->in[0].shape.dim[0] : 1;
    int64_t C = c->in[0].shape.rank > 1 ? c->in[0].shape.dim[1] : 1;
    int op = (int)n->op;
    unsigned long long node = (unsigned long long)(uintptr_t)n;
    const void *x = c->in[0].data, *l = c->in[1].data;
    int ldt = (int)c->in[1].dtype;
    switch (n->op) {
    case KILN_OP_SPARSE_SOFTMAX_XENT:
        CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(sparse_xent_kernel<T>, 1, RB, 0, s)((const T *)x, l, ldt, (T *)c->out.data, N, C, d->err_dev, op, node))
        break;
    case KILN_OP_SPARSE_SOFTMAX_XENT_GRAD:
        if (N == 0) return KILN_OK;
        CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(sparse_xent_grad_kernel<T>, cu_blocks(N), CU_THREADS, 0, s)(
            (const T *)x, l, ldt, (const T *)c->in[2].data, (T *)c->out.data, N, C, d->err_dev, op, node))
        break;
    case KILN_OP_SOFTMAX_XENT:
        CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(xent_kernel<T>, 1, RB, 0, s)((const T *)x, (const T *)l, (T *)c->out.data, N, C))
        break;
    case KILN_OP_SOFTMAX_XENT_GRAD:
        if (N == 0) return KILN_OK;
        CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(xent_grad_kernel<T>, cu_blocks(N), CU_THREADS, 0, s)(
            (const T *)x, (const T *)l, (const T *)c->in[2].data, (T *)c->out.data, N, C))
        break;
    case KILN_OP_SIGMOID_XENT_GRAD: {
        int64_t ne = c->out.numel;
        if (ne == 0) return KILN_OK;
        CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(sigmoid_xent_grad_kernel<T>, cu_blocks(ne), CU_THREADS, 0, s)(
            (const T *)x, (const T *)l, (const T *)c->in[2].data, (T *)c->out.data, ne))
        break;
    }
    default:
        return cu_fail(KILN_INTERNAL, "%s: not a loss", n->name);
    }
    return cu_launch_check(c);
}

/* ---- Equal, Accuracy ---- */
__global__ void equal_kernel(const void *a, int adt, const void *b, int bdt, uint8_t *out, int64_t n, bshape o, bshape as, bshape bs,
                             bool ints) {
    CU_LOOP(i, n) {
        int64_t ia = bcast_index(i, o, as), ib = bcast_index(i, o, bs);
        bool eq = ints ? cu_ld_label(a, adt, ia) == cu_ld_label(b, bdt, ib) : cu_ld_any(a, adt, ia) == cu_ld_any(b, bdt, ib);
        out[i] = eq ? 1 : 0;
    }
}

static bshape bs_of(kiln_shape s) { bshape r; r.rank = s.rank; for (int d = 0; d < KILN_MAX_DIMS; d++) r.dim[d] = d < s.rank ? s.dim[d] : 1; return r; }

static kiln_status k_equal(const kiln_kctx *c) {
    int64_t n = c->out.numel;
    if (n == 0) return KILN_OK;
    kiln_dtype a = c->in[0].dtype, b = c->in[1].dtype;
    bool ints = !cu_is_float(a) && !cu_is_float(b);
    CU_LAUNCH(equal_kernel, cu_blocks(n), CU_THREADS, 0, cu_stream())(c->in[0].data, (int)a, c->in[1].data, (int)b, (uint8_t *)c->out.data, n,
                                                               bs_of(c->out.shape), bs_of(c->in[0].shape), bs_of(c->in[1].shape), ints);
    return cu_launch_check(c);
}

__global__ void accuracy_kernel(const void *x, int xdt, const void *lab, int ldt, void *out, int odt, int64_t N, int64_t C) {
    double hits = 0.0;
    for (int64_t r = threadIdx.x; r < N; r += RB) {
        int64_t best = 0;
        double bv = cu_ld_any(x, xdt, r * C);
        for (int64_t k = 1; k < C && !isnan(bv); k++) {
            double v = cu_ld_any(x, xdt, r * C + k);
            if (v > bv || isnan(v)) { bv = v; best = k; }
        }
        if (best == cu_ld_label(lab, ldt, r)) hits += 1.0;
    }
    hits = block_sum(hits);
    if (threadIdx.x == 0) {
        double v = N > 0 ? hits / (double)N : 0.0;
        if (odt == KILN_F64) ((double *)out)[0] = v; else ((float *)out)[0] = (float)v;
    }
}

static kiln_status k_accuracy(const kiln_kctx *c) {
    int64_t N = c->in[0].shape.dim[0], C = c->in[0].shape.dim[1];
    CU_LAUNCH(accuracy_kernel, 1, RB, 0, cu_stream())(c->in[0].data, (int)c->in[0].dtype, c->in[1].data, (int)c->in[1].dtype, c->out.data,
                                               (int)c->out.dtype, N, C);
    return cu_launch_check(c);
}

/* ---- optimizers ---- */
enum { OPT_SGD, OPT_ADAM, OPT_RMSPROP, OPT_ADAGRAD };

typedef struct opt_args {
    int kind;
    const void *lr; int lr_dt;
    const float *t;          /* Adam's step slot (f32 scalar) */
    double m, b1, b2, eps, rho, wd;
    bool nesterov, has_slot2;
} opt_args;

/* out: the op's scalar 0, written here when no finish kernel follows (not Adam). */
template <typename T>
__global__ void opt_kernel(T *w, const T *gr, T *s1, T *s2, int64_t n, opt_args a, float *out) {
    typedef typename cu_acc<T>::type Cc;
    if (out && blockIdx.x == 0 && threadIdx.x == 0) out[0] = 0.0f;
    double lr = cu_ld_any(a.lr, a.lr_dt, 0), alpha = 0.0;
    if (isnan(lr) || isinf(lr)) return;          /* a non-finite lr skips the update (loss scaling) */
    if (a.kind == OPT_ADAM) {
        double t = (double)a.t[0] + 1.0;
        alpha = lr * sqrt(1.0 - pow(a.b2, t)) / (1.0 - pow(a.b1, t));
    }
    CU_LOOP(i, n) {
        double x = (double)cu_ld(w, i), g = (double)cu_ld(gr, i);
        switch (a.kind) {
        case OPT_SGD:
            if (a.wd > 0.0) x -= lr * a.wd * x;
            if (s1) {
                double v = a.m * (double)cu_ld(s1, i) - lr * g;
                cu_st(s1, i, (Cc)v);
                x += a.nesterov ? a.m * v - lr * g : v;
            } else {
                x -= lr * g;
            }
            break;
        case OPT_ADAM: {
            double m = (double)cu_ld(s1, i), v = (double)cu_ld(s2, i);
            if (a.wd > 0.0) x -= lr * a.wd * x;
            m += (g - m) * (1.0 - a.b1);
            v += (g * g - v) * (1.0 - a.b2);
            cu_st(s1, i, (Cc)m);
            cu_st(s2, i, (Cc)v);
            x -= alpha * m / (sqrt(v) + a.eps);
            break;
        }
        case OPT_RMSPROP: {
            double s = a.rho * (double)cu_ld(s1, i) + (1.0 - a.rho) * g * g;
            cu_st(s1, i, (Cc)s);
            double inc = lr * g / sqrt(s + a.eps);
            if (s2) {
                double mm = a.m * (double)cu_ld(s2, i) + inc;
                cu_st(s2, i, (Cc)mm);
                inc = mm;
            }
            x -= inc;
            break;
        }
        default: {
            double s = (double)cu_ld(s1, i) + g * g;
            cu_st(s1, i, (Cc)s);
            x -= lr * g / sqrt(s + a.eps);
            break;
        }
        }
        cu_st(w, i, (Cc)x);
    }
}

/* Adam's t += 1 after every element has read the old t (stream order: a separate kernel, since
 * blocks of opt_kernel may start after another has finished), then the op's 0. */
__global__ void opt_finish_kernel(float *t, const void *lr, int lr_dt, float *out) {
    double l = cu_ld_any(lr, lr_dt, 0);
    if (t && !isnan(l) && !isinf(l)) t[0] = (float)((double)t[0] + 1.0);
    out[0] = 0.0f;
}

static kiln_status k_opt(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    const kiln_attrs *at = &n->attrs;
    opt_args a;
    memset(&a, 0, sizeof a);
    a.kind = n->op == KILN_OP_APPLY_SGD ? OPT_SGD : n->op == KILN_OP_APPLY_ADAM ? OPT_ADAM : n->op == KILN_OP_APPLY_RMSPROP ? OPT_RMSPROP : OPT_ADAGRAD;
    a.lr = c->in[2].data; a.lr_dt = (int)c->in[2].dtype;
    a.m = at->momentum; a.b1 = at->beta1; a.b2 = at->beta2; a.eps = at->epsilon; a.rho = at->rho; a.wd = at->weight_decay;
    a.nesterov = at->nesterov;
    void *s1 = c->n_in > 3 ? c->in[3].data : NULL, *s2 = NULL;
    if (a.kind == OPT_ADAM) { s2 = c->in[4].data; a.t = (const float *)c->in[5].data; }
    if (a.kind == OPT_RMSPROP && c->n_in > 4) s2 = c->in[4].data;
    int64_t ne = c->in[0].numel;
    cudaStream_t s = cu_stream();
    bool finish = a.kind == OPT_ADAM || ne == 0;   /* else opt_kernel writes the op's 0: one kernel per variable */
    if (ne > 0) {
        CU_FLOAT_SWITCH(c->in[0].dtype, T, CU_LAUNCH(opt_kernel<T>, cu_blocks(ne), CU_THREADS, 0, s)(
            (T *)c->in[0].data, (const T *)c->in[1].data, (T *)s1, (T *)s2, ne, a, finish ? NULL : (float *)c->out.data))
    }
    if (finish) CU_LAUNCH(opt_finish_kernel, 1, 1, 0, s)(a.kind == OPT_ADAM ? (float *)c->in[5].data : NULL, a.lr, a.lr_dt,
                                                    (float *)c->out.data);
    return cu_launch_check(c);
}

__global__ void clip_scale_kernel(const void *norm, int ndt, float *out, double clip) {
    double v = cu_ld_any(norm, ndt, 0), s;
    if (isnan(v) || isinf(v)) s = NAN;
    else if (v <= clip || v == 0.0) s = 1.0;
    else s = clip / v;
    out[0] = (float)s;
}

static kiln_status k_clip_scale(const kiln_kctx *c) {
    CU_LAUNCH(clip_scale_kernel, 1, 1, 0, cu_stream())(c->in[0].data, (int)c->in[0].dtype, (float *)c->out.data, c->node->attrs.clip);
    return cu_launch_check(c);
}

static bool float_in(const kiln_node *n, int k) { return k < n->n_in && cu_is_float(n->in[k]->dtype); }

kiln_kernel_fn cu_loss_optim_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_SPARSE_SOFTMAX_XENT: case KILN_OP_SPARSE_SOFTMAX_XENT_GRAD:
        if (n->in[0]->shape.rank != 2 || !cu_is_float(n->dtype) || n->in[0]->dtype != n->dtype) return NULL;
        if (n->in[1]->dtype != KILN_I32 && n->in[1]->dtype != KILN_I64) return NULL;
        return n->op == KILN_OP_SPARSE_SOFTMAX_XENT || n->in[2]->dtype == n->dtype ? k_loss : NULL;
    case KILN_OP_SOFTMAX_XENT: case KILN_OP_SOFTMAX_XENT_GRAD:
        return n->in[0]->shape.rank == 2 && cu_is_float(n->dtype) && cu_all_dtype(n, n->dtype) ? k_loss : NULL;
    case KILN_OP_SIGMOID_XENT_GRAD:
        return cu_is_float(n->dtype) && cu_all_dtype(n, n->dtype) ? k_loss : NULL;
    case KILN_OP_SIGMOID_XENT: case KILN_OP_MSE:
        return cu_is_float(n->dtype) && float_in(n, 0) && float_in(n, 1) ? k_sum : NULL;
    case KILN_OP_GLOBAL_NORM:
        for (int k = 0; k < n->n_in; k++) if (!float_in(n, k)) return NULL;
        return n->n_in <= 8 && cu_is_float(n->dtype) ? k_sum : NULL;
    case KILN_OP_EQUAL:
        return k_equal;
    case KILN_OP_ACCURACY:
        if (n->in[0]->shape.rank != 2 || n->in[0]->dtype == KILN_BOOL) return NULL;
        if (n->in[1]->dtype != KILN_I32 && n->in[1]->dtype != KILN_I64) return NULL;
        return n->dtype == KILN_F32 || n->dtype == KILN_F64 ? k_accuracy : NULL;
    case KILN_OP_APPLY_SGD: case KILN_OP_APPLY_ADAM: case KILN_OP_APPLY_RMSPROP: case KILN_OP_APPLY_ADAGRAD:
        if (!cu_is_float(n->in[0]->dtype) || n->in[1]->dtype != n->in[0]->dtype || !float_in(n, 2) || n->dtype != KILN_F32) return NULL;
        if (n->op == KILN_OP_APPLY_ADAM && (n->n_in < 6 || n->in[5]->dtype != KILN_F32)) return NULL;
        return k_opt;
    case KILN_OP_CLIP_SCALE:
        return float_in(n, 0) && n->dtype == KILN_F32 ? k_clip_scale : NULL;
    default:
        return NULL;
    }
}

size_t cu_loss_optim_workspace(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_SIGMOID_XENT: case KILN_OP_MSE: case KILN_OP_GLOBAL_NORM:
        return cu_align(CU_RED_BLOCKS * sizeof(double));
    default:
        return 0;
    }
}
