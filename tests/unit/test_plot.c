/* test_plot.c: figures (plot/figure.c) are PNG files of the size asked for,
 * decoded by dcz's own PNG reader, with what was drawn in them: the series
 * colors in the plot area, an image's gray levels where they belong, white
 * elsewhere; bad sizes and texts are refused.
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
    RUN(test_refused);
    return check_summary();
}
