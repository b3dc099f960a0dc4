/* Conformance cases for the normalisation, loss/metric and optimizer op families
 * (src/ops/norm.c, loss.c, optim.c). Ops that mutate variables (batch norm in training, the Apply
 * ops) create them here with seeded initializers and list them in extra[], so the updated values
 * are compared across backends too. */
#include <stdio.h>
#include "op_case.h"

#define F CASE_FLOAT
/* Constant-expression shapes (KILN_SHAPE calls a function, which a static table cannot). */
#define S(...) { (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), { __VA_ARGS__ } }
#define S0 { 0, { 0 } }
#define UNUSED (void)e; (void)ne
#define BUILDER(nm, expr) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return expr; }

/* ---- batch norm ---- */
/* Moving statistics as variables of x's dtype, returned in extra[] (their updated values). */
static void moving_stats(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    kiln_shape c = kiln_node_shape(x[1]);
    kiln_dtype t = kiln_node_dtype(x[0]);
    e[0] = kiln_variable_trainable(g, "moving_mean", t, c, kiln_init_uniform(-0.5, 0.5, 1), false);
    e[1] = kiln_variable_trainable(g, "moving_var", t, c, kiln_init_uniform(0.5, 1.5, 2), false);
    *ne = 2;
}
static kiln_node *bn(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne, bool training, double momentum) {
    moving_stats(g, x, e, ne);
    return kiln_batch_norm(g, x[0], x[1], x[2], e[0], e[1], momentum, 1e-3, training);
}
static kiln_node *b_bn_train(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { return bn(g, x, e, ne, true, 0.99); }
static kiln_node *b_bn_train_m9(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { return bn(g, x, e, ne, true, 0.9); }
static kiln_node *b_bn_infer(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { return bn(g, x, e, ne, false, 0.99); }
static const kiln_attrs eps_attrs = { .epsilon = 1e-3 };
BUILDER(bn_grad, kiln_node_new(g, KILN_OP_BATCH_NORM_GRAD, x, 3, &eps_attrs))
BUILDER(bn_grad_gamma, kiln_node_new(g, KILN_OP_BN_GRAD_GAMMA, x, 2, &eps_attrs))

/* ---- synchronised batch norm (one replica: the global batch is the local one) ---- */
static kiln_node *b_sync_bn(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    moving_stats(g, x, e, ne);
    return kiln_sync_batch_norm(g, x[0], x[1], x[2], e[0], e[1], 0.9, 1e-3);
}
BUILDER(crs, kiln_node_new(g, KILN_OP_CROSS_REPLICA_SUM, x, 1, NULL))
BUILDER(bn_stats, kiln_node_new(g, KILN_OP_BN_STATS, x, 1, NULL))
BUILDER(bn_stats_grad, kiln_node_new(g, KILN_OP_BN_STATS_GRAD, x, 2, NULL))
/* (x, gamma, dy) with the statistics of x */
static kiln_node *sync_grad(kiln_graph *g, kiln_node **x, int mode) {
    kiln_attrs a = { .epsilon = 1e-3, .axis = mode };
    kiln_node *st = kiln_node_new(g, KILN_OP_BN_STATS, x, 1, NULL);
    return kiln_node_new(g, KILN_OP_BN_SYNC_GRAD, (kiln_node *[]){ x[0], x[1], x[2], st }, 4, &a);
}
BUILDER(sync_grad_dx, sync_grad(g, x, 0))
BUILDER(sync_grad_dgamma, sync_grad(g, x, 1))
BUILDER(sync_grad_dstats, sync_grad(g, x, 2))

/* ---- dropout ---- */
BUILDER(dropout, kiln_dropout(g, x[0], 0.3, 11, true))
BUILDER(dropout_off, kiln_dropout(g, x[0], 0.3, 11, false))
/* two layers built with the same user seed (each mixes in its node id, so the masks differ) */
BUILDER(dropout_two, kiln_sub(g, kiln_dropout(g, x[0], 0.5, 4, true), kiln_dropout(g, x[0], 0.5, 4, true)))
static const kiln_attrs drop_attrs = { .rate = 0.5, .seed = 12345, .training = true };
BUILDER(dropout_grad, kiln_node_new(g, KILN_OP_DROPOUT_GRAD, x, 1, &drop_attrs))
BUILDER(random_normal, kiln_random_normal_like(g, x[0], 7))
/* x + noise: the gradient w.r.t. x passes the noise by (it is 1), the noise has none */
BUILDER(noise_add, kiln_add(g, x[0], kiln_mul(g, kiln_scalar_like(g, x[0], 0.5), kiln_random_normal_like(g, x[0], 3))))

/* ---- losses and metrics ---- */
BUILDER(sparse_xent, kiln_sparse_softmax_cross_entropy(g, x[0], x[1]))
BUILDER(sparse_xent_grad, kiln_node_new(g, KILN_OP_SPARSE_SOFTMAX_XENT_GRAD, x, 3, NULL))
BUILDER(softmax_xent, kiln_softmax_cross_entropy(g, x[0], x[1]))
BUILDER(softmax_xent_grad, kiln_node_new(g, KILN_OP_SOFTMAX_XENT_GRAD, x, 3, NULL))
BUILDER(sigmoid_xent, kiln_sigmoid_cross_entropy(g, x[0], x[1]))
BUILDER(sigmoid_xent_grad, kiln_node_new(g, KILN_OP_SIGMOID_XENT_GRAD, x, 3, NULL))
BUILDER(mse, kiln_mean_squared_error(g, x[0], x[1]))
BUILDER(argmax1, kiln_argmax(g, x[0], 1))
BUILDER(argmax_m1, kiln_argmax(g, x[0], -1))
BUILDER(argmax0, kiln_argmax(g, x[0], 0))
BUILDER(equal, kiln_equal(g, x[0], x[1]))
BUILDER(equal_argmax, kiln_equal(g, kiln_argmax(g, x[0], 1), x[1]))
BUILDER(accuracy, kiln_accuracy(g, x[0], x[1]))

/* ---- optimizers ---- */
/* w (uniform, seeded, x[0]'s dtype and shape) updated with grad x[0]; the builder returns a group
 * whose input 0 is the Apply node. extra[]: w then its slots by name. */
static kiln_node *opt_case(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne, int which, const char *const *slots) {
    kiln_node *w = kiln_variable(g, "w", kiln_node_dtype(x[0]), kiln_node_shape(x[0]), kiln_init_uniform(-1, 1, 3));
    kiln_node *grp = NULL;
    switch (which) {
    case 0: grp = kiln_apply_sgd(g, &w, &x[0], 1, &(kiln_sgd_opts){ .lr = 0.1, .weight_decay = 0.01 }); break;
    case 1: grp = kiln_apply_sgd(g, &w, &x[0], 1, &(kiln_sgd_opts){ .lr = 0.1, .momentum = 0.9, .nesterov = true }); break;
    case 2: grp = kiln_apply_sgd(g, &w, &x[0], 1, &(kiln_sgd_opts){ .lr_node = x[1], .momentum = 0.5 }); break;
    case 3: grp = kiln_apply_adam(g, &w, &x[0], 1, &(kiln_adam_opts){ .lr = 0.01 }); break;
    case 4: grp = kiln_apply_adamw(g, &w, &x[0], 1, &(kiln_adam_opts){ .lr_node = x[1], .beta1 = 0.8 }); break;
    case 5: grp = kiln_apply_rmsprop(g, &w, &x[0], 1, &(kiln_rmsprop_opts){ .lr = 0.01 }); break;
    case 6: grp = kiln_apply_rmsprop(g, &w, &x[0], 1, &(kiln_rmsprop_opts){ .lr = 0.01, .rho = 0.8, .momentum = 0.9 }); break;
    case 7: grp = kiln_apply_adagrad(g, &w, &x[0], 1, &(kiln_adagrad_opts){ .lr = 0.05 }); break;
    }
    if (!grp) return NULL;
    e[0] = w;
    *ne = 1;
    for (int i = 0; slots[i] && *ne < CASE_MAX_EXTRA; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "w/%s", slots[i]);
        if (!(e[(*ne)++] = kiln_graph_find(g, nm))) return NULL;
    }
    return grp->in[0];
}
static const char *const no_slots[] = { NULL }, *const mom_slots[] = { "momentum", NULL },
    *const adam_slots[] = { "m", "v", "t", NULL }, *const rms_slots[] = { "rms", NULL },
    *const rms_mom_slots[] = { "rms", "momentum", NULL }, *const acc_slots[] = { "accumulator", NULL };
BUILDER(sgd_wd, opt_case(g, x, e, ne, 0, no_slots))
BUILDER(sgd_nesterov, opt_case(g, x, e, ne, 1, mom_slots))
BUILDER(sgd_lr_node, opt_case(g, x, e, ne, 2, mom_slots))
BUILDER(adam, opt_case(g, x, e, ne, 3, adam_slots))
BUILDER(adamw, opt_case(g, x, e, ne, 4, adam_slots))
BUILDER(rmsprop, opt_case(g, x, e, ne, 5, rms_slots))
BUILDER(rmsprop_mom, opt_case(g, x, e, ne, 6, rms_mom_slots))
BUILDER(adagrad, opt_case(g, x, e, ne, 7, acc_slots))

BUILDER(global_norm, kiln_node_new(g, KILN_OP_GLOBAL_NORM, x, 2, NULL))
static const kiln_attrs clip_attrs = { .clip = 1.0 };
BUILDER(clip_scale, kiln_node_new(g, KILN_OP_CLIP_SCALE, x, 1, &clip_attrs))
/* 10 gradients (more than one GlobalNorm node takes): clipped[0] is the output, two more extras */
static kiln_node *b_clip_global(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    kiln_node *gr[10], *cl[10];
    for (int i = 0; i < 10; i++) gr[i] = x[i % 2];
    if (kiln_clip_by_global_norm(g, gr, 10, 1.5, cl) != KILN_OK) return NULL;
    e[0] = cl[1];
    e[1] = cl[9];
    *ne = 2;
    return cl[0];
}
BUILDER(group1, kiln_group(g, x, 1))
static kiln_node *b_group_many(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) {
    UNUSED;
    kiln_node *n[12];
    for (int i = 0; i < 12; i++) n[i] = kiln_neg(g, x[i % 2]);
    return kiln_group(g, n, 12);
}

/* ---- cases ---- */
#define C1(op_, lbl, sh, lo_, hi_, fn, gr) { op_, lbl, 1, { F }, { sh }, { lo_ }, { hi_ }, fn, DT_FLOATS, gr, 0, 0, 0 }
#define OPT(op_, lbl, fn) { op_, lbl, 2, { F, KILN_F32 }, { S(3, 4), S0 }, { -1, 0.01 }, { 1, 0.1 }, fn, DT_FLOATS, false, 0, 0, 0 }

const op_case cases_norm_loss_optim[] = {
    { KILN_OP_BATCH_NORM, "batch_norm training [6,4]", 3, { F, F, F }, { S(6, 4), S(4), S(4) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_bn_train, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_BATCH_NORM, "batch_norm training NHWC [2,3,3,4] momentum 0.9", 3, { F, F, F }, { S(2, 3, 3, 4), S(4), S(4) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_bn_train_m9, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_BATCH_NORM, "batch_norm inference NHWC [2,3,3,4]", 3, { F, F, F }, { S(2, 3, 3, 4), S(4), S(4) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_bn_infer, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_BATCH_NORM_GRAD, "FusedBatchNormGrad [5,3]", 3, { F, F, F }, { S(5, 3), S(3), S(5, 3) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_bn_grad, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_BN_GRAD_GAMMA, "BatchNormGammaGrad [2,2,2,3]", 2, { F, F }, { S(2, 2, 2, 3), S(2, 2, 2, 3) },
      { -2, -1 }, { 2, 1 }, b_bn_grad_gamma, DT_FLOATS, false, 0, 0, 0 },
    /* more rows than the cpu kernels' 16 chunks of partial sums, several rows each */
    { KILN_OP_BATCH_NORM, "batch_norm training NHWC [4,5,5,6] (100 rows) momentum 0.9", 3, { F, F, F }, { S(4, 5, 5, 6), S(6), S(6) },
      { -2, 0.5, -1 }, { 3, 1.5, 1 }, b_bn_train_m9, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_BATCH_NORM_GRAD, "FusedBatchNormGrad [2,7,5,3] (70 rows)", 3, { F, F, F }, { S(2, 7, 5, 3), S(3), S(2, 7, 5, 3) },
      { -2, 0.5, -1 }, { 3, 1.5, 1 }, b_bn_grad, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_BN_GRAD_GAMMA, "BatchNormGammaGrad [50,4] (50 rows)", 2, { F, F }, { S(50, 4), S(50, 4) },
      { -2, -1 }, { 3, 1 }, b_bn_grad_gamma, DT_FLOATS, false, 0, 0, 0 },

    /* the whole composition's gradient (SyncBatchNorm -> its grads, CrossReplicaSum, BatchNormStats) by finite differences */
    { KILN_OP_BN_SYNC, "sync batch norm [6,4] (stats -> cross-replica sum -> normalise)", 3, { F, F, F }, { S(6, 4), S(4), S(4) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_sync_bn, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_BN_SYNC, "sync batch norm NHWC [2,3,3,4]", 3, { F, F, F }, { S(2, 3, 3, 4), S(4), S(4) },
      { -2, 0.5, -1 }, { 3, 1.5, 1 }, b_sync_bn, DT_FLOATS, true, 0, 0, 0 },
    C1(KILN_OP_CROSS_REPLICA_SUM, "cross-replica sum (one replica) [3,5]", S(3, 5), -2, 2, b_crs, true),
    C1(KILN_OP_BN_STATS, "batch norm stats [5,3]", S(5, 3), -2, 2, b_bn_stats, true),
    { KILN_OP_BN_STATS_GRAD, "batch norm stats grad [4,3]", 2, { F, KILN_F64 }, { S(4, 3), S(7) },
      { -2, -1 }, { 2, 1 }, b_bn_stats_grad, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_BN_SYNC_GRAD, "sync batch norm grad dx [5,3]", 3, { F, F, F }, { S(5, 3), S(3), S(5, 3) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_sync_grad_dx, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_BN_SYNC_GRAD, "sync batch norm grad dgamma [5,3]", 3, { F, F, F }, { S(5, 3), S(3), S(5, 3) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_sync_grad_dgamma, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_BN_SYNC_GRAD, "sync batch norm grad dstats [5,3]", 3, { F, F, F }, { S(5, 3), S(3), S(5, 3) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_sync_grad_dstats, DT_FLOATS, false, 0, 0, 0 },
    C1(KILN_OP_DROPOUT, "dropout rate 0.3 [6,7]", S(6, 7), -1, 1, b_dropout, true),
    C1(KILN_OP_DROPOUT, "dropout rate 0.3 [300,700] (large: threads)", S(300, 700), -1, 1, b_dropout, false),
    C1(KILN_OP_DROPOUT, "difference of two dropouts with one seed [4,5]", S(4, 5), 0.5, 1, b_dropout_two, true),
    C1(KILN_OP_IDENTITY, "dropout when not training is identity [3,4]", S(3, 4), -1, 1, b_dropout_off, true),
    C1(KILN_OP_DROPOUT_GRAD, "DropoutGrad rate 0.5 [5,5]", S(5, 5), -1, 1, b_dropout_grad, false),
    C1(KILN_OP_RANDOM_NORMAL, "random normal like [6,7] (no gradient to x: zero)", S(6, 7), -1, 1, b_random_normal, true),
    C1(KILN_OP_RANDOM_NORMAL, "random normal like [3,257] (odd count, many blocks)", S(3, 257), -1, 1, b_random_normal, false),
    C1(KILN_OP_ADD, "x + 0.5 random normal [4,5] (gradient through the noise)", S(4, 5), -1, 1, b_noise_add, true),

    { KILN_OP_SPARSE_SOFTMAX_XENT, "sparse softmax xent [6,5] i32 labels", 2, { F, KILN_I32 }, { S(6, 5), S(6) },
      { -3, 0 }, { 3, 5 }, b_sparse_xent, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_SPARSE_SOFTMAX_XENT, "sparse softmax xent [4,3] i64 labels, logits 50..100", 2, { F, KILN_I64 }, { S(4, 3), S(4) },
      { 50, 0 }, { 100, 3 }, b_sparse_xent, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_SPARSE_SOFTMAX_XENT_GRAD, "SparseSoftmaxCrossEntropyGrad [4,6]", 3, { F, KILN_I32, F }, { S(4, 6), S(4), S0 },
      { -3, 0, 0.5 }, { 3, 6, 2 }, b_sparse_xent_grad, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_SOFTMAX_XENT, "softmax xent [4,5]", 2, { F, F }, { S(4, 5), S(4, 5) },
      { -3, 0 }, { 3, 1 }, b_softmax_xent, DT_FLOATS, true, 2, 0, 0 },
    { KILN_OP_SOFTMAX_XENT_GRAD, "SoftmaxCrossEntropyGrad [3,4]", 3, { F, F, F }, { S(3, 4), S(3, 4), S0 },
      { -3, 0, 0.5 }, { 3, 1, 2 }, b_softmax_xent_grad, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_SIGMOID_XENT, "sigmoid xent [3,4]", 2, { F, F }, { S(3, 4), S(3, 4) },
      { -4, 0 }, { 4, 1 }, b_sigmoid_xent, DT_FLOATS, true, 2, 0, 0 },
    { KILN_OP_SIGMOID_XENT, "sigmoid xent [2,3,2] logits -60..60", 2, { F, F }, { S(2, 3, 2), S(2, 3, 2) },
      { -60, 0 }, { 60, 1 }, b_sigmoid_xent, DT_FLOATS, true, 2, 0, 0 },
    { KILN_OP_SIGMOID_XENT_GRAD, "SigmoidCrossEntropyGrad [5]", 3, { F, F, F }, { S(5), S(5), S0 },
      { -4, 0, 0.5 }, { 4, 1, 2 }, b_sigmoid_xent_grad, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_MSE, "mse [4,3]", 2, { F, F }, { S(4, 3), S(4, 3) }, { -2, -2 }, { 2, 2 }, b_mse, DT_FLOATS, true, 0, 0, 0 },
    { KILN_OP_MSE, "mse [4,3] vs broadcast [3]", 2, { F, F }, { S(4, 3), S(3) }, { -2, -2 }, { 2, 2 }, b_mse, DT_FLOATS, true, 0, 0, 0 },
    C1(KILN_OP_ARGMAX, "argmax axis 1 [4,5]", S(4, 5), -1, 1, b_argmax1, false),
    C1(KILN_OP_ARGMAX, "argmax axis -1 [2,3,4]", S(2, 3, 4), -1, 1, b_argmax_m1, false),
    C1(KILN_OP_ARGMAX, "argmax axis 0 [3,4]", S(3, 4), -1, 1, b_argmax0, false),
    { KILN_OP_EQUAL, "equal i32 [4,5] vs [5]", 2, { KILN_I32, KILN_I32 }, { S(4, 5), S(5) }, { 0, 0 }, { 3, 3 },
      b_equal, DT_F32, false, 0, 0, 0 },
    { KILN_OP_EQUAL, "equal argmax (i64) vs labels (i32) [6]", 2, { F, KILN_I32 }, { S(6, 3), S(6) }, { -1, 0 }, { 1, 3 },
      b_equal_argmax, DT_FLOATS, false, 0, 0, 0 },
    { KILN_OP_ACCURACY, "accuracy [8,4] i32 labels", 2, { F, KILN_I32 }, { S(8, 4), S(8) }, { -1, 0 }, { 1, 4 },
      b_accuracy, DT_FLOATS, false, 0, 0, 0 },

    OPT(KILN_OP_APPLY_SGD, "sgd lr 0.1 weight_decay 0.01", b_sgd_wd),
    OPT(KILN_OP_APPLY_SGD, "sgd momentum 0.9 nesterov", b_sgd_nesterov),
    OPT(KILN_OP_APPLY_SGD, "sgd momentum 0.5, lr from a placeholder", b_sgd_lr_node),
    OPT(KILN_OP_APPLY_ADAM, "adam lr 0.01 (Keras defaults)", b_adam),
    OPT(KILN_OP_APPLY_ADAM, "adamw beta1 0.8, lr from a placeholder", b_adamw),
    OPT(KILN_OP_APPLY_RMSPROP, "rmsprop lr 0.01", b_rmsprop),
    OPT(KILN_OP_APPLY_RMSPROP, "rmsprop rho 0.8 momentum 0.9", b_rmsprop_mom),
    OPT(KILN_OP_APPLY_ADAGRAD, "adagrad lr 0.05", b_adagrad),
    { KILN_OP_GLOBAL_NORM, "global norm of [3,4] and [5]", 2, { F, F }, { S(3, 4), S(5) }, { -1, -1 }, { 1, 1 },
      b_global_norm, DT_FLOATS, false, 0, 0, 0 },
    C1(KILN_OP_CLIP_SCALE, "clip scale 1.0 of a norm in [0.2, 3)", S0, 0.2, 3, b_clip_scale, false),
    { KILN_OP_CLIP_SCALE, "clip_by_global_norm 1.5 over 10 grads", 2, { F, F }, { S(3, 4), S(5) }, { -1, -1 }, { 1, 1 },
      b_clip_global, DT_FLOATS, false, 0, 0, 0 },
    C1(KILN_OP_GROUP, "group of one", S(3), -1, 1, b_group1, false),
    { KILN_OP_GROUP, "group of 12 (a tree of NoOps)", 2, { F, F }, { S(3, 4), S(5) }, { -1, -1 }, { 1, 1 },
      b_group_many, DT_FLOATS, false, 0, 0, 0 },
};
const int n_cases_norm_loss_optim = (int)(sizeof cases_norm_loss_optim / sizeof cases_norm_loss_optim[0]);
