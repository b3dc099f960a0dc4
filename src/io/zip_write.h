/* A zip of stored entries (for .keras files; see zip_write.c). */
#ifndef KILN_IO_ZIP_WRITE_H
#define KILN_IO_ZIP_WRITE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "kiln/status.h"

typedef struct kiln_zip_member { const char *name; const uint8_t *data; size_t n; } kiln_zip_member;
/* Writes the n_entries members to f as a zip; what names the file in messages. */
kiln_status kiln_zip_write(FILE *f, const kiln_zip_member *e, int n_entries, const char *what);
#endif
