/* Mixed precision as a graph decision (DESIGN.md). While a graph autocasts (the precision policy
 * sets it while a model's layers are built):
 * - MatMul and Conv2D cast f32 operands to the compute dtype (bf16/f16): the weights once per
 *   step, inside the step graph.
 * - Without activation autocast (mixed_float16, and kiln_graph_set_autocast alone) they mark the
 *   op acc_f32: f32 accumulation and an f32 output; everything else stays f32.
 * - With it (mixed_bfloat16, Keras' policy) their output stays in the compute dtype and so do
 *   the ops that follow while they are on the list below (bias, relu, max pooling, adds,
 *   reshapes): activations between layers are half the bytes and need no cast in front of the
 *   next convolution. Any other op (softmax, losses, batch norm, dropout, ...) reads f32: its
 *   half inputs get a Cast, like torch.autocast's fp32 op list. Weight gradients come back f32
 *   (their products accumulate and end in f32: ops/conv.c, ops/matmul.c). */
#include "graph/graph_internal.h"
#include "ops/op.h"

kiln_status kiln_graph_set_autocast(kiln_graph *g, kiln_dtype compute) {
    if (!g) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_graph_set_autocast: NULL graph");
    if (compute != KILN_F32 && compute != KILN_BF16 && compute != KILN_F16)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_graph_set_autocast: compute dtype %s: use bf16, f16 or f32 (off)",
                              kiln_dtype_name(compute));
    g->autocast = compute;
    if (compute == KILN_F32) g->autocast_act = false;
    return KILN_OK;
}

kiln_status kiln_graph_set_autocast_activations(kiln_graph *g, bool on) {
    if (!g) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_graph_set_autocast_activations: NULL graph");
    if (on && g->autocast == KILN_F32)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_graph_set_autocast_activations: set a compute dtype first (kiln_graph_set_autocast)");
    g->autocast_act = on;
    return KILN_OK;
}

kiln_dtype kiln_graph_autocast(const kiln_graph *g) { return g ? g->autocast : KILN_F32; }

static kiln_node *cast_to(kiln_graph *g, kiln_node *x, kiln_dtype to) {
    g->in_autocast = true;
    kiln_node *c = kiln_cast(g, x, to);
    g->in_autocast = false;
    return c;
}

kiln_node *kiln_autocast_weight(kiln_graph *g, kiln_node *w) {
    if (!g || !w || !g->autocast_act || w->dtype != KILN_F32) return w;
    return cast_to(g, w, g->autocast);
}

bool kiln_autocast_operands(kiln_graph *g, kiln_node **a, kiln_node **b) {
    if (!g || g->autocast == KILN_F32 || !*a || !*b) return false;
    kiln_dtype ct = g->autocast;
    bool act = g->autocast_act;
    if ((*a)->dtype != KILN_F32 && (*a)->dtype != (act ? ct : KILN_F32)) return false;
    if ((*b)->dtype != KILN_F32 && (*b)->dtype != (act ? ct : KILN_F32)) return false;
    if ((*a)->dtype == KILN_F32) *a = cast_to(g, *a, ct);
    if ((*b)->dtype == KILN_F32) *b = cast_to(g, *b, ct);
    return *a && *b && !act;       /* acc_f32: an f32 output unless activations stay in ct */
}

/* Ops that keep activations in the compute dtype (each has ref kernels for every float dtype and
 * bf16 kernels on the cpu and cuda backends), and ops that only move or relabel bytes. */
static bool keeps_half(kiln_op op) {
    switch (op) {
    case KILN_OP_CONV2D: case KILN_OP_MATMUL: case KILN_OP_BIAS_ADD: case KILN_OP_RELU:
    case KILN_OP_MAX_POOL: case KILN_OP_ADD:
        return true;
    default: return false;
    }
}

static bool passes(kiln_op op) {
    if (op == KILN_OP_CAST || op == KILN_OP_RESHAPE || op == KILN_OP_IDENTITY) return true;
    return (kiln_op_get(op)->flags & (KILN_OPF_SOURCE | KILN_OPF_UPDATE)) != 0;   /* a batch norm (mutates its statistics) reads f32 like the rest */
}

kiln_node *const *kiln_autocast_inputs(kiln_graph *g, kiln_op op, kiln_node *const *in, int n_in, kiln_node **buf) {
    kiln_dtype ct = g->autocast;
    if (ct == KILN_F32 || passes(op)) return in;
    int half = 0, f32 = 0, f32_var = 0;
    for (int i = 0; i < n_in; i++) {
        half += in[i]->dtype == ct;
        f32 += in[i]->dtype == KILN_F32;
        f32_var += in[i]->dtype == KILN_F32 && in[i]->op == KILN_OP_VARIABLE;
    }
    if (!half) return in;
    /* on the list: half stays half, f32 weights (a bias) are cast to it; an f32 activation
     * (a batch norm's output, say) makes the op f32 instead */
    kiln_dtype to = keeps_half(op) && f32 == f32_var ? ct : KILN_F32;
    bool any = false;
    for (int i = 0; i < n_in; i++) {
        buf[i] = in[i];
        bool cast = to == ct ? in[i]->dtype == KILN_F32 : in[i]->dtype == ct;
        if (cast && !(buf[i] = cast_to(g, in[i], to))) return NULL;
        any |= cast;
    }
    return any ? buf : in;
}
