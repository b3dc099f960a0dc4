/* MirroredStrategy in one process: the same training graph run by one session per GPU, in lock
 * step, gradients averaged with NCCL between the backward pass and the updates
 * (src/runtime/replicas.c). */
#ifndef KILN_REPLICAS_H
#define KILN_REPLICAS_H
#include "kiln/graph.h"

#define KILN_MAX_REPLICAS 16
typedef struct kiln_replicas kiln_replicas;
/* Replica 0 is s0 (borrowed; its default GPU, GPU 0, must be gpus[0]); replicas 1..n-1 are new
 * sessions over s0's graph with s0's options, each on GPU gpus[k] alone. An NCCL communicator
 * joins them. KILN_UNSUPPORTED when NCCL cannot be loaded, INVALID_ARGUMENT for a bad list. */
kiln_status kiln_replicas_new(kiln_session *s0, const int *gpus, int n, kiln_replicas **out);
void kiln_replicas_free(kiln_replicas *r);    /* frees replicas 1..n-1, not s0 */
int kiln_replicas_count(const kiln_replicas *r);
kiln_session *kiln_replicas_session(const kiln_replicas *r, int k);
void kiln_replicas_set_bucket_bytes(kiln_replicas *r, size_t bytes);
/* Copies every variable of replica 0 to the others (the initial broadcast): those on GPU 0 with
 * one NCCL broadcast group, GPU to GPU; the rest (host variables) through the host. */
kiln_status kiln_replicas_sync_variables(kiln_replicas *r);

/* One step on every replica: replica k gets feeds[k * n_feeds ..] and writes outs[k * n_fetches ..]
 * (as kiln_session_run). Optimizer updates see the mean gradient over the replicas. */
kiln_status kiln_replicas_run(kiln_replicas *r, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                              kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets);
/* Over every kiln_replicas freed so far whose replica 0 was s0 (the model's session): NCCL
 * all-reduce groups started while the backward pass still had steps to run (overlap), and
 * variables sent with ncclBroadcast. s0 NULL: zeros. */
void kiln_replicas_counters(const kiln_session *s0, int64_t *overlapped_groups, int64_t *broadcasts);
/* All-reduce cost so far: calls (buckets), bytes per replica, seconds. */
void kiln_replicas_stats(const kiln_replicas *r, int64_t *calls, double *bytes, double *seconds);
#endif
