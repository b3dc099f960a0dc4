/* Kiln dataflow graph: build ops on symbolic tensors, differentiate, run in a session.
 *
 * Builders return a node, or NULL when they fail; the graph keeps the first error (sticky), so a
 * whole model can be built and checked once with kiln_graph_status(). A NULL input makes a builder
 * return NULL without a new error. Nodes are owned by their graph. */
#ifndef KILN_GRAPH_H
#define KILN_GRAPH_H
#include "tensor.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_graph kiln_graph;
typedef struct kiln_node kiln_node;
typedef struct kiln_session kiln_session;

kiln_graph *kiln_graph_new(void);
void kiln_graph_free(kiln_graph *g);                   /* frees every node; NULL is a no-op */
kiln_status kiln_graph_status(const kiln_graph *g);     /* first build error, or KILN_OK */
const char *kiln_graph_error(const kiln_graph *g);      /* its message ("" if none) */
void kiln_graph_clear_error(kiln_graph *g);
int kiln_graph_node_count(const kiln_graph *g);
kiln_node *kiln_graph_node(const kiln_graph *g, int i);
kiln_node *kiln_graph_find(const kiln_graph *g, const char *name);

/* Name scopes ("dense_1/") prefix the names of nodes built inside them. */
void kiln_graph_push_scope(kiln_graph *g, const char *scope);
void kiln_graph_pop_scope(kiln_graph *g);
/* Device scopes, like `with tf.device('/gpu:0')`: "/gpu:0", "/GPU:0", "/device:GPU:0", "gpu:0",
 * "cuda:0", "/cpu:0", "cpu". Returns KILN_INVALID_ARGUMENT for a string it cannot parse. */
kiln_status kiln_graph_push_device(kiln_graph *g, const char *device);
void kiln_graph_pop_device(kiln_graph *g);
/* Mixed precision, like torch.autocast: while set to KILN_BF16 or KILN_F16, kiln_matmul and
 * kiln_conv2d built on f32 operands cast them to that dtype and compute with f32 accumulation
 * and an f32 output (their gradients likewise; each gradient comes back f32). KILN_F32 turns it
 * off (the default); any other dtype is KILN_INVALID_ARGUMENT. Other ops are not affected. */
kiln_status kiln_graph_set_autocast(kiln_graph *g, kiln_dtype compute);
/* With autocast on, keep activations in the compute dtype too (Keras' mixed_bfloat16): MatMul and
 * Conv2D then output it, bias/relu/max-pool/add/reshape on it stay in it, and every other op
 * reads f32 (a Cast is inserted in front); weight gradients still come back f32. Half the
 * activation memory and no casts between layers. Turned off with the autocast (KILN_F32). */
kiln_status kiln_graph_set_autocast_activations(kiln_graph *g, bool on);
kiln_dtype kiln_graph_autocast(const kiln_graph *g);

/* Node accessors. */
const char *kiln_node_name(const kiln_node *n);
const char *kiln_node_op_name(const kiln_node *n);
kiln_dtype kiln_node_dtype(const kiln_node *n);
kiln_shape kiln_node_shape(const kiln_node *n);
int kiln_node_id(const kiln_node *n);
const char *kiln_node_device(const kiln_node *n);     /* requested device string or "" */

/* ---- initializers (all seeded) ---- */
typedef enum kiln_init_kind {
    KILN_INIT_ZEROS, KILN_INIT_ONES, KILN_INIT_CONSTANT, KILN_INIT_UNIFORM, KILN_INIT_NORMAL,
    KILN_INIT_TRUNCATED_NORMAL, KILN_INIT_GLOROT_UNIFORM, KILN_INIT_GLOROT_NORMAL,
    KILN_INIT_HE_UNIFORM, KILN_INIT_HE_NORMAL,
    KILN_INIT_VARIANCE_SCALING,   /* Keras's VarianceScaling: scale a, mode and distribution below */
    KILN_INIT_ORTHOGONAL,         /* Keras's Orthogonal (recurrent kernels): gain a (0 taken as 1) */
    KILN_INIT_COUNT
} kiln_init_kind;
typedef enum kiln_fan_mode { KILN_FAN_IN = 0, KILN_FAN_OUT, KILN_FAN_AVG } kiln_fan_mode;
typedef enum kiln_vs_distribution { KILN_VS_TRUNCATED_NORMAL = 0, KILN_VS_UNTRUNCATED_NORMAL, KILN_VS_UNIFORM } kiln_vs_distribution;
typedef struct kiln_init {
    kiln_init_kind kind;
    double a, b;        /* constant: a; uniform: [a, b); normal/truncated: mean a, stddev b; variance scaling: scale a */
    uint64_t seed;
    kiln_fan_mode mode;                 /* variance scaling: n = fan_in, fan_out or their mean */
    kiln_vs_distribution distribution;  /* variance scaling: truncated normal with stddev sqrt(a / n) / 0.8796,
                                           normal with sqrt(a / n), or uniform in +-sqrt(3 a / n) */
} kiln_init;
kiln_init kiln_init_zeros(void);
kiln_init kiln_init_ones(void);
kiln_init kiln_init_constant(double v);
kiln_init kiln_init_uniform(double lo, double hi, uint64_t seed);
kiln_init kiln_init_normal(double mean, double stddev, uint64_t seed);
kiln_init kiln_init_truncated_normal(double mean, double stddev, uint64_t seed);
kiln_init kiln_init_glorot_uniform(uint64_t seed);
kiln_init kiln_init_glorot_normal(uint64_t seed);
kiln_init kiln_init_he_uniform(uint64_t seed);
kiln_init kiln_init_he_normal(uint64_t seed);
/* Fills t by the initializer; fan-in/fan-out from the shape as Keras does (last dim = fan_out). */
kiln_status kiln_init_fill(kiln_init init, kiln_tensor *t);

/* ---- sources ---- */
kiln_node *kiln_placeholder(kiln_graph *g, const char *name, kiln_dtype dtype, kiln_shape shape);
kiln_node *kiln_variable(kiln_graph *g, const char *name, kiln_dtype dtype, kiln_shape shape,
                         kiln_init init);
kiln_node *kiln_variable_trainable(kiln_graph *g, const char *name, kiln_dtype dtype,
                                   kiln_shape shape, kiln_init init, bool trainable);
bool kiln_node_is_variable(const kiln_node *n);
bool kiln_node_is_trainable(const kiln_node *n);
/* Constant holding a copy of `value`. */
kiln_node *kiln_constant(kiln_graph *g, const kiln_tensor *value);
kiln_node *kiln_scalar(kiln_graph *g, kiln_dtype dtype, double v);

/* ---- math (numpy broadcasting for binary ops) ---- */
kiln_node *kiln_matmul(kiln_graph *g, kiln_node *a, kiln_node *b, bool trans_a, bool trans_b);
/* Batched: leading dims must match (or broadcast); last two are the matrix. */
kiln_node *kiln_batch_matmul(kiln_graph *g, kiln_node *a, kiln_node *b, bool trans_a, bool trans_b);
kiln_node *kiln_add(kiln_graph *g, kiln_node *a, kiln_node *b);
kiln_node *kiln_sub(kiln_graph *g, kiln_node *a, kiln_node *b);
kiln_node *kiln_mul(kiln_graph *g, kiln_node *a, kiln_node *b);
kiln_node *kiln_div(kiln_graph *g, kiln_node *a, kiln_node *b);
kiln_node *kiln_maximum(kiln_graph *g, kiln_node *a, kiln_node *b);
kiln_node *kiln_minimum(kiln_graph *g, kiln_node *a, kiln_node *b);
kiln_node *kiln_neg(kiln_graph *g, kiln_node *x);
kiln_node *kiln_exp(kiln_graph *g, kiln_node *x);
kiln_node *kiln_log(kiln_graph *g, kiln_node *x);
kiln_node *kiln_sqrt(kiln_graph *g, kiln_node *x);
kiln_node *kiln_rsqrt(kiln_graph *g, kiln_node *x);
kiln_node *kiln_square(kiln_graph *g, kiln_node *x);
kiln_node *kiln_pow(kiln_graph *g, kiln_node *x, double exponent);
kiln_node *kiln_abs(kiln_graph *g, kiln_node *x);
kiln_node *kiln_relu(kiln_graph *g, kiln_node *x);
kiln_node *kiln_leaky_relu(kiln_graph *g, kiln_node *x, double alpha);
kiln_node *kiln_elu(kiln_graph *g, kiln_node *x, double alpha);
kiln_node *kiln_gelu(kiln_graph *g, kiln_node *x);      /* exact (erf) form */
/* GPT-2's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
kiln_node *kiln_gelu_tanh(kiln_graph *g, kiln_node *x);
kiln_node *kiln_sigmoid(kiln_graph *g, kiln_node *x);
kiln_node *kiln_tanh(kiln_graph *g, kiln_node *x);
kiln_node *kiln_softplus(kiln_graph *g, kiln_node *x);
kiln_node *kiln_erf(kiln_graph *g, kiln_node *x);       /* the error function (ONNX Erf; GELU exported for opset 17) */
/* Keras 3's other activations: swish = silu = x * sigmoid(x); clipped_relu = min(max(x, 0), cap)
 * (relu6: cap 6); hard_sigmoid = relu6(x + 3) / 6; hard_swish = hard_silu = x * hard_sigmoid(x);
 * selu = 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * (e^x - 1)); softsign = x / (1 + |x|);
 * mish = x * tanh(softplus(x)). */
kiln_node *kiln_swish(kiln_graph *g, kiln_node *x);
kiln_node *kiln_clipped_relu(kiln_graph *g, kiln_node *x, double cap);
kiln_node *kiln_hard_sigmoid(kiln_graph *g, kiln_node *x);
kiln_node *kiln_hard_swish(kiln_graph *g, kiln_node *x);
kiln_node *kiln_selu(kiln_graph *g, kiln_node *x);
kiln_node *kiln_softsign(kiln_graph *g, kiln_node *x);
kiln_node *kiln_mish(kiln_graph *g, kiln_node *x);
kiln_node *kiln_softmax(kiln_graph *g, kiln_node *x, int axis);
kiln_node *kiln_log_softmax(kiln_graph *g, kiln_node *x, int axis);

/* ---- reductions: axes NULL/n_axes 0 = all axes; negative axes count from the end ---- */
kiln_node *kiln_reduce_sum(kiln_graph *g, kiln_node *x, const int *axes, int n_axes, bool keepdims);
kiln_node *kiln_reduce_mean(kiln_graph *g, kiln_node *x, const int *axes, int n_axes, bool keepdims);
kiln_node *kiln_reduce_max(kiln_graph *g, kiln_node *x, const int *axes, int n_axes, bool keepdims);

/* ---- shape ops ---- */
/* One dim may be -1 (inferred). */
kiln_node *kiln_reshape(kiln_graph *g, kiln_node *x, kiln_shape shape);
kiln_node *kiln_transpose(kiln_graph *g, kiln_node *x, const int *perm);
kiln_node *kiln_concat(kiln_graph *g, kiln_node *const *xs, int n, int axis);
/* Splits x along axis into n equal parts, written to out[0..n-1]. */
kiln_status kiln_split(kiln_graph *g, kiln_node *x, int n, int axis, kiln_node **out);
/* size[i] == -1 means "to the end". */
kiln_node *kiln_slice(kiln_graph *g, kiln_node *x, const int64_t *begin, const int64_t *size);
/* pads[2*i], pads[2*i+1]: before/after dim i, filled with value. */
kiln_node *kiln_pad(kiln_graph *g, kiln_node *x, const int64_t *pads, double value);
kiln_node *kiln_cast(kiln_graph *g, kiln_node *x, kiln_dtype to);
kiln_node *kiln_bias_add(kiln_graph *g, kiln_node *x, kiln_node *bias);   /* bias on last dim */

/* ---- convolution and pooling (NHWC; kernel HWIO = [kh, kw, in/groups, out]) ---- */
typedef enum kiln_padding { KILN_VALID = 0, KILN_SAME, KILN_EXPLICIT, KILN_PADDING_COUNT } kiln_padding;
typedef struct kiln_conv_params {
    int stride_h, stride_w;        /* 0 -> 1 */
    int dilation_h, dilation_w;    /* 0 -> 1 */
    kiln_padding padding;
    int pad_top, pad_bottom, pad_left, pad_right;   /* KILN_EXPLICIT only */
    int groups;                    /* 0 -> 1; groups == in_channels is depthwise */
} kiln_conv_params;
kiln_node *kiln_conv2d(kiln_graph *g, kiln_node *x, kiln_node *kernel, const kiln_conv_params *p);
/* The transposed convolution (kiln_conv2d's gradient with respect to its input, the op
 * Conv2DBackpropInput): x [N, H, W, Cin], kernel [kh, kw, Cout, Cin] (the forward conv's HWIO,
 * mapping Cout channels to Cin; Keras's Conv2DTranspose layout) -> [N, out_h, out_w, Cout], where
 * the forward conv p of an [out_h, out_w] image gives [H, W]; SAME pads are that conv's. One group. */
kiln_node *kiln_conv2d_transpose(kiln_graph *g, kiln_node *x, kiln_node *kernel, const kiln_conv_params *p, int64_t out_h, int64_t out_w);
typedef struct kiln_pool_params {
    int size_h, size_w;            /* window */
    int stride_h, stride_w;        /* 0 -> window size */
    kiln_padding padding;          /* VALID or SAME */
} kiln_pool_params;
kiln_node *kiln_max_pool2d(kiln_graph *g, kiln_node *x, const kiln_pool_params *p);
/* SAME avg pooling divides by the number of valid (unpadded) cells, as TensorFlow does. */
kiln_node *kiln_avg_pool2d(kiln_graph *g, kiln_node *x, const kiln_pool_params *p);
kiln_node *kiln_global_avg_pool2d(kiln_graph *g, kiln_node *x);     /* NHWC -> NC */

/* ---- normalisation and regularisation ---- */
/* x NHWC (or NC): normalises over all but the last dim. training: batch statistics, and
 * moving_mean/moving_var (variables) are updated with `momentum` (Keras: 0.99) each run;
 * inference: the moving statistics are used. */
kiln_node *kiln_batch_norm(kiln_graph *g, kiln_node *x, kiln_node *gamma, kiln_node *beta,
                           kiln_node *moving_mean, kiln_node *moving_var, double momentum,
                           double epsilon, bool training);
/* Synchronised batch norm, training (TF's SyncBatchNormalization): the batch mean and variance
 * are those of the global batch over the data-parallel replicas: per-channel sums (f64) of every
 * replica's rows are summed across them by a CrossReplicaSum op (MPI ranks: the session's
 * cross-replica hook; one device alone: its own batch), and the backward pass sums the matching
 * terms the same way. moving_mean/moving_var are updated with the global statistics (unbiased
 * variance) each run. */
kiln_node *kiln_sync_batch_norm(kiln_graph *g, kiln_node *x, kiln_node *gamma, kiln_node *beta, kiln_node *moving_mean,
                                kiln_node *moving_var, double momentum, double epsilon);
/* Inverted dropout: zeroes with probability `rate` and scales by 1/(1-rate) when training;
 * identity when not. The mask depends on (seed, session step, element). */
kiln_node *kiln_dropout(kiln_graph *g, kiln_node *x, double rate, uint64_t seed, bool training);
/* Standard-normal noise of x's shape and float dtype (x's values are not read). Like Dropout's
 * mask, draw i depends on (seed, session step, i): new noise every step, the same on every
 * backend. No gradient (a source of noise). */
kiln_node *kiln_random_normal_like(kiln_graph *g, kiln_node *x, uint64_t seed);

/* ---- transformers ---- */
/* Rows of table [V, D] (float) picked by ids [...] (i32/i64, e.g. [B, T]) -> [..., D]. An id
 * outside [0, V) is a run-time KILN_INVALID_ARGUMENT naming the id and V. The table's gradient
 * is the scatter-add of dy's rows by id (ids get none). */
kiln_node *kiln_embedding_lookup(kiln_graph *g, kiln_node *table, kiln_node *ids);
/* Layer normalisation over the last axis of x [..., D] (Keras LayerNormalization(axis=-1)):
 * (x - mean) / sqrt(var + epsilon) * gamma + beta, gamma and beta [D], the biased variance. */
kiln_node *kiln_layer_norm(kiln_graph *g, kiln_node *x, kiln_node *gamma, kiln_node *beta, double epsilon);
/* Scaled dot-product attention, fused: softmax(q k^T * scale [+ causal mask]) v for q [B, H, Tq,
 * Dh], k [B, H, Tk, Dh], v [B, H, Tk, Dh] -> [B, H, Tq, Dh]. scale <= 0: 1/sqrt(Dh). causal: query
 * i sees keys j <= i + Tk - Tq (Tk >= Tq; the usual lower triangle when Tq == Tk). The kernels
 * run an online softmax over key tiles, so no [Tq, Tk] matrix is stored: the op keeps O and each
 * row's log-sum-exp, and its gradient recomputes the probabilities tile by tile from them
 * (FlashAttention-2). Float dtypes; f32 on the cpu and cuda backends. */
kiln_node *kiln_attention(kiln_graph *g, kiln_node *q, kiln_node *k, kiln_node *v, bool causal, double scale);
/* kiln_attention with dropout on the probabilities (training): each softmax entry P[b,h,i,j] is
 * zeroed with probability `rate` in [0, 1) and the kept ones scaled by 1/(1 - rate), after the
 * softmax (its log-sum-exp is the undropped one). The keep of each entry comes from (seed, session
 * step, its index), regenerated in the backward pass: no [Tq, Tk] mask is stored. rate 0: exactly
 * kiln_attention. Call it only when training (it has no training flag of its own). */
kiln_node *kiln_attention_dropout(kiln_graph *g, kiln_node *q, kiln_node *k, kiln_node *v, bool causal, double scale,
                                  double rate, uint64_t seed);

/* A recurrent layer's recurrence over a whole sequence, fused (Keras's SimpleRNN, LSTM and GRU
 * cells): xp [B, T, k*U] the input projection of every step with the input bias (k = 1, 4 (gates
 * i, f, c, o) or 3 (z, r, h)), rec [U, k*U] the recurrent kernel, rec_bias [k*U] GRU reset_after's
 * recurrent bias or NULL. Output [B, T, U]: h after each step in processing order (go_backwards
 * reads time T-1-i at step i); the states start at zero. activation / recurrent_activation: a
 * kiln_activation among linear, relu, sigmoid, tanh, hard_sigmoid (kiln_rnn_activation_ok).
 * Float dtypes; f32 on the cpu backend. Its gradient runs back through time in one op. */
typedef struct kiln_rnn_params {
    int cell;                                 /* kiln_rnn_cell (include/kiln/nn.h) */
    int activation, recurrent_activation;     /* kiln_activation (include/kiln/nn.h) */
    bool reset_after, go_backwards;
} kiln_rnn_params;
kiln_node *kiln_rnn_sequence(kiln_graph *g, kiln_node *xp, kiln_node *rec, kiln_node *rec_bias, const kiln_rnn_params *p);
bool kiln_rnn_activation_ok(int activation);

/* ---- data on the device: batches gathered and augmented where the data set lives ---- */
/* Rows idx[i] of x along its first dim: x [N, ...], idx [B] i32 or i64 -> [B, ...]. An index
 * outside [0, N) is a run-time KILN_INVALID_ARGUMENT. Not differentiable (data, not weights). */
kiln_node *kiln_gather_rows(kiln_graph *g, kiln_node *x, kiln_node *idx);
/* CIFAR-style augmentation of an NHWC batch, per example: a random crop of the image padded with
 * `pad` zeros on each side (so a shift of -pad..pad in each direction) and, when flip, a
 * left-right flip with probability 1/2. keys: an I64 [N] node, example b's random key; the draw
 * depends on keys[b] only (not on the session step), so every backend gives the same batch. With
 * keys[b] = kiln_data_example_key(seed, epoch, example index) it draws exactly what
 * kiln_data_augment(.crop_pad = pad, .flip = flip, .seed = seed) draws for that example (crop,
 * then flip, zero fill). Identity when !training. Not differentiable. */
kiln_node *kiln_random_crop_flip(kiln_graph *g, kiln_node *x, kiln_node *keys, int pad, bool flip, bool training);

/* ---- losses (mean over the batch) and metrics ---- */
/* logits [N, C]; labels [N] i32/i64 class ids. Fused and numerically stable. Logits [..., C]
 * with labels [...] (e.g. [B, T, V] and [B, T]) are the mean over every position, through
 * aliasing reshapes: no [B, T, V] probability tensor is kept (the gradient recomputes them). */
kiln_node *kiln_sparse_softmax_cross_entropy(kiln_graph *g, kiln_node *logits, kiln_node *labels);
/* labels [N, C] probabilities. */
kiln_node *kiln_softmax_cross_entropy(kiln_graph *g, kiln_node *logits, kiln_node *labels);
kiln_node *kiln_sigmoid_cross_entropy(kiln_graph *g, kiln_node *logits, kiln_node *labels);
kiln_node *kiln_mean_squared_error(kiln_graph *g, kiln_node *pred, kiln_node *target);
kiln_node *kiln_argmax(kiln_graph *g, kiln_node *x, int axis);       /* -> i64 */
kiln_node *kiln_equal(kiln_graph *g, kiln_node *a, kiln_node *b);    /* -> bool */
/* Fraction of rows whose argmax equals the label ([N, C] logits, [N] labels) -> f32 scalar. */
kiln_node *kiln_accuracy(kiln_graph *g, kiln_node *logits, kiln_node *labels);

/* ---- autodiff ---- */
/* Adds to g the ops computing d(loss)/d(xs[i]) into grads_out[i] (like tf.gradients). loss must
 * be a scalar. grads_out[i] is a zeros constant when loss does not depend on xs[i]. */
kiln_status kiln_gradients(kiln_graph *g, kiln_node *loss, kiln_node *const *xs, int n,
                           kiln_node **grads_out);

/* ---- dynamic loss scaling (mixed_float16; Keras LossScaleOptimizer, PyTorch GradScaler) ----
 * kiln_all_finite: an f32 scalar, 1 when every element of xs[0..n-1] is finite, else 0.
 * kiln_loss_scale_update (runs in the step, mutating its three f32 scalar variables): when
 * finite is 1, good += 1 and, once good reaches growth_interval, scale *= 2 and good = 0; when
 * finite is 0, scale /= 2 (not below 1), good = 0 and skipped += 1. Feed the optimizer lr / finite
 * (kiln_div): an update whose learning rate is not finite changes neither the variable nor its
 * slots, so the overflowed step is skipped. Output: the f32 scalar 0. */
kiln_node *kiln_all_finite(kiln_graph *g, kiln_node *const *xs, int n);
kiln_node *kiln_loss_scale_update(kiln_graph *g, kiln_node *scale, kiln_node *good, kiln_node *skipped, kiln_node *finite,
                                  int growth_interval);

/* ---- optimizers: update ops applied in the graph ----
 * Each returns one node; running it (as a target) applies the update to every variable.
 * `lr` may be NULL (then lr_value is used) or a scalar f32 node (e.g. a variable a schedule
 * assigns). Slot variables (momentum, Adam moments) are created as non-trainable variables named
 * "<var>/<slot>". */
typedef struct kiln_sgd_opts { double lr; kiln_node *lr_node; double momentum; bool nesterov; double weight_decay; } kiln_sgd_opts;
typedef struct kiln_adam_opts { double lr; kiln_node *lr_node; double beta1, beta2, epsilon; double weight_decay; /* AdamW when > 0 */ } kiln_adam_opts;
typedef struct kiln_rmsprop_opts { double lr; kiln_node *lr_node; double rho, momentum, epsilon; } kiln_rmsprop_opts;
typedef struct kiln_adagrad_opts { double lr; kiln_node *lr_node; double initial_accumulator, epsilon; } kiln_adagrad_opts;
kiln_node *kiln_apply_sgd(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_sgd_opts *o);
kiln_node *kiln_apply_adam(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_adam_opts *o);
kiln_node *kiln_apply_adamw(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_adam_opts *o);
kiln_node *kiln_apply_rmsprop(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_rmsprop_opts *o);
kiln_node *kiln_apply_adagrad(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_adagrad_opts *o);
/* Scales grads so their global L2 norm is at most clip_norm (tf.clip_by_global_norm);
 * clipped[i] receives the new gradient nodes (clipped may be grads itself, to clip in place). */
kiln_status kiln_clip_by_global_norm(kiln_graph *g, kiln_node *const *grads, int n, double clip_norm,
                                     kiln_node **clipped);
/* Groups several nodes into one target (runs all of them). */
kiln_node *kiln_group(kiln_graph *g, kiln_node *const *nodes, int n);

/* ---- sessions ---- */
typedef enum kiln_backend_kind { KILN_BACKEND_AUTO = 0, KILN_BACKEND_REF, KILN_BACKEND_CPU, KILN_BACKEND_CUDA, KILN_BACKEND_KIND_COUNT } kiln_backend_kind;
typedef struct kiln_session_opts {
    kiln_backend_kind backend;     /* AUTO: cuda when a GPU answers, else cpu (saying why, once) */
    int num_threads;               /* 0: cores available */
    /* Print each node's device once per session ("dense_1/MatMul: (MatMul): /device:GPU:0");
     * also switched on by KILN_LOG_DEVICE_PLACEMENT=1. */
    bool log_device_placement;
    /* Placement on a device that does not exist (or lacks a kernel for the op) is an error
     * instead of falling back to the CPU with a warning (soft placement, the default). */
    bool strict_placement;
    bool no_cuda_graphs;           /* never capture the step as a CUDA graph (also KILN_CUDA_GRAPHS=0) */
    bool no_fusion;                /* never fuse BiasAdd/Relu into the producing conv/matmul (also KILN_FUSION=0) */
    bool measure_only;             /* plan only; report bytes, run nothing */
    uint64_t seed;                 /* seeds dropout (with each node's own seed) */
} kiln_session_opts;

/* The session holds the variables' values (initialised at creation). Borrows g, which must
 * outlive it and not gain nodes that the session must run... (new nodes are fine: plans are built
 * per fetch set). */
kiln_session *kiln_session_new(kiln_graph *g, const kiln_session_opts *opts);
void kiln_session_free(kiln_session *s);

typedef struct kiln_feed { kiln_node *node; const kiln_tensor *value; } kiln_feed;
/* Runs what `fetches` and `targets` need. outs[i]: if NULL on entry, a new tensor is allocated
 * (caller frees); otherwise it must have the fetch's dtype and shape and is overwritten (no
 * allocation: the training-loop form). */
kiln_status kiln_session_run(kiln_session *s, const kiln_feed *feeds, int n_feeds,
                             kiln_node *const *fetches, kiln_tensor **outs, int n_fetches,
                             kiln_node *const *targets, int n_targets);
/* kiln_session_run, and while the device computes this step, copies next_feeds (the feeds of the
 * following run: the next batch) to the device on a separate copy stream, so the transfer
 * overlaps compute (like tf.data's prefetch_to_device). The next run, and only the next, whose
 * feeds are these same tensors (same placeholders, same data pointers) uses those copies; their
 * contents must not change in between. Returns once the copies are done, so next's host buffers
 * may then be reused. Without a device (or for placeholders this run keeps on the host),
 * next_feeds are only checked. kiln_fit uses it for every training batch. */
kiln_status kiln_session_run_ahead(kiln_session *s, const kiln_feed *feeds, int n_feeds,
                                   kiln_node *const *fetches, kiln_tensor **outs, int n_fetches,
                                   kiln_node *const *targets, int n_targets,
                                   const kiln_feed *next_feeds, int n_next);
/* Variable values: copy out / assign (shape and dtype must match). */
kiln_status kiln_session_read_variable(kiln_session *s, kiln_node *var, kiln_tensor *out);
kiln_status kiln_session_assign_variable(kiln_session *s, kiln_node *var, const kiln_tensor *value);
/* Step counter that seeds dropout; advanced by every run. */
uint64_t kiln_session_step(const kiln_session *s);
void kiln_session_set_step(kiln_session *s, uint64_t step);
/* Bytes of the static memory plan for the last run's fetch set (activations, excl. variables). */
size_t kiln_session_planned_bytes(const kiln_session *s);
/* Bytes held by variables. */
size_t kiln_session_variable_bytes(const kiln_session *s);
/* Checks every kernel's output for NaN/Inf as it runs (TF's enable_check_numerics): the first one
 * stops the run with KILN_NUMERIC_ERROR naming the node, before the nodes after it (the optimizer's
 * updates) run. Slow (a device's outputs are copied to the host); off by default. */
void kiln_session_set_check_numerics(kiln_session *s, bool on);
/* Name of the backend the session runs on ("cpu", "ref", "cuda"). */
const char *kiln_session_backend(const kiln_session *s);

/* Heap allocations made by Kiln on this thread's behalf since start (tests check a training step
 * allocates nothing after the first). */
uint64_t kiln_alloc_count(void);

/* Threads used by cpu kernels (like torch.set_num_threads); 0 = cores available. Requests above
 * KILN_MAX_THREADS (here and in num_threads options) use KILN_MAX_THREADS: OpenMP runtimes
 * overflow their stack or stall with tens of thousands of threads. */
#define KILN_MAX_THREADS 1024
void kiln_set_num_threads(int n);
int kiln_get_num_threads(void);

#ifdef __cplusplus
}
#endif
#endif
