/* Keras-style models: building, summary, shape errors, training, evaluation, checkpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/data.h"

static char *read_all(FILE *f) {
    static char buf[16384];
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    return buf;
}

static void test_fashion_cnn_summary(void) {
    kiln_model *m = kiln_sequential("fashion_cnn", KILN_SHAPE(28, 28, 1));
    kiln_layer *c1 = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 32, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer *c2 = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 64, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer *p2 = kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer *fl = kiln_layer_flatten(m, NULL);
    kiln_layer *d1 = kiln_layer_dense(m, &(kiln_dense_opts){ .units = 128, .activation = KILN_RELU });
    kiln_layer *d2 = kiln_layer_dense(m, &(kiln_dense_opts){ .units = 10 });
    CHECK_OK(kiln_model_status(m));
    CHECK(kiln_model_param_count(m, false) == 421642);
    CHECK(kiln_model_param_count(m, true) == 421642);
    CHECK(!strcmp(kiln_layer_name(c1), "conv2d") && !strcmp(kiln_layer_name(c2), "conv2d_1"));
    CHECK(!strcmp(kiln_layer_name(d1), "dense") && !strcmp(kiln_layer_name(d2), "dense_1"));
    CHECK(!strcmp(kiln_layer_type(p2), "MaxPooling2D"));
    CHECK(kiln_shape_equal(kiln_layer_output_shape(p2), KILN_SHAPE(7, 7, 64)));
    CHECK(kiln_shape_equal(kiln_layer_output_shape(fl), KILN_SHAPE(3136)));
    FILE *f = tmpfile();
    kiln_model_summary(m, f);
    char *s = read_all(f);
    CHECK_MSG(strstr(s, "Total params: 421,642") != NULL, "%s", s);
    CHECK(strstr(s, "conv2d_1 (Conv2D)") != NULL);
    CHECK(strstr(s, "(None, 7, 7, 64)") != NULL);
    CHECK(strstr(s, "401,536") != NULL);
    fclose(f);
    kiln_model_free(m);

    kiln_model *p = kiln_model_preset("fashion_cnn", KILN_SCALAR, 10);
    CHECK(p && kiln_model_param_count(p, false) == 421642);
    kiln_model_free(p);
    p = kiln_model_preset("cifar_cnn", KILN_SCALAR, 10);
    /* conv 5*5*3*64+64, conv 5*5*64*64+64, dense 8*8*64*384+384, 384*192+192, 192*10+10 */
    CHECK(p && kiln_model_param_count(p, false) == 4864 + 102464 + 1573248 + 73920 + 1930);
    kiln_model_free(p);
    CHECK(kiln_model_preset("resnet999", KILN_SCALAR, 10) == NULL);
    CHECK(strstr(kiln_last_error(), "fashion_cnn") != NULL);
}

static void test_shape_errors(void) {
    kiln_model *m = kiln_sequential("bad", KILN_SHAPE(28, 28, 1));
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 8, .kernel = 3 });
    kiln_layer *d = kiln_layer_dense(m, &(kiln_dense_opts){ .units = 10 });    /* no flatten */
    kiln_layer *after = kiln_layer_dense(m, &(kiln_dense_opts){ .units = 10 });
    CHECK(d == NULL && after == NULL);
    CHECK(kiln_model_status(m) == KILN_SHAPE_MISMATCH);
    const char *e = kiln_model_error(m);
    CHECK_MSG(strstr(e, "dense") && strstr(e, "(None, 26, 26, 8)") && strstr(e, "flatten"), "%s", e);
    CHECK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-3) }) == KILN_SHAPE_MISMATCH);
    CHECK(strstr(kiln_last_error(), "(None, 26, 26, 8)") != NULL);
    kiln_model_free(m);

    m = kiln_sequential("small", KILN_SHAPE(4, 4, 1));
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 8, .kernel = 3 });
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 8, .kernel = 3, .name = "too_big" });
    CHECK(kiln_model_status(m) == KILN_SHAPE_MISMATCH);
    CHECK_MSG(strstr(kiln_model_error(m), "too_big") && strstr(kiln_model_error(m), "(None, 2, 2, 8)"), "%s", kiln_model_error(m));
    kiln_model_free(m);

    m = kiln_model_new("fn");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(8));
    kiln_layer *a = kiln_layer_dense(m, &(kiln_dense_opts){ .input = x, .units = 4 });
    kiln_layer *b = kiln_layer_dense(m, &(kiln_dense_opts){ .input = x, .units = 5 });
    CHECK(kiln_layer_add(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ a, b }, .n_inputs = 2 }) == NULL);
    CHECK_MSG(strstr(kiln_model_error(m), "add") && strstr(kiln_model_error(m), "(None, 5)"), "%s", kiln_model_error(m));
    kiln_model_free(m);
}

static kiln_model *tiny_mlp(uint64_t seed, int hidden) {
    kiln_model *m = kiln_sequential("tiny_mlp", KILN_SHAPE(8));
    kiln_model_set_seed(m, seed);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = hidden, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    return m;
}

static const kiln_compile_opts adam_opts = { .optimizer = { .kind = KILN_OPT_ADAM, .lr = 0.01 }, .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                              .from_logits = true, .metrics = KILN_METRIC_ACCURACY | KILN_METRIC_TOP_K, .top_k = 2 };

static int batches_seen;
static uint64_t allocs_at[64];
/* Records kiln_alloc_count() at each batch end of the first epoch: the step loop must not allocate. */
static bool count_batches(kiln_model *m, const kiln_logs *l, void *user) {
    (void)m; (void)user;
    if (l->epoch == 1 && l->batch < 64) allocs_at[l->batch] = kiln_alloc_count();
    batches_seen++;
    return false;
}

static void test_training(void) {
    kiln_dataset *train = separable(512, 1), *test = separable(103, 2);
    if (!train || !test) { CHECK_MSG(0, "datasets: %s", kiln_last_error()); return; }
    kiln_model *m = tiny_mlp(7, 16);
    CHECK_OK(kiln_compile(m, &adam_opts));
    kiln_callback cb = kiln_callback_lambda(count_batches, NULL, NULL);
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 6, .batch_size = 32, .validation = test, .callbacks = &cb, .n_callbacks = 1 }));
    int n;
    const kiln_logs *h = kiln_model_history(m, &n);
    CHECK(n == 6);
    CHECK(batches_seen == 6 * 16);
    CHECK_MSG(allocs_at[16] == allocs_at[3], "the training loop allocated %llu times between steps 3 and 16",
              (unsigned long long)(allocs_at[16] - allocs_at[3]));
    if (n == 6) {
        CHECK_MSG(h[5].loss < h[0].loss * 0.7, "loss %g -> %g", h[0].loss, h[5].loss);
        CHECK_MSG(h[5].accuracy > h[0].accuracy, "accuracy %g -> %g", h[0].accuracy, h[5].accuracy);
        CHECK_MSG(h[5].val_accuracy > 0.85, "val_accuracy %g", h[5].val_accuracy);
        CHECK(h[5].has_val && h[5].top_k >= h[5].accuracy);
        CHECK(h[5].images_per_sec > 0 && h[5].lr > 0);
    }
    CHECK(kiln_model_epoch(m) == 6);

    /* evaluate covers every example: 103 = 3 batches of 32 + 7 */
    kiln_eval_result r;
    CHECK_OK(kiln_evaluate(m, test, &(kiln_eval_opts){ .batch_size = 32 }, &r));
    CHECK(r.count == 103);
    kiln_tensor *p = NULL;
    CHECK_OK(kiln_predict(m, kiln_dataset_x(test), &(kiln_eval_opts){ .batch_size = 32 }, &p));
    if (p) {
        CHECK(p->shape.rank == 2 && p->shape.dim[0] == 103 && p->shape.dim[1] == 3);
        int right = 0;
        const float *o = p->data;
        for (int i = 0; i < 103; i++) {
            int best = 0;
            for (int c = 1; c < 3; c++) if (o[i * 3 + c] > o[i * 3 + best]) best = c;
            right += best == (int)kiln_tensor_get(kiln_dataset_y(test), i);
        }
        CHECK_NEAR(r.accuracy, right / 103.0, 1e-9);
        if (n == 6) CHECK_NEAR(r.accuracy, h[5].val_accuracy, 1e-9);
    }

    /* save -> load into a fresh model (other seed): identical predictions */
    const char *path = "test_nn_ckpt.safetensors";
    CHECK_OK(kiln_model_save(m, path, true));
    kiln_model *m2 = tiny_mlp(99, 16);
    CHECK_OK(kiln_compile(m2, &adam_opts));
    CHECK_OK(kiln_model_load(m2, path));
    CHECK(kiln_model_epoch(m2) == 6);
    kiln_tensor *p2 = NULL;
    CHECK_OK(kiln_predict(m2, kiln_dataset_x(test), &(kiln_eval_opts){ .batch_size = 32 }, &p2));
    if (p && p2) CHECK(memcmp(p->data, p2->data, kiln_tensor_nbytes(p)) == 0);
    /* the optimizer state came back too: Adam's step count of dense/kernel is 6 epochs * 16 steps */
    kiln_node *tv = kiln_model_graph(m2) ? kiln_graph_find(kiln_model_graph(m2), "dense/kernel/t") : NULL;
    CHECK(tv != NULL);
    if (tv) {
        kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SCALAR);
        CHECK_OK(kiln_session_read_variable(kiln_model_session(m2), tv, t));
        CHECK_NEAR(kiln_tensor_get(t, 0), 96, 0);
        kiln_tensor_free(t);
    }
    /* resume: one more epoch continues from epoch 6 */
    CHECK_OK(kiln_fit(m2, train, &(kiln_fit_opts){ .epochs = 7, .initial_epoch = kiln_model_epoch(m2), .batch_size = 32 }));
    CHECK(kiln_model_epoch(m2) == 7);
    kiln_tensor_free(p2);
    kiln_model_free(m2);

    /* mismatched checkpoint: the error names the tensor and both shapes */
    kiln_model *m3 = tiny_mlp(1, 20);
    CHECK_OK(kiln_compile(m3, &adam_opts));
    CHECK(kiln_model_load(m3, path) == KILN_SHAPE_MISMATCH);
    CHECK_MSG(strstr(kiln_last_error(), "dense/kernel") && strstr(kiln_last_error(), "[8, 16]") && strstr(kiln_last_error(), "[8, 20]"), "%s", kiln_last_error());
    kiln_model_free(m3);
    kiln_model *m4 = kiln_sequential("other", KILN_SHAPE(8));
    kiln_layer_dense(m4, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU, .name = "hidden" });
    kiln_layer_dense(m4, &(kiln_dense_opts){ .units = 3 });
    CHECK(kiln_model_load(m4, path) == KILN_NOT_FOUND);
    CHECK_MSG(strstr(kiln_last_error(), "hidden/kernel") && strstr(kiln_last_error(), "missing"), "%s", kiln_last_error());
    CHECK(kiln_model_load(m4, "no/such/checkpoint.safetensors") != KILN_OK);
    CHECK(strstr(kiln_last_error(), "no/such/checkpoint.safetensors") != NULL);
    kiln_model_free(m4);
    unlink(path);

    kiln_tensor_free(p);
    kiln_model_free(m);
    kiln_dataset_free(train);
    kiln_dataset_free(test);
}

static void test_divergence_and_functional(void) {
    kiln_dataset *train = separable(256, 3);
    if (!train) return;
    kiln_model *m = tiny_mlp(3, 16);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(1e30), .from_logits = true }));
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 3, .batch_size = 32 });
    CHECK_MSG(st == KILN_NUMERIC_ERROR && strstr(kiln_last_error(), "learning rate"), "%s: %s", kiln_status_name(st), kiln_last_error());
    kiln_model_free(m);

    /* functional: a residual block, x -> dense -> dense + x -> concatenate -> dense */
    m = kiln_model_new("residual");
    kiln_model_set_seed(m, 5);
    kiln_layer *x = kiln_input(m, KILN_SHAPE(8));
    kiln_layer *h = kiln_layer_dense(m, &(kiln_dense_opts){ .input = x, .units = 8, .activation = KILN_RELU });
    h = kiln_layer_dense(m, &(kiln_dense_opts){ .input = h, .units = 8 });
    kiln_layer *s = kiln_layer_add(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ x, h }, .n_inputs = 2 });
    kiln_layer *c = kiln_layer_concatenate(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ s, x }, .n_inputs = 2 });
    kiln_layer *y = kiln_layer_dense(m, &(kiln_dense_opts){ .input = c, .units = 3 });
    CHECK_OK(kiln_model_functional(m, &x, 1, &y, 1));
    CHECK(kiln_shape_equal(kiln_layer_output_shape(c), KILN_SHAPE(16)));
    CHECK(kiln_model_param_count(m, false) == 72 + 72 + 51);
    CHECK_OK(kiln_compile(m, &adam_opts));
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 4, .batch_size = 32, .validation_split = 0.25 }));
    int n;
    const kiln_logs *hist = kiln_model_history(m, &n);
    CHECK(n == 4 && hist[3].has_val && hist[3].loss < hist[0].loss);
    kiln_model_free(m);
    kiln_dataset_free(train);
}

static void test_schedules(void) {
    kiln_lr_schedule cos = { .kind = KILN_LR_COSINE, .warmup_epochs = 1, .min_lr = 0 };
    CHECK(kiln_lr_at(&cos, 0.1, 0.5, 10) < 0.06);
    CHECK_NEAR(kiln_lr_at(&cos, 0.1, 1, 10), 0.1, 1e-9);
    CHECK_NEAR(kiln_lr_at(&cos, 0.1, 10, 10), 0, 1e-9);
    kiln_lr_schedule oc = { .kind = KILN_LR_ONE_CYCLE };
    CHECK_NEAR(kiln_lr_at(&oc, 0.1, 0, 10), 0.004, 1e-9);
    CHECK_NEAR(kiln_lr_at(&oc, 0.1, 3, 10), 0.1, 1e-9);
    CHECK(kiln_lr_at(&oc, 0.1, 10, 10) < 1e-5);
    kiln_lr_schedule st = { .kind = KILN_LR_STEP, .step_epochs = 2, .gamma = 0.5 };
    CHECK_NEAR(kiln_lr_at(&st, 0.1, 1.9, 10), 0.1, 1e-12);
    CHECK_NEAR(kiln_lr_at(&st, 0.1, 4.0, 10), 0.025, 1e-12);
    CHECK_NEAR(kiln_lr_at(&(kiln_lr_schedule){ 0 }, 0.1, 4.0, 10), 0.1, 0);
}

/* Every layer kind in one small model, trained with probabilities (softmax output) and
 * categorical cross-entropy; batch-norm statistics move and survive a save/load round trip. */
static void test_all_layers(void) {
    kiln_dataset *train = kiln_dataset_synthetic(KILN_SHAPE(8, 8, 3), 4, 200, 11);
    if (!train) { CHECK_MSG(0, "synthetic: %s", kiln_last_error()); return; }
    kiln_model *m = kiln_sequential("zoo", KILN_SHAPE(8, 8, 3));
    kiln_model_set_seed(m, 3);
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 4, .kernel = 3, .padding = KILN_SAME, .no_bias = true, .l2 = 1e-4 });
    kiln_layer_batch_norm(m, NULL);
    kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_RELU });
    kiln_layer *dw = kiln_layer_depthwise_conv2d(m, &(kiln_conv2d_opts){ .kernel = 3, .padding = KILN_SAME, .depth_multiplier = 2 });
    kiln_layer_avg_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer *gc = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 8, .kernel = 1, .groups = 2, .activation = KILN_TANH });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer_dropout(m, &(kiln_dropout_opts){ .rate = 0.25 });
    kiln_layer *gap = kiln_layer_global_avg_pool2d(m, NULL);
    kiln_layer_reshape(m, &(kiln_reshape_opts){ .shape = KILN_SHAPE(2, -1) });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 4, .activation = KILN_SOFTMAX });
    CHECK_OK(kiln_model_status(m));
    CHECK(kiln_shape_equal(kiln_layer_output_shape(dw), KILN_SHAPE(8, 8, 8)));
    CHECK(kiln_shape_equal(kiln_layer_output_shape(gc), KILN_SHAPE(4, 4, 8)));
    CHECK(kiln_shape_equal(kiln_layer_output_shape(gap), KILN_SHAPE(8)));
    /* conv 108, bn 16 (8 trainable), dw 3*3*1*8+8, grouped 1*1*4*8+8, dense 8*4+4 */
    CHECK(kiln_model_param_count(m, false) == 108 + 16 + 80 + 40 + 36);
    CHECK(kiln_model_param_count(m, true) == 108 + 8 + 80 + 40 + 36);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_momentum(0.05, 0.9, true), .loss = KILN_LOSS_CATEGORICAL_CROSSENTROPY,
                                                   .metrics = KILN_METRIC_ACCURACY, .schedule = { .kind = KILN_LR_COSINE, .warmup_epochs = 0.5 } }));
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 16 }));
    kiln_graph *g = kiln_model_graph(m);
    kiln_node *mm = g ? kiln_graph_find(g, "batch_normalization/moving_mean") : NULL;
    CHECK(mm != NULL);
    if (mm) {
        kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(4));
        CHECK_OK(kiln_session_read_variable(kiln_model_session(m), mm, t));
        double s = 0;
        for (int i = 0; i < 4; i++) s += fabs(kiln_tensor_get(t, i));
        CHECK_MSG(s > 0, "moving_mean did not move");
        kiln_tensor_free(t);
    }
    kiln_tensor *p1 = NULL, *p2 = NULL;
    CHECK_OK(kiln_predict(m, kiln_dataset_x(train), NULL, &p1));
    CHECK_OK(kiln_model_save(m, "test_nn_zoo.safetensors", false));
    kiln_model *m2 = kiln_sequential("zoo", KILN_SHAPE(8, 8, 3));
    kiln_layer_conv2d(m2, &(kiln_conv2d_opts){ .filters = 4, .kernel = 3, .padding = KILN_SAME, .no_bias = true });
    kiln_layer_batch_norm(m2, NULL);
    kiln_layer_activation(m2, &(kiln_activation_opts){ .activation = KILN_RELU });
    kiln_layer_depthwise_conv2d(m2, &(kiln_conv2d_opts){ .kernel = 3, .padding = KILN_SAME, .depth_multiplier = 2 });
    kiln_layer_avg_pool2d(m2, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_conv2d(m2, &(kiln_conv2d_opts){ .filters = 8, .kernel = 1, .groups = 2, .activation = KILN_TANH });
    kiln_layer_max_pool2d(m2, &(kiln_pool_opts){ .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer_dropout(m2, &(kiln_dropout_opts){ .rate = 0.25 });
    kiln_layer_global_avg_pool2d(m2, NULL);
    kiln_layer_reshape(m2, &(kiln_reshape_opts){ .shape = KILN_SHAPE(2, -1) });
    kiln_layer_flatten(m2, NULL);
    kiln_layer_dense(m2, &(kiln_dense_opts){ .units = 4, .activation = KILN_SOFTMAX });
    CHECK_OK(kiln_model_load(m2, "test_nn_zoo.safetensors"));      /* before compile: no graph yet */
    CHECK_OK(kiln_predict(m2, kiln_dataset_x(train), NULL, &p2));
    if (p1 && p2) CHECK(memcmp(p1->data, p2->data, kiln_tensor_nbytes(p1)) == 0);
    unlink("test_nn_zoo.safetensors");
    kiln_tensor_free(p1);
    kiln_tensor_free(p2);
    kiln_model_free(m2);
    kiln_model_free(m);
    kiln_dataset_free(train);
}

static void test_callbacks(void) {
    kiln_dataset *train = separable(128, 5), *val = separable(64, 6);
    if (!train || !val) return;
    /* an lr so small the loss cannot improve by min_delta: EarlyStopping(patience 2) stops at epoch 3 */
    kiln_model *m = tiny_mlp(2, 8);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(1e-9), .from_logits = true, .metrics = KILN_METRIC_ACCURACY }));
    kiln_callback cbs[3] = { kiln_callback_early_stopping("val_loss", 2, 0.5),
                             kiln_callback_model_checkpoint("test_nn_best_{epoch:02d}.safetensors", "val_accuracy", true),
                             kiln_callback_csv_logger("test_nn_history.csv") };
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 10, .batch_size = 32, .validation = val, .callbacks = cbs, .n_callbacks = 3 }));
    CHECK(kiln_model_epoch(m) == 3);
    CHECK(access("test_nn_best_01.safetensors", F_OK) == 0);      /* the first epoch is always the best so far */
    FILE *f = fopen("test_nn_history.csv", "r");
    CHECK(f != NULL);
    if (f) {
        char line[256];
        CHECK(fgets(line, sizeof line, f) && !strcmp(line, "epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds,images_per_sec\n"));
        int rows = 0;
        while (fgets(line, sizeof line, f)) rows++;
        CHECK(rows == 3);
        fclose(f);
    }
    for (int e = 1; e <= 3; e++) { char p[64]; snprintf(p, sizeof p, "test_nn_best_%02d.safetensors", e); unlink(p); }
    unlink("test_nn_history.csv");
    /* monitoring val_* without validation data is an error that says what to do */
    kiln_callback es = kiln_callback_early_stopping("val_loss", 1, 0);
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 32, .callbacks = &es, .n_callbacks = 1 }) == KILN_INVALID_ARGUMENT);
    CHECK(strstr(kiln_last_error(), "validation") != NULL);
    kiln_model_free(m);
    kiln_dataset_free(train);
    kiln_dataset_free(val);
}

/* Runs kiln_fit with the given verbose, stdout sent to a file (not a terminal); the output in out. */
static void fit_captured(int verbose, char *out, size_t cap) {
    char path[] = "/tmp/kiln_verbose_XXXXXX";
    int fd = mkstemp(path);
    out[0] = 0;
    if (fd < 0) { CHECK_MSG(0, "mkstemp"); return; }
    kiln_dataset *train = separable(64, 9);
    kiln_model *m = tiny_mlp(3, 4);
    CHECK_OK(kiln_compile(m, &adam_opts));
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 32, .verbose = verbose });
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    CHECK_OK(st);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, cap - 1);
    out[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    kiln_model_free(m);
    kiln_dataset_free(train);
}

/* issue 28: the default (a zeroed kiln_fit_opts, KILN_VERBOSE_AUTO) prints one line per epoch when
 * stdout is not a terminal, like Keras's verbose="auto"; KILN_VERBOSE_SILENT prints nothing */
static void test_verbose_auto(void) {
    static char out[8192];
    fit_captured(KILN_VERBOSE_AUTO, out, sizeof out);
    CHECK_MSG(strstr(out, "Epoch 1/2 - ") && strstr(out, "Epoch 2/2 - ") && !strchr(out, '\r') && !strchr(out, '\033'),
              "default verbose, stdout a file: '%s'", out);
    fit_captured(KILN_VERBOSE_SILENT, out, sizeof out);
    CHECK_MSG(out[0] == 0, "KILN_VERBOSE_SILENT printed '%s'", out);
    fit_captured(2, out, sizeof out);
    CHECK_MSG(strstr(out, "Epoch 2/2 - ") != NULL, "verbose 2: '%s'", out);
}

int main(void) {
    test_fashion_cnn_summary();
    test_shape_errors();
    test_schedules();
    test_training();
    test_divergence_and_functional();
    test_all_layers();
    test_callbacks();
    test_verbose_auto();
    return check_summary("test_nn");
}
