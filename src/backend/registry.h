/* Backend registry (internal). */
#ifndef KILN_REGISTRY_H
#define KILN_REGISTRY_H
#include "backend/backend.h"
#include "kiln/device.h"
struct kiln_cuda_module;
/* The loaded CUDA module, or NULL (reason: kiln_gpu_unavailable_reason()). Loads once. */
const struct kiln_cuda_module *kiln_cuda(void);
/* Visible GPUs (0 without the CUDA module). */
int kiln_cuda_device_count(void);
/* The backend object of GPU index; NULL with the error set (no GPU, or no such GPU). */
const kiln_backend *kiln_cuda_backend(int index);
/* NCCL among gpus[0..n) of this process as a collective service (collectives.c); KILN_UNSUPPORTED
 * saying what to install when NCCL cannot be loaded. out->free(out->ctx) ends it. */
kiln_status kiln_cuda_collectives(const int *gpus, int n, kiln_collectives *out);
/* Says once per process, in one line, that Kiln runs on the CPU: "kiln: no GPU found; using the
 * CPU", with the reason (kiln_gpu_unavailable_reason) under KILN_VERBOSE=1 or when an NVIDIA
 * driver is loaded. */
void kiln_note_cpu_fallback(void);

#endif
