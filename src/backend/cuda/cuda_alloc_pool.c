/* Caching allocator bookkeeping (see cuda_alloc_pool.h). Blocks are few (the executor allocates
 * one arena per plan plus the variables), so plain lists and linear scans are enough. The block
 * records use calloc/free, not kiln_malloc: this is an allocator's own bookkeeping, built into
 * the CUDA module, which never links libkiln (cuda_module.h); a failed calloc is a failed
 * allocation of device memory (NULL), or a block left unsplit. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "backend/cuda/cuda_alloc_pool.h"

struct pool_block {
    char *ptr;
    size_t size;
    bool free;
    bool seg_head;                      /* ptr is the start of a raw segment */
    pool_block *seg_prev, *seg_next;    /* address neighbours inside the segment */
    pool_block *prev, *next;            /* the pool's list of every block */
};

size_t pool_round(size_t bytes) {
    if (bytes == 0) bytes = 1;
    return (bytes + POOL_ROUND - 1) / POOL_ROUND * POOL_ROUND;
}

static size_t round_to(size_t v, size_t m) { return (v + m - 1) / m * m; }

void pool_init(kiln_pool *p, pool_raw_alloc_fn ra, pool_raw_free_fn rf, void *ctx) {
    p->raw_alloc = ra;
    p->raw_free = rf;
    p->ctx = ctx;
    p->blocks = NULL;
    p->st = (pool_stats){ 0, 0, 0, 0, 0 };
    p->grow = true;
    p->last_request = 0;
}

static void list_add(kiln_pool *p, pool_block *b) {
    b->prev = NULL;
    b->next = p->blocks;
    if (p->blocks) p->blocks->prev = b;
    p->blocks = b;
}

static void list_remove(kiln_pool *p, pool_block *b) {
    if (b->prev) b->prev->next = b->next; else p->blocks = b->next;
    if (b->next) b->next->prev = b->prev;
}

void pool_destroy(kiln_pool *p) {
    pool_block *b = p->blocks;
    while (b) {
        pool_block *nx = b->next;
        if (b->seg_head) p->raw_free(p->ctx, b->ptr);
        free(b);
        b = nx;
    }
    p->blocks = NULL;
    p->st.in_use = p->st.reserved = 0;
}

/* A new segment of `bytes` from the driver, as one free block; NULL on failure. */
static pool_block *new_segment(kiln_pool *p, size_t bytes) {
    pool_block *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->ptr = p->raw_alloc(p->ctx, bytes);
    if (!b->ptr) { free(b); return NULL; }
    b->size = bytes;
    b->free = true;
    b->seg_head = true;
    list_add(p, b);
    p->st.reserved += bytes;
    return b;
}

size_t pool_release_cached(kiln_pool *p) {
    size_t given = 0;
    pool_block *b = p->blocks;
    while (b) {
        pool_block *nx = b->next;
        if (b->free && b->seg_head && !b->seg_next && !(p->grow == false && p->st.limit)) {
            list_remove(p, b);
            p->raw_free(p->ctx, b->ptr);
            p->st.reserved -= b->size;
            given += b->size;
            free(b);
        }
        b = nx;
    }
    return given;
}

bool pool_configure(kiln_pool *p, size_t limit, bool grow) {
    for (pool_block *b = p->blocks; b; b = b->next)
        if (!b->free) {
            /* in use: only a change that needs no re-reservation is allowed */
            if (!grow || !p->grow) return false;
            p->st.limit = limit;
            return true;
        }
    /* nothing in use: start over with the new settings */
    bool old_grow = p->grow;
    p->grow = true;                  /* lets release_cached free a reserved segment too */
    pool_release_cached(p);
    p->st.limit = limit;
    p->grow = grow;
    if (!grow) {
        if (limit == 0) { p->grow = old_grow; return false; }
        if (!new_segment(p, round_to(limit, POOL_ROUND))) { p->grow = true; p->st.limit = limit; return false; }
    }
    return true;
}

static pool_block *best_fit(kiln_pool *p, size_t r) {
    pool_block *best = NULL;
    for (pool_block *b = p->blocks; b; b = b->next)
        if (b->free && b->size >= r && (!best || b->size < best->size)) best = b;
    return best;
}

/* Takes r bytes from the front of free block b, splitting off the rest as a free block. */
static void *take(kiln_pool *p, pool_block *b, size_t r) {
    if (b->size - r >= POOL_ROUND) {
        pool_block *rest = calloc(1, sizeof *rest);
        if (rest) {
            rest->ptr = b->ptr + r;
            rest->size = b->size - r;
            rest->free = true;
            rest->seg_head = false;
            rest->seg_prev = b;
            rest->seg_next = b->seg_next;
            if (b->seg_next) b->seg_next->seg_prev = rest;
            b->seg_next = rest;
            b->size = r;
            list_add(p, rest);
        }
    }
    b->free = false;
    p->st.in_use += b->size;
    if (p->st.in_use > p->st.peak) p->st.peak = p->st.in_use;
    p->st.num_allocs++;
    return b->ptr;
}

void *pool_alloc(kiln_pool *p, size_t bytes) {
    size_t r = pool_round(bytes);
    p->last_request = bytes;
    pool_block *b = best_fit(p, r);
    if (b) return take(p, b, r);
    if (!p->grow) return NULL;                      /* the reservation is all there is */
    size_t seg = r < POOL_SMALL_LIMIT ? POOL_SEGMENT : round_to(r, POOL_SEGMENT);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt == 1 && pool_release_cached(p) == 0) break;
        if (p->st.limit) {
            if (p->st.reserved + seg > p->st.limit) {
                /* a small request may still fit in a segment trimmed to the limit */
                if (p->st.reserved + r > p->st.limit) continue;
                seg = round_to(r, POOL_ROUND);
                if (p->st.reserved + seg > p->st.limit) continue;
            }
        }
        b = new_segment(p, seg);
        if (b) return take(p, b, r);
    }
    return NULL;
}

bool pool_free(kiln_pool *p, void *ptr) {
    if (!ptr) return true;
    pool_block *b = p->blocks;
    while (b && !(b->ptr == ptr && !b->free)) b = b->next;
    if (!b) return false;
    b->free = true;
    p->st.in_use -= b->size;
    /* coalesce with the following, then the preceding free neighbour */
    pool_block *n = b->seg_next;
    if (n && n->free) {
        b->size += n->size;
        b->seg_next = n->seg_next;
        if (n->seg_next) n->seg_next->seg_prev = b;
        list_remove(p, n);
        free(n);
    }
    pool_block *v = b->seg_prev;
    if (v && v->free) {
        v->size += b->size;
        v->seg_next = b->seg_next;
        if (b->seg_next) b->seg_next->seg_prev = v;
        list_remove(p, b);
        free(b);
    }
    return true;
}

void pool_reset_peak(kiln_pool *p) { p->st.peak = p->st.in_use; }

void pool_oom_message(const kiln_pool *p, int device, char *buf, size_t n) {
    char lim[48];
    if (p->st.limit) snprintf(lim, sizeof lim, "%zu", p->st.limit);
    else snprintf(lim, sizeof lim, "none");
    snprintf(buf, n, "cannot allocate %zu bytes on GPU %d (in use %zu, reserved %zu, limit %s%s)",
             p->last_request, device, p->st.in_use, p->st.reserved, lim,
             p->grow ? "" : ", reserved up front");
}

size_t pool_max_alloc(const kiln_pool *p, size_t device_free) {
    size_t best = 0, releasable = 0;
    for (const pool_block *b = p->blocks; b; b = b->next) {
        if (b->free && b->size > best) best = b->size;
        if (b->free && b->seg_head && !b->seg_next) releasable += b->size;   /* a wholly free segment */
    }
    if (!p->grow) return best;
    /* a new segment: round_to(r, POOL_SEGMENT) from the driver, or trimmed to pool_round(r) near
     * the limit (pool_alloc); fully free segments are released first when that helps */
    size_t held = p->st.reserved - releasable, fresh = SIZE_MAX;
    if (device_free != SIZE_MAX) {
        size_t drv = device_free + releasable;
        fresh = drv / POOL_SEGMENT * POOL_SEGMENT;
    }
    if (p->st.limit) {
        size_t room = p->st.limit > held ? (p->st.limit - held) / POOL_ROUND * POOL_ROUND : 0;
        if (room < fresh) fresh = room;
    }
    return fresh > best ? fresh : best;
}
