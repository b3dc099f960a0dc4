/* The executor: a run is prepare (checks its arguments, gets the cached plan and its step list,
 * binds variables / feeds / arenas to the plan's values), the step loop (steps.c) or the replay of
 * the captured step (capture.c), and finish (copies the next batch ahead, surfaces device errors,
 * returns the fetches). No heap allocation once a plan exists. */
#include <string.h>
#include "runtime/runtime_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static kiln_status check_feeds(const kiln_feed *feeds, int n_feeds) {
    for (int i = 0; i < n_feeds; i++) {
        const kiln_feed *f = &feeds[i];
        if (!f->node || !f->value) return kiln_set_error(KILN_INVALID_ARGUMENT, "feed %d: NULL node or value", i);
        if (f->node->op != KILN_OP_PLACEHOLDER)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "feed %d: '%s' is a %s, only placeholders can be fed", i, f->node->name, kiln_op_get(f->node->op)->name);
        if (f->value->dtype != f->node->dtype || !kiln_shape_equal(f->value->shape, f->node->shape)) {
            char a[96], b[96];
            return kiln_set_error(KILN_INVALID_ARGUMENT, "feed for placeholder '%s': expected %s %s, got %s %s", f->node->name,
                                  kiln_dtype_name(f->node->dtype), kiln_shape_str(f->node->shape, a, sizeof a),
                                  kiln_dtype_name(f->value->dtype), kiln_shape_str(f->value->shape, b, sizeof b));
        }
    }
    return KILN_OK;
}

static kiln_status check_nodes(kiln_session *s, kiln_node *const *nodes, int n, const char *what) {
    if (n > 0 && !nodes) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: %s array is NULL", what);
    for (int i = 0; i < n; i++) {
        if (!nodes[i]) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: %s %d is NULL (did building it fail? %s)", what, i, s->g->error);
        if (nodes[i]->graph != s->g) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: %s '%s' belongs to another graph", what, nodes[i]->name);
    }
    return KILN_OK;
}

static kiln_status check_outs(kiln_node *const *fetches, kiln_tensor **outs, int n_fetches) {
    if (n_fetches > 0 && !outs) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: outs is NULL");
    for (int i = 0; i < n_fetches; i++)
        if (outs[i] && (outs[i]->dtype != fetches[i]->dtype || !kiln_shape_equal(outs[i]->shape, fetches[i]->shape))) {
            char a[96], b[96];
            return kiln_set_error(KILN_INVALID_ARGUMENT, "fetch '%s' is %s %s but the output tensor given is %s %s", fetches[i]->name,
                                  kiln_dtype_name(fetches[i]->dtype), kiln_shape_str(fetches[i]->shape, a, sizeof a),
                                  kiln_dtype_name(outs[i]->dtype), kiln_shape_str(outs[i]->shape, b, sizeof b));
        }
    return KILN_OK;
}

static void bind(kiln_session *s, kiln_plan *p, const kiln_feed *feeds, int n_feeds) {
    for (int i = 0; i < p->n_sources; i++) {
        kiln_node *n = s->g->nodes[p->sources[i]];
        int sp = p->home[n->id];
        if (n->op == KILN_OP_VARIABLE) s->data[sp][n->id] = s->var_data[n->id];
        else if (n->op == KILN_OP_CONSTANT) s->data[sp][n->id] = sp != KILN_SPACE_HOST ? s->const_dev[n->id] : n->value->data;
    }
    for (int i = 0; i < n_feeds; i++) s->data[KILN_SPACE_HOST][feeds[i].node->id] = feeds[i].value->data;
    for (int sp = 0; sp < s->n_spaces; sp++)
        for (int id = 0; id < p->n_ids; id++)
            if (kiln_plan_offset(p, sp, id) >= 0) s->data[sp][id] = (char *)s->arena[sp] + kiln_plan_offset(p, sp, id);
    for (int id = 0; id < p->n_ids; id++)
        if (p->alias_of[id] >= 0 && p->home[id] >= 0) {
            int sp = p->home[id];
            if (kiln_plan_offset(p, sp, id) < 0) s->data[sp][id] = s->data[sp][p->alias_of[id]];
        }
}

/* Output tensors for the fetches the caller left NULL, made before the step runs so that running
 * out of memory for them does not leave a step applied and its results lost. */
static kiln_status alloc_outs(kiln_node *const *fetches, kiln_tensor **outs, int n_fetches) {
    for (int i = 0; i < n_fetches; i++)
        if (!outs[i] && !(outs[i] = kiln_tensor_new(fetches[i]->dtype, fetches[i]->shape)))
            return kiln_set_error(KILN_OUT_OF_MEMORY, "fetch '%s': %s", fetches[i]->name, kiln_last_error());
    return KILN_OK;   /* those made stay in outs, the caller's to free, as after a successful run */
}

/* Fetched values into outs. */
static kiln_status read_fetches(kiln_session *s, kiln_plan *p, kiln_node *const *fetches, kiln_tensor **outs, int n_fetches) {
    kiln_status st = KILN_OK;
    for (int i = 0; i < n_fetches && st == KILN_OK; i++) {
        kiln_node *f = fetches[i];
        int sp = p->home[f->id];
        if (sp != KILN_SPACE_HOST) {
            const kiln_backend *be = s->be[sp];
            st = be->copy(be, outs[i]->data, s->data[sp][f->id], kiln_tensor_nbytes(outs[i]), KILN_COPY_D2H);
            if (st == KILN_OK) st = be->sync(be);
        } else {
            memcpy(outs[i]->data, s->data[sp][f->id], kiln_tensor_nbytes(outs[i]));
        }
    }
    return st;
}

kiln_status rt_run_prepare(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches, kiln_tensor **outs,
                           int n_fetches, kiln_node *const *targets, int n_targets, const kiln_feed *next_feeds, int n_next, run_plan **out) {
    *out = NULL;
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_run: NULL session");
    if (s->g->status != KILN_OK) return kiln_set_error(s->g->status, "session run: the graph has a build error: %s", s->g->error);
    kiln_status st;
    s->runs++;
    if (n_next > 0 && !next_feeds) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: next_feeds is NULL");
    if ((st = check_feeds(feeds, n_feeds)) || (st = check_feeds(next_feeds, n_next)) || (st = check_nodes(s, fetches, n_fetches, "fetch")) ||
        (st = check_nodes(s, targets, n_targets, "target")) || (st = check_outs(fetches, outs, n_fetches)))
        return st;
    run_plan *rp = NULL;
    if ((st = rt_get_plan(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, &rp)) != KILN_OK) return st;
    kiln_plan *p = rp->plan;
    s->planned_bytes = 0;
    for (int sp = 0; sp < s->n_spaces; sp++) s->planned_bytes += p->arena_bytes[sp];
    if (s->opts.measure_only) return KILN_OK;
#ifdef _OPENMP
    if (omp_get_max_threads() != s->num_threads) omp_set_num_threads(s->num_threads);
#endif
    if ((st = alloc_outs(fetches, outs, n_fetches)) != KILN_OK) return st;
    bind(s, p, feeds, n_feeds);
    if ((st = rt_derive_steps(s, rp)) != KILN_OK) return st;
    *out = rp;
    return KILN_OK;
}

kiln_status rt_run_finish(kiln_session *s, run_plan *rp, kiln_status st, const kiln_feed *next_feeds, int n_next,
                          kiln_node *const *fetches, kiln_tensor **outs, int n_fetches) {
    kiln_plan *p = rp->plan;
    bool ahead = false;
    if (st == KILN_OK && n_next > 0 && p->n_feed_copies > 0) st = rt_copy_ahead(s, p, next_feeds, n_next, &ahead);
    for (int sp = 1; sp < s->n_spaces && st == KILN_OK; sp++)   /* device-side errors surface here */
        if (p->device_space == sp || p->device_space == -2) st = s->be[sp]->sync(s->be[sp]);
    if (ahead) {   /* next's host buffers may be reused once this returns */
        kiln_status ws = rt_copy_ahead_wait(s);
        if (st == KILN_OK) st = ws;
    }
    if (st == KILN_OK) st = read_fetches(s, p, fetches, outs, n_fetches);
    if (st == KILN_OK) s->step++;
    return st;
}

kiln_status kiln_session_run_ahead(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                                   kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets,
                                   const kiln_feed *next_feeds, int n_next) {
    run_plan *rp;
    kiln_status st = rt_run_prepare(s, feeds, n_feeds, fetches, outs, n_fetches, targets, n_targets, next_feeds, n_next, &rp);
    if (st != KILN_OK || !rp) return st;
    st = rt_capture_replays(s, rp) ? rt_run_captured(s, rp) : rt_run_loop(s, rp, 0, rp->n_steps);
    return rt_run_finish(s, rp, st, next_feeds, n_next, fetches, outs, n_fetches);
}

kiln_status kiln_session_run(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                             kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets) {
    return kiln_session_run_ahead(s, feeds, n_feeds, fetches, outs, n_fetches, targets, n_targets, NULL, 0);
}
