/* Copies ahead: the next batch's host -> device copies enqueued on the copy stream after this
 * run's steps, into two device slots per placeholder used in turn; the next run (only the next,
 * and only for the same host pointers) copies device to device from them instead. */
#include "runtime/runtime_internal.h"

/* The copy of placeholder n made during the previous run from exactly this host data, or NULL. */
ahead_copy *rt_ahead_ready(kiln_session *s, const kiln_node *n, const void *src) {
    for (int i = 0; i < KILN_MAX_AHEAD; i++) {
        ahead_copy *a = &s->ahead[i];
        if (a->id == n->id && a->src == src && a->src && a->run + 1 == s->runs && a->bytes == node_bytes(n)) {
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
        bool copied = false;
        for (int i = 0; i < p->n_feed_copies && !copied; i++) copied = p->steps[i].node == n;
        if (!copied) continue;
        ahead_copy *a = NULL;
        for (int i = 0; i < KILN_MAX_AHEAD && !a; i++) if (s->ahead[i].id == n->id) a = &s->ahead[i];
        for (int i = 0; i < KILN_MAX_AHEAD && !a; i++) if (s->ahead[i].id < 0) a = &s->ahead[i];
        size_t bytes = node_bytes(n);
        if (!a) continue;
        if (a->id != n->id || a->bytes != bytes) {
            for (int j = 0; j < 2; j++) { if (a->slot[j]) s->dev->free(a->slot[j]); a->slot[j] = NULL; }
            a->id = -1;
            if (!(a->slot[0] = s->dev->alloc(bytes)) || !(a->slot[1] = s->dev->alloc(bytes))) continue;
            a->id = n->id;
            a->bytes = bytes;
        }
        int w = 1 - a->cur;   /* this run may still be reading slot cur */
        kiln_status st = s->hooks->copy_ahead(a->slot[w], next[k].value->data, bytes);
        *issued = true;
        if (st != KILN_OK) { a->src = NULL; return st; }
        a->cur = w;
        a->src = next[k].value->data;
        a->run = s->runs;
    }
    return KILN_OK;
}

void rt_ahead_free(kiln_session *s) {
    for (int i = 0; i < KILN_MAX_AHEAD; i++)
        for (int k = 0; k < 2; k++)
            if (s->ahead[i].slot[k]) { s->dev->free(s->ahead[i].slot[k]); s->ahead[i].slot[k] = NULL; }
}
