/* arith_decode.c: the decoding half of arith.h, part of libdcz: the binary
 * range decoder and the keep-mask and index decoders built on it
 * (docs/FORMAT.md, "Arithmetic coding").
 *
 * The decoder holds a 32-bit range and the 32-bit code, the stream's value
 * minus the low end of the interval, which stays below the range (checked
 * once, on the first four bytes; every step keeps it). It reads exactly the
 * bytes the encoder wrote: four at the start and one per renormalization,
 * so a stream that needs a byte past its end, or ends with bytes unread, is
 * refused. Integer arithmetic only; libc only; nothing allocated (the mask's
 * column counts live in the caller's scratch).
 *
 * Tested by tests/unit/test_arith.c (round trips against arith_encode.c, a
 * committed vector also checked on aarch64, every truncation, every
 * single-byte corruption) and fuzzed by tests/fuzz/fuzz_arith.c.
 */
#include <string.h>

#include "huffman/arith.h"

typedef struct acdec {
    const uint8_t *in;
    size_t len, pos;
    uint32_t range, code;
} acdec;

static dcz_status dec_init(acdec *d, const uint8_t *in, size_t len)
{
    if (len < 4 || !in) return DCZ_ERR_FORMAT;
    d->in = in;
    d->len = len;
    d->pos = 4;
    d->range = 0xFFFFFFFFu;
    d->code = (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
    /* an encoder's value lies below the initial range */
    return d->code < d->range ? DCZ_OK : DCZ_ERR_FORMAT;
}

/* One bit with model m into *bit; DCZ_ERR_FORMAT when a byte is missing. */
static inline dcz_status dec_bit(acdec *d, dcz_ac_prob *m, unsigned *bit)
{
    const uint32_t bound = (d->range >> DCZ_AC_PROB_BITS) * dcz_ac_p0(m);
    if (d->code < bound) {
        d->range = bound;
        *bit = 0;
    } else {
        d->code -= bound;
        d->range -= bound;
        *bit = 1;
    }
    dcz_ac_adapt(m, *bit);
    while (d->range < DCZ_AC_TOP) {
        if (d->pos == d->len) return DCZ_ERR_FORMAT;
        d->code = d->code << 8 | d->in[d->pos++];
        d->range <<= 8;
    }
    return DCZ_OK;
}

/* The stream ends exactly where the decoder stopped reading. */
static dcz_status dec_end(const acdec *d)
{
    return d->pos == d->len ? DCZ_OK : DCZ_ERR_FORMAT;
}

dcz_status dcz_ac_decode_mask(const uint8_t *in, size_t len, uint32_t rows, uint32_t cols, uint32_t nnz,
                              uint32_t *scratch, dcz_ac_keep_fn fn, void *ctx)
{
    if (rows == 0 || cols == 0 || !scratch || !fn) return DCZ_ERR_ARG;
    acdec d;
    dcz_status s = dec_init(&d, in, len);
    if (s != DCZ_OK) return s;
    dcz_ac_prob m[DCZ_AC_MASK_CONTEXTS];
    dcz_ac_prob_init(m, DCZ_AC_MASK_CONTEXTS);
    uint32_t *col_kept = scratch; /* (cols): kept flags of each column in the rows above */
    memset(col_kept, 0, dcz_ac_mask_scratch_bytes(cols));
    uint32_t kept = 0;
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t row_kept = 0;
        unsigned bit = 0;
        for (uint32_t c = 0; c < cols; c++) {
            const unsigned cx = dcz_ac_mask_context(r, col_kept[c], c, row_kept, bit);
            if ((s = dec_bit(&d, &m[cx], &bit)) != DCZ_OK) return s;
            if (!bit) continue;
            if (kept == nnz) return DCZ_ERR_FORMAT;
            if ((s = fn(ctx, kept, (uint64_t)r * cols + c)) != DCZ_OK) return s;
            kept++;
            row_kept++;
            col_kept[c]++;
        }
    }
    return kept == nnz ? dec_end(&d) : DCZ_ERR_FORMAT;
}

dcz_status dcz_ac_decode_indices(const uint8_t *in, size_t len, unsigned bits, uint8_t *out, size_t n)
{
    if (bits < 1 || bits > DCZ_AC_MAX_INDEX_BITS || (n && !out)) return DCZ_ERR_ARG;
    acdec d;
    dcz_status s = dec_init(&d, in, len);
    if (s != DCZ_OK) return s;
    dcz_ac_prob m[1u << DCZ_AC_MAX_INDEX_BITS]; /* node 1 .. 2^bits - 1 of the tree; 0 unused */
    dcz_ac_prob_init(m, (size_t)1 << bits);
    for (size_t i = 0; i < n; i++) {
        unsigned node = 1, bit;
        for (unsigned b = 0; b < bits; b++) {
            if ((s = dec_bit(&d, &m[node], &bit)) != DCZ_OK) return s;
            node = node << 1 | bit;
        }
        out[i] = (uint8_t)(node - (1u << bits));
    }
    return dec_end(&d);
}
