/* The CLI's commands, one file each (tools/cmd_<name>.c), and what they share. */
#ifndef KILN_TOOLS_COMMANDS_H
#define KILN_TOOLS_COMMANDS_H
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Seconds on a monotonic clock. */
static inline double cli_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
/* Strict numeric options (tools/cli_num.c): 0 and *out set when val is a whole number in
 * [lo, hi] (cli_real: finite, in the range, ends open when asked); else a message naming cmd,
 * flag, the range and val on stderr, and 2 (the usage exit status). */
int cli_int(const char *cmd, const char *flag, const char *val, long long lo, long long hi, long long *out);
int cli_int32(const char *cmd, const char *flag, const char *val, int lo, int hi, int *out);
int cli_u64(const char *cmd, const char *flag, const char *val, uint64_t *out);
int cli_real(const char *cmd, const char *flag, const char *val, double lo, double hi, bool open_lo, bool open_hi,
             double *out);
/* Bounds shared by the commands. */
#define CLI_MAX_EPOCHS 1000000   /* = KILN_MAX_EPOCHS */
#define CLI_MAX_BATCH (1 << 20)
#define CLI_MAX_THREADS 1024      /* = KILN_MAX_THREADS */
/* --model-file FILE.onnx (tools/cli_onnx.c) */
#include "kiln/nn.h"
bool cli_is_onnx(const char *path);
kiln_shape cli_onnx_input(const char *path);                 /* rank 0 when it cannot be read */
/* The model of an ONNX file for data examples of shape data (rank 0: any) and classes classes
 * (0: any): a final Softmax left out (the CLI uses logits), an NCHW model fed NHWC examples
 * through a transpose; NULL after a message on stderr naming cmd. */
kiln_model *cli_onnx_model(const char *path, const char *cmd, kiln_shape data, int classes);
/* The commands: argv[1] is the command's name. train / eval / predict / summary take the option
 * table's parse of argv (tools/cli_ctx.h). */
typedef struct cli_ctx cli_ctx;
int cmd_train(cli_ctx *c);
int cmd_eval(cli_ctx *c);
int cmd_predict(cli_ctx *c);
int cmd_summary(cli_ctx *c);
int cmd_devices(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_tokenizer(int argc, char **argv);
int cmd_generate(int argc, char **argv);
#endif
