/* kiln: the command-line tool. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/stat.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/data.h"
#include "kiln/pipeline.h"
#include "kiln/device.h"
#include "kiln/io.h"
#include "tools/commands.h"
#include "tools/cli_args.h"
#include "tools/cli_data.h"
#include "tools/cli_dist.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

static void usage(FILE *f) {
    fprintf(f,
        "kiln %s - train neural networks on the GPU or the CPU\n\n"
        "usage: kiln <command> [options]\n\n"
        "commands:\n"
        "  train        train a model (with no options: the default CNN on Fashion-MNIST)\n"
        "  eval         measure a saved model's accuracy on the test set\n"
        "  predict      show a saved model's predictions for a few test images or image files\n"
        "  summary      print a model's layers, output shapes, parameter counts and FLOPs\n"
        "  devices      list the CPU and GPUs Kiln can use, with memory and versions\n"
        "  bench        time training and inference on each device (CPU vs GPU table)\n"
        "  plot         draw learning curves (loss, accuracy) from a history CSV to PNG or SVG\n"
        "  export       write a saved model as an ONNX file (for onnxruntime, TensorRT, ...)\n"
        "  --help       show this help (kiln <command> --help for a command's options)\n"
        "  --version    show the version\n\n"
        "examples:\n"
        "  kiln train                                  # fashion_cnn, 5 epochs, prints test accuracy\n"
        "  kiln train --epochs 2 --save model.safetensors --history history.csv\n"
        "  kiln eval --load model.safetensors\n"
        "  kiln train --model cifar_cnn --data synthetic --epochs 1   # throughput run\n"
        "  kiln train --model cifar_cnn --data cifar10:DIR --augment flip,crop   # CIFAR-10 binary batches\n", KILN_VERSION);
}

#define MODEL_FILE_HELP \
    "  --model-file FILE   the model as Keras model JSON (what Keras' model.to_json() writes, Keras 3\n" \
    "                      or tf.keras 2; README \"Keras model files\" lists the layers and options)\n" \
    "                      or an ONNX file (FILE.onnx: its network and weights; README \"ONNX\")\n" \
    "                      instead of a built-in --model\n"

/* --model-file names an ONNX file (tools/cli_onnx.c); other model files are Keras JSON */
#define ONNX_FILE(a) ((a)->model_file && cli_is_onnx((a)->model_file))

#define DATA_HELP \
    "  --data SPEC         where the examples come from (default " DEFAULT_DATA "):\n" \
    "                        mnist:DIR      MNIST-layout IDX files (train-images-idx3-ubyte[.gz], ...;\n" \
    "                                       Fashion-MNIST too), 28x28x1, 10 classes\n" \
    "                        cifar10:DIR    CIFAR-10 binary batches: data_batch_1..5.bin + test_batch.bin\n" \
    "                                       (in DIR or DIR/cifar-10-batches-bin), 32x32x3, 10 classes\n" \
    "                        cifar100:DIR   CIFAR-100 train.bin + test.bin, 100 fine classes\n" \
    "                                       (cifar100-coarse:DIR for the 20 coarse ones)\n" \
    "                        images:DIR     an image folder DIR/CLASS_NAME/*.png|*.jpg, classes sorted by\n" \
    "                                       name, all images one size; DIR/train + DIR/test (or\n" \
    "                                       DIR/val) sub-folders are used as the two splits when present\n" \
    "                                       (test folders are matched to the training classes by name),\n" \
    "                                       else 10%% of the images are held out (see --validation-split)\n" \
    "                        npz:FILE.npz   a numpy archive (np.savez / np.savez_compressed, the keras.datasets\n" \
    "                                       files): x_train, y_train [, x_test, y_test]; x (N,H,W), (N,H,W,C)\n" \
    "                                       or (N,D), uint8 (scaled to [0, 1]) or float; y class ids, one-hot\n" \
    "                                       rows, or values (for --loss mse); without x_test 10%% is held out\n" \
    "                        csv:FILE.csv   numbers, one example per row, a header row optional; the label\n" \
    "                                       column is the last (or --label-column), the rest are features;\n" \
    "                                       test rows from --test-csv FILE, else 10%% held out\n" \
    "                        synthetic      random data shaped like the model's input (throughput runs)\n" \
    "                        DIR            any of the above, recognised from the files present\n" \
    "                      The test split of the same source gives val_* and the final accuracy.\n" \
    "                      The examples must have the model's input shape: fashion_cnn and mlp take\n" \
    "                      28x28x1 (grey), cifar_cnn 32x32x3 (colour); lenet5, resnet20, resnet56,\n" \
    "                      inception and fast_cifar take either (any image size they fit); mlp also\n" \
    "                      any other shape (CSV rows, npz arrays); the number of classes comes from the data.\n" \
    "  --label-column C    csv: the label column, by header name or 0-based index (-1: the last,\n" \
    "                      the default)\n" \
    "  --test-csv FILE     csv: the test rows, a file with the same columns as --data's\n"

#define LOSS_HELP \
    "  --loss NAME         what training minimises (Keras' names):\n" \
    "                        sparse_categorical_crossentropy  labels are class ids (the default)\n" \
    "                        categorical_crossentropy         the same loss; class ids or one-hot npz rows\n" \
    "                        binary_crossentropy              labels 0/1, a model with one output unit\n" \
    "                                                         (the default for a one-unit model)\n" \
    "                        mse                              mean squared error on the label's value\n" \
    "                                                         (regression; the default for float labels)\n" \
    "                      built-in models get one output unit for binary_crossentropy and mse\n" \
    "  --metrics LIST      accuracy (binary accuracy for one output unit), top_k (top-5), none;\n" \
    "                      comma-separated (default: accuracy, none for mse)\n"

#define PRECISION_HELP \
    "  --precision P       float32 (default); mixed_bfloat16 (bf16): convolutions and dense layers\n" \
    "                      compute in bf16 with f32 accumulation and the activations between them\n" \
    "                      (bias, relu, max pooling) are bf16: about half the activation memory;\n" \
    "                      batch norm, softmax, loss, metrics, weights and optimizer state stay f32\n" \
    "                      (a CPU without AVX512-BF16/AMX trains in f32 and says so);\n" \
    "                      mixed_float16 (fp16): the products in f16 with f32 results and dynamic\n" \
    "                      loss scaling (for GPUs; no faster on the CPU)\n"

static void train_usage(FILE *f) {
    fprintf(f,
        "usage: kiln train [options]\n\n"
        "Trains a model and prints its accuracy on the test set and the time it took.\n"
        "With no options: model fashion_cnn, Adam lr 0.001, batch 64, 5 epochs, on the\n"
        "Fashion-MNIST files in " DEFAULT_DATA ".\n"
        "The examples are shuffled each epoch, optionally augmented, batched and prepared on\n"
        "worker threads a few batches ahead of the training step (--prefetch, --workers).\n\n"
        "options:\n"
        DATA_HELP
        "  --model NAME        fashion_cnn (default), mlp, cifar_cnn, lenet5, resnet20, resnet56,\n"
        "                      inception, fast_cifar (see: kiln summary --model NAME)\n"
        MODEL_FILE_HELP
        "                      (with --load: the file gives the layers, the checkpoint the weights)\n"
        LOSS_HELP
        "  --epochs N          total number of epochs (default 5, at most 1000000; 0 evaluates only);\n"
        "                      with --load, training continues from the saved epoch up to N\n"
        "  --batch-size N      examples per training step (default 64, 1..1048576); a last smaller batch of an\n"
        "                      epoch is skipped in training (the test set is evaluated whole)\n"
        "  --batch-size auto   the largest batch (a multiple of 8) whose planned training step fits in\n"
        "                      the GPU's free memory (or --gpu-memory-limit), on the CPU in --memory-limit\n"
        "                      (default: half the physical memory); printed before training starts\n"
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
        "  --lr X              learning rate (default 0.001 for adam/adamw/rmsprop, 0.01 otherwise)\n"
        "  --schedule NAME     learning-rate schedule (per epoch, from --lr): constant (default);\n"
        "                      step (lr x --lr-step-factor every --lr-step-epochs epochs); exponential\n"
        "                      (lr x 0.96 per epoch); cosine (linear warm-up over --warmup-epochs, then\n"
        "                      cosine decay to 0 at the last epoch); one-cycle (up from lr/25 over the\n"
        "                      first 30%% of training, then down to lr/250000)\n"
        "  --lr-step-epochs N  step: epochs between drops (default 2)\n"
        "  --lr-step-factor F  step: the factor of each drop, 0 < F <= 1 (default 0.5)\n"
        "  --warmup-epochs E   cosine: warm-up length in epochs, may be fractional (default 0.2)\n"
        "  --weight-decay W    decoupled weight decay for sgd, momentum, adam and adamw (default: 0;\n"
        "                      adamw 0.004)\n"
        "  --clipnorm C        clip the gradients to global norm C, C > 0 (default: no clipping)\n"
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
        "  mpirun -np 4 kiln train --model cifar_cnn --data cifar10:DIR --batch-size 256\n\n"
        "several processes or machines (MPI): start kiln train with mpirun; --batch-size is then the\n"
        "global batch, each of the N processes trains on its 1/N of it and the gradients are\n"
        "all-reduced, so N processes train as one with that batch; rank 0 prints and writes files;\n"
        "each process takes cores / processes-per-machine threads and, with several GPUs, the GPU of\n"
        "its local rank; a failing process ends the whole job. Details: README, 'Training on several\n"
        "GPUs or machines'\n");
}

static void eval_usage(FILE *f) {
    fprintf(f,
        "usage: kiln eval --load PATH [--data SPEC] [--batch-size N] [--threads N]\n"
        "       kiln eval --model-file F.onnx [--load PATH] [--data SPEC] ...\n\n"
        "Loads a checkpoint saved by 'kiln train --save PATH' and prints the loss and accuracy on\n"
        "every example of the test set; for a source without a test split (an image folder without\n"
        "test/ or val/ sub-folders) on every example of it, and says so. The model is the one\n"
        "named in the checkpoint (override with --model NAME).\n\n"
        "options:\n"
        "  --load PATH         the checkpoint (required)\n"
        DATA_HELP
        "  --validation-split F  evaluate on the held-out fraction F of the training data instead\n"
        "                      (as kiln train --validation-split F held it out)\n"
        "  --model NAME        model to build if the checkpoint does not name one\n"
        MODEL_FILE_HELP
        "                      (default: the layers the checkpoint holds; its weights are loaded)\n"
        LOSS_HELP
        "  --batch-size N      examples per step (default 64)\n"
        "  --threads N         CPU threads (default: all cores)\n"
        "  --device D          auto (default), cpu, ref, cuda\n"
        "  --log-device-placement  print each op's device once\n"
        "  --prefetch N        batches prepared ahead (default 2)\n"
        "  --workers N         threads preparing batches (default 1)\n");
}

static void predict_usage(FILE *f) {
    fprintf(f,
        "usage: kiln predict --load PATH [--data SPEC] [--count N]\n"
        "       kiln predict --model-file F.onnx [--load PATH] [--data SPEC] [--count N]\n"
        "       kiln predict --load PATH --image FILE [FILE...]\n\n"
        "Loads a checkpoint and prints the predicted class, the true label and the confidence for\n"
        "the first N test images; or, with --image, the three most likely classes of each PNG or\n"
        "JPEG file with their probabilities.\n\n"
        "options:\n"
        "  --load PATH         the checkpoint (required)\n"
        "  --image FILE...     PNG or JPEG files to classify (--image may repeat); each is converted\n"
        "                      to the model's channels (grey or RGB) and, when its size differs,\n"
        "                      resized to the model's input (nearest neighbour, as Keras' load_img).\n"
        "                      Class names: those of an image folder given with --data, Fashion-MNIST's\n"
        "                      for a 10-class 28x28x1 model (unless --data names other data), else numbers\n"
        DATA_HELP
        "  --count N           how many test images (default 10; not with --image)\n"
        "  --validation-split F  predict the held-out fraction F of the training data (not with --image)\n"
        "  --model NAME        model to build if the checkpoint does not name one\n"
        MODEL_FILE_HELP
        "                      (default: the layers the checkpoint holds; its weights are loaded)\n"
        "  --batch-size N      examples per step (default 64)\n"
        "  --threads N         CPU threads (default: all cores)\n"
        "  --device D          auto (default), cpu, ref, cuda\n"
        "  --log-device-placement  print each op's device once\n\n"
        "example:\n"
        "  kiln predict --load model.safetensors --image shirt.png boot.jpg\n");
}

static void summary_usage(FILE *f) {
    fprintf(f,
        "usage: kiln summary [--model NAME | --model-file FILE] [--load PATH] [--json FILE]\n\n"
        "Prints the layers of a model with their output shapes, parameter counts and FLOPs per\n"
        "example (forward pass; a multiply-add counts as 2 FLOPs), and the totals: a built-in\n"
        "model (--model, default fashion_cnn; shown for its default input: 28x28x1 for fashion_cnn,\n"
        "mlp and lenet5, else 32x32x3), a Keras model file (--model-file), or the model a checkpoint\n"
        "holds (--load PATH: the model, input shape and number of classes it was saved with).\n"
        "Models: %s.\n\n"
        "options:\n"
        "  --model NAME        a built-in model (with --load: the model to build if the checkpoint\n"
        "                      does not name one)\n"
        "  --load PATH         a checkpoint from kiln train --save PATH\n"
        MODEL_FILE_HELP
        "                      (with --load: its weights are loaded from the checkpoint)\n"
        "  --json FILE         also write the model as Keras model JSON (keras.models.model_from_json\n"
        "                      reads it; so does --model-file): a built-in model to start your own from\n"
        "  --batch-size B      also print the memory of its training step for batches of B, from the\n"
        "                      step's memory plan: per layer the parameters, weight / gradient /\n"
        "                      optimizer-state bytes and the forward values kept, then the step's arena\n"
        "                      (activations, gradients, workspaces), the variables and the peak\n"
        "  --accumulate N      ... with gradient accumulation: micro-batches of B/N (kiln train --accumulate)\n"
        "  --optimizer NAME    the optimizer whose state is counted (default adam)\n"
        "  --device D          plan for auto (default), cpu, gpu (the GPU's plan needs a GPU), ref\n"
        PRECISION_HELP
        "\nexamples:\n"
        "  kiln summary --model-file model.json        # a model Keras saved with model.to_json()\n"
        "  kiln summary --model cifar_cnn --json cifar_cnn.json\n"
        "  kiln summary --model cifar_cnn --batch-size 128 --accumulate 4\n", kiln_model_preset_names());
}

static int fail(const char *cmd, int rc) { fprintf(stderr, "kiln %s: %s\n", cmd, kiln_last_error()); return rc; }

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* True when dir holds files of a CIFAR / MNIST data set (so train/ and test/ are not image splits). */
static bool known_files(const char *dir) {
    static const char *const names[] = { "data_batch_1.bin", "test_batch.bin", "train.bin", "test.bin", "cifar-10-batches-bin",
                                         "cifar-100-binary", "train-images-idx3-ubyte", "train-images-idx3-ubyte.gz",
                                         "t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz" };
    char p[4400];
    struct stat st;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (stat(p, &st) == 0) return true;
    }
    return false;
}

/* The examples of the two splits (bare sources) and how to name the evaluation split. */
typedef struct data_src {
    kiln_data *train, *test;
    bool images;             /* an image folder: decoded pixels are cached */
    bool held_out;           /* test = a held-out part of the training data */
    bool whole;              /* test = all of a source without a test split (eval, predict) */
    double fraction;
} data_src;

static void data_src_free(data_src *d) {
    kiln_data_free(d->train);
    kiln_data_free(d->test);
    d->train = d->test = NULL;
}

/* The input shape of a built-in model ([28, 28, 1] for fashion_cnn and mlp, [32, 32, 3] for
 * cifar_cnn); rank 0 for an unknown name. */
static kiln_model *ckpt_model;   /* read_checkpoint: the model a checkpoint's kiln.architecture describes */
static const char *model_file;   /* --model-file */

static kiln_shape preset_input(const char *model) {
    if (model_file && cli_is_onnx(model_file)) return cli_onnx_input(model_file);
    if (ckpt_model && model && !strcmp(model, kiln_model_name(ckpt_model))) return kiln_model_input_shape(ckpt_model);
    kiln_model *m = kiln_model_preset(model, KILN_SCALAR, 10);
    kiln_shape s = m ? kiln_model_input_shape(m) : KILN_SCALAR;
    kiln_model_free(m);
    return s;
}

/* --model-file: the model the Keras JSON describes, built once here. ckpt_model holds it and
 * a->model names it, so the paths that use a checkpoint's architecture use it; with --load the
 * checkpoint gives only the weights. */
static int use_model_file(args *a, const char *cmd) {
    static char name[96];     /* a->model points here for the rest of the run */
    if (a->model) { fprintf(stderr, "kiln %s: give --model NAME or --model-file FILE, not both\n", cmd); return 2; }
    if (kiln_model_from_json_file(a->model_file, &ckpt_model) != KILN_OK) return fail(cmd, 2);
    snprintf(name, sizeof name, "%s", kiln_model_name(ckpt_model));
    a->model = name;
    return 0;
}

/* The --model-file model for training on data with `classes` classes (taken from ckpt_model). */
static kiln_model *file_model(const args *a, const char *cmd, int classes) {
    kiln_model *m = ckpt_model;
    ckpt_model = NULL;
    kiln_shape out = kiln_model_output_shape(m);
    if (out.rank == 1 && out.dim[0] > 1 && out.dim[0] < classes) {
        fprintf(stderr, "kiln %s: model '%s' in %s has %lld outputs but --data %s has %d classes\n", cmd, kiln_model_name(m), a->model_file,
                (long long)out.dim[0], a->data, classes);
        kiln_model_free(m);
        return NULL;
    }
    return m;
}

/* Opens --data for `cmd`: both splits for train, the evaluation split alone otherwise (want_train
 * false). The evaluation split is the source's test split, or a held-out part of the training
 * split (--validation-split, or for train 10% of an image folder without train/test sub-folders;
 * eval and predict use all of such a folder). */
static int open_data(const args *a, const char *cmd, bool want_train, data_src *ds) {
    memset(ds, 0, sizeof *ds);
    char spec[4096], test_spec[4096], tr[4200], te[4200];
    snprintf(spec, sizeof spec, "%s", a->data);
    snprintf(test_spec, sizeof test_spec, "%s", a->data);
    if (!strcmp(a->data, "synthetic")) {      /* 50,000 (CIFAR-shaped) or 60,000 training, 10,000 test examples */
        kiln_shape s = preset_input(a->model);
        if (s.rank != 3 && ckpt_model) { fprintf(stderr, "kiln %s: --data synthetic makes images; model %s does not take images\n", cmd, a->model); return 2; }
        if (s.rank != 3) {
            if (!model_file) kiln_model_preset(a->model, KILN_SCALAR, 10);
            else if (s.rank) fprintf(stderr, "kiln %s: --data synthetic makes images; %s takes other examples\n", cmd, model_file);
            return s.rank ? 2 : fail(cmd, 2);
        }
        snprintf(spec, sizeof spec, "synthetic:%lldx%lldx%lld:%d", (long long)s.dim[0], (long long)s.dim[1],
                 (long long)s.dim[2], s.dim[2] == 3 ? 50000 : 60000);
        snprintf(test_spec, sizeof test_spec, "synthetic:%lldx%lldx%lld:40000", (long long)s.dim[0], (long long)s.dim[1],
                 (long long)s.dim[2]);     /* the test split of synthetic:...:N has N/4 examples */
    }
    /* an image folder with train / test (or val) sub-folders */
    const char *dir = !strncmp(spec, "images:", 7) ? spec + 7 : (!strchr(spec, ':') && is_dir(spec) ? spec : NULL);
    kiln_status st = KILN_OK;
    bool split_dirs = false;
    if (dir && (!strncmp(spec, "images:", 7) || !known_files(dir))) {
        snprintf(tr, sizeof tr, "%s/train", dir);
        const char *names[3] = { "test", "val", "validation" };
        for (int i = 0; i < 3 && !split_dirs && is_dir(tr); i++) {
            snprintf(te, sizeof te, "%s/%s", dir, names[i]);
            split_dirs = is_dir(te);
        }
    }
    if (split_dirs) {
        /* the training folder is read for eval/predict too: its class names give the labels, and
         * the test folders are matched to them by name (not by rank) */
        ds->images = true;
        if ((st = kiln_data_from_images(tr, &ds->train))) return fail(cmd, 1);
        if (a->val_split <= 0) {
            int n = kiln_data_num_classes(ds->train);
            const char **names = calloc((size_t)n, sizeof *names);
            for (int i = 0; names && i < n; i++) names[i] = kiln_data_class_name(ds->train, i);
            st = names ? kiln_data_from_images_classes(te, names, n, &ds->test) : KILN_OUT_OF_MEMORY;
            free(names);
            if (st) { data_src_free(ds); return fail(cmd, 1); }
        }
    } else {
        if ((st = cli_open_train(a, spec, &ds->train))) {
            if (st == KILN_NOT_FOUND && !strchr(spec, ':') && !is_dir(spec) && !strstr(kiln_last_error(), "apt-get"))
                fprintf(stderr, "kiln %s: %s; for Fashion-MNIST (the default data) install the Debian package with: "
                        "sudo apt-get install dataset-fashion-mnist (files in " DEFAULT_DATA ")\n", cmd, kiln_last_error());
            else fail(cmd, 1);
            return 1;
        }
        ds->images = kiln_data_class_name(ds->train, 0) != NULL;
        if (!ds->images && a->val_split <= 0 && (st = cli_open_test(a, test_spec, ds->train, &ds->test))) { data_src_free(ds); return fail(cmd, 1); }
    }
    if (!ds->test && !want_train && a->val_split <= 0 && ds->images) {   /* eval / predict: all of a folder without a test split */
        ds->test = ds->train;
        ds->train = NULL;
        ds->whole = true;
    }
    if (!ds->test) {         /* hold out part of the training split */
        ds->held_out = true;
        ds->fraction = a->val_split > 0 ? a->val_split : 0.1;
        kiln_data *src = ds->train;
        ds->train = NULL;
        if (kiln_data_split_source(src, ds->fraction, &ds->train, &ds->test)) return fail(cmd, 1);
    }
    if (!want_train) { kiln_data_free(ds->train); ds->train = NULL; }
    return 0;
}

/* The model must take the data's examples as they are. */
static int check_shapes(const args *a, const char *cmd, const char *model, kiln_shape data) {
    kiln_shape want = preset_input(model);
    if (want.rank == 0) { kiln_model_preset(model, KILN_SCALAR, 10); return fail(cmd, 2); }
    if (kiln_shape_equal(want, data)) return 0;
    bool from_ckpt = ckpt_model && !strcmp(model, kiln_model_name(ckpt_model));   /* a saved model keeps its shape */
    if (!from_ckpt && kiln_model_preset_takes(model, data)) return 0;
    /* the built-in mlp flattens: it takes any shape (CSV rows, npz arrays) */
    kiln_model *at = !from_ckpt && !strcmp(model, "mlp") ? kiln_model_preset(model, data, 10) : NULL;
    kiln_model_free(at);
    if (at) return 0;
    char w[64], d[64];
    fprintf(stderr, "kiln %s: model %s takes %s examples but --data %s has %s examples; pick a model for this data "
            "(fashion_cnn takes [28, 28, 1], cifar_cnn takes [32, 32, 3]; lenet5, resnet20, resnet56, inception and "
            "fast_cifar take either; mlp any shape: images, CSV rows)\n", cmd, model,
            kiln_shape_str(want, w, sizeof w), a->data, kiln_shape_str(data, d, sizeof d));
    return 2;
}

/* --model-file FILE: the model a file describes (FILE.onnx: tools/cli_onnx.c), for data examples
 * of shape data (rank 0: any) and classes classes (0: any); NULL after a message. */
static kiln_model *model_of_file(const args *a, const char *cmd, kiln_shape data, int classes) {
    if (cli_is_onnx(a->model_file)) return cli_onnx_model(a->model_file, cmd, data, classes);
    fprintf(stderr, "kiln %s: --model-file %s: not a model file kiln reads (FILE.onnx)\n", cmd, a->model_file);
    return NULL;
}

/* Cache decoded image-folder pixels when they fit in 2 GiB (decoding every epoch is slow). */
static kiln_data *maybe_cache(kiln_data *d, bool images) {
    if (!d || !images) return d;
    double bytes = (double)kiln_data_source_size(d) * (double)kiln_shape_numel(kiln_data_example_shape(d)) * 4.0;
    return bytes <= 2.0 * 1024 * 1024 * 1024 ? kiln_data_cache(d) : d;
}

static int parse_augment(const char *list, kiln_augment_opts *o, kiln_shape shape, uint64_t seed) {
    memset(o, 0, sizeof *o);
    o->seed = seed * 0x9E3779B97F4A7C15ull + 17;
    if (!list || !*list || !strcmp(list, "none")) return 0;
    char *buf = strdup(list);          /* the whole list, however long (a fixed buffer cut it silently) */
    if (!buf) { fprintf(stderr, "kiln train: out of memory\n"); return 1; }
    int rc = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "flip")) o->flip = true;
        else if (!strcmp(t, "crop")) o->crop_pad = 4;
        else if (!strcmp(t, "cutout")) o->cutout_size = shape.rank == 3 && shape.dim[0] >= 8 ? (int)(shape.dim[0] / 4) : 2;
        else { fprintf(stderr, "kiln train: unknown augmentation '%.64s' in --augment: use flip, crop, cutout (comma-separated)\n", t); rc = 2; }
    }
    free(buf);
    return rc;
}

static bool augmenting(const kiln_augment_opts *o) { return o->flip || o->crop_pad > 0 || o->cutout_size > 0; }

/* source -> [take limit] -> [cache] -> shuffle -> [augment] -> batch (full batches) -> [prefetch] */
static kiln_data *train_pipeline(const args *a, kiln_data *src, bool images, const kiln_augment_opts *aug) {
    int64_t n = kiln_data_source_size(src);
    kiln_data *d = src;
    if (a->limit > 0 && a->limit < n) { d = kiln_data_take(d, a->limit); n = a->limit; }
    d = maybe_cache(d, images);
    d = kiln_data_shuffle(d, n, a->seed);
    if (augmenting(aug)) d = kiln_data_augment(d, aug);
    d = kiln_data_batch(d, a->batch, true);
    if (a->prefetch > 0) d = kiln_data_prefetch(d, a->prefetch, a->workers > 0 ? a->workers : 1);
    return d;
}

/* source -> [cache] -> batch (the last partial batch kept) -> [prefetch] */
static kiln_data *eval_pipeline(const args *a, kiln_data *src, bool images) {
    /* with --accumulate, evaluation runs in micro-batches too: it needs no more memory than training */
    int eb = a->batch > 0 ? a->batch : 64;
    kiln_data *d = kiln_data_batch(maybe_cache(src, images), a->accumulate > 1 && eb % a->accumulate == 0 ? eb / a->accumulate : eb, false);
    if (a->prefetch > 0) d = kiln_data_prefetch(d, a->prefetch, a->workers > 0 ? a->workers : 1);
    return d;
}

static int parse_optimizer(const args *a, kiln_optimizer *o) {
    const char *name = a->optimizer;
    double lr = a->lr;
    if (!strcmp(name, "sgd")) *o = kiln_sgd(lr > 0 ? lr : 0.01);
    else if (!strcmp(name, "momentum")) *o = kiln_momentum(lr > 0 ? lr : 0.01, 0.9, false);
    else if (!strcmp(name, "adam")) *o = kiln_adam(lr > 0 ? lr : 1e-3);
    else if (!strcmp(name, "adamw")) *o = kiln_adamw(lr > 0 ? lr : 1e-3, 0);
    else if (!strcmp(name, "rmsprop")) *o = kiln_rmsprop(lr > 0 ? lr : 1e-3);
    else if (!strcmp(name, "adagrad")) *o = kiln_adagrad(lr > 0 ? lr : 0.01);
    else { fprintf(stderr, "kiln train: unknown optimizer '%s': use sgd, momentum, adam, adamw, rmsprop or adagrad\n", name); return 2; }
    if (a->weight_decay >= 0) {
        if (o->kind == KILN_OPT_RMSPROP || o->kind == KILN_OPT_ADAGRAD) {
            fprintf(stderr, "kiln train: --weight-decay works with sgd, momentum, adam and adamw, not %s\n", name);
            return 2;
        }
        if (o->kind == KILN_OPT_ADAMW && a->weight_decay == 0) {
            fprintf(stderr, "kiln train: --weight-decay 0 with adamw: use --optimizer adam for no decay\n");
            return 2;
        }
        o->weight_decay = a->weight_decay;
    }
    if (a->clipnorm > 0) o->clip_norm = a->clipnorm;
    return 0;
}

/* --schedule with --lr-step-epochs / --lr-step-factor (step) and --warmup-epochs (cosine). */
static int parse_schedule(const args *a, kiln_lr_schedule *s) {
    const char *name = a->schedule;
    memset(s, 0, sizeof *s);
    if (!name || !strcmp(name, "constant")) s->kind = KILN_LR_CONSTANT;
    else if (!strcmp(name, "step")) {
        s->kind = KILN_LR_STEP;
        s->step_epochs = a->lr_step_epochs > 0 ? a->lr_step_epochs : 2;
        s->gamma = a->lr_step_factor > 0 ? a->lr_step_factor : 0.5;
    }
    else if (!strcmp(name, "exponential")) s->kind = KILN_LR_EXPONENTIAL;
    else if (!strcmp(name, "cosine")) { s->kind = KILN_LR_COSINE; s->warmup_epochs = a->warmup_epochs >= 0 ? a->warmup_epochs : 0.2; }
    else if (!strcmp(name, "one-cycle") || !strcmp(name, "onecycle")) s->kind = KILN_LR_ONE_CYCLE;
    else { fprintf(stderr, "kiln train: unknown schedule '%s': use constant, step, exponential, cosine or one-cycle\n", name); return 2; }
    if ((a->lr_step_epochs > 0 || a->lr_step_factor > 0) && s->kind != KILN_LR_STEP) {
        fprintf(stderr, "kiln train: --lr-step-epochs and --lr-step-factor set up --schedule step (the schedule is %s)\n", name ? name : "constant");
        return 2;
    }
    if (a->warmup_epochs >= 0 && s->kind != KILN_LR_COSINE) {
        fprintf(stderr, "kiln train: --warmup-epochs sets up --schedule cosine (the schedule is %s)\n", name ? name : "constant");
        return 2;
    }
    return 0;
}

/* --early-stopping, --monitor, --min-delta, --save-best: checked before any data is read. */
static int check_callbacks(const args *a) {
    static const char *const ok[] = { "val_loss", "val_accuracy", "loss", "accuracy" };
    if (a->monitor) {
        bool known = false;
        for (int i = 0; i < 4; i++) known |= !strcmp(a->monitor, ok[i]);
        if (!known) { fprintf(stderr, "kiln train: unknown --monitor '%s': use val_loss, val_accuracy, loss or accuracy\n", a->monitor); return 2; }
        if (!a->patience && !a->save_best) { fprintf(stderr, "kiln train: --monitor chooses what --early-stopping or --save-best watch; give one of them\n"); return 2; }
    }
    if (a->min_delta >= 0 && !a->patience) { fprintf(stderr, "kiln train: --min-delta needs --early-stopping PATIENCE\n"); return 2; }
    if (a->save_best && !a->save) { fprintf(stderr, "kiln train: --save-best needs --save PATH\n"); return 2; }
    return 0;
}

static const char *monitor_of(const args *a) { return a->monitor ? a->monitor : "val_loss"; }

/* The epoch (index into h) whose checkpoint --save-best kept: the first best by the monitor. */
static int best_epoch(const kiln_logs *h, int n, const char *monitor) {
    int best = 0;
    for (int i = 0; i < n; i++) {
        const kiln_logs *l = &h[i];
        double v = !strcmp(monitor, "loss") ? l->loss : !strcmp(monitor, "accuracy") ? l->accuracy
                 : !strcmp(monitor, "val_accuracy") ? l->val_accuracy : l->val_loss;
        double b = !strcmp(monitor, "loss") ? h[best].loss : !strcmp(monitor, "accuracy") ? h[best].accuracy
                 : !strcmp(monitor, "val_accuracy") ? h[best].val_accuracy : h[best].val_loss;
        if (strstr(monitor, "accuracy") ? v > b : v < b) best = i;
    }
    return best;
}

/* --loss (or the default for the model's outputs and the labels), --metrics; from_logits unless the
 * model ends in softmax / sigmoid (a Keras model file's Dense(1, activation="sigmoid")). */
static kiln_compile_opts compile_opts(const args *a, const kiln_model *m, kiln_dtype labels, kiln_optimizer opt, kiln_lr_schedule sched) {
    kiln_loss_kind loss = cli_loss(a, m, labels);
    return (kiln_compile_opts){ .optimizer = opt, .schedule = sched, .loss = loss,
                                .from_logits = !kiln_model_outputs_probabilities(m), .metrics = cli_metrics(a, loss), .device = a->device,
                                .num_threads = a->threads, .log_device_placement = a->log_placement,
                                .precision = cli_precision(a), .sync_batchnorm = a->sync_batchnorm };
}

/* Says which examples eval / predict use when the source has no test split. */
static void say_whole(const data_src *ds, const char *data) {
    if (ds->whole)
        printf("%s has no test split (no test/ or val/ sub-folder): using all %lld examples "
               "(--validation-split F uses the part kiln train held out)\n", data, (long long)kiln_data_source_size(ds->test));
}

static void split_name(const data_src *ds, char *buf, size_t n) {
    if (ds->held_out) snprintf(buf, n, "held-out (%g of the training data)", ds->fraction);
    else if (ds->whole) snprintf(buf, n, "overall");
    else snprintf(buf, n, "test");
}

/* The first n examples of a bare source as an in-memory dataset (for --data-on-device). Takes src. */
static kiln_dataset *materialize(kiln_data *src, int64_t n) {
    kiln_shape es = kiln_data_example_shape(src);
    int classes = kiln_data_num_classes(src);
    kiln_shape xs = { es.rank + 1, { n } };
    for (int i = 0; i < es.rank; i++) xs.dim[i + 1] = es.dim[i];
    kiln_tensor *x = kiln_tensor_new(KILN_F32, xs), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    kiln_data *d = kiln_data_batch(kiln_data_take(src, n), 512, false);
    kiln_data_iter *it = NULL;
    kiln_dataset *out = NULL;
    int64_t row = 0, per = kiln_shape_numel(es);
    if (x && y && d && kiln_data_iter_new(d, 0, &it) == KILN_OK) {
        kiln_tensor *bx, *by;
        while (kiln_data_iter_next(it, &bx, &by) == KILN_OK && bx) {
            int64_t b = bx->shape.dim[0];
            memcpy((float *)x->data + row * per, bx->data, (size_t)(b * per) * sizeof(float));
            memcpy((int32_t *)y->data + row, by->data, (size_t)b * sizeof(int32_t));
            row += b;
        }
        if (row == n) out = kiln_dataset_from_tensors(x, y, classes);
    }
    kiln_data_iter_free(it);
    kiln_data_free(d);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return out;
}

/* One line for the training settings beyond the defaults (schedule, decay, clipping, callbacks). */
static void print_extras(const args *a, const kiln_optimizer *o, const kiln_lr_schedule *s) {
    char line[512] = "";
    size_t k = 0;
#define ADD(...) k += (size_t)snprintf(line + k, k < sizeof line ? sizeof line - k : 0, __VA_ARGS__)
    if (s->kind == KILN_LR_STEP) ADD(", lr x%g every %d epoch%s", s->gamma, s->step_epochs, s->step_epochs == 1 ? "" : "s");
    if (s->kind == KILN_LR_COSINE) ADD(", cosine lr with %g warm-up epochs", s->warmup_epochs);
    if (o->weight_decay > 0) ADD(", weight decay %g", o->weight_decay);
    if (o->clip_norm > 0) ADD(", gradients clipped to global norm %g", o->clip_norm);
    if (a->patience) ADD(", early stopping on %s (patience %d, min delta %g)", monitor_of(a), a->patience, a->min_delta > 0 ? a->min_delta : 0);
    if (a->save_best) ADD(", checkpoint kept when %s improves", monitor_of(a));
#undef ADD
    if (k) printf("Options: %s\n", line + 2);
}

static const char *fashion_names[10];

/* A 10-class [28, 28, 1] model or data set with the default or a Fashion-MNIST --data: its
 * classes are Fashion-MNIST's. */
static bool fashion_like(const args *a, kiln_shape in, int64_t classes) {
    bool grey28 = in.rank == 3 && in.dim[0] == 28 && in.dim[1] == 28 && in.dim[2] == 1;
    return grey28 && classes == 10 && (!a->data_given || strstr(a->data, "fashion"));
}

/* The class names the checkpoints of this run hold (predict --image prints them): an image
 * folder's, or Fashion-MNIST's for the default or a Fashion-MNIST data set; none otherwise. */
static kiln_status set_class_names(const args *a, kiln_model *m, const kiln_data *train) {
    int n = kiln_data_num_classes(train);
    if (fashion_like(a, kiln_data_example_shape(train), n)) return kiln_model_set_class_names(m, fashion_names, 10);
    if (n <= 0 || !kiln_data_class_name(train, 0)) return KILN_OK;
    const char **names = calloc((size_t)n, sizeof *names);
    if (!names) return KILN_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++) names[i] = kiln_data_class_name(train, i) ? kiln_data_class_name(train, i) : "";
    kiln_status st = kiln_model_set_class_names(m, names, n);
    free(names);
    return st;
}

/* --batch-size auto: the largest multiple of 8 (and of --accumulate) whose planned training step
 * fits: in --gpu-memory-limit or the GPU's free memory, on the CPU in --memory-limit or half the
 * physical memory; at most the training examples. */
static int auto_batch(args *a, kiln_model *m, int64_t n_train) {
    bool gpu = kiln_gpu_available() && (!a->device || (strcmp(a->device, "cpu") && strcmp(a->device, "ref")));
    size_t limit = 0;
    const char *why;
    if (gpu && a->gpu_mem_mib > 0) { limit = (size_t)a->gpu_mem_mib << 20; why = "--gpu-memory-limit"; }
    else if (gpu) why = "the GPU's free memory";
    else if (a->memory_limit_mib > 0) { limit = (size_t)a->memory_limit_mib << 20; why = "--memory-limit"; }
    else {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        limit = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 : (size_t)1 << 30;
        why = "half the physical memory (--memory-limit MIB to choose)";
    }
    int b = 0;
    size_t peak = 0;
    int cap = n_train < CLI_MAX_BATCH ? (int)n_train : CLI_MAX_BATCH;
    if (kiln_model_max_batch(m, limit, a->accumulate, 8, cap, &b, &peak) != KILN_OK) return fail("train", 1);
    printf("Batch size auto: %d, the largest multiple of 8%s whose planned training step fits in %s (%.1f MiB): it needs %.1f MiB\n",
           b, a->accumulate > 1 ? " and of --accumulate" : "", why, (limit ? limit : peak) / 1048576.0, peak / 1048576.0);
    a->batch = b;
    return 0;
}

static int cmd_train(args *a) {
    if (a->help) { train_usage(stdout); return 0; }
    kiln_optimizer opt;
    kiln_lr_schedule sched;
    if (parse_optimizer(a, &opt) || parse_schedule(a, &sched) || check_callbacks(a)) return 2;
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
            return fail("train", 2);
    }
    data_src ds;
    if (open_data(a, "train", true, &ds)) return 1;
    int rc = 0;
    kiln_model *m = NULL;
    kiln_data *tp = NULL, *vp = NULL;
    kiln_dataset *resident = NULL;           /* --data-on-device: the training set, in memory */
    kiln_shape shape = kiln_data_example_shape(ds.train);
    kiln_augment_opts aug;
    if ((rc = ONNX_FILE(a) ? 0 : check_shapes(a, "train", a->model, shape)) || (rc = parse_augment(a->augment, &aug, shape, a->seed))) goto out;
    int64_t n_train = kiln_data_source_size(ds.train), n_test = kiln_data_source_size(ds.test);
    if (a->limit > 0 && a->limit < n_train) n_train = a->limit;
    m = ONNX_FILE(a) ? model_of_file(a, "train", shape, kiln_data_num_classes(ds.train))
      : a->model_file ? file_model(a, "train", kiln_data_num_classes(ds.train)) : kiln_model_preset(a->model, shape, cli_output_units(a, ds.train));
    if (!m) { rc = a->model_file ? 2 : fail("train", 2); goto out; }
    kiln_model_set_seed(m, a->seed);
    kiln_status cs = set_class_names(a, m, ds.train);
    if (cs == KILN_OUT_OF_MEMORY) { fprintf(stderr, "kiln train: out of host memory for the class names\n"); rc = 1; goto out; }
    if (cs != KILN_OK) { rc = fail("train", 1); goto out; }
    kiln_compile_opts co = compile_opts(a, m, kiln_data_label_dtype(ds.train), opt, sched);
    if (kiln_compile(m, &co) != KILN_OK) { rc = fail("train", 1); goto out; }
    int initial = 0;
    if (a->load) {
        if (kiln_model_load_opts(m, a->load, &(kiln_load_opts){ .resume = true, .strict = a->strict_load }) != KILN_OK) { rc = fail("train", 1); goto out; }
        initial = kiln_model_epoch(m);
        printf("Resuming from %s at epoch %d\n", a->load, initial);
    }
    if (a->batch_auto && (rc = auto_batch(a, m, n_train))) goto out;
    if (a->data_on_device) {
        if (kiln_data_label_dtype(ds.train) == KILN_F32) { fprintf(stderr, "kiln train: --data-on-device takes class-id labels; these are values (mse)\n"); rc = 2; goto out; }
        if (aug.cutout_size > 0) { fprintf(stderr, "kiln train: --data-on-device does crop and flip on the device, not cutout\n"); rc = 2; goto out; }
        resident = materialize(ds.train, n_train);   /* takes ds.train */
        ds.train = NULL;
        if (!resident) { rc = fail("train", 1); goto out; }
    } else {
        tp = train_pipeline(a, ds.train, ds.images, &aug);
        ds.train = NULL;                     /* owned by tp now */
    }
    vp = eval_pipeline(a, ds.test, ds.images);
    ds.test = NULL;
    if ((!tp && !resident) || !vp) { rc = fail("train", 1); goto out; }
    kiln_callback cbs[4];
    int n_cb = 0;
    if (a->tensorboard) cbs[n_cb++] = kiln_callback_tensorboard(a->tensorboard, a->tensorboard_every);
    if (a->save) cbs[n_cb++] = kiln_callback_model_checkpoint(a->save, a->save_best ? monitor_of(a) : "loss", a->save_best);
    if (a->patience) cbs[n_cb++] = kiln_callback_early_stopping(monitor_of(a), a->patience, a->min_delta > 0 ? a->min_delta : 0);
    if (a->history) cbs[n_cb++] = kiln_callback_csv_logger(a->history);
    printf("Training %s on %s: %lld training / %lld %s examples, %s lr %g, batch %d, %d epoch%s\n",
           ONNX_FILE(a) ? a->model_file : a->model, a->data, (long long)n_train, (long long)n_test, ds.held_out ? "held-out" : "test",
           a->optimizer, opt.lr, a->batch, a->epochs, a->epochs == 1 ? "" : "s");
    if (a->precision) printf("Precision: %s\n", kiln_precision_name(kiln_model_precision(m)));
    char aug_desc[64] = "";
    if (augmenting(&aug))
        snprintf(aug_desc, sizeof aug_desc, ", augment%s%s%s", aug.flip ? " flip" : "", aug.crop_pad ? " crop" : "", aug.cutout_size ? " cutout" : "");
    if (resident)
        printf("Input: the whole training set in the session's memory (%s); shuffle%s; batches gathered there\n",
               kiln_gpu_available() ? "GPU" : "host", aug_desc);
    else if (a->prefetch > 0)
        printf("Input: shuffle%s, %d batch%s prefetched by %d worker thread%s\n", aug_desc, a->prefetch, a->prefetch == 1 ? "" : "es",
               a->workers > 0 ? a->workers : 1, a->workers > 1 ? "s" : "");
    else printf("Input: shuffle%s, no prefetch (batches made on the training thread)\n", aug_desc);
    if (a->accumulate > 1)
        printf("Gradient accumulation: each step of %d examples runs %d micro-batches of %d, one update\n", a->batch, a->accumulate, a->batch / a->accumulate);
    print_extras(a, &opt, &sched);
    fflush(stdout);
    double t0 = cli_now();
    kiln_status st = KILN_OK;
    if (initial < a->epochs && resident)
        st = kiln_fit(m, resident, &(kiln_fit_opts){ .epochs = a->epochs, .initial_epoch = initial, .validation_data = vp,
                                                     /* kiln_fit shuffles with shuffle_seed ^ the model's seed (a->seed):
                                                      * this gives train_pipeline's order, so without augmentation
                                                      * --data-on-device trains on the same batches */
                                                     .batch_size = a->batch, .shuffle_seed = 0, .verbose = a->verbose,
                                                     .callbacks = cbs, .n_callbacks = n_cb, .data_on_device = true,
                                                     .device_crop_pad = aug.crop_pad, .device_flip = aug.flip,
                                                     .device_augment_seed = aug.seed, .accumulate_steps = a->accumulate,
                                                     .debug_numerics = a->debug_numerics, .dist = a->dist, .devices = a->fit_devices,
                                                    .bucket_bytes = (size_t)a->bucket_kb << 10 });
    else if (initial < a->epochs)
        st = kiln_fit_data(m, tp, &(kiln_fit_opts){ .epochs = a->epochs, .initial_epoch = initial, .validation_data = vp,
                                                    .verbose = a->verbose, .callbacks = cbs, .n_callbacks = n_cb,
                                                    .accumulate_steps = a->accumulate, .debug_numerics = a->debug_numerics,
                                                    .dist = a->dist, .devices = a->fit_devices,
                                                    .bucket_bytes = (size_t)a->bucket_kb << 10 });
    else if (a->load) printf("The checkpoint has already trained %d of %d epochs: evaluating only\n", initial, a->epochs);
    else printf("--epochs 0: nothing to train; evaluating the initial weights\n");
    double secs = cli_now() - t0;
    if (st != KILN_OK) { rc = fail("train", 1); goto out; }
    int n_hist;
    const kiln_logs *h = kiln_model_history(m, &n_hist);
    kiln_eval_result r;
    double acc, loss;
    if (n_hist > 0 && h[n_hist - 1].has_val && h[n_hist - 1].epoch == a->epochs) { acc = h[n_hist - 1].val_accuracy; loss = h[n_hist - 1].val_loss; }
    else {
        if (kiln_evaluate_data(m, vp, NULL, &r) != KILN_OK) { rc = fail("train", 1); goto out; }
        acc = r.accuracy; loss = r.loss;
    }
    double ips = 0, train_secs = 0;
    for (int i = 0; i < n_hist; i++) train_secs += h[i].seconds;
    if (n_hist > 0 && train_secs > 0) { for (int i = 0; i < n_hist; i++) ips += h[i].images_per_sec * h[i].seconds; ips /= train_secs; }
    if (co.metrics & KILN_METRIC_ACCURACY)
        printf("%s accuracy: %.2f%% (loss %.4f, %lld examples)\n", ds.held_out ? "Validation" : "Test", acc * 100, loss, (long long)n_test);
    else printf("%s loss (%s): %.6g (%lld examples)\n", ds.held_out ? "Validation" : "Test", kiln_loss_name(co.loss), loss, (long long)n_test);
    printf("Time: %.1f s for %d epoch%s (training loop %.1f s, %.0f images/s)\n", secs, n_hist, n_hist == 1 ? "" : "s", train_secs, ips);
    /* only files this run wrote: none when no epoch was trained (--epochs 0, or resumed at the end) */
    char *saved = NULL;
    if (a->patience && n_hist > 0 && h[n_hist - 1].epoch < a->epochs)
        printf("Early stopping: %s did not improve for %d epoch%s; stopped after epoch %d of %d\n", monitor_of(a), a->patience,
               a->patience == 1 ? "" : "s", h[n_hist - 1].epoch, a->epochs);
    int kept = a->save_best ? best_epoch(h, n_hist, monitor_of(a)) : n_hist - 1;
    if (a->save && n_hist > 0 && kiln_checkpoint_path(a->save, &h[kept], &saved) == KILN_OK)
    {
        if (a->save_best) printf("Saved: %s (epoch %d, best %s)\n", saved, h[kept].epoch, monitor_of(a));
        else printf("Saved: %s\n", saved);
    }
    free(saved);
    if (a->history && n_hist > 0) printf("History: %s\n", a->history);
    if (a->tensorboard && n_hist > 0) printf("TensorBoard logs: %s (view: tensorboard --logdir %s)\n", a->tensorboard, a->tensorboard);
out:
    kiln_model_free(m);
    kiln_data_free(tp);
    kiln_data_free(vp);
    kiln_dataset_free(resident);
    data_src_free(&ds);
    return rc;
}

/* Reads --load once (eval, predict, summary): the model comes from it and the weights are loaded
 * from the same copy. Unless --model was given, the model is the one the file's kiln.architecture
 * describes (built here: ckpt_model), else the built-in one its kiln.model names; a->model is set
 * to its name. */
static kiln_safetensors *read_checkpoint(args *a, const char *cmd) {
    static char name[96];     /* a->model points here for the rest of the run */
    kiln_safetensors *f = NULL;
    if (kiln_safetensors_load(a->load, &f) != KILN_OK) { fail(cmd, 1); return NULL; }
    if (!a->model) {
        const char *saved = kiln_safetensors_meta(f, "kiln.model");
        if (kiln_safetensors_meta(f, "kiln.architecture")) {
            if (kiln_model_build_from_checkpoint(f, a->load, &ckpt_model) != KILN_OK) { fail(cmd, 1); kiln_safetensors_free(f); return NULL; }
            saved = kiln_model_name(ckpt_model);
        }
        snprintf(name, sizeof name, "%s", saved ? saved : "fashion_cnn");
        a->model = name;
    }
    return f;
}

/* Builds the model a checkpoint was saved from (its architecture, else the built-in a->model) and
 * loads it from f (borrowed). */
static kiln_model *model_from_checkpoint(const args *a, const char *cmd, const kiln_safetensors *f, kiln_shape data_shape, int classes,
                                         kiln_dtype labels) {
    kiln_model *m = ckpt_model && !strcmp(a->model, kiln_model_name(ckpt_model)) ? ckpt_model : kiln_model_preset(a->model, data_shape, classes);
    if (m != ckpt_model) kiln_model_free(ckpt_model);   /* --model named another one */
    ckpt_model = NULL;
    if (!m) { fail(cmd, 1); return NULL; }
    kiln_shape out = kiln_model_output_shape(m);
    if (classes > 0 && out.rank == 1 && out.dim[0] > 1 && out.dim[0] < classes) {
        fprintf(stderr, "kiln %s: model '%s' in %s has %lld outputs but --data %s has %d classes\n", cmd, kiln_model_name(m), a->load,
                (long long)out.dim[0], a->data, classes);
        kiln_model_free(m);
        return NULL;
    }
    kiln_compile_opts co = compile_opts(a, m, labels, kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
    if (kiln_compile(m, &co) != KILN_OK || kiln_model_load_opts(m, a->load, &(kiln_load_opts){ .file = f }) != KILN_OK) {
        fail(cmd, 1);
        kiln_model_free(m);
        return NULL;
    }
    return m;
}

/* --model-file: its model, compiled, with --load's weights when given. */
static kiln_model *model_from_file(const args *a, const char *cmd, kiln_shape data, int classes) {
    kiln_model *m = model_of_file(a, cmd, data, classes);
    kiln_compile_opts co = compile_opts(a, m, KILN_I32, kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
    if (m && (kiln_compile(m, &co) != KILN_OK || (a->load && kiln_model_load(m, a->load) != KILN_OK))) {
        fail(cmd, 1);
        kiln_model_free(m);
        return NULL;
    }
    return m;
}

/* The model a checkpoint holds, built from the checkpoint alone (no data): its input shape and
 * class count are those of the model the file describes (kiln_model_build_from_checkpoint: its
 * architecture, else the built-in model with kiln.input_shape and its last layer's bias). */
static kiln_model *model_of_checkpoint(const args *a, const char *cmd, const kiln_safetensors *f) {
    if (!ckpt_model && kiln_model_build_from_checkpoint(f, a->load, &ckpt_model) != KILN_OK) ckpt_model = NULL;
    kiln_shape in = ckpt_model ? kiln_model_input_shape(ckpt_model) : KILN_SCALAR;
    kiln_shape out = ckpt_model ? kiln_model_output_shape(ckpt_model) : KILN_SCALAR;
    return model_from_checkpoint(a, cmd, f, in, out.rank == 1 && out.dim[0] <= INT32_MAX ? (int)out.dim[0] : 10, KILN_I32);
}

static int cmd_eval(args *a) {
    if (a->help) { eval_usage(stdout); return 0; }
    if (!a->load && !ONNX_FILE(a)) { fprintf(stderr, "kiln eval: --load PATH is required (a checkpoint from kiln train --save PATH), or --model-file FILE.onnx\n"); return 2; }
    if (a->threads) kiln_set_num_threads(a->threads);
    kiln_safetensors *ck = ONNX_FILE(a) ? NULL : read_checkpoint(a, "eval");
    if (!ck && !ONNX_FILE(a)) return 1;
    data_src ds;
    if (open_data(a, "eval", false, &ds)) { kiln_safetensors_free(ck); return 1; }
    int rc = ONNX_FILE(a) ? 0 : check_shapes(a, "eval", a->model, kiln_data_example_shape(ds.test));
    kiln_model *m = NULL;
    kiln_data *vp = NULL;
    kiln_eval_result r;
    char split[96];
    split_name(&ds, split, sizeof split);
    if (rc) goto out;
    say_whole(&ds, a->data);
    m = ONNX_FILE(a) ? model_from_file(a, "eval", kiln_data_example_shape(ds.test), kiln_data_num_classes(ds.test))
                     : model_from_checkpoint(a, "eval", ck, kiln_data_example_shape(ds.test), kiln_data_num_classes(ds.test), kiln_data_label_dtype(ds.test));
    if (!m) { rc = 1; goto out; }
    vp = eval_pipeline(a, ds.test, ds.images);
    ds.test = NULL;
    if (!vp) rc = fail("eval", 1);
    else if (kiln_evaluate_data(m, vp, NULL, &r) != KILN_OK) rc = fail("eval", 1);
    else {
        char acc[48] = "";
        kiln_compile_opts co = compile_opts(a, m, kiln_data_label_dtype(vp), kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
        if (co.metrics & KILN_METRIC_ACCURACY) snprintf(acc, sizeof acc, " accuracy %.2f%%,", r.accuracy * 100);
        printf("%s (epoch %d) on %s: %s%s loss %.4f, %lld examples, %.1f s\n", kiln_model_name(m), kiln_model_epoch(m),
               a->data, split, acc, r.loss, (long long)r.count, r.seconds);
    }
out:
    kiln_safetensors_free(ck);
    kiln_model_free(m);
    kiln_data_free(vp);
    data_src_free(&ds);
    return rc;
}

static const char *fashion_names[10] = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" };

/* Class names for --image when the checkpoint holds none: the --data image folder's, else Fashion-MNIST's for a 10-class
 * [28, 28, 1] model with the default or a Fashion-MNIST data set; NULL: print class numbers. */
static kiln_data *names_source(const args *a, kiln_model *m, bool *fashion) {
    *fashion = fashion_like(a, kiln_model_input_shape(m), kiln_model_output_shape(m).dim[0]);
    data_src ds;
    if (!a->data_given || *fashion || open_data(a, "predict", false, &ds)) return NULL;
    kiln_data *names = ds.test;
    ds.test = NULL;
    data_src_free(&ds);
    return names;
}

static void print_top(const char *path, const kiln_tensor *p, bool resized, bool fashion, const kiln_data *names, const kiln_model *m) {
    const float *pr = p->data;
    int64_t n = p->shape.dim[0], top[3] = { -1, -1, -1 };
    for (int k = 0; k < 3 && k < n; k++)          /* the three largest, in order */
        for (int64_t j = 0; j < n; j++) {
            bool taken = false;
            for (int q = 0; q < k; q++) taken |= top[q] == j;
            if (!taken && (top[k] < 0 || pr[j] > pr[top[k]])) top[k] = j;
        }
    printf("%s:", path);
    for (int k = 0; k < 3 && top[k] >= 0; k++) {
        /* the names the checkpoint holds first, then the data's */
        const char *nm = kiln_model_class_count(m) > 0 ? kiln_model_class_name(m, (int)top[k])
                       : fashion && top[k] < 10 ? fashion_names[top[k]] : names ? kiln_data_class_name(names, (int)top[k]) : NULL;
        if (nm) printf("%s %s %.1f%%", k ? "," : "", nm, 100.0 * pr[top[k]]);
        else printf("%s class %lld %.1f%%", k ? "," : "", (long long)top[k], 100.0 * pr[top[k]]);
    }
    printf("%s\n", resized ? " (resized to the model's input size)" : "");
}

/* kiln predict --load CKPT --image A.png [B.jpg ...]: the top three classes of each file. */
static int predict_images(args *a) {
    if (a->count > 0 || a->val_split > 0) {
        fprintf(stderr, "kiln predict: --%s picks test examples; with --image the given files are predicted\n",
                a->count > 0 ? "count" : "validation-split");
        return 2;
    }
    kiln_safetensors *ck = ONNX_FILE(a) ? NULL : read_checkpoint(a, "predict");
    if (!ck && !ONNX_FILE(a)) return 1;
    kiln_model *m = ONNX_FILE(a) ? model_from_file(a, "predict", KILN_SCALAR, 0) : model_of_checkpoint(a, "predict", ck);
    kiln_safetensors_free(ck);
    if (!m) return 1;
    bool fashion = false;
    kiln_data *names = names_source(a, m, &fashion);
    int rc = 0;
    for (int i = 0; i < a->n_images && !rc; i++) {
        kiln_tensor *p = NULL;
        bool resized = false;
        if (kiln_predict_image(m, a->images[i], &p, &resized) != KILN_OK) rc = fail("predict", 1);
        else print_top(a->images[i], p, resized, fashion, names, m);
        kiln_tensor_free(p);
    }
    kiln_data_free(names);
    kiln_model_free(m);
    return rc;
}

static int cmd_predict(args *a) {
    if (a->help) { predict_usage(stdout); return 0; }
    if (!a->load && !ONNX_FILE(a)) { fprintf(stderr, "kiln predict: --load PATH is required (a checkpoint from kiln train --save PATH), or --model-file FILE.onnx\n"); return 2; }
    if (a->threads) kiln_set_num_threads(a->threads);
    if (a->n_images) return predict_images(a);
    kiln_safetensors *ck = ONNX_FILE(a) ? NULL : read_checkpoint(a, "predict");
    if (!ck && !ONNX_FILE(a)) return 1;
    data_src ds;
    if (open_data(a, "predict", false, &ds)) { kiln_safetensors_free(ck); return 1; }
    int count = a->count > 0 ? a->count : 10, rc = 0;     /* --count: 0 when not given */
    if (count > kiln_data_source_size(ds.test)) count = (int)kiln_data_source_size(ds.test);
    bool fashion = strstr(a->data, "fashion") != NULL && kiln_data_num_classes(ds.test) == 10;
    kiln_model *m = NULL;
    kiln_tensor *out = NULL, *x = NULL, *y = NULL;
    kiln_data *d = NULL;
    kiln_data_iter *it = NULL;
    if ((rc = ONNX_FILE(a) ? 0 : check_shapes(a, "predict", a->model, kiln_data_example_shape(ds.test)))) goto done;
    say_whole(&ds, a->data);
    m = ONNX_FILE(a) ? model_from_file(a, "predict", kiln_data_example_shape(ds.test), kiln_data_num_classes(ds.test))
                     : model_from_checkpoint(a, "predict", ck, kiln_data_example_shape(ds.test), kiln_data_num_classes(ds.test), kiln_data_label_dtype(ds.test));
    if (!m) { rc = 1; goto done; }
    d = kiln_data_batch(ds.test, count, false);       /* the first `count` test examples */
    ds.test = NULL;
    if (!d || kiln_data_iter_new(d, 0, &it) != KILN_OK || kiln_data_iter_next(it, &x, &y) != KILN_OK || !x) { rc = fail("predict", 1); goto done; }
    if (kiln_predict(m, x, &(kiln_eval_opts){ .batch_size = a->batch }, &out) != KILN_OK) { rc = fail("predict", 1); goto done; }
    int64_t c = out->shape.dim[1];
    for (int64_t i = 0; i < (int64_t)count * c; i++)
        if (!isfinite(((const float *)out->data)[i])) {
            fprintf(stderr, "kiln predict: the model's outputs are not finite (NaN or Inf) for image %lld: the weights in %s "
                    "are not usable (training diverged, or the file is damaged); retrain, e.g. with a lower --lr\n",
                    (long long)(i / c), a->load);
            rc = 1;
            goto done;
        }
    int right = 0;
    if (y->dtype == KILN_F32) { rc = cli_print_values(out, y, count); goto done; }   /* regression: values, not classes */
    printf("%6s  %-14s %-14s %s\n", "image", "predicted", "label", "confidence");
    for (int i = 0; i < count; i++) {
        const float *r = (const float *)out->data + (int64_t)i * c;
        int64_t best = 0;
        double mx = r[0], sum = 0;
        for (int64_t j = 1; j < c; j++) if (r[j] > r[best]) best = j;
        mx = r[best];
        for (int64_t j = 0; j < c; j++) sum += exp(r[j] - mx);
        if (c == 1) {           /* one unit: a binary classifier, class 1 when p > 0.5 */
            double p1 = kiln_model_outputs_probabilities(m) ? r[0] : 1 / (1 + exp(-r[0]));
            best = p1 > 0.5;
            sum = 1 / (best ? p1 : 1 - p1);
        }
        int label = ((const int32_t *)y->data)[i];
        right += best == label;
        char p[32], l[32];
        const char *pn = fashion && best < 10 ? fashion_names[best] : kiln_data_class_name(d, (int)best);
        const char *ln = fashion && label >= 0 && label < 10 ? fashion_names[label] : kiln_data_class_name(d, label);
        if (pn) snprintf(p, sizeof p, "%s", pn); else snprintf(p, sizeof p, "%lld", (long long)best);
        if (ln) snprintf(l, sizeof l, "%s", ln); else snprintf(l, sizeof l, "%d", label);
        printf("%6d  %-14s %-14s %5.1f%%%s\n", i, p, l, kiln_model_outputs_probabilities(m) ? 100.0 * mx : 100.0 / sum, best == label ? "" : "   <- wrong");
    }
    printf("%d of %d correct\n", right, count);
done:
    kiln_safetensors_free(ck);
    kiln_tensor_free(out);
    kiln_data_iter_free(it);
    kiln_data_free(d);
    kiln_model_free(m);
    data_src_free(&ds);
    return rc;
}

/* summary --json FILE */
static int write_json(const kiln_model *m, const char *path) {
    char *j = NULL;
    if (kiln_model_to_json(m, &j) != KILN_OK) return fail("summary", 1);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(j, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f)) ok = false;
    free(j);
    if (!ok) { fprintf(stderr, "kiln summary: cannot write %s\n", path); return 1; }
    printf("Keras model JSON: %s\n", path);
    return 0;
}

/* summary --batch-size B [--accumulate N] [--optimizer O] [--device D]: the training step's memory plan */
static int print_memory(args *a, kiln_model *m) {
    kiln_optimizer opt;
    kiln_lr_schedule sched;
    if (parse_optimizer(a, &opt) || parse_schedule(a, &sched)) return 2;
    if (a->accumulate > 1 && a->batch % a->accumulate) {
        fprintf(stderr, "kiln summary: --batch-size %d is not divisible by --accumulate %d (e.g. --batch-size %d)\n", a->batch, a->accumulate,
                (a->batch / a->accumulate + 1) * a->accumulate);
        return 2;
    }
    kiln_compile_opts co = compile_opts(a, m, KILN_I32, opt, sched);
    kiln_memory_report r;
    if (kiln_compile(m, &co) != KILN_OK || kiln_model_memory(m, a->batch, a->accumulate, &r) != KILN_OK) return fail("summary", 1);
    printf("\n");
    kiln_memory_report_print(&r, stdout);
    kiln_memory_report_free(&r);
    return 0;
}

static int cmd_summary(args *a) {
    if (a->help) { summary_usage(stdout); return 0; }
    kiln_model *m = NULL;
    if (ONNX_FILE(a)) {
        if (!(m = model_of_file(a, "summary", KILN_SCALAR, 0))) return 1;
        if (a->load && kiln_model_load(m, a->load) != KILN_OK) { kiln_model_free(m); return fail("summary", 1); }
    } else if (a->model_file) {       /* the file's layers; with --load, the checkpoint's weights */
        m = ckpt_model;
        ckpt_model = NULL;
        kiln_compile_opts co = compile_opts(a, m, KILN_I32, kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
        if (a->load && (kiln_compile(m, &co) != KILN_OK || kiln_model_load(m, a->load) != KILN_OK)) { kiln_model_free(m); return fail("summary", 1); }
    } else if (a->load && kiln_model_from_checkpoint(a->load, &m) != KILN_OK) return fail("summary", 1);
    if (!m && !(m = kiln_model_preset(a->model, KILN_SCALAR, 10))) return fail("summary", 2);
    if (a->load) printf("Checkpoint %s: model %s, epoch %d\n", a->load, kiln_model_name(m), kiln_model_epoch(m));
    kiln_model_summary(m, stdout);
    if (a->precision) printf("Precision: %s\n", kiln_precision_name(cli_precision(a)));
    int rc = a->json_out ? write_json(m, a->json_out) : 0;
    if (!rc && (a->batch_given || a->accumulate > 0)) rc = print_memory(a, m);
    kiln_model_free(m);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return argc < 2 ? 1 : 0;
    }
    if (!strcmp(argv[1], "--version")) { printf("kiln %s\n", KILN_VERSION); return 0; }
    if (!strcmp(argv[1], "devices")) return cmd_devices(argc, argv);
    if (!strcmp(argv[1], "bench")) return cmd_bench(argc, argv);
    if (!strcmp(argv[1], "plot")) return cmd_plot(argc, argv);
    if (!strcmp(argv[1], "export")) return cmd_export(argc, argv);
    args a = { .data = NULL, .model = NULL, .optimizer = "adam", .epochs = 5, .batch = 64, .verbose = 1, .seed = 1,
               .prefetch = 2, .workers = 1, .val_split = -1, .min_delta = -1, .lr_step_factor = -1, .warmup_epochs = -1,
               .weight_decay = -1 };
    const char *cmd = argv[1];
    int (*fn)(args *) = NULL;
    if (!strcmp(cmd, "train")) fn = cmd_train;
    else if (!strcmp(cmd, "eval")) fn = cmd_eval;
    else if (!strcmp(cmd, "predict")) fn = cmd_predict;
    else if (!strcmp(cmd, "summary")) fn = cmd_summary;
    else { fprintf(stderr, "kiln: unknown command '%s' (see kiln --help)\n", cmd); return 2; }
    int rc = cli_parse(argc, argv, &a, cmd);
    if (!rc) rc = cli_check_precision(&a, cmd);
    if (!rc) rc = cli_check_paths(&a, cmd);      /* no output may be an input (tools/cli_paths.c) */
    if (rc) return rc;
    model_file = a.model_file;
    if (ONNX_FILE(&a) && a.model) { fprintf(stderr, "kiln %s: --model and --model-file both name a model; give one\n", cmd); return 2; }
    if (a.model_file && !ONNX_FILE(&a) && !a.help && (rc = use_model_file(&a, cmd))) { kiln_model_free(ckpt_model); return rc; }
    a.data_given = a.data != NULL;
    if (!a.data) a.data = DEFAULT_DATA;
    if (!a.help && fn != cmd_summary && (rc = cli_check_data_opts(&a, cmd))) return rc;
    if ((fn == cmd_train || (fn == cmd_summary && !a.load)) && !a.model && !a.model_file) a.model = "fashion_cnn";
    rc = fn == cmd_train ? cli_dist_run(&a, cmd_train) : fn(&a);
    kiln_model_free(ckpt_model);      /* a --model-file or checkpoint model no path took */
    return rc;
}
