/* Static memory planning: every intermediate tensor gets an arena offset from its lifetime
 * (first write .. last read), with buffers reused once dead, aliases (reshape) sharing their
 * input's storage and elementwise ops writing in place over an input that dies with them. */
#include <string.h>
#include "graph/plan.h"

typedef struct buf { int64_t bytes, start, end, offset; } buf;

static int64_t align64(int64_t x) { return (x + 63) & ~(int64_t)63; }

static bool contains(const int *ids, int n, int id) {
    for (int i = 0; i < n; i++) if (ids[i] == id) return true;
    return false;
}

static int *dup_ids(kiln_node *const *nodes, int n) {
    int *ids = kiln_malloc((size_t)(n ? n : 1) * sizeof *ids);
    for (int i = 0; i < n; i++) ids[i] = nodes[i]->id;
    return ids;
}

/* Greedy placement, largest first: lowest offset not overlapping a live placed buffer. */
static int64_t place_buffers(buf *b, int nb) {
    int *order = kiln_malloc((size_t)(nb ? nb : 1) * sizeof *order);
    for (int i = 0; i < nb; i++) order[i] = i;
    for (int i = 1; i < nb; i++) {           /* insertion sort by size desc (stable) */
        int k = order[i], j = i - 1;
        while (j >= 0 && b[order[j]].bytes < b[k].bytes) { order[j + 1] = order[j]; j--; }
        order[j + 1] = k;
    }
    int64_t total = 0;
    for (int oi = 0; oi < nb; oi++) {
        buf *x = &b[order[oi]];
        int64_t off = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (int pj = 0; pj < oi; pj++) {
                buf *y = &b[order[pj]];
                bool live = !(x->end < y->start || y->end < x->start);
                bool overlap = off < y->offset + y->bytes && y->offset < off + x->bytes;
                if (live && overlap) { off = align64(y->offset + y->bytes); moved = true; }
            }
        }
        x->offset = off;
        if (off + x->bytes > total) total = off + x->bytes;
    }
    kiln_free(order);
    return total;
}

kiln_status kiln_plan_build(kiln_graph *g, const kiln_backend *be, kiln_node *const *feeds, int n_feeds,
                            kiln_node *const *fetches, int n_fetches, kiln_node *const *targets,
                            int n_targets, size_t guard, kiln_plan **out) {
    int n = g->n_nodes;
    kiln_plan *p = kiln_calloc(1, sizeof *p);
    bool *need = kiln_calloc((size_t)n, sizeof *need);
    int *pos = kiln_malloc((size_t)n * sizeof *pos);         /* step index of each node */
    int *last = kiln_malloc((size_t)n * sizeof *last);       /* last step reading it */
    int *bufid = kiln_malloc((size_t)n * sizeof *bufid);
    buf *bufs = kiln_calloc((size_t)n * 2 + 1, sizeof *bufs);
    int nb = 0;
    p->alias_of = kiln_malloc((size_t)n * sizeof *p->alias_of);
    p->offset = kiln_malloc((size_t)n * sizeof *p->offset);
    p->n_ids = n;
    p->guard = guard;
    p->feed_ids = dup_ids(feeds, n_feeds); p->n_feeds = n_feeds;
    p->fetch_ids = dup_ids(fetches, n_fetches); p->n_fetches = n_fetches;
    p->target_ids = dup_ids(targets, n_targets); p->n_targets = n_targets;

    /* what the fetches and targets need: ids are topological, so one backward sweep */
    for (int i = 0; i < n_fetches; i++) need[fetches[i]->id] = true;
    for (int i = 0; i < n_targets; i++) need[targets[i]->id] = true;
    for (int id = n - 1; id >= 0; id--)
        if (need[id]) for (int k = 0; k < g->nodes[id]->n_in; k++) need[g->nodes[id]->in[k]->id] = true;

    int n_steps = 0, n_views = 0, n_sources = 0;
    for (int id = 0; id < n; id++) {
        pos[id] = last[id] = -1; bufid[id] = -1; p->alias_of[id] = -1; p->offset[id] = -1;
        if (!need[id]) continue;
        kiln_node *nd = g->nodes[id];
        if (kiln_op_get(nd->op)->flags & KILN_OPF_SOURCE) { n_sources++; continue; }
        pos[id] = n_steps++;
        n_views += nd->n_in;
    }
    p->steps = kiln_calloc((size_t)(n_steps ? n_steps : 1), sizeof *p->steps);
    p->views = kiln_calloc((size_t)(n_views ? n_views : 1), sizeof *p->views);
    p->sources = kiln_malloc((size_t)(n_sources ? n_sources : 1) * sizeof *p->sources);
    p->n_steps = n_steps; p->n_views = n_views;

    for (int id = 0; id < n; id++) {
        if (pos[id] < 0) continue;
        kiln_node *nd = g->nodes[id];
        for (int k = 0; k < nd->n_in; k++) last[nd->in[k]->id] = pos[id];
    }
    for (int i = 0; i < n_fetches; i++) last[fetches[i]->id] = n_steps;   /* live to the end */

    int s = 0, v = 0;
    for (int id = 0; id < n; id++) {
        if (!need[id]) continue;
        kiln_node *nd = g->nodes[id];
        const kiln_op_def *d = kiln_op_get(nd->op);
        if (d->flags & KILN_OPF_SOURCE) { p->sources[p->n_sources++] = id; continue; }
        kiln_plan_step *st = &p->steps[s++];
        st->node = nd;
        st->kernel = be->kernel(nd);
        st->backend = be->name;
        if (!st->kernel) { st->kernel = d->ref; st->backend = "ref"; }
        st->view_base = v;
        v += nd->n_in;
        st->ws_bytes = st->kernel == d->ref ? (d->ref_workspace ? d->ref_workspace(nd) : 0)
                                            : (be->workspace ? be->workspace(nd) : 0);
        st->ws_offset = -1;
        st->out_offset = -1;
        if (!st->kernel) {
            kiln_plan_free(p);
            p = NULL;
            kiln_set_error(KILN_UNSUPPORTED, "%s (%s): no kernel on any backend", nd->name, d->name);
            goto done;
        }
        int64_t bytes = kiln_shape_numel(nd->shape) * (int64_t)kiln_dtype_size(nd->dtype);
        kiln_node *in0 = nd->n_in > 0 ? nd->in[0] : NULL;
        if ((d->flags & KILN_OPF_ALIAS0) && in0) {
            /* share input 0's storage; extend the shared buffer's life to ours */
            int root = in0->id;
            while (p->alias_of[root] >= 0) root = p->alias_of[root];
            p->alias_of[id] = root;
            if (bufid[root] >= 0) {
                bufid[id] = bufid[root];
                int64_t e = last[id] > pos[id] ? last[id] : pos[id];
                if (bufs[bufid[id]].end < e) bufs[bufid[id]].end = e;
            }
            continue;
        }
        if ((d->flags & KILN_OPF_INPLACE0) && in0 && bufid[in0->id] >= 0 && p->alias_of[in0->id] < 0 &&
            bufs[bufid[in0->id]].end == pos[id] && bufs[bufid[in0->id]].bytes == (bytes ? bytes : 1) + (int64_t)guard &&
            !contains(p->fetch_ids, n_fetches, in0->id)) {
            bool shared = false;   /* another node aliasing the same buffer must not be clobbered */
            for (int o = 0; o < id; o++) if (o != in0->id && bufid[o] == bufid[in0->id] && last[o] >= pos[id]) shared = true;
            if (!shared) {
                bufid[id] = bufid[in0->id];
                bufs[bufid[id]].end = last[id] > pos[id] ? last[id] : pos[id];
                continue;
            }
        }
        bufs[nb] = (buf){ (bytes ? bytes : 1) + (int64_t)guard, pos[id], last[id] > pos[id] ? last[id] : pos[id], 0 };
        bufid[id] = nb++;
        if (st->ws_bytes) {
            bufs[nb] = (buf){ (int64_t)st->ws_bytes, pos[id], pos[id], 0 };
            st->ws_offset = nb++;     /* buffer index for now; offset below */
        }
    }
    p->arena_bytes = (size_t)place_buffers(bufs, nb);
    for (int id = 0; id < n; id++)
        if (bufid[id] >= 0) p->offset[id] = bufs[bufid[id]].offset;
    for (int i = 0; i < p->n_steps; i++) {
        kiln_plan_step *st = &p->steps[i];
        st->out_offset = p->offset[st->node->id];
        if (st->ws_offset >= 0) st->ws_offset = bufs[st->ws_offset].offset;
    }
done:
    kiln_free(need); kiln_free(pos); kiln_free(last); kiln_free(bufid); kiln_free(bufs);
    *out = p;
    return p ? KILN_OK : KILN_UNSUPPORTED;
}

void kiln_plan_free(kiln_plan *p) {
    if (!p) return;
    kiln_free(p->feed_ids); kiln_free(p->fetch_ids); kiln_free(p->target_ids);
    kiln_free(p->steps); kiln_free(p->views); kiln_free(p->sources);
    kiln_free(p->alias_of); kiln_free(p->offset);
    kiln_free(p);
}
