/* Reads a training history CSV for kiln plot (kiln train --history, Keras' CSVLogger, or any
 * numeric table) through the parser resume shares (src/io/history_csv.c). */
#include <stdio.h>
#include "kiln/kiln.h"
#include "tools/plot/history.h"

void history_free(history *h) { kiln_history_csv_free(h); }

int history_column(const history *h, const char *name) { return kiln_history_csv_column(h, name); }

int history_read(const char *path, history *h, char *err, size_t en) {
    if (kiln_history_csv_read(path, h) != KILN_OK) { snprintf(err, en, "%s", kiln_last_error()); return 1; }
    const char *why = !h->n_cols ? "the file is empty" : !h->n_rows ? "no data rows after the header" : NULL;
    if (!why) return 0;
    snprintf(err, en, "%s: %s", path, why);
    kiln_history_csv_free(h);
    return 1;
}
