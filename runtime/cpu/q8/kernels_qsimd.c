/* kernels_qsimd.c: the integer kernels of 8-bit schemes (int8, fixed8) on
 * 32-bit sums, vectorized (the references are kernels_int.c's, on 64-bit
 * sums).
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
 * The convolution's taps (every scheme): a stored weight adds itself times
 * a shifted input row to an output row of 64-bit sums, 4 outputs a step
 * (the product of two 16-bit values fits the signed 32 x 32 -> 64
 * multiply), the loop around them kernels_int.c's.
 *
 * Dispatch: x86 with AVX-512BW: the matrix's integer lane form where the
 * loader built one (kernels_qlanes.c; any batch: with the AVX-512
 * quantization and requantization below, the whole LeNet-300-100 int8, one
 * thread, batch 1 18.7 -> 1.8 us, batch 64 158 -> 66.8 us), else its
 * __avx512 tiles; with AVX2:
 * __avx2; aarch64: __neon; otherwise the scalar kernel. The x86 variants
 * have per-function target attributes, so libdcz needs no global -m flags.
 *
 * Checked by tests/unit/test_qkernels.c: every variant this machine runs,
 * bit for bit against dcz_qspmm_ref and dcz_requant_ref on the matrix grid
 * (8-bit ranges with their extremes, batches across and inside tiles), the
 * taps against dcz_qconv2d_direct_ref on the convolution grid, and
 * dcz_quantize against dcz_quantize_ref.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qlanes.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/model.h"

#if DCZ_BUILD_X86
#include <immintrin.h>

#include "runtime/cpu/avx2_lanes.h"
#define DCZ_X86 1
#elif DCZ_BUILD_NEON
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

#define QTILE 16        /* samples of a tile: AVX2, NEON */
#define QTILE_WIDE 32   /* AVX-512 */
/* the largest plane and margins a channel copied between zeros may have
 * (qim2col_pairs_same__avx2, qdw_same); the copies lie in the caller's
 * scratch (dcz_qconv2d_copy_bytes), not on the stack */
#define QPAIR_PLANE 4096
#define QPAIR_MARGIN 512

uint64_t dcz_qspmm8_scratch_floats(uint32_t cols)
{
    /* the widest tile, which also holds a sample widened to int32, or the
     * lane form's panels */
    const uint64_t tile = (uint64_t)cols * QTILE_WIDE * sizeof(int16_t), lanes = dcz_qlanes_scratch_bytes(cols);
    return ((tile > lanes ? tile : lanes) + sizeof(float) - 1) / sizeof(float);
}

/* ---- requantization and the scalar matrix ------------------------------- */

/* floor(v / 2^k), v >= 0 or not, without shifting a negative value */
static inline int64_t floor_shift(int64_t v, unsigned k)
{
    return v >= 0 ? v >> k : ~(~v >> k);
}

/* y[i] of accumulator a, multiplier m and shift k (see dcz_requant8) */
static inline dcz_q requant8_one(int64_t a, int64_t m, unsigned k, int64_t qmax)
{
    const int64_t v = floor_shift(a * m + (k ? (int64_t)1 << (k - 1) : 0), k);
    return (dcz_q)(v > qmax ? qmax : v < -qmax ? -qmax : v);
}

#ifdef DCZ_X86
/* 4 accumulators a step, each with its own multiplier and shift: the
 * signed 32 x 32 -> 64 multiply (|acc| < 2^31), the rounding half by a
 * variable shift (a count of 2^64 - 1 for k = 0 gives 0), floor by a
 * logical shift of the value with its sign bits flipped and flipped back,
 * the clamp by 64-bit compares. Returns the 4 results as int32 lanes. */
__attribute__((target("avx2")))
static inline __m128i requant4__avx2(__m256i a, __m256i m, __m256i k, __m256i qmax)
{
    const __m256i one = _mm256_set1_epi64x(1), zero = _mm256_setzero_si256();
    __m256i v = _mm256_mul_epi32(a, m);
    v = _mm256_add_epi64(v, _mm256_sllv_epi64(one, _mm256_sub_epi64(k, one)));
    const __m256i sign = _mm256_cmpgt_epi64(zero, v);
    v = _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(v, sign), k), sign);
    v = _mm256_blendv_epi8(v, qmax, _mm256_cmpgt_epi64(v, qmax));
    const __m256i nq = _mm256_sub_epi64(zero, qmax);
    v = _mm256_blendv_epi8(v, nq, _mm256_cmpgt_epi64(nq, v));
    /* the low halves of the four 64-bit lanes */
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0)));
}

__attribute__((target("avx2")))
static void requant8__avx2(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                           uint32_t plane, dcz_q *y)
{
    const __m256i qmax = _mm256_set1_epi64x(rq->qmax);
    for (size_t b = 0; b < batch; b++) {
        if (plane == 1) {   /* fully connected: the channels side by side */
            const int64_t *ab = acc + b * channels;
            dcz_q *yb = y + b * channels;
            uint32_t c = 0;
            for (; c + 4 <= channels; c += 4) {
                const __m256i m = _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(const void *)(rq->mult + c)));
                uint32_t k4;
                memcpy(&k4, rq->shift + c, 4);
                const __m256i k = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)k4));
                const __m128i r = requant4__avx2(_mm256_loadu_si256((const __m256i *)(const void *)(ab + c)), m, k, qmax);
                _mm_storel_epi64((__m128i *)(void *)(yb + c), _mm_packs_epi32(r, r));
            }
            for (; c < channels; c++) yb[c] = requant8_one(ab[c], rq->mult[c], rq->shift[c], rq->qmax);
            continue;
        }
        for (uint32_t c = 0; c < channels; c++) {
            const size_t at = (b * channels + c) * plane;
            const __m256i m = _mm256_set1_epi64x(rq->mult[c]), k = _mm256_set1_epi64x(rq->shift[c]);
            uint32_t i = 0;
            for (; i + 4 <= plane; i += 4) {
                const __m128i r = requant4__avx2(_mm256_loadu_si256((const __m256i *)(const void *)(acc + at + i)), m, k,
                                                 qmax);
                _mm_storel_epi64((__m128i *)(void *)(y + at + i), _mm_packs_epi32(r, r));
            }
            for (; i < plane; i++) y[at + i] = requant8_one(acc[at + i], rq->mult[c], rq->shift[c], rq->qmax);
        }
    }
}
#endif

#ifdef DCZ_X86
/* requant4__avx2 on 8 accumulators, where AVX-512 has the 64-bit
 * arithmetic shift and min and max (LeNet-300-100 int8, batch 64: the
 * requantizations from 9 to 4 us) */
__attribute__((target("avx512f")))
static inline __m128i requant8x8__avx512(__m512i a, __m512i m, __m512i k, __m512i lo, __m512i hi)
{
    const __m512i one = _mm512_set1_epi64(1);
    __m512i v = _mm512_add_epi64(_mm512_mul_epi32(a, m), _mm512_sllv_epi64(one, _mm512_sub_epi64(k, one)));
    v = _mm512_min_epi64(_mm512_max_epi64(_mm512_srav_epi64(v, k), lo), hi);
    return _mm512_cvtepi64_epi16(v);
}

__attribute__((target("avx512f")))
static void requant8__avx512(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                             uint32_t plane, dcz_q *y)
{
    const __m512i hi = _mm512_set1_epi64(rq->qmax), lo = _mm512_set1_epi64(-(int64_t)rq->qmax);
    for (size_t b = 0; b < batch; b++) {
        if (plane == 1) {   /* fully connected: the channels side by side */
            const int64_t *ab = acc + b * channels;
            dcz_q *yb = y + b * channels;
            uint32_t c = 0;
            for (; c + 8 <= channels; c += 8) {
                const __m512i m = _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(rq->mult + c)));
                const __m512i k = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(rq->shift + c)));
                _mm_storeu_si128((__m128i *)(void *)(yb + c),
                                 requant8x8__avx512(_mm512_loadu_si512((const void *)(ab + c)), m, k, lo, hi));
            }
            for (; c < channels; c++) yb[c] = requant8_one(ab[c], rq->mult[c], rq->shift[c], rq->qmax);
            continue;
        }
        for (uint32_t c = 0; c < channels; c++) {
            const size_t at = (b * channels + c) * plane;
            const __m512i m = _mm512_set1_epi64(rq->mult[c]), k = _mm512_set1_epi64(rq->shift[c]);
            uint32_t i = 0;
            for (; i + 8 <= plane; i += 8)
                _mm_storeu_si128((__m128i *)(void *)(y + at + i),
                                 requant8x8__avx512(_mm512_loadu_si512((const void *)(acc + at + i)), m, k, lo, hi));
            for (; i < plane; i++) y[at + i] = requant8_one(acc[at + i], rq->mult[c], rq->shift[c], rq->qmax);
        }
    }
}
#endif

void dcz_requant8_ref(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                      uint32_t plane, dcz_q *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = 0; c < channels; c++) {
            const size_t at = (b * channels + c) * plane;
            for (uint32_t i = 0; i < plane; i++)
                y[at + i] = requant8_one(acc[at + i], rq->mult[c], rq->shift[c], rq->qmax);
        }
}

int dcz_requant8_isa(dcz_isa isa, const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                     uint32_t plane, dcz_q *y)
{
    if (!dcz_isa_supported(isa)) return 0;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512) {
        requant8__avx512(rq, acc, batch, channels, plane, y);
        return 1;
    }
    if (isa == DCZ_ISA_AVX2) {
        requant8__avx2(rq, acc, batch, channels, plane, y);
        return 1;
    }
#endif
    if (isa != DCZ_ISA_REF) return 0;
    dcz_requant8_ref(rq, acc, batch, channels, plane, y);
    return 1;
}

void dcz_requant8(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                  uint32_t plane, dcz_q *y)
{
    if (!dcz_requant8_isa(DCZ_ISA_AVX512, rq, acc, batch, channels, plane, y) &&
        !dcz_requant8_isa(DCZ_ISA_AVX2, rq, acc, batch, channels, plane, y))
        dcz_requant8_ref(rq, acc, batch, channels, plane, y);
}

/* ---- element-wise layers ---------------------------------------------------- */

/* dcz_qadd_ref clamped to lo .. hi (within +-qmax: the reference's own
 * clamp at max(hi, -lo) then changes nothing) */
static void qadd_clamped_ref(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift,
                             int32_t lo, int32_t hi, dcz_q *y)
{
    dcz_qadd_ref(a, b, n, mult, shift, hi > -lo ? hi : -lo, y);
    dcz_qclamp_ref(y, n, lo, hi);
}

#ifdef DCZ_X86
/* rq(v, m, k) of the even (64-bit) lanes of v (k <= 62, |v m| < 2^62): the
 * signed multiply, the rounding half, an arithmetic shift (a floor) */
__attribute__((target("avx512f")))
static inline __m512i rescale8__avx512(__m512i v, __m512i m, __m512i half, __m128i k)
{
    return _mm512_sra_epi64(_mm512_add_epi64(_mm512_mul_epi32(v, m), half), k);
}

/* 16 values a step: the inputs widened to 32-bit lanes, whose even and odd
 * lanes are rescaled and added in 64 bits, clamped there and narrowed
 * together (the reference's integers). Against 8 values a step in 64-bit
 * lanes and the ReLU after the Add in a pass of its own, this and the Add
 * taking the ReLU: ResNet-style int8 batch 1 76.5 -> 74.4 us. */
__attribute__((target("avx512f")))
static void qadd__avx512(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift,
                         int32_t lo, int32_t hi, dcz_q *y)
{
    const __m512i m0 = _mm512_set1_epi64(mult[0]), m1 = _mm512_set1_epi64(mult[1]);
    const __m512i h0 = _mm512_set1_epi64(shift[0] ? (int64_t)1 << (shift[0] - 1) : 0);
    const __m512i h1 = _mm512_set1_epi64(shift[1] ? (int64_t)1 << (shift[1] - 1) : 0);
    const __m128i k0 = _mm_cvtsi32_si128(shift[0]), k1 = _mm_cvtsi32_si128(shift[1]);
    const __m512i vhi = _mm512_set1_epi64(hi), vlo = _mm512_set1_epi64(lo);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i va = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(a + i)));
        const __m512i vb = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(b + i)));
        __m512i ev = _mm512_add_epi64(rescale8__avx512(va, m0, h0, k0), rescale8__avx512(vb, m1, h1, k1));
        __m512i od = _mm512_add_epi64(rescale8__avx512(_mm512_srli_epi64(va, 32), m0, h0, k0),
                                      rescale8__avx512(_mm512_srli_epi64(vb, 32), m1, h1, k1));
        ev = _mm512_min_epi64(_mm512_max_epi64(ev, vlo), vhi);
        od = _mm512_min_epi64(_mm512_max_epi64(od, vlo), vhi);
        const __m512i v = _mm512_mask_blend_epi32((__mmask16)0xAAAA, ev, _mm512_slli_epi64(od, 32));
        _mm256_storeu_si256((__m256i *)(void *)(y + i), _mm512_cvtepi32_epi16(v));
    }
    if (i < n) qadd_clamped_ref(a + i, b + i, n - i, mult, shift, lo, hi, y + i);
}

/* rq(v, m, k) of the even (64-bit) lanes of v (k <= 62, |v m| < 2^62) in
 * AVX2, which has no arithmetic 64-bit shift: the product lifted by 2^62
 * plus the rounding half is never negative, so a logical shift gives the
 * floor, and the lift's share, 2^62 / 2^k, comes off after it (the
 * formula of dcz_round_shift). lift_half: 2^62 + the half. */
__attribute__((target("avx2")))
static inline __m256i rescale4__avx2(__m256i v, __m256i m, __m256i lift_half, __m256i lift_k, __m128i k)
{
    return _mm256_sub_epi64(_mm256_srl_epi64(_mm256_add_epi64(_mm256_mul_epi32(v, m), lift_half), k), lift_k);
}

/* v (64-bit lanes) clamped to lo .. hi */
__attribute__((target("avx2")))
static inline __m256i clamp4__avx2(__m256i v, __m256i lo, __m256i hi)
{
    v = _mm256_blendv_epi8(v, hi, _mm256_cmpgt_epi64(v, hi));
    return _mm256_blendv_epi8(v, lo, _mm256_cmpgt_epi64(lo, v));
}

/* qadd__avx512 in AVX2: 8 values a step, their even and odd lanes
 * rescaled, added and clamped in 64 bits, then narrowed together. Where
 * AVX2 ran the reference, with qclamp__avx2 below, one core of an AMD EPYC
 * (Zen 3), dcz bench best medians of alternated runs: ResNet-style int8
 * batch 1 599 -> 472 us, batch 64 44.5 -> 30.8 ms; MobileNetV2-style int8
 * batch 1 1300 -> 1234 us. */
__attribute__((target("avx2")))
static void qadd__avx2(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift,
                       int32_t lo, int32_t hi, dcz_q *y)
{
    const int64_t lift = (int64_t)1 << 62;
    const __m256i m0 = _mm256_set1_epi64x(mult[0]), m1 = _mm256_set1_epi64x(mult[1]);
    const __m256i h0 = _mm256_set1_epi64x(lift + (shift[0] ? (int64_t)1 << (shift[0] - 1) : 0));
    const __m256i h1 = _mm256_set1_epi64x(lift + (shift[1] ? (int64_t)1 << (shift[1] - 1) : 0));
    const __m256i l0 = _mm256_set1_epi64x(lift >> shift[0]), l1 = _mm256_set1_epi64x(lift >> shift[1]);
    const __m128i k0 = _mm_cvtsi32_si128(shift[0]), k1 = _mm_cvtsi32_si128(shift[1]);
    const __m256i vhi = _mm256_set1_epi64x(hi), vlo = _mm256_set1_epi64x(lo);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i va = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(a + i)));
        const __m256i vb = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + i)));
        const __m256i ev = clamp4__avx2(_mm256_add_epi64(rescale4__avx2(va, m0, h0, l0, k0),
                                                         rescale4__avx2(vb, m1, h1, l1, k1)), vlo, vhi);
        const __m256i od = clamp4__avx2(_mm256_add_epi64(rescale4__avx2(_mm256_srli_epi64(va, 32), m0, h0, l0, k0),
                                                         rescale4__avx2(_mm256_srli_epi64(vb, 32), m1, h1, l1, k1)),
                                        vlo, vhi);
        /* the 8 sums as int32 (within +-32767), narrowed: packs leaves them
         * as quads 0 0 1 1, the permute takes quads 0 and 1 */
        const __m256i v = _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(v, v), 0x08);
        _mm_storeu_si128((__m128i *)(void *)(y + i), _mm256_castsi256_si128(p));
    }
    if (i < n) qadd_clamped_ref(a + i, b + i, n - i, mult, shift, lo, hi, y + i);
}

/* dcz_qclamp_ref in AVX2, 16 values a step */
__attribute__((target("avx2")))
static void qclamp__avx2(dcz_q *x, size_t n, int32_t lo, int32_t hi)
{
    const __m256i vlo = _mm256_set1_epi16((int16_t)lo), vhi = _mm256_set1_epi16((int16_t)hi);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i *p = (__m256i *)(void *)(x + i);
        _mm256_storeu_si256(p, _mm256_min_epi16(_mm256_max_epi16(_mm256_loadu_si256(p), vlo), vhi));
    }
    dcz_qclamp_ref(x + i, n - i, lo, hi);
}

__attribute__((target("avx2")))
static void qrelu__avx2(dcz_q *x, size_t n)
{
    const __m256i zero = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i *p = (__m256i *)(void *)(x + i);
        _mm256_storeu_si256(p, _mm256_max_epi16(_mm256_loadu_si256(p), zero));
    }
    dcz_qrelu_ref(x + i, n - i);
}
#endif

#ifdef DCZ_X86
/* dcz_qglobal_avgpool_rescale_ref on AVX-512: each plane summed 32 cells
 * at a time by vpmaddwd into 32-bit lanes (a plane of 2^16 cells or fewer
 * sums within 32 bits), eight planes' sums then multiplied in 64-bit lanes
 * (within 2^62: dcz_round_shift's exact range), rounded half up by an
 * arithmetic shift, clamped and narrowed: the reference's values, where it
 * took 1.9% of int8 MobileNetV2-style at batch 64 (perf), a call per
 * plane of requant_one and its branches */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void qgap_rescale__avx512(uint32_t channels, uint32_t plane,
                                                                             const dcz_q *x, size_t batch,
                                                                             int32_t mult, uint8_t shift,
                                                                             int32_t qmax, dcz_q *y)
{
    const size_t planes = batch * channels;
    const __m512i ones = _mm512_set1_epi16(1), m = _mm512_set1_epi64(mult);
    const __m512i half = _mm512_set1_epi64(shift ? (int64_t)1 << (shift - 1) : 0);
    const __m512i hi = _mm512_set1_epi64(qmax), lo = _mm512_set1_epi64(-(int64_t)qmax);
    const __m128i count = _mm_cvtsi32_si128(shift);
    for (size_t p0 = 0; p0 < planes; p0 += 8) {
        const size_t n = planes - p0 < 8 ? planes - p0 : 8;
        int32_t sum[8] = { 0 };
        for (size_t j = 0; j < n; j++) {
            const dcz_q *xp = x + (p0 + j) * plane;
            __m512i acc = _mm512_setzero_si512();
            for (uint32_t i = 0; i < plane; i += 32) {
                const __mmask32 k = plane - i >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << (plane - i)) - 1);
                acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maskz_loadu_epi16(k, xp + i), ones));
            }
            sum[j] = _mm512_reduce_add_epi32(acc);
        }
        const __m512i v = _mm512_mul_epi32(_mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(void *)sum)), m);
        const __m512i r = _mm512_min_epi64(_mm512_max_epi64(_mm512_sra_epi64(_mm512_add_epi64(v, half), count), lo), hi);
        _mm_mask_storeu_epi16(y + p0, (__mmask8)((1u << n) - 1), _mm512_cvtepi64_epi16(r));
    }
}
#endif

int dcz_qglobal_avgpool_rescale_isa(dcz_isa isa, uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                                    int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y)
{
    if (isa == DCZ_ISA_REF) {
        dcz_qglobal_avgpool_rescale_ref(channels, plane, x, batch, mult, shift, qmax, y);
        return 1;
    }
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && plane <= 65536 && shift <= 62 && dcz_isa_supported(DCZ_ISA_AVX512) &&
        dcz_cpu_features()->avx512bw && dcz_cpu_features()->avx512vl) {
        qgap_rescale__avx512(channels, plane, x, batch, mult, shift, qmax, y);
        return 1;
    }
#else
    (void)channels; (void)plane; (void)x; (void)batch; (void)mult; (void)shift; (void)qmax; (void)y;
#endif
    return 0;
}

void dcz_qglobal_avgpool_rescale(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch, int32_t mult,
                                 uint8_t shift, int32_t qmax, dcz_q *y)
{
    if (!dcz_qglobal_avgpool_rescale_isa(DCZ_ISA_AVX512, channels, plane, x, batch, mult, shift, qmax, y))
        dcz_qglobal_avgpool_rescale_ref(channels, plane, x, batch, mult, shift, qmax, y);
}

int dcz_qadd_isa(dcz_isa isa, const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift,
                 int32_t lo, int32_t hi, dcz_q *y)
{
    if (isa == DCZ_ISA_REF) {
        qadd_clamped_ref(a, b, n, mult, shift, lo, hi, y);
        return 1;
    }
#ifdef DCZ_X86
    /* the reference's formula holds for shifts up to 62 (dcz_round_shift) */
    if (shift[0] > 62 || shift[1] > 62) return 0;
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512)) {
        qadd__avx512(a, b, n, mult, shift, lo, hi, y);
        return 1;
    }
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        qadd__avx2(a, b, n, mult, shift, lo, hi, y);
        return 1;
    }
#else
    (void)a; (void)b; (void)n; (void)mult; (void)shift; (void)lo; (void)hi; (void)y;
#endif
    return 0;
}

void dcz_qadd(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift, int32_t lo,
              int32_t hi, dcz_q *y)
{
    if (!dcz_qadd_isa(DCZ_ISA_AVX512, a, b, n, mult, shift, lo, hi, y) &&
        !dcz_qadd_isa(DCZ_ISA_AVX2, a, b, n, mult, shift, lo, hi, y))
        dcz_qadd_isa(DCZ_ISA_REF, a, b, n, mult, shift, lo, hi, y);
}

void dcz_qclamp(dcz_q *x, size_t n, int32_t lo, int32_t hi)
{
#ifdef DCZ_X86
    if (dcz_isa_supported(DCZ_ISA_AVX2)) {
        qclamp__avx2(x, n, lo, hi);
        return;
    }
#endif
    dcz_qclamp_ref(x, n, lo, hi);
}

void dcz_qrelu(dcz_q *x, size_t n)
{
#ifdef DCZ_X86
    if (dcz_isa_supported(DCZ_ISA_AVX2)) {
        qrelu__avx2(x, n);
        return;
    }
#endif
    dcz_qrelu_ref(x, n);
}

/* ---- activations by table ------------------------------------------------ */

#ifdef DCZ_X86
/* Tables of the 8-bit schemes (255 entries, qmax 127) held in eight
 * registers, 32 lookups a step: a two-register word permute (vpermt2w)
 * looks up the index's low six bits in each quarter of the table, and its
 * bits 6 and 7 choose the quarter. Gathers cost AMD's cores (Zen 4) about
 * a lookup a cycle: MobileNetV2-style int8 at batch 1 spent 23% of its
 * time in them. */
__attribute__((target("avx512f,avx512bw")))
static void qtable8__avx512(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y)
{
    const size_t entries = 2 * (size_t)qmax + 1;
    __m512i q[8];
    for (size_t k = 0; k < 8; k++) {
        const size_t lo = 32 * k, take = lo >= entries ? 0 : entries - lo >= 32 ? 32 : entries - lo;
        q[k] = _mm512_maskz_loadu_epi16(take == 32 ? 0xFFFFFFFFu : (__mmask32)((1u << take) - 1),
                                        table + (take ? lo : 0));
    }
    const __m512i off = _mm512_set1_epi16((short)qmax);
    const __m512i bit6 = _mm512_set1_epi16(64), bit7 = _mm512_set1_epi16(128);
    for (size_t i = 0; i < n; i += 32) {
        const __mmask32 m = n - i >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << (n - i)) - 1);
        const __m512i at = _mm512_add_epi16(_mm512_maskz_loadu_epi16(m, x + i), off);
        const __m512i r0 = _mm512_permutex2var_epi16(q[0], at, q[1]);
        const __m512i r1 = _mm512_permutex2var_epi16(q[2], at, q[3]);
        const __m512i r2 = _mm512_permutex2var_epi16(q[4], at, q[5]);
        const __m512i r3 = _mm512_permutex2var_epi16(q[6], at, q[7]);
        const __mmask32 b6 = _mm512_test_epi16_mask(at, bit6), b7 = _mm512_test_epi16_mask(at, bit7);
        const __m512i lo = _mm512_mask_blend_epi16(b6, r0, r1), hi = _mm512_mask_blend_epi16(b6, r2, r3);
        _mm512_mask_storeu_epi16(y + i, m, _mm512_mask_blend_epi16(b7, lo, hi));
    }
}

/* 16 lookups a step: the entries' 32-bit words gathered (the table has an
 * entry past its end for the last one's upper half), their low halves kept */
__attribute__((target("avx512f")))
static void qtable__avx512(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y)
{
    const __m512i off = _mm512_set1_epi32(qmax);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i at = _mm512_add_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(x + i))), off);
        const __m512i v = _mm512_i32gather_epi32(at, (const void *)table, 2);
        _mm256_storeu_si256((__m256i *)(void *)(y + i), _mm512_cvtepi32_epi16(v));
    }
    dcz_qtable_ref(table, qmax, x + i, n - i, y + i);
}
#endif

void dcz_qtable(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y)
{
#ifdef DCZ_X86
    if (qmax <= 127 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw) {
        qtable8__avx512(table, qmax, x, n, y);
        return;
    }
    if (dcz_isa_supported(DCZ_ISA_AVX512)) {
        qtable__avx512(table, qmax, x, n, y);
        return;
    }
#endif
    dcz_qtable_ref(table, qmax, x, n, y);
}

/* ---- max pooling ---------------------------------------------------------- */

/* y (out_w) = the max pool of output row oy of plane xp, columns from ox0
 * (the window rows y0 .. y1 - 1) by the reference's loop */
static void qmax_cols(const dcz_conv_geom *g, const dcz_q *xp, uint32_t y0, uint32_t y1, uint32_t ox0,
                      uint32_t ox1, dcz_q *y)
{
    for (uint32_t ox = ox0; ox < ox1; ox++) {
        uint32_t x0, x1;
        dcz_window_cells(ox, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
        dcz_q m = INT16_MIN;
        for (uint32_t iy = y0; iy < y1; iy++)
            for (uint32_t ix = x0; ix < x1; ix++)
                if (xp[(size_t)iy * g->in_w + ix] > m) m = xp[(size_t)iy * g->in_w + ix];
        y[ox] = m;
    }
}

#ifdef DCZ_X86
/* the interior columns lo .. hi - 1 of row oy: 16 outputs a step; their
 * cells at stride 2 come from 32 consecutive inputs by a permute */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void qmax_interior__avx512(const dcz_conv_geom *g, const dcz_q *xp, uint32_t y0, uint32_t y1, uint32_t lo,
                                  uint32_t hi, dcz_q *y)
{
    const uint32_t sw = g->sw;
    const __m512i even = _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32,
                                          30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (uint32_t ox = lo; ox < hi; ox += 16) {
        const uint32_t n = hi - ox < 16 ? hi - ox : 16;
        __m256i m = _mm256_set1_epi16(INT16_MIN);
        for (uint32_t iy = y0; iy < y1; iy++) {
            const dcz_q *r = xp + (size_t)iy * g->in_w + (size_t)ox * sw - g->pw;
            for (uint32_t kx = 0; kx < g->kw; kx++) {
                const uint32_t words = sw * (n - 1) + 1;
                const __mmask32 k = words >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << words) - 1);
                __m512i v = _mm512_maskz_loadu_epi16(k, r + kx);
                if (sw == 2) v = _mm512_permutexvar_epi16(even, v);
                m = _mm256_max_epi16(m, _mm512_castsi512_si256(v));
            }
        }
        _mm256_mask_storeu_epi16(y + ox, (__mmask16)((1u << n) - 1), m);
    }
}
#endif

#ifdef DCZ_X86
/* The 2x2 pool of stride 2 without padding (LeNet-5, the CNN): per output
 * row, the two input rows' larger words, then each pair's larger by a
 * shift of the 32-bit lanes, narrowed: 16 outputs in seven instructions,
 * with no window arithmetic (LeNet-5 int8, batch 1: its pools 5.8 -> 1 us). */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void qmax_2x2__avx512(const dcz_conv_geom *g, const dcz_q *x, size_t planes, dcz_q *y)
{
    for (size_t p = 0; p < planes; p++) {
        const dcz_q *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++, y += g->out_w) {
            const dcz_q *r0 = xp + (size_t)2 * oy * g->in_w, *r1 = r0 + g->in_w;
            for (uint32_t ox = 0; ox < g->out_w; ox += 16) {
                const uint32_t n = g->out_w - ox < 16 ? g->out_w - ox : 16;
                const __mmask32 k = n == 16 ? 0xFFFFFFFFu : (__mmask32)((1u << 2 * n) - 1);
                const __m512i v = _mm512_max_epi16(_mm512_maskz_loadu_epi16(k, r0 + 2 * ox),
                                                   _mm512_maskz_loadu_epi16(k, r1 + 2 * ox));
                const __m512i m = _mm512_max_epi16(v, _mm512_srli_epi32(v, 16));
                _mm256_mask_storeu_epi16(y + ox, (__mmask16)((1u << n) - 1), _mm512_cvtepi32_epi16(m));
            }
        }
    }
}
#endif

#ifdef DCZ_X86
/* qmax_2x2__avx512 in AVX2: per output row the two input rows' larger
 * words, 8 outputs' pairs (a 32-bit lane each) loaded by masked loads of
 * their lanes, then each pair's larger by a shift of the lanes, its low
 * word sign-extended and the lanes narrowed. The scalar reference took 13%
 * of the conv-heavy CNN's int8 run at batch 1 on AVX2. */
__attribute__((target("avx2")))
static void qmax_2x2__avx2(const dcz_conv_geom *g, const dcz_q *x, size_t planes, dcz_q *y)
{
    for (size_t p = 0; p < planes; p++) {
        const dcz_q *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++, y += g->out_w) {
            const dcz_q *r0 = xp + (size_t)2 * oy * g->in_w, *r1 = r0 + g->in_w;
            for (uint32_t ox = 0; ox < g->out_w; ox += 8) {
                const uint32_t n = g->out_w - ox < 8 ? g->out_w - ox : 8;
                const __m256i k = dcz_mask8__avx2(n);
                const __m256i v = _mm256_max_epi16(_mm256_maskload_epi32((const int *)(const void *)(r0 + 2 * ox), k),
                                                   _mm256_maskload_epi32((const int *)(const void *)(r1 + 2 * ox), k));
                __m256i m = _mm256_max_epi16(v, _mm256_srli_epi32(v, 16));
                m = _mm256_srai_epi32(_mm256_slli_epi32(m, 16), 16);
                const __m128i o = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packs_epi32(m, m), 0x08));
                if (n == 8) {
                    _mm_storeu_si128((__m128i *)(void *)(y + ox), o);
                } else {
                    dcz_q t[8];
                    _mm_storeu_si128((__m128i *)(void *)t, o);
                    memcpy(y + ox, t, n * sizeof *t);
                }
            }
        }
    }
}
#endif

void dcz_qmaxpool(const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y)
{
    int vec = 0;
#ifdef DCZ_X86
    vec = g->sw <= 2 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
          dcz_cpu_features()->avx512vl;
#endif
    if (!vec) {
#ifdef DCZ_X86
        if (g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 &&
            dcz_isa_supported(DCZ_ISA_AVX2)) {
            qmax_2x2__avx2(g, x, batch * g->in_c, y);
            return;
        }
#endif
        dcz_qmaxpool_ref(g, x, batch, y);
        return;
    }
#ifdef DCZ_X86
    if (g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0) {
        qmax_2x2__avx512(g, x, batch * g->in_c, y);
        return;
    }
#endif
    uint32_t lo, hi;
    dcz_pool_interior_cols(g, &lo, &hi);
    const size_t planes = batch * g->in_c;
    for (size_t p = 0; p < planes; p++) {
        const dcz_q *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++) {
            dcz_q *yr = y + (p * g->out_h + oy) * g->out_w;
            uint32_t y0, y1;
            dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
            qmax_cols(g, xp, y0, y1, 0, lo, yr);
#ifdef DCZ_X86
            qmax_interior__avx512(g, xp, y0, y1, lo, hi, yr);
#endif
            qmax_cols(g, xp, y0, y1, hi, g->out_w, yr);
        }
    }
}

/* ---- the region's input ------------------------------------------------- */

void dcz_quantize_ref(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y)
{
    for (size_t i = 0; i < n; i++) {
        double v = (double)x[i] / scale;
        if (v != v) v = 0;
        v = v >= 0 ? floor(v + 0.5) : -floor(-v + 0.5);
        if (v > qmax) v = qmax;
        if (v < -qmax) v = -qmax;
        y[i] = (dcz_q)v;
    }
}

#ifdef DCZ_X86
/* The reference's steps on 4 doubles: the same IEEE quotient, NaN to 0,
 * floor(|v| + 0.5) with v's sign, the clamp. */
__attribute__((target("avx2")))
static void quantize__avx2(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y)
{
    const __m256d s = _mm256_set1_pd((double)scale), half = _mm256_set1_pd(0.5), q = _mm256_set1_pd(qmax);
    const __m256d sign = _mm256_set1_pd(-0.0);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d v = _mm256_div_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), s);
        v = _mm256_andnot_pd(_mm256_cmp_pd(v, v, _CMP_UNORD_Q), v);
        const __m256d neg = _mm256_and_pd(v, sign);
        v = _mm256_floor_pd(_mm256_add_pd(_mm256_andnot_pd(sign, v), half));
        v = _mm256_min_pd(v, q);   /* |v| <= qmax, NaN already 0 */
        const __m128i w = _mm256_cvtpd_epi32(_mm256_or_pd(v, neg));
        _mm_storel_epi64((__m128i *)(void *)(y + i), _mm_packs_epi32(w, w));
    }
    dcz_quantize_ref(x + i, n - i, scale, qmax, y + i);
}
#endif

#ifdef DCZ_X86
/* The reference's result without its division, 16 floats a step. The
 * double quotient of two floats never crosses a tie k + 1/2 by rounding
 * (the nearest float ratio to a tie is 2^-40 of it away, where a double
 * rounds by 2^-53), so the reference is n = round(|x| / s) exactly, ties
 * away from 0. Here |x| times a float reciprocal of s made 2^-20 smaller
 * lies below |x| / s by less than 2^-19 of it (capped at qmax + 1, where
 * the clamp decides), so k = floor(that + 1/2) is n or n - 1 (the add is
 * exact up to 2^22 but where it crosses a power of two, which floor does
 * not see); a fused s (k + 1/2) - |x| <= 0 then says exactly that |x| / s
 * has reached the next tie (the product is exact inside the fused
 * multiply-add, and one rounding keeps the sign of a difference that for
 * scales in [2^-100, 2^100] cannot fall below the smallest float), and k
 * moves up by one. NaN gives 0, then the clamp and x's sign. */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void quantize__avx512(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y)
{
    const __m512 s = _mm512_set1_ps(scale), half = _mm512_set1_ps(0.5f);
    const __m512 r = _mm512_set1_ps(1.0f / scale * (1.0f - 0x1p-20f));
    const __m512 cap = _mm512_set1_ps((float)qmax + 1.0f), q = _mm512_set1_ps((float)qmax);
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i), a = _mm512_abs_ps(v);
        __m512 k = _mm512_roundscale_ps(_mm512_add_ps(_mm512_min_ps(_mm512_mul_ps(a, r), cap), half),
                                        _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        const __mmask16 up = _mm512_cmp_ps_mask(_mm512_fmsub_ps(s, _mm512_add_ps(k, half), a), _mm512_setzero_ps(),
                                                _CMP_LE_OQ);
        k = _mm512_maskz_min_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), _mm512_mask_add_ps(k, up, k, one), q);
        /* k | (v & sign): x's sign on k */
        k = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(k), _mm512_castps_si512(v), sign, 0xF8));
        /* narrowed in the register: vpmovsdw into memory is slow on some cores */
        const __m256i w = _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(k));
        if (m == 0xFFFF) _mm256_storeu_si256((__m256i *)(void *)(y + i), w);
        else _mm256_mask_storeu_epi16(y + i, m, w);
    }
}
#endif

void dcz_quantize(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y)
{
#ifdef DCZ_X86
    if (scale >= 0x1p-100f && scale <= 0x1p100f && dcz_isa_supported(DCZ_ISA_AVX512) &&
        dcz_cpu_features()->avx512bw && dcz_cpu_features()->avx512vl) {
        quantize__avx512(x, n, scale, qmax, y);
        return;
    }
    if (dcz_isa_supported(DCZ_ISA_AVX2)) {
        quantize__avx2(x, n, scale, qmax, y);
        return;
    }
#endif
    dcz_quantize_ref(x, n, scale, qmax, y);
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

/* ---- the convolution's taps ---------------------------------------------- */

#ifdef DCZ_X86
/* 4 outputs a step: 4 int16 inputs widened to int64 lanes, times w by the
 * signed 32 x 32 -> 64 multiply (|x w| < 2^31), added to the sums */
__attribute__((target("avx2")))
static void qtap__avx2(const dcz_conv_geom *g, const dcz_conv_tap *ty, const dcz_conv_tap *tx, int64_t w,
                       const dcz_q *xp, int64_t *ap)
{
    if (g->sw != 1) {
        dcz_qtap_ref(g, ty, tx, w, xp, ap);
        return;
    }
    const uint32_t n = tx->hi - tx->lo;
    const size_t x_step = (size_t)g->sh * g->in_w;
    const __m256i wv = _mm256_set1_epi64x(w);
    size_t xi = (size_t)ty->first * g->in_w + tx->first, ai = (size_t)ty->lo * g->out_w + tx->lo;
    for (uint32_t oy = ty->lo; oy < ty->hi; oy++, xi += x_step, ai += g->out_w) {
        const dcz_q *xr = xp + xi;
        int64_t *ar = ap + ai;
        uint32_t i = 0;
        for (; i + 4 <= n; i += 4) {
            const __m256i xv = _mm256_cvtepi16_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(xr + i)));
            __m256i *at = (__m256i *)(void *)(ar + i);
            _mm256_storeu_si256(at, _mm256_add_epi64(_mm256_loadu_si256(at), _mm256_mul_epi32(xv, wv)));
        }
        for (; i < n; i++) ar[i] += w * xr[i];
    }
}
#endif

#ifdef DCZ_X86
/* A convolution each of whose output channels reads one input channel
 * (depthwise), at stride 1 with output rows as wide as the input's, in
 * AVX2 on 32-bit sums held in registers (exact on 8-bit schemes, qload.c):
 * as qim2col_pairs_same__avx2, output pixel p of tap (ky, kx) reads input
 * cell p + (ky - ph) in_w + (kx - pw) of the channel copied between zeros,
 * masked in the columns the shift takes past a row's side; 8 pixels a
 * step, every stored tap of the channel multiplied in, the sums widened to
 * the int64 accumulators once. The tap kernels added each tap to int64
 * sums in memory, 4 a step, and ran stride 2 by the scalar reference.
 * qdw_rows runs these layers too, by output rows, whose vectors of 8 leave
 * lanes empty on rows of 14 and 7: MobileNetV2-style int8 without this
 * path 2-4% slower (batch 1 670 -> 698 us, batch 64 47.0 -> 47.7 ms). */
/* 8 sums of 32 bits widened to the accumulators ap[at ..], within the
 * plane's pixels (the next channel's sums follow it) */
__attribute__((target("avx2")))
static inline void store_sums8__avx2(int64_t *ap, size_t at, size_t pixels, __m256i acc)
{
    const __m256i a0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(acc));
    const __m256i a1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(acc, 1));
    if (at + 8 <= pixels) {
        _mm256_storeu_si256((__m256i *)(void *)(ap + at), a0);
        _mm256_storeu_si256((__m256i *)(void *)(ap + at + 4), a1);
        return;
    }
    int64_t tail[8];
    _mm256_storeu_si256((__m256i *)(void *)tail, a0);
    _mm256_storeu_si256((__m256i *)(void *)(tail + 4), a1);
    memcpy(ap + at, tail, (pixels - at) * sizeof *ap);
}

__attribute__((target("avx2")))
static void dw_same_channel__avx2(const dcz_conv_geom *g, const dcz_q *src, const int32_t *off, const int32_t *w,
                                  const int32_t *lo, const int32_t *hi, uint32_t taps, int32_t bias, int64_t *ap)
{
    const size_t W = g->in_w, pixels = (size_t)g->out_h * g->out_w;
    int32_t col0[8];
    for (int i = 0; i < 8; i++) col0[i] = (int32_t)(i % W);
    const __m256i next = _mm256_set1_epi32((int32_t)(8 % W)), wv = _mm256_set1_epi32((int32_t)W);
    const __m256i last = _mm256_set1_epi32((int32_t)(W - 1));
    __m256i col = _mm256_loadu_si256((const __m256i *)(const void *)col0);
    for (size_t p = 0; p < pixels; p += 8) {
        __m256i acc = _mm256_set1_epi32(bias);
        for (uint32_t t = 0; t < taps; t++) {
            const __m256i in = _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(lo[t])),
                                                _mm256_cmpgt_epi32(_mm256_set1_epi32(hi[t]), col));
            const __m256i v = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + off[t] + p)));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(_mm256_and_si256(v, in), _mm256_set1_epi32(w[t])));
        }
        store_sums8__avx2(ap, p, pixels, acc);
        col = _mm256_add_epi32(col, next);
        col = _mm256_sub_epi32(col, _mm256_and_si256(_mm256_cmpgt_epi32(col, last), wv));
    }
}
#endif

#ifdef DCZ_NEON
static void qtap__neon(const dcz_conv_geom *g, const dcz_conv_tap *ty, const dcz_conv_tap *tx, int64_t w,
                       const dcz_q *xp, int64_t *ap)
{
    if (g->sw != 1) {
        dcz_qtap_ref(g, ty, tx, w, xp, ap);
        return;
    }
    const uint32_t n = tx->hi - tx->lo;
    const size_t x_step = (size_t)g->sh * g->in_w;
    const int32_t w32 = (int32_t)w;   /* a weight of the scheme's range */
    size_t xi = (size_t)ty->first * g->in_w + tx->first, ai = (size_t)ty->lo * g->out_w + tx->lo;
    for (uint32_t oy = ty->lo; oy < ty->hi; oy++, xi += x_step, ai += g->out_w) {
        const dcz_q *xr = xp + xi;
        int64_t *ar = ap + ai;
        uint32_t i = 0;
        for (; i + 4 <= n; i += 4) {
            const int32x4_t xv = vmovl_s16(vld1_s16(xr + i));
            vst1q_s64(ar + i, vmlal_n_s32(vld1q_s64(ar + i), vget_low_s32(xv), w32));
            vst1q_s64(ar + i + 2, vmlal_high_n_s32(vld1q_s64(ar + i + 2), xv, w32));
        }
        for (; i < n; i++) ar[i] += w * xr[i];
    }
}
#endif

dcz_qtap_fn dcz_qtap_isa(dcz_isa isa)
{
    if (isa == DCZ_ISA_REF) return dcz_qtap_ref;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) return qtap__avx2;
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON) return qtap__neon;
#endif
    return NULL;
}

dcz_qtap_fn dcz_qtap_best(void)
{
    const dcz_qtap_fn f = dcz_qtap_isa(dcz_isa_best());
    return f ? f : dcz_qtap_ref;
}

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
    if (isa == DCZ_ISA_NEON) return tile_rows__neon;
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

/* ---- the patches of the integer product --------------------------------- */

#ifdef DCZ_X86
/* pair_row below at stride 1, 8 outputs a step: the int16 zero-extended
 * into the low half, or shifted into the high one. */
__attribute__((target("avx2")))
static void pair_row__avx2(uint32_t *o, const dcz_q *src, uint32_t out_w, uint32_t lo, uint32_t hi, int high)
{
    if (!high) {
        for (uint32_t ox = 0; ox < lo; ox++) o[ox] = 0;
        for (uint32_t ox = hi; ox < out_w; ox++) o[ox] = 0;
    }
    uint32_t ox = lo;
    for (; ox + 8 <= hi; ox += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + ox)));
        __m256i *d = (__m256i *)(void *)(o + ox);
        if (high) v = _mm256_or_si256(_mm256_loadu_si256(d), _mm256_slli_epi32(v, 16));
        _mm256_storeu_si256(d, v);
    }
    for (; ox < hi; ox++) {
        const uint32_t v = (uint16_t)src[ox];
        o[ox] = high ? o[ox] | v << 16 : v;
    }
}

/* The patches of a stride-1 convolution whose output rows are as wide as
 * its input's (padding (kw - 1) / 2 a side, or a 1x1 without), two patch
 * rows at a time in AVX2: output pixel p of tap (c, ky, kx) reads input
 * cell p + (ky - ph) in_w + (kx - pw) of channel c, one shift for the
 * whole plane, so each channel is copied once between zeros (above and
 * below, no mask needed there) and a tap is 8 loads a vector, zeroed in
 * the columns its shift takes past a row's side; the two rows' vectors are
 * interleaved (unpack) into pairs. Planes of up to QPAIR_PLANE cells with
 * margins of up to QPAIR_MARGIN (two channels on the stack); 0 elsewhere.
 * Where pair_row filled a row of each tap at a time (a vector at most per
 * row of 14 cells, the rest scalar) and or-ed the second tap in, one core
 * of an AMD EPYC (Zen 3), dcz bench best medians of alternated runs:
 * ResNet-style int8 batch 1 472 -> 316 us, batch 64 30.8 -> 20.2 ms. */
static int same_copy_fits(const dcz_conv_geom *g);

__attribute__((target("avx2")))
static int qim2col_pairs_same__avx2(const dcz_conv_geom *g, const dcz_q *x, int32_t *col2, size_t ldb, dcz_q *copy)
{
    const size_t W = g->in_w, pixels = (size_t)g->out_h * g->out_w, plane = (size_t)g->in_h * W;
    const size_t margin = (size_t)g->ph * W + g->pw + 16;
    if (!copy || !same_copy_fits(g)) return 0;
    /* two channels between zeros: the taps of a pair may be in two */
    dcz_q *pad[2] = { copy, copy + 2 * margin + plane };
    uint32_t held[2] = { UINT32_MAX, UINT32_MAX };
    const uint32_t ksize = g->kh * g->kw, K = g->in_c * ksize;
    /* lane i's column at pixel 0, and what 8 pixels further adds to it */
    int16_t col0[8];
    for (int i = 0; i < 8; i++) col0[i] = (int16_t)(i % W);
    const __m128i next = _mm_set1_epi16((int16_t)(8 % W)), w = _mm_set1_epi16((int16_t)W);
    const __m128i last = _mm_set1_epi16((int16_t)(W - 1));
    for (uint32_t r = 0; r < K; r += 2) {
        /* tap j of the pair: its channel's copy shifted, its column bounds */
        const dcz_q *src[2] = { NULL, NULL };
        __m128i lo[2], hi[2];
        for (uint32_t j = 0; j < 2 && r + j < K; j++) {
            const uint32_t c = (r + j) / ksize, ky = (r + j) % ksize / g->kw, kx = (r + j) % g->kw;
            dcz_q *pc = pad[c & 1];
            if (held[c & 1] != c) {
                memset(pc, 0, margin * sizeof *pc);
                memcpy(pc + margin, x + (size_t)c * plane, plane * sizeof *pc);
                memset(pc + margin + plane, 0, margin * sizeof *pc);
                held[c & 1] = c;
            }
            src[j] = pc + margin + ((int64_t)ky - g->ph) * (int64_t)W + ((int64_t)kx - g->pw);
            /* output columns ox with 0 <= ox + kx - pw < W */
            lo[j] = _mm_set1_epi16((int16_t)((int)g->pw - (int)kx - 1));
            hi[j] = _mm_set1_epi16((int16_t)((int)W + (int)g->pw - (int)kx));
        }
        uint32_t *row = (uint32_t *)(void *)(col2 + (size_t)(r / 2) * ldb);
        __m128i col = _mm_loadu_si128((const __m128i *)(const void *)col0);
        for (size_t p = 0; p < pixels; p += 8) {
            __m128i v[2] = { _mm_setzero_si128(), _mm_setzero_si128() };
            for (uint32_t j = 0; j < 2; j++) {
                if (!src[j]) continue;
                const __m128i in = _mm_and_si128(_mm_cmpgt_epi16(col, lo[j]), _mm_cmplt_epi16(col, hi[j]));
                v[j] = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(src[j] + p)), in);
            }
            const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi16(v[0], v[1]), _mm_unpacklo_epi16(v[0], v[1]));
            _mm256_storeu_si256((__m256i *)(void *)(row + p), pairs);
            /* each lane 8 pixels further: its column plus 8 mod W, less W
             * past the row */
            col = _mm_add_epi16(col, next);
            col = _mm_sub_epi16(col, _mm_and_si128(_mm_cmpgt_epi16(col, last), w));
        }
        /* the pairs past the plane: the last vector's loads ran past it */
        for (size_t p = pixels; p < ldb; p++) row[p] = 0;
    }
    return 1;
}

/* A channel padded (ph zero rows above and below, pw zero columns left and
 * the rest right) and split by column phase: PH[px][iy][j] = padded row
 * iy's column j sw + px, phase rows of wq cells (8 more than a run of
 * out_w from any tap reads, for a vector's overrun), QPH_CELLS at most. */
#define QPH_CELLS 8192
typedef struct qphase {
    size_t rows, wq, cells;
} qphase;

static int qphase_of(const dcz_conv_geom *g, qphase *q)
{
    const size_t sw = g->sw;
    q->rows = (size_t)g->in_h + 2 * (size_t)g->ph;
    q->wq = ((size_t)g->in_w + 2 * (size_t)g->pw + sw - 1) / sw + 8;
    q->cells = sw * q->rows * q->wq;
    return sw <= 2 && q->cells <= QPH_CELLS;
}

/* Whether a stride-1 convolution whose output rows are as wide as its
 * input's takes its channels copied between zeros (the plane and margins
 * of qim2col_pairs_same__avx2 and qdw_same). */
static int same_copy_fits(const dcz_conv_geom *g)
{
    const size_t plane = (size_t)g->in_h * g->in_w, margin = (size_t)g->ph * g->in_w + g->pw + 16;
    return dcz_isa_supported(DCZ_ISA_AVX2) && g->sh == 1 && g->sw == 1 && g->out_w == g->in_w &&
           g->out_h == g->in_h && plane <= QPAIR_PLANE && margin <= QPAIR_MARGIN;
}

/* dcz_qconv2d_copy_bytes here: two channels' copies of the larger kind
 * that runs g */
static uint64_t copy_bytes(const dcz_conv_geom *g)
{
    uint64_t cells = 0;
    qphase q;
    if (same_copy_fits(g)) cells = 2 * (2 * ((uint64_t)g->ph * g->in_w + g->pw + 16) + (uint64_t)g->in_h * g->in_w);
    if (dcz_isa_supported(DCZ_ISA_AVX2) && qphase_of(g, &q) && 2 * (uint64_t)q.cells > cells) cells = 2 * (uint64_t)q.cells;
    return cells * sizeof(dcz_q);
}

#ifdef DCZ_X86
/* The rows of qphase_copy at column stride 2 and padding 0 or 1 (the phase
 * planes zeroed): each row's even and odd inputs (E, O) dealt by a byte
 * shuffle and a permute, 16 inputs a step, by masked loads of their pairs
 * (a 32-bit lane each; an odd row's last input by itself), the phases'
 * cells past the row zeros. Padding 0: phase 0 takes E from cell 0, phase
 * 1 O; padding 1: phase 1 takes E from cell 0, phase 0 O from cell 1. */
__attribute__((target("avx2")))
static void qphase_copy2__avx2(const dcz_conv_geom *g, const qphase *q, const dcz_q *xc, dcz_q *pc)
{
    const size_t W = g->in_w, pairs = W / 2;
    /* per 128-bit lane: the even words to the low 8 bytes, the odd ones to the high */
    const __m256i deal = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                          0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    for (size_t iy = 0; iy < g->in_h; iy++) {
        const dcz_q *xr = xc + iy * W;
        dcz_q *p0 = pc + (iy + g->ph) * q->wq, *p1 = p0 + q->rows * q->wq;
        dcz_q *e = g->pw ? p1 : p0, *o = g->pw ? p0 + 1 : p1;
        for (size_t k = 0; k < pairs; k += 8) {
            const __m256i m = dcz_mask8__avx2((uint32_t)(pairs - k));
            const __m256i v = _mm256_permute4x64_epi64(
                _mm256_shuffle_epi8(_mm256_maskload_epi32((const int *)(const void *)(xr + 2 * k), m), deal), 0xD8);
            _mm_storeu_si128((__m128i *)(void *)(e + k), _mm256_castsi256_si128(v));
            _mm_storeu_si128((__m128i *)(void *)(o + k), _mm256_extracti128_si256(v, 1));
        }
        if (W & 1) e[pairs] = xr[W - 1];   /* an odd row's last input: even */
    }
}
#endif

static void qphase_copy(const dcz_conv_geom *g, const qphase *q, const dcz_q *xc, dcz_q *pc)
{
    const size_t sw = g->sw, W = g->in_w;
    memset(pc, 0, q->cells * sizeof *pc);
    if (sw == 1) {   /* one phase: the padded rows */
        for (size_t iy = 0; iy < g->in_h; iy++)
            memcpy(pc + (iy + g->ph) * q->wq + g->pw, xc + iy * W, W * sizeof *pc);
        return;
    }
#ifdef DCZ_X86
    if (g->pw <= 1 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        qphase_copy2__avx2(g, q, xc, pc);
        return;
    }
#endif
    for (size_t iy = 0; iy < g->in_h; iy++) {
        /* padded column ix + pw: phase px, cell at (no division a cell: they
         * took this layout longer than pair_row) */
        size_t px = g->pw % sw, at = g->pw / sw;
        dcz_q *p0 = pc + (iy + g->ph) * q->wq, *p1 = p0 + q->rows * q->wq;
        for (size_t ix = 0; ix < W; ix++) {
            (px ? p1 : p0)[at] = xc[iy * W + ix];
            if (++px == sw) {
                px = 0;
                at++;
            }
        }
    }
}

/* Where output row 0 of tap (ky, kx) starts in a channel's phase copy:
 * phase kx % sw, padded row ky, cell kx / sw; output row oy's run is sh wq
 * cells further a row. */
static size_t qphase_tap(const dcz_conv_geom *g, const qphase *q, uint32_t ky, uint32_t kx)
{
    return (kx % g->sw * q->rows + ky) * q->wq + kx / g->sw;
}

/* The patches of any convolution at column stride 1 or 2, two patch rows
 * at a time in AVX2: each channel copied once, padded (ph zero rows above
 * and below, pw zero columns left and the rest right) and split by column
 * phase (PH[px][iy][j] = padded row iy's column j sw + px), so that output
 * row oy of tap (ky, kx) is the contiguous run PH[kx % sw][oy sh + ky][kx /
 * sw ..] of out_w cells: a load of 8 a vector, no mask. A row's vectors run
 * up to 7 pairs past it, into the next row's cells (written after it) or
 * past the plane (zeroed after), but never past the patch row. The copy is QPH_CELLS cells at most (two
 * channels on the stack); 0 elsewhere. Where pair_row filled a row of a tap
 * at a time, scalar at stride 2, one core of an AMD EPYC (Zen 3), dcz bench
 * best medians of alternated runs, batch 1: ResNet-style int8 316 -> 300
 * us, LeNet-5 int8 144 -> 119. */
__attribute__((target("avx2")))
static int qim2col_pairs_rows__avx2(const dcz_conv_geom *g, const dcz_q *x, int32_t *col2, size_t ldb, dcz_q *copy)
{
    qphase q;
    const size_t pixels = (size_t)g->out_h * g->out_w;
    if (!copy || !qphase_of(g, &q) || !dcz_isa_supported(DCZ_ISA_AVX2)) return 0;
    const size_t wq = q.wq;
    dcz_q *ph[2] = { copy, copy + q.cells };
    uint32_t held[2] = { UINT32_MAX, UINT32_MAX };
    const uint32_t ksize = g->kh * g->kw, K = g->in_c * ksize;
    for (uint32_t r = 0; r < K; r += 2) {
        const dcz_q *src[2] = { NULL, NULL };
        for (uint32_t j = 0; j < 2 && r + j < K; j++) {
            const uint32_t c = (r + j) / ksize, ky = (r + j) % ksize / g->kw, kx = (r + j) % g->kw;
            dcz_q *pc = ph[c & 1];
            if (held[c & 1] != c) {
                qphase_copy(g, &q, x + (size_t)c * g->in_h * g->in_w, pc);
                held[c & 1] = c;
            }
            src[j] = pc + qphase_tap(g, &q, ky, kx);
        }
        uint32_t *row = (uint32_t *)(void *)(col2 + (size_t)(r / 2) * ldb);
        const size_t step = (size_t)g->sh * wq;
        for (uint32_t oy = 0; oy < g->out_h; oy++) {
            uint32_t *o = row + (size_t)oy * g->out_w;
            for (uint32_t ox = 0; ox < g->out_w; ox += 8) {
                __m128i v[2] = { _mm_setzero_si128(), _mm_setzero_si128() };
                for (uint32_t j = 0; j < 2; j++)
                    if (src[j]) v[j] = _mm_loadu_si128((const __m128i *)(const void *)(src[j] + oy * step + ox));
                const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi16(v[0], v[1]), _mm_unpacklo_epi16(v[0], v[1]));
                if ((size_t)oy * g->out_w + ox + 8 <= ldb) {
                    _mm256_storeu_si256((__m256i *)(void *)(o + ox), pairs);
                } else {   /* past the patch row: its own cells only */
                    uint32_t t[8];
                    _mm256_storeu_si256((__m256i *)(void *)t, pairs);
                    memcpy(o + ox, t, (g->out_w - ox < 8 ? g->out_w - ox : 8) * sizeof *t);
                }
            }
        }
        for (size_t p = pixels; p < ldb; p++) row[p] = 0;
    }
    return 1;
}

#endif

/* One output row of one patch row into the low (high 0: every element
 * written, 0 outside) or high halves (high 1: or-ed in, inside only) of o;
 * xr the input row (NULL: in the padding), inside outputs lo .. hi - 1;
 * avx2: this CPU runs pair_row__avx2. */
static void pair_row(uint32_t *o, const dcz_q *xr, uint32_t out_w, uint32_t sw, int64_t off, uint32_t lo,
                     uint32_t hi, int high, int avx2)
{
#ifdef DCZ_X86
    if (sw == 1 && xr && hi > lo && avx2) {
        pair_row__avx2(o, xr + off, out_w, lo, hi, high);
        return;
    }
#endif
    if (!xr) lo = hi = 0;
    if (!high) {
        for (uint32_t ox = 0; ox < lo; ox++) o[ox] = 0;
        for (uint32_t ox = hi; ox < out_w; ox++) o[ox] = 0;
    }
    const dcz_q *src = xr ? xr + off : NULL;
    if (high)
        for (uint32_t ox = lo; ox < hi; ox++) o[ox] |= (uint32_t)(uint16_t)src[(int64_t)ox * sw] << 16;
    else
        for (uint32_t ox = lo; ox < hi; ox++) o[ox] = (uint16_t)src[(int64_t)ox * sw];
}

void dcz_qim2col_pairs(const dcz_conv_geom *g, const dcz_q *x, int32_t *col2, size_t ldb, dcz_q *copy)
{
#ifdef DCZ_X86
    if (qim2col_pairs_same__avx2(g, x, col2, ldb, copy) || qim2col_pairs_rows__avx2(g, x, col2, ldb, copy)) return;
#else
    (void)copy;
#endif
    const size_t pixels = (size_t)g->out_h * g->out_w;
    const int avx2 = dcz_isa_supported(DCZ_ISA_AVX2);
    for (uint32_t ic = 0; ic < g->in_c; ic++)
        for (uint32_t ky = 0; ky < g->kh; ky++)
            for (uint32_t kx = 0; kx < g->kw; kx++) {
                const uint32_t r = (ic * g->kh + ky) * g->kw + kx;
                uint32_t *row = (uint32_t *)(void *)(col2 + (size_t)(r / 2) * ldb);
                const int64_t off = (int64_t)kx - g->pw;
                uint32_t lo, hi;
                dcz_conv_inside_cols(g, kx, &lo, &hi);
                for (uint32_t oy = 0; oy < g->out_h; oy++) {
                    const int64_t iy = (int64_t)oy * g->sh + ky - g->ph;
                    const dcz_q *xr = iy >= 0 && iy < g->in_h ? x + ((size_t)ic * g->in_h + (size_t)iy) * g->in_w : NULL;
                    pair_row(row + (size_t)oy * g->out_w, xr, g->out_w, g->sw, off, lo, hi, (int)(r & 1), avx2);
                }
                if (!(r & 1))
                    for (size_t p = pixels; p < ldb; p++) row[p] = 0;
            }
}

/* ---- depthwise convolutions on integers --------------------------------- */

#ifdef DCZ_X86
/* The stored taps of output channel oc of a depthwise convolution: their
 * window rows and columns and weights, in column order; their count. */
static uint32_t qdw_taps(const dcz_conv_geom *g, const dcz_qsparse *s, uint32_t oc, uint32_t *ky, uint32_t *kx,
                         int32_t *w)
{
    const uint32_t ksize = g->kh * g->kw;
    uint32_t taps = 0, c = 0;
    for (uint32_t e = s->row_ptr[oc]; e < s->row_ptr[oc + 1]; e++) {
        c += s->step[e];
        if (s->step[e] == DCZ_STEP_FILLER) continue;
        ky[taps] = c % ksize / g->kw;
        kx[taps] = c % g->kw;
        w[taps++] = (int32_t)dcz_qsparse_weight(s, oc, e);
    }
    return taps;
}

static int qdw_same_runs(const dcz_conv_geom *g)
{
    return dcz_conv_group_in(g) == 1 && same_copy_fits(g) && g->kh * g->kw <= DCZ_MAX_WINDOW * DCZ_MAX_WINDOW;
}


/* dcz_qconv2d_depthwise where the output planes are as large as the
 * input's at stride 1: dw_same_channel__avx2 */
static int qdw_same(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                    dcz_q *pad, int64_t *acc)
{
    const size_t W = g->in_w, plane = (size_t)g->in_h * W, pixels = plane;
    const size_t margin = (size_t)g->ph * W + g->pw + 16;
    if (!pad || !qdw_same_runs(g)) return 0;
    int32_t off[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], w[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    int32_t lo[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], hi[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    uint32_t ky[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], kx[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    for (size_t b = 0; b < batch; b++) {
        uint32_t held = UINT32_MAX;
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            const uint32_t ic = dcz_conv_in0(g, oc);
            if (held != ic) {
                memset(pad, 0, margin * sizeof *pad);
                memcpy(pad + margin, x + (b * g->in_c + ic) * plane, plane * sizeof *pad);
                memset(pad + margin + plane, 0, margin * sizeof *pad);
                held = ic;
            }
            const uint32_t taps = qdw_taps(g, s, oc, ky, kx, w);
            for (uint32_t t = 0; t < taps; t++) {
                off[t] = (int32_t)((int64_t)margin + ((int64_t)ky[t] - g->ph) * (int64_t)W + ((int64_t)kx[t] - g->pw));
                /* output columns ox with 0 <= ox + kx - pw < W */
                lo[t] = (int32_t)g->pw - (int32_t)kx[t] - 1;
                hi[t] = (int32_t)W + (int32_t)g->pw - (int32_t)kx[t];
            }
            dw_same_channel__avx2(g, pad, off, w, lo, hi, taps, bias ? (int32_t)bias[oc] : 0,
                                  acc + (b * g->out_c + oc) * pixels);
        }
    }
    return 1;
}


/* dcz_qconv2d_depthwise elsewhere (column stride 1 or 2, any padding): the
 * channel's phase copy (qphase_copy), each output row's runs of the
 * channel's stored taps, 8 outputs a step on 32-bit sums in registers,
 * widened to the accumulators once; a row's last vector running past it
 * lands on the next row's (written after it), but for the plane's last
 * row. The tap kernels ran stride 2 by the scalar reference, with 64-bit
 * sums in memory. */
static int qdw_rows_runs(const dcz_conv_geom *g)
{
    qphase q;
    return dcz_isa_supported(DCZ_ISA_AVX2) && dcz_conv_group_in(g) == 1 && qphase_of(g, &q) &&
           g->kh * g->kw <= DCZ_MAX_WINDOW * DCZ_MAX_WINDOW;
}

__attribute__((target("avx2")))
static void qdw_rows_channel__avx2(const dcz_conv_geom *g, const qphase *q, const dcz_q *pc, const uint32_t *off,
                                   const int32_t *w, uint32_t taps, int32_t bias, int64_t *ap)
{
    const size_t step = (size_t)g->sh * q->wq, pixels = (size_t)g->out_h * g->out_w;
    for (uint32_t oy = 0; oy < g->out_h; oy++) {
        const dcz_q *row = pc + oy * step;
        for (uint32_t ox = 0; ox < g->out_w; ox += 8) {
            __m256i acc = _mm256_set1_epi32(bias);
            for (uint32_t t = 0; t < taps; t++) {
                const __m256i v = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(row + off[t] + ox)));
                acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(v, _mm256_set1_epi32(w[t])));
            }
            store_sums8__avx2(ap, (size_t)oy * g->out_w + ox, pixels, acc);
        }
    }
}

static int qdw_rows(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                    dcz_q *pc, int64_t *acc)
{
    qphase q;
    if (!pc || !qdw_rows_runs(g) || !qphase_of(g, &q)) return 0;
    const size_t plane = (size_t)g->in_h * g->in_w, pixels = (size_t)g->out_h * g->out_w;
    uint32_t off[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], ky[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], kx[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    int32_t w[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    for (size_t b = 0; b < batch; b++) {
        uint32_t held = UINT32_MAX;
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            const uint32_t ic = dcz_conv_in0(g, oc);
            if (held != ic) {
                qphase_copy(g, &q, x + (b * g->in_c + ic) * plane, pc);
                held = ic;
            }
            const uint32_t taps = qdw_taps(g, s, oc, ky, kx, w);
            for (uint32_t t = 0; t < taps; t++) off[t] = (uint32_t)qphase_tap(g, &q, ky[t], kx[t]);
            qdw_rows_channel__avx2(g, &q, pc, off, w, taps, bias ? (int32_t)bias[oc] : 0,
                                   acc + (b * g->out_c + oc) * pixels);
        }
    }
    return 1;
}

#endif

int dcz_qconv2d_depthwise(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x,
                          size_t batch, dcz_q *copy, int64_t *acc)
{
#ifdef DCZ_X86
    return qdw_same(g, s, bias, x, batch, copy, acc) || qdw_rows(g, s, bias, x, batch, copy, acc);
#else
    (void)g; (void)s; (void)bias; (void)x; (void)batch; (void)copy; (void)acc;
    return 0;
#endif
}

uint64_t dcz_qconv2d_copy_bytes(const dcz_conv_geom *g)
{
#ifdef DCZ_X86
    return copy_bytes(g);
#else
    (void)g;
    return 0;
#endif
}

int dcz_qconv2d_depthwise_runs(const dcz_conv_geom *g)
{
#ifdef DCZ_X86
    return qdw_same_runs(g) || qdw_rows_runs(g);
#else
    (void)g;
    return 0;
#endif
}
