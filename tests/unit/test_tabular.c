/* numpy .npz and CSV sources (src/data/npz.c, zip.c, csv.c): values, shapes, label kinds and the
 * error messages for bad files. The .npz files are written here byte by byte (stored members, and
 * a deflated one through zlib); when Debian's python3-numpy is there, np.savez_compressed writes
 * one too (ZIP64 local headers, as numpy forces them). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "kiln/pipeline.h"

static char tmpdir[256];
static bool has(const char *msg, const char *needle) { return strstr(msg, needle) != NULL; }

/* ---- building .npy and .npz bytes ---- */

typedef struct bytes { uint8_t *p; size_t n, cap; } bytes;
static void put(bytes *b, const void *src, size_t n) {
    if (b->n + n > b->cap) { b->cap = (b->n + n) * 2 + 64; b->p = realloc(b->p, b->cap); }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put16(bytes *b, unsigned v) { uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) }; put(b, x, 2); }
static void put32(bytes *b, uint32_t v) { uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) }; put(b, x, 4); }

/* A .npy image: descr like "<f4", shape like "(2, 3)", fortran "False", then nbytes of data. */
static bytes npy(const char *descr, const char *shape, const char *fortran, const void *data, size_t nbytes) {
    char hdr[256];
    int len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, fortran, shape);
    while ((10 + len + 1) % 64) hdr[len++] = ' ';
    hdr[len++] = '\n';
    bytes b = { 0 };
    put(&b, "\x93NUMPY\x01\x00", 8);
    put16(&b, (unsigned)len);
    put(&b, hdr, (size_t)len);
    put(&b, data, nbytes);
    return b;
}

typedef struct zmember { const char *name; bytes data; bool deflate; } zmember;

/* A zip archive of the members (stored or raw-deflated), as np.savez lays it out. */
static bytes zip_of(const zmember *m, int n) {
    bytes z = { 0 }, cd = { 0 };
    for (int i = 0; i < n; i++) {
        uint32_t crc = (uint32_t)crc32(0, m[i].data.p, (uInt)m[i].data.n);
        bytes comp = { 0 };
        if (m[i].deflate) {
            z_stream s = { 0 };
            deflateInit2(&s, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
            comp.cap = deflateBound(&s, m[i].data.n) + 16;
            comp.p = malloc(comp.cap);
            s.next_in = m[i].data.p; s.avail_in = (uInt)m[i].data.n;
            s.next_out = comp.p; s.avail_out = (uInt)comp.cap;
            deflate(&s, Z_FINISH);
            comp.n = s.total_out;
            deflateEnd(&s);
        } else put(&comp, m[i].data.p, m[i].data.n);
        uint32_t off = (uint32_t)z.n;
        size_t nl = strlen(m[i].name);
        put32(&z, 0x04034b50); put16(&z, 20); put16(&z, 0); put16(&z, m[i].deflate ? 8 : 0); put16(&z, 0); put16(&z, 0);
        put32(&z, crc); put32(&z, (uint32_t)comp.n); put32(&z, (uint32_t)m[i].data.n); put16(&z, (unsigned)nl); put16(&z, 0);
        put(&z, m[i].name, nl);
        put(&z, comp.p, comp.n);
        put32(&cd, 0x02014b50); put16(&cd, 20); put16(&cd, 20); put16(&cd, 0); put16(&cd, m[i].deflate ? 8 : 0); put16(&cd, 0); put16(&cd, 0);
        put32(&cd, crc); put32(&cd, (uint32_t)comp.n); put32(&cd, (uint32_t)m[i].data.n); put16(&cd, (unsigned)nl); put16(&cd, 0);
        put16(&cd, 0); put16(&cd, 0); put16(&cd, 0); put32(&cd, 0); put32(&cd, off);
        put(&cd, m[i].name, nl);
        free(comp.p);
    }
    uint32_t cd_off = (uint32_t)z.n;
    put(&z, cd.p, cd.n);
    put32(&z, 0x06054b50); put16(&z, 0); put16(&z, 0); put16(&z, (unsigned)n); put16(&z, (unsigned)n);
    put32(&z, (uint32_t)cd.n); put32(&z, cd_off); put16(&z, 0);
    free(cd.p);
    return z;
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", tmpdir, name); }

/* All examples of a source (one batch of everything). */
static void read_all(kiln_data *src, kiln_tensor **x, kiln_tensor **y, kiln_data **keep) {
    *keep = kiln_data_batch(src, kiln_data_source_size(src), false);
    kiln_data_iter *it = NULL;
    *x = *y = NULL;
    CHECK_OK(kiln_data_iter_new(*keep, 0, &it));
    CHECK_OK(kiln_data_iter_next(it, x, y));
    /* the tensors stay valid after the iterator is gone? no: copy them */
    kiln_tensor *cx = kiln_tensor_new((*x)->dtype, (*x)->shape), *cy = kiln_tensor_new((*y)->dtype, (*y)->shape);
    memcpy(cx->data, (*x)->data, kiln_tensor_nbytes(cx));
    memcpy(cy->data, (*y)->data, kiln_tensor_nbytes(cy));
    kiln_data_iter_free(it);
    *x = cx;
    *y = cy;
}

static void test_npz_values(bool deflate) {
    /* x_train uint8 (2, 2, 3), y_train int64; x_test float64 (3, 2) with float labels (float32) */
    uint8_t xtr[12];
    for (int i = 0; i < 12; i++) xtr[i] = (uint8_t)(i * 20);
    int64_t ytr[2] = { 4, 1 };
    double xte[6] = { 0.5, -1, 2, 3.25, 1e-3, 7 };
    float yte[3] = { 0.25f, 1.5f, -2 };
    zmember m[4] = {
        { "x_train.npy", npy("|u1", "(2, 2, 3)", "False", xtr, sizeof xtr), deflate },
        { "y_train.npy", npy("<i8", "(2,)", "False", ytr, sizeof ytr), deflate },
        { "x_test.npy", npy("<f8", "(3, 2)", "False", xte, sizeof xte), false },
        { "y_test.npy", npy("<f4", "(3,)", "False", yte, sizeof yte), deflate },
    };
    bytes z = zip_of(m, 4);
    char p[512];
    path_of(p, sizeof p, deflate ? "deflated.npz" : "stored.npz");
    write_file(p, z.p, z.n);
    kiln_data *d = NULL, *keep;
    kiln_tensor *x, *y;
    CHECK_OK(kiln_data_from_npz(p, true, &d));
    if (d) {
        kiln_shape es = kiln_data_example_shape(d);
        CHECK(es.rank == 3 && es.dim[0] == 2 && es.dim[1] == 3 && es.dim[2] == 1);
        CHECK(kiln_data_num_classes(d) == 5);
        CHECK(kiln_data_label_dtype(d) == KILN_I32);
        read_all(d, &x, &y, &keep);
        for (int i = 0; i < 12; i++) CHECK_NEAR(((float *)x->data)[i], xtr[i] / 255.0, 1e-7);
        CHECK(((int32_t *)y->data)[0] == 4 && ((int32_t *)y->data)[1] == 1);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
    /* through the spec, as --data npz:FILE */
    char spec[600];
    snprintf(spec, sizeof spec, "npz:%s", p);
    d = NULL;
    CHECK_OK(kiln_data_open(spec, false, &d));
    if (d) {
        kiln_shape es = kiln_data_example_shape(d);
        CHECK(es.rank == 1 && es.dim[0] == 2);
        CHECK(kiln_data_label_dtype(d) == KILN_F32 && kiln_data_num_classes(d) == 0);
        read_all(d, &x, &y, &keep);
        CHECK(y->dtype == KILN_F32);
        for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)x->data)[i], xte[i], 1e-7);
        for (int i = 0; i < 3; i++) CHECK_NEAR(((float *)y->data)[i], yte[i], 0);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
    for (int i = 0; i < 4; i++) free(m[i].data.p);
    free(z.p);
}

/* Writes an .npz of the members and opens its `train` split; returns the status. */
static kiln_status open_npz(const char *name, zmember *m, int n, bool train, kiln_data **d) {
    bytes z = zip_of(m, n);
    char p[512];
    path_of(p, sizeof p, name);
    write_file(p, z.p, z.n);
    free(z.p);
    *d = NULL;
    return kiln_data_from_npz(p, train, d);
}

static void test_npz_errors(void) {
    float x[4] = { 1, 2, 3, 4 };
    uint16_t y16[2] = { 3, 0 };
    kiln_data *d;
    kiln_status st;
    /* no x_test: the test split is NOT_FOUND (a training-only file); y_ missing is an error */
    zmember only_train[2] = { { "x_train.npy", npy("<f4", "(2, 2)", "False", x, sizeof x), false },
                              { "y_train.npy", npy("<u2", "(2,)", "False", y16, sizeof y16), true } };
    st = open_npz("train_only.npz", only_train, 2, false, &d);
    CHECK_MSG(st == KILN_NOT_FOUND && !d && has(kiln_last_error(), "train_only.npz") && has(kiln_last_error(), "x_test"), "%s", kiln_last_error());
    st = open_npz("train_only.npz", only_train, 2, true, &d);
    CHECK_OK(st);
    CHECK(d && kiln_data_num_classes(d) == 4);     /* uint16 labels 3 and 0 */
    kiln_data_free(d);
    st = open_npz("no_y.npz", only_train, 1, true, &d);
    CHECK_MSG(st != KILN_OK && !d && has(kiln_last_error(), "no_y.npz") && has(kiln_last_error(), "y_train") && has(kiln_last_error(), "x_train"),
              "%s", kiln_last_error());
    zmember fortran[2] = { { "x_train.npy", npy("<f4", "(2, 2)", "True", x, sizeof x), false }, only_train[1] };
    st = open_npz("fortran.npz", fortran, 2, true, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "Fortran") && has(kiln_last_error(), "x_train"), "%s", kiln_last_error());
    zmember cplx[2] = { { "x_train.npy", npy("<c8", "(2, 1)", "False", x, sizeof x), false }, only_train[1] };
    st = open_npz("complex.npz", cplx, 2, true, &d);
    CHECK_MSG(st == KILN_UNSUPPORTED && has(kiln_last_error(), "'<c8'") && has(kiln_last_error(), "x_train"), "%s", kiln_last_error());
    zmember big[2] = { { "x_train.npy", npy(">f4", "(2, 2)", "False", x, sizeof x), false }, only_train[1] };
    st = open_npz("bigendian.npz", big, 2, true, &d);
    CHECK_MSG(st == KILN_UNSUPPORTED && has(kiln_last_error(), "big-endian"), "%s", kiln_last_error());
    zmember short_data[2] = { { "x_train.npy", npy("<f4", "(2, 3)", "False", x, sizeof x), false }, only_train[1] };
    st = open_npz("short.npz", short_data, 2, true, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "promises 24 bytes") && has(kiln_last_error(), "truncated"), "%s", kiln_last_error());
    zmember rank1[2] = { { "x_train.npy", npy("<f4", "(4,)", "False", x, sizeof x), false }, only_train[1] };
    st = open_npz("rank1.npz", rank1, 2, true, &d);
    CHECK_MSG(st == KILN_SHAPE_MISMATCH && has(kiln_last_error(), "shape (4)"), "%s", kiln_last_error());
    zmember three_labels[2] = { only_train[0], { "y_train.npy", npy("|u1", "(3,)", "False", "\0\1\2", 3), false } };
    st = open_npz("count.npz", three_labels, 2, true, &d);
    CHECK_MSG(st == KILN_SHAPE_MISMATCH && has(kiln_last_error(), "3 labels") && has(kiln_last_error(), "2 examples"), "%s", kiln_last_error());
    float nan_x[4] = { 1, NAN, 3, 4 };
    zmember nanx[2] = { { "x_train.npy", npy("<f4", "(2, 2)", "False", nan_x, sizeof nan_x), false }, only_train[1] };
    st = open_npz("nan.npz", nanx, 2, true, &d);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && has(kiln_last_error(), "NaN") && has(kiln_last_error(), "example 0"), "%s", kiln_last_error());
    /* one-hot labels (categorical_crossentropy's) become class ids; other 2-D labels are refused */
    float onehot[6] = { 0, 0, 1, 1, 0, 0 }, notone[6] = { 0, 1, 1, 1, 0, 0 };
    zmember oh[2] = { only_train[0], { "y_train.npy", npy("<f4", "(2, 3)", "False", onehot, sizeof onehot), false } };
    CHECK_OK(open_npz("onehot.npz", oh, 2, true, &d));
    CHECK(d && kiln_data_num_classes(d) == 3 && kiln_data_label_dtype(d) == KILN_I32);
    kiln_data_free(d);
    zmember noh[2] = { only_train[0], { "y_train.npy", npy("<f4", "(2, 3)", "False", notone, sizeof notone), false } };
    st = open_npz("notonehot.npz", noh, 2, true, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "row 0 is not one-hot"), "%s", kiln_last_error());
    /* bytes cut off, a damaged byte, not a zip file at all */
    bytes z = zip_of(only_train, 2);
    char p[512];
    path_of(p, sizeof p, "cut.npz");
    write_file(p, z.p, z.n - 30);
    st = kiln_data_from_npz(p, true, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "cut.npz") && has(kiln_last_error(), "truncated"), "%s", kiln_last_error());
    write_file(p, z.p, 60);
    st = kiln_data_from_npz(p, true, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "cut.npz"), "%s", kiln_last_error());
    z.p[30 + strlen("x_train.npy") + 64 + 2] ^= 0x40;    /* a data byte of x_train (stored) */
    path_of(p, sizeof p, "damaged.npz");
    write_file(p, z.p, z.n);
    st = kiln_data_from_npz(p, true, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "CRC-32") && has(kiln_last_error(), "x_train.npy"), "%s", kiln_last_error());
    free(z.p);
    path_of(p, sizeof p, "text.npz");
    write_file(p, "hello, this is not a zip archive at all", 39);
    st = kiln_data_from_npz(p, true, &d);
    CHECK_MSG(st == KILN_IO_ERROR && has(kiln_last_error(), "text.npz") && has(kiln_last_error(), "zip"), "%s", kiln_last_error());
    st = kiln_data_from_npz("/nonexistent/x.npz", true, &d);
    CHECK_MSG(st == KILN_NOT_FOUND && has(kiln_last_error(), "/nonexistent/x.npz"), "%s", kiln_last_error());
    for (int i = 0; i < 2; i++) free(only_train[i].data.p);
    free(fortran[0].data.p); free(cplx[0].data.p); free(big[0].data.p); free(short_data[0].data.p); free(rank1[0].data.p);
    free(three_labels[1].data.p); free(nanx[0].data.p); free(oh[1].data.p); free(noh[1].data.p);
}

/* np.savez_compressed's own output (deflate, ZIP64 extra fields in the local headers). */
static void test_npz_numpy(void) {
    /* Debian's python3 (python3-numpy) may sit behind another python3 on PATH */
    const char *py = NULL, *cands[] = { "python3", "/usr/bin/python3" };
    char cmd[1400];
    for (int i = 0; i < 2 && !py; i++) {
        snprintf(cmd, sizeof cmd, "%s -c 'import numpy' 2>/dev/null", cands[i]);
        if (system(cmd) == 0) py = cands[i];
    }
    if (!py) { printf("test_tabular: python3-numpy not found; a numpy-written file is not tested\n"); return; }
    char p[512];
    path_of(p, sizeof p, "numpy.npz");
    snprintf(cmd, sizeof cmd, "%s -c \"import numpy as np; x = (np.arange(5*4*4*3) %% 256).astype(np.uint8).reshape(5, 4, 4, 3); "
             "np.savez_compressed('%s', x_train=x, y_train=np.array([0, 2, 1, 2, 0], dtype=np.int32), "
             "x_test=np.linspace(0, 1, 8, dtype=np.float32).reshape(2, 4), y_test=np.array([[1], [0]], dtype=np.uint8))\"", py, p);
    CHECK(system(cmd) == 0);
    kiln_data *d = NULL, *keep;
    kiln_tensor *x, *y;
    CHECK_OK(kiln_data_from_npz(p, true, &d));
    if (d) {
        kiln_shape es = kiln_data_example_shape(d);
        CHECK(es.rank == 3 && es.dim[0] == 4 && es.dim[1] == 4 && es.dim[2] == 3 && kiln_data_num_classes(d) == 3);
        read_all(d, &x, &y, &keep);
        bool ok = true;
        for (int i = 0; i < 240; i++) ok &= ((float *)x->data)[i] == (float)(i % 256) * (1.0f / 255.0f);
        CHECK(ok);
        CHECK(((int32_t *)y->data)[1] == 2 && ((int32_t *)y->data)[4] == 0);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
    d = NULL;
    CHECK_OK(kiln_data_from_npz(p, false, &d));
    if (d) {
        CHECK(kiln_data_example_shape(d).rank == 1 && kiln_data_example_shape(d).dim[0] == 4 && kiln_data_num_classes(d) == 2);
        read_all(d, &x, &y, &keep);
        CHECK_NEAR(((float *)x->data)[7], 1.0, 0);
        CHECK(((int32_t *)y->data)[0] == 1 && ((int32_t *)y->data)[1] == 0);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
}

/* ---- CSV ---- */

static kiln_status open_csv(const char *name, const char *text, const kiln_csv_opts *o, kiln_data **d) {
    char p[512];
    path_of(p, sizeof p, name);
    write_file(p, text, strlen(text));
    *d = NULL;
    return kiln_data_from_csv(p, o, d);
}

static void test_csv_values(void) {
    kiln_data *d, *keep;
    kiln_tensor *x, *y;
    /* a header (BOM, CRLF, a quoted name, blank lines), the label named */
    CHECK_OK(open_csv("h.csv", "\xEF\xBB\xBF" "age,\"label\",weight\r\n\r\n31, 1 ,60.5\r\n45,0,-2e1\r\n\r\n", &(kiln_csv_opts){ .label_column = "label" }, &d));
    if (d) {
        CHECK(kiln_data_example_shape(d).rank == 1 && kiln_data_example_shape(d).dim[0] == 2 && kiln_data_source_size(d) == 2);
        CHECK(kiln_data_num_classes(d) == 2 && kiln_data_label_dtype(d) == KILN_I32);
        read_all(d, &x, &y, &keep);
        const float *f = x->data;
        CHECK(f[0] == 31 && f[1] == 60.5f && f[2] == 45 && f[3] == -20);
        CHECK(((int32_t *)y->data)[0] == 1 && ((int32_t *)y->data)[1] == 0);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
    /* no header, label last by default; then by index 0 and -1 */
    const char *plain = "1,2,3\n4,5,6\n";
    CHECK_OK(open_csv("p.csv", plain, NULL, &d));
    if (d) {
        CHECK(kiln_data_num_classes(d) == 7);
        read_all(d, &x, &y, &keep);
        CHECK(((float *)x->data)[3] == 5 && ((int32_t *)y->data)[1] == 6);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
    CHECK_OK(open_csv("p.csv", plain, &(kiln_csv_opts){ .label_column = "0" }, &d));
    if (d) {
        read_all(d, &x, &y, &keep);
        CHECK(((float *)x->data)[0] == 2 && ((float *)x->data)[3] == 6 && ((int32_t *)y->data)[1] == 4);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
    CHECK_OK(open_csv("p.csv", plain, &(kiln_csv_opts){ .label_column = "-2" }, &d));
    if (d) {
        read_all(d, &x, &y, &keep);
        CHECK(((float *)x->data)[1] == 3 && ((int32_t *)y->data)[0] == 2);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
    /* labels that are not all class ids are f32 values (mse); float_labels forces that */
    CHECK_OK(open_csv("f.csv", "x,y\n1,0.5\n2,-3\n", NULL, &d));
    if (d) {
        CHECK(kiln_data_label_dtype(d) == KILN_F32 && kiln_data_num_classes(d) == 0);
        read_all(d, &x, &y, &keep);
        CHECK(y->dtype == KILN_F32 && ((float *)y->data)[0] == 0.5f && ((float *)y->data)[1] == -3);
        kiln_tensor_free(x); kiln_tensor_free(y); kiln_data_free(keep);
    }
    CHECK_OK(open_csv("i.csv", "x,y\n1,0\n2,1\n", &(kiln_csv_opts){ .float_labels = true }, &d));
    CHECK(d && kiln_data_label_dtype(d) == KILN_F32);
    kiln_data_free(d);
    /* a held-out split keeps f32 labels */
    kiln_data *tr = NULL, *ho = NULL;
    CHECK_OK(open_csv("f4.csv", "1,0.5\n2,1.5\n3,2.5\n4,3.5\n", NULL, &d));
    CHECK_OK(kiln_data_split_source(d, 0.5, &tr, &ho));
    CHECK(ho && kiln_data_label_dtype(ho) == KILN_F32 && kiln_data_label_dtype(tr) == KILN_F32);
    kiln_data_free(tr);
    kiln_data_free(ho);
}

static void test_csv_errors(void) {
    kiln_data *d;
    kiln_status st;
    st = open_csv("bad_cell.csv", "a,b,c\n1,2,3\n4,x7,6\n", NULL, &d);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && !d && has(kiln_last_error(), "bad_cell.csv: line 3, column 2 (\"b\"): 'x7' is not a number"),
              "%s", kiln_last_error());
    st = open_csv("empty_cell.csv", "1,2,3\n4,,6\n", NULL, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "line 2, column 2: empty field"), "%s", kiln_last_error());
    st = open_csv("ragged.csv", "a,b,c\n1,2,3\n\n4,5\n", NULL, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "ragged.csv: line 4 has 2 fields but the first row has 3"), "%s", kiln_last_error());
    st = open_csv("nan.csv", "1,2\nnan,3\n", NULL, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "line 2, column 1"), "%s", kiln_last_error());
    st = open_csv("header_only.csv", "a,b\n", NULL, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "no data rows (only a header)"), "%s", kiln_last_error());
    st = open_csv("empty.csv", "", NULL, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "empty.csv: no data rows"), "%s", kiln_last_error());
    st = open_csv("one_col.csv", "1\n2\n", NULL, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "one column"), "%s", kiln_last_error());
    st = open_csv("quote.csv", "a,b\n\"1,2\n", NULL, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "line 2: a quote"), "%s", kiln_last_error());
    st = open_csv("name.csv", "age,weight,label\n1,2,0\n", &(kiln_csv_opts){ .label_column = "target" }, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "no column named 'target'") && has(kiln_last_error(), "age, weight, label"), "%s", kiln_last_error());
    st = open_csv("index.csv", "1,2,0\n", &(kiln_csv_opts){ .label_column = "3" }, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "label column 3 is out of range"), "%s", kiln_last_error());
    st = open_csv("noheader.csv", "1,2,0\n", &(kiln_csv_opts){ .label_column = "label" }, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "no header row"), "%s", kiln_last_error());
    /* header: -1 makes a text first row an error naming it */
    st = open_csv("forced.csv", "a,b\n1,2\n", &(kiln_csv_opts){ .header = -1 }, &d);
    CHECK_MSG(st != KILN_OK && has(kiln_last_error(), "line 1, column 1: 'a' is not a number"), "%s", kiln_last_error());
    /* a CSV file has no test split of its own */
    char spec[600];
    snprintf(spec, sizeof spec, "csv:%s/p.csv", tmpdir);
    st = kiln_data_open(spec, false, &d);
    CHECK_MSG(st == KILN_NOT_FOUND && !d && has(kiln_last_error(), "one split"), "%s", kiln_last_error());
    st = kiln_data_open("csv:", true, &d);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && has(kiln_last_error(), "needs a file"), "%s", kiln_last_error());
}

/* Issue 24.9: class ids beyond KILN_MAX_CLASSES, a first row of nan / inf / 1e39 (numbers, so not
 * a header: refused with the line and column), a NUL byte. */
static void test_csv_hardening(void) {
    kiln_data *d;
    kiln_status st;
    st = open_csv("huge_id.csv", "a,b\n1,0\n2,2e9\n3,1\n", NULL, &d);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && !d && has(kiln_last_error(), "huge_id.csv: data row 2 has the label 2000000000")
              && has(kiln_last_error(), "65536") && has(kiln_last_error(), "--loss mse"), "%s", kiln_last_error());
    st = open_csv("three_million.csv", "1,3000000\n2,1\n", NULL, &d);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && !d && has(kiln_last_error(), "3000001 classes"), "%s", kiln_last_error());
    CHECK_OK(open_csv("max_id.csv", "1,65535\n2,0\n", NULL, &d));           /* the largest id taken */
    CHECK(d && kiln_data_num_classes(d) == 65536);
    kiln_data_free(d);
    CHECK_OK(open_csv("values.csv", "1,3000000\n2,1\n", &(kiln_csv_opts){ .float_labels = true }, &d));   /* asked: values */
    CHECK(d && kiln_data_label_dtype(d) == KILN_F32);
    kiln_data_free(d);
    const char *firsts[3] = { "nan", "inf", "1e39" };
    const char *why[3] = { "'nan' is not finite", "'inf' is not finite", "'1e39' is out of float32's range" };
    for (int i = 0; i < 3; i++) {
        char text[64], name[32];
        snprintf(text, sizeof text, "%s,0\n2,1\n3,1\n", firsts[i]);
        snprintf(name, sizeof name, "first_%d.csv", i);
        st = open_csv(name, text, NULL, &d);
        CHECK_MSG(st == KILN_INVALID_ARGUMENT && !d && has(kiln_last_error(), "line 1, column 1") && has(kiln_last_error(), why[i]),
                  "%s: %s", firsts[i], kiln_last_error());
    }
    st = open_csv("later_big.csv", "a,b\n1,0\n-1e39,1\n", NULL, &d);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && has(kiln_last_error(), "line 3, column 1 (\"a\"): '-1e39' is out of float32's range"),
              "%s", kiln_last_error());
    /* a pandas index column: an empty name and names is still a header */
    CHECK_OK(open_csv("pandas.csv", ",x,label\n0,1.5,1\n1,2.5,0\n", NULL, &d));
    CHECK(d && kiln_data_source_size(d) == 2);
    kiln_data_free(d);
    char p[512];
    path_of(p, sizeof p, "nul.csv");
    write_file(p, "a,b\n1,0\n2\0" "9,1\n", 14);
    st = kiln_data_from_csv(p, NULL, &d);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && !d && has(kiln_last_error(), "nul.csv: line 3: a NUL byte"), "%s", kiln_last_error());
}

/* Issue 24.15: an archive holding a member name twice: the last one counts, as in numpy. */
static void test_npz_duplicate(void) {
    float x[4] = { 1, 2, 3, 4 }, x2[4] = { 5, 6, 7, 8 };
    uint8_t y[2] = { 1, 0 };
    zmember m[3] = { { "x_train.npy", npy("<f4", "(2, 2)", "False", x, sizeof x), false },
                     { "y_train.npy", npy("|u1", "(2,)", "False", y, sizeof y), false },
                     { "x_train.npy", npy("<f4", "(2, 2)", "False", x2, sizeof x2), true } };
    kiln_data *d, *keep;
    kiln_tensor *tx, *ty;
    CHECK_OK(open_npz("dup.npz", m, 3, true, &d));
    if (d) {
        read_all(d, &tx, &ty, &keep);
        CHECK_MSG(((float *)tx->data)[0] == 5 && ((float *)tx->data)[3] == 8, "x_train[0] = %g: the first member, not the last",
                  ((float *)tx->data)[0]);
        kiln_tensor_free(tx); kiln_tensor_free(ty); kiln_data_free(keep);
    }
    for (int i = 0; i < 3; i++) free(m[i].data.p);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kiln_tabular_XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 2; }
    test_npz_values(false);
    test_npz_values(true);
    test_npz_errors();
    test_npz_numpy();
    test_csv_values();
    test_csv_errors();
    test_csv_hardening();
    test_npz_duplicate();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_summary("test_tabular");
}
