/* kernels_qspmm.c: the fully connected matrix of 8-bit schemes (int8,
 * fixed8) on 32-bit sums, vectorized (the references are kernels_int.c's,
 * on 64-bit sums), on a batch by tiles, one sample at a time below half a
 * tile; the integer lane form (kernels_qlanes.c) where the loader built
 * one.
 *
 * Why 32 bits is exact: the loader admits an 8-bit model only when, for
 * every output channel, the bias plus the largest |weight| x 127 of every
 * entry stays below 2^31 (qload.c, finish_weighted). Every partial sum, in
 * any order, is then an int32, so these kernels give the references' bits.
 * Requantization likewise: |acc| < 2^31 and |mult| <= 2^31 keep acc * mult
 * below 2^62, and adding the rounding half (at most 2^61) cannot overflow,
 * so the rounding shift is one add and one arithmetic shift where the
 * reference divides.
 *
 * The fully connected matrix on a batch: the samples are taken a tile at a
 * time (16 samples; 32 on AVX-512), copied once per tile into a
 * column-major tile (column c holds the tile's samples' input c, int16, in
 * the scratch); each row then walks its entries and adds weight x column
 * into the tile's int32 sums held in vector registers. AVX2 and AVX-512
 * take the entries two by two: the two columns interleaved (unpack) meet
 * the two weights in one multiply-add of pairs (vpmaddwd: each product at
 * most 127 x 127, a pair's sum at most 32,258, well inside the int32 it
 * lands in). A row's entries are decoded once per tile, so the wider tile
 * of AVX-512 halves the decoding per sample (LeNet-300-100 int8 at batch
 * 64, one thread: 155 us on AVX2 tiles, 145 on AVX-512 ones; the input's
 * quantization and the tile's transposition take much of the rest). NEON
 * widens each weight x column into the int32 sums (smlal).
 * Below half a tile of samples a tile would be mostly empty: the rows are
 * summed one sample at a time, on AVX-512 16 entries a step (their columns
 * a prefix sum of their steps in the register, inputs gathered, weights
 * permuted out of the row's table; LeNet-300-100 int8 at batch 1: 17.3 ->
 * 8.6 us), elsewhere by the scalar kernel, which is also the variant where
 * there is no vector unit.
 *
 * Dispatch: x86 with AVX-512BW: the matrix's integer lane form where the
 * loader built one (kernels_qlanes.c; any batch: with the AVX-512
 * quantization and requantization of kernels_qrequant.c, the whole
 * LeNet-300-100 int8, one thread, batch 1 18.7 -> 1.8 us, batch 64 158 ->
 * 66.8 us), else its __avx512 tiles; with AVX2: __avx2; aarch64: __neon;
 * otherwise the scalar kernel. The x86 variants
 * have per-function target attributes, so libdcz needs no global -m flags.
 *
 * Checked by tests/unit/test_qkernels.c: every variant this machine runs,
 * bit for bit against dcz_qspmm_ref on the matrix grid (8-bit ranges with
 * their extremes, batches across and inside tiles).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/q8/qlanes.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/model.h"

#if DCZ_BUILD_Q8_X86
#include <immintrin.h>
#define DCZ_X86 1
#elif DCZ_BUILD_Q8_NEON
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

#define QTILE 16        /* samples of a tile: AVX2, NEON */
#define QTILE_WIDE 32   /* AVX-512 */

uint64_t dcz_qspmm8_scratch_floats(uint32_t cols)
{
    /* the widest tile, which also holds a sample widened to int32, or the
     * lane form's panels */
    const uint64_t tile = (uint64_t)cols * QTILE_WIDE * sizeof(int16_t), lanes = dcz_qlanes_scratch_bytes(cols);
    return ((tile > lanes ? tile : lanes) + sizeof(float) - 1) / sizeof(float);
}

/* ---- the fully connected matrix ----------------------------------------- */

/* Every row of s on samples b0 .. b0 + nb - 1, one sample at a time. */
static void rows_scalar(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t b0, size_t nb,
                        int64_t *acc)
{
    const uint32_t in = s->cols, out = s->rows;
    for (size_t b = b0; b < b0 + nb; b++) {
        const dcz_q *xb = x + b * in;
        for (uint32_t r = 0; r < out; r++) {
            int32_t a = bias ? (int32_t)bias[r] : 0;
            const int16_t *tab = s->idx ? s->qtab + (size_t)r * s->k : NULL;
            uint32_t col = 0;
            for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
                col += s->step[e];
                if (s->step[e] == DCZ_STEP_FILLER) continue;
                a += (int32_t)(tab ? tab[s->idx[e]] : s->qval[e]) * xb[col];
            }
            acc[b * out + r] = a;
        }
    }
}

/* The tile of width samples: tile[c * width + t] = sample b0 + t's input
 * c, 0 past nb. */
static void fill_qtile(const dcz_q *x, uint32_t in, size_t b0, size_t nb, size_t width, int16_t *tile)
{
    if (nb < width) memset(tile, 0, (size_t)in * width * sizeof *tile);
    for (size_t t = 0; t < nb; t++) {
        const dcz_q *xb = x + (b0 + t) * in;
        for (uint32_t c = 0; c < in; c++) tile[(size_t)c * width + t] = xb[c];
    }
}

/* The next real entry of a row from *e (before e1): its weight and column;
 * 0 at the row's end. */
static inline int next_entry(const dcz_qsparse *s, const int16_t *tab, uint32_t *e, uint32_t e1, uint32_t *col,
                             int32_t *w)
{
    for (; *e < e1; (*e)++) {
        *col += s->step[*e];
        if (s->step[*e] == DCZ_STEP_FILLER) continue;
        *w = tab ? tab[s->idx[*e]] : s->qval[*e];
        (*e)++;
        return 1;
    }
    return 0;
}

/* The next two real entries of a row (the second weight 0 and its column
 * the first's when the row ends after one): their columns and the two
 * weights as one 32-bit pair, low half first, the operand of vpmaddwd; 0 at
 * the row's end. */
static inline int next_pair(const dcz_qsparse *s, const int16_t *tab, uint32_t *e, uint32_t e1, uint32_t *col,
                            uint32_t *c1, uint32_t *c2, int32_t *pair)
{
    int32_t w1, w2 = 0;
    if (!next_entry(s, tab, e, e1, col, &w1)) return 0;
    *c1 = *col;
    *c2 = next_entry(s, tab, e, e1, col, &w2) ? *col : *c1;
    *pair = (int32_t)(((uint32_t)(uint16_t)w2 << 16) | (uint16_t)w1);
    return 1;
}

/* ---- x86 ---------------------------------------------------------------- */
#ifdef DCZ_X86

/* Row r's sums of a tile of nb samples into acc, plus the bias: sample t's
 * sum is in lo for t % 8 < 4, else in hi, at t % 4 + 4 (t / 8), the order
 * vpunpck{l,h}wd leave them in within each 128-bit half (AVX2) or lane
 * (AVX-512). */
static void store_tile_sums(const int32_t *lo, const int32_t *hi, const int64_t *bias, uint32_t r, size_t b0,
                            size_t nb, uint32_t out, int64_t *acc)
{
    const int32_t b = bias ? (int32_t)bias[r] : 0;
    for (size_t t = 0; t < nb; t++) {
        const unsigned i = (unsigned)(t % 4) + 4 * (unsigned)(t / 8);
        acc[(b0 + t) * out + r] = b + ((t % 8) < 4 ? lo[i] : hi[i]);
    }
}

/* Rows of s on one tile of nb samples; sums of row r for samples
 * t = 0..15 end in lo (t 0-3, 8-11) and hi (t 4-7, 12-15), the order of
 * vpunpck{l,h}wd within each 128-bit half. */
__attribute__((target("avx2")))
static void tile_rows__avx2(const dcz_qsparse *s, const int64_t *bias, const int16_t *tile, size_t b0,
                            size_t nb, int64_t *acc)
{
    const uint32_t out = s->rows;
    for (uint32_t r = 0; r < out; r++) {
        const int16_t *tab = s->idx ? s->qtab + (size_t)r * s->k : NULL;
        __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
        uint32_t e = s->row_ptr[r], col = 0, c1, c2;
        const uint32_t e1 = s->row_ptr[r + 1];
        int32_t pair;
        while (next_pair(s, tab, &e, e1, &col, &c1, &c2, &pair)) {
            const __m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(tile + (size_t)c1 * QTILE));
            const __m256i v2 = _mm256_loadu_si256((const __m256i *)(const void *)(tile + (size_t)c2 * QTILE));
            const __m256i wp = _mm256_set1_epi32(pair);
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(v1, v2), wp));
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(v1, v2), wp));
        }
        int32_t l[8], h[8];
        _mm256_storeu_si256((__m256i *)(void *)l, lo);
        _mm256_storeu_si256((__m256i *)(void *)h, hi);
        store_tile_sums(l, h, bias, r, b0, nb, out, acc);
    }
}

/* tile_rows__avx2 on tiles of 32 samples, a 128-bit lane for each 8. */
__attribute__((target("avx512f,avx512bw")))
static void tile_rows__avx512(const dcz_qsparse *s, const int64_t *bias, const int16_t *tile, size_t b0,
                              size_t nb, int64_t *acc)
{
    const uint32_t out = s->rows;
    for (uint32_t r = 0; r < out; r++) {
        const int16_t *tab = s->idx ? s->qtab + (size_t)r * s->k : NULL;
        __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
        uint32_t e = s->row_ptr[r], col = 0, c1, c2;
        const uint32_t e1 = s->row_ptr[r + 1];
        int32_t pair;
        while (next_pair(s, tab, &e, e1, &col, &c1, &c2, &pair)) {
            const __m512i v1 = _mm512_loadu_si512((const void *)(tile + (size_t)c1 * QTILE_WIDE));
            const __m512i v2 = _mm512_loadu_si512((const void *)(tile + (size_t)c2 * QTILE_WIDE));
            const __m512i wp = _mm512_set1_epi32(pair);
            lo = _mm512_add_epi32(lo, _mm512_madd_epi16(_mm512_unpacklo_epi16(v1, v2), wp));
            hi = _mm512_add_epi32(hi, _mm512_madd_epi16(_mm512_unpackhi_epi16(v1, v2), wp));
        }
        int32_t l[16], h[16];
        _mm512_storeu_si512((void *)l, lo);
        _mm512_storeu_si512((void *)h, hi);
        store_tile_sums(l, h, bias, r, b0, nb, out, acc);
    }
}

/* Whether row_sums__avx512 runs s: codebooks of at most 32 values (a row's
 * table in two registers) or values per entry. */
static int row_sums_fit(const dcz_qsparse *s)
{
    return !s->idx || s->k <= 32;
}

/* Rows of s on samples b0 .. b0 + nb - 1 one sample at a time, as
 * rows_scalar, 16 entries a step: their columns the running sum of their
 * steps (a prefix sum in the register), the inputs gathered from the
 * sample widened to int32 in scratch (at least cols int32), the weights
 * looked up in the row's table by a permute, fillers masked out. */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void row_sums__avx512(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t b0, size_t nb,
                             int32_t *xw, int64_t *acc)
{
    const uint32_t in = s->cols, out = s->rows;
    const __m512i zero = _mm512_setzero_si512(), last = _mm512_set1_epi32(15);
    const __m512i filler = _mm512_set1_epi32((int32_t)DCZ_STEP_FILLER);
    for (size_t b = b0; b < b0 + nb; b++) {
        const dcz_q *xb = x + b * in;
        uint32_t c = 0;
        for (; c + 16 <= in; c += 16)
            _mm512_storeu_si512((void *)(xw + c), _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(xb + c))));
        for (; c < in; c++) xw[c] = xb[c];
        for (uint32_t r = 0; r < out; r++) {
            __m512i t0 = zero, t1 = zero;   /* the row's table, values 0-15 and 16-31 */
            if (s->idx) {
                const int16_t *tab = s->qtab + (size_t)r * s->k;
                const uint32_t k0 = s->k < 16 ? s->k : 16, k1 = s->k - k0;
                t0 = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16((__mmask16)((1u << k0) - 1), tab));
                t1 = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16((__mmask16)((1u << k1) - 1), tab + k0));
            }
            __m512i sum = zero, base = zero;   /* base: the column before the step, in every lane */
            const uint32_t e1 = s->row_ptr[r + 1];
            for (uint32_t e = s->row_ptr[r]; e < e1; e += 16) {
                const uint32_t n = e1 - e < 16 ? e1 - e : 16;
                const __mmask16 m = (__mmask16)((1u << n) - 1);
                const __m512i st = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, s->step + e));
                __m512i col = st;   /* prefix sums: lane i adds lane i - k, k = 1, 2, 4, 8 */
                col = _mm512_add_epi32(col, _mm512_alignr_epi32(col, zero, 15));
                col = _mm512_add_epi32(col, _mm512_alignr_epi32(col, zero, 14));
                col = _mm512_add_epi32(col, _mm512_alignr_epi32(col, zero, 12));
                col = _mm512_add_epi32(col, _mm512_alignr_epi32(col, zero, 8));
                col = _mm512_add_epi32(col, base);
                base = _mm512_permutexvar_epi32(last, col);
                const __mmask16 real = _mm512_mask_cmpneq_epi32_mask(m, st, filler);
                const __m512i xv = _mm512_mask_i32gather_epi32(zero, real, col, xw, 4);
                const __m512i w = s->idx
                    ? _mm512_permutex2var_epi32(t0, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, s->idx + e)), t1)
                    : _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(m, s->qval + e));
                sum = _mm512_mask_add_epi32(sum, real, sum, _mm512_mullo_epi32(w, xv));
            }
            const int32_t a = (bias ? (int32_t)bias[r] : 0) + _mm512_reduce_add_epi32(sum);
            acc[b * out + r] = a;
        }
    }
}
#endif

/* ---- aarch64 ------------------------------------------------------------ */
#ifdef DCZ_NEON

/* Rows of s on one tile of nb samples: four int32x4 sums for the 16. */
static void tile_rows__neon(const dcz_qsparse *s, const int64_t *bias, const int16_t *tile, size_t b0,
                            size_t nb, int64_t *acc)
{
    const uint32_t out = s->rows;
    for (uint32_t r = 0; r < out; r++) {
        const int16_t *tab = s->idx ? s->qtab + (size_t)r * s->k : NULL;
        int32x4_t a0 = vdupq_n_s32(0), a1 = a0, a2 = a0, a3 = a0;
        uint32_t e = s->row_ptr[r], col = 0;
        const uint32_t e1 = s->row_ptr[r + 1];
        int32_t w;
        while (next_entry(s, tab, &e, e1, &col, &w)) {
            const int16x8_t v0 = vld1q_s16(tile + (size_t)col * QTILE), v1 = vld1q_s16(tile + (size_t)col * QTILE + 8);
            const int16_t w16 = (int16_t)w;
            a0 = vmlal_n_s16(a0, vget_low_s16(v0), w16);
            a1 = vmlal_high_n_s16(a1, v0, w16);
            a2 = vmlal_n_s16(a2, vget_low_s16(v1), w16);
            a3 = vmlal_high_n_s16(a3, v1, w16);
        }
        int32_t sum[QTILE];
        vst1q_s32(sum, a0);
        vst1q_s32(sum + 4, a1);
        vst1q_s32(sum + 8, a2);
        vst1q_s32(sum + 12, a3);
        const int32_t b = bias ? (int32_t)bias[r] : 0;
        for (size_t t = 0; t < nb; t++) acc[(b0 + t) * out + r] = b + sum[t];
    }
}
#endif

typedef void (*tile_fn)(const dcz_qsparse *s, const int64_t *bias, const int16_t *tile, size_t b0, size_t nb,
                        int64_t *acc);

/* The tile kernel of isa and its tile's samples; NULL when this build or
 * machine has none. */
static tile_fn tile_variant(dcz_isa isa, size_t *width)
{
    *width = QTILE;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw) {
        *width = QTILE_WIDE;
        return tile_rows__avx512;
    }
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) return tile_rows__avx2;
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) return tile_rows__neon;
#endif
    (void)isa;
    return NULL;
}

int dcz_qspmm8_isa(dcz_isa isa, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                   int16_t *scratch, int64_t *acc)
{
    size_t width;
    const tile_fn tile = tile_variant(isa, &width);
    if (isa != DCZ_ISA_REF && !tile) return 0;
    if (s->lslices && isa == dcz_qlanes_isa(s) && dcz_qlanes_run(s, bias, x, batch, scratch, acc)) return 1;
    size_t b0 = 0;
    if (tile && s->rows && s->cols)
        while (batch - b0 >= width / 2) {
            const size_t nb = batch - b0 < width ? batch - b0 : width;
            fill_qtile(x, s->cols, b0, nb, width, scratch);
            tile(s, bias, scratch, b0, nb, acc);
            b0 += nb;
        }
#ifdef DCZ_X86
    if (tile == tile_rows__avx512 && row_sums_fit(s)) {
        row_sums__avx512(s, bias, x, b0, batch - b0, (int32_t *)(void *)scratch, acc);
        return 1;
    }
#endif
    rows_scalar(s, bias, x, b0, batch - b0, acc);
    return 1;
}

/* The variant dcz_qspmm8 runs: the widest this machine has. */
static dcz_isa qspmm8_isa(void)
{
    size_t width;
    if (tile_variant(DCZ_ISA_AVX512, &width)) return DCZ_ISA_AVX512;
    return dcz_isa_best();
}

const char *dcz_qspmm8_variant(void)
{
    size_t width;
    const dcz_isa isa = qspmm8_isa();
    if (!tile_variant(isa, &width)) return NULL;
    return isa == DCZ_ISA_AVX512 ? "avx512 tiles of 32 samples"
           : isa == DCZ_ISA_AVX2 ? "avx2 tiles of 16 samples" : "neon tiles of 16 samples";
}

void dcz_qspmm8(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, int16_t *scratch,
                int64_t *acc)
{
    if (!dcz_qspmm8_isa(qspmm8_isa(), s, bias, x, batch, scratch, acc))
        dcz_qspmm8_isa(DCZ_ISA_REF, s, bias, x, batch, scratch, acc);
}
