/* Execution plan: which nodes run, where, with which kernel, the copies between memory spaces,
 * and a static memory plan (one arena per space, offsets from value lifetimes). Built by the
 * compile passes (placement decides the spaces first), run by src/runtime. */
#ifndef KILN_PLAN_H
#define KILN_PLAN_H
#include "backend/backend.h"
#include "compile/memplan.h"

/* Memory spaces: 0 is host memory (ref and cpu backends share it); 1.. are devices. */
enum { KILN_SPACE_HOST = 0, KILN_SPACE_DEVICE = 1 };
/* KERNEL and COPY come from kiln_plan_build; COLLECTIVE and WAIT are inserted by the collective
 * pass (src/runtime/plan_reduce.c) when the session has a collective service (data parallelism). */
typedef enum kiln_step_kind { KILN_STEP_KERNEL, KILN_STEP_COPY, KILN_STEP_COLLECTIVE, KILN_STEP_WAIT } kiln_step_kind;
/* A collective step's operation: MEAN (blocking all-reduce mean of a gradient bucket), START (the
 * same, nonblocking: finished by a WAIT_COLLECTIVES step), PROGRESS (lets started ones move, MPI),
 * SUM (CrossReplicaSum's output summed over the replicas, right after its kernel). A WAIT step:
 * DEVICES (every device stream the plan uses is done) or COLLECTIVES (the started ones are done). */
typedef enum kiln_coll_op { KILN_COLL_MEAN, KILN_COLL_START, KILN_COLL_PROGRESS, KILN_COLL_SUM } kiln_coll_op;
typedef enum kiln_wait_op { KILN_WAIT_DEVICES, KILN_WAIT_COLLECTIVES } kiln_wait_op;

typedef struct kiln_plan_step {
    kiln_step_kind kind;
    kiln_node *node;            /* kernel: the node run; copy: the node whose value is copied */
    int space;                  /* kernel: where it runs; copy: the destination space (from: its home) */
    kiln_kernel_fn kernel;
    const char *backend;        /* "cpu", "ref", "cuda", "copy" */
    int view_base;              /* kernel: index of its first input view in plan->views */
    int64_t ws_offset;          /* arena offset of its workspace (in `space`), or -1 */
    size_t ws_bytes;
    int out_id;                 /* node whose buffer the kernel writes: itself, or the last node fused into it */
    int bias_id;                /* fused BiasAdd's bias, or -1 */
    bool relu;                  /* fused Relu */
    /* collective / wait steps: the buffer is data[space][buf_id] + buf_off (a bound pointer, so the
     * step stays valid when an arena moves), count elements of node's dtype (f32 for gradients) */
    int op;                     /* kiln_coll_op or kiln_wait_op */
    int buf_id;
    int64_t buf_off, count;
    int pad_a, pad_b;           /* its gradients' padding to zero first: the pass's pads [pad_a, pad_b) */
    int at;                     /* the kernel/copy step it is placed before (the plan's index) */
} kiln_plan_step;

typedef struct kiln_plan {
    /* key */
    int *feed_ids, n_feeds;
    int *fetch_ids, n_fetches;
    int *target_ids, n_targets;
    /* schedule */
    kiln_plan_step *steps;
    int n_steps;
    int n_feed_copies;          /* the first n_feed_copies steps copy fed placeholders to a device */
    kiln_view *views;
    int n_views;
    int *sources;               /* ids of source nodes the plan reads */
    int n_sources;
    /* id-indexed (n_ids entries; offset: n_spaces * n_ids) */
    int n_ids, n_spaces;
    int8_t *home;               /* space of each node's own value (-1: not in the plan) */
    int *alias_of;              /* id whose storage it shares (ALIAS0 chains resolved), or -1 */
    int64_t *offset;            /* [space * n_ids + id]: arena offset of the value there, or -1 */
    size_t *arena_bytes;        /* [space] */
    /* the gradient block of each space: the gradients the optimizer updates read, back to back in
     * node order (each 64-byte aligned), so an all-reduce is one call per bucket; -1 / 0: none */
    int64_t *grad_offset, *grad_bytes;    /* [space] */
    int n_grads;                          /* gradients in the blocks */
    kiln_plan_buf *bufs;        /* the planned buffers (for kiln_plan_arena_at) */
    int n_bufs;
    int64_t batch;              /* the leading dim all feeds share, or -1 */
    size_t guard;               /* bytes after each host output kept free and checked (tests) */
    int device_space;           /* the one device space the kernels run in, -1: none, -2: several */
    bool host_steps_between;    /* some host kernel or mid-step copy: no whole-step graph capture */
    bool has_dropout;           /* step-dependent RNG ops (dropout): capture only with set_step */
} kiln_plan;

static inline int64_t kiln_plan_offset(const kiln_plan *p, int space, int id) { return p->offset[(size_t)space * p->n_ids + id]; }

typedef struct kiln_plan_request {
    kiln_node *const *feeds; int n_feeds;
    kiln_node *const *fetches; int n_fetches;
    kiln_node *const *targets; int n_targets;
    const kiln_backend *const *backends;   /* [space]: [0] the host backend (cpu or ref), then devices */
    int n_spaces;
    const int8_t *place;        /* id -> space, for every needed node (from the placement pass) */
    size_t guard;
    bool no_fusion;
} kiln_plan_request;

/* KILN_OUT_OF_MEMORY when host memory runs out, KILN_UNSUPPORTED when a device lacks a kernel. */
kiln_status kiln_plan_build(kiln_graph *g, const kiln_plan_request *r, kiln_plan **out);
void kiln_plan_free(kiln_plan *p);
/* The arena bytes of `space` this plan would need if its batch (plan->batch) were `batch`: the
 * same lifetimes and placement with batch-sized buffers rescaled. SIZE_MAX when out of memory. */
size_t kiln_plan_arena_at(const kiln_plan *p, int space, int64_t batch);
/* Marks the nodes the fetches and targets need (need must hold g->n_nodes entries). */
void kiln_plan_needed(kiln_graph *g, kiln_node *const *fetches, int n_fetches, kiln_node *const *targets,
                      int n_targets, bool *need);
#endif
