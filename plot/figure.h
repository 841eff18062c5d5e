/* figure.h: figures drawn with cairo into PNG bytes.
 *
 * A figure has a title, a plot area with a labelled x axis and a labelled
 * y axis (units in the labels), optionally a second y axis on the right
 * for a series of other units, and a legend when more than one series is
 * named. Ticks fall on 1, 2 or 5 times a power of ten. Series: lines with
 * markers, histogram bars, vertical markers and a gray image that fills
 * the plot area. Data ranges are set before the series that use them.
 *
 * Checked by tests/unit/test_plot.c.
 */
#ifndef DCZ_PLOT_FIGURE_H
#define DCZ_PLOT_FIGURE_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"

typedef struct dcz_fig dcz_fig;

/* Figure sizes, pixels. */
#define DCZ_FIG_MIN 200
#define DCZ_FIG_MAX 8192

/* A white figure of width x height pixels (DCZ_FIG_MIN..DCZ_FIG_MAX) with
 * its title and axis labels. DCZ_ERR_ARG for a size out of range or a NULL
 * text, DCZ_ERR_NOMEM. */
dcz_status dcz_fig_create(int width, int height, const char *title, const char *xlabel,
                          const char *ylabel, dcz_fig **out);

/* The data ranges of the plot area, and draws the axes (xmin < xmax and
 * ymin < ymax, finite; else they are widened around the value). log_y: the
 * y axis is logarithmic (ymin > 0). */
void dcz_fig_axes(dcz_fig *f, double xmin, double xmax, double ymin, double ymax, int log_y);

/* As dcz_fig_axes, with the x axis a row of n categories named names[i]
 * at x = i (the range -0.5 .. n - 0.5). */
void dcz_fig_axes_named(dcz_fig *f, const char *const *names, int n, double ymin, double ymax, int log_y);

/* A second y axis on the right for the series drawn after it, with its
 * label and range. */
void dcz_fig_axis_right(dcz_fig *f, const char *ylabel, double ymin, double ymax);

/* A line through n points with a marker at each, in the next color;
 * label NULL leaves it out of the legend. */
void dcz_fig_line(dcz_fig *f, const double *x, const double *y, int n, const char *label);

/* Bars: bin i spans [edges[i], edges[i + 1]) with height h[i], in the next
 * color, translucent so that overlaid histograms show. */
void dcz_fig_bars(dcz_fig *f, const double *edges, const double *h, int nbins, const char *label);

/* Vertical dashed lines at x[0 .. n), in the color of the last series
 * (after dcz_fig_new_color: a color of their own). */
void dcz_fig_vlines(dcz_fig *f, const double *x, int n, const char *label);

/* Moves on to the next series color. */
void dcz_fig_new_color(dcz_fig *f);

/* A rows x cols image of gray levels (0 black .. 255 white) over the whole
 * plot area, row 0 at the top; the axes then count columns and rows. */
void dcz_fig_image(dcz_fig *f, const uint8_t *gray, int rows, int cols);

/* The histogram of |x| of a tensor with the thresholds chosen for it: bar
 * b counts the values in [amax * b / nbins, amax * (b + 1) / nbins), on
 * a logarithmic count axis, labelled hist_label; threshold t[i] is a
 * dashed line of its own color (none the bars' blue) named labels[i]. The axes are set here: x
 * runs from 0 past the largest of amax and the thresholds, so that every
 * line lies inside the frame, a threshold at the largest value (min-max's)
 * included, never on its edge. */
void dcz_fig_abs_histogram(dcz_fig *f, const double *h, int nbins, double amax, const double *t,
                           const char *const *labels, int n, const char *hist_label);

/* The fewest significant digits, from 3 to 9, with which values that
 * differ print differently ("%.*g"): 0.9961 and 1 need 4. */
int dcz_fig_distinct_digits(const double *v, int n);

/* The plot area's corners, pixels (what the frame encloses). */
void dcz_fig_plot_area(const dcz_fig *f, double *left, double *top, double *right, double *bottom);

/* Puts the legend in the lower left corner of the plot area instead of
 * the upper right (for curves that fall to the right). */
void dcz_fig_legend_lower_left(dcz_fig *f);

/* Draws the legend and encodes the figure as PNG bytes (*buf malloc'd).
 * DCZ_ERR_NOMEM, or DCZ_ERR_INTERNAL when cairo fails. */
dcz_status dcz_fig_png(dcz_fig *f, uint8_t **buf, size_t *len);

void dcz_fig_free(dcz_fig *f);

#endif /* DCZ_PLOT_FIGURE_H */
