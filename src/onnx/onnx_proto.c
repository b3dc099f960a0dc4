/* ONNX files and messages: reading a model (protobuf-c, through Kiln's counted allocator),
 * element types, TensorProto <-> host tensors, attributes, the arena export builds messages in,
 * and atomic writes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "onnx/onnx_internal.h"
#include "io/atomic_file.h"

static void *pb_alloc(void *data, size_t n) { (void)data; return kiln_malloc(n ? n : 1); }
static void pb_free(void *data, void *p) { (void)data; kiln_free(p); }
static ProtobufCAllocator pb_allocator = { pb_alloc, pb_free, NULL };

/* The whole file in a new buffer. */
static kiln_status read_all(const char *path, const char *what, uint8_t **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return kiln_set_error(errno == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, "%s %s: %s", what, path, strerror(errno));
    kiln_status st = KILN_OK;
    *buf = NULL;
    *len = 0;
    if (fseek(f, 0, SEEK_END) != 0 || ftell(f) < 0) st = kiln_set_error(KILN_IO_ERROR, "%s %s: cannot read it (not a regular file?)", what, path);
    long n = st ? 0 : ftell(f);
    if (!st && fseek(f, 0, SEEK_SET) != 0) st = kiln_set_error(KILN_IO_ERROR, "%s %s: cannot read it", what, path);
    if (!st && !(*buf = kiln_malloc((size_t)n + 1))) st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s %s: out of host memory for %ld bytes", what, path, n);
    if (!st && fread(*buf, 1, (size_t)n, f) != (size_t)n) st = kiln_set_error(KILN_IO_ERROR, "%s %s: read error (file truncated while reading?)", what, path);
    fclose(f);
    if (st) { kiln_free(*buf); *buf = NULL; return st; }
    *len = (size_t)n;
    return KILN_OK;
}

kiln_status ox_model_read(const char *path, Onnx__ModelProto **out) {
    *out = NULL;
    uint8_t *buf;
    size_t len;
    kiln_status st = read_all(path, "ONNX model", &buf, &len);
    if (st) return st;
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
    if (n == INT64_MAX) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: its size overflows", what);
    kiln_tensor *x = kiln_tensor_new(dt, s);
    if (!x) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    size_t bytes = kiln_tensor_nbytes(x);
    size_t have = 0;
    const char *field = "raw_data";
    if (t->has_raw_data && (t->raw_data.len > 0 || n == 0)) {
        have = t->raw_data.len == bytes ? (size_t)n : (size_t)-1;
        if (have == (size_t)n && bytes) memcpy(x->data, t->raw_data.data, bytes);
    } else {
        switch (dt) {
        case KILN_F32:
            field = "float_data";
            have = t->n_float_data;
            if (have == (size_t)n && bytes) memcpy(x->data, t->float_data, bytes);
            break;
        case KILN_F64:
            field = "double_data";
            have = t->n_double_data;
            if (have == (size_t)n && bytes) memcpy(x->data, t->double_data, bytes);
            break;
        case KILN_I64:
            field = "int64_data";
            have = t->n_int64_data;
            if (have == (size_t)n && bytes) memcpy(x->data, t->int64_data, bytes);
            break;
        default:           /* int32, uint8, bool, and float16 / bfloat16 bits: int32_data */
            field = "int32_data";
            have = t->n_int32_data;
            for (size_t i = 0; have == (size_t)n && i < have; i++) {
                int32_t v = t->int32_data[i];
                if (dt == KILN_I32) ((int32_t *)x->data)[i] = v;
                else if (dt == KILN_F16 || dt == KILN_BF16) ((uint16_t *)x->data)[i] = (uint16_t)v;
                else ((uint8_t *)x->data)[i] = (uint8_t)v;
            }
        }
    }
    if (have != (size_t)n) {
        kiln_tensor_free(x);
        char b[96];
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: %s %s needs %lld values, %s holds %s", what, ox_type_name(t->data_type),
                              kiln_shape_str(s, b, sizeof b), (long long)n, field,
                              have == (size_t)-1 ? "a byte count that is not a whole number of them" : "another count");
    }
    *out = x;
    return KILN_OK;
}

kiln_status ox_tensor_read_file(const char *path, kiln_tensor **out, char **name) {
    *out = NULL;
    if (name) *name = NULL;
    uint8_t *buf;
    size_t len;
    kiln_status st = read_all(path, "ONNX tensor", &buf, &len);
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
    const Onnx__AttributeProto *a = ox_attr(n, name);
    size_t k = a && a->has_s ? a->s.len : 0;
    if (k >= len) k = len - 1;
    if (k) memcpy(buf, a->s.data, k);
    buf[k] = 0;
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

kiln_tensor *ox_permute(const kiln_tensor *t, const int *perm) {
    int r = t->shape.rank;
    kiln_shape s = { .rank = r };
    for (int j = 0; j < r; j++) s.dim[j] = t->shape.dim[perm[j]];
    kiln_tensor *o = kiln_tensor_new(t->dtype, s);
    if (!o) return NULL;
    size_t es = kiln_dtype_size(t->dtype);
    int64_t n = kiln_shape_numel(s), in_stride[KILN_MAX_DIMS], idx[KILN_MAX_DIMS] = { 0 };
    for (int64_t i = r - 1, st = 1; i >= 0; i--) { in_stride[i] = st; st *= t->shape.dim[i]; }
    for (int64_t k = 0; k < n; k++) {
        int64_t src = 0;
        for (int j = 0; j < r; j++) src += idx[j] * in_stride[perm[j]];
        memcpy((char *)o->data + (size_t)k * es, (const char *)t->data + (size_t)src * es, es);
        for (int j = r - 1; j >= 0; j--) { if (++idx[j] < s.dim[j]) break; idx[j] = 0; }
    }
    return o;
}
