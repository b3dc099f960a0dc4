/* The ONNX backend node tests (libonnx-testdata: DIR/test_NAME/model.onnx with
 * test_data_set_K/input_I.pb and output_*.pb) run through kiln_graph_from_onnx on one backend.
 * Each test is passed (every data set's outputs within |a - b| <= atol + rtol |b|, rtol 1e-3,
 * atol 1e-7, as ONNX's backend test compares; integers and booleans exactly), failed (a wrong
 * value, or an error other than "unsupported"), or unsupported (KILN_UNSUPPORTED: an op,
 * attribute or element type Kiln lacks, with the reason).
 *
 *   onnx_node_tests [--backend cpu|cuda|ref] [--table FILE] [--verbose] DIR [NAME_FILTER]
 *
 * Prints one line per test that did not pass (and, with --verbose, per passed one), then the
 * counts; --table writes the counts per op type. Exit status 0 when none failed. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "onnx/onnx_internal.h"

enum { PASS, FAIL, UNSUP };
static const char *const verdict_name[] = { "PASS", "FAIL", "UNSUPPORTED" };

typedef struct result { char name[256]; int verdict; char why[1200]; char ops[512]; } result;

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The sorted entries of dir whose names start with prefix (caller frees). */
static int list_dir(const char *dir, const char *prefix, char ***out) {
    DIR *d = opendir(dir);
    int n = 0, cap = 0;
    char **v = NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix))) continue;
        if (n == cap) { cap = cap ? 2 * cap : 64; v = realloc(v, (size_t)cap * sizeof *v); }
        v[n++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    if (n) qsort(v, (size_t)n, sizeof *v, by_name);
    *out = v;
    return n;
}

static void free_list(char **v, int n) { for (int i = 0; i < n; i++) free(v[i]); free(v); }

static bool close_enough(const kiln_tensor *got, const kiln_tensor *want, char *why, size_t n) {
    char a[96], b[96];
    if (got->dtype != want->dtype) { snprintf(why, n, "output is %s, expected %s", kiln_dtype_name(got->dtype), kiln_dtype_name(want->dtype)); return false; }
    if (!kiln_shape_equal(got->shape, want->shape)) {
        snprintf(why, n, "output shape %s, expected %s", kiln_shape_str(got->shape, a, sizeof a), kiln_shape_str(want->shape, b, sizeof b));
        return false;
    }
    int64_t k = kiln_shape_numel(want->shape);
    bool fl = kiln_dtype_is_float(want->dtype);
    for (int64_t i = 0; i < k; i++) {
        double x = kiln_tensor_get(got, i), y = kiln_tensor_get(want, i);
        bool ok = fl ? (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= 1e-7 + 1e-3 * fabs(y) : x == y;
        if (!ok) { snprintf(why, n, "element %lld is %.9g, expected %.9g", (long long)i, x, y); return false; }
    }
    return true;
}

static void one_test(const char *root, const char *name, kiln_backend_kind backend, result *res) {
    char path[8400], dir[4096], model[4200];
    snprintf(res->name, sizeof res->name, "%s", name);
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    snprintf(path, sizeof path, "%s", model);
    res->verdict = FAIL;
    Onnx__ModelProto *m = NULL;
    if (ox_model_read(path, &m)) { snprintf(res->why, sizeof res->why, "%s", kiln_last_error()); return; }
    size_t k = 0;
    for (size_t i = 0; i < m->graph->n_node && k + 40 < sizeof res->ops; i++) {      /* its op types, once each */
        char tag[64];
        snprintf(tag, sizeof tag, " %s ", m->graph->node[i]->op_type);
        if (!strstr(res->ops, tag)) k += (size_t)snprintf(res->ops + k, sizeof res->ops - k, "%s%s ", k ? "" : " ", m->graph->node[i]->op_type);
    }
    int n_in = 0;
    char names[16][512];
    kiln_dtype dts[16];
    kiln_shape shs[16];
    for (const char *nm = ""; n_in < 16 && ox_input_shape(m, path, n_in, &dts[n_in], &shs[n_in], &nm) != KILN_NOT_FOUND; nm = "")
        snprintf(names[n_in++], sizeof names[0], "%s", nm);
    for (int i = 0; i < n_in; i++)
        if (ox_input_shape(m, path, i, &dts[i], &shs[i], NULL) == KILN_UNSUPPORTED) {
            res->verdict = UNSUP;
            snprintf(res->why, sizeof res->why, "%s", kiln_last_error());
            ox_model_free(m);
            return;
        }
    int n_out = (int)m->graph->n_output;
    for (int i = 0; i < n_out; i++) {
        const Onnx__TypeProto *tp = m->graph->output[i]->type;
        if (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
            res->verdict = UNSUP;
            snprintf(res->why, sizeof res->why, "output '%s' is not a tensor (sequences, maps and optionals are not supported)", m->graph->output[i]->name);
            ox_model_free(m);
            return;
        }
    }
    ox_model_free(m);
    char **sets;
    int n_sets = list_dir(dir, "test_data_set_", &sets);
    if (!n_sets) { snprintf(res->why, sizeof res->why, "no test_data_set_* in %.1100s", dir); return; }
    res->verdict = PASS;
    for (int s = 0; s < n_sets && res->verdict == PASS; s++) {
        kiln_tensor *in[16] = { 0 }, *want[16] = { 0 }, *got[16] = { 0 };
        kiln_graph *g = kiln_graph_new();
        kiln_session *sess = NULL;
        kiln_onnx_graph *r = NULL;
        kiln_onnx_input binds[16];
        kiln_feed feeds[16];
        kiln_node *fetch[16];
        kiln_status st = KILN_OK;
        int n_feeds = 0;
        for (int i = 0; i < n_in && !st; i++) {
            snprintf(path, sizeof path, "%s/%s/input_%d.pb", dir, sets[s], i);
            st = ox_tensor_read_file(path, &in[i], NULL);
            if (!st) {         /* Kiln has no zero-size tensors: such an input is bound as a known value only */
                kiln_node *p = kiln_shape_numel(in[i]->shape) ? kiln_placeholder(g, names[i], in[i]->dtype, in[i]->shape) : NULL;
                binds[i] = (kiln_onnx_input){ .name = names[i], .node = p, .value = in[i] };
                if (p) feeds[n_feeds++] = (kiln_feed){ .node = p, .value = in[i] };
            }
        }
        for (int i = 0; i < n_out && !st; i++) {
            snprintf(path, sizeof path, "%s/%s/output_%d.pb", dir, sets[s], i);
            st = ox_tensor_read_file(path, &want[i], NULL);
        }
        if (st) {
            res->verdict = st == KILN_UNSUPPORTED ? UNSUP : FAIL;
            snprintf(res->why, sizeof res->why, "%s", kiln_last_error());
        } else if ((st = kiln_graph_from_onnx(g, model, &(kiln_onnx_import_opts){ .inputs = binds, .n_inputs = n_in }, &r))) {
            res->verdict = st == KILN_UNSUPPORTED ? UNSUP : FAIL;
            snprintf(res->why, sizeof res->why, "%s", kiln_last_error());
        } else if (!(sess = kiln_session_new(g, &(kiln_session_opts){ .backend = backend, .num_threads = 1 })) ||
                   kiln_onnx_graph_init_session(r, sess) != KILN_OK) {
            res->verdict = FAIL;
            snprintf(res->why, sizeof res->why, "session: %s", kiln_last_error());
        } else {
            for (int i = 0; i < n_out; i++) fetch[i] = kiln_onnx_graph_output(r, i);
            if ((st = kiln_session_run(sess, feeds, n_feeds, fetch, got, n_out, NULL, 0))) {
                res->verdict = st == KILN_UNSUPPORTED ? UNSUP : FAIL;
                snprintf(res->why, sizeof res->why, "run: %s", kiln_last_error());
            }
            for (int i = 0; i < n_out && !st && res->verdict == PASS; i++) {
                char why[256];
                if (!close_enough(got[i], want[i], why, sizeof why)) {
                    res->verdict = FAIL;
                    snprintf(res->why, sizeof res->why, "%s, output %d: %s", sets[s], i, why);
                }
            }
        }
        for (int i = 0; i < 16; i++) { kiln_tensor_free(in[i]); kiln_tensor_free(want[i]); kiln_tensor_free(got[i]); }
        kiln_session_free(sess);
        kiln_onnx_graph_free(r);
        kiln_graph_free(g);
    }
    free_list(sets, n_sets);
}

/* Counts per op type: a test whose nodes are all of one op type counts for it; the others (function
 * bodies "_expanded", chains) under "(several op types)". */
static void key_of(const result *r, char *key, size_t n) {
    char ops[512], *save = NULL;
    snprintf(ops, sizeof ops, "%s", r->ops);
    char *first = strtok_r(ops, " ", &save);
    snprintf(key, n, "%s", !first ? "(no nodes)" : strtok_r(NULL, " ", &save) ? "(several op types)" : first);
}

static void write_table(FILE *f, const result *rs, int n, const char *backend) {
    int tot[3] = { 0 };
    for (int i = 0; i < n; i++) tot[rs[i].verdict]++;
    fprintf(f, "ONNX backend node tests (libonnx-testdata %s) on Kiln's %s backend\n", "1.12", backend);
    fprintf(f, "compare: |kiln - expected| <= 1e-7 + 1e-3 |expected| (integers, booleans exact)\n\n");
    fprintf(f, "tests: %d   passed: %d   failed: %d   unsupported: %d\n\n", n, tot[PASS], tot[FAIL], tot[UNSUP]);
    fprintf(f, "%-28s %7s %7s %12s\n", "op type of the test", "passed", "failed", "unsupported");
    char **types = NULL;
    int nt = 0;
    for (int i = 0; i < n; i++) {
        char key[512];
        key_of(&rs[i], key, sizeof key);
        bool seen = false;
        for (int j = 0; j < nt; j++) seen |= !strcmp(types[j], key);
        if (!seen) { types = realloc(types, (size_t)(nt + 1) * sizeof *types); types[nt++] = strdup(key); }
    }
    if (nt) qsort(types, (size_t)nt, sizeof *types, by_name);
    for (int j = 0; j < nt; j++) {
        int c[3] = { 0 };
        for (int i = 0; i < n; i++) {
            char key[512];
            key_of(&rs[i], key, sizeof key);
            if (!strcmp(key, types[j])) c[rs[i].verdict]++;
        }
        fprintf(f, "%-28s %7d %7d %12d\n", types[j], c[PASS], c[FAIL], c[UNSUP]);
        free(types[j]);
    }
    free(types);
    fprintf(f, "\nnot passed:\n");
    for (int i = 0; i < n; i++)
        if (rs[i].verdict != PASS) {
            const char *why = strstr(rs[i].why, "model.onnx: ");      /* the test's name says which file */
            fprintf(f, "%s %s: %s\n", verdict_name[rs[i].verdict], rs[i].name, why ? why + 12 : rs[i].why);
        }
}

int main(int argc, char **argv) {
    const char *root = NULL, *filter = NULL, *table = NULL, *bname = "cpu";
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) bname = argv[++i];
        else if (!strcmp(argv[i], "--table") && i + 1 < argc) table = argv[++i];
        else if (!strcmp(argv[i], "--verbose")) verbose = true;
        else if (!root) root = argv[i];
        else filter = argv[i];
    }
    if (!root) { fprintf(stderr, "usage: onnx_node_tests [--backend cpu|cuda|ref] [--table FILE] [--verbose] DIR [NAME_FILTER]\n"); return 2; }
    kiln_backend_kind backend = !strcmp(bname, "cuda") ? KILN_BACKEND_CUDA : !strcmp(bname, "ref") ? KILN_BACKEND_REF : KILN_BACKEND_CPU;
    kiln_set_num_threads(1);
    char **names;
    int n = list_dir(root, "test_", &names);
    result *rs = calloc((size_t)(n ? n : 1), sizeof *rs);
    int k = 0, tot[3] = { 0 };
    for (int i = 0; i < n; i++) {
        if (filter && !strstr(names[i], filter)) continue;
        one_test(root, names[i], backend, &rs[k]);
        tot[rs[k].verdict]++;
        if (verbose || rs[k].verdict != PASS) printf("%s %s%s%s\n", verdict_name[rs[k].verdict], rs[k].name, rs[k].why[0] ? ": " : "", rs[k].why);
        k++;
    }
    printf("onnx node tests on %s: %d tests, passed %d, failed %d, unsupported %d\n", bname, k, tot[PASS], tot[FAIL], tot[UNSUP]);
    if (table) {
        FILE *f = fopen(table, "w");
        if (!f) { perror(table); return 2; }
        write_table(f, rs, k, bname);
        fclose(f);
    }
    free_list(names, n);
    free(rs);
    return tot[FAIL] ? 1 : 0;
}
