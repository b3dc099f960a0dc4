/* kiln train under mpirun (include/kiln/dist.h): joins the job, gives each process its share of
 * the cores and, with several GPUs, the GPU of its local rank; keeps stdout to rank 0; and when
 * this rank fails, ends the whole job with a message naming the rank and the cause, so no rank
 * waits forever in an all-reduce. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kiln/kiln.h"
#include "tools/cli_ctx.h"
#include "tools/cli_dist.h"

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* --gpus N|all / --devices LIST -> a->fit_devices ("all", "0,1,2" written into list, the list): 0 or
 * 2 (usage). */
static int parse_gpus(args *a, char *list, size_t list_n) {
    if (a->gpus && a->devices_list) { fprintf(stderr, "kiln train: give --gpus or --devices, not both\n"); return 2; }
    if (a->devices_list) { a->fit_devices = a->devices_list; return 0; }
    if (!a->gpus) return 0;
    if (!strcmp(a->gpus, "all")) { a->fit_devices = "all"; return 0; }
    char *end;
    long n = strtol(a->gpus, &end, 10);
    if (end == a->gpus || *end || n < 1 || n > 16) {
        fprintf(stderr, "kiln train: --gpus %s: give a number of GPUs (1 to 16) or all\n", a->gpus);
        return 2;
    }
    if (n == 1) return 0;                  /* one GPU: the usual single-device run */
    size_t k = 0;
    for (long i = 0; i < n; i++) k += (size_t)snprintf(list + k, list_n - k, "%s%ld", i ? "," : "", i);
    a->fit_devices = list;
    return 0;
}

static int run_mirrored(cli_ctx *c, int (*train)(cli_ctx *)) {
    const args *a = &c->a;
    int n = 1;
    if (!strcmp(a->fit_devices, "all")) {
        kiln_device_info info[32];
        int nd = 0;
        n = 0;
        if (kiln_device_list(info, 32, &nd) == KILN_OK)
            for (int i = 0; i < nd && i < 32; i++) n += info[i].kind == KILN_DEVICE_KIND_GPU;
    } else {
        for (const char *p = a->fit_devices; *p; p++) n += *p == ',';
    }
    if (n > 1 && a->batch % n == 0)
        printf("Mirrored: %d replicas (%s), global batch %d = %d per replica; gradients averaged with NCCL\n", n, a->fit_devices,
               a->batch, a->batch / n);
    return train(c);
}

int cli_dist_run(cli_ctx *c, int (*train)(cli_ctx *)) {
    args *a = &c->a;
    if (!a->help && parse_gpus(a, c->gpu_list, sizeof c->gpu_list)) return 2;
    if (!a->help && a->fit_devices && kiln_dist_launched_size() <= 1) return run_mirrored(c, train);
    if (a->help || kiln_dist_launched_size() <= 1) return train(c);
    kiln_dist *d = NULL;
    if (kiln_dist_init(NULL, NULL, &d) != KILN_OK) {
        fprintf(stderr, "kiln train: %s\n", kiln_last_error());
        return 2;
    }
    int rank = kiln_dist_rank(d), n = kiln_dist_size(d);
    /* the options every rank must share, before anything can wait on a rank that differs (the
     * data set's size, steps and model: kiln_fit's own check) */
    char seed[24];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)a->seed);
    const kiln_dist_fact facts[] = {
        { "--model", kiln_dist_hash(a->model), a->model ? a->model : "", false },
        { "--optimizer", kiln_dist_hash(a->optimizer), a->optimizer ? a->optimizer : "", false },
        { "--precision", kiln_dist_hash(a->precision), a->precision ? a->precision : "", false },
        { "--batch-size", a->batch_auto ? -1 : a->batch, NULL, false },
        { "--epochs", a->epochs, NULL, false },
        { "--limit", a->limit, NULL, false },
        { "--bucket-kb", a->bucket_kb, NULL, false },
        { "--accumulate", a->accumulate, NULL, false },
        { "--sync-batchnorm", a->sync_batchnorm, NULL, false },
        { "--seed", (int64_t)a->seed, seed, true },
    };
    if (kiln_dist_agree(d, facts, (int)(sizeof facts / sizeof *facts))) {
        fprintf(stderr, "kiln train: %s\n", kiln_last_error());
        if (!kiln_dist_disagreed(d)) kiln_dist_abort(d, 2, kiln_last_error());    /* it failed alone: the others wait */
        kiln_dist_free(d);
        return 2;
    }
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
    /* one GPU per local rank by default: CUDA_VISIBLE_DEVICES set before CUDA first loads (the
     * GPUs counted from /dev/nvidiaN, without starting CUDA) */
    int n_gpu = 0;
    char path[32], vis[16];
    for (int i = 0; i < 64; i++) {
        snprintf(path, sizeof path, "/dev/nvidia%d", i);
        if (access(path, F_OK) == 0) n_gpu++;
    }
    if (n_gpu > 1 && !getenv("CUDA_VISIBLE_DEVICES")) {
        snprintf(vis, sizeof vis, "%d", local_rank % n_gpu);
        setenv("CUDA_VISIBLE_DEVICES", vis, 1);
    }
    if (a->bucket_kb) kiln_dist_set_bucket_bytes(d, (size_t)a->bucket_kb << 10);   /* --bucket-kb */
    if (rank > 0) {                 /* progress, summaries, "Saved:": rank 0's */
        fflush(stdout);
        if (!freopen("/dev/null", "w", stdout)) fprintf(stderr, "kiln train: rank %d: cannot silence stdout\n", rank);
    } else {
        printf("Data parallel: %d processes (MPI), global batch %d = %d per process; gradients all-reduced in buckets of %zu KiB\n",
               n, a->batch, a->batch / n, kiln_dist_bucket_bytes(d) >> 10);
    }
    a->dist = d;
    int rc = train(c);
    a->dist = NULL;
    if (rc != 0 && kiln_dist_disagreed(d)) {     /* every rank found the same difference and said so: none waits */
        kiln_dist_free(d);
        return rc;
    }
    if (rc != 0) {
        char msg[1400];
        snprintf(msg, sizeof msg, "kiln train exited with status %d (%s)", rc, *kiln_last_error() ? kiln_last_error() : "see its message above");
        kiln_dist_abort(d, rc, msg);   /* ends every rank */
    }
    if (rank == 0 && getenv("KILN_DIST_STATS")) {
        kiln_dist_stats s = kiln_dist_get_stats(d);
        printf("All-reduce: %lld calls over %lld steps, %.1f MB, %.3f s (%.2f ms per step); %lld plan steps ran while one was in flight\n",
               (long long)s.calls, (long long)s.steps, s.bytes / 1e6, s.seconds, s.steps ? 1e3 * s.seconds / (double)s.steps : 0.0,
               (long long)s.overlapped_steps);
    }
    kiln_dist_free(d);
    return rc;
}
