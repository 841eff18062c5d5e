/* huff_decode.c: the decoding half of huffman.h, part of libdcz: the MSB-first
 * bit reader, fixed-width unpacking, length-table reading and validation, and
 * a table-driven canonical Huffman decoder.
 *
 * Decoding reads the next DCZ_HUFF_FAST_BITS bits into a first-level table
 * that resolves every code of at most that many bits in one look-up; longer
 * codes fall back to a canonical walk over lengths FAST_BITS+1 .. 15 (a code
 * of length l is a valid code when code - first_code[l] < count[l]). Every
 * read is bounded by the input length, whatever the bytes hold; libc only,
 * nothing allocated.
 *
 * Tested by tests/unit/test_huffman.c (round trips against huff_encode.c,
 * truncated and random streams, table rejection) and fuzzed by
 * tests/fuzz/fuzz_huffman.c.
 */
#include <string.h>

#include "huffman/huffman.h"

#define FAST_BITS DCZ_HUFF_FAST_BITS
#define KRAFT_ONE (1u << DCZ_HUFF_MAX_LEN)

void dcz_bitr_init(dcz_bitr *r, const uint8_t *p, size_t len)
{
    r->p = p;
    r->len = p ? len : 0;
    r->pos = 0;
}

dcz_status dcz_bitr_read(dcz_bitr *r, unsigned n, uint32_t *v)
{
    if (!r || !v || n > 32) return DCZ_ERR_ARG;
    size_t byte = r->pos >> 3;
    unsigned off = (unsigned)(r->pos & 7);
    if (byte > r->len) return DCZ_ERR_FORMAT;
    size_t rem = r->len - byte;
    /* five or more bytes left always hold at least 33 bits past pos */
    if (rem < 5 && rem * 8 - (rem ? off : 0) < n) return DCZ_ERR_FORMAT;
    uint64_t acc = 0;
    unsigned need = n;
    while (need) {
        unsigned take = 8 - off;
        if (take > need) take = need;
        unsigned bits = ((unsigned)r->p[byte] >> (8 - off - take)) & ((1u << take) - 1);
        acc = (acc << take) | bits;
        need -= take;
        off += take;
        if (off == 8) { off = 0; byte++; }
    }
    r->pos += n;
    *v = (uint32_t)acc;
    return DCZ_OK;
}

dcz_status dcz_bits_unpack(const uint8_t *in, size_t in_len, unsigned width,
                           uint8_t *out, size_t count)
{
    if (width < 1 || width > 8) return DCZ_ERR_ARG;
    if (count == 0) return DCZ_OK;
    if (!out) return DCZ_ERR_ARG;
    if (count > SIZE_MAX / width) return DCZ_ERR_FORMAT;
    size_t bits = count * width;
    size_t need = bits / 8 + (bits % 8 != 0);
    if (need > in_len) return DCZ_ERR_FORMAT;
    if (!in) return DCZ_ERR_ARG;
    if (width == 8) {
        memcpy(out, in, count);
        return DCZ_OK;
    }
    /* acc holds `have` unread bits in its low end (higher bits are stale) */
    uint32_t acc = 0, mask = (1u << width) - 1;
    unsigned have = 0;
    size_t p = 0;
    for (size_t i = 0; i < count; i++) {
        if (have < width) {
            acc = (acc << 8) | in[p++];
            have += 8;
        }
        have -= width;
        out[i] = (uint8_t)((acc >> have) & mask);
    }
    return DCZ_OK;
}

size_t dcz_huff_table_bytes(unsigned nsym)
{
    return ((size_t)nsym + 1) / 2;
}

dcz_status dcz_huff_lengths_check(const uint8_t *len, unsigned nsym)
{
    uint32_t kraft = 0;
    unsigned used = 0, ones = 0;
    for (unsigned s = 0; s < nsym; s++) {
        unsigned l = len[s];
        if (l == 0) continue;
        if (l > DCZ_HUFF_MAX_LEN) return DCZ_ERR_FORMAT;
        kraft += KRAFT_ONE >> l;
        used++;
        ones += l == 1;
    }
    if (kraft == KRAFT_ONE) return DCZ_OK;
    if (used == 0 || (used == 1 && ones == 1)) return DCZ_OK;
    return DCZ_ERR_FORMAT;
}

dcz_status dcz_huff_table_read(const uint8_t *in, size_t avail, unsigned nsym,
                               uint8_t *len)
{
    if (nsym > DCZ_HUFF_MAX_SYMBOLS || (nsym && !len)) return DCZ_ERR_ARG;
    size_t nb = dcz_huff_table_bytes(nsym);
    if (avail < nb) return DCZ_ERR_FORMAT;
    if (nb && !in) return DCZ_ERR_ARG;
    for (unsigned s = 0; s < nsym; s++)
        len[s] = (uint8_t)((s & 1) ? in[s / 2] & 15 : in[s / 2] >> 4);
    /* the padding nibble of an odd table is zero, so each table has one form */
    if ((nsym & 1) && (in[nsym / 2] & 15)) return DCZ_ERR_FORMAT;
    return dcz_huff_lengths_check(len, nsym);
}

dcz_status dcz_huff_decoder_init(dcz_huff_decoder *d, const uint8_t *len, unsigned nsym)
{
    if (!d || nsym > DCZ_HUFF_MAX_SYMBOLS || (nsym && !len)) return DCZ_ERR_ARG;
    dcz_status st = dcz_huff_lengths_check(len, nsym);
    if (st != DCZ_OK) return st;

    memset(d, 0, sizeof *d);
    d->nsym = nsym;
    if (nsym) memcpy(d->len, len, nsym);
    for (unsigned s = 0; s < nsym; s++) d->count[len[s]]++;
    d->count[0] = 0;

    unsigned code = 0, off = 0;
    for (unsigned l = 1; l <= DCZ_HUFF_MAX_LEN; l++) {
        code = (code + d->count[l - 1]) << 1;
        d->first_code[l] = (uint16_t)code;
        d->offset[l] = (uint16_t)off;
        off += d->count[l];
    }
    /* symbols by (length, value); next[l] is the next free slot of length l */
    uint16_t next[DCZ_HUFF_MAX_LEN + 1];
    memcpy(next, d->offset, sizeof next);
    for (unsigned s = 0; s < nsym; s++)
        if (len[s]) d->sorted[next[len[s]]++] = (uint8_t)s;

    for (unsigned l = 1; l <= FAST_BITS; l++) {
        unsigned span = 1u << (FAST_BITS - l);
        for (unsigned i = 0; i < d->count[l]; i++) {
            unsigned sym = d->sorted[d->offset[l] + i];
            unsigned start = (d->first_code[l] + i) << (FAST_BITS - l);
            uint16_t e = (uint16_t)((sym << 4) | l);
            for (unsigned j = 0; j < span; j++) d->fast[start + j] = e;
        }
    }
    return DCZ_OK;
}

static inline uint64_t load_be64(const uint8_t *p)
{
    return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 |
           (uint64_t)p[3] << 32 | (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
           (uint64_t)p[6] << 8 | (uint64_t)p[7];
}

/* Matches the code at the top of buf: its length, 0 when no code matches. */
static inline unsigned match(const dcz_huff_decoder *d, uint64_t buf, unsigned *sym)
{
    unsigned e = d->fast[buf >> (64 - FAST_BITS)];
    if (e) {
        *sym = e >> 4;
        return e & 15;
    }
    for (unsigned l = FAST_BITS + 1; l <= DCZ_HUFF_MAX_LEN; l++) {
        uint32_t idx = (uint32_t)(buf >> (64 - l)) - d->first_code[l];
        if (idx < d->count[l]) {
            *sym = d->sorted[d->offset[l] + idx];
            return l;
        }
    }
    return 0;
}

void dcz_huff_reader_init(dcz_huff_reader *r, const uint8_t *in, size_t len)
{
    r->in = in;
    r->len = in ? len : 0;
    r->pos = 0;
    r->buf = 0;
    r->cnt = 0;
}

dcz_status dcz_huff_next(const dcz_huff_decoder *d, dcz_huff_reader *r, unsigned *sym)
{
    /* byte-wise refills, every code checked against the bits left */
    while (r->cnt <= 56 && r->pos < r->len) {
        r->buf |= (uint64_t)r->in[r->pos++] << (56 - r->cnt);
        r->cnt += 8;
    }
    const unsigned l = match(d, r->buf, sym);
    if (l == 0 || l > r->cnt) return DCZ_ERR_FORMAT;
    r->buf <<= l;
    r->cnt -= l;
    return DCZ_OK;
}

dcz_status dcz_huff_read(const dcz_huff_decoder *d, dcz_huff_reader *r, uint8_t *out, size_t n)
{
    /* buf holds the next stream bits MSB-aligned; the top cnt are valid, the
     * rest are zero or copies of the stream bits that follow */
    uint64_t buf = r->buf;
    unsigned cnt = r->cnt, sym;
    size_t pos = r->pos, i = 0;

    /* bulk: a refill from 8 whole bytes leaves >= 57 bits, enough for three
     * codes of up to 15 bits without further checks (a build for size,
     * DCZ_SMALL, reads every symbol by the tail's loop: the same symbols) */
#ifndef DCZ_SMALL
    const uint8_t *in = r->in;
    unsigned l;
    while (n - i >= 3 && r->len - pos >= 8) {
        buf |= load_be64(in + pos) >> cnt;
        unsigned k = (64 - cnt) >> 3;
        pos += k;
        cnt += 8 * k;
        for (int j = 0; j < 3; j++) {
            if (!(l = match(d, buf, &sym))) return DCZ_ERR_FORMAT;
            out[i++] = (uint8_t)sym;
            buf <<= l;
            cnt -= l;
        }
    }
#endif
    /* the tail a symbol at a time, from the stream's bits alone */
    r->buf = cnt ? buf & ~(~(uint64_t)0 >> cnt) : 0;
    r->cnt = cnt;
    r->pos = pos;
    for (; i < n; i++) {
        dcz_status s = dcz_huff_next(d, r, &sym);
        if (s != DCZ_OK) return s;
        out[i] = (uint8_t)sym;
    }
    return DCZ_OK;
}

dcz_status dcz_huff_decode(const dcz_huff_decoder *d, const uint8_t *in, size_t in_len,
                           uint8_t *out, size_t n)
{
    if (!d || (n && !out) || (in_len && !in)) return DCZ_ERR_ARG;
    dcz_huff_reader r;
    dcz_huff_reader_init(&r, in, in_len);
    return dcz_huff_read(d, &r, out, n);
}
