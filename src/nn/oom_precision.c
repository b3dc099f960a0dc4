/* The out-of-memory error's --precision advice. The runtime's advice (src/runtime/oom_advice.c)
 * names the smaller batch and the accumulation that fit, from the failed plan; the precision
 * policy is a model decision the runtime does not see, so kiln_fit adds it here: the training
 * step of the same batch is planned again under mixed_bfloat16 (the real plan of the bf16 graph,
 * kiln_model_memory, never a formula) and, when that plan is smaller than float32's, the advice
 * names `--precision mixed_bfloat16` with its figure and whether it fits alone. The model is put
 * back as it was (its float32 step rebuilt, the variables carried). */
#include <stdio.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "kiln/device.h"

/* Peak (arena + variables) and what the device can allocate, for the model's step at batch. */
static kiln_status peak_at(kiln_model *m, int batch, int accumulate, size_t *peak, size_t *avail) {
    kiln_memory_report r;
    kiln_status st = kiln_model_memory(m, batch, accumulate, &r);
    if (st) return st;
    *peak = r.peak_bytes;
    *avail = r.device_free_bytes;
    kiln_memory_report_free(&r);
    return KILN_OK;
}

void nn_oom_precision_advice(kiln_model *m, int batch) {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    if (!m->compiled || m->precision != KILN_PRECISION_FLOAT32 || !strstr(msg, "To fit:")) return;
    bool on_cpu = !strcmp(m->device, "cpu") || (!strcmp(m->device, "auto") && !kiln_gpu_available());
    if (on_cpu && !kiln_cpu_has_bf16()) return;               /* bf16 would run as float32 there */
    int acc = nn_accum_n(m);
    size_t p32 = 0, p16 = 0, avail = 0, avail16 = 0;
    kiln_status st = peak_at(m, batch, acc, &p32, &avail);
    if (!st) {
        m->precision = KILN_PRECISION_MIXED_BFLOAT16;
        m->train.batch = 0;                                   /* rebuilds the step in the policy */
        st = peak_at(m, batch, acc, &p16, &avail16);
        m->precision = KILN_PRECISION_FLOAT32;
        m->train.batch = 0;
        nn_ensure_train(m, batch);                            /* the float32 step again */
    }
    if (st || p16 >= p32) { kiln_set_error(KILN_OUT_OF_MEMORY, "%s", msg); return; }
    char extra[512];
    bool fits = avail && p16 <= avail;
    snprintf(extra, sizeof extra, "; or --precision mixed_bfloat16 (C API: kiln_compile_opts.precision): the batch of %d's plan needs %.2f MiB "
             "with its variables in it (float32: %.2f MiB)%s", batch, p16 / 1048576.0, p32 / 1048576.0,
             fits ? ", which fits" : avail ? ", not enough alone: combine it with one of the above" : "");
    kiln_set_error(KILN_OUT_OF_MEMORY, "%s%s", msg, extra);
}
