/* Activations: their Keras names and their ops. */
#include <string.h>
#include "nn/nn_layers.h"

const char *const nn_activation_names[KILN_ACTIVATION_COUNT] = {
    [KILN_LINEAR] = "linear", [KILN_RELU] = "relu", [KILN_SIGMOID] = "sigmoid", [KILN_TANH] = "tanh",
    [KILN_SOFTMAX] = "softmax", [KILN_GELU] = "gelu", [KILN_ELU] = "elu", [KILN_LEAKY_RELU] = "leaky_relu",
    [KILN_SOFTPLUS] = "softplus", [KILN_SILU] = "silu", [KILN_RELU6] = "relu6", [KILN_HARD_SIGMOID] = "hard_sigmoid",
    [KILN_HARD_SILU] = "hard_silu", [KILN_SELU] = "selu", [KILN_SOFTSIGN] = "softsign", [KILN_MISH] = "mish",
    [KILN_EXPONENTIAL] = "exponential",
};

/* Keras's other spellings of the same functions (keras.activations.get takes both). */
kiln_activation nn_activation_alias(const char *name) {
    if (!strcmp(name, "swish")) return KILN_SILU;
    if (!strcmp(name, "hard_swish")) return KILN_HARD_SILU;
    return KILN_ACTIVATION_COUNT;
}

kiln_node *nn_activate(kiln_graph *g, kiln_node *x, kiln_activation a) {
    switch (a) {
    case KILN_RELU: return kiln_relu(g, x);
    case KILN_SIGMOID: return kiln_sigmoid(g, x);
    case KILN_TANH: return kiln_tanh(g, x);
    case KILN_SOFTMAX: return kiln_softmax(g, x, -1);
    case KILN_GELU: return kiln_gelu(g, x);
    case KILN_ELU: return kiln_elu(g, x, 1.0);
    case KILN_LEAKY_RELU: return kiln_leaky_relu(g, x, 0.2);   /* Keras LeakyReLU default (TF2.x: 0.3) */
    case KILN_SOFTPLUS: return kiln_softplus(g, x);
    case KILN_SILU: return kiln_swish(g, x);
    case KILN_RELU6: return kiln_clipped_relu(g, x, 6.0);
    case KILN_HARD_SIGMOID: return kiln_hard_sigmoid(g, x);
    case KILN_HARD_SILU: return kiln_hard_swish(g, x);
    case KILN_SELU: return kiln_selu(g, x);
    case KILN_SOFTSIGN: return kiln_softsign(g, x);
    case KILN_MISH: return kiln_mish(g, x);
    case KILN_EXPONENTIAL: return kiln_exp(g, x);
    default: return x;
    }
}
