/* Keras layer configs -> Kiln layer types and options (keras_layer.c), for model_config_read.c:
 * the keys Kiln honours, those it accepts because they do not change the math, and the values it
 * refuses, naming the layer and the key. */
#ifndef KILN_NN_KERAS_H
#define KILN_NN_KERAS_H
#include "nn/nn_layers.h"
#include "nn/nn_json.h"

#define NN_KERAS_MAX_OPTS 32
typedef struct nn_keras_layer {
    const char *type;                  /* Kiln layer type: the Keras class, ReLU -> Activation */
    nn_opt opts[NN_KERAS_MAX_OPTS];    /* strings point into the cJSON tree */
    int n_opts;
    bool has_shape;                    /* InputLayer: its shape (batch excluded) in shape */
    kiln_shape shape;
    const cJSON *batch_input_shape;    /* tf.keras 2: a first layer's batch_input_shape, or NULL */
} nn_keras_layer;

/* Translates layer config cfg of Keras class cls named name. in_rank: the rank (batch excluded) of
 * the layer's first input, -1 when it has none. On error the reason, naming the layer and the
 * key, in why; KILN_INVALID_ARGUMENT or KILN_UNSUPPORTED. */
kiln_status nn_keras_layer_read(const char *cls, const char *name, const cJSON *cfg, int in_rank, nn_keras_layer *out,
                                char *why, size_t why_n);
/* A serialized Keras object of Keras' own: "module" absent, null or keras...; "registered_name"
 * absent, null or cls. */
bool nn_keras_builtin(const cJSON *o, const char *cls);
/* A dtype Kiln computes in: absent, null, "float32", or a float32 DTypePolicy (Keras 3) / Policy (tf.keras 2). */
bool nn_keras_float32(const cJSON *v);
/* A Keras batched shape [null, d1, ...] (or, with batched false, [d1, ...]) -> s. false when it
 * is not one. */
bool nn_keras_shape(const cJSON *v, bool batched, kiln_shape *s);
/* kiln_model_from_json with what naming the text in messages ("model file 'm.keras'"). */
kiln_status nn_model_from_json_named(const char *json, const char *what, kiln_model **out);

#endif
