/* kiln tokenize (text -> ids, ids -> text through a tokenizer.json) and kiln tokenizer train
 * (a byte-level BPE from a text file), over include/kiln/text.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"
#include "core/core.h"
#include "io/read_file.h"
#include "tools/commands.h"

#define TEXT_MAX ((uint64_t)1 << 31)

static void tokenize_usage(FILE *f) {
    fprintf(f,
        "usage: kiln tokenize (--tokenizer FILE | --model-file DIR) [--print-ids] TEXTFILE | --text STRING\n"
        "       kiln tokenize --tokenizer FILE --decode-ids 1,2,3\n\n"
        "Encodes a UTF-8 text file with a Hugging Face tokenizer.json (GPT-2 style byte-level BPE)\n"
        "and prints the ids comma-separated on one line, the same ids as the `tokenizers` package's\n"
        "Tokenizer.encode(text).ids; or decodes ids back to text.\n\n"
        "options:\n"
        "  --tokenizer FILE    the tokenizer.json (from Hugging Face or kiln tokenizer train)\n"
        "  --model-file DIR    a Hugging Face folder's tokenizer.json (DIR/tokenizer.json)\n"
        "  --print-ids         print the ids comma-separated (the default)\n"
        "  --text STRING       encode STRING instead of a file\n"
        "  --decode-ids IDS    print the text of comma-separated ids\n\n"
        "examples:\n"
        "  kiln tokenizer train --vocab-size 1000 /usr/share/games/fortunes/fortunes -o tokenizer.json\n"
        "  kiln tokenize --tokenizer tokenizer.json --print-ids --text 'Hello world'\n"
        "  kiln tokenize --tokenizer tokenizer.json --decode-ids 72,101,108\n");
}

static int fail(const char *cmd) { fprintf(stderr, "kiln %s: %s\n", cmd, kiln_last_error()); return 1; }

/* "1,2,3" into ids (a message and false on anything else). */
static bool parse_ids(const char *s, int32_t **ids, size_t *n) {
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    *ids = kiln_malloc(cap * sizeof **ids);
    *n = 0;
    if (!*ids) return false;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            fprintf(stderr, "kiln tokenize: --decode-ids: '%s' is not a comma-separated list of ids\n", s);
            return false;
        }
        (*ids)[(*n)++] = (int32_t)v;
        if (!*end) return true;
        p = end + 1;
    }
}

static int decode_ids(const kiln_tokenizer *t, const char *list) {
    int32_t *ids;
    size_t n;
    if (!parse_ids(list, &ids, &n)) { kiln_free(ids); return 2; }
    char *text;
    size_t len;
    kiln_status s = kiln_tokenizer_decode(t, ids, n, &text, &len);
    kiln_free(ids);
    if (s != KILN_OK) return fail("tokenize");
    fwrite(text, 1, len, stdout);
    putchar('\n');
    kiln_text_free(text);
    return 0;
}

static int encode_print(const kiln_tokenizer *t, const char *text, size_t n) {
    int32_t *ids;
    size_t k;
    if (kiln_tokenizer_encode(t, text, n, &ids, &k) != KILN_OK) return fail("tokenize");
    for (size_t i = 0; i < k; i++) printf(i ? ",%d" : "%d", (int)ids[i]);
    putchar('\n');
    kiln_text_free(ids);
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *tok = NULL, *text = NULL, *dec = NULL, *file = NULL, *folder = NULL;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { tokenize_usage(stdout); return 0; }
        if (!strcmp(o, "--print-ids")) continue;
        const char **dst = !strcmp(o, "--tokenizer") ? &tok : !strcmp(o, "--model-file") ? &folder : !strcmp(o, "--text") ? &text : !strcmp(o, "--decode-ids") ? &dec : NULL;
        if (!dst) {
            if (o[0] == '-' || file) { fprintf(stderr, "kiln tokenize: unexpected argument '%s' (see kiln tokenize --help)\n", o); return 2; }
            file = o;
            continue;
        }
        if (i + 1 >= argc) { fprintf(stderr, "kiln tokenize: option %s needs a value (see kiln tokenize --help)\n", o); return 2; }
        *dst = argv[++i];
    }
    if (!!tok + !!folder != 1) { fprintf(stderr, "kiln tokenize: give --tokenizer FILE (a tokenizer.json) or --model-file DIR (a Hugging Face folder holding one)\n"); return 2; }
    char path[4096];
    if (folder) {
        if (!kiln_is_hf_folder(folder)) { fprintf(stderr, "kiln tokenize: --model-file %s: not a Hugging Face folder (a directory with config.json)\n", folder); return 2; }
        snprintf(path, sizeof path, "%s/tokenizer.json", folder);
        tok = path;
    }
    if (!!text + !!dec + !!file != 1) { fprintf(stderr, "kiln tokenize: give one of TEXTFILE, --text STRING or --decode-ids IDS\n"); return 2; }
    kiln_tokenizer *t;
    if (kiln_tokenizer_load(tok, &t) != KILN_OK) return fail("tokenize");
    int rc;
    if (dec) rc = decode_ids(t, dec);
    else if (text) rc = encode_print(t, text, strlen(text));
    else {
        uint8_t *buf;
        size_t n;
        if (kiln_file_read_all(file, "text file", TEXT_MAX, &buf, &n) != KILN_OK) rc = fail("tokenize");
        else { rc = encode_print(t, (const char *)buf, n); kiln_free(buf); }
    }
    kiln_tokenizer_free(t);
    return rc;
}

static void train_usage(FILE *f) {
    fprintf(f,
        "usage: kiln tokenizer train --vocab-size N TEXTFILE -o tokenizer.json [--special TOKEN]... [--no-special]\n\n"
        "Trains a byte-level BPE tokenizer (GPT-2 style) on a UTF-8 text file as the `tokenizers`\n"
        "package's BpeTrainer does, and writes it as a tokenizer.json that Hugging Face's tokenizers\n"
        "and transformers load with the same ids. Ids: the special tokens (default <|endoftext|>),\n"
        "the 256 byte symbols, then one token per merge up to N.\n\n"
        "options:\n"
        "  --vocab-size N      the vocabulary size (at least 256 + the special tokens)\n"
        "  --output, -o FILE   the tokenizer.json to write\n"
        "  --special TOKEN     a special token (repeatable; replaces the default <|endoftext|>)\n"
        "  --no-special        no special tokens\n");
}

int cmd_tokenizer(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[2], "train")) {
        if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) { train_usage(stdout); return 0; }
        fprintf(stderr, "kiln tokenizer: the only subcommand is 'train' (see kiln tokenizer train --help)\n");
        return 2;
    }
    const char *out = NULL, *file = NULL, *special[64] = { "<|endoftext|>" };
    int n_special = 1, vocab = 0;
    bool own_special = false;
    for (int i = 3; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { train_usage(stdout); return 0; }
        if (!strcmp(o, "--no-special")) { n_special = 0; own_special = true; continue; }
        bool val = !strcmp(o, "--vocab-size") || !strcmp(o, "-o") || !strcmp(o, "--output") || !strcmp(o, "--special");
        if (!val) {
            if (o[0] == '-' || file) { fprintf(stderr, "kiln tokenizer train: unexpected argument '%s'\n", o); return 2; }
            file = o;
            continue;
        }
        if (i + 1 >= argc) { fprintf(stderr, "kiln tokenizer train: option %s needs a value\n", o); return 2; }
        const char *v = argv[++i];
        if (!strcmp(o, "--vocab-size")) { if (cli_int32("tokenizer train", o, v, 1, 1 << 24, &vocab)) return 2; }
        else if (!strcmp(o, "--special")) {
            if (!own_special) { n_special = 0; own_special = true; }
            if (n_special == 64) { fprintf(stderr, "kiln tokenizer train: at most 64 --special tokens\n"); return 2; }
            special[n_special++] = v;
        } else out = v;
    }
    if (!file || !out || !vocab) { fprintf(stderr, "kiln tokenizer train: TEXTFILE, --vocab-size N and -o FILE are required\n"); return 2; }
    uint8_t *buf;
    size_t n;
    if (kiln_file_read_all(file, "text file", TEXT_MAX, &buf, &n) != KILN_OK) return fail("tokenizer train");
    double t0 = cli_now();
    kiln_tokenizer *t;
    kiln_status s = kiln_tokenizer_train((const char *)buf, n, vocab, special, n_special, &t);
    kiln_free(buf);
    if (s != KILN_OK) return fail("tokenizer train");
    s = kiln_tokenizer_save(t, out);
    int size = kiln_tokenizer_vocab_size(t);
    kiln_tokenizer_free(t);
    if (s != KILN_OK) return fail("tokenizer train");
    printf("trained a byte-level BPE of %d tokens on %zu bytes in %.2f s: %s\n", size, n, cli_now() - t0, out);
    return 0;
}
