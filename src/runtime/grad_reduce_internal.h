/* The gradient all-reduce's state, shared by grad_reduce.c (finding the gradients, the blocking
 * reduction, replicas' deferred runs) and grad_overlap.c (buckets with the step they are ready
 * after: reductions started during the backward pass). */
#ifndef KILN_GRAD_REDUCE_INTERNAL_H
#define KILN_GRAD_REDUCE_INTERNAL_H
#include "runtime/runtime_internal.h"
#include "runtime/grad_reduce.h"

/* A bucket: at most the bucket size of contiguous gradient memory (one space). */
typedef struct rt_chunk {
    char *lo;
    int64_t count;           /* floats */
    int space;
    int ready;               /* the step after which no step before the updates touches it */
    int a, b;                /* ids[a..b): the gradients it holds part of (their padding is zeroed) */
} rt_chunk;

struct rt_reduce {
    kiln_grad_reduce_fn fn;
    void *user;
    size_t bucket;
    kiln_grad_reduce_async async;   /* start != NULL: reductions overlap the backward pass */
    kiln_cross_replica_fn xsum;     /* CrossReplicaSum ops (sync batch norm): summed over the replicas */
    void *xsum_user;
    void *async_user;
    int cap;                 /* ids the scratch below holds */
    unsigned char *mark;     /* [cap] 1: a gradient, 2: the storage a gradient aliases */
    int *ids;                /* [cap] the gradients of this run */
    float *stage;            /* host staging for device gradients */
    size_t stage_bytes;
    rt_chunk *chunks;        /* this run's buckets, by ready step */
    int n_chunks, chunk_cap;
    bool defer;              /* replicas: the run waits at step 0 (kiln_session_run_to / _rest go on) */
    kiln_plan *pending;      /* the run stopped there, its gradients in ids[0..n_pending) */
    int pending_at, n_pending;   /* the next step to run; */
    int at;                  /* the step after the last gradient is written (the updates follow) */
};

/* cross_replica.c: after a CrossReplicaSum step's kernel (a copy), its output summed over the replicas */
kiln_status rt_cross_replica_sum(kiln_session *s, const kiln_plan_step *stp, void *out);
/* grad_reduce.c: ids sorted by (space, address), views of an earlier one's storage dropped; the count */
int rt_grad_sort(kiln_session *s, kiln_plan *p, int n);
/* grad_reduce.c: the end of the run of gradients from ids[a] (sorted) that lie back to back in
 * one space (gaps of the gradient block's alignment padding only), so one range can hold them */
int rt_grad_run_end(kiln_session *s, const kiln_plan *p, int a, int n);
/* grad_overlap.c: r->chunks for ids[0..n) (sorted): each range of contiguous gradients cut into
 * buckets of `bucket` bytes, ordered by their ready step (overlap) or all ready at `at`. */
kiln_status rt_grad_chunks(kiln_session *s, kiln_plan *p, int n, int at, size_t bucket, bool overlap);
/* grad_overlap.c: the run with each host bucket's reduction started (async) as soon as it is ready */
kiln_status rt_run_overlapped(kiln_session *s, kiln_plan *p, int n, int at);
#endif
