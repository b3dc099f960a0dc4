/* ONNX files and messages: reading a model (protobuf-c, through Kiln's counted allocator),
 * element types, TensorProto <-> host tensors, attributes, the arena export builds messages in,
 * and atomic writes. */
#include <stdlib.h>
#include <string.h>
#include "onnx/onnx_internal.h"
#include "io/atomic_file.h"
#include "io/read_file.h"

static void *pb_alloc(void *data, size_t n) { (void)data; return kiln_malloc(n ? n : 1); }
static void pb_free(void *data, void *p) { (void)data; kiln_free(p); }
static ProtobufCAllocator pb_allocator = { pb_alloc, pb_free, NULL };

/* ---- nesting bound ----
 * protobuf-c's unpack recurses once per nested message with no depth limit, so a small file of
 * attribute subgraphs nested thousands deep exhausts the stack. Before unpacking, a walk over the
 * wire format follows the message fields that can recurse (graphs in attributes, functions and
 * training info; TypeProto in sequences, maps and optionals) with an explicit stack and refuses
 * files nested deeper than OX_MAX_NESTING. Kiln reads no GRAPH attribute; real models nest a few
 * levels. Malformed bytes end the walk: the unpack then refuses them. */
#define OX_MAX_NESTING 64
enum { W_MODEL, W_TRAIN, W_GRAPH, W_NODE, W_ATTR, W_FUNC, W_VALUE_INFO, W_TYPE, W_TYPE_ONE, W_TYPE_MAP, W_SKIP = -1 };

/* The message type of field f of a message of type t when it can lead to recursion. */
static int nested_type(int t, uint64_t f) {
    switch (t) {
    case W_MODEL: return f == 7 ? W_GRAPH : f == 20 ? W_TRAIN : f == 25 ? W_FUNC : W_SKIP;
    case W_TRAIN: return f == 1 || f == 2 ? W_GRAPH : W_SKIP;                 /* initialization, algorithm */
    case W_GRAPH: return f == 1 ? W_NODE : f == 11 || f == 12 || f == 13 ? W_VALUE_INFO : W_SKIP;
    case W_NODE: return f == 5 ? W_ATTR : W_SKIP;
    case W_ATTR: return f == 6 || f == 11 ? W_GRAPH : f == 14 || f == 15 ? W_TYPE : W_SKIP;   /* g, graphs, tp, type_protos */
    case W_FUNC: return f == 7 ? W_NODE : f == 11 ? W_ATTR : W_SKIP;
    case W_VALUE_INFO: return f == 2 ? W_TYPE : W_SKIP;
    case W_TYPE: return f == 4 || f == 9 ? W_TYPE_ONE : f == 5 ? W_TYPE_MAP : W_SKIP;      /* sequence, optional, map */
    case W_TYPE_ONE: return f == 1 ? W_TYPE : W_SKIP;                                      /* elem_type */
    case W_TYPE_MAP: return f == 2 ? W_TYPE : W_SKIP;                                      /* value_type */
    default: return W_SKIP;
    }
}

static bool read_varint(const uint8_t *b, size_t end, size_t *p, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t c = b[(*p)++];
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return true;
    }
    return false;
}

/* The deepest message nesting of a serialized ModelProto, counted until it passes limit. */
static int model_nesting(const uint8_t *b, size_t len, int limit) {
    struct { int type; size_t end; } st[OX_MAX_NESTING + 2];
    int depth = 0, deepest = 1;
    size_t p = 0;
    st[0].type = W_MODEL;
    st[0].end = len;
    while (depth >= 0) {
        if (p >= st[depth].end) { depth--; continue; }
        uint64_t tag, v;
        size_t end = st[depth].end;
        if (!read_varint(b, end, &p, &tag)) return deepest;
        switch (tag & 7) {
        case 0: if (!read_varint(b, end, &p, &v)) return deepest; break;
        case 1: if (end - p < 8) return deepest; p += 8; break;
        case 5: if (end - p < 4) return deepest; p += 4; break;
        case 2: {
            if (!read_varint(b, end, &p, &v) || v > end - p) return deepest;
            int t = nested_type(st[depth].type, tag >> 3);
            if (t == W_SKIP) { p += (size_t)v; break; }
            if (++depth + 1 > deepest) deepest = depth + 1;
            if (deepest > limit) return deepest;
            st[depth].type = t;
            st[depth].end = p + (size_t)v;
            break;
        }
        default: return deepest;            /* groups or garbage: left to the unpack */
        }
    }
    return deepest;
}

kiln_status ox_model_read(const char *path, Onnx__ModelProto **out) {
    *out = NULL;
    uint8_t *buf;
    size_t len;
    kiln_status st = kiln_file_read_all(path, "ONNX model", 0, &buf, &len);
    if (st) return st;
    if (model_nesting(buf, len, OX_MAX_NESTING) > OX_MAX_NESTING) {
        kiln_free(buf);
        return kiln_set_error(KILN_INVALID_ARGUMENT, "ONNX model %s: its messages are nested more than %d deep (subgraphs in attributes "
                              "or nested types); Kiln reads no subgraphs and refuses such files", path, OX_MAX_NESTING);
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(&pb_allocator, len, buf);
    kiln_free(buf);
    if (!m) return kiln_set_error(KILN_INVALID_ARGUMENT, "ONNX model %s: not a valid ONNX file (the protobuf message does not parse: truncated or another format?)", path);
    if (!m->graph) { ox_model_free(m); return kiln_set_error(KILN_INVALID_ARGUMENT, "ONNX model %s: the file holds no graph", path); }
    *out = m;
    return KILN_OK;
}

void ox_model_free(Onnx__ModelProto *m) {
    if (m) onnx__model_proto__free_unpacked(m, &pb_allocator);
}

/* ---- element types ---- */
bool ox_dtype_of(int32_t t, kiln_dtype *out) {
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = KILN_F32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *out = KILN_F64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = KILN_F16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = KILN_BF16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = KILN_I32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = KILN_I64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *out = KILN_U8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = KILN_BOOL; return true;
    default: return false;
    }
}

int32_t ox_onnx_type(kiln_dtype t) {
    static const int32_t map[KILN_DTYPE_COUNT] = {
        [KILN_F32] = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, [KILN_F64] = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
        [KILN_F16] = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, [KILN_BF16] = ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16,
        [KILN_I32] = ONNX__TENSOR_PROTO__DATA_TYPE__INT32, [KILN_I64] = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
        [KILN_U8] = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, [KILN_BOOL] = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
    };
    return (unsigned)t < KILN_DTYPE_COUNT ? map[t] : 0;
}

const char *ox_type_name(int32_t t) {
    static const char *const names[] = { "undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string",
                                         "bool", "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16" };
    return t >= 0 && t < (int32_t)(sizeof names / sizeof *names) ? names[t] : "an unknown type";
}

/* ---- tensors ---- */
kiln_status ox_tensor_read(const Onnx__TensorProto *t, const char *what, kiln_tensor **out) {
    *out = NULL;
    kiln_dtype dt;
    if (!ox_dtype_of(t->data_type, &dt))
        return kiln_set_error(KILN_UNSUPPORTED, "%s: element type %s is not one Kiln has (float, double, float16, bfloat16, int32, int64, uint8, bool)",
                              what, ox_type_name(t->data_type));
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return kiln_set_error(KILN_UNSUPPORTED, "%s: its data is in an external file, which Kiln does not read; save the model with the "
                              "weights inside (onnx.save_model(m, path, save_as_external_data=False))", what);
    if (t->n_dims > KILN_MAX_DIMS) return kiln_set_error(KILN_UNSUPPORTED, "%s: rank %zu is more than Kiln's %d dimensions", what, t->n_dims, KILN_MAX_DIMS);
    kiln_shape s = { .rank = (int)t->n_dims };
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: dimension %zu is %lld", what, i, (long long)t->dims[i]);
        s.dim[i] = t->dims[i];
    }
    int64_t n = kiln_shape_numel(s);
    size_t es = kiln_dtype_size(dt), bytes;
    if (n == INT64_MAX || __builtin_mul_overflow((size_t)n, es, &bytes)) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: its size overflows", what);
    /* the values the file holds are counted before allocating: dims alone cannot make a large tensor */
    size_t have;
    const char *field = "raw_data";
    bool raw = t->has_raw_data && (t->raw_data.len > 0 || n == 0);
    if (raw) have = t->raw_data.len == bytes ? (size_t)n : (size_t)-1;
    else switch (dt) {
        case KILN_F32: field = "float_data"; have = t->n_float_data; break;
        case KILN_F64: field = "double_data"; have = t->n_double_data; break;
        case KILN_I64: field = "int64_data"; have = t->n_int64_data; break;
        default: field = "int32_data"; have = t->n_int32_data; break;     /* int32, uint8, bool, and float16 / bfloat16 bits */
    }
    if (have != (size_t)n) {
        char b[96];
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: %s %s needs %lld values, %s holds %s", what, ox_type_name(t->data_type),
                              kiln_shape_str(s, b, sizeof b), (long long)n, field,
                              have == (size_t)-1 ? "a byte count that is not a whole number of them" : "another count");
    }
    kiln_tensor *x = kiln_tensor_new(dt, s);
    if (!x) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    if (raw || !bytes) { if (bytes) memcpy(x->data, t->raw_data.data, bytes); }
    else if (dt == KILN_F32) memcpy(x->data, t->float_data, bytes);
    else if (dt == KILN_F64) memcpy(x->data, t->double_data, bytes);
    else if (dt == KILN_I64) memcpy(x->data, t->int64_data, bytes);
    else
        for (size_t i = 0; i < have; i++) {
            int32_t v = t->int32_data[i];
            if (dt == KILN_I32) ((int32_t *)x->data)[i] = v;
            else if (dt == KILN_F16 || dt == KILN_BF16) ((uint16_t *)x->data)[i] = (uint16_t)v;
            else ((uint8_t *)x->data)[i] = (uint8_t)v;
        }
    *out = x;
    return KILN_OK;
}

kiln_status ox_tensor_read_file(const char *path, kiln_tensor **out, char **name) {
    *out = NULL;
    if (name) *name = NULL;
    uint8_t *buf;
    size_t len;
    kiln_status st = kiln_file_read_all(path, "ONNX tensor", 0, &buf, &len);
    if (st) return st;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(&pb_allocator, len, buf);
    kiln_free(buf);
    if (!t) return kiln_set_error(KILN_INVALID_ARGUMENT, "ONNX tensor %s: not a serialized TensorProto", path);
    char what[4200];
    snprintf(what, sizeof what, "ONNX tensor %s", path);
    st = ox_tensor_read(t, what, out);
    if (!st && name) *name = kiln_strdup(t->name ? t->name : "");
    onnx__tensor_proto__free_unpacked(t, &pb_allocator);
    return st;
}

/* ---- attributes ---- */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name)) return n->attribute[i];
    return NULL;
}

int64_t ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

double ox_attr_float(const Onnx__NodeProto *n, const char *name, double dflt) {
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && a->has_f ? (double)a->f : dflt;
}

int ox_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max) {
    const Onnx__AttributeProto *a = ox_attr(n, name);
    if (!a) return -1;
    if (a->n_ints > (size_t)max) return -2;
    for (size_t i = 0; i < a->n_ints; i++) out[i] = a->ints[i];
    return (int)a->n_ints;
}

const char *ox_attr_str(const Onnx__NodeProto *n, const char *name, char *buf, size_t len) {
    if (!len) return buf;
    const Onnx__AttributeProto *a = ox_attr(n, name);
    size_t k = a && a->has_s ? a->s.len : 0;
    bool cut = k >= len;
    if (cut) k = len - 1;
    if (k) memcpy(buf, a->s.data, k);
    buf[k] = 0;
    if (cut && k >= 3) memcpy(buf + k - 3, "...", 3);     /* a value too long for buf matches no valid one */
    return buf;
}

/* ---- the export arena ---- */
typedef struct ox_block { struct ox_block *next; max_align_t data[]; } ox_block;

void *ox_alloc(ox_arena *a, size_t n) {
    ox_block *b = kiln_calloc(1, sizeof *b + (n ? n : 1));
    if (!b) { a->failed = true; return NULL; }
    b->next = a->head;
    a->head = b;
    return b->data;
}

char *ox_strdup(ox_arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = ox_alloc(a, n);
    if (d) memcpy(d, s, n);
    return d;
}

void ox_arena_free(ox_arena *a) {
    for (ox_block *b = a->head, *next; b; b = next) { next = b->next; kiln_free(b); }
    a->head = NULL;
}

Onnx__TensorProto *ox_tensor_proto(ox_arena *a, const char *name, const kiln_tensor *t) {
    Onnx__TensorProto *p = ox_alloc(a, sizeof *p);
    if (!p) return NULL;
    onnx__tensor_proto__init(p);
    p->name = ox_strdup(a, name);
    p->has_data_type = true;
    p->data_type = ox_onnx_type(t->dtype);
    p->n_dims = (size_t)t->shape.rank;
    p->dims = ox_alloc(a, sizeof *p->dims * (size_t)(t->shape.rank + 1));
    for (int i = 0; p->dims && i < t->shape.rank; i++) p->dims[i] = t->shape.dim[i];
    p->has_raw_data = true;
    p->raw_data.len = kiln_tensor_nbytes(t);
    p->raw_data.data = ox_alloc(a, p->raw_data.len);
    if (p->raw_data.data) memcpy(p->raw_data.data, t->data, p->raw_data.len);
    return a->failed ? NULL : p;
}

kiln_status ox_model_write(const Onnx__ModelProto *m, const char *path) {
    size_t n = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = kiln_malloc(n ? n : 1);
    if (!buf) return kiln_set_error(KILN_OUT_OF_MEMORY, "ONNX export %s: out of host memory for %zu bytes", path, n);
    onnx__model_proto__pack(m, buf);
    kiln_atomic_file af;
    kiln_status st = kiln_atomic_open(path, &af);
    if (!st) {
        if (fwrite(buf, 1, n, af.f) != n) {
            kiln_atomic_abort(&af);
            st = kiln_set_error(KILN_IO_ERROR, "ONNX export %s: write failed (disk full?)", path);
        } else st = kiln_atomic_commit(&af);
    }
    kiln_free(buf);
    return st;
}

kiln_shape ox_permuted_shape(kiln_shape s, const int *perm) {
    kiln_shape o = { .rank = s.rank };
    for (int j = 0; j < s.rank; j++) o.dim[j] = s.dim[perm[j]];
    return o;
}

kiln_tensor *ox_permute(const kiln_tensor *t, const int *perm) {
    kiln_tensor *o = kiln_tensor_new(t->dtype, ox_permuted_shape(t->shape, perm));
    if (o) ox_permute_into(t, perm, o);
    return o;
}

void ox_permute_into(const kiln_tensor *t, const int *perm, kiln_tensor *o) {
    int r = t->shape.rank;
    kiln_shape s = o->shape;
    size_t es = kiln_dtype_size(t->dtype);
    int64_t n = kiln_shape_numel(s), in_stride[KILN_MAX_DIMS], idx[KILN_MAX_DIMS] = { 0 };
    for (int64_t i = r - 1, st = 1; i >= 0; i--) { in_stride[i] = st; st *= t->shape.dim[i]; }
    for (int64_t k = 0; k < n; k++) {
        int64_t src = 0;
        for (int j = 0; j < r; j++) src += idx[j] * in_stride[perm[j]];
        memcpy((char *)o->data + (size_t)k * es, (const char *)t->data + (size_t)src * es, es);
        for (int j = r - 1; j >= 0; j--) { if (++idx[j] < s.dim[j]) break; idx[j] = 0; }
    }
}
