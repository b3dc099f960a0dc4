/* Gradient accumulation, the graph side (kiln_fit_opts.accumulate_steps = N): the training step is
 * built for the micro-batch B/N, and one optimizer update is made from N runs of it. Each trainable
 * variable w gets an accumulator "_accum/<w>" (f32 zeros, a session variable never checkpointed).
 * Runs 1..N-1 fetch the loss and run f->accum_step: acc += g/N. Run N runs f->step and
 * f->accum_reset: the optimizer reads acc + g/N (the whole batch's mean-loss gradient; clipping,
 * when asked, applies to it), then acc is zeroed. Both updates are ApplySGD ops (acc -= lr * g with
 * lr = -1/N; acc -= 1 * acc), so they run on every backend that runs the optimizer, where the
 * accumulators live, and the step stays one captured graph per run. The schedule runs nodes in id
 * order, so the reset (made after the sums that read acc) runs after them. */
#include <stdio.h>
#include "nn/nn_step.h"

static kiln_status fail(kiln_model *m, const char *what) {
    kiln_status st = kiln_graph_status(m->g);
    return nn_fail(m, st ? st : KILN_INTERNAL, "model '%s': gradient accumulation: %s: %s", m->name, what, kiln_graph_error(m->g));
}

kiln_status nn_accum_build(kiln_model *m, nn_forward *f, kiln_node *const *vars, kiln_node **grads, int n) {
    kiln_graph *g = m->g;
    int N = nn_accum_n(m);
    f->accumulate = N;
    if (N <= 1) return KILN_OK;
    kiln_node **acc = kiln_calloc((size_t)(n > 0 ? n : 1), sizeof *acc);
    if (!acc) return nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory for %d accumulators", m->name, n);
    kiln_status st = KILN_OK;
    char name[512];
    for (int i = 0; i < n && !st; i++) {
        snprintf(name, sizeof name, NN_ACCUM_PREFIX "%s", kiln_node_name(vars[i]));
        acc[i] = kiln_graph_find(g, name);      /* an earlier training forward in this graph made it */
        if (!acc[i]) acc[i] = kiln_variable_trainable(g, name, KILN_F32, kiln_node_shape(vars[i]), kiln_init_zeros(), false);
        if (!acc[i]) st = fail(m, "accumulator");
    }
    kiln_node *minus_inv = st ? NULL : kiln_scalar(g, KILN_F32, -1.0 / N);
    kiln_node *inv = st ? NULL : kiln_scalar(g, KILN_F32, 1.0 / N);
    kiln_node *one = st ? NULL : kiln_scalar(g, KILN_F32, 1.0);
    if (!st && !(f->accum_step = kiln_apply_sgd(g, acc, grads, n, &(kiln_sgd_opts){ .lr_node = minus_inv })))
        st = fail(m, "acc += g/N");
    for (int i = 0; i < n && !st; i++)                 /* what the update reads: acc + g/N */
        if (!(grads[i] = kiln_add(g, acc[i], kiln_mul(g, grads[i], inv)))) st = fail(m, "acc + g/N");
    if (!st && !(f->accum_reset = kiln_apply_sgd(g, acc, acc, n, &(kiln_sgd_opts){ .lr_node = one })))
        st = fail(m, "reset");
    kiln_free(acc);
    return st;
}
