/* The zoo's published architectures, built from the public layer builders only:
 *   lenet5      LeCun et al. 1998
 *   resnetN     the CIFAR ResNets of He et al. 2015 (N = 6n + 2: resnet20, resnet56)
 *   inception   GoogLeNet (Szegedy et al. 2014) for 32x32 inputs, with batch norm
 *   fast_cifar  the network of the fastest-known CIFAR-10 trainers (Keller Jordan's airbench)
 * Convolutions followed by batch norm have no bias (the norm's beta replaces it). */
#include <stdio.h>
#include <stdlib.h>
#include "nn/nn_zoo.h"

#define NAME 96

/* conv (no bias, SAME) -> batch norm -> [activation]; layers named <name>_conv, _bn, _<act>. */
static kiln_layer *conv_bn(kiln_model *m, kiln_layer *x, const char *name, int filters, int kernel, int stride,
                           kiln_activation act, double momentum) {
    char n[NAME];
    kiln_init he = kiln_init_he_normal(0);          /* seed 0: from the model seed */
    snprintf(n, sizeof n, "%.80s_conv", name);
    kiln_layer *y = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .name = n, .input = x, .filters = filters, .kernel = kernel,
                                                             .strides = stride, .padding = KILN_SAME, .no_bias = true,
                                                             .kernel_initializer = &he });
    snprintf(n, sizeof n, "%.80s_bn", name);
    y = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .name = n, .input = y, .momentum = momentum, .epsilon = 1e-5 });
    if (act == KILN_LINEAR) return y;
    snprintf(n, sizeof n, "%.80s_%s", name, act == KILN_GELU ? "gelu" : "relu");
    return kiln_layer_activation(m, &(kiln_activation_opts){ .name = n, .input = y, .activation = act });
}

/* ---- LeNet-5: C1 6@5x5, S2 avg pool, C3 16@5x5, S4 avg pool, C5 120, F6 84, output; tanh.
 * The paper centres 28x28 digits in a 32x32 field: for inputs under 32x32, C1 pads (SAME), which
 * is the same. C3 is fully connected to S2 (the paper's partial table is not used), and the
 * output is a dense layer (logits), not the paper's RBF units. */
void nn_zoo_lenet5(kiln_model *m, kiln_shape in, int classes) {
    bool small = in.rank == 3 && (in.dim[0] < 32 || in.dim[1] < 32);
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .name = "c1", .filters = 6, .kernel = 5, .padding = small ? KILN_SAME : KILN_VALID,
                                              .activation = KILN_TANH });
    kiln_layer_avg_pool2d(m, &(kiln_pool_opts){ .name = "s2", .size = 2 });
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .name = "c3", .filters = 16, .kernel = 5, .activation = KILN_TANH });
    kiln_layer_avg_pool2d(m, &(kiln_pool_opts){ .name = "s4", .size = 2 });
    kiln_layer_flatten(m, &(kiln_layer_opts){ .name = "flatten" });
    kiln_layer_dense(m, &(kiln_dense_opts){ .name = "c5", .units = 120, .activation = KILN_TANH });
    kiln_layer_dense(m, &(kiln_dense_opts){ .name = "f6", .units = 84, .activation = KILN_TANH });
    kiln_layer_dense(m, &(kiln_dense_opts){ .name = "output", .units = classes });
}

/* ---- ResNet-(6n+2) for CIFAR (He et al. 2015, section 4.2): a 3x3 conv with 16 filters, then
 * three stages of n basic blocks (two 3x3 convs) with 16, 32, 64 filters on 32x32, 16x16, 8x8
 * maps (the first conv of stages 2 and 3 has stride 2), global average pooling, a 10-way dense
 * layer. Batch norm after every conv, ReLU after the first conv of a block and after the Add.
 * Shortcuts are identities, except where the shape changes (the first block of stages 2 and 3):
 * there a 1x1 conv with stride 2 and batch norm (the paper's option B, projection; its CIFAR
 * runs used option A, zero padding, which has no parameters: B adds 16*32 + 32*64 weights and
 * 2*(32 + 64) norm parameters, 0.27M -> 0.273M for ResNet-20). He-normal initialisation as
 * in the paper; batch-norm momentum 0.9 (PyTorch's 0.1) and epsilon 1e-5. */
void nn_zoo_resnet(kiln_model *m, kiln_shape in, int classes) {
    int depth = atoi(kiln_model_name(m) + 6), n = (depth - 2) / 6;    /* the name is resnet<depth> */
    kiln_layer *input = kiln_input(m, in), *x = conv_bn(m, input, "stem", 16, 3, 1, KILN_RELU, 0.9);
    int w_in = 16;
    char p[32], name[NAME];
    for (int s = 0; s < 3; s++) {
        int w = 16 << s;
        for (int b = 0; b < n; b++) {
            int stride = s > 0 && b == 0 ? 2 : 1;
            snprintf(p, sizeof p, "stage%d_block%d", s + 1, b + 1);
            snprintf(name, sizeof name, "%s_1", p);
            kiln_layer *h = conv_bn(m, x, name, w, 3, stride, KILN_RELU, 0.9);
            snprintf(name, sizeof name, "%s_2", p);
            h = conv_bn(m, h, name, w, 3, 1, KILN_LINEAR, 0.9);
            kiln_layer *shortcut = x;
            if (stride != 1 || w != w_in) {
                snprintf(name, sizeof name, "%s_proj", p);
                shortcut = conv_bn(m, x, name, w, 1, stride, KILN_LINEAR, 0.9);
            }
            snprintf(name, sizeof name, "%s_add", p);
            x = kiln_layer_add(m, &(kiln_merge_opts){ .name = name, .inputs = (kiln_layer *[]){ h, shortcut }, .n_inputs = 2 });
            snprintf(name, sizeof name, "%s_out", p);
            x = kiln_layer_activation(m, &(kiln_activation_opts){ .name = name, .input = x, .activation = KILN_RELU });
            w_in = w;
        }
    }
    x = kiln_layer_global_avg_pool2d(m, &(kiln_layer_opts){ .name = "avg_pool", .input = x });
    x = kiln_layer_dense(m, &(kiln_dense_opts){ .name = "fc", .input = x, .units = classes });
    kiln_model_functional(m, &input, 1, &x, 1);
}

/* ---- Inception: GoogLeNet's nine modules at a quarter of their width, laid out for 32x32 inputs
 * as the common CIFAR version (kuangliu/pytorch-cifar) does: a 3x3 stem conv instead of the
 * 7x7/2 stem and its pooling, modules 3a-3b on 32x32, max pool 3/2, 4a-4e on 16x16, max pool 3/2,
 * 5a-5b on 8x8, global average pooling, dense. Each module concatenates four branches on the
 * channels: 1x1; 1x1 reduce -> 3x3; 1x1 reduce -> two 3x3 (the 5x5 factorised, as in
 * BN-Inception); 3x3/1 max pool -> 1x1 projection. Every conv is followed by batch norm and
 * ReLU (BN-Inception, Ioffe & Szegedy 2015; no dropout, as there). Channels: GoogLeNet's table
 * divided by 4. */
typedef struct inception_cfg { const char *name; int c1, r3, c3, r5, c5, pool_proj; bool pool_before; } inception_cfg;
static const inception_cfg inception_modules[] = {
    { "3a", 16, 24, 32, 4, 8, 8, false },   { "3b", 32, 32, 48, 8, 24, 16, false },
    { "4a", 48, 24, 52, 4, 12, 16, true },  { "4b", 40, 28, 56, 6, 16, 16, false }, { "4c", 32, 32, 64, 6, 16, 16, false },
    { "4d", 28, 36, 72, 8, 16, 16, false }, { "4e", 64, 40, 80, 8, 32, 32, false },
    { "5a", 64, 40, 80, 8, 32, 32, true },  { "5b", 96, 48, 96, 12, 32, 32, false },
};

static kiln_layer *inception_module(kiln_model *m, kiln_layer *x, const inception_cfg *c) {
    char p[NAME], n[NAME];
    snprintf(p, sizeof p, "inception_%s", c->name);
#define BR(suffix) (snprintf(n, sizeof n, "%.60s_%s", p, suffix), n)
    kiln_layer *b1 = conv_bn(m, x, BR("1x1"), c->c1, 1, 1, KILN_RELU, 0.9);
    kiln_layer *b2 = conv_bn(m, x, BR("3x3_reduce"), c->r3, 1, 1, KILN_RELU, 0.9);
    b2 = conv_bn(m, b2, BR("3x3"), c->c3, 3, 1, KILN_RELU, 0.9);
    kiln_layer *b3 = conv_bn(m, x, BR("5x5_reduce"), c->r5, 1, 1, KILN_RELU, 0.9);
    b3 = conv_bn(m, b3, BR("5x5a"), c->c5, 3, 1, KILN_RELU, 0.9);
    b3 = conv_bn(m, b3, BR("5x5b"), c->c5, 3, 1, KILN_RELU, 0.9);
    kiln_layer *b4 = kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .name = BR("pool"), .input = x, .size = 3, .strides = 1, .padding = KILN_SAME });
    b4 = conv_bn(m, b4, BR("pool_proj"), c->pool_proj, 1, 1, KILN_RELU, 0.9);
    return kiln_layer_concatenate(m, &(kiln_merge_opts){ .name = BR("concat"), .inputs = (kiln_layer *[]){ b1, b2, b3, b4 }, .n_inputs = 4 });
#undef BR
}

void nn_zoo_inception(kiln_model *m, kiln_shape in, int classes) {
    kiln_layer *input = kiln_input(m, in), *x = conv_bn(m, input, "stem", 48, 3, 1, KILN_RELU, 0.9);
    char n[NAME];
    for (size_t i = 0; i < sizeof inception_modules / sizeof inception_modules[0]; i++) {
        const inception_cfg *c = &inception_modules[i];
        if (c->pool_before) {
            snprintf(n, sizeof n, "pool_before_%s", c->name);
            x = kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .name = n, .input = x, .size = 3, .strides = 2, .padding = KILN_SAME });
        }
        x = inception_module(m, x, c);
    }
    x = kiln_layer_global_avg_pool2d(m, &(kiln_layer_opts){ .name = "avg_pool", .input = x });
    x = kiln_layer_dense(m, &(kiln_dense_opts){ .name = "fc", .input = x, .units = classes });
    kiln_model_functional(m, &input, 1, &x, 1);
}

/* ---- fast_cifar: airbench's network (Jordan 2024, after Page's and tysam-code's trainers): a
 * 2x2 valid conv of 2*C*2*2 channels with bias and GELU (airbench freezes it to a patch-whitening
 * transform; here it is an ordinary trained conv), then three blocks of widths 64, 256, 256, each
 * conv 3x3 -> max pool 2 -> BN -> GELU -> conv 3x3 -> BN -> GELU (convs without bias), max pool 3,
 * flatten, dense without bias. BN momentum 0.6 (airbench's PyTorch 0.4). Not included: the
 * frozen whitening, the identity init of the second convs, and the 1/9 output scale. */
void nn_zoo_fast_cifar(kiln_model *m, kiln_shape in, int classes) {
    int channels = in.rank == 3 ? (int)in.dim[2] : 3;
    static const int widths[3] = { 64, 256, 256 };
    char n[NAME];
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .name = "whiten", .filters = 2 * channels * 4, .kernel = 2, .activation = KILN_GELU });
    for (int b = 0; b < 3; b++) {
        snprintf(n, sizeof n, "block%d_conv1", b + 1);
        kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .name = n, .filters = widths[b], .kernel = 3, .padding = KILN_SAME, .no_bias = true });
        snprintf(n, sizeof n, "block%d_pool", b + 1);
        kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .name = n, .size = 2 });
        snprintf(n, sizeof n, "block%d_bn1", b + 1);
        kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .name = n, .momentum = 0.6, .epsilon = 1e-5 });
        snprintf(n, sizeof n, "block%d_gelu1", b + 1);
        kiln_layer_activation(m, &(kiln_activation_opts){ .name = n, .activation = KILN_GELU });
        snprintf(n, sizeof n, "block%d_conv2", b + 1);
        kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .name = n, .filters = widths[b], .kernel = 3, .padding = KILN_SAME, .no_bias = true });
        snprintf(n, sizeof n, "block%d_bn2", b + 1);
        kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .name = n, .momentum = 0.6, .epsilon = 1e-5 });
        snprintf(n, sizeof n, "block%d_gelu2", b + 1);
        kiln_layer_activation(m, &(kiln_activation_opts){ .name = n, .activation = KILN_GELU });
    }
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .name = "pool", .size = 3 });
    kiln_layer_flatten(m, &(kiln_layer_opts){ .name = "flatten" });
    kiln_layer_dense(m, &(kiln_dense_opts){ .name = "fc", .units = classes, .no_bias = true });
}
