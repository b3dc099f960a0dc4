/* tokenizer.json (Hugging Face `tokenizers`): the GPT-2 style byte-level BPE read and written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "nn/nn_json.h"
#include "text/text_internal.h"

#define TK_MAX_FILE (1ull << 30)

static kiln_status bad(const char *what) { return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: %s", what); }

/* A member that must be a bool when present (absent: dflt). */
static bool get_bool(const cJSON *o, const char *k, bool dflt, kiln_status *s) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v)) return dflt;
    if (!cJSON_IsBool(v)) { *s = kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: \"%s\" must be true or false, not %s", k, nn_json_kind(v)); return dflt; }
    return cJSON_IsTrue(v);
}

/* A member that must be null, absent or the empty string (the options Kiln's BPE lacks). */
static kiln_status need_empty(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v) || (cJSON_IsString(v) && !v->valuestring[0]) || cJSON_IsFalse(v)) return KILN_OK;
    return kiln_set_error(KILN_UNSUPPORTED, "tokenizer.json: model.%s is not supported (only GPT-2 style byte-level BPE)", k);
}

/* The ByteLevel pre-tokenizer, decoder, and the settings around the model. */
static kiln_status read_pipeline(kiln_tokenizer *t, const cJSON *root) {
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (norm && !cJSON_IsNull(norm)) return kiln_set_error(KILN_UNSUPPORTED, "tokenizer.json: a normalizer is not supported (only GPT-2 style byte-level BPE, normalizer null)");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(pre, "type");
    if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "ByteLevel"))
        return kiln_set_error(KILN_UNSUPPORTED, "tokenizer.json: pre_tokenizer %s is not supported (only ByteLevel)",
                              cJSON_IsString(ty) ? ty->valuestring : nn_json_kind(pre));
    kiln_status s = KILN_OK;
    t->add_prefix_space = get_bool(pre, "add_prefix_space", true, &s);
    t->use_regex = get_bool(pre, "use_regex", true, &s);
    t->trim_offsets = get_bool(pre, "trim_offsets", true, &s);
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const cJSON *dty = cJSON_GetObjectItemCaseSensitive(dec, "type");
    if (dec && !cJSON_IsNull(dec) && (!cJSON_IsString(dty) || strcmp(dty->valuestring, "ByteLevel")))
        return kiln_set_error(KILN_UNSUPPORTED, "tokenizer.json: decoder %s is not supported (only ByteLevel or null)",
                              cJSON_IsString(dty) ? dty->valuestring : nn_json_kind(dec));
    t->bytelevel_decoder = dec && !cJSON_IsNull(dec);
    return s;
}

/* One merge: "a b" or ["a", "b"], both tokens in the vocabulary. */
static kiln_status read_merge(kiln_tokenizer *t, const cJSON *m, int r) {
    const char *a = NULL, *b = NULL;
    size_t an = 0, bn = 0;
    if (cJSON_IsString(m)) {
        const char *sp = strchr(m->valuestring, ' ');
        if (!sp || strchr(sp + 1, ' '))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: merge %d (\"%.40s\") is not two tokens separated by one space", r, m->valuestring);
        a = m->valuestring; an = (size_t)(sp - a); b = sp + 1; bn = strlen(b);
    } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) && cJSON_IsString(m->child->next)) {
        a = m->child->valuestring; an = strlen(a); b = m->child->next->valuestring; bn = strlen(b);
    } else {
        return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: merge %d is %s, not \"a b\" or [\"a\", \"b\"]", r, nn_json_kind(m));
    }
    int32_t ia = tk_strmap_get(&t->vocab, t->tok, a, an), ib = tk_strmap_get(&t->vocab, t->tok, b, bn);
    if (ia < 0 || ib < 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: merge %d: token \"%.*s\" is not in the vocabulary", r,
                              (int)(ia < 0 ? (an > 40 ? 40 : an) : (bn > 40 ? 40 : bn)), ia < 0 ? a : b);
    t->merges[r][0] = ia;
    t->merges[r][1] = ib;
    return KILN_OK;
}

/* The largest id among model.vocab and added_tokens, checked. */
static kiln_status count_ids(const cJSON *vocab, const cJSON *added, int *n_ids) {
    int64_t top = -1, id;
    for (const cJSON *v = vocab->child; v; v = v->next) {
        if (!nn_json_int(v, &id) || id < 0 || id >= TK_MAX_IDS)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: model.vocab[\"%.40s\"] is %s, not an id in [0, %d)",
                                  v->string ? v->string : "", nn_json_kind(v), TK_MAX_IDS);
        if (id > top) top = id;
    }
    for (const cJSON *a = added ? added->child : NULL; a; a = a->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "id"), *c = cJSON_GetObjectItemCaseSensitive(a, "content");
        if (!nn_json_int(v, &id) || id < 0 || id >= TK_MAX_IDS || !cJSON_IsString(c) || !c->valuestring[0])
            return bad("an added_tokens entry lacks a valid \"id\" or a non-empty \"content\"");
        if (id > top) top = id;
    }
    *n_ids = (int)(top + 1);
    return KILN_OK;
}

static kiln_status read_vocab(kiln_tokenizer *t, const cJSON *vocab) {
    int64_t id;
    for (const cJSON *v = vocab->child; v; v = v->next) {
        nn_json_int(v, &id);
        if (t->tok[id].s) return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: id %d is given to two tokens (\"%.40s\" and \"%.40s\")",
                                                (int)id, t->tok[id].s, v->string);
        if (tk_strmap_get(&t->vocab, t->tok, v->string, strlen(v->string)) >= 0)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: token \"%.40s\" appears twice in model.vocab", v->string);
        kiln_status s = tk_set_token(t, (int32_t)id, v->string, strlen(v->string), true);
        if (s != KILN_OK) return s;
        tk_strmap_put(&t->vocab, t->tok, (int32_t)id);
    }
    return KILN_OK;
}

static kiln_status read_added(kiln_tokenizer *t, const cJSON *added) {
    int n = added ? cJSON_GetArraySize(added) : 0;
    if (n && !(t->added = kiln_calloc((size_t)n, sizeof *t->added))) return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory");
    for (const cJSON *a = added ? added->child : NULL; a; a = a->next) {
        int64_t id;
        nn_json_int(cJSON_GetObjectItemCaseSensitive(a, "id"), &id);
        const char *c = cJSON_GetObjectItemCaseSensitive(a, "content")->valuestring;
        kiln_status s = KILN_OK;
        tk_added *ad = &t->added[t->n_added++];
        ad->id = (int32_t)id;
        ad->special = get_bool(a, "special", false, &s);
        ad->lstrip = get_bool(a, "lstrip", false, &s);
        ad->rstrip = get_bool(a, "rstrip", false, &s);
        ad->normalized = get_bool(a, "normalized", false, &s);
        if (get_bool(a, "single_word", false, &s))
            return kiln_set_error(KILN_UNSUPPORTED, "tokenizer.json: added token \"%.40s\": single_word is not supported", c);
        if (s != KILN_OK) return s;
        int32_t have = tk_strmap_get(&t->vocab, t->tok, c, strlen(c));
        if (have >= 0 && have != id)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: added token \"%.40s\" has id %d but the vocabulary gives it %d", c, (int)id, (int)have);
        if (have >= 0) continue;
        if (t->tok[id].s) return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: added token \"%.40s\" reuses id %d of \"%.40s\"", c, (int)id, t->tok[id].s);
        if ((s = tk_set_token(t, (int32_t)id, c, strlen(c), false)) != KILN_OK) return s;
        tk_strmap_put(&t->vocab, t->tok, (int32_t)id);
    }
    return KILN_OK;
}

static kiln_status read_model(kiln_tokenizer **out, const cJSON *root) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!cJSON_IsObject(model)) return bad("no \"model\" object");
    if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "BPE"))
        return kiln_set_error(KILN_UNSUPPORTED, "tokenizer.json: model type %s is not supported (only BPE)", cJSON_IsString(ty) ? ty->valuestring : nn_json_kind(ty));
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab"), *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), *drop = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (!cJSON_IsObject(vocab)) return bad("model.vocab is not an object of token: id");
    if (merges && !cJSON_IsArray(merges)) return bad("model.merges is not a list");
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added)) return bad("added_tokens is not a list");
    if (added && !cJSON_IsArray(added)) added = NULL;
    if (drop && !cJSON_IsNull(drop) && !(cJSON_IsNumber(drop) && drop->valuedouble == 0.0))
        return kiln_set_error(KILN_UNSUPPORTED, "tokenizer.json: BPE dropout is not supported (encoding must be deterministic)");
    kiln_status s;
    if ((s = need_empty(model, "continuing_subword_prefix")) || (s = need_empty(model, "end_of_word_suffix")) ||
        (s = need_empty(model, "byte_fallback")))
        return s;
    int n_ids = 0;
    if ((s = count_ids(vocab, added, &n_ids)) != KILN_OK) return s;
    kiln_tokenizer *t = *out = tk_new(n_ids);
    if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory for %d ids", n_ids);
    if ((s = read_pipeline(t, root)) != KILN_OK) return s;
    t->ignore_merges = get_bool(model, "ignore_merges", false, &s);
    if (s != KILN_OK || (s = tk_strmap_init(&t->vocab, (size_t)n_ids)) != KILN_OK || (s = read_vocab(t, vocab)) != KILN_OK ||
        (s = read_added(t, added)) != KILN_OK)
        return s;
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (cJSON_IsString(unk) && (t->unk = kiln_tokenizer_token_id(t, unk->valuestring)) < 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: unk_token \"%.40s\" is not in the vocabulary", unk->valuestring);
    t->n_merges = merges ? cJSON_GetArraySize(merges) : 0;
    if (t->n_merges && !(t->merges = kiln_malloc((size_t)t->n_merges * sizeof *t->merges)))
        return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory for %d merges", t->n_merges);
    int r = 0;
    for (const cJSON *m = merges ? merges->child : NULL; m; m = m->next, r++)
        if ((s = read_merge(t, m, r)) != KILN_OK) return s;
    return tk_finish(t);
}

kiln_status kiln_tokenizer_from_json(const char *json, size_t n, kiln_tokenizer **out) {
    if (!json || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_from_json: NULL argument");
    *out = NULL;
    char why[160];
    char *copy = kiln_malloc(n + 1);
    if (!copy) return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory for %zu bytes of JSON", n);
    memcpy(copy, json, n);
    copy[n] = 0;
    if (strlen(copy) != n) { kiln_free(copy); return bad("a NUL byte in the JSON text"); }
    cJSON *root = nn_json_parse(copy, why, sizeof why);
    kiln_free(copy);
    if (!root) return kiln_set_error(KILN_INVALID_ARGUMENT, "tokenizer.json: not JSON: %s", why);
    kiln_tokenizer *t = NULL;
    kiln_status s = cJSON_IsObject(root) ? read_model(&t, root) : bad("the top level is not an object");
    cJSON_Delete(root);
    if (s != KILN_OK) { kiln_tokenizer_free(t); return s; }
    *out = t;
    return KILN_OK;
}

kiln_status kiln_tokenizer_load(const char *path, kiln_tokenizer **out) {
    if (!path || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_load: NULL argument");
    *out = NULL;
    uint8_t *buf;
    size_t n;
    kiln_status s = kiln_file_read_all(path, "tokenizer file", TK_MAX_FILE, &buf, &n);
    if (s != KILN_OK) return s;
    s = kiln_tokenizer_from_json((const char *)buf, n, out);
    kiln_free(buf);
    if (s != KILN_OK) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return kiln_set_error(s, "%s: %s", path, msg);
    }
    return KILN_OK;
}

/* The GPT-2 layout of `tokenizers`' own files. */
static cJSON *bytelevel(bool prefix, bool trim) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "ByteLevel");
    cJSON_AddBoolToObject(o, "add_prefix_space", prefix);
    cJSON_AddBoolToObject(o, "trim_offsets", trim);
    cJSON_AddBoolToObject(o, "use_regex", true);
    return o;
}

static cJSON *build_json(const kiln_tokenizer *t) {
    cJSON *root = cJSON_CreateObject(), *added = cJSON_CreateArray(), *model = cJSON_CreateObject();
    cJSON *vocab = cJSON_CreateObject(), *merges = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON_AddItemToObject(root, "added_tokens", added);
    for (int i = 0; i < t->n_added; i++) {
        const tk_added *a = &t->added[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", a->id);
        cJSON_AddStringToObject(o, "content", t->tok[a->id].s);
        cJSON_AddBoolToObject(o, "single_word", false);
        cJSON_AddBoolToObject(o, "lstrip", a->lstrip);
        cJSON_AddBoolToObject(o, "rstrip", a->rstrip);
        cJSON_AddBoolToObject(o, "normalized", a->normalized);
        cJSON_AddBoolToObject(o, "special", a->special);
        cJSON_AddItemToArray(added, o);
    }
    cJSON_AddNullToObject(root, "normalizer");
    cJSON_AddItemToObject(root, "pre_tokenizer", bytelevel(t->add_prefix_space, t->trim_offsets));
    cJSON_AddItemToObject(root, "post_processor", bytelevel(true, false));
    if (t->bytelevel_decoder) cJSON_AddItemToObject(root, "decoder", bytelevel(true, true));
    else cJSON_AddNullToObject(root, "decoder");
    cJSON_AddItemToObject(root, "model", model);
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    if (t->unk >= 0) cJSON_AddStringToObject(model, "unk_token", t->tok[t->unk].s);
    else cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddBoolToObject(model, "fuse_unk", false);
    cJSON_AddBoolToObject(model, "byte_fallback", false);
    cJSON_AddBoolToObject(model, "ignore_merges", t->ignore_merges);
    cJSON_AddItemToObject(model, "vocab", vocab);
    for (int i = 0; i < t->n_ids; i++)
        if (t->tok[i].s && t->tok[i].in_model) cJSON_AddItemToObject(vocab, t->tok[i].s, cJSON_CreateNumber(i));
    /* "a b" strings load in every `tokenizers` version; pairs only where a token holds a space */
    bool spaced = false;
    for (int r = 0; r < t->n_merges && !spaced; r++)
        spaced = strchr(t->tok[t->merges[r][0]].s, ' ') || strchr(t->tok[t->merges[r][1]].s, ' ');
    for (int r = 0; r < t->n_merges; r++) {
        const char *a = t->tok[t->merges[r][0]].s, *b = t->tok[t->merges[r][1]].s;
        if (spaced) {
            const char *ab[2] = { a, b };
            cJSON_AddItemToArray(merges, cJSON_CreateStringArray(ab, 2));
            continue;
        }
        size_t an = strlen(a), bn = strlen(b);
        char *m = kiln_malloc(an + bn + 2);
        if (!m) { cJSON_Delete(root); return NULL; }
        memcpy(m, a, an); m[an] = ' '; memcpy(m + an + 1, b, bn + 1);
        cJSON_AddItemToArray(merges, cJSON_CreateString(m));
        kiln_free(m);
    }
    cJSON_AddItemToObject(model, "merges", merges);
    return root;
}

kiln_status kiln_tokenizer_to_json(const kiln_tokenizer *t, char **json) {
    if (!json) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_to_json: NULL out");
    *json = NULL;
    if (!t) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_to_json: NULL tokenizer");
    cJSON *root = build_json(t);
    *json = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return *json ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory writing its JSON");
}

kiln_status kiln_tokenizer_save(const kiln_tokenizer *t, const char *path) {
    if (!t || !path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_tokenizer_save: NULL argument");
    char *text = NULL;
    if (kiln_tokenizer_to_json(t, &text)) return kiln_set_error(KILN_OUT_OF_MEMORY, "tokenizer: out of memory writing %s", path);
    kiln_atomic_file af;
    kiln_status s = kiln_atomic_open(path, &af);
    if (s == KILN_OK) {
        if (fputs(text, af.f) < 0 || fputc('\n', af.f) < 0) {
            kiln_atomic_abort(&af);
            s = kiln_set_error(KILN_IO_ERROR, "tokenizer: cannot write %s", path);
        } else {
            s = kiln_atomic_commit(&af);
        }
    }
    free(text);
    return s;
}
