/* Graph unit tests: broadcasting, shape inference, user-error paths, the memory plan,
 * allocation-free training steps, and a tiny model whose loss falls over 100 SGD steps. */
#include <string.h>
#include "check.h"
#include "graph/graph_internal.h"

static bool contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

static void test_broadcast_and_shapes(void) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *a = kiln_placeholder(g, "a", KILN_F32, KILN_SHAPE(4, 1, 3));
    kiln_node *b = kiln_placeholder(g, "b", KILN_F32, KILN_SHAPE(5, 1));
    kiln_node *c = kiln_add(g, a, b);
    CHECK(c && kiln_shape_equal(kiln_node_shape(c), KILN_SHAPE(4, 5, 3)));
    kiln_node *s = kiln_mul(g, a, kiln_scalar(g, KILN_F32, 2));
    CHECK(s && kiln_shape_equal(kiln_node_shape(s), KILN_SHAPE(4, 1, 3)));
    kiln_node *m = kiln_matmul(g, kiln_placeholder(g, "m1", KILN_F32, KILN_SHAPE(7, 5)),
                               kiln_placeholder(g, "m2", KILN_F32, KILN_SHAPE(3, 5)), false, true);
    CHECK(m && kiln_shape_equal(kiln_node_shape(m), KILN_SHAPE(7, 3)));
    kiln_node *img = kiln_placeholder(g, "img", KILN_F32, KILN_SHAPE(2, 28, 28, 1));
    kiln_node *k = kiln_variable(g, "k", KILN_F32, KILN_SHAPE(3, 3, 1, 32), kiln_init_glorot_uniform(1));
    kiln_node *conv = kiln_conv2d(g, img, k, &(kiln_conv_params){ .padding = KILN_SAME });
    CHECK(conv && kiln_shape_equal(kiln_node_shape(conv), KILN_SHAPE(2, 28, 28, 32)));
    kiln_node *v = kiln_conv2d(g, img, k, &(kiln_conv_params){ .padding = KILN_VALID, .stride_h = 2, .stride_w = 2 });
    CHECK(v && kiln_shape_equal(kiln_node_shape(v), KILN_SHAPE(2, 13, 13, 32)));
    kiln_node *p = kiln_max_pool2d(g, conv, &(kiln_pool_params){ .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_SAME });
    CHECK(p && kiln_shape_equal(kiln_node_shape(p), KILN_SHAPE(2, 14, 14, 32)));
    kiln_node *r = kiln_reduce_mean(g, conv, (int[]){ 1, 2 }, 2, false);
    CHECK(r && kiln_shape_equal(kiln_node_shape(r), KILN_SHAPE(2, 32)));
    kiln_node *rs = kiln_reshape(g, conv, KILN_SHAPE(2, -1));
    CHECK(rs && kiln_shape_equal(kiln_node_shape(rs), KILN_SHAPE(2, 28 * 28 * 32)));
    CHECK_OK(kiln_graph_status(g));
    kiln_graph_free(g);
}

static void test_user_errors(void) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *a = kiln_placeholder(g, "a", KILN_F32, KILN_SHAPE(4, 3));
    kiln_node *b = kiln_placeholder(g, "b", KILN_F32, KILN_SHAPE(5, 2));
    kiln_graph_push_scope(g, "dense_1");
    kiln_node *c = kiln_matmul(g, a, b, false, false);
    kiln_graph_pop_scope(g);
    CHECK(c == NULL);
    CHECK(kiln_graph_status(g) == KILN_SHAPE_MISMATCH);
    CHECK_MSG(contains(kiln_graph_error(g), "dense_1/MatMul") && contains(kiln_graph_error(g), "[4, 3]") &&
              contains(kiln_graph_error(g), "[5, 2]"), "message: %s", kiln_graph_error(g));
    /* sticky: a later failure keeps the first message; NULL inputs propagate */
    kiln_node *d = kiln_add(g, c, a);
    CHECK(d == NULL && contains(kiln_graph_error(g), "dense_1/MatMul"));
    kiln_graph_clear_error(g);
    CHECK(kiln_add(g, a, b) == NULL && kiln_graph_status(g) == KILN_SHAPE_MISMATCH);
    CHECK_MSG(contains(kiln_graph_error(g), "Add"), "message: %s", kiln_graph_error(g));
    kiln_graph_clear_error(g);
    kiln_node *i = kiln_placeholder(g, "i", KILN_I32, KILN_SHAPE(4, 3));
    CHECK(kiln_add(g, a, i) == NULL && kiln_graph_status(g) != KILN_OK);
    kiln_graph_clear_error(g);
    CHECK(kiln_softmax(g, a, 5) == NULL && kiln_graph_status(g) != KILN_OK);
    kiln_graph_clear_error(g);
    CHECK(kiln_reshape(g, a, KILN_SHAPE(5, 5)) == NULL && kiln_graph_status(g) == KILN_SHAPE_MISMATCH);
    kiln_graph_clear_error(g);
    CHECK(kiln_placeholder(g, "bad", KILN_F32, KILN_SHAPE(0, 3)) == NULL && kiln_graph_status(g) == KILN_INVALID_ARGUMENT);
    kiln_graph_clear_error(g);
    /* sizes past int64 are refused, never wrapped: a target shape, a source, an inferred result */
    CHECK(kiln_reshape(g, a, KILN_SHAPE(-1, (int64_t)1 << 40, (int64_t)1 << 40)) == NULL && kiln_graph_status(g) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(contains(kiln_graph_error(g), "more elements than an int64"), "message: %s", kiln_graph_error(g));
    kiln_graph_clear_error(g);
    CHECK(kiln_placeholder(g, "huge", KILN_F32, KILN_SHAPE(4, (int64_t)1 << 62)) == NULL && kiln_graph_status(g) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(contains(kiln_graph_error(g), "too many elements"), "message: %s", kiln_graph_error(g));
    kiln_graph_clear_error(g);
    kiln_node *tall = kiln_placeholder(g, "tall", KILN_F32, KILN_SHAPE((int64_t)1 << 31, 1));
    kiln_node *wide = kiln_placeholder(g, "wide", KILN_F32, KILN_SHAPE(1, (int64_t)1 << 31));
    CHECK(tall && wide && kiln_add(g, tall, wide) == NULL && kiln_graph_status(g) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(contains(kiln_graph_error(g), "too many elements"), "message: %s", kiln_graph_error(g));
    kiln_graph_clear_error(g);
    CHECK(kiln_graph_push_device(g, "/tpu:0") == KILN_INVALID_ARGUMENT);
    kiln_graph_clear_error(g);
    /* a gradient through an op without one names the op */
    kiln_node *labels = kiln_placeholder(g, "labels", KILN_I32, KILN_SHAPE(4));
    kiln_node *acc = kiln_accuracy(g, a, labels);
    kiln_node *da;
    CHECK(kiln_gradients(g, acc, &a, 1, &da) != KILN_OK);
    CHECK_MSG(contains(kiln_graph_error(g), "Accuracy"), "message: %s", kiln_graph_error(g));
    kiln_graph_clear_error(g);
    /* run-time errors: wrong feed shape, missing feed, label out of range */
    kiln_node *loss = kiln_sparse_softmax_cross_entropy(g, a, labels);
    kiln_session *s = kiln_session_new(g, NULL);
    CHECK(s != NULL);
    kiln_tensor *ta = kiln_tensor_new(KILN_F32, KILN_SHAPE(4, 3)), *bad = kiln_tensor_new(KILN_F32, KILN_SHAPE(3, 3));
    kiln_tensor *tl = kiln_tensor_new(KILN_I32, KILN_SHAPE(4));
    kiln_tensor *out = NULL;
    CHECK(kiln_session_run(s, (kiln_feed[]){ { a, bad }, { labels, tl } }, 2, &loss, &out, 1, NULL, 0) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(contains(kiln_last_error(), "'a'") && contains(kiln_last_error(), "[3, 3]"), "message: %s", kiln_last_error());
    CHECK(kiln_session_run(s, (kiln_feed[]){ { a, ta } }, 1, &loss, &out, 1, NULL, 0) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(contains(kiln_last_error(), "labels"), "message: %s", kiln_last_error());
    ((int32_t *)tl->data)[2] = 7;
    CHECK(kiln_session_run(s, (kiln_feed[]){ { a, ta }, { labels, tl } }, 2, &loss, &out, 1, NULL, 0) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(contains(kiln_last_error(), "7"), "message: %s", kiln_last_error());
    ((int32_t *)tl->data)[2] = 1;
    CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { a, ta }, { labels, tl } }, 2, &loss, &out, 1, NULL, 0));
    CHECK(out && fabs(kiln_tensor_get(out, 0) - log(3.0)) < 1e-5);
    kiln_tensor_free(out); kiln_tensor_free(ta); kiln_tensor_free(bad); kiln_tensor_free(tl);
    kiln_session_free(s);
    kiln_graph_free(g);
}

static void test_device_strings(void) {
    const char *ok[] = { "/gpu:0", "/GPU:0", "/device:GPU:0", "gpu:0", "cuda:0", "/cpu:0", "cpu", "gpu", "/device:CPU:1" };
    for (unsigned i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        kiln_device_spec d;
        CHECK_MSG(kiln_parse_device(ok[i], &d) == KILN_OK, "%s", ok[i]);
    }
    kiln_device_spec d;
    CHECK(kiln_parse_device("cuda:1", &d) == KILN_OK && d.type == KILN_DEVICE_GPU && d.index == 1);
    CHECK(kiln_parse_device("/cpu:0", &d) == KILN_OK && d.type == KILN_DEVICE_CPU);
    CHECK(kiln_parse_device("gpu:x", &d) != KILN_OK);
    CHECK(kiln_parse_device("/tpu:0", &d) != KILN_OK);
    CHECK(kiln_parse_device("", &d) != KILN_OK);
}

/* A chain of elementwise ops reuses buffers: the plan holds far less than one buffer per op. */
static void test_memory_plan(void) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(1000));
    kiln_node *y = x;
    for (int i = 0; i < 10; i++) y = kiln_tanh(g, kiln_mul(g, y, kiln_scalar(g, KILN_F32, 0.9)));
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .measure_only = true });
    kiln_tensor *tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(1000));
    kiln_tensor *out = NULL;
    CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { x, tx } }, 1, &y, &out, 1, NULL, 0));
    size_t planned = kiln_session_planned_bytes(s);
    CHECK_MSG(planned > 0 && planned <= 2 * 4000 + 128, "planned %zu bytes for 20 ops of 4000 bytes", planned);
    kiln_session_free(s);
    /* and the values are right when run for real */
    s = kiln_session_new(g, NULL);
    for (int i = 0; i < 1000; i++) kiln_tensor_set(tx, i, (i % 7) - 3);
    CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { x, tx } }, 1, &y, &out, 1, NULL, 0));
    double v = 2.0;   /* element 5: (5 % 7) - 3 */
    for (int i = 0; i < 10; i++) v = tanh(v * 0.9);
    CHECK_NEAR(kiln_tensor_get(out, 5), v, 1e-5);
    kiln_tensor_free(out); kiln_tensor_free(tx);
    kiln_session_free(s);
    kiln_graph_free(g);
}

/* Tiny MLP on a fixed, learnable problem: loss falls over 100 SGD steps; after the first step a
 * training step makes no heap allocation. */
static void test_tiny_model(kiln_backend_kind be) {
    enum { N = 32, D = 4, H = 16, C = 3 };
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(N, D));
    kiln_node *y = kiln_placeholder(g, "y", KILN_I32, KILN_SHAPE(N));
    kiln_node *w1 = kiln_variable(g, "dense/kernel", KILN_F32, KILN_SHAPE(D, H), kiln_init_glorot_uniform(1));
    kiln_node *b1 = kiln_variable(g, "dense/bias", KILN_F32, KILN_SHAPE(H), kiln_init_zeros());
    kiln_node *w2 = kiln_variable(g, "dense_1/kernel", KILN_F32, KILN_SHAPE(H, C), kiln_init_glorot_uniform(2));
    kiln_node *b2 = kiln_variable(g, "dense_1/bias", KILN_F32, KILN_SHAPE(C), kiln_init_zeros());
    kiln_node *h = kiln_relu(g, kiln_bias_add(g, kiln_matmul(g, x, w1, false, false), b1));
    kiln_node *logits = kiln_bias_add(g, kiln_matmul(g, h, w2, false, false), b2);
    kiln_node *loss = kiln_sparse_softmax_cross_entropy(g, logits, y);
    kiln_node *vars[4] = { w1, b1, w2, b2 }, *grads[4];
    CHECK_OK(kiln_gradients(g, loss, vars, 4, grads));
    kiln_node *step = kiln_apply_sgd(g, vars, grads, 4, &(kiln_sgd_opts){ .lr = 0.5 });
    CHECK_OK(kiln_graph_status(g));
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = be });
    kiln_tensor *tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, D)), *ty = kiln_tensor_new(KILN_I32, KILN_SHAPE(N));
    kiln_rng r = kiln_rng_new(5);
    for (int i = 0; i < N; i++) {
        int cls = i % C;
        ((int32_t *)ty->data)[i] = cls;
        for (int j = 0; j < D; j++) kiln_tensor_set(tx, i * D + j, (j == cls ? 2.0 : 0.0) + 0.3 * kiln_rng_normal(&r));
    }
    kiln_tensor *lv = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    kiln_feed feeds[2] = { { x, tx }, { y, ty } };
    double first = 0, last = 0;
    uint64_t allocs = 0;
    for (int it = 0; it < 100; it++) {
        kiln_status st = kiln_session_run(s, feeds, 2, &loss, &lv, 1, &step, 1);
        if (st != KILN_OK) { CHECK_OK(st); break; }
        if (it == 0) first = kiln_tensor_get(lv, 0);
        if (it == 1) allocs = kiln_alloc_count();
        last = kiln_tensor_get(lv, 0);
    }
    CHECK_MSG(kiln_alloc_count() == allocs, "%s: %llu heap allocations in 98 training steps", kiln_session_backend(s),
              (unsigned long long)(kiln_alloc_count() - allocs));
    CHECK_MSG(last < 0.2 * first, "%s: loss %g -> %g over 100 steps", kiln_session_backend(s), first, last);
    printf("tiny model on %s: loss %.4f -> %.4f over 100 SGD steps\n", kiln_session_backend(s), first, last);
    kiln_tensor_free(lv); kiln_tensor_free(tx); kiln_tensor_free(ty);
    kiln_session_free(s);
    kiln_graph_free(g);
}

static double rel_err(const kiln_tensor *a, const kiln_tensor *b) {
    double err = 0, scale = 1;
    int64_t n = kiln_shape_numel(a->shape);
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(kiln_tensor_get(a, i)));
    for (int64_t i = 0; i < n; i++) err = fmax(err, fabs(kiln_tensor_get(a, i) - kiln_tensor_get(b, i)));
    return err / scale;
}

/* conv -> bias -> relu and matmul -> bias -> relu are fused into one cpu kernel (oneDNN's bias
 * and post-op where it runs the convolution): values and gradients must match ref (which never
 * fuses), including when the pre-activation is fetched (no fusion) and when a relu follows a conv
 * without bias. cin/c1: channel counts (multiples of 16 keep oneDNN's activations in NHWC); pool
 * (its gradient after the relu's): 0 none, 2: 2x2/2 (windows tile x: dx written in one pass),
 * 3: 3x3/2 SAME (windows overlap). */
static void test_fusion(int cin, int c1, int pool) {
    const int N = 3, H = 6, W = 6;
    int ph = pool ? (H + 1) / 2 : H, pw = pool ? (W + 1) / 2 : W, F = ph * pw * c1;
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(N, H, W, cin));
    kiln_node *k1 = kiln_variable(g, "k1", KILN_F32, KILN_SHAPE(3, 3, cin, c1), kiln_init_glorot_uniform(1));
    kiln_node *b1 = kiln_variable(g, "b1", KILN_F32, KILN_SHAPE(c1), kiln_init_uniform(-0.5, 0.5, 2));
    kiln_node *k2 = kiln_variable(g, "k2", KILN_F32, KILN_SHAPE(3, 3, c1, c1), kiln_init_glorot_uniform(3));
    kiln_node *w = kiln_variable(g, "w", KILN_F32, KILN_SHAPE(F, 5), kiln_init_glorot_uniform(4));
    kiln_node *bw = kiln_variable(g, "bw", KILN_F32, KILN_SHAPE(5), kiln_init_uniform(-0.5, 0.5, 5));
    kiln_conv_params same = { .padding = KILN_SAME };
    kiln_node *pre = kiln_bias_add(g, kiln_conv2d(g, x, k1, &same), b1);
    kiln_node *h = kiln_relu(g, pre);
    kiln_node *h2 = kiln_relu(g, kiln_conv2d(g, h, k2, &same));          /* no bias */
    if (pool == 2) h2 = kiln_max_pool2d(g, h2, &(kiln_pool_params){ .size_h = 2, .size_w = 2 });
    if (pool == 3) h2 = kiln_max_pool2d(g, h2, &(kiln_pool_params){ .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_SAME });
    kiln_node *flat = kiln_reshape(g, h2, KILN_SHAPE(N, F));
    kiln_node *out = kiln_relu(g, kiln_bias_add(g, kiln_matmul(g, flat, w, false, false), bw));
    kiln_node *loss = kiln_reduce_sum(g, kiln_square(g, out), NULL, 0, false);
    kiln_node *vars[5] = { k1, b1, k2, w, bw }, *grads[5];
    CHECK_OK(kiln_gradients(g, loss, vars, 5, grads));
    kiln_tensor *tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, H, W, cin));
    kiln_rng r = kiln_rng_new(9);
    for (int i = 0; i < N * H * W * cin; i++) kiln_tensor_set(tx, i, kiln_rng_normal(&r));
    kiln_node *fetch[7] = { loss, out, grads[0], grads[1], grads[2], grads[3], grads[4] };
    kiln_tensor *res[2][7] = { { 0 } };
    kiln_backend_kind be[2] = { KILN_BACKEND_REF, KILN_BACKEND_CPU };
    for (int b = 0; b < 2; b++) {
        kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = be[b] });
        CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { x, tx } }, 1, fetch, res[b], 7, NULL, 0));
        kiln_session_free(s);
    }
    for (int f = 0; f < 7; f++) {
        if (!res[0][f] || !res[1][f]) { CHECK(false); continue; }
        double e = rel_err(res[0][f], res[1][f]);
        CHECK_MSG(e < 1e-4, "fused fetch %d (cin %d, c1 %d, pool %d): cpu vs ref error %g", f, cin, c1, pool, e);
    }
    /* fetching the pre-activation keeps it (no fusion past it) and its value matches ref */
    kiln_tensor *pv[2] = { 0 };
    for (int b = 0; b < 2; b++) {
        kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = be[b] });
        kiln_node *f2[2] = { pre, h };
        kiln_tensor *o2[2] = { 0 };
        CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { x, tx } }, 1, f2, o2, 2, NULL, 0));
        pv[b] = o2[0];
        kiln_tensor_free(o2[1]);
        kiln_session_free(s);
    }
    double e = pv[0] && pv[1] ? rel_err(pv[0], pv[1]) : 1;
    CHECK_MSG(e < 1e-5, "pre-activation error %g (cin %d, c1 %d)", e, cin, c1);
    kiln_tensor_free(pv[0]); kiln_tensor_free(pv[1]);
    for (int b = 0; b < 2; b++) for (int f = 0; f < 7; f++) kiln_tensor_free(res[b][f]);
    kiln_tensor_free(tx);
    kiln_graph_free(g);
}

int main(void) {
    test_broadcast_and_shapes();
    test_user_errors();
    test_device_strings();
    test_memory_plan();
    test_fusion(2, 4, 0);
    test_fusion(16, 16, 0);     /* oneDNN in NHWC */
    test_fusion(2, 4, 2);
    test_fusion(16, 32, 2);
    test_fusion(3, 16, 3);
    test_tiny_model(KILN_BACKEND_REF);
    test_tiny_model(KILN_BACKEND_CPU);
    return check_summary("test_graph");
}
