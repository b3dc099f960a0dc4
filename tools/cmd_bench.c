/* kiln bench: training and inference throughput of a model on synthetic data, on the CPU and on
 * the GPU when there is one, as a table with the GPU's speedup. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/device.h"
#include "tools/commands.h"

static void bench_usage(FILE *f) {
    fprintf(f,
        "usage: kiln bench [options]\n\n"
        "Times training (forward, backward and update) and inference of a model on synthetic data\n"
        "on each device and prints images/s, the time one epoch of 50,000 images would take, and the\n"
        "GPU's speedup over the CPU. The 8 distinct batches of data live in the device's memory,\n"
        "as in the PyTorch peers (bench/peers), so the model is timed, not the input pipeline.\n"
        "Warm-up steps are not timed.\n\n"
        "options:\n"
        "  --model NAME       cifar_cnn (default), fashion_cnn, mlp\n"
        "  --batch-size N     default 128 (1..65536)\n"
        "  --steps N          timed training steps per device (1..1000000), rounded up to whole passes\n"
        "                     over the 8 synthetic batches (default: 40 on the CPU, 392 on the GPU)\n"
        "  --device D         all (default: cpu, and gpu when available), cpu, gpu\n"
        "  --optimizer NAME   momentum (default: SGD momentum 0.9, lr 0.01) or adam (lr 0.001)\n"
        "  --threads N        CPU threads (default: all cores; at most 1024)\n"
        "  --seed N           default 1\n"
        "  --precision P      float32 (default), mixed_bfloat16 (bf16) or mixed_float16 (fp16): see\n"
        "                     kiln train --help\n"
        "  --infer yes|no     time inference too (default yes); no: training only, e.g. for a\n"
        "                     KILN_PROFILE=1 per-op profile of the training step alone\n"
        "\n"
        "train MiB: memory of training, the resident data set included. GPU: the peak of Kiln's\n"
        "device allocator (weights, optimizer state, activations, cuDNN workspaces, data). CPU: the\n"
        "training step's planned buffers plus the variables (data included).\n");
}

typedef struct bench_result { double train_ips, infer_ips, train_mib; int steps; } bench_result;

/* Distinct synthetic batches in the data set (the PyTorch GPU peer keeps 8 on the device too). */
#define BENCH_BATCHES 8

/* Training: the data set lives in the session's memory (data_on_device: the GPU's for the gpu
 * row, as in the PyTorch peers), so the steps time the model, not the input pipeline. Warm-up:
 * 3 steps (the CUDA graph is captured at the third). Timed: whole passes over the 8 batches until
 * at least `steps` steps have run, by the wall clock around kiln_fit (the data set's upload at its
 * start included). Inference: as many predict passes over the same examples, after one warm-up. */
static kiln_status bench_one(const char *model, const char *device, int batch, int steps, bool adam, int threads,
                             uint64_t seed, bool infer, kiln_precision precision, bench_result *r) {
    bool cifar = !strcmp(model, "cifar_cnn");
    kiln_shape in = cifar ? KILN_SHAPE(32, 32, 3) : KILN_SHAPE(28, 28, 1);
    kiln_status st = KILN_OK;
    kiln_model *m = kiln_model_preset(model, in, 10);
    if (!m) return KILN_INVALID_ARGUMENT;
    kiln_model_set_seed(m, seed);
    kiln_dataset *ds = kiln_dataset_synthetic(in, 10, BENCH_BATCHES * (int64_t)batch, seed + 1);
    kiln_tensor *pred = NULL;
    if (!ds) { st = KILN_OUT_OF_MEMORY; goto out; }
    kiln_compile_opts co = { .optimizer = adam ? kiln_adam(1e-3) : kiln_momentum(0.01, 0.9, false),
                             .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, .from_logits = true,
                             .metrics = KILN_METRIC_ACCURACY, .device = device, .num_threads = threads, .precision = precision };
    bool gpu = !strcmp(device, "cuda");
    if (gpu) kiln_device_reset_peak(0);
    if ((st = kiln_compile(m, &co))) goto out;
    if ((st = kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 1, .batch_size = batch, .steps_per_epoch = 3, .data_on_device = true, .verbose = KILN_VERBOSE_SILENT })))
        goto out;
    int passes = (steps + BENCH_BATCHES - 1) / BENCH_BATCHES;
    r->steps = passes * BENCH_BATCHES;
    double t = cli_now();
    if ((st = kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 1 + passes, .initial_epoch = 1, .batch_size = batch, .data_on_device = true, .verbose = KILN_VERBOSE_SILENT })))
        goto out;
    r->train_ips = (double)r->steps * batch / (cli_now() - t);
    /* memory of training: the GPU allocator's peak (weights, optimizer slots, activations,
     * workspaces, the data set); on the CPU the session's planned step + variables */
    kiln_memory_stats ms;
    kiln_session *s = kiln_model_session(m);
    if (gpu && kiln_device_memory_stats(0, &ms) == KILN_OK) r->train_mib = (double)ms.peak / 1048576.0;
    else if (!gpu && s) r->train_mib = (double)(kiln_session_planned_bytes(s) + kiln_session_variable_bytes(s)) / 1048576.0;
    if (!infer) goto out;
    const kiln_tensor *x = kiln_dataset_x(ds);
    kiln_eval_opts eo = { .batch_size = batch };
    if ((st = kiln_predict(m, x, &eo, &pred))) goto out;
    t = cli_now();
    for (int i = 0; i < passes && !st; i++) {
        kiln_tensor_free(pred);
        pred = NULL;
        st = kiln_predict(m, x, &eo, &pred);
    }
    if (st) goto out;
    r->infer_ips = (double)passes * BENCH_BATCHES * batch / (cli_now() - t);
out:
    kiln_tensor_free(pred);
    kiln_dataset_free(ds);
    kiln_model_free(m);
    return st;
}

static int parse_precision(const char *v, kiln_precision *p) {
    if (kiln_precision_parse(v, p) == KILN_OK) return 0;
    fprintf(stderr, "kiln bench: --precision: %s\n", kiln_last_error());
    return 2;
}

int cmd_bench(int argc, char **argv) {
    const char *model = "cifar_cnn", *device = "all", *optimizer = "momentum";
    int batch = 128, steps = 0, threads = 0;
    uint64_t seed = 1;
    kiln_precision precision = KILN_PRECISION_FLOAT32;
    bool infer = true;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { bench_usage(stdout); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "kiln bench: option %s needs a value (see kiln bench --help)\n", o); return 2; }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(o, "--model")) model = v;
        else if (!strcmp(o, "--device")) device = v;
        else if (!strcmp(o, "--optimizer")) optimizer = v;
        else if (!strcmp(o, "--batch-size")) bad = cli_int32("bench", o, v, 1, 65536, &batch);
        else if (!strcmp(o, "--steps")) bad = cli_int32("bench", o, v, 1, 1000000, &steps);
        else if (!strcmp(o, "--threads")) bad = cli_int32("bench", o, v, 1, CLI_MAX_THREADS, &threads);
        else if (!strcmp(o, "--seed")) bad = cli_u64("bench", o, v, &seed);
        else if (!strcmp(o, "--precision")) bad = parse_precision(v, &precision);
        else if (!strcmp(o, "--infer") && (!strcmp(v, "yes") || !strcmp(v, "no"))) infer = !strcmp(v, "yes");
        else if (!strcmp(o, "--infer")) { fprintf(stderr, "kiln bench: --infer takes yes or no, not '%s'\n", v); return 2; }
        else { fprintf(stderr, "kiln bench: unknown option '%s' (see kiln bench --help)\n", o); return 2; }
        if (bad) return 2;
    }
    if (strcmp(optimizer, "momentum") && strcmp(optimizer, "adam")) {
        fprintf(stderr, "kiln bench: unknown optimizer '%s': use momentum or adam\n", optimizer);
        return 2;
    }
    if (strcmp(device, "all") && strcmp(device, "cpu") && strcmp(device, "gpu")) {
        fprintf(stderr, "kiln bench: --device must be all, cpu or gpu\n");
        return 2;
    }
    bool adam = !strcmp(optimizer, "adam");
    bool want_gpu = strcmp(device, "cpu") != 0, want_cpu = strcmp(device, "gpu") != 0;
    if (want_gpu && !kiln_gpu_available()) {
        if (!strcmp(device, "gpu")) { fprintf(stderr, "kiln bench: no GPU: %s\n", kiln_gpu_unavailable_reason()); return 1; }
        want_gpu = false;
    }
    printf("kiln bench: %s, batch %d, synthetic data resident on the device, %s, %d CPU threads, precision %s\n", model, batch,
           adam ? "Adam 1e-3" : "SGD momentum 0.9 lr 0.01", threads > 0 ? threads : kiln_get_num_threads(), kiln_precision_name(precision));
    printf("%-7s %14s %22s %14s %10s %10s %7s\n", "device", "train img/s", "epoch of 50,000 img", "infer img/s", "speedup", "train MiB",
           "steps");
    bench_result cpu = { 0 }, gpu = { 0 };
    const char *names[2] = { "cpu", "cuda" };
    bench_result *res[2] = { &cpu, &gpu };
    bool want[2] = { want_cpu, want_gpu };
    for (int k = 0; k < 2; k++) {
        if (!want[k]) continue;
        int n_steps = steps > 0 ? steps : k ? 392 : 40;   /* a GPU step is quick: about one epoch of 50,000 */
        if (bench_one(model, names[k], batch, n_steps, adam, threads, seed, infer, precision, res[k]) != KILN_OK) {
            fprintf(stderr, "kiln bench: %s: %s\n", names[k], kiln_last_error());
            return 1;
        }
        char speed[32] = "-";
        if (k == 1 && cpu.train_ips > 0) snprintf(speed, sizeof speed, "%.1fx", res[k]->train_ips / cpu.train_ips);
        else if (k == 0) snprintf(speed, sizeof speed, "1.0x");
        printf("%-7s %14.1f %20.1f s %14.1f %10s %10.1f %7d\n", k ? "gpu" : "cpu", res[k]->train_ips, 50000.0 / res[k]->train_ips,
               res[k]->infer_ips, speed, res[k]->train_mib, res[k]->steps);
        printf("RESULT peer=kiln model=%s device=%s train_ips=%.1f infer_ips=%.1f train_mib=%.1f steps=%d\n", model, k ? "gpu" : "cpu",
               res[k]->train_ips, res[k]->infer_ips, res[k]->train_mib, res[k]->steps);
        fflush(stdout);
    }
    if (!want_gpu && strcmp(device, "cpu")) printf("gpu: not measured (%s)\n", kiln_gpu_unavailable_reason());
    return 0;
}
