/* Elementwise op family: binary broadcasting math, unary math and activations, and the activation
 * gradient ops. Shape inference, gradients (composed from public builders) and builders. */
#include <stdio.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

/* ---- shape and dtype helpers ---- */

/* Numpy broadcast of a and b; on failure returns the (1-based, from the end) dim that clashes. */
static int broadcast_core(kiln_shape a, kiln_shape b, kiln_shape *out) {
    kiln_shape r = { a.rank > b.rank ? a.rank : b.rank, { 0 } };
    for (int i = 0; i < r.rank; i++) {   /* align from the trailing dim, as numpy does */
        int ka = a.rank - 1 - i, kb = b.rank - 1 - i;
        int64_t da = ka >= 0 ? a.dim[ka] : 1, db = kb >= 0 ? b.dim[kb] : 1;
        if (da != db && da != 1 && db != 1) return i + 1;
        r.dim[r.rank - 1 - i] = da == 1 ? db : da;
    }
    *out = r;
    return 0;
}

static int64_t dim_from_end(kiln_shape s, int k) { return k <= s.rank ? s.dim[s.rank - k] : 1; }

kiln_status kiln_broadcast_shapes(kiln_node *n, kiln_shape a, kiln_shape b, kiln_shape *out) {
    int bad = broadcast_core(a, b, out);
    if (!bad) return KILN_OK;
    char sa[96], sb[96];
    return kiln_node_error(n, KILN_SHAPE_MISMATCH, "shapes %s and %s do not broadcast (dim %d from the end: "
        "%lld vs %lld; trailing dims must be equal or 1)", kiln_shape_str(a, sa, sizeof sa),
        kiln_shape_str(b, sb, sizeof sb), bad, (long long)dim_from_end(a, bad), (long long)dim_from_end(b, bad));
}

/* Ops that are meaningful on i32/i64 as well as floats. */
static bool allows_int(kiln_op op) {
    switch (op) {
    case KILN_OP_ADD: case KILN_OP_SUB: case KILN_OP_MUL: case KILN_OP_MAXIMUM: case KILN_OP_MINIMUM:
    case KILN_OP_NEG: case KILN_OP_ABS: case KILN_OP_SQUARE: case KILN_OP_SIGN:
        return true;
    default:
        return false;
    }
}

static kiln_status check_dtype(kiln_node *n, const kiln_node *x) {
    if (kiln_dtype_is_float(x->dtype)) return KILN_OK;
    if (allows_int(n->op) && (x->dtype == KILN_I32 || x->dtype == KILN_I64)) return KILN_OK;
    char s[96];
    return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input '%s' is %s %s; this op needs %s (cast it first "
        "with kiln_cast)", x->name, kiln_dtype_name(x->dtype), kiln_shape_str(x->shape, s, sizeof s),
        allows_int(n->op) ? "f32, f64, f16, bf16, i32 or i64" : "a float dtype (f32, f64, f16, bf16)");
}

static kiln_status infer_binary(kiln_node *n) {
    kiln_node *a = n->in[0], *b = n->in[1];
    if (a->dtype != b->dtype) {
        char sa[96], sb[96];
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "inputs differ in dtype: '%s' is %s %s, '%s' is "
            "%s %s (cast one with kiln_cast)", a->name, kiln_dtype_name(a->dtype),
            kiln_shape_str(a->shape, sa, sizeof sa), b->name, kiln_dtype_name(b->dtype),
            kiln_shape_str(b->shape, sb, sizeof sb));
    }
    kiln_status s = check_dtype(n, a);
    if (s) return s;
    n->dtype = a->dtype;
    int bad = broadcast_core(a->shape, b->shape, &n->shape);
    if (bad) {   /* like kiln_broadcast_shapes, but naming the inputs */
        char sa[96], sb[96];
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "'%s' %s and '%s' %s do not broadcast (dim %d from the "
            "end: %lld vs %lld; trailing dims must be equal or 1)", a->name, kiln_shape_str(a->shape, sa, sizeof sa),
            b->name, kiln_shape_str(b->shape, sb, sizeof sb), bad, (long long)dim_from_end(a->shape, bad),
            (long long)dim_from_end(b->shape, bad));
    }
    return KILN_OK;
}

static kiln_status infer_unary(kiln_node *n) {
    kiln_status s = check_dtype(n, n->in[0]);
    if (s) return s;
    n->dtype = n->in[0]->dtype;
    n->shape = n->in[0]->shape;
    return KILN_OK;
}

/* (x or y, dy) -> dx: both float, same dtype and shape (no broadcasting in gradient ops). */
static kiln_status infer_act_grad(kiln_node *n) {
    kiln_node *x = n->in[0], *dy = n->in[1];
    kiln_status s = check_dtype(n, x);
    if (s) return s;
    if (x->dtype != dy->dtype || !kiln_shape_equal(x->shape, dy->shape)) {
        char sx[96], sd[96];
        return kiln_node_error(n, x->dtype != dy->dtype ? KILN_DTYPE_MISMATCH : KILN_SHAPE_MISMATCH,
            "'%s' (%s %s) and dy '%s' (%s %s) must have the same dtype and shape", x->name,
            kiln_dtype_name(x->dtype), kiln_shape_str(x->shape, sx, sizeof sx), dy->name,
            kiln_dtype_name(dy->dtype), kiln_shape_str(dy->shape, sd, sizeof sd));
    }
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}

/* ---- builders ---- */

static kiln_node *binary(kiln_graph *g, kiln_op op, kiln_node *a, kiln_node *b) {
    kiln_node *in[2] = { a, b };
    return kiln_node_new(g, op, in, 2, NULL);
}

static kiln_node *unary(kiln_graph *g, kiln_op op, kiln_node *x, double alpha) {
    kiln_attrs at = { 0 };
    at.alpha = alpha;
    return kiln_node_new(g, op, &x, 1, &at);
}

static kiln_node *act_grad(kiln_graph *g, kiln_op op, kiln_node *x, kiln_node *dy, double alpha) {
    kiln_node *in[2] = { x, dy };
    kiln_attrs at = { 0 };
    at.alpha = alpha;
    return kiln_node_new(g, op, in, 2, &at);
}

kiln_node *kiln_add(kiln_graph *g, kiln_node *a, kiln_node *b) { return binary(g, KILN_OP_ADD, a, b); }
kiln_node *kiln_sub(kiln_graph *g, kiln_node *a, kiln_node *b) { return binary(g, KILN_OP_SUB, a, b); }
kiln_node *kiln_mul(kiln_graph *g, kiln_node *a, kiln_node *b) { return binary(g, KILN_OP_MUL, a, b); }
kiln_node *kiln_div(kiln_graph *g, kiln_node *a, kiln_node *b) { return binary(g, KILN_OP_DIV, a, b); }
kiln_node *kiln_maximum(kiln_graph *g, kiln_node *a, kiln_node *b) { return binary(g, KILN_OP_MAXIMUM, a, b); }
kiln_node *kiln_minimum(kiln_graph *g, kiln_node *a, kiln_node *b) { return binary(g, KILN_OP_MINIMUM, a, b); }
kiln_node *kiln_neg(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_NEG, x, 0); }
kiln_node *kiln_exp(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_EXP, x, 0); }
kiln_node *kiln_log(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_LOG, x, 0); }
kiln_node *kiln_sqrt(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_SQRT, x, 0); }
kiln_node *kiln_rsqrt(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_RSQRT, x, 0); }
kiln_node *kiln_square(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_SQUARE, x, 0); }
kiln_node *kiln_pow(kiln_graph *g, kiln_node *x, double exponent) { return unary(g, KILN_OP_POW, x, exponent); }
kiln_node *kiln_abs(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_ABS, x, 0); }
kiln_node *kiln_relu(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_RELU, x, 0); }
kiln_node *kiln_leaky_relu(kiln_graph *g, kiln_node *x, double alpha) { return unary(g, KILN_OP_LEAKY_RELU, x, alpha); }
kiln_node *kiln_elu(kiln_graph *g, kiln_node *x, double alpha) { return unary(g, KILN_OP_ELU, x, alpha); }
kiln_node *kiln_gelu(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_GELU, x, 0); }
kiln_node *kiln_gelu_tanh(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_GELU_TANH, x, 0); }
kiln_node *kiln_sigmoid(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_SIGMOID, x, 0); }
kiln_node *kiln_tanh(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_TANH, x, 0); }
kiln_node *kiln_softplus(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_SOFTPLUS, x, 0); }
kiln_node *kiln_erf(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_ERF, x, 0); }
kiln_node *kiln_swish(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_SWISH, x, 0); }
kiln_node *kiln_clipped_relu(kiln_graph *g, kiln_node *x, double cap) {
    if (!(cap > 0)) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "clipped_relu: cap %g must be > 0", cap); return NULL; }
    return unary(g, KILN_OP_CLIPPED_RELU, x, cap);
}
kiln_node *kiln_hard_sigmoid(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_HARD_SIGMOID, x, 0); }
kiln_node *kiln_hard_swish(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_HARD_SWISH, x, 0); }
kiln_node *kiln_selu(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_SELU, x, 0); }
kiln_node *kiln_softsign(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_SOFTSIGN, x, 0); }
kiln_node *kiln_mish(kiln_graph *g, kiln_node *x) { return unary(g, KILN_OP_MISH, x, 0); }

/* ---- gradients ---- */

/* OK when every requested gradient was built; otherwise the graph's (sticky) error. */
static kiln_status built(kiln_graph *g, kiln_node *const *dx, int n) {
    for (int i = 0; i < n; i++)
        if (!dx[i]) {
            kiln_status s = kiln_graph_status(g);
            return s ? s : KILN_INTERNAL;
        }
    return KILN_OK;
}

/* Integer tensors carry no gradient: leave dx NULL. */
#define FLOAT_OR_NO_GRAD(x) do { if (!kiln_dtype_is_float((x)->dtype)) return KILN_OK; } while (0)

static kiln_node *scal(kiln_graph *g, kiln_node *like, double v) { return kiln_scalar_like(g, like, v); }

static kiln_status grad_add(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    FLOAT_OR_NO_GRAD(n);
    dx[0] = kiln_sum_to(g, dy, n->in[0]->shape);
    dx[1] = kiln_sum_to(g, dy, n->in[1]->shape);
    return built(g, dx, 2);
}

static kiln_status grad_sub(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    FLOAT_OR_NO_GRAD(n);
    dx[0] = kiln_sum_to(g, dy, n->in[0]->shape);
    dx[1] = kiln_neg(g, kiln_sum_to(g, dy, n->in[1]->shape));   /* negate after reducing: fewer elements */
    return built(g, dx, 2);
}

static kiln_status grad_mul(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    FLOAT_OR_NO_GRAD(n);
    kiln_node *a = n->in[0], *b = n->in[1];
    dx[0] = kiln_sum_to(g, kiln_mul(g, dy, b), a->shape);
    dx[1] = kiln_sum_to(g, kiln_mul(g, dy, a), b->shape);
    return built(g, dx, 2);
}

/* y = a / b: da = dy / b, db = -dy * y / b (reuses y instead of recomputing a / b^2). */
static kiln_status grad_div(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    FLOAT_OR_NO_GRAD(n);
    kiln_node *a = n->in[0], *b = n->in[1];
    dx[0] = kiln_sum_to(g, kiln_div(g, dy, b), a->shape);
    dx[1] = kiln_neg(g, kiln_sum_to(g, kiln_div(g, kiln_mul(g, dy, n), b), b->shape));
    return built(g, dx, 2);
}

/* Maximum: b gets dy only where b > a strictly (ReluGrad of b - a selects exactly that, and a NaN
 * difference from equal infinities selects nothing); a gets the rest, so ties go to a. Minimum is
 * the same with a - b. */
static kiln_status grad_minmax(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    FLOAT_OR_NO_GRAD(n);
    kiln_node *a = n->in[0], *b = n->in[1];
    kiln_node *d = n->op == KILN_OP_MAXIMUM ? kiln_sub(g, b, a) : kiln_sub(g, a, b);
    kiln_node *db = act_grad(g, KILN_OP_RELU_GRAD, d, dy, 0);
    dx[0] = kiln_sum_to(g, kiln_sub(g, dy, db), a->shape);
    dx[1] = kiln_sum_to(g, db, b->shape);
    return built(g, dx, 2);
}

static kiln_status grad_unary(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    FLOAT_OR_NO_GRAD(n);
    kiln_node *x = n->in[0], *y = n;
    double alpha = n->attrs.alpha;
    switch (n->op) {
    case KILN_OP_NEG: dx[0] = kiln_neg(g, dy); break;
    case KILN_OP_EXP: dx[0] = kiln_mul(g, dy, y); break;
    case KILN_OP_LOG: dx[0] = kiln_div(g, dy, x); break;
    case KILN_OP_SQRT: dx[0] = kiln_div(g, kiln_mul(g, dy, scal(g, dy, 0.5)), y); break;
    case KILN_OP_RSQRT:   /* d(x^-1/2) = -0.5 y^3 */
        dx[0] = kiln_mul(g, dy, kiln_mul(g, kiln_mul(g, kiln_square(g, y), y), scal(g, dy, -0.5)));
        break;
    case KILN_OP_SQUARE: dx[0] = kiln_mul(g, dy, kiln_mul(g, x, scal(g, x, 2.0))); break;
    case KILN_OP_POW:
        /* special exponents avoid pow(0, negative) = inf turning a zero gradient into NaN */
        if (alpha == 0) dx[0] = kiln_mul(g, dy, scal(g, dy, 0.0));
        else if (alpha == 1) dx[0] = dy;
        else if (alpha == 2) dx[0] = kiln_mul(g, dy, kiln_mul(g, x, scal(g, x, 2.0)));
        else dx[0] = kiln_mul(g, dy, kiln_mul(g, kiln_pow(g, x, alpha - 1), scal(g, x, alpha)));
        break;
    case KILN_OP_ABS: dx[0] = kiln_mul(g, dy, unary(g, KILN_OP_SIGN, x, 0)); break;
    /* through y: relu(x) > 0 exactly when x > 0, and the pre-activation can then die at the relu
     * (written over in place, or never stored when fused into the producing conv/matmul) */
    case KILN_OP_RELU: dx[0] = act_grad(g, KILN_OP_RELU_GRAD, y, dy, 0); break;
    case KILN_OP_LEAKY_RELU: dx[0] = act_grad(g, KILN_OP_LEAKY_RELU_GRAD, x, dy, alpha); break;
    case KILN_OP_ELU: dx[0] = act_grad(g, KILN_OP_ELU_GRAD, x, dy, alpha); break;
    case KILN_OP_GELU: dx[0] = act_grad(g, KILN_OP_GELU_GRAD, x, dy, 0); break;
    case KILN_OP_GELU_TANH: dx[0] = act_grad(g, KILN_OP_GELU_TANH_GRAD, x, dy, 0); break;
    case KILN_OP_SIGMOID: dx[0] = act_grad(g, KILN_OP_SIGMOID_GRAD, y, dy, 0); break;
    case KILN_OP_TANH: dx[0] = act_grad(g, KILN_OP_TANH_GRAD, y, dy, 0); break;
    /* through y as Relu: 0 < y < cap exactly when 0 < x < cap */
    case KILN_OP_CLIPPED_RELU: dx[0] = act_grad(g, KILN_OP_CLIPPED_RELU_GRAD, y, dy, alpha); break;
    case KILN_OP_SWISH: dx[0] = act_grad(g, KILN_OP_SWISH_GRAD, x, dy, 0); break;
    case KILN_OP_HARD_SIGMOID: dx[0] = act_grad(g, KILN_OP_HARD_SIGMOID_GRAD, x, dy, 0); break;
    case KILN_OP_HARD_SWISH: dx[0] = act_grad(g, KILN_OP_HARD_SWISH_GRAD, x, dy, 0); break;
    case KILN_OP_SELU: dx[0] = act_grad(g, KILN_OP_SELU_GRAD, x, dy, 0); break;
    case KILN_OP_SOFTSIGN: dx[0] = act_grad(g, KILN_OP_SOFTSIGN_GRAD, x, dy, 0); break;
    case KILN_OP_MISH: dx[0] = act_grad(g, KILN_OP_MISH_GRAD, x, dy, 0); break;
    case KILN_OP_SOFTPLUS: dx[0] = kiln_mul(g, dy, kiln_sigmoid(g, x)); break;
    case KILN_OP_ERF:     /* 2/sqrt(pi) exp(-x^2) */
        dx[0] = kiln_mul(g, dy, kiln_mul(g, kiln_exp(g, kiln_neg(g, kiln_square(g, x))), scal(g, x, 1.1283791670955126)));
        break;
    default: return kiln_node_error(n, KILN_INTERNAL, "no gradient rule");
    }
    return built(g, dx, 1);
}

/* ---- the op table entries ---- */

#define BINARY_FLAGS KILN_OPF_INPLACE0   /* safe: out[i] reads a[i] (a unbroadcast when sizes match) */
#define UNARY_FLAGS KILN_OPF_INPLACE0
#define AGRAD_FLAGS (KILN_OPF_NO_GRAD | KILN_OPF_INPLACE0)

const kiln_op_def kiln_opdef_add = { "Add", 2, 2, BINARY_FLAGS, infer_binary, grad_add, kiln_ref_binary, NULL };
const kiln_op_def kiln_opdef_sub = { "Sub", 2, 2, BINARY_FLAGS, infer_binary, grad_sub, kiln_ref_binary, NULL };
const kiln_op_def kiln_opdef_mul = { "Mul", 2, 2, BINARY_FLAGS, infer_binary, grad_mul, kiln_ref_binary, NULL };
const kiln_op_def kiln_opdef_div = { "Div", 2, 2, BINARY_FLAGS, infer_binary, grad_div, kiln_ref_binary, NULL };
const kiln_op_def kiln_opdef_maximum = { "Maximum", 2, 2, BINARY_FLAGS, infer_binary, grad_minmax, kiln_ref_binary, NULL };
const kiln_op_def kiln_opdef_minimum = { "Minimum", 2, 2, BINARY_FLAGS, infer_binary, grad_minmax, kiln_ref_binary, NULL };

const kiln_op_def kiln_opdef_neg = { "Neg", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_exp = { "Exp", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_log = { "Log", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_sqrt = { "Sqrt", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_rsqrt = { "Rsqrt", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_square = { "Square", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_pow = { "Pow", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_abs = { "Abs", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_sign = { "Sign", 1, 1, UNARY_FLAGS | KILN_OPF_NO_GRAD, infer_unary, NULL, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_relu = { "Relu", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_leaky_relu = { "LeakyRelu", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_elu = { "Elu", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_gelu = { "Gelu", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_gelu_tanh = { "GeluTanh", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_sigmoid = { "Sigmoid", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_tanh = { "Tanh", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_softplus = { "Softplus", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
const kiln_op_def kiln_opdef_erf = { "Erf", 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };

const kiln_op_def kiln_opdef_relu_grad = { "ReluGrad", 2, 2, AGRAD_FLAGS, infer_act_grad, NULL, kiln_ref_act_grad, NULL };
const kiln_op_def kiln_opdef_leaky_relu_grad = { "LeakyReluGrad", 2, 2, AGRAD_FLAGS, infer_act_grad, NULL, kiln_ref_act_grad, NULL };
const kiln_op_def kiln_opdef_elu_grad = { "EluGrad", 2, 2, AGRAD_FLAGS, infer_act_grad, NULL, kiln_ref_act_grad, NULL };
const kiln_op_def kiln_opdef_gelu_grad = { "GeluGrad", 2, 2, AGRAD_FLAGS, infer_act_grad, NULL, kiln_ref_act_grad, NULL };
const kiln_op_def kiln_opdef_gelu_tanh_grad = { "GeluTanhGrad", 2, 2, AGRAD_FLAGS, infer_act_grad, NULL, kiln_ref_act_grad, NULL };
const kiln_op_def kiln_opdef_sigmoid_grad = { "SigmoidGrad", 2, 2, AGRAD_FLAGS, infer_act_grad, NULL, kiln_ref_act_grad, NULL };
const kiln_op_def kiln_opdef_tanh_grad = { "TanhGrad", 2, 2, AGRAD_FLAGS, infer_act_grad, NULL, kiln_ref_act_grad, NULL };

#define UNARY_DEF(sym, nm) const kiln_op_def sym = { nm, 1, 1, UNARY_FLAGS, infer_unary, grad_unary, kiln_ref_unary, NULL };
#define AGRAD_DEF(sym, nm) const kiln_op_def sym = { nm, 2, 2, AGRAD_FLAGS, infer_act_grad, NULL, kiln_ref_act_grad, NULL };
UNARY_DEF(kiln_opdef_swish, "Swish")
UNARY_DEF(kiln_opdef_clipped_relu, "ClippedRelu")
UNARY_DEF(kiln_opdef_hard_sigmoid, "HardSigmoid")
UNARY_DEF(kiln_opdef_hard_swish, "HardSwish")
UNARY_DEF(kiln_opdef_selu, "Selu")
UNARY_DEF(kiln_opdef_softsign, "Softsign")
UNARY_DEF(kiln_opdef_mish, "Mish")
AGRAD_DEF(kiln_opdef_swish_grad, "SwishGrad")
AGRAD_DEF(kiln_opdef_clipped_relu_grad, "ClippedReluGrad")
AGRAD_DEF(kiln_opdef_hard_sigmoid_grad, "HardSigmoidGrad")
AGRAD_DEF(kiln_opdef_hard_swish_grad, "HardSwishGrad")
AGRAD_DEF(kiln_opdef_selu_grad, "SeluGrad")
AGRAD_DEF(kiln_opdef_softsign_grad, "SoftsignGrad")
AGRAD_DEF(kiln_opdef_mish_grad, "MishGrad")
