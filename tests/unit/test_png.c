/* test_png.c: tests of PNG and JPEG images and image-folder datasets
 * (train/png.c, train/jpeg.c, train/data_png.c).
 *
 * PNGs of every colour type and bit depth (palette and gray with
 * transparency, interlaced) are written here with libpng and decoded back;
 * samples are scaled exactly as the IDX loader scales Fashion-MNIST (the
 * same floats for 8-bit, 16-bit, RGB-with-equal-channels and opaque-alpha
 * versions of one image); channel conversion, compositing, resampling and
 * the mapping of an image to a model input are checked; every truncation
 * and every byte change of a PNG is refused without a crash; folder
 * datasets load in class order and refuse empty classes, stray files,
 * corrupt images, mixed sizes and unknown classes. JPEGs (gray, colour,
 * progressive) are written here with libjpeg and decode to their pixels
 * within the format's loss; every truncation is refused, byte changes
 * never crash, CMYK and oversized headers are refused; folders take JPEG
 * and PNG files side by side, each decoded as what its bytes are.
 * Folders stream: the samples read through dcz_dataset_samples (in any
 * order, from any place) are exactly those of decoding the files directly,
 * the hash is the CRC32 of the names and bytes read, holdout parts are
 * lists of the same files that outlive the whole set, a file deleted,
 * changed, cut or grown after the load gives a clean error naming it (the
 * first in the order asked), one thread and two give the same bits, and
 * an epoch of training on the streaming set equals one on the same samples
 * in memory. Training augmentation: crop boxes in torchvision's ranges,
 * their resampling against torchvision's F.resized_crop (fixture), flips,
 * samples independent of threads and order, epochs reproducible.
 *
 * Run by `make test` (build/tests/test_png).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>

#include <jpeglib.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/check.h"
#include "train/png.h"
#include "train/train.h"

/* Every sample of d, read through dcz_dataset_samples, malloc'd; NULL on
 * failure. */
static float *all_samples(const dcz_dataset *d)
{
    const size_t per = (size_t)d->c * d->h * d->w;
    float *x = malloc((d->n ? d->n : 1) * per * sizeof *x);
    char err[512] = "";
    if (x && dcz_dataset_samples(d, NULL, 0, d->n, x, err, sizeof err) != DCZ_OK) {
        fprintf(stderr, "    reading the samples: %s\n", err);
        free(x);
        return NULL;
    }
    return x;
}

/* ---- writing PNGs ------------------------------------------------------------ */

typedef struct membuf {
    uint8_t *p;
    size_t n, cap;
} membuf;

static void mem_write(png_structp png, png_bytep data, size_t n)
{
    membuf *m = png_get_io_ptr(png);
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2;
        m->p = realloc(m->p, m->cap);
        if (!m->p) abort();
    }
    memcpy(m->p + m->n, data, n);
    m->n += n;
}

static void mem_flush(png_structp png) { (void)png; }

/* A PNG of w x h pixels of the given colour type and depth; s holds the
 * samples, channels interleaved (palette: indices). Returns the bytes. */
typedef struct png_spec {
    uint32_t w, h;
    int type, depth, interlace;
    const uint16_t *s;
    const png_color *plte;
    int nplte;
    const uint8_t *trns;
    int ntrns;
    png_color_16 trns_value;
    int has_trns_value;
} png_spec;

static int channels_of(int type)
{
    switch (type) {
    case PNG_COLOR_TYPE_GRAY: case PNG_COLOR_TYPE_PALETTE: return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    default: return 4;
    }
}

static uint8_t *png_encode(const png_spec *sp, size_t *len)
{
    membuf m = { NULL, 0, 0 };
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    const int ch = channels_of(sp->type);
    const size_t bps = sp->depth == 16 ? 2 : 1;
    uint8_t *rows = calloc((size_t)sp->h * sp->w * ch * bps + 1, 1);
    png_bytep *rp = calloc(sp->h, sizeof *rp);
    if (setjmp(png_jmpbuf(png))) abort();
    png_set_write_fn(png, &m, mem_write, mem_flush);
    png_set_IHDR(png, info, sp->w, sp->h, sp->depth, sp->type,
                 sp->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (sp->plte) png_set_PLTE(png, info, sp->plte, sp->nplte);
    if (sp->trns || sp->has_trns_value)
        png_set_tRNS(png, info, sp->trns, sp->ntrns, sp->has_trns_value ? &sp->trns_value : NULL);
    png_write_info(png, info);
    if (sp->depth < 8) png_set_packing(png);
    for (uint32_t y = 0; y < sp->h; y++) {
        uint8_t *r = rows + (size_t)y * sp->w * ch * bps;
        rp[y] = r;
        for (size_t i = 0; i < (size_t)sp->w * ch; i++) {
            uint16_t v = sp->s[(size_t)y * sp->w * ch + i];
            if (bps == 2) { r[2 * i] = (uint8_t)(v >> 8); r[2 * i + 1] = (uint8_t)v; }
            else r[i] = (uint8_t)v;
        }
    }
    png_write_image(png, rp);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    free(rp);
    *len = m.n;
    return m.p;
}

/* w x h gray 8-bit image of the given values. */
static uint8_t *gray8(uint32_t w, uint32_t h, const uint16_t *v, size_t *len)
{
    png_spec sp = { w, h, PNG_COLOR_TYPE_GRAY, 8, 0, v, NULL, 0, NULL, 0, { 0 }, 0 };
    return png_encode(&sp, len);
}

/* ---- decoding ------------------------------------------------------------------- */

static void test_decode_every_type(void)
{
    enum { W = 5, H = 3 };
    uint16_t s[W * H * 4];
    const png_color plte[4] = { { 0, 0, 0 }, { 255, 0, 0 }, { 10, 20, 30 }, { 200, 200, 200 } };
    const uint8_t trns[2] = { 0, 128 };
    const struct { int type, depth, interlace, use_trns; } cases[] = {
        { PNG_COLOR_TYPE_GRAY, 1, 0, 0 }, { PNG_COLOR_TYPE_GRAY, 2, 0, 0 }, { PNG_COLOR_TYPE_GRAY, 4, 0, 0 },
        { PNG_COLOR_TYPE_GRAY, 8, 0, 0 }, { PNG_COLOR_TYPE_GRAY, 16, 0, 0 }, { PNG_COLOR_TYPE_GRAY, 8, 1, 0 },
        { PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0, 0 }, { PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0, 0 },
        { PNG_COLOR_TYPE_RGB, 8, 0, 0 }, { PNG_COLOR_TYPE_RGB, 16, 1, 0 },
        { PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, 0 }, { PNG_COLOR_TYPE_RGB_ALPHA, 16, 0, 0 },
        { PNG_COLOR_TYPE_PALETTE, 1, 0, 0 }, { PNG_COLOR_TYPE_PALETTE, 2, 0, 0 }, { PNG_COLOR_TYPE_PALETTE, 4, 0, 0 },
        { PNG_COLOR_TYPE_PALETTE, 8, 0, 0 }, { PNG_COLOR_TYPE_PALETTE, 8, 0, 1 }, { PNG_COLOR_TYPE_GRAY, 8, 0, 1 },
        { PNG_COLOR_TYPE_RGB, 8, 0, 1 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const int type = cases[k].type, depth = cases[k].depth, ch = channels_of(type);
        const uint32_t mx = type == PNG_COLOR_TYPE_PALETTE ? (1u << (depth < 2 ? 1 : 2)) - 1 : (1u << depth) - 1;
        for (int i = 0; i < W * H * ch; i++) s[i] = (uint16_t)((i * 37u + 11u) % (mx + 1));
        png_spec sp = { W, H, type, depth, cases[k].interlace, s, NULL, 0, NULL, 0, { 0 }, 0 };
        if (type == PNG_COLOR_TYPE_PALETTE) {
            sp.plte = plte;
            sp.nplte = depth == 1 ? 2 : 4;
            if (cases[k].use_trns) { sp.trns = trns; sp.ntrns = 2; }
        } else if (cases[k].use_trns) {   /* one colour is transparent */
            sp.has_trns_value = 1;
            sp.trns_value.gray = s[0];
            sp.trns_value.red = s[0];
            sp.trns_value.green = s[1];
            sp.trns_value.blue = s[2];
        }
        size_t len;
        uint8_t *buf = png_encode(&sp, &len);
        dcz_image img;
        char err[256];
        dcz_status st = dcz_png_decode(buf, len, &img, err, sizeof err);
        CHECK(st == DCZ_OK, "case %zu: %s", k, err);
        if (st != DCZ_OK) { free(buf); continue; }
        const int want_c = type == PNG_COLOR_TYPE_PALETTE ? (cases[k].use_trns ? 4 : 3)
                                                          : ch + (cases[k].use_trns ? 1 : 0);
        CHECK(img.w == W && img.h == H && (int)img.c == want_c, "case %zu: %ux%u c %u", k, img.w, img.h, img.c);
        CHECK(img.maxval == (depth == 16 ? 65535u : 255u), "case %zu: maxval %u", k, img.maxval);
        int bad = 0;
        for (int p = 0; p < W * H && (int)img.c == want_c; p++) {
            const uint16_t *o = img.pix + (size_t)p * img.c;
            if (type == PNG_COLOR_TYPE_PALETTE) {
                const png_color c = plte[s[p]];
                bad += o[0] != c.red || o[1] != c.green || o[2] != c.blue;
                if (cases[k].use_trns) bad += o[3] != (s[p] < 2 ? trns[s[p]] : 255);
            } else if (depth < 8) {   /* widened to 8 bits: v * 255 / (2^depth - 1) */
                bad += o[0] != s[p] * 255 / mx;
            } else {
                for (int c = 0; c < ch; c++) bad += o[c] != s[p * ch + c];
                if (cases[k].use_trns) {
                    int match = type == PNG_COLOR_TYPE_GRAY ? s[p] == s[0]
                                                            : s[p * 3] == s[0] && s[p * 3 + 1] == s[1] && s[p * 3 + 2] == s[2];
                    bad += o[ch] != (match ? 0 : 255);
                }
            }
        }
        CHECK(bad == 0, "case %zu (type %d depth %d): %d pixels differ", k, type, depth, bad);
        dcz_image_free(&img);
        free(buf);
    }
}

/* ---- samples ---------------------------------------------------------------------- */

/* Every 8-bit value gives the IDX loader's float, whatever the encoding. */
static void test_scaling_matches_idx(void)
{
    enum { W = 16, H = 16 };
    uint16_t g[W * H], g16[W * H], rgb[W * H * 3], ga[W * H * 2], rgba16[W * H * 4];
    for (int i = 0; i < W * H; i++) {
        g[i] = (uint16_t)i;
        g16[i] = (uint16_t)(i * 257);
        for (int c = 0; c < 3; c++) rgb[i * 3 + c] = (uint16_t)i;
        ga[i * 2] = (uint16_t)i;
        ga[i * 2 + 1] = 255;
        for (int c = 0; c < 3; c++) rgba16[i * 4 + c] = (uint16_t)(i * 257);
        rgba16[i * 4 + 3] = 65535;
    }
    const png_spec specs[] = {
        { W, H, PNG_COLOR_TYPE_GRAY, 8, 0, g, NULL, 0, NULL, 0, { 0 }, 0 },
        { W, H, PNG_COLOR_TYPE_GRAY, 16, 0, g16, NULL, 0, NULL, 0, { 0 }, 0 },
        { W, H, PNG_COLOR_TYPE_RGB, 8, 0, rgb, NULL, 0, NULL, 0, { 0 }, 0 },
        { W, H, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 1, ga, NULL, 0, NULL, 0, { 0 }, 0 },
        { W, H, PNG_COLOR_TYPE_RGB_ALPHA, 16, 0, rgba16, NULL, 0, NULL, 0, { 0 }, 0 },
    };
    for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
        size_t len;
        uint8_t *buf = png_encode(&specs[k], &len);
        dcz_image img;
        char err[256];
        float x[W * H];
        dcz_status st = dcz_png_decode(buf, len, &img, err, sizeof err);
        if (st == DCZ_OK) st = dcz_image_to_sample(&img, 1, H, W, 0, x, err, sizeof err);
        CHECK(st == DCZ_OK, "spec %zu: %s", k, err);
        int bad = 0;
        for (int i = 0; st == DCZ_OK && i < W * H; i++) bad += x[i] != (float)i / 255.0f;   /* data.c's formula */
        CHECK(bad == 0, "spec %zu: %d values differ from v / 255", k, bad);
        CHECK(dcz_image_is_gray(&img), "spec %zu is gray", k);
        dcz_image_free(&img);
        free(buf);
    }
}

static void test_channels_and_alpha(void)
{
    /* one RGBA pixel per case: red opaque, gray half transparent, white transparent */
    const uint16_t px[3][4] = { { 255, 0, 0, 255 }, { 200, 200, 200, 128 }, { 255, 255, 255, 0 } };
    dcz_image img = { 1, 1, 4, 255, NULL };
    float one, three[3];
    char err[128];
    for (int k = 0; k < 3; k++) {
        uint16_t p[4];
        memcpy(p, px[k], sizeof p);
        img.pix = p;
        CHECK(dcz_image_to_sample(&img, 1, 1, 1, 0, &one, err, sizeof err) == DCZ_OK, "gray %d", k);
        CHECK(dcz_image_to_sample(&img, 3, 1, 1, 0, three, err, sizeof err) == DCZ_OK, "rgb %d", k);
        uint64_t v[3];
        for (int c = 0; c < 3; c++) v[c] = ((uint64_t)p[c] * p[3] + 127) / 255;
        const uint64_t luma = (299 * v[0] + 587 * v[1] + 114 * v[2] + 500) / 1000;
        CHECK(one == (float)luma / 255.0f, "case %d: gray %g, want %g", k, (double)one, (double)luma / 255);
        for (int c = 0; c < 3; c++) CHECK(three[c] == (float)v[c] / 255.0f, "case %d channel %d", k, c);
    }
    CHECK(dcz_image_to_sample(&img, 2, 1, 1, 0, three, err, sizeof err) == DCZ_ERR_ARG, "2 channels refused");
    uint16_t gray = 77;
    dcz_image g = { 1, 1, 1, 255, &gray };
    CHECK(dcz_image_to_sample(&g, 3, 1, 1, 0, three, err, sizeof err) == DCZ_OK &&
          three[0] == 77.0f / 255 && three[1] == three[0] && three[2] == three[0], "gray repeated into RGB");
    CHECK(dcz_image_to_sample(&g, 1, 2, 2, 0, three, err, sizeof err) == DCZ_ERR_SHAPE && strstr(err, "--resize"),
          "a size mismatch without resize: %s", err);
}

static void test_resize(void)
{
    enum { W = 7, H = 5 };
    uint16_t p[W * H];
    char err[128];
    for (int i = 0; i < W * H; i++) p[i] = 100;
    dcz_image img = { W, H, 1, 255, p };
    float out[40 * 40];
    const uint32_t sizes[][2] = { { 1, 1 }, { 2, 3 }, { 5, 7 }, { 28, 28 }, { 40, 11 } };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        const uint32_t oh = sizes[k][0], ow = sizes[k][1];
        CHECK(dcz_image_to_sample(&img, 1, oh, ow, 1, out, err, sizeof err) == DCZ_OK, "%ux%u: %s", ow, oh, err);
        int bad = 0;
        for (uint32_t i = 0; i < oh * ow; i++) bad += fabsf(out[i] - 100.0f / 255) > 1e-6f;
        CHECK(bad == 0, "a constant image stays constant at %ux%u", ow, oh);
    }
    /* a ramp: halving keeps it ordered and within range; the mean is kept */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) p[y * W + x] = (uint16_t)(x * 40);
    CHECK(dcz_image_to_sample(&img, 1, 5, 3, 1, out, err, sizeof err) == DCZ_OK, "ramp");
    CHECK(out[0] < out[1] && out[1] < out[2] && out[0] >= 0 && out[2] <= 240.0f / 255, "ramp ordered: %g %g %g",
          (double)out[0], (double)out[1], (double)out[2]);
    CHECK(fabsf(out[1] - 120.0f / 255) < 1e-6f, "the middle of a symmetric ramp: %g", (double)out[1] * 255);
}

static void test_input_shape(void)
{
    uint16_t p[28 * 28] = { 0 };
    dcz_image img = { 28, 28, 1, 255, p }, big = { 32, 32, 1, 255, p };
    uint32_t c, h, w;
    char err[256];
    const uint32_t chw1[3] = { 1, 28, 28 }, chw3[3] = { 3, 28, 28 }, chw2[3] = { 2, 28, 28 };
    const uint32_t flat[1] = { 784 }, flat3[1] = { 2352 }, odd[1] = { 1000 }, hw[2] = { 28, 28 };
    CHECK(dcz_image_input_shape(&img, 3, chw1, 0, &c, &h, &w, err, sizeof err) == DCZ_OK && c == 1 && h == 28, "chw1");
    CHECK(dcz_image_input_shape(&img, 3, chw3, 0, &c, &h, &w, err, sizeof err) == DCZ_OK && c == 3, "chw3");
    CHECK(dcz_image_input_shape(&img, 3, chw2, 0, &c, &h, &w, err, sizeof err) == DCZ_ERR_UNSUPPORTED, "2 channels");
    CHECK(dcz_image_input_shape(&img, 2, hw, 0, &c, &h, &w, err, sizeof err) == DCZ_OK && c == 1 && w == 28, "hw");
    CHECK(dcz_image_input_shape(&img, 1, flat, 0, &c, &h, &w, err, sizeof err) == DCZ_OK && c == 1 && h == 28, "784");
    CHECK(dcz_image_input_shape(&img, 1, flat3, 0, &c, &h, &w, err, sizeof err) == DCZ_OK && c == 3, "2352");
    CHECK(dcz_image_input_shape(&big, 1, flat, 0, &c, &h, &w, err, sizeof err) == DCZ_ERR_SHAPE &&
          strstr(err, "32 x 32"), "32x32 into 784: %s", err);
    CHECK(dcz_image_input_shape(&big, 1, flat, 1, &c, &h, &w, err, sizeof err) == DCZ_OK && c == 1 && h == 28 &&
          w == 28, "resized to a square");
    CHECK(dcz_image_input_shape(&big, 1, flat3, 1, &c, &h, &w, err, sizeof err) == DCZ_OK && c == 3 && h == 28,
          "resized colour square");
    CHECK(dcz_image_input_shape(&big, 1, odd, 1, &c, &h, &w, err, sizeof err) == DCZ_ERR_SHAPE, "1000 is no square");
    const uint32_t r4[4] = { 1, 1, 28, 28 };
    CHECK(dcz_image_input_shape(&img, 4, r4, 0, &c, &h, &w, err, sizeof err) == DCZ_ERR_UNSUPPORTED, "rank 4");
}

/* ---- damaged files ----------------------------------------------------------------- */

static void test_corrupt_files(void)
{
    uint16_t v[6 * 4];
    for (int i = 0; i < 24; i++) v[i] = (uint16_t)(i * 10);
    size_t len;
    uint8_t *good = gray8(6, 4, v, &len);
    dcz_image img;
    char err[256];
    CHECK(dcz_png_decode(good, len, &img, err, sizeof err) == DCZ_OK, "the original decodes");
    dcz_image_free(&img);
    size_t accepted = 0;
    for (size_t n = 0; n < len; n++) {
        uint8_t *t = malloc(n ? n : 1);
        memcpy(t, good, n);
        err[0] = 0;
        dcz_status st = dcz_png_decode(t, n, &img, err, sizeof err);
        accepted += st == DCZ_OK;
        CHECK(st == DCZ_OK || (st == DCZ_ERR_DATA && err[0] && !img.pix), "truncated to %zu: %d", n, (int)st);
        dcz_image_free(&img);
        free(t);
    }
    CHECK(accepted == 0, "%zu truncations accepted", accepted);
    for (size_t i = 0; i < len; i++) {
        uint8_t *t = malloc(len);
        memcpy(t, good, len);
        t[i] ^= 0x10;
        dcz_status st = dcz_png_decode(t, len, &img, err, sizeof err);
        accepted += st == DCZ_OK;
        dcz_image_free(&img);
        free(t);
    }
    CHECK(accepted == 0, "%zu byte changes accepted (every byte is covered by a CRC or the signature)", accepted);
    CHECK(dcz_png_decode("GIF89a....", 10, &img, err, sizeof err) == DCZ_ERR_DATA && strstr(err, "not a PNG"),
          "not a PNG: %s", err);
    /* a valid header claiming 20000 x 20000 pixels: refused before any pixel buffer */
    uint8_t *huge = malloc(len);
    memcpy(huge, good, len);   /* the IHDR changed, its IDAT and IEND kept */
    huge[16] = 0; huge[17] = 0; huge[18] = 0x4e; huge[19] = 0x20;   /* width 20000 */
    huge[20] = 0; huge[21] = 0; huge[22] = 0x4e; huge[23] = 0x20;   /* height 20000 */
    uint32_t crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), huge + 12, 17);
    huge[29] = (uint8_t)(crc >> 24); huge[30] = (uint8_t)(crc >> 16); huge[31] = (uint8_t)(crc >> 8); huge[32] = (uint8_t)crc;
    CHECK(dcz_png_decode(huge, len, &img, err, sizeof err) == DCZ_ERR_DATA && strstr(err, "larger"), "huge: %s", err);
    free(huge);
    free(good);
}

/* ---- JPEG ---------------------------------------------------------------------------- */

/* A w x h JPEG of c components (1 gray, 3 RGB, 4 CMYK) of 8-bit pixels
 * (h, w, c), quality 100, full-resolution chroma; progressive when asked. */
static uint8_t *jpeg_encode(uint32_t w, uint32_t h, int c, const uint8_t *pix, int progressive, size_t *len)
{
    struct jpeg_compress_struct j;
    struct jpeg_error_mgr e;
    j.err = jpeg_std_error(&e);
    jpeg_create_compress(&j);
    unsigned char *out = NULL;
    unsigned long n = 0;
    jpeg_mem_dest(&j, &out, &n);
    j.image_width = w;
    j.image_height = h;
    j.input_components = c;
    j.in_color_space = c == 1 ? JCS_GRAYSCALE : c == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(&j);
    jpeg_set_quality(&j, 100, TRUE);
    for (int k = 0; k < j.num_components; k++) j.comp_info[k].h_samp_factor = j.comp_info[k].v_samp_factor = 1;
    if (progressive) jpeg_simple_progression(&j);
    jpeg_start_compress(&j, TRUE);
    while (j.next_scanline < h) {
        JSAMPROW row = (JSAMPROW)(pix + (size_t)j.next_scanline * w * c);
        jpeg_write_scanlines(&j, &row, 1);
    }
    jpeg_finish_compress(&j);
    jpeg_destroy_compress(&j);
    uint8_t *b = malloc(n);
    memcpy(b, out, n);
    free(out);
    *len = n;
    return b;
}

/* A smooth test picture: JPEG keeps it within a few levels. */
static void picture(uint32_t w, uint32_t h, int c, uint8_t *pix)
{
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            for (int k = 0; k < c; k++)
                pix[((size_t)y * w + x) * c + k] = (uint8_t)(40 + 6 * x + 5 * y + 30 * k);
}

static void test_jpeg_decode(void)
{
    const uint32_t w = 13, h = 7;
    for (int c = 1; c <= 3; c += 2)
        for (int prog = 0; prog < 2; prog++) {
            uint8_t pix[13 * 7 * 3];
            picture(w, h, c, pix);
            size_t len;
            uint8_t *b = jpeg_encode(w, h, c, pix, prog, &len);
            CHECK(dcz_jpeg_sniff(b, len) && !dcz_png_sniff(b, len), "sniffed as a JPEG");
            dcz_image img, img2;
            char err[256] = "";
            REQUIRE(dcz_jpeg_decode(b, len, &img, err, sizeof err) == DCZ_OK, "c %d progressive %d: %s", c, prog, err);
            CHECK(img.w == w && img.h == h && img.c == (uint32_t)c && img.maxval == 255, "c %d: %ux%ux%u max %u", c,
                  img.w, img.h, img.c, img.maxval);
            int worst = 0;
            for (size_t i = 0; i < (size_t)w * h * c; i++) {
                const int d = abs((int)img.pix[i] - (int)pix[i]);
                if (d > worst) worst = d;
            }
            CHECK(worst <= 3, "c %d progressive %d: a pixel %d levels off", c, prog, worst);
            /* dcz_image_decode takes it by its bytes, to the same pixels */
            REQUIRE(dcz_image_decode(b, len, &img2, err, sizeof err) == DCZ_OK, "image_decode: %s", err);
            CHECK(img2.c == img.c && memcmp(img2.pix, img.pix, (size_t)w * h * c * sizeof *img.pix) == 0,
                  "the same pixels");
            /* into a sample as a PNG's: values / 255 */
            float x[13 * 7 * 3];
            CHECK(dcz_image_to_sample(&img, (uint32_t)c, h, w, 0, x, err, sizeof err) == DCZ_OK &&
                  x[0] == (float)img.pix[0] / 255.0f, "sample");
            dcz_image_free(&img);
            dcz_image_free(&img2);
            free(b);
        }
}

static void test_jpeg_corrupt(void)
{
    uint8_t pix[16 * 9 * 4];
    picture(16, 9, 3, pix);
    size_t len;
    uint8_t *good = jpeg_encode(16, 9, 3, pix, 0, &len);
    dcz_image img;
    char err[256];
    size_t accepted = 0;
    for (size_t n = 0; n < len; n++) {   /* every truncation, to nothing */
        err[0] = 0;
        const dcz_status st = dcz_jpeg_decode(good, n, &img, err, sizeof err);
        accepted += st == DCZ_OK;
        CHECK(st == DCZ_OK || (st == DCZ_ERR_DATA && err[0] && !img.pix), "truncated to %zu: %d", n, (int)st);
        dcz_image_free(&img);
    }
    CHECK(accepted == 0, "%zu truncations accepted", accepted);
    for (size_t i = 0; i < len; i++)   /* each byte changed: a status, never a crash (JPEG has no checksum) */
        for (int bit = 0; bit < 8; bit += 3) {
            uint8_t *t = malloc(len);
            memcpy(t, good, len);
            t[i] ^= (uint8_t)(1u << bit);
            err[0] = 0;
            const dcz_status st = dcz_jpeg_decode(t, len, &img, err, sizeof err);
            CHECK(st == DCZ_OK ? img.pix && img.w && img.h : st == DCZ_ERR_DATA && err[0] && !img.pix,
                  "byte %zu bit %d: %d", i, bit, (int)st);
            dcz_image_free(&img);
            free(t);
        }
    CHECK(dcz_jpeg_decode("GIF89a....", 10, &img, err, sizeof err) == DCZ_ERR_DATA && strstr(err, "not a JPEG"),
          "not a JPEG: %s", err);
    CHECK(dcz_image_decode("GIF89a....", 10, &img, err, sizeof err) == DCZ_ERR_DATA &&
          strstr(err, "neither a PNG nor a JPEG"), "neither: %s", err);
    /* CMYK: refused, naming it */
    uint8_t *cmyk = jpeg_encode(16, 9, 4, pix, 0, &len);
    CHECK(dcz_jpeg_decode(cmyk, len, &img, err, sizeof err) == DCZ_ERR_DATA && strstr(err, "CMYK"), "cmyk: %s", err);
    free(cmyk);
    /* a frame header claiming 20000 x 20000 pixels: refused before any pixel buffer */
    uint8_t *huge = jpeg_encode(16, 9, 3, pix, 0, &len);
    size_t sof = 2;
    while (sof + 9 < len && !(huge[sof] == 0xFF && huge[sof + 1] == 0xC0)) sof++;
    REQUIRE(sof + 9 < len, "a baseline frame header");
    huge[sof + 5] = 0x4e; huge[sof + 6] = 0x20;   /* height 20000 */
    huge[sof + 7] = 0x4e; huge[sof + 8] = 0x20;   /* width 20000 */
    CHECK(dcz_jpeg_decode(huge, len, &img, err, sizeof err) == DCZ_ERR_DATA && strstr(err, "larger") && !img.pix,
          "huge: %s", err);
    free(huge);
    free(good);
}

/* ---- folder datasets ------------------------------------------------------------------ */

static void put_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

static void put_png(const char *dir, const char *name, uint32_t w, uint32_t h, uint16_t base)
{
    uint16_t v[64 * 3];
    for (uint32_t i = 0; i < w * h; i++) v[i] = (uint16_t)((base + i) % 256);
    size_t len;
    uint8_t *b = gray8(w, h, v, &len);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    put_file(path, b, len);
    free(b);
}

static void rm_tree(const char *path)
{
    struct stat s;
    if (lstat(path, &s) != 0) return;
    if (S_ISDIR(s.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_tree(sub);
        }
        if (d) closedir(d);
        rmdir(path);
    } else unlink(path);
}

static char root[256];

static void sub(char *out, size_t n, const char *rel) { snprintf(out, n, "%s/%s", root, rel); }

/* ROOT/train/{bag,ant}: 3 and 2 images; ROOT/test/{ant,bag}: 1 each; 4 x 3 */
static void make_tree(void)
{
    char p[512];
    const char *dirs[] = { "train", "train/bag", "train/ant", "test", "test/ant", "test/bag" };
    for (size_t k = 0; k < sizeof dirs / sizeof *dirs; k++) {
        sub(p, sizeof p, dirs[k]);
        mkdir(p, 0755);
    }
    sub(p, sizeof p, "train/bag");
    put_png(p, "b1.png", 4, 3, 10);
    put_png(p, "b0.PNG", 4, 3, 20);
    put_png(p, "b2.png", 4, 3, 30);
    put_file(strcat(p, "/.DS_Store"), "x", 1);   /* skipped */
    sub(p, sizeof p, "train/ant");
    put_png(p, "a0.png", 4, 3, 40);
    put_png(p, "a1.png", 4, 3, 50);
    sub(p, sizeof p, "test/ant");
    put_png(p, "t.png", 4, 3, 60);
    sub(p, sizeof p, "test/bag");
    put_png(p, "t.png", 4, 3, 70);
}

/* The whole file at path (malloc'd; *len its size), or NULL. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

/* The preprocessing a network was trained with (train/prep.c) gives
 * torchvision's tensors, to the last bit, on the fixtures of
 * scripts/make_prep_fixture.py: Resize, CenterCrop, ToTensor and
 * Normalize of a JPEG photo shrunk, a PNG enlarged, and a gray JPEG made
 * RGB, cropped unevenly without resampling. A crop larger than the image
 * and a result of another size than the model's are refused. */
static void test_preprocess(void)
{
    static const struct { const char *name; uint32_t resize, h, w; } cases[] = {
        { "photo", 32, 28, 28 }, { "small", 40, 36, 30 }, { "tall", 33, 31, 30 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char path[256], err[256] = "";
        snprintf(path, sizeof path, "tests/fixtures/prep/%s.%s", cases[k].name, k == 1 ? "png" : "jpg");
        size_t len = 0, wlen = 0;
        uint8_t *buf = slurp(path, &len);
        snprintf(path, sizeof path, "tests/fixtures/prep/%s.f32", cases[k].name);
        uint8_t *want = slurp(path, &wlen);
        REQUIRE(buf && want && wlen == 3 * cases[k].h * cases[k].w * sizeof(float), "fixture %s", cases[k].name);
        dcz_image img;
        REQUIRE(dcz_image_decode(buf, len, &img, err, sizeof err) == DCZ_OK, "%s: %s", cases[k].name, err);
        const dcz_preprocess p = { cases[k].resize, cases[k].h, cases[k].w, 3, DCZ_IMAGENET_MEAN, DCZ_IMAGENET_STD };
        float *x = malloc(wlen);
        REQUIRE(x, "alloc");
        CHECK(dcz_prep_apply(&p, &img, cases[k].h, cases[k].w, x, err, sizeof err) == DCZ_OK, "%s: %s",
              cases[k].name, err);
        size_t diff = 0, first = 0;
        for (size_t i = 0; i < wlen / sizeof(float); i++) {
            float v;
            memcpy(&v, want + 4 * i, 4);
            if (memcmp(&v, &x[i], 4) != 0 && !diff++) first = i;
        }
        CHECK(diff == 0, "%s: %zu of %zu values differ from torchvision's, the first at %zu", cases[k].name, diff,
              wlen / sizeof(float), first);
        if (k == 0) {
            const dcz_preprocess big = { 0, 46, 61, 3, DCZ_IMAGENET_MEAN, DCZ_IMAGENET_STD };
            CHECK(dcz_prep_apply(&big, &img, 46, 61, x, err, sizeof err) == DCZ_ERR_SHAPE && strstr(err, "smaller"),
                  "a crop larger than the image: %s", err);
            CHECK(dcz_prep_apply(&p, &img, 30, 28, x, err, sizeof err) == DCZ_ERR_SHAPE &&
                      strstr(err, "the model takes 28x30"), "another size than the model's: %s", err);
        }
        dcz_image_free(&img);
        free(x);
        free(buf);
        free(want);
    }
}

/* The random crop's resampling (dcz_prep_box) gives torchvision's
 * F.resized_crop on a PIL image, to the last bit, for boxes that shrink,
 * enlarge, keep one axis and take the whole image (the list of
 * scripts/make_prep_fixture.py); boxes outside the image are refused. */
static void test_prep_box(void)
{
    static const struct { uint32_t top, left, h, w, oh, ow; } boxes[] = {
        { 5, 7, 30, 40, 28, 28 }, { 10, 20, 9, 11, 28, 28 }, { 3, 2, 28, 50, 28, 28 }, { 0, 0, 45, 61, 24, 32 },
    };
    size_t len = 0, wlen = 0;
    uint8_t *buf = slurp("tests/fixtures/prep/photo.jpg", &len), *want = slurp("tests/fixtures/prep/photo-boxes.f32",
                                                                                &wlen);
    size_t total = 0;
    for (size_t k = 0; k < sizeof boxes / sizeof *boxes; k++) total += 3 * (size_t)boxes[k].oh * boxes[k].ow;
    REQUIRE(buf && want && wlen == total * sizeof(float), "fixtures");
    char err[256] = "";
    dcz_image img;
    REQUIRE(dcz_image_decode(buf, len, &img, err, sizeof err) == DCZ_OK && img.w == 61 && img.h == 45, "%s", err);
    const dcz_preprocess p = { 0, 0, 0, 3, DCZ_IMAGENET_MEAN, DCZ_IMAGENET_STD };
    float *x = malloc(wlen);
    REQUIRE(x, "alloc");
    size_t at = 0;
    for (size_t k = 0; k < sizeof boxes / sizeof *boxes; k++) {
        const dcz_box b = { boxes[k].left, boxes[k].top, boxes[k].w, boxes[k].h };
        const size_t n = 3 * (size_t)boxes[k].oh * boxes[k].ow;
        CHECK(dcz_prep_box(&p, &img, b, boxes[k].oh, boxes[k].ow, x + at, err, sizeof err) == DCZ_OK, "box %zu: %s",
              k, err);
        size_t diff = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (memcmp(want + 4 * (at + i), &x[at + i], 4) != 0 && !diff++) first = i;
        CHECK(diff == 0, "box %zu: %zu of %zu values differ from torchvision's, the first at %zu", k, diff, n, first);
        at += n;
    }
    const dcz_box out1 = { 22, 0, 40, 10 }, out2 = { 0, 40, 10, 6 }, empty = { 3, 3, 0, 5 };
    CHECK(dcz_prep_box(&p, &img, out1, 8, 8, x, err, sizeof err) == DCZ_ERR_ARG &&
          dcz_prep_box(&p, &img, out2, 8, 8, x, err, sizeof err) == DCZ_ERR_ARG &&
          dcz_prep_box(&p, &img, empty, 8, 8, x, err, sizeof err) == DCZ_ERR_ARG, "boxes outside the image");
    dcz_image_free(&img);
    free(x);
    free(buf);
    free(want);
}

/* Loads split of root expecting status want (and a message holding word). */
static int load_expect(int split, dcz_status want, const char *word, dcz_dataset *d)
{
    char err[512] = "";
    dcz_status st = dcz_data_load(root, split, d, err, sizeof err);
    if (st != want || (word && !strstr(err, word))) {
        fprintf(stderr, "    status %d (want %d): %s\n", (int)st, (int)want, err);
        return 0;
    }
    return 1;
}

static void test_folders(void)
{
    snprintf(root, sizeof root, "/tmp/dcz-png-XXXXXX");
    REQUIRE(mkdtemp(root), "mkdtemp");
    make_tree();
    dcz_dataset d;
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_OK, NULL, &d), "train loads");
    CHECK(d.n == 5 && d.c == 1 && d.h == 3 && d.w == 4 && d.classes == 2, "n %zu c %u %ux%u classes %u", d.n, d.c,
          d.w, d.h, d.classes);
    /* class order: ant (0), bag (1); files by name: a0 a1, b0 b1 b2 */
    const uint8_t labels[5] = { 0, 0, 1, 1, 1 };
    const int bases[5] = { 40, 50, 20, 10, 30 };
    CHECK(d.x == NULL && d.files != NULL, "a folder streams");
    float *x = all_samples(&d);
    for (size_t i = 0; x && i < d.n && i < 5; i++) {
        CHECK(d.y[i] == labels[i], "label %zu", i);
        CHECK(x[i * 12] == (float)bases[i] / 255.0f && x[i * 12 + 11] == (float)(bases[i] + 11) / 255.0f,
              "sample %zu values", i);
    }
    CHECK(x, "samples read");
    free(x);
    const uint32_t hash = d.hash;
    dcz_dataset_free(&d);
    CHECK(load_expect(DCZ_SPLIT_TEST, DCZ_OK, NULL, &d) && d.n == 2 && d.y[0] == 0 && d.y[1] == 1 && d.classes == 2,
          "test loads");
    dcz_dataset_free(&d);

    char p[512], q[512];
    /* a colour image makes the split RGB */
    sub(p, sizeof p, "train/ant/c.png");
    uint16_t rgb[12 * 3];
    for (int i = 0; i < 36; i++) rgb[i] = (uint16_t)(i * 7);
    png_spec sp = { 4, 3, PNG_COLOR_TYPE_RGB, 8, 0, rgb, NULL, 0, NULL, 0, { 0 }, 0 };
    size_t len;
    uint8_t *b = png_encode(&sp, &len);
    put_file(p, b, len);
    free(b);
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_OK, NULL, &d) && d.c == 3 && d.n == 6, "colour: c %u", d.c);
    if (d.c == 3 && d.n == 6 && (x = all_samples(&d)) != NULL) {
        /* planar: ant/c.png (third) pixel 0 is (0, 7, 14); gray ones repeat */
        CHECK(x[2 * 36] == 0 && x[2 * 36 + 12] == 7.0f / 255 && x[2 * 36 + 24] == 14.0f / 255, "colour planes");
        CHECK(x[0] == 40.0f / 255 && x[12] == x[0] && x[24] == x[0], "gray repeated");
        free(x);
    }
    CHECK(d.hash != hash, "the hash follows the content");
    dcz_dataset_free(&d);
    unlink(p);

    /* each refusal, then the tree put back */
    sub(p, sizeof p, "train/empty");
    mkdir(p, 0755);
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_ERR_DATA, "holds no images", &d), "empty class folder");
    CHECK(load_expect(DCZ_SPLIT_TEST, DCZ_ERR_DATA, "holds no images", &d), "empty class, test split");
    rmdir(p);
    sub(p, sizeof p, "train/bag/notes.txt");
    put_file(p, "hello", 5);
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_ERR_DATA, "notes.txt is not an image file", &d), "stray file");
    unlink(p);
    sub(p, sizeof p, "train/bag/broken.png");
    put_file(p, "\x89PNG\r\n\x1a\nbroken", 14);
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_ERR_DATA, "broken.png", &d), "corrupt PNG");
    put_file(p, "plain text", 10);
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_ERR_DATA, "neither a PNG nor a JPEG", &d), "text named .png");
    unlink(p);
    /* JPEGs beside the PNGs, each decoded as what it is: a gray JPEG
     * named .jpg, one named .JPEG, and a PNG named .jpg */
    {
        uint8_t g[12];
        for (int i = 0; i < 12; i++) g[i] = (uint8_t)(100 + 10 * i);
        size_t jl;
        uint8_t *jb = jpeg_encode(4, 3, 1, g, 0, &jl);
        sub(p, sizeof p, "train/ant/j0.jpg");
        put_file(p, jb, jl);
        sub(q, sizeof q, "train/bag/j1.JPEG");
        put_file(q, jb, jl);
        free(jb);
        char r[512];
        sub(r, sizeof r, "train/bag");
        put_png(r, "p.jpg", 4, 3, 90);
        CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_OK, NULL, &d) && d.n == 8 && d.c == 1, "JPEG and PNG: n %zu", d.n);
        if (d.n == 8 && (x = all_samples(&d)) != NULL) {   /* ant: a0 a1 j0; bag: b0 b1 b2 j1 p */
            CHECK(fabsf(x[2 * 12] - 100.0f / 255) <= 3.0f / 255 && fabsf(x[2 * 12 + 11] - 210.0f / 255) <= 3.0f / 255,
                  "the JPEG's values: %g %g", x[24], x[35]);
            CHECK(x[7 * 12] == 90.0f / 255, "the PNG named .jpg");
            free(x);
        }
        dcz_dataset_free(&d);
        unlink(p);
        unlink(q);
        sub(r, sizeof r, "train/bag/p.jpg");
        unlink(r);
        sub(p, sizeof p, "train/bag/cut.jpg");
        uint8_t pic[12 * 3];
        picture(4, 3, 3, pic);
        jb = jpeg_encode(4, 3, 3, pic, 0, &jl);
        put_file(p, jb, jl / 2);
        free(jb);
        CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_ERR_DATA, "cut.jpg: corrupt or unsupported JPEG", &d), "a cut JPEG");
        unlink(p);
    }
    sub(p, sizeof p, "train/bag");
    put_png(p, "wide.png", 5, 3, 0);
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_ERR_DATA, "one size", &d), "mixed sizes");
    sub(p, sizeof p, "train/bag/wide.png");
    unlink(p);
    sub(p, sizeof p, "test/cat");
    mkdir(p, 0755);
    put_png(p, "c.png", 4, 3, 0);
    CHECK(load_expect(DCZ_SPLIT_TEST, DCZ_ERR_DATA, "'cat' is not among", &d), "unknown test class");
    sub(q, sizeof q, "test/cat/c.png");
    unlink(q);
    rmdir(p);
    sub(p, sizeof p, "train/readme.txt");
    put_file(p, "x", 1);
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_ERR_DATA, "not a class folder", &d), "file among classes");
    unlink(p);
    sub(p, sizeof p, "test");
    sub(q, sizeof q, "elsewhere");
    rename(p, q);
    CHECK(load_expect(DCZ_SPLIT_TEST, DCZ_ERR_IO, "test", &d), "no test folder");
    CHECK(load_expect(DCZ_SPLIT_TRAIN, DCZ_OK, NULL, &d), "train still loads");
    dcz_dataset_free(&d);
    rename(q, p);
    CHECK(load_expect(DCZ_SPLIT_TEST, DCZ_OK, NULL, &d), "the tree is whole again");
    dcz_dataset_free(&d);
    rm_tree(root);
}


/* ---- streaming folders ------------------------------------------------------------------ */

#define SC 3                 /* classes */
#define SK 7                 /* images a class */
#define SN (SC * SK)
#define SW 5
#define SH 4

static char sroot[256];

/* File i of the streaming tree, in load order: ROOT/train/cK/fNN.png, every
 * third from the second a JPEG (names sort as their numbers). */
static void s_rel(size_t i, char *out, size_t n)
{
    snprintf(out, n, "train/c%zu/f%02zu.%s", i / SK, i % SK, i % 3 == 1 ? "jpg" : "png");
}

static void s_path(size_t i, char *out, size_t n)
{
    char rel[64];
    s_rel(i, rel, sizeof rel);
    snprintf(out, n, "%s/%s", sroot, rel);
}

static void make_stream_tree(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/train", sroot);
    mkdir(p, 0755);
    for (size_t c = 0; c < SC; c++) {
        snprintf(p, sizeof p, "%s/train/c%zu", sroot, c);
        mkdir(p, 0755);
    }
    for (size_t i = 0; i < SN; i++) {
        uint16_t v[SW * SH];
        uint8_t g[SW * SH];
        for (size_t k = 0; k < SW * SH; k++) g[k] = (uint8_t)(v[k] = (uint16_t)((i * 37 + k * 11) % 256));
        size_t len;
        uint8_t *b = i % 3 == 1 ? jpeg_encode(SW, SH, 1, g, 0, &len) : gray8(SW, SH, v, &len);
        s_path(i, p, sizeof p);
        put_file(p, b, len);
        free(b);
    }
}

/* Reads samples of d (idx, first, n) expecting status want and, on
 * failure, a reason holding word and file i's name, also in
 * dcz_dataset_error. */
static int read_expect(const dcz_dataset *d, const size_t *idx, size_t first, size_t n, dcz_status want,
                       const char *word, size_t i)
{
    float *x = malloc(SN * SW * SH * sizeof *x);
    char err[512] = "", rel[64];
    s_rel(i, rel, sizeof rel);
    const dcz_status st = dcz_dataset_samples(d, idx, first, n, x, err, sizeof err);
    free(x);
    const int ok = st == want && (want == DCZ_OK || (strstr(err, word) && strstr(err, rel + 6) &&
                                                     strcmp(err, dcz_dataset_error(d)) == 0 && !strchr(err, '\n')));
    if (!ok) fprintf(stderr, "    status %d (want %d): %s\n", (int)st, (int)want, err);
    return ok;
}

static void test_streaming(void)
{
    snprintf(sroot, sizeof sroot, "/tmp/dcz-stream-XXXXXX");
    REQUIRE(mkdtemp(sroot), "mkdtemp");
    make_stream_tree();
    const size_t per = SW * SH;
    float *want = malloc(SN * per * sizeof *want), *a = malloc(SN * per * sizeof *a), *b = malloc(SN * per * sizeof *b);
    REQUIRE(want && a && b, "alloc");
    /* the samples, labels and hash the files give, read directly */
    uint8_t labels[SN];
    uint32_t crc = (uint32_t)crc32(0, Z_NULL, 0);
    for (size_t i = 0; i < SN; i++) {
        char p[512], rel[64];
        size_t len;
        s_path(i, p, sizeof p);
        s_rel(i, rel, sizeof rel);
        uint8_t *bytes = slurp(p, &len);
        dcz_image img;
        REQUIRE(bytes && dcz_image_decode(bytes, len, &img, NULL, 0) == DCZ_OK &&
                dcz_image_to_sample(&img, 1, SH, SW, 0, want + i * per, NULL, 0) == DCZ_OK, "file %zu", i);
        crc = (uint32_t)crc32(crc, (const uint8_t *)rel, (uInt)strlen(rel) + 1);
        crc = (uint32_t)crc32(crc, bytes, (uInt)len);
        labels[i] = (uint8_t)(i / SK);
        dcz_image_free(&img);
        free(bytes);
    }
    crc = (uint32_t)crc32(crc, labels, SN);

    char err[512] = "";
    dcz_dataset d, d1;
    dcz_train_set_threads(2);
    REQUIRE(dcz_data_load(sroot, DCZ_SPLIT_TRAIN, &d, err, sizeof err) == DCZ_OK, "load: %s", err);
    REQUIRE(d.n == SN && d.c == 1 && d.h == SH && d.w == SW && d.classes == SC && !d.x && d.files, "shape");
    CHECK(d.hash == crc, "the hash is a CRC32 of the names and bytes read, then the labels: %08x, want %08x", d.hash,
          crc);
    CHECK(memcmp(d.y, labels, SN) == 0, "labels in class order");
    float *all = all_samples(&d);
    CHECK(all && memcmp(all, want, SN * per * sizeof *all) == 0, "the samples are the files' own, in order");
    free(all);
    dcz_train_set_threads(1);
    REQUIRE(dcz_data_load(sroot, DCZ_SPLIT_TRAIN, &d1, err, sizeof err) == DCZ_OK, "load: %s", err);
    CHECK(d1.hash == d.hash && d1.c == d.c, "the load is the same with one thread");
    dcz_dataset_free(&d1);

    /* a shuffled order, from a place in it: the same bits with 1 and 2 threads */
    size_t order[SN];
    dcz_rng r;
    dcz_rng_seed(&r, 5);
    for (size_t i = 0; i < SN; i++) order[i] = i;
    for (size_t i = SN - 1; i > 0; i--) {
        const size_t j = dcz_rng_below(&r, (uint32_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    CHECK(dcz_dataset_samples(&d, order, 3, SN - 3, a, err, sizeof err) == DCZ_OK, "1 thread: %s", err);
    dcz_train_set_threads(2);
    CHECK(dcz_dataset_samples(&d, order, 3, SN - 3, b, err, sizeof err) == DCZ_OK, "2 threads: %s", err);
    CHECK(memcmp(a, b, (SN - 3) * per * sizeof *a) == 0, "1 and 2 threads give the same bits");
    int same = 1;
    for (size_t j = 0; j + 3 < SN; j++) same &= memcmp(a + j * per, want + order[3 + j] * per, per * sizeof *a) == 0;
    CHECK(same, "each in the order asked");
    const size_t beyond = SN;
    CHECK(dcz_dataset_samples(&d, &beyond, 0, 1, a, NULL, 0) == DCZ_ERR_ARG, "an index beyond n");
    CHECK(dcz_dataset_samples(&d, NULL, SN - 1, 2, a, NULL, 0) == DCZ_ERR_ARG, "a range beyond n");

    /* holdout: lists of the same files, in d's order, that outlive d */
    dcz_dataset held, rest, again, other, part;
    REQUIRE(dcz_dataset_holdout(&d, 6, 99, &held, &rest) == DCZ_OK, "holdout");
    CHECK(held.n == 6 && rest.n == SN - 6 && !held.x && !rest.x && held.files == d.files && rest.files == d.files &&
          held.pick && rest.pick, "parts of a streaming set share its files");
    uint8_t seen[SN] = { 0 };
    int ordered = 1;
    for (size_t i = 0; i < held.n; i++) {
        seen[held.pick[i]]++;
        ordered &= i == 0 || held.pick[i] > held.pick[i - 1];
    }
    for (size_t i = 0; i < rest.n; i++) {
        seen[rest.pick[i]]++;
        ordered &= i == 0 || rest.pick[i] > rest.pick[i - 1];
    }
    int once = 1;
    for (size_t i = 0; i < SN; i++) once &= seen[i] == 1;
    CHECK(once && ordered, "the parts split d, each in d's order");
    REQUIRE(dcz_dataset_holdout(&d, 6, 99, &again, NULL) == DCZ_OK, "holdout again");
    CHECK(again.hash == held.hash && memcmp(again.pick, held.pick, 6 * sizeof *held.pick) == 0, "same seed, same part");
    REQUIRE(dcz_dataset_holdout(&d, 6, 100, &other, NULL) == DCZ_OK, "holdout, another seed");
    CHECK(memcmp(other.pick, held.pick, 6 * sizeof *held.pick) != 0 && other.hash != held.hash,
          "another seed, another part and hash");
    dcz_dataset_free(&again);
    dcz_dataset_free(&other);
    dcz_dataset_free(&d);
    all = all_samples(&held);
    same = all != NULL;
    for (size_t i = 0; all && i < held.n; i++)
        same &= memcmp(all + i * per, want + held.pick[i] * per, per * sizeof *all) == 0 &&
                held.y[i] == labels[held.pick[i]];
    CHECK(same, "a part's samples and labels are its files'");
    free(all);
    REQUIRE(dcz_dataset_holdout(&rest, 4, 5, &part, NULL) == DCZ_OK, "a part of a part");
    all = all_samples(&part);
    same = all != NULL;
    for (size_t i = 0; all && i < part.n; i++) same &= memcmp(all + i * per, want + part.pick[i] * per, per * sizeof *all) == 0;
    CHECK(same, "a part of a part reads its files");
    free(all);
    dcz_dataset_free(&part);
    dcz_dataset_free(&held);

    /* an epoch on the streaming set is an epoch on the same samples in memory */
    dcz_dataset mem = rest;
    mem.files = NULL;
    mem.pick = NULL;
    mem.x = all_samples(&rest);
    mem.y = malloc(rest.n);
    dcz_net *na = NULL, *nb = NULL;
    REQUIRE(mem.x && mem.y, "alloc");
    memcpy(mem.y, rest.y, rest.n);
    REQUIRE(dcz_net_create_arch("mlp:20-8-3", 1, &na, err, sizeof err) == DCZ_OK &&
            dcz_net_create_arch("mlp:20-8-3", 1, &nb, err, sizeof err) == DCZ_OK, "nets: %s", err);
    dcz_sgd opt = { .lr = 0.1f, .momentum = 0.9f, .batch = 4, .train_biases = 1, .train_weights = 1 };
    dcz_rng ra, rb;
    dcz_rng_seed(&ra, 3);
    dcz_rng_seed(&rb, 3);
    float la = 0, lb = 0;
    double acc_a = -1, acc_b = -2;
    CHECK(dcz_train_epoch(na, &rest, &opt, &ra, NULL, NULL, &la) == DCZ_OK &&
          dcz_train_epoch(nb, &mem, &opt, &rb, NULL, NULL, &lb) == DCZ_OK, "epochs");
    CHECK(la == lb && na->param_count == nb->param_count &&
          memcmp(na->param, nb->param, na->param_count * sizeof *na->param) == 0, "the same training");
    CHECK(dcz_net_evaluate(na, &rest, &acc_a) == DCZ_OK && dcz_net_evaluate(nb, &mem, &acc_b) == DCZ_OK &&
          acc_a == acc_b, "the same evaluation");
    dcz_dataset_free(&mem);
    dcz_dataset_free(&rest);

    /* files deleted, changed, cut or grown after the load: clean errors */
    REQUIRE(dcz_data_load(sroot, DCZ_SPLIT_TRAIN, &d, err, sizeof err) == DCZ_OK, "load: %s", err);
    char p[512];
    size_t len4, len7;
    s_path(4, p, sizeof p);
    uint8_t *f4 = slurp(p, &len4);
    REQUIRE(f4 && unlink(p) == 0, "delete file 4");
    CHECK(read_expect(&d, NULL, 0, SN, DCZ_ERR_IO, "but it was there when the dataset was loaded", 4), "a file deleted");
    CHECK(read_expect(&d, NULL, 0, 4, DCZ_OK, NULL, 0) && read_expect(&d, NULL, 5, SN - 5, DCZ_OK, NULL, 0),
          "the other files still read");
    dcz_rng_seed(&ra, 3);
    CHECK(dcz_train_epoch(na, &d, &opt, &ra, NULL, NULL, &la) == DCZ_ERR_IO && strstr(dcz_dataset_error(&d), "f04"),
          "an epoch stops with the reason: %s", dcz_dataset_error(&d));
    CHECK(dcz_net_evaluate(na, &d, &acc_a) == DCZ_ERR_IO, "so does an evaluation");
    put_file(p, f4, len4);
    CHECK(read_expect(&d, NULL, 0, SN, DCZ_OK, NULL, 0), "the same bytes back: the same file");
    s_path(7, p, sizeof p);
    uint8_t *f7 = slurp(p, &len7);
    REQUIRE(f7, "file 7");
    f7[len7 / 2] ^= 1;
    put_file(p, f7, len7);
    CHECK(read_expect(&d, NULL, 0, SN, DCZ_ERR_DATA, "changed after the dataset was loaded", 7), "a byte changed");
    put_file(p, f7, len7 / 2);
    CHECK(read_expect(&d, NULL, 0, SN, DCZ_ERR_DATA, "changed after the dataset was loaded", 7), "a file cut");
    f7[len7 / 2] ^= 1;
    put_file(p, f7, len7);
    FILE *g = fopen(p, "ab");
    REQUIRE(g && fputc(0, g) == 0 && fclose(g) == 0, "grow file 7");
    CHECK(read_expect(&d, NULL, 0, SN, DCZ_ERR_DATA, "changed after the dataset was loaded", 7), "a file grown");
    /* two failures: the first in the order asked is the one told */
    s_path(16, p, sizeof p);
    unlink(p);
    size_t backwards[SN];
    for (size_t i = 0; i < SN; i++) backwards[i] = SN - 1 - i;
    CHECK(read_expect(&d, NULL, 0, SN, DCZ_ERR_DATA, "changed", 7), "file 7 first in order");
    CHECK(read_expect(&d, backwards, 0, SN, DCZ_ERR_IO, "cannot open", 16), "file 16 first backwards");
    dcz_train_set_threads(1);
    CHECK(read_expect(&d, backwards, 0, SN, DCZ_ERR_IO, "cannot open", 16), "the same with one thread");
    dcz_train_set_threads(2);
    dcz_dataset_free(&d);
    dcz_net_free(na);
    dcz_net_free(nb);
    free(f4);
    free(f7);
    free(want);
    free(a);
    free(b);
    rm_tree(sroot);
}

/* ---- training augmentation ------------------------------------------------------------- */

#define AN 12                /* images, two classes */
#define AW 23
#define AH 17

/* The crop boxes of torchvision's RandomResizedCrop: inside the image,
 * their area 8% to 100% of it and their width / height 3/4 to 4/3, each
 * up to the rounding of the sides to whole pixels; spread over those
 * ranges; the same for the same generator; the center box of the image's
 * ratio clamped into the range when no draw fits (images too thin for any). */
static void test_crop_boxes(void)
{
    static const uint32_t sizes[][2] = { { 1, 1 }, { 2, 3 }, { 23, 17 }, { 100, 100 }, { 224, 300 }, { 640, 480 },
                                         { 50, 20 }, { 20, 50 } };
    int inside = 1, in_range = 1;
    double amin = 1, amax = 0, rmin = 10, rmax = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        const uint32_t w = sizes[k][0], h = sizes[k][1];
        for (uint64_t s = 0; s < 2000; s++) {
            dcz_rng r, again;
            dcz_augment_rng(77, s, &r);
            dcz_augment_rng(77, s, &again);
            const dcz_box b = dcz_augment_crop_box(w, h, &r), c = dcz_augment_crop_box(w, h, &again);
            if (b.x != c.x || b.y != c.y || b.w != c.w || b.h != c.h) inside = 0;
            if (!b.w || !b.h || b.x + b.w > w || b.y + b.h > h) {
                if (inside) fprintf(stderr, "    %ux%u: box %u,%u %ux%u\n", w, h, b.x, b.y, b.w, b.h);
                inside = 0;
            }
            /* each side is within half a pixel of the real one drawn */
            const double lo_a = (b.w - 0.5) * (b.h - 0.5), hi_a = (b.w + 0.5) * (b.h + 0.5), area = (double)w * h;
            const double lo_r = (b.w - 0.5) / (b.h + 0.5), hi_r = (b.w + 0.5) / (b.h - 0.5);
            if (w >= 20 && h >= 20 && (hi_a < 0.08 * area || lo_a > area || hi_r < 0.75 || lo_r > 4.0 / 3.0)) {
                if (in_range) fprintf(stderr, "    %ux%u: box %ux%u\n", w, h, b.w, b.h);
                in_range = 0;
            }
            if (w == 640) {
                const double a = (double)b.w * b.h / area, ratio = (double)b.w / b.h;
                amin = a < amin ? a : amin;
                amax = a > amax ? a : amax;
                rmin = ratio < rmin ? ratio : rmin;
                rmax = ratio > rmax ? ratio : rmax;
            }
        }
    }
    CHECK(inside, "every box inside its image, the same from the same generator");
    CHECK(in_range, "area and ratio in torchvision's ranges");
    CHECK(amin < 0.1 && amax > 0.95 && rmin < 0.8 && rmax > 1.25, "the ranges are covered: area %.3f..%.3f, ratio "
          "%.3f..%.3f", amin, amax, rmin, rmax);
    /* too thin for any draw: the center, of the nearest ratio in range */
    dcz_rng r;
    dcz_rng_seed(&r, 1);
    dcz_box b = dcz_augment_crop_box(400, 10, &r);
    const uint32_t bw = (uint32_t)lrint(10 * 4.0 / 3.0);
    CHECK(b.w == bw && b.h == 10 && b.x == (400 - bw) / 2 && b.y == 0, "400x10: %u,%u %ux%u", b.x, b.y, b.w, b.h);
    b = dcz_augment_crop_box(3, 200, &r);
    const uint32_t bh = (uint32_t)lrint(3 / 0.75);
    CHECK(b.w == 3 && b.h == bh && b.x == 0 && b.y == (200 - bh) / 2, "3x200: %u,%u %ux%u", b.x, b.y, b.w, b.h);
}

/* AN images of AW x AH, gray, every third a JPEG, of content that no flip
 * leaves alone, in ROOT/train/{a,b}. */
static void make_aug_tree(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/train", sroot);
    mkdir(p, 0755);
    for (int c = 0; c < 2; c++) {
        snprintf(p, sizeof p, "%s/train/%c", sroot, 'a' + c);
        mkdir(p, 0755);
    }
    for (size_t i = 0; i < AN; i++) {
        uint16_t v[AW * AH];
        uint8_t g[AW * AH];
        for (size_t y = 0; y < AH; y++)
            for (size_t x = 0; x < AW; x++)
                g[y * AW + x] = (uint8_t)(v[y * AW + x] = (uint16_t)((x * x * 3 + y * 11 + i * 29) % 256));
        size_t len;
        uint8_t *b = i % 3 == 1 ? jpeg_encode(AW, AH, 1, g, 0, &len) : gray8(AW, AH, v, &len);
        snprintf(p, sizeof p, "%s/train/%c/f%02zu.%s", sroot, i < AN / 2 ? 'a' : 'b', i, i % 3 == 1 ? "jpg" : "png");
        put_file(p, b, len);
        free(b);
    }
}

/* The decoded image of sample i of the augmentation tree. */
static int aug_image(size_t i, dcz_image *img)
{
    char p[512];
    size_t len;
    snprintf(p, sizeof p, "%s/train/%c/f%02zu.%s", sroot, i < AN / 2 ? 'a' : 'b', i, i % 3 == 1 ? "jpg" : "png");
    uint8_t *b = slurp(p, &len);
    const int ok = b && dcz_image_decode(b, len, img, NULL, 0) == DCZ_OK;
    free(b);
    return ok;
}

/* Nonzero when y (c, h, w) is x with every row reversed. */
static int is_flip(const float *x, const float *y, uint32_t c, uint32_t h, uint32_t w)
{
    for (size_t row = 0; row < (size_t)c * h; row++)
        for (uint32_t k = 0; k < w; k++)
            if (memcmp(&y[row * w + k], &x[row * w + w - 1 - k], sizeof *x) != 0) return 0;
    return 1;
}

/* Training samples varied as torchvision varies them: with augmentation
 * off, exactly the samples as read before; a flip reverses every row (on
 * an image folder and in memory alike, each sample by even odds, the same
 * sample flipped in both forms); a crop is the box drawn from the sample's
 * own generator, resized by dcz_prep_box (to the size of the recorded
 * crop, normalized by the record, when there is one), then flipped or not
 * by the next draw; the samples depend on the key and each sample's index,
 * not on the thread count or the order read, and another key (epoch)
 * gives others; crops of in-memory samples and unknown bits are refused;
 * an augmented epoch is the same with one thread and two. */
static void test_augment(void)
{
    snprintf(sroot, sizeof sroot, "/tmp/dcz-aug-XXXXXX");
    REQUIRE(mkdtemp(sroot), "mkdtemp");
    make_aug_tree();
    const size_t per = AW * AH;
    float *plain = malloc(AN * per * sizeof *plain), *a = malloc(AN * per * sizeof *a),
          *b = malloc(AN * per * sizeof *b), *want = malloc(per * sizeof *want);
    REQUIRE(plain && a && b && want, "alloc");
    char err[512] = "";
    dcz_dataset d, mem;
    dcz_train_set_threads(2);
    REQUIRE(dcz_data_load(sroot, DCZ_SPLIT_TRAIN, &d, err, sizeof err) == DCZ_OK && d.files && d.c == 1 &&
            d.w == AW && d.h == AH && d.n == AN, "load: %s", err);
    REQUIRE(dcz_dataset_samples(&d, NULL, 0, AN, plain, err, sizeof err) == DCZ_OK, "read: %s", err);

    /* off: the samples as they are */
    const dcz_augment none = { 0, 12345 };
    CHECK(dcz_dataset_samples_aug(&d, NULL, 0, AN, NULL, a, err, sizeof err) == DCZ_OK &&
          dcz_dataset_samples_aug(&d, NULL, 0, AN, &none, b, err, sizeof err) == DCZ_OK &&
          memcmp(a, plain, AN * per * sizeof *a) == 0 && memcmp(b, plain, AN * per * sizeof *b) == 0,
          "without augmentation, the samples bit for bit");

    /* flips, streaming and in memory */
    mem = d;
    mem.files = NULL;
    mem.pick = NULL;
    mem.x = malloc(AN * per * sizeof *mem.x);
    mem.y = malloc(AN);
    REQUIRE(mem.x && mem.y, "alloc");
    memcpy(mem.x, plain, AN * per * sizeof *mem.x);
    memcpy(mem.y, d.y, AN);
    const dcz_augment flip = { DCZ_AUG_FLIP, 5 };
    REQUIRE(dcz_dataset_samples_aug(&d, NULL, 0, AN, &flip, a, err, sizeof err) == DCZ_OK &&
            dcz_dataset_samples_aug(&mem, NULL, 0, AN, &flip, b, err, sizeof err) == DCZ_OK, "flips: %s", err);
    int flips = 0, ok = 1;
    for (size_t i = 0; i < AN; i++) {
        const int f = is_flip(plain + i * per, a + i * per, 1, AH, AW);
        flips += f;
        ok &= f || memcmp(a + i * per, plain + i * per, per * sizeof *a) == 0;
        dcz_rng r;
        dcz_augment_rng(flip.key, i, &r);
        ok &= f == dcz_augment_draw_flip(&r);
    }
    CHECK(ok, "each sample flipped (every row reversed) or left, as its own draw says");
    CHECK(flips > 0 && flips < AN, "some flipped and some not: %d of %d", flips, AN);
    CHECK(memcmp(a, b, AN * per * sizeof *a) == 0, "the same flips in memory");
    float row[4] = { 1, 2, 3, 4 }, col[1] = { 7 };
    dcz_augment_flip(row, 1, 1, 4);
    dcz_augment_flip(col, 1, 1, 1);
    CHECK(row[0] == 4 && row[1] == 3 && row[2] == 2 && row[3] == 1 && col[0] == 7, "a flip of a row, of one value");

    /* crops: the sample's box resized, then the flip its next draw says */
    const dcz_augment crop = { DCZ_AUG_CROP | DCZ_AUG_FLIP, 9 };
    const dcz_preprocess unit = { .channels = 1, .std = { 1.0f, 1.0f, 1.0f } };
    dcz_train_set_threads(1);
    REQUIRE(dcz_dataset_samples_aug(&d, NULL, 0, AN, &crop, a, err, sizeof err) == DCZ_OK, "crops: %s", err);
    ok = 1;
    flips = 0;
    int cropped = 0;
    for (size_t i = 0; i < AN; i++) {
        dcz_image img;
        dcz_rng r;
        REQUIRE(aug_image(i, &img), "image %zu", i);
        dcz_augment_rng(crop.key, i, &r);
        const dcz_box bx = dcz_augment_crop_box(AW, AH, &r);
        cropped += bx.w != AW || bx.h != AH;
        ok &= dcz_prep_box(&unit, &img, bx, AH, AW, want, NULL, 0) == DCZ_OK;
        if (dcz_augment_draw_flip(&r)) {
            dcz_augment_flip(want, 1, AH, AW);
            flips++;
        }
        ok &= memcmp(want, a + i * per, per * sizeof *want) == 0;
        dcz_image_free(&img);
    }
    CHECK(ok, "each sample its box resized to the sample's size, then flipped by its draw");
    CHECK(cropped > AN / 2 && flips > 0 && flips < AN, "boxes smaller than the image (%d), some flipped (%d)", cropped,
          flips);
    /* the order read and the threads change nothing; another key does */
    size_t order[AN];
    for (size_t i = 0; i < AN; i++) order[i] = (i * 5 + 3) % AN;
    dcz_train_set_threads(2);
    REQUIRE(dcz_dataset_samples_aug(&d, order, 2, AN - 2, &crop, b, err, sizeof err) == DCZ_OK, "crops: %s", err);
    ok = 1;
    for (size_t j = 0; j + 2 < AN; j++) ok &= memcmp(b + j * per, a + order[2 + j] * per, per * sizeof *b) == 0;
    CHECK(ok, "the same sample whatever the order, the place in it and the thread count");
    REQUIRE(dcz_dataset_samples_aug(&d, NULL, 0, AN, &crop, b, err, sizeof err) == DCZ_OK, "crops: %s", err);
    CHECK(memcmp(a, b, AN * per * sizeof *a) == 0, "1 and 2 threads, the same bits");
    const dcz_augment other = { DCZ_AUG_CROP | DCZ_AUG_FLIP, 10 };
    REQUIRE(dcz_dataset_samples_aug(&d, NULL, 0, AN, &other, b, err, sizeof err) == DCZ_OK, "crops: %s", err);
    int differ = 0;
    for (size_t i = 0; i < AN; i++) differ += memcmp(a + i * per, b + i * per, per * sizeof *a) != 0;
    CHECK(differ > AN / 2, "another epoch's key, other samples (%d of %d differ)", differ, AN);

    /* refused: crops of in-memory samples, unknown bits */
    const dcz_augment bad = { 4, 1 };
    CHECK(dcz_dataset_samples_aug(&mem, NULL, 0, AN, &crop, b, err, sizeof err) == DCZ_ERR_UNSUPPORTED &&
          strstr(err, "image folder"), "a crop of IDX samples: %s", err);
    CHECK(dcz_dataset_samples_aug(&d, NULL, 0, AN, &bad, b, NULL, 0) == DCZ_ERR_ARG, "unknown bits");

    /* epochs: one thread and two the same; crops of memory refused */
    dcz_net *na = NULL, *nb = NULL;
    REQUIRE(dcz_net_create_arch("cnn:i1x17x23-c4k3-p2-f2", 1, &na, err, sizeof err) == DCZ_OK &&
            dcz_net_create_arch("cnn:i1x17x23-c4k3-p2-f2", 1, &nb, err, sizeof err) == DCZ_OK, "nets: %s", err);
    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .batch = 5, .train_biases = 1, .train_weights = 1,
                    .augment = DCZ_AUG_CROP | DCZ_AUG_FLIP };
    dcz_rng ra, rb;
    dcz_rng_seed(&ra, 3);
    dcz_rng_seed(&rb, 3);
    float la = 0, lb = 0;
    dcz_train_set_threads(1);
    CHECK(dcz_train_epoch(na, &d, &opt, &ra, NULL, NULL, &la) == DCZ_OK &&
          dcz_train_epoch(na, &d, &opt, &ra, NULL, NULL, &la) == DCZ_OK, "augmented epochs, 1 thread");
    dcz_train_set_threads(2);
    CHECK(dcz_train_epoch(nb, &d, &opt, &rb, NULL, NULL, &lb) == DCZ_OK &&
          dcz_train_epoch(nb, &d, &opt, &rb, NULL, NULL, &lb) == DCZ_OK, "augmented epochs, 2 threads");
    CHECK(la == lb && memcmp(na->param, nb->param, na->param_count * sizeof *na->param) == 0,
          "the same training with 1 and 2 threads");
    CHECK(dcz_train_epoch(na, &mem, &opt, &ra, NULL, NULL, &la) == DCZ_ERR_UNSUPPORTED, "crops of memory refused");
    opt.augment = 8;
    CHECK(dcz_train_epoch(na, &d, &opt, &ra, NULL, NULL, &la) == DCZ_ERR_ARG, "unknown bits refused");
    dcz_net_free(na);
    dcz_net_free(nb);
    dcz_dataset_free(&d);
    dcz_dataset_free(&mem);

    /* with a recorded preprocessing: crops of the record's crop size,
     * normalized by it (its resize is evaluation's) */
    const dcz_preprocess prep = { 20, 14, 19, 1, { 0.5f }, { 0.25f } };
    REQUIRE(dcz_data_load_prep(sroot, DCZ_SPLIT_TRAIN, DCZ_DATA_DEFAULT_MAX, &prep, &d, err, sizeof err) == DCZ_OK &&
            d.h == 14 && d.w == 19, "load with preprocessing: %s", err);
    REQUIRE(dcz_dataset_samples_aug(&d, NULL, 0, AN, &crop, a, err, sizeof err) == DCZ_OK, "crops: %s", err);
    ok = 1;
    const size_t per2 = 14 * 19;
    for (size_t i = 0; i < AN; i++) {
        dcz_image img;
        dcz_rng r;
        REQUIRE(aug_image(i, &img), "image %zu", i);
        dcz_augment_rng(crop.key, i, &r);
        ok &= dcz_prep_box(&prep, &img, dcz_augment_crop_box(AW, AH, &r), 14, 19, want, NULL, 0) == DCZ_OK;
        if (dcz_augment_draw_flip(&r)) dcz_augment_flip(want, 1, 14, 19);
        ok &= memcmp(want, a + i * per2, per2 * sizeof *want) == 0;
        dcz_image_free(&img);
    }
    CHECK(ok, "crops resized to the record's crop and normalized by it");
    dcz_dataset_free(&d);
    free(plain);
    free(a);
    free(b);
    free(want);
    rm_tree(sroot);
}

int main(void)
{
    RUN(test_decode_every_type);
    RUN(test_scaling_matches_idx);
    RUN(test_channels_and_alpha);
    RUN(test_resize);
    RUN(test_input_shape);
    RUN(test_corrupt_files);
    RUN(test_jpeg_decode);
    RUN(test_jpeg_corrupt);
    RUN(test_preprocess);
    RUN(test_prep_box);
    RUN(test_folders);
    RUN(test_streaming);
    RUN(test_crop_boxes);
    RUN(test_augment);
    return check_summary();
}
