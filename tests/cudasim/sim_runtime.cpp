/* The CUDA runtime API on the CPU: one device, "device" memory from the host heap within a fixed
 * budget (256-byte aligned like cudaMalloc), pinned memory = heap memory that is also a valid
 * device address (mapped), streams as tokens, everything executed synchronously at enqueue time
 * except on a stream under capture, where work is recorded for cudaGraphLaunch to replay.
 * Checks what a real device would reject: copies/memsets whose device side is not inside one
 * device allocation, kernels given host pointers, synchronising a stream that is being captured. */
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include "sim_internal.h"

namespace cusim {
namespace {
const size_t kBudget = (size_t)4 << 30;         /* reported device memory */
thread_local cudaError_t last_error = cudaSuccess;
size_t in_use;
std::map<uintptr_t, size_t> dev_allocs, host_allocs;   /* base -> bytes */
std::set<CUstream_st *> streams;
CUstream_st legacy;                             /* stream 0 */
int current_device;

/* The allocation of m holding [p, p + bytes] (p + bytes may be its end). */
bool in_map(const std::map<uintptr_t, size_t> &m, const void *p, size_t bytes) {
    uintptr_t a = (uintptr_t)p;
    auto it = m.upper_bound(a);
    if (it == m.begin()) return false;
    --it;
    return a >= it->first && a - it->first <= it->second && bytes <= it->second - (a - it->first);
}
}  // namespace

void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("cudasim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void set_error(cudaError_t e) { if (last_error == cudaSuccess) last_error = e; }

CUstream_st *stream_of(cudaStream_t s) {
    if (!s) return &legacy;
    return streams.count(s) ? s : nullptr;
}

cudaError_t enqueue(cudaStream_t s, std::function<void()> op) {
    CUstream_st *st = stream_of(s);
    if (!st) return cudaErrorInvalidResourceHandle;
    if (st->capturing) st->ops.push_back(std::move(op));
    else op();
    return cudaSuccess;
}

bool in_device_memory(const void *p, size_t bytes) { return in_map(dev_allocs, p, bytes); }

bool device_accessible(const void *p) {
    return !p || in_map(dev_allocs, p, 0) || in_map(host_allocs, p, 0);
}

void bad_argument(const char *kernel, int index, const void *p) {
    fail("kernel %s: argument %d (%p) is neither device memory nor mapped pinned memory", kernel, index, p);
    set_error(cudaErrorIllegalAddress);
}
}  // namespace cusim

using namespace cusim;

cudaError_t cudaGetDeviceCount(int *count) { *count = 1; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { if (d != 0) return cudaErrorInvalidDevice; current_device = d; return cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = current_device; return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (d != 0) return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Kiln CUDA simulator (CPU)");
    p->totalGlobalMem = kBudget;
    p->sharedMemPerBlock = 48 << 10;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->major = 9; p->minor = 0;
    p->multiProcessorCount = 1;
    p->canMapHostMemory = p->unifiedAddressing = 1;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot) { *fr = kBudget - in_use; *tot = kBudget; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaGetLastError(void) { cudaError_t e = last_error; last_error = cudaSuccess; return e; }
cudaError_t cudaPeekAtLastError(void) { return last_error; }

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    default: return "unknown error";
    }
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = nullptr;
    if (bytes > kBudget - in_use) return cudaErrorMemoryAllocation;
    void *m = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!m) return cudaErrorMemoryAllocation;
    dev_allocs[(uintptr_t)m] = bytes;
    in_use += bytes;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    auto it = dev_allocs.find((uintptr_t)p);
    if (it == dev_allocs.end()) { fail("cudaFree(%p): not a device allocation", p); return cudaErrorInvalidValue; }
    in_use -= it->second;
    dev_allocs.erase(it);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags) {
    *p = nullptr;
    if (flags & ~0x7u) return cudaErrorInvalidValue;
    void *m = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!m) return cudaErrorMemoryAllocation;
    host_allocs[(uintptr_t)m] = bytes;
    *p = m;
    return cudaSuccess;
}

/* With unified addressing every pinned allocation is mapped at the same address. */
cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned int flags) {
    if (flags != 0 || !in_map(host_allocs, host, 0)) return cudaErrorInvalidValue;
    *dev = host;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
    if (!p) return cudaSuccess;
    auto it = host_allocs.find((uintptr_t)p);
    if (it == host_allocs.end()) { fail("cudaFreeHost(%p): not a pinned allocation", p); return cudaErrorInvalidValue; }
    host_allocs.erase(it);
    free(p);
    return cudaSuccess;
}

static cudaError_t check_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    if (kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
    bool dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if ((dd && !in_device_memory(dst, bytes)) || (sd && !in_device_memory(src, bytes))) {
        fail("cudaMemcpy kind %d of %zu bytes %p -> %p: the device side is not inside one device allocation", (int)kind, bytes, src, dst);
        return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    if (bytes == 0) return cudaSuccess;
    cudaError_t e = check_copy(dst, src, bytes, kind);
    if (e != cudaSuccess) return e;
    return enqueue(s, [=] { memmove(dst, src, bytes); });
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    return cudaMemcpyAsync(dst, src, bytes, kind, 0);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
    if (bytes == 0) return cudaSuccess;
    if (!in_device_memory(p, bytes)) { fail("cudaMemset of %zu bytes at %p: not inside one device allocation", bytes, p); return cudaErrorInvalidValue; }
    return enqueue(s, [=] { memset(p, value, bytes); });
}
cudaError_t cudaMemset(void *p, int value, size_t bytes) { return cudaMemsetAsync(p, value, bytes, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
    if (flags & ~1u) return cudaErrorInvalidValue;
    *s = new CUstream_st();
    streams.insert(*s);
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!streams.erase(s)) return cudaErrorInvalidResourceHandle;
    delete s;
    return cudaSuccess;
}

/* Work already ran; but synchronising a capturing stream is illegal and breaks the capture. */
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    CUstream_st *st = stream_of(s);
    if (!st) return cudaErrorInvalidResourceHandle;
    if (st->capturing) {
        fail("cudaStreamSynchronize on a stream that is being captured");
        st->invalidated = true;
        return cudaErrorStreamCaptureUnsupported;
    }
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    for (CUstream_st *st : streams)
        if (st->capturing) { st->invalidated = true; return cudaErrorStreamCaptureUnsupported; }
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
    CUstream_st *st = stream_of(s);
    if (!st) return cudaErrorInvalidResourceHandle;
    if (!s) return cudaErrorStreamCaptureUnsupported;            /* the legacy stream cannot be captured */
    if (st->capturing || mode > cudaStreamCaptureModeRelaxed) return st->capturing ? cudaErrorIllegalState : cudaErrorInvalidValue;
    st->capturing = true;
    st->invalidated = false;
    st->ops.clear();
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
    CUstream_st *st = stream_of(s);
    *g = nullptr;
    if (!st) return cudaErrorInvalidResourceHandle;
    if (!st->capturing) return cudaErrorIllegalState;
    st->capturing = false;
    std::vector<std::function<void()>> ops;
    ops.swap(st->ops);
    if (st->invalidated) return cudaErrorStreamCaptureInvalidated;
    *g = new CUgraph_st{ std::move(ops) };
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags) {
    if (!g) return cudaErrorInvalidValue;
    *x = new CUgraphExec_st{ g->ops };
    return cudaSuccess;
}

/* Replays the recorded work in order (a captured stream is a chain: no concurrency to model). */
cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
    if (!x) return cudaErrorInvalidValue;
    CUstream_st *st = stream_of(s);
    if (!st) return cudaErrorInvalidResourceHandle;
    auto ops = x->ops;
    return enqueue(s, [ops] { for (auto &op : ops) op(); });
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) { delete g; return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) { delete x; return cudaSuccess; }
