/* The data-parallel context and its transport. dist.c holds what every build has (the context,
 * stats, the launcher's world size); the transport is dist_mpi.c (MPI found at configure time)
 * or dist_nompi.c (one process only). */
#ifndef KILN_DIST_INTERNAL_H
#define KILN_DIST_INTERNAL_H
#include "kiln/dist.h"
#include "core/core.h"
#include "backend/backend.h"

struct kiln_dist {
    int rank, size;
    bool owns_mpi;           /* kiln_dist_init called MPI_Init: kiln_dist_free finalizes */
    size_t bucket_bytes;
    kiln_dist_stats stats;
    char host[128];
    void *tp;                /* the transport's state (dist_mpi.c: the job's communicator, requests) */
    struct { float *x; int64_t n; } *started;   /* gradient buckets in flight (kiln_dist_grad_mean_start) */
    int n_started, cap_started;
    bool disagreed;          /* dist_agree found ranks that differ: every rank knows, none need abort the others */
};

/* transport (dist_mpi.c / dist_nompi.c) */
bool dist_tp_built(void);
kiln_status dist_tp_init(kiln_dist *d, int *argc, char ***argv);
void dist_tp_finalize(kiln_dist *d);
kiln_status dist_tp_allreduce_sum(kiln_dist *d, void *x, int64_t n, bool f64);
kiln_status dist_tp_broadcast(kiln_dist *d, void *buf, size_t bytes, int root);
kiln_status dist_tp_barrier(kiln_dist *d);
/* Every rank's `bytes` bytes of mine, rank by rank, into all (size * bytes). */
kiln_status dist_tp_allgather(kiln_dist *d, const void *mine, void *all, size_t bytes);
void dist_tp_abort(const kiln_dist *d, int code);
/* Nonblocking in-place sum of x[0..n) (MPI_Iallreduce); test drives them (MPI_Testall), wait
 * completes every one started (MPI_Waitall). */
kiln_status dist_tp_iallreduce_sum(kiln_dist *d, float *x, int64_t n);
kiln_status dist_tp_test(kiln_dist *d);
kiln_status dist_tp_wait(kiln_dist *d);

/* The all-reduce the session calls on each gradient bucket (src/runtime/grad_reduce.c): sums x
 * over the ranks and divides by their number, so every rank holds the mean gradient. */
kiln_status kiln_dist_grad_mean(void *dist, float *x, int64_t n);
/* Its overlapped form (kiln_grad_reduce_async): start sums x over the ranks in the background;
 * progress lets MPI move data; finish waits for every started bucket and divides them by the
 * ranks. The stats count the seconds spent inside these calls (the communication not hidden). */
kiln_status kiln_dist_grad_mean_start(void *dist, float *x, int64_t n);
/* The session's CrossReplicaSum hook (synchronised batch norm): x summed over the ranks. */
kiln_status kiln_dist_cross_replica_sum(void *dist, void *x, int64_t n, kiln_dtype dtype);
kiln_status kiln_dist_grad_mean_progress(void *dist);
kiln_status kiln_dist_grad_mean_finish(void *dist);
/* The functions above as the session's collective service (kiln_session_set_collectives):
 * members 1, host memory; ctx d, borrowed. */
kiln_collectives kiln_dist_collectives(kiln_dist *d);
#endif
