/* Layers (tier 1 of src/nn, above nn_types.h): the layer table (layers.def), each type's options
 * schema, shape, variables and forward ops, the typed builders' common path and the generic
 * "type + key/value options" entry that model files and ONNX import build on. */
#ifndef KILN_NN_LAYERS_H
#define KILN_NN_LAYERS_H
#include <stddef.h>
#include <stdio.h>
#include "nn/nn_types.h"

#define NN_MAX_FLOATS 16
typedef struct nn_floats { int n; double v[NN_MAX_FLOATS]; } nn_floats;

/* A layer's options, resolved to explicit values (the typed builders' "0 = default" is applied
 * before). Each type reads the fields its schema names. */
typedef struct nn_layer_cfg {
    const char *name;                      /* NULL: automatic (dense, dense_1, ...) */
    int units, filters, groups, depth_multiplier;
    int kernel[2], strides[2], dilation[2];
    int pool[2], pool_strides[2];          /* pool_strides 0: the window (Keras strides=None) */
    kiln_padding padding;
    kiln_activation activation;
    bool use_bias;
    double rate, momentum, epsilon, l2;
    uint64_t seed;
    int axis;                              /* Concatenate, counting the batch dim */
    kiln_shape shape;                      /* InputLayer shape, Reshape target (batch excluded) */
    kiln_init kernel_init, bias_init;
    kiln_init pointwise_init;              /* SeparableConv2D (kernel_init: its depthwise kernel) */
    double pointwise_l2;                   /* SeparableConv2D */
    double alpha;                          /* LeakyReLU / ReLU negative_slope, ELU alpha */
    double max_value;                      /* ReLU (0: none) */
    double scale, offset;                  /* Rescaling */
    bool center, scale_on;                 /* BatchNormalization, LayerNormalization: beta / gamma present */
    bool keepdims;                         /* global pooling */
    int pads[4];                           /* ZeroPadding2D / Cropping2D: top, bottom, left, right */
    int size[2];                           /* UpSampling2D */
    int out_pad[2];                        /* Conv2DTranspose output_padding (-1: None, Keras's default size) */
    nn_floats mean, variance;              /* Normalization: given values (n 0: null, weights) */
    kiln_shape noise;                      /* Dropout noise_shape, the batch included, 0 = None (rank 0: null) */
    int input_dim;                         /* Embedding: vocabulary size; PositionEmbedding: sequence_length */
    int num_heads, key_dim, value_dim;     /* MultiHeadAttention (value_dim 0: key_dim) */
    bool causal;                           /* MultiHeadAttention: use_causal_mask */
    int mode;                              /* NN_T_ENUM options: Conv1D padding (NN_PAD1D_*), UpSampling2D interpolation (0 nearest, 1 bilinear) */
    /* recurrent layers (layers_rnn.c) */
    kiln_activation recurrent_activation;
    kiln_init recurrent_init;
    double recurrent_l2;
    bool return_sequences, return_state, go_backwards, unit_forget_bias, reset_after, stateful;
    double recurrent_rate;                 /* recurrent_dropout (0 only) */
    int cell;                              /* Bidirectional: the wrapped layer (NN_RNN_CELLS index) */
    int merge_mode;                        /* Bidirectional: concat, sum, mul, ave */
    kiln_shape shared_axes;                /* PReLU: 1-based axes sharing alpha (rank 0: none) */
    double init_value;                     /* LayerScale: gamma's initial value */
    bool flat_only;                        /* Dense from kiln_layer_dense: (None, features) input only (the C API's contract) */
    bool approximate;                      /* GPTBlock: GELU with the tanh approximation (GPT-2's gelu_new) */
} nn_layer_cfg;
enum { NN_PAD1D_VALID = 0, NN_PAD1D_SAME, NN_PAD1D_CAUSAL };   /* Conv1D's padding names, in order */

/* ---- option values (what a model-file reader hands over) ---- */
typedef enum nn_val_kind { NN_V_NONE = 0, NN_V_NULL, NN_V_INT, NN_V_FLOAT, NN_V_BOOL, NN_V_STR, NN_V_INTS, NN_V_INIT, NN_V_FLOATS } nn_val_kind;
typedef struct nn_val {
    nn_val_kind kind;              /* NONE: no value (a schema entry without default: required); NULL: Keras None */
    union {
        int64_t i;
        double f;
        bool b;
        const char *s;
        struct { int n; int64_t v[KILN_MAX_DIMS]; } ints;
        kiln_init init;
        nn_floats floats;          /* NN_V_FLOATS: a list of numbers */
    };
} nn_val;
typedef struct nn_opt { const char *key; nn_val val; } nn_opt;
#define NN_INT(k, x)    ((nn_opt){ .key = (k), .val = { .kind = NN_V_INT, .i = (x) } })
#define NN_FLOAT(k, x)  ((nn_opt){ .key = (k), .val = { .kind = NN_V_FLOAT, .f = (x) } })
#define NN_BOOL(k, x)   ((nn_opt){ .key = (k), .val = { .kind = NN_V_BOOL, .b = (x) } })
#define NN_STR(k, x)    ((nn_opt){ .key = (k), .val = { .kind = NN_V_STR, .s = (x) } })
#define NN_INIT(k, x)   ((nn_opt){ .key = (k), .val = { .kind = NN_V_INIT, .init = (x) } })
#define NN_NULL(k)      ((nn_opt){ .key = (k), .val = { .kind = NN_V_NULL } })
#define NN_INTS(k, ...) ((nn_opt){ .key = (k), .val = { .kind = NN_V_INTS, .ints = { \
    .n = (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), .v = { __VA_ARGS__ } } } })

/* ---- the options schema ---- */
typedef enum nn_opt_type {
    NN_T_INT,          /* int >= min */
    NN_T_INT2,         /* an int or a list of 1 or 2 ints, each >= min: (h, w) */
    NN_T_FLOAT,        /* a number (an int is taken) */
    NN_T_BOOL,
    NN_T_SEED,         /* int >= 0 */
    NN_T_SHAPE,        /* list of ints, batch excluded */
    NN_T_ACTIVATION,   /* "linear", "relu", ... (nn_activation_names) */
    NN_T_PADDING,      /* "valid" or "same" */
    NN_T_INIT,         /* a kiln_init */
    NN_T_PAD4,         /* an int, (h, w) or ((top, bottom), (left, right)): int[4] top, bottom, left, right */
    NN_T_FLOATS,       /* a number or a list of up to NN_MAX_FLOATS (nn_floats; null: n 0) */
    NN_T_NOISE,        /* a noise shape, the batch included, None as 0 (kiln_shape; null: rank 0) */
    NN_T_INT1,         /* an int or a list of 1 int, >= min (1-D layers' Keras tuples): int[2], both set */
    NN_T_ENUM,         /* one of the spec's names (case-insensitive): its index, an int */
} nn_opt_type;
typedef struct nn_opt_spec {
    const char *key;           /* the Keras config key */
    nn_opt_type type;
    size_t off;                /* the nn_layer_cfg field it sets */
    int min;                   /* NN_T_INT / NN_T_INT2 */
    nn_val dflt;               /* kind NONE: required; NULL: optional, field left 0 */
    const char *const *names;  /* NN_T_ENUM: the accepted strings, NULL-terminated */
} nn_opt_spec;
#define NN_CFG(field) offsetof(nn_layer_cfg, field)
#define NN_DINT(x)   { .kind = NN_V_INT, .i = (x) }
#define NN_DFLOAT(x) { .kind = NN_V_FLOAT, .f = (x) }
#define NN_DBOOL(x)  { .kind = NN_V_BOOL, .b = (x) }
#define NN_DSTR(x)   { .kind = NN_V_STR, .s = (x) }
#define NN_DINIT(k)  { .kind = NN_V_INIT, .init = { .kind = (k) } }
#define NN_DNULL     { .kind = NN_V_NULL }

/* What a forward pass gives each layer's ops. */
typedef struct nn_fwd {
    kiln_model *m;
    kiln_graph *g;
    int batch;
    bool training;
    kiln_dtype dtype;          /* compute dtype (nn_forward.dtype) */
} nn_fwd;

/* ---- one layer type ---- */
typedef struct nn_layer_def {
    const char *type;          /* Keras class name: "Dense" */
    const char *base;          /* automatic names: "dense", "dense_1", ... */
    const nn_opt_spec *opts;   /* terminated by a NULL key; "name" is common to all */
    int min_in, max_in;        /* inputs: 0 0 (InputLayer), 1 1, or 2 NN_MAX_MERGE */
    /* Checks the options against the inputs' shapes, stores them resolved in l, sets l->out;
     * on error calls nn_layer_fail. */
    kiln_status (*shape)(kiln_layer *l, const nn_layer_cfg *c);
    void (*vars)(kiln_layer *l, const nn_layer_cfg *c);      /* NULL: none */
    /* The layer's ops on x (its first input's node); NULL on a graph error. */
    kiln_node *(*forward)(const nn_fwd *f, kiln_layer *l, kiln_node *x);
} nn_layer_def;

/* What an ImportedGraph layer (layers_imported.c) runs: ops a translator at the edge (ONNX
 * import, src/onnx) builds from its own description of a graph, kept in the layer's ext_data. */
typedef struct nn_layer_ext {
    const char *what;          /* "ONNX model 'x.onnx'": names the source in messages */
    /* The layer's ops on x for this forward (its variables through nn_layer_var); NULL on a
     * graph error (kiln_graph_error says why) or after nn_layer_fail. */
    kiln_node *(*forward)(void *data, const nn_fwd *f, kiln_layer *l, kiln_node *x);
    void (*free)(void *data);
    int64_t (*flops)(const void *data);                   /* per example; NULL: 0 */
    void (*summary)(const void *data, FILE *f);           /* lines under the layer's in a summary; NULL: none */
} nn_layer_ext;

#define NN_LAYER(e, def) extern const nn_layer_def def;
#include "nn/layers.def"
#undef NN_LAYER

/* Files, bottom to top (each calls only those before it): layer.c (helpers the types use),
 * activations.c, the types (layers_core.c, layers_conv.c, layers_merge.c), layer_table.c (the
 * table and the add path), layer_options.c (options by key), layers_api.c (typed builders). */

/* layer.c */
/* Records "<layer> (<Type>): <message>" on the layer's model; returns s. */
kiln_status nn_layer_fail(kiln_layer *l, kiln_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Adds a variable; a shape whose element count overflows is an error on the model (nn_layer_fail). */
void nn_layer_add_var(kiln_layer *l, const char *suffix, kiln_shape shape, kiln_init init, bool trainable, double l2);
/* Sizes from file input, checked: *out = a * b, or nn_layer_fail naming what and the values
 * ("kernel parameters: 3000000000 x 4000000000 overflows ..."); nn_layer_numel: the product of s. */
kiln_status nn_layer_mul(kiln_layer *l, const char *what, int64_t a, int64_t b, int64_t *out);
kiln_status nn_layer_numel(kiln_layer *l, const char *what, kiln_shape s, int64_t *out);
kiln_node *nn_layer_var(const nn_fwd *f, const kiln_layer *l, const char *suffix);   /* as the layer reads it */
char *nn_batched_str(kiln_shape s, char *buf, size_t n);    /* "(None, 28, 28, 1)" */
kiln_status nn_create_variables(kiln_model *m, kiln_graph *g);
int64_t nn_layer_params(const kiln_layer *l, bool trainable_only);
void nn_layer_free(kiln_layer *l);      /* its variables, options and ext data too; NULL is a no-op */

/* layer_flops.c: kiln_layer_flops with every step checked (nn_layer_fail naming the values on
 * overflow); nn_layer_finish runs it, so that kiln_layer_flops never wraps. */
kiln_status nn_layer_flops_checked(kiln_layer *l, int64_t *out);

/* layer_table.c */
const nn_layer_def *nn_layer_def_of(nn_kind k);
bool nn_layer_kind_named(const char *type, nn_kind *k);      /* by Keras class name */
const char *nn_kind_type(nn_kind k);
/* Adds a layer of kind k with options c on inputs (n_in 0 for a single-input layer: the previous
 * layer of a sequential model). NULL on error (sticky on m). */
kiln_layer *nn_layer_add(kiln_model *m, nn_kind k, const nn_layer_cfg *c, kiln_layer *const *in, int n_in);
/* nn_layer_add in two halves, for callers that resolve options once the layer has its name:
 * begin checks and names it (unregistered); finish checks its options, registers it or frees it. */
kiln_layer *nn_layer_begin(kiln_model *m, nn_kind k, const char *name, kiln_layer *const *in, int n_in);
kiln_layer *nn_layer_finish(kiln_layer *l, const nn_layer_cfg *c);
kiln_node *nn_layer_forward(const nn_fwd *f, kiln_layer *l);
/* Renames a registered layer (a model file's name for the input layer kiln_sequential made);
 * an error (sticky on its model) when another layer has that name. */
kiln_status nn_layer_rename(kiln_layer *l, const char *name);

/* layer_options.c: type name + key/value options -> a layer, as a Keras config describes it.
 * Unknown type, unknown key, wrong value type or range: NULL, the error (naming the layer and
 * the key) sticky on m. */
kiln_layer *nn_layer_from_options(kiln_model *m, const char *type, kiln_layer *const *in, int n_in,
                                  const nn_opt *opts, int n_opts);
/* Schema defaults of type k (required fields 0); the typed builders start from them. */
nn_layer_cfg nn_layer_defaults(nn_kind k);

/* layers_imported.c: an ImportedGraph layer on input `in` whose ops ext builds (ext_data is
 * taken, freed with the layer even on error); out: its output shape (batch excluded). */
kiln_layer *nn_layer_add_imported(kiln_model *m, const char *name, kiln_layer *in, const nn_layer_ext *ext, void *ext_data,
                                  kiln_shape out);

/* activations.c */
extern const char *const nn_activation_names[KILN_ACTIVATION_COUNT];   /* Keras spelling */
/* "swish" -> KILN_SILU, "hard_swish" -> KILN_HARD_SILU; KILN_ACTIVATION_COUNT for any other name */
kiln_activation nn_activation_alias(const char *name);
kiln_node *nn_activate(kiln_graph *g, kiln_node *x, kiln_activation a);

#endif
