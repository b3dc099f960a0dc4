/* numpy .npz archives (np.savez, np.savez_compressed, the keras.datasets files): the .npy header
 * parser and the split x_train / y_train (or x_test / y_test) as a pipeline source.
 * .npy layout: "\x93NUMPY", major and minor version, the header length (2 bytes in format 1.0,
 * 4 in 2.0 and 3.0), a Python dict literal {'descr': '<f4', 'fortran_order': False,
 * 'shape': (60000, 28, 28), } padded with spaces, then the raw elements in C order. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "data/pipeline_internal.h"
#include "data/tabular.h"

/* ---- the header dict ---- */

typedef struct hdr_scan { const char *p, *end; } hdr_scan;

static void skip_ws(hdr_scan *s) { while (s->p < s->end && isspace((unsigned char)*s->p)) s->p++; }
static bool eat(hdr_scan *s, char c) {
    skip_ws(s);
    if (s->p < s->end && *s->p == c) { s->p++; return true; }
    return false;
}
/* A quoted string ('...' or "...") into out (up to n - 1 chars). */
static bool scan_str(hdr_scan *s, char *out, size_t n) {
    skip_ws(s);
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"')) return false;
    char q = *s->p++;
    size_t k = 0;
    while (s->p < s->end && *s->p != q) {
        if (k + 1 >= n) return false;
        out[k++] = *s->p++;
    }
    if (s->p >= s->end) return false;
    s->p++;
    out[k] = 0;
    return true;
}
static bool scan_word(hdr_scan *s, const char *w) {
    skip_ws(s);
    size_t l = strlen(w);
    if ((size_t)(s->end - s->p) < l || memcmp(s->p, w, l)) return false;
    s->p += l;
    return true;
}

static kiln_status hdr_error(const char *what, const char *why) {
    return kiln_set_error(KILN_IO_ERROR, "%s: not a valid .npy array: %s", what, why);
}

/* descr like '<f4', '|u1', '<i8', '|b1'. */
static kiln_status parse_descr(const char *what, const char *d, kiln_npy *a) {
    char order = d[0];
    if (!order || !strchr("<>|=", order)) return hdr_error(what, "bad dtype in the header");
    char kind = d[1];
    char *end;
    long size = strtol(d + 2, &end, 10);
    if (d[1] == 0 || *end || end == d + 2) return kiln_set_error(KILN_UNSUPPORTED, "%s: dtype '%s' is not supported (use uint8, an int, bool or a float)", what, d);
    if (kind == 'O') return kiln_set_error(KILN_UNSUPPORTED, "%s: an array of Python objects (pickled) is not supported: save numbers", what);
    bool ok = (kind == 'b' && size == 1) || ((kind == 'u' || kind == 'i') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
              (kind == 'f' && (size == 2 || size == 4 || size == 8));
    if (!ok) return kiln_set_error(KILN_UNSUPPORTED, "%s: dtype '%s' is not supported: use uint8, int8..int64, uint16..uint64, bool, float16, float32 or float64", what, d);
    if (order == '>' && size > 1) return kiln_set_error(KILN_UNSUPPORTED, "%s: dtype '%s' is big-endian; save it little-endian (x.astype('<%c%ld'))", what, d, kind, size);
    a->kind = kind;
    a->itemsize = (int)size;
    return KILN_OK;
}

static kiln_status parse_shape(const char *what, hdr_scan *s, kiln_npy *a) {
    if (!eat(s, '(')) return hdr_error(what, "'shape' is not a tuple");
    a->rank = 0;
    a->count = 1;
    while (!eat(s, ')')) {
        skip_ws(s);
        if (a->rank == KILN_NPY_MAX_DIMS) return kiln_set_error(KILN_UNSUPPORTED, "%s: more than %d dimensions", what, KILN_NPY_MAX_DIMS);
        int64_t v = 0;
        const char *start = s->p;
        while (s->p < s->end && isdigit((unsigned char)*s->p)) {
            if (v > ((int64_t)1 << 50)) return hdr_error(what, "a dimension is too large");
            v = v * 10 + (*s->p++ - '0');
        }
        if (s->p == start) return hdr_error(what, "bad 'shape' tuple");
        a->dim[a->rank++] = v;
        if (v > 0 && a->count > ((int64_t)1 << 50) / v) return hdr_error(what, "the shape has too many elements");
        a->count *= v;
        if (!eat(s, ',') && !(skip_ws(s), s->p < s->end && *s->p == ')')) return hdr_error(what, "bad 'shape' tuple");
    }
    return KILN_OK;
}

kiln_status kiln_npy_parse(const char *what, const uint8_t *buf, size_t n, kiln_npy *a) {
    memset(a, 0, sizeof *a);
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6)) return hdr_error(what, "no \\x93NUMPY magic");
    int major = buf[6];
    size_t hlen, start;
    if (major == 1) { hlen = (size_t)buf[8] | (size_t)buf[9] << 8; start = 10; }
    else if (major == 2 || major == 3) {
        if (n < 12) return hdr_error(what, "truncated header");
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        start = 12;
    } else return kiln_set_error(KILN_UNSUPPORTED, "%s: .npy format version %d.%d is not supported (1.0 to 3.0 are)", what, major, buf[7]);
    if (hlen > n - start) return hdr_error(what, "the header runs past the end (truncated?)");
    hdr_scan s = { (const char *)buf + start, (const char *)buf + start + hlen };
    bool have_descr = false, have_order = false, have_shape = false;
    if (!eat(&s, '{')) return hdr_error(what, "the header is not a dict");
    while (!eat(&s, '}')) {
        char key[32], val[32];
        if (!scan_str(&s, key, sizeof key) || !eat(&s, ':')) return hdr_error(what, "bad header dict");
        kiln_status st;
        if (!strcmp(key, "descr")) {
            skip_ws(&s);
            if (s.p < s.end && *s.p == '[') return kiln_set_error(KILN_UNSUPPORTED, "%s: structured (record) arrays are not supported: save one plain array per key", what);
            if (!scan_str(&s, val, sizeof val)) return hdr_error(what, "bad 'descr'");
            if ((st = parse_descr(what, val, a))) return st;
            have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (scan_word(&s, "True")) return kiln_set_error(KILN_UNSUPPORTED, "%s: the array is in Fortran order; save it in C order (np.ascontiguousarray)", what);
            if (!scan_word(&s, "False")) return hdr_error(what, "bad 'fortran_order'");
            have_order = true;
        } else if (!strcmp(key, "shape")) {
            if ((st = parse_shape(what, &s, a))) return st;
            have_shape = true;
        } else {
            char msg[96];
            snprintf(msg, sizeof msg, "unexpected key '%s' in the header", key);
            return hdr_error(what, msg);
        }
        if (!eat(&s, ',') && !(skip_ws(&s), s.p < s.end && *s.p == '}')) return hdr_error(what, "bad header dict");
    }
    if (!have_descr || !have_order || !have_shape) return hdr_error(what, "the header lacks descr, fortran_order or shape");
    size_t data = start + hlen, want = (size_t)a->count * (size_t)a->itemsize;
    if (n - data != want)
        return kiln_set_error(KILN_IO_ERROR, "%s: the header promises %zu bytes of data but the member holds %zu (%s)", what, want, n - data,
                              n - data < want ? "truncated" : "trailing bytes");
    a->data = buf + data;
    return KILN_OK;
}

double kiln_npy_get(const kiln_npy *a, int64_t i) {
    const uint8_t *p = a->data + (size_t)i * (size_t)a->itemsize;
    union { uint8_t b[8]; uint16_t u16; uint32_t u32; uint64_t u64; int8_t i8; int16_t i16; int32_t i32; int64_t i64; float f; double d; } v;
    memcpy(v.b, p, (size_t)a->itemsize);    /* little-endian host (x86-64, arm64) */
    switch (a->kind) {
    case 'b': return v.b[0] != 0;
    case 'u': return a->itemsize == 1 ? v.b[0] : a->itemsize == 2 ? v.u16 : a->itemsize == 4 ? v.u32 : (double)v.u64;
    case 'i': return a->itemsize == 1 ? v.i8 : a->itemsize == 2 ? v.i16 : a->itemsize == 4 ? v.i32 : (double)v.i64;
    default: return a->itemsize == 2 ? kiln_f16_to_f32(v.u16) : a->itemsize == 4 ? v.f : v.d;
    }
}

/* ---- an .npz split ---- */

typedef struct member { char what[320]; uint8_t *bytes; kiln_npy a; } member;

typedef struct names_buf { char s[256]; size_t k; } names_buf;
static void add_name(void *user, const char *name, size_t len) {
    names_buf *b = user;
    if (len > 4 && !memcmp(name + len - 4, ".npy", 4)) len -= 4;
    if (b->k + len + 3 >= sizeof b->s) return;
    b->k += (size_t)snprintf(b->s + b->k, sizeof b->s - b->k, "%s%.*s", b->k ? ", " : "", (int)len, name);
}

/* Member KEY.npy (np.savez's name), or KEY. KILN_NOT_FOUND naming the members when absent. */
static kiln_status load_member(const kiln_zip *z, const char *key, member *m) {
    char name[64];
    kiln_zip_entry e;
    snprintf(name, sizeof name, "%s.npy", key);
    kiln_status st = kiln_zip_find(z, name, &e);
    if (st == KILN_NOT_FOUND) st = kiln_zip_find(z, key, &e);
    if (st == KILN_NOT_FOUND) {
        names_buf b = { "", 0 };
        kiln_zip_names(z, add_name, &b);
        return kiln_set_error(KILN_NOT_FOUND, "%s: no array '%s' (the file holds: %s)", z->file, key, b.k ? b.s : "nothing");
    }
    if (st) return st;
    snprintf(m->what, sizeof m->what, "%s: array '%s'", z->file, key);
    size_t n;
    if ((st = kiln_zip_extract(z, &e, &m->bytes, &n))) return st;
    return kiln_npy_parse(m->what, m->bytes, n, &m->a);
}

static kiln_status shape_error(const member *m, const char *want) {
    char sh[160];
    size_t k = 0;
    for (int i = 0; i < m->a.rank; i++) k += (size_t)snprintf(sh + k, sizeof sh - k, "%s%lld", i ? ", " : "", (long long)m->a.dim[i]);
    if (m->a.rank == 0) snprintf(sh, sizeof sh, "a scalar");
    return kiln_set_error(KILN_SHAPE_MISMATCH, "%s has shape (%s); expected %s", m->what, sh, want);
}

/* x -> t->x, f32: uint8 scaled to [0, 1], the rest converted as they are. */
static kiln_status take_x(const member *m, kiln_labelled *t) {
    const kiln_npy *a = &m->a;
    if (a->rank < 2 || a->rank > 4) return shape_error(m, "(N, H, W), (N, H, W, C) or (N, D)");
    if (a->dim[0] < 1) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s has no examples (N = 0)", m->what);
    for (int i = 1; i < a->rank; i++)
        if (a->dim[i] < 1) return shape_error(m, "non-zero example dimensions");
    t->n = a->dim[0];
    t->example = a->rank == 2 ? KILN_SHAPE(a->dim[1]) : a->rank == 3 ? KILN_SHAPE(a->dim[1], a->dim[2], 1)
                                                      : KILN_SHAPE(a->dim[1], a->dim[2], a->dim[3]);
    t->x = kiln_malloc(sizeof(float) * (size_t)a->count);
    if (!t->x) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory for %lld values", m->what, (long long)a->count);
    if (a->kind == 'u' && a->itemsize == 1) {
        for (int64_t i = 0; i < a->count; i++) t->x[i] = (float)a->data[i] * (1.0f / 255.0f);
        return KILN_OK;
    }
    if (a->kind == 'f' && a->itemsize == 4) memcpy(t->x, a->data, sizeof(float) * (size_t)a->count);
    else for (int64_t i = 0; i < a->count; i++) t->x[i] = (float)kiln_npy_get(a, i);
    for (int64_t i = 0; i < a->count; i++)
        if (!isfinite(t->x[i]))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: value %lld (example %lld) is %s", m->what, (long long)i,
                                  (long long)(i / (a->count / t->n)), isnan(t->x[i]) ? "NaN" : "infinite (or too large for float32)");
    return KILN_OK;
}

/* y -> t->y: (N,) or (N, 1) values, or one-hot rows (N, C). */
static kiln_status take_y(const member *m, const member *x, kiln_labelled *t) {
    const kiln_npy *a = &m->a;
    if (a->rank < 1 || a->rank > 2) return shape_error(m, "(N,), (N, 1) or one-hot (N, C)");
    if (a->dim[0] != t->n)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s has %lld labels but %s has %lld examples", m->what, (long long)a->dim[0],
                              x->what, (long long)t->n);
    int64_t c = a->rank == 2 ? a->dim[1] : 1;
    if (c < 1) return shape_error(m, "(N,), (N, 1) or one-hot (N, C)");
    double *v = kiln_malloc(sizeof(double) * (size_t)t->n);
    if (!v) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", m->what);
    kiln_status st = KILN_OK;
    for (int64_t i = 0; i < t->n && !st; i++) {
        if (c == 1) {
            v[i] = kiln_npy_get(a, i);
            if (!isfinite(v[i]) || fabs(v[i]) > 3.4e38)
                st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: label %lld is %g, not a finite float32", m->what, (long long)i, v[i]);
            continue;
        }
        int64_t hot = -1, ones = 0;     /* one-hot (what categorical_crossentropy takes in Keras): the class id */
        bool clean = true;
        for (int64_t j = 0; j < c; j++) {
            double e = kiln_npy_get(a, i * c + j);
            if (e == 1) { ones++; hot = j; }
            else if (e != 0) clean = false;
        }
        if (!clean || ones != 1 || c > 2147483646)
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: row %lld is not one-hot (exactly one 1, the rest 0); labels of shape "
                                "(N, %lld) must be one-hot class vectors", m->what, (long long)i, (long long)c);
        v[i] = (double)hot;
    }
    if (!st) st = kiln_labelled_set_labels(t, v, false, m->what);
    /* one-hot rows say how many classes there are, even when the last ones are absent */
    if (!st && c > 1 && !t->float_labels) t->num_classes = (int)c;
    kiln_free(v);
    return st;
}

kiln_status kiln_npz_parse(const char *file, const uint8_t *buf, size_t n, bool train, kiln_labelled *t) {
    memset(t, 0, sizeof *t);
    kiln_zip z;
    kiln_status st = kiln_zip_open(&z, file, buf, n);
    if (st) return st;
    member x = { 0 }, y = { 0 };
    const char *xk = train ? "x_train" : "x_test", *yk = train ? "y_train" : "y_test";
    st = load_member(&z, xk, &x);
    if (st == KILN_NOT_FOUND && !train)
        kiln_set_error(KILN_NOT_FOUND, "%s has no x_test array: it holds only a training split (hold part of it out for validation)", file);
    if (!st && (st = load_member(&z, yk, &y)) == KILN_NOT_FOUND) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s; %s needs its labels %s", msg, xk, yk);
    }
    if (!st) st = take_x(&x, t);
    if (!st) st = take_y(&y, &x, t);
    kiln_free(x.bytes);
    kiln_free(y.bytes);
    if (st) kiln_labelled_free(t);
    return st;
}

kiln_status kiln_data_from_npz(const char *path, bool train, kiln_data **out) {
    if (out) *out = NULL;
    if (!path || !*path || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_from_npz: path and out must be given");
    uint8_t *buf;
    size_t n;
    kiln_status st = kiln_read_whole_file(path, &buf, &n);
    if (st) return st;
    kiln_labelled t;
    st = kiln_npz_parse(path, buf, n, train, &t);
    kiln_free(buf);
    if (st) return st;
    *out = kiln_labelled_source(&t);
    return *out ? KILN_OK : KILN_OUT_OF_MEMORY;
}
