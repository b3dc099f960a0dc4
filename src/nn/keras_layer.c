/* Keras layer configs -> Kiln layer types and options (nn_keras.h). Per config key, one of:
 *   - a key of the Kiln type's options schema (layers.def): honoured; its value converted here
 *     (initializer objects, L2 regularizers, Keras tuples) and checked by nn_layer_from_options;
 *   - a key of `rules` below: accepted when its value does not change the math (R_ANY) or is the
 *     one Kiln implements (R_NULL, R_TRUE, ...), refused otherwise, saying why;
 *   - any other key: refused (a key Kiln does not know may change the math).
 * docs/models.md's "Keras model files" lists the same. Errors name the layer, its class and the key. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_keras.h"
#include "nn/nn_model.h"      /* nn_init_class_names */

typedef enum { R_ANY, R_NULL, R_TRUE, R_FALSE, R_ZERO, R_ONE, R_STR, R_INIT_ZEROS, R_INIT_ONES, R_DTYPE, R_SPECIAL } rule_kind;
typedef struct rule {
    const char *cls;           /* Keras class, NULL: every class */
    const char *key;
    rule_kind kind;
    const char *str;           /* R_STR: the accepted value (null is accepted too: Keras' default) */
    const char *why;           /* why another value is refused */
} rule;

#define BN "BatchNormalization"
static const rule rules[] = {
    { NULL, "name", R_SPECIAL, NULL, NULL },
    { NULL, "trainable", R_TRUE, NULL, "Kiln trains every layer; it has no frozen layers" },
    { NULL, "dtype", R_DTYPE, NULL, "Kiln computes in float32" },
    { NULL, "batch_input_shape", R_SPECIAL, NULL, NULL },          /* tf.keras 2: the first layer's input */
    { NULL, "data_format", R_STR, "channels_last", "Kiln's images are NHWC" },
    { NULL, "bias_regularizer", R_NULL, NULL, "Kiln regularizes kernels only" },
    { NULL, "activity_regularizer", R_NULL, NULL, "Kiln has no activity regularizers" },
    { NULL, "kernel_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { NULL, "bias_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { NULL, "depthwise_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { NULL, "quantization_config", R_NULL, NULL, "Kiln does not quantize layers" },
    { NULL, "lora_rank", R_NULL, NULL, "Kiln has no LoRA layers" },
    { NULL, "lora_alpha", R_ANY, NULL, NULL },                     /* used only with lora_rank */
    { "InputLayer", "dtype", R_SPECIAL, NULL, NULL },             /* float32, or integer token ids */
    { "InputLayer", "batch_shape", R_SPECIAL, NULL, NULL },
    { "InputLayer", "shape", R_SPECIAL, NULL, NULL },
    { "InputLayer", "batch_size", R_ANY, NULL, NULL },             /* Kiln picks the batch size */
    { "InputLayer", "sparse", R_FALSE, NULL, "Kiln's inputs are dense" },
    { "InputLayer", "ragged", R_FALSE, NULL, "Kiln's inputs are dense" },
    { "InputLayer", "optional", R_FALSE, NULL, "Kiln's model input is required" },
    { "InputLayer", "input_tensor", R_NULL, NULL, "Kiln feeds its input" },
    { "DepthwiseConv2D", "groups", R_ONE, NULL, "a depthwise convolution has one group per channel" },
    { "Conv2DTranspose", "groups", R_ONE, NULL, "Kiln's Conv2DTranspose has one group" },
    { "SpatialDropout2D", "noise_shape", R_NULL, NULL, "SpatialDropout2D drops whole channels" },
    { "SeparableConv2D", "pointwise_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { "Normalization", "axis", R_SPECIAL, NULL, NULL },
    { "PReLU", "alpha_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { "Normalization", "invert", R_FALSE, NULL, "Kiln's Normalization normalizes (invert would denormalize)" },
    { BN, "axis", R_SPECIAL, NULL, NULL },
    { BN, "beta_initializer", R_INIT_ZEROS, NULL, "Kiln starts beta at zeros" },
    { BN, "gamma_initializer", R_INIT_ONES, NULL, "Kiln starts gamma at ones" },
    { BN, "moving_mean_initializer", R_INIT_ZEROS, NULL, "Kiln starts the moving mean at zeros" },
    { BN, "moving_variance_initializer", R_INIT_ONES, NULL, "Kiln starts the moving variance at ones" },
    { BN, "beta_regularizer", R_NULL, NULL, "Kiln regularizes kernels only" },
    { BN, "gamma_regularizer", R_NULL, NULL, "Kiln regularizes kernels only" },
    { BN, "beta_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { BN, "gamma_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { BN, "synchronized", R_FALSE, NULL, "Kiln normalizes over each device's batch" },
    { BN, "renorm", R_FALSE, NULL, "Kiln has no batch renormalization" },
    { BN, "renorm_clipping", R_ANY, NULL, NULL },                  /* used only with renorm */
    { BN, "renorm_momentum", R_ANY, NULL, NULL },
    { BN, "fused", R_ANY, NULL, NULL },                            /* tf.keras 2: which kernel computes it */
    { BN, "virtual_batch_size", R_NULL, NULL, "Kiln normalizes over the whole batch" },
    { BN, "adjustment", R_NULL, NULL, "Kiln has no batch-norm adjustment" },
    { "ReLU", "max_value", R_SPECIAL, NULL, NULL },
    { "ReLU", "negative_slope", R_SPECIAL, NULL, NULL },
    { "ReLU", "threshold", R_ZERO, NULL, "Kiln's relu switches at 0" },
    { "Embedding", "embeddings_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { "Embedding", "mask_zero", R_FALSE, NULL, "Kiln has no masks (id 0 is an ordinary token)" },
    { "Embedding", "input_length", R_ANY, NULL, NULL },            /* tf.keras 2: the input shape says it */
    { "LayerNormalization", "axis", R_SPECIAL, NULL, NULL },        /* an int or Keras's list of one */
    { "LayerNormalization", "rms_scaling", R_FALSE, NULL, "Kiln's LayerNormalization subtracts the mean" },
    { "LayerNormalization", "beta_regularizer", R_NULL, NULL, "Kiln regularizes kernels only" },
    { "LayerNormalization", "gamma_regularizer", R_NULL, NULL, "Kiln regularizes kernels only" },
    { "LayerNormalization", "beta_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { "LayerNormalization", "gamma_constraint", R_NULL, NULL, "Kiln has no weight constraints" },
    { "MultiHeadAttention", "output_shape", R_NULL, NULL, "Kiln's attention outputs the query's features" },
    { "MultiHeadAttention", "attention_axes", R_SPECIAL, NULL, NULL },   /* null or the sequence axis ([1], as a built layer writes) */
    { "MultiHeadAttention", "use_gate", R_FALSE, NULL, "Kiln's attention has no output gate" },
    { "MultiHeadAttention", "sliding_window", R_NULL, NULL, "Kiln's attention sees every (earlier, when causal) position" },
    { "MultiHeadAttention", "flash_attention", R_ANY, NULL, NULL },   /* which kernel: Kiln's is always fused */
    { "PositionEmbedding", "seed", R_ANY, NULL, NULL },
#define RNN_RULES(C) \
    { C, "unroll", R_ANY, NULL, NULL },                 /* how Keras runs the loop, not what it computes */ \
    { C, "zero_output_for_mask", R_ANY, NULL, NULL },   /* used only with masks, which Kiln refuses */ \
    { C, "implementation", R_ANY, NULL, NULL },         /* tf.keras 2: which kernel computes it */ \
    { C, "time_major", R_FALSE, NULL, "Kiln's sequences are (batch, time, features)" }, \
    { C, "recurrent_constraint", R_NULL, NULL, "Kiln has no weight constraints" }, \
    { C, "build_config", R_ANY, NULL, NULL }              /* a wrapped layer's input shape: Kiln infers it */
    RNN_RULES("SimpleRNN"), RNN_RULES("LSTM"), RNN_RULES("GRU"), RNN_RULES("Bidirectional"),
#undef RNN_RULES
    { "Bidirectional", "backward_layer", R_SPECIAL, NULL, NULL },
};
#undef BN

typedef struct ctx {
    const char *cls, *name;
    char *why;
    size_t why_n;
} ctx;

static kiln_status bad(ctx *c, kiln_status st, const char *key, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static kiln_status bad(ctx *c, kiln_status st, const char *key, const char *fmt, ...) {
    int k = key ? snprintf(c->why, c->why_n, "layer '%s' (%s): '%s' ", c->name, c->cls, key)
                : snprintf(c->why, c->why_n, "layer '%s' (%s): ", c->name, c->cls);
    if (k < 0 || (size_t)k >= c->why_n) return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why + k, c->why_n - (size_t)k, fmt, ap);
    va_end(ap);
    return st;
}

/* A value as short JSON text for messages. */
static const char *shown(const cJSON *v, char *buf, size_t n) {
    char *p = cJSON_PrintUnformatted(v);
    snprintf(buf, n, "%s", p ? p : "?");
    if (p && strlen(p) >= n && n > 4) strcpy(buf + n - 4, "...");
    cJSON_free(p);
    return buf;
}

static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool num_is(const cJSON *v, double x) { return cJSON_IsNumber(v) && v->valuedouble == x; }

bool nn_keras_builtin(const cJSON *o, const char *cls) {
    const cJSON *mod = cJSON_GetObjectItemCaseSensitive(o, "module"), *reg = cJSON_GetObjectItemCaseSensitive(o, "registered_name");
    bool mod_ok = !mod || cJSON_IsNull(mod) || (cJSON_IsString(mod) && (!strncmp(mod->valuestring, "keras", 5) || !strncmp(mod->valuestring, "tf_keras", 8)));
    bool reg_ok = !reg || cJSON_IsNull(reg) || (cJSON_IsString(reg) && cls && !strcmp(reg->valuestring, cls));
    return mod_ok && reg_ok;
}

/* A serialized Keras object of one of Keras' own modules: {"module": "keras...", "class_name",
 * "config", "registered_name"}; its class name, or NULL (why set) for a custom class. */
static const char *keras_class(ctx *c, const char *key, const cJSON *o) {
    const char *cls = str_of(o, "class_name"), *mod = str_of(o, "module"), *reg = str_of(o, "registered_name");
    if (!cls) { bad(c, KILN_INVALID_ARGUMENT, key, "is an object without a \"class_name\" string"); return NULL; }
    if (!nn_keras_builtin(o, cls)) {
        bad(c, KILN_UNSUPPORTED, key, "is the custom class '%s' (module '%s'); Kiln reads Keras' built-in classes only", reg ? reg : cls, mod ? mod : "?");
        return NULL;
    }
    return cls;
}

/* ---- initializers ---- */
static const struct { const char *name; kiln_init_kind kind; } init_names[] = {
    { "zeros", KILN_INIT_ZEROS }, { "ones", KILN_INIT_ONES }, { "constant", KILN_INIT_CONSTANT },
    { "random_uniform", KILN_INIT_UNIFORM }, { "random_normal", KILN_INIT_NORMAL }, { "truncated_normal", KILN_INIT_TRUNCATED_NORMAL },
    { "glorot_uniform", KILN_INIT_GLOROT_UNIFORM }, { "glorot_normal", KILN_INIT_GLOROT_NORMAL }, { "orthogonal", KILN_INIT_ORTHOGONAL },
    { "he_uniform", KILN_INIT_HE_UNIFORM }, { "he_normal", KILN_INIT_HE_NORMAL },
};

static bool init_kind_named(const char *s, kiln_init_kind *k) {
    for (int i = 0; i < KILN_INIT_COUNT; i++)
        if (!strcmp(s, nn_init_class_names[i])) { *k = (kiln_init_kind)i; return true; }
    for (size_t i = 0; i < sizeof init_names / sizeof *init_names; i++)
        if (!strcmp(s, init_names[i].name)) { *k = init_names[i].kind; return true; }
    return false;
}

/* Keras' VarianceScaling with the parameters of one of Kiln's kinds. */
static bool variance_scaling(const cJSON *cfg, kiln_init_kind *k) {
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(cfg, "scale");
    const char *mode = str_of(cfg, "mode"), *dist = str_of(cfg, "distribution");
    if (!mode || !dist) return false;
    bool uni = !strcmp(dist, "uniform"), tn = !strcmp(dist, "truncated_normal");
    if (num_is(scale, 1) && !strcmp(mode, "fan_avg") && (uni || tn)) *k = uni ? KILN_INIT_GLOROT_UNIFORM : KILN_INIT_GLOROT_NORMAL;
    else if (num_is(scale, 2) && !strcmp(mode, "fan_in") && (uni || tn)) *k = uni ? KILN_INIT_HE_UNIFORM : KILN_INIT_HE_NORMAL;
    else *k = KILN_INIT_VARIANCE_SCALING;     /* the general form: read_vs checks its values */
    return true;
}

/* VarianceScaling's scale (> 0), mode and distribution, as Keras 3 names them ("normal" is tf.keras 2's truncated). */
static kiln_status read_vs(ctx *c, const char *key, const cJSON *cfg, kiln_init *in) {
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(cfg, "scale");
    const char *mode = str_of(cfg, "mode"), *dist = str_of(cfg, "distribution");
    static const char *const modes[] = { "fan_in", "fan_out", "fan_avg" }, *const dists[] = { "truncated_normal", "untruncated_normal", "uniform", "normal" };
    int mi = -1, di = -1;
    for (int i = 0; mode && i < 3; i++) if (!strcmp(mode, modes[i])) mi = i;
    for (int i = 0; dist && i < 4; i++) if (!strcmp(dist, dists[i])) di = i == 3 ? 0 : i;
    if (!cJSON_IsNumber(scale) || !(scale->valuedouble > 0) || !isfinite(scale->valuedouble) || mi < 0 || di < 0)
        return bad(c, KILN_UNSUPPORTED, key, "(VarianceScaling): needs a scale > 0, mode fan_in / fan_out / fan_avg and distribution truncated_normal / untruncated_normal / uniform");
    in->a = scale->valuedouble;
    in->mode = (kiln_fan_mode)mi;
    in->distribution = (kiln_vs_distribution)di;
    return KILN_OK;
}

static const char *const init_list = "Zeros, Ones, Constant, RandomUniform, RandomNormal, TruncatedNormal, GlorotUniform, "
                                     "GlorotNormal, HeUniform, HeNormal, Orthogonal, VarianceScaling";

static kiln_status read_init(ctx *c, const char *key, const cJSON *v, kiln_init *in) {
    memset(in, 0, sizeof *in);
    kiln_init_kind k;
    if (cJSON_IsString(v)) {
        if (!init_kind_named(v->valuestring, &k)) return bad(c, KILN_UNSUPPORTED, key, "is the initializer '%s'; Kiln has %s", v->valuestring, init_list);
        in->kind = k;
        if (k == KILN_INIT_UNIFORM) { in->a = -0.05; in->b = 0.05; }
        if (k == KILN_INIT_NORMAL || k == KILN_INIT_TRUNCATED_NORMAL) in->b = 0.05;
        if (k == KILN_INIT_VARIANCE_SCALING || k == KILN_INIT_ORTHOGONAL) in->a = 1;      /* Keras's defaults: 1, fan_in, truncated_normal; gain 1 */
        return KILN_OK;
    }
    if (!cJSON_IsObject(v)) return bad(c, KILN_INVALID_ARGUMENT, key, "must be an initializer (a name or {\"class_name\": ..., \"config\": ...}), got %s", nn_json_kind(v));
    const char *cls = keras_class(c, key, v);
    if (!cls) return KILN_UNSUPPORTED;
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(v, "config");
    if (cfg && !cJSON_IsObject(cfg) && !cJSON_IsNull(cfg)) return bad(c, KILN_INVALID_ARGUMENT, key, "has a \"config\" that is %s, not an object", nn_json_kind(cfg));
    bool vs = !strcmp(cls, "VarianceScaling");
    if (vs ? !variance_scaling(cfg, &k) : !init_kind_named(cls, &k)) {
        char b[160];
        return bad(c, KILN_UNSUPPORTED, key, "is the initializer %s%s; Kiln has %s", vs ? "VarianceScaling " : cls, vs ? shown(cfg, b, sizeof b) : "", init_list);
    }
    in->kind = k;
    if (k == KILN_INIT_VARIANCE_SCALING && read_vs(c, key, cfg, in)) return KILN_UNSUPPORTED;
    bool ab = k == KILN_INIT_UNIFORM || k == KILN_INIT_NORMAL || k == KILN_INIT_TRUNCATED_NORMAL;
    in->a = k == KILN_INIT_UNIFORM ? -0.05 : k == KILN_INIT_VARIANCE_SCALING ? in->a : k == KILN_INIT_ORTHOGONAL ? 1 : 0;      /* Keras' defaults */
    in->b = ab ? 0.05 : 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cfg) {
        const char *p = e->string;
        double *dst = NULL;
        if (k == KILN_INIT_CONSTANT && !strcmp(p, "value")) dst = &in->a;
        else if (k == KILN_INIT_UNIFORM && !strcmp(p, "minval")) dst = &in->a;
        else if (k == KILN_INIT_UNIFORM && !strcmp(p, "maxval")) dst = &in->b;
        else if ((k == KILN_INIT_NORMAL || k == KILN_INIT_TRUNCATED_NORMAL) && !strcmp(p, "mean")) dst = &in->a;
        else if ((k == KILN_INIT_NORMAL || k == KILN_INIT_TRUNCATED_NORMAL) && !strcmp(p, "stddev")) dst = &in->b;
        else if (k == KILN_INIT_ORTHOGONAL && !strcmp(p, "gain")) dst = &in->a;
        if (dst) {
            if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) return bad(c, KILN_INVALID_ARGUMENT, key, "(%s): '%s' must be a number, got %s", cls, p, nn_json_kind(e));
            *dst = e->valuedouble;
        } else if (!strcmp(p, "seed") && k >= KILN_INIT_UNIFORM) {
            if (!cJSON_IsNull(e) && !nn_json_seed(e, &in->seed)) return bad(c, KILN_INVALID_ARGUMENT, key, "(%s): 'seed' must be an int >= 0 or null", cls);
        } else if (vs && (!strcmp(p, "scale") || !strcmp(p, "mode") || !strcmp(p, "distribution"))) {
        } else if ((!strcmp(p, "input_axes") || !strcmp(p, "output_axes")) && cJSON_IsNull(e)) {     /* Keras 3: fans of einsum kernels */
        } else if (!strcmp(p, "dtype") && (cJSON_IsNull(e) || (cJSON_IsString(e) && !strcmp(e->valuestring, "float32")))) {
        } else {
            char b[80];
            return bad(c, KILN_UNSUPPORTED, key, "(%s): config key '%s' = %s is not supported", cls, p, shown(e, b, sizeof b));
        }
    }
    return KILN_OK;
}

/* ---- regularizers: L2 (or L1L2 without L1), as the L2 factor; null is none ---- */
static kiln_status read_reg(ctx *c, const char *key, const cJSON *v, double *l2) {
    *l2 = 0;
    if (cJSON_IsNull(v)) return KILN_OK;
    if (cJSON_IsString(v) && (!strcmp(v->valuestring, "l2") || !strcmp(v->valuestring, "L2"))) { *l2 = 0.01; return KILN_OK; }   /* Keras' default factor */
    const char *cls = cJSON_IsObject(v) ? keras_class(c, key, v) : NULL;
    if (cJSON_IsObject(v) && !cls) return KILN_UNSUPPORTED;
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(v, "config"), *f = cJSON_GetObjectItemCaseSensitive(cfg, "l2"),
                *l1 = cJSON_GetObjectItemCaseSensitive(cfg, "l1");
    bool ok = cls && (!strcmp(cls, "L2") || (!strcmp(cls, "L1L2") && (!l1 || num_is(l1, 0))));
    if (ok && cJSON_IsNumber(f) && isfinite(f->valuedouble) && f->valuedouble >= 0) { *l2 = f->valuedouble; return KILN_OK; }
    if (ok && !f && !strcmp(cls, "L2")) { *l2 = 0.01; return KILN_OK; }
    char b[120];
    return bad(c, KILN_UNSUPPORTED, key, "is %s; Kiln supports L2 kernel regularizers only ({\"class_name\": \"L2\", \"config\": {\"l2\": 0.01}})",
               cls ? cls : shown(v, b, sizeof b));
}

/* ---- shapes ---- */
bool nn_keras_shape(const cJSON *v, bool batched, kiln_shape *s) {
    if (!cJSON_IsArray(v)) return false;
    int n = cJSON_GetArraySize(v) - (batched ? 1 : 0);
    if (n < 1 || n > KILN_MAX_DIMS - 1) return false;
    s->rank = n;
    int i = -(batched ? 1 : 0);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        int64_t d;
        if (i >= 0) {
            if (!nn_json_int(e, &d) || d < 1) return false;
            s->dim[i] = d;
        }
        i++;
    }
    return true;
}

bool nn_keras_float32(const cJSON *v) {
    if (!v || cJSON_IsNull(v)) return true;
    if (cJSON_IsString(v)) return !strcmp(v->valuestring, "float32");
    const char *cls = str_of(v, "class_name"), *name = str_of(cJSON_GetObjectItemCaseSensitive(v, "config"), "name");
    return cls && (!strcmp(cls, "DTypePolicy") || !strcmp(cls, "Policy")) && nn_keras_builtin(v, cls) && name && !strcmp(name, "float32");
}

/* The list types: ((t, b), (l, r)) pads flattened to 4 ints, numbers, a noise shape's None as 0. */
static kiln_status list_value(ctx *c, const nn_opt_spec *s, const cJSON *v, nn_val *out) {
    int64_t i;
    if (cJSON_IsNumber(v)) {
        if (s->type != NN_T_FLOATS && !nn_json_int(v, &i)) return bad(c, KILN_INVALID_ARGUMENT, s->key, "must be an int");
        if (s->type == NN_T_FLOATS) *out = (nn_val){ .kind = NN_V_FLOAT, .f = v->valuedouble };
        else *out = (nn_val){ .kind = NN_V_INT, .i = i };
        return KILN_OK;
    }
    if (!cJSON_IsArray(v)) return bad(c, KILN_INVALID_ARGUMENT, s->key, "must be a number or a list, got %s", nn_json_kind(v));
    out->kind = s->type == NN_T_FLOATS ? NN_V_FLOATS : NN_V_INTS;
    const cJSON *e, *e2;
    cJSON_ArrayForEach(e, v) {
        bool nested = cJSON_IsArray(e) && s->type == NN_T_PAD4;
        const cJSON *first = nested ? e->child : e;
        for (e2 = first; e2; e2 = nested ? e2->next : NULL) {
            int n = s->type == NN_T_FLOATS ? out->floats.n : out->ints.n;
            if (n >= (s->type == NN_T_FLOATS ? NN_MAX_FLOATS : KILN_MAX_DIMS))
                return bad(c, KILN_UNSUPPORTED, s->key, "has more than %d values; Kiln takes at most that many", s->type == NN_T_FLOATS ? NN_MAX_FLOATS : KILN_MAX_DIMS);
            if (s->type == NN_T_FLOATS) {
                if (!cJSON_IsNumber(e2)) return bad(c, KILN_INVALID_ARGUMENT, s->key, "must be a list of numbers, got %s in it", nn_json_kind(e2));
                out->floats.v[out->floats.n++] = e2->valuedouble;
            } else if (s->type == NN_T_NOISE && cJSON_IsNull(e2)) out->ints.v[out->ints.n++] = 0;
            else if (!nn_json_int(e2, &i)) return bad(c, KILN_INVALID_ARGUMENT, s->key, "must be a list of ints, got %s in it", nn_json_kind(e2));
            else out->ints.v[out->ints.n++] = i;
        }
    }
    return KILN_OK;
}

/* A schema option's value: Keras tuples unwrapped, numbers as ints when whole. */
static kiln_status schema_value(ctx *c, const nn_opt_spec *s, const cJSON *v, nn_val *out) {
    memset(out, 0, sizeof *out);
    if (cJSON_IsObject(v) && str_of(v, "class_name") && !strcmp(str_of(v, "class_name"), "__tuple__"))
        v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "config"), "value");
    if (cJSON_IsNull(v)) { out->kind = NN_V_NULL; return KILN_OK; }
    if (s->type == NN_T_INIT) { out->kind = NN_V_INIT; return read_init(c, s->key, v, &out->init); }
    if (s->type == NN_T_FLOAT && strstr(s->key, "_regularizer")) { out->kind = NN_V_FLOAT; return read_reg(c, s->key, v, &out->f); }
    if (s->type == NN_T_PAD4 || s->type == NN_T_FLOATS || s->type == NN_T_NOISE) return list_value(c, s, v, out);
    int64_t i;
    uint64_t u;
    if (s->type == NN_T_SEED && nn_json_seed(v, &u)) {
        if (u > (uint64_t)INT64_MAX) return bad(c, KILN_INVALID_ARGUMENT, s->key, "%llu is too large (at most 2^63 - 1)", (unsigned long long)u);
        out->kind = NN_V_INT;
        out->i = (int64_t)u;
        return KILN_OK;
    }
    if (cJSON_IsBool(v)) { out->kind = NN_V_BOOL; out->b = cJSON_IsTrue(v); return KILN_OK; }
    if (cJSON_IsString(v)) { out->kind = NN_V_STR; out->s = v->valuestring; return KILN_OK; }
    if (cJSON_IsNumber(v)) {
        if (nn_json_int(v, &i)) { out->kind = NN_V_INT; out->i = i; }
        else { out->kind = NN_V_FLOAT; out->f = v->valuedouble; }
        return KILN_OK;
    }
    if (cJSON_IsArray(v)) {
        if (cJSON_GetArraySize(v) > KILN_MAX_DIMS) return bad(c, KILN_INVALID_ARGUMENT, s->key, "must be a list of at most %d ints, got %d elements", KILN_MAX_DIMS, cJSON_GetArraySize(v));
        out->kind = NN_V_INTS;
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            if (!nn_json_int(e, &i)) return bad(c, KILN_INVALID_ARGUMENT, s->key, "must be a list of ints, got %s in it", nn_json_kind(e));
            out->ints.v[out->ints.n++] = i;
        }
        return KILN_OK;
    }
    char b[120];
    return bad(c, s->type == NN_T_ACTIVATION ? KILN_UNSUPPORTED : KILN_INVALID_ARGUMENT, s->key, "is %s%s, which Kiln does not take here",
               s->type == NN_T_ACTIVATION ? "a custom activation " : "", shown(v, b, sizeof b));
}

static const rule *rule_of(const char *cls, const char *key) {
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (rules[i].cls && !strcmp(rules[i].cls, cls) && !strcmp(rules[i].key, key)) return &rules[i];
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (!rules[i].cls && !strcmp(rules[i].key, key)) return &rules[i];
    return NULL;
}

/* R_* rules other than R_SPECIAL: KILN_OK when v is a value Kiln implements. */
static kiln_status check_rule(ctx *c, const rule *r, const cJSON *v) {
    char b[120];
    bool ok = true;
    const char *want = "";
    kiln_init in;
    switch (r->kind) {
    case R_ANY: case R_SPECIAL: return KILN_OK;
    case R_NULL: ok = cJSON_IsNull(v); want = "null"; break;
    case R_TRUE: ok = cJSON_IsTrue(v); want = "true"; break;
    case R_FALSE: ok = cJSON_IsFalse(v) || cJSON_IsNull(v); want = "false"; break;
    case R_ZERO: ok = num_is(v, 0) || cJSON_IsNull(v); want = "0"; break;
    case R_ONE: ok = num_is(v, 1) || cJSON_IsNull(v); want = "1"; break;
    case R_STR: ok = cJSON_IsNull(v) || (cJSON_IsString(v) && !strcmp(v->valuestring, r->str)); want = r->str; break;
    case R_DTYPE: ok = nn_keras_float32(v); want = "float32"; break;
    case R_INIT_ZEROS: case R_INIT_ONES: {
        kiln_init_kind k = r->kind == R_INIT_ZEROS ? KILN_INIT_ZEROS : KILN_INIT_ONES;
        kiln_status st = read_init(c, r->key, v, &in);
        if (st == KILN_OK) ok = in.kind == k || (in.kind == KILN_INIT_CONSTANT && in.a == (k == KILN_INIT_ONES));
        else if (st != KILN_UNSUPPORTED) return st;
        else ok = false;
        want = k == KILN_INIT_ZEROS ? "Zeros" : "Ones";
        break;
    }
    }
    if (ok) return KILN_OK;
    return bad(c, KILN_UNSUPPORTED, r->key, "is %s; Kiln supports only %s (%s)", shown(v, b, sizeof b), want, r->why);
}

static kiln_status add_opt(ctx *c, nn_keras_layer *out, nn_opt o) {
    if (out->n_opts == NN_KERAS_MAX_OPTS) return bad(c, KILN_INVALID_ARGUMENT, NULL, "more than %d options", NN_KERAS_MAX_OPTS);
    out->opts[out->n_opts++] = o;
    return KILN_OK;
}

/* The special keys: InputLayer's shape and dtype, BatchNormalization's, LayerNormalization's and
 * Normalization's axis, MultiHeadAttention's attention_axes. */
static kiln_status special(ctx *c, const char *key, const cJSON *v, int in_rank, nn_keras_layer *out) {
    char b[120];
    if (!strcmp(key, "batch_shape") || !strcmp(key, "shape") || !strcmp(key, "batch_input_shape")) {
        bool batched = strcmp(key, "shape") != 0;
        kiln_shape s;
        if (!nn_keras_shape(v, batched, &s))
            return bad(c, KILN_INVALID_ARGUMENT, key, "is %s; Kiln needs %s1..%d known dimensions >= 1 (an image is [height, width, channels])",
                       shown(v, b, sizeof b), batched ? "[null, d1, ...]: the batch, then " : "", KILN_MAX_DIMS - 1);
        if (!strcmp(key, "batch_input_shape") && strcmp(c->cls, "InputLayer")) { out->batch_input_shape = v; return KILN_OK; }
        if (out->has_shape) return bad(c, KILN_INVALID_ARGUMENT, key, "gives the input shape a second time");
        out->has_shape = true;
        out->shape = s;
        nn_opt o = { .key = "shape", .val = { .kind = NN_V_INTS } };
        o.val.ints.n = s.rank;
        for (int i = 0; i < s.rank; i++) o.val.ints.v[i] = s.dim[i];
        return add_opt(c, out, o);
    }
    if (!strcmp(key, "axis")) {      /* BatchNormalization, LayerNormalization: the last axis only */
        int64_t a = 0;
        if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1) v = cJSON_GetArrayItem(v, 0);
        if (nn_json_int(v, &a) && (a == -1 || (in_rank > 0 && a == in_rank))) return KILN_OK;
        char last[24] = "";
        if (in_rank > 0) snprintf(last, sizeof last, " or %d", in_rank);
        return bad(c, KILN_UNSUPPORTED, key, "is %s; Kiln normalizes over the last axis only (-1%s)", shown(v, b, sizeof b), last);
    }
    if (!strcmp(key, "dtype")) {   /* InputLayer: ids of an Embedding may be int32 / int64; Kiln feeds them as f32 (exact below 2^24) */
        if (nn_keras_float32(v) || (cJSON_IsString(v) && (!strcmp(v->valuestring, "int32") || !strcmp(v->valuestring, "int64"))))
            return KILN_OK;
        return bad(c, KILN_UNSUPPORTED, key, "is %s; Kiln's inputs are float32 (or int32 / int64 token ids, fed as floats)", shown(v, b, sizeof b));
    }
    if (!strcmp(key, "attention_axes")) {   /* MultiHeadAttention on (batch, T, features): axis 1 */
        int64_t a = 0;
        if (cJSON_IsNull(v)) return KILN_OK;
        if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1) v = cJSON_GetArrayItem(v, 0);
        if (nn_json_int(v, &a) && (a == 1 || a == -2)) return KILN_OK;
        return bad(c, KILN_UNSUPPORTED, key, "is %s; Kiln attends over the sequence axis only (null or [1])", shown(v, b, sizeof b));
    }
    return KILN_OK;     /* ReLU's max_value and negative_slope: relu_options read them first */
}

/* Keras's ReLU: an Activation when it is one of Kiln's (relu, relu6 = max_value 6, leaky_relu =
 * negative_slope 0.2), else Kiln's ReLU type with its max_value and negative_slope. */
static kiln_status relu_options(ctx *c, const cJSON *cfg, nn_keras_layer *out) {
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(cfg, "max_value"), *sl = cJSON_GetObjectItemCaseSensitive(cfg, "negative_slope");
    char b[120];
    if (mx && !cJSON_IsNull(mx) && (!cJSON_IsNumber(mx) || !(mx->valuedouble > 0) || !isfinite(mx->valuedouble)))
        return bad(c, KILN_UNSUPPORTED, "max_value", "is %s; Kiln's ReLU takes null or a number > 0", shown(mx, b, sizeof b));
    if (sl && !cJSON_IsNull(sl) && (!cJSON_IsNumber(sl) || !(sl->valuedouble >= 0) || !isfinite(sl->valuedouble)))
        return bad(c, KILN_INVALID_ARGUMENT, "negative_slope", "is %s; it must be a number >= 0", shown(sl, b, sizeof b));
    double m = cJSON_IsNumber(mx) ? mx->valuedouble : 0, s = cJSON_IsNumber(sl) ? sl->valuedouble : 0;
    const char *act = m == 0 && s == 0 ? "relu" : m == 6 && s == 0 ? "relu6" : m == 0 && fabs(s - 0.2) < 1e-7 ? "leaky_relu" : NULL;
    if (act) return add_opt(c, out, NN_STR("activation", act));
    out->type = "ReLU";
    kiln_status st = m > 0 ? add_opt(c, out, NN_FLOAT("max_value", m)) : KILN_OK;
    return st ? st : add_opt(c, out, NN_FLOAT("negative_slope", s));
}

/* Every key of config cfg, by the rules of class cls and the schema opts. */
static kiln_status read_keys(ctx *c, const char *cls, const nn_opt_spec *opts, const cJSON *cfg, int in_rank, nn_keras_layer *out) {
    const cJSON *e;
    kiln_status st;
    cJSON_ArrayForEach(e, cfg) {
        const char *key = e->string;
        const rule *r = rule_of(cls, key);
        const nn_opt_spec *s = NULL;
        for (const nn_opt_spec *q = opts; q && q->key && !s; q++) if (!strcmp(q->key, key)) s = q;
        if (!strcmp(cls, "Bidirectional") && !strcmp(key, "layer") && cJSON_IsObject(e)) continue;    /* wrapped_layer */
        if (r && r->kind == R_SPECIAL) {
            if (strcmp(key, "name") && (st = special(c, key, e, in_rank, out))) return st;
        } else if (r) {
            if ((st = check_rule(c, r, e))) return st;
        } else if (s) {
            nn_opt o = { .key = s->key };
            if ((st = schema_value(c, s, e, &o.val)) || (st = add_opt(c, out, o))) return st;
        } else {
            char b[80];
            return bad(c, KILN_UNSUPPORTED, key, "= %s is a config key Kiln does not know (it might change the math); see docs/models.md, \"Keras model files\"",
                       shown(e, b, sizeof b));
        }
    }
    return KILN_OK;
}

/* Bidirectional's "layer": the wrapped SimpleRNN / LSTM / GRU's config read into the
 * Bidirectional's own options (its schema holds theirs); "backward_layer", which Keras writes as
 * the mirror of "layer", must be just that (Kiln runs a copy of the layer backward). */
static kiln_status wrapped_layer(ctx *c, const cJSON *cfg, const nn_opt_spec *opts, int in_rank, nn_keras_layer *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "layer"), *bw = cJSON_GetObjectItemCaseSensitive(cfg, "backward_layer");
    if (!cJSON_IsObject(v)) return KILN_OK;        /* Kiln's own form: "layer": "LSTM" with the options beside it */
    const char *inner = keras_class(c, "layer", v);
    if (!inner) return KILN_UNSUPPORTED;
    if (strcmp(inner, "SimpleRNN") && strcmp(inner, "LSTM") && strcmp(inner, "GRU"))
        return bad(c, KILN_UNSUPPORTED, "layer", "is a %s; Kiln's Bidirectional wraps SimpleRNN, LSTM or GRU", inner);
    const cJSON *icfg = cJSON_GetObjectItemCaseSensitive(v, "config");
    if (!cJSON_IsObject(icfg)) return bad(c, KILN_INVALID_ARGUMENT, "layer", "has no \"config\" object");
    if (bw && !cJSON_IsNull(bw)) {
        const char *bc = str_of(bw, "class_name");
        const cJSON *bcfg = cJSON_GetObjectItemCaseSensitive(bw, "config"), *e;
        bool same = bc && !strcmp(bc, inner) && cJSON_IsObject(bcfg);
        const cJSON *walk = same ? icfg : NULL;
        cJSON_ArrayForEach(e, walk) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(bcfg, e->string);
            if (!strcmp(e->string, "name") || strstr(e->string, "_initializer") || !strcmp(e->string, "seed")) continue;   /* starting values: Kiln's copy draws its own */
            if (!strcmp(e->string, "go_backwards")) same = same && o && cJSON_IsTrue(o) != cJSON_IsTrue(e);
            else same = same && o && cJSON_Compare(e, o, true);
        }
        if (!same) return bad(c, KILN_UNSUPPORTED, "backward_layer", "differs from the mirror of \"layer\"; Kiln runs a copy of the layer backward");
    }
    kiln_status st = add_opt(c, out, NN_STR("layer", inner));
    return st ? st : read_keys(c, inner, opts, icfg, in_rank, out);
}

kiln_status nn_keras_layer_read(const char *cls, const char *name, const cJSON *cfg, int in_rank, nn_keras_layer *out, char *why, size_t why_n) {
    memset(out, 0, sizeof *out);
    ctx c = { cls, name ? name : "?", why, why_n };
    bool relu = !strcmp(cls, "ReLU");
    nn_kind kind;
    if (!nn_layer_kind_named(relu ? "Activation" : cls, &kind)) {
        char known[1024];
        size_t p = 0;
        for (int i = 0; i < NN_KIND_COUNT && p < sizeof known; i++) p += (size_t)snprintf(known + p, sizeof known - p, "%s%s", i ? ", " : "", nn_kind_type((nn_kind)i));
        snprintf(why, why_n, "layer '%s': unknown type '%s'; known types: %s", c.name, cls, known);
        return KILN_INVALID_ARGUMENT;
    }
    const nn_layer_def *d = nn_layer_def_of(kind);
    out->type = d->type;
    kiln_status st;
    if (relu && (st = relu_options(&c, cfg, out))) return st;
    if (name && (st = add_opt(&c, out, NN_STR("name", name)))) return st;
    if (kind == NN_BIDIRECTIONAL && (st = wrapped_layer(&c, cfg, d->opts, in_rank, out))) return st;
    if ((st = read_keys(&c, cls, relu ? NULL : d->opts, cfg, in_rank, out))) return st;
    if (kind == NN_INPUT && !out->has_shape)
        return bad(&c, KILN_INVALID_ARGUMENT, NULL, "no input shape ('batch_shape' or 'batch_input_shape')");
    return KILN_OK;
}
