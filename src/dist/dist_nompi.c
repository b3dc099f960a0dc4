/* The transport of a build without MPI: one process. kiln_dist_init refuses to start when a
 * launcher asked for more (saying what to install), so these are never reached with size > 1. */
#include "dist/dist_internal.h"

static kiln_status no_mpi(void) {
    return kiln_set_error(KILN_UNSUPPORTED, "this kiln was built without MPI: install Open MPI (Debian: apt-get install "
                          "libopenmpi-dev openmpi-bin) and rebuild");
}
bool dist_tp_built(void) { return false; }
kiln_status dist_tp_init(kiln_dist *d, int *argc, char ***argv) { (void)d; (void)argc; (void)argv; return no_mpi(); }
void dist_tp_finalize(kiln_dist *d) { (void)d; }
kiln_status dist_tp_allreduce_sum(kiln_dist *d, void *x, int64_t n, bool f64) { (void)d; (void)x; (void)n; (void)f64; return no_mpi(); }
kiln_status dist_tp_broadcast(kiln_dist *d, void *buf, size_t bytes, int root) { (void)d; (void)buf; (void)bytes; (void)root; return no_mpi(); }
kiln_status dist_tp_barrier(kiln_dist *d) { (void)d; return no_mpi(); }
kiln_status dist_tp_allgather(kiln_dist *d, const void *mine, void *all, size_t bytes) { (void)d; (void)mine; (void)all; (void)bytes; return no_mpi(); }
kiln_status dist_tp_iallreduce_sum(kiln_dist *d, float *x, int64_t n) { (void)d; (void)x; (void)n; return no_mpi(); }
kiln_status dist_tp_test(kiln_dist *d) { (void)d; return no_mpi(); }
kiln_status dist_tp_wait(kiln_dist *d) { (void)d; return no_mpi(); }
void dist_tp_abort(const kiln_dist *d, int code) { (void)d; (void)code; }   /* unreachable: size is 1 */
