/* fuzz_jpeg.c: libFuzzer target for the JPEG reader (dcz_jpeg_decode,
 * through dcz_image_decode, which also routes PNG bytes to the PNG reader)
 * and the conversion of what it decodes into model input.
 *
 * Whatever the bytes, decoding must return a status (with a message when it
 * fails) without crashing, reading out of bounds or leaking; an image it
 * accepts must be gray or RGB of 8 bits with a consistent size, and convert
 * into gray and RGB samples of its own size and, resampled, of another,
 * with every value in [0, 1]. Seed corpus: tests/fuzz/corpus/jpeg/ (gray,
 * colour, progressive, restart markers, CMYK, truncated); replayed by
 * `make test` through tests/fuzz/replay.c, fuzzed by `make fuzz`.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/image_sample.h"
#include "train/png.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dcz_image img;
    char err[256];
    err[0] = 0;
    const int jpeg = dcz_jpeg_sniff(data, size);
    if (dcz_image_decode(data, size, &img, err, sizeof err) != DCZ_OK) {
        if (!err[0] || img.pix) abort();
        return 0;
    }
    if (!img.pix || !img.w || !img.h || (uint64_t)img.w * img.h * img.c > DCZ_PNG_MAX_VALUES) abort();
    if (jpeg && ((img.c != 1 && img.c != 3) || img.maxval != 255)) abort();
    for (size_t i = 0; i < (size_t)img.w * img.h * img.c; i++)
        if (img.pix[i] > img.maxval) abort();
    if ((uint64_t)img.w * img.h <= (1u << 16)) {   /* keep runs fast */
        convert(&img, 1, img.h, img.w, 0);
        convert(&img, 3, img.h, img.w, 0);
        convert(&img, 3, 5, 9, 1);
    }
    dcz_image_free(&img);
    return 0;
}
