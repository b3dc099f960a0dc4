/* Kiln's losses and metrics on given outputs, for tests/cli/test_keras_losses.sh to compare with
 * Keras's: an identity model (its outputs are its inputs) is evaluated on them, once per loss.
 * Usage: loss_metric_probe P.f32 N C LABELS (.i32 class ids or .f32 values) METRIC_LIST
 * Prints "loss NAME VALUE" for every loss that fits the labels and "metric NAME VALUE" for the list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/pipeline.h"

static kiln_tensor *read_file(const char *path, kiln_dtype t, kiln_shape sh) {
    kiln_tensor *x = kiln_tensor_new(t, sh);
    FILE *f = fopen(path, "rb");
    size_t n = (size_t)kiln_shape_numel(sh);
    if (!x || !f || fread(x->data, 4, n, f) != n) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
    fclose(f);
    return x;
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: loss_metric_probe P.f32 N C LABELS METRIC_LIST\n"); return 2; }
    int n = atoi(argv[2]), c = atoi(argv[3]);
    bool ids = strstr(argv[4], ".i32") != NULL;
    kiln_tensor *x = read_file(argv[1], KILN_F32, KILN_SHAPE(n, c)), *y = read_file(argv[4], ids ? KILN_I32 : KILN_F32, KILN_SHAPE(n));
    for (int k = KILN_LOSS_MSE; k < KILN_LOSS_COUNT; k++) {
        kiln_model *m = kiln_sequential("identity", KILN_SHAPE(c));
        kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_LINEAR });
        kiln_data *d = kiln_data_batch(kiln_data_from_arrays(x, y, ids ? c : 0), 32, false);
        kiln_eval_result r;
        kiln_status st = kiln_compile(m, &(kiln_compile_opts){ .loss = (kiln_loss_kind)k, .huber_delta = 0.7,
                                                                 .metric_list = k == KILN_LOSS_MSE ? argv[5] : NULL, .device = "cpu" });
        if (!st) st = kiln_evaluate_data(m, d, NULL, &r);
        if (st) { fprintf(stderr, "%s: %s\n", kiln_loss_name((kiln_loss_kind)k), kiln_last_error()); return 1; }
        printf("loss %s %.9g\n", kiln_loss_name((kiln_loss_kind)k), r.loss);
        for (int i = 0; k == KILN_LOSS_MSE && i < r.n_metrics; i++) printf("metric %s %.9g\n", kiln_model_metric_name(m, i), r.metrics[i]);
        kiln_data_free(d);
        kiln_model_free(m);
    }
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return 0;
}
