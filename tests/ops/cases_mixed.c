/* Conformance cases for mixed precision (the precision policy's ops): Cast between f32 and
 * bf16/f16, and MatMul / Conv2D / its two backprops with acc_f32 (bf16 or f16 operands, f32
 * accumulation, f32 output). Shapes are large enough for oneDNN's blocked bf16 kernels (channels
 * 16 and 32) yet fast on ref.
 * Tolerance of the acc_f32 cases: 1e-4 (normalised), f32's: both backends read the same half
 * operands and a product of two bf16 (or f16) values is exact in f32, so only the order and
 * precision of the f32 sums differ from ref's double sums. Casts are exact (tolerance 0). */
#include "op_case.h"

#define F CASE_FLOAT
#define S(...) { (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), { __VA_ARGS__ } }
#define UNUSED (void)e; (void)ne

static kiln_node *b_cast_bf16(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return kiln_cast(g, x[0], KILN_BF16); }
static kiln_node *b_cast_f16(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return kiln_cast(g, x[0], KILN_F16); }

static kiln_node *mm(kiln_graph *g, kiln_node **x, bool ta, bool tb) {
    kiln_attrs at = { 0 };
    at.trans_a = ta; at.trans_b = tb; at.acc_f32 = true;
    return kiln_node_new(g, KILN_OP_MATMUL, x, 2, &at);
}
static kiln_node *b_mm_nn(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return mm(g, x, false, false); }
static kiln_node *b_mm_tn(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return mm(g, x, true, false); }
static kiln_node *b_mm_nt(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return mm(g, x, false, true); }
static kiln_node *b_mm_tt(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return mm(g, x, true, true); }

/* Conv attrs written out by hand (as kiln_conv2d resolves them), acc_f32 set. */
static kiln_node *conv(kiln_graph *g, kiln_op op, kiln_node **x, int s, int pad, int groups, kiln_shape shape) {
    kiln_attrs at = { 0 };
    at.sh = at.sw = s; at.dh = at.dw = 1;
    at.pt = at.pb = at.pl = at.pr = pad;
    at.groups = groups;
    at.shape = shape;
    at.acc_f32 = true;
    return kiln_node_new(g, op, x, 2, &at);
}
/* x [4,9,9,16] * w [3,3,16,32], SAME stride 1 (pads 1) -> [4,9,9,32] */
static kiln_node *b_conv_same(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return conv(g, KILN_OP_CONV2D, x, 1, 1, 1, KILN_SHAPE(0));
}
/* x [4,9,9,16] * w [3,3,8,32] groups 2, SAME stride 2 (out 5, pads 1, 1) -> [4,5,5,32] */
static kiln_node *b_conv_s2_g2(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return conv(g, KILN_OP_CONV2D, x, 2, 1, 2, KILN_SHAPE(0));
}
/* (w [3,3,16,32], dy [4,9,9,32]) -> dx [4,9,9,16] */
static kiln_node *b_bwd_input(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return conv(g, KILN_OP_CONV2D_BWD_INPUT, x, 1, 1, 1, KILN_SHAPE(4, 9, 9, 16));
}
/* (w [3,3,8,32], dy [4,5,5,32]) groups 2 stride 2 -> dx [4,9,9,16] */
static kiln_node *b_bwd_input_s2_g2(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return conv(g, KILN_OP_CONV2D_BWD_INPUT, x, 2, 1, 2, KILN_SHAPE(4, 9, 9, 16));
}
/* (x [4,9,9,16], dy [4,9,9,32]) -> dw [3,3,16,32] */
static kiln_node *b_bwd_filter(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return conv(g, KILN_OP_CONV2D_BWD_FILTER, x, 1, 1, 1, KILN_SHAPE(3, 3, 16, 32));
}
/* (x [4,9,9,16], dy [4,5,5,32]) groups 2 stride 2 -> dw [3,3,8,32] */
static kiln_node *b_bwd_filter_s2_g2(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return conv(g, KILN_OP_CONV2D_BWD_FILTER, x, 2, 1, 2, KILN_SHAPE(3, 3, 8, 32));
}

/* AllFinite over two inputs of different sizes; the NaN/Inf pass makes it 0 */
static kiln_node *b_all_finite(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return kiln_all_finite(g, x, 2); }
/* 11 inputs: two AllFinite nodes combined with Minimum */
static kiln_node *b_all_finite_11(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_node *xs[11];
    for (int i = 0; i < 11; i++) xs[i] = i == 10 ? x[0] : kiln_scalar_like(g, x[0], i);
    return kiln_all_finite(g, xs, 11);
}
/* scale 1024, good 1999 of 2000: a finite step doubles the scale; the NaN/Inf pass halves it */
static kiln_node *update_case(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne, int interval) {
    kiln_node *scale = kiln_variable_trainable(g, "scale", KILN_F32, KILN_SCALAR, kiln_init_constant(1024), false);
    kiln_node *good = kiln_variable_trainable(g, "good", KILN_F32, KILN_SCALAR, kiln_init_constant(1999), false);
    kiln_node *skipped = kiln_variable_trainable(g, "skipped", KILN_F32, KILN_SCALAR, kiln_init_constant(3), false);
    kiln_node *u = kiln_loss_scale_update(g, scale, good, skipped, kiln_all_finite(g, x, 1), interval);
    e[0] = scale; e[1] = good; e[2] = skipped;
    *ne = 3;
    return u;
}
static kiln_node *b_update_grow(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { return update_case(g, x, e, ne, 2000); }
static kiln_node *b_update_count(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { return update_case(g, x, e, ne, 5000); }

/* bf16 activations (mixed_bfloat16): products with bf16 outputs, and a convolution with its
 * bias, which the cpu backend fuses into oneDNN's kernel (one rounding where ref rounds the
 * convolution and then the bias add: hence a tolerance of about two bf16 ulps). A fused relu is
 * left out here: oneDNN's relu post-op maps NaN to 0 (SEMANTICS.md), which the NaN pass would flag. */
static kiln_node *conv_plain(kiln_graph *g, kiln_op op, kiln_node **x, int s, int pad, kiln_shape shape) {
    kiln_attrs at = { 0 };
    at.sh = at.sw = s; at.dh = at.dw = 1;
    at.pt = at.pb = at.pl = at.pr = pad;
    at.groups = 1;
    at.shape = shape;
    return kiln_node_new(g, op, x, 2, &at);
}
static kiln_node *b_conv_bias(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return kiln_bias_add(g, conv_plain(g, KILN_OP_CONV2D, x, 1, 1, KILN_SHAPE(0)), x[2]);
}
static kiln_node *b_conv_half(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return conv_plain(g, KILN_OP_CONV2D, x, 1, 1, KILN_SHAPE(0)); }
static kiln_node *b_bwd_input_half(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return conv_plain(g, KILN_OP_CONV2D_BWD_INPUT, x, 1, 1, KILN_SHAPE(4, 9, 9, 16));
}
static kiln_node *b_mm_half(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return kiln_node_new(g, KILN_OP_MATMUL, x, 2, NULL); }
static kiln_node *b_max_pool_grad_tiles(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_node *y = kiln_max_pool2d(g, x[0], &(kiln_pool_params){ .size_h = 2, .size_w = 2, .padding = KILN_VALID });
    kiln_attrs at = y->attrs;
    return kiln_node_new(g, KILN_OP_MAX_POOL_GRAD, (kiln_node *[]){ x[0], y, x[1] }, 3, &at);
}
#define BF16_ULPS 8e-3
#define CB(op_, lbl, n, sa, sb, sc, fn) { op_, lbl, n, { F, F, F }, { sa, sb, sc }, { -1, -1, -1 }, { 1, 1, 1 }, fn, DT_BF16, false, 0, BF16_ULPS, 0, true, 0 }

#define HALF (DT_F16 | DT_BF16)
#define MIXED_TOL 1e-4
/* nonfinite_any: oneDNN's bf16 backward-weights kernel runs over zero-padded rows of dy, so an
 * Inf input gives NaN (Inf * 0) in taps where ref, which skips pads, is finite. A step with an Inf
 * is non-finite either way (and skipped under loss scaling); finite inputs are checked exactly. */
#define C2(op_, lbl, sa, sb, fn) { op_, lbl, 2, { F, F }, { sa, sb }, { -1, -1 }, { 1, 1 }, fn, HALF, false, 0, MIXED_TOL, 0, true, 0 }
/* cuDNN has no half-in / f32-out convolution: the cuda kernel accumulates in f32 but rounds the
 * result to the compute dtype before widening it, so its bound is that rounding: 2^-8 for bf16
 * (8 significant bits), 2^-11 for f16 (11 bits), relative to the largest output */
#define C2_CONV(op_, lbl, sa, sb, fn) \
    { op_, lbl " (bf16)", 2, { F, F }, { sa, sb }, { -1, -1 }, { 1, 1 }, fn, DT_BF16, false, 0, MIXED_TOL, 0, true, 4e-3 }, \
    { op_, lbl " (f16)", 2, { F, F }, { sa, sb }, { -1, -1 }, { 1, 1 }, fn, DT_F16, false, 0, MIXED_TOL, 0, true, 5e-4 }

const op_case cases_mixed[] = {
    { KILN_OP_ALL_FINITE, "all_finite [37,29], [5]", 2, { F, F }, { S(37, 29), S(5) }, { -1e30, -1 }, { 1e30, 1 }, b_all_finite,
      DT_FLOATS | HALF, false, 0, 0, 0 },
    { KILN_OP_ALL_FINITE, "all_finite of 11 tensors", 1, { F }, { S(7, 3) }, { -1 }, { 1 }, b_all_finite_11, DT_F32, false, 0, 0, 0 },
    { KILN_OP_LOSS_SCALE_UPDATE, "loss_scale_update: growth at 2000 good steps (NaN pass: halve, count)", 1, { F }, { S(4, 3) },
      { -1 }, { 1 }, b_update_grow, DT_F32, false, 0, 0, 0 },
    { KILN_OP_LOSS_SCALE_UPDATE, "loss_scale_update: count a good step", 1, { F }, { S(4, 3) }, { -1 }, { 1 }, b_update_count,
      DT_F32, false, 0, 0, 0 },
    /* f32 -> half: round to nearest even; f16 overflows to +-inf past 65520 and flushes tiny values */
    { KILN_OP_CAST, "cast f32 -> bf16 [37,29]", 1, { KILN_F32 }, { S(37, 29) }, { -3 }, { 3 }, b_cast_bf16, DT_F32, false, 0, 1e-300, 0 },
    { KILN_OP_CAST, "cast f32 -> f16 [37,29]", 1, { KILN_F32 }, { S(37, 29) }, { -3 }, { 3 }, b_cast_f16, DT_F32, false, 0, 1e-300, 0 },
    { KILN_OP_CAST, "cast f32 -> f16 [37,29] range +-1e5 (overflow to inf)", 1, { KILN_F32 }, { S(37, 29) }, { -1e5 }, { 1e5 },
      b_cast_f16, DT_F32, false, 0, 1e-300, 0 },
    { KILN_OP_CAST, "cast f32 -> f16 [37,29] range +-1e-6 (subnormals)", 1, { KILN_F32 }, { S(37, 29) }, { -1e-6 }, { 1e-6 },
      b_cast_f16, DT_F32, false, 0, 1e-300, 0 },
    C2(KILN_OP_MATMUL, "matmul acc_f32 [33,70] @ [70,17]", S(33, 70), S(70, 17), b_mm_nn),
    C2(KILN_OP_MATMUL, "matmul acc_f32 [70,33]' @ [70,17] trans_a", S(70, 33), S(70, 17), b_mm_tn),
    C2(KILN_OP_MATMUL, "matmul acc_f32 [33,70] @ [17,70]' trans_b", S(33, 70), S(17, 70), b_mm_nt),
    C2(KILN_OP_MATMUL, "matmul acc_f32 [70,33]' @ [17,70]' trans_a trans_b", S(70, 33), S(17, 70), b_mm_tt),
    C2_CONV(KILN_OP_CONV2D, "conv2d acc_f32 [4,9,9,16] * [3,3,16,32] SAME", S(4, 9, 9, 16), S(3, 3, 16, 32), b_conv_same),
    C2_CONV(KILN_OP_CONV2D, "conv2d acc_f32 [4,9,9,16] * [3,3,8,32] groups 2 stride 2", S(4, 9, 9, 16), S(3, 3, 8, 32), b_conv_s2_g2),
    C2_CONV(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input acc_f32 w [3,3,16,32], dy [4,9,9,32]", S(3, 3, 16, 32), S(4, 9, 9, 32), b_bwd_input),
    C2_CONV(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input acc_f32 w [3,3,8,32], dy [4,5,5,32] groups 2 stride 2", S(3, 3, 8, 32), S(4, 5, 5, 32),
       b_bwd_input_s2_g2),
    C2_CONV(KILN_OP_CONV2D_BWD_FILTER, "conv2d_bwd_filter acc_f32 x [4,9,9,16], dy [4,9,9,32]", S(4, 9, 9, 16), S(4, 9, 9, 32), b_bwd_filter),
    C2_CONV(KILN_OP_CONV2D_BWD_FILTER, "conv2d_bwd_filter acc_f32 x [4,9,9,16], dy [4,5,5,32] groups 2 stride 2", S(4, 9, 9, 16), S(4, 5, 5, 32),
       b_bwd_filter_s2_g2),
    CB(KILN_OP_CONV2D, "conv2d bf16 out + bias (fused on cpu) [4,9,9,16] * [3,3,16,32]", 3, S(4, 9, 9, 16), S(3, 3, 16, 32), S(32),
       b_conv_bias),
    CB(KILN_OP_CONV2D, "conv2d bf16 out + bias, 3 channels in [2,8,8,3] * [3,3,3,16]", 3, S(2, 8, 8, 3), S(3, 3, 3, 16), S(16), b_conv_bias),
    CB(KILN_OP_CONV2D, "conv2d bf16 out [4,9,9,16] * [3,3,16,32]", 2, S(4, 9, 9, 16), S(3, 3, 16, 32), S(1), b_conv_half),
    CB(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input bf16 out w [3,3,16,32], dy [4,9,9,32]", 2, S(3, 3, 16, 32), S(4, 9, 9, 32), S(1),
       b_bwd_input_half),
    CB(KILN_OP_MATMUL, "matmul bf16 out [33,70] @ [70,17]", 2, S(33, 70), S(70, 17), S(1), b_mm_half),
    CB(KILN_OP_MAX_POOL_GRAD, "max_pool_grad bf16 2x2 windows tiling x [2,8,8,32], dy [2,4,4,32]", 2, S(2, 8, 8, 32), S(2, 4, 4, 32), S(1),
       b_max_pool_grad_tiles),
};
const int n_cases_mixed = (int)(sizeof cases_mixed / sizeof cases_mixed[0]);
