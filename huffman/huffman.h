/* huffman.h: canonical, length-limited Huffman coding and the bit streams the
 * .dcz format is built from (docs/FORMAT.md, "Bit streams" and "Huffman").
 *
 * Decoding side (bit reader, table read, decoder) is part of libdcz and lives
 * in huff_decode.c; building codes and encoding lives in huff_encode.c and is
 * used by the toolchain only. Neither side depends on anything but libc.
 *
 * Conventions shared by both sides:
 * - A bit stream is packed MSB-first: the first bit of the stream is bit 7 of
 *   byte 0. A fixed-width value or a code is written from its most
 *   significant bit down. The last byte is padded with zero bits.
 * - Symbols are 0 .. nsym-1, nsym <= DCZ_HUFF_MAX_SYMBOLS.
 * - Code lengths are 0 (symbol absent) .. DCZ_HUFF_MAX_LEN.
 * - Canonical codes: codes are assigned in order of (length, symbol value),
 *   each code the previous plus one, shifted left when the length grows
 *   (as in DEFLATE, RFC 1951 section 3.2.2).
 * - A valid length table is complete (Kraft sum exactly 1), or has exactly
 *   one symbol of length 1 (a stream of one distinct symbol costs one bit per
 *   symbol), or has no symbol at all (valid only for an empty stream).
 * - Table serialization: the nsym lengths as 4-bit nibbles, two per byte, the
 *   first symbol in the high nibble; ceil(nsym / 2) bytes.
 *
 * Tested by tests/unit/test_huffman.c; fuzzed by tests/fuzz/fuzz_huffman.c.
 */
#ifndef DCZ_HUFFMAN_H
#define DCZ_HUFFMAN_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"

#define DCZ_HUFF_MAX_SYMBOLS 256
#define DCZ_HUFF_MAX_LEN 15
/* first-level decode table: 2^10 entries; 2^6 in a build for size
 * (DCZ_SMALL, make mcu: a microcontroller's decoders live on its stack) */
#ifdef DCZ_SMALL
#define DCZ_HUFF_FAST_BITS 6
#else
#define DCZ_HUFF_FAST_BITS 10
#endif

/* ---- bit reader (decode side) ---------------------------------------- */

typedef struct dcz_bitr {
    const uint8_t *p;  /* stream start */
    size_t len;        /* stream length in bytes */
    size_t pos;        /* next bit to read, from the stream start */
} dcz_bitr;

void dcz_bitr_init(dcz_bitr *r, const uint8_t *p, size_t len);
/* Reads n bits (0 <= n <= 32) MSB-first into *v. DCZ_ERR_FORMAT when the
 * stream has fewer than n bits left (nothing is consumed then). */
dcz_status dcz_bitr_read(dcz_bitr *r, unsigned n, uint32_t *v);
/* Reads count fixed-width values of width bits (1..8) into out. */
dcz_status dcz_bits_unpack(const uint8_t *in, size_t in_len, unsigned width,
                           uint8_t *out, size_t count);

/* ---- decode side ------------------------------------------------------ */

/* Bytes taken by a serialized table of nsym lengths: ceil(nsym / 2). */
size_t dcz_huff_table_bytes(unsigned nsym);

/* Reads nsym lengths from in (avail bytes) into len and validates them as
 * described above. DCZ_ERR_FORMAT on a short buffer or an invalid table. */
dcz_status dcz_huff_table_read(const uint8_t *in, size_t avail, unsigned nsym,
                               uint8_t *len);

/* DCZ_OK when len[0..nsym) is a valid length table (see above), else
 * DCZ_ERR_FORMAT. */
dcz_status dcz_huff_lengths_check(const uint8_t *len, unsigned nsym);

/* A table-driven decoder. Plain data: no pointers, may be copied or placed
 * in a caller's arena. */
typedef struct dcz_huff_decoder {
    unsigned nsym;
    uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
    /* fast[v] for the next DCZ_HUFF_FAST_BITS bits v:
     * (symbol << 4) | length when a code of length <= FAST_BITS matches,
     * 0 when the code is longer (the slow canonical walk is used then). */
    uint16_t fast[1u << DCZ_HUFF_FAST_BITS];
    /* canonical walk: per length, first code, count, and offset into sorted */
    uint16_t first_code[DCZ_HUFF_MAX_LEN + 1];
    uint16_t count[DCZ_HUFF_MAX_LEN + 1];
    uint16_t offset[DCZ_HUFF_MAX_LEN + 1];
    uint8_t sorted[DCZ_HUFF_MAX_SYMBOLS]; /* symbols by (length, value) */
} dcz_huff_decoder;

/* Builds a decoder from a length table (validated as by dcz_huff_table_read). */
dcz_status dcz_huff_decoder_init(dcz_huff_decoder *d, const uint8_t *len, unsigned nsym);

/* Decodes exactly n symbols from in (in_len bytes) into out. DCZ_ERR_FORMAT
 * when the stream ends early or holds a bit pattern that is no code. Bits
 * left over after the n-th symbol are ignored (padding). */
dcz_status dcz_huff_decode(const dcz_huff_decoder *d, const uint8_t *in, size_t in_len,
                           uint8_t *out, size_t n);

/* A coded stream read a few symbols at a time, for a reader that keeps no
 * decoded copy: dcz_huff_read decodes the next n symbols and dcz_huff_next
 * the next one, with dcz_huff_decode's refusals (a bit pattern that is no
 * code, a code past the stream's end); dcz_huff_decode is dcz_huff_read
 * over the whole stream. Plain data. */
typedef struct dcz_huff_reader {
    const uint8_t *in;
    size_t len, pos;   /* the stream, the next byte to load */
    uint64_t buf;      /* the next bits MSB-aligned: the top cnt are the stream's, the rest 0 */
    unsigned cnt;
} dcz_huff_reader;

void dcz_huff_reader_init(dcz_huff_reader *r, const uint8_t *in, size_t len);
dcz_status dcz_huff_next(const dcz_huff_decoder *d, dcz_huff_reader *r, unsigned *sym);
dcz_status dcz_huff_read(const dcz_huff_decoder *d, dcz_huff_reader *r, uint8_t *out, size_t n);

/* ---- encode side (toolchain only) ------------------------------------ */

/* Optimal length-limited code lengths for the given symbol frequencies
 * (package-merge). Symbols with frequency 0 get length 0. One used symbol
 * gets length 1; no used symbol gives all zeros. max_len in 1..15 and
 * 2^max_len >= number of used symbols, else DCZ_ERR_ARG. */
dcz_status dcz_huff_lengths(const uint64_t *freq, unsigned nsym, unsigned max_len,
                            uint8_t *len);

/* Canonical codes for a valid length table. */
dcz_status dcz_huff_codes(const uint8_t *len, unsigned nsym, uint16_t *code);

/* Writes the serialized table (dcz_huff_table_bytes(nsym) bytes) to out. */
void dcz_huff_table_write(const uint8_t *len, unsigned nsym, uint8_t *out);

/* Exact number of bits encoding sym[0..n) takes with these lengths. */
uint64_t dcz_huff_cost_bits(const uint8_t *len, const uint8_t *sym, size_t n);

/* Encodes n symbols. out has cap bytes; *used receives ceil(bits / 8).
 * DCZ_ERR_ARG when a symbol has no code; DCZ_ERR_NOMEM when cap is short. */
dcz_status dcz_huff_encode(const uint8_t *len, unsigned nsym, const uint8_t *sym, size_t n,
                           uint8_t *out, size_t cap, size_t *used);

/* Packs count values of width bits (1..8) MSB-first into out (cap bytes,
 * needs ceil(count * width / 8)). Values must fit the width (DCZ_ERR_ARG). */
dcz_status dcz_bits_pack(const uint8_t *vals, size_t count, unsigned width,
                         uint8_t *out, size_t cap);

/* Empirical entropy of the distribution in bits per symbol (0 when empty). */
double dcz_huff_entropy(const uint64_t *freq, unsigned nsym);

/* The floor of a position stream: H(p) / p bits per kept weight, H the
 * binary entropy, when each weight is kept at random with probability p
 * (the gap before a kept weight is then geometric, of entropy H(p) / p).
 * No coder stores such positions in fewer bits on average; positions with
 * structure (whole rows or columns pruned) can go below it. 0 for p >= 1,
 * infinity for p <= 0. */
double dcz_huff_gap_floor(double p);

#endif /* DCZ_HUFFMAN_H */
