/* Models: lifecycle, functional wiring, accessors, summary and compile. The graph and session
 * behind a model are session.c's. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_model.h"
#include "core/checked.h"
#include "kiln/text.h"

static kiln_model *model_alloc(const char *name, bool functional) {
    kiln_model *m = kiln_calloc(1, sizeof *m);
    if (!m) { kiln_set_error(KILN_OUT_OF_MEMORY, "model: out of host memory"); return NULL; }
    snprintf(m->name, sizeof m->name, "%s", name && *name ? name : (functional ? "model" : "sequential"));
    m->functional = functional;
    m->lr_current = NAN;
    return m;
}

kiln_model *kiln_sequential(const char *name, kiln_shape input_shape) {
    kiln_model *m = model_alloc(name, false);
    if (!m) return NULL;
    m->functional = true;                  /* let kiln_input create the input layer */
    kiln_layer *in = kiln_input(m, input_shape);
    m->functional = false;
    if (in) m->output = in;
    return m;
}

kiln_model *kiln_model_new(const char *name) { return model_alloc(name, true); }

/* Every input layer the output depends on must be the declared input. Each layer is visited
 * once (a layer's inputs come before it, so the stack never holds more than n_layers). */
static kiln_status check_inputs_reached(kiln_model *m, const kiln_layer *input, kiln_layer *output) {
    kiln_layer **stack = kiln_malloc((size_t)m->n_layers * sizeof *stack);
    bool *seen = kiln_calloc((size_t)m->n_layers, sizeof *seen);
    kiln_status st = KILN_OK;
    if (!stack || !seen) st = nn_fail(m, KILN_OUT_OF_MEMORY, "kiln_model_functional: model '%s': out of host memory for %d layers", m->name, m->n_layers);
    int sp = 0;
    if (!st) { stack[sp++] = output; seen[output->index] = true; }
    while (!st && sp > 0) {
        kiln_layer *l = stack[--sp];
        if (l->kind == NN_INPUT && l != input)
            st = nn_fail(m, KILN_INVALID_ARGUMENT, "kiln_model_functional: output '%s' depends on input '%s', which is not among the model's inputs", output->name, l->name);
        for (int i = 0; i < l->n_in; i++)
            if (!seen[l->in[i]->index]) { seen[l->in[i]->index] = true; stack[sp++] = l->in[i]; }
    }
    kiln_free(stack);
    kiln_free(seen);
    return st;
}

kiln_status kiln_model_functional(kiln_model *m, kiln_layer *const *inputs, int n_inputs,
                                  kiln_layer *const *outputs, int n_outputs) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!m->functional) return nn_fail(m, KILN_INVALID_ARGUMENT, "kiln_model_functional: model '%s' is sequential", m->name);
    if (n_inputs != 1 || n_outputs != 1 || !inputs || !outputs || !inputs[0] || !outputs[0])
        return nn_fail(m, KILN_UNSUPPORTED, "kiln_model_functional: model '%s': this version supports exactly one input and one output (got %d and %d)", m->name, n_inputs, n_outputs);
    if (inputs[0]->model != m || outputs[0]->model != m)
        return nn_fail(m, KILN_INVALID_ARGUMENT, "kiln_model_functional: the layers belong to another model");
    if (inputs[0]->kind != NN_INPUT)
        return nn_fail(m, KILN_INVALID_ARGUMENT, "kiln_model_functional: input '%s' is not an input layer (make it with kiln_input())", inputs[0]->name);
    if ((st = check_inputs_reached(m, inputs[0], outputs[0]))) return st;
    m->input = inputs[0];
    m->output = outputs[0];
    m->finalized = true;
    return KILN_OK;
}

void kiln_model_free(kiln_model *m) {
    if (!m) return;
    nn_graph_drop(m);
    nn_carry_clear(m);
    kiln_tensor_free(m->lr_t);
    for (int i = 0; i < m->n_layers; i++) nn_layer_free(m->layers[i]);
    nn_class_names_clear(m);
    kiln_tokenizer_free(m->tokenizer);
    kiln_free(m->data_spec);
    kiln_free(m->layers);
    kiln_name_index_free(&m->layer_index);
    kiln_free(m->history);
    nn_metric_set_free(m->mset);
    kiln_free(m);
}

/* ---- class names ---- */
void nn_class_names_clear(kiln_model *m) {
    for (int i = 0; i < m->n_class_names; i++) kiln_free(m->class_names[i]);
    kiln_free(m->class_names);
    m->class_names = NULL;
    m->n_class_names = 0;
}

kiln_status kiln_model_set_class_names(kiln_model *m, const char *const *names, int n) {
    if (!m) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_set_class_names: NULL model");
    if (n < 0 || (n > 0 && !names)) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_set_class_names: model '%s': no name list (%d names)", m->name, n);
    for (int i = 0; i < n; i++)
        if (!names[i]) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_set_class_names: model '%s': class name %d is NULL", m->name, i);
    char **c = n ? kiln_calloc((size_t)n, sizeof *c) : NULL;
    bool oom = n && !c;
    for (int i = 0; i < n && !oom; i++) {
        size_t k = strlen(names[i]) + 1;
        if (!(c[i] = kiln_malloc(k))) oom = true;
        else memcpy(c[i], names[i], k);
    }
    if (oom) {
        for (int i = 0; c && i < n; i++) kiln_free(c[i]);
        kiln_free(c);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_model_set_class_names: model '%s': out of host memory for %d names", m->name, n);
    }
    nn_class_names_clear(m);
    m->class_names = c;
    m->n_class_names = n;
    return KILN_OK;
}

kiln_status kiln_model_set_data_spec(kiln_model *m, const char *spec) {
    if (!m) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_set_data_spec: NULL model");
    char *c = NULL;
    if (spec && *spec) {
        size_t k = strlen(spec) + 1;
        if (!(c = kiln_malloc(k))) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_model_set_data_spec: model '%s': out of host memory", m->name);
        memcpy(c, spec, k);
    }
    kiln_free(m->data_spec);
    m->data_spec = c;
    return KILN_OK;
}
const char *kiln_model_data_spec(const kiln_model *m) { return m ? m->data_spec : NULL; }

int kiln_model_class_count(const kiln_model *m) { return m ? m->n_class_names : 0; }
const char *kiln_model_class_name(const kiln_model *m, int i) { return m && i >= 0 && i < m->n_class_names ? m->class_names[i] : NULL; }

kiln_status kiln_model_status(const kiln_model *m) { return m ? m->status : KILN_INVALID_ARGUMENT; }
const char *kiln_model_error(const kiln_model *m) { return m ? m->error : "NULL model"; }
const char *kiln_model_name(const kiln_model *m) { return m ? m->name : ""; }
void kiln_model_set_seed(kiln_model *m, uint64_t seed) { if (m) m->seed = seed; }
int kiln_model_layer_count(const kiln_model *m) { return m ? m->n_layers : 0; }
kiln_layer *kiln_model_layer(const kiln_model *m, int i) { return m && i >= 0 && i < m->n_layers ? m->layers[i] : NULL; }
kiln_layer *kiln_model_find_layer(const kiln_model *m, const char *name) {
    int i = m && name ? kiln_name_index_find(&m->layer_index, name) : -1;
    return i >= 0 ? m->layers[i] : NULL;
}
const char *kiln_layer_name(const kiln_layer *l) { return l ? l->name : ""; }
const char *kiln_layer_type(const kiln_layer *l) { return l ? nn_kind_type(l->kind) : ""; }
kiln_shape kiln_layer_output_shape(const kiln_layer *l) { return l ? l->out : KILN_SCALAR; }
kiln_shape kiln_model_input_shape(const kiln_model *m) { return m && m->input ? m->input->out : KILN_SCALAR; }
kiln_shape kiln_model_output_shape(const kiln_model *m) { return m && m->output ? m->output->out : KILN_SCALAR; }
int kiln_model_epoch(const kiln_model *m) { return m ? m->epoch : 0; }
kiln_graph *kiln_model_graph(const kiln_model *m) { return m ? m->g : NULL; }
kiln_session *kiln_model_session(const kiln_model *m) { return m ? m->s : NULL; }

int64_t kiln_model_param_count(const kiln_model *m, bool trainable_only) {
    int64_t n = 0;
    for (int i = 0; m && i < m->n_layers; i++) n = kiln_sat_add_i64(n, nn_layer_params(m->layers[i], trainable_only));   /* saturates */
    return n;
}

bool nn_is_weight_name(const kiln_model *m, const char *name, const nn_var **var) {
    for (int i = 0; i < m->n_layers; i++)
        for (int j = 0; j < m->layers[i]->n_vars; j++)
            if (!strcmp(m->layers[i]->vars[j].name, name)) { if (var) *var = &m->layers[i]->vars[j]; return true; }
    return false;
}

/* ---- summary ---- */
static void commas(int64_t v, char *buf, size_t n) {
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    size_t k = 0;
    for (int i = 0; i < len && k + 1 < n; i++) {
        buf[k++] = tmp[i];
        int left = len - 1 - i;
        if (left > 0 && left % 3 == 0 && tmp[i] != '-' && k + 1 < n) buf[k++] = ',';
    }
    buf[k] = 0;
}

static void rule(FILE *f, char c, int n) { for (int i = 0; i < n; i++) fputc(c, f); fputc('\n', f); }

void kiln_model_summary(const kiln_model *m, FILE *f) {
    if (!m || !f) return;
    bool conn = m->functional;
    int w1 = 28;                           /* widen the first column for long names */
    for (int i = 0; i < m->n_layers; i++) {
        int k = (int)(strlen(m->layers[i]->name) + strlen(nn_kind_type(m->layers[i]->kind)) + 4);
        if (k > w1) w1 = k;
    }
    int width = w1 + 52 + (conn ? 33 : 0);
    fprintf(f, "Model: \"%s\"\n", m->name);
    rule(f, '_', width);
    fprintf(f, " %-*s %-25s %-10s %-*s%s\n", w1, "Layer (type)", "Output Shape", "Param #", conn ? 14 : 0, "FLOPs", conn ? " Connected to" : "");
    rule(f, '=', width);
    for (int i = 0; i < m->n_layers; i++) {
        const kiln_layer *l = m->layers[i];
        if (!conn && l->kind == NN_INPUT) continue;
        char lt[160], sh[96], pc[32], fl[32];
        snprintf(lt, sizeof lt, "%s (%s)", l->name, nn_kind_type(l->kind));
        size_t k = (size_t)snprintf(sh, sizeof sh, "(None");
        for (int d = 0; d < l->out.rank && k < sizeof sh; d++) k += (size_t)snprintf(sh + k, sizeof sh - k, ", %lld", (long long)l->out.dim[d]);
        if (k < sizeof sh) snprintf(sh + k, sizeof sh - k, ")");
        commas(nn_layer_params(l, false), pc, sizeof pc);
        commas(kiln_layer_flops(l), fl, sizeof fl);
        fprintf(f, " %-*s %-25s %-10s %-*s", w1, lt, sh, pc, conn ? 14 : 0, fl);
        for (int j = 0; conn && j < l->n_in; j++) fprintf(f, "%s%s", j ? ", " : " ", l->in[j]->name);
        fputc('\n', f);
        if (l->ext && l->ext->summary) l->ext->summary(l->ext_data, f);      /* an imported graph's ops */
    }
    rule(f, '=', width);
    int64_t total = kiln_model_param_count(m, false), tr = kiln_model_param_count(m, true);
    char a[32], b[32], c[32];
    commas(total, a, sizeof a); commas(tr, b, sizeof b); commas(total - tr, c, sizeof c);
    fprintf(f, "Total params: %s (%.2f MB)\nTrainable params: %s\nNon-trainable params: %s\n", a, (double)total * 4 / (1024.0 * 1024.0), b, c);
    int64_t flops = kiln_model_flops(m);
    commas(flops, a, sizeof a);
    fprintf(f, "FLOPs per example: %s (%.2f MFLOPs; forward pass, a multiply-add counts as 2 FLOPs)\n", a, (double)flops / 1e6);
    rule(f, '_', width);
}

/* ---- compile ---- */
kiln_status kiln_compile(kiln_model *m, const kiln_compile_opts *o) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!o) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: NULL options");
    if (m->functional && !m->finalized)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: functional model '%s' has no outputs yet: call kiln_model_functional() first", m->name);
    if (!m->output || m->output->kind == NN_INPUT)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: model '%s' has no layers", m->name);
    kiln_compile_opts c = *o;
    if ((unsigned)c.optimizer.kind >= KILN_OPT_COUNT) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: unknown optimizer %d", (int)c.optimizer.kind);
    if (c.optimizer.lr == 0) c.optimizer.lr = c.optimizer.kind == KILN_OPT_SGD ? 0.01 : 0.001;
    if (!(c.optimizer.lr > 0) || !isfinite(c.optimizer.lr)) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: learning rate %g must be positive", c.optimizer.lr);
    if ((unsigned)c.loss >= KILN_LOSS_COUNT) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: unknown loss %d", (int)c.loss);
    if ((unsigned)c.schedule.kind >= KILN_LR_KIND_COUNT) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: unknown lr schedule %d", (int)c.schedule.kind);
    if (c.top_k <= 0) c.top_k = 5;
    if (c.huber_delta < 0 || !isfinite(c.huber_delta))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: huber_delta %g must be positive (0: Keras' default 1.0)", c.huber_delta);
    kiln_shape out = m->output->out;
    char b[96];
    /* a language model: (T, vocabulary) logits, labels (T) next-token ids */
    bool seq = out.rank == 2 && c.loss == KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    if (seq) out = KILN_SHAPE(out.dim[1]);
    if (out.rank != 1)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "kiln_compile: model '%s' output %s must be (None, classes) for these losses; end with kiln_layer_flatten() and kiln_layer_dense()",
                              m->name, kiln_shape_str(out, b, sizeof b));
    if ((c.loss == KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY || c.loss == KILN_LOSS_CATEGORICAL_CROSSENTROPY) && out.dim[0] < 2)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "kiln_compile: categorical cross-entropy needs one output per class, but '%s' has %lld; use KILN_LOSS_BINARY_CROSSENTROPY for one output",
                              m->output->name, (long long)out.dim[0]);
    if (c.loss == KILN_LOSS_BINARY_CROSSENTROPY && out.dim[0] != 1)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "kiln_compile: binary cross-entropy needs one output unit, but '%s' has %lld", m->output->name, (long long)out.dim[0]);
    const char *dev = c.device && *c.device ? c.device : "auto";
    if (strcmp(dev, "auto") && strcmp(dev, "cpu") && strcmp(dev, "ref") && strcmp(dev, "cuda") && strcmp(dev, "gpu"))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: device '%s' unknown: use auto, cpu, gpu (cuda) or ref", dev);
    snprintf(m->device, sizeof m->device, "%s", dev);
    c.device = m->device;
    if ((unsigned)c.precision >= KILN_PRECISION_COUNT)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: unknown precision %d: use a kiln_precision value", (int)c.precision);
    struct nn_metric_set *ms = NULL;
    if ((st = nn_metric_set_parse(c.metric_list, &ms))) return st;
    nn_metric_set_free(m->mset);
    m->mset = ms;
    c.metric_list = NULL;                  /* parsed; the caller's string is not kept */
    m->copts = c;
    m->precision = nn_precision_resolve(m);
    m->compiled = true;
    m->base_lr = c.optimizer.lr;
    m->train.batch = 0;                    /* the training step is (re)built by the next fit */
    return KILN_OK;
}

const kiln_logs *kiln_model_history(const kiln_model *m, int *n_epochs) {
    if (n_epochs) *n_epochs = m ? m->n_history : 0;
    return m ? m->history : NULL;
}

void kiln_model_reset_history(kiln_model *m) { if (m) m->n_history = 0; }
