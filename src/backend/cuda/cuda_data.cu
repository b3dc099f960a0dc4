/* CUDA kernels for the data ops (src/ops/data_ops.c): GatherRows and RandomCropFlip. Both only
 * move elements, so they work on raw words: GatherRows on any dtype (rows copied in the widest
 * word the row size and alignment allow), RandomCropFlip on every float dtype (2-, 4- or 8-byte
 * elements; a zero fill is all-zero bits in each). A gather index outside [0, N) is reported
 * through the device error flag (sync() fails with KILN_INVALID_ARGUMENT), as the losses' labels. */
#include "backend/cuda/cuda_internal.cuh"

/* ---- GatherRows ---- */
/* rw words per row (0: empty rows, only the indices are checked); one thread per (row, word). */
template <typename W>
__global__ void gather_rows_kernel(const W *x, const void *idx, int idt, W *y, int64_t B, int64_t N, int64_t rw,
                                   cu_dev_error *err, int op, unsigned long long node) {
    int64_t rw1 = rw > 0 ? rw : 1;
    CU_LOOP(t, B * rw1) {
        int64_t b = t / rw1, w = t - b * rw1;
        long long k = cu_ld_label(idx, idt, b);
        if (k < 0 || k >= N) {
            if (w == 0) cu_report(err, op, k, b, N, node);
            continue;
        }
        if (rw > 0) y[b * rw + w] = x[(int64_t)k * rw + w];
    }
}

static kiln_status k_gather_rows(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    const kiln_view *x = &c->in[0], *idx = &c->in[1];
    int64_t N = x->shape.dim[0], B = idx->numel, inner = 1;
    for (int dd = 1; dd < x->shape.rank; dd++) inner *= x->shape.dim[dd];
    if (B == 0) return KILN_OK;
    cu_device *d = cu_dev();
    if (!d) return KILN_DEVICE_ERROR;
    size_t row = (size_t)inner * kiln_dtype_size_cu(x->dtype);
    uintptr_t al = (uintptr_t)x->data | (uintptr_t)c->out.data | (uintptr_t)row;
    cudaStream_t s = d->stream;
    int op = (int)n->op, idt = (int)idx->dtype;
    unsigned long long node = (unsigned long long)(uintptr_t)n;
#define GATHER(Wt) do { int64_t rw = (int64_t)(row / sizeof(Wt)); \
        CU_LAUNCH(gather_rows_kernel<Wt>, cu_blocks(B * (rw > 0 ? rw : 1)), CU_THREADS, 0, s)( \
            (const Wt *)x->data, idx->data, idt, (Wt *)c->out.data, B, N, rw, d->err_dev, op, node); } while (0)
    if (al % 16 == 0) GATHER(uint4);
    else if (al % 8 == 0) GATHER(unsigned long long);
    else if (al % 4 == 0) GATHER(unsigned int);
    else if (al % 2 == 0) GATHER(unsigned short);
    else GATHER(unsigned char);
#undef GATHER
    return cu_launch_check(c);
}

/* ---- RandomCropFlip: kiln_crop_flip_params (src/ops/data_ops.h) bit for bit ---- */
/* kiln_aug_rand_int: __dmul_rn so the product is rounded as on the host (no contraction) */
__device__ __forceinline__ int dd_rand_int(unsigned long long key, unsigned long long ctr, int n) {
    int v = (int)__dmul_rn(cu_uniform(key, ctr), (double)n);
    return v < n ? v : n - 1;
}
/* counters 0, 1, 2: KILN_AUG_CTR_CROP_Y, _CROP_X, _FLIP */
__device__ __forceinline__ void dd_crop_flip_params(unsigned long long key, int pad, double rate, int *dy, int *dx, bool *flip) {
    *dy = dd_rand_int(key, 0, 2 * pad + 1) - pad;
    *dx = dd_rand_int(key, 1, 2 * pad + 1) - pad;
    *flip = rate > 0 && cu_uniform(key, 2) < rate;
}

/* One thread per output pixel (b, i, j), copying its C elements. The draw depends only on the
 * example's key (an input), never on the session step, so a captured graph replays it as is. */
template <typename E>
__global__ void crop_flip_kernel(const E *x, const long long *keys, E *y, int64_t N, int64_t H, int64_t W, int64_t C, int pad,
                                 double rate) {
    CU_LOOP(p, N * H * W) {
        int64_t j = p % W, i = (p / W) % H, b = p / (W * H);
        int dy, dx;
        bool flip;
        dd_crop_flip_params((unsigned long long)keys[b], pad, rate, &dy, &dx, &flip);
        int64_t si = i + dy, sj = (flip ? W - 1 - j : j) + dx;
        E *o = y + p * C;
        if (si >= 0 && si < H && sj >= 0 && sj < W) {
            const E *s = x + ((b * H + si) * W + sj) * C;
            for (int64_t ch = 0; ch < C; ch++) o[ch] = s[ch];
        } else {
            for (int64_t ch = 0; ch < C; ch++) o[ch] = (E)0;
        }
    }
}

static kiln_status k_random_crop_flip(const kiln_kctx *c) {
    const kiln_attrs *a = &c->node->attrs;
    const kiln_view *x = &c->in[0];
    const long long *keys = (const long long *)c->in[1].data;
    int64_t N = x->shape.dim[0], H = x->shape.dim[1], W = x->shape.dim[2], C = x->shape.dim[3];
    size_t es = kiln_dtype_size_cu(c->out.dtype);
    int64_t n = c->out.numel;
    if (n == 0) return KILN_OK;
    cudaStream_t s = cu_stream();
    if (!a->training || (a->kh == 0 && a->rate <= 0.0)) {
        if (c->out.data == x->data) return KILN_OK;
        return cu_check(cudaMemcpyAsync(c->out.data, x->data, (size_t)n * es, cudaMemcpyDeviceToDevice, s), "RandomCropFlip copy");
    }
    unsigned blocks = cu_blocks(N * H * W);
    switch (es) {
    case 2: CU_LAUNCH(crop_flip_kernel<unsigned short>, blocks, CU_THREADS, 0, s)((const unsigned short *)x->data, keys,
                                                                          (unsigned short *)c->out.data, N, H, W, C, a->kh, a->rate); break;
    case 4: CU_LAUNCH(crop_flip_kernel<unsigned int>, blocks, CU_THREADS, 0, s)((const unsigned int *)x->data, keys,
                                                                        (unsigned int *)c->out.data, N, H, W, C, a->kh, a->rate); break;
    case 8: CU_LAUNCH(crop_flip_kernel<unsigned long long>, blocks, CU_THREADS, 0, s)((const unsigned long long *)x->data, keys,
                                                                              (unsigned long long *)c->out.data, N, H, W, C, a->kh, a->rate); break;
    default: return cu_fail(KILN_UNSUPPORTED, "cuda RandomCropFlip: %zu-byte elements not handled", es);
    }
    return cu_launch_check(c);
}

kiln_kernel_fn cu_data_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_GATHER_ROWS:
        return (n->in[1]->dtype == KILN_I32 || n->in[1]->dtype == KILN_I64) ? k_gather_rows : NULL;
    case KILN_OP_RANDOM_CROP_FLIP:
        return cu_is_float(n->dtype) && n->in[0]->dtype == n->dtype && n->in[1]->dtype == KILN_I64 ? k_random_crop_flip : NULL;
    default:
        return NULL;
    }
}
