/* Layer types over several inputs: Concatenate and Add. */
#include <stdio.h>
#include "nn/nn_layers.h"
#include "core/checked.h"
#include "ops/op.h"

/* ---- Concatenate ---- */
static const nn_opt_spec concat_opts[] = {
    { "axis", NN_T_INT, NN_CFG(axis), -KILN_MAX_DIMS, NN_DINT(-1) },
    { NULL },
};
static kiln_status concat_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s0 = l->in[0]->out, out = s0;
    char b[96], d[96];
    int rank_b = s0.rank + 1, axis = c->axis;
    if (axis < 0) axis += rank_b;
    if (axis <= 0 || axis >= rank_b)
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "axis %d out of range for inputs of rank %d (the batch axis 0 cannot be concatenated)", c->axis, rank_b);
    l->axis = axis;
    for (int i = 1; i < l->n_in; i++) {
        kiln_shape si = l->in[i]->out;
        bool ok = si.rank == s0.rank;
        for (int k = 0; ok && k < s0.rank; k++) if (k != axis - 1 && si.dim[k] != s0.dim[k]) ok = false;
        if (!ok) return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "inputs must match except on axis %d: %s (%s) vs %s (%s)", axis,
                                      nn_batched_str(s0, b, sizeof b), l->in[0]->name, nn_batched_str(si, d, sizeof d), l->in[i]->name);
        if (!kiln_add_i64(out.dim[axis - 1], si.dim[axis - 1], &out.dim[axis - 1]))
            return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "axis %d: %lld + %lld overflows a 64-bit count; the sizes in the model description are too large",
                                 axis, (long long)out.dim[axis - 1], (long long)si.dim[axis - 1]);
    }
    l->out = out;
    return KILN_OK;
}
static kiln_node *concat_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *xs[NN_MAX_MERGE];
    for (int i = 0; i < l->n_in; i++) xs[i] = l->in[i]->node;
    return kiln_concat(f->g, xs, l->n_in, l->axis);
}
const nn_layer_def nn_def_concatenate = { "Concatenate", "concatenate", concat_opts, 2, NN_MAX_MERGE, concat_shape, NULL, concat_forward };

/* ---- Add ---- */
static const nn_opt_spec add_opts[] = { { NULL } };
static kiln_status add_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s0 = l->in[0]->out;
    char b[96], d[96];
    for (int i = 1; i < l->n_in; i++)
        if (!kiln_shape_equal(l->in[i]->out, s0))
            return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "inputs must have the same shape: %s (%s) vs %s (%s)",
                                 nn_batched_str(s0, b, sizeof b), l->in[0]->name, nn_batched_str(l->in[i]->out, d, sizeof d), l->in[i]->name);
    l->out = s0;
    return KILN_OK;
}
static kiln_node *add_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *y = x;
    for (int i = 1; i < l->n_in; i++) y = kiln_add(f->g, y, l->in[i]->node);
    return y;
}
const nn_layer_def nn_def_add = { "Add", "add", add_opts, 2, NN_MAX_MERGE, add_shape, NULL, add_forward };

/* ---- Multiply, Subtract, Average, Maximum, Minimum: elementwise with Keras's broadcasting
 * (dims equal or 1, shapes aligned from the last axis: a squeeze-and-excitation's
 * (None, 1, 1, C) * (None, H, W, C)); Subtract takes exactly two inputs ---- */
static kiln_status bcast_shape(kiln_layer *l, const nn_layer_cfg *c) {
    (void)c;
    kiln_shape out = l->in[0]->out;
    char b[96], d[96];
    if (l->kind == NN_SUBTRACT && l->n_in != 2) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "takes exactly 2 inputs, got %d", l->n_in);
    for (int i = 1; i < l->n_in; i++) {
        kiln_shape s = l->in[i]->out, r = { s.rank > out.rank ? s.rank : out.rank, { 0 } };
        for (int k = 1; k <= r.rank; k++) {
            int64_t a = k <= out.rank ? out.dim[out.rank - k] : 1, e = k <= s.rank ? s.dim[s.rank - k] : 1;
            if (a != e && a != 1 && e != 1)
                return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "inputs do not broadcast: %s (%s) vs %s (%s); each dim must be equal or 1",
                                     nn_batched_str(out, b, sizeof b), l->in[0]->name, nn_batched_str(s, d, sizeof d), l->in[i]->name);
            r.dim[r.rank - k] = a == 1 ? e : a;
        }
        out = r;
    }
    l->out = out;
    return KILN_OK;
}
/* An input of lower rank than the output gets ones after the batch axis, as Keras expands it. */
static kiln_node *aligned(const nn_fwd *f, const kiln_layer *l, int i) {
    kiln_shape s = l->in[i]->out;
    if (s.rank == l->out.rank) return l->in[i]->node;
    kiln_shape t = { l->out.rank + 1, { f->batch } };
    int lead = l->out.rank - s.rank;
    for (int k = 0; k < l->out.rank; k++) t.dim[k + 1] = k < lead ? 1 : s.dim[k - lead];
    return kiln_reshape(f->g, l->in[i]->node, t);
}
static kiln_node *bcast_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_node *y = aligned(f, l, 0);
    for (int i = 1; i < l->n_in; i++) {
        kiln_node *b = aligned(f, l, i);
        switch (l->kind) {
        case NN_MULTIPLY: y = kiln_mul(f->g, y, b); break;
        case NN_SUBTRACT: y = kiln_sub(f->g, y, b); break;
        case NN_MAXIMUM: y = kiln_maximum(f->g, y, b); break;
        case NN_MINIMUM: y = kiln_minimum(f->g, y, b); break;
        default: y = kiln_add(f->g, y, b); break;          /* Average */
        }
    }
    if (l->kind == NN_AVERAGE && y) y = kiln_mul(f->g, y, kiln_scalar_like(f->g, y, 1.0 / l->n_in));
    (void)x;
    return y;
}
static const nn_opt_spec merge_opts[] = { { NULL } };
const nn_layer_def nn_def_multiply = { "Multiply", "multiply", merge_opts, 2, NN_MAX_MERGE, bcast_shape, NULL, bcast_forward };
const nn_layer_def nn_def_subtract = { "Subtract", "subtract", merge_opts, 2, 2, bcast_shape, NULL, bcast_forward };
const nn_layer_def nn_def_average = { "Average", "average", merge_opts, 2, NN_MAX_MERGE, bcast_shape, NULL, bcast_forward };
const nn_layer_def nn_def_maximum = { "Maximum", "maximum", merge_opts, 2, NN_MAX_MERGE, bcast_shape, NULL, bcast_forward };
const nn_layer_def nn_def_minimum = { "Minimum", "minimum", merge_opts, 2, NN_MAX_MERGE, bcast_shape, NULL, bcast_forward };
