/* Kiln Keras-style models: sequential and functional models, layers, compile / fit / evaluate /
 * predict, learning-rate schedules, callbacks, checkpoints.
 *
 *   kiln_model *m = kiln_sequential("fashion_cnn", KILN_SHAPE(28, 28, 1));
 *   kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 32, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
 *   kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
 *   kiln_layer_flatten(m, NULL);
 *   kiln_layer_dense(m, &(kiln_dense_opts){ .units = 10 });
 *   if (kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-3),
 *           .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, .from_logits = true,
 *           .metrics = KILN_METRIC_ACCURACY }) != KILN_OK ||
 *       kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 5, .batch_size = 64, .validation = test, .verbose = 1 }) != KILN_OK)
 *       fprintf(stderr, "kiln: %s\n", kiln_last_error());
 *   // or from an input pipeline (include/kiln/pipeline.h), e.g. augmented CIFAR-10 prepared ahead:
 *   //   kiln_data *d; kiln_data_open("cifar10:/data/cifar", true, &d);
 *   //   d = kiln_data_prefetch(kiln_data_batch(kiln_data_augment(kiln_data_shuffle(d, 50000, 1),
 *   //           &(kiln_augment_opts){ .crop_pad = 4, .flip = true }), 128, true), 2, 1);
 *   //   kiln_fit_data(m, d, &(kiln_fit_opts){ .epochs = 10, .validation_data = test_pipeline });
 *   kiln_model_free(m);
 *
 * Errors stick to the model: layer builders return NULL after a failure and every later call
 * returns the first error, so a whole model can be built and checked once with kiln_model_status().
 * Shapes given to layers exclude the batch dimension (like Keras' input_shape). Image layout NHWC.
 *
 * Variables (and checkpoint tensor names) are "<layer>/kernel", "<layer>/bias",
 * "<layer>/depthwise_kernel", "<layer>/gamma", "<layer>/beta", "<layer>/moving_mean",
 * "<layer>/moving_variance"; layer names follow Keras (conv2d, conv2d_1, dense, dense_1, ...).
 * Dense kernels are [in, out]; conv kernels HWIO [kh, kw, in/groups, out]. */
#ifndef KILN_NN_H
#define KILN_NN_H
#include <stdio.h>
#include "graph.h"
#include "data.h"
#include "pipeline.h"
#include "io.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_model kiln_model;
/* A layer's output, used to wire functional models. Owned by its model. */
typedef struct kiln_layer kiln_layer;

typedef enum kiln_activation {
    KILN_LINEAR = 0, KILN_RELU, KILN_SIGMOID, KILN_TANH, KILN_SOFTMAX, KILN_GELU, KILN_ELU,
    KILN_LEAKY_RELU, KILN_SOFTPLUS,
    /* Keras 3's others (appended): silu (alias swish), relu6, hard_sigmoid (relu6(x + 3) / 6),
     * hard_silu (alias hard_swish), selu, softsign, mish, exponential */
    KILN_SILU, KILN_RELU6, KILN_HARD_SIGMOID, KILN_HARD_SILU, KILN_SELU, KILN_SOFTSIGN, KILN_MISH, KILN_EXPONENTIAL,
    KILN_ACTIVATION_COUNT
} kiln_activation;

/* ---- models ---- */
/* Sequential model whose input has `input_shape` (batch excluded), e.g. KILN_SHAPE(28, 28, 1).
 * Layers added with kiln_layer_*(m, ...) and no .input are stacked in order. */
kiln_model *kiln_sequential(const char *name, kiln_shape input_shape);
/* Empty functional model: add kiln_input(), wire layers through their .input / .inputs, then
 * call kiln_model_functional(). */
kiln_model *kiln_model_new(const char *name);
kiln_layer *kiln_input(kiln_model *m, kiln_shape shape);
/* Declares the model's inputs and outputs (first cut: one of each). */
kiln_status kiln_model_functional(kiln_model *m, kiln_layer *const *inputs, int n_inputs,
                                  kiln_layer *const *outputs, int n_outputs);
void kiln_model_free(kiln_model *m);                      /* NULL is a no-op */
kiln_status kiln_model_status(const kiln_model *m);       /* first error, or KILN_OK */
const char *kiln_model_error(const kiln_model *m);        /* its message ("" if none) */
const char *kiln_model_name(const kiln_model *m);
/* Seed for initializers and dropout (default 0). Call before the first compile/fit. */
void kiln_model_set_seed(kiln_model *m, uint64_t seed);
/* The names of the model's output classes (copied; n 0 clears), saved in its checkpoints
 * (kiln.class_names) and restored by kiln_model_from_checkpoint. */
kiln_status kiln_model_set_class_names(kiln_model *m, const char *const *names, int n);
int kiln_model_class_count(const kiln_model *m);               /* 0: none set */
/* A note of the data the model is trained on (the CLI stores its data options, e.g.
 * "--data csv:/abs/iris.csv --label-column species"; copied, NULL or "" clears), saved in its
 * checkpoints (kiln.data) and restored by kiln_model_from_checkpoint, so that evaluation and
 * prediction can default to it. Kiln does not interpret it. */
kiln_status kiln_model_set_data_spec(kiln_model *m, const char *spec);
const char *kiln_model_data_spec(const kiln_model *m);         /* NULL: none set */
const char *kiln_model_class_name(const kiln_model *m, int i); /* NULL out of range */
/* Prints the layers, output shapes and parameter counts like Keras' model.summary(), and each
 * layer's and the model's FLOPs per example (kiln_model_flops). */
void kiln_model_summary(const kiln_model *m, FILE *f);
int64_t kiln_model_param_count(const kiln_model *m, bool trainable_only);
int kiln_model_layer_count(const kiln_model *m);
kiln_layer *kiln_model_layer(const kiln_model *m, int i);
kiln_layer *kiln_model_find_layer(const kiln_model *m, const char *name);
const char *kiln_layer_name(const kiln_layer *l);
const char *kiln_layer_type(const kiln_layer *l);         /* "Conv2D", "Dense", ... */
kiln_shape kiln_layer_output_shape(const kiln_layer *l);  /* batch excluded */
kiln_shape kiln_model_input_shape(const kiln_model *m);
kiln_shape kiln_model_output_shape(const kiln_model *m);
/* Ready-made models: "fashion_cnn", "mlp", "cifar_cnn" (for their default input shape only);
 * "lenet5" (LeCun et al. 1998), "resnet20", "resnet56" (the CIFAR ResNets of He et al. 2015),
 * "inception" (GoogLeNet-style, batch norm), "fast_cifar" (airbench-style conv-BN-GELU net), which
 * take any image shape they can be built for (src/nn/zoo_nets.c describes each). input_shape
 * rank 0 = the model's default (28x28x1 for fashion_cnn, mlp, lenet5; 32x32x3 for the others);
 * num_classes 0 = 10. NULL (kiln_last_error) for an unknown name or a shape the model cannot
 * take. */
kiln_model *kiln_model_preset(const char *name, kiln_shape input_shape, int num_classes);
/* "fashion_cnn, mlp, cifar_cnn, lenet5, resnet20, resnet56, inception, fast_cifar" */
const char *kiln_model_preset_names(void);
/* True when the ready-made model `name` takes examples of this shape (batch excluded). */
bool kiln_model_preset_takes(const char *name, kiln_shape input_shape);
/* Floating-point operations of one example's forward pass (inference form), as kiln_model_summary
 * prints them. A multiply-add counts as 2 FLOPs (Conv2D, DepthwiseConv2D, Dense); a bias add, an
 * activation (whatever its function) and each extra input of an Add count 1 per output element;
 * batch norm 2 per element (scale and shift); max / average pooling 1 per window element read;
 * GlobalAveragePooling2D 1 per input element; InputLayer, Flatten, Reshape, Dropout and
 * Concatenate none. */
int64_t kiln_layer_flops(const kiln_layer *l);
int64_t kiln_model_flops(const kiln_model *m);             /* the sum over its layers */

/* ---- layers: each returns the layer's output (NULL on error; the error sticks to m) ----
 * Common fields: .name (NULL = Keras-style automatic name), .input (NULL = the previous layer). */
typedef struct kiln_layer_opts { const char *name; kiln_layer *input; } kiln_layer_opts;

typedef struct kiln_dense_opts {
    const char *name; kiln_layer *input;
    int units;
    kiln_activation activation;        /* default linear */
    bool no_bias;                      /* Keras use_bias=False */
    const kiln_init *kernel_initializer;   /* NULL: glorot_uniform; seed 0: from the model seed */
    const kiln_init *bias_initializer;     /* NULL: zeros */
    double l2;                         /* kernel L2 penalty added to the loss: l2 * sum(w^2) */
} kiln_dense_opts;

typedef struct kiln_conv2d_opts {
    const char *name; kiln_layer *input;
    int filters;
    int kernel, kernel_h, kernel_w;    /* square `kernel`, or kernel_h x kernel_w */
    int strides, stride_h, stride_w;   /* 0 -> 1 */
    kiln_padding padding;              /* default KILN_VALID (as Keras) */
    int dilation;                      /* 0 -> 1 */
    int groups;                        /* 0 -> 1 */
    int depth_multiplier;              /* DepthwiseConv2D only; 0 -> 1 */
    kiln_activation activation;
    bool no_bias;
    const kiln_init *kernel_initializer, *bias_initializer;
    double l2;
} kiln_conv2d_opts;

typedef struct kiln_pool_opts {
    const char *name; kiln_layer *input;
    int size, size_h, size_w;          /* window (square `size`, or size_h x size_w); 0 -> 2 */
    int strides, stride_h, stride_w;   /* 0 -> the window size */
    kiln_padding padding;              /* KILN_VALID (default) or KILN_SAME */
} kiln_pool_opts;

typedef struct kiln_reshape_opts { const char *name; kiln_layer *input; kiln_shape shape; /* batch excluded; one dim may be -1 */ } kiln_reshape_opts;
typedef struct kiln_dropout_opts { const char *name; kiln_layer *input; double rate; uint64_t seed; /* 0: from the model seed */ } kiln_dropout_opts;
typedef struct kiln_batch_norm_opts {
    const char *name; kiln_layer *input;
    double momentum;                   /* 0 -> 0.99 */
    double epsilon;                    /* 0 -> 1e-3 */
    bool no_center, no_scale;          /* Keras center=False (no beta) / scale=False (no gamma) */
} kiln_batch_norm_opts;
typedef struct kiln_activation_opts { const char *name; kiln_layer *input; kiln_activation activation; } kiln_activation_opts;
typedef struct kiln_merge_opts {
    const char *name;
    kiln_layer *const *inputs; int n_inputs;   /* 2 or more */
    int axis;                          /* Concatenate: axis counting the batch dim (0 -> -1, the last) */
} kiln_merge_opts;

/* Transformers (Keras's Embedding, LayerNormalization, MultiHeadAttention; keras_hub's
 * PositionEmbedding). Embedding's input is token ids: Kiln's model input is f32, so ids are fed
 * as floats (exact below 2^24) and truncated to integers, as Keras casts them; an id outside
 * [0, input_dim) is a run-time error naming it. */
typedef struct kiln_embedding_opts {
    const char *name; kiln_layer *input;
    int input_dim;                     /* vocabulary size */
    int output_dim;
    const kiln_init *embeddings_initializer;   /* NULL: RandomUniform(-0.05, 0.05) */
} kiln_embedding_opts;
typedef struct kiln_layer_norm_opts {
    const char *name; kiln_layer *input;
    double epsilon;                    /* 0 -> 1e-3 (Keras) */
    bool no_center, no_scale;          /* Keras center=False (no beta) / scale=False (no gamma) */
} kiln_layer_norm_opts;
typedef struct kiln_mha_opts {
    const char *name;
    kiln_layer *const *inputs; int n_inputs;   /* query[, value[, key]]; 0: the previous layer (self-attention) */
    int num_heads, key_dim;
    bool causal;                       /* Keras's call argument use_causal_mask=True */
    bool no_bias;
    const kiln_init *kernel_initializer, *bias_initializer;   /* NULL: glorot_uniform, zeros */
    double dropout;                    /* on the attention probabilities in training, [0, 1) */
    uint64_t seed;                     /* of that dropout; 0: the model's */
} kiln_mha_opts;
typedef struct kiln_position_embedding_opts {
    const char *name; kiln_layer *input;
    int sequence_length;               /* >= the input's positions */
    const kiln_init *initializer;      /* NULL: glorot_uniform (keras_hub) */
} kiln_position_embedding_opts;
/* Recurrent layers over (None, T, features) (Keras's SimpleRNN, LSTM, GRU: gate order, weight
 * layout kernel [features, k units], recurrent_kernel [units, k units], bias [k units] or GRU's
 * [2, 3 units] with reset_after). Output: the last state (None, units), or with return_sequences
 * every step's (None, T, units), in processing order (go_backwards: reversed, as Keras). They
 * start from zero states and compute in f32 under any precision policy. */
typedef enum kiln_rnn_cell { KILN_RNN_SIMPLE = 0, KILN_RNN_LSTM, KILN_RNN_GRU } kiln_rnn_cell;
typedef struct kiln_rnn_opts {
    const char *name; kiln_layer *input;
    int units;
    bool return_sequences, go_backwards;
    const kiln_activation *activation, *recurrent_activation;   /* NULL: tanh, sigmoid */
    bool no_bias;
    bool no_unit_forget_bias;          /* LSTM: Keras unit_forget_bias=False */
    bool no_reset_after;               /* GRU: Keras reset_after=False (one bias, reset before the product) */
    const kiln_init *kernel_initializer, *recurrent_initializer, *bias_initializer;   /* NULL: glorot_uniform, orthogonal, zeros */
    /* Keras's dropout / recurrent_dropout in [0, 1): masks on the inputs / the state, drawn once per
     * sequence in training (per gate when recurrent_dropout is set, as Keras 3); seed 0: the model's */
    double dropout, recurrent_dropout;
    uint64_t seed;
} kiln_rnn_opts;
/* Bidirectional(layer): the layer forward and a copy backward over the same input, merged:
 * concatenated (features 2 units), summed, multiplied or averaged; with return_sequences the
 * backward sequence is put back in input order first. */
typedef enum kiln_merge_mode { KILN_MERGE_CONCAT = 0, KILN_MERGE_SUM, KILN_MERGE_MUL, KILN_MERGE_AVE } kiln_merge_mode;
typedef struct kiln_bidirectional_opts {
    kiln_rnn_cell layer;
    kiln_merge_mode merge_mode;
    kiln_rnn_opts rnn;                 /* the wrapped layer's options; name and input: the Bidirectional's */
} kiln_bidirectional_opts;
kiln_layer *kiln_layer_simple_rnn(kiln_model *m, const kiln_rnn_opts *o);
kiln_layer *kiln_layer_lstm(kiln_model *m, const kiln_rnn_opts *o);
kiln_layer *kiln_layer_gru(kiln_model *m, const kiln_rnn_opts *o);
kiln_layer *kiln_layer_bidirectional(kiln_model *m, const kiln_bidirectional_opts *o);

kiln_layer *kiln_layer_embedding(kiln_model *m, const kiln_embedding_opts *o);
kiln_layer *kiln_layer_layer_norm(kiln_model *m, const kiln_layer_norm_opts *o);             /* o may be NULL */
kiln_layer *kiln_layer_multi_head_attention(kiln_model *m, const kiln_mha_opts *o);
kiln_layer *kiln_layer_position_embedding(kiln_model *m, const kiln_position_embedding_opts *o);
/* A pre-LayerNorm GPT block on (None, T, D): x + Dropout(Attention(LN1(x))), then
 * + Dropout(MLP(LN2(x))) with MLP = Dense(4D) -> GELU -> Dense(D); causal attention with biases. */
typedef struct kiln_gpt_block_opts {
    const char *name; kiln_layer *input;
    int num_heads;                     /* D must divide by it */
    double dropout;                    /* on the attention probabilities and the attention and MLP outputs (nanoGPT's attn/resid dropout) */
    double epsilon;                    /* 0 -> 1e-5 */
    bool gelu_approximate;             /* tanh GELU (GPT-2's gelu_new); false: exact (nanoGPT's nn.GELU) */
    double init_stddev;                /* 0 -> 0.02 (the output projections: / sqrt(2 n_layer) if residual_scale_layers) */
    int residual_scale_layers;         /* n_layer for GPT-2's scaled init of the two output projections; 0: none */
} kiln_gpt_block_opts;
kiln_layer *kiln_layer_gpt_block(kiln_model *m, const kiln_gpt_block_opts *o);
/* Weight tying: logits (None, T, V) = hidden (None, T, D) times the transpose of the token
 * embedding matrix of `embedding` (an Embedding layer of the same model); no variable of its own. */
kiln_layer *kiln_layer_tied_output(kiln_model *m, const char *name, kiln_layer *hidden, kiln_layer *embedding);

kiln_layer *kiln_layer_dense(kiln_model *m, const kiln_dense_opts *o);
kiln_layer *kiln_layer_conv2d(kiln_model *m, const kiln_conv2d_opts *o);
kiln_layer *kiln_layer_depthwise_conv2d(kiln_model *m, const kiln_conv2d_opts *o);
kiln_layer *kiln_layer_max_pool2d(kiln_model *m, const kiln_pool_opts *o);
kiln_layer *kiln_layer_avg_pool2d(kiln_model *m, const kiln_pool_opts *o);
kiln_layer *kiln_layer_global_avg_pool2d(kiln_model *m, const kiln_layer_opts *o);   /* o may be NULL */
kiln_layer *kiln_layer_flatten(kiln_model *m, const kiln_layer_opts *o);             /* o may be NULL */
kiln_layer *kiln_layer_reshape(kiln_model *m, const kiln_reshape_opts *o);
kiln_layer *kiln_layer_dropout(kiln_model *m, const kiln_dropout_opts *o);
kiln_layer *kiln_layer_batch_norm(kiln_model *m, const kiln_batch_norm_opts *o);     /* o may be NULL */
kiln_layer *kiln_layer_activation(kiln_model *m, const kiln_activation_opts *o);
kiln_layer *kiln_layer_concatenate(kiln_model *m, const kiln_merge_opts *o);
kiln_layer *kiln_layer_add(kiln_model *m, const kiln_merge_opts *o);
/* Elementwise merges with Keras's broadcasting (dims equal or 1, aligned from the last axis, e.g.
 * (None, 1, 1, C) * (None, H, W, C)); Subtract takes exactly 2 inputs; Average is their mean. */
kiln_layer *kiln_layer_multiply(kiln_model *m, const kiln_merge_opts *o);
kiln_layer *kiln_layer_subtract(kiln_model *m, const kiln_merge_opts *o);
kiln_layer *kiln_layer_average(kiln_model *m, const kiln_merge_opts *o);
kiln_layer *kiln_layer_maximum(kiln_model *m, const kiln_merge_opts *o);
kiln_layer *kiln_layer_minimum(kiln_model *m, const kiln_merge_opts *o);
/* SeparableConv2D: a depthwise convolution (.kernel, .strides, .padding, .dilation,
 * .depth_multiplier; weight "<layer>/depthwise_kernel" [kh, kw, in, depth_multiplier]) then a 1x1
 * convolution to .filters ("<layer>/pointwise_kernel" [1, 1, in * depth_multiplier, filters]),
 * bias and activation; .kernel_initializer is both kernels'. */
kiln_layer *kiln_layer_separable_conv2d(kiln_model *m, const kiln_conv2d_opts *o);
/* ZeroPadding2D / Cropping2D: rows and columns added (zeros) or removed at each border. */
typedef struct kiln_pad2d_opts { const char *name; kiln_layer *input; int top, bottom, left, right; } kiln_pad2d_opts;
kiln_layer *kiln_layer_zero_padding2d(kiln_model *m, const kiln_pad2d_opts *o);
kiln_layer *kiln_layer_cropping2d(kiln_model *m, const kiln_pad2d_opts *o);
/* UpSampling2D (nearest): each pixel repeated size_h x size_w times (0 -> .size, 0 -> 2);
 * .bilinear: Keras's interpolation="bilinear" (tf.image.resize: half-pixel centres, edges clamped). */
typedef struct kiln_upsampling2d_opts { const char *name; kiln_layer *input; int size, size_h, size_w; bool bilinear; } kiln_upsampling2d_opts;
kiln_layer *kiln_layer_upsampling2d(kiln_model *m, const kiln_upsampling2d_opts *o);
/* Rescaling: x * scale + offset (scale 0 -> 1). */
typedef struct kiln_rescaling_opts { const char *name; kiln_layer *input; double scale, offset; } kiln_rescaling_opts;
kiln_layer *kiln_layer_rescaling(kiln_model *m, const kiln_rescaling_opts *o);
kiln_layer *kiln_layer_global_max_pool2d(kiln_model *m, const kiln_layer_opts *o);   /* o may be NULL */
/* LeakyReLU (.alpha: the negative slope, 0 -> Keras's 0.3) and ELU (.alpha, 0 -> 1). */
typedef struct kiln_alpha_opts { const char *name; kiln_layer *input; double alpha; } kiln_alpha_opts;
kiln_layer *kiln_layer_leaky_relu(kiln_model *m, const kiln_alpha_opts *o);   /* o may be NULL */
kiln_layer *kiln_layer_elu(kiln_model *m, const kiln_alpha_opts *o);          /* o may be NULL */

/* 1-D layers over [batch, steps, channels] (Keras's Conv1D, MaxPooling1D, AveragePooling1D,
 * GlobalAveragePooling1D, GlobalMaxPooling1D, UpSampling1D). Conv1D's weight "<layer>/kernel" is
 * [kernel, in / groups, filters]; .causal is Keras's padding="causal" (the input padded on the
 * left by dilation * (kernel - 1)), else .padding KILN_VALID (default) or KILN_SAME. */
typedef struct kiln_conv1d_opts {
    const char *name; kiln_layer *input;
    int filters, kernel;
    int strides, dilation, groups;     /* 0 -> 1 */
    kiln_padding padding;
    bool causal;
    kiln_activation activation;
    bool no_bias;
    const kiln_init *kernel_initializer, *bias_initializer;
    double l2;
} kiln_conv1d_opts;
typedef struct kiln_pool1d_opts {
    const char *name; kiln_layer *input;
    int size;                          /* 0 -> 2 */
    int strides;                       /* 0 -> size */
    kiln_padding padding;              /* KILN_VALID (default) or KILN_SAME */
} kiln_pool1d_opts;
typedef struct kiln_upsampling1d_opts { const char *name; kiln_layer *input; int size; /* 0 -> 2 */ } kiln_upsampling1d_opts;
kiln_layer *kiln_layer_conv1d(kiln_model *m, const kiln_conv1d_opts *o);
kiln_layer *kiln_layer_max_pool1d(kiln_model *m, const kiln_pool1d_opts *o);        /* o may be NULL */
kiln_layer *kiln_layer_avg_pool1d(kiln_model *m, const kiln_pool1d_opts *o);        /* o may be NULL */
kiln_layer *kiln_layer_global_avg_pool1d(kiln_model *m, const kiln_layer_opts *o);  /* o may be NULL */
kiln_layer *kiln_layer_global_max_pool1d(kiln_model *m, const kiln_layer_opts *o);  /* o may be NULL */
kiln_layer *kiln_layer_upsampling1d(kiln_model *m, const kiln_upsampling1d_opts *o); /* o may be NULL */
/* Conv2DTranspose: the transposed convolution (.filters, .kernel / .kernel_h x .kernel_w,
 * .strides, .padding; .dilation, .groups and .depth_multiplier must be 0 or 1); weight
 * "<layer>/kernel" [kh, kw, filters, in] (Keras's); output (in - 1) * stride + kernel with padding
 * valid (in * stride when kernel < stride), in * stride with same, as Keras with output_padding None. */
kiln_layer *kiln_layer_conv2d_transpose(kiln_model *m, const kiln_conv2d_opts *o);
/* SpatialDropout2D: whole channels of each example dropped in training (.rate, .seed), the identity in inference. */
kiln_layer *kiln_layer_spatial_dropout2d(kiln_model *m, const kiln_dropout_opts *o);
/* GaussianNoise: x + stddev * N(0, 1) in training (.stddev >= 0, .seed), the identity in inference. */
typedef struct kiln_gaussian_noise_opts { const char *name; kiln_layer *input; double stddev; uint64_t seed; /* 0: from the model seed */ } kiln_gaussian_noise_opts;
kiln_layer *kiln_layer_gaussian_noise(kiln_model *m, const kiln_gaussian_noise_opts *o);
/* GaussianDropout: x * (1 + sqrt(rate / (1 - rate)) * N(0, 1)) in training (.rate in [0, 1), .seed), the identity in inference. */
kiln_layer *kiln_layer_gaussian_dropout(kiln_model *m, const kiln_dropout_opts *o);

/* Any layer type by its Keras class name and Keras config, e.g. ("Conv2D", "{\"filters\": 32,
 * \"kernel_size\": 3, \"activation\": \"relu\"}"): what a front end builds on. The config
 * (a JSON object; NULL or "" = {}) is read with the rules of kiln_model_from_json: options Kiln
 * honours, keys accepted when their value does not change the math, anything else an error
 * naming the layer and the key. inputs: n_inputs layers of m (0: the previous layer of a
 * sequential model). The input shape is the model's (kiln_sequential, kiln_input), not a
 * layer's. Returns the layer's output; NULL on error (sticky on m). */
kiln_layer *kiln_layer_from_config(kiln_model *m, const char *class_name, const char *config_json, kiln_layer *const *inputs, int n_inputs);
/* The layer classes kiln_layer_from_config takes, as JSON: [{"class_name": "Dense", "base":
 * "dense" (automatic names), "min_inputs": 1, "max_inputs": 1, "options": [{"name": "units",
 * "type": "int", "required": true}, {"name": "activation", "type": "activation", "required":
 * false, "default": "linear"}, ...]}, ...], options in Keras's argument order. Types: int, int2
 * (an int or a pair), int1 (an int or a list of one: 1-D layers), float, bool, seed, shape,
 * activation, padding, initializer, string (one of a fixed set of names). *out: release
 * with free(). */
kiln_status kiln_layer_classes_json(char **out);

/* Renames a layer without weights (Keras's Input(name=...)); an error when the model has a layer
 * of that name already (the model's sticky error) or the layer has weights (name those when they
 * are made: the config's "name"). */
kiln_status kiln_layer_rename(kiln_layer *l, const char *name);
/* The base learning rate (the optimizer's, as lr schedules and scheduler callbacks leave it) of a
 * compiled model, and setting it between steps (Keras's optimizer.learning_rate = x,
 * ReduceLROnPlateau): the next step's update uses it. */
double kiln_model_learning_rate(const kiln_model *m);
kiln_status kiln_model_set_learning_rate(kiln_model *m, double lr);

/* ---- weights, as Keras' model.weights / get_weights / set_weights: per layer in order, each
 * layer's in the order it made them (Dense kernel, bias; BatchNormalization gamma, beta,
 * moving_mean, moving_variance). Names "<layer>/<weight>"; i out of range: NULL / rank 0. ---- */
int kiln_layer_weight_count(const kiln_layer *l);
const char *kiln_layer_weight_name(const kiln_layer *l, int i);
kiln_shape kiln_layer_weight_shape(const kiln_layer *l, int i);
bool kiln_layer_weight_trainable(const kiln_layer *l, int i);
/* Reads a weight into a new f32 tensor (caller frees) / assigns one (f32, the weight's shape).
 * The model's session is built on first use, weights initialised. KILN_NOT_FOUND for a name the
 * model does not have. */
kiln_status kiln_model_get_weight(kiln_model *m, const char *name, kiln_tensor **out);
kiln_status kiln_model_set_weight(kiln_model *m, const char *name, const kiln_tensor *value);

/* ---- optimizers (values; no allocation) ---- */
typedef enum kiln_optimizer_kind {
    KILN_OPT_SGD = 0, KILN_OPT_ADAM, KILN_OPT_ADAMW, KILN_OPT_RMSPROP, KILN_OPT_ADAGRAD, KILN_OPT_COUNT
} kiln_optimizer_kind;
typedef struct kiln_optimizer {
    kiln_optimizer_kind kind;
    double lr;
    double momentum; bool nesterov;            /* sgd; rmsprop momentum */
    double beta1, beta2, epsilon;              /* adam(w): 0 -> 0.9, 0.999, 1e-7 (Keras) */
    double weight_decay;                       /* adamw (0 -> 0.004, Keras); sgd: L2-style decay */
    double rho;                                /* rmsprop: 0 -> 0.9 */
    double initial_accumulator;                /* adagrad: 0 -> 0.1 */
    double clip_norm;                          /* > 0: clip gradients by global norm */
} kiln_optimizer;
kiln_optimizer kiln_sgd(double lr);
kiln_optimizer kiln_momentum(double lr, double momentum, bool nesterov);
kiln_optimizer kiln_adam(double lr);
kiln_optimizer kiln_adamw(double lr, double weight_decay);
kiln_optimizer kiln_rmsprop(double lr);
kiln_optimizer kiln_adagrad(double lr);
const char *kiln_optimizer_name(kiln_optimizer_kind k);   /* "sgd", "adam", ... */

/* ---- learning-rate schedules (epoch-fractional time t = epoch + step/steps_per_epoch) ---- */
typedef enum kiln_lr_kind {
    KILN_LR_CONSTANT = 0,
    KILN_LR_STEP,          /* lr * gamma^floor(epoch / step_epochs); gamma 0 -> 0.1, step_epochs 0 -> 1 */
    KILN_LR_EXPONENTIAL,   /* lr * gamma^t; gamma 0 -> 0.96 */
    KILN_LR_COSINE,        /* linear warm-up over warmup_epochs, then cosine from lr to min_lr */
    KILN_LR_ONE_CYCLE,     /* PyTorch OneCycleLR: lr/div_factor up to lr over pct_start of training
                              (cosine), then down to lr/(div_factor*final_div_factor) */
    KILN_LR_KIND_COUNT
} kiln_lr_kind;
typedef struct kiln_lr_schedule {
    kiln_lr_kind kind;
    double gamma; int step_epochs;
    double warmup_epochs, min_lr;
    double pct_start, div_factor, final_div_factor;   /* 0 -> 0.3, 25, 1e4 */
    double warmup_steps;   /* cosine: warm-up in optimizer steps (nanoGPT's warmup_iters); > 0 overrides warmup_epochs */
} kiln_lr_schedule;
/* Learning rate at time t (in epochs) of total_epochs, for the base rate. */
double kiln_lr_at(const kiln_lr_schedule *s, double base_lr, double t, double total_epochs);

/* ---- compile ---- */
typedef enum kiln_loss_kind {
    KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY = 0,   /* labels: class ids */
    KILN_LOSS_CATEGORICAL_CROSSENTROPY,              /* labels: class ids, one-hot encoded inside */
    KILN_LOSS_BINARY_CROSSENTROPY,                   /* one output unit; labels 0/1 */
    KILN_LOSS_MSE,                                   /* one unit: the label as value; else one-hot */
    /* Keras' formulas, each the mean over the batch of a per-example loss over the target: one
     * unit: the label as value; else the one-hot row of the class id (as mse). */
    KILN_LOSS_MAE,                                   /* mean |p - t| */
    KILN_LOSS_HUBER,                                 /* huber_delta (0 -> 1.0) */
    KILN_LOSS_LOG_COSH,                              /* mean log(cosh(p - t)) */
    KILN_LOSS_KL_DIVERGENCE,                         /* sum t log(t / p), both clipped to [1e-7, 1] */
    KILN_LOSS_POISSON,                               /* mean p - t log(p + 1e-7) */
    KILN_LOSS_HINGE,                                 /* mean max(1 - t p, 0); labels 0/1 become -1/1 */
    KILN_LOSS_SQUARED_HINGE,                         /* mean max(1 - t p, 0)^2; likewise */
    KILN_LOSS_CATEGORICAL_HINGE,                     /* max(max((1 - t) p) - sum t p + 1, 0) */
    KILN_LOSS_COSINE_SIMILARITY,                     /* -cos(t, p): Keras' sign, -1 is best */
    KILN_LOSS_COUNT
} kiln_loss_kind;
/* Keras' name of a loss ("sparse_categorical_crossentropy", "categorical_crossentropy",
 * "binary_crossentropy", "mse", "mae", "huber", "log_cosh", "kl_divergence", "poisson", "hinge",
 * "squared_hinge", "categorical_hinge", "cosine_similarity"); "?" out of range. */
const char *kiln_loss_name(kiln_loss_kind k);
/* The loss a Keras name gives: those, their long forms ("mean_squared_error",
 * "mean_absolute_error", "kld", "huber_loss", "logcosh") and the CamelCase class names
 * ("BinaryCrossentropy", "Huber", ...). INVALID_ARGUMENT naming the known ones otherwise. */
kiln_status kiln_loss_from_name(const char *name, kiln_loss_kind *out);
enum { KILN_METRIC_ACCURACY = 1u << 0, KILN_METRIC_TOP_K = 1u << 1 };
/* kiln_compile_opts.metric_list: up to KILN_MAX_METRICS entries "NAME[:K][@DISPLAY]", NAME one of
 * Keras' binary_accuracy (threshold 0.5), categorical_accuracy, sparse_categorical_accuracy,
 * top_k_categorical_accuracy / sparse_top_k_categorical_accuracy (:K, default 5), precision,
 * recall (threshold 0.5), auc (ROC, 200 thresholds, predictions clipped to [0, 1], trapezoids as
 * Keras' AUC()), mae
 * (mean_absolute_error), mse (mean_squared_error), rmse (root_mean_squared_error), and (not in
 * Keras) perplexity: exp of the mean cross-entropy over the class-id labels (over every token for a
 * language model's [T] labels; logits when compiled from_logits). Targets as the
 * losses': one unit: the label's value; else the class id's one-hot row. Counts over the epoch
 * (precision, recall, auc: confusion counts; not a mean of batch values). DISPLAY: the name in
 * logs, CSV, TensorBoard and progress (default NAME as given). */
#define KILN_MAX_METRICS 16
/* Checks a metric_list (as kiln_compile would): INVALID_ARGUMENT naming the first bad entry. */
kiln_status kiln_metric_list_check(const char *list);
/* The display name of compiled metric i of metric_list, NULL past the end. */
const char *kiln_model_metric_name(const kiln_model *m, int i);
/* Precision policy (Keras mixed_precision policies, PyTorch autocast). Variables (master weights)
 * and optimizer state stay f32 in every policy, so checkpoints hold f32 and load in any policy.
 *   FLOAT32         everything in f32 (the default)
 *   MIXED_BFLOAT16  convolutions and matmuls (Conv2D, Dense, ...) take bf16 operands (weights cast
 *                   once per step inside the step graph) and accumulate in f32; the activations
 *                   between layers (their outputs, bias adds, relus, max pooling, residual adds)
 *                   and the activation gradients are bf16, weight gradients f32; batch norm,
 *                   other activations, softmax, losses and metrics run in f32. On a CPU without
 *                   AVX512-BF16/AMX (kiln_cpu_has_bf16) Kiln says so once and trains in f32.
 *   MIXED_FLOAT16   products in f16 with f32 accumulation and an f32 output (activations stay
 *                   f32), with dynamic loss scaling (start 2^15; a step whose
 *                   gradients are not finite is skipped and the scale halved; doubled after 2000
 *                   good steps). On the CPU the f16 operands are widened to f32 for the products (exact, no
 *                   speed-up: no f16 arithmetic is assumed there). */
typedef enum kiln_precision {
    KILN_PRECISION_FLOAT32 = 0, KILN_PRECISION_MIXED_BFLOAT16, KILN_PRECISION_MIXED_FLOAT16, KILN_PRECISION_COUNT
} kiln_precision;
const char *kiln_precision_name(kiln_precision p);          /* "float32", "mixed_bfloat16", ... */
/* Parses float32 | mixed_bfloat16 | mixed_float16 (or f32, bf16, fp16); KILN_INVALID_ARGUMENT
 * naming the accepted values otherwise. */
kiln_status kiln_precision_parse(const char *s, kiln_precision *out);
/* The policy a compiled model trains with: the one asked for, or FLOAT32 where the device has no
 * kernels for it (said once on stderr when the model is compiled). */
kiln_precision kiln_model_precision(const kiln_model *m);

typedef struct kiln_compile_opts {
    kiln_optimizer optimizer;          /* default (zeros): sgd with lr 0.01 */
    kiln_lr_schedule schedule;         /* default: constant */
    kiln_loss_kind loss;
    bool from_logits;                  /* the model outputs logits (no softmax/sigmoid at the end) */
    unsigned metrics;                  /* KILN_METRIC_* bits */
    int top_k;                         /* 0 -> 5 */
    const char *device;                /* "auto" (default), "cpu", "ref", "cuda" */
    int num_threads;                   /* 0: cores available */
    bool log_device_placement;
    kiln_precision precision;          /* default FLOAT32; see kiln_precision above */
    /* Synchronised batch norm (TF's SyncBatchNormalization, PyTorch's SyncBatchNorm): in training,
     * BatchNormalization layers use the mean and variance of the global batch over the
     * data-parallel replicas (MPI ranks: kiln_fit_opts.dist), their per-channel sums all-reduced
     * in the forward pass and the matching terms in the backward pass. Default (false):
     * per-replica statistics, as TensorFlow's MirroredStrategy. One process alone: the same as off. */
    bool sync_batchnorm;
    double huber_delta;                /* KILN_LOSS_HUBER's delta (Keras' Huber(delta)); 0 -> 1.0 */
    /* More metrics, Keras' names, comma-separated (e.g. "precision,recall,auc,mae"): see
     * KILN_MAX_METRICS. Their values are in kiln_logs.metrics / val_metrics in this order. */
    const char *metric_list;
} kiln_compile_opts;
kiln_status kiln_compile(kiln_model *m, const kiln_compile_opts *o);

/* ---- training logs, history and callbacks ---- */
typedef struct kiln_logs {
    int epoch;                  /* 1-based */
    int64_t batch, steps;       /* batch (1-based) of steps in this epoch */
    double loss, accuracy, top_k;          /* running means over the epoch so far */
    double val_loss, val_accuracy, val_top_k;
    bool has_val;
    double lr, seconds, images_per_sec;
    int64_t skipped_steps;      /* mixed_float16: steps skipped for non-finite gradients, in all of training */
    double loss_scale;          /* mixed_float16: the loss scale at the end of the epoch (else 0) */
    int n_metrics;              /* compile's metric_list, in its order (kiln_model_metric_name) */
    double metrics[KILN_MAX_METRICS], val_metrics[KILN_MAX_METRICS];
} kiln_logs;
/* Return true to stop training (after the current batch / epoch). */
typedef bool (*kiln_callback_fn)(kiln_model *m, const kiln_logs *logs, void *user);
typedef double (*kiln_lr_fn)(int epoch /* 1-based */, double lr, void *user);
typedef enum kiln_callback_kind {
    KILN_CB_LAMBDA = 0,         /* on_batch_end / on_epoch_end user functions */
    KILN_CB_MODEL_CHECKPOINT,   /* path (Keras placeholders, see kiln_checkpoint_path); save_best_only
                                   by monitor; include_optimizer. The first file is checked to be
                                   writable before training starts */
    KILN_CB_EARLY_STOPPING,     /* monitor, patience, min_delta */
    KILN_CB_CSV_LOGGER,         /* path: epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds,images_per_sec;
                                   header written (and checked) before training; each epoch's
                                   row is written before that epoch's checkpoints; resuming
                                   (initial_epoch k > 0) appends after dropping rows of epochs > k */
    KILN_CB_LR_SCHEDULER,       /* schedule(epoch, lr) sets the base lr at each epoch start */
    KILN_CB_TENSORBOARD,        /* path: a log directory, as Keras' TensorBoard(log_dir): event files in
                                   path/train (epoch_loss, epoch_accuracy, epoch_top_k, epoch_learning_rate
                                   per epoch, step = the 0-based epoch; with update_freq N also
                                   batch_loss, batch_accuracy, batch_learning_rate every N batches, step =
                                   the batch counted over all epochs) and path/validation (epoch_loss,
                                   epoch_accuracy, epoch_top_k of the validation data). Accuracy / top_k
                                   only when compiled with those metrics. Directories are created and the
                                   files opened before training; each epoch's events are flushed at its end.
                                   View with: tensorboard --logdir path */
    KILN_CB_KIND_COUNT
} kiln_callback_kind;
typedef struct kiln_callback {
    kiln_callback_kind kind;
    kiln_callback_fn on_batch_end, on_epoch_end; void *user;
    const char *path;
    const char *monitor;        /* "val_loss" (default), "val_accuracy", "loss", "accuracy" */
    bool save_best_only, include_optimizer;
    int patience; double min_delta;
    kiln_lr_fn schedule;
    int update_freq;            /* TensorBoard: also write batch_* scalars every update_freq batches (0: per epoch only) */
} kiln_callback;
/* The file a ModelCheckpoint writes after an epoch: pattern with Keras-style placeholders filled
 * from logs: {epoch} (1-based; {epoch:02d} pads), {loss}, {accuracy}, {val_loss}, {val_accuracy}
 * (optional spec such as {val_loss:.4f}); {{ and }} are literal braces; everything else, '%'
 * included, is literal. *out: a new string, release with free(). INVALID_ARGUMENT for an unknown
 * placeholder, or a val_ one without validation data (logs->has_val false). */
kiln_status kiln_checkpoint_path(const char *pattern, const kiln_logs *logs, char **out);
kiln_callback kiln_callback_lambda(kiln_callback_fn on_batch_end, kiln_callback_fn on_epoch_end, void *user);
kiln_callback kiln_callback_model_checkpoint(const char *path, const char *monitor, bool save_best_only);
kiln_callback kiln_callback_early_stopping(const char *monitor, int patience, double min_delta);
kiln_callback kiln_callback_csv_logger(const char *path);
kiln_callback kiln_callback_lr_scheduler(kiln_lr_fn schedule, void *user);
/* TensorBoard event files under log_dir (see KILN_CB_TENSORBOARD); update_freq 0: per epoch only. */
kiln_callback kiln_callback_tensorboard(const char *log_dir, int update_freq);

/* ---- fit / evaluate / predict ---- */
/* kiln_fit_opts.verbose: Keras's verbose="auto" is the default (a zeroed struct); silence is -1 */
#define KILN_VERBOSE_AUTO 0
#define KILN_VERBOSE_SILENT (-1)
typedef struct kiln_fit_opts {
    int epochs;                        /* train epochs initial_epoch+1 .. epochs (0 -> 1) */
    int initial_epoch;                 /* e.g. kiln_model_epoch() after loading a checkpoint */
    int batch_size;                    /* 0 -> 32 */
    int steps_per_epoch;               /* > 0: at most this many batches per epoch (Keras'
                                          steps_per_epoch; each epoch still starts a fresh,
                                          reshuffled pass); 0: every full batch */
    bool no_shuffle;                   /* shuffling (seeded, per epoch) is on by default */
    uint64_t shuffle_seed;
    const kiln_dataset *validation;    /* evaluated at each epoch end (every example) */
    double validation_split;           /* else: hold out this fraction of the tail of train
                                          (kiln_fit only: a pipeline cannot be split afterwards) */
    kiln_data *validation_data;        /* or a validation pipeline (borrowed), evaluated at each
                                          epoch end over every example it yields, the partial last
                                          batch included; at most one of validation /
                                          validation_data */
    int verbose;                       /* KILN_VERBOSE_AUTO (0, the default, Keras's "auto"): a
                                          progress bar when stdout is a terminal, one line per
                                          epoch otherwise; 1 the same; 2 one line per epoch;
                                          KILN_VERBOSE_SILENT (-1) nothing */
    const kiln_callback *callbacks; int n_callbacks;
    /* The whole training set lives in the session's memory (on the GPU when the model runs
     * there) and each batch is gathered, and augmented, there: per step only the B example
     * indices travel. Same batches, in the same order, as the host path. kiln_fit: its dataset;
     * kiln_fit_data: a pipeline source [-> take/cache/normalize] [-> shuffle] [-> augment
     * crop/flip] -> batch [-> prefetch], whose examples are read into memory and whose crop/flip
     * come from its augment node (cutout and float labels are refused). */
    bool data_on_device;
    int device_crop_pad;               /* > 0: random crop after this much zero padding (CIFAR: 4) */
    bool device_flip;                  /* random left-right flips */
    uint64_t device_augment_seed;      /* the seed of the kiln_augment_opts whose crop/flip the
                                          device reproduces (kiln_augment_opts.seed): example i of
                                          epoch e draws from kiln_data_example_key(this, e, i) */
    struct kiln_dist *dist;            /* data parallelism across processes (include/kiln/dist.h):
                                          the batch size is the global batch, each of the N
                                          ranks trains on its 1/N of it, gradients all-reduced;
                                          NULL or one process: alone */
    const char *devices;               /* one process, several GPUs (TensorFlow's MirroredStrategy):
                                          "all", or a list such as "gpu:0,gpu:1" (the first must be
                                          gpu:0): one replica of the training step per GPU, each on
                                          its B / N rows of every batch, gradients averaged with
                                          NCCL, the same update on every replica; batch norm keeps
                                          per-replica statistics. NULL, "" or one GPU: as compiled */
    size_t bucket_bytes;               /* dist / devices: gradients are all-reduced in buckets of at
                                          most this many bytes, each started as soon as the backward
                                          pass has written it (overlapped with the rest of it;
                                          KILN_OVERLAP=0 in the environment: all after it). 0: the
                                          dist's (kiln_dist_set_bucket_bytes), else 4 MiB */
    /* Gradient accumulation: > 1 runs each batch of B examples as this many micro-batches of
     * B / accumulate_steps (B must be divisible by it) and sums their gradients, averaged, into
     * ONE optimizer update: the update of the whole batch's mean loss, with the activation memory
     * of the micro-batch (kiln_model_memory shows it). Loss and metrics are over the whole batch.
     * Batch normalization sees micro-batch statistics (and updates its moving averages once per
     * micro-batch), so a model with batch norm trains slightly differently. 0 or 1: none. */
    int accumulate_steps;
    /* Check every op's output for NaN/Inf as each step runs (TF's enable_check_numerics): the first
     * one stops training with KILN_NUMERIC_ERROR naming the epoch, step, op and its layer, before
     * that step's update. Slow; for finding where numbers go wrong. Without it a non-finite loss
     * stops training too, naming the epoch, step and the first layer whose weights went non-finite. */
    bool debug_numerics;
    /* Keras' sample_weight: one weight per example of the training data, by its number in the
     * source (kiln_fit's dataset, the rows of kiln_data_from_arrays), borrowed. The training loss
     * is sum(w_i * loss_i) / B over each batch of B (Keras' sum_over_batch_size), for every loss;
     * validation losses and all metrics are unweighted. Not with accumulate_steps > 1, devices,
     * dist or data_on_device (INVALID_ARGUMENT). NULL: every weight 1. */
    const float *sample_weight;
    int64_t n_sample_weight;           /* at least the source's example count */
} kiln_fit_opts;
/* Trains on full batches of batch_size (the partial last batch of an epoch is skipped; shuffling
 * changes which examples that is). Stops with KILN_NUMERIC_ERROR when the loss is NaN/Inf.
 * A special case of kiln_fit_data: train is read through the pipeline
 *   kiln_data_from_dataset(train, false) [-> kiln_data_take(N - held out)]
 *     [-> kiln_data_shuffle(N, o->shuffle_seed ^ model seed)] -> kiln_data_batch(batch_size, true)
 * on the calling thread (no prefetch, no allocation per step), so kiln_fit_data on that pipeline
 * gives the same losses. */
kiln_status kiln_fit(kiln_model *m, const kiln_dataset *train, const kiln_fit_opts *o);
/* Trains on the batches a pipeline yields (include/kiln/pipeline.h): x f32 [B, <model input
 * shape>], y i32 [B] class ids. The training batch size is the pipeline's batch size
 * (kiln_data_batch_size; o->batch_size is ignored) and the pipeline must be batched and finite.
 * Each epoch is one pass: kiln_data_iter_new(train, epoch) with the 1-based epoch number, so a
 * shuffle / augmentation in the pipeline changes every epoch (o->no_shuffle and o->shuffle_seed
 * are not used: put kiln_data_shuffle in the pipeline). A batch smaller than B (a kept remainder)
 * is skipped in training, exactly as kiln_fit skips the partial last batch. Validation:
 * o->validation_data (a pipeline) or o->validation (a dataset, evaluated in batches of B);
 * o->validation_split is not supported here (INVALID_ARGUMENT). images_per_sec counts training
 * images over the whole training loop, waiting for data included. train is borrowed; no iterator
 * on it may be alive. */
kiln_status kiln_fit_data(kiln_model *m, kiln_data *train, const kiln_fit_opts *o);
/* Per-epoch logs of the training so far (kept across fit calls; reset by kiln_model_reset_history). */
const kiln_logs *kiln_model_history(const kiln_model *m, int *n_epochs);
void kiln_model_reset_history(kiln_model *m);
int kiln_model_epoch(const kiln_model *m);     /* epochs completed (restored by kiln_model_load) */

typedef struct kiln_eval_opts { int batch_size; /* 0: the fit batch size, else 32 */ int verbose; } kiln_eval_opts;
typedef struct kiln_eval_result {
    double loss, accuracy, top_k; int64_t count; double seconds;
    int n_metrics; double metrics[KILN_MAX_METRICS];   /* compile's metric_list */
} kiln_eval_result;
/* Evaluates every example of d (the partial last batch included). o may be NULL. Goes through
 * kiln_evaluate_data on kiln_data_batch(kiln_data_from_dataset(d, false), batch_size, false). */
kiln_status kiln_evaluate(kiln_model *m, const kiln_dataset *d, const kiln_eval_opts *o, kiln_eval_result *out);
/* Evaluates every example a pipeline yields in one pass (epoch 0), whatever its batching: each
 * batch runs as it comes (a kept remainder included; an unbatched pipeline runs one example at a
 * time). o may be NULL; o->batch_size is ignored (the pipeline's batches are used). d is
 * borrowed. */
kiln_status kiln_evaluate_data(kiln_model *m, kiln_data *d, const kiln_eval_opts *o, kiln_eval_result *out);
/* Model outputs for every row of x ([N, ...input shape] f32) into *out (new [N, ...output shape]
 * f32 tensor, caller frees). Raw outputs: logits when the model ends without softmax. */
kiln_status kiln_predict(kiln_model *m, const kiln_tensor *x, const kiln_eval_opts *o, kiln_tensor **out);
/* One optimizer step on the batch x (f32 (B, input)) with labels y: i32 (B) class ids, or i32
 * (B, T) next-token ids for a model whose output is (T, vocabulary) logits (a GPT); *loss (may be
 * NULL) the batch's mean loss before the step. The compiled learning rate (no schedule). */
kiln_status kiln_train_on_batch(kiln_model *m, const kiln_tensor *x, const kiln_tensor *y, double *loss);

/* Generation from a GPT-shaped model (gpt_char, gpt2, a Hugging Face GPT-2 folder: Embedding,
 * PositionEmbedding, Add, GPTBlocks, LayerNormalization, TiedOutput), one sequence, on the CPU,
 * with a KV cache. *out (free()) gets the prompt followed by the new ids, *n_out their count.
 * Past the context (the position table), the last half is kept and decoded again. */
typedef struct kiln_generate_opts {
    int tokens;                /* new tokens */
    double temperature;        /* 0: greedy (argmax) */
    int top_k;                 /* sample among the k most likely (0: all) */
    uint64_t seed;
    kiln_tensor **logits;      /* optional: a new f32 [tokens, vocabulary], the logits each new id was drawn from */
} kiln_generate_opts;
kiln_status kiln_generate(kiln_model *m, const int32_t *prompt, int n_prompt, const kiln_generate_opts *o, int32_t **out, int *n_out);
/* The same from text: the n bytes of UTF-8 prompt encoded by t (NULL: the model's own tokenizer,
 * kiln_model_tokenizer; without one, a model of vocabulary 256 takes the prompt's bytes as ids and
 * any other is KILN_INVALID_ARGUMENT), generated, and the prompt and new ids decoded into *text
 * (kiln_malloc'd, NUL-terminated; release with kiln_text_free; text NULL: not decoded). *ids /
 * *n_ids (may be NULL, not both text and ids) get the ids as kiln_generate gives them (free()). An id the tokenizer cannot decode (a model whose
 * vocabulary is larger than the tokenizer's) is KILN_INVALID_ARGUMENT naming it. It is exactly
 * kiln_tokenizer_encode -> kiln_generate -> kiln_tokenizer_decode. */
struct kiln_tokenizer;
kiln_status kiln_generate_text(kiln_model *m, const struct kiln_tokenizer *t, const char *prompt, size_t n, const kiln_generate_opts *o,
                               char **text, int32_t **ids, int *n_ids);
/* The tokenizer a model carries (kiln_model_from_hf_gpt2 reads the folder's tokenizer.json when
 * there is one; kiln_model_save_hf_gpt2 writes it back; kiln_model_save stores it in the checkpoint,
 * metadata kiln.tokenizer, which kiln_model_from_checkpoint and kiln_model_load give back to a
 * model without one): borrowed, NULL when none. set: the model takes t (NULL drops the one it has). */
const struct kiln_tokenizer *kiln_model_tokenizer(const kiln_model *m);
kiln_status kiln_model_set_tokenizer(kiln_model *m, struct kiln_tokenizer *t);
/* Hugging Face GPT-2 folders (GPT2LMHeadModel.save_pretrained: config.json, model.safetensors,
 * optionally tokenizer.json): the model at the config's sizes, context n_positions, weights
 * loaded (f32; f16/bf16 files are converted), the tokenizer.json (when present) as the model's
 * tokenizer (one Kiln cannot read is a logged warning: the model loads without it); and written back (config.json and model.safetensors, the head tied; tokenizer.json
 * when the model has a tokenizer), readable by transformers' from_pretrained and
 * AutoTokenizer / tokenizers.Tokenizer.from_file. */
kiln_status kiln_model_from_hf_gpt2(const char *dir, kiln_model **out);
kiln_status kiln_model_save_hf_gpt2(kiln_model *m, const char *dir);
/* true when path is a directory holding config.json (a Hugging Face folder) */
bool kiln_is_hf_folder(const char *path);
/* Decodes one PNG or JPEG file to the model's input shape (kiln_image_load: converted to its
 * channels, resized to its height and width; *resized says so, may be NULL) and classifies it:
 * *out is a new f32 [classes] tensor of class probabilities (the softmax of the outputs when the
 * model was compiled with from_logits). The model must be compiled and end in [classes]. */
kiln_status kiln_predict_image(kiln_model *m, const char *path, kiln_tensor **out, bool *resized);

/* ---- checkpoints (safetensors) ----
 * Weights under their variable names; with include_optimizer also the optimizer state (slot
 * variables such as "dense/kernel/m", and "learning_rate") and the epoch, so training resumes.
 * Metadata: kiln.model, kiln.epoch, kiln.input_shape, kiln.architecture (kiln_model_to_json),
 * kiln.class_names (a JSON list of strings, when set), kiln.optimizer, kiln.optimizer_tensors,
 * kiln.step. */
kiln_status kiln_model_save(kiln_model *m, const char *path, bool include_optimizer);
/* Loads weights (and optimizer state / epoch when present). Names, dtypes and shapes must match
 * the model; the error names the first tensor that differs. kiln.epoch must be a whole number
 * 0..KILN_MAX_EPOCHS and kiln.step one in uint64 (else KILN_IO_ERROR: corrupt metadata). */
kiln_status kiln_model_load(kiln_model *m, const char *path);
#define KILN_MAX_EPOCHS 1000000
typedef struct kiln_load_opts {
    bool resume;        /* training continues from the file: a compiled model expects the file to
                           hold its own optimizer's state; a weights-only file or another
                           optimizer's state is a warning on stderr (that state starts fresh) */
    bool strict;        /* with resume: that case is KILN_INVALID_ARGUMENT instead, nothing loaded */
    const kiln_safetensors *file;   /* the file already loaded from path (borrowed; path then only
                                       names it in messages), so it is read once */
} kiln_load_opts;
/* kiln_model_load with options (o may be NULL: as kiln_model_load). */
kiln_status kiln_model_load_opts(kiln_model *m, const char *path, const kiln_load_opts *o);
/* The model a checkpoint was saved from, with its weights, epoch and class names (not compiled;
 * compile it to evaluate or train; predict needs no compile). Built from kiln.architecture; a file
 * without it (saved before kiln stored architectures) gives the built-in model kiln.model names
 * (kiln_model_preset), else KILN_NOT_FOUND saying what is missing. Corrupt architecture metadata
 * is KILN_INVALID_ARGUMENT naming the key and the layer / option at fault. */
kiln_status kiln_model_from_checkpoint(const char *path, kiln_model **out);
/* As kiln_model_from_checkpoint without loading anything but the class names: the model of an
 * already-read file f (path names it in messages); then compile and kiln_model_load_opts with
 * .file = f. */
kiln_status kiln_model_build_from_checkpoint(const kiln_safetensors *f, const char *path, kiln_model **out);

/* ---- architecture as Keras model JSON ----
 * kiln_model_to_json writes what Keras 3's model.to_json() writes, which
 * keras.models.model_from_json() reads back: {"module": "keras", "class_name": "Sequential" |
 * "Functional", "config": {"name", "trainable", "seed" (Kiln's model seed; Keras ignores it),
 * "layers": [{"module": "keras.layers", "class_name": "Conv2D", "config": {"name": "conv2d",
 * "trainable": true, "dtype": <float32 policy>, <each option of the layer type's schema,
 * resolved>}, "inbound_nodes": [{"args": [<__keras_tensor__ with keras_history>], "kwargs": {}}]
 * (functional only)}, ...], "input_layers", "output_layers"}}. Initializers are {"class_name":
 * "GlorotUniform", "config": {"seed": null}}, regularizers {"class_name": "L2", "config": {"l2":
 * 0.01}} or null. *out: a new string, release with free(). */
kiln_status kiln_model_to_json(const kiln_model *m, char **out);
/* Builds the model Keras model JSON describes, weights fresh: what Keras 3's or tf.keras 2's
 * model.to_json() writes (Sequential or Functional; the layer types and options docs/models.md's "Keras
 * model files" lists) and kiln_model_to_json's output. A layer class or option value Kiln cannot
 * honour is an error naming the layer and the key (KILN_UNSUPPORTED or KILN_INVALID_ARGUMENT). */
kiln_status kiln_model_from_json(const char *json, kiln_model **out);
/* kiln_model_from_json on the text of a file (model.json); errors name the file. */
kiln_status kiln_model_from_json_file(const char *path, kiln_model **out);
/* ---- Keras model files with their weights (needs HDF5: libhdf5-dev at build time) ----
 * kiln_model_from_keras_file: the model and weights of a Keras 3 .keras file (a zip of
 * config.json, model.weights.h5, metadata.json) or a legacy .h5 file (tf.keras 2 or Keras 3's
 * model.save("m.h5"): the model_config attribute and model_weights), BatchNormalization's moving
 * statistics included; not compiled (predict needs no compile). The architecture is read as
 * kiln_model_from_json reads Keras JSON. A .weights.h5 file (weights only) is refused, saying so.
 * kiln_model_load_keras_weights: the weights of a .weights.h5, .keras or .h5 file onto m, matched
 * by layer name (Keras 3 files: else by the key Keras gives each layer); a weighted layer missing
 * on either side, a different weight count or shape is an error naming the layer and weight.
 * kiln_model_save_keras: a .keras file (written atomically) that Keras 3's
 * keras.models.load_model reads: config.json is kiln_model_to_json's, the weights in Keras 3's
 * layout. Without HDF5 each says what to install (kiln_keras_files_available() is false). */
kiln_status kiln_model_from_keras_file(const char *path, kiln_model **out);
kiln_status kiln_model_load_keras_weights(kiln_model *m, const char *path);
kiln_status kiln_model_save_keras(kiln_model *m, const char *path);
bool kiln_keras_files_available(void);
/* True when the model's output passes through softmax or sigmoid (as Keras models usually end):
 * compile it with .from_logits = false. Kiln's built-in models output logits. */
bool kiln_model_outputs_probabilities(const kiln_model *m);

/* ---- memory of the training step (from its memory plan, not a formula) ---- */
typedef struct kiln_layer_memory {
    const char *name, *type;           /* borrowed from the model */
    int64_t params;
    size_t weight_bytes;               /* its variables (trainable or not) */
    size_t grad_bytes;                 /* the gradients of its weights the update reads */
    size_t optimizer_bytes;            /* its optimizer slots (momentum, Adam's m, v, t) */
    size_t activation_bytes;           /* its forward values the plan keeps in the step's arena (the
                                          arena reuses bytes, so the column sums to more than it) */
} kiln_layer_memory;
typedef struct kiln_memory_report {
    int batch, accumulate, micro_batch;   /* micro_batch = batch / accumulate: the planned step's */
    const char *backend;               /* where the step's kernels run: "cpu", "ref", "cuda" */
    const char *optimizer;             /* "adam", "sgd", ... */
    int64_t params;
    size_t weight_bytes;               /* the model's variables */
    size_t grad_bytes;                 /* the plan's gradient block (inside the arena) */
    size_t optimizer_bytes;            /* optimizer slots and the learning rate */
    size_t accumulator_bytes;          /* gradient accumulators (accumulate > 1) */
    size_t arena_bytes;                /* the step's arena: activations, their gradients, the weight
                                          gradients, kernel workspaces, reused by lifetime (with
                                          accumulation, the larger of its two plans) */
    size_t variable_bytes;             /* every variable the step reads, where it runs */
    size_t peak_bytes;                 /* arena_bytes + variable_bytes: what the step needs there */
    size_t device_free_bytes;          /* a GPU: what it can still allocate; 0 on the host */
    int n_layers;
    kiln_layer_memory *layers;         /* in forward order; owned by the report */
} kiln_memory_report;
/* Plans the model's training step for `batch` examples in `accumulate` micro-batches (0 or 1:
 * none; batch must be divisible by it) on its compiled device, without running it, and fills *out
 * from the plan. The model must be compiled (the optimizer's state is part of the figures); its
 * training step is (re)built for that batch. Release with kiln_memory_report_free. */
kiln_status kiln_model_memory(kiln_model *m, int batch, int accumulate, kiln_memory_report *out);
void kiln_memory_report_free(kiln_memory_report *r);
/* The table kiln summary --batch-size prints: per layer and total, then the peak (MiB and bytes). */
void kiln_memory_report_print(const kiln_memory_report *r, FILE *f);
/* The largest batch, a multiple of `multiple` (0 -> 8; with accumulation also of accumulate),
 * at most max_batch (0: no limit but 2^20), whose planned training step fits in limit_bytes there
 * (0: a GPU's free memory; required on the CPU): planned at one batch, searched over the plan's
 * batch-sized buffers rescaled (kiln_plan_arena_at), and the answer checked by planning it.
 * KILN_OUT_OF_MEMORY when not even `multiple` examples fit. *peak (may be NULL): its peak bytes. */
kiln_status kiln_model_max_batch(kiln_model *m, size_t limit_bytes, int accumulate, int multiple, int max_batch, int *batch, size_t *peak);

/* The graph and session behind a compiled/built model (NULL before the first fit/evaluate/
 * predict/load). Borrowed. */
kiln_graph *kiln_model_graph(const kiln_model *m);
kiln_session *kiln_model_session(const kiln_model *m);

#ifdef __cplusplus
}
#endif
#endif
