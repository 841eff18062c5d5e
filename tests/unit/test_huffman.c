/* test_huffman.c: unit tests for huffman/ (huffman.h).
 *
 * Round trips (encode with huff_encode.c, decode with huff_decode.c) on random
 * and geometric inputs of every alphabet size; optimality of the code lengths
 * against a brute-force search on small alphabets; the length limit on
 * Fibonacci frequencies; canonical code order; table serialization and
 * rejection of invalid tables; truncated and random streams, where the
 * table-driven decoder must agree with a bit-by-bit reference decoder written
 * here; fixed-width packing; entropy bounds; the floor of positions kept at
 * random (dcz_huff_gap_floor) against the geometric gap's entropy summed.
 * Deterministic (fixed seeds).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "huffman/huffman.h"
#include "tests/check.h"
#include "tests/unit/test_util.h"

/* ---- helpers ----------------------------------------------------------- */


/* Kraft sum in units of 2^-15; -1 when a length exceeds 15. */
static long kraft_units(const uint8_t *len, unsigned nsym)
{
    long k = 0;
    for (unsigned s = 0; s < nsym; s++) {
        if (len[s] > DCZ_HUFF_MAX_LEN) return -1;
        if (len[s]) k += 1L << (DCZ_HUFF_MAX_LEN - len[s]);
    }
    return k;
}

static unsigned count_used(const uint64_t *freq, unsigned nsym)
{
    unsigned m = 0;
    for (unsigned s = 0; s < nsym; s++) m += freq[s] != 0;
    return m;
}

static unsigned max_length(const uint8_t *len, unsigned nsym)
{
    unsigned mx = 0;
    for (unsigned s = 0; s < nsym; s++) if (len[s] > mx) mx = len[s];
    return mx;
}

static unsigned ceil_log2(unsigned m)
{
    unsigned b = 0;
    while ((1u << b) < m) b++;
    return b;
}

/* Exact-size heap copy so that reads past the end trip the sanitizers. */
static uint8_t *exact_copy(const uint8_t *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

/* Reference decoder: reads one bit at a time and searches the code table. */
static dcz_status ref_decode(const uint8_t *len, unsigned nsym, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t n)
{
    uint16_t code[DCZ_HUFF_MAX_SYMBOLS];
    if (dcz_huff_codes(len, nsym, code) != DCZ_OK) return DCZ_ERR_ARG;
    dcz_bitr r;
    dcz_bitr_init(&r, in, in_len);
    for (size_t i = 0; i < n; i++) {
        uint32_t c = 0;
        int found = 0;
        for (unsigned l = 1; l <= DCZ_HUFF_MAX_LEN && !found; l++) {
            uint32_t b;
            if (dcz_bitr_read(&r, 1, &b) != DCZ_OK) return DCZ_ERR_FORMAT;
            c = (c << 1) | b;
            for (unsigned s = 0; s < nsym; s++)
                if (len[s] == l && code[s] == c) { out[i] = (uint8_t)s; found = 1; break; }
        }
        if (!found) return DCZ_ERR_FORMAT;
    }
    return DCZ_OK;
}

/* Builds lengths from the symbols' counts, encodes, decodes from an exact-size
 * buffer and compares. Returns 0 on success (failures are CHECKed here). */
static int roundtrip(const uint8_t *sym, size_t n, unsigned nsym, unsigned max_len,
                     const char *what)
{
    uint64_t freq[DCZ_HUFF_MAX_SYMBOLS] = {0};
    for (size_t i = 0; i < n; i++) freq[sym[i]]++;
    uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
    dcz_status st = dcz_huff_lengths(freq, nsym, max_len, len);
    CHECK(st == DCZ_OK, "%s: lengths status %d (nsym %u max_len %u)", what, st, nsym, max_len);
    if (st != DCZ_OK) return 1;
    CHECK(max_length(len, nsym) <= max_len, "%s: max length %u > %u", what,
          max_length(len, nsym), max_len);
    uint64_t bits = dcz_huff_cost_bits(len, sym, n);
    size_t need = (size_t)((bits + 7) / 8);
    uint8_t *enc = malloc(need ? need : 1);
    uint8_t *dec = malloc(n ? n : 1);
    int fail = 1;
    if (!enc || !dec) { CHECK(0, "%s: out of memory", what); goto done; }
    size_t used = 0;
    st = dcz_huff_encode(len, nsym, sym, n, enc, need, &used);
    CHECK(st == DCZ_OK, "%s: encode status %d", what, st);
    CHECK(used == need, "%s: used %zu, expected %zu", what, used, need);
    if (st != DCZ_OK) goto done;
    if (need > 0) {
        size_t u2 = 0;
        st = dcz_huff_encode(len, nsym, sym, n, enc, need - 1, &u2);
        CHECK(st == DCZ_ERR_NOMEM, "%s: short cap gave %d", what, st);
        st = dcz_huff_encode(len, nsym, sym, n, enc, need, &used);
        if (st != DCZ_OK) goto done;
    }
    uint8_t tab[128];
    uint8_t len2[DCZ_HUFF_MAX_SYMBOLS];
    dcz_huff_table_write(len, nsym, tab);
    st = dcz_huff_table_read(tab, dcz_huff_table_bytes(nsym), nsym, len2);
    CHECK(st == DCZ_OK && memcmp(len, len2, nsym) == 0, "%s: table round trip (%d)", what, st);
    dcz_huff_decoder d;
    st = dcz_huff_decoder_init(&d, len2, nsym);
    CHECK(st == DCZ_OK, "%s: decoder_init %d", what, st);
    if (st != DCZ_OK) goto done;
    uint8_t *in = exact_copy(enc, used);
    if (!in) goto done;
    st = dcz_huff_decode(&d, in, used, dec, n);
    CHECK(st == DCZ_OK, "%s: decode status %d (n %zu)", what, st, n);
    size_t bad = n;
    for (size_t i = 0; st == DCZ_OK && i < n; i++) if (dec[i] != sym[i]) { bad = i; break; }
    CHECK(bad == n, "%s: first mismatch at %zu: %u != %u", what, bad,
          bad < n ? dec[bad] : 0, bad < n ? sym[bad] : 0);
    /* a stream one byte short lacks bits for the last symbol(s) */
    if (used > 0) {
        st = dcz_huff_decode(&d, in, used - 1, dec, n);
        CHECK(st == DCZ_ERR_FORMAT, "%s: truncated stream gave %d", what, st);
    }
    free(in);
    fail = bad != n;
done:
    free(enc);
    free(dec);
    return fail;
}

/* ---- bit streams ------------------------------------------------------- */

static void test_bitr(void)
{
    rng r = { 1 };
    for (int iter = 0; iter < 200; iter++) {
        size_t nb = rng_below(&r, 20);
        uint8_t buf[20];
        for (size_t i = 0; i < nb; i++) buf[i] = (uint8_t)rng_next(&r);
        uint8_t *in = exact_copy(buf, nb);
        REQUIRE(in, "oom");
        dcz_bitr br;
        dcz_bitr_init(&br, in, nb);
        size_t pos = 0, total = nb * 8;
        for (;;) {
            unsigned k = (unsigned)rng_below(&r, 33);
            uint32_t v = 0xdeadbeef;
            dcz_status st = dcz_bitr_read(&br, k, &v);
            if (pos + k > total) {
                CHECK(st == DCZ_ERR_FORMAT, "over-read of %u at %zu/%zu gave %d", k, pos, total, st);
                CHECK(br.pos == pos, "over-read consumed bits");
                uint32_t rest;
                st = dcz_bitr_read(&br, (unsigned)(total - pos), &rest);
                CHECK(st == DCZ_OK, "reading the exact remainder failed");
                break;
            }
            uint32_t want = 0;
            for (unsigned b = 0; b < k; b++, pos++)
                want = (want << 1) | ((in[pos / 8] >> (7 - pos % 8)) & 1);
            CHECK(st == DCZ_OK && v == want, "read %u: got %08x want %08x", k, v, want);
            if (st != DCZ_OK) break;
        }
        free(in);
    }
    uint32_t v;
    dcz_bitr br;
    dcz_bitr_init(&br, NULL, 0);
    CHECK(dcz_bitr_read(&br, 0, &v) == DCZ_OK && v == 0, "zero bits from empty");
    CHECK(dcz_bitr_read(&br, 1, &v) == DCZ_ERR_FORMAT, "one bit from empty");
    CHECK(dcz_bitr_read(&br, 33, &v) == DCZ_ERR_ARG, "33 bits");
}

static void test_bits_pack(void)
{
    static const uint8_t vals3[8] = { 1, 2, 3, 4, 5, 6, 7, 0 };
    uint8_t out[3];
    REQUIRE(dcz_bits_pack(vals3, 8, 3, out, 3) == DCZ_OK, "pack width 3");
    CHECK(out[0] == 0x29 && out[1] == 0xcb && out[2] == 0xb8, "width 3: %02x %02x %02x",
          out[0], out[1], out[2]);

    rng r = { 2 };
    static const size_t counts[] = { 0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 33, 1001, 4099 };
    for (unsigned w = 1; w <= 8; w++) {
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            size_t n = counts[ci], nb = (n * w + 7) / 8;
            uint8_t *v = malloc(n + 1), *p = malloc(nb + 1), *u = malloc(n + 1);
            REQUIRE(v && p && u, "oom");
            for (size_t i = 0; i < n; i++)
                v[i] = (uint8_t)((i % 3 == 0) ? (1u << w) - 1 : rng_below(&r, 1u << w));
            dcz_status st = dcz_bits_pack(v, n, w, p, nb);
            CHECK(st == DCZ_OK, "pack w %u n %zu: %d", w, n, st);
            if (nb) {
                unsigned padbits = (unsigned)(nb * 8 - n * w);
                CHECK((p[nb - 1] & ((1u << padbits) - 1)) == 0, "padding not zero w %u n %zu", w, n);
                CHECK(dcz_bits_pack(v, n, w, p, nb - 1) == DCZ_ERR_NOMEM, "short cap w %u", w);
            }
            uint8_t *in = exact_copy(p, nb);
            REQUIRE(in, "oom");
            st = dcz_bits_unpack(in, nb, w, u, n);
            CHECK(st == DCZ_OK && (n == 0 || memcmp(u, v, n) == 0), "unpack w %u n %zu", w, n);
            if (nb) CHECK(dcz_bits_unpack(in, nb - 1, w, u, n) == DCZ_ERR_FORMAT,
                          "short unpack w %u n %zu", w, n);
            if (w < 8 && n) {
                v[n / 2] = (uint8_t)(1u << w);
                CHECK(dcz_bits_pack(v, n, w, p, nb) == DCZ_ERR_ARG, "value too wide w %u", w);
            }
            free(in); free(v); free(p); free(u);
        }
    }
    CHECK(dcz_bits_pack(vals3, 8, 0, out, 3) == DCZ_ERR_ARG, "width 0");
    CHECK(dcz_bits_pack(vals3, 8, 9, out, 3) == DCZ_ERR_ARG, "width 9");
    CHECK(dcz_bits_unpack(out, 3, 9, out, 1) == DCZ_ERR_ARG, "unpack width 9");
}

/* ---- code construction ------------------------------------------------- */

static void test_lengths_args(void)
{
    uint64_t f[300] = {0};
    uint8_t len[300];
    for (int i = 0; i < 5; i++) f[i] = 1;
    CHECK(dcz_huff_lengths(f, 5, 0, len) == DCZ_ERR_ARG, "max_len 0");
    CHECK(dcz_huff_lengths(f, 5, 16, len) == DCZ_ERR_ARG, "max_len 16");
    CHECK(dcz_huff_lengths(f, 5, 2, len) == DCZ_ERR_ARG, "5 symbols in 2 bits");
    CHECK(dcz_huff_lengths(f, 4, 2, len) == DCZ_OK && len[0] == 2 && len[1] == 2 &&
          len[2] == 2 && len[3] == 2, "4 symbols in 2 bits");
    CHECK(dcz_huff_lengths(f, 257, 15, len) == DCZ_ERR_ARG, "257 symbols");
    /* ties are broken by symbol value: lower symbols take the longer codes */
    uint8_t a[5], b[5];
    CHECK(dcz_huff_lengths(f, 5, 15, a) == DCZ_OK, "5 equal");
    CHECK(dcz_huff_lengths(f, 5, 15, b) == DCZ_OK && memcmp(a, b, 5) == 0, "deterministic");
    CHECK(a[0] == 3 && a[1] == 3 && a[2] == 2 && a[3] == 2 && a[4] == 2,
          "5 equal: %u %u %u %u %u", a[0], a[1], a[2], a[3], a[4]);
    /* huge frequencies must not overflow */
    uint64_t big[4] = { UINT64_MAX, UINT64_MAX, UINT64_MAX / 2, 1 };
    CHECK(dcz_huff_lengths(big, 4, 15, len) == DCZ_OK && kraft_units(len, 4) == 1L << 15 &&
          len[0] <= len[2] && len[2] <= len[3], "huge frequencies: %u %u %u %u",
          len[0], len[1], len[2], len[3]);
}

static long best_cost;

static void brute(const uint64_t *f, unsigned m, unsigned i, unsigned maxl, long kraft,
                  long cost)
{
    if (kraft > 1L << DCZ_HUFF_MAX_LEN || cost >= best_cost) return;
    if (i == m) { best_cost = cost; return; }
    for (unsigned l = 1; l <= maxl; l++)
        brute(f, m, i + 1, maxl, kraft + (1L << (DCZ_HUFF_MAX_LEN - l)), cost + (long)f[i] * l);
}

static void test_optimal_small(void)
{
    rng r = { 3 };
    int fails = 0;
    for (int iter = 0; iter < 400 && fails < 5; iter++) {
        unsigned nsym = 2 + (unsigned)rng_below(&r, 8); /* 2..9 with zeros: <= 7 used */
        uint64_t f[9] = {0}, used_f[9];
        unsigned m = 0;
        for (unsigned s = 0; s < nsym; s++) {
            if (m < 7 && rng_below(&r, 5) != 0) {
                f[s] = 1 + rng_below(&r, iter % 2 ? 1000 : 20);
                used_f[m++] = f[s];
            }
        }
        if (m < 2) continue;
        unsigned lim = ceil_log2(m) + (unsigned)rng_below(&r, 8 - ceil_log2(m));
        if (lim > 7) lim = 7;
        uint8_t len[9];
        dcz_status st = dcz_huff_lengths(f, nsym, lim, len);
        CHECK(st == DCZ_OK, "status %d", st);
        if (st != DCZ_OK) { fails++; continue; }
        long cost = 0;
        for (unsigned s = 0; s < nsym; s++) {
            cost += (long)f[s] * len[s];
            CHECK((f[s] == 0) == (len[s] == 0), "symbol %u freq %llu len %u", s,
                  (unsigned long long)f[s], len[s]);
        }
        best_cost = 1L << 60;
        brute(used_f, m, 0, lim < m - 1 ? lim : m - 1, 0, 0);
        CHECK(cost == best_cost, "m %u limit %u: cost %ld, optimum %ld", m, lim, cost, best_cost);
        CHECK(kraft_units(len, nsym) == 1L << 15, "Kraft sum not 1");
        CHECK(max_length(len, nsym) <= lim, "limit exceeded");
        if (cost != best_cost) fails++;
    }
}

static void test_length_limit_fibonacci(void)
{
    uint64_t fib[48];
    fib[0] = 1; fib[1] = 1;
    for (int i = 2; i < 48; i++) fib[i] = fib[i - 1] + fib[i - 2];
    uint8_t len[48];
    /* unlimited: the Huffman tree of Fibonacci weights is a chain */
    for (unsigned m = 2; m <= 16; m++) {
        REQUIRE(dcz_huff_lengths(fib, m, 15, len) == DCZ_OK, "fib m %u", m);
        CHECK(max_length(len, m) == m - 1, "fib m %u: depth %u", m, max_length(len, m));
        CHECK(kraft_units(len, m) == 1L << 15, "fib m %u: Kraft", m);
    }
    rng r = { 4 };
    for (unsigned lim = 4; lim <= 15; lim++) {
        for (unsigned m = lim + 2; m <= 40 && m <= (1u << lim); m += 3) {
            dcz_status st = dcz_huff_lengths(fib, m, lim, len);
            CHECK(st == DCZ_OK, "limit %u m %u: %d", lim, m, st);
            if (st != DCZ_OK) continue;
            CHECK(max_length(len, m) == lim, "limit %u m %u: max length %u", lim, m,
                  max_length(len, m));
            CHECK(kraft_units(len, m) == 1L << 15, "limit %u m %u: Kraft", lim, m);
            for (unsigned s = 1; s < m; s++)
                CHECK(len[s] <= len[s - 1], "limit %u m %u: length grows with frequency", lim, m);
            /* round trip through the long-code path: every symbol at least once */
            size_t n = 3000;
            uint8_t sym[3000];
            for (size_t i = 0; i < n; i++)
                sym[i] = (uint8_t)(i < m ? i : m - 1 - rng_below(&r, rng_below(&r, m) + 1));
            roundtrip(sym, n, m, lim, "fibonacci");
        }
    }
}

static void test_canonical(void)
{
    static const uint8_t rfc_len[8] = { 3, 3, 3, 3, 3, 2, 4, 4 };
    static const uint16_t rfc_code[8] = { 2, 3, 4, 5, 6, 0, 14, 15 };
    uint16_t code[DCZ_HUFF_MAX_SYMBOLS];
    REQUIRE(dcz_huff_codes(rfc_len, 8, code) == DCZ_OK, "RFC 1951 example");
    CHECK(memcmp(code, rfc_code, sizeof rfc_code) == 0, "RFC 1951 codes differ");
    static const uint8_t over[3] = { 1, 1, 1 };
    CHECK(dcz_huff_codes(over, 3, code) == DCZ_ERR_ARG, "over-subscribed codes");

    rng r = { 5 };
    for (int iter = 0; iter < 300; iter++) {
        unsigned nsym = 1 + (unsigned)rng_below(&r, 256);
        uint64_t f[DCZ_HUFF_MAX_SYMBOLS];
        for (unsigned s = 0; s < nsym; s++)
            f[s] = rng_below(&r, 3) ? 1 + (rng_next(&r) >> rng_below(&r, 64)) : 0;
        unsigned m = count_used(f, nsym);
        unsigned lim = m ? ceil_log2(m) : 1;
        if (lim < 1) lim = 1;
        lim += (unsigned)rng_below(&r, 16 - lim);
        uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
        REQUIRE(dcz_huff_lengths(f, nsym, lim, len) == DCZ_OK, "lengths");
        REQUIRE(dcz_huff_codes(len, nsym, code) == DCZ_OK, "codes");
        int prev = -1;
        for (unsigned l = 1; l <= DCZ_HUFF_MAX_LEN; l++) {
            for (unsigned s = 0; s < nsym; s++) {
                if (len[s] != l) continue;
                if (prev >= 0) {
                    uint32_t want = (uint32_t)(code[prev] + 1) << (l - len[prev]);
                    CHECK(code[s] == want, "symbol %u: code %u, want %u", s, code[s], want);
                } else {
                    CHECK(code[s] == 0, "first code %u", code[s]);
                }
                CHECK(code[s] < (1u << l), "code %u does not fit %u bits", code[s], l);
                prev = (int)s;
            }
        }
    }
}

/* ---- tables ------------------------------------------------------------ */

static void test_table_roundtrip(void)
{
    CHECK(dcz_huff_table_bytes(0) == 0 && dcz_huff_table_bytes(1) == 1 &&
          dcz_huff_table_bytes(2) == 1 && dcz_huff_table_bytes(255) == 128 &&
          dcz_huff_table_bytes(256) == 128, "table_bytes");
    static const uint8_t l4[4] = { 1, 2, 3, 3 }, l3[3] = { 1, 2, 2 };
    uint8_t b[128], back[DCZ_HUFF_MAX_SYMBOLS];
    dcz_huff_table_write(l4, 4, b);
    CHECK(b[0] == 0x12 && b[1] == 0x33, "4-symbol table bytes %02x %02x", b[0], b[1]);
    dcz_huff_table_write(l3, 3, b);
    CHECK(b[0] == 0x12 && b[1] == 0x20, "3-symbol table bytes %02x %02x", b[0], b[1]);

    rng r = { 6 };
    for (unsigned nsym = 1; nsym <= 256; nsym++) {
        uint64_t f[DCZ_HUFF_MAX_SYMBOLS];
        for (unsigned s = 0; s < nsym; s++)
            f[s] = rng_below(&r, 4) ? rng_below(&r, 1u << rng_below(&r, 20)) : 0;
        uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
        REQUIRE(dcz_huff_lengths(f, nsym, 15, len) == DCZ_OK, "lengths nsym %u", nsym);
        dcz_huff_table_write(len, nsym, b);
        size_t nb = dcz_huff_table_bytes(nsym);
        uint8_t *in = exact_copy(b, nb);
        REQUIRE(in, "oom");
        dcz_status st = dcz_huff_table_read(in, nb, nsym, back);
        CHECK(st == DCZ_OK && memcmp(len, back, nsym) == 0, "nsym %u: read %d", nsym, st);
        CHECK(dcz_huff_table_read(in, nb - 1, nsym, back) == DCZ_ERR_FORMAT, "short nsym %u", nsym);
        free(in);
    }
}

static dcz_status read_lengths(const uint8_t *len, unsigned nsym)
{
    uint8_t b[128], back[DCZ_HUFF_MAX_SYMBOLS];
    dcz_huff_table_write(len, nsym, b);
    return dcz_huff_table_read(b, dcz_huff_table_bytes(nsym), nsym, back);
}

static void test_table_reject(void)
{
    static const uint8_t over[3] = { 1, 1, 1 }, over2[4] = { 1, 2, 2, 2 };
    static const uint8_t incomplete[3] = { 2, 2, 2 }, inc2[5] = { 1, 2, 0, 4, 4 };
    static const uint8_t single2[3] = { 0, 2, 0 }, two_single[4] = { 1, 0, 0, 1 };
    static const uint8_t single1[5] = { 0, 0, 0, 1, 0 }, none[5] = { 0 };
    static const uint8_t deep[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 15 };
    CHECK(read_lengths(over, 3) == DCZ_ERR_FORMAT, "over-subscribed");
    CHECK(read_lengths(over2, 4) == DCZ_ERR_FORMAT, "over-subscribed 2");
    CHECK(read_lengths(incomplete, 3) == DCZ_ERR_FORMAT, "incomplete");
    CHECK(read_lengths(inc2, 5) == DCZ_ERR_FORMAT, "incomplete 2");
    CHECK(read_lengths(single2, 3) == DCZ_ERR_FORMAT, "single symbol of length 2");
    CHECK(read_lengths(two_single, 4) == DCZ_OK, "two symbols of length 1");
    CHECK(read_lengths(single1, 5) == DCZ_OK, "single symbol of length 1");
    CHECK(read_lengths(none, 5) == DCZ_OK, "no symbol");
    CHECK(read_lengths(deep, 16) == DCZ_OK, "lengths up to 15");
    CHECK(read_lengths(deep, 15) == DCZ_ERR_FORMAT, "lengths up to 15, incomplete");

    uint8_t back[DCZ_HUFF_MAX_SYMBOLS];
    static const uint8_t pad_bad[2] = { 0x11, 0x01 }; /* {1,1,pad 1} */
    CHECK(dcz_huff_table_read(pad_bad, 2, 3, back) == DCZ_ERR_FORMAT, "padding nibble set");
    static const uint8_t pad_ok[2] = { 0x11, 0x00 };
    CHECK(dcz_huff_table_read(pad_ok, 2, 3, back) == DCZ_OK, "zero padding nibble");
    CHECK(dcz_huff_table_read(pad_ok, 1, 3, back) == DCZ_ERR_FORMAT, "short table");
    CHECK(dcz_huff_table_read(pad_ok, 2, 257, back) == DCZ_ERR_ARG, "257 symbols");
    CHECK(dcz_huff_table_read(NULL, 0, 0, back) == DCZ_OK, "empty alphabet");

    /* lengths above 15 cannot be serialized; the decoder refuses them too */
    uint8_t l16[3] = { 1, 2, 16 };
    dcz_huff_decoder d;
    CHECK(dcz_huff_decoder_init(&d, l16, 3) == DCZ_ERR_FORMAT, "length 16");
    CHECK(dcz_huff_decoder_init(&d, over, 3) == DCZ_ERR_FORMAT, "decoder: over-subscribed");
    CHECK(dcz_huff_decoder_init(&d, incomplete, 3) == DCZ_ERR_FORMAT, "decoder: incomplete");
}

/* ---- encode / decode --------------------------------------------------- */

static void test_roundtrip_random(void)
{
    rng r = { 7 };
    uint8_t *sym = malloc(100000);
    REQUIRE(sym, "oom");
    int fails = 0;
    for (int iter = 0; iter < 400 && fails < 5; iter++) {
        unsigned nsym = iter < 256 ? (unsigned)iter + 1 : 1 + (unsigned)rng_below(&r, 256);
        size_t n;
        switch (iter % 5) {
        case 0: n = 0; break;
        case 1: n = 100000; break;
        default: n = (size_t)exp(rng_unit(&r) * log(100000.0)); break;
        }
        if (iter % 20 == 3) n = rng_below(&r, 4);
        unsigned mode = (unsigned)rng_below(&r, 3);
        for (size_t i = 0; i < n; i++) {
            uint64_t a = rng_below(&r, nsym), b = rng_below(&r, nsym);
            sym[i] = (uint8_t)(mode == 0 ? a : mode == 1 ? a * b / nsym : (a < b ? a : b));
        }
        uint64_t f[DCZ_HUFF_MAX_SYMBOLS] = {0};
        for (size_t i = 0; i < n; i++) f[sym[i]]++;
        unsigned m = count_used(f, nsym), lo = ceil_log2(m);
        if (lo < 1) lo = 1;
        unsigned lim = rng_below(&r, 2) ? 15 : lo + (unsigned)rng_below(&r, 16 - lo);
        fails += roundtrip(sym, n, nsym, lim, "random");
    }
    free(sym);
}

static void test_roundtrip_geometric(void)
{
    static const double q[] = { 0.3, 0.5, 0.7, 0.9, 0.97, 0.995 };
    rng r = { 8 };
    uint8_t *sym = malloc(100000);
    REQUIRE(sym, "oom");
    for (unsigned qi = 0; qi < sizeof q / sizeof q[0]; qi++) {
        for (unsigned lim = 8; lim <= 15; lim += 7) {
            unsigned nsym = 256;
            size_t n = 100000;
            for (size_t i = 0; i < n; i++) {
                unsigned s = 0;
                while (s < nsym - 1 && rng_unit(&r) < q[qi]) s++;
                sym[i] = (uint8_t)s;
            }
            roundtrip(sym, n, nsym, lim, "geometric");
        }
    }
    free(sym);
}

static void test_single_symbol(void)
{
    uint64_t f[10] = {0};
    f[7] = 1000;
    uint8_t len[10];
    REQUIRE(dcz_huff_lengths(f, 10, 15, len) == DCZ_OK, "lengths");
    for (unsigned s = 0; s < 10; s++)
        CHECK(len[s] == (s == 7 ? 1 : 0), "symbol %u length %u", s, len[s]);
    uint8_t sym[1000], enc[125], dec[1000];
    memset(sym, 7, sizeof sym);
    size_t used = 0;
    REQUIRE(dcz_huff_encode(len, 10, sym, 1000, enc, sizeof enc, &used) == DCZ_OK, "encode");
    CHECK(used == 125, "used %zu", used);
    int zero = 1;
    for (size_t i = 0; i < used; i++) zero &= enc[i] == 0;
    CHECK(zero, "single-symbol stream is not all zero bits");
    dcz_huff_decoder d;
    REQUIRE(dcz_huff_decoder_init(&d, len, 10) == DCZ_OK, "decoder");
    CHECK(dcz_huff_decode(&d, enc, used, dec, 1000) == DCZ_OK && memcmp(dec, sym, 1000) == 0,
          "decode");
    CHECK(roundtrip(sym, 1000, 10, 1, "single") == 0, "round trip with limit 1");
    static const uint8_t one[1] = { 0x80 }, zeros[1] = { 0 }, low[1] = { 0x01 };
    CHECK(dcz_huff_decode(&d, one, 1, dec, 1) == DCZ_ERR_FORMAT, "code '1' is no code");
    CHECK(dcz_huff_decode(&d, low, 1, dec, 7) == DCZ_OK, "7 zero bits then padding");
    CHECK(dcz_huff_decode(&d, low, 1, dec, 8) == DCZ_ERR_FORMAT, "eighth bit is '1'");
    CHECK(dcz_huff_decode(&d, zeros, 1, dec, 8) == DCZ_OK, "8 symbols from one byte");
    CHECK(dcz_huff_decode(&d, zeros, 1, dec, 9) == DCZ_ERR_FORMAT, "9 symbols from one byte");
}

static void test_empty(void)
{
    uint64_t f[4] = {0};
    uint8_t len[4] = { 9, 9, 9, 9 };
    REQUIRE(dcz_huff_lengths(f, 4, 15, len) == DCZ_OK, "lengths");
    CHECK(len[0] == 0 && len[1] == 0 && len[2] == 0 && len[3] == 0, "all zero");
    size_t used = 99;
    CHECK(dcz_huff_encode(len, 4, NULL, 0, NULL, 0, &used) == DCZ_OK && used == 0, "encode");
    CHECK(dcz_huff_cost_bits(len, NULL, 0) == 0, "cost");
    dcz_huff_decoder d;
    REQUIRE(dcz_huff_decoder_init(&d, len, 4) == DCZ_OK, "decoder");
    uint8_t out[1];
    static const uint8_t z[2] = { 0, 0 };
    CHECK(dcz_huff_decode(&d, NULL, 0, out, 0) == DCZ_OK, "decode nothing");
    CHECK(dcz_huff_decode(&d, z, 2, out, 1) == DCZ_ERR_FORMAT, "decode from empty table");
    uint8_t s0 = 0;
    CHECK(dcz_huff_encode(len, 4, &s0, 1, out, 1, &used) == DCZ_ERR_ARG, "encode absent symbol");
    CHECK(dcz_huff_decoder_init(&d, NULL, 0) == DCZ_OK, "empty alphabet decoder");
    CHECK(dcz_huff_decode(&d, z, 2, out, 1) == DCZ_ERR_FORMAT, "decode from empty alphabet");
}

static void test_encode_args(void)
{
    static const uint8_t len[4] = { 1, 2, 3, 3 }, bad[3] = { 1, 1, 1 };
    uint8_t sym[2] = { 1, 4 }, out[8];
    size_t used;
    CHECK(dcz_huff_encode(len, 4, sym, 2, out, 8, &used) == DCZ_ERR_ARG, "symbol >= nsym");
    sym[1] = 3;
    CHECK(dcz_huff_encode(len, 4, sym, 2, out, 8, &used) == DCZ_OK && used == 1 &&
          out[0] == 0xb8, "encode {1,3}: %02x", out[0]); /* 10 111 pad */
    CHECK(dcz_huff_cost_bits(len, sym, 2) == 5, "cost");
    CHECK(dcz_huff_encode(bad, 3, sym, 1, out, 8, &used) == DCZ_ERR_ARG, "invalid table");
    CHECK(dcz_huff_encode(len, 4, sym, 2, out, 0, &used) == DCZ_ERR_NOMEM && used == 1,
          "short cap reports the size needed");
}

static void test_truncated(void)
{
    rng r = { 9 };
    uint8_t sym[2000], enc[4000], dec[2000];
    for (int iter = 0; iter < 200; iter++) {
        unsigned nsym = 1 + (unsigned)rng_below(&r, 256);
        size_t n = 1 + rng_below(&r, 2000);
        for (size_t i = 0; i < n; i++) sym[i] = (uint8_t)rng_below(&r, nsym);
        uint64_t f[DCZ_HUFF_MAX_SYMBOLS] = {0};
        for (size_t i = 0; i < n; i++) f[sym[i]]++;
        uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
        REQUIRE(dcz_huff_lengths(f, nsym, 15, len) == DCZ_OK, "lengths");
        size_t used;
        REQUIRE(dcz_huff_encode(len, nsym, sym, n, enc, sizeof enc, &used) == DCZ_OK, "encode");
        dcz_huff_decoder d;
        REQUIRE(dcz_huff_decoder_init(&d, len, nsym) == DCZ_OK, "decoder");
        size_t cut = rng_below(&r, used);
        uint8_t *in = exact_copy(enc, cut);
        REQUIRE(in, "oom");
        dcz_status st = dcz_huff_decode(&d, in, cut, dec, n);
        CHECK(st == DCZ_ERR_FORMAT, "cut %zu of %zu bytes: %d", cut, used, st);
        free(in);
    }
}

/* n symbols by dcz_huff_next, one at a time. */
static dcz_status next_decode(const dcz_huff_decoder *d, const uint8_t *in, size_t nb, uint8_t *out, size_t n)
{
    dcz_huff_reader r;
    dcz_huff_reader_init(&r, in, nb);
    for (size_t i = 0; i < n; i++) {
        unsigned s;
        const dcz_status st = dcz_huff_next(d, &r, &s);
        if (st != DCZ_OK) return st;
        out[i] = (uint8_t)s;
    }
    return DCZ_OK;
}

/* Random bytes through the decoder, the one-at-a-time decoder and the
 * reference: the same status, the same symbols. */
static void test_garbage(void)
{
    rng r = { 10 };
    uint8_t buf[600], out[2000], ref[2000], one[2000];
    int mismatches = 0;
    for (int iter = 0; iter < 4000 && mismatches < 5; iter++) {
        unsigned nsym = 1 + (unsigned)rng_below(&r, 256);
        uint64_t f[DCZ_HUFF_MAX_SYMBOLS] = {0};
        unsigned kind = (unsigned)rng_below(&r, 10);
        if (kind == 0) {
            f[rng_below(&r, nsym)] = 1;
        } else if (kind > 1) {
            for (unsigned s = 0; s < nsym; s++)
                f[s] = rng_below(&r, 3) ? 1 + (rng_next(&r) >> (rng_below(&r, 40) + 24)) : 0;
        }
        unsigned m = count_used(f, nsym), lo = ceil_log2(m);
        if (lo < 1) lo = 1;
        uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
        REQUIRE(dcz_huff_lengths(f, nsym, lo + (unsigned)rng_below(&r, 16 - lo), len) == DCZ_OK,
                "lengths");
        dcz_huff_decoder d;
        REQUIRE(dcz_huff_decoder_init(&d, len, nsym) == DCZ_OK, "decoder");
        size_t nb = rng_below(&r, sizeof buf), n = rng_below(&r, sizeof out);
        unsigned bias = (unsigned)rng_below(&r, 3);
        for (size_t i = 0; i < nb; i++) {
            uint8_t b = (uint8_t)rng_next(&r);
            buf[i] = bias == 0 ? b : bias == 1 ? (uint8_t)(b | rng_next(&r)) : (uint8_t)(b & rng_next(&r));
        }
        uint8_t *in = exact_copy(buf, nb);
        REQUIRE(in, "oom");
        dcz_status st = dcz_huff_decode(&d, in, nb, out, n);
        dcz_status ref_st = ref_decode(len, nsym, in, nb, ref, n);
        dcz_status one_st = next_decode(&d, in, nb, one, n);
        CHECK(one_st == ref_st && (one_st != DCZ_OK || memcmp(one, ref, n) == 0),
              "iter %d: one at a time %d, reference %d (nsym %u, %zu bytes, n %zu)", iter, one_st, ref_st, nsym, nb, n);
        mismatches += one_st != ref_st;
        CHECK(st == DCZ_OK || st == DCZ_ERR_FORMAT, "status %d", st);
        CHECK(st == ref_st, "iter %d: decoder %d, reference %d (nsym %u, %zu bytes, n %zu)",
              iter, st, ref_st, nsym, nb, n);
        if (st == DCZ_OK && ref_st == DCZ_OK) {
            CHECK(memcmp(out, ref, n) == 0, "iter %d: output differs from reference", iter);
            mismatches += memcmp(out, ref, n) != 0;
        }
        mismatches += st != ref_st;
        free(in);
    }
}

/* ---- entropy ----------------------------------------------------------- */

static void test_entropy(void)
{
    uint64_t f[DCZ_HUFF_MAX_SYMBOLS];
    for (unsigned k = 0; k <= 8; k++) {
        for (unsigned s = 0; s < (1u << k); s++) f[s] = 12345;
        double h = dcz_huff_entropy(f, 1u << k);
        CHECK(fabs(h - k) < 1e-12, "uniform over 2^%u: %.15f", k, h);
    }
    memset(f, 0, sizeof f);
    CHECK(dcz_huff_entropy(f, 256) == 0.0, "empty");
    f[0] = 1; f[1] = 3;
    CHECK(fabs(dcz_huff_entropy(f, 2) - 0.8112781244591328) < 1e-12, "(1,3)");

    rng r = { 11 };
    uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
    for (int iter = 0; iter < 300; iter++) {
        unsigned nsym = 2 + (unsigned)rng_below(&r, 255);
        for (unsigned s = 0; s < nsym; s++)
            f[s] = iter % 2 ? 1 + rng_below(&r, 1000) : 1u << rng_below(&r, 10);
        REQUIRE(dcz_huff_lengths(f, nsym, 15, len) == DCZ_OK, "lengths");
        double total = 0, bits = 0;
        for (unsigned s = 0; s < nsym; s++) {
            total += (double)f[s];
            bits += (double)f[s] * len[s];
        }
        double h = dcz_huff_entropy(f, nsym), avg = bits / total;
        CHECK(avg >= h - 1e-9 && avg < h + 1.0, "nsym %u: %.6f bits/symbol, entropy %.6f",
              nsym, avg, h);
        /* dyadic distributions are coded exactly at the entropy */
        if (iter % 2 == 0) {
            uint64_t minf = UINT64_MAX;
            for (unsigned s = 0; s < nsym; s++) if (f[s] < minf) minf = f[s];
            uint64_t sum = (uint64_t)total;
            if ((sum & (sum - 1)) == 0 && sum / minf <= 1u << DCZ_HUFF_MAX_LEN)
                CHECK(fabs(avg - h) < 1e-9, "dyadic: %.6f vs %.6f", avg, h);
        }
    }
}

/* The floor of positions kept at random: H(p) / p against the entropy of
 * the geometric gap it stands for, summed term by term. */
static void test_gap_floor(void)
{
    CHECK(dcz_huff_gap_floor(1.0) == 0.0, "p = 1: %g", dcz_huff_gap_floor(1.0));
    CHECK(isinf(dcz_huff_gap_floor(0.0)), "p = 0: %g", dcz_huff_gap_floor(0.0));
    CHECK(fabs(dcz_huff_gap_floor(0.5) - 2.0) < 1e-12, "p = 1/2: %.15f", dcz_huff_gap_floor(0.5));
    const double ps[] = { 0.9, 0.5, 0.25, 0.1, 0.04, 0.01 };
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        const double p = ps[i];
        double h = 0, q = p;   /* q: P(gap = k) = (1 - p)^k p */
        for (int k = 0; k < 20000 && q > 0; k++, q *= 1 - p) h -= q * log2(q);
        CHECK(fabs(dcz_huff_gap_floor(p) - h) < 1e-9, "p = %g: floor %.12f, geometric entropy %.12f", p,
              dcz_huff_gap_floor(p), h);
    }
}

int main(void)
{
    RUN(test_bitr);
    RUN(test_bits_pack);
    RUN(test_lengths_args);
    RUN(test_optimal_small);
    RUN(test_length_limit_fibonacci);
    RUN(test_canonical);
    RUN(test_table_roundtrip);
    RUN(test_table_reject);
    RUN(test_roundtrip_random);
    RUN(test_roundtrip_geometric);
    RUN(test_single_symbol);
    RUN(test_empty);
    RUN(test_encode_args);
    RUN(test_truncated);
    RUN(test_garbage);
    RUN(test_entropy);
    RUN(test_gap_floor);
    return check_summary();
}
