/* The data-parallel context: what every build has (MPI or not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dist/dist_internal.h"

#define DEFAULT_BUCKET ((size_t)4 << 20)

bool kiln_dist_built_with_mpi(void) { return dist_tp_built(); }

int kiln_dist_launched_size(void) {
    /* Open MPI, MPICH / Intel MPI (Hydra's PMI), MVAPICH */
    static const char *vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE" };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            long n = strtol(v, NULL, 10);
            if (n >= 1 && n < (1 << 24)) return (int)n;
        }
    }
    return 1;
}

int kiln_dist_launched_rank(void) {
    static const char *vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK" };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            long r = strtol(v, NULL, 10);
            if (r >= 0 && r < (1 << 24)) return (int)r;
        }
    }
    return 0;
}

kiln_status kiln_dist_init(int *argc, char ***argv, kiln_dist **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_dist_init: NULL out");
    *out = NULL;
    int launched = kiln_dist_launched_size();
    if (launched > 1 && !dist_tp_built())
        return kiln_set_error(KILN_UNSUPPORTED, "started as %d processes (by mpirun or srun), but this kiln was built without MPI, so "
                              "each would train alone: install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin) and "
                              "rebuild (cmake then reports \"MPI: found\"), or run one process", launched);
    kiln_dist *d = kiln_calloc(1, sizeof *d);
    if (!d) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_dist_init: out of host memory");
    d->size = 1;
    d->bucket_bytes = DEFAULT_BUCKET;
    if (gethostname(d->host, sizeof d->host - 1) != 0) snprintf(d->host, sizeof d->host, "?");
    if (launched > 1) {
        kiln_status st = dist_tp_init(d, argc, argv);
        if (st != KILN_OK) { kiln_free(d); return st; }
    }
    *out = d;
    return KILN_OK;
}

void kiln_dist_free(kiln_dist *d) {
    if (!d) return;
    if (d->owns_mpi) dist_tp_finalize(d);
    kiln_free(d->started);
    kiln_free(d);
}

int kiln_dist_rank(const kiln_dist *d) { return d ? d->rank : 0; }
int kiln_dist_size(const kiln_dist *d) { return d ? d->size : 1; }
const char *kiln_dist_host(const kiln_dist *d) { return d ? d->host : "localhost"; }

void kiln_dist_abort(const kiln_dist *d, int code, const char *msg) {
    if (!d || d->size <= 1) {
        if (msg && *msg) fprintf(stderr, "kiln: %s\n", msg);
        return;
    }
    fprintf(stderr, "kiln: rank %d of %d (host %s) failed: %s; ending the whole job\n", d->rank, d->size, d->host,
            msg && *msg ? msg : "(no message)");
    fflush(stderr);
    fflush(stdout);
    dist_tp_abort(d, code ? code : 1);
}

bool kiln_dist_disagreed(const kiln_dist *d) { return d && d->disagreed; }

int64_t kiln_dist_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;       /* FNV-1a */
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (int64_t)(h >> 1);
}

/* What each rank sends for one fact: the value and how to show it. */
typedef struct fact_rec { int64_t v; char shown[56]; } fact_rec;

static void show(const kiln_dist_fact *f, const fact_rec *r, char *buf, size_t n) {
    if (f->shown) snprintf(buf, n, "%s%s", *r->shown ? r->shown : "(none)", strlen(r->shown) == sizeof r->shown - 1 ? "..." : "");
    else snprintf(buf, n, "%lld", (long long)r->v);
}

kiln_status kiln_dist_agree(kiln_dist *d, const kiln_dist_fact *facts, int n) {
    if (!d || d->size <= 1 || n <= 0) return KILN_OK;
    size_t bytes = (size_t)n * sizeof(fact_rec);
    fact_rec *mine = kiln_calloc((size_t)n, sizeof *mine), *all = kiln_calloc((size_t)n * (size_t)d->size, sizeof *all);
    if (!mine || !all) {       /* the others wait in the all-gather: the caller ends the job (kiln_dist_abort) */
        kiln_free(mine);
        kiln_free(all);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "rank %d: out of host memory", d->rank);
    }
    for (int i = 0; i < n; i++) {
        mine[i].v = facts[i].value;
        if (facts[i].shown) snprintf(mine[i].shown, sizeof mine[i].shown, "%s", facts[i].shown);
    }
    kiln_status st = dist_tp_allgather(d, mine, all, bytes);
    char msg[1536] = "", a[80], b[80];
    size_t k = 0;
    for (int i = 0; !st && i < n; i++)
        for (int r = 1; r < d->size; r++) {
            const fact_rec *x = &all[(size_t)r * (size_t)n + (size_t)i], *x0 = &all[i];
            if (x->v == x0->v) continue;
            show(&facts[i], x, a, sizeof a);
            show(&facts[i], x0, b, sizeof b);
            if (facts[i].warn_only) {
                if (d->rank == 0) kiln_log_msg(KILN_LOG_WARNING, "kiln: warning: rank %d has %s %s, rank 0 has %s: %s", r, facts[i].what, a, b,
                                               !strcmp(facts[i].what, "--seed") ? "the ranks shuffle differently, so their shards overlap" : "they differ");
                break;
            }
            if (k < sizeof msg)
                k += (size_t)snprintf(msg + k, sizeof msg - k, "%srank %d has %s %s, rank 0 has %s", k ? "; " : "", r, facts[i].what, a, b);
            break;     /* the first rank that differs on this fact */
        }
    if (!st && k) {
        d->disagreed = true;
        st = kiln_set_error(KILN_INVALID_ARGUMENT, "rank %d of %d (host %s): the processes must train alike: %s", d->rank, d->size, d->host, msg);
    }
    kiln_free(mine);
    kiln_free(all);
    return st;
}

kiln_status kiln_dist_allreduce_sum_f32(kiln_dist *d, float *x, int64_t n) {
    if (!d || d->size <= 1 || n <= 0) return KILN_OK;
    return dist_tp_allreduce_sum(d, x, n, false);
}

kiln_status kiln_dist_allreduce_sum_f64(kiln_dist *d, double *x, int64_t n) {
    if (!d || d->size <= 1 || n <= 0) return KILN_OK;
    return dist_tp_allreduce_sum(d, x, n, true);
}

kiln_status kiln_dist_broadcast(kiln_dist *d, void *buf, size_t bytes, int root) {
    if (!d || d->size <= 1 || bytes == 0) return KILN_OK;
    if (root < 0 || root >= d->size) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_dist_broadcast: root %d is not a rank (0..%d)", root, d->size - 1);
    return dist_tp_broadcast(d, buf, bytes, root);
}

kiln_status kiln_dist_barrier(kiln_dist *d) { return d && d->size > 1 ? dist_tp_barrier(d) : KILN_OK; }

void kiln_dist_set_bucket_bytes(kiln_dist *d, size_t bytes) {
    if (d) d->bucket_bytes = bytes ? bytes : DEFAULT_BUCKET;
}
size_t kiln_dist_bucket_bytes(const kiln_dist *d) { return d ? d->bucket_bytes : DEFAULT_BUCKET; }

kiln_dist_stats kiln_dist_get_stats(const kiln_dist *d) { return d ? d->stats : (kiln_dist_stats){ 0 }; }

kiln_status kiln_dist_grad_mean(void *dist, float *x, int64_t n) {
    kiln_dist *d = dist;
    if (!d || d->size <= 1 || n <= 0) return KILN_OK;
    double t0 = kiln_now();
    kiln_status st = dist_tp_allreduce_sum(d, x, n, false);
    float inv = 1.0f / (float)d->size;
    for (int64_t i = 0; st == KILN_OK && i < n; i++) x[i] *= inv;
    d->stats.calls++;
    d->stats.bytes += (double)n * sizeof(float);
    d->stats.seconds += kiln_now() - t0;
    return st;
}

kiln_status kiln_dist_cross_replica_sum(void *dist, void *x, int64_t n, kiln_dtype dtype) {
    kiln_dist *d = dist;
    if (!d || d->size <= 1 || n <= 0) return KILN_OK;
    if (dtype != KILN_F32 && dtype != KILN_F64)
        return kiln_set_error(KILN_UNSUPPORTED, "cross-replica sum: %s values (f32 and f64 are summed)", kiln_dtype_name(dtype));
    return dist_tp_allreduce_sum(d, x, n, dtype == KILN_F64);
}

kiln_status kiln_dist_grad_mean_start(void *dist, float *x, int64_t n) {
    kiln_dist *d = dist;
    if (!d || d->size <= 1 || n <= 0) return KILN_OK;
    if (d->n_started == d->cap_started) {
        int cap = d->cap_started ? 2 * d->cap_started : 64;
        void *p = kiln_realloc(d->started, (size_t)cap * sizeof *d->started);
        if (!p) return kiln_set_error(KILN_OUT_OF_MEMORY, "gradient all-reduce: out of host memory");
        d->started = p;
        d->cap_started = cap;
    }
    double t0 = kiln_now();
    kiln_status st = dist_tp_iallreduce_sum(d, x, n);
    if (st == KILN_OK) {
        d->started[d->n_started].x = x;
        d->started[d->n_started++].n = n;
        d->stats.calls++;
        d->stats.bytes += (double)n * sizeof(float);
    }
    d->stats.seconds += kiln_now() - t0;
    return st;
}

kiln_status kiln_dist_grad_mean_progress(void *dist) {
    kiln_dist *d = dist;
    if (!d || d->size <= 1 || d->n_started == 0) return KILN_OK;
    double t0 = kiln_now();
    d->stats.overlapped_steps++;
    kiln_status st = dist_tp_test(d);
    d->stats.seconds += kiln_now() - t0;
    return st;
}

kiln_status kiln_dist_grad_mean_finish(void *dist) {
    kiln_dist *d = dist;
    if (!d || d->size <= 1) return KILN_OK;
    double t0 = kiln_now();
    kiln_status st = dist_tp_wait(d);
    float inv = 1.0f / (float)d->size;
    for (int k = 0; k < d->n_started && st == KILN_OK; k++)
        for (int64_t i = 0; i < d->started[k].n; i++) d->started[k].x[i] *= inv;
    d->n_started = 0;
    d->stats.seconds += kiln_now() - t0;
    return st;
}

/* ---- the same as a collective service (one member per process, host memory) ---- */

static kiln_status coll_mean(void *d, float *const *bufs, const size_t *counts, int n) {
    kiln_status st = KILN_OK;
    for (int b = 0; b < n && st == KILN_OK; b++) st = kiln_dist_grad_mean(d, bufs[b], (int64_t)counts[b]);
    return st;
}
static kiln_status coll_start(void *d, float *const *bufs, const size_t *counts, int n) {
    kiln_status st = KILN_OK;
    for (int b = 0; b < n && st == KILN_OK; b++) st = kiln_dist_grad_mean_start(d, bufs[b], (int64_t)counts[b]);
    return st;
}
static kiln_status coll_sum(void *d, void *const *bufs, const size_t *counts, int n, kiln_dtype dtype) {
    kiln_status st = KILN_OK;
    for (int b = 0; b < n && st == KILN_OK; b++) st = kiln_dist_cross_replica_sum(d, bufs[b], (int64_t)counts[b], dtype);
    return st;
}
static kiln_status coll_broadcast(void *d, void *const *bufs, const size_t *bytes, int n, int root) {
    kiln_status st = KILN_OK;
    for (int b = 0; b < n && st == KILN_OK; b++) st = kiln_dist_broadcast(d, bufs[b], bytes[b], root);
    return st;
}

kiln_collectives kiln_dist_collectives(kiln_dist *d) {
    return (kiln_collectives){ "mpi", d, 1, false, coll_mean, coll_start, kiln_dist_grad_mean_progress, kiln_dist_grad_mean_finish,
                               coll_sum, coll_broadcast, NULL };
}
