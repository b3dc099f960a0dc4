/* The graph and session behind a model: one graph holds the variables, the training step and
 * the inference forwards (one per batch size); rebuilding carries the variables' values over. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_model.h"

static void forward_clear(nn_forward *f) {
    kiln_tensor_free(f->out_t);
    kiln_tensor_free(f->loss_t);
    kiln_tensor_free(f->finite_t);
    memset(f, 0, sizeof *f);
}

void nn_graph_drop(kiln_model *m) {
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
    nn_graph_drop(m);
    m->g = kiln_graph_new();
    if (!m->g) return KILN_OUT_OF_MEMORY;
    if ((st = nn_create_variables(m, m->g))) return st;
    double lr0 = m->compiled ? m->base_lr : 0.0;
    m->lr_var = kiln_variable_trainable(m->g, "learning_rate", KILN_F32, KILN_SCALAR, kiln_init_constant(lr0), false);
    if (!m->lr_var) return nn_fail(m, kiln_graph_status(m->g), "model '%s': %s", m->name, kiln_graph_error(m->g));
    m->lr_current = lr0;
    if (training && (st = nn_build_forward(m, &m->train, batch, true))) { nn_graph_drop(m); m->status = KILN_OK; return kiln_set_error(st, "%s", m->error); }
    if ((st = nn_build_forward(m, &m->infer[0], batch, false))) { nn_graph_drop(m); m->status = KILN_OK; return kiln_set_error(st, "%s", m->error); }
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
        nn_graph_drop(m);
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
    batch /= nn_accum_n(m);                  /* the step is built for the micro-batch */
    if (m->s && m->train.batch == batch && m->train.accumulate == nn_accum_n(m) && m->train.resident_n == m->res.n && m->train.resident_pad == m->res.pad &&
        m->train.resident_flip == m->res.flip && m->train.float_labels == m->float_labels && (m->train.w != NULL) == m->weighted)
        return nn_check(m);
    kiln_status st = carry_all(m);
    if (st) return st;
    if (m->s && !m->has_pending_step) { m->pending_step = kiln_session_step(m->s); m->has_pending_step = true; }
    return build(m, batch, true);
}

kiln_status nn_get_infer(kiln_model *m, int batch, nn_forward **out) {
    for (int i = 0; i < m->n_infer; i++)
        if (m->infer[i].batch == batch && m->infer[i].float_labels == m->float_labels) { *out = &m->infer[i]; return KILN_OK; }
    if (m->n_infer == NN_MAX_FORWARDS) {        /* recycle the oldest extra forward (nodes stay in the graph) */
        forward_clear(&m->infer[NN_MAX_FORWARDS - 1]);
        m->n_infer--;
    }
    nn_forward *f = &m->infer[m->n_infer];
    kiln_status st = nn_build_forward(m, f, batch, false);
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

