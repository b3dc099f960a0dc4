/* kiln: the command-line tool. main finds the command in the table below and runs it; each
 * command lives in its own tools/cmd_<name>.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kiln/kiln.h"
#include "tools/commands.h"
#include "tools/cli_ctx.h"

/* A command parses its own argv (run_argv), or takes the option table's parse of it (run: kiln
 * train / eval / predict / summary, tools/cli_args.c, checked by cli_ctx_init). */
typedef struct command {
    const char *name;
    int (*run_argv)(int argc, char **argv);
    int (*run)(cli_ctx *c);
    const char *help;            /* its line in kiln --help */
} command;

static const command commands[] = {
    { "train", NULL, cmd_train, "train a model (with no options: the default CNN on Fashion-MNIST)" },
    { "eval", NULL, cmd_eval, "measure a saved model's accuracy on the test set" },
    { "predict", NULL, cmd_predict, "show a saved model's predictions for a few test images or image files" },
    { "summary", NULL, cmd_summary, "print a model's layers, output shapes, parameter counts and FLOPs" },
    { "devices", cmd_devices, NULL, "list the CPU and GPUs Kiln can use, with memory and versions" },
    { "bench", cmd_bench, NULL, "time training and inference on each device (CPU vs GPU table)" },
    { "plot", cmd_plot, NULL, "draw learning curves (loss, accuracy) from a history CSV to PNG or SVG" },
    { "export", cmd_export, NULL, "write a saved model as an ONNX file (for onnxruntime, TensorRT, ...) or a Keras 3 .keras file" },
    { "tokenize", cmd_tokenize, NULL, "encode a text file to token ids with a tokenizer.json (or decode ids)" },
    { "tokenizer", cmd_tokenizer, NULL, "train a byte-level BPE tokenizer on a text file (kiln tokenizer train)" },
    { "generate", cmd_generate, NULL, "continue a prompt of token ids with a GPT model (KV cache; Hugging Face GPT-2 folders too)" },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "kiln %s - train neural networks on the GPU or the CPU\n\n"
               "usage: kiln <command> [options]\n\n"
               "commands:\n", KILN_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
    fprintf(f,
        "  --help       show this help (kiln <command> --help for a command's options)\n"
        "  --version    show the version\n\n"
        "examples:\n"
        "  kiln train                                  # fashion_cnn, 5 epochs, prints test accuracy\n"
        "  kiln train --epochs 2 --save model.safetensors --history history.csv\n"
        "  kiln eval --load model.safetensors\n"
        "  kiln train --model cifar_cnn --data synthetic --epochs 1   # throughput run\n"
        "  kiln train --model cifar_cnn --data cifar10:DIR --augment flip,crop   # CIFAR-10 binary batches\n");
}

/* OpenMP threads that have nothing to do sleep instead of spinning: libgomp's default spin keeps
 * every core busy between parallel regions, and when other processes share the cores each region
 * then waits for descheduled threads (fashion_cnn on 2 busy cores: 234-482 img/s spinning,
 * 1350-3083 sleeping; docs/performance.md). libgomp reads OMP_WAIT_POLICY once, as it loads,
 * before main: so the process starts again with it set. A policy the user set is kept. */
#define KILN_OMP_WAIT_POLICY "passive"     /* python/kiln/__init__.py sets the same */
static void omp_wait_policy(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || getenv("KILN_OMP_SET")) return;
    setenv("OMP_WAIT_POLICY", KILN_OMP_WAIT_POLICY, 1);
    setenv("KILN_OMP_SET", "1", 1);            /* once, even if the exec fails */
    execv("/proc/self/exe", argv);              /* returns only on failure: go on as we are */
}

int main(int argc, char **argv) {
    omp_wait_policy(argv);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return argc < 2 ? 1 : 0;
    }
    if (!strcmp(argv[1], "--version")) { printf("kiln %s\n", KILN_VERSION); return 0; }
    const command *cmd = NULL;
    for (size_t i = 0; i < N_COMMANDS && !cmd; i++)
        if (!strcmp(argv[1], commands[i].name)) cmd = &commands[i];
    if (!cmd) { fprintf(stderr, "kiln: unknown command '%s' (see kiln --help)\n", argv[1]); return 2; }
    if (cmd->run_argv) return cmd->run_argv(argc, argv);
    cli_ctx c;
    int rc = cli_ctx_init(&c, argc, argv, cmd->name);
    if (!rc) rc = cmd->run(&c);
    cli_ctx_free(&c);
    return rc;
}
