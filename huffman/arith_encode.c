/* arith_encode.c: the encoding half of arith.h, used by the toolchain only:
 * the binary range encoder and the keep-mask and index encoders built on it
 * (docs/FORMAT.md, "Arithmetic coding").
 *
 * The encoder holds the low end of the interval in 32 bits (plus a carry
 * bit) and the 32-bit range. Adding to low may carry into bytes already
 * written: the carry is propagated back through the output at once (a byte
 * 0xFF becomes 0x00 and passes it on). It cannot run past the first byte,
 * since the coded value stays below the initial range. When the range falls
 * below 2^24 the top byte of low is written and both shift by one byte; at
 * the end the four bytes of low are written, which the decoder's last reads
 * consume. With no output buffer only the bytes are counted (a carry never
 * changes their number), which is how the writer compares codings.
 *
 * Tested by tests/unit/test_arith.c (round trips through arith_decode.c, the
 * committed vector).
 */
#include <stdlib.h>
#include <string.h>

#include "huffman/arith.h"

typedef struct acenc {
    uint8_t *out;       /* NULL: count only */
    size_t cap, n;
    uint64_t low;       /* below 2^32 between steps */
    uint32_t range;
    int short_cap;
} acenc;

static void enc_init(acenc *e, uint8_t *out, size_t cap)
{
    memset(e, 0, sizeof *e);
    e->out = out;
    e->cap = out ? cap : 0;
    e->range = 0xFFFFFFFFu;
}

static void emit(acenc *e, uint8_t byte)
{
    if (e->out) {
        if (e->n < e->cap) e->out[e->n] = byte;
        else e->short_cap = 1;
    }
    e->n++;
}

static void carry(acenc *e)
{
    if (!e->out || e->short_cap) return;
    for (size_t i = e->n; i-- > 0;)
        if (e->out[i]++ != 0xFF) break;
}

static inline void enc_bit(acenc *e, dcz_ac_prob *m, unsigned bit)
{
    const uint32_t bound = (e->range >> DCZ_AC_PROB_BITS) * dcz_ac_p0(m);
    if (bit) {
        e->low += bound;
        e->range -= bound;
        if (e->low >> 32) {
            carry(e);
            e->low &= 0xFFFFFFFFu;
        }
    } else {
        e->range = bound;
    }
    dcz_ac_adapt(m, bit);
    while (e->range < DCZ_AC_TOP) {
        emit(e, (uint8_t)(e->low >> 24));
        e->low = (e->low << 8) & 0xFFFFFFFFu;
        e->range <<= 8;
    }
}

static dcz_status enc_finish(acenc *e, size_t *used)
{
    for (int i = 0; i < 4; i++) {
        emit(e, (uint8_t)(e->low >> 24));
        e->low = (e->low << 8) & 0xFFFFFFFFu;
    }
    *used = e->n;
    return e->short_cap ? DCZ_ERR_NOMEM : DCZ_OK;
}

dcz_status dcz_ac_encode_mask(const uint8_t *keep, uint32_t rows, uint32_t cols, uint8_t *out, size_t cap,
                              size_t *used)
{
    if (rows == 0 || cols == 0 || !keep || !used) return DCZ_ERR_ARG;
    uint32_t *col_kept = calloc(cols, sizeof *col_kept); /* (cols) */
    if (!col_kept) return DCZ_ERR_NOMEM;
    acenc e;
    enc_init(&e, out, cap);
    dcz_ac_prob m[DCZ_AC_MASK_CONTEXTS];
    dcz_ac_prob_init(m, DCZ_AC_MASK_CONTEXTS);
    for (uint32_t r = 0; r < rows; r++) {
        const uint8_t *row = keep + (size_t)r * cols;
        uint32_t row_kept = 0;
        unsigned bit = 0;
        for (uint32_t c = 0; c < cols; c++) {
            const unsigned cx = dcz_ac_mask_context(r, col_kept[c], c, row_kept, bit);
            bit = row[c] != 0;
            enc_bit(&e, &m[cx], bit);
            row_kept += bit;
            col_kept[c] += bit;
        }
    }
    free(col_kept);
    return enc_finish(&e, used);
}

dcz_status dcz_ac_encode_indices(const uint8_t *sym, size_t n, unsigned bits, uint8_t *out, size_t cap,
                                 size_t *used)
{
    if (bits < 1 || bits > DCZ_AC_MAX_INDEX_BITS || (n && !sym) || !used) return DCZ_ERR_ARG;
    acenc e;
    enc_init(&e, out, cap);
    dcz_ac_prob m[1u << DCZ_AC_MAX_INDEX_BITS];
    dcz_ac_prob_init(m, (size_t)1 << bits);
    for (size_t i = 0; i < n; i++) {
        if (sym[i] >> bits) return DCZ_ERR_ARG;
        unsigned node = 1;
        for (unsigned b = bits; b-- > 0;) {
            const unsigned bit = (sym[i] >> b) & 1;
            enc_bit(&e, &m[node], bit);
            node = node << 1 | bit;
        }
    }
    return enc_finish(&e, used);
}
