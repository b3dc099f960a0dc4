/* The 1-D layers, Conv2DTranspose, SpatialDropout2D and bilinear UpSampling2D: gradients of each
 * layer's forward (input and weights) against central finite differences on the ref backend;
 * SpatialDropout2D drops whole channels; the bilinear weights are tf.image.resize's; an
 * Embedding -> Conv1D -> GlobalMaxPooling1D -> Dense text classifier read from Keras JSON trains. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

static double uni(uint64_t *s) { *s = *s * 6364136223846793005ull + 1442695040888963407ull; return (double)(*s >> 11) / 9007199254740992.0 * 2 - 1; }

/* The model's layers in a fresh graph on an input placeholder of batch B (inference forward). */
typedef struct built { kiln_graph *g; kiln_node *x, *y; } built;
static built build(kiln_model *m, int B, bool training) {
    built b = { kiln_graph_new(), NULL, NULL };
    CHECK_OK(nn_create_variables(m, b.g));
    kiln_shape xs = { .rank = m->input->out.rank + 1 };
    xs.dim[0] = B;
    for (int i = 0; i < m->input->out.rank; i++) xs.dim[i + 1] = m->input->out.dim[i];
    b.x = kiln_placeholder(b.g, "x", KILN_F32, xs);
    nn_fwd f = { .m = m, .g = b.g, .batch = B, .training = training, .dtype = KILN_F32 };
    m->input->node = b.x;
    for (int i = 0; i < m->n_layers; i++)
        if (m->layers[i]->kind != NN_INPUT) b.y = nn_layer_forward(&f, m->layers[i]);
    CHECK_MSG(b.y && kiln_graph_status(b.g) == KILN_OK, "%s", kiln_graph_error(b.g));
    return b;
}

/* loss = sum(y * r); d loss / d (input and every variable) against central differences at every
 * `every`-th element. The layers are linear or piecewise linear (max pooling): f32 differences of
 * step h are exact up to rounding away from ties. */
static void check_grads(kiln_model *m, const char *what) {
    CHECK_MSG(kiln_model_status(m) == KILN_OK, "%s: %s", what, kiln_model_error(m));
    if (kiln_model_status(m)) return;
    built b = build(m, 2, false);
    if (!b.y) return;
    uint64_t seed = 7;
    kiln_tensor *r = kiln_tensor_new(KILN_F32, b.y->shape), *xv = kiln_tensor_new(KILN_F32, b.x->shape);
    for (int64_t i = 0; i < kiln_shape_numel(r->shape); i++) kiln_tensor_set(r, i, uni(&seed));
    for (int64_t i = 0; i < kiln_shape_numel(xv->shape); i++) kiln_tensor_set(xv, i, uni(&seed));
    kiln_node *loss = kiln_reduce_sum(b.g, kiln_mul(b.g, b.y, kiln_constant(b.g, r)), NULL, 0, false);
    kiln_node *wrt[16] = { b.x }, *grads[16] = { 0 };
    int n = 1;
    for (int i = 0; i < m->n_layers; i++)
        for (int j = 0; j < m->layers[i]->n_vars && n < 16; j++) wrt[n++] = m->layers[i]->vars[j].node;
    CHECK_OK(kiln_gradients(b.g, loss, wrt, n, grads));
    kiln_session *s = kiln_graph_status(b.g) == KILN_OK ? kiln_session_new(b.g, &(kiln_session_opts){ .backend = KILN_BACKEND_REF }) : NULL;
    CHECK_MSG(s != NULL, "%s: %s", what, kiln_graph_error(b.g));
    kiln_feed feed = { b.x, xv };
    for (int k = 0; s && k < n; k++) {
        kiln_tensor *g = NULL, *l = NULL, *v = k ? kiln_tensor_new(KILN_F32, wrt[k]->shape) : xv;
        CHECK_OK(kiln_session_run(s, &feed, 1, &grads[k], &g, 1, NULL, 0));
        if (k) CHECK_OK(kiln_session_read_variable(s, wrt[k], v));
        double worst = 0;
        int64_t numel = kiln_shape_numel(v->shape), every = numel / 23 + 1;
        for (int64_t i = k % 3; g && i < numel; i += every) {
            double v0 = kiln_tensor_get(v, i), h = 2e-3, lp, lm;
            kiln_tensor_set(v, i, v0 + h);
            if (k) kiln_session_assign_variable(s, wrt[k], v);
            kiln_session_run(s, &feed, 1, &loss, &l, 1, NULL, 0);
            lp = l ? kiln_tensor_get(l, 0) : NAN;
            kiln_tensor_set(v, i, v0 - h);
            if (k) kiln_session_assign_variable(s, wrt[k], v);
            kiln_session_run(s, &feed, 1, &loss, &l, 1, NULL, 0);
            lm = l ? kiln_tensor_get(l, 0) : NAN;
            kiln_tensor_set(v, i, v0);
            if (k) kiln_session_assign_variable(s, wrt[k], v);
            double fd = (lp - lm) / (2 * h), err = fabs(fd - kiln_tensor_get(g, i)) / fmax(1, fabs(fd));
            if (!(err <= worst)) worst = err;
        }
        CHECK_MSG(g && worst < 2e-3, "%s: gradient of %s vs finite differences: worst error %g", what, k ? wrt[k]->name : "the input", worst);
        kiln_tensor_free(g);
        kiln_tensor_free(l);
        if (k) kiln_tensor_free(v);
    }
    kiln_session_free(s);
    kiln_tensor_free(r);
    kiln_tensor_free(xv);
    kiln_graph_free(b.g);
}

static void test_gradients(void) {
    kiln_model *m = kiln_sequential("causal", KILN_SHAPE(11, 3));
    kiln_layer_conv1d(m, &(kiln_conv1d_opts){ .filters = 4, .kernel = 3, .causal = true, .dilation = 2 });
    kiln_layer_max_pool1d(m, &(kiln_pool1d_opts){ .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer_conv1d(m, &(kiln_conv1d_opts){ .filters = 4, .kernel = 2, .strides = 2, .padding = KILN_SAME, .groups = 2 });
    kiln_layer_upsampling1d(m, &(kiln_upsampling1d_opts){ .size = 3 });
    kiln_layer_avg_pool1d(m, &(kiln_pool1d_opts){ .size = 2, .padding = KILN_SAME });
    kiln_layer_global_avg_pool1d(m, NULL);
    check_grads(m, "Conv1D / pooling / UpSampling1D / GlobalAveragePooling1D");
    kiln_model_free(m);

    m = kiln_sequential("gmp", KILN_SHAPE(7, 2));
    kiln_layer_conv1d(m, &(kiln_conv1d_opts){ .filters = 3, .kernel = 3 });
    kiln_layer_global_max_pool1d(m, NULL);
    check_grads(m, "Conv1D valid / GlobalMaxPooling1D");
    kiln_model_free(m);

    m = kiln_sequential("deconv", KILN_SHAPE(3, 4, 2));
    kiln_layer_conv2d_transpose(m, &(kiln_conv2d_opts){ .filters = 3, .kernel = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer_spatial_dropout2d(m, &(kiln_dropout_opts){ .rate = 0.5 });     /* inference: the identity */
    kiln_layer_upsampling2d(m, &(kiln_upsampling2d_opts){ .size_h = 2, .size_w = 3, .bilinear = true });
    kiln_layer_conv2d_transpose(m, &(kiln_conv2d_opts){ .filters = 2, .kernel_h = 2, .kernel_w = 3, .stride_h = 3, .stride_w = 2 });
    check_grads(m, "Conv2DTranspose / bilinear UpSampling2D");
    kiln_model_free(m);
}

/* Bilinear x2 of [0, 1, 2, 4] along the width: tf.image.resize gives 0, .25, .75, 1.25, 1.75,
 * 2.5, 3.5, 4 (half-pixel centres, edges clamped). SpatialDropout2D in training: each (example,
 * channel) all 0 or all 1 / (1 - rate). */
static void test_values(void) {
    kiln_model *m = kiln_sequential("bl", KILN_SHAPE(1, 4, 1));
    kiln_layer_upsampling2d(m, &(kiln_upsampling2d_opts){ .size_h = 1, .size_w = 2, .bilinear = true });
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(1, 1, 4, 1)), *y = NULL;
    const float in[4] = { 0, 1, 2, 4 }, want[8] = { 0, .25f, .75f, 1.25f, 1.75f, 2.5f, 3.5f, 4 };
    memcpy(x->data, in, sizeof in);
    CHECK_OK(kiln_predict(m, x, NULL, &y));
    for (int i = 0; y && i < 8; i++) CHECK_MSG(fabs(kiln_tensor_get(y, i) - want[i]) < 1e-6, "bilinear [%d] %g, want %g", i, kiln_tensor_get(y, i), want[i]);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_model_free(m);

    m = kiln_sequential("sd", KILN_SHAPE(3, 3, 16));
    kiln_layer_spatial_dropout2d(m, &(kiln_dropout_opts){ .rate = 0.5, .seed = 5 });
    built b = build(m, 4, true);
    kiln_session *s = b.y ? kiln_session_new(b.g, &(kiln_session_opts){ .backend = KILN_BACKEND_REF }) : NULL;
    x = kiln_tensor_new(KILN_F32, KILN_SHAPE(4, 3, 3, 16));
    for (int64_t i = 0; i < 4 * 9 * 16; i++) kiln_tensor_set(x, i, 1);
    kiln_feed feed = { b.x, x };
    y = NULL;
    if (s) CHECK_OK(kiln_session_run(s, &feed, 1, &b.y, &y, 1, NULL, 0));
    int dropped = 0, mixed = 0;
    for (int e = 0; y && e < 4; e++)
        for (int c = 0; c < 16; c++) {
            double v0 = kiln_tensor_get(y, (int64_t)e * 144 + c);
            dropped += v0 == 0;
            for (int p = 1; p < 9; p++) mixed += kiln_tensor_get(y, (int64_t)e * 144 + p * 16 + c) != v0;
            CHECK(v0 == 0 || v0 == 2);
        }
    CHECK_MSG(y && mixed == 0 && dropped > 10 && dropped < 54, "SpatialDropout2D: %d of 64 channels dropped, %d pixels differ from their channel", dropped, mixed);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_session_free(s);
    kiln_graph_free(b.g);
    kiln_model_free(m);
}

/* Keras's text classifier: int32 ids -> Embedding -> Conv1D -> GlobalMaxPooling1D -> Dense; the
 * label is the keyword (ids 0..3) hidden at a random position among filler ids 4..19. */
static void test_text_classifier(void) {
    static const char *js = "{\"module\": \"keras\", \"class_name\": \"Sequential\", \"config\": {\"name\": \"text\", \"layers\": ["
        "{\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": [null, 12], \"dtype\": \"int32\", \"name\": \"ids\"}},"
        "{\"class_name\": \"Embedding\", \"config\": {\"name\": \"emb\", \"input_dim\": 20, \"output_dim\": 8}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"name\": \"conv\", \"filters\": 16, \"kernel_size\": [3], \"padding\": \"same\", \"activation\": \"relu\"}},"
        "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {\"name\": \"pool\"}},"
        "{\"class_name\": \"Dense\", \"config\": {\"name\": \"out\", \"units\": 4}}]}}";
    enum { N = 256, T = 12 };
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json(js, &m));
    if (!m) return;
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, T)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(N));
    uint64_t seed = 11;
    for (int i = 0; i < N; i++) {
        int key = i % 4, at = (int)((uni(&seed) + 1) * 0.5 * T) % T;
        for (int t = 0; t < T; t++) ((float *)x->data)[i * T + t] = t == at ? (float)key : (float)(4 + (int)((uni(&seed) + 1) * 8) % 16);
        ((int32_t *)y->data)[i] = key;
    }
    kiln_dataset *ds = kiln_dataset_from_tensors(x, y, 4);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-2), .from_logits = true, .device = "cpu" }));
    kiln_eval_result before = { 0 }, after = { 0 };
    CHECK_OK(kiln_evaluate(m, ds, NULL, &before));
    CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 15, .batch_size = 32, .verbose = 0 }));
    CHECK_OK(kiln_evaluate(m, ds, NULL, &after));
    printf("Embedding -> Conv1D -> GlobalMaxPooling1D -> Dense from Keras JSON: loss %.3f -> %.3f, accuracy %.2f\n", before.loss, after.loss, after.accuracy);
    CHECK_MSG(after.loss < 0.5 * before.loss && after.accuracy > 0.9, "loss %g -> %g, accuracy %g", before.loss, after.loss, after.accuracy);
    kiln_dataset_free(ds);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_model_free(m);
}

int main(void) {
    test_gradients();
    test_values();
    test_text_classifier();
    return check_summary("test_layers_1d");
}
