/* The plan builder: needed nodes, where each value lives (aliases with their input), liveness,
 * the fusion pass, the schedule with copies at space borders, and the memory plan — every value
 * gets an arena offset in its space from its lifetime (first write .. last read); buffers are
 * reused once dead, aliases (reshape) share their input's storage, and elementwise ops write in
 * place over an input that dies with them. Every allocation is checked: running out of host
 * memory while planning returns KILN_OUT_OF_MEMORY. */
#include <stdint.h>
#include <string.h>
#include "compile/plan.h"
#include "compile/fusion.h"

/* Builder state. Time is measured in node ids (the schedule is in id order; a copy runs just
 * before its first consumer, at that consumer's time). Per (space, id), flat [space * n + id]:
 * val = buffer index, -1 none, -2 bound at run time (a source), -3 alias of a source;
 * lastread = time of the value's last read there, -1 never. */
typedef struct builder {
    kiln_graph *g;
    const kiln_plan_request *r;
    kiln_plan *p;
    int n, ns;
    bool *need, *fetched, *absorbed;
    int *val, *lastread;
    int *n_readers, *reader;
    kiln_epilogue *epi;
    int *made_at;            /* [n] when the value is written: its own id, or its fused producer's */
    int *member;             /* [n] its buffer inside the gradient block, -1: not in it */
    kiln_memplan mem;
    int max_steps;
} builder;

static kiln_status oom(void) { return kiln_set_error(KILN_OUT_OF_MEMORY, "planning the step: out of host memory"); }

static int *VAL(builder *b, int s, int id) { return &b->val[(size_t)s * b->n + id]; }
static int *LAST(builder *b, int s, int id) { return &b->lastread[(size_t)s * b->n + id]; }
static bool is_source(const kiln_node *n) { return (kiln_op_get(n->op)->flags & KILN_OPF_SOURCE) != 0; }

static int *dup_ids(kiln_node *const *nodes, int n) {
    int *ids = kiln_malloc((size_t)(n ? n : 1) * sizeof *ids);
    for (int i = 0; ids && i < n; i++) ids[i] = nodes[i]->id;
    return ids;
}

void kiln_plan_needed(kiln_graph *g, kiln_node *const *fetches, int n_fetches, kiln_node *const *targets,
                      int n_targets, bool *need) {
    memset(need, 0, (size_t)g->n_nodes * sizeof *need);
    for (int i = 0; i < n_fetches; i++) need[fetches[i]->id] = true;
    for (int i = 0; i < n_targets; i++) need[targets[i]->id] = true;
    for (int id = g->n_nodes - 1; id >= 0; id--)    /* ids are topological: one backward sweep */
        if (need[id]) for (int k = 0; k < g->nodes[id]->n_in; k++) need[g->nodes[id]->in[k]->id] = true;
}

/* The plan's key and id-indexed arrays, and the builder's scratch. */
static kiln_status alloc_all(builder *b) {
    kiln_plan *p = b->p;
    const kiln_plan_request *r = b->r;
    size_t n = (size_t)b->n, nsn = (size_t)b->ns * n;
    p->n_ids = b->n;
    p->n_spaces = b->ns;
    p->guard = r->guard;
    p->device_space = -1;
    p->home = kiln_malloc(n);
    p->alias_of = kiln_malloc(n * sizeof *p->alias_of);
    p->offset = kiln_malloc(nsn * sizeof *p->offset);
    p->arena_bytes = kiln_calloc((size_t)b->ns, sizeof *p->arena_bytes);
    p->grad_offset = kiln_malloc((size_t)b->ns * sizeof *p->grad_offset);
    p->grad_bytes = kiln_calloc((size_t)b->ns, sizeof *p->grad_bytes);
    p->feed_ids = dup_ids(r->feeds, r->n_feeds);
    p->fetch_ids = dup_ids(r->fetches, r->n_fetches);
    p->target_ids = dup_ids(r->targets, r->n_targets);
    b->need = kiln_malloc(n * sizeof *b->need);
    b->fetched = kiln_calloc(n, sizeof *b->fetched);
    b->absorbed = kiln_malloc(n * sizeof *b->absorbed);
    b->val = kiln_malloc(nsn * sizeof *b->val);
    b->lastread = kiln_malloc(nsn * sizeof *b->lastread);
    b->n_readers = kiln_calloc(n, sizeof *b->n_readers);
    b->reader = kiln_malloc(n * sizeof *b->reader);
    b->epi = kiln_malloc(n * sizeof *b->epi);
    b->made_at = kiln_malloc(n * sizeof *b->made_at);
    b->member = kiln_malloc(n * sizeof *b->member);
    if (!p->grad_offset || !p->grad_bytes || !b->made_at || !b->member) return oom();
    for (int s = 0; s < b->ns; s++) p->grad_offset[s] = -1;
    if (!p->home || !p->alias_of || !p->offset || !p->arena_bytes || !p->feed_ids || !p->fetch_ids || !p->target_ids ||
        !b->need || !b->fetched || !b->absorbed || !b->val || !b->lastread || !b->n_readers || !b->reader || !b->epi)
        return oom();
    p->n_feeds = r->n_feeds;
    p->n_fetches = r->n_fetches;
    p->n_targets = r->n_targets;
    for (size_t i = 0; i < nsn; i++) { p->offset[i] = -1; b->val[i] = -1; b->lastread[i] = -1; }
    return KILN_OK;
}

/* The batch: the leading dim every feed shares (buffers of that leading dim scale with it). */
static void find_batch(builder *b) {
    kiln_plan *p = b->p;
    p->batch = -1;
    for (int i = 0; i < b->r->n_feeds; i++) {
        kiln_shape fs = b->r->feeds[i]->shape;
        int64_t lead = fs.rank > 0 ? fs.dim[0] : -1;
        p->batch = i == 0 ? lead : (p->batch == lead ? p->batch : -1);
    }
}

/* Pass 1: where each value lives (aliases live with their input); sizes of the step and view
 * lists. */
static kiln_status plan_homes(builder *b) {
    kiln_plan *p = b->p;
    int n_views = 0, n_sources = 0;
    for (int id = 0; id < b->n; id++) {
        p->home[id] = -1;
        p->alias_of[id] = -1;
        if (!b->need[id]) continue;
        kiln_node *nd = b->g->nodes[id];
        int space = b->r->place[id];
        if (space < 0 || space >= b->ns)
            return kiln_set_error(KILN_INTERNAL, "%s (%s): placed in memory space %d of %d", nd->name, kiln_op_get(nd->op)->name, space, b->ns);
        if (is_source(nd)) n_sources++;
        else {
            b->max_steps += 1 + nd->n_in;        /* the kernel + at most one copy per input */
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
    p->steps = kiln_calloc((size_t)(b->max_steps ? b->max_steps : 1), sizeof *p->steps);
    p->views = kiln_calloc((size_t)(n_views ? n_views : 1), sizeof *p->views);
    p->sources = kiln_malloc((size_t)(n_sources ? n_sources : 1) * sizeof *p->sources);
    if (!p->steps || !p->views || !p->sources) return oom();
    p->n_views = n_views;
    return KILN_OK;
}

/* Pass 2: last reads per (value, space) — a copy reads its source when its first consumer runs;
 * fetched values live to the end; reads of an alias keep its input alive — and each value's
 * readers (for fusion). */
static void plan_liveness(builder *b) {
    kiln_plan *p = b->p;
    kiln_graph *g = b->g;
    for (int c = 0; c < b->n; c++) {
        if (!b->need[c] || is_source(g->nodes[c])) continue;
        for (int k = 0; k < g->nodes[c]->n_in; k++) {
            int in = g->nodes[c]->in[k]->id, s = p->home[c];
            b->n_readers[in]++;
            b->reader[in] = c;
            if (*LAST(b, s, in) < c) *LAST(b, s, in) = c;
            if (p->home[in] != s && *LAST(b, p->home[in], in) < c) *LAST(b, p->home[in], in) = c;
        }
    }
    for (int i = 0; i < b->r->n_fetches; i++) {
        int f = b->r->fetches[i]->id;
        *LAST(b, p->home[f], f) = b->n;
        b->fetched[f] = true;
    }
    for (int id = b->n - 1; id >= 0; id--)
        if (p->alias_of[id] >= 0) {
            int in0 = g->nodes[id]->in[0]->id;
            for (int s = 0; s < b->ns; s++)
                if (*LAST(b, s, in0) < *LAST(b, s, id)) *LAST(b, s, in0) = *LAST(b, s, id);
        }
}

/* The kernel the node runs where it is placed: the backend's, else ref on the host. */
static kiln_kernel_fn pick_kernel(const kiln_backend *be, const kiln_node *nd, int space, const char **who) {
    kiln_kernel_fn k = be->kernel(be, nd);
    *who = be->name;
    if (!k && space == KILN_SPACE_HOST) { k = kiln_op_get(nd->op)->ref; *who = "ref"; }
    return k;
}

static bool can_fuse(const kiln_node *n, void *ctx) {
    builder *b = ctx;
    if (b->r->no_fusion) return false;
    const kiln_backend *be = b->r->backends[b->p->home[n->id]];
    if (!be->fuses || !be->fuses(be, n) || b->p->alias_of[n->id] >= 0) return false;
    kiln_kernel_fn k = be->kernel(be, n);
    return k && k != kiln_op_get(n->op)->ref;
}

/* A buffer holding node n's value scales with the batch when n's leading dim is the batch (the
 * leading dim every feed shares). Coincidences (a [batch, k] weight gradient) count too: small. */
static int64_t scaled_bytes(const builder *b, const kiln_node *n) {
    if (b->p->batch > 0 && n->shape.rank > 0 && n->shape.dim[0] == b->p->batch)
        return kiln_shape_numel(n->shape) * (int64_t)kiln_dtype_size(n->dtype);
    return 0;
}

static int value_buf(builder *b, const kiln_node *n, int64_t bytes, int start, int end, int space) {
    return kiln_memplan_add(&b->mem, bytes, start, end, space, scaled_bytes(b, n));
}

static int64_t value_bytes(const kiln_node *n) {
    int64_t bytes = kiln_shape_numel(n->shape) * (int64_t)kiln_dtype_size(n->dtype);
    return bytes ? bytes : 1;
}

/* A copy of src's value into dst_space, made at time `at`. */
static kiln_status add_copy(builder *b, kiln_node *src, int dst_space, int at) {
    kiln_plan *p = b->p;
    p->steps[p->n_steps++] = (kiln_plan_step){ .kind = KILN_STEP_COPY, .node = src, .space = dst_space,
                                               .backend = "copy", .view_base = -1, .ws_offset = -1 };
    int i = value_buf(b, src, value_bytes(src), at, *LAST(b, dst_space, src->id), dst_space);
    *VAL(b, dst_space, src->id) = i;
    return i < 0 ? oom() : KILN_OK;
}

/* Buffer iv (or the block it sits in) stays alive at least until `end`. */
static void extend(builder *b, int iv, int64_t end) {
    kiln_plan_buf *x = &b->mem.bufs[iv];
    if (x->parent >= 0) x = &b->mem.bufs[x->parent];
    if (x->end < end) x->end = end;
}

/* The buffer node id's kernel writes (alias, in place over a dying input, or its own). */
static kiln_status plan_output(builder *b, kiln_plan_step *stp, const kiln_op_def *d) {
    kiln_node *nd = stp->node;
    int id = nd->id, space = stp->space;
    if (b->p->alias_of[id] >= 0) {
        int iv = *VAL(b, space, nd->in[0]->id);
        *VAL(b, space, id) = iv >= 0 ? iv : -3;
        if (iv >= 0) extend(b, iv, *LAST(b, space, id));
        return KILN_OK;
    }
    int64_t guard = space == KILN_SPACE_HOST ? (int64_t)b->r->guard : 0;
    int tail = stp->out_id;
    if (b->member[tail] >= 0) {                   /* its place in the gradient block */
        *VAL(b, space, tail) = b->member[tail];
    } else if (tail == id) {
        int64_t bytes = value_bytes(nd) + guard;
        kiln_node *in0 = nd->n_in > 0 ? nd->in[0] : NULL;
        int iv = in0 ? *VAL(b, space, in0->id) : -1;
        if ((d->flags & KILN_OPF_INPLACE0) && iv >= 0 && *LAST(b, space, in0->id) == id && b->mem.bufs[iv].parent < 0 &&
            b->mem.bufs[iv].end <= id && b->mem.bufs[iv].bytes == bytes && !b->fetched[in0->id]) {
            *VAL(b, space, id) = iv;                  /* write over input 0, which dies here */
            extend(b, iv, *LAST(b, space, id) > id ? *LAST(b, space, id) : id);
            return KILN_OK;
        }
    }
    if (b->member[tail] < 0) {
        kiln_node *t = b->g->nodes[tail];
        int i = value_buf(b, t, value_bytes(t) + guard, id, *LAST(b, space, tail), space);
        if (i < 0) return oom();
        *VAL(b, space, tail) = i;
    }
    if (stp->ws_bytes && (stp->ws_offset = kiln_memplan_add(&b->mem, (int64_t)stp->ws_bytes, id, id, space, 0)) < 0) return oom();
    return KILN_OK;   /* ws_offset holds the buffer index until plan_offsets */
}

/* The gradient block: the gradients optimizer updates read (input 1 of KILN_OPF_UPDATE ops), back
 * to back in one buffer per space in the order they are made, alive from the first made to the
 * last read (they are alive that long anyway: the updates run after the whole backward pass), so
 * a data-parallel all-reduce is one call per bucket over it (llm.c's layout). Gradients that are
 * views of another value (reshape) or sources stay outside. */
static kiln_status plan_grad_block(builder *b) {
    kiln_plan *p = b->p;
    kiln_graph *g = b->g;
    for (int id = 0; id < b->n; id++) { b->made_at[id] = id; b->member[id] = -1; }
    for (int id = 0; id < b->n; id++)
        if (b->need[id] && b->epi[id].tail != id) b->made_at[b->epi[id].tail] = id;
    for (int id = 0; id < b->n; id++) {       /* mark the gradients: -2 */
        kiln_node *u = g->nodes[id];
        if (!b->need[id] || !(kiln_op_get(u->op)->flags & KILN_OPF_UPDATE) || u->n_in < 2) continue;
        int gid = u->in[1]->id;
        bool fused_away = b->absorbed[gid] && b->made_at[gid] == gid;
        if (!is_source(u->in[1]) && p->alias_of[gid] < 0 && !fused_away) b->member[gid] = -2;
    }
    for (int s = 0; s < b->ns; s++) {
        int64_t total = 0, start = INT64_MAX, end = -1, scaled = 0;
        int64_t guard = s == KILN_SPACE_HOST ? (int64_t)b->r->guard : 0;
        for (int id = 0; id < b->n; id++) {
            if (b->member[id] != -2 || p->home[id] != s) continue;
            kiln_node *gn = g->nodes[id];
            total = kiln_align64(total) + value_bytes(gn) + guard;
            if (b->made_at[id] < start) start = b->made_at[id];
            if (*LAST(b, s, id) > end) end = *LAST(b, s, id);
            scaled += scaled_bytes(b, gn);
        }
        if (end < 0) continue;
        int blk = kiln_memplan_add(&b->mem, total, start, end, s, scaled);
        if (blk < 0) return oom();
        int64_t rel = 0;
        for (int id = 0; id < b->n; id++) {
            if (b->member[id] != -2 || p->home[id] != s) continue;
            int64_t bytes = value_bytes(g->nodes[id]) + guard;
            if ((b->member[id] = kiln_memplan_add_inside(&b->mem, blk, rel, bytes)) < 0) return oom();
            rel = kiln_align64(rel + bytes);
            p->n_grads++;
        }
        p->grad_offset[s] = blk;      /* the buffer index until plan_offsets */
        p->grad_bytes[s] = total;
    }
    return KILN_OK;
}

/* Pass 3: the schedule (copies for inputs living elsewhere, then the kernel) and the buffers. */
static kiln_status plan_schedule(builder *b) {
    kiln_plan *p = b->p;
    kiln_graph *g = b->g;
    kiln_status st;
    for (int id = 0; id < b->n; id++)
        if (b->need[id] && is_source(g->nodes[id])) {
            p->sources[p->n_sources++] = id;
            *VAL(b, p->home[id], id) = -2;
        }
    /* fed placeholders read on a device are copied first, so a captured step graph starts after */
    for (int id = 0; id < b->n; id++)
        if (b->need[id] && g->nodes[id]->op == KILN_OP_PLACEHOLDER && p->home[id] == KILN_SPACE_HOST)
            for (int s = 1; s < b->ns; s++)
                if (*LAST(b, s, id) >= 0 && (st = add_copy(b, g->nodes[id], s, 0)) != KILN_OK) return st;
    p->n_feed_copies = p->n_steps;
    int v = 0;
    for (int id = 0; id < b->n; id++) {
        kiln_node *nd = g->nodes[id];
        const kiln_op_def *d = kiln_op_get(nd->op);
        if (!b->need[id] || is_source(nd) || b->absorbed[id]) continue;
        /* RandomCropFlip is not here: its draw comes from the keys input, not the step */
        if (nd->op == KILN_OP_DROPOUT || nd->op == KILN_OP_DROPOUT_GRAD || nd->op == KILN_OP_RANDOM_NORMAL ||
            ((nd->op == KILN_OP_ATTENTION || nd->op == KILN_OP_ATTENTION_GRAD) && nd->attrs.rate > 0)) p->has_dropout = true;
        int space = p->home[id];
        for (int k = 0; k < nd->n_in; k++) {          /* inputs living elsewhere: copy once */
            kiln_node *in = nd->in[k];
            if (*VAL(b, space, in->id) != -1) continue;
            if ((st = add_copy(b, in, space, id)) != KILN_OK) return st;
            p->host_steps_between = true;
        }
        const kiln_backend *be = b->r->backends[space];
        kiln_plan_step *stp = &p->steps[p->n_steps++];
        *stp = (kiln_plan_step){ .kind = KILN_STEP_KERNEL, .node = nd, .space = space, .view_base = v, .ws_offset = -1,
                                 .out_id = b->epi[id].tail, .bias_id = b->epi[id].bias_id, .relu = b->epi[id].relu };
        v += nd->n_in;
        stp->kernel = pick_kernel(be, nd, space, &stp->backend);
        if (!stp->kernel) return kiln_set_error(KILN_UNSUPPORTED, "%s (%s): no %s kernel", nd->name, d->name, be->name);
        if (space == KILN_SPACE_HOST) p->host_steps_between = true;
        else p->device_space = p->device_space == -1 || p->device_space == space ? space : -2;
        stp->ws_bytes = stp->kernel == d->ref ? (d->ref_workspace ? d->ref_workspace(nd) : 0)
                                               : (be->workspace ? be->workspace(be, nd) : 0);
        if ((st = plan_output(b, stp, d)) != KILN_OK) return st;
    }
    return KILN_OK;
}

/* Arena placement per space, then each value's and workspace's offset. */
static kiln_status plan_offsets(builder *b) {
    kiln_plan *p = b->p;
    for (int s = 0; s < b->ns; s++) {
        int64_t total = kiln_memplan_place(b->mem.bufs, b->mem.n, s);
        if (total < 0) return oom();
        p->arena_bytes[s] = (size_t)total;
    }
    for (size_t i = 0; i < (size_t)b->ns * b->n; i++)
        if (b->val[i] >= 0) p->offset[i] = b->mem.bufs[b->val[i]].offset;
    for (int i = 0; i < p->n_steps; i++)
        if (p->steps[i].ws_offset >= 0) p->steps[i].ws_offset = b->mem.bufs[p->steps[i].ws_offset].offset;
    for (int s = 0; s < b->ns; s++)
        if (p->grad_offset[s] >= 0) p->grad_offset[s] = b->mem.bufs[p->grad_offset[s]].offset;
    return KILN_OK;
}

kiln_status kiln_plan_build(kiln_graph *g, const kiln_plan_request *r, kiln_plan **out) {
    *out = NULL;
    if (r->n_spaces < 1 || r->n_spaces > INT8_MAX) return kiln_set_error(KILN_INTERNAL, "plan: %d memory spaces", r->n_spaces);
    kiln_plan *p = kiln_calloc(1, sizeof *p);
    if (!p) return oom();
    builder b = { .g = g, .r = r, .p = p, .n = g->n_nodes, .ns = r->n_spaces };
    kiln_status st = alloc_all(&b);
    if (st == KILN_OK) {
        find_batch(&b);
        kiln_plan_needed(g, r->fetches, r->n_fetches, r->targets, r->n_targets, b.need);
        st = plan_homes(&b);
    }
    if (st == KILN_OK) {
        plan_liveness(&b);
        kiln_fusion_request fr = { b.need, p->home, b.n_readers, b.reader, b.fetched, can_fuse, &b };
        kiln_fuse(g, &fr, b.epi, b.absorbed);
        st = plan_grad_block(&b);
    }
    if (st == KILN_OK) {
        st = plan_schedule(&b);
    }
    if (st == KILN_OK) st = plan_offsets(&b);
    p->bufs = b.mem.bufs;     /* kept for kiln_plan_arena_at */
    p->n_bufs = b.mem.n;
    kiln_free(b.need); kiln_free(b.fetched); kiln_free(b.absorbed);
    kiln_free(b.val); kiln_free(b.lastread);
    kiln_free(b.n_readers); kiln_free(b.reader); kiln_free(b.epi);
    kiln_free(b.made_at); kiln_free(b.member);
    if (st != KILN_OK) { kiln_plan_free(p); return st; }
    *out = p;
    return KILN_OK;
}

void kiln_plan_free(kiln_plan *p) {
    if (!p) return;
    kiln_free(p->feed_ids); kiln_free(p->fetch_ids); kiln_free(p->target_ids);
    kiln_free(p->steps); kiln_free(p->views); kiln_free(p->sources);
    kiln_free(p->home); kiln_free(p->alias_of);
    kiln_free(p->offset); kiln_free(p->arena_bytes);
    kiln_free(p->grad_offset); kiln_free(p->grad_bytes);
    kiln_free(p->bufs);
    kiln_free(p);
}

size_t kiln_plan_arena_at(const kiln_plan *p, int space, int64_t batch) {
    if (p->batch <= 0 || batch == p->batch) return p->arena_bytes[space];
    kiln_plan_buf *t = kiln_malloc((size_t)(p->n_bufs ? p->n_bufs : 1) * sizeof *t);
    if (!t) return SIZE_MAX;
    for (int i = 0; i < p->n_bufs; i++) {
        t[i] = p->bufs[i];
        t[i].bytes += t[i].scaled / p->batch * batch - t[i].scaled;
        if (t[i].bytes < 1) t[i].bytes = 1;
    }
    int64_t total = kiln_memplan_place(t, p->n_bufs, space);
    kiln_free(t);
    return total < 0 ? SIZE_MAX : (size_t)total;
}
