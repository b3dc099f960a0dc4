/* Numbers that go wrong: every training step carries a finiteness guard, so a step whose loss or
 * gradients went NaN/Inf updates nothing, and training stops naming the epoch, the step and the
 * first layer (forward order) whose output, else gradient, went non-finite (found by running the
 * batch again with every op checked); with debug_numerics every step is checked as it runs. The
 * weights stay those before the bad step; the last good checkpoint stays intact. */
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
        /* the guard skipped the update; the batch run again with checks names dense_1's matmul */
        CHECK(has("the loss became NaN at epoch 2, step 1 and training stopped") && has("is in layer dense_1 (Dense): dense_1/MatMul") &&
              has("update was skipped") && has("--clipnorm"));
        CHECK(memcmp(before->data, after->data, kiln_tensor_nbytes(before)) == 0);
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

/* Every variable of a model (weights, optimizer slots, Adam's t) by name, read into one buffer. */
static float *all_vars(kiln_model *m, int64_t *count) {
    kiln_graph *g = kiln_model_graph(m);
    float *all = NULL;
    int64_t k = 0;
    for (int i = 0; i < kiln_graph_node_count(g); i++) {
        kiln_node *n = kiln_graph_node(g, i);
        if (!kiln_node_is_variable(n) || kiln_node_dtype(n) != KILN_F32 || !strncmp(kiln_node_name(n), "_accum/", 7)) continue;
        kiln_tensor *t = kiln_tensor_new(KILN_F32, kiln_node_shape(n));
        int64_t ne = kiln_shape_numel(kiln_node_shape(n));
        all = realloc(all, (size_t)(k + ne) * sizeof *all);
        CHECK_OK(kiln_session_read_variable(kiln_model_session(m), n, t));
        memcpy(all + k, t->data, (size_t)ne * sizeof *all);
        k += ne;
        kiln_tensor_free(t);
    }
    *count = k;
    return all;
}

static kiln_model *mlp_adam(void) {
    kiln_model *m = kiln_sequential("num_mlp", KILN_SHAPE(8));
    kiln_model_set_seed(m, 1);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.01), .from_logits = true, .device = test_device() }));
    return m;
}

/* A NaN in one example of the third batch, without debug_numerics: training stops at step 3
 * naming the first layer and the example; weights and Adam's slots are those after step 2,
 * bit for bit (a model trained for 2 steps on the same batches); with accumulation too. */
static void test_poisoned_batch(int accumulate) {
    kiln_dataset *train = separable(128, 5);
    kiln_model *good = mlp_adam(), *m = mlp_adam();
    kiln_fit_opts fo = { .batch_size = 32, .no_shuffle = true, .accumulate_steps = accumulate, .steps_per_epoch = 2 };
    CHECK_OK(kiln_fit(good, train, &fo));
    ((float *)kiln_dataset_x(train)->data)[8 * 70 + 3] = INFINITY;      /* batch 3, its example 6 */
    fo.steps_per_epoch = 0;
    kiln_status st = kiln_fit(m, train, &fo);
    CHECK(st == KILN_NUMERIC_ERROR && has("at epoch 1, step 3 and training stopped") && has("is in layer dense (Dense): dense/MatMul") &&
          has("input holds Inf (example 6 of the batch, element 3)") && has("the last checkpoint is intact"));
    if (accumulate > 1) CHECK(has("(micro-batch 1 of 4)"));
    else printf("a poisoned batch: %s\n", kiln_last_error());
    int64_t n1, n2;
    float *a = all_vars(good, &n1), *b = all_vars(m, &n2);
    CHECK_MSG(n1 == n2 && n1 > 0 && memcmp(a, b, (size_t)n1 * sizeof *a) == 0, "accumulate %d: the weights after the failure differ "
              "from those after step 2 (%lld vs %lld values)", accumulate, (long long)n1, (long long)n2);
    /* the model trains on from there on good data */
    ((float *)kiln_dataset_x(train)->data)[8 * 70 + 3] = 0.5f;
    CHECK_OK(kiln_fit(m, train, &fo));
    free(a); free(b);
    kiln_model_free(good);
    kiln_model_free(m);
    kiln_dataset_free(train);
}

/* A gradient, not the loss, goes non-finite first: an L2 factor of 3e38 on a kernel that is all
 * zeros but one 1 makes the penalty 3e38 (finite) and its gradient 2 * 3e38 (Inf). */
static void test_gradient_first(void) {
    kiln_dataset *train = separable(64, 6);
    kiln_model *m = kiln_sequential("num_grad", KILN_SHAPE(8));
    kiln_model_set_seed(m, 1);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3, .l2 = 3e38 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(0.01), .from_logits = true, .device = test_device() }));
    kiln_memory_report r;
    CHECK_OK(kiln_model_memory(m, 32, 1, &r));            /* builds the training step without running it */
    kiln_memory_report_free(&r);
    kiln_tensor *k = read_var(m, "dense_1/kernel");
    memset(k->data, 0, kiln_tensor_nbytes(k));
    ((float *)k->data)[0] = 1;
    CHECK_OK(kiln_session_assign_variable(kiln_model_session(m), kiln_graph_find(kiln_model_graph(m), "dense_1/kernel"), k));
    kiln_tensor *before = read_var(m, "dense/kernel");
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 32 });
    CHECK(st == KILN_NUMERIC_ERROR && has("the gradients became non-finite at epoch 1, step 1 (the loss was 3") &&
          has("is in the gradient of layer dense_1 (Dense)") && has("+Inf"));
    printf("a gradient first: %s\n", kiln_last_error());
    kiln_tensor *after = read_var(m, "dense/kernel"), *k2 = read_var(m, "dense_1/kernel");
    CHECK(memcmp(before->data, after->data, kiln_tensor_nbytes(before)) == 0 && memcmp(k->data, k2->data, kiln_tensor_nbytes(k)) == 0);
    kiln_tensor_free(k); kiln_tensor_free(k2); kiln_tensor_free(before); kiln_tensor_free(after);
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
    test_poisoned_batch(1);
    test_poisoned_batch(4);
    test_gradient_first();
    return check_summary("test_numerics");
}
