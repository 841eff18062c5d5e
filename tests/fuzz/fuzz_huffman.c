/* fuzz_huffman.c: libFuzzer target for the Huffman decoding side (huffman.h).
 *
 * Input layout: byte 0 is nsym - 1 (1..256 symbols), bytes 1-2 the number of
 * symbols to decode (little-endian, at most 65535), then the serialized length
 * table (dcz_huff_table_bytes(nsym) bytes), then the coded stream. Inputs
 * shorter than the header are ignored.
 *
 * Besides not crashing, it checks: table_read and decoder_init agree on the
 * table; a successful decode re-encodes (huff_encode.c) to exactly the bits it
 * consumed; the one-at-a-time decoder (dcz_huff_next) gives the same status
 * and symbols; the stream unpacked at a fixed width packs back to itself. A
 * violation aborts. Built by `make fuzz`; the seed corpus in
 * tests/fuzz/corpus/huffman/ (made by gen_huffman_corpus.c) is replayed by
 * `make test` through replay.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "huffman/huffman.h"

static void check_decode(const uint8_t *len, unsigned nsym, const uint8_t *s, size_t slen,
                         size_t n)
{
    dcz_huff_decoder d;
    if (dcz_huff_decoder_init(&d, len, nsym) != DCZ_OK) abort();
    uint8_t *out = malloc(n ? n : 1);
    if (!out) return;
    const dcz_status st = dcz_huff_decode(&d, s, slen, out, n);
    dcz_huff_reader r;
    dcz_huff_reader_init(&r, s, slen);
    dcz_status one = DCZ_OK;
    for (size_t i = 0; i < n && one == DCZ_OK; i++) {
        unsigned v;
        if ((one = dcz_huff_next(&d, &r, &v)) == DCZ_OK && st == DCZ_OK && v != out[i]) abort();
    }
    if (one != st) abort();
    if (st == DCZ_OK) {
        uint64_t bits = dcz_huff_cost_bits(len, out, n);
        size_t cap = (size_t)((bits + 7) / 8), used = 0;
        if (cap > slen) abort();
        uint8_t *enc = malloc(cap ? cap : 1);
        if (enc) {
            if (dcz_huff_encode(len, nsym, out, n, enc, cap, &used) != DCZ_OK || used != cap)
                abort();
            size_t full = (size_t)(bits / 8);
            unsigned rest = (unsigned)(bits % 8);
            if (memcmp(enc, s, full) != 0) abort();
            if (rest && ((enc[full] ^ s[full]) >> (8 - rest)) != 0) abort();
            free(enc);
        }
    }
    free(out);
}

static void check_unpack(const uint8_t *s, size_t slen, unsigned width)
{
    if (slen > 4096) slen = 4096;
    size_t count = slen * 8 / width, nb = (count * width + 7) / 8;
    uint8_t *vals = malloc(count ? count : 1), *back = malloc(nb ? nb : 1);
    if (vals && back) {
        if (dcz_bits_unpack(s, slen, width, vals, count) != DCZ_OK) abort();
        if (dcz_bits_pack(vals, count, width, back, nb) != DCZ_OK) abort();
        size_t full = count * width / 8;
        unsigned rest = (unsigned)(count * width % 8);
        if (memcmp(back, s, full) != 0) abort();
        if (rest && ((back[full] ^ s[full]) >> (8 - rest)) != 0) abort();
    }
    free(vals);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    unsigned nsym = (unsigned)data[0] + 1;
    size_t n = (size_t)data[1] | (size_t)data[2] << 8;
    const uint8_t *p = data + 3;
    size_t avail = size - 3;
    uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
    size_t tb = dcz_huff_table_bytes(nsym);
    dcz_status st = dcz_huff_table_read(p, avail, nsym, len);
    if (avail >= tb && !((nsym & 1) && (p[nsym / 2] & 15))) {
        dcz_huff_decoder d;
        if (dcz_huff_decoder_init(&d, len, nsym) != st) abort();
    }
    if (avail >= tb) check_unpack(p + tb, avail - tb, 1 + (data[1] & 7));
    if (st != DCZ_OK) return 0;
    check_decode(len, nsym, p + tb, avail - tb, n);
    return 0;
}
