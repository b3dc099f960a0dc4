/* The session's state, shared by the runtime files: session.c (creation, variables),
 * plan_cache.c (plans per fetch set, arenas), executor.c (a run: prepare, loop, finish), steps.c
 * (the step loop), plan_reduce.c / grad_buckets.c / grad_reduce.c (collective steps),
 * capture.c (whole-step CUDA graphs), copy_ahead.c (the next batch's copies) and profile.c. */
#ifndef KILN_RUNTIME_INTERNAL_H
#define KILN_RUNTIME_INTERNAL_H
#include "compile/plan.h"
#include "runtime/session_internal.h"

#define KILN_MAX_PLANS 16
#define KILN_MAX_AHEAD 8   /* fed placeholders copied ahead (kiln_session_run_ahead) */

/* A placeholder's value copied to the device during the previous run: two device slots used in
 * turn, so the copy stream writes one while this run's compute stream reads the other. */
typedef struct ahead_copy {
    int id;                 /* placeholder id, -1 unused */
    int space;              /* the device space it is copied to */
    size_t bytes;
    void *slot[2];
    int cur;                /* slot holding the copy of src */
    const void *src;        /* host data it copies */
    uint64_t run;           /* the run that made it; valid only for the run after */
} ahead_copy;

/* A gradient's alignment padding zeroed before its bucket is reduced: data[space][id] + off, bytes. */
typedef struct rt_pad { int id; int64_t off, bytes; } rt_pad;

/* A cached plan and what the runtime keeps with it: the steps the executor runs (the plan's, or
 * the collective pass's list, plan_reduce.c) and its whole-step CUDA graph. */
typedef struct run_plan {
    kiln_plan *plan;
    kiln_plan_step *steps;      /* plan->steps, or own */
    int n_steps;
    kiln_plan_step *own;        /* the plan's steps with collective and wait steps inserted, or NULL */
    rt_pad *pads;               /* the collective steps' padding ([pad_a, pad_b) of each) */
    int n_pads;
    int n_coll;                 /* collective and wait steps in steps */
    int updates_at;             /* the plan step the optimizer updates start at */
    uint64_t derived_gen, derived_arena;   /* s->coll_gen and s->arena_gen steps were derived for */
    bool derived;
    void *graph_exec;
    uint64_t graph_arena_gen;   /* arena generation the graph was captured with */
    int warm_runs;
    bool capture_failed;
} run_plan;

struct kiln_session {
    kiln_graph *g;
    const kiln_backend *host;         /* cpu or ref */
    const kiln_backend **be;          /* [space]: [0] host, [k] GPU k - 1 */
    int n_spaces;                     /* 1 + the devices */
    kiln_session_opts opts;
    int num_threads;
    int n_ids;
    void **var_data;            /* id -> variable storage, in var_home[id]'s space */
    int8_t *var_home;
    void **const_dev;           /* id -> device copy of a constant (in place[id]'s space) */
    int8_t *place;              /* id -> space (-1: not decided yet) */
    bool *logged;
    run_plan plans[KILN_MAX_PLANS];
    int n_plans, next_evict;
    void **arena;               /* [space] */
    size_t *arena_bytes;        /* [space] */
    uint64_t arena_gen;         /* bumped when an arena moves (captured graphs then re-capture) */
    void ***data;               /* [space][id] -> bound pointer for the current run */
    const kiln_backend *active; /* the device backend kernels were last launched for */
    uint64_t step;
    uint64_t runs;              /* kiln_session_run calls (copies ahead are valid for the next one) */
    ahead_copy ahead[KILN_MAX_AHEAD];
    size_t planned_bytes;
    size_t guard;
    bool warned_soft, verbose;
    bool check_numerics;        /* kiln_session_set_check_numerics: every kernel's output checked (numerics.c) */
    double *prof;               /* KILN_PROFILE=1: seconds per op (indexed by kiln_op), printed at free */
    int64_t *prof_n;
    struct rt_reduce *reduce;   /* data parallelism: the collective service's hooks (grad_reduce.c), or NULL */
    uint64_t coll_gen;          /* bumped when the collective configuration changes */
    int64_t replica_groups, replica_broadcasts;   /* kiln_replicas of this session so far (replicas.c) */
};

static inline size_t node_bytes(const kiln_node *n) { return (size_t)kiln_shape_numel(n->shape) * kiln_dtype_size(n->dtype); }
/* Makes the device backend of `space` current for the kernels launched next (once per switch). */
static inline kiln_status rt_activate(kiln_session *s, int space) {
    const kiln_backend *be = s->be[space];
    if (space == KILN_SPACE_HOST || s->active == be) return KILN_OK;
    kiln_status st = be->activate ? be->activate(be) : KILN_OK;
    if (st == KILN_OK) s->active = be;
    return st;
}
/* A collective step's buffer in this run's binding. */
static inline char *rt_step_buf(kiln_session *s, const kiln_plan_step *stp) { return (char *)s->data[stp->space][stp->buf_id] + stp->buf_off; }

/* session.c */
kiln_status rt_grow_ids(kiln_session *s);
kiln_status rt_place(kiln_session *s);
kiln_status rt_var_store(kiln_session *s, kiln_node *v, int space);
/* plan_cache.c: the cached plan for this fetch set, built (placement, plan, variables moved,
 * arenas grown) on first use. */
kiln_status rt_get_plan(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                        int n_fetches, kiln_node *const *targets, int n_targets, run_plan **out);
void rt_plans_free(kiln_session *s);
/* plan_reduce.c: rp->steps for the session's collective configuration (derived again when it or
 * the arenas changed; allocates only then); rt_steps_free drops them. */
kiln_status rt_derive_steps(kiln_session *s, run_plan *rp);
void rt_steps_free(run_plan *rp);
/* grad_reduce.c: a collective or wait step of this session; started reductions finished after an
 * error; a replica of kiln_replicas (its collectives are NCCL groups, replicas.c) */
kiln_status rt_run_collective(kiln_session *s, const run_plan *rp, const kiln_plan_step *stp);
kiln_status rt_run_wait(kiln_session *s, const run_plan *rp, const kiln_plan_step *stp);
void rt_collectives_abandon(kiln_session *s);
kiln_status rt_set_replica(kiln_session *s, size_t bucket_bytes, bool overlap);
void rt_reduce_free(kiln_session *s);
/* The plan for this fetch set, built afresh (placement, the plan; nothing bound, cached or
 * allocated on a device): plan_query.c's reports. feeds: only their nodes are read. */
kiln_status rt_build_plan(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                          int n_fetches, kiln_node *const *targets, int n_targets, kiln_plan **out);
/* oom_advice.c: the out-of-memory error's advice for plan p whose arena in space sp did not fit
 * (avail: what can be allocated there, 0 unknown; vars: the variables' bytes) into buf. */
void rt_oom_advice(const kiln_plan *p, int sp, size_t avail, size_t vars, char *buf, size_t n);
/* numerics.c: KILN_NUMERIC_ERROR naming the node when the value stp wrote has a NaN or Inf */
kiln_status rt_check_numerics(kiln_session *s, const kiln_plan_step *stp);
/* steps.c: the step loop, rp->steps[from, to) */
kiln_status rt_run_loop(kiln_session *s, run_plan *rp, int from, int to);
/* executor.c: a run is prepare (checks, the plan, outs, binding, the step list; *out NULL when
 * there is nothing to run: measure_only), the loop, finish (given the loop's status: the next
 * batch's copies, device errors, fetches, the step count). */
kiln_status rt_run_prepare(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches, kiln_tensor **outs,
                           int n_fetches, kiln_node *const *targets, int n_targets, const kiln_feed *next, int n_next, run_plan **out);
kiln_status rt_run_finish(kiln_session *s, run_plan *rp, kiln_status st, const kiln_feed *next, int n_next,
                          kiln_node *const *fetches, kiln_tensor **outs, int n_fetches);
/* capture.c: whether this run replays the plan's whole-step CUDA graph (decided per plan: never
 * with collective steps), and the replay (captured on its first use). */
bool rt_capture_replays(kiln_session *s, run_plan *rp);
kiln_status rt_run_captured(kiln_session *s, run_plan *rp);
/* copy_ahead.c */
ahead_copy *rt_ahead_ready(kiln_session *s, const kiln_node *n, int space, const void *src);
kiln_status rt_copy_ahead(kiln_session *s, const kiln_plan *p, const kiln_feed *next, int n_next, bool *issued);
kiln_status rt_copy_ahead_wait(kiln_session *s);
void rt_ahead_free(kiln_session *s);
/* profile.c */
kiln_status rt_profile_init(kiln_session *s, bool on);   /* on: KILN_PROFILE set */
void rt_profile_report(const kiln_session *s);
#endif
