/* The collective pass: a cached plan's step list with the collective and wait steps of the
 * session's data parallelism inserted, derived once per plan, collective configuration and arena
 * placement (rt_derive_steps). Without a collective service the list is the plan's own.
 *  - MPI ranks, blocking: the backward pass, WAIT(devices), MEAN of each range of contiguous
 *    gradients (device ones through the host staging buffer), then the updates.
 *  - MPI ranks, nonblocking (every gradient f32 in host memory): START of each bucket right
 *    after the last step touching it, PROGRESS after every later step, WAIT(collectives) before
 *    the updates.
 *  - mirrored replicas: MEAN (KILN_OVERLAP=0, all at the updates) or START (at each bucket's ready
 *    step, then WAIT) of each bucket; replicas.c runs the session's steps in segments between them
 *    and issues each as one NCCL group over the replicas.
 * A CrossReplicaSum kernel is followed by a SUM step whenever the session sums over replicas. */
#include <string.h>
#include "runtime/grad_reduce_internal.h"

static kiln_plan_step coll(int kind, int op, kiln_node *n, int sp, int id, int64_t off, int64_t count, int at) {
    return (kiln_plan_step){ .kind = kind, .node = n, .space = sp, .backend = "collective", .ws_offset = -1, .out_id = id,
                             .bias_id = -1, .op = op, .buf_id = id, .buf_off = off, .count = count, .at = at };
}

/* A kernel or copy step of the plan, and after a CrossReplicaSum kernel its sum (sums). */
static void push_step(run_plan *rp, int q, bool sums) {
    kiln_plan_step *stp = &rp->plan->steps[q];
    rp->own[rp->n_steps++] = *stp;
    if (sums && stp->kind == KILN_STEP_KERNEL && stp->node->op == KILN_OP_CROSS_REPLICA_SUM)
        rp->own[rp->n_steps++] = coll(KILN_STEP_COLLECTIVE, KILN_COLL_SUM, stp->node, stp->space, stp->out_id, 0,
                                      kiln_shape_numel(stp->node->shape), q + 1);
}

/* The alignment padding between gradients ids[a..b) inside [lo, hi) of space sp: zeroed before the
 * reduction, as it is summed along. */
static void push_pads(kiln_session *s, run_plan *rp, int sp, int a, int b, const char *lo, const char *hi, kiln_plan_step *stp) {
    const int *ids = s->reduce->ids;
    stp->pad_a = rp->n_pads;
    for (int k = a; k + 1 < b; k++) {
        const char *g = s->data[sp][ids[k]], *end = g + node_bytes(s->g->nodes[ids[k]]), *next = s->data[sp][ids[k + 1]];
        const char *plo = end > lo ? end : lo, *phi = next < hi ? next : hi;
        if (plo < phi) rp->pads[rp->n_pads++] = (rt_pad){ ids[k], (int64_t)(plo - g), (int64_t)(phi - plo) };
    }
    stp->pad_b = rp->n_pads;
}

/* A bucket's collective step (op), its address relative to its first gradient's. */
static void push_chunk(kiln_session *s, run_plan *rp, const rt_chunk *c, int op, int at, bool pads) {
    int id = s->reduce->ids[c->a];
    kiln_plan_step stp = coll(KILN_STEP_COLLECTIVE, op, s->g->nodes[id], c->space, id, c->lo - (char *)s->data[c->space][id], c->count, at);
    if (pads) push_pads(s, rp, c->space, c->a, c->b, c->lo, c->lo + c->count * (int64_t)sizeof(float), &stp);
    rp->own[rp->n_steps++] = stp;
}

static kiln_status blocking(kiln_session *s, run_plan *rp, int n, int at) {
    kiln_plan *p = rp->plan;
    struct rt_reduce *r = s->reduce;
    for (int k = 0; k < n; k++) {
        kiln_node *g = s->g->nodes[r->ids[k]];
        if (g->dtype != KILN_F32)
            return kiln_set_error(KILN_UNSUPPORTED, "data-parallel training: gradient '%s' is %s; only f32 gradients are all-reduced",
                                  g->name, kiln_dtype_name(g->dtype));
    }
    n = rt_grad_sort(s, p, n);
    for (int q = 0; q < at; q++) push_step(rp, q, r->svc.sum);
    rp->own[rp->n_steps++] = coll(KILN_STEP_WAIT, KILN_WAIT_DEVICES, NULL, 0, -1, 0, 0, at);   /* device work before the reduction */
    for (int a = 0; a < n;) {
        int b = rt_grad_run_end(s, p, a, n), sp = p->home[r->ids[a]];
        kiln_node *last = s->g->nodes[r->ids[b - 1]];
        char *lo = s->data[sp][r->ids[a]], *hi = (char *)s->data[sp][last->id] + node_bytes(last);
        kiln_status st = sp != KILN_SPACE_HOST ? rt_stage_reserve(r, (size_t)(hi - lo)) : KILN_OK;
        if (st != KILN_OK) return st;
        rt_chunk c = { lo, (int64_t)(hi - lo) / (int64_t)sizeof(float), sp, at, a, b };
        push_chunk(s, rp, &c, KILN_COLL_MEAN, at, true);
        a = b;
    }
    for (int q = at; q < p->n_steps; q++) push_step(rp, q, r->svc.sum);
    return KILN_OK;
}

/* Buckets started at their ready steps (MPI: progress after every step once one is started;
 * replicas: mean, start or sum steps that replicas.c issues as NCCL groups). */
static kiln_status by_ready(kiln_session *s, run_plan *rp, int n, int at, bool replica) {
    kiln_plan *p = rp->plan;
    struct rt_reduce *r = s->reduce;
    bool overlap = replica ? r->overlap : true, sums = replica || r->svc.sum;
    kiln_status st = rt_grad_chunks(s, p, n, at, r->bucket, overlap);
    if (st != KILN_OK) return st;
    int op = overlap ? KILN_COLL_START : KILN_COLL_MEAN, c = 0;
    for (int pos = 0; pos < at; pos++) {
        for (; c < r->n_chunks && r->chunks[c].ready <= pos; c++) push_chunk(s, rp, &r->chunks[c], op, pos, !replica);
        push_step(rp, pos, sums);
        if (!replica && c > 0 && r->svc.progress) rp->own[rp->n_steps++] = coll(KILN_STEP_COLLECTIVE, KILN_COLL_PROGRESS, NULL, 0, -1, 0, 0, pos + 1);
    }
    for (; c < r->n_chunks; c++) push_chunk(s, rp, &r->chunks[c], op, at, !replica);
    if (overlap && r->n_chunks > 0) rp->own[rp->n_steps++] = coll(KILN_STEP_WAIT, KILN_WAIT_COLLECTIVES, NULL, 0, -1, 0, 0, at);
    for (int q = at; q < p->n_steps; q++) push_step(rp, q, sums && !replica);
    return KILN_OK;
}

/* Replicas: f32 device gradients; cross-replica sums f32/f64 on the GPU, before the updates. */
static kiln_status replica_checks(kiln_session *s, kiln_plan *p, int n, int at) {
    for (int i = 0; i < n; i++) {
        kiln_node *g = s->g->nodes[s->reduce->ids[i]];
        if (g->dtype != KILN_F32 || p->home[g->id] == KILN_SPACE_HOST)
            return kiln_set_error(KILN_UNSUPPORTED, "replicas: gradient '%s' is %s in %s memory; only f32 gradients on the GPU are "
                                  "all-reduced with NCCL", g->name, kiln_dtype_name(g->dtype), p->home[g->id] ? "device" : "host");
    }
    for (int i = 0; i < p->n_steps; i++) {
        kiln_plan_step *stp = &p->steps[i];
        if (stp->kind != KILN_STEP_KERNEL || stp->node->op != KILN_OP_CROSS_REPLICA_SUM) continue;
        kiln_node *nd = stp->node;
        if (stp->space == KILN_SPACE_HOST || (nd->dtype != KILN_F32 && nd->dtype != KILN_F64))
            return kiln_set_error(KILN_UNSUPPORTED, "replicas: cross-replica sum '%s' is %s on the %s; NCCL sums f32/f64 GPU values",
                                  nd->name, kiln_dtype_name(nd->dtype), stp->space == KILN_SPACE_HOST ? "CPU" : "GPU");
        if (i >= at) return kiln_set_error(KILN_UNSUPPORTED, "replicas: cross-replica sum '%s' runs after the last gradient is made", nd->name);
    }
    return KILN_OK;
}

static void drop_steps(run_plan *rp) {
    kiln_free(rp->own);
    kiln_free(rp->pads);
    rp->own = NULL;
    rp->pads = NULL;
    rp->n_pads = 0;
    rp->steps = rp->plan ? rp->plan->steps : NULL;
    rp->n_steps = rp->plan ? rp->plan->n_steps : 0;
    rp->updates_at = rp->n_steps;
    rp->derived = false;
}

void rt_steps_free(run_plan *rp) { drop_steps(rp); }

static kiln_status derive(kiln_session *s, run_plan *rp) {
    kiln_plan *p = rp->plan;
    struct rt_reduce *r = s->reduce;
    int n = 0, at = 0;
    kiln_status st = KILN_OK;
    if (r->svc.mean || r->replica) st = rt_find_grads(s, p, &n, &at);
    if (st != KILN_OK || (n == 0 && (r->replica || !r->svc.sum))) return st;   /* the plan's own steps */
    bool host_async = false;
    if (n > 0 && !r->replica && r->svc.start) {
        host_async = true;
        for (int k = 0; k < n && host_async; k++)
            host_async = s->g->nodes[r->ids[k]]->dtype == KILN_F32 && p->home[r->ids[k]] == KILN_SPACE_HOST;
    }
    size_t cap = 3 * (size_t)p->n_steps + 4 + (size_t)n, pads = (size_t)n + 1;
    if (n > 0) {   /* buckets: at most one per bucket of bytes plus one per gradient */
        size_t bytes = 0;
        for (int k = 0; k < n; k++) bytes += node_bytes(s->g->nodes[r->ids[k]]);
        cap += bytes / (r->bucket >= 64 ? r->bucket / 2 : 32) + (size_t)n + 1;
        pads += cap;
    }
    if (!(rp->own = kiln_malloc(cap * sizeof *rp->own)) || !(rp->pads = kiln_malloc(pads * sizeof *rp->pads)))
        return kiln_set_error(KILN_OUT_OF_MEMORY, "data-parallel training: out of host memory for the step list");
    rp->n_steps = 0;
    if (n == 0) {
        for (int q = 0; q < p->n_steps; q++) push_step(rp, q, true);
    } else if (r->replica) {
        if ((st = replica_checks(s, p, n, at)) == KILN_OK) st = by_ready(s, rp, rt_grad_sort(s, p, n), at, true);
    } else if (host_async) {
        st = by_ready(s, rp, rt_grad_sort(s, p, n), at, false);
    } else {
        st = blocking(s, rp, n, at);
    }
    for (int q = 0; q < p->n_steps && st == KILN_OK; q++)   /* device sums go through the host */
        if (p->steps[q].kind == KILN_STEP_KERNEL && p->steps[q].node->op == KILN_OP_CROSS_REPLICA_SUM && p->steps[q].space != KILN_SPACE_HOST)
            st = rt_stage_reserve(r, node_bytes(p->steps[q].node));
    rp->steps = rp->own;
    rp->updates_at = at;
    return st;
}

kiln_status rt_derive_steps(kiln_session *s, run_plan *rp) {
    if (rp->derived && rp->derived_gen == s->coll_gen && rp->derived_arena == s->arena_gen) return KILN_OK;
    drop_steps(rp);
    kiln_status st = s->reduce ? derive(s, rp) : KILN_OK;
    if (st != KILN_OK) { drop_steps(rp); return st; }
    rp->n_coll = 0;
    for (int i = 0; i < rp->n_steps; i++) rp->n_coll += rp->steps[i].kind >= KILN_STEP_COLLECTIVE;
    rp->derived = true;
    rp->derived_gen = s->coll_gen;
    rp->derived_arena = s->arena_gen;
    return KILN_OK;
}
