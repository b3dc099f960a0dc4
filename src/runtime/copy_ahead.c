/* Copies ahead: the next batch's host -> device copies enqueued on the copy stream after this
 * run's steps, into two device slots per placeholder used in turn; the next run (only the next,
 * and only for the same host pointers) copies device to device from them instead. */
#include "runtime/runtime_internal.h"

/* The copy of placeholder n made during the previous run from exactly this host data, or NULL. */
ahead_copy *rt_ahead_ready(kiln_session *s, const kiln_node *n, int space, const void *src) {
    for (int i = 0; i < KILN_MAX_AHEAD; i++) {
        ahead_copy *a = &s->ahead[i];
        if (a->id == n->id && a->space == space && a->src == src && a->src && a->run + 1 == s->runs && a->bytes == node_bytes(n)) {
            a->src = NULL;   /* used once */
            return a;
        }
    }
    return NULL;
}

/* Only placeholders this plan copies to the device are copied; a feed that cannot be (no slot,
 * no memory) is simply copied by its own run later. *issued: some copy was. */
kiln_status rt_copy_ahead(kiln_session *s, const kiln_plan *p, const kiln_feed *next, int n_next, bool *issued) {
    for (int k = 0; k < n_next; k++) {
        const kiln_node *n = next[k].node;
        int space = -1;
        for (int i = 0; i < p->n_feed_copies && space < 0; i++) if (p->steps[i].node == n) space = p->steps[i].space;
        if (space < 0) continue;
        const kiln_backend *be = s->be[space];
        if (!be->copy_ahead || !be->copy_ahead_wait) continue;
        ahead_copy *a = NULL;
        for (int i = 0; i < KILN_MAX_AHEAD && !a; i++) if (s->ahead[i].id == n->id && s->ahead[i].space == space) a = &s->ahead[i];
        for (int i = 0; i < KILN_MAX_AHEAD && !a; i++) if (s->ahead[i].id < 0) a = &s->ahead[i];
        size_t bytes = node_bytes(n);
        if (!a) continue;
        if (a->id != n->id || a->space != space || a->bytes != bytes) {
            for (int j = 0; j < 2; j++) { if (a->slot[j]) s->be[a->space]->free(s->be[a->space], a->slot[j]); a->slot[j] = NULL; }
            a->id = -1;
            a->space = space;
            if (!(a->slot[0] = be->alloc(be, bytes)) || !(a->slot[1] = be->alloc(be, bytes))) continue;
            a->id = n->id;
            a->bytes = bytes;
        }
        int w = 1 - a->cur;   /* this run may still be reading slot cur */
        kiln_status st = be->copy_ahead(be, a->slot[w], next[k].value->data, bytes);
        *issued = true;
        if (st != KILN_OK) { a->src = NULL; return st; }
        a->cur = w;
        a->src = next[k].value->data;
        a->run = s->runs;
    }
    return KILN_OK;
}

/* Waits for the copies ahead of every device (the host buffers may be reused after). */
kiln_status rt_copy_ahead_wait(kiln_session *s) {
    kiln_status st = KILN_OK;
    for (int sp = 1; sp < s->n_spaces; sp++) {
        const kiln_backend *be = s->be[sp];
        kiln_status ws = be->copy_ahead_wait ? be->copy_ahead_wait(be) : KILN_OK;
        if (st == KILN_OK) st = ws;
    }
    return st;
}

void rt_ahead_free(kiln_session *s) {
    for (int i = 0; i < KILN_MAX_AHEAD; i++)
        for (int k = 0; k < 2; k++)
            if (s->ahead[i].slot[k]) {
                const kiln_backend *be = s->be[s->ahead[i].space];
                be->free(be, s->ahead[i].slot[k]);
                s->ahead[i].slot[k] = NULL;
            }
}
