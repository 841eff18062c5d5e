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

typedef dcz_ac_dec acdec;

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

dcz_status dcz_ac_mask_begin(dcz_ac_mask_reader *r, const uint8_t *in, size_t len, uint32_t rows, uint32_t cols,
                             uint32_t nnz, uint32_t *scratch)
{
    if (rows == 0 || cols == 0 || !scratch) return DCZ_ERR_ARG;
    memset(r, 0, sizeof *r);
    r->rows = rows;
    r->cols = cols;
    r->nnz = nnz;
    r->col_kept = scratch; /* (cols): kept flags of each column in the rows above */
    memset(scratch, 0, dcz_ac_mask_scratch_bytes(cols));
    dcz_ac_prob_init(r->m, DCZ_AC_MASK_CONTEXTS);
    return dec_init(&r->d, in, len);
}

/* The flag at (r->r, r->c) into *bit, and the place moved past it. */
static dcz_status mask_flag(dcz_ac_mask_reader *r, unsigned *bit)
{
    const uint32_t c = r->c;
    const unsigned cx = dcz_ac_mask_context(r->r, r->col_kept[c], c, r->row_kept, r->left);
    dcz_status s = dec_bit(&r->d, &r->m[cx], bit);
    if (s != DCZ_OK) return s;
    r->left = *bit;
    if (*bit) {
        r->kept++;
        r->row_kept++;
        r->col_kept[c]++;
    }
    if (++r->c == r->cols) {
        r->c = 0;
        r->r++;
        r->row_kept = 0;
        r->left = 0;
    }
    return DCZ_OK;
}

dcz_status dcz_ac_mask_next(dcz_ac_mask_reader *r, uint64_t *pos)
{
    if (r->kept == r->nnz) return DCZ_ERR_FORMAT;
    while (r->r < r->rows) {
        const uint64_t at = (uint64_t)r->r * r->cols + r->c;
        unsigned bit;
        dcz_status s = mask_flag(r, &bit);
        if (s != DCZ_OK) return s;
        if (bit) {
            *pos = at;
            return DCZ_OK;
        }
    }
    return DCZ_ERR_FORMAT;   /* fewer than nnz kept flags */
}

dcz_status dcz_ac_mask_end(dcz_ac_mask_reader *r)
{
    while (r->r < r->rows) {
        unsigned bit;
        dcz_status s = mask_flag(r, &bit);
        if (s != DCZ_OK) return s;
        if (bit && r->kept > r->nnz) return DCZ_ERR_FORMAT;
    }
    return r->kept == r->nnz ? dec_end(&r->d) : DCZ_ERR_FORMAT;
}

dcz_status dcz_ac_decode_mask(const uint8_t *in, size_t len, uint32_t rows, uint32_t cols, uint32_t nnz,
                              uint32_t *scratch, dcz_ac_keep_fn fn, void *ctx)
{
    if (!fn) return DCZ_ERR_ARG;
    dcz_ac_mask_reader r;
    dcz_status s = dcz_ac_mask_begin(&r, in, len, rows, cols, nnz, scratch);
    for (uint32_t i = 0; s == DCZ_OK && i < nnz; i++) {
        uint64_t pos;
        if ((s = dcz_ac_mask_next(&r, &pos)) == DCZ_OK) s = fn(ctx, i, pos);
    }
    return s == DCZ_OK ? dcz_ac_mask_end(&r) : s;
}

dcz_status dcz_ac_indices_begin(dcz_ac_index_reader *r, const uint8_t *in, size_t len, unsigned bits)
{
    if (bits < 1 || bits > DCZ_AC_MAX_INDEX_BITS) return DCZ_ERR_ARG;
    r->bits = bits;
    dcz_ac_prob_init(r->m, (size_t)1 << bits);
    return dec_init(&r->d, in, len);
}

dcz_status dcz_ac_indices_next(dcz_ac_index_reader *r, unsigned *v)
{
    unsigned node = 1, bit;
    for (unsigned b = 0; b < r->bits; b++) {
        dcz_status s = dec_bit(&r->d, &r->m[node], &bit);
        if (s != DCZ_OK) return s;
        node = node << 1 | bit;
    }
    *v = node - (1u << r->bits);
    return DCZ_OK;
}

dcz_status dcz_ac_indices_end(const dcz_ac_index_reader *r)
{
    return dec_end(&r->d);
}

dcz_status dcz_ac_decode_indices(const uint8_t *in, size_t len, unsigned bits, uint8_t *out, size_t n)
{
    if (bits < 1 || bits > DCZ_AC_MAX_INDEX_BITS || (n && !out)) return DCZ_ERR_ARG;
    dcz_ac_index_reader r;
    dcz_status s = dcz_ac_indices_begin(&r, in, len, bits);
    for (size_t i = 0; s == DCZ_OK && i < n; i++) {
        unsigned v;
        if ((s = dcz_ac_indices_next(&r, &v)) == DCZ_OK) out[i] = (uint8_t)v;
    }
    return s == DCZ_OK ? dcz_ac_indices_end(&r) : s;
}
