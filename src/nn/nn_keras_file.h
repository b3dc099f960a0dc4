/* Shared by keras_file.c (reading .keras / .h5) and keras_save.c (writing .keras). */
#ifndef KILN_NN_KERAS_FILE_H
#define KILN_NN_KERAS_FILE_H
#include "nn/nn_model.h"

/* The model's layers in the order of Keras's model.layers (Sequential: without its InputLayer;
 * Functional: Keras's map_graph order, by depth from the inputs, ties by first visit from the
 * output) and the key each has in Keras 3's weights file: its class in snake case, "_1", "_2"
 * ... for repeats ("conv2d", "conv2d_1"). *order, *keys and each key: kiln_free. */
kiln_status nn_keras_order(const kiln_model *m, kiln_layer ***order, char ***keys, int *n);
void nn_keras_order_free(kiln_layer **order, char **keys, int n);
#endif
