/* Text generation from a GPT-shaped model (Input -> Embedding -> PositionEmbedding -> Add ->
 * [Dropout] -> GPTBlock... -> LayerNormalization -> TiedOutput: the gpt_char / gpt2 presets and
 * Hugging Face GPT-2 folders) with a KV cache: a one-token decode graph whose keys and values of
 * the earlier positions are fed from host caches, so each new token costs O(context) instead of a
 * forward over the whole context. The graph has the full cache length; the positions not yet
 * written are masked out (-1e30 added to their scores), the current token's key and value are
 * placed at its position by a one-hot, and the host copies them into the caches after the step.
 * Past the position table's length the last half of the context is kept and decoded again
 * (nanoGPT crops to the context instead, recomputing every step). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "graph/graph_internal.h"

typedef struct dec {
    kiln_model *m;
    kiln_layer *wte, *wpe, *ln_f, *blocks[256];
    int n_blocks, tmax, width, vocab;
    kiln_graph *g;
    kiln_session *s;
    kiln_node *tok, *pos, *onehot, *mask, *logits, *kc[256], *vc[256], *kn[256], *vn[256];
    kiln_tensor *t_tok, *t_pos, *t_onehot, *t_mask, *cache_k[256], *cache_v[256];
} dec;

static kiln_status not_gpt(const kiln_model *m, const char *why) {
    return kiln_set_error(KILN_UNSUPPORTED, "kiln_generate: model '%s' is not a GPT of Kiln's shape (Embedding, PositionEmbedding, Add, GPTBlock..., "
                          "LayerNormalization, TiedOutput): %s", kiln_model_name(m), why);
}

/* Finds the layers; checks the order the decode graph assumes. */
static kiln_status find_layers(dec *d) {
    kiln_model *m = d->m;
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        switch (l->kind) {
        case NN_INPUT: case NN_ADD: case NN_DROPOUT: break;
        case NN_EMBEDDING: if (d->wte) return not_gpt(m, "two Embedding layers"); d->wte = l; break;
        case NN_POS_EMBEDDING: d->wpe = l; break;
        case NN_GPT_BLOCK:
            if (d->n_blocks == 256) return not_gpt(m, "more than 256 blocks");
            d->blocks[d->n_blocks++] = l;
            break;
        case NN_LAYER_NORM: if (!d->n_blocks || d->ln_f) return not_gpt(m, "a LayerNormalization outside the final one"); d->ln_f = l; break;
        case NN_TIED_OUTPUT: if (l != m->output) return not_gpt(m, "TiedOutput is not the output"); break;
        default: {
            char why[160];
            snprintf(why, sizeof why, "layer '%s' (%s)", l->name, kiln_layer_type(l));
            return not_gpt(m, why);
        }
        }
    }
    if (!d->wte || !d->wpe || !d->ln_f || !d->n_blocks || m->output->kind != NN_TIED_OUTPUT) return not_gpt(m, "a layer is missing");
    d->tmax = d->wpe->input_dim;
    d->width = d->wte->units;
    d->vocab = d->wte->input_dim;
    return KILN_OK;
}

/* the model's weight as a constant of the decode graph */
static kiln_node *weight(dec *d, const kiln_layer *l, const char *suffix) {
    char nm[NN_NAME + 48];
    snprintf(nm, sizeof nm, "%s/%s", l->name, suffix);
    kiln_tensor *t = NULL;
    if (kiln_model_get_weight(d->m, nm, &t) != KILN_OK) { kiln_graph_fail(d->g, KILN_NOT_FOUND, "weight %s: %s", nm, kiln_last_error()); return NULL; }
    kiln_node *n = kiln_constant(d->g, t);
    kiln_tensor_free(t);
    return n;
}

static kiln_node *lin(dec *d, const kiln_layer *l, kiln_node *x, const char *which) {
    char k[40], b[40];
    snprintf(k, sizeof k, "%s/kernel", which);
    snprintf(b, sizeof b, "%s/bias", which);
    return kiln_add(d->g, kiln_matmul(d->g, x, weight(d, l, k), false, false), weight(d, l, b));
}

/* one block on x [1, D] at the fed position; returns [1, D] */
static kiln_node *block(dec *d, int i, kiln_node *x) {
    static const int perm[4] = { 0, 2, 1, 3 };
    kiln_graph *g = d->g;
    const kiln_layer *l = d->blocks[i];
    int64_t D = d->width, H = l->heads, K = l->key_dim, T = d->tmax;
    kiln_node *h = kiln_layer_norm(g, x, weight(d, l, "ln_1/gamma"), weight(d, l, "ln_1/beta"), l->epsilon);
    kiln_node *qkv = lin(d, l, h, "attn/c_attn"), *p[3];
    for (int j = 0; j < 3; j++)
        p[j] = kiln_transpose(g, kiln_reshape(g, kiln_slice(g, qkv, (int64_t[]){ 0, j * D }, (int64_t[]){ 1, D }), KILN_SHAPE(1, 1, H, K)), perm);
    d->kn[i] = p[1];
    d->vn[i] = p[2];
    char nm[32];
    snprintf(nm, sizeof nm, "kcache_%d", i);
    d->kc[i] = kiln_placeholder(g, nm, KILN_F32, KILN_SHAPE(1, H, T, K));
    snprintf(nm, sizeof nm, "vcache_%d", i);
    d->vc[i] = kiln_placeholder(g, nm, KILN_F32, KILN_SHAPE(1, H, T, K));
    kiln_node *kf = kiln_add(g, d->kc[i], kiln_mul(g, d->onehot, p[1])), *vf = kiln_add(g, d->vc[i], kiln_mul(g, d->onehot, p[2]));
    kiln_node *sc = kiln_mul(g, kiln_batch_matmul(g, p[0], kf, false, true), kiln_scalar(g, KILN_F32, 1.0 / sqrt((double)K)));
    kiln_node *a = kiln_batch_matmul(g, kiln_softmax(g, kiln_add(g, sc, d->mask), 3), vf, false, false);   /* [1, H, 1, K] */
    a = lin(d, l, kiln_reshape(g, kiln_transpose(g, a, perm), KILN_SHAPE(1, D)), "attn/c_proj");
    x = kiln_add(g, x, a);
    h = kiln_layer_norm(g, x, weight(d, l, "ln_2/gamma"), weight(d, l, "ln_2/beta"), l->epsilon);
    h = lin(d, l, h, "mlp/c_fc");
    h = l->approximate ? kiln_gelu_tanh(g, h) : kiln_gelu(g, h);
    return kiln_add(g, x, lin(d, l, h, "mlp/c_proj"));
}

static kiln_status build(dec *d) {
    kiln_graph *g = d->g = kiln_graph_new();
    if (!g) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_generate: out of host memory");
    int64_t T = d->tmax;
    d->tok = kiln_placeholder(g, "token", KILN_I32, KILN_SHAPE(1));
    d->pos = kiln_placeholder(g, "position", KILN_I32, KILN_SHAPE(1));
    d->onehot = kiln_placeholder(g, "onehot", KILN_F32, KILN_SHAPE(1, 1, T, 1));
    d->mask = kiln_placeholder(g, "mask", KILN_F32, KILN_SHAPE(1, 1, 1, T));
    kiln_node *wte = weight(d, d->wte, "embeddings");
    kiln_node *x = kiln_add(g, kiln_embedding_lookup(g, wte, d->tok), kiln_embedding_lookup(g, weight(d, d->wpe, "embeddings"), d->pos));
    for (int i = 0; i < d->n_blocks && x; i++) x = block(d, i, x);
    kiln_node *gamma = d->ln_f->scale ? weight(d, d->ln_f, "gamma") : NULL, *beta = d->ln_f->center ? weight(d, d->ln_f, "beta") : NULL;
    if (!gamma || !beta) return not_gpt(d->m, "the final LayerNormalization has no gamma or beta");
    x = kiln_layer_norm(g, x, gamma, beta, d->ln_f->epsilon);
    d->logits = kiln_matmul(g, x, wte, false, true);   /* [1, V] */
    if (kiln_graph_status(g) != KILN_OK) return kiln_set_error(kiln_graph_status(g), "kiln_generate: building the decode graph: %s", kiln_graph_error(g));
    d->s = kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU });
    if (!d->s) return kiln_set_error(KILN_INTERNAL, "kiln_generate: %s", kiln_last_error());
    d->t_tok = kiln_tensor_new(KILN_I32, KILN_SHAPE(1));
    d->t_pos = kiln_tensor_new(KILN_I32, KILN_SHAPE(1));
    d->t_onehot = kiln_tensor_new(KILN_F32, KILN_SHAPE(1, 1, T, 1));
    d->t_mask = kiln_tensor_new(KILN_F32, KILN_SHAPE(1, 1, 1, T));
    bool ok = d->t_tok && d->t_pos && d->t_onehot && d->t_mask;
    for (int i = 0; i < d->n_blocks; i++) {
        kiln_shape cs = KILN_SHAPE(1, d->blocks[i]->heads, T, d->blocks[i]->key_dim);
        ok = ok && (d->cache_k[i] = kiln_tensor_new(KILN_F32, cs)) && (d->cache_v[i] = kiln_tensor_new(KILN_F32, cs));
    }
    return ok ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_generate: out of host memory for the KV cache");
}

static void dec_free(dec *d) {
    kiln_session_free(d->s);
    kiln_graph_free(d->g);
    kiln_tensor_free(d->t_tok);
    kiln_tensor_free(d->t_pos);
    kiln_tensor_free(d->t_onehot);
    kiln_tensor_free(d->t_mask);
    for (int i = 0; i < d->n_blocks; i++) { kiln_tensor_free(d->cache_k[i]); kiln_tensor_free(d->cache_v[i]); }
}

static void clear_cache(dec *d) {
    for (int i = 0; i < d->n_blocks; i++) {
        memset(d->cache_k[i]->data, 0, (size_t)kiln_shape_numel(d->cache_k[i]->shape) * 4);
        memset(d->cache_v[i]->data, 0, (size_t)kiln_shape_numel(d->cache_v[i]->shape) * 4);
    }
    float *mk = d->t_mask->data;
    for (int t = 0; t < d->tmax; t++) mk[t] = -1e30f;
}

/* token at position p: its logits into out [V]; its keys and values into the caches */
static kiln_status step(dec *d, int32_t token, int p, float *out) {
    int L = d->n_blocks, n_feeds = 4 + 2 * L, n_fetch = 1 + 2 * L;
    kiln_feed feeds[4 + 2 * 256];
    kiln_node *fetch[1 + 2 * 256];
    kiln_tensor *res[1 + 2 * 256] = { 0 };
    ((int32_t *)d->t_tok->data)[0] = token;
    ((int32_t *)d->t_pos->data)[0] = p;
    float *oh = d->t_onehot->data;
    memset(oh, 0, (size_t)d->tmax * 4);
    oh[p] = 1;
    ((float *)d->t_mask->data)[p] = 0;
    feeds[0] = (kiln_feed){ d->tok, d->t_tok };
    feeds[1] = (kiln_feed){ d->pos, d->t_pos };
    feeds[2] = (kiln_feed){ d->onehot, d->t_onehot };
    feeds[3] = (kiln_feed){ d->mask, d->t_mask };
    fetch[0] = d->logits;
    for (int i = 0; i < L; i++) {
        feeds[4 + 2 * i] = (kiln_feed){ d->kc[i], d->cache_k[i] };
        feeds[5 + 2 * i] = (kiln_feed){ d->vc[i], d->cache_v[i] };
        fetch[1 + 2 * i] = d->kn[i];
        fetch[2 + 2 * i] = d->vn[i];
    }
    kiln_status st = kiln_session_run(d->s, feeds, n_feeds, fetch, res, n_fetch, NULL, 0);
    if (!st) {
        memcpy(out, res[0]->data, (size_t)d->vocab * 4);
        for (int i = 0; i < L; i++) {     /* [1, H, 1, K] into [1, H, T, K] at p */
            int64_t H = d->blocks[i]->heads, K = d->blocks[i]->key_dim;
            for (int64_t h = 0; h < H; h++) {
                memcpy((float *)d->cache_k[i]->data + (h * d->tmax + p) * K, (float *)res[1 + 2 * i]->data + h * K, (size_t)K * 4);
                memcpy((float *)d->cache_v[i]->data + (h * d->tmax + p) * K, (float *)res[2 + 2 * i]->data + h * K, (size_t)K * 4);
            }
        }
    }
    for (int i = 0; i < n_fetch; i++) kiln_tensor_free(res[i]);
    return st;
}

/* argmax at temperature 0; else softmax(logits / T) over the top k (k 0: all), sampled */
static int32_t pick(float *lg, int v, double temp, int top_k, kiln_rng *r) {
    int best = 0;
    for (int j = 1; j < v; j++) if (lg[j] > lg[best]) best = j;
    if (temp <= 0) return best;
    float cut = -INFINITY;
    if (top_k > 0 && top_k < v) {      /* the k-th largest: k passes of "largest below the previous" */
        float prev = INFINITY;
        for (int k = 0; k < top_k; k++) {
            float m = -INFINITY;
            for (int j = 0; j < v; j++) if (lg[j] < prev && lg[j] > m) m = lg[j];
            prev = m;
        }
        cut = prev;
    }
    double sum = 0, mx = lg[best];
    for (int j = 0; j < v; j++) sum += lg[j] >= cut ? exp((lg[j] - mx) / temp) : 0;
    double u = kiln_rng_uniform(r) * sum;
    for (int j = 0; j < v; j++) {
        if (lg[j] < cut) continue;
        u -= exp((lg[j] - mx) / temp);
        if (u <= 0) return j;
    }
    return best;
}

kiln_status kiln_generate(kiln_model *m, const int32_t *prompt, int n_prompt, const kiln_generate_opts *o, int32_t **out, int *n_out) {
    if (!m || !prompt || n_prompt < 1 || !o || !out || !n_out)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate: needs a model, a prompt of at least one id, options and outputs");
    *out = NULL;
    *n_out = 0;
    if (o->tokens < 0 || !(o->temperature >= 0) || o->top_k < 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate: tokens %d, temperature %g and top_k %d must be >= 0", o->tokens, o->temperature, o->top_k);
    dec d = { .m = m };
    kiln_status st = find_layers(&d);
    for (int i = 0; !st && i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= d.vocab)
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate: prompt token id %d (at %d) is outside the vocabulary size %d", prompt[i], i, d.vocab);
    if (st || (st = build(&d))) { dec_free(&d); return st; }
    int total = n_prompt + o->tokens, n = n_prompt, p = 0, start = 0;      /* ids[start + p] is at position p */
    kiln_rng r = kiln_rng_new(o->seed);
    int32_t *ids = malloc((size_t)total * sizeof *ids);
    float *lg = malloc((size_t)d.vocab * sizeof *lg);
    if (o->logits) *o->logits = o->tokens ? kiln_tensor_new(KILN_F32, KILN_SHAPE(o->tokens, d.vocab)) : NULL;
    if (!ids || !lg || (o->logits && o->tokens && !*o->logits)) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_generate: out of host memory"); goto done; }
    memcpy(ids, prompt, (size_t)n_prompt * sizeof *ids);
    clear_cache(&d);
    if (n > d.tmax) start = n - d.tmax;      /* a prompt longer than the context: its last tmax ids */
    for (int k = 0; k <= o->tokens && !st; k++) {
        while (start + p < n && !st) st = step(&d, ids[start + p], p, lg), p++;   /* the ids not yet in the cache */
        if (st || k == o->tokens) break;
        if (o->logits) memcpy((float *)(*o->logits)->data + (size_t)k * d.vocab, lg, (size_t)d.vocab * 4);
        ids[n++] = pick(lg, d.vocab, o->temperature, o->top_k, &r);
        if (p == d.tmax) { start = n - d.tmax / 2; p = 0; clear_cache(&d); }   /* full: keep the last half, decode it again */
    }
done:
    free(lg);
    dec_free(&d);
    if (st) { free(ids); if (o->logits) { kiln_tensor_free(*o->logits); *o->logits = NULL; } return st; }
    *out = ids;
    *n_out = n;
    return KILN_OK;
}
