/* fuzz_idx.c: libFuzzer target for the IDX dataset parser (dcz_idx_parse).
 *
 * Input layout: a 4-byte little-endian split point s, then the image buffer
 * (the first s mod (remaining + 1) bytes) and the label buffer (the rest).
 * Whatever the bytes, the parser must return a status without crashing,
 * reading out of bounds or leaking; on success the dataset must be
 * consistent with the image buffer's length.
 * Seed corpus: tests/fuzz/corpus/idx/; replayed by `make test` through
 * tests/fuzz/replay.c, fuzzed by `make fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>

#include "train/train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    uint32_t s = (uint32_t)data[0] | ((uint32_t)data[1] << 8) |
                 ((uint32_t)data[2] << 16) | ((uint32_t)data[3] << 24);
    size_t rest = size - 4;
    size_t img_len = s % (rest + 1);
    const uint8_t *img = data + 4, *lbl = data + 4 + img_len;
    size_t lbl_len = rest - img_len;
    dcz_dataset d;
    char err[256];
    if (dcz_idx_parse(img, img_len, lbl, lbl_len, &d, err, sizeof err) == DCZ_OK) {
        size_t sample = (size_t)d.c * d.h * d.w;
        if (d.n == 0 || 16 + d.n * sample != img_len || !d.x || !d.y) abort();
        float acc = 0;
        for (size_t i = 0; i < d.n * sample; i++) acc += d.x[i];
        for (size_t i = 0; i < d.n; i++)
            if (d.y[i] >= d.classes) abort();
        if (!(acc >= 0)) abort();
    }
    dcz_dataset_free(&d);
    return 0;
}
