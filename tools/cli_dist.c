/* kiln train under mpirun (include/kiln/dist.h): joins the job, gives each process its share of
 * the cores and, with several GPUs, the GPU of its local rank; keeps stdout to rank 0; and when
 * this rank fails, ends the whole job with a message naming the rank and the cause, so no rank
 * waits forever in an all-reduce. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "kiln/kiln.h"
#include "tools/cli_args.h"
#include "tools/cli_dist.h"

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

int cli_dist_run(args *a, int (*train)(args *)) {
    if (a->help || kiln_dist_launched_size() <= 1) return train(a);
    kiln_dist *d = NULL;
    if (kiln_dist_init(NULL, NULL, &d) != KILN_OK) {
        fprintf(stderr, "kiln train: %s\n", kiln_last_error());
        return 2;
    }
    int rank = kiln_dist_rank(d), n = kiln_dist_size(d);
    if (a->batch % n) {
        if (rank == 0)
            fprintf(stderr, "kiln train: --batch-size %d is the global batch, split over %d processes: make it a multiple of %d (e.g. %d)\n",
                    a->batch, n, n, (a->batch / n + 1) * n);
        kiln_dist_free(d);
        return 2;
    }
    /* the machine's cores shared by the processes on it */
    int local = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("MPI_LOCALNRANKS", 1));
    int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("MPI_LOCALRANKID", 0));
    if (!a->threads && !getenv("OMP_NUM_THREADS")) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        a->threads = cores / (local > 0 ? local : 1) > 1 ? (int)(cores / (local > 0 ? local : 1)) : 1;
    }
    /* one GPU per local rank by default */
    static char dev[32];
    kiln_device_info info[64];
    int n_dev = 0, n_gpu = 0;
    if (!a->device && kiln_gpu_available() && kiln_device_list(info, 64, &n_dev) == KILN_OK) {
        for (int i = 0; i < n_dev && i < 64; i++) n_gpu += info[i].kind == KILN_DEVICE_KIND_GPU;
        if (n_gpu > 1) {
            snprintf(dev, sizeof dev, "gpu:%d", local_rank % n_gpu);
            a->device = dev;
        }
    }
    if (rank > 0) {                 /* progress, summaries, "Saved:": rank 0's */
        fflush(stdout);
        if (!freopen("/dev/null", "w", stdout)) fprintf(stderr, "kiln train: rank %d: cannot silence stdout\n", rank);
    } else {
        printf("Data parallel: %d processes (MPI), global batch %d = %d per process; gradients all-reduced in buckets of %zu KiB\n",
               n, a->batch, a->batch / n, kiln_dist_bucket_bytes(d) >> 10);
    }
    a->dist = d;
    int rc = train(a);
    a->dist = NULL;
    if (rc != 0) {
        char msg[1400];
        snprintf(msg, sizeof msg, "kiln train exited with status %d (%s)", rc, *kiln_last_error() ? kiln_last_error() : "see its message above");
        kiln_dist_abort(d, rc, msg);   /* ends every rank */
    }
    if (rank == 0 && getenv("KILN_DIST_STATS")) {
        kiln_dist_stats s = kiln_dist_get_stats(d);
        printf("All-reduce: %lld calls over %lld steps, %.1f MB, %.3f s (%.2f ms per step)\n", (long long)s.calls, (long long)s.steps,
               s.bytes / 1e6, s.seconds, s.steps ? 1e3 * s.seconds / (double)s.steps : 0.0);
    }
    kiln_dist_free(d);
    return rc;
}
