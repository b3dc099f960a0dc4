/* Ref kernels for the elementwise ops: plain loops, math in double (so every float dtype shares one
 * definition), integer dtypes in int64 arithmetic (double would lose i64 precision). These are the
 * oracle the other backends are tested against, so NaN behaviour is defined here on purpose:
 * NaN propagates through every forward op (Relu, Maximum, Sign included). */
#include <math.h>
#include "ops/ref_kernels.h"
#include "backend/broadcast.h"

/* Own constants: M_SQRT1_2 and friends are not ISO C. */
#define SQRT1_2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794
#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946
#define SQRT_2_PI 0.79788456080286535588   /* sqrt(2/pi), GeluTanh */

static bool is_int(kiln_dtype t) { return t == KILN_I32 || t == KILN_I64; }

static int64_t load_int(const void *p, kiln_dtype t, int64_t i) {
    return t == KILN_I32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* Integer results wrap (two's complement) like the int kernels of other frameworks. */
static void store_int(void *p, kiln_dtype t, int64_t i, uint64_t v) {
    if (t == KILN_I32) ((int32_t *)p)[i] = (int32_t)(uint32_t)v;
    else ((int64_t *)p)[i] = (int64_t)v;
}

/* ---- scalar definitions ---- */

static double sigmoid(double x) {
    /* two branches so exp never overflows */
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

static double softplus(double x) { return fmax(x, 0.0) + log1p(exp(-fabs(x))); }
/* Keras 3: relu6(x + 3) / 6 */
static double hard_sigmoid(double x) { return x <= -3 ? 0.0 : x >= 3 ? 1.0 : (x + 3.0) / 6.0; }

double kiln_ref_unary_scalar(kiln_op op, double x, double alpha) {
    switch (op) {
    case KILN_OP_NEG: return -x;
    case KILN_OP_EXP: return exp(x);
    case KILN_OP_LOG: return log(x);
    case KILN_OP_SQRT: return sqrt(x);
    case KILN_OP_RSQRT: return 1.0 / sqrt(x);
    case KILN_OP_SQUARE: return x * x;
    case KILN_OP_POW: return pow(x, alpha);
    case KILN_OP_ABS: return fabs(x);
    case KILN_OP_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;          /* keeps NaN and 0 */
    case KILN_OP_RELU: return x <= 0 ? 0.0 : x;                          /* NaN passes through */
    case KILN_OP_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case KILN_OP_ELU: return x > 0 ? x : alpha * expm1(x);
    case KILN_OP_GELU: return 0.5 * x * (1.0 + erf(x * SQRT1_2));
    case KILN_OP_GELU_TANH: return 0.5 * x * (1.0 + tanh(SQRT_2_PI * (x + 0.044715 * x * x * x)));
    case KILN_OP_SIGMOID: return sigmoid(x);
    case KILN_OP_TANH: return tanh(x);
    case KILN_OP_SOFTPLUS: return fmax(x, 0.0) + log1p(exp(-fabs(x)));  /* stable for large |x| */
    case KILN_OP_ERF: return erf(x);
    case KILN_OP_SWISH: return x * sigmoid(x);
    case KILN_OP_CLIPPED_RELU: return x <= 0 ? 0.0 : x >= alpha ? alpha : x;   /* NaN passes through */
    case KILN_OP_HARD_SIGMOID: return hard_sigmoid(x);
    case KILN_OP_HARD_SWISH: return x * hard_sigmoid(x);
    case KILN_OP_SELU: return SELU_SCALE * (x > 0 ? x : SELU_ALPHA * expm1(x));
    case KILN_OP_SOFTSIGN: return x / (1.0 + fabs(x));
    case KILN_OP_MISH: return x * tanh(softplus(x));
    default: return NAN;
    }
}

/* Activation gradients select rather than multiply where the derivative is 0, so a NaN/Inf dy
 * at a dead unit gives 0 (as TensorFlow's ReluGrad does). */
double kiln_ref_act_grad_scalar(kiln_op op, double x, double dy, double alpha) {
    switch (op) {
    case KILN_OP_RELU_GRAD: return x > 0 ? dy : 0.0;
    case KILN_OP_LEAKY_RELU_GRAD: return x > 0 ? dy : alpha * dy;
    case KILN_OP_ELU_GRAD: return x > 0 ? dy : dy * alpha * exp(x);
    case KILN_OP_GELU_GRAD: {
        double cdf = 0.5 * (1.0 + erf(x * SQRT1_2));
        double pdf = exp(-0.5 * x * x) * INV_SQRT_2PI;
        return dy * (cdf + x * pdf);
    }
    case KILN_OP_GELU_TANH_GRAD: {   /* 0.5 (1 + t) + 0.5 x (1 - t^2) u', u = sqrt(2/pi) (x + 0.044715 x^3) */
        double t = tanh(SQRT_2_PI * (x + 0.044715 * x * x * x));
        return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * SQRT_2_PI * (1.0 + 3.0 * 0.044715 * x * x));
    }
    case KILN_OP_SIGMOID_GRAD: return dy * x * (1.0 - x);               /* x is y here */
    case KILN_OP_TANH_GRAD: return dy * (1.0 - x * x);                  /* x is y here */
    case KILN_OP_CLIPPED_RELU_GRAD: return x > 0 && x < alpha ? dy : 0.0;   /* x is y here */
    case KILN_OP_SWISH_GRAD: { double s = sigmoid(x); return dy * s * (1.0 + x * (1.0 - s)); }
    case KILN_OP_HARD_SIGMOID_GRAD: return x > -3 && x < 3 ? dy / 6.0 : 0.0;
    case KILN_OP_HARD_SWISH_GRAD: return x <= -3 ? 0.0 : x >= 3 ? dy : dy * (2.0 * x + 3.0) / 6.0;
    case KILN_OP_SELU_GRAD: return x > 0 ? dy * SELU_SCALE : dy * SELU_SCALE * SELU_ALPHA * exp(x);
    case KILN_OP_SOFTSIGN_GRAD: { double d = 1.0 + fabs(x); return dy / (d * d); }
    case KILN_OP_MISH_GRAD: { double t = tanh(softplus(x)); return dy * (t + x * sigmoid(x) * (1.0 - t * t)); }
    default: return NAN;
    }
}

static double binary_scalar(kiln_op op, double a, double b) {
    switch (op) {
    case KILN_OP_ADD: return a + b;
    case KILN_OP_SUB: return a - b;
    case KILN_OP_MUL: return a * b;
    case KILN_OP_DIV: return a / b;
    case KILN_OP_MAXIMUM: return (a >= b || isnan(a)) ? a : b;           /* NaN wins, like numpy */
    case KILN_OP_MINIMUM: return (a <= b || isnan(a)) ? a : b;
    default: return NAN;
    }
}

static uint64_t binary_int(kiln_op op, int64_t a, int64_t b) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case KILN_OP_ADD: return ua + ub;
    case KILN_OP_SUB: return ua - ub;
    case KILN_OP_MUL: return ua * ub;
    case KILN_OP_MAXIMUM: return (uint64_t)(a >= b ? a : b);
    case KILN_OP_MINIMUM: return (uint64_t)(a <= b ? a : b);
    default: return 0;   /* Div on integers is rejected at build */
    }
}

static uint64_t unary_int(kiln_op op, int64_t x) {
    uint64_t ux = (uint64_t)x;
    switch (op) {
    case KILN_OP_NEG: return 0u - ux;
    case KILN_OP_ABS: return x < 0 ? 0u - ux : ux;
    case KILN_OP_SQUARE: return ux * ux;
    case KILN_OP_SIGN: return (uint64_t)(int64_t)((x > 0) - (x < 0));
    default: return 0;   /* float-only ops are rejected at build */
    }
}

/* ---- kernels ---- */

kiln_status kiln_ref_binary(const kiln_kctx *c) {
    const kiln_view *A = &c->in[0], *B = &c->in[1];
    const kiln_view *O = &c->out;
    kiln_op op = c->node->op;
    kiln_dtype dt = O->dtype;
    bool integer = is_int(dt);
    int rank = O->shape.rank;
    int64_t sa[KILN_MAX_DIMS], sb[KILN_MAX_DIMS], idx[KILN_MAX_DIMS] = { 0 };
    kiln_bcast_strides(O->shape, A->shape, sa);
    kiln_bcast_strides(O->shape, B->shape, sb);
    int64_t ia = 0, ib = 0;
    for (int64_t i = 0; i < O->numel; i++) {
        /* both inputs are read before out[i] is written: safe when out aliases a */
        if (integer) store_int(O->data, dt, i, binary_int(op, load_int(A->data, dt, ia), load_int(B->data, dt, ib)));
        else kiln_store(O->data, dt, i, binary_scalar(op, kiln_load(A->data, dt, ia), kiln_load(B->data, dt, ib)));
        /* odometer step over the output index, moving both input offsets along */
        for (int d = rank - 1; d >= 0; d--) {
            ia += sa[d]; ib += sb[d];
            if (++idx[d] < O->shape.dim[d]) break;
            ia -= sa[d] * O->shape.dim[d];
            ib -= sb[d] * O->shape.dim[d];
            idx[d] = 0;
        }
    }
    return KILN_OK;
}

kiln_status kiln_ref_unary(const kiln_kctx *c) {
    const kiln_view *X = &c->in[0];
    kiln_op op = c->node->op;
    kiln_dtype dt = c->out.dtype;
    double alpha = c->node->attrs.alpha;
    if (is_int(dt)) {
        for (int64_t i = 0; i < c->out.numel; i++) store_int(c->out.data, dt, i, unary_int(op, load_int(X->data, dt, i)));
        return KILN_OK;
    }
    for (int64_t i = 0; i < c->out.numel; i++)
        kiln_store(c->out.data, dt, i, kiln_ref_unary_scalar(op, kiln_load(X->data, dt, i), alpha));
    return KILN_OK;
}

kiln_status kiln_ref_act_grad(const kiln_kctx *c) {
    const kiln_view *X = &c->in[0], *DY = &c->in[1];
    kiln_op op = c->node->op;
    kiln_dtype dt = c->out.dtype;
    double alpha = c->node->attrs.alpha;
    for (int64_t i = 0; i < c->out.numel; i++)
        kiln_store(c->out.data, dt, i,
                   kiln_ref_act_grad_scalar(op, kiln_load(X->data, dt, i), kiln_load(DY->data, dt, i), alpha));
    return KILN_OK;
}
