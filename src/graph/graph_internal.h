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
    bool autocast_act;          /* and the activations between layers stay in it (autocast.c) */
    bool in_autocast;           /* kiln_autocast_inputs is inserting casts: no recursion */
};

/* Activation autocast (kiln_graph_set_autocast_activations): the inputs node `op` should read,
 * in[] itself or casts of it written to buf. */
/* An f32 weight as the layer should read it: its compute-dtype cast under activation autocast
 * (made before the op that uses it, so a fused bias is ready before its convolution), else w. */
kiln_node *kiln_autocast_weight(kiln_graph *g, kiln_node *w);
kiln_node *const *kiln_autocast_inputs(kiln_graph *g, kiln_op op, kiln_node *const *in, int n_in, kiln_node **buf);
kiln_node *kiln_node_new_named(kiln_graph *g, kiln_op op, const char *name, kiln_node *const *in,
                               int n_in, const kiln_attrs *attrs);
#endif
