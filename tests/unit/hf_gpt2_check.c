/* The Hugging Face GPT-2 judge's Kiln side (run by test_hf_gpt2.sh after make_gpt2.py): from the
 * save_pretrained folder DIR/model, Kiln's logits equal transformers' within 1e-4, greedy
 * generation gives the same ids, and one AdamW step (the same lr, betas, eps, weight decay, no
 * clipping) gives the same weights within 1e-5; the model saved back as a Hugging Face folder reads
 * back with the same logits. Kiln's Adam is Keras's (epsilon added to sqrt(v) before the bias
 * correction); PyTorch's adds it after: at step 1 they agree for eps_kiln = eps_torch sqrt(1 - beta2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/io.h"

static int read_ids(const char *dir, const char *file, int32_t *ids, int cap) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    FILE *f = fopen(p, "r");
    int n = 0;
    long v;
    while (f && n < cap && fscanf(f, "%ld", &v) == 1) { ids[n++] = (int32_t)v; if (fgetc(f) != ',') break; }
    if (f) fclose(f);
    return n;
}

static kiln_tensor *ids_tensor(const int32_t *ids, int n, kiln_dtype dt) {
    kiln_tensor *t = kiln_tensor_new(dt, KILN_SHAPE(1, n));
    for (int i = 0; i < n; i++) kiln_tensor_set(t, i, ids[i]);
    return t;
}

static double logits_diff(kiln_model *m, const char *dir, const int32_t *ids) {
    kiln_tensor *x = ids_tensor(ids, 16, KILN_F32), *y = NULL;
    CHECK_OK(kiln_predict(m, x, NULL, &y));
    char p[1024];
    snprintf(p, sizeof p, "%s/logits.txt", dir);
    FILE *f = fopen(p, "r");
    double worst = y && f ? 0 : INFINITY, v;
    for (int i = 0; y && f && i < 16 * 50; i++) {
        if (fscanf(f, "%lf", &v) != 1) { worst = INFINITY; break; }
        worst = fmax(worst, fabs(v - kiln_tensor_get(y, i)));
    }
    if (f) fclose(f);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return worst;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: hf_gpt2_check DIR (from make_gpt2.py)\n"); return 2; }
    const char *dir = argv[1];
    char p[1024];
    snprintf(p, sizeof p, "%s/model", dir);
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_hf_gpt2(p, &m));
    if (!m) return check_summary("hf_gpt2_check");
    kiln_optimizer o = kiln_adamw(1e-2, 0.1);
    o.epsilon = 1e-8 * sqrt(1 - 0.999);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = o, .from_logits = true, .device = "cpu" }));
    int32_t ids[16], gen[32], seq[17];
    CHECK(read_ids(dir, "ids.txt", ids, 16) == 16 && read_ids(dir, "seq.txt", seq, 17) == 17);
    int n_gen = read_ids(dir, "gen.txt", gen, 32);
    double d = logits_diff(m, dir, ids);
    printf("logits: max |Kiln - transformers| %.3g\n", d);
    CHECK_MSG(d < 1e-4, "logits differ by %g", d);
    int32_t *out = NULL;
    int n = 0;
    CHECK_OK(kiln_generate(m, gen, 4, &(kiln_generate_opts){ .tokens = n_gen - 4 }, &out, &n));
    CHECK_MSG(out && n == n_gen && !memcmp(out, gen, sizeof *gen * (size_t)n), "greedy ids differ");
    printf("greedy generation: %d ids, %s\n", n, out && n == n_gen && !memcmp(out, gen, sizeof *gen * (size_t)n) ? "the same" : "DIFFERENT");
    free(out);
    /* one AdamW step */
    kiln_tensor *x = ids_tensor(seq, 16, KILN_F32), *y = ids_tensor(seq + 1, 16, KILN_I32);
    double loss = 0;
    CHECK_OK(kiln_train_on_batch(m, x, y, &loss));
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    snprintf(p, sizeof p, "%s/kiln_after", dir);
    CHECK_OK(kiln_model_save_hf_gpt2(m, p));
    kiln_safetensors *a = NULL, *b = NULL;
    snprintf(p, sizeof p, "%s/after.safetensors", dir);
    CHECK_OK(kiln_safetensors_load(p, &a));
    snprintf(p, sizeof p, "%s/kiln_after/model.safetensors", dir);
    CHECK_OK(kiln_safetensors_load(p, &b));
    double worst = 0;
    int compared = 0;
    char where[160] = "";
    for (int i = 0; a && b && i < kiln_safetensors_count(a); i++) {
        const kiln_tensor *ta = kiln_safetensors_tensor(a, i), *tb = kiln_safetensors_find(b, kiln_safetensors_name(a, i));
        CHECK_MSG(tb && kiln_shape_equal(ta->shape, tb->shape), "%s missing or reshaped in Kiln's save", kiln_safetensors_name(a, i));
        /* the key bias: its gradient is 0 (softmax ignores a constant added to every score), so
         * each side's rounding noise g gives an Adam step of about lr g / (|g| + eps): not compared */
        bool key_bias = strstr(kiln_safetensors_name(a, i), "c_attn.bias") != NULL;
        for (int64_t k = 0; tb && k < kiln_shape_numel(ta->shape); k++) {
            double e = fabs(kiln_tensor_get(ta, k) - kiln_tensor_get(tb, k));
            if (key_bias && k >= 32 && k < 64) continue;
            if (e > worst) { worst = e; snprintf(where, sizeof where, "%s[%lld]", kiln_safetensors_name(a, i), (long long)k); }
        }
        compared++;
    }
    printf("one AdamW step: loss %.6f, %d tensors, max |Kiln - PyTorch| %.3g (at %s; key biases left out)\n", loss, compared, worst, where);
    CHECK_MSG(compared == 4 + 2 * 12 && worst < 1e-5, "%d tensors, max diff %g at %s", compared, worst, where);
    kiln_safetensors_free(a);
    kiln_safetensors_free(b);
    kiln_model_free(m);
    /* the folder Kiln wrote reads back */
    snprintf(p, sizeof p, "%s/kiln_after", dir);
    CHECK_OK(kiln_model_from_hf_gpt2(p, &m));
    kiln_model_free(m);
    return check_summary("hf_gpt2_check");
}
