/* MirroredStrategy in one process (TensorFlow's, one host thread for every GPU as NCCL's group
 * calls expect): replica k is a session over the same graph on GPU gpus[k]; a step enqueues each
 * replica's forward and backward pass (the runs stop before the optimizer updates:
 * kiln_session_set_grad_defer), then one NCCL group averages every gradient range of every replica
 * in buckets, each on its GPU's stream after that GPU's backward pass, then each replica's updates
 * and fetches. The GPUs overlap: the host only enqueues until the fetches are read. */
#include <string.h>
#include "runtime/runtime_internal.h"
#include "runtime/grad_reduce.h"
#include "runtime/replicas.h"
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
    int64_t calls;
    double bytes, seconds;
};

int kiln_replicas_count(const kiln_replicas *r) { return r ? r->n : 0; }
kiln_session *kiln_replicas_session(const kiln_replicas *r, int k) { return r && k >= 0 && k < r->n ? r->s[k] : NULL; }
void kiln_replicas_set_bucket_bytes(kiln_replicas *r, size_t bytes) { if (r) r->bucket = bytes >= 1024 ? bytes : (size_t)4 << 20; }
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
    kiln_free(r->ptr); kiln_free(r->count); kiln_free(r->bcount); kiln_free(r->bufs);
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
    if (!r->ptr || !r->count || !r->bcount || !r->bufs) st = kiln_set_error(KILN_OUT_OF_MEMORY, "replicas: out of host memory");
    for (int k = 1; k < n && st == KILN_OK; k++) {
        const kiln_backend *be = kiln_cuda_backend(gpus[k]);
        if (!be) { st = kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: no GPU %d: %s", gpus[k], kiln_last_error()); break; }
        for (int j = 0; j < k; j++)
            if (gpus[j] == gpus[k]) st = kiln_set_error(KILN_INVALID_ARGUMENT, "replicas: GPU %d listed twice", gpus[k]);
        if (st == KILN_OK && !(r->s[k] = kiln_session_new_with_device(s0->g, &s0->opts, be)))
            st = kiln_set_error(KILN_DEVICE_ERROR, "replicas: the session of GPU %d: %s", gpus[k], kiln_last_error());
        /* replica 0 logs the placement once (the placement log names a session's only GPU
         * /device:GPU:0 whichever it is); nn/fit_dist.c lists each replica's GPU */
        if (r->s[k]) r->s[k]->opts.log_device_placement = false;
    }
    for (int k = 0; k < n && st == KILN_OK; k++) st = kiln_session_set_grad_defer(r->s[k]);
    if (st == KILN_OK) st = mod->comm_new(gpus, n, &r->comm);
    if (st != KILN_OK) { kiln_replicas_free(r); return st; }
    *out = r;
    return KILN_OK;
}

kiln_status kiln_replicas_sync_variables(kiln_replicas *r) {
    kiln_graph *g = r->s[0]->g;
    kiln_status st = KILN_OK;
    for (int id = 0; id < g->n_nodes && st == KILN_OK; id++) {
        kiln_node *v = g->nodes[id];
        if (v->op != KILN_OP_VARIABLE) continue;
        kiln_tensor *t = kiln_tensor_new(v->dtype, v->shape);
        if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "replicas: out of host memory copying '%s'", v->name);
        st = kiln_session_read_variable(r->s[0], v, t);
        for (int k = 1; k < r->n && st == KILN_OK; k++) st = kiln_session_assign_variable(r->s[k], v, t);
        kiln_tensor_free(t);
    }
    for (int k = 1; k < r->n; k++) kiln_session_set_step(r->s[k], kiln_session_step(r->s[0]));
    r->s[0]->active = NULL;
    return st;
}

/* The ranges of each replica, cut into buckets, averaged in one NCCL group. */
static kiln_status allreduce(kiln_replicas *r) {
    double t0 = kiln_now();
    int nb = 0, n_ranges = -1;
    for (int k = 0; k < r->n; k++) {
        int m = 0;
        kiln_status st = kiln_session_grad_ranges(r->s[k], r->ptr, r->count, MAX_RANGES, &m);
        if (st != KILN_OK) return st;
        if (k == 0) n_ranges = m;
        if (m != n_ranges) return kiln_set_error(KILN_INTERNAL, "replicas: replica %d has %d gradient ranges, replica 0 %d", k, m, n_ranges);
        int b = 0;
        size_t per = r->bucket / sizeof(float);
        for (int i = 0; i < m; i++)
            for (size_t off = 0; off < r->count[i]; off += per) {
                if (b >= MAX_RANGES) return kiln_set_error(KILN_INTERNAL, "replicas: more than %d buckets", MAX_RANGES);
                size_t c = r->count[i] - off < per ? r->count[i] - off : per;
                if (k == 0) r->bcount[b] = c;
                else if (r->bcount[b] != c) return kiln_set_error(KILN_INTERNAL, "replicas: bucket %d differs between replicas", b);
                r->bufs[(size_t)b * r->n + k] = (float *)r->ptr[i] + off;
                b++;
            }
        nb = b;
    }
    if (nb == 0) return KILN_OK;
    kiln_status st = r->mod->allreduce_mean(r->comm, r->bufs, r->bcount, nb);
    r->calls += nb;
    for (int b = 0; b < nb; b++) r->bytes += (double)r->bcount[b] * sizeof(float);
    r->seconds += kiln_now() - t0;   /* enqueue time (the GPUs run it asynchronously) */
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
    bool pending = st == KILN_OK && rt_reduce_pending(r->s[0]);
    for (int k = 1; k < r->n && st == KILN_OK; k++)
        if (rt_reduce_pending(r->s[k]) != pending) st = kiln_set_error(KILN_INTERNAL, "replicas: replica %d's run differs from replica 0's", k);
    if (st == KILN_OK && pending) st = allreduce(r);
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
