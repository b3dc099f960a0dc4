/* The precision policy: graph autocast (mixed MatMul / Conv2D and their gradients against f32),
 * the model policy (casts in the step graph, f32 islands, f32 variables), checkpoints that load
 * across policies, and the policy names. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "ops/op.h"
#include "kiln/device.h"

/* Random values that bf16 represents exactly, so a mixed product equals the f32 one but for the
 * order of the f32 sums. */
static kiln_tensor *bf16_exact(kiln_shape s, uint64_t seed) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, s);
    kiln_rng r = kiln_rng_new(seed);
    for (int64_t i = 0; i < kiln_shape_numel(s); i++)
        kiln_tensor_set(t, i, kiln_bf16_to_f32(kiln_f32_to_bf16((float)(2 * kiln_rng_uniform(&r) - 1))));
    return t;
}

static double max_rel(const kiln_tensor *a, const kiln_tensor *b) {
    double scale = 1e-30, err = 0;
    int64_t n = kiln_shape_numel(a->shape);
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(kiln_tensor_get(b, i)));
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(kiln_tensor_get(a, i) - kiln_tensor_get(b, i));
        if (!(d <= err)) err = d;      /* NaN counts as the worst */
    }
    return err / scale;
}

/* out = op(x, w) built with and without autocast; d(sum(out * c))/dx and /dw of the two must
 * agree (f32 sums apart), the mixed graph must hold acc_f32 ops and the output stay f32. */
static void check_autocast(const char *what, bool conv, bool ta, bool tb, kiln_shape xs, kiln_shape ws, kiln_backend_kind be) {
    kiln_tensor *xv = bf16_exact(xs, 1), *wv = bf16_exact(ws, 2), *res[2][3] = { { 0 } };
    for (int mixed = 0; mixed < 2; mixed++) {
        kiln_graph *g = kiln_graph_new();
        kiln_node *x = kiln_placeholder(g, "x", KILN_F32, xs), *w = kiln_placeholder(g, "w", KILN_F32, ws);
        CHECK_OK(kiln_graph_set_autocast(g, mixed ? KILN_BF16 : KILN_F32));
        kiln_node *y = conv ? kiln_conv2d(g, x, w, &(kiln_conv_params){ .padding = KILN_SAME, .stride_h = 2, .stride_w = 2 })
                            : kiln_matmul(g, x, w, ta, tb);
        CHECK_OK(kiln_graph_set_autocast(g, KILN_F32));
        CHECK_MSG(y && kiln_node_dtype(y) == KILN_F32, "%s: output dtype", what);
        CHECK_MSG(y && y->attrs.acc_f32 == (mixed == 1), "%s: acc_f32 %d", what, y ? y->attrs.acc_f32 : -1);
        kiln_tensor *cv = y ? bf16_exact(kiln_node_shape(y), 3) : NULL;
        kiln_node *loss = kiln_reduce_sum(g, kiln_mul(g, y, kiln_constant(g, cv)), NULL, 0, false);
        kiln_node *xw[2] = { x, w }, *d[2] = { 0 };
        CHECK_OK(kiln_gradients(g, loss, xw, 2, d));
        CHECK_MSG(d[0] && d[1] && kiln_node_dtype(d[0]) == KILN_F32 && kiln_node_dtype(d[1]) == KILN_F32, "%s: gradients are f32", what);
        kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = be });
        kiln_feed feeds[2] = { { x, xv }, { w, wv } };
        kiln_node *f[3] = { y, d[0], d[1] };
        CHECK_OK(kiln_session_run(s, feeds, 2, f, res[mixed], 3, NULL, 0));
        kiln_session_free(s);
        kiln_tensor_free(cv);
        kiln_graph_free(g);
    }
    const char *names[3] = { "output", "dx", "dw" };
    for (int k = 0; k < 3; k++) {
        if (!res[0][k] || !res[1][k]) { CHECK_MSG(false, "%s: %s missing", what, names[k]); continue; }
        double e = max_rel(res[1][k], res[0][k]);
        /* cuda's convolutions round their sum to bf16 before widening it (cuDNN: SEMANTICS.md) */
        double tol = be == KILN_BACKEND_CUDA && conv ? 4e-3 : 1e-5;
        CHECK_MSG(e <= tol, "%s on %s: mixed %s differs from f32 by %.3g", what,
                  be == KILN_BACKEND_REF ? "ref" : be == KILN_BACKEND_CPU ? "cpu" : "cuda", names[k], e);
    }
    for (int m = 0; m < 2; m++) for (int k = 0; k < 3; k++) kiln_tensor_free(res[m][k]);
    kiln_tensor_free(xv);
    kiln_tensor_free(wv);
}

static kiln_model *small_net(void) {
    kiln_model *m = kiln_sequential("prec", KILN_SHAPE(12, 12, 3));
    kiln_model_set_seed(m, 5);
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 16, .kernel = 3, .padding = KILN_SAME });
    kiln_layer_batch_norm(m, NULL);
    kiln_layer_activation(m, &(kiln_activation_opts){ .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 32, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 4 });
    return m;
}

/* KILN_TEST_DEVICE=auto (the *_cudasim test): the models train on the simulated GPU */
static const char *device(void) { return getenv("KILN_TEST_DEVICE") ? getenv("KILN_TEST_DEVICE") : "cpu"; }

static kiln_status compile(kiln_model *m, kiln_precision p) {
    return kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-3), .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                                 .from_logits = true, .metrics = KILN_METRIC_ACCURACY, .device = device(), .precision = p });
}

/* The training graph under mixed_bfloat16 (Keras' policy): every MatMul / Conv2D computes from
 * bf16 operands; forward products and activation gradients stay bf16 (the activations between
 * layers are bf16), weight gradients come out f32 (acc_f32) for the f32 variables; every variable
 * is f32; batch norm, softmax cross-entropy and the output are f32. */
static void check_model_graph(kiln_model *m) {
    kiln_graph *g = kiln_model_graph(m);
    int n_half = 0, n_wgrad = 0, n_cast = 0, n_plain = 0, n_half_act = 0;
    for (int i = 0; g && i < kiln_graph_node_count(g); i++) {
        kiln_node *n = kiln_graph_node(g, i);
        switch (n->op) {
        case KILN_OP_MATMUL: case KILN_OP_CONV2D: case KILN_OP_CONV2D_BWD_INPUT: case KILN_OP_CONV2D_BWD_FILTER:
            if (n->in[0]->dtype != KILN_BF16 || n->in[1]->dtype != KILN_BF16) n_plain++;
            else if (n->attrs.acc_f32 && n->dtype == KILN_F32) n_wgrad++;
            else if (!n->attrs.acc_f32 && n->dtype == KILN_BF16) n_half++;
            else n_plain++;
            break;
        case KILN_OP_RELU: case KILN_OP_MAX_POOL: case KILN_OP_BIAS_ADD: n_half_act += n->dtype == KILN_BF16; break;
        case KILN_OP_CAST: n_cast += n->dtype == KILN_BF16; break;
        case KILN_OP_VARIABLE: CHECK_MSG(n->dtype == KILN_F32, "variable %s is %s", n->name, kiln_dtype_name(n->dtype)); break;
        case KILN_OP_BATCH_NORM: case KILN_OP_SPARSE_SOFTMAX_XENT: case KILN_OP_SOFTMAX:
            CHECK_MSG(n->dtype == KILN_F32 && n->in[0]->dtype == KILN_F32, "%s runs in %s", n->name, kiln_dtype_name(n->in[0]->dtype));
            break;
        default: break;
        }
    }
    /* forward conv + 2 dense in the training and inference forwards; their weight gradients (f32)
     * and input gradients (bf16; the first layer's is built and pruned later) */
    CHECK_MSG(n_half >= 3 + 2 && n_wgrad >= 3 && n_plain == 0, "bf16 ops %d, weight-gradient ops %d, others %d", n_half, n_wgrad, n_plain);
    CHECK_MSG(n_half_act >= 4, "bf16 bias/relu/pool ops %d", n_half_act);
    CHECK_MSG(n_cast >= 6, "bf16 casts %d", n_cast);
}

static void check_policy_and_checkpoints(void) {
    kiln_dataset *ds = kiln_dataset_synthetic(KILN_SHAPE(12, 12, 3), 4, 64, 9);
    kiln_model *a = small_net();
    CHECK_OK(compile(a, KILN_PRECISION_MIXED_BFLOAT16));
    bool cpu = !strcmp(device(), "cpu") || !kiln_gpu_available();
    kiln_precision want = kiln_cpu_has_bf16() || !cpu ? KILN_PRECISION_MIXED_BFLOAT16 : KILN_PRECISION_FLOAT32;
    CHECK(kiln_model_precision(a) == want);
    CHECK_OK(kiln_fit(a, ds, &(kiln_fit_opts){ .epochs = 2, .batch_size = 16 }));
    if (want == KILN_PRECISION_MIXED_BFLOAT16) check_model_graph(a);
    const char *path = "test_precision_ckpt.safetensors";
    CHECK_OK(kiln_model_save(a, path, true));
    kiln_tensor *pa = NULL, *pb = NULL, *pc = NULL;
    CHECK_OK(kiln_predict(a, kiln_dataset_x(ds), NULL, &pa));
    /* the bf16 checkpoint in a float32 model, and back into a bf16 one */
    kiln_model *b = small_net(), *c = small_net();
    CHECK_OK(compile(b, KILN_PRECISION_FLOAT32));
    CHECK_OK(kiln_model_load(b, path));
    CHECK_OK(kiln_predict(b, kiln_dataset_x(ds), NULL, &pb));
    CHECK_OK(kiln_model_save(b, path, true));
    CHECK_OK(compile(c, KILN_PRECISION_MIXED_BFLOAT16));
    CHECK_OK(kiln_model_load(c, path));
    CHECK_OK(kiln_predict(c, kiln_dataset_x(ds), NULL, &pc));
    if (pa && pb && pc) {
        /* the same f32 weights: bf16 rounding of the operands moves the logits a little */
        double e_ab = max_rel(pb, pa), e_ac = max_rel(pc, pa);
        CHECK_MSG(e_ab > 0 || want == KILN_PRECISION_FLOAT32, "bf16 and f32 predictions are bit-identical: is the policy applied?");
        CHECK_MSG(e_ab < 0.05, "f32 model on the bf16 checkpoint: predictions differ by %.3g", e_ab);
        CHECK_MSG(e_ac <= 1e-5, "bf16 model after a round trip through f32: predictions differ by %.3g", e_ac);
    }
    /* training continues in the other policy from the checkpoint */
    CHECK_OK(kiln_fit(b, ds, &(kiln_fit_opts){ .epochs = 3, .batch_size = 16 }));
    kiln_tensor_free(pa); kiln_tensor_free(pb); kiln_tensor_free(pc);
    kiln_model_free(a); kiln_model_free(b); kiln_model_free(c);
    kiln_dataset_free(ds);
    unlink(path);
}

static void check_names(void) {
    kiln_precision p = KILN_PRECISION_COUNT;
    CHECK(kiln_precision_parse("mixed_bfloat16", &p) == KILN_OK && p == KILN_PRECISION_MIXED_BFLOAT16);
    CHECK(kiln_precision_parse("bf16", &p) == KILN_OK && p == KILN_PRECISION_MIXED_BFLOAT16);
    CHECK(kiln_precision_parse("fp16", &p) == KILN_OK && p == KILN_PRECISION_MIXED_FLOAT16);
    CHECK(kiln_precision_parse("mixed_float16", &p) == KILN_OK && p == KILN_PRECISION_MIXED_FLOAT16);
    CHECK(kiln_precision_parse("float32", &p) == KILN_OK && p == KILN_PRECISION_FLOAT32);
    CHECK(kiln_precision_parse("half", &p) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "mixed_bfloat16"));
    CHECK(!strcmp(kiln_precision_name(KILN_PRECISION_MIXED_FLOAT16), "mixed_float16"));
    kiln_graph *g = kiln_graph_new();
    CHECK(kiln_graph_set_autocast(g, KILN_I32) == KILN_INVALID_ARGUMENT);
    CHECK(kiln_graph_autocast(g) == KILN_F32);
    kiln_graph_free(g);
    kiln_model *m = small_net();
    CHECK(kiln_compile(m, &(kiln_compile_opts){ .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, .precision = (kiln_precision)7 }) ==
          KILN_INVALID_ARGUMENT);
    kiln_model_free(m);
}

/* ---- dynamic loss scaling (mixed_float16) with an engineered overflow ---- */
static double read_var(kiln_model *m, const char *name) {
    kiln_node *v = kiln_graph_find(kiln_model_graph(m), name);
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    double x = v && kiln_session_read_variable(kiln_model_session(m), v, t) == KILN_OK ? kiln_tensor_get(t, 0) : NAN;
    kiln_tensor_free(t);
    return x;
}

static void set_var(kiln_model *m, const char *name, double x) {
    kiln_node *v = kiln_graph_find(kiln_model_graph(m), name);
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    kiln_tensor_set(t, 0, x);
    CHECK_MSG(v != NULL, "no variable %s", name);
    if (v) CHECK_OK(kiln_session_assign_variable(kiln_model_session(m), v, t));
    kiln_tensor_free(t);
}

/* Every weight and optimizer slot (not the loss-scale state or the learning rate), concatenated. */
static double *snapshot(kiln_model *m, int64_t *count) {
    kiln_graph *g = kiln_model_graph(m);
    double *all = NULL;
    int64_t k = 0;
    for (int i = 0; i < kiln_graph_node_count(g); i++) {
        kiln_node *n = kiln_graph_node(g, i);
        if (n->op != KILN_OP_VARIABLE || !strncmp(n->name, "loss_scale/", 11) || !strcmp(n->name, "learning_rate")) continue;
        kiln_tensor *t = kiln_tensor_new(n->dtype, n->shape);
        int64_t ne = kiln_shape_numel(n->shape);
        all = realloc(all, (size_t)(k + ne) * sizeof *all);
        if (kiln_session_read_variable(kiln_model_session(m), n, t) == KILN_OK)
            for (int64_t j = 0; j < ne; j++) all[k + j] = kiln_tensor_get(t, j);
        k += ne;
        kiln_tensor_free(t);
    }
    *count = k;
    return all;
}

static void check_loss_scaling(void) {
    kiln_dataset *ds = kiln_dataset_synthetic(KILN_SHAPE(6), 3, 32, 4);
    kiln_model *m = kiln_sequential("ls", KILN_SHAPE(6));
    kiln_model_set_seed(m, 3);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 8, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-2), .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                                   .from_logits = true, .device = device(), .precision = KILN_PRECISION_MIXED_FLOAT16 }));
    CHECK(kiln_model_precision(m) == KILN_PRECISION_MIXED_FLOAT16);
    kiln_fit_opts one = { .epochs = 1, .batch_size = 16, .steps_per_epoch = 1 };
    CHECK_OK(kiln_fit(m, ds, &one));                      /* builds the step: one good step at 2^15 */
    CHECK_NEAR(read_var(m, "loss_scale/scale"), 32768, 0);
    CHECK_NEAR(read_var(m, "loss_scale/good_steps"), 1, 0);
    /* the overflow: a scale near FLT_MAX makes the scaled gradients Inf */
    set_var(m, "loss_scale/scale", 3e38);
    int64_t n0, n1;
    double *before = snapshot(m, &n0);
    CHECK_OK(kiln_fit(m, ds, &one));
    double *after = snapshot(m, &n1);
    int changed = 0;
    for (int64_t i = 0; i < n0 && n0 == n1; i++) changed += before[i] != after[i];
    CHECK_MSG(n0 == n1 && n0 > 0 && changed == 0, "skipped step changed %d of %lld weights and slots", changed, (long long)n0);
    CHECK_NEAR(read_var(m, "loss_scale/scale"), 1.5e38, 1e32);
    CHECK_NEAR(read_var(m, "loss_scale/skipped_steps"), 1, 0);
    CHECK_NEAR(read_var(m, "loss_scale/good_steps"), 0, 0);
    int nh = 0;
    const kiln_logs *h = kiln_model_history(m, &nh);
    CHECK_MSG(nh > 0 && h[nh - 1].skipped_steps == 1 && h[nh - 1].loss_scale > 1e38, "history: skipped %lld, scale %g",
              nh > 0 ? (long long)h[nh - 1].skipped_steps : -1, nh > 0 ? h[nh - 1].loss_scale : 0);
    free(before); free(after);
    /* a good step at 1999 good steps: the update is applied and the scale doubles */
    set_var(m, "loss_scale/scale", 1024);
    set_var(m, "loss_scale/good_steps", 1999);
    before = snapshot(m, &n0);
    CHECK_OK(kiln_fit(m, ds, &one));
    after = snapshot(m, &n1);
    changed = 0;
    for (int64_t i = 0; i < n0 && n0 == n1; i++) changed += before[i] != after[i];
    CHECK_MSG(changed > 0, "a good step changed no weight");
    CHECK_NEAR(read_var(m, "loss_scale/scale"), 2048, 0);
    CHECK_NEAR(read_var(m, "loss_scale/good_steps"), 0, 0);
    CHECK_NEAR(read_var(m, "loss_scale/skipped_steps"), 1, 0);
    free(before); free(after);
    kiln_model_free(m);
    kiln_dataset_free(ds);
}

int main(void) {
    const kiln_backend_kind bes[3] = { KILN_BACKEND_REF, KILN_BACKEND_CPU, KILN_BACKEND_CUDA };
    for (int b = 0; b < (kiln_gpu_available() ? 3 : 2); b++) {
        check_autocast("matmul", false, false, false, KILN_SHAPE(9, 40), KILN_SHAPE(40, 7), bes[b]);
        check_autocast("matmul trans_a", false, true, false, KILN_SHAPE(40, 9), KILN_SHAPE(40, 7), bes[b]);
        check_autocast("matmul trans_b", false, false, true, KILN_SHAPE(9, 40), KILN_SHAPE(7, 40), bes[b]);
        check_autocast("matmul trans_a trans_b", false, true, true, KILN_SHAPE(40, 9), KILN_SHAPE(7, 40), bes[b]);
        check_autocast("conv2d stride 2 SAME", true, false, false, KILN_SHAPE(2, 9, 9, 16), KILN_SHAPE(3, 3, 16, 32), bes[b]);
    }
    check_policy_and_checkpoints();
    check_names();
    check_loss_scaling();
    return check_summary("test_precision");
}
