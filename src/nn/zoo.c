/* Ready-made models used by the CLI, the examples and the tests: the table of presets and the
 * three small models; the larger CIFAR architectures are built in zoo_nets.c. */
#include <stdio.h>
#include <string.h>
#include "nn/nn_zoo.h"

/* the TensorFlow Fashion-MNIST CNN: Conv 3x3x32 same relu, MaxPool 2, Conv 3x3x64 same relu,
 * MaxPool 2, Flatten, Dense 128 relu, Dense classes */
static void fashion_cnn(kiln_model *m, kiln_shape in, int classes) {
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 32, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 64, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 128, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = classes });
}

/* the TensorFlow beginner model: Flatten, Dense 128 relu, Dropout 0.2, Dense classes */
static void mlp(kiln_model *m, kiln_shape in, int classes) {
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 128, .activation = KILN_RELU });
    kiln_layer_dropout(m, &(kiln_dropout_opts){ .rate = 0.2 });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = classes });
}

/* the TensorFlow CIFAR-10 tutorial CNN */
static void cifar_cnn(kiln_model *m, kiln_shape in, int classes) {
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 64, .kernel = 5, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 64, .kernel = 5, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 384, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 192, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = classes });
}

#define GREY28 { 3, { 28, 28, 1 } }
#define RGB32 { 3, { 32, 32, 3 } }
/* any_size: the model takes any image shape it can be built for (its default is only what
 * kiln_model_preset builds without one); otherwise exactly its default shape. */
static const nn_preset presets[] = {
    { "fashion_cnn", GREY28, false, false, fashion_cnn },
    { "mlp",         GREY28, false, false, mlp },
    { "cifar_cnn",   RGB32,  false, false, cifar_cnn },
    { "lenet5",      GREY28, true,  false, nn_zoo_lenet5 },
    { "resnet20",    RGB32,  true,  true,  nn_zoo_resnet },
    { "resnet56",    RGB32,  true,  true,  nn_zoo_resnet },
    { "inception",   RGB32,  true,  true,  nn_zoo_inception },
    { "fast_cifar",  RGB32,  true,  false, nn_zoo_fast_cifar },
    /* token ids (context) -> (context, vocabulary) logits; any context (the position table follows it) */
    { "gpt_char",    { 1, { 256 } },  true, true, nn_zoo_gpt, 65 },
    { "gpt2",        { 1, { 1024 } }, true, true, nn_zoo_gpt, 50257 },
};
#define N_PRESETS (int)(sizeof presets / sizeof presets[0])

const char *kiln_model_preset_names(void) { return "fashion_cnn, mlp, cifar_cnn, lenet5, resnet20, resnet56, inception, fast_cifar, gpt_char, gpt2"; }

static const nn_preset *find_preset(const char *name) {
    for (int i = 0; name && i < N_PRESETS; i++) if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

kiln_model *kiln_model_preset(const char *name, kiln_shape in, int classes) {
    if (!name) name = "";
    const nn_preset *p = find_preset(name);
    if (!p) {
        kiln_set_error(KILN_NOT_FOUND, "unknown model '%s': choose one of %s", name, kiln_model_preset_names());
        return NULL;
    }
    if (classes <= 0) classes = p->classes > 0 ? p->classes : 10;
    if (!in.rank) in = p->input;
    kiln_model *m = p->functional ? kiln_model_new(name) : kiln_sequential(name, in);
    if (!m) return NULL;
    p->build(m, in, classes);
    if (kiln_model_status(m) != KILN_OK) {
        kiln_status st = kiln_model_status(m);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_model_error(m));
        kiln_model_free(m);
        kiln_set_error(st, "model %s for input %s: %s", name, kiln_shape_str(in, (char[64]){ 0 }, 64), msg);
        return NULL;
    }
    return m;
}

bool kiln_model_preset_takes(const char *name, kiln_shape in) {
    const nn_preset *p = find_preset(name);
    if (!p) return false;
    if (!p->any_size || in.rank != p->input.rank) return kiln_shape_equal(in, p->input);
    kiln_model *m = kiln_model_preset(name, in, 10);
    bool ok = m != NULL;
    kiln_model_free(m);
    return ok;
}
