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

/* Replicas (src/runtime/replicas.c): runs of plans with optimizer updates stop after the backward
 * pass, their gradients in place; the caller all-reduces them (kiln_session_grad_ranges gives the
 * contiguous f32 device ranges, at most max, in the same order on every replica of the graph) and finishes each run with kiln_session_run_rest (the updates, the fetches). */
kiln_status kiln_session_set_grad_defer(kiln_session *s);
kiln_status kiln_session_grad_ranges(kiln_session *s, void **ptr, size_t *count, int max, int *n);
kiln_status kiln_session_run_rest(kiln_session *s, kiln_node *const *fetches, kiln_tensor **outs, int n_fetches);
#endif
