/* Input pipeline throughput (images/s) on CIFAR-shaped data, with and without augmentation, for
 * 0 (consumer thread only), 1, 2 and 4 worker threads. Writes a CIFAR-10 test_batch.bin of random
 * records (default 10000) to a temp dir and reads it through the real CIFAR source.
 *
 * Build (a CMake target, on by default with -DKILN_BENCH=ON), from the repository root:
 *   cmake -S . -B build && cmake --build build --target bench_pipeline
 * Run:  build/bench_pipeline [records] [epochs]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "kiln/pipeline.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    int records = argc > 1 ? atoi(argv[1]) : 10000, epochs = argc > 2 ? atoi(argv[2]) : 2;
    if (records < 128) records = 128;
    char dir[] = "/tmp/kiln_bench_XXXXXX", path[256];
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(path, sizeof path, "%s/test_batch.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); return 1; }
    unsigned char rec[3073];
    unsigned s = 1;
    for (int r = 0; r < records; r++) {
        rec[0] = (unsigned char)(r % 10);
        for (int i = 1; i < 3073; i++) { s = s * 1103515245u + 12345u; rec[i] = (unsigned char)(s >> 16); }
        fwrite(rec, 1, sizeof rec, f);
    }
    fclose(f);
    const float mean[3] = { 0.4914f, 0.4822f, 0.4465f }, sd[3] = { 0.2470f, 0.2435f, 0.2616f };
    printf("pipeline: %d CIFAR-10 records [32,32,3], shuffle + normalize + batch 128, %d epochs each\n", records, epochs);
    printf("%-22s %8s %12s\n", "augment", "workers", "images/s");
    for (int aug = 0; aug < 2; aug++)
        for (int w = 0; w <= 4; w = w ? w * 2 : 1) {
            kiln_data *d = NULL;
            if (kiln_data_open(dir, false, &d) != KILN_OK) {
                fprintf(stderr, "open: %s\n", kiln_last_error());
                return 1;
            }
            d = kiln_data_shuffle(d, records, 42);
            if (aug) d = kiln_data_augment(d, &(kiln_augment_opts){ .crop_pad = 4, .flip = true, .cutout_size = 8, .seed = 1 });
            d = kiln_data_normalize(d, mean, sd, 3);
            d = kiln_data_batch(d, 128, true);
            if (w) d = kiln_data_prefetch(d, 4, w);
            if (!d) { fprintf(stderr, "build: %s\n", kiln_last_error()); return 1; }
            double t0 = now(), sink = 0;
            long images = 0;
            for (int e = 0; e < epochs; e++) {
                kiln_data_iter *it;
                kiln_tensor *x, *y;
                kiln_status st;
                if (kiln_data_iter_new(d, (uint64_t)e, &it) != KILN_OK) { fprintf(stderr, "%s\n", kiln_last_error()); return 1; }
                while ((st = kiln_data_iter_next(it, &x, &y)) == KILN_OK && x) {
                    images += x->shape.dim[0];
                    sink += ((float *)x->data)[17];
                }
                kiln_data_iter_free(it);
                if (st != KILN_OK) { fprintf(stderr, "%s\n", kiln_last_error()); return 1; }
            }
            double dt = now() - t0;
            printf("%-22s %8d %12.0f%s\n", aug ? "crop4+flip+cutout8" : "none", w, images / dt, sink == 12345.678 ? "!" : "");
            kiln_data_free(d);
        }
    unlink(path);
    rmdir(dir);
    return 0;
}
