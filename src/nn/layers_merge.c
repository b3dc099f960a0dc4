/* Layer types over several inputs: Concatenate and Add. */
#include <stdio.h>
#include "nn/nn_layers.h"
#include "core/checked.h"

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
