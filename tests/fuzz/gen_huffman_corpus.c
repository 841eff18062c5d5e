/* gen_huffman_corpus.c: writes the seed corpus of fuzz_huffman.c.
 *
 * Valid encodings made by huff_encode.c (one symbol, small and full alphabets,
 * long codes, Fibonacci counts under the 15-bit limit) and altered ones
 * (flipped stream bits) and broken inputs (empty table asked for symbols, over-
 * subscribed and incomplete tables, a set padding nibble, a truncated stream,
 * flipped bits, the invalid code '1' of a one-symbol table, a short header).
 * Not part of the build; regenerate with
 *   cc -std=c11 -Iinclude -I. tests/fuzz/gen_huffman_corpus.c huffman/huff_*.c -lm \
 *      -o /tmp/gen && /tmp/gen tests/fuzz/corpus/huffman
 * The output is deterministic.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "huffman/huffman.h"

#define GEN_SEED 42
#include "tests/fuzz/gen_util.h"

#define MAXN 8000


/* header + table + stream for sym[0..n); returns the file size (0 on error) */
static size_t build(uint8_t *file, unsigned nsym, const uint8_t *sym, size_t n, unsigned lim)
{
    uint64_t f[DCZ_HUFF_MAX_SYMBOLS] = {0};
    uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
    for (size_t i = 0; i < n; i++) f[sym[i]]++;
    if (dcz_huff_lengths(f, nsym, lim, len) != DCZ_OK) return 0;
    file[0] = (uint8_t)(nsym - 1);
    file[1] = (uint8_t)n;
    file[2] = (uint8_t)(n >> 8);
    size_t tb = dcz_huff_table_bytes(nsym), used = 0;
    dcz_huff_table_write(len, nsym, file + 3);
    if (dcz_huff_encode(len, nsym, sym, n, file + 3 + tb, MAXN * 2, &used) != DCZ_OK) return 0;
    return 3 + tb + used;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: gen_huffman_corpus DIR\n"); return 1; }
    const char *dir = argv[1];
    static uint8_t file[3 + 128 + MAXN * 2], sym[MAXN];
    int err = 0;
    size_t sz;

    memset(sym, 0, 100);
    sz = build(file, 1, sym, 100, 15);
    err |= !sz || put(dir, "valid-one-symbol", file, sz);
    file[3 + 1] |= 0x01; /* a '1' bit: no code in a one-symbol table */
    err |= put(dir, "bad-one-symbol-code1", file, sz);

    for (size_t i = 0; i < 300; i++) sym[i] = (uint8_t)rnd(2);
    sz = build(file, 2, sym, 300, 15);
    err |= !sz || put(dir, "valid-two-symbols", file, sz);

    for (size_t i = 0; i < 500; i++) { unsigned s = 0; while (s < 15 && rnd(10) < 6) s++; sym[i] = (uint8_t)s; }
    sz = build(file, 16, sym, 500, 15);
    err |= !sz || put(dir, "valid-16-geometric", file, sz);
    sz = build(file, 16, sym, 500, 5);
    err |= !sz || put(dir, "valid-16-limit5", file, sz);

    for (size_t i = 0; i < 1000; i++) sym[i] = (uint8_t)rnd(256);
    sz = build(file, 256, sym, 1000, 15);
    err |= !sz || put(dir, "valid-256-uniform", file, sz);
    for (int k = 0; k < 8; k++) file[3 + 128 + 10 + rnd((unsigned)sz - 150)] ^= (uint8_t)(1u << rnd(8));
    err |= put(dir, "flipped-256-bits", file, sz);

    for (size_t i = 0; i < 4000; i++) { unsigned s = 0; while (s < 254 && rnd(100) < 55) s++; sym[i] = (uint8_t)s; }
    sym[0] = 255;
    sz = build(file, 256, sym, 4000, 15);
    err |= !sz || put(dir, "valid-256-long-codes", file, sz);
    err |= put(dir, "bad-256-truncated", file, sz - 5);

    /* Fibonacci counts: the unlimited code would be 17 bits deep */
    size_t n = 0;
    for (unsigned s = 0, a = 1, b = 1; s < 18; s++, b = a + b, a = b - a)
        for (unsigned k = 0; k < a; k++) sym[n++] = (uint8_t)s;
    sz = build(file, 18, sym, n, 15);
    err |= !sz || put(dir, "valid-18-fibonacci", file, sz);

    for (size_t i = 0; i < 777; i++) sym[i] = (uint8_t)rnd(37);
    sz = build(file, 37, sym, 777, 9);
    err |= !sz || put(dir, "valid-37-odd", file, sz);
    file[3 + 18] |= 0x03; /* padding nibble of an odd table */
    err |= put(dir, "bad-37-padding", file, sz);

    static const uint8_t empty0[] = { 4, 0, 0, 0, 0, 0 };
    static const uint8_t empty1[] = { 4, 1, 0, 0, 0, 0, 0xff };
    static const uint8_t over[] = { 2, 5, 0, 0x11, 0x10, 0xaa };
    static const uint8_t incomplete[] = { 3, 5, 0, 0x22, 0x20, 0x5a };
    static const uint8_t zero_n[] = { 4, 0, 0, 0x22, 0x23, 0x30 };
    static const uint8_t short_hdr[] = { 7, 1 };
    err |= put(dir, "valid-empty-table", empty0, sizeof empty0);
    err |= put(dir, "bad-empty-table-one-symbol", empty1, sizeof empty1);
    err |= put(dir, "bad-oversubscribed", over, sizeof over);
    err |= put(dir, "bad-incomplete", incomplete, sizeof incomplete);
    err |= put(dir, "valid-no-symbols", zero_n, sizeof zero_n);
    err |= put(dir, "bad-short-header", short_hdr, sizeof short_hdr);
    if (err) { fprintf(stderr, "gen_huffman_corpus: could not write %s\n", dir); return 1; }
    return 0;
}
