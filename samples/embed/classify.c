/* classify.c: libdcz embedded the way a board would use it. The model is
 * read into a static buffer, dcz_plan tells how much memory it needs,
 * dcz_open_static builds it inside a static arena, and one 28 x 28 8-bit
 * grayscale image is classified; after start-up nothing is allocated (the
 * library allocates nothing at all on this path but inside dcz_plan, which
 * a board may replace by a size planned offline).
 *
 *   classify MODEL.dcz IMAGE
 *
 * IMAGE is either 784 raw bytes (28 rows of 28 pixels) or a binary PGM
 * (P5) of 28 x 28 pixels with a maxval of at most 255. Pixels become
 * floats in [0, 1] (value / maxval), as dcz trains on Fashion-MNIST.
 * Prints the top class and its score; exits 0 on success, 1 on a usage
 * error, 2 on a bad model or image, 3 when a buffer is too small.
 *
 * Built and checked against `dcz run` by tests/cli/embed.sh.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "dcz.h"

#ifndef MODEL_BYTES
#define MODEL_BYTES (4u << 20)   /* the largest .dcz this program reads */
#endif
#ifndef ARENA_BYTES
#define ARENA_BYTES (1u << 20)   /* the model's arena: see dcz_plan's answer */
#endif
#define SIDE 28
#define PIXELS (SIDE * SIDE)

/* 64-byte aligned, as the format's sections are: dense fp32 weights are
 * then used where they lie. The arena may lie anywhere. */
static _Alignas(64) unsigned char model[MODEL_BYTES];
static unsigned char arena[ARENA_BYTES];

/* Reads at most cap bytes of path into buf; *len receives the size.
 * Returns 0, 1 when the file is larger than cap (buf then holds its first
 * cap bytes), or -1 (with a message) when unreadable. */
static int read_file(const char *path, unsigned char *buf, size_t cap, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "classify: cannot open %s\n", path); return -1; }
    *len = fread(buf, 1, cap, f);
    int extra = *len == cap && fgetc(f) != EOF;
    int bad = ferror(f);
    fclose(f);
    if (bad) { fprintf(stderr, "classify: cannot read %s\n", path); return -1; }
    return extra;
}

/* "a JPEG", "a PNG" ... when the first bytes say what the file is, else
 * NULL: an image of another kind than this program reads. */
static const char *image_kind(const unsigned char *p, size_t n)
{
    if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return "a JPEG image";
    if (n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) return "a PNG image";
    if (n >= 6 && (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0)) return "a GIF image";
    if (n >= 2 && p[0] == 'B' && p[1] == 'M') return "a BMP image";
    if (n >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '7' && p[1] != '5') return "a PNM image other than P5";
    return NULL;
}

/* Why the image at path is not one this program reads, and how to make
 * one: it takes a raw 28 x 28 8-bit gray image or a P5 PGM of that size. */
static void not_an_image(const char *path, const char *what)
{
    fprintf(stderr, "classify: %s is %s; this program reads a 28x28 8-bit gray image as %u raw bytes or as a "
            "binary PGM (P5): convert it, e.g. with ImageMagick 'convert %s -resize 28x28! -colorspace Gray "
            "-depth 8 image.pgm'\n", path, what, PIXELS, path);
}

/* Skips whitespace and comments (from # to the end of the line), then
 * reads a decimal number of at most 65535. Returns 0, or -1. */
static int pgm_number(const unsigned char *p, size_t n, size_t *pos, unsigned *v)
{
    while (*pos < n && (isspace(p[*pos]) || p[*pos] == '#')) {
        if (p[*pos] == '#') while (*pos < n && p[*pos] != '\n') (*pos)++;
        else (*pos)++;
    }
    if (*pos >= n || !isdigit(p[*pos])) return -1;
    unsigned long x = 0;
    while (*pos < n && isdigit(p[*pos])) {
        x = x * 10 + (unsigned)(p[*pos] - '0');
        if (x > 65535) return -1;
        (*pos)++;
    }
    *v = (unsigned)x;
    return 0;
}

/* The pixels of img (len bytes) as floats: a raw image is exactly PIXELS
 * bytes; anything else must be a P5 PGM of SIDE x SIDE, maxval 1..255, its
 * header ended by one whitespace byte and followed by exactly the pixels. */
static int image_pixels(const char *path, const unsigned char *img, size_t len, float *x)
{
    const unsigned char *px = img;
    unsigned w = SIDE, h = SIDE, maxval = 255;
    if (len != PIXELS) {
        size_t pos = 2;
        if (len < 3 || img[0] != 'P' || img[1] != '5' || !isspace(img[2])) {
            const char *kind = image_kind(img, len);
            char what[96];
            if (kind) snprintf(what, sizeof what, "%s", kind);
            else snprintf(what, sizeof what, "%zu bytes and no PGM", len);
            not_an_image(path, what);
            return -1;
        }
        if (pgm_number(img, len, &pos, &w) || pgm_number(img, len, &pos, &h) ||
            pgm_number(img, len, &pos, &maxval) || pos >= len || !isspace(img[pos])) {
            fprintf(stderr, "classify: malformed PGM header\n");
            return -1;
        }
        pos++;
        if (w != SIDE || h != SIDE) {
            fprintf(stderr, "classify: the image is %ux%u, the model takes %dx%d\n", w, h, SIDE, SIDE);
            return -1;
        }
        if (maxval == 0 || maxval > 255) {
            fprintf(stderr, "classify: PGM maxval %u (8-bit images only: 1..255)\n", maxval);
            return -1;
        }
        if (len - pos != PIXELS) {
            fprintf(stderr, "classify: PGM holds %zu pixel bytes, expected %u\n", len - pos, PIXELS);
            return -1;
        }
        px = img + pos;
    }
    for (unsigned i = 0; i < PIXELS; i++) {
        if (px[i] > maxval) {
            fprintf(stderr, "classify: pixel %u is %u, above maxval %u\n", i, px[i], maxval);
            return -1;
        }
        x[i] = (float)px[i] / (float)maxval;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: classify MODEL.dcz IMAGE (784 raw bytes or a 28x28 P5 PGM)\n");
        return 1;
    }
    size_t model_len, img_len;
    static unsigned char img[PIXELS + 4096];
    int r = read_file(argv[1], model, sizeof model, &model_len);
    if (r > 0)
        fprintf(stderr, "classify: %s is larger than the %zu bytes this build holds for a model (rebuild with a "
                "larger -DMODEL_BYTES)\n", argv[1], sizeof model);
    if (r) return 2;
    r = read_file(argv[2], img, sizeof img, &img_len);
    if (r > 0) {   /* larger than any image this program reads */
        const char *kind = image_kind(img, img_len);
        char what[96];
        snprintf(what, sizeof what, "%s of more than %zu bytes", kind ? kind : "a file", sizeof img);
        not_an_image(argv[2], what);
    }
    if (r) return 2;

    dcz_options opt;
    dcz_options_init(&opt);   /* max_batch 1: one image at a time */
    size_t need = 0;
    dcz_status s = dcz_plan(model, model_len, &opt, &need);
    if (s != DCZ_OK) {
        fprintf(stderr, "classify: %s: %s\n", argv[1], dcz_status_str(s));
        return 2;
    }
    if (need > sizeof arena) {
        fprintf(stderr, "classify: the model needs an arena of %zu bytes; this build has %zu "
                "(rebuild with -DARENA_BYTES=%zu)\n", need, sizeof arena, need);
        return 3;
    }
    dcz_model *m = NULL;
    s = dcz_open_static(model, model_len, arena, sizeof arena, &opt, &m);
    if (s != DCZ_OK) {
        fprintf(stderr, "classify: %s: %s\n", argv[1], dcz_status_str(s));
        return 2;
    }
    float x[PIXELS], y[1024];
    const size_t classes = dcz_output_size(m);
    if (dcz_input_size(m) != PIXELS || classes == 0 || classes > sizeof y / sizeof y[0]) {
        fprintf(stderr, "classify: the model takes %zu inputs and gives %zu outputs; this "
                "program feeds %u pixels and reads at most %zu classes\n", dcz_input_size(m),
                classes, PIXELS, sizeof y / sizeof y[0]);
        return 2;
    }
    if (image_pixels(argv[2], img, img_len, x)) return 2;
    s = dcz_run(m, x, 1, y);
    if (s != DCZ_OK) {
        fprintf(stderr, "classify: run: %s\n", dcz_status_str(s));
        return 2;
    }
    size_t best = 0;
    for (size_t c = 1; c < classes; c++)
        if (y[c] > y[best]) best = c;
    printf("class %zu (score %.4f; arena %zu of %zu bytes)\n", best, y[best], need, sizeof arena);
    dcz_close(m); /* frees nothing: the model lives in the arena */
    return 0;
}
