/* kiln_model_from_onnx: an ONNX model as a Kiln model: an input layer and one ImportedGraph
 * layer that imports the graph again in each forward the model builds (each batch size, training
 * or inference), reading the initializers that ops use as data from the layer's variables. */
#include <string.h>
#include "onnx/onnx_ops.h"
#include "nn/nn_model.h"

typedef struct ox_init_use {
    bool used, moving;
    int perm[KILN_MAX_DIMS];
    int var;                           /* index into the layer's variables, -1: none */
} ox_init_use;

typedef struct ox_model {
    Onnx__ModelProto *proto;
    char *path;
    const char *input_name;            /* borrowed from proto */
    bool nhwc;
    int input_perm[KILN_MAX_DIMS];
    int skip_node;
    kiln_dtype in_dtype;               /* the file's input: f32, or i32 / i64 token ids (cast from Kiln's f32 input) */
    ox_init_use *use;                  /* per initializer */
    kiln_graph *trial;                 /* while probing: the scratch graph */
    const nn_fwd *f;                   /* while building a forward */
    kiln_layer *layer;
    struct { const char *type; int count; int64_t flops; } ops[48];   /* per op type, a batch of 1 (summary) */
    int n_ops;
    int64_t flops;
} ox_model;

static void ox_model_release(void *data) {
    ox_model *om = data;
    if (!om) return;
    ox_model_free(om->proto);
    kiln_free(om->path);
    kiln_free(om->use);
    kiln_free(om);
}

/* Probing: records how each initializer is read (layout, running statistic or weight) and gives
 * a zero variable of that shape in the scratch graph. */
static kiln_node *probe_init(void *user, ox_importer *im, int index, const int *perm, bool moving, int *got) {
    ox_model *om = user;
    ox_init_use *u = &om->use[index];
    const Onnx__TensorProto *t = ox_importer_init(im, index);
    int r = (int)t->n_dims;
    if (!u->used) {
        u->used = true;
        u->moving = moving;
        memcpy(u->perm, perm, (size_t)r * sizeof *perm);
    }
    kiln_dtype dt;
    if (!ox_dtype_of(t->data_type, &dt)) { const kiln_tensor *v; ox_importer_init_value(im, index, &v); return NULL; }
    kiln_shape s = { .rank = r };
    for (int j = 0; j < r; j++) s.dim[j] = t->dims[u->perm[j]];
    memcpy(got, u->perm, (size_t)r * sizeof *got);
    return kiln_variable_trainable(om->trial, t->name, dt, s, kiln_init_zeros(), false);
}

/* A forward: the layer's variable, in the layout the probe recorded. */
static kiln_node *layer_init(void *user, ox_importer *im, int index, const int *perm, bool moving, int *got) {
    ox_model *om = user;
    ox_init_use *u = &om->use[index];
    int r = (int)ox_importer_init(im, index)->n_dims;
    if (u->var >= 0) {
        memcpy(got, u->perm, (size_t)r * sizeof *got);
        return om->layer->vars[u->var].node;
    }
    const kiln_tensor *v;          /* not seen while probing: a constant */
    if (ox_importer_init_value(im, index, &v)) return NULL;
    memcpy(got, perm, (size_t)r * sizeof *got);
    kiln_tensor *p = ox_permute(v, perm);
    kiln_node *c = p ? kiln_constant(om->f->g, p) : NULL;
    kiln_tensor_free(p);
    return c;
}

static ox_import_spec spec_of(ox_model *om, kiln_graph *g, int64_t batch, bool training, uint64_t seed, const kiln_onnx_input *in) {
    return (ox_import_spec){ .model = om->proto, .path = om->path, .g = g, .batch = batch, .training = training, .seed = seed,
                             .inputs = in, .n_inputs = 1, .input_perm = om->nhwc ? om->input_perm : NULL,
                             .init_node = om->trial ? probe_init : layer_init, .user = om, .skip_node = om->skip_node, .any_batch = true };
}

static kiln_node *layer_forward(void *data, const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    ox_model *om = data;
    om->f = f;
    om->layer = l;
    kiln_onnx_input in = { .name = om->input_name, .node = om->in_dtype == KILN_F32 ? x : kiln_cast(f->g, x, om->in_dtype) };
    ox_import_spec sp = spec_of(om, f->g, f->batch, f->training, f->m->seed ^ 0x0A11C0DEull, &in);
    ox_importer *im;
    if (ox_import(&sp, &im) != KILN_OK) {
        nn_layer_fail(l, kiln_graph_status(f->g) ? kiln_graph_status(f->g) : KILN_INVALID_ARGUMENT, "%s", kiln_last_error());
        return NULL;
    }
    kiln_node *y = ox_importer_output(im, 0);
    ox_importer_free(im);
    return y;
}

/* ---- the ops and FLOPs a summary shows (a multiply-add counts as 2, as Kiln's layers) ---- */
static int64_t node_flops(const ox_importer *im, const Onnx__NodeProto *n) {
    static const char *const moves[] = { "Reshape", "Flatten", "Transpose", "Shape", "Gather", "Concat", "Squeeze", "Unsqueeze", "Constant",
                                         "Identity", "Slice", "Cast", "Dropout", "Expand", "Split", "Pad", NULL };
    const char *t = n->op_type;
    kiln_shape y, a;
    if (!n->n_output || !ox_importer_shape(im, n->output[0], &y)) return 0;
    int64_t out = kiln_shape_numel(y);
    for (int i = 0; moves[i]; i++) if (!strcmp(t, moves[i])) return 0;
    bool has_a = n->n_input > 0 && ox_importer_shape(im, n->input[0], &a);
    if (!strcmp(t, "Conv") && n->n_input > 1 && ox_importer_shape(im, n->input[1], &a) && a.rank > 0 && a.dim[0] > 0)
        return 2 * out * (kiln_shape_numel(a) / a.dim[0]) + (n->n_input > 2 ? out : 0);     /* W [M, C/group, k...] */
    if ((!strcmp(t, "MatMul") || !strcmp(t, "Gemm")) && has_a && a.rank > 0) {
        int64_t k = !strcmp(t, "Gemm") && a.rank == 2 && ox_attr_int(n, "transA", 0) ? a.dim[0] : a.dim[a.rank - 1];
        return 2 * out * k + (!strcmp(t, "Gemm") && n->n_input > 2 ? out : 0);
    }
    if (strstr(t, "Pool") && has_a) return kiln_shape_numel(a);
    return out;       /* elementwise and normalizations: about one per output */
}
static void count_ops(ox_model *om, const ox_importer *im) {
    const Onnx__GraphProto *gr = om->proto->graph;
    om->n_ops = 0;
    om->flops = 0;
    for (size_t i = 0; i < gr->n_node; i++) {
        const Onnx__NodeProto *n = gr->node[i];
        if ((int)i == om->skip_node || !n->op_type) continue;
        int64_t fl = node_flops(im, n);
        int k = 0;
        while (k < om->n_ops && strcmp(om->ops[k].type, n->op_type)) k++;
        if (k == om->n_ops && om->n_ops < (int)(sizeof om->ops / sizeof *om->ops)) om->ops[om->n_ops++].type = n->op_type;
        if (k < om->n_ops) { om->ops[k].count++; om->ops[k].flops += fl; }
        om->flops += fl;
    }
}
static int64_t ext_flops(const void *data) { return ((const ox_model *)data)->flops; }
static void ext_summary(const void *data, FILE *f) {
    const ox_model *om = data;
    for (int k = 0; k < om->n_ops; k++)
        fprintf(f, "   %s x%d: %lld FLOPs\n", om->ops[k].type, om->ops[k].count, (long long)om->ops[k].flops);
}

static const nn_layer_ext onnx_ext = { "ONNX model", layer_forward, ox_model_release, ext_flops, ext_summary };

/* The output shape for one batch size, built in a scratch graph. */
static kiln_status probe(ox_model *om, kiln_shape in_shape, int64_t batch, kiln_shape *out) {
    kiln_graph *g = kiln_graph_new();
    if (!g) return kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    om->trial = g;
    kiln_shape s = { .rank = in_shape.rank + 1 };
    s.dim[0] = batch;
    for (int i = 0; i < in_shape.rank; i++) s.dim[i + 1] = in_shape.dim[i];
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, s);
    kiln_onnx_input in = { .name = om->input_name, .node = om->in_dtype == KILN_F32 || !x ? x : kiln_cast(g, x, om->in_dtype) };
    ox_import_spec sp = spec_of(om, g, batch, false, 0, &in);
    ox_importer *im = NULL;
    kiln_status st = in.node ? ox_import(&sp, &im) : kiln_set_error(kiln_graph_status(g), "%s", kiln_graph_error(g));
    if (!st) *out = kiln_node_shape(ox_importer_output(im, 0));
    if (!st && batch == 1) count_ops(om, im);
    ox_importer_free(im);
    kiln_graph_free(g);
    om->trial = NULL;
    return st;
}

static int last_softmax(const Onnx__ModelProto *m, int out_rank) {
    const Onnx__GraphProto *gr = m->graph;
    for (size_t i = gr->n_node; i-- > 0;) {
        const Onnx__NodeProto *n = gr->node[i];
        if (n->n_output < 1 || !n->output[0] || strcmp(n->output[0], gr->output[0]->name)) continue;
        if (!n->op_type || strcmp(n->op_type, "Softmax") || n->n_input < 1) return -1;
        int64_t a = ox_attr_int(n, "axis", -1);
        for (size_t k = 0; k < m->n_opset_import; k++)
            if ((!m->opset_import[k]->domain || !*m->opset_import[k]->domain) && m->opset_import[k]->version < 13) a = ox_attr_int(n, "axis", 1);
        return a == -1 || a == out_rank - 1 ? (int)i : -1;
    }
    return -1;
}

static kiln_status fail_model(ox_model *om, kiln_model *m, kiln_status st) {
    ox_model_release(om);
    kiln_model_free(m);
    return st;
}

kiln_status kiln_model_from_onnx(const char *path, const kiln_onnx_model_opts *o, kiln_model **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_onnx: NULL out");
    *out = NULL;
    if (!path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_onnx: NULL path");
    kiln_onnx_model_opts def = { 0 };
    if (!o) o = &def;
    ox_model *om = kiln_calloc(1, sizeof *om);
    if (!om) return kiln_set_error(KILN_OUT_OF_MEMORY, "ONNX model %s: out of host memory", path);
    om->skip_node = -1;
    kiln_status st = ox_model_read(path, &om->proto);
    if (st) return fail_model(om, NULL, st);
    const Onnx__GraphProto *gr = om->proto->graph;
    om->path = kiln_strdup(path);
    om->use = kiln_calloc(gr->n_initializer + 1, sizeof *om->use);
    if (!om->path || !om->use) return fail_model(om, NULL, kiln_set_error(KILN_OUT_OF_MEMORY, "ONNX model %s: out of host memory", path));
    for (size_t i = 0; i < gr->n_initializer; i++) om->use[i].var = -1;
    kiln_dtype dt;
    kiln_shape s;
    if ((st = ox_input_shape(om->proto, path, 0, &dt, &s, &om->input_name))) return fail_model(om, NULL, st);
    kiln_shape extra;
    if (ox_input_shape(om->proto, path, 1, &dt, &extra, NULL) == KILN_OK)
        return fail_model(om, NULL, kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: it has several inputs; a Kiln model takes one", path));
    if (gr->n_output != 1)
        return fail_model(om, NULL, kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: it has %zu outputs; a Kiln model has one", path, gr->n_output));
    if (dt != KILN_F32 && dt != KILN_I32 && dt != KILN_I64)
        return fail_model(om, NULL, kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: input '%s' is %s; a Kiln model takes f32 (float) input, or "
                                                   "integer token ids (i32, i64: given to Kiln as floats, as to its Embedding layers)", path, om->input_name, kiln_dtype_name(dt)));
    om->in_dtype = dt;
    if (s.rank < 2) return fail_model(om, NULL, kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: input '%s' needs a batch dimension and at least one more", path, om->input_name));
    for (int d = 1; d < s.rank; d++)
        if (s.dim[d] < 0) return fail_model(om, NULL, kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: input '%s' dimension %d is symbolic; a Kiln model needs fixed sizes except for the batch", path, om->input_name, d));
    kiln_shape in = { .rank = s.rank - 1 };             /* the Kiln model's input, batch excluded */
    for (int d = 1; d < s.rank; d++) in.dim[d - 1] = s.dim[d];
    if (o->nhwc_input) {
        if (s.rank < 3) return fail_model(om, NULL, kiln_set_error(KILN_INVALID_ARGUMENT, "ONNX model %s: nhwc_input: input '%s' has rank %d, not an image batch [N, C, ...]", path, om->input_name, s.rank));
        om->nhwc = true;
        ox_perm_nhwc(om->input_perm, s.rank);
        for (int j = 1; j < s.rank; j++) in.dim[j - 1] = s.dim[om->input_perm[j]];
    }
    kiln_shape o1, o2;
    if ((st = probe(om, in, 1, &o1))) return fail_model(om, NULL, st);
    if (o->strip_softmax && (om->skip_node = last_softmax(om->proto, o1.rank)) >= 0) {
        for (size_t i = 0; i < gr->n_initializer; i++) om->use[i].used = false;
        if ((st = probe(om, in, 1, &o1))) return fail_model(om, NULL, st);
    }
    if ((st = probe(om, in, 2, &o2))) return fail_model(om, NULL, st);
    bool batched = o1.rank >= 2 && o2.rank == o1.rank && o1.dim[0] == 1 && o2.dim[0] == 2;
    for (int d = 1; batched && d < o1.rank; d++) batched = o1.dim[d] == o2.dim[d];
    if (!batched) {
        char a[96], b[96];
        return fail_model(om, NULL, kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: its output is %s for a batch of 1 and %s for 2; a Kiln model needs "
                                                   "[batch, ...] (was the model exported with a fixed batch size? export it with a dynamic one)",
                                                   path, kiln_shape_str(o1, a, sizeof a), kiln_shape_str(o2, b, sizeof b)));
    }
    kiln_shape out_shape = { .rank = o1.rank - 1 };
    for (int d = 1; d < o1.rank; d++) out_shape.dim[d - 1] = o1.dim[d];
    /* the model */
    char name[NN_NAME];
    if (o->name && *o->name) snprintf(name, sizeof name, "%s", o->name);
    else {
        const char *b = strrchr(path, '/');
        snprintf(name, sizeof name, "%s", b ? b + 1 : path);
        char *dot = strrchr(name, '.');
        if (dot && dot != name && !strcmp(dot, ".onnx")) *dot = 0;
    }
    kiln_model *m = kiln_model_new(name);
    if (!m) return fail_model(om, NULL, KILN_OUT_OF_MEMORY);
    kiln_layer *x = kiln_input(m, in);
    kiln_layer *l = x ? nn_layer_add_imported(m, "onnx_graph", x, &onnx_ext, om, out_shape) : NULL;
    if (!x) ox_model_release(om);
    if (!l) { st = kiln_model_status(m) ? kiln_model_status(m) : KILN_INTERNAL; kiln_set_error(st, "%s", kiln_model_error(m)); kiln_model_free(m); return st; }
    /* the initializers ops read as data: the layer's variables, their values carried into the first build */
    for (size_t i = 0; i < gr->n_initializer && !st; i++) {
        ox_init_use *u = &om->use[i];
        const Onnx__TensorProto *t = gr->initializer[i];
        if (!u->used) continue;
        kiln_tensor *v = NULL, *pv = NULL;
        char what[600], suffix[64];
        snprintf(what, sizeof what, "ONNX model %s: initializer '%s'", path, t->name);
        if ((st = ox_tensor_read(t, what, &v))) break;
        if (v->dtype != KILN_F32) {
            kiln_tensor_free(v);
            st = kiln_set_error(KILN_UNSUPPORTED, "%s is %s; a Kiln model's weights are f32", what, kiln_dtype_name(v->dtype));
            break;
        }
        pv = ox_permute(v, u->perm);
        kiln_tensor_free(v);
        if (!pv) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what); break; }
        const char *sfx = t->name;
        if (strlen(sfx) > 200) { snprintf(suffix, sizeof suffix, "initializer_%zu", i); sfx = suffix; }
        u->var = l->n_vars;
        nn_layer_add_var(l, sfx, pv->shape, kiln_init_zeros(), !u->moving, 0);
        if (kiln_model_status(m)) st = kiln_model_status(m);
        else st = nn_carry_add(m, l->vars[u->var].name, pv);
        kiln_tensor_free(pv);
    }
    if (!st) st = kiln_model_functional(m, &x, 1, &l, 1);
    if (st) { char msg[1024]; snprintf(msg, sizeof msg, "%s", kiln_last_error()); kiln_model_free(m); return kiln_set_error(st, "%s", msg); }
    *out = m;
    return KILN_OK;
}

/* A model kiln_model_from_onnx made, written back: its source graph as read, each initializer
 * that became a variable holding the variable's current value (fine-tuned weights and running
 * statistics), in ONNX's layout. The graph keeps its own input layout (NCHW for an image). */
kiln_status ox_model_write_imported(kiln_model *m, kiln_layer *l, const char *path) {
    if (l->ext != &onnx_ext) return kiln_set_error(KILN_UNSUPPORTED, "layer %s: its graph was not imported from an ONNX file", l->name);
    ox_model *om = l->ext_data;
    Onnx__GraphProto *gr = om->proto->graph;
    size_t n = gr->n_initializer;
    Onnx__TensorProto **saved = gr->initializer, **inits = kiln_calloc(n + 1, sizeof *inits);
    Onnx__TensorProto *copies = kiln_calloc(n + 1, sizeof *copies);
    kiln_tensor **vals = kiln_calloc(n + 1, sizeof *vals);
    kiln_status st = inits && copies && vals ? nn_ensure_session(m, 1) : kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < n && !st; i++) {
        ox_init_use *u = &om->use[i];
        inits[i] = saved[i];
        if (u->var < 0) continue;
        const nn_var *v = &l->vars[u->var];
        int r = (int)saved[i]->n_dims, inv[KILN_MAX_DIMS];
        kiln_tensor *t = kiln_tensor_new(KILN_F32, v->shape);
        if (!t) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory"); break; }
        if ((st = kiln_session_read_variable(m->s, v->node, t))) { kiln_tensor_free(t); break; }
        for (int j = 0; j < r; j++) inv[u->perm[j]] = j;     /* back to the initializer's layout */
        vals[i] = r > 1 ? ox_permute(t, inv) : t;
        if (r > 1) kiln_tensor_free(t);
        if (!vals[i]) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory"); break; }
        copies[i] = *saved[i];          /* shares name and dims with the source; data: the value's bytes */
        copies[i].data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        copies[i].n_float_data = 0;
        copies[i].float_data = NULL;
        copies[i].n_external_data = 0;
        copies[i].external_data = NULL;
        copies[i].has_data_location = false;
        copies[i].has_raw_data = true;
        copies[i].raw_data.len = (size_t)kiln_shape_numel(vals[i]->shape) * sizeof(float);
        copies[i].raw_data.data = vals[i]->data;
        inits[i] = &copies[i];
    }
    if (!st) {
        gr->initializer = inits;
        st = ox_model_write(om->proto, path);
        gr->initializer = saved;
    }
    for (size_t i = 0; vals && i < n; i++) kiln_tensor_free(vals[i]);
    kiln_free(vals);
    kiln_free(copies);
    kiln_free(inits);
    return st;
}
