/* A plan's gradients and their buckets, for the collective pass (plan_reduce.c). The gradients
 * the optimizer updates of trainable variables read (the plan's gradient block, src/compile/plan.c,
 * holds them back to back) are sorted by address and cut into buckets; each bucket's ready step
 * is the one after the last step before the updates that reads or writes any byte of it
 * (gradient kernels, views, in-place updates, workspaces, a clip-by-norm's reads), so starting its
 * reduction there changes nothing any step sees: the results are those of one reduction after
 * the backward pass. */
#include <stdlib.h>
#include <string.h>
#include "runtime/grad_reduce_internal.h"

bool kiln_grad_overlap_enabled(void) {
    const char *v = getenv("KILN_OVERLAP");
    return !v || strcmp(v, "0") != 0;
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
kiln_status rt_find_grads(kiln_session *s, kiln_plan *p, int *n, int *at) {
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

