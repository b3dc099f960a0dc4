/* A model's architecture as a Keras-style JSON config (what a checkpoint's kiln.architecture
 * metadata holds) and back: every layer's Keras class name, name, inputs by layer name and its
 * options by the table's schema keys, resolved, so the rebuilt model has the same layers and
 * variables. Rebuilding goes through nn_layer_from_options. Also the model's class names.
 *
 *   {"class_name": "Functional", "config": {"name": "tiny", "seed": 0, "layers": [
 *      {"class_name": "InputLayer", "name": "input_1", "config": {"name": "input_1", "shape": [8, 8, 3]}, "inbound_nodes": []},
 *      {"class_name": "Conv2D", "name": "conv2d", "config": {"name": "conv2d", "filters": 4, ...},
 *       "inbound_nodes": [[["input_1", 0, 0, {}]]]}, ...],
 *    "input_layers": [["input_1", 0, 0]], "output_layers": [["dense", 0, 0]]}}
 * A sequential model is "Sequential", its layers without inbound_nodes (InputLayer first).
 * Writing here, reading in model_config_read.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_model.h"
#include "nn/nn_json.h"

const char *const nn_init_class_names[KILN_INIT_COUNT] = { "Zeros", "Ones", "Constant", "RandomUniform", "RandomNormal",
    "TruncatedNormal", "GlorotUniform", "GlorotNormal", "HeUniform", "HeNormal" };

/* The shortest decimal that reads back as exactly d. */
static void put_num(nn_sb *b, double d) {
    char s[40];
    for (int p = 15; p <= 17; p++) {
        snprintf(s, sizeof s, "%.*g", p, d);
        if (strtod(s, NULL) == d) break;
    }
    nn_sb_printf(b, "%s", s);
}

static void put_init(nn_sb *b, kiln_init in) {
    nn_sb_printf(b, "{\"class_name\": ");
    nn_sb_str(b, (unsigned)in.kind < KILN_INIT_COUNT ? nn_init_class_names[in.kind] : "?");
    nn_sb_printf(b, ", \"config\": {");
    switch (in.kind) {
    case KILN_INIT_ZEROS: case KILN_INIT_ONES: case KILN_INIT_COUNT: break;
    case KILN_INIT_CONSTANT: nn_sb_printf(b, "\"value\": "); put_num(b, in.a); break;
    case KILN_INIT_UNIFORM:
        nn_sb_printf(b, "\"minval\": "); put_num(b, in.a); nn_sb_printf(b, ", \"maxval\": "); put_num(b, in.b);
        nn_sb_printf(b, ", \"seed\": %llu", (unsigned long long)in.seed);
        break;
    case KILN_INIT_NORMAL: case KILN_INIT_TRUNCATED_NORMAL:
        nn_sb_printf(b, "\"mean\": "); put_num(b, in.a); nn_sb_printf(b, ", \"stddev\": "); put_num(b, in.b);
        nn_sb_printf(b, ", \"seed\": %llu", (unsigned long long)in.seed);
        break;
    default: nn_sb_printf(b, "\"seed\": %llu", (unsigned long long)in.seed); break;
    }
    nn_sb_printf(b, "}}");
}

/* One schema option's resolved value from the layer's options. */
static void put_opt(nn_sb *b, const nn_opt_spec *s, const nn_layer_cfg *c) {
    const void *p = (const char *)c + s->off;
    nn_sb_printf(b, ", ");
    nn_sb_str(b, s->key);
    nn_sb_printf(b, ": ");
    switch (s->type) {
    case NN_T_INT: nn_sb_printf(b, "%d", *(const int *)p); break;
    case NN_T_INT2: {
        const int *v = p;
        if (s->dflt.kind == NN_V_NULL && v[0] < s->min) nn_sb_printf(b, "null");     /* None: the type's rule */
        else nn_sb_printf(b, "[%d, %d]", v[0], v[1]);
        break;
    }
    case NN_T_FLOAT: {
        double d = *(const double *)p;
        if (strstr(s->key, "_regularizer")) {     /* the L2 factor, as Keras writes the regularizer */
            if (d == 0) nn_sb_printf(b, "null");
            else { nn_sb_printf(b, "{\"class_name\": \"L2\", \"config\": {\"l2\": "); put_num(b, d); nn_sb_printf(b, "}}"); }
        } else put_num(b, d);
        break;
    }
    case NN_T_BOOL: nn_sb_printf(b, "%s", *(const bool *)p ? "true" : "false"); break;
    case NN_T_SEED: {
        uint64_t v = *(const uint64_t *)p;
        if (s->dflt.kind == NN_V_NULL && v == 0) nn_sb_printf(b, "null");
        else nn_sb_printf(b, "%llu", (unsigned long long)v);
        break;
    }
    case NN_T_SHAPE: {
        const kiln_shape *sh = p;
        nn_sb_printf(b, "[");
        for (int i = 0; i < sh->rank; i++) nn_sb_printf(b, "%s%lld", i ? ", " : "", (long long)sh->dim[i]);
        nn_sb_printf(b, "]");
        break;
    }
    case NN_T_ACTIVATION: {
        kiln_activation a = *(const kiln_activation *)p;
        nn_sb_str(b, (unsigned)a < KILN_ACTIVATION_COUNT ? nn_activation_names[a] : "?");
        break;
    }
    case NN_T_PADDING: nn_sb_str(b, *(const kiln_padding *)p == KILN_SAME ? "same" : "valid"); break;
    case NN_T_INIT: put_init(b, *(const kiln_init *)p); break;
    }
}

kiln_status kiln_model_to_json(const kiln_model *m, char **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_to_json: NULL out");
    *out = NULL;
    kiln_status st = nn_check(m);
    if (st) return st;
    if (m->functional && !m->finalized)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_to_json: functional model '%s' has no outputs yet: call kiln_model_functional() first", m->name);
    nn_sb b = { 0 };
    nn_sb_printf(&b, "{\"class_name\": \"%s\", \"config\": {\"name\": ", m->functional ? "Functional" : "Sequential");
    nn_sb_str(&b, m->name);
    nn_sb_printf(&b, ", \"seed\": %llu, \"layers\": [", (unsigned long long)m->seed);
    for (int i = 0; i < m->n_layers; i++) {
        const kiln_layer *l = m->layers[i];
        if (!l->cfg) { nn_sb_free(&b); return kiln_set_error(KILN_INTERNAL, "kiln_model_to_json: layer '%s' kept no options", l->name); }
        nn_sb_printf(&b, "%s\n  {\"class_name\": ", i ? "," : "");
        nn_sb_str(&b, l->def->type);
        nn_sb_printf(&b, ", \"name\": ");
        nn_sb_str(&b, l->name);
        nn_sb_printf(&b, ", \"config\": {\"name\": ");
        nn_sb_str(&b, l->name);
        for (const nn_opt_spec *s = l->def->opts; s->key; s++) put_opt(&b, s, l->cfg);
        nn_sb_printf(&b, "}");
        if (m->functional) {
            nn_sb_printf(&b, ", \"inbound_nodes\": [");
            for (int j = 0; j < l->n_in; j++) {
                nn_sb_printf(&b, "%s[", j ? ", " : "[");
                nn_sb_str(&b, l->in[j]->name);
                nn_sb_printf(&b, ", 0, 0, {}]%s", j == l->n_in - 1 ? "]" : "");
            }
            nn_sb_printf(&b, "]");
        }
        nn_sb_printf(&b, "}");
    }
    nn_sb_printf(&b, "]");
    if (m->functional) {
        nn_sb_printf(&b, ",\n \"input_layers\": [[");
        nn_sb_str(&b, m->input->name);
        nn_sb_printf(&b, ", 0, 0]], \"output_layers\": [[");
        nn_sb_str(&b, m->output->name);
        nn_sb_printf(&b, ", 0, 0]]");
    }
    nn_sb_printf(&b, "}}");
    if (b.oom) { nn_sb_free(&b); return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_model_to_json: model '%s': out of host memory", m->name); }
    *out = b.s;
    return KILN_OK;
}

kiln_status nn_class_names_json(const kiln_model *m, char **out) {
    *out = NULL;
    if (!m->n_class_names) return KILN_OK;
    nn_sb b = { 0 };
    nn_sb_printf(&b, "[");
    for (int i = 0; i < m->n_class_names; i++) { if (i) nn_sb_printf(&b, ", "); nn_sb_str(&b, m->class_names[i]); }
    nn_sb_printf(&b, "]");
    if (b.oom) { nn_sb_free(&b); return kiln_set_error(KILN_OUT_OF_MEMORY, "model '%s': out of host memory for the class names", m->name); }
    *out = b.s;
    return KILN_OK;
}
