/* Checkpoint paths, history rows and resuming (issue 16.4 and 16.6), through the C API:
 * Keras placeholders in checkpoint paths, the CSV row written before the checkpoint, the
 * writability check before training, rows past a resumed epoch dropped, optimizer state of another
 * optimizer or none (warning / strict error), corrupt kiln.epoch. Files live in a mkdtemp dir. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/io.h"

static char dir[256];

static kiln_model *tiny(kiln_optimizer opt) {
    kiln_model *m = kiln_sequential("tiny", KILN_SHAPE(8));
    kiln_model_set_seed(m, 3);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 8, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = opt, .from_logits = true, .metrics = KILN_METRIC_ACCURACY }));
    return m;
}

static int csv_rows(const char *path, int *epochs, int max) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "epoch", 5) && n < max) epochs[n++] = atoi(line);
    fclose(f);
    return n;
}

static void test_checkpoint_path(void) {
    kiln_logs l = { .epoch = 7, .loss = 0.123456, .val_loss = 1.5, .accuracy = 0.25, .has_val = true };
    char *p = NULL;
    CHECK_OK(kiln_checkpoint_path("m-{epoch:03d}-{val_loss:.2f}-{loss:.3f}.st", &l, &p));
    CHECK_MSG(p && !strcmp(p, "m-007-1.50-0.123.st"), "%s", p ? p : "(null)");
    free(p);
    CHECK_OK(kiln_checkpoint_path("m%d_{{x}}_{epoch}", &l, &p));      /* '%d' is literal; {{ }} are braces */
    CHECK_MSG(p && !strcmp(p, "m%d_{x}_7"), "%s", p ? p : "(null)");
    free(p);
    const char *bad[] = { "m-{step}", "m-{epoch", "m-}", "m-{epoch:%n}", "m-{loss:d}", "m-{epoch:999d}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = (char *)1;
        CHECK_MSG(kiln_checkpoint_path(bad[i], &l, &p) == KILN_INVALID_ARGUMENT && p == NULL, "'%s' accepted", bad[i]);
    }
    l.has_val = false;
    CHECK(kiln_checkpoint_path("{val_accuracy}", &l, &p) == KILN_INVALID_ARGUMENT);
    /* no fixed buffer: a 3000-character pattern comes back whole */
    char longp[3001];
    memset(longp, 'a', 3000);
    longp[3000] = 0;
    CHECK_OK(kiln_checkpoint_path(longp, &l, &p));
    CHECK(p && strlen(p) == 3000);
    free(p);
}

/* on_epoch_end of a callback listed before the checkpoint: turns the checkpoint's directory into
 * a file, so the save of epoch 1 fails */
static bool break_dir(kiln_model *m, const kiln_logs *l, void *user) {
    (void)m; (void)l;
    const char *d = user;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && touch '%s'", d, d);
    if (system(cmd) != 0) fprintf(stderr, "test_resume: %s failed\n", cmd);
    return false;
}

static void test_row_before_checkpoint(kiln_dataset *train) {
    char ck_dir[400], ck[500], csv[400];
    snprintf(ck_dir, sizeof ck_dir, "%s/ck", dir);
    snprintf(ck, sizeof ck, "%s/m.safetensors", ck_dir);
    snprintf(csv, sizeof csv, "%s/order.csv", dir);
    mkdir(ck_dir, 0755);
    kiln_model *m = tiny(kiln_adam(0.01));
    kiln_callback cbs[3] = { kiln_callback_lambda(NULL, break_dir, ck_dir), kiln_callback_model_checkpoint(ck, "loss", false),
                             kiln_callback_csv_logger(csv) };
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 32, .callbacks = cbs, .n_callbacks = 3 }) == KILN_IO_ERROR);
    int e[4];
    CHECK_MSG(csv_rows(csv, e, 4) == 1 && e[0] == 1, "the row of epoch 1 must be written before its checkpoint (rows: %d)", csv_rows(csv, e, 4));
    /* a checkpoint path that cannot be written fails before the first epoch */
    kiln_model_reset_history(m);
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 32, .callbacks = &cbs[1], .n_callbacks = 1 }) == KILN_IO_ERROR);
    int n_hist;
    kiln_model_history(m, &n_hist);
    CHECK_MSG(n_hist == 0, "%d epochs trained before the unwritable checkpoint path was noticed", n_hist);
    kiln_model_free(m);
    unlink(ck_dir);
    unlink(csv);
}

static void test_resume(kiln_dataset *train) {
    char csv[400], ck1[400], ckw[400], cks[400];
    snprintf(csv, sizeof csv, "%s/h.csv", dir);
    snprintf(ck1, sizeof ck1, "%s/e1.safetensors", dir);
    snprintf(ckw, sizeof ckw, "%s/weights.safetensors", dir);
    snprintf(cks, sizeof cks, "%s/sgd.safetensors", dir);
    /* epochs 1..3 logged, checkpoint of epoch 1 kept: resuming from it drops rows 2 and 3 */
    kiln_model *m = tiny(kiln_adam(0.01));
    kiln_callback cb = kiln_callback_csv_logger(csv);
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 32, .callbacks = &cb, .n_callbacks = 1 }));
    CHECK_OK(kiln_model_save(m, ck1, true));
    CHECK_OK(kiln_model_save(m, ckw, false));
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 3, .initial_epoch = 1, .batch_size = 32, .callbacks = &cb, .n_callbacks = 1 }));
    int e[8];
    CHECK(csv_rows(csv, e, 8) == 3);
    kiln_model *r = tiny(kiln_adam(0.01));
    CHECK_OK(kiln_model_load_opts(r, ck1, &(kiln_load_opts){ .resume = true, .strict = true }));
    CHECK(kiln_model_epoch(r) == 1);
    CHECK_OK(kiln_fit(r, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 32, .callbacks = &cb, .n_callbacks = 1 }));
    int n = csv_rows(csv, e, 8);
    CHECK_MSG(n == 2 && e[0] == 1 && e[1] == 2, "rows after resuming at epoch 1: %d (%d, %d, ...)", n, e[0], e[1]);
    kiln_model_free(r);
    /* weights only, or another optimizer's state: fine for inference, a warning when resuming, an
     * error when strict (and nothing is loaded) */
    kiln_model *s = tiny(kiln_sgd(0.1));
    CHECK_OK(kiln_model_save(s, cks, true));
    kiln_model_free(s);
    r = tiny(kiln_adam(0.01));
    CHECK_OK(kiln_model_load(r, ckw));
    CHECK_OK(kiln_model_load_opts(r, ckw, &(kiln_load_opts){ .resume = true }));
    CHECK(kiln_model_load_opts(r, ckw, &(kiln_load_opts){ .resume = true, .strict = true }) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(), "no optimizer state"), "%s", kiln_last_error());
    CHECK(kiln_model_load_opts(r, cks, &(kiln_load_opts){ .resume = true, .strict = true }) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(), "holds sgd optimizer state but the model uses adam"), "%s", kiln_last_error());
    /* a checkpoint read once by the caller: loaded from that copy */
    kiln_safetensors *f = NULL;
    CHECK_OK(kiln_safetensors_load(ck1, &f));
    CHECK_OK(kiln_model_load_opts(r, "(in memory)", &(kiln_load_opts){ .file = f }));
    /* corrupt kiln.epoch: -3, garbage and out of range are errors (atoi took them) */
    const char *bad_epochs[] = { "-3", "x", "99999999999", "" };
    for (int i = 0; i < 4 && f; i++) {
        int k = kiln_safetensors_count(f);
        kiln_named_tensor *nt = calloc((size_t)k, sizeof *nt);
        for (int j = 0; j < k; j++) { nt[j].name = kiln_safetensors_name(f, j); nt[j].tensor = kiln_safetensors_tensor(f, j); }
        const char *keys[] = { "kiln.model", "kiln.epoch", "kiln.optimizer_tensors" },
                   *vals[] = { "tiny", bad_epochs[i], kiln_safetensors_meta(f, "kiln.optimizer_tensors") };
        char bad[400];
        snprintf(bad, sizeof bad, "%s/bad_epoch.safetensors", dir);
        CHECK_OK(kiln_safetensors_save(bad, nt, k, keys, vals, 3));
        CHECK_MSG(kiln_model_load(r, bad) == KILN_IO_ERROR && strstr(kiln_last_error(), "kiln.epoch"), "kiln.epoch '%s' accepted", bad_epochs[i]);
        CHECK(kiln_model_epoch(r) == 1);         /* unchanged */
        free(nt);
        unlink(bad);
    }
    kiln_safetensors_free(f);
    kiln_model_free(r);
    kiln_model_free(m);
    unlink(csv); unlink(ck1); unlink(ckw); unlink(cks);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/kiln_test_resume_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
    kiln_dataset *train = separable(128, 11);
    test_checkpoint_path();
    if (train) {
        test_row_before_checkpoint(train);
        test_resume(train);
    }
    kiln_dataset_free(train);
    rmdir(dir);
    return check_summary("test_resume");
}
