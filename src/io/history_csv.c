/* Training history CSV parser (see history_csv.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/core.h"
#include "io/history_csv.h"
#include "io/read_file.h"

/* Splits line in place into at most KILN_HISTORY_MAX_COLS fields (quotes removed, "" unescaped,
 * spaces around fields dropped); returns the count, or -1 for an unterminated quote or text after
 * a closing quote, -2 for too many fields. */
static int split(char *line, char **f) {
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == KILN_HISTORY_MAX_COLS) return -2;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '"') {
            char *w = ++p;
            f[n++] = w;
            for (;;) {
                if (!*p) return -1;
                if (*p == '"' && p[1] == '"') { *w++ = '"'; p += 2; }
                else if (*p == '"') { p++; break; }
                else *w++ = *p++;
            }
            *w = 0;
            while (*p == ' ' || *p == '\t') p++;
            if (*p && *p != ',') return -1;
        } else {
            f[n++] = p;
            while (*p && *p != ',') p++;
            char *e = p;
            while (e > f[n - 1] && (e[-1] == ' ' || e[-1] == '\t')) e--;
            if (*p == ',') { *e = 0; p++; continue; }
            *e = 0;
            return n;
        }
        if (*p == ',') { p++; continue; }
        return n;
    }
}

/* A cell: 0 with *v (NAN for empty, nan, inf: points that are not drawn), or -1 if not a number. */
static int cell(const char *s, double *v) {
    if (!*s || !strcasecmp(s, "nan") || !strcasecmp(s, "-nan")) { *v = NAN; return 0; }
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || *end) return -1;
    *v = isfinite(d) ? d : NAN;
    return 0;
}

static bool all_numbers(char **f, int n) {
    for (int i = 0; i < n; i++) {
        double v;
        if (!*f[i] || cell(f[i], &v)) return false;
    }
    return true;
}

void kiln_history_csv_free(kiln_history_csv *h) {
    if (!h) return;
    for (int i = 0; h->names && i < h->n_cols; i++) kiln_free(h->names[i]);
    kiln_free(h->names);
    kiln_free(h->values);
    kiln_free(h->row_start);
    memset(h, 0, sizeof *h);
}

int kiln_history_csv_column(const kiln_history_csv *h, const char *name) {
    for (int i = 0; i < h->n_cols; i++) if (!strcasecmp(h->names[i], name)) return i;
    return -1;
}

/* Room for one more row. */
static kiln_status grow(kiln_history_csv *h, int *cap, const char *name) {
    if (h->n_rows < *cap) return KILN_OK;
    size_t bytes;
    int nc = *cap ? (*cap > INT32_MAX / 2 ? INT32_MAX : *cap * 2) : 64;
    if (nc <= h->n_rows || __builtin_mul_overflow((size_t)nc, (size_t)h->n_cols * sizeof(double), &bytes))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: too many rows", name);
    double *v = kiln_realloc(h->values, bytes);
    if (v) h->values = v;
    size_t *r = v ? kiln_realloc(h->row_start, sizeof *r * (size_t)nc) : NULL;
    if (r) h->row_start = r;
    if (!v || !r) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory for %d rows", name, nc);
    *cap = nc;
    return KILN_OK;
}

kiln_status kiln_history_csv_parse(const char *name, const char *text, size_t n, kiln_history_csv *h) {
    memset(h, 0, sizeof *h);
    if (!name) name = "history";
    if (!text && n) return kiln_set_error(KILN_INVALID_ARGUMENT, "history_csv_parse: no text");
    const char *nul = n ? memchr(text, 0, n) : NULL;
    if (nul) {
        long long line = 1;
        for (const char *c = text; c < nul; c++) line += *c == '\n';
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld: a NUL byte (a binary file, or not UTF-8 text?)", name, line);
    }
    char *buf = kiln_malloc(n + 1), *fields[KILN_HISTORY_MAX_COLS];
    if (!buf) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", name);
    if (n) memcpy(buf, text, n);
    buf[n] = 0;
    kiln_status st = KILN_OK;
    int cap = 0;
    long long lineno = 0;
    for (size_t at = 0; at < n && !st;) {
        char *line = buf + at, *nl = memchr(line, '\n', n - at);
        size_t start = at, len = nl ? (size_t)(nl - line) : n - at;
        at += len + (nl != NULL);
        line[len] = 0;
        lineno++;
        while (len > 0 && line[len - 1] == '\r') line[--len] = 0;
        if (start == 0 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3;    /* a UTF-8 byte-order mark */
        const char *q = line;
        while (*q == ' ' || *q == '\t') q++;
        if (!*q) continue;                                     /* blank line */
        int k = split(line, fields);
        if (k == -1) { st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld: a quoted field is not closed", name, lineno); break; }
        if (k == -2) { st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld: more than %d fields", name, lineno, KILN_HISTORY_MAX_COLS); break; }
        if (!h->names) {                                       /* the first line: header or data */
            h->has_header = !all_numbers(fields, k);
            if (!(h->names = kiln_calloc((size_t)k, sizeof *h->names))) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", name); break; }
            h->n_cols = k;
            for (int i = 0; i < k && !st; i++) {
                char col[32];
                if (h->has_header && !*fields[i])
                    st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld (the header): column %d has no name", name, lineno, i + 1);
                else if (!h->has_header) snprintf(col, sizeof col, "column %d", i + 1);
                if (!st && !(h->names[i] = kiln_strdup(h->has_header ? fields[i] : col)))
                    st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", name);
            }
            if (st || h->has_header) continue;
        }
        if (k != h->n_cols) {
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld (data row %d) has %d field%s but the %s has %d", name, lineno,
                                h->n_rows + 1, k, k == 1 ? "" : "s", h->has_header ? "header" : "first row", h->n_cols);
            break;
        }
        if ((st = grow(h, &cap, name))) break;
        double *row = h->values + (size_t)h->n_rows * (size_t)h->n_cols;
        for (int i = 0; i < k && !st; i++)
            if (cell(fields[i], &row[i]))
                st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld (data row %d), column '%s': '%.40s' is not a number", name,
                                    lineno, h->n_rows + 1, h->names[i], fields[i]);
        if (!st) h->row_start[h->n_rows++] = start;
    }
    kiln_free(buf);
    if (st) kiln_history_csv_free(h);
    return st;
}

kiln_status kiln_history_csv_read(const char *path, kiln_history_csv *h) {
    memset(h, 0, sizeof *h);
    uint8_t *text;
    size_t n;
    kiln_status st = kiln_file_read_all(path, "history", KILN_HISTORY_MAX_BYTES, &text, &n);
    if (st) return st;
    st = kiln_history_csv_parse(path, (const char *)text, n, h);
    kiln_free(text);
    return st;
}
