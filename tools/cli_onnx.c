/* --model-file FILE.onnx for kiln train / eval / predict / summary: the Kiln model an ONNX file
 * describes (kiln_model_from_onnx), fitted to the data the command reads. */
#include <stdio.h>
#include <string.h>
#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "tools/commands.h"

bool cli_is_onnx(const char *path) {
    size_t n = path ? strlen(path) : 0;
    return n > 5 && !strcmp(path + n - 5, ".onnx");
}

kiln_shape cli_onnx_input(const char *path) {
    kiln_model *m = NULL;
    if (kiln_model_from_onnx(path, &(kiln_onnx_model_opts){ .strip_softmax = true }, &m) != KILN_OK) return KILN_SCALAR;
    kiln_shape s = kiln_model_input_shape(m);
    kiln_model_free(m);
    return s;
}

/* Whether a is b's axes with the first moved last: NCHW [C, H, W] of an NHWC [H, W, C]. */
static bool chw_of(kiln_shape a, kiln_shape b) {
    if (a.rank != b.rank || a.rank < 2 || a.dim[0] != b.dim[b.rank - 1]) return false;
    for (int i = 1; i < a.rank; i++) if (a.dim[i] != b.dim[i - 1]) return false;
    return true;
}

kiln_model *cli_onnx_model(const char *path, const char *cmd, kiln_shape data, int classes) {
    kiln_onnx_model_opts o = { .strip_softmax = true };      /* the CLI trains and evaluates on logits */
    kiln_model *m = NULL;
    if (kiln_model_from_onnx(path, &o, &m) != KILN_OK) { fprintf(stderr, "kiln %s: %s\n", cmd, kiln_last_error()); return NULL; }
    kiln_shape in = kiln_model_input_shape(m);
    char a[64], b[64];
    if (data.rank && !kiln_shape_equal(in, data) && chw_of(in, data)) {   /* a PyTorch-style NCHW model fed Kiln's NHWC images */
        kiln_model_free(m);
        o.nhwc_input = true;
        if (kiln_model_from_onnx(path, &o, &m) != KILN_OK) { fprintf(stderr, "kiln %s: %s\n", cmd, kiln_last_error()); return NULL; }
        printf("%s takes NCHW images %s; Kiln's NHWC examples %s go through a transpose in front\n", path, kiln_shape_str(in, a, sizeof a),
               kiln_shape_str(data, b, sizeof b));
        in = kiln_model_input_shape(m);
    }
    if (data.rank && !kiln_shape_equal(in, data)) {
        fprintf(stderr, "kiln %s: %s takes %s examples but the data has %s examples\n", cmd, path, kiln_shape_str(in, a, sizeof a),
                kiln_shape_str(data, b, sizeof b));
        kiln_model_free(m);
        return NULL;
    }
    kiln_shape out = kiln_model_output_shape(m);
    if (classes > 0 && (out.rank != 1 || out.dim[0] < classes)) {
        fprintf(stderr, "kiln %s: %s outputs %s per example but the data has %d classes\n", cmd, path, kiln_shape_str(out, a, sizeof a), classes);
        kiln_model_free(m);
        return NULL;
    }
    return m;
}
