/* The model's graph (tier 2 of src/nn, above the layers): a forward pass for one batch size and,
 * for training, its loss, L2 penalties, gradients and optimizer update. Each part is one
 * function so the precision policy (input, layer reads: nn_layer_var), gradient accumulation
 * (gradients) and the optimizer each change one place. */
#ifndef KILN_NN_STEP_H
#define KILN_NN_STEP_H
#include "nn/nn_layers.h"

/* forward.c: builds f in m->g (input, layers, loss when compiled, the training step when
 * training); fills f's fetch tensors. Errors stick to m. */
kiln_status nn_build_forward(kiln_model *m, nn_forward *f, int batch, bool training);
/* Each example's label shape for the model: rank 0 (one label) for an output [units]; the output
 * shape without its last dimension otherwise (a label per position: [T] next-token ids for a
 * [T, vocabulary] output, as Keras' sparse categorical cross-entropy takes them). */
kiln_shape nn_label_shape(const kiln_model *m);

/* loss.c: mean loss of out against labels y (the compiled loss); NULL on error (sticky on m). */
/* w: sample weights [batch] or NULL: the loss is then sum(w_i * loss_i) / batch. */
kiln_node *nn_build_loss(kiln_model *m, kiln_graph *g, kiln_node *out, kiln_node *y, kiln_node *w, int batch);
/* Keras' per-example loss [B] for outputs p and targets t ([B, C] f32 each) of mse and the losses
 * after it (NULL for the cross-entropies); delta: huber's. */
kiln_node *nn_example_loss(kiln_graph *g, kiln_loss_kind k, double delta, kiln_node *p, kiln_node *t);

/* accumulate.c: with nn_accum_n(m) = N > 1, the accumulators, f->accum_step (acc += g/N) and
 * f->accum_reset, and grads[i] replaced by acc + g/N for the update; sets f->accumulate. */
kiln_status nn_accum_build(kiln_model *m, nn_forward *f, kiln_node *const *vars, kiln_node **grads, int n);

/* grad_guard.c: f->finite = AllFinite(loss (not under loss scaling), grads), f->step_lr = lr /
 * finite (the lr the updates read), under loss scaling the scale update; f->finite_t. */
kiln_status nn_guard_build(kiln_model *m, nn_forward *f, kiln_node *const *grads, int n);

/* optimizers.c: the update op for (vars, grads); the learning rate is m->lr_var. */
kiln_node *nn_build_optimizer(kiln_model *m, kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n);

#endif
