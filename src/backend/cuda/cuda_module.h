/* The interface between libkiln and the CUDA backend module (libkiln_cuda.so), which libkiln
 * opens with dlopen at run time so a CUDA build still runs where CUDA libraries, driver or device
 * are missing. Only this header is shared; the module never links libkiln, it gets what it needs
 * from libkiln through kiln_cuda_host. */
#ifndef KILN_CUDA_MODULE_H
#define KILN_CUDA_MODULE_H
#include "backend/backend.h"
#include "kiln/device.h"

/* 4: one backend object per GPU (backend(index)); the session hooks moved into kiln_backend.
 * 5: the host's log function (the module's warnings go through kiln_set_log_callback). */
/* 6: NCCL collectives (comm_new, comm_free, allreduce_mean).
 * 7: all-reduce on the communicator's own streams (allreduce_start / allreduce_join), broadcast. */
#define KILN_CUDA_MODULE_ABI 7
#define KILN_CUDA_MODULE_SYMBOL "kiln_cuda_module_init"

/* Services libkiln gives the module. */
typedef struct kiln_cuda_host {
    int abi;
    kiln_status (*set_error)(kiln_status s, const char *fmt, ...);
    const kiln_op_def *(*op_get)(kiln_op op);
    void (*log)(kiln_log_level level, const char *fmt, ...);
} kiln_cuda_host;

typedef struct kiln_cuda_module {
    int abi;
    int (*device_count)(void);
    /* The backend object of GPU index, NULL when there is no such GPU. Each owns its device's
     * stream, copy stream, cuBLAS/cuDNN handles, caching allocator, error flag and step word; every
     * method first makes its device current, so objects of two GPUs may be used interleaved.
     * alloc/free use the caching allocator; copy is stream-ordered (H2D/D2H from pinned memory
     * are asynchronous); sync waits for the stream and reports device-side data errors;
     * kernel(n) is NULL for nodes without a CUDA kernel (placed on the CPU with copies around);
     * kernels enqueue on the stream of the device last activated and must not synchronise. */
    const kiln_backend *(*backend)(int index);
    kiln_status (*device_info)(int index, kiln_device_info *out);
    kiln_status (*memory_stats)(int index, kiln_memory_stats *out);
    kiln_status (*reset_peak)(int index);
    kiln_status (*set_memory_options)(int index, const kiln_memory_options *o);
    /* Page-locked host memory for feeds/fetches and the input pipeline. */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    /* NCCL among GPUs of this process (cuda_nccl.cu): a communicator over gpus[0..n) (KILN_UNSUPPORTED
     * saying what to install when NCCL cannot be loaded); allreduce_mean replaces, for each bucket
     * b, the buffers bufs[b * n + k] (counts[b] floats on gpus[k]) by their mean over the GPUs, in
     * one group, enqueued on each GPU's stream after its work so far. */
    kiln_status (*comm_new)(const int *gpus, int n, void **comm);
    void (*comm_free)(void *comm);
    kiln_status (*allreduce_mean)(void *comm, float *const *bufs, const size_t *counts, int n_buckets);
    /* The same on each GPU's communication stream (one per GPU, the communicator's), after an
     * event recorded on the GPU's compute stream now: the compute stream goes on with later work
     * (the rest of the backward pass) while the buckets travel. Every later allreduce_start queues
     * behind the earlier ones. allreduce_join makes each compute stream wait for its communication
     * stream's work so far (before the optimizer updates read the averaged gradients). */
    kiln_status (*allreduce_start)(void *comm, float *const *bufs, const size_t *counts, int n_buckets);
    kiln_status (*allreduce_join)(void *comm);
    /* Copies, for each buffer b, bufs[b * n + root] (bytes[b] bytes on gpus[root]) into the other
     * GPUs' bufs[b * n + k], in one NCCL group on the compute streams. */
    kiln_status (*broadcast)(void *comm, void *const *bufs, const size_t *bytes, int n_bufs, int root);
    /* Sums, for each buffer b, bufs[b * n + k] (counts[b] elements of dtype, f32 or f64) over the
     * GPUs, in place, on the communication streams after the compute streams' work so far, and
     * makes the compute streams wait for it (synchronised batch norm's statistics). */
    kiln_status (*allreduce_sum)(void *comm, void *const *bufs, const size_t *counts, int n_bufs, kiln_dtype dtype);
} kiln_cuda_module;

/* Exported by the module. On failure returns NULL and writes a one-line reason into why
 * (e.g. "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version"). */
typedef const kiln_cuda_module *(*kiln_cuda_module_init_fn)(const kiln_cuda_host *host, char *why, size_t why_len);
#endif
