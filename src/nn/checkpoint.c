/* Model checkpoints as safetensors: weights under their variable names, the architecture
 * (kiln.architecture, model_config.c) and class names, optionally the optimizer state, the epoch
 * and the step, so training resumes where it stopped. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/io.h"
#include "kiln/text.h"
#include "nn/nn_model.h"

static bool in_list(const char *list, const char *name) {
    if (!list) return false;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && !strncmp(p, name, n)) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

kiln_status kiln_model_save(kiln_model *m, const char *path, bool include_optimizer) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_save: no path");
    if ((st = nn_ensure_session(m, m->last_fit_batch > 0 ? m->last_fit_batch : 32))) return st;
    int cap = kiln_graph_node_count(m->g), n = 0;
    kiln_named_tensor *nt = kiln_calloc((size_t)cap + 1, sizeof *nt);
    size_t list_cap = 16, list_len = 0;
    char *opt_list = kiln_malloc(list_cap);
    if (!nt || !opt_list) { kiln_free(nt); kiln_free(opt_list); return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_model_save: out of host memory"); }
    opt_list[0] = 0;
    /* weights first, in layer order, then the optimizer state */
    for (int pass = 0; pass < 2 && !st; pass++)
        for (int i = 0; i < cap && !st; i++) {
            kiln_node *v = kiln_graph_node(m->g, i);
            if (!kiln_node_is_variable(v) || nn_is_data_var(kiln_node_name(v))) continue;
            bool weight = nn_is_weight_name(m, kiln_node_name(v), NULL);
            if ((pass == 0) != weight || (!weight && !include_optimizer)) continue;
            kiln_tensor *t = kiln_tensor_new(kiln_node_dtype(v), kiln_node_shape(v));
            if (!t) { st = KILN_OUT_OF_MEMORY; break; }
            nt[n].name = kiln_node_name(v);
            nt[n++].tensor = t;
            if ((st = kiln_session_read_variable(m->s, v, t))) break;
            if (!weight) {
                size_t k = strlen(nt[n - 1].name);
                if (list_len + k + 2 > list_cap) {
                    while (list_len + k + 2 > list_cap) list_cap *= 2;
                    char *nl = kiln_realloc(opt_list, list_cap);
                    if (!nl) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_model_save: out of host memory"); break; }
                    opt_list = nl;
                }
                if (list_len) opt_list[list_len++] = ',';
                memcpy(opt_list + list_len, nt[n - 1].name, k + 1);
                list_len += k;
            }
        }
    if (!st) {
        char epoch[32], step[32], shape[128];
        snprintf(epoch, sizeof epoch, "%d", m->epoch);
        snprintf(step, sizeof step, "%llu", (unsigned long long)kiln_session_step(m->s));
        size_t k = 0;
        shape[0] = 0;
        for (int i = 0; i < m->input->out.rank && k < sizeof shape; i++)
            k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", i ? "," : "", (long long)m->input->out.dim[i]);
        char *arch = NULL, *classes = NULL, *tok = NULL;
        const char *keys[12] = { "kiln.model", "kiln.epoch", "kiln.input_shape", "kiln.architecture" }, *vals[12] = { m->name, epoch, shape };
        int n_meta = 4;
        if (!(st = kiln_model_to_json(m, &arch)) && !(st = nn_class_names_json(m, &classes)) &&
            !(m->tokenizer && (st = kiln_tokenizer_to_json(m->tokenizer, &tok)))) {
            vals[3] = arch;
            if (classes) { keys[n_meta] = "kiln.class_names"; vals[n_meta++] = classes; }
            if (m->data_spec) { keys[n_meta] = "kiln.data"; vals[n_meta++] = m->data_spec; }
            if (tok) { keys[n_meta] = "kiln.tokenizer"; vals[n_meta++] = tok; }   /* kiln generate needs no --tokenizer */
            if (include_optimizer) {
                const char *k2[] = { "kiln.optimizer", "kiln.optimizer_tensors", "kiln.step" };
                const char *v2[] = { m->compiled ? kiln_optimizer_name(m->copts.optimizer.kind) : "none", opt_list, step };
                for (int i = 0; i < 3; i++) { keys[n_meta] = k2[i]; vals[n_meta++] = v2[i]; }
            }
            st = kiln_safetensors_save(path, nt, n, keys, vals, n_meta);
        }
        kiln_free(arch);
        kiln_free(classes);
        free(tok);
        if (st) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", kiln_last_error());
            kiln_set_error(st, "saving model '%s' to '%s': %s", m->name, path, msg);
        }
    }
    for (int i = 0; i < n; i++) kiln_tensor_free((kiln_tensor *)nt[i].tensor);
    kiln_free(nt);
    kiln_free(opt_list);
    return st;
}

static kiln_status mismatch(const kiln_model *m, const char *path, kiln_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static kiln_status mismatch(const kiln_model *m, const char *path, kiln_status s, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kiln_set_error(s, "checkpoint '%s' does not match model '%s': %s", path, m->name, msg);
}

/* Checks every name, dtype and shape before changing anything. */
static kiln_status validate(const kiln_model *m, const char *path, const kiln_safetensors *f) {
    char a[96], b[96];
    const char *opt = kiln_safetensors_meta(f, "kiln.optimizer_tensors");
    for (int i = 0; i < m->n_layers; i++)
        for (int j = 0; j < m->layers[i]->n_vars; j++) {
            const nn_var *v = &m->layers[i]->vars[j];
            const kiln_tensor *t = kiln_safetensors_find(f, v->name);
            if (!t) {
                const char *saved = kiln_safetensors_meta(f, "kiln.model");
                return mismatch(m, path, KILN_NOT_FOUND, "tensor '%s' is missing from the file (saved from model '%s'; the file holds %d tensors)",
                                v->name, saved ? saved : "?", kiln_safetensors_count(f));
            }
            if (t->dtype != KILN_F32)
                return mismatch(m, path, KILN_DTYPE_MISMATCH, "tensor '%s' is %s in the file but f32 in the model", v->name, kiln_dtype_name(t->dtype));
            if (!kiln_shape_equal(t->shape, v->shape))
                return mismatch(m, path, KILN_SHAPE_MISMATCH, "tensor '%s' has shape %s in the file but %s in the model",
                                v->name, kiln_shape_str(t->shape, a, sizeof a), kiln_shape_str(v->shape, b, sizeof b));
        }
    for (int i = 0; i < kiln_safetensors_count(f); i++) {
        const char *name = kiln_safetensors_name(f, i);
        if (!nn_is_weight_name(m, name, NULL) && !in_list(opt, name))
            return mismatch(m, path, KILN_INVALID_ARGUMENT, "unexpected tensor '%s' in the file (model '%s' has no such variable; was the file saved from another model?)", name, m->name);
    }
    return KILN_OK;
}

/* kiln.epoch / kiln.step: whole decimal numbers in range (atoi read "-3" and garbage). */
static kiln_status meta_uint(const kiln_model *m, const char *path, const char *key, const char *v, uint64_t max, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno == ERANGE || x > max)
        return mismatch(m, path, KILN_IO_ERROR, "metadata %s is '%.40s', not a whole number from 0 to %llu (corrupt file?)", key, v,
                        (unsigned long long)max);
    *out = x;
    return KILN_OK;
}

/* Resuming needs the optimizer state of the model's own optimizer: a weights-only file or another
 * optimizer's state leaves it starting fresh (a warning; an error when strict). */
static kiln_status check_optimizer_state(const kiln_model *m, const char *path, const kiln_safetensors *f, bool strict) {
    if (!m->compiled) return KILN_OK;
    const char *mine = kiln_optimizer_name(m->copts.optimizer.kind), *saved = kiln_safetensors_meta(f, "kiln.optimizer");
    char why[256];
    if (!saved || !strcmp(saved, "none")) snprintf(why, sizeof why, "holds no optimizer state (saved with weights only)");
    else if (strcmp(saved, mine)) snprintf(why, sizeof why, "holds %.40s optimizer state but the model uses %s", saved, mine);
    else {
        /* same name: SGD / RMSprop with and without momentum differ by their momentum slots */
        const char *list = kiln_safetensors_meta(f, "kiln.optimizer_tensors");
        bool file_mom = list && strstr(list, "/momentum"), model_mom = m->copts.optimizer.momentum != 0 &&
            (m->copts.optimizer.kind == KILN_OPT_SGD || m->copts.optimizer.kind == KILN_OPT_RMSPROP);
        if (file_mom == model_mom) return KILN_OK;
        snprintf(why, sizeof why, "holds %s state %s momentum but the model's %s %s it", saved, file_mom ? "with" : "without",
                 mine, model_mom ? "uses" : "does not use");
    }
    if (strict)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "checkpoint '%s' %s; load without strict to start the %s state fresh, or "
                              "compile with the checkpoint's optimizer", path, why, mine);
    kiln_log_msg(KILN_LOG_WARNING, "kiln: warning: checkpoint '%s' %s: the %s state (moments, step count) starts fresh", path, why, mine);
    return KILN_OK;
}

kiln_status kiln_model_load(kiln_model *m, const char *path) { return kiln_model_load_opts(m, path, NULL); }

kiln_status kiln_model_load_opts(kiln_model *m, const char *path, const kiln_load_opts *o) {
    kiln_status st = nn_check(m);
    if (st) return st;
    kiln_load_opts none = { 0 };
    if (!o) o = &none;
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_load: no path");
    if (m->functional && !m->finalized)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_load: functional model '%s' has no outputs yet: call kiln_model_functional() first", m->name);
    kiln_safetensors *owned = NULL;
    const kiln_safetensors *f = o->file;
    if (!f && (st = kiln_safetensors_load(path, &owned))) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return kiln_set_error(st, "loading checkpoint '%s' into model '%s': %s", path, m->name, msg);
    }
    if (!f) f = owned;
    uint64_t epoch = (uint64_t)m->epoch, step = 0;
    const char *e = kiln_safetensors_meta(f, "kiln.epoch"), *sv = kiln_safetensors_meta(f, "kiln.step");
    if ((st = validate(m, path, f)) || (e && (st = meta_uint(m, path, "kiln.epoch", e, KILN_MAX_EPOCHS, &epoch))) ||
        (sv && (st = meta_uint(m, path, "kiln.step", sv, UINT64_MAX, &step))) ||
        (o->resume && (st = check_optimizer_state(m, path, f, o->strict)))) {
        kiln_safetensors_free(owned);
        return st;
    }
    for (int i = 0; i < kiln_safetensors_count(f) && !st; i++) {
        const char *name = kiln_safetensors_name(f, i);
        const kiln_tensor *t = kiln_safetensors_tensor(f, i);
        kiln_node *v = m->g ? kiln_graph_find(m->g, name) : NULL;
        if (v && kiln_node_is_variable(v) && m->s) {
            if (!kiln_shape_equal(kiln_node_shape(v), t->shape) || kiln_node_dtype(v) != t->dtype) {
                char a[96], b[96];
                st = mismatch(m, path, KILN_SHAPE_MISMATCH, "optimizer tensor '%s' has shape %s in the file but %s in the model",
                              name, kiln_shape_str(t->shape, a, sizeof a), kiln_shape_str(kiln_node_shape(v), b, sizeof b));
                break;
            }
            st = kiln_session_assign_variable(m->s, v, t);
            if (v == m->lr_var) m->lr_current = NAN;
        } else {
            st = nn_carry_add(m, name, t);    /* assigned when the graph that has it is built */
        }
    }
    if (!st && !m->tokenizer) st = nn_tokenizer_from_checkpoint(m, path, f);
    if (!st) {
        m->epoch = (int)epoch;
        if (sv && m->s) kiln_session_set_step(m->s, step);
        else if (sv) { m->pending_step = step; m->has_pending_step = true; }
    }
    kiln_safetensors_free(owned);
    return st;
}
