/* The data a checkpoint was trained on (issue 28): kiln train records its data options in the model
 * (kiln_model_set_data_spec -> checkpoint metadata kiln.data), and kiln eval / predict without
 * --data use them, saying so. The record is the options as "--opt\nvalue\n..." pairs (a value
 * with a newline is not recorded), paths made absolute so another working directory finds them. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"
#include "kiln/io.h"
#include "tools/cli_data.h"

/* Appends "opt\nvalue\n" to buf; false when it does not fit or the value has a newline. */
static bool put(char *buf, size_t n, size_t *k, const char *opt, const char *value) {
    if (strchr(value, '\n')) return false;
    int w = snprintf(buf + *k, n - *k, "%s\n%s\n", opt, value);
    if (w < 0 || (size_t)w >= n - *k) return false;
    *k += (size_t)w;
    return true;
}

/* value with its path part (cli_data_path) made absolute when the file exists. */
static void absolute(const char *value, const char *path, char *out, size_t n) {
    char real[PATH_MAX];
    if (path && path[0] != '/' && realpath(path, real))
        snprintf(out, n, "%.*s%s", (int)(path - value), value, real);
    else
        snprintf(out, n, "%s", value);
}

void cli_data_record(const args *a, kiln_model *m) {
    char buf[3 * PATH_MAX + 128], v[PATH_MAX + 64];
    size_t k = 0;
    absolute(a->data, cli_data_path(a->data), v, sizeof v);
    bool ok = put(buf, sizeof buf, &k, "--data", v);
    if (ok && a->label_column) ok = put(buf, sizeof buf, &k, "--label-column", a->label_column);
    if (ok && a->test_csv) {
        absolute(a->test_csv, a->test_csv, v, sizeof v);
        ok = put(buf, sizeof buf, &k, "--test-csv", v);
    }
    /* a record that cannot be written whole is left out: eval then needs --data, as before */
    kiln_model_set_data_spec(m, ok ? buf : NULL);
}

int cli_data_from_record(args *a, const char *cmd, const kiln_safetensors *f, char **keep) {
    const char *rec = kiln_safetensors_meta(f, "kiln.data");
    if (a->data_given || !rec || !*rec) return 0;
    size_t n = strlen(rec);
    char *s = malloc(n + 1);
    if (!s) { fprintf(stderr, "kiln %s: out of host memory\n", cmd); return 1; }
    memcpy(s, rec, n + 1);
    const char *data = NULL, *label = NULL, *test = NULL;
    for (char *p = s; *p;) {
        char *opt = p, *nl = strchr(p, '\n'), *val, *end;
        if (!nl) break;
        *nl = 0;
        val = nl + 1;
        if (!(end = strchr(val, '\n'))) break;
        *end = 0;
        p = end + 1;
        if (!strcmp(opt, "--data")) data = val;
        else if (!strcmp(opt, "--label-column")) label = val;
        else if (!strcmp(opt, "--test-csv")) test = val;
        /* options of later kilns are skipped: the ones known here still apply */
    }
    if (!data) {
        free(s);
        fprintf(stderr, "kiln %s: checkpoint %s: metadata 'kiln.data' names no --data (corrupt file?); give --data\n", cmd, a->load);
        return 1;
    }
    a->data = data;
    a->data_given = true;
    if (!a->label_column) a->label_column = label;
    if (!a->test_csv) a->test_csv = test;
    *keep = s;
    printf("Data: %s%s%s%s%s (what %s was trained on; --data uses other data)\n", data, a->label_column ? " --label-column " : "",
           a->label_column ? a->label_column : "", a->test_csv ? " --test-csv " : "", a->test_csv ? a->test_csv : "", a->load);
    return 0;
}
