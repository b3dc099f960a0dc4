/* keras_apps_check: for each (model.json, Keras's count_params) pair, Kiln loads the Keras model
 * JSON, has exactly Keras's parameter count, and trains one step (SGD 1e-4, batch 4, synthetic data; larger steps blow EfficientNet up in Keras too)
 * to a finite loss. Prints one line per model; exit 1 if any fails. Run by
 * tests/cli/test_keras_apps.sh on keras.applications models written by Keras 3. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv) {
    if (argc < 3 || argc % 2 == 0) { fprintf(stderr, "usage: keras_apps_check MODEL.json COUNT [MODEL.json COUNT ...]\n"); return 2; }
    int fails = 0;
    for (int i = 1; i + 1 < argc; i += 2) fails += check(argv[i], atoll(argv[i + 1]));
    printf("keras_apps_check: %d models, %d failed\n", (argc - 1) / 2, fails);
    return fails ? 1 : 0;
}
