/* MirroredStrategy in one process (TensorFlow's, one host thread for every GPU as NCCL's group
 * calls expect): replica k is a session over the same graph on GPU gpus[k], its collective steps
 * (plan_reduce.c) NCCL groups over the replicas. A step prepares every replica's run, then runs
 * their step lists in lock step, in segments that end at collective steps: every replica enqueues
 * its steps up to the next collective step (a gradient bucket's ready step: the backward pass no
 * longer touches it; or a cross-replica sum), then the collective service (NCCL, the CUDA
 * backend's, src/backend/collectives.c) issues those steps as one group over the replicas: the
 * buckets' mean on each GPU's communication stream while the compute streams go on, a sum, or the
 * wait of each compute stream for its communication stream before the updates. Then each
 * replica's updates, and finish (fetches). The host only enqueues until the fetches are read.
 * KILN_OVERLAP=0: one group after the whole backward pass, on the compute streams. */
#include <string.h>
#include "runtime/runtime_internal.h"
#include "runtime/grad_reduce.h"
#include "runtime/replicas.h"
#include "compile/placement.h"
#include "backend/registry.h"

#define MAX_RANGES 4096

struct kiln_replicas {
    int n;
    int gpu[KILN_MAX_REPLICAS];
    kiln_session *s[KILN_MAX_REPLICAS];
    kiln_collectives coll;   /* NCCL over the GPUs (coll.ctx NULL until made) */
    size_t bucket;
    void **ptr;              /* [MAX_RANGES] one replica's gradient ranges */
    size_t *count, *bcount;  /* [MAX_RANGES] their sizes; per bucket */
    float **bufs;            /* [MAX_RANGES * n] bucket b of replica k at b * n + k */
    run_plan *rp[KILN_MAX_REPLICAS];   /* this step's run of each replica */
    bool overlap;
    bool log;                /* log_device_placement: each replica's ops once, as replica_k/ on its GPU */
    int64_t calls;
    double bytes, seconds;
    int64_t early_groups;    /* NCCL groups started before a backward pass ended */
    int64_t broadcast_vars;  /* variables sent with ncclBroadcast */
};

int kiln_replicas_count(const kiln_replicas *r) { return r ? r->n : 0; }
kiln_session *kiln_replicas_session(const kiln_replicas *r, int k) { return r && k >= 0 && k < r->n ? r->s[k] : NULL; }
void kiln_replicas_set_bucket_bytes(kiln_replicas *r, size_t bytes) {
    if (!r) return;
    r->bucket = bytes >= 64 ? bytes : (size_t)4 << 20;
    for (int k = 0; k < r->n; k++) rt_set_replica(r->s[k], r->bucket, r->overlap);
}

void kiln_replicas_counters(const kiln_session *s0, int64_t *overlapped_groups, int64_t *broadcasts) {
    *overlapped_groups = s0 ? s0->replica_groups : 0;
    *broadcasts = s0 ? s0->replica_broadcasts : 0;
}
void kiln_replicas_stats(const kiln_replicas *r, int64_t *calls, double *bytes, double *seconds) {
    *calls = r ? r->calls : 0; *bytes = r ? r->bytes : 0; *seconds = r ? r->seconds : 0;
}

void kiln_replicas_free(kiln_replicas *r) {
    if (!r) return;
    if (r->coll.ctx) r->coll.free(r->coll.ctx);
    for (int k = 1; k < r->n; k++) kiln_session_free(r->s[k]);
    if (r->s[0]) {
        kiln_session_set_collectives(r->s[0], NULL, 0, false, false);   /* s0 runs alone again */
        r->s[0]->active = NULL;
        r->s[0]->replica_groups += r->early_groups;
        r->s[0]->replica_broadcasts += r->broadcast_vars;
    }
    kiln_free(r->ptr); kiln_free(r->count); kiln_free(r->bcount); kiln_free(r->bufs);
    kiln_free(r);
}

kiln_status kiln_replicas_new(kiln_session *s0, const int *gpus, int n, kiln_replicas **out) {
    *out = NULL;
    if (!s0 || !gpus || n < 2 || n > KILN_MAX_REPLICAS)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: %d devices (2 to %d GPUs are mirrored)", n, KILN_MAX_REPLICAS);
    int visible = kiln_cuda_device_count();
    if (visible < n)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: %d GPUs asked for but %d visible%s%s", n, visible,
                              visible ? "" : ": ", visible ? "" : kiln_gpu_unavailable_reason());
    if (gpus[0] != 0 || s0->n_spaces < 2 || s0->be[1]->index != 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: the first device must be gpu:0 (the model's own session runs there)");
    kiln_replicas *r = kiln_calloc(1, sizeof *r);
    if (!r) return kiln_set_error(KILN_OUT_OF_MEMORY, "replicas: out of host memory");
    r->n = n;
    r->bucket = (size_t)4 << 20;
    r->s[0] = s0;
    memcpy(r->gpu, gpus, sizeof(int) * (size_t)n);
    kiln_status st = KILN_OK;
    r->ptr = kiln_malloc(MAX_RANGES * sizeof *r->ptr);
    r->count = kiln_malloc(MAX_RANGES * sizeof *r->count);
    r->bcount = kiln_malloc(MAX_RANGES * sizeof *r->bcount);
    r->bufs = kiln_malloc((size_t)MAX_RANGES * (size_t)n * sizeof *r->bufs);
    r->overlap = kiln_grad_overlap_enabled();
    r->log = s0->opts.log_device_placement;
    if (!r->ptr || !r->count || !r->bcount || !r->bufs) st = kiln_set_error(KILN_OUT_OF_MEMORY, "replicas: out of host memory");
    for (int k = 1; k < n && st == KILN_OK; k++) {
        const kiln_backend *be = kiln_cuda_backend(gpus[k]);
        if (!be) { st = kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: no GPU %d: %s", gpus[k], kiln_last_error()); break; }
        for (int j = 0; j < k; j++)
            if (gpus[j] == gpus[k]) st = kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: GPU %d listed twice", gpus[k]);
        if (st == KILN_OK && !(r->s[k] = kiln_session_new_with_device(s0->g, &s0->opts, be)))
            st = kiln_set_error(KILN_DEVICE_ERROR, "replicas: the session of GPU %d: %s", gpus[k], kiln_last_error());
        /* the session would name its only GPU /device:GPU:0: kiln_replicas_run logs each replica's
         * plans itself (log_replica), once per node */
        if (r->s[k]) r->s[k]->opts.log_device_placement = false;
    }
    for (int k = 0; k < n && st == KILN_OK; k++) st = rt_set_replica(r->s[k], r->bucket, r->overlap);
    if (st == KILN_OK) st = kiln_cuda_collectives(gpus, n, &r->coll);
    if (st != KILN_OK) { kiln_replicas_free(r); return st; }
    *out = r;
    return KILN_OK;
}

/* The variables placed on the GPU (replica 0's placement: every replica's plans place them alike,
 * same graph, same options), each replica's storage made there (moved from the host where a
 * checkpoint or the initialiser left it): the broadcast buffers. */
static kiln_status device_vars(kiln_replicas *r, int *n_vars) {
    kiln_graph *g = r->s[0]->g;
    int nv = 0;
    for (int k = 0; k < r->n; k++) {
        kiln_status st = rt_grow_ids(r->s[k]);
        if (st != KILN_OK) return st;
    }
    for (int id = 0; id < g->n_nodes; id++) {
        kiln_node *v = g->nodes[id];
        if (v->op != KILN_OP_VARIABLE || kiln_session_node_space(r->s[0], v) != 1) continue;   /* space 1: the session's GPU */
        if (nv >= MAX_RANGES) break;    /* the rest go through the host */
        for (int k = 0; k < r->n; k++) {
            kiln_session *s = r->s[k];
            kiln_status st = rt_var_store(s, v, 1);
            if (st != KILN_OK) return st;
            r->bufs[(size_t)nv * r->n + k] = s->var_data[id];
        }
        r->bcount[nv] = node_bytes(v);
        r->ptr[nv] = v;
        nv++;
    }
    *n_vars = nv;
    return KILN_OK;
}

kiln_status kiln_replicas_sync_variables(kiln_replicas *r) {
    kiln_graph *g = r->s[0]->g;
    int nv = 0;
    /* GPU variables: one NCCL broadcast group from GPU 0 */
    kiln_status st = device_vars(r, &nv);
    if (st == KILN_OK && nv > 0) st = r->coll.broadcast(r->coll.ctx, (void *const *)r->bufs, r->bcount, nv, 0);
    for (int k = 0; k < r->n && st == KILN_OK; k++) {
        st = rt_activate(r->s[k], 1);
        if (st == KILN_OK) st = r->s[k]->be[1]->sync(r->s[k]->be[1]);
        r->s[k]->active = NULL;
    }
    /* the others (host variables, any past MAX_RANGES) through the host */
    for (int id = 0; id < g->n_nodes && st == KILN_OK; id++) {
        kiln_node *v = g->nodes[id];
        if (v->op != KILN_OP_VARIABLE) continue;
        bool sent = false;
        for (int i = 0; i < nv && !sent; i++) sent = r->ptr[i] == (void *)v;
        if (sent) continue;
        kiln_tensor *t = kiln_tensor_new(v->dtype, v->shape);
        if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "replicas: out of host memory copying '%s'", v->name);
        st = kiln_session_read_variable(r->s[0], v, t);
        for (int k = 1; k < r->n && st == KILN_OK; k++) st = kiln_session_assign_variable(r->s[k], v, t);
        kiln_tensor_free(t);
    }
    if (st == KILN_OK) r->broadcast_vars += nv;
    for (int k = 1; k < r->n; k++) kiln_session_set_step(r->s[k], kiln_session_step(r->s[0]));
    r->s[0]->active = NULL;
    return st;
}


/* Every replica's step list the same as replica 0's (collective steps alike). */
static kiln_status same_steps(kiln_replicas *r) {
    run_plan *p0 = r->rp[0];
    for (int k = 1; k < r->n; k++) {
        run_plan *pk = r->rp[k];
        bool same = !pk == !p0 && (!pk || (pk->n_steps == p0->n_steps && pk->n_coll == p0->n_coll));
        for (int i = 0; same && p0 && i < p0->n_steps; i++) {
            const kiln_plan_step *a = &p0->steps[i], *b = &pk->steps[i];
            same = a->kind == b->kind && (a->kind < KILN_STEP_COLLECTIVE || (a->op == b->op && a->count == b->count && a->at == b->at));
        }
        if (!same) return kiln_set_error(KILN_INTERNAL, "replicas: replica %d's run differs from replica 0's", k);
    }
    return KILN_OK;
}

/* The collective steps from i on that form one group (a wait, a sum, or the buckets of one ready
 * step), issued over the replicas; *end: the step after them. */
static kiln_status group(kiln_replicas *r, int i, int *end) {
    const run_plan *p0 = r->rp[0];
    const kiln_plan_step *c = &p0->steps[i];
    int e = i + 1;
    *end = e;
    if (c->kind == KILN_STEP_WAIT) return r->coll.finish(r->coll.ctx);   /* the updates read the averages */
    if (c->op == KILN_COLL_SUM) {
        void *bufs[KILN_MAX_REPLICAS];
        size_t count = (size_t)c->count;
        for (int k = 0; k < r->n; k++) bufs[k] = rt_step_buf(r->s[k], &r->rp[k]->steps[i]);
        return r->coll.sum(r->coll.ctx, bufs, &count, 1, c->node->dtype);
    }
    while (e < p0->n_steps && p0->steps[e].kind == KILN_STEP_COLLECTIVE && p0->steps[e].op == c->op && p0->steps[e].at == c->at) e++;
    if (e - i > MAX_RANGES) return kiln_set_error(KILN_INTERNAL, "replicas: %d gradient buckets, at most %d", e - i, MAX_RANGES);
    for (int b = i; b < e; b++) {
        r->bcount[b - i] = (size_t)p0->steps[b].count;
        for (int k = 0; k < r->n; k++) r->bufs[(size_t)(b - i) * r->n + k] = (float *)rt_step_buf(r->s[k], &r->rp[k]->steps[b]);
    }
    double t0 = kiln_now();
    if (c->at < p0->updates_at) r->early_groups++;
    kiln_status st = c->op == KILN_COLL_START ? r->coll.start(r->coll.ctx, r->bufs, r->bcount, e - i)
                                              : r->coll.mean(r->coll.ctx, r->bufs, r->bcount, e - i);
    r->seconds += kiln_now() - t0;   /* enqueue time (the GPUs run it asynchronously) */
    r->calls += e - i;
    for (int b = 0; b < e - i; b++) r->bytes += (double)r->bcount[b] * sizeof(float);
    *end = e;
    return st;
}

static kiln_status run_segment(kiln_replicas *r, int from, int to) {
    kiln_status st = KILN_OK;
    for (int k = 0; k < r->n && st == KILN_OK && from < to; k++) {
        r->s[k]->active = NULL;
        st = rt_run_loop(r->s[k], r->rp[k], from, to);
    }
    return st;
}

/* The step lists in segments ending at collective steps, each then issued as one group. */
static kiln_status run_in_segments(kiln_replicas *r) {
    const run_plan *p0 = r->rp[0];
    int pos = 0;
    kiln_status st = KILN_OK;
    for (int i = 0; i < p0->n_steps && st == KILN_OK;) {
        if (p0->steps[i].kind < KILN_STEP_COLLECTIVE) { i++; continue; }
        if ((st = run_segment(r, pos, i)) == KILN_OK) st = group(r, i, &pos);
        i = pos;
    }
    return st == KILN_OK ? run_segment(r, pos, p0->n_steps) : st;
}

kiln_status kiln_replicas_run(kiln_replicas *r, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                              kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets) {
    kiln_status st = KILN_OK;
    /* the sessions share this thread, whose current GPU each run changes: none may trust its
     * cached "active device" (rt_activate), or its kernels would go to the last replica's GPU */
    for (int k = 0; k < r->n; k++) r->rp[k] = NULL;
    for (int k = 0; k < r->n && st == KILN_OK; k++) {
        r->s[k]->active = NULL;
        st = rt_run_prepare(r->s[k], feeds + (size_t)k * n_feeds, n_feeds, fetches, outs + (size_t)k * n_fetches, n_fetches,
                            targets, n_targets, NULL, 0, &r->rp[k]);
    }
    if (st == KILN_OK) st = same_steps(r);
    if (st == KILN_OK && r->rp[0]) {
        for (int k = 1; k < r->n && r->log; k++)
            if (r->rp[k]->n_coll) kiln_log_placement_replica(r->s[k]->g, r->rp[k]->plan, r->s[k]->logged, k, r->gpu[k]);
        st = run_in_segments(r);
        for (int k = 0; k < r->n; k++) {     /* each replica's fetches (its error surfaces) */
            r->s[k]->active = NULL;
            st = rt_run_finish(r->s[k], r->rp[k], st, NULL, 0, fetches, outs + (size_t)k * n_fetches, n_fetches);
        }
    }
    r->s[0]->active = NULL;      /* the model's own runs (evaluation) activate GPU 0 again */
    return st;
}
