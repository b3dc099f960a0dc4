/* Train a small CNN on Fashion-MNIST with Kiln's Keras-style C API.
 *
 *   build/example_fashion_mnist [DATA_DIR] [EPOCHS]
 *
 * DATA_DIR defaults to /usr/share/datasets/fashion-mnist (apt-get install dataset-fashion-mnist). */
#include <stdio.h>
#include <stdlib.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/data.h"

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
    int epochs = argc > 2 ? atoi(argv[2]) : 5;

    kiln_dataset *train = NULL, *test = NULL;
    if (kiln_mnist_load(dir, &train, &test) != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error());     /* says which apt-get package to install */
        return 1;
    }

    /* The model: errors stick to it, so build it all and check once. */
    kiln_model *m = kiln_sequential("fashion_cnn", KILN_SHAPE(28, 28, 1));
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 32, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 64, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 128, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 10 });
    if (kiln_model_status(m) != KILN_OK) {
        fprintf(stderr, "model: %s\n", kiln_model_error(m));
        return 1;
    }
    kiln_model_summary(m, stdout);

    kiln_eval_result r;
    int rc = 0;
    if (kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-3),
                                              .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                              .from_logits = true, .metrics = KILN_METRIC_ACCURACY }) != KILN_OK ||
        kiln_fit(m, train, &(kiln_fit_opts){ .epochs = epochs, .batch_size = 64, .validation = test,
                                             .verbose = 1 }) != KILN_OK ||
        kiln_evaluate(m, test, NULL, &r) != KILN_OK ||
        kiln_model_save(m, "fashion_cnn.safetensors", false) != KILN_OK) {
        fprintf(stderr, "kiln: %s\n", kiln_last_error());
        rc = 1;
    } else {
        printf("test accuracy: %.2f%% on %lld images; weights saved to fashion_cnn.safetensors\n",
               r.accuracy * 100, (long long)r.count);
    }
    kiln_model_free(m);
    kiln_dataset_free(train);
    kiln_dataset_free(test);
    return rc;
}
