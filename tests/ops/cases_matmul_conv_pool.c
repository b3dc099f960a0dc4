/* Conformance cases for the matmul, convolution and pooling op families. Shapes are small (batch 2,
 * 5-7 spatial, 3-6 channels) so ref and finite differences stay fast, yet each case puts a
 * different path under test: transposes, batch broadcast, SAME pads split unevenly, strides that
 * skip input cells, dilation, groups and depthwise. The backprop ops also get cases of their own,
 * built directly with hand-resolved attrs (which checks the SAME arithmetic independently). */
#include "op_case.h"

#define F CASE_FLOAT
/* Constant-expression shapes (KILN_SHAPE calls a function, which a static table cannot). */
#define S(...) { (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), { __VA_ARGS__ } }
#define UNUSED (void)e; (void)ne

/* ---- matmul ---- */
#define MM_BUILDER(nm, fn, ta, tb) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return fn(g, x[0], x[1], ta, tb); }
MM_BUILDER(mm_nn, kiln_matmul, false, false)
MM_BUILDER(mm_tn, kiln_matmul, true, false)
MM_BUILDER(mm_nt, kiln_matmul, false, true)
MM_BUILDER(mm_tt, kiln_matmul, true, true)
MM_BUILDER(bmm_nn, kiln_batch_matmul, false, false)
MM_BUILDER(bmm_nt, kiln_batch_matmul, false, true)
MM_BUILDER(bmm_tt, kiln_batch_matmul, true, true)

/* ---- conv2d ---- */
#define CONV_BUILDER(nm, ...) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { \
        UNUSED; return kiln_conv2d(g, x[0], x[1], &(kiln_conv_params){ __VA_ARGS__ }); }
CONV_BUILDER(conv_same, .padding = KILN_SAME)
CONV_BUILDER(conv_valid_s2, .padding = KILN_VALID, .stride_h = 2, .stride_w = 2)
CONV_BUILDER(conv_dil2, .padding = KILN_SAME, .dilation_h = 2, .dilation_w = 2)
CONV_BUILDER(conv_explicit, .padding = KILN_EXPLICIT, .stride_w = 2, .pad_top = 1, .pad_bottom = 0, .pad_left = 2, .pad_right = 1)
CONV_BUILDER(conv_groups2, .padding = KILN_SAME, .stride_h = 2, .stride_w = 2, .groups = 2)
CONV_BUILDER(conv_depthwise, .padding = KILN_SAME, .groups = 3)

/* Backprop ops built directly: attrs are what kiln_conv2d would resolve, written out by hand. */
static kiln_attrs conv_attrs(int sh, int sw, int dh, int dw, int pt, int pb, int pl, int pr, int groups, kiln_shape s) {
    kiln_attrs at = { 0 };
    at.sh = sh; at.sw = sw; at.dh = dh; at.dw = dw;
    at.pt = pt; at.pb = pb; at.pl = pl; at.pr = pr;
    at.groups = groups;
    at.shape = s;
    return at;
}
/* x [2,7,7,4], w [3,3,2,6], groups 2, stride 2, SAME: out 4 = ceil(7/2), pad total 3*2+3-7 = 2 -> 1, 1. */
static kiln_node *b_bwd_input_s2_g2(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_attrs at = conv_attrs(2, 2, 1, 1, 1, 1, 1, 1, 2, KILN_SHAPE(2, 7, 7, 4));
    return kiln_node_new(g, KILN_OP_CONV2D_BWD_INPUT, x, 2, &at);
}
/* Conv2DTranspose's forward: x [2,3,3,4] through kernel [3,3,2,4], stride 2, SAME -> [2,6,6,2]
 * (kiln_conv2d_transpose); its gradients (Conv2D and Conv2DBackpropFilter) checked by finite
 * differences. */
static kiln_node *b_conv_transpose(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    return kiln_conv2d_transpose(g, x[1], x[0], &(kiln_conv_params){ .stride_h = 2, .stride_w = 2, .padding = KILN_SAME }, 6, 6);
}
/* x [2,6,6,3], w [3,3,3,4], dilation 2, VALID: dilated kernel 5 -> out 2. */
static kiln_node *b_bwd_input_dil2(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_attrs at = conv_attrs(1, 1, 2, 2, 0, 0, 0, 0, 1, KILN_SHAPE(2, 6, 6, 3));
    return kiln_node_new(g, KILN_OP_CONV2D_BWD_INPUT, x, 2, &at);
}
/* x [2,6,6,3], w [3,3,3,4], stride 2, explicit pads (1, 0, 0, 1): out (6+1-3)/2+1 = 3. */
static kiln_node *b_bwd_filter_s2_explicit(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_attrs at = conv_attrs(2, 2, 1, 1, 1, 0, 0, 1, 1, KILN_SHAPE(3, 3, 3, 4));
    return kiln_node_new(g, KILN_OP_CONV2D_BWD_FILTER, x, 2, &at);
}
/* Depthwise with channel multiplier 2: x [2,5,5,4], w [3,3,1,8], groups 4, SAME stride 1: pads 1. */
static kiln_node *b_bwd_filter_depthwise(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_attrs at = conv_attrs(1, 1, 1, 1, 1, 1, 1, 1, 4, KILN_SHAPE(3, 3, 1, 8));
    return kiln_node_new(g, KILN_OP_CONV2D_BWD_FILTER, x, 2, &at);
}

/* Winograd shapes (cpu_winograd.c: stride 1, 3x3 or 5x5, channels a multiple of 16, enough
 * tiles): whole and partial 8x8 tiles, asymmetric pads, each pass checked against ref. */
CONV_BUILDER(conv_wino_explicit, .padding = KILN_EXPLICIT, .pad_top = 1, .pad_bottom = 2, .pad_left = 0, .pad_right = 2)
/* a stride-1 backprop op with pads (top, bottom, left, right) making the shape given */
#define BACKPROP_BUILDER(nm, op, pt, pb, pl, pr, ...) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { \
        UNUSED; kiln_attrs at = conv_attrs(1, 1, 1, 1, pt, pb, pl, pr, 1, KILN_SHAPE(__VA_ARGS__)); \
        return kiln_node_new(g, op, x, 2, &at); }
BACKPROP_BUILDER(wino_bwd_input5, KILN_OP_CONV2D_BWD_INPUT, 2, 2, 2, 2, 2, 12, 12, 16)
BACKPROP_BUILDER(wino_bwd_input5_explicit, KILN_OP_CONV2D_BWD_INPUT, 1, 2, 0, 2, 2, 11, 12, 16)
BACKPROP_BUILDER(wino_bwd_input3, KILN_OP_CONV2D_BWD_INPUT, 1, 1, 1, 1, 2, 12, 12, 16)
BACKPROP_BUILDER(wino_bwd_filter5, KILN_OP_CONV2D_BWD_FILTER, 2, 2, 2, 2, 5, 5, 16, 32)
BACKPROP_BUILDER(wino_bwd_filter5_explicit, KILN_OP_CONV2D_BWD_FILTER, 1, 2, 0, 2, 5, 5, 16, 16)
BACKPROP_BUILDER(wino_bwd_filter3, KILN_OP_CONV2D_BWD_FILTER, 1, 1, 1, 1, 3, 3, 16, 32)
/* 48 -> 80 channels (a 16-wide remainder in the products), VALID and tiny maps: run through
 * Winograd by test_ops_winograd (KILN_CPU_WINOGRAD=1), by oneDNN otherwise */
CONV_BUILDER(conv_valid, .padding = KILN_VALID)
BACKPROP_BUILDER(wino_bwd_input_tiny, KILN_OP_CONV2D_BWD_INPUT, 1, 1, 1, 1, 1, 3, 5, 48)
BACKPROP_BUILDER(wino_bwd_filter_valid, KILN_OP_CONV2D_BWD_FILTER, 0, 0, 0, 0, 5, 5, 48, 80)

/* ---- pooling ---- */
#define POOL_BUILDER(nm, fn, ...) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { \
        UNUSED; return fn(g, x[0], &(kiln_pool_params){ __VA_ARGS__ }); }
POOL_BUILDER(max_3s2_same, kiln_max_pool2d, .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_SAME)
POOL_BUILDER(max_3s2_valid, kiln_max_pool2d, .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_VALID)
POOL_BUILDER(max_2_valid, kiln_max_pool2d, .size_h = 2, .size_w = 2, .padding = KILN_VALID)
POOL_BUILDER(max_2_same, kiln_max_pool2d, .size_h = 2, .size_w = 2, .padding = KILN_SAME)
POOL_BUILDER(avg_3s2_same, kiln_avg_pool2d, .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_SAME)
POOL_BUILDER(avg_3s2_valid, kiln_avg_pool2d, .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_VALID)
POOL_BUILDER(avg_2_same, kiln_avg_pool2d, .size_h = 2, .size_w = 2, .padding = KILN_SAME)
POOL_BUILDER(avg_3x2s1_same, kiln_avg_pool2d, .size_h = 3, .size_w = 2, .stride_h = 1, .stride_w = 1, .padding = KILN_SAME)

static kiln_node *b_gap(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return kiln_global_avg_pool2d(g, x[0]); }

/* MaxPoolGrad needs y = max_pool(x) (its cells must equal cells of x), so y is built in the graph
 * from the x input; inputs are (x, dy). */
static kiln_node *b_max_pool_grad(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_node *y = kiln_max_pool2d(g, x[0], &(kiln_pool_params){ .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_SAME });
    if (!y) return NULL;
    return kiln_node_new(g, KILN_OP_MAX_POOL_GRAD, (kiln_node *[]){ x[0], y, x[1] }, 3, &y->attrs);
}
/* 2x2 windows tiling x (the cpu backend's register path); relu first makes ties (all-zero
 * windows), where the first cell must take dy */
static kiln_node *max_pool_grad_2x2(kiln_graph *g, kiln_node *x, kiln_node *dy) {
    kiln_node *y = kiln_max_pool2d(g, x, &(kiln_pool_params){ .size_h = 2, .size_w = 2, .padding = KILN_VALID });
    if (!y) return NULL;
    return kiln_node_new(g, KILN_OP_MAX_POOL_GRAD, (kiln_node *[]){ x, y, dy }, 3, &y->attrs);
}
static kiln_node *b_max_pool_grad_2x2(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return max_pool_grad_2x2(g, x[0], x[1]); }
/* 3x3 stride 2 SAME over relu(x): ties (zeros) in overlapping windows with padding */
static kiln_node *b_max_pool_grad_3x3_ties(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_node *r = kiln_relu(g, x[0]);
    kiln_node *y = kiln_max_pool2d(g, r, &(kiln_pool_params){ .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_SAME });
    return kiln_node_new(g, KILN_OP_MAX_POOL_GRAD, (kiln_node *[]){ r, y, x[1] }, 3, &y->attrs);
}
static kiln_node *b_max_pool_grad_2x2_ties(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED; return max_pool_grad_2x2(g, kiln_relu(g, x[0]), x[1]);
}
/* x [2,7,7,3], 3x3 stride 2 SAME: out 4, pad total 3*2+3-7 = 2 -> 1, 1. */
static kiln_node *b_avg_pool_grad_same(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_attrs at = { 0 };
    at.kh = at.kw = 3; at.sh = at.sw = 2; at.pt = at.pb = at.pl = at.pr = 1;
    at.padding = KILN_SAME;
    at.shape = KILN_SHAPE(2, 7, 7, 3);
    return kiln_node_new(g, KILN_OP_AVG_POOL_GRAD, x, 1, &at);
}
/* x [2,5,6,3], 2x2 stride 1 VALID: out 4x5. */
static kiln_node *b_avg_pool_grad_valid(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_attrs at = { 0 };
    at.kh = at.kw = 2; at.sh = at.sw = 1;
    at.padding = KILN_VALID;
    at.shape = KILN_SHAPE(2, 5, 6, 3);
    return kiln_node_new(g, KILN_OP_AVG_POOL_GRAD, x, 1, &at);
}

/* ---- cases ---- */
#define C2(op_, lbl, sa, sb, fn, dts, gr) { op_, lbl, 2, { F, F }, { sa, sb }, { -1, -1 }, { 1, 1 }, fn, dts, gr, 0, 0, 0 }
/* Winograd: a NaN or Inf input spreads to its whole 8x8 tile through the transforms (as in cuDNN's
 * Winograd kernels), so outputs ref keeps finite may be NaN; finite inputs are checked as usual. */
#define C2W(op_, lbl, sa, sb, fn) { op_, lbl, 2, { F, F }, { sa, sb }, { -1, -1 }, { 1, 1 }, fn, DT_FLOATS, false, 0, 0, 0, true }
#define C1(op_, lbl, sa, fn, dts, gr) { op_, lbl, 1, { F }, { sa }, { -1 }, { 1 }, fn, dts, gr, 0, 0, 0 }

const op_case cases_matmul_conv_pool[] = {
    C2(KILN_OP_MATMUL, "matmul [7,5] @ [5,3]", S(7, 5), S(5, 3), b_mm_nn, DT_FLOATS | DT_F16 | DT_BF16, true),
    C2(KILN_OP_MATMUL, "matmul [5,7]' @ [5,3] trans_a", S(5, 7), S(5, 3), b_mm_tn, DT_FLOATS, true),
    C2(KILN_OP_MATMUL, "matmul [7,5] @ [3,5]' trans_b", S(7, 5), S(3, 5), b_mm_nt, DT_FLOATS, true),
    C2(KILN_OP_MATMUL, "matmul [5,7]' @ [3,5]' trans_a trans_b", S(5, 7), S(3, 5), b_mm_tt, DT_FLOATS, true),
    C2(KILN_OP_BATCH_MATMUL, "batch_matmul [2,3,4,5] @ [3,5,6] (rank broadcast)", S(2, 3, 4, 5), S(3, 5, 6), b_bmm_nn, DT_FLOATS, true),
    C2(KILN_OP_BATCH_MATMUL, "batch_matmul [2,1,4,5] @ [3,6,5]' trans_b (size-1 broadcast)", S(2, 1, 4, 5), S(3, 6, 5), b_bmm_nt, DT_FLOATS, true),
    C2(KILN_OP_BATCH_MATMUL, "batch_matmul [3,5,4]' @ [2,1,6,5]' trans_a trans_b", S(3, 5, 4), S(2, 1, 6, 5), b_bmm_tt, DT_FLOATS, true),

    C2(KILN_OP_CONV2D, "conv2d [2,6,6,3] * [3,3,3,4] SAME", S(2, 6, 6, 3), S(3, 3, 3, 4), b_conv_same, DT_FLOATS, true),
    C2(KILN_OP_CONV2D, "conv2d [2,7,7,3] * [3,3,3,4] VALID stride 2", S(2, 7, 7, 3), S(3, 3, 3, 4), b_conv_valid_s2, DT_FLOATS, true),
    C2(KILN_OP_CONV2D, "conv2d [2,7,7,3] * [3,3,3,2] SAME dilation 2", S(2, 7, 7, 3), S(3, 3, 3, 2), b_conv_dil2, DT_FLOATS, true),
    C2(KILN_OP_CONV2D, "conv2d [2,5,6,3] * [2,3,3,4] explicit pads (1,0,2,1) stride (1,2)", S(2, 5, 6, 3), S(2, 3, 3, 4), b_conv_explicit, DT_FLOATS, true),
    C2(KILN_OP_CONV2D, "conv2d [2,6,6,4] * [3,3,2,6] groups 2 SAME stride 2 (pads 0,1)", S(2, 6, 6, 4), S(3, 3, 2, 6), b_conv_groups2, DT_FLOATS, true),
    C2(KILN_OP_CONV2D, "conv2d depthwise [2,5,5,3] * [3,3,1,6] groups 3 SAME", S(2, 5, 5, 3), S(3, 3, 1, 6), b_conv_depthwise, DT_FLOATS, true),
    C2(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input w [3,3,2,6], dy [2,4,4,6] groups 2 stride 2 SAME", S(3, 3, 2, 6), S(2, 4, 4, 6), b_bwd_input_s2_g2, DT_FLOATS, false),
    C2(KILN_OP_CONV2D_BWD_INPUT, "conv2d_transpose w [3,3,2,4], x [2,3,3,4] stride 2 SAME -> [2,6,6,2]", S(3, 3, 2, 4), S(2, 3, 3, 4), b_conv_transpose, DT_FLOATS, true),
    C2(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input w [3,3,3,4], dy [2,2,2,4] dilation 2 VALID", S(3, 3, 3, 4), S(2, 2, 2, 4), b_bwd_input_dil2, DT_FLOATS, false),
    C2(KILN_OP_CONV2D_BWD_FILTER, "conv2d_bwd_filter x [2,6,6,3], dy [2,3,3,4] stride 2 pads (1,0,0,1)", S(2, 6, 6, 3), S(2, 3, 3, 4), b_bwd_filter_s2_explicit, DT_FLOATS, false),
    C2(KILN_OP_CONV2D_BWD_FILTER, "conv2d_bwd_filter depthwise x [2,5,5,4], dy [2,5,5,8] groups 4", S(2, 5, 5, 4), S(2, 5, 5, 8), b_bwd_filter_depthwise, DT_FLOATS, false),
    C2W(KILN_OP_CONV2D, "conv2d Winograd [2,12,12,16] * [5,5,16,32] SAME", S(2, 12, 12, 16), S(5, 5, 16, 32), b_conv_same),
    C2W(KILN_OP_CONV2D, "conv2d Winograd [2,11,12,16] * [5,5,16,16] pads (1,2,0,2): partial tiles", S(2, 11, 12, 16), S(5, 5, 16, 16),
       b_conv_wino_explicit),
    C2W(KILN_OP_CONV2D, "conv2d Winograd [2,12,12,16] * [3,3,16,32] SAME", S(2, 12, 12, 16), S(3, 3, 16, 32), b_conv_same),
    C2W(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input Winograd w [5,5,16,32], dy [2,12,12,32] SAME", S(5, 5, 16, 32), S(2, 12, 12, 32),
       b_wino_bwd_input5),
    C2W(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input Winograd w [5,5,16,16], dy [2,10,10,16] pads (1,2,0,2)", S(5, 5, 16, 16), S(2, 10, 10, 16),
       b_wino_bwd_input5_explicit),
    C2W(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input Winograd w [3,3,16,32], dy [2,12,12,32] SAME", S(3, 3, 16, 32), S(2, 12, 12, 32),
       b_wino_bwd_input3),
    C2W(KILN_OP_CONV2D_BWD_FILTER, "conv2d_bwd_filter Winograd x [2,12,12,16], dy [2,12,12,32] 5x5 SAME", S(2, 12, 12, 16), S(2, 12, 12, 32),
       b_wino_bwd_filter5),
    C2W(KILN_OP_CONV2D_BWD_FILTER, "conv2d_bwd_filter Winograd x [2,11,12,16], dy [2,10,10,16] 5x5 pads (1,2,0,2)", S(2, 11, 12, 16),
       S(2, 10, 10, 16), b_wino_bwd_filter5_explicit),
    C2W(KILN_OP_CONV2D_BWD_FILTER, "conv2d_bwd_filter Winograd x [2,12,12,16], dy [2,12,12,32] 3x3 SAME", S(2, 12, 12, 16), S(2, 12, 12, 32),
       b_wino_bwd_filter3),
    C2W(KILN_OP_CONV2D, "conv2d [2,13,11,48] * [5,5,48,80] VALID", S(2, 13, 11, 48), S(5, 5, 48, 80), b_conv_valid),
    C2W(KILN_OP_CONV2D_BWD_INPUT, "conv2d_bwd_input w [3,3,48,80], dy [1,3,5,80] SAME (one partial tile)", S(3, 3, 48, 80), S(1, 3, 5, 80),
        b_wino_bwd_input_tiny),
    C2W(KILN_OP_CONV2D_BWD_FILTER, "conv2d_bwd_filter x [2,13,11,48], dy [2,9,7,80] 5x5 VALID", S(2, 13, 11, 48), S(2, 9, 7, 80),
        b_wino_bwd_filter_valid),

    C1(KILN_OP_MAX_POOL, "max_pool [2,7,7,3] 3x3 stride 2 SAME", S(2, 7, 7, 3), b_max_3s2_same, DT_FLOATS, true),
    C1(KILN_OP_MAX_POOL, "max_pool [2,7,7,3] 3x3 stride 2 VALID", S(2, 7, 7, 3), b_max_3s2_valid, DT_FLOATS, true),
    C1(KILN_OP_MAX_POOL, "max_pool [2,6,6,3] 2x2 VALID", S(2, 6, 6, 3), b_max_2_valid, DT_FLOATS, true),
    C1(KILN_OP_MAX_POOL, "max_pool [2,5,5,3] 2x2 SAME (pads 0,1)", S(2, 5, 5, 3), b_max_2_same, DT_FLOATS, true),
    C2(KILN_OP_MAX_POOL_GRAD, "max_pool_grad x [2,7,7,3], dy [2,4,4,3] 3x3 stride 2 SAME", S(2, 7, 7, 3), S(2, 4, 4, 3), b_max_pool_grad, DT_FLOATS, false),
    C2(KILN_OP_MAX_POOL_GRAD, "max_pool_grad relu(x) [2,9,8,32], dy [2,5,4,32] 3x3 stride 2 SAME (ties, padding)", S(2, 9, 8, 32), S(2, 5, 4, 32),
       b_max_pool_grad_3x3_ties, DT_FLOATS, false),
    C2(KILN_OP_MAX_POOL_GRAD, "max_pool_grad x [2,8,6,32], dy [2,4,3,32] 2x2 VALID (windows tile x)", S(2, 8, 6, 32), S(2, 4, 3, 32),
       b_max_pool_grad_2x2, DT_FLOATS, false),
    C2(KILN_OP_MAX_POOL_GRAD, "max_pool_grad relu(x) [2,8,6,32] 2x2 VALID (ties: the first cell takes dy)", S(2, 8, 6, 32), S(2, 4, 3, 32),
       b_max_pool_grad_2x2_ties, DT_FLOATS, false),
    C1(KILN_OP_AVG_POOL, "avg_pool [2,7,7,3] 3x3 stride 2 SAME", S(2, 7, 7, 3), b_avg_3s2_same, DT_FLOATS, true),
    C1(KILN_OP_AVG_POOL, "avg_pool [2,7,7,3] 3x3 stride 2 VALID", S(2, 7, 7, 3), b_avg_3s2_valid, DT_FLOATS, true),
    C1(KILN_OP_AVG_POOL, "avg_pool [2,5,5,3] 2x2 SAME (pads 0,1)", S(2, 5, 5, 3), b_avg_2_same, DT_FLOATS, true),
    C1(KILN_OP_AVG_POOL, "avg_pool [2,5,6,3] 3x2 stride 1 SAME", S(2, 5, 6, 3), b_avg_3x2s1_same, DT_FLOATS, true),
    C1(KILN_OP_AVG_POOL_GRAD, "avg_pool_grad dy [2,4,4,3] -> [2,7,7,3] 3x3 stride 2 SAME", S(2, 4, 4, 3), b_avg_pool_grad_same, DT_FLOATS, false),
    C1(KILN_OP_AVG_POOL_GRAD, "avg_pool_grad dy [2,4,5,3] -> [2,5,6,3] 2x2 stride 1 VALID", S(2, 4, 5, 3), b_avg_pool_grad_valid, DT_FLOATS, false),
    C1(KILN_OP_GLOBAL_AVG_POOL, "global_avg_pool [2,5,6,3]", S(2, 5, 6, 3), b_gap, DT_FLOATS, true),
};
const int n_cases_matmul_conv_pool = (int)(sizeof cases_matmul_conv_pool / sizeof cases_matmul_conv_pool[0]);
