/* Epilogue fusion as a table of links: producer -> [BiasAdd] -> [Relu]. Each link may follow the
 * producer or an earlier link, at most once and in table order; every value passed along must
 * have the next link as its only reader (and not be fetched), since it is never stored. */
#include "compile/fusion.h"

typedef struct fusion_link {
    kiln_op op;
    /* c may follow prev in p's epilogue (op, single reader and space already checked) */
    bool (*fits)(const kiln_node *p, const kiln_node *prev, const kiln_node *c, const kiln_fusion_request *r);
    void (*take)(kiln_epilogue *e, const kiln_node *c);
} fusion_link;

/* The bias is made before the producer runs, in its space, and read by the BiasAdd after it, so
 * its buffer already covers the producer's time. */
static bool bias_fits(const kiln_node *p, const kiln_node *prev, const kiln_node *c, const kiln_fusion_request *r) {
    const kiln_node *bias = c->in[1];
    return c->in[0] == prev && bias != prev && c->dtype == p->dtype && bias->id < p->id && r->home[bias->id] == r->home[p->id];
}
static void bias_take(kiln_epilogue *e, const kiln_node *c) { e->bias_id = c->in[1]->id; }

static bool relu_fits(const kiln_node *p, const kiln_node *prev, const kiln_node *c, const kiln_fusion_request *r) {
    (void)p; (void)r;
    return c->in[0] == prev;
}
static void relu_take(kiln_epilogue *e, const kiln_node *c) { (void)c; e->relu = true; }

static const fusion_link links[] = {
    { KILN_OP_BIAS_ADD, bias_fits, bias_take },
    { KILN_OP_RELU, relu_fits, relu_take },
};

void kiln_fuse(kiln_graph *g, const kiln_fusion_request *r, kiln_epilogue *epi, bool *absorbed) {
    int n = g->n_nodes;
    for (int id = 0; id < n; id++) { epi[id] = (kiln_epilogue){ -1, false, id }; absorbed[id] = false; }
    for (int id = 0; id < n; id++) {
        kiln_node *p = g->nodes[id];
        if (!r->need[id] || absorbed[id] || !r->can_fuse(p, r->ctx)) continue;
        int tail = id;
        for (size_t k = 0; k < sizeof links / sizeof links[0]; k++) {
            if (r->n_readers[tail] != 1 || r->fetched[tail]) break;
            kiln_node *c = g->nodes[r->reader[tail]];
            if (c->op != links[k].op || r->home[c->id] != r->home[id] || !links[k].fits(p, g->nodes[tail], c, r)) continue;
            links[k].take(&epi[id], c);
            absorbed[c->id] = true;
            tail = c->id;
        }
        epi[id].tail = tail;
    }
}
