/* Internal core utilities: allocation (counted), errors, rng, threads. */
#ifndef KILN_CORE_H
#define KILN_CORE_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "kiln/tensor.h"

/* Every heap allocation Kiln makes goes through these (counted for the no-allocation test). */
void *kiln_malloc(size_t n);
void *kiln_calloc(size_t count, size_t size);
void *kiln_realloc(void *p, size_t n);
void kiln_free(void *p);
char *kiln_strdup(const char *s);
/* 64-byte aligned; free with kiln_free_aligned. */
void *kiln_malloc_aligned(size_t n);
void kiln_free_aligned(void *p);

/* Host memory for data that is copied to a GPU (input pipeline batches): page-locked once the
 * CUDA backend has registered its allocator (copies are then asynchronous and faster), plain
 * aligned memory otherwise. *pinned says which; free with kiln_host_free_staging(p, pinned). */
void *kiln_host_alloc_staging(size_t bytes, bool *pinned);
void kiln_host_free_staging(void *p, bool pinned);
void kiln_set_staging_allocator(void *(*alloc)(size_t), void (*release)(void *));

/* Test hook: the n-th heap allocation from now (kiln_malloc/calloc/realloc/malloc_aligned, 1 =
 * the next) fails; 0 disarms. Returns the allocations that were still to go before the armed
 * failure (0: it fired, or none was armed), so a sweep knows when N passed the last allocation. */
uint64_t kiln_alloc_fail_at(uint64_t n);

/* One message through the log callback (kiln_set_log_callback; default: a line on stderr). */
void kiln_log_msg(kiln_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets this thread's last error and returns s. */
kiln_status kiln_set_error(kiln_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
kiln_status kiln_set_errorv(kiln_status s, const char *fmt, va_list ap);

/* Counter-based RNG (splitmix64 / philox-like mixing): same (key, counter) -> same bits on every
 * backend and thread count. */
static inline uint64_t kiln_mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
/* Uniform in [0, 1) from (key, counter). */
static inline double kiln_rand_uniform(uint64_t key, uint64_t counter) {
    return (double)(kiln_mix64(key ^ kiln_mix64(counter)) >> 11) * (1.0 / 9007199254740992.0);
}
/* Sequential generator for initializers / shuffling. */
typedef struct kiln_rng { uint64_t state; } kiln_rng;
static inline kiln_rng kiln_rng_new(uint64_t seed) { kiln_rng r = { kiln_mix64(seed ^ 0x5DEECE66Dull) }; return r; }
static inline uint64_t kiln_rng_next(kiln_rng *r) { r->state += 0x9E3779B97F4A7C15ull; return kiln_mix64(r->state); }
static inline double kiln_rng_uniform(kiln_rng *r) { return (double)(kiln_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
double kiln_rng_normal(kiln_rng *r);

/* Seconds on a monotonic clock (timing epochs, profiles). */
double kiln_now(void);

/* Threads for cpu kernels. */
int kiln_threads_resolve(int requested);

#endif
