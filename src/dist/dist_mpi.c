/* The MPI transport (compiled when CMake finds MPI). Kiln works on a duplicate of
 * MPI_COMM_WORLD whose errors return to the caller (MPI_ERRORS_RETURN) instead of killing the
 * job, so they come back as a kiln_status; a rank that fails ends the job with kiln_dist_abort. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include "dist/dist_internal.h"

/* The transport's state: the job's communicator and the nonblocking gradient all-reduces in flight. */
typedef struct mpi_tp {
    MPI_Comm comm;
    MPI_Request *req;
    int n_req, cap;
} mpi_tp;

static MPI_Comm comm_of(const kiln_dist *d) { return ((const mpi_tp *)d->tp)->comm; }

static kiln_status mpi_fail(const kiln_dist *d, const char *what, int rc) {
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return kiln_set_error(KILN_DEVICE_ERROR, "rank %d of %d: %s failed: %s", d->rank, d->size, what, s);
}

bool dist_tp_built(void) { return true; }

kiln_status dist_tp_init(kiln_dist *d, int *argc, char ***argv) {
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        /* only the training thread calls MPI (prefetch workers never do) */
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            return kiln_set_error(KILN_DEVICE_ERROR, "MPI_Init failed: is this process started by mpirun?");
        d->owns_mpi = true;
    }
    mpi_tp *t = kiln_calloc(1, sizeof *t);
    if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_dist_init: out of host memory");
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &t->comm);
    if (rc != MPI_SUCCESS) { kiln_free(t); return kiln_set_error(KILN_DEVICE_ERROR, "MPI_Comm_dup failed"); }
    MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
    d->tp = t;
    MPI_Comm_rank(t->comm, &d->rank);
    MPI_Comm_size(t->comm, &d->size);
    return KILN_OK;
}

void dist_tp_finalize(kiln_dist *d) {
    if (d->tp) {
        mpi_tp *t = d->tp;
        if (t->n_req) MPI_Waitall(t->n_req, t->req, MPI_STATUSES_IGNORE);
        MPI_Comm_free(&t->comm);
        kiln_free(t->req);
        kiln_free(t);
        d->tp = NULL;
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (d->owns_mpi && !fin) MPI_Finalize();
}

kiln_status dist_tp_allreduce_sum(kiln_dist *d, void *x, int64_t n, bool f64) {
    size_t es = f64 ? sizeof(double) : sizeof(float);
    for (int64_t off = 0; off < n;) {
        int count = n - off > INT_MAX / 2 ? INT_MAX / 2 : (int)(n - off);
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)x + (size_t)off * es, count, f64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM, comm_of(d));
        if (rc != MPI_SUCCESS) return mpi_fail(d, "MPI_Allreduce", rc);
        off += count;
    }
    return KILN_OK;
}

kiln_status dist_tp_iallreduce_sum(kiln_dist *d, float *x, int64_t n) {
    mpi_tp *t = d->tp;
    if (n > INT_MAX / 2) {   /* one request per bucket: a bucket this large is reduced at once */
        kiln_status st = dist_tp_wait(d);
        return st == KILN_OK ? dist_tp_allreduce_sum(d, x, n, false) : st;
    }
    if (t->n_req == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        MPI_Request *r = kiln_realloc(t->req, (size_t)cap * sizeof *r);
        if (!r) return kiln_set_error(KILN_OUT_OF_MEMORY, "gradient all-reduce: out of host memory");
        t->req = r;
        t->cap = cap;
    }
    int rc = MPI_Iallreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, t->comm, &t->req[t->n_req]);
    if (rc != MPI_SUCCESS) return mpi_fail(d, "MPI_Iallreduce", rc);
    t->n_req++;
    return KILN_OK;
}

kiln_status dist_tp_test(kiln_dist *d) {
    mpi_tp *t = d->tp;
    int done = 0;
    int rc = t->n_req ? MPI_Testall(t->n_req, t->req, &done, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) return mpi_fail(d, "MPI_Testall", rc);
    if (done) t->n_req = 0;     /* completed requests are MPI_REQUEST_NULL now */
    return KILN_OK;
}

kiln_status dist_tp_wait(kiln_dist *d) {
    mpi_tp *t = d->tp;
    int rc = t->n_req ? MPI_Waitall(t->n_req, t->req, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    t->n_req = 0;
    return rc == MPI_SUCCESS ? KILN_OK : mpi_fail(d, "MPI_Waitall", rc);
}

kiln_status dist_tp_broadcast(kiln_dist *d, void *buf, size_t bytes, int root) {
    for (size_t off = 0; off < bytes;) {
        int count = bytes - off > (size_t)INT_MAX / 2 ? INT_MAX / 2 : (int)(bytes - off);
        int rc = MPI_Bcast((char *)buf + off, count, MPI_BYTE, root, comm_of(d));
        if (rc != MPI_SUCCESS) return mpi_fail(d, "MPI_Bcast", rc);
        off += (size_t)count;
    }
    return KILN_OK;
}

kiln_status dist_tp_barrier(kiln_dist *d) {
    int rc = MPI_Barrier(comm_of(d));
    return rc == MPI_SUCCESS ? KILN_OK : mpi_fail(d, "MPI_Barrier", rc);
}

kiln_status dist_tp_allgather(kiln_dist *d, const void *mine, void *all, size_t bytes) {
    if (bytes > (size_t)INT_MAX) return kiln_set_error(KILN_INVALID_ARGUMENT, "all-gather of %zu bytes per rank: too large", bytes);
    int rc = MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, comm_of(d));
    return rc == MPI_SUCCESS ? KILN_OK : mpi_fail(d, "MPI_Allgather", rc);
}

void dist_tp_abort(const kiln_dist *d, int code) { MPI_Abort(d->tp ? comm_of(d) : MPI_COMM_WORLD, code); }
