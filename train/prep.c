/* prep.c: an image made into a model's input by the preprocessing the
 * network was trained with (docs/FORMAT.md, "PREPROCESS section"): the
 * shorter side resized by antialiased bilinear interpolation in 8-bit
 * integers as PIL computes it (so torchvision's Resize on a PIL image, which
 * the networks torchvision ships were trained with), the center crop, then
 * x / 255 normalized per channel. The random crop of training
 * (dcz_prep_box) cuts a box out and resizes it alone to the model's size
 * with the same filter, as torchvision's F.resized_crop on a PIL image.
 *
 * The resampling follows PIL's: per axis, weights of a triangle of half
 * width max(scale, 1) around each output position's center in the input,
 * normalized, rounded to 22-bit fixed point; horizontal pass, then
 * vertical, each rounding back to 8 bits. An axis whose size stays is not
 * resampled.
 *
 * Checked by tests/unit/test_png.c against PIL's and torchvision's own
 * output on committed images, boxes included (tests/fixtures/prep, written
 * by scripts/make_prep_fixture.py).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/png.h"

#define PREC 22   /* fixed-point bits of a weight, as PIL's 8-bit resampling */

/* The weights of one axis: for output position o, taps first[o] ..
 * first[o] + count[o] - 1 of the input, weights k[o * ksize ..]. */
typedef struct axis {
    uint32_t in, out, ksize;
    uint32_t *first, *count;
    int32_t *k;
} axis;

static void axis_free(axis *a)
{
    free(a->first);
    free(a->count);
    free(a->k);
}

static double triangle(double x)
{
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

static dcz_status axis_init(axis *a, uint32_t in, uint32_t out)
{
    memset(a, 0, sizeof *a);
    const double scale = (double)in / out, fscale = scale < 1.0 ? 1.0 : scale, support = fscale;
    a->in = in;
    a->out = out;
    a->ksize = (uint32_t)ceil(support) * 2 + 1;
    double *w = malloc(a->ksize * sizeof *w);
    a->first = malloc(out * sizeof *a->first);
    a->count = malloc(out * sizeof *a->count);
    a->k = calloc((size_t)out * a->ksize, sizeof *a->k);
    if (!w || !a->first || !a->count || !a->k) {
        free(w);
        axis_free(a);
        return DCZ_ERR_NOMEM;
    }
    for (uint32_t o = 0; o < out; o++) {
        const double center = (o + 0.5) * scale;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > (int)in) hi = (int)in;
        const int n = hi - lo;
        double sum = 0.0;
        for (int i = 0; i < n; i++) sum += w[i] = triangle((i + lo - center + 0.5) / fscale);
        for (int i = 0; i < n; i++) {
            const double v = sum != 0.0 ? w[i] / sum : w[i];
            a->k[(size_t)o * a->ksize + (size_t)i] = (int32_t)(v < 0 ? -0.5 + v * (1 << PREC) : 0.5 + v * (1 << PREC));
        }
        a->first[o] = (uint32_t)lo;
        a->count[o] = (uint32_t)n;
    }
    free(w);
    return DCZ_OK;
}

static uint8_t clip8(int32_t v)
{
    if (v >= (1 << PREC << 8)) return 255;
    if (v <= 0) return 0;
    return (uint8_t)(v >> PREC);
}

/* dst (rows, a->out, c) from src (rows, a->in, c): along each row */
static void pass_rows(const axis *a, const uint8_t *src, uint32_t rows, uint32_t c, uint8_t *dst)
{
    for (uint32_t y = 0; y < rows; y++)
        for (uint32_t o = 0; o < a->out; o++) {
            const int32_t *k = a->k + (size_t)o * a->ksize;
            for (uint32_t ch = 0; ch < c; ch++) {
                int32_t sum = 1 << (PREC - 1);
                const uint8_t *s = src + ((size_t)y * a->in + a->first[o]) * c + ch;
                for (uint32_t i = 0; i < a->count[o]; i++) sum += s[(size_t)i * c] * k[i];
                dst[((size_t)y * a->out + o) * c + ch] = clip8(sum);
            }
        }
}

/* dst (a->out, cols, c) from src (a->in, cols, c): along each column */
static void pass_cols(const axis *a, const uint8_t *src, uint32_t cols, uint32_t c, uint8_t *dst)
{
    const size_t row = (size_t)cols * c;
    for (uint32_t o = 0; o < a->out; o++) {
        const int32_t *k = a->k + (size_t)o * a->ksize;
        for (size_t x = 0; x < row; x++) {
            int32_t sum = 1 << (PREC - 1);
            const uint8_t *s = src + a->first[o] * row + x;
            for (uint32_t i = 0; i < a->count[o]; i++) sum += s[i * row] * k[i];
            dst[o * row + x] = clip8(sum);
        }
    }
}

/* src (h, w, c) resized to (oh, ow, c) into *dst (malloc'd) */
static dcz_status resample(const uint8_t *src, uint32_t w, uint32_t h, uint32_t c, uint32_t ow, uint32_t oh,
                           uint8_t **dst)
{
    axis ax = { 0 }, ay = { 0 };
    uint8_t *mid = NULL, *out = NULL;
    dcz_status s = DCZ_ERR_NOMEM;
    const int horiz = ow != w, vert = oh != h;
    if ((horiz && (s = axis_init(&ax, w, ow)) != DCZ_OK) || (vert && (s = axis_init(&ay, h, oh)) != DCZ_OK))
        goto done;
    s = DCZ_ERR_NOMEM;
    if (!(out = malloc((size_t)oh * ow * c))) goto done;
    if (horiz && vert) {
        if (!(mid = malloc((size_t)h * ow * c))) goto done;
        pass_rows(&ax, src, h, c, mid);
        pass_cols(&ay, mid, ow, c, out);
    } else if (horiz) {
        pass_rows(&ax, src, h, c, out);
    } else if (vert) {
        pass_cols(&ay, src, w, c, out);
    } else {
        memcpy(out, src, (size_t)h * w * c);
    }
    *dst = out;
    out = NULL;
    s = DCZ_OK;
done:
    axis_free(&ax);
    axis_free(&ay);
    free(mid);
    free(out);
    return s;
}

/* Python's round(d / 2) of a difference d >= 0: halves to even */
static uint32_t half_even(uint32_t d) { return (d >> 1) + ((d & 1) && ((d >> 1) & 1)); }

/* The size of a w x h image resized as p says (*rw, *rh: the shorter side
 * to p->resize, the longer in proportion, truncated) */
static dcz_status resized(const dcz_preprocess *p, uint32_t w, uint32_t h, uint32_t *rw, uint32_t *rh, char *err,
                          size_t errlen)
{
    *rw = w;
    *rh = h;
    if (p->resize && w <= h) {
        *rw = p->resize;
        *rh = (uint32_t)((uint64_t)p->resize * h / w);
    } else if (p->resize) {
        *rh = p->resize;
        *rw = (uint32_t)((uint64_t)p->resize * w / h);
    }
    if (!*rw || !*rh || (uint64_t)*rw * *rh > DCZ_PNG_MAX_VALUES) {
        snprintf(err, errlen, "a %ux%u image resized to %u pixels on its shorter side is %ux%u", w, h, p->resize,
                 *rw, *rh);
        return DCZ_ERR_SHAPE;
    }
    return DCZ_OK;
}

dcz_status dcz_prep_size(const dcz_preprocess *p, uint32_t w, uint32_t h, uint32_t *ow, uint32_t *oh, char *err,
                         size_t errlen)
{
    uint32_t rw, rh;
    dcz_status s = resized(p, w, h, &rw, &rh, err, errlen);
    if (s != DCZ_OK) return s;
    if (p->crop_h && (rw < p->crop_w || rh < p->crop_h)) {
        snprintf(err, errlen, "the image is %ux%u after resizing, smaller than the %ux%u crop the model takes", rw, rh,
                 p->crop_w, p->crop_h);
        return DCZ_ERR_SHAPE;
    }
    *ow = p->crop_h ? p->crop_w : rw;
    *oh = p->crop_h ? p->crop_h : rh;
    return DCZ_OK;
}

/* img as 8-bit samples of c channels, interleaved (h, w, c), into *pix
 * (malloc'd), by the conversions of dcz_image_to_sample (planar floats in
 * [0, 1], back to 0..255) */
static dcz_status pixels8(const dcz_image *img, uint32_t c, uint8_t **pix, char *err, size_t errlen)
{
    const size_t plane = (size_t)img->w * img->h;
    float *f = malloc(plane * c * sizeof *f);
    uint8_t *p = malloc(plane * c);
    dcz_status s = DCZ_ERR_NOMEM;
    if (f && p && (s = dcz_image_to_sample(img, c, img->h, img->w, 0, f, err, errlen)) == DCZ_OK) {
        for (size_t i = 0; i < plane; i++)
            for (uint32_t ch = 0; ch < c; ch++) p[i * c + ch] = (uint8_t)lrintf(f[ch * plane + i] * 255.0f);
        *pix = p;
        p = NULL;
    }
    free(f);
    free(p);
    return s;
}

/* out (c, h, w) = (v / 255 - mean) / std of the h x w pixels of src
 * (rows of stride pixels, c interleaved) from (left, top) */
static void normalize(const dcz_preprocess *p, const uint8_t *src, uint32_t stride, uint32_t top, uint32_t left,
                      uint32_t h, uint32_t w, float *out)
{
    const uint32_t c = p->channels;
    for (uint32_t ch = 0; ch < c; ch++)
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++) {
                const float v = (float)src[(((size_t)(y + top)) * stride + x + left) * c + ch] / 255.0f;
                out[((size_t)ch * h + y) * w + x] = (v - p->mean[ch]) / p->std[ch];
            }
}

dcz_status dcz_prep_apply(const dcz_preprocess *p, const dcz_image *img, uint32_t h, uint32_t w, float *out,
                          char *err, size_t errlen)
{
    if (!p || !img || !out || (p->channels != 1 && p->channels != 3) || !img->w || !img->h) return DCZ_ERR_ARG;
    const uint32_t c = p->channels;
    uint8_t *pix = NULL, *sized = NULL;
    uint32_t rw, rh, ow, oh;
    dcz_status s = dcz_prep_size(p, img->w, img->h, &ow, &oh, err, errlen);
    if (s != DCZ_OK) return s;
    if (oh != h || ow != w) {   /* refused before any pixel is touched */
        snprintf(err, errlen, "the image is %ux%u after its preprocessing, the model takes %ux%u", ow, oh, w, h);
        return DCZ_ERR_SHAPE;
    }
    if ((s = resized(p, img->w, img->h, &rw, &rh, err, errlen)) != DCZ_OK) return s;   /* before the crop */
    if ((s = pixels8(img, c, &pix, err, errlen)) != DCZ_OK) goto done;
    if ((rw != img->w || rh != img->h) && (s = resample(pix, img->w, img->h, c, rw, rh, &sized)) != DCZ_OK) goto done;
    const uint8_t *src = sized ? sized : pix;
    const uint32_t top = p->crop_h ? half_even(rh - p->crop_h) : 0, left = p->crop_h ? half_even(rw - p->crop_w) : 0;
    normalize(p, src, rw, top, left, h, w, out);
    s = DCZ_OK;
done:
    free(pix);
    free(sized);
    return s;
}

dcz_status dcz_prep_box(const dcz_preprocess *p, const dcz_image *img, dcz_box box, uint32_t h, uint32_t w,
                        float *out, char *err, size_t errlen)
{
    if (!p || !img || !out || (p->channels != 1 && p->channels != 3) || !box.w || !box.h || !h || !w ||
        box.x > img->w || box.w > img->w - box.x || box.y > img->h || box.h > img->h - box.y)
        return DCZ_ERR_ARG;
    if ((uint64_t)h * w > DCZ_PNG_MAX_VALUES) {
        snprintf(err, errlen, "a %ux%u output does not fit in memory", w, h);
        return DCZ_ERR_SHAPE;
    }
    const uint32_t c = p->channels;
    uint8_t *pix = NULL, *cut = NULL, *sized = NULL;
    dcz_status s;
    if ((s = pixels8(img, c, &pix, err, errlen)) != DCZ_OK) goto done;
    /* the crop, then a resize of the crop alone (its edges are the image's
     * edges for the filter), as PIL's crop then resize */
    s = DCZ_ERR_NOMEM;
    const size_t row = (size_t)box.w * c;
    if (!(cut = malloc(row * box.h))) goto done;
    for (uint32_t y = 0; y < box.h; y++)
        memcpy(cut + y * row, pix + (((size_t)(box.y + y)) * img->w + box.x) * c, row);
    if ((box.w != w || box.h != h) && (s = resample(cut, box.w, box.h, c, w, h, &sized)) != DCZ_OK) goto done;
    normalize(p, sized ? sized : cut, w, 0, 0, h, w, out);
    s = DCZ_OK;
done:
    free(pix);
    free(cut);
    free(sized);
    return s;
}
