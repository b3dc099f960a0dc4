/* kiln train: opens the data, builds (or loads) and compiles the model, builds the input
 * pipelines and callbacks, prints what it will do, fits, and reports the result. Each step is a
 * function over one train_run; train_run_free releases what the steps made, whichever failed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/data.h"
#include "kiln/pipeline.h"
#include "kiln/device.h"
#include "kiln/io.h"
#include "tools/commands.h"
#include "tools/cli_ctx.h"
#include "tools/cli_data.h"
#include "tools/cli_dist.h"
#include "tools/cli_help.h"
#include "tools/cli_model.h"
#include "tools/cli_source.h"
#include "tools/cli_train_opts.h"

static void train_usage(FILE *f) {
    fprintf(f,
        "usage: kiln train [options]\n\n"
        "Trains a model and prints its accuracy on the test set and the time it took.\n"
        "With no options: model fashion_cnn, Adam lr 0.001, batch 64, 5 epochs, on the\n"
        "Fashion-MNIST files in " CLI_DEFAULT_DATA ".\n"
        "The examples are shuffled each epoch, optionally augmented, batched and prepared on\n"
        "worker threads a few batches ahead of the training step (--prefetch, --workers).\n\n"
        "options:\n"
        DATA_HELP
        TEXT_HELP
        "  --model NAME        fashion_cnn (default), mlp, cifar_cnn, lenet5, resnet20, resnet56,\n"
        "                      inception, fast_cifar, gpt_char, gpt2 (see: kiln summary --model NAME)\n"
        MODEL_FILE_HELP
        "                      (with --load: the file gives the layers, the checkpoint the weights)\n"
        LOSS_HELP
        "  --epochs N          total number of epochs (default 5, at most 1000000; 0 evaluates only);\n"
        "                      with --load, training continues from the saved epoch up to N\n"
        "  --batch-size N      examples per training step (default 64, 1..1048576); a last smaller batch of an\n"
        "                      epoch is skipped in training (the test set is evaluated whole)\n"
        "  --batch-size auto   on a GPU: the largest batch (a multiple of 8) whose planned training step\n"
        "                      fits in the GPU's free memory (or --gpu-memory-limit). On the CPU: the\n"
        "                      largest power of two up to 256 that fits in half the physical memory\n"
        "                      (bigger batches are no faster per example there and make fewer updates\n"
        "                      per epoch); with --memory-limit, the largest batch that fits in it.\n"
        "                      Printed before training starts\n"
        "  --accumulate N      gradient accumulation: run each batch as N micro-batches of batch/N (the\n"
        "                      batch must be divisible by N) and make ONE update from their averaged\n"
        "                      gradients: the same update as the whole batch, with the activation memory\n"
        "                      of a micro-batch (see kiln summary --batch-size B --accumulate N). Batch\n"
        "                      norm sees micro-batch statistics\n"
        "  --memory-limit MIB  --batch-size auto on the CPU: the memory the step may plan for\n"
        "  --debug-numerics    check every op's output for NaN/Inf as each step runs (TensorFlow's\n"
        "                      enable_check_numerics; slow): the first one stops training, naming the\n"
        "                      epoch, step, op and layer, before that step's update. Without it a NaN/Inf\n"
        "                      loss stops training too, naming the epoch, step and the first layer whose\n"
        "                      weights went non-finite\n"
        "  --optimizer NAME    sgd, momentum (0.9), adam (default), adamw, rmsprop, adagrad\n"
        "  --momentum M        SGD's momentum, 0 <= M < 1 (Keras's SGD(momentum=M); --optimizer sgd: 0,\n"
        "                      momentum: 0.9)\n"
        "  --nesterov          SGD with Nesterov momentum (momentum 0.9 unless --momentum)\n"
        "  --lr X              learning rate (default 0.001 for adam/adamw/rmsprop, 0.01 otherwise)\n"
        "  --schedule NAME     learning-rate schedule (per epoch, from --lr; also --lr-schedule): constant (default);\n"
        "                      step (lr x --lr-step-factor every --lr-step-epochs epochs); exponential\n"
        "                      (lr x 0.96 per epoch); cosine (linear warm-up over --warmup-epochs, then\n"
        "                      cosine decay to 0 at the last epoch); one-cycle (up from lr/25 over the\n"
        "                      first 30%% of training, then down to lr/250000)\n"
        "  --lr-step-epochs N  step: epochs between drops (default 2)\n"
        "  --lr-step-factor F  step: the factor of each drop, 0 < F <= 1 (default 0.5)\n"
        "  --warmup-epochs E   cosine: warm-up length in epochs, may be fractional (default 0.2)\n"
        "  --warmup-steps N    cosine: warm-up length in optimizer steps instead (nanoGPT's warmup_iters)\n"
        "  --weight-decay W    decoupled weight decay for sgd, momentum, adam and adamw (default: 0;\n"
        "                      adamw 0.004)\n"
        "  --clipnorm C        clip the gradients to global norm C, C > 0 (default: no clipping; also\n"
        "                      --clip-norm)\n"
        "  --early-stopping P  stop when --monitor has not improved by more than --min-delta for P\n"
        "                      epochs in a row (default: off; the last epoch's weights are kept)\n"
        "  --monitor NAME      what --early-stopping and --save-best watch: val_loss (default),\n"
        "                      val_accuracy, loss, accuracy\n"
        "  --min-delta D       --early-stopping: the least change that counts as improving (default 0)\n"
        "  --save-best         with --save: write the checkpoint only when --monitor improves\n"
        "                      (Keras save_best_only); default: after every epoch\n"
        "  --seed N            seed for weights, shuffling, augmentation and dropout (default 1)\n"
        "  --augment LIST      random augmentation of the training images, comma-separated:\n"
        "                        flip    mirror left-right with probability 1/2\n"
        "                        crop    pad 4 pixels on each side (zeros), crop back to the original\n"
        "                                size at a random offset (the usual CIFAR recipe)\n"
        "                        cutout  blank a random square of a quarter of the image side\n"
        "                      e.g. --augment flip,crop (default: none; the test set is never augmented)\n"
        PRECISION_HELP
        "  --prefetch N        batches prepared ahead of the training step (default 2; 0 prepares\n"
        "                      each batch on the training thread when it is needed)\n"
        "  --workers N         threads preparing batches when prefetching (default 1)\n"
        "  --validation-split F  hold out the fraction F of the training data (every 1/F-th example,\n"
        "                      so every class) for val_* and the final accuracy, instead of the test\n"
        "                      split (default: 0.1 for an image folder without a test split, else off)\n"
        "  --data-on-device    keep the whole training set in the session's memory (the GPU's when\n"
        "                      the model runs there): each step gathers its batch there, and\n"
        "                      --augment crop,flip runs there too; only the batch's example\n"
        "                      indices travel per step\n"
        "  --threads N         CPU threads for the model (default: all cores; at most 1024)\n"
        "  --device D          auto (default: the GPU when one answers, else the CPU), cpu,\n"
        "                      gpu (or cuda), ref (the plain-C reference kernels; slow)\n"
        "  --log-device-placement  print each op's device once, e.g. dense/MatMul: (MatMul): /device:GPU:0\n"
        "  --gpu-memory-limit MIB  use at most this much GPU memory (default: grow as needed)\n"
        "  --save PATH         save a checkpoint (safetensors, with optimizer state) after each epoch,\n"
        "                      replacing PATH atomically; Keras placeholders make one file per epoch:\n"
        "                      {epoch} (1-based), {epoch:02d}, {loss}, {accuracy}, {val_loss},\n"
        "                      {val_accuracy} (e.g. 'ckpt-{epoch:03d}-{val_loss:.3f}.safetensors');\n"
        "                      {{ and }} are literal braces, anything else (%%d too) is literal.\n"
        "                      Checked to be writable before training starts\n"
        "  --load PATH         start from a checkpoint: weights, optimizer state and epoch (resume);\n"
        "                      missing or other-optimizer state is reset with a warning\n"
        "  --strict-load       with --load: refuse a checkpoint without this optimizer's state\n"
        "  --tensorboard DIR   write TensorBoard logs as Keras' TensorBoard callback does: DIR/train and\n"
        "                      DIR/validation event files with epoch_loss, epoch_accuracy and\n"
        "                      epoch_learning_rate per epoch; view them with: tensorboard --logdir DIR\n"
        "  --tensorboard-every N  also write batch_loss, batch_accuracy, batch_learning_rate every N\n"
        "                      training steps (default: per epoch only)\n"
        "  --history FILE.csv  write one row per epoch: epoch,loss,accuracy,val_loss,val_accuracy,\n"
        "                      lr,seconds,images_per_sec (val_* on the test set; images_per_sec:\n"
        "                      training images per second of the training loop); checked to be\n"
        "                      writable before training; with --load, rows after the checkpoint's\n"
        "                      epoch are dropped and new rows appended\n"
        "  --limit N           train on the first N training examples only (quick tries)\n"
        "  --steps-per-epoch N at most N training steps (batches) an epoch\n"
        "  --verbose N         0 quiet, 1 progress bar (default; one line per epoch when the output\n"
        "                      is not a terminal), 2 one line per epoch\n"
        "  --gpus N|all        one process, several GPUs (MirroredStrategy): a replica of the training\n"
        "                      step on each of GPUs 0..N-1, each on batch-size / N rows of every batch,\n"
        "                      gradients averaged with NCCL, the same update everywhere\n"
        "  --devices LIST      the same on the GPUs listed, e.g. gpu:0,gpu:1 (the first must be gpu:0)\n"
        "  --sync-batchnorm    with mpirun or --gpus: batch norm layers use the mean and variance of the\n"
        "                      whole global batch (every replica's rows), not each replica's own (the\n"
        "                      default)\n"
        "  --bucket-kb N       with mpirun or --gpus: all-reduce the gradients in buckets of N KiB\n"
        "                      (default 4096), each started as soon as the backward pass has written\n"
        "                      it; smaller buckets start earlier (more overlap), in more calls\n\n"
        "examples:\n"
        "  kiln train\n"
        "  kiln train --model cifar_cnn --data cifar10:/data/cifar-10-batches-bin --augment flip,crop \\\n"
        "             --optimizer momentum --lr 0.01 --batch-size 128 --epochs 30 --workers 2\n"
        "  kiln train --model cifar_cnn --data images:photos/ --validation-split 0.2\n"
        "  kiln train --model mlp --data csv:train.csv --loss binary_crossentropy --tensorboard logs\n"
        "  kiln train --model gpt_char --data text:/usr/share/games/fortunes/fortunes --block-size 64 \\\n"
        "             --optimizer adamw --warmup-steps 100 --clip-norm 1 --save gpt.safetensors\n"
        "  mpirun -np 4 kiln train --model cifar_cnn --data cifar10:DIR --batch-size 256\n\n"
        "several processes or machines (MPI): start kiln train with mpirun; --batch-size is then the\n"
        "global batch, each of the N processes trains on its 1/N of it and the gradients are\n"
        "all-reduced, so N processes train as one with that batch; rank 0 prints and writes files;\n"
        "each process takes cores / processes-per-machine threads and, with several GPUs, the GPU of\n"
        "its local rank; a failing process ends the whole job. Details: docs/distributed.md\n");
}

/* What one run of kiln train holds between its steps. */
typedef struct train_run {
    cli_ctx *c;
    kiln_optimizer opt;
    kiln_lr_schedule sched;
    data_src ds;
    kiln_augment_opts aug;
    int64_t n_train, n_test;
    int64_t epoch_windows;     /* --data text: windows an epoch */
    kiln_model *m;
    kiln_compile_opts co;
    int initial;                  /* the epoch training starts from (--load resumes) */
    kiln_data *tp, *vp;           /* the training and evaluation pipelines */
    kiln_callback cbs[4];
    int n_cb;
} train_run;

static void train_run_free(train_run *t) {
    kiln_model_free(t->m);
    kiln_data_free(t->tp);
    kiln_data_free(t->vp);
    cli_data_src_free(&t->ds);
}

/* The options that need no data, and the process-wide settings (threads, GPU memory): 0 or 2. */
static int check_options(train_run *t) {
    const args *a = &t->c->a;
    if (cli_parse_optimizer(a, &t->opt) || cli_parse_schedule(a, &t->sched) || cli_check_callbacks(a)) return 2;
    if (a->batch < 1) { fprintf(stderr, "kiln train: --batch-size must be at least 1\n"); return 2; }
    if (a->accumulate > 1 && !a->batch_auto && a->batch % a->accumulate) {
        fprintf(stderr, "kiln train: --batch-size %d is not divisible by --accumulate %d: each step runs %d micro-batches of equal size "
                "(e.g. --batch-size %d)\n", a->batch, a->accumulate, a->accumulate, (a->batch / a->accumulate + 1) * a->accumulate);
        return 2;
    }
    if (a->data_on_device && !kiln_gpu_available())
        fprintf(stderr, "kiln train: --data-on-device: no GPU (%s); the data set lives in the session's host memory, "
                "gathered and augmented by the graph as it would be on the GPU\n", kiln_gpu_unavailable_reason());
    if (a->threads) kiln_set_num_threads(a->threads);
    if (a->gpu_mem_mib > 0) {
        if (!kiln_gpu_available()) fprintf(stderr, "kiln train: --gpu-memory-limit: no GPU (%s): ignored\n", kiln_gpu_unavailable_reason());
        else if (kiln_device_set_memory_options(0, &(kiln_memory_options){ .limit_bytes = (size_t)a->gpu_mem_mib << 20, .grow = true }) != KILN_OK)
            return cli_fail("train", 2);
    }
    return 0;
}

/* The model for the data (built-in, --model-file or the Keras JSON one), seeded, named classes,
 * compiled; --load's weights, optimizer state and epoch; --batch-size auto. 0, or the exit status. */
static int build_model(train_run *t) {
    cli_ctx *c = t->c;
    args *a = &c->a;
    kiln_shape shape = kiln_data_example_shape(t->ds.train);
    int rc;
    if ((rc = cli_onnx_file(a) ? 0 : cli_check_shapes(c, "train", a->model, shape)) || (rc = cli_parse_augment(a->augment, &t->aug, shape, a->seed)))
        return rc;
    t->n_train = kiln_data_source_size(t->ds.train);
    t->n_test = kiln_data_source_size(t->ds.test);
    if (a->limit > 0 && a->limit < t->n_train) t->n_train = a->limit;
    int classes = kiln_data_num_classes(t->ds.train);
    t->m = cli_onnx_file(a) ? cli_onnx_file_model(a, "train", shape, classes)
         : a->model_file ? cli_keras_file_model(c, "train", classes) : kiln_model_preset(a->model, shape, cli_output_units(a, t->ds.train));
    if (!t->m) return a->model_file ? 2 : cli_fail("train", 2);
    kiln_model_set_seed(t->m, a->seed);
    kiln_tokenizer *tok = NULL;      /* --tokenizer goes into the checkpoint: kiln generate needs no --tokenizer */
    if (a->tokenizer && (kiln_tokenizer_load(a->tokenizer, &tok) || kiln_model_set_tokenizer(t->m, tok))) return cli_fail("train", 1);
    cli_data_record(a, t->m);
    kiln_status cs = cli_set_class_names(a, t->m, t->ds.train);
    if (cs == KILN_OUT_OF_MEMORY) { fprintf(stderr, "kiln train: out of host memory for the class names\n"); return 1; }
    if (cs != KILN_OK) return cli_fail("train", 1);
    t->co = cli_compile_opts(a, t->m, kiln_data_label_dtype(t->ds.train), t->opt, t->sched);
    if (kiln_compile(t->m, &t->co) != KILN_OK) return cli_fail("train", 1);
    if (a->load) {
        if (kiln_model_load_opts(t->m, a->load, &(kiln_load_opts){ .resume = true, .strict = a->strict_load }) != KILN_OK) return cli_fail("train", 1);
        t->initial = kiln_model_epoch(t->m);
        printf("Resuming from %s at epoch %d\n", a->load, t->initial);
    }
    return a->batch_auto ? cli_auto_batch(a, t->m, t->n_train) : 0;
}

/* The training and evaluation pipelines (with --data-on-device kiln_fit_data reads the training
 * pipeline's examples into the session's memory); they take the data splits. 0, or the exit status. */
static int make_pipelines(train_run *t) {
    const args *a = &t->c->a;
    if (a->data_on_device) {
        if (kiln_data_label_dtype(t->ds.train) == KILN_F32) { fprintf(stderr, "kiln train: --data-on-device takes class-id labels; these are values (mse)\n"); return 2; }
        if (t->aug.cutout_size > 0) { fprintf(stderr, "kiln train: --data-on-device does crop and flip on the device, not cutout\n"); return 2; }
    }
    if (t->ds.text) {
        int64_t w = kiln_text_epoch_windows(t->ds.train);
        t->epoch_windows = w < t->n_train ? w : t->n_train;
    }
    t->tp = cli_train_pipeline(a, t->ds.train, t->ds.images, &t->aug);
    t->ds.train = NULL;                      /* owned by tp now */
    t->vp = cli_eval_pipeline(a, t->ds.test, t->ds.images);
    t->ds.test = NULL;
    if (!t->tp || !t->vp) return cli_fail("train", 1);
    return 0;
}

static void make_callbacks(train_run *t) {
    const args *a = &t->c->a;
    t->n_cb = 0;
    if (a->tensorboard) t->cbs[t->n_cb++] = kiln_callback_tensorboard(a->tensorboard, a->tensorboard_every);
    if (a->save) t->cbs[t->n_cb++] = kiln_callback_model_checkpoint(a->save, a->save_best ? cli_monitor(a) : "loss", a->save_best);
    if (a->patience) t->cbs[t->n_cb++] = kiln_callback_early_stopping(cli_monitor(a), a->patience, a->min_delta > 0 ? a->min_delta : 0);
    if (a->history) t->cbs[t->n_cb++] = kiln_callback_csv_logger(a->history);
}

/* One line for the training settings beyond the defaults (schedule, decay, clipping, callbacks). */
static void print_extras(const args *a, const kiln_optimizer *o, const kiln_lr_schedule *s) {
    char line[512] = "";
    size_t k = 0;
#define ADD(...) k += (size_t)snprintf(line + k, k < sizeof line ? sizeof line - k : 0, __VA_ARGS__)
    if (s->kind == KILN_LR_STEP) ADD(", lr x%g every %d epoch%s", s->gamma, s->step_epochs, s->step_epochs == 1 ? "" : "s");
    if (s->kind == KILN_LR_COSINE && s->warmup_steps > 0) ADD(", cosine lr with %g warm-up steps", s->warmup_steps);
    else if (s->kind == KILN_LR_COSINE) ADD(", cosine lr with %g warm-up epochs", s->warmup_epochs);
    if (a->momentum >= 0 || a->nesterov) ADD(", SGD momentum %g%s", o->momentum, o->nesterov ? " (Nesterov)" : "");
    if (o->weight_decay > 0) ADD(", weight decay %g", o->weight_decay);
    if (o->clip_norm > 0) ADD(", gradients clipped to global norm %g", o->clip_norm);
    if (a->patience) ADD(", early stopping on %s (patience %d, min delta %g)", cli_monitor(a), a->patience, a->min_delta > 0 ? a->min_delta : 0);
    if (a->save_best) ADD(", checkpoint kept when %s improves", cli_monitor(a));
#undef ADD
    if (k) printf("Options: %s\n", line + 2);
}

/* What the run will do: model, data, optimizer, batch and epochs; precision; the input; options. */
static void print_header(const train_run *t) {
    const args *a = &t->c->a;
    if (t->ds.text)    /* windows: every start in the training head, an epoch of random ones */
        printf("Training %s on %s: windows of %d tokens, %lld training (%lld random ones an epoch: its tokens / block size) / %lld held-out, "
               "vocabulary %d, %s lr %g, batch %d, %d epoch%s\n", a->model, a->data, a->context, (long long)t->n_train,
               (long long)t->epoch_windows, (long long)t->n_test, kiln_data_num_classes(t->tp), a->optimizer, t->opt.lr, a->batch, a->epochs,
               a->epochs == 1 ? "" : "s");
    else
        printf("Training %s on %s: %lld training / %lld %s examples, %s lr %g, batch %d, %d epoch%s\n",
               cli_onnx_file(a) ? a->model_file : a->model, a->data, (long long)t->n_train, (long long)t->n_test, t->ds.held_out ? "held-out" : "test",
               a->optimizer, t->opt.lr, a->batch, a->epochs, a->epochs == 1 ? "" : "s");
    if (a->precision) printf("Precision: %s\n", kiln_precision_name(kiln_model_precision(t->m)));
    const kiln_augment_opts *aug = &t->aug;
    char aug_desc[64] = "";
    if (cli_augmenting(aug))
        snprintf(aug_desc, sizeof aug_desc, ", augment%s%s%s", aug->flip ? " flip" : "", aug->crop_pad ? " crop" : "", aug->cutout_size ? " cutout" : "");
    if (a->data_on_device)
        printf("Input: the whole training set in the session's memory (%s); shuffle%s; batches gathered there\n",
               kiln_gpu_available() ? "GPU" : "host", aug_desc);
    else if (a->prefetch > 0)
        printf("Input: shuffle%s, %d batch%s prefetched by %d worker thread%s\n", aug_desc, a->prefetch, a->prefetch == 1 ? "" : "es",
               a->workers > 0 ? a->workers : 1, a->workers > 1 ? "s" : "");
    else printf("Input: shuffle%s, no prefetch (batches made on the training thread)\n", aug_desc);
    if (a->accumulate > 1)
        printf("Gradient accumulation: each step of %d examples runs %d micro-batches of %d, one update\n", a->batch, a->accumulate, a->batch / a->accumulate);
    print_extras(a, &t->opt, &t->sched);
    fflush(stdout);
}

/* Trains from the initial epoch to --epochs; says so when there is nothing to train. */
static kiln_status fit(train_run *t) {
    const args *a = &t->c->a;
    int initial = t->initial;
    kiln_status st = KILN_OK;
    if (initial < a->epochs)
        st = kiln_fit_data(t->m, t->tp, &(kiln_fit_opts){ .epochs = a->epochs, .initial_epoch = initial, .validation_data = t->vp,
                                                          .verbose = a->verbose ? a->verbose : KILN_VERBOSE_SILENT, .callbacks = t->cbs, .n_callbacks = t->n_cb,
                                                          .data_on_device = a->data_on_device, .steps_per_epoch = a->steps_per_epoch,
                                                          .accumulate_steps = a->accumulate, .debug_numerics = a->debug_numerics,
                                                          .dist = a->dist, .devices = a->fit_devices,
                                                          .bucket_bytes = (size_t)a->bucket_kb << 10 });
    else if (a->load) printf("The checkpoint has already trained %d of %d epochs: evaluating only\n", initial, a->epochs);
    else printf("--epochs 0: nothing to train; evaluating the initial weights\n");
    return st;
}

/* The files this run wrote: none when no epoch was trained (--epochs 0, or resumed at the end). */
static void report_files(const args *a, const kiln_logs *h, int n_hist) {
    char *saved = NULL;
    if (a->patience && n_hist > 0 && h[n_hist - 1].epoch < a->epochs)
        printf("Early stopping: %s did not improve for %d epoch%s; stopped after epoch %d of %d\n", cli_monitor(a), a->patience,
               a->patience == 1 ? "" : "s", h[n_hist - 1].epoch, a->epochs);
    int kept = a->save_best ? cli_best_epoch(h, n_hist, cli_monitor(a)) : n_hist - 1;
    if (a->save && n_hist > 0 && kiln_checkpoint_path(a->save, &h[kept], &saved) == KILN_OK)
    {
        if (a->save_best) printf("Saved: %s (epoch %d, best %s)\n", saved, h[kept].epoch, cli_monitor(a));
        else printf("Saved: %s\n", saved);
    }
    free(saved);
    if (a->history && n_hist > 0) printf("History: %s\n", a->history);
    if (a->tensorboard && n_hist > 0) printf("TensorBoard logs: %s (view: tensorboard --logdir %s)\n", a->tensorboard, a->tensorboard);
}

/* The final accuracy (or loss) on the evaluation split, from the last epoch's validation or an
 * evaluation now, the time and speed, then the files. 0, or 1 after a message. */
static int report(const train_run *t, double secs) {
    const args *a = &t->c->a;
    int n_hist;
    const kiln_logs *h = kiln_model_history(t->m, &n_hist);
    kiln_eval_result r;
    double acc, loss;
    if (n_hist > 0 && h[n_hist - 1].has_val && h[n_hist - 1].epoch == a->epochs) { acc = h[n_hist - 1].val_accuracy; loss = h[n_hist - 1].val_loss; }
    else {
        if (kiln_evaluate_data(t->m, t->vp, NULL, &r) != KILN_OK) return cli_fail("train", 1);
        acc = r.accuracy; loss = r.loss;
    }
    double ips = 0, train_secs = 0;
    for (int i = 0; i < n_hist; i++) train_secs += h[i].seconds;
    if (n_hist > 0 && train_secs > 0) { for (int i = 0; i < n_hist; i++) ips += h[i].images_per_sec * h[i].seconds; ips /= train_secs; }
    const char *split = t->ds.held_out ? "Validation" : "Test";
    if (t->ds.text)    /* a language model: perplexity = exp(the mean cross-entropy per token) */
        printf("%s loss: %.4f, perplexity %.3f, token accuracy %.2f%% (%lld windows of %d tokens)\n", split, loss, exp(loss), acc * 100,
               (long long)t->n_test, a->context);
    else if (t->co.metrics & KILN_METRIC_ACCURACY)
        printf("%s accuracy: %.2f%% (loss %.4f, %lld examples)\n", split, acc * 100, loss, (long long)t->n_test);
    else printf("%s loss (%s): %.6g (%lld examples)\n", split, kiln_loss_name(t->co.loss), loss, (long long)t->n_test);
    printf("Time: %.1f s for %d epoch%s (training loop %.1f s, %.0f images/s)\n", secs, n_hist, n_hist == 1 ? "" : "s", train_secs, ips);
    report_files(a, h, n_hist);
    return 0;
}

/* One process's run (cli_dist_run calls it once per rank under mpirun). */
static int train(cli_ctx *c) {
    train_run t = { .c = c };
    int rc = check_options(&t);
    if (rc) return rc;
    if (cli_open_data(c, "train", true, &t.ds)) return 1;
    if (!(rc = build_model(&t)) && !(rc = make_pipelines(&t))) {
        make_callbacks(&t);
        print_header(&t);
        double t0 = cli_now();
        kiln_status st = fit(&t);
        double secs = cli_now() - t0;
        rc = st != KILN_OK ? cli_fail("train", 1) : report(&t, secs);
    }
    train_run_free(&t);
    return rc;
}

int cmd_train(cli_ctx *c) {
    if (c->a.help) { train_usage(stdout); return 0; }
    return cli_dist_run(c, train);
}
