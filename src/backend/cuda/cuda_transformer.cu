/* CUDA kernels for Embedding, EmbeddingGrad and LayerNorm (+ its gradient ops), f32 and f64,
 * following ref: row statistics by two passes in double. Simple and deterministic first (not
 * tuned): EmbeddingGrad runs one thread per embedding column over the positions in order (ref's
 * order, no atomics), LayerNorm one thread per row, dgamma one thread per column over the rows
 * with the row statistics computed once into the workspace ([R] means and [R] rstds, double).
 * An id outside [0, V) is reported through the device error flag (sync() fails naming it). */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"

/* f32 and f64 only (the lookup refuses other dtypes). */
#define F32_F64_SWITCH(dt, T, ...) \
    switch (dt) { \
    case KILN_F32: { typedef float T; __VA_ARGS__; } break; \
    case KILN_F64: { typedef double T; __VA_ARGS__; } break; \
    default: return cu_fail(KILN_UNSUPPORTED, "cuda: dtype %d not handled", (int)(dt)); \
    }

static bool f32_or_f64(kiln_dtype t) { return t == KILN_F32 || t == KILN_F64; }

/* ---- Embedding: one thread per (position, column) ---- */
template <typename T>
__global__ void embedding_kernel(const T *tab, const void *ids, int idt, T *y, int64_t N, int64_t V, int64_t D,
                                 cu_dev_error *err, int op, unsigned long long node) {
    CU_LOOP(t, N * D) {
        int64_t p = t / D, d = t - p * D;
        long long id = cu_ld_label(ids, idt, p);
        if (id < 0 || id >= V) {
            if (d == 0) cu_report(err, op, id, p, V, node);
            continue;
        }
        y[t] = tab[id * D + d];
    }
}

/* Ids checked once per position (the grad kernel reads them per column). */
__global__ void check_ids_kernel(const void *ids, int idt, int64_t N, int64_t V, cu_dev_error *err, int op, unsigned long long node) {
    CU_LOOP(p, N) {
        long long id = cu_ld_label(ids, idt, p);
        if (id < 0 || id >= V) cu_report(err, op, id, p, V, node);
    }
}

template <typename T>
__global__ void embedding_grad_kernel(const void *ids, int idt, const T *dy, T *y, int64_t N, int64_t V, int64_t D) {
    CU_LOOP(d, D) {
        for (int64_t v = 0; v < V; v++) y[v * D + d] = (T)0;
        for (int64_t p = 0; p < N; p++) {
            long long id = cu_ld_label(ids, idt, p);
            if (id >= 0 && id < V) y[id * D + d] += dy[p * D + d];
        }
    }
}

static kiln_status k_embedding(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    bool grad = n->op == KILN_OP_EMBEDDING_GRAD;
    const kiln_view *ids = &c->in[grad ? 0 : 1];
    int64_t V = grad ? c->out.shape.dim[0] : c->in[0].shape.dim[0], D = grad ? c->out.shape.dim[1] : c->in[0].shape.dim[1];
    int64_t N = ids->numel;
    cu_device *d = cu_dev();
    if (!d) return KILN_DEVICE_ERROR;
    int op = (int)n->op, idt = (int)ids->dtype;
    unsigned long long node = (unsigned long long)(uintptr_t)n;
    cudaStream_t s = d->stream;
    if (!grad) {
        if (N * D > 0)
            F32_F64_SWITCH(c->out.dtype, T, CU_LAUNCH(embedding_kernel<T>, cu_blocks(N * D), CU_THREADS, 0, s)(
                (const T *)c->in[0].data, ids->data, idt, (T *)c->out.data, N, V, D, d->err_dev, op, node))
        else if (N > 0)
            CU_LAUNCH(check_ids_kernel, cu_blocks(N), CU_THREADS, 0, s)(ids->data, idt, N, V, d->err_dev, op, node);
        return cu_launch_check(c);
    }
    if (N > 0) CU_LAUNCH(check_ids_kernel, cu_blocks(N), CU_THREADS, 0, s)(ids->data, idt, N, V, d->err_dev, op, node);
    if (D > 0)
        F32_F64_SWITCH(c->out.dtype, T, CU_LAUNCH(embedding_grad_kernel<T>, cu_blocks(D), CU_THREADS, 0, s)(
            ids->data, idt, (const T *)c->in[1].data, (T *)c->out.data, N, V, D))
    return cu_launch_check(c);
}

/* ---- LayerNorm ---- */
template <typename T>
__device__ void ln_stats(const T *x, int64_t D, double eps, double *mean, double *rstd) {
    double m = 0.0, v = 0.0;
    for (int64_t d = 0; d < D; d++) m += (double)x[d];
    m = D > 0 ? m / (double)D : 0.0;
    for (int64_t d = 0; d < D; d++) { double e = (double)x[d] - m; v += e * e; }
    v = D > 0 ? v / (double)D : 0.0;
    *mean = m;
    *rstd = 1.0 / sqrt(v + eps);
}

template <typename T>
__global__ void ln_kernel(const T *x, const T *ga, const T *be, T *y, int64_t R, int64_t D, double eps) {
    CU_LOOP(r, R) {
        double m, rs;
        ln_stats(x + r * D, D, eps, &m, &rs);
        for (int64_t d = 0; d < D; d++) y[r * D + d] = (T)(((double)x[r * D + d] - m) * rs * (double)ga[d] + (double)be[d]);
    }
}

template <typename T>
__global__ void ln_grad_kernel(const T *x, const T *ga, const T *dy, T *y, int64_t R, int64_t D, double eps) {
    CU_LOOP(r, R) {
        const T *xr = x + r * D, *g = dy + r * D;
        double m, rs, sg = 0.0, sgx = 0.0;
        ln_stats(xr, D, eps, &m, &rs);
        for (int64_t d = 0; d < D; d++) {
            double gg = (double)g[d] * (double)ga[d];
            sg += gg;
            sgx += gg * ((double)xr[d] - m) * rs;
        }
        sg /= (double)D;
        sgx /= (double)D;
        for (int64_t d = 0; d < D; d++) {
            double gg = (double)g[d] * (double)ga[d];
            y[r * D + d] = (T)(rs * (gg - sg - ((double)xr[d] - m) * rs * sgx));
        }
    }
}

template <typename T>
__global__ void ln_row_stats_kernel(const T *x, int64_t R, int64_t D, double eps, double *mean, double *rstd) {
    CU_LOOP(r, R) ln_stats(x + r * D, D, eps, &mean[r], &rstd[r]);
}

template <typename T>
__global__ void ln_gamma_grad_kernel(const T *x, const T *dy, T *y, int64_t R, int64_t D, const double *mean, const double *rstd) {
    CU_LOOP(d, D) {
        double acc = 0.0;
        for (int64_t r = 0; r < R; r++) acc += (double)dy[r * D + d] * ((double)x[r * D + d] - mean[r]) * rstd[r];
        y[d] = (T)acc;
    }
}

static kiln_status k_layer_norm(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    const kiln_view *x = &c->in[0];
    int64_t D = x->shape.rank > 0 ? x->shape.dim[x->shape.rank - 1] : 1, R = D > 0 ? x->numel / D : 0;
    double eps = n->attrs.epsilon;
    cudaStream_t s = cu_stream();
    if (R == 0) return KILN_OK;
    switch (n->op) {
    case KILN_OP_LAYER_NORM:
        F32_F64_SWITCH(x->dtype, T, CU_LAUNCH(ln_kernel<T>, cu_blocks(R), CU_THREADS, 0, s)(
            (const T *)x->data, (const T *)c->in[1].data, (const T *)c->in[2].data, (T *)c->out.data, R, D, eps))
        break;
    case KILN_OP_LAYER_NORM_GRAD:
        F32_F64_SWITCH(x->dtype, T, CU_LAUNCH(ln_grad_kernel<T>, cu_blocks(R), CU_THREADS, 0, s)(
            (const T *)x->data, (const T *)c->in[1].data, (const T *)c->in[2].data, (T *)c->out.data, R, D, eps))
        break;
    default: {
        double *mean = (double *)c->workspace, *rstd = mean + R;
        F32_F64_SWITCH(x->dtype, T,
            CU_LAUNCH(ln_row_stats_kernel<T>, cu_blocks(R), CU_THREADS, 0, s)((const T *)x->data, R, D, eps, mean, rstd);
            CU_LAUNCH(ln_gamma_grad_kernel<T>, cu_blocks(D), CU_THREADS, 0, s)(
                (const T *)x->data, (const T *)c->in[1].data, (T *)c->out.data, R, D, mean, rstd))
    }
    }
    return cu_launch_check(c);
}

kiln_kernel_fn cu_transformer_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_EMBEDDING: case KILN_OP_EMBEDDING_GRAD:
        return f32_or_f64(n->dtype) && n->in[n->op == KILN_OP_EMBEDDING ? 0 : 1]->dtype == n->dtype ? k_embedding : NULL;
    case KILN_OP_LAYER_NORM: case KILN_OP_LAYER_NORM_GRAD: case KILN_OP_LAYER_NORM_GAMMA_GRAD:
        return f32_or_f64(n->dtype) && cu_all_dtype(n, n->dtype) ? k_layer_norm : NULL;
    case KILN_OP_ATTENTION: case KILN_OP_ATTENTION_GRAD:
        return cu_attention_kernel(n);
    default:
        return NULL;
    }
}

size_t cu_transformer_workspace(const kiln_node *n) {
    if (n->op == KILN_OP_ATTENTION_GRAD) return cu_attention_workspace(n);
    if (n->op != KILN_OP_LAYER_NORM_GAMMA_GRAD) return 0;
    kiln_shape xs = n->in[0]->shape;
    int64_t D = xs.rank > 0 ? xs.dim[xs.rank - 1] : 1, R = D > 0 ? cu_numel(xs) / D : 0;
    return cu_align((size_t)(2 * R) * sizeof(double));
}
