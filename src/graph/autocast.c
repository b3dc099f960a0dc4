/* Mixed precision as a graph decision (DESIGN.md): an autocast dtype on the graph makes the
 * MatMul and Conv2D builders cast f32 operands to bf16/f16 and mark the op acc_f32 (f32
 * accumulation, f32 output). Everything else stays f32, so softmax, losses, batch-norm
 * statistics and reductions need no special case. */
#include "graph/graph_internal.h"
#include "ops/op.h"

kiln_status kiln_graph_set_autocast(kiln_graph *g, kiln_dtype compute) {
    if (!g) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_graph_set_autocast: NULL graph");
    if (compute != KILN_F32 && compute != KILN_BF16 && compute != KILN_F16)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_graph_set_autocast: compute dtype %s: use bf16, f16 or f32 (off)",
                              kiln_dtype_name(compute));
    g->autocast = compute;
    return KILN_OK;
}

kiln_dtype kiln_graph_autocast(const kiln_graph *g) { return g ? g->autocast : KILN_F32; }

bool kiln_autocast_operands(kiln_graph *g, kiln_node **a, kiln_node **b) {
    if (!g || g->autocast == KILN_F32 || !*a || !*b) return false;
    if ((*a)->dtype != KILN_F32 || (*b)->dtype != KILN_F32) return false;
    *a = kiln_cast(g, *a, g->autocast);
    *b = kiln_cast(g, *b, g->autocast);
    return *a && *b;
}
