/* The device vtable every backend implements. Host backends (ref, cpu) share host memory, so the
 * executor needs no copies between them: an op a host backend lacks runs on ref. */
#ifndef KILN_BACKEND_H
#define KILN_BACKEND_H
#include "graph/graph_internal.h"

typedef enum kiln_copy_kind { KILN_COPY_H2D, KILN_COPY_D2H, KILN_COPY_D2D, KILN_COPY_KIND_COUNT } kiln_copy_kind;

typedef struct kiln_backend {
    const char *name;                 /* "ref", "cpu", "cuda" */
    kiln_device_type type;
    void *(*alloc)(size_t bytes);     /* NULL on failure */
    void (*free)(void *p);
    kiln_status (*copy)(void *dst, const void *src, size_t bytes, kiln_copy_kind kind);
    kiln_status (*sync)(void);
    /* Kernel for this node on this backend, or NULL when unsupported (the node then runs on ref). */
    kiln_kernel_fn (*kernel)(const kiln_node *n);
    /* Scratch bytes the kernel needs (planned once). NULL: none. */
    size_t (*workspace)(const kiln_node *n);
    /* True when kernel(n) applies the kctx epilogue (bias + relu), so the planner may fuse a
     * following BiasAdd / Relu into n. NULL: never. */
    bool (*fuses)(const kiln_node *n);
} kiln_backend;

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

const kiln_backend *kiln_backend_ref(void);
const kiln_backend *kiln_backend_cpu(void);

/* cpu kernels (src/backend/cpu): NULL when the cpu backend has no kernel for this node
 * (op or dtype), in which case ref runs it. */
kiln_kernel_fn kiln_cpu_kernel(const kiln_node *n);
size_t kiln_cpu_workspace(const kiln_node *n);
bool kiln_cpu_fuses(const kiln_node *n);
#endif
