/* Hash index over names (see name_index.h). Kept at most half full. */
#include <stdint.h>
#include <string.h>
#include "core/core.h"
#include "io/name_index.h"

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

void kiln_name_index_init(kiln_name_index *x, kiln_name_at_fn name_at, const void *ctx) {
    memset(x, 0, sizeof *x);
    x->name_at = name_at;
    x->ctx = ctx;
}

void kiln_name_index_free(kiln_name_index *x) {
    kiln_free(x->slot);
    x->slot = NULL;
    x->mask = 0;
    x->n = 0;
}

int kiln_name_index_find(const kiln_name_index *x, const char *name) {
    if (!x->slot) return -1;
    for (size_t k = fnv1a(name) & x->mask;; k = (k + 1) & x->mask) {
        int v = x->slot[k];
        if (!v) return -1;
        if (!strcmp(x->name_at(x->ctx, v - 1), name)) return v - 1;
    }
}

static void put(int *slot, size_t mask, const char *name, int i) {
    size_t k = fnv1a(name) & mask;
    while (slot[k]) k = (k + 1) & mask;
    slot[k] = i + 1;
}

bool kiln_name_index_add(kiln_name_index *x, int i) {
    if ((size_t)(x->n + 1) * 2 > x->mask + (x->slot ? 1 : 0)) {
        size_t cap = x->slot ? (x->mask + 1) * 2 : 16;
        int *ns = kiln_calloc(cap, sizeof *ns);
        if (!ns) return false;
        for (size_t k = 0; x->slot && k <= x->mask; k++)
            if (x->slot[k]) put(ns, cap - 1, x->name_at(x->ctx, x->slot[k] - 1), x->slot[k] - 1);
        kiln_free(x->slot);
        x->slot = ns;
        x->mask = cap - 1;
    }
    put(x->slot, x->mask, x->name_at(x->ctx, i), i);
    x->n++;
    return true;
}
