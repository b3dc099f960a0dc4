/* Encoding text to ids (added tokens, the byte-level split, BPE merges by rank) and decoding. */
#include <string.h>
#include "core/core.h"
#include "text/text_internal.h"

typedef struct {
    int32_t *v;
    size_t n, cap;
} idbuf;

static bool push(idbuf *b, int32_t id) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        int32_t *v = kiln_realloc(b->v, cap * sizeof *v);
        if (!v) return false;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = id;
    return true;
}

/* BPE on one pre-token's symbols sym[0..n): repeatedly merge the adjacent pair of lowest rank
 * (the leftmost among equals), as `tokenizers`' priority queue does. n shrinks in place. */
static void bpe_merge(const kiln_tokenizer *t, int32_t *sym, size_t *np) {
    size_t n = *np;
    while (n > 1) {
        int32_t best = INT32_MAX, merged = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            size_t k = tk_pairmap_find(&t->pairs, sym[i], sym[i + 1]);
            if (t->pairs.key[k] && t->pairs.rank[k] < best) { best = t->pairs.rank[k]; merged = t->pairs.merged[k]; at = i; }
        }
        if (merged < 0) break;
        sym[at] = merged;
        memmove(sym + at + 1, sym + at + 2, (n - at - 2) * sizeof *sym);
        n--;
    }
    *np = n;
}

/* One pre-token (raw bytes) to ids. */
static bool encode_word(const kiln_tokenizer *t, const uint8_t *w, size_t n, idbuf *out, idbuf *scratch) {
    if (t->ignore_merges) {   /* the whole word when the vocabulary has it (Llama 3 style) */
        uint8_t *u = kiln_malloc(2 * n + 1);
        if (!u) return false;
        size_t un = 0;
        for (size_t i = 0; i < n; i++) un += tk_utf8_put(tk_byte_char(w[i]), u + un);
        int32_t id = tk_strmap_get(&t->vocab, t->tok, (const char *)u, un);
        kiln_free(u);
        if (id >= 0 && t->tok[id].in_model) return push(out, id);
    }
    scratch->n = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[w[i]];
        if (id < 0) id = t->unk;   /* no unk: the symbol is dropped, as in `tokenizers` */
        if (id >= 0 && !push(scratch, id)) return false;
    }
    size_t k = scratch->n;
    bpe_merge(t, scratch->v, &k);
    for (size_t i = 0; i < k; i++)
        if (!push(out, scratch->v[i])) return false;
    return true;
}

/* Pre-tokens of a piece by GPT-2's regex (or the piece whole), each through BPE. */
static bool encode_split(const kiln_tokenizer *t, const uint8_t *s, size_t n, idbuf *out, idbuf *scratch) {
    if (!t->use_regex) return encode_word(t, s, n, out, scratch);
    for (size_t i = 0; i < n;) {
        size_t e = tk_pretoken_end(s, n, i);
        if (!encode_word(t, s + i, e - i, out, scratch)) return false;
        i = e;
    }
    return true;
}

/* A piece of text between added tokens: add_prefix_space applies to each piece. */
static bool encode_piece(const kiln_tokenizer *t, const uint8_t *s, size_t n, idbuf *out, idbuf *scratch) {
    if (n == 0) return true;
    if (!t->add_prefix_space || s[0] == ' ') return encode_split(t, s, n, out, scratch);
    uint8_t *p = kiln_malloc(n + 1);
    if (!p) return false;
    p[0] = ' ';
    memcpy(p + 1, s, n);
    bool ok = encode_split(t, p, n + 1, out, scratch);
    kiln_free(p);
    return ok;
}

/* The leftmost-longest added token at or after i: its start and end (with lstrip/rstrip
 * whitespace), and index; false when none. */
static bool next_added(const kiln_tokenizer *t, const uint8_t *s, size_t n, size_t i, size_t *ms, size_t *me, int *which) {
    for (; i < n; i++) {
        size_t best = 0;
        int w = -1;
        for (int a = 0; a < t->n_added; a++) {
            const tk_token *k = &t->tok[t->added[a].id];
            if (k->n > best && k->n <= n - i && k->s[0] == (char)s[i] && !memcmp(k->s, s + i, k->n)) { best = k->n; w = a; }
        }
        if (w < 0) continue;
        size_t st = i, en = i + best;
        if (t->added[w].lstrip) while (st > 0 && (s[st - 1] == ' ' || (s[st - 1] >= 9 && s[st - 1] <= 13))) st--;
        if (t->added[w].rstrip) while (en < n && (s[en] == ' ' || (s[en] >= 9 && s[en] <= 13))) en++;
        *ms = st; *me = en; *which = w;
        return true;
    }
    return false;
}

kiln_status kiln_tokenizer_encode(const kiln_tokenizer *t, const char *text, size_t n, int32_t **ids, size_t *n_ids) {
    if (!t || (!text && n) || !ids || !n_ids) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_encode: NULL argument");
    *ids = NULL;
    *n_ids = 0;
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = tk_utf8_char(s + i, n - i, &cp);
        if (!len) return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer: the text is not valid UTF-8 (byte 0x%02X at offset %zu)", s[i], i);
        i += (size_t)len;
    }
    idbuf out = { 0 }, scratch = { 0 };
    bool ok = true;
    size_t at = 0, ms, me;
    int w;
    while (ok && at < n) {
        if (!next_added(t, s, n, at, &ms, &me, &w)) { ms = me = n; w = -1; }
        if (ms < at) ms = at;   /* lstrip never reaches into the previous token */
        ok = encode_piece(t, s + at, ms - at, &out, &scratch) && (w < 0 || push(&out, t->added[w].id));
        at = me;
    }
    kiln_free(scratch.v);
    if (!ok) { kiln_free(out.v); return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory encoding %zu bytes", n); }
    if (!out.v && !(out.v = kiln_malloc(sizeof(int32_t)))) return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory");
    *ids = out.v;
    *n_ids = out.n;
    return KILN_OK;
}

/* The bytes as Rust's String::from_utf8_lossy makes them: each maximal invalid part -> U+FFFD. */
static size_t utf8_lossy(const uint8_t *s, size_t n, uint8_t *o) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = tk_utf8_char(s + i, n - i, &cp);
        if (len) { memcpy(o + k, s + i, (size_t)len); k += (size_t)len; i += (size_t)len; continue; }
        /* the longest prefix of a valid sequence: a good lead byte and its good continuations */
        size_t bad = 1;
        uint8_t c = s[i];
        int want = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
        for (int j = 1; j < want && i + (size_t)j < n; j++) {
            uint8_t lo = 0x80, hi = 0xBF, d = s[i + (size_t)j];
            if (j == 1) { if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
            if (d < lo || d > hi) break;
            bad++;
        }
        i += bad;
        k += tk_utf8_put(0xFFFD, o + k);
    }
    return k;
}

kiln_status kiln_tokenizer_decode(const kiln_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
    if (!t || (!ids && n) || !text) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_decode: NULL argument");
    *text = NULL;
    if (len) *len = 0;
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_ids || !t->tok[ids[i]].s)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer: token id %d (at %zu) is out of range (vocabulary size %d)",
                                  (int)ids[i], i, t->n_ids);
        nb += t->tok[ids[i]].nb;
    }
    uint8_t *raw = kiln_malloc(nb + 1), *o = kiln_malloc(3 * nb + 1);   /* U+FFFD: 3 bytes per bad byte at most */
    if (!raw || !o) { kiln_free(raw); kiln_free(o); return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory decoding"); }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) { memcpy(raw + k, t->tok[ids[i]].bytes, t->tok[ids[i]].nb); k += t->tok[ids[i]].nb; }
    size_t m = utf8_lossy(raw, k, o);
    kiln_free(raw);
    o[m] = 0;
    *text = (char *)o;
    if (len) *len = m;
    return KILN_OK;
}
