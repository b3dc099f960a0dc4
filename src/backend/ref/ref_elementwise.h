/* Ref (oracle) kernels for the elementwise and softmax op families. One generic kernel per shape
 * of op (binary, unary, activation gradient, softmax) that dispatches on ctx->node->op: the ref
 * backend values clarity over speed. All of them accept an output aliasing input 0. */
#ifndef KILN_REF_ELEMENTWISE_H
#define KILN_REF_ELEMENTWISE_H
#include "ops/op.h"

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
#endif
