/* The gradient all-reduce overlapped with the backward pass. The gradients (sorted by address,
 * contiguous runs of the plan's gradient block) are cut into buckets; each bucket's ready step is
 * the one after the last step before the updates that reads or writes any byte of it (gradient
 * kernels, views, in-place updates, workspaces, a clip-by-norm's reads), so starting its
 * reduction there changes nothing any step sees: the results are those of the blocking
 * reduction after the backward pass. MPI ranks (rt_run_overlapped) start each host bucket with a
 * nonblocking all-reduce between steps; mirrored replicas (replicas.c) run their plans in
 * segments up to each ready step and start the NCCL group of those buckets on a communication
 * stream (kiln_session_grad_buckets). */
#include <stdlib.h>
#include <string.h>
#include "runtime/grad_reduce_internal.h"

bool kiln_grad_overlap_enabled(void) {
    const char *v = getenv("KILN_OVERLAP");
    return !v || strcmp(v, "0") != 0;
}

static kiln_status grow_chunks(struct rt_reduce *r, int n) {
    if (n <= r->chunk_cap) return KILN_OK;
    int cap = n > 2 * r->chunk_cap ? n : 2 * r->chunk_cap;
    rt_chunk *c = kiln_realloc(r->chunks, (size_t)cap * sizeof *c);
    if (!c) return kiln_set_error(KILN_OUT_OF_MEMORY, "gradient all-reduce: out of host memory");
    r->chunks = c;
    r->chunk_cap = cap;
    return KILN_OK;
}

/* [ptr, ptr + bytes) of space sp used by step i: the buckets it meets are ready after it at the earliest. */
static void touch(struct rt_reduce *r, int sp, const void *ptr, size_t bytes, int i) {
    if (!ptr || !bytes) return;
    const char *lo = ptr, *hi = lo + bytes;
    for (int k = 0; k < r->n_chunks; k++) {
        rt_chunk *c = &r->chunks[k];
        if (c->space == sp && lo < c->lo + c->count * (int64_t)sizeof(float) && c->lo < hi && c->ready < i + 1) c->ready = i + 1;
    }
}

static void step_touches(kiln_session *s, kiln_plan *p, int i) {
    struct rt_reduce *r = s->reduce;
    kiln_plan_step *st = &p->steps[i];
    kiln_node *n = st->node;
    if (st->kind == KILN_STEP_COPY) {
        int from = p->home[n->id], to = st->space;
        touch(r, from, s->data[from][n->id], node_bytes(n), i);
        touch(r, to, s->data[to][n->id], node_bytes(n), i);
        return;
    }
    int sp = st->space;
    void **data = s->data[sp];
    for (int k = 0; k < n->n_in; k++) touch(r, sp, data[n->in[k]->id], node_bytes(n->in[k]), i);
    touch(r, sp, data[st->out_id], node_bytes(n) + (sp == KILN_SPACE_HOST ? p->guard : 0), i);
    if (st->bias_id >= 0) touch(r, sp, data[st->bias_id], node_bytes(s->g->nodes[st->bias_id]), i);
    if (st->ws_offset >= 0) touch(r, sp, (char *)s->arena[sp] + st->ws_offset, st->ws_bytes, i);
}

/* Stable by ready step (buckets of one step keep their address order, the same on every replica). */
static void sort_by_ready(rt_chunk *c, int n) {
    for (int i = 1; i < n; i++) {
        rt_chunk v = c[i];
        int j = i;
        while (j > 0 && c[j - 1].ready > v.ready) { c[j] = c[j - 1]; j--; }
        c[j] = v;
    }
}

static kiln_status push_chunk(struct rt_reduce *r, char *lo, int64_t count, int sp, int ready, int a, int b) {
    kiln_status st = grow_chunks(r, r->n_chunks + 1);
    if (st == KILN_OK) r->chunks[r->n_chunks++] = (rt_chunk){ lo, count, sp, ready, a, b };
    return st;
}

/* Buckets hold whole gradients (as PyTorch DDP's): consecutive ones while they fit, so a small
 * gradient made early is not held back by a large one made late; a gradient larger than a bucket
 * is cut into bucket-sized pieces. */
kiln_status rt_grad_chunks(kiln_session *s, kiln_plan *p, int n, int at, size_t bucket, bool overlap) {
    struct rt_reduce *r = s->reduce;
    int *ids = r->ids;
    int64_t per = (int64_t)(bucket / sizeof(float));
    if (per < 16) per = 16;
    int ready0 = overlap ? 0 : at;
    kiln_status st = KILN_OK;
    r->n_chunks = 0;
    for (int a = 0; a < n && st == KILN_OK;) {
        int sp = p->home[ids[a]], b = rt_grad_run_end(s, p, a, n);
        char *lo = NULL, *hi = NULL;         /* the bucket being filled: gradients [ca, k) */
        int ca = a;
        for (int k = a; k <= b && st == KILN_OK; k++) {
            char *gs = k < b ? (char *)s->data[sp][ids[k]] : NULL;
            char *ge = k < b ? gs + node_bytes(s->g->nodes[ids[k]]) : NULL;
            int64_t gcount = k < b ? (int64_t)(ge - gs) / (int64_t)sizeof(float) : 0;
            if (lo && (k == b || gcount > per || (ge - lo) / (int64_t)sizeof(float) > per)) {
                st = push_chunk(r, lo, (int64_t)(hi - lo) / (int64_t)sizeof(float), sp, ready0, ca, k);
                lo = NULL;
            }
            if (k == b || st != KILN_OK) break;
            if (gcount > per) {
                for (int64_t off = 0; off < gcount && st == KILN_OK; off += per)
                    st = push_chunk(r, gs + off * (int64_t)sizeof(float), gcount - off < per ? gcount - off : per, sp, ready0, k, k + 1);
                continue;
            }
            if (!lo) { lo = gs; ca = k; }
            hi = ge;
        }
        a = b;
    }
    if (st != KILN_OK || !overlap) return st;
    for (int i = 0; i < at; i++) step_touches(s, p, i);
    sort_by_ready(r->chunks, r->n_chunks);
    return KILN_OK;
}

/* The alignment padding between two gradients inside host bucket c: zero, as it is summed along. */
static void zero_padding(kiln_session *s, kiln_plan *p, const rt_chunk *c) {
    int *ids = s->reduce->ids;
    char *clo = c->lo, *chi = c->lo + c->count * (int64_t)sizeof(float);
    for (int k = c->a; k + 1 < c->b; k++) {
        char *end = (char *)s->data[c->space][ids[k]] + node_bytes(s->g->nodes[ids[k]]), *next = s->data[c->space][ids[k + 1]];
        char *lo = end > clo ? end : clo, *hi = next < chi ? next : chi;
        if (lo < hi) memset(lo, 0, (size_t)(hi - lo));
    }
    (void)p;
}

kiln_status rt_run_overlapped(kiln_session *s, kiln_plan *p, int n, int at) {
    struct rt_reduce *r = s->reduce;
    n = rt_grad_sort(s, p, n);
    kiln_status st = rt_grad_chunks(s, p, n, at, r->bucket, true);
    if (st != KILN_OK) return st;
    int pos = 0, started = 0;
    for (int c = 0; c <= r->n_chunks && st == KILN_OK; c++) {
        int until = c < r->n_chunks ? r->chunks[c].ready : at;
        for (; pos < until && st == KILN_OK; pos++) {
            st = rt_run_steps(s, p, pos, pos + 1);
            if (st == KILN_OK && started && r->async.progress) st = r->async.progress(r->async_user);   /* MPI moves data only when called */
        }
        if (st != KILN_OK || c == r->n_chunks) break;
        zero_padding(s, p, &r->chunks[c]);
        st = r->async.start(r->async_user, (float *)r->chunks[c].lo, r->chunks[c].count);
        if (st == KILN_OK) started++;
    }
    kiln_status sf = started ? r->async.finish(r->async_user) : KILN_OK;   /* never leave a reduction writing into the arena */
    if (st == KILN_OK) st = sf;
    if (st != KILN_OK) return st;
    return rt_run_steps(s, p, at, p->n_steps);
}
