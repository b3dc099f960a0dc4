/* Hugging Face GPT-2 folders (save_pretrained of a GPT2LMHeadModel): config.json and
 * model.safetensors. The model is the gpt preset's architecture (zoo_gpt.c) at the config's sizes;
 * Hugging Face's Conv1D weights are [in, out], Kiln's kernels too, and GPTBlock keeps the fused
 * c_attn, so every tensor maps onto one Kiln weight unchanged:
 *   [transformer.]wte.weight -> wte/embeddings, wpe.weight -> wpe/embeddings,
 *   h.N.{ln_1,ln_2}.{weight,bias} -> h_N/{ln_1,ln_2}/{gamma,beta},
 *   h.N.{attn.c_attn,attn.c_proj,mlp.c_fc,mlp.c_proj}.{weight,bias} -> h_N/.../{kernel,bias},
 *   ln_f.{weight,bias} -> ln_f/{gamma,beta}; lm_head.weight is the tied wte (checked equal).
 * tokenizer.json, when there, becomes the model's tokenizer (kiln_model_tokenizer) and is written
 * back with the folder. Not read: attn_pdrop (GPTBlock's one dropout rate, resid_pdrop, also drops
 * the attention probabilities; Hugging Face's configs give both the same value). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/atomic_file.h"
#include <sys/stat.h>
#include "nn/nn_fit.h"
#include "nn/nn_json.h"
#include "nn/nn_zoo.h"
#include "kiln/io.h"
#include "core/core.h"
#include "io/read_file.h"
#include "kiln/text.h"

#define MAX_CONFIG (1 << 20)

static kiln_status int_field(const cJSON *j, const char *key, const char *alt, int lo, int hi, int *out, const char *path) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v && alt) v = cJSON_GetObjectItemCaseSensitive(j, alt);
    int64_t x;
    if (!v || !nn_json_int(v, &x) || x < lo || x > hi)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: '%s' must be a whole number in %d..%d, got %s", path, key, lo, hi, nn_json_kind(v));
    *out = (int)x;
    return KILN_OK;
}

static double num_field(const cJSON *j, const char *key, double dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static kiln_status read_config(const char *dir, nn_gpt_config *c) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    uint8_t *text = NULL;
    size_t n = 0;
    char why[160];
    kiln_status st = kiln_file_read_all(path, "Hugging Face config", MAX_CONFIG, &text, &n);   /* a FIFO or a folder refused */
    if (st) return st;
    cJSON *j = nn_json_parse((const char *)text, why, sizeof why);
    kiln_free(text);
    if (!j) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: %s", path, why);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "model_type");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "activation_function");
    const char *a = cJSON_IsString(act) ? act->valuestring : "gelu_new";
    memset(c, 0, sizeof *c);
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "gpt2"))
        st = kiln_set_error(KILN_UNSUPPORTED, "%s: model_type is %s; Kiln reads GPT-2 folders (model_type \"gpt2\")", path,
                            cJSON_IsString(type) ? type->valuestring : nn_json_kind(type));
    else if (!(st = int_field(j, "n_layer", NULL, 1, 1024, &c->layers, path)) && !(st = int_field(j, "n_head", NULL, 1, 4096, &c->heads, path)) &&
             !(st = int_field(j, "n_embd", NULL, 1, 1 << 16, &c->width, path)) && !(st = int_field(j, "n_positions", "n_ctx", 1, 1 << 20, &c->positions, path)) &&
             !(st = int_field(j, "vocab_size", NULL, 2, 1 << 24, &c->vocab, path))) {
        c->epsilon = num_field(j, "layer_norm_epsilon", 1e-5);
        c->dropout = num_field(j, "resid_pdrop", 0.1);
        if (!(c->epsilon > 0 && c->epsilon < 1)) st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: layer_norm_epsilon %g must be in (0, 1)", path, c->epsilon);
        else if (!(c->dropout >= 0 && c->dropout < 1)) st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: resid_pdrop %g must be in [0, 1)", path, c->dropout);
        else if (!strcmp(a, "gelu_new") || !strcmp(a, "gelu_pytorch_tanh")) c->gelu_tanh = true;
        else if (strcmp(a, "gelu")) st = kiln_set_error(KILN_UNSUPPORTED, "%s: activation_function '%s': Kiln's GPT blocks take gelu_new (tanh) or gelu", path, a);
        if (!st && c->width % c->heads) st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: n_embd %d is not divisible by n_head %d", path, c->width, c->heads);
    }
    cJSON_Delete(j);
    return st;
}

static const char *const block_map[][2] = {
    { "ln_1.weight", "ln_1/gamma" }, { "ln_1.bias", "ln_1/beta" }, { "ln_2.weight", "ln_2/gamma" }, { "ln_2.bias", "ln_2/beta" },
    { "attn.c_attn.weight", "attn/c_attn/kernel" }, { "attn.c_attn.bias", "attn/c_attn/bias" },
    { "attn.c_proj.weight", "attn/c_proj/kernel" }, { "attn.c_proj.bias", "attn/c_proj/bias" },
    { "mlp.c_fc.weight", "mlp/c_fc/kernel" }, { "mlp.c_fc.bias", "mlp/c_fc/bias" },
    { "mlp.c_proj.weight", "mlp/c_proj/kernel" }, { "mlp.c_proj.bias", "mlp/c_proj/bias" },
};
static const char *const top_map[][2] = {
    { "wte.weight", "wte/embeddings" }, { "wpe.weight", "wpe/embeddings" }, { "ln_f.weight", "ln_f/gamma" }, { "ln_f.bias", "ln_f/beta" },
};
#define N_BLOCK_MAP (sizeof block_map / sizeof block_map[0])

/* Kiln's weight name of a Hugging Face tensor name; false for one Kiln has no weight for
 * (attn.bias / attn.masked_bias: the causal-mask buffers of older versions; lm_head.weight). */
static bool kiln_name(const char *hf, char *out, size_t n) {
    if (!strncmp(hf, "transformer.", 12)) hf += 12;
    for (int i = 0; i < 4; i++) if (!strcmp(hf, top_map[i][0])) return snprintf(out, n, "%s", top_map[i][1]) > 0;
    int layer, at = 0;
    if (sscanf(hf, "h.%d.%n", &layer, &at) != 1 || at == 0) return false;
    for (size_t i = 0; i < N_BLOCK_MAP; i++)
        if (!strcmp(hf + at, block_map[i][0])) return snprintf(out, n, "h_%d/%s", layer, block_map[i][1]) > 0;
    return false;
}

/* Hugging Face's name (GPT2LMHeadModel's, "transformer." first) of a Kiln weight name */
static bool hf_name(const char *k, char *out, size_t n) {
    for (int i = 0; i < 4; i++) if (!strcmp(k, top_map[i][1])) return snprintf(out, n, "transformer.%s", top_map[i][0]) > 0;
    int layer, at = 0;
    if (sscanf(k, "h_%d/%n", &layer, &at) != 1 || at == 0) return false;
    for (size_t i = 0; i < N_BLOCK_MAP; i++)
        if (!strcmp(k + at, block_map[i][1])) return snprintf(out, n, "transformer.h.%d.%s", layer, block_map[i][0]) > 0;
    return false;
}

static kiln_tensor *as_f32(const kiln_tensor *t) {
    kiln_tensor *c = kiln_tensor_new(KILN_F32, t->shape);
    for (int64_t i = 0; c && i < kiln_shape_numel(t->shape); i++) kiln_tensor_set(c, i, kiln_tensor_get(t, i));
    return c;
}

static kiln_status load_weights(kiln_model *m, const char *dir) {
    char path[4096], name[160];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    kiln_safetensors *f = NULL;
    kiln_status st = kiln_safetensors_load(path, &f);
    int loaded = 0, want = 0;
    for (int i = 0; i < m->n_layers; i++) want += m->layers[i]->n_vars;
    for (int i = 0; !st && i < kiln_safetensors_count(f); i++) {
        const char *hf = kiln_safetensors_name(f, i);
        if (!kiln_name(hf, name, sizeof name)) continue;
        kiln_tensor *t = as_f32(kiln_safetensors_tensor(f, i));
        if (!t) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory for '%s'", path, hf); break; }
        st = kiln_model_set_weight(m, name, t);
        if (st) st = kiln_set_error(st, "%s: tensor '%s' (as %s): %s", path, hf, name, kiln_last_error());
        kiln_tensor_free(t);
        loaded++;
    }
    const kiln_tensor *head = f ? kiln_safetensors_find(f, "lm_head.weight") : NULL, *wte = f ? kiln_safetensors_find(f, "transformer.wte.weight") : NULL;
    if (!st && head && wte && (head->dtype != wte->dtype || !kiln_shape_equal(head->shape, wte->shape) ||
                               memcmp(head->data, wte->data, (size_t)kiln_shape_numel(wte->shape) * kiln_dtype_size(wte->dtype))))
        st = kiln_set_error(KILN_UNSUPPORTED, "%s: lm_head.weight differs from wte.weight; Kiln's GPT ties the head to the embedding", path);
    if (!st && loaded != want)
        st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s: %d of the model's %d weights found (a GPT-2 of this config needs all of them)", path, loaded, want);
    kiln_safetensors_free(f);
    return st;
}

/* DIR/tokenizer.json as m's tokenizer, when the folder has one. One Kiln cannot read (another
 * tokenizer type, a normalizer) or that does not fit the model is a warning, not a failure: the
 * model still loads and generates from ids (or with another tokenizer). */
static kiln_status load_tokenizer(kiln_model *m, const char *dir) {
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (stat(path, &sb) && errno == ENOENT) return KILN_OK;
    kiln_tokenizer *t = NULL;
    kiln_status st = kiln_tokenizer_load(path, &t);
    int vocab = m->layers[1]->input_dim;      /* wte (nn_zoo_gpt_build) */
    if (!st && kiln_tokenizer_vocab_size(t) > vocab)
        st = kiln_set_error(KILN_INVALID_ARGUMENT, "it has %d ids, more than the model's vocab_size %d", kiln_tokenizer_vocab_size(t), vocab);
    if (!st) return kiln_model_set_tokenizer(m, t);
    kiln_log_msg(KILN_LOG_WARNING, "kiln: warning: %s: tokenizer.json not used: %s", dir, kiln_last_error());
    kiln_tokenizer_free(t);
    return KILN_OK;
}

kiln_status kiln_model_from_hf_gpt2(const char *dir, kiln_model **out) {
    if (!dir || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_hf_gpt2: NULL argument");
    *out = NULL;
    nn_gpt_config c;
    kiln_status st = read_config(dir, &c);
    if (st) return st;
    kiln_model *m = kiln_model_new("gpt2");
    if (!m) return kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    nn_zoo_gpt_build(m, KILN_SHAPE(c.positions), &c);
    if ((st = kiln_model_status(m))) {
        st = kiln_set_error(st, "%s: %s", dir, kiln_model_error(m));
        kiln_model_free(m);
        return st;
    }
    if ((st = load_weights(m, dir)) || (st = load_tokenizer(m, dir))) { kiln_model_free(m); return st; }
    *out = m;
    return KILN_OK;
}

/* the GPT layers of m, or an error */
static kiln_status gpt_parts(const kiln_model *m, kiln_layer **wte, kiln_layer **wpe, kiln_layer **ln_f, int *n_blocks, kiln_layer **block0) {
    *wte = *wpe = *ln_f = *block0 = NULL;
    *n_blocks = 0;
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        if (l->kind == NN_EMBEDDING) *wte = l;
        else if (l->kind == NN_POS_EMBEDDING) *wpe = l;
        else if (l->kind == NN_LAYER_NORM) *ln_f = l;
        else if (l->kind == NN_GPT_BLOCK) { if (!*block0) *block0 = l; ++*n_blocks; }
    }
    if (!*wte || !*wpe || !*ln_f || !*block0 || m->output->kind != NN_TIED_OUTPUT)
        return kiln_set_error(KILN_UNSUPPORTED, "model '%s' is not a GPT (Embedding, PositionEmbedding, GPTBlock..., LayerNormalization, TiedOutput)", m->name);
    return KILN_OK;
}

static kiln_status write_config(const char *dir, const kiln_model *m) {
    kiln_layer *wte, *wpe, *ln_f, *b;
    int n;
    kiln_status st = gpt_parts(m, &wte, &wpe, &ln_f, &n, &b);
    if (st) return st;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    kiln_atomic_file af;      /* as checkpoints: a temp file renamed over config.json, no link followed */
    if ((st = kiln_atomic_open(path, &af))) return st;
    FILE *f = af.f;
    fprintf(f, "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n  \"activation_function\": \"%s\",\n",
            b->approximate ? "gelu_new" : "gelu");
    fprintf(f, "  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"n_embd\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"vocab_size\": %d,\n", n, b->heads,
            wte->units, wpe->input_dim, wpe->input_dim, wte->input_dim);
    fprintf(f, "  \"layer_norm_epsilon\": %.17g,\n  \"resid_pdrop\": %.17g,\n  \"embd_pdrop\": %.17g,\n  \"attn_pdrop\": 0.0,\n", ln_f->epsilon, b->rate, b->rate);
    fprintf(f, "  \"initializer_range\": 0.02,\n  \"tie_word_embeddings\": true\n}\n");
    if (ferror(f)) {
        kiln_atomic_abort(&af);
        return kiln_set_error(KILN_IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
    }
    return kiln_atomic_commit(&af);
}

kiln_status kiln_model_save_hf_gpt2(kiln_model *m, const char *dir) {
    if (!m || !dir) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_save_hf_gpt2: NULL argument");
    if (mkdir(dir, 0777) && errno != EEXIST) return kiln_set_error(KILN_IO_ERROR, "cannot create '%s': %s", dir, strerror(errno));
    kiln_status st = write_config(dir, m);
    int n = 0, cap = 0;
    for (int i = 0; i < m->n_layers; i++) cap += m->layers[i]->n_vars;
    kiln_named_tensor *nt = calloc((size_t)cap + 1, sizeof *nt);
    char (*names)[128] = calloc((size_t)cap + 1, sizeof *names);
    if (!st && (!nt || !names)) st = kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; !st && i < m->n_layers; i++)
        for (int j = 0; !st && j < m->layers[i]->n_vars; j++) {
            const char *k = m->layers[i]->vars[j].name;
            if (!hf_name(k, names[n], sizeof names[n])) { st = kiln_set_error(KILN_UNSUPPORTED, "weight %s has no GPT-2 name", k); break; }
            kiln_tensor *t = NULL;
            if ((st = kiln_model_get_weight(m, k, &t))) break;
            nt[n].name = names[n];
            nt[n++].tensor = t;
        }
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!st) st = kiln_safetensors_save(path, nt, n, (const char *[]){ "format" }, (const char *[]){ "pt" }, 1);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (!st && m->tokenizer) st = kiln_tokenizer_save(m->tokenizer, path);
    for (int i = 0; i < n; i++) kiln_tensor_free((kiln_tensor *)nt[i].tensor);
    free(nt);
    free(names);
    return st;
}

bool kiln_is_hf_folder(const char *path) {
    struct stat sb;
    char p[4096];
    if (!path || stat(path, &sb) || !S_ISDIR(sb.st_mode)) return false;
    snprintf(p, sizeof p, "%s/config.json", path);
    return stat(p, &sb) == 0;
}
