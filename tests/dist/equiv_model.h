/* The models and loss recorder shared by the data-parallel equivalence tests (test_dist_mpi over
 * MPI ranks, test_mirrored over simulated GPUs): a small MLP, and a conv net with batch norm on
 * images for synchronised batch norm, with fixed seeds, so one device and N replicas start from
 * the same weights. Include after check.h. */
#ifndef KILN_TEST_EQUIV_MODEL_H
#define KILN_TEST_EQUIV_MODEL_H
#include "kiln/nn.h"
#include "kiln/data.h"

static inline kiln_model *tiny(kiln_optimizer opt) {
    kiln_model *m = kiln_sequential("tiny", KILN_SHAPE(8));
    kiln_model_set_seed(m, 7);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = opt, .from_logits = true, .metrics = KILN_METRIC_ACCURACY }));
    return m;
}

/* A small conv net with batch norm on 4x4x1 images whose brightness differs from row to row, so
 * the two ranks' halves of a batch have different statistics. */
static inline kiln_model *bn_net(bool sync) {
    kiln_model *m = kiln_sequential("bn_net", KILN_SHAPE(4, 4, 1));
    kiln_model_set_seed(m, 3);
    /* no bias before batch norm (its gradient is rounding noise, which Adam would amplify) */
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 4, .kernel = 3, .padding = KILN_SAME, .no_bias = true });
    kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .momentum = 0.9, .epsilon = 1e-3 });
    kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_RELU });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.01), .from_logits = true, .sync_batchnorm = sync }));
    return m;
}

static inline kiln_dataset *bn_images(int n) {
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(n, 4, 4, 1)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    uint64_t r = 12345;
    for (int i = 0; i < n; i++) {
        float bright = (float)(i % 7) * 0.5f - 1.5f, sum = 0;
        for (int k = 0; k < 16; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            float v = bright + (float)((r >> 40) % 1000) / 1000.0f;
            ((float *)x->data)[i * 16 + k] = v;
            sum += k < 8 ? v : -v;
        }
        ((int32_t *)y->data)[i] = sum > 0.3f ? 2 : sum < -0.3f ? 0 : 1;
    }
    kiln_dataset *d = kiln_dataset_from_tensors(x, y, 3);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return d;
}

/* The per-epoch losses a kiln_callback_lambda(record, NULL, &losses) collects. */
typedef struct losses { double v[64]; int n; } losses;
static inline bool record(kiln_model *m, const kiln_logs *l, void *user) {
    (void)m;
    losses *r = user;
    if (r->n < 64) r->v[r->n++] = l->loss;
    return false;
}
#endif
