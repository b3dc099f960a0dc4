/* Training and evaluation through input pipelines: kiln_fit is the in-memory special case of
 * kiln_fit_data (same losses), augmentation + prefetch through fit, evaluation of every example,
 * held-out splits, errors, and `kiln train` on a small CIFAR-10 directory written here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/data.h"
#include "kiln/pipeline.h"
#include "kiln/device.h"

static bool has(const char *msg, const char *needle) { return strstr(msg, needle) != NULL; }

static kiln_model *tiny_mlp(uint64_t seed) {
    kiln_model *m = kiln_sequential("tiny_mlp", KILN_SHAPE(8));
    kiln_model_set_seed(m, seed);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.01), .from_logits = true, .metrics = KILN_METRIC_ACCURACY }));
    return m;
}

static void same_history(const kiln_model *a, const kiln_model *b, const char *what) {
    int na, nb;
    const kiln_logs *ha = kiln_model_history(a, &na), *hb = kiln_model_history(b, &nb);
    CHECK_MSG(na == nb && na > 0, "%s: %d vs %d epochs", what, na, nb);
    for (int e = 0; e < na && e < nb; e++) {
        CHECK_MSG(ha[e].loss == hb[e].loss && ha[e].accuracy == hb[e].accuracy && ha[e].steps == hb[e].steps,
                  "%s: epoch %d: loss %.9g vs %.9g, steps %lld vs %lld", what, e + 1, ha[e].loss, hb[e].loss,
                  (long long)ha[e].steps, (long long)hb[e].steps);
        CHECK_MSG(ha[e].has_val == hb[e].has_val && ha[e].val_loss == hb[e].val_loss, "%s: epoch %d: val_loss %.9g vs %.9g",
                  what, e + 1, ha[e].val_loss, hb[e].val_loss);
    }
}

/* kiln_fit(dataset) == kiln_fit_data(from_dataset -> shuffle(N, shuffle_seed ^ model seed) -> batch(B, true)),
 * with or without prefetch workers. */
static void test_same_losses(void) {
    kiln_dataset *train = separable(300, 1), *val = separable(70, 2);
    if (!train || !val) { CHECK_MSG(0, "datasets: %s", kiln_last_error()); return; }
    kiln_model *a = tiny_mlp(7);
    CHECK_OK(kiln_fit(a, train, &(kiln_fit_opts){ .epochs = 3, .batch_size = 32, .shuffle_seed = 5, .validation = val }));
    for (int workers = 0; workers <= 3; workers += 3) {
        kiln_model *b = tiny_mlp(7);
        kiln_data *d = kiln_data_batch(kiln_data_shuffle(kiln_data_from_dataset(train, false), 300, 5 ^ 7), 32, true);
        kiln_data *v = kiln_data_batch(kiln_data_from_dataset(val, true), 32, false);
        if (workers) d = kiln_data_prefetch(d, 3, workers);
        CHECK(d && v);
        CHECK_OK(kiln_fit_data(b, d, &(kiln_fit_opts){ .epochs = 3, .validation_data = v }));
        same_history(a, b, workers ? "prefetch, 3 workers" : "no prefetch");
        kiln_data_free(d);
        kiln_data_free(v);
        kiln_model_free(b);
    }
    /* a kiln_dataset given as .validation to kiln_fit_data is evaluated in batches of the pipeline */
    kiln_model *c = tiny_mlp(7);
    kiln_data *d = kiln_data_batch(kiln_data_shuffle(kiln_data_from_dataset(train, false), 300, 5 ^ 7), 32, true);
    CHECK_OK(kiln_fit_data(c, d, &(kiln_fit_opts){ .epochs = 3, .validation = val }));
    same_history(a, c, "validation dataset");
    kiln_data_free(d);
    kiln_model_free(c);
    /* validation_split: the held-out tail is the same as a skip() pipeline */
    kiln_model *e = tiny_mlp(3), *f = tiny_mlp(3);
    CHECK_OK(kiln_fit(e, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 32, .no_shuffle = true, .validation_split = 0.2 }));
    kiln_data *t = kiln_data_batch(kiln_data_take(kiln_data_from_dataset(train, false), 240), 32, true);
    kiln_data *v = kiln_data_batch(kiln_data_skip(kiln_data_from_dataset(train, false), 240), 32, false);
    CHECK_OK(kiln_fit_data(f, t, &(kiln_fit_opts){ .epochs = 2, .validation_data = v }));
    same_history(e, f, "validation_split");
    kiln_data_free(t);
    kiln_data_free(v);
    kiln_model_free(e);
    kiln_model_free(f);
    kiln_model_free(a);
    kiln_dataset_free(train);
    kiln_dataset_free(val);
}

static int steps_seen[8];
static uint64_t allocs_at[64];
static bool on_batch(kiln_model *m, const kiln_logs *l, void *user) {
    (void)m; (void)user;
    if (l->epoch < 8) steps_seen[l->epoch]++;
    if (l->epoch == 1 && l->batch < 64) allocs_at[l->batch] = kiln_alloc_count();
    return false;
}

static kiln_model *small_cnn(uint64_t seed) {
    kiln_model *m = kiln_sequential("small_cnn", KILN_SHAPE(8, 8, 3));
    kiln_model_set_seed(m, seed);
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 4, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 4 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_momentum(0.05, 0.9, false), .from_logits = true, .metrics = KILN_METRIC_ACCURACY }));
    return m;
}

static kiln_data *aug_pipeline(const kiln_dataset *ds, int workers) {
    kiln_data *d = kiln_data_shuffle(kiln_data_from_dataset(ds, false), 1000, 9);
    d = kiln_data_augment(d, &(kiln_augment_opts){ .crop_pad = 2, .flip = true, .cutout_size = 3, .seed = 4 });
    d = kiln_data_batch(d, 16, false);                 /* 200 = 12 x 16 + 8: the 8 are skipped */
    return workers ? kiln_data_prefetch(d, 2, workers) : d;
}

static void test_augment_prefetch(void) {
    kiln_dataset *train = kiln_dataset_synthetic(KILN_SHAPE(8, 8, 3), 4, 200, 11), *val = kiln_dataset_synthetic(KILN_SHAPE(8, 8, 3), 4, 50, 12);
    if (!train || !val) { CHECK_MSG(0, "synthetic: %s", kiln_last_error()); return; }
    kiln_data *v = kiln_data_prefetch(kiln_data_batch(kiln_data_from_dataset(val, false), 16, false), 2, 2);
    kiln_callback cb = kiln_callback_lambda(on_batch, NULL, NULL);
    double first_loss[2] = { 0, 0 };
    for (int k = 0; k < 2; k++) {
        int workers = k ? 3 : 1;
        memset(steps_seen, 0, sizeof steps_seen);
        kiln_model *m = small_cnn(5);
        kiln_data *d = aug_pipeline(train, workers);
        CHECK(d != NULL);
        CHECK_OK(kiln_fit_data(m, d, &(kiln_fit_opts){ .epochs = 2, .validation_data = v, .callbacks = &cb, .n_callbacks = 1, .verbose = KILN_VERBOSE_SILENT }));
        CHECK_MSG(steps_seen[1] == 12 && steps_seen[2] == 12, "steps %d %d (partial batch must be skipped)", steps_seen[1], steps_seen[2]);
        CHECK_MSG(allocs_at[11] == allocs_at[3], "the training loop allocated %llu times between steps 3 and 11",
                  (unsigned long long)(allocs_at[11] - allocs_at[3]));
        int n;
        const kiln_logs *h = kiln_model_history(m, &n);
        CHECK(n == 2);
        if (n == 2) {
            CHECK(h[1].steps == 12 && h[1].batch == 12 && h[1].has_val && h[1].images_per_sec > 0);
            CHECK(h[1].loss == h[1].loss && h[1].val_loss == h[1].val_loss);
            first_loss[k] = h[0].loss;
        }
        kiln_eval_result r;
        CHECK_OK(kiln_evaluate_data(m, v, NULL, &r));
        CHECK(r.count == 50);
        kiln_data_free(d);
        kiln_model_free(m);
    }
    /* the same seeds give the same augmentations whatever the number of workers */
    CHECK_MSG(first_loss[0] == first_loss[1], "1 worker: %.9g, 3 workers: %.9g", first_loss[0], first_loss[1]);
    kiln_data_free(v);
    kiln_dataset_free(train);
    kiln_dataset_free(val);
}

static void test_evaluate_data(void) {
    kiln_dataset *train = separable(256, 3), *test = separable(103, 4);
    if (!train || !test) return;
    kiln_model *m = tiny_mlp(2);
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 32 }));
    kiln_eval_result a, b, c;
    CHECK_OK(kiln_evaluate(m, test, &(kiln_eval_opts){ .batch_size = 32 }, &a));
    kiln_data *d = kiln_data_batch(kiln_data_from_dataset(test, false), 32, false);     /* 3 x 32 + 7 */
    CHECK_OK(kiln_evaluate_data(m, d, NULL, &b));
    kiln_data *u = kiln_data_from_dataset(test, false);                                 /* unbatched: one at a time */
    CHECK_OK(kiln_evaluate_data(m, u, NULL, &c));
    CHECK(a.count == 103 && b.count == 103 && c.count == 103);
    CHECK(a.loss == b.loss && a.accuracy == b.accuracy);
    CHECK_NEAR(c.loss, a.loss, 1e-5);
    CHECK_NEAR(c.accuracy, a.accuracy, 1e-12);
    kiln_data_free(d);
    kiln_data_free(u);

    /* errors */
    kiln_dataset *img = kiln_dataset_synthetic(KILN_SHAPE(8, 8, 3), 3, 64, 1);
    kiln_data *bad = kiln_data_batch(kiln_data_from_dataset(img, false), 16, true);
    kiln_status st = kiln_fit_data(m, bad, NULL);
    CHECK_MSG(st == KILN_SHAPE_MISMATCH && has(kiln_last_error(), "[8, 8, 3]") && has(kiln_last_error(), "[8]"), "%s", kiln_last_error());
    CHECK(kiln_evaluate_data(m, bad, NULL, &c) == KILN_SHAPE_MISMATCH);
    kiln_data_free(bad);
    kiln_data *unb = kiln_data_from_dataset(train, false);
    st = kiln_fit_data(m, unb, NULL);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && has(kiln_last_error(), "kiln_data_batch"), "%s", kiln_last_error());
    kiln_data_free(unb);
    kiln_data *inf = kiln_data_repeat(kiln_data_batch(kiln_data_from_dataset(train, false), 32, true), -1);
    st = kiln_fit_data(m, inf, NULL);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && has(kiln_last_error(), "infinite"), "%s", kiln_last_error());
    kiln_data_free(inf);
    kiln_data *ok = kiln_data_batch(kiln_data_from_dataset(train, false), 32, true);
    CHECK(kiln_fit_data(m, ok, &(kiln_fit_opts){ .validation_split = 0.1 }) == KILN_INVALID_ARGUMENT);
    CHECK(has(kiln_last_error(), "validation_data"));
    kiln_data *vv = kiln_data_batch(kiln_data_from_dataset(test, false), 32, false);
    CHECK(kiln_fit_data(m, ok, &(kiln_fit_opts){ .validation = test, .validation_data = vv }) == KILN_INVALID_ARGUMENT);
    kiln_data *big = kiln_data_batch(kiln_data_from_dataset(test, false), 200, false);   /* 103 < 200: no full batch */
    st = kiln_fit_data(m, big, NULL);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && has(kiln_last_error(), "no full batch"), "%s", kiln_last_error());
    kiln_data_free(big);
    kiln_data_free(vv);
    kiln_data_free(ok);
    kiln_dataset_free(img);
    kiln_model_free(m);
    kiln_dataset_free(train);
    kiln_dataset_free(test);
}

static void test_split_source(void) {
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(100, 1)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(100));
    for (int i = 0; i < 100; i++) { kiln_tensor_set(x, i, i); kiln_tensor_set(y, i, i % 4); }
    kiln_dataset *ds = kiln_dataset_from_tensors(x, y, 4);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_data *t = NULL, *h = NULL;
    CHECK_OK(kiln_data_split_source(kiln_data_from_dataset(ds, false), 0.1, &t, &h));
    CHECK(t && h && kiln_data_source_size(t) == 90 && kiln_data_source_size(h) == 10 && kiln_data_num_classes(h) == 4);
    h = kiln_data_batch(h, 100, false);
    t = kiln_data_batch(t, 100, false);
    kiln_data_iter *it;
    kiln_tensor *bx, *by;
    if (h && kiln_data_iter_new(h, 0, &it) == KILN_OK) {
        CHECK_OK(kiln_data_iter_next(it, &bx, &by));
        int bad = 0;
        for (int i = 0; bx && i < 10; i++) bad += ((const float *)bx->data)[i] != (float)(10 * i + 9) || ((const int32_t *)by->data)[i] != (10 * i + 9) % 4;
        CHECK_MSG(bx && bx->shape.dim[0] == 10 && bad == 0, "held-out examples are not 9, 19, ..., 99");
        kiln_data_iter_free(it);
    }
    if (t && kiln_data_iter_new(t, 0, &it) == KILN_OK) {
        CHECK_OK(kiln_data_iter_next(it, &bx, &by));
        CHECK(bx && bx->shape.dim[0] == 90 && ((const float *)bx->data)[9] == 10.0f);
        kiln_data_iter_free(it);
    }
    kiln_data_free(t);       /* either order: the shared source goes with the last one */
    kiln_data_free(h);
    CHECK(kiln_data_split_source(kiln_data_batch(kiln_data_from_dataset(ds, false), 4, true), 0.1, &t, &h) == KILN_INVALID_ARGUMENT);
    CHECK(has(kiln_last_error(), "bare source") && !t && !h);
    CHECK(kiln_data_split_source(kiln_data_from_dataset(ds, false), 1.5, &t, &h) == KILN_INVALID_ARGUMENT);
    kiln_dataset_free(ds);
}

/* ---- the CLI on a small CIFAR-10 directory ---- */

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

static char out_buf[65536];
/* Runs cmd (stdout + stderr to a file); returns the exit code and leaves the output in out_buf. */
static int run(const char *cmd) {
    char full[4096];
    snprintf(full, sizeof full, "%s > test_fit_data_out.txt 2>&1", cmd);
    int rc = system(full);
    FILE *f = fopen("test_fit_data_out.txt", "r");
    size_t n = f ? fread(out_buf, 1, sizeof out_buf - 1, f) : 0;
    out_buf[n] = 0;
    if (f) fclose(f);
    unlink("test_fit_data_out.txt");
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_cli_cifar(void) {
    if (access("./kiln", X_OK) != 0) { CHECK_MSG(0, "./kiln not found in the build directory (build the kiln_cli target)"); return; }
    char dir[] = "/tmp/kiln_fit_cifar_XXXXXX", p[256], cmd[1024];
    if (!mkdtemp(dir)) { CHECK_MSG(0, "mkdtemp failed"); return; }
    for (int i = 1; i <= 5; i++) {
        snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, i);
        write_cifar(p, 60, (unsigned)i);
    }
    snprintf(p, sizeof p, "%s/test_batch.bin", dir);
    write_cifar(p, 50, 99);
    /* 300 training records, batch 32: 9 steps (the last 12 skipped); 50 test records, all evaluated */
    snprintf(cmd, sizeof cmd, "./kiln train --data cifar10:%s --model cifar_cnn --epochs 1 --batch-size 32 --augment flip,crop "
             "--prefetch 2 --workers 2 --threads 2 --verbose 2 --history test_fit_data_h.csv --save test_fit_data_ck.safetensors", dir);
    int rc = run(cmd);
    CHECK_MSG(rc == 0 && has(out_buf, "300 training / 50 test examples") && has(out_buf, "Epoch 1/1 - 9/9") &&
              has(out_buf, "augment flip crop") && has(out_buf, "2 worker threads") && has(out_buf, "Test accuracy") &&
              has(out_buf, "50 examples"), "rc %d:\n%s", rc, out_buf);
    FILE *f = fopen("test_fit_data_h.csv", "r");
    CHECK(f != NULL);
    if (f) {
        char line[256];
        int rows = 0;
        while (fgets(line, sizeof line, f)) rows++;
        CHECK(rows == 2);
        fclose(f);
    }
    /* the bare directory is recognised; eval reads the same test split */
    snprintf(cmd, sizeof cmd, "./kiln eval --load test_fit_data_ck.safetensors --data %s --threads 2", dir);
    rc = run(cmd);
    CHECK_MSG(rc == 0 && has(out_buf, "test accuracy") && has(out_buf, "50 examples"), "rc %d:\n%s", rc, out_buf);
    /* a model that does not take the data's shape: an error naming both */
    snprintf(cmd, sizeof cmd, "./kiln train --data cifar10:%s --model fashion_cnn --epochs 1 --data-on-device", dir);
    rc = run(cmd);
    /* (the --data-on-device note is the no-GPU warning: absent when a GPU answers) */
    CHECK_MSG(rc == 2 && has(out_buf, "[28, 28, 1]") && has(out_buf, "[32, 32, 3]") && (has(out_buf, "--data-on-device") || kiln_gpu_available()),
              "rc %d:\n%s", rc, out_buf);
    snprintf(cmd, sizeof cmd, "./kiln train --data cifar10:%s --model cifar_cnn --augment spin", dir);
    rc = run(cmd);
    CHECK_MSG(rc == 2 && has(out_buf, "spin"), "rc %d:\n%s", rc, out_buf);
    unlink("test_fit_data_h.csv");
    unlink("test_fit_data_ck.safetensors");
    for (int i = 1; i <= 5; i++) { snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, i); unlink(p); }
    snprintf(p, sizeof p, "%s/test_batch.bin", dir);
    unlink(p);
    rmdir(dir);
}

/* steps_per_epoch caps each epoch's batches (host and resident data); the cap above the full
 * count changes nothing; a negative one is an error. */
static void test_steps_per_epoch(void) {
    kiln_dataset *ds = separable(200, 5);    /* 10 batches of 20 */
    for (int resident = 0; resident < 2; resident++) {
        kiln_model *m = tiny_mlp(3);
        CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 2, .batch_size = 20, .steps_per_epoch = 3, .data_on_device = resident }));
        int n = 0;
        const kiln_logs *h = kiln_model_history(m, &n);
        CHECK_MSG(n == 2 && h[0].steps == 3 && h[1].steps == 3 && h[1].batch == 3, "resident %d: %d epochs, steps %lld", resident, n,
                  n ? (long long)h[0].steps : -1LL);
        CHECK_MSG(kiln_session_step(kiln_model_session(m)) == 6, "resident %d: %llu training steps run, wanted 6", resident,
                  (unsigned long long)kiln_session_step(kiln_model_session(m)));
        CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 3, .initial_epoch = 2, .batch_size = 20, .steps_per_epoch = 100, .data_on_device = resident }));
        h = kiln_model_history(m, &n);
        CHECK_MSG(n == 3 && h[2].steps == 10, "resident %d: a cap above the epoch: %lld steps", resident, n == 3 ? (long long)h[2].steps : -1LL);
        kiln_model_free(m);
    }
    kiln_model *m = tiny_mlp(3);
    CHECK(kiln_fit(m, ds, &(kiln_fit_opts){ .batch_size = 20, .steps_per_epoch = -1 }) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(has(kiln_last_error(), "steps_per_epoch"), "%s", kiln_last_error());
    kiln_model_free(m);
    kiln_dataset_free(ds);
}

int main(void) {
    /* runs are compared bit for bit: on a real GPU that needs deterministic cuDNN algorithms */
    setenv("KILN_DETERMINISTIC", "1", 0);
    test_same_losses();
    test_augment_prefetch();
    test_evaluate_data();
    test_split_source();
    test_steps_per_epoch();
    test_cli_cifar();
    return check_summary("test_fit_data");
}
