/* Byte-level BPE training, as `tokenizers`' BpeTrainer with the ByteLevel pre-tokenizer: words
 * counted line by line, then merges of the most frequent adjacent pair (ties: the smaller pair of
 * ids), each merge applied left to right in every word that holds it. */
#include <string.h>
#include "core/core.h"
#include "text/text_internal.h"

typedef struct {
    int32_t *sym;   /* the word's symbols */
    int n;
    int64_t count;
} tw_word;

typedef struct {
    tw_word *w;
    int n, cap;
    int32_t *slot;   /* hash of the words' bytes -> index; -1 empty */
    uint8_t **key;   /* each word's bytes, for the hash */
    size_t *keyn;
    size_t scap;
} tw_words;

static kiln_status oom(void) { return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer train: out of memory"); }

static kiln_status words_grow(tw_words *ws) {
    int cap = ws->cap ? 2 * ws->cap : 1024;
    tw_word *w = kiln_realloc(ws->w, (size_t)cap * sizeof *w);
    if (w) ws->w = w;
    uint8_t **k = kiln_realloc(ws->key, (size_t)cap * sizeof *k);
    if (k) ws->key = k;
    size_t *kn = kiln_realloc(ws->keyn, (size_t)cap * sizeof *kn);
    if (kn) ws->keyn = kn;
    int32_t *slot = kiln_malloc(4 * (size_t)cap * sizeof *slot);
    if (!w || !k || !kn || !slot) { kiln_free(slot); return oom(); }
    memset(slot, 0xFF, 4 * (size_t)cap * sizeof *slot);
    ws->scap = 4 * (size_t)cap;
    for (int i = 0; i < ws->n; i++) {
        size_t h = tk_hash(ws->key[i], ws->keyn[i]) & (ws->scap - 1);
        while (slot[h] >= 0) h = (h + 1) & (ws->scap - 1);
        slot[h] = i;
    }
    kiln_free(ws->slot);
    ws->slot = slot;
    ws->cap = cap;
    return KILN_OK;
}

/* Counts one pre-token (raw bytes) as a word of byte symbols. */
static kiln_status add_word(tw_words *ws, const uint8_t *s, size_t n, const int32_t *byte_sym) {
    if (ws->n == ws->cap) { kiln_status st = words_grow(ws); if (st != KILN_OK) return st; }
    size_t h = tk_hash(s, n) & (ws->scap - 1);
    for (; ws->slot[h] >= 0; h = (h + 1) & (ws->scap - 1)) {
        int i = ws->slot[h];
        if (ws->keyn[i] == n && !memcmp(ws->key[i], s, n)) { ws->w[i].count++; return KILN_OK; }
    }
    tw_word *w = &ws->w[ws->n];
    w->sym = kiln_malloc(n * sizeof *w->sym);
    ws->key[ws->n] = kiln_malloc(n);
    if (!w->sym || !ws->key[ws->n]) { kiln_free(w->sym); kiln_free(ws->key[ws->n]); return oom(); }
    memcpy(ws->key[ws->n], s, n);
    ws->keyn[ws->n] = n;
    for (size_t i = 0; i < n; i++) w->sym[i] = byte_sym[s[i]];
    w->n = (int)n;
    w->count = 1;
    ws->slot[h] = ws->n++;
    return KILN_OK;
}

static void words_free(tw_words *ws) {
    for (int i = 0; i < ws->n; i++) { kiln_free(ws->w[i].sym); kiln_free(ws->key[i]); }
    kiln_free(ws->w); kiln_free(ws->key); kiln_free(ws->keyn); kiln_free(ws->slot);
}

/* The text's words: each line (with its "\n") pre-tokenized on its own, as `tokenizers` reads
 * training files. */
static kiln_status count_words(const uint8_t *s, size_t n, const int32_t *byte_sym, tw_words *ws) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = tk_utf8_char(s + i, n - i, &cp);
        if (!len) return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer train: the text is not valid UTF-8 (byte 0x%02X at offset %zu)", s[i], i);
        i += (size_t)len;
    }
    for (size_t ls = 0; ls < n;) {
        const uint8_t *nl = memchr(s + ls, '\n', n - ls);
        size_t le = nl ? (size_t)(nl - s) + 1 : n;
        for (size_t i = ls; i < le;) {
            size_t e = ls + tk_pretoken_end(s + ls, le - ls, i - ls);
            kiln_status st = add_word(ws, s + i, e - i, byte_sym);
            if (st != KILN_OK) return st;
            i = e;
        }
        ls = le;
    }
    return KILN_OK;
}

/* Pair counts kept up to date merge by merge, as `tokenizers` does: each pair's count, the words
 * that hold it (a list that may hold stale or repeated entries: merging a word without the pair
 * changes nothing), and a max-heap of (count, pair) whose stale entries are re-pushed with their
 * current count when they reach the top; so the top is the largest current count, ties to the
 * smaller (a, b). */
typedef struct {
    int32_t a, b;
    int64_t count;
    int32_t *words;
    int n_words, cap_words;
} tp_pair;

typedef struct {
    int64_t count;
    int32_t a, b, rec;
} tp_entry;

typedef struct {
    tk_pairmap map;      /* pair -> index in rec (the map's rank field) */
    tp_pair *rec;
    int n_rec;
    tp_entry *heap;
    size_t n_heap, cap_heap;
    bool oom;
} tp_state;

static bool entry_above(const tp_entry *x, const tp_entry *y) {
    if (x->count != y->count) return x->count > y->count;
    return x->a != y->a ? x->a < y->a : x->b < y->b;
}

static void heap_push(tp_state *p, tp_entry e) {
    if (p->n_heap == p->cap_heap) {
        size_t cap = p->cap_heap ? 2 * p->cap_heap : 4096;
        tp_entry *h = kiln_realloc(p->heap, cap * sizeof *h);
        if (!h) { p->oom = true; return; }
        p->heap = h;
        p->cap_heap = cap;
    }
    size_t i = p->n_heap++;
    while (i > 0 && entry_above(&e, &p->heap[(i - 1) / 2])) { p->heap[i] = p->heap[(i - 1) / 2]; i = (i - 1) / 2; }
    p->heap[i] = e;
}

static tp_entry heap_pop(tp_state *p) {
    tp_entry top = p->heap[0], last = p->heap[--p->n_heap];
    size_t i = 0, n = p->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_above(&p->heap[c + 1], &p->heap[c])) c++;
        if (!entry_above(&p->heap[c], &last)) break;
        p->heap[i] = p->heap[c];
        i = c;
    }
    if (n) p->heap[i] = last;
    return top;
}

/* The record of (a, b), created when new. */
static tp_pair *pair_rec(tp_state *p, int32_t a, int32_t b) {
    size_t h = tk_pairmap_find(&p->map, a, b);
    if (p->map.key[h]) return &p->rec[p->map.rank[h]];
    p->map.key[h] = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    p->map.rank[h] = p->n_rec;
    tp_pair *r = &p->rec[p->n_rec++];
    *r = (tp_pair){ .a = a, .b = b };
    return r;
}

/* Adds delta occurrences of (a, b) in word w; a pair that gains is (re)pushed on the heap. */
static void pair_add(tp_state *p, int32_t a, int32_t b, int64_t delta, int32_t w) {
    tp_pair *r = pair_rec(p, a, b);
    r->count += delta;
    if (delta <= 0) return;
    if (r->n_words == r->cap_words) {
        int cap = r->cap_words ? 2 * r->cap_words : 4;
        int32_t *v = kiln_realloc(r->words, (size_t)cap * sizeof *v);
        if (!v) { p->oom = true; return; }
        r->words = v;
        r->cap_words = cap;
    }
    if (!r->n_words || r->words[r->n_words - 1] != w) r->words[r->n_words++] = w;
    heap_push(p, (tp_entry){ r->count, a, b, (int32_t)(r - p->rec) });
}

/* Merges (a, b) into m left to right in word w, updating the pair counts. */
static void merge_word(tp_state *p, tw_word *w, int32_t wi, int32_t a, int32_t b, int32_t m) {
    int o = 0;
    for (int k = 0; k < w->n; k++) {
        if (k + 1 < w->n && w->sym[k] == a && w->sym[k + 1] == b) {
            pair_add(p, a, b, -w->count, wi);
            if (o > 0) { pair_add(p, w->sym[o - 1], a, -w->count, wi); pair_add(p, w->sym[o - 1], m, w->count, wi); }
            if (k + 2 < w->n) { pair_add(p, b, w->sym[k + 2], -w->count, wi); pair_add(p, m, w->sym[k + 2], w->count, wi); }
            w->sym[o++] = m;
            k++;
        } else {
            w->sym[o++] = w->sym[k];
        }
    }
    w->n = o;
}

static kiln_status train_merges(kiln_tokenizer *t, tw_words *ws, int vocab_size, int *n_tok) {
    size_t total = 0;
    for (int i = 0; i < ws->n; i++) total += (size_t)ws->w[i].n;
    tp_state p = { 0 };
    /* distinct pairs: at most those of the words plus two new ones per merge event */
    kiln_status st = tk_pairmap_init(&p.map, 3 * total + 1);
    if (st != KILN_OK) return st;
    if (!(p.rec = kiln_malloc((3 * total + 1) * sizeof *p.rec))) { tk_pairmap_free(&p.map); return oom(); }
    for (int i = 0; i < ws->n; i++)
        for (int k = 0; k + 1 < ws->w[i].n; k++) pair_add(&p, ws->w[i].sym[k], ws->w[i].sym[k + 1], ws->w[i].count, i);
    char *buf = NULL;
    while (*n_tok < vocab_size && !p.oom && p.n_heap) {
        tp_entry e = heap_pop(&p);
        tp_pair *r = &p.rec[e.rec];
        if (e.count != r->count) {   /* stale: back with its current count */
            if (r->count > 0) heap_push(&p, (tp_entry){ r->count, r->a, r->b, e.rec });
            continue;
        }
        if (e.count < 1) break;
        int32_t a = e.a, b = e.b;
        size_t an = t->tok[a].n, bn = t->tok[b].n;
        kiln_free(buf);
        if (!(buf = kiln_malloc(an + bn + 1))) { p.oom = true; break; }
        memcpy(buf, t->tok[a].s, an);
        memcpy(buf + an, t->tok[b].s, bn);
        int32_t m = tk_strmap_get(&t->vocab, t->tok, buf, an + bn);
        if (m < 0) {
            m = (*n_tok)++;
            if ((st = tk_set_token(t, m, buf, an + bn, true)) != KILN_OK) break;
            tk_strmap_put(&t->vocab, t->tok, m);
        }
        t->merges[t->n_merges][0] = a;
        t->merges[t->n_merges++][1] = b;
        /* the word list may grow while merging (a == m cannot happen: m is longer) */
        int32_t *list = r->words;
        int nw = r->n_words;
        r->words = NULL;
        r->n_words = r->cap_words = 0;
        for (int i = 0; i < nw; i++) merge_word(&p, &ws->w[list[i]], list[i], a, b, m);
        kiln_free(list);
    }
    if (p.oom && st == KILN_OK) st = oom();
    kiln_free(buf);
    for (int i = 0; i < p.n_rec; i++) kiln_free(p.rec[i].words);
    kiln_free(p.rec);
    kiln_free(p.heap);
    tk_pairmap_free(&p.map);
    return st;
}

kiln_status kiln_tokenizer_train(const char *text, size_t n, int vocab_size, const char *const *special, int n_special,
                                 kiln_tokenizer **out) {
    if ((!text && n) || !out || n_special < 0 || (n_special && !special))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_train: NULL argument");
    *out = NULL;
    if (vocab_size < 256 + n_special || vocab_size > TK_MAX_IDS)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer train: vocab_size %d must be in [%d, %d] (the %d special tokens and 256 byte symbols come first)",
                              vocab_size, 256 + n_special, TK_MAX_IDS, n_special);
    kiln_tokenizer *t = tk_new(vocab_size);
    kiln_status st = t ? KILN_OK : oom();
    if (st == KILN_OK) st = tk_strmap_init(&t->vocab, (size_t)vocab_size);
    if (st == KILN_OK && (!(t->merges = kiln_malloc((size_t)vocab_size * sizeof *t->merges)) ||
                          (n_special && !(t->added = kiln_calloc((size_t)n_special, sizeof *t->added)))))
        st = oom();
    int n_tok = 0;
    for (int i = 0; st == KILN_OK && i < n_special; i++) {
        size_t len = special[i] ? strlen(special[i]) : 0;
        if (!len || tk_strmap_get(&t->vocab, t->tok, special[i], len) >= 0) {
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer train: special token %d is empty or repeated", i);
            break;
        }
        if ((st = tk_set_token(t, n_tok, special[i], len, true)) != KILN_OK) break;
        tk_strmap_put(&t->vocab, t->tok, n_tok);
        t->added[t->n_added++] = (tk_added){ .id = n_tok, .special = true };
        n_tok++;
    }
    /* the 256 byte symbols in code-point order, as the trainer sorts its alphabet */
    int32_t byte_sym[256];
    for (uint32_t cp = 0; st == KILN_OK && cp < 256 + 68; cp++) {
        int b = tk_char_byte(cp);
        if (b < 0) continue;
        uint8_t u[4];
        size_t len = tk_utf8_put(cp, u);
        if (tk_strmap_get(&t->vocab, t->tok, (const char *)u, len) >= 0) {
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer train: a special token is a byte symbol");
            break;
        }
        if ((st = tk_set_token(t, n_tok, (const char *)u, len, true)) != KILN_OK) break;
        tk_strmap_put(&t->vocab, t->tok, n_tok);
        byte_sym[b] = n_tok++;
    }
    tw_words ws = { 0 };
    if (st == KILN_OK) st = count_words((const uint8_t *)text, n, byte_sym, &ws);
    if (st == KILN_OK) st = train_merges(t, &ws, vocab_size, &n_tok);
    words_free(&ws);
    if (t) t->n_ids = n_tok;
    if (st == KILN_OK) st = tk_finish(t);
    if (st != KILN_OK) { kiln_tokenizer_free(t); return st; }
    *out = t;
    return KILN_OK;
}
