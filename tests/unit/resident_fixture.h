/* The data and model the resident-data tests share (test_resident.c, test_fit_data_resident.c):
 * 240 8x8 grey images of 3 classes (which third of the rows is bright, plus noise) and a tiny
 * conv net seeded 5. KILN_TEST_DEVICE=auto (the *_cudasim ctests) runs the model, gather and
 * crop/flip on the GPU. */
#ifndef KILN_TEST_RESIDENT_FIXTURE_H
#define KILN_TEST_RESIDENT_FIXTURE_H
#include <stdlib.h>
#include "kiln/nn.h"

enum { N = 240, H = 8, W = 8, C = 3, MODEL_SEED = 5 };

static kiln_dataset *make_data(void) {
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, H, W, 1)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(N));
    for (int i = 0; i < N; i++) {
        int cls = i % C;
        ((int32_t *)y->data)[i] = cls;
        for (int p = 0; p < H * W; p++)   /* class = which third of the rows is bright, plus noise */
            ((float *)x->data)[i * H * W + p] = (p / W) * C / H == cls ? 0.8f + 0.01f * (float)((i * 7 + p) % 13) : 0.1f * (float)((i + p) % 3);
    }
    kiln_dataset *d = kiln_dataset_from_tensors(x, y, C);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return d;
}

static kiln_model *make_model(void) {
    const char *dev = getenv("KILN_TEST_DEVICE");
    kiln_model *m = kiln_sequential("tiny", KILN_SHAPE(H, W, 1));
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 4, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = C });
    kiln_model_set_seed(m, MODEL_SEED);
    kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.01), .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                          .from_logits = true, .metrics = KILN_METRIC_ACCURACY, .device = dev ? dev : "cpu" });
    return m;
}
#endif
