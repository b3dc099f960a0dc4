/* libFuzzer target: the Keras model JSON / kiln.architecture builder (kiln_model_from_json: the
 * JSON parse, Sequential and Functional graphs, every layer class and its options, shapes,
 * parameter and FLOP counts) and a checkpoint's kiln.class_names list (nn_class_names_read), the
 * two metadata strings kiln_model_build_from_checkpoint reads. A model that builds must write
 * JSON that builds the same model again. Build and run: bash fuzz/run.sh [seconds]. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/nn.h"
#include "nn/nn_model.h"

static void check_model(const kiln_model *m) {
    if (!m || kiln_model_layer_count(m) < 1) __builtin_trap();
    for (int i = 0; i < kiln_model_layer_count(m); i++) {
        const kiln_layer *l = kiln_model_layer(m, i);
        kiln_shape s = kiln_layer_output_shape(l);
        if (!l || !kiln_layer_name(l) || !kiln_layer_type(l) || s.rank < 0 || s.rank > KILN_MAX_DIMS) __builtin_trap();
        (void)kiln_layer_flops(l);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    kiln_model *m = NULL;
    if (kiln_model_from_json(s, &m) == KILN_OK) {
        check_model(m);
        int64_t params = kiln_model_param_count(m, false);
        (void)kiln_model_param_count(m, true);
        (void)kiln_model_flops(m);
        char why[256];
        if (nn_class_names_read(m, s, why, sizeof why) == KILN_OK && kiln_model_class_count(m) < 0) __builtin_trap();
        char *j = NULL;                      /* what a checkpoint stores as kiln.architecture */
        if (kiln_model_to_json(m, &j) == KILN_OK) {
            kiln_model *m2 = NULL;
            if (kiln_model_from_json(j, &m2) != KILN_OK) __builtin_trap();
            check_model(m2);
            if (kiln_model_layer_count(m2) != kiln_model_layer_count(m) || kiln_model_param_count(m2, false) != params) __builtin_trap();
            kiln_model_free(m2);
        }
        free(j);
    } else if (m) {
        __builtin_trap();
    }
    kiln_model_free(m);
    free(s);
    return 0;
}
