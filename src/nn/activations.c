/* Activations: their Keras names and their ops. */
#include "nn/nn_layers.h"

const char *const nn_activation_names[KILN_ACTIVATION_COUNT] = {
    [KILN_LINEAR] = "linear", [KILN_RELU] = "relu", [KILN_SIGMOID] = "sigmoid", [KILN_TANH] = "tanh",
    [KILN_SOFTMAX] = "softmax", [KILN_GELU] = "gelu", [KILN_ELU] = "elu", [KILN_LEAKY_RELU] = "leaky_relu",
    [KILN_SOFTPLUS] = "softplus",
};

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
    default: return x;
    }
}
