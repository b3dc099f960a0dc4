/* Keras weights in HDF5 (see keras_h5.h). libhdf5 parses the file; this file checks everything
 * it hands back (ranks, element counts against the caller's buffer, string sizes, counts) and
 * keeps libhdf5's error stack off stderr, turning it into one message. */
#include <stdio.h>
#include <string.h>
#include "core/core.h"
#include "io/keras_h5.h"
#include "io/read_file.h"

static const uint8_t SIG[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };

bool keras_h5_sniff(const uint8_t *buf, size_t n) {
    for (size_t at = 0; at + 8 <= n && at <= ((size_t)1 << 30); at = at ? at * 2 : 512)
        if (!memcmp(buf + at, SIG, 8)) return true;
    return false;
}

#ifndef KILN_HAVE_HDF5
static kiln_status none(void) {
    return kiln_set_error(KILN_UNSUPPORTED, "this kiln was built without HDF5, which .keras and .h5 files need: "
                          "apt-get install libhdf5-dev and rebuild");
}
bool keras_h5_available(void) { return false; }
kiln_status keras_h5_open(const char *path, const uint8_t *image, size_t n, const char *what, keras_h5 **out) { *out = NULL; return none(); }
void keras_h5_close(keras_h5 *h) { (void)h; }
const char *keras_h5_model_config(const keras_h5 *h) { return NULL; }
bool keras_h5_is_legacy(const keras_h5 *h) { return false; }
int keras_h5_layer_count(const keras_h5 *h) { return 0; }
const char *keras_h5_layer_name(const keras_h5 *h, int i) { return NULL; }
const char *keras_h5_layer_key(const keras_h5 *h, int i) { return NULL; }
int keras_h5_var_count(const keras_h5 *h, int i) { return 0; }
const char *keras_h5_var_name(const keras_h5 *h, int i, int j) { return NULL; }
const char *keras_h5_var_path(const keras_h5 *h, int i, int j) { return NULL; }
kiln_status keras_h5_var_shape(keras_h5 *h, int i, int j, kiln_shape *s) { return none(); }
kiln_status keras_h5_var_read(keras_h5 *h, int i, int j, float *dst, int64_t n) { return none(); }
kiln_status keras_h5_write_image(const keras_h5_layer_out *l, int n, const char *model_name, const char *what, uint8_t **img, size_t *img_n) {
    return none();
}
#else
#include <hdf5.h>

#define MAX_LAYERS (1 << 20)
#define MAX_STR 4096                     /* a layer or weight name */
#define MAX_CONFIG ((size_t)256 << 20)   /* model_config, as model files */

typedef struct h5layer { char *name, *key; int n_vars; char **vars; char **paths; } h5layer;
struct keras_h5 {
    hid_t file;
    char what[512];
    char *config;
    bool legacy;
    h5layer *l;
    int n, cap;
};

bool keras_h5_available(void) { return true; }

static herr_t first_msg(unsigned n, const H5E_error2_t *e, void *data) {
    if (n == 0 && e->desc) snprintf((char *)data, 256, "%s", e->desc);
    return 0;
}

/* An error naming the file, with libhdf5's innermost message when it left one. */
static kiln_status fail(const char *what, kiln_status st, const char *fmt, const char *arg) {
    char why[256] = "", msg[512];
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_msg, why);
    H5Eclear2(H5E_DEFAULT);
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    return kiln_set_error(st, "%s: %s%s%s%s", what, msg, *why ? " (HDF5: " : "", why, *why ? ")" : "");
}

static void quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

static char *dup_n(const char *s, size_t n) {
    char *d = kiln_malloc(n + 1);
    if (d) { memcpy(d, s, n); d[n] = 0; }
    return d;
}

/* A string attribute (scalar or 1-D; fixed-length or variable-length) as *n strings. */
static kiln_status read_strings(hid_t obj, const char *attr, size_t max, const char *what, char ***out, int *n) {
    *out = NULL;
    *n = 0;
    hid_t a = H5Aopen(obj, attr, H5P_DEFAULT);
    if (a < 0) return fail(what, KILN_IO_ERROR, "cannot read attribute '%s'", attr);
    hid_t t = H5Aget_type(a), s = H5Aget_space(a);
    kiln_status st = KILN_OK;
    hssize_t count = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
    int rank = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
    if (count == 0 && rank == 1) {          /* h5py writes an empty list as an empty float array */
        H5Tclose(t);
        H5Sclose(s);
        H5Aclose(a);
        *out = kiln_calloc(1, sizeof **out);
        return *out ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    if (t < 0 || count < 0 || rank < 0 || rank > 1 || H5Tget_class(t) != H5T_STRING || count > MAX_LAYERS)
        st = fail(what, KILN_IO_ERROR, "attribute '%s' is not a list of strings", attr);
    char **v = st ? NULL : kiln_calloc((size_t)count + 1, sizeof *v);
    if (!st && !v) st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    if (!st && H5Tis_variable_str(t) > 0) {
        char **raw = kiln_calloc((size_t)count + 1, sizeof *raw);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(t));
        if (!raw || H5Aread(a, mt, raw) < 0) st = fail(what, KILN_IO_ERROR, "cannot read attribute '%s'", attr);
        for (hssize_t i = 0; i < count && !st; i++)
            if (!(v[i] = dup_n(raw[i] ? raw[i] : "", raw[i] ? strnlen(raw[i], max) : 0))) st = KILN_OUT_OF_MEMORY;
        if (raw && !st) H5Dvlen_reclaim(mt, s, H5P_DEFAULT, raw);
        H5Tclose(mt);
        kiln_free(raw);
    } else if (!st) {
        size_t w = H5Tget_size(t);
        char *raw = w && w <= max && (size_t)count * w <= MAX_CONFIG ? kiln_malloc((size_t)count * w + 1) : NULL;
        if (!raw) st = fail(what, KILN_IO_ERROR, "attribute '%s' has strings of an odd size", attr);
        else if (H5Aread(a, t, raw) < 0) st = fail(what, KILN_IO_ERROR, "cannot read attribute '%s'", attr);
        for (hssize_t i = 0; i < count && !st; i++)
            if (!(v[i] = dup_n(raw + i * w, strnlen(raw + i * w, w)))) st = KILN_OUT_OF_MEMORY;
        kiln_free(raw);
    }
    if (st == KILN_OUT_OF_MEMORY) kiln_set_error(st, "%s: out of host memory", what);
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    H5Aclose(a);
    if (st) {
        for (int i = 0; v && i < count; i++) kiln_free(v[i]);
        kiln_free(v);
        return st;
    }
    *out = v;
    *n = (int)count;
    return KILN_OK;
}

static void free_strings(char **v, int n) {
    for (int i = 0; v && i < n; i++) kiln_free(v[i]);
    kiln_free(v);
}

static kiln_status add_layer(keras_h5 *h, const char *name, const char *key) {
    if (h->n == MAX_LAYERS) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: more than %d layers", h->what, MAX_LAYERS);
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 16;
        h5layer *l = kiln_realloc(h->l, (size_t)cap * sizeof *l);
        if (!l) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", h->what);
        h->l = l;
        h->cap = cap;
    }
    h5layer *l = &h->l[h->n];
    memset(l, 0, sizeof *l);
    l->name = kiln_strdup(name);
    l->key = kiln_strdup(key);
    h->n++;
    return l->name && l->key ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", h->what);
}

static kiln_status add_var(keras_h5 *h, const char *name, const char *path) {
    h5layer *l = &h->l[h->n - 1];
    char **v = kiln_realloc(l->vars, (size_t)(l->n_vars + 1) * sizeof *v), **p;
    if (v) l->vars = v;
    p = v ? kiln_realloc(l->paths, (size_t)(l->n_vars + 1) * sizeof *p) : NULL;
    if (p) l->paths = p;
    if (!v || !p) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", h->what);
    l->vars[l->n_vars] = kiln_strdup(name);
    l->paths[l->n_vars] = kiln_strdup(path);
    l->n_vars++;
    return l->vars[l->n_vars - 1] && l->paths[l->n_vars - 1] ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", h->what);
}

typedef struct names { char **v; int n, cap; } names;
static herr_t collect(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    names *ns = data;
    if (ns->n == MAX_LAYERS) return -1;
    if (ns->n == ns->cap) {
        int cap = ns->cap ? ns->cap * 2 : 16;
        char **v = kiln_realloc(ns->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        ns->v = v;
        ns->cap = cap;
    }
    return (ns->v[ns->n++] = dup_n(name, strnlen(name, MAX_STR))) ? 0 : -1;
}

/* Keras 3: layers/<key>/vars/<i>; the vars group's "name" attribute names the layer. A nested
 * model keeps its layers under layers/<key>/layers/<key2>: indexed as layers of their own, with
 * key "<key>/layers/<key2>" (Kiln inlines the nested model, so its layers are the model's). */
#define KEY_MAX (2 * MAX_STR)             /* a key path, nested included */
static kiln_status index_keras3_layer(keras_h5 *h, hid_t g, const char *key, int depth) {
    char path[KEY_MAX + 64], p[KEY_MAX + 96];
    int kl = (int)strnlen(key, KEY_MAX);
    kiln_status st = KILN_OK;
    snprintf(path, sizeof path, "%.*s/vars", kl, key);
    char **nm = NULL;
    int nn = 0;
    hid_t vg = H5Lexists(g, key, H5P_DEFAULT) > 0 && H5Lexists(g, path, H5P_DEFAULT) > 0 ? H5Gopen2(g, path, H5P_DEFAULT) : -1;
    H5Eclear2(H5E_DEFAULT);
    if (vg >= 0 && H5Aexists(vg, "name") > 0) st = read_strings(vg, "name", MAX_STR, h->what, &nm, &nn);
    if (!st) st = add_layer(h, nn == 1 ? nm[0] : key, key);
    free_strings(nm, nn);
    if (vg >= 0) H5Gclose(vg);
    /* a recurrent layer's weights are its cell's; Bidirectional's, its two layers' cells';
     * MultiHeadAttention's, its four EinsumDense sub-layers' in Kiln's order (query, key, value,
     * output; Keras 3 keys them by its properties, "_query_dense" where a version lacked those) */
    static const char *const sub[] = { "vars", "cell/vars", "forward_layer/cell/vars", "backward_layer/cell/vars",
                                       "query_dense/vars", "_query_dense/vars", "key_dense/vars", "_key_dense/vars",
                                       "value_dense/vars", "_value_dense/vars", "output_dense/vars", "_output_dense/vars" };
    for (size_t q = 0; q < sizeof sub / sizeof *sub && !st; q++) {
        snprintf(path, sizeof path, "%.*s/%s", kl, key, sub[q]);
        bool there = true;
        for (char *sl = strchr(path, '/'); sl && there; sl = strchr(sl + 1, '/')) {    /* each level, so HDF5 is not asked past a missing one */
            *sl = 0;
            there = H5Lexists(g, path, H5P_DEFAULT) > 0;
            *sl = '/';
        }
        vg = there && H5Lexists(g, path, H5P_DEFAULT) > 0 ? H5Gopen2(g, path, H5P_DEFAULT) : -1;
        H5Eclear2(H5E_DEFAULT);
        for (int j = 0; vg >= 0 && !st && j < MAX_LAYERS; j++) {
            char k[16];
            snprintf(k, sizeof k, "%d", j);
            if (H5Lexists(vg, k, H5P_DEFAULT) <= 0) break;
            snprintf(p, sizeof p, "layers/%.*s/%s", (int)strnlen(path, KEY_MAX + 40), path, k);
            char nm[64];                  /* "0", or within a sub-layer "query_dense/vars/0" */
            snprintf(nm, sizeof nm, "%s%s%s", q ? sub[q] : "", q ? "/" : "", k);
            st = add_var(h, nm, p);
        }
        if (vg >= 0) H5Gclose(vg);
    }
    snprintf(path, sizeof path, "%.*s/layers", kl, key);
    if (st || depth > 0 || H5Lexists(g, path, H5P_DEFAULT) <= 0) { H5Eclear2(H5E_DEFAULT); return st; }   /* one level, as Kiln inlines */
    names ns = { 0 };
    hid_t lg = H5Gopen2(g, path, H5P_DEFAULT);
    if (lg < 0 || H5Literate(lg, H5_INDEX_NAME, H5_ITER_INC, NULL, collect, &ns) < 0) st = fail(h->what, KILN_IO_ERROR, "cannot list the layers of nested model '%s'", key);
    if (lg >= 0) H5Gclose(lg);
    for (int i = 0; i < ns.n && !st; i++) {
        snprintf(p, sizeof p, "%.*s/layers/%.*s", kl, key, (int)strnlen(ns.v[i], MAX_STR), ns.v[i]);
        st = index_keras3_layer(h, g, p, depth + 1);
    }
    free_strings(ns.v, ns.n);
    return st;
}
static kiln_status index_keras3(keras_h5 *h) {
    names ns = { 0 };
    hid_t g = H5Gopen2(h->file, "layers", H5P_DEFAULT);
    kiln_status st = g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, collect, &ns) < 0
        ? fail(h->what, KILN_IO_ERROR, "cannot list its layers group", NULL) : KILN_OK;
    for (int i = 0; i < ns.n && !st; i++) st = index_keras3_layer(h, g, ns.v[i], 0);
    if (g >= 0) H5Gclose(g);
    free_strings(ns.v, ns.n);
    return st;
}

/* tf.keras 2 / Keras 3's legacy h5: layer_names, then each layer's weight_names. */
static kiln_status index_legacy(keras_h5 *h, hid_t root, const char *prefix) {
    char **ln = NULL;
    int nl = 0;
    kiln_status st = read_strings(root, "layer_names", MAX_STR, h->what, &ln, &nl);
    for (int i = 0; i < nl && !st; i++) {
        char **wn = NULL;
        int nw = 0;
        hid_t g = H5Lexists(root, ln[i], H5P_DEFAULT) > 0 ? H5Gopen2(root, ln[i], H5P_DEFAULT) : -1;
        if (g < 0) { st = fail(h->what, KILN_IO_ERROR, "layer_names lists '%s' but the file has no such group", ln[i]); break; }
        if (H5Aexists(g, "weight_names") > 0) st = read_strings(g, "weight_names", MAX_STR, h->what, &wn, &nw);
        if (!st) st = add_layer(h, ln[i], ln[i]);
        for (int j = 0; j < nw && !st; j++) {
            char p[2 * MAX_STR + 64];
            snprintf(p, sizeof p, "%s%s/%s", prefix, ln[i], wn[j]);
            const char *base = strrchr(wn[j], '/');
            char nm[MAX_STR];
            snprintf(nm, sizeof nm, "%s", base ? base + 1 : wn[j]);
            char *colon = strrchr(nm, ':');
            if (colon) *colon = 0;            /* "kernel:0" */
            st = add_var(h, nm, p);
        }
        free_strings(wn, nw);
        H5Gclose(g);
    }
    free_strings(ln, nl);
    return st;
}

static kiln_status index_file(keras_h5 *h) {
    kiln_status st = KILN_OK;
    if (H5Aexists(h->file, "model_config") > 0) {
        char **c = NULL;
        int n = 0;
        if ((st = read_strings(h->file, "model_config", MAX_CONFIG, h->what, &c, &n))) return st;
        if (n == 1) { h->config = c[0]; c[0] = NULL; }
        free_strings(c, n);
    }
    H5Eclear2(H5E_DEFAULT);
    if (H5Lexists(h->file, "layers", H5P_DEFAULT) > 0) return index_keras3(h);
    h->legacy = true;
    if (H5Lexists(h->file, "model_weights", H5P_DEFAULT) > 0) {
        hid_t g = H5Gopen2(h->file, "model_weights", H5P_DEFAULT);
        if (g < 0) return fail(h->what, KILN_IO_ERROR, "cannot open model_weights", NULL);
        st = index_legacy(h, g, "model_weights/");
        H5Gclose(g);
        return st;
    }
    if (H5Aexists(h->file, "layer_names") > 0) return index_legacy(h, h->file, "");
    H5Eclear2(H5E_DEFAULT);
    return kiln_set_error(KILN_IO_ERROR, "%s: an HDF5 file but not Keras weights (no layers group, model_weights group or "
                          "layer_names attribute)", h->what);
}

static kiln_status open_image(const uint8_t *image, size_t n, const char *what, keras_h5 **out);

static uint64_t le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* libhdf5 1.10 copies a global heap object (where variable-length strings live: model_config, the
 * layer names) by the size its header claims without checking it against the heap collection, so a
 * damaged size overruns memory. Every collection ("GCOL", version 1) is walked here first and must
 * hold its objects. */
static bool heaps_sound(const uint8_t *b, size_t n) {
    for (size_t off = 0; off + 16 <= n; off++) {
        if (b[off] != 'G' || memcmp(b + off, "GCOL\1\0\0\0", 8)) continue;
        uint64_t size = le64(b + off + 8);
        if (size < 16 || size > n - off) return false;
        size_t p = off + 16, end = off + (size_t)size;
        while (end - p >= 16) {
            uint64_t len = le64(b + p + 8);
            if (!(b[p] | b[p + 1])) break;                 /* object 0: the free space, last */
            if (len > end - p - 16) return false;
            p += 16 + (size_t)((len + 7) & ~(uint64_t)7);
            if (p > end) return false;
        }
    }
    return true;
}

kiln_status keras_h5_open(const char *path, const uint8_t *image, size_t n, const char *what, keras_h5 **out) {
    *out = NULL;
    if (!path) return open_image(image, n, what, out);
    uint8_t *buf = NULL;
    size_t bn = 0;
    kiln_status st = kiln_file_read_all(path, "Keras file", (uint64_t)64 << 30, &buf, &bn);
    if (!st) st = open_image(buf, bn, what, out);
    kiln_free(buf);
    return st;
}

static kiln_status open_image(const uint8_t *image, size_t n, const char *what, keras_h5 **out) {
    static unsigned seq;
    if (!heaps_sound(image, n))
        return kiln_set_error(KILN_IO_ERROR, "%s: a damaged HDF5 file (a global heap object runs past its collection)", what);
    quiet();
    keras_h5 *h = kiln_calloc(1, sizeof *h);
    if (!h) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    snprintf(h->what, sizeof h->what, "%s", what);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    char name[64];
    snprintf(name, sizeof name, "kiln-keras-image-%u", seq++);
    H5Pset_fapl_core(fapl, 1 << 20, 0);     /* the image in memory (core driver), nothing written back */
    H5Pset_file_image(fapl, (void *)image, n);
    h->file = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    kiln_status st = h->file < 0 ? fail(what, KILN_IO_ERROR, "not an HDF5 file Kiln can read; is it damaged or truncated?", NULL) : index_file(h);
    if (st) { keras_h5_close(h); return st; }
    *out = h;
    return KILN_OK;
}

void keras_h5_close(keras_h5 *h) {
    if (!h) return;
    for (int i = 0; i < h->n; i++) {
        free_strings(h->l[i].vars, h->l[i].n_vars);
        free_strings(h->l[i].paths, h->l[i].n_vars);
        kiln_free(h->l[i].name);
        kiln_free(h->l[i].key);
    }
    kiln_free(h->l);
    kiln_free(h->config);
    if (h->file >= 0) H5Fclose(h->file);
    H5Eclear2(H5E_DEFAULT);
    kiln_free(h);
}

const char *keras_h5_model_config(const keras_h5 *h) { return h->config; }
bool keras_h5_is_legacy(const keras_h5 *h) { return h->legacy; }
int keras_h5_layer_count(const keras_h5 *h) { return h->n; }
const char *keras_h5_layer_name(const keras_h5 *h, int i) { return h->l[i].name; }
const char *keras_h5_layer_key(const keras_h5 *h, int i) { return h->l[i].key; }
int keras_h5_var_count(const keras_h5 *h, int i) { return h->l[i].n_vars; }
const char *keras_h5_var_name(const keras_h5 *h, int i, int j) { return h->l[i].vars[j]; }
const char *keras_h5_var_path(const keras_h5 *h, int i, int j) { return h->l[i].paths[j]; }

/* The dataset of weight j of layer i and its checked float type and space. */
static kiln_status open_var(keras_h5 *h, int i, int j, hid_t *d, hid_t *s, kiln_shape *shape) {
    quiet();
    const char *p = h->l[i].paths[j];
    *d = H5Dopen2(h->file, p, H5P_DEFAULT);
    if (*d < 0) return fail(h->what, KILN_IO_ERROR, "cannot open weight '%s'", p);
    *s = H5Dget_space(*d);
    hid_t t = H5Dget_type(*d);
    int rank = *s >= 0 ? H5Sget_simple_extent_ndims(*s) : -1;
    H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    if (t >= 0) H5Tclose(t);
    if (rank < 0) return fail(h->what, KILN_IO_ERROR, "cannot read the shape of weight '%s'", p);
    if (cls != H5T_FLOAT)
        return kiln_set_error(KILN_UNSUPPORTED, "%s: weight '%s' is not stored as floating point (bfloat16 and integer weights are not read)", h->what, p);
    if (rank > KILN_MAX_DIMS) return kiln_set_error(KILN_UNSUPPORTED, "%s: weight '%s' has %d axes (at most %d are read)", h->what, p, rank, KILN_MAX_DIMS);
    hsize_t dims[KILN_MAX_DIMS];
    H5Sget_simple_extent_dims(*s, dims, NULL);
    shape->rank = rank;
    for (int k = 0; k < rank; k++) {
        if (dims[k] > ((hsize_t)1 << 40)) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: weight '%s' has an absurd size", h->what, p);
        shape->dim[k] = (int64_t)dims[k];
    }
    return KILN_OK;
}

kiln_status keras_h5_var_shape(keras_h5 *h, int i, int j, kiln_shape *shape) {
    hid_t d, s = -1;
    kiln_status st = open_var(h, i, j, &d, &s, shape);
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    return st;
}

kiln_status keras_h5_var_read(keras_h5 *h, int i, int j, float *dst, int64_t n) {
    hid_t d, s = -1;
    kiln_shape shape;
    kiln_status st = open_var(h, i, j, &d, &s, &shape);
    if (!st && H5Sget_simple_extent_npoints(s) != n)
        st = kiln_set_error(KILN_SHAPE_MISMATCH, "%s: weight '%s' does not hold %lld values", h->what, h->l[i].paths[j], (long long)n);
    if (!st && n && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst) < 0)
        st = fail(h->what, KILN_IO_ERROR, "cannot read weight '%s'; is the file damaged?", h->l[i].paths[j]);
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    return st;
}

/* ---- writing Keras 3's layout ---- */
static bool name_attr(hid_t obj, const char *value) {
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t a = H5Acreate2(obj, "name", t, s, H5P_DEFAULT, H5P_DEFAULT);
    bool ok = a >= 0 && H5Awrite(a, t, &value) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
    return ok;
}

/* A "vars" group in g named name holding weights [from, from + n) of l. */
static bool write_vars(hid_t g, const char *name, const keras_h5_layer_out *l, int from, int n) {
    hid_t v = g >= 0 ? H5Gcreate2(g, "vars", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    bool ok = v >= 0 && name_attr(v, name);
    for (int j = 0; j < n && ok; j++) {
        const kiln_shape *sh = &l->shapes[from + j];
        hsize_t dims[KILN_MAX_DIMS];
        for (int k = 0; k < sh->rank; k++) dims[k] = (hsize_t)sh->dim[k];
        hid_t s = sh->rank ? H5Screate_simple(sh->rank, dims, NULL) : H5Screate(H5S_SCALAR);
        char k[16];
        snprintf(k, sizeof k, "%d", j);
        hid_t d = s >= 0 ? H5Dcreate2(v, k, H5T_IEEE_F32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
        ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, l->data[from + j]) >= 0;
        if (d >= 0) H5Dclose(d);
        if (s >= 0) H5Sclose(s);
    }
    if (v >= 0) H5Gclose(v);
    return ok;
}

/* A recurrent layer's weights n from `from` under g/<sub>/cell/vars (sub NULL: g/cell/vars). */
static bool write_cell(hid_t g, const char *sub, const keras_h5_layer_out *l, int from, int n) {
    hid_t s = sub ? H5Gcreate2(g, sub, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : g;
    bool ok = s >= 0 && (!sub || write_vars(s, sub, l, 0, 0));
    hid_t c = ok ? H5Gcreate2(s, "cell", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    ok = c >= 0 && write_vars(c, l->cell, l, from, n);
    if (c >= 0) H5Gclose(c);
    if (sub && s >= 0) H5Gclose(s);
    return ok;
}

/* MultiHeadAttention's weights, a quarter each, under its EinsumDense sub-layers' groups with
 * the names Keras gives them (and its weightless dropout and softmax, which Keras 3 writes). */
static bool write_mha(hid_t g, const keras_h5_layer_out *l) {
    static const char *const sub[][2] = { { "query_dense", "query" }, { "key_dense", "key" }, { "value_dense", "value" },
                                          { "output_dense", "attention_output" }, { "_dropout_layer", "dropout" },
                                          { "_softmax", "softmax" } };
    bool ok = true;
    for (int i = 0; i < 6 && ok; i++) {
        hid_t s = H5Gcreate2(g, sub[i][0], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        ok = s >= 0 && write_vars(s, sub[i][1], l, i < 4 ? i * (l->n_vars / 4) : 0, i < 4 ? l->n_vars / 4 : 0);
        if (s >= 0) H5Gclose(s);
    }
    return ok;
}

static bool write_layer(hid_t layers, const keras_h5_layer_out *l) {
    hid_t g = H5Gcreate2(layers, l->key, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    bool ok = g >= 0 && write_vars(g, l->name, l, 0, l->cell || l->mha ? 0 : l->n_vars);
    if (ok && l->mha) ok = write_mha(g, l);
    if (ok && l->cell && !l->bidirectional) ok = write_cell(g, NULL, l, 0, l->n_vars);
    if (ok && l->cell && l->bidirectional)
        ok = write_cell(g, "forward_layer", l, 0, l->n_vars / 2) && write_cell(g, "backward_layer", l, l->n_vars / 2, l->n_vars / 2);
    if (g >= 0) H5Gclose(g);
    return ok;
}

kiln_status keras_h5_write_image(const keras_h5_layer_out *l, int n, const char *model_name, const char *what, uint8_t **img, size_t *img_n) {
    static unsigned seq;
    *img = NULL;
    *img_n = 0;
    quiet();
    char name[64];
    snprintf(name, sizeof name, "kiln-keras-out-%u", seq++);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 20, 0);
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    hid_t layers = f >= 0 ? H5Gcreate2(f, "layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    bool ok = layers >= 0;
    for (int i = 0; i < n && ok; i++) ok = write_layer(layers, &l[i]);
    if (layers >= 0) H5Gclose(layers);
    hid_t top = ok ? H5Gcreate2(f, "vars", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    ok = ok && top >= 0 && name_attr(top, model_name);
    if (top >= 0) H5Gclose(top);
    ssize_t size = ok && H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0 ? H5Fget_file_image(f, NULL, 0) : -1;
    uint8_t *buf = size > 0 ? kiln_malloc((size_t)size) : NULL;
    ok = buf && H5Fget_file_image(f, buf, (size_t)size) == size;
    kiln_status st = ok ? KILN_OK : fail(what, KILN_IO_ERROR, "HDF5 could not write the weights", NULL);
    if (f >= 0) H5Fclose(f);
    if (st) { kiln_free(buf); return st; }
    *img = buf;
    *img_n = (size_t)size;
    return KILN_OK;
}
#endif
