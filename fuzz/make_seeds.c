/* Writes fuzz_onnx's and fuzz_keras_json's zoo seeds: each built-in model on a small input with
 * 3 classes and its Conv2D filters and Dense units divided by 8 (16 for the widest) (so the exported ONNX file stays
 * a few KB: the structure is what the fuzzers need, not the weights), as Keras JSON and as ONNX
 * (with and without --probabilities' Softmax). Not run by CI; regenerate the committed seeds with
 *   clang -Iinclude -Isrc -I/usr/include/cjson fuzz/make_seeds.c build-fuzz-lib/libkiln.a \
 *     <kiln.pc's libs> -fsanitize=address,undefined -o /tmp/make_seeds && /tmp/make_seeds fuzz/corpus */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>
#include "kiln/nn.h"
#include "kiln/onnx.h"

static int div_by = 8;
static void shrink(cJSON *j) {
    if (!j) return;
    if (cJSON_IsObject(j)) {
        cJSON *v;
        if ((v = cJSON_GetObjectItemCaseSensitive(j, "filters")) && cJSON_IsNumber(v) && v->valueint > 4)
            cJSON_SetNumberValue(v, (v->valueint / div_by > 2 ? v->valueint / div_by : 2));
        if ((v = cJSON_GetObjectItemCaseSensitive(j, "units")) && cJSON_IsNumber(v) && v->valueint > 10)
            cJSON_SetNumberValue(v, (v->valueint / div_by));
    }
    for (cJSON *c = j->child; c; c = c->next) shrink(c);
}

static int write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(s, f) < 0 || fclose(f)) { perror(path); return 1; }
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "fuzz/corpus";
    static const struct { const char *name; kiln_shape in; } zoo[] = {
        { "fashion_cnn", { 3, { 28, 28, 1 } } }, { "mlp", { 3, { 8, 8, 1 } } }, { "cifar_cnn", { 3, { 32, 32, 3 } } },
        { "lenet5", { 3, { 28, 28, 1 } } }, { "resnet20", { 3, { 8, 8, 3 } } }, { "inception", { 3, { 16, 16, 3 } } },
        { "fast_cifar", { 3, { 32, 32, 3 } } },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++) {
        kiln_model *m = kiln_model_preset(zoo[i].name, zoo[i].in, 3), *small = NULL;
        char *js = NULL, *small_js = NULL, path[512];
        if (!m || kiln_model_to_json(m, &js)) { fprintf(stderr, "%s: %s\n", zoo[i].name, kiln_last_error()); bad = 1; continue; }
        cJSON *j = cJSON_Parse(js);
        div_by = strstr(zoo[i].name, "cifar") ? 16 : 8;
        shrink(j);
        small_js = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!small_js || kiln_model_from_json(small_js, &small)) { fprintf(stderr, "%s small: %s\n", zoo[i].name, kiln_last_error()); bad = 1; }
        else {
            snprintf(path, sizeof path, "%s/fuzz_keras_json/zoo_%s.json", dir, zoo[i].name);
            bad |= write_file(path, small_js);
            for (int p = 0; p < 2; p++) {
                snprintf(path, sizeof path, "%s/fuzz_onnx/zoo_%s%s.onnx", dir, zoo[i].name, p ? "_probs" : "");
                kiln_onnx_export_opts o = { .probabilities = p };
                if (kiln_model_export_onnx(small, path, &o)) { fprintf(stderr, "%s: %s\n", path, kiln_last_error()); bad = 1; }
            }
        }
        free(js);
        free(small_js);
        kiln_model_free(small);
        kiln_model_free(m);
    }
    return bad;
}
