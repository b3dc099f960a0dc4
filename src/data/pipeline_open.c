/* Pipeline sources over in-memory datasets (borrowed or owned: MNIST IDX, synthetic) and the
 * data spec parser used by the CLI (kiln_data_open; npz and CSV files are read by npz.c / csv.c). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "core/core.h"
#include "data/pipeline_internal.h"

typedef struct ds_impl {
    const kiln_dataset *d;
    kiln_dataset *owned;
    int64_t row;   /* floats per example */
    int64_t lrow;  /* labels per example */
} ds_impl;

static kiln_status ds_get(const kiln_source *s, int64_t i, float *x, int32_t *label) {
    const ds_impl *im = s->impl;
    const kiln_tensor *tx = kiln_dataset_x(im->d), *ty = kiln_dataset_y(im->d);
    memcpy(x, (const float *)tx->data + (size_t)i * (size_t)im->row, sizeof(float) * (size_t)im->row);
    if (ty) memcpy(label, (const int32_t *)ty->data + (size_t)i * (size_t)im->lrow, sizeof(int32_t) * (size_t)im->lrow);
    else *label = -1;
    return KILN_OK;
}

static void ds_destroy(kiln_source *s) {
    ds_impl *im = s->impl;
    if (!im) return;
    kiln_dataset_free(im->owned);
    kiln_free(im);
}

/* Source over d; takes `owned` (== d or NULL) and frees it on failure. */
static kiln_data *ds_source(const kiln_dataset *d, kiln_dataset *owned) {
    kiln_shape es = kiln_dataset_example_shape(d);
    if (es.rank > KILN_MAX_DIMS - 1) {
        kiln_dataset_free(owned);
        kiln_set_error(KILN_SHAPE_MISMATCH, "data: examples of rank %d are too many dimensions (at most %d)", es.rank,
                       KILN_MAX_DIMS - 1);
        return NULL;
    }
    ds_impl *im = kiln_calloc(1, sizeof *im);
    kiln_source *s = kiln_source_new();
    if (!im || !s) {
        kiln_free(im);
        kiln_free(s);
        kiln_dataset_free(owned);
        kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory");
        return NULL;
    }
    im->d = d;
    im->owned = owned;
    im->row = kiln_shape_numel(es);
    s->shape = es;
    s->n = kiln_dataset_size(d);
    s->num_classes = kiln_dataset_num_classes(d);
    const kiln_tensor *ty = kiln_dataset_y(d);
    if (ty && ty->shape.rank > 1) {       /* several labels per example, e.g. [T] next-token ids */
        s->label_shape.rank = ty->shape.rank - 1;
        for (int i = 1; i < ty->shape.rank; i++) s->label_shape.dim[i - 1] = ty->shape.dim[i];
    }
    im->lrow = kiln_source_label_numel(s);
    s->get = ds_get;
    s->destroy = ds_destroy;
    s->impl = im;
    return kiln_data_from_source(s);
}

kiln_data *kiln_data_from_dataset(const kiln_dataset *d, bool copy) {
    if (!d) { kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_from_dataset: dataset is NULL"); return NULL; }
    if (!copy) return ds_source(d, NULL);
    kiln_dataset *c = kiln_dataset_from_tensors(kiln_dataset_x(d), kiln_dataset_y(d), kiln_dataset_num_classes(d));
    if (!c) return NULL;
    return ds_source(c, c);
}

kiln_status kiln_data_from_mnist(const char *dir, bool train, kiln_data **out) {
    if (out) *out = NULL;
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_from_mnist: out must not be NULL");
    kiln_dataset *ds = NULL;
    kiln_status st = kiln_mnist_load(dir, train ? &ds : NULL, train ? NULL : &ds);
    if (st != KILN_OK) return st;
    *out = ds_source(ds, ds);
    return *out ? KILN_OK : KILN_OUT_OF_MEMORY;
}

/* ---- spec parsing ---- */

static bool file_exists(const char *dir, const char *sub, const char *name) {
    char p[4352];
    if (sub) snprintf(p, sizeof p, "%s/%s/%s", dir, sub, name);
    else snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool any_file(const char *dir, const char *sub, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (file_exists(dir, sub, names[i])) return true;
    return false;
}

static bool has_class_folders(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return false;
    struct dirent *de;
    bool found = false;
    char p[4352];
    while (!found && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) found = true;
    }
    closedir(d);
    return found;
}

static kiln_status open_synthetic(const char *arg, bool train, kiln_data **out) {
    long long h = 28, w = 28, c = 1, n = train ? 2048 : 512;
    if (arg && *arg) {
        char *end;
        h = strtoll(arg, &end, 10);
        if (*end != 'x') goto bad;
        w = strtoll(end + 1, &end, 10);
        if (*end != 'x') goto bad;
        c = strtoll(end + 1, &end, 10);
        if (*end == ':') {
            n = strtoll(end + 1, &end, 10);
            if (!train) n = n / 4 > 0 ? n / 4 : 1;
        }
        if (*end) goto bad;
        if (h < 1 || w < 1 || c < 1 || n < 1 || h > 4096 || w > 4096 || c > 64 || n > ((long long)1 << 31) ||
            h * w * c > ((long long)1 << 24) || h * w * c * n > ((long long)1 << 33))
            goto bad;
    }
    kiln_dataset *ds = kiln_dataset_synthetic(KILN_SHAPE(h, w, c), 10, n, train ? 1 : 2);
    if (!ds) return kiln_set_error(KILN_OUT_OF_MEMORY, "data: synthetic: out of memory for %lld examples", n);
    *out = ds_source(ds, ds);
    return *out ? KILN_OK : KILN_OUT_OF_MEMORY;
bad:
    return kiln_set_error(KILN_INVALID_ARGUMENT, "data: bad spec 'synthetic:%s': expected synthetic:HxWxC[:N] "
                          "(e.g. synthetic:32x32x3:50000; sizes 1..4096, channels 1..64)", arg);
}

kiln_status kiln_data_open(const char *spec, bool train, kiln_data **out) {
    if (out) *out = NULL;
    if (!spec || !*spec || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_open: spec and out must be given");
    static const struct { const char *prefix; int kind; } pre[] = {
        { "cifar10:", 10 }, { "cifar100:", 100 }, { "cifar100-coarse:", 101 }, { "mnist:", 1 },
        { "fashion-mnist:", 1 }, { "idx:", 1 }, { "images:", 2 }, { "npz:", 3 }, { "csv:", 4 },
    };
    if (!strcmp(spec, "synthetic")) return open_synthetic(NULL, train, out);
    if (!strncmp(spec, "synthetic:", 10)) return open_synthetic(spec + 10, train, out);
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
        size_t l = strlen(pre[i].prefix);
        if (strncmp(spec, pre[i].prefix, l)) continue;
        const char *dir = spec + l;
        if (!*dir && pre[i].kind != 1)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "data: spec '%s' needs %s after the colon", spec, pre[i].kind >= 3 ? "a file" : "a directory");
        switch (pre[i].kind) {
        case 10: return kiln_data_from_cifar10(dir, train, out);
        case 100: return kiln_data_from_cifar100(dir, train, false, out);
        case 101: return kiln_data_from_cifar100(dir, train, true, out);
        case 1: return kiln_data_from_mnist(dir, train, out);
        case 3: return kiln_data_from_npz(dir, train, out);
        case 4:
            if (train) return kiln_data_from_csv(dir, NULL, out);
            return kiln_set_error(KILN_NOT_FOUND, "%s: a CSV file holds one split (no test split): give the test rows as another "
                                  "file, or hold part of the training rows out", dir);
        default: return kiln_data_from_images(dir, out);
        }
    }
    const char *colon = strchr(spec, ':');
    struct stat st;
    if (colon && stat(spec, &st) != 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "data: unknown data spec '%s': use cifar10:DIR, cifar100:DIR, "
                              "cifar100-coarse:DIR, mnist:DIR, images:DIR, npz:FILE.npz, csv:FILE.csv, synthetic[:HxWxC[:N]] or "
                              "a directory", spec);
    if (stat(spec, &st) != 0)
        return kiln_set_error(KILN_NOT_FOUND, "data: %s: %s (expected a data set directory or a spec like cifar10:DIR)",
                              spec, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return kiln_set_error(KILN_NOT_FOUND, "data: %s is not a directory", spec);
    static const char *const c10[] = { "data_batch_1.bin", "test_batch.bin" };
    static const char *const c100[] = { "train.bin", "test.bin" };
    static const char *const idx[] = { "train-images-idx3-ubyte", "train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte",
                                       "t10k-images-idx3-ubyte.gz" };
    if (any_file(spec, NULL, c10, 2) || any_file(spec, "cifar-10-batches-bin", c10, 2))
        return kiln_data_from_cifar10(spec, train, out);
    if (any_file(spec, NULL, c100, 2) || any_file(spec, "cifar-100-binary", c100, 2))
        return kiln_data_from_cifar100(spec, train, false, out);
    if (any_file(spec, NULL, idx, 4)) return kiln_data_from_mnist(spec, train, out);
    if (has_class_folders(spec)) return kiln_data_from_images(spec, out);
    return kiln_set_error(KILN_NOT_FOUND, "data: cannot recognise the data set in %s: expected CIFAR-10 batches "
                          "(data_batch_1.bin .. test_batch.bin), CIFAR-100 train.bin / test.bin, MNIST IDX files "
                          "(train-images-idx3-ubyte[.gz] ...) or class sub-folders of images", spec);
}
