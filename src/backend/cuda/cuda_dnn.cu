/* Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter through cuDNN (legacy convolution API),
 * NHWC activations. Kiln's filters are HWIO [kh, kw, Cin/g, Cout]; cuDNN's NHWC filter layout is
 * KRSC [Cout, kh, kw, Cin/g], i.e. the transpose of the [kh*kw*Cin/g, Cout] matrix: the filter is
 * transposed into the workspace (and the filter gradient back out of it) with our own kernel.
 * cuDNN's legacy API takes symmetric padding only; for asymmetric pads (SAME with an even
 * window/stride) x is zero-padded into the workspace and the convolution runs unpadded (the
 * input gradient is computed padded and cropped).
 * Algorithms: chosen once per shape (cache keyed by GPU, op, dtype, geometry) with cudnnFind* at plan
 * time (workspace()), limited to KILN_CUDNN_WORKSPACE_MB (default 256) of cuDNN workspace, or
 * cudnnGet*_v7 heuristics when benchmarking is impossible (during graph capture). KILN_DETERMINISTIC=1
 * keeps only deterministic algorithms and takes the heuristics' choice without timing, so two
 * processes pick the same algorithm (cudnnFind ranks by measured time, which varies run to run).
 * KILN_CUDNN_EXACT=1 leaves out the FFT and Winograd algorithms, whose transforms round
 * differently and spread a NaN or Inf over a whole tile: the op conformance tests set it. f32 may use TF32 tensor cores (CUDNN_DEFAULT_MATH) unless
 * KILN_CUDA_TF32=0 (CUDNN_FMA_MATH): PyTorch's default for convolutions. */
#include <limits.h>
#include <stdlib.h>
#include "backend/cuda/cuda_internal.cuh"

typedef struct conv_key {
    int dev;                                  /* the GPU: algorithms were timed with its handle */
    int op, dtype, groups;                    /* dtype: cuDNN's (the inputs', for a mixed node) */
    int mixed;                                /* acc_f32: half inputs, f32 output (via a half buffer) */
    int64_t N, H, W, C, OH, OW, CO;
    int kh, kw, sh, sw, dh, dw, pt, pb, pl, pr;
} conv_key;

typedef struct conv_entry {
    conv_key k;
    bool prepad, found;
    int64_t Hp, Wp;                           /* x's size as cuDNN sees it */
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int algo;
    cudnnMathType_t math;
    size_t ws;                                /* cuDNN's workspace for algo */
} conv_entry;

#define CONV_CACHE 256
static conv_entry *cache[CONV_CACHE];
static int n_cache;

static bool key_of(const kiln_node *n, conv_key *k) {
    kiln_shape x, w, y;
    if (!kiln_conv_shapes(n, &x, &w, &y)) return false;
    const kiln_attrs *a = &n->attrs;
    memset(k, 0, sizeof *k);
    k->dev = cu_cur;
    k->op = n->op; k->dtype = n->dtype; k->groups = a->groups > 0 ? a->groups : 1;
    if (a->acc_f32) { k->dtype = n->in[0]->dtype; k->mixed = 1; }
    k->N = x.dim[0]; k->H = x.dim[1]; k->W = x.dim[2]; k->C = x.dim[3];
    k->OH = y.dim[1]; k->OW = y.dim[2]; k->CO = y.dim[3];
    k->kh = (int)w.dim[0]; k->kw = (int)w.dim[1];
    k->sh = a->sh; k->sw = a->sw; k->dh = a->dh > 0 ? a->dh : 1; k->dw = a->dw > 0 ? a->dw : 1;
    k->pt = a->pt; k->pb = a->pb; k->pl = a->pl; k->pr = a->pr;
    if (w.dim[2] * k->groups != k->C || w.dim[3] != k->CO) return false;
    const int64_t dims[7] = { k->N, k->H, k->W, k->C, k->OH, k->OW, k->CO };
    for (int i = 0; i < 7; i++)
        if (dims[i] <= 0 || dims[i] > (1 << 30)) return false;
    /* cuDNN's strides are int: x (pre-padded too) and y must have fewer than 2^31 elements */
    double xe = (double)(k->H + k->pt + k->pb) * (double)(k->W + k->pl + k->pr) * (double)k->C * (double)k->N;
    if (xe > INT_MAX || (double)k->OH * (double)k->OW * (double)k->CO * (double)k->N > INT_MAX) return false;
    return k->sh > 0 && k->sw > 0;
}

static size_t es_of(int dt) { return dt == KILN_F32 ? 4 : 2; }
static cudnnDataType_t dnn_type(int dt) { return dt == KILN_F32 ? CUDNN_DATA_FLOAT : dt == KILN_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16; }
static size_t filter_bytes(const conv_key *k) { return cu_align((size_t)(k->kh * k->kw * (k->C / k->groups) * k->CO) * es_of(k->dtype)); }
/* A mixed node's result in the compute dtype, converted to the f32 output after. */
static int64_t out_numel(const conv_key *k) {
    return k->op == KILN_OP_CONV2D ? k->N * k->OH * k->OW * k->CO
         : k->op == KILN_OP_CONV2D_BWD_INPUT ? k->N * k->H * k->W * k->C : (int64_t)k->kh * k->kw * (k->C / k->groups) * k->CO;
}
static size_t mixed_bytes(const conv_key *k) { return k->mixed ? cu_align((size_t)out_numel(k) * es_of(k->dtype)) : 0; }

__global__ void half_to_f32_kernel(const void *x, int dt, float *y, int64_t n) {
    CU_LOOP(i, n) y[i] = (float)cu_ld_any(x, dt, i);
}

static size_t prepad_bytes(const conv_entry *e) {
    return e->prepad ? cu_align((size_t)(e->k.N * e->Hp * e->Wp * e->k.C) * es_of(e->k.dtype)) : 0;
}

static void entry_free(conv_entry *e) {
    if (!e) return;
    if (e->xd) cudnnDestroyTensorDescriptor(e->xd);
    if (e->yd) cudnnDestroyTensorDescriptor(e->yd);
    if (e->wd) cudnnDestroyFilterDescriptor(e->wd);
    if (e->cd) cudnnDestroyConvolutionDescriptor(e->cd);
    cu_host_free(e);
}

void cu_dnn_release(void) {
    for (int i = 0; i < n_cache; i++) entry_free(cache[i]);
    n_cache = 0;
}

static bool env_on(const char *name) { const char *v = getenv(name); return v && *v && *v != '0'; }

/* FFT / Winograd algorithms (KILN_CUDNN_EXACT leaves them out). */
static bool transform_algo(int op, int algo) {
    if (op == KILN_OP_CONV2D)
        return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
               algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    if (op == KILN_OP_CONV2D_BWD_INPUT)
        return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
               algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
           algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

/* Picks an algorithm with cuDNN's benchmark (find) or heuristics, within budget bytes. */
static bool choose_algo(conv_entry *e, bool find, size_t budget) {
    cu_device *d = cu_dev();
    if (!d) return false;
    bool det = env_on("KILN_DETERMINISTIC"), exact = env_on("KILN_CUDNN_EXACT");
    int got = 0;
    cudnnStatus_t st;
#define PICK(perf, cnt) \
    for (int i = 0; i < (cnt); i++) { \
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > budget) continue; \
        if (det && perf[i].determinism != CUDNN_DETERMINISTIC) continue; \
        if (exact && transform_algo(e->k.op, (int)perf[i].algo)) continue; \
        e->algo = (int)perf[i].algo; e->ws = perf[i].memory; e->math = perf[i].mathType; return true; \
    }
    if (e->k.op == KILN_OP_CONV2D) {
        cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        st = find ? cudnnFindConvolutionForwardAlgorithm(d->dnn, e->xd, e->wd, e->cd, e->yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, p)
                  : cudnnGetConvolutionForwardAlgorithm_v7(d->dnn, e->xd, e->wd, e->cd, e->yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, p);
        if (st == CUDNN_STATUS_SUCCESS) PICK(p, got)
    } else if (e->k.op == KILN_OP_CONV2D_BWD_INPUT) {
        cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        st = find ? cudnnFindConvolutionBackwardDataAlgorithm(d->dnn, e->wd, e->yd, e->cd, e->xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, p)
                  : cudnnGetConvolutionBackwardDataAlgorithm_v7(d->dnn, e->wd, e->yd, e->cd, e->xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, p);
        if (st == CUDNN_STATUS_SUCCESS) PICK(p, got)
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        st = find ? cudnnFindConvolutionBackwardFilterAlgorithm(d->dnn, e->xd, e->yd, e->cd, e->wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, p)
                  : cudnnGetConvolutionBackwardFilterAlgorithm_v7(d->dnn, e->xd, e->yd, e->cd, e->wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, p);
        if (st == CUDNN_STATUS_SUCCESS) PICK(p, got)
    }
#undef PICK
    cudaGetLastError();
    return false;
}

/* The cached entry for this node's convolution (created with heuristics on first sight); NULL
 * when cuDNN cannot run it. */
static conv_entry *entry_for(const kiln_node *n) {
    conv_key k;
    if (!key_of(n, &k)) return NULL;
    for (int i = 0; i < n_cache; i++)
        if (!memcmp(&cache[i]->k, &k, sizeof k)) return cache[i]->algo >= 0 ? cache[i] : NULL;
    if (n_cache == CONV_CACHE || !cu_dev()) return NULL;
    conv_entry *e = (conv_entry *)cu_host_calloc(sizeof *e);
    if (!e) return NULL;     /* out of memory: no cuDNN entry now, tried again next time */
    e->k = k;
    e->algo = -1;
    e->prepad = k.pt != k.pb || k.pl != k.pr;
    e->Hp = e->prepad ? k.H + k.pt + k.pb : k.H;
    e->Wp = e->prepad ? k.W + k.pl + k.pr : k.W;
    int ph = e->prepad ? 0 : k.pt, pw = e->prepad ? 0 : k.pl;
    cudnnDataType_t t = dnn_type(k.dtype);
    bool ok = cudnnCreateTensorDescriptor(&e->xd) == CUDNN_STATUS_SUCCESS &&
              cudnnCreateTensorDescriptor(&e->yd) == CUDNN_STATUS_SUCCESS &&
              cudnnCreateFilterDescriptor(&e->wd) == CUDNN_STATUS_SUCCESS &&
              cudnnCreateConvolutionDescriptor(&e->cd) == CUDNN_STATUS_SUCCESS &&
              cudnnSetTensor4dDescriptor(e->xd, CUDNN_TENSOR_NHWC, t, (int)k.N, (int)k.C, (int)e->Hp, (int)e->Wp) == CUDNN_STATUS_SUCCESS &&
              cudnnSetTensor4dDescriptor(e->yd, CUDNN_TENSOR_NHWC, t, (int)k.N, (int)k.CO, (int)k.OH, (int)k.OW) == CUDNN_STATUS_SUCCESS &&
              cudnnSetFilter4dDescriptor(e->wd, t, CUDNN_TENSOR_NHWC, (int)k.CO, (int)(k.C / k.groups), k.kh, k.kw) == CUDNN_STATUS_SUCCESS &&
              cudnnSetConvolution2dDescriptor(e->cd, ph, pw, k.sh, k.sw, k.dh, k.dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS &&
              cudnnSetConvolutionGroupCount(e->cd, k.groups) == CUDNN_STATUS_SUCCESS &&
              cudnnSetConvolutionMathType(e->cd, k.dtype == KILN_F32 && !cu.tf32_conv ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH) == CUDNN_STATUS_SUCCESS;
    /* cuDNN's output size must be ours */
    if (ok) {
        int on, oc, oh, ow;
        ok = cudnnGetConvolution2dForwardOutputDim(e->cd, e->xd, e->wd, &on, &oc, &oh, &ow) == CUDNN_STATUS_SUCCESS &&
             on == k.N && oc == k.CO && oh == k.OH && ow == k.OW;
    }
    if (ok) ok = choose_algo(e, false, cu.conv_ws_limit);
    cache[n_cache++] = e;     /* kept even when unsupported, so the answer is not recomputed */
    if (!ok) { e->algo = -1; return NULL; }
    return e;
}

size_t cu_dnn_workspace(const kiln_node *n) {
    conv_entry *e = entry_for(n);
    if (!e) return 0;
    cu_device *d = cu_dev();
    if (!e->found && d && !d->capturing && !env_on("KILN_DETERMINISTIC")) {
        conv_entry keep = *e;
        if (!choose_algo(e, true, cu.conv_ws_limit)) { e->algo = keep.algo; e->ws = keep.ws; e->math = keep.math; }
        e->found = true;
    }
    return filter_bytes(&e->k) + prepad_bytes(e) + mixed_bytes(&e->k) + cu_align(e->ws);
}

static kiln_status k_conv(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    conv_entry *e = entry_for(n);
    if (!e) return cu_fail(KILN_INTERNAL, "%s: no cuDNN algorithm for this convolution", n->name);
    cu_device *d = cu_dev();
    if (!d) return KILN_DEVICE_ERROR;
    const conv_key *k = &e->k;
    size_t es = es_of(k->dtype), fb = filter_bytes(k), pb = prepad_bytes(e), mb = mixed_bytes(k);
    if (c->ws_bytes < fb + pb + mb || !c->workspace)
        return cu_fail(KILN_INTERNAL, "%s: convolution workspace is %zu bytes, needs at least %zu", n->name, c->ws_bytes, fb + pb + mb);
    char *ws = (char *)c->workspace;
    void *wt = ws, *xp = ws + fb, *dws = ws + fb + pb + mb;
    void *out = k->mixed ? (void *)(ws + fb + pb) : c->out.data;    /* mixed: the half result, converted below */
    size_t avail = c->ws_bytes - fb - pb - mb;
    if (e->ws > avail && !choose_algo(e, false, avail))
        return cu_fail(KILN_INTERNAL, "%s: no cuDNN algorithm fits in %zu bytes of workspace", n->name, avail);
    cudnnSetConvolutionMathType(e->cd, e->math);
    int64_t R = (int64_t)k->kh * k->kw * (k->C / k->groups);
    int64_t xdim[4] = { k->N, k->H, k->W, k->C }, pdim[4] = { k->N, e->Hp, e->Wp, k->C }, before[4] = { 0, k->pt, k->pl, 0 };
    float one = 1.0f, zero = 0.0f;
    kiln_status s = KILN_OK;
    cudnnStatus_t st;
    if (k->op == KILN_OP_CONV2D) {
        if ((s = cu_transpose2d(c->in[1].data, wt, es, R, k->CO))) return s;
        const void *x = c->in[0].data;
        if (e->prepad) { if ((s = cu_pad4(x, xp, es, xdim, before, pdim))) return s; x = xp; }
        st = cudnnConvolutionForward(d->dnn, &one, e->xd, x, e->wd, wt, e->cd, (cudnnConvolutionFwdAlgo_t)e->algo, dws, e->ws,
                                     &zero, e->yd, out);
    } else if (k->op == KILN_OP_CONV2D_BWD_INPUT) {
        if ((s = cu_transpose2d(c->in[0].data, wt, es, R, k->CO))) return s;
        void *dx = e->prepad ? xp : out;
        st = cudnnConvolutionBackwardData(d->dnn, &one, e->wd, wt, e->yd, c->in[1].data, e->cd, (cudnnConvolutionBwdDataAlgo_t)e->algo,
                                          dws, e->ws, &zero, e->xd, dx);
        if (st == CUDNN_STATUS_SUCCESS && e->prepad) s = cu_crop4(xp, out, es, pdim, before, xdim);
    } else {
        const void *x = c->in[0].data;
        if (e->prepad) { if ((s = cu_pad4(x, xp, es, xdim, before, pdim))) return s; x = xp; }
        st = cudnnConvolutionBackwardFilter(d->dnn, &one, e->xd, x, e->yd, c->in[1].data, e->cd, (cudnnConvolutionBwdFilterAlgo_t)e->algo,
                                            dws, e->ws, &zero, e->wd, wt);
        if (st == CUDNN_STATUS_SUCCESS) s = cu_transpose2d(wt, out, es, k->CO, R);
    }
    if (st != CUDNN_STATUS_SUCCESS) {
        char what[200];
        snprintf(what, sizeof what, "%s (%s, algo %d)", n->name,
                 k->op == KILN_OP_CONV2D ? "cudnnConvolutionForward" : k->op == KILN_OP_CONV2D_BWD_INPUT ? "cudnnConvolutionBackwardData"
                                                                       : "cudnnConvolutionBackwardFilter", e->algo);
        return cu_dnn_check(st, what);
    }
    if (!s && k->mixed) {
        int64_t ne = out_numel(k);
        CU_LAUNCH(half_to_f32_kernel, cu_blocks(ne), CU_THREADS, 0, cu_stream())(out, k->dtype, (float *)c->out.data, ne);
        s = cu_launch_check(c);
    }
    return s ? s : cu_epilogue(c);
}

kiln_kernel_fn cu_dnn_kernel(const kiln_node *n) {
    if (n->op != KILN_OP_CONV2D && n->op != KILN_OP_CONV2D_BWD_INPUT && n->op != KILN_OP_CONV2D_BWD_FILTER) return NULL;
    bool mixed = n->attrs.acc_f32 && n->dtype == KILN_F32 && (n->in[0]->dtype == KILN_F16 || n->in[0]->dtype == KILN_BF16) &&
                 n->in[1]->dtype == n->in[0]->dtype;
    if (!mixed && (!cu_is_fhb(n->dtype) || !cu_all_dtype(n, n->dtype))) return NULL;
    return entry_for(n) ? k_conv : NULL;
}
