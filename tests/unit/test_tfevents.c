/* TensorBoard event files (src/io/tfevents.c) and the TensorBoard callback: CRC-32C against
 * published vectors and a bit-by-bit reference, the TFRecord framing, the Event protobuf fields
 * decoded back by a small independent reader, and the files kiln_fit writes through
 * kiln_callback_tensorboard compared with the model's history. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/nn.h"
#include "io/tfevents.h"

static char tmpdir[256];

/* bit-at-a-time CRC-32C, the definition */
static uint32_t crc_ref(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}
static uint32_t mask(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static void test_crc(void) {
    /* check value of the CRC-32C catalogue, and RFC 3720 B.4's 32-byte vectors */
    CHECK(kiln_crc32c(0, "123456789", 9) == 0xE3069283u);
    uint8_t b[32];
    memset(b, 0, 32);
    CHECK(kiln_crc32c(0, b, 32) == 0x8A9136AAu);
    memset(b, 0xFF, 32);
    CHECK(kiln_crc32c(0, b, 32) == 0x62A8AB43u);
    for (int i = 0; i < 32; i++) b[i] = (uint8_t)i;
    CHECK(kiln_crc32c(0, b, 32) == 0x46DD794Eu);
    for (int i = 0; i < 32; i++) b[i] = (uint8_t)(31 - i);
    CHECK(kiln_crc32c(0, b, 32) == 0x113FDB5Cu);
    CHECK(kiln_crc32c(0, "", 0) == 0);
    /* continuing a CRC equals one pass; random lengths against the reference */
    uint8_t r[1000];
    for (int i = 0; i < 1000; i++) r[i] = (uint8_t)(i * 7919 >> 3);
    CHECK(kiln_crc32c(kiln_crc32c(0, r, 333), r + 333, 667) == kiln_crc32c(0, r, 1000));
    bool ok = true;
    for (size_t n = 0; n < 1000; n += 37) ok &= kiln_crc32c(0, r, n) == crc_ref(r, n);
    CHECK(ok);
    CHECK(kiln_crc32c_masked("123456789", 9) == mask(0xE3069283u));
}

static void test_frame(void) {
    const uint8_t data[5] = { 'h', 'e', 'l', 'l', 'o' };
    uint8_t rec[21];
    CHECK(kiln_tfrecord_frame(data, 5, rec) == 21);
    CHECK(rd64(rec) == 5);
    CHECK(rd32(rec + 8) == mask(crc_ref(rec, 8)));
    CHECK(!memcmp(rec + 12, "hello", 5));
    CHECK(rd32(rec + 17) == mask(crc_ref(data, 5)));
}

/* ---- a protobuf reader for Event { wall_time, step, file_version, summary { value { tag, simple_value } } } ---- */

typedef struct event { double wall; int64_t step; char version[32]; char tag[64]; float value; bool has_value; } event;

static uint64_t varint(const uint8_t **p, const uint8_t *end) {
    uint64_t v = 0;
    for (int s = 0; *p < end && s < 64; s += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7F) << s;
        if (!(b & 0x80)) break;
    }
    return v;
}

/* Walks fields of [p, end): calls back with (field, wire type, value pointer, length). */
static bool decode(const uint8_t *p, const uint8_t *end, event *e, int depth) {
    while (p < end) {
        uint64_t key = varint(&p, end);
        unsigned field = (unsigned)(key >> 3), wt = (unsigned)(key & 7);
        if (wt == 0) {
            uint64_t v = varint(&p, end);
            if (depth == 0 && field == 2) e->step = (int64_t)v;
        } else if (wt == 1) {
            if (end - p < 8) return false;
            uint64_t v = rd64(p);
            if (depth == 0 && field == 1) memcpy(&e->wall, &v, 8);
            p += 8;
        } else if (wt == 5) {
            if (end - p < 4) return false;
            uint32_t v = rd32(p);
            if (depth == 2 && field == 2) { memcpy(&e->value, &v, 4); e->has_value = true; }
            p += 4;
        } else if (wt == 2) {
            uint64_t len = varint(&p, end);
            if ((uint64_t)(end - p) < len) return false;
            if (depth == 0 && field == 3) snprintf(e->version, sizeof e->version, "%.*s", (int)len, p);
            else if (depth == 0 && field == 5) { if (!decode(p, p + len, e, 1)) return false; }   /* summary */
            else if (depth == 1 && field == 1) { if (!decode(p, p + len, e, 2)) return false; }   /* value */
            else if (depth == 2 && field == 1) snprintf(e->tag, sizeof e->tag, "%.*s", (int)len, p);
            p += len;
        } else return false;
    }
    return true;
}

/* Reads every record of an event file, checking both CRCs; returns the count (-1: bad file). */
static int read_events(const char *path, event *ev, int max) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    int k = 0;
    for (size_t at = 0; at < n;) {
        if (n - at < 12 || k == max) return -1;
        uint64_t len = rd64(buf + at);
        if (rd32(buf + at + 8) != mask(crc_ref(buf + at, 8)) || n - at - 12 < len + 4) return -1;
        if (rd32(buf + at + 12 + len) != mask(crc_ref(buf + at + 12, len))) return -1;
        memset(&ev[k], 0, sizeof ev[k]);
        if (!decode(buf + at + 12, buf + at + 12 + len, &ev[k], 0)) return -1;
        k++;
        at += 12 + len + 4;
    }
    return k;
}

/* The one event file in dir. */
static bool event_file(const char *dir, char *out, size_t n) {
    DIR *d = opendir(dir);
    if (!d) return false;
    struct dirent *de;
    int found = 0;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "events.out.tfevents.", 20) && strstr(de->d_name, ".v2")) { snprintf(out, n, "%s/%s", dir, de->d_name); found++; }
    closedir(d);
    return found == 1;
}

static void test_writer(void) {
    char dir[400], path[800];
    snprintf(dir, sizeof dir, "%s/nested/run", tmpdir);
    kiln_tfevents *w = NULL;
    CHECK_OK(kiln_tfevents_open(dir, &w));
    if (!w) return;
    CHECK_OK(kiln_tfevents_scalar(w, "epoch_loss", 0.75, 0));
    CHECK_OK(kiln_tfevents_scalar(w, "epoch_loss", 0.5, 1));
    CHECK_OK(kiln_tfevents_scalar(w, "a/longer_tag", -3.25, 123456789012LL));
    snprintf(path, sizeof path, "%s", kiln_tfevents_path(w));
    kiln_tfevents_close(w);
    CHECK(strstr(path, "/nested/run/events.out.tfevents.") != NULL);
    event ev[8];
    int n = read_events(path, ev, 8);
    CHECK_MSG(n == 4, "%d events", n);
    if (n == 4) {
        CHECK(!strcmp(ev[0].version, "brain.Event:2") && ev[0].step == 0 && ev[0].wall > 1.6e9);
        CHECK(!strcmp(ev[1].tag, "epoch_loss") && ev[1].value == 0.75f && ev[1].step == 0);
        CHECK(!strcmp(ev[2].tag, "epoch_loss") && ev[2].value == 0.5f && ev[2].step == 1);
        CHECK(!strcmp(ev[3].tag, "a/longer_tag") && ev[3].value == -3.25f && ev[3].step == 123456789012LL);
        CHECK(ev[3].wall >= ev[0].wall);
    }
    /* a second writer in the same directory makes its own file */
    CHECK_OK(kiln_tfevents_open(dir, &w));
    if (w) CHECK(strcmp(kiln_tfevents_path(w), path) != 0);
    kiln_tfevents_close(w);
    /* a log directory under a regular file: an error naming it */
    char file[400], bad[500];
    snprintf(file, sizeof file, "%s/plain_file", tmpdir);
    FILE *f = fopen(file, "w");
    if (f) fclose(f);
    snprintf(bad, sizeof bad, "%s/logs", file);
    kiln_status st = kiln_tfevents_open(bad, &w);
    CHECK_MSG(st == KILN_IO_ERROR && !w && strstr(kiln_last_error(), "plain_file"), "%s", kiln_last_error());
}

/* kiln_fit with the callback: the files hold the history's values. */
static void test_callback(void) {
    kiln_dataset *train = separable(256, 3), *val = separable(64, 4);
    kiln_model *m = kiln_sequential("tb", KILN_SHAPE(8));
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-2), .from_logits = true, .metrics = KILN_METRIC_ACCURACY,
                                                     .device = "cpu", .num_threads = 1 }));
    char dir[400], sub[500], path[800];
    snprintf(dir, sizeof dir, "%s/tb", tmpdir);
    kiln_callback cb = kiln_callback_tensorboard(dir, 3);
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 3, .batch_size = 32, .validation = val, .callbacks = &cb, .n_callbacks = 1 }));
    int nh = 0;
    const kiln_logs *h = kiln_model_history(m, &nh);
    CHECK(nh == 3);
    event ev[64];
    snprintf(sub, sizeof sub, "%s/train", dir);
    CHECK(event_file(sub, path, sizeof path));
    int n = read_events(path, ev, 64);
    /* 8 batches per epoch, 24 in all: batch events at 3, 6, ..., 24 (8 x 3 tags), epochs 3 x 3 tags */
    CHECK_MSG(n == 1 + 8 * 3 + 3 * 3, "%d train events", n);
    int epochs_seen = 0, batches_seen = 0;
    for (int i = 1; i < n; i++) {
        if (!strcmp(ev[i].tag, "epoch_loss")) {
            int e = (int)ev[i].step;
            CHECK(e >= 0 && e < nh && fabs(ev[i].value - h[e].loss) <= 1e-6 * fabs(h[e].loss) + 1e-7);
            epochs_seen++;
        } else if (!strcmp(ev[i].tag, "epoch_accuracy")) {
            CHECK(ev[i].step < nh && fabsf(ev[i].value - (float)h[ev[i].step].accuracy) == 0);
        } else if (!strcmp(ev[i].tag, "epoch_learning_rate")) {
            CHECK_NEAR(ev[i].value, 1e-2, 1e-9);
        } else if (!strcmp(ev[i].tag, "batch_loss")) {
            CHECK(ev[i].step % 3 == 0 && ev[i].step >= 3 && ev[i].step <= 24);
            batches_seen++;
        } else CHECK_MSG(!strcmp(ev[i].tag, "batch_accuracy") || !strcmp(ev[i].tag, "batch_learning_rate"), "tag %s", ev[i].tag);
    }
    CHECK(epochs_seen == 3 && batches_seen == 8);
    snprintf(sub, sizeof sub, "%s/validation", dir);
    CHECK(event_file(sub, path, sizeof path));
    n = read_events(path, ev, 64);
    CHECK_MSG(n == 1 + 3 * 2, "%d validation events", n);
    for (int i = 1; i < n; i++) {
        int e = (int)ev[i].step;
        if (!strcmp(ev[i].tag, "epoch_loss")) CHECK(e < nh && ev[i].value == (float)h[e].val_loss);
        else CHECK(!strcmp(ev[i].tag, "epoch_accuracy") && e < nh && ev[i].value == (float)h[e].val_accuracy);
    }
    /* an unwritable log directory fails before training */
    kiln_model_reset_history(m);
    char bad[500];
    snprintf(bad, sizeof bad, "%s/plain_file/tb", tmpdir);
    cb = kiln_callback_tensorboard(bad, 0);
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 32, .callbacks = &cb, .n_callbacks = 1 });
    CHECK_MSG(st == KILN_IO_ERROR && strstr(kiln_last_error(), "plain_file"), "%s", kiln_last_error());
    kiln_model_history(m, &nh);
    CHECK(nh == 0);
    kiln_model_free(m);
    kiln_dataset_free(train);
    kiln_dataset_free(val);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kiln_tfevents_XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 2; }
    test_crc();
    test_frame();
    test_writer();
    test_callback();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_summary("test_tfevents");
}
