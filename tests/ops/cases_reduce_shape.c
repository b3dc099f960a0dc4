/* Conformance cases for the reduction and shape op families (src/ops/reduce.c, shape.c).
 * Max inputs are continuous random values, so ties (where the gradient splits) do not occur and
 * finite differences stay valid. */
#include "op_case.h"

#define F CASE_FLOAT
/* Constant-expression shapes (KILN_SHAPE calls a function, which a static table cannot). */
#define S(...) { (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), { __VA_ARGS__ } }
#define S0 { 0, { 0 } }
#define DT_HALF (DT_F16 | DT_BF16)
#define UNUSED (void)e; (void)ne
#define BUILDER(nm, expr) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return expr; }

/* ---- builders ---- */
static const int ax1[] = { 1 }, ax_m1[] = { -1 }, ax0_m1[] = { 0, -1 }, ax20[] = { 2, 0 }, ax02[] = { 0, 2 };
static const int ax_dup[] = { 1, -2, 1, 1, -2, 1, 1 };   /* 7 entries, one axis: folded by the builder */
BUILDER(sum_all, kiln_reduce_sum(g, x[0], NULL, 0, false))
BUILDER(sum_ax1_keep, kiln_reduce_sum(g, x[0], ax1, 1, true))
BUILDER(sum_ax0_m1, kiln_reduce_sum(g, x[0], ax0_m1, 2, false))
BUILDER(sum_dup, kiln_reduce_sum(g, x[0], ax_dup, 7, false))
BUILDER(mean_all_keep, kiln_reduce_mean(g, x[0], NULL, 0, true))
BUILDER(mean_m1_keep, kiln_reduce_mean(g, x[0], ax_m1, 1, true))
BUILDER(mean_20, kiln_reduce_mean(g, x[0], ax20, 2, false))
BUILDER(max_all, kiln_reduce_max(g, x[0], NULL, 0, false))
BUILDER(max_ax1_keep, kiln_reduce_max(g, x[0], ax1, 1, true))
BUILDER(max_02, kiln_reduce_max(g, x[0], ax02, 2, false))
BUILDER(sum_to_31, kiln_sum_to(g, x[0], KILN_SHAPE(3, 1)))
BUILDER(sum_to_134, kiln_sum_to(g, x[0], KILN_SHAPE(1, 3, 4)))
BUILDER(sum_to_scalar, kiln_sum_to(g, x[0], KILN_SCALAR))
BUILDER(bcast_234, kiln_broadcast_to(g, x[0], KILN_SHAPE(2, 3, 4)))
BUILDER(bcast_scalar, kiln_broadcast_to(g, x[0], KILN_SHAPE(3, 2)))
BUILDER(reshape, kiln_reshape(g, x[0], KILN_SHAPE(2, -1, 3)))
BUILDER(reshape_flat, kiln_reshape(g, x[0], KILN_SHAPE(-1)))
BUILDER(identity, kiln_identity(g, x[0]))
BUILDER(transpose_201, kiln_transpose(g, x[0], (const int[]){ 2, 0, 1 }))
BUILDER(transpose_rev, kiln_transpose(g, x[0], NULL))
BUILDER(concat3_ax1, kiln_concat(g, x, 3, 1))
BUILDER(concat2_ax0, kiln_concat(g, x, 2, 0))
BUILDER(concat2_m1, kiln_concat(g, x, 2, -1))
BUILDER(slice, kiln_slice(g, x[0], (const int64_t[]){ 1, 0, 2 }, (const int64_t[]){ 2, -1, 3 }))
BUILDER(pad, kiln_pad(g, x[0], (const int64_t[]){ 1, 2, 0, 3 }, 0.5))
BUILDER(pad3, kiln_pad(g, x[0], (const int64_t[]){ 0, 1, 2, 0, 1, 1 }, -2.0))
/* cpu_shape.c paths: last axis kept (memcpy runs) or moved (tiles), size-1 and zero-size dims
 * (collapsed / empty), and tensors above its parallel threshold (64K elements, not multiples of 32). */
BUILDER(transpose_102, kiln_transpose(g, x[0], (const int[]){ 1, 0, 2 }))
BUILDER(transpose_0213, kiln_transpose(g, x[0], (const int[]){ 0, 2, 1, 3 }))
BUILDER(transpose_r5, kiln_transpose(g, x[0], (const int[]){ 4, 1, 0, 3, 2 }))
BUILDER(transpose_r5_keep, kiln_transpose(g, x[0], (const int[]){ 0, 2, 1, 3, 4 }))
BUILDER(transpose_021, kiln_transpose(g, x[0], (const int[]){ 0, 2, 1 }))
BUILDER(slice_r1, kiln_slice(g, x[0], (const int64_t[]){ 2 }, (const int64_t[]){ 5 }))
BUILDER(slice_r5, kiln_slice(g, x[0], (const int64_t[]){ 1, 0, 1, 0, 2 }, (const int64_t[]){ 1, -1, 2, 3, 2 }))
BUILDER(slice_empty, kiln_slice(g, x[0], (const int64_t[]){ 1, 2 }, (const int64_t[]){ 0, 3 }))
BUILDER(slice_big, kiln_slice(g, x[0], (const int64_t[]){ 10, 2, 0 }, (const int64_t[]){ 80, 25, -1 }))
BUILDER(pad_r1, kiln_pad(g, x[0], (const int64_t[]){ 2, 3 }, 1.0))
BUILDER(pad_r4_zero, kiln_pad(g, x[0], (const int64_t[]){ 0, 1, 2, 0, 1, 3, 0, 2 }, 0.0))
BUILDER(pad_r5, kiln_pad(g, x[0], (const int64_t[]){ 1, 0, 0, 2, 1, 1, 0, 0, 2, 1 }, 1.5))
/* Placeholders cannot be empty: an empty Slice feeds the op under test. */
BUILDER(transpose_empty, kiln_transpose(g, kiln_slice(g, x[0], (const int64_t[]){ 0, 1, 0 }, (const int64_t[]){ 3, 0, 4 }),
                                        (const int[]){ 2, 0, 1 }))
BUILDER(pad_empty, kiln_pad(g, kiln_slice(g, x[0], (const int64_t[]){ 1, 0 }, (const int64_t[]){ 0, 3 }),
                            (const int64_t[]){ 1, 1, 0, 2 }, 0.5))
BUILDER(concat2_ax1_big, kiln_concat(g, x, 2, 1))
BUILDER(concat3_ax3, kiln_concat(g, x, 3, 3))
static kiln_node *b_concat_empty(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_node *p[3] = { x[0], kiln_slice(g, x[1], (const int64_t[]){ 0, 1 }, (const int64_t[]){ 2, 0 }), x[2] };
    return kiln_concat(g, p, 3, 1);
}
BUILDER(pad_big, kiln_pad(g, x[0], (const int64_t[]){ 2, 3, 0, 1, 4, 5 }, -1.0))
BUILDER(pad_big_zero, kiln_pad(g, x[0], (const int64_t[]){ 0, 0, 3, 0, 0, 7 }, 0.0))
BUILDER(cast_f64, kiln_cast(g, x[0], KILN_F64))
BUILDER(cast_f32, kiln_cast(g, x[0], KILN_F32))
BUILDER(cast_i32, kiln_cast(g, x[0], KILN_I32))
BUILDER(cast_int_f32, kiln_cast(g, x[0], KILN_F32))
BUILDER(bias_add, kiln_bias_add(g, x[0], x[1]))

/* Split into 3 along axis 1, then concatenate the parts in another order (covers kiln_split). */
static kiln_node *b_split(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_node *p[3];
    if (kiln_split(g, x[0], 3, 1, p) != KILN_OK) return NULL;
    kiln_node *q[3] = { p[2], p[0], p[1] };
    return kiln_concat(g, q, 3, 1);
}

/* ---- cases ---- */
#define UN(op_, lbl, sh, fn, dts, gr) { op_, lbl, 1, { F }, { sh }, { -1 }, { 1 }, fn, dts, gr, 0, 0, 0 }

const op_case cases_reduce_shape[] = {
    UN(KILN_OP_REDUCE_SUM, "sum all [3,4,5]", S(3, 4, 5), b_sum_all, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_SUM, "sum axis 1 keepdims [3,4,5]", S(3, 4, 5), b_sum_ax1_keep, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_SUM, "sum axes {0,-1} [3,4,5]", S(3, 4, 5), b_sum_ax0_m1, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_SUM, "sum duplicated axes {1,-2,...} [2,3,4]", S(2, 3, 4), b_sum_dup, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_MEAN, "mean all keepdims [4,6]", S(4, 6), b_mean_all_keep, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_MEAN, "mean axis -1 keepdims [3,4,5]", S(3, 4, 5), b_mean_m1_keep, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_MEAN, "mean axes {2,0} [3,4,5]", S(3, 4, 5), b_mean_20, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_MAX, "max all [3,4,5]", S(3, 4, 5), b_max_all, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_MAX, "max axis 1 keepdims [3,4,5]", S(3, 4, 5), b_max_ax1_keep, DT_FLOATS, true),
    UN(KILN_OP_REDUCE_MAX, "max axes {0,2} [3,4,5]", S(3, 4, 5), b_max_02, DT_FLOATS, true),
    UN(KILN_OP_SUM_TO, "sum_to [2,3,4] -> [3,1]", S(2, 3, 4), b_sum_to_31, DT_FLOATS, true),
    UN(KILN_OP_SUM_TO, "sum_to [2,3,4] -> [1,3,4]", S(2, 3, 4), b_sum_to_134, DT_FLOATS, true),
    UN(KILN_OP_SUM_TO, "sum_to [2,3] -> []", S(2, 3), b_sum_to_scalar, DT_FLOATS, true),
    UN(KILN_OP_BROADCAST_TO, "broadcast_to [3,1] -> [2,3,4]", S(3, 1), b_bcast_234, DT_FLOATS, true),
    UN(KILN_OP_BROADCAST_TO, "broadcast_to [] -> [3,2]", S0, b_bcast_scalar, DT_FLOATS, true),
    UN(KILN_OP_RESHAPE, "reshape [3,4] -> [2,-1,3]", S(3, 4), b_reshape, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_RESHAPE, "reshape [2,3,4] -> [-1]", S(2, 3, 4), b_reshape_flat, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_IDENTITY, "identity [5,3]", S(5, 3), b_identity, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_TRANSPOSE, "transpose [2,3,4] perm {2,0,1}", S(2, 3, 4), b_transpose_201, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_TRANSPOSE, "transpose [2,3,4,5] reversed", S(2, 3, 4, 5), b_transpose_rev, DT_FLOATS | DT_HALF, true),
    { KILN_OP_CONCAT, "concat [2,3] [2,1] [2,4] axis 1", 3, { F, F, F }, { S(2, 3), S(2, 1), S(2, 4) },
      { -1, -1, -1 }, { 1, 1, 1 }, b_concat3_ax1, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_CONCAT, "concat [1,3,2] [3,3,2] axis 0", 2, { F, F }, { S(1, 3, 2), S(3, 3, 2) },
      { -1, -1 }, { 1, 1 }, b_concat2_ax0, DT_FLOATS | DT_HALF, true, 0, 0, 0 },
    { KILN_OP_CONCAT, "concat [2,2,3] [2,2,1] axis -1", 2, { F, F }, { S(2, 2, 3), S(2, 2, 1) },
      { -1, -1 }, { 1, 1 }, b_concat2_m1, DT_FLOATS, true, 0, 0, 0 },
    UN(KILN_OP_SLICE, "slice [4,5,6] begin {1,0,2} size {2,-1,3}", S(4, 5, 6), b_slice, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_SLICE, "split [2,6,2] into 3 on axis 1, reordered", S(2, 6, 2), b_split, DT_FLOATS, true),
    UN(KILN_OP_PAD, "pad [3,4] {1,2,0,3} value 0.5", S(3, 4), b_pad, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_PAD, "pad [2,3,2] {0,1,2,0,1,1} value -2", S(2, 3, 2), b_pad3, DT_FLOATS, true),
    UN(KILN_OP_TRANSPOSE, "transpose [7] (rank 1)", S(7), b_transpose_rev, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_TRANSPOSE, "transpose [5,7] reversed", S(5, 7), b_transpose_rev, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_TRANSPOSE, "transpose [3,4,5] perm {1,0,2}", S(3, 4, 5), b_transpose_102, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_TRANSPOSE, "transpose [2,3,4,5] perm {0,2,1,3}", S(2, 3, 4, 5), b_transpose_0213, DT_FLOATS, true),
    UN(KILN_OP_TRANSPOSE, "transpose [2,3,1,4,5] perm {4,1,0,3,2}", S(2, 3, 1, 4, 5), b_transpose_r5, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_TRANSPOSE, "transpose [2,1,3,2,4] perm {0,2,1,3,4}", S(2, 1, 3, 2, 4), b_transpose_r5_keep, DT_FLOATS, true),
    UN(KILN_OP_TRANSPOSE, "transpose [3,0,4] perm {2,0,1} (empty, sliced from [3,2,4])", S(3, 2, 4), b_transpose_empty, DT_FLOATS, false),
    UN(KILN_OP_TRANSPOSE, "transpose [3,200,130] perm {0,2,1} (large)", S(3, 200, 130), b_transpose_021, DT_F32 | DT_F16, false),
    UN(KILN_OP_TRANSPOSE, "transpose [8,70,16,9] perm {0,2,1,3} (large)", S(8, 70, 16, 9), b_transpose_0213, DT_F32, false),
    UN(KILN_OP_TRANSPOSE, "transpose [300,260] reversed (large)", S(300, 260), b_transpose_rev, DT_F64, false),
    UN(KILN_OP_SLICE, "slice [9] begin {2} size {5}", S(9), b_slice_r1, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_SLICE, "slice [2,3,4,3,5] begin {1,0,1,0,2} size {1,-1,2,3,2}", S(2, 3, 4, 3, 5), b_slice_r5, DT_FLOATS, true),
    UN(KILN_OP_SLICE, "slice [4,5] begin {1,2} size {0,3} (empty)", S(4, 5), b_slice_empty, DT_FLOATS, false),
    UN(KILN_OP_SLICE, "slice [100,30,40] begin {10,2,0} size {80,25,-1} (large)", S(100, 30, 40), b_slice_big, DT_F32 | DT_BF16, false),
    UN(KILN_OP_PAD, "pad [5] {2,3} value 1", S(5), b_pad_r1, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_PAD, "pad [2,3,4,5] {0,1,2,0,1,3,0,2} value 0", S(2, 3, 4, 5), b_pad_r4_zero, DT_FLOATS | DT_HALF, true),
    UN(KILN_OP_PAD, "pad [2,1,3,2,2] {1,0,0,2,1,1,0,0,2,1} value 1.5", S(2, 1, 3, 2, 2), b_pad_r5, DT_FLOATS, true),
    UN(KILN_OP_PAD, "pad [0,3] {1,1,0,2} value 0.5 (empty, sliced from [2,3])", S(2, 3), b_pad_empty, DT_FLOATS, false),
    { KILN_OP_CONCAT, "concat [4] [3] axis 0 (rank 1)", 2, { F, F }, { S(4), S(3) },
      { -1, -1 }, { 1, 1 }, b_concat2_ax0, DT_FLOATS | DT_HALF, true, 0, 0, 0 },
    { KILN_OP_CONCAT, "concat [2,1,3,2,2] [2,1,3,1,2] [2,1,3,3,2] axis 3", 3, { F, F, F },
      { S(2, 1, 3, 2, 2), S(2, 1, 3, 1, 2), S(2, 1, 3, 3, 2) }, { -1, -1, -1 }, { 1, 1, 1 }, b_concat3_ax3,
      DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_CONCAT, "concat [2,3] [2,0] (sliced) [2,2] axis 1", 3, { F, F, F }, { S(2, 3), S(2, 3), S(2, 2) },
      { -1, -1, -1 }, { 1, 1, 1 }, b_concat_empty, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_CONCAT, "concat [70,40,20] [70,30,20] axis 1 (large)", 2, { F, F }, { S(70, 40, 20), S(70, 30, 20) },
      { -1, -1 }, { 1, 1 }, b_concat2_ax1_big, DT_F32 | DT_BF16, false, 0, 0, 0 },
    UN(KILN_OP_PAD, "pad [60,40,30] {2,3,0,1,4,5} value -1 (large)", S(60, 40, 30), b_pad_big, DT_F32 | DT_F16, false),
    UN(KILN_OP_PAD, "pad [70,30,35] {0,0,3,0,0,7} value 0 (large)", S(70, 30, 35), b_pad_big_zero, DT_F32, false),
    UN(KILN_OP_CAST, "cast -> f64 [4,5]", S(4, 5), b_cast_f64, DT_FLOATS | DT_HALF, true),
    /* FD through a narrowing cast is noise-limited, so the f32 -> f64 case checks the cast-back gradient. */
    UN(KILN_OP_CAST, "cast -> f32 [4,5]", S(4, 5), b_cast_f32, DT_F32 | DT_HALF, true),
    UN(KILN_OP_CAST, "cast f32 -> f64 [3,2]", S(3, 2), b_cast_f64, DT_F32, true),
    { KILN_OP_CAST, "cast -> i32 [4,5]", 1, { F }, { S(4, 5) }, { -50 }, { 50 }, b_cast_i32,
      DT_FLOATS | DT_HALF, false, 0, 0, 0 },
    { KILN_OP_CAST, "cast i32 -> f32 [4,5]", 1, { KILN_I32 }, { S(4, 5) }, { -100 }, { 100 }, b_cast_int_f32,
      DT_F32, false, 0, 0, 0 },
    { KILN_OP_BIAS_ADD, "bias_add [2,3,4] + [4]", 2, { F, F }, { S(2, 3, 4), S(4) }, { -1, -1 }, { 1, 1 },
      b_bias_add, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_BIAS_ADD, "bias_add [5] + [5]", 2, { F, F }, { S(5), S(5) }, { -1, -1 }, { 1, 1 },
      b_bias_add, DT_FLOATS, true, 0, 0, 0 },
};
const int n_cases_reduce_shape = (int)(sizeof cases_reduce_shape / sizeof cases_reduce_shape[0]);
