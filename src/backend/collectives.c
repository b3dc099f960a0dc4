/* The collective services of the backend objects: NCCL among this process's GPUs (the CUDA
 * module's communicator wrapped as a kiln_collectives, so the runtime never sees the module's
 * header) and the identity of one device. MPI's is src/dist's. */
#include "backend/backend.h"
#include "backend/registry.h"
#include "backend/cuda/cuda_module.h"

static kiln_status same(void *ctx, float *const *bufs, const size_t *counts, int n) { return KILN_OK; }
static kiln_status none(void *ctx) { return KILN_OK; }
static kiln_status same_sum(void *ctx, void *const *bufs, const size_t *counts, int n, kiln_dtype dtype) { return KILN_OK; }
static kiln_status same_bcast(void *ctx, void *const *bufs, const size_t *bytes, int n, int root) { return KILN_OK; }

const kiln_collectives *kiln_collectives_identity(void) {
    static const kiln_collectives id = { "identity", NULL, 1, false, same, same, none, none, same_sum, same_bcast, NULL };
    return &id;
}

static kiln_status nccl_mean(void *comm, float *const *bufs, const size_t *counts, int n) {
    return kiln_cuda()->allreduce_mean(comm, bufs, counts, n);
}
static kiln_status nccl_start(void *comm, float *const *bufs, const size_t *counts, int n) {
    return kiln_cuda()->allreduce_start(comm, bufs, counts, n);
}
static kiln_status nccl_finish(void *comm) { return kiln_cuda()->allreduce_join(comm); }
static kiln_status nccl_sum(void *comm, void *const *bufs, const size_t *counts, int n, kiln_dtype dtype) {
    return kiln_cuda()->allreduce_sum(comm, bufs, counts, n, dtype);
}
static kiln_status nccl_bcast(void *comm, void *const *bufs, const size_t *bytes, int n, int root) {
    return kiln_cuda()->broadcast(comm, bufs, bytes, n, root);
}
static void nccl_free(void *comm) { kiln_cuda()->comm_free(comm); }

kiln_status kiln_cuda_collectives(const int *gpus, int n, kiln_collectives *out) {
    const kiln_cuda_module *mod = kiln_cuda();
    if (!mod) return kiln_set_error(KILN_UNSUPPORTED, "NCCL: no CUDA module (%s)", kiln_gpu_unavailable_reason());
    void *comm = NULL;
    kiln_status st = mod->comm_new(gpus, n, &comm);
    if (st != KILN_OK) return st;
    *out = (kiln_collectives){ "nccl", comm, n, true, nccl_mean, nccl_start, NULL, nccl_finish, nccl_sum, nccl_bcast, nccl_free };
    return KILN_OK;
}
