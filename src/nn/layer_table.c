/* The layer table (layers.def) and the path every layer takes through it: the checks before a
 * layer exists, naming, shape and variables from its options, registration; and the forward
 * dispatch. Above the types' definitions, below the option parser and the typed builders. */
#include <stdio.h>
#include <string.h>
#include "nn/nn_layers.h"
#include "core/checked.h"

static const nn_layer_def *const layer_table[NN_KIND_COUNT] = {
#define NN_LAYER(e, def) [NN_##e] = &def,
#include "nn/layers.def"
#undef NN_LAYER
};

const nn_layer_def *nn_layer_def_of(nn_kind k) { return (unsigned)k < NN_KIND_COUNT ? layer_table[k] : NULL; }
const char *nn_kind_type(nn_kind k) { return (unsigned)k < NN_KIND_COUNT ? layer_table[k]->type : "?"; }

bool nn_layer_kind_named(const char *type, nn_kind *k) {
    for (int i = 0; type && i < NN_KIND_COUNT; i++)
        if (!strcmp(layer_table[i]->type, type)) { *k = (nn_kind)i; return true; }
    return false;
}

/* Names are looked up in the model's hash index of its layers (m->layer_index), not by a scan:
 * a model file of n layers loads in O(n), not O(n^2). */
static bool layer_name_taken(const kiln_model *m, const char *name) { return kiln_name_index_find(&m->layer_index, name) >= 0; }

static const char *layer_name_at(const void *m, int i) { return ((const kiln_model *)m)->layers[i]->name; }

kiln_status nn_layer_rename(kiln_layer *l, const char *name) {
    kiln_model *m = l->model;
    int at = kiln_name_index_find(&m->layer_index, name);
    if (at >= 0 && m->layers[at] != l)
        return nn_fail(m, KILN_INVALID_ARGUMENT, "layer name '%s' is used twice in model '%s'; names must be unique (they name the checkpoint tensors)", name, m->name);
    snprintf(l->name, sizeof l->name, "%s", name);
    kiln_name_index_free(&m->layer_index);       /* the index hashed the old name: rebuild it (once per file) */
    for (int i = 0; i < m->n_layers; i++)
        if (!kiln_name_index_add(&m->layer_index, i)) return nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name);
    return KILN_OK;
}

/* A named, unregistered layer on checked inputs (the model's layer list has room for it). */
static kiln_layer *layer_new(kiln_model *m, nn_kind kind, const char *name, kiln_layer *const *in, int n_in) {
    const char *base = layer_table[kind]->base;
    if (m->g)
        { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: model '%s' is already built (fit/evaluate/load ran); add every layer before that", base, m->name); return NULL; }
    if (m->finalized && m->functional)
        { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: model '%s' already has its outputs declared (kiln_model_functional); add layers before", base, m->name); return NULL; }
    if (n_in > NN_MAX_MERGE) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: at most %d inputs, got %d", base, NN_MAX_MERGE, n_in); return NULL; }
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: input %d is NULL", name ? name : base, i); return NULL; }
        if (in[i]->model != m) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: input %d (%s) belongs to another model", name ? name : base, i, in[i]->name); return NULL; }
    }
    if (m->n_layers == m->cap) {
        int cap = m->cap ? m->cap * 2 : 16;
        kiln_layer **nl = kiln_realloc(m->layers, (size_t)cap * sizeof *nl);
        if (!nl) { nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name); return NULL; }
        m->layers = nl;
        m->cap = cap;
    }
    kiln_layer *l = kiln_calloc(1, sizeof *l);
    if (!l) { nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name); return NULL; }
    l->model = m;
    l->kind = kind;
    l->def = layer_table[kind];
    l->index = m->n_layers;
    for (int i = 0; i < n_in; i++) l->in[i] = in[i];
    l->n_in = n_in;
    if (name && *name) {
        if (strlen(name) >= sizeof l->name) {     /* cut short, two names could become one */
            kiln_free(l);
            nn_fail(m, KILN_INVALID_ARGUMENT, "layer name '%.40s...' has %zu characters; at most %zu", name, strlen(name), sizeof l->name - 1);
            return NULL;
        }
        if (layer_name_taken(m, name)) {
            kiln_free(l);
            nn_fail(m, KILN_INVALID_ARGUMENT, "layer name '%s' is used twice in model '%s'; names must be unique (they name the checkpoint tensors)", name, m->name);
            return NULL;
        }
        snprintf(l->name, sizeof l->name, "%s", name);
    } else {
        for (;;) {     /* Keras: dense, dense_1, ...; input_1, input_2, ... */
            int c = m->name_counts[kind]++;
            if (kind == NN_INPUT) snprintf(l->name, sizeof l->name, "input_%d", c + 1);
            else if (c == 0) snprintf(l->name, sizeof l->name, "%s", base);
            else snprintf(l->name, sizeof l->name, "%s_%d", base, c);
            if (!layer_name_taken(m, l->name)) break;
        }
    }
    return l;
}

/* The checks before a layer exists; in/n_in resolved (a single-input layer given none takes the
 * previous layer of a sequential model). */
kiln_layer *nn_layer_begin(kiln_model *m, nn_kind k, const char *name, kiln_layer *const *in, int n_in) {
    const nn_layer_def *d = layer_table[k];
    if (!m) { kiln_set_error(KILN_INVALID_ARGUMENT, "%s: NULL model", d->base); return NULL; }
    if (k == NN_INPUT && !m->functional)
        { nn_fail(m, KILN_INVALID_ARGUMENT, "kiln_input: model '%s' is sequential (its input comes from kiln_sequential)", m->name); return NULL; }
    if (m->status != KILN_OK) { nn_check(m); return NULL; }
    if (n_in < 0 || (n_in > 0 && !in)) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: no input list (%d inputs)", name ? name : d->base, n_in); return NULL; }
    kiln_layer *prev = m->output;
    if (d->min_in == 1 && n_in == 0) {      /* one input, or more with the first alone allowed (MultiHeadAttention) */
        if (!prev) {
            nn_fail(m, KILN_INVALID_ARGUMENT, "%s: no input: this functional model has no layer yet; pass .input (from kiln_input())", name ? name : d->base);
            return NULL;
        }
        in = &prev;
        n_in = 1;
    }
    if (d->min_in > 1 && n_in < d->min_in)
        { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: needs .inputs with at least %d layer outputs", d->base, d->min_in); return NULL; }
    if (n_in < d->min_in || (n_in > d->max_in && d->max_in < NN_MAX_MERGE))
        { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: takes %d input%s, got %d", name ? name : d->base, d->max_in, d->max_in == 1 ? "" : "s", n_in); return NULL; }
    return layer_new(m, k, name, in, n_in);
}

/* Shape and variables from the options, then registers the layer; frees it on error. */
kiln_layer *nn_layer_finish(kiln_layer *l, const nn_layer_cfg *c) {
    const nn_layer_def *d = layer_table[l->kind];
    kiln_model *m = l->model;
    int64_t n;
    /* sizes from file input: the output's values per example, the parameters and the FLOPs fit
     * an int64, so that every later size built on them (Flatten, the next kernel, the totals)
     * is exact */
    if (d->shape(l, c) != KILN_OK || nn_layer_numel(l, "output values per example", l->out, &n)) { nn_layer_free(l); return NULL; }
    if (!(l->cfg = kiln_malloc(sizeof *l->cfg))) {
        nn_layer_free(l);
        nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name);
        return NULL;
    }
    *l->cfg = *c;
    l->cfg->name = NULL;
    if (d->vars) d->vars(l, c);
    int64_t params = 0;
    for (int i = 0; m->status == KILN_OK && i < l->n_vars; i++)
        if (!kiln_add_i64(params, kiln_shape_numel(l->vars[i].shape), &params))
            nn_layer_fail(l, KILN_INVALID_ARGUMENT, "parameters: %lld + %lld overflows a 64-bit count; the sizes in the model description are too large",
                          (long long)params, (long long)kiln_shape_numel(l->vars[i].shape));
    if (m->status == KILN_OK) nn_layer_flops_checked(l, &n);
    if (m->status != KILN_OK) { nn_layer_free(l); return NULL; }     /* out of memory for a variable, a size overflows */
    if (!m->layer_index.name_at) kiln_name_index_init(&m->layer_index, layer_name_at, m);
    m->layers[m->n_layers] = l;
    if (!kiln_name_index_add(&m->layer_index, m->n_layers)) {
        nn_layer_free(l);
        nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name);
        return NULL;
    }
    m->n_layers++;
    if (l->kind == NN_INPUT) { if (!m->input) m->input = l; }
    else if (!m->functional) m->output = l;
    return l;
}

kiln_layer *nn_layer_add(kiln_model *m, nn_kind k, const nn_layer_cfg *c, kiln_layer *const *in, int n_in) {
    kiln_layer *l = nn_layer_begin(m, k, c->name, in, n_in);
    return l ? nn_layer_finish(l, c) : NULL;
}

/* Emits the layer's ops on its inputs' nodes (already built); returns its output node. */
kiln_node *nn_layer_forward(const nn_fwd *f, kiln_layer *l) {
    kiln_node *x = l->n_in ? l->in[0]->node : l->node;
    kiln_graph_push_scope(f->g, l->name);
    kiln_node *y = l->def->forward(f, l, x);
    kiln_graph_pop_scope(f->g);
    if (!y) {
        char b[96];
        nn_fail(f->m, kiln_graph_status(f->g) ? kiln_graph_status(f->g) : KILN_INTERNAL, "%s (%s), input %s: %s", l->name, l->def->type,
                nn_batched_str(l->n_in ? l->in[0]->out : l->out, b, sizeof b), kiln_graph_error(f->g));
    }
    l->node = y;
    return y;
}
