/* Input pipeline: sources in every format (small files made here, broken ones too), transforms,
 * determinism across worker counts, prefetch shutdown, errors carried from workers. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <math.h>
#include <png.h>
#include <jpeglib.h>
#include "check.h"
#include "kiln/data.h"
#include "kiln/pipeline.h"

static char tmpdir[256];

static bool has(const char *msg, const char *needle) { return strstr(msg, needle) != NULL; }

static void pjoin(char *buf, size_t n, const char *a, const char *b) {
    if ((size_t)snprintf(buf, n, "%s/%s", a, b) >= n) { fprintf(stderr, "path too long\n"); exit(2); }
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static uint8_t cifar_px(int r, int c, int h, int w) { return (uint8_t)(r * 7 + c * 50 + h * 3 + w); }

/* A CIFAR file of nrec records; variant 10 or 100; label of record r: (r + base) % 10 (coarse (r%20), fine (r*3%100)). */
static void write_cifar(const char *path, int variant, int nrec, int base, size_t cut) {
    size_t rec = variant == 100 ? 3074 : 3073;
    uint8_t *b = calloc((size_t)nrec, rec);
    for (int r = 0; r < nrec; r++) {
        uint8_t *p = b + (size_t)r * rec;
        if (variant == 100) { p[0] = (uint8_t)(r % 20); p[1] = (uint8_t)(r * 3 % 100); }
        else p[0] = (uint8_t)((r + base) % 10);
        uint8_t *px = p + rec - 3072;
        for (int c = 0; c < 3; c++)
            for (int h = 0; h < 32; h++)
                for (int w = 0; w < 32; w++) px[c * 1024 + h * 32 + w] = cifar_px(r + base, c, h, w);
    }
    write_bytes(path, b, (size_t)nrec * rec - cut);
    free(b);
}

static int64_t count_batches(kiln_data *d, uint64_t epoch, int64_t *last_size) {
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    int64_t n = 0;
    if (kiln_data_iter_new(d, epoch, &it) != KILN_OK) return -1;
    kiln_status st;
    while ((st = kiln_data_iter_next(it, &x, &y)) == KILN_OK && x) {
        n++;
        if (last_size) *last_size = x->shape.dim[0];
    }
    kiln_data_iter_free(it);
    return st == KILN_OK ? n : -1;
}

static void test_cifar(void) {
    char dir[512], p[600];
    pjoin(dir, sizeof dir, tmpdir, "c10");
    mkdir(dir, 0755);
    for (int i = 1; i <= 5; i++) {
        snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, i);
        write_cifar(p, 10, 3, (i - 1) * 3, 0);
    }
    pjoin(p, sizeof p, dir, "test_batch.bin");
    write_cifar(p, 10, 2, 100, 0);
    kiln_data *d = NULL;
    CHECK_OK(kiln_data_from_cifar10(dir, true, &d));
    if (d) {
        CHECK(kiln_data_source_size(d) == 15);
        CHECK(kiln_shape_equal(kiln_data_example_shape(d), KILN_SHAPE(32, 32, 3)));
        CHECK(kiln_data_num_classes(d) == 10);
        d = kiln_data_batch(d, 15, false);
        kiln_data_iter *it;
        kiln_tensor *x, *y;
        CHECK_OK(kiln_data_iter_new(d, 0, &it));
        CHECK_OK(kiln_data_iter_next(it, &x, &y));
        if (x) {
            CHECK(kiln_shape_equal(x->shape, KILN_SHAPE(15, 32, 32, 3)));
            const float *f = x->data;
            const int32_t *l = y->data;
            int bad = 0;
            for (int r = 0; r < 15; r++) {
                if (l[r] != r % 10) bad++;
                for (int h = 0; h < 32; h += 5)
                    for (int w = 0; w < 32; w += 3)
                        for (int c = 0; c < 3; c++)
                            if (f[((r * 32 + h) * 32 + w) * 3 + c] != cifar_px(r, c, h, w) * (1.0f / 255.0f)) bad++;
            }
            CHECK_MSG(bad == 0, "%d wrong CIFAR values/labels", bad);
        }
        kiln_data_iter_free(it);
        kiln_data_free(d);
    }
    /* test split via the spec, and the bare directory */
    d = NULL;
    CHECK_OK(kiln_data_open("cifar10:", false, &d) == KILN_INVALID_ARGUMENT ? KILN_OK : KILN_INTERNAL);
    CHECK_OK(kiln_data_open(dir, false, &d));
    CHECK(d && kiln_data_source_size(d) == 2);
    kiln_data_free(d);
    /* the tarball's sub-folder */
    char sub[600];
    snprintf(sub, sizeof sub, "%s/cifar-10-batches-bin", dir);
    mkdir(sub, 0755);
    pjoin(p, sizeof p, sub, "test_batch.bin");
    write_cifar(p, 10, 4, 0, 0);
    d = NULL;
    /* dir itself has test_batch.bin, so it wins; the sub-folder is used when dir has none */
    char dir2[512];
    pjoin(dir2, sizeof dir2, tmpdir, "c10sub");
    mkdir(dir2, 0755);
    snprintf(sub, sizeof sub, "%s/cifar-10-batches-bin", dir2);
    mkdir(sub, 0755);
    pjoin(p, sizeof p, sub, "test_batch.bin");
    write_cifar(p, 10, 4, 0, 0);
    char spec[700];
    snprintf(spec, sizeof spec, "cifar10:%s", dir2);
    CHECK_OK(kiln_data_open(spec, false, &d));
    CHECK(d && kiln_data_source_size(d) == 4);
    kiln_data_free(d);

    /* CIFAR-100: fine by default, coarse on request */
    char d100[512];
    pjoin(d100, sizeof d100, tmpdir, "c100");
    mkdir(d100, 0755);
    pjoin(p, sizeof p, d100, "train.bin");
    write_cifar(p, 100, 40, 0, 0);
    d = NULL;
    CHECK_OK(kiln_data_open(d100, true, &d));
    CHECK(d && kiln_data_num_classes(d) == 100 && kiln_data_source_size(d) == 40);
    d = kiln_data_batch(d, 40, true);
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    if (kiln_data_iter_new(d, 0, &it) == KILN_OK) {
        CHECK_OK(kiln_data_iter_next(it, &x, &y));
        CHECK(y && ((int32_t *)y->data)[7] == 21 && ((float *)x->data)[3 * 5] == cifar_px(0, 0, 0, 5) / 255.0f);
        kiln_data_iter_free(it);
    }
    kiln_data_free(d);
    d = NULL;
    CHECK_OK(kiln_data_from_cifar100(d100, true, true, &d));
    CHECK(d && kiln_data_num_classes(d) == 20);
    kiln_data_free(d);

    /* broken files */
    char bad[512];
    pjoin(bad, sizeof bad, tmpdir, "c10bad");
    mkdir(bad, 0755);
    for (int i = 1; i <= 5; i++) {
        snprintf(p, sizeof p, "%s/data_batch_%d.bin", bad, i);
        write_cifar(p, 10, 3, 0, i == 4 ? 100 : 0);   /* batch 4 truncated inside record 2 */
    }
    d = NULL;
    kiln_status st = kiln_data_from_cifar10(bad, true, &d);
    CHECK(st == KILN_IO_ERROR && !d);
    CHECK_MSG(has(kiln_last_error(), "data_batch_4.bin") && has(kiln_last_error(), "record 2") &&
              has(kiln_last_error(), "offset 6146"), "%s", kiln_last_error());
    snprintf(p, sizeof p, "%s/data_batch_4.bin", bad);
    write_cifar(p, 10, 3, 0, 0);
    FILE *f = fopen(p, "r+b");
    fseek(f, 3073, SEEK_SET);
    fputc(10, f);                                     /* label 10 in record 1 */
    fclose(f);
    st = kiln_data_from_cifar10(bad, true, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "data_batch_4.bin: record 1 (offset 3073): label 10"), "%s",
              kiln_last_error());
    snprintf(p, sizeof p, "%s/data_batch_3.bin", bad);
    unlink(p);
    st = kiln_data_from_cifar10(bad, true, &d);
    CHECK_MSG(st == KILN_NOT_FOUND && has(kiln_last_error(), "data_batch_3.bin"), "%s", kiln_last_error());
    pjoin(p, sizeof p, bad, "test_batch.bin");
    write_bytes(p, "", 0);
    st = kiln_data_from_cifar10(bad, false, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "empty"), "%s", kiln_last_error());
    pjoin(p, sizeof p, d100, "test.bin");
    write_cifar(p, 100, 2, 0, 0);
    f = fopen(p, "r+b");
    fseek(f, 3074 + 1, SEEK_SET);
    fputc(100, f);
    fclose(f);
    st = kiln_data_from_cifar100(d100, false, false, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "record 1") && has(kiln_last_error(), "fine label 100"), "%s",
              kiln_last_error());
    st = kiln_data_from_cifar10("/nonexistent/kiln", true, &d);
    CHECK(st == KILN_NOT_FOUND && !d);
}

/* ---- images ---- */

static void write_png(const char *path, int w, int h, int c, int seed) {
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)w;
    img.height = (png_uint_32)h;
    img.format = c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    uint8_t *b = malloc((size_t)w * h * c);
    for (int i = 0; i < w * h * c; i++) b[i] = (uint8_t)(i * 5 + seed * 31);
    if (!png_image_write_to_file(&img, path, 0, b, 0, NULL)) { fprintf(stderr, "png write %s\n", img.message); exit(2); }
    free(b);
}

static void write_jpeg(const char *path, int w, int h, int c) {
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr je;
    ci.err = jpeg_std_error(&je);
    jpeg_create_compress(&ci);
    FILE *f = fopen(path, "wb");
    jpeg_stdio_dest(&ci, f);
    ci.image_width = (JDIMENSION)w;
    ci.image_height = (JDIMENSION)h;
    ci.input_components = c;
    ci.in_color_space = c == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 95, TRUE);
    jpeg_start_compress(&ci, TRUE);
    uint8_t *row = malloc((size_t)w * c);
    for (int y = 0; y < h; y++) {
        for (int i = 0; i < w * c; i++) row[i] = (uint8_t)(100 + (i + y) % 50);
        JSAMPROW r = row;
        jpeg_write_scanlines(&ci, &r, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    fclose(f);
    free(row);
}

/* kiln_image_load: one file, as is, converted to 3 channels, resized by nearest neighbour. */
static void test_image_load(void) {
    char p[600];
    pjoin(p, sizeof p, tmpdir, "one.png");
    write_png(p, 4, 2, 1, 0);                       /* pixel i = i*5 */
    kiln_tensor *t = NULL;
    bool resized = true;
    CHECK(kiln_image_load(p, KILN_SCALAR, &t, &resized) == KILN_OK && !resized);
    CHECK(t && kiln_shape_equal(t->shape, KILN_SHAPE(2, 4, 1)) && fabsf(((float *)t->data)[7] - 35 / 255.0f) < 1e-6f);
    kiln_tensor_free(t);
    CHECK(kiln_image_load(p, KILN_SHAPE(2, 4, 3), &t, &resized) == KILN_OK && !resized);
    CHECK(t && ((float *)t->data)[3 * 5 + 2] == ((float *)t->data)[3 * 5] && fabsf(((float *)t->data)[3 * 5] - 25 / 255.0f) < 1e-6f);
    kiln_tensor_free(t);
    CHECK(kiln_image_load(p, KILN_SHAPE(1, 2, 1), &t, &resized) == KILN_OK && resized);   /* centres: (1,1), (1,3) */
    CHECK(t && fabsf(((float *)t->data)[0] - 25 / 255.0f) < 1e-6f && fabsf(((float *)t->data)[1] - 35 / 255.0f) < 1e-6f);
    kiln_tensor_free(t);
    t = (kiln_tensor *)1;
    CHECK(kiln_image_load(p, KILN_SHAPE(2, 4, 2), &t, NULL) == KILN_INVALID_ARGUMENT && t == NULL);
    pjoin(p, sizeof p, tmpdir, "none.png");
    CHECK(kiln_image_load(p, KILN_SCALAR, &t, NULL) != KILN_OK && t == NULL && has(kiln_last_error(), "none.png"));
}

static void test_images(void) {
    char root[512], p[700];
    pjoin(root, sizeof root, tmpdir, "img");
    mkdir(root, 0755);
    const char *cls[] = { "zebra", "apple", "mango" };
    for (int c = 0; c < 3; c++) {
        snprintf(p, sizeof p, "%s/%s", root, cls[c]);
        mkdir(p, 0755);
    }
    snprintf(p, sizeof p, "%s/zebra/b.png", root); write_png(p, 6, 4, 3, 1);
    snprintf(p, sizeof p, "%s/zebra/a.PNG", root); write_png(p, 6, 4, 1, 2);   /* grey: replicated */
    snprintf(p, sizeof p, "%s/apple/x.jpg", root); write_jpeg(p, 6, 4, 3);
    snprintf(p, sizeof p, "%s/mango/m.jpeg", root); write_jpeg(p, 6, 4, 1);
    snprintf(p, sizeof p, "%s/mango/notes.txt", root); write_bytes(p, "hi", 2);  /* ignored */
    snprintf(p, sizeof p, "%s/README", root); write_bytes(p, "hi", 2);           /* ignored */
    kiln_data *d = NULL;
    snprintf(p, sizeof p, "images:%s", root);
    CHECK_OK(kiln_data_open(p, true, &d));
    if (!d) return;
    CHECK(kiln_data_num_classes(d) == 3 && kiln_data_source_size(d) == 4);
    CHECK(kiln_data_class_name(d, 0) && !strcmp(kiln_data_class_name(d, 0), "apple"));
    CHECK(kiln_data_class_name(d, 1) && !strcmp(kiln_data_class_name(d, 1), "mango"));
    CHECK(kiln_data_class_name(d, 2) && !strcmp(kiln_data_class_name(d, 2), "zebra"));
    CHECK(kiln_shape_equal(kiln_data_example_shape(d), KILN_SHAPE(4, 6, 3)));
    d = kiln_data_prefetch(kiln_data_batch(d, 8, false), 2, 2);
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    CHECK_OK(kiln_data_iter_new(d, 0, &it));
    CHECK_OK(kiln_data_iter_next(it, &x, &y));
    if (x) {
        const int32_t *l = y->data;
        CHECK(x->shape.dim[0] == 4 && l[0] == 0 && l[1] == 1 && l[2] == 2 && l[3] == 2);
        const float *f = x->data;
        /* example 2 = zebra/a.PNG (grey, sorted before b.png): pixel i of grey value (i*5+62) in all 3 channels */
        const float *e2 = f + 2 * 72, *e3 = f + 3 * 72;
        int bad = 0;
        for (int i = 0; i < 24; i++)
            for (int c = 0; c < 3; c++) if (fabsf(e2[i * 3 + c] - (uint8_t)(i * 5 + 62) / 255.0f) > 1e-6f) bad++;
        for (int i = 0; i < 72; i++) if (fabsf(e3[i] - (uint8_t)(i * 5 + 31) / 255.0f) > 1e-6f) bad++;
        CHECK_MSG(bad == 0, "%d wrong PNG values", bad);
        CHECK(fabs(f[0] - 100 / 255.0) < 0.1);                  /* JPEG, lossy */
    }
    CHECK_OK(kiln_data_iter_next(it, &x, &y));
    CHECK(x == NULL);
    kiln_data_iter_free(it);
    kiln_data_free(d);

    /* grey-only folder -> 1 channel; bare dir detected as images */
    char g[512];
    pjoin(g, sizeof g, tmpdir, "grey");
    mkdir(g, 0755);
    snprintf(p, sizeof p, "%s/one", g); mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/one/a.png", g); write_png(p, 5, 5, 1, 0);
    d = NULL;
    CHECK_OK(kiln_data_open(g, true, &d));
    CHECK(d && kiln_shape_equal(kiln_data_example_shape(d), KILN_SHAPE(5, 5, 1)));
    kiln_data_free(d);

    /* corrupt PNG (header fine, data truncated): error from the worker, naming the file */
    snprintf(p, sizeof p, "%s/two", g); mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/two/t.png", g); write_png(p, 5, 5, 1, 3);
    FILE *f = fopen(p, "rb");
    uint8_t buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_bytes(p, buf, n - 20);
    d = NULL;
    CHECK_OK(kiln_data_open(g, true, &d));
    d = kiln_data_prefetch(kiln_data_batch(d, 1, false), 2, 3);
    if (d && kiln_data_iter_new(d, 0, &it) == KILN_OK) {
        CHECK_OK(kiln_data_iter_next(it, &x, &y));
        kiln_status st = kiln_data_iter_next(it, &x, &y);
        CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "two/t.png") && x == NULL, "%s %s", kiln_status_name(st),
                  kiln_last_error());
        st = kiln_data_iter_next(it, &x, &y);              /* stays failed */
        CHECK(st == KILN_IO_ERROR && has(kiln_last_error(), "two/t.png"));
        kiln_data_iter_free(it);
    }
    kiln_data_free(d);
    /* truncated JPEG */
    write_jpeg(p, 5, 5, 1);
    f = fopen(p, "rb");
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_bytes(p, buf, n - 10);
    d = NULL;
    CHECK_OK(kiln_data_open(g, true, &d));
    if (d && kiln_data_iter_new(d, 0, &it) == KILN_OK) {
        CHECK_OK(kiln_data_iter_next(it, &x, &y));
        kiln_status st = kiln_data_iter_next(it, &x, &y);
        CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "two/t.png") && has(kiln_last_error(), "JPEG"), "%s",
                  kiln_last_error());
        kiln_data_iter_free(it);
    }
    kiln_data_free(d);
    /* junk bytes between segments (before the end marker) decode to the same pixels, as in TF/PIL */
    {
        float clean[25], junk[25];
        float *dst[2] = { clean, junk };
        write_jpeg(p, 5, 5, 1);
        f = fopen(p, "rb");
        n = fread(buf, 1, sizeof buf - 3, f);
        fclose(f);
        for (int v = 0; v < 2; v++) {
            if (v == 1) {   /* 3 bytes before the final FF D9 */
                memmove(buf + n + 1, buf + n - 2, 2);
                buf[n - 2] = 0x00; buf[n - 1] = 0x11; buf[n] = 0x22;
                write_bytes(p, buf, n + 3);
            }
            d = NULL;
            CHECK_OK(kiln_data_open(g, true, &d));
            d = kiln_data_batch(d, 1, false);
            if (d && kiln_data_iter_new(d, 0, &it) == KILN_OK) {
                CHECK_OK(kiln_data_iter_next(it, &x, &y));
                kiln_status st = kiln_data_iter_next(it, &x, &y);
                CHECK_MSG(st == KILN_OK && x && kiln_shape_numel(x->shape) == 25, "junk before a marker (%d): %s", v, kiln_last_error());
                if (st == KILN_OK && x) memcpy(dst[v], x->data, sizeof clean);
                kiln_data_iter_free(it);
            }
            kiln_data_free(d);
        }
        CHECK(memcmp(clean, junk, sizeof clean) == 0);
    }
    /* not an image at all */
    write_bytes(p, "GIF89a....", 10);
    kiln_status st = kiln_data_from_images(g, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "two/t.png") && has(kiln_last_error(), "not a PNG or JPEG"),
              "%s", kiln_last_error());
    /* odd-sized image */
    write_png(p, 7, 5, 1, 0);
    st = kiln_data_from_images(g, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "two/t.png is 7x5") && has(kiln_last_error(), "5x5"), "%s",
              kiln_last_error());
    unlink(p);
    st = kiln_data_from_images(g, &d);   /* empty class folder */
    CHECK_MSG(st == KILN_NOT_FOUND && has(kiln_last_error(), "two") && has(kiln_last_error(), "no .png"), "%s",
              kiln_last_error());
    char e[512];
    pjoin(e, sizeof e, tmpdir, "emptyroot");
    mkdir(e, 0755);
    st = kiln_data_from_images(e, &d);
    CHECK(st == KILN_NOT_FOUND && has(kiln_last_error(), "no class sub-folders"));
    st = kiln_data_open(e, true, &d);
    CHECK(st == KILN_NOT_FOUND && has(kiln_last_error(), "cannot recognise"));
    st = kiln_data_from_images("/nonexistent/kiln-images", &d);
    CHECK(st == KILN_NOT_FOUND && !d);
}

/* ---- MNIST / spec ---- */

static void test_mnist_and_spec(void) {
    char dir[512], p[700];
    pjoin(dir, sizeof dir, tmpdir, "mn");
    mkdir(dir, 0755);
    uint8_t img[16 + 3 * 4 * 4], lbl[8 + 3];
    memset(img, 0, sizeof img);
    memset(lbl, 0, sizeof lbl);
    img[2] = 8; img[3] = 3; img[7] = 3; img[11] = 4; img[15] = 4;
    for (int i = 0; i < 48; i++) img[16 + i] = (uint8_t)(i * 5);
    lbl[2] = 8; lbl[3] = 1; lbl[7] = 3; lbl[8] = 4; lbl[9] = 9; lbl[10] = 0;
    pjoin(p, sizeof p, dir, "t10k-images-idx3-ubyte"); write_bytes(p, img, sizeof img);
    pjoin(p, sizeof p, dir, "t10k-labels-idx1-ubyte"); write_bytes(p, lbl, sizeof lbl);
    kiln_data *d = NULL;
    CHECK_OK(kiln_data_open(dir, false, &d));
    CHECK(d && kiln_data_source_size(d) == 3 && kiln_shape_equal(kiln_data_example_shape(d), KILN_SHAPE(4, 4, 1)));
    kiln_data_free(d);
    snprintf(p, sizeof p, "mnist:%s", dir);
    kiln_status st = kiln_data_open(p, true, &d);                /* no train files */
    CHECK(st == KILN_NOT_FOUND && has(kiln_last_error(), "train-images-idx3-ubyte"));
    lbl[9] = 12;
    pjoin(p, sizeof p, dir, "t10k-labels-idx1-ubyte"); write_bytes(p, lbl, sizeof lbl);
    snprintf(p, sizeof p, "mnist:%s", dir);
    st = kiln_data_open(p, false, &d);
    CHECK(st == KILN_IO_ERROR && has(kiln_last_error(), "label 12"));

    CHECK_OK(kiln_data_open("synthetic", true, &d));
    CHECK(d && kiln_data_source_size(d) == 2048 && kiln_shape_equal(kiln_data_example_shape(d), KILN_SHAPE(28, 28, 1)));
    kiln_data_free(d);
    CHECK_OK(kiln_data_open("synthetic:32x32x3:100", true, &d));
    CHECK(d && kiln_data_source_size(d) == 100 && kiln_shape_equal(kiln_data_example_shape(d), KILN_SHAPE(32, 32, 3)));
    kiln_data_free(d);
    st = kiln_data_open("synthetic:32x32", true, &d);
    CHECK(st == KILN_INVALID_ARGUMENT && !d);
    st = kiln_data_open("tfrecord:/x", true, &d);
    CHECK(st == KILN_INVALID_ARGUMENT && has(kiln_last_error(), "unknown data spec"));
    st = kiln_data_open("/nonexistent/kiln-data", true, &d);
    CHECK(st == KILN_NOT_FOUND && has(kiln_last_error(), "/nonexistent/kiln-data"));
}

/* ---- transforms ---- */

/* n examples [h, w, c]: value = index * 1000 + element; label = index % 10. */
static kiln_dataset *indexed(int64_t n, int h, int w, int c) {
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(n, h, w, c));
    kiln_tensor *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    int64_t e = (int64_t)h * w * c;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = 0; k < e; k++) ((float *)x->data)[i * e + k] = (float)(i * 1000 + k);
        ((int32_t *)y->data)[i] = (int32_t)(i % 10);
    }
    kiln_dataset *d = kiln_dataset_from_tensors(x, y, 10);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return d;
}

static int64_t first_index(const kiln_tensor *x, int64_t b) {
    int64_t e = kiln_shape_numel(x->shape) / x->shape.dim[0];
    return (int64_t)(((const float *)x->data)[b * e] / 1000.0f);
}

static void test_batch_repeat_take_skip(void) {
    kiln_dataset *ds = indexed(10, 2, 2, 1);
    int64_t last = 0;
    kiln_data *d = kiln_data_batch(kiln_data_from_dataset(ds, false), 4, true);
    CHECK(kiln_data_cardinality(d) == 2 && count_batches(d, 0, &last) == 2 && last == 4);
    kiln_data_free(d);
    d = kiln_data_batch(kiln_data_from_dataset(ds, true), 4, false);
    CHECK(kiln_data_cardinality(d) == 3 && count_batches(d, 0, &last) == 3 && last == 2);
    kiln_data_free(d);
    /* skip 3, take 5, repeat 2, batch 4 -> elements 3..7,3..7 -> batches of 4, 4, 2 */
    d = kiln_data_batch(kiln_data_repeat(kiln_data_take(kiln_data_skip(kiln_data_from_dataset(ds, false), 3), 5), 2), 4, false);
    CHECK(kiln_data_cardinality(d) == 3);
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    int64_t got[10], ng = 0;
    if (kiln_data_iter_new(d, 0, &it) == KILN_OK) {
        while (kiln_data_iter_next(it, &x, &y) == KILN_OK && x)
            for (int64_t b = 0; b < x->shape.dim[0] && ng < 10; b++) got[ng++] = first_index(x, b);
        kiln_data_iter_free(it);
    }
    int64_t want[10] = { 3, 4, 5, 6, 7, 3, 4, 5, 6, 7 };
    CHECK(ng == 10 && !memcmp(got, want, sizeof want));
    kiln_data_free(d);
    /* after batch: repeat counts batches, take / skip too */
    d = kiln_data_take(kiln_data_skip(kiln_data_repeat(kiln_data_batch(kiln_data_from_dataset(ds, false), 4, false), 3), 1), 7);
    CHECK(kiln_data_cardinality(d) == 7 && count_batches(d, 0, NULL) == 7);
    kiln_data_free(d);
    /* infinite repeat + take */
    d = kiln_data_take(kiln_data_batch(kiln_data_repeat(kiln_data_from_dataset(ds, false), -1), 3, true), 25);
    CHECK(kiln_data_cardinality(d) == 25 && count_batches(d, 0, NULL) == 25);
    kiln_data_free(d);
    d = kiln_data_repeat(kiln_data_from_dataset(ds, false), -1);
    CHECK(kiln_data_cardinality(d) == -1);
    kiln_data_free(d);
    /* build errors: element op after batch, augment on non-images, NULL propagation */
    d = kiln_data_normalize(kiln_data_batch(kiln_data_from_dataset(ds, false), 2, false), (float[]){ 0 }, (float[]){ 1 }, 1);
    CHECK(!d && has(kiln_last_error(), "before batch"));
    kiln_data *chain = kiln_data_batch(kiln_data_shuffle(d, 10, 1), 2, true);
    CHECK(!chain && has(kiln_last_error(), "before batch"));
    kiln_dataset *flat = kiln_dataset_synthetic(KILN_SHAPE(5), 3, 4, 1);
    d = kiln_data_augment(kiln_data_from_dataset(flat, false), &(kiln_augment_opts){ .flip = true });
    CHECK(!d && has(kiln_last_error(), "HWC"));
    d = kiln_data_batch(kiln_data_from_dataset(flat, false), 0, false);
    CHECK(!d && has(kiln_last_error(), "batch size"));
    d = kiln_data_normalize(kiln_data_from_dataset(ds, false), (float[]){ 0 }, (float[]){ 0 }, 1);
    CHECK(!d && has(kiln_last_error(), "std"));
    kiln_dataset_free(flat);
    kiln_dataset_free(ds);
}

static void test_normalize(void) {
    kiln_dataset *ds = indexed(3, 2, 2, 2);
    float mean[2] = { 10, 2000 }, sd[2] = { 2, 4 };
    kiln_data *d = kiln_data_batch(kiln_data_normalize(kiln_data_from_dataset(ds, false), mean, sd, 2), 3, false);
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    if (d && kiln_data_iter_new(d, 0, &it) == KILN_OK) {
        CHECK_OK(kiln_data_iter_next(it, &x, &y));
        int bad = 0;
        for (int i = 0; x && i < 24; i++) {
            float raw = (float)((i / 8) * 1000 + i % 8);
            float want = (raw - mean[i % 2]) / sd[i % 2];
            if (fabsf(((float *)x->data)[i] - want) > 1e-4f) bad++;
        }
        CHECK(x && bad == 0);
        kiln_data_iter_free(it);
    }
    kiln_data_free(d);
    kiln_dataset_free(ds);
}

/* Runs every epoch-0 example of a 1-example-per-batch pipeline and checks flip / crop / cutout outputs. */
static void test_augment(void) {
    const int H = 6, W = 6, C = 2, N = 200;
    kiln_tensor *x0 = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, H, W, C));
    for (int64_t i = 0; i < kiln_shape_numel(x0->shape); i++) ((float *)x0->data)[i] = (float)(i % (H * W * C) + 1);
    kiln_dataset *ds = kiln_dataset_from_tensors(x0, NULL, 0);
    kiln_tensor_free(x0);
    int nflip = 0, nplain = 0, nbadflip = 0, offs[25] = { 0 }, nbadcrop = 0, ncut = 0, nbadcut = 0;
    for (int mode = 0; mode < 3; mode++) {
        kiln_augment_opts o = { 0 };
        o.seed = 9;
        if (mode == 0) o.flip = true;
        if (mode == 1) o.crop_pad = 2;
        if (mode == 2) { o.cutout_size = 3; o.cutout_prob = 0.5f; o.fill = -1; }
        kiln_data *d = kiln_data_batch(kiln_data_augment(kiln_data_from_dataset(ds, false), &o), 1, false);
        kiln_data_iter *it;
        kiln_tensor *x, *y;
        if (!d || kiln_data_iter_new(d, 0, &it) != KILN_OK) { CHECK(0); kiln_data_free(d); continue; }
        while (kiln_data_iter_next(it, &x, &y) == KILN_OK && x) {
            const float *f = x->data;
            CHECK(((int32_t *)y->data)[0] == -1);            /* unlabelled */
#define ORIG(yy, xx, c) ((float)(((yy) * W + (xx)) * C + (c) + 1))
            if (mode == 0) {
                bool plain = true, flip = true;
                for (int yy = 0; yy < H; yy++) for (int xx = 0; xx < W; xx++) for (int c = 0; c < C; c++) {
                    float v = f[(yy * W + xx) * C + c];
                    if (v != ORIG(yy, xx, c)) plain = false;
                    if (v != ORIG(yy, W - 1 - xx, c)) flip = false;
                }
                nflip += flip; nplain += plain; nbadflip += !flip && !plain;
            } else if (mode == 1) {
                int found = -1;
                for (int dy = -2; dy <= 2 && found < 0; dy++) for (int dx = -2; dx <= 2 && found < 0; dx++) {
                    bool ok = true;
                    for (int yy = 0; yy < H && ok; yy++) for (int xx = 0; xx < W && ok; xx++) for (int c = 0; c < C; c++) {
                        int sy = yy + dy, sx = xx + dx;
                        float want = (sy < 0 || sy >= H || sx < 0 || sx >= W) ? 0.0f : ORIG(sy, sx, c);
                        if (f[(yy * W + xx) * C + c] != want) { ok = false; break; }
                    }
                    if (ok) found = (dy + 2) * 5 + dx + 2;
                }
                if (found < 0) nbadcrop++; else offs[found]++;
            } else {
                int changed = 0, y0 = H, y1 = -1, x0 = W, x1 = -1;
                for (int yy = 0; yy < H; yy++) for (int xx = 0; xx < W; xx++) {
                    bool ch = false;
                    for (int c = 0; c < C; c++) {
                        float v = f[(yy * W + xx) * C + c];
                        if (v == -1.0f) ch = true; else if (v != ORIG(yy, xx, c)) nbadcut++;
                    }
                    if (ch) { changed++; if (yy < y0) y0 = yy; if (yy > y1) y1 = yy; if (xx < x0) x0 = xx; if (xx > x1) x1 = xx; }
                }
                if (changed) {
                    ncut++;
                    if (changed != (y1 - y0 + 1) * (x1 - x0 + 1) || y1 - y0 > 2 || x1 - x0 > 2) nbadcut++;
                }
            }
#undef ORIG
        }
        kiln_data_iter_free(it);
        kiln_data_free(d);
    }
    CHECK_MSG(nbadflip == 0 && nflip > 60 && nplain > 60, "flip %d plain %d bad %d", nflip, nplain, nbadflip);
    int distinct = 0;
    for (int i = 0; i < 25; i++) distinct += offs[i] > 0;
    CHECK_MSG(nbadcrop == 0 && distinct >= 20, "crop: %d bad, %d distinct offsets", nbadcrop, distinct);
    CHECK_MSG(nbadcut == 0 && ncut > 60 && ncut < 140, "cutout: %d bad, %d cut", nbadcut, ncut);
    kiln_dataset_free(ds);
}

static atomic_int map_calls;

static kiln_status noisy_map(void *user, kiln_tensor *x, int32_t *label, uint64_t key) {
    (void)user;
    atomic_fetch_add(&map_calls, 1);
    float *f = x->data;
    for (int64_t i = 0; i < kiln_shape_numel(x->shape); i++) f[i] += (float)((key >> (i % 50)) & 7) * 0.01f;
    (void)label;
    return KILN_OK;
}

static kiln_status failing_map(void *user, kiln_tensor *x, int32_t *label, uint64_t key) {
    (void)key;
    if (((float *)x->data)[0] == 37000.0f) return KILN_NUMERIC_ERROR;
    (void)user; (void)label;
    return KILN_OK;
}

static kiln_data *det_pipeline(const kiln_dataset *ds, int workers) {
    kiln_data *d = kiln_data_from_dataset(ds, false);
    d = kiln_data_shuffle(d, 32, 1234);
    d = kiln_data_map(d, noisy_map, NULL, 77);
    d = kiln_data_augment(d, &(kiln_augment_opts){ .crop_pad = 2, .flip = true, .cutout_size = 3, .seed = 5 });
    d = kiln_data_batch(d, 16, false);
    if (workers > 0) d = kiln_data_prefetch(d, 3, workers);
    return d;
}

/* All batches of epoch e concatenated (x then y), malloc'd; *n floats. */
static float *run_all(kiln_data *d, uint64_t e, size_t *n) {
    size_t cap = 1 << 16, len = 0;
    float *out = malloc(cap * sizeof(float));
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    if (kiln_data_iter_new(d, e, &it) != KILN_OK) { *n = 0; return out; }
    while (kiln_data_iter_next(it, &x, &y) == KILN_OK && x) {
        size_t nx = (size_t)kiln_shape_numel(x->shape), ny = (size_t)y->shape.dim[0];
        while (len + nx + ny > cap) { cap *= 2; out = realloc(out, cap * sizeof(float)); }
        memcpy(out + len, x->data, nx * sizeof(float));
        len += nx;
        for (size_t i = 0; i < ny; i++) out[len++] = (float)((int32_t *)y->data)[i];
    }
    kiln_data_iter_free(it);
    *n = len;
    return out;
}

static void test_determinism(void) {
    kiln_dataset *ds = indexed(100, 6, 6, 3);
    kiln_data *d0 = det_pipeline(ds, 0), *d1 = det_pipeline(ds, 1), *d4 = det_pipeline(ds, 4);
    CHECK(d0 && d1 && d4);
    for (uint64_t e = 0; e < 2 && d0 && d1 && d4; e++) {
        size_t n0, n1, n4;
        float *a = run_all(d0, e, &n0), *b = run_all(d1, e, &n1), *c = run_all(d4, e, &n4);
        CHECK(n0 == 100 * (108 + 1) && n0 == n1 && n0 == n4);
        CHECK_MSG(n0 == n1 && !memcmp(a, b, n0 * sizeof(float)), "epoch %d: 0 vs 1 worker differ", (int)e);
        CHECK_MSG(n0 == n4 && !memcmp(a, c, n0 * sizeof(float)), "epoch %d: 1 vs 4 workers differ", (int)e);
        if (e == 0) {
            size_t m;
            float *again = run_all(d4, 1, &m);
            CHECK(m == n0 && memcmp(a, again, n0 * sizeof(float)) != 0);   /* next epoch differs */
            free(again);
        }
        free(a); free(b); free(c);
    }
    kiln_data_free(d0); kiln_data_free(d1); kiln_data_free(d4);
    /* a full-buffer shuffle is a permutation */
    kiln_data *d = kiln_data_batch(kiln_data_shuffle(kiln_data_from_dataset(ds, false), 1000, 3), 100, false);
    kiln_data_iter *it;
    kiln_tensor *x, *y;
    if (d && kiln_data_iter_new(d, 0, &it) == KILN_OK) {
        CHECK_OK(kiln_data_iter_next(it, &x, &y));
        int seen[100] = { 0 }, inorder = 0;
        for (int b = 0; x && b < 100; b++) {
            int64_t i = first_index(x, b);
            if (i >= 0 && i < 100) seen[i]++;
            inorder += i == b;
        }
        int ok = 1;
        for (int i = 0; i < 100; i++) ok &= seen[i] == 1;
        CHECK(ok && inorder < 20);
        kiln_data_iter_free(it);
    }
    kiln_data_free(d);
    kiln_dataset_free(ds);
}

static void test_prefetch_errors_cache(void) {
    kiln_dataset *ds = indexed(500, 8, 8, 3);
    /* consumer stops early: mid-epoch, before the first batch, and on an infinite stream */
    kiln_data *d = kiln_data_prefetch(kiln_data_batch(kiln_data_repeat(kiln_data_from_dataset(ds, false), -1), 8, true), 2, 4);
    for (int stop = 0; stop < 3; stop++) {
        kiln_data_iter *it;
        kiln_tensor *x, *y;
        CHECK_OK(kiln_data_iter_new(d, (uint64_t)stop, &it));
        for (int k = 0; k < stop * 5; k++) CHECK_OK(kiln_data_iter_next(it, &x, &y));
        kiln_data_iter_free(it);
    }
    kiln_data_free(d);
    /* two iterators of one pipeline at once */
    d = kiln_data_prefetch(kiln_data_batch(kiln_data_from_dataset(ds, false), 50, false), 2, 2);
    kiln_data_iter *a, *b;
    kiln_tensor *xa, *ya, *xb, *yb;
    CHECK_OK(kiln_data_iter_new(d, 0, &a));
    CHECK_OK(kiln_data_iter_new(d, 0, &b));
    CHECK_OK(kiln_data_iter_next(a, &xa, &ya));
    CHECK_OK(kiln_data_iter_next(b, &xb, &yb));
    CHECK(xa && xb && xa->data != xb->data && !memcmp(xa->data, xb->data, kiln_tensor_nbytes(xa)));
    kiln_data_iter_free(a);
    kiln_data_iter_free(b);
    kiln_data_free(d);

    /* a failing map callback: the error reaches the batch holding example 37, with its message */
    for (int workers = 0; workers <= 3; workers += 3) {
        d = kiln_data_batch(kiln_data_map(kiln_data_from_dataset(ds, false), failing_map, NULL, 0), 10, false);
        if (workers) d = kiln_data_prefetch(d, 2, workers);
        kiln_data_iter *it;
        kiln_tensor *x, *y;
        int good = 0;
        kiln_status st = KILN_OK;
        if (kiln_data_iter_new(d, 0, &it) == KILN_OK) {
            while ((st = kiln_data_iter_next(it, &x, &y)) == KILN_OK && x) good++;
            kiln_data_iter_free(it);
        }
        CHECK_MSG(good == 3 && st == KILN_NUMERIC_ERROR && has(kiln_last_error(), "example 37"), "%d workers: %d good, %s",
                  workers, good, kiln_last_error());
        kiln_data_free(d);
    }

    /* cache: the map before it runs once per example; values identical across epochs */
    atomic_store(&map_calls, 0);
    d = kiln_data_prefetch(kiln_data_batch(kiln_data_cache(kiln_data_map(kiln_data_take(kiln_data_from_dataset(ds, false), 40),
                                                                         noisy_map, NULL, 3)), 8, false), 2, 2);
    size_t n1, n2;
    float *r1 = run_all(d, 0, &n1), *r2 = run_all(d, 1, &n2);
    CHECK(n1 == n2 && n1 > 0 && !memcmp(r1, r2, n1 * sizeof(float)));
    CHECK_MSG(atomic_load(&map_calls) == 40, "map ran %d times", atomic_load(&map_calls));
    free(r1);
    free(r2);
    CHECK(!kiln_data_cache(d) && has(kiln_last_error(), "already has a cache"));   /* frees d */
    kiln_dataset_free(ds);
}

/* kiln_data_iter_hold(2): the previous batch stays intact while the next is handed out, with and
 * without prefetch workers, and the batches are the same as with hold 1. */
static void test_hold_two(void) {
    kiln_dataset *ds = indexed(64, 2, 2, 1);
    for (int pf = 0; pf < 3; pf++) {
        kiln_data *d = kiln_data_batch(kiln_data_shuffle(kiln_data_from_dataset(ds, false), 64, 7), 4, false);
        if (pf) d = kiln_data_prefetch(d, pf, pf);   /* 1 buffer 1 worker, 2 buffers 2 workers */
        kiln_data_iter *it = NULL;
        CHECK_OK(kiln_data_iter_new(d, 3, &it));
        int64_t want[16];
        kiln_tensor *x, *y;
        for (int b = 0; b < 16; b++) {
            CHECK_OK(kiln_data_iter_next(it, &x, &y));
            want[b] = x ? first_index(x, 0) : -1;
        }
        kiln_data_iter_free(it);
        CHECK_OK(kiln_data_iter_new(d, 3, &it));
        CHECK_OK(kiln_data_iter_hold(it, 2));
        kiln_tensor *px = NULL, *py = NULL;
        float prev[16];
        int32_t prevy[4];
        for (int b = 0; b < 16; b++) {
            CHECK_OK(kiln_data_iter_next(it, &x, &y));
            CHECK(x && first_index(x, 0) == want[b]);
            if (px) {   /* the batch before is untouched */
                CHECK_MSG(px != x && memcmp(px->data, prev, sizeof prev) == 0 && memcmp(py->data, prevy, sizeof prevy) == 0,
                          "prefetch %d, batch %d: the held batch changed", pf, b);
            }
            memcpy(prev, x->data, sizeof prev);
            memcpy(prevy, y->data, sizeof prevy);
            px = x;
            py = y;
            usleep(2000);   /* give workers time to (wrongly) reuse the held buffer */
        }
        CHECK_OK(kiln_data_iter_next(it, &x, &y));
        CHECK(x == NULL);
        CHECK(kiln_data_iter_hold(it, 2) == KILN_INVALID_ARGUMENT);   /* only before the first batch */
        kiln_data_iter_free(it);
        kiln_data_free(d);
    }
    kiln_dataset_free(ds);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kiln_pipe_XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 2; }
    test_cifar();
    test_images();
    test_image_load();
    test_mnist_and_spec();
    test_batch_repeat_take_skip();
    test_normalize();
    test_augment();
    test_determinism();
    test_prefetch_errors_cache();
    test_hold_two();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_summary("test_pipeline");
}
