/* The CUDA kernels at sizes the op-conformance cases (tests/ops) are too small to reach: many
 * blocks and grid-stride laps, two-pass reductions and batch-norm column sums (S > 1 chunks),
 * softmax/xent rows beyond one block, multi-tile transposes, convolutions and their gradients.
 * Each graph (and the gradients of sum(out * w)) runs on cuda and on ref; results must agree.
 * Meant for the simulator (ctest test_cudasim_large); skips without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "graph/graph_internal.h"   /* kiln_node fields, kiln_rng */
#include "kiln/device.h"

static int n_fail, n_ran;
static kiln_rng rng;

typedef kiln_node *(*build_fn)(kiln_graph *g, kiln_node **x);

static double max_err(const kiln_tensor *a, const kiln_tensor *r) {
    int64_t n = kiln_shape_numel(r->shape);
    double scale = 1, err = 0;
    for (int64_t i = 0; i < n; i++) { double v = fabs(kiln_tensor_get(r, i)); if (v > scale) scale = v; }
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(kiln_tensor_get(a, i) - kiln_tensor_get(r, i)) / scale;
        if (!(e <= err)) err = e;   /* NaN counts as the worst */
    }
    return err;
}

/* Runs out and the gradients of sum(out * w) w.r.t. the float inputs on cuda and ref. */
static void check(const char *label, build_fn build, int n_in, const kiln_dtype *dt, const kiln_shape *shapes,
                  double lo, double hi, bool grad, double tol) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *x[4], *f[5];
    for (int i = 0; i < n_in; i++) { char nm[8]; snprintf(nm, sizeof nm, "x%d", i); x[i] = kiln_placeholder(g, nm, dt[i], shapes[i]); }
    kiln_node *out = build(g, x);
    int nf = 1, nx = 0;
    f[0] = out;
    if (grad) {
        kiln_tensor *wt = kiln_tensor_new(out->dtype, out->shape);
        for (int64_t i = 0; i < kiln_shape_numel(out->shape); i++) kiln_tensor_set(wt, i, 2 * kiln_rng_uniform(&rng) - 1);
        kiln_node *loss = kiln_reduce_sum(g, kiln_mul(g, out, kiln_constant(g, wt)), NULL, 0, false);
        kiln_tensor_free(wt);
        kiln_node *xs[4];
        for (int i = 0; i < n_in; i++) if (kiln_dtype_is_float(dt[i])) xs[nx++] = x[i];
        if (kiln_gradients(g, loss, xs, nx, f + 1) != KILN_OK) { printf("FAIL %s: gradients: %s\n", label, kiln_graph_error(g)); n_fail++; return; }
        nf += nx;
    }
    kiln_tensor *in[4];
    kiln_feed feeds[4];
    for (int i = 0; i < n_in; i++) {
        in[i] = kiln_tensor_new(dt[i], shapes[i]);
        for (int64_t e = 0; e < kiln_shape_numel(shapes[i]); e++) {
            double u = lo + (hi - lo) * kiln_rng_uniform(&rng);
            kiln_tensor_set(in[i], e, kiln_dtype_is_float(dt[i]) ? u : floor(u));
        }
        feeds[i] = (kiln_feed){ x[i], in[i] };
    }
    kiln_tensor *res[2][5] = { { 0 } };
    const kiln_backend_kind be[2] = { KILN_BACKEND_CUDA, KILN_BACKEND_REF };
    for (int b = 0; b < 2; b++) {
        kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = be[b], .seed = 7 });
        if (!s || kiln_session_run(s, feeds, n_in, f, res[b], nf, NULL, 0) != KILN_OK) {
            printf("FAIL %s: %s run: %s\n", label, b ? "ref" : "cuda", kiln_last_error());
            n_fail++;
        }
        kiln_session_free(s);
    }
    n_ran++;
    for (int k = 0; k < nf && res[0][k] && res[1][k]; k++) {
        double e = max_err(res[0][k], res[1][k]);
        if (!(e <= tol)) { printf("FAIL %s: %s %d: cuda vs ref error %.3g > %.3g\n", label, k ? "gradient" : "output", k, e, tol); n_fail++; }
    }
    for (int b = 0; b < 2; b++) for (int k = 0; k < nf; k++) kiln_tensor_free(res[b][k]);
    for (int i = 0; i < n_in; i++) kiln_tensor_free(in[i]);
    kiln_graph_free(g);
}

static const int ax0[] = { 0 }, ax02[] = { 0, 2 }, ax1[] = { 1 };
static kiln_node *b_sum0(kiln_graph *g, kiln_node **x) { return kiln_reduce_sum(g, x[0], ax0, 1, false); }
static kiln_node *b_sum02(kiln_graph *g, kiln_node **x) { return kiln_reduce_sum(g, x[0], ax02, 2, false); }
static kiln_node *b_mean1(kiln_graph *g, kiln_node **x) { return kiln_reduce_mean(g, x[0], ax1, 1, true); }
static kiln_node *b_mean0(kiln_graph *g, kiln_node **x) { return kiln_reduce_mean(g, x[0], ax0, 1, false); }
static kiln_node *b_max_all(kiln_graph *g, kiln_node **x) { return kiln_reduce_max(g, x[0], NULL, 0, false); }
static kiln_node *b_softmax(kiln_graph *g, kiln_node **x) { return kiln_softmax(g, x[0], 1); }
static kiln_node *b_log_softmax0(kiln_graph *g, kiln_node **x) { return kiln_log_softmax(g, x[0], 0); }
static kiln_node *b_matmul_t(kiln_graph *g, kiln_node **x) { return kiln_matmul(g, x[0], x[1], true, false); }
static kiln_node *b_transpose(kiln_graph *g, kiln_node **x) { static const int p[] = { 2, 0, 1 }; return kiln_transpose(g, x[0], p); }
static kiln_node *b_xent(kiln_graph *g, kiln_node **x) { return kiln_sparse_softmax_cross_entropy(g, x[0], x[1]); }
static kiln_node *b_conv_same(kiln_graph *g, kiln_node **x) { return kiln_conv2d(g, x[0], x[1], &(kiln_conv_params){ .padding = KILN_SAME }); }
static kiln_node *b_conv_s2(kiln_graph *g, kiln_node **x) {
    return kiln_conv2d(g, x[0], x[1], &(kiln_conv_params){ .padding = KILN_SAME, .stride_h = 2, .stride_w = 2, .groups = 2 });
}
static kiln_node *b_maxpool(kiln_graph *g, kiln_node **x) {
    return kiln_max_pool2d(g, x[0], &(kiln_pool_params){ .size_h = 3, .size_w = 3, .stride_h = 2, .stride_w = 2, .padding = KILN_SAME });
}
static kiln_node *b_avgpool(kiln_graph *g, kiln_node **x) {
    return kiln_avg_pool2d(g, x[0], &(kiln_pool_params){ .size_h = 3, .size_w = 3, .stride_h = 1, .stride_w = 1, .padding = KILN_SAME });
}
static kiln_node *b_bn(kiln_graph *g, kiln_node **x) {
    kiln_shape c = KILN_SHAPE(x[0]->shape.dim[x[0]->shape.rank - 1]);
    kiln_node *mm = kiln_variable(g, "mm", x[0]->dtype, c, (kiln_init){ .kind = KILN_INIT_ZEROS });
    kiln_node *mv = kiln_variable(g, "mv", x[0]->dtype, c, (kiln_init){ .kind = KILN_INIT_ONES });
    return kiln_batch_norm(g, x[0], x[1], x[2], mm, mv, 0.9, 1e-3, true);
}

/* BiasAdd + Relu fused into the producing conv / matmul (the cuda backend's epilogue) */
static kiln_node *b_conv_bias_relu(kiln_graph *g, kiln_node **x) {
    return kiln_relu(g, kiln_bias_add(g, kiln_conv2d(g, x[0], x[1], &(kiln_conv_params){ .padding = KILN_SAME }), x[2]));
}
static kiln_node *b_dense_bias_relu(kiln_graph *g, kiln_node **x) { return kiln_relu(g, kiln_bias_add(g, kiln_matmul(g, x[0], x[1], false, false), x[2])); }
static kiln_node *b_dense_bias(kiln_graph *g, kiln_node **x) { return kiln_bias_add(g, kiln_matmul(g, x[0], x[1], false, false), x[2]); }
static kiln_node *b_dense_relu(kiln_graph *g, kiln_node **x) { return kiln_relu(g, kiln_matmul(g, x[0], x[1], false, false)); }

/* A label outside [0, C) is found on the device, reported by the run (first one wins), and the
 * next run is clean again. */
static void check_bad_label(void) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(300, 4)), *l = kiln_placeholder(g, "l", KILN_I64, KILN_SHAPE(300));
    kiln_node *loss = kiln_sparse_softmax_cross_entropy(g, x, l);
    kiln_tensor *xv = kiln_tensor_new(KILN_F32, KILN_SHAPE(300, 4)), *lv = kiln_tensor_new(KILN_I64, KILN_SHAPE(300)), *out = NULL;
    for (int i = 0; i < 300; i++) kiln_tensor_set(lv, i, i % 4);
    kiln_tensor_set(lv, 257, 7);
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_CUDA });
    kiln_feed f[2] = { { x, xv }, { l, lv } };
    kiln_status st = kiln_session_run(s, f, 2, &loss, &out, 1, NULL, 0);
    n_ran++;
    if (st != KILN_INVALID_ARGUMENT || !strstr(kiln_last_error(), "label 7 in row 257")) { printf("FAIL bad label: status %d: %s\n", (int)st, kiln_last_error()); n_fail++; }
    kiln_tensor_set(lv, 257, 1);
    if (kiln_session_run(s, f, 2, &loss, &out, 1, NULL, 0) != KILN_OK) { printf("FAIL bad label: the next run: %s\n", kiln_last_error()); n_fail++; }
    kiln_tensor_free(out);
    kiln_tensor_free(xv);
    kiln_tensor_free(lv);
    kiln_session_free(s);
    kiln_graph_free(g);
}

int main(void) {
    setenv("KILN_CUDA_TF32", "0", 0);   /* exact f32 convolutions: the tolerances are f32's */
    setenv("KILN_CUDNN_EXACT", "1", 0);  /* and no FFT/Winograd rounding */
    if (!kiln_gpu_available()) { printf("test_cudasim_large: skipped (no GPU: %s)\n", kiln_gpu_unavailable_reason()); return 0; }
    rng = kiln_rng_new(12345);
    const kiln_dtype F = KILN_F32, H = KILN_F16, I = KILN_I32;
    check("reduce_sum axis 0 [300,70]", b_sum0, 1, &F, (kiln_shape[]){ KILN_SHAPE(300, 70) }, -1, 1, true, 1e-5);
    check("reduce_sum axes (0,2) [40,9,50]", b_sum02, 1, &F, (kiln_shape[]){ KILN_SHAPE(40, 9, 50) }, -1, 1, true, 1e-5);
    check("reduce_mean axis 1 [7,1000] f16", b_mean1, 1, &H, (kiln_shape[]){ KILN_SHAPE(7, 1000) }, -1, 1, false, 2e-2);
    /* few outputs, many partials: pass 2 as a block tree per output */
    check("reduce_mean axis 0 [40000,6]", b_mean0, 1, &F, (kiln_shape[]){ KILN_SHAPE(40000, 6) }, -1, 1, true, 1e-5);
    check("reduce_max all [513,257]", b_max_all, 1, &F, (kiln_shape[]){ KILN_SHAPE(513, 257) }, -1, 1, true, 1e-6);
    check("softmax [64,1000]", b_softmax, 1, &F, (kiln_shape[]){ KILN_SHAPE(64, 1000) }, -3, 3, true, 1e-5);
    check("log_softmax axis 0 [300,5]", b_log_softmax0, 1, &F, (kiln_shape[]){ KILN_SHAPE(300, 5) }, -3, 3, true, 1e-5);
    check("matmul^T [300,70]x[300,45]", b_matmul_t, 2, (kiln_dtype[]){ F, F }, (kiln_shape[]){ KILN_SHAPE(300, 70), KILN_SHAPE(300, 45) }, -1, 1, true, 1e-5);
    check("transpose [37,65,3] f16", b_transpose, 1, &H, (kiln_shape[]){ KILN_SHAPE(37, 65, 3) }, -1, 1, true, 1e-3);
    check("sparse xent [600,10]", b_xent, 2, (kiln_dtype[]){ F, I }, (kiln_shape[]){ KILN_SHAPE(600, 10), KILN_SHAPE(600) }, 0, 10, true, 1e-5);
    check("conv2d SAME [4,16,16,8]*[3,3,8,40]", b_conv_same, 2, (kiln_dtype[]){ F, F }, (kiln_shape[]){ KILN_SHAPE(4, 16, 16, 8), KILN_SHAPE(3, 3, 8, 40) }, -1, 1, true, 1e-5);
    check("conv2d groups 2 stride 2 [2,15,15,8]*[3,3,4,12] f16", b_conv_s2, 2, (kiln_dtype[]){ H, H }, (kiln_shape[]){ KILN_SHAPE(2, 15, 15, 8), KILN_SHAPE(3, 3, 4, 12) }, -1, 1, true, 3e-2);
    /* pads (1,1): cuDNN's pooling (cuda_dnn_ops.cu); pads (0,1): ours (cuda_pool.cu) */
    check("max_pool 3x3/2 SAME [4,17,17,8]", b_maxpool, 1, &F, (kiln_shape[]){ KILN_SHAPE(4, 17, 17, 8) }, -1, 1, true, 1e-6);
    check("max_pool 3x3/2 SAME pads (0,1) [4,16,16,8]", b_maxpool, 1, &F, (kiln_shape[]){ KILN_SHAPE(4, 16, 16, 8) }, -1, 1, true, 1e-6);
    check("max_pool 3x3/2 SAME [2,17,17,8] f16", b_maxpool, 1, &H, (kiln_shape[]){ KILN_SHAPE(2, 17, 17, 8) }, -1, 1, true, 1e-3);
    check("avg_pool 3x3/1 SAME [2,33,9,3]", b_avgpool, 1, &F, (kiln_shape[]){ KILN_SHAPE(2, 33, 9, 3) }, -1, 1, true, 1e-5);
    check("batch_norm [64,8,8,16]", b_bn, 3, (kiln_dtype[]){ F, F, F }, (kiln_shape[]){ KILN_SHAPE(64, 8, 8, 16), KILN_SHAPE(16), KILN_SHAPE(16) }, -1, 1, true, 1e-4);
    check("batch_norm [3000,24] (rank 2)", b_bn, 3, (kiln_dtype[]){ F, F, F }, (kiln_shape[]){ KILN_SHAPE(3000, 24), KILN_SHAPE(24), KILN_SHAPE(24) }, -1, 1, true, 1e-4);
    check("batch_norm [5000,3] f16", b_bn, 3, (kiln_dtype[]){ H, H, H }, (kiln_shape[]){ KILN_SHAPE(5000, 3), KILN_SHAPE(3), KILN_SHAPE(3) }, -1, 1, true, 3e-2);
    check("conv2d + bias + relu (fused) [4,16,16,8]*[3,3,8,24]", b_conv_bias_relu, 3, (kiln_dtype[]){ F, F, F },
          (kiln_shape[]){ KILN_SHAPE(4, 16, 16, 8), KILN_SHAPE(3, 3, 8, 24), KILN_SHAPE(24) }, -1, 1, true, 1e-5);
    check("conv2d + bias + relu (fused) f16", b_conv_bias_relu, 3, (kiln_dtype[]){ H, H, H },
          (kiln_shape[]){ KILN_SHAPE(2, 9, 9, 8), KILN_SHAPE(3, 3, 8, 16), KILN_SHAPE(16) }, -1, 1, true, 3e-2);
    check("matmul + bias + relu (fused) [300,70]x[70,45]", b_dense_bias_relu, 3, (kiln_dtype[]){ F, F, F },
          (kiln_shape[]){ KILN_SHAPE(300, 70), KILN_SHAPE(70, 45), KILN_SHAPE(45) }, -1, 1, true, 1e-5);
    check("matmul + bias (fused)", b_dense_bias, 3, (kiln_dtype[]){ F, F, F },
          (kiln_shape[]){ KILN_SHAPE(64, 30), KILN_SHAPE(30, 20), KILN_SHAPE(20) }, -1, 1, true, 1e-5);
    check("matmul + relu (fused)", b_dense_relu, 2, (kiln_dtype[]){ F, F }, (kiln_shape[]){ KILN_SHAPE(64, 30), KILN_SHAPE(30, 20) }, -1, 1, true, 1e-5);
    check_bad_label();
    printf("test_cudasim_large: %d graphs, %d failed\n", n_ran, n_fail);
    return n_fail ? 1 : 0;
}
