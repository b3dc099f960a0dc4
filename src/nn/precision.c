/* The precision policy (kiln_compile_opts.precision): which dtype a model's convolutions and
 * matmuls compute in. The policy is applied as graph autocast while the layers are built
 * (src/graph/autocast.c); variables, optimizer state, losses and metrics stay f32. */
#include <stdio.h>
#include <string.h>
#include "nn/nn_types.h"
#include "core/core.h"
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
        kiln_log_msg(KILN_LOG_WARNING, "kiln: model '%s': this CPU has no bf16 instructions (AVX512-BF16 or AMX): mixed_bfloat16 runs as float32",
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

/* Dynamic loss scaling, as Keras' LossScaleOptimizer and PyTorch's GradScaler: the loss is
 * multiplied by the scale before the backward pass (so small f16 gradients do not flush to 0),
 * the gradients divided by it after (with accumulation: after the micro-batches' scaled gradients
 * are summed, the scale being fixed within the batch); a step whose gradients are not all finite
 * is skipped and halves the scale, 2000 good steps in a row double it (grad_guard.c builds the
 * check and the scale update). All of it is graph ops in the step. */
#define LOSS_SCALE_INIT 32768.0

kiln_status nn_precision_gradients(kiln_model *m, nn_forward *f, kiln_node *loss, kiln_node *const *vars, int n, kiln_node **grads) {
    kiln_graph *g = m->g;
    f->loss_scale = f->skipped_steps = f->good_steps = f->step_lr = f->scale_update = NULL;
    if (m->precision != KILN_PRECISION_MIXED_FLOAT16 || n == 0) return kiln_gradients(g, loss, vars, n, grads);
    kiln_node *scale = kiln_variable_trainable(g, "loss_scale/scale", KILN_F32, KILN_SCALAR, kiln_init_constant(LOSS_SCALE_INIT), false);
    f->good_steps = kiln_variable_trainable(g, "loss_scale/good_steps", KILN_F32, KILN_SCALAR, kiln_init_constant(0), false);
    f->skipped_steps = kiln_variable_trainable(g, "loss_scale/skipped_steps", KILN_F32, KILN_SCALAR, kiln_init_constant(0), false);
    f->loss_scale = scale;
    return kiln_gradients(g, kiln_mul(g, loss, scale), vars, n, grads);
}

kiln_status nn_precision_unscale(kiln_model *m, nn_forward *f, kiln_node **grads, int n) {
    if (!f->loss_scale) return KILN_OK;
    kiln_graph *g = m->g;
    kiln_node *inv = kiln_div(g, kiln_scalar(g, KILN_F32, 1.0), f->loss_scale);
    for (int i = 0; i < n; i++) grads[i] = kiln_mul(g, grads[i], inv);
    kiln_status st = kiln_graph_status(g);
    return st ? nn_fail(m, st, "model '%s': loss scaling: %s", m->name, kiln_graph_error(g)) : KILN_OK;
}

void nn_precision_logs(kiln_model *m, const nn_forward *f, kiln_logs *l) {
    if (!f->loss_scale || !m->s) return;
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    if (!t) return;
    if (kiln_session_read_variable(m->s, f->skipped_steps, t) == KILN_OK) l->skipped_steps = (int64_t)kiln_tensor_get(t, 0);
    if (kiln_session_read_variable(m->s, f->loss_scale, t) == KILN_OK) l->loss_scale = kiln_tensor_get(t, 0);
    kiln_tensor_free(t);
}

const char *nn_precision_csv_header(const kiln_model *m) {
    return m->compiled && m->precision == KILN_PRECISION_MIXED_FLOAT16 ? ",skipped_steps,loss_scale" : "";
}

void nn_precision_csv_row(const kiln_model *m, const kiln_logs *l, char *buf, size_t n) {
    if (*nn_precision_csv_header(m)) snprintf(buf, n, ",%lld,%g", (long long)l->skipped_steps, l->loss_scale);
    else if (n) buf[0] = 0;
}
