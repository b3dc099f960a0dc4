/* A model rebuilt from a checkpoint: its stored architecture (kiln.architecture), else the
 * built-in model its kiln.model names (files saved before the architecture was stored), then its
 * class names and weights. Above checkpoint.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_model.h"

/* kiln.input_shape "28,28,1" */
static bool parse_shape(const char *s, kiln_shape *out) {
    kiln_shape sh = { 0 };
    while (s && *s) {
        char *e;
        errno = 0;
        long long v = strtoll(s, &e, 10);
        if (e == s || v < 1 || errno || sh.rank == KILN_MAX_DIMS - 1 || (*e && *e != ',')) return false;
        sh.dim[sh.rank++] = v;
        s = *e ? e + 1 : e;
    }
    *out = sh;
    return sh.rank > 0;
}

/* A built-in model with the file's input shape and as many classes as its last layer's bias. */
static kiln_status from_preset(const kiln_safetensors *f, const char *path, const char *name, kiln_model **out) {
    const char *shape = kiln_safetensors_meta(f, "kiln.input_shape");
    kiln_shape in = KILN_SCALAR;
    if (shape && !parse_shape(shape, &in))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "checkpoint '%s': metadata 'kiln.input_shape' is '%.60s', not a list of dims such as 28,28,1", path, shape);
    kiln_model *m = kiln_model_preset(name, in, 10);
    if (!m) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        kiln_model *d = kiln_model_preset(name, KILN_SCALAR, 10);     /* built in: the file's input shape is what fails */
        kiln_model_free(d);
        if (d) return kiln_set_error(KILN_INVALID_ARGUMENT, "checkpoint '%s': metadata 'kiln.input_shape' '%.60s' does not fit model '%s' (corrupt file?): %s",
                                     path, shape ? shape : "", name, msg);
        return kiln_set_error(KILN_NOT_FOUND, "checkpoint '%s' holds no architecture (metadata 'kiln.architecture'; saved by an older kiln) "
                              "and its model '%s' is not built in (%s); build the model in C and load the weights with kiln_model_load", path, name, msg);
    }
    char bias[NN_NAME + 8];
    snprintf(bias, sizeof bias, "%s/bias", kiln_layer_name(m->output));
    const kiln_tensor *t = kiln_safetensors_find(f, bias);
    if (t && t->shape.rank == 1 && t->shape.dim[0] != 10 && t->shape.dim[0] >= 1 && t->shape.dim[0] <= 1 << 30) {
        kiln_model_free(m);
        if (!(m = kiln_model_preset(name, in, (int)t->shape.dim[0]))) return KILN_INVALID_ARGUMENT;
    }
    *out = m;
    return KILN_OK;
}

kiln_status kiln_model_build_from_checkpoint(const kiln_safetensors *f, const char *path, kiln_model **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_build_from_checkpoint: NULL out");
    *out = NULL;
    if (!f) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_build_from_checkpoint: NULL file");
    if (!path) path = "(checkpoint)";
    const char *arch = kiln_safetensors_meta(f, "kiln.architecture"), *name = kiln_safetensors_meta(f, "kiln.model");
    const char *classes = kiln_safetensors_meta(f, "kiln.class_names");
    kiln_model *m = NULL;
    kiln_status st;
    if (arch) {
        if ((st = kiln_model_from_json(arch, &m))) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", kiln_last_error());
            if (strstr(msg, "(ImportedGraph)"))     /* not damage: a fine-tuned imported ONNX model */
                return kiln_set_error(st, "checkpoint '%s' holds the weights of a model imported from an ONNX file, not its graph: %s", path, msg);
            return kiln_set_error(st, "checkpoint '%s': metadata 'kiln.architecture' is not a usable model (corrupt file?): %s", path, msg);
        }
    } else if (!name) {
        return kiln_set_error(KILN_NOT_FOUND, "checkpoint '%s' names no model: it has neither metadata 'kiln.architecture' nor 'kiln.model' "
                              "(not saved by kiln?); build the model in C and load the weights with kiln_model_load", path);
    } else if ((st = from_preset(f, path, name, &m))) {
        return st;
    }
    char why[512];
    if (classes && (st = nn_class_names_read(m, classes, why, sizeof why))) {
        kiln_model_free(m);
        return kiln_set_error(st, "checkpoint '%s': metadata 'kiln.class_names' %s (corrupt file?)", path, why);
    }
    if ((st = kiln_model_set_data_spec(m, kiln_safetensors_meta(f, "kiln.data"))) || (st = nn_tokenizer_from_checkpoint(m, path, f))) {
        kiln_model_free(m);
        return st;
    }
    *out = m;
    return KILN_OK;
}

kiln_status kiln_model_from_checkpoint(const char *path, kiln_model **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_checkpoint: NULL out");
    *out = NULL;
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_checkpoint: no path");
    kiln_safetensors *f = NULL;
    kiln_status st = kiln_safetensors_load(path, &f);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return kiln_set_error(st, "loading checkpoint '%s': %s", path, msg);
    }
    kiln_model *m = NULL;
    if (!(st = kiln_model_build_from_checkpoint(f, path, &m)) && (st = kiln_model_load_opts(m, path, &(kiln_load_opts){ .file = f }))) {
        kiln_model_free(m);
        m = NULL;
    }
    kiln_safetensors_free(f);
    *out = m;
    return st;
}
