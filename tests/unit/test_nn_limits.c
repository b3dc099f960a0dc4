/* No fixed caps in src/nn: a model with more than 256 trainable variables trains (the step was
 * refused before), and kiln_model_functional checks deep graphs with many shared paths once per
 * layer (it walked every path, 2^depth, and dropped inputs past 256 pending). */
#include <math.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"

static void test_many_variables(void) {
    enum { DEPTH = 150 };                  /* 150 Dense layers with bias + the output: 302 variables */
    kiln_model *m = kiln_sequential("deep", KILN_SHAPE(8));
    for (int i = 0; i < DEPTH; i++) kiln_layer_dense(m, &(kiln_dense_opts){ .units = 8 });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_model_status(m));
    CHECK(kiln_model_param_count(m, true) == DEPTH * (8 * 8 + 8) + 8 * 3 + 3);
    kiln_dataset *d = separable(64, 5);
    /* clipping by the global norm of all 302 gradients too (it used to fail whenever enabled) */
    kiln_optimizer opt = kiln_adam(1e-3);
    opt.clip_norm = 1.0;
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = opt, .from_logits = true }));
    CHECK_OK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 3, .batch_size = 16, .steps_per_epoch = 2, .no_shuffle = true }));
    int n = 0;
    const kiln_logs *h = kiln_model_history(m, &n);
    CHECK(n == 3);
    for (int i = 0; i < n; i++) CHECK_MSG(isfinite(h[i].loss), "epoch %d loss %g", i + 1, h[i].loss);
    /* the same two batches each epoch (no shuffle): the loss goes down */
    CHECK_MSG(n == 3 && h[2].loss < h[0].loss, "loss did not decrease: %g -> %g", n ? h[0].loss : 0, n == 3 ? h[2].loss : 0);
    kiln_eval_result r;
    CHECK_OK(kiln_evaluate(m, d, NULL, &r));
    CHECK(isfinite(r.loss) && r.count == 64);
    kiln_dataset_free(d);
    kiln_model_free(m);
}

/* x -> (relu(x), tanh(x)) -> add -> ... DEPTH times: 2^DEPTH paths from the output to the input. */
static void test_deep_functional(void) {
    enum { DEPTH = 40 };
    kiln_model *m = kiln_model_new("diamonds");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(4)), *other = kiln_input(m, KILN_SHAPE(4)), *h = x;
    for (int i = 0; i < DEPTH; i++) {
        kiln_layer *a = kiln_layer_activation(m, &(kiln_activation_opts){ .input = h, .activation = KILN_RELU });
        kiln_layer *b = kiln_layer_activation(m, &(kiln_activation_opts){ .input = h, .activation = KILN_TANH });
        h = kiln_layer_add(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ a, b }, .n_inputs = 2 });
    }
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = h, .units = 2 });
    CHECK_OK(kiln_model_status(m));
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    kiln_model_free(m);

    /* the same graph with a second input joined at the very bottom: found through every level */
    m = kiln_model_new("diamonds2");
    x = kiln_input(m, KILN_SHAPE(4));
    other = kiln_input(m, KILN_SHAPE(4));
    h = kiln_layer_add(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ x, other }, .n_inputs = 2 });
    for (int i = 0; i < DEPTH; i++) {
        kiln_layer *a = kiln_layer_activation(m, &(kiln_activation_opts){ .input = h, .activation = KILN_RELU });
        kiln_layer *b = kiln_layer_activation(m, &(kiln_activation_opts){ .input = h, .activation = KILN_TANH });
        h = kiln_layer_add(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ a, b }, .n_inputs = 2 });
    }
    out = kiln_layer_dense(m, &(kiln_dense_opts){ .input = h, .units = 2 });
    CHECK(kiln_model_functional(m, &x, 1, &out, 1) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_model_error(m), "depends on input 'input_2'") != NULL, "%s", kiln_model_error(m));
    kiln_model_free(m);
}

int main(void) {
    test_many_variables();
    test_deep_functional();
    return check_summary("test_nn_limits");
}
