/* kiln plot HISTORY.csv -o curves.png|curves.svg: learning curves from a training history (the CSV
 * of kiln train --history or Keras' CSVLogger). Reading is tools/plot/history_csv.c, drawing
 * tools/plot/plot_cairo.c (cairo; plot_none.c in a build without it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <math.h>
#include "io/path_guard.h"
#include "tools/commands.h"
#include "tools/plot/history.h"

static void plot_usage(FILE *f) {
    fprintf(f,
        "usage: kiln plot HISTORY.csv -o FILE.png|FILE.svg [--title TEXT] [--columns LIST]\n\n"
        "Draws learning curves from a training history CSV: the file 'kiln train --history FILE'\n"
        "writes (epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds,images_per_sec), Keras'\n"
        "CSVLogger's, or any CSV of numbers. Panels side by side: loss (the columns whose name holds\n"
        "'loss') and accuracy (names holding 'acc'), each training curve solid and its validation\n"
        "curve (val_*) dashed; other metric columns get a third panel. The x axis is the 'epoch' or\n"
        "'step' column, else the row number. lr, seconds, time and images_per_sec are drawn only when\n"
        "--columns names them. Empty cells and nan leave gaps; a CSV without a header line is drawn\n"
        "column by column against the row number.\n\n"
        "options:\n"
        "  -o, --output FILE   the image to write: .png (%s) or .svg (vector)\n"
        "  --title TEXT        the title (default: Training history: HISTORY.csv)\n"
        "  --columns LIST      draw only these columns, comma-separated (e.g. loss,val_loss)\n"
        "  -h, --help          show this help\n\n"
        "example:\n"
        "  kiln train --epochs 10 --history history.csv\n"
        "  kiln plot history.csv -o curves.png\n",
        plot_backend() ? "about 1160x480 pixels" : "needs a kiln built with cairo");
}

/* Columns that describe the run rather than the model: not drawn unless asked for. */
static bool bookkeeping(const char *name) {
    static const char *const names[] = { "epoch", "step", "lr", "learning_rate", "seconds", "time", "images_per_sec", "batch" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) if (!strcasecmp(name, names[i])) return true;
    return false;
}

static bool contains(const char *s, const char *w) {
    for (size_t n = strlen(w); *s; s++) if (!strncasecmp(s, w, n)) return true;
    return false;
}

static bool any_value(const history *h, int col) {
    for (int r = 0; r < h->n_rows; r++) if (!isnan(h->values[(size_t)r * h->n_cols + col])) return true;
    return false;
}

/* 0 = loss, 1 = accuracy, 2 = other metrics */
static int panel_of(const char *name) {
    const char *base = strncasecmp(name, "val_", 4) ? name : name + 4;
    return contains(base, "loss") ? 0 : contains(base, "acc") ? 1 : 2;
}

/* --columns a,b: 0 and the chosen set; 2 (usage) naming an unknown column. */
static int chosen_columns(const history *h, const char *list, bool *chosen) {
    char *buf = strdup(list);
    if (!buf) { fprintf(stderr, "kiln plot: out of memory\n"); return 1; }
    int rc = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        int c = history_column(h, t);
        if (c >= 0) { chosen[c] = true; continue; }
        fprintf(stderr, "kiln plot: --columns: no column '%s'; the file has:", t);
        for (int i = 0; i < h->n_cols; i++) fprintf(stderr, "%s %s", i ? "," : "", h->names[i]);
        fputc('\n', stderr);
        rc = 2;
    }
    free(buf);
    return rc;
}

static int build_spec(const history *h, const char *csv, const char *title, const char *columns, plot_spec *s, char *title_buf, size_t tn) {
    static const char *const titles[3] = { "Loss", "Accuracy", "Other metrics" }, *const ylabels[3] = { "loss", "accuracy", "value" };
    memset(s, 0, sizeof *s);
    if (!title) { snprintf(title_buf, tn, "Training history: %s", csv); title = title_buf; }
    s->title = title;
    s->x_col = history_column(h, "epoch");
    if (s->x_col < 0) s->x_col = history_column(h, "step");
    s->xlabel = s->x_col >= 0 ? h->names[s->x_col] : "row";
    bool *chosen = calloc((size_t)h->n_cols, sizeof *chosen);
    if (!chosen) { fprintf(stderr, "kiln plot: out of memory\n"); return 1; }
    int rc = columns ? chosen_columns(h, columns, chosen) : 0;
    plot_panel by_kind[3] = { { titles[0], ylabels[0] }, { titles[1], ylabels[1] }, { h->has_header ? titles[2] : "Values", ylabels[2] } };
    for (int c = 0; c < h->n_cols && !rc; c++) {
        if (c == s->x_col && !(columns && chosen[c])) continue;
        if (columns ? !chosen[c] : h->has_header && bookkeeping(h->names[c])) continue;
        if (!any_value(h, c)) continue;                 /* e.g. val_* of a run without validation */
        plot_panel *p = &by_kind[h->has_header ? panel_of(h->names[c]) : 2];
        if (p->n_series == PLOT_MAX_SERIES) {
            fprintf(stderr, "kiln plot: more than %d columns for the '%s' panel: choose some with --columns\n", PLOT_MAX_SERIES, p->title);
            rc = 2;
            break;
        }
        p->series[p->n_series++] = c;
    }
    free(chosen);
    for (int k = 0; k < 3 && !rc; k++) if (by_kind[k].n_series) s->panels[s->n_panels++] = by_kind[k];
    if (!rc && !s->n_panels) {
        fprintf(stderr, "kiln plot: %s: nothing to draw (no column with a value%s); name columns with --columns\n", csv,
                columns ? "" : " besides epoch, lr, seconds and images_per_sec");
        rc = 1;
    }
    return rc;
}

int cmd_plot(int argc, char **argv) {
    const char *csv = NULL, *out = NULL, *title = NULL, *columns = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { plot_usage(stdout); return 0; }
        const char **dst = !strcmp(a, "-o") || !strcmp(a, "--output") ? &out : !strcmp(a, "--title") ? &title
                         : !strcmp(a, "--columns") ? &columns : NULL;
        if (dst) {
            if (i + 1 >= argc) { fprintf(stderr, "kiln plot: %s needs a value (see kiln plot --help)\n", a); return 2; }
            *dst = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "kiln plot: unexpected argument '%s' (see kiln plot --help)\n", a);
            return 2;
        } else if (!csv) csv = a;
        else { fprintf(stderr, "kiln plot: one history file at a time: '%s' and '%s' (see kiln plot --help)\n", csv, a); return 2; }
    }
    if (!csv || !out) {
        fprintf(stderr, "kiln plot: %s (usage: kiln plot HISTORY.csv -o FILE.png|FILE.svg; see kiln plot --help)\n",
                !csv ? "give the history CSV to plot" : "give the image to write with -o FILE.png or -o FILE.svg");
        return 2;
    }
    size_t n = strlen(out);
    if (n < 5 || (strcasecmp(out + n - 4, ".png") && strcasecmp(out + n - 4, ".svg"))) {
        fprintf(stderr, "kiln plot: -o %s: the name must end in .png or .svg (it chooses the format)\n", out);
        return 2;
    }
    if (kiln_same_file(out, csv)) {
        fprintf(stderr, "kiln plot: -o %s is the history %s itself: writing it would destroy the input; give -o another path\n", out, csv);
        return 2;
    }
    history h;
    char err[1024], title_buf[512];
    if (history_read(csv, &h, err, sizeof err)) { fprintf(stderr, "kiln plot: %s\n", err); return 1; }
    plot_spec s;
    int rc = build_spec(&h, csv, title, columns, &s, title_buf, sizeof title_buf);
    if (!rc && plot_render(&h, &s, out, err, sizeof err)) { fprintf(stderr, "kiln plot: %s\n", err); rc = 1; }
    if (!rc) {
        printf("Plotted %d row%s of %s to %s:", h.n_rows, h.n_rows == 1 ? "" : "s", csv, out);
        for (int p = 0; p < s.n_panels; p++) {
            printf("%s %s (", p ? ";" : "", s.panels[p].title);
            for (int k = 0; k < s.panels[p].n_series; k++) printf("%s%s", k ? ", " : "", h.names[s.panels[p].series[k]]);
            printf(")");
        }
        printf("\n");
    }
    history_free(&h);
    return rc;
}
