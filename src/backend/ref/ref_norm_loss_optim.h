/* Ref (oracle) kernels for the normalisation, dropout, loss/metric and optimizer op families.
 * Semantics: src/ops/SEMANTICS.md. Plain loops over kiln_load/kiln_store, accumulating in double. */
#ifndef KILN_REF_NORM_LOSS_OPTIM_H
#define KILN_REF_NORM_LOSS_OPTIM_H
#include "ops/op.h"

/* norm.c */
kiln_status kiln_ref_batch_norm(const kiln_kctx *c);
kiln_status kiln_ref_batch_norm_grad(const kiln_kctx *c);
kiln_status kiln_ref_bn_grad_gamma(const kiln_kctx *c);
kiln_status kiln_ref_dropout(const kiln_kctx *c);
kiln_status kiln_ref_dropout_grad(const kiln_kctx *c);

/* loss.c */
kiln_status kiln_ref_sparse_softmax_xent(const kiln_kctx *c);
kiln_status kiln_ref_sparse_softmax_xent_grad(const kiln_kctx *c);
kiln_status kiln_ref_softmax_xent(const kiln_kctx *c);
kiln_status kiln_ref_softmax_xent_grad(const kiln_kctx *c);
kiln_status kiln_ref_sigmoid_xent(const kiln_kctx *c);
kiln_status kiln_ref_sigmoid_xent_grad(const kiln_kctx *c);
kiln_status kiln_ref_mse(const kiln_kctx *c);
kiln_status kiln_ref_argmax(const kiln_kctx *c);
kiln_status kiln_ref_equal(const kiln_kctx *c);
kiln_status kiln_ref_accuracy(const kiln_kctx *c);

/* optim.c */
kiln_status kiln_ref_apply_sgd(const kiln_kctx *c);
kiln_status kiln_ref_apply_adam(const kiln_kctx *c);
kiln_status kiln_ref_apply_rmsprop(const kiln_kctx *c);
kiln_status kiln_ref_apply_adagrad(const kiln_kctx *c);
kiln_status kiln_ref_global_norm(const kiln_kctx *c);
kiln_status kiln_ref_clip_scale(const kiln_kctx *c);
kiln_status kiln_ref_group(const kiln_kctx *c);
kiln_status kiln_ref_all_finite(const kiln_kctx *c);          /* loss_scale.c */
kiln_status kiln_ref_loss_scale_update(const kiln_kctx *c);
#endif
