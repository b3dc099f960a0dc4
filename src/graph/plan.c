/* Planning: needed nodes, copies at device borders, and static memory planning — every value gets
 * an arena offset in its memory space from its lifetime (first write .. last read); buffers are
 * reused once dead, aliases (reshape) share their input's storage, and elementwise ops write in
 * place over an input that dies with them. */
#include <stdint.h>
#include <string.h>
#include "graph/plan.h"

typedef kiln_plan_buf buf;

static int64_t align64(int64_t x) { return (x + 63) & ~(int64_t)63; }

static int *dup_ids(kiln_node *const *nodes, int n) {
    int *ids = kiln_malloc((size_t)(n ? n : 1) * sizeof *ids);
    for (int i = 0; i < n; i++) ids[i] = nodes[i]->id;
    return ids;
}

/* Greedy placement of one space's buffers, largest first, at the lowest offset that overlaps no
 * placed buffer alive at the same time. Returns the arena size. */
static int64_t place_buffers(buf *b, int nb, int space) {
    int *order = kiln_malloc((size_t)(nb ? nb : 1) * sizeof *order);
    int n = 0;
    for (int i = 0; i < nb; i++) if (b[i].space == space) order[n++] = i;
    for (int i = 1; i < n; i++) {           /* insertion sort by size, descending (stable) */
        int k = order[i], j = i - 1;
        while (j >= 0 && b[order[j]].bytes < b[k].bytes) { order[j + 1] = order[j]; j--; }
        order[j + 1] = k;
    }
    int64_t total = 0;
    for (int oi = 0; oi < n; oi++) {
        buf *x = &b[order[oi]];
        int64_t off = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (int pj = 0; pj < oi; pj++) {
                buf *y = &b[order[pj]];
                bool live = !(x->end < y->start || y->end < x->start);
                if (live && off < y->offset + y->bytes && y->offset < off + x->bytes) {
                    off = align64(y->offset + y->bytes);
                    moved = true;
                }
            }
        }
        x->offset = off;
        if (off + x->bytes > total) total = off + x->bytes;
    }
    kiln_free(order);
    return total;
}

void kiln_plan_needed(kiln_graph *g, kiln_node *const *fetches, int n_fetches, kiln_node *const *targets,
                      int n_targets, bool *need) {
    memset(need, 0, (size_t)g->n_nodes * sizeof *need);
    for (int i = 0; i < n_fetches; i++) need[fetches[i]->id] = true;
    for (int i = 0; i < n_targets; i++) need[targets[i]->id] = true;
    for (int id = g->n_nodes - 1; id >= 0; id--)    /* ids are topological: one backward sweep */
        if (need[id]) for (int k = 0; k < g->nodes[id]->n_in; k++) need[g->nodes[id]->in[k]->id] = true;
}

/* Builder state. Time is measured in node ids (the schedule is in id order; a copy runs just
 * before its first consumer, at that consumer's time). val[space][id] = buffer index, -1 none,
 * -2 bound at run time (a source), -3 alias of a source. */
typedef struct builder {
    kiln_plan *p;
    int *val[KILN_SPACE_COUNT];
    int *lastread[KILN_SPACE_COUNT];  /* time of the last read of the value, -1 never */
    buf *bufs;
    int nb, cap;
} builder;

static int new_buf(builder *b, int64_t bytes, int start, int end, int space) {
    if (b->nb == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->bufs = kiln_realloc(b->bufs, (size_t)b->cap * sizeof *b->bufs);
    }
    b->bufs[b->nb] = (buf){ bytes, start, end > start ? end : start, 0, space, 0 };
    return b->nb++;
}

/* A buffer holding node n's value scales with the batch when n's leading dim is the batch (the
 * leading dim every feed shares). Coincidences (a [batch, k] weight gradient) count too: small. */
static int value_buf(builder *b, const kiln_node *n, int64_t bytes, int start, int end, int space) {
    int i = new_buf(b, bytes, start, end, space);
    if (b->p->batch > 0 && n->shape.rank > 0 && n->shape.dim[0] == b->p->batch)
        b->bufs[i].scaled = kiln_shape_numel(n->shape) * (int64_t)kiln_dtype_size(n->dtype);
    return i;
}

static int64_t value_bytes(const kiln_node *n) {
    int64_t bytes = kiln_shape_numel(n->shape) * (int64_t)kiln_dtype_size(n->dtype);
    return bytes ? bytes : 1;
}

/* A copy of src's value into dst_space, made at time `at`. */
static void add_copy(builder *b, kiln_node *src, int dst_space, int at) {
    kiln_plan *p = b->p;
    p->steps[p->n_steps++] = (kiln_plan_step){ .kind = KILN_STEP_COPY, .node = src, .space = dst_space,
                                               .backend = "copy", .view_base = -1, .ws_offset = -1 };
    b->val[dst_space][src->id] = value_buf(b, src, value_bytes(src), at, b->lastread[dst_space][src->id], dst_space);
}

static bool is_source(const kiln_node *n) { return (kiln_op_get(n->op)->flags & KILN_OPF_SOURCE) != 0; }

kiln_status kiln_plan_build(kiln_graph *g, const kiln_plan_request *r, kiln_plan **out) {
    int n = g->n_nodes;
    kiln_status st = KILN_OK;
    kiln_plan *p = kiln_calloc(1, sizeof *p);
    builder b = { p, { 0 }, { 0 }, NULL, 0, 0 };
    bool *need = kiln_malloc((size_t)n * sizeof *need);
    p->n_ids = n;
    p->guard = r->guard;
    p->home = kiln_malloc((size_t)n);
    p->alias_of = kiln_malloc((size_t)n * sizeof *p->alias_of);
    for (int s = 0; s < KILN_SPACE_COUNT; s++) {
        p->offset[s] = kiln_malloc((size_t)n * sizeof *p->offset[s]);
        b.val[s] = kiln_malloc((size_t)n * sizeof *b.val[s]);
        b.lastread[s] = kiln_malloc((size_t)n * sizeof *b.lastread[s]);
        for (int i = 0; i < n; i++) { p->offset[s][i] = -1; b.val[s][i] = -1; b.lastread[s][i] = -1; }
    }
    p->feed_ids = dup_ids(r->feeds, r->n_feeds); p->n_feeds = r->n_feeds;
    p->batch = -1;
    for (int i = 0; i < r->n_feeds; i++) {   /* the batch: the leading dim every feed shares */
        kiln_shape fs = r->feeds[i]->shape;
        int64_t lead = fs.rank > 0 ? fs.dim[0] : -1;
        p->batch = i == 0 ? lead : (p->batch == lead ? p->batch : -1);
    }
    p->fetch_ids = dup_ids(r->fetches, r->n_fetches); p->n_fetches = r->n_fetches;
    p->target_ids = dup_ids(r->targets, r->n_targets); p->n_targets = r->n_targets;

    kiln_plan_needed(g, r->fetches, r->n_fetches, r->targets, r->n_targets, need);
    /* pass 1: where each value lives (aliases live with their input) */
    int max_steps = 0, n_views = 0, n_sources = 0;
    for (int id = 0; id < n; id++) {
        p->home[id] = -1;
        p->alias_of[id] = -1;
        if (!need[id]) continue;
        kiln_node *nd = g->nodes[id];
        int space = r->device ? r->place[id] : KILN_SPACE_HOST;
        if (is_source(nd)) n_sources++;
        else {
            max_steps += 1 + nd->n_in;        /* the kernel + at most one copy per input */
            n_views += nd->n_in;
            if ((kiln_op_get(nd->op)->flags & KILN_OPF_ALIAS0) && nd->n_in > 0) {
                int root = nd->in[0]->id;
                while (p->alias_of[root] >= 0) root = p->alias_of[root];
                p->alias_of[id] = root;
                space = p->home[nd->in[0]->id];
            }
        }
        p->home[id] = (int8_t)space;
    }
    /* pass 2: last reads per (value, space); a copy reads its source when its first consumer runs;
     * fetched values live to the end; reads of an alias keep its input alive. Also each value's
     * readers (count, and the reader when there is one) for epilogue fusion. */
    int *n_cons = kiln_calloc((size_t)n, sizeof *n_cons), *cons = kiln_malloc((size_t)n * sizeof *cons);
    bool *fused = kiln_calloc((size_t)n, sizeof *fused);
    for (int c = 0; c < n; c++) {
        if (!need[c] || is_source(g->nodes[c])) continue;
        for (int k = 0; k < g->nodes[c]->n_in; k++) {
            int in = g->nodes[c]->in[k]->id, s = p->home[c];
            n_cons[in]++;
            cons[in] = c;
            if (b.lastread[s][in] < c) b.lastread[s][in] = c;
            if (p->home[in] != s && b.lastread[p->home[in]][in] < c) b.lastread[p->home[in]][in] = c;
        }
    }
    for (int i = 0; i < r->n_fetches; i++) b.lastread[p->home[r->fetches[i]->id]][r->fetches[i]->id] = n;
    for (int id = n - 1; id >= 0; id--)
        if (p->alias_of[id] >= 0) {
            int in0 = g->nodes[id]->in[0]->id;
            for (int s = 0; s < KILN_SPACE_COUNT; s++)
                if (b.lastread[s][in0] < b.lastread[s][id]) b.lastread[s][in0] = b.lastread[s][id];
        }
    bool *fetched = kiln_calloc((size_t)n, sizeof *fetched);
    for (int i = 0; i < r->n_fetches; i++) fetched[r->fetches[i]->id] = true;

    p->steps = kiln_calloc((size_t)(max_steps ? max_steps : 1), sizeof *p->steps);
    p->views = kiln_calloc((size_t)(n_views ? n_views : 1), sizeof *p->views);
    p->sources = kiln_malloc((size_t)(n_sources ? n_sources : 1) * sizeof *p->sources);
    p->n_views = n_views;
    for (int id = 0; id < n; id++)
        if (need[id] && is_source(g->nodes[id])) {
            p->sources[p->n_sources++] = id;
            b.val[p->home[id]][id] = -2;
        }
    /* fed placeholders read on the device are copied first, so a captured step graph starts after */
    for (int id = 0; id < n && r->device; id++)
        if (need[id] && g->nodes[id]->op == KILN_OP_PLACEHOLDER && p->home[id] == KILN_SPACE_HOST &&
            b.lastread[KILN_SPACE_DEVICE][id] >= 0)
            add_copy(&b, g->nodes[id], KILN_SPACE_DEVICE, 0);
    p->n_feed_copies = p->n_steps;

    /* pass 3: the schedule and the buffers */
    int v = 0;
    for (int id = 0; id < n && st == KILN_OK; id++) {
        kiln_node *nd = g->nodes[id];
        const kiln_op_def *d = kiln_op_get(nd->op);
        if (!need[id] || is_source(nd) || fused[id]) continue;
        /* RandomCropFlip is not here: its draw comes from the keys input, not the step */
        if (nd->op == KILN_OP_DROPOUT || nd->op == KILN_OP_DROPOUT_GRAD) p->has_dropout = true;
        int space = p->home[id];
        for (int k = 0; k < nd->n_in; k++) {          /* inputs living elsewhere: copy once */
            kiln_node *in = nd->in[k];
            if (b.val[space][in->id] == -1) { add_copy(&b, in, space, id); p->host_steps_between = true; }
        }
        kiln_plan_step *stp = &p->steps[p->n_steps++];
        const kiln_backend *be = space == KILN_SPACE_DEVICE ? r->device : r->host;
        *stp = (kiln_plan_step){ .kind = KILN_STEP_KERNEL, .node = nd, .space = space, .view_base = v, .ws_offset = -1,
                                 .out_id = id, .bias_id = -1 };
        v += nd->n_in;
        stp->kernel = be->kernel(be, nd);
        stp->backend = be->name;
        if (!stp->kernel && space == KILN_SPACE_HOST) { stp->kernel = d->ref; stp->backend = "ref"; }
        if (!stp->kernel) {
            st = kiln_set_error(KILN_UNSUPPORTED, "%s (%s): no %s kernel", nd->name, d->name, be->name);
            break;
        }
        if (space == KILN_SPACE_HOST) p->host_steps_between = true;
        else p->uses_device = true;
        stp->ws_bytes = stp->kernel == d->ref ? (d->ref_workspace ? d->ref_workspace(nd) : 0)
                                               : (be->workspace ? be->workspace(be, nd) : 0);
        if (p->alias_of[id] >= 0) {
            int iv = b.val[space][nd->in[0]->id];
            b.val[space][id] = iv >= 0 ? iv : -3;
            if (iv >= 0 && b.bufs[iv].end < b.lastread[space][id]) b.bufs[iv].end = b.lastread[space][id];
            continue;
        }
        /* epilogue fusion: producer -> [BiasAdd] -> [Relu], each link its input's only reader */
        if (!r->no_fusion && be->fuses && be->fuses(be, nd) && stp->kernel != d->ref) {
            int tail = id;
            kiln_node *c = n_cons[id] == 1 && !fetched[id] ? g->nodes[cons[id]] : NULL;
            if (c && c->op == KILN_OP_BIAS_ADD && c->in[0] == nd && c->in[1] != nd && p->home[c->id] == space &&
                c->dtype == nd->dtype && c->in[1]->id < id && b.val[space][c->in[1]->id] != -1) {
                /* the bias is made before the producer runs and read by the BiasAdd after it, so
                 * its buffer already covers the producer's time */
                stp->bias_id = c->in[1]->id;
                fused[c->id] = true;
                tail = c->id;
                c = n_cons[tail] == 1 && !fetched[tail] ? g->nodes[cons[tail]] : NULL;
            }
            if (c && c->op == KILN_OP_RELU && c->in[0] == g->nodes[tail] && p->home[c->id] == space) {
                stp->relu = true;
                fused[c->id] = true;
                tail = c->id;
            }
            if (tail != id) {
                stp->out_id = tail;
                int64_t tb = value_bytes(g->nodes[tail]) + (space == KILN_SPACE_HOST ? (int64_t)r->guard : 0);
                b.val[space][tail] = value_buf(&b, g->nodes[tail], tb, id, b.lastread[space][tail], space);
                if (stp->ws_bytes) stp->ws_offset = new_buf(&b, (int64_t)stp->ws_bytes, id, id, space);
                continue;
            }
        }
        int64_t bytes = value_bytes(nd) + (space == KILN_SPACE_HOST ? (int64_t)r->guard : 0);
        kiln_node *in0 = nd->n_in > 0 ? nd->in[0] : NULL;
        int iv = in0 ? b.val[space][in0->id] : -1;
        if ((d->flags & KILN_OPF_INPLACE0) && iv >= 0 && b.lastread[space][in0->id] == id &&
            b.bufs[iv].end <= id && b.bufs[iv].bytes == bytes && !fetched[in0->id]) {
            b.val[space][id] = iv;                    /* write over input 0, which dies here */
            int end = b.lastread[space][id];
            b.bufs[iv].end = end > id ? end : id;
            continue;
        }
        b.val[space][id] = value_buf(&b, nd, bytes, id, b.lastread[space][id], space);
        if (stp->ws_bytes) stp->ws_offset = new_buf(&b, (int64_t)stp->ws_bytes, id, id, space);   /* index for now */
    }
    if (st == KILN_OK) {
        for (int s = 0; s < KILN_SPACE_COUNT; s++) p->arena_bytes[s] = (size_t)place_buffers(b.bufs, b.nb, s);
        for (int s = 0; s < KILN_SPACE_COUNT; s++)
            for (int id = 0; id < n; id++)
                if (b.val[s][id] >= 0) p->offset[s][id] = b.bufs[b.val[s][id]].offset;
        for (int i = 0; i < p->n_steps; i++)
            if (p->steps[i].ws_offset >= 0) p->steps[i].ws_offset = b.bufs[p->steps[i].ws_offset].offset;
    }
    p->bufs = b.bufs;     /* kept for kiln_plan_arena_at */
    p->n_bufs = b.nb;
    kiln_free(need); kiln_free(fetched);
    kiln_free(n_cons); kiln_free(cons); kiln_free(fused);
    for (int s = 0; s < KILN_SPACE_COUNT; s++) { kiln_free(b.val[s]); kiln_free(b.lastread[s]); }
    if (st != KILN_OK) { kiln_plan_free(p); p = NULL; }
    *out = p;
    return st;
}

void kiln_plan_free(kiln_plan *p) {
    if (!p) return;
    kiln_free(p->feed_ids); kiln_free(p->fetch_ids); kiln_free(p->target_ids);
    kiln_free(p->steps); kiln_free(p->views); kiln_free(p->sources);
    kiln_free(p->home); kiln_free(p->alias_of);
    for (int s = 0; s < KILN_SPACE_COUNT; s++) kiln_free(p->offset[s]);
    kiln_free(p->bufs);
    kiln_free(p);
}

size_t kiln_plan_arena_at(const kiln_plan *p, int space, int64_t batch) {
    if (p->batch <= 0 || batch == p->batch) return p->arena_bytes[space];
    buf *t = kiln_malloc((size_t)(p->n_bufs ? p->n_bufs : 1) * sizeof *t);
    if (!t) return SIZE_MAX;
    for (int i = 0; i < p->n_bufs; i++) {
        t[i] = p->bufs[i];
        t[i].bytes += t[i].scaled / p->batch * batch - t[i].scaled;
        if (t[i].bytes < 1) t[i].bytes = 1;
    }
    size_t total = (size_t)place_buffers(t, p->n_bufs, space);
    kiln_free(t);
    return total;
}
