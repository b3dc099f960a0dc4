/* The interface between libkiln and the CUDA backend module (libkiln_cuda.so), which libkiln
 * opens with dlopen at run time so a CUDA build still runs where CUDA libraries, driver or device
 * are missing. Only this header is shared; the module never links libkiln, it gets what it needs
 * from libkiln through kiln_cuda_host. */
#ifndef KILN_CUDA_MODULE_H
#define KILN_CUDA_MODULE_H
#include "backend/backend.h"
#include "kiln/device.h"

#define KILN_CUDA_MODULE_ABI 3
#define KILN_CUDA_MODULE_SYMBOL "kiln_cuda_module_init"

/* Services libkiln gives the module. */
typedef struct kiln_cuda_host {
    int abi;
    kiln_status (*set_error)(kiln_status s, const char *fmt, ...);
    const kiln_op_def *(*op_get)(kiln_op op);
} kiln_cuda_host;

typedef struct kiln_cuda_module {
    int abi;
    /* The device backend: alloc/free from the caching allocator of the current device; copy is
     * stream-ordered (H2D/D2H from pinned memory are asynchronous); sync waits for the stream;
     * kernel(n) is NULL for nodes without a CUDA kernel (placed on the CPU with copies around);
     * kernels enqueue on the module's stream and must not synchronise. */
    const kiln_backend *backend;
    int (*device_count)(void);
    kiln_status (*device_info)(int index, kiln_device_info *out);
    kiln_status (*set_device)(int index);
    kiln_status (*memory_stats)(int index, kiln_memory_stats *out);
    kiln_status (*reset_peak)(int index);
    kiln_status (*set_memory_options)(int index, const kiln_memory_options *o);
    /* Page-locked host memory for feeds/fetches and the input pipeline. */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    /* Whole-step CUDA graphs: capture the kernels enqueued between begin and end into an
     * executable graph (opaque handle), then replay it. Failures return a status; the executor
     * then falls back to plain launches. */
    kiln_status (*capture_begin)(void);
    kiln_status (*capture_end)(void **graph_exec);
    kiln_status (*graph_launch)(void *graph_exec);
    void (*graph_free)(void *graph_exec);
    /* Captured Dropout kernels read the session step from a device word (a replayed graph keeps
     * its launch arguments): set it, outside capture, before each graph_launch. */
    kiln_status (*set_step)(uint64_t step);
    /* Copies ahead: host -> device on a second (copy) stream, so the next batch's transfer
     * overlaps this step's compute; copy_ahead_wait blocks until those copies are done (the host
     * buffers may then be reused). */
    kiln_status (*copy_ahead)(void *dst, const void *src, size_t bytes);
    kiln_status (*copy_ahead_wait)(void);
    /* The largest single allocation the current device's allocator can serve now (within the
     * memory limit and the driver's free memory): the out-of-memory advice sizes batches by it. */
    size_t (*max_alloc)(void);
} kiln_cuda_module;

/* Exported by the module. On failure returns NULL and writes a one-line reason into why
 * (e.g. "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version"). */
typedef const kiln_cuda_module *(*kiln_cuda_module_init_fn)(const kiln_cuda_host *host, char *why, size_t why_len);
#endif
