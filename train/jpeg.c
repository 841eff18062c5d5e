/* jpeg.c: JPEG decoding through libjpeg (Debian's libjpeg-turbo), into the
 * dcz_image that PNG decoding gives (png.h has the rules that follow:
 * scaling, channels, resampling).
 *
 * A baseline or progressive JPEG of one channel decodes to gray (c 1),
 * of three (YCbCr or RGB) to RGB (c 3), 8 bits a value (maxval 255), as
 * libjpeg's default decoder gives them (islow IDCT, fancy upsampling), the
 * decoding of PIL and of torchvision's default image reader. CMYK and
 * other layouts are refused, as are images of more than
 * DCZ_PNG_MAX_VALUES values (before any pixel buffer is allocated), 12-bit
 * JPEGs, and data libjpeg calls corrupt (truncation included: a file that
 * ends before its last scan is refused, not padded with gray).
 *
 * libjpeg reports errors by longjmp, as libpng does: everything decode_job
 * changes lives in a heap-allocated job and the caller's image, never in
 * automatic variables of the function that called setjmp.
 *
 * Tested by tests/unit/test_png.c; fuzzed by tests/fuzz/fuzz_jpeg.c.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "train/internal.h"
#include "train/png.h"

int dcz_jpeg_sniff(const void *buf, size_t len)
{
    const uint8_t *b = buf;
    return b && len >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF;
}

typedef struct jpeg_job {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr jerr;
    jmp_buf jump;
    int created, nomem, warned;
    uint8_t *row;            /* one decoded row */
    char msg[JMSG_LENGTH_MAX + 64];
} jpeg_job;

static void on_error(j_common_ptr c)
{
    jpeg_job *j = (jpeg_job *)(void *)c->client_data;
    char m[JMSG_LENGTH_MAX];
    c->err->format_message(c, m);
    snprintf(j->msg, sizeof j->msg, "%s", m);
    longjmp(j->jump, 1);
}

/* libjpeg's warnings: where it went past missing or corrupt data (the
 * file ends early, a segment or a code is cut, the scans disagree), which
 * it fills with gray, the image is refused as an error; the others (bytes
 * between segments, an unknown JFIF revision or Adobe transform, a bad ICC
 * profile, which dcz does not read) leave the pixels whole, as in the
 * photos cameras write, and are let be. */
static void on_message(j_common_ptr c, int level)
{
    if (level >= 0) return;   /* trace messages */
    const int code = c->err->msg_code;
    if (code != JWRN_JPEG_EOF && code != JWRN_HIT_MARKER && code != JWRN_HUFF_BAD_CODE &&
        code != JWRN_ARITH_BAD_CODE && code != JWRN_BOGUS_PROGRESSION && code != JWRN_NOT_SEQUENTIAL &&
        code != JWRN_MUST_RESYNC)
        return;
    jpeg_job *j = (jpeg_job *)(void *)c->client_data;
    if (j->warned++) return;
    char m[JMSG_LENGTH_MAX];
    c->err->format_message(c, m);
    snprintf(j->msg, sizeof j->msg, "%s", m);
}

static dcz_status decode_job(jpeg_job *j, const void *buf, size_t len, dcz_image *img)
{
    if (setjmp(j->jump)) return j->nomem ? DCZ_ERR_NOMEM : DCZ_ERR_DATA;
    j->d.err = jpeg_std_error(&j->jerr);
    j->jerr.error_exit = on_error;
    j->jerr.emit_message = on_message;
    j->d.client_data = j;
    jpeg_create_decompress(&j->d);
    j->created = 1;
    jpeg_mem_src(&j->d, (const unsigned char *)buf, (unsigned long)len);
    (void)jpeg_read_header(&j->d, TRUE);
    if (j->warned) longjmp(j->jump, 1);
    const J_COLOR_SPACE in = j->d.jpeg_color_space;
    if (j->d.num_components == 1) j->d.out_color_space = JCS_GRAYSCALE;
    else if (j->d.num_components == 3 && (in == JCS_YCbCr || in == JCS_RGB)) j->d.out_color_space = JCS_RGB;
    else {
        snprintf(j->msg, sizeof j->msg, "%d components (%s); dcz reads gray and colour (YCbCr or RGB) JPEGs",
                 j->d.num_components, in == JCS_CMYK || in == JCS_YCCK ? "CMYK" : "an unknown colour space");
        longjmp(j->jump, 1);
    }
    const uint64_t w = j->d.image_width, h = j->d.image_height, ch = (uint64_t)j->d.num_components;
    if (!w || !h || w * h * ch > DCZ_PNG_MAX_VALUES) {
        snprintf(j->msg, sizeof j->msg, "image of %llu x %llu x %llu values is %s", (unsigned long long)w,
                 (unsigned long long)h, (unsigned long long)ch, w && h ? "larger than the limit" : "empty");
        if (w && h) snprintf(j->msg + strlen(j->msg), sizeof j->msg - strlen(j->msg), " (%llu)",
                             (unsigned long long)DCZ_PNG_MAX_VALUES);
        longjmp(j->jump, 1);
    }
    (void)jpeg_start_decompress(&j->d);
    if (j->d.output_components != (int)ch || j->d.output_width != w || j->d.output_height != h) {
        snprintf(j->msg, sizeof j->msg, "unexpected output layout");
        longjmp(j->jump, 1);
    }
    j->row = malloc((size_t)w * ch);
    img->pix = malloc((size_t)(w * h * ch) * sizeof *img->pix);
    if (!j->row || !img->pix) {
        j->nomem = 1;
        longjmp(j->jump, 1);
    }
    while (j->d.output_scanline < h) {
        const JDIMENSION y = j->d.output_scanline;
        JSAMPROW r = j->row;
        if (jpeg_read_scanlines(&j->d, &r, 1) != 1) {
            snprintf(j->msg, sizeof j->msg, "no data for row %u", (unsigned)y);
            longjmp(j->jump, 1);
        }
        for (size_t i = 0; i < (size_t)(w * ch); i++) img->pix[(size_t)y * w * ch + i] = j->row[i];
    }
    (void)jpeg_finish_decompress(&j->d);
    if (j->warned) longjmp(j->jump, 1);
    img->w = (uint32_t)w;
    img->h = (uint32_t)h;
    img->c = (uint32_t)ch;
    img->maxval = 255;
    return DCZ_OK;
}

dcz_status dcz_jpeg_decode(const void *buf, size_t len, dcz_image *img, char *err, size_t errlen)
{
    if (!img) return DCZ_ERR_ARG;
    memset(img, 0, sizeof *img);
    if (!dcz_jpeg_sniff(buf, len)) {
        dcz_train_err(err, errlen, "not a JPEG file (no JPEG start-of-image marker)");
        return DCZ_ERR_DATA;
    }
    if (len > 0xffffffffu) {   /* jpeg_mem_src takes an unsigned long; keep to 32 bits */
        dcz_train_err(err, errlen, "JPEG file of %zu bytes is too large", len);
        return DCZ_ERR_DATA;
    }
    jpeg_job *j = calloc(1, sizeof *j);
    if (!j) return DCZ_ERR_NOMEM;
    const dcz_status st = decode_job(j, buf, len, img);
    if (st == DCZ_ERR_DATA) dcz_train_err(err, errlen, "corrupt or unsupported JPEG: %s", j->msg);
    else if (st == DCZ_ERR_NOMEM) dcz_train_err(err, errlen, "out of memory decoding a JPEG");
    if (j->created) jpeg_destroy_decompress(&j->d);
    free(j->row);
    free(j);
    if (st != DCZ_OK) dcz_image_free(img);
    return st;
}

dcz_status dcz_image_decode(const void *buf, size_t len, dcz_image *img, char *err, size_t errlen)
{
    if (dcz_jpeg_sniff(buf, len)) return dcz_jpeg_decode(buf, len, img, err, errlen);
    if (dcz_png_sniff(buf, len) || !img) return dcz_png_decode(buf, len, img, err, errlen);
    memset(img, 0, sizeof *img);
    dcz_train_err(err, errlen, "neither a PNG nor a JPEG file (no PNG signature, no JPEG start-of-image marker)");
    return DCZ_ERR_DATA;
}
