/* Hostile ONNX files (issue 24): each is built here with the protobuf-c messages (no Python, no
 * network) and must give a clean error naming the problem, never a write past a buffer, a NULL
 * dereference, a stack overflow, gigabytes of folding or a hang. Runs under ASan / UBSan in CI.
 *   concat_dims          Concat of known values whose non-axis dimensions differ (heap overflow before)
 *   long_input_name      a 600-character graph input name (v[-1] written before)
 *   no_broadcast         Add/Sub/.../Equal of shapes that do not broadcast, also after Range and
 *                        ConstantOfShape (NULL dereference before)
 *   deep_nesting         attribute subgraphs nested 3,000 deep (stack overflow in the unpack before)
 *   folding_bounds       Tile repeats, ConstantOfShape and Range sizes (GBs and tens of seconds before)
 *   int_attributes       Conv / pool / Cast int attributes beyond int (2^32 + 1 read as 1 before)
 *   ssa                  two nodes writing one value; a node writing an initializer
 *   scalar_operands      Pow / Clip with an exponent or bounds that would change the shape
 *   initializer_rank     an initializer of rank 7 when only its Shape is read (clamped to 6 before)
 *   initializer_data     an initializer whose dims ask for 32 TiB and that holds no values
 *   missing_input        an op whose first input is absent ("")
 *   fifo                 a FIFO named as the model is refused at once (hung before) */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "kiln/onnx.h"
#include "onnx/onnx_internal.h"

static char dir[] = "/tmp/kiln_onnx_hostile_XXXXXX";
static ox_arena A;

static char *tmp(const char *name) {
    static char buf[4][256];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 256, "%s/%s", dir, name);
    return b;
}

/* ---- a small model builder on the protobuf-c messages (strings and arrays in the arena) ---- */
typedef struct gb {
    Onnx__NodeProto *node[16]; int n_node;
    Onnx__TensorProto *init[8]; int n_init;
    Onnx__ValueInfoProto *in[4], *out[4]; int n_in, n_out;
} gb;

/* "a,b,c" into a string array. */
static char **names(const char *list, size_t *n) {
    *n = 0;
    if (!*list) return NULL;
    size_t k = 1;
    for (const char *p = list; *p; p++) k += *p == ',';
    char **v = ox_alloc(&A, k * sizeof *v), *s = ox_strdup(&A, list);
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) v[(*n)++] = strcmp(tok, "-") ? tok : (char *)"";
    return v;
}

static Onnx__NodeProto *node(gb *b, const char *name, const char *op, const char *ins, const char *outs) {
    Onnx__NodeProto *n = ox_alloc(&A, sizeof *n);
    onnx__node_proto__init(n);
    n->name = ox_strdup(&A, name);
    n->op_type = ox_strdup(&A, op);
    n->input = names(ins, &n->n_input);
    n->output = names(outs, &n->n_output);
    n->attribute = ox_alloc(&A, 8 * sizeof *n->attribute);
    b->node[b->n_node++] = n;
    return n;
}

static Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name) {
    Onnx__AttributeProto *a = ox_alloc(&A, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = ox_strdup(&A, name);
    n->attribute[n->n_attribute++] = a;
    return a;
}
static void attr_int(Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(n, name);
    a->has_type = a->has_i = true;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->i = v;
}
static void attr_ints(Onnx__NodeProto *n, const char *name, const int64_t *v, size_t k) {
    Onnx__AttributeProto *a = attr(n, name);
    a->has_type = true;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->ints = ox_alloc(&A, k * sizeof *v);
    memcpy(a->ints, v, k * sizeof *v);
    a->n_ints = k;
}

/* A tensor of rank r (dims), its values as doubles converted to dtype t (int64, int32, float). */
static Onnx__TensorProto *tensor(const char *name, int32_t t, const int64_t *dims, int r, const double *vals) {
    Onnx__TensorProto *p = ox_alloc(&A, sizeof *p);
    onnx__tensor_proto__init(p);
    p->name = ox_strdup(&A, name);
    p->has_data_type = true;
    p->data_type = t;
    p->n_dims = (size_t)r;
    p->dims = ox_alloc(&A, (size_t)(r + 1) * sizeof *p->dims);
    int64_t n = 1;
    for (int i = 0; i < r; i++) { p->dims[i] = dims[i]; n *= dims[i] > 0 ? dims[i] : 0; }
    if (!vals) n = 0;
    size_t es = t == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? 8 : 4;
    p->has_raw_data = true;
    p->raw_data.len = (size_t)n * es;
    p->raw_data.data = ox_alloc(&A, p->raw_data.len + 1);
    for (int64_t i = 0; i < n; i++) {
        if (t == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) ((int64_t *)p->raw_data.data)[i] = (int64_t)vals[i];
        else if (t == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) ((int32_t *)p->raw_data.data)[i] = (int32_t)vals[i];
        else ((float *)p->raw_data.data)[i] = (float)vals[i];
    }
    return p;
}
#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define DIMS(...) (const int64_t[]){ __VA_ARGS__ }, (int)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t))
#define VALS(...) (const double[]){ __VA_ARGS__ }

static void init(gb *b, Onnx__TensorProto *t) { b->init[b->n_init++] = t; }
/* A Constant node making a tensor. */
static void constant(gb *b, Onnx__TensorProto *t) {
    Onnx__NodeProto *n = node(b, t->name, "Constant", "", t->name);
    Onnx__AttributeProto *a = attr(n, "value");
    a->has_type = true;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    a->t = t;
}

/* A tensor value info; a dim of -1 is the symbolic batch "N"; elem 0: no type (outputs). */
static Onnx__ValueInfoProto *vinfo(const char *name, int32_t elem, const int64_t *dims, int r) {
    Onnx__ValueInfoProto *v = ox_alloc(&A, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = ox_strdup(&A, name);
    if (!elem) return v;
    Onnx__TypeProto *tp = ox_alloc(&A, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ox_alloc(&A, sizeof *tt);
    Onnx__TensorShapeProto *sh = ox_alloc(&A, sizeof *sh);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = true;
    tt->elem_type = elem;
    tt->shape = sh;
    sh->n_dim = (size_t)r;
    sh->dim = ox_alloc(&A, (size_t)(r + 1) * sizeof *sh->dim);
    for (int i = 0; i < r; i++) {
        Onnx__TensorShapeProto__Dimension *d = ox_alloc(&A, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] < 0) { d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM; d->dim_param = ox_strdup(&A, "N"); }
        else { d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE; d->dim_value = dims[i]; }
        sh->dim[i] = d;
    }
    v->type = tp;
    return v;
}
static void input(gb *b, const char *name, int32_t elem, const int64_t *dims, int r) { b->in[b->n_in++] = vinfo(name, elem, dims, r); }
static void output(gb *b, const char *name) { b->out[b->n_out++] = vinfo(name, 0, NULL, 0); }

/* Writes the model (opset 17) to dir/name; returns its path. */
static char *write_model(gb *b, const char *name) {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto op, *ops[1] = { &op };
    onnx__model_proto__init(&m);
    onnx__graph_proto__init(&g);
    onnx__operator_set_id_proto__init(&op);
    op.has_version = true;
    op.version = 17;
    op.domain = (char *)"";
    m.has_ir_version = true;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = ops;
    m.graph = &g;
    g.name = (char *)"hostile";
    g.node = b->node; g.n_node = (size_t)b->n_node;
    g.initializer = b->init; g.n_initializer = (size_t)b->n_init;
    g.input = b->in; g.n_input = (size_t)b->n_in;
    g.output = b->out; g.n_output = (size_t)b->n_out;
    char *path = tmp(name);
    CHECK_OK(ox_model_write(&m, path));
    return path;
}

/* Imports path into a new graph: the status; the error must hold frag (and frag2). */
static kiln_status import(const char *path, kiln_status want, const char *frag, const char *frag2) {
    kiln_graph *g = kiln_graph_new();
    kiln_onnx_graph *r = NULL;
    kiln_status st = kiln_graph_from_onnx(g, path, &(kiln_onnx_import_opts){ .batch = 2 }, &r);
    const char *e = st ? kiln_last_error() : "";
    CHECK_MSG(st == want && (!frag || strstr(e, frag)) && (!frag2 || strstr(e, frag2)), "%s: want %s with '%s'%s%s: got %s: %s", path,
              kiln_status_name(want), frag ? frag : "", frag2 ? " and " : "", frag2 ? frag2 : "", kiln_status_name(st), e);
    CHECK(st != KILN_OK || r);
    kiln_onnx_graph_free(r);
    kiln_graph_free(g);
    return st;
}

static void reset(gb *b) { memset(b, 0, sizeof *b); }

/* ---- the cases ---- */
static void test_concat_dims(void) {
    gb b;
    /* Concat(axis=1) of int64 [3, 2] and [300, 2]: folded on the host before */
    reset(&b);
    double v[600] = { 0 };
    init(&b, tensor("a", I64, DIMS(3, 2), v));
    init(&b, tensor("b", I64, DIMS(300, 2), v));
    attr_int(node(&b, "cat", "Concat", "a,b", "c"), "axis", 1);
    input(&b, "x", F32, DIMS(-1, 4));
    node(&b, "cast", "Cast", "c", "cf");
    attr_int(b.node[b.n_node - 1], "to", F32);
    node(&b, "sum", "ReduceSum", "cf", "s");
    node(&b, "add", "Add", "x,s", "y");
    output(&b, "y");
    import(write_model(&b, "concat.onnx"), KILN_SHAPE_MISMATCH, "node 'cat' (Concat)", "differ in dimension 0");
    /* the same on the graph path (an input) */
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    input(&b, "z", F32, DIMS(-1, 5));
    attr_int(node(&b, "cat", "Concat", "x,z", "y"), "axis", 0);
    output(&b, "y");
    import(write_model(&b, "concat2.onnx"), KILN_SHAPE_MISMATCH, "node 'cat' (Concat)", "differ in dimension 1");
    /* a valid fold still works */
    reset(&b);
    init(&b, tensor("a", I64, DIMS(2, 2), VALS(1, 2, 3, 4)));
    init(&b, tensor("b", I64, DIMS(2, 1), VALS(5, 6)));
    attr_int(node(&b, "cat", "Concat", "a,b", "y"), "axis", 1);
    output(&b, "y");
    import(write_model(&b, "concat3.onnx"), KILN_OK, NULL, NULL);
}

static void test_long_input_name(void) {
    char name[601];
    memset(name, 'a', 600);
    name[600] = 0;
    gb b;
    reset(&b);
    input(&b, name, F32, DIMS(-1, 4));
    node(&b, "relu", "Relu", name, "y");
    output(&b, "y");
    char *path = write_model(&b, "long_name.onnx");
    kiln_graph *g = kiln_graph_new();
    kiln_onnx_graph *r = NULL;
    CHECK_OK(kiln_graph_from_onnx(g, path, NULL, &r));
    CHECK(r && kiln_onnx_graph_input_name(r, 0) && !strcmp(kiln_onnx_graph_input_name(r, 0), name));
    kiln_onnx_graph_free(r);
    kiln_graph_free(g);
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_onnx(path, NULL, &m));
    CHECK(m && kiln_model_output_shape(m).rank == 1 && kiln_model_output_shape(m).dim[0] == 4);
    kiln_model_free(m);
}

static void test_no_broadcast(void) {
    static const char *const ops[] = { "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Equal" };
    gb b;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        reset(&b);
        input(&b, "x", F32, DIMS(-1, 4));
        init(&b, tensor("w", F32, DIMS(3), VALS(1, 2, 3)));
        node(&b, "op", ops[i], "x,w", "y");
        output(&b, "y");
        char f[64];
        snprintf(f, sizeof f, "nb_%s.onnx", ops[i]);
        import(write_model(&b, f), KILN_SHAPE_MISMATCH, "do not broadcast", "[3]");
    }
    /* through ConstantOfShape and Range */
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    constant(&b, tensor("shape", I64, DIMS(1), VALS(3)));
    node(&b, "cos", "ConstantOfShape", "shape", "c");
    node(&b, "add", "Add", "x,c", "y");
    output(&b, "y");
    import(write_model(&b, "nb_cos.onnx"), KILN_SHAPE_MISMATCH, "node 'add' (Add)", "'c' [3] do not broadcast");
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    constant(&b, tensor("s", F32, DIMS(), VALS(0)));
    constant(&b, tensor("l", F32, DIMS(), VALS(3)));
    constant(&b, tensor("d", F32, DIMS(), VALS(1)));
    node(&b, "range", "Range", "s,l,d", "c");
    node(&b, "mul", "Mul", "x,c", "y");
    output(&b, "y");
    import(write_model(&b, "nb_range.onnx"), KILN_SHAPE_MISMATCH, "node 'mul' (Mul)", "[2, 4]");
    /* known values on both sides (folded) */
    reset(&b);
    init(&b, tensor("a", I64, DIMS(2), VALS(1, 2)));
    init(&b, tensor("c", I64, DIMS(3), VALS(1, 2, 3)));
    node(&b, "add", "Add", "a,c", "y");
    output(&b, "y");
    import(write_model(&b, "nb_fold.onnx"), KILN_SHAPE_MISMATCH, "do not broadcast", NULL);
}

/* A varint, then bytes: protobuf's wire format, written by hand to nest deeper than any builder would. */
static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t k = 0;
    do { p[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
    return k;
}
/* Field f (length-delimited) holding buf[0..n) placed in front of it: buf grows downwards from *start. */
static void wrap(uint8_t *buf, size_t *start, size_t end, int field) {
    uint8_t hdr[16];
    size_t k = put_varint(hdr, (uint64_t)field << 3 | 2);
    k += put_varint(hdr + k, end - *start);
    *start -= k;
    memcpy(buf + *start, hdr, k);
}
/* A model whose graph's node's attribute holds a graph, depth times over. */
static char *nested_model(int depth, const char *name) {
    size_t cap = (size_t)depth * 40 + 256, end = cap, start = end;
    uint8_t *buf = malloc(cap);
    for (int i = 0; i < depth; i++) {          /* GraphProto { node { attribute { name "g", g: <inner> } } } */
        wrap(buf, &start, end, 6);             /* AttributeProto.g */
        static const uint8_t aname[] = { 0x0a, 0x01, 'g', 0xa0, 0x01, 0x05 };   /* name "g", type GRAPH (20: 5) */
        start -= sizeof aname;
        memcpy(buf + start, aname, sizeof aname);
        wrap(buf, &start, end, 5);             /* NodeProto.attribute */
        static const uint8_t op[] = { 0x22, 0x02, 'I', 'f' };                   /* op_type "If" */
        start -= sizeof op;
        memcpy(buf + start, op, sizeof op);
        wrap(buf, &start, end, 1);             /* GraphProto.node */
    }
    wrap(buf, &start, end, 7);                 /* ModelProto.graph */
    static const uint8_t head[] = { 0x08, 0x08, 0x42, 0x02, 0x10, 0x11 };       /* ir_version 8, opset_import { version 17 } */
    start -= sizeof head;
    memcpy(buf + start, head, sizeof head);
    char *path = tmp(name);
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(buf + start, 1, end - start, f); fclose(f); }
    free(buf);
    return path;
}

static void test_deep_nesting(void) {
    char *p = nested_model(3000, "deep.onnx");
    struct stat sb;
    CHECK(stat(p, &sb) == 0 && sb.st_size < 100000);
    import(p, KILN_INVALID_ARGUMENT, "nested more than 64 deep", NULL);
    kiln_model *m = NULL;
    CHECK(kiln_model_from_onnx(p, NULL, &m) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "nested more than"));
    /* a shallow subgraph parses: no error about the nesting (the graph has no outputs: nothing to import) */
    kiln_graph *g = kiln_graph_new();
    kiln_onnx_graph *r = NULL;
    kiln_status st = kiln_graph_from_onnx(g, nested_model(3, "shallow.onnx"), NULL, &r);
    CHECK_MSG(st == KILN_OK || !strstr(kiln_last_error(), "nested"), "%s", kiln_last_error());
    kiln_onnx_graph_free(r);
    kiln_graph_free(g);
}

static void test_folding_bounds(void) {
    gb b;
    /* Tile by 2^31: no longer 2^31 copies (16.8 GB and 45 s), a broadcast */
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    init(&b, tensor("r", I64, DIMS(2), VALS(1, 2147483648.0)));
    node(&b, "tile", "Tile", "x,r", "y");
    output(&b, "y");
    alarm(20);
    kiln_graph *g = kiln_graph_new();
    kiln_onnx_graph *r = NULL;
    CHECK_OK(kiln_graph_from_onnx(g, write_model(&b, "tile.onnx"), NULL, &r));
    kiln_shape s = r ? kiln_node_shape(kiln_onnx_graph_output(r, 0)) : KILN_SCALAR;
    CHECK(s.rank == 2 && s.dim[0] == 1 && s.dim[1] == 4 * 2147483648LL);
    kiln_onnx_graph_free(r);
    kiln_graph_free(g);
    alarm(0);
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    init(&b, tensor("r", I64, DIMS(2), VALS(1, 4611686018427387904.0)));
    node(&b, "tile", "Tile", "x,r", "y");
    output(&b, "y");
    import(write_model(&b, "tile_overflow.onnx"), KILN_INVALID_ARGUMENT, "node 'tile' (Tile)", "overflows");
    b.init[0] = tensor("r", I64, DIMS(2), VALS(1, -3));
    import(write_model(&b, "tile_neg.onnx"), KILN_UNSUPPORTED, "repeats[1] = -3", NULL);
    /* Tile still tiles: [[1, 2]] by [2, 3] */
    reset(&b);
    input(&b, "x", F32, DIMS(1, 2));
    init(&b, tensor("r", I64, DIMS(2), VALS(2, 3)));
    node(&b, "tile", "Tile", "x,r", "y");
    output(&b, "y");
    g = kiln_graph_new();
    r = NULL;
    CHECK_OK(kiln_graph_from_onnx(g, write_model(&b, "tile_ok.onnx"), NULL, &r));
    kiln_session *sess = r ? kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU }) : NULL;
    if (sess) {
        kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(1, 2)), *y = NULL;
        ((float *)x->data)[0] = 1;
        ((float *)x->data)[1] = 2;
        kiln_node *out = kiln_onnx_graph_output(r, 0);
        CHECK_OK(kiln_session_run(sess, &(kiln_feed){ kiln_onnx_graph_input(r, 0), x }, 1, &out, &y, 1, NULL, 0));
        static const float want[12] = { 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2 };
        CHECK(y && kiln_shape_equal(y->shape, KILN_SHAPE(2, 6)) && !memcmp(y->data, want, sizeof want));
        kiln_tensor_free(x);
        kiln_tensor_free(y);
    }
    kiln_session_free(sess);
    kiln_onnx_graph_free(r);
    kiln_graph_free(g);
    /* ConstantOfShape [2^14, 2^14] (1 GiB of floats), negative and overflowing dims */
    static const struct { double d0, d1; kiln_status st; const char *frag; } cos[] = {
        { 16384, 16384, KILN_UNSUPPORTED, "more than the 64 MiB" },
        { -1, 4, KILN_INVALID_ARGUMENT, "negative dimension" },
        { 4294967296.0, 4294967296.0, KILN_INVALID_ARGUMENT, "overflows" },
    };
    for (size_t i = 0; i < sizeof cos / sizeof *cos; i++) {
        reset(&b);
        constant(&b, tensor("shape", I64, DIMS(2), VALS(cos[i].d0, cos[i].d1)));
        node(&b, "cos", "ConstantOfShape", "shape", "y");
        output(&b, "y");
        import(write_model(&b, "cos.onnx"), cos[i].st, "node 'cos' (ConstantOfShape)", cos[i].frag);
    }
    /* Range 0..3e8 (2.3 GB before), an infinite count, a non-scalar limit */
    static const struct { double a, l, d; const char *frag; } rg[] = {
        { 0, 3e8, 1, "more than" }, { 0, 1e30, 1e-30, "more than" }, { 0, 1e30, 1, "more than" },
    };
    for (size_t i = 0; i < sizeof rg / sizeof *rg; i++) {
        reset(&b);
        constant(&b, tensor("s", F32, DIMS(), VALS(rg[i].a)));
        constant(&b, tensor("l", F32, DIMS(), VALS(rg[i].l)));
        constant(&b, tensor("d", F32, DIMS(), VALS(rg[i].d)));
        node(&b, "range", "Range", "s,l,d", "y");
        output(&b, "y");
        import(write_model(&b, "range.onnx"), KILN_UNSUPPORTED, "node 'range' (Range)", rg[i].frag);
    }
    reset(&b);
    constant(&b, tensor("s", I64, DIMS(), VALS(0)));
    constant(&b, tensor("l", I64, DIMS(0), NULL));
    constant(&b, tensor("d", I64, DIMS(), VALS(1)));
    node(&b, "range", "Range", "s,l,d", "y");
    output(&b, "y");
    import(write_model(&b, "range_empty.onnx"), KILN_INVALID_ARGUMENT, "must be a scalar", NULL);
    /* a folded Add whose result passes the cap */
    reset(&b);
    constant(&b, tensor("shape", I64, DIMS(2), VALS(2048, 4096)));
    node(&b, "cos", "ConstantOfShape", "shape", "c");          /* 32 MiB of floats: below the cap */
    constant(&b, tensor("two", I64, DIMS(3, 1, 1), VALS(1, 2, 3)));
    node(&b, "cast", "Cast", "two", "tf");
    attr_int(b.node[b.n_node - 1], "to", F32);
    node(&b, "add", "Add", "c,tf", "y");                        /* [3, 2048, 4096]: 96 MiB */
    output(&b, "y");
    import(write_model(&b, "add_big.onnx"), KILN_UNSUPPORTED, "node 'add' (Add)", "more than the 64 MiB");
}

static void test_int_attributes(void) {
    gb b;
    static const struct { const char *op, *attr; int64_t v[4]; int n; const char *frag; } cases[] = {
        { "Conv", "strides", { 4294967297LL, 1 }, 2, "attribute 'strides' = 4294967297" },
        { "Conv", "dilations", { 1, 4294967297LL }, 2, "attribute 'dilations' = 4294967297" },
        { "Conv", "pads", { 0, 0, 4294967296LL, 0 }, 4, "attribute 'pads' = 4294967296" },
        { "Conv", "pads", { 0, -1, 0, 0 }, 4, "attribute 'pads' = -1" },
        { "MaxPool", "kernel_shape", { 4294967298LL, 2 }, 2, "attribute 'kernel_shape' = 4294967298" },
        { "AveragePool", "strides", { 1, 4294967297LL }, 2, "attribute 'strides' = 4294967297" },
        { "Conv", "group", { 4294967297LL }, 1, "attribute 'group' = 4294967297" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        reset(&b);
        input(&b, "x", F32, DIMS(-1, 1, 8, 8));
        bool conv = !strcmp(cases[i].op, "Conv");
        if (conv) init(&b, tensor("w", F32, DIMS(1, 1, 2, 2), VALS(1, 1, 1, 1)));
        Onnx__NodeProto *n = node(&b, "win", cases[i].op, conv ? "x,w" : "x", "y");
        if (!conv && strcmp(cases[i].attr, "kernel_shape")) attr_ints(n, "kernel_shape", (const int64_t[]){ 2, 2 }, 2);
        if (!strcmp(cases[i].attr, "group")) attr_int(n, "group", cases[i].v[0]);
        else attr_ints(n, cases[i].attr, cases[i].v, (size_t)cases[i].n);
        output(&b, "y");
        import(write_model(&b, "attr.onnx"), KILN_INVALID_ARGUMENT, "node 'win'", cases[i].frag);
    }
    /* a list attribute longer than any rank (MeanVarianceNormalization reduced over -2 axes before) */
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 2, 3, 4));
    attr_ints(node(&b, "mvn", "MeanVarianceNormalization", "x", "y"), "axes", (const int64_t[]){ 0, 1, 2, 3, 0, 1, 2 }, 7);
    output(&b, "y");
    import(write_model(&b, "mvn.onnx"), KILN_INVALID_ARGUMENT, "node 'mvn'", "attribute 'axes' has 7 values, at most 6");
    /* Cast to 2^32 + 1 (was FLOAT) */
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    attr_int(node(&b, "cast", "Cast", "x", "y"), "to", 4294967297LL);
    output(&b, "y");
    import(write_model(&b, "cast.onnx"), KILN_INVALID_ARGUMENT, "node 'cast' (Cast)", "attribute 'to' = 4294967297");
}

static void test_ssa(void) {
    gb b;
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    node(&b, "first", "Relu", "x", "y");
    node(&b, "second", "Sigmoid", "x", "y");
    output(&b, "y");
    import(write_model(&b, "ssa.onnx"), KILN_INVALID_ARGUMENT, "written by node 'first' (Relu) and again by node 'second' (Sigmoid)", NULL);
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    init(&b, tensor("w", F32, DIMS(4), VALS(1, 2, 3, 4)));
    node(&b, "over", "Relu", "x", "w");
    node(&b, "add", "Add", "x,w", "y");
    output(&b, "y");
    import(write_model(&b, "ssa_init.onnx"), KILN_INVALID_ARGUMENT, "output 'w' of node 'over' (Relu) is also an initializer", NULL);
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    node(&b, "over", "Relu", "x", "x");
    output(&b, "x");
    import(write_model(&b, "ssa_input.onnx"), KILN_INVALID_ARGUMENT, "is also a graph input", NULL);
}

static void test_scalar_operands(void) {
    gb b;
    reset(&b);
    input(&b, "x", F32, DIMS(1, 3));
    init(&b, tensor("e", F32, DIMS(2, 3), VALS(2, 2, 2, 2, 2, 2)));
    node(&b, "pow", "Pow", "x,e", "y");
    output(&b, "y");
    import(write_model(&b, "pow.onnx"), KILN_UNSUPPORTED, "node 'pow' (Pow)", "exponent 'e' [2, 3] would broadcast 'x' [1, 3] to [2, 3]");
    b.init[0] = tensor("e", F32, DIMS(1, 3), VALS(2, 2, 2));     /* the same shape: fine */
    import(write_model(&b, "pow_ok.onnx"), KILN_OK, NULL, NULL);
    reset(&b);
    input(&b, "x", F32, DIMS(1, 3));
    init(&b, tensor("lo", F32, DIMS(4, 1, 1), VALS(0, 0, 0, 0)));
    node(&b, "clip", "Clip", "x,lo", "y");
    output(&b, "y");
    import(write_model(&b, "clip.onnx"), KILN_UNSUPPORTED, "node 'clip' (Clip)", "min 'lo' [4, 1, 1] would broadcast");
}

static void test_initializer_rank(void) {
    gb b;
    reset(&b);
    init(&b, tensor("big", I64, DIMS(1, 1, 1, 1, 1, 1, 2), VALS(1, 2)));
    node(&b, "shape", "Shape", "big", "y");
    output(&b, "y");
    import(write_model(&b, "rank7.onnx"), KILN_UNSUPPORTED, "initializer 'big' has rank 7", NULL);
    reset(&b);
    init(&b, tensor("neg", I64, DIMS(2, -5), NULL));
    node(&b, "shape", "Shape", "neg", "y");
    output(&b, "y");
    import(write_model(&b, "negdim.onnx"), KILN_INVALID_ARGUMENT, "initializer 'neg' has shape", NULL);
}

/* Large dims and no values: the count is checked before allocating (32 TiB asked before). */
static void test_initializer_data(void) {
    gb b;
    reset(&b);
    input(&b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, DIMS(1));
    init(&b, tensor("huge", I64, DIMS(2097152, 2097152), NULL));
    node(&b, "add", "Add", "x,huge", "y");
    output(&b, "y");
    import(write_model(&b, "huge.onnx"), KILN_INVALID_ARGUMENT, "initializer 'huge': int64 [2097152, 2097152] needs 4398046511104 values", NULL);
}

/* A first input named "" (absent): handlers read input 0 (NULL dereference in Unsqueeze before). */
static void test_missing_input(void) {
    static const char *const ops[] = { "Unsqueeze", "Relu", "Reshape", "Concat", "Tile", "Conv" };
    gb b;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        reset(&b);
        input(&b, "x", F32, DIMS(-1, 4));
        init(&b, tensor("axes", I64, DIMS(1), VALS(0)));
        node(&b, "op", ops[i], "-,axes", "y");
        output(&b, "y");
        import(write_model(&b, "missing.onnx"), KILN_INVALID_ARGUMENT, "node 'op'", "its first input is missing");
    }
}

/* Dimensions whose product passes int64 (fuzz/crashes/fuzz_onnx/reshape_infer_overflow: an input dim of
 * 2^62 reached MaxPool's NHWC reshape, signed overflow in reshape_infer). */
static void test_huge_dims(void) {
    gb b;
    reset(&b);
    input(&b, "x", F32, DIMS(-1, (int64_t)1 << 62));
    node(&b, "relu", "Relu", "x", "y");
    output(&b, "y");
    import(write_model(&b, "huge_input.onnx"), KILN_INVALID_ARGUMENT, "too many elements", NULL);
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 1, (int64_t)1 << 40, (int64_t)1 << 40));
    attr_ints(node(&b, "pool", "MaxPool", "x", "y"), "kernel_shape", (const int64_t[]){ 2, 2 }, 2);
    output(&b, "y");
    import(write_model(&b, "huge_pool.onnx"), KILN_INVALID_ARGUMENT, "too many elements", NULL);
    /* a Reshape target whose product passes int64 */
    reset(&b);
    input(&b, "x", F32, DIMS(-1, 4));
    init(&b, tensor("t", I64, DIMS(3), VALS(-1, (double)((int64_t)1 << 40), (double)((int64_t)1 << 40))));
    node(&b, "r", "Reshape", "x,t", "y");
    output(&b, "y");
    import(write_model(&b, "huge_reshape.onnx"), KILN_INVALID_ARGUMENT, "node 'r' (Reshape)", NULL);
    /* broadcasting two huge but addressable operands into an unaddressable result */
    reset(&b);
    input(&b, "x", F32, DIMS(-1, (int64_t)1 << 31, 1));
    input(&b, "z", F32, DIMS(-1, 1, (int64_t)1 << 31));
    node(&b, "add", "Add", "x,z", "y");
    output(&b, "y");
    import(write_model(&b, "huge_broadcast.onnx"), KILN_INVALID_ARGUMENT, "too many elements", NULL);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_onnx_hostile: timed out (a FIFO or a fold that hangs?)\n";
    if (write(2, msg, sizeof msg - 1)) {}
    _exit(1);
}

static void test_fifo(void) {
    char *p = tmp("fifo.onnx");
    if (mkfifo(p, 0600)) { perror("mkfifo"); check_failed++; return; }
    alarm(1);
    import(p, KILN_IO_ERROR, "not a regular file", NULL);
    kiln_model *m = NULL;
    CHECK(kiln_model_from_onnx(p, NULL, &m) == KILN_IO_ERROR && strstr(kiln_last_error(), p));
    alarm(0);
}

/* test_onnx_hostile [CASE]: all the cases, or the one named. */
int main(int argc, char **argv) {
    static const struct { const char *name; void (*fn)(void); } cases[] = {
        { "fifo", test_fifo }, { "concat_dims", test_concat_dims }, { "long_input_name", test_long_input_name },
        { "no_broadcast", test_no_broadcast }, { "deep_nesting", test_deep_nesting }, { "folding_bounds", test_folding_bounds },
        { "int_attributes", test_int_attributes }, { "ssa", test_ssa }, { "scalar_operands", test_scalar_operands },
        { "initializer_rank", test_initializer_rank }, { "initializer_data", test_initializer_data },
        { "missing_input", test_missing_input }, { "huge_dims", test_huge_dims },
    };
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    signal(SIGALRM, on_alarm);
    kiln_set_num_threads(2);
    int ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (argc < 2 || !strcmp(argv[1], cases[i].name)) { cases[i].fn(); ran++; }
    if (!ran) { fprintf(stderr, "test_onnx_hostile: no case '%s'\n", argv[1]); check_failed++; }
    ox_arena_free(&A);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
    return check_summary("test_onnx_hostile");
}
