/* Byte-level BPE internals shared by the tokenizer's reader/writer, encoder and trainer. */
#ifndef KILN_TEXT_INTERNAL_H
#define KILN_TEXT_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kiln/text.h"

#define TK_MAX_IDS (1 << 24)   /* ids beyond this are refused before allocating for them */

typedef struct {
    char *s;          /* the token as in the vocabulary (UTF-8, NUL-terminated); NULL: no such id */
    size_t n;
    uint8_t *bytes;   /* what it decodes to (through the byte-level map when it has one) */
    size_t nb;
    bool in_model;    /* in model.vocab (else only in added_tokens) */
} tk_token;

typedef struct {
    int32_t id;
    bool special, lstrip, rstrip, normalized;
} tk_added;

/* Open-addressing hash tables: token strings -> ids, merge pairs -> (rank, new id). */
typedef struct {
    int32_t *slot;    /* ids, -1 empty */
    size_t cap;       /* a power of two */
} tk_strmap;
typedef struct {
    uint64_t *key;    /* (a << 32 | b) + 1; 0 empty */
    int32_t *rank, *merged;
    size_t cap, n;
} tk_pairmap;

struct kiln_tokenizer {
    int n_ids;
    tk_token *tok;
    tk_strmap vocab;
    int n_merges;
    int32_t (*merges)[2];
    tk_pairmap pairs;
    int32_t byte_id[256];   /* id of each byte's symbol, -1 when the vocabulary lacks it */
    int n_added;
    tk_added *added;
    int32_t unk;            /* -1: none (symbols missing from the vocabulary are dropped) */
    bool add_prefix_space, use_regex, trim_offsets, ignore_merges, bytelevel_decoder;
};

/* GPT-2's byte <-> symbol map (bytes_to_unicode): the code point standing for byte b. */
uint32_t tk_byte_char(uint8_t b);
/* The byte a code point stands for, or -1. */
int tk_char_byte(uint32_t cp);
/* UTF-8: the length (1..4) of a valid character at s[0..n), 0 when invalid; *cp its code point. */
int tk_utf8_char(const uint8_t *s, size_t n, uint32_t *cp);
size_t tk_utf8_put(uint32_t cp, uint8_t *out);
/* The end of the pre-token starting at s[i] under GPT-2's split regex. */
size_t tk_pretoken_end(const uint8_t *s, size_t n, size_t i);

uint64_t tk_hash(const void *p, size_t n);
/* String map over t->tok strings. */
kiln_status tk_strmap_init(tk_strmap *m, size_t want);
void tk_strmap_free(tk_strmap *m);
int32_t tk_strmap_get(const tk_strmap *m, const tk_token *tok, const char *s, size_t n);
void tk_strmap_put(tk_strmap *m, const tk_token *tok, int32_t id);
kiln_status tk_pairmap_init(tk_pairmap *m, size_t want);
void tk_pairmap_free(tk_pairmap *m);
/* The slot of (a, b): its rank/merged are valid when key[slot] != 0. */
size_t tk_pairmap_find(const tk_pairmap *m, int32_t a, int32_t b);

/* Sets tok[id]'s string (copied) and its decoded bytes. */
kiln_status tk_set_token(kiln_tokenizer *t, int32_t id, const char *s, size_t n, bool in_model);
/* Builds byte_id and the merge table from t->merges; errors name the bad merge. */
kiln_status tk_finish(kiln_tokenizer *t);
/* An empty tokenizer with room for n_ids ids (GPT-2 options). */
kiln_tokenizer *tk_new(int n_ids);
#endif
