/* Shared state of the simulator's sources (not seen by the kernels). */
#ifndef CUSIM_SIM_INTERNAL_H
#define CUSIM_SIM_INTERNAL_H
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>
#include "cuda_runtime.h"
#include "cuda_bf16.h"
#include "cuda_fp16.h"

struct CUstream_st {
    int device = 0;                               /* the GPU current when it was created */
    bool capturing = false, invalidated = false;
    std::vector<std::function<void()>> ops;       /* recorded while capturing */
    std::deque<std::function<void()>> pending;    /* enqueued, not yet run (see flush) */
    uint64_t enqueued = 0, executed = 0;          /* work items ever enqueued / run (events mark positions) */
};
/* An event: the position in its stream's work where it was last recorded (sim_event.cpp). */
struct CUevent_st {
    int device = 0;
    CUstream_st *stream = nullptr;                /* nullptr: never recorded (waiting on it is a no-op) */
    uint64_t seq = 0;
};
struct CUgraph_st { std::vector<std::function<void()>> ops; };
struct CUgraphExec_st { std::vector<std::function<void()>> ops; };

namespace cusim {
/* CUSIM_DEVICES=N simulated GPUs (default 1, 0: none); the current one is per host thread, as
 * CUDA's. Each has its own memory budget; streams and allocations belong to the GPU current when
 * they were made. */
int device_count();
int current_device();
/* The GPU whose memory holds p, -1 when p is not device memory. */
int device_of(const void *p);
size_t device_budget();                           /* each GPU's memory */
/* Work that runs kernels (launches, cuBLAS/cuDNN calls) must go to a stream of the current GPU,
 * as CUDA requires: false (reported, cudaErrorInvalidResourceHandle) otherwise. */
bool launchable(const char *what, cudaStream_t s);
/* The last error, as cudaGetLastError returns (and clears) it. */
void set_error(cudaError_t e);
/* Resolves the legacy stream 0; NULL for a stream that was never created (or destroyed). */
CUstream_st *stream_of(cudaStream_t s);
/* Appends op to s's work (or to its capture). Work runs only when the host must see its effects
 * (flush): as if the GPU were infinitely slow, so a host that reads results or reuses pinned
 * buffers without synchronising sees what it would see on a real GPU at worst. */
cudaError_t enqueue(cudaStream_t s, std::function<void()> op);
void flush(CUstream_st *st);
/* Runs st's work up to its seq-th item (an event's position). */
void flush_until(CUstream_st *st, uint64_t seq);
bool stream_alive(CUstream_st *st);
void flush_all();
/* Device memory is inaccessible (PROT_NONE) to the host except while device work runs: host code
 * that touches it faults, as on a GPU. Nestable. */
struct device_window { device_window(); ~device_window(); };
bool pinned(const void *p, size_t bytes);
/* Runs a grid now (fibers; sim_fiber.cpp). */
void run_grid(const char *name, dim3 grid, dim3 block, const std::function<void()> &body);
/* [p, p + bytes) inside one device allocation. */
bool in_device_memory(const void *p, size_t bytes);
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));   /* message on stderr */

/* Element types of the library shims (cuBLAS, cuDNN): loads widen to double, stores round once. */
enum class elem { f32, f64, f16, bf16 };
inline size_t elem_size(elem t) { return t == elem::f64 ? 8 : t == elem::f32 ? 4 : 2; }
inline double load(const void *p, elem t, size_t i) {
    switch (t) {
    case elem::f32: return ((const float *)p)[i];
    case elem::f64: return ((const double *)p)[i];
    case elem::f16: return __half2float(((const __half *)p)[i]);
    default: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    }
}
inline void store(void *p, elem t, size_t i, double v) {
    switch (t) {
    case elem::f32: ((float *)p)[i] = (float)v; break;
    case elem::f64: ((double *)p)[i] = v; break;
    case elem::f16: ((__half *)p)[i] = __float2half_rn((float)v); break;
    default: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v); break;
    }
}
}
#endif
