/* Shape ops: Reshape, Identity, Transpose, ConcatV2, Slice, Pad, Cast, BiasAdd — shape inference,
 * gradients and builders. Kernels: src/backend/ref/shape.c. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "core/checked.h"
#include "ops/op.h"
#include "ops/ref_kernels.h"

#define SHAPE_STR(s, buf) kiln_shape_str((s), (buf), sizeof(buf))

static kiln_status grad_done(kiln_graph *g, kiln_node *dx) {
    if (dx) return KILN_OK;
    kiln_status s = kiln_graph_status(g);
    return s != KILN_OK ? s : KILN_INTERNAL;
}

static bool is_float(const kiln_node *x) { return kiln_dtype_is_float(x->dtype); }

/* "[a, b, c]" for an int64 array of length rank (begin / pads in messages). */
static char *dims_str(const int64_t *v, int rank, char *buf, size_t n) {
    return kiln_shape_str(kiln_shape_make(v, rank), buf, n);
}

/* ---- Reshape / Identity ---- */

/* Resolves the one -1 and stores the resolved shape back, so kernels never see it. */
static kiln_status reshape_infer(kiln_node *n) {
    const kiln_node *x = n->in[0];
    kiln_shape s = n->attrs.shape;
    char xs[96], ts[96];
    if (s.rank < 0 || s.rank > KILN_MAX_DIMS)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "target rank %d outside 0..%d", s.rank, KILN_MAX_DIMS);
    int unknown = -1;
    int64_t known = 1, total = kiln_shape_numel(x->shape);
    for (int d = 0; d < s.rank; d++) {
        if (s.dim[d] == -1) {
            if (unknown >= 0)
                return kiln_node_error(n, KILN_INVALID_ARGUMENT, "target shape %s has more than one -1", SHAPE_STR(s, ts));
            unknown = d;
        } else if (s.dim[d] < 0) {
            return kiln_node_error(n, KILN_INVALID_ARGUMENT, "target shape %s has a negative dimension", SHAPE_STR(s, ts));
        } else if (!kiln_mul_i64(known, s.dim[d], &known)) {
            return kiln_node_error(n, KILN_INVALID_ARGUMENT, "target shape %s has more elements than an int64 counts",
                                   SHAPE_STR(s, ts));
        }
    }
    if (unknown >= 0) {
        if (known == 0 || total % known != 0)
            return kiln_node_error(n, KILN_SHAPE_MISMATCH, "cannot reshape '%s' of shape %s (%lld elements) to %s: "
                                   "the -1 cannot be inferred", x->name, SHAPE_STR(x->shape, xs),
                                   (long long)total, SHAPE_STR(s, ts));
        s.dim[unknown] = total / known;
    } else if (known != total) {
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "cannot reshape '%s' of shape %s (%lld elements) to %s (%lld elements)",
                               x->name, SHAPE_STR(x->shape, xs), (long long)total, SHAPE_STR(s, ts), (long long)known);
    }
    n->attrs.shape = s;
    n->dtype = x->dtype;
    n->shape = s;
    return KILN_OK;
}

static kiln_status reshape_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    if (!is_float(n->in[0])) return KILN_OK;
    dx[0] = kiln_reshape(g, dy, n->in[0]->shape);
    return grad_done(g, dx[0]);
}

static kiln_status identity_infer(kiln_node *n) {
    n->dtype = n->in[0]->dtype;
    n->shape = n->in[0]->shape;
    return KILN_OK;
}

static kiln_status identity_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    (void)g;
    if (is_float(n->in[0])) dx[0] = dy;
    return KILN_OK;
}

kiln_node *kiln_reshape(kiln_graph *g, kiln_node *x, kiln_shape shape) {
    kiln_attrs a = { 0 };
    a.shape = shape;
    return kiln_node_new(g, KILN_OP_RESHAPE, &x, 1, &a);
}

kiln_node *kiln_identity(kiln_graph *g, kiln_node *x) {
    return kiln_node_new(g, KILN_OP_IDENTITY, &x, 1, NULL);
}

/* ---- Transpose ---- */

static kiln_status transpose_infer(kiln_node *n) {
    const kiln_node *x = n->in[0];
    int r = x->shape.rank;
    unsigned seen = 0;
    char xs[96];
    for (int d = 0; d < r; d++) {
        int p = n->attrs.perm[d];
        if (p < 0 || p >= r || (seen >> p & 1)) {
            char ps[128];
            size_t k = 0;
            for (int i = 0; i < r && k < sizeof ps; i++)
                k += (size_t)snprintf(ps + k, sizeof ps - k, i ? ", %d" : "%d", n->attrs.perm[i]);
            return kiln_node_error(n, KILN_INVALID_ARGUMENT, "perm [%s] is not a permutation of 0..%d for input '%s' of shape %s",
                                   ps, r - 1, x->name, SHAPE_STR(x->shape, xs));
        }
        seen |= 1u << p;
    }
    for (int d = r; d < KILN_MAX_DIMS; d++) n->attrs.perm[d] = 0;
    n->dtype = x->dtype;
    n->shape.rank = r;
    for (int d = 0; d < r; d++) n->shape.dim[d] = x->shape.dim[n->attrs.perm[d]];
    return KILN_OK;
}

static kiln_status transpose_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    if (!is_float(n->in[0])) return KILN_OK;
    int inv[KILN_MAX_DIMS] = { 0 };
    for (int d = 0; d < n->shape.rank; d++) inv[n->attrs.perm[d]] = d;
    dx[0] = kiln_transpose(g, dy, inv);
    return grad_done(g, dx[0]);
}

/* perm NULL reverses the dims (numpy's default). */
kiln_node *kiln_transpose(kiln_graph *g, kiln_node *x, const int *perm) {
    if (!x) return kiln_node_new(g, KILN_OP_TRANSPOSE, &x, 1, NULL);
    kiln_attrs a = { 0 };
    int r = x->shape.rank;
    for (int d = 0; d < r; d++) a.perm[d] = perm ? perm[d] : r - 1 - d;
    return kiln_node_new(g, KILN_OP_TRANSPOSE, &x, 1, &a);
}

/* ---- ConcatV2 ---- */

static kiln_status concat_infer(kiln_node *n) {
    const kiln_node *x0 = n->in[0];
    int r = x0->shape.rank;
    char s0[96], si[96];
    if (r == 0)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "cannot concatenate scalars ('%s' has shape [])", x0->name);
    int axis = n->attrs.axis < 0 ? n->attrs.axis + r : n->attrs.axis;
    if (axis < 0 || axis >= r)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "axis %d out of range for inputs of rank %d", n->attrs.axis, r);
    kiln_shape out = x0->shape;
    out.dim[axis] = 0;
    for (int i = 0; i < n->n_in; i++) {
        const kiln_node *xi = n->in[i];
        if (xi->dtype != x0->dtype)
            return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input %d '%s' is %s but input 0 '%s' is %s", i, xi->name,
                                   kiln_dtype_name(xi->dtype), x0->name, kiln_dtype_name(x0->dtype));
        bool ok = xi->shape.rank == r;
        for (int d = 0; ok && d < r; d++)
            if (d != axis && xi->shape.dim[d] != x0->shape.dim[d]) ok = false;
        if (!ok)
            return kiln_node_error(n, KILN_SHAPE_MISMATCH, "input %d '%s' of shape %s does not match input 0 '%s' of shape %s "
                                   "outside axis %d", i, xi->name, SHAPE_STR(xi->shape, si), x0->name,
                                   SHAPE_STR(x0->shape, s0), axis);
        out.dim[axis] += xi->shape.dim[axis];
    }
    n->attrs.axis = axis;
    n->dtype = x0->dtype;
    n->shape = out;
    return KILN_OK;
}

/* dx[i] = the slice of dy that input i filled. */
static kiln_status concat_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    int axis = n->attrs.axis;
    int64_t begin[KILN_MAX_DIMS] = { 0 };
    for (int i = 0; i < n->n_in; i++) {
        const kiln_node *xi = n->in[i];
        if (is_float(xi)) {
            dx[i] = n->n_in == 1 ? dy : kiln_slice(g, dy, begin, xi->shape.dim);
            if (!dx[i]) return grad_done(g, NULL);
        }
        begin[axis] += xi->shape.dim[axis];
    }
    return KILN_OK;
}

kiln_node *kiln_concat(kiln_graph *g, kiln_node *const *xs, int n, int axis) {
    if (!g) return NULL;
    if (!xs || n < 1) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "ConcatV2: needs at least one input (got %d)", xs ? n : 0);
        return NULL;
    }
    kiln_attrs a = { 0 };
    a.axis = axis;
    return kiln_node_new(g, KILN_OP_CONCAT, xs, n, &a);
}

/* ---- Slice / Split ---- */

/* attrs.shape is the output size; a -1 left in it (direct kiln_node_new callers) means "to the end". */
static kiln_status slice_infer(kiln_node *n) {
    const kiln_node *x = n->in[0];
    kiln_attrs *a = &n->attrs;
    int r = x->shape.rank;
    char xs[96], bs[96], ss[96];
    if (a->shape.rank != r)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "size has rank %d but input '%s' of shape %s has rank %d",
                               a->shape.rank, x->name, SHAPE_STR(x->shape, xs), r);
    for (int d = 0; d < r; d++)
        if (a->shape.dim[d] == -1) a->shape.dim[d] = x->shape.dim[d] - a->begin[d];
    for (int d = 0; d < r; d++)
        if (a->begin[d] < 0 || a->shape.dim[d] < 0 || a->begin[d] > x->shape.dim[d] - a->shape.dim[d])
            return kiln_node_error(n, KILN_SHAPE_MISMATCH, "begin %s size %s out of range for input '%s' of shape %s (dim %d)",
                                   dims_str(a->begin, r, bs, sizeof bs), SHAPE_STR(a->shape, ss), x->name,
                                   SHAPE_STR(x->shape, xs), d);
    for (int d = r; d < KILN_MAX_DIMS; d++) a->begin[d] = 0;
    n->dtype = x->dtype;
    n->shape = a->shape;
    return KILN_OK;
}

/* The gradient of a slice is dy padded back with zeros. */
static kiln_status slice_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    const kiln_node *x = n->in[0];
    if (!is_float(x)) return KILN_OK;
    kiln_attrs a = { 0 };
    for (int d = 0; d < x->shape.rank; d++) {
        a.begin[d] = n->attrs.begin[d];
        a.end[d] = x->shape.dim[d] - n->attrs.begin[d] - n->shape.dim[d];
    }
    dx[0] = kiln_shape_equal(x->shape, n->shape) ? dy : kiln_node_new(g, KILN_OP_PAD, &dy, 1, &a);
    return grad_done(g, dx[0]);
}

kiln_node *kiln_slice(kiln_graph *g, kiln_node *x, const int64_t *begin, const int64_t *size) {
    if (!x) return kiln_node_new(g, KILN_OP_SLICE, &x, 1, NULL);
    int r = x->shape.rank;
    if (r > 0 && (!begin || !size)) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "Slice of '%s': NULL begin or size", x->name);
        return NULL;
    }
    kiln_attrs a = { 0 };
    a.shape.rank = r;
    for (int d = 0; d < r; d++) {
        a.begin[d] = begin[d];
        a.shape.dim[d] = size[d] == -1 ? x->shape.dim[d] - begin[d] : size[d];
    }
    return kiln_node_new(g, KILN_OP_SLICE, &x, 1, &a);
}

kiln_status kiln_split(kiln_graph *g, kiln_node *x, int n, int axis, kiln_node **out) {
    if (!g) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_split: NULL graph");
    if (!out || n < 1)
        return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_split: needs n >= 1 parts and an output array (n = %d)", n);
    for (int i = 0; i < n; i++) out[i] = NULL;
    if (!x) {          /* an earlier step failed: report it, add no new error */
        kiln_status s = kiln_graph_status(g);
        return kiln_set_error(s ? s : KILN_INVALID_ARGUMENT, "kiln_split: input is NULL (%s)", kiln_graph_error(g));
    }
    int r = x->shape.rank, a = axis < 0 ? axis + r : axis;
    char xs[96];
    if (a < 0 || a >= r)
        return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_split: axis %d out of range for '%s' of shape %s",
                               axis, x->name, SHAPE_STR(x->shape, xs));
    if (x->shape.dim[a] % n != 0)
        return kiln_graph_fail(g, KILN_SHAPE_MISMATCH, "kiln_split: dim %d (%lld) of '%s' of shape %s does not split into %d equal parts",
                               a, (long long)x->shape.dim[a], x->name, SHAPE_STR(x->shape, xs), n);
    int64_t begin[KILN_MAX_DIMS] = { 0 }, size[KILN_MAX_DIMS];
    memcpy(size, x->shape.dim, sizeof size);
    size[a] = x->shape.dim[a] / n;
    for (int i = 0; i < n; i++) {
        begin[a] = i * size[a];
        out[i] = kiln_slice(g, x, begin, size);
        if (!out[i]) {
            for (int j = 0; j < i; j++) out[j] = NULL;
            return kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL;
        }
    }
    return KILN_OK;
}

/* ---- Pad ---- */

static kiln_status pad_infer(kiln_node *n) {
    const kiln_node *x = n->in[0];
    kiln_attrs *a = &n->attrs;
    int r = x->shape.rank;
    char bs[96], es[96];
    n->shape = x->shape;
    for (int d = 0; d < r; d++) {
        if (a->begin[d] < 0 || a->end[d] < 0)
            return kiln_node_error(n, KILN_INVALID_ARGUMENT, "negative padding (before %s, after %s) on input '%s'",
                                   dims_str(a->begin, r, bs, sizeof bs), dims_str(a->end, r, es, sizeof es), x->name);
        n->shape.dim[d] += a->begin[d] + a->end[d];
    }
    for (int d = r; d < KILN_MAX_DIMS; d++) a->begin[d] = a->end[d] = 0;
    n->dtype = x->dtype;
    return KILN_OK;
}

static kiln_status pad_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    const kiln_node *x = n->in[0];
    if (!is_float(x)) return KILN_OK;
    dx[0] = kiln_slice(g, dy, n->attrs.begin, x->shape.dim);
    return grad_done(g, dx[0]);
}

kiln_node *kiln_pad(kiln_graph *g, kiln_node *x, const int64_t *pads, double value) {
    if (!x) return kiln_node_new(g, KILN_OP_PAD, &x, 1, NULL);
    if (x->shape.rank > 0 && !pads) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "Pad of '%s': NULL pads", x->name);
        return NULL;
    }
    kiln_attrs a = { 0 };
    for (int d = 0; d < x->shape.rank; d++) { a.begin[d] = pads[2 * d]; a.end[d] = pads[2 * d + 1]; }
    a.alpha = value;
    return kiln_node_new(g, KILN_OP_PAD, &x, 1, &a);
}

/* ---- Cast ---- */

static kiln_status cast_infer(kiln_node *n) {
    if ((unsigned)n->attrs.to >= KILN_DTYPE_COUNT)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "unknown target dtype %d", (int)n->attrs.to);
    n->dtype = n->attrs.to;
    n->shape = n->in[0]->shape;
    return KILN_OK;
}

/* float -> float: cast the gradient back; anything involving integers is not differentiable. */
static kiln_status cast_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    const kiln_node *x = n->in[0];
    if (!is_float(x) || !kiln_dtype_is_float(n->dtype)) return KILN_OK;
    dx[0] = dy->dtype == x->dtype ? dy : kiln_cast(g, dy, x->dtype);
    return grad_done(g, dx[0]);
}

kiln_node *kiln_cast(kiln_graph *g, kiln_node *x, kiln_dtype to) {
    kiln_attrs a = { 0 };
    a.to = to;
    return kiln_node_new(g, KILN_OP_CAST, &x, 1, &a);
}

/* ---- BiasAdd ---- */

static kiln_status bias_add_infer(kiln_node *n) {
    const kiln_node *x = n->in[0], *b = n->in[1];
    char xs[96], bs[96];
    if (x->dtype != b->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "x '%s' is %s but bias '%s' is %s", x->name,
                               kiln_dtype_name(x->dtype), b->name, kiln_dtype_name(b->dtype));
    if (x->shape.rank < 1 || b->shape.rank != 1 || b->shape.dim[0] != x->shape.dim[x->shape.rank - 1])
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "bias '%s' of shape %s must be [C] with C the last dim of x '%s' of shape %s",
                               b->name, SHAPE_STR(b->shape, bs), x->name, SHAPE_STR(x->shape, xs));
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}

static kiln_status bias_add_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    const kiln_node *x = n->in[0];
    if (!is_float(x)) return KILN_OK;
    dx[0] = dy;
    int axes[KILN_MAX_DIMS], r = x->shape.rank;
    for (int d = 0; d < r - 1; d++) axes[d] = d;
    dx[1] = r == 1 ? dy : kiln_reduce_sum(g, dy, axes, r - 1, false);   /* sum over all but the last dim */
    return grad_done(g, dx[1]);
}

kiln_node *kiln_bias_add(kiln_graph *g, kiln_node *x, kiln_node *bias) {
    kiln_node *in[2] = { x, bias };
    return kiln_node_new(g, KILN_OP_BIAS_ADD, in, 2, NULL);
}

const kiln_op_def kiln_opdef_reshape = { "Reshape", 1, 1, KILN_OPF_ALIAS0, reshape_infer, reshape_grad, kiln_ref_copy, NULL };
const kiln_op_def kiln_opdef_identity = { "Identity", 1, 1, KILN_OPF_ALIAS0, identity_infer, identity_grad, kiln_ref_copy, NULL };
const kiln_op_def kiln_opdef_transpose = { "Transpose", 1, 1, 0, transpose_infer, transpose_grad, kiln_ref_transpose, NULL };
const kiln_op_def kiln_opdef_concat = { "ConcatV2", 1, INT_MAX, 0, concat_infer, concat_grad, kiln_ref_concat, NULL };
const kiln_op_def kiln_opdef_slice = { "Slice", 1, 1, 0, slice_infer, slice_grad, kiln_ref_slice, NULL };
const kiln_op_def kiln_opdef_pad = { "Pad", 1, 1, 0, pad_infer, pad_grad, kiln_ref_pad, NULL };
const kiln_op_def kiln_opdef_cast = { "Cast", 1, 1, 0, cast_infer, cast_grad, kiln_ref_cast, NULL };
const kiln_op_def kiln_opdef_bias_add = { "BiasAdd", 2, 2, KILN_OPF_INPLACE0, bias_add_infer, bias_add_grad, kiln_ref_bias_add, NULL };
