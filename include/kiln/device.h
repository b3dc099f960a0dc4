/* Kiln devices: what tf.config.list_physical_devices, tf.test.is_gpu_available and nvidia-smi
 * tell, and the GPU memory settings. */
#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H
#include <stddef.h>
#include <stdbool.h>
#include "status.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_device_kind { KILN_DEVICE_KIND_CPU = 0, KILN_DEVICE_KIND_GPU, KILN_DEVICE_KIND_COUNT } kiln_device_kind;

typedef struct kiln_device_info {
    kiln_device_kind kind;
    int index;                      /* index among visible devices of its kind */
    char name[128];                 /* "NVIDIA H200", or the CPU model */
    int cc_major, cc_minor;         /* compute capability (GPU) */
    size_t total_memory, free_memory;   /* bytes */
    int driver_version, runtime_version, cudnn_version;   /* e.g. 13000; 0 when unknown */
    int cores;                      /* CPU: logical cores; GPU: multiprocessors */
} kiln_device_info;

/* Fills up to max entries (CPU first, then visible GPUs); *n receives how many exist. Honors
 * CUDA_VISIBLE_DEVICES ("" hides every GPU). Never fails for lack of a GPU. */
kiln_status kiln_device_list(kiln_device_info *out, int max, int *n);
/* True when the CUDA backend loaded and at least one GPU answers. */
bool kiln_gpu_available(void);
/* This build made the CUDA backend (libkiln_cuda.so, loaded at run time): TensorFlow's
 * tf.test.is_built_with_cuda(). Says nothing about a GPU being present (kiln_gpu_available). */
bool kiln_built_with_cuda(void);
/* The CPU runs bf16 arithmetic natively (AVX512-BF16 or AMX-BF16): the mixed_bfloat16 policy's
 * convolutions and matmuls then run in bf16 through oneDNN. KILN_CPU_BF16=0 answers false. */
bool kiln_cpu_has_bf16(void);
/* Why no GPU is used ("" when one is): e.g. "CUDA driver is insufficient for the CUDA runtime
 * (no NVIDIA driver or no device)". */
const char *kiln_gpu_unavailable_reason(void);

typedef struct kiln_memory_stats {
    size_t in_use;        /* bytes handed out to tensors now */
    size_t peak;          /* highest in_use since start or last reset */
    size_t reserved;      /* bytes held from the driver by the caching allocator */
    size_t limit;         /* 0: none */
    size_t num_allocs;    /* allocations served */
} kiln_memory_stats;
kiln_status kiln_device_memory_stats(int gpu_index, kiln_memory_stats *out);
kiln_status kiln_device_reset_peak(int gpu_index);

typedef struct kiln_memory_options {
    size_t limit_bytes;   /* 0: no limit (like tf.config.set_logical_device_configuration memory_limit) */
    bool grow;            /* true (default): reserve on demand (set_memory_growth); false: reserve limit up front */
} kiln_memory_options;
/* Must be called before the first session on that GPU. */
kiln_status kiln_device_set_memory_options(int gpu_index, const kiln_memory_options *o);

#ifdef __cplusplus
}
#endif
#endif
