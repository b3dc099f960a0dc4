/* kiln summary: a model's layers, shapes, parameters and FLOPs (--model, --model-file or the one a
 * checkpoint holds); --json writes it as Keras JSON, --batch-size its training step's memory. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/io.h"
#include "tools/commands.h"
#include "tools/cli_ctx.h"
#include "tools/cli_help.h"
#include "tools/cli_model.h"
#include "tools/cli_train_opts.h"

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
        "  --context N         a GPT model (gpt_char, gpt2): its context in tokens (default 256, 1024)\n"
        "  --optimizer NAME    the optimizer whose state is counted (default adam)\n"
        "  --device D          plan for auto (default), cpu, gpu (the GPU's plan needs a GPU), ref\n"
        PRECISION_HELP
        "\nexamples:\n"
        "  kiln summary --model-file model.json        # a model Keras saved with model.to_json()\n"
        "  kiln summary --model cifar_cnn --json cifar_cnn.json\n"
        "  kiln summary --model cifar_cnn --batch-size 128 --accumulate 4\n", kiln_model_preset_names());
}

/* summary --json FILE */
static int write_json(const kiln_model *m, const char *path) {
    char *j = NULL;
    if (kiln_model_to_json(m, &j) != KILN_OK) return cli_fail("summary", 1);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(j, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f)) ok = false;
    free(j);
    if (!ok) { fprintf(stderr, "kiln summary: cannot write %s\n", path); return 1; }
    printf("Keras model JSON: %s\n", path);
    return 0;
}

/* summary --batch-size B [--accumulate N] [--optimizer O] [--device D]: the training step's memory plan */
static int print_memory(const args *a, kiln_model *m) {
    kiln_optimizer opt;
    kiln_lr_schedule sched;
    if (cli_parse_optimizer(a, &opt) || cli_parse_schedule(a, &sched)) return 2;
    if (a->accumulate > 1 && a->batch % a->accumulate) {
        fprintf(stderr, "kiln summary: --batch-size %d is not divisible by --accumulate %d (e.g. --batch-size %d)\n", a->batch, a->accumulate,
                (a->batch / a->accumulate + 1) * a->accumulate);
        return 2;
    }
    kiln_compile_opts co = cli_compile_opts(a, m, KILN_I32, opt, sched);
    kiln_memory_report r;
    if (kiln_compile(m, &co) != KILN_OK || kiln_model_memory(m, a->batch, a->accumulate, &r) != KILN_OK) return cli_fail("summary", 1);
    printf("\n");
    kiln_memory_report_print(&r, stdout);
    kiln_memory_report_free(&r);
    return 0;
}

int cmd_summary(cli_ctx *c) {
    const args *a = &c->a;
    if (a->help) { summary_usage(stdout); return 0; }
    kiln_model *m = NULL;
    if (cli_onnx_file(a)) {
        if (!(m = cli_onnx_file_model(a, "summary", KILN_SCALAR, 0))) return 1;
        if (a->load && kiln_model_load(m, a->load) != KILN_OK) { kiln_model_free(m); return cli_fail("summary", 1); }
    } else if (a->model_file) {       /* the file's layers; with --load, the checkpoint's weights */
        m = c->arch;
        c->arch = NULL;
        kiln_compile_opts co = cli_compile_opts(a, m, KILN_I32, kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
        if (a->load && (kiln_compile(m, &co) != KILN_OK || kiln_model_load(m, a->load) != KILN_OK)) { kiln_model_free(m); return cli_fail("summary", 1); }
    } else if (a->load && kiln_model_from_checkpoint(a->load, &m) != KILN_OK) return cli_fail("summary", 1);
    if (!m && !(m = kiln_model_preset(a->model, a->context > 0 ? KILN_SHAPE(a->context) : KILN_SCALAR, 0))) return cli_fail("summary", 2);
    if (a->load) printf("Checkpoint %s: model %s, epoch %d\n", a->load, kiln_model_name(m), kiln_model_epoch(m));
    kiln_model_summary(m, stdout);
    if (a->precision) printf("Precision: %s\n", kiln_precision_name(cli_precision(a)));
    int rc = a->json_out ? write_json(m, a->json_out) : 0;
    if (!rc && (a->batch_given || a->accumulate > 0)) rc = print_memory(a, m);
    kiln_model_free(m);
    return rc;
}
