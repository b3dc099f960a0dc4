/* Byte-level BPE tokenizer (include/kiln/text.h): known ids of a hand-made tokenizer.json, merge
 * ranks, added tokens, add_prefix_space, encode/decode round trips, training then save/load,
 * and hostile files and inputs (clear errors, never a crash). `tokenizers` itself is the judge in
 * tests/cli/test_tokenizer_hf.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/text.h"

/* "hello world" in GPT-2 style: Ġ is the space's byte symbol. */
static const char *hand_json(const char *extra_vocab, const char *merges, const char *pre) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":15,\"content\":\"<|endoftext|>\",\"special\":true}],"
             "\"normalizer\":null,\"pre_tokenizer\":%s,\"decoder\":{\"type\":\"ByteLevel\"},"
             "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"vocab\":{\"h\":0,\"e\":1,\"l\":2,\"o\":3,"
             "\"\xc4\xa0\":4,\"w\":5,\"r\":6,\"d\":7,\"he\":8,\"ll\":9,\"hell\":10,\"hello\":11,\"\xc4\xa0w\":12,\"or\":13,"
             "\"\xc4\xa0wor\":14,\"<|endoftext|>\":15%s},\"merges\":%s}}",
             pre ? pre : "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}",
             extra_vocab ? extra_vocab : "",
             merges ? merges : "[\"h e\",\"l l\",\"he ll\",\"hell o\",\"\xc4\xa0 w\",\"o r\",\"\xc4\xa0w or\"]");
    return buf;
}

static kiln_tokenizer *load_str(const char *json) {
    kiln_tokenizer *t = NULL;
    CHECK_OK(kiln_tokenizer_from_json(json, strlen(json), &t));
    return t;
}

static int encode_eq(const kiln_tokenizer *t, const char *text, const int32_t *want, size_t nw) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (kiln_tokenizer_encode(t, text, strlen(text), &ids, &n) != KILN_OK) { fprintf(stderr, "encode: %s\n", kiln_last_error()); return 0; }
    int ok = n == nw && !memcmp(ids, want, n * sizeof *ids);
    if (!ok) {
        fprintf(stderr, "'%s' ->", text);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fputc('\n', stderr);
    }
    kiln_text_free(ids);
    return ok;
}

static void test_known_ids(void) {
    kiln_tokenizer *t = load_str(hand_json(NULL, NULL, NULL));
    if (!t) return;
    CHECK(kiln_tokenizer_vocab_size(t) == 16);
    CHECK(kiln_tokenizer_token_id(t, "<|endoftext|>") == 15);
    CHECK(kiln_tokenizer_token_id(t, "nope") == -1);
    /* "hello" merges to 11; " world": Ġ w -> Ġw, o r -> or, Ġw or -> Ġwor, then l, d */
    CHECK(encode_eq(t, "hello world<|endoftext|>hello", (int32_t[]){ 11, 14, 2, 7, 15, 11 }, 6));
    /* bytes the vocabulary lacks (x, !) are dropped, as `tokenizers` does without unk */
    CHECK(encode_eq(t, "hex!", (int32_t[]){ 8 }, 1));
    /* rank decides, not position: "ll" (rank 1) before "he" would allow nothing else */
    CHECK(encode_eq(t, "hell", (int32_t[]){ 10 }, 1));
    CHECK(encode_eq(t, "", (int32_t[]){ 0 }, 0));
    char *s = NULL;
    size_t len = 0;
    CHECK_OK(kiln_tokenizer_decode(t, (int32_t[]){ 11, 14, 2, 7, 15 }, 5, &s, &len));
    CHECK(s && len == 24 && !strcmp(s, "hello world<|endoftext|>"));
    kiln_text_free(s);
    const uint8_t *b;
    size_t nb;
    CHECK_OK(kiln_tokenizer_token_bytes(t, 14, &b, &nb));
    CHECK(nb == 4 && !memcmp(b, " wor", 4));
    CHECK(kiln_tokenizer_token_bytes(t, 16, &b, &nb) == KILN_INVALID_ARGUMENT && !b);
    CHECK(kiln_tokenizer_decode(t, (int32_t[]){ 3, 99 }, 2, &s, &len) == KILN_INVALID_ARGUMENT && !s);
    CHECK(strstr(kiln_last_error(), "99"));
    /* invalid UTF-8 is refused with its offset */
    int32_t *ids = (int32_t *)1;
    size_t n;
    CHECK(kiln_tokenizer_encode(t, "he\xff", 3, &ids, &n) == KILN_INVALID_ARGUMENT && !ids);
    CHECK(strstr(kiln_last_error(), "offset 2"));
    CHECK(kiln_tokenizer_encode(t, "\xed\xa0\x80", 3, &ids, &n) == KILN_INVALID_ARGUMENT);   /* a surrogate */
    kiln_tokenizer_free(t);
    /* add_prefix_space: "hello" becomes " hello" -> Ġ h e l l o: Ġ has no merge with h */
    t = load_str(hand_json(NULL, NULL, "{\"type\":\"ByteLevel\",\"add_prefix_space\":true}"));
    if (t) CHECK(encode_eq(t, "hello", (int32_t[]){ 4, 11 }, 2));
    kiln_tokenizer_free(t);
    /* merges as [a, b] pairs read the same */
    t = load_str(hand_json(NULL, "[[\"h\",\"e\"],[\"l\",\"l\"],[\"he\",\"ll\"],[\"hell\",\"o\"]]", NULL));
    if (t) CHECK(encode_eq(t, "hello", (int32_t[]){ 11 }, 1));
    kiln_tokenizer_free(t);
}

static void expect_bad(const char *json, kiln_status want, const char *words) {
    kiln_tokenizer *t = (kiln_tokenizer *)1;
    kiln_status s = kiln_tokenizer_from_json(json, strlen(json), &t);
    CHECK_MSG(s == want && !t && strstr(kiln_last_error(), words), "%s: %s (want '%s')", kiln_status_name(s), kiln_last_error(), words);
    if (s == KILN_OK) kiln_tokenizer_free(t);
}

static void test_hostile(void) {
    expect_bad("{\"model\":", KILN_INVALID_ARGUMENT, "not JSON");
    expect_bad("[]", KILN_INVALID_ARGUMENT, "not an object");
    expect_bad("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", KILN_UNSUPPORTED, "WordPiece");
    expect_bad(hand_json(NULL, "[\"h e\",\"x y\"]", NULL), KILN_INVALID_ARGUMENT, "merge 1");
    expect_bad(hand_json(NULL, "[\"h e l\"]", NULL), KILN_INVALID_ARGUMENT, "one space");
    expect_bad(hand_json(NULL, "[\"o h\"]", NULL), KILN_INVALID_ARGUMENT, "not in the vocabulary");
    expect_bad(hand_json(NULL, "[7]", NULL), KILN_INVALID_ARGUMENT, "merge 0");
    expect_bad(hand_json(NULL, "{}", NULL), KILN_INVALID_ARGUMENT, "merges");
    expect_bad(hand_json(",\"x\":-1", NULL, NULL), KILN_INVALID_ARGUMENT, "\"x\"");
    expect_bad(hand_json(",\"x\":2000000000", NULL, NULL), KILN_INVALID_ARGUMENT, "\"x\"");
    expect_bad(hand_json(",\"x\":1.5", NULL, NULL), KILN_INVALID_ARGUMENT, "\"x\"");
    expect_bad(hand_json(",\"x\":3", NULL, NULL), KILN_INVALID_ARGUMENT, "two tokens");
    expect_bad(hand_json(NULL, NULL, "{\"type\":\"Whitespace\"}"), KILN_UNSUPPORTED, "Whitespace");
    expect_bad(hand_json(NULL, NULL, "null"), KILN_UNSUPPORTED, "pre_tokenizer");
    /* every truncation of a good file fails cleanly */
    const char *good = hand_json(NULL, NULL, NULL);
    size_t n = strlen(good);
    int clean = 1;
    for (size_t k = 0; k < n; k++) {
        kiln_tokenizer *t = NULL;
        if (kiln_tokenizer_from_json(good, k, &t) == KILN_OK || t) clean = 0;
        kiln_tokenizer_free(t);
    }
    CHECK(clean);
    /* a file that does not exist, and a directory */
    kiln_tokenizer *t = NULL;
    CHECK(kiln_tokenizer_load("/nonexistent/tokenizer.json", &t) == KILN_NOT_FOUND && !t);
    CHECK(kiln_tokenizer_load("/", &t) != KILN_OK && !t);
}

static const char sample[] =
    "Hello world!  It's 2024; prices rose 12.5%...\n\n\tTabs\there.   \n"
    "\xc3\x87" "a va? Tr\xc3\xa8s bien. \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88 "
    "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, \xd0\xbc\xd0\xb8\xd1\x80! \xf0\x9f\x98\x80\xf0\x9f\x8e\x89 we'll they're\n";

static void test_train_roundtrip(const char *dir) {
    char text[8192] = "";
    for (int i = 0; i < 20; i++) strcat(text, sample);
    const char *special[] = { "<|endoftext|>" };
    kiln_tokenizer *t = NULL;
    CHECK_OK(kiln_tokenizer_train(text, strlen(text), 400, special, 1, &t));
    if (!t) return;
    CHECK(kiln_tokenizer_vocab_size(t) > 257 && kiln_tokenizer_vocab_size(t) <= 400);
    CHECK(kiln_tokenizer_token_id(t, "<|endoftext|>") == 0);
    CHECK(kiln_tokenizer_token_id(t, "!") == 1);   /* byte symbols in code-point order after it */
    int32_t *ids = NULL, *ids2 = NULL;
    size_t n = 0, n2 = 0;
    CHECK_OK(kiln_tokenizer_encode(t, sample, strlen(sample), &ids, &n));
    CHECK(n > 0 && n < strlen(sample) / 2);   /* merges learnt on this very text compress it */
    char *back = NULL;
    size_t len = 0;
    CHECK_OK(kiln_tokenizer_decode(t, ids, n, &back, &len));
    CHECK(back && len == strlen(sample) && !memcmp(back, sample, len));
    kiln_text_free(back);
    /* saved and loaded again: the same ids */
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    CHECK_OK(kiln_tokenizer_save(t, path));
    kiln_tokenizer *u = NULL;
    CHECK_OK(kiln_tokenizer_load(path, &u));
    if (u) {
        CHECK(kiln_tokenizer_vocab_size(u) == kiln_tokenizer_vocab_size(t));
        CHECK_OK(kiln_tokenizer_encode(u, sample, strlen(sample), &ids2, &n2));
        CHECK(n2 == n && ids2 && !memcmp(ids, ids2, n * sizeof *ids));
        kiln_text_free(ids2);
    }
    /* an emoji split across tokens decodes to U+FFFD per broken part, as from_utf8_lossy does */
    int32_t e = kiln_tokenizer_token_id(t, "\xc3\xb0");   /* the symbol of byte 0xF0 */
    CHECK_OK(kiln_tokenizer_decode(t, &e, 1, &back, &len));
    CHECK(back && len == 3 && !memcmp(back, "\xef\xbf\xbd", 3));
    kiln_text_free(back);
    kiln_text_free(ids);
    kiln_tokenizer_free(u);
    kiln_tokenizer_free(t);
    CHECK(kiln_tokenizer_train(text, strlen(text), 100, NULL, 0, &t) == KILN_INVALID_ARGUMENT && !t);
    CHECK(kiln_tokenizer_train("a\xc3", 2, 300, NULL, 0, &t) == KILN_INVALID_ARGUMENT && !t);
    unlink(path);
}

/* Text windows: y is x shifted by one token; random starts are seeded; the byte vocabulary. */
static void test_windows(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/text.txt", dir);
    FILE *f = fopen(path, "wb");
    if (!f) { CHECK(0); return; }
    for (int i = 0; i < 1000; i++) fputc("abcdefghij"[i % 10], f);
    fputc(0xFF, f);   /* bytes need not be UTF-8 */
    fclose(f);
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK_OK(kiln_text_read_ids(path, NULL, &ids, &n));
    CHECK(n == 1001 && ids && ids[0] == 'a' && ids[1000] == 255);
    CHECK(kiln_text_split(n, 0.1) == 901);
    kiln_tensor *x = NULL, *y = NULL, *x2 = NULL, *y2 = NULL;
    CHECK_OK(kiln_text_windows(ids, 900, 16, 64, 7, &x, &y));
    CHECK_OK(kiln_text_windows(ids, 900, 16, 64, 7, &x2, &y2));
    if (x && y && x2) {
        CHECK(x->shape.rank == 2 && x->shape.dim[0] == 64 && x->shape.dim[1] == 16 && x->dtype == KILN_I32);
        const int32_t *xd = x->data, *yd = y->data;
        int shifted = 1, starts_differ = 0;
        for (int i = 0; i < 64; i++) {
            for (int t = 0; t < 16; t++) shifted &= yd[i * 16 + t] == 'a' + ((xd[i * 16 + t] - 'a' + 1) % 10);
            starts_differ |= xd[i * 16] != xd[0];
        }
        CHECK(shifted && starts_differ);
        CHECK(!memcmp(x->data, x2->data, 64 * 16 * 4));   /* the same seed, the same windows */
    }
    kiln_tensor_free(x); kiln_tensor_free(y); kiln_tensor_free(x2); kiln_tensor_free(y2);
    CHECK_OK(kiln_text_windows(ids + 901, 100, 16, 0, 0, &x, &y));   /* the tail, in order */
    if (x) CHECK(x->shape.dim[0] == 6 && ((int32_t *)x->data)[16] == ids[901 + 16] && ((int32_t *)y->data)[95] == ids[901 + 96]);
    kiln_tensor_free(x); kiln_tensor_free(y);
    CHECK(kiln_text_windows(ids, 16, 16, 1, 0, &x, &y) == KILN_INVALID_ARGUMENT && !x && !y);
    kiln_text_free(ids);
    /* through a tokenizer: invalid UTF-8 is an error naming the file */
    kiln_tokenizer *t = load_str(hand_json(NULL, NULL, NULL));
    CHECK(kiln_text_read_ids(path, t, &ids, &n) == KILN_INVALID_ARGUMENT && !ids && strstr(kiln_last_error(), "text.txt"));
    kiln_tokenizer_free(t);
    unlink(path);
}

int main(void) {
    char dir[] = "/tmp/kiln_test_tokenizer_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_known_ids();
    test_hostile();
    test_train_roundtrip(dir);
    test_windows(dir);
    rmdir(dir);
    return check_summary("test_tokenizer");
}
