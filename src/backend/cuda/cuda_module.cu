/* The CUDA backend module: entry point, devices, one backend object per GPU (its caching
 * allocator, stream, copies, sync with the device-side error flag, kernel dispatch and whole-step
 * CUDA graphs). Every backend method makes its GPU current first (cu_use), so objects of two GPUs
 * can be used interleaved; kernels run on the GPU last activated.
 *
 * Numerics: TF32 as PyTorch's defaults: on for f32 convolutions (cuDNN CUDNN_DEFAULT_MATH), off
 * for f32 matmuls (cuBLAS CUBLAS_DEFAULT_MATH: plain f32 FMA). KILN_CUDA_TF32=0 turns it off for
 * both (the op conformance tests do: f32 then matches the ref kernels within 1e-4), =1 on for both.
 * Run-time data errors found on the device (a label outside [0, C)) cannot fail the kernel call:
 * the first is recorded in mapped pinned memory and sync() reports it as KILN_INVALID_ARGUMENT. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "backend/cuda/cuda_internal.cuh"

cu_state cu;
thread_local int cu_cur;

/* ---- errors ---- */
kiln_status cu_fail(kiln_status s, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (cu.host && cu.host->set_error) return cu.host->set_error(s, "%s", buf);
    return s;
}

kiln_status cu_check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return KILN_OK;
    cudaGetLastError();
    return cu_fail(e == cudaErrorMemoryAllocation ? KILN_OUT_OF_MEMORY : KILN_DEVICE_ERROR,
                   "%s: %s (GPU %d)", what, cudaGetErrorString(e), cu_cur);
}

static const char *op_name(const kiln_node *n) {
    const kiln_op_def *d = n && cu.host && cu.host->op_get ? cu.host->op_get(n->op) : NULL;
    return d ? d->name : "?";
}

kiln_status cu_launch_check(const kiln_kctx *c) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return KILN_OK;
    /* a fault of an earlier asynchronous kernel surfaces at the next check: say where it was seen */
    return cu_fail(KILN_DEVICE_ERROR, "%s (%s): CUDA error detected while launching its kernels on GPU %d: %s "
                   "(it may come from an earlier kernel; CUDA_LAUNCH_BLOCKING=1 pins it down)",
                   c && c->node ? c->node->name : "?", op_name(c ? c->node : NULL), cu_cur, cudaGetErrorString(e));
}

kiln_status cu_blas_check(cublasStatus_t s, const char *what) {
    if (s == CUBLAS_STATUS_SUCCESS) return KILN_OK;
    return cu_fail(s == CUBLAS_STATUS_ALLOC_FAILED ? KILN_OUT_OF_MEMORY : KILN_DEVICE_ERROR,
                   "%s: cuBLAS error %d (%s)", what, (int)s, cublasGetStatusString(s));
}

kiln_status cu_dnn_check(cudnnStatus_t s, const char *what) {
    if (s == CUDNN_STATUS_SUCCESS) return KILN_OK;
    return cu_fail(KILN_DEVICE_ERROR, "%s: cuDNN error %d (%s)", what, (int)s, cudnnGetErrorString(s));
}

/* ---- devices ---- */
static void *raw_alloc(void *ctx, size_t bytes) {
    int dev = (int)(intptr_t)ctx;
    void *p = NULL;
    if (cudaSetDevice(dev) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        p = NULL;
    }
    cudaSetDevice(cu_cur);
    return p;
}

static void raw_free(void *ctx, void *p) {
    cudaSetDevice((int)(intptr_t)ctx);
    cudaFree(p);
    cudaSetDevice(cu_cur);
}

kiln_status cu_use(int index) {
    if (index < 0 || index >= cu.count) return cu_fail(KILN_INVALID_ARGUMENT, "GPU %d does not exist (%d visible)", index, cu.count);
    if (index == cu_cur) return KILN_OK;
    kiln_status s = cu_check(cudaSetDevice(index), "cudaSetDevice");
    if (!s) cu_cur = index;
    return s;
}

cu_device *cu_dev(void) {
    cu_device *d = &cu.dev[cu_cur];
    if (d->ready) return d;
    if (cu_check(cudaSetDevice(cu_cur), "cudaSetDevice")) return NULL;
    if (cu_check(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), "cudaStreamCreate")) return NULL;
    if (cu_check(cudaStreamCreateWithFlags(&d->copy_stream, cudaStreamNonBlocking), "cudaStreamCreate(copy)")) return NULL;
    if (cu_blas_check(cublasCreate(&d->blas), "cublasCreate")) return NULL;
    cublasSetStream(d->blas, d->stream);
    cublasSetMathMode(d->blas, cu.tf32_matmul ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    /* a fixed workspace keeps cuBLAS from allocating during graph capture */
    size_t bws = 32u << 20;
    if (cudaMalloc(&d->blas_ws, bws) == cudaSuccess) cublasSetWorkspace(d->blas, d->blas_ws, bws);
    else { cudaGetLastError(); d->blas_ws = NULL; }
    if (cu_dnn_check(cudnnCreate(&d->dnn), "cudnnCreate")) return NULL;
    cudnnSetStream(d->dnn, d->stream);
    if (cu_check(cudaHostAlloc((void **)&d->err_host, sizeof(cu_dev_error), cudaHostAllocMapped), "cudaHostAlloc(error flag)"))
        return NULL;
    memset(d->err_host, 0, sizeof(cu_dev_error));
    if (cu_check(cudaHostGetDevicePointer((void **)&d->err_dev, d->err_host, 0), "cudaHostGetDevicePointer")) return NULL;
    if (cu_check(cudaMalloc((void **)&d->step_dev, sizeof(unsigned long long)), "cudaMalloc(step)")) return NULL;
    if (cu_check(cudaMemsetAsync(d->step_dev, 0, sizeof(unsigned long long), d->stream), "cudaMemset(step)")) return NULL;
    d->ready = true;
    return d;
}

const unsigned long long *cu_step_ptr(void) { return cu.dev[cu_cur].step_dev; }

__global__ void set_step_kernel(unsigned long long *p, unsigned long long v) { *p = v; }

/* Kernels captured into a CUDA graph keep the arguments they were captured with; Dropout's step
 * must change every replay, so captured Dropout kernels read it from a device word instead. The
 * executor calls this (stream-ordered) before each graph_launch with the step the kernels would
 * have been given (kiln_kctx.step). */
static cu_device *use(const kiln_backend *b) { return cu_use(b->index) ? NULL : cu_dev(); }

static kiln_status set_step(const kiln_backend *b, uint64_t step) {
    cu_device *d = use(b);
    if (!d) return KILN_DEVICE_ERROR;
    CU_LAUNCH(set_step_kernel, 1, 1, 0, d->stream)(d->step_dev, (unsigned long long)step);
    return cu_launch_check(NULL);
}

static int device_count(void) { return cu.count; }

static kiln_status device_info(int index, kiln_device_info *out) {
    if (index < 0 || index >= cu.count) return cu_fail(KILN_INVALID_ARGUMENT, "GPU %d does not exist (%d visible)", index, cu.count);
    cudaDeviceProp p;
    kiln_status s = cu_check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties");
    if (s) return s;
    memset(out, 0, sizeof *out);
    out->kind = KILN_DEVICE_KIND_GPU;
    out->index = index;
    memcpy(out->name, p.name, sizeof out->name - 1);
    out->name[sizeof out->name - 1] = 0;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->total_memory = p.totalGlobalMem;
    out->cores = p.multiProcessorCount;
    size_t fr = 0, tot = 0;
    if (cudaSetDevice(index) == cudaSuccess && cudaMemGetInfo(&fr, &tot) == cudaSuccess) out->free_memory = fr;
    else cudaGetLastError();
    cudaSetDevice(cu_cur);
    cudaDriverGetVersion(&out->driver_version);
    cudaRuntimeGetVersion(&out->runtime_version);
    out->cudnn_version = (int)cudnnGetVersion();
    return KILN_OK;
}

static kiln_status memory_stats(int index, kiln_memory_stats *out) {
    if (index < 0 || index >= cu.count) return cu_fail(KILN_INVALID_ARGUMENT, "GPU %d does not exist (%d visible)", index, cu.count);
    const pool_stats *st = &cu.dev[index].pool.st;
    out->in_use = st->in_use;
    out->peak = st->peak;
    out->reserved = st->reserved;
    out->limit = st->limit;
    out->num_allocs = st->num_allocs;
    return KILN_OK;
}

static kiln_status reset_peak(int index) {
    if (index < 0 || index >= cu.count) return cu_fail(KILN_INVALID_ARGUMENT, "GPU %d does not exist (%d visible)", index, cu.count);
    pool_reset_peak(&cu.dev[index].pool);
    return KILN_OK;
}

static kiln_status set_memory_options(int index, const kiln_memory_options *o) {
    if (index < 0 || index >= cu.count) return cu_fail(KILN_INVALID_ARGUMENT, "GPU %d does not exist (%d visible)", index, cu.count);
    if (!o) return cu_fail(KILN_INVALID_ARGUMENT, "memory options: NULL");
    if (!o->grow && o->limit_bytes == 0)
        return cu_fail(KILN_INVALID_ARGUMENT, "GPU %d memory options: reserving up front (grow = false) needs a limit", index);
    if (!pool_configure(&cu.dev[index].pool, o->limit_bytes, o->grow)) {
        if (!o->grow)
            return cu_fail(KILN_OUT_OF_MEMORY, "GPU %d: cannot reserve %zu bytes up front (or memory is already in use; set memory options before the first session)",
                           index, o->limit_bytes);
        return cu_fail(KILN_INVALID_ARGUMENT, "GPU %d: memory options must be set before the first session uses the GPU", index);
    }
    return KILN_OK;
}

/* ---- backend methods: each makes b's GPU current first (use) ---- */
static void *dev_alloc(const kiln_backend *b, size_t bytes) {
    cu_device *d = use(b);
    if (!d) return NULL;
    void *p = pool_alloc(&d->pool, bytes);
    if (!p) {
        char msg[256];
        pool_oom_message(&d->pool, b->index, msg, sizeof msg);
        cu_fail(KILN_OUT_OF_MEMORY, "%s", msg);
    }
    return p;
}

/* The pool frees on its own device (raw_free), so no switch; a pointer of another GPU's pool is
 * still found there. */
static void dev_free(const kiln_backend *b, void *p) {
    if (!p) return;
    for (int i = 0; i < cu.count; i++) {
        int k = (b->index + i) % cu.count;
        if (cu.dev[k].ready && pool_free(&cu.dev[k].pool, p)) return;
    }
}

static kiln_status dev_copy(const kiln_backend *b, void *dst, const void *src, size_t bytes, kiln_copy_kind kind) {
    if (bytes == 0) return KILN_OK;
    cu_device *d = use(b);
    if (!d) return KILN_DEVICE_ERROR;
    /* PEER: with unified addressing, cudaMemcpyDefault finds both devices from the pointers */
    cudaMemcpyKind k = kind == KILN_COPY_H2D ? cudaMemcpyHostToDevice
                     : kind == KILN_COPY_D2H ? cudaMemcpyDeviceToHost
                     : kind == KILN_COPY_PEER ? cudaMemcpyDefault : cudaMemcpyDeviceToDevice;
    return cu_check(cudaMemcpyAsync(dst, src, bytes, k, d->stream), "cudaMemcpyAsync");
}

static kiln_status copy_ahead(const kiln_backend *b, void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return KILN_OK;
    cu_device *d = use(b);
    if (!d) return KILN_DEVICE_ERROR;
    return cu_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, d->copy_stream), "cudaMemcpyAsync(copy ahead)");
}

static kiln_status copy_ahead_wait(const kiln_backend *b) {
    cu_device *d = use(b);
    if (!d) return KILN_DEVICE_ERROR;
    return cu_check(cudaStreamSynchronize(d->copy_stream), "cudaStreamSynchronize(copy)");
}

static kiln_status dev_sync(const kiln_backend *b) {
    cu_device *d = use(b);
    if (!d) return KILN_DEVICE_ERROR;
    kiln_status s = cu_check(cudaStreamSynchronize(d->stream), "cudaStreamSynchronize");
    if (s) return s;
    volatile cu_dev_error *e = d->err_host;
    if (e->set == 1) {
        const kiln_node *n = (const kiln_node *)(uintptr_t)e->node;
        const kiln_op_def *def = cu.host->op_get ? cu.host->op_get((kiln_op)e->op) : NULL;
        if (e->op == KILN_OP_EMBEDDING || e->op == KILN_OP_EMBEDDING_GRAD)
            s = cu_fail(KILN_INVALID_ARGUMENT, "%s (%s): token id %lld at position %lld is outside [0, %lld) (vocabulary size %lld; found on GPU %d)",
                        n ? n->name : "?", def ? def->name : "?", e->a, e->b, e->c, e->c, cu_cur);
        else if (e->op == KILN_OP_GATHER_ROWS)
            s = cu_fail(KILN_INVALID_ARGUMENT, "%s (%s): index %lld in row %lld is outside [0, %lld) (x has %lld rows; found on GPU %d)",
                        n ? n->name : "?", def ? def->name : "?", e->a, e->b, e->c, e->c, cu_cur);
        else
            s = cu_fail(KILN_INVALID_ARGUMENT, "%s (%s): label %lld in row %lld is outside [0, %lld) (logits have %lld classes; found on GPU %d)",
                        n ? n->name : "?", def ? def->name : "?", e->a, e->b, e->c, e->c, cu_cur);
        memset((void *)d->err_host, 0, sizeof(cu_dev_error));
        return s;
    }
    return KILN_OK;
}

static kiln_status k_source(const kiln_kctx *c) { (void)c; return KILN_OK; }   /* bound by the executor */
static kiln_status k_noop(const kiln_kctx *c) {
    if (!c->out.data) return KILN_OK;
    return cu_check(cudaMemsetAsync(c->out.data, 0, sizeof(float), cu_stream()), "NoOp");
}

static kiln_status dev_activate(const kiln_backend *b) { return use(b) ? KILN_OK : KILN_DEVICE_ERROR; }

/* The kernel lookups below may create cuDNN state (cached per device): on b's device. */
static kiln_kernel_fn kernel_for(const kiln_node *n) {
    if (!n) return NULL;
    const kiln_op_def *d = cu.host->op_get ? cu.host->op_get(n->op) : NULL;
    if (d && (d->flags & KILN_OPF_SOURCE)) return k_source;
    if (n->op == KILN_OP_GROUP) return k_noop;
    kiln_kernel_fn f;
    if ((f = cu_blas_kernel(n))) return f;
    if ((f = cu_dnn_kernel(n))) return f;
    if ((f = cu_dnn_ops_kernel(n))) return f;
    if ((f = cu_pool_kernel(n))) return f;
    if ((f = cu_elementwise_kernel(n))) return f;
    if ((f = cu_reduce_kernel(n))) return f;
    if ((f = cu_shape_kernel(n))) return f;
    if ((f = cu_norm_kernel(n))) return f;
    if ((f = cu_sync_bn_kernel(n))) return f;
    if ((f = cu_data_kernel(n))) return f;
    if ((f = cu_precision_kernel(n))) return f;
    if ((f = cu_transformer_kernel(n))) return f;
    if ((f = cu_rnn_kernel(n))) return f;
    return cu_loss_optim_kernel(n);
}

static kiln_kernel_fn dev_kernel(const kiln_backend *b, const kiln_node *n) { return use(b) ? kernel_for(n) : NULL; }

/* Conv2D and MatMul apply a fused BiasAdd + Relu epilogue (cu_epilogue). */
static bool dev_fuses(const kiln_backend *b, const kiln_node *n) {
    if (!n || !cu_is_fhb(n->dtype) || !use(b)) return false;
    if (n->op == KILN_OP_MATMUL) return cu_blas_kernel(n) != NULL;
    if (n->op == KILN_OP_CONV2D) return cu_dnn_kernel(n) != NULL;
    return false;
}

static size_t dev_workspace(const kiln_backend *b, const kiln_node *n) {
    if (!n || !dev_kernel(b, n)) return 0;
    switch (n->op) {
    case KILN_OP_CONV2D: case KILN_OP_CONV2D_BWD_INPUT: case KILN_OP_CONV2D_BWD_FILTER:
        return cu_dnn_workspace(n);
    case KILN_OP_REDUCE_SUM: case KILN_OP_REDUCE_MEAN: case KILN_OP_REDUCE_MAX: case KILN_OP_SUM_TO:
        return cu_reduce_workspace(n);
    case KILN_OP_BATCH_NORM: case KILN_OP_BATCH_NORM_GRAD: case KILN_OP_BN_GRAD_GAMMA: {
        /* a cuDNN kernel may fall back to ours (cuda_dnn_ops.cu): room for either */
        size_t own = cu_norm_workspace(n), dnn = cu_dnn_ops_workspace(n);
        return own > dnn ? own : dnn;
    }
    case KILN_OP_MAX_POOL: case KILN_OP_AVG_POOL: case KILN_OP_AVG_POOL_GRAD:
        return cu_dnn_ops_workspace(n);
    case KILN_OP_MAX_POOL_GRAD:
        return cu_pool_workspace(n);
    case KILN_OP_LAYER_NORM_GAMMA_GRAD: case KILN_OP_ATTENTION_GRAD:
        return cu_transformer_workspace(n);
    case KILN_OP_RNN: case KILN_OP_RNN_GRAD:
        return cu_rnn_workspace(n);
    default:
        return cu_loss_optim_workspace(n);
    }
}

/* ---- pinned host memory ---- */
static void *host_alloc(size_t bytes) {
    void *p = NULL;
    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();
        cu_fail(KILN_OUT_OF_MEMORY, "cannot allocate %zu bytes of pinned host memory", bytes);
        return NULL;
    }
    return p;
}
static void host_free(void *p) { if (p) cudaFreeHost(p); }

/* ---- CUDA graphs ---- */
static kiln_status capture_begin(const kiln_backend *b) {
    cu_device *d = use(b);
    if (!d) return KILN_DEVICE_ERROR;
    kiln_status s = cu_check(cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
    if (!s) d->capturing = true;
    return s;
}

static kiln_status capture_end(const kiln_backend *b, void **graph_exec) {
    cu_device *d = use(b);
    if (!d) return KILN_DEVICE_ERROR;
    *graph_exec = NULL;
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(d->stream, &g);
    d->capturing = false;
    if (e != cudaSuccess || !g) {
        if (g) cudaGraphDestroy(g);
        return cu_check(e != cudaSuccess ? e : cudaErrorStreamCaptureInvalidated, "cudaStreamEndCapture");
    }
    cudaGraphExec_t x = NULL;
    e = cudaGraphInstantiate(&x, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) return cu_check(e, "cudaGraphInstantiate");
    *graph_exec = (void *)x;
    return KILN_OK;
}

static kiln_status graph_launch(const kiln_backend *b, void *graph_exec) {
    cu_device *d = use(b);
    if (!d) return KILN_DEVICE_ERROR;
    if (!graph_exec) return cu_fail(KILN_INVALID_ARGUMENT, "graph_launch: no graph");
    return cu_check(cudaGraphLaunch((cudaGraphExec_t)graph_exec, d->stream), "cudaGraphLaunch");
}

static void graph_free(const kiln_backend *b, void *graph_exec) {
    if (!graph_exec) return;
    cu_use(b->index);   /* destroyed even if the switch failed: the handle is ours to release */
    cudaGraphExecDestroy((cudaGraphExec_t)graph_exec);
}

static size_t max_alloc(const kiln_backend *b) {
    cu_device *d = use(b);
    if (!d) return 0;
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) { cudaGetLastError(); fr = 0; }
    return pool_max_alloc(&d->pool, fr);
}

/* ---- one backend object per GPU ---- */
static kiln_backend backends[CU_MAX_DEVICES];

static void backend_init(kiln_backend *b, int index) {
    memset(b, 0, sizeof *b);
    b->name = "cuda";
    b->type = KILN_DEVICE_GPU;
    b->index = index;
    b->ctx = &cu.dev[index];
    b->alloc = dev_alloc; b->free = dev_free; b->copy = dev_copy; b->sync = dev_sync; b->activate = dev_activate;
    b->kernel = dev_kernel; b->workspace = dev_workspace; b->fuses = dev_fuses;
    b->capture_begin = capture_begin; b->capture_end = capture_end; b->graph_launch = graph_launch; b->graph_free = graph_free;
    b->set_step = set_step; b->max_alloc = max_alloc; b->copy_ahead = copy_ahead; b->copy_ahead_wait = copy_ahead_wait;
}

static const kiln_backend *backend(int index) { return index >= 0 && index < cu.count ? &backends[index] : NULL; }

kiln_status cu_comm_new(const int *gpus, int n, void **out);              /* cuda_nccl.cu */
void cu_comm_free(void *comm);
kiln_status cu_allreduce_mean(void *comm, float *const *bufs, const size_t *counts, int n_buckets);
kiln_status cu_allreduce_start(void *comm, float *const *bufs, const size_t *counts, int n_buckets);
kiln_status cu_allreduce_join(void *comm);
kiln_status cu_broadcast(void *comm, void *const *bufs, const size_t *bytes, int n_bufs, int root);
kiln_status cu_allreduce_sum(void *comm, void *const *bufs, const size_t *counts, int n_bufs, kiln_dtype dtype);

static const kiln_cuda_module cuda_module = {
    KILN_CUDA_MODULE_ABI, device_count, backend, device_info, memory_stats, reset_peak, set_memory_options,
    host_alloc, host_free, cu_comm_new, cu_comm_free, cu_allreduce_mean, cu_allreduce_start, cu_allreduce_join, cu_broadcast,
    cu_allreduce_sum,
};

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? dflt : x;
}

extern "C" __attribute__((visibility("default")))
const kiln_cuda_module *kiln_cuda_module_init(const kiln_cuda_host *host, char *why, size_t n) {
    if (why && n) why[0] = 0;
    if (!host || host->abi != KILN_CUDA_MODULE_ABI) {
        if (why) snprintf(why, n, "libkiln_cuda ABI %d does not match libkiln's %d", KILN_CUDA_MODULE_ABI, host ? host->abi : -1);
        return NULL;
    }
    if (cu.host) return &cuda_module;   /* already initialised */
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        if (why) snprintf(why, n, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        cudaGetLastError();
        return NULL;
    }
    if (count <= 0) {
        if (why) snprintf(why, n, "cudaGetDeviceCount: no CUDA device is visible");
        return NULL;
    }
    if (count > CU_MAX_DEVICES) count = CU_MAX_DEVICES;
    memset(&cu, 0, sizeof cu);
    cu.host = host;
    cu.count = count;
    long tf32 = env_long("KILN_CUDA_TF32", -1);   /* unset: PyTorch's defaults */
    cu.tf32_conv = tf32 != 0;
    cu.tf32_matmul = tf32 == 1;
    long mb = env_long("KILN_CUDNN_WORKSPACE_MB", 256);
    cu.conv_ws_limit = (size_t)(mb > 0 ? mb : 0) << 20;
    for (int i = 0; i < count; i++) {
        pool_init(&cu.dev[i].pool, raw_alloc, raw_free, (void *)(intptr_t)i);
        backend_init(&backends[i], i);
    }
    return &cuda_module;
}
