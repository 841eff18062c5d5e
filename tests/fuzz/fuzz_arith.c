/* fuzz_arith.c: libFuzzer target for the arithmetic decoding side (arith.h).
 *
 * Input layout: byte 0 selects the stream (bit 0 clear: a keep mask, set:
 * an index stream). A mask: bytes 1-2 rows, 3-4 columns (little-endian,
 * each 1 .. 1024, at most 2^16 flags), 5-6 the kept flags expected, then
 * the coded stream. Indices: byte 1 the width (1 + its low 3 bits), bytes
 * 2-3 the count, then the coded stream. Inputs shorter than the header are
 * ignored.
 *
 * Besides not crashing, it checks: a decoded mask has the expected kept
 * flags, in increasing positions; a successful decode re-encodes
 * (arith_encode.c) to a stream of exactly the same length that decodes to
 * the same symbols (the four closing bytes may differ: any value in the
 * final interval decodes alike). A violation aborts. Built by `make fuzz`;
 * the seed corpus in tests/fuzz/corpus/arith/ (made by
 * gen_arith_corpus.c) is replayed by `make test` through replay.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "huffman/arith.h"

#define MAX_FLAGS (1u << 16)

typedef struct marks {
    uint8_t *keep;
    uint32_t n;
    uint64_t last;
} marks;

static dcz_status mark(void *ctx, uint32_t weight, uint64_t pos)
{
    marks *m = (marks *)ctx;
    if (weight != m->n || (m->n && pos <= m->last) || m->keep[pos]) abort();
    m->keep[pos] = 1;
    m->last = pos;
    m->n++;
    return DCZ_OK;
}

static void fuzz_mask(const uint8_t *data, size_t size)
{
    if (size < 7) return;
    const uint32_t rows = (uint32_t)(data[1] | data[2] << 8), cols = (uint32_t)(data[3] | data[4] << 8);
    const uint32_t nnz = (uint32_t)(data[5] | data[6] << 8);
    if (rows == 0 || cols == 0 || rows > 1024 || cols > 1024 || rows * cols > MAX_FLAGS) return;
    const uint8_t *s = data + 7;
    const size_t len = size - 7;
    uint8_t *keep = calloc((size_t)rows * cols, 1);
    uint32_t *scratch = malloc(dcz_ac_mask_scratch_bytes(cols));
    if (!keep || !scratch) abort();
    marks m = { keep, 0, 0 };
    dcz_status st = dcz_ac_decode_mask(s, len, rows, cols, nnz, scratch, mark, &m);
    if (st == DCZ_OK) {
        if (m.n != nnz) abort();
        size_t need = 0, used = 0;
        if (dcz_ac_encode_mask(keep, rows, cols, NULL, 0, &need) != DCZ_OK || need != len) abort();
        uint8_t *enc = malloc(need);
        if (!enc || dcz_ac_encode_mask(keep, rows, cols, enc, need, &used) != DCZ_OK || used != need) abort();
        uint8_t *again = calloc((size_t)rows * cols, 1);
        if (!again) abort();
        marks m2 = { again, 0, 0 };
        if (dcz_ac_decode_mask(enc, need, rows, cols, nnz, scratch, mark, &m2) != DCZ_OK ||
            memcmp(again, keep, (size_t)rows * cols) != 0)
            abort();
        free(again);
        free(enc);
    } else if (st != DCZ_ERR_FORMAT) {
        abort();
    }
    free(keep);
    free(scratch);
}

static void fuzz_indices(const uint8_t *data, size_t size)
{
    if (size < 4) return;
    const unsigned bits = 1 + (data[1] & 7);
    const size_t n = (size_t)data[2] | (size_t)data[3] << 8;
    const uint8_t *s = data + 4;
    const size_t len = size - 4;
    uint8_t *out = malloc(n ? n : 1), *back = malloc(n ? n : 1);
    if (!out || !back) abort();
    dcz_status st = dcz_ac_decode_indices(s, len, bits, out, n);
    if (st == DCZ_OK) {
        size_t need = 0, used = 0;
        for (size_t i = 0; i < n; i++)
            if (out[i] >> bits) abort();
        if (dcz_ac_encode_indices(out, n, bits, NULL, 0, &need) != DCZ_OK || need != len) abort();
        uint8_t *enc = malloc(need);
        if (!enc || dcz_ac_encode_indices(out, n, bits, enc, need, &used) != DCZ_OK || used != need) abort();
        if (dcz_ac_decode_indices(enc, need, bits, back, n) != DCZ_OK || (n && memcmp(out, back, n) != 0))
            abort();
        free(enc);
    } else if (st != DCZ_ERR_FORMAT) {
        abort();
    }
    free(out);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (data[0] & 1) fuzz_indices(data, size);
    else fuzz_mask(data, size);
    return 0;
}
