/* The CUDA runtime API on the CPU: CUSIM_DEVICES GPUs (default 1), "device" memory from the host
 * heap within a fixed budget per GPU (sim_memory.cpp), pinned memory = heap memory that is also a
 * valid device address (mapped), streams as queues of work belonging to the GPU current at their
 * creation, run when the host synchronises, except on a stream under capture, where work is
 * recorded for cudaGraphLaunch to replay. Checks what a real device would reject: copies/memsets
 * whose device side is not inside one device allocation, kernels given host pointers or another
 * GPU's memory, kernels launched into a stream of a GPU that is not current, synchronising a
 * stream that is being captured. */
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include "sim_internal.h"

namespace cusim {
namespace {
thread_local cudaError_t last_error = cudaSuccess;
std::set<CUstream_st *> streams;
CUstream_st legacy;                             /* stream 0 (of every GPU: no per-device work to tell apart) */
thread_local int current;

int parse_devices() {
    const char *v = getenv("CUSIM_DEVICES");
    if (!v || !*v) return 1;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n > 16) { fail("CUSIM_DEVICES=%s: expected 0 to 16 GPUs; simulating 1", v); return 1; }
    return (int)n;
}
}  // namespace

int device_count() { static const int n = parse_devices(); return n; }
int current_device() { return current; }

bool launchable(const char *what, cudaStream_t s) {
    CUstream_st *st = stream_of(s);
    if (!st) return true;                          /* the caller reports the bad stream */
    if (s && st->device != current) {
        fail("%s: launched into a stream of GPU %d while GPU %d is current", what, st->device, current);
        set_error(cudaErrorInvalidResourceHandle);
        return false;
    }
    return true;
}

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
    else { st->pending.push_back(std::move(op)); st->enqueued++; }
    return cudaSuccess;
}

/* In order, one item at a time: an item may wait on an event of another stream, which runs that
 * stream up to the event first (cudaStreamWaitEvent). */
void flush_until(CUstream_st *st, uint64_t seq) {
    if (st->executed >= seq || st->pending.empty()) return;
    device_window w;
    while (st->executed < seq && !st->pending.empty()) {
        std::function<void()> op = std::move(st->pending.front());
        st->pending.pop_front();
        st->executed++;
        op();
    }
}

void flush(CUstream_st *st) { flush_until(st, st->enqueued); }

bool stream_alive(CUstream_st *st) { return st == &legacy || streams.count(st); }

void flush_all() {
    flush(&legacy);
    for (CUstream_st *st : streams) flush(st);
}

}  // namespace cusim

using namespace cusim;

cudaError_t cudaGetDeviceCount(int *count) {
    *count = device_count();
    return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}
cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= device_count()) return cudaErrorInvalidDevice;
    current = d;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) { *d = current; return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (d < 0 || d >= device_count()) return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Kiln CUDA simulator (CPU)");
    p->totalGlobalMem = device_budget();
    p->pciBusID = 0x10 + d;   /* each GPU its own slot, as nvidia-smi shows */
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
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    default: return "unknown error";
    }
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
    if (flags & ~1u) return cudaErrorInvalidValue;
    *s = new CUstream_st();
    (*s)->device = current;
    streams.insert(*s);
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!streams.count(s)) return cudaErrorInvalidResourceHandle;
    flush(s);
    streams.erase(s);
    delete s;
    return cudaSuccess;
}

/* Runs the stream's work; synchronising a capturing stream is illegal and breaks the capture.
 * Errors of the work (a barrier deadlock) are returned here, as a GPU reports kernel faults. */
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    CUstream_st *st = stream_of(s);
    if (!st) return cudaErrorInvalidResourceHandle;
    if (st->capturing) {
        fail("cudaStreamSynchronize on a stream that is being captured");
        st->invalidated = true;
        return cudaErrorStreamCaptureUnsupported;
    }
    flush(st);
    return cudaPeekAtLastError();
}
cudaError_t cudaDeviceSynchronize(void) {
    for (CUstream_st *st : streams)
        if (st->capturing) { st->invalidated = true; return cudaErrorStreamCaptureUnsupported; }
    flush_all();
    return cudaPeekAtLastError();
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
