/* Recurrent layers, fused RNN op vs the unrolled graph: trains Input(T, F) -> LSTM(U) -> Dense(10)
 * on random data and prints the mean time of a training step (forward + backward + Adam) and of
 * a prediction batch. Run it twice, the second time with KILN_RNN_UNROLLED=1 (the layer then
 * builds T steps of small ops):
 *   bench_rnn [T=100] [U=128] [threads=2]      KILN_RNN_UNROLLED=1 bench_rnn ... */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "kiln/kiln.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int T = argc > 1 ? atoi(argv[1]) : 100, U = argc > 2 ? atoi(argv[2]) : 128, th = argc > 3 ? atoi(argv[3]) : 2;
    enum { F = 32, BATCH = 32, NS = 256 };
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(NS, T, F)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(NS));
    if (!x || !y || T < 1 || U < 1) return 1;
    srand(1);
    for (int64_t i = 0; i < (int64_t)NS * T * F; i++) ((float *)x->data)[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < NS; i++) ((int32_t *)y->data)[i] = rand() % 10;
    kiln_dataset *ds = kiln_dataset_from_tensors(x, y, 10);
    kiln_model *m = kiln_model_new("rnn_bench");
    kiln_layer *in = kiln_input(m, KILN_SHAPE(T, F));
    kiln_layer *l = kiln_layer_lstm(m, &(kiln_rnn_opts){ .input = in, .units = U });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = l, .units = 10 });
    if (kiln_model_functional(m, &in, 1, &out, 1) ||
        kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-3), .from_logits = true, .device = "cpu", .num_threads = th })) {
        fprintf(stderr, "bench_rnn: %s\n", kiln_last_error());
        return 1;
    }
    kiln_fit_opts fo = { .epochs = 1, .batch_size = BATCH, .verbose = 0 };
    if (kiln_fit(m, ds, &fo)) { fprintf(stderr, "bench_rnn: %s\n", kiln_last_error()); return 1; }   /* warm-up */
    double t0 = now();
    fo.epochs = 2;
    if (kiln_fit(m, ds, &fo)) { fprintf(stderr, "bench_rnn: %s\n", kiln_last_error()); return 1; }
    double step = (now() - t0) / (2.0 * NS / BATCH);
    kiln_eval_result r = { 0 };
    t0 = now();
    if (kiln_evaluate(m, ds, NULL, &r)) { fprintf(stderr, "bench_rnn: %s\n", kiln_last_error()); return 1; }
    double ev = (now() - t0) / ((double)NS / BATCH);
    const char *u = getenv("KILN_RNN_UNROLLED");
    printf("LSTM(%d) T=%d F=%d batch %d, %d threads, %s: train step %.2f ms, eval batch %.2f ms\n", U, T, F, BATCH, th,
           u && *u == '1' ? "unrolled" : "fused", 1e3 * step, 1e3 * ev);
    kiln_dataset_free(ds);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_model_free(m);
    return 0;
}
