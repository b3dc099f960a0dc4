/* GPTs (GPTBlock, TiedOutput) exported to ONNX: two small GPTs (tanh and erf GELU, one with
 * dropout, which inference leaves out) and the gpt_char preset. The file takes int64 token ids;
 * Kiln's ONNX importer reads it back and its logits equal the model's within 1e-4 (round trip).
 * With a folder argument it also writes NAME.onnx, NAME.ids (int64 [3, T]) and NAME.logits (f32
 * [3, T, V], Kiln's) there for test_gpt_onnx_ort.sh, which runs them in onnxruntime.
 *   test_gpt_onnx [OUT_DIR] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/kiln.h"

static kiln_model *tiny_gpt(const char *name, bool tanh_gelu, double dropout) {
    kiln_model *m = kiln_model_new(name);
    kiln_init wte_init = kiln_init_normal(0, 0.5, 3), wpe_init = kiln_init_normal(0, 0.3, 4);
    kiln_layer *in = kiln_input(m, KILN_SHAPE(12));
    kiln_layer *tok = kiln_layer_embedding(m, &(kiln_embedding_opts){ .name = "wte", .input = in, .input_dim = 40, .output_dim = 16,
                                                                   .embeddings_initializer = &wte_init });
    kiln_layer *pos = kiln_layer_position_embedding(m, &(kiln_position_embedding_opts){ .name = "wpe", .input = tok, .sequence_length = 12,
                                                                                      .initializer = &wpe_init });
    kiln_layer *x = kiln_layer_add(m, &(kiln_merge_opts){ .name = "embed", .inputs = (kiln_layer *[]){ tok, pos }, .n_inputs = 2 });
    for (int i = 0; i < 2; i++) {
        char n[16];
        snprintf(n, sizeof n, "h_%d", i);
        x = kiln_layer_gpt_block(m, &(kiln_gpt_block_opts){ .name = n, .input = x, .num_heads = 2, .dropout = dropout,
                                                            .gelu_approximate = tanh_gelu, .init_stddev = 0.3 });
    }
    x = kiln_layer_layer_norm(m, &(kiln_layer_norm_opts){ .name = "ln_f", .input = x });
    kiln_layer *out = kiln_layer_tied_output(m, "lm_head", x, tok);
    kiln_model_functional(m, &in, 1, &out, 1);
    return m;
}

static void write_file(const char *dir, const char *name, const char *ext, const void *p, size_t bytes) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f && fwrite(p, 1, bytes, f) == bytes, "cannot write %s", path);
    if (f) fclose(f);
}

/* exports m, predicts 3 rows of ids with m and with the imported file, compares */
static void check_model(kiln_model *m, const char *dir, int vocab) {
    const char *name = kiln_model_name(m);
    int64_t T = kiln_model_input_shape(m).dim[0];
    CHECK_OK(kiln_model_status(m));
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(3, T)), *y = NULL, *y2 = NULL;
    int64_t *ids = malloc(sizeof *ids * (size_t)(3 * T));
    for (int64_t i = 0; i < 3 * T; i++) { ids[i] = (i * 7 + i / T * 5 + 3) % vocab; kiln_tensor_set(x, i, (double)ids[i]); }
    CHECK_OK(kiln_predict(m, x, NULL, &y));
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    CHECK_OK(kiln_model_export_onnx(m, path, NULL));
    kiln_model *back = NULL;
    kiln_status st = kiln_model_from_onnx(path, NULL, &back);
    CHECK_MSG(st == KILN_OK, "import of %s: %s", path, kiln_last_error());
    if (back) CHECK_OK(kiln_predict(back, x, NULL, &y2));
    double worst = y && y2 ? 0 : INFINITY;
    for (int64_t i = 0; y && y2 && i < kiln_shape_numel(y->shape); i++) worst = fmax(worst, fabs(kiln_tensor_get(y, i) - kiln_tensor_get(y2, i)));
    printf("%-10s export -> Kiln import: %lld logits, max |difference| %.3g\n", name, y ? (long long)kiln_shape_numel(y->shape) : 0LL, worst);
    CHECK_MSG(worst < 1e-4, "%s: round trip differs by %g", name, worst);
    if (y) {
        write_file(dir, name, "ids", ids, sizeof *ids * (size_t)(3 * T));
        write_file(dir, name, "logits", y->data, sizeof(float) * (size_t)kiln_shape_numel(y->shape));
    }
    free(ids);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_tensor_free(y2);
    kiln_model_free(back);
    kiln_model_free(m);
}

int main(int argc, char **argv) {
    char tmp[] = "/tmp/kiln_gpt_onnx.XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmp);
    if (!dir) { perror("mkdtemp"); return 1; }
    check_model(tiny_gpt("gpt_tanh", true, 0.1), dir, 40);
    check_model(tiny_gpt("gpt_erf", false, 0), dir, 40);
    check_model(kiln_model_preset("gpt_char", KILN_SHAPE(256), 65), dir, 65);
    if (argc == 1) {         /* our own temporary folder */
        const char *names[] = { "gpt_tanh", "gpt_erf", "gpt_char" }, *ext[] = { "onnx", "ids", "logits" };
        char p[1100];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) { snprintf(p, sizeof p, "%s/%s.%s", dir, names[i], ext[j]); unlink(p); }
        rmdir(dir);
    }
    return check_summary("test_gpt_onnx");
}
