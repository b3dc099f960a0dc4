/* The ONNX graph importer's core: the values of a graph (inputs, initializers, node outputs),
 * their layouts and host values, the walk over the nodes an output needs, and the dispatch to
 * the op handlers (onnx_ops_elementwise.c, onnx_ops_nn.c, onnx_ops_shape.c). */
#include <stdarg.h>
#include <string.h>
#include "onnx/onnx_ops.h"
#include "ops/op.h"

struct ox_importer {
    ox_import_spec sp;
    const Onnx__GraphProto *gr;
    int opset;
    ox_val *v;
    int nv;
    int *hash;                        /* open addressing over v, -1 empty */
    int hcap;
    kiln_tensor **init_vals;          /* converted initializers (lazy) */
    int n_inputs;                     /* non-initializer graph inputs */
    int *input_vals;
    const Onnx__NodeProto *cur;
    int cur_index;
    kiln_status st;
};

kiln_graph *ox_graph(ox_importer *im) { return im->sp.g; }
int ox_opset(const ox_importer *im) { return im->opset; }
bool ox_training(const ox_importer *im) { return im->sp.training; }
uint64_t ox_seed(ox_importer *im) { return kiln_mix64(im->sp.seed ^ (0x0D0Eull + (uint64_t)im->cur_index)); }

/* ---- errors ---- */
kiln_status ox_fail(ox_importer *im, kiln_status s, const char *fmt, ...) {
    if (im->st) return im->st;          /* the first error stands */
    char msg[1024], where[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (im->cur) {
        if (im->cur->name && *im->cur->name)
            snprintf(where, sizeof where, "node '%s' (%s)", im->cur->name, im->cur->op_type ? im->cur->op_type : "?");
        else snprintf(where, sizeof where, "node #%d (%s)", im->cur_index, im->cur->op_type ? im->cur->op_type : "?");
    } else snprintf(where, sizeof where, "graph");
    im->st = kiln_set_error(s, "ONNX model %s: %s: %s", im->sp.path, where, msg);
    return im->st;
}

kiln_status ox_graph_fail(ox_importer *im) {
    kiln_status s = kiln_graph_status(im->sp.g);
    return ox_fail(im, s ? s : KILN_INTERNAL, "%s", s ? kiln_graph_error(im->sp.g) : "a builder failed");
}

kiln_status ox_status(const ox_importer *im) { return im->st; }

/* ---- attributes Kiln keeps in an int or sizes something with ---- */
static bool attr_value_ok(ox_importer *im, const char *name, int64_t v, int64_t lo, int64_t hi) {
    if (v >= lo && v <= hi) return true;
    ox_fail(im, KILN_INVALID_ARGUMENT, "attribute '%s' = %lld is outside [%lld, %lld]", name, (long long)v, (long long)lo, (long long)hi);
    return false;
}

bool ox_attr_int_in(ox_importer *im, const Onnx__NodeProto *n, const char *name, int64_t dflt, int64_t lo, int64_t hi, int64_t *out) {
    *out = ox_attr_int(n, name, dflt);
    return attr_value_ok(im, name, *out, lo, hi);
}

int ox_attr_ints_in(ox_importer *im, const Onnx__NodeProto *n, const char *name, int64_t *out, int max, int64_t lo, int64_t hi) {
    const Onnx__AttributeProto *a = ox_attr(n, name);
    if (!a) return -1;
    if (a->n_ints > (size_t)max) { ox_fail(im, KILN_INVALID_ARGUMENT, "attribute '%s' has %zu values, at most %d are expected", name, a->n_ints, max); return -2; }
    for (size_t i = 0; i < a->n_ints; i++) {
        if (!attr_value_ok(im, name, a->ints[i], lo, hi)) return -2;
        out[i] = a->ints[i];
    }
    return (int)a->n_ints;
}

/* ---- host tensors of values known while building ---- */
kiln_tensor *ox_host_new(ox_importer *im, kiln_dtype dt, kiln_shape s, bool quiet) {
    char b[96];
    int64_t bytes = (int64_t)kiln_dtype_size(dt);
    bool ok = s.rank >= 0 && s.rank <= KILN_MAX_DIMS;
    for (int i = 0; ok && i < s.rank; i++) ok = s.dim[i] >= 0 && !__builtin_mul_overflow(bytes, s.dim[i], &bytes);
    if (!ok || bytes > OX_MAX_FOLDED_BYTES) {
        if (quiet) return NULL;
        if (s.rank < 0 || s.rank > KILN_MAX_DIMS) ox_fail(im, KILN_UNSUPPORTED, "its result has rank %d, more than Kiln's %d", s.rank, KILN_MAX_DIMS);
        else if (!ok) ox_fail(im, KILN_INVALID_ARGUMENT, "its result %s has a negative dimension or a size that overflows", kiln_shape_str(s, b, sizeof b));
        else ox_fail(im, KILN_UNSUPPORTED, "its result %s %s, computed while the graph is built, takes %lld bytes, more than the %d MiB Kiln "
                     "folds (a shape computation this large is not one)", kiln_dtype_name(dt), kiln_shape_str(s, b, sizeof b), (long long)bytes,
                     OX_MAX_FOLDED_BYTES >> 20);
        return NULL;
    }
    kiln_tensor *t = kiln_tensor_new(dt, s);
    if (!t && !quiet) ox_fail(im, KILN_OUT_OF_MEMORY, "out of host memory for %lld bytes", (long long)bytes);
    return t;
}

kiln_status ox_need_static(ox_importer *im, ox_val *v, const char *what) {
    if (im->st) return im->st;
    return ox_fail(im, KILN_UNSUPPORTED, "%s '%s' must be known when the graph is built (an initializer, a Constant or computed "
                   "from shapes); Kiln's ops take it as a fixed attribute", what, v->name);
}

/* ---- layouts ---- */
void ox_perm_ident(int *p, int r) { for (int i = 0; i < r; i++) p[i] = i; }
bool ox_perm_is_ident(const int *p, int r) {
    for (int i = 0; i < r; i++) if (p[i] != i) return false;
    return true;
}
void ox_perm_nhwc(int *p, int r) {
    ox_perm_ident(p, r);
    if (r <= 2) return;
    for (int i = 1; i < r - 1; i++) p[i] = i + 1;
    p[r - 1] = 1;
}
int ox_perm_find(const int *p, int r, int a) {
    for (int j = 0; j < r; j++) if (p[j] == a) return j;
    return -1;
}
static bool perm_eq(const int *a, const int *b, int r) { return !memcmp(a, b, (size_t)r * sizeof *a); }

int ox_axis(ox_importer *im, int64_t axis, int r, const char *what) {
    if (axis < -r || axis >= (r > 0 ? r : 1)) { ox_fail(im, KILN_INVALID_ARGUMENT, "%s %lld is out of range for rank %d", what, (long long)axis, r); return -1; }
    return (int)(axis < 0 ? axis + r : axis);
}

kiln_node *ox_scalar(ox_importer *im, kiln_dtype dt, double v) { return kiln_scalar(im->sp.g, dt, v); }

/* ---- values ---- */
static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static int find(const ox_importer *im, const char *name) {
    for (uint64_t h = hash_str(name);; h++) {
        int i = im->hash[h & (uint64_t)(im->hcap - 1)];
        if (i < 0) return -1;
        if (!strcmp(im->v[i].name, name)) return i;
    }
}

/* The value named name, made when new (names are unique in a valid graph). */
static int intern(ox_importer *im, const char *name) {
    int i = find(im, name);
    if (i >= 0) return i;
    i = im->nv++;
    im->v[i] = (ox_val){ .name = name, .init = -1, .producer = -1 };
    for (uint64_t h = hash_str(name);; h++)
        if (im->hash[h & (uint64_t)(im->hcap - 1)] < 0) { im->hash[h & (uint64_t)(im->hcap - 1)] = i; break; }
    return i;
}

ox_val *ox_in(ox_importer *im, const Onnx__NodeProto *n, int i) {
    if (i >= (int)n->n_input || !n->input[i] || !*n->input[i]) return NULL;
    int k = find(im, n->input[i]);
    return k >= 0 ? &im->v[k] : NULL;
}
int ox_n_in(const Onnx__NodeProto *n) {
    int k = (int)n->n_input;
    while (k > 0 && (!n->input[k - 1] || !*n->input[k - 1])) k--;
    return k;
}
bool ox_has_out(const Onnx__NodeProto *n, int i) { return i < (int)n->n_output && n->output[i] && *n->output[i]; }

kiln_status ox_importer_init_value(ox_importer *im, int index, const kiln_tensor **out) {
    *out = NULL;
    if (!im->init_vals[index]) {
        const Onnx__TensorProto *t = im->gr->initializer[index];
        char what[600];
        snprintf(what, sizeof what, "ONNX model %s: initializer '%s'", im->sp.path, t->name ? t->name : "");
        kiln_status st = ox_tensor_read(t, what, &im->init_vals[index]);
        if (st) { if (!im->st) im->st = st; return st; }
    }
    *out = im->init_vals[index];
    return KILN_OK;
}
const Onnx__TensorProto *ox_importer_init(const ox_importer *im, int index) { return im->gr->initializer[index]; }
int ox_importer_init_count(const ox_importer *im) { return (int)im->gr->n_initializer; }
bool ox_importer_shape(const ox_importer *im, const char *name, kiln_shape *out) {
    int i = name && *name ? find(im, name) : -1;
    if (i < 0 || !im->v[i].defined) return false;
    *out = im->v[i].shape;
    return true;
}

const kiln_tensor *ox_static(ox_importer *im, ox_val *v) {
    if (v->host) return v->host;
    if (v->init >= 0 && ox_importer_init_value(im, v->init, &v->host)) return NULL;
    return v->host;
}

const kiln_tensor *ox_foldable(ox_importer *im, ox_val *v) {
    if (v->runtime) return NULL;
    if (v->init >= 0 && im->sp.init_node && kiln_dtype_is_float(v->dtype) && v->shape.rank >= 1) return NULL;   /* a weight */
    return ox_static(im, v);
}

int ox_static_ints(ox_importer *im, const Onnx__NodeProto *n, ox_val *v, const char *what, int64_t *out, int max) {
    const kiln_tensor *t = ox_static(im, v);
    if (!t) { ox_need_static(im, v, what); return -1; }
    if ((t->dtype != KILN_I64 && t->dtype != KILN_I32) || t->shape.rank > 1) {
        char b[96];
        ox_fail(im, KILN_INVALID_ARGUMENT, "%s '%s' is %s %s: a list of int64 is expected", what, v->name, kiln_dtype_name(t->dtype),
                kiln_shape_str(t->shape, b, sizeof b));
        return -1;
    }
    int64_t k = kiln_shape_numel(t->shape);
    if (k > max) { ox_fail(im, KILN_UNSUPPORTED, "%s '%s' has %lld values; at most %d are supported", what, v->name, (long long)k, max); return -1; }
    for (int64_t i = 0; i < k; i++) out[i] = t->dtype == KILN_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
    return (int)k;
}

/* Node holding v in layout from, transposed to layout to. */
static kiln_node *relayout(ox_importer *im, kiln_node *x, const int *from, const int *to, int r) {
    if (perm_eq(from, to, r)) return x;
    int t[KILN_MAX_DIMS];
    for (int i = 0; i < r; i++) t[i] = ox_perm_find(from, r, to[i]);
    return kiln_transpose(im->sp.g, x, t);
}

kiln_node *ox_node_as(ox_importer *im, ox_val *v, const int *want, bool moving) {
    int r = v->shape.rank, ident[KILN_MAX_DIMS];
    if (!want) { ox_perm_ident(ident, r); want = ident; }
    if (!v->node && kiln_shape_numel(v->shape) == 0) {
        char b[96];
        ox_fail(im, KILN_UNSUPPORTED, "'%s' %s has no elements: Kiln's tensors have at least one", v->name, kiln_shape_str(v->shape, b, sizeof b));
        return NULL;
    }
    if (!v->node) {
        if (v->init >= 0 && im->sp.init_node && kiln_dtype_is_float(v->dtype) && r >= 1) {
            int got[KILN_MAX_DIMS];
            ox_perm_ident(got, r);
            v->node = im->sp.init_node(im->sp.user, im, v->init, want, moving, got);
            if (!v->node) { if (!im->st) ox_fail(im, kiln_graph_status(im->sp.g) ? kiln_graph_status(im->sp.g) : KILN_INTERNAL, "initializer '%s': %s", v->name, kiln_last_error()); return NULL; }
            memcpy(v->perm, got, sizeof got);
        } else {
            const kiln_tensor *h = ox_static(im, v);
            if (!h) { if (!im->st) ox_fail(im, KILN_INTERNAL, "value '%s' has no node and no known value", v->name); return NULL; }
            v->node = kiln_constant(im->sp.g, h);
            if (!v->node) { ox_graph_fail(im); return NULL; }
            ox_perm_ident(v->perm, r);
        }
    }
    if (perm_eq(v->perm, want, r)) return v->node;
    if (v->alt && perm_eq(v->alt_perm, want, r)) return v->alt;
    kiln_node *t = relayout(im, v->node, v->perm, want, r);
    if (!t) { ox_graph_fail(im); return NULL; }
    v->alt = t;
    memcpy(v->alt_perm, want, (size_t)r * sizeof *want);
    return t;
}

kiln_node *ox_node(ox_importer *im, ox_val *v) { return ox_node_as(im, v, NULL, false); }

kiln_node *ox_node_any(ox_importer *im, ox_val *v, int *perm) {
    if (!v->node) {
        if (!ox_node(im, v)) return NULL;
    }
    memcpy(perm, v->perm, sizeof v->perm);
    return v->node;
}

static ox_val *out_val(ox_importer *im, const Onnx__NodeProto *n, int i) {
    int k = ox_has_out(n, i) ? find(im, n->output[i]) : -1;
    return k >= 0 ? &im->v[k] : NULL;
}

/* "node 'name' (Op)" or "node #i (Op)" for messages. */
static const char *node_desc(const Onnx__GraphProto *gr, int i, char *buf, size_t len) {
    const Onnx__NodeProto *n = gr->node[i];
    const char *op = n->op_type ? n->op_type : "?";
    if (n->name && *n->name) snprintf(buf, len, "node '%.200s' (%.100s)", n->name, op);
    else snprintf(buf, len, "node #%d (%.100s)", i, op);
    return buf;
}

kiln_status ox_set(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_node *y, const int *perm) {
    if (!y) return ox_graph_fail(im);
    ox_val *o = out_val(im, n, i);
    if (!o) return KILN_OK;
    kiln_shape s = kiln_node_shape(y);
    int ident[KILN_MAX_DIMS];
    if (!perm) { ox_perm_ident(ident, s.rank); perm = ident; }
    o->node = y;
    memcpy(o->perm, perm, (size_t)s.rank * sizeof *perm);
    o->dtype = kiln_node_dtype(y);
    o->shape.rank = s.rank;
    for (int j = 0; j < s.rank; j++) o->shape.dim[perm[j]] = s.dim[j];
    o->defined = true;
    o->runtime = true;
    return KILN_OK;
}

void ox_set_known(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_tensor *t) {
    ox_val *o = out_val(im, n, i);
    if (!o || !t || !o->defined || o->host || !kiln_shape_equal(t->shape, o->shape) || t->dtype != o->dtype) { kiln_tensor_free(t); return; }
    o->owned = t;
    o->host = t;
}

kiln_status ox_set_folded(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_tensor *h, bool all_foldable, kiln_node *y, const int *perm) {
    if (h && all_foldable) return ox_set_host(im, n, i, h);
    kiln_status st = ox_set(im, n, i, y, perm);
    if (st) { kiln_tensor_free(h); return st; }
    ox_set_known(im, n, i, h);
    return KILN_OK;
}

kiln_status ox_set_host(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_tensor *t) {
    if (!t) return ox_fail(im, KILN_OUT_OF_MEMORY, "out of host memory");    /* the first error (ox_host_new's) stands */
    ox_val *o = out_val(im, n, i);
    if (!o) { kiln_tensor_free(t); return KILN_OK; }
    o->owned = t;
    o->host = t;
    o->dtype = t->dtype;
    o->shape = t->shape;
    o->defined = true;
    return KILN_OK;
}

kiln_status ox_alias(ox_importer *im, const Onnx__NodeProto *n, int i, ox_val *v) {
    ox_val *o = out_val(im, n, i);
    if (!o) return KILN_OK;
    const char *name = o->name;
    bool needed = o->needed;
    *o = *v;
    o->name = name;
    o->needed = needed;
    o->owned = NULL;                   /* v keeps owning its host value */
    o->init = v->init;
    return KILN_OK;
}

/* ---- the op table ---- */
static const ox_op *find_op(const char *type) {
    static const ox_op *const tables[] = { ox_ops_elementwise, ox_ops_nn, ox_ops_shape, ox_ops_loss };
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const ox_op *o = tables[t]; o->type; o++)
            if (!strcmp(o->type, type)) return o;
    return NULL;
}

static bool listed(const char *list, const char *name) {
    size_t k = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == k && !strncmp(p, name, k)) return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

static kiln_status run_node(ox_importer *im, const Onnx__NodeProto *n) {
    const char *type = n->op_type ? n->op_type : "";
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
        return ox_fail(im, KILN_UNSUPPORTED, "op domain '%s' is not supported (only the default ONNX domain)", n->domain);
    const ox_op *op = find_op(type);
    if (!op) return ox_fail(im, KILN_UNSUPPORTED, "op %s is not supported by Kiln", type);
    for (size_t a = 0; a < n->n_attribute; a++) {
        const char *an = n->attribute[a]->name ? n->attribute[a]->name : "";
        if (!listed(op->attrs, an)) return ox_fail(im, KILN_UNSUPPORTED, "attribute '%s' is not supported", an);
        if (n->attribute[a]->ref_attr_name && *n->attribute[a]->ref_attr_name)
            return ox_fail(im, KILN_UNSUPPORTED, "attribute '%s' refers to a function attribute", an);
    }
    for (int i = 0; i < (int)n->n_input; i++) {
        if (!n->input[i] || !*n->input[i]) continue;
        ox_val *v = ox_in(im, n, i);
        if (!v || !v->defined) return ox_fail(im, KILN_INVALID_ARGUMENT, "input '%s' is not made by an earlier node, an initializer or a graph input", n->input[i]);
    }
    ox_val *x = ox_in(im, n, 0);
    if (!x && strcmp(type, "Constant"))          /* every op Kiln reads but Constant takes a first input */
        return ox_fail(im, KILN_INVALID_ARGUMENT, "its first input is missing");
    if (x && !(op->flags & OX_ANY) && !kiln_dtype_is_float(x->dtype) &&
        ((op->flags & OX_FLOAT) || (x->dtype != KILN_I32 && x->dtype != KILN_I64)))
        return ox_fail(im, KILN_UNSUPPORTED, "input '%s' is %s: Kiln's %s takes %s", x->name, kiln_dtype_name(x->dtype), type,
                       (op->flags & OX_FLOAT) ? "floating-point tensors (f32, f64, f16, bf16)" : "f32, f64, f16, bf16, i32 or i64 tensors");
    kiln_status st = op->fn(im, n);
    if (st) return im->st ? im->st : st;
    for (int i = 0; i < (int)n->n_output; i++) {
        ox_val *o = out_val(im, n, i);
        if (o && o->needed && !o->defined) return ox_fail(im, KILN_UNSUPPORTED, "output %d ('%s') is not supported", i, o->name);
    }
    return KILN_OK;
}

/* ---- inputs ---- */
static bool is_initializer(const Onnx__GraphProto *gr, const char *name) {
    for (size_t i = 0; i < gr->n_initializer; i++)
        if (gr->initializer[i]->name && !strcmp(gr->initializer[i]->name, name)) return true;
    return false;
}

kiln_status ox_input_shape(const Onnx__ModelProto *m, const char *path, int k, kiln_dtype *dt, kiln_shape *s, const char **name) {
    const Onnx__GraphProto *gr = m->graph;
    int seen = 0;
    for (size_t i = 0; i < gr->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gr->input[i];
        if (!vi->name || is_initializer(gr, vi->name)) continue;
        if (seen++ != k) continue;
        if (name) *name = vi->name;
        const Onnx__TypeProto *tp = vi->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
            return kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: input '%s' is not a tensor (sequences, maps and optionals are not supported)", path, vi->name);
        if (!ox_dtype_of(tp->tensor_type->elem_type, dt))
            return kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: input '%s' is %s, an element type Kiln lacks", path, vi->name, ox_type_name(tp->tensor_type->elem_type));
        const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
        if (!sh) return kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: input '%s' has no shape; Kiln needs its rank and sizes", path, vi->name);
        if (sh->n_dim > KILN_MAX_DIMS) return kiln_set_error(KILN_UNSUPPORTED, "ONNX model %s: input '%s' has rank %zu, more than Kiln's %d", path, vi->name, sh->n_dim, KILN_MAX_DIMS);
        s->rank = (int)sh->n_dim;
        for (size_t d = 0; d < sh->n_dim; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];
            bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value > 0;
            s->dim[d] = known ? dim->dim_value : -1;
        }
        return KILN_OK;
    }
    return kiln_set_error(KILN_NOT_FOUND, "ONNX model %s: it has no input %d", path, k);
}

static kiln_status define_input(ox_importer *im, int k) {
    kiln_dtype dt;
    kiln_shape s;
    const char *name;
    kiln_status st = ox_input_shape(im->sp.model, im->sp.path, k, &dt, &s, &name);
    if (st) { im->st = st; return st; }
    int vi = find(im, name);
    if (vi < 0) return ox_fail(im, KILN_INTERNAL, "input '%s' has no value", name);
    ox_val *v = &im->v[vi];
    im->input_vals[k] = vi;
    const kiln_onnx_input *b = NULL;
    for (int i = 0; i < im->sp.n_inputs; i++)
        if (im->sp.inputs[i].name && !strcmp(im->sp.inputs[i].name, name)) b = &im->sp.inputs[i];
    int r = s.rank;
    int perm[KILN_MAX_DIMS];
    ox_perm_ident(perm, r);
    if (k == 0 && im->sp.input_perm) memcpy(perm, im->sp.input_perm, (size_t)r * sizeof *perm);
    kiln_node *x = b ? b->node : NULL;
    if (!x && b && b->value) {         /* known value only: a node is made if an op reads it as data */
        if (b->value->dtype != dt || b->value->shape.rank != r)
            return ox_fail(im, KILN_SHAPE_MISMATCH, "input '%s' is %s of rank %d in the model, its value is %s of rank %d", name, kiln_dtype_name(dt), r,
                           kiln_dtype_name(b->value->dtype), b->value->shape.rank);
        v->host = b->value;
        v->dtype = dt;
        v->shape = b->value->shape;
        v->defined = true;
        return KILN_OK;
    }
    if (x) {
        kiln_shape ns = kiln_node_shape(x), logical = { .rank = ns.rank };
        for (int j = 0; j < ns.rank && j < KILN_MAX_DIMS; j++) logical.dim[perm[j]] = ns.dim[j];
        bool ok = ns.rank == r && kiln_node_dtype(x) == dt;
        for (int d = 0; ok && d < r; d++) ok = s.dim[d] < 0 || s.dim[d] == logical.dim[d] || (d == 0 && im->sp.any_batch);
        if (!ok) {
            char a[96], c[96];
            return ox_fail(im, KILN_SHAPE_MISMATCH, "input '%s' is %s %s in the model, the node bound to it is %s %s", name, kiln_dtype_name(dt),
                           kiln_shape_str(s, a, sizeof a), kiln_dtype_name(kiln_node_dtype(x)), kiln_shape_str(logical, c, sizeof c));
        }
        s = logical;
    } else {
        for (int d = 0; d < r; d++) {
            if (s.dim[d] > 0) continue;
            if (d > 0)
                return ox_fail(im, KILN_UNSUPPORTED, "input '%s' has a symbolic dimension %d; Kiln needs fixed sizes except for the batch (dimension 0)", name, d);
            s.dim[0] = im->sp.batch > 0 ? im->sp.batch : 1;
        }
        kiln_shape ps = { .rank = r };
        for (int j = 0; j < r; j++) ps.dim[j] = s.dim[perm[j]];
        x = kiln_placeholder(im->sp.g, name, dt, ps);
        if (!x) return ox_graph_fail(im);
    }
    v->node = x;
    memcpy(v->perm, perm, sizeof perm);
    v->dtype = dt;
    v->shape = s;
    v->defined = true;
    v->runtime = true;
    if (b && b->value) v->host = b->value;      /* known now: for ops that take it as a constant */
    return KILN_OK;
}

/* ---- the walk ---- */
static void mark_needed(ox_importer *im) {
    const Onnx__GraphProto *gr = im->gr;
    for (size_t i = 0; i < gr->n_output; i++) {
        int k = gr->output[i]->name ? find(im, gr->output[i]->name) : -1;
        if (k >= 0) im->v[k].needed = true;
    }
    for (size_t i = gr->n_node; i-- > 0;) {
        const Onnx__NodeProto *n = gr->node[i];
        bool need = false;
        for (size_t o = 0; o < n->n_output; o++)
            if (ox_has_out(n, (int)o)) { int k = find(im, n->output[o]); need |= k >= 0 && im->v[k].needed; }
        if (!need) continue;
        for (size_t o = 0; o < n->n_input; o++)
            if (n->input[o] && *n->input[o]) { int k = find(im, n->input[o]); if (k >= 0) im->v[k].needed = true; }
    }
}

static int opset_of(const Onnx__ModelProto *m) {
    int v = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if ((!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) && o->has_version) v = (int)o->version;
    }
    return v;
}

kiln_status ox_import(const ox_import_spec *spec, ox_importer **out) {
    *out = NULL;
    const Onnx__GraphProto *gr = spec->model->graph;
    ox_importer *im = kiln_calloc(1, sizeof *im);
    if (!im) return kiln_set_error(KILN_OUT_OF_MEMORY, "ONNX model %s: out of host memory", spec->path);
    im->sp = *spec;
    im->gr = gr;
    im->cur_index = -1;
    im->opset = opset_of(spec->model);
    size_t count = gr->n_input + gr->n_initializer + 1;
    for (size_t i = 0; i < gr->n_node; i++) count += gr->node[i]->n_output + gr->node[i]->n_input;
    im->hcap = 16;
    while ((size_t)im->hcap < 2 * count) im->hcap *= 2;
    im->v = kiln_calloc(count, sizeof *im->v);
    im->hash = kiln_malloc((size_t)im->hcap * sizeof *im->hash);
    im->init_vals = kiln_calloc(gr->n_initializer + 1, sizeof *im->init_vals);
    im->input_vals = kiln_calloc(gr->n_input + 1, sizeof *im->input_vals);
    if (!im->v || !im->hash || !im->init_vals || !im->input_vals) {
        ox_importer_free(im);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "ONNX model %s: out of host memory", spec->path);
    }
    memset(im->hash, 0xff, (size_t)im->hcap * sizeof *im->hash);
    kiln_status st = KILN_OK;
    if (im->opset < 1)
        st = ox_fail(im, spec->model->n_opset_import ? KILN_UNSUPPORTED : KILN_INVALID_ARGUMENT, "the model imports no opset of the default ONNX domain%s%s",
                     spec->model->n_opset_import ? "; only that domain is supported, not " : "",
                     spec->model->n_opset_import && spec->model->opset_import[0]->domain ? spec->model->opset_import[0]->domain : "");
    else if (im->opset > 18)
        st = ox_fail(im, KILN_UNSUPPORTED, "opset %d is newer than Kiln reads (up to 18)", im->opset);
    for (size_t i = 0; !st && i < gr->n_initializer; i++) {
        const Onnx__TensorProto *t = gr->initializer[i];
        if (!t->name || !*t->name) { st = ox_fail(im, KILN_INVALID_ARGUMENT, "initializer %zu has no name", i); break; }
        if (find(im, t->name) >= 0) { st = ox_fail(im, KILN_INVALID_ARGUMENT, "initializer '%s' is given twice", t->name); break; }
        /* its shape is read before its values (Shape of it, layouts): checked now, values when read */
        if (t->n_dims > KILN_MAX_DIMS) {
            st = ox_fail(im, KILN_UNSUPPORTED, "initializer '%s' has rank %zu, more than Kiln's %d dimensions", t->name, t->n_dims, KILN_MAX_DIMS);
            break;
        }
        ox_val *v = &im->v[intern(im, t->name)];
        v->init = (int)i;
        v->defined = true;
        v->shape.rank = (int)t->n_dims;
        bool neg = false;
        for (int d = 0; d < v->shape.rank; d++) { v->shape.dim[d] = t->dims[d]; neg |= t->dims[d] < 0; }
        if (neg || kiln_shape_numel(v->shape) == INT64_MAX) {
            char b[96];
            st = ox_fail(im, KILN_INVALID_ARGUMENT, "initializer '%s' has shape %s: a negative dimension or a size that overflows", t->name,
                         kiln_shape_str(v->shape, b, sizeof b));
            break;
        }
        if (!ox_dtype_of(t->data_type, &v->dtype)) v->dtype = KILN_DTYPE_COUNT;   /* an error when read */
    }
    for (size_t i = 0; !st && i < gr->n_input; i++) {
        const char *name = gr->input[i]->name;
        if (!name || is_initializer(gr, name)) continue;
        if (find(im, name) >= 0) { st = ox_fail(im, KILN_INVALID_ARGUMENT, "graph input '%s' is given twice", name); break; }
        intern(im, name);
        im->n_inputs++;
    }
    /* single assignment: each value is written once (an initializer, a graph input or one node output) */
    for (size_t i = 0; !st && i < gr->n_node; i++)
        for (size_t o = 0; !st && o < gr->node[i]->n_output; o++) {
            if (!ox_has_out(gr->node[i], (int)o)) continue;
            const char *name = gr->node[i]->output[o];
            int k = find(im, name);
            if (k < 0) { im->v[intern(im, name)].producer = (int)i; continue; }
            char a[400], b[400];
            const ox_val *v = &im->v[k];
            if (v->producer >= 0)
                st = ox_fail(im, KILN_INVALID_ARGUMENT, "value '%s' is written by %s and again by %s; an ONNX graph assigns each value once", name,
                             node_desc(gr, v->producer, a, sizeof a), node_desc(gr, (int)i, b, sizeof b));
            else st = ox_fail(im, KILN_INVALID_ARGUMENT, "output '%s' of %s is also %s; an ONNX graph assigns each value once", name,
                              node_desc(gr, (int)i, b, sizeof b), v->init >= 0 ? "an initializer" : "a graph input");
        }
    for (size_t i = 0; !st && i < gr->n_output; i++) {
        const Onnx__TypeProto *tp = gr->output[i]->type;
        if (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
            st = ox_fail(im, KILN_UNSUPPORTED, "output '%s' is not a tensor (sequences, maps and optionals are not supported)", gr->output[i]->name);
    }
    for (size_t i = 0; !st && i < gr->n_output; i++)
        if (!gr->output[i]->name || find(im, gr->output[i]->name) < 0)
            st = ox_fail(im, KILN_INVALID_ARGUMENT, "output '%s' is not made by any node", gr->output[i]->name ? gr->output[i]->name : "");
    if (!st) mark_needed(im);
    for (int k = 0; !st && k < im->n_inputs; k++) st = define_input(im, k);
    for (size_t i = 0; !st && i < gr->n_node; i++) {
        const Onnx__NodeProto *n = gr->node[i];
        bool need = false;
        for (size_t o = 0; o < n->n_output; o++)
            if (ox_has_out(n, (int)o)) { int k = find(im, n->output[o]); need |= k >= 0 && im->v[k].needed; }
        if (!need) continue;
        im->cur = n;
        im->cur_index = (int)i;
        if ((int)i == spec->skip_node) {
            ox_val *x = ox_in(im, n, 0);
            if (!x || !x->defined) st = ox_fail(im, KILN_INVALID_ARGUMENT, "its input is not defined");
            else st = ox_alias(im, n, 0, x);
        } else st = run_node(im, n);
        if (!st && kiln_graph_status(spec->g)) st = ox_graph_fail(im);
    }
    im->cur = NULL;
    for (int i = 0; !st && i < ox_importer_output_count(im); i++)
        if (!ox_importer_output(im, i)) st = im->st ? im->st : ox_graph_fail(im);
    if (st) {
        ox_importer_free(im);
        return st;
    }
    *out = im;
    return KILN_OK;
}

void ox_importer_free(ox_importer *im) {
    if (!im) return;
    for (int i = 0; i < im->nv; i++) kiln_tensor_free(im->v[i].owned);
    for (size_t i = 0; im->init_vals && i < im->gr->n_initializer; i++) kiln_tensor_free(im->init_vals[i]);
    kiln_free(im->v);
    kiln_free(im->hash);
    kiln_free(im->init_vals);
    kiln_free(im->input_vals);
    kiln_free(im);
}

int ox_importer_output_count(const ox_importer *im) { return (int)im->gr->n_output; }
kiln_node *ox_importer_output(ox_importer *im, int i) {
    int k = find(im, im->gr->output[i]->name);
    return k >= 0 && im->v[k].defined ? ox_node(im, &im->v[k]) : NULL;
}
kiln_node *ox_importer_input(const ox_importer *im, int i) { return i >= 0 && i < im->n_inputs ? im->v[im->input_vals[i]].node : NULL; }
