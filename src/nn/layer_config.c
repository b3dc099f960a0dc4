/* Layers from Keras configs one at a time, and the layer table as data: what a front end (the
 * Python package's generated layer classes) builds on, so a type added to layers.def appears there
 * without code of its own. The config goes through the Keras JSON reader's rules (keras_layer.c),
 * so it is honoured, accepted or refused exactly as in a model file. */
#include <stdio.h>
#include <string.h>
#include "nn/nn_keras.h"
#include "nn/nn_model.h"

kiln_layer *kiln_layer_from_config(kiln_model *m, const char *class_name, const char *config_json, kiln_layer *const *inputs, int n_inputs) {
    if (!m) { kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_layer_from_config: NULL model"); return NULL; }
    if (nn_check(m)) return NULL;
    if (!class_name || n_inputs < 0 || (n_inputs > 0 && !inputs)) {
        nn_fail(m, KILN_INVALID_ARGUMENT, "kiln_layer_from_config: no class name, or inputs missing");
        return NULL;
    }
    for (int i = 0; i < n_inputs; i++)
        if (!inputs[i] || inputs[i]->model != m) {
            nn_fail(m, KILN_INVALID_ARGUMENT, "%s: input %d is not a layer of model '%s'", class_name, i, m->name);
            return NULL;
        }
    char why[1024];
    cJSON *cfg = nn_json_parse(config_json && *config_json ? config_json : "{}", why, sizeof why);
    if (!cfg || !cJSON_IsObject(cfg)) {
        nn_fail(m, KILN_INVALID_ARGUMENT, "%s: the config is not a JSON object%s%s", class_name, cfg ? "" : ": ", cfg ? "" : why);
        cJSON_Delete(cfg);
        return NULL;
    }
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(cfg, "name");
    const char *name = cJSON_IsString(nm) ? nm->valuestring : NULL;
    int rank = n_inputs ? inputs[0]->out.rank : m->output ? m->output->out.rank : -1;
    nn_keras_layer kl;
    kiln_layer *l = NULL;
    kiln_status st = nn_keras_layer_read(class_name, name, cfg, rank, &kl, why, sizeof why);
    if (st) nn_fail(m, st, "%s", why);
    else if (kl.batch_input_shape || kl.has_shape)
        nn_fail(m, KILN_INVALID_ARGUMENT, "layer '%s' (%s): give the input shape to the model (kiln_sequential, kiln_input), not in a layer's config",
                name ? name : "?", class_name);
    else l = nn_layer_from_options(m, kl.type, inputs, n_inputs, kl.opts, kl.n_opts);
    cJSON_Delete(cfg);
    return l;
}

kiln_status kiln_layer_rename(kiln_layer *l, const char *name) {
    if (!l || !name || !*name) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_layer_rename: no layer or no name");
    if (strlen(name) >= NN_NAME) return kiln_set_error(KILN_INVALID_ARGUMENT, "layer name '%.40s...' is longer than %d characters", name, NN_NAME - 1);
    if (l->n_vars > 0)         /* its weights are named after it already */
        return kiln_set_error(KILN_INVALID_ARGUMENT, "layer '%s' has weights: name it when it is made (its config's \"name\")", l->name);
    kiln_status st = nn_layer_rename(l, name);
    return st ? kiln_set_error(st, "%s", kiln_model_error(l->model)) : KILN_OK;
}

static const char *const type_names[] = {
    [NN_T_INT] = "int", [NN_T_INT2] = "int2", [NN_T_FLOAT] = "float", [NN_T_BOOL] = "bool", [NN_T_SEED] = "seed",
    [NN_T_SHAPE] = "shape", [NN_T_ACTIVATION] = "activation", [NN_T_PADDING] = "padding", [NN_T_INIT] = "initializer",
    [NN_T_PAD4] = "pad4", [NN_T_FLOATS] = "floats", [NN_T_NOISE] = "noise_shape", [NN_T_CHOICE] = "choice",
};

static cJSON *default_json(const nn_opt_spec *s) {
    const nn_val *d = &s->dflt;
    switch (d->kind) {
    case NN_V_NULL: return cJSON_CreateNull();
    case NN_V_INT: return cJSON_CreateNumber((double)d->i);
    case NN_V_FLOAT: return nn_json_num(d->f);
    case NN_V_BOOL: return cJSON_CreateBool(d->b);
    case NN_V_STR: return cJSON_CreateString(d->s);
    case NN_V_INIT: return cJSON_CreateString(nn_init_class_names[d->init.kind]);
    default: return NULL;      /* NONE: required */
    }
}

static cJSON *option(const char *key, const char *type, cJSON *dflt) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", key);
    cJSON_AddStringToObject(o, "type", type);
    cJSON_AddBoolToObject(o, "required", dflt == NULL);
    if (dflt) cJSON_AddItemToObject(o, "default", dflt);
    return o;
}

static cJSON *layer_class(const char *cls, const char *base, int min_in, int max_in, cJSON *opts) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "class_name", cls);
    cJSON_AddStringToObject(c, "base", base);
    cJSON_AddNumberToObject(c, "min_inputs", min_in);
    cJSON_AddNumberToObject(c, "max_inputs", max_in);
    cJSON_AddItemToObject(c, "options", opts);
    return c;
}

kiln_status kiln_layer_classes_json(char **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_layer_classes_json: out must not be NULL");
    *out = NULL;
    cJSON *all = cJSON_CreateArray();
    for (int k = 0; all && k < NN_KIND_COUNT; k++) {
        const nn_layer_def *d = nn_layer_def_of((nn_kind)k);
        if (k == NN_INPUT || k == NN_IMPORTED) continue;       /* made by kiln_input / ONNX import */
        cJSON *opts = cJSON_CreateArray();
        for (const nn_opt_spec *s = d->opts; s && s->key; s++) cJSON_AddItemToArray(opts, option(s->key, type_names[s->type], default_json(s)));
        cJSON_AddItemToArray(all, layer_class(d->type, d->base, d->min_in, d->max_in, opts));
    }
    *out = all ? nn_json_print(all) : NULL;
    cJSON_Delete(all);
    return *out ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_layer_classes_json: out of host memory");
}
