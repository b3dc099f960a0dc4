/* Epilogue fusion: ops that follow a producer (a convolution, a matmul) and that the producer's
 * kernel applies as it writes its output (kiln_kctx.epi_bias / epi_relu), so the producer's own
 * output is never stored. The patterns are a table in fusion.c. */
#ifndef KILN_FUSION_H
#define KILN_FUSION_H
#include "graph/graph_internal.h"

/* What a producer's kernel applies after computing: bias_id (-1: none), relu; tail is the last
 * node fused into it (whose value the kernel writes), the producer itself when nothing is. */
typedef struct kiln_epilogue { int bias_id; bool relu; int tail; } kiln_epilogue;

typedef struct kiln_fusion_request {
    const bool *need;        /* [n_nodes] nodes the plan runs */
    const int8_t *home;      /* [n_nodes] memory space of each value */
    const int *n_readers;    /* [n_nodes] needed nodes reading each value */
    const int *reader;       /* [n_nodes] its reader when n_readers is 1 */
    const bool *fetched;     /* [n_nodes] fetched values must be stored */
    /* Whether n, run where it is placed, has a kernel that applies epilogues. */
    bool (*can_fuse)(const kiln_node *n, void *ctx);
    void *ctx;
} kiln_fusion_request;

/* Fills epi[id] for every needed node (tail == id: nothing fused) and sets absorbed[id] for the
 * nodes whose work a producer's epilogue does (they get no step of their own). */
void kiln_fuse(kiln_graph *g, const kiln_fusion_request *r, kiln_epilogue *epi, bool *absorbed);
#endif
