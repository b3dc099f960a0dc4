/* The compile passes on their own: the gradient block (every gradient an optimizer update reads,
 * back to back in one buffer, in the order they are made), the fusion pattern table, and the
 * memory plan keeping values that are alive together apart. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "compile/placement.h"
#include "compile/plan.h"
#include "graph/graph_internal.h"

typedef struct net {
    kiln_graph *g;
    kiln_node *x, *y, *loss, *step;
    kiln_node *vars[6], *grads[6];
    int n_vars;
} net;

/* Three dense layers (BiasAdd + Relu), gradients clipped by global norm (Mul written in place over
 * the raw gradients), SGD with momentum. */
static net build(void) {
    net m = { kiln_graph_new() };
    kiln_graph *g = m.g;
    m.x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(16, 8));
    m.y = kiln_placeholder(g, "y", KILN_I32, KILN_SHAPE(16));
    kiln_node *h = m.x;
    int width[4] = { 8, 32, 24, 5 };
    for (int l = 0; l < 3; l++) {
        char nm[16];
        snprintf(nm, sizeof nm, "w%d", l);
        kiln_node *w = kiln_variable(g, nm, KILN_F32, KILN_SHAPE(width[l], width[l + 1]), kiln_init_glorot_uniform((uint64_t)l + 1));
        snprintf(nm, sizeof nm, "b%d", l);
        kiln_node *b = kiln_variable(g, nm, KILN_F32, KILN_SHAPE(width[l + 1]), kiln_init_zeros());
        m.vars[m.n_vars++] = w;
        m.vars[m.n_vars++] = b;
        h = kiln_bias_add(g, kiln_matmul(g, h, w, false, false), b);
        if (l < 2) h = kiln_relu(g, h);
    }
    m.loss = kiln_sparse_softmax_cross_entropy(g, h, m.y);
    CHECK_OK(kiln_gradients(g, m.loss, m.vars, m.n_vars, m.grads));
    CHECK_OK(kiln_clip_by_global_norm(g, m.grads, m.n_vars, 1.0, m.grads));
    m.step = kiln_apply_sgd(g, m.vars, m.grads, m.n_vars, &(kiln_sgd_opts){ .lr = 0.1, .momentum = 0.9 });
    CHECK_OK(kiln_graph_status(g));
    return m;
}

static kiln_plan *plan_of(net *m, int8_t *place, bool no_fusion) {
    memset(place, -1, (size_t)m->g->n_nodes);
    bool warned = false;
    kiln_placement pl = { NULL, 0, "", false, &warned };
    CHECK_OK(kiln_place(m->g, &pl, place));
    const kiln_backend *be[1] = { kiln_backend_cpu() };
    kiln_plan *p = NULL;
    kiln_plan_request r = { (kiln_node *[]){ m->x, m->y }, 2, &m->loss, 1, &m->step, 1, be, 1, place, 0, no_fusion };
    CHECK_OK(kiln_plan_build(m->g, &r, &p));
    return p;
}

static const kiln_plan *sort_plan;   /* qsort context */
static int by_offset(const void *a, const void *b) {
    int64_t oa = kiln_plan_offset(sort_plan, 0, *(const int *)a), ob = kiln_plan_offset(sort_plan, 0, *(const int *)b);
    return (oa > ob) - (oa < ob);
}

static void test_grad_block(void) {
    net m = build();
    int8_t *place = malloc((size_t)m.g->n_nodes);
    kiln_plan *p = plan_of(&m, place, false);
    CHECK(p && p->n_grads == m.n_vars);
    CHECK(p && p->grad_offset[0] >= 0 && p->grad_bytes[0] > 0);
    if (p && p->n_grads == m.n_vars) {
        int ids[6];
        for (int i = 0; i < m.n_vars; i++) ids[i] = m.grads[i]->id;
        sort_plan = p;
        qsort(ids, (size_t)m.n_vars, sizeof ids[0], by_offset);
        int64_t at = p->grad_offset[0];
        for (int i = 0; i < m.n_vars; i++) {     /* back to back, each 64-byte aligned */
            kiln_node *gn = m.g->nodes[ids[i]];
            int64_t bytes = kiln_shape_numel(kiln_node_shape(gn)) * 4;
            CHECK_MSG(kiln_plan_offset(p, 0, ids[i]) == at, "%s at %lld, expected %lld", kiln_node_name(gn),
                      (long long)kiln_plan_offset(p, 0, ids[i]), (long long)at);
            at = (at + bytes + 63) / 64 * 64;
            if (i + 1 < m.n_vars) CHECK(ids[i] < ids[i + 1]);   /* in the order they are made */
        }
        CHECK(at - p->grad_offset[0] - (int64_t)p->grad_bytes[0] < 64);
        /* no value made while the block is alive (from the first gradient to the last update)
         * shares its bytes */
        int last_update = 0;
        for (int id = 0; id < p->n_ids; id++) if (m.g->nodes[id]->op == KILN_OP_APPLY_SGD) last_update = id;
        for (int id = 0; id <= last_update; id++) {
            int64_t o = kiln_plan_offset(p, 0, id);
            bool grad = false;
            for (int i = 0; i < m.n_vars; i++) grad |= m.grads[i]->id == id;
            if (o < 0 || grad || id < ids[0]) continue;
            int64_t end = o + kiln_shape_numel(kiln_node_shape(m.g->nodes[id])) * 4;
            CHECK_MSG(end <= p->grad_offset[0] || o >= p->grad_offset[0] + p->grad_bytes[0],
                      "%s [%lld, %lld) overlaps the gradient block", kiln_node_name(m.g->nodes[id]), (long long)o, (long long)end);
        }
    }
    kiln_plan_free(p);
    free(place);
    kiln_graph_free(m.g);
}

/* The cpu backend fuses MatMul -> BiasAdd [-> Relu]: no forward BiasAdd or Relu gets a step of its
 * own; with fusion off every op has one. */
static void test_fusion_table(void) {
    net m = build();
    int8_t *place = malloc((size_t)m.g->n_nodes);
    int counts[2][KILN_OP_COUNT] = { { 0 } };
    for (int nf = 0; nf < 2; nf++) {
        kiln_plan *p = plan_of(&m, place, nf == 1);
        for (int i = 0; p && i < p->n_steps; i++) {
            kiln_plan_step *s = &p->steps[i];
            if (s->kind != KILN_STEP_KERNEL) continue;
            counts[nf][s->node->op]++;
            if (nf == 0 && s->relu) CHECK(s->bias_id >= 0 && s->out_id != kiln_node_id(s->node));
        }
        kiln_plan_free(p);
    }
    /* forward: 3 BiasAdd (all fused), 2 Relu (the hidden layers') */
    CHECK_MSG(counts[1][KILN_OP_BIAS_ADD] == 3 && counts[0][KILN_OP_BIAS_ADD] == 0, "BiasAdd steps %d fused, %d unfused",
              counts[0][KILN_OP_BIAS_ADD], counts[1][KILN_OP_BIAS_ADD]);
    CHECK_MSG(counts[1][KILN_OP_RELU] - counts[0][KILN_OP_RELU] == 2, "Relu steps %d fused, %d unfused",
              counts[0][KILN_OP_RELU], counts[1][KILN_OP_RELU]);
    free(place);
    kiln_graph_free(m.g);
}

int main(void) {
    test_grad_block();
    test_fusion_table();
    return check_summary("test_plan");
}
