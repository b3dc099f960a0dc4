/* Static memory planning: buffers with lifetimes (in node-id time) placed in one arena per memory
 * space, so values that are never alive together share bytes. */
#ifndef KILN_MEMPLAN_H
#define KILN_MEMPLAN_H
#include <stdbool.h>
#include <stdint.h>
#include "kiln/status.h"

/* One arena buffer: a value (or a kernel's workspace) alive over [start, end]. scaled: the bytes
 * of it that grow with the batch (0: fixed). offset: set by kiln_memplan_place. A buffer inside
 * another (parent >= 0) is not placed itself: it sits at parent's offset + rel. */
typedef struct kiln_plan_buf { int64_t bytes, start, end, offset; int space; int64_t scaled; int parent; int64_t rel; } kiln_plan_buf;

typedef struct kiln_memplan {
    kiln_plan_buf *bufs;
    int n, cap;
} kiln_memplan;

int64_t kiln_align64(int64_t x);
/* Adds a buffer; returns its index, or -1 (KILN_OUT_OF_MEMORY set) when the list cannot grow. */
int kiln_memplan_add(kiln_memplan *m, int64_t bytes, int64_t start, int64_t end, int space, int64_t scaled);
/* Adds a buffer inside buffer `parent`, at `rel` bytes from its start. */
int kiln_memplan_add_inside(kiln_memplan *m, int parent, int64_t rel, int64_t bytes);
/* Places the buffers of `space` (largest first, lowest offset that overlaps no buffer alive at the
 * same time) and returns the arena bytes, or -1 when out of host memory. */
int64_t kiln_memplan_place(kiln_plan_buf *b, int nb, int space);
#endif
