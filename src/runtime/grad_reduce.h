/* Data parallelism's entry to the executor: the collective service a session's COLLECTIVE steps
 * call (plan_reduce.c inserts them where a gradient bucket is ready; grad_reduce.c runs them). */
#ifndef KILN_GRAD_REDUCE_H
#define KILN_GRAD_REDUCE_H
#include "kiln/graph.h"
#include "backend/backend.h"

/* The session's collective service (MPI ranks: kiln_dist_collectives, src/dist; members 1, host
 * memory): gradients averaged with c->mean in buckets of at most bucket_bytes, or started with
 * c->start during the backward pass when overlap is set (host gradients); CrossReplicaSum outputs
 * summed with c->sum when cross_replica. c is copied (its ctx borrowed); NULL: none. */
kiln_status kiln_session_set_collectives(kiln_session *s, const kiln_collectives *c, size_t bucket_bytes, bool overlap, bool cross_replica);

/* Whether data-parallel training overlaps the all-reduce with the backward pass: yes unless the
 * environment says KILN_OVERLAP=0 (to compare the step time with and without). */
bool kiln_grad_overlap_enabled(void);

#endif
