/* IDX reader, MNIST-layout loader and in-memory datasets. Makes its own small files under a
 * mkdtemp directory; loads the real Fashion-MNIST when /usr/share/datasets/fashion-mnist exists. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include "check.h"
#include "kiln/data.h"

static char tmpdir[256];

static void path_in(char *buf, size_t n, const char *sub, const char *name) {
    if (sub) snprintf(buf, n, "%s/%s/%s", tmpdir, sub, name);
    else snprintf(buf, n, "%s/%s", tmpdir, name);
}

static void be32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)(v >> 24); b[1] = (unsigned char)(v >> 16); b[2] = (unsigned char)(v >> 8); b[3] = (unsigned char)v;
}

/* Writes an IDX file: magic, dims, then `data_len` bytes of data (may differ from the dims' product
 * to make truncated / trailing files). gz: gzip-compressed. */
static void write_idx(const char *path, bool gz, uint32_t magic, const uint32_t *dims, int ndims,
                      const unsigned char *data, size_t data_len) {
    unsigned char hdr[4 + 4 * 8];
    be32(hdr, magic);
    for (int i = 0; i < ndims; i++) be32(hdr + 4 + 4 * i, dims[i]);
    size_t hl = 4 + 4 * (size_t)ndims;
    if (gz) {
        gzFile g = gzopen(path, "wb");
        if (!g) { perror(path); exit(2); }
        gzwrite(g, hdr, (unsigned)hl);
        if (data_len) gzwrite(g, data, (unsigned)data_len);
        gzclose(g);
    } else {
        FILE *f = fopen(path, "wb");
        if (!f) { perror(path); exit(2); }
        fwrite(hdr, 1, hl, f);
        if (data_len) fwrite(data, 1, data_len, f);
        fclose(f);
    }
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    fwrite(p, 1, n, f);
    fclose(f);
}

static bool has(const char *msg, const char *needle) { return strstr(msg, needle) != NULL; }

static void test_idx_read(void) {
    char p[512];
    unsigned char img[3 * 2 * 4];
    for (int i = 0; i < 24; i++) img[i] = (unsigned char)(i * 10);
    uint32_t idims[3] = { 3, 2, 4 };
    kiln_tensor *t = NULL;

    /* raw and gzip give the same tensor */
    for (int gz = 0; gz < 2; gz++) {
        path_in(p, sizeof p, NULL, gz ? "img.idx.gz" : "img.idx");
        write_idx(p, gz, 0x00000803, idims, 3, img, sizeof img);
        CHECK_OK(kiln_idx_read(p, &t));
        if (t) {
            CHECK(t->dtype == KILN_U8);
            CHECK(kiln_shape_equal(t->shape, KILN_SHAPE(3, 2, 4)));
            CHECK(memcmp(t->data, img, sizeof img) == 0);
        }
        kiln_tensor_free(t);
        t = NULL;
    }
    /* labels */
    unsigned char lbl[5] = { 0, 1, 9, 3, 4 };
    uint32_t ldims[1] = { 5 };
    path_in(p, sizeof p, NULL, "lbl.idx");
    write_idx(p, false, 0x00000801, ldims, 1, lbl, 5);
    CHECK_OK(kiln_idx_read(p, &t));
    CHECK(t && t->shape.rank == 1 && t->shape.dim[0] == 5 && ((unsigned char *)t->data)[2] == 9);
    kiln_tensor_free(t);

    /* not an IDX file */
    path_in(p, sizeof p, NULL, "bad_magic.idx");
    write_idx(p, false, 0x12345678, idims, 3, img, sizeof img);
    t = (kiln_tensor *)1;
    kiln_status s = kiln_idx_read(p, &t);
    CHECK(s == KILN_IO_ERROR && t == NULL);
    CHECK_MSG(has(kiln_last_error(), p) && has(kiln_last_error(), "not an IDX file"), "%s", kiln_last_error());

    /* a valid IDX of another element type (f32) is rejected clearly */
    path_in(p, sizeof p, NULL, "f32.idx");
    write_idx(p, false, 0x00000D03, idims, 3, img, sizeof img);
    s = kiln_idx_read(p, &t);
    CHECK(s == KILN_UNSUPPORTED && t == NULL);
    CHECK_MSG(has(kiln_last_error(), p) && has(kiln_last_error(), "f32") && has(kiln_last_error(), "0x00000803"), "%s",
              kiln_last_error());

    /* zero dimension */
    uint32_t zdims[3] = { 3, 0, 4 };
    path_in(p, sizeof p, NULL, "zero.idx");
    write_idx(p, false, 0x00000803, zdims, 3, NULL, 0);
    CHECK(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL);
    CHECK_MSG(has(kiln_last_error(), "dimension 1 is 0"), "%s", kiln_last_error());

    /* overflowing dimensions */
    uint32_t odims[4] = { 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 2 };
    path_in(p, sizeof p, NULL, "overflow.idx");
    write_idx(p, false, 0x00000804, odims, 4, img, 4);
    CHECK(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL);
    CHECK_MSG(has(kiln_last_error(), "overflow"), "%s", kiln_last_error());
    path_in(p, sizeof p, NULL, "overflow.idx.gz");
    write_idx(p, true, 0x00000804, odims, 4, img, 4);
    CHECK(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL);

    /* truncated and trailing, raw and gzip: expected vs actual bytes in the message */
    for (int gz = 0; gz < 2; gz++) {
        path_in(p, sizeof p, NULL, gz ? "trunc.idx.gz" : "trunc.idx");
        write_idx(p, gz, 0x00000803, idims, 3, img, sizeof img - 5);
        CHECK(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL);
        CHECK_MSG(has(kiln_last_error(), p) && has(kiln_last_error(), "truncated") && has(kiln_last_error(), "40 bytes") &&
                  has(kiln_last_error(), "35 bytes"), "%s", kiln_last_error());

        unsigned char big[30] = { 0 };
        memcpy(big, img, sizeof img);
        path_in(p, sizeof p, NULL, gz ? "trail.idx.gz" : "trail.idx");
        write_idx(p, gz, 0x00000803, idims, 3, big, sizeof big);
        CHECK(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL);
        CHECK_MSG(has(kiln_last_error(), p) && has(kiln_last_error(), "trailing") && has(kiln_last_error(), "40 bytes") &&
                  has(kiln_last_error(), "46 bytes"), "%s", kiln_last_error());
    }
    /* header itself truncated; tiny and empty files */
    path_in(p, sizeof p, NULL, "short_hdr.idx");
    write_bytes(p, "\0\0\x08\x03\0\0\0\x03\0\0", 10);
    CHECK(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL);
    CHECK_MSG(has(kiln_last_error(), "truncated IDX header"), "%s", kiln_last_error());
    path_in(p, sizeof p, NULL, "empty.idx");
    write_bytes(p, "", 0);
    CHECK(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL);

    /* a gzip file cut in the middle of the compressed stream */
    {
        unsigned char payload[4000];
        for (int i = 0; i < 4000; i++) payload[i] = (unsigned char)(i * 7 + (i >> 5));
        uint32_t d1[1] = { 4000 };
        char full[512];
        path_in(full, sizeof full, NULL, "cut_src.idx.gz");
        write_idx(full, true, 0x00000801, d1, 1, payload, sizeof payload);
        FILE *f = fopen(full, "rb");
        unsigned char buf[8192];
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        for (size_t cut = 2; cut + 1 < n; cut += n / 7 + 1) {
            path_in(p, sizeof p, NULL, "cut.idx.gz");
            write_bytes(p, buf, cut);
            CHECK_MSG(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL, "cut at %zu of %zu: %s", cut, n, kiln_last_error());
        }
        /* only the gzip trailer (crc + size) missing: all data present but the stream is cut */
        path_in(p, sizeof p, NULL, "cut.idx.gz");
        write_bytes(p, buf, n - 8);
        CHECK_MSG(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL, "%s", kiln_last_error());
        /* issue 16.7: part of the trailer missing (CRC whole, length cut), and trailing garbage
         * after the stream (zlib's gzread ignored it): errors; a second gzip member is fine */
        for (size_t k = 1; k < 8; k += 3) {
            write_bytes(p, buf, n - k);
            CHECK_MSG(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL, "trailer cut by %zu: %s", k, kiln_last_error());
        }
        {
            unsigned char g[8200];
            memcpy(g, buf, n);
            memcpy(g + n, "garbage!", 8);
            write_bytes(p, g, n + 8);
            CHECK_MSG(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL, "trailing garbage accepted");
            CHECK_MSG(has(kiln_last_error(), "8 bytes of trailing garbage"), "%s", kiln_last_error());
            path_in(full, sizeof full, NULL, "two.idx.gz");
            memcpy(g + n, buf, 10);             /* a member header alone: cut */
            write_bytes(full, g, n + 10);
            CHECK(kiln_idx_read(full, &t) == KILN_IO_ERROR && t == NULL);
        }
        write_bytes(p, buf, n);
        {
            gzFile e = gzopen(p, "ab");         /* an empty second member, as `cat a.gz b.gz` makes */
            if (e) { gzwrite(e, "", 0); gzclose(e); }
            FILE *tf = fopen(p, "rb");
            long two = -1;
            if (tf) { fseek(tf, 0, SEEK_END); two = ftell(tf); fclose(tf); }
            CHECK(two > (long)n);
            CHECK_MSG(kiln_idx_read(p, &t) == KILN_OK && t, "two gzip members: %s", kiln_last_error());
            kiln_tensor_free(t);
            t = NULL;
        }
        /* corrupt compressed bytes */
        buf[n / 2] ^= 0x5A;
        buf[n / 2 + 1] ^= 0xA5;
        write_bytes(p, buf, n);
        CHECK_MSG(kiln_idx_read(p, &t) == KILN_IO_ERROR && t == NULL, "%s", kiln_last_error());
    }

    /* missing file */
    path_in(p, sizeof p, NULL, "nope.idx");
    CHECK(kiln_idx_read(p, &t) == KILN_NOT_FOUND && t == NULL);
    CHECK(has(kiln_last_error(), p));
    CHECK(kiln_idx_read(NULL, &t) == KILN_INVALID_ARGUMENT);
}

/* Writes an MNIST-layout set in tmpdir/sub: n_train / n_test examples of h x w. */
static void write_mnist(const char *sub, int n_train, int n_test, int n_train_labels, unsigned bad_label, bool gz_train) {
    char p[512];
    path_in(p, sizeof p, NULL, sub);
    mkdir(p, 0755);
    const struct { const char *name; int n; bool labels; bool gz; } files[4] = {
        { "train-images-idx3-ubyte", n_train, false, gz_train },
        { "train-labels-idx1-ubyte", n_train_labels, true, gz_train },
        { "t10k-images-idx3-ubyte", n_test, false, false },
        { "t10k-labels-idx1-ubyte", n_test, true, true },
    };
    for (int k = 0; k < 4; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s%s", files[k].name, files[k].gz ? ".gz" : "");
        path_in(p, sizeof p, sub, name);
        int n = files[k].n;
        if (files[k].labels) {
            unsigned char *l = malloc((size_t)n);
            for (int i = 0; i < n; i++) l[i] = (unsigned char)(i % 10);
            if (bad_label && k == 1 && n > 2) l[2] = (unsigned char)bad_label;
            uint32_t d[1] = { (uint32_t)n };
            write_idx(p, files[k].gz, 0x00000801, d, 1, l, (size_t)n);
            free(l);
        } else {
            size_t sz = (size_t)n * 4 * 3;
            unsigned char *im = malloc(sz);
            for (size_t i = 0; i < sz; i++) im[i] = (unsigned char)((i * 37) % 256);
            im[0] = 255;
            uint32_t d[3] = { (uint32_t)n, 4, 3 };
            write_idx(p, files[k].gz, 0x00000803, d, 3, im, sz);
            free(im);
        }
    }
}

static void test_mnist_load(void) {
    kiln_dataset *tr = NULL, *te = NULL;
    write_mnist("good", 20, 7, 20, 0, true);
    char dir[512];
    path_in(dir, sizeof dir, NULL, "good");
    CHECK_OK(kiln_mnist_load(dir, &tr, &te));
    if (tr && te) {
        CHECK(kiln_dataset_size(tr) == 20 && kiln_dataset_size(te) == 7);
        CHECK(kiln_shape_equal(kiln_dataset_example_shape(tr), KILN_SHAPE(4, 3, 1)));
        CHECK(kiln_shape_equal(kiln_dataset_x(tr)->shape, KILN_SHAPE(20, 4, 3, 1)));
        CHECK(kiln_dataset_x(tr)->dtype == KILN_F32 && kiln_dataset_y(tr)->dtype == KILN_I32);
        CHECK(kiln_dataset_num_classes(tr) == 10);
        const float *x = kiln_dataset_x(tr)->data;
        CHECK(x[0] == 1.0f);
        CHECK_NEAR(x[1], 37.0 / 255.0, 1e-7);
        const int32_t *y = kiln_dataset_y(te)->data;
        CHECK(y[0] == 0 && y[6] == 6);
    }
    kiln_dataset_free(tr);
    kiln_dataset_free(te);

    /* one side only */
    tr = NULL;
    CHECK_OK(kiln_mnist_load(dir, NULL, &te));
    CHECK(te && kiln_dataset_size(te) == 7);
    kiln_dataset_free(te);

    /* mismatched counts */
    write_mnist("mismatch", 20, 7, 19, 0, false);
    path_in(dir, sizeof dir, NULL, "mismatch");
    kiln_status s = kiln_mnist_load(dir, &tr, &te);
    CHECK(s == KILN_IO_ERROR && tr == NULL && te == NULL);
    CHECK_MSG(has(kiln_last_error(), "20 images") && has(kiln_last_error(), "19 labels"), "%s", kiln_last_error());

    /* label >= 10 */
    write_mnist("badlabel", 20, 7, 20, 10, false);
    path_in(dir, sizeof dir, NULL, "badlabel");
    s = kiln_mnist_load(dir, &tr, &te);
    CHECK(s == KILN_IO_ERROR && tr == NULL && te == NULL);
    CHECK_MSG(has(kiln_last_error(), "label 10") && has(kiln_last_error(), "train-labels-idx1-ubyte"), "%s",
              kiln_last_error());

    /* missing directory: message names it and says how to install the data */
    path_in(dir, sizeof dir, NULL, "no-such-dir");
    s = kiln_mnist_load(dir, &tr, &te);
    CHECK(s == KILN_NOT_FOUND && tr == NULL && te == NULL);
    CHECK_MSG(has(kiln_last_error(), dir) &&
              has(kiln_last_error(), "sudo apt-get install dataset-fashion-mnist") &&
              has(kiln_last_error(), "/usr/share/datasets/fashion-mnist"), "%s", kiln_last_error());

    /* missing file in an existing directory */
    char p[512];
    path_in(p, sizeof p, "mismatch", "t10k-labels-idx1-ubyte.gz");
    unlink(p);
    path_in(dir, sizeof dir, NULL, "mismatch");
    s = kiln_mnist_load(dir, NULL, &te);
    CHECK(s == KILN_NOT_FOUND && te == NULL);
    CHECK_MSG(has(kiln_last_error(), "t10k-labels-idx1-ubyte") && has(kiln_last_error(), dir) &&
              has(kiln_last_error(), "apt-get install dataset-fashion-mnist"), "%s", kiln_last_error());
}

static void test_real_fashion_mnist(void) {
    const char *dir = "/usr/share/datasets/fashion-mnist";
    struct stat st;
    if (stat(dir, &st) != 0) {
        printf("test_data: note: %s absent, skipping the real Fashion-MNIST check "
               "(sudo apt-get install dataset-fashion-mnist)\n", dir);
        return;
    }
    kiln_dataset *tr = NULL, *te = NULL;
    CHECK_OK(kiln_mnist_load(dir, &tr, &te));
    if (tr && te) {
        CHECK(kiln_dataset_size(tr) == 60000);
        CHECK(kiln_dataset_size(te) == 10000);
        CHECK(kiln_shape_equal(kiln_dataset_x(tr)->shape, KILN_SHAPE(60000, 28, 28, 1)));
        CHECK(kiln_shape_equal(kiln_dataset_x(te)->shape, KILN_SHAPE(10000, 28, 28, 1)));
        CHECK(kiln_shape_equal(kiln_dataset_y(tr)->shape, KILN_SHAPE(60000)));
        CHECK(kiln_dataset_num_classes(tr) == 10);
        /* Fashion-MNIST is balanced: 6000 / 1000 per class */
        int64_t cnt_tr[10] = { 0 }, cnt_te[10] = { 0 };
        const int32_t *y = kiln_dataset_y(tr)->data;
        for (int i = 0; i < 60000; i++) cnt_tr[y[i]]++;
        y = kiln_dataset_y(te)->data;
        for (int i = 0; i < 10000; i++) cnt_te[y[i]]++;
        bool balanced = true;
        for (int c = 0; c < 10; c++) balanced = balanced && cnt_tr[c] == 6000 && cnt_te[c] == 1000;
        CHECK(balanced);
        const float *x = kiln_dataset_x(tr)->data;
        float lo = 1, hi = 0;
        double sum = 0;
        for (int64_t i = 0; i < 60000LL * 784; i++) { lo = x[i] < lo ? x[i] : lo; hi = x[i] > hi ? x[i] : hi; sum += x[i]; }
        CHECK(lo == 0.0f && hi == 1.0f);
        CHECK_NEAR(sum / (60000.0 * 784), 0.2860, 0.001);   /* the well-known Fashion-MNIST mean */
    }
    kiln_dataset_free(tr);
    kiln_dataset_free(te);
}

static bool is_perm(const int64_t *o, int64_t n) {
    char *seen = calloc((size_t)n + 1, 1);
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        if (o[i] < 0 || o[i] >= n || seen[o[i]]) { ok = false; break; }
        seen[o[i]] = 1;
    }
    free(seen);
    return ok;
}

static void test_datasets(void) {
    /* synthetic: seeded, in range */
    kiln_dataset *a = kiln_dataset_synthetic(KILN_SHAPE(2, 3), 4, 50, 7);
    kiln_dataset *b = kiln_dataset_synthetic(KILN_SHAPE(2, 3), 4, 50, 7);
    kiln_dataset *c = kiln_dataset_synthetic(KILN_SHAPE(2, 3), 4, 50, 8);
    CHECK(a && b && c);
    if (!a || !b || !c) return;
    CHECK(kiln_dataset_size(a) == 50 && kiln_dataset_num_classes(a) == 4);
    CHECK(kiln_shape_equal(kiln_dataset_example_shape(a), KILN_SHAPE(2, 3)));
    CHECK(kiln_shape_equal(kiln_dataset_x(a)->shape, KILN_SHAPE(50, 2, 3)));
    CHECK(memcmp(kiln_dataset_x(a)->data, kiln_dataset_x(b)->data, 50 * 6 * 4) == 0);
    CHECK(memcmp(kiln_dataset_y(a)->data, kiln_dataset_y(b)->data, 50 * 4) == 0);
    CHECK(memcmp(kiln_dataset_x(a)->data, kiln_dataset_x(c)->data, 50 * 6 * 4) != 0);
    const float *ax = kiln_dataset_x(a)->data;
    const int32_t *ay = kiln_dataset_y(a)->data;
    bool in_range = true;
    int seen[4] = { 0 };
    for (int i = 0; i < 300; i++) in_range = in_range && ax[i] >= 0.0f && ax[i] < 1.0f;
    for (int i = 0; i < 50; i++) { in_range = in_range && ay[i] >= 0 && ay[i] < 4; if (ay[i] >= 0 && ay[i] < 4) seen[ay[i]]++; }
    CHECK(in_range);
    CHECK(seen[0] && seen[1] && seen[2] && seen[3]);
    kiln_dataset_free(b);
    kiln_dataset_free(c);
    CHECK(kiln_dataset_synthetic(KILN_SHAPE(2), 0, 10, 1) == NULL);

    /* order */
    int64_t o1[50], o2[50], o3[50], o4[50];
    kiln_dataset_order(a, false, 1, 0, o1);
    bool ident = true;
    for (int i = 0; i < 50; i++) ident = ident && o1[i] == i;
    CHECK(ident);
    kiln_dataset_order(a, true, 1, 0, o1);
    kiln_dataset_order(a, true, 1, 0, o2);
    kiln_dataset_order(a, true, 1, 1, o3);
    kiln_dataset_order(a, true, 2, 0, o4);
    CHECK(is_perm(o1, 50) && is_perm(o3, 50) && is_perm(o4, 50));
    CHECK(memcmp(o1, o2, sizeof o1) == 0);
    CHECK(memcmp(o1, o3, sizeof o1) != 0);   /* each epoch reshuffles */
    CHECK(memcmp(o1, o4, sizeof o1) != 0);
    ident = true;
    for (int i = 0; i < 50; i++) ident = ident && o1[i] == i;
    CHECK(!ident);
    /* rough uniformity: position 0 over many epochs hits every index of a 5-example dataset */
    {
        kiln_dataset *s5 = kiln_dataset_synthetic(KILN_SHAPE(1), 2, 5, 3);
        int hits[5] = { 0 };
        int64_t o[5];
        for (uint64_t e = 0; e < 5000; e++) { kiln_dataset_order(s5, true, 99, e, o); hits[o[0]]++; }
        bool uni = true;
        for (int i = 0; i < 5; i++) uni = uni && hits[i] > 850 && hits[i] < 1150;
        CHECK_MSG(uni, "%d %d %d %d %d", hits[0], hits[1], hits[2], hits[3], hits[4]);
        kiln_dataset_free(s5);
    }

    /* gather */
    kiln_tensor *bx = kiln_tensor_new(KILN_F32, KILN_SHAPE(8, 2, 3));
    kiln_tensor *by = kiln_tensor_new(KILN_I32, KILN_SHAPE(8));
    CHECK_OK(kiln_dataset_gather(a, o1, 8, 8, bx, by));
    bool same = true;
    for (int k = 0; k < 8; k++) {
        int64_t i = o1[8 + k];
        same = same && memcmp((float *)bx->data + k * 6, ax + i * 6, 6 * sizeof(float)) == 0;
        same = same && ((int32_t *)by->data)[k] == ay[i];
    }
    CHECK(same);
    CHECK_OK(kiln_dataset_gather(a, o1, 0, 8, bx, NULL));
    /* partial last batch: 50 = 6*8 + 2, the caller passes [2, ...] tensors */
    kiln_tensor *px = kiln_tensor_new(KILN_F32, KILN_SHAPE(2, 2, 3));
    kiln_tensor *py = kiln_tensor_new(KILN_I32, KILN_SHAPE(2));
    CHECK_OK(kiln_dataset_gather(a, o1, 48, 2, px, py));
    CHECK(((int32_t *)py->data)[1] == ay[o1[49]]);
    CHECK(kiln_dataset_gather(a, o1, 48, 2, bx, by) == KILN_SHAPE_MISMATCH);     /* [8,..] for a batch of 2 */
    CHECK(kiln_dataset_gather(a, o1, 48, 8, bx, by) == KILN_INVALID_ARGUMENT);   /* past the end */
    CHECK(kiln_dataset_gather(a, o1, -1, 8, bx, by) == KILN_INVALID_ARGUMENT);
    CHECK(kiln_dataset_gather(a, o1, 0, 0, bx, by) == KILN_INVALID_ARGUMENT);
    CHECK(kiln_dataset_gather(a, o1, 0, 8, bx, px) == KILN_DTYPE_MISMATCH);      /* by f32 */
    CHECK(kiln_dataset_gather(a, o1, 0, 8, bx, py) == KILN_SHAPE_MISMATCH);      /* by [2] */
    kiln_tensor *wx = kiln_tensor_new(KILN_F32, KILN_SHAPE(8, 3, 2));
    CHECK(kiln_dataset_gather(a, o1, 0, 8, wx, by) == KILN_SHAPE_MISMATCH);
    CHECK_MSG(has(kiln_last_error(), "[8, 3, 2]") && has(kiln_last_error(), "[8, 2, 3]"), "%s", kiln_last_error());
    int64_t bad[8] = { 0, 1, 2, 3, 4, 5, 6, 50 };
    CHECK(kiln_dataset_gather(a, bad, 0, 8, bx, by) == KILN_INVALID_ARGUMENT);
    kiln_tensor_free(wx);
    kiln_tensor_free(px);
    kiln_tensor_free(py);

    /* split_tail: Keras-style, the tail is the last examples */
    kiln_dataset *val = kiln_dataset_split_tail(a, 0.2);
    CHECK(val && kiln_dataset_size(a) == 40 && kiln_dataset_size(val) == 10);
    if (val) {
        CHECK(kiln_dataset_num_classes(val) == 4);
        kiln_dataset *ref = kiln_dataset_synthetic(KILN_SHAPE(2, 3), 4, 50, 7);
        CHECK(memcmp(kiln_dataset_x(val)->data, (const float *)kiln_dataset_x(ref)->data + 40 * 6, 10 * 6 * 4) == 0);
        CHECK(memcmp(kiln_dataset_y(val)->data, (const int32_t *)kiln_dataset_y(ref)->data + 40, 10 * 4) == 0);
        CHECK(memcmp(kiln_dataset_x(a)->data, kiln_dataset_x(ref)->data, 40 * 6 * 4) == 0);
        CHECK(kiln_shape_equal(kiln_dataset_x(a)->shape, KILN_SHAPE(40, 2, 3)));
        kiln_dataset_free(ref);
    }
    kiln_dataset_free(val);
    CHECK(kiln_dataset_split_tail(a, 0.0) == NULL && kiln_dataset_size(a) == 40);
    CHECK(kiln_dataset_split_tail(a, 1.0) == NULL && kiln_dataset_size(a) == 40);
    CHECK(kiln_dataset_split_tail(a, 1e-18) == NULL && kiln_dataset_size(a) == 40);   /* empty validation set */
    kiln_dataset_free(a);
    kiln_tensor_free(bx);
    kiln_tensor_free(by);

    /* from tensors: x converted to f32, y from i64 */
    kiln_tensor *x = kiln_tensor_new(KILN_U8, KILN_SHAPE(4, 2));
    kiln_tensor *y = kiln_tensor_new(KILN_I64, KILN_SHAPE(4));
    for (int i = 0; i < 8; i++) ((uint8_t *)x->data)[i] = (uint8_t)(i * 3);
    for (int i = 0; i < 4; i++) ((int64_t *)y->data)[i] = 3 - i;
    kiln_dataset *d = kiln_dataset_from_tensors(x, y, 0);
    CHECK(d && kiln_dataset_num_classes(d) == 4 && kiln_dataset_size(d) == 4);
    if (d) {
        CHECK(((const float *)kiln_dataset_x(d)->data)[7] == 21.0f);
        CHECK(((const int32_t *)kiln_dataset_y(d)->data)[0] == 3);
    }
    kiln_dataset_free(d);
    CHECK(kiln_dataset_from_tensors(x, y, 3) == NULL);   /* label 3 with 3 classes */
    CHECK(has(kiln_last_error(), "label 3"));
    kiln_tensor *y5 = kiln_tensor_new(KILN_I32, KILN_SHAPE(5));
    CHECK(kiln_dataset_from_tensors(x, y5, 10) == NULL);
    kiln_tensor_free(y5);
    d = kiln_dataset_from_tensors(x, NULL, 0);           /* unlabelled */
    CHECK(d && kiln_dataset_y(d) == NULL);
    if (d) {
        kiln_tensor *gx = kiln_tensor_new(KILN_F32, KILN_SHAPE(2, 2));
        kiln_tensor *gy = kiln_tensor_new(KILN_I32, KILN_SHAPE(2));
        int64_t o[4];
        kiln_dataset_order(d, true, 5, 0, o);
        CHECK_OK(kiln_dataset_gather(d, o, 0, 2, gx, NULL));
        CHECK(kiln_dataset_gather(d, o, 0, 2, gx, gy) == KILN_INVALID_ARGUMENT);
        kiln_tensor_free(gx);
        kiln_tensor_free(gy);
    }
    kiln_dataset_free(d);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_dataset_free(NULL);
}

static void rm_rf(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "test_data: could not remove %s\n", dir);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kiln_test_data_XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 2; }
    test_idx_read();
    test_mnist_load();
    test_datasets();
    test_real_fashion_mnist();
    rm_rf(tmpdir);
    return check_summary("test_data");
}
