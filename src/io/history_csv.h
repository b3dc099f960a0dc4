/* Training history CSV files (what kiln train --history and Keras' CSVLogger write, or any table
 * of numbers): the one parser that kiln plot and resuming a history (the CSV logger callback) use.
 * It works on a buffer and keeps no state outside *h, so a fuzz target reaches it without files. */
#ifndef KILN_IO_HISTORY_CSV_H
#define KILN_IO_HISTORY_CSV_H
#include <stdbool.h>
#include <stddef.h>
#include "kiln/status.h"

#define KILN_HISTORY_MAX_COLS 256
#define KILN_HISTORY_MAX_BYTES ((size_t)64 << 20)   /* a history has a row per epoch: far less */

/* A numeric table: values[row * n_cols + col], NAN where a cell is empty, "nan" or not finite. */
typedef struct kiln_history_csv {
    int n_cols, n_rows;       /* n_cols 0: the text has no line that is not blank */
    char **names;             /* the header's names; "column 1", ... when the text has no header */
    double *values;
    size_t *row_start;        /* the byte offset of each data row's line in the text */
    bool has_header;
} kiln_history_csv;

/* Parses text[0..n): comma-separated fields, optionally "quoted" ("" is a quote), LF or CRLF line
 * ends, a UTF-8 byte-order mark, blank lines ignored. A first line whose fields are all numbers is
 * data (no header). No data rows is not an error (n_rows 0). Errors (KILN_INVALID_ARGUMENT, the
 * message naming name, the line and the column): a field that is not a number, a row with another
 * number of fields, an unclosed quote, more than KILN_HISTORY_MAX_COLS fields, a NUL byte, a header
 * name that is empty. On error *h is empty. */
kiln_status kiln_history_csv_parse(const char *name, const char *text, size_t n, kiln_history_csv *h);
/* Reads path (a regular file of at most KILN_HISTORY_MAX_BYTES; a FIFO is refused, not waited on)
 * and parses it. */
kiln_status kiln_history_csv_read(const char *path, kiln_history_csv *h);
void kiln_history_csv_free(kiln_history_csv *h);
/* The column called name (case-insensitive), -1 if absent. */
int kiln_history_csv_column(const kiln_history_csv *h, const char *name);
#endif
