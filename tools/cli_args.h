/* The options of kiln train / eval / predict / summary: one table says which command takes which
 * option, its kind and its range (tools/cli_args.c). */
#ifndef KILN_TOOLS_CLI_ARGS_H
#define KILN_TOOLS_CLI_ARGS_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { CMD_TRAIN = 1, CMD_EVAL = 2, CMD_PREDICT = 4, CMD_SUMMARY = 8 };
#define CLI_MAX_IMAGES 256
#define CLI_DEFAULT_DATA "/usr/share/datasets/fashion-mnist"   /* --data when not given */

typedef struct args {
    const char *output;        /* predict --output FILE.npy|FILE.csv */
    const char *model_file;    /* --model-file: Keras model JSON (.json) or an ONNX file (.onnx) */
    const char *data, *model, *optimizer, *save, *load, *history, *device, *schedule, *augment, *monitor;
    const char *loss, *metrics, *label_column, *test_csv, *tensorboard;   /* NULL: not given */
    int tensorboard_every;     /* 0: per epoch only */
    const char *images[CLI_MAX_IMAGES];
    int n_images;
    int epochs, batch, threads, verbose, count, prefetch, workers, gpu_mem_mib;
    int patience;              /* --early-stopping; 0: off */
    int lr_step_epochs;        /* 0: not given */
    long long limit;
    /* < 0: not given */
    double lr, val_split, min_delta, lr_step_factor, warmup_epochs, weight_decay, clipnorm, momentum;
    bool nesterov;             /* --nesterov (SGD) */
    uint64_t seed;
    bool data_given;           /* --data given (else the default data set) */
    bool help, data_on_device, log_placement, strict_load, save_best;
    const char *json_out;      /* summary --json FILE: write the model as Keras model JSON */
    struct kiln_dist *dist;    /* train under mpirun: this process's place in the job (tools/cli_dist.c) */
    const char *gpus, *devices_list;   /* train --gpus N|all, --devices LIST (mirrored replicas) */
    const char *fit_devices;   /* what they ask of kiln_fit_opts.devices (tools/cli_dist.c), or NULL */
    int accumulate;            /* --accumulate N: micro-batches per step (0: none) */
    int context;               /* --context N: a GPT preset's context (tokens; 0: its own); train / eval
                                  --block-size N: the text windows' length, which sets it */
    int steps_per_epoch;       /* train --steps-per-epoch N: at most N batches an epoch (0: all) */
    const char *tokenizer;     /* train / eval --tokenizer FILE: tokenizer.json for --data text: */
    double warmup_steps;       /* --warmup-steps N: cosine warm-up in steps (-1: not given) */
    bool batch_auto;           /* --batch-size auto */
    bool batch_given;          /* --batch-size given (summary: print the training step's memory) */
    int memory_limit_mib;      /* --memory-limit MIB (train --batch-size auto on the CPU; 0: not given) */
    bool debug_numerics;       /* --debug-numerics */
    const char *precision;     /* --precision float32 | mixed_bfloat16 (bf16) | mixed_float16 (fp16); NULL: float32 */
    bool sync_batchnorm;       /* --sync-batchnorm: batch norm statistics over every replica's rows */
    int bucket_kb;             /* --bucket-kb N: gradient all-reduce buckets of N KiB (0: 4 MiB) */
} args;

/* The command's bit (CMD_*), 0 for an unknown name. */
unsigned cli_command_bit(const char *cmd);
/* Parses argv[2..] for cmd into a (defaults already set): 0, or 2 after a message on stderr naming
 * the option (unknown, another command's, missing or unwanted value, out of range). */
int cli_parse(int argc, char **argv, args *a, const char *cmd);
/* --precision: 0 when absent or valid, else 2 after a message naming the accepted values. */
int cli_check_precision(const args *a, const char *cmd);
/* The policy --precision names (FLOAT32 when absent); call after cli_check_precision. */
#include "kiln/nn.h"
kiln_precision cli_precision(const args *a);
/* Writes the options cmd takes, comma-separated ("--model, --load, --help"). */
void cli_list_options(FILE *f, const char *cmd);
#endif
