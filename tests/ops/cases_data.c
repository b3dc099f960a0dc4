/* Conformance cases for the data ops (src/ops/data_ops.c): GatherRows and RandomCropFlip. Both
 * are NO_GRAD. RandomCropFlip's draw depends only on its i64 keys input (random integers here),
 * so every backend must give exactly ref's batch (the draw is shared: src/ops/data_ops.h). */
#include "op_case.h"

#define F CASE_FLOAT
#define S(...) { (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), { __VA_ARGS__ } }
/* keys: uniform integers in [0, 2^50) (exact as doubles) */
#define KEYS 1125899906842624.0
#define UNUSED (void)e; (void)ne
#define BUILDER(nm, expr) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return expr; }

/* ---- GatherRows ---- */
BUILDER(gather, kiln_gather_rows(g, x[0], x[1]))
/* fixed i64 indices from a constant: repeats, first and last rows */
static kiln_node *b_gather_const_i64(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    static const int64_t rows[6] = { 9, 0, 3, 3, 7, 1 };
    kiln_tensor *t = kiln_tensor_new(KILN_I64, KILN_SHAPE(6));
    if (!t) return NULL;
    for (int i = 0; i < 6; i++) kiln_tensor_set(t, i, (double)rows[i]);
    kiln_node *idx = kiln_constant(g, t);
    kiln_tensor_free(t);
    return kiln_gather_rows(g, x[0], idx);
}

/* ---- RandomCropFlip: x[1] is the keys [N] i64 ---- */
BUILDER(crop2_flip, kiln_random_crop_flip(g, x[0], x[1], 2, true, true))
BUILDER(crop0_flip, kiln_random_crop_flip(g, x[0], x[1], 0, true, true))
BUILDER(crop3, kiln_random_crop_flip(g, x[0], x[1], 3, false, true))
BUILDER(crop_off, kiln_random_crop_flip(g, x[0], x[1], 2, true, false))
/* one image crop/flipped under two keys (the keys reversed): the difference is the draws' */
static kiln_node *b_crop_two(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_tensor *t = kiln_tensor_new(KILN_I64, KILN_SHAPE(6));
    if (!t) return NULL;
    for (int i = 0; i < 6; i++) kiln_tensor_set(t, i, (double)(5 - i));
    kiln_node *rev = kiln_gather_rows(g, x[1], kiln_constant(g, t));
    kiln_tensor_free(t);
    return kiln_sub(g, kiln_random_crop_flip(g, x[0], x[1], 1, true, true), kiln_random_crop_flip(g, x[0], rev, 1, true, true));
}

const op_case cases_data[] = {
    { KILN_OP_GATHER_ROWS, "gather rows [10,3,2] by i32 [4]", 2, { F, KILN_I32 }, { S(10, 3, 2), S(4) },
      { -2, 0 }, { 2, 10 }, b_gather, DT_FLOATS | DT_F16, false, 0, 0, 0 },
    { KILN_OP_GATHER_ROWS, "gather rows [10,4] by constant i64 [6] (repeats)", 1, { F }, { S(10, 4) },
      { -2 }, { 2 }, b_gather_const_i64, DT_FLOATS | DT_F16, false, 0, 0, 0 },
    { KILN_OP_GATHER_ROWS, "gather i32 labels [10] by i64 [7]", 2, { KILN_I32, KILN_I64 }, { S(10), S(7) },
      { 0, 0 }, { 100, 10 }, b_gather, DT_F32, false, 0, 0, 0 },
    { KILN_OP_GATHER_ROWS, "gather rows [5,3,3,1] by i32 [8]", 2, { F, KILN_I32 }, { S(5, 3, 3, 1), S(8) },
      { -2, 0 }, { 2, 5 }, b_gather, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_RANDOM_CROP_FLIP, "random crop pad 2 + flip [3,6,5,2]", 2, { F, KILN_I64 }, { S(3, 6, 5, 2), S(3) },
      { -2, 0 }, { 2, KEYS },  b_crop2_flip, DT_FLOATS | DT_F16, false, 0, 0, 0 },
    { KILN_OP_RANDOM_CROP_FLIP, "random flip only (pad 0) [4,3,4,3]", 2, { F, KILN_I64 }, { S(4, 3, 4, 3), S(4) },
      { -2, 0 }, { 2, KEYS },  b_crop0_flip, DT_FLOATS | DT_F16, false, 0, 0, 0 },
    { KILN_OP_RANDOM_CROP_FLIP, "random crop pad 3, no flip [5,6,5,1]", 2, { F, KILN_I64 }, { S(5, 6, 5, 1), S(5) },
      { -2, 0 }, { 2, KEYS },  b_crop3, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_RANDOM_CROP_FLIP, "difference of crop/flips under two keys [6,4,4,2]", 2, { F, KILN_I64 }, { S(6, 4, 4, 2), S(6) },
      { -2, 0 }, { 2, KEYS },  b_crop_two, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_IDENTITY, "random crop/flip when not training is identity [2,4,4,3]", 2, { F, KILN_I64 }, { S(2, 4, 4, 3), S(2) },
      { -2, 0 }, { 2, KEYS },  b_crop_off, DT_FLOATS, false, 0, 0, 0 },
};
const int n_cases_data = (int)(sizeof cases_data / sizeof cases_data[0]);
