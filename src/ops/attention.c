/* Fused scaled dot-product attention. One output per node, so the forward op's output packs what
 * the backward pass needs beside O: [B, H, Tq, Dh + 1], each query row's O followed by the row's
 * log-sum-exp (natural log, of the scaled and masked scores). kiln_attention returns the O slice.
 * The gradient op recomputes the probabilities from q, k and the log-sum-exp tile by tile and
 * writes dq, dk and dv in one tensor [B, H, Tq + 2 Tk, Dh] that three slices split: no [Tq, Tk]
 * matrix exists anywhere (FlashAttention-2). attrs: alpha = the scale (> 0, resolved at build),
 * causal; rate > 0 (training): dropout on the probabilities, each P[b,h,i,j]'s keep decided by
 * kiln_dropout_keep(seed, step, ((b H + h) Tq + i) Tk + j) in the forward and again in the
 * backward (counter-based, as FlashAttention: no mask is stored). Semantics: src/ops/SEMANTICS.md. */
#include <math.h>
#include "ops/op.h"
#include "ops/ref_kernels.h"

static const char *shp(kiln_shape s, char *buf) { return kiln_shape_str(s, buf, 96); }

/* q [B, H, Tq, Dh], k and v [B, H, Tk, Dh], one float dtype; causal needs Tk >= Tq. */
static kiln_status check_qkv(kiln_node *n) {
    kiln_node *q = n->in[0], *k = n->in[1], *v = n->in[2];
    char b1[96], b2[96], b3[96];
    if (!kiln_dtype_is_float(q->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "q '%s' is %s; a float dtype is needed", q->name, kiln_dtype_name(q->dtype));
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "q, k, v are %s, %s, %s; they must share one float dtype",
                               kiln_dtype_name(q->dtype), kiln_dtype_name(k->dtype), kiln_dtype_name(v->dtype));
    bool ok = q->shape.rank == 4 && k->shape.rank == 4 && v->shape.rank == 4;
    for (int d = 0; ok && d < 2; d++) ok = k->shape.dim[d] == q->shape.dim[d] && v->shape.dim[d] == q->shape.dim[d];
    ok = ok && k->shape.dim[3] == q->shape.dim[3] && kiln_shape_equal(v->shape, k->shape) && q->shape.dim[3] >= 1 && k->shape.dim[2] >= 1;
    if (!ok)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "q '%s' %s, k '%s' %s, v '%s' %s; expected q [B, H, Tq, Dh] and k, v [B, H, Tk, Dh] "
                               "(Dh, Tk >= 1)", q->name, shp(q->shape, b1), k->name, shp(k->shape, b2), v->name, shp(v->shape, b3));
    if (n->attrs.causal && k->shape.dim[2] < q->shape.dim[2])
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "causal attention needs at least as many keys as queries: k '%s' %s, q '%s' %s",
                               k->name, shp(k->shape, b1), q->name, shp(q->shape, b2));
    if (!(n->attrs.alpha > 0.0) || !isfinite(n->attrs.alpha))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "scale must be a positive finite number, got %g", n->attrs.alpha);
    if (!(n->attrs.rate >= 0.0 && n->attrs.rate < 1.0))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "dropout rate must be in [0, 1), got %g", n->attrs.rate);
    return KILN_OK;
}

static kiln_shape packed_shape(const kiln_node *q) {
    kiln_shape s = q->shape;
    s.dim[3] += 1;
    return s;
}

static kiln_status attention_infer(kiln_node *n) {
    kiln_status s = check_qkv(n);
    if (s) return s;
    n->dtype = n->in[0]->dtype;
    n->shape = packed_shape(n->in[0]);
    return KILN_OK;
}

/* dq, dk, dv: rows [0, Tq), [Tq, Tq + Tk), [Tq + Tk, Tq + 2 Tk) of the gradient op's axis 2. */
static kiln_status attention_grad(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx) {
    kiln_node *q = n->in[0], *k = n->in[1];
    kiln_node *gr = kiln_node_new(g, KILN_OP_ATTENTION_GRAD, (kiln_node *[]){ n->in[0], n->in[1], n->in[2], n, dy }, 5, &n->attrs);
    if (!gr) return kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL;
    int64_t Tq = q->shape.dim[2], Tk = k->shape.dim[2];
    int64_t begin[4] = { 0, 0, 0, 0 };
    dx[0] = kiln_slice(g, gr, begin, q->shape.dim);
    begin[2] = Tq;
    dx[1] = kiln_slice(g, gr, begin, k->shape.dim);
    begin[2] = Tq + Tk;
    dx[2] = kiln_slice(g, gr, begin, k->shape.dim);
    for (int i = 0; i < 3; i++)
        if (!dx[i]) return kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL;
    return KILN_OK;
}

/* The oracle's scratch: one row of scores and an O accumulator (forward); dk, dv accumulators of
 * one (b, h) and one dq row (backward). Linear in T. */
static size_t attention_ws(const kiln_node *n) {
    int64_t Tk = n->in[1]->shape.dim[2], Dh = n->in[0]->shape.dim[3];
    return (size_t)(Tk + Dh) * sizeof(double);
}
static size_t attention_grad_ws(const kiln_node *n) {
    int64_t Tk = n->in[1]->shape.dim[2], Dh = n->in[0]->shape.dim[3];
    return (size_t)(2 * Tk * Dh + Dh + Tk) * sizeof(double);
}

const kiln_op_def kiln_opdef_attention = {
    "Attention", 3, 3, 0, attention_infer, attention_grad, kiln_ref_attention, attention_ws
};

/* ---- AttentionGrad: (q, k, v, out [B, H, Tq, Dh + 1], dout like out) -> [B, H, Tq + 2 Tk, Dh] ---- */
static kiln_status attention_grad_infer(kiln_node *n) {
    kiln_status s = check_qkv(n);
    if (s) return s;
    kiln_node *q = n->in[0], *k = n->in[1];
    kiln_shape ps = packed_shape(q);
    char b1[96], b2[96];
    for (int i = 3; i < 5; i++)
        if (!kiln_shape_equal(n->in[i]->shape, ps) || n->in[i]->dtype != q->dtype)
            return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s '%s' is %s %s; expected %s %s (the attention's packed output)",
                                   i == 3 ? "out" : "dout", n->in[i]->name, kiln_dtype_name(n->in[i]->dtype), shp(n->in[i]->shape, b1),
                                   kiln_dtype_name(q->dtype), shp(ps, b2));
    n->dtype = q->dtype;
    n->shape = q->shape;
    n->shape.dim[2] = q->shape.dim[2] + 2 * k->shape.dim[2];
    return KILN_OK;
}

const kiln_op_def kiln_opdef_attention_grad = {
    "AttentionGrad", 5, 5, KILN_OPF_NO_GRAD, attention_grad_infer, NULL, kiln_ref_attention_grad, attention_grad_ws
};

/* The op with its packed output (tests read the log-sum-exp through it). */
kiln_node *kiln_attention_packed(kiln_graph *g, kiln_node *q, kiln_node *k, kiln_node *v, bool causal, double scale) {
    kiln_attrs a = { 0 };
    a.causal = causal;
    a.alpha = scale;
    if (q && !(scale > 0.0) && q->shape.rank == 4) a.alpha = 1.0 / sqrt((double)q->shape.dim[3]);
    return kiln_node_new(g, KILN_OP_ATTENTION, (kiln_node *[]){ q, k, v }, 3, &a);
}

kiln_node *kiln_attention(kiln_graph *g, kiln_node *q, kiln_node *k, kiln_node *v, bool causal, double scale) {
    return kiln_attention_dropout(g, q, k, v, causal, scale, 0.0, 0);
}

kiln_node *kiln_attention_dropout(kiln_graph *g, kiln_node *q, kiln_node *k, kiln_node *v, bool causal, double scale,
                                  double rate, uint64_t seed) {
    if (g && !(rate >= 0.0 && rate < 1.0)) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_attention_dropout: rate must be in [0, 1), got %g", rate);
        return NULL;
    }
    kiln_node *p = kiln_attention_packed(g, q, k, v, causal, scale);
    if (p && rate > 0.0) {   /* set before anything reads p (its gradient copies these attrs) */
        p->attrs.rate = rate;
        p->attrs.training = true;
        /* as Dropout: two attention nodes built with one seed draw different masks */
        p->attrs.seed = kiln_mix64(kiln_mix64(seed) ^ ((uint64_t)p->id * 0x9E3779B97F4A7C15ull));
    }
    if (!p) return NULL;
    int64_t begin[4] = { 0, 0, 0, 0 };
    return kiln_slice(g, p, begin, q->shape.dim);
}
