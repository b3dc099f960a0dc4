/* kiln_generate_text: generation from a text prompt.
 * - a byte-level GPT (vocabulary 256) without a tokenizer: the prompt's bytes are the ids, the
 *   text is the bytes of the ids kiln_generate gives for them;
 * - with a tokenizer (trained here; vocabulary 300 = the model's): the text is exactly
 *   kiln_tokenizer_encode -> kiln_generate -> kiln_tokenizer_decode, and a tokenizer the model
 *   carries (kiln_model_set_tokenizer) is used when none is given;
 * - errors: no tokenizer for a vocabulary that is not bytes; a model whose vocabulary is larger
 *   than the tokenizer's generating an id the tokenizer cannot decode; an empty prompt;
 * - a Hugging Face folder keeps the tokenizer (saved and read back); an unreadable tokenizer.json
 *   leaves the model without one (a warning), loaded all the same. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/kiln.h"

static kiln_model *gpt(int vocab) {
    kiln_model *m = kiln_model_new("text_gpt");
    kiln_init big = kiln_init_normal(0, 1.0, 5);
    kiln_layer *x = kiln_input(m, KILN_SHAPE(16));
    kiln_layer *tok = kiln_layer_embedding(m, &(kiln_embedding_opts){ .name = "wte", .input = x, .input_dim = vocab, .output_dim = 16,
                                                                     .embeddings_initializer = &big });
    kiln_layer *pos = kiln_layer_position_embedding(m, &(kiln_position_embedding_opts){ .name = "wpe", .input = tok, .sequence_length = 16 });
    kiln_layer *h = kiln_layer_add(m, &(kiln_merge_opts){ .name = "embed", .inputs = (kiln_layer *[]){ tok, pos }, .n_inputs = 2 });
    h = kiln_layer_gpt_block(m, &(kiln_gpt_block_opts){ .name = "h_0", .input = h, .num_heads = 2, .gelu_approximate = true, .init_stddev = 0.3 });
    h = kiln_layer_layer_norm(m, &(kiln_layer_norm_opts){ .name = "ln_f", .input = h });
    kiln_layer *out = kiln_layer_tied_output(m, "lm_head", h, tok);
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    return m;
}

static const kiln_generate_opts greedy = { .tokens = 6 };

static void test_bytes(void) {
    kiln_model *m = gpt(256);
    char *text = NULL;
    int32_t *ids = NULL, *want = NULL;
    int n = 0, nw = 0;
    CHECK_OK(kiln_generate_text(m, NULL, "Hi!", 3, &greedy, &text, &ids, &n));
    CHECK_OK(kiln_generate(m, (const int32_t[]){ 'H', 'i', '!' }, 3, &greedy, &want, &nw));
    CHECK(n == 9 && nw == 9 && ids && want && !memcmp(ids, want, sizeof *ids * 9));
    bool same = text && !strncmp(text, "Hi!", 3);
    for (int i = 3; same && i < n; i++) same = (uint8_t)text[i] == ids[i] || (ids[i] == 0 && i == (int)strlen(text));
    CHECK_MSG(same, "the text is not the bytes of the ids");
    kiln_text_free(text);
    free(ids);
    free(want);
    kiln_model_free(m);
}

static kiln_tokenizer *trained(int vocab) {
    static const char corpus[] = "the quick brown fox jumps over the lazy dog\nthe dog naps; the fox runs\n"
                                 "a quick hen and a brown dog\nthe the the quick quick brown brown\n";
    kiln_tokenizer *t = NULL;
    CHECK_OK(kiln_tokenizer_train(corpus, sizeof corpus - 1, vocab, (const char *[]){ "<|endoftext|>" }, 1, &t));
    return t;
}

static void test_tokenizer(void) {
    kiln_model *m = gpt(300);
    kiln_tokenizer *t = trained(300);
    const char *prompt = "the quick brown";
    char *text = NULL, *want_text = NULL;
    int32_t *ids = NULL, *want = NULL, *p = NULL;
    size_t np = 0, nt = 0;
    int n = 0, nw = 0;
    CHECK_OK(kiln_generate_text(m, t, prompt, strlen(prompt), &greedy, &text, &ids, &n));
    CHECK_OK(kiln_tokenizer_encode(t, prompt, strlen(prompt), &p, &np));
    CHECK_OK(kiln_generate(m, p, (int)np, &greedy, &want, &nw));
    CHECK_OK(kiln_tokenizer_decode(t, want, (size_t)nw, &want_text, &nt));
    CHECK(np < strlen(prompt));         /* merges were used */
    CHECK(n == nw && ids && want && !memcmp(ids, want, sizeof *ids * (size_t)n));
    CHECK_MSG(text && want_text && !strcmp(text, want_text), "text '%s', want '%s'", text ? text : "", want_text ? want_text : "");
    printf("prompt '%s' (%zu tokens) -> '%s'\n", prompt, np, text ? text : "");
    kiln_text_free(text);
    free(ids);
    /* the tokenizer the model carries */
    CHECK(kiln_model_tokenizer(m) == NULL);
    CHECK_OK(kiln_model_set_tokenizer(m, t));
    CHECK(kiln_model_tokenizer(m) == t);
    text = NULL;
    CHECK_OK(kiln_generate_text(m, NULL, prompt, strlen(prompt), &greedy, &text, NULL, NULL));
    CHECK(text && want_text && !strcmp(text, want_text));
    kiln_text_free(text);
    kiln_text_free(want_text);
    kiln_text_free(p);
    free(want);
    kiln_model_free(m);      /* frees t */
}

static void test_errors(void) {
    kiln_model *m = gpt(300);
    char *text = (char *)1;
    kiln_status st = kiln_generate_text(m, NULL, "hi", 2, &greedy, &text, NULL, NULL);
    CHECK(st == KILN_INVALID_ARGUMENT && text == NULL && strstr(kiln_last_error(), "vocabulary of 300") && strstr(kiln_last_error(), "no tokenizer"));
    kiln_model_free(m);
    /* a model of 300 ids, a tokenizer of 260: near-uniform sampling soon draws an id past 260 */
    m = gpt(300);
    kiln_tokenizer *t = trained(260);
    st = kiln_generate_text(m, t, "the", 3, &(kiln_generate_opts){ .tokens = 30, .temperature = 100, .seed = 3 }, &text, NULL, NULL);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && text == NULL && strstr(kiln_last_error(), "out of range"), "got %d: %s", (int)st, kiln_last_error());
    int32_t *ids = NULL;      /* only the ids (text NULL): nothing to decode, no error */
    int n = 0;
    CHECK_OK(kiln_generate_text(m, t, "the", 3, &(kiln_generate_opts){ .tokens = 30, .temperature = 100, .seed = 3 }, NULL, &ids, &n));
    CHECK(ids && n == 31);
    free(ids);
    st = kiln_generate_text(m, t, "", 0, &greedy, &text, NULL, NULL);
    CHECK(st == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "empty"));
    kiln_tokenizer_free(t);
    kiln_model_free(m);
    /* the tokenizer has more ids than the model: a prompt id outside the model */
    m = gpt(256);
    t = trained(300);
    st = kiln_generate_text(m, t, "the quick", 9, &greedy, &text, NULL, NULL);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "outside model"), "got %d: %s", (int)st, kiln_last_error());
    kiln_tokenizer_free(t);
    kiln_model_free(m);
}

/* a Hugging Face folder written with the model's tokenizer reads back with it; one Kiln cannot
 * read (a normalizer) leaves the model without a tokenizer, loaded all the same */
static void test_folder(void) {
    char dir[] = "/tmp/kiln_gen_text.XXXXXX", path[64];
    if (!mkdtemp(dir)) { CHECK_MSG(0, "mkdtemp"); return; }
    kiln_model *m = gpt(300), *back = NULL;
    CHECK_OK(kiln_model_set_tokenizer(m, trained(300)));
    char *want = NULL, *got = NULL;
    CHECK_OK(kiln_generate_text(m, NULL, "the dog", 7, &greedy, &want, NULL, NULL));
    CHECK_OK(kiln_model_save_hf_gpt2(m, dir));
    CHECK_OK(kiln_model_from_hf_gpt2(dir, &back));
    CHECK(back && kiln_model_tokenizer(back));
    if (back) CHECK_OK(kiln_generate_text(back, NULL, "the dog", 7, &greedy, &got, NULL, NULL));
    CHECK_MSG(want && got && !strcmp(want, got), "'%s' vs '%s' after the folder", want ? want : "", got ? got : "");
    kiln_model_free(back);
    back = NULL;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    if (f) { fputs("{\"normalizer\": {\"type\": \"NFC\"}, \"model\": {\"type\": \"BPE\"}}", f); fclose(f); }
    CHECK_OK(kiln_model_from_hf_gpt2(dir, &back));
    CHECK(back && !kiln_model_tokenizer(back));
    kiln_model_free(back);
    kiln_model_free(m);
    kiln_text_free(want);
    kiln_text_free(got);
    const char *files[] = { "tokenizer.json", "config.json", "model.safetensors" };
    for (int i = 0; i < 3; i++) { snprintf(path, sizeof path, "%s/%s", dir, files[i]); unlink(path); }
    rmdir(dir);
}

int main(void) {
    test_bytes();
    test_tokenizer();
    test_errors();
    test_folder();
    return check_summary("test_generate_text");
}
