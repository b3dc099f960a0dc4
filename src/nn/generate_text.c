/* Generation from text: the prompt encoded by a tokenizer (given, the model's own from its
 * Hugging Face folder, or bytes for a model of vocabulary 256), kiln_generate, the ids decoded.
 * Also the tokenizer a model carries (kiln_model_set_tokenizer / kiln_model_tokenizer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_model.h"
#include "kiln/text.h"
#include "kiln/io.h"

kiln_status kiln_model_set_tokenizer(kiln_model *m, kiln_tokenizer *t) {
    if (!m) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_set_tokenizer: NULL model");
    if (m->tokenizer != t) kiln_tokenizer_free(m->tokenizer);
    m->tokenizer = t;
    return KILN_OK;
}

const kiln_tokenizer *kiln_model_tokenizer(const kiln_model *m) { return m ? m->tokenizer : NULL; }

kiln_status nn_tokenizer_from_checkpoint(kiln_model *m, const char *path, const kiln_safetensors *f) {
    const char *json = kiln_safetensors_meta(f, "kiln.tokenizer");
    if (!json) return KILN_OK;
    kiln_tokenizer *t = NULL;
    kiln_status st = kiln_tokenizer_from_json(json, strlen(json), &t);
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return kiln_set_error(st, "checkpoint '%s': metadata 'kiln.tokenizer' (corrupt file?): %s", path, msg);
    }
    return kiln_model_set_tokenizer(m, t);
}

/* the token vocabulary: the input_dim of the model's (first) Embedding layer; 0 when none */
static int model_vocab(const kiln_model *m) {
    for (int i = 0; i < m->n_layers; i++)
        if (m->layers[i]->kind == NN_EMBEDDING) return m->layers[i]->input_dim;
    return 0;
}

/* UTF-8 / bytes of ids: through t, or each id a byte (t NULL) */
static kiln_status decode(const kiln_tokenizer *t, const int32_t *ids, int n, char **text, size_t *len) {
    if (t) {
        kiln_status st = kiln_tokenizer_decode(t, ids, (size_t)n, text, len);
        return st ? kiln_set_error(st, "kiln_generate_text: %s (the model's vocabulary is larger than the tokenizer's?)", kiln_last_error()) : KILN_OK;
    }
    char *s = kiln_malloc((size_t)n + 1);
    if (!s) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_generate_text: out of host memory");
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] > 255) {
            kiln_free(s);
            return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate_text: id %d is not a byte (byte-level text without a tokenizer)", ids[i]);
        }
        s[i] = (char)ids[i];
    }
    s[n] = 0;
    *text = s;
    *len = (size_t)n;
    return KILN_OK;
}

kiln_status kiln_generate_text(kiln_model *m, const kiln_tokenizer *t, const char *prompt, size_t n, const kiln_generate_opts *o,
                               char **text, int32_t **ids, int *n_ids) {
    if (!m || !prompt || !o || (!text && !ids)) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate_text: needs a model, a prompt, options and an output");
    if (text) *text = NULL;
    if (ids) *ids = NULL;
    if (n_ids) *n_ids = 0;
    if (!t) t = m->tokenizer;
    int vocab = model_vocab(m);
    if (!t && vocab != 256)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate_text: model '%s' has a vocabulary of %d tokens, not the 256 bytes, and no tokenizer: "
                              "give one (kiln_tokenizer_load of its tokenizer.json) or the prompt as ids (kiln_generate)", m->name, vocab);
    if (!n) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate_text: the prompt is empty (it needs at least one token)");
    int32_t *p = NULL, *out = NULL;
    size_t np = 0;
    int nout = 0;
    kiln_status st = KILN_OK;
    if (t) st = kiln_tokenizer_encode(t, prompt, n, &p, &np);
    else if (n > (size_t)1 << 30) st = kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate_text: a prompt of %zu bytes is too long", n);
    else if (!(p = kiln_malloc(n * sizeof *p))) st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_generate_text: out of host memory");
    else for (np = 0; np < n; np++) p[np] = (uint8_t)prompt[np];
    if (!st && np > (size_t)1 << 30) st = kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate_text: a prompt of %zu tokens is too long", np);
    for (size_t i = 0; !st && i < np; i++)
        if (p[i] >= vocab)
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_generate_text: the tokenizer gives the prompt token id %d, outside model '%s''s vocabulary of %d",
                                p[i], m->name, vocab);
    if (!st) st = kiln_generate(m, p, (int)np, o, &out, &nout);
    kiln_text_free(p);
    size_t len;
    if (!st && text) st = decode(t, out, nout, text, &len);
    if (!st && ids) { *ids = out; out = NULL; }
    if (!st && n_ids) *n_ids = nout;
    free(out);
    return st;
}
