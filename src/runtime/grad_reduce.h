/* Data parallelism's hook in the executor: a function that all-reduces (averages) host f32
 * gradients across replicas, called once per training run on the gradients the optimizer updates
 * read, after the last of them is written and before anything reads them (src/runtime/grad_reduce.c). */
#ifndef KILN_GRAD_REDUCE_H
#define KILN_GRAD_REDUCE_H
#include "kiln/graph.h"
#include "backend/backend.h"

/* Replaces x[0..n) (host memory) by its mean over the replicas. */
typedef kiln_status (*kiln_grad_reduce_fn)(void *user, float *x, int64_t n);
/* Every later run of a plan with optimizer updates reduces their gradients through fn, in
 * buckets of at most bucket_bytes (contiguous gradients of the plan's gradient block share a
 * bucket); device gradients go through a host staging buffer. fn NULL: no reduction. Runs with
 * a reduction are not captured as CUDA graphs. */
kiln_status kiln_session_set_grad_reduce(kiln_session *s, kiln_grad_reduce_fn fn, void *user, size_t bucket_bytes);

/* The nonblocking form (MPI_Iallreduce): start begins the mean of x[0..n) and the caller leaves x
 * alone until finish, which completes every started one; progress (optional) is called between
 * plan steps while some are in flight. Each run then starts a bucket's reduction right after the
 * last step that touches it, during the rest of the backward pass, and calls finish before the
 * first step that needs them. Only runs whose gradients are all f32 in host memory use it; others
 * keep the blocking fn (which must be set first). a NULL: blocking only. */
typedef struct kiln_grad_reduce_async {
    kiln_status (*start)(void *user, float *x, int64_t n);
    kiln_status (*progress)(void *user);
    kiln_status (*finish)(void *user);
} kiln_grad_reduce_async;
kiln_status kiln_session_set_grad_reduce_async(kiln_session *s, const kiln_grad_reduce_async *a, void *user);
/* Sums x[0..n) (host memory, f32 or f64) over the replicas in place. */
typedef kiln_status (*kiln_cross_replica_fn)(void *user, void *x, int64_t n, kiln_dtype dtype);
/* The collective behind CrossReplicaSum ops (synchronised batch norm's statistics and their
 * gradients): every run calls fn on each such op's output right after it is made (device values
 * through the host). NULL: the op is the identity (one replica). */
kiln_status kiln_session_set_cross_replica_sum(kiln_session *s, kiln_cross_replica_fn fn, void *user);

/* The same as one collective service (MPI ranks: kiln_dist_collectives, src/dist; members 1, host
 * memory): gradients averaged with c->mean in buckets of at most bucket_bytes, or started with
 * c->start during the backward pass when overlap is set (host gradients); CrossReplicaSum outputs
 * summed with c->sum when cross_replica. c is copied (its ctx borrowed); NULL: none. */
kiln_status kiln_session_set_collectives(kiln_session *s, const kiln_collectives *c, size_t bucket_bytes, bool overlap, bool cross_replica);

/* Whether data-parallel training overlaps the all-reduce with the backward pass: yes unless the
 * environment says KILN_OVERLAP=0 (to compare the step time with and without). */
bool kiln_grad_overlap_enabled(void);

#endif
