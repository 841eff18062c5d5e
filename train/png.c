/* png.c: PNG decoding through libpng, and one image into model input
 * (channel conversion, scaling, resampling). See png.h for the rules.
 *
 * libpng reports errors by longjmp. Everything decode_job changes lives in
 * a heap-allocated job (and the caller's dcz_image), never in automatic
 * variables of the function that called setjmp, so nothing is left
 * indeterminate by the jump; dcz_png_decode frees the job afterwards.
 * Input is read from memory through a callback that refuses to read past
 * the end, sizes are capped before any pixel buffer is allocated, and
 * png_read_end checks the file through its last chunk.
 *
 * Tested by tests/unit/test_png.c; fuzzed by tests/fuzz/fuzz_png.c.
 */
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/internal.h"
#include "train/png.h"

int dcz_png_sniff(const void *buf, size_t len)
{
    static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    return buf && len >= 8 && memcmp(buf, sig, 8) == 0;
}

typedef struct png_job {
    png_structp png;
    png_infop info;
    const uint8_t *buf;
    size_t len, pos;
    uint8_t *data;        /* (h, rowbytes) decoded rows */
    png_bytep *rows;      /* (h) pointers into data */
    char msg[160];
} png_job;

static void on_error(png_structp png, png_const_charp msg)
{
    png_job *j = png_get_error_ptr(png);
    snprintf(j->msg, sizeof j->msg, "%s", msg ? msg : "libpng error");
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;   /* ancillary problems: the image is still read */
}

static void on_read(png_structp png, png_bytep out, size_t n)
{
    png_job *j = png_get_io_ptr(png);
    if (n > j->len - j->pos) png_error(png, "truncated file");
    memcpy(out, j->buf + j->pos, n);
    j->pos += n;
}

/* The decoding proper; errors longjmp back here and return DCZ_ERR_DATA
 * with the reason in j->msg (DCZ_ERR_NOMEM for a failed allocation). */
static dcz_status decode_job(png_job *j, dcz_image *img)
{
    if (setjmp(png_jmpbuf(j->png))) return img->c == 0xffffffffu ? DCZ_ERR_NOMEM : DCZ_ERR_DATA;
    png_set_read_fn(j->png, j, on_read);
    png_set_user_limits(j->png, 1u << 24, 1u << 24);
    png_set_chunk_malloc_max(j->png, 1u << 22);
    png_read_info(j->png, j->info);
    const png_uint_32 w = png_get_image_width(j->png, j->info), h = png_get_image_height(j->png, j->info);
    const int type = png_get_color_type(j->png, j->info), depth = png_get_bit_depth(j->png, j->info);
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(j->png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(j->png);
    if (png_get_valid(j->png, j->info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(j->png);
    (void)png_set_interlace_handling(j->png);
    png_read_update_info(j->png, j->info);
    const unsigned ch = png_get_channels(j->png, j->info), bits = png_get_bit_depth(j->png, j->info);
    const size_t rowbytes = png_get_rowbytes(j->png, j->info);
    if (ch < 1 || ch > 4 || (bits != 8 && bits != 16)) png_error(j->png, "unexpected pixel layout");
    if ((uint64_t)w * h * ch > DCZ_PNG_MAX_VALUES) {
        snprintf(j->msg, sizeof j->msg, "image of %lu x %lu x %u values is larger than %llu", (unsigned long)w,
                 (unsigned long)h, ch, (unsigned long long)DCZ_PNG_MAX_VALUES);
        png_longjmp(j->png, 1);
    }
    if (rowbytes != (size_t)w * ch * (bits / 8)) png_error(j->png, "unexpected row size");
    j->data = malloc((size_t)h * rowbytes);
    j->rows = malloc((size_t)h * sizeof *j->rows);
    img->pix = malloc((size_t)w * h * ch * sizeof *img->pix);
    if (!j->data || !j->rows || !img->pix) {
        img->c = 0xffffffffu;
        png_error(j->png, "out of memory");
    }
    for (png_uint_32 y = 0; y < h; y++) j->rows[y] = j->data + (size_t)y * rowbytes;
    png_read_image(j->png, j->rows);
    png_read_end(j->png, NULL);
    const size_t n = (size_t)w * h * ch;
    if (bits == 16)   /* PNG samples are big-endian */
        for (size_t i = 0; i < n; i++) img->pix[i] = (uint16_t)(j->data[2 * i] << 8 | j->data[2 * i + 1]);
    else
        for (size_t i = 0; i < n; i++) img->pix[i] = j->data[i];
    img->w = w;
    img->h = h;
    img->c = ch;
    img->maxval = bits == 16 ? 65535 : 255;
    return DCZ_OK;
}

dcz_status dcz_png_decode(const void *buf, size_t len, dcz_image *img, char *err, size_t errlen)
{
    if (!img) return DCZ_ERR_ARG;
    memset(img, 0, sizeof *img);
    if (!dcz_png_sniff(buf, len)) {
        dcz_train_err(err, errlen, "not a PNG file (no PNG signature)");
        return DCZ_ERR_DATA;
    }
    png_job *j = calloc(1, sizeof *j);
    if (!j) return DCZ_ERR_NOMEM;
    j->buf = buf;
    j->len = len;
    dcz_status st = DCZ_ERR_NOMEM;
    j->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, j, on_error, on_warning);
    if (j->png) j->info = png_create_info_struct(j->png);
    if (j->png && j->info) st = decode_job(j, img);
    if (st == DCZ_ERR_DATA) dcz_train_err(err, errlen, "corrupt or unsupported PNG: %s", j->msg);
    else if (st == DCZ_ERR_NOMEM) dcz_train_err(err, errlen, "out of memory decoding a PNG");
    png_destroy_read_struct(j->png ? &j->png : NULL, j->info ? &j->info : NULL, NULL);
    free(j->data);
    free(j->rows);
    free(j);
    if (st != DCZ_OK) dcz_image_free(img);
    return st;
}

void dcz_image_free(dcz_image *img)
{
    if (!img) return;
    free(img->pix);
    memset(img, 0, sizeof *img);
}

int dcz_image_is_gray(const dcz_image *img)
{
    if (img->c < 3) return 1;
    const size_t n = (size_t)img->w * img->h;
    for (size_t i = 0; i < n; i++) {
        const uint16_t *p = img->pix + i * img->c;
        if (p[0] != p[1] || p[0] != p[2]) return 0;
    }
    return 1;
}

/* ---- resampling ------------------------------------------------------------ */

/* Resamples n_in values (stride si) to n_out (stride so) with a triangle
 * filter on pixel centres, widened by the scale factor when shrinking so
 * that every source pixel contributes (PIL's antialiased bilinear). The
 * source pixel nearest an output centre is at most half a pixel away and
 * the filter reaches at least one, so every weight sum is positive. */
static void resample_line(const float *in, size_t n_in, size_t si, float *out, size_t n_out, size_t so)
{
    const double scale = (double)n_in / (double)n_out;
    const double support = scale > 1 ? scale : 1;
    for (size_t o = 0; o < n_out; o++) {
        const double centre = ((double)o + 0.5) * scale;
        long lo = (long)floor(centre - support), hi = (long)ceil(centre + support);
        if (lo < 0) lo = 0;
        if (hi > (long)n_in) hi = (long)n_in;
        double acc = 0, wsum = 0;
        for (long i = lo; i < hi; i++) {
            double wgt = 1 - fabs(((double)i + 0.5 - centre) / support);
            if (wgt <= 0) continue;
            acc += wgt * in[(size_t)i * si];
            wsum += wgt;
        }
        out[o * so] = (float)(acc / wsum);
    }
}

/* Resamples planes (c, h, w) into out (c, oh, ow). */
static dcz_status resample(const float *in, uint32_t c, uint32_t h, uint32_t w, float *out, uint32_t oh, uint32_t ow)
{
    float *tmp = malloc((size_t)h * ow * sizeof *tmp);   /* (h, ow) */
    if (!tmp) return DCZ_ERR_NOMEM;
    for (uint32_t k = 0; k < c; k++) {
        const float *plane = in + (size_t)k * h * w;
        for (uint32_t y = 0; y < h; y++) resample_line(plane + (size_t)y * w, w, 1, tmp + (size_t)y * ow, ow, 1);
        for (uint32_t x = 0; x < ow; x++)
            resample_line(tmp + x, h, ow, out + (size_t)k * oh * ow + x, oh, ow);
    }
    free(tmp);
    return DCZ_OK;
}

/* ---- conversion -------------------------------------------------------------- */

dcz_status dcz_image_to_sample(const dcz_image *img, uint32_t c, uint32_t h, uint32_t w, int resize, float *out,
                               char *err, size_t errlen)
{
    if (!img || !img->pix || !out || (c != 1 && c != 3) || !h || !w || img->c < 1 || img->c > 4 || !img->maxval) {
        dcz_train_err(err, errlen, "cannot convert an image to %u channels", c);
        return DCZ_ERR_ARG;
    }
    const int same = img->h == h && img->w == w;
    if (!same && !resize) {
        dcz_train_err(err, errlen, "the image is %u x %u (width x height), the model takes %u x %u "
                      "(--resize scales it)", img->w, img->h, w, h);
        return DCZ_ERR_SHAPE;
    }
    if ((uint64_t)c * h * w > DCZ_PNG_MAX_VALUES) {
        dcz_train_err(err, errlen, "a sample of %u x %u x %u is too large", c, h, w);
        return DCZ_ERR_SHAPE;
    }
    const size_t plane = (size_t)img->w * img->h;
    float *planes = same ? out : malloc((size_t)c * plane * sizeof *planes);   /* (c, img h, img w) */
    if (!planes) return DCZ_ERR_NOMEM;
    const uint64_t mx = img->maxval;
    const float fmax = (float)img->maxval;
    const int alpha = img->c == 2 || img->c == 4, colour = img->c >= 3;
    for (size_t i = 0; i < plane; i++) {
        const uint16_t *p = img->pix + i * img->c;
        uint64_t v[3] = { p[0], colour ? p[1] : p[0], colour ? p[2] : p[0] };
        if (alpha) {   /* over black, rounded: an opaque pixel keeps its value */
            const uint64_t a = p[img->c - 1];
            for (int k = 0; k < 3; k++) v[k] = (v[k] * a + mx / 2) / mx;
        }
        if (c == 1) {
            const uint64_t g = colour ? (299 * v[0] + 587 * v[1] + 114 * v[2] + 500) / 1000 : v[0];
            planes[i] = (float)g / fmax;
        } else {
            for (int k = 0; k < 3; k++) planes[(size_t)k * plane + i] = (float)v[k] / fmax;
        }
    }
    if (same) return DCZ_OK;
    dcz_status st = resample(planes, c, img->h, img->w, out, h, w);
    free(planes);
    return st;
}

static uint32_t isqrt(uint64_t d)
{
    uint64_t s = (uint64_t)sqrt((double)d);
    while (s * s > d) s--;
    while ((s + 1) * (s + 1) <= d) s++;
    return (uint32_t)s;
}

dcz_status dcz_image_input_shape(const dcz_image *img, uint32_t rank, const uint32_t *dims, int resize,
                                 uint32_t *c, uint32_t *h, uint32_t *w, char *err, size_t errlen)
{
    if (rank == 3 || rank == 2) {
        *c = rank == 3 ? dims[0] : 1;
        *h = dims[rank - 2];
        *w = dims[rank - 1];
        if (*c != 1 && *c != 3) {
            dcz_train_err(err, errlen, "the model takes %u channels; images give 1 (gray) or 3 (RGB)", *c);
            return DCZ_ERR_UNSUPPORTED;
        }
        return DCZ_OK;
    }
    if (rank == 1) {
        const uint64_t d = dims[0], px = (uint64_t)img->w * img->h;
        if (d == px || d == 3 * px) {   /* the image's own size, gray or colour */
            *c = d == px ? 1 : 3;
            *h = img->h;
            *w = img->w;
            return DCZ_OK;
        }
        if (resize) {
            for (uint32_t cc = 1; cc <= 3; cc += 2) {
                uint32_t s = d % cc ? 0 : isqrt(d / cc);
                if (s && (uint64_t)s * s * cc == d) {
                    *c = cc;
                    *h = *w = s;
                    return DCZ_OK;
                }
            }
            dcz_train_err(err, errlen, "the model takes %llu values, not a square image (gray or RGB) to resize to",
                          (unsigned long long)d);
            return DCZ_ERR_SHAPE;
        }
        dcz_train_err(err, errlen, "the image is %u x %u (%llu pixels), the model takes %llu values "
                      "(--resize scales a square input)", img->w, img->h, (unsigned long long)px,
                      (unsigned long long)d);
        return DCZ_ERR_SHAPE;
    }
    dcz_train_err(err, errlen, "the model's input has rank %u; images fill inputs of rank 1 to 3", rank);
    return DCZ_ERR_UNSUPPORTED;
}
