/* Ready-made models used by the CLI, the examples and the tests. */
#include <string.h>
#include "kiln/nn.h"
#include "core/core.h"

const char *kiln_model_preset_names(void) { return "fashion_cnn, mlp, cifar_cnn"; }

kiln_model *kiln_model_preset(const char *name, kiln_shape in, int classes) {
    if (classes <= 0) classes = 10;
    kiln_model *m = NULL;
    if (!name) name = "";
    if (!strcmp(name, "fashion_cnn")) {
        /* Conv 3x3x32 same relu, MaxPool 2, Conv 3x3x64 same relu, MaxPool 2, Flatten, Dense 128 relu, Dense 10 */
        m = kiln_sequential(name, in.rank ? in : KILN_SHAPE(28, 28, 1));
        kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 32, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
        kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
        kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 64, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
        kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
        kiln_layer_flatten(m, NULL);
        kiln_layer_dense(m, &(kiln_dense_opts){ .units = 128, .activation = KILN_RELU });
        kiln_layer_dense(m, &(kiln_dense_opts){ .units = classes });
    } else if (!strcmp(name, "mlp")) {
        /* the TensorFlow beginner model: Flatten, Dense 128 relu, Dropout 0.2, Dense 10 */
        m = kiln_sequential(name, in.rank ? in : KILN_SHAPE(28, 28, 1));
        kiln_layer_flatten(m, NULL);
        kiln_layer_dense(m, &(kiln_dense_opts){ .units = 128, .activation = KILN_RELU });
        kiln_layer_dropout(m, &(kiln_dropout_opts){ .rate = 0.2 });
        kiln_layer_dense(m, &(kiln_dense_opts){ .units = classes });
    } else if (!strcmp(name, "cifar_cnn")) {
        /* the TensorFlow CIFAR-10 tutorial CNN */
        m = kiln_sequential(name, in.rank ? in : KILN_SHAPE(32, 32, 3));
        kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 64, .kernel = 5, .padding = KILN_SAME, .activation = KILN_RELU });
        kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 3, .strides = 2, .padding = KILN_SAME });
        kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 64, .kernel = 5, .padding = KILN_SAME, .activation = KILN_RELU });
        kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 3, .strides = 2, .padding = KILN_SAME });
        kiln_layer_flatten(m, NULL);
        kiln_layer_dense(m, &(kiln_dense_opts){ .units = 384, .activation = KILN_RELU });
        kiln_layer_dense(m, &(kiln_dense_opts){ .units = 192, .activation = KILN_RELU });
        kiln_layer_dense(m, &(kiln_dense_opts){ .units = classes });
    } else {
        kiln_set_error(KILN_NOT_FOUND, "unknown model '%s': choose one of %s", name, kiln_model_preset_names());
        return NULL;
    }
    if (m && kiln_model_status(m) != KILN_OK) {
        kiln_status st = kiln_model_status(m);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_model_error(m));
        kiln_model_free(m);
        kiln_set_error(st, "%s", msg);
        return NULL;
    }
    return m;
}
