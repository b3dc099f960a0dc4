/* A session's id-indexed arrays (grown as the graph gains nodes), placement, and variable storage
 * per memory space: created on first use, initialised on the host, moved to where placement puts
 * them. Used by plan_cache.c and replicas.c when a plan is built, and by session.c. */
#include <string.h>
#include "runtime/runtime_internal.h"
#include "compile/placement.h"
#include "backend/registry.h"

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
    int nd = s->n_spaces - 1;
    kiln_placement pl = { s->be + 1, nd, nd ? "" : kiln_gpu_unavailable_reason(), s->opts.strict_placement, &s->warned_soft };
    return kiln_place(s->g, &pl, s->place);
}

/* ---- variables: created on first use, initialised on the host, moved to their space ---- */
static kiln_status var_to_host(kiln_session *s, kiln_node *v) {
    size_t bytes = node_bytes(v);
    const kiln_backend *be = s->be[s->var_home[v->id]];
    void *d = s->var_data[v->id];
    void *h = kiln_malloc_aligned(bytes);
    kiln_status st = h ? be->copy(be, h, d, bytes, KILN_COPY_D2H) : kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    if (st == KILN_OK) st = be->sync(be);
    if (st != KILN_OK) { kiln_free_aligned(h); return kiln_set_error(st, "variable %s: cannot move it to the host: %s", v->name, kiln_last_error()); }
    be->free(be, d);
    s->var_data[v->id] = h;
    s->var_home[v->id] = KILN_SPACE_HOST;
    return KILN_OK;
}

/* A variable's value where `space` says: initialised on the host on first use, then moved (a
 * device-to-device move goes through the host). */
kiln_status rt_var_store(kiln_session *s, kiln_node *v, int space) {
    if (s->var_data[v->id] && s->var_home[v->id] == space) return KILN_OK;
    kiln_status st;
    if (s->var_data[v->id] && s->var_home[v->id] != KILN_SPACE_HOST && (st = var_to_host(s, v)) != KILN_OK) return st;
    if (space == KILN_SPACE_HOST && s->var_data[v->id]) return KILN_OK;
    size_t bytes = node_bytes(v);
    void *host = s->var_data[v->id];
    if (!host) {
        kiln_tensor *t = kiln_tensor_new(v->dtype, v->shape);
        if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "variable %s: %s", v->name, kiln_last_error());
        st = kiln_init_fill(v->init, t);
        if (st != KILN_OK) { kiln_tensor_free(t); return st; }
        host = t->data;
        t->owns_data = false;
        kiln_tensor_free(t);
        if (space == KILN_SPACE_HOST) { s->var_data[v->id] = host; s->var_home[v->id] = KILN_SPACE_HOST; return KILN_OK; }
    }
    const kiln_backend *be = s->be[space];
    void *d = be->alloc(be, bytes);
    char where[32];
    if (!d) {
        if (host != s->var_data[v->id]) kiln_free_aligned(host);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "variable %s (%zu bytes) does not fit on %s: %s", v->name, bytes,
                              kiln_space_name(space, where, sizeof where), kiln_last_error());
    }
    st = be->copy(be, d, host, bytes, KILN_COPY_H2D);
    if (st == KILN_OK) st = be->sync(be);
    kiln_free_aligned(host);
    if (st != KILN_OK) { be->free(be, d); s->var_data[v->id] = NULL; return st; }
    s->var_data[v->id] = d;
    s->var_home[v->id] = (int8_t)space;
    return KILN_OK;
}

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
