/* Plans cached per (feeds, fetches, targets): built on first use (placement, the plan, variables
 * and constants moved to where they are placed), with the arenas grown to fit; the out-of-memory
 * message when a device arena does not fit. */
#include <stdio.h>
#include <string.h>
#include "runtime/runtime_internal.h"
#include "compile/placement.h"

static bool same_ids(const int *a, int na, kiln_node *const *b, int nb) {
    if (na != nb) return false;
    for (int i = 0; i < na; i++) if (a[i] != b[i]->id) return false;
    return true;
}

static run_plan *find_plan(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                           int n_fetches, kiln_node *const *targets, int n_targets) {
    for (int i = 0; i < s->n_plans; i++) {
        kiln_plan *p = s->plans[i].plan;
        if (p->n_feeds != n_feeds || !same_ids(p->fetch_ids, p->n_fetches, fetches, n_fetches) ||
            !same_ids(p->target_ids, p->n_targets, targets, n_targets)) continue;
        bool ok = true;
        for (int k = 0; k < n_feeds && ok; k++) ok = p->feed_ids[k] == feeds[k].node->id;
        if (ok) return &s->plans[i];
    }
    return NULL;
}

static void drop_plan(kiln_session *s, run_plan *rp) {
    if (rp->graph_exec) {
        const kiln_backend *be = s->be[rp->plan->device_space];
        be->graph_free(be, rp->graph_exec);
    }
    rt_steps_free(rp);
    kiln_plan_free(rp->plan);
    *rp = (run_plan){ 0 };
}

void rt_plans_free(kiln_session *s) {
    for (int i = 0; i < s->n_plans; i++) drop_plan(s, &s->plans[i]);
    s->n_plans = 0;
}

/* The message for a device arena that does not fit: sizes, the biggest tensors, what to do. */
static kiln_status arena_oom(kiln_session *s, kiln_plan *p, int sp) {
    char big[512] = "", where[32];
    size_t k = 0;
    int picked[3] = { -1, -1, -1 };
    for (int r = 0; r < 3; r++) {      /* the three largest values in this arena */
        int best = -1;
        for (int id = 0; id < p->n_ids; id++) {
            if (kiln_plan_offset(p, sp, id) < 0 || id == picked[0] || id == picked[1]) continue;
            if (best < 0 || node_bytes(s->g->nodes[id]) > node_bytes(s->g->nodes[best])) best = id;
        }
        if (best < 0) break;
        picked[r] = best;
        char sh[96];
        k += (size_t)snprintf(big + k, sizeof big - k, "%s%s %s (%.1f MiB)", r ? ", " : "", s->g->nodes[best]->name,
                              kiln_shape_str(s->g->nodes[best]->shape, sh, sizeof sh), node_bytes(s->g->nodes[best]) / 1048576.0);
        if (k >= sizeof big) break;
    }
    /* what fits in what is free, by the memory plan (oom_advice.c) */
    char fit[768];
    const kiln_backend *be = s->be[sp];
    size_t avail = sp != KILN_SPACE_HOST && be->max_alloc ? be->max_alloc(be) : 0;
    rt_oom_advice(p, sp, avail, kiln_session_variable_bytes(s), fit, sizeof fit);
    return kiln_set_error(KILN_OUT_OF_MEMORY,
        "out of memory on %s: the step's activations need %.1f MiB (variables hold %.1f MiB more); largest tensors: %s. "
        "To fit: %s",
        kiln_space_name(sp, where, sizeof where), p->arena_bytes[sp] / 1048576.0, kiln_session_variable_bytes(s) / 1048576.0, big, fit);
}

/* Variables and constants to where the plan reads them; every read placeholder must be fed. */
static kiln_status bind_sources(kiln_session *s, kiln_plan *p, const kiln_feed *feeds, int n_feeds) {
    kiln_status st = KILN_OK;
    for (int i = 0; i < p->n_sources && st == KILN_OK; i++) {
        kiln_node *n = s->g->nodes[p->sources[i]];
        int sp = p->home[n->id];
        if (n->op == KILN_OP_VARIABLE) st = rt_var_store(s, n, sp);
        else if (n->op == KILN_OP_CONSTANT && sp != KILN_SPACE_HOST && !s->const_dev[n->id]) {
            const kiln_backend *be = s->be[sp];
            void *d = be->alloc(be, node_bytes(n));
            if (!d) st = kiln_set_error(KILN_OUT_OF_MEMORY, "constant %s does not fit on the GPU", n->name);
            else if ((st = be->copy(be, d, n->value->data, node_bytes(n), KILN_COPY_H2D)) == KILN_OK) st = be->sync(be);
            if (d) s->const_dev[n->id] = d;
        } else if (n->op == KILN_OP_PLACEHOLDER) {
            bool fed = false;
            for (int k = 0; k < n_feeds; k++) fed |= feeds[k].node == n;
            if (!fed) st = kiln_set_error(KILN_INVALID_ARGUMENT, "placeholder '%s' must be fed: a fetched or target node depends on it", n->name);
        }
    }
    return st;
}

/* An op that updates a variable must run where the variable lives. */
static kiln_status check_updates(kiln_plan *p) {
    char a[32], b[32];
    for (int i = 0; i < p->n_steps; i++) {
        kiln_plan_step *stp = &p->steps[i];
        if (stp->kind != KILN_STEP_KERNEL || !(kiln_op_get(stp->node->op)->flags & KILN_OPF_MUTATES)) continue;
        for (int k = 0; k < stp->node->n_in; k++) {
            kiln_node *in = stp->node->in[k];
            if (in->op == KILN_OP_VARIABLE && p->home[in->id] != stp->space)
                return kiln_set_error(KILN_INVALID_ARGUMENT, "%s updates variable %s, but runs on %s while the variable lives on %s; place them together",
                                      stp->node->name, in->name, kiln_space_name(stp->space, a, sizeof a), kiln_space_name(p->home[in->id], b, sizeof b));
        }
    }
    return KILN_OK;
}

/* Arenas grow only while new plans appear; a plan never shrinks them. */
static kiln_status grow_arenas(kiln_session *s, kiln_plan *p) {
    for (int sp = 0; sp < s->n_spaces; sp++) {
        if (p->arena_bytes[sp] <= s->arena_bytes[sp] || s->opts.measure_only) continue;
        const kiln_backend *be = s->be[sp];
        if (s->arena[sp]) be->free(be, s->arena[sp]);
        s->arena[sp] = NULL;
        s->arena_bytes[sp] = 0;
        s->arena_gen++;
        void *a = be->alloc(be, p->arena_bytes[sp]);
        if (!a) return arena_oom(s, p, sp);
        s->arena[sp] = a;
        s->arena_bytes[sp] = p->arena_bytes[sp];
    }
    return KILN_OK;
}

kiln_status rt_build_plan(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                              int n_fetches, kiln_node *const *targets, int n_targets, kiln_plan **out) {
    kiln_status st = rt_grow_ids(s);
    if (st != KILN_OK || (st = rt_place(s)) != KILN_OK) return st;
    kiln_node **fn = kiln_malloc((size_t)(n_feeds ? n_feeds : 1) * sizeof *fn);
    if (!fn) return kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory");
    for (int i = 0; i < n_feeds; i++) fn[i] = feeds[i].node;
    kiln_plan_request req = { fn, n_feeds, fetches, n_fetches, targets, n_targets, s->be, s->n_spaces, s->place, s->guard, s->opts.no_fusion };
    st = kiln_plan_build(s->g, &req, out);
    kiln_free(fn);
    return st;
}

kiln_status rt_get_plan(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                        int n_fetches, kiln_node *const *targets, int n_targets, run_plan **out) {
    run_plan *rp = find_plan(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets);
    if (rp) { *out = rp; return KILN_OK; }
    kiln_plan *p = NULL;
    kiln_status st = rt_build_plan(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, &p);
    if (st == KILN_OK) st = bind_sources(s, p, feeds, n_feeds);
    if (st == KILN_OK) st = check_updates(p);
    if (st == KILN_OK) st = grow_arenas(s, p);
    if (st != KILN_OK) { kiln_plan_free(p); return st; }
    if (s->n_plans == KILN_MAX_PLANS) {            /* evict round-robin */
        rp = &s->plans[s->next_evict];
        drop_plan(s, rp);
        s->next_evict = (s->next_evict + 1) % KILN_MAX_PLANS;
    } else {
        rp = &s->plans[s->n_plans++];
    }
    rp->plan = p;
    if (s->opts.log_device_placement) kiln_log_placement(s->g, p, s->logged);
    *out = rp;
    return KILN_OK;
}
