/* A helper for tests/onnx/compare_ort.py: Kiln's side of the onnxruntime comparison.
 *   onnx_probe presets                    the built-in model names, one per line
 *   onnx_probe shape CKPT                 the checkpoint model's input shape ("28 28 1")
 *   onnx_probe mixed CKPT                 builds the C-API test model (every layer type and
 *                                         activation), trains it a few steps, saves CKPT
 *   onnx_probe apps CKPT                  the same with issue 29's layer types (apps_model)
 *   onnx_probe layers1d CKPT              the same with the 1-D layers, Conv2DTranspose, bilinear UpSampling2D
 *   onnx_probe probs CKPT X.f32 OUT.f32   softmax of the checkpoint model's outputs for X
 *   onnx_probe import FILE.onnx X.f32 OUT.f32 [--nhwc]
 *                                         the same through kiln_model_from_onnx (--nhwc: the
 *                                         file takes NCHW images, X holds NHWC ones)
 * X.f32 / OUT.f32: raw little-endian float32, examples back to back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"

static int fail(const char *what) { fprintf(stderr, "onnx_probe: %s: %s\n", what, kiln_last_error()); return 1; }

#include "mixed_model.h"

static kiln_tensor *read_x(const char *path, kiln_shape in) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return NULL; }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    int64_t per = kiln_shape_numel(in);
    kiln_shape s = { .rank = in.rank + 1 };
    s.dim[0] = bytes / 4 / per;
    for (int i = 0; i < in.rank; i++) s.dim[i + 1] = in.dim[i];
    kiln_tensor *x = kiln_tensor_new(KILN_F32, s);
    if (x && fread(x->data, 4, (size_t)(s.dim[0] * per), f) != (size_t)(s.dim[0] * per)) { kiln_tensor_free(x); x = NULL; }
    fclose(f);
    return x;
}

/* softmax of m's outputs for X, written to out (probs: the outputs are probabilities already). */
static int write_probs(kiln_model *m, const char *xpath, const char *out, bool probs) {
    kiln_tensor *x = read_x(xpath, kiln_model_input_shape(m)), *y = NULL;
    if (!x) return 1;
    if (kiln_predict(m, x, &(kiln_eval_opts){ .batch_size = 100 }, &y) != KILN_OK) { kiln_tensor_free(x); return fail("predict"); }
    int64_t n = y->shape.dim[0], c = kiln_shape_numel(y->shape) / n;
    float *p = y->data;
    for (int64_t i = 0; i < n && !probs; i++) {
        double mx = p[i * c], s = 0;
        for (int64_t j = 1; j < c; j++) mx = fmax(mx, p[i * c + j]);
        for (int64_t j = 0; j < c; j++) s += exp((double)p[i * c + j] - mx);
        for (int64_t j = 0; j < c; j++) p[i * c + j] = (float)(exp((double)p[i * c + j] - mx) / s);
    }
    FILE *f = fopen(out, "wb");
    int rc = !f || fwrite(p, 4, (size_t)(n * c), f) != (size_t)(n * c);
    if (f) fclose(f);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return rc;
}

int main(int argc, char **argv) {
    const char *cmd = argc > 1 ? argv[1] : "";
    if (!strcmp(cmd, "presets")) {
        char names[512];
        snprintf(names, sizeof names, "%s", kiln_model_preset_names());
        for (char *save = NULL, *t = strtok_r(names, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) printf("%s\n", t);
        return 0;
    }
    kiln_model *m = NULL;
    if (!strcmp(cmd, "shape") && argc == 3) {
        if (kiln_model_from_checkpoint(argv[2], &m) != KILN_OK) return fail(argv[2]);
        kiln_shape s = kiln_model_input_shape(m);
        for (int i = 0; i < s.rank; i++) printf("%s%lld", i ? " " : "", (long long)s.dim[i]);
        printf("\n");
        kiln_model_free(m);
        return 0;
    }
    if ((!strcmp(cmd, "mixed") || !strcmp(cmd, "apps") || !strcmp(cmd, "layers1d")) && argc == 3) {
        m = !strcmp(cmd, "mixed") ? mixed_model() : !strcmp(cmd, "apps") ? apps_model() : layers1d_model();
        kiln_model_set_seed(m, 5);
        kiln_dataset *d = kiln_dataset_synthetic(KILN_SHAPE(12, 12, 3), 10, 512, 3);
        int rc = kiln_model_status(m) || !d ||
                 kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(3e-3), .from_logits = true, .device = "cpu" }) ||
                 kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 2, .batch_size = 32 }) || kiln_model_save(m, argv[2], false);
        if (rc) fail("mixed");
        kiln_dataset_free(d);
        kiln_model_free(m);
        return rc;
    }
    if (!strcmp(cmd, "probs") && argc == 5) {
        if (kiln_model_from_checkpoint(argv[2], &m) != KILN_OK) return fail(argv[2]);
        int rc = write_probs(m, argv[3], argv[4], false);
        kiln_model_free(m);
        return rc;
    }
    if (!strcmp(cmd, "import") && (argc == 5 || argc == 6)) {
        bool nhwc = argc == 6 && !strcmp(argv[5], "--nhwc");
        if (kiln_model_from_onnx(argv[2], &(kiln_onnx_model_opts){ .nhwc_input = nhwc, .strip_softmax = true }, &m) != KILN_OK) return fail(argv[2]);
        int rc = write_probs(m, argv[3], argv[4], false);
        kiln_model_free(m);
        return rc;
    }
    fprintf(stderr, "usage: onnx_probe presets | shape CKPT | mixed|apps|layers1d CKPT | probs CKPT X.f32 OUT.f32 | import FILE.onnx X.f32 OUT.f32 [--nhwc]\n");
    return 2;
}
