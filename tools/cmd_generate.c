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
        "usage: kiln generate (--load CKPT | --model-file DIR | --model gpt_char|gpt2) --prompt-ids 1,2,3 [options]\n\n"
        "Continues a prompt with a GPT model (Embedding, PositionEmbedding, GPTBlocks, a tied head:\n"
        "the gpt_char and gpt2 presets, Hugging Face GPT-2 folders), one token at a time with a KV cache.\n\n"
        "options:\n"
        "  --load CKPT         a checkpoint kiln train saved\n"
        "  --model-file DIR    a Hugging Face GPT-2 folder (config.json, model.safetensors)\n"
        "  --model NAME        a built-in GPT with fresh (untrained) weights: gpt_char, gpt2\n"
        "  --prompt-ids LIST   the prompt's token ids, comma-separated\n"
        "  --prompt TEXT       the prompt as text: needs a tokenizer (not read yet: use --prompt-ids)\n"
        "  --tokens N          new tokens (default 50)\n"
        "  --temperature T     0: greedy (argmax); else sample from softmax(logits / T) (default 1)\n"
        "  --top-k K           sample among the K most likely tokens (default 0: all)\n"
        "  --seed S            the sampling seed (default 1)\n"
        "  --print-ids         print the ids (prompt and new), comma-separated (the default without a tokenizer)\n"
        "  --save-hf DIR       also write the model as a Hugging Face GPT-2 folder\n\n"
        "example:\n"
        "  kiln generate --model-file gpt2-folder --prompt-ids 464,2068 --tokens 20 --temperature 0 --print-ids\n");
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
    const char *load, *model_file, *model, *prompt_ids, *prompt, *save_hf;
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
        else if (!strcmp(o, "--tokens")) rc = cli_int32("generate", o, v, 0, 1 << 24, &a->tokens);
        else if (!strcmp(o, "--top-k")) rc = cli_int32("generate", o, v, 0, 1 << 24, &a->top_k);
        else if (!strcmp(o, "--temperature")) rc = cli_real("generate", o, v, 0, 1e6, false, false, &a->temperature);
        else if (!strcmp(o, "--seed")) rc = cli_u64("generate", o, v, &a->seed);
        else { fprintf(stderr, "kiln generate: unknown option %s (kiln generate --help)\n", o); return 2; }
        if (rc) return rc;
    }
    if (!!a->load + !!a->model_file + !!a->model != 1) { fprintf(stderr, "kiln generate: give one of --load, --model-file, --model\n"); return 2; }
    if (a->prompt) { fprintf(stderr, "kiln generate: --prompt needs a tokenizer, which this kiln does not read yet; give --prompt-ids\n"); return 2; }
    if (!a->prompt_ids) { fprintf(stderr, "kiln generate: give the prompt with --prompt-ids 1,2,3\n"); return 2; }
    return 0;
}

int cmd_generate(int argc, char **argv) {
    gen_args a = { .tokens = 50, .temperature = 1, .seed = 1 };
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    kiln_model *m = NULL;
    kiln_status st = a.load ? kiln_model_from_checkpoint(a.load, &m)
                   : a.model_file ? kiln_model_from_hf_gpt2(a.model_file, &m)
                   : (m = kiln_model_preset(a.model, KILN_SCALAR, 0)) ? KILN_OK : KILN_INVALID_ARGUMENT;
    int32_t *prompt = NULL, *ids = NULL;
    int n_prompt = 0, n = 0;
    if (st) { fprintf(stderr, "kiln generate: %s\n", kiln_last_error()); return 1; }
    if ((rc = parse_ids(a.prompt_ids, &prompt, &n_prompt))) { free(prompt); kiln_model_free(m); return rc; }
    st = kiln_generate(m, prompt, n_prompt, &(kiln_generate_opts){ .tokens = a.tokens, .temperature = a.temperature, .top_k = a.top_k, .seed = a.seed },
                       &ids, &n);
    if (!st && a.save_hf) st = kiln_model_save_hf_gpt2(m, a.save_hf);
    if (st) fprintf(stderr, "kiln generate: %s\n", kiln_last_error());
    for (int i = 0; !st && i < n; i++) printf("%s%d", i ? "," : "", ids[i]);
    if (!st) printf("\n");
    free(ids);
    free(prompt);
    kiln_model_free(m);
    return st ? 1 : 0;
}
