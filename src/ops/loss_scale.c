/* Dynamic loss scaling (Keras LossScaleOptimizer, PyTorch GradScaler) as graph ops, so it runs
 * inside the captured step: AllFinite checks the gradients, LossScaleUpdate moves the scale and
 * counts skipped steps, and the optimizer updates read lr / finite, which is not finite when a
 * gradient is not: an update with a non-finite lr leaves the variable and its slots unchanged
 * (SEMANTICS.md). Builders: kiln_all_finite, kiln_loss_scale_update (include/kiln/graph.h). */
#include <math.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

static kiln_status all_finite_infer(kiln_node *n) {
    for (int i = 0; i < n->n_in; i++)
        if (!kiln_dtype_is_float(n->in[i]->dtype))
            return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input %d ('%s') is %s: AllFinite checks float tensors", i,
                                   n->in[i]->name, kiln_dtype_name(n->in[i]->dtype));
    n->dtype = KILN_F32;
    n->shape = KILN_SCALAR;
    return KILN_OK;
}

static kiln_status loss_scale_update_infer(kiln_node *n) {
    static const char *const what[4] = { "scale", "good-step counter", "skipped-step counter", "finite flag" };
    for (int i = 0; i < 4; i++) {
        kiln_node *x = n->in[i];
        if (x->dtype != KILN_F32 || kiln_shape_numel(x->shape) != 1)
            return kiln_node_error(n, KILN_INVALID_ARGUMENT, "%s '%s' is %s with %lld elements: an f32 scalar is needed", what[i],
                                   x->name, kiln_dtype_name(x->dtype), (long long)kiln_shape_numel(x->shape));
        if (i < 3 && x->op != KILN_OP_VARIABLE)
            return kiln_node_error(n, KILN_INVALID_ARGUMENT, "%s '%s' must be a variable (it is updated in place)", what[i], x->name);
    }
    if (!(n->attrs.alpha >= 1))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "growth interval %g: it must be at least 1 step", n->attrs.alpha);
    n->dtype = KILN_F32;
    n->shape = KILN_SCALAR;
    return KILN_OK;
}

const kiln_op_def kiln_opdef_all_finite = { "AllFinite", 1, KILN_MAX_INPUTS, KILN_OPF_NO_GRAD, all_finite_infer, NULL,
                                            kiln_ref_all_finite, NULL };
const kiln_op_def kiln_opdef_loss_scale_update = { "LossScaleUpdate", 4, 4, KILN_OPF_NO_GRAD | KILN_OPF_MUTATES,
                                                   loss_scale_update_infer, NULL, kiln_ref_loss_scale_update, NULL };

kiln_node *kiln_all_finite(kiln_graph *g, kiln_node *const *xs, int n) {
    if (!g) return NULL;
    if (n < 1 || !xs) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_all_finite: need at least one tensor (n = %d)", n); return NULL; }
    kiln_node *flag = NULL;
    for (int i = 0; i < n; i += KILN_MAX_INPUTS) {       /* chunks of 8, combined with Minimum */
        int c = n - i < KILN_MAX_INPUTS ? n - i : KILN_MAX_INPUTS;
        kiln_attrs a = { 0 };
        kiln_node *f = kiln_node_new(g, KILN_OP_ALL_FINITE, xs + i, c, &a);
        flag = flag ? kiln_minimum(g, flag, f) : f;
        if (!flag) return NULL;
    }
    return flag;
}

kiln_node *kiln_loss_scale_update(kiln_graph *g, kiln_node *scale, kiln_node *good, kiln_node *skipped, kiln_node *finite,
                                  int growth_interval) {
    if (!g) return NULL;
    kiln_attrs a = { 0 };
    a.alpha = growth_interval;
    return kiln_node_new(g, KILN_OP_LOSS_SCALE_UPDATE, (kiln_node *[]){ scale, good, skipped, finite }, 4, &a);
}
