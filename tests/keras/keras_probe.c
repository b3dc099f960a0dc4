/* Test helper for tests/keras/test_keras_files.sh: Kiln's predictions on raw f32 inputs.
 *   keras_probe keras FILE.keras|FILE.h5 IN.f32 OUT.f32        the file's model and weights
 *   keras_probe weights MODEL.json W.weights.h5 IN.f32 OUT.f32  JSON architecture + Keras weights
 *   keras_probe ckpt CKPT.safetensors IN.f32 OUT.f32           a Kiln checkpoint
 *   keras_probe resave FILE.keras|FILE.h5 OUT.keras            read, then kiln_model_save_keras
 * IN.f32 holds N examples of the model's input shape; OUT.f32 gets [N, output shape]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"

static int die(const char *what) { fprintf(stderr, "keras_probe: %s: %s\n", what, kiln_last_error()); return 1; }

static int predict(kiln_model *m, const char *in, const char *out) {
    FILE *f = fopen(in, "rb");
    if (!f) { fprintf(stderr, "keras_probe: cannot open %s\n", in); return 1; }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    kiln_shape s = kiln_model_input_shape(m);
    int64_t per = kiln_shape_numel(s);
    if (per <= 0 || bytes % (per * 4)) { fprintf(stderr, "keras_probe: %s does not hold whole examples\n", in); fclose(f); return 1; }
    kiln_shape xs = { s.rank + 1, { bytes / (per * 4) } };
    for (int i = 0; i < s.rank; i++) xs.dim[i + 1] = s.dim[i];
    kiln_tensor *x = kiln_tensor_new(KILN_F32, xs), *y = NULL;
    size_t got = fread(x->data, 4, (size_t)(bytes / 4), f);
    fclose(f);
    if (got != (size_t)(bytes / 4)) { kiln_tensor_free(x); return 1; }
    if (kiln_predict(m, x, NULL, &y) != KILN_OK) { kiln_tensor_free(x); return die("predict"); }
    FILE *o = fopen(out, "wb");
    size_t n = (size_t)kiln_shape_numel(y->shape);
    int rc = !o || fwrite(y->data, 4, n, o) != n;
    if (o) fclose(o);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return rc;
}

int main(int argc, char **argv) {
    kiln_model *m = NULL;
    int rc;
    if (argc == 5 && !strcmp(argv[1], "keras")) {
        if (kiln_model_from_keras_file(argv[2], &m) != KILN_OK) return die(argv[2]);
        rc = predict(m, argv[3], argv[4]);
    } else if (argc == 6 && !strcmp(argv[1], "weights")) {
        if (kiln_model_from_json_file(argv[2], &m) != KILN_OK) return die(argv[2]);
        if (kiln_model_load_keras_weights(m, argv[3]) != KILN_OK) { kiln_model_free(m); return die(argv[3]); }
        rc = predict(m, argv[4], argv[5]);
    } else if (argc == 5 && !strcmp(argv[1], "ckpt")) {
        if (kiln_model_from_checkpoint(argv[2], &m) != KILN_OK) return die(argv[2]);
        rc = predict(m, argv[3], argv[4]);
    } else if (argc == 4 && !strcmp(argv[1], "resave")) {
        if (kiln_model_from_keras_file(argv[2], &m) != KILN_OK) return die(argv[2]);
        rc = kiln_model_save_keras(m, argv[3]) != KILN_OK ? die(argv[3]) : 0;
    } else {
        fprintf(stderr, "usage: keras_probe keras FILE IN OUT | weights JSON W IN OUT | ckpt CKPT IN OUT | resave FILE OUT\n");
        return 2;
    }
    kiln_model_free(m);
    return rc;
}
