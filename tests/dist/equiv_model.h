/* The model and loss recorder shared by the data-parallel equivalence tests (test_dist_mpi over
 * MPI ranks, test_mirrored over simulated GPUs): a small MLP with a fixed seed, so one device and
 * N replicas start from the same weights. Include after check.h. */
#ifndef KILN_TEST_EQUIV_MODEL_H
#define KILN_TEST_EQUIV_MODEL_H
#include "kiln/nn.h"

static kiln_model *tiny(kiln_optimizer opt) {
    kiln_model *m = kiln_sequential("tiny", KILN_SHAPE(8));
    kiln_model_set_seed(m, 7);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = opt, .from_logits = true, .metrics = KILN_METRIC_ACCURACY }));
    return m;
}

/* The per-epoch losses a kiln_callback_lambda(record, NULL, &losses) collects. */
typedef struct losses { double v[64]; int n; } losses;
static bool record(kiln_model *m, const kiln_logs *l, void *user) {
    (void)m;
    losses *r = user;
    if (r->n < 64) r->v[r->n++] = l->loss;
    return false;
}
#endif
