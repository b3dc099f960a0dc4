/* Internal graph state. */
#ifndef KILN_GRAPH_INTERNAL_H
#define KILN_GRAPH_INTERNAL_H
#include "ops/op.h"

#define KILN_MAX_SCOPES 32

typedef enum kiln_device_type { KILN_DEVICE_CPU = 0, KILN_DEVICE_GPU, KILN_DEVICE_TYPE_COUNT } kiln_device_type;
typedef struct kiln_device_spec { kiln_device_type type; int index; } kiln_device_spec;
/* Parses "/gpu:0", "/GPU:0", "/device:GPU:0", "gpu:0", "cuda:0", "/cpu:0", "cpu", "gpu". */
kiln_status kiln_parse_device(const char *s, kiln_device_spec *out);
/* Canonical "/device:GPU:0". */
void kiln_device_spec_str(const kiln_device_spec *d, char *buf, size_t n);

struct kiln_graph {
    kiln_node **nodes;
    int n_nodes, cap;
    char *scopes[KILN_MAX_SCOPES];
    int n_scopes;
    kiln_device_spec devices[KILN_MAX_SCOPES];
    int n_devices;
    kiln_status status;
    char error[1024];
    /* name -> node index, open addressing (names are looked up on every node creation) */
    int *name_slots;            /* -1 empty */
    int n_slots;
    kiln_dtype autocast;        /* KILN_F16/KILN_BF16: matmul/conv on f32 operands compute in it */
};

kiln_node *kiln_node_new_named(kiln_graph *g, kiln_op op, const char *name, kiln_node *const *in,
                               int n_in, const kiln_attrs *attrs);
#endif
