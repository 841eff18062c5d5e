/* figure.c: figures with cairo (see figure.h).
 *
 * Checked by tests/unit/test_plot.c.
 */
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/figure.h"

#define MAX_LEGEND 24
#define PI 3.14159265358979323846
#define FONT "DejaVu Sans"

/* the series colors, in order (a colorblind-safe palette) */
static const double palette[][3] = {
    { 0.00, 0.45, 0.70 }, { 0.90, 0.62, 0.00 }, { 0.00, 0.62, 0.45 }, { 0.80, 0.47, 0.65 },
    { 0.34, 0.71, 0.91 }, { 0.84, 0.37, 0.00 }, { 0.94, 0.89, 0.26 }, { 0.00, 0.00, 0.00 },
};
#define NCOLORS (int)(sizeof palette / sizeof palette[0])

typedef struct legend_entry {
    char text[96];
    int color, kind;   /* kind: 0 line, 1 bar, 2 dashed */
} legend_entry;

struct dcz_fig {
    cairo_surface_t *surface;
    cairo_t *cr;
    int width, height;
    double fs;                           /* the text size, pixels */
    double left, right, top, bottom;     /* the plot area, pixels */
    double xmin, xmax, ymin, ymax;       /* its data range */
    int log_y;
    int color;                           /* of the last series */
    int nseries;
    legend_entry legend[MAX_LEGEND];
    int nlegend;
    int legend_lower_left;
};

static double px(const dcz_fig *f, double x)
{
    return f->left + (x - f->xmin) / (f->xmax - f->xmin) * (f->right - f->left);
}

static double py(const dcz_fig *f, double y)
{
    double t;
    if (f->log_y) t = (log10(y > 0 ? y : f->ymin) - log10(f->ymin)) / (log10(f->ymax) - log10(f->ymin));
    else t = (y - f->ymin) / (f->ymax - f->ymin);
    return f->bottom - t * (f->bottom - f->top);
}

/* Text of the given size, centered on x (align 0.5), ending at x (1) or
 * starting there (0), its middle at y; rotated a quarter turn when up. */
static void text(cairo_t *cr, double x, double y, double size, double align, int up, const char *s)
{
    cairo_text_extents_t e;
    cairo_save(cr);
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_text_extents(cr, s, &e);
    cairo_translate(cr, x, y);
    if (up) cairo_rotate(cr, -PI / 2);
    cairo_move_to(cr, -align * e.width - e.x_bearing, -e.height / 2 - e.y_bearing);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_show_text(cr, s);
    cairo_restore(cr);
}

dcz_status dcz_fig_create(int width, int height, const char *title, const char *xlabel,
                          const char *ylabel, dcz_fig **out)
{
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (width < DCZ_FIG_MIN || width > DCZ_FIG_MAX || height < DCZ_FIG_MIN || height > DCZ_FIG_MAX || !title ||
        !xlabel || !ylabel)
        return DCZ_ERR_ARG;
    dcz_fig *f = calloc(1, sizeof *f);
    if (!f) return DCZ_ERR_NOMEM;
    f->surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    f->cr = cairo_create(f->surface);
    if (cairo_status(f->cr) != CAIRO_STATUS_SUCCESS) {
        dcz_fig_free(f);
        return DCZ_ERR_NOMEM;
    }
    f->width = width;
    f->height = height;
    const double fs = f->fs = height / 40.0 < 11 ? 11 : height / 40.0;
    f->left = 5.5 * fs;
    f->right = width - 5.5 * fs;   /* room for a right axis */
    f->top = 3.0 * fs;
    f->bottom = height - 3.8 * fs;
    f->color = -1;
    cairo_set_source_rgb(f->cr, 1, 1, 1);
    cairo_paint(f->cr);
    text(f->cr, width / 2.0, 1.5 * fs, fs * 1.25, 0.5, 0, title);
    text(f->cr, (f->left + f->right) / 2, height - 1.2 * fs, fs, 0.5, 0, xlabel);
    text(f->cr, 1.3 * fs, (f->top + f->bottom) / 2, fs, 0.5, 1, ylabel);
    f->xmin = 0; f->xmax = 1; f->ymin = 0; f->ymax = 1;
    *out = f;
    return DCZ_OK;
}

/* The tick step for a span: 1, 2 or 5 times a power of ten, about n ticks. */
static double tick_step(double span, int n)
{
    const double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void tick_label(char *buf, size_t len, double v, double step)
{
    if (fabs(v) < step * 1e-6) v = 0;
    const int digits = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) >= 1e6 || (v != 0 && fabs(v) < 1e-4)) snprintf(buf, len, "%.3g", v);
    else snprintf(buf, len, "%.*f", digits, v);
}

/* A range to draw: finite, and wide enough against its magnitude for
 * ticks to be distinct doubles (else widened by a tenth of it, or 1). */
static void widen(double *lo, double *hi)
{
    if (!isfinite(*lo) || !isfinite(*hi)) { *lo = 0; *hi = 1; }
    const double m = fmax(fabs(*lo), fabs(*hi));
    if (!(*hi - *lo > m * 1e-9)) {
        const double d = m > 0 ? m * 0.1 : 1;
        *lo -= d;
        *hi += d;
    }
}

/* Tick values over [lo, hi] at multiples of step, at most MAX_TICKS. */
#define MAX_TICKS 64
static int ticks(double lo, double hi, double step, double *v)
{
    const double i0 = ceil(lo / step), i1 = floor(hi / step + 1e-9);
    int n = 0;
    for (double i = i0; i <= i1 && n < MAX_TICKS; i++) v[n++] = i * step;
    return n;
}

/* Ticks and their labels of a vertical axis at pixel x (side -1 left, 1
 * right) over [lo, hi], linear. */
static void y_ticks(dcz_fig *f, double x, int side, double lo, double hi)
{
    cairo_t *cr = f->cr;
    const double fs = f->fs;
    const double step = tick_step(hi - lo, 6);
    double tv[MAX_TICKS];
    const int nt = ticks(lo, hi, step, tv);
    for (int t = 0; t < nt; t++) {
        const double v = tv[t], y = f->bottom - (v - lo) / (hi - lo) * (f->bottom - f->top);
        char b[32];
        tick_label(b, sizeof b, v, step);
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x + side * 5, y);
        cairo_stroke(cr);
        text(cr, x + side * 8, y, fs * 0.85, side < 0 ? 1 : 0, 0, b);
    }
}

static void axes(dcz_fig *f, double xmin, double xmax, double ymin, double ymax, int log_y,
                 const char *const *names, int nnames);

void dcz_fig_axes(dcz_fig *f, double xmin, double xmax, double ymin, double ymax, int log_y)
{
    axes(f, xmin, xmax, ymin, ymax, log_y, NULL, 0);
}

void dcz_fig_axes_named(dcz_fig *f, const char *const *names, int n, double ymin, double ymax, int log_y)
{
    axes(f, -0.5, n - 0.5, ymin, ymax, log_y, names, n);
}

static void axes(dcz_fig *f, double xmin, double xmax, double ymin, double ymax, int log_y,
                 const char *const *names, int nnames)
{
    widen(&xmin, &xmax);
    widen(&ymin, &ymax);
    if (log_y && !(ymin > 0)) log_y = 0;
    f->xmin = xmin; f->xmax = xmax; f->ymin = ymin; f->ymax = ymax;
    f->log_y = log_y;
    cairo_t *cr = f->cr;
    const double fs = f->fs;
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, f->left, f->top, f->right - f->left, f->bottom - f->top);
    cairo_stroke(cr);
    for (int i = 0; i < nnames; i++) {
        cairo_move_to(cr, px(f, i), f->bottom);
        cairo_line_to(cr, px(f, i), f->bottom + 5);
        cairo_stroke(cr);
        text(cr, px(f, i), f->bottom + 8 + fs * 0.45, fs * 0.85, 0.5, 0, names[i]);
    }
    const double step = tick_step(xmax - xmin, 8);
    double tv[MAX_TICKS];
    const int nt = names ? 0 : ticks(xmin, xmax, step, tv);
    for (int t = 0; t < nt; t++) {
        const double v = tv[t];
        char b[32];
        tick_label(b, sizeof b, v, step);
        cairo_move_to(cr, px(f, v), f->bottom);
        cairo_line_to(cr, px(f, v), f->bottom + 5);
        cairo_stroke(cr);
        text(cr, px(f, v), f->bottom + 8 + fs * 0.45, fs * 0.85, 0.5, 0, b);
    }
    if (!log_y) {
        y_ticks(f, f->left, -1, ymin, ymax);
        return;
    }
    const double d1 = fmin(ceil(log10(ymax)), floor(log10(ymin)) + MAX_TICKS);
    for (double d = floor(log10(ymin)); d <= d1; d++) {
        const double v = pow(10, d);
        if (v < ymin * (1 - 1e-9) || v > ymax * (1 + 1e-9)) continue;
        char b[32];
        snprintf(b, sizeof b, "%g", v);
        cairo_move_to(cr, f->left, py(f, v));
        cairo_line_to(cr, f->left - 5, py(f, v));
        cairo_stroke(cr);
        text(cr, f->left - 8, py(f, v), fs * 0.85, 1, 0, b);
    }
}

void dcz_fig_axis_right(dcz_fig *f, const char *ylabel, double ymin, double ymax)
{
    widen(&ymin, &ymax);
    const double fs = f->fs;
    cairo_set_source_rgb(f->cr, 0, 0, 0);
    y_ticks(f, f->right, 1, ymin, ymax);
    text(f->cr, f->width - 1.3 * fs, (f->top + f->bottom) / 2, fs, 0.5, 1, ylabel);
    f->ymin = ymin;
    f->ymax = ymax;
    f->log_y = 0;
}

static void add_legend(dcz_fig *f, const char *label, int kind)
{
    if (!label || f->nlegend == MAX_LEGEND) return;
    legend_entry *e = &f->legend[f->nlegend++];
    snprintf(e->text, sizeof e->text, "%s", label);
    e->color = f->color;
    e->kind = kind;
}

static void set_color(cairo_t *cr, int c, double alpha)
{
    cairo_set_source_rgba(cr, palette[c % NCOLORS][0], palette[c % NCOLORS][1], palette[c % NCOLORS][2], alpha);
}

/* Clips drawing to the plot area. */
static void clip(dcz_fig *f)
{
    cairo_save(f->cr);
    cairo_rectangle(f->cr, f->left, f->top, f->right - f->left, f->bottom - f->top);
    cairo_clip(f->cr);
}

void dcz_fig_line(dcz_fig *f, const double *x, const double *y, int n, const char *label)
{
    cairo_t *cr = f->cr;
    f->color = f->nseries++;
    add_legend(f, label, 0);
    clip(f);
    set_color(cr, f->color, 1);
    cairo_set_line_width(cr, 2);
    int pen = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) { pen = 0; continue; }
        if (pen) cairo_line_to(cr, px(f, x[i]), py(f, y[i]));
        else cairo_move_to(cr, px(f, x[i]), py(f, y[i]));
        pen = 1;
    }
    cairo_stroke(cr);
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) continue;
        cairo_arc(cr, px(f, x[i]), py(f, y[i]), 3.5, 0, 2 * PI);
        cairo_fill(cr);
    }
    cairo_restore(cr);
}

void dcz_fig_bars(dcz_fig *f, const double *edges, const double *h, int nbins, const char *label)
{
    cairo_t *cr = f->cr;
    f->color = f->nseries++;
    add_legend(f, label, 1);
    clip(f);
    const double base = f->log_y ? f->ymin : (f->ymin < 0 && f->ymax > 0 ? 0 : f->ymin);
    for (int i = 0; i < nbins; i++) {
        if (!(h[i] > base) || !isfinite(h[i])) continue;
        const double x0 = px(f, edges[i]), x1 = px(f, edges[i + 1]), y0 = py(f, base), y1 = py(f, h[i]);
        cairo_rectangle(cr, x0, y1, x1 - x0 > 1 ? x1 - x0 : 1, y0 - y1);
    }
    set_color(cr, f->color, 0.55);
    cairo_fill(cr);
    cairo_restore(cr);
}

void dcz_fig_new_color(dcz_fig *f) { f->color = f->nseries++; }

void dcz_fig_vlines(dcz_fig *f, const double *x, int n, const char *label)
{
    cairo_t *cr = f->cr;
    if (f->color < 0) f->color = f->nseries++;
    add_legend(f, label, 2);
    clip(f);
    const double dash[] = { 5, 3 };
    cairo_set_dash(cr, dash, 2, 0);
    cairo_set_line_width(cr, 2);
    set_color(cr, f->color, 1);
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) continue;
        /* on a pixel boundary: two whole columns of the color, not three
         * of it blended with what lies under */
        const double at = round(px(f, x[i]));
        cairo_move_to(cr, at, f->top);
        cairo_line_to(cr, at, f->bottom);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

void dcz_fig_image(dcz_fig *f, const uint8_t *gray, int rows, int cols)
{
    if (rows < 1 || cols < 1) return;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) return;
    cairo_surface_flush(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    const int stride = cairo_image_surface_get_stride(img);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const uint32_t g = gray[(size_t)r * cols + c];
            memcpy(data + (size_t)r * stride + (size_t)c * 4, &(uint32_t){ g << 16 | g << 8 | g }, 4);
        }
    cairo_surface_mark_dirty(img);
    cairo_t *cr = f->cr;
    cairo_save(cr);
    cairo_translate(cr, f->left, f->top);
    cairo_scale(cr, (f->right - f->left) / cols, (f->bottom - f->top) / rows);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_paint(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_rectangle(cr, f->left, f->top, f->right - f->left, f->bottom - f->top);
    cairo_stroke(cr);
}

void dcz_fig_abs_histogram(dcz_fig *f, const double *h, int nbins, double amax, const double *t,
                           const char *const *labels, int n, const char *hist_label)
{
    double top = 1, right = amax > 0 && isfinite(amax) ? amax : 1;
    for (int b = 0; b < nbins; b++)
        if (isfinite(h[b])) top = fmax(top, h[b]);
    for (int i = 0; i < n; i++)
        if (isfinite(t[i])) right = fmax(right, t[i]);
    /* 6% past the last line: a line at the right end is drawn in the frame,
     * clear of its edge and its tick marks */
    dcz_fig_axes(f, 0, right * 1.06, 0.5, pow(10, ceil(log10(top * 2))), 1);
    double *edges = malloc(((size_t)(nbins > 0 ? nbins : 0) + 1) * sizeof *edges);
    if (edges) {
        for (int b = 0; b <= nbins; b++) edges[b] = (amax > 0 ? amax : 1) * b / (nbins > 0 ? nbins : 1);
        dcz_fig_bars(f, edges, h, nbins, hist_label);
        free(edges);
    }
    for (int i = 0; i < n; i++) {
        dcz_fig_new_color(f);
        if (f->color % NCOLORS == 4) dcz_fig_new_color(f);   /* sky blue: a line lost on the blue bars */
        dcz_fig_vlines(f, &t[i], 1, labels ? labels[i] : NULL);
    }
}

int dcz_fig_distinct_digits(const double *v, int n)
{
    for (int p = 3; p < 9; p++) {
        int ok = 1;
        for (int i = 0; i < n && ok; i++)
            for (int j = i + 1; j < n && ok; j++) {
                if (v[i] == v[j]) continue;
                char a[40], b[40];
                snprintf(a, sizeof a, "%.*g", p, v[i]);
                snprintf(b, sizeof b, "%.*g", p, v[j]);
                ok = strcmp(a, b) != 0;
            }
        if (ok) return p;
    }
    return 9;
}

void dcz_fig_plot_area(const dcz_fig *f, double *left, double *top, double *right, double *bottom)
{
    *left = f->left;
    *top = f->top;
    *right = f->right;
    *bottom = f->bottom;
}

void dcz_fig_legend_lower_left(dcz_fig *f) { f->legend_lower_left = 1; }

static void draw_legend(dcz_fig *f)
{
    if (f->nlegend < 2) return;   /* one series: the title says what it is */
    cairo_t *cr = f->cr;
    const double fs = f->fs * 0.85;
    double w = 0;
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, fs);
    for (int i = 0; i < f->nlegend; i++) {
        cairo_text_extents_t e;
        cairo_text_extents(cr, f->legend[i].text, &e);
        if (e.width > w) w = e.width;
    }
    const double row = fs * 1.5, boxh = row * f->nlegend + 0.5 * fs;
    const double x0 = f->legend_lower_left ? f->left + 0.5 * fs : f->right - w - 3.2 * fs;
    const double y0 = f->legend_lower_left ? f->bottom - 0.5 * fs - boxh : f->top + 0.5 * fs;
    cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
    cairo_rectangle(cr, x0, y0, w + 2.8 * fs, boxh);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (int i = 0; i < f->nlegend; i++) {
        const legend_entry *e = &f->legend[i];
        const double y = y0 + 0.25 * fs + row * (i + 0.5);
        set_color(cr, e->color, e->kind == 1 ? 0.55 : 1);
        if (e->kind == 1) {
            cairo_rectangle(cr, x0 + 0.4 * fs, y - 0.35 * fs, 1.4 * fs, 0.7 * fs);
            cairo_fill(cr);
        } else {
            const double dash[] = { 5, 3 };
            cairo_set_dash(cr, dash, e->kind == 2 ? 2 : 0, 0);
            cairo_set_line_width(cr, 2);
            cairo_move_to(cr, x0 + 0.4 * fs, y);
            cairo_line_to(cr, x0 + 1.8 * fs, y);
            cairo_stroke(cr);
            cairo_set_dash(cr, dash, 0, 0);
        }
        text(cr, x0 + 2.2 * fs, y, fs, 0, 0, e->text);
    }
}

typedef struct sink { uint8_t *p; size_t n, cap; int failed; } sink;

static cairo_status_t to_memory(void *closure, const unsigned char *data, unsigned int len)
{
    sink *s = closure;
    if (s->n + len > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 65536;
        while (cap < s->n + len) cap *= 2;
        uint8_t *q = realloc(s->p, cap);
        if (!q) { s->failed = 1; return CAIRO_STATUS_NO_MEMORY; }
        s->p = q;
        s->cap = cap;
    }
    memcpy(s->p + s->n, data, len);
    s->n += len;
    return CAIRO_STATUS_SUCCESS;
}

dcz_status dcz_fig_png(dcz_fig *f, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    draw_legend(f);
    cairo_surface_flush(f->surface);
    sink s = { NULL, 0, 0, 0 };
    const cairo_status_t st = cairo_surface_write_to_png_stream(f->surface, to_memory, &s);
    if (st != CAIRO_STATUS_SUCCESS) {
        free(s.p);
        return s.failed || st == CAIRO_STATUS_NO_MEMORY ? DCZ_ERR_NOMEM : DCZ_ERR_INTERNAL;
    }
    *buf = s.p;
    *len = s.n;
    return DCZ_OK;
}

void dcz_fig_free(dcz_fig *f)
{
    if (!f) return;
    if (f->cr) cairo_destroy(f->cr);
    if (f->surface) cairo_surface_destroy(f->surface);
    free(f);
}
