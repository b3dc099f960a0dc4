/* Hugging Face GPT-2 folders with a damaged or hostile config.json (no PyPI needed; the comparison
 * with transformers is test_hf_gpt2): each is refused with a message naming the field, nothing
 * is allocated for absurd sizes, a FIFO named config.json is not waited on. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "kiln/nn.h"

static char dir[256];

static void put_config(const char *text) {
    char p[300];
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* The folder is refused with want, and the message holds part. */
static void expect(const char *config, kiln_status want, const char *part) {
    put_config(config);
    kiln_model *m = (kiln_model *)1;
    kiln_status st = kiln_model_from_hf_gpt2(dir, &m);
    CHECK_MSG(st == want && m == NULL && strstr(kiln_last_error(), part), "config %s: got %s (%s), want %s with '%s'", config,
              kiln_status_name(st), kiln_last_error(), kiln_status_name(want), part);
}

#define BASE "\"model_type\":\"gpt2\",\"n_layer\":1,\"n_head\":2,\"n_embd\":8,\"n_positions\":16"

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/kiln_hf_config_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    CHECK(kiln_is_hf_folder(dir) == false);
    expect("{", KILN_INVALID_ARGUMENT, "config.json");
    expect("[1, 2]", KILN_UNSUPPORTED, "model_type");
    expect("{\"model_type\":\"llama\"}", KILN_UNSUPPORTED, "model_type is llama");
    expect("{" BASE ",\"vocab_size\":1}", KILN_INVALID_ARGUMENT, "vocab_size");
    expect("{" BASE ",\"vocab_size\":1e12}", KILN_INVALID_ARGUMENT, "vocab_size");
    expect("{\"model_type\":\"gpt2\",\"n_layer\":1,\"n_head\":3,\"n_embd\":8,\"n_positions\":16,\"vocab_size\":50}",
           KILN_INVALID_ARGUMENT, "not divisible by n_head 3");
    expect("{" BASE ",\"vocab_size\":50,\"layer_norm_epsilon\":-1}", KILN_INVALID_ARGUMENT, "layer_norm_epsilon");
    expect("{" BASE ",\"vocab_size\":50,\"resid_pdrop\":1.5}", KILN_INVALID_ARGUMENT, "resid_pdrop");
    expect("{" BASE ",\"vocab_size\":50,\"activation_function\":\"relu\"}", KILN_UNSUPPORTED, "activation_function 'relu'");
    /* a valid config without model.safetensors: the weights file is named */
    expect("{" BASE ",\"vocab_size\":50}", KILN_NOT_FOUND, "model.safetensors");
    /* a FIFO named config.json: refused at once, not read (nothing would ever write it) */
    char p[300];
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    CHECK(mkfifo(p, 0600) == 0);
    kiln_model *m = NULL;
    CHECK(kiln_model_from_hf_gpt2(dir, &m) != KILN_OK && m == NULL && strstr(kiln_last_error(), "FIFO"));
    unlink(p);
    rmdir(dir);
    return check_summary("test_hf_config");
}
