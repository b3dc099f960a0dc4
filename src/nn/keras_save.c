/* Keras 3 .keras files written from a Kiln model (kiln_model_save_keras): config.json from
 * kiln_model_to_json, metadata.json, and model.weights.h5 in the layout Keras 3's saving_lib
 * reads back: layers/<key>/vars/<i>, each layer under the key Keras gives it by its position in
 * model.layers, which this file reproduces (a MultiHeadAttention's under its sub-layers, as Keras
 * 3 nests them: query_dense, key_dense, value_dense, output_dense). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "io/atomic_file.h"
#include "io/keras_h5.h"
#include "io/zip_write.h"
#include "nn/nn_keras_file.h"

/* keras.src.utils.naming.to_snake_case: "BatchNormalization" -> "batch_normalization",
 * "Conv2D" -> "conv2d", with the same two regex passes. */
static void snake(const char *cls, char *out, size_t n) {
    char a[256], b[512];
    size_t k = 0;
    for (const char *p = cls; *p && k < sizeof a - 1; p++)            /* \W+ removed */
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_') a[k++] = *p;
    a[k] = 0;
    size_t j = 0;
    for (size_t i = 0; a[i] && j < sizeof b - 3;) {                   /* (.)([A-Z][a-z]+) -> \1_\2 */
        if (a[i + 1] >= 'A' && a[i + 1] <= 'Z' && a[i + 2] >= 'a' && a[i + 2] <= 'z') {
            b[j++] = a[i++];
            b[j++] = '_';
            b[j++] = a[i++];
            while (a[i] >= 'a' && a[i] <= 'z' && j < sizeof b - 3) b[j++] = a[i++];
        } else b[j++] = a[i++];
    }
    b[j] = 0;
    j = 0;
    for (size_t i = 0; b[i] && j < n - 3;) {                           /* ([a-z])([A-Z]) -> \1_\2, lowered */
        if (b[i] >= 'a' && b[i] <= 'z' && b[i + 1] >= 'A' && b[i + 1] <= 'Z') {
            out[j++] = b[i++];
            out[j++] = '_';
        }
        char c = b[i++];
        out[j++] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
    }
    out[j] = 0;
}

typedef struct ranked { int depth, visit; kiln_layer *l; } ranked;
static int by_depth(const void *a, const void *b) {     /* deepest (nearest the inputs) first, ties by first visit */
    const ranked *x = a, *y = b;
    if (x->depth != y->depth) return x->depth > y->depth ? -1 : 1;
    return (x->visit > y->visit) - (x->visit < y->visit);
}

/* Functional: keras.src.ops.function.map_graph's order. Kiln's layer list is topological. */
static kiln_status functional_order(const kiln_model *m, kiln_layer **order, int *n_out) {
    int n = m->n_layers, seen = 0, top = 0, cap = 1;
    for (int i = 0; i < n; i++) cap += m->layers[i]->n_in;
    ranked *r = kiln_calloc((size_t)n, sizeof *r);
    kiln_layer **stack = kiln_calloc((size_t)cap, sizeof *stack);
    if (!r || !stack) { kiln_free(r); kiln_free(stack); return kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory"); }
    for (int i = 0; i < n; i++) r[i] = (ranked){ 0, -1, m->layers[i] };
    stack[top++] = m->output;
    while (top) {                           /* pre-order DFS from the output, inputs in order */
        kiln_layer *l = stack[--top];
        if (r[l->index].visit >= 0) continue;
        r[l->index].visit = seen++;
        for (int k = l->n_in - 1; k >= 0; k--) if (r[l->in[k]->index].visit < 0) stack[top++] = l->in[k];
    }
    for (int i = n - 1; i >= 0; i--)        /* depth: the longest path to the output */
        for (int k = 0; r[i].visit >= 0 && k < m->layers[i]->n_in; k++) {
            ranked *p = &r[m->layers[i]->in[k]->index];
            if (p->depth < r[i].depth + 1) p->depth = r[i].depth + 1;
        }
    int c = 0;
    for (int i = 0; i < n; i++) if (r[i].visit >= 0) r[c++] = r[i];
    qsort(r, (size_t)c, sizeof *r, by_depth);
    for (int i = 0; i < c; i++) order[i] = r[i].l;
    *n_out = c;
    kiln_free(r);
    kiln_free(stack);
    return KILN_OK;
}

void nn_keras_order_free(kiln_layer **order, char **keys, int n) {
    for (int i = 0; keys && i < n; i++) kiln_free(keys[i]);
    kiln_free(keys);
    kiln_free(order);
}

kiln_status nn_keras_order(const kiln_model *m, kiln_layer ***order_out, char ***keys_out, int *n_out) {
    *order_out = NULL;
    *keys_out = NULL;
    *n_out = 0;
    int n = 0;
    kiln_layer **order = kiln_calloc((size_t)m->n_layers + 1, sizeof *order);
    char **keys = kiln_calloc((size_t)m->n_layers + 1, sizeof *keys);
    kiln_status st = order && keys ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    if (!st && m->functional) st = functional_order(m, order, &n);
    else if (!st)
        for (int i = 0; i < m->n_layers; i++) if (m->layers[i]->kind != NN_INPUT) order[n++] = m->layers[i];
    /* the keys: Keras's _get_unique_name over the snake-case class names; a layer kind is one class */
    int *count = st ? NULL : kiln_calloc((size_t)NN_KIND_COUNT, sizeof *count);
    if (!st && !count) st = kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < n && !st; i++) {
        char base[256], key[300];
        snake(kiln_layer_type(order[i]), base, sizeof base);
        int c = count[order[i]->kind]++;
        if (c) snprintf(key, sizeof key, "%s_%d", base, c);
        else snprintf(key, sizeof key, "%s", base);
        if (!(keys[i] = kiln_strdup(key))) st = kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    }
    kiln_free(count);
    if (st) { nn_keras_order_free(order, keys, n); return st; }
    *order_out = order;
    *keys_out = keys;
    *n_out = n;
    return KILN_OK;
}

/* Layer l's weights as Keras holds them: f32 tensors (kiln_model_get_weight) in Kiln's order, which
 * is Keras's; a depthwise kernel [kh, kw, 1, channels * multiplier] becomes Keras's [kh, kw,
 * channels, multiplier] (the same values in the same order). */
static kiln_status layer_weights(kiln_model *m, kiln_layer *l, kiln_tensor **t, kiln_shape *shapes) {
    for (int j = 0; j < l->n_vars; j++) {
        kiln_status st = kiln_model_get_weight(m, l->vars[j].name, &t[j]);
        if (st) return st;
        shapes[j] = t[j]->shape;
        if (l->kind == NN_DWCONV2D && !strcmp(l->vars[j].name + strlen(l->name), "/depthwise_kernel")) {
            int64_t cin = l->in[0]->out.dim[l->in[0]->out.rank - 1];
            shapes[j] = KILN_SHAPE(shapes[j].dim[0], shapes[j].dim[1], cin, shapes[j].dim[3] / cin);
        }
    }
    return KILN_OK;
}

static kiln_status weights_image(kiln_model *m, const char *what, uint8_t **img, size_t *img_n) {
    kiln_layer **order;
    char **keys;
    int n;
    kiln_status st = nn_keras_order(m, &order, &keys, &n);
    if (st) return st;
    int total = 0;
    for (int i = 0; i < n; i++) total += order[i]->n_vars;
    keras_h5_layer_out *out = kiln_calloc((size_t)n + 1, sizeof *out);
    kiln_tensor **t = kiln_calloc((size_t)total + 1, sizeof *t);
    kiln_shape *shapes = kiln_calloc((size_t)total + 1, sizeof *shapes);
    const float **data = kiln_calloc((size_t)total + 1, sizeof *data);
    if (!out || !t || !shapes || !data) st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    for (int i = 0, at = 0; i < n && !st; at += order[i]->n_vars, i++) {
        kiln_layer *l = order[i];
        if (l->kind == NN_IMPORTED) {
            st = kiln_set_error(KILN_UNSUPPORTED, "%s: layer '%s' holds ops imported from ONNX, which Keras has no layer for", what, l->name);
            break;
        }
        out[i] = (keras_h5_layer_out){ keys[i], l->name, l->n_vars, shapes + at, data + at };
        if (l->kind == NN_SIMPLE_RNN || l->kind == NN_LSTM || l->kind == NN_GRU || l->kind == NN_BIDIRECTIONAL) {
            static const char *const cells[] = { "simple_rnn_cell", "lstm_cell", "gru_cell" };
            out[i].cell = cells[(unsigned)l->cell < 3 ? l->cell : 0];
            out[i].bidirectional = l->kind == NN_BIDIRECTIONAL;
        }
        out[i].mha = l->kind == NN_MHA;    /* its variables: query, key, value, output; each kernel [and bias] */
        st = layer_weights(m, l, t + at, shapes + at);
        for (int j = 0; j < l->n_vars && !st; j++) data[at + j] = (const float *)t[at + j]->data;
    }
    if (!st) st = keras_h5_write_image(out, n, m->name, what, img, img_n);
    for (int i = 0; t && i < total; i++) kiln_tensor_free(t[i]);
    kiln_free(t);
    kiln_free(shapes);
    kiln_free(data);
    kiln_free(out);
    nn_keras_order_free(order, keys, n);
    return st;
}

kiln_status kiln_model_save_keras(kiln_model *m, const char *path) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_save_keras: no path");
    char what[4200];
    snprintf(what, sizeof what, "Keras file '%s'", path);
    if (!keras_h5_available()) return kiln_set_error(KILN_UNSUPPORTED, "%s: this kiln was built without HDF5, which .keras files need: "
                                                     "apt-get install libhdf5-dev and rebuild", what);
    char *config = NULL, meta[256];
    uint8_t *h5 = NULL;
    size_t h5_n = 0;
    if ((st = kiln_model_to_json(m, &config))) return st;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    /* the Keras version whose saving format this writes (the weights layout of keras 3.x) */
    snprintf(meta, sizeof meta, "{\"keras_version\": \"3.15.1\", \"date_saved\": \"%04d-%02d-%02d@%02d:%02d:%02d\", \"saved_by\": \"kiln\"}",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    st = weights_image(m, what, &h5, &h5_n);
    kiln_atomic_file af;
    if (!st) st = kiln_atomic_open(path, &af);
    if (!st) {
        kiln_zip_member e[3] = { { "metadata.json", (const uint8_t *)meta, strlen(meta) },
                                { "config.json", (const uint8_t *)config, strlen(config) },
                                { "model.weights.h5", h5, h5_n } };
        st = kiln_zip_write(af.f, e, 3, what);
        if (st) kiln_atomic_abort(&af);
        else st = kiln_atomic_commit(&af);
    }
    free(config);
    kiln_free(h5);
    return st;
}
