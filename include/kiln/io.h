/* Kiln checkpoints: safetensors files (https://github.com/huggingface/safetensors), readable by
 * Python's `safetensors`. Writes are atomic (temp file + rename). */
#ifndef KILN_IO_H
#define KILN_IO_H
#include "tensor.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_named_tensor { const char *name; const kiln_tensor *tensor; } kiln_named_tensor;

/* Writes tensors (names unique, UTF-8, not "__metadata__"; any dtype; rank 0..KILN_MAX_DIMS) and
 * optional string metadata (__metadata__, n_meta key/value pairs, may be 0) to path atomically:
 * the bytes go to a new temp file path.tmp.<pid>.<random>, created exclusively and never through
 * a symlink (O_CREAT|O_EXCL|O_NOFOLLOW; every write checked, then fflush + fsync), which is
 * renamed over path. Temp files of path left by a run that was killed (their pid no longer runs)
 * are removed first. On failure (KILN_IO_ERROR: directory missing, not writable, disk full, ...)
 * the temp file is removed and an existing file at path is untouched. tensors are borrowed. */
kiln_status kiln_safetensors_save(const char *path, const kiln_named_tensor *tensors, int n,
                                  const char *const *meta_keys, const char *const *meta_values, int n_meta);

/* A loaded file: names, tensors and metadata, owned by the handle (tensors in header order).
 * load checks the whole file before returning it: header JSON (strict), dtypes, shapes, and that
 * the data_offsets tile the data exactly (in range, contiguous, no overlap, size == numel *
 * dtype size, no trailing bytes). Errors name the file and the problem: KILN_NOT_FOUND (no such
 * file), KILN_UNSUPPORTED (a dtype Kiln lacks, e.g. I8, or rank > KILN_MAX_DIMS), KILN_IO_ERROR
 * (corrupt or truncated). *out is NULL on failure. Free with kiln_safetensors_free (NULL ok).
 * Accessors return NULL for an index out of range or an absent name/key. */
typedef struct kiln_safetensors kiln_safetensors;
kiln_status kiln_safetensors_load(const char *path, kiln_safetensors **out);
void kiln_safetensors_free(kiln_safetensors *f);
int kiln_safetensors_count(const kiln_safetensors *f);
const char *kiln_safetensors_name(const kiln_safetensors *f, int i);
const kiln_tensor *kiln_safetensors_tensor(const kiln_safetensors *f, int i);
const kiln_tensor *kiln_safetensors_find(const kiln_safetensors *f, const char *name);  /* NULL if absent */
int kiln_safetensors_index(const kiln_safetensors *f, const char *name);                /* -1 if absent */
const char *kiln_safetensors_meta(const kiln_safetensors *f, const char *key);          /* NULL if absent */

#ifdef __cplusplus
}
#endif
#endif
