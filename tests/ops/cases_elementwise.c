/* Conformance cases for the elementwise and softmax op families. Input ranges keep finite
 * differences away from kinks (relu/abs at 0) and domain edges (log/sqrt/rsqrt/div at 0): ops with
 * a kink get one case on each side of it. */
#include "op_case.h"

#define F CASE_FLOAT
/* Constant-expression shapes (KILN_SHAPE calls a function, which a static table cannot). */
#define S(...) { (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), { __VA_ARGS__ } }
#define S0 { 0, { 0 } }
#define DT_HALF (DT_F16 | DT_BF16)

/* ---- builders ---- */
static kiln_node *b_add(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { (void)e; (void)ne; return kiln_add(g, x[0], x[1]); }
static kiln_node *b_sub(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { (void)e; (void)ne; return kiln_sub(g, x[0], x[1]); }
static kiln_node *b_mul(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { (void)e; (void)ne; return kiln_mul(g, x[0], x[1]); }
static kiln_node *b_div(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { (void)e; (void)ne; return kiln_div(g, x[0], x[1]); }
static kiln_node *b_max(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { (void)e; (void)ne; return kiln_maximum(g, x[0], x[1]); }
static kiln_node *b_min(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { (void)e; (void)ne; return kiln_minimum(g, x[0], x[1]); }

#define UNARY_BUILDER(nm, expr) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { (void)e; (void)ne; return expr; }
UNARY_BUILDER(neg, kiln_neg(g, x[0]))
UNARY_BUILDER(exp, kiln_exp(g, x[0]))
UNARY_BUILDER(log, kiln_log(g, x[0]))
UNARY_BUILDER(sqrt, kiln_sqrt(g, x[0]))
UNARY_BUILDER(rsqrt, kiln_rsqrt(g, x[0]))
UNARY_BUILDER(square, kiln_square(g, x[0]))
UNARY_BUILDER(pow25, kiln_pow(g, x[0], 2.5))
UNARY_BUILDER(pow_m15, kiln_pow(g, x[0], -1.5))
UNARY_BUILDER(pow3, kiln_pow(g, x[0], 3.0))
UNARY_BUILDER(abs, kiln_abs(g, x[0]))
UNARY_BUILDER(sign, kiln_node_new(g, KILN_OP_SIGN, x, 1, NULL))
UNARY_BUILDER(relu, kiln_relu(g, x[0]))
UNARY_BUILDER(leaky, kiln_leaky_relu(g, x[0], 0.2))
UNARY_BUILDER(elu, kiln_elu(g, x[0], 1.0))
UNARY_BUILDER(elu05, kiln_elu(g, x[0], 0.5))
UNARY_BUILDER(gelu, kiln_gelu(g, x[0]))
UNARY_BUILDER(gelu_tanh, kiln_gelu_tanh(g, x[0]))
UNARY_BUILDER(sigmoid, kiln_sigmoid(g, x[0]))
UNARY_BUILDER(tanh, kiln_tanh(g, x[0]))
UNARY_BUILDER(softplus, kiln_softplus(g, x[0]))
UNARY_BUILDER(erf, kiln_erf(g, x[0]))
UNARY_BUILDER(swish, kiln_swish(g, x[0]))
UNARY_BUILDER(relu6, kiln_clipped_relu(g, x[0], 6.0))
UNARY_BUILDER(clip15, kiln_clipped_relu(g, x[0], 1.5))
UNARY_BUILDER(hard_sigmoid, kiln_hard_sigmoid(g, x[0]))
UNARY_BUILDER(hard_swish, kiln_hard_swish(g, x[0]))
UNARY_BUILDER(selu, kiln_selu(g, x[0]))
UNARY_BUILDER(softsign, kiln_softsign(g, x[0]))
UNARY_BUILDER(mish, kiln_mish(g, x[0]))
UNARY_BUILDER(softmax_last, kiln_softmax(g, x[0], -1))
UNARY_BUILDER(softmax_mid, kiln_softmax(g, x[0], 1))
UNARY_BUILDER(log_softmax_last, kiln_log_softmax(g, x[0], -1))
UNARY_BUILDER(log_softmax_first, kiln_log_softmax(g, x[0], 0))

/* Gradient ops are built directly: (x or y, dy) with attrs.alpha where used. */
#define GRAD_BUILDER(nm, op, a) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { \
        (void)e; (void)ne; kiln_attrs at = { 0 }; at.alpha = (a); return kiln_node_new(g, op, x, 2, &at); }
GRAD_BUILDER(relu_grad, KILN_OP_RELU_GRAD, 0)
GRAD_BUILDER(leaky_grad, KILN_OP_LEAKY_RELU_GRAD, 0.2)
GRAD_BUILDER(elu_grad, KILN_OP_ELU_GRAD, 1.0)
GRAD_BUILDER(gelu_grad, KILN_OP_GELU_GRAD, 0)
GRAD_BUILDER(gelu_tanh_grad, KILN_OP_GELU_TANH_GRAD, 0)
GRAD_BUILDER(sigmoid_grad, KILN_OP_SIGMOID_GRAD, 0)
GRAD_BUILDER(tanh_grad, KILN_OP_TANH_GRAD, 0)
GRAD_BUILDER(clipped_relu_grad, KILN_OP_CLIPPED_RELU_GRAD, 1.5)
GRAD_BUILDER(swish_grad, KILN_OP_SWISH_GRAD, 0)
GRAD_BUILDER(hard_sigmoid_grad, KILN_OP_HARD_SIGMOID_GRAD, 0)
GRAD_BUILDER(hard_swish_grad, KILN_OP_HARD_SWISH_GRAD, 0)
GRAD_BUILDER(selu_grad, KILN_OP_SELU_GRAD, 0)
GRAD_BUILDER(softsign_grad, KILN_OP_SOFTSIGN_GRAD, 0)
GRAD_BUILDER(mish_grad, KILN_OP_MISH_GRAD, 0)

/* ---- cases ---- */
#define BIN(op_, lbl, sa, sb, lo0, hi0, lo1, hi1, fn, dts) \
    { op_, lbl, 2, { F, F }, { sa, sb }, { lo0, lo1 }, { hi0, hi1 }, fn, dts, true, 0, 0, 0 }
#define UN(op_, lbl, sh, lo_, hi_, fn, dts, gr) \
    { op_, lbl, 1, { F }, { sh }, { lo_ }, { hi_ }, fn, dts, gr, 0, 0, 0 }
#define AG(op_, lbl, lo0, hi0, fn) \
    { op_, lbl, 2, { F, F }, { S(3, 7), S(3, 7) }, { lo0, -1 }, { hi0, 1 }, fn, DT_FLOATS, false, 0, 0, 0 }
#define INT2(op_, lbl, dt, sa, sb, fn) \
    { op_, lbl, 2, { dt, dt }, { sa, sb }, { -100, -100 }, { 100, 100 }, fn, DT_F32, false, 0, 0, 0 }

const op_case cases_elementwise[] = {
    /* binary, broadcasting */
    BIN(KILN_OP_ADD, "add [4,1,3] + [5,1]", S(4, 1, 3), S(5, 1), -2, 2, -2, 2, b_add, DT_FLOATS | DT_HALF),
    BIN(KILN_OP_ADD, "add [2,3] + scalar", S(2, 3), S0, -2, 2, -2, 2, b_add, DT_FLOATS),
    BIN(KILN_OP_SUB, "sub [3,4] - [4]", S(3, 4), S(4), -2, 2, -2, 2, b_sub, DT_FLOATS),
    BIN(KILN_OP_SUB, "sub [5,1] - [4,1,3]", S(5, 1), S(4, 1, 3), -2, 2, -2, 2, b_sub, DT_FLOATS),
    BIN(KILN_OP_MUL, "mul [4,1,3] * [5,1]", S(4, 1, 3), S(5, 1), -2, 2, -2, 2, b_mul, DT_FLOATS | DT_HALF),
    BIN(KILN_OP_MUL, "mul [6,7] * [6,7]", S(6, 7), S(6, 7), -2, 2, -2, 2, b_mul, DT_FLOATS | DT_HALF),
    BIN(KILN_OP_DIV, "div [4,1,3] / [5,1] (b in [0.5,2])", S(4, 1, 3), S(5, 1), -2, 2, 0.5, 2, b_div, DT_FLOATS),
    BIN(KILN_OP_DIV, "div [3] / [2,3] (b negative)", S(3), S(2, 3), -2, 2, -2, -0.5, b_div, DT_FLOATS),
    BIN(KILN_OP_MAXIMUM, "maximum [4,1,3] vs [5,1]", S(4, 1, 3), S(5, 1), -2, 2, -2, 2, b_max, DT_FLOATS),
    BIN(KILN_OP_MAXIMUM, "maximum [3,4] vs [4] (disjoint ranges)", S(3, 4), S(4), 1, 2, -1, 0.5, b_max, DT_FLOATS),
    BIN(KILN_OP_MINIMUM, "minimum [4,1,3] vs [5,1]", S(4, 1, 3), S(5, 1), -2, 2, -2, 2, b_min, DT_FLOATS),
    BIN(KILN_OP_MINIMUM, "minimum [3,4] vs [4] (disjoint ranges)", S(3, 4), S(4), 1, 2, -1, 0.5, b_min, DT_FLOATS),
    /* integer binary ops (no gradient) */
    INT2(KILN_OP_ADD, "add i32 [4,1,3] + [5,1]", KILN_I32, S(4, 1, 3), S(5, 1), b_add),
    INT2(KILN_OP_SUB, "sub i64 [3,4] - [4]", KILN_I64, S(3, 4), S(4), b_sub),
    INT2(KILN_OP_MUL, "mul i32 [3,4] * [3,4]", KILN_I32, S(3, 4), S(3, 4), b_mul),
    INT2(KILN_OP_MAXIMUM, "maximum i64 [4,1,3] vs [5,1]", KILN_I64, S(4, 1, 3), S(5, 1), b_max),
    INT2(KILN_OP_MINIMUM, "minimum i32 [3,4] vs [4]", KILN_I32, S(3, 4), S(4), b_min),

    /* unary */
    UN(KILN_OP_NEG, "neg [3,5]", S(3, 5), -2, 2, b_neg, DT_FLOATS, true),
    UN(KILN_OP_EXP, "exp [3,5]", S(3, 5), -2, 2, b_exp, DT_FLOATS, true),
    UN(KILN_OP_LOG, "log [3,5] in [0.1,2]", S(3, 5), 0.1, 2, b_log, DT_FLOATS, true),
    UN(KILN_OP_SQRT, "sqrt [3,5] in [0.1,2]", S(3, 5), 0.1, 2, b_sqrt, DT_FLOATS, true),
    UN(KILN_OP_RSQRT, "rsqrt [3,5] in [0.2,2]", S(3, 5), 0.2, 2, b_rsqrt, DT_FLOATS, true),
    UN(KILN_OP_SQUARE, "square [3,5]", S(3, 5), -2, 2, b_square, DT_FLOATS, true),
    UN(KILN_OP_POW, "pow 2.5 [3,5] in [0.2,2]", S(3, 5), 0.2, 2, b_pow25, DT_FLOATS, true),
    UN(KILN_OP_POW, "pow -1.5 [3,5] in [0.3,2]", S(3, 5), 0.3, 2, b_pow_m15, DT_FLOATS, true),
    UN(KILN_OP_POW, "pow 3 [3,5] (negative x)", S(3, 5), -2, 2, b_pow3, DT_FLOATS, true),
    UN(KILN_OP_ABS, "abs [3,5] positive", S(3, 5), 0.1, 2, b_abs, DT_FLOATS, true),
    UN(KILN_OP_ABS, "abs [3,5] negative", S(3, 5), -2, -0.1, b_abs, DT_FLOATS, true),
    UN(KILN_OP_SIGN, "sign [3,5]", S(3, 5), -2, 2, b_sign, DT_FLOATS, false),
    UN(KILN_OP_RELU, "relu [3,5] positive", S(3, 5), 0.1, 2, b_relu, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_RELU, "relu [3,5] negative", S(3, 5), -2, -0.1, b_relu, DT_FLOATS, true),
    UN(KILN_OP_RELU, "relu [4,6] both signs (forward)", S(4, 6), -2, 2, b_relu, DT_FLOATS | DT_HALF, false),
    UN(KILN_OP_LEAKY_RELU, "leaky_relu 0.2 positive", S(3, 5), 0.1, 2, b_leaky, DT_FLOATS, true),
    UN(KILN_OP_LEAKY_RELU, "leaky_relu 0.2 negative", S(3, 5), -2, -0.1, b_leaky, DT_FLOATS, true),
    UN(KILN_OP_ELU, "elu 1.0 positive", S(3, 5), 0.1, 2, b_elu, DT_FLOATS, true),
    UN(KILN_OP_ELU, "elu 1.0 negative", S(3, 5), -2, -0.1, b_elu, DT_FLOATS, true),
    UN(KILN_OP_ELU, "elu 0.5 negative", S(3, 5), -2, -0.1, b_elu05, DT_FLOATS, true),
    UN(KILN_OP_GELU, "gelu [3,5]", S(3, 5), -3, 3, b_gelu, DT_FLOATS, true),
    UN(KILN_OP_GELU_TANH, "gelu tanh approximation [4,6]", S(4, 6), -4, 4, b_gelu_tanh, DT_FLOATS, true),
    UN(KILN_OP_SIGMOID, "sigmoid [3,5]", S(3, 5), -4, 4, b_sigmoid, DT_FLOATS, true),
    UN(KILN_OP_TANH, "tanh [3,5]", S(3, 5), -3, 3, b_tanh, DT_FLOATS, true),
    UN(KILN_OP_SOFTPLUS, "softplus [3,5]", S(3, 5), -4, 4, b_softplus, DT_FLOATS, true),
    UN(KILN_OP_ERF, "erf [3,5]", S(3, 5), -3, 3, b_erf, DT_FLOATS, true),
    /* Keras 3's other activations: kinked ones get a case per piece (away from the kinks) */
    UN(KILN_OP_SWISH, "swish [3,5]", S(3, 5), -4, 4, b_swish, DT_FLOATS, true),
    UN(KILN_OP_CLIPPED_RELU, "relu6 [3,5] inside", S(3, 5), 0.1, 5.9, b_relu6, DT_FLOATS, true),
    UN(KILN_OP_CLIPPED_RELU, "relu6 [3,5] above", S(3, 5), 6.1, 9, b_relu6, DT_FLOATS, true),
    UN(KILN_OP_CLIPPED_RELU, "relu6 [3,5] negative", S(3, 5), -2, -0.1, b_relu6, DT_FLOATS, true),
    UN(KILN_OP_CLIPPED_RELU, "clipped_relu 1.5 [4,6] (forward)", S(4, 6), -3, 3, b_clip15, DT_FLOATS, false),
    UN(KILN_OP_HARD_SIGMOID, "hard_sigmoid [3,5] inside", S(3, 5), -2.9, 2.9, b_hard_sigmoid, DT_FLOATS, true),
    UN(KILN_OP_HARD_SIGMOID, "hard_sigmoid [4,6] (forward)", S(4, 6), -5, 5, b_hard_sigmoid, DT_FLOATS, false),
    UN(KILN_OP_HARD_SWISH, "hard_swish [3,5] inside", S(3, 5), -2.9, 2.9, b_hard_swish, DT_FLOATS, true),
    UN(KILN_OP_HARD_SWISH, "hard_swish [3,5] above", S(3, 5), 3.1, 5, b_hard_swish, DT_FLOATS, true),
    UN(KILN_OP_HARD_SWISH, "hard_swish [3,5] below", S(3, 5), -5, -3.1, b_hard_swish, DT_FLOATS, true),
    UN(KILN_OP_SELU, "selu [3,5] positive", S(3, 5), 0.1, 2, b_selu, DT_FLOATS, true),
    UN(KILN_OP_SELU, "selu [3,5] negative", S(3, 5), -2, -0.1, b_selu, DT_FLOATS, true),
    UN(KILN_OP_SOFTSIGN, "softsign [3,5] positive", S(3, 5), 0.1, 3, b_softsign, DT_FLOATS, true),
    UN(KILN_OP_SOFTSIGN, "softsign [3,5] negative", S(3, 5), -3, -0.1, b_softsign, DT_FLOATS, true),
    UN(KILN_OP_MISH, "mish [3,5]", S(3, 5), -4, 4, b_mish, DT_FLOATS, true),

    /* activation gradient ops (forward only: they are NO_GRAD) */
    AG(KILN_OP_RELU_GRAD, "relu_grad x,dy [3,7]", -2, 2, b_relu_grad),
    AG(KILN_OP_LEAKY_RELU_GRAD, "leaky_relu_grad 0.2 x,dy [3,7]", -2, 2, b_leaky_grad),
    AG(KILN_OP_ELU_GRAD, "elu_grad 1.0 x,dy [3,7]", -2, 2, b_elu_grad),
    AG(KILN_OP_GELU_GRAD, "gelu_grad x,dy [3,7]", -3, 3, b_gelu_grad),
    AG(KILN_OP_GELU_TANH_GRAD, "gelu_tanh_grad x,dy [3,7]", -4, 4, b_gelu_tanh_grad),
    AG(KILN_OP_SIGMOID_GRAD, "sigmoid_grad y,dy [3,7]", 0, 1, b_sigmoid_grad),
    AG(KILN_OP_TANH_GRAD, "tanh_grad y,dy [3,7]", -1, 1, b_tanh_grad),
    AG(KILN_OP_CLIPPED_RELU_GRAD, "clipped_relu_grad 1.5 y,dy [3,7]", -1, 2, b_clipped_relu_grad),
    AG(KILN_OP_SWISH_GRAD, "swish_grad x,dy [3,7]", -4, 4, b_swish_grad),
    AG(KILN_OP_HARD_SIGMOID_GRAD, "hard_sigmoid_grad x,dy [3,7]", -5, 5, b_hard_sigmoid_grad),
    AG(KILN_OP_HARD_SWISH_GRAD, "hard_swish_grad x,dy [3,7]", -5, 5, b_hard_swish_grad),
    AG(KILN_OP_SELU_GRAD, "selu_grad x,dy [3,7]", -2, 2, b_selu_grad),
    AG(KILN_OP_SOFTSIGN_GRAD, "softsign_grad x,dy [3,7]", -3, 3, b_softsign_grad),
    AG(KILN_OP_MISH_GRAD, "mish_grad x,dy [3,7]", -4, 4, b_mish_grad),

    /* softmax family */
    UN(KILN_OP_SOFTMAX, "softmax [4,5] axis -1", S(4, 5), -3, 3, b_softmax_last, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_SOFTMAX, "softmax [3,4,5] axis 1", S(3, 4, 5), -3, 3, b_softmax_mid, DT_FLOATS, true),
    UN(KILN_OP_LOG_SOFTMAX, "log_softmax [4,5] axis -1", S(4, 5), -3, 3, b_log_softmax_last, DT_FLOATS, true),
    UN(KILN_OP_LOG_SOFTMAX, "log_softmax [3,4,2] axis 0", S(3, 4, 2), -3, 3, b_log_softmax_first, DT_FLOATS, true),
};

const int n_cases_elementwise = (int)(sizeof cases_elementwise / sizeof cases_elementwise[0]);
