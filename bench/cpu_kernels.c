/* Microbenchmark of the cpu backend's heavy kernels on the reference models' layer shapes:
 * GFLOP/s of MatMul (forward + both gradients) and Conv2D / Conv2DBackpropInput /
 * Conv2DBackpropFilter, GB/s of the memory-bound pooling / ReLU-gradient / bias-gradient ops, plus raw cblas_sgemm on a large square matrix as the machine's peak.
 *
 * Build (a CMake target, on by default with -DKILN_BENCH=ON), from the repository root:
 *   cmake -S . -B build && cmake --build build --target bench_cpu_kernels
 * Run:  build/bench_cpu_kernels [threads [filter]]   (default: all cores; filter: only the lines
 *       whose name contains it). KILN_BENCH_BF16=1: the convolutions as mixed_bfloat16 runs them
 *       (bf16 activations and weights; the filter gradient f32). KILN_BENCH_FLUSH=MIB writes that
 *       much memory between calls (untimed), so inputs and workspace start cold as in a real step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cblas.h>
#include "backend/backend.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *rnd(int64_t n) {
    float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
    for (int64_t i = 0; i < n; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

static int threads;
static float *flush;           /* KILN_BENCH_FLUSH=MIB: written between calls, as the other ops of a step would */
static size_t flush_n;
static bool bf16;              /* KILN_BENCH_BF16=1 */
static const char *only;       /* argv[2] */

static uint16_t *to_bf16(float *f, int64_t n) {
    uint16_t *h = (uint16_t *)f;             /* in place: the f32 buffer is large enough */
    for (int64_t i = 0; i < n; i++) { uint32_t u; memcpy(&u, &f[i], 4); h[i] = (uint16_t)(u >> 16); }
    return h;
}

/* Runs node n (inputs of the given shapes, random data); returns the best GFLOP/s of 5 trials of
 * ~0.1 s each (the best, not the mean: other processes sharing the cores only ever slow a trial). */
static double time_node(kiln_node *n, int n_in, const kiln_shape *shapes, double flops) {
    kiln_node in[4] = { 0 };
    kiln_node *inp[4];
    kiln_view v[4];
    for (int i = 0; i < n_in; i++) {
        bool h = bf16 && (n->op == KILN_OP_CONV2D || n->op == KILN_OP_CONV2D_BWD_INPUT || n->op == KILN_OP_CONV2D_BWD_FILTER);
        in[i].dtype = h ? KILN_BF16 : KILN_F32; in[i].shape = shapes[i]; inp[i] = &in[i];
        int64_t e = kiln_shape_numel(shapes[i]);
        v[i] = (kiln_view){ rnd(e), in[i].dtype, shapes[i], e };
        if (h) to_bf16(v[i].data, e);
    }
    n->dtype = n_in > 0 && in[0].dtype == KILN_BF16 && n->op != KILN_OP_CONV2D_BWD_FILTER ? KILN_BF16 : KILN_F32;
    n->attrs.acc_f32 = n_in > 0 && in[0].dtype == KILN_BF16 && n->dtype == KILN_F32;
    n->n_in = n_in; n->in = inp;
    kiln_kernel_fn f = kiln_cpu_kernel(n);
    if (!f) { printf("  (no cpu kernel)\n"); return 0; }
    size_t ws = kiln_cpu_workspace(n);
    void *w = ws ? aligned_alloc(64, (ws + 63) / 64 * 64) : NULL;
    int64_t on = kiln_shape_numel(n->shape);
    kiln_kctx c = { n, n_in, v, { rnd(on), n->dtype, n->shape, on }, w, ws, 0, threads };
    f(&c);   /* warm-up */
    double best = 0;
    for (int trial = 0; trial < 5; trial++) {
        int reps = 0;
        double t0 = now(), t;
        do {
            if (flush_n) { double f0 = now(); for (size_t i = 0; i < flush_n; i++) flush[i] += 1.0f; t0 += now() - f0; }
            f(&c); reps++; t = now() - t0;
        } while (t < 0.1);
        if (flops * reps / t > best) best = flops * reps / t;
    }
    for (int i = 0; i < n_in; i++) free(v[i].data);
    free(c.out.data); free(w);
    return best * 1e-9;
}

static void bench_conv(const char *name, int N, int H, int W, int C, int CO, int k) {
    if (only && !strstr(name, only)) return;
    kiln_shape xs = KILN_SHAPE(N, H, W, C), ws = KILN_SHAPE(k, k, C, CO), ys = KILN_SHAPE(N, H, W, CO);
    int p = (k - 1) / 2;   /* SAME, stride 1 */
    kiln_node n = { 0 };
    n.attrs = (kiln_attrs){ .kh = k, .kw = k, .sh = 1, .sw = 1, .dh = 1, .dw = 1,
                            .pt = p, .pb = k - 1 - p, .pl = p, .pr = k - 1 - p, .groups = 1 };
    double flops = 2.0 * N * H * W * CO * (double)(k * k * C);
    n.op = KILN_OP_CONV2D; n.shape = ys;
    double f = time_node(&n, 2, (kiln_shape[]){ xs, ws }, flops);
    n.op = KILN_OP_CONV2D_BWD_INPUT; n.shape = xs; n.attrs.shape = xs;
    double bi = time_node(&n, 2, (kiln_shape[]){ ws, ys }, flops);
    n.op = KILN_OP_CONV2D_BWD_FILTER; n.shape = ws; n.attrs.shape = ws;
    double bf = time_node(&n, 2, (kiln_shape[]){ xs, ys }, flops);
    printf("%-34s fwd %7.1f  bwd_in %7.1f  bwd_filter %7.1f GFLOP/s\n", name, f, bi, bf);
}

static void bench_dense(const char *name, int M, int K, int Nn) {
    if (only && !strstr(name, only)) return;
    kiln_node n = { 0 };
    double flops = 2.0 * M * K * (double)Nn;
    n.op = KILN_OP_MATMUL;
    n.shape = KILN_SHAPE(M, Nn);                                   /* y = x @ W */
    double f = time_node(&n, 2, (kiln_shape[]){ KILN_SHAPE(M, K), KILN_SHAPE(K, Nn) }, flops);
    n.shape = KILN_SHAPE(M, K); n.attrs.trans_b = true;            /* dx = dy @ W^T */
    double bi = time_node(&n, 2, (kiln_shape[]){ KILN_SHAPE(M, Nn), KILN_SHAPE(K, Nn) }, flops);
    n.shape = KILN_SHAPE(K, Nn); n.attrs.trans_b = false; n.attrs.trans_a = true;   /* dW = x^T @ dy */
    double bw = time_node(&n, 2, (kiln_shape[]){ KILN_SHAPE(M, K), KILN_SHAPE(M, Nn) }, flops);
    printf("%-34s fwd %7.1f  dx     %7.1f  dW         %7.1f GFLOP/s\n", name, f, bi, bw);
}

/* Memory-bound ops: GB/s of the bytes each must read and write at least once. */
static void bench_pool(const char *name, int N, int H, int W, int C, int k, int st) {
    if (only && !strstr(name, only)) return;
    int OH = (H + st - 1) / st, OW = (W + st - 1) / st;
    int ph = (OH - 1) * st + k - H; ph = ph > 0 ? ph : 0;
    int pw = (OW - 1) * st + k - W; pw = pw > 0 ? pw : 0;
    kiln_shape xs = KILN_SHAPE(N, H, W, C), ys = KILN_SHAPE(N, OH, OW, C);
    kiln_node n = { 0 };
    n.attrs = (kiln_attrs){ .kh = k, .kw = k, .sh = st, .sw = st, .pt = ph / 2, .pb = ph - ph / 2, .pl = pw / 2, .pr = pw - pw / 2 };
    double xb = 4.0 * N * H * W * C, yb = 4.0 * N * OH * OW * C;
    n.op = KILN_OP_MAX_POOL; n.shape = ys;
    double f = time_node(&n, 1, (kiln_shape[]){ xs }, xb + yb);
    n.op = KILN_OP_MAX_POOL_GRAD; n.shape = xs;                     /* reads x, y, dy; writes dx */
    double g = time_node(&n, 3, (kiln_shape[]){ xs, ys, ys }, 2 * xb + 2 * yb);
    n.op = KILN_OP_RELU_GRAD; n.shape = xs;                          /* reads y, dy; writes dx */
    double r = time_node(&n, 2, (kiln_shape[]){ xs, xs }, 3 * xb);
    n.op = KILN_OP_REDUCE_SUM; n.shape = KILN_SHAPE(C);              /* the bias gradient */
    n.attrs = (kiln_attrs){ .n_axes = 3, .axes = { 0, 1, 2 } };
    double b = time_node(&n, 1, (kiln_shape[]){ xs }, xb);
    printf("%-34s pool %5.1f  pool_grad %5.1f  relu_grad %5.1f  bias_grad %5.1f GB/s\n", name, f, g, r, b);
}

int main(int argc, char **argv) {
    threads = argc > 1 ? atoi(argv[1]) : 0;
    only = argc > 2 ? argv[2] : NULL;
    if (getenv("KILN_BENCH_FLUSH")) {
        flush_n = (size_t)atoi(getenv("KILN_BENCH_FLUSH")) << 18;
        flush = calloc(flush_n, sizeof(float));
    }
    bf16 = getenv("KILN_BENCH_BF16") && *getenv("KILN_BENCH_BF16") == '1';
    kiln_set_num_threads(threads);
    threads = kiln_get_num_threads();
    printf("cpu kernels, %d threads\n", threads);
    if (!only) {
        int S = 2048;
        float *a = rnd((int64_t)S * S), *b = rnd((int64_t)S * S), *c = rnd((int64_t)S * S);
        openblas_set_num_threads(threads);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, S, S, 1, a, S, b, S, 0, c, S);
        double best = 1e30;
        for (int trial = 0; trial < 5; trial++) {
            double t0 = now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, S, S, 1, a, S, b, S, 0, c, S);
            if (now() - t0 < best) best = now() - t0;
        }
        printf("%-34s %7.1f GFLOP/s\n", "raw cblas_sgemm 2048^3", 2.0 * S * S * (double)S / best * 1e-9);
        free(a); free(b); free(c);
    }
    printf("-- Fashion CNN (batch 64)\n");
    bench_conv("conv1 28x28x1 -> 32, 3x3 SAME", 64, 28, 28, 1, 32, 3);
    bench_conv("conv2 14x14x32 -> 64, 3x3 SAME", 64, 14, 14, 32, 64, 3);
    bench_pool("pool1 28x28x32 2x2/2", 64, 28, 28, 32, 2, 2);
    bench_pool("pool2 14x14x64 2x2/2", 64, 14, 14, 64, 2, 2);
    bench_dense("dense 3136 -> 128", 64, 3136, 128);
    bench_dense("dense 128 -> 10", 64, 128, 10);
    printf("-- CIFAR CNN (batch 128)\n");
    bench_conv("conv1 32x32x3 -> 64, 5x5 SAME", 128, 32, 32, 3, 64, 5);
    bench_conv("conv2 16x16x64 -> 64, 5x5 SAME", 128, 16, 16, 64, 64, 5);
    bench_pool("pool1 32x32x64 3x3/2 SAME", 128, 32, 32, 64, 3, 2);
    bench_pool("pool2 16x16x64 3x3/2 SAME", 128, 16, 16, 64, 3, 2);
    printf("-- ResNet-20 stage 2 (batch 128 on CIFAR, 64 on Fashion-MNIST)\n");
    bench_conv("res2 16x16x32 -> 32, 3x3 SAME", 128, 16, 16, 32, 32, 3);
    bench_conv("res2 14x14x32 -> 32, 3x3 SAME", 64, 14, 14, 32, 32, 3);
    bench_dense("dense 4096 -> 384", 128, 4096, 384);
    bench_dense("dense 384 -> 192", 128, 384, 192);
    bench_dense("dense 192 -> 10", 128, 192, 10);
    return 0;
}
