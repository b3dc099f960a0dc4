/* Data ops: a data set held as a tensor (on the device in the GPU-resident input mode) is batched
 * with GatherRows and augmented with RandomCropFlip where it lives. Both are NO_GRAD: they act on
 * data, not on weights. Semantics: src/ops/SEMANTICS.md; the crop/flip draw: src/ops/data_ops.h. */
#include <stdio.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

static const char *shp(kiln_shape s, char *buf) { return kiln_shape_str(s, buf, 96); }

/* ---- GatherRows: x [N, ...], idx [B] i32/i64 -> [B, ...] ---- */
static kiln_status gather_rows_infer(kiln_node *n) {
    kiln_node *x = n->in[0], *idx = n->in[1];
    char b1[96], b2[96];
    if (x->shape.rank < 1)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x '%s' is a scalar (shape %s); rows are gathered along dim 0, so rank >= 1 is needed",
                               x->name, shp(x->shape, b1));
    if (idx->dtype != KILN_I32 && idx->dtype != KILN_I64)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "indices '%s' are %s; i32 or i64 is needed", idx->name, kiln_dtype_name(idx->dtype));
    if (idx->shape.rank != 1)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "indices '%s' have shape %s; a vector [B] is needed (x '%s' is %s)",
                               idx->name, shp(idx->shape, b1), x->name, shp(x->shape, b2));
    n->dtype = x->dtype;
    n->shape = x->shape;
    n->shape.dim[0] = idx->shape.dim[0];
    return KILN_OK;
}

const kiln_op_def kiln_opdef_gather_rows = {
    "GatherRows", 2, 2, KILN_OPF_NO_GRAD, gather_rows_infer, NULL, kiln_ref_gather_rows, NULL
};

kiln_node *kiln_gather_rows(kiln_graph *g, kiln_node *x, kiln_node *idx) {
    if (!g || !x || !idx) return NULL;
    kiln_node *in[2] = { x, idx };
    return kiln_node_new(g, KILN_OP_GATHER_ROWS, in, 2, NULL);
}

/* ---- RandomCropFlip: x [N, H, W, C] float, keys [N] i64; attrs kh = pad, rate = flip probability, training ---- */
/* keys must be an i64 vector with one key per example of x; NULL when they are, else the message */
static const char *keys_error(const kiln_node *x, const kiln_node *keys, char *msg, size_t cap) {
    char b1[96], b2[96];
    if (keys->dtype != KILN_I64)
        snprintf(msg, cap, "keys '%s' are %s; i64 (one random key per example) is needed", keys->name, kiln_dtype_name(keys->dtype));
    else if (keys->shape.rank != 1 || (x->shape.rank >= 1 && keys->shape.dim[0] != x->shape.dim[0]))
        snprintf(msg, cap, "keys '%s' have shape %s; a vector [N] with one key per example of x '%s' (%s) is needed",
                 keys->name, shp(keys->shape, b1), x->name, shp(x->shape, b2));
    else return NULL;
    return msg;
}

static kiln_status random_crop_flip_infer(kiln_node *n) {
    kiln_node *x = n->in[0];
    const kiln_attrs *a = &n->attrs;
    char b[96], msg[320];
    if (!kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "x '%s' is %s; a float dtype is needed", x->name, kiln_dtype_name(x->dtype));
    if (x->shape.rank != 4)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "x '%s' has shape %s; an NHWC batch [N, H, W, C] is needed", x->name, shp(x->shape, b));
    if (keys_error(x, n->in[1], msg, sizeof msg))
        return kiln_node_error(n, n->in[1]->dtype != KILN_I64 ? KILN_DTYPE_MISMATCH : KILN_SHAPE_MISMATCH, "%s", msg);
    int64_t H = x->shape.dim[1], W = x->shape.dim[2];
    if (a->kh < 0 || a->kh >= H || a->kh >= W)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "pad %d must be >= 0 and smaller than the image (x '%s' is %s: H = %lld, W = %lld)",
                               a->kh, x->name, shp(x->shape, b), (long long)H, (long long)W);
    if (!(a->rate >= 0.0 && a->rate <= 1.0))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "flip probability (rate) must be in [0, 1], got %g", a->rate);
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_OK;
}

const kiln_op_def kiln_opdef_random_crop_flip = {
    "RandomCropFlip", 2, 2, KILN_OPF_NO_GRAD, random_crop_flip_infer, NULL, kiln_ref_random_crop_flip, NULL
};

kiln_node *kiln_random_crop_flip(kiln_graph *g, kiln_node *x, kiln_node *keys, int pad, bool flip, bool training) {
    if (!g || !x) return NULL;
    if (!keys) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_random_crop_flip on '%s': keys must not be NULL", x->name);
        return NULL;
    }
    if (pad < 0) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_random_crop_flip on '%s': pad must be >= 0, got %d", x->name, pad);
        return NULL;
    }
    if (!training || (pad == 0 && !flip)) {
        char msg[320];   /* the shortcut checks the keys too, so a wrong call fails whatever the flags */
        if (keys_error(x, keys, msg, sizeof msg)) {
            kiln_graph_fail(g, keys->dtype != KILN_I64 ? KILN_DTYPE_MISMATCH : KILN_SHAPE_MISMATCH, "kiln_random_crop_flip on '%s': %s", x->name, msg);
            return NULL;
        }
        return kiln_identity(g, x);
    }
    kiln_attrs a = { 0 };
    a.kh = pad;
    a.rate = flip ? 0.5 : 0.0;
    a.training = true;
    kiln_node *in[2] = { x, keys };
    return kiln_node_new(g, KILN_OP_RANDOM_CROP_FLIP, in, 2, &a);
}
