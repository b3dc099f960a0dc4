/* Gradient accumulation (kiln_fit_opts.accumulate_steps): a step of N micro-batches gives the
 * weights one whole-batch step gives, within f32 rounding (SGD one step, Adam several, a conv
 * model and an MLP, clipping); the batch must divide; the loss is over the whole batch; and
 * `kiln train --accumulate` runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/nn.h"

/* KILN_TEST_DEVICE=auto: the GPU when one answers (the *_cudasim tests), else the CPU */
static const char *test_device(void) { return getenv("KILN_TEST_DEVICE") ? getenv("KILN_TEST_DEVICE") : "cpu"; }

static kiln_model *mlp(kiln_optimizer opt, double clip) {
    kiln_model *m = kiln_sequential("acc_mlp", KILN_SHAPE(8));
    kiln_model_set_seed(m, 3);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_TANH, .l2 = 1e-3 });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    opt.clip_norm = clip;
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = opt, .from_logits = true, .metrics = KILN_METRIC_ACCURACY, .device = test_device() }));
    return m;
}

/* [8] examples seen as 2x4x1 images: a conv, a pool and a dense layer */
static kiln_model *convnet(kiln_optimizer opt, double clip) {
    kiln_model *m = kiln_sequential("acc_cnn", KILN_SHAPE(8));
    kiln_model_set_seed(m, 5);
    kiln_layer_reshape(m, &(kiln_reshape_opts){ .shape = KILN_SHAPE(2, 4, 1) });
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 6, .kernel = 2, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_avg_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    opt.clip_norm = clip;
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = opt, .from_logits = true, .metrics = KILN_METRIC_ACCURACY, .device = test_device() }));
    return m;
}

/* Largest |a - b| over every trainable variable, relative to max(1, |a|). */
static double weight_diff(kiln_model *a, kiln_model *b) {
    kiln_graph *ga = kiln_model_graph(a), *gb = kiln_model_graph(b);
    double worst = 0;
    for (int i = 0; i < kiln_graph_node_count(ga); i++) {
        kiln_node *va = kiln_graph_node(ga, i);
        if (!kiln_node_is_trainable(va)) continue;
        kiln_node *vb = kiln_graph_find(gb, kiln_node_name(va));
        if (!vb) { CHECK_MSG(0, "%s missing", kiln_node_name(va)); return 1e30; }
        kiln_tensor *ta = kiln_tensor_new(KILN_F32, kiln_node_shape(va)), *tb = kiln_tensor_new(KILN_F32, kiln_node_shape(va));
        CHECK_OK(kiln_session_read_variable(kiln_model_session(a), va, ta));
        CHECK_OK(kiln_session_read_variable(kiln_model_session(b), vb, tb));
        for (int64_t k = 0; k < kiln_shape_numel(ta->shape); k++) {
            double x = ((float *)ta->data)[k], y = ((float *)tb->data)[k];
            double d = fabs(x - y) / (fabs(x) > 1 ? fabs(x) : 1);
            if (!(d <= worst)) worst = d;
        }
        kiln_tensor_free(ta);
        kiln_tensor_free(tb);
    }
    return worst;
}

static void same_step(const char *what, kiln_model *(*make)(kiln_optimizer, double), kiln_optimizer opt, double clip,
                      int steps, int n, double tol) {
    kiln_dataset *train = separable(256, 11);
    kiln_model *whole = make(opt, clip), *acc = make(opt, clip);
    kiln_fit_opts fo = { .epochs = 1, .batch_size = 32, .steps_per_epoch = steps, .shuffle_seed = 4 };
    CHECK_OK(kiln_fit(whole, train, &fo));
    fo.accumulate_steps = n;
    CHECK_OK(kiln_fit(acc, train, &fo));
    double d = weight_diff(whole, acc);
    CHECK_MSG(d <= tol, "%s: weights differ by %g (tolerance %g)", what, d, tol);
    int nh, nh2;
    const kiln_logs *h = kiln_model_history(whole, &nh), *h2 = kiln_model_history(acc, &nh2);
    CHECK_MSG(nh == 1 && nh2 == 1 && fabs(h[0].loss - h2[0].loss) <= 1e-5 * fabs(h[0].loss) && h[0].accuracy == h2[0].accuracy,
              "%s: loss %.9g vs %.9g, accuracy %g vs %g", what, h[0].loss, h2[0].loss, h[0].accuracy, h2[0].accuracy);
    printf("%s: max relative weight difference %.3g after %d step%s\n", what, d, steps, steps == 1 ? "" : "s");
    kiln_model_free(whole);
    kiln_model_free(acc);
    kiln_dataset_free(train);
}

/* resident data (data_on_device): the fed example indices are sliced per micro-batch too */
static void test_resident(void) {
    kiln_dataset *train = separable(256, 12);
    kiln_model *whole = convnet(kiln_sgd(0.1), 0), *acc = convnet(kiln_sgd(0.1), 0);
    kiln_fit_opts fo = { .epochs = 1, .batch_size = 32, .steps_per_epoch = 2, .shuffle_seed = 4, .data_on_device = true };
    CHECK_OK(kiln_fit(whole, train, &fo));
    fo.accumulate_steps = 4;
    CHECK_OK(kiln_fit(acc, train, &fo));
    double d = weight_diff(whole, acc);
    CHECK_MSG(d <= 2e-6, "data_on_device: weights differ by %g", d);
    kiln_model_free(whole);
    kiln_model_free(acc);
    kiln_dataset_free(train);
}

static void test_errors(void) {
    kiln_dataset *train = separable(64, 1);
    kiln_model *m = mlp(kiln_sgd(0.1), 0);
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 30, .accumulate_steps = 4 });
    CHECK(st == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "not divisible by accumulate_steps 4") && strstr(kiln_last_error(), "e.g. 32"));
    st = kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 32, .accumulate_steps = -2 });
    CHECK(st == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "negative"));
    /* accumulate 1 after accumulate 4 on the same model: the step is rebuilt, training goes on */
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 32, .accumulate_steps = 4 }));
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 32 }));
    /* accumulators are not checkpointed */
    char path[64];
    snprintf(path, sizeof path, "test_accumulate_%d.safetensors", (int)getpid());
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 32, .accumulate_steps = 2 }));
    CHECK_OK(kiln_model_save(m, path, true));
    kiln_safetensors *f = NULL;
    CHECK_OK(kiln_safetensors_load(path, &f));
    CHECK(f && kiln_safetensors_find(f, "dense/kernel") && !kiln_safetensors_find(f, "_accum/dense/kernel"));
    kiln_safetensors_free(f);
    remove(path);
    kiln_model_free(m);
    kiln_dataset_free(train);
}

int main(void) {
    same_step("sgd, mlp, 4 micro-batches", mlp, kiln_sgd(0.1), 0, 1, 4, 2e-6);
    same_step("sgd, conv, 4 micro-batches", convnet, kiln_sgd(0.1), 0, 1, 4, 2e-6);
    same_step("momentum, mlp, 8 micro-batches, clipnorm", mlp, kiln_momentum(0.1, 0.9, false), 0.5, 3, 8, 1e-5);
    same_step("adam, mlp, 4 micro-batches, 5 steps", mlp, kiln_adam(0.01), 0, 5, 4, 1e-5);
    same_step("adam, conv, 2 micro-batches, 5 steps", convnet, kiln_adam(0.01), 0, 5, 2, 1e-5);
    test_resident();
    test_errors();
    return check_summary("test_accumulate");
}
