/* Graph construction: nodes, names, scopes, sticky errors, sources. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "graph/graph_internal.h"

kiln_graph *kiln_graph_new(void) {
    kiln_graph *g = kiln_calloc(1, sizeof *g);
    if (!g) kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_graph_new: out of host memory");
    return g;
}

void kiln_graph_free(kiln_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_nodes; i++) {
        kiln_node *n = g->nodes[i];
        kiln_free(n->name);
        kiln_free(n->in);
        kiln_tensor_free(n->value);
        kiln_free(n);
    }
    kiln_free(g->nodes);
    kiln_free(g->name_slots);
    for (int i = 0; i < g->n_scopes && i < KILN_MAX_SCOPES; i++) kiln_free(g->scopes[i]);
    kiln_free(g);
}

kiln_status kiln_graph_status(const kiln_graph *g) { return g ? g->status : KILN_INVALID_ARGUMENT; }
const char *kiln_graph_error(const kiln_graph *g) { return g ? g->error : "NULL graph"; }
void kiln_graph_clear_error(kiln_graph *g) { g->status = KILN_OK; g->error[0] = 0; }
int kiln_graph_node_count(const kiln_graph *g) { return g->n_nodes; }
kiln_node *kiln_graph_node(const kiln_graph *g, int i) { return (i >= 0 && i < g->n_nodes) ? g->nodes[i] : NULL; }

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;            /* FNV-1a */
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

kiln_node *kiln_graph_find(const kiln_graph *g, const char *name) {
    if (!g->n_slots) return NULL;
    for (uint64_t i = name_hash(name) & (uint64_t)(g->n_slots - 1);; i = (i + 1) & (uint64_t)(g->n_slots - 1)) {
        int id = g->name_slots[i];
        if (id < 0) return NULL;
        if (strcmp(g->nodes[id]->name, name) == 0) return g->nodes[id];
    }
}

/* Index node `id` by name, growing the table to keep it at most half full. */
static kiln_status index_name(kiln_graph *g, int id) {
    if (2 * (g->n_nodes + 1) > g->n_slots) {
        int ns = g->n_slots ? g->n_slots * 2 : 256;
        int *slots = kiln_malloc((size_t)ns * sizeof *slots);
        if (!slots) return KILN_OUT_OF_MEMORY;
        for (int i = 0; i < ns; i++) slots[i] = -1;
        kiln_free(g->name_slots);
        g->name_slots = slots;
        g->n_slots = ns;
        for (int k = 0; k < g->n_nodes; k++) if (k != id) index_name(g, k);
    }
    uint64_t i = name_hash(g->nodes[id]->name) & (uint64_t)(g->n_slots - 1);
    while (g->name_slots[i] >= 0) i = (i + 1) & (uint64_t)(g->n_slots - 1);
    g->name_slots[i] = id;
    return KILN_OK;
}

/* Rebuilds the index without the last node (after a failed build step). */
static void unindex_last(kiln_graph *g) {
    for (int i = 0; i < g->n_slots; i++) g->name_slots[i] = -1;
    for (int k = 0; k < g->n_nodes; k++) index_name(g, k);
}

static kiln_status fail_v(kiln_graph *g, kiln_status s, const char *prefix, const char *fmt, va_list ap) {
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    kiln_set_error(s, "%s%s", prefix, msg);
    if (g && g->status == KILN_OK) {          /* sticky: keep the first error */
        g->status = s;
        snprintf(g->error, sizeof g->error, "%s", kiln_last_error());
    }
    return s;
}

kiln_status kiln_graph_fail(kiln_graph *g, kiln_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_v(g, s, "", fmt, ap);
    va_end(ap);
    return s;
}

kiln_status kiln_node_error(kiln_node *n, kiln_status s, const char *fmt, ...) {
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s (%s): ", n->name, kiln_op_get(n->op)->name);
    va_list ap;
    va_start(ap, fmt);
    fail_v(n->graph, s, prefix, fmt, ap);
    va_end(ap);
    return s;
}

void kiln_graph_push_scope(kiln_graph *g, const char *scope) {
    if (g->n_scopes < KILN_MAX_SCOPES) g->scopes[g->n_scopes] = kiln_strdup(scope);
    g->n_scopes++;
}

void kiln_graph_pop_scope(kiln_graph *g) {
    if (g->n_scopes <= 0) return;
    g->n_scopes--;
    if (g->n_scopes < KILN_MAX_SCOPES) { kiln_free(g->scopes[g->n_scopes]); g->scopes[g->n_scopes] = NULL; }
}

kiln_status kiln_graph_push_device(kiln_graph *g, const char *device) {
    kiln_device_spec spec;
    if (kiln_parse_device(device, &spec) != KILN_OK)
        return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_graph_push_device: %s", kiln_last_error());
    if (g->n_devices < KILN_MAX_SCOPES) g->devices[g->n_devices] = spec;
    g->n_devices++;
    return KILN_OK;
}

void kiln_graph_pop_device(kiln_graph *g) { if (g->n_devices > 0) g->n_devices--; }

/* "scope1/scope2/base", made unique with _1, _2 ... like TensorFlow. */
static char *unique_name(kiln_graph *g, const char *base) {
    char buf[512];
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < g->n_scopes && i < KILN_MAX_SCOPES && k < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s/", g->scopes[i]);
    if (k < sizeof buf) snprintf(buf + k, sizeof buf - k, "%s", base);
    if (!kiln_graph_find(g, buf)) return kiln_strdup(buf);
    char cand[560];
    for (int i = 1;; i++) {
        snprintf(cand, sizeof cand, "%s_%d", buf, i);
        if (!kiln_graph_find(g, cand)) return kiln_strdup(cand);
    }
}

static kiln_node *node_alloc(kiln_graph *g, kiln_op op, const char *name, kiln_node *const *in, int n_in) {
    if (g->n_nodes == g->cap) {
        int cap = g->cap ? g->cap * 2 : 64;
        kiln_node **nn = kiln_realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) { kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "graph: out of host memory"); return NULL; }
        g->nodes = nn;
        g->cap = cap;
    }
    kiln_node *n = kiln_calloc(1, sizeof *n);
    if (!n) { kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "graph: out of host memory"); return NULL; }
    n->op = op;
    n->graph = g;
    n->name = unique_name(g, name ? name : kiln_op_get(op)->name);
    n->n_in = n_in;
    if (n_in > 0) {
        n->in = kiln_malloc((size_t)n_in * sizeof *n->in);
        memcpy(n->in, in, (size_t)n_in * sizeof *n->in);
    }
    if (g->n_devices > 0 && g->n_devices <= KILN_MAX_SCOPES)
        kiln_device_spec_str(&g->devices[g->n_devices - 1], n->device, sizeof n->device);
    n->id = g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    if (index_name(g, n->id) != KILN_OK) {
        kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "graph: out of host memory");
        return NULL;
    }
    return n;
}

/* A shape whose bytes cannot be addressed (dims from a file: 2^62 x 4 bytes) is refused where the
 * node is made, so shape inference, planning and kernels downstream may multiply dims freely. */
static kiln_status check_size(kiln_graph *g, const char *what, const char *name, kiln_dtype dt, kiln_shape s) {
    int64_t n = kiln_shape_numel(s);
    size_t es = (unsigned)dt < KILN_DTYPE_COUNT ? kiln_dtype_size(dt) : 1;
    if (n == INT64_MAX || (uint64_t)n > (uint64_t)INT64_MAX / (es ? es : 1)) {
        char b[160];
        return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s '%s': shape %s has too many elements to address", what,
                               name ? name : "", kiln_shape_str(s, b, sizeof b));
    }
    return KILN_OK;
}

/* Removes the last node (after failed inference) so a failed build leaves no half node. */
static void node_drop_last(kiln_graph *g) {
    kiln_node *n = g->nodes[--g->n_nodes];
    unindex_last(g);
    kiln_free(n->name);
    kiln_free(n->in);
    kiln_tensor_free(n->value);
    kiln_free(n);
}

kiln_node *kiln_node_new_named(kiln_graph *g, kiln_op op, const char *name, kiln_node *const *in,
                               int n_in, const kiln_attrs *attrs) {
    if (!g) { kiln_set_error(KILN_INVALID_ARGUMENT, "NULL graph"); return NULL; }
    const kiln_op_def *d = kiln_op_get(op);
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) { kiln_set_error(g->status ? g->status : KILN_INVALID_ARGUMENT, "%s: input %d is NULL (an earlier build step failed: %s)", d->name, i, g->error); return NULL; }
        if (in[i]->graph != g) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s: input %d (%s) belongs to another graph", d->name, i, in[i]->name); return NULL; }
    }
    if (n_in < d->min_in || n_in > d->max_in) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s: takes %d..%d inputs, got %d", d->name, d->min_in, d->max_in, n_in);
        return NULL;
    }
    kiln_node *cast_in[KILN_MAX_INPUTS];
    if (g->autocast_act && !g->in_autocast && n_in <= KILN_MAX_INPUTS && !(in = kiln_autocast_inputs(g, op, in, n_in, cast_in)))
        return NULL;
    kiln_node *n = node_alloc(g, op, name, in, n_in);
    if (!n) return NULL;
    if (attrs) n->attrs = *attrs;
    if (d->infer && d->infer(n) != KILN_OK) { node_drop_last(g); return NULL; }
    if (check_size(g, d->name, n->name, n->dtype, n->shape)) { node_drop_last(g); return NULL; }
    return n;
}

kiln_node *kiln_node_new(kiln_graph *g, kiln_op op, kiln_node *const *in, int n_in, const kiln_attrs *attrs) {
    return kiln_node_new_named(g, op, NULL, in, n_in, attrs);
}

/* ---- accessors ---- */
const char *kiln_node_name(const kiln_node *n) { return n->name; }
const char *kiln_node_op_name(const kiln_node *n) { return kiln_op_get(n->op)->name; }
kiln_dtype kiln_node_dtype(const kiln_node *n) { return n->dtype; }
kiln_shape kiln_node_shape(const kiln_node *n) { return n->shape; }
int kiln_node_id(const kiln_node *n) { return n->id; }
const char *kiln_node_device(const kiln_node *n) { return n->device; }
bool kiln_node_is_variable(const kiln_node *n) { return n && n->op == KILN_OP_VARIABLE; }
bool kiln_node_is_trainable(const kiln_node *n) { return kiln_node_is_variable(n) && n->trainable; }

/* ---- sources ---- */
static kiln_status check_source(kiln_graph *g, const char *what, const char *name, kiln_dtype dt, kiln_shape s) {
    if ((unsigned)dt >= KILN_DTYPE_COUNT) return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s '%s': unknown dtype %d", what, name ? name : "", (int)dt);
    if (s.rank < 0 || s.rank > KILN_MAX_DIMS) return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s '%s': rank %d outside 0..%d", what, name ? name : "", s.rank, KILN_MAX_DIMS);
    for (int i = 0; i < s.rank; i++)
        if (s.dim[i] <= 0) {
            char b[96];
            return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s '%s': shape %s has a dimension <= 0", what, name ? name : "", kiln_shape_str(s, b, sizeof b));
        }
    return check_size(g, what, name, dt, s);
}

kiln_node *kiln_placeholder(kiln_graph *g, const char *name, kiln_dtype dtype, kiln_shape shape) {
    if (!g || check_source(g, "placeholder", name, dtype, shape)) return NULL;
    kiln_node *n = node_alloc(g, KILN_OP_PLACEHOLDER, name, NULL, 0);
    if (n) { n->dtype = dtype; n->shape = shape; }
    return n;
}

kiln_node *kiln_variable_trainable(kiln_graph *g, const char *name, kiln_dtype dtype, kiln_shape shape,
                                   kiln_init init, bool trainable) {
    if (!g || check_source(g, "variable", name, dtype, shape)) return NULL;
    if ((unsigned)init.kind >= KILN_INIT_COUNT) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "variable '%s': unknown initializer %d", name ? name : "", (int)init.kind); return NULL; }
    kiln_node *n = node_alloc(g, KILN_OP_VARIABLE, name, NULL, 0);
    if (n) { n->dtype = dtype; n->shape = shape; n->init = init; n->trainable = trainable; }
    return n;
}

kiln_node *kiln_variable(kiln_graph *g, const char *name, kiln_dtype dtype, kiln_shape shape, kiln_init init) {
    return kiln_variable_trainable(g, name, dtype, shape, init, true);
}

kiln_node *kiln_constant(kiln_graph *g, const kiln_tensor *value) {
    if (!g) return NULL;
    if (!value) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "constant: NULL value"); return NULL; }
    kiln_node *n = node_alloc(g, KILN_OP_CONSTANT, NULL, NULL, 0);
    if (!n) return NULL;
    n->dtype = value->dtype;
    n->shape = value->shape;
    n->value = kiln_tensor_new(value->dtype, value->shape);
    if (!n->value) { node_drop_last(g); kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "constant: out of host memory"); return NULL; }
    memcpy(n->value->data, value->data, kiln_tensor_nbytes(value));
    return n;
}

kiln_node *kiln_scalar(kiln_graph *g, kiln_dtype dtype, double v) {
    if (!g) return NULL;
    kiln_tensor *t = kiln_tensor_new(dtype, KILN_SCALAR);
    if (!t) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "scalar: %s", kiln_last_error()); return NULL; }
    kiln_tensor_set(t, 0, v);
    kiln_node *n = kiln_constant(g, t);
    kiln_tensor_free(t);
    return n;
}

kiln_node *kiln_scalar_like(kiln_graph *g, kiln_node *x, double v) {
    return x ? kiln_scalar(g, x->dtype, v) : NULL;
}

/* ---- the op table ---- */
static const kiln_op_def *const op_table[KILN_OP_COUNT] = {
#define KILN_OP(e, name, def) [KILN_OP_##e] = &def,
#include "ops/ops.def"
#undef KILN_OP
};

const kiln_op_def *kiln_op_get(kiln_op op) { return (unsigned)op < KILN_OP_COUNT ? op_table[op] : NULL; }

/* Sources have no kernel work: the executor binds their buffers. */
static kiln_status source_kernel(const kiln_kctx *c) { (void)c; return KILN_OK; }
const kiln_op_def kiln_opdef_placeholder = { "Placeholder", 0, 0, KILN_OPF_SOURCE | KILN_OPF_NO_GRAD, NULL, NULL, source_kernel, NULL };
const kiln_op_def kiln_opdef_variable = { "VariableV2", 0, 0, KILN_OPF_SOURCE | KILN_OPF_NO_GRAD, NULL, NULL, source_kernel, NULL };
const kiln_op_def kiln_opdef_constant = { "Const", 0, 0, KILN_OPF_SOURCE | KILN_OPF_NO_GRAD, NULL, NULL, source_kernel, NULL };
