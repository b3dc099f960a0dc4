/* The finiteness guard of the training step (every precision): AllFinite over the gradients the
 * optimizer's updates read (after accumulation, loss-scale division and clipping) and, outside
 * loss scaling, the loss; the updates read lr / finite, which is not finite when the flag is 0,
 * and an Apply op with a non-finite lr leaves its variable and slots alone (SEMANTICS.md). So a
 * step that went NaN/Inf never writes the weights or the optimizer state: under mixed_float16 it
 * is a skipped step (the scale halves, LossScaleUpdate), otherwise kiln_fit stops there and
 * numerics.c names where it went wrong. The flag is fetched with the loss (f->finite_t). Its cost
 * is one read of the gradients per step (README: the measured figure). */
#include "nn/nn_step.h"

#define LOSS_SCALE_GROWTH_INTERVAL 2000

kiln_status nn_guard_build(kiln_model *m, nn_forward *f, kiln_node *const *grads, int n) {
    kiln_graph *g = m->g;
    f->finite = NULL;
    if (n == 0) return KILN_OK;
    kiln_node **xs = kiln_calloc((size_t)n + 1, sizeof *xs);
    if (!xs) return nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory for %d gradients", m->name, n);
    int k = 0;
    if (!f->loss_scale) xs[k++] = f->loss;     /* under loss scaling a NaN loss is a skipped step too */
    for (int i = 0; i < n; i++) xs[k++] = grads[i];
    kiln_node *finite = kiln_all_finite(g, xs, k);
    kiln_free(xs);
    if (f->loss_scale)
        f->scale_update = kiln_loss_scale_update(g, f->loss_scale, f->good_steps, f->skipped_steps, finite, LOSS_SCALE_GROWTH_INTERVAL);
    f->step_lr = kiln_div(g, m->lr_var, finite);
    kiln_status st = kiln_graph_status(g);
    if (st) return nn_fail(m, st, "model '%s': the gradients' finiteness check: %s", m->name, kiln_graph_error(g));
    f->finite = finite;
    if (!f->finite_t && !(f->finite_t = kiln_tensor_new(KILN_F32, KILN_SCALAR)))
        return nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name);
    return KILN_OK;
}
