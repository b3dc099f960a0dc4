/* A hash index over an array of names (open addressing, FNV-1a), so duplicate checks and lookups
 * in checkpoint headers are linear in the number of names, not quadratic. The names stay where
 * they are; the index holds their positions. */
#ifndef KILN_IO_NAME_INDEX_H
#define KILN_IO_NAME_INDEX_H
#include <stdbool.h>
#include <stddef.h>

typedef const char *(*kiln_name_at_fn)(const void *ctx, int i);
typedef struct kiln_name_index {
    int *slot;              /* position + 1; 0 = empty */
    size_t mask;            /* capacity - 1 (a power of two), 0 when empty */
    int n;
    kiln_name_at_fn name_at;
    const void *ctx;        /* the array, passed to name_at */
} kiln_name_index;

void kiln_name_index_init(kiln_name_index *x, kiln_name_at_fn name_at, const void *ctx);
void kiln_name_index_free(kiln_name_index *x);
/* The position of name, or -1. */
int kiln_name_index_find(const kiln_name_index *x, const char *name);
/* Adds position i (whose name name_at(ctx, i) must already be readable). False: out of memory. */
bool kiln_name_index_add(kiln_name_index *x, int i);
#endif
