/* Data parallelism's collective service for one session (MPI ranks, src/nn/fit_dist.c): its
 * setter (kiln_session_set_collectives) and the collective and wait steps the collective pass (plan_reduce.c) inserts, run by the step loop.
 * Device buffers travel through one host staging buffer, sized by the pass. Mirrored replicas'
 * steps are NCCL groups issued by replicas.c instead. */
#include <string.h>
#include "runtime/runtime_internal.h"
#include "runtime/grad_reduce.h"
#include "runtime/grad_reduce_internal.h"

static kiln_status need_reduce(kiln_session *s, const char *what) {
    if (s->reduce) return KILN_OK;
    if (!(s->reduce = kiln_calloc(1, sizeof *s->reduce))) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    s->reduce->bucket = (size_t)4 << 20;
    return KILN_OK;
}

kiln_status kiln_session_set_collectives(kiln_session *s, const kiln_collectives *c, size_t bucket_bytes, bool overlap, bool cross_replica) {
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_collectives: NULL session");
    if (!c) { rt_reduce_free(s); return KILN_OK; }
    if (s->reduce && s->reduce->replica) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_collectives: the session is a replica");
    if (c->device || c->members != 1 || !c->mean || (c->start && !c->finish))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_collectives: '%s' is not a service of one host member with mean "
                              "(and finish with start)", c->name ? c->name : "?");
    kiln_status st = need_reduce(s, "collectives");
    if (st != KILN_OK) return st;
    s->reduce->svc = *c;
    if (!overlap) s->reduce->svc.start = NULL;
    if (!cross_replica) s->reduce->svc.sum = NULL;
    s->reduce->bucket = bucket_bytes >= 64 ? bucket_bytes : (size_t)4 << 20;
    s->coll_gen++;
    return KILN_OK;
}

kiln_status rt_set_replica(kiln_session *s, size_t bucket_bytes, bool overlap) {
    kiln_status st = need_reduce(s, "replicas");
    if (st != KILN_OK) return st;
    s->reduce->replica = true;
    s->reduce->overlap = overlap;
    s->reduce->bucket = bucket_bytes >= 64 ? bucket_bytes : (size_t)4 << 20;
    s->coll_gen++;
    return KILN_OK;
}

void rt_reduce_free(kiln_session *s) {
    s->coll_gen++;
    if (!s->reduce) return;
    kiln_free(s->reduce->chunks);
    kiln_free(s->reduce->mark);
    kiln_free(s->reduce->ids);
    kiln_free(s->reduce->stage);
    kiln_free(s->reduce);
    s->reduce = NULL;
}

kiln_status rt_stage_reserve(struct rt_reduce *r, size_t bytes) {
    if (r->stage_bytes >= bytes) return KILN_OK;
    kiln_free(r->stage);
    r->stage_bytes = 0;
    if (!(r->stage = kiln_malloc(bytes))) return kiln_set_error(KILN_OUT_OF_MEMORY, "gradient all-reduce: out of host memory for the staging buffer");
    r->stage_bytes = bytes;
    return KILN_OK;
}

/* The step's padding (pads of its gradients) zeroed in the copy of its buffer at `copy`. */
static void zero_pads(kiln_session *s, const run_plan *rp, const kiln_plan_step *stp, char *copy) {
    const char *lo = rt_step_buf(s, stp);
    for (int i = stp->pad_a; i < stp->pad_b; i++) {
        const rt_pad *pd = &rp->pads[i];
        const char *at = (const char *)s->data[stp->space][pd->id] + pd->off;
        memset(copy + (at - lo), 0, (size_t)pd->bytes);
    }
}

/* The mean of host f32 x[0..count) in pieces of the bucket size, or the sum of a SUM step. */
static kiln_status apply(kiln_session *s, const kiln_plan_step *stp, void *x) {
    struct rt_reduce *r = s->reduce;
    if (stp->op == KILN_COLL_SUM) {
        size_t count = (size_t)stp->count;
        return r->svc.sum(r->svc.ctx, &x, &count, 1, stp->node->dtype);
    }
    size_t per = r->bucket / sizeof(float);
    for (int64_t off = 0; off < stp->count; off += (int64_t)per) {
        float *piece = (float *)x + off;
        size_t count = stp->count - off < (int64_t)per ? (size_t)(stp->count - off) : per;
        kiln_status st = r->svc.mean(r->svc.ctx, &piece, &count, 1);
        if (st != KILN_OK) return st;
    }
    return KILN_OK;
}

/* A device buffer: to the staging buffer, reduced there, back (the buffer is reused next). */
static kiln_status staged(kiln_session *s, const run_plan *rp, const kiln_plan_step *stp) {
    struct rt_reduce *r = s->reduce;
    size_t bytes = (size_t)stp->count * kiln_dtype_size(stp->node->dtype);
    char *x = rt_step_buf(s, stp);
    const kiln_backend *be = s->be[stp->space];
    kiln_status st = rt_activate(s, stp->space);
    if (st == KILN_OK) st = be->copy(be, r->stage, x, bytes, KILN_COPY_D2H);
    if (st == KILN_OK) st = be->sync(be);
    if (st != KILN_OK) return st;
    zero_pads(s, rp, stp, (char *)r->stage);
    if ((st = apply(s, stp, r->stage)) != KILN_OK) return st;
    st = be->copy(be, x, r->stage, bytes, KILN_COPY_H2D);
    return st == KILN_OK ? be->sync(be) : st;
}

kiln_status rt_run_collective(kiln_session *s, const run_plan *rp, const kiln_plan_step *stp) {
    struct rt_reduce *r = s->reduce;
    if (r->replica) return kiln_set_error(KILN_INTERNAL, "replicas: a replica's collective step runs only under kiln_replicas_run");
    if (stp->op == KILN_COLL_PROGRESS) return r->svc.progress(r->svc.ctx);   /* MPI moves data only when called */
    if (stp->op == KILN_COLL_SUM && !r->svc.sum) return KILN_OK;
    if (stp->space != KILN_SPACE_HOST) return staged(s, rp, stp);
    char *x = rt_step_buf(s, stp);
    zero_pads(s, rp, stp, x);
    if (stp->op != KILN_COLL_START) return apply(s, stp, x);
    float *xf = (float *)x;
    size_t count = (size_t)stp->count;
    kiln_status st = r->svc.start(r->svc.ctx, &xf, &count, 1);
    if (st == KILN_OK) r->inflight = true;
    return st;
}

kiln_status rt_run_wait(kiln_session *s, const run_plan *rp, const kiln_plan_step *stp) {
    kiln_plan *p = rp->plan;
    if (stp->op == KILN_WAIT_DEVICES) {
        for (int sp = 1; sp < s->n_spaces; sp++)
            if (p->device_space == sp || p->device_space == -2) {
                kiln_status st = s->be[sp]->sync(s->be[sp]);
                if (st != KILN_OK) return st;
            }
        return KILN_OK;
    }
    struct rt_reduce *r = s->reduce;
    if (r->replica) return kiln_set_error(KILN_INTERNAL, "replicas: a replica's wait step runs only under kiln_replicas_run");
    if (!r->inflight) return KILN_OK;
    r->inflight = false;
    return r->svc.finish(r->svc.ctx);
}

void rt_collectives_abandon(kiln_session *s) {
    if (!s->reduce || !s->reduce->inflight) return;
    s->reduce->inflight = false;
    s->reduce->svc.finish(s->reduce->svc.ctx);   /* never leave a reduction writing into the arena */
}
