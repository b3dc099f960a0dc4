/* CSV files of numbers as a pipeline source: one example per row, every column but the label
 * column a feature. Two passes over the buffer: the first counts fields per line (every line must
 * have the first row's count) and decides whether the first row is a header, so the arrays are
 * sized from what the file holds; the second parses the numbers. Errors name the file, the line
 * (1-based, as an editor shows it) and the column (1-based, with its header name). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "data/pipeline_internal.h"
#include "data/tabular.h"

typedef struct span { const char *s, *e; } span;

/* The next line of [*p, end) without its '\n' / "\r\n"; false at the end. */
static bool next_line(const char **p, const char *end, span *line) {
    if (*p >= end) return false;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *e = nl ? nl : end;
    line->s = *p;
    line->e = e > *p && e[-1] == '\r' ? e - 1 : e;
    *p = nl ? nl + 1 : end;
    return true;
}

static bool blank(span l) {
    for (const char *c = l.s; c < l.e; c++)
        if (*c != ' ' && *c != '\t') return false;
    return true;
}

static span trim(span f) {
    while (f.s < f.e && (*f.s == ' ' || *f.s == '\t')) f.s++;
    while (f.e > f.s && (f.e[-1] == ' ' || f.e[-1] == '\t')) f.e--;
    return f;
}

/* Splits the next field off *rest (commas outside "..." quotes separate fields; "" inside quotes
 * is a quote). The field is returned trimmed and unquoted (an escaped quote stays doubled). false
 * with *unterminated for a quote that does not close on the line. */
static bool next_field(span *rest, span *field, bool *more, bool *unterminated) {
    const char *c = rest->s;
    bool quoted = false;
    while (c < rest->e && (*c != ',' || quoted)) {
        if (*c == '"') quoted = !quoted;
        c++;
    }
    *unterminated = quoted;
    if (quoted) return false;
    span f = trim((span){ rest->s, c });
    if (f.e - f.s >= 2 && *f.s == '"' && f.e[-1] == '"') { f.s++; f.e--; }
    *field = f;
    *more = c < rest->e;
    rest->s = c < rest->e ? c + 1 : c;
    return true;
}

/* What a field holds: a number for a float32, or why not. */
typedef enum { CELL_OK, CELL_EMPTY, CELL_TEXT, CELL_LONG, CELL_NONFINITE, CELL_RANGE } cell_kind;

/* Parses the field; CELL_OK with *v a finite number that fits a float32. nan, inf and 1e39 are
 * numbers (CELL_NONFINITE, CELL_RANGE), not text: only CELL_TEXT makes a first row a header. */
static cell_kind parse_cell(span f, double *v) {
    char tmp[128];
    size_t len = (size_t)(f.e - f.s);
    if (len == 0) return CELL_EMPTY;
    if (len >= sizeof tmp) return CELL_LONG;
    memcpy(tmp, f.s, len);
    tmp[len] = 0;
    char *end;
    errno = 0;
    *v = strtod(tmp, &end);
    if (end == tmp || *end) return CELL_TEXT;
    if (!isfinite(*v)) return CELL_NONFINITE;
    return fabs(*v) <= FLT_MAX ? CELL_OK : CELL_RANGE;
}

static bool number(span f, double *v) { return parse_cell(f, v) == CELL_OK; }

typedef struct csv_ctx {
    const char *file;
    int64_t cols;
    span *names;         /* header names (NULL without a header) */
} csv_ctx;

static void col_name(const csv_ctx *c, int64_t j, char *buf, size_t n) {
    if (c->names && c->names[j].e > c->names[j].s)
        snprintf(buf, n, "column %lld (\"%.*s\")", (long long)j + 1, (int)(c->names[j].e - c->names[j].s > 40 ? 40 : c->names[j].e - c->names[j].s),
                 c->names[j].s);
    else snprintf(buf, n, "column %lld", (long long)j + 1);
}

static kiln_status cell_error(const csv_ctx *c, int64_t line, int64_t j, span f) {
    char col[96];
    col_name(c, j, col, sizeof col);
    size_t len = (size_t)(f.e - f.s);
    double d;
    static const char *const why[] = { "", "empty field (every cell must be a number)", "is not a number", "is too long for a number",
                                       "is not finite (every cell must be a finite number)",
                                       "is out of float32's range (magnitude at most 3.4e38)" };
    cell_kind k = parse_cell(f, &d);
    if (k == CELL_EMPTY) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld, %s: %s", c->file, (long long)line, col, why[k]);
    return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld, %s: '%.*s%s' %s", c->file, (long long)line, col,
                          (int)(len > 40 ? 40 : len), f.s, len > 40 ? "..." : "", why[k]);
}

/* The label column from o->label_column: a header name, else an index from 0 (negative: from the end). */
static kiln_status label_column(const csv_ctx *c, const char *spec, int64_t *out) {
    if (!spec || !*spec) { *out = c->cols - 1; return KILN_OK; }
    size_t len = strlen(spec);
    for (int64_t j = 0; c->names && j < c->cols; j++)
        if ((size_t)(c->names[j].e - c->names[j].s) == len && !memcmp(c->names[j].s, spec, len)) { *out = j; return KILN_OK; }
    char *end;
    errno = 0;
    long long k = strtoll(spec, &end, 10);
    bool digits = spec[spec[0] == '-'] >= '0' && spec[spec[0] == '-'] <= '9';    /* no " 1", "+1" or "0x1" */
    if (digits && *end == 0 && errno == 0) {
        if (k < 0) k += c->cols;
        if (k < 0 || k >= c->cols)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: label column %s is out of range: the file has %lld columns (indexes 0..%lld, or "
                                  "-1 for the last)", c->file, spec, (long long)c->cols, (long long)c->cols - 1);
        *out = k;
        return KILN_OK;
    }
    if (!c->names)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s has no header row, so the label column '%s' must be an index (0..%lld, -1 for the last)",
                              c->file, spec, (long long)c->cols - 1);
    char list[512];
    size_t k2 = 0;
    for (int64_t j = 0; j < c->cols && k2 + 48 < sizeof list; j++)
        k2 += (size_t)snprintf(list + k2, sizeof list - k2, "%s%.*s", j ? ", " : "", (int)(c->names[j].e - c->names[j].s > 40 ? 40 : c->names[j].e - c->names[j].s), c->names[j].s);
    return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: no column named '%s' in the header (columns: %s)", c->file, spec, list);
}

kiln_status kiln_csv_parse(const char *file, const uint8_t *buf, size_t n, const kiln_csv_opts *o, kiln_labelled *t) {
    memset(t, 0, sizeof *t);
    kiln_csv_opts dflt = { 0 };
    if (!o) o = &dflt;
    const char *begin = (const char *)buf, *end = begin + n;
    if (n >= 3 && !memcmp(begin, "\xEF\xBB\xBF", 3)) begin += 3;     /* UTF-8 byte-order mark */
    csv_ctx c = { .file = file };
    kiln_status st = KILN_OK;
    double *v = NULL;

    /* pass 1: field counts, the header, the number of rows */
    const char *p = begin;
    span line, rest, f;
    bool more, unterminated, header = false;
    int64_t rows = 0, lineno = 0, first_line = 0;
    while (next_line(&p, end, &line)) {
        lineno++;
        if (blank(line)) continue;
        int64_t k = 0;
        bool non_numeric = false;
        if (memchr(line.s, 0, (size_t)(line.e - line.s)))   /* strtod would stop at it: a field cut short */
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld: a NUL byte (a binary or UTF-16 file? save the table as UTF-8 "
                                  "or ASCII text)", file, (long long)lineno);
        rest = line;
        do {
            if (!next_field(&rest, &f, &more, &unterminated))
                return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld: a quote (\") does not close on the line", file, (long long)lineno);
            double d;
            cell_kind ck = first_line ? CELL_OK : parse_cell(f, &d);
            if (ck == CELL_TEXT || ck == CELL_LONG) non_numeric = true;   /* a name: the row is a header */
            k++;
        } while (more);
        if (!first_line) {
            first_line = lineno;
            c.cols = k;
            header = o->header > 0 || (o->header == 0 && non_numeric);
            if (k < 2) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld has one column; a CSV file needs feature columns and a label column "
                                             "(comma-separated)", file, (long long)lineno);
            if (header) continue;
        } else if (k != c.cols)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: line %lld has %lld fields but the first row has %lld", file, (long long)lineno,
                                  (long long)k, (long long)c.cols);
        rows++;
    }
    if (rows == 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: no data rows%s", file, first_line ? " (only a header)" : " (the file is empty)");
    if (header) {
        if (!(c.names = kiln_calloc((size_t)c.cols, sizeof *c.names))) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", file);
        p = begin;
        while (next_line(&p, end, &line) && blank(line)) {}
        rest = line;
        for (int64_t j = 0; j < c.cols; j++) next_field(&rest, &c.names[j], &more, &unterminated);
    }
    int64_t label = 0;
    if ((st = label_column(&c, o->label_column, &label))) goto done;

    /* pass 2: the numbers */
    t->n = rows;
    t->example = KILN_SHAPE(c.cols - 1);
    t->x = kiln_malloc(sizeof(float) * (size_t)rows * (size_t)(c.cols - 1));
    v = kiln_malloc(sizeof(double) * (size_t)rows);
    if (!t->x || !v) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory for %lld rows of %lld columns", file, (long long)rows, (long long)c.cols); goto done; }
    p = begin;
    lineno = 0;
    int64_t r = 0;
    bool skip_header = header;
    while (next_line(&p, end, &line)) {
        lineno++;
        if (blank(line)) continue;
        if (skip_header) { skip_header = false; continue; }
        rest = line;
        float *row = t->x + (size_t)r * (size_t)(c.cols - 1);
        for (int64_t j = 0, k = 0; j < c.cols; j++) {
            double d;
            next_field(&rest, &f, &more, &unterminated);
            if (!number(f, &d)) { st = cell_error(&c, lineno, j, f); goto done; }
            if (j == label) v[r] = d;
            else row[k++] = (float)d;
        }
        r++;
    }
    st = kiln_labelled_set_labels(t, v, o->float_labels, file);
done:
    kiln_free(v);
    kiln_free(c.names);
    if (st) kiln_labelled_free(t);
    return st;
}

kiln_status kiln_data_from_csv(const char *path, const kiln_csv_opts *o, kiln_data **out) {
    if (out) *out = NULL;
    if (!path || !*path || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_from_csv: path and out must be given");
    uint8_t *buf;
    size_t n;
    kiln_status st = kiln_read_whole_file(path, &buf, &n);
    if (st) return st;
    kiln_labelled t;
    st = kiln_csv_parse(path, buf, n, o, &t);
    kiln_free(buf);
    if (st) return st;
    *out = kiln_labelled_source(&t);
    return *out ? KILN_OK : KILN_OUT_OF_MEMORY;
}
