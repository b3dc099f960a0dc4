/* MirroredStrategy in one process (TensorFlow's, one host thread for every GPU as NCCL's group
 * calls expect): replica k is a session over the same graph on GPU gpus[k]. A step runs the
 * replicas' plans in lock step, in segments (kiln_session_set_grad_defer: each run waits at its
 * first step): every replica enqueues its steps up to the ready step of the next gradient buckets
 * (the step after which the backward pass no longer touches them), then one NCCL group averages
 * those buckets on each GPU's communication stream, after an event on its compute stream, while
 * the compute streams go on with the rest of the backward pass; before the optimizer updates each
 * compute stream waits for its communication stream. Then each replica's updates and fetches. The
 * GPUs overlap each other and their own communication: the host only enqueues until the fetches
 * are read. KILN_OVERLAP=0: one group after the whole backward pass, on the compute streams. */
#include <string.h>
#include "runtime/runtime_internal.h"
#include "runtime/grad_reduce.h"
#include "runtime/replicas.h"
#include "runtime/grad_reduce_internal.h"
#include "compile/placement.h"
#include "backend/registry.h"
#include "backend/cuda/cuda_module.h"

#define MAX_RANGES 4096

struct kiln_replicas {
    int n;
    int gpu[KILN_MAX_REPLICAS];
    kiln_session *s[KILN_MAX_REPLICAS];
    const kiln_cuda_module *mod;
    void *comm;
    size_t bucket;
    void **ptr;              /* [MAX_RANGES] one replica's gradient ranges */
    size_t *count, *bcount;  /* [MAX_RANGES] their sizes; per bucket */
    float **bufs;            /* [MAX_RANGES * n] bucket b of replica k at b * n + k */
    int *ready, *ready_k;    /* [MAX_RANGES] each bucket's ready step: replica 0's, replica k's */
    bool overlap;
    bool log;                /* log_device_placement: each replica's ops once, as replica_k/ on its GPU */
    int64_t calls;
    double bytes, seconds;
};

int kiln_replicas_count(const kiln_replicas *r) { return r ? r->n : 0; }
kiln_session *kiln_replicas_session(const kiln_replicas *r, int k) { return r && k >= 0 && k < r->n ? r->s[k] : NULL; }
void kiln_replicas_set_bucket_bytes(kiln_replicas *r, size_t bytes) { if (r) r->bucket = bytes >= 64 ? bytes : (size_t)4 << 20; }

/* this process's totals (tests, debugging) */
static int64_t early_groups;     /* NCCL groups started before a backward pass ended */
static int64_t broadcast_vars;   /* variables sent with ncclBroadcast */
void kiln_replicas_counters(int64_t *overlapped_groups, int64_t *broadcasts) { *overlapped_groups = early_groups; *broadcasts = broadcast_vars; }
void kiln_replicas_stats(const kiln_replicas *r, int64_t *calls, double *bytes, double *seconds) {
    *calls = r ? r->calls : 0; *bytes = r ? r->bytes : 0; *seconds = r ? r->seconds : 0;
}

void kiln_replicas_free(kiln_replicas *r) {
    if (!r) return;
    if (r->comm) r->mod->comm_free(r->comm);
    for (int k = 1; k < r->n; k++) kiln_session_free(r->s[k]);
    if (r->s[0]) {
        kiln_session_set_grad_reduce(r->s[0], NULL, NULL, 0);   /* s0 runs alone again */
        r->s[0]->active = NULL;
    }
    kiln_free(r->ptr); kiln_free(r->count); kiln_free(r->bcount); kiln_free(r->bufs); kiln_free(r->ready); kiln_free(r->ready_k);
    kiln_free(r);
}

kiln_status kiln_replicas_new(kiln_session *s0, const int *gpus, int n, kiln_replicas **out) {
    *out = NULL;
    if (!s0 || !gpus || n < 2 || n > KILN_MAX_REPLICAS)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: %d devices (2 to %d GPUs are mirrored)", n, KILN_MAX_REPLICAS);
    const kiln_cuda_module *mod = kiln_cuda();
    int visible = kiln_cuda_device_count();
    if (!mod || visible < n)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: %d GPUs asked for but %d visible%s%s", n, visible,
                              visible ? "" : ": ", visible ? "" : kiln_gpu_unavailable_reason());
    if (gpus[0] != 0 || s0->n_spaces < 2 || s0->be[1]->index != 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: the first device must be gpu:0 (the model's own session runs there)");
    kiln_replicas *r = kiln_calloc(1, sizeof *r);
    if (!r) return kiln_set_error(KILN_OUT_OF_MEMORY, "replicas: out of host memory");
    r->n = n;
    r->mod = mod;
    r->bucket = (size_t)4 << 20;
    r->s[0] = s0;
    memcpy(r->gpu, gpus, sizeof(int) * (size_t)n);
    kiln_status st = KILN_OK;
    r->ptr = kiln_malloc(MAX_RANGES * sizeof *r->ptr);
    r->count = kiln_malloc(MAX_RANGES * sizeof *r->count);
    r->bcount = kiln_malloc(MAX_RANGES * sizeof *r->bcount);
    r->bufs = kiln_malloc((size_t)MAX_RANGES * (size_t)n * sizeof *r->bufs);
    r->ready = kiln_malloc(MAX_RANGES * sizeof *r->ready);
    r->ready_k = kiln_malloc(MAX_RANGES * sizeof *r->ready_k);
    r->overlap = kiln_grad_overlap_enabled();
    r->log = s0->opts.log_device_placement;
    if (!r->ptr || !r->count || !r->bcount || !r->bufs || !r->ready || !r->ready_k) st = kiln_set_error(KILN_OUT_OF_MEMORY, "replicas: out of host memory");
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
    for (int k = 0; k < n && st == KILN_OK; k++) st = kiln_session_set_grad_defer(r->s[k]);
    if (st == KILN_OK) st = mod->comm_new(gpus, n, &r->comm);
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
    if (st == KILN_OK && nv > 0) st = r->mod->broadcast(r->comm, (void *const *)r->bufs, r->bcount, nv, 0);
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
    if (st == KILN_OK) broadcast_vars += nv;
    for (int k = 1; k < r->n; k++) kiln_session_set_step(r->s[k], kiln_session_step(r->s[0]));
    r->s[0]->active = NULL;
    return st;
}

/* Every replica's gradient buckets, the same on each (count, size, ready step). */
static kiln_status buckets(kiln_replicas *r, int *nb, int *at) {
    int at0 = 0;
    for (int k = 0; k < r->n; k++) {
        int m = 0, atk = 0;
        kiln_status st = kiln_session_grad_buckets(r->s[k], r->bucket, r->overlap, r->ptr, r->count, k ? r->ready_k : r->ready,
                                                   MAX_RANGES, &m, &atk);
        if (st != KILN_OK) return st;
        if (k == 0) { *nb = m; at0 = atk; }
        if (m != *nb || atk != at0) return kiln_set_error(KILN_INTERNAL, "replicas: replica %d has %d gradient buckets (updates at step %d), replica 0 %d (%d)", k, m, atk, *nb, at0);
        for (int b = 0; b < m; b++) {
            if (k == 0) r->bcount[b] = r->count[b];
            else if (r->bcount[b] != r->count[b] || r->ready_k[b] != r->ready[b])
                return kiln_set_error(KILN_INTERNAL, "replicas: gradient bucket %d differs between replicas 0 and %d", b, k);
            r->bufs[(size_t)b * r->n + k] = r->ptr[b];
        }
    }
    *at = at0;
    return KILN_OK;
}

static kiln_status run_to(kiln_replicas *r, int step) {
    kiln_status st = KILN_OK;
    for (int k = 0; k < r->n && st == KILN_OK; k++) {
        r->s[k]->active = NULL;
        st = kiln_session_run_to(r->s[k], step);
    }
    return st;
}

#define MAX_SYNC 256

/* The CrossReplicaSum outputs of every replica (synchronised batch norm), the same steps on each. */
static kiln_status sync_points(kiln_replicas *r, void **bufs, size_t *count, kiln_dtype *dtype, int *step, int *nq) {
    void *ptr[MAX_SYNC];
    size_t cnt[MAX_SYNC];
    kiln_dtype dt[MAX_SYNC];
    int stp[MAX_SYNC];
    for (int k = 0; k < r->n; k++) {
        int m = 0;
        kiln_status st = kiln_session_sync_points(r->s[k], ptr, k ? cnt : count, k ? dt : dtype, k ? stp : step, MAX_SYNC, &m);
        if (st != KILN_OK) return st;
        if (k == 0) *nq = m;
        if (m != *nq) return kiln_set_error(KILN_INTERNAL, "replicas: replica %d has %d cross-replica sums, replica 0 %d", k, m, *nq);
        for (int q = 0; q < m; q++) {
            if (k && (cnt[q] != count[q] || dt[q] != dtype[q] || stp[q] != step[q]))
                return kiln_set_error(KILN_INTERNAL, "replicas: cross-replica sum %d differs between replicas 0 and %d", q, k);
            bufs[(size_t)q * r->n + k] = ptr[q];
        }
    }
    return KILN_OK;
}

/* The backward pass in segments, each followed by the NCCL group of the buckets it completed;
 * the forward and backward passes also stop after each cross-replica sum, summed over the GPUs
 * before they go on. */
static kiln_status reduce_in_segments(kiln_replicas *r) {
    int nb = 0, at = 0, nq = 0;
    void *qbufs[MAX_SYNC * KILN_MAX_REPLICAS];
    size_t qcount[MAX_SYNC];
    kiln_dtype qdtype[MAX_SYNC];
    int qstep[MAX_SYNC];
    kiln_status st = buckets(r, &nb, &at);
    if (st == KILN_OK) st = sync_points(r, qbufs, qcount, qdtype, qstep, &nq);
    for (int b = 0, q = 0; (b < nb || q < nq) && st == KILN_OK;) {
        if (q < nq && (b >= nb || qstep[q] + 1 <= r->ready[b])) {   /* a cross-replica sum comes first */
            if ((st = run_to(r, qstep[q] + 1)) == KILN_OK) st = r->mod->allreduce_sum(r->comm, qbufs + (size_t)q * r->n, &qcount[q], 1, qdtype[q]);
            q++;
            continue;
        }
        int e = b;
        while (e < nb && r->ready[e] == r->ready[b]) e++;
        if ((st = run_to(r, r->ready[b])) != KILN_OK) break;
        double t0 = kiln_now();
        float *const *bufs = r->bufs + (size_t)b * r->n;
        if (r->ready[b] < at) early_groups++;
        st = r->overlap ? r->mod->allreduce_start(r->comm, bufs, r->bcount + b, e - b) : r->mod->allreduce_mean(r->comm, bufs, r->bcount + b, e - b);
        r->seconds += kiln_now() - t0;   /* enqueue time (the GPUs run it asynchronously) */
        r->calls += e - b;
        for (int i = b; i < e; i++) r->bytes += (double)r->bcount[i] * sizeof(float);
        b = e;
    }
    if (st == KILN_OK) st = run_to(r, at);
    if (st == KILN_OK && r->overlap && nb > 0) st = r->mod->allreduce_join(r->comm);   /* the updates read the averages */
    return st;
}

kiln_status kiln_replicas_run(kiln_replicas *r, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                              kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets) {
    kiln_status st = KILN_OK;
    /* the sessions share this thread, whose current GPU each run changes: none may trust its
     * cached "active device" (rt_activate), or its kernels would go to the last replica's GPU */
    for (int k = 0; k < r->n && st == KILN_OK; k++) {
        r->s[k]->active = NULL;
        st = kiln_session_run(r->s[k], feeds + (size_t)k * n_feeds, n_feeds, fetches, outs + (size_t)k * n_fetches, n_fetches,
                              targets, n_targets);
    }
    for (int k = 1; k < r->n && st == KILN_OK && r->log; k++)
        if (rt_reduce_pending(r->s[k])) kiln_log_placement_replica(r->s[k]->g, r->s[k]->reduce->pending, r->s[k]->logged, k, r->gpu[k]);
    bool pending = st == KILN_OK && rt_reduce_pending(r->s[0]);
    for (int k = 1; k < r->n && st == KILN_OK; k++)
        if (rt_reduce_pending(r->s[k]) != pending) st = kiln_set_error(KILN_INTERNAL, "replicas: replica %d's run differs from replica 0's", k);
    if (st == KILN_OK && pending) st = reduce_in_segments(r);
    for (int k = 0; k < r->n; k++)       /* finish every started run, even after an error */
        if (rt_reduce_pending(r->s[k])) {
            r->s[k]->active = NULL;
            kiln_status s2 = st == KILN_OK ? kiln_session_run_rest(r->s[k], fetches, outs + (size_t)k * n_fetches, n_fetches) : KILN_OK;
            if (st != KILN_OK) rt_reduce_cancel(r->s[k]);
            if (st == KILN_OK) st = s2;
        }
    r->s[0]->active = NULL;      /* the model's own runs (evaluation) activate GPU 0 again */
    return st;
}
