/* The MPI transport (compiled when CMake finds MPI). Kiln works on a duplicate of
 * MPI_COMM_WORLD whose errors return to the caller (MPI_ERRORS_RETURN) instead of killing the
 * job, so they come back as a kiln_status; a rank that fails ends the job with kiln_dist_abort. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include "dist/dist_internal.h"

static MPI_Comm comm_of(const kiln_dist *d) { return *(const MPI_Comm *)d->tp; }

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
    MPI_Comm *c = kiln_malloc(sizeof *c);
    if (!c) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_dist_init: out of host memory");
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, c);
    if (rc != MPI_SUCCESS) { kiln_free(c); return kiln_set_error(KILN_DEVICE_ERROR, "MPI_Comm_dup failed"); }
    MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
    d->tp = c;
    MPI_Comm_rank(*c, &d->rank);
    MPI_Comm_size(*c, &d->size);
    return KILN_OK;
}

void dist_tp_finalize(kiln_dist *d) {
    if (d->tp) {
        MPI_Comm_free((MPI_Comm *)d->tp);
        kiln_free(d->tp);
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

void dist_tp_abort(const kiln_dist *d, int code) { MPI_Abort(d->tp ? comm_of(d) : MPI_COMM_WORLD, code); }
