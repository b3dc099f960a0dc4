/* The collective steps' state, shared by grad_buckets.c (finding a run's gradients and cutting
 * them into buckets), plan_reduce.c (the pass that inserts collective and wait steps into a
 * plan's step list) and grad_reduce.c (the hooks, and running those steps for one session). */
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
    /* the service of a session's own collective steps (members 1, host memory): mean NULL: no
     * gradient reduction; start NULL: blocking only; sum NULL: CrossReplicaSum is the identity */
    kiln_collectives svc;
    size_t bucket;
    bool replica;            /* replicas.c runs this session's collective steps, as NCCL groups */
    bool overlap;            /* replica: buckets start during the backward pass */
    uint64_t gen;            /* bumped by every change: step lists are derived again */
    bool inflight;           /* started reductions not finished yet */
    int cap;                 /* ids the scratch below holds */
    unsigned char *mark;     /* [cap] 1: a gradient, 2: the storage a gradient aliases */
    int *ids;                /* [cap] the gradients of the plan being derived */
    rt_chunk *chunks;        /* its buckets, by ready step */
    int n_chunks, chunk_cap;
    float *stage;            /* host staging for device buffers (sized by the pass) */
    size_t stage_bytes;
};

/* grad_buckets.c: marks the plan's reduced gradients (r->ids[0..*n)), *at the step after the last
 * one writing them; KILN_UNSUPPORTED when an update runs before that. */
kiln_status rt_find_grads(kiln_session *s, kiln_plan *p, int *n, int *at);
/* ids sorted by (space, address), views of an earlier one's storage dropped; the count */
int rt_grad_sort(kiln_session *s, kiln_plan *p, int n);
/* the end of the run of gradients from ids[a] (sorted) that lie back to back in one space (gaps of
 * the gradient block's alignment padding only), so one range can hold them */
int rt_grad_run_end(kiln_session *s, const kiln_plan *p, int a, int n);
/* r->chunks for ids[0..n) (sorted): each range of contiguous gradients cut into buckets of
 * `bucket` bytes, ordered by their ready step (overlap) or all ready at `at`. */
kiln_status rt_grad_chunks(kiln_session *s, kiln_plan *p, int n, int at, size_t bucket, bool overlap);
/* grad_reduce.c: host staging of at least bytes (made by the pass, never during a step) */
kiln_status rt_stage_reserve(struct rt_reduce *r, size_t bytes);
#endif
