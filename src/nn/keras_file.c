/* Keras model files with their weights: Keras 3's .keras (a zip of config.json, model.weights.h5
 * and metadata.json), tf.keras 2's legacy .h5 (the model_config attribute and model_weights) and
 * .weights.h5 (weights only). The architecture goes through kiln_model_from_json's reader; each
 * weight is matched to a Kiln layer by the layer's name (Keras 3 files without names: by the key
 * Keras gives the layer), checked against the Kiln variable's shape before anything is read, and
 * assigned in Keras's order, which is Kiln's (kernel, bias; gamma, beta, moving_mean,
 * moving_variance). */
#include <stdio.h>
#include <string.h>
#include "io/keras_h5.h"
#include "io/read_file.h"
#include "data/tabular.h"
#include "nn/nn_keras.h"
#include "nn/nn_keras_file.h"

#define MAX_CONFIG ((uint64_t)256 << 20)
#define MAX_WEIGHTS ((uint64_t)64 << 30)
#define MAX_NESTED_VARS 16            /* weights of one layer of a nested model (BatchNormalization: 4) */

enum { KF_OTHER, KF_ZIP, KF_HDF5 };

static kiln_status no_hdf5(const char *what) {
    return kiln_set_error(KILN_UNSUPPORTED, "%s: this kiln was built without HDF5, which .keras and .h5 files need: "
                          "apt-get install libhdf5-dev and rebuild", what);
}

/* What the file is, from its first bytes (an HDF5 signature may follow a user block). */
static kiln_status sniff(const char *path, const char *what, int *kind) {
    FILE *f;
    uint64_t size;
    kiln_status st = kiln_file_open_read(path, "Keras file", &f, &size);
    if (st) return st;
    uint8_t head[4096];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    *kind = n >= 4 && !memcmp(head, "PK\3\4", 4) ? KF_ZIP : keras_h5_sniff(head, n) ? KF_HDF5 : KF_OTHER;
    if (*kind == KF_OTHER)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: not a Keras model file (a .keras file is a zip, a .h5 file HDF5)%s", what,
                              n ? "" : ": it is empty");
    return keras_h5_available() ? KILN_OK : no_hdf5(what);
}

static kiln_status put(kiln_model *m, const char *name, const kiln_tensor *t) {
    kiln_node *v = m->g ? kiln_graph_find(m->g, name) : NULL;
    if (v && m->s && kiln_node_is_variable(v)) return kiln_session_assign_variable(m->s, v, t);
    return nn_carry_add(m, name, t);      /* assigned when the model's graph is built */
}

static int find_layer(const keras_h5 *h, const char *name, const char *key) {
    for (int i = 0; i < keras_h5_layer_count(h); i++) if (!strcmp(keras_h5_layer_name(h, i), name)) return i;
    /* a Keras 3 file without layer names (before Keras 3.x wrote them): by key, as Keras loads it */
    for (int i = 0; key && i < keras_h5_layer_count(h); i++)
        if (!strcmp(keras_h5_layer_key(h, i), key) && !strcmp(keras_h5_layer_name(h, i), key)) return i;
    return -1;
}

static bool fits(const kiln_layer *l, int j, kiln_shape file) {
    kiln_shape want = l->vars[j].shape;
    if (kiln_shape_equal(file, want)) return true;
    /* Keras's depthwise kernel [kh, kw, channels, multiplier] is Kiln's [kh, kw, 1, channels * multiplier] */
    return l->kind == NN_DWCONV2D && file.rank == 4 && want.rank == 4 && file.dim[0] == want.dim[0] && file.dim[1] == want.dim[1] &&
           file.dim[2] * file.dim[3] == want.dim[3];
}

/* Layer l's weights from file layer fi: its variables in order, or (js) those of fi numbered js[j]. */
static kiln_status load_layer(kiln_model *m, keras_h5 *h, int fi, kiln_layer *l, const char *what, const int *js) {
    if (!js && keras_h5_var_count(h, fi) != l->n_vars)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: layer '%s' (%s) has %d weights in the file but %d in the model", what, l->name,
                              kiln_layer_type(l), keras_h5_var_count(h, fi), l->n_vars);
    for (int jj = 0; jj < l->n_vars; jj++) {
        kiln_shape s;
        char a[96], b[96];
        int j = jj, fj = js ? js[jj] : jj;
        kiln_status st = keras_h5_var_shape(h, fi, fj, &s);
        if (st) return st;
        if (!fits(l, j, s))
            return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: weight '%s' (file: %s) has shape %s in the file but %s in the model", what,
                                  l->vars[j].name, keras_h5_var_name(h, fi, fj), kiln_shape_str(s, a, sizeof a),
                                  kiln_shape_str(l->vars[j].shape, b, sizeof b));
        kiln_tensor *t = kiln_tensor_new(KILN_F32, l->vars[j].shape);
        if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory for weight '%s'", what, l->vars[j].name);
        st = keras_h5_var_read(h, fi, fj, (float *)t->data, kiln_shape_numel(l->vars[j].shape));
        if (!st) st = put(m, l->vars[j].name, t);
        kiln_tensor_free(t);
        if (st) return st;
    }
    return KILN_OK;
}

/* A legacy file keeps a nested model's weights under the nested model's layer, named
 * "<nested>/<layer>/<weight>": layer l's (inlined by Kiln) are those whose path's folder is l's
 * name, all in one file layer; their numbers go in js (l->n_vars of them). -1: none. */
static int find_nested(const keras_h5 *h, const kiln_layer *l, int *js) {
    size_t ln = strlen(l->name);
    for (int fi = 0; fi < keras_h5_layer_count(h); fi++) {
        int n = 0;
        for (int j = 0; j < keras_h5_var_count(h, fi); j++) {
            const char *p = keras_h5_var_path(h, fi, j), *slash = p ? strrchr(p, '/') : NULL;
            if (!slash || (size_t)(slash - p) <= ln || slash[-(ptrdiff_t)ln - 1] != '/' || strncmp(slash - ln, l->name, ln)) continue;
            if (n == l->n_vars) return -1;
            js[n++] = j;
        }
        if (n) return n == l->n_vars ? fi : -1;
    }
    return -1;
}

/* Every weighted layer of m from the file; a weighted layer of the file that m lacks is an error. */
static kiln_status apply(kiln_model *m, keras_h5 *h, const char *what) {
    kiln_layer **order;
    char **keys;
    int n, nf = keras_h5_layer_count(h);
    kiln_status st = nn_keras_order(m, &order, &keys, &n);
    if (st) return st;
    int *used = kiln_calloc((size_t)nf + 1, sizeof *used);      /* weights taken from each file layer */
    if (!used) st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    for (int i = 0; i < n && !st; i++) {
        kiln_layer *l = order[i];
        if (!l->n_vars) continue;
        int js[MAX_NESTED_VARS], fi = find_layer(h, l->name, keras_h5_is_legacy(h) ? NULL : keys[i]);
        bool nested = fi < 0 && keras_h5_is_legacy(h) && l->n_vars <= MAX_NESTED_VARS && (fi = find_nested(h, l, js)) >= 0;
        if (fi < 0) st = kiln_set_error(KILN_NOT_FOUND, "%s: holds no weights for layer '%s' (%s)", what, l->name, kiln_layer_type(l));
        else if (used[fi] && !nested) st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: two layers of the model take layer '%s''s weights", what, keras_h5_layer_name(h, fi));
        else { used[fi] += nested ? l->n_vars : keras_h5_var_count(h, fi); st = load_layer(m, h, fi, l, what, nested ? js : NULL); }
    }
    for (int i = 0; i < nf && !st; i++)
        if (used[i] < keras_h5_var_count(h, i))
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: holds weights for layer '%s', which model '%s' does not have", what,
                                keras_h5_layer_name(h, i), m->name);
    kiln_free(used);
    nn_keras_order_free(order, keys, n);
    return st;
}

/* One member of the zip as a new NUL-terminated buffer, at most max bytes. */
static kiln_status member(const kiln_zip *z, const char *name, uint64_t max, uint8_t **out, size_t *n) {
    kiln_zip_entry e;
    kiln_status st = kiln_zip_find(z, name, &e);
    if (st) return st;
    if (e.size > max)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: %s holds %llu bytes, more than the %llu read", z->file, name,
                              (unsigned long long)e.size, (unsigned long long)max);
    uint8_t *d = NULL, *c;
    if ((st = kiln_zip_extract(z, &e, &d, n))) return st;
    if (!(c = kiln_malloc(*n + 1))) { kiln_free(d); return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", z->file); }
    memcpy(c, d, *n);
    c[*n] = 0;
    kiln_free(d);
    *out = c;
    return KILN_OK;
}

/* The zip's config.json (when config is not NULL) and its weights file, opened. */
static kiln_status open_zip(const char *path, const char *what, char **config, keras_h5 **h) {
    uint8_t *buf = NULL, *w = NULL;
    size_t n = 0, wn = 0, cn = 0;
    kiln_zip z;
    kiln_status st = kiln_file_read_all(path, "Keras file", MAX_WEIGHTS, &buf, &n);
    if (!st) st = kiln_zip_open(&z, what, buf, n);
    if (!st && config) st = member(&z, "config.json", MAX_CONFIG, (uint8_t **)config, &cn);
    if (!st && config && strlen(*config) != cn) st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: config.json holds a NUL byte", what);
    if (!st) st = member(&z, "model.weights.h5", MAX_WEIGHTS, &w, &wn);
    kiln_free(buf);
    if (!st) st = keras_h5_open(NULL, w, wn, what, h);
    kiln_free(w);
    if (st && config) { kiln_free(*config); *config = NULL; }
    return st;
}

kiln_status kiln_model_from_keras_file(const char *path, kiln_model **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_keras_file: NULL out");
    *out = NULL;
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_keras_file: no path");
    char what[4200];
    snprintf(what, sizeof what, "Keras file '%s'", path);
    int kind;
    char *config = NULL;
    keras_h5 *h = NULL;
    kiln_status st = sniff(path, what, &kind);
    if (!st && kind == KF_ZIP) st = open_zip(path, what, &config, &h);
    else if (!st) {
        st = keras_h5_open(path, NULL, 0, what, &h);
        if (!st && !keras_h5_model_config(h))
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: holds weights only, no architecture (a .weights.h5 file): build the model "
                                "from its JSON (kiln_model_from_json_file, --model-file model.json) and load these weights onto it "
                                "(kiln_model_load_keras_weights)", what);
    }
    kiln_model *m = NULL;
    if (!st) st = nn_model_from_json_named(config ? config : keras_h5_model_config(h), what, &m);
    if (!st) st = apply(m, h, what);
    keras_h5_close(h);
    kiln_free(config);
    if (st) { kiln_model_free(m); return st; }
    *out = m;
    return KILN_OK;
}

kiln_status kiln_model_load_keras_weights(kiln_model *m, const char *path) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_load_keras_weights: no path");
    if (m->functional && !m->finalized)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_load_keras_weights: functional model '%s' has no outputs yet", m->name);
    char what[4200];
    snprintf(what, sizeof what, "Keras file '%s'", path);
    int kind;
    keras_h5 *h = NULL;
    if ((st = sniff(path, what, &kind))) return st;
    st = kind == KF_ZIP ? open_zip(path, what, NULL, &h) : keras_h5_open(path, NULL, 0, what, &h);
    if (!st) st = apply(m, h, what);
    keras_h5_close(h);
    return st;
}

bool kiln_keras_files_available(void) { return keras_h5_available(); }
