/* kiln plot's drawing, with cairo: panels side by side, each with a frame, grid, ticks and tick
 * labels, axis labels, a title and a legend; PNG through an image surface, SVG through cairo's
 * SVG surface. Built only when CMake finds cairo (cmake/KilnCairo.cmake). */
#define _GNU_SOURCE            /* memmem */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cairo.h>
#include <cairo-svg.h>
#include "io/atomic_file.h"
#include "kiln/kiln.h"
#include "tools/plot/history.h"

const char *plot_backend(void) { return "cairo"; }

/* ---- layout (pixels for PNG, points for SVG) ---- */
enum { PANEL_W = 560, MARGIN = 20, HEIGHT = 480, PLOT_L = 78, PLOT_R = 22, PLOT_T = 78, PLOT_B = 66 };
static const double palette[10][3] = {   /* matplotlib's tab10: distinct for most colour vision */
    { 0.122, 0.467, 0.706 }, { 1.000, 0.498, 0.055 }, { 0.173, 0.627, 0.173 }, { 0.839, 0.153, 0.157 }, { 0.580, 0.404, 0.741 },
    { 0.549, 0.337, 0.294 }, { 0.890, 0.467, 0.761 }, { 0.498, 0.498, 0.498 }, { 0.737, 0.741, 0.133 }, { 0.090, 0.745, 0.812 },
};

typedef struct axis { double lo, hi, step; int decimals; } axis;

/* 1, 2 or 5 times a power of ten, near x (round) or at least x. */
static double nice(double x, bool round) {
    double e = floor(log10(x)), f = x / pow(10, e), n;
    if (round) n = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else n = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return n * pow(10, e);
}

/* An axis over the data's [lo, hi] widened by 4% on each side, with about `ticks` ticks at
 * multiples of a 1-2-5 step; `integers` keeps the step whole (epochs). */
static axis make_axis(double lo, double hi, int ticks, bool integers) {
    if (!(hi > lo)) { double d = fabs(lo) > 1e-12 ? fabs(lo) * 0.1 : 0.5; lo -= d; hi += d; }
    double step = nice((hi - lo) / (ticks - 1), true), pad = (hi - lo) * 0.04;
    if (integers && step < 1) step = 1;
    axis a = { lo - pad, hi + pad, step, 0 };
    a.decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    return a;
}

typedef struct frame { double l, r, t, b; axis x, y; } frame;
static double px(const frame *f, double x) { return f->l + (x - f->x.lo) / (f->x.hi - f->x.lo) * (f->r - f->l); }
static double py(const frame *f, double y) { return f->b - (y - f->y.lo) / (f->y.hi - f->y.lo) * (f->b - f->t); }

static double xval(const history *h, const plot_spec *s, int row) { return s->x_col >= 0 ? h->values[(size_t)row * h->n_cols + s->x_col] : row + 1; }
static double cellv(const history *h, int row, int col) { return h->values[(size_t)row * h->n_cols + col]; }

typedef enum { LEFT, CENTER, RIGHT } align;
static void text(cairo_t *cr, double x, double y, const char *s, double size, bool bold, align al) {
    cairo_text_extents_t e;
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_text_extents(cr, s, &e);
    double dx = al == LEFT ? 0 : al == CENTER ? -(e.width / 2 + e.x_bearing) : -(e.width + e.x_bearing);
    cairo_move_to(cr, x + dx, y);
    cairo_show_text(cr, s);
}

/* "val_loss" -> "validation loss"; "loss" -> "training loss" when the panel also has val_loss. */
static void legend_label(const history *h, const plot_panel *p, int col, char *buf, size_t n) {
    const char *name = h->names[col];
    if (!strncasecmp(name, "val_", 4)) { snprintf(buf, n, "validation %s", name + 4); return; }
    for (int i = 0; i < p->n_series; i++)
        if (!strncasecmp(h->names[p->series[i]], "val_", 4) && !strcasecmp(h->names[p->series[i]] + 4, name)) {
            snprintf(buf, n, "training %s", name);
            return;
        }
    snprintf(buf, n, "%s", name);
}

static void set_color(cairo_t *cr, int i) { cairo_set_source_rgb(cr, palette[i % 10][0], palette[i % 10][1], palette[i % 10][2]); }
static void set_dash(cairo_t *cr, const history *h, int col) {
    static const double dash[2] = { 7, 4 };
    cairo_set_dash(cr, dash, strncasecmp(h->names[col], "val_", 4) ? 0 : 2, 0);
}

/* The legend goes in the inside corner that covers the fewest data points. */
static void legend(cairo_t *cr, const history *h, const plot_spec *s, const plot_panel *p, const frame *f) {
    char label[128];
    double w = 0, lh = 18, pad = 8;
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 12);
    for (int i = 0; i < p->n_series; i++) {
        cairo_text_extents_t e;
        legend_label(h, p, p->series[i], label, sizeof label);
        cairo_text_extents(cr, label, &e);
        if (e.x_advance > w) w = e.x_advance;
    }
    double bw = w + 3 * pad + 28, bh = p->n_series * lh + pad * 1.5;
    double cx[4] = { f->r - bw - 8, f->l + 8, f->r - bw - 8, f->l + 8 }, cy[4] = { f->t + 8, f->t + 8, f->b - bh - 8, f->b - bh - 8 };
    int best = 0, best_hits = -1;
    for (int k = 0; k < 4; k++) {
        int hits = 0;
        for (int i = 0; i < p->n_series; i++)
            for (int r = 0; r < h->n_rows; r++) {
                double v = cellv(h, r, p->series[i]), x = xval(h, s, r);
                if (isnan(v) || isnan(x)) continue;
                double X = px(f, x), Y = py(f, v);
                hits += X >= cx[k] - 4 && X <= cx[k] + bw + 4 && Y >= cy[k] - 4 && Y <= cy[k] + bh + 4;
            }
        if (best_hits < 0 || hits < best_hits) { best = k; best_hits = hits; }
    }
    double x0 = cx[best], y0 = cy[best];
    cairo_rectangle(cr, x0, y0, bw, bh);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.88);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.7, 0.7, 0.7);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (int i = 0; i < p->n_series; i++) {
        double y = y0 + pad + lh * i + lh / 2;
        set_color(cr, i);
        set_dash(cr, h, p->series[i]);
        cairo_set_line_width(cr, 2.2);
        cairo_move_to(cr, x0 + pad, y);
        cairo_line_to(cr, x0 + pad + 28, y);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        legend_label(h, p, p->series[i], label, sizeof label);
        text(cr, x0 + 2 * pad + 28, y + 4.5, label, 12, false, LEFT);
    }
}

static void format_tick(char *buf, size_t n, double v, int decimals) {
    if (fabs(v) < 1e-12) v = 0;    /* no "-0" */
    if (fabs(v) >= 1e6 || (fabs(v) > 0 && fabs(v) < 1e-4)) snprintf(buf, n, "%.3g", v);
    else snprintf(buf, n, "%.*f", decimals, v);
}

static void draw_panel(cairo_t *cr, const history *h, const plot_spec *s, const plot_panel *p, double x0) {
    frame f = { x0 + PLOT_L, x0 + PANEL_W - PLOT_R, PLOT_T, HEIGHT - PLOT_B };
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    bool whole = true;
    for (int r = 0; r < h->n_rows; r++) {
        double x = xval(h, s, r);
        if (isnan(x)) continue;
        for (int i = 0; i < p->n_series; i++) {
            double v = cellv(h, r, p->series[i]);
            if (isnan(v)) continue;
            xmin = fmin(xmin, x); xmax = fmax(xmax, x); ymin = fmin(ymin, v); ymax = fmax(ymax, v);
            whole &= x == floor(x);
        }
    }
    /* the data's range and 4% more on each side (so no point sits on the frame), ticks inside it */
    f.x = make_axis(xmin, xmax, 8, whole);
    f.y = make_axis(ymin, ymax, 6, false);
    char buf[64];
    /* grid, ticks and tick labels */
    cairo_set_line_width(cr, 1);
    for (double v = ceil(f.y.lo / f.y.step - 1e-9) * f.y.step; v <= f.y.hi + f.y.step * 1e-6; v += f.y.step) {
        double Y = round(py(&f, v)) + 0.5;
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        cairo_move_to(cr, f.l, Y); cairo_line_to(cr, f.r, Y); cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        cairo_move_to(cr, f.l - 5, Y); cairo_line_to(cr, f.l, Y); cairo_stroke(cr);
        format_tick(buf, sizeof buf, v, f.y.decimals);
        text(cr, f.l - 8, Y + 4, buf, 12, false, RIGHT);
    }
    for (double v = ceil(f.x.lo / f.x.step - 1e-9) * f.x.step; v <= f.x.hi + f.x.step * 1e-6; v += f.x.step) {
        double X = round(px(&f, v)) + 0.5;
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        cairo_move_to(cr, X, f.t); cairo_line_to(cr, X, f.b); cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        cairo_move_to(cr, X, f.b); cairo_line_to(cr, X, f.b + 5); cairo_stroke(cr);
        format_tick(buf, sizeof buf, v, f.x.decimals);
        text(cr, X, f.b + 20, buf, 12, false, CENTER);
    }
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_rectangle(cr, f.l + 0.5, f.t + 0.5, f.r - f.l, f.b - f.t);
    cairo_stroke(cr);
    /* the series, clipped to the frame: lines through the finite points, dots when there are few */
    cairo_save(cr);
    cairo_rectangle(cr, f.l, f.t, f.r - f.l + 1, f.b - f.t + 1);
    cairo_clip(cr);
    for (int i = 0; i < p->n_series; i++) {
        int col = p->series[i];
        set_color(cr, i);
        set_dash(cr, h, col);
        cairo_set_line_width(cr, 2.2);
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
        bool pen = false;
        for (int r = 0; r < h->n_rows; r++) {
            double v = cellv(h, r, col), x = xval(h, s, r);
            if (isnan(v) || isnan(x)) { pen = false; continue; }
            if (pen) cairo_line_to(cr, px(&f, x), py(&f, v));
            else cairo_move_to(cr, px(&f, x), py(&f, v));
            pen = true;
        }
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        if (h->n_rows <= 60)
            for (int r = 0; r < h->n_rows; r++) {
                double v = cellv(h, r, col), x = xval(h, s, r);
                if (isnan(v) || isnan(x)) continue;
                cairo_arc(cr, px(&f, x), py(&f, v), 3.2, 0, 2 * M_PI);
                cairo_fill(cr);
            }
    }
    cairo_restore(cr);
    /* labels */
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    text(cr, (f.l + f.r) / 2, f.t - 14, p->title, 15, true, CENTER);
    text(cr, (f.l + f.r) / 2, f.b + 46, s->xlabel, 13, false, CENTER);
    cairo_save(cr);
    cairo_translate(cr, x0 + 22, (f.t + f.b) / 2);
    cairo_rotate(cr, -M_PI / 2);
    text(cr, 0, 0, p->ylabel, 13, false, CENTER);
    cairo_restore(cr);
    legend(cr, h, s, p, &f);
}

static void draw(cairo_t *cr, const history *h, const plot_spec *s, double w) {
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_set_source_rgb(cr, 0.05, 0.05, 0.05);
    text(cr, w / 2, 34, s->title, 19, true, CENTER);
    for (int i = 0; i < s->n_panels; i++) draw_panel(cr, h, s, &s->panels[i], MARGIN + i * PANEL_W);
}

/* cairo's SVG surface writes text as glyph outlines; the title and the labels also go in the
 * standard <title> and <desc> elements so the file says what it shows to search and screen
 * readers (and tests). */
typedef struct membuf { char *p; size_t n, cap; bool oom; } membuf;
static cairo_status_t mem_write(void *closure, const unsigned char *data, unsigned int len) {
    membuf *b = closure;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1 << 16;
        while (cap < b->n + len) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return CAIRO_STATUS_WRITE_ERROR; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    return CAIRO_STATUS_SUCCESS;
}

static void xml_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

/* The SVG with a <title> and <desc> after the <svg> element's start tag, into f. */
static int write_svg(const membuf *b, const history *h, const plot_spec *s, FILE *f, char *err, size_t en) {
    const char *svg = b->n ? memmem(b->p, b->n, "<svg", 4) : NULL;
    const char *gt = svg ? memchr(svg, '>', b->n - (size_t)(svg - b->p)) : NULL;
    if (!gt) { snprintf(err, en, "cairo wrote no SVG element"); return 1; }
    size_t head = (size_t)(gt + 1 - b->p);
    fwrite(b->p, 1, head, f);
    fputs("\n<title>", f);
    xml_escaped(f, s->title);
    fputs("</title>\n<desc>", f);
    for (int i = 0; i < s->n_panels; i++) {
        const plot_panel *p = &s->panels[i];
        fprintf(f, "%sPanel '", i ? "; " : "");
        xml_escaped(f, p->title);
        fputs("': ", f);
        xml_escaped(f, p->ylabel);
        fputs(" against ", f);
        xml_escaped(f, s->xlabel);
        fputs(". Legend: ", f);
        for (int k = 0; k < p->n_series; k++) {
            char label[128];
            legend_label(h, p, p->series[k], label, sizeof label);
            fputs(k ? ", " : "", f);
            xml_escaped(f, label);
        }
    }
    fputs(".</desc>", f);
    fwrite(gt + 1, 1, b->n - head, f);
    return 0;
}

/* cairo's PNG writer into the atomic file's stream: a short write (a full disk) is an error. */
typedef struct file_sink { FILE *f; int err; } file_sink;
static cairo_status_t file_write(void *closure, const unsigned char *data, unsigned int len) {
    file_sink *k = closure;
    errno = 0;
    if (fwrite(data, 1, len, k->f) == len) return CAIRO_STATUS_SUCCESS;
    k->err = errno ? errno : EIO;
    return CAIRO_STATUS_WRITE_ERROR;
}

/* Draws to a surface first (PNG: an image; SVG: a buffer), then writes the file atomically as
 * checkpoints are (temp file, fsync, rename): a full disk or a failed cairo call leaves the old
 * file, if any, as it was and no partial one, and is an error. */
int plot_render(const history *h, const plot_spec *s, const char *path, char *err, size_t en) {
    size_t len = strlen(path);
    bool png = len > 4 && !strcasecmp(path + len - 4, ".png"), svg = len > 4 && !strcasecmp(path + len - 4, ".svg");
    if (!png && !svg) { snprintf(err, en, "-o %s: the file name must end in .png or .svg (the format)", path); return 1; }
    double w = 2 * MARGIN + s->n_panels * PANEL_W;
    membuf buf = { 0 };
    cairo_surface_t *sf = png ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)w, HEIGHT)
                              : cairo_svg_surface_create_for_stream(mem_write, &buf, w, HEIGHT);
    cairo_status_t st = cairo_surface_status(sf);
    if (st == CAIRO_STATUS_SUCCESS) {
        cairo_t *cr = cairo_create(sf);
        draw(cr, h, s, w);
        st = cairo_status(cr);
        cairo_destroy(cr);
    }
    if (st == CAIRO_STATUS_SUCCESS && svg) {
        cairo_surface_finish(sf);          /* the SVG's last bytes reach buf here */
        st = cairo_surface_status(sf);
    }
    int rc = 0;
    if (st != CAIRO_STATUS_SUCCESS) {
        snprintf(err, en, "drawing %s failed: %s", path, buf.oom ? "out of memory" : cairo_status_to_string(st));
        rc = 1;
    }
    kiln_atomic_file af;
    if (!rc && kiln_atomic_open(path, &af) != KILN_OK) { snprintf(err, en, "cannot write %s: %s", path, kiln_last_error()); rc = 1; }
    else if (!rc) {
        if (png) {
            file_sink k = { af.f, 0 };
            st = cairo_surface_write_to_png_stream(sf, file_write, &k);
            if (st != CAIRO_STATUS_SUCCESS) {
                snprintf(err, en, "cannot write %s: %s", path, k.err ? strerror(k.err) : cairo_status_to_string(st));
                rc = 1;
            }
        } else rc = write_svg(&buf, h, s, af.f, err, en);
        if (!rc && ferror(af.f)) { snprintf(err, en, "cannot write %s: %s", path, strerror(errno)); rc = 1; }
        if (rc) kiln_atomic_abort(&af);
        else if (kiln_atomic_commit(&af) != KILN_OK) { snprintf(err, en, "cannot write %s: %s", path, kiln_last_error()); rc = 1; }
    }
    cairo_surface_destroy(sf);
    free(buf.p);
    return rc;
}
