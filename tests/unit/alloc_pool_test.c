/* Host-only unit test of the CUDA caching allocator's bookkeeping (src/backend/cuda/
 * cuda_alloc_pool.c) with malloc standing in for cudaMalloc: no GPU needed; ctest runs it as
 * test_alloc_pool. Exit status 0 when every check passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "backend/cuda/cuda_alloc_pool.h"

static int fails, raw_allocs, raw_frees, fail_next;
static size_t raw_bytes;
#define CHECK(c) do { if (!(c)) { fails++; fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

static void *ra(void *ctx, size_t n) {
    (void)ctx;
    if (fail_next) { fail_next--; return NULL; }
    raw_allocs++; raw_bytes += n;
    return malloc(n);
}
static void rf(void *ctx, void *p) { (void)ctx; raw_frees++; free(p); }

int main(void) {
    kiln_pool p;
    pool_init(&p, ra, rf, NULL);
    /* rounding + small requests share one 2 MiB segment */
    void *a = pool_alloc(&p, 1), *b = pool_alloc(&p, 1000);
    CHECK(a && b && raw_allocs == 1);
    CHECK(p.st.in_use == 512 + 1024 && p.st.reserved == POOL_SEGMENT && p.st.num_allocs == 2);
    CHECK((char *)b - (char *)a == 512);
    /* free + reuse: the freed block comes back without a new segment */
    CHECK(pool_free(&p, a));
    CHECK(p.st.in_use == 1024 && p.st.peak == 1536);
    void *c = pool_alloc(&p, 300);
    CHECK(c == a && raw_allocs == 1);
    /* a large request gets its own segment rounded to 2 MiB */
    void *big = pool_alloc(&p, 3u << 20);
    CHECK(big && raw_allocs == 2 && p.st.reserved == POOL_SEGMENT + (4u << 20));
    CHECK(pool_free(&p, big));
    void *big2 = pool_alloc(&p, 3u << 20);
    CHECK(big2 == big && raw_allocs == 2);
    CHECK(!pool_free(&p, (char *)big2 + 8));      /* not a block start */
    CHECK(pool_free(&p, NULL));
    /* coalescing: free everything; release_cached returns every segment */
    CHECK(pool_free(&p, big2) && pool_free(&p, b) && pool_free(&p, c));
    CHECK(p.st.in_use == 0);
    CHECK(pool_release_cached(&p) == POOL_SEGMENT + (4u << 20) && p.st.reserved == 0 && raw_frees == 2);
    /* limit: an allocation past it fails with a message; cached blocks are released first */
    CHECK(pool_configure(&p, 6u << 20, true));
    void *x = pool_alloc(&p, 4u << 20);
    CHECK(x != NULL);
    CHECK(pool_free(&p, x));                        /* cached: 4 MiB reserved, none in use */
    void *y = pool_alloc(&p, 5u << 20);              /* needs the cache released to fit */
    CHECK(y != NULL && p.st.reserved == (6u << 20));
    void *z = pool_alloc(&p, 2u << 20);              /* over the limit */
    CHECK(z == NULL);
    char msg[256];
    pool_oom_message(&p, 0, msg, sizeof msg);
    CHECK(strstr(msg, "cannot allocate 2097152 bytes on GPU 0") != NULL);
    printf("oom message: %s\n", msg);
    CHECK(pool_free(&p, y));
    /* driver failure: release + retry once, then NULL */
    pool_release_cached(&p);
    fail_next = 2;
    CHECK(pool_alloc(&p, 100) == NULL);
    fail_next = 1;
    void *w = pool_alloc(&p, 100);                  /* nothing cached to release: still NULL */
    CHECK(w == NULL);
    /* reserve up front: one segment of the limit, carved; nothing more from the driver */
    CHECK(pool_configure(&p, 8u << 20, false));
    int before = raw_allocs;
    void *r1 = pool_alloc(&p, 3u << 20), *r2 = pool_alloc(&p, 3u << 20), *r3 = pool_alloc(&p, 3u << 20);
    CHECK(r1 && r2 && !r3 && raw_allocs == before && p.st.reserved == (8u << 20));
    CHECK(pool_free(&p, r1) && pool_free(&p, r2));
    void *r4 = pool_alloc(&p, 7u << 20);             /* coalesced back into one block */
    CHECK(r4 == r1);
    CHECK(!pool_configure(&p, 0, true));             /* in use: cannot switch mode */
    CHECK(pool_free(&p, r4));
    CHECK(pool_release_cached(&p) == 0);            /* reserved segment is kept */
    pool_reset_peak(&p);
    CHECK(p.st.peak == 0);
    CHECK(pool_configure(&p, 0, true) && p.st.reserved == 0);
    /* pool_max_alloc: the largest request that succeeds now (the out-of-memory advice uses it) */
    CHECK(pool_configure(&p, 12u << 20, true));
    void *v1 = pool_alloc(&p, 1600000), *v2 = pool_alloc(&p, 1600000), *v3 = pool_alloc(&p, 3000);
    void *fr = pool_alloc(&p, 3u << 20);
    CHECK(v1 && v2 && v3 && fr && pool_free(&p, fr));      /* a wholly free 4 MiB segment: releasable */
    size_t m = pool_max_alloc(&p, SIZE_MAX);
    CHECK(p.st.reserved == (8u << 20));                      /* v1, v2 (v3 in v1's tail): 2 MiB each; fr's 4 MiB */
    CHECK(m == (8u << 20));                                  /* the limit less v1's and v2's segments */
    CHECK(pool_max_alloc(&p, 1u << 20) == (4u << 20));        /* the driver offers 1 MiB + the 4 MiB released */
    void *mm = pool_alloc(&p, m);
    CHECK(mm != NULL);
    CHECK(pool_free(&p, mm) && pool_release_cached(&p) > 0);
    CHECK(pool_alloc(&p, m + POOL_ROUND) == NULL);
    CHECK(pool_free(&p, v1) && pool_free(&p, v2) && pool_free(&p, v3));
    pool_destroy(&p);
    printf("%s (%d failures)\n", fails ? "FAILED" : "alloc pool: all checks passed", fails);
    return fails ? 1 : 0;
}
