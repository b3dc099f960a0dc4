/* CrossReplicaSum (synchronised batch norm, src/ops/sync_bn.c): its kernel copies its input; the
 * session then sums the output over the replicas with the hook data parallelism set
 * (kiln_session_set_cross_replica_sum: MPI ranks, src/nn/fit_dist.c). Without a hook it stays a
 * copy, the statistics of the local batch. Device outputs go through the host. */
#include "runtime/grad_reduce_internal.h"

kiln_status kiln_session_set_cross_replica_sum(kiln_session *s, kiln_cross_replica_fn fn, void *user) {
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_set_cross_replica_sum: NULL session");
    if (!s->reduce && !fn) return KILN_OK;
    if (!s->reduce && !(s->reduce = kiln_calloc(1, sizeof *s->reduce)))
        return kiln_set_error(KILN_OUT_OF_MEMORY, "cross-replica sum: out of host memory");
    s->reduce->xsum = fn;
    s->reduce->xsum_user = user;
    return KILN_OK;
}

kiln_status rt_cross_replica_sum(kiln_session *s, const kiln_plan_step *stp, void *out) {
    struct rt_reduce *r = s->reduce;
    if (!r || !r->xsum) return KILN_OK;
    kiln_node *n = stp->node;
    int64_t count = kiln_shape_numel(n->shape);
    if (stp->space == KILN_SPACE_HOST) return r->xsum(r->xsum_user, out, count, n->dtype);
    size_t bytes = node_bytes(n);
    void *h = kiln_malloc(bytes);
    if (!h) return kiln_set_error(KILN_OUT_OF_MEMORY, "cross-replica sum of '%s': out of host memory", n->name);
    const kiln_backend *be = s->be[stp->space];
    kiln_status st = be->copy(be, h, out, bytes, KILN_COPY_D2H);
    if (st == KILN_OK) st = be->sync(be);
    if (st == KILN_OK) st = r->xsum(r->xsum_user, h, count, n->dtype);
    if (st == KILN_OK) st = be->copy(be, out, h, bytes, KILN_COPY_H2D);
    if (st == KILN_OK) st = be->sync(be);     /* h is freed next */
    kiln_free(h);
    return st;
}
