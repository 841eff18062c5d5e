/* test_plot.c: figures (plot/figure.c) are PNG files of the size asked for,
 * decoded by dcz's own PNG reader, with what was drawn in them: the series
 * colors in the plot area, an image's gray levels where they belong, white
 * elsewhere, the calibration figure's threshold lines inside the frame;
 * bad sizes and texts are refused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot/figure.h"
#include "tests/check.h"
#include "train/png.h"

/* Decodes a figure into img: 0 after a failed check. */
static int decode(dcz_fig *f, int w, int h, dcz_image *img)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char err[128];
    const dcz_status e = dcz_fig_png(f, &buf, &len);
    CHECK(e == DCZ_OK && len > 100, "encode");
    if (e != DCZ_OK) return 0;
    const dcz_status s = dcz_png_decode(buf, len, img, err, sizeof err);
    free(buf);
    CHECK(s == DCZ_OK, "decode: %s", err);
    if (s != DCZ_OK) return 0;
    CHECK(img->w == (uint32_t)w && img->h == (uint32_t)h && img->c >= 3, "%ux%u, %u channels", img->w, img->h, img->c);
    return img->w == (uint32_t)w && img->h == (uint32_t)h && img->c >= 3;
}

/* Pixels of img in [x0, x1) x [y0, y1) whose color is within 40 of (r, g, b). */
static size_t count_color(const dcz_image *img, int x0, int x1, int y0, int y1, int r, int g, int b)
{
    size_t n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            const uint16_t *p = img->pix + ((size_t)y * img->w + (size_t)x) * img->c;
            n += abs(p[0] - r) < 40 && abs(p[1] - g) < 40 && abs(p[2] - b) < 40;
        }
    return n;
}

static void test_lines_and_bars(void)
{
    dcz_fig *f = NULL;
    REQUIRE(dcz_fig_create(640, 480, "Title", "x (units)", "y (units)", &f) == DCZ_OK, "create");
    dcz_fig_axes(f, 0, 10, 0, 100, 0);
    const double x[] = { 0, 5, 10 }, y[] = { 10, 90, 50 };
    dcz_fig_line(f, x, y, 3, "first");
    const double edges[] = { 1, 2, 3, 4 }, h[] = { 20, 60, 40 };
    dcz_fig_bars(f, edges, h, 3, "second");
    const double v[] = { 7.5 };
    dcz_fig_vlines(f, v, 1, "marks");
    dcz_image img;
    if (decode(f, 640, 480, &img)) {
        /* the first series' blue (0, 115, 179) and the second's orange, drawn
         * translucent (0.55 over white), in the plot area */
        CHECK(count_color(&img, 100, 560, 50, 420, 0, 115, 179) > 200, "the line");
        CHECK(count_color(&img, 100, 560, 50, 420, 241, 202, 115) > 500, "the bars");
        CHECK(count_color(&img, 0, 640, 0, 5, 255, 255, 255) == 640 * 5, "a white margin");
        CHECK(count_color(&img, 0, 640, 0, 480, 0, 0, 0) > 300, "text and axes in black");
        dcz_image_free(&img);
    }
    dcz_fig_free(f);
}

static void test_image(void)
{
    dcz_fig *f = NULL;
    REQUIRE(dcz_fig_create(400, 300, "Image", "column", "row", &f) == DCZ_OK, "create");
    uint8_t g[2 * 2] = { 0, 255, 255, 0 };   /* black top left and bottom right */
    dcz_fig_image(f, g, 2, 2);
    dcz_fig_axes(f, 0, 2, 0, 2, 0);
    dcz_image img;
    if (decode(f, 400, 300, &img)) {
        /* the plot area spans about x 60..340, y 36..255 at this size */
        CHECK(count_color(&img, 90, 180, 60, 130, 0, 0, 0) > 5000, "black top left");
        CHECK(count_color(&img, 230, 320, 60, 130, 255, 255, 255) > 5000, "white top right");
        CHECK(count_color(&img, 230, 320, 170, 240, 0, 0, 0) > 5000, "black bottom right");
        dcz_image_free(&img);
    }
    dcz_fig_free(f);
}

static void test_named_log_and_right_axis(void)
{
    dcz_fig *f = NULL;
    REQUIRE(dcz_fig_create(800, 500, "Waterfall", "stage", "size (KB)", &f) == DCZ_OK, "create");
    const char *names[] = { "train", "prune", "encode" };
    dcz_fig_axes_named(f, names, 3, 1, 1000, 1);
    const double e[] = { -0.3, 0.3, 0.7, 1.3, 1.7, 2.3 }, h[] = { 800, 0, 100, 0, 20 };
    dcz_fig_bars(f, e, h, 5, "size");
    dcz_fig_axis_right(f, "accuracy (%)", 90, 95);
    const double x[] = { 0, 1, 2 }, y[] = { 93, 92.5, 92.4 };
    dcz_fig_line(f, x, y, 3, "accuracy");
    dcz_image img;
    if (decode(f, 800, 500, &img)) {
        CHECK(count_color(&img, 0, 800, 0, 500, 128, 190, 223) > 2000, "bars");
        CHECK(count_color(&img, 0, 800, 0, 500, 230, 159, 0) > 100, "the line in the second color");
        dcz_image_free(&img);
    }
    dcz_fig_free(f);
}

/* The column of the plot area holding most of a vertical line of color
 * (r, g, b) (a dashed line covers about 60% of the height; the legend
 * hides the top of the lines at the right), or -1 when no column holds it
 * over a quarter of the height. */
static int line_column(const dcz_image *img, int x0, int x1, int y0, int y1, int r, int g, int b)
{
    int best = -1;
    size_t most = (size_t)(y1 - y0) / 4;
    for (int x = x0; x < x1; x++) {
        const size_t n = count_color(img, x, x + 1, y0, y1, r, g, b);
        if (n > most) { most = n; best = x; }
    }
    return best;
}

/* The calibration figure: a histogram of |x| ending at amax and the
 * thresholds of four methods, one at amax (min-max's) and one past it.
 * Every line is drawn inside the frame, clear of its right edge, in its
 * own color, left to right in the order of the values. */
static void test_thresholds_inside(void)
{
    dcz_fig *f = NULL;
    REQUIRE(dcz_fig_create(640, 480, "Thresholds", "|x|", "values per bin", &f) == DCZ_OK, "create");
    enum { NB = 64 };
    double h[NB];
    for (int b = 0; b < NB; b++) h[b] = 1000.0 / (1 + b);
    const double t[] = { 1.0, 1.25, 0.6, 0.3 };   /* amax is 1 */
    const char *const labels[] = { "minmax", "past the end", "mse", "entropy" };
    dcz_fig_abs_histogram(f, h, NB, 1.0, t, labels, 4, "|x|");
    double left, top, right, bottom;
    dcz_fig_plot_area(f, &left, &top, &right, &bottom);
    dcz_image img;
    if (decode(f, 640, 480, &img)) {
        /* the lines take the colors after the bars': palette 1 to 3, then
         * 5 (4, sky blue, is too close to the bars' blue) */
        static const int rgb[4][3] = { { 230, 158, 0 }, { 0, 158, 115 }, { 204, 120, 166 }, { 214, 94, 0 } };
        int col[4];
        for (int i = 0; i < 4; i++) {
            col[i] = line_column(&img, 0, 640, (int)top, (int)bottom, rgb[i][0], rgb[i][1], rgb[i][2]);
            CHECK(col[i] > left + 2 && col[i] < right - 2, "threshold %g: line at column %d, frame %.0f..%.0f", t[i],
                  col[i], left, right);
        }
        CHECK(col[3] < col[2] && col[2] < col[0] && col[0] < col[1], "lines at columns %d %d %d %d", col[0], col[1],
              col[2], col[3]);
        dcz_image_free(&img);
    }
    dcz_fig_free(f);
}

/* Labels print thresholds with the digits that tell them apart. */
static void test_distinct_digits(void)
{
    const double a[] = { 1.0, 0.99951171875, 0.9968 }, b[] = { 5.7108, 4.4337, 3.211 }, c[] = { 2, 2 };
    CHECK(dcz_fig_distinct_digits(a, 3) == 4, "1, 0.9995, 0.9968: %d digits", dcz_fig_distinct_digits(a, 3));
    CHECK(dcz_fig_distinct_digits(b, 3) == 3, "three apart: %d digits", dcz_fig_distinct_digits(b, 3));
    CHECK(dcz_fig_distinct_digits(c, 2) == 3, "equal values: %d digits", dcz_fig_distinct_digits(c, 2));
    const double d[] = { 1.0, 1.0 + 1e-12 };
    CHECK(dcz_fig_distinct_digits(d, 2) == 9, "closer than 9 digits tell: %d", dcz_fig_distinct_digits(d, 2));
}

static void test_refused(void)
{
    dcz_fig *f = (dcz_fig *)1;
    CHECK(dcz_fig_create(DCZ_FIG_MIN - 1, 300, "t", "x", "y", &f) == DCZ_ERR_ARG && f == NULL, "too narrow");
    CHECK(dcz_fig_create(300, DCZ_FIG_MAX + 1, "t", "x", "y", &f) == DCZ_ERR_ARG, "too tall");
    CHECK(dcz_fig_create(300, 300, NULL, "x", "y", &f) == DCZ_ERR_ARG, "no title");
    /* degenerate ranges are widened, not divided by: one value, a span
     * below the spacing of doubles there, an infinite end of a log axis */
    REQUIRE(dcz_fig_create(300, 300, "t", "x", "y", &f) == DCZ_OK, "create");
    dcz_fig_axes(f, 1e16, 1e16 + 4, 0, 1, 0);
    dcz_fig_axes(f, 0, 1, 1, INFINITY, 1);
    dcz_fig_axes(f, 1, 1, 5, 5, 0);
    const double x[] = { 1 }, y[] = { 5 };
    dcz_fig_line(f, x, y, 1, NULL);
    dcz_image img;
    if (decode(f, 300, 300, &img)) dcz_image_free(&img);
    dcz_fig_free(f);
}

int main(void)
{
    RUN(test_lines_and_bars);
    RUN(test_image);
    RUN(test_named_log_and_right_axis);
    RUN(test_thresholds_inside);
    RUN(test_distinct_digits);
    RUN(test_refused);
    return check_summary();
}
