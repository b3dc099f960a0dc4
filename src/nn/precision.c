/* The precision policy (kiln_compile_opts.precision): which dtype a model's convolutions and
 * matmuls compute in. The policy is applied as graph autocast while the layers are built
 * (src/graph/autocast.c); variables, optimizer state, losses and metrics stay f32. */
#include <stdio.h>
#include <string.h>
#include "nn/nn_types.h"
#include "kiln/device.h"

static const char *const names[KILN_PRECISION_COUNT] = { "float32", "mixed_bfloat16", "mixed_float16" };

const char *kiln_precision_name(kiln_precision p) {
    return (unsigned)p < KILN_PRECISION_COUNT ? names[p] : "?";
}

kiln_status kiln_precision_parse(const char *s, kiln_precision *out) {
    static const struct { const char *name; kiln_precision p; } forms[] = {
        { "float32", KILN_PRECISION_FLOAT32 }, { "f32", KILN_PRECISION_FLOAT32 }, { "fp32", KILN_PRECISION_FLOAT32 },
        { "mixed_bfloat16", KILN_PRECISION_MIXED_BFLOAT16 }, { "bf16", KILN_PRECISION_MIXED_BFLOAT16 },
        { "bfloat16", KILN_PRECISION_MIXED_BFLOAT16 },
        { "mixed_float16", KILN_PRECISION_MIXED_FLOAT16 }, { "fp16", KILN_PRECISION_MIXED_FLOAT16 },
        { "f16", KILN_PRECISION_MIXED_FLOAT16 }, { "float16", KILN_PRECISION_MIXED_FLOAT16 },
    };
    for (size_t i = 0; s && i < sizeof forms / sizeof forms[0]; i++)
        if (!strcmp(s, forms[i].name)) { if (out) *out = forms[i].p; return KILN_OK; }
    return kiln_set_error(KILN_INVALID_ARGUMENT, "precision '%s' unknown: use float32, mixed_bfloat16 (bf16) or mixed_float16 (fp16)",
                          s ? s : "(null)");
}

kiln_precision kiln_model_precision(const kiln_model *m) {
    return m && m->compiled ? m->precision : KILN_PRECISION_FLOAT32;
}

/* Where the step runs on the CPU backend (asked for, or auto without a GPU), bf16 needs the
 * CPU's bf16 instructions: oneDNN would otherwise emulate them slower than f32. The ref backend
 * computes every dtype exactly, so it keeps the policy (tests). */
kiln_precision nn_precision_resolve(const kiln_model *m) {
    kiln_precision p = m->copts.precision;
    if (p == KILN_PRECISION_FLOAT32) return p;
    bool on_cpu = !strcmp(m->device, "cpu") || (!strcmp(m->device, "auto") && !kiln_gpu_available());
    if (on_cpu && p == KILN_PRECISION_MIXED_BFLOAT16 && !kiln_cpu_has_bf16()) {
        fprintf(stderr, "kiln: model '%s': this CPU has no bf16 instructions (AVX512-BF16 or AMX): mixed_bfloat16 runs as float32\n",
                m->name);
        return KILN_PRECISION_FLOAT32;
    }
    return p;
}

kiln_dtype nn_precision_compute_dtype(const kiln_model *m) {
    if (!m->compiled) return KILN_F32;
    switch (m->precision) {
    case KILN_PRECISION_MIXED_BFLOAT16: return KILN_BF16;
    case KILN_PRECISION_MIXED_FLOAT16: return KILN_F16;
    default: return KILN_F32;
    }
}
