/* The ref (oracle) kernels the op definitions name (kiln_op_def.ref), declared beside the ops so
 * src/ops includes nothing from src/backend; they are defined in src/backend/ref/<family>.c,
 * which include this header. Semantics: src/ops/SEMANTICS.md. Plain loops over
 * kiln_load/kiln_store with double accumulation, so every dtype works; pure data movement copies
 * element bytes so nothing is rounded (i64 above 2^53, NaN payloads). */
#ifndef KILN_OPS_REF_KERNELS_H
#define KILN_OPS_REF_KERNELS_H
#include "ops/op.h"

/* ---- elementwise.c, softmax.c: one generic kernel per shape of op, dispatching on
 * ctx->node->op (the ref backend values clarity over speed); all accept out aliasing input 0 ---- */
/* Add Sub Mul Div Maximum Minimum: numpy broadcasting of in[0], in[1] to out. */
kiln_status kiln_ref_binary(const kiln_kctx *c);
/* Neg Exp Log Sqrt Rsqrt Square Pow Abs Sign Relu LeakyRelu Elu Gelu Sigmoid Tanh Softplus Erf. */
kiln_status kiln_ref_unary(const kiln_kctx *c);
/* ReluGrad LeakyReluGrad EluGrad GeluGrad (x, dy); SigmoidGrad TanhGrad (y, dy). */
kiln_status kiln_ref_act_grad(const kiln_kctx *c);
/* Softmax / LogSoftmax over attrs.axis (normalised, >= 0). */
kiln_status kiln_ref_softmax(const kiln_kctx *c);
kiln_status kiln_ref_log_softmax(const kiln_kctx *c);
/* Scalar definitions shared with other backends' tests and fallbacks (double precision). */
double kiln_ref_unary_scalar(kiln_op op, double x, double alpha);
double kiln_ref_act_grad_scalar(kiln_op op, double x_or_y, double dy, double alpha);

/* ---- reduce.c, shape.c ---- */
kiln_status kiln_ref_reduce_sum(const kiln_kctx *c);
kiln_status kiln_ref_reduce_mean(const kiln_kctx *c);
kiln_status kiln_ref_reduce_max(const kiln_kctx *c);    /* NaN propagates; empty -> -inf (0 for ints) */
kiln_status kiln_ref_sum_to(const kiln_kctx *c);
kiln_status kiln_ref_broadcast_to(const kiln_kctx *c);
kiln_status kiln_ref_copy(const kiln_kctx *c);           /* Reshape, Identity: no-op when aliased */
kiln_status kiln_ref_transpose(const kiln_kctx *c);
kiln_status kiln_ref_concat(const kiln_kctx *c);
kiln_status kiln_ref_slice(const kiln_kctx *c);
kiln_status kiln_ref_pad(const kiln_kctx *c);
kiln_status kiln_ref_cast(const kiln_kctx *c);
kiln_status kiln_ref_bias_add(const kiln_kctx *c);       /* safe with out == x (in place) */

/* ---- matmul.c, conv.c, pool.c: each output element computed by one gather and stored once
 * (output buffers arrive unzeroed) ---- */
kiln_status kiln_ref_matmul(const kiln_kctx *c);
kiln_status kiln_ref_batch_matmul(const kiln_kctx *c);
kiln_status kiln_ref_conv2d(const kiln_kctx *c);
kiln_status kiln_ref_conv2d_bwd_input(const kiln_kctx *c);
kiln_status kiln_ref_conv2d_bwd_filter(const kiln_kctx *c);
kiln_status kiln_ref_max_pool(const kiln_kctx *c);
kiln_status kiln_ref_max_pool_grad(const kiln_kctx *c);
kiln_status kiln_ref_avg_pool(const kiln_kctx *c);
kiln_status kiln_ref_avg_pool_grad(const kiln_kctx *c);
kiln_status kiln_ref_global_avg_pool(const kiln_kctx *c);

/* ---- norm.c ---- */
kiln_status kiln_ref_batch_norm(const kiln_kctx *c);
kiln_status kiln_ref_batch_norm_grad(const kiln_kctx *c);
kiln_status kiln_ref_bn_grad_gamma(const kiln_kctx *c);
kiln_status kiln_ref_dropout(const kiln_kctx *c);
kiln_status kiln_ref_dropout_grad(const kiln_kctx *c);
kiln_status kiln_ref_random_normal(const kiln_kctx *c);

/* ---- sync_bn.c: synchronised batch norm ---- */
kiln_status kiln_ref_cross_replica_sum(const kiln_kctx *c);
kiln_status kiln_ref_bn_stats(const kiln_kctx *c);
kiln_status kiln_ref_bn_stats_grad(const kiln_kctx *c);
kiln_status kiln_ref_bn_sync(const kiln_kctx *c);
kiln_status kiln_ref_bn_sync_grad(const kiln_kctx *c);

/* ---- loss.c ---- */
kiln_status kiln_ref_sparse_softmax_xent(const kiln_kctx *c);
kiln_status kiln_ref_sparse_softmax_xent_grad(const kiln_kctx *c);
kiln_status kiln_ref_softmax_xent(const kiln_kctx *c);
kiln_status kiln_ref_softmax_xent_grad(const kiln_kctx *c);
kiln_status kiln_ref_sigmoid_xent(const kiln_kctx *c);
kiln_status kiln_ref_sigmoid_xent_grad(const kiln_kctx *c);
kiln_status kiln_ref_mse(const kiln_kctx *c);
kiln_status kiln_ref_argmax(const kiln_kctx *c);
kiln_status kiln_ref_equal(const kiln_kctx *c);
kiln_status kiln_ref_accuracy(const kiln_kctx *c);

/* ---- optim.c, loss_scale.c ---- */
kiln_status kiln_ref_apply_sgd(const kiln_kctx *c);
kiln_status kiln_ref_apply_adam(const kiln_kctx *c);
kiln_status kiln_ref_apply_rmsprop(const kiln_kctx *c);
kiln_status kiln_ref_apply_adagrad(const kiln_kctx *c);
kiln_status kiln_ref_global_norm(const kiln_kctx *c);
kiln_status kiln_ref_clip_scale(const kiln_kctx *c);
kiln_status kiln_ref_group(const kiln_kctx *c);
kiln_status kiln_ref_all_finite(const kiln_kctx *c);
kiln_status kiln_ref_loss_scale_update(const kiln_kctx *c);

/* ---- data_ops.c ---- */
kiln_status kiln_ref_gather_rows(const kiln_kctx *c);
kiln_status kiln_ref_random_crop_flip(const kiln_kctx *c);
/* ---- transformer.c, attention.c ---- */
/* Embedding checks every id against [0, V): a bad one is the caller's data error naming it. */
kiln_status kiln_ref_embedding(const kiln_kctx *c);
kiln_status kiln_ref_embedding_grad(const kiln_kctx *c);
kiln_status kiln_ref_layer_norm(const kiln_kctx *c);
kiln_status kiln_ref_layer_norm_grad(const kiln_kctx *c);
kiln_status kiln_ref_layer_norm_gamma_grad(const kiln_kctx *c);
kiln_status kiln_ref_attention(const kiln_kctx *c);
kiln_status kiln_ref_attention_grad(const kiln_kctx *c);
/* ---- rnn.c ---- */
kiln_status kiln_ref_rnn(const kiln_kctx *c);
kiln_status kiln_ref_rnn_grad(const kiln_kctx *c);
size_t kiln_rnn_ref_workspace(const kiln_node *n);

#endif
