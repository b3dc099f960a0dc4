/* Kiln checkpoints: safetensors files (https://github.com/huggingface/safetensors), readable by
 * Python's `safetensors`. Writes are atomic (temp file + rename). */
#ifndef KILN_IO_H
#define KILN_IO_H
#include "tensor.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_named_tensor { const char *name; const kiln_tensor *tensor; } kiln_named_tensor;

/* Writes tensors (names unique) and optional string metadata (__metadata__, n_meta key/value
 * pairs, may be 0) to path atomically. */
kiln_status kiln_safetensors_save(const char *path, const kiln_named_tensor *tensors, int n,
                                  const char *const *meta_keys, const char *const *meta_values, int n_meta);

/* A loaded file: names, tensors and metadata, owned by the handle. */
typedef struct kiln_safetensors kiln_safetensors;
kiln_status kiln_safetensors_load(const char *path, kiln_safetensors **out);
void kiln_safetensors_free(kiln_safetensors *f);
int kiln_safetensors_count(const kiln_safetensors *f);
const char *kiln_safetensors_name(const kiln_safetensors *f, int i);
const kiln_tensor *kiln_safetensors_tensor(const kiln_safetensors *f, int i);
const kiln_tensor *kiln_safetensors_find(const kiln_safetensors *f, const char *name);  /* NULL if absent */
const char *kiln_safetensors_meta(const kiln_safetensors *f, const char *key);          /* NULL if absent */

#ifdef __cplusplus
}
#endif
#endif
