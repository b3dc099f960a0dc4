/* kiln predict: a checkpoint's (or an ONNX file's) predictions for the first test examples, or
 * the three most likely classes of image files (--image). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/io.h"
#include "tools/commands.h"
#include "tools/cli_ctx.h"
#include "tools/cli_data.h"
#include "tools/cli_help.h"
#include "tools/cli_model.h"
#include "tools/cli_source.h"

static void predict_usage(FILE *f) {
    fprintf(f,
        "usage: kiln predict --load PATH [--data SPEC] [--count N] [--output FILE.npy|FILE.csv]\n"
        "       kiln predict --model-file F.onnx|F.keras|F.h5 [--load PATH] [--data SPEC] [--count N]\n"
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
        "  (without --data: the data options the checkpoint was trained on, which kiln train\n"
        "  records in it; --data names other data)\n"
        DATA_HELP
        "  --count N           how many test images (default 10; not with --image)\n"
        "  --output FILE       write the model's outputs for every test example (the first N with\n"
        "                      --count) to FILE.npy (float32 [N, outputs], numpy.load) or FILE.csv\n"
        "                      (a header output_0,... and one row per example); raw outputs: logits\n"
        "                      when the model ends without softmax\n"
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

/* Class names for --image when the checkpoint holds none: the --data image folder's, else Fashion-MNIST's for a 10-class
 * [28, 28, 1] model with the default or a Fashion-MNIST data set; NULL: print class numbers. */
static kiln_data *names_source(const cli_ctx *c, kiln_model *m, bool *fashion) {
    const args *a = &c->a;
    *fashion = cli_fashion_like(a, kiln_model_input_shape(m), kiln_model_output_shape(m).dim[0]);
    data_src ds;
    if (!a->data_given || *fashion || cli_open_data(c, "predict", false, &ds)) return NULL;
    kiln_data *names = ds.test;
    ds.test = NULL;
    cli_data_src_free(&ds);
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
                       : fashion && top[k] < 10 ? cli_fashion_names[top[k]] : names ? kiln_data_class_name(names, (int)top[k]) : NULL;
        if (nm) printf("%s %s %.1f%%", k ? "," : "", nm, 100.0 * pr[top[k]]);
        else printf("%s class %lld %.1f%%", k ? "," : "", (long long)top[k], 100.0 * pr[top[k]]);
    }
    printf("%s\n", resized ? " (resized to the model's input size)" : "");
}

/* kiln predict --load CKPT --image A.png [B.jpg ...]: the top three classes of each file. */
static int predict_images(cli_ctx *c) {
    const args *a = &c->a;
    if (a->count > 0 || a->val_split > 0) {
        fprintf(stderr, "kiln predict: --%s picks test examples; with --image the given files are predicted\n",
                a->count > 0 ? "count" : "validation-split");
        return 2;
    }
    bool own = cli_keras_own_weights(a);
    kiln_safetensors *ck = cli_onnx_file(a) || own ? NULL : cli_checkpoint_read(c, "predict");
    if (!ck && !cli_onnx_file(a) && !own) return 1;
    /* a channels-first image model ([C, H, W], C 1 or 3: PyTorch's): fed the NHWC images through a transpose in front */
    kiln_shape chw = cli_onnx_file(a) ? cli_onnx_input(a->model_file) : KILN_SCALAR, img = KILN_SCALAR;
    if (chw.rank == 3 && (chw.dim[0] == 1 || chw.dim[0] == 3) && chw.dim[2] != 1 && chw.dim[2] != 3) img = KILN_SHAPE(chw.dim[1], chw.dim[2], chw.dim[0]);
    kiln_model *m = cli_onnx_file(a) ? cli_onnx_file_model_loaded(a, "predict", img, 0)
                  : own ? cli_keras_file_compiled(c, "predict", 0, KILN_I32) : cli_checkpoint_model_alone(c, "predict", ck);
    kiln_safetensors_free(ck);
    if (!m) return 1;
    bool fashion = false;
    kiln_data *names = names_source(c, m, &fashion);
    int rc = 0;
    for (int i = 0; i < a->n_images && !rc; i++) {
        kiln_tensor *p = NULL;
        bool resized = false;
        if (kiln_predict_image(m, a->images[i], &p, &resized) != KILN_OK) rc = cli_fail("predict", 1);
        else print_top(a->images[i], p, resized, fashion, names, m);
        kiln_tensor_free(p);
    }
    kiln_data_free(names);
    kiln_model_free(m);
    return rc;
}

/* What one example of the data is called in the table: a CSV file's rows are rows, not images */
static const char *example_word(const args *a) {
    const char *d = a->data ? a->data : "";
    size_t n = strlen(d);
    bool csv = !strncmp(d, "csv:", 4) || (n > 4 && !strcasecmp(d + n - 4, ".csv")) || a->test_csv;
    return csv ? "row" : !strncmp(d, "npz:", 4) || (n > 4 && !strcasecmp(d + n - 4, ".npz")) ? "example" : "image";
}

/* The first count predictions against their labels: class, label and confidence per example (for
 * value labels, the values); 1 after a message when an output is not finite. */
static int print_predictions(const args *a, const kiln_model *m, const kiln_tensor *out, const kiln_tensor *y, const kiln_data *d,
                             int count, bool fashion) {
    int64_t c = out->shape.dim[1];
    for (int64_t i = 0; i < (int64_t)count * c; i++)
        if (!isfinite(((const float *)out->data)[i])) {
            fprintf(stderr, "kiln predict: the model's outputs are not finite (NaN or Inf) for %s %lld: the weights in %s "
                    "are not usable (training diverged, or the file is damaged); retrain, e.g. with a lower --lr\n",
                    example_word(a), (long long)(i / c), a->load);
            return 1;
        }
    int right = 0;
    if (y->dtype == KILN_F32) return cli_print_values(out, y, count);   /* regression: values, not classes */
    printf("%6s  %-14s %-14s %s\n", example_word(a), "predicted", "label", "confidence");
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
        const char *pn = fashion && best < 10 ? cli_fashion_names[best] : kiln_data_class_name(d, (int)best);
        const char *ln = fashion && label >= 0 && label < 10 ? cli_fashion_names[label] : kiln_data_class_name(d, label);
        if (pn) snprintf(p, sizeof p, "%s", pn); else snprintf(p, sizeof p, "%lld", (long long)best);
        if (ln) snprintf(l, sizeof l, "%s", ln); else snprintf(l, sizeof l, "%d", label);
        printf("%6d  %-14s %-14s %5.1f%%%s\n", i, p, l, kiln_model_outputs_probabilities(m) ? 100.0 * mx : 100.0 / sum, best == label ? "" : "   <- wrong");
    }
    printf("%d of %d correct\n", right, count);
    return 0;
}

int cmd_predict(cli_ctx *c) {
    const args *a = &c->a;
    if (a->help) { predict_usage(stdout); return 0; }
    if (!a->load && !cli_onnx_file(a) && !cli_keras_own_weights(a)) { fprintf(stderr, "kiln predict: --load PATH is required (a checkpoint from kiln train --save PATH), or --model-file FILE.onnx|FILE.keras|FILE.h5\n"); return 2; }
    if (a->threads) kiln_set_num_threads(a->threads);
    if (a->n_images) return predict_images(c);
    bool own = cli_keras_own_weights(a);     /* --model-file model.keras / model.h5: its own weights */
    kiln_safetensors *ck = cli_onnx_file(a) || own ? NULL : cli_checkpoint_read(c, "predict");
    if (!ck && !cli_onnx_file(a) && !own) return 1;
    data_src ds;
    if (cli_open_data(c, "predict", false, &ds)) { kiln_safetensors_free(ck); return 1; }
    if (a->output && !cli_output_kind_ok(a->output)) {
        fprintf(stderr, "kiln predict: --output %s: give a .npy or .csv file\n", a->output);
        cli_data_src_free(&ds); kiln_safetensors_free(ck);
        return 2;
    }
    int count = a->count > 0 ? a->count : a->output ? (int)kiln_data_source_size(ds.test) : 10, rc = 0;   /* --count: 0 when not given */
    if (count > kiln_data_source_size(ds.test)) count = (int)kiln_data_source_size(ds.test);
    bool fashion = strstr(a->data, "fashion") != NULL && kiln_data_num_classes(ds.test) == 10;
    kiln_model *m = NULL;
    kiln_tensor *out = NULL, *x = NULL, *y = NULL;
    kiln_data *d = NULL;
    kiln_data_iter *it = NULL;
    if ((rc = cli_onnx_file(a) ? 0 : cli_check_shapes(c, "predict", a->model, kiln_data_example_shape(ds.test)))) goto done;
    cli_say_whole(&ds, a->data);
    m = cli_onnx_file(a) ? cli_onnx_file_model_loaded(a, "predict", kiln_data_example_shape(ds.test), kiln_data_num_classes(ds.test))
        : own ? cli_keras_file_compiled(c, "predict", kiln_data_num_classes(ds.test), kiln_data_label_dtype(ds.test))
                         : cli_checkpoint_model(c, "predict", ck, kiln_data_example_shape(ds.test), kiln_data_num_classes(ds.test), kiln_data_label_dtype(ds.test));
    if (!m) { rc = 1; goto done; }
    d = kiln_data_batch(ds.test, count, false);       /* the first `count` test examples */
    ds.test = NULL;
    if (!d || kiln_data_iter_new(d, 0, &it) != KILN_OK || kiln_data_iter_next(it, &x, &y) != KILN_OK || !x) { rc = cli_fail("predict", 1); goto done; }
    if (kiln_predict(m, x, &(kiln_eval_opts){ .batch_size = a->batch }, &out) != KILN_OK) { rc = cli_fail("predict", 1); goto done; }
    rc = a->output ? cli_write_predictions(a->output, out) : print_predictions(a, m, out, y, d, count, fashion);
done:
    kiln_safetensors_free(ck);
    kiln_tensor_free(out);
    kiln_data_iter_free(it);
    kiln_data_free(d);
    kiln_model_free(m);
    cli_data_src_free(&ds);
    return rc;
}
