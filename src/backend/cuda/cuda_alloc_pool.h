/* The caching device allocator's bookkeeping, in plain C so it can be unit tested without a GPU:
 * the raw allocator (cudaMalloc/cudaFree on the device, malloc/free in a test) is a pair of
 * callbacks. Like PyTorch's caching allocator, for one stream: request sizes are rounded to 512
 * bytes; small requests (< 1 MiB) are carved from 2 MiB segments, large ones get segments rounded
 * to 2 MiB; a freed block goes back to the cache (coalesced with free neighbours of its segment)
 * and is handed out again best-fit. Kernels run in stream order on the one module stream, so a
 * block freed on the host can be reused by the next allocation at once.
 * Modes: grow on demand (default: segments are reserved as needed, up to the limit) or reserve up
 * front (one segment of `limit` bytes, reserved at configure time, nothing more from the driver).
 * When a raw allocation fails or would pass the limit, every fully free segment is released and
 * the allocation retried once; if it still fails, pool_alloc returns NULL and pool_oom_message
 * says why. Not thread-safe (the module serialises calls). */
#ifndef KILN_CUDA_ALLOC_POOL_H
#define KILN_CUDA_ALLOC_POOL_H
#include <stddef.h>
#include <stdbool.h>
#ifdef __cplusplus
extern "C" {
#endif

#define POOL_ROUND 512u
#define POOL_SMALL_LIMIT (1u << 20)       /* requests below this share 2 MiB segments */
#define POOL_SEGMENT (2u << 20)

typedef void *(*pool_raw_alloc_fn)(void *ctx, size_t bytes);   /* NULL on failure */
typedef void (*pool_raw_free_fn)(void *ctx, void *p);

typedef struct pool_block pool_block;

typedef struct pool_stats {
    size_t in_use, peak, reserved, limit, num_allocs;
} pool_stats;

typedef struct kiln_pool {
    pool_raw_alloc_fn raw_alloc;
    pool_raw_free_fn raw_free;
    void *ctx;
    pool_block *blocks;        /* every block of every segment (doubly linked, any order) */
    pool_stats st;
    bool grow;                 /* false: one segment of `limit` reserved up front */
    size_t last_request;       /* for the OOM message */
} kiln_pool;

void pool_init(kiln_pool *p, pool_raw_alloc_fn ra, pool_raw_free_fn rf, void *ctx);
/* Releases every segment (blocks still in use included). */
void pool_destroy(kiln_pool *p);
/* limit 0 = none. grow=false needs a limit and reserves it now. Fails (false) when blocks are in
 * use and the new settings would need re-reserving, or when the up-front reservation fails. */
bool pool_configure(kiln_pool *p, size_t limit, bool grow);
void *pool_alloc(kiln_pool *p, size_t bytes);
/* Returns false for a pointer the pool did not hand out (or NULL: true, no-op). */
bool pool_free(kiln_pool *p, void *ptr);
/* Frees every segment with no block in use; returns the bytes given back. */
size_t pool_release_cached(kiln_pool *p);
void pool_reset_peak(kiln_pool *p);
/* The largest single request pool_alloc can serve now: the largest free block, or a new segment
 * within the limit and within device_free more bytes from the driver (SIZE_MAX: unbounded). */
size_t pool_max_alloc(const kiln_pool *p, size_t device_free);
/* Writes the OOM reason of the last failed pool_alloc. */
void pool_oom_message(const kiln_pool *p, int device, char *buf, size_t n);
size_t pool_round(size_t bytes);
#ifdef __cplusplus
}
#endif
#endif
