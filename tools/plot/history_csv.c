/* Reads a training history CSV (kiln train --history, Keras' CSVLogger, or any numeric table):
 * comma-separated fields, optionally "quoted", CRLF or LF line ends, blank lines ignored. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "tools/plot/history.h"

#define MAX_COLS 256

/* Splits line in place into at most MAX_COLS fields (quotes removed, "" unescaped); returns the
 * count, or -1 for an unterminated quote, -2 for too many fields. */
static int split(char *line, char **f) {
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == MAX_COLS) return -2;
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

void history_free(history *h) {
    for (int i = 0; h->names && i < h->n_cols; i++) free(h->names[i]);
    free(h->names);
    free(h->values);
    memset(h, 0, sizeof *h);
}

int history_column(const history *h, const char *name) {
    for (int i = 0; i < h->n_cols; i++) if (!strcasecmp(h->names[i], name)) return i;
    return -1;
}

static int fail(history *h, FILE *f, char *line, char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int fail(history *h, FILE *f, char *line, char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    history_free(h);
    free(line);
    if (f) fclose(f);
    return 1;
}

int history_read(const char *path, history *h, char *err, size_t en) {
    memset(h, 0, sizeof *h);
    FILE *f = fopen(path, "r");
    if (!f) return fail(h, NULL, NULL, err, en, "cannot read %s: %s", path, strerror(errno));
    char *line = NULL, *fields[MAX_COLS];
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, cap_rows = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (lineno == 1 && (unsigned char)line[0] == 0xEF && (unsigned char)line[1] == 0xBB && (unsigned char)line[2] == 0xBF)
            memmove(line, line + 3, (size_t)len - 2);          /* a UTF-8 byte-order mark */
        const char *q = line;
        while (*q == ' ' || *q == '\t') q++;
        if (!*q) continue;                                     /* blank line */
        int n = split(line, fields);
        if (n == -1) return fail(h, f, line, err, en, "%s: line %d: a quoted field is not closed", path, lineno);
        if (n == -2) return fail(h, f, line, err, en, "%s: line %d: more than %d fields", path, lineno, MAX_COLS);
        if (!h->names) {                                       /* the first line: header or data */
            h->n_cols = n;
            h->has_header = !all_numbers(fields, n);
            if (!(h->names = calloc((size_t)n, sizeof *h->names))) return fail(h, f, line, err, en, "out of memory");
            for (int i = 0; i < n; i++) {
                char buf[32];
                if (!h->has_header) snprintf(buf, sizeof buf, "column %d", i + 1);
                if (!(h->names[i] = strdup(h->has_header ? fields[i] : buf))) return fail(h, f, line, err, en, "out of memory");
                if (h->has_header && !*fields[i]) return fail(h, f, line, err, en, "%s: line %d (the header): column %d has no name", path, lineno, i + 1);
            }
            if (h->has_header) continue;
        }
        if (n != h->n_cols)
            return fail(h, f, line, err, en, "%s: line %d (data row %d) has %d field%s but the %s has %d", path, lineno, h->n_rows + 1, n,
                        n == 1 ? "" : "s", h->has_header ? "header" : "first row", h->n_cols);
        if (h->n_rows == cap_rows) {
            cap_rows = cap_rows ? cap_rows * 2 : 64;
            double *v = realloc(h->values, sizeof *v * (size_t)cap_rows * (size_t)h->n_cols);
            if (!v) return fail(h, f, line, err, en, "out of memory");
            h->values = v;
        }
        for (int i = 0; i < n; i++)
            if (cell(fields[i], &h->values[(size_t)h->n_rows * (size_t)h->n_cols + (size_t)i]))
                return fail(h, f, line, err, en, "%s: line %d (data row %d), column '%s': '%.40s' is not a number", path, lineno,
                            h->n_rows + 1, h->names[i], fields[i]);
        h->n_rows++;
    }
    if (ferror(f)) return fail(h, f, line, err, en, "%s: read error: %s", path, strerror(errno));
    if (!h->names) return fail(h, f, line, err, en, "%s: the file is empty", path);
    if (!h->n_rows) return fail(h, f, line, err, en, "%s: no data rows after the header", path);
    free(line);
    fclose(f);
    return 0;
}
