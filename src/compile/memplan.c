/* Greedy static memory planning (the TFLite / llm.c style arena): sizes known at plan time. */
#include "compile/memplan.h"
#include "core/core.h"

int64_t kiln_align64(int64_t x) { return (x + 63) & ~(int64_t)63; }

int kiln_memplan_add(kiln_memplan *m, int64_t bytes, int64_t start, int64_t end, int space, int64_t scaled) {
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 256;
        kiln_plan_buf *b = kiln_realloc(m->bufs, (size_t)cap * sizeof *b);
        if (!b) { kiln_set_error(KILN_OUT_OF_MEMORY, "memory plan: out of host memory"); return -1; }
        m->bufs = b;
        m->cap = cap;
    }
    m->bufs[m->n] = (kiln_plan_buf){ bytes, start, end > start ? end : start, 0, space, scaled, -1, 0 };
    return m->n++;
}

int kiln_memplan_add_inside(kiln_memplan *m, int parent, int64_t rel, int64_t bytes) {
    kiln_plan_buf p = m->bufs[parent];
    int i = kiln_memplan_add(m, bytes, p.start, p.end, p.space, 0);
    if (i >= 0) { m->bufs[i].parent = parent; m->bufs[i].rel = rel; }
    return i;
}

int64_t kiln_memplan_place(kiln_plan_buf *b, int nb, int space) {
    int *order = kiln_malloc((size_t)(nb ? nb : 1) * sizeof *order);
    if (!order) { kiln_set_error(KILN_OUT_OF_MEMORY, "memory plan: out of host memory"); return -1; }
    int n = 0;
    for (int i = 0; i < nb; i++) if (b[i].space == space && b[i].parent < 0) order[n++] = i;
    for (int i = 1; i < n; i++) {           /* insertion sort by size, descending (stable) */
        int k = order[i], j = i - 1;
        while (j >= 0 && b[order[j]].bytes < b[k].bytes) { order[j + 1] = order[j]; j--; }
        order[j + 1] = k;
    }
    int64_t total = 0;
    for (int oi = 0; oi < n; oi++) {
        kiln_plan_buf *x = &b[order[oi]];
        int64_t off = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (int pj = 0; pj < oi; pj++) {
                kiln_plan_buf *y = &b[order[pj]];
                bool live = !(x->end < y->start || y->end < x->start);
                if (live && off < y->offset + y->bytes && y->offset < off + x->bytes) {
                    off = kiln_align64(y->offset + y->bytes);
                    moved = true;
                }
            }
        }
        x->offset = off;
        if (off + x->bytes > total) total = off + x->bytes;
    }
    for (int i = 0; i < nb; i++)
        if (b[i].space == space && b[i].parent >= 0) b[i].offset = b[b[i].parent].offset + b[i].rel;
    kiln_free(order);
    return total;
}
