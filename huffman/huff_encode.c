/* huff_encode.c: the encoding half of huffman.h, used by the toolchain only:
 * optimal length-limited code lengths (package-merge), canonical codes, table
 * serialization, the Huffman encoder, fixed-width packing and the empirical
 * entropy of a distribution.
 *
 * Code lengths come from the package-merge algorithm (Larmore and Hirschberg,
 * "A fast algorithm for optimal length-restricted Huffman codes", 1990): with
 * the m used symbols sorted by frequency, build max_len lists; list 1 holds
 * the leaves, list t merges the leaves with the packages (adjacent pairs) of
 * list t-1. Choosing the 2m-2 cheapest items of the last list and following
 * packages back down selects a prefix of each list; a symbol's code length is
 * the number of lists whose selected prefix contains its leaf. The result
 * has minimal total cost among all codes with lengths <= max_len, and a Kraft
 * sum of exactly 1.
 *
 * Tested by tests/unit/test_huffman.c (round trips through huff_decode.c,
 * brute-force optimality on small alphabets, the length limit on Fibonacci
 * frequencies, canonical order, entropy bounds).
 */
#include <math.h>
#include <string.h>

#include "huffman/huffman.h"

#define MAX_ITEMS (2 * DCZ_HUFF_MAX_SYMBOLS)

/* Frequencies are scaled so that a package weight (at most max_len times the
 * total) cannot overflow: the largest becomes at most 2^51. */
#define FREQ_BITS 51


dcz_status dcz_huff_lengths(const uint64_t *freq, unsigned nsym, unsigned max_len,
                            uint8_t *len)
{
    if (nsym > DCZ_HUFF_MAX_SYMBOLS || (nsym && (!freq || !len))) return DCZ_ERR_ARG;
    if (max_len < 1 || max_len > DCZ_HUFF_MAX_LEN) return DCZ_ERR_ARG;

    /* used symbols sorted by (frequency, symbol): insertion sort, stable */
    uint8_t order[DCZ_HUFF_MAX_SYMBOLS]; /* sorted position -> symbol */
    unsigned m = 0;
    uint64_t maxf = 0;
    for (unsigned s = 0; s < nsym; s++) {
        if (!freq[s]) continue;
        unsigned j = m++;
        while (j > 0 && freq[order[j - 1]] > freq[s]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = (uint8_t)s;
        if (freq[s] > maxf) maxf = freq[s];
    }
    if (m > (1u << max_len)) return DCZ_ERR_ARG;
    if (nsym) memset(len, 0, nsym);
    if (m == 0) return DCZ_OK;
    if (m == 1) {
        len[order[0]] = 1;
        return DCZ_OK;
    }

    unsigned shift = 0;
    while ((maxf >> shift) >> FREQ_BITS) shift++;
    uint64_t leaf[DCZ_HUFF_MAX_SYMBOLS];
    for (unsigned i = 0; i < m; i++) {
        uint64_t f = freq[order[i]] >> shift;
        leaf[i] = f ? f : 1;
    }

    unsigned cap = 2 * m - 2; /* no list needs more items than are chosen */
    /* is_pkg[t][i]: item i of list t is a package (else the next leaf) */
    uint8_t is_pkg[DCZ_HUFF_MAX_LEN][MAX_ITEMS];
    uint64_t wa[MAX_ITEMS], wb[MAX_ITEMS];
    uint64_t *prev = wa, *cur = wb;
    unsigned size[DCZ_HUFF_MAX_LEN];

    unsigned n0 = m < cap ? m : cap;
    for (unsigned i = 0; i < n0; i++) {
        prev[i] = leaf[i];
        is_pkg[0][i] = 0;
    }
    size[0] = n0;
    for (unsigned t = 1; t < max_len; t++) {
        unsigned npkg = size[t - 1] / 2, li = 0, pi = 0, k = 0;
        while (k < cap && (li < m || pi < npkg)) {
            int take_leaf;
            if (li >= m) take_leaf = 0;
            else if (pi >= npkg) take_leaf = 1;
            else take_leaf = leaf[li] <= prev[2 * pi] + prev[2 * pi + 1];
            if (take_leaf) {
                cur[k] = leaf[li++];
                is_pkg[t][k++] = 0;
            } else {
                cur[k] = prev[2 * pi] + prev[2 * pi + 1];
                pi++;
                is_pkg[t][k++] = 1;
            }
        }
        size[t] = k;
        uint64_t *tmp = prev;
        prev = cur;
        cur = tmp;
    }

    /* follow the selection down: the chosen prefix of list t uses the first
     * 2 * (packages chosen) items of list t-1 */
    uint8_t depth[DCZ_HUFF_MAX_SYMBOLS] = {0};
    unsigned sel = cap;
    for (unsigned t = max_len; t-- > 0;) {
        if (sel > size[t]) return DCZ_ERR_INTERNAL;
        unsigned leaves = 0, pkgs = 0;
        for (unsigned i = 0; i < sel; i++) {
            if (is_pkg[t][i]) pkgs++;
            else leaves++;
        }
        for (unsigned i = 0; i < leaves; i++) depth[i]++;
        sel = 2 * pkgs;
    }
    for (unsigned i = 0; i < m; i++) len[order[i]] = depth[i];
    return DCZ_OK;
}

dcz_status dcz_huff_codes(const uint8_t *len, unsigned nsym, uint16_t *code)
{
    if (nsym > DCZ_HUFF_MAX_SYMBOLS || (nsym && (!len || !code))) return DCZ_ERR_ARG;
    dcz_status st = dcz_huff_lengths_check(len, nsym) == DCZ_OK ? DCZ_OK : DCZ_ERR_ARG;
    if (st != DCZ_OK) return st;
    unsigned count[DCZ_HUFF_MAX_LEN + 1] = {0}, next[DCZ_HUFF_MAX_LEN + 1];
    for (unsigned s = 0; s < nsym; s++) count[len[s]]++;
    count[0] = 0;
    unsigned c = 0;
    next[0] = 0;
    for (unsigned l = 1; l <= DCZ_HUFF_MAX_LEN; l++) {
        c = (c + count[l - 1]) << 1;
        next[l] = c;
    }
    for (unsigned s = 0; s < nsym; s++)
        code[s] = len[s] ? (uint16_t)next[len[s]]++ : 0;
    return DCZ_OK;
}

void dcz_huff_table_write(const uint8_t *len, unsigned nsym, uint8_t *out)
{
    size_t nb = dcz_huff_table_bytes(nsym);
    if (nb) memset(out, 0, nb);
    for (unsigned s = 0; s < nsym; s++)
        out[s / 2] |= (uint8_t)((s & 1) ? (len[s] & 15) : (len[s] & 15) << 4);
}

uint64_t dcz_huff_cost_bits(const uint8_t *len, const uint8_t *sym, size_t n)
{
    uint64_t bits = 0;
    for (size_t i = 0; i < n; i++) bits += len[sym[i]];
    return bits;
}

/* MSB-first bit writer into a buffer already known to be large enough. */
typedef struct bitw {
    uint8_t *p;
    size_t pos;   /* next byte to write */
    uint64_t acc; /* pending bits in the low `n` bits */
    unsigned n;
} bitw;

static inline void bitw_put(bitw *w, uint32_t v, unsigned nbits)
{
    w->acc = (w->acc << nbits) | v;
    w->n += nbits;
    while (w->n >= 8) {
        w->n -= 8;
        w->p[w->pos++] = (uint8_t)(w->acc >> w->n);
    }
}

static inline void bitw_flush(bitw *w)
{
    if (w->n) w->p[w->pos++] = (uint8_t)(w->acc << (8 - w->n));
    w->n = 0;
}

dcz_status dcz_huff_encode(const uint8_t *len, unsigned nsym, const uint8_t *sym, size_t n,
                           uint8_t *out, size_t cap, size_t *used)
{
    if (!used || nsym > DCZ_HUFF_MAX_SYMBOLS || (nsym && !len) || (n && !sym))
        return DCZ_ERR_ARG;
    *used = 0;
    uint16_t code[DCZ_HUFF_MAX_SYMBOLS];
    dcz_status st = dcz_huff_codes(len, nsym, code);
    if (st != DCZ_OK) return st;
    uint64_t bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (sym[i] >= nsym || len[sym[i]] == 0) return DCZ_ERR_ARG;
        bits += len[sym[i]];
    }
    uint64_t need = bits / 8 + (bits % 8 != 0);
    if (need > cap) {
        *used = need > SIZE_MAX ? SIZE_MAX : (size_t)need;
        return DCZ_ERR_NOMEM;
    }
    if (need && !out) return DCZ_ERR_ARG;
    bitw w = { out, 0, 0, 0 };
    for (size_t i = 0; i < n; i++) bitw_put(&w, code[sym[i]], len[sym[i]]);
    bitw_flush(&w);
    *used = w.pos;
    return DCZ_OK;
}

dcz_status dcz_bits_pack(const uint8_t *vals, size_t count, unsigned width,
                         uint8_t *out, size_t cap)
{
    if (width < 1 || width > 8 || (count && !vals)) return DCZ_ERR_ARG;
    if (count > SIZE_MAX / width) return DCZ_ERR_ARG;
    size_t bits = count * width;
    size_t need = bits / 8 + (bits % 8 != 0);
    for (size_t i = 0; i < count; i++)
        if (vals[i] >> width) return DCZ_ERR_ARG;
    if (need > cap) return DCZ_ERR_NOMEM;
    if (need && !out) return DCZ_ERR_ARG;
    bitw w = { out, 0, 0, 0 };
    for (size_t i = 0; i < count; i++) bitw_put(&w, vals[i], width);
    bitw_flush(&w);
    return DCZ_OK;
}

double dcz_huff_entropy(const uint64_t *freq, unsigned nsym)
{
    if (!freq) return 0.0;
    double total = 0.0;
    for (unsigned s = 0; s < nsym; s++) total += (double)freq[s];
    if (total <= 0.0) return 0.0;
    double h = 0.0;
    for (unsigned s = 0; s < nsym; s++) {
        if (!freq[s]) continue;
        double p = (double)freq[s] / total;
        h -= p * log2(p);
    }
    return h > 0.0 ? h : 0.0;
}

double dcz_huff_gap_floor(double p)
{
    if (!(p > 0)) return INFINITY;
    return p >= 1 ? 0 : (-p * log2(p) - (1 - p) * log2(1 - p)) / p;
}
