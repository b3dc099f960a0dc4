/* Pooling and batch norm through cuDNN (legacy API, NHWC) where cuDNN computes what
 * src/ops/SEMANTICS.md says; everything else runs our own kernels (cuda_pool.cu, cuda_norm.cu):
 * - MaxPool, AvgPool and AvgPoolGrad with symmetric padding (VALID, or SAME with an even total
 *   pad): CUDNN_POOLING_MAX with CUDNN_PROPAGATE_NAN (padding never wins; a window holding a NaN
 *   gives NaN) and CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING. SAME with an odd total pad puts the
 *   extra cell at the bottom/right, which cuDNN cannot express. MaxPoolGrad stays ours: cuDNN does
 *   not say which of tied maxima gets the gradient, nor what a NaN window sends, and SEMANTICS.md
 *   fixes both (the first max; nothing).
 * - FusedBatchNorm (training and inference), FusedBatchNormGrad (dx) and BatchNormGammaGrad
 *   (dgamma) in f32, CUDNN_BATCHNORM_SPATIAL: exponentialAverageFactor = 1 - momentum, and cuDNN's
 *   running variance takes the unbiased batch variance, as ours. dx and dgamma are separate graph
 *   ops, so each runs cudnnBatchNormalizationBackward and keeps its part (the rest goes to the
 *   workspace). f16/bf16 stay ours: cuDNN keeps their scale/statistics in f32, Kiln in x's dtype.
 *   Training needs 2 or more rows per channel (the unbiased variance divides by M - 1).
 * A cuDNN that refuses a call (NOT_SUPPORTED, BAD_PARAM) gets our kernel for that shape from then on.
 * KILN_CUDA_OWN_POOL_NORM=1 keeps all of these on our kernels (A/B in tests/gpu/run.sh). */
#include <limits.h>
#include <stdlib.h>
#include "backend/cuda/cuda_internal.cuh"

typedef struct ops_key {
    int dev;                                  /* the GPU (its cuDNN may refuse what another's runs) */
    int op, dtype;
    bool training;
    int N, H, W, C, OH, OW, kh, kw, sh, sw, ph, pw;
} ops_key;

typedef struct ops_entry {
    ops_key k;
    bool ok;                                  /* false: cuDNN said no, use ours */
    cudnnTensorDescriptor_t xd, yd, bnd;
    cudnnPoolingDescriptor_t pd;
} ops_entry;

#define OPS_CACHE 256
static ops_entry *cache[OPS_CACHE];
static int n_cache;

static bool is_pool(int op) { return op == KILN_OP_MAX_POOL || op == KILN_OP_AVG_POOL || op == KILN_OP_AVG_POOL_GRAD; }
static bool is_bn(int op) { return op == KILN_OP_BATCH_NORM || op == KILN_OP_BATCH_NORM_GRAD || op == KILN_OP_BN_GRAD_GAMMA; }
static bool fits_int(int64_t v) { return v > 0 && v <= (1 << 30); }

static bool own_only(void) {
    const char *v = getenv("KILN_CUDA_OWN_POOL_NORM");
    return v && *v && *v != '0';
}

static bool key_of(const kiln_node *n, ops_key *k) {
    memset(k, 0, sizeof *k);
    k->dev = cu_cur;
    k->op = n->op;
    k->dtype = n->dtype;
    if (!cu_all_dtype(n, n->dtype)) return false;
    if (is_pool(n->op)) {
        if (!cu_is_fhb(n->dtype)) return false;
        const kiln_attrs *a = &n->attrs;
        kiln_shape x = n->op == KILN_OP_AVG_POOL_GRAD ? n->shape : n->in[0]->shape;
        kiln_shape y = n->op == KILN_OP_AVG_POOL_GRAD ? n->in[0]->shape : n->shape;
        if (x.rank != 4 || y.rank != 4 || a->pt != a->pb || a->pl != a->pr) return false;
        for (int d = 0; d < 4; d++)
            if (!fits_int(x.dim[d]) || !fits_int(y.dim[d])) return false;
        if (cu_numel(x) > INT_MAX || cu_numel(y) > INT_MAX) return false;   /* cuDNN's strides are int */
        k->N = (int)x.dim[0]; k->H = (int)x.dim[1]; k->W = (int)x.dim[2]; k->C = (int)x.dim[3];
        k->OH = (int)y.dim[1]; k->OW = (int)y.dim[2];
        k->kh = a->kh; k->kw = a->kw; k->sh = a->sh; k->sw = a->sw; k->ph = a->pt; k->pw = a->pl;
        return k->sh > 0 && k->sw > 0 && k->ph < k->kh && k->pw < k->kw;
    }
    if (!is_bn(n->op) || n->dtype != KILN_F32) return false;
    kiln_shape x = n->in[0]->shape;
    if (x.rank < 2) return false;
    int64_t C = x.dim[x.rank - 1], M = C > 0 ? cu_numel(x) / C : 0;
    if (!fits_int(C) || !fits_int(M) || cu_numel(x) > INT_MAX) return false;
    k->training = n->op != KILN_OP_BATCH_NORM || n->attrs.training;
    if (k->training && M < 2) return false;
    k->C = (int)C;
    if (x.rank == 4) { k->N = (int)x.dim[0]; k->H = (int)x.dim[1]; k->W = (int)x.dim[2]; }
    else { k->N = (int)M; k->H = k->W = 1; }
    return true;
}

static cudnnDataType_t dnn_type(int dt) { return dt == KILN_F32 ? CUDNN_DATA_FLOAT : dt == KILN_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16; }

static bool make_descriptors(ops_entry *e) {
    const ops_key *k = &e->k;
    cudnnDataType_t t = dnn_type(k->dtype);
    if (cudnnCreateTensorDescriptor(&e->xd) != CUDNN_STATUS_SUCCESS ||
        cudnnSetTensor4dDescriptor(e->xd, CUDNN_TENSOR_NHWC, t, k->N, k->C, k->H, k->W) != CUDNN_STATUS_SUCCESS)
        return false;
    if (is_bn(k->op))
        return cudnnCreateTensorDescriptor(&e->bnd) == CUDNN_STATUS_SUCCESS &&
               cudnnDeriveBNTensorDescriptor(e->bnd, e->xd, CUDNN_BATCHNORM_SPATIAL) == CUDNN_STATUS_SUCCESS;
    cudnnPoolingMode_t mode = k->op == KILN_OP_MAX_POOL ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    int on, oc, oh, ow;
    return cudnnCreateTensorDescriptor(&e->yd) == CUDNN_STATUS_SUCCESS &&
           cudnnSetTensor4dDescriptor(e->yd, CUDNN_TENSOR_NHWC, t, k->N, k->C, k->OH, k->OW) == CUDNN_STATUS_SUCCESS &&
           cudnnCreatePoolingDescriptor(&e->pd) == CUDNN_STATUS_SUCCESS &&
           cudnnSetPooling2dDescriptor(e->pd, mode, CUDNN_PROPAGATE_NAN, k->kh, k->kw, k->ph, k->pw, k->sh, k->sw) == CUDNN_STATUS_SUCCESS &&
           /* cuDNN's output size must be ours */
           cudnnGetPooling2dForwardOutputDim(e->pd, e->xd, &on, &oc, &oh, &ow) == CUDNN_STATUS_SUCCESS &&
           on == k->N && oc == k->C && oh == k->OH && ow == k->OW;
}

/* The cached entry for n (NULL: not a cuDNN case). */
static ops_entry *entry_for(const kiln_node *n) {
    ops_key k;
    if (!key_of(n, &k)) return NULL;
    for (int i = 0; i < n_cache; i++)
        if (!memcmp(&cache[i]->k, &k, sizeof k)) return cache[i]->ok ? cache[i] : NULL;
    if (n_cache == OPS_CACHE || !cu_dev()) return NULL;
    ops_entry *e = (ops_entry *)cu_host_calloc(sizeof *e);
    if (!e) return NULL;     /* out of memory: not a cuDNN case now, tried again next time */
    e->k = k;
    e->ok = make_descriptors(e);
    cache[n_cache++] = e;     /* kept when unsupported too, so the answer is not recomputed */
    return e->ok ? e : NULL;
}

static size_t x_bytes(const ops_key *k) { return (size_t)k->N * k->H * k->W * k->C * kiln_dtype_size_cu((kiln_dtype)k->dtype); }

/* cuDNN's part of the workspace: AvgPoolGrad's unread x operand; BN gradients' discarded outputs. */
static size_t ws_need(const ops_entry *e) {
    size_t cb = cu_align((size_t)e->k.C * sizeof(float));
    switch (e->k.op) {
    case KILN_OP_AVG_POOL_GRAD: return cu_align(x_bytes(&e->k));
    case KILN_OP_BATCH_NORM_GRAD: return 2 * cb;
    case KILN_OP_BN_GRAD_GAMMA: return cu_align(x_bytes(&e->k)) + 2 * cb;
    default: return 0;
    }
}

size_t cu_dnn_ops_workspace(const kiln_node *n) {
    ops_entry *e = own_only() ? NULL : entry_for(n);
    return e ? ws_need(e) : 0;
}

/* Our kernel for the node (cuda_pool.cu / cuda_norm.cu), run in cuDNN's place. */
static kiln_status run_own(const kiln_kctx *c) {
    kiln_kernel_fn own = is_pool(c->node->op) ? cu_pool_kernel(c->node) : cu_norm_kernel(c->node);
    return own ? own(c) : cu_fail(KILN_INTERNAL, "%s: no CUDA kernel of Kiln's own for it", c->node->name);
}

/* cuDNN refused the call (its layout/shape support varies by version): this shape runs our
 * kernel from now on, said once (through the host's log) so a GPU run shows which path it took. */
static kiln_status fall_back(const kiln_kctx *c, ops_entry *e, cudnnStatus_t st) {
    if (st != CUDNN_STATUS_NOT_SUPPORTED && st != CUDNN_STATUS_BAD_PARAM) return cu_dnn_check(st, c->node->name);
    e->ok = false;
    const kiln_op_def *d = cu.host->op_get ? cu.host->op_get(c->node->op) : NULL;
    if (cu.host->log)
        cu.host->log(KILN_LOG_WARNING, "kiln: cuDNN cannot run %s (%s) here (%s); Kiln's own kernel runs it", c->node->name,
                     d ? d->name : "?", cudnnGetErrorString(st));
    return run_own(c);
}

static kiln_status k_dnn_pool(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    ops_entry *e = entry_for(n);
    cu_device *d = cu_dev();
    if (!d) return KILN_DEVICE_ERROR;
    if (!e) return run_own(c);
    float one = 1.0f, zero = 0.0f;
    cudnnStatus_t st;
    if (n->op == KILN_OP_AVG_POOL_GRAD) {
        /* the average's gradient reads neither x nor y, but the API takes them: y is given dy (same
         * shape), x an unread workspace buffer */
        if (!c->workspace || c->ws_bytes < x_bytes(&e->k))
            return cu_fail(KILN_INTERNAL, "%s: pooling workspace is %zu bytes, needs %zu", n->name, c->ws_bytes, x_bytes(&e->k));
        st = cudnnPoolingBackward(d->dnn, e->pd, &one, e->yd, c->in[0].data, e->yd, c->in[0].data, e->xd, c->workspace, &zero,
                                  e->xd, c->out.data);
    } else {
        st = cudnnPoolingForward(d->dnn, e->pd, &one, e->xd, c->in[0].data, &zero, e->yd, c->out.data);
    }
    return st == CUDNN_STATUS_SUCCESS ? cu_launch_check(c) : fall_back(c, e, st);
}

static kiln_status k_dnn_bn(const kiln_kctx *c) {
    const kiln_node *n = c->node;
    ops_entry *e = entry_for(n);
    cu_device *d = cu_dev();
    if (!d) return KILN_DEVICE_ERROR;
    if (!e) return run_own(c);
    const kiln_attrs *a = &n->attrs;
    size_t need = ws_need(e), cb = cu_align((size_t)e->k.C * sizeof(float));
    if (need && (!c->workspace || c->ws_bytes < need))
        return cu_fail(KILN_INTERNAL, "%s: batch norm workspace is %zu bytes, needs %zu", n->name, c->ws_bytes, need);
    char *ws = (char *)c->workspace;
    float one = 1.0f, zero = 0.0f;
    cudnnStatus_t st;
    if (n->op == KILN_OP_BATCH_NORM && a->training) {
        st = cudnnBatchNormalizationForwardTraining(d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, e->xd, c->in[0].data, e->xd, c->out.data,
                                                    e->bnd, c->in[1].data, c->in[2].data, 1.0 - a->momentum, c->in[3].data,
                                                    c->in[4].data, a->epsilon, NULL, NULL);
    } else if (n->op == KILN_OP_BATCH_NORM) {
        st = cudnnBatchNormalizationForwardInference(d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, e->xd, c->in[0].data, e->xd,
                                                     c->out.data, e->bnd, c->in[1].data, c->in[2].data, c->in[3].data,
                                                     c->in[4].data, a->epsilon);
    } else if (n->op == KILN_OP_BATCH_NORM_GRAD) {   /* (x, gamma, dy) -> dx; dgamma, dbeta discarded */
        st = cudnnBatchNormalizationBackward(d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, e->xd, c->in[0].data, e->xd,
                                             c->in[2].data, e->xd, c->out.data, e->bnd, c->in[1].data, ws, ws + cb, a->epsilon,
                                             NULL, NULL);
    } else {   /* (x, dy) -> dgamma, which does not depend on gamma: a zero scale; dx, dbeta discarded */
        char *dx = ws + 2 * cb;
        kiln_status s = cu_check(cudaMemsetAsync(ws, 0, (size_t)e->k.C * sizeof(float), d->stream), "cudaMemsetAsync(bn scale)");
        if (s) return s;
        st = cudnnBatchNormalizationBackward(d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, e->xd, c->in[0].data, e->xd,
                                             c->in[1].data, e->xd, dx, e->bnd, ws, c->out.data, ws + cb, a->epsilon, NULL, NULL);
    }
    return st == CUDNN_STATUS_SUCCESS ? cu_launch_check(c) : fall_back(c, e, st);
}

kiln_kernel_fn cu_dnn_ops_kernel(const kiln_node *n) {
    if (!is_pool(n->op) && !is_bn(n->op)) return NULL;
    if (own_only() || !entry_for(n)) return NULL;
    return is_pool(n->op) ? k_dnn_pool : k_dnn_bn;
}
