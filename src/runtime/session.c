/* Sessions: creation (which backends, options), reading and assigning variables. Variable storage
 * and the id-indexed arrays are in session_vars.c, running in executor.c, plans in plan_cache.c. */
#include <stdlib.h>
#include <string.h>
#include "runtime/runtime_internal.h"
#include "compile/placement.h"
#include "backend/registry.h"

void kiln_session_set_guard(kiln_session *s, size_t bytes) { s->guard = bytes; }

static bool env_on(const char *name) {
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}
static bool env_off(const char *name) {
    const char *e = getenv(name);
    return e && strcmp(e, "0") == 0;
}

static kiln_session *session_new(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *const *devs, int n_devs) {
    if (!g) { kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_new: NULL graph"); return NULL; }
    if (g->status != KILN_OK) {
        kiln_set_error(g->status, "kiln_session_new: the graph has a build error: %s", g->error);
        return NULL;
    }
    if (n_devs < 0 || n_devs >= INT8_MAX || (n_devs > 0 && !devs)) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_new: %d devices", n_devs);
        return NULL;
    }
    kiln_session *s = kiln_calloc(1, sizeof *s);
    if (!s) { kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory"); return NULL; }
    s->g = g;
    if (opts) s->opts = *opts;
    s->host = s->opts.backend == KILN_BACKEND_REF ? kiln_backend_ref() : kiln_backend_cpu();
    s->n_spaces = 1 + n_devs;
    s->be = kiln_calloc((size_t)s->n_spaces, sizeof *s->be);
    s->arena = kiln_calloc((size_t)s->n_spaces, sizeof *s->arena);
    s->arena_bytes = kiln_calloc((size_t)s->n_spaces, sizeof *s->arena_bytes);
    s->data = kiln_calloc((size_t)s->n_spaces, sizeof *s->data);
    if (!s->be || !s->arena || !s->arena_bytes || !s->data) {
        kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory");
        kiln_session_free(s);
        return NULL;
    }
    s->be[0] = s->host;
    for (int k = 0; k < n_devs; k++) s->be[k + 1] = devs[k];
    for (int i = 0; i < KILN_MAX_AHEAD; i++) s->ahead[i].id = -1;
    s->num_threads = kiln_threads_resolve(s->opts.num_threads);
    if (env_on("KILN_LOG_DEVICE_PLACEMENT")) s->opts.log_device_placement = true;
    if (env_off("KILN_FUSION")) s->opts.no_fusion = true;
    if (env_off("KILN_CUDA_GRAPHS")) s->opts.no_cuda_graphs = true;
    s->verbose = env_on("KILN_VERBOSE");
    if (rt_profile_init(s, env_on("KILN_PROFILE")) != KILN_OK || rt_grow_ids(s) != KILN_OK) { kiln_session_free(s); return NULL; }
    return s;
}

/* AUTO and CUDA sessions get every visible GPU (GPU 0 takes what is not placed explicitly). */
kiln_session *kiln_session_new(kiln_graph *g, const kiln_session_opts *opts) {
    kiln_backend_kind kind = opts ? opts->backend : KILN_BACKEND_AUTO;
    int n = 0;
    if (kind == KILN_BACKEND_AUTO || kind == KILN_BACKEND_CUDA) {
        n = kiln_cuda() ? kiln_cuda_device_count() : 0;
        if (n <= 0 && kind == KILN_BACKEND_CUDA) {
            kiln_set_error(KILN_NOT_FOUND, "kiln_session_new: the CUDA backend was asked for, but %s", kiln_gpu_unavailable_reason());
            return NULL;
        }
        if (n <= 0) kiln_note_cpu_fallback();
    }
    if (n <= 0) return session_new(g, opts, NULL, 0);
    const kiln_backend **devs = kiln_calloc((size_t)n, sizeof *devs);
    if (!devs) { kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory"); return NULL; }
    for (int k = 0; k < n; k++)
        if (!(devs[k] = kiln_cuda_backend(k))) { kiln_free(devs); return NULL; }
    kiln_session *s = session_new(g, opts, devs, n);
    kiln_free(devs);
    return s;
}

kiln_session *kiln_session_new_with_device(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *dev) {
    return session_new(g, opts, dev ? &dev : NULL, dev ? 1 : 0);
}

kiln_session *kiln_session_new_with_devices(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *const *devs, int n) {
    return session_new(g, opts, devs, n);
}

void kiln_session_free(kiln_session *s) {
    if (!s) return;
    rt_profile_report(s);
    for (int i = 0; i < s->n_ids; i++) {
        if (s->var_data[i]) {
            const kiln_backend *be = s->be[s->var_home[i]];
            if (s->var_home[i] != KILN_SPACE_HOST) be->free(be, s->var_data[i]);
            else kiln_free_aligned(s->var_data[i]);
        }
        if (s->const_dev[i]) s->be[s->place[i]]->free(s->be[s->place[i]], s->const_dev[i]);
    }
    rt_plans_free(s);
    rt_reduce_free(s);
    for (int sp = 0; sp < s->n_spaces && s->arena && s->data; sp++) {
        if (s->arena[sp]) s->be[sp]->free(s->be[sp], s->arena[sp]);
        kiln_free(s->data[sp]);
    }
    rt_ahead_free(s);
    kiln_free(s->var_data); kiln_free(s->var_home); kiln_free(s->const_dev);
    kiln_free(s->place); kiln_free(s->logged);
    kiln_free(s->be); kiln_free(s->arena); kiln_free(s->arena_bytes); kiln_free(s->data);
    kiln_free(s);
}

static kiln_status check_var(kiln_node *var, const kiln_tensor *t, const char *what) {
    if (!var || !t) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (var->op != KILN_OP_VARIABLE) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: '%s' is not a variable", what, var->name);
    if (t->dtype != var->dtype || !kiln_shape_equal(t->shape, var->shape)) {
        char a[96], b[96];
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s '%s': variable is %s %s, tensor is %s %s", what, var->name,
                              kiln_dtype_name(var->dtype), kiln_shape_str(var->shape, a, sizeof a), kiln_dtype_name(t->dtype), kiln_shape_str(t->shape, b, sizeof b));
    }
    return KILN_OK;
}

kiln_status kiln_session_read_variable(kiln_session *s, kiln_node *var, kiln_tensor *out) {
    kiln_status st;
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "read_variable: NULL session");
    if ((st = check_var(var, out, "read_variable")) || (st = rt_grow_ids(s))) return st;
    if (!s->var_data[var->id] && (st = rt_var_store(s, var, KILN_SPACE_HOST))) return st;
    if (s->var_home[var->id] == KILN_SPACE_HOST) { memcpy(out->data, s->var_data[var->id], kiln_tensor_nbytes(out)); return KILN_OK; }
    const kiln_backend *be = s->be[s->var_home[var->id]];
    st = be->copy(be, out->data, s->var_data[var->id], kiln_tensor_nbytes(out), KILN_COPY_D2H);
    return st ? st : be->sync(be);
}

kiln_status kiln_session_assign_variable(kiln_session *s, kiln_node *var, const kiln_tensor *value) {
    kiln_status st;
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "assign_variable: NULL session");
    if ((st = check_var(var, value, "assign_variable")) || (st = rt_grow_ids(s))) return st;
    if (!s->var_data[var->id] && (st = rt_var_store(s, var, KILN_SPACE_HOST))) return st;
    if (s->var_home[var->id] == KILN_SPACE_HOST) { memcpy(s->var_data[var->id], value->data, kiln_tensor_nbytes(value)); return KILN_OK; }
    const kiln_backend *be = s->be[s->var_home[var->id]];
    st = be->copy(be, s->var_data[var->id], value->data, kiln_tensor_nbytes(value), KILN_COPY_H2D);
    return st ? st : be->sync(be);
}

uint64_t kiln_session_step(const kiln_session *s) { return s->step; }
void kiln_session_set_step(kiln_session *s, uint64_t step) { s->step = step; }
size_t kiln_session_planned_bytes(const kiln_session *s) { return s->planned_bytes; }
const char *kiln_session_backend(const kiln_session *s) { return s->n_spaces > 1 ? s->be[1]->name : s->host->name; }
