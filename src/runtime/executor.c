/* The executor: checks a run's arguments, binds variables / feeds / arenas to the plan's values,
 * runs the steps in order (or replays the captured step), copies the next batch ahead and
 * returns the fetches. No heap allocation once a plan exists. */
#include <stdio.h>
#include <string.h>
#include "runtime/runtime_internal.h"
#include "runtime/grad_reduce_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define GUARD_BYTE 0xA5

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

/* A value into another space: host -> device and device -> host on the device's stream; device ->
 * device (two GPUs) on the destination's stream once the source's work is done. */
static kiln_status run_copy(kiln_session *s, kiln_plan *p, kiln_plan_step *stp) {
    kiln_node *n = stp->node;
    int from = p->home[n->id], to = stp->space;
    void *dst = s->data[to][n->id];
    const void *src = s->data[from][n->id];
    if (to == KILN_SPACE_HOST) {
        const kiln_backend *be = s->be[from];
        kiln_status st = be->copy(be, dst, src, node_bytes(n), KILN_COPY_D2H);
        return st == KILN_OK ? be->sync(be) : st;   /* the host reads it next */
    }
    const kiln_backend *be = s->be[to];
    if (from == KILN_SPACE_HOST) {
        ahead_copy *a = rt_ahead_ready(s, n, to, src);
        if (a) return be->copy(be, dst, a->slot[a->cur], a->bytes, KILN_COPY_D2D);
        return be->copy(be, dst, src, node_bytes(n), KILN_COPY_H2D);
    }
    kiln_status st = s->be[from]->sync(s->be[from]);
    return st == KILN_OK ? be->copy(be, dst, src, node_bytes(n), KILN_COPY_PEER) : st;
}

/* A failed kernel's message names the node (unless it already does). */
static kiln_status kernel_failed(kiln_node *n, kiln_status st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    if (strncmp(msg, n->name, strlen(n->name)) == 0) return kiln_set_error(st, "%s", msg);
    return kiln_set_error(st, "%s (%s): %s", n->name, kiln_op_get(n->op)->name, msg);
}

static kiln_status run_step(kiln_session *s, kiln_plan *p, kiln_plan_step *stp) {
    if (stp->kind == KILN_STEP_COPY) return run_copy(s, p, stp);
    kiln_node *n = stp->node;
    void **data = s->data[stp->space];
    kiln_view *v = &p->views[stp->view_base];
    for (int k = 0; k < n->n_in; k++) {
        kiln_node *in = n->in[k];
        v[k] = (kiln_view){ data[in->id], in->dtype, in->shape, kiln_shape_numel(in->shape) };
    }
    kiln_view bias;
    if (stp->bias_id >= 0) {
        kiln_node *bn = s->g->nodes[stp->bias_id];
        bias = (kiln_view){ data[bn->id], bn->dtype, bn->shape, kiln_shape_numel(bn->shape) };
    }
    kiln_kctx c = {
        .node = n, .n_in = n->n_in, .in = v,
        .out = { data[stp->out_id], n->dtype, n->shape, kiln_shape_numel(n->shape) },
        .epi_bias = stp->bias_id >= 0 ? &bias : NULL, .epi_relu = stp->relu,
        .workspace = stp->ws_offset >= 0 ? (char *)s->arena[stp->space] + stp->ws_offset : NULL,
        /* the session seed reseeds every dropout mask; (seed, step) gives the same masks on every backend */
        .ws_bytes = stp->ws_bytes, .step = s->step ^ kiln_mix64(s->opts.seed), .num_threads = s->num_threads,
    };
    if (p->alias_of[n->id] >= 0 && c.out.data == v[0].data) return KILN_OK;   /* reshape: nothing to do */
    bool guard = p->guard && stp->space == KILN_SPACE_HOST;
    size_t out_bytes = node_bytes(n);   /* fused nodes keep the producer's shape */
    if (guard) memset((char *)c.out.data + out_bytes, GUARD_BYTE, p->guard);
    /* profiling a device kernel: wait for it, so the time is the kernel's (plus its launch) */
    const kiln_backend *be = s->be[stp->space];
    bool dev_prof = s->prof && stp->space != KILN_SPACE_HOST;
    kiln_status st = rt_activate(s, stp->space);   /* its kernels launch on its device */
    if (st == KILN_OK && dev_prof) st = be->sync(be);
    if (st != KILN_OK) return st;
    double t0 = s->prof ? kiln_now() : 0;
    st = stp->kernel(&c);
    if (dev_prof && st == KILN_OK) st = be->sync(be);
    if (s->prof) { s->prof[n->op] += kiln_now() - t0; s->prof_n[n->op]++; }
    for (size_t k = 0; guard && k < p->guard && st == KILN_OK; k++)
        if (((unsigned char *)c.out.data)[out_bytes + k] != GUARD_BYTE)
            st = kiln_set_error(KILN_INTERNAL, "%s (%s): the %s kernel wrote past the end of its output (guard byte %zu)", n->name, kiln_op_get(n->op)->name, stp->backend, k);
    if (st == KILN_OK && n->op == KILN_OP_CROSS_REPLICA_SUM) st = rt_cross_replica_sum(s, stp, c.out.data);   /* grad_reduce.h */
    if (st == KILN_OK && s->check_numerics) st = rt_check_numerics(s, stp);
    return st == KILN_OK ? KILN_OK : kernel_failed(n, st);
}

kiln_status rt_run_steps(kiln_session *s, kiln_plan *p, int from, int to) {
    for (int i = from; i < to; i++) {
        kiln_status st = run_step(s, p, &p->steps[i]);
        if (st != KILN_OK) return st;
    }
    return KILN_OK;
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
kiln_status rt_read_fetches(kiln_session *s, kiln_plan *p, kiln_node *const *fetches, kiln_tensor **outs, int n_fetches) {
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

kiln_status kiln_session_run_ahead(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                                   kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets,
                                   const kiln_feed *next_feeds, int n_next) {
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
    bool done;
    st = rt_run_captured(s, rp, &done);
    if (st == KILN_OK && !done) st = s->reduce ? rt_run_reduced(s, p) : rt_run_steps(s, p, 0, p->n_steps);
    if (st == KILN_OK && rt_reduce_pending(s)) return KILN_OK;   /* a replica: kiln_session_run_rest finishes it */
    bool ahead = false;
    if (st == KILN_OK && n_next > 0 && p->n_feed_copies > 0) st = rt_copy_ahead(s, p, next_feeds, n_next, &ahead);
    for (int sp = 1; sp < s->n_spaces && st == KILN_OK; sp++)   /* device-side errors surface here */
        if (p->device_space == sp || p->device_space == -2) st = s->be[sp]->sync(s->be[sp]);
    if (ahead) {   /* next's host buffers may be reused once this returns */
        kiln_status ws = rt_copy_ahead_wait(s);
        if (st == KILN_OK) st = ws;
    }
    if (st == KILN_OK) st = rt_read_fetches(s, p, fetches, outs, n_fetches);
    if (st == KILN_OK) s->step++;
    return st;
}

kiln_status kiln_session_run(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                             kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets) {
    return kiln_session_run_ahead(s, feeds, n_feeds, fetches, outs, n_fetches, targets, n_targets, NULL, 0);
}
