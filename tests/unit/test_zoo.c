/* The model zoo: every preset builds for Fashion-MNIST- and CIFAR-shaped inputs with the parameter
 * count its architecture's formula gives (worked out here, independently of src/nn/zoo_nets.c),
 * FLOPs per example by the rules of kiln_layer_flops, and a few training steps on a small
 * class-separable image set lower its loss. Also the CLI: kiln summary --model prints FLOPs, and
 * kiln train takes a zoo model on CIFAR-format files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "check.h"
#include "kiln/nn.h"

#define RGB32 KILN_SHAPE(32, 32, 3)
#define GREY28 KILN_SHAPE(28, 28, 1)

/* ---- parameter counts from the papers' formulas ---- */
/* A conv without bias followed by batch norm: k*k*cin*cout weights, 4 norm values per channel
 * (gamma, beta trainable; moving mean and variance not). */
static int64_t conv_bn(int k, int64_t cin, int64_t cout, bool trainable) { return k * k * cin * cout + (trainable ? 2 : 4) * cout; }

static int64_t lenet5_params(int64_t c, int64_t classes) {
    /* C1 6@5x5, C3 16@5x5 on all of S2, C5 120 on the 5x5x16 map, F6 84, output: with biases */
    return (25 * c * 6 + 6) + (25 * 6 * 16 + 16) + (5 * 5 * 16 * 120 + 120) + (120 * 84 + 84) + (84 * classes + classes);
}

static int64_t resnet_params(int depth, int64_t c, int64_t classes, bool trainable) {
    int n = (depth - 2) / 6;
    int64_t p = conv_bn(3, c, 16, trainable), w_in = 16;
    for (int s = 0; s < 3; s++) {
        int64_t w = 16 << s;
        for (int b = 0; b < n; b++) {
            p += conv_bn(3, b ? w : w_in, w, trainable) + conv_bn(3, w, w, trainable);
            if (b == 0 && w != w_in) p += conv_bn(1, w_in, w, trainable);   /* projection shortcut */
        }
        w_in = w;
    }
    return p + 64 * classes + classes;
}

/* GoogLeNet's module table (Szegedy et al. 2014, table 1: #1x1, #3x3 reduce, #3x3, #5x5 reduce,
 * #5x5, pool proj) divided by 4; the 5x5 is two 3x3 convs of #5x5 filters. */
static const int googlenet_div4[9][6] = {
    { 16, 24, 32, 4, 8, 8 }, { 32, 32, 48, 8, 24, 16 },                                     /* 3a 3b */
    { 48, 24, 52, 4, 12, 16 }, { 40, 28, 56, 6, 16, 16 }, { 32, 32, 64, 6, 16, 16 },         /* 4a 4b 4c */
    { 28, 36, 72, 8, 16, 16 }, { 64, 40, 80, 8, 32, 32 },                                    /* 4d 4e */
    { 64, 40, 80, 8, 32, 32 }, { 96, 48, 96, 12, 32, 32 },                                   /* 5a 5b */
};
static int64_t inception_params(int64_t c, int64_t classes, bool trainable) {
    int64_t p = conv_bn(3, c, 48, trainable), in = 48;
    for (int i = 0; i < 9; i++) {
        const int *m = googlenet_div4[i];
        p += conv_bn(1, in, m[0], trainable) + conv_bn(1, in, m[1], trainable) + conv_bn(3, m[1], m[2], trainable) +
             conv_bn(1, in, m[3], trainable) + conv_bn(3, m[3], m[4], trainable) + conv_bn(3, m[4], m[4], trainable) +
             conv_bn(1, in, m[5], trainable);
        in = m[0] + m[2] + m[4] + m[5];
    }
    return p + in * classes + classes;
}

static int64_t fast_cifar_params(int64_t c, int64_t classes, bool trainable) {
    int64_t whiten = 2 * c * 2 * 2, p = 2 * 2 * c * whiten + whiten, in = whiten;
    const int64_t widths[3] = { 64, 256, 256 };
    for (int b = 0; b < 3; b++) { p += conv_bn(3, in, widths[b], trainable) + conv_bn(3, widths[b], widths[b], trainable); in = widths[b]; }
    return p + 256 * classes;   /* dense without bias */
}

static void test_param_counts(void) {
    struct { const char *name; kiln_shape in; int classes; int64_t total, trainable; } want[] = {
        { "lenet5", GREY28, 10, lenet5_params(1, 10), lenet5_params(1, 10) },
        { "lenet5", RGB32, 10, lenet5_params(3, 10), lenet5_params(3, 10) },
        { "resnet20", RGB32, 10, resnet_params(20, 3, 10, false), resnet_params(20, 3, 10, true) },
        { "resnet20", GREY28, 7, resnet_params(20, 1, 7, false), resnet_params(20, 1, 7, true) },
        { "resnet56", RGB32, 10, resnet_params(56, 3, 10, false), resnet_params(56, 3, 10, true) },
        { "inception", RGB32, 10, inception_params(3, 10, false), inception_params(3, 10, true) },
        { "inception", GREY28, 10, inception_params(1, 10, false), inception_params(1, 10, true) },
        { "fast_cifar", RGB32, 10, fast_cifar_params(3, 10, false), fast_cifar_params(3, 10, true) },
        { "fast_cifar", GREY28, 10, fast_cifar_params(1, 10, false), fast_cifar_params(1, 10, true) },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        kiln_model *m = kiln_model_preset(want[i].name, want[i].in, want[i].classes);
        CHECK_MSG(m != NULL, "%s: %s", want[i].name, kiln_last_error());
        if (!m) continue;
        CHECK_MSG(kiln_model_param_count(m, false) == want[i].total && kiln_model_param_count(m, true) == want[i].trainable,
                  "%s: %lld (%lld trainable) parameters, the formula gives %lld (%lld)", want[i].name,
                  (long long)kiln_model_param_count(m, false), (long long)kiln_model_param_count(m, true),
                  (long long)want[i].total, (long long)want[i].trainable);
        CHECK(kiln_shape_equal(kiln_model_input_shape(m), want[i].in));
        CHECK(kiln_shape_equal(kiln_model_output_shape(m), KILN_SHAPE(want[i].classes)));
        /* the architecture a checkpoint stores rebuilds the same model */
        char *json = NULL;
        kiln_model *back = NULL;
        CHECK_OK(kiln_model_to_json(m, &json));
        if (json) CHECK_OK(kiln_model_from_json(json, &back));
        CHECK_MSG(back && kiln_model_layer_count(back) == kiln_model_layer_count(m) && kiln_model_param_count(back, false) == want[i].total &&
                  kiln_model_flops(back) == kiln_model_flops(m), "%s: the JSON round trip differs", want[i].name);
        free(json);
        kiln_model_free(back);
        kiln_model_free(m);
    }
    /* the papers' figures: ResNet-20 0.27M, ResNet-56 0.85M, LeNet-5 ~60k */
    CHECK(resnet_params(20, 3, 10, true) > 265000 && resnet_params(20, 3, 10, true) < 275000);
    CHECK(resnet_params(56, 3, 10, true) > 845000 && resnet_params(56, 3, 10, true) < 860000);
    CHECK(lenet5_params(1, 10) == 61706);
    /* defaults (no input shape): 32x32x3, lenet5 28x28x1 */
    kiln_model *m = kiln_model_preset("resnet56", KILN_SCALAR, 0);
    CHECK(m && kiln_shape_equal(kiln_model_input_shape(m), RGB32) && kiln_shape_equal(kiln_model_output_shape(m), KILN_SHAPE(10)));
    kiln_model_free(m);
    m = kiln_model_preset("lenet5", KILN_SCALAR, 0);
    CHECK(m && kiln_shape_equal(kiln_model_input_shape(m), GREY28));
    kiln_model_free(m);
}

static void test_takes(void) {
    CHECK(kiln_model_preset_takes("fashion_cnn", GREY28) && !kiln_model_preset_takes("fashion_cnn", RGB32));
    CHECK(kiln_model_preset_takes("cifar_cnn", RGB32) && !kiln_model_preset_takes("cifar_cnn", GREY28));
    const char *any[] = { "lenet5", "resnet20", "resnet56", "inception", "fast_cifar" };
    for (int i = 0; i < 5; i++) CHECK_MSG(kiln_model_preset_takes(any[i], RGB32) && kiln_model_preset_takes(any[i], GREY28), "%s", any[i]);
    CHECK(!kiln_model_preset_takes("fast_cifar", KILN_SHAPE(8, 8, 3)));      /* its four poolings need >= 25 pixels */
    CHECK(!kiln_model_preset_takes("resnet20", KILN_SHAPE(784)));
    CHECK(!kiln_model_preset_takes("nonesuch", RGB32));
    /* a shape a model cannot take is an error naming the model, the shape and the layer */
    CHECK(kiln_model_preset("fast_cifar", KILN_SHAPE(8, 8, 3), 10) == NULL);
    CHECK_MSG(strstr(kiln_last_error(), "fast_cifar") && strstr(kiln_last_error(), "[8, 8, 3]") && strstr(kiln_last_error(), "pool"),
              "%s", kiln_last_error());
}

/* ---- FLOPs ---- */
static void test_flops(void) {
    /* LeNet-5 on 28x28x1, by hand: 2 per multiply-add, 1 per bias / tanh / pooling-window element */
    int64_t c1 = 28 * 28 * 6, c3 = 10 * 10 * 16;
    int64_t want = (2 * c1 * 25 + 2 * c1) + 14 * 14 * 6 * 4 + (2 * c3 * 150 + 2 * c3) + 5 * 5 * 16 * 4 +
                   (2 * 400 * 120 + 2 * 120) + (2 * 120 * 84 + 2 * 84) + (2 * 84 * 10 + 10);
    kiln_model *m = kiln_model_preset("lenet5", GREY28, 10);
    CHECK_MSG(m && kiln_model_flops(m) == want, "lenet5: %lld FLOPs, expected %lld", (long long)kiln_model_flops(m), (long long)want);
    int64_t sum = 0;
    for (int i = 0; m && i < kiln_model_layer_count(m); i++) sum += kiln_layer_flops(kiln_model_layer(m, i));
    CHECK(m && sum == kiln_model_flops(m));
    kiln_model_free(m);

    /* ResNet-20: convs 2 * H*W*cout*9*cin (1x1 projections: *1), each conv's norm 2 per element,
     * ReLUs and Adds 1 per element, average pooling 1 per input element, dense 2*64*10 + 10 */
    int64_t f = 0, hw = 32 * 32, w_in = 16;
    f += 2 * hw * 16 * 27 + 2 * hw * 16 + hw * 16;          /* stem: conv, bn, relu */
    for (int s = 0; s < 3; s++) {
        int64_t w = 16 << s;
        if (s) hw /= 4;
        for (int b = 0; b < 3; b++) {
            int64_t cin = b ? w : w_in, e = hw * w;
            f += 2 * e * 9 * cin + 2 * e + e;               /* conv 1, bn, relu */
            f += 2 * e * 9 * w + 2 * e;                     /* conv 2, bn */
            if (b == 0 && w != w_in) f += 2 * e * cin + 2 * e;   /* projection, bn */
            f += e + e;                                     /* add, relu */
        }
        w_in = w;
    }
    f += 8 * 8 * 64 + 2 * 64 * 10 + 10;
    m = kiln_model_preset("resnet20", RGB32, 10);
    CHECK_MSG(m && kiln_model_flops(m) == f, "resnet20: %lld FLOPs, expected %lld", (long long)kiln_model_flops(m), (long long)f);
    /* ~41M multiply-adds, the figure usually quoted for ResNet-20 */
    CHECK(m && kiln_model_flops(m) > 80000000 && kiln_model_flops(m) < 84000000);
    kiln_model_free(m);
    CHECK(kiln_model_flops(NULL) == 0 && kiln_layer_flops(NULL) == 0);
}

/* ---- gradients through the zoo's wiring, against finite differences ----
 * One input feeding five consumers: a 1x1 conv, a 3x3 SAME conv, a 3x3/1 SAME max pool -> 1x1
 * conv, itself (the four concatenated on channels, as an Inception module), and a 1x1 stride-2
 * SAME projection; the concatenation goes through a 3x3 stride-2 SAME conv (odd size: uneven
 * padding) and is added to the projection (a ResNet downsampling block). The gradient of
 * sum(y * r) with respect to the input, in f64 on the ref backend, must match central
 * differences. */
static void test_wiring_gradients(void) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F64, KILN_SHAPE(2, 5, 5, 3));
    kiln_node *w1 = kiln_variable(g, "w1", KILN_F64, KILN_SHAPE(1, 1, 3, 2), kiln_init_normal(0, 0.5, 1));
    kiln_node *w2 = kiln_variable(g, "w2", KILN_F64, KILN_SHAPE(3, 3, 3, 3), kiln_init_normal(0, 0.5, 2));
    kiln_node *w3 = kiln_variable(g, "w3", KILN_F64, KILN_SHAPE(1, 1, 3, 2), kiln_init_normal(0, 0.5, 3));
    kiln_node *w4 = kiln_variable(g, "w4", KILN_F64, KILN_SHAPE(3, 3, 10, 4), kiln_init_normal(0, 0.5, 4));
    kiln_node *w5 = kiln_variable(g, "w5", KILN_F64, KILN_SHAPE(1, 1, 3, 4), kiln_init_normal(0, 0.5, 5));
    kiln_conv_params same = { .padding = KILN_SAME }, same2 = { .padding = KILN_SAME, .stride_h = 2, .stride_w = 2 };
    kiln_node *pool = kiln_max_pool2d(g, x, &(kiln_pool_params){ .size_h = 3, .size_w = 3, .stride_h = 1, .stride_w = 1, .padding = KILN_SAME });
    kiln_node *branches[4] = { kiln_conv2d(g, x, w1, &same), kiln_conv2d(g, x, w2, &same), kiln_conv2d(g, pool, w3, &same), x };
    kiln_node *cat = kiln_concat(g, branches, 4, 3);
    kiln_node *y = kiln_add(g, kiln_conv2d(g, cat, w4, &same2), kiln_conv2d(g, x, w5, &same2));
    kiln_tensor *r = kiln_tensor_new(KILN_F64, KILN_SHAPE(2, 3, 3, 4)), *xv = kiln_tensor_new(KILN_F64, KILN_SHAPE(2, 5, 5, 3));
    uint64_t seed = 99;
    for (int64_t i = 0; i < 72; i++) { seed = seed * 6364136223846793005ull + 1; kiln_tensor_set(r, i, (double)(seed >> 11) / 9007199254740992.0 - 0.5); }
    for (int64_t i = 0; i < 150; i++) { seed = seed * 6364136223846793005ull + 1; kiln_tensor_set(xv, i, (double)(seed >> 11) / 9007199254740992.0 * 2 - 1); }
    kiln_node *loss = kiln_reduce_sum(g, kiln_mul(g, y, kiln_constant(g, r)), NULL, 0, false), *dx = NULL;
    CHECK_OK(kiln_gradients(g, loss, &x, 1, &dx));
    CHECK_MSG(kiln_graph_status(g) == KILN_OK, "%s", kiln_graph_error(g));
    kiln_session *s = kiln_graph_status(g) == KILN_OK ? kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_REF }) : NULL;
    CHECK(s != NULL);
    if (s) {
        kiln_tensor *grad = NULL, *l = NULL;
        kiln_feed feed = { x, xv };
        CHECK_OK(kiln_session_run(s, &feed, 1, &dx, &grad, 1, NULL, 0));
        double worst = 0;
        for (int64_t i = 0; grad && i < 150; i += 7) {       /* every 7th input element */
            double v = kiln_tensor_get(xv, i), h = 1e-5, lp, lm;
            kiln_tensor_set(xv, i, v + h);
            kiln_session_run(s, &feed, 1, &loss, &l, 1, NULL, 0);
            lp = l ? kiln_tensor_get(l, 0) : NAN;
            kiln_tensor_set(xv, i, v - h);
            kiln_session_run(s, &feed, 1, &loss, &l, 1, NULL, 0);
            lm = l ? kiln_tensor_get(l, 0) : NAN;
            kiln_tensor_set(xv, i, v);
            double fd = (lp - lm) / (2 * h), an = kiln_tensor_get(grad, i), err = fabs(fd - an) / fmax(1, fabs(fd));
            if (!(err <= worst)) worst = err;
        }
        CHECK_MSG(grad && worst < 1e-6, "input gradient vs finite differences: worst error %g", worst);
        kiln_tensor_free(grad);
        kiln_tensor_free(l);
        kiln_session_free(s);
    }
    kiln_tensor_free(r);
    kiln_tensor_free(xv);
    kiln_graph_free(g);
}

/* ---- a few training steps ---- */
/* n images of shape s in `classes` classes: a fixed random template per class plus noise, so the
 * classes are separable. */
static kiln_dataset *separable_images(kiln_shape s, int classes, int64_t n, uint64_t seed) {
    int64_t per = kiln_shape_numel(s);
    kiln_shape xs = { 4, { n, s.dim[0], s.dim[1], s.dim[2] } };
    kiln_tensor *x = kiln_tensor_new(KILN_F32, xs), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    float *tpl = malloc(sizeof(float) * (size_t)(per * classes));
    kiln_dataset *d = NULL;
    if (x && y && tpl) {
        uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
#define RND() (r = r * 6364136223846793005ull + 1442695040888963407ull, (float)((r >> 40) & 0xffffff) / 16777216.0f)
        for (int64_t i = 0; i < per * classes; i++) tpl[i] = RND();
        for (int64_t i = 0; i < n; i++) {
            int k = (int)(i % classes);
            ((int32_t *)y->data)[i] = k;
            for (int64_t j = 0; j < per; j++) ((float *)x->data)[i * per + j] = 0.7f * tpl[k * per + j] + 0.3f * RND();
        }
#undef RND
        d = kiln_dataset_from_tensors(x, y, classes);
    }
    free(tpl);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return d;
}

/* Trains `epochs` epochs of n/batch steps; the mean training loss of the last epoch must be below
 * the first's. Images of `in` (the zoo's global-pooling nets are trained on 16x16 images here:
 * the same layers, a quarter of the work). */
static void trains(const char *name, kiln_shape in, int64_t n, int batch, int epochs) {
    kiln_dataset *d = separable_images(in, 4, n, 7);
    kiln_model *m = kiln_model_preset(name, in, 4);
    CHECK_MSG(d && m, "%s: %s", name, kiln_last_error());
    if (d && m) {
        kiln_model_set_seed(m, 3);
        CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-3), .from_logits = true,
                                                       .metrics = KILN_METRIC_ACCURACY, .device = "cpu", .num_threads = 1 }));
        CHECK_OK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = epochs, .batch_size = batch }));
        int ne = 0;
        const kiln_logs *h = kiln_model_history(m, &ne);
        CHECK_MSG(ne == epochs && isfinite(h[ne - 1].loss) && h[ne - 1].loss < h[0].loss, "%s: loss %g -> %g over %d epochs",
                  name, ne ? h[0].loss : 0, ne ? h[ne - 1].loss : 0, ne);
        if (ne == epochs) printf("  %-10s loss %.3f -> %.3f, accuracy %.2f -> %.2f (%d steps)\n", name, h[0].loss, h[ne - 1].loss,
                                 h[0].accuracy, h[ne - 1].accuracy, epochs * (int)(n / batch));
    }
    kiln_model_free(m);
    kiln_dataset_free(d);
}

static void test_training(void) {
    trains("lenet5", GREY28, 64, 16, 4);
    trains("fast_cifar", GREY28, 32, 16, 3);
    trains("resnet20", KILN_SHAPE(16, 16, 3), 32, 16, 3);
    trains("inception", KILN_SHAPE(16, 16, 3), 32, 16, 3);
    trains("resnet56", KILN_SHAPE(16, 16, 3), 16, 8, 2);
}

/* ---- the CLI ---- */
static char out_buf[1 << 16];
static int run(const char *cmd) {
    char full[4096];
    snprintf(full, sizeof full, "%s > test_zoo_out.txt 2>&1", cmd);
    int rc = system(full);
    FILE *f = fopen("test_zoo_out.txt", "r");
    size_t n = f ? fread(out_buf, 1, sizeof out_buf - 1, f) : 0;
    out_buf[n] = 0;
    if (f) fclose(f);
    unlink("test_zoo_out.txt");
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* CIFAR-10 binary records: label byte + 3072 pixel bytes (random: only the format matters here) */
static void write_cifar(const char *path, int nrec, unsigned seed) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); return; }
    unsigned char rec[3073];
    for (int r = 0; r < nrec; r++) {
        rec[0] = (unsigned char)(r % 10);
        for (int i = 1; i < 3073; i++) { seed = seed * 1103515245u + 12345u; rec[i] = (unsigned char)(seed >> 16); }
        fwrite(rec, 1, sizeof rec, f);
    }
    fclose(f);
}

static void test_cli(void) {
    if (access("./kiln", X_OK) != 0) { CHECK_MSG(0, "./kiln not found in the build directory (build the kiln_cli target)"); return; }
    int rc = run("./kiln summary --model resnet20");
    CHECK_MSG(rc == 0 && strstr(out_buf, "Total params: 274,042") && strstr(out_buf, "FLOPs per example: 82,306,314") &&
              strstr(out_buf, "a multiply-add counts as 2 FLOPs") && strstr(out_buf, "stage2_block1_proj_conv (Conv2D)"),
              "rc %d:\n%.2000s", rc, out_buf);
    rc = run("./kiln summary --model lenet5");
    CHECK_MSG(rc == 0 && strstr(out_buf, "Total params: 61,706") && strstr(out_buf, "FLOPs per example: 852,370") &&
              strstr(out_buf, "244,608"), "rc %d:\n%.2000s", rc, out_buf);     /* c1's own FLOPs */
    rc = run("./kiln summary --model resnet21");
    CHECK_MSG(rc == 2 && strstr(out_buf, "resnet56") && strstr(out_buf, "inception"), "rc %d: %s", rc, out_buf);
    rc = run("./kiln train --help");
    CHECK_MSG(rc == 0 && strstr(out_buf, "fast_cifar"), "rc %d", rc);

    char dir[] = "/tmp/kiln_zoo_cifar_XXXXXX", p[256], cmd[1024];
    if (!mkdtemp(dir)) { CHECK_MSG(0, "mkdtemp failed"); return; }
    for (int i = 1; i <= 5; i++) {
        snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, i);
        write_cifar(p, 8, (unsigned)i);
    }
    snprintf(p, sizeof p, "%s/test_batch.bin", dir);
    write_cifar(p, 8, 99);
    /* a zoo model on CIFAR-shaped data, and one built for 28x28x1 by default */
    snprintf(cmd, sizeof cmd, "./kiln train --data cifar10:%s --model lenet5 --epochs 1 --batch-size 8 --threads 1 --verbose 0", dir);
    rc = run(cmd);
    CHECK_MSG(rc == 0 && strstr(out_buf, "40 training / 8 test examples") && strstr(out_buf, "Test accuracy"), "rc %d:\n%s", rc, out_buf);
    snprintf(cmd, sizeof cmd, "./kiln train --data cifar10:%s --model resnet20 --epochs 1 --batch-size 8 --limit 16 --threads 1 --verbose 0", dir);
    rc = run(cmd);
    CHECK_MSG(rc == 0 && strstr(out_buf, "Test accuracy"), "rc %d:\n%s", rc, out_buf);
    /* fashion_cnn and cifar_cnn keep their one shape (mlp takes any: CSV rows, npz arrays) */
    snprintf(cmd, sizeof cmd, "./kiln train --data cifar10:%s --model fashion_cnn --epochs 1", dir);
    rc = run(cmd);
    CHECK_MSG(rc == 2 && strstr(out_buf, "[28, 28, 1]") && strstr(out_buf, "resnet20"), "rc %d:\n%s", rc, out_buf);
    for (int i = 1; i <= 5; i++) { snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, i); unlink(p); }
    snprintf(p, sizeof p, "%s/test_batch.bin", dir);
    unlink(p);
    rmdir(dir);
}

int main(void) {
    test_param_counts();
    test_takes();
    test_flops();
    test_wiring_gradients();
    test_training();
    test_cli();
    return check_summary("test_zoo");
}
