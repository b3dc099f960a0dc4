/* Sessions: placement, variable storage per memory space, cached plans per (feeds, fetches,
 * targets), and the executor loop (with whole-step CUDA graph replay on device-only plans). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "graph/plan.h"
#include "graph/session_internal.h"
#include "backend/registry.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define KILN_MAX_PLANS 16
#define GUARD_BYTE 0xA5
#define KILN_MAX_AHEAD 8   /* fed placeholders copied ahead (kiln_session_run_ahead) */

/* A placeholder's value copied to the device during the previous run: two device slots used in
 * turn, so the copy stream writes one while this run's compute stream reads the other. */
typedef struct ahead_copy {
    int id;                 /* placeholder id, -1 unused */
    size_t bytes;
    void *slot[2];
    int cur;                /* slot holding the copy of src */
    const void *src;        /* host data it copies */
    uint64_t run;           /* the run that made it; valid only for the run after */
} ahead_copy;

struct kiln_session {
    kiln_graph *g;
    const kiln_backend *host, *dev;
    kiln_session_opts opts;
    int num_threads;
    int n_ids;
    void **var_data;            /* id -> variable storage, in var_home[id]'s space */
    int8_t *var_home;
    void **const_dev;           /* id -> device copy of a constant */
    int8_t *place;              /* id -> space (-1: not decided yet) */
    bool *logged;
    kiln_plan *plans[KILN_MAX_PLANS];
    int n_plans, next_evict;
    void *arena[KILN_SPACE_COUNT];
    size_t arena_bytes[KILN_SPACE_COUNT];
    uint64_t arena_gen;         /* bumped when an arena moves (captured graphs then re-capture) */
    void **data[KILN_SPACE_COUNT];   /* id -> bound pointer for the current run */
    uint64_t step;
    uint64_t runs;              /* kiln_session_run calls (copies ahead are valid for the next one) */
    ahead_copy ahead[KILN_MAX_AHEAD];
    size_t planned_bytes;
    size_t guard;
    bool warned_soft, verbose;
    double *prof;               /* KILN_PROFILE=1: seconds per op (indexed by kiln_op), printed at free */
    int64_t *prof_n;
};

static void print_profile(const kiln_session *s) {
    double total = 0;
    for (int i = 0; i < KILN_OP_COUNT; i++) total += s->prof[i];
    fprintf(stderr, "kiln profile: %.3f s in kernels (host-timed%s)\n", total,
            s->dev ? "; device kernels synchronised one by one, no CUDA graphs: slower than a real run" : "");
    bool done[KILN_OP_COUNT] = { 0 };
    for (;;) {
        int best = -1;
        for (int i = 0; i < KILN_OP_COUNT; i++) if (!done[i] && s->prof_n[i] && (best < 0 || s->prof[i] > s->prof[best])) best = i;
        if (best < 0) break;
        done[best] = true;
        fprintf(stderr, "  %-30s %9.3f s %5.1f%% %9lld calls %9.1f us/call\n", kiln_op_get((kiln_op)best)->name, s->prof[best],
                total > 0 ? 100 * s->prof[best] / total : 0, (long long)s->prof_n[best], 1e6 * s->prof[best] / (double)s->prof_n[best]);
    }
}

void kiln_session_set_guard(kiln_session *s, size_t bytes) { s->guard = bytes; }

static void *grow(void *p, int old_n, int n, size_t elem, int fill) {
    char *q = kiln_realloc(p, (size_t)n * elem);
    if (q) memset(q + (size_t)old_n * elem, fill, (size_t)(n - old_n) * elem);
    return q;
}

static kiln_status grow_ids(kiln_session *s) {
    int n = s->g->n_nodes, o = s->n_ids;
    if (n <= o) return KILN_OK;
    if (!(s->var_data = grow(s->var_data, o, n, sizeof(void *), 0)) ||
        !(s->var_home = grow(s->var_home, o, n, 1, 0)) ||
        !(s->const_dev = grow(s->const_dev, o, n, sizeof(void *), 0)) ||
        !(s->place = grow(s->place, o, n, 1, -1)) ||
        !(s->logged = grow(s->logged, o, n, sizeof(bool), 0)) ||
        !(s->data[0] = grow(s->data[0], o, n, sizeof(void *), 0)) ||
        !(s->data[1] = grow(s->data[1], o, n, sizeof(void *), 0)))
        return kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory");
    s->n_ids = n;
    return KILN_OK;
}

static const kiln_backend *space_be(kiln_session *s, int space) { return space == KILN_SPACE_DEVICE ? s->dev : s->host; }
static size_t node_bytes(const kiln_node *n) { return (size_t)kiln_shape_numel(n->shape) * kiln_dtype_size(n->dtype); }

/* ---- variables: created on first use, initialised on the host, moved to their space ---- */
static kiln_status var_store(kiln_session *s, kiln_node *v, int space) {
    if (s->var_data[v->id] && s->var_home[v->id] == space) return KILN_OK;
    size_t bytes = node_bytes(v);
    void *host = NULL;
    if (!s->var_data[v->id]) {
        kiln_tensor *t = kiln_tensor_new(v->dtype, v->shape);
        if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "variable %s: %s", v->name, kiln_last_error());
        kiln_status st = kiln_init_fill(v->init, t);
        if (st != KILN_OK) { kiln_tensor_free(t); return st; }
        host = t->data;
        t->owns_data = false;
        kiln_tensor_free(t);
        if (space == KILN_SPACE_HOST) { s->var_data[v->id] = host; s->var_home[v->id] = KILN_SPACE_HOST; return KILN_OK; }
    } else {   /* migrate device -> host */
        host = s->var_data[v->id];
        if (space == KILN_SPACE_HOST) {
            void *h = kiln_malloc_aligned(bytes);
            kiln_status st = h ? s->dev->copy(s->dev, h, host, bytes, KILN_COPY_D2H) : KILN_OUT_OF_MEMORY;
            if (st == KILN_OK) st = s->dev->sync(s->dev);
            if (st != KILN_OK) { kiln_free_aligned(h); return kiln_set_error(st, "variable %s: cannot move it to the host: %s", v->name, kiln_last_error()); }
            s->dev->free(s->dev, host);
            s->var_data[v->id] = h;
            s->var_home[v->id] = KILN_SPACE_HOST;
            return KILN_OK;
        }
    }
    void *d = s->dev->alloc(s->dev, bytes);
    if (!d) {
        if (host != s->var_data[v->id]) kiln_free_aligned(host);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "variable %s (%zu bytes) does not fit on the GPU: %s", v->name, bytes, kiln_last_error());
    }
    kiln_status st = s->dev->copy(s->dev, d, host, bytes, KILN_COPY_H2D);
    if (st == KILN_OK) st = s->dev->sync(s->dev);
    kiln_free_aligned(host);
    if (st != KILN_OK) { s->dev->free(s->dev, d); s->var_data[v->id] = NULL; return st; }
    s->var_data[v->id] = d;
    s->var_home[v->id] = KILN_SPACE_DEVICE;
    return KILN_OK;
}

static kiln_session *session_new(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *dev) {
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
    for (int i = 0; i < KILN_MAX_AHEAD; i++) s->ahead[i].id = -1;
    s->num_threads = kiln_threads_resolve(s->opts.num_threads);
    const char *e = getenv("KILN_LOG_DEVICE_PLACEMENT");
    if (e && *e && strcmp(e, "0") != 0) s->opts.log_device_placement = true;
    e = getenv("KILN_FUSION");
    if (e && strcmp(e, "0") == 0) s->opts.no_fusion = true;
    e = getenv("KILN_CUDA_GRAPHS");
    if (e && strcmp(e, "0") == 0) s->opts.no_cuda_graphs = true;
    e = getenv("KILN_PROFILE");
    if (e && *e && strcmp(e, "0") != 0) {
        s->prof = kiln_calloc(KILN_OP_COUNT, sizeof *s->prof);
        s->prof_n = kiln_calloc(KILN_OP_COUNT, sizeof *s->prof_n);
    }
    e = getenv("KILN_VERBOSE");
    s->verbose = e && *e && strcmp(e, "0") != 0;
    if (grow_ids(s) != KILN_OK) { kiln_session_free(s); return NULL; }
    return s;
}

kiln_session *kiln_session_new(kiln_graph *g, const kiln_session_opts *opts) {
    kiln_backend_kind kind = opts ? opts->backend : KILN_BACKEND_AUTO;
    const kiln_backend *cu = NULL;
    if (kind == KILN_BACKEND_AUTO || kind == KILN_BACKEND_CUDA) {
        cu = kiln_cuda() ? kiln_cuda_backend(0) : NULL;
        if (!cu && kind == KILN_BACKEND_CUDA) {
            kiln_set_error(KILN_NOT_FOUND, "kiln_session_new: the CUDA backend was asked for, but %s", kiln_gpu_unavailable_reason());
            return NULL;
        }
        if (!cu) kiln_note_cpu_fallback();
    }
    return session_new(g, opts, cu);
}

kiln_session *kiln_session_new_with_device(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *dev) {
    return session_new(g, opts, dev);
}

void kiln_session_free(kiln_session *s) {
    if (!s) return;
    if (s->prof) print_profile(s);
    kiln_free(s->prof);
    kiln_free(s->prof_n);
    for (int i = 0; i < s->n_ids; i++) {
        if (s->var_data[i]) {
            if (s->var_home[i] == KILN_SPACE_DEVICE) s->dev->free(s->dev, s->var_data[i]);
            else kiln_free_aligned(s->var_data[i]);
        }
        if (s->const_dev[i]) s->dev->free(s->dev, s->const_dev[i]);
    }
    for (int i = 0; i < s->n_plans; i++) {
        if (s->plans[i]->graph_exec) s->dev->graph_free(s->dev, s->plans[i]->graph_exec);
        kiln_plan_free(s->plans[i]);
    }
    for (int sp = 0; sp < KILN_SPACE_COUNT; sp++) {
        if (s->arena[sp]) space_be(s, sp)->free(space_be(s, sp), s->arena[sp]);
        kiln_free(s->data[sp]);
    }
    for (int i = 0; i < KILN_MAX_AHEAD; i++)
        for (int k = 0; k < 2; k++) if (s->ahead[i].slot[k]) s->dev->free(s->dev, s->ahead[i].slot[k]);
    kiln_free(s->var_data); kiln_free(s->var_home); kiln_free(s->const_dev);
    kiln_free(s->place); kiln_free(s->logged);
    kiln_free(s);
}

/* ---- placement: explicit scope > where a variable is first used > the device when it has a
 * kernel for the node > the CPU ---- */
static kiln_status soft_place(kiln_session *s, kiln_node *n, const char *why) {
    if (s->opts.strict_placement)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s (%s): placed on %s, but %s (soft placement is off)", n->name, kiln_op_get(n->op)->name, n->device, why);
    if (!s->warned_soft) {
        s->warned_soft = true;
        fprintf(stderr, "kiln: warning: %s asks for %s, but %s; it and any like it run on /device:CPU:0 (soft placement)\n", n->name, n->device, why);
    }
    return KILN_OK;
}

static kiln_status place_nodes(kiln_session *s) {
    kiln_graph *g = s->g;
    kiln_status st;
    for (int id = 0; id < g->n_nodes; id++) {      /* ops first */
        kiln_node *n = g->nodes[id];
        if (s->place[id] >= 0 || (kiln_op_get(n->op)->flags & KILN_OPF_SOURCE)) continue;
        int sp = KILN_SPACE_HOST;
        kiln_device_spec req = { KILN_DEVICE_CPU, 0 };
        bool asked = n->device[0] && kiln_parse_device(n->device, &req) == KILN_OK;
        if (asked && req.type == KILN_DEVICE_GPU) {
            if (!s->dev) st = soft_place(s, n, kiln_gpu_unavailable_reason()[0] ? kiln_gpu_unavailable_reason() : "this session has no GPU backend");
            else if (req.index > 0) st = soft_place(s, n, "that GPU does not exist");
            else if (!s->dev->kernel(s->dev, n)) st = soft_place(s, n, "the GPU backend has no kernel for this op");
            else { st = KILN_OK; sp = KILN_SPACE_DEVICE; }
            if (st != KILN_OK) return st;
        } else if (!asked && s->dev && s->dev->kernel(s->dev, n)) {
            sp = KILN_SPACE_DEVICE;
        }
        s->place[id] = (int8_t)sp;
    }
    for (int id = 0; id < g->n_nodes; id++) {      /* then sources, from their consumers */
        kiln_node *n = g->nodes[id];
        if (s->place[id] >= 0 || !(kiln_op_get(n->op)->flags & KILN_OPF_SOURCE)) continue;
        int sp = KILN_SPACE_HOST;
        kiln_device_spec req;
        if (!s->dev || n->op == KILN_OP_PLACEHOLDER) sp = KILN_SPACE_HOST;   /* feeds arrive on the host */
        else if (n->device[0] && kiln_parse_device(n->device, &req) == KILN_OK && req.type == KILN_DEVICE_CPU) sp = KILN_SPACE_HOST;
        else {
            int first = -1, mut = -1;
            for (int c = id + 1; c < g->nodes[id]->graph->n_nodes && mut < 0; c++) {
                kiln_node *cn = g->nodes[c];
                unsigned f = kiln_op_get(cn->op)->flags;
                if (f & (KILN_OPF_SOURCE | KILN_OPF_ALIAS0)) continue;
                for (int k = 0; k < cn->n_in; k++)
                    if (cn->in[k] == n) { if (first < 0) first = c; if (f & KILN_OPF_MUTATES) mut = c; break; }
            }
            int who = mut >= 0 ? mut : first;
            sp = who >= 0 ? s->place[who] : KILN_SPACE_HOST;
        }
        s->place[id] = (int8_t)sp;
    }
    return KILN_OK;
}

static const char *space_name(int sp) { return sp == KILN_SPACE_DEVICE ? "/device:GPU:0" : "/device:CPU:0"; }

static void log_placement(kiln_session *s, kiln_plan *p) {
    for (int i = 0; i < p->n_sources; i++) {
        kiln_node *n = s->g->nodes[p->sources[i]];
        if (s->logged[n->id]) continue;
        s->logged[n->id] = true;
        fprintf(stderr, "%s: (%s): %s\n", n->name, kiln_op_get(n->op)->name, space_name(p->home[n->id]));
    }
    for (int i = 0; i < p->n_steps; i++) {
        kiln_plan_step *st = &p->steps[i];
        kiln_node *n = st->node;
        if (st->kind == KILN_STEP_COPY) {
            fprintf(stderr, "%s/_copy_to_%s: (Copy): %s\n", n->name, st->space == KILN_SPACE_DEVICE ? "GPU_0" : "CPU_0", space_name(st->space));
            continue;
        }
        if (s->logged[n->id]) continue;
        s->logged[n->id] = true;
        fprintf(stderr, "%s: (%s): %s\n", n->name, kiln_op_get(n->op)->name, space_name(st->space));
    }
}

/* ---- plans ---- */
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

/* The message for a device arena that does not fit: sizes, the biggest tensors, what to do. */
static kiln_status arena_oom(kiln_session *s, kiln_plan *p, int sp) {
    char big[512] = "";
    size_t k = 0;
    bool *used = kiln_calloc((size_t)s->g->n_nodes, sizeof *used);
    for (int r = 0; r < 3 && used; r++) {
        int best = -1;
        for (int id = 0; id < p->n_ids; id++)
            if (!used[id] && p->offset[sp][id] >= 0 && (best < 0 || node_bytes(s->g->nodes[id]) > node_bytes(s->g->nodes[best]))) best = id;
        if (best < 0) break;
        used[best] = true;
        char sh[96];
        k += (size_t)snprintf(big + k, sizeof big - k, "%s%s %s (%.1f MiB)", r ? ", " : "", s->g->nodes[best]->name,
                              kiln_shape_str(s->g->nodes[best]->shape, sh, sizeof sh), node_bytes(s->g->nodes[best]) / 1048576.0);
        if (k >= sizeof big) break;
    }
    kiln_free(used);
    /* The largest batch whose memory plan fits in what is free: the same plan with its
     * batch-sized buffers rescaled (kiln_plan_arena_at), found by bisection. */
    char fit[256] = "lower the batch size";
    size_t avail = sp == KILN_SPACE_DEVICE && s->dev->max_alloc ? s->dev->max_alloc(s->dev) : 0;
    if (p->batch > 1 && avail > 0) {
        int64_t lo = 0, hi = p->batch - 1;     /* lo fits (0 trivially), answer in [lo, hi] */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo + 1) / 2;
            if (kiln_plan_arena_at(p, sp, mid) <= avail) lo = mid; else hi = mid - 1;
        }
        if (lo >= 1)
            snprintf(fit, sizeof fit, "use a batch size of %lld or less instead of %lld (its memory plan needs %.1f MiB; %.1f MiB can be allocated)",
                     (long long)lo, (long long)p->batch, kiln_plan_arena_at(p, sp, lo) / 1048576.0, avail / 1048576.0);
        else
            snprintf(fit, sizeof fit, "even batch size 1 does not fit in the %.1f MiB that can be allocated: a smaller model, or the CPU", avail / 1048576.0);
    }
    return kiln_set_error(KILN_OUT_OF_MEMORY,
        "out of memory on %s: the step's activations need %.1f MiB (variables hold %.1f MiB more); largest tensors: %s. "
        "To fit: %s; gradient accumulation keeps the effective batch; mixed precision halves activations",
        space_name(sp), p->arena_bytes[sp] / 1048576.0, kiln_session_variable_bytes(s) / 1048576.0, big, fit);
}

static kiln_status get_plan(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                            int n_fetches, kiln_node *const *targets, int n_targets, kiln_plan **out) {
    kiln_plan *p = find_plan(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets);
    if (p) { *out = p; return KILN_OK; }
    kiln_status st = grow_ids(s);
    if (st != KILN_OK || (st = place_nodes(s)) != KILN_OK) return st;
    kiln_node **fn = kiln_malloc((size_t)(n_feeds ? n_feeds : 1) * sizeof *fn);
    for (int i = 0; i < n_feeds; i++) fn[i] = feeds[i].node;
    kiln_plan_request req = { fn, n_feeds, fetches, n_fetches, targets, n_targets, s->host, s->dev, s->place, s->guard, s->opts.no_fusion };
    st = kiln_plan_build(s->g, &req, &p);
    kiln_free(fn);
    if (st != KILN_OK) return st;
    for (int i = 0; i < p->n_sources && st == KILN_OK; i++) {
        kiln_node *n = s->g->nodes[p->sources[i]];
        int sp = p->home[n->id];
        if (n->op == KILN_OP_VARIABLE) st = var_store(s, n, sp);
        else if (n->op == KILN_OP_CONSTANT && sp == KILN_SPACE_DEVICE && !s->const_dev[n->id]) {
            void *d = s->dev->alloc(s->dev, node_bytes(n));
            if (!d) st = kiln_set_error(KILN_OUT_OF_MEMORY, "constant %s does not fit on the GPU", n->name);
            else if ((st = s->dev->copy(s->dev, d, n->value->data, node_bytes(n), KILN_COPY_H2D)) == KILN_OK) st = s->dev->sync(s->dev);
            if (d) s->const_dev[n->id] = d;
        } else if (n->op == KILN_OP_PLACEHOLDER) {
            bool fed = false;
            for (int k = 0; k < n_feeds; k++) fed |= feeds[k].node == n;
            if (!fed) st = kiln_set_error(KILN_INVALID_ARGUMENT, "placeholder '%s' must be fed: a fetched or target node depends on it", n->name);
        }
    }
    /* an op that updates a variable must run where the variable lives */
    for (int i = 0; i < p->n_steps && st == KILN_OK; i++) {
        kiln_plan_step *stp = &p->steps[i];
        if (stp->kind != KILN_STEP_KERNEL || !(kiln_op_get(stp->node->op)->flags & KILN_OPF_MUTATES)) continue;
        for (int k = 0; k < stp->node->n_in; k++) {
            kiln_node *in = stp->node->in[k];
            if (in->op == KILN_OP_VARIABLE && p->home[in->id] != stp->space)
                st = kiln_set_error(KILN_INVALID_ARGUMENT, "%s updates variable %s, but runs on %s while the variable lives on %s; place them together",
                                    stp->node->name, in->name, space_name(stp->space), space_name(p->home[in->id]));
        }
    }
    for (int sp = 0; sp < KILN_SPACE_COUNT && st == KILN_OK; sp++) {
        if (p->arena_bytes[sp] <= s->arena_bytes[sp]) continue;    /* grows only while new plans appear */
        if (s->opts.measure_only) continue;
        const kiln_backend *be = space_be(s, sp);
        if (s->arena[sp]) be->free(be, s->arena[sp]);
        s->arena[sp] = NULL;
        s->arena_bytes[sp] = 0;
        s->arena_gen++;
        void *a = be->alloc(be, p->arena_bytes[sp]);
        if (!a) st = arena_oom(s, p, sp);
        else { s->arena[sp] = a; s->arena_bytes[sp] = p->arena_bytes[sp]; }
    }
    if (st != KILN_OK) { kiln_plan_free(p); return st; }
    if (s->n_plans == KILN_MAX_PLANS) {            /* evict round-robin */
        kiln_plan *old = s->plans[s->next_evict];
        if (old->graph_exec) s->dev->graph_free(s->dev, old->graph_exec);
        kiln_plan_free(old);
        s->plans[s->next_evict] = p;
        s->next_evict = (s->next_evict + 1) % KILN_MAX_PLANS;
    } else {
        s->plans[s->n_plans++] = p;
    }
    if (s->opts.log_device_placement) log_placement(s, p);
    *out = p;
    return KILN_OK;
}

/* ---- running ---- */
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
        int sp = p->home[n->id];
        if (n->op == KILN_OP_VARIABLE) s->data[sp][n->id] = s->var_data[n->id];
        else if (n->op == KILN_OP_CONSTANT) s->data[sp][n->id] = sp == KILN_SPACE_DEVICE ? s->const_dev[n->id] : n->value->data;
    }
    for (int i = 0; i < n_feeds; i++) s->data[KILN_SPACE_HOST][feeds[i].node->id] = feeds[i].value->data;
    for (int sp = 0; sp < KILN_SPACE_COUNT; sp++)
        for (int id = 0; id < p->n_ids; id++)
            if (p->offset[sp][id] >= 0) s->data[sp][id] = (char *)s->arena[sp] + p->offset[sp][id];
    for (int id = 0; id < p->n_ids; id++)
        if (p->alias_of[id] >= 0 && p->home[id] >= 0) {
            int sp = p->home[id];
            if (p->offset[sp][id] < 0) s->data[sp][id] = s->data[sp][p->alias_of[id]];
        }
}

/* ---- copies ahead ---- */
/* The copy of placeholder n made during the previous run from exactly this host data, or NULL. */
static ahead_copy *ahead_ready(kiln_session *s, const kiln_node *n, const void *src) {
    for (int i = 0; i < KILN_MAX_AHEAD; i++) {
        ahead_copy *a = &s->ahead[i];
        if (a->id == n->id && a->src == src && a->src && a->run + 1 == s->runs && a->bytes == node_bytes(n)) {
            a->src = NULL;   /* used once */
            return a;
        }
    }
    return NULL;
}

/* Enqueues next's host -> device copies on the copy stream (after this run's steps, so they
 * overlap its compute). Only placeholders this plan copies to the device are copied; a feed that
 * cannot be (no slot, no memory) is simply copied by its own run later. *issued: some copy was. */
static kiln_status copy_ahead(kiln_session *s, const kiln_plan *p, const kiln_feed *next, int n_next, bool *issued) {
    for (int k = 0; k < n_next; k++) {
        const kiln_node *n = next[k].node;
        bool copied = false;
        for (int i = 0; i < p->n_feed_copies && !copied; i++) copied = p->steps[i].node == n;
        if (!copied) continue;
        ahead_copy *a = NULL;
        for (int i = 0; i < KILN_MAX_AHEAD && !a; i++) if (s->ahead[i].id == n->id) a = &s->ahead[i];
        for (int i = 0; i < KILN_MAX_AHEAD && !a; i++) if (s->ahead[i].id < 0) a = &s->ahead[i];
        size_t bytes = node_bytes(n);
        if (!a) continue;
        if (a->id != n->id || a->bytes != bytes) {
            for (int j = 0; j < 2; j++) { if (a->slot[j]) s->dev->free(s->dev, a->slot[j]); a->slot[j] = NULL; }
            a->id = -1;
            if (!(a->slot[0] = s->dev->alloc(s->dev, bytes)) || !(a->slot[1] = s->dev->alloc(s->dev, bytes))) continue;
            a->id = n->id;
            a->bytes = bytes;
        }
        int w = 1 - a->cur;   /* this run may still be reading slot cur */
        kiln_status st = s->dev->copy_ahead(s->dev, a->slot[w], next[k].value->data, bytes);
        *issued = true;
        if (st != KILN_OK) { a->src = NULL; return st; }
        a->cur = w;
        a->src = next[k].value->data;
        a->run = s->runs;
    }
    return KILN_OK;
}

static kiln_status run_step(kiln_session *s, kiln_plan *p, kiln_plan_step *stp) {
    kiln_node *n = stp->node;
    if (stp->kind == KILN_STEP_COPY) {
        int from = p->home[n->id], to = stp->space;
        ahead_copy *a = to == KILN_SPACE_DEVICE ? ahead_ready(s, n, s->data[from][n->id]) : NULL;
        if (a) return s->dev->copy(s->dev, s->data[to][n->id], a->slot[a->cur], a->bytes, KILN_COPY_D2D);
        kiln_status st = s->dev->copy(s->dev, s->data[to][n->id], s->data[from][n->id], node_bytes(n),
                                      to == KILN_SPACE_DEVICE ? KILN_COPY_H2D : KILN_COPY_D2H);
        if (st == KILN_OK && to == KILN_SPACE_HOST) st = s->dev->sync(s->dev);   /* the host reads it next */
        return st;
    }
    void **data = s->data[stp->space];
    kiln_view *v = &p->views[stp->view_base];
    for (int k = 0; k < n->n_in; k++) {
        kiln_node *in = n->in[k];
        v[k] = (kiln_view){ data[in->id], in->dtype, in->shape, kiln_shape_numel(in->shape) };
    }
    char *ws_base = s->arena[stp->space];
    kiln_view bias;
    if (stp->bias_id >= 0) {
        kiln_node *bn = s->g->nodes[stp->bias_id];
        bias = (kiln_view){ data[bn->id], bn->dtype, bn->shape, kiln_shape_numel(bn->shape) };
    }
    kiln_kctx c = {
        .node = n, .n_in = n->n_in, .in = v,
        .out = { data[stp->out_id], n->dtype, n->shape, kiln_shape_numel(n->shape) },
        .epi_bias = stp->bias_id >= 0 ? &bias : NULL, .epi_relu = stp->relu,
        .workspace = stp->ws_offset >= 0 ? ws_base + stp->ws_offset : NULL,
        /* the session seed reseeds every dropout mask; (seed, step) gives the same masks on every backend */
        .ws_bytes = stp->ws_bytes, .step = s->step ^ kiln_mix64(s->opts.seed), .num_threads = s->num_threads,
    };
    if (p->alias_of[n->id] >= 0 && c.out.data == v[0].data) return KILN_OK;   /* reshape: nothing to do */
    bool guard = p->guard && stp->space == KILN_SPACE_HOST;
    size_t out_bytes = node_bytes(n);   /* fused nodes keep the producer's shape */
    if (guard) memset((char *)c.out.data + out_bytes, GUARD_BYTE, p->guard);
    /* profiling a device kernel: wait for it, so the time is the kernel's (plus its launch) */
    bool dev_prof = s->prof && stp->space == KILN_SPACE_DEVICE;
    kiln_status ps;
    if (dev_prof && (ps = s->dev->sync(s->dev)) != KILN_OK) return ps;
    double t0 = s->prof ? kiln_now() : 0;
    kiln_status st = stp->kernel(&c);
    if (dev_prof && st == KILN_OK) st = s->dev->sync(s->dev);
    if (s->prof) { s->prof[n->op] += kiln_now() - t0; s->prof_n[n->op]++; }
    for (size_t k = 0; guard && k < p->guard && st == KILN_OK; k++)
        if (((unsigned char *)c.out.data)[out_bytes + k] != GUARD_BYTE)
            st = kiln_set_error(KILN_INTERNAL, "%s (%s): the %s kernel wrote past the end of its output (guard byte %zu)", n->name, kiln_op_get(n->op)->name, stp->backend, k);
    if (st != KILN_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        if (strncmp(msg, n->name, strlen(n->name)) == 0) return kiln_set_error(st, "%s", msg);
        return kiln_set_error(st, "%s (%s): %s", n->name, kiln_op_get(n->op)->name, msg);
    }
    return KILN_OK;
}

static kiln_status run_steps(kiln_session *s, kiln_plan *p, int from, int to) {
    for (int i = from; i < to; i++) {
        kiln_status st = run_step(s, p, &p->steps[i]);
        if (st != KILN_OK) return st;
    }
    return KILN_OK;
}

/* Device-only plans: after two warm-up runs the step's kernels are captured once as a CUDA graph
 * and replayed (feeds are copied before it). If capture fails: plain launches, said when
 * KILN_VERBOSE is set. *done tells whether this ran the plan. */
static kiln_status run_captured(kiln_session *s, kiln_plan *p, bool *done) {
    *done = false;
    if (!p->uses_device || !s->dev->capture_begin || s->opts.no_cuda_graphs || s->prof || p->host_steps_between || p->capture_failed ||
        (p->has_dropout && !s->dev->set_step))
        return KILN_OK;
    if (p->graph_exec && p->graph_arena_gen != s->arena_gen) {   /* buffers moved: capture again */
        s->dev->graph_free(s->dev, p->graph_exec);
        p->graph_exec = NULL;
        p->warm_runs = 0;
    }
    if (!p->graph_exec && p->warm_runs < 2) { p->warm_runs++; return KILN_OK; }
    kiln_status st = run_steps(s, p, 0, p->n_feed_copies);
    if (st != KILN_OK) return st;
    *done = true;
    if (!p->graph_exec) {
        st = s->dev->capture_begin(s->dev);
        if (st == KILN_OK) {
            kiln_status rs = run_steps(s, p, p->n_feed_copies, p->n_steps);
            void *ge = NULL;
            st = s->dev->capture_end(s->dev, &ge);
            if (rs != KILN_OK) { if (ge) s->dev->graph_free(s->dev, ge); return rs; }
            if (st == KILN_OK) { p->graph_exec = ge; p->graph_arena_gen = s->arena_gen; }
        }
        if (st != KILN_OK) {
            p->capture_failed = true;
            if (s->verbose) fprintf(stderr, "kiln: CUDA graph capture failed (%s); using plain launches\n", kiln_last_error());
            return run_steps(s, p, p->n_feed_copies, p->n_steps);
        }
    }
    if (s->dev->set_step && (st = s->dev->set_step(s->dev, s->step ^ kiln_mix64(s->opts.seed))) != KILN_OK) return st;
    return s->dev->graph_launch(s->dev, p->graph_exec);
}

kiln_status kiln_session_run_ahead(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                                   kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets,
                                   const kiln_feed *next_feeds, int n_next) {
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_session_run: NULL session");
    if (s->g->status != KILN_OK) return kiln_set_error(s->g->status, "session run: the graph has a build error: %s", s->g->error);
    kiln_status st;
    s->runs++;
    if (n_next > 0 && !next_feeds) return kiln_set_error(KILN_INVALID_ARGUMENT, "session run: next_feeds is NULL");
    if ((st = check_feeds(feeds, n_feeds)) || (st = check_feeds(next_feeds, n_next)) || (st = check_nodes(s, fetches, n_fetches, "fetch")) ||
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
    s->planned_bytes = p->arena_bytes[KILN_SPACE_HOST] + p->arena_bytes[KILN_SPACE_DEVICE];
    if (s->opts.measure_only) return KILN_OK;
#ifdef _OPENMP
    if (omp_get_max_threads() != s->num_threads) omp_set_num_threads(s->num_threads);
#endif
    bind(s, p, feeds, n_feeds);
    if (p->uses_device && s->dev->activate && (st = s->dev->activate(s->dev)) != KILN_OK) return st;   /* its kernels run there */
    bool done;
    st = run_captured(s, p, &done);
    if (st == KILN_OK && !done) st = run_steps(s, p, 0, p->n_steps);
    bool ahead = false;
    if (st == KILN_OK && n_next > 0 && p->n_feed_copies > 0 && s->dev->copy_ahead && s->dev->copy_ahead_wait)
        st = copy_ahead(s, p, next_feeds, n_next, &ahead);
    if (st == KILN_OK && p->uses_device) st = s->dev->sync(s->dev);    /* device-side errors surface here */
    if (ahead) {   /* next's host buffers may be reused once this returns */
        kiln_status ws = s->dev->copy_ahead_wait(s->dev);
        if (st == KILN_OK) st = ws;
    }
    for (int i = 0; i < n_fetches && st == KILN_OK; i++) {
        kiln_node *f = fetches[i];
        if (!outs[i] && !(outs[i] = kiln_tensor_new(f->dtype, f->shape)))
            return kiln_set_error(KILN_OUT_OF_MEMORY, "fetch '%s': %s", f->name, kiln_last_error());
        int sp = p->home[f->id];
        if (sp == KILN_SPACE_DEVICE) {
            st = s->dev->copy(s->dev, outs[i]->data, s->data[sp][f->id], kiln_tensor_nbytes(outs[i]), KILN_COPY_D2H);
            if (st == KILN_OK) st = s->dev->sync(s->dev);
        } else {
            memcpy(outs[i]->data, s->data[sp][f->id], kiln_tensor_nbytes(outs[i]));
        }
    }
    if (st == KILN_OK) s->step++;
    return st;
}

kiln_status kiln_session_run(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                             kiln_tensor **outs, int n_fetches, kiln_node *const *targets, int n_targets) {
    return kiln_session_run_ahead(s, feeds, n_feeds, fetches, outs, n_fetches, targets, n_targets, NULL, 0);
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
    if ((st = check_var(var, out, "read_variable")) || (st = grow_ids(s))) return st;
    if (!s->var_data[var->id] && (st = var_store(s, var, KILN_SPACE_HOST))) return st;
    if (s->var_home[var->id] == KILN_SPACE_HOST) { memcpy(out->data, s->var_data[var->id], kiln_tensor_nbytes(out)); return KILN_OK; }
    st = s->dev->copy(s->dev, out->data, s->var_data[var->id], kiln_tensor_nbytes(out), KILN_COPY_D2H);
    return st ? st : s->dev->sync(s->dev);
}

kiln_status kiln_session_assign_variable(kiln_session *s, kiln_node *var, const kiln_tensor *value) {
    kiln_status st;
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "assign_variable: NULL session");
    if ((st = check_var(var, value, "assign_variable")) || (st = grow_ids(s))) return st;
    if (!s->var_data[var->id] && (st = var_store(s, var, KILN_SPACE_HOST))) return st;
    if (s->var_home[var->id] == KILN_SPACE_HOST) { memcpy(s->var_data[var->id], value->data, kiln_tensor_nbytes(value)); return KILN_OK; }
    st = s->dev->copy(s->dev, s->var_data[var->id], value->data, kiln_tensor_nbytes(value), KILN_COPY_H2D);
    return st ? st : s->dev->sync(s->dev);
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
    if (grow_ids(s) != KILN_OK || place_nodes(s) != KILN_OK) return -1;
    return s->place[n->id];
}
