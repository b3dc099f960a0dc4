/* Opening files to read, for every reader of user-named files (datasets, model files, images,
 * histories, checkpoints): the open never blocks (a FIFO or a device named by mistake is refused
 * at once instead of waiting forever for a writer) and only regular files are read. */
#ifndef KILN_IO_READ_FILE_H
#define KILN_IO_READ_FILE_H
#include <stdint.h>
#include <stdio.h>
#include "kiln/status.h"

/* Opens path for reading ("rb") if it is a regular file. *size: its size in bytes (may be NULL).
 * what names the file in messages ("ONNX model", "CSV file"; NULL: none). Errors: KILN_NOT_FOUND
 * when it does not exist, KILN_IO_ERROR when it cannot be opened or is not a regular file. */
kiln_status kiln_file_open_read(const char *path, const char *what, FILE **out, uint64_t *size);
/* The whole regular file in a new kiln_malloc'd buffer with one NUL byte after its *n bytes (for
 * text parsers). max_bytes > 0 refuses larger files (KILN_INVALID_ARGUMENT) before allocating. */
kiln_status kiln_file_read_all(const char *path, const char *what, uint64_t max_bytes, uint8_t **out, size_t *n);
#endif
