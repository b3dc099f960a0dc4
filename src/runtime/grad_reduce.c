/* The gradient all-reduce of data-parallel training. A run of a plan with optimizer updates is
 * split at the step after the last one writing a gradient the updates read (the plan's gradient
 * block, src/compile/plan.c, holds them back to back): those gradients are reduced there, in
 * buckets, then the run goes on with the updates, so every replica applies the same mean
 * gradient. Gradients of device spaces travel through one host staging buffer. With a
 * nonblocking hook (kiln_session_set_grad_reduce_async) each host bucket's reduction starts as
 * soon as its gradients are written, during the rest of the backward pass (grad_overlap.c). */
#include <string.h>
#include "runtime/runtime_internal.h"
#include "runtime/grad_reduce.h"
#include "runtime/grad_reduce_internal.h"

kiln_status kiln_session_set_grad_reduce(kiln_session *s, kiln_grad_reduce_fn fn, void *user, size_t bucket_bytes) {
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_grad_reduce: NULL session");
    if (!fn) { rt_reduce_free(s); return KILN_OK; }   /* the cross-replica sum hook goes with it */
    if (s->reduce && s->reduce->defer) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_grad_reduce: the session is a replica (deferred)");
    if (!s->reduce && !(s->reduce = kiln_calloc(1, sizeof *s->reduce)))
        return kiln_set_error(KILN_OUT_OF_MEMORY, "gradient all-reduce: out of host memory");
    s->reduce->fn = fn;
    s->reduce->user = user;
    s->reduce->bucket = bucket_bytes >= 64 ? bucket_bytes : (size_t)4 << 20;
    return KILN_OK;
}

kiln_status kiln_session_set_grad_reduce_async(kiln_session *s, const kiln_grad_reduce_async *a, void *user) {
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_grad_reduce_async: NULL session");
    if (!s->reduce || s->reduce->defer)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_grad_reduce_async: set the blocking reduction first "
                              "(kiln_session_set_grad_reduce, the fallback for device gradients)");
    if (a && (!a->start || !a->finish))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_grad_reduce_async: start and finish are required");
    s->reduce->async = a ? *a : (kiln_grad_reduce_async){ 0 };
    s->reduce->async_user = user;
    return KILN_OK;
}

void rt_reduce_free(kiln_session *s) {
    if (!s->reduce) return;
    kiln_free(s->reduce->chunks);
    kiln_free(s->reduce->mark);
    kiln_free(s->reduce->ids);
    kiln_free(s->reduce->stage);
    kiln_free(s->reduce);
    s->reduce = NULL;
}

static bool is_update(const kiln_plan_step *st) {
    return st->kind == KILN_STEP_KERNEL && (kiln_op_get(st->node->op)->flags & KILN_OPF_UPDATE) && st->node->n_in >= 2;
}

/* An optimizer update of a trainable variable: its gradient is what replicas average. Updates of
 * non-trainable variables (gradient accumulators "_accum/w" summing micro-batch gradients, and
 * their reset) are not: with accumulation the all-reduce happens once, in the run whose
 * optimizer update reads the accumulated gradient. */
static bool reduces(const kiln_plan_step *st) {
    if (!is_update(st)) return false;
    const kiln_node *v = st->node->in[0];
    return v->op != KILN_OP_VARIABLE || kiln_node_is_trainable(v);
}

/* Orders ids by (space, address): insertion sort, there are tens of gradients. */
static void sort_by_place(kiln_session *s, kiln_plan *p, int *ids, int n) {
    for (int i = 1; i < n; i++) {
        int v = ids[i], j = i;
        int sv = p->home[v];
        uintptr_t av = (uintptr_t)s->data[sv][v];
        while (j > 0) {
            int u = ids[j - 1], su = p->home[u];
            if (su < sv || (su == sv && (uintptr_t)s->data[su][u] <= av)) break;
            ids[j] = u;
            j--;
        }
        ids[j] = v;
    }
}

/* Sorted ids without a second gradient sharing the storage of one before it (a view), which would
 * be averaged twice. */
static int dedup(kiln_session *s, kiln_plan *p, int *ids, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (k > 0 && p->home[ids[i]] == p->home[ids[k - 1]] && s->data[p->home[ids[i]]][ids[i]] == s->data[p->home[ids[k - 1]]][ids[k - 1]])
            continue;
        ids[k++] = ids[i];
    }
    return k;
}

int rt_grad_sort(kiln_session *s, kiln_plan *p, int n) {
    sort_by_place(s, p, s->reduce->ids, n);
    return dedup(s, p, s->reduce->ids, n);
}

/* Marks this run's gradients (ids, *n) and returns the step after the last one writing them. */
static kiln_status find_grads(kiln_session *s, kiln_plan *p, int *n, int *at) {
    struct rt_reduce *r = s->reduce;
    if (r->cap < p->n_ids) {
        unsigned char *m = kiln_realloc(r->mark, (size_t)p->n_ids);
        if (m) r->mark = m;
        int *ids = m ? kiln_realloc(r->ids, (size_t)p->n_ids * sizeof *ids) : NULL;
        if (ids) r->ids = ids;
        if (!m || !ids) return kiln_set_error(KILN_OUT_OF_MEMORY, "gradient all-reduce: out of host memory");
        r->cap = p->n_ids;
    }
    memset(r->mark, 0, (size_t)p->n_ids);
    *n = 0;
    int first_update = -1;
    for (int i = 0; i < p->n_steps; i++) {
        if (!reduces(&p->steps[i])) continue;
        if (first_update < 0) first_update = i;
        kiln_node *g = p->steps[i].node->in[1];
        if (r->mark[g->id] == 1) continue;
        r->mark[g->id] = 1;
        r->ids[(*n)++] = g->id;
        if (p->alias_of[g->id] >= 0 && !r->mark[p->alias_of[g->id]]) r->mark[p->alias_of[g->id]] = 2;
    }
    *at = 0;
    for (int i = 0; i < p->n_steps; i++) {
        kiln_plan_step *st = &p->steps[i];
        if (st->kind != KILN_STEP_KERNEL) continue;
        bool writes = r->mark[st->out_id] || r->mark[st->node->id] ||
                      ((kiln_op_get(st->node->op)->flags & KILN_OPF_MUTATES) && !is_update(st) && st->node->n_in > 0 && r->mark[st->node->in[0]->id]);
        if (writes) *at = i + 1;
    }
    if (*n > 0 && first_update < *at)
        return kiln_set_error(KILN_UNSUPPORTED, "data-parallel training: an optimizer update ('%s') runs before the last gradient is "
                              "made, so the gradients cannot be all-reduced first", p->steps[first_update].node->name);
    return KILN_OK;
}

/* Reduces [ptr, ptr + bytes) of f32 host memory in buckets. */
static kiln_status reduce_host(struct rt_reduce *r, float *x, int64_t count) {
    int64_t per = (int64_t)(r->bucket / sizeof(float));
    for (int64_t off = 0; off < count; off += per) {
        kiln_status st = r->fn(r->user, x + off, count - off < per ? count - off : per);
        if (st != KILN_OK) return st;
    }
    return KILN_OK;
}

/* One run of contiguous gradients [a, b) of ids (same space): padding between them (the gradient
 * block's 64-byte alignment) is zeroed and reduced along, so the run is one range. */
static kiln_status reduce_range(kiln_session *s, const kiln_plan *p, int a, int b) {
    struct rt_reduce *r = s->reduce;
    int *ids = r->ids;
    int sp = p->home[ids[a]];
    char *lo = s->data[sp][ids[a]];
    kiln_node *last = s->g->nodes[ids[b - 1]];
    char *hi = (char *)s->data[sp][last->id] + node_bytes(last);
    size_t bytes = (size_t)(hi - lo);
    if (sp == KILN_SPACE_HOST) {
        for (int k = a; k + 1 < b; k++) {
            char *end = (char *)s->data[sp][ids[k]] + node_bytes(s->g->nodes[ids[k]]);
            memset(end, 0, (size_t)((char *)s->data[sp][ids[k + 1]] - end));
        }
        return reduce_host(r, (float *)lo, (int64_t)(bytes / sizeof(float)));
    }
    if (r->stage_bytes < bytes) {
        kiln_free(r->stage);
        r->stage_bytes = 0;
        if (!(r->stage = kiln_malloc(bytes))) return kiln_set_error(KILN_OUT_OF_MEMORY, "gradient all-reduce: out of host memory for the staging buffer");
        r->stage_bytes = bytes;
    }
    const kiln_backend *be = s->be[sp];
    kiln_status st = rt_activate(s, sp);
    if (st == KILN_OK) st = be->copy(be, r->stage, lo, bytes, KILN_COPY_D2H);
    if (st == KILN_OK) st = be->sync(be);
    if (st != KILN_OK) return st;
    for (int k = a; k + 1 < b; k++) {   /* padding: zero in the staged copy */
        size_t end = (size_t)((char *)s->data[sp][ids[k]] - lo) + node_bytes(s->g->nodes[ids[k]]);
        memset((char *)r->stage + end, 0, (size_t)((char *)s->data[sp][ids[k + 1]] - lo) - end);
    }
    if ((st = reduce_host(r, r->stage, (int64_t)(bytes / sizeof(float)))) != KILN_OK) return st;
    st = be->copy(be, lo, r->stage, bytes, KILN_COPY_H2D);
    return st == KILN_OK ? be->sync(be) : st;   /* the staging buffer is reused by the next range */
}

int rt_grad_run_end(kiln_session *s, const kiln_plan *p, int a, int n) {
    const int *ids = s->reduce->ids;
    int sp = p->home[ids[a]], b = a + 1;
    while (b < n && p->home[ids[b]] == sp) {   /* extend while the next starts within 64 bytes of the end */
        kiln_node *prev = s->g->nodes[ids[b - 1]];
        char *end = (char *)s->data[sp][prev->id] + node_bytes(prev), *next = s->data[sp][ids[b]];
        if (next < end || next - end >= 64 || (next - end) % 4) break;
        b++;
    }
    return b;
}

static kiln_status reduce_grads(kiln_session *s, kiln_plan *p, int n) {
    int *ids = s->reduce->ids;
    for (int k = 0; k < n; k++) {
        kiln_node *g = s->g->nodes[ids[k]];
        if (g->dtype != KILN_F32)
            return kiln_set_error(KILN_UNSUPPORTED, "data-parallel training: gradient '%s' is %s; only f32 gradients are all-reduced",
                                  g->name, kiln_dtype_name(g->dtype));
    }
    n = rt_grad_sort(s, p, n);
    for (int a = 0; a < n;) {
        int b = rt_grad_run_end(s, p, a, n);
        kiln_status st = reduce_range(s, p, a, b);
        if (st != KILN_OK) return st;
        a = b;
    }
    return KILN_OK;
}

/* Every gradient f32 in host memory: the overlapped path can take them. */
static bool all_host_f32(kiln_session *s, kiln_plan *p, int n) {
    for (int k = 0; k < n; k++) {
        kiln_node *g = s->g->nodes[s->reduce->ids[k]];
        if (g->dtype != KILN_F32 || p->home[g->id] != KILN_SPACE_HOST) return false;
    }
    return true;
}

/* A replica's run: checked, its gradients sorted, then it waits at step 0 for the caller. */
static kiln_status defer_run(kiln_session *s, kiln_plan *p, int n, int at) {
    struct rt_reduce *r = s->reduce;
    for (int i = 0; i < n; i++) {
        kiln_node *g = s->g->nodes[r->ids[i]];
        if (g->dtype != KILN_F32 || p->home[g->id] == KILN_SPACE_HOST)
            return kiln_set_error(KILN_UNSUPPORTED, "replicas: gradient '%s' is %s in %s memory; only f32 gradients on the GPU are "
                                  "all-reduced with NCCL", g->name, kiln_dtype_name(g->dtype), p->home[g->id] ? "device" : "host");
    }
    r->n_pending = rt_grad_sort(s, p, n);
    r->at = at;
    r->pending_at = 0;
    r->pending = p;
    return KILN_OK;
}

kiln_status rt_run_reduced(kiln_session *s, kiln_plan *p) {
    int n = 0, at = 0;
    s->reduce->pending = NULL;
    if (!s->reduce->fn && !s->reduce->defer) return rt_run_steps(s, p, 0, p->n_steps);   /* only a cross-replica sum hook */
    kiln_status st = find_grads(s, p, &n, &at);
    if (st != KILN_OK) return st;
    if (n == 0) return rt_run_steps(s, p, 0, p->n_steps);
    if (s->reduce->defer) return defer_run(s, p, n, at);
    if (s->reduce->async.start && all_host_f32(s, p, n)) return rt_run_overlapped(s, p, n, at);
    if ((st = rt_run_steps(s, p, 0, at)) != KILN_OK) return st;
    for (int sp = 1; sp < s->n_spaces; sp++)      /* device work before the reduction is done */
        if ((p->device_space == sp || p->device_space == -2) && (st = s->be[sp]->sync(s->be[sp])) != KILN_OK) return st;
    if ((st = reduce_grads(s, p, n)) != KILN_OK) return st;
    return rt_run_steps(s, p, at, p->n_steps);
}

/* ---- replicas (src/runtime/replicas.c): the run waits at step 0, run in segments by the caller ---- */

kiln_status kiln_session_set_grad_defer(kiln_session *s) {
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_grad_defer: NULL session");
    if (!s->reduce && !(s->reduce = kiln_calloc(1, sizeof *s->reduce)))
        return kiln_set_error(KILN_OUT_OF_MEMORY, "gradient all-reduce: out of host memory");
    s->reduce->defer = true;
    s->reduce->bucket = (size_t)4 << 20;
    return KILN_OK;
}

bool rt_reduce_pending(const kiln_session *s) { return s->reduce && s->reduce->pending; }

void rt_reduce_cancel(kiln_session *s) { if (s->reduce) s->reduce->pending = NULL; }

kiln_status kiln_session_grad_buckets(kiln_session *s, size_t bucket_bytes, bool overlap, void **ptr, size_t *count, int *ready,
                                      int max, int *n_out, int *at) {
    struct rt_reduce *r = s->reduce;
    *n_out = 0;
    *at = 0;
    if (!r || !r->pending) return KILN_OK;
    kiln_status st = rt_grad_chunks(s, r->pending, r->n_pending, r->at, bucket_bytes, overlap);
    if (st != KILN_OK) return st;
    if (r->n_chunks > max) return kiln_set_error(KILN_INTERNAL, "replicas: %d gradient buckets, at most %d", r->n_chunks, max);
    for (int k = 0; k < r->n_chunks; k++) {
        ptr[k] = r->chunks[k].lo;
        count[k] = (size_t)r->chunks[k].count;
        ready[k] = r->chunks[k].ready;
    }
    *n_out = r->n_chunks;
    *at = r->at;
    return KILN_OK;
}

kiln_status kiln_session_sync_points(kiln_session *s, void **ptr, size_t *count, kiln_dtype *dtype, int *step, int max, int *n_out) {
    struct rt_reduce *r = s->reduce;
    *n_out = 0;
    if (!r || !r->pending) return KILN_OK;
    kiln_plan *p = r->pending;
    for (int i = 0; i < p->n_steps; i++) {
        kiln_plan_step *stp = &p->steps[i];
        if (stp->kind != KILN_STEP_KERNEL || stp->node->op != KILN_OP_CROSS_REPLICA_SUM) continue;
        kiln_node *n = stp->node;
        if (stp->space == KILN_SPACE_HOST || (n->dtype != KILN_F32 && n->dtype != KILN_F64))
            return kiln_set_error(KILN_UNSUPPORTED, "replicas: cross-replica sum '%s' is %s on the %s; NCCL sums f32/f64 GPU values",
                                  n->name, kiln_dtype_name(n->dtype), stp->space == KILN_SPACE_HOST ? "CPU" : "GPU");
        if (i >= r->at)
            return kiln_set_error(KILN_UNSUPPORTED, "replicas: cross-replica sum '%s' runs after the last gradient is made", n->name);
        if (*n_out >= max) return kiln_set_error(KILN_INTERNAL, "replicas: more than %d cross-replica sums", max);
        ptr[*n_out] = s->data[stp->space][stp->out_id];
        count[*n_out] = (size_t)kiln_shape_numel(n->shape);
        dtype[*n_out] = n->dtype;
        step[(*n_out)++] = i;
    }
    return KILN_OK;
}

kiln_status kiln_session_run_to(kiln_session *s, int step) {
    struct rt_reduce *r = s->reduce;
    if (!r || !r->pending) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_run_to: no run waits for its gradients");
    if (step < r->pending_at || step > r->at)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_run_to: step %d outside [%d, %d]", step, r->pending_at, r->at);
    kiln_status st = rt_run_steps(s, r->pending, r->pending_at, step);
    r->pending_at = step;
    return st;
}

kiln_status kiln_session_run_rest(kiln_session *s, kiln_node *const *fetches, kiln_tensor **outs, int n_fetches) {
    struct rt_reduce *r = s->reduce;
    if (!r || !r->pending) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_run_rest: no run waits for its gradients");
    kiln_plan *p = r->pending;
    r->pending = NULL;
    kiln_status st = rt_run_steps(s, p, r->pending_at, p->n_steps);
    for (int sp = 1; sp < s->n_spaces && st == KILN_OK; sp++)
        if (p->device_space == sp || p->device_space == -2) st = s->be[sp]->sync(s->be[sp]);
    if (st == KILN_OK) st = rt_read_fetches(s, p, fetches, outs, n_fetches);
    if (st == KILN_OK) s->step++;
    return st;
}
