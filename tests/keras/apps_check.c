/* keras_apps_check: for each (model.json, Keras's count_params) pair, Kiln loads the Keras model
 * JSON, has exactly Keras's parameter count, and trains one step (SGD 1e-4, batch 4, synthetic data; larger steps blow EfficientNet up in Keras too)
 * to a finite loss. Prints one line per model; exit 1 if any fails. Run by
 * tests/cli/test_keras_apps.sh on keras.applications models written by Keras 3. With --predict,
 * Kiln's predictions of a model given Keras's weights (the script compares them with Keras's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"

static int check(const char *path, long long want) {
    kiln_model *m = NULL;
    if (kiln_model_from_json_file(path, &m) != KILN_OK) { printf("FAIL %s: does not load: %s\n", path, kiln_last_error()); return 1; }
    long long got = (long long)kiln_model_param_count(m, false);
    if (got != want) { printf("FAIL %s: %lld parameters, Keras %lld\n", path, got, want); kiln_model_free(m); return 1; }
    kiln_shape in = kiln_model_input_shape(m), out = kiln_model_output_shape(m);
    int classes = out.rank == 1 ? (int)out.dim[0] : 0;
    kiln_dataset *d = kiln_dataset_synthetic(in, classes, 4, 1);
    int bad = !d || !classes;
    if (!bad) bad = kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(1e-4), .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                                         .from_logits = !kiln_model_outputs_probabilities(m) }) != KILN_OK ||
                    kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 1, .batch_size = 4 }) != KILN_OK;
    kiln_eval_result r = { 0 };
    if (!bad) bad = kiln_evaluate(m, d, NULL, &r) != KILN_OK || !isfinite(r.loss);
    if (bad) printf("FAIL %s: %lld parameters, but one training step fails: %s\n", path, got, classes ? kiln_last_error() : "the output is not a class vector");
    else printf("ok   %s: %lld parameters (Keras's count), one step trained, loss %.4f\n", path, got, r.loss);
    kiln_dataset_free(d);
    kiln_model_free(m);
    return bad;
}

static kiln_tensor *read_f32(const char *path, kiln_shape s) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, s);
    FILE *f = fopen(path, "rb");
    size_t n = (size_t)kiln_shape_numel(s);
    bool ok = t && f && fread(t->data, 4, n, f) == n && fgetc(f) == EOF;
    if (f) fclose(f);
    if (!ok) { printf("FAIL: %s: missing, or not %zu float32 values\n", path, n); kiln_tensor_free(t); return NULL; }
    return t;
}

/* --predict MODEL.json DIR N OUT.f32: Keras's weights (DIR/<layer>__<weight>.f32, float32 in
 * Kiln's element order) set into Kiln's model, predictions for DIR/x.f32 (N examples) written. */
static int predict(const char *json, const char *dir, int n, const char *out) {
    kiln_model *m = NULL;
    if (kiln_model_from_json_file(json, &m) != KILN_OK) { printf("FAIL %s: %s\n", json, kiln_last_error()); return 1; }
    char path[1024];
    int bad = 0;
    for (int i = 0; !bad && i < kiln_model_layer_count(m); i++) {
        kiln_layer *l = kiln_model_layer(m, i);
        for (int j = 0; !bad && j < kiln_layer_weight_count(l); j++) {
            const char *w = kiln_layer_weight_name(l, j), *slash = strchr(w, '/');
            snprintf(path, sizeof path, "%s/%.*s__%s.f32", dir, (int)(slash - w), w, slash + 1);
            kiln_tensor *t = read_f32(path, kiln_layer_weight_shape(l, j));
            bad = !t || kiln_model_set_weight(m, w, t) != KILN_OK;
            if (t && bad) printf("FAIL: %s: %s\n", w, kiln_last_error());
            kiln_tensor_free(t);
        }
    }
    kiln_shape in = kiln_model_input_shape(m), xs = { in.rank + 1, { n } };
    for (int i = 0; i < in.rank; i++) xs.dim[i + 1] = in.dim[i];
    snprintf(path, sizeof path, "%s/x.f32", dir);
    kiln_tensor *x = bad ? NULL : read_f32(path, xs), *y = NULL;
    bad = !x || kiln_predict(m, x, &(kiln_eval_opts){ .batch_size = n }, &y) != KILN_OK;
    FILE *f = bad ? NULL : fopen(out, "wb");
    if (!bad) bad = !f || fwrite(y->data, 4, (size_t)kiln_shape_numel(y->shape), f) != (size_t)kiln_shape_numel(y->shape);
    if (f) fclose(f);
    if (bad) printf("FAIL %s: predict: %s\n", json, kiln_last_error());
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_model_free(m);
    return bad;
}

int main(int argc, char **argv) {
    if (argc == 6 && !strcmp(argv[1], "--predict")) return predict(argv[2], argv[3], atoi(argv[4]), argv[5]);
    if (argc < 3 || argc % 2 == 0) { fprintf(stderr, "usage: keras_apps_check MODEL.json COUNT [MODEL.json COUNT ...]\n"); return 2; }
    int fails = 0;
    for (int i = 1; i + 1 < argc; i += 2) fails += check(argv[i], atoll(argv[i + 1]));
    printf("keras_apps_check: %d models, %d failed\n", (argc - 1) / 2, fails);
    return fails ? 1 : 0;
}
