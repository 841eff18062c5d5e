/* arith.h: the adaptive binary range coder of the .dcz format (coding 2,
 * docs/FORMAT.md "Arithmetic coding"): a keep mask of a sparse tensor's
 * positions and its codebook indices, each bit coded with an adaptive
 * probability chosen by a small context.
 *
 * Decoding is part of libdcz and lives in arith_decode.c; encoding lives in
 * arith_encode.c and is used by the toolchain only. The probability model
 * and the contexts are defined once, here, as inline functions both sides
 * call, so the two cannot drift apart. Integer arithmetic only: the same
 * bytes decode to the same bits on every platform.
 *
 * - A probability is P(bit = 0) in units of 2^-15, the mean of two
 *   estimates that adapt at rates 2^-4 (fast) and 2^-7 (slow); both start
 *   at one half. Each stays within [15, 32753] and [127, 32641], so the
 *   mean lies in [71, 32697] and neither symbol's share of the range is
 *   ever empty.
 * - Coding a bit with probability p splits a 32-bit range: bound =
 *   (range >> 15) * p; 0 takes [0, bound), 1 takes [bound, range). When
 *   the range falls below 2^24 it is shifted left by one byte.
 * - Mask contexts: the flag to the left in the row, and buckets of the
 *   column's kept count in the rows above and of the row's kept count in the
 *   columns before (dcz_ac_bucket), 72 in all.
 * - Index contexts: the bits of the index read so far (a binary tree,
 *   2^bits - 1 nodes).
 *
 * Tested by tests/unit/test_arith.c (round trips, a committed vector,
 * truncations, corruptions) and fuzzed by tests/fuzz/fuzz_arith.c.
 */
#ifndef DCZ_ARITH_H
#define DCZ_ARITH_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"

#define DCZ_AC_PROB_BITS 15
#define DCZ_AC_PROB_ONE (1u << DCZ_AC_PROB_BITS)
#define DCZ_AC_FAST_SHIFT 4
#define DCZ_AC_SLOW_SHIFT 7
#define DCZ_AC_TOP (1u << 24)        /* the range is renormalized below this */
#define DCZ_AC_MASK_CONTEXTS 72      /* 6 column buckets x 6 row buckets x 2 */
#define DCZ_AC_MAX_INDEX_BITS 8

/* One adaptive probability: two estimates of P(bit = 0), in 2^-15. */
typedef struct dcz_ac_prob {
    uint16_t fast, slow;
} dcz_ac_prob;

static inline void dcz_ac_prob_init(dcz_ac_prob *m, size_t n)
{
    for (size_t i = 0; i < n; i++) m[i].fast = m[i].slow = (uint16_t)(DCZ_AC_PROB_ONE / 2);
}

/* P(bit = 0) used to code the next bit. */
static inline uint32_t dcz_ac_p0(const dcz_ac_prob *m)
{
    return ((uint32_t)m->fast + m->slow) >> 1;
}

/* The update after coding bit. */
static inline void dcz_ac_adapt(dcz_ac_prob *m, unsigned bit)
{
    if (bit) {
        m->fast = (uint16_t)(m->fast - (m->fast >> DCZ_AC_FAST_SHIFT));
        m->slow = (uint16_t)(m->slow - (m->slow >> DCZ_AC_SLOW_SHIFT));
    } else {
        m->fast = (uint16_t)(m->fast + ((DCZ_AC_PROB_ONE - m->fast) >> DCZ_AC_FAST_SHIFT));
        m->slow = (uint16_t)(m->slow + ((DCZ_AC_PROB_ONE - m->slow) >> DCZ_AC_SLOW_SHIFT));
    }
}

/* A count of kept flags among seen: 0 none seen, 1 none kept, 2 all kept,
 * 3 under 1/8 kept, 4 under 1/2, 5 the rest. */
static inline unsigned dcz_ac_bucket(uint64_t kept, uint64_t seen)
{
    return seen == 0 ? 0 : kept == 0 ? 1 : kept == seen ? 2 : 8 * kept < seen ? 3 : 2 * kept < seen ? 4 : 5;
}

/* The context of the flag at (row, col): col_kept flags of its column are
 * kept in the rows above, row_kept of its row in the columns before, left
 * is the flag before it in the row (0 at col 0). */
static inline unsigned dcz_ac_mask_context(uint32_t row, uint32_t col_kept, uint32_t col,
                                           uint32_t row_kept, unsigned left)
{
    return (dcz_ac_bucket(col_kept, row) * 6 + dcz_ac_bucket(row_kept, col)) * 2 + left;
}

/* ---- decode side (libdcz) ---------------------------------------------- */

/* Called for each kept flag, in position order: weight is its number among
 * the kept ones, pos its flat position (row * cols + col). Same type as
 * runtime/format/format.h's dcz_pos_fn. */
typedef dcz_status (*dcz_ac_keep_fn)(void *ctx, uint32_t weight, uint64_t pos);

/* Bytes of scratch dcz_ac_decode_mask needs for cols columns. */
static inline size_t dcz_ac_mask_scratch_bytes(uint32_t cols) { return (size_t)cols * 4; }

/* Decodes the rows x cols keep mask coded in in[0..len) and calls fn for
 * each of its nnz kept flags; scratch holds dcz_ac_mask_scratch_bytes(cols)
 * bytes, 4-byte aligned. DCZ_ERR_FORMAT when the stream runs out of bytes,
 * has bytes left after the last flag, starts with the code 0xFFFFFFFF or
 * holds other than nnz kept flags; fn's own error otherwise. */
dcz_status dcz_ac_decode_mask(const uint8_t *in, size_t len, uint32_t rows, uint32_t cols, uint32_t nnz,
                              uint32_t *scratch, dcz_ac_keep_fn fn, void *ctx);

/* Decodes n indices of bits (1..8) bits each into out. DCZ_ERR_FORMAT as
 * for the mask (bytes missing or left over, a bad first code). */
dcz_status dcz_ac_decode_indices(const uint8_t *in, size_t len, unsigned bits, uint8_t *out, size_t n);

/* The same streams read one value at a time, for a reader that keeps no
 * decoded copy (a fully connected layer read as stored at every run:
 * runtime/format/entries.c). Plain data, no pointer into itself; each
 * *_next refuses as the whole decoders do, and *_end checks the stream
 * ends where they check it: the mask's flags after its last kept one are
 * read there. dcz_ac_decode_mask and dcz_ac_decode_indices are loops over
 * these. */
typedef struct dcz_ac_dec {
    const uint8_t *in;
    size_t len, pos;
    uint32_t range, code;
} dcz_ac_dec;

typedef struct dcz_ac_mask_reader {
    dcz_ac_dec d;
    uint32_t rows, cols, nnz;
    uint32_t r, c, row_kept, kept;  /* the next flag's place; kept flags so far */
    unsigned left;                  /* the flag before (r, c) in its row */
    uint32_t *col_kept;             /* (cols) the caller's scratch */
    dcz_ac_prob m[DCZ_AC_MASK_CONTEXTS];
} dcz_ac_mask_reader;

dcz_status dcz_ac_mask_begin(dcz_ac_mask_reader *r, const uint8_t *in, size_t len, uint32_t rows, uint32_t cols,
                             uint32_t nnz, uint32_t *scratch);
/* The flat position of the next kept flag (at most nnz of them). */
dcz_status dcz_ac_mask_next(dcz_ac_mask_reader *r, uint64_t *pos);
dcz_status dcz_ac_mask_end(dcz_ac_mask_reader *r);

typedef struct dcz_ac_index_reader {
    dcz_ac_dec d;
    unsigned bits;
    dcz_ac_prob m[1u << DCZ_AC_MAX_INDEX_BITS]; /* node 1 .. 2^bits - 1 of the tree; 0 unused */
} dcz_ac_index_reader;

dcz_status dcz_ac_indices_begin(dcz_ac_index_reader *r, const uint8_t *in, size_t len, unsigned bits);
dcz_status dcz_ac_indices_next(dcz_ac_index_reader *r, unsigned *v);
dcz_status dcz_ac_indices_end(const dcz_ac_index_reader *r);

/* ---- encode side (toolchain only) -------------------------------------- */

/* Codes the rows x cols keep mask (keep[i] nonzero: kept, flat C order).
 * out NULL: only *used is computed. DCZ_ERR_NOMEM when cap is short or
 * memory runs out; DCZ_ERR_ARG for a bad argument. */
dcz_status dcz_ac_encode_mask(const uint8_t *keep, uint32_t rows, uint32_t cols, uint8_t *out, size_t cap,
                              size_t *used);

/* Codes n indices of bits (1..8) bits each (each < 2^bits). out NULL: only
 * *used is computed. */
dcz_status dcz_ac_encode_indices(const uint8_t *sym, size_t n, unsigned bits, uint8_t *out, size_t cap,
                                 size_t *used);

#endif /* DCZ_ARITH_H */
