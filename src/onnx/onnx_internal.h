/* Shared by the ONNX translator (src/onnx, built when protobuf-c and onnx.proto were found):
 * the messages protoc-c generates from libonnx-dev's onnx.proto at build time (onnx.pb-c.h in
 * the build tree), file and tensor conversions, attributes, and the graph importer's core that
 * the model layer (onnx_model.c) and kiln_graph_from_onnx share. */
#ifndef KILN_ONNX_INTERNAL_H
#define KILN_ONNX_INTERNAL_H
#include <stdio.h>
#include "onnx.pb-c.h"
#include "kiln/onnx.h"
#include "core/core.h"

#define OX_OPSET 17          /* what export writes (and the newest the Debian node tests use) */
#define OX_IR_VERSION 8      /* ONNX 1.12's IR for opset 17 */

/* ---- onnx_proto.c: files, dtypes, tensors, attributes ---- */
/* Reads and parses path (errors name the file). Free with ox_model_free. */
kiln_status ox_model_read(const char *path, Onnx__ModelProto **out);
void ox_model_free(Onnx__ModelProto *m);
/* ONNX element type <-> Kiln dtype; false / 0 for types Kiln lacks. */
bool ox_dtype_of(int32_t onnx_type, kiln_dtype *out);
int32_t ox_onnx_type(kiln_dtype t);
const char *ox_type_name(int32_t onnx_type);      /* "float", "int8", ... */
/* A TensorProto's value as a new host tensor; KILN_UNSUPPORTED for a dtype Kiln lacks or external
 * data, KILN_INVALID_ARGUMENT for a malformed one (what: "initializer 'w'" for messages). */
kiln_status ox_tensor_read(const Onnx__TensorProto *t, const char *what, kiln_tensor **out);
/* Reads a serialized TensorProto file (the node tests' input_0.pb). */
kiln_status ox_tensor_read_file(const char *path, kiln_tensor **out, char **name);

/* Attributes of a node (NULL / the default when absent). */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name);
int64_t ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt);
double ox_attr_float(const Onnx__NodeProto *n, const char *name, double dflt);
/* The ints of a list attribute into out (at most max); returns the count, -1 when absent, -2
 * when longer than max. */
int ox_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max);
/* A string attribute copied into buf ("" when absent); returns buf. */
const char *ox_attr_str(const Onnx__NodeProto *n, const char *name, char *buf, size_t len);

/* ---- an arena for the messages export builds (freed at once) ---- */
typedef struct ox_arena { struct ox_block *head; bool failed; } ox_arena;
void *ox_alloc(ox_arena *a, size_t n);             /* zeroed; NULL (and a->failed) when out of memory */
char *ox_strdup(ox_arena *a, const char *s);
void ox_arena_free(ox_arena *a);
/* A TensorProto holding t's values (raw_data, little-endian), named name. */
Onnx__TensorProto *ox_tensor_proto(ox_arena *a, const char *name, const kiln_tensor *t);
/* Writes m to path atomically. */
kiln_status ox_model_write(const Onnx__ModelProto *m, const char *path);
/* onnx_model.c: the ONNX graph an ImportedGraph layer l of m runs, written to path with the
 * layer's current weights as its initializers (a fine-tuned imported model exported back). */
struct kiln_layer;
kiln_status ox_model_write_imported(kiln_model *m, struct kiln_layer *l, const char *path);

/* ---- onnx_import.c: ONNX graph -> ops in a Kiln graph ---- */
typedef struct ox_importer ox_importer;
/* Where the importer gets an initializer's node when an op reads it as data (not as a constant
 * attribute such as a shape): perm is the layout the op wants it in (axis j of the node holds
 * the initializer's axis perm[j]); moving: it is a BatchNormalization running statistic (not
 * trainable). Returns the node and writes the layout it has into got_perm. */
typedef kiln_node *(*ox_init_fn)(void *user, ox_importer *im, int index, const int *perm, bool moving, int *got_perm);
typedef struct ox_import_spec {
    const Onnx__ModelProto *model;
    const char *path;                    /* names the model in messages */
    kiln_graph *g;
    int64_t batch;                       /* the value of a symbolic leading input dim */
    bool training;                       /* BatchNormalization on batch statistics, Dropout drops */
    uint64_t seed;                       /* Dropout seeds */
    const kiln_onnx_input *inputs; int n_inputs;   /* bindings of graph inputs */
    const int *input_perm;               /* the first input's node layout (NULL: as ONNX) */
    ox_init_fn init_node; void *user;    /* NULL: initializers become constants */
    int skip_node;                       /* a node left out, its output aliased to its input 0 (-1: none) */
    bool any_batch;                      /* a bound input's first dimension may differ from a fixed one in the model */
} ox_import_spec;
/* Builds the graph; on error (kiln_last_error names the model file, the node, its op and the
 * attribute or input at fault) NULL. KILN_UNSUPPORTED: an op, attribute value or dtype Kiln
 * lacks. */
kiln_status ox_import(const ox_import_spec *spec, ox_importer **out);
void ox_importer_free(ox_importer *im);
int ox_importer_output_count(const ox_importer *im);
kiln_node *ox_importer_output(ox_importer *im, int i);       /* the graph's i-th output, as ONNX lays it out */
kiln_node *ox_importer_input(const ox_importer *im, int i);  /* the i-th non-initializer graph input */
const Onnx__TensorProto *ox_importer_init(const ox_importer *im, int index);
int ox_importer_init_count(const ox_importer *im);
bool ox_importer_shape(const ox_importer *im, const char *name, kiln_shape *out);   /* a value's ONNX shape, once imported */
/* The initializer's value, converted once (borrowed from the importer). */
kiln_status ox_importer_init_value(ox_importer *im, int index, const kiln_tensor **out);

/* Static shapes of a graph input (dims; a symbolic leading one is -1); *name (may be NULL): its
 * name, borrowed from m. */
kiln_status ox_input_shape(const Onnx__ModelProto *m, const char *path, int i, kiln_dtype *dt, kiln_shape *s, const char **name);
/* Transposes a host tensor: out.dim[j] = t.dim[perm[j]]. _into: into o, of ox_permuted_shape. */
kiln_tensor *ox_permute(const kiln_tensor *t, const int *perm);
kiln_shape ox_permuted_shape(kiln_shape s, const int *perm);
void ox_permute_into(const kiln_tensor *t, const int *perm, kiln_tensor *o);
#endif
