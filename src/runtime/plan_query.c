/* Step memory without running: the plan a run would use (rt_build_plan), read for its arena, its
 * gradient block, the variables it reads and each value's planned bytes. */
#include <string.h>
#include "runtime/runtime_internal.h"
#include "runtime/plan_query.h"

static int main_space(const kiln_plan *p) { return p->device_space >= 1 ? p->device_space : KILN_SPACE_HOST; }

size_t kiln_step_variable_bytes(kiln_session *s, const kiln_plan *p, int space) {
    size_t b = 0;
    for (int i = 0; i < p->n_sources; i++) {
        kiln_node *n = s->g->nodes[p->sources[i]];
        if (n->op == KILN_OP_VARIABLE && p->home[n->id] == space) b += node_bytes(n);
    }
    return b;
}

kiln_status kiln_session_step_memory(kiln_session *s, const kiln_feed *feeds, int n_feeds, kiln_node *const *fetches,
                                     int n_fetches, kiln_node *const *targets, int n_targets, kiln_step_memory *out,
                                     int64_t *value_bytes, int64_t *grad_bytes, kiln_plan **plan) {
    if (plan) *plan = NULL;
    kiln_plan *p = NULL;
    kiln_status st = rt_build_plan(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, &p);
    if (st) return st;
    int sp = main_space(p);
    const kiln_backend *be = s->be[sp];
    *out = (kiln_step_memory){ .space = sp, .backend = be->name, .batch = p->batch, .arena = p->arena_bytes[sp],
                               .grad_block = p->grad_bytes[sp] > 0 ? (size_t)p->grad_bytes[sp] : 0,
                               .variables = kiln_step_variable_bytes(s, p, sp),
                               .avail = sp != KILN_SPACE_HOST && be->max_alloc ? be->max_alloc(be) : 0 };
    for (int id = 0; id < p->n_ids; id++) {
        kiln_node *n = s->g->nodes[id];
        if (value_bytes && p->alias_of[id] < 0 && kiln_plan_offset(p, sp, id) >= 0 && (int64_t)node_bytes(n) > value_bytes[id]) value_bytes[id] = (int64_t)node_bytes(n);
        if (grad_bytes && p->home[id] == sp && (kiln_op_get(n->op)->flags & KILN_OPF_UPDATE) && n->n_in >= 2 &&
            kiln_plan_offset(p, sp, n->in[1]->id) >= 0 && (int64_t)node_bytes(n->in[1]) > grad_bytes[n->in[0]->id])
            grad_bytes[n->in[0]->id] = (int64_t)node_bytes(n->in[1]);
    }
    if (plan) *plan = p;
    else kiln_plan_free(p);
    return KILN_OK;
}
