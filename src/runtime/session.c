/* Sessions: creation (which backends, options), variable storage per memory space (created on
 * first use, initialised on the host, moved to where placement puts them), and reading and
 * assigning variables. Running is in executor.c, plans in plan_cache.c. */
#include <stdlib.h>
#include <string.h>
#include "runtime/runtime_internal.h"
#include "compile/placement.h"
#include "backend/registry.h"
#include "backend/cuda/cuda_module.h"

void kiln_session_set_guard(kiln_session *s, size_t bytes) { s->guard = bytes; }

static void *grow(void *p, int old_n, int n, size_t elem, int fill) {
    char *q = kiln_realloc(p, (size_t)n * elem);
    if (q) memset(q + (size_t)old_n * elem, fill, (size_t)(n - old_n) * elem);
    return q;
}

/* The id-indexed arrays follow the graph, which may gain nodes between runs. */
kiln_status rt_grow_ids(kiln_session *s) {
    int n = s->g->n_nodes, o = s->n_ids;
    if (n <= o) return KILN_OK;
    void *q;
#define GROW(field, elem, fill) if (!(q = grow(s->field, o, n, elem, fill))) goto oom; s->field = q;
    GROW(var_data, sizeof(void *), 0)
    GROW(var_home, 1, 0)
    GROW(const_dev, sizeof(void *), 0)
    GROW(place, 1, -1)
    GROW(logged, sizeof(bool), 0)
    for (int sp = 0; sp < s->n_spaces; sp++) { GROW(data[sp], sizeof(void *), 0) }
#undef GROW
    s->n_ids = n;
    return KILN_OK;
oom:   /* the arrays grown so far keep their new size; n_ids stays, so the next call grows again */
    return kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory");
}

kiln_status rt_place(kiln_session *s) {
    kiln_placement pl = { &s->dev, s->dev ? 1 : 0, s->dev ? "" : kiln_gpu_unavailable_reason(), s->opts.strict_placement,
                          &s->warned_soft };
    return kiln_place(s->g, &pl, s->place);
}

/* ---- variables: created on first use, initialised on the host, moved to their space ---- */
static kiln_status var_to_host(kiln_session *s, kiln_node *v) {
    size_t bytes = node_bytes(v);
    void *d = s->var_data[v->id];
    void *h = kiln_malloc_aligned(bytes);
    kiln_status st = h ? s->dev->copy(h, d, bytes, KILN_COPY_D2H) : kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    if (st == KILN_OK) st = s->dev->sync();
    if (st != KILN_OK) { kiln_free_aligned(h); return kiln_set_error(st, "variable %s: cannot move it to the host: %s", v->name, kiln_last_error()); }
    s->dev->free(d);
    s->var_data[v->id] = h;
    s->var_home[v->id] = KILN_SPACE_HOST;
    return KILN_OK;
}

kiln_status rt_var_store(kiln_session *s, kiln_node *v, int space) {
    if (s->var_data[v->id] && s->var_home[v->id] == space) return KILN_OK;
    if (s->var_data[v->id] && space == KILN_SPACE_HOST) return var_to_host(s, v);
    size_t bytes = node_bytes(v);
    void *host = s->var_data[v->id];
    if (!host) {
        kiln_tensor *t = kiln_tensor_new(v->dtype, v->shape);
        if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "variable %s: %s", v->name, kiln_last_error());
        kiln_status st = kiln_init_fill(v->init, t);
        if (st != KILN_OK) { kiln_tensor_free(t); return st; }
        host = t->data;
        t->owns_data = false;
        kiln_tensor_free(t);
        if (space == KILN_SPACE_HOST) { s->var_data[v->id] = host; s->var_home[v->id] = KILN_SPACE_HOST; return KILN_OK; }
    }
    void *d = s->dev->alloc(bytes);
    if (!d) {
        if (host != s->var_data[v->id]) kiln_free_aligned(host);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "variable %s (%zu bytes) does not fit on the GPU: %s", v->name, bytes, kiln_last_error());
    }
    kiln_status st = s->dev->copy(d, host, bytes, KILN_COPY_H2D);
    if (st == KILN_OK) st = s->dev->sync();
    kiln_free_aligned(host);
    if (st != KILN_OK) { s->dev->free(d); s->var_data[v->id] = NULL; return st; }
    s->var_data[v->id] = d;
    s->var_home[v->id] = KILN_SPACE_DEVICE;
    return KILN_OK;
}

static bool env_on(const char *name) {
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}
static bool env_off(const char *name) {
    const char *e = getenv(name);
    return e && strcmp(e, "0") == 0;
}

static kiln_session *session_new(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *dev,
                                 const kiln_device_hooks *hooks) {
    if (!g) { kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_new: NULL graph"); return NULL; }
    if (g->status != KILN_OK) {
        kiln_set_error(g->status, "kiln_session_new: the graph has a build error: %s", g->error);
        return NULL;
    }
    kiln_session *s = kiln_calloc(1, sizeof *s);
    if (!s) { kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory"); return NULL; }
    s->g = g;
    if (opts) s->opts = *opts;
    s->host = s->opts.backend == KILN_BACKEND_REF ? kiln_backend_ref() : kiln_backend_cpu();
    s->dev = dev;
    s->be[0] = s->host;
    s->be[1] = dev;
    s->n_spaces = dev ? 2 : 1;
    if (hooks) { s->hooks_copy = *hooks; s->hooks = &s->hooks_copy; }
    for (int i = 0; i < KILN_MAX_AHEAD; i++) s->ahead[i].id = -1;
    s->num_threads = kiln_threads_resolve(s->opts.num_threads);
    if (env_on("KILN_LOG_DEVICE_PLACEMENT")) s->opts.log_device_placement = true;
    if (env_off("KILN_FUSION")) s->opts.no_fusion = true;
    if (env_off("KILN_CUDA_GRAPHS")) s->opts.no_cuda_graphs = true;
    s->verbose = env_on("KILN_VERBOSE");
    if (rt_profile_init(s) != KILN_OK || rt_grow_ids(s) != KILN_OK) { kiln_session_free(s); return NULL; }
    return s;
}

/* The largest arena the GPU's allocator can still give (limit, driver memory and its segment
 * granularity included): what the out-of-memory advice sizes the batch against. */
static size_t cuda_free_memory(void) {
    const kiln_cuda_module *cu = kiln_cuda();
    return cu ? cu->max_alloc() : 0;
}

kiln_session *kiln_session_new(kiln_graph *g, const kiln_session_opts *opts) {
    kiln_backend_kind kind = opts ? opts->backend : KILN_BACKEND_AUTO;
    const kiln_cuda_module *cu = NULL;
    if (kind == KILN_BACKEND_AUTO || kind == KILN_BACKEND_CUDA) {
        cu = kiln_cuda();
        if (!cu && kind == KILN_BACKEND_CUDA) {
            kiln_set_error(KILN_NOT_FOUND, "kiln_session_new: the CUDA backend was asked for, but %s", kiln_gpu_unavailable_reason());
            return NULL;
        }
        if (!cu) kiln_note_cpu_fallback();
    }
    kiln_device_hooks cuda_hooks = { 0 };   /* copied into the session: no shared mutable state */
    if (cu) cuda_hooks = (kiln_device_hooks){ cu->capture_begin, cu->capture_end, cu->graph_launch, cu->graph_free, cu->set_step,
                                              cuda_free_memory, cu->copy_ahead, cu->copy_ahead_wait };
    return session_new(g, opts, cu ? cu->backend : NULL, cu ? &cuda_hooks : NULL);
}

kiln_session *kiln_session_new_with_device(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *dev,
                                           const kiln_device_hooks *hooks) {
    return session_new(g, opts, dev, hooks);
}

void kiln_session_free(kiln_session *s) {
    if (!s) return;
    rt_profile_report(s);
    for (int i = 0; i < s->n_ids; i++) {
        if (s->var_data[i]) {
            if (s->var_home[i] == KILN_SPACE_DEVICE) s->dev->free(s->var_data[i]);
            else kiln_free_aligned(s->var_data[i]);
        }
        if (s->const_dev[i]) s->dev->free(s->const_dev[i]);
    }
    rt_plans_free(s);
    for (int sp = 0; sp < s->n_spaces; sp++) {
        if (s->arena[sp]) s->be[sp]->free(s->arena[sp]);
        kiln_free(s->data[sp]);
    }
    rt_ahead_free(s);
    kiln_free(s->var_data); kiln_free(s->var_home); kiln_free(s->const_dev);
    kiln_free(s->place); kiln_free(s->logged);
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
    st = s->dev->copy(out->data, s->var_data[var->id], kiln_tensor_nbytes(out), KILN_COPY_D2H);
    return st ? st : s->dev->sync();
}

kiln_status kiln_session_assign_variable(kiln_session *s, kiln_node *var, const kiln_tensor *value) {
    kiln_status st;
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "assign_variable: NULL session");
    if ((st = check_var(var, value, "assign_variable")) || (st = rt_grow_ids(s))) return st;
    if (!s->var_data[var->id] && (st = rt_var_store(s, var, KILN_SPACE_HOST))) return st;
    if (s->var_home[var->id] == KILN_SPACE_HOST) { memcpy(s->var_data[var->id], value->data, kiln_tensor_nbytes(value)); return KILN_OK; }
    st = s->dev->copy(s->var_data[var->id], value->data, kiln_tensor_nbytes(value), KILN_COPY_H2D);
    return st ? st : s->dev->sync();
}

uint64_t kiln_session_step(const kiln_session *s) { return s->step; }
void kiln_session_set_step(kiln_session *s, uint64_t step) { s->step = step; }
size_t kiln_session_planned_bytes(const kiln_session *s) { return s->planned_bytes; }
const char *kiln_session_backend(const kiln_session *s) { return s->dev ? s->dev->name : s->host->name; }

size_t kiln_session_variable_bytes(const kiln_session *s) {
    size_t b = 0;
    for (int i = 0; i < s->n_ids && i < s->g->n_nodes; i++)
        if (s->var_data[i]) b += node_bytes(s->g->nodes[i]);
    return b;
}

int kiln_session_node_space(kiln_session *s, const kiln_node *n) {
    if (rt_grow_ids(s) != KILN_OK || rt_place(s) != KILN_OK) return -1;
    return s->place[n->id];
}
