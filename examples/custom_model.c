/* A model built with the C API (not one of the CLI's built-in models), trained briefly and saved:
 * the checkpoint holds its architecture and class names, so the CLI can use it as it is:
 *
 *   build/example_custom_model tiny_resnet.safetensors [EPOCHS] [DATA_DIR]
 *   build/kiln summary --load tiny_resnet.safetensors
 *   build/kiln eval --load tiny_resnet.safetensors            # Fashion-MNIST test set
 *
 * Trains on Fashion-MNIST from DATA_DIR when given, else on 512 random 28x28x1 examples. */
#include <stdio.h>
#include <stdlib.h>
#include "kiln/kiln.h"
#include "kiln/nn.h"
#include "kiln/data.h"

static const char *const fashion[10] = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" };

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s OUT.safetensors [EPOCHS] [DATA_DIR]\n", argv[0]); return 2; }
    int epochs = argc > 2 ? atoi(argv[2]) : 1;
    kiln_dataset *train = NULL, *test = NULL;
    if (argc > 3 ? kiln_mnist_load(argv[3], &train, &test) != KILN_OK : !(train = kiln_dataset_synthetic(KILN_SHAPE(28, 28, 1), 10, 512, 1))) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return 1;
    }

    /* a functional residual net: stem, conv + batch norm, a skip connection, global pooling */
    kiln_model *m = kiln_model_new("tiny_resnet");
    kiln_layer *in = kiln_input(m, KILN_SHAPE(28, 28, 1));
    kiln_layer *stem = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = in, .filters = 8, .kernel = 3, .strides = 2, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer *c = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = stem, .filters = 8, .kernel = 3, .padding = KILN_SAME, .no_bias = true });
    kiln_layer *bn = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = c });
    kiln_layer *sum = kiln_layer_add(m, &(kiln_merge_opts){ .name = "residual", .inputs = (kiln_layer *[]){ stem, bn }, .n_inputs = 2 });
    kiln_layer *act = kiln_layer_activation(m, &(kiln_activation_opts){ .input = sum, .activation = KILN_RELU });
    kiln_layer *gap = kiln_layer_global_avg_pool2d(m, &(kiln_layer_opts){ .input = act });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = gap, .units = 10 });
    kiln_model_functional(m, &in, 1, &out, 1);
    kiln_model_set_class_names(m, fashion, 10);

    if (kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-2), .from_logits = true, .metrics = KILN_METRIC_ACCURACY }) != KILN_OK ||
        kiln_fit(m, train, &(kiln_fit_opts){ .epochs = epochs, .batch_size = 64, .verbose = 2 }) != KILN_OK ||
        kiln_model_save(m, argv[1], false) != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error());
        kiln_model_free(m);
        kiln_dataset_free(train);
        kiln_dataset_free(test);
        return 1;
    }
    printf("Saved: %s\n", argv[1]);
    kiln_model_free(m);
    kiln_dataset_free(train);
    kiln_dataset_free(test);
    return 0;
}
