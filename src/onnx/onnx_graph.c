/* kiln_graph_from_onnx: an ONNX model's ops added to a caller's graph, its initializers as
 * variables (assigned with kiln_onnx_graph_init_session) or constants. */
#include <string.h>
#include "onnx/onnx_internal.h"

bool kiln_onnx_available(void) { return true; }

struct kiln_onnx_graph {
    int n_in, n_out, n_vars, cap_vars;
    kiln_node **in, **out;
    char **in_names, **out_names;
    kiln_node **vars;
    kiln_tensor **vals;       /* each variable's value, in its layout */
};

typedef struct graph_user { kiln_onnx_graph *r; kiln_graph *g; bool constants; } graph_user;

static kiln_node *graph_init(void *user, ox_importer *im, int index, const int *perm, bool moving, int *got) {
    graph_user *u = user;
    const kiln_tensor *t;
    if (ox_importer_init_value(im, index, &t)) return NULL;
    kiln_tensor *pt = ox_permute(t, perm);
    if (!pt) { kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    memcpy(got, perm, (size_t)t->shape.rank * sizeof *perm);
    if (u->constants) {
        kiln_node *c = kiln_constant(u->g, pt);
        kiln_tensor_free(pt);
        return c;
    }
    kiln_onnx_graph *r = u->r;
    if (r->n_vars == r->cap_vars) {
        int cap = r->cap_vars ? 2 * r->cap_vars : 16;
        kiln_node **nv = kiln_realloc(r->vars, (size_t)cap * sizeof *nv);
        if (nv) r->vars = nv;
        kiln_tensor **nt = nv ? kiln_realloc(r->vals, (size_t)cap * sizeof *nt) : NULL;
        if (nt) r->vals = nt;
        if (!nv || !nt) { kiln_tensor_free(pt); kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
        r->cap_vars = cap;
    }
    const char *name = ox_importer_init(im, index)->name;
    kiln_node *v = kiln_variable_trainable(u->g, name, pt->dtype, pt->shape, kiln_init_zeros(), !moving);
    if (!v) { kiln_tensor_free(pt); return NULL; }
    r->vars[r->n_vars] = v;
    r->vals[r->n_vars++] = pt;
    return v;
}

static char *dup(const char *s) { return kiln_strdup(s ? s : ""); }

kiln_status kiln_graph_from_onnx(kiln_graph *g, const char *path, const kiln_onnx_import_opts *o, kiln_onnx_graph **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_graph_from_onnx: NULL out");
    *out = NULL;
    if (!g || !path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_graph_from_onnx: NULL %s", g ? "path" : "graph");
    kiln_onnx_import_opts def = { 0 };
    if (!o) o = &def;
    Onnx__ModelProto *m;
    kiln_status st = ox_model_read(path, &m);
    if (st) return st;
    kiln_onnx_graph *r = kiln_calloc(1, sizeof *r);
    if (!r) { ox_model_free(m); return kiln_set_error(KILN_OUT_OF_MEMORY, "ONNX model %s: out of host memory", path); }
    graph_user u = { .r = r, .g = g, .constants = o->constants };
    ox_import_spec spec = { .model = m, .path = path, .g = g, .batch = o->batch, .training = o->training, .seed = o->seed,
                            .inputs = o->inputs, .n_inputs = o->n_inputs, .init_node = graph_init, .user = &u, .skip_node = -1 };
    ox_importer *im = NULL;
    st = ox_import(&spec, &im);
    if (!st) {
        const Onnx__GraphProto *gr = m->graph;
        int n_in = 0;
        while (ox_importer_input(im, n_in)) n_in++;
        r->n_in = n_in;
        r->n_out = ox_importer_output_count(im);
        r->in = kiln_calloc((size_t)n_in + 1, sizeof *r->in);
        r->in_names = kiln_calloc((size_t)n_in + 1, sizeof *r->in_names);
        r->out = kiln_calloc((size_t)r->n_out + 1, sizeof *r->out);
        r->out_names = kiln_calloc((size_t)r->n_out + 1, sizeof *r->out_names);
        bool ok = r->in && r->in_names && r->out && r->out_names;
        for (int i = 0; ok && i < n_in; i++) {
            const char *name = "";
            kiln_dtype dt;
            kiln_shape s;
            r->in[i] = ox_importer_input(im, i);
            if (ox_input_shape(m, path, i, &dt, &s, &name)) name = "";
            ok = (r->in_names[i] = dup(name)) != NULL;
        }
        for (int i = 0; ok && i < r->n_out; i++) {
            r->out[i] = ox_importer_output(im, i);
            ok = r->out[i] && (r->out_names[i] = dup(gr->output[i]->name)) != NULL;
        }
        if (!ok) st = kiln_graph_status(g) ? kiln_set_error(kiln_graph_status(g), "ONNX model %s: %s", path, kiln_graph_error(g))
                                           : kiln_set_error(KILN_OUT_OF_MEMORY, "ONNX model %s: out of host memory", path);
    }
    ox_importer_free(im);
    ox_model_free(m);
    if (st) { kiln_onnx_graph_free(r); return st; }
    *out = r;
    return KILN_OK;
}

int kiln_onnx_graph_input_count(const kiln_onnx_graph *r) { return r ? r->n_in : 0; }
kiln_node *kiln_onnx_graph_input(const kiln_onnx_graph *r, int i) { return r && i >= 0 && i < r->n_in ? r->in[i] : NULL; }
const char *kiln_onnx_graph_input_name(const kiln_onnx_graph *r, int i) { return r && i >= 0 && i < r->n_in ? r->in_names[i] : NULL; }
int kiln_onnx_graph_output_count(const kiln_onnx_graph *r) { return r ? r->n_out : 0; }
kiln_node *kiln_onnx_graph_output(const kiln_onnx_graph *r, int i) { return r && i >= 0 && i < r->n_out ? r->out[i] : NULL; }
const char *kiln_onnx_graph_output_name(const kiln_onnx_graph *r, int i) { return r && i >= 0 && i < r->n_out ? r->out_names[i] : NULL; }

kiln_status kiln_onnx_graph_init_session(const kiln_onnx_graph *r, kiln_session *s) {
    if (!r || !s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_onnx_graph_init_session: NULL %s", r ? "session" : "import");
    for (int i = 0; i < r->n_vars; i++) {
        kiln_status st = kiln_session_assign_variable(s, r->vars[i], r->vals[i]);
        if (st) return st;
    }
    return KILN_OK;
}

void kiln_onnx_graph_free(kiln_onnx_graph *r) {
    if (!r) return;
    for (int i = 0; i < r->n_vars; i++) kiln_tensor_free(r->vals[i]);
    for (int i = 0; r->in_names && i < r->n_in; i++) kiln_free(r->in_names[i]);
    for (int i = 0; r->out_names && i < r->n_out; i++) kiln_free(r->out_names[i]);
    kiln_free(r->vars);
    kiln_free(r->vals);
    kiln_free(r->in);
    kiln_free(r->out);
    kiln_free(r->in_names);
    kiln_free(r->out_names);
    kiln_free(r);
}
