/* The fused recurrent op: RNN runs a SimpleRNN / LSTM / GRU cell over a whole sequence from the
 * input projection of every step (one MatMul the layer builds), so the graph holds one node per
 * layer instead of T steps of small ops. RNNGrad runs back through time in one op: it recomputes
 * the forward pass keeping each step's gates (linear in T), then writes dxp, drec and drec_bias
 * in one flat tensor that slices split (one output per node, as AttentionGrad). attrs: groups =
 * the cell, kh / kw = the activation / recurrent activation, keepdims = reset_after, trans_a =
 * go_backwards (src/backend/rnn_attrs.h). Semantics: src/ops/SEMANTICS.md. */
#include "ops/op.h"
#include "ops/ref_kernels.h"
#include "kiln/nn.h"

static int gates_of(int cell) { return cell == KILN_RNN_LSTM ? 4 : cell == KILN_RNN_GRU ? 3 : 1; }

bool kiln_rnn_activation_ok(int a) {
    return a == KILN_LINEAR || a == KILN_RELU || a == KILN_SIGMOID || a == KILN_TANH || a == KILN_HARD_SIGMOID;
}

/* xp [B, T, kU], rec [U, kU], rec_bias [kU] (GRU reset_after only), one float dtype. */
static kiln_status check(kiln_node *n, int n_seq) {
    const kiln_attrs *a = &n->attrs;
    if ((unsigned)a->groups > KILN_RNN_GRU || (a->keepdims && a->groups != KILN_RNN_GRU))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "cell %d (reset_after %d): expected SimpleRNN 0, LSTM 1 or GRU 2 (reset_after: GRU only)", a->groups, a->keepdims);
    if (!kiln_rnn_activation_ok(a->kh) || !kiln_rnn_activation_ok(a->kw))
        return kiln_node_error(n, KILN_UNSUPPORTED, "activation %d / recurrent activation %d: the fused op takes linear, relu, sigmoid, tanh and hard_sigmoid", a->kh, a->kw);
    kiln_node *xp = n->in[0], *r = n->in[1];
    int64_t k = gates_of(a->groups);
    char b1[96], b2[96];
    bool ok = xp->shape.rank == 3 && r->shape.rank == 2 && r->shape.dim[1] == k * r->shape.dim[0] && xp->shape.dim[2] == r->shape.dim[1] &&
              r->shape.dim[0] >= 1 && xp->shape.dim[1] >= 1;
    if (!ok)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "xp %s and rec %s: expected xp [B, T, %lld*U] and rec [U, %lld*U]",
                               kiln_shape_str(xp->shape, b1, 96), kiln_shape_str(r->shape, b2, 96), (long long)k, (long long)k);
    bool want_b = a->keepdims, has_b = n->n_in - n_seq > 2;
    if (want_b != has_b) return kiln_node_error(n, KILN_INVALID_ARGUMENT, "a recurrent bias goes with GRU reset_after, and only there");
    if (has_b && (n->in[2]->shape.rank != 1 || n->in[2]->shape.dim[0] != r->shape.dim[1]))
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "rec_bias %s: expected [%lld]", kiln_shape_str(n->in[2]->shape, b1, 96), (long long)r->shape.dim[1]);
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]->dtype != xp->dtype || !kiln_dtype_is_float(xp->dtype))
            return kiln_node_error(n, KILN_DTYPE_MISMATCH, "inputs must share one float dtype (input %d is %s, xp %s)", i,
                                   kiln_dtype_name(n->in[i]->dtype), kiln_dtype_name(xp->dtype));
    return KILN_OK;
}

static kiln_status rnn_infer(kiln_node *n) {
    kiln_status s = check(n, 0);
    if (s) return s;
    n->dtype = n->in[0]->dtype;
    n->shape = KILN_SHAPE(n->in[0]->shape.dim[0], n->in[0]->shape.dim[1], n->in[1]->shape.dim[0]);
    return KILN_OK;
}

static kiln_status rnn_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *in[4] = { n->in[0], n->in[1], n->n_in > 2 ? n->in[2] : dy, dy };
    kiln_node *gr = kiln_node_new(g, KILN_OP_RNN_GRAD, in, n->n_in + 1, &n->attrs);
    if (!gr) return kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL;
    int64_t off = 0;
    for (int i = 0; i < n->n_in; i++) {
        kiln_shape s = n->in[i]->shape;
        int64_t cnt = kiln_shape_numel(s), b[1] = { off }, sz[1] = { cnt };
        dx[i] = kiln_reshape(g, kiln_slice(g, gr, b, sz), s);
        if (!dx[i]) return kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL;
        off += cnt;
    }
    return KILN_OK;
}

const kiln_op_def kiln_opdef_rnn = { "RNN", 2, 3, 0, rnn_infer, rnn_grad, kiln_ref_rnn, kiln_rnn_ref_workspace };

/* ---- RNNGrad: (xp, rec[, rec_bias], dy [B, T, U]) -> [numel(xp) + numel(rec) (+ numel(rec_bias))] ---- */
static kiln_status rnn_grad_infer(kiln_node *n) {
    kiln_status s = check(n, 1);
    if (s) return s;
    kiln_node *dy = n->in[n->n_in - 1];
    kiln_shape want = KILN_SHAPE(n->in[0]->shape.dim[0], n->in[0]->shape.dim[1], n->in[1]->shape.dim[0]);
    char b1[96], b2[96];
    if (!kiln_shape_equal(dy->shape, want))
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "dy %s: expected %s (the RNN's output)", kiln_shape_str(dy->shape, b1, 96), kiln_shape_str(want, b2, 96));
    int64_t total = 0;
    for (int i = 0; i < n->n_in - 1; i++) total += kiln_shape_numel(n->in[i]->shape);
    n->dtype = n->in[0]->dtype;
    n->shape = KILN_SHAPE(total);
    return KILN_OK;
}

const kiln_op_def kiln_opdef_rnn_grad = { "RNNGrad", 3, 4, KILN_OPF_NO_GRAD, rnn_grad_infer, NULL, kiln_ref_rnn_grad, kiln_rnn_ref_workspace };

kiln_node *kiln_rnn_sequence(kiln_graph *g, kiln_node *xp, kiln_node *rec, kiln_node *rec_bias, const kiln_rnn_params *p) {
    if (!g || !xp || !rec) return NULL;
    if (!p) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_rnn_sequence: NULL params"); return NULL; }
    kiln_attrs a = { 0 };
    a.groups = p->cell;
    a.kh = p->activation;
    a.kw = p->cell == KILN_RNN_SIMPLE ? KILN_SIGMOID : p->recurrent_activation;
    a.keepdims = p->reset_after;
    a.trans_a = p->go_backwards;
    kiln_node *in[3] = { xp, rec, rec_bias };
    return kiln_node_new(g, KILN_OP_RNN, in, rec_bias ? 3 : 2, &a);
}
