/* Backend registry (internal). */
#ifndef KILN_REGISTRY_H
#define KILN_REGISTRY_H
#include "backend/backend.h"
#include "kiln/device.h"
struct kiln_cuda_module;
/* The loaded CUDA module, or NULL (reason: kiln_gpu_unavailable_reason()). Loads once. */
const struct kiln_cuda_module *kiln_cuda(void);
/* Prints, once per process, the line saying why no GPU is used and that Kiln runs on the CPU. */
void kiln_note_cpu_fallback(void);

#endif
