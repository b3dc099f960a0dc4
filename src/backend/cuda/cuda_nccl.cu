/* NCCL collectives among the GPUs of this process (MirroredStrategy, src/runtime/replicas.c):
 * one communicator per GPU from ncclCommInitAll, every call grouped (ncclGroupStart/End) because
 * one host thread drives all the GPUs, each GPU's part enqueued on its own stream after the work
 * already there, or, for the all-reduce overlapped with the backward pass, on the communicator's own
 * stream per GPU ordered after the compute stream by events. libnccl is opened with dlopen on first use (libnccl.so.2), so the module runs
 * where NCCL is not installed; the CUDA simulator links its NCCL shim instead (tests/cudasim). */
#include <dlfcn.h>
#include "backend/cuda/cuda_internal.cuh"
#if __has_include(<nccl.h>)
#include <nccl.h>
#else
#define KILN_NO_NCCL_H      /* a toolkit without NCCL's header: the collectives say so */
#endif

#ifdef KILN_NO_NCCL_H
kiln_status cu_comm_new(const int *gpus, int n, void **out) {
    (void)gpus; (void)n; *out = NULL;
    return cu_fail(KILN_UNSUPPORTED, "this libkiln_cuda was built without nccl.h: install NCCL (libnccl-dev) and rebuild");
}
void cu_comm_free(void *p) { (void)p; }
kiln_status cu_allreduce_mean(void *p, float *const *bufs, const size_t *counts, int n_buckets) {
    (void)p; (void)bufs; (void)counts; (void)n_buckets;
    return cu_fail(KILN_UNSUPPORTED, "this libkiln_cuda was built without nccl.h");
}
kiln_status cu_allreduce_start(void *p, float *const *bufs, const size_t *counts, int n_buckets) {
    return cu_allreduce_mean(p, bufs, counts, n_buckets);
}
kiln_status cu_allreduce_join(void *p) { (void)p; return cu_fail(KILN_UNSUPPORTED, "this libkiln_cuda was built without nccl.h"); }
kiln_status cu_allreduce_sum(void *p, void *const *bufs, const size_t *counts, int n_bufs, kiln_dtype dtype) {
    (void)p; (void)bufs; (void)counts; (void)n_bufs; (void)dtype;
    return cu_fail(KILN_UNSUPPORTED, "this libkiln_cuda was built without nccl.h");
}
kiln_status cu_broadcast(void *p, void *const *bufs, const size_t *bytes, int n_bufs, int root) {
    (void)p; (void)bufs; (void)bytes; (void)n_bufs; (void)root;
    return cu_fail(KILN_UNSUPPORTED, "this libkiln_cuda was built without nccl.h");
}
#else

typedef struct nccl_api {
    bool tried, ok;
    char why[256];
    ncclResult_t (*comm_init_all)(ncclComm_t *, int, const int *);
    ncclResult_t (*comm_destroy)(ncclComm_t);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    const char *(*error_string)(ncclResult_t);
} nccl_api;
static nccl_api nccl;

static bool nccl_load(void) {
    if (nccl.tried) return nccl.ok;
    nccl.tried = true;
#ifdef CUSIM_NCCL_SHIM      /* the simulator: its shim is linked in */
    nccl.comm_init_all = ncclCommInitAll;
    nccl.comm_destroy = ncclCommDestroy;
    nccl.all_reduce = ncclAllReduce;
    nccl.broadcast = ncclBroadcast;
    nccl.group_start = ncclGroupStart;
    nccl.group_end = ncclGroupEnd;
    nccl.error_string = ncclGetErrorString;
#else
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(nccl.why, sizeof nccl.why, "NCCL is not installed (libnccl.so.2: %s): install it (Debian: libnccl2, or the "
                 "nvidia-nccl-cu13 wheel's lib directory on LD_LIBRARY_PATH)", dlerror());
        return false;
    }
#define SYM(field, name) *(void **)&nccl.field = dlsym(h, name)
    SYM(comm_init_all, "ncclCommInitAll");
    SYM(comm_destroy, "ncclCommDestroy");
    SYM(all_reduce, "ncclAllReduce");
    SYM(broadcast, "ncclBroadcast");
    SYM(group_start, "ncclGroupStart");
    SYM(group_end, "ncclGroupEnd");
    SYM(error_string, "ncclGetErrorString");
#undef SYM
    if (!nccl.comm_init_all || !nccl.comm_destroy || !nccl.all_reduce || !nccl.broadcast || !nccl.group_start || !nccl.group_end || !nccl.error_string) {
        snprintf(nccl.why, sizeof nccl.why, "libnccl.so.2 lacks a function Kiln uses (NCCL 2.10 or newer is needed)");
        return false;
    }
#endif
    nccl.ok = true;
    return true;
}

static kiln_status nccl_check(ncclResult_t r, const char *what) {
    if (r == ncclSuccess) return KILN_OK;
    return cu_fail(KILN_DEVICE_ERROR, "%s: %s", what, nccl.error_string ? nccl.error_string(r) : "NCCL error");
}

typedef struct cu_comm {
    int n;
    int gpu[CU_MAX_DEVICES];
    ncclComm_t comm[CU_MAX_DEVICES];
    cudaStream_t stream[CU_MAX_DEVICES];   /* communication stream of each GPU (allreduce_start) */
    cudaEvent_t ready[CU_MAX_DEVICES];     /* recorded on the compute stream: the bucket is written */
    cudaEvent_t done[CU_MAX_DEVICES];      /* recorded on the communication stream: averaged */
} cu_comm;

void cu_comm_free(void *p);

/* Streams and events of each GPU, made on that GPU (as CUDA requires). */
static kiln_status comm_streams(cu_comm *c) {
    kiln_status st = KILN_OK;
    for (int k = 0; k < c->n && st == KILN_OK; k++) {
        if ((st = cu_use(c->gpu[k])) != KILN_OK) break;
        st = cu_check(cudaStreamCreateWithFlags(&c->stream[k], cudaStreamNonBlocking), "cudaStreamCreate(NCCL)");
        if (st == KILN_OK) st = cu_check(cudaEventCreateWithFlags(&c->ready[k], cudaEventDisableTiming), "cudaEventCreate");
        if (st == KILN_OK) st = cu_check(cudaEventCreateWithFlags(&c->done[k], cudaEventDisableTiming), "cudaEventCreate");
    }
    return st;
}

kiln_status cu_comm_new(const int *gpus, int n, void **out) {
    *out = NULL;
    if (n < 1 || n > cu.count) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL: %d GPUs asked for, %d visible", n, cu.count);
    for (int k = 0; k < n; k++) {
        if (gpus[k] < 0 || gpus[k] >= cu.count) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL: no GPU %d (%d visible)", gpus[k], cu.count);
        for (int j = 0; j < k; j++)
            if (gpus[j] == gpus[k]) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL: GPU %d listed twice", gpus[k]);
    }
    if (!nccl_load()) return cu_fail(KILN_UNSUPPORTED, "%s", nccl.why);
    for (int k = 0; k < n; k++) {        /* each GPU's stream exists before NCCL enqueues on it */
        kiln_status st = cu_use(gpus[k]);
        if (st == KILN_OK && !cu_dev()) st = KILN_DEVICE_ERROR;
        if (st != KILN_OK) return st;
    }
    cu_comm *c = (cu_comm *)cu_host_calloc(sizeof *c);
    if (!c) return cu_fail(KILN_OUT_OF_MEMORY, "NCCL: out of host memory");
    c->n = n;
    memcpy(c->gpu, gpus, sizeof(int) * (size_t)n);
    int prev = cu_cur;
    kiln_status st = comm_streams(c);
    if (st == KILN_OK) st = nccl_check(nccl.comm_init_all(c->comm, n, gpus), "ncclCommInitAll");
    cu_use(prev);
    if (st != KILN_OK) {
        memset(c->comm, 0, sizeof c->comm);   /* none to destroy */
        cu_comm_free(c);
        return st;
    }
    *out = c;
    return KILN_OK;
}

void cu_comm_free(void *p) {
    cu_comm *c = (cu_comm *)p;
    if (!c) return;
    int prev = cu_cur;
    for (int k = 0; k < c->n; k++) {
        if (c->comm[k]) nccl.comm_destroy(c->comm[k]);
        if (cu_use(c->gpu[k]) != KILN_OK) continue;
        if (c->stream[k]) { cudaStreamSynchronize(c->stream[k]); cudaStreamDestroy(c->stream[k]); }
        if (c->ready[k]) cudaEventDestroy(c->ready[k]);
        if (c->done[k]) cudaEventDestroy(c->done[k]);
    }
    cu_use(prev);
    cu_host_free(c);
}

/* One group of in-place averages; GPU k's part on streams[k]. */
static kiln_status group_allreduce(cu_comm *c, float *const *bufs, const size_t *counts, int n_buckets, const cudaStream_t *streams) {
    kiln_status st = nccl_check(nccl.group_start(), "ncclGroupStart");
    for (int b = 0; b < n_buckets && st == KILN_OK; b++)
        for (int k = 0; k < c->n && st == KILN_OK; k++) {
            if ((st = cu_use(c->gpu[k])) != KILN_OK) break;
            float *x = bufs[(size_t)b * c->n + k];
            st = nccl_check(nccl.all_reduce(x, x, counts[b], ncclFloat32, ncclAvg, c->comm[k], streams[k]), "ncclAllReduce");
        }
    kiln_status se = nccl_check(nccl.group_end(), "ncclGroupEnd");   /* always closes the group */
    return st != KILN_OK ? st : se;
}

kiln_status cu_allreduce_mean(void *p, float *const *bufs, const size_t *counts, int n_buckets) {
    cu_comm *c = (cu_comm *)p;
    if (!c) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL all-reduce: no communicator");
    int prev = cu_cur;
    cudaStream_t compute[CU_MAX_DEVICES];
    for (int k = 0; k < c->n; k++) compute[k] = cu.dev[c->gpu[k]].stream;
    kiln_status st = group_allreduce(c, bufs, counts, n_buckets, compute);
    cu_use(prev);
    return st;
}

kiln_status cu_allreduce_join(void *p);

/* Each communication stream waits for its GPU's compute stream's work so far. */
static kiln_status comm_after_compute(cu_comm *c) {
    kiln_status st = KILN_OK;
    for (int k = 0; k < c->n && st == KILN_OK; k++) {
        if ((st = cu_use(c->gpu[k])) != KILN_OK) break;
        st = cu_check(cudaEventRecord(c->ready[k], cu.dev[c->gpu[k]].stream), "cudaEventRecord");
        if (st == KILN_OK) st = cu_check(cudaStreamWaitEvent(c->stream[k], c->ready[k], 0), "cudaStreamWaitEvent");
    }
    return st;
}

kiln_status cu_allreduce_start(void *p, float *const *bufs, const size_t *counts, int n_buckets) {
    cu_comm *c = (cu_comm *)p;
    if (!c) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL all-reduce: no communicator");
    int prev = cu_cur;
    kiln_status st = comm_after_compute(c);   /* the buckets are written */
    if (st == KILN_OK) st = group_allreduce(c, bufs, counts, n_buckets, c->stream);
    cu_use(prev);
    return st;
}

kiln_status cu_allreduce_sum(void *p, void *const *bufs, const size_t *counts, int n_bufs, kiln_dtype dtype) {
    cu_comm *c = (cu_comm *)p;
    if (!c) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL all-reduce: no communicator");
    if (dtype != KILN_F32 && dtype != KILN_F64) return cu_fail(KILN_UNSUPPORTED, "NCCL sum: dtype %d (f32, f64 only)", (int)dtype);
    int prev = cu_cur;
    kiln_status st = comm_after_compute(c);
    if (st == KILN_OK) {
        st = nccl_check(nccl.group_start(), "ncclGroupStart");
        for (int b = 0; b < n_bufs && st == KILN_OK; b++)
            for (int k = 0; k < c->n && st == KILN_OK; k++) {
                if ((st = cu_use(c->gpu[k])) != KILN_OK) break;
                void *x = bufs[(size_t)b * c->n + k];
                st = nccl_check(nccl.all_reduce(x, x, counts[b], dtype == KILN_F64 ? ncclFloat64 : ncclFloat32, ncclSum, c->comm[k], c->stream[k]),
                                "ncclAllReduce");
            }
        kiln_status se = nccl_check(nccl.group_end(), "ncclGroupEnd");
        if (st == KILN_OK) st = se;
    }
    cu_use(prev);
    return st == KILN_OK ? cu_allreduce_join(p) : st;   /* the compute streams read the sums next */
}

kiln_status cu_allreduce_join(void *p) {
    cu_comm *c = (cu_comm *)p;
    if (!c) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL all-reduce: no communicator");
    int prev = cu_cur;
    kiln_status st = KILN_OK;
    for (int k = 0; k < c->n && st == KILN_OK; k++) {
        if ((st = cu_use(c->gpu[k])) != KILN_OK) break;
        st = cu_check(cudaEventRecord(c->done[k], c->stream[k]), "cudaEventRecord");
        if (st == KILN_OK) st = cu_check(cudaStreamWaitEvent(cu.dev[c->gpu[k]].stream, c->done[k], 0), "cudaStreamWaitEvent");
    }
    cu_use(prev);
    return st;
}

kiln_status cu_broadcast(void *p, void *const *bufs, const size_t *bytes, int n_bufs, int root) {
    cu_comm *c = (cu_comm *)p;
    if (!c) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL broadcast: no communicator");
    if (root < 0 || root >= c->n) return cu_fail(KILN_INVALID_ARGUMENT, "NCCL broadcast: root %d of %d GPUs", root, c->n);
    int prev = cu_cur;
    kiln_status st = nccl_check(nccl.group_start(), "ncclGroupStart");
    for (int b = 0; b < n_bufs && st == KILN_OK; b++)
        for (int k = 0; k < c->n && st == KILN_OK; k++) {
            if ((st = cu_use(c->gpu[k])) != KILN_OK) break;
            void *x = bufs[(size_t)b * c->n + k];
            st = nccl_check(nccl.broadcast(x, x, bytes[b], ncclInt8, root, c->comm[k], cu.dev[c->gpu[k]].stream), "ncclBroadcast");
        }
    kiln_status se = nccl_check(nccl.group_end(), "ncclGroupEnd");
    cu_use(prev);
    return st != KILN_OK ? st : se;
}
#endif
