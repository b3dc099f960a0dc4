/* A model's architecture as Keras 3 model JSON (what Keras' model.to_json() writes and
 * keras.models.model_from_json() reads; a checkpoint's kiln.architecture metadata holds it) and
 * the model's class names. Every layer has its Keras class name, name, inputs and every option of
 * its schema with the value it was made with, so the rebuilt model has the same layers and
 * variables. Kiln's own additions Keras ignores: config.seed (the model seed).
 *
 *   {"module": "keras.src.models.functional", "class_name": "Functional", "config": {"name": "tiny",
 *    "trainable": true, "seed": 0, "layers": [
 *      {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 8, 8, 3],
 *       "dtype": "float32", "name": "input_1"}, "registered_name": null, "name": "input_1", "inbound_nodes": []},
 *      {"module": "keras.layers", "class_name": "Conv2D", "config": {"name": "conv2d", "trainable": true,
 *       "dtype": <float32 policy>, "filters": 4, ...}, "registered_name": null, "build_config": {"input_shape":
 *       [null, 8, 8, 3]}, "name": "conv2d", "inbound_nodes": [{"args": [<tensor>], "kwargs": {}}]}, ...],
 *    "input_layers": [["input_1", 0, 0]], "output_layers": [["dense", 0, 0]]}, "registered_name": "Functional"}
 * where <tensor> is {"class_name": "__keras_tensor__", "config": {"shape": [null, 8, 8, 3], "dtype":
 * "float32", "keras_history": ["input_1", 0, 0]}} (a list of them for Add / Concatenate). A
 * Sequential model is {"module": "keras", "class_name": "Sequential", ...}, its layers without
 * inbound_nodes, InputLayer first. model_config_read.c reads this, tf.keras 2 JSON and the
 * architecture of older Kiln checkpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_model.h"
#include "nn/nn_json.h"

const char *const nn_init_class_names[KILN_INIT_COUNT] = { "Zeros", "Ones", "Constant", "RandomUniform", "RandomNormal",
    "TruncatedNormal", "GlorotUniform", "GlorotNormal", "HeUniform", "HeNormal", "VarianceScaling", "Orthogonal" };

/* A tree under construction: the first failed allocation sticks. */
typedef struct wr { bool oom; } wr;

static cJSON *add(wr *w, cJSON *obj, const char *key, cJSON *item) {
    if (!item || !obj || !(key ? cJSON_AddItemToObject(obj, key, item) : cJSON_AddItemToArray(obj, item))) {
        cJSON_Delete(item);
        w->oom = true;
        return NULL;
    }
    return item;
}
static void add_str(wr *w, cJSON *o, const char *key, const char *s) { add(w, o, key, cJSON_CreateString(s)); }

/* Keras' wrapping of a serialized object: {"module", "class_name", "config", "registered_name"}. */
static cJSON *keras_object_reg(wr *w, const char *module, const char *cls, const char *registered, cJSON **config) {
    cJSON *o = cJSON_CreateObject();
    add_str(w, o, "module", module);
    add_str(w, o, "class_name", cls);
    *config = add(w, o, "config", cJSON_CreateObject());
    add(w, o, "registered_name", registered ? cJSON_CreateString(registered) : cJSON_CreateNull());
    return o;
}
static cJSON *keras_object(wr *w, const char *module, const char *cls, cJSON **config) { return keras_object_reg(w, module, cls, NULL, config); }

/* [null, d0, d1, ...]: a batched shape */
static cJSON *batched(wr *w, kiln_shape s) {
    cJSON *a = cJSON_CreateArray();
    add(w, a, NULL, cJSON_CreateNull());
    for (int i = 0; i < s.rank; i++) add(w, a, NULL, nn_json_num((double)s.dim[i]));
    return a;
}

static cJSON *float32_policy(wr *w) {
    cJSON *c, *p = keras_object(w, "keras", "DTypePolicy", &c);
    add_str(w, c, "name", "float32");
    return p;
}

static cJSON *seed_or_null(uint64_t s) { return s ? nn_json_u64(s) : cJSON_CreateNull(); }

static cJSON *init_json(wr *w, kiln_init in) {
    cJSON *c, *o = keras_object(w, "keras.initializers", (unsigned)in.kind < KILN_INIT_COUNT ? nn_init_class_names[in.kind] : "?", &c);
    switch (in.kind) {
    case KILN_INIT_ZEROS: case KILN_INIT_ONES: case KILN_INIT_COUNT: break;
    case KILN_INIT_CONSTANT: add(w, c, "value", nn_json_num(in.a)); break;
    case KILN_INIT_UNIFORM:
        add(w, c, "minval", nn_json_num(in.a));
        add(w, c, "maxval", nn_json_num(in.b));
        add(w, c, "seed", seed_or_null(in.seed));
        break;
    case KILN_INIT_NORMAL: case KILN_INIT_TRUNCATED_NORMAL:
        add(w, c, "mean", nn_json_num(in.a));
        add(w, c, "stddev", nn_json_num(in.b));
        add(w, c, "seed", seed_or_null(in.seed));
        break;
    case KILN_INIT_VARIANCE_SCALING: {
        static const char *const modes[] = { "fan_in", "fan_out", "fan_avg" }, *const dists[] = { "truncated_normal", "untruncated_normal", "uniform" };
        add(w, c, "scale", nn_json_num(in.a));
        add_str(w, c, "mode", modes[(unsigned)in.mode < 3 ? in.mode : 0]);
        add_str(w, c, "distribution", dists[(unsigned)in.distribution < 3 ? in.distribution : 0]);
        add(w, c, "seed", seed_or_null(in.seed));
        break;
    }
    case KILN_INIT_ORTHOGONAL:
        add(w, c, "gain", nn_json_num(in.a ? in.a : 1));
        add(w, c, "seed", seed_or_null(in.seed));
        break;
    default: add(w, c, "seed", seed_or_null(in.seed)); break;
    }
    return o;
}

/* One schema option's resolved value from the layer's options. */
static cJSON *opt_json(wr *w, const nn_opt_spec *s, const nn_layer_cfg *c) {
    const void *p = (const char *)c + s->off;
    switch (s->type) {
    case NN_T_INT: return nn_json_num(*(const int *)p);
    case NN_T_INT1:
    case NN_T_INT2: {
        const int *v = p;
        if (s->dflt.kind == NN_V_NULL && v[0] < s->min) return cJSON_CreateNull();     /* None: the type's rule */
        cJSON *a = cJSON_CreateArray();
        add(w, a, NULL, nn_json_num(v[0]));
        if (s->type == NN_T_INT2) add(w, a, NULL, nn_json_num(v[1]));
        return a;
    }
    case NN_T_FLOAT: {
        double d = *(const double *)p;
        if (s->dflt.kind == NN_V_NULL && d == 0) return cJSON_CreateNull();     /* ReLU's max_value None */
        if (!strstr(s->key, "_regularizer")) return nn_json_num(d);
        if (d == 0) return cJSON_CreateNull();          /* the L2 factor, as Keras writes the regularizer */
        cJSON *cfg, *o = keras_object(w, "keras.regularizers", "L2", &cfg);
        add(w, cfg, "l2", nn_json_num(d));
        return o;
    }
    case NN_T_BOOL: return cJSON_CreateBool(*(const bool *)p);
    case NN_T_SEED: {
        uint64_t v = *(const uint64_t *)p;
        return s->dflt.kind == NN_V_NULL && v == 0 ? cJSON_CreateNull() : nn_json_u64(v);
    }
    case NN_T_SHAPE: {
        const kiln_shape *sh = p;
        cJSON *a = cJSON_CreateArray();
        for (int i = 0; i < sh->rank; i++) add(w, a, NULL, nn_json_num((double)sh->dim[i]));
        return a;
    }
    case NN_T_ACTIVATION: {
        kiln_activation a = *(const kiln_activation *)p;
        return cJSON_CreateString((unsigned)a < KILN_ACTIVATION_COUNT ? nn_activation_names[a] : "?");
    }
    case NN_T_PADDING: return cJSON_CreateString(*(const kiln_padding *)p == KILN_SAME ? "same" : "valid");
    case NN_T_ENUM: return cJSON_CreateString(s->names[*(const int *)p]);
    case NN_T_INIT: return init_json(w, *(const kiln_init *)p);
    case NN_T_PAD4: {          /* ((top, bottom), (left, right)), as Keras writes it */
        const int *q = p;
        cJSON *a = cJSON_CreateArray();
        for (int i = 0; i < 2; i++) {
            cJSON *pair = add(w, a, NULL, cJSON_CreateArray());
            add(w, pair, NULL, nn_json_num(q[2 * i]));
            add(w, pair, NULL, nn_json_num(q[2 * i + 1]));
        }
        return a;
    }
    case NN_T_FLOATS: {
        const nn_floats *f = p;
        if (!f->n) return cJSON_CreateNull();
        cJSON *a = cJSON_CreateArray();
        for (int i = 0; i < f->n; i++) add(w, a, NULL, nn_json_num(f->v[i]));
        return a;
    }
    case NN_T_NOISE: {
        const kiln_shape *sh = p;
        if (!sh->rank) return cJSON_CreateNull();
        cJSON *a = cJSON_CreateArray();
        for (int i = 0; i < sh->rank; i++) add(w, a, NULL, sh->dim[i] ? nn_json_num((double)sh->dim[i]) : cJSON_CreateNull());
        return a;
    }
    }
    return cJSON_CreateNull();
}

/* {"class_name": "__keras_tensor__", "config": {"shape", "dtype", "keras_history": [name, 0, 0]}} */
static cJSON *tensor_json(wr *w, const kiln_layer *from) {
    cJSON *t = cJSON_CreateObject(), *c;
    add_str(w, t, "class_name", "__keras_tensor__");
    c = add(w, t, "config", cJSON_CreateObject());
    add(w, c, "shape", batched(w, from->out));
    add_str(w, c, "dtype", "float32");
    cJSON *h = add(w, c, "keras_history", cJSON_CreateArray());
    add_str(w, h, NULL, from->name);
    add(w, h, NULL, nn_json_num(0));
    add(w, h, NULL, nn_json_num(0));
    return t;
}

/* MultiHeadAttention as Keras calls it: (query, value[, key]) positional, a self-attention's
 * value being its query; use_causal_mask a call argument, not a config key; built from
 * shapes_dict. */
static const kiln_layer *mha_in(const kiln_layer *l, int j) { return l->in[j < l->n_in ? j : 0]; }
static void mha_build_config(wr *w, cJSON *o, const kiln_layer *l) {
    static const char *const keys[3] = { "query_shape", "value_shape", "key_shape" };
    cJSON *b = add(w, o, "build_config", cJSON_CreateObject()), *d = add(w, b, "shapes_dict", cJSON_CreateObject());
    for (int j = 0; j < (l->n_in > 2 ? 3 : 2); j++) add(w, d, keys[j], batched(w, mha_in(l, j)->out));
}
static void mha_node(wr *w, cJSON *args, cJSON *kwargs, const kiln_layer *l) {
    for (int j = 0; j < (l->n_in > 2 ? 3 : 2); j++) add(w, args, NULL, tensor_json(w, mha_in(l, j)));
    if (l->causal) add(w, kwargs, "use_causal_mask", cJSON_CreateTrue());
}

/* Bidirectional as Keras writes it: merge_mode, and the wrapped layer as a nested object with
 * its own options (Keras makes the backward copy from it). */
static void bidirectional_json(wr *w, cJSON *c, const kiln_layer *l) {
    const nn_layer_def *d = nn_layer_def_of((nn_kind)(NN_SIMPLE_RNN + ((unsigned)l->cell < 3 ? l->cell : 0)));
    for (const nn_opt_spec *s = l->def->opts; s->key; s++) if (!strcmp(s->key, "merge_mode")) add(w, c, s->key, opt_json(w, s, l->cfg));
    cJSON *ic, *inner = add(w, c, "layer", keras_object(w, "keras.layers", d->type, &ic));
    char nm[NN_NAME + 16];
    snprintf(nm, sizeof nm, "forward_%s", l->name);
    add_str(w, ic, "name", nm);
    add(w, ic, "trainable", cJSON_CreateTrue());
    add(w, ic, "dtype", float32_policy(w));
    for (const nn_opt_spec *s = d->opts; s->key; s++) add(w, ic, s->key, opt_json(w, s, l->cfg));
    (void)inner;
}

static cJSON *layer_json(wr *w, const kiln_model *m, const kiln_layer *l) {
    cJSON *c, *o = keras_object(w, "keras.layers", l->def->type, &c);
    if (l->kind == NN_INPUT) {
        add(w, c, "batch_shape", batched(w, l->out));
        add_str(w, c, "dtype", "float32");
        add(w, c, "sparse", cJSON_CreateFalse());
        add(w, c, "ragged", cJSON_CreateFalse());
        add_str(w, c, "name", l->name);
    } else {
        add_str(w, c, "name", l->name);
        if (l->kind != NN_SPATIAL_DROPOUT2D) add(w, c, "trainable", cJSON_CreateTrue());   /* Keras's SpatialDropout2D takes no trainable argument */
        add(w, c, "dtype", float32_policy(w));
        if (l->kind == NN_BIDIRECTIONAL) bidirectional_json(w, c, l);
        for (const nn_opt_spec *s = l->def->opts; s->key && l->kind != NN_BIDIRECTIONAL; s++)
            if (l->kind != NN_MHA || strcmp(s->key, "use_causal_mask") || !m->functional)   /* a Sequential model has no call to carry it */
                add(w, c, s->key, opt_json(w, s, l->cfg));
        if (l->kind == NN_MHA) mha_build_config(w, o, l);
        cJSON *b = l->kind == NN_MHA ? NULL : add(w, o, "build_config", cJSON_CreateObject()), *shapes = cJSON_CreateArray();
        if (!b) {
        } else if (l->n_in == 1) add(w, b, "input_shape", batched(w, l->in[0]->out));
        else {
            for (int j = 0; j < l->n_in; j++) add(w, shapes, NULL, batched(w, l->in[j]->out));
            add(w, b, "input_shape", shapes);
            shapes = NULL;
        }
        cJSON_Delete(shapes);
    }
    if (m->functional) {
        add_str(w, o, "name", l->name);
        cJSON *nodes = add(w, o, "inbound_nodes", cJSON_CreateArray());
        if (l->n_in > 0) {
            cJSON *node = add(w, nodes, NULL, cJSON_CreateObject()), *args = add(w, node, "args", cJSON_CreateArray());
            cJSON *kwargs = add(w, node, "kwargs", cJSON_CreateObject());
            if (l->kind == NN_MHA) mha_node(w, args, kwargs, l);
            else if (l->n_in == 1) add(w, args, NULL, tensor_json(w, l->in[0]));
            else {
                cJSON *list = add(w, args, NULL, cJSON_CreateArray());
                for (int j = 0; j < l->n_in; j++) add(w, list, NULL, tensor_json(w, l->in[j]));
            }
        }
    }
    return o;
}

static cJSON *endpoint(wr *w, const kiln_layer *l) {     /* [["name", 0, 0]] */
    cJSON *outer = cJSON_CreateArray(), *e = add(w, outer, NULL, cJSON_CreateArray());
    add_str(w, e, NULL, l->name);
    add(w, e, NULL, nn_json_num(0));
    add(w, e, NULL, nn_json_num(0));
    return outer;
}

kiln_status kiln_model_to_json(const kiln_model *m, char **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_to_json: NULL out");
    *out = NULL;
    kiln_status st = nn_check(m);
    if (st) return st;
    if (m->functional && !m->finalized)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_to_json: functional model '%s' has no outputs yet: call kiln_model_functional() first", m->name);
    for (int i = 0; i < m->n_layers; i++)
        if (!m->layers[i]->cfg) return kiln_set_error(KILN_INTERNAL, "kiln_model_to_json: layer '%s' kept no options", m->layers[i]->name);
    wr w = { false };
    cJSON *cfg, *root = m->functional ? keras_object_reg(&w, "keras.src.models.functional", "Functional", "Functional", &cfg)
                                      : keras_object(&w, "keras", "Sequential", &cfg);
    add_str(&w, cfg, "name", m->name);
    add(&w, cfg, "trainable", cJSON_CreateTrue());
    add(&w, cfg, "seed", nn_json_u64(m->seed));
    cJSON *layers = add(&w, cfg, "layers", cJSON_CreateArray());
    for (int i = 0; i < m->n_layers; i++) add(&w, layers, NULL, layer_json(&w, m, m->layers[i]));
    if (m->functional) {
        add(&w, cfg, "input_layers", endpoint(&w, m->input));
        add(&w, cfg, "output_layers", endpoint(&w, m->output));
    } else {
        add(&w, cfg, "build_input_shape", batched(&w, m->input->out));
        cJSON *b = add(&w, root, "build_config", cJSON_CreateObject());
        add(&w, b, "input_shape", batched(&w, m->input->out));
    }
    if (!w.oom && !(*out = nn_json_print(root))) w.oom = true;
    cJSON_Delete(root);
    if (w.oom) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_model_to_json: model '%s': out of host memory", m->name);
    return KILN_OK;
}

kiln_status nn_class_names_json(const kiln_model *m, char **out) {
    *out = NULL;
    if (!m->n_class_names) return KILN_OK;
    wr w = { false };
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < m->n_class_names; i++) add_str(&w, a, NULL, m->class_names[i]);
    if (!w.oom && a && !(*out = nn_json_print(a))) w.oom = true;
    if (!a) w.oom = true;
    cJSON_Delete(a);
    if (w.oom) return kiln_set_error(KILN_OUT_OF_MEMORY, "model '%s': out of host memory for the class names", m->name);
    return KILN_OK;
}

/* Keras models usually end in softmax or sigmoid (their losses then take probabilities, Keras'
 * from_logits=False); Kiln's built-in models end in logits. Layers that pass values through
 * (Dropout, Flatten, Reshape) are looked through. */
bool kiln_model_outputs_probabilities(const kiln_model *m) {
    const kiln_layer *l = m ? m->output : NULL;
    while (l && (l->kind == NN_DROPOUT || l->kind == NN_FLATTEN || l->kind == NN_RESHAPE) && l->n_in == 1) l = l->in[0];
    return l && (l->kind == NN_DENSE || l->kind == NN_CONV2D || l->kind == NN_DWCONV2D || l->kind == NN_ACTIVATION) &&
           (l->act == KILN_SOFTMAX || l->act == KILN_SIGMOID);
}
