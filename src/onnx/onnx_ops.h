/* The importer's values and the helpers its op handlers (onnx_ops_*.c) use. A value is an ONNX
 * tensor of the graph: its ONNX (logical) dtype and shape, and where it is in Kiln: a node whose
 * axes are the logical axes in layout `perm` (node axis j = logical axis perm[j]: NCHW images
 * live as NHWC nodes, perm {0, 2, 3, 1}), and/or a host tensor when its value is known while
 * building (initializers, Constant, Shape, shape arithmetic). Layouts change only where an op
 * needs another one, so chains of NCHW ops run on NHWC nodes without transposes. */
#ifndef KILN_ONNX_OPS_H
#define KILN_ONNX_OPS_H
#include "onnx/onnx_internal.h"

typedef struct ox_val {
    const char *name;
    bool defined;
    kiln_dtype dtype;
    kiln_shape shape;                 /* logical (ONNX) shape */
    kiln_node *node;                  /* the value in layout perm (NULL: not made yet) */
    int perm[KILN_MAX_DIMS];
    kiln_node *alt;                   /* the last other layout asked for (a cache) */
    int alt_perm[KILN_MAX_DIMS];
    const kiln_tensor *host;          /* the value while building, or NULL */
    bool runtime;                     /* node is the value (an op's result, a fed input); host, if any, only a copy known now */
    kiln_tensor *owned;               /* host when the value owns it */
    int init;                         /* initializer index, or -1 */
    int producer;                     /* the node writing it, or -1 */
    bool needed;                      /* an output of the graph depends on it */
} ox_val;

typedef kiln_status (*ox_handler)(ox_importer *im, const Onnx__NodeProto *n);
enum {
    OX_FLOAT = 1u << 0,               /* input 0 must be floating point (else: numeric, per Kiln's op) */
    OX_ANY = 1u << 1,                 /* any dtype Kiln has (shape ops) */
};
typedef struct ox_op {
    const char *type;                 /* ONNX op_type */
    ox_handler fn;
    const char *attrs;                /* the attributes it reads, comma-separated; any other is UNSUPPORTED */
    unsigned flags;
} ox_op;
/* Each family's handlers, ending with { NULL }. */
extern const ox_op ox_ops_elementwise[], ox_ops_nn[], ox_ops_shape[], ox_ops_loss[];

/* ---- onnx_import.c: for the handlers ---- */
kiln_graph *ox_graph(ox_importer *im);
int ox_opset(const ox_importer *im);
bool ox_training(const ox_importer *im);
uint64_t ox_seed(ox_importer *im);
/* Input i of node n (NULL when absent or named ""). */
ox_val *ox_in(ox_importer *im, const Onnx__NodeProto *n, int i);
int ox_n_in(const Onnx__NodeProto *n);
/* Whether output i is wanted (present with a name). */
bool ox_has_out(const Onnx__NodeProto *n, int i);
/* v as a node in layout want (NULL: the logical layout); moving: an initializer read as a
 * BatchNormalization running statistic. NULL after a graph error. */
kiln_node *ox_node_as(ox_importer *im, ox_val *v, const int *want, bool moving);
kiln_node *ox_node(ox_importer *im, ox_val *v);             /* logical layout */
/* v as a node in whatever layout it has; its layout into perm. */
kiln_node *ox_node_any(ox_importer *im, ox_val *v, int *perm);
/* v's value when known while building (initializer, constant, folded, or a bound input's
 * given value); NULL otherwise. */
const kiln_tensor *ox_static(ox_importer *im, ox_val *v);
/* v's value as host data for folding: known, and not a weight the model trains. */
const kiln_tensor *ox_foldable(ox_importer *im, ox_val *v);
/* Reads a static integer list (an ONNX int64 / int32 tensor of rank <= 1) into out. Returns the
 * count or -1 after an error naming what. */
int ox_static_ints(ox_importer *im, const Onnx__NodeProto *n, ox_val *v, const char *what, int64_t *out, int max);
/* Output i of n: node y in layout perm (NULL: logical). */
kiln_status ox_set(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_node *y, const int *perm);
/* Output i of n: a host value (taken). */
kiln_status ox_set_host(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_tensor *t);
/* Output i (already set with a node): its value known now too, computed on the host from known
 * inputs (taken; NULL: nothing), for ops that need it as a constant. */
void ox_set_known(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_tensor *t);
/* Output i from a host result h of known inputs: a constant when no input was a runtime value
 * (all foldable: h taken), else the node y (layout perm) with h known alongside. */
kiln_status ox_set_folded(ox_importer *im, const Onnx__NodeProto *n, int i, kiln_tensor *h, bool all_foldable, kiln_node *y, const int *perm);
/* The node's output i is its input j's value (Identity, inference Dropout). */
kiln_status ox_alias(ox_importer *im, const Onnx__NodeProto *n, int i, ox_val *v);
/* Integer attributes checked against [lo, hi] (values Kiln keeps in an int, sizes, counts):
 * outside it, an error naming the node, the attribute and the value. ox_attr_int_in: the value or
 * dflt into *out, false after an error. ox_attr_ints_in: the count, -1 when absent, -2 after an
 * error (a value out of range, more than max values). */
bool ox_attr_int_in(ox_importer *im, const Onnx__NodeProto *n, const char *name, int64_t dflt, int64_t lo, int64_t hi, int64_t *out);
int ox_attr_ints_in(ox_importer *im, const Onnx__NodeProto *n, const char *name, int64_t *out, int max, int64_t lo, int64_t hi);
/* A new host tensor for a value computed while building (folding). Every one is capped at
 * OX_MAX_FOLDED_BYTES, its size computed with checked arithmetic before allocating; beyond it,
 * with a negative dimension or rank > KILN_MAX_DIMS: NULL, after an error naming the node and the
 * size unless quiet (quiet: an optional copy of a value the graph computes anyway). */
#define OX_MAX_FOLDED_BYTES (64 << 20)
kiln_tensor *ox_host_new(ox_importer *im, kiln_dtype dt, kiln_shape s, bool quiet);
/* Errors naming the model, the node and its op; UNSUPPORTED for what Kiln lacks. */
kiln_status ox_fail(ox_importer *im, kiln_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A graph error after a builder returned NULL (kiln_graph_error says why). */
kiln_status ox_graph_fail(ox_importer *im);
/* The importer's first error (KILN_OK when none). */
kiln_status ox_status(const ox_importer *im);
/* v must be known while building (an op takes it as a fixed attribute): the error saying so, or
 * the error reading it. */
kiln_status ox_need_static(ox_importer *im, ox_val *v, const char *what);

/* ---- layouts ---- */
void ox_perm_ident(int *p, int r);
bool ox_perm_is_ident(const int *p, int r);
/* Channels last: {0, 2, 3, ..., r-1, 1} (identity for r <= 2). */
void ox_perm_nhwc(int *p, int r);
/* Node axis holding logical axis a. */
int ox_perm_find(const int *p, int r, int a);
/* A scalar node of dtype dt. */
kiln_node *ox_scalar(ox_importer *im, kiln_dtype dt, double v);
/* Normalises an axis in [-r, r); -1 (after ox_fail) when out of range. */
int ox_axis(ox_importer *im, int64_t axis, int r, const char *what);
#endif
