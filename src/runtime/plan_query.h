/* What a session's step would need, without running it: the memory plan's figures for memory
 * reports (kiln summary), the largest batch that fits (--batch-size auto) and out-of-memory
 * advice. For src/nn and the runtime; no state is changed but the session's placement. */
#ifndef KILN_PLAN_QUERY_H
#define KILN_PLAN_QUERY_H
#include "kiln/graph.h"
#include "compile/plan.h"

typedef struct kiln_step_memory {
    int space;                /* the memory space the step's kernels run in: a GPU's, else the host (0) */
    const char *backend;      /* its backend: "cpu", "ref", "cuda" */
    int64_t batch;            /* the leading dim of the feeds (-1: none) */
    size_t arena;             /* the plan's arena in that space */
    size_t grad_block;        /* the gradient block inside it (the gradients the updates read) */
    size_t variables;         /* the variables the step reads that live there */
    size_t avail;             /* what that device can still allocate; 0 for the host (unknown) */
} kiln_step_memory;

/* Plans a run of (feeds, fetches, targets) on s as kiln_session_run would, allocating nothing on
 * a device. value_bytes (NULL, or one entry per graph node, zeroed by the caller): the bytes of
 * each value planned in that space's arena are written at its node id (max with what is there);
 * grad_bytes likewise: at a variable's id, the bytes of the gradient its update reads. plan (may
 * be NULL): the plan itself, for kiln_plan_arena_at; free with kiln_plan_free. */
kiln_status kiln_session_step_memory(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                                     int n_fetches, kiln_node *const *targets, int n_targets, kiln_step_memory *out,
                                     int64_t *value_bytes, int64_t *grad_bytes, kiln_plan **plan);
/* Bytes of the variables of plan p that live in its space (as kiln_step_memory.variables). */
size_t kiln_step_variable_bytes(kiln_session *s, const kiln_plan *p, int space);
#endif
