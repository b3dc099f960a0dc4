/* kiln eval: the loss and accuracy of a checkpoint (or an ONNX file) on the evaluation split. */
#include <stdio.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/io.h"
#include "tools/commands.h"
#include "tools/cli_ctx.h"
#include "tools/cli_help.h"
#include "tools/cli_model.h"
#include "tools/cli_source.h"

static void eval_usage(FILE *f) {
    fprintf(f,
        "usage: kiln eval --load PATH [--data SPEC] [--batch-size N] [--threads N]\n"
        "       kiln eval --model-file F.onnx|F.keras|F.h5 [--load PATH] [--data SPEC] ...\n\n"
        "Loads a checkpoint saved by 'kiln train --save PATH' and prints the loss and accuracy on\n"
        "every example of the test set; for a source without a test split (an image folder without\n"
        "test/ or val/ sub-folders) on every example of it, and says so. The model is the one\n"
        "named in the checkpoint (override with --model NAME).\n\n"
        "options:\n"
        "  --load PATH         the checkpoint (required)\n"
        "  (without --data: the data options the checkpoint was trained on, which kiln train\n"
        "  records in it; --data names other data)\n"
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

int cmd_eval(cli_ctx *c) {
    args *a = &c->a;
    if (a->help) { eval_usage(stdout); return 0; }
    bool own = cli_keras_own_weights(a);     /* --model-file model.keras / model.h5: its own weights */
    if (!a->load && !cli_onnx_file(a) && !own) { fprintf(stderr, "kiln eval: --load PATH is required (a checkpoint from kiln train --save PATH), or --model-file FILE.onnx|FILE.keras|FILE.h5\n"); return 2; }
    if (a->threads) kiln_set_num_threads(a->threads);
    kiln_safetensors *ck = cli_onnx_file(a) || own ? NULL : cli_checkpoint_read(c, "eval");
    if (!ck && !cli_onnx_file(a) && !own) return 1;
    data_src ds;
    if (cli_open_data(c, "eval", false, &ds)) { kiln_safetensors_free(ck); return 1; }
    int rc = cli_onnx_file(a) ? 0 : cli_check_shapes(c, "eval", a->model, kiln_data_example_shape(ds.test));
    kiln_model *m = NULL;
    kiln_data *vp = NULL;
    kiln_eval_result r;
    char split[96];
    cli_split_name(&ds, split, sizeof split);
    if (rc) goto out;
    cli_say_whole(&ds, a->data);
    m = cli_onnx_file(a) ? cli_onnx_file_model_loaded(a, "eval", kiln_data_example_shape(ds.test), kiln_data_num_classes(ds.test))
        : own ? cli_keras_file_compiled(c, "eval", kiln_data_num_classes(ds.test), kiln_data_label_dtype(ds.test))
                         : cli_checkpoint_model(c, "eval", ck, kiln_data_example_shape(ds.test), kiln_data_num_classes(ds.test), kiln_data_label_dtype(ds.test));
    if (!m) { rc = 1; goto out; }
    vp = cli_eval_pipeline(a, ds.test, ds.images);
    ds.test = NULL;
    if (!vp) rc = cli_fail("eval", 1);
    else if (kiln_evaluate_data(m, vp, NULL, &r) != KILN_OK) rc = cli_fail("eval", 1);
    else {
        char acc[48] = "";
        kiln_compile_opts co = cli_compile_opts(a, m, kiln_data_label_dtype(vp), kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
        if (co.metrics & KILN_METRIC_ACCURACY) snprintf(acc, sizeof acc, " accuracy %.2f%%,", r.accuracy * 100);
        printf("%s (epoch %d) on %s: %s%s loss %.4f, %lld examples, %.1f s\n", kiln_model_name(m), kiln_model_epoch(m),
               a->data, split, acc, r.loss, (long long)r.count, r.seconds);
    }
out:
    kiln_safetensors_free(ck);
    kiln_model_free(m);
    kiln_data_free(vp);
    cli_data_src_free(&ds);
    return rc;
}
