/* MatMul (2-D) and BatchMatMul (leading dims broadcast): shape inference, gradients, builders. */
#include <stdio.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

/* Both operands: same dtype, numeric. */
static kiln_status check_dtypes(kiln_node *n) {
    kiln_node *a = n->in[0], *b = n->in[1];
    if (a->dtype != b->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "a is %s, b is %s: operands must have the same dtype",
                               kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
    if (a->dtype == KILN_BOOL)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "operands are bool: a numeric dtype is needed");
    if (n->attrs.acc_f32 && a->dtype != KILN_BF16 && a->dtype != KILN_F16)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "operands are %s: f32 accumulation (mixed precision) takes bf16 or f16",
                               kiln_dtype_name(a->dtype));
    return KILN_OK;
}

/* Rows/cols of the matrix part (last two dims) of s as the product sees it. */
static void mat_dims(kiln_shape s, bool trans, int64_t *rows, int64_t *cols) {
    int64_t r = s.dim[s.rank - 2], c = s.dim[s.rank - 1];
    *rows = trans ? c : r;
    *cols = trans ? r : c;
}

static kiln_status inner_mismatch(kiln_node *n, int64_t ka, int64_t kb) {
    char sa[96], sb[96];
    kiln_shape_str(n->in[0]->shape, sa, sizeof sa);
    kiln_shape_str(n->in[1]->shape, sb, sizeof sb);
    return kiln_node_error(n, KILN_SHAPE_MISMATCH, "a is %s%s, b is %s%s: inner dimensions %lld and %lld differ",
                           sa, n->attrs.trans_a ? " (transposed)" : "", sb, n->attrs.trans_b ? " (transposed)" : "",
                           (long long)ka, (long long)kb);
}

static kiln_status matmul_infer(kiln_node *n) {
    kiln_shape as = n->in[0]->shape, bs = n->in[1]->shape;
    if (as.rank != 2 || bs.rank != 2) {
        char sa[96], sb[96];
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "a is %s, b is %s: MatMul takes 2-D matrices (use BatchMatMul for batches)",
                               kiln_shape_str(as, sa, sizeof sa), kiln_shape_str(bs, sb, sizeof sb));
    }
    kiln_status st = check_dtypes(n);
    if (st) return st;
    int64_t m, ka, kb, nn;
    mat_dims(as, n->attrs.trans_a, &m, &ka);
    mat_dims(bs, n->attrs.trans_b, &kb, &nn);
    if (ka != kb) return inner_mismatch(n, ka, kb);
    n->dtype = n->attrs.acc_f32 ? KILN_F32 : n->in[0]->dtype;
    n->shape = KILN_SHAPE(m, nn);
    return KILN_OK;
}

static kiln_status batch_matmul_infer(kiln_node *n) {
    kiln_shape as = n->in[0]->shape, bs = n->in[1]->shape;
    char sa[96], sb[96];
    kiln_shape_str(as, sa, sizeof sa);
    kiln_shape_str(bs, sb, sizeof sb);
    if (as.rank < 2 || bs.rank < 2)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "a is %s, b is %s: both operands need rank >= 2", sa, sb);
    kiln_status st = check_dtypes(n);
    if (st) return st;
    int64_t m, ka, kb, nn;
    mat_dims(as, n->attrs.trans_a, &m, &ka);
    mat_dims(bs, n->attrs.trans_b, &kb, &nn);
    if (ka != kb) return inner_mismatch(n, ka, kb);
    /* Leading (batch) dims broadcast like numpy, right-aligned. */
    int la = as.rank - 2, lb = bs.rank - 2, lo = la > lb ? la : lb;
    kiln_shape out = { lo + 2, { 0 } };
    for (int i = 0; i < lo; i++) {
        int ia = i - (lo - la), ib = i - (lo - lb);
        int64_t da = ia >= 0 ? as.dim[ia] : 1, db = ib >= 0 ? bs.dim[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return kiln_node_error(n, KILN_SHAPE_MISMATCH, "a is %s, b is %s: batch dimensions %lld and %lld do not broadcast",
                                   sa, sb, (long long)da, (long long)db);
        out.dim[i] = da == 1 ? db : da;
    }
    out.dim[lo] = m;
    out.dim[lo + 1] = nn;
    n->dtype = n->in[0]->dtype;
    n->shape = out;
    return KILN_OK;
}

static kiln_status grad_failed(kiln_graph *g) {
    kiln_status s = kiln_graph_status(g);
    return s != KILN_OK ? s : KILN_INTERNAL;
}

typedef kiln_node *(*mm_builder)(kiln_graph *, kiln_node *, kiln_node *, bool, bool);

/* TF's _MatMulGrad: for C = op(A) op(B), each case picks operands and flags so that dA and dB
 * come out in A's and B's stored layout. */
static kiln_status mm_grads(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx, mm_builder mm, mm_builder mb) {
    kiln_node *a = n->in[0], *b = n->in[1];
    bool ta = n->attrs.trans_a, tb = n->attrs.trans_b;
    if (!ta && !tb) {        /* C = A B      */
        dx[0] = mm(g, dy, b, false, true);
        dx[1] = mb(g, a, dy, true, false);
    } else if (ta && !tb) {  /* C = A' B     */
        dx[0] = mm(g, b, dy, false, true);
        dx[1] = mb(g, a, dy, false, false);
    } else if (!ta && tb) {  /* C = A B'     */
        dx[0] = mm(g, dy, b, false, false);
        dx[1] = mb(g, dy, a, true, false);
    } else {                 /* C = A' B'    */
        dx[0] = mm(g, b, dy, true, true);
        dx[1] = mb(g, dy, a, true, true);
    }
    return dx[0] && dx[1] ? KILN_OK : grad_failed(g);
}

static kiln_node *build(kiln_graph *g, kiln_op op, kiln_node *a, kiln_node *b, bool trans_a, bool trans_b, bool acc_f32);

/* Mixed: dy (f32) is cast to the operands' dtype once; both products accumulate in f32 and
 * come back f32, which the Cast before this op passes through to the f32 master values. */
static kiln_node *mm_acc_f32(kiln_graph *g, kiln_node *a, kiln_node *b, bool ta, bool tb) {
    return build(g, KILN_OP_MATMUL, a, b, ta, tb, true);
}

static kiln_node *mm_plain(kiln_graph *g, kiln_node *a, kiln_node *b, bool ta, bool tb) {
    return build(g, KILN_OP_MATMUL, a, b, ta, tb, false);
}

/* Under activation autocast (half output) an operand that is a half cast of an f32 weight still
 * gets its gradient in f32 (acc_f32); the other stays half, like the activations. */
static kiln_status matmul_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *a = n->in[0], *b = n->in[1];
    if (!n->attrs.acc_f32 && a->dtype == KILN_F32) return mm_grads(g, n, dy, dx, kiln_matmul, kiln_matmul);
    if (dy->dtype != a->dtype && !(dy = kiln_cast(g, dy, a->dtype))) return grad_failed(g);
    bool all = n->attrs.acc_f32;
    return mm_grads(g, n, dy, dx, all || kiln_is_half_cast(a) ? mm_acc_f32 : mm_plain, all || kiln_is_half_cast(b) ? mm_acc_f32 : mm_plain);
}

static kiln_status batch_matmul_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_status st = mm_grads(g, n, dy, dx, kiln_batch_matmul, kiln_batch_matmul);
    if (st) return st;
    /* The products have the broadcast batch dims; sum them back down to each operand's shape. */
    for (int i = 0; i < 2; i++)
        if (!kiln_shape_equal(dx[i]->shape, n->in[i]->shape)) {
            dx[i] = kiln_sum_to(g, dx[i], n->in[i]->shape);
            if (!dx[i]) return grad_failed(g);
        }
    return KILN_OK;
}

const kiln_op_def kiln_opdef_matmul = { "MatMul", 2, 2, 0, matmul_infer, matmul_grad, kiln_ref_matmul, NULL };
const kiln_op_def kiln_opdef_batch_matmul = { "BatchMatMul", 2, 2, 0, batch_matmul_infer, batch_matmul_grad,
                                              kiln_ref_batch_matmul, NULL };

static kiln_node *build(kiln_graph *g, kiln_op op, kiln_node *a, kiln_node *b, bool trans_a, bool trans_b, bool acc_f32) {
    if (!g || !a || !b) return NULL;
    kiln_attrs at = { 0 };
    at.trans_a = trans_a;
    at.trans_b = trans_b;
    at.acc_f32 = acc_f32;
    kiln_node *in[2] = { a, b };
    return kiln_node_new(g, op, in, 2, &at);
}

kiln_node *kiln_matmul(kiln_graph *g, kiln_node *a, kiln_node *b, bool trans_a, bool trans_b) {
    bool mixed = kiln_autocast_operands(g, &a, &b);
    return build(g, KILN_OP_MATMUL, a, b, trans_a, trans_b, mixed);
}

kiln_node *kiln_batch_matmul(kiln_graph *g, kiln_node *a, kiln_node *b, bool trans_a, bool trans_b) {
    return build(g, KILN_OP_BATCH_MATMUL, a, b, trans_a, trans_b, false);
}
