/* kiln: the command-line tool. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/data.h"
#include "kiln/io.h"
#include "tools/commands.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

static void usage(FILE *f) {
    fprintf(f,
        "kiln %s - train neural networks on the GPU or the CPU\n\n"
        "usage: kiln <command> [options]\n\n"
        "commands:\n"
        "  train        train a model (with no options: the default CNN on Fashion-MNIST)\n"
        "  eval         measure a saved model's accuracy on the test set\n"
        "  predict      show a saved model's predictions for a few test images\n"
        "  summary      print a model's layers, output shapes and parameter counts\n"
        "  devices      list the CPU and GPUs Kiln can use, with memory and versions\n"
        "  bench        time training and inference on each device (CPU vs GPU table)\n"
        "  --help       show this help (kiln <command> --help for a command's options)\n"
        "  --version    show the version\n\n"
        "examples:\n"
        "  kiln train                                  # fashion_cnn, 5 epochs, prints test accuracy\n"
        "  kiln train --epochs 2 --save model.safetensors --history history.csv\n"
        "  kiln eval --load model.safetensors\n"
        "  kiln train --model cifar_cnn --data synthetic --epochs 1   # throughput run\n", KILN_VERSION);
}

static void train_usage(FILE *f) {
    fprintf(f,
        "usage: kiln train [options]\n\n"
        "Trains a model and prints its accuracy on the test set and the time it took.\n"
        "With no options: model fashion_cnn, Adam lr 0.001, batch 64, 5 epochs, on the\n"
        "Fashion-MNIST files in " DEFAULT_DATA ".\n\n"
        "options:\n"
        "  --data DIR          folder with the MNIST-layout files (train-images-idx3-ubyte.gz, ...)\n"
        "                      or 'synthetic' for random data of the model's input shape\n"
        "                      (default " DEFAULT_DATA ")\n"
        "  --model NAME        fashion_cnn (default), mlp, cifar_cnn (see: kiln summary --model NAME)\n"
        "  --epochs N          total number of epochs (default 5); with --load, training continues\n"
        "                      from the saved epoch up to N\n"
        "  --batch-size N      examples per training step (default 64)\n"
        "  --optimizer NAME    sgd, momentum (0.9), adam (default), adamw, rmsprop, adagrad\n"
        "  --lr X              learning rate (default 0.001 for adam/adamw/rmsprop, 0.01 otherwise)\n"
        "  --schedule NAME     learning-rate schedule: constant (default), step, exponential,\n"
        "                      cosine, one-cycle\n"
        "  --seed N            seed for weights, shuffling and dropout (default 1)\n"
        "  --threads N         CPU threads (default: all cores)\n"
        "  --device D          auto (default), cpu, ref, cuda\n"
        "  --save PATH         save a checkpoint (safetensors, with optimizer state) after each epoch\n"
        "  --load PATH         start from a checkpoint: weights, optimizer state and epoch (resume)\n"
        "  --history FILE.csv  write one row per epoch: epoch,loss,accuracy,val_loss,val_accuracy,\n"
        "                      lr,seconds,images_per_sec (val_* on the test set)\n"
        "  --limit N           train on the first N training examples only (quick tries)\n"
        "  --verbose N         0 quiet, 1 progress bar (default; one line per epoch when the output\n"
        "                      is not a terminal), 2 one line per epoch\n");
}

static void eval_usage(FILE *f) {
    fprintf(f,
        "usage: kiln eval --load PATH [--data DIR] [--batch-size N] [--threads N]\n\n"
        "Loads a checkpoint saved by 'kiln train --save PATH' and prints the loss and accuracy on\n"
        "every example of the test set. The model is the one named in the checkpoint\n"
        "(override with --model NAME).\n\n"
        "options:\n"
        "  --load PATH         the checkpoint (required)\n"
        "  --data DIR          test data folder, or 'synthetic' (default " DEFAULT_DATA ")\n"
        "  --model NAME        model to build if the checkpoint does not name one\n"
        "  --batch-size N      examples per step (default 64)\n"
        "  --threads N         CPU threads (default: all cores)\n"
        "  --device D          auto (default), cpu, ref, cuda\n");
}

static void predict_usage(FILE *f) {
    fprintf(f,
        "usage: kiln predict --load PATH [--data DIR] [--count N]\n\n"
        "Loads a checkpoint and prints the predicted class, the true label and the confidence for\n"
        "the first N test images.\n\n"
        "options:\n"
        "  --load PATH         the checkpoint (required)\n"
        "  --data DIR          test data folder, or 'synthetic' (default " DEFAULT_DATA ")\n"
        "  --count N           how many test images (default 10)\n"
        "  --model NAME        model to build if the checkpoint does not name one\n"
        "  --threads N         CPU threads (default: all cores)\n");
}

static void summary_usage(FILE *f) {
    fprintf(f,
        "usage: kiln summary [--model NAME]\n\n"
        "Prints the layers of a built-in model with their output shapes and parameter counts.\n"
        "Models: %s (default fashion_cnn).\n", kiln_model_preset_names());
}

typedef struct args {
    const char *data, *model, *optimizer, *save, *load, *history, *device, *schedule;
    int epochs, batch, threads, verbose, count;
    long long limit;
    double lr;
    uint64_t seed;
    bool help;
} args;

static int parse(int argc, char **argv, args *a, const char *cmd) {
    for (int i = 2; i < argc; i++) {
        char *opt = argv[i], *val = NULL;
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) { a->help = true; continue; }
        if (strncmp(opt, "--", 2)) { fprintf(stderr, "kiln %s: unexpected argument '%s' (see kiln %s --help)\n", cmd, opt, cmd); return 2; }
        char *eq = strchr(opt, '=');
        char name[64];
        if (eq) { snprintf(name, sizeof name, "%.*s", (int)(eq - opt), opt); val = eq + 1; }
        else {
            snprintf(name, sizeof name, "%s", opt);
            if (i + 1 >= argc) { fprintf(stderr, "kiln %s: option %s needs a value (see kiln %s --help)\n", cmd, name, cmd); return 2; }
            val = argv[++i];
        }
        char *end = NULL;
#define INT_OPT(flag, field) else if (!strcmp(name, flag)) { long v = strtol(val, &end, 10); \
            if (*end || v < 0) { fprintf(stderr, "kiln %s: %s wants a non-negative whole number, got '%s'\n", cmd, flag, val); return 2; } a->field = (int)v; }
        if (!strcmp(name, "--data")) a->data = val;
        else if (!strcmp(name, "--model")) a->model = val;
        else if (!strcmp(name, "--optimizer")) a->optimizer = val;
        else if (!strcmp(name, "--save")) a->save = val;
        else if (!strcmp(name, "--load")) a->load = val;
        else if (!strcmp(name, "--history")) a->history = val;
        else if (!strcmp(name, "--device")) a->device = val;
        else if (!strcmp(name, "--schedule")) a->schedule = val;
        INT_OPT("--epochs", epochs)
        INT_OPT("--batch-size", batch)
        INT_OPT("--threads", threads)
        INT_OPT("--verbose", verbose)
        INT_OPT("--count", count)
        else if (!strcmp(name, "--limit")) { a->limit = strtoll(val, &end, 10); if (*end || a->limit <= 0) { fprintf(stderr, "kiln %s: --limit wants a positive number, got '%s'\n", cmd, val); return 2; } }
        else if (!strcmp(name, "--seed")) { a->seed = strtoull(val, &end, 10); if (*end) { fprintf(stderr, "kiln %s: --seed wants a number, got '%s'\n", cmd, val); return 2; } }
        else if (!strcmp(name, "--lr")) { a->lr = strtod(val, &end); if (*end || !(a->lr > 0)) { fprintf(stderr, "kiln %s: --lr wants a positive number, got '%s'\n", cmd, val); return 2; } }
        else { fprintf(stderr, "kiln %s: unknown option '%s' (see kiln %s --help)\n", cmd, name, cmd); return 2; }
#undef INT_OPT
    }
    return 0;
}

static kiln_shape preset_input(const char *model) {
    return !strcmp(model, "cifar_cnn") ? KILN_SHAPE(32, 32, 3) : KILN_SHAPE(28, 28, 1);
}

/* Loads train/test (either may be NULL) from a folder or makes synthetic data. */
static int load_data(const char *dir, const char *model, kiln_dataset **train, kiln_dataset **test, uint64_t seed) {
    if (!strcmp(dir, "synthetic")) {
        bool cifar = !strcmp(model, "cifar_cnn");
        kiln_shape s = preset_input(model);
        if (train) *train = kiln_dataset_synthetic(s, 10, cifar ? 50000 : 60000, seed + 1);
        if (test) *test = kiln_dataset_synthetic(s, 10, 10000, seed + 2);
        if ((train && !*train) || (test && !*test)) { fprintf(stderr, "kiln: cannot make synthetic data: %s\n", kiln_last_error()); return 1; }
        return 0;
    }
    if (kiln_mnist_load(dir, train, test) != KILN_OK) { fprintf(stderr, "kiln: %s\n", kiln_last_error()); return 1; }
    return 0;
}

static kiln_dataset *take_first(kiln_dataset *d, long long n) {
    if (n <= 0 || n >= kiln_dataset_size(d)) return d;
    const kiln_tensor *x = kiln_dataset_x(d), *y = kiln_dataset_y(d);
    kiln_tensor vx = *x, vy = *y;
    vx.shape.dim[0] = n;
    vy.shape.dim[0] = n;
    vx.owns_data = vy.owns_data = false;
    kiln_dataset *s = kiln_dataset_from_tensors(&vx, &vy, kiln_dataset_num_classes(d));
    if (!s) return d;
    kiln_dataset_free(d);
    return s;
}

static int parse_optimizer(const char *name, double lr, kiln_optimizer *o) {
    if (!strcmp(name, "sgd")) *o = kiln_sgd(lr > 0 ? lr : 0.01);
    else if (!strcmp(name, "momentum")) *o = kiln_momentum(lr > 0 ? lr : 0.01, 0.9, false);
    else if (!strcmp(name, "adam")) *o = kiln_adam(lr > 0 ? lr : 1e-3);
    else if (!strcmp(name, "adamw")) *o = kiln_adamw(lr > 0 ? lr : 1e-3, 0);
    else if (!strcmp(name, "rmsprop")) *o = kiln_rmsprop(lr > 0 ? lr : 1e-3);
    else if (!strcmp(name, "adagrad")) *o = kiln_adagrad(lr > 0 ? lr : 0.01);
    else { fprintf(stderr, "kiln train: unknown optimizer '%s': use sgd, momentum, adam, adamw, rmsprop or adagrad\n", name); return 2; }
    return 0;
}

static int parse_schedule(const char *name, kiln_lr_schedule *s) {
    memset(s, 0, sizeof *s);
    if (!name || !strcmp(name, "constant")) s->kind = KILN_LR_CONSTANT;
    else if (!strcmp(name, "step")) { s->kind = KILN_LR_STEP; s->step_epochs = 2; s->gamma = 0.5; }
    else if (!strcmp(name, "exponential")) s->kind = KILN_LR_EXPONENTIAL;
    else if (!strcmp(name, "cosine")) { s->kind = KILN_LR_COSINE; s->warmup_epochs = 0.2; }
    else if (!strcmp(name, "one-cycle") || !strcmp(name, "onecycle")) s->kind = KILN_LR_ONE_CYCLE;
    else { fprintf(stderr, "kiln train: unknown schedule '%s': use constant, step, exponential, cosine or one-cycle\n", name); return 2; }
    return 0;
}

static kiln_compile_opts compile_opts(const args *a, kiln_optimizer opt, kiln_lr_schedule sched) {
    return (kiln_compile_opts){ .optimizer = opt, .schedule = sched, .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                .from_logits = true, .metrics = KILN_METRIC_ACCURACY, .device = a->device,
                                .num_threads = a->threads };
}

static int fail(const char *cmd, int rc) { fprintf(stderr, "kiln %s: %s\n", cmd, kiln_last_error()); return rc; }

static int cmd_train(args *a) {
    if (a->help) { train_usage(stdout); return 0; }
    kiln_optimizer opt;
    kiln_lr_schedule sched;
    if (parse_optimizer(a->optimizer, a->lr, &opt) || parse_schedule(a->schedule, &sched)) return 2;
    if (a->threads) kiln_set_num_threads(a->threads);
    kiln_dataset *train = NULL, *test = NULL;
    if (load_data(a->data, a->model, &train, &test, a->seed)) return 1;
    train = take_first(train, a->limit);
    int rc = 0;
    kiln_model *m = kiln_model_preset(a->model, kiln_dataset_example_shape(train), kiln_dataset_num_classes(train));
    if (!m) { rc = fail("train", 2); goto out; }
    kiln_model_set_seed(m, a->seed);
    kiln_compile_opts co = compile_opts(a, opt, sched);
    if (kiln_compile(m, &co) != KILN_OK) { rc = fail("train", 1); goto out; }
    int initial = 0;
    if (a->load) {
        if (kiln_model_load(m, a->load) != KILN_OK) { rc = fail("train", 1); goto out; }
        initial = kiln_model_epoch(m);
        printf("Resuming from %s at epoch %d\n", a->load, initial);
    }
    kiln_callback cbs[2];
    int n_cb = 0;
    if (a->save) cbs[n_cb++] = kiln_callback_model_checkpoint(a->save, "loss", false);
    if (a->history) cbs[n_cb++] = kiln_callback_csv_logger(a->history);
    printf("Training %s on %s: %lld training / %lld test examples, %s lr %g, batch %d, %d epoch%s\n",
           a->model, a->data, (long long)kiln_dataset_size(train), (long long)kiln_dataset_size(test),
           a->optimizer, opt.lr, a->batch, a->epochs, a->epochs == 1 ? "" : "s");
    fflush(stdout);
    double t0 = 0;
    {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); t0 = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    }
    kiln_status st = KILN_OK;
    if (initial < a->epochs)
        st = kiln_fit(m, train, &(kiln_fit_opts){ .epochs = a->epochs, .initial_epoch = initial, .batch_size = a->batch,
                                                  .shuffle_seed = a->seed, .validation = test, .verbose = a->verbose,
                                                  .callbacks = cbs, .n_callbacks = n_cb });
    else printf("The checkpoint has already trained %d of %d epochs: evaluating only\n", initial, a->epochs);
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    double secs = (double)ts.tv_sec + ts.tv_nsec * 1e-9 - t0;
    if (st != KILN_OK) { rc = fail("train", 1); goto out; }
    int n_hist;
    const kiln_logs *h = kiln_model_history(m, &n_hist);
    kiln_eval_result r;
    double acc, loss;
    if (n_hist > 0 && h[n_hist - 1].has_val && h[n_hist - 1].epoch == a->epochs) { acc = h[n_hist - 1].val_accuracy; loss = h[n_hist - 1].val_loss; }
    else {
        if (kiln_evaluate(m, test, &(kiln_eval_opts){ .batch_size = a->batch }, &r) != KILN_OK) { rc = fail("train", 1); goto out; }
        acc = r.accuracy; loss = r.loss;
    }
    double ips = 0, train_secs = 0;
    for (int i = 0; i < n_hist; i++) train_secs += h[i].seconds;
    if (n_hist > 0 && train_secs > 0) { for (int i = 0; i < n_hist; i++) ips += h[i].images_per_sec * h[i].seconds; ips /= train_secs; }
    printf("Test accuracy: %.2f%% (loss %.4f, %lld examples)\n", acc * 100, loss, (long long)kiln_dataset_size(test));
    printf("Time: %.1f s for %d epoch%s (training loop %.1f s, %.0f images/s)\n", secs, n_hist, n_hist == 1 ? "" : "s", train_secs, ips);
    if (a->save) printf("Saved: %s\n", a->save);
    if (a->history) printf("History: %s\n", a->history);
out:
    kiln_model_free(m);
    kiln_dataset_free(train);
    kiln_dataset_free(test);
    return rc;
}

/* Builds the model a checkpoint was saved from and loads it. */
static kiln_model *model_from_checkpoint(const args *a, const char *cmd, kiln_shape data_shape, int classes) {
    kiln_safetensors *f = NULL;
    if (kiln_safetensors_load(a->load, &f) != KILN_OK) { fail(cmd, 1); return NULL; }
    const char *saved = kiln_safetensors_meta(f, "kiln.model");
    char name[96];
    snprintf(name, sizeof name, "%s", a->model ? a->model : saved ? saved : "fashion_cnn");
    kiln_safetensors_free(f);
    kiln_model *m = kiln_model_preset(name, data_shape, classes);
    if (!m) { fail(cmd, 1); return NULL; }
    kiln_compile_opts co = compile_opts(a, kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
    if (kiln_compile(m, &co) != KILN_OK || kiln_model_load(m, a->load) != KILN_OK) { fail(cmd, 1); kiln_model_free(m); return NULL; }
    return m;
}

/* The model a checkpoint names (kiln.model), when --model is not given. */
static int peek_model(args *a, const char *cmd, char *buf, size_t n) {
    if (a->model) return 0;
    kiln_safetensors *f = NULL;
    if (kiln_safetensors_load(a->load, &f) != KILN_OK) return fail(cmd, 1);
    const char *saved = kiln_safetensors_meta(f, "kiln.model");
    snprintf(buf, n, "%s", saved ? saved : "fashion_cnn");
    kiln_safetensors_free(f);
    a->model = buf;
    return 0;
}

static int cmd_eval(args *a) {
    if (a->help) { eval_usage(stdout); return 0; }
    if (!a->load) { fprintf(stderr, "kiln eval: --load PATH is required (a checkpoint from kiln train --save PATH)\n"); return 2; }
    if (a->threads) kiln_set_num_threads(a->threads);
    char mname[96];
    if (peek_model(a, "eval", mname, sizeof mname)) return 1;
    kiln_dataset *test = NULL;
    if (load_data(a->data, a->model, NULL, &test, a->seed)) return 1;
    int rc = 0;
    kiln_model *m = model_from_checkpoint(a, "eval", kiln_dataset_example_shape(test), kiln_dataset_num_classes(test));
    kiln_eval_result r;
    if (!m) rc = 1;
    else if (kiln_evaluate(m, test, &(kiln_eval_opts){ .batch_size = a->batch }, &r) != KILN_OK) rc = fail("eval", 1);
    else printf("%s (epoch %d) on %s: test accuracy %.2f%%, loss %.4f, %lld examples, %.1f s\n", kiln_model_name(m), kiln_model_epoch(m),
                a->data, r.accuracy * 100, r.loss, (long long)r.count, r.seconds);
    kiln_model_free(m);
    kiln_dataset_free(test);
    return rc;
}

static const char *fashion_names[10] = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" };

static int cmd_predict(args *a) {
    if (a->help) { predict_usage(stdout); return 0; }
    if (!a->load) { fprintf(stderr, "kiln predict: --load PATH is required (a checkpoint from kiln train --save PATH)\n"); return 2; }
    if (a->threads) kiln_set_num_threads(a->threads);
    char mname[96];
    if (peek_model(a, "predict", mname, sizeof mname)) return 1;
    kiln_dataset *test = NULL;
    if (load_data(a->data, a->model, NULL, &test, a->seed)) return 1;
    int count = a->count > 0 ? a->count : 10, rc = 0;
    if (count > kiln_dataset_size(test)) count = (int)kiln_dataset_size(test);
    bool names = strstr(a->data, "fashion") != NULL && kiln_dataset_num_classes(test) == 10;
    kiln_model *m = model_from_checkpoint(a, "predict", kiln_dataset_example_shape(test), kiln_dataset_num_classes(test));
    kiln_tensor *out = NULL;
    if (!m) { rc = 1; goto done; }
    const kiln_tensor *x = kiln_dataset_x(test), *y = kiln_dataset_y(test);
    kiln_tensor vx = *x;
    vx.shape.dim[0] = count;
    vx.owns_data = false;
    if (kiln_predict(m, &vx, &(kiln_eval_opts){ .batch_size = a->batch }, &out) != KILN_OK) { rc = fail("predict", 1); goto done; }
    int64_t c = out->shape.dim[1];
    int right = 0;
    printf("%6s  %-14s %-14s %s\n", "image", "predicted", "label", "confidence");
    for (int i = 0; i < count; i++) {
        const float *r = (const float *)out->data + (int64_t)i * c;
        int64_t best = 0;
        double mx = r[0], sum = 0;
        for (int64_t j = 1; j < c; j++) if (r[j] > r[best]) best = j;
        mx = r[best];
        for (int64_t j = 0; j < c; j++) sum += exp(r[j] - mx);
        int label = (int)kiln_tensor_get(y, i);
        right += best == label;
        char p[32], l[32];
        if (names) { snprintf(p, sizeof p, "%s", fashion_names[best]); snprintf(l, sizeof l, "%s", fashion_names[label]); }
        else { snprintf(p, sizeof p, "%lld", (long long)best); snprintf(l, sizeof l, "%d", label); }
        printf("%6d  %-14s %-14s %5.1f%%%s\n", i, p, l, 100.0 / sum, best == label ? "" : "   <- wrong");
    }
    printf("%d of %d correct\n", right, count);
done:
    kiln_tensor_free(out);
    kiln_model_free(m);
    kiln_dataset_free(test);
    return rc;
}

static int cmd_summary(args *a) {
    if (a->help) { summary_usage(stdout); return 0; }
    kiln_model *m = kiln_model_preset(a->model, (kiln_shape){ 0 }, 10);
    if (!m) return fail("summary", 2);
    kiln_model_summary(m, stdout);
    kiln_model_free(m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return argc < 2 ? 1 : 0;
    }
    if (!strcmp(argv[1], "--version")) { printf("kiln %s\n", KILN_VERSION); return 0; }
    if (!strcmp(argv[1], "devices")) return cmd_devices(argc, argv);
    if (!strcmp(argv[1], "bench")) return cmd_bench(argc, argv);
    args a = { .data = DEFAULT_DATA, .model = NULL, .optimizer = "adam", .epochs = 5, .batch = 64, .verbose = 1, .seed = 1 };
    const char *cmd = argv[1];
    int (*fn)(args *) = NULL;
    if (!strcmp(cmd, "train")) fn = cmd_train;
    else if (!strcmp(cmd, "eval")) fn = cmd_eval;
    else if (!strcmp(cmd, "predict")) fn = cmd_predict;
    else if (!strcmp(cmd, "summary")) fn = cmd_summary;
    else { fprintf(stderr, "kiln: unknown command '%s' (see kiln --help)\n", cmd); return 2; }
    int rc = parse(argc, argv, &a, cmd);
    if (rc) return rc;
    if (fn != cmd_eval && fn != cmd_predict && !a.model) a.model = "fashion_cnn";
    return fn(&a);
}
