#include <time.h>
#include <unistd.h>
#include "core/core.h"
#include "kiln/graph.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static int default_threads;   /* set by kiln_set_num_threads; 0 = cores available */

int kiln_threads_resolve(int requested) {
    if (requested > 0) return requested < KILN_MAX_THREADS ? requested : KILN_MAX_THREADS;
    if (default_threads > 0) return default_threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (n < KILN_MAX_THREADS ? (int)n : KILN_MAX_THREADS) : 1;
}

void kiln_set_num_threads(int n) {
    default_threads = n > 0 ? (n < KILN_MAX_THREADS ? n : KILN_MAX_THREADS) : 0;
#ifdef _OPENMP
    omp_set_num_threads(kiln_threads_resolve(0));
#endif
}

int kiln_get_num_threads(void) { return kiln_threads_resolve(0); }

double kiln_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
