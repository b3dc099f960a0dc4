/* safetensors checkpoints (https://github.com/huggingface/safetensors):
 *   8 bytes   little-endian u64 N, the header length
 *   N bytes   JSON header, UTF-8, padded with spaces to a multiple of 8:
 *             {"__metadata__": {"k": "v", ...}, "name": {"dtype": "F32", "shape": [2, 3],
 *              "data_offsets": [begin, end]}, ...}
 *   the data  tensors back to back, little-endian, row-major; offsets relative to the data start.
 * Writes are atomic (an exclusive temp file, fsync, rename: io/atomic_file.c). The loader has its own small strict JSON parser
 * for exactly this header and checks every offset; a corrupt file gives an error, never a crash. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"
#include "kiln/io.h"
#include "io/atomic_file.h"
#include "io/name_index.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "kiln safetensors: big-endian hosts are not supported (the format is little-endian)"
#endif

#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)   /* same limit as the reference implementation */

static const char *const st_dtype_names[KILN_DTYPE_COUNT] = {
    [KILN_F32] = "F32", [KILN_F64] = "F64", [KILN_F16] = "F16", [KILN_BF16] = "BF16",
    [KILN_I32] = "I32", [KILN_I64] = "I64", [KILN_U8] = "U8", [KILN_BOOL] = "BOOL",
};

/* ---------------------------------------------------------------- growable byte buffer ---- */

typedef struct sbuf { char *p; size_t len, cap; bool oom; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) cap *= 2;
        char *p = kiln_realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_u64(sbuf *b, uint64_t v) {
    char t[24];
    int n = snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    sb_put(b, t, (size_t)n);
}
/* A JSON string literal: escapes quote, backslash and control characters; other bytes (UTF-8)
 * are copied as they are. */
static void sb_json_str(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[8];
        switch (*p) {
        case '"': sb_put(b, "\\\"", 2); break;
        case '\\': sb_put(b, "\\\\", 2); break;
        case '\n': sb_put(b, "\\n", 2); break;
        case '\r': sb_put(b, "\\r", 2); break;
        case '\t': sb_put(b, "\\t", 2); break;
        case '\b': sb_put(b, "\\b", 2); break;
        case '\f': sb_put(b, "\\f", 2); break;
        default:
            if (*p < 0x20) { snprintf(e, sizeof e, "\\u%04x", *p); sb_put(b, e, 6); }
            else sb_put(b, (const char *)p, 1);
        }
    }
    sb_put(b, "\"", 1);
}

/* Checks that s is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { k = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { k = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { k = 3; cp = c & 0x07; }
        else return false;
        if (n - i <= k) return false;            /* needs k continuation bytes */
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += k + 1;
    }
    return true;
}

/* ------------------------------------------------------------------------------- save ---- */

static kiln_status write_all(FILE *f, const void *p, size_t n, const char *path) {
    if (n && fwrite(p, 1, n, f) != n)
        return kiln_set_error(KILN_IO_ERROR, "safetensors_save: writing the temp file for %s failed: %s", path, strerror(errno ? errno : EIO));
    return KILN_OK;
}

static const char *named_tensor_name(const void *a, int i) { return ((const kiln_named_tensor *)a)[i].name; }

/* Names (unique: checked through seen), dtypes, ranks and data of the tensors to save. */
static kiln_status check_tensors(const char *path, const kiln_named_tensor *tensors, int n, kiln_name_index *seen) {
    for (int i = 0; i < n; i++) {
        const char *nm = tensors[i].name;
        const kiln_tensor *t = tensors[i].tensor;
        if (!nm || !*nm) return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): tensor %d has no name", path, i);
        if (!utf8_valid((const unsigned char *)nm, strlen(nm)))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): tensor %d's name is not valid UTF-8", path, i);
        if (strcmp(nm, "__metadata__") == 0)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): \"__metadata__\" is reserved, not a "
                                  "tensor name", path);
        if (!t) return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): tensor '%s' is NULL", path, nm);
        if ((unsigned)t->dtype >= KILN_DTYPE_COUNT || t->shape.rank < 0 || t->shape.rank > KILN_MAX_DIMS)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): tensor '%s' has a bad dtype or rank", path, nm);
        for (int d = 0; d < t->shape.rank; d++)
            if (t->shape.dim[d] < 0)
                return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): tensor '%s' has a negative dimension",
                                      path, nm);
        size_t nb = kiln_tensor_nbytes(t);
        if (nb && !t->data)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): tensor '%s' has no data", path, nm);
        if (kiln_name_index_find(seen, nm) >= 0)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): tensor name '%s' appears twice", path, nm);
        if (!kiln_name_index_add(seen, i)) return kiln_set_error(KILN_OUT_OF_MEMORY, "safetensors_save(%s): out of memory", path);
    }
    return KILN_OK;
}

kiln_status kiln_safetensors_save(const char *path, const kiln_named_tensor *tensors, int n,
                                  const char *const *meta_keys, const char *const *meta_values, int n_meta) {
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save: path is empty");
    if (n < 0 || n_meta < 0 || (n > 0 && !tensors) || (n_meta > 0 && (!meta_keys || !meta_values)))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): bad tensor or metadata arrays (n = %d, "
                              "n_meta = %d)", path, n, n_meta);
    kiln_name_index seen;           /* duplicate names, in O(1) each */
    kiln_name_index_init(&seen, named_tensor_name, tensors);
    kiln_status cs = check_tensors(path, tensors, n, &seen);
    kiln_name_index_free(&seen);
    if (cs) return cs;
    for (int i = 0; i < n_meta; i++) {
        if (!meta_keys[i] || !meta_values[i])
            return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): metadata entry %d is NULL", path, i);
        if (!utf8_valid((const unsigned char *)meta_keys[i], strlen(meta_keys[i])) ||
            !utf8_valid((const unsigned char *)meta_values[i], strlen(meta_values[i])))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): metadata entry %d is not valid UTF-8", path, i);
        for (int j = 0; j < i; j++)
            if (strcmp(meta_keys[j], meta_keys[i]) == 0)
                return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_save(%s): metadata key '%s' appears twice", path,
                                      meta_keys[i]);
    }

    /* The header. */
    sbuf h = { 0 };
    sb_str(&h, "{");
    bool first = true;
    if (n_meta > 0) {
        sb_str(&h, "\"__metadata__\":{");
        for (int i = 0; i < n_meta; i++) {
            if (i) sb_str(&h, ",");
            sb_json_str(&h, meta_keys[i]);
            sb_str(&h, ":");
            sb_json_str(&h, meta_values[i]);
        }
        sb_str(&h, "}");
        first = false;
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const kiln_tensor *t = tensors[i].tensor;
        if (!first) sb_str(&h, ",");
        first = false;
        sb_json_str(&h, tensors[i].name);
        sb_str(&h, ":{\"dtype\":\"");
        sb_str(&h, st_dtype_names[t->dtype]);
        sb_str(&h, "\",\"shape\":[");
        for (int d = 0; d < t->shape.rank; d++) {
            if (d) sb_str(&h, ",");
            sb_u64(&h, (uint64_t)t->shape.dim[d]);
        }
        sb_str(&h, "],\"data_offsets\":[");
        sb_u64(&h, off);
        sb_str(&h, ",");
        off += kiln_tensor_nbytes(t);
        sb_u64(&h, off);
        sb_str(&h, "]}");
    }
    sb_str(&h, "}");
    while (!h.oom && h.len % 8) sb_str(&h, " ");
    if (h.oom) {
        kiln_free(h.p);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "safetensors_save(%s): out of memory building the header", path);
    }

    /* Atomic write: an exclusive temp file in the same directory, fsync, rename over path. */
    kiln_atomic_file af;
    kiln_status st = kiln_atomic_open(path, &af);
    if (st != KILN_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        kiln_free(h.p);
        return kiln_set_error(st, "safetensors_save: %s", msg);
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    errno = 0;
    st = write_all(af.f, len8, 8, path);
    if (st == KILN_OK) st = write_all(af.f, h.p, h.len, path);
    for (int i = 0; i < n && st == KILN_OK; i++)
        st = write_all(af.f, tensors[i].tensor->data, kiln_tensor_nbytes(tensors[i].tensor), path);
    if (st != KILN_OK) kiln_atomic_abort(&af);          /* path itself is untouched */
    else if ((st = kiln_atomic_commit(&af)) != KILN_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        kiln_set_error(st, "safetensors_save: %s", msg);
    }
    kiln_free(h.p);
    return st;
}

/* ------------------------------------------------------------------------------- load ---- */

struct kiln_safetensors {
    int count;
    char **names;
    kiln_tensor **tensors;
    int n_meta;
    char **meta_keys, **meta_values;
    kiln_name_index index;     /* names -> position, for kiln_safetensors_find */
};

static const char *handle_name(const void *f, int i) { return ((const kiln_safetensors *)f)->names[i]; }

void kiln_safetensors_free(kiln_safetensors *f) {
    if (!f) return;
    kiln_name_index_free(&f->index);
    for (int i = 0; i < f->count; i++) { kiln_free(f->names[i]); kiln_tensor_free(f->tensors[i]); }
    for (int i = 0; i < f->n_meta; i++) { kiln_free(f->meta_keys[i]); kiln_free(f->meta_values[i]); }
    kiln_free(f->names);
    kiln_free(f->tensors);
    kiln_free(f->meta_keys);
    kiln_free(f->meta_values);
    kiln_free(f);
}

int kiln_safetensors_count(const kiln_safetensors *f) { return f ? f->count : 0; }
const char *kiln_safetensors_name(const kiln_safetensors *f, int i) {
    return f && i >= 0 && i < f->count ? f->names[i] : NULL;
}
const kiln_tensor *kiln_safetensors_tensor(const kiln_safetensors *f, int i) {
    return f && i >= 0 && i < f->count ? f->tensors[i] : NULL;
}
int kiln_safetensors_index(const kiln_safetensors *f, const char *name) {
    return f && name ? kiln_name_index_find(&f->index, name) : -1;
}
const kiln_tensor *kiln_safetensors_find(const kiln_safetensors *f, const char *name) {
    int i = kiln_safetensors_index(f, name);
    return i >= 0 ? f->tensors[i] : NULL;
}
const char *kiln_safetensors_meta(const kiln_safetensors *f, const char *key) {
    if (!f || !key) return NULL;
    for (int i = 0; i < f->n_meta; i++) if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}

/* One tensor entry of the header, before its data is read. */
typedef struct st_entry {
    char *name;
    kiln_dtype dtype;
    kiln_shape shape;
    uint64_t begin, end;
} st_entry;

typedef struct jp {
    const char *path;   /* for messages */
    const char *s;      /* header text (NUL-terminated copy) */
    size_t n, i;
    kiln_status err;    /* KILN_OK until the first error */
} jp;

static kiln_status jp_fail(jp *p, kiln_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kiln_status jp_fail(jp *p, kiln_status s, const char *fmt, ...) {
    if (p->err != KILN_OK) return p->err;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->err = kiln_set_error(s, "safetensors: %s: bad header (byte %zu of %zu): %s", p->path, p->i, p->n, msg);
    return p->err;
}

static void jp_ws(jp *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static bool jp_lit(jp *p, char c) {
    jp_ws(p);
    if (p->i < p->n && p->s[p->i] == c) { p->i++; return true; }
    return false;
}

static kiln_status jp_expect(jp *p, char c, const char *where) {
    if (jp_lit(p, c)) return KILN_OK;
    if (p->i >= p->n) return jp_fail(p, KILN_IO_ERROR, "unexpected end of header, expected '%c' %s", c, where);
    return jp_fail(p, KILN_IO_ERROR, "expected '%c' %s, found '%c'", c, where, p->s[p->i]);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool jp_hex4(jp *p, uint32_t *v) {
    if (p->n - p->i < 4) return false;
    uint32_t r = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p->s[p->i + k]);
        if (h < 0) return false;
        r = r << 4 | (uint32_t)h;
    }
    p->i += 4;
    *v = r;
    return true;
}

/* Parses a JSON string into a new kiln_malloc'd UTF-8 string (NULL on error, message set). */
static char *jp_string(jp *p, const char *what) {
    jp_ws(p);
    if (p->i >= p->n || p->s[p->i] != '"') {
        jp_fail(p, KILN_IO_ERROR, "expected a string (%s)", what);
        return NULL;
    }
    p->i++;
    sbuf b = { 0 };
    sb_put(&b, "", 0);
    for (;;) {
        if (p->i >= p->n) { jp_fail(p, KILN_IO_ERROR, "unterminated string (%s)", what); break; }
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') { p->i++; if (b.oom) jp_fail(p, KILN_OUT_OF_MEMORY, "out of memory"); else return b.p; break; }
        if (c < 0x20) { jp_fail(p, KILN_IO_ERROR, "control character 0x%02x inside a string (%s)", c, what); break; }
        if (c != '\\') { sb_put(&b, (const char *)&c, 1); p->i++; continue; }
        p->i++;
        if (p->i >= p->n) { jp_fail(p, KILN_IO_ERROR, "unterminated escape (%s)", what); break; }
        char e = p->s[p->i++];
        const char *rep = NULL;
        switch (e) {
        case '"': rep = "\""; break;
        case '\\': rep = "\\"; break;
        case '/': rep = "/"; break;
        case 'b': rep = "\b"; break;
        case 'f': rep = "\f"; break;
        case 'n': rep = "\n"; break;
        case 'r': rep = "\r"; break;
        case 't': rep = "\t"; break;
        case 'u': break;
        default: jp_fail(p, KILN_IO_ERROR, "invalid escape '\\%c' (%s)", e, what); goto fail;
        }
        if (rep) { sb_put(&b, rep, 1); continue; }
        uint32_t cp;
        if (!jp_hex4(p, &cp)) { jp_fail(p, KILN_IO_ERROR, "bad \\u escape (%s)", what); break; }
        if (cp >= 0xD800 && cp <= 0xDBFF) {            /* high surrogate: a low one must follow */
            uint32_t lo;
            if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') {
                jp_fail(p, KILN_IO_ERROR, "unpaired surrogate in \\u escape (%s)", what); break;
            }
            p->i += 2;
            if (!jp_hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                jp_fail(p, KILN_IO_ERROR, "unpaired surrogate in \\u escape (%s)", what); break;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            jp_fail(p, KILN_IO_ERROR, "unpaired surrogate in \\u escape (%s)", what); break;
        }
        if (cp == 0) { jp_fail(p, KILN_IO_ERROR, "\\u0000 is not allowed in names (%s)", what); break; }
        char u[4];
        size_t k;
        if (cp < 0x80) { u[0] = (char)cp; k = 1; }
        else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); k = 2; }
        else if (cp < 0x10000) {
            u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F)); k = 3;
        } else {
            u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); k = 4;
        }
        sb_put(&b, u, k);
    }
fail:
    kiln_free(b.p);
    return NULL;
}

/* A non-negative JSON integer (no sign, fraction or exponent) that fits in max. */
static bool jp_uint(jp *p, uint64_t max, uint64_t *out, const char *what) {
    jp_ws(p);
    size_t start = p->i;
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') {
        jp_fail(p, KILN_IO_ERROR, "expected a non-negative integer (%s)", what);
        return false;
    }
    uint64_t v = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        unsigned d = (unsigned)(p->s[p->i] - '0');
        if (v > (max - d) / 10) { jp_fail(p, KILN_IO_ERROR, "integer too large (%s)", what); return false; }
        v = v * 10 + d;
        p->i++;
    }
    if (p->i - start > 1 && p->s[start] == '0') {
        p->i = start;
        jp_fail(p, KILN_IO_ERROR, "leading zero in a number (%s)", what);
        return false;
    }
    if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        jp_fail(p, KILN_IO_ERROR, "expected an integer, found a fraction or exponent (%s)", what);
        return false;
    }
    *out = v;
    return true;
}

static bool parse_dtype(const char *s, kiln_dtype *out) {
    for (int t = 0; t < KILN_DTYPE_COUNT; t++)
        if (strcmp(s, st_dtype_names[t]) == 0) { *out = (kiln_dtype)t; return true; }
    return false;
}

/* {"dtype": "...", "shape": [...], "data_offsets": [b, e]} in any order, each exactly once. */
static kiln_status parse_entry(jp *p, st_entry *e) {
    char what[160];
    snprintf(what, sizeof what, "tensor '%.100s'", e->name);
    if (jp_expect(p, '{', what) != KILN_OK) return p->err;
    bool have_dtype = false, have_shape = false, have_off = false;
    if (!jp_lit(p, '}')) {
        do {
            char *key = jp_string(p, what);
            if (!key) return p->err;
            if (jp_expect(p, ':', "after a key") != KILN_OK) { kiln_free(key); return p->err; }
            if (strcmp(key, "dtype") == 0 && !have_dtype) {
                kiln_free(key);
                char *dt = jp_string(p, what);
                if (!dt) return p->err;
                bool ok = parse_dtype(dt, &e->dtype);
                if (!ok) {
                    jp_fail(p, KILN_UNSUPPORTED, "%s has dtype \"%.40s\"; Kiln reads F32 F64 F16 BF16 I32 I64 U8 BOOL",
                            what, dt);
                    kiln_free(dt);
                    return p->err;
                }
                kiln_free(dt);
                have_dtype = true;
            } else if (strcmp(key, "shape") == 0 && !have_shape) {
                kiln_free(key);
                if (jp_expect(p, '[', "to open a shape") != KILN_OK) return p->err;
                e->shape.rank = 0;
                if (!jp_lit(p, ']')) {
                    do {
                        uint64_t d;
                        if (!jp_uint(p, (uint64_t)INT64_MAX, &d, what)) return p->err;
                        if (e->shape.rank == KILN_MAX_DIMS)
                            return jp_fail(p, KILN_UNSUPPORTED, "%s has more than %d dimensions", what, KILN_MAX_DIMS);
                        e->shape.dim[e->shape.rank++] = (int64_t)d;
                    } while (jp_lit(p, ','));
                    if (jp_expect(p, ']', "to close a shape") != KILN_OK) return p->err;
                }
                have_shape = true;
            } else if (strcmp(key, "data_offsets") == 0 && !have_off) {
                kiln_free(key);
                if (jp_expect(p, '[', "to open data_offsets") != KILN_OK) return p->err;
                if (!jp_uint(p, UINT64_MAX, &e->begin, what)) return p->err;
                if (jp_expect(p, ',', "in data_offsets (two numbers)") != KILN_OK) return p->err;
                if (!jp_uint(p, UINT64_MAX, &e->end, what)) return p->err;
                if (jp_expect(p, ']', "after data_offsets' two numbers") != KILN_OK) return p->err;
                have_off = true;
            } else {
                jp_fail(p, KILN_IO_ERROR, "%s: unexpected or repeated key \"%.40s\"", what, key);
                kiln_free(key);
                return p->err;
            }
        } while (jp_lit(p, ','));
        if (jp_expect(p, '}', "to close a tensor entry") != KILN_OK) return p->err;
    }
    if (!have_dtype || !have_shape || !have_off)
        return jp_fail(p, KILN_IO_ERROR, "%s lacks \"%s\"", what, !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return KILN_OK;
}

static bool grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap * 2 : 8;
    while (nc < need) nc *= 2;
    void *p = kiln_realloc(*arr, (size_t)nc * elem);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

typedef struct st_header {
    st_entry *e;
    int n, cap;
    char **mk, **mv;
    int nm, mcap;
    kiln_name_index names, keys;   /* duplicate checks in O(1) each (a header may hold 10^6 names) */
} st_header;

static const char *entry_name(const void *h, int i) { return ((const st_header *)h)->e[i].name; }
static const char *meta_key(const void *h, int i) { return ((const st_header *)h)->mk[i]; }

static void header_free(st_header *h) {
    kiln_name_index_free(&h->names);
    kiln_name_index_free(&h->keys);
    for (int i = 0; i < h->n; i++) kiln_free(h->e[i].name);
    for (int i = 0; i < h->nm; i++) { kiln_free(h->mk[i]); kiln_free(h->mv[i]); }
    kiln_free(h->e);
    kiln_free(h->mk);
    kiln_free(h->mv);
}

static kiln_status parse_metadata(jp *p, st_header *h) {
    if (jp_expect(p, '{', "to open __metadata__ (an object of strings)") != KILN_OK) return p->err;
    if (jp_lit(p, '}')) return KILN_OK;
    do {
        char *k = jp_string(p, "metadata key");
        if (!k) return p->err;
        if (jp_expect(p, ':', "after a metadata key") != KILN_OK) { kiln_free(k); return p->err; }
        char *v = jp_string(p, "metadata value (must be a string)");
        if (!v) { kiln_free(k); return p->err; }
        if (kiln_name_index_find(&h->keys, k) >= 0) {
            jp_fail(p, KILN_IO_ERROR, "metadata key \"%.40s\" appears twice", k);
            kiln_free(k); kiln_free(v);
            return p->err;
        }
        int mcap = h->mcap;
        if (!grow((void **)&h->mk, &mcap, h->nm + 1, sizeof(char *)) ||
            !grow((void **)&h->mv, &h->mcap, h->nm + 1, sizeof(char *))) {
            kiln_free(k); kiln_free(v);
            return jp_fail(p, KILN_OUT_OF_MEMORY, "out of memory");
        }
        h->mk[h->nm] = k;
        h->mv[h->nm] = v;
        h->nm++;
        if (!kiln_name_index_add(&h->keys, h->nm - 1)) return jp_fail(p, KILN_OUT_OF_MEMORY, "out of memory");
    } while (jp_lit(p, ','));
    return jp_expect(p, '}', "to close __metadata__");
}

static kiln_status parse_header(jp *p, st_header *h) {
    if (p->n == 0 || p->s[0] != '{') return jp_fail(p, KILN_IO_ERROR, "the header must start with '{'");
    p->i = 1;
    bool have_meta = false;
    if (!jp_lit(p, '}')) {
        do {
            char *key = jp_string(p, "a tensor name or __metadata__");
            if (!key) return p->err;
            if (jp_expect(p, ':', "after a key") != KILN_OK) { kiln_free(key); return p->err; }
            if (strcmp(key, "__metadata__") == 0) {
                kiln_free(key);
                if (have_meta) return jp_fail(p, KILN_IO_ERROR, "__metadata__ appears twice");
                have_meta = true;
                if (parse_metadata(p, h) != KILN_OK) return p->err;
                continue;
            }
            if (!*key) { kiln_free(key); return jp_fail(p, KILN_IO_ERROR, "empty tensor name"); }
            if (kiln_name_index_find(&h->names, key) >= 0) {
                jp_fail(p, KILN_IO_ERROR, "tensor '%.100s' appears twice", key);
                kiln_free(key);
                return p->err;
            }
            if (!grow((void **)&h->e, &h->cap, h->n + 1, sizeof(st_entry))) {
                kiln_free(key);
                return jp_fail(p, KILN_OUT_OF_MEMORY, "out of memory");
            }
            st_entry *e = &h->e[h->n++];
            memset(e, 0, sizeof *e);
            e->name = key;
            if (!kiln_name_index_add(&h->names, h->n - 1)) return jp_fail(p, KILN_OUT_OF_MEMORY, "out of memory");
            if (parse_entry(p, e) != KILN_OK) return p->err;
        } while (jp_lit(p, ','));
        if (jp_expect(p, '}', "to close the header object") != KILN_OK) return p->err;
    }
    jp_ws(p);
    if (p->i != p->n) return jp_fail(p, KILN_IO_ERROR, "unexpected '%c' after the header object", p->s[p->i]);
    return KILN_OK;
}

static int cmp_entry_offsets(const void *a, const void *b) {
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Checks sizes and that the offsets tile [0, data_len) exactly. */
static kiln_status check_offsets(const char *path, st_header *h, uint64_t data_len) {
    for (int i = 0; i < h->n; i++) {
        st_entry *e = &h->e[i];
        uint64_t numel = 1;
        bool overflow = false;
        for (int d = 0; d < e->shape.rank; d++) {
            uint64_t dim = (uint64_t)e->shape.dim[d];
            if (dim && numel > UINT64_MAX / dim) overflow = true;
            else numel *= dim;
        }
        uint64_t es = kiln_dtype_size(e->dtype);
        if (!overflow && numel > UINT64_MAX / es) overflow = true;
        char sb[128];
        kiln_shape_str(e->shape, sb, sizeof sb);
        if (overflow || numel > (uint64_t)INT64_MAX / es)
            return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: tensor '%s' shape %s is too large", path, e->name, sb);
        if (e->end < e->begin)
            return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: tensor '%s' has data_offsets [%llu, %llu] with end before "
                                  "begin", path, e->name, (unsigned long long)e->begin, (unsigned long long)e->end);
        if (e->end > data_len)
            return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: tensor '%s' data_offsets [%llu, %llu] run past the %llu "
                                  "data bytes in the file (truncated or corrupt)", path, e->name,
                                  (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)data_len);
        if (e->end - e->begin != numel * es)
            return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: tensor '%s' is %s %s = %llu bytes but its data_offsets "
                                  "[%llu, %llu] span %llu", path, e->name, st_dtype_names[e->dtype], sb,
                                  (unsigned long long)(numel * es), (unsigned long long)e->begin,
                                  (unsigned long long)e->end, (unsigned long long)(e->end - e->begin));
    }
    st_entry **sorted = kiln_malloc(sizeof(st_entry *) * (size_t)(h->n ? h->n : 1));
    if (!sorted) return kiln_set_error(KILN_OUT_OF_MEMORY, "safetensors: %s: out of memory", path);
    for (int i = 0; i < h->n; i++) sorted[i] = &h->e[i];
    qsort(sorted, (size_t)h->n, sizeof *sorted, cmp_entry_offsets);
    uint64_t pos = 0;
    kiln_status st = KILN_OK;
    for (int i = 0; i < h->n; i++) {
        const st_entry *e = sorted[i];
        if (e->begin != pos) {
            st = kiln_set_error(KILN_IO_ERROR, "safetensors: %s: tensor '%s' data_offsets [%llu, %llu] %s (expected it to "
                                "begin at %llu)", path, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                                e->begin < pos ? "overlap another tensor" : "leave a gap", (unsigned long long)pos);
            break;
        }
        pos = e->end;
    }
    kiln_free(sorted);
    if (st == KILN_OK && pos != data_len)
        st = kiln_set_error(KILN_IO_ERROR, "safetensors: %s: the tensors cover %llu data bytes but the file holds %llu after "
                            "the header (trailing data)", path, (unsigned long long)pos, (unsigned long long)data_len);
    return st;
}

kiln_status kiln_safetensors_load(const char *path, kiln_safetensors **out) {
    if (out) *out = NULL;
    if (!path || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "safetensors_load: path and out must not be NULL");
    /* O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; only regular files are
     * read, and the flag is dropped before reading. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return kiln_set_error(e == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, "safetensors: cannot open %s: %s", path,
                              strerror(e));
    }
    struct stat sst;
    if (fstat(fd, &sst) != 0 || !S_ISREG(sst.st_mode)) {
        close(fd);
        return kiln_set_error(KILN_IO_ERROR, "safetensors: %s is not a regular file (a checkpoint is a .safetensors file)", path);
    }
    FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        return kiln_set_error(KILN_IO_ERROR, "safetensors: cannot read %s: %s", path, strerror(e));
    }
    uint64_t fsize = (uint64_t)sst.st_size;
    unsigned char len8[8];
    if (fsize < 8 || fread(len8, 1, 8, f) != 8) {
        fclose(f);
        return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: truncated: %llu bytes, too short for the 8-byte header "
                              "length", path, (unsigned long long)fsize);
    }
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)len8[i] << (8 * i);
    if (hlen > ST_MAX_HEADER) {
        fclose(f);
        return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: header length %llu exceeds the %llu-byte limit (not a "
                              "safetensors file, or corrupt)", path, (unsigned long long)hlen,
                              (unsigned long long)ST_MAX_HEADER);
    }
    if (hlen > fsize - 8) {
        fclose(f);
        return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: truncated: header length %llu but only %llu bytes follow",
                              path, (unsigned long long)hlen, (unsigned long long)(fsize - 8));
    }
    char *text = kiln_malloc((size_t)hlen + 1);
    if (!text) { fclose(f); return kiln_set_error(KILN_OUT_OF_MEMORY, "safetensors: %s: out of memory", path); }
    if (fread(text, 1, (size_t)hlen, f) != hlen) {
        kiln_free(text);
        fclose(f);
        return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: read error in the header", path);
    }
    text[hlen] = 0;
    if (!utf8_valid((const unsigned char *)text, (size_t)hlen)) {
        kiln_free(text);
        fclose(f);
        return kiln_set_error(KILN_IO_ERROR, "safetensors: %s: bad header: not valid UTF-8", path);
    }
    jp p = { path, text, (size_t)hlen, 0, KILN_OK };
    st_header h = { 0 };
    kiln_name_index_init(&h.names, entry_name, &h);
    kiln_name_index_init(&h.keys, meta_key, &h);
    kiln_status st = parse_header(&p, &h);
    kiln_free(text);
    uint64_t data_len = fsize - 8 - hlen;
    if (st == KILN_OK) st = check_offsets(path, &h, data_len);
    if (st != KILN_OK) { header_free(&h); fclose(f); return st; }

    kiln_safetensors *r = kiln_calloc(1, sizeof *r);
    if (r) {
        r->names = kiln_calloc((size_t)(h.n ? h.n : 1), sizeof(char *));
        r->tensors = kiln_calloc((size_t)(h.n ? h.n : 1), sizeof(kiln_tensor *));
    }
    if (!r || !r->names || !r->tensors) {
        if (r) { kiln_free(r->names); kiln_free(r->tensors); kiln_free(r); }
        header_free(&h);
        fclose(f);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "safetensors: %s: out of memory", path);
    }
    kiln_name_index_init(&r->index, handle_name, r);
    /* Ownership of names and metadata moves to the handle. */
    r->meta_keys = h.mk;
    r->meta_values = h.mv;
    r->n_meta = h.nm;
    h.mk = h.mv = NULL;
    h.nm = 0;
    for (int i = 0; i < h.n; i++) {
        st_entry *e = &h.e[i];
        kiln_tensor *t = kiln_tensor_new(e->dtype, e->shape);
        if (!t) {
            st = kiln_set_error(KILN_OUT_OF_MEMORY, "safetensors: %s: cannot allocate %llu bytes for tensor '%s'", path,
                                (unsigned long long)(e->end - e->begin), e->name);
            break;
        }
        r->names[r->count] = e->name;
        r->tensors[r->count] = t;
        e->name = NULL;
        r->count++;
        if (!kiln_name_index_add(&r->index, r->count - 1)) {
            st = kiln_set_error(KILN_OUT_OF_MEMORY, "safetensors: %s: out of memory", path);
            break;
        }
        size_t nb = (size_t)(e->end - e->begin);
        if (nb == 0) continue;
        if (fseeko(f, (off_t)(8 + hlen + e->begin), SEEK_SET) != 0 || fread(t->data, 1, nb, f) != nb) {
            st = kiln_set_error(KILN_IO_ERROR, "safetensors: %s: read error in the data of tensor '%s'%s", path,
                                r->names[r->count - 1], feof(f) ? " (file truncated while reading)" : "");
            break;
        }
        if (e->dtype == KILN_BOOL) {   /* normalise to 0/1 so later code never sees other byte values */
            uint8_t *b = t->data;
            for (size_t k = 0; k < nb; k++) b[k] = b[k] != 0;
        }
    }
    header_free(&h);
    fclose(f);
    if (st != KILN_OK) { kiln_safetensors_free(r); return st; }
    *out = r;
    return KILN_OK;
}
