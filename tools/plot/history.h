/* kiln plot: a training history read from CSV (history_csv.c) and drawn (plot_cairo.c, or
 * plot_none.c in a build without cairo). */
#ifndef KILN_TOOLS_PLOT_HISTORY_H
#define KILN_TOOLS_PLOT_HISTORY_H
#include <stdbool.h>
#include <stddef.h>
#include "io/history_csv.h"

/* The table (src/io/history_csv.h: the parser kiln plot shares with resuming a history). */
typedef kiln_history_csv history;

/* Reads a CSV file: a header line (names) and rows of numbers; a first line that is all numbers
 * is taken as data (no header). 0 on success; else 1 and a message in err naming the file, the
 * line and the column (a field that is not a number, a row with the wrong number of fields, no
 * rows, not a regular file). */
int history_read(const char *path, history *h, char *err, size_t err_n);
void history_free(history *h);
int history_column(const history *h, const char *name);      /* -1 if absent (case-insensitive) */

/* What to draw: one to three panels side by side, each with its series (columns of h). */
#define PLOT_MAX_PANELS 3
#define PLOT_MAX_SERIES 12
typedef struct plot_panel {
    const char *title, *ylabel;
    int series[PLOT_MAX_SERIES], n_series;
} plot_panel;
typedef struct plot_spec {
    const char *title;
    const char *xlabel;
    int x_col;                                /* -1: the row number (1, 2, ...) */
    plot_panel panels[PLOT_MAX_PANELS];
    int n_panels;
} plot_spec;

/* Writes the plot to path: PNG or SVG by its extension (.png, .svg). 0, or 1 with a message in
 * err. In a build without cairo: 1 and a message saying how to get it. */
int plot_render(const history *h, const plot_spec *s, const char *path, char *err, size_t err_n);
/* "cairo", or NULL when this kiln was built without cairo */
const char *plot_backend(void);
#endif
