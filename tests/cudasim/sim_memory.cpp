/* Device and pinned memory and copies. Each GPU's memory is a fixed budget of page-aligned mappings
 * (cudaMalloc's 256-byte alignment and more), filled with 0xff bytes (NaN in every float type) as
 * real device memory starts as garbage, and PROT_NONE while no device work runs, so host code
 * that dereferences a device pointer faults. Pinned memory is heap memory that is also a device
 * address (mapped, unified addressing). Copies follow the documented asynchrony: with pinned
 * host memory they run in stream order (later); H2D from pageable memory stages the source at the
 * call; D2H to pageable memory waits for the stream. A copy or memset whose device side is not
 * inside one device allocation fails with cudaErrorInvalidValue. */
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include "sim_internal.h"

namespace cusim {
namespace {
const size_t kBudget = (size_t)4 << 30;                  /* reported memory of each GPU */
size_t in_use[16];                                       /* per GPU */
std::map<uintptr_t, size_t> dev_allocs, host_allocs;     /* base -> bytes */
std::map<uintptr_t, int> owner;                          /* device allocation base -> its GPU */
int window_depth;                                        /* device_window nesting */

size_t page_round(size_t b) { size_t pg = (size_t)sysconf(_SC_PAGESIZE); return (b + pg - 1) / pg * pg; }

void protect_all(int prot) {
    for (auto &a : dev_allocs) mprotect((void *)a.first, page_round(a.second ? a.second : 1), prot);
}

/* [p, p + bytes] inside one allocation of m (p + bytes may be its end). */
bool in_map(const std::map<uintptr_t, size_t> &m, const void *p, size_t bytes) {
    uintptr_t a = (uintptr_t)p;
    auto it = m.upper_bound(a);
    if (it == m.begin()) return false;
    --it;
    return a - it->first <= it->second && bytes <= it->second - (a - it->first);
}

/* A fault in device memory is host code touching it: say so, then die as before. */
void on_segv(int sig, siginfo_t *si, void *) {
    if (in_map(dev_allocs, si->si_addr, 0) && window_depth == 0) {
        static const char msg[] = "cudasim: the host dereferenced device memory (a GPU build would crash or read garbage)\n";
        ssize_t r = write(2, msg, sizeof msg - 1);
        (void)r;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}
struct segv_hook {
    segv_hook() {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
        sigaction(SIGSEGV, &sa, nullptr);
    }
} hook;
}  // namespace

device_window::device_window() { if (window_depth++ == 0) protect_all(PROT_READ | PROT_WRITE); }
device_window::~device_window() { if (--window_depth == 0) protect_all(PROT_NONE); }

bool in_device_memory(const void *p, size_t bytes) { return in_map(dev_allocs, p, bytes); }
size_t device_budget() { return kBudget; }

int device_of(const void *p) {
    if (!in_map(dev_allocs, p, 0)) return -1;
    return owner[std::prev(dev_allocs.upper_bound((uintptr_t)p))->first];
}
bool pinned(const void *p, size_t bytes) { return in_map(host_allocs, p, bytes); }
bool device_accessible(const void *p) { return !p || in_map(dev_allocs, p, 0) || in_map(host_allocs, p, 0); }

/* Kiln enables no peer access: a kernel reads only its own GPU's memory (and mapped pinned memory). */
bool on_stream_device(const void *p, cudaStream_t s) {
    int d = device_of(p);
    CUstream_st *st = stream_of(s);
    return d < 0 || !st || d == (s ? st->device : current_device());
}

void wrong_device(const char *kernel, int index, const void *p, cudaStream_t s) {
    CUstream_st *st = stream_of(s);
    fail("kernel %s: argument %d (%p) is memory of GPU %d, but the kernel runs on GPU %d (no peer access)", kernel, index, p,
         device_of(p), s && st ? st->device : current_device());
    set_error(cudaErrorIllegalAddress);
}

void bad_argument(const char *kernel, int index, const void *p) {
    fail("kernel %s: argument %d (%p) is neither device memory nor mapped pinned memory", kernel, index, p);
    set_error(cudaErrorIllegalAddress);
}
}  // namespace cusim

using namespace cusim;

/* Of the current GPU, as CUDA's. */
cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot) { *fr = kBudget - in_use[current_device()]; *tot = kBudget; return cudaSuccess; }

/* On the current GPU. */
cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = nullptr;
    int dev = current_device();
    if (bytes > kBudget - in_use[dev]) return cudaErrorMemoryAllocation;
    size_t len = page_round(bytes ? bytes : 1);
    void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
    memset(m, 0xff, bytes);
    if (window_depth == 0) mprotect(m, len, PROT_NONE);
    dev_allocs[(uintptr_t)m] = bytes;
    owner[(uintptr_t)m] = dev;
    in_use[dev] += bytes;
    *p = m;
    return cudaSuccess;
}

/* Like the real one, cudaFree waits for the device first. */
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    auto it = dev_allocs.find((uintptr_t)p);
    if (it == dev_allocs.end()) { fail("cudaFree(%p): not a device allocation", p); return cudaErrorInvalidValue; }
    flush_all();
    in_use[owner[(uintptr_t)p]] -= it->second;
    owner.erase((uintptr_t)p);
    munmap(p, page_round(it->second ? it->second : 1));
    dev_allocs.erase(it);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags) {
    *p = nullptr;
    if (flags & ~0x7u) return cudaErrorInvalidValue;
    void *m = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!m) return cudaErrorMemoryAllocation;
    memset(m, 0xff, bytes);
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

/* Waits for the device first (pending copies may still read the buffer). */
cudaError_t cudaFreeHost(void *p) {
    if (!p) return cudaSuccess;
    auto it = host_allocs.find((uintptr_t)p);
    if (it == host_allocs.end()) { fail("cudaFreeHost(%p): not a pinned allocation", p); return cudaErrorInvalidValue; }
    flush_all();
    host_allocs.erase(it);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    if (bytes == 0) return cudaSuccess;
    if (kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
    if (kind == cudaMemcpyDefault)
        kind = (cudaMemcpyKind)((in_device_memory(src, bytes) ? 2 : 0) + (in_device_memory(dst, bytes) ? 1 : 0));
    bool dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if ((dd && !in_device_memory(dst, bytes)) || (sd && !in_device_memory(src, bytes))) {
        fail("cudaMemcpy kind %d of %zu bytes %p -> %p: the device side is not inside one device allocation", (int)kind, bytes, src, dst);
        return cudaErrorInvalidValue;
    }
    CUstream_st *st = stream_of(s);
    if (!st) return cudaErrorInvalidResourceHandle;
    bool src_host = !sd, dst_host = !dd;
    if (!st->capturing && src_host && !pinned(src, bytes)) {              /* pageable source: staged now */
        auto stage = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + bytes);
        return enqueue(s, [=] { memcpy(dst, stage->data(), bytes); });
    }
    if (!st->capturing && dst_host && !pinned(dst, bytes)) {              /* pageable destination: waits */
        flush(st);
        device_window w;
        memmove(dst, src, bytes);
        return cudaPeekAtLastError();
    }
    return enqueue(s, [=] { memmove(dst, src, bytes); });
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    flush_all();
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, 0);
    flush_all();
    return e;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
    if (bytes == 0) return cudaSuccess;
    if (!in_device_memory(p, bytes)) { fail("cudaMemset of %zu bytes at %p: not inside one device allocation", bytes, p); return cudaErrorInvalidValue; }
    return enqueue(s, [=] { memset(p, value, bytes); });
}
cudaError_t cudaMemset(void *p, int value, size_t bytes) { return cudaMemsetAsync(p, value, bytes, 0); }
