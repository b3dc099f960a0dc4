/* Training tokens/s of the gpt_char preset (nanoGPT's shakespeare-char model: 6 layers, 6 heads,
 * 384 wide, context 256, vocabulary 65, dropout 0.2) on random token batches, nanoGPT's recipe:
 * AdamW (lr 1e-3, betas 0.9/0.99, weight decay 0.1), gradients clipped at global norm 1.0.
 * usage: bench_gpt_char [threads] [float32|mixed_bfloat16] [batch] [steps] [context] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "kiln/kiln.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2, batch = argc > 3 ? atoi(argv[3]) : 8, steps = argc > 4 ? atoi(argv[4]) : 10;
    int ctx = argc > 5 ? atoi(argv[5]) : 256;
    const char *prec = argc > 2 ? argv[2] : "float32";
    kiln_precision p = KILN_PRECISION_FLOAT32;
    if (kiln_precision_parse(prec, &p) != KILN_OK) { fprintf(stderr, "%s\n", kiln_last_error()); return 2; }
    kiln_model *m = kiln_model_preset("gpt_char", KILN_SHAPE(ctx), 65);
    kiln_optimizer o = kiln_adamw(1e-3, 0.1);
    o.beta2 = 0.99;
    o.clip_norm = 1.0;
    if (!m || kiln_compile(m, &(kiln_compile_opts){ .optimizer = o, .from_logits = true, .device = "cpu", .precision = p, .num_threads = threads })) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return 1;
    }
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(batch, ctx)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(batch, ctx));
    unsigned s = 1;
    for (int i = 0; i < batch * ctx; i++) { s = s * 1103515245u + 12345u; kiln_tensor_set(x, i, (s >> 16) % 65); kiln_tensor_set(y, i, (s >> 8) % 65); }
    double loss = 0, t0 = 0;
    for (int i = 0; i < steps + 2; i++) {       /* two warm-up steps (the plan, the arena) */
        if (i == 2) t0 = now();
        if (kiln_train_on_batch(m, x, y, &loss)) { fprintf(stderr, "%s\n", kiln_last_error()); return 1; }
    }
    double dt = now() - t0;
    printf("kiln gpt_char %s threads=%d batch=%d context=%d steps=%d loss=%.4f params=%lld tokens_per_sec=%.1f\n", prec, threads, batch, ctx, steps, loss,
           (long long)kiln_model_param_count(m, true),
           (double)steps * batch * ctx / dt);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_model_free(m);
    return 0;
}
