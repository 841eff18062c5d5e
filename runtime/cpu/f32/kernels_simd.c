/* kernels_simd.c: the optimized sparse matrix kernels on model.h's
 * execution form, and the entry points that pick one at run time.
 *
 *   spmv (batch 1): the column form (dcz_sparse). The input of a layer after
 *     a ReLU is often half zeros; a column whose input is 0 contributes
 *     nothing, so the kernel walks the columns, skips those, and adds each
 *     remaining entry's product to its row: two small loads (row, codebook
 *     index), a product from a per-column table (codebook times the input,
 *     computed once per column) and a read-modify-write of y, which stays in
 *     the first-level cache. Rows within a column are distinct, so four
 *     entries are loaded before any is stored. Plain C, the same on every
 *     machine; a gather-based row kernel measured slower than it
 *     (bench/bench_spmv.c). On CPUs with AVX-512, the lane form
 *     (kernels_lanes.c) runs batch 1 without scatter or gather, and
 *     dcz_spmv_pick takes whichever of the two visits less for the input.
 *   spmm (batch N): a tile of DCZ_SPMM_TILE samples of x is transposed into
 *     scratch (cols, tile), then each entry is decoded once and adds w times
 *     the row of the tile at its column to the tile's accumulators, over
 *     the samples at once, no gather. AVX2 walks two rows side by side with
 *     up to four registers of eight samples each (eight independent sums
 *     hide the latency of the additions, and an entry's decoding serves 32
 *     samples; the tile is filled by 8 x 8 transposes in registers); NEON
 *     one row, 16 samples in four registers. Over threads
 *     (dcz_spmm_pool) the tile is transposed once, by all of them, and
 *     then shared: the threads take rows in chunks.
 *
 * Summation order. Every kernel here sums as the references do: the bias
 * (or 0) first, then w * x, rounded, added entry by entry in column order
 * (the column form visits a row's entries in that order too). Products and
 * sums are not fused (the build uses -ffp-contract=off), so every variant
 * gives the references' bits, and a sample the same bits at any batch
 * (tests/unit/test_static.c runs a batch whole and in chunks of one). The
 * lane form (kernels_lanes.c) is the exception: it fuses each product into
 * the sum, so where it runs (batch 1, AVX-512) a row is within rounding of
 * these.
 *
 * Dispatch (dcz_spmm): x86 with AVX2: __avx2; aarch64: __neon; otherwise,
 * or when a variant declines (spmm without scratch), dcz_spmm_ref. The x86
 * variant is compiled with a per-function target attribute, so libdcz needs
 * no global -m flags.
 *
 * Checked by tests/unit/test_simd.c: every variant the machine runs against
 * the references over an edge-case grid, bit for bit.
 */
#include <string.h>

#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/lanes.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/model.h"

#if DCZ_BUILD_X86
#include <immintrin.h>
#define DCZ_X86 1
#elif DCZ_BUILD_NEON
#include <arm_neon.h>

#include "runtime/cpu/f32/act_neon.h"
#define DCZ_NEON 1
#endif

#define SPMM_TILE DCZ_SPMM_TILE
/* Columns of one panel: as many as give a row about 16 entries in it, at
 * least SPMM_PANEL_MIN (whose part of the tile, 16 KiB, stays in the
 * first-level cache) and at most SPMM_PANEL_MAX (256 KiB, the second
 * level). Measured on 1000 x 4096 at 25% and 4096 x 4096 at 4%, batch 64
 * (bench/bench_spmv.c): the whole tile, 512 KiB, took 1.4 and 1.3 times as
 * long as these panels. */
#define SPMM_PANEL_MIN 128
#define SPMM_PANEL_MAX 2048

uint64_t dcz_spmm_scratch_floats(uint32_t rows, uint32_t cols)
{
    /* the tile, then the sums (rows, SPMM_TILE) and cursors (rows, 2) */
    return (uint64_t)cols * SPMM_TILE +
           (cols > SPMM_PANEL_MIN ? (uint64_t)rows * (SPMM_TILE + 2) : 0);
}

int dcz_isa_supported(dcz_isa isa)
{
    switch (isa) {
    case DCZ_ISA_REF:
        return 1;
#ifdef DCZ_X86
    case DCZ_ISA_AVX2:
        return dcz_cpu_features()->avx2 != 0;
    case DCZ_ISA_AVX512:
        return dcz_cpu_features()->avx512f != 0;
#endif
#ifdef DCZ_NEON
    case DCZ_ISA_NEON:
        return 1;
#endif
    default:
        return 0;
    }
}

dcz_isa dcz_isa_best(void)
{
    if (dcz_isa_supported(DCZ_ISA_AVX2)) return DCZ_ISA_AVX2;
    if (dcz_isa_supported(DCZ_ISA_NEON)) return DCZ_ISA_NEON;
    return DCZ_ISA_REF;
}

/* Columns c0 .. c1 - 1 of tile (cols, SPMM_TILE) = samples b0 .. b0 + nb - 1
 * of x (batch, cols), transposed; lanes nb .. SPMM_TILE - 1 are 0. */
static void fill_tile(const float *x, uint32_t cols, uint32_t c0, uint32_t c1, size_t b0,
                      size_t nb, float *tile)
{
    for (uint32_t c = c0; c < c1; c++) {
        float *t = tile + (size_t)c * SPMM_TILE;
        size_t b = 0;
        for (; b < nb; b++) t[b] = x[(b0 + b) * cols + c];
        for (; b < SPMM_TILE; b++) t[b] = 0.0f;
    }
}

/* y[(b0 + i) rows + r] = out[i] for nb samples of a tile */
static inline void store_tile(const float *out, size_t nb, size_t b0, uint32_t rows, uint32_t r, float *y)
{
    for (size_t i = 0; i < nb; i++) y[(b0 + i) * rows + r] = out[i];
}

/* ---- the column form ------------------------------------------------------- */

void dcz_sparse_block_rows(const dcz_sparse *s, uint32_t block, uint32_t *r0, uint32_t *r1)
{
    dcz_part_range(s->rows, block, s->cblocks, r0, r1);
}

/* The product of entry e (packed q) with the column's input xc: an fp32
 * value times xc (mode 0), from the column's table (1), or its codebook
 * value times xc (2). */
__attribute__((always_inline))
static inline float csc_prod(const int mode, uint32_t q, uint32_t e, uint32_t shift,
                             const float *tab, const float *cb, const float *val, float xc)
{
    return mode == 0 ? val[e] * xc : mode == 1 ? tab[q >> shift] : cb[q >> shift] * xc;
}

/* Adds entries e .. end - 1 of one column to y. Rows within a column are
 * distinct, so four entries are loaded before any is stored; the 16-bit
 * entries four at a time by one 64-bit load (little-endian hosts). wide
 * and mode are constants at every call. */
__attribute__((always_inline))
static inline void csc_column(float *y, const dcz_sparse *s, const int wide, const int mode,
                              uint32_t e, uint32_t end, const float *tab, float xc)
{
    const uint32_t shift = s->cshift, mask = (1u << shift) - 1;
    const float *cb = s->codebook, *val = s->cval;
    const uint16_t *e16 = s->cent16;
    const uint32_t *e32 = s->cent32;
    for (; end - e >= 4; e += 4) {
        uint32_t q0, q1, q2, q3;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (!wide) {
            uint64_t q;
            memcpy(&q, e16 + e, sizeof q);
            q0 = (uint32_t)q & 0xFFFF; q1 = (uint32_t)(q >> 16) & 0xFFFF;
            q2 = (uint32_t)(q >> 32) & 0xFFFF; q3 = (uint32_t)(q >> 48);
        } else
#endif
        {
            q0 = wide ? e32[e] : e16[e];         q1 = wide ? e32[e + 1] : e16[e + 1];
            q2 = wide ? e32[e + 2] : e16[e + 2]; q3 = wide ? e32[e + 3] : e16[e + 3];
        }
        const uint32_t r0 = q0 & mask, r1 = q1 & mask, r2 = q2 & mask, r3 = q3 & mask;
        const float v0 = y[r0] + csc_prod(mode, q0, e, shift, tab, cb, val, xc);
        const float v1 = y[r1] + csc_prod(mode, q1, e + 1, shift, tab, cb, val, xc);
        const float v2 = y[r2] + csc_prod(mode, q2, e + 2, shift, tab, cb, val, xc);
        const float v3 = y[r3] + csc_prod(mode, q3, e + 3, shift, tab, cb, val, xc);
        y[r0] = v0; y[r1] = v1; y[r2] = v2; y[r3] = v3;
    }
    for (; e < end; e++) {
        const uint32_t q = wide ? e32[e] : e16[e];
        y[q & mask] += csc_prod(mode, q, e, shift, tab, cb, val, xc);
    }
}

__attribute__((always_inline))
static inline void csc_block(const dcz_sparse *s, const uint32_t *ptr, const float *x, float *y,
                             const int wide)
{
    float tab[64];
    for (uint32_t c = 0; c < s->cols; c++) {
        const float xc = x[c];
        const uint32_t e = ptr[c], end = ptr[c + 1];
        if (xc == 0.0f || e == end) continue;
        if (s->cval) {
            csc_column(y, s, wide, 0, e, end, tab, xc);
        } else if (s->k <= 64 && s->k <= 2 * (end - e)) {
            /* the codebook's products with xc, each rounded as w * x is;
             * eight at a time so that the compiler uses vector multiplies */
            const float *cb = s->codebook;
            uint32_t i = 0;
            for (; i + 8 <= s->k; i += 8)
                for (uint32_t j = 0; j < 8; j++) tab[i + j] = cb[i + j] * xc;
            for (; i < s->k; i++) tab[i] = cb[i] * xc;
            csc_column(y, s, wide, 1, e, end, tab, xc);
        } else {
            csc_column(y, s, wide, 2, e, end, tab, xc);
        }
    }
}

void dcz_spmv_csc(const dcz_sparse *s, uint32_t block, const float *bias, const float *x,
                  float *y)
{
    uint32_t r0, r1;
    dcz_sparse_block_rows(s, block, &r0, &r1);
    if (r1 > r0 && bias) memcpy(y + r0, bias + r0, (size_t)(r1 - r0) * sizeof *y);
    else if (r1 > r0) memset(y + r0, 0, (size_t)(r1 - r0) * sizeof *y);
    const uint32_t *ptr = s->col_ptr + (size_t)block * ((size_t)s->cols + 1);
    if (s->cent32) csc_block(s, ptr, x, y, 1);
    else csc_block(s, ptr, x, y, 0);
}

/* bits of the largest of n values 0 .. n - 1 */
static uint32_t bits_of(uint32_t n)
{
    uint32_t b = 0;
    while (b < 32 && n > 1 && ((n - 1) >> b) != 0) b++;
    return b;
}

uint64_t dcz_sparse_columns_bytes(uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k,
                                  uint32_t cblocks)
{
    if (rows > 65535 || cblocks == 0) return 0;
    const int wide = bits_of(rows) + (k ? bits_of(k) : 0) > 16;
    return (uint64_t)cblocks * ((uint64_t)cols + 1) * 4 + (uint64_t)nnz * (wide ? 4 : 2) +
           (k ? 0 : (uint64_t)nnz * 4);
}

/* Runs body for each real entry of s, block by block, rows in order, with
 * blk_, r_, col_ and e_ its block, row, column and entry. */
#define FOR_EACH_ENTRY(s, body) do { \
    for (uint32_t blk_ = 0; blk_ < (s)->cblocks; blk_++) { \
        uint32_t ra_, rb_; \
        dcz_sparse_block_rows((s), blk_, &ra_, &rb_); \
        for (uint32_t r_ = ra_; r_ < rb_; r_++) { \
            uint32_t col_ = 0; \
            for (uint32_t e_ = (s)->row_ptr[r_]; e_ < (s)->row_ptr[r_ + 1]; e_++) { \
                col_ += (s)->step[e_]; \
                if ((s)->step[e_] != DCZ_STEP_FILLER) { body; } \
            } \
        } \
    } \
} while (0)

void dcz_sparse_build_columns(dcz_sparse *s, uint32_t cblocks, void *mem)
{
    const size_t stride = (size_t)s->cols + 1;
    uint32_t nnz = 0;
    for (uint32_t e = 0; e < s->entries; e++) nnz += s->step[e] != DCZ_STEP_FILLER;
    const uint32_t shift = bits_of(s->rows);
    const int wide = shift + (s->idx ? bits_of(s->k) : 0) > 16;
    uint32_t *ptr = mem;
    float *cval = s->val ? (float *)(ptr + cblocks * stride) : NULL;
    void *ent = cval ? (void *)(cval + nnz) : (void *)(ptr + cblocks * stride);
    uint16_t *e16 = wide ? NULL : ent;
    uint32_t *e32 = wide ? ent : NULL;
    s->cblocks = cblocks;
    s->cshift = shift;
    memset(ptr, 0, cblocks * stride * sizeof *ptr);
    /* counts at [c + 1], then running sums over blocks and columns: block
     * b's column c starts at ptr[b stride + c] */
    FOR_EACH_ENTRY(s, ptr[blk_ * stride + col_ + 1]++);
    uint32_t run = 0;
    for (uint32_t b = 0; b < cblocks; b++) {
        uint32_t *p = ptr + b * stride;
        p[0] = run;
        for (size_t c = 1; c < stride; c++) p[c] += p[c - 1];
        run = p[stride - 1];
    }
    /* ptr[b stride + c] as the cursor of column c, then shifted back */
    FOR_EACH_ENTRY(s, {
        const uint32_t at = ptr[blk_ * stride + col_]++;
        const uint32_t q = r_ | (s->idx ? (uint32_t)s->idx[e_] << shift : 0);
        if (e16) e16[at] = (uint16_t)q;
        else e32[at] = q;
        if (cval) cval[at] = s->val[e_];
    });
    for (uint32_t b = 0; b < cblocks; b++) {
        uint32_t *p = ptr + b * stride;
        for (size_t c = stride - 1; c > 0; c--) p[c] = p[c - 1];
        p[0] = b ? ptr[(b - 1) * stride + stride - 1] : 0;
    }
    s->col_ptr = ptr;
    s->cent16 = e16;
    s->cent32 = e32;
    s->cval = cval;
}

/* ---- x86 -------------------------------------------------------------------- */
#ifdef DCZ_X86

/* the panel width of a layer (SPMM_PANEL_MIN .. SPMM_PANEL_MAX): only the
 * AVX2 rows walk panels */
static uint32_t spmm_panel(const dcz_sparse *s)
{
    const double density = (double)s->entries / ((double)s->rows * s->cols + 1);
    uint32_t p = SPMM_PANEL_MIN;
    while (p < SPMM_PANEL_MAX && p * density < 16) p *= 2;
    return p;
}

/* fill_tile by blocks of 8 samples x 8 columns: eight row loads, a
 * transpose in registers, eight column stores (samples past nb load as 0);
 * the columns past the last whole block by fill_tile. */
__attribute__((target("avx2")))
static void fill_tile__avx2(const float *x, uint32_t cols, uint32_t c0, uint32_t c1, size_t b0,
                            size_t nb, float *tile)
{
    uint32_t c = c0;
    for (; c1 - c >= 8; c += 8) {
        for (size_t h = 0; h < SPMM_TILE; h += 8) {
            __m256 r[8];
            for (size_t i = 0; i < 8; i++)
                r[i] = h + i < nb ? _mm256_loadu_ps(x + (b0 + h + i) * cols + c) : _mm256_setzero_ps();
            /* pairs of samples interleaved, then quads, then halves swapped */
            const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
            const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
            const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
            const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
            const __m256 q0 = _mm256_shuffle_ps(t0, t2, 0x44), q1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            const __m256 q2 = _mm256_shuffle_ps(t1, t3, 0x44), q3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            const __m256 q4 = _mm256_shuffle_ps(t4, t6, 0x44), q5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            const __m256 q6 = _mm256_shuffle_ps(t5, t7, 0x44), q7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float *t = tile + (size_t)c * SPMM_TILE + h;
            _mm256_storeu_ps(t + 0 * SPMM_TILE, _mm256_permute2f128_ps(q0, q4, 0x20));
            _mm256_storeu_ps(t + 1 * SPMM_TILE, _mm256_permute2f128_ps(q1, q5, 0x20));
            _mm256_storeu_ps(t + 2 * SPMM_TILE, _mm256_permute2f128_ps(q2, q6, 0x20));
            _mm256_storeu_ps(t + 3 * SPMM_TILE, _mm256_permute2f128_ps(q3, q7, 0x20));
            _mm256_storeu_ps(t + 4 * SPMM_TILE, _mm256_permute2f128_ps(q0, q4, 0x31));
            _mm256_storeu_ps(t + 5 * SPMM_TILE, _mm256_permute2f128_ps(q1, q5, 0x31));
            _mm256_storeu_ps(t + 6 * SPMM_TILE, _mm256_permute2f128_ps(q2, q6, 0x31));
            _mm256_storeu_ps(t + 7 * SPMM_TILE, _mm256_permute2f128_ps(q3, q7, 0x31));
        }
    }
    fill_tile(x, cols, c, c1, b0, nb, tile);
}

/* w times tile lanes 8q .. 8q + 7 added to A */
#define MADD_AVX2(A, q) A = _mm256_add_ps(A, _mm256_mul_ps(w_, _mm256_loadu_ps(t_ + 8 * (q))))
/* One entry e of a row into its accumulators A0 .. A(nq - 1) (tile lanes
 * 8q .. 8q + 7); col is the row's cursor. Named registers, not an array,
 * so the compiler keeps them in registers. */
#define ENTRY_AVX2(e, col, A0, A1, A2, A3) do { \
    const uint8_t st_ = s->step[e]; \
    col += st_; \
    if (st_ != DCZ_STEP_FILLER) { \
        const __m256 w_ = _mm256_set1_ps(cbk ? s->codebook[s->idx[e]] : s->val[e]); \
        const float *t_ = tile + (size_t)col * SPMM_TILE; \
        MADD_AVX2(A0, 0); \
        if (nq > 1) MADD_AVX2(A1, 1); \
        if (nq > 2) MADD_AVX2(A2, 2); \
        if (nq > 3) MADD_AVX2(A3, 3); \
    } \
} while (0)

/* The accumulators of row r (lanes of nb samples) into y. */
__attribute__((target("avx2"), always_inline))
static inline void store_row__avx2(__m256 A0, __m256 A1, __m256 A2, __m256 A3, size_t nb,
                                   size_t b0, uint32_t rows, uint32_t r, float *y)
{
    float out[SPMM_TILE];
    _mm256_storeu_ps(out, A0);
    _mm256_storeu_ps(out + 8, A1);
    _mm256_storeu_ps(out + 16, A2);
    _mm256_storeu_ps(out + 24, A3);
    store_tile(out, nb, b0, rows, r, y);
}

/* Rows r0 .. r1 - 1 on one tile of nb <= 8 nq samples: two rows side by
 * side over their common length, then the rest of the longer one. cbk and
 * nq are constants at every call, so each combination compiles to its own
 * loop with the accumulators in registers. */
__attribute__((target("avx2"), always_inline))
static inline void rows_tile__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1,
                                   const float *bias, const float *tile, size_t b0, size_t nb,
                                   float *y, const int cbk, const int nq)
{
    uint32_t r = r0;
    for (; r + 2 <= r1; r += 2) {
        const uint32_t sa = s->row_ptr[r], sb = s->row_ptr[r + 1], eb = s->row_ptr[r + 2];
        const uint32_t n = sb - sa < eb - sb ? sb - sa : eb - sb;
        __m256 a0 = _mm256_set1_ps(bias ? bias[r] : 0.0f), a1 = a0, a2 = a0, a3 = a0;
        __m256 c0 = _mm256_set1_ps(bias ? bias[r + 1] : 0.0f), c1 = c0, c2 = c0, c3 = c0;
        uint32_t ca = 0, cc = 0;
        for (uint32_t i = 0; i < n; i++) {
            ENTRY_AVX2(sa + i, ca, a0, a1, a2, a3);
            ENTRY_AVX2(sb + i, cc, c0, c1, c2, c3);
        }
        for (uint32_t e = sa + n; e < sb; e++) ENTRY_AVX2(e, ca, a0, a1, a2, a3);
        for (uint32_t e = sb + n; e < eb; e++) ENTRY_AVX2(e, cc, c0, c1, c2, c3);
        store_row__avx2(a0, a1, a2, a3, nb, b0, s->rows, r, y);
        store_row__avx2(c0, c1, c2, c3, nb, b0, s->rows, r + 1, y);
    }
    if (r < r1) {
        __m256 a0 = _mm256_set1_ps(bias ? bias[r] : 0.0f), a1 = a0, a2 = a0, a3 = a0;
        uint32_t ca = 0;
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++)
            ENTRY_AVX2(e, ca, a0, a1, a2, a3);
        store_row__avx2(a0, a1, a2, a3, nb, b0, s->rows, r, y);
    }
}

/* Rows r0 .. r1 - 1 of a matrix wider than one panel, panel by panel, so
 * the part of the tile the entries read stays in cache: each row's sums and
 * cursor wait in acc and cur between panels. */
__attribute__((target("avx2"), always_inline))
static inline void rows_panels__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1,
                                     const float *bias, const float *tile, size_t b0, size_t nb,
                                     float *y, float *acc, uint32_t *cur, uint32_t panel,
                                     const int cbk, const int nq)
{
    for (uint32_t p0 = 0; p0 < s->cols; p0 += panel) {
        const uint32_t pend = s->cols - p0 > panel ? p0 + panel : s->cols;
        for (uint32_t r = r0; r < r1; r++) {
            float *ar = acc + (size_t)(r - r0) * SPMM_TILE;
            uint32_t *cr = cur + (size_t)(r - r0) * 2;
            __m256 a0, a1, a2, a3;
            uint32_t e, col;
            if (p0 == 0) {
                a0 = a1 = a2 = a3 = _mm256_set1_ps(bias ? bias[r] : 0.0f);
                e = s->row_ptr[r];
                col = 0;
            } else {
                a0 = _mm256_loadu_ps(ar);
                a1 = _mm256_loadu_ps(ar + 8);
                a2 = _mm256_loadu_ps(ar + 16);
                a3 = _mm256_loadu_ps(ar + 24);
                e = cr[0];
                col = cr[1];
            }
            const uint32_t end = s->row_ptr[r + 1];
            /* the entries whose column lies in this panel */
            for (; e < end && col + s->step[e] < pend; e++) ENTRY_AVX2(e, col, a0, a1, a2, a3);
            if (pend == s->cols) {
                store_row__avx2(a0, a1, a2, a3, nb, b0, s->rows, r, y);
            } else {
                _mm256_storeu_ps(ar, a0);
                _mm256_storeu_ps(ar + 8, a1);
                _mm256_storeu_ps(ar + 16, a2);
                _mm256_storeu_ps(ar + 24, a3);
                cr[0] = e;
                cr[1] = col;
            }
        }
    }
}

/* rows_tile__avx2 with its constants: codebook or values, and the eighths
 * of the tile nb samples fill. */
#define ROWS_TILE_NQ(cbk) do { \
    switch ((nb + 7) / 8) { \
    case 1: rows_tile__avx2(s, r0, r1, bias, tile, b0, nb, y, cbk, 1); break; \
    case 2: rows_tile__avx2(s, r0, r1, bias, tile, b0, nb, y, cbk, 2); break; \
    case 3: rows_tile__avx2(s, r0, r1, bias, tile, b0, nb, y, cbk, 3); break; \
    default: rows_tile__avx2(s, r0, r1, bias, tile, b0, nb, y, cbk, 4); break; \
    } \
} while (0)
#define ROWS_PANELS(cbk) \
    rows_panels__avx2(s, r0, r1, bias, tile, b0, nb, y, acc, cur, panel, cbk, 4)

/* Rows r0 .. r1 - 1 on a filled tile of nb samples from b0; work holds the
 * sums and cursors of those rows between panels. */
__attribute__((target("avx2")))
static void tile_rows__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                            const float *tile, size_t b0, size_t nb, float *y, float *work)
{
    float *acc = work;
    uint32_t *cur = (uint32_t *)(acc + (size_t)(r1 - r0) * SPMM_TILE);
    const uint32_t panel = spmm_panel(s);
    if (s->cols > panel && s->idx) ROWS_PANELS(1);
    else if (s->cols > panel) ROWS_PANELS(0);
    else if (s->idx) ROWS_TILE_NQ(1);
    else ROWS_TILE_NQ(0);
}

int dcz_spmm__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch)
{
    if (!scratch) return 0;
    for (size_t b0 = 0; b0 < batch; b0 += SPMM_TILE) {
        const size_t nb = batch - b0 < SPMM_TILE ? batch - b0 : SPMM_TILE;
        fill_tile__avx2(x, s->cols, 0, s->cols, b0, nb, scratch);
        tile_rows__avx2(s, r0, r1, bias, scratch, b0, nb, y, scratch + (size_t)s->cols * SPMM_TILE);
    }
    return 1;
}

#endif /* DCZ_X86 */

/* ---- aarch64 ---------------------------------------------------------------- */
#ifdef DCZ_NEON

/* Rows r0 .. r1 - 1 on a filled tile of nb samples from b0: one row at a
 * time, 16 samples of the tile in four registers, then the next 16. */
static void tile_rows__neon(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                            const float *tile, size_t b0, size_t nb, float *y)
{
    for (size_t h = 0; h < nb; h += 16) {
        const size_t nh = nb - h < 16 ? nb - h : 16;
        for (uint32_t r = r0; r < r1; r++) {
            const float32x4_t b = vdupq_n_f32(bias ? bias[r] : 0.0f);
            float32x4_t a0 = b, a1 = b, a2 = b, a3 = b;
            uint32_t col = 0;
            for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
                col += s->step[e];
                if (s->step[e] == DCZ_STEP_FILLER) continue;
                const float32x4_t w = vdupq_n_f32(dcz_sparse_weight(s, e));
                const float *t = tile + (size_t)col * SPMM_TILE + h;
                a0 = vaddq_f32(a0, vmulq_f32(w, vld1q_f32(t)));
                a1 = vaddq_f32(a1, vmulq_f32(w, vld1q_f32(t + 4)));
                a2 = vaddq_f32(a2, vmulq_f32(w, vld1q_f32(t + 8)));
                a3 = vaddq_f32(a3, vmulq_f32(w, vld1q_f32(t + 12)));
            }
            float out[16];
            vst1q_f32(out, a0);
            vst1q_f32(out + 4, a1);
            vst1q_f32(out + 8, a2);
            vst1q_f32(out + 12, a3);
            store_tile(out, nh, b0 + h, s->rows, r, y);
        }
    }
}

int dcz_spmm__neon(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch)
{
    if (!scratch) return 0;
    for (size_t b0 = 0; b0 < batch; b0 += SPMM_TILE) {
        const size_t nb = batch - b0 < SPMM_TILE ? batch - b0 : SPMM_TILE;
        fill_tile(x, s->cols, 0, s->cols, b0, nb, scratch);
        tile_rows__neon(s, r0, r1, bias, scratch, b0, nb, y);
    }
    return 1;
}

#endif /* DCZ_NEON */

/* ---- dispatch --------------------------------------------------------------- */

/* the batch-1 kernel without the lane form */
static dcz_spmv_kind plain_kind(const dcz_sparse *s)
{
    return s->col_ptr ? DCZ_SPMV_COLUMNS : DCZ_SPMV_REF;
}

/* Whether this CPU runs s's lane form by its vector kernel. */
static inline int lanes_vector(const dcz_sparse *s)
{
    if (!s->lgroups) return 0;
#ifdef DCZ_X86
    if (s->lrows == DCZ_LANE8_ROWS) return dcz_lanes8_variant() != NULL;
    return dcz_isa_supported(DCZ_ISA_AVX512);
#else
    return 0;
#endif
}

#ifdef DCZ_X86
/* nonzeros_past__avx512 on AVX2: 32 at a time */
__attribute__((target("avx2,popcnt")))
static int nonzeros_past__avx2(const float *x, uint32_t n, uint64_t need)
{
    const __m256 zero = _mm256_setzero_ps();
    uint64_t nz = 0;
    uint32_t c = 0;
    for (; c + 32 <= n && nz <= need; c += 32)
        for (int v = 0; v < 4; v++)
            nz += (uint64_t)__builtin_popcount(
                (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + c + 8 * v), zero, _CMP_NEQ_UQ)));
    for (; c < n && nz <= need; c++) nz += x[c] != 0.0f;
    return nz > need;
}

/* Whether more than `need` of x[0 .. n) are nonzero (NaN counts, -0 does
 * not, as with x != 0), counted 64 at a time until the count passes need:
 * eight scalar tests at a time took 95 ns of LeNet-300-100's 2.8 us. */
__attribute__((target("avx512f,popcnt")))
static int nonzeros_past__avx512(const float *x, uint32_t n, uint64_t need)
{
    const __m512 zero = _mm512_setzero_ps();
    uint64_t nz = 0;
    uint32_t c = 0;
    for (; c + 64 <= n && nz <= need; c += 64)
        for (int v = 0; v < 4; v++)
            nz += (uint64_t)__builtin_popcount(
                _mm512_cmp_ps_mask(_mm512_loadu_ps(x + c + 16 * v), zero, _CMP_NEQ_UQ));
    for (; c < n && nz <= need; c += 16) {
        const __mmask16 in = n - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - c)) - 1);
        nz += (uint64_t)__builtin_popcount(
            _mm512_mask_cmp_ps_mask(in, _mm512_maskz_loadu_ps(in, x + c), zero, _CMP_NEQ_UQ));
    }
    return nz > need;
}
#endif

dcz_spmv_kind dcz_spmv_pick(const dcz_sparse *s, const float *x)
{
#ifdef DCZ_X86
    if (lanes_vector(s)) {
        /* lanes win once more than s->lneed inputs are nonzero, which
         * the count stops at */
        if (!s->col_ptr) return DCZ_SPMV_LANES;
        if (dcz_isa_supported(DCZ_ISA_AVX512) ? nonzeros_past__avx512(x, s->cols, s->lneed)
                                              : nonzeros_past__avx2(x, s->cols, s->lneed))
            return DCZ_SPMV_LANES;
    }
#else
    (void)x;
#endif
    return plain_kind(s);
}

const float *dcz_spmv_input(const dcz_sparse *s, dcz_spmv_kind kind, const float *x,
                            float *scratch)
{
#ifdef DCZ_X86
    if (kind == DCZ_SPMV_LANES && lanes_vector(s))
        return s->lrows == DCZ_LANE8_ROWS ? dcz_lanes8_panels__avx2(s, x, scratch)
                                          : dcz_lanes_panels__avx512(s, x, scratch);
#endif
    (void)scratch;
    return x;
}

void dcz_spmv_part(const dcz_sparse *s, dcz_spmv_kind kind, uint32_t part, uint32_t parts,
                   const float *bias, const dcz_act *act, const float *xin, float *y)
{
    uint32_t r0, r1;
    if (kind == DCZ_SPMV_COLUMNS && s->col_ptr && s->cblocks == parts) {
        dcz_spmv_csc(s, part, bias, xin, y);
        if (act) {
            dcz_sparse_block_rows(s, part, &r0, &r1);
            dcz_act_apply(act, y + r0, r1 - r0);
        }
        return;
    }
    if (kind == DCZ_SPMV_LANES && s->lgroups) {
        uint32_t g0, g1;
        dcz_part_range(s->lgroups, part, parts, &g0, &g1);
#ifdef DCZ_X86
        if (lanes_vector(s)) {
            if (s->lrows == DCZ_LANE8_ROWS) dcz_spmv_lanes8__avx2(s, g0, g1, bias, act, xin, y);
            else dcz_spmv_lanes__avx512(s, g0, g1, bias, act, xin, y);
            return;
        }
#endif
        dcz_spmv_lanes_ref(s, g0, g1, bias, act, xin, y);
        return;
    }
    dcz_part_range(s->rows, part, parts, &r0, &r1);
    dcz_spmm_ref_rows(s, r0, r1, bias, xin, 1, y);
    dcz_act_apply(act, y + r0, r1 - r0);
}

/* Chunks per thread of a call shared by threads: enough that a thread on a
 * slower core takes fewer of them (bench/bench_spmv.c, the EIE layers on
 * two threads). */
#define CHUNKS_PER_THREAD 8

/* chunks of n items for `threads` threads: about CHUNKS_PER_THREAD each,
 * one when a single thread runs the call */
static uint32_t share_chunks(uint32_t n, uint32_t threads)
{
    const uint32_t want = threads > 1 ? threads * CHUNKS_PER_THREAD : 1;
    return n < want ? (n ? n : 1) : want;
}

/* the next chunk of a call shared by threads (past the last: none left) */
static uint32_t take_chunk(uint32_t *next)
{
    return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
}

/* One batch-1 call of dcz_spmv_pool. */
typedef struct spmv_job {
    const dcz_sparse *s;
    dcz_spmv_kind kind;
    const float *bias, *xin;
    const dcz_act *act;
    float *y;
    uint32_t chunks, next;
} spmv_job;

static void spmv_share(void *ctx, uint32_t t)
{
    spmv_job *j = ctx;
    (void)t;
    for (uint32_t c; (c = take_chunk(&j->next)) < j->chunks;)
        dcz_spmv_part(j->s, j->kind, c, j->chunks, j->bias, j->act, j->xin, j->y);
}

void dcz_spmv_pool(dcz_pool *pool, const dcz_sparse *s, dcz_spmv_kind kind, const float *bias,
                   const dcz_act *act, const float *xin, float *y)
{
    const uint32_t items = kind == DCZ_SPMV_LANES && s->lgroups ? s->lgroups : s->rows;
    const uint32_t chunks = kind == DCZ_SPMV_COLUMNS && s->col_ptr
        ? s->cblocks : share_chunks(items, dcz_pool_threads(pool));
    if (!pool) {   /* the caller alone: the parts in turn, no job to share */
        for (uint32_t c = 0; c < chunks; c++) dcz_spmv_part(s, kind, c, chunks, bias, act, xin, y);
        return;
    }
    spmv_job j = { s, kind, bias, xin, act, y, chunks, 0 };
    dcz_pool_run(pool, spmv_share, &j);
}

void dcz_spmv(const dcz_sparse *s, const float *bias, const float *x, float *y, float *scratch)
{
    dcz_spmv_kind kind = dcz_spmv_pick(s, x);
    if (kind == DCZ_SPMV_LANES && !scratch) kind = plain_kind(s);
    dcz_spmv_pool(NULL, s, kind, bias, NULL, dcz_spmv_input(s, kind, x, scratch), y);
}

void dcz_spmm_rows(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch)
{
    int done = 0;
    switch (dcz_isa_best()) {
#ifdef DCZ_X86
    case DCZ_ISA_AVX2: done = dcz_spmm__avx2(s, r0, r1, bias, x, batch, y, scratch); break;
#endif
#ifdef DCZ_NEON
    case DCZ_ISA_NEON: done = dcz_spmm__neon(s, r0, r1, bias, x, batch, y, scratch); break;
#endif
    default: break;
    }
    if (!done) dcz_spmm_ref_rows(s, r0, r1, bias, x, batch, y);
}

void dcz_spmm(const dcz_sparse *s, const float *bias, const float *x, size_t batch, float *y,
              float *scratch)
{
    dcz_spmm_rows(s, 0, s->rows, bias, x, batch, y, scratch);
}

/* The two phases of a tile on this machine's vector variant, which the
 * caller knows there is (on x86: AVX2): its columns c0 .. c1 - 1 filled,
 * and rows r0 .. r1 - 1 run on it, work for their sums between panels. */
static void fill_tile_vec(const float *x, uint32_t cols, uint32_t c0, uint32_t c1, size_t b0,
                          size_t nb, float *tile)
{
#ifdef DCZ_X86
    fill_tile__avx2(x, cols, c0, c1, b0, nb, tile);
#else
    fill_tile(x, cols, c0, c1, b0, nb, tile);
#endif
}

static void tile_rows_vec(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                          const float *tile, size_t b0, size_t nb, float *y, float *work)
{
#ifdef DCZ_X86
    tile_rows__avx2(s, r0, r1, bias, tile, b0, nb, y, work);
#elif defined(DCZ_NEON)
    (void)work;
    tile_rows__neon(s, r0, r1, bias, tile, b0, nb, y);
#else
    (void)s; (void)r0; (void)r1; (void)bias; (void)tile; (void)b0; (void)nb; (void)y; (void)work;
#endif
}

/* One call of dcz_spmm_pool, phase by phase. */
typedef struct spmm_job {
    const dcz_sparse *s;
    const float *bias, *x;
    size_t batch;
    float *y, *scratch;
    uint64_t part_floats;
    int vec;              /* a vector variant runs on tiles; else the reference on rows */
    size_t b0, nb;        /* the tile in hand */
    int fill;             /* this phase transposes the tile's columns, else runs rows */
    uint32_t chunks, next;
} spmm_job;

static void spmm_part(void *ctx, uint32_t t)
{
    spmm_job *j = ctx;
    const dcz_sparse *s = j->s;
    for (uint32_t c; (c = take_chunk(&j->next)) < j->chunks;) {
        uint32_t lo, hi;
        dcz_part_range(j->fill ? s->cols : s->rows, c, j->chunks, &lo, &hi);
        if (j->fill)
            fill_tile_vec(j->x, s->cols, lo, hi, j->b0, j->nb, j->scratch);
        else if (j->vec)
            tile_rows_vec(s, lo, hi, j->bias, j->scratch, j->b0, j->nb, j->y,
                          j->scratch + (size_t)t * j->part_floats + (size_t)s->cols * SPMM_TILE);
        else
            dcz_spmm_ref_rows(s, lo, hi, j->bias, j->x, j->batch, j->y);
    }
}

void dcz_spmm_pool(dcz_pool *pool, const dcz_sparse *s, const float *bias, const float *x,
                   size_t batch, float *y, float *scratch, uint64_t part_floats)
{
    const uint32_t threads = dcz_pool_threads(pool);
    spmm_job j = { s, bias, x, batch, y, scratch, part_floats, 0, 0, 0, 0, 0, 0 };
    j.vec = scratch && dcz_isa_best() != DCZ_ISA_REF;
    if (!j.vec) {
        j.chunks = share_chunks(s->rows, threads);
        dcz_pool_run(pool, spmm_part, &j);
        return;
    }
    for (j.b0 = 0; j.b0 < batch; j.b0 += SPMM_TILE) {
        j.nb = batch - j.b0 < SPMM_TILE ? batch - j.b0 : SPMM_TILE;
        j.fill = 1;
        j.chunks = share_chunks(s->cols, threads);
        j.next = 0;
        dcz_pool_run(pool, spmm_part, &j);
        j.fill = 0;
        j.chunks = share_chunks(s->rows, threads);
        j.next = 0;
        dcz_pool_run(pool, spmm_part, &j);
    }
}

/* ---- ReLU --------------------------------------------------------------------- */

/* y = x where x > 0, else 0 (NaN and -0 too): a compare and an and per
 * vector, the reference's bits. */
#ifdef DCZ_X86
__attribute__((target("avx2")))
static void relu__avx2(const float *x, size_t n, float *y)
{
    const __m256 zero = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(y + i, _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), v));
    }
    for (; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
#endif

#ifdef DCZ_NEON
static void relu__neon(const float *x, size_t n, float *y)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        vst1q_f32(y + i, vreinterpretq_f32_u32(vandq_u32(vcgtq_f32(v, zero), vreinterpretq_u32_f32(v))));
    }
    for (; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
#endif

int dcz_relu_isa(dcz_isa isa, const float *x, size_t n, float *y)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        relu__avx2(x, n, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON) {
        relu__neon(x, n, y);
        return 1;
    }
#endif
    (void)isa;
    (void)x;
    (void)n;
    (void)y;
    return 0;
}

void dcz_relu(const float *x, size_t n, float *y)
{
    if (dcz_relu_isa(dcz_isa_best(), x, n, y)) return;
    if (y != x) memcpy(y, x, n * sizeof *y);
    dcz_relu_ref(y, n);
}

/* ---- Clip (ReLU6) ------------------------------------------------------------------ */

/* y = lo > t ? lo : t, t = hi < x ? hi : x: the reference's formula, NaN
 * and zeros of both signs included: max_ps(a, b) and min_ps(a, b) return
 * b unless a compares greater (less), as the conditional expressions do;
 * NEON's min and max propagate NaN, so there a compare and a select. */
#ifdef DCZ_X86
__attribute__((target("avx2")))
static void clip__avx2(float lo, float hi, const float *x, size_t n, float *y)
{
    const __m256 l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_max_ps(l, _mm256_min_ps(h, _mm256_loadu_ps(x + i))));
    for (; i < n; i++) {
        const float t = hi < x[i] ? hi : x[i];
        y[i] = lo > t ? lo : t;
    }
}
#endif

#ifdef DCZ_NEON
static void clip__neon(float lo, float hi, const float *x, size_t n, float *y)
{
    const float32x4_t l = vdupq_n_f32(lo), h = vdupq_n_f32(hi);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i), t = vbslq_f32(vcltq_f32(h, v), h, v);
        vst1q_f32(y + i, vbslq_f32(vcgtq_f32(l, t), l, t));
    }
    for (; i < n; i++) {
        const float t = hi < x[i] ? hi : x[i];
        y[i] = lo > t ? lo : t;
    }
}
#endif

int dcz_clip_isa(dcz_isa isa, float lo, float hi, const float *x, size_t n, float *y)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        clip__avx2(lo, hi, x, n, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON) {
        clip__neon(lo, hi, x, n, y);
        return 1;
    }
#endif
    (void)isa;
    (void)lo;
    (void)hi;
    (void)x;
    (void)n;
    (void)y;
    return 0;
}

void dcz_clip(float lo, float hi, const float *x, size_t n, float *y)
{
    if (dcz_clip_isa(DCZ_ISA_AVX2, lo, hi, x, n, y) || dcz_clip_isa(DCZ_ISA_NEON, lo, hi, x, n, y)) return;
    const float param[2] = { lo, hi };
    dcz_activation_ref(DCZ_OP_CLIP, param, x, n, y);
}

void dcz_act_apply(const dcz_act *act, float *y, size_t n)
{
    if (act && act->op == DCZ_OP_RELU) dcz_relu(y, n, y);
    else if (act && act->op == DCZ_OP_CLIP) dcz_clip(act->lo, act->hi, y, n, y);
}

/* ---- Add ---------------------------------------------------------------------------- */

/* y = act(a + b), a vector at a time: one rounding per sum, then ReLU or
 * CLIP by the instructions of relu and clip above (the references' bits);
 * act NULL or op 0: the sum alone. */
#ifdef DCZ_X86
__attribute__((target("avx2")))
static void add__avx2(const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
    const int op = act ? act->op : 0;
    const float lo = op == DCZ_OP_CLIP ? act->lo : 0.0f, hi = op == DCZ_OP_CLIP ? act->hi : 0.0f;
    const __m256 zero = _mm256_setzero_ps(), l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        if (op == DCZ_OP_RELU) v = _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), v);
        else if (op == DCZ_OP_CLIP) v = _mm256_max_ps(l, _mm256_min_ps(h, v));
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; i++) y[i] = dcz_act_one(act, a[i] + b[i]);
}
#endif

#ifdef DCZ_NEON
static void add__neon(const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, dcz_act__neon(vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)), act));
    for (; i < n; i++) y[i] = dcz_act_one(act, a[i] + b[i]);
}
#endif

int dcz_add_isa(dcz_isa isa, const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        add__avx2(a, b, n, act, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON) {
        add__neon(a, b, n, act, y);
        return 1;
    }
#endif
    (void)isa;
    (void)a;
    (void)b;
    (void)n;
    (void)act;
    (void)y;
    return 0;
}

void dcz_add(const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
    if (dcz_add_isa(DCZ_ISA_AVX2, a, b, n, act, y) || dcz_add_isa(DCZ_ISA_NEON, a, b, n, act, y)) return;
    dcz_add_ref(a, b, n, y);
    dcz_act_apply(act, y, n);
}
