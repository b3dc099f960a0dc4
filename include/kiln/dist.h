/* Data-parallel training across processes and machines (MPI), Horovod / MultiWorkerMirrored style.
 *
 *   mpirun -np 4 ./train          # or: mpirun -np 4 kiln train ...
 *
 *   kiln_dist *d = NULL;
 *   if (kiln_dist_init(&argc, &argv, &d) != KILN_OK) { ... kiln_last_error() ... }
 *   ... build and compile the model on every rank, same seed ...
 *   st = kiln_fit_data(m, train, &(kiln_fit_opts){ .epochs = 5, .dist = d, ... });
 *   if (st != KILN_OK) kiln_dist_abort(d, 1, kiln_last_error());   // never leave the others waiting
 *   kiln_dist_free(d);
 *
 * With .dist, kiln_fit / kiln_fit_data treat the pipeline's batch size B as the GLOBAL batch:
 * each of the N ranks trains on its own B / N rows of every batch (a disjoint 1/N of each epoch's
 * shuffled order, nothing else is read or decoded), the gradients are all-reduced (averaged,
 * MPI_Allreduce in buckets of a few MB) before the optimizer update, so every rank applies the
 * same update to the same weights; rank 0's weights and optimizer state are broadcast when
 * training starts (a checkpoint loaded on any number of ranks resumes the same run). Loss and
 * metrics are reduced for the logs; only rank 0 shows progress and runs the callbacks that write
 * files (checkpoints, CSV, TensorBoard). N ranks with global batch B give the losses and weights
 * of one process with batch B, up to float rounding (batch norm excepted: its statistics are
 * per rank, as TensorFlow's). */
#ifndef KILN_DIST_H
#define KILN_DIST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kiln/status.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_dist kiln_dist;

/* True when this build has MPI (CMake found it); without it only one process trains. */
bool kiln_dist_built_with_mpi(void);
/* The world size the launcher (mpirun / srun: OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE ...) gave
 * this process, 1 when started alone. Needs no MPI. */
int kiln_dist_launched_size(void);
/* This process's rank as its launcher (mpirun, srun) set it in the environment; 0 when not
 * launched. Only rank 0 prints what every rank would say alike ("no GPU found"). */
int kiln_dist_launched_rank(void);
/* Joins the job: MPI_Init (argc/argv may be NULL) when the process was started by a launcher
 * with more than one process, else a one-process context (no MPI call). *out: free with
 * kiln_dist_free. KILN_UNSUPPORTED, saying what to install, when launched as several processes
 * by a build without MPI. */
kiln_status kiln_dist_init(int *argc, char ***argv, kiln_dist **out);
/* MPI_Finalize when kiln_dist_init started MPI. NULL: no-op. */
void kiln_dist_free(kiln_dist *d);
int kiln_dist_rank(const kiln_dist *d);   /* 0 for NULL */
int kiln_dist_size(const kiln_dist *d);   /* 1 for NULL */
/* This rank's host name (for messages). */
const char *kiln_dist_host(const kiln_dist *d);

/* Ends the whole job at once: prints "kiln: rank R of N (host H) failed: msg" on stderr and calls
 * MPI_Abort, so no rank waits forever on one that failed. With one process: prints msg and
 * returns (the caller exits as usual). */
void kiln_dist_abort(const kiln_dist *d, int code, const char *msg);

/* One value every process must hold alike before training (an option, a data set's size), for
 * kiln_dist_agree. value: the value (a string's: kiln_dist_hash of it); shown: the string for
 * messages (NULL: the number); warn_only: a difference is a warning on rank 0, not an error. */
typedef struct kiln_dist_fact {
    const char *what;        /* "--batch-size", "training examples" */
    int64_t value;
    const char *shown;
    bool warn_only;
} kiln_dist_fact;
int64_t kiln_dist_hash(const char *s);      /* FNV-1a; NULL and "" alike */
/* Every rank exchanges facts[0..n) once (one small all-gather): a difference is
 * KILN_INVALID_ARGUMENT on every rank naming each fact and the values ("rank 1 has --batch-size
 * 32, rank 0 has 64"), and kiln_dist_disagreed turns true, so no rank need abort the others.
 * Another error (out of memory) failed on this rank alone: end the job with kiln_dist_abort.
 * No-op with one process. kiln_fit checks the data set's size and steps itself. */
kiln_status kiln_dist_agree(kiln_dist *d, const kiln_dist_fact *facts, int n);
bool kiln_dist_disagreed(const kiln_dist *d);

/* Collectives, in place, over every rank (no-ops with one process). */
kiln_status kiln_dist_allreduce_sum_f32(kiln_dist *d, float *x, int64_t n);
kiln_status kiln_dist_allreduce_sum_f64(kiln_dist *d, double *x, int64_t n);
kiln_status kiln_dist_broadcast(kiln_dist *d, void *buf, size_t bytes, int root);
kiln_status kiln_dist_barrier(kiln_dist *d);

/* Gradient buckets: at most this many bytes per all-reduce call (default 4 MiB; 0: default). */
void kiln_dist_set_bucket_bytes(kiln_dist *d, size_t bytes);
size_t kiln_dist_bucket_bytes(const kiln_dist *d);
/* What the gradient all-reduces cost so far on this rank: calls, bytes, wall seconds. */
/* calls: bucket all-reduces; seconds: inside them (with overlap, the time not hidden behind the
 * backward pass); overlapped_steps: plan steps run while some bucket's all-reduce was in flight. */
typedef struct kiln_dist_stats { int64_t calls, steps; double bytes, seconds; int64_t overlapped_steps; } kiln_dist_stats;
kiln_dist_stats kiln_dist_get_stats(const kiln_dist *d);

#ifdef __cplusplus
}
#endif
#endif
