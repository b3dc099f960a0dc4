#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include "core/core.h"

/* Counted so tests can prove a training step makes no heap allocation after the first. */
static _Atomic uint64_t alloc_count;

uint64_t kiln_alloc_count(void) { return atomic_load(&alloc_count); }

/* kiln_alloc_fail_at: allocations left before the one that fails (0: none armed). */
static _Atomic uint64_t fail_countdown;

uint64_t kiln_alloc_fail_at(uint64_t n) { return atomic_exchange(&fail_countdown, n); }

/* Counts one allocation; false when it is the one a test asked to fail. */
static bool counted(void) {
    atomic_fetch_add(&alloc_count, 1);
    uint64_t left = atomic_load(&fail_countdown);
    while (left > 0 && !atomic_compare_exchange_weak(&fail_countdown, &left, left - 1)) {}
    return left != 1;
}

void *kiln_malloc(size_t n) { return counted() ? malloc(n ? n : 1) : NULL; }
void *kiln_calloc(size_t c, size_t s) { return counted() ? calloc(c ? c : 1, s ? s : 1) : NULL; }
void *kiln_realloc(void *p, size_t n) { return counted() ? realloc(p, n ? n : 1) : NULL; }
void kiln_free(void *p) { free(p); }

char *kiln_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = kiln_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void *kiln_malloc_aligned(size_t n) {
    if (!counted()) return NULL;
    n = (n + 63) & ~(size_t)63;
    return aligned_alloc(64, n ? n : 64);
}
void kiln_free_aligned(void *p) { free(p); }

/* Registered by the CUDA backend when a GPU answers (src/backend/registry.c). */
static void *(*_Atomic staging_alloc)(size_t);
static void (*_Atomic staging_release)(void *);

void kiln_set_staging_allocator(void *(*alloc)(size_t), void (*release)(void *)) {
    atomic_store(&staging_release, release);
    atomic_store(&staging_alloc, alloc);
}

void *kiln_host_alloc_staging(size_t bytes, bool *pinned) {
    void *(*a)(size_t) = atomic_load(&staging_alloc);
    void *p = a ? a(bytes) : NULL;
    *pinned = p != NULL;
    return p ? p : kiln_malloc_aligned(bytes);
}

void kiln_host_free_staging(void *p, bool pinned) {
    if (!p) return;
    void (*f)(void *) = atomic_load(&staging_release);
    if (pinned && f) f(p);
    else kiln_free_aligned(p);
}
