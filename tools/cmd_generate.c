/* kiln generate: text (token ids) from a GPT model with a KV cache (kiln_generate): a checkpoint
 * (--load), a Hugging Face GPT-2 folder (--model-file DIR) or a built-in GPT with fresh weights
 * (--model gpt_char: to try the command). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"
#include "tools/commands.h"

static void generate_usage(FILE *f) {
    fprintf(f,
        "usage: kiln generate (--load CKPT | --model-file DIR | --model gpt_char|gpt2) (--prompt TEXT | --prompt-ids 1,2,3) [options]\n\n"
        "Continues a prompt with a GPT model (Embedding, PositionEmbedding, GPTBlocks, a tied head:\n"
        "the gpt_char and gpt2 presets, Hugging Face GPT-2 folders), one token at a time with a KV cache.\n\n"
        "options:\n"
        "  --load CKPT         a checkpoint kiln train saved\n"
        "  --model-file DIR    a Hugging Face GPT-2 folder (config.json, model.safetensors; its tokenizer.json if any)\n"
        "  --model NAME        a built-in GPT with fresh (untrained) weights: gpt_char, gpt2\n"
        "  --prompt-ids LIST   the prompt's token ids, comma-separated\n"
        "  --prompt TEXT       the prompt as text, encoded by the tokenizer (--tokenizer, else the folder's tokenizer.json,\n"
        "                      else bytes for a model of vocabulary 256); prints the text (prompt and continuation)\n"
        "  --tokenizer FILE    a tokenizer.json (Hugging Face byte-level BPE, or kiln tokenizer train's)\n"
        "  --tokens N          new tokens (default 50)\n"
        "  --temperature T     0: greedy (argmax); else sample from softmax(logits / T) (default 1)\n"
        "  --top-k K           sample among the K most likely tokens (default 0: all)\n"
        "  --seed S            the sampling seed (default 1)\n"
        "  --print-ids         print the ids (prompt and new), comma-separated, instead of the text (the output of --prompt-ids)\n"
        "  --save-hf DIR       also write the model as a Hugging Face GPT-2 folder (with the tokenizer.json in use)\n\n"
        "example:\n"
        "  kiln generate --model-file gpt2-folder --prompt-ids 464,2068 --tokens 20 --temperature 0 --print-ids\n"
        "  kiln generate --model-file gpt2-folder --prompt 'The quick' --tokens 20 --temperature 0\n");
}

static int parse_ids(const char *s, int32_t **ids, int *n) {
    int cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    *ids = malloc((size_t)cap * sizeof **ids);
    *n = 0;
    char *end;
    for (const char *p = s; *ids && *p;) {
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 2147483647L || (*end && *end != ',')) {
            fprintf(stderr, "kiln generate: --prompt-ids '%s': not a list of token ids such as 1,2,3\n", s);
            return 2;
        }
        (*ids)[(*n)++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (!*n) { fprintf(stderr, "kiln generate: --prompt-ids is empty\n"); return 2; }
    return 0;
}

typedef struct gen_args {
    const char *load, *model_file, *model, *prompt_ids, *prompt, *save_hf, *tokenizer;
    int tokens, top_k;
    double temperature;
    uint64_t seed;
    bool print_ids;
} gen_args;

static int parse(int argc, char **argv, gen_args *a) {
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) { generate_usage(stdout); return -1; }
        if (!strcmp(o, "--print-ids")) { a->print_ids = true; continue; }
        if (!v) { fprintf(stderr, "kiln generate: %s needs a value (kiln generate --help)\n", o); return 2; }
        i++;
        int rc = 0;
        if (!strcmp(o, "--load")) a->load = v;
        else if (!strcmp(o, "--model-file")) a->model_file = v;
        else if (!strcmp(o, "--model")) a->model = v;
        else if (!strcmp(o, "--prompt-ids")) a->prompt_ids = v;
        else if (!strcmp(o, "--prompt")) a->prompt = v;
        else if (!strcmp(o, "--save-hf")) a->save_hf = v;
        else if (!strcmp(o, "--tokenizer")) a->tokenizer = v;
        else if (!strcmp(o, "--tokens")) rc = cli_int32("generate", o, v, 0, 1 << 24, &a->tokens);
        else if (!strcmp(o, "--top-k")) rc = cli_int32("generate", o, v, 0, 1 << 24, &a->top_k);
        else if (!strcmp(o, "--temperature")) rc = cli_real("generate", o, v, 0, 1e6, false, false, &a->temperature);
        else if (!strcmp(o, "--seed")) rc = cli_u64("generate", o, v, &a->seed);
        else { fprintf(stderr, "kiln generate: unknown option %s (kiln generate --help)\n", o); return 2; }
        if (rc) return rc;
    }
    if (!!a->load + !!a->model_file + !!a->model != 1) { fprintf(stderr, "kiln generate: give one of --load, --model-file, --model\n"); return 2; }
    if (!!a->prompt + !!a->prompt_ids != 1) { fprintf(stderr, "kiln generate: give the prompt with --prompt TEXT or --prompt-ids 1,2,3 (one of them)\n"); return 2; }
    return 0;
}

/* the model from --load / --model-file / --model, with --tokenizer as its tokenizer */
static kiln_model *open_model(const gen_args *a) {
    kiln_model *m = NULL;
    kiln_tokenizer *t = NULL;
    kiln_status st = a->load ? kiln_model_from_checkpoint(a->load, &m)
                   : a->model_file ? kiln_model_from_hf_gpt2(a->model_file, &m)
                   : (m = kiln_model_preset(a->model, KILN_SCALAR, 0)) ? KILN_OK : KILN_INVALID_ARGUMENT;
    if (!st && a->tokenizer && !(st = kiln_tokenizer_load(a->tokenizer, &t))) st = kiln_model_set_tokenizer(m, t);
    if (!st) return m;
    fprintf(stderr, "kiln generate: %s\n", kiln_last_error());
    kiln_model_free(m);
    return NULL;
}

int cmd_generate(int argc, char **argv) {
    gen_args a = { .tokens = 50, .temperature = 1, .seed = 1 };
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    kiln_model *m = open_model(&a);
    if (!m) return 1;
    int32_t *prompt = NULL, *ids = NULL;
    char *text = NULL;
    int n_prompt = 0, n = 0;
    if (a.prompt_ids && (rc = parse_ids(a.prompt_ids, &prompt, &n_prompt))) { free(prompt); kiln_model_free(m); return rc; }
    kiln_generate_opts go = { .tokens = a.tokens, .temperature = a.temperature, .top_k = a.top_k, .seed = a.seed };
    kiln_status st = a.prompt ? kiln_generate_text(m, NULL, a.prompt, strlen(a.prompt), &go, a.print_ids ? NULL : &text, &ids, &n)
                              : kiln_generate(m, prompt, n_prompt, &go, &ids, &n);
    if (!st && a.save_hf) st = kiln_model_save_hf_gpt2(m, a.save_hf);
    if (st) fprintf(stderr, "kiln generate: %s\n", kiln_last_error());
    else if (text && !a.print_ids) printf("%s\n", text);
    else {
        for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", ids[i]);
        printf("\n");
    }
    kiln_text_free(text);
    free(ids);
    free(prompt);
    kiln_model_free(m);
    return st ? 1 : 0;
}
