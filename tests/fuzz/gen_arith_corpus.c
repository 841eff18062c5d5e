/* gen_arith_corpus.c: writes the seed corpus of fuzz_arith.c.
 *
 * Valid keep masks made by arith_encode.c (one flag, a row, a column, none
 * kept, all kept, empty and full columns, rows of varying density) and
 * valid index streams of every width (uniform, skewed, one symbol, none),
 * and broken ones: truncated, a byte appended, flipped bits, the wrong
 * count of kept flags, the first code 0xFFFFFFFF, a short header.
 * Not part of the build; regenerate with
 *   cc -std=c11 -Iinclude -I. tests/fuzz/gen_arith_corpus.c huffman/arith_*.c \
 *      -o /tmp/gen && /tmp/gen tests/fuzz/corpus/arith
 * The output is deterministic.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "huffman/arith.h"

#define GEN_SEED 7
#include "tests/fuzz/gen_util.h"

#define MAXF 4096

static uint8_t file[8 + 2 * MAXF], keep[MAXF], sym[MAXF];

/* header + stream of the mask keep (rows x cols); the file size, 0 on error */
static size_t mask_file(uint32_t rows, uint32_t cols)
{
    unsigned nnz = 0;
    for (uint32_t i = 0; i < rows * cols; i++) nnz += keep[i];
    size_t used = 0;
    file[0] = 0;
    file[1] = (uint8_t)rows; file[2] = (uint8_t)(rows >> 8);
    file[3] = (uint8_t)cols; file[4] = (uint8_t)(cols >> 8);
    file[5] = (uint8_t)nnz; file[6] = (uint8_t)(nnz >> 8);
    if (dcz_ac_encode_mask(keep, rows, cols, file + 7, sizeof file - 7, &used) != DCZ_OK) return 0;
    return 7 + used;
}

static size_t index_file(unsigned bits, size_t n)
{
    size_t used = 0;
    file[0] = 1;
    file[1] = (uint8_t)(bits - 1);
    file[2] = (uint8_t)n; file[3] = (uint8_t)(n >> 8);
    if (dcz_ac_encode_indices(sym, n, bits, file + 4, sizeof file - 4, &used) != DCZ_OK) return 0;
    return 4 + used;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: gen_arith_corpus DIR\n"); return 1; }
    const char *dir = argv[1];
    int err = 0;
    size_t sz;
    char name[64];

    keep[0] = 1;
    sz = mask_file(1, 1);
    err |= !sz || put(dir, "valid-mask-1x1", file, sz);
    for (int i = 0; i < 40; i++) keep[i] = rnd(3) == 0;
    sz = mask_file(1, 40);
    err |= !sz || put(dir, "valid-mask-row", file, sz);
    sz = mask_file(40, 1);
    err |= !sz || put(dir, "valid-mask-column", file, sz);
    memset(keep, 0, 300);
    sz = mask_file(10, 30);
    err |= !sz || put(dir, "valid-mask-none", file, sz);
    memset(keep, 1, 300);
    sz = mask_file(10, 30);
    err |= !sz || put(dir, "valid-mask-all", file, sz);
    /* 30 x 100: a fifth of the columns empty, a fifth full, rows of varying density */
    for (uint32_t r = 0; r < 30; r++) {
        unsigned d = rnd(40);
        for (uint32_t c = 0; c < 100; c++) keep[r * 100 + c] = c % 5 == 0 ? 0 : c % 5 == 1 ? 1 : rnd(100) < d;
    }
    sz = mask_file(30, 100);
    err |= !sz || put(dir, "valid-mask-columns", file, sz);
    err |= put(dir, "bad-mask-truncated", file, sz - 3);
    file[sz] = 0;
    err |= put(dir, "bad-mask-appended", file, sz + 1);
    file[5] ^= 1;
    err |= put(dir, "bad-mask-count", file, sz);
    file[5] ^= 1;
    for (int k = 0; k < 4; k++) file[7 + rnd((unsigned)sz - 7)] ^= (uint8_t)(1u << rnd(8));
    err |= put(dir, "flipped-mask", file, sz);
    for (uint32_t i = 0; i < 64 * 64; i++) keep[i] = rnd(100) < 8;
    sz = mask_file(64, 64);
    err |= !sz || put(dir, "valid-mask-sparse", file, sz);

    for (unsigned bits = 1; bits <= 8; bits++) {
        size_t n = 50 + 120 * bits;
        for (size_t i = 0; i < n; i++) {
            unsigned v = rnd(1u << bits);
            sym[i] = (uint8_t)(bits & 1 ? v : v * v >> bits);
        }
        sz = index_file(bits, n);
        snprintf(name, sizeof name, "valid-index-%u", bits);
        err |= !sz || put(dir, name, file, sz);
    }
    memset(sym, 5, 500);
    sz = index_file(3, 500);
    err |= !sz || put(dir, "valid-index-one-symbol", file, sz);
    err |= put(dir, "bad-index-truncated", file, sz - 1);
    sz = index_file(4, 0);
    err |= !sz || put(dir, "valid-index-none", file, sz);
    static const uint8_t top[] = { 1, 2, 3, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x12 };
    static const uint8_t short_hdr[] = { 0, 1, 0, 1 };
    err |= put(dir, "bad-first-code", top, sizeof top);
    err |= put(dir, "bad-short-header", short_hdr, sizeof short_hdr);
    if (err) { fprintf(stderr, "gen_arith_corpus: could not write %s\n", dir); return 1; }
    return 0;
}
