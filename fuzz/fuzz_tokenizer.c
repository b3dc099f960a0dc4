/* libFuzzer target: tokenizer.json (downloaded with models) and the text it encodes. The first
 * byte picks the mode: even, the rest is a tokenizer.json that, when it loads, encodes a fixed
 * text and decodes every id; odd, the rest is text (any bytes) for a fixed small tokenizer, whose
 * ids must decode back to the text when it is valid UTF-8. Build and run: bash fuzz/run.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/text.h"

static const char small[] =
    "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"Ġ\":2,\"ab\":3,\"Ġab\":4,\"<|x|>\":5},"
    "\"merges\":[\"a b\",\"Ġ ab\"]},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
    "\"decoder\":{\"type\":\"ByteLevel\"},\"added_tokens\":[{\"id\":5,\"content\":\"<|x|>\",\"special\":true}]}";

static void roundtrip(const kiln_tokenizer *t, const char *text, size_t n) {
    int32_t *ids;
    size_t k;
    if (kiln_tokenizer_encode(t, text, n, &ids, &k) != KILN_OK) return;
    for (size_t i = 0; i < k; i++)
        if (ids[i] < 0 || ids[i] >= kiln_tokenizer_vocab_size(t)) __builtin_trap();
    char *back;
    size_t len;
    if (kiln_tokenizer_decode(t, ids, k, &back, &len) != KILN_OK) __builtin_trap();
    kiln_text_free(back);
    kiln_text_free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    kiln_tokenizer *t = (kiln_tokenizer *)1;
    if (data[0] & 1) {
        if (kiln_tokenizer_from_json(small, sizeof small - 1, &t) != KILN_OK) __builtin_trap();
        roundtrip(t, (const char *)data + 1, size - 1);
        kiln_tokenizer_free(t);
        return 0;
    }
    if (kiln_tokenizer_from_json((const char *)data + 1, size - 1, &t) != KILN_OK) {
        if (t) __builtin_trap();   /* failure must leave *out NULL */
        return 0;
    }
    static const char text[] = "Hello  world's 123 \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80\n\n <|x|> ab";
    roundtrip(t, text, sizeof text - 1);
    for (int32_t id = -1; id <= kiln_tokenizer_vocab_size(t) && id < 4096; id++) {
        const uint8_t *b;
        size_t n;
        (void)kiln_tokenizer_token_bytes(t, id, &b, &n);
    }
    kiln_tokenizer_free(t);
    return 0;
}
