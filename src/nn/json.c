/* A small JSON writer and reader (nn_json.h): what model_config.c writes into and reads from a
 * checkpoint's metadata. The reader takes any JSON (RFC 8259) up to 64 levels deep. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "nn/nn_json.h"

/* ---- writer ---- */
static bool sb_room(nn_sb *b, size_t more) {
    if (b->oom) return false;
    if (b->len + more + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1) cap *= 2;
    char *s = kiln_realloc(b->s, cap);
    if (!s) { b->oom = true; return false; }
    b->s = s;
    b->cap = cap;
    return true;
}

void nn_sb_printf(nn_sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || !sb_room(b, (size_t)k)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)k;
}

void nn_sb_str(nn_sb *b, const char *s) {
    nn_sb_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') nn_sb_printf(b, "\\%c", *p);
        else if (*p == '\n') nn_sb_printf(b, "\\n");
        else if (*p < 0x20) nn_sb_printf(b, "\\u%04x", *p);
        else nn_sb_printf(b, "%c", *p);
    }
    nn_sb_printf(b, "\"");
}

void nn_sb_free(nn_sb *b) { kiln_free(b->s); memset(b, 0, sizeof *b); }

/* ---- reader ---- */
typedef struct blk { struct blk *next; size_t used; char mem[]; } blk;
struct nn_json_doc { blk *blocks; nn_json *root; };

typedef struct parser {
    const char *p, *start;
    nn_json_doc *d;
    char *why;
    size_t why_n;
    bool failed;
} parser;

static void *arena(parser *ps, size_t n) {
    n = (n + 15) & ~(size_t)15;
    blk *b = ps->d->blocks;
    if (!b || b->used + n > 8192) {
        size_t sz = n > 8192 ? n : 8192;
        blk *nb = kiln_malloc(sizeof *nb + sz);
        if (!nb) return NULL;
        nb->next = ps->d->blocks;
        nb->used = 0;
        ps->d->blocks = nb;
        b = nb;
    }
    void *r = b->mem + b->used;
    b->used += n;
    return r;
}

static nn_json *fail(parser *ps, const char *what) {
    if (!ps->failed) snprintf(ps->why, ps->why_n, "%s at byte %zu", what, (size_t)(ps->p - ps->start));
    ps->failed = true;
    return NULL;
}

static void ws(parser *ps) { while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++; }

static int hex4(const char *p) {          /* stops at the first non-hex character (the NUL included) */
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static char *string(parser *ps) {
    const char *q = ++ps->p;            /* after the opening quote */
    size_t n = 0;
    while (*q && *q != '"') { if (*q == '\\' && q[1]) q++; q++; n++; }
    if (!*q) { fail(ps, "unterminated string"); return NULL; }
    char *out = arena(ps, n * 3 + 1), *o = out;     /* \uXXXX gives at most 3 bytes */
    if (!out) { fail(ps, "out of host memory"); return NULL; }
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20) { fail(ps, "control character in a string"); return NULL; }
        if (c != '\\') { *o++ = (char)c; continue; }
        c = (unsigned char)*ps->p++;
        switch (c) {
        case '"': case '\\': case '/': *o++ = (char)c; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            int v = hex4(ps->p);
            if (v < 0) { fail(ps, "bad \\u escape"); return NULL; }
            ps->p += 4;
            if (v < 0x80) *o++ = (char)v;
            else if (v < 0x800) { *o++ = (char)(0xC0 | (v >> 6)); *o++ = (char)(0x80 | (v & 0x3F)); }
            else { *o++ = (char)(0xE0 | (v >> 12)); *o++ = (char)(0x80 | ((v >> 6) & 0x3F)); *o++ = (char)(0x80 | (v & 0x3F)); }
            break;
        }
        default: ps->p--; fail(ps, "bad escape in a string"); return NULL;
        }
    }
    ps->p++;
    *o = 0;
    return out;
}

static nn_json *value(parser *ps, int depth);

static nn_json *list(parser *ps, int depth, bool obj) {
    nn_json *v = arena(ps, sizeof *v), **tail;
    if (!v) return fail(ps, "out of host memory");
    memset(v, 0, sizeof *v);
    v->kind = obj ? NN_J_OBJ : NN_J_ARR;
    tail = &v->child;
    ps->p++;
    ws(ps);
    if (*ps->p == (obj ? '}' : ']')) { ps->p++; return v; }
    for (;;) {
        const char *key = NULL;
        if (obj) {
            ws(ps);
            if (*ps->p != '"') return fail(ps, "expected a string key");
            if (!(key = string(ps))) return NULL;
            ws(ps);
            if (*ps->p != ':') return fail(ps, "expected ':'");
            ps->p++;
        }
        nn_json *e = value(ps, depth + 1);
        if (!e) return NULL;
        e->key = key;
        *tail = e;
        tail = &e->next;
        v->n++;
        ws(ps);
        if (*ps->p == ',') { ps->p++; continue; }
        if (*ps->p == (obj ? '}' : ']')) { ps->p++; return v; }
        return fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static nn_json *value(parser *ps, int depth) {
    if (depth > 64) return fail(ps, "nested more than 64 levels");
    ws(ps);
    char c = *ps->p;
    if (c == '{' || c == '[') return list(ps, depth, c == '{');
    nn_json *v = arena(ps, sizeof *v);
    if (!v) return fail(ps, "out of host memory");
    memset(v, 0, sizeof *v);
    if (c == '"') {
        v->kind = NN_J_STR;
        return (v->s = string(ps)) ? v : NULL;
    }
    static const struct { const char *w; nn_json_kind k; bool b; } words[] = { { "null", NN_J_NULL, false }, { "true", NN_J_BOOL, true }, { "false", NN_J_BOOL, false } };
    for (int i = 0; i < 3; i++)
        if (!strncmp(ps->p, words[i].w, strlen(words[i].w))) { v->kind = words[i].k; v->b = words[i].b; ps->p += strlen(words[i].w); return v; }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const char *q = ps->p + (c == '-');
        if (!(*q >= '0' && *q <= '9')) return fail(ps, "bad number");
        bool frac = false;
        while ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-') { if (*q == '.' || *q == 'e' || *q == 'E') frac = true; q++; }
        char *end;
        errno = 0;
        v->num = strtod(ps->p, &end);
        if (end != q) return fail(ps, "bad number");
        v->kind = NN_J_NUM;
        if (!frac) {
            errno = 0;
            long long x = strtoll(ps->p, &end, 10);
            if (errno != ERANGE && end == q) { v->is_int = true; v->i = x; }
        }
        ps->p = q;
        return v;
    }
    return fail(ps, c ? "unexpected character" : "unexpected end of text");
}

nn_json_doc *nn_json_parse(const char *text, char *why, size_t why_n) {
    nn_json_doc *d = kiln_calloc(1, sizeof *d);
    if (!d) { snprintf(why, why_n, "out of host memory"); return NULL; }
    parser ps = { .p = text ? text : "", .start = text ? text : "", .d = d, .why = why, .why_n = why_n };
    d->root = value(&ps, 0);
    if (d->root) {
        ws(&ps);
        if (*ps.p) d->root = fail(&ps, "text after the value");
    }
    if (!d->root) { nn_json_free(d); return NULL; }
    return d;
}

const nn_json *nn_json_root(const nn_json_doc *d) { return d ? d->root : NULL; }

void nn_json_free(nn_json_doc *d) {
    if (!d) return;
    for (blk *b = d->blocks, *n; b; b = n) { n = b->next; kiln_free(b); }
    kiln_free(d);
}

const nn_json *nn_json_get(const nn_json *o, const char *key) {
    if (!o || o->kind != NN_J_OBJ) return NULL;
    for (const nn_json *e = o->child; e; e = e->next) if (!strcmp(e->key, key)) return e;
    return NULL;
}

const nn_json *nn_json_at(const nn_json *a, int i) {
    if (!a || (a->kind != NN_J_ARR && a->kind != NN_J_OBJ) || i < 0) return NULL;
    const nn_json *e = a->child;
    while (e && i-- > 0) e = e->next;
    return e;
}

const char *nn_json_kind_name(nn_json_kind k) {
    static const char *const n[] = { "null", "a bool", "a number", "a string", "a list", "an object" };
    return (unsigned)k < 6 ? n[k] : "?";
}
