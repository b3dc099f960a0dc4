/* Transformer layer types: Embedding, LayerNormalization, MultiHeadAttention (Keras's names,
 * arguments and weight layout) and PositionEmbedding (keras_hub's: the learned position vectors,
 * broadcast to the input's shape; add them to the tokens' embeddings). Each: options schema,
 * shape, variables and forward ops over the fused ops of src/ops/transformer.c and attention.c.
 * Typed builders: layers_api.c. */
#include <math.h>
#include <stdio.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

/* Keras's default for embeddings: RandomUniform(-0.05, 0.05) */
#define NN_DINIT_UNIFORM05 { .kind = NN_V_INIT, .init = { .kind = KILN_INIT_UNIFORM, .a = -0.05, .b = 0.05 } }

/* ---- Embedding: ids (None, ...) -> (None, ..., output_dim) ---- */
static const nn_opt_spec embedding_opts[] = {
    { "input_dim", NN_T_INT, NN_CFG(input_dim), 1, { 0 } },
    { "output_dim", NN_T_INT, NN_CFG(units), 1, { 0 } },
    { "embeddings_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT_UNIFORM05 },
    { "embeddings_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },
    { NULL },
};
static kiln_status embedding_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (c->input_dim < 1 || c->units < 1)
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "input_dim (vocabulary size, got %d) and output_dim (got %d) must be >= 1", c->input_dim, c->units);
    if (s.rank + 1 > KILN_MAX_DIMS - 1)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s has too many dims for one more (at most %d, batch excluded)", nn_batched_str(s, b, sizeof b),
                             KILN_MAX_DIMS - 2);
    l->input_dim = c->input_dim;
    l->units = c->units;
    s.dim[s.rank++] = c->units;
    l->out = s;
    return KILN_OK;
}
static void embedding_vars(kiln_layer *l, const nn_layer_cfg *c) {
    nn_layer_add_var(l, "embeddings", KILN_SHAPE(l->input_dim, l->units), c->kernel_init, true, c->l2);
}
/* Float ids (Kiln's model input is f32, as Keras's default) are truncated to integers, as Keras
 * casts them; through i64 so that any value is defined and a bad one is named by the lookup. */
static kiln_node *embedding_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    if (x && kiln_dtype_is_float(kiln_node_dtype(x))) x = kiln_cast(f->g, x, KILN_I64);
    return kiln_embedding_lookup(f->g, nn_layer_var(f, l, "embeddings"), x);
}
const nn_layer_def nn_def_embedding = { "Embedding", "embedding", embedding_opts, 1, 1, embedding_shape, embedding_vars, embedding_forward };

/* ---- LayerNormalization over the last axis ---- */
static const nn_opt_spec layer_norm_opts[] = {
    { "axis", NN_T_INT, NN_CFG(axis), -KILN_MAX_DIMS, NN_DINT(-1) },
    { "epsilon", NN_T_FLOAT, NN_CFG(epsilon), 0, NN_DFLOAT(1e-3) },
    { "center", NN_T_BOOL, NN_CFG(center), 0, NN_DBOOL(true) },
    { "scale", NN_T_BOOL, NN_CFG(scale_on), 0, NN_DBOOL(true) },
    { "beta_initializer", NN_T_INIT, NN_CFG(bias_init), 0, NN_DINIT(KILN_INIT_ZEROS) },
    { "gamma_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_ONES) },
    { NULL },
};
static kiln_status layer_norm_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (c->axis != -1 && c->axis != s.rank)
        return nn_layer_fail(l, KILN_UNSUPPORTED, "axis %d: Kiln normalizes over the last axis only (axis=-1 or %d for input %s)", c->axis, s.rank,
                             nn_batched_str(s, b, sizeof b));
    if (!(c->epsilon > 0) || !isfinite(c->epsilon))
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "epsilon must be a positive number, got %g", c->epsilon);
    l->epsilon = c->epsilon;
    l->center = c->center;
    l->scale = c->scale_on;
    l->out = s;
    return KILN_OK;
}
static void layer_norm_vars(kiln_layer *l, const nn_layer_cfg *c) {
    int64_t d = l->out.dim[l->out.rank - 1];
    if (l->scale) nn_layer_add_var(l, "gamma", KILN_SHAPE(d), c->kernel_init, true, 0);
    if (l->center) nn_layer_add_var(l, "beta", KILN_SHAPE(d), c->bias_init, true, 0);
}
static kiln_node *const_vec(kiln_graph *g, int64_t d, double v) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(d));
    if (!t) { kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "out of host memory for a constant of %lld values", (long long)d); return NULL; }
    for (int64_t i = 0; i < d; i++) kiln_tensor_set(t, i, v);
    kiln_node *n = kiln_constant(g, t);
    kiln_tensor_free(t);
    return n;
}
/* In f32 (under mixed precision autocast casts a half x up): the statistics stay f32. */
static kiln_node *layer_norm_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    int64_t d = l->out.dim[l->out.rank - 1];
    kiln_node *gamma = l->scale ? nn_layer_var(f, l, "gamma") : const_vec(f->g, d, 1.0);
    kiln_node *beta = l->center ? nn_layer_var(f, l, "beta") : const_vec(f->g, d, 0.0);
    return kiln_layer_norm(f->g, x, gamma, beta, l->epsilon);
}
const nn_layer_def nn_def_layer_norm = { "LayerNormalization", "layer_normalization", layer_norm_opts, 1, 1, layer_norm_shape, layer_norm_vars,
                                         layer_norm_forward };

/* ---- MultiHeadAttention: (query[, value[, key]]) of (None, T, D) -> (None, Tq, Dq) ---- */
static const nn_opt_spec mha_opts[] = {
    { "num_heads", NN_T_INT, NN_CFG(num_heads), 1, { 0 } },
    { "key_dim", NN_T_INT, NN_CFG(key_dim), 1, { 0 } },
    { "value_dim", NN_T_INT, NN_CFG(value_dim), 0, NN_DNULL },       /* None / 0: key_dim */
    { "dropout", NN_T_FLOAT, NN_CFG(rate), 0, NN_DFLOAT(0) },
    { "use_bias", NN_T_BOOL, NN_CFG(use_bias), 0, NN_DBOOL(true) },
    { "kernel_initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { "bias_initializer", NN_T_INIT, NN_CFG(bias_init), 0, NN_DINIT(KILN_INIT_ZEROS) },
    { "kernel_regularizer", NN_T_FLOAT, NN_CFG(l2), 0, NN_DFLOAT(0) },
    { "seed", NN_T_SEED, NN_CFG(seed), 0, NN_DNULL },
    /* Keras passes it to each call (layer(q, v, use_causal_mask=True)); Kiln's layers are called
     * once, so it is an option here, read from a Keras file's call arguments */
    { "use_causal_mask", NN_T_BOOL, NN_CFG(causal), 0, NN_DBOOL(false) },
    { NULL },
};
static kiln_status mha_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape q = l->in[0]->out, v = l->in[l->n_in > 1 ? 1 : 0]->out, k = l->in[l->n_in > 2 ? 2 : l->n_in > 1 ? 1 : 0]->out;
    char b1[96], b2[96];
    if (q.rank != 2 || v.rank != 2 || !kiln_shape_equal(k, v))
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "query %s and key/value %s must be sequences (None, T, features), key and value alike",
                             nn_batched_str(q, b1, sizeof b1), nn_batched_str(v, b2, sizeof b2));
    if (c->value_dim != 0 && c->value_dim != c->key_dim)
        return nn_layer_fail(l, KILN_UNSUPPORTED, "value_dim %d differs from key_dim %d; Kiln's fused attention needs them equal", c->value_dim, c->key_dim);
    if (!(c->rate >= 0 && c->rate < 1)) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "dropout %g must be in [0, 1)", c->rate);
    if (c->causal && k.dim[0] < q.dim[0])
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "use_causal_mask needs at least as many keys (%lld) as queries (%lld)", (long long)k.dim[0],
                             (long long)q.dim[0]);
    l->heads = c->num_heads;
    l->key_dim = c->key_dim;
    l->use_bias = c->use_bias;
    l->causal = c->causal;
    l->rate = c->rate;              /* on the attention probabilities, in training (Keras's dropout) */
    l->seed = c->seed;
    l->out = q;
    return KILN_OK;
}
static void mha_vars(kiln_layer *l, const nn_layer_cfg *c) {
    static const char *const proj[3] = { "query", "key", "value" };
    int64_t H = l->heads, K = l->key_dim;
    char nm[32];
    for (int i = 0; i < 3; i++) {
        int64_t d = l->in[i == 0 ? 0 : i == 1 ? (l->n_in > 2 ? 2 : l->n_in - 1) : (l->n_in > 1 ? 1 : 0)]->out.dim[1];
        snprintf(nm, sizeof nm, "%s/kernel", proj[i]);
        nn_layer_add_var(l, nm, KILN_SHAPE(d, H, K), c->kernel_init, true, c->l2);
        snprintf(nm, sizeof nm, "%s/bias", proj[i]);
        if (l->use_bias) nn_layer_add_var(l, nm, KILN_SHAPE(H, K), c->bias_init, true, 0);
    }
    int64_t dq = l->out.dim[1];
    nn_layer_add_var(l, "attention_output/kernel", KILN_SHAPE(H, K, dq), c->kernel_init, true, c->l2);
    if (l->use_bias) nn_layer_add_var(l, "attention_output/bias", KILN_SHAPE(dq), c->bias_init, true, 0);
}
/* x (B, T, D) -> heads (B, H, T, K): one matmul with the kernel seen as [D, H K]. */
static kiln_node *project(const nn_fwd *f, kiln_layer *l, kiln_node *x, const char *which) {
    static const int perm[4] = { 0, 2, 1, 3 };
    kiln_graph *g = f->g;
    kiln_shape s = kiln_node_shape(x);
    int64_t B = s.dim[0], T = s.dim[1], D = s.dim[2], H = l->heads, K = l->key_dim;
    char nm[32];
    snprintf(nm, sizeof nm, "%s/kernel", which);
    kiln_node *w = kiln_reshape(g, nn_layer_var(f, l, nm), KILN_SHAPE(D, H * K));
    kiln_node *y = kiln_matmul(g, kiln_reshape(g, x, KILN_SHAPE(B * T, D)), w, false, false);
    if (l->use_bias) {
        snprintf(nm, sizeof nm, "%s/bias", which);
        y = kiln_bias_add(g, y, kiln_autocast_weight(g, kiln_reshape(g, nn_layer_var(f, l, nm), KILN_SHAPE(H * K))));
    }
    return kiln_transpose(g, kiln_reshape(g, y, KILN_SHAPE(B, T, H, K)), perm);
}
static kiln_node *to_f32(kiln_graph *g, kiln_node *x) { return kiln_node_dtype(x) == KILN_F32 ? x : kiln_cast(g, x, KILN_F32); }
static kiln_node *mha_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    static const int perm[4] = { 0, 2, 1, 3 };
    kiln_graph *g = f->g;
    kiln_node *vin = l->n_in > 1 ? l->in[1]->node : x, *kin = l->n_in > 2 ? l->in[2]->node : vin;
    kiln_node *q = project(f, l, x, "query"), *k = project(f, l, kin, "key"), *v = project(f, l, vin, "value");
    if (!q || !k || !v) return NULL;
    /* f32 inside the fused op (under mixed precision the products are cast up); scale 1/sqrt(key_dim) as Keras */
    double rate = f->training ? l->rate : 0.0;
    uint64_t seed = l->seed ? l->seed : kiln_mix64(f->m->seed ^ (0xA77Eull + (uint64_t)l->index));
    kiln_node *o = kiln_attention_dropout(g, to_f32(g, q), to_f32(g, k), to_f32(g, v), l->causal, 1.0 / sqrt((double)l->key_dim), rate, seed);
    kiln_shape qs = kiln_node_shape(x);
    int64_t B = qs.dim[0], T = qs.dim[1], HK = (int64_t)l->heads * l->key_dim, dq = l->out.dim[1];
    o = kiln_reshape(g, kiln_transpose(g, o, perm), KILN_SHAPE(B * T, HK));
    kiln_node *bias = l->use_bias ? kiln_autocast_weight(g, nn_layer_var(f, l, "attention_output/bias")) : NULL;
    kiln_node *y = kiln_matmul(g, o, kiln_reshape(g, nn_layer_var(f, l, "attention_output/kernel"), KILN_SHAPE(HK, dq)), false, false);
    if (bias) y = kiln_bias_add(g, y, bias);
    return kiln_reshape(g, y, KILN_SHAPE(B, T, dq));
}
const nn_layer_def nn_def_mha = { "MultiHeadAttention", "multi_head_attention", mha_opts, 1, 3, mha_shape, mha_vars, mha_forward };

/* ---- PositionEmbedding (keras_hub): (None, T, D) -> the first T of sequence_length learned
 * vectors, broadcast to (None, T, D) ---- */
static const nn_opt_spec pos_opts[] = {
    { "sequence_length", NN_T_INT, NN_CFG(input_dim), 1, { 0 } },
    { "initializer", NN_T_INIT, NN_CFG(kernel_init), 0, NN_DINIT(KILN_INIT_GLOROT_UNIFORM) },
    { NULL },
};
static kiln_status pos_shape(kiln_layer *l, const nn_layer_cfg *c) {
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (s.rank != 2)
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "input %s must be a sequence (None, T, features)", nn_batched_str(s, b, sizeof b));
    if (c->input_dim < s.dim[0])
        return nn_layer_fail(l, KILN_SHAPE_MISMATCH, "sequence_length %d is shorter than the input's %lld positions", c->input_dim, (long long)s.dim[0]);
    l->input_dim = c->input_dim;
    l->out = s;
    return KILN_OK;
}
static void pos_vars(kiln_layer *l, const nn_layer_cfg *c) {
    nn_layer_add_var(l, "embeddings", KILN_SHAPE(l->input_dim, l->out.dim[1]), c->kernel_init, true, 0);
}
static kiln_node *pos_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    kiln_shape s = kiln_node_shape(x);
    kiln_node *e = nn_layer_var(f, l, "embeddings");
    if (l->input_dim != s.dim[1]) e = kiln_slice(f->g, e, (int64_t[]){ 0, 0 }, (int64_t[]){ s.dim[1], s.dim[2] });
    return kiln_broadcast_to(f->g, e, s);
}
const nn_layer_def nn_def_position_embedding = { "PositionEmbedding", "position_embedding", pos_opts, 1, 1, pos_shape, pos_vars, pos_forward };
