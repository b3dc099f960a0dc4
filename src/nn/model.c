/* Models: lifecycle, sticky errors, summary, compile, and the one graph behind a model (training
 * step + inference forwards sharing the variables) with its session. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_internal.h"

kiln_status nn_fail(kiln_model *m, kiln_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kiln_set_errorv(s, fmt, ap);
    va_end(ap);
    if (m && m->status == KILN_OK) {
        m->status = s;
        snprintf(m->error, sizeof m->error, "%s", kiln_last_error());
    }
    return s;
}

kiln_status nn_check(const kiln_model *m) {
    if (!m) return kiln_set_error(KILN_INVALID_ARGUMENT, "NULL model");
    if (m->status != KILN_OK) return kiln_set_error(m->status, "%s", m->error);
    return KILN_OK;
}

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
    /* every input layer the output depends on must be the declared input */
    kiln_layer *stack[256]; int sp = 0;
    stack[sp++] = outputs[0];
    while (sp > 0) {
        kiln_layer *l = stack[--sp];
        if (l->kind == NN_INPUT && l != inputs[0])
            return nn_fail(m, KILN_INVALID_ARGUMENT, "kiln_model_functional: output '%s' depends on input '%s', which is not among the model's inputs", outputs[0]->name, l->name);
        for (int i = 0; i < l->n_in && sp < 256; i++) stack[sp++] = l->in[i];
    }
    m->input = inputs[0];
    m->output = outputs[0];
    m->finalized = true;
    return KILN_OK;
}

static void forward_clear(nn_forward *f) {
    kiln_tensor_free(f->out_t);
    kiln_tensor_free(f->loss_t);
    memset(f, 0, sizeof *f);
}

static void graph_drop(kiln_model *m) {
    kiln_session_free(m->s);
    kiln_graph_free(m->g);
    m->s = NULL;
    m->g = NULL;
    m->lr_var = NULL;
    forward_clear(&m->train);
    for (int i = 0; i < m->n_infer; i++) forward_clear(&m->infer[i]);
    m->n_infer = 0;
    for (int i = 0; i < m->n_layers; i++) {
        m->layers[i]->node = NULL;
        for (int j = 0; j < m->layers[i]->n_vars; j++) m->layers[i]->vars[j].node = NULL;
    }
}

void nn_carry_clear(kiln_model *m) {
    for (int i = 0; i < m->n_carry; i++) { kiln_free(m->carry[i].name); kiln_tensor_free(m->carry[i].t); }
    kiln_free(m->carry);
    m->carry = NULL;
    m->n_carry = 0;
}

kiln_status nn_carry_add(kiln_model *m, const char *name, const kiln_tensor *t) {
    for (int i = 0; i < m->n_carry; i++)
        if (!strcmp(m->carry[i].name, name)) {
            kiln_tensor_free(m->carry[i].t);
            m->carry[i].t = NULL;
            kiln_free(m->carry[i].name);
            m->carry[i] = m->carry[--m->n_carry];
            break;
        }
    nn_carry *c = kiln_realloc(m->carry, (size_t)(m->n_carry + 1) * sizeof *c);
    if (!c) return kiln_set_error(KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name);
    m->carry = c;
    kiln_tensor *copy = kiln_tensor_new(t->dtype, t->shape);
    if (!copy) return kiln_set_error(KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name);
    memcpy(copy->data, t->data, kiln_tensor_nbytes(t));
    c[m->n_carry].name = kiln_strdup(name);
    c[m->n_carry].t = copy;
    m->n_carry++;
    return KILN_OK;
}

void kiln_model_free(kiln_model *m) {
    if (!m) return;
    graph_drop(m);
    nn_carry_clear(m);
    kiln_tensor_free(m->lr_t);
    for (int i = 0; i < m->n_layers; i++) kiln_free(m->layers[i]);
    kiln_free(m->layers);
    kiln_free(m->history);
    kiln_free(m);
}

kiln_status kiln_model_status(const kiln_model *m) { return m ? m->status : KILN_INVALID_ARGUMENT; }
const char *kiln_model_error(const kiln_model *m) { return m ? m->error : "NULL model"; }
const char *kiln_model_name(const kiln_model *m) { return m ? m->name : ""; }
void kiln_model_set_seed(kiln_model *m, uint64_t seed) { if (m) m->seed = seed; }
int kiln_model_layer_count(const kiln_model *m) { return m ? m->n_layers : 0; }
kiln_layer *kiln_model_layer(const kiln_model *m, int i) { return m && i >= 0 && i < m->n_layers ? m->layers[i] : NULL; }
kiln_layer *kiln_model_find_layer(const kiln_model *m, const char *name) {
    for (int i = 0; m && i < m->n_layers; i++) if (!strcmp(m->layers[i]->name, name)) return m->layers[i];
    return NULL;
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
    for (int i = 0; m && i < m->n_layers; i++) n += nn_layer_params(m->layers[i], trainable_only);
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
    int width = w1 + 37 + (conn ? 33 : 0);
    fprintf(f, "Model: \"%s\"\n", m->name);
    rule(f, '_', width);
    fprintf(f, " %-*s %-25s %-10s%s\n", w1, "Layer (type)", "Output Shape", "Param #", conn ? " Connected to" : "");
    rule(f, '=', width);
    for (int i = 0; i < m->n_layers; i++) {
        const kiln_layer *l = m->layers[i];
        if (!conn && l->kind == NN_INPUT) continue;
        char lt[160], sh[96], pc[32];
        snprintf(lt, sizeof lt, "%s (%s)", l->name, nn_kind_type(l->kind));
        size_t k = (size_t)snprintf(sh, sizeof sh, "(None");
        for (int d = 0; d < l->out.rank && k < sizeof sh; d++) k += (size_t)snprintf(sh + k, sizeof sh - k, ", %lld", (long long)l->out.dim[d]);
        if (k < sizeof sh) snprintf(sh + k, sizeof sh - k, ")");
        commas(nn_layer_params(l, false), pc, sizeof pc);
        fprintf(f, " %-*s %-25s %-10s", w1, lt, sh, pc);
        for (int j = 0; conn && j < l->n_in; j++) fprintf(f, "%s%s", j ? ", " : " ", l->in[j]->name);
        fputc('\n', f);
    }
    rule(f, '=', width);
    int64_t total = kiln_model_param_count(m, false), tr = kiln_model_param_count(m, true);
    char a[32], b[32], c[32];
    commas(total, a, sizeof a); commas(tr, b, sizeof b); commas(total - tr, c, sizeof c);
    fprintf(f, "Total params: %s (%.2f MB)\nTrainable params: %s\nNon-trainable params: %s\n", a, (double)total * 4 / (1024.0 * 1024.0), b, c);
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
    kiln_shape out = m->output->out;
    char b[96];
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
    m->copts = c;
    m->compiled = true;
    m->base_lr = c.optimizer.lr;
    m->train.batch = 0;                    /* the training step is (re)built by the next fit */
    return KILN_OK;
}

/* ---- graph ---- */
static kiln_status build_forward(kiln_model *m, nn_forward *f, int batch, bool training) {
    kiln_graph *g = m->g;
    kiln_shape xs = { .rank = m->input->out.rank + 1 };
    xs.dim[0] = batch;
    for (int i = 0; i < m->input->out.rank; i++) xs.dim[i + 1] = m->input->out.dim[i];
    char nm[64];
    snprintf(nm, sizeof nm, "%s_x_%d", training ? "train" : "infer", batch);
    f->batch = batch;
    f->training = training;
    if (training && m->res.n > 0) {
        /* resident data: the batch is gathered (and augmented) from data variables by index */
        kiln_shape ds = xs;
        ds.dim[0] = m->res.n;
        kiln_node *X = kiln_variable_trainable(g, NN_DATA_PREFIX "x", KILN_F32, ds, kiln_init_zeros(), false);
        kiln_node *Y = kiln_variable_trainable(g, NN_DATA_PREFIX "y", KILN_I32, KILN_SHAPE(m->res.n), kiln_init_zeros(), false);
        snprintf(nm, sizeof nm, "train_idx_%d", batch);
        f->idx = kiln_placeholder(g, nm, KILN_I32, KILN_SHAPE(batch));
        f->x = kiln_gather_rows(g, X, f->idx);
        if (m->res.pad > 0 || m->res.flip) {
            snprintf(nm, sizeof nm, "train_keys_%d", batch);
            f->keys = kiln_placeholder(g, nm, KILN_I64, KILN_SHAPE(batch));
            f->x = kiln_random_crop_flip(g, f->x, f->keys, m->res.pad, m->res.flip, true);
        }
        f->y = kiln_gather_rows(g, Y, f->idx);
        f->resident_n = m->res.n;
        f->resident_pad = m->res.pad;
        f->resident_flip = m->res.flip;
    } else {
        f->x = kiln_placeholder(g, nm, KILN_F32, xs);
        snprintf(nm, sizeof nm, "%s_y_%d", training ? "train" : "infer", batch);
        f->y = kiln_placeholder(g, nm, KILN_I32, KILN_SHAPE(batch));
    }
    if (!f->x || !f->y) return nn_fail(m, kiln_graph_status(g), "model '%s': %s", m->name, kiln_graph_error(g));
    for (int i = 0; i < m->n_layers; i++) m->layers[i]->node = NULL;
    m->input->node = f->x;
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        if (l->kind == NN_INPUT) continue;
        if (!nn_layer_forward(m, l, g, batch, training)) return m->status;
        if (l == m->output) break;
    }
    f->out = m->output->node;
    if (m->compiled) {
        f->loss = nn_build_loss(m, g, f->out, f->y, batch);
        if (!f->loss) return m->status ? m->status : nn_fail(m, kiln_graph_status(g), "model '%s': loss: %s", m->name, kiln_graph_error(g));
    }
    if (training) {
        kiln_node *vars[256], *grads[256];
        int n = 0;
        kiln_node *loss = f->loss;
        for (int i = 0; i < m->n_layers; i++)
            for (int j = 0; j < m->layers[i]->n_vars; j++) {
                nn_var *v = &m->layers[i]->vars[j];
                if (!v->trainable) continue;
                if (n == 256) return nn_fail(m, KILN_UNSUPPORTED, "model '%s': more than 256 trainable variables", m->name);
                vars[n++] = v->node;
                if (v->l2 > 0) {
                    kiln_node *pen = kiln_mul(g, kiln_reduce_sum(g, kiln_square(g, v->node), NULL, 0, false), kiln_scalar(g, KILN_F32, v->l2));
                    loss = kiln_add(g, loss, pen);
                }
            }
        f->loss = loss;
        if (kiln_gradients(g, loss, vars, n, grads) != KILN_OK)
            return nn_fail(m, kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL, "model '%s': gradients: %s", m->name, kiln_last_error());
        if (m->copts.optimizer.clip_norm > 0) {
            if (kiln_clip_by_global_norm(g, grads, n, m->copts.optimizer.clip_norm, grads) != KILN_OK)
                return nn_fail(m, KILN_INTERNAL, "model '%s': gradient clipping: %s", m->name, kiln_last_error());
        }
        f->step = nn_build_optimizer(m, g, vars, grads, n);
        if (!f->step) return m->status ? m->status : nn_fail(m, kiln_graph_status(g), "model '%s': optimizer: %s", m->name, kiln_graph_error(g));
    }
    if (kiln_graph_status(g) != KILN_OK) return nn_fail(m, kiln_graph_status(g), "model '%s': %s", m->name, kiln_graph_error(g));
    f->out_t = kiln_tensor_new(KILN_F32, kiln_node_shape(f->out));
    f->loss_t = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    if (!f->out_t || !f->loss_t) return kiln_set_error(KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name);
    return KILN_OK;
}

static kiln_backend_kind backend_of(const char *dev) {
    if (!strcmp(dev, "cpu")) return KILN_BACKEND_CPU;
    if (!strcmp(dev, "ref")) return KILN_BACKEND_REF;
    if (!strcmp(dev, "cuda") || !strcmp(dev, "gpu")) return KILN_BACKEND_CUDA;
    return KILN_BACKEND_AUTO;
}

static kiln_status build(kiln_model *m, int batch, bool training) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (m->functional && !m->finalized)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "model '%s' has no outputs yet: call kiln_model_functional() first", m->name);
    if (!m->output || m->output->kind == NN_INPUT) return kiln_set_error(KILN_INVALID_ARGUMENT, "model '%s' has no layers", m->name);
    graph_drop(m);
    m->g = kiln_graph_new();
    if (!m->g) return KILN_OUT_OF_MEMORY;
    if ((st = nn_create_variables(m, m->g))) return st;
    double lr0 = m->compiled ? m->base_lr : 0.0;
    m->lr_var = kiln_variable_trainable(m->g, "learning_rate", KILN_F32, KILN_SCALAR, kiln_init_constant(lr0), false);
    if (!m->lr_var) return nn_fail(m, kiln_graph_status(m->g), "model '%s': %s", m->name, kiln_graph_error(m->g));
    m->lr_current = lr0;
    if (training && (st = build_forward(m, &m->train, batch, true))) { graph_drop(m); m->status = KILN_OK; return kiln_set_error(st, "%s", m->error); }
    if ((st = build_forward(m, &m->infer[0], batch, false))) { graph_drop(m); m->status = KILN_OK; return kiln_set_error(st, "%s", m->error); }
    m->n_infer = 1;
    if (!m->lr_t && !(m->lr_t = kiln_tensor_new(KILN_F32, KILN_SCALAR))) return KILN_OUT_OF_MEMORY;
    kiln_session_opts so = { .seed = m->seed };
    if (m->compiled) {
        so.backend = backend_of(m->device);
        so.num_threads = m->copts.num_threads;
        so.log_device_placement = m->copts.log_device_placement;
    }
    m->s = kiln_session_new(m->g, &so);
    if (!m->s) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        graph_drop(m);
        return kiln_set_error(KILN_INTERNAL, "model '%s': cannot start a session: %s", m->name, msg);
    }
    /* values carried over from a previous graph or a checkpoint loaded before the build */
    for (int i = 0; i < m->n_carry; i++) {
        kiln_node *v = kiln_graph_find(m->g, m->carry[i].name);
        if (!v || !kiln_node_is_variable(v)) continue;
        if (kiln_session_assign_variable(m->s, v, m->carry[i].t) != KILN_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", kiln_last_error());
            return kiln_set_error(KILN_INTERNAL, "model '%s': restoring %s: %s", m->name, m->carry[i].name, msg);
        }
        if (v == m->lr_var) m->lr_current = NAN;
    }
    nn_carry_clear(m);
    if (m->has_pending_step) { kiln_session_set_step(m->s, m->pending_step); m->has_pending_step = false; }
    return KILN_OK;
}

/* Copies every variable of the current session into the carry list (before a rebuild). */
static kiln_status carry_all(kiln_model *m) {
    if (!m->s) return KILN_OK;
    for (int i = 0; i < kiln_graph_node_count(m->g); i++) {
        kiln_node *n = kiln_graph_node(m->g, i);
        if (!kiln_node_is_variable(n) || nn_is_data_var(kiln_node_name(n))) continue;
        kiln_tensor *t = kiln_tensor_new(kiln_node_dtype(n), kiln_node_shape(n));
        if (!t) return KILN_OUT_OF_MEMORY;
        kiln_status st = kiln_session_read_variable(m->s, n, t);
        if (!st) st = nn_carry_add(m, kiln_node_name(n), t);
        kiln_tensor_free(t);
        if (st) return st;
    }
    return KILN_OK;
}

kiln_status nn_ensure_session(kiln_model *m, int batch) {
    if (m->s) return nn_check(m);
    return build(m, batch, m->compiled);
}

kiln_status nn_ensure_train(kiln_model *m, int batch) {
    if (!m->compiled) return kiln_set_error(KILN_INVALID_ARGUMENT, "model '%s' is not compiled: call kiln_compile() before kiln_fit()", m->name);
    if (m->s && m->train.batch == batch && m->train.resident_n == m->res.n && m->train.resident_pad == m->res.pad &&
        m->train.resident_flip == m->res.flip)
        return nn_check(m);
    kiln_status st = carry_all(m);
    if (st) return st;
    if (m->s && !m->has_pending_step) { m->pending_step = kiln_session_step(m->s); m->has_pending_step = true; }
    return build(m, batch, true);
}

kiln_status nn_get_infer(kiln_model *m, int batch, nn_forward **out) {
    for (int i = 0; i < m->n_infer; i++)
        if (m->infer[i].batch == batch) { *out = &m->infer[i]; return KILN_OK; }
    if (m->n_infer == NN_MAX_FORWARDS) {        /* recycle the oldest extra forward (nodes stay in the graph) */
        forward_clear(&m->infer[NN_MAX_FORWARDS - 1]);
        m->n_infer--;
    }
    nn_forward *f = &m->infer[m->n_infer];
    kiln_status st = build_forward(m, f, batch, false);
    if (st) { forward_clear(f); m->status = KILN_OK; kiln_graph_clear_error(m->g); return kiln_set_error(st, "%s", m->error); }
    m->n_infer++;
    *out = f;
    return KILN_OK;
}

kiln_status nn_set_lr(kiln_model *m, double lr) {
    if (lr == m->lr_current) return KILN_OK;
    kiln_tensor_set(m->lr_t, 0, lr);
    kiln_status st = kiln_session_assign_variable(m->s, m->lr_var, m->lr_t);
    if (!st) m->lr_current = lr;
    return st;
}

const kiln_logs *kiln_model_history(const kiln_model *m, int *n_epochs) {
    if (n_epochs) *n_epochs = m ? m->n_history : 0;
    return m ? m->history : NULL;
}

void kiln_model_reset_history(kiln_model *m) { if (m) m->n_history = 0; }
