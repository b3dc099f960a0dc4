/* The tokenizer's tables (vocabulary and merge hash maps), byte-level encode and decode. */
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "text/text_internal.h"

uint64_t tk_hash(const void *p, size_t n) {   /* FNV-1a */
    const uint8_t *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static size_t pow2_above(size_t want) {
    size_t cap = 16;
    while (cap < 2 * want) cap *= 2;
    return cap;
}

kiln_status tk_strmap_init(tk_strmap *m, size_t want) {
    m->cap = pow2_above(want);
    m->slot = kiln_malloc(m->cap * sizeof *m->slot);
    if (!m->slot) return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory for the vocabulary");
    memset(m->slot, 0xFF, m->cap * sizeof *m->slot);
    return KILN_OK;
}
void tk_strmap_free(tk_strmap *m) { kiln_free(m->slot); m->slot = NULL; }

int32_t tk_strmap_get(const tk_strmap *m, const tk_token *tok, const char *s, size_t n) {
    if (!m->slot) return -1;
    for (size_t i = tk_hash(s, n) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        int32_t id = m->slot[i];
        if (id < 0) return -1;
        if (tok[id].n == n && !memcmp(tok[id].s, s, n)) return id;
    }
}

void tk_strmap_put(tk_strmap *m, const tk_token *tok, int32_t id) {
    size_t i = tk_hash(tok[id].s, tok[id].n) & (m->cap - 1);
    while (m->slot[i] >= 0) i = (i + 1) & (m->cap - 1);
    m->slot[i] = id;
}

kiln_status tk_pairmap_init(tk_pairmap *m, size_t want) {
    m->cap = pow2_above(want);
    m->n = 0;
    m->key = kiln_calloc(m->cap, sizeof *m->key);
    m->rank = kiln_malloc(m->cap * sizeof *m->rank);
    m->merged = kiln_malloc(m->cap * sizeof *m->merged);
    if (!m->key || !m->rank || !m->merged) {
        tk_pairmap_free(m);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory for the merges");
    }
    return KILN_OK;
}
void tk_pairmap_free(tk_pairmap *m) {
    kiln_free(m->key); kiln_free(m->rank); kiln_free(m->merged);
    m->key = NULL; m->rank = m->merged = NULL;
}

size_t tk_pairmap_find(const tk_pairmap *m, int32_t a, int32_t b) {
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (m->cap - 1);
    while (m->key[i] && m->key[i] != k) i = (i + 1) & (m->cap - 1);
    return i;
}

kiln_tokenizer *tk_new(int n_ids) {
    kiln_tokenizer *t = kiln_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->tok = kiln_calloc((size_t)(n_ids > 0 ? n_ids : 1), sizeof *t->tok);
    if (!t->tok) { kiln_free(t); return NULL; }
    t->n_ids = n_ids;
    t->unk = -1;
    t->use_regex = t->trim_offsets = t->bytelevel_decoder = true;
    return t;
}

void kiln_tokenizer_free(kiln_tokenizer *t) {
    if (!t) return;
    for (int i = 0; i < t->n_ids; i++) { kiln_free(t->tok[i].s); kiln_free(t->tok[i].bytes); }
    kiln_free(t->tok);
    tk_strmap_free(&t->vocab);
    tk_pairmap_free(&t->pairs);
    kiln_free(t->merges);
    kiln_free(t->added);
    kiln_free(t);
}

kiln_status tk_set_token(kiln_tokenizer *t, int32_t id, const char *s, size_t n, bool in_model) {
    tk_token *k = &t->tok[id];
    k->s = kiln_malloc(n + 1);
    k->bytes = kiln_malloc(n + 1);
    if (!k->s || !k->bytes) return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory for token %d", (int)id);
    memcpy(k->s, s, n);
    k->s[n] = 0;
    k->n = n;
    k->in_model = in_model;
    /* the ByteLevel decoder: every character back to its byte, or the token's own bytes when one
     * is not a byte symbol (as `tokenizers` does) */
    size_t nb = 0;
    bool mapped = t->bytelevel_decoder;
    for (size_t i = 0; mapped && i < n;) {
        uint32_t cp;
        int len = tk_utf8_char((const uint8_t *)s + i, n - i, &cp), b = len ? tk_char_byte(cp) : -1;
        if (b < 0) mapped = false;
        else { k->bytes[nb++] = (uint8_t)b; i += (size_t)len; }
    }
    if (!mapped) { memcpy(k->bytes, s, n); nb = n; }
    k->nb = nb;
    return KILN_OK;
}

kiln_status tk_finish(kiln_tokenizer *t) {
    for (int b = 0; b < 256; b++) {
        uint8_t u[4];
        size_t n = tk_utf8_put(tk_byte_char((uint8_t)b), u);
        t->byte_id[b] = tk_strmap_get(&t->vocab, t->tok, (const char *)u, n);
    }
    kiln_status s = tk_pairmap_init(&t->pairs, (size_t)t->n_merges);
    if (s != KILN_OK) return s;
    char *buf = NULL;
    size_t cap = 0;
    for (int r = 0; r < t->n_merges; r++) {
        const tk_token *a = &t->tok[t->merges[r][0]], *b = &t->tok[t->merges[r][1]];
        if (a->n + b->n + 1 > cap) {
            kiln_free(buf);
            cap = 2 * (a->n + b->n + 1);
            if (!(buf = kiln_malloc(cap))) return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory");
        }
        memcpy(buf, a->s, a->n);
        memcpy(buf + a->n, b->s, b->n);
        int32_t m = tk_strmap_get(&t->vocab, t->tok, buf, a->n + b->n);
        if (m < 0 || !t->tok[m].in_model) {
            buf[a->n + b->n] = 0;
            kiln_free(buf);
            return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer: merge %d (\"%s\" \"%s\"): the merged token is not in the vocabulary",
                                  r, a->s, b->s);
        }
        size_t i = tk_pairmap_find(&t->pairs, t->merges[r][0], t->merges[r][1]);
        if (t->pairs.key[i]) continue;   /* a repeated merge keeps its first rank */
        t->pairs.key[i] = (((uint64_t)(uint32_t)t->merges[r][0] << 32) | (uint32_t)t->merges[r][1]) + 1;
        t->pairs.rank[i] = r;
        t->pairs.merged[i] = m;
        t->pairs.n++;
    }
    kiln_free(buf);
    return KILN_OK;
}

int kiln_tokenizer_vocab_size(const kiln_tokenizer *t) { return t ? t->n_ids : 0; }

int32_t kiln_tokenizer_token_id(const kiln_tokenizer *t, const char *token) {
    if (!t || !token) return -1;
    return tk_strmap_get(&t->vocab, t->tok, token, strlen(token));
}

kiln_status kiln_tokenizer_token_bytes(const kiln_tokenizer *t, int32_t id, const uint8_t **bytes, size_t *n) {
    if (!t || !bytes || !n) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_token_bytes: NULL argument");
    *bytes = NULL;
    *n = 0;
    if (id < 0 || id >= t->n_ids || !t->tok[id].s)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer: token id %d is out of range (vocabulary size %d)",
                              (int)id, t->n_ids);
    *bytes = t->tok[id].bytes;
    *n = t->tok[id].nb;
    return KILN_OK;
}

void kiln_text_free(void *p) { kiln_free(p); }
