/* Numbers that go wrong: with debug_numerics an engineered NaN (a poisoned weight, a NaN in the
 * data) stops training at the first op that goes non-finite, naming epoch, step and layer, before
 * the step's update (the weights stay as they were); without it a diverging loss stops training
 * naming the epoch, step and first layer whose weights went non-finite; the last good checkpoint
 * stays intact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/nn.h"

/* KILN_TEST_DEVICE=auto: the GPU when one answers (the *_cudasim tests), else the CPU */
static const char *test_device(void) { return getenv("KILN_TEST_DEVICE") ? getenv("KILN_TEST_DEVICE") : "cpu"; }

static kiln_model *mlp(double lr) {
    kiln_model *m = kiln_sequential("num_mlp", KILN_SHAPE(8));
    kiln_model_set_seed(m, 1);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(lr), .from_logits = true, .device = test_device() }));
    return m;
}

static kiln_tensor *read_var(kiln_model *m, const char *name) {
    kiln_node *v = kiln_graph_find(kiln_model_graph(m), name);
    kiln_tensor *t = kiln_tensor_new(KILN_F32, kiln_node_shape(v));
    CHECK_OK(kiln_session_read_variable(kiln_model_session(m), v, t));
    return t;
}

static bool has(const char *needle) {
    bool ok = strstr(kiln_last_error(), needle) != NULL;
    if (!ok) fprintf(stderr, "expected '%s' in: %s\n", needle, kiln_last_error());
    return ok;
}

static void test_poisoned_weight(bool debug) {
    kiln_dataset *train = separable(64, 2);
    kiln_model *m = mlp(0.01);
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 32, .steps_per_epoch = 1 }));
    kiln_tensor *w = read_var(m, "dense_1/kernel");
    ((float *)w->data)[5] = NAN;
    CHECK_OK(kiln_session_assign_variable(kiln_model_session(m), kiln_graph_find(kiln_model_graph(m), "dense_1/kernel"), w));
    kiln_tensor *before = read_var(m, "dense/kernel");
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 32, .debug_numerics = debug });
    CHECK(st == KILN_NUMERIC_ERROR && has("epoch 2, step 1"));
    kiln_tensor *after = read_var(m, "dense/kernel");
    if (debug) {
        /* the first op with a NaN output is dense_1's matmul; the update did not run */
        CHECK(has("first in layer dense_1 (Dense)") && has("dense_1/MatMul") && has("NaN") && has("update was not applied"));
        CHECK(memcmp(before->data, after->data, kiln_tensor_nbytes(before)) == 0);
    } else {
        /* after the fact: every gradient was NaN, so the update wrote NaN from the first layer on */
        CHECK(has("the loss became NaN") && has("whose weights are now non-finite is dense (dense/kernel)") && has("--debug-numerics"));
        CHECK(isnan(((float *)after->data)[0]));
    }
    kiln_tensor_free(w);
    kiln_tensor_free(before);
    kiln_tensor_free(after);
    kiln_model_free(m);
    kiln_dataset_free(train);
}

/* a NaN feature in one example: the first layer's output is the first non-finite value */
static void test_nan_data(void) {
    kiln_dataset *train = separable(64, 3);
    ((float *)kiln_dataset_x(train)->data)[8 * 40 + 2] = NAN;
    kiln_model *m = mlp(0.01);
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 64, .no_shuffle = true, .debug_numerics = true });
    CHECK(st == KILN_NUMERIC_ERROR && has("epoch 1, step 1, first in layer dense (Dense)"));
    kiln_model_free(m);
    kiln_dataset_free(train);
}

static double explode(int epoch, double lr, void *user) { (void)lr; (void)user; return epoch >= 2 ? 1e6 : 0.01; }

/* diverging in epoch 2: epoch 1's checkpoint is still there, whole and finite */
static void test_checkpoint_intact(void) {
    char path[64];
    snprintf(path, sizeof path, "test_numerics_%d.safetensors", (int)getpid());
    remove(path);
    kiln_dataset *train = separable(256, 4);
    kiln_model *m = mlp(0.01);
    kiln_callback cb[2] = { kiln_callback_model_checkpoint(path, "loss", false), kiln_callback_lr_scheduler(explode, NULL) };
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 3, .batch_size = 32, .callbacks = cb, .n_callbacks = 2 });
    CHECK(st == KILN_NUMERIC_ERROR && has("at epoch 2, step"));
    kiln_model *back = mlp(0.01);
    CHECK_OK(kiln_model_load(back, path));
    CHECK(kiln_model_epoch(back) == 1);
    CHECK_OK(kiln_fit(back, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 32 }));   /* trains on from it */
    kiln_tensor *w = read_var(back, "dense/kernel");
    bool finite = true;
    for (int64_t i = 0; i < kiln_shape_numel(w->shape); i++) finite &= isfinite(((float *)w->data)[i]);
    CHECK(finite);
    kiln_tensor_free(w);
    kiln_model_free(back);
    kiln_model_free(m);
    kiln_dataset_free(train);
    remove(path);
}

int main(void) {
    test_poisoned_weight(true);
    test_poisoned_weight(false);
    test_nan_data();
    test_checkpoint_intact();
    return check_summary("test_numerics");
}
