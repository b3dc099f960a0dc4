/* Training with and without prefetch: does the input pipeline keep the model fed?
 * cifar_cnn, batch 128, SGD momentum 0.9 lr 0.01, on CIFAR-shaped synthetic data [32, 32, 3] read
 * through shuffle -> augment (crop 4 + flip + cutout 8) -> normalize -> batch, and kiln_fit_data.
 * Prints the time per training step:
 *   compute   model steps on one fixed pre-made batch (a pipeline that repeats a single batch: no
 *             per-example work; its one 1.5 MB copy per step is shown as "fixed batch copy")
 *   pipeline  the input pipeline alone (no model), on the training thread
 *   no prefetch    the pipeline on the training thread, then the step: about compute + pipeline
 *   prefetch       --prefetch 2 batches by `workers` threads: about compute when the workers keep up
 * and the ratios step/compute. Run it with bench/prefetch_bench.sh (builds and runs), or build the
 * CMake target (on by default with -DKILN_BENCH=ON) and run it:
 *   cmake -S . -B build && cmake --build build --target bench_prefetch && build/bench_prefetch
 * Each is measured in `rounds` rounds of (compute, no prefetch, prefetch) and the best of each kept,
 * since the machine may be shared.
 * Usage: prefetch_bench [steps (default 24)] [model threads (0 = all cores)] [workers (default 1)] [rounds (default 3)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/pipeline.h"

#define BATCH 128

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "prefetch_bench: %s: %s\n", what, kiln_last_error());
    exit(1);
}

static const float mean[3] = { 0.4914f, 0.4822f, 0.4465f }, sd[3] = { 0.2470f, 0.2435f, 0.2616f };

/* The real input pipeline over ds: one epoch = `steps` full batches. */
static kiln_data *input(const kiln_dataset *ds, int prefetch, int workers) {
    kiln_data *d = kiln_data_shuffle(kiln_data_from_dataset(ds, false), kiln_dataset_size(ds), 42);
    d = kiln_data_augment(d, &(kiln_augment_opts){ .crop_pad = 4, .flip = true, .cutout_size = 8, .seed = 7 });
    d = kiln_data_normalize(d, mean, sd, 3);
    d = kiln_data_batch(d, BATCH, true);
    if (prefetch) d = kiln_data_prefetch(d, prefetch, workers);
    if (!d) die("pipeline");
    return d;
}

/* Seconds per step of one more epoch of m on d (the epoch's own timing: the training loop). */
static double step_time(kiln_model *m, kiln_data *d) {
    int done = kiln_model_epoch(m);
    if (kiln_fit_data(m, d, &(kiln_fit_opts){ .epochs = done + 1, .initial_epoch = done, .verbose = KILN_VERBOSE_SILENT }) != KILN_OK) die("fit");
    int n;
    const kiln_logs *h = kiln_model_history(m, &n);
    return h[n - 1].seconds / (double)h[n - 1].steps;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 24, threads = argc > 2 ? atoi(argv[2]) : 0, workers = argc > 3 ? atoi(argv[3]) : 1;
    int rounds = argc > 4 ? atoi(argv[4]) : 3;
    if (rounds < 1) rounds = 1;
    if (steps < 4) steps = 4;
    if (workers < 1) workers = 1;
    if (threads > 0) kiln_set_num_threads(threads);
    kiln_dataset *ds = kiln_dataset_synthetic(KILN_SHAPE(32, 32, 3), 10, (int64_t)steps * BATCH, 1);
    kiln_dataset *one = kiln_dataset_synthetic(KILN_SHAPE(32, 32, 3), 10, BATCH, 2);
    kiln_model *m = kiln_model_preset("cifar_cnn", KILN_SHAPE(32, 32, 3), 10);
    if (!ds || !one || !m) die("setup");
    kiln_model_set_seed(m, 1);
    if (kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_momentum(0.01, 0.9, false), .from_logits = true,
                                              .metrics = KILN_METRIC_ACCURACY, .device = "cpu", .num_threads = threads }) != KILN_OK)
        die("compile");
    printf("prefetch_bench: cifar_cnn, batch %d, SGD momentum 0.9, %d steps per measurement, best of %d rounds, %d model "
           "threads, synthetic [32, 32, 3] data, shuffle + crop4/flip/cutout8 + normalize\n", BATCH, steps, rounds, kiln_get_num_threads());
    /* compute: one fixed batch repeated */
    kiln_data *fixed = kiln_data_repeat(kiln_data_batch(kiln_data_from_dataset(one, false), BATCH, true), steps);
    if (!fixed) die("fixed pipeline");
    kiln_data *warm = kiln_data_take(kiln_data_batch(kiln_data_from_dataset(one, false), BATCH, true), 1);
    if (!warm) die("warm-up pipeline");
    step_time(m, warm);                       /* builds the graph and plans; not timed */
    step_time(m, warm);
    /* the fixed batch's copy, alone */
    double t0 = now();
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    if (kiln_data_iter_new(fixed, 0, &it) != KILN_OK) die("iter");
    int nb = 0;
    while (kiln_data_iter_next(it, &x, &y) == KILN_OK && x) nb++;
    kiln_data_iter_free(it);
    double copy = (now() - t0) / nb;
    /* the pipeline alone on this thread */
    kiln_data *p0 = input(ds, 0, 0), *p1 = input(ds, 2, workers);
    t0 = now();
    if (kiln_data_iter_new(p0, 1, &it) != KILN_OK) die("iter");
    nb = 0;
    while (kiln_data_iter_next(it, &x, &y) == KILN_OK && x) nb++;
    kiln_data_iter_free(it);
    double pipe = (now() - t0) / nb;
    /* rounds of (compute, no prefetch, prefetch); the best of each: the machine may be shared */
    double compute = 1e30, no_pf = 1e30, pf = 1e30;
    for (int r = 0; r < rounds; r++) {
        double c = step_time(m, fixed), a = step_time(m, p0), b = step_time(m, p1);
        printf("round %d: compute %.1f ms, no prefetch %.1f ms, prefetch %.1f ms\n", r + 1, c * 1e3, a * 1e3, b * 1e3);
        fflush(stdout);
        if (c < compute) compute = c;
        if (a < no_pf) no_pf = a;
        if (b < pf) pf = b;
    }
    printf("%-44s %10s %8s\n", "best of the rounds", "ms/step", "/compute");
    printf("%-44s %10.1f %8.2f\n", "compute (fixed pre-made batch)", compute * 1e3, 1.0);
    printf("%-44s %10.2f\n", "  of which fixed batch copy", copy * 1e3);
    printf("%-44s %10.1f %8.2f\n", "pipeline alone (training thread, no model)", pipe * 1e3, pipe / compute);
    printf("%-44s %10.1f %8.2f\n", "training, no prefetch", no_pf * 1e3, no_pf / compute);
    char label[64];
    snprintf(label, sizeof label, "training, prefetch 2 batches, %d worker%s", workers, workers == 1 ? "" : "s");
    printf("%-44s %10.1f %8.2f\n", label, pf * 1e3, pf / compute);
    printf("RESULT compute_ms=%.2f pipeline_ms=%.2f no_prefetch_ms=%.2f prefetch_ms=%.2f ratio_prefetch=%.3f ratio_no_prefetch=%.3f\n",
           compute * 1e3, pipe * 1e3, no_pf * 1e3, pf * 1e3, pf / compute, no_pf / compute);
    kiln_data_free(fixed);
    kiln_data_free(warm);
    kiln_data_free(p0);
    kiln_data_free(p1);
    kiln_model_free(m);
    kiln_dataset_free(ds);
    kiln_dataset_free(one);
    return 0;
}
