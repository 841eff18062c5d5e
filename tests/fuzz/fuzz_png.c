/* fuzz_png.c: libFuzzer target for the PNG reader (dcz_png_decode) and the
 * conversion of an image into model input (dcz_image_to_sample,
 * dcz_image_input_shape).
 *
 * Whatever the bytes, decoding must return a status (with a message when it
 * fails) without crashing, reading out of bounds or leaking; an image it
 * accepts must have a consistent size, and convert into gray and RGB
 * samples of its own size and, resampled, of other sizes, with every value
 * in [0, 1]. A copy with every chunk CRC recomputed is fed too, so that
 * mutations reach the decoder behind the checksum test. Seed corpus: tests/fuzz/corpus/png/; replayed by `make test`
 * through tests/fuzz/replay.c, fuzzed by `make fuzz`.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/fuzz/image_sample.h"
#include "train/png.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Rewrites the CRC of every whole chunk, so that mutations reach the
 * decoder behind libpng's checksum test. */
static void fix_crcs(uint8_t *b, size_t len)
{
    size_t pos = 8;
    while (pos + 12 <= len) {
        const uint32_t n = (uint32_t)b[pos] << 24 | (uint32_t)b[pos + 1] << 16 | (uint32_t)b[pos + 2] << 8 | b[pos + 3];
        if (n > len - pos - 12) break;
        const uint32_t c = (uint32_t)crc32(crc32(0, Z_NULL, 0), b + pos + 4, n + 4);
        b[pos + 8 + n] = (uint8_t)(c >> 24);
        b[pos + 9 + n] = (uint8_t)(c >> 16);
        b[pos + 10 + n] = (uint8_t)(c >> 8);
        b[pos + 11 + n] = (uint8_t)c;
        pos += 12 + (size_t)n;
    }
}

static void decode(const uint8_t *data, size_t size)
{
    dcz_image img;
    char err[256];
    if (dcz_png_decode(data, size, &img, err, sizeof err) != DCZ_OK) {
        if (!err[0] || img.pix) abort();
        return;
    }
    if (!img.pix || img.c < 1 || img.c > 4 || !img.w || !img.h ||
        (uint64_t)img.w * img.h * img.c > DCZ_PNG_MAX_VALUES || (img.maxval != 255 && img.maxval != 65535))
        abort();
    for (size_t i = 0; i < (size_t)img.w * img.h * img.c; i++)
        if (img.pix[i] > img.maxval) abort();
    (void)dcz_image_is_gray(&img);
    if ((uint64_t)img.w * img.h <= (1u << 16)) {   /* keep runs fast */
        convert(&img, 1, img.h, img.w, 0);
        convert(&img, 3, img.h, img.w, 0);
        convert(&img, 1, 7, 5, 1);
        convert(&img, 3, 3, 11, 1);
        const uint32_t flat[1] = { 784 }, chw[3] = { 3, 4, 4 };
        uint32_t c, h, w;
        if (dcz_image_input_shape(&img, 1, flat, 1, &c, &h, &w, err, sizeof err) == DCZ_OK) convert(&img, c, h, w, 1);
        if (dcz_image_input_shape(&img, 3, chw, 1, &c, &h, &w, err, sizeof err) == DCZ_OK) convert(&img, c, h, w, 1);
    }
    dcz_image_free(&img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    fix_crcs(copy, size);
    decode(copy, size);
    free(copy);
    return 0;
}
