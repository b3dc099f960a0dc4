/* One run of kiln train / eval / predict / summary: its options and the model a file described,
 * passed to every step instead of file-level variables (tools/cli_ctx.c). */
#ifndef KILN_TOOLS_CLI_CTX_H
#define KILN_TOOLS_CLI_CTX_H
#include <stdbool.h>
#include "kiln/nn.h"
#include "tools/cli_args.h"

typedef struct cli_ctx {
    args a;                 /* the options (tools/cli_args.c) */
    /* The model --model-file's Keras JSON or --load's kiln.architecture describes, built once; the
     * path that uses it takes it (NULL after); cli_ctx_free frees one that no path took. */
    kiln_model *arch;
    char model_name[96];    /* a.model points here when a file named the model */
    char *data_record;      /* the strings a.data & co point into when --load's checkpoint named the data */
    char gpu_list[256];     /* a.fit_devices for --gpus N: "0,1,...,N-1" (tools/cli_dist.c) */
} cli_ctx;

/* Parses argv for cmd ("train", "eval", "predict", "summary") into c and checks what every
 * command checks before it reads anything: the options, --precision, inputs against outputs,
 * --model against --model-file (a Keras JSON one is built here, into c->arch), the data options;
 * then the defaults (--data, --model). 0, or the exit status after a message. */
int cli_ctx_init(cli_ctx *c, int argc, char **argv, const char *cmd);
void cli_ctx_free(cli_ctx *c);

/* "kiln CMD: <kiln_last_error()>" on stderr; returns rc. */
int cli_fail(const char *cmd, int rc);
/* --model-file names an ONNX file (tools/cli_onnx.c); other model files are Keras JSON. */
bool cli_onnx_file(const args *a);
#endif
