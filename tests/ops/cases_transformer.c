/* Conformance cases for the transformer ops (src/ops/transformer.c, attention.c): Embedding and
 * its scatter-add gradient, LayerNorm and its gradient ops, fused Attention (packed output: O and
 * each row's log-sum-exp) and AttentionGrad. Shapes cross the cpu and cuda kernels' tile sizes
 * (query and key tiles of 32 / 64 rows) with and without the causal mask. */
#include "op_case.h"
#include "kiln/nn.h"

#define F CASE_FLOAT
#define S(...) { (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), { __VA_ARGS__ } }
#define UNUSED (void)e; (void)ne
#define BUILDER(nm, expr) \
    static kiln_node *b_##nm(kiln_graph *g, kiln_node **x, kiln_node **e, int *ne) { UNUSED; return expr; }

/* ---- Embedding ---- */
BUILDER(embed, kiln_embedding_lookup(g, x[0], x[1]))
static const kiln_attrs table_6x5 = { .shape = { 2, { 6, 5 } } };
BUILDER(embed_grad, kiln_node_new(g, KILN_OP_EMBEDDING_GRAD, x, 2, &table_6x5))

/* ---- LayerNorm ---- */
BUILDER(ln, kiln_layer_norm(g, x[0], x[1], x[2], 1e-3))
BUILDER(ln_eps5, kiln_layer_norm(g, x[0], x[1], x[2], 1e-5))
static const kiln_attrs eps_attrs = { .epsilon = 1e-3 };
BUILDER(ln_grad, kiln_node_new(g, KILN_OP_LAYER_NORM_GRAD, x, 3, &eps_attrs))
BUILDER(ln_gamma_grad, kiln_node_new(g, KILN_OP_LAYER_NORM_GAMMA_GRAD, x, 2, &eps_attrs))

/* ---- Attention ---- */
BUILDER(att, kiln_attention_packed(g, x[0], x[1], x[2], false, 0))
BUILDER(att_causal, kiln_attention_packed(g, x[0], x[1], x[2], true, 0))
BUILDER(att_scaled, kiln_attention_packed(g, x[0], x[1], x[2], true, 0.7))
BUILDER(att_o, kiln_attention(g, x[0], x[1], x[2], true, 0))
static const kiln_attrs att_grad_attrs = { .alpha = 0.5, .causal = true };
static const kiln_attrs att_grad_attrs_full = { .alpha = 0.5 };
BUILDER(att_grad, kiln_node_new(g, KILN_OP_ATTENTION_GRAD, x, 5, &att_grad_attrs))
BUILDER(att_grad_full, kiln_node_new(g, KILN_OP_ATTENTION_GRAD, x, 5, &att_grad_attrs_full))
/* attention dropout: the same keep of each P[b,h,i,j] in every backend, forward and backward */
BUILDER(att_drop, kiln_attention_dropout(g, x[0], x[1], x[2], true, 0, 0.3, 9))
BUILDER(att_drop_full, kiln_attention_dropout(g, x[0], x[1], x[2], false, 0, 0.5, 4))
static const kiln_attrs att_grad_attrs_drop = { .alpha = 0.5, .causal = true, .rate = 0.4, .seed = 77, .training = true };
BUILDER(att_grad_drop, kiln_node_new(g, KILN_OP_ATTENTION_GRAD, x, 5, &att_grad_attrs_drop))

/* ---- RNN (fused recurrence): xp [B, T, kU], rec [U, kU][, rec_bias [kU]] ---- */
#define RNNP(cell, act, ract, ra, back) (&(kiln_rnn_params){ cell, act, ract, ra, back })
BUILDER(rnn_simple, kiln_rnn_sequence(g, x[0], x[1], NULL, RNNP(KILN_RNN_SIMPLE, KILN_TANH, 0, false, false)))
BUILDER(rnn_simple_relu_back, kiln_rnn_sequence(g, x[0], x[1], NULL, RNNP(KILN_RNN_SIMPLE, KILN_RELU, 0, false, true)))
BUILDER(rnn_lstm_back, kiln_rnn_sequence(g, x[0], x[1], NULL, RNNP(KILN_RNN_LSTM, KILN_TANH, KILN_SIGMOID, false, true)))
BUILDER(rnn_lstm_hard, kiln_rnn_sequence(g, x[0], x[1], NULL, RNNP(KILN_RNN_LSTM, KILN_TANH, KILN_HARD_SIGMOID, false, false)))
BUILDER(rnn_gru_after, kiln_rnn_sequence(g, x[0], x[1], x[2], RNNP(KILN_RNN_GRU, KILN_TANH, KILN_SIGMOID, true, false)))
BUILDER(rnn_gru_before_back, kiln_rnn_sequence(g, x[0], x[1], NULL, RNNP(KILN_RNN_GRU, KILN_TANH, KILN_HARD_SIGMOID, false, true)))
static const kiln_attrs rnn_grad_gru = { .groups = KILN_RNN_GRU, .kh = KILN_TANH, .kw = KILN_SIGMOID, .keepdims = true, .trans_a = true };
static const kiln_attrs rnn_grad_lstm = { .groups = KILN_RNN_LSTM, .kh = KILN_TANH, .kw = KILN_SIGMOID };
BUILDER(rnn_grad_gru, kiln_node_new(g, KILN_OP_RNN_GRAD, x, 4, &rnn_grad_gru))
BUILDER(rnn_grad_lstm, kiln_node_new(g, KILN_OP_RNN_GRAD, x, 3, &rnn_grad_lstm))
#define RNN_IN(b, t, u, k) { F, F }, { S(b, t, k * u), S(u, k * u) }, { -1, -0.8 }, { 1, 0.8 }
#define RNN_IN_B(b, t, u, k) { F, F, F }, { S(b, t, k * u), S(u, k * u), S(k * u) }, { -1, -0.8, -0.5 }, { 1, 0.8, 0.5 }

#define QKV(b, h, tq, tk, dh) { F, F, F }, { S(b, h, tq, dh), S(b, h, tk, dh), S(b, h, tk, dh) }, { -1.5, -1.5, -1.5 }, { 1.5, 1.5, 1.5 }
#define ATT_GRAD_IN(b, h, tq, tk, dh) { F, F, F, F, F }, \
    { S(b, h, tq, dh), S(b, h, tk, dh), S(b, h, tk, dh), S(b, h, tq, dh + 1), S(b, h, tq, dh + 1) }, \
    { -1, -1, -1, -1, -1 }, { 1, 1, 1, 1, 1 }

const op_case cases_transformer[] = {
    { KILN_OP_EMBEDDING, "embedding [11,5] by i32 ids [3,4]", 2, { F, KILN_I32 }, { S(11, 5), S(3, 4) },
      { -2, 0 }, { 2, 11 }, b_embed, DT_FLOATS, true, 0, 0, 0, false, 0 },
    { KILN_OP_EMBEDDING, "embedding [4,7] by i64 ids [9] (repeats)", 2, { F, KILN_I64 }, { S(4, 7), S(9) },
      { -2, 0 }, { 2, 4 }, b_embed, DT_FLOATS, true, 0, 0, 0, false, 0 },
    { KILN_OP_EMBEDDING_GRAD, "embedding_grad ids [3,4] dy [3,4,5] -> [6,5]", 2, { KILN_I32, F }, { S(3, 4), S(3, 4, 5) },
      { 0, -1 }, { 6, 1 }, b_embed_grad, DT_FLOATS, false, 0, 0, 0, false, 0 },
    { KILN_OP_LAYER_NORM, "layer_norm [6,8]", 3, { F, F, F }, { S(6, 8), S(8), S(8) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_ln, DT_FLOATS, true, 0, 0, 0, false, 0 },
    { KILN_OP_LAYER_NORM, "layer_norm [2,3,37] eps 1e-5", 3, { F, F, F }, { S(2, 3, 37), S(37), S(37) },
      { -3, 0.5, -1 }, { 1, 1.5, 1 }, b_ln_eps5, DT_FLOATS, true, 0, 0, 0, false, 0 },
    { KILN_OP_LAYER_NORM_GRAD, "layer_norm_grad x,gamma,dy [5,9]", 3, { F, F, F }, { S(5, 9), S(9), S(5, 9) },
      { -2, 0.5, -1 }, { 2, 1.5, 1 }, b_ln_grad, DT_FLOATS, false, 0, 0, 0, false, 0 },
    { KILN_OP_LAYER_NORM_GAMMA_GRAD, "layer_norm_gamma_grad x,dy [7,6]", 2, { F, F }, { S(7, 6), S(7, 6) },
      { -2, -1 }, { 2, 1 }, b_ln_gamma_grad, DT_FLOATS, false, 0, 0, 0, false, 0 },
    { KILN_OP_ATTENTION, "attention [2,2,5,4] full", 3, QKV(2, 2, 5, 5, 4), b_att, DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION, "attention [2,2,5,4] causal", 3, QKV(2, 2, 5, 5, 4), b_att_causal, DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION, "attention q [1,2,3,6] k,v [1,2,7,6] causal offset, scale 0.7", 3, QKV(1, 2, 3, 7, 6), b_att_scaled,
      DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION, "attention [1,1,70,8] causal (tile edges)", 3, QKV(1, 1, 70, 70, 8), b_att_causal, DT_FLOATS, true,
      0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION, "attention q [1,2,33,5] k,v [1,2,130,5] full (tile edges)", 3, QKV(1, 2, 33, 130, 5), b_att,
      DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION, "attention O [2,3,9,16] causal (kiln_attention)", 3, QKV(2, 3, 9, 9, 16), b_att_o, DT_FLOATS, true,
      0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION, "attention dropout 0.3 [2,2,7,4] causal", 3, QKV(2, 2, 7, 7, 4), b_att_drop, DT_FLOATS, true,
      0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION, "attention dropout 0.5 q [1,2,33,5] k,v [1,2,130,5] full (tile edges)", 3, QKV(1, 2, 33, 130, 5), b_att_drop_full,
      DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION_GRAD, "attention_grad dropout 0.4 [1,2,70,4] causal", 5, ATT_GRAD_IN(1, 2, 70, 70, 4), b_att_grad_drop,
      DT_FLOATS, false, 0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION_GRAD, "attention_grad [2,1,6,3] causal", 5, ATT_GRAD_IN(2, 1, 6, 6, 3), b_att_grad, DT_FLOATS, false,
      0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION_GRAD, "attention_grad q [1,2,67,4] k [1,2,97,4] full", 5, ATT_GRAD_IN(1, 2, 67, 97, 4), b_att_grad_full,
      DT_FLOATS, false, 0, 0, 0, true, 0 },
    { KILN_OP_ATTENTION_GRAD, "attention_grad [1,1,80,8] causal", 5, ATT_GRAD_IN(1, 1, 80, 80, 8), b_att_grad, DT_FLOATS, false,
      0, 0, 0, true, 0 },
    { KILN_OP_RNN, "rnn SimpleRNN tanh B3 T5 U4", 2, RNN_IN(3, 5, 4, 1), b_rnn_simple, DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_RNN, "rnn SimpleRNN relu go_backwards B2 T6 U3", 2, RNN_IN(2, 6, 3, 1), b_rnn_simple_relu_back, DT_FLOATS, false, 0, 0, 0, true, 0 },
    { KILN_OP_RNN, "rnn LSTM go_backwards B2 T5 U3", 2, RNN_IN(2, 5, 3, 4), b_rnn_lstm_back, DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_RNN, "rnn LSTM hard_sigmoid B3 T4 U5", 2, RNN_IN(3, 4, 5, 4), b_rnn_lstm_hard, DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_RNN, "rnn GRU reset_after B2 T5 U3", 3, RNN_IN_B(2, 5, 3, 3), b_rnn_gru_after, DT_FLOATS, true, 0, 0, 0, true, 0 },
    { KILN_OP_RNN, "rnn GRU reset_before hard_sigmoid go_backwards B3 T4 U4", 2, RNN_IN(3, 4, 4, 3), b_rnn_gru_before_back, DT_FLOATS, true,
      0, 0, 0, true, 0 },
    { KILN_OP_RNN_GRAD, "rnn_grad GRU reset_after go_backwards B2 T4 U3", 4, { F, F, F, F }, { S(2, 4, 9), S(3, 9), S(9), S(2, 4, 3) },
      { -1, -0.8, -0.5, -1 }, { 1, 0.8, 0.5, 1 }, b_rnn_grad_gru, DT_FLOATS, false, 0, 0, 0, true, 0 },
    { KILN_OP_RNN_GRAD, "rnn_grad LSTM B3 T3 U2", 3, { F, F, F }, { S(3, 3, 8), S(2, 8), S(3, 3, 2) },
      { -1, -0.8, -1 }, { 1, 0.8, 1 }, b_rnn_grad_lstm, DT_FLOATS, false, 0, 0, 0, true, 0 },
};
const int n_cases_transformer = (int)(sizeof cases_transformer / sizeof cases_transformer[0]);
