/* The typed public layer builders (include/kiln/nn.h): each maps its options struct, with its
 * "0 = default" fields, onto the type's schema defaults and adds the layer through the table.
 * The top of the layers. */
#include <math.h>
#include "nn/nn_layers.h"

kiln_layer *kiln_input(kiln_model *m, kiln_shape shape) {
    if (!m) { kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_input: NULL model"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_INPUT);
    c.shape = shape;
    return nn_layer_add(m, NN_INPUT, &c, NULL, 0);
}

kiln_layer *kiln_layer_dense(kiln_model *m, const kiln_dense_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "dense: options are required (.units)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_DENSE);
    c.name = o->name;
    c.units = o->units;
    c.activation = o->activation;
    c.use_bias = !o->no_bias;
    if (o->kernel_initializer) c.kernel_init = *o->kernel_initializer;
    if (o->bias_initializer) c.bias_init = *o->bias_initializer;
    c.l2 = o->l2;
    c.flat_only = true;
    return nn_layer_add(m, NN_DENSE, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_flatten(kiln_model *m, const kiln_layer_opts *o) {
    nn_layer_cfg c = nn_layer_defaults(NN_FLATTEN);
    c.name = o ? o->name : NULL;
    kiln_layer *in = o ? o->input : NULL;
    return nn_layer_add(m, NN_FLATTEN, &c, &in, in ? 1 : 0);
}

kiln_layer *kiln_layer_reshape(kiln_model *m, const kiln_reshape_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "reshape: options are required (.shape)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_RESHAPE);
    c.name = o->name;
    c.shape = o->shape;
    return nn_layer_add(m, NN_RESHAPE, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_dropout(kiln_model *m, const kiln_dropout_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "dropout: options are required (.rate)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_DROPOUT);
    c.name = o->name;
    c.rate = o->rate;
    c.seed = o->seed;
    return nn_layer_add(m, NN_DROPOUT, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_batch_norm(kiln_model *m, const kiln_batch_norm_opts *o) {
    kiln_batch_norm_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(NN_BN);
    c.name = o->name;
    if (o->momentum) c.momentum = o->momentum;
    if (o->epsilon) c.epsilon = o->epsilon;
    c.center = !o->no_center;
    c.scale_on = !o->no_scale;
    return nn_layer_add(m, NN_BN, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_activation(kiln_model *m, const kiln_activation_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "activation: options are required (.activation)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_ACTIVATION);
    c.name = o->name;
    c.activation = o->activation;
    return nn_layer_add(m, NN_ACTIVATION, &c, &o->input, o->input ? 1 : 0);
}

static kiln_layer *conv_typed(kiln_model *m, const kiln_conv2d_opts *o, nn_kind kind) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: options are required (.filters, .kernel)", nn_layer_def_of(kind)->base); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(kind);
    c.name = o->name;
    c.filters = o->filters;
    c.kernel[0] = o->kernel_h ? o->kernel_h : o->kernel;
    c.kernel[1] = o->kernel_w ? o->kernel_w : o->kernel;
    if (o->strides) c.strides[0] = c.strides[1] = o->strides;
    if (o->stride_h) c.strides[0] = o->stride_h;
    if (o->stride_w) c.strides[1] = o->stride_w;
    if (o->dilation) c.dilation[0] = c.dilation[1] = o->dilation;
    if (o->groups) c.groups = o->groups;
    if (o->depth_multiplier) c.depth_multiplier = o->depth_multiplier;
    c.padding = o->padding;
    c.activation = o->activation;
    c.use_bias = !o->no_bias;
    if (o->kernel_initializer) c.kernel_init = c.pointwise_init = *o->kernel_initializer;   /* SeparableConv2D: both kernels */
    if (o->bias_initializer) c.bias_init = *o->bias_initializer;
    c.l2 = c.pointwise_l2 = o->l2;
    return nn_layer_add(m, kind, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_conv2d(kiln_model *m, const kiln_conv2d_opts *o) { return conv_typed(m, o, NN_CONV2D); }
kiln_layer *kiln_layer_depthwise_conv2d(kiln_model *m, const kiln_conv2d_opts *o) { return conv_typed(m, o, NN_DWCONV2D); }
kiln_layer *kiln_layer_separable_conv2d(kiln_model *m, const kiln_conv2d_opts *o) {
    if (o && o->groups > 1) { nn_fail(m, KILN_INVALID_ARGUMENT, "separable_conv2d: .groups does not apply (its depthwise step has one group per channel)"); return NULL; }
    return conv_typed(m, o, NN_SEPCONV2D);
}

static kiln_layer *pool_typed(kiln_model *m, const kiln_pool_opts *o, nn_kind kind) {
    kiln_pool_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(kind);
    c.name = o->name;
    if (o->size) c.pool[0] = c.pool[1] = o->size;
    if (o->size_h) c.pool[0] = o->size_h;
    if (o->size_w) c.pool[1] = o->size_w;
    if (o->strides) c.pool_strides[0] = c.pool_strides[1] = o->strides;
    if (o->stride_h) c.pool_strides[0] = o->stride_h;
    if (o->stride_w) c.pool_strides[1] = o->stride_w;
    c.padding = o->padding;
    return nn_layer_add(m, kind, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_max_pool2d(kiln_model *m, const kiln_pool_opts *o) { return pool_typed(m, o, NN_MAXPOOL); }
kiln_layer *kiln_layer_avg_pool2d(kiln_model *m, const kiln_pool_opts *o) { return pool_typed(m, o, NN_AVGPOOL); }

kiln_layer *kiln_layer_global_avg_pool2d(kiln_model *m, const kiln_layer_opts *o) {
    nn_layer_cfg c = nn_layer_defaults(NN_GAP);
    c.name = o ? o->name : NULL;
    kiln_layer *in = o ? o->input : NULL;
    return nn_layer_add(m, NN_GAP, &c, &in, in ? 1 : 0);
}

static kiln_layer *merge_typed(kiln_model *m, const kiln_merge_opts *o, nn_kind kind) {
    nn_layer_cfg c = nn_layer_defaults(kind);
    c.name = o ? o->name : NULL;
    if (o && o->axis) c.axis = o->axis;
    return nn_layer_add(m, kind, &c, o ? o->inputs : NULL, o && o->inputs ? o->n_inputs : 0);
}

kiln_layer *kiln_layer_concatenate(kiln_model *m, const kiln_merge_opts *o) { return merge_typed(m, o, NN_CONCAT); }
kiln_layer *kiln_layer_add(kiln_model *m, const kiln_merge_opts *o) { return merge_typed(m, o, NN_ADD); }

kiln_layer *kiln_layer_multiply(kiln_model *m, const kiln_merge_opts *o) { return merge_typed(m, o, NN_MULTIPLY); }
kiln_layer *kiln_layer_subtract(kiln_model *m, const kiln_merge_opts *o) { return merge_typed(m, o, NN_SUBTRACT); }
kiln_layer *kiln_layer_average(kiln_model *m, const kiln_merge_opts *o) { return merge_typed(m, o, NN_AVERAGE); }
kiln_layer *kiln_layer_maximum(kiln_model *m, const kiln_merge_opts *o) { return merge_typed(m, o, NN_MAXIMUM); }
kiln_layer *kiln_layer_minimum(kiln_model *m, const kiln_merge_opts *o) { return merge_typed(m, o, NN_MINIMUM); }

static kiln_layer *pad_typed(kiln_model *m, const kiln_pad2d_opts *o, nn_kind kind) {
    kiln_pad2d_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(kind);
    c.name = o->name;
    c.pads[0] = o->top; c.pads[1] = o->bottom; c.pads[2] = o->left; c.pads[3] = o->right;
    if (c.pads[0] < 0 || c.pads[1] < 0 || c.pads[2] < 0 || c.pads[3] < 0) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: sizes must be >= 0", nn_layer_def_of(kind)->base); return NULL; }
    return nn_layer_add(m, kind, &c, &o->input, o->input ? 1 : 0);
}
kiln_layer *kiln_layer_zero_padding2d(kiln_model *m, const kiln_pad2d_opts *o) { return pad_typed(m, o, NN_ZEROPAD2D); }
kiln_layer *kiln_layer_cropping2d(kiln_model *m, const kiln_pad2d_opts *o) { return pad_typed(m, o, NN_CROPPING2D); }

kiln_layer *kiln_layer_upsampling2d(kiln_model *m, const kiln_upsampling2d_opts *o) {
    kiln_upsampling2d_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(NN_UPSAMPLE2D);
    c.name = o->name;
    if (o->size) c.size[0] = c.size[1] = o->size;
    if (o->size_h) c.size[0] = o->size_h;
    if (o->size_w) c.size[1] = o->size_w;
    if (c.size[0] < 1 || c.size[1] < 1) { nn_fail(m, KILN_INVALID_ARGUMENT, "up_sampling2d: sizes must be >= 1"); return NULL; }
    c.mode = o->bilinear ? 1 : 0;
    return nn_layer_add(m, NN_UPSAMPLE2D, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_rescaling(kiln_model *m, const kiln_rescaling_opts *o) {
    kiln_rescaling_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(NN_RESCALING);
    c.name = o->name;
    c.scale = o->scale ? o->scale : 1.0;
    c.offset = o->offset;
    return nn_layer_add(m, NN_RESCALING, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_global_max_pool2d(kiln_model *m, const kiln_layer_opts *o) {
    nn_layer_cfg c = nn_layer_defaults(NN_GMP);
    c.name = o ? o->name : NULL;
    kiln_layer *in = o ? o->input : NULL;
    return nn_layer_add(m, NN_GMP, &c, &in, in ? 1 : 0);
}

static kiln_layer *alpha_typed(kiln_model *m, const kiln_alpha_opts *o, nn_kind kind) {
    kiln_alpha_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(kind);
    c.name = o->name;
    if (o->alpha) c.alpha = o->alpha;
    return nn_layer_add(m, kind, &c, &o->input, o->input ? 1 : 0);
}
kiln_layer *kiln_layer_leaky_relu(kiln_model *m, const kiln_alpha_opts *o) { return alpha_typed(m, o, NN_LEAKY_RELU); }
kiln_layer *kiln_layer_elu(kiln_model *m, const kiln_alpha_opts *o) { return alpha_typed(m, o, NN_ELU); }

/* ---- recurrent ---- */
static kiln_layer *rnn_typed(kiln_model *m, nn_kind kind, const kiln_rnn_opts *o, int cell, int merge) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: options are required (.units)", nn_kind_type(kind)); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(kind);
    c.name = o->name;
    c.units = o->units;
    c.return_sequences = o->return_sequences;
    c.go_backwards = o->go_backwards;
    if (o->activation) c.activation = *o->activation;
    if (o->recurrent_activation) c.recurrent_activation = *o->recurrent_activation;
    c.use_bias = !o->no_bias;
    c.unit_forget_bias = !o->no_unit_forget_bias;
    c.reset_after = !o->no_reset_after;
    if (o->kernel_initializer) c.kernel_init = *o->kernel_initializer;
    if (o->recurrent_initializer) c.recurrent_init = *o->recurrent_initializer;
    if (o->bias_initializer) c.bias_init = *o->bias_initializer;
    c.rate = o->dropout;
    c.recurrent_rate = o->recurrent_dropout;
    c.seed = o->seed;
    c.cell = cell;
    c.merge_mode = merge;
    return nn_layer_add(m, kind, &c, &o->input, o->input ? 1 : 0);
}
kiln_layer *kiln_layer_simple_rnn(kiln_model *m, const kiln_rnn_opts *o) { return rnn_typed(m, NN_SIMPLE_RNN, o, KILN_RNN_SIMPLE, 0); }
kiln_layer *kiln_layer_lstm(kiln_model *m, const kiln_rnn_opts *o) { return rnn_typed(m, NN_LSTM, o, KILN_RNN_LSTM, 0); }
kiln_layer *kiln_layer_gru(kiln_model *m, const kiln_rnn_opts *o) { return rnn_typed(m, NN_GRU, o, KILN_RNN_GRU, 0); }
kiln_layer *kiln_layer_bidirectional(kiln_model *m, const kiln_bidirectional_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "Bidirectional: options are required (.layer, .rnn.units)"); return NULL; }
    if ((unsigned)o->layer > KILN_RNN_GRU || (unsigned)o->merge_mode > KILN_MERGE_AVE) {
        nn_fail(m, KILN_INVALID_ARGUMENT, "Bidirectional: unknown layer %d or merge_mode %d", (int)o->layer, (int)o->merge_mode);
        return NULL;
    }
    return rnn_typed(m, NN_BIDIRECTIONAL, &o->rnn, (int)o->layer, (int)o->merge_mode);
}

/* ---- transformers ---- */
kiln_layer *kiln_layer_embedding(kiln_model *m, const kiln_embedding_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "embedding: options are required (.input_dim, .output_dim)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_EMBEDDING);
    c.name = o->name;
    c.input_dim = o->input_dim;
    c.units = o->output_dim;
    if (o->embeddings_initializer) c.kernel_init = *o->embeddings_initializer;
    return nn_layer_add(m, NN_EMBEDDING, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_layer_norm(kiln_model *m, const kiln_layer_norm_opts *o) {
    kiln_layer_norm_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(NN_LAYER_NORM);
    c.name = o->name;
    if (o->epsilon) c.epsilon = o->epsilon;
    c.center = !o->no_center;
    c.scale_on = !o->no_scale;
    return nn_layer_add(m, NN_LAYER_NORM, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_multi_head_attention(kiln_model *m, const kiln_mha_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "multi_head_attention: options are required (.num_heads, .key_dim)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_MHA);
    c.name = o->name;
    c.num_heads = o->num_heads;
    c.key_dim = o->key_dim;
    c.causal = o->causal;
    c.rate = o->dropout;
    c.seed = o->seed;
    c.use_bias = !o->no_bias;
    if (o->kernel_initializer) c.kernel_init = *o->kernel_initializer;
    if (o->bias_initializer) c.bias_init = *o->bias_initializer;
    return nn_layer_add(m, NN_MHA, &c, o->inputs, o->n_inputs);
}

kiln_layer *kiln_layer_position_embedding(kiln_model *m, const kiln_position_embedding_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "position_embedding: options are required (.sequence_length)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_POS_EMBEDDING);
    c.name = o->name;
    c.input_dim = o->sequence_length;
    if (o->initializer) c.kernel_init = *o->initializer;
    return nn_layer_add(m, NN_POS_EMBEDDING, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_conv1d(kiln_model *m, const kiln_conv1d_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "conv1d: options are required (.filters, .kernel)"); return NULL; }
    if (o->causal && o->padding != KILN_VALID) { nn_fail(m, KILN_INVALID_ARGUMENT, "conv1d: .causal is a padding of its own; leave .padding KILN_VALID"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_CONV1D);
    c.name = o->name;
    c.filters = o->filters;
    c.kernel[0] = c.kernel[1] = o->kernel;
    if (o->strides) c.strides[0] = c.strides[1] = o->strides;
    if (o->dilation) c.dilation[0] = c.dilation[1] = o->dilation;
    if (o->groups) c.groups = o->groups;
    c.mode = o->causal ? NN_PAD1D_CAUSAL : o->padding == KILN_SAME ? NN_PAD1D_SAME : o->padding == KILN_VALID ? NN_PAD1D_VALID : -1;
    c.activation = o->activation;
    c.use_bias = !o->no_bias;
    if (o->kernel_initializer) c.kernel_init = *o->kernel_initializer;
    if (o->bias_initializer) c.bias_init = *o->bias_initializer;
    c.l2 = o->l2;
    return nn_layer_add(m, NN_CONV1D, &c, &o->input, o->input ? 1 : 0);
}

static kiln_layer *pool1d_typed(kiln_model *m, const kiln_pool1d_opts *o, nn_kind kind) {
    kiln_pool1d_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(kind);
    c.name = o->name;
    if (o->size) c.pool[0] = c.pool[1] = o->size;
    if (o->strides) c.pool_strides[0] = c.pool_strides[1] = o->strides;
    c.padding = o->padding;
    return nn_layer_add(m, kind, &c, &o->input, o->input ? 1 : 0);
}
kiln_layer *kiln_layer_max_pool1d(kiln_model *m, const kiln_pool1d_opts *o) { return pool1d_typed(m, o, NN_MAXPOOL1D); }
kiln_layer *kiln_layer_avg_pool1d(kiln_model *m, const kiln_pool1d_opts *o) { return pool1d_typed(m, o, NN_AVGPOOL1D); }

static kiln_layer *plain_typed(kiln_model *m, const kiln_layer_opts *o, nn_kind kind) {
    nn_layer_cfg c = nn_layer_defaults(kind);
    c.name = o ? o->name : NULL;
    kiln_layer *in = o ? o->input : NULL;
    return nn_layer_add(m, kind, &c, &in, in ? 1 : 0);
}
kiln_layer *kiln_layer_global_avg_pool1d(kiln_model *m, const kiln_layer_opts *o) { return plain_typed(m, o, NN_GAP1D); }
kiln_layer *kiln_layer_global_max_pool1d(kiln_model *m, const kiln_layer_opts *o) { return plain_typed(m, o, NN_GMP1D); }

kiln_layer *kiln_layer_upsampling1d(kiln_model *m, const kiln_upsampling1d_opts *o) {
    kiln_upsampling1d_opts d = { 0 };
    if (!o) o = &d;
    nn_layer_cfg c = nn_layer_defaults(NN_UPSAMPLE1D);
    c.name = o->name;
    if (o->size) c.size[0] = o->size;
    return nn_layer_add(m, NN_UPSAMPLE1D, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_conv2d_transpose(kiln_model *m, const kiln_conv2d_opts *o) {
    if (o && (o->groups > 1 || o->depth_multiplier > 1)) { nn_fail(m, KILN_INVALID_ARGUMENT, "conv2d_transpose: .groups and .depth_multiplier do not apply"); return NULL; }
    return conv_typed(m, o, NN_CONV2D_TRANSPOSE);
}

kiln_layer *kiln_layer_spatial_dropout2d(kiln_model *m, const kiln_dropout_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "spatial_dropout2d: options are required (.rate)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_SPATIAL_DROPOUT2D);
    c.name = o->name;
    c.rate = o->rate;
    c.seed = o->seed;
    return nn_layer_add(m, NN_SPATIAL_DROPOUT2D, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_gaussian_noise(kiln_model *m, const kiln_gaussian_noise_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "gaussian_noise: options are required (.stddev)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_GAUSSIAN_NOISE);
    c.name = o->name;
    c.rate = o->stddev;
    c.seed = o->seed;
    return nn_layer_add(m, NN_GAUSSIAN_NOISE, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_gaussian_dropout(kiln_model *m, const kiln_dropout_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "gaussian_dropout: options are required (.rate)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_GAUSSIAN_DROPOUT);
    c.name = o->name;
    c.rate = o->rate;
    c.seed = o->seed;
    return nn_layer_add(m, NN_GAUSSIAN_DROPOUT, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_gpt_block(kiln_model *m, const kiln_gpt_block_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "gpt_block: options are required (.num_heads)"); return NULL; }
    nn_layer_cfg c = nn_layer_defaults(NN_GPT_BLOCK);
    c.name = o->name;
    c.num_heads = o->num_heads;
    c.rate = o->dropout;
    if (o->epsilon) c.epsilon = o->epsilon;
    c.approximate = o->gelu_approximate;
    double sd = o->init_stddev > 0 ? o->init_stddev : 0.02;
    c.kernel_init = (kiln_init){ .kind = KILN_INIT_NORMAL, .a = 0, .b = sd };
    c.pointwise_init = (kiln_init){ .kind = KILN_INIT_NORMAL, .a = 0, .b = o->residual_scale_layers > 0 ? sd / sqrt(2.0 * o->residual_scale_layers) : sd };
    return nn_layer_add(m, NN_GPT_BLOCK, &c, &o->input, o->input ? 1 : 0);
}

kiln_layer *kiln_layer_tied_output(kiln_model *m, const char *name, kiln_layer *hidden, kiln_layer *embedding) {
    nn_layer_cfg c = nn_layer_defaults(NN_TIED_OUTPUT);
    c.name = name;
    return nn_layer_add(m, NN_TIED_OUTPUT, &c, (kiln_layer *[]){ hidden, embedding }, 2);
}
