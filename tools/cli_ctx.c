/* The checks and defaults every option-table command shares (kiln train / eval / predict /
 * summary), run before the command reads any file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"
#include "tools/commands.h"
#include "tools/cli_ctx.h"
#include "tools/cli_data.h"
#include "tools/cli_model.h"

int cli_fail(const char *cmd, int rc) { fprintf(stderr, "kiln %s: %s\n", cmd, kiln_last_error()); return rc; }

bool cli_onnx_file(const args *a) { return a->model_file && cli_is_onnx(a->model_file); }

int cli_ctx_init(cli_ctx *c, int argc, char **argv, const char *cmd) {
    memset(c, 0, sizeof *c);
    c->a = (args){ .data = NULL, .model = NULL, .optimizer = "adam", .epochs = 5, .batch = 64, .verbose = 1, .seed = 1,
                   .prefetch = 2, .workers = 1, .val_split = -1, .min_delta = -1, .lr_step_factor = -1, .warmup_epochs = -1,
                   .weight_decay = -1, .momentum = -1, .warmup_steps = -1 };
    args *a = &c->a;
    unsigned bit = cli_command_bit(cmd);
    int rc = cli_parse(argc, argv, a, cmd);
    if (!rc) rc = cli_check_precision(a, cmd);
    if (!rc) rc = cli_check_paths(a, cmd);      /* no output may be an input (tools/cli_paths.c) */
    if (rc) return rc;
    if (cli_onnx_file(a) && a->model) { fprintf(stderr, "kiln %s: --model and --model-file both name a model; give one\n", cmd); return 2; }
    if (a->model_file && !cli_onnx_file(a) && !a->help && (rc = cli_use_model_file(c, cmd))) return rc;
    a->data_given = a->data != NULL;
    if (!a->data) a->data = CLI_DEFAULT_DATA;
    if (!a->help && bit != CMD_SUMMARY && (rc = cli_check_data_opts(a, cmd))) return rc;
    if ((bit == CMD_TRAIN || (bit == CMD_SUMMARY && !a->load)) && !a->model && !a->model_file) a->model = "fashion_cnn";
    return 0;
}

void cli_ctx_free(cli_ctx *c) {
    kiln_model_free(c->arch);      /* a --model-file or checkpoint model no path took */
    c->arch = NULL;
    free(c->data_record);
    c->data_record = NULL;
}
