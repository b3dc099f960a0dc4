/* CIFAR-10 / CIFAR-100 binary batches.
 * CIFAR-10 record: 1 label byte (0..9) + 3072 pixel bytes; CIFAR-100 record: coarse label
 * (0..19), fine label (0..99), 3072 pixel bytes. Pixels are three 32x32 planes (R, G, B), rows
 * top to bottom. Kept in memory as raw CHW u8; examples are produced as HWC f32 in [0, 1]. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "core/core.h"
#include "io/read_file.h"
#include "data/pipeline_internal.h"

typedef struct cifar_impl {
    uint8_t *pixels;   /* [n, 3072] CHW */
    int32_t *labels;
} cifar_impl;

static size_t record_size(int variant) { return variant == 100 ? 3074 : 3073; }

kiln_status kiln_cifar_parse(const char *name, const uint8_t *buf, size_t n, int variant, bool coarse,
                             uint8_t *pixels, int32_t *labels, int64_t *count) {
    size_t rec = record_size(variant);
    if (count) *count = 0;
    if (n == 0)
        return kiln_set_error(KILN_IO_ERROR, "%s: empty file; a CIFAR-%d batch holds records of %zu bytes", name, variant, rec);
    if (n % rec != 0)
        return kiln_set_error(KILN_IO_ERROR, "%s: truncated or not a CIFAR-%d batch: %zu bytes is not a multiple of the "
                              "%zu-byte record (%s + 3072 pixels); record %zu at offset %zu is incomplete (%zu of %zu "
                              "bytes)", name, variant, n, rec, variant == 100 ? "coarse + fine label" : "1 label byte",
                              n / rec, n / rec * rec, n % rec, rec);
    size_t nrec = n / rec;
    for (size_t i = 0; i < nrec; i++) {
        const uint8_t *r = buf + i * rec;
        int label;
        if (variant == 100) {
            if (r[0] >= 20)
                return kiln_set_error(KILN_IO_ERROR, "%s: record %zu (offset %zu): coarse label %u is out of range "
                                      "0..19 (not a CIFAR-100 file?)", name, i, i * rec, r[0]);
            if (r[1] >= 100)
                return kiln_set_error(KILN_IO_ERROR, "%s: record %zu (offset %zu): fine label %u is out of range 0..99 "
                                      "(not a CIFAR-100 file?)", name, i, i * rec + 1, r[1]);
            label = coarse ? r[0] : r[1];
        } else {
            if (r[0] >= 10)
                return kiln_set_error(KILN_IO_ERROR, "%s: record %zu (offset %zu): label %u is out of range 0..9 "
                                      "(not a CIFAR-10 file?)", name, i, i * rec, r[0]);
            label = r[0];
        }
        if (pixels) memcpy(pixels + i * KILN_CIFAR_PIXELS, r + rec - KILN_CIFAR_PIXELS, KILN_CIFAR_PIXELS);
        if (labels) labels[i] = label;
    }
    if (count) *count = (int64_t)nrec;
    return KILN_OK;
}

static kiln_status cifar_get(const kiln_source *s, int64_t i, float *x, int32_t *label) {
    const cifar_impl *c = s->impl;
    const uint8_t *p = c->pixels + (size_t)i * KILN_CIFAR_PIXELS;
    const float k = 1.0f / 255.0f;
    for (int px = 0; px < 1024; px++) {
        x[3 * px + 0] = p[px] * k;
        x[3 * px + 1] = p[1024 + px] * k;
        x[3 * px + 2] = p[2048 + px] * k;
    }
    *label = c->labels[i];
    return KILN_OK;
}

static void cifar_destroy(kiln_source *s) {
    cifar_impl *c = s->impl;
    if (!c) return;
    kiln_free(c->pixels);
    kiln_free(c->labels);
    kiln_free(c);
}

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Picks dir or dir/sub as the folder holding `probe`. */
static const char *pick_dir(const char *dir, const char *sub, const char *probe, char *buf, size_t n) {
    snprintf(buf, n, "%s/%s", dir, probe);
    if (is_file(buf)) return dir;
    snprintf(buf, n, "%s/%s/%s", dir, sub, probe);
    if (is_file(buf)) {
        snprintf(buf, n, "%s/%s", dir, sub);
        return buf;
    }
    return dir;
}

/* Through the shared non-blocking open: a FIFO or a device is refused, not waited on. */
kiln_status kiln_read_whole_file(const char *path, uint8_t **out, size_t *n) { return kiln_file_read_all(path, NULL, 0, out, n); }

static kiln_status cifar_load(const char *dir, int variant, bool train, bool coarse, kiln_data **out) {
    if (out) *out = NULL;
    if (!dir || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "cifar: dir and out must not be NULL");
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return kiln_set_error(KILN_NOT_FOUND, "cifar%d: dataset directory %s not found; download the binary version "
                              "from https://www.cs.toronto.edu/~kriz/cifar.html and extract it there", variant, dir);
    const char *names10[] = { "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                              "data_batch_5.bin" };
    const char *test10[] = { "test_batch.bin" }, *train100[] = { "train.bin" }, *test100[] = { "test.bin" };
    const char **names = variant == 10 ? (train ? names10 : test10) : (train ? train100 : test100);
    int nfiles = variant == 10 && train ? 5 : 1;
    char dbuf[4096];
    const char *base = pick_dir(dir, variant == 10 ? "cifar-10-batches-bin" : "cifar-100-binary", names[0], dbuf, sizeof dbuf);
    char base_copy[4096];
    snprintf(base_copy, sizeof base_copy, "%s", base);

    size_t rec = record_size(variant);
    int64_t total = 0;
    char path[4200];
    for (int f = 0; f < nfiles; f++) {   /* sizes first: errors before any big allocation */
        snprintf(path, sizeof path, "%s/%s", base_copy, names[f]);
        if (stat(path, &st) != 0)
            return kiln_set_error(KILN_NOT_FOUND, "cifar%d: %s not found (%s needs %s%s)", variant, path,
                                  train ? "the training split" : "the test split", names[0],
                                  nfiles > 1 ? " .. data_batch_5.bin" : "");
        if (!S_ISREG(st.st_mode)) return kiln_set_error(KILN_IO_ERROR, "%s: not a regular file", path);
        size_t sz = (size_t)st.st_size;
        if (sz == 0 || sz % rec != 0) return kiln_cifar_parse(path, NULL, sz, variant, coarse, NULL, NULL, NULL);
        total += (int64_t)(sz / rec);
    }
    cifar_impl *c = kiln_calloc(1, sizeof *c);
    if (c) {
        c->pixels = kiln_malloc((size_t)total * KILN_CIFAR_PIXELS);
        c->labels = kiln_malloc((size_t)total * sizeof(int32_t));
    }
    if (!c || !c->pixels || !c->labels) {
        if (c) { kiln_free(c->pixels); kiln_free(c->labels); kiln_free(c); }
        return kiln_set_error(KILN_OUT_OF_MEMORY, "cifar%d: out of memory for %lld images", variant, (long long)total);
    }
    int64_t at = 0;
    for (int f = 0; f < nfiles; f++) {
        snprintf(path, sizeof path, "%s/%s", base_copy, names[f]);
        uint8_t *buf;
        size_t n;
        kiln_status s = kiln_read_whole_file(path, &buf, &n);
        int64_t cnt = 0;
        if (s == KILN_OK) {
            if (at + (int64_t)(n / rec) > total)
                s = kiln_set_error(KILN_IO_ERROR, "%s: file grew while loading", path);
            else
                s = kiln_cifar_parse(path, buf, n, variant, coarse, c->pixels + (size_t)at * KILN_CIFAR_PIXELS,
                                     c->labels + at, &cnt);
            kiln_free(buf);
        }
        if (s != KILN_OK) {
            kiln_free(c->pixels); kiln_free(c->labels); kiln_free(c);
            return s;
        }
        at += cnt;
    }
    kiln_source *src = kiln_source_new();
    if (!src) { kiln_free(c->pixels); kiln_free(c->labels); kiln_free(c); return KILN_OUT_OF_MEMORY; }
    src->shape = KILN_SHAPE(32, 32, 3);
    src->n = at;
    src->num_classes = variant == 10 ? 10 : (coarse ? 20 : 100);
    src->get = cifar_get;
    src->destroy = cifar_destroy;
    src->impl = c;
    *out = kiln_data_from_source(src);
    return *out ? KILN_OK : KILN_OUT_OF_MEMORY;
}

kiln_status kiln_data_from_cifar10(const char *dir, bool train, kiln_data **out) {
    return cifar_load(dir, 10, train, false, out);
}

kiln_status kiln_data_from_cifar100(const char *dir, bool train, bool coarse, kiln_data **out) {
    return cifar_load(dir, 100, train, coarse, out);
}

kiln_status kiln_cifar10_read_u8(const char *path, kiln_tensor **x, kiln_tensor **y) {
    if (!x || !y) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_cifar10_read_u8: x and y must not be NULL");
    *x = *y = NULL;
    uint8_t *buf = NULL;
    size_t n = 0;
    int64_t count = 0;
    kiln_status st = kiln_read_whole_file(path, &buf, &n);
    if (!st) st = kiln_cifar_parse(path, buf, n, 10, false, NULL, NULL, &count);
    uint8_t *chw = NULL;
    int32_t *lab = NULL;
    if (!st && (!(chw = kiln_malloc((size_t)count * KILN_CIFAR_PIXELS)) || !(lab = kiln_malloc((size_t)count * sizeof *lab))))
        st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", path);
    if (!st) st = kiln_cifar_parse(path, buf, n, 10, false, chw, lab, &count);
    if (!st && (!(*x = kiln_tensor_new(KILN_U8, KILN_SHAPE(count, 32, 32, 3))) || !(*y = kiln_tensor_new(KILN_U8, KILN_SHAPE(count)))))
        st = KILN_OUT_OF_MEMORY;
    for (int64_t i = 0; !st && i < count; i++) {          /* CHW planes -> HWC, as Keras's load_data */
        uint8_t *o = (uint8_t *)(*x)->data + (size_t)i * KILN_CIFAR_PIXELS;
        const uint8_t *p = chw + (size_t)i * KILN_CIFAR_PIXELS;
        for (int k = 0; k < 1024; k++)
            for (int c = 0; c < 3; c++) o[k * 3 + c] = p[c * 1024 + k];
        ((uint8_t *)(*y)->data)[i] = (uint8_t)lab[i];
    }
    kiln_free(buf);
    kiln_free(chw);
    kiln_free(lab);
    if (st) { kiln_tensor_free(*x); kiln_tensor_free(*y); *x = *y = NULL; }
    return st;
}
