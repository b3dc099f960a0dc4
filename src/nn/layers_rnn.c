/* Recurrent layer types over (None, T, features): SimpleRNN, LSTM, GRU and Bidirectional (one of
 * them run both ways), with Keras's names, defaults, gate order (LSTM i, f, c, o; GRU z, r, h) and
 * weight layout (kernel [in, k*units], recurrent_kernel [units, k*units], bias [k*units], or
 * [2, 3*units] for GRU's reset_after: input bias, then recurrent bias).
 *
 * The input projection of all time steps is one MatMul; the recurrence is one fused RNN node
 * (src/ops/rnn.c: its kernels run the steps, one product per step, and its gradient goes back
 * through time in one op) when the activations are ones the op takes (linear, relu, sigmoid,
 * tanh, hard_sigmoid). Other activations are unrolled into T steps of existing ops (MatMul,
 * Slice, activations, Mul, Add), whose autodiff carries them (each step's Slice gradient is a
 * full-size Pad: O(T^2) memory traffic backward, fine for short sequences). The layer computes in f32 under every precision policy (autocast is
 * switched off while its ops are built), as Keras keeps recurrent state in float32 and the
 * repeated products would compound half-precision rounding. Typed builders: layers_api.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"
#include "nn/nn_model.h"      /* nn_carry_add: LSTM's unit_forget_bias start value */

const char *const nn_rnn_cells[] = { "SimpleRNN", "LSTM", "GRU", NULL };
static const char *const merge_modes[] = { "concat", "sum", "mul", "ave", NULL };
enum { CELL_SIMPLE, CELL_LSTM, CELL_GRU };
/* model_config.c finds the wrapped layer's type as NN_SIMPLE_RNN + cell */
_Static_assert(NN_LSTM == NN_SIMPLE_RNN + CELL_LSTM && NN_GRU == NN_SIMPLE_RNN + CELL_GRU, "layers.def: SimpleRNN, LSTM, GRU in a row");
enum { MERGE_CONCAT, MERGE_SUM, MERGE_MUL, MERGE_AVE };

static int gates(int cell) { return cell == CELL_LSTM ? 4 : cell == CELL_GRU ? 3 : 1; }

#define NN_DINIT_ORTHOGONAL { .kind = NN_V_INIT, .init = { .kind = KILN_INIT_ORTHOGONAL, .a = 1 } }
/* The options every recurrent layer takes, as Keras names them */
#define RNN_COMMON_OPTS \
    { "units", NN_T_INT, NN_CFG(units), 1, { 0 } }, \
    { "activation", NN_T_ACTIVATION, NN_CFG(activation), 0, NN_DSTR("tanh") }, \
    { "use_bias", NN_T_BOOL, NN_CFG(use_bias), 0, NN_DBOOL(true) }, \
    { "kernel_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) }, \
    { "recurrent_initializer", NN_T_INIT, NN_CFG(recurrent_init), 0, NN_DINIT_ORTHOGONAL }, \
    { "bias_initializer", NN_T_INIT, NN_CFG(bias_init), 0, NN_DINIT(KILN_INIT_ZEROS) }, \
    { "kernel_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) }, \
    { "recurrent_regularizer", NN_T_FLOAT, NN_CFG(recurrent_l2), 0, NN_DFLOAT(0) }, \
    { "dropout", NN_T_FLOAT, NN_CFG(rate), 0, NN_DFLOAT(0) }, \
    { "recurrent_dropout", NN_T_FLOAT, NN_CFG(recurrent_rate), 0, NN_DFLOAT(0) }, \
    { "return_sequences", NN_T_BOOL, NN_CFG(return_sequences), 0, NN_DBOOL(false) }, \
    { "return_state", NN_T_BOOL, NN_CFG(return_state), 0, NN_DBOOL(false) }, \
    { "go_backwards", NN_T_BOOL, NN_CFG(go_backwards), 0, NN_DBOOL(false) }, \
    { "stateful", NN_T_BOOL, NN_CFG(stateful), 0, NN_DBOOL(false) }, \
    { "seed", NN_T_SEED, NN_CFG(seed), 0, NN_DNULL }
#define RNN_GATED_OPTS \
    { "recurrent_activation", NN_T_ACTIVATION, NN_CFG(recurrent_activation), 0, NN_DSTR("sigmoid") }
#define RNN_LSTM_OPTS { "unit_forget_bias", NN_T_BOOL, NN_CFG(unit_forget_bias), 0, NN_DBOOL(true) }
#define RNN_GRU_OPTS { "reset_after", NN_T_BOOL, NN_CFG(reset_after), 0, NN_DBOOL(true) }

static const nn_opt_spec simple_rnn_opts[] = { RNN_COMMON_OPTS, { NULL } };
static const nn_opt_spec lstm_opts[] = { RNN_COMMON_OPTS, RNN_GATED_OPTS, RNN_LSTM_OPTS, { NULL } };
static const nn_opt_spec gru_opts[] = { RNN_COMMON_OPTS, RNN_GATED_OPTS, RNN_GRU_OPTS, { NULL } };
static const nn_opt_spec bidirectional_opts[] = {
    { "layer", NN_T_ENUM, NN_CFG(cell), 0, { 0 }, nn_rnn_cells },
    { "merge_mode", NN_T_ENUM, NN_CFG(merge_mode), 0, NN_DSTR("concat"), merge_modes },
    RNN_COMMON_OPTS, RNN_GATED_OPTS, RNN_LSTM_OPTS, RNN_GRU_OPTS, { NULL },
};

/* Shared by the four types: the options Kiln refuses, the resolved ones, the output shape. */
static kiln_status rnn_check(kiln_layer *l, const nn_layer_cfg *c, int cell) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (s.rank != 2)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s must be a sequence (None, timesteps, features)", nn_batched_str(s, b, sizeof b));
    if (c->return_state)
        return nn_layer_fail(l, KILN_UNSUPPORTED, "return_state=True is not supported: Kiln's layers have one output (use return_sequences, or the output itself, which is the last state h)");
    if (c->stateful)
        return nn_layer_fail(l, KILN_UNSUPPORTED, "stateful=True is not supported: Kiln starts every batch from zero states");
    if (!(c->rate >= 0 && c->rate < 1)) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "dropout %g must be in [0, 1)", c->rate);
    if (!(c->recurrent_rate >= 0 && c->recurrent_rate < 1))
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "recurrent_dropout %g must be in [0, 1)", c->recurrent_rate);
    l->rate = c->rate;              /* recurrent_dropout: read from l->cfg in run() */
    l->seed = c->seed;
    l->cell = cell;
    l->units = c->units;
    l->act = c->activation;
    l->rec_act = cell == CELL_SIMPLE ? KILN_SIGMOID : c->recurrent_activation;
    l->use_bias = c->use_bias;
    l->return_sequences = c->return_sequences;
    l->go_backwards = c->go_backwards;
    l->reset_after = cell == CELL_GRU && c->reset_after;
    l->out = c->return_sequences ? KILN_SHAPE(s.dim[0], c->units) : KILN_SHAPE(c->units);
    return KILN_OK;
}
static kiln_status simple_rnn_shape(kiln_layer *l, const nn_layer_cfg *c) { return rnn_check(l, c, CELL_SIMPLE); }
static kiln_status lstm_shape(kiln_layer *l, const nn_layer_cfg *c) { return rnn_check(l, c, CELL_LSTM); }
static kiln_status gru_shape(kiln_layer *l, const nn_layer_cfg *c) { return rnn_check(l, c, CELL_GRU); }
static kiln_status bidirectional_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_status st = rnn_check(l, c, c->cell);
    if (st) return st;
    l->merge_mode = c->merge_mode;
    if (c->merge_mode == MERGE_CONCAT) l->out.dim[l->out.rank - 1] *= 2;
    return KILN_OK;
}

/* LSTM's unit_forget_bias: the bias starts as bias_initializer with the forget gate's quarter 1,
 * as Keras builds it; handed to the model as a value assigned when its graph is built. */
static void forget_bias(kiln_layer *l, const char *name, const nn_layer_cfg *c) {
    int64_t U = l->units;
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(4 * U));
    if (!t || kiln_init_fill(c->bias_init, t)) { kiln_tensor_free(t); nn_layer_fail(l, KILN_OUT_OF_MEMORY, "out of host memory for its bias"); return; }
    for (int64_t i = U; i < 2 * U; i++) ((float *)t->data)[i] = 1;
    if (nn_carry_add(l->model, name, t)) nn_layer_fail(l, KILN_OUT_OF_MEMORY, "out of host memory for its bias");
    kiln_tensor_free(t);
}
static void cell_vars(kiln_layer *l, const nn_layer_cfg *c, const char *prefix) {
    int64_t F = l->in[0]->out.dim[1], U = l->units, k = gates(l->cell);
    char nm[48];
    snprintf(nm, sizeof nm, "%skernel", prefix);
    nn_layer_add_var(l, nm, KILN_SHAPE(F, k * U), c->kernel_init, true, c->l2);
    snprintf(nm, sizeof nm, "%srecurrent_kernel", prefix);
    nn_layer_add_var(l, nm, KILN_SHAPE(U, k * U), c->recurrent_init, true, c->recurrent_l2);
    if (!l->use_bias) return;
    snprintf(nm, sizeof nm, "%sbias", prefix);
    nn_layer_add_var(l, nm, l->reset_after ? KILN_SHAPE(2, k * U) : KILN_SHAPE(k * U), c->bias_init, true, 0);
    if (l->cell == CELL_LSTM && c->unit_forget_bias && l->n_vars) forget_bias(l, l->vars[l->n_vars - 1].name, c);
}
static void rnn_vars(kiln_layer *l, const nn_layer_cfg *c) { cell_vars(l, c, ""); }
static void bidirectional_vars(kiln_layer *l, const nn_layer_cfg *c) {
    cell_vars(l, c, "forward/");
    cell_vars(l, c, "backward/");
}

/* ---- the recurrence, unrolled ---- */
typedef struct rnn_w { kiln_node *kernel, *rec, *bias_in, *bias_rec; } rnn_w;

static kiln_node *cols(kiln_graph *g, kiln_node *x, int64_t from, int64_t n) {
    kiln_shape s = kiln_node_shape(x);
    int64_t begin[2] = { 0, from }, size[2] = { s.dim[0], n };
    return kiln_slice(g, x, begin, size);
}
static kiln_node *zeros(kiln_graph *g, int64_t b, int64_t u) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(b, u));
    if (!t) { kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "out of host memory for a recurrent layer's initial state"); return NULL; }
    memset(t->data, 0, kiln_tensor_nbytes(t));
    kiln_node *n = kiln_constant(g, t);
    kiln_tensor_free(t);
    return n;
}

/* ---- dropout (Keras 3's DropoutRNNCell): masks drawn once per sequence, the same at every step,
 * training only. Shared by the gates, except when recurrent_dropout is set: Keras then switches
 * LSTM/GRU to implementation 1, one input and one recurrent mask per gate. ---- */
#define RNN_MAX_GATES 4
typedef struct rnn_masks { int n; kiln_node *m[RNN_MAX_GATES]; } rnn_masks;   /* n 0: none */

static rnn_masks drop_masks(const nn_fwd *f, const kiln_layer *l, double rate, int n, int64_t width, uint64_t salt) {
    rnn_masks r = { 0 };
    if (!f->training || rate == 0) return r;
    uint64_t seed = l->seed ? l->seed ^ salt : kiln_mix64(f->m->seed ^ (0xD0D0ull + (uint64_t)l->index) ^ salt);
    kiln_node *ones = kiln_broadcast_to(f->g, kiln_scalar(f->g, KILN_F32, 1.0), KILN_SHAPE(f->batch, width));
    r.n = n;
    for (int i = 0; i < n; i++) r.m[i] = kiln_dropout(f->g, ones, rate, seed, true);   /* each node mixes its id in */
    return r;
}
/* x [B, .., W] times the gate's mask [B, W] (or x itself). */
static kiln_node *masked(kiln_graph *g, kiln_node *x, const rnn_masks *mk, int gate) {
    if (!mk || !mk->n) return x;
    kiln_node *m = mk->m[mk->n == 1 ? 0 : gate];
    kiln_shape s = kiln_node_shape(x);
    if (s.rank == 3) m = kiln_reshape(g, m, KILN_SHAPE(s.dim[0], 1, s.dim[2]));
    return kiln_mul(g, x, m);
}
/* The gate's masked copy of a ([B, W], or [B, T, W] flattened to [B T, W]). */
static kiln_node *masked2(kiln_graph *g, kiln_node *a, const rnn_masks *mk, int gate) {
    kiln_node *x = masked(g, a, mk, gate);
    kiln_shape s = kiln_node_shape(a);
    return s.rank == 3 ? kiln_reshape(g, x, KILN_SHAPE(s.dim[0] * s.dim[1], s.dim[2])) : x;
}
/* a times w [W, k U], gate gt's columns taking its own masked copy of a. */
static kiln_node *gate_products(kiln_graph *g, kiln_node *a, kiln_node *w, const rnn_masks *mk, int k, int64_t U) {
    if (!mk || mk->n <= 1) return kiln_matmul(g, masked2(g, a, mk, 0), w, false, false);
    kiln_node *p[RNN_MAX_GATES];
    for (int gt = 0; gt < k; gt++) p[gt] = kiln_matmul(g, masked2(g, a, mk, gt), cols(g, w, gt * U, U), false, false);
    return kiln_concat(g, p, k, 1);
}

/* One step: xt [B, k*U] (input projection with its bias), state h (and c for LSTM); rm: the
 * recurrent dropout masks (NULL or n 0: none). */
static kiln_node *step(kiln_graph *g, const kiln_layer *l, const rnn_w *w, kiln_node *xt, kiln_node *h, kiln_node **c,
                       const rnn_masks *rm) {
    int64_t U = l->units;
    kiln_node *hr = gate_products(g, h, w->rec, rm, gates(l->cell), U);
    if (l->cell == CELL_SIMPLE) return nn_activate(g, kiln_add(g, xt, hr), l->act);
    if (l->cell == CELL_LSTM) {
        kiln_node *z = kiln_add(g, xt, hr);
        kiln_node *i = nn_activate(g, cols(g, z, 0, U), l->rec_act), *f = nn_activate(g, cols(g, z, U, U), l->rec_act);
        kiln_node *cc = nn_activate(g, cols(g, z, 2 * U, U), l->act), *o = nn_activate(g, cols(g, z, 3 * U, U), l->rec_act);
        *c = kiln_add(g, kiln_mul(g, f, *c), kiln_mul(g, i, cc));
        return kiln_mul(g, o, nn_activate(g, *c, l->act));
    }
    /* GRU: z, r from the first 2U columns; the candidate from the last U */
    kiln_node *hz = cols(g, hr, 0, 2 * U), *hh;
    if (w->bias_rec) hz = kiln_bias_add(g, hz, kiln_reshape(g, cols(g, w->bias_rec, 0, 2 * U), KILN_SHAPE(2 * U)));
    kiln_node *zr = kiln_add(g, cols(g, xt, 0, 2 * U), hz);
    kiln_node *z = nn_activate(g, cols(g, zr, 0, U), l->rec_act), *r = nn_activate(g, cols(g, zr, U, U), l->rec_act);
    if (l->reset_after) {
        hh = cols(g, hr, 2 * U, U);
        if (w->bias_rec) hh = kiln_bias_add(g, hh, kiln_reshape(g, cols(g, w->bias_rec, 2 * U, U), KILN_SHAPE(U)));
        hh = kiln_mul(g, r, hh);
    } else {
        hh = kiln_matmul(g, kiln_mul(g, r, masked(g, h, rm, 2)), cols(g, w->rec, 2 * U, U), false, false);
    }
    hh = nn_activate(g, kiln_add(g, cols(g, xt, 2 * U, U), hh), l->act);
    return kiln_add(g, hh, kiln_mul(g, z, kiln_sub(g, h, hh)));     /* z h + (1 - z) hh */
}

/* The fused recurrence (kiln_rnn_sequence: one node, its kernels run the steps), for the cells
 * and activations it takes; the rest are unrolled below. Dropout: the input masks go on x
 * before the projection, so they fuse as they are; the recurrent masks (recurrent_dropout, on
 * h_prev at each step, per gate) are not inputs of the op yet, so a training graph that draws
 * them takes the unrolled path (run()); inference, with no masks, fuses. */
static bool fusable(const kiln_layer *l) {
    const char *u = getenv("KILN_RNN_UNROLLED");            /* "1": the unrolled graph (bench/rnn_bench.c compares the two) */
    return !(u && *u == '1') && kiln_rnn_activation_ok(l->act) && kiln_rnn_activation_ok(l->rec_act);
}
static kiln_node *run_fused(kiln_graph *g, const kiln_layer *l, const rnn_w *w, kiln_node *xp, int64_t B, int64_t T, bool backwards) {
    int64_t U = l->units, k = gates(l->cell);
    kiln_rnn_params p = { l->cell, l->act, l->rec_act, l->reset_after, backwards };
    kiln_node *br = w->bias_rec ? kiln_reshape(g, w->bias_rec, KILN_SHAPE(k * U)) : NULL;
    if (w->bias_rec && !br) return NULL;
    kiln_node *y = kiln_rnn_sequence(g, xp, w->rec, br, &p);
    if (!y || l->return_sequences) return y;
    int64_t begin[3] = { 0, T - 1, 0 }, size[3] = { B, 1, U };
    return kiln_reshape(g, kiln_slice(g, y, begin, size), KILN_SHAPE(B, U));
}

/* The whole sequence x [B, T, F] -> [B, T, U] (steps in processing order) or the last h [B, U]. */
static kiln_node *run(const nn_fwd *f, const kiln_layer *l, const rnn_w *w, kiln_node *x, bool backwards) {
    kiln_graph *g = f->g;
    int64_t B = f->batch, T = l->in[0]->out.dim[0], F = l->in[0]->out.dim[1], U = l->units, k = gates(l->cell);
    int per_gate = l->cfg->recurrent_rate > 0 ? (int)k : 1;
    rnn_masks im = drop_masks(f, l, l->rate, per_gate, F, 0), rm = drop_masks(f, l, l->cfg->recurrent_rate, per_gate, U, 0x5EC0ull);
    kiln_node *xp = im.n ? gate_products(g, x, w->kernel, &im, (int)k, U)
                         : kiln_matmul(g, kiln_reshape(g, x, KILN_SHAPE(B * T, F)), w->kernel, false, false);
    if (w->bias_in) xp = kiln_bias_add(g, xp, w->bias_in);
    xp = kiln_reshape(g, xp, KILN_SHAPE(B, T, k * U));
    if (!rm.n && fusable(l)) return run_fused(g, l, w, xp, B, T, backwards);     /* input masks are in xp already */
    kiln_node *h = zeros(g, B, U), *c = l->cell == CELL_LSTM ? zeros(g, B, U) : NULL;
    kiln_node **seq = l->return_sequences ? kiln_calloc((size_t)T, sizeof *seq) : NULL;
    if (l->return_sequences && !seq) { kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "out of host memory for %lld steps", (long long)T); return NULL; }
    for (int64_t i = 0; i < T && h; i++) {
        int64_t t = backwards ? T - 1 - i : i;
        int64_t begin[3] = { 0, t, 0 }, size[3] = { B, 1, k * U };
        kiln_node *xt = kiln_reshape(g, kiln_slice(g, xp, begin, size), KILN_SHAPE(B, k * U));
        h = step(g, l, w, xt, h, &c, &rm);
        if (seq) seq[i] = kiln_reshape(g, h, KILN_SHAPE(B, 1, U));
    }
    kiln_node *out = h;
    if (seq && h) out = kiln_concat(g, seq, (int)T, 1);
    kiln_free(seq);
    return out;
}

static rnn_w weights(const nn_fwd *f, const kiln_layer *l, const char *prefix) {
    char nm[48];
    rnn_w w = { 0 };
    snprintf(nm, sizeof nm, "%skernel", prefix);
    w.kernel = nn_layer_var(f, l, nm);
    snprintf(nm, sizeof nm, "%srecurrent_kernel", prefix);
    w.rec = nn_layer_var(f, l, nm);
    snprintf(nm, sizeof nm, "%sbias", prefix);
    kiln_node *b = l->use_bias ? nn_layer_var(f, l, nm) : NULL;
    int64_t kU = gates(l->cell) * (int64_t)l->units;
    if (b && l->reset_after) {
        int64_t b0[2] = { 0, 0 }, b1[2] = { 1, 0 }, sz[2] = { 1, kU };
        w.bias_in = kiln_reshape(f->g, kiln_slice(f->g, b, b0, sz), KILN_SHAPE(kU));
        w.bias_rec = kiln_slice(f->g, b, b1, sz);                 /* [1, 3U]: cols() slices it */
    } else w.bias_in = b;
    return w;
}

/* Reverses the time axis of [B, T, U] (Bidirectional's backward sequence back to input order). */
static kiln_node *reverse_time(kiln_graph *g, kiln_node *y, int64_t B, int64_t T, int64_t U) {
    kiln_node **p = kiln_calloc((size_t)T, sizeof *p);
    if (!p) { kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "out of host memory for %lld steps", (long long)T); return NULL; }
    for (int64_t t = 0; t < T; t++) {
        int64_t begin[3] = { 0, T - 1 - t, 0 }, size[3] = { B, 1, U };
        p[t] = kiln_slice(g, y, begin, size);
    }
    kiln_node *r = kiln_concat(g, p, (int)T, 1);
    kiln_free(p);
    return r;
}

/* Builds with autocast off (f32: see the top), restoring the graph's setting after. */
static kiln_node *f32_input(kiln_graph *g, kiln_node *x, kiln_dtype *ac, bool *act) {
    *ac = kiln_graph_autocast(g);
    *act = g->autocast_act;
    if (*ac != KILN_F32) kiln_graph_set_autocast(g, KILN_F32);
    return x && kiln_node_dtype(x) != KILN_F32 ? kiln_cast(g, x, KILN_F32) : x;
}
static kiln_node *restore(kiln_graph *g, kiln_node *y, kiln_dtype ac, bool act) {
    if (ac != KILN_F32) { kiln_graph_set_autocast(g, ac); if (act) kiln_graph_set_autocast_activations(g, true); }
    return y;
}

static kiln_node *rnn_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_dtype ac;
    bool act;
    x = f32_input(f->g, x, &ac, &act);
    rnn_w w = weights(f, l, "");
    return restore(f->g, x ? run(f, l, &w, x, l->go_backwards) : NULL, ac, act);
}

static kiln_node *bidirectional_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_graph *g = f->g;
    kiln_dtype ac;
    bool act;
    x = f32_input(g, x, &ac, &act);
    rnn_w wf = weights(f, l, "forward/"), wb = weights(f, l, "backward/");
    kiln_node *y = x ? run(f, l, &wf, x, l->go_backwards) : NULL, *yb = y ? run(f, l, &wb, x, !l->go_backwards) : NULL;
    if (yb && l->return_sequences) yb = reverse_time(g, yb, f->batch, l->in[0]->out.dim[0], l->units);
    if (!yb) return restore(g, NULL, ac, act);
    kiln_node *both[2] = { y, yb };
    switch (l->merge_mode) {
    case MERGE_SUM: y = kiln_add(g, y, yb); break;
    case MERGE_MUL: y = kiln_mul(g, y, yb); break;
    case MERGE_AVE: y = kiln_mul(g, kiln_add(g, y, yb), kiln_scalar(g, KILN_F32, 0.5)); break;
    default: y = kiln_concat(g, both, 2, l->return_sequences ? 2 : 1); break;
    }
    return restore(g, y, ac, act);
}

const nn_layer_def nn_def_simple_rnn = { "SimpleRNN", "simple_rnn", simple_rnn_opts, 1, 1, simple_rnn_shape, rnn_vars, rnn_forward };
const nn_layer_def nn_def_lstm = { "LSTM", "lstm", lstm_opts, 1, 1, lstm_shape, rnn_vars, rnn_forward };
const nn_layer_def nn_def_gru = { "GRU", "gru", gru_opts, 1, 1, gru_shape, rnn_vars, rnn_forward };
const nn_layer_def nn_def_bidirectional = { "Bidirectional", "bidirectional", bidirectional_opts, 1, 1, bidirectional_shape, bidirectional_vars,
                                            bidirectional_forward };
