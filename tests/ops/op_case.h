/* One conformance case: how to build a valid instance of an op for tests/ops.
 * Every family file tests/ops/cases_<family>.c exports a table of these. The driver runs each
 * case for every dtype in `dtypes` on each backend against ref, and checks gradients with central
 * finite differences (in f64 where the case lists f64). */
#ifndef KILN_OP_CASE_H
#define KILN_OP_CASE_H
#include "ops/op.h"

#define CASE_MAX_IN 8
#define CASE_MAX_EXTRA 4
#define CASE_FLOAT KILN_DTYPE_COUNT   /* in_dtype: "the float dtype under test" */

typedef struct op_case {
    kiln_op op;              /* the op this case covers (the driver checks every op has a case) */
    const char *label;       /* e.g. "matmul 7x5 @ 5x3 trans_b" */
    int n_in;
    kiln_dtype in_dtype[CASE_MAX_IN];   /* CASE_FLOAT, or a fixed dtype (e.g. KILN_I32 labels) */
    kiln_shape in_shape[CASE_MAX_IN];
    double lo[CASE_MAX_IN], hi[CASE_MAX_IN];   /* uniform random range; ints: [lo, hi) */
    /* Builds the op from placeholders x[0..n_in-1] (dtype resolved). May create variables (seeded
     * initializers) for ops that mutate them, and put nodes to fetch after the run in extra[]
     * (e.g. the updated variables). Returns the op's output node. */
    kiln_node *(*build)(kiln_graph *g, kiln_node **x, kiln_node **extra, int *n_extra);
    unsigned dtypes;         /* bitmask (1u << KILN_F32) | ... of float dtypes to run */
    bool grad;               /* check d(sum(out * w))/d(each float input) by finite differences */
    unsigned nograd_inputs;  /* bitmask of float inputs to skip in the gradient check */
    double tol;              /* max normalised |cpu - ref| error; 0 -> default for the dtype */
    double fd_tol;           /* max normalised |analytic - numeric| grad error; 0 -> default */
    bool nonfinite_any;      /* NaN/Inf parity relaxed: every non-finite ref output must be
                                non-finite here too, but a NaN may stand for an Inf and may appear
                                where ref is finite (bf16 kernels that multiply Inf by a zero pad) */
    double gpu_tol;          /* the cuda backend's bound when it differs from tol (0: tol) */
} op_case;

#define DT_F32 (1u << KILN_F32)
#define DT_F64 (1u << KILN_F64)
#define DT_F16 (1u << KILN_F16)
#define DT_BF16 (1u << KILN_BF16)
#define DT_FLOATS (DT_F32 | DT_F64)

/* Each family file defines one of these (name: cases_<family>, n_cases_<family>). */
#define OP_CASES(family) extern const op_case cases_##family[]; extern const int n_cases_##family;
OP_CASES(elementwise) OP_CASES(reduce_shape) OP_CASES(matmul_conv_pool) OP_CASES(norm_loss_optim)
OP_CASES(data) OP_CASES(mixed) OP_CASES(transformer)
#undef OP_CASES
#endif
