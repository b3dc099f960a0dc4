/* Static memory plan: one arena per session, offsets from tensor lifetimes. */
#ifndef KILN_PLAN_H
#define KILN_PLAN_H
#include "backend/backend.h"

typedef struct kiln_plan_step {
    kiln_node *node;
    kiln_kernel_fn kernel;
    const char *backend;        /* backend whose kernel runs this node ("cpu" or "ref") */
    int view_base;              /* index of its first input view in plan->views */
    int64_t out_offset;         /* arena offset, or -1: source / alias (see data binding) */
    int64_t ws_offset;          /* arena offset of its workspace, or -1 */
    size_t ws_bytes;
} kiln_plan_step;

typedef struct kiln_plan {
    /* key */
    int *feed_ids, n_feeds;
    int *fetch_ids, n_fetches;
    int *target_ids, n_targets;
    /* schedule */
    kiln_plan_step *steps;
    int n_steps;
    kiln_view *views;           /* inputs of every step, flattened */
    int n_views;
    int *sources;               /* ids of source nodes the plan reads */
    int n_sources;
    int *alias_of;              /* node id -> id whose data it shares (ALIAS0), or -1; graph-sized */
    int64_t *offset;            /* node id -> arena offset or -1; graph-sized */
    int n_ids;                  /* size of the id-indexed arrays */
    size_t arena_bytes;
    size_t guard;               /* bytes after each output kept free and checked (tests) */
} kiln_plan;

/* Builds a plan for the given nodes. The caller has validated feeds. guard > 0 leaves that many
 * bytes after every output buffer, for overrun checks. */
kiln_status kiln_plan_build(kiln_graph *g, const kiln_backend *be, kiln_node *const *feeds, int n_feeds,
                            kiln_node *const *fetches, int n_fetches, kiln_node *const *targets,
                            int n_targets, size_t guard, kiln_plan **out);
void kiln_plan_free(kiln_plan *p);
#endif
