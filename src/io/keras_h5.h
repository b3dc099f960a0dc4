/* The HDF5 side of Keras model files (keras_h5.c, the one file that includes hdf5.h): the weights
 * of Keras 3's model.weights.h5 (layers/<key>/vars/0, 1, ...; the vars group's "name" attribute
 * is the layer's name) and of tf.keras 2's legacy .h5 (model_weights/<layer> with its
 * weight_names attribute; the root's model_config attribute holds the architecture), read on
 * demand so that a file's claims never size an allocation before the model has checked them; and
 * Keras 3's layout written. Built without HDF5, every call says what to install. */
#ifndef KILN_IO_KERAS_H5_H
#define KILN_IO_KERAS_H5_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kiln/status.h"
#include "kiln/tensor.h"

bool keras_h5_available(void);
/* Whether buf starts like an HDF5 file (its signature at 0, 512, 1024, ...). */
bool keras_h5_sniff(const uint8_t *buf, size_t n);

typedef struct keras_h5 keras_h5;
/* Opens path (read whole), or when path is NULL the n-byte file image (copied), and indexes its layers.
 * what names it in messages. */
kiln_status keras_h5_open(const char *path, const uint8_t *image, size_t n, const char *what, keras_h5 **out);
void keras_h5_close(keras_h5 *h);
const char *keras_h5_model_config(const keras_h5 *h);   /* the legacy root attribute; NULL if none */
bool keras_h5_is_legacy(const keras_h5 *h);
int keras_h5_layer_count(const keras_h5 *h);
const char *keras_h5_layer_name(const keras_h5 *h, int i);
const char *keras_h5_layer_key(const keras_h5 *h, int i);   /* Keras 3's group key ("conv2d_1"); legacy: the name */
int keras_h5_var_count(const keras_h5 *h, int i);
const char *keras_h5_var_name(const keras_h5 *h, int i, int j);   /* "0", "cell/vars/0" (a sub-layer's) or a legacy weight name */
const char *keras_h5_var_path(const keras_h5 *h, int i, int j);   /* its dataset's path in the file */
/* The shape of weight j of layer i (KILN_UNSUPPORTED for more than KILN_MAX_DIMS axes or a
 * non-float type), then its values as f32 into dst, which holds exactly n elements. */
kiln_status keras_h5_var_shape(keras_h5 *h, int i, int j, kiln_shape *s);
kiln_status keras_h5_var_read(keras_h5 *h, int i, int j, float *dst, int64_t n);

/* Keras 3's model.weights.h5 as a file image (*img kiln_malloc'd): per layer in Keras's order
 * its key, name and weights. */
typedef struct keras_h5_layer_out {
    const char *key, *name;
    int n_vars;
    const kiln_shape *shapes;
    const float *const *data;
    const char *cell;          /* a recurrent layer's cell ("lstm_cell"): its weights under cell/vars, NULL: vars */
    bool bidirectional;        /* weights halved: forward_layer/cell/vars, backward_layer/cell/vars */
    bool mha;                  /* MultiHeadAttention: weights quartered, query/key/value/output_dense/vars */
} keras_h5_layer_out;
kiln_status keras_h5_write_image(const keras_h5_layer_out *l, int n, const char *model_name, const char *what, uint8_t **img, size_t *img_n);
#endif
