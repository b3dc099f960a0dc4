/* The test model with every layer type and activation (tests/onnx): what the zoo's models are
 * made of, wired so each export path runs (image BN, BN over a reshaped [9, 6], BN on features,
 * Concatenate of images and of features, Add, grouped and depthwise convolutions). */
#ifndef KILN_TEST_MIXED_MODEL_H
#define KILN_TEST_MIXED_MODEL_H
#include "kiln/kiln.h"

static inline kiln_model *mixed_model(void) {
    kiln_model *m = kiln_model_new("mixed");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(12, 12, 3));
    kiln_layer *c1 = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = x, .filters = 8, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer *b1 = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = c1, .momentum = 0.5 });
    kiln_layer *d1 = kiln_layer_depthwise_conv2d(m, &(kiln_conv2d_opts){ .input = b1, .kernel = 3, .depth_multiplier = 2, .padding = KILN_SAME, .activation = KILN_GELU });
    kiln_layer *c2 = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = x, .filters = 16, .kernel_h = 1, .kernel_w = 3, .padding = KILN_SAME, .activation = KILN_ELU });
    kiln_layer *a = kiln_layer_add(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ d1, c2 }, .n_inputs = 2 });
    kiln_layer *cat = kiln_layer_concatenate(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ a, c1, x }, .n_inputs = 3 });
    kiln_layer *act = kiln_layer_activation(m, &(kiln_activation_opts){ .input = cat, .activation = KILN_LEAKY_RELU });
    kiln_layer *ap = kiln_layer_avg_pool2d(m, &(kiln_pool_opts){ .input = act, .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer *g1 = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = ap, .filters = 6, .kernel = 2, .strides = 2, .groups = 3, .activation = KILN_SOFTPLUS });
    kiln_layer *mp = kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .input = ap, .size = 2 });
    kiln_layer *b2 = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = mp, .momentum = 0.5 });
    kiln_layer *gap = kiln_layer_global_avg_pool2d(m, &(kiln_layer_opts){ .input = b2 });
    kiln_layer *f = kiln_layer_flatten(m, &(kiln_layer_opts){ .input = g1 });
    kiln_layer *r = kiln_layer_reshape(m, &(kiln_reshape_opts){ .input = f, .shape = KILN_SHAPE(9, 6) });
    kiln_layer *b3 = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = r, .momentum = 0.5 });
    kiln_layer *f2 = kiln_layer_flatten(m, &(kiln_layer_opts){ .input = b3 });
    kiln_layer *both = kiln_layer_concatenate(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ gap, f2 }, .n_inputs = 2 });
    kiln_layer *dr = kiln_layer_dropout(m, &(kiln_dropout_opts){ .input = both, .rate = 0.3 });
    kiln_layer *h = kiln_layer_dense(m, &(kiln_dense_opts){ .input = dr, .units = 24, .activation = KILN_TANH });
    kiln_layer *h2 = kiln_layer_dense(m, &(kiln_dense_opts){ .input = h, .units = 16, .activation = KILN_SIGMOID, .no_bias = true });
    kiln_layer *b4 = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = h2, .momentum = 0.5 });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = b4, .units = 10 });
    kiln_model_functional(m, &x, 1, &out, 1);
    return m;
}

/* Issue 29's layer types and activations (keras.applications' building blocks), each export path:
 * Rescaling, Normalization, ZeroPadding2D, SeparableConv2D, BatchNormalization without gamma /
 * beta, GlobalAveragePooling2D keepdims, a broadcasting Multiply (squeeze-and-excitation),
 * Cropping2D, UpSampling2D, LeakyReLU, ELU, Maximum, Minimum, Subtract, Average, GlobalMaxPooling2D
 * and the new activations. */
static inline kiln_model *apps_model(void) {
    kiln_model *m = kiln_model_new("apps");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(12, 12, 3));
    kiln_layer *r = kiln_layer_rescaling(m, &(kiln_rescaling_opts){ .input = x, .scale = 1.0 / 127.5, .offset = -1 });
    kiln_layer *nm = kiln_layer_from_config(m, "Normalization", "{\"mean\": [0.5, 0.25, 0], \"variance\": [1, 4, 0.25]}", &r, 1);
    kiln_layer *p = kiln_layer_zero_padding2d(m, &(kiln_pad2d_opts){ .input = nm, .bottom = 1, .left = 1, .right = 2 });
    kiln_layer *c = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = p, .filters = 8, .kernel = 3, .no_bias = true });
    kiln_layer *b = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = c, .no_scale = true, .momentum = 0.5 });
    kiln_layer *r6 = kiln_layer_activation(m, &(kiln_activation_opts){ .input = b, .activation = KILN_RELU6 });
    kiln_layer *s = kiln_layer_separable_conv2d(m, &(kiln_conv2d_opts){ .input = r6, .filters = 8, .kernel = 3, .padding = KILN_SAME, .depth_multiplier = 2, .activation = KILN_SILU });
    kiln_layer *g = kiln_layer_from_config(m, "GlobalAveragePooling2D", "{\"keepdims\": true}", &s, 1);
    kiln_layer *se = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = g, .filters = 8, .kernel = 1, .activation = KILN_HARD_SIGMOID });
    kiln_layer *mu = kiln_layer_multiply(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ s, se }, .n_inputs = 2 });
    kiln_layer *b2 = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = mu, .no_scale = true, .no_center = true, .momentum = 0.5 });
    kiln_layer *rg = kiln_layer_from_config(m, "ReLU", "{\"max_value\": 4, \"negative_slope\": 0.1}", &b2, 1);
    kiln_layer *hs = kiln_layer_activation(m, &(kiln_activation_opts){ .input = rg, .activation = KILN_HARD_SILU });
    kiln_layer *cr = kiln_layer_cropping2d(m, &(kiln_pad2d_opts){ .input = hs, .top = 1, .left = 1 });
    kiln_layer *dn = kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .input = cr, .size = 2 });
    kiln_layer *up = kiln_layer_upsampling2d(m, &(kiln_upsampling2d_opts){ .input = dn, .size = 2 });
    kiln_layer *lr = kiln_layer_leaky_relu(m, &(kiln_alpha_opts){ .input = up, .alpha = 0.1 });
    kiln_layer *el = kiln_layer_elu(m, &(kiln_alpha_opts){ .input = cr, .alpha = 0.5 });
    kiln_layer *mx = kiln_layer_maximum(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ lr, el }, .n_inputs = 2 });
    kiln_layer *mn = kiln_layer_minimum(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ lr, el }, .n_inputs = 2 });
    kiln_layer *sb = kiln_layer_subtract(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ mx, mn }, .n_inputs = 2 });
    kiln_layer *av = kiln_layer_average(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ sb, mx, mn }, .n_inputs = 3 });
    kiln_layer *se2 = kiln_layer_activation(m, &(kiln_activation_opts){ .input = av, .activation = KILN_SELU });
    kiln_layer *gm = kiln_layer_global_max_pool2d(m, &(kiln_layer_opts){ .input = se2 });
    kiln_layer *d1 = kiln_layer_dense(m, &(kiln_dense_opts){ .input = gm, .units = 12, .activation = KILN_MISH });
    kiln_layer *d2 = kiln_layer_dense(m, &(kiln_dense_opts){ .input = d1, .units = 12, .activation = KILN_SOFTSIGN });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = d2, .units = 10 });
    kiln_model_functional(m, &x, 1, &out, 1);
    return m;
}

/* Issue 29's 1-D layers, Conv2DTranspose, SpatialDropout2D and bilinear UpSampling2D, on the same
 * 12x12x3 images: the image upsampled and flattened into a 1-D sequence. */
static inline kiln_model *layers1d_model(void) {
    kiln_model *m = kiln_model_new("layers1d");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(12, 12, 3));
    kiln_layer *t = kiln_layer_conv2d_transpose(m, &(kiln_conv2d_opts){ .input = x, .filters = 4, .kernel = 3, .strides = 2, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer *sd = kiln_layer_spatial_dropout2d(m, &(kiln_dropout_opts){ .input = t, .rate = 0.2 });
    kiln_layer *c = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = sd, .filters = 4, .kernel = 3, .strides = 4 });
    kiln_layer *up = kiln_layer_upsampling2d(m, &(kiln_upsampling2d_opts){ .input = c, .size_h = 2, .size_w = 3, .bilinear = true });
    kiln_layer *t2 = kiln_layer_conv2d_transpose(m, &(kiln_conv2d_opts){ .input = up, .filters = 3, .kernel_h = 2, .kernel_w = 3, .stride_h = 1, .stride_w = 2 });
    kiln_layer *r = kiln_layer_reshape(m, &(kiln_reshape_opts){ .input = t2, .shape = KILN_SHAPE(-1, 3) });
    kiln_layer *c1 = kiln_layer_conv1d(m, &(kiln_conv1d_opts){ .input = r, .filters = 6, .kernel = 3, .causal = true, .dilation = 2, .activation = KILN_TANH });
    kiln_layer *mp = kiln_layer_max_pool1d(m, &(kiln_pool1d_opts){ .input = c1, .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer *ap = kiln_layer_avg_pool1d(m, &(kiln_pool1d_opts){ .input = mp, .size = 2, .padding = KILN_SAME });
    kiln_layer *u1 = kiln_layer_upsampling1d(m, &(kiln_upsampling1d_opts){ .input = ap, .size = 3 });
    kiln_layer *c2 = kiln_layer_conv1d(m, &(kiln_conv1d_opts){ .input = u1, .filters = 6, .kernel = 2, .strides = 2, .padding = KILN_SAME, .groups = 2, .activation = KILN_SOFTMAX });
    kiln_layer *g1 = kiln_layer_global_max_pool1d(m, &(kiln_layer_opts){ .input = c2 });
    kiln_layer *g2 = kiln_layer_global_avg_pool1d(m, &(kiln_layer_opts){ .input = c1 });
    kiln_layer *cat = kiln_layer_concatenate(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ g1, g2 }, .n_inputs = 2 });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = cat, .units = 10 });
    kiln_model_functional(m, &x, 1, &out, 1);
    return m;
}

#endif
