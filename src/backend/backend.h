/* Backend objects: one per device (ref, cpu, and each GPU). Every method takes the object first;
 * it carries the device index and the backend's private state, so two GPUs are two objects of the
 * same backend and a caller never has to say which device is "current". Host backends (ref, cpu)
 * share host memory, so the executor needs no copies between them: an op a host backend lacks
 * runs on ref. */
#ifndef KILN_BACKEND_H
#define KILN_BACKEND_H
#include "graph/graph_internal.h"

/* KILN_COPY_PEER: device to device where dst and src may be on different GPUs (unified
 * addressing, stream-ordered on b's stream); D2D is within b's device. */
typedef enum kiln_copy_kind { KILN_COPY_H2D, KILN_COPY_D2H, KILN_COPY_D2D, KILN_COPY_PEER, KILN_COPY_KIND_COUNT } kiln_copy_kind;

typedef struct kiln_backend kiln_backend;
struct kiln_backend {
    const char *name;                 /* "ref", "cpu", "cuda" */
    kiln_device_type type;            /* KILN_DEVICE_CPU / KILN_DEVICE_GPU */
    int index;                        /* device index within its type: /gpu:1 -> 1 */
    void *ctx;                        /* backend-private (the CUDA module's per-device state) */
    void *(*alloc)(const kiln_backend *b, size_t bytes);   /* NULL on failure (error set) */
    void (*free)(const kiln_backend *b, void *p);
    kiln_status (*copy)(const kiln_backend *b, void *dst, const void *src, size_t bytes, kiln_copy_kind kind);
    kiln_status (*sync)(const kiln_backend *b);
    /* Makes b the device the kernels launched next run on (kernels take no backend argument).
     * NULL: nothing to do (host backends). */
    kiln_status (*activate)(const kiln_backend *b);
    /* Kernel for this node on this backend, or NULL when unsupported (the node then runs on ref). */
    kiln_kernel_fn (*kernel)(const kiln_backend *b, const kiln_node *n);
    /* Scratch bytes the kernel needs (planned once). NULL: none. */
    size_t (*workspace)(const kiln_backend *b, const kiln_node *n);
    /* True when kernel(n) applies the kctx epilogue (bias + relu), so the planner may fuse a
     * following BiasAdd / Relu into n. NULL: never. */
    bool (*fuses)(const kiln_backend *b, const kiln_node *n);

    /* ---- optional device services, NULL when absent ---- */
    /* Whole-step graphs (CUDA graphs): the kernels enqueued between capture_begin and capture_end
     * become an executable graph (opaque handle) replayed by graph_launch. A failure returns a
     * status; the executor then falls back to plain launches. All four or none. */
    kiln_status (*capture_begin)(const kiln_backend *b);
    kiln_status (*capture_end)(const kiln_backend *b, void **graph_exec);
    kiln_status (*graph_launch)(const kiln_backend *b, void *graph_exec);
    void (*graph_free)(const kiln_backend *b, void *graph_exec);
    /* Captured Dropout kernels read the session step from a device word (a replayed graph keeps
     * its launch arguments): set it, outside capture, before each graph_launch. */
    kiln_status (*set_step)(const kiln_backend *b, uint64_t step);
    /* The largest single allocation b can serve now (limit and free memory included): the
     * out-of-memory advice sizes batches by it. */
    size_t (*max_alloc)(const kiln_backend *b);
    /* Host -> device copies on a second stream, overlapping the step being computed
     * (kiln_session_run_ahead); copy_ahead_wait blocks until they are done (the host buffers may
     * then be reused). Both or neither. */
    kiln_status (*copy_ahead)(const kiln_backend *b, void *dst, const void *src, size_t bytes);
    kiln_status (*copy_ahead_wait)(const kiln_backend *b);
};

/* For every backend's convolution kernels: x (or dx), w (or dw) and y (or dy) of Conv2D and its
 * two gradients, whichever op n is; false when n is none of them or an operand is not rank 4. */
static inline bool kiln_conv_shapes(const kiln_node *n, kiln_shape *xs, kiln_shape *ws, kiln_shape *ys) {
    switch (n->op) {
    case KILN_OP_CONV2D: *xs = n->in[0]->shape; *ws = n->in[1]->shape; *ys = n->shape; break;
    case KILN_OP_CONV2D_BWD_INPUT: *ws = n->in[0]->shape; *ys = n->in[1]->shape; *xs = n->shape; break;
    case KILN_OP_CONV2D_BWD_FILTER: *xs = n->in[0]->shape; *ys = n->in[1]->shape; *ws = n->shape; break;
    default: return false;
    }
    return xs->rank == 4 && ys->rank == 4 && ws->rank == 4;
}

/* Collectives over data-parallel replicas, a service of the backend object that owns the memory:
 * NCCL among the GPUs of this process (kiln_cuda_collectives, registry.c), MPI among processes
 * (host memory, src/dist), the identity for one device (kiln_collectives_identity). Buffer b of
 * member k is bufs[b * members + k] (members: the GPUs joined; 1 for a process). mean replaces each
 * bucket by its mean over the replicas (blocking on the host, or enqueued on the devices' streams
 * after their work so far); start/finish are its nonblocking form (finish completes every started
 * one; progress, optional, lets them move between steps); sum adds f32/f64 buffers in place;
 * broadcast copies member root's bytes to the others. NULL methods: not offered. */
typedef struct kiln_collectives {
    const char *name;                /* "nccl", "mpi", "identity" */
    void *ctx;
    int members;
    bool device;                     /* buffers are device memory (NCCL) */
    kiln_status (*mean)(void *ctx, float *const *bufs, const size_t *counts, int n);
    kiln_status (*start)(void *ctx, float *const *bufs, const size_t *counts, int n);
    kiln_status (*progress)(void *ctx);
    kiln_status (*finish)(void *ctx);
    kiln_status (*sum)(void *ctx, void *const *bufs, const size_t *counts, int n, kiln_dtype dtype);
    kiln_status (*broadcast)(void *ctx, void *const *bufs, const size_t *bytes, int n, int root);
    void (*free)(void *ctx);
} kiln_collectives;

/* One device, one replica: every collective leaves its buffers as they are. */
const kiln_collectives *kiln_collectives_identity(void);

const kiln_backend *kiln_backend_ref(void);
const kiln_backend *kiln_backend_cpu(void);

/* cpu kernels (src/backend/cpu): NULL when the cpu backend has no kernel for this node
 * (op or dtype), in which case ref runs it. */
kiln_kernel_fn kiln_cpu_kernel(const kiln_node *n);
size_t kiln_cpu_workspace(const kiln_node *n);
bool kiln_cpu_fuses(const kiln_node *n);
#endif
