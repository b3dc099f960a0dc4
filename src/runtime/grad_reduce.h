/* Data parallelism's hook in the executor: a function that all-reduces (averages) host f32
 * gradients across replicas, called once per training run on the gradients the optimizer updates
 * read, after the last of them is written and before anything reads them (src/runtime/grad_reduce.c). */
#ifndef KILN_GRAD_REDUCE_H
#define KILN_GRAD_REDUCE_H
#include "kiln/graph.h"

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

/* Whether data-parallel training overlaps the all-reduce with the backward pass: yes unless the
 * environment says KILN_OVERLAP=0 (to compare the step time with and without). */
bool kiln_grad_overlap_enabled(void);

/* Replicas (src/runtime/replicas.c): runs of plans with optimizer updates wait at their first step
 * (kiln_session_run returns at once); the caller gets the gradient buckets (kiln_session_grad_buckets:
 * contiguous f32 device memory cut into buckets of bucket_bytes, at most max, each with the step
 * after which the run no longer touches it until the updates, sorted by that step — or all ready
 * at *at, the step the updates follow, when !overlap — the same on every replica of the graph),
 * runs the steps up to a bucket's ready step (kiln_session_run_to), all-reduces it, and finishes
 * each run with kiln_session_run_rest (the updates, the fetches). */
kiln_status kiln_session_set_grad_defer(kiln_session *s);
kiln_status kiln_session_grad_buckets(kiln_session *s, size_t bucket_bytes, bool overlap, void **ptr, size_t *count, int *ready,
                                      int max, int *n, int *at);
/* The pending run's CrossReplicaSum steps (synchronised batch norm), in order: each output's
 * device memory, elements, dtype and step; the caller runs every replica to the step after one
 * and sums the outputs over the replicas before going on. */
kiln_status kiln_session_sync_points(kiln_session *s, void **ptr, size_t *count, kiln_dtype *dtype, int *step, int max, int *n);
kiln_status kiln_session_run_to(kiln_session *s, int step);
kiln_status kiln_session_run_rest(kiln_session *s, kiln_node *const *fetches, kiln_tensor **outs, int n_fetches);
#endif
