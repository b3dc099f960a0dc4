/* fuzz_onnx's structure-aware mutator (LLVMFuzzerCustomMutator): decodes the input as an ONNX
 * ModelProto (protobuf-c, the messages src/onnx uses), applies one to three field mutations
 * (dims, attribute values and lists, op types among those Kiln imports, node input / output and
 * graph output names, initializer bytes, sizes and types, node order, duplicated / removed /
 * new nodes, the opset) and re-encodes. Inputs that do not decode, that nest deeper than any
 * model Kiln reads (protobuf-c's unpack recurses without a limit) or that re-encode past max_size
 * get libFuzzer's byte mutation instead, as do one in eight inputs; LLVMFuzzerCustomCrossOver
 * splices nodes of one model into another. Every replaced field is malloc'd: protobuf-c's
 * free_unpacked frees it with the default (malloc) allocator. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "onnx.pb-c.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#define MAX_DEPTH 24          /* a model with If/Loop bodies nests about 10 deep */

static uint64_t rng;
static uint32_t rnd(uint32_t n) {      /* xorshift64*, uniform enough for picking */
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return n ? (uint32_t)((rng * 2685821657736338717ull) >> 32) % n : 0;
}

/* ---- nesting depth of the wire format, by the message descriptors ---- */
static bool varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v) {
    *v = 0;
    for (int s = 0; s < 64 && *i < n; s += 7) {
        uint8_t b = p[(*i)++];
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return true;
    }
    return false;
}

static bool shallow(const uint8_t *p, size_t n, const ProtobufCMessageDescriptor *d, int depth) {
    if (depth > MAX_DEPTH) return false;
    for (size_t i = 0; i < n;) {
        uint64_t key, len;
        if (!varint(p, n, &i, &key) || key >> 3 > UINT32_MAX) return false;
        switch (key & 7) {
        case 0: if (!varint(p, n, &i, &len)) return false; break;
        case 1: if (n - i < 8) return false; i += 8; break;
        case 5: if (n - i < 4) return false; i += 4; break;
        case 2: {
            if (!varint(p, n, &i, &len) || len > n - i) return false;
            const ProtobufCFieldDescriptor *f = d ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3)) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && !shallow(p + i, len, f->descriptor, depth + 1)) return false;
            i += len;
            break;
        }
        default: return false;                       /* groups: not in onnx.proto */
        }
    }
    return true;
}

/* ---- values ---- */
static const char *const ops[] = {
    "Add", "Sub", "Mul", "Div", "Sum", "Mean", "Max", "Min", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg",
    "Abs", "Sign", "Erf", "Softplus", "Softsign", "Reciprocal", "Elu", "LeakyRelu", "Selu", "Celu", "HardSigmoid",
    "HardSwish", "PRelu", "Clip", "Pow", "Cast", "CastLike", "Equal", "NegativeLogLikelihoodLoss",
    "SoftmaxCrossEntropyLoss", "Hardmax", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "BatchNormalization", "InstanceNormalization", "LayerNormalization", "MeanVarianceNormalization",
    "Gemm", "MatMul", "Softmax", "LogSoftmax", "Dropout", "Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze",
    "Transpose", "Concat", "Split", "Slice", "Pad", "Expand", "Tile", "Gather", "Resize", "Upsample", "DepthToSpace",
    "SpaceToDepth", "Shape", "Size", "Constant", "ConstantOfShape", "Range", "ReduceSum", "ReduceMean", "ReduceMax",
    "ReduceMin", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin",
    "Loop", "If", "Einsum", "NotAnOp",
};
static const char *const attr_names[] = {
    "allowzero", "alpha", "auto_pad", "axes", "axis", "beta", "blocksize", "ceil_mode", "consumed_inputs",
    "coordinate_transformation_mode", "count_include_pad", "dilations", "end", "ends", "epsilon", "gamma", "group",
    "ignore_index", "is_test", "keepdims", "kernel_shape", "max", "min", "mode", "momentum", "nearest_mode",
    "output_padding", "output_shape", "pads", "perm", "ratio", "reduction", "saturate", "scales", "seed",
    "select_last_index", "shape", "spatial", "split", "start", "starts", "stash_type", "storage_order", "strides",
    "to", "training_mode", "transA", "transB", "value", "value_float", "value_floats", "value_int", "value_ints",
};
static const char *const attr_strings[] = {
    "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "constant", "reflect", "edge", "wrap", "linear", "nearest", "cubic",
    "DCR", "CRD", "mean", "sum", "none", "asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel",
    "floor", "ceil", "round_prefer_floor", "round_prefer_ceil", "", "bogus",
};

static int64_t some_int(void) {
    static const int64_t v[] = { 0, 1, 2, 3, 4, -1, -2, -3, 7, 16, 255, 256, 65535, 1 << 20, INT32_MAX, (int64_t)INT32_MAX + 2,
                                 INT32_MIN, (int64_t)1 << 32, (int64_t)1 << 40, INT64_MAX, INT64_MIN, INT64_MAX / 2 + 1 };
    return rnd(3) ? (int64_t)rnd(8) - 1 : v[rnd(sizeof v / sizeof v[0])];
}
static float some_float(void) {
    static const float v[] = { 0.f, 1.f, -1.f, 0.5f, 1e-5f, 1e30f, -1e30f, 3.4e38f, 1e-40f, NAN, INFINITY, -INFINITY };
    return rnd(2) ? (float)((int)rnd(9) - 4) * 0.5f : v[rnd(sizeof v / sizeof v[0])];
}
static int32_t some_type(void) {
    static const int32_t v[] = { 1, 1, 7, 7, 6, 2, 3, 9, 10, 11, 16, 0, 8, 12, 13, 14, 15, 17, 99, -1 };
    return v[rnd(sizeof v / sizeof v[0])];
}
static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
static void set_str(char **slot, const char *s) {
    char *d = dup(s);
    if (!d) return;
    free(*slot);
    *slot = d;
}
/* Appends one element of size sz to the malloc'd array *arr holding *n; returns it or NULL. */
static void *grow(void *arr_p, size_t *n, size_t sz) {
    void **arr = arr_p;
    char *a = realloc(*arr, (*n + 1) * sz);
    if (!a) return NULL;
    *arr = a;
    memset(a + *n * sz, 0, sz);
    return a + (*n)++ * sz;
}

/* ---- the names a graph uses, for rewiring ---- */
typedef struct names { const char *v[256]; int n; } names;
static void add_name(names *s, const char *v) { if (v && *v && s->n < 256) s->v[s->n++] = v; }
static void collect(const Onnx__GraphProto *g, names *s) {
    s->n = 0;
    for (size_t i = 0; i < g->n_input; i++) add_name(s, g->input[i]->name);
    for (size_t i = 0; i < g->n_initializer; i++) add_name(s, g->initializer[i]->name);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_output; j++) add_name(s, g->node[i]->output[j]);
}
static const char *pick_name(const names *s, char *buf, size_t n) {
    switch (rnd(16)) {
    case 0: return "";
    case 1: return "no_such_value";
    case 2: memset(buf, 'x', n - 1); buf[n - 1] = 0; return buf;    /* longer than any fixed buffer */
    default: return s->n ? s->v[rnd((uint32_t)s->n)] : "x";
    }
}

/* ---- mutations; each returns whether it changed something ---- */
static bool mut_int_list(int64_t **v, size_t *n) {
    switch (rnd(4)) {
    case 0: { int64_t *e = grow(v, n, sizeof **v); if (!e) return false; *e = some_int(); return true; }
    case 1: if (!*n) return false; (*n)--; return true;
    default: if (!*n) return false; (*v)[rnd((uint32_t)*n)] = some_int(); return true;
    }
}

static bool mut_tensor(Onnx__TensorProto *t) {
    switch (rnd(6)) {
    case 0: return mut_int_list(&t->dims, &t->n_dims);
    case 1: t->has_data_type = 1; t->data_type = some_type(); return true;
    case 2: {                                        /* raw_data shorter or longer */
        size_t n = rnd(2) ? t->raw_data.len / (1 + rnd(4)) : t->raw_data.len + 1 + rnd(64);
        uint8_t *d = realloc(t->raw_data.data, n ? n : 1);
        if (!d) return false;
        if (n > t->raw_data.len) memset(d + t->raw_data.len, (int)rnd(256), n - t->raw_data.len);
        t->raw_data.data = d;
        t->raw_data.len = n;
        t->has_raw_data = 1;
        return true;
    }
    case 3: {                                        /* an int64 (shapes, axes) or float value */
        if (t->n_int64_data) { t->int64_data[rnd((uint32_t)t->n_int64_data)] = some_int(); return true; }
        if (t->n_float_data) { t->float_data[rnd((uint32_t)t->n_float_data)] = some_float(); return true; }
        if (t->raw_data.len >= 8 && (t->data_type == 7 || rnd(2))) {
            int64_t v = some_int();
            memcpy(t->raw_data.data + 8 * rnd((uint32_t)(t->raw_data.len / 8)), &v, 8);
            return true;
        }
        if (t->raw_data.len >= 4) {
            float v = some_float();
            memcpy(t->raw_data.data + 4 * rnd((uint32_t)(t->raw_data.len / 4)), &v, 4);
            return true;
        }
        return false;
    }
    case 4: {                                        /* typed data instead of raw bytes */
        int64_t *e = grow(&t->int64_data, &t->n_int64_data, sizeof *t->int64_data);
        if (e) *e = some_int();
        return e != NULL;
    }
    default: if (!t->n_dims) return false; t->dims[rnd((uint32_t)t->n_dims)] = some_int(); return true;
    }
}

static bool mut_attr(Onnx__AttributeProto *a) {
    if (!rnd(8)) { set_str(&a->name, attr_names[rnd(sizeof attr_names / sizeof attr_names[0])]); return true; }
    if (!rnd(12)) { a->has_type = 1; a->type = (Onnx__AttributeProto__AttributeType)rnd(15); return true; }
    switch (a->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: a->has_i = 1; a->i = some_int(); return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: a->has_f = 1; a->f = some_float(); return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return mut_int_list(&a->ints, &a->n_ints);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        if (a->n_floats && rnd(2)) { a->floats[rnd((uint32_t)a->n_floats)] = some_float(); return true; }
        if (rnd(2) && a->n_floats) { a->n_floats--; return true; }
        { float *e = grow(&a->floats, &a->n_floats, sizeof *a->floats); if (e) *e = some_float(); return e != NULL; }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        char *s = dup(attr_strings[rnd(sizeof attr_strings / sizeof attr_strings[0])]);
        if (!s) return false;
        free(a->s.data);
        a->s.data = (uint8_t *)s;
        a->s.len = strlen(s);
        a->has_s = 1;
        return true;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return a->t && mut_tensor(a->t);
    default: return false;
    }
}

static bool add_attr(Onnx__NodeProto *n) {
    Onnx__AttributeProto *a = malloc(sizeof *a);
    if (!a) return false;
    onnx__attribute_proto__init(a);
    Onnx__AttributeProto **slot = grow(&n->attribute, &n->n_attribute, sizeof *n->attribute);
    if (!slot) { free(a); return false; }
    *slot = a;
    a->name = dup(attr_names[rnd(sizeof attr_names / sizeof attr_names[0])]);
    a->has_type = 1;
    switch (rnd(4)) {
    case 0: a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT; a->has_i = 1; a->i = some_int(); break;
    case 1: a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT; a->has_f = 1; a->f = some_float(); break;
    case 2:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        a->s.data = (uint8_t *)dup(attr_strings[rnd(sizeof attr_strings / sizeof attr_strings[0])]);
        a->s.len = a->s.data ? strlen((char *)a->s.data) : 0;
        a->has_s = 1;
        break;
    default:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        for (uint32_t k = 1 + rnd(6); k-- > 0;) mut_int_list(&a->ints, &a->n_ints);
        break;
    }
    return a->name != NULL;
}

static Onnx__NodeProto *copy_node(const Onnx__NodeProto *n) {
    size_t sz = onnx__node_proto__get_packed_size(n);
    uint8_t *b = malloc(sz ? sz : 1);
    if (!b) return NULL;
    onnx__node_proto__pack(n, b);
    Onnx__NodeProto *c = onnx__node_proto__unpack(NULL, sz, b);
    free(b);
    return c;
}

static bool insert_node(Onnx__GraphProto *g, Onnx__NodeProto *c) {
    Onnx__NodeProto **slot = grow(&g->node, &g->n_node, sizeof *g->node);
    if (!slot) { onnx__node_proto__free_unpacked(c, NULL); return false; }
    size_t at = rnd((uint32_t)g->n_node);
    memmove(&g->node[at + 1], &g->node[at], (g->n_node - 1 - at) * sizeof *g->node);
    g->node[at] = c;
    return true;
}

static bool new_node(Onnx__GraphProto *g, const names *s, char *buf, size_t bn) {
    static unsigned serial;
    Onnx__NodeProto *c = malloc(sizeof *c);
    if (!c) return false;
    onnx__node_proto__init(c);
    c->op_type = dup(ops[rnd(sizeof ops / sizeof ops[0])]);
    for (uint32_t k = 1 + rnd(3); k-- > 0;) {
        char **in = grow(&c->input, &c->n_input, sizeof *c->input);
        if (in) *in = dup(pick_name(s, buf, bn));
    }
    char out[32];
    snprintf(out, sizeof out, "fz%u", serial++);
    char **o = grow(&c->output, &c->n_output, sizeof *c->output);
    if (o) *o = dup(out);
    for (uint32_t k = rnd(3); k-- > 0;) add_attr(c);
    if (g->n_output && g->output[0] && rnd(2)) set_str(&g->output[0]->name, out);   /* make it matter */
    return insert_node(g, c);
}

static bool mut_value_info(Onnx__ValueInfoProto *v, const names *s, char *buf, size_t bn) {
    if (!rnd(6)) { set_str(&v->name, pick_name(s, buf, bn)); return true; }
    if (!v->type || v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !v->type->tensor_type) return false;
    Onnx__TypeProto__Tensor *t = v->type->tensor_type;
    if (!rnd(5)) { t->has_elem_type = 1; t->elem_type = some_type(); return true; }
    Onnx__TensorShapeProto *sh = t->shape;
    if (!sh) return false;
    if (!rnd(6)) {                                   /* one dimension more or less */
        if (sh->n_dim && rnd(2)) { protobuf_c_message_free_unpacked(&sh->dim[--sh->n_dim]->base, NULL); return true; }
        Onnx__TensorShapeProto__Dimension *d = malloc(sizeof *d);
        if (!d) return false;
        onnx__tensor_shape_proto__dimension__init(d);
        Onnx__TensorShapeProto__Dimension **slot = grow(&sh->dim, &sh->n_dim, sizeof *sh->dim);
        if (!slot) { free(d); return false; }
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = 1 + rnd(8);
        *slot = d;
        return true;
    }
    if (!sh->n_dim) return false;
    Onnx__TensorShapeProto__Dimension *d = sh->dim[rnd((uint32_t)sh->n_dim)];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) free(d->dim_param);
    if (!rnd(6)) {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d->dim_param = dup("N");
        if (!d->dim_param) d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET;
    } else {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = some_int();
    }
    return true;
}

static bool mutate_once(Onnx__ModelProto *m) {
    Onnx__GraphProto *g = m->graph;
    char buf[600];
    names s;
    collect(g, &s);
    Onnx__NodeProto *n = g->n_node ? g->node[rnd((uint32_t)g->n_node)] : NULL;
    switch (rnd(14)) {
    case 0: case 1:                                  /* an attribute value */
        if (!n || !n->n_attribute) return false;
        return mut_attr(n->attribute[rnd((uint32_t)n->n_attribute)]);
    case 2: return n && add_attr(n);
    case 3: if (!n) return false; set_str(&n->op_type, ops[rnd(sizeof ops / sizeof ops[0])]); return true;
    case 4: {                                        /* rewire an input or an output */
        if (!n) return false;
        bool out = rnd(4) == 0;
        char ***v = out ? &n->output : &n->input;
        size_t *c = out ? &n->n_output : &n->n_input;
        if (!rnd(5)) { char **e = grow(v, c, sizeof **v); if (e) *e = dup(pick_name(&s, buf, sizeof buf)); return e != NULL; }
        if (!rnd(6) && *c) { free((*v)[--*c]); return true; }
        if (!*c) return false;
        set_str(&(*v)[rnd((uint32_t)*c)], pick_name(&s, buf, sizeof buf));
        return true;
    }
    case 5: case 6:                                  /* an initializer */
        if (!g->n_initializer) return false;
        return mut_tensor(g->initializer[rnd((uint32_t)g->n_initializer)]);
    case 7: {                                        /* node order */
        if (g->n_node < 2) return false;
        size_t a = rnd((uint32_t)g->n_node), b = rnd((uint32_t)g->n_node);
        Onnx__NodeProto *t = g->node[a];
        g->node[a] = g->node[b];
        g->node[b] = t;
        return a != b;
    }
    case 8: {                                        /* a duplicate, its output renamed or not */
        if (!n) return false;
        Onnx__NodeProto *c = copy_node(n);
        if (!c) return false;
        if (c->n_output && rnd(2)) set_str(&c->output[0], pick_name(&s, buf, sizeof buf));
        return insert_node(g, c);
    }
    case 9: {                                        /* a node removed */
        if (!n) return false;
        size_t at = rnd((uint32_t)g->n_node);
        onnx__node_proto__free_unpacked(g->node[at], NULL);
        memmove(&g->node[at], &g->node[at + 1], (g->n_node - at - 1) * sizeof *g->node);
        g->n_node--;
        return true;
    }
    case 10: return new_node(g, &s, buf, sizeof buf);
    case 11: {                                       /* the opset */
        static const int64_t v[] = { 1, 6, 7, 9, 10, 11, 12, 13, 14, 17, 18, 21, 1000, -1 };
        if (!m->n_opset_import) return false;
        Onnx__OperatorSetIdProto *o = m->opset_import[rnd((uint32_t)m->n_opset_import)];
        o->has_version = 1;
        o->version = v[rnd(sizeof v / sizeof v[0])];
        return true;
    }
    case 12: {                                       /* an input's or output's type / shape */
        size_t ni = g->n_input, no = g->n_output, nv = g->n_value_info;
        if (!(ni + no + nv)) return false;
        size_t k = rnd((uint32_t)(ni + no + nv));
        Onnx__ValueInfoProto *v = k < ni ? g->input[k] : k < ni + no ? g->output[k - ni] : g->value_info[k - ni - no];
        return mut_value_info(v, &s, buf, sizeof buf);
    }
    default: {                                       /* a Constant's or attribute tensor */
        if (!n) return false;
        for (size_t i = 0; i < n->n_attribute; i++)
            if (n->attribute[i]->t) return mut_tensor(n->attribute[i]->t);
        return false;
    }
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    rng = seed * 0x9E3779B97F4A7C15ull + 1;
    if (!rnd(8) || !shallow(data, size, &onnx__model_proto__descriptor, 0)) return LLVMFuzzerMutate(data, size, max_size);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
    if (!m || !m->graph) {
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        return LLVMFuzzerMutate(data, size, max_size);
    }
    bool changed = false;
    for (uint32_t k = 1 + (rnd(3) ? 0 : rnd(3)); k-- > 0;) changed |= mutate_once(m);
    size_t out = changed ? onnx__model_proto__get_packed_size(m) : 0;
    uint8_t *b = out && out <= max_size ? malloc(out) : NULL;
    if (b) {
        onnx__model_proto__pack(m, b);
        memcpy(data, b, out);
        free(b);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return b ? out : LLVMFuzzerMutate(data, size, max_size);
}

/* Crossover: nodes of a second model spliced into the first, with the initializers they read
 * that the first lacks, so ops meet inputs and attributes from other models. */
static Onnx__TensorProto *copy_tensor(const Onnx__TensorProto *t) {
    size_t sz = onnx__tensor_proto__get_packed_size(t);
    uint8_t *b = malloc(sz ? sz : 1);
    if (!b) return NULL;
    onnx__tensor_proto__pack(t, b);
    Onnx__TensorProto *c = onnx__tensor_proto__unpack(NULL, sz, b);
    free(b);
    return c;
}

static bool has_init(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name)) return true;
    return false;
}

static Onnx__ModelProto *decode(const uint8_t *d, size_t n) {
    if (!shallow(d, n, &onnx__model_proto__descriptor, 0)) return NULL;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, d);
    if (m && !m->graph) { onnx__model_proto__free_unpacked(m, NULL); m = NULL; }
    return m;
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t n1, const uint8_t *d2, size_t n2, uint8_t *out, size_t max_out, unsigned int seed) {
    rng = seed * 0x9E3779B97F4A7C15ull + 7;
    Onnx__ModelProto *a = decode(d1, n1), *b = a ? decode(d2, n2) : NULL;
    size_t len = 0;
    if (a && b && b->graph->n_node) {
        Onnx__GraphProto *ga = a->graph, *gb = b->graph;
        size_t from = rnd((uint32_t)gb->n_node), count = 1 + rnd(3);
        for (size_t i = from; i < gb->n_node && i < from + count; i++) {
            const Onnx__NodeProto *n = gb->node[i];
            for (size_t k = 0; k < n->n_input; k++)
                if (n->input[k] && has_init(gb, n->input[k]) && !has_init(ga, n->input[k]))
                    for (size_t j = 0; j < gb->n_initializer; j++)
                        if (gb->initializer[j]->name && !strcmp(gb->initializer[j]->name, n->input[k])) {
                            Onnx__TensorProto *t = copy_tensor(gb->initializer[j]);
                            Onnx__TensorProto **slot = t ? grow(&ga->initializer, &ga->n_initializer, sizeof *ga->initializer) : NULL;
                            if (slot) *slot = t;
                            else if (t) onnx__tensor_proto__free_unpacked(t, NULL);
                            break;
                        }
            Onnx__NodeProto *c = copy_node(n);
            if (c) insert_node(ga, c);
        }
        len = onnx__model_proto__get_packed_size(a);
        if (len <= max_out) onnx__model_proto__pack(a, out);
        else len = 0;
    }
    if (a) onnx__model_proto__free_unpacked(a, NULL);
    if (b) onnx__model_proto__free_unpacked(b, NULL);
    if (!len) {                                  /* plain halves, as libFuzzer's own crossover */
        size_t h1 = n1 / 2, h2 = n2 - n2 / 2;
        if (h1 > max_out) h1 = max_out;
        if (h2 > max_out - h1) h2 = max_out - h1;
        memcpy(out, d1, h1);
        memcpy(out + h1, d2 + n2 / 2, h2);
        len = h1 + h2;
    }
    return len;
}
