/* Reverse-mode autodiff: walks the graph from the loss back to the requested nodes and emits the
 * gradient ops into the same graph (like tf.gradients). */
#include <string.h>
#include "graph/graph_internal.h"

kiln_status kiln_gradients(kiln_graph *g, kiln_node *loss, kiln_node *const *xs, int n, kiln_node **grads_out) {
    if (!g) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_gradients: NULL graph");
    if (g->status != KILN_OK) return kiln_set_error(g->status, "kiln_gradients: the graph has a build error: %s", g->error);
    if (!loss || (n > 0 && (!xs || !grads_out)))
        return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_gradients: NULL loss, xs or grads_out");
    if (kiln_shape_numel(loss->shape) != 1 || !kiln_dtype_is_float(loss->dtype)) {
        char b[96];
        return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_gradients: loss '%s' must be a float scalar, it is %s %s",
                               loss->name, kiln_dtype_name(loss->dtype), kiln_shape_str(loss->shape, b, sizeof b));
    }
    for (int i = 0; i < n; i++) {
        if (!xs[i]) return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_gradients: xs[%d] is NULL", i);
        if (!kiln_dtype_is_float(xs[i]->dtype))
            return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_gradients: '%s' is %s; gradients exist only for float tensors", xs[i]->name, kiln_dtype_name(xs[i]->dtype));
    }
    int nn = loss->id + 1;                              /* only nodes up to the loss matter */
    bool *from_x = kiln_calloc((size_t)nn, sizeof *from_x);   /* depends on some x */
    bool *to_loss = kiln_calloc((size_t)nn, sizeof *to_loss); /* loss depends on it */
    kiln_node **grad = kiln_calloc((size_t)nn, sizeof *grad);
    kiln_status st = KILN_OK;
    for (int i = 0; i < n; i++) if (xs[i]->id < nn) from_x[xs[i]->id] = true;
    for (int id = 0; id < nn; id++)
        for (int k = 0; k < g->nodes[id]->n_in && !from_x[id]; k++)
            if (from_x[g->nodes[id]->in[k]->id]) from_x[id] = true;
    to_loss[loss->id] = true;
    for (int id = nn - 1; id >= 0; id--)
        if (to_loss[id]) for (int k = 0; k < g->nodes[id]->n_in; k++) to_loss[g->nodes[id]->in[k]->id] = true;

    kiln_graph_push_scope(g, "gradients");
    grad[loss->id] = kiln_scalar_like(g, loss, 1.0);
    if (kiln_shape_numel(loss->shape) == 1 && loss->shape.rank > 0)
        grad[loss->id] = kiln_reshape(g, grad[loss->id], loss->shape);
    for (int id = nn - 1; id >= 0 && st == KILN_OK; id--) {
        kiln_node *nd = g->nodes[id];
        if (!grad[id] || !from_x[id] || !to_loss[id]) continue;
        const kiln_op_def *d = kiln_op_get(nd->op);
        if (d->flags & KILN_OPF_SOURCE) continue;
        bool wanted = false;                            /* some float input leads to an x */
        for (int k = 0; k < nd->n_in; k++)
            wanted |= from_x[nd->in[k]->id] && kiln_dtype_is_float(nd->in[k]->dtype);
        if (!wanted) continue;
        if (!d->grad) {
            st = kiln_graph_fail(g, KILN_UNSUPPORTED, "kiln_gradients: no gradient is defined for op %s (node '%s') on the path from '%s' to the requested variables",
                                 d->name, nd->name, loss->name);
            break;
        }
        kiln_node *dx[64] = { 0 };
        kiln_node **dxp = nd->n_in <= 64 ? dx : kiln_calloc((size_t)nd->n_in, sizeof *dxp);
        int first_new = g->n_nodes;
        st = d->grad(g, nd, grad[id], dxp);
        if (st == KILN_OK && g->status != KILN_OK) st = g->status;
        for (int k = 0; k < nd->n_in && st == KILN_OK; k++) {
            kiln_node *in = nd->in[k];
            if (!dxp[k] || !from_x[in->id] || !kiln_dtype_is_float(in->dtype)) continue;
            if (!kiln_shape_equal(dxp[k]->shape, in->shape)) {
                char a[96], b[96];
                st = kiln_graph_fail(g, KILN_INTERNAL, "kiln_gradients: gradient of %s input %d has shape %s, expected %s", nd->name, k,
                                     kiln_shape_str(dxp[k]->shape, a, sizeof a), kiln_shape_str(in->shape, b, sizeof b));
                break;
            }
            grad[in->id] = grad[in->id] ? kiln_add(g, grad[in->id], dxp[k]) : dxp[k];
            if (!grad[in->id]) st = g->status ? g->status : KILN_INTERNAL;
        }
        for (int k = first_new; k < g->n_nodes; k++) g->nodes[k]->grad_of = nd;   /* numerics.c names its layer */
        if (dxp != dx) kiln_free(dxp);
    }
    for (int i = 0; i < n && st == KILN_OK; i++) {
        kiln_node *x = xs[i];
        kiln_node *gx = x->id < nn ? grad[x->id] : NULL;
        if (!gx) {                                       /* loss does not depend on x */
            kiln_tensor *z = kiln_tensor_new(x->dtype, x->shape);
            gx = z ? kiln_constant(g, z) : NULL;
            kiln_tensor_free(z);
        }
        if (!gx) { st = g->status ? g->status : KILN_OUT_OF_MEMORY; break; }
        grads_out[i] = gx;
    }
    kiln_graph_pop_scope(g);
    kiln_free(from_x); kiln_free(to_loss); kiln_free(grad);
    if (st != KILN_OK && g->status == KILN_OK) kiln_graph_fail(g, st, "%s", kiln_last_error());
    return st;
}
