/* Sessions: variable storage, cached plans per (feeds, fetches, targets), and the executor loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "graph/plan.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define KILN_MAX_PLANS 16

struct kiln_session {
    kiln_graph *g;
    const kiln_backend *be;
    kiln_session_opts opts;
    int num_threads;
    void **var_data;            /* node id -> variable storage (NULL if not yet created) */
    bool *logged;               /* node id -> placement already logged */
    int n_ids;
    kiln_plan *plans[KILN_MAX_PLANS];
    int n_plans, next_evict;
    void *arena;
    size_t arena_bytes;
    void **data;                /* node id -> bound data pointer for the current run */
    uint64_t step;
    size_t planned_bytes;
    size_t guard;               /* tests: guard bytes after each output, checked after each kernel */
};

#define GUARD_BYTE 0xA5

void kiln_session_set_guard(kiln_session *s, size_t bytes) { s->guard = bytes; }

static kiln_status grow_ids(kiln_session *s) {
    int n = s->g->n_nodes;
    if (n <= s->n_ids) return KILN_OK;
    void **vd = kiln_realloc(s->var_data, (size_t)n * sizeof *vd);
    if (!vd) return kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory");
    s->var_data = vd;
    bool *lg = kiln_realloc(s->logged, (size_t)n * sizeof *lg);
    if (!lg) return kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory");
    s->logged = lg;
    void **d = kiln_realloc(s->data, (size_t)n * sizeof *d);
    if (!d) return kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory");
    s->data = d;
    for (int i = s->n_ids; i < n; i++) { s->var_data[i] = NULL; s->logged[i] = false; s->data[i] = NULL; }
    s->n_ids = n;
    return KILN_OK;
}

/* Creates and initialises a variable's storage the first time a plan needs it. */
static kiln_status ensure_variable(kiln_session *s, kiln_node *v) {
    if (s->var_data[v->id]) return KILN_OK;
    kiln_tensor *t = kiln_tensor_new(v->dtype, v->shape);
    if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "variable %s: cannot allocate %s", v->name, kiln_last_error());
    kiln_status st = kiln_init_fill(v->init, t);
    if (st != KILN_OK) { kiln_tensor_free(t); return st; }
    s->var_data[v->id] = t->data;     /* keep the data, drop the wrapper */
    t->owns_data = false;
    kiln_tensor_free(t);
    return KILN_OK;
}

kiln_session *kiln_session_new(kiln_graph *g, const kiln_session_opts *opts) {
    if (!g) { kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_new: NULL graph"); return NULL; }
    if (g->status != KILN_OK) {
        kiln_set_error(g->status, "kiln_session_new: the graph has a build error: %s", g->error);
        return NULL;
    }
    kiln_session *s = kiln_calloc(1, sizeof *s);
    if (!s) { kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory"); return NULL; }
    s->g = g;
    if (opts) s->opts = *opts;
    switch (s->opts.backend) {
    case KILN_BACKEND_REF: s->be = kiln_backend_ref(); break;
    case KILN_BACKEND_CUDA:
        kiln_set_error(KILN_UNSUPPORTED, "kiln_session_new: the CUDA backend is not available in this build; use KILN_BACKEND_AUTO or KILN_BACKEND_CPU");
        kiln_free(s);
        return NULL;
    default: s->be = kiln_backend_cpu(); break;
    }
    s->num_threads = kiln_threads_resolve(s->opts.num_threads);
    if (s->opts.log_device_placement == false) {
        const char *e = getenv("KILN_LOG_DEVICE_PLACEMENT");
        if (e && *e && strcmp(e, "0") != 0) s->opts.log_device_placement = true;
    }
    if (grow_ids(s) != KILN_OK) { kiln_session_free(s); return NULL; }
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == KILN_OP_VARIABLE && ensure_variable(s, g->nodes[i]) != KILN_OK) {
            kiln_session_free(s);
            return NULL;
        }
    return s;
}

void kiln_session_free(kiln_session *s) {
    if (!s) return;
    for (int i = 0; i < s->n_ids; i++) kiln_free_aligned(s->var_data[i]);
    for (int i = 0; i < s->n_plans; i++) kiln_plan_free(s->plans[i]);
    kiln_free(s->var_data);
    kiln_free(s->logged);
    kiln_free(s->data);
    s->be->free(s->arena);
    kiln_free(s);
}

static bool same_ids(const int *a, int na, kiln_node *const *b, int nb) {
    if (na != nb) return false;
    for (int i = 0; i < na; i++) if (a[i] != b[i]->id) return false;
    return true;
}

static kiln_plan *find_plan(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                            int n_fetches, kiln_node *const *targets, int n_targets) {
    for (int i = 0; i < s->n_plans; i++) {
        kiln_plan *p = s->plans[i];
        if (p->n_feeds != n_feeds || !same_ids(p->fetch_ids, p->n_fetches, fetches, n_fetches) ||
            !same_ids(p->target_ids, p->n_targets, targets, n_targets)) continue;
        bool ok = true;
        for (int k = 0; k < n_feeds && ok; k++) ok = p->feed_ids[k] == feeds[k].node->id;
        if (ok) return p;
    }
    return NULL;
}

static void log_placement(kiln_session *s, kiln_plan *p) {
    for (int i = 0; i < p->n_sources; i++) {
        kiln_node *n = s->g->nodes[p->sources[i]];
        if (s->logged[n->id]) continue;
        s->logged[n->id] = true;
        fprintf(stderr, "%s: (%s): /device:CPU:0\n", n->name, kiln_op_get(n->op)->name);
    }
    for (int i = 0; i < p->n_steps; i++) {
        kiln_node *n = p->steps[i].node;
        if (s->logged[n->id]) continue;
        s->logged[n->id] = true;
        fprintf(stderr, "%s: (%s): /device:CPU:0 [%s kernel]\n", n->name, kiln_op_get(n->op)->name, p->steps[i].backend);
    }
}

static kiln_status get_plan(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                            int n_fetches, kiln_node *const *targets, int n_targets, kiln_plan **out) {
    kiln_plan *p = find_plan(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets);
    if (p) { *out = p; return KILN_OK; }
    kiln_status st = grow_ids(s);
    if (st != KILN_OK) return st;
    kiln_node **fn = kiln_malloc((size_t)(n_feeds ? n_feeds : 1) * sizeof *fn);
    for (int i = 0; i < n_feeds; i++) fn[i] = feeds[i].node;
    st = kiln_plan_build(s->g, s->be, fn, n_feeds, fetches, n_fetches, targets, n_targets, s->guard, &p);
    kiln_free(fn);
    if (st != KILN_OK) return st;
    for (int i = 0; i < p->n_sources; i++) {
        kiln_node *n = s->g->nodes[p->sources[i]];
        if (n->op == KILN_OP_VARIABLE && (st = ensure_variable(s, n)) != KILN_OK) { kiln_plan_free(p); return st; }
        if (n->op == KILN_OP_PLACEHOLDER) {
            bool fed = false;
            for (int k = 0; k < n_feeds; k++) fed |= feeds[k].node == n;
            if (!fed) {
                kiln_plan_free(p);
                return kiln_set_error(KILN_INVALID_ARGUMENT, "placeholder '%s' must be fed: a fetched or target node depends on it", n->name);
            }
        }
    }
    if (p->arena_bytes > s->arena_bytes) {       /* grows only while new plans appear */
        void *a = s->be->alloc(p->arena_bytes);
        if (!a) {
            kiln_status e = kiln_set_error(KILN_OUT_OF_MEMORY, "session: cannot allocate the %zu-byte activation arena; try a smaller batch size", p->arena_bytes);
            kiln_plan_free(p);
            return e;
        }
        s->be->free(s->arena);
        s->arena = a;
        s->arena_bytes = p->arena_bytes;
    }
    if (s->n_plans == KILN_MAX_PLANS) {            /* evict round-robin */
        kiln_plan_free(s->plans[s->next_evict]);
        s->plans[s->next_evict] = p;
        s->next_evict = (s->next_evict + 1) % KILN_MAX_PLANS;
    } else {
        s->plans[s->n_plans++] = p;
    }
    if (s->opts.log_device_placement) log_placement(s, p);
    *out = p;
    return KILN_OK;
}

static kiln_status check_feeds(const kiln_feed *feeds, int n_feeds) {
    for (int i = 0; i < n_feeds; i++) {
        const kiln_feed *f = &feeds[i];
        if (!f->node || !f->value) return kiln_set_error(KILN_INVALID_ARGUMENT, "feed %d: NULL node or value", i);
        if (f->node->op != KILN_OP_PLACEHOLDER)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "feed %d: '%s' is a %s, only placeholders can be fed", i, f->node->name, kiln_op_get(f->node->op)->name);
        if (f->value->dtype != f->node->dtype || !kiln_shape_equal(f->value->shape, f->node->shape)) {
            char a[96], b[96];
            return kiln_set_error(KILN_INVALID_ARGUMENT, "feed for placeholder '%s': expected %s %s, got %s %s", f->node->name,
                                  kiln_dtype_name(f->node->dtype), kiln_shape_str(f->node->shape, a, sizeof a),
                                  kiln_dtype_name(f->value->dtype), kiln_shape_str(f->value->shape, b, sizeof b));
        }
    }
    return KILN_OK;
}

static kiln_status check_nodes(kiln_session *s, kiln_node *const *nodes, int n, const char *what) {
    if (n > 0 && !nodes) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: %s array is NULL", what);
    for (int i = 0; i < n; i++) {
        if (!nodes[i]) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: %s %d is NULL (did building it fail? %s)", what, i, s->g->error);
        if (nodes[i]->graph != s->g) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: %s '%s' belongs to another graph", what, nodes[i]->name);
    }
    return KILN_OK;
}

static void bind(kiln_session *s, kiln_plan *p, const kiln_feed *feeds, int n_feeds) {
    for (int i = 0; i < p->n_sources; i++) {
        kiln_node *n = s->g->nodes[p->sources[i]];
        if (n->op == KILN_OP_VARIABLE) s->data[n->id] = s->var_data[n->id];
        else if (n->op == KILN_OP_CONSTANT) s->data[n->id] = n->value->data;
    }
    for (int i = 0; i < n_feeds; i++) s->data[feeds[i].node->id] = feeds[i].value->data;
    for (int i = 0; i < p->n_steps; i++) {
        kiln_node *n = p->steps[i].node;
        if (p->alias_of[n->id] >= 0) s->data[n->id] = s->data[p->alias_of[n->id]];
        else s->data[n->id] = (char *)s->arena + p->offset[n->id];
    }
}

kiln_status kiln_session_run(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                             kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets) {
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_run: NULL session");
    if (s->g->status != KILN_OK) return kiln_set_error(s->g->status, "session run: the graph has a build error: %s", s->g->error);
    kiln_status st;
    if ((st = check_feeds(feeds, n_feeds)) || (st = check_nodes(s, fetches, n_fetches, "fetch")) ||
        (st = check_nodes(s, targets, n_targets, "target")))
        return st;
    if (n_fetches > 0 && !outs) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: outs is NULL");
    for (int i = 0; i < n_fetches; i++)
        if (outs[i] && (outs[i]->dtype != fetches[i]->dtype || !kiln_shape_equal(outs[i]->shape, fetches[i]->shape))) {
            char a[96], b[96];
            return kiln_set_error(KILN_INVALID_ARGUMENT, "fetch '%s' is %s %s but the output tensor given is %s %s", fetches[i]->name,
                                  kiln_dtype_name(fetches[i]->dtype), kiln_shape_str(fetches[i]->shape, a, sizeof a),
                                  kiln_dtype_name(outs[i]->dtype), kiln_shape_str(outs[i]->shape, b, sizeof b));
        }
    kiln_plan *p = NULL;
    if ((st = get_plan(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, &p)) != KILN_OK) return st;
    s->planned_bytes = p->arena_bytes;
    if (s->opts.measure_only) return KILN_OK;
#ifdef _OPENMP
    if (omp_get_max_threads() != s->num_threads) omp_set_num_threads(s->num_threads);
#endif
    bind(s, p, feeds, n_feeds);
    for (int i = 0; i < p->n_steps; i++) {
        kiln_plan_step *stp = &p->steps[i];
        kiln_node *n = stp->node;
        kiln_view *v = &p->views[stp->view_base];
        for (int k = 0; k < n->n_in; k++) {
            kiln_node *in = n->in[k];
            v[k] = (kiln_view){ s->data[in->id], in->dtype, in->shape, kiln_shape_numel(in->shape) };
        }
        kiln_kctx c = {
            .node = n, .n_in = n->n_in, .in = v,
            .out = { s->data[n->id], n->dtype, n->shape, kiln_shape_numel(n->shape) },
            .workspace = stp->ws_offset >= 0 ? (char *)s->arena + stp->ws_offset : NULL,
            /* the session seed reseeds every dropout mask; (seed, step) gives the same masks on every backend */
            .ws_bytes = stp->ws_bytes, .step = s->step ^ kiln_mix64(s->opts.seed), .num_threads = s->num_threads,
        };
        if (p->alias_of[n->id] >= 0 && c.out.data == v[0].data) continue;   /* reshape: nothing to do */
        size_t out_bytes = (size_t)c.out.numel * kiln_dtype_size(n->dtype);
        if (p->guard) memset((char *)c.out.data + out_bytes, GUARD_BYTE, p->guard);
        st = stp->kernel(&c);
        for (size_t k = 0; k < p->guard && st == KILN_OK; k++)
            if (((unsigned char *)c.out.data)[out_bytes + k] != GUARD_BYTE)
                st = kiln_set_error(KILN_INTERNAL, "%s (%s): the %s kernel wrote past the end of its output (guard byte %zu)", n->name, kiln_op_get(n->op)->name, stp->backend, k);
        if (st != KILN_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", kiln_last_error());
            if (strncmp(msg, n->name, strlen(n->name)) == 0)
                return kiln_set_error(st, "%s", msg);
            return kiln_set_error(st, "%s (%s): %s", n->name, kiln_op_get(n->op)->name, msg);
        }
    }
    for (int i = 0; i < n_fetches; i++) {
        kiln_node *f = fetches[i];
        if (!outs[i]) {
            outs[i] = kiln_tensor_new(f->dtype, f->shape);
            if (!outs[i]) return kiln_set_error(KILN_OUT_OF_MEMORY, "fetch '%s': %s", f->name, kiln_last_error());
        }
        memcpy(outs[i]->data, s->data[f->id], kiln_tensor_nbytes(outs[i]));
    }
    s->step++;
    return KILN_OK;
}

kiln_status kiln_session_read_variable(kiln_session *s, kiln_node *var, kiln_tensor *out) {
    if (!s || !var || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "read_variable: NULL argument");
    if (var->op != KILN_OP_VARIABLE) return kiln_set_error(KILN_INVALID_ARGUMENT, "read_variable: '%s' is not a variable", var->name);
    if (out->dtype != var->dtype || !kiln_shape_equal(out->shape, var->shape)) {
        char a[96], b[96];
        return kiln_set_error(KILN_SHAPE_MISMATCH, "read_variable '%s': variable is %s %s, tensor is %s %s", var->name,
                              kiln_dtype_name(var->dtype), kiln_shape_str(var->shape, a, sizeof a), kiln_dtype_name(out->dtype), kiln_shape_str(out->shape, b, sizeof b));
    }
    kiln_status st;
    if ((st = grow_ids(s)) || (st = ensure_variable(s, var))) return st;
    memcpy(out->data, s->var_data[var->id], kiln_tensor_nbytes(out));
    return KILN_OK;
}

kiln_status kiln_session_assign_variable(kiln_session *s, kiln_node *var, const kiln_tensor *value) {
    if (!s || !var || !value) return kiln_set_error(KILN_INVALID_ARGUMENT, "assign_variable: NULL argument");
    if (var->op != KILN_OP_VARIABLE) return kiln_set_error(KILN_INVALID_ARGUMENT, "assign_variable: '%s' is not a variable", var->name);
    if (value->dtype != var->dtype || !kiln_shape_equal(value->shape, var->shape)) {
        char a[96], b[96];
        return kiln_set_error(KILN_SHAPE_MISMATCH, "assign_variable '%s': variable is %s %s, value is %s %s", var->name,
                              kiln_dtype_name(var->dtype), kiln_shape_str(var->shape, a, sizeof a), kiln_dtype_name(value->dtype), kiln_shape_str(value->shape, b, sizeof b));
    }
    kiln_status st;
    if ((st = grow_ids(s)) || (st = ensure_variable(s, var))) return st;
    memcpy(s->var_data[var->id], value->data, kiln_tensor_nbytes(value));
    return KILN_OK;
}

uint64_t kiln_session_step(const kiln_session *s) { return s->step; }
void kiln_session_set_step(kiln_session *s, uint64_t step) { s->step = step; }
size_t kiln_session_planned_bytes(const kiln_session *s) { return s->planned_bytes; }
const char *kiln_session_backend(const kiln_session *s) { return s->be->name; }

size_t kiln_session_variable_bytes(const kiln_session *s) {
    size_t b = 0;
    for (int i = 0; i < s->n_ids && i < s->g->n_nodes; i++)
        if (s->var_data[i]) b += (size_t)kiln_shape_numel(s->g->nodes[i]->shape) * kiln_dtype_size(s->g->nodes[i]->dtype);
    return b;
}
