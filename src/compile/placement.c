/* The placement pass (TensorFlow's rules, soft placement by default). */
#include <stdio.h>
#include "compile/placement.h"

const char *kiln_space_name(int space, char *buf, size_t n) {
    if (space <= KILN_SPACE_HOST) snprintf(buf, n, "/device:CPU:0");
    else snprintf(buf, n, "/device:GPU:%d", space - 1);
    return buf;
}

static kiln_status soft_place(const kiln_placement *pl, kiln_node *n, const char *why) {
    if (pl->strict)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s (%s): placed on %s, but %s (soft placement is off)", n->name, kiln_op_get(n->op)->name, n->device, why);
    if (!*pl->warned) {
        *pl->warned = true;
        kiln_log_msg(KILN_LOG_WARNING, "kiln: warning: %s asks for %s, but %s; it and any like it run on /device:CPU:0 (soft placement)", n->name, n->device, why);
    }
    return KILN_OK;
}

static kiln_status place_op(const kiln_placement *pl, kiln_node *n, int8_t *space) {
    kiln_device_spec req = { KILN_DEVICE_CPU, 0 };
    bool asked = n->device[0] && kiln_parse_device(n->device, &req) == KILN_OK;
    *space = KILN_SPACE_HOST;
    if (asked && req.type == KILN_DEVICE_GPU) {
        char why[160];
        if (pl->n_devices == 0) return soft_place(pl, n, pl->no_device_reason && pl->no_device_reason[0] ? pl->no_device_reason : "this session has no GPU backend");
        if (req.index < 0 || req.index >= pl->n_devices) {
            snprintf(why, sizeof why, "that GPU does not exist (%d visible)", pl->n_devices);
            return soft_place(pl, n, why);
        }
        if (!pl->devices[req.index]->kernel(pl->devices[req.index], n)) return soft_place(pl, n, "the GPU backend has no kernel for this op");
        *space = (int8_t)(req.index + 1);
    } else if (!asked && pl->n_devices > 0 && pl->devices[0]->kernel(pl->devices[0], n)) {
        *space = 1;
    }
    return KILN_OK;
}

/* A source (variable, constant) lives where it is first used: by the op that updates it, else by
 * its first reader (aliases looked through). */
static int8_t place_source(kiln_graph *g, const kiln_placement *pl, kiln_node *n, const int8_t *place) {
    kiln_device_spec req;
    if (pl->n_devices == 0 || n->op == KILN_OP_PLACEHOLDER) return KILN_SPACE_HOST;   /* feeds arrive on the host */
    if (n->device[0] && kiln_parse_device(n->device, &req) == KILN_OK && req.type == KILN_DEVICE_CPU) return KILN_SPACE_HOST;
    int first = -1, mut = -1;
    for (int c = n->id + 1; c < g->n_nodes && mut < 0; c++) {
        kiln_node *cn = g->nodes[c];
        unsigned f = kiln_op_get(cn->op)->flags;
        if (f & (KILN_OPF_SOURCE | KILN_OPF_ALIAS0)) continue;
        for (int k = 0; k < cn->n_in; k++)
            if (cn->in[k] == n) { if (first < 0) first = c; if (f & KILN_OPF_MUTATES) mut = c; break; }
    }
    int who = mut >= 0 ? mut : first;
    return who >= 0 ? place[who] : KILN_SPACE_HOST;
}

kiln_status kiln_place(kiln_graph *g, const kiln_placement *pl, int8_t *place) {
    for (int id = 0; id < g->n_nodes; id++) {      /* ops first */
        kiln_node *n = g->nodes[id];
        if (place[id] >= 0 || (kiln_op_get(n->op)->flags & KILN_OPF_SOURCE)) continue;
        kiln_status st = place_op(pl, n, &place[id]);
        if (st != KILN_OK) return st;
    }
    for (int id = 0; id < g->n_nodes; id++) {      /* then sources, from their consumers */
        kiln_node *n = g->nodes[id];
        if (place[id] < 0 && (kiln_op_get(n->op)->flags & KILN_OPF_SOURCE)) place[id] = place_source(g, pl, n, place);
    }
    return KILN_OK;
}

/* prefix: the replica's name scope ("replica_1/", "" for none); gpu >= 0: the GPU index the
 * session's only device space stands for (a replica's session calls its GPU space 1). */
static const char *space_of(int space, int gpu, char *buf, size_t n) {
    if (space > KILN_SPACE_HOST && gpu >= 0) snprintf(buf, n, "/device:GPU:%d", gpu);
    else kiln_space_name(space, buf, n);
    return buf;
}

static void log_plan(kiln_graph *g, const kiln_plan *p, bool *logged, const char *prefix, int gpu) {
    char sp[32];
    for (int i = 0; i < p->n_sources; i++) {
        kiln_node *n = g->nodes[p->sources[i]];
        if (logged[n->id]) continue;
        logged[n->id] = true;
        kiln_log_msg(KILN_LOG_INFO, "%s%s: (%s): %s", prefix, n->name, kiln_op_get(n->op)->name, space_of(p->home[n->id], gpu, sp, sizeof sp));
    }
    for (int i = 0; i < p->n_steps; i++) {
        const kiln_plan_step *st = &p->steps[i];
        kiln_node *n = st->node;
        if (st->kind == KILN_STEP_COPY) {
            char to[16];
            if (st->space == KILN_SPACE_HOST) snprintf(to, sizeof to, "CPU_0");
            else snprintf(to, sizeof to, "GPU_%d", gpu >= 0 ? gpu : st->space - 1);
            kiln_log_msg(KILN_LOG_INFO, "%s%s/_copy_to_%s: (Copy): %s", prefix, n->name, to, space_of(st->space, gpu, sp, sizeof sp));
            continue;
        }
        if (logged[n->id]) continue;
        logged[n->id] = true;
        kiln_log_msg(KILN_LOG_INFO, "%s%s: (%s): %s", prefix, n->name, kiln_op_get(n->op)->name, space_of(st->space, gpu, sp, sizeof sp));
    }
}

void kiln_log_placement(kiln_graph *g, const kiln_plan *p, bool *logged) { log_plan(g, p, logged, "", -1); }

void kiln_log_placement_replica(kiln_graph *g, const kiln_plan *p, bool *logged, int replica, int gpu) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "replica_%d/", replica);
    log_plan(g, p, logged, prefix, gpu);
}
