/* kernels_qelem.c: the integer layers of 8-bit schemes (int8, fixed8)
 * without weights, vectorized: Add, Mul, Concat, ReLU and the clamps of
 * fused activations, the global average into another scale, activations by
 * table, max pooling (the references are kernels_int.c's). Apart from the
 * weighted layers' kernels: these read and write the region's dcz_q
 * activations, element by element or window by window.
 *
 * Sums and rescaling are exact as the references': each element's values
 * are brought to the output's scale by the integer multiply and rounding
 * shift of dcz_requant_params, within 64 bits.
 *
 * Checked by tests/unit/test_qkernels.c: every variant this machine runs
 * against its reference, bit for bit.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/model.h"

#if DCZ_BUILD_Q8_X86
#include <immintrin.h>

#include "runtime/cpu/avx2_lanes.h"
#include "runtime/cpu/q8/rq16_x86.h"
#define DCZ_X86 1
#endif

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

/* The 32-bit lanes x (each a 16-bit value, sign-extended) times the
 * factors vf (each a 16-bit factor in the low half of its 32-bit lane),
 * rescaled by dcz_rq16_hi after the pre-shift hp, clamped to vlo .. vhi */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __attribute__((always_inline)) __m512i
qscale16_lanes(__m512i x, __m512i vf, __m512i hm, __m512i hh, __m128i hk, __m128i hp, __m512i vlo, __m512i vhi)
{
    const __m512i r = dcz_rq16_hi(_mm512_sll_epi32(_mm512_madd_epi16(x, vf), hp), hm, hh, hk);
    return _mm512_min_epi32(_mm512_max_epi32(r, vlo), vhi);
}

/* y (the lanes of km) = x scaled so (qscale16_lanes) */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __attribute__((always_inline)) void
qscale16_hi(const dcz_q *x, __m512i vf, __mmask16 km, __m512i hm, __m512i hh, __m128i hk, __m128i hp, __m512i vlo,
            __m512i vhi, dcz_q *y)
{
    const __m512i v = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(km, x));
    _mm256_mask_storeu_epi16(y, km, _mm512_cvtepi32_epi16(qscale16_lanes(v, vf, hm, hh, hk, hp, vlo, vhi)));
}

/* 16 values a step: the inputs widened to 32-bit lanes, whose even and odd
 * lanes are rescaled and added in 64 bits, clamped there and narrowed
 * together (the reference's integers). Against 8 values a step in 64-bit
 * lanes and the ReLU after the Add in a pass of its own, this and the Add
 * taking the ReLU: ResNet-style int8 batch 1 76.5 -> 74.4 us. Where both
 * inputs' shifts reach 33 (with their pre-shifts for values of at most
 * 32767), each is rescaled in 32-bit lanes by dcz_rq16_hi. */
__attribute__((target("avx512f")))
static void qadd__avx512(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift,
                         int32_t lo, int32_t hi, dcz_q *y)
{
    __m512i hm0, hh0, hm1, hh1;
    __m128i hk0, hp0, hk1, hp1;
    if (dcz_rq16_consts(mult[0], shift[0], 32767, &hm0, &hh0, &hk0, &hp0) &&
        dcz_rq16_consts(mult[1], shift[1], 32767, &hm1, &hh1, &hk1, &hp1)) {
        const __m512i vhi = _mm512_set1_epi32(hi), vlo = _mm512_set1_epi32(lo);
        size_t i = 0;
        for (; i + 16 <= n; i += 16) {
            const __m512i va = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(a + i)));
            const __m512i vb = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(b + i)));
            const __m512i v = _mm512_add_epi32(dcz_rq16_hi(_mm512_sll_epi32(va, hp0), hm0, hh0, hk0),
                                               dcz_rq16_hi(_mm512_sll_epi32(vb, hp1), hm1, hh1, hk1));
            _mm256_storeu_si256((__m256i *)(void *)(y + i),
                                _mm512_cvtepi32_epi16(_mm512_min_epi32(_mm512_max_epi32(v, vlo), vhi)));
        }
        if (i < n) qadd_clamped_ref(a + i, b + i, n - i, mult, shift, lo, hi, y + i);
        return;
    }
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

/* 32 values a step by the ADD's tables (dcz_qadd_tables): each input's
 * term looked up (dcz_qlook16), the two added in 16 bits (each within
 * +-16383), clamped. Half the time of the rescaling by multiplies, which
 * left the Add its own pass of compute over two inputs and an output: 802,816
 * values (ResNet-50's 256 x 56 x 56), one core of an AMD EPYC (Zen 4),
 * 171 -> 88 us. */
__attribute__((target("avx512f,avx512bw")))
static void qadd_tables__avx512(const dcz_q *tables, const dcz_q *a, const dcz_q *b, size_t n, int32_t lo, int32_t hi,
                                dcz_q *y)
{
    __m512i t0[8], t1[8];
    for (int k = 0; k < 8; k++) {
        t0[k] = _mm512_loadu_si512((const void *)(tables + 32 * k));
        t1[k] = _mm512_loadu_si512((const void *)(tables + DCZ_QADD_TABLE + 32 * k));
    }
    const __m512i off = _mm512_set1_epi16(127), vlo = _mm512_set1_epi16((short)lo), vhi = _mm512_set1_epi16((short)hi);
    for (size_t i = 0; i < n; i += 32) {
        const __mmask32 m = n - i >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << (n - i)) - 1);
        const __m512i va = _mm512_add_epi16(_mm512_maskz_loadu_epi16(m, a + i), off);
        const __m512i vb = _mm512_add_epi16(_mm512_maskz_loadu_epi16(m, b + i), off);
        const __m512i v = _mm512_add_epi16(dcz_qlook16(t0, va), dcz_qlook16(t1, vb));
        _mm512_mask_storeu_epi16(y + i, m, _mm512_min_epi16(_mm512_max_epi16(v, vlo), vhi));
    }
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

/* Values i .. n of qscale by the reference: x f by the one factor f, or
 * element by element by fe. */
static void qscale_tail(const dcz_q *x, size_t n, size_t i, int32_t f, const dcz_q *fe, int32_t mult,
                        uint8_t shift, int32_t qmax, dcz_q *y)
{
    const dcz_q fq = (dcz_q)f;
    if (i == n) return;
    if (fe) dcz_qmul_ref(x + i, fe + i, 1, (uint32_t)(n - i), 1, mult, shift, qmax, y + i);
    else dcz_qmul_ref(x + i, &fq, 1, 1, (uint32_t)(n - i), mult, shift, qmax, y + i);
}

/* y (n) = clamp(rq(x f, mult, shift), +-qmax): a plane of a Mul by its
 * channel's factor f, or one input of a Concat brought to the output's
 * scale (f 1); with fe, x fe element by element (a Mul whose factors are
 * as many as its values: MobileNetV3's hard swish); 16 values a step as qadd__avx512 takes one of its inputs,
 * x f within 32 bits (|x|, |f| <= 32767). SqueezeNet 1.1 int8 spent 45%
 * of its batch-1 time in the reference's Concat (dcz bench --per-layer,
 * one thread). The product by vpmaddwd, x's word beside a 0 word of the
 * factor (one uop where vpmulld took two), and the last values under a
 * mask, where the reference's tail took longer than the vectors over a
 * squeeze-and-excitation gate's 7 x 7 plane (int8 MobileNetV3-Small, one
 * core of an Intel Xeon, medians of three alternated runs: its seven
 * gates' Mul 136 -> 100 us, all 28 Mul 460 -> 425). */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void qscale__avx512(const dcz_q *x, size_t n, int32_t f, const dcz_q *fe, int32_t mult, uint8_t shift,
                           int32_t qmax, dcz_q *y)
{
    /* where the shift reaches 33 (with its pre-shift for |x f| <= qmax
     * max|f|), in 32-bit lanes by dcz_rq16_hi */
    __m512i hm, hh;
    __m128i hk, hp;
    if (dcz_rq16_consts(mult, shift, (double)qmax * (fe ? qmax : f < 0 ? -(double)f : f), &hm, &hh, &hk, &hp)) {
        const __m512i f1 = _mm512_set1_epi32((int32_t)(uint16_t)f);
        const __m512i vhi = _mm512_set1_epi32(qmax), vlo = _mm512_set1_epi32(-qmax);
        for (size_t i = 0; i < n; i += 16) {
            const __mmask16 km = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
            const __m512i vf = fe ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(km, fe + i)) : f1;
            qscale16_hi(x + i, vf, km, hm, hh, hk, hp, vlo, vhi, y + i);
        }
        return;
    }
    const __m512i f1 = _mm512_set1_epi32((int32_t)(uint16_t)f), m = _mm512_set1_epi64(mult);
    const __m512i h = _mm512_set1_epi64(shift ? (int64_t)1 << (shift - 1) : 0);
    const __m128i k = _mm_cvtsi32_si128(shift);
    const __m512i vhi = _mm512_set1_epi64(qmax), vlo = _mm512_set1_epi64(-(int64_t)qmax);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 km = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        const __m512i vf = fe ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(km, fe + i)) : f1;
        const __m512i v = _mm512_madd_epi16(_mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(km, x + i)), vf);
        const __m512i ev = _mm512_min_epi64(_mm512_max_epi64(rescale8__avx512(v, m, h, k), vlo), vhi);
        const __m512i od =
            _mm512_min_epi64(_mm512_max_epi64(rescale8__avx512(_mm512_srli_epi64(v, 32), m, h, k), vlo), vhi);
        const __m512i r = _mm512_mask_blend_epi32((__mmask16)0xAAAA, ev, _mm512_slli_epi64(od, 32));
        _mm256_mask_storeu_epi16(y + i, km, _mm512_cvtepi32_epi16(r));
    }
}

/* qscale__avx512 in AVX2, 8 values a step as qadd__avx2 takes one input */
__attribute__((target("avx2")))
static void qscale__avx2(const dcz_q *x, size_t n, int32_t f, const dcz_q *fe, int32_t mult, uint8_t shift,
                         int32_t qmax, dcz_q *y)
{
    const int64_t lift = (int64_t)1 << 62;
    const __m256i f1 = _mm256_set1_epi32(f), m = _mm256_set1_epi64x(mult);
    const __m256i h = _mm256_set1_epi64x(lift + (shift ? (int64_t)1 << (shift - 1) : 0));
    const __m256i l = _mm256_set1_epi64x(lift >> shift);
    const __m128i k = _mm_cvtsi32_si128(shift);
    const __m256i vhi = _mm256_set1_epi64x(qmax), vlo = _mm256_set1_epi64x(-(int64_t)qmax);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i vf = fe ? _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(fe + i))) : f1;
        const __m256i v =
            _mm256_mullo_epi32(_mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(x + i))), vf);
        const __m256i ev = clamp4__avx2(rescale4__avx2(v, m, h, l, k), vlo, vhi);
        const __m256i od = clamp4__avx2(rescale4__avx2(_mm256_srli_epi64(v, 32), m, h, l, k), vlo, vhi);
        const __m256i r = _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(r, r), 0x08);
        _mm_storeu_si128((__m128i *)(void *)(y + i), _mm256_castsi256_si128(p));
    }
    qscale_tail(x, n, i, f, fe, mult, shift, qmax, y);
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
/* The sums of a[0] .. a[15]'s lanes, lane j a[j]'s: pairs of vectors
 * interleaved and added by 32-bit then 64-bit lanes (each 128-bit lane
 * then holds four planes' partial sums), then the 128-bit lanes of four
 * such vectors transposed and added */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) __m512i hsum16__avx512(const __m512i a[16])
{
    __m512i b[8], c[4];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        b[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * k], a[2 * k + 1]),
                                _mm512_unpackhi_epi32(a[2 * k], a[2 * k + 1]));
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        c[k] = _mm512_add_epi32(_mm512_unpacklo_epi64(b[2 * k], b[2 * k + 1]),
                                _mm512_unpackhi_epi64(b[2 * k], b[2 * k + 1]));
    const __m512i f01 = _mm512_add_epi32(_mm512_shuffle_i32x4(c[0], c[1], 0x44), _mm512_shuffle_i32x4(c[0], c[1], 0xEE));
    const __m512i f23 = _mm512_add_epi32(_mm512_shuffle_i32x4(c[2], c[3], 0x44), _mm512_shuffle_i32x4(c[2], c[3], 0xEE));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(f01, f23, 0x88), _mm512_shuffle_i32x4(f01, f23, 0xDD));
}

/* dcz_qglobal_avgpool_rescale_ref on AVX-512: each plane summed 32 cells
 * at a time by vpmaddwd into 32-bit lanes (a plane of 2^16 cells or fewer
 * sums within 32 bits), eight planes' sums then multiplied in 64-bit lanes
 * (within 2^62: dcz_round_shift's exact range), rounded half up by an
 * arithmetic shift, clamped and narrowed: the reference's values, where it
 * took 1.9% of int8 MobileNetV2-style at batch 64 (perf), a call per
 * plane of requant_one and its branches. Planes of up to QGAP_GROUP_PLANE
 * cells go sixteen at a time, their sums gathered by hsum16__avx512 where
 * each plane's was reduced alone: one core of an AMD EPYC (Zen 5), warm,
 * 576 x 7 x 7 1.70 -> 1.01 us, 240 x 14 x 14 1.67 -> 1.09; in the networks
 * (dcz bench --per-layer) MobileNetV3-Small's means of 7 x 7 1.6 -> 1.1,
 * EfficientNet-B0's 1.1 us less each over 7 x 7 and 14 x 14, but 1.7-2.4
 * more over 56 x 56 and 112 x 112 (and over 28 x 28 at a bound of 1024
 * cells the model lost 0.7%). The models, int8 pruned by blocks, medians
 * of ten alternated rounds in both orders: MobileNetV3-Small 0.986 of the
 * time, EfficientNet-B0 0.997. A plane's whole vectors by a loop of their
 * own, its last under a mask (qplane_sums__avx512), where each step had
 * made its mask: 576 x 7 x 7 1.01 -> 0.61 us, 32 x 112 x 112 7.2 -> 5.7,
 * 96 x 56 x 56 5.7 -> 4.0. */
#define QGAP_GROUP_PLANE 256
/* a plane's sum in the 32-bit lanes of a vector (vpmaddwd by ones, 32
 * cells a step, the last under a mask) */
__attribute__((target("avx512f,avx512bw"))) static inline __attribute__((always_inline)) __m512i
qplane_sums__avx512(const dcz_q *xp, uint32_t plane, __m512i ones)
{
    __m512i acc = _mm512_setzero_si512();
    uint32_t i = 0;
    for (; i + 32 <= plane; i += 32)
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_loadu_si512((const void *)(xp + i)), ones));
    if (i < plane)
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maskz_loadu_epi16((__mmask32)((1u << (plane - i)) - 1), xp + i),
                                                      ones));
    return acc;
}

/* y (the lanes of k) = the eight sums rescaled: multiplied in 64-bit
 * lanes, rounded half up by an arithmetic shift, clamped, narrowed */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __attribute__((always_inline)) void
qrescale8__avx512(__m256i sums, __mmask8 k, __m512i m, __m512i half, __m128i count, __m512i lo, __m512i hi, dcz_q *y)
{
    const __m512i v = _mm512_mul_epi32(_mm512_cvtepi32_epi64(sums), m);
    const __m512i r = _mm512_min_epi64(_mm512_max_epi64(_mm512_sra_epi64(_mm512_add_epi64(v, half), count), lo), hi);
    _mm_mask_storeu_epi16(y, k, _mm512_cvtepi64_epi16(r));
}

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
    size_t p0 = 0;
    /* planes of up to QGAP_GROUP_PLANE cells sixteen at a time, their sums
     * gathered in registers */
    for (; plane <= QGAP_GROUP_PLANE && p0 + 16 <= planes; p0 += 16) {
        __m512i acc[16];
#pragma GCC unroll 16
        for (size_t j = 0; j < 16; j++) acc[j] = qplane_sums__avx512(x + (p0 + j) * plane, plane, ones);
        const __m512i sums = hsum16__avx512(acc);
        qrescale8__avx512(_mm512_castsi512_si256(sums), 0xFF, m, half, count, lo, hi, y + p0);
        qrescale8__avx512(_mm512_extracti64x4_epi64(sums, 1), 0xFF, m, half, count, lo, hi, y + p0 + 8);
    }
    for (; p0 < planes; p0 += 8) {
        const size_t n = planes - p0 < 8 ? planes - p0 : 8;
        int32_t sum[8] = { 0 };
        for (size_t j = 0; j < n; j++) sum[j] = _mm512_reduce_add_epi32(qplane_sums__avx512(x + (p0 + j) * plane, plane, ones));
        qrescale8__avx512(_mm256_loadu_si256((const __m256i *)(void *)sum), (__mmask8)((1u << n) - 1), m, half, count,
                          lo, hi, y + p0);
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

uint64_t dcz_qadd_table_entries(int32_t qmax)
{
#ifdef DCZ_X86   /* where the lookups are built */
    return qmax == 127 ? 2 * DCZ_QADD_TABLE : 0;
#else
    (void)qmax;
    return 0;
#endif
}

int dcz_qadd_tables(const int32_t *mult, const uint8_t *shift, int32_t qmax, dcz_q *tables)
{
    if (qmax != 127 || shift[0] > 62 || shift[1] > 62) return 0;
    for (int k = 0; k < 2; k++)
        for (int32_t v = -qmax; v <= qmax + 1; v++) {
            /* (the entry past the last: never looked up) */
            const int64_t r = v > qmax ? 0 : dcz_round_shift((int64_t)v * mult[k], shift[k]);
            if (r < -16383 || r > 16383) return 0;
            tables[k * DCZ_QADD_TABLE + v + qmax] = (dcz_q)r;
        }
    return 1;
}

int dcz_qadd_isa(dcz_isa isa, const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift,
                 int32_t lo, int32_t hi, const dcz_q *tables, dcz_q *y)
{
    if (isa == DCZ_ISA_REF) {
        qadd_clamped_ref(a, b, n, mult, shift, lo, hi, y);
        return 1;
    }
#ifdef DCZ_X86
    /* the reference's formula holds for shifts up to 62 (dcz_round_shift) */
    if (shift[0] > 62 || shift[1] > 62) return 0;
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512)) {
        if (tables && dcz_cpu_features()->avx512bw) qadd_tables__avx512(tables, a, b, n, lo, hi, y);
        else qadd__avx512(a, b, n, mult, shift, lo, hi, y);
        return 1;
    }
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        qadd__avx2(a, b, n, mult, shift, lo, hi, y);
        return 1;
    }
#else
    (void)a; (void)b; (void)n; (void)mult; (void)shift; (void)lo; (void)hi; (void)tables; (void)y;
#endif
    return 0;
}

/* The vector variant isa names, where this machine has it and every
 * shift is at most 62 (dcz_round_shift's exact formula): 2 AVX-512, 1
 * AVX2, 0 none. */
static int qscale_variant(dcz_isa isa, const uint8_t *shift, uint32_t nshift)
{
#ifdef DCZ_X86
    for (uint32_t k = 0; k < nshift; k++)
        if (shift[k] > 62) return 0;
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
        dcz_cpu_features()->avx512vl)
        return 2;
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) return 1;
#else
    (void)isa; (void)shift; (void)nshift;
#endif
    return 0;
}

/* qscale on variant v (qscale_variant) */
static void qscale(int v, const dcz_q *x, size_t n, int32_t f, const dcz_q *fe, int32_t mult, uint8_t shift,
                   int32_t qmax, dcz_q *y)
{
#ifdef DCZ_X86
    if (v == 2) qscale__avx512(x, n, f, fe, mult, shift, qmax, y);
    else qscale__avx2(x, n, f, fe, mult, shift, qmax, y);
#else
    (void)v; (void)x; (void)n; (void)f; (void)fe; (void)mult; (void)shift; (void)qmax; (void)y;
#endif
}

#ifdef DCZ_X86
static int qtable8__vbmi(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y);

/* y (n) = x looked up in the byte table t0 .. t3 (by x's low byte) */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static inline __attribute__((always_inline)) void
qlook8_run(__m512i t0, __m512i t1, __m512i t2, __m512i t3, const dcz_q *x, size_t n, dcz_q *y)
{
    /* the even bytes of two vectors of 16-bit lanes: their low bytes */
    static const uint8_t ev[64] = {
        0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
        32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62,
        64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94,
        96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126
    };
    const __m512i even = _mm512_loadu_si512((const void *)ev);
    for (size_t i = 0; i < n; i += 64) {
        const size_t left = n - i;
        const __mmask32 m0 = left >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << left) - 1);
        const __mmask32 m1 = left >= 64 ? 0xFFFFFFFFu : left <= 32 ? 0 : (__mmask32)((1u << (left - 32)) - 1);
        const __m512i a = _mm512_maskz_loadu_epi16(m0, x + i), b = _mm512_maskz_loadu_epi16(m1, x + i + 32);
        const __m512i at = _mm512_permutex2var_epi8(a, even, b);   /* the 64 low bytes */
        const __m512i lo = _mm512_permutex2var_epi8(t0, at, t1), hi = _mm512_permutex2var_epi8(t2, at, t3);
        const __m512i r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(at), lo, hi);
        _mm512_mask_storeu_epi16(y + i, m0, _mm512_cvtepi8_epi16(_mm512_castsi512_si256(r)));
        if (m1) _mm512_mask_storeu_epi16(y + i + 32, m1, _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(r, 1)));
    }
}
#endif

uint64_t dcz_qconcat_table_entries(uint32_t nin, int32_t qmax)
{
#ifdef DCZ_X86   /* where the lookups are built */
    return qmax <= 127 ? (uint64_t)nin * (2 * (uint64_t)qmax + 2) : 0;
#else
    (void)nin;
    (void)qmax;
    return 0;
#endif
}

void dcz_qconcat_tables(uint32_t nin, const int32_t *mult, const uint8_t *shift, int32_t qmax, dcz_q *tables)
{
    if (qmax > 127) return;   /* no tables (dcz_qconcat_table_entries) */
    const uint32_t entries = 2 * (uint32_t)qmax + 1;
    dcz_q ramp[255];
    for (uint32_t i = 0; i < entries; i++) ramp[i] = (dcz_q)((int32_t)i - qmax);
    const dcz_q *x = ramp;
    for (uint32_t k = 0; k < nin; k++) {
        dcz_q *t = tables + (size_t)k * (entries + 1);
        dcz_qconcat_ref(&x, &entries, 1, 1, &mult[k], &shift[k], qmax, t);
        t[entries] = 0;
    }
}

int dcz_qconcat_isa(dcz_isa isa, const dcz_q *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                    const int32_t *mult, const uint8_t *shift, int32_t qmax, const dcz_q *tables, dcz_q *y)
{
    if (isa == DCZ_ISA_REF) {
        dcz_qconcat_ref(x, width, nin, batch, mult, shift, qmax, y);
        return 1;
    }
    const int v = qscale_variant(isa, shift, nin);
    if (!v) return 0;
    /* on AVX-512BW (variant 2) an input to rescale is looked up in its
     * table (dcz_qtable: byte permutes on VBMI, 64 a step, else word
     * permutes), where the rescaling by the products' high halves took
     * three times their instructions: int8 ShuffleNetV2 (pruned by blocks,
     * batch 1, one core of an AMD EPYC, Zen 4) spent 5.4% of its time
     * rescaling its Concats' first inputs (perf record) */
    const int lookup = v == 2 && tables && qmax <= 127;
    for (size_t b = 0; b < batch; b++)
        for (uint32_t k = 0; k < nin; k++) {
            const dcz_q *in = x[k] + b * width[k];
            /* an input already on the output's scale: rq is the identity
             * (v 2^s >> s), and its values are within +-qmax */
            if (shift[k] <= 30 && mult[k] == (int32_t)1 << shift[k]) memcpy(y, in, (size_t)width[k] * sizeof *y);
            else if (lookup) dcz_qtable(tables + (size_t)k * (2 * (size_t)qmax + 2), qmax, in, width[k], y);
            else qscale(v, in, width[k], 1, NULL, mult[k], shift[k], qmax, y);
            y += width[k];
        }
    return 1;
}


/* A plane of a Mul by its channel's factor, of the 8-bit schemes, by a
 * table where the plane has QMUL_TABLE_PLANE values or more: the values x
 * can take, scaled by qscale16_lanes (the bits of qscale), made
 * in four registers as bytes by x's low byte (qlook8_run's table; the
 * 8-bit schemes' outputs lie within +-127), then the plane looked up in
 * them by byte permutes. The squeeze-and-excitation gates' Mul of int8
 * EfficientNet-B0 (pruned by blocks, batch 1, one core of an AMD EPYC,
 * Zen 4, dcz bench --per-layer medians): 32 x 112 x 112 85 -> 44 us, 96 x
 * 56 x 56 65 -> 54, 144 x 56 x 56 97 -> 87 with the table made by qscale
 * and laid out by bytes in a scalar loop, which cost about what 800
 * values do; made in registers (sixteen vectors of qscale16_lanes, four
 * narrowings), 23.9 -> 16.6, 38.0 -> 15.9 and 57.3 -> 24.1 us, and over
 * 28 x 28 planes, which took the vectors of qmul_flat,
 * 19.8 -> 11.7 (144 channels) and 33.0 -> 19.4 (240); the model 3.22 ->
 * 3.12 ms, MobileNetV3-Small 665 -> 645 us (least of three alternated
 * medians of 20 runs). Planes of 14 x 14 gain nothing: the table costs
 * what 256 values do. */
#define QMUL_TABLE_PLANE 512
/* the planes below which the others run as one (qmul_flat__avx512), past
 * which a call a plane costs little more */
#define QMUL_FLAT_PLANE 1024
#ifdef DCZ_X86
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))
static void qmul_table__vbmi(const dcz_q *x, uint32_t plane, int32_t f, __m512i hm, __m512i hh, __m128i hk,
                             __m128i hp, int32_t qmax, dcz_q *y)
{
    const __m512i vf = _mm512_set1_epi32((int32_t)(uint16_t)f);
    const __m512i vhi = _mm512_set1_epi32(qmax), vlo = _mm512_set1_epi32(-qmax);
    const __m512i ramp = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m128i b[16];
    for (int j = 0; j < 16; j++) {
        /* entry i: x = i as a signed byte (-128: never looked up) */
        const __m512i i = _mm512_add_epi32(ramp, _mm512_set1_epi32(16 * j));
        const __m512i v = _mm512_srai_epi32(_mm512_slli_epi32(i, 24), 24);
        b[j] = _mm512_cvtepi32_epi8(qscale16_lanes(v, vf, hm, hh, hk, hp, vlo, vhi));
    }
    __m512i t[4];
    for (int k = 0; k < 4; k++)
        t[k] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(b[4 * k + 1], b[4 * k])),
                                  _mm256_set_m128i(b[4 * k + 3], b[4 * k + 2]), 1);
    qlook8_run(t[0], t[1], t[2], t[3], x, plane, y);
}
#endif

#ifdef DCZ_X86
/* every plane by qmul_table__vbmi; 0 where the shift does not reach 33
 * (dcz_rq16_hi) */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))
static int qmul_planes__vbmi(const dcz_q *x, const dcz_q *f, size_t planes, uint32_t plane, int32_t mult,
                             uint8_t shift, int32_t qmax, dcz_q *y)
{
    __m512i hm, hh;
    __m128i hk, hp;
    if (!dcz_rq16_consts(mult, shift, (double)qmax * qmax, &hm, &hh, &hk, &hp)) return 0;
    for (size_t c = 0; c < planes; c++)
        qmul_table__vbmi(x + c * plane, plane, f[c], hm, hh, hk, hp, qmax, y + c * plane);
    return 1;
}
#endif

/* 0 where the planes go otherwise (not VBMI, planes below the table's
 * size, not the 8-bit schemes, a shift that does not reach 33) */
static int qmul_tables(int v, const dcz_q *x, const dcz_q *f, size_t planes, uint32_t plane, int32_t mult,
                       uint8_t shift, int32_t qmax, dcz_q *y)
{
#ifdef DCZ_X86
    return v == 2 && qmax <= 127 && plane >= QMUL_TABLE_PLANE && dcz_cpu_features()->avx512vbmi &&
           qmul_planes__vbmi(x, f, planes, plane, mult, shift, qmax, y);
#else
    (void)v; (void)x; (void)f; (void)planes; (void)plane; (void)mult; (void)shift; (void)qmax; (void)y;
    return 0;
#endif
}

#ifdef DCZ_X86
/* The factors of the 16 values from i of planes of plane values (16 or
 * more) one after the other: plane *c's, and the next plane's past the
 * boundary where one falls among them (*next: where plane *c + 1 starts),
 * *c and *next moved on to the plane of value i + 16 */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) __m512i
qmul_factors(const dcz_q *f, uint32_t plane, size_t n, size_t i, size_t *c, size_t *next)
{
    __m512i vf = _mm512_set1_epi32((int32_t)(uint16_t)f[*c]);
    /* lanes next - i .. take the next plane's factor */
    if (*next < i + 16 && *next < n)
        vf = _mm512_mask_set1_epi32(vf, (__mmask16)(0xFFFFu << (*next - i)), (int32_t)(uint16_t)f[*c + 1]);
    if (*next <= i + 16) {
        (*c)++;
        *next += plane;
    }
    return vf;
}

/* A Mul by a factor a plane over planes of 16 to QMUL_FLAT_PLANE - 1
 * values that the tables do not take (below QMUL_TABLE_PLANE, or a CPU
 * without VBMI), as one run over all of them: each vector's factors its plane's,
 * and the next plane's past the boundary where one falls inside it (planes
 * of 16 or more: one at most); the constants made once, for |x f| <=
 * qmax^2 (a factor is an activation). Where a call a plane, each a few
 * vectors (MobileNetV3-Small's gates over 7 x 7 and 14 x 14 planes), spent
 * more in its setup and its last vector's empty lanes than in its values.
 * 0 where the shift does not reach 33 (dcz_rq16_hi). */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static int qmul_flat__avx512(const dcz_q *x, const dcz_q *f, size_t planes, uint32_t plane, int32_t mult,
                             uint8_t shift, int32_t qmax, dcz_q *y)
{
    __m512i hm, hh;
    __m128i hk, hp;
    if (plane < 16 || !dcz_rq16_consts(mult, shift, (double)qmax * qmax, &hm, &hh, &hk, &hp)) return 0;
    const __m512i vhi = _mm512_set1_epi32(qmax), vlo = _mm512_set1_epi32(-qmax);
    const size_t n = planes * plane;
    size_t c = 0, next = plane;   /* the plane of lane 0, where the next one starts */
    size_t i = 0;
    /* the 8-bit schemes where the shift count is 8 or less: two vectors a
     * step, their high halves packed to 16 bits and rounded and shifted
     * there, saturating, then clamped, as requant_pair does in
     * qshift_requant.c (the same values once within +-127) */
    const unsigned count = (unsigned)_mm_cvtsi128_si32(hk);
    if (qmax <= 127 && count <= 8) {
        const __m512i half16 = _mm512_set1_epi16((int16_t)(1 << (count - 1)));
        const __m512i hi16 = _mm512_set1_epi16((int16_t)qmax), lo16 = _mm512_set1_epi16((int16_t)-qmax);
        const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
        for (; i + 32 <= n; i += 32) {
            const __m512i f0 = qmul_factors(f, plane, n, i, &c, &next), f1 = qmul_factors(f, plane, n, i + 16, &c, &next);
            const __m512i xv = _mm512_loadu_si512((const void *)(x + i));
            const __m512i v0 = _mm512_cvtepi16_epi32(_mm512_castsi512_si256(xv));
            const __m512i v1 = _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(xv, 1));
            const __m512i h = _mm512_packs_epi32(dcz_rq16_high(_mm512_sll_epi32(_mm512_madd_epi16(v0, f0), hp), hm),
                                                 dcz_rq16_high(_mm512_sll_epi32(_mm512_madd_epi16(v1, f1), hp), hm));
            const __m512i r = _mm512_permutexvar_epi64(order, _mm512_sra_epi16(_mm512_adds_epi16(h, half16), hk));
            _mm512_storeu_si512((void *)(y + i), _mm512_min_epi16(_mm512_max_epi16(r, lo16), hi16));
        }
    }
    for (; i < n; i += 16) {
        const __mmask16 km = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        qscale16_hi(x + i, qmul_factors(f, plane, n, i, &c, &next), km, hm, hh, hk, hp, vlo, vhi, y + i);
    }
    return 1;
}
#endif

int dcz_qmul_isa(dcz_isa isa, const dcz_q *x, const dcz_q *f, size_t batch, uint32_t channels, uint32_t plane,
                 int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y)
{
    if (isa == DCZ_ISA_REF) {
        dcz_qmul_ref(x, f, batch, channels, plane, mult, shift, qmax, y);
        return 1;
    }
    const int v = qscale_variant(isa, &shift, 1);
    if (!v) return 0;
    /* a factor a value: one run; planes below the table's size: one run
     * where it takes them; else a run a plane */
    if (plane == 1) qscale(v, x, batch * channels, 0, f, mult, shift, qmax, y);
    else if (qmul_tables(v, x, f, batch * channels, plane, mult, shift, qmax, y))
        return 1;
#ifdef DCZ_X86
    else if (v == 2 && plane < QMUL_FLAT_PLANE && qmul_flat__avx512(x, f, batch * channels, plane, mult, shift, qmax, y))
        return 1;
#endif
    else
        for (size_t c = 0; c < batch * channels; c++)
            qscale(v, x + c * plane, plane, f[c], NULL, mult, shift, qmax, y + c * plane);
    return 1;
}

void dcz_qmul(const dcz_q *x, const dcz_q *f, size_t batch, uint32_t channels, uint32_t plane, int32_t mult,
              uint8_t shift, int32_t qmax, dcz_q *y)
{
    if (!dcz_qmul_isa(DCZ_ISA_AVX512, x, f, batch, channels, plane, mult, shift, qmax, y) &&
        !dcz_qmul_isa(DCZ_ISA_AVX2, x, f, batch, channels, plane, mult, shift, qmax, y))
        dcz_qmul_ref(x, f, batch, channels, plane, mult, shift, qmax, y);
}

void dcz_qconcat(const dcz_q *const *x, const uint32_t *width, uint32_t nin, size_t batch, const int32_t *mult,
                 const uint8_t *shift, int32_t qmax, const dcz_q *tables, dcz_q *y)
{
    if (!dcz_qconcat_isa(DCZ_ISA_AVX512, x, width, nin, batch, mult, shift, qmax, tables, y) &&
        !dcz_qconcat_isa(DCZ_ISA_AVX2, x, width, nin, batch, mult, shift, qmax, tables, y))
        dcz_qconcat_ref(x, width, nin, batch, mult, shift, qmax, y);
}

void dcz_qadd(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift, int32_t lo,
              int32_t hi, const dcz_q *tables, dcz_q *y)
{
    if (!dcz_qadd_isa(DCZ_ISA_AVX512, a, b, n, mult, shift, lo, hi, tables, y) &&
        !dcz_qadd_isa(DCZ_ISA_AVX2, a, b, n, mult, shift, lo, hi, NULL, y))
        dcz_qadd_isa(DCZ_ISA_REF, a, b, n, mult, shift, lo, hi, NULL, y);
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

/* The first run of planes from channel c that skip does not mark: [*c0,
 * *c1), *c1 == channels where none is left */
static void qtable_run_of(const uint8_t *skip, uint32_t channels, uint32_t c, uint32_t *c0, uint32_t *c1)
{
    while (c < channels && skip[c]) c++;
    *c0 = c;
    while (c < channels && !skip[c]) c++;
    *c1 = c;
}

#ifdef DCZ_X86
/* Tables of the 8-bit schemes (255 entries, qmax 127) held in eight
 * registers, 32 lookups a step (dcz_qlook16). Gathers cost AMD's cores (Zen 4) about
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
    for (size_t i = 0; i < n; i += 32) {
        const __mmask32 m = n - i >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << (n - i)) - 1);
        const __m512i at = _mm512_add_epi16(_mm512_maskz_loadu_epi16(m, x + i), off);
        _mm512_mask_storeu_epi16(y + i, m, dcz_qlook16(q, at));
    }
}

/* The same with byte permutes (VBMI) where every entry fits a byte, as
 * the 8-bit schemes' tables do (outputs within -qmax .. qmax): 64 lookups
 * a step. The table is laid out by the index's low byte (x's own byte,
 * two's complement), its 256 bytes in four registers; a two-register byte
 * permute looks up the low seven bits in each half and bit 7 chooses the
 * half; the inputs are narrowed to their low bytes by one more permute
 * and the bytes sign-extended back. Twelve instructions for 64 lookups
 * where the word permutes take 24: int8 EfficientNet-B0's SiLU tables (6.2
 * million lookups a sample; pruned by blocks, batch 1, one core of an AMD
 * EPYC, Zen 4, dcz bench --per-layer) 449 -> 310 us; the whole model,
 * least of three alternated minima of 40 runs, 4.21 -> 4.16 ms, int8
 * MobileNetV3-Small (HardSwish) 0.830 -> 0.808. A table with an entry
 * past a byte takes the word permutes. */
/* tb = table laid out by the index's low byte; 0 where an entry is past a
 * byte. The entries narrowed 32 a step, then put in place by two copies
 * (the indices 0 .. qmax, then -qmax .. -1): a loop over the 255 entries,
 * a branch each, cost about what 6,000 lookups do, as much as the lookups
 * of MobileNetV3-Small's 7 x 7 and 14 x 14 HardSwish layers. With this and
 * the quantization of the image in pairs (kernels_qrequant.c), int8
 * MobileNetV3-Small (pruned by blocks, batch 1, one core of an AMD EPYC,
 * Zen 5, medians of eight alternated rounds) 287 -> 278 us. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static int qtable8_bytes(const dcz_q *table, int32_t qmax,
                                                                     uint8_t tb[256])
{
    const size_t entries = 2 * (size_t)qmax + 1;
    const __m512i lo = _mm512_set1_epi16(-128), hi = _mm512_set1_epi16(127);
    uint8_t b[256];
    for (size_t k = 0; k < entries; k += 32) {
        const __mmask32 m = entries - k >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << (entries - k)) - 1);
        const __m512i v = _mm512_maskz_loadu_epi16(m, table + k);
        if (_mm512_mask_cmplt_epi16_mask(m, v, lo) | _mm512_mask_cmpgt_epi16_mask(m, v, hi)) return 0;
        _mm256_mask_storeu_epi8(b + k, m, _mm512_cvtepi16_epi8(v));
    }
    memset(tb, 0, 256);
    memcpy(tb, b + qmax, (size_t)qmax + 1);
    memcpy(tb + 256 - qmax, b, (size_t)qmax);
    return 1;
}

__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static int qtable8__vbmi(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y)
{
    uint8_t tb[256];
    if (!qtable8_bytes(table, qmax, tb)) return 0;
    qlook8_run(_mm512_loadu_si512((const void *)tb), _mm512_loadu_si512((const void *)(tb + 64)),
               _mm512_loadu_si512((const void *)(tb + 128)), _mm512_loadu_si512((const void *)(tb + 192)), x, n, y);
    return 1;
}

/* dcz_qtable_planes by qtable8__vbmi's lookups, the table made once */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static int qtable8_planes__vbmi(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t batch, uint32_t channels,
                                uint32_t plane, const uint8_t *skip, dcz_q *y)
{
    uint8_t tb[256];
    if (!qtable8_bytes(table, qmax, tb)) return 0;
    const __m512i t0 = _mm512_loadu_si512((const void *)tb), t1 = _mm512_loadu_si512((const void *)(tb + 64)),
                  t2 = _mm512_loadu_si512((const void *)(tb + 128)), t3 = _mm512_loadu_si512((const void *)(tb + 192));
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c0, c1, c = 0; qtable_run_of(skip, channels, c, &c0, &c1), c0 < channels; c = c1) {
            const size_t at = (b * channels + c0) * (size_t)plane;
            qlook8_run(t0, t1, t2, t3, x + at, (size_t)(c1 - c0) * plane, y + at);
        }
    return 1;
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

int dcz_qtable_bytes(const dcz_q *table, int32_t qmax, uint8_t tb[256])
{
#ifdef DCZ_X86
    return qmax <= 127 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
           dcz_cpu_features()->avx512vl && qtable8_bytes(table, qmax, tb);
#else
    (void)table; (void)qmax; (void)tb;
    return 0;
#endif
}

void dcz_qtable(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y)
{
#ifdef DCZ_X86
    if (qmax <= 127 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw) {
        if (dcz_cpu_features()->avx512vbmi && qtable8__vbmi(table, qmax, x, n, y)) return;
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

void dcz_qtable_planes(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t batch, uint32_t channels,
                       uint32_t plane, const uint8_t *skip, dcz_q *y)
{
#ifdef DCZ_X86
    if (qmax <= 127 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
        dcz_cpu_features()->avx512vbmi && qtable8_planes__vbmi(table, qmax, x, batch, channels, plane, skip, y))
        return;
#endif
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c0, c1, c = 0; qtable_run_of(skip, channels, c, &c0, &c1), c0 < channels; c = c1) {
            const size_t at = (b * channels + c0) * (size_t)plane;
            dcz_qtable(table, qmax, x + at, (size_t)(c1 - c0) * plane, y + at);
        }
}

/* ---- max pooling ---------------------------------------------------------- */

#ifdef DCZ_X86
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

/* Whether qmax_interior_s2__avx512 also takes output 0 (lo 0): a window
 * of 2 or more columns at stride 2 over one column of padding, whose first
 * output is the only one past the left edge. It was a call by scalars a
 * row: int8 ShuffleNetV2's 24 x 112 x 112 pool (3 x 3, stride 2), one core
 * of an AMD EPYC (Zen 5), dcz bench --per-layer least of three alternated
 * rounds, 38.3 -> 30.9 us; the network 0.97-0.99 of the time, int8
 * ResNet-18 0.97-0.98 (medians of alternated runs in both orders). */
static int qmax_lo_s2(int avx512, const dcz_conv_geom *g, uint32_t lo, uint32_t hi)
{
    return avx512 && g->sw == 2 && g->pw == 1 && g->kw >= 2 && lo == 1 && hi > 1;
}

/* qmax_interior__avx512 at column stride 2 without the permutes: a load
 * of 32 words from window column 2j holds in 32-bit lane i output i's
 * columns 2j and 2j + 1, so the window rows' maxima of those loads, then
 * each lane's two words' larger (a shift), give 16 outputs; an odd
 * window's last column by a load of its own, its low words alone, where
 * a load and a word permute a window cell took 1.4 times as long: int8
 * SqueezeNet 1.1's three 3 x 3 pools, one core of an Intel Xeon, medians
 * of three alternated runs, 356 + 240 + 143 -> 250 + 169 + 112 us. */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void qmax_interior_s2__avx512(const dcz_conv_geom *g, const dcz_q *xp, uint32_t y0, uint32_t y1, uint32_t lo,
                                     uint32_t hi, dcz_q *y)
{
    const uint32_t pairs = g->kw / 2, odd = g->kw % 2;
    const __m512i least = _mm512_set1_epi16(INT16_MIN);
    for (uint32_t ox = lo; ox < hi; ox += 16) {
        const uint32_t n = hi - ox < 16 ? hi - ox : 16;
        /* the words the outputs read: 2 n from a pair's column, 2 n - 1 from the last odd one */
        const __mmask32 k2 = n == 16 ? 0xFFFFFFFFu : (__mmask32)((1u << 2 * n) - 1), k1 = k2 >> 1;
        /* output 0 over one column of padding (lo 0 at pw 1: qmax_lo_s2):
         * its first word is not read, and counts as the least */
        const __mmask32 k0 = ox == 0 && g->pw == 1 ? k2 & ~(__mmask32)1 : k2;
        __m512i both = least, last = least;
        for (uint32_t iy = y0; iy < y1; iy++) {
            const dcz_q *r = xp + (size_t)iy * g->in_w + (size_t)ox * 2 - g->pw;
            if (pairs) both = _mm512_max_epi16(both, _mm512_mask_loadu_epi16(least, k0, r));
            for (uint32_t j = 1; j < pairs; j++) both = _mm512_max_epi16(both, _mm512_maskz_loadu_epi16(k2, r + 2 * j));
            if (odd) last = _mm512_max_epi16(last, _mm512_maskz_loadu_epi16(k1, r + g->kw - 1));
        }
        const __m512i m = _mm512_max_epi16(_mm512_max_epi16(both, _mm512_srli_epi32(both, 16)), last);
        _mm256_mask_storeu_epi16(y + ox, (__mmask16)((1u << n) - 1), _mm512_cvtepi32_epi16(m));
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
/* the first n (up to 8) of v's 32-bit lanes, narrowed with saturation, as
 * words to y */
__attribute__((target("avx2"), always_inline))
static inline void store_words8__avx2(__m256i v, uint32_t n, dcz_q *y)
{
    const __m128i o = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packs_epi32(v, v), 0x08));
    if (n == 8) {
        _mm_storeu_si128((__m128i *)(void *)y, o);
    } else {
        dcz_q t[8];
        _mm_storeu_si128((__m128i *)(void *)t, o);
        memcpy(y, t, n * sizeof *t);
    }
}

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
                store_words8__avx2(m, n, y + ox);
            }
        }
    }
}
#endif

#ifdef DCZ_X86
/* qmax_interior__avx512 in AVX2: the interior columns lo .. hi - 1 (at
 * least 8) of a row, whole vectors only: the last starts at hi - 8 (or
 * hi - 16), over outputs a vector before it already wrote, with the same
 * values, so that no load reaches past the cells the outputs' windows
 * read. Column stride 1: 16 outputs a step, a load a window cell. Stride
 * 2: 8 outputs a step as qmax_interior_s2__avx512 takes 16, the 32-bit
 * lane i of a load from window column 2j holding output i's columns 2j and
 * 2j + 1; an odd window's last column from the load one word before it, in
 * the lanes' high words. The reference took int8 ResNet-18's first pool
 * (64 x 112 x 112, 3 x 3 stride 2) 2.8 ms on AVX2 (AMD EPYC, Zen 3). */
__attribute__((target("avx2")))
static void qmax_interior__avx2(const dcz_conv_geom *g, const dcz_q *xp, uint32_t y0, uint32_t y1, uint32_t lo,
                                uint32_t hi, dcz_q *y)
{
    const uint32_t step = g->sw == 1 ? 16 : 8;
    for (uint32_t o = lo; o < hi; o += step) {
        const uint32_t ox = hi - o < step ? hi - step : o;
        __m256i m = _mm256_set1_epi16(INT16_MIN);
        if (g->sw == 1) {
            for (uint32_t iy = y0; iy < y1; iy++) {
                const dcz_q *r = xp + (size_t)iy * g->in_w + ox - g->pw;
                for (uint32_t kx = 0; kx < g->kw; kx++)
                    m = _mm256_max_epi16(m, _mm256_loadu_si256((const __m256i *)(const void *)(r + kx)));
            }
            _mm256_storeu_si256((__m256i *)(void *)(y + ox), m);
            continue;
        }
        __m256i last = m;
        for (uint32_t iy = y0; iy < y1; iy++) {
            const dcz_q *r = xp + (size_t)iy * g->in_w + (size_t)ox * 2 - g->pw;
            for (uint32_t j = 0; j + 1 < g->kw; j += 2)
                m = _mm256_max_epi16(m, _mm256_loadu_si256((const __m256i *)(const void *)(r + j)));
            if (g->kw % 2) last = _mm256_max_epi16(last, _mm256_loadu_si256((const __m256i *)(const void *)(r + g->kw - 2)));
        }
        m = _mm256_max_epi16(_mm256_max_epi16(m, _mm256_srli_epi32(m, 16)), _mm256_srli_epi32(last, 16));
        m = _mm256_srai_epi32(_mm256_slli_epi32(m, 16), 16);
        const __m128i v = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packs_epi32(m, m), 0x08));
        _mm_storeu_si128((__m128i *)(void *)(y + ox), v);
    }
}
#endif

/* ---- 2 x 2 average pooling at stride 2 ------------------------------------ */

#ifdef DCZ_X86
/* s / 4 rounded half away from zero (|s| + 2, shifted; the sign put back) */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static inline __m512i qavg4__avx512(__m512i s)
{
    const __m512i q = _mm512_srli_epi32(_mm512_add_epi32(_mm512_abs_epi32(s), _mm512_set1_epi32(2)), 2);
    return _mm512_mask_sub_epi32(q, _mm512_cmplt_epi32_mask(s, _mm512_setzero_si512()), _mm512_setzero_si512(), q);
}

__attribute__((target("avx512f,avx512bw,avx512vl")))
static void qavg_2x2__avx512(const dcz_conv_geom *g, const dcz_q *x, size_t planes, dcz_q *y)
{
    const __m512i ones = _mm512_set1_epi16(1);
    for (size_t p = 0; p < planes; p++) {
        const dcz_q *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++, y += g->out_w) {
            const dcz_q *r0 = xp + (size_t)2 * oy * g->in_w, *r1 = r0 + g->in_w;
            for (uint32_t ox = 0; ox < g->out_w; ox += 16) {
                const uint32_t n = g->out_w - ox < 16 ? g->out_w - ox : 16;
                const __mmask32 k = n == 16 ? 0xFFFFFFFFu : (__mmask32)((1u << 2 * n) - 1);
                const __m512i s = _mm512_add_epi32(_mm512_madd_epi16(_mm512_maskz_loadu_epi16(k, r0 + 2 * ox), ones),
                                                   _mm512_madd_epi16(_mm512_maskz_loadu_epi16(k, r1 + 2 * ox), ones));
                _mm256_mask_storeu_epi16(y + ox, (__mmask16)((1u << n) - 1), _mm512_cvtepi32_epi16(qavg4__avx512(s)));
            }
        }
    }
}

__attribute__((target("avx2")))
static void qavg_2x2__avx2(const dcz_conv_geom *g, const dcz_q *x, size_t planes, dcz_q *y)
{
    const __m256i ones = _mm256_set1_epi16(1), two = _mm256_set1_epi32(2);
    for (size_t p = 0; p < planes; p++) {
        const dcz_q *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++, y += g->out_w) {
            const dcz_q *r0 = xp + (size_t)2 * oy * g->in_w, *r1 = r0 + g->in_w;
            for (uint32_t ox = 0; ox < g->out_w; ox += 8) {
                const uint32_t n = g->out_w - ox < 8 ? g->out_w - ox : 8;
                const __m256i k = dcz_mask8__avx2(n);   /* a 32-bit lane a pair */
                const __m256i a = _mm256_maskload_epi32((const int *)(const void *)(r0 + 2 * ox), k);
                const __m256i b = _mm256_maskload_epi32((const int *)(const void *)(r1 + 2 * ox), k);
                const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(a, ones), _mm256_madd_epi16(b, ones));
                const __m256i q = _mm256_srli_epi32(_mm256_add_epi32(_mm256_abs_epi32(s), two), 2);
                const __m256i v = _mm256_sign_epi32(q, s);   /* -q where s < 0 (q is 0 where s is) */
                store_words8__avx2(v, n, y + ox);
            }
        }
    }
}
#endif

int dcz_qavgpool_isa(dcz_isa isa, const dcz_conv_geom *g, int count_include_pad, const dcz_q *x, size_t batch,
                     dcz_q *y)
{
    if (isa == DCZ_ISA_REF) {
        dcz_qavgpool_ref(g, count_include_pad, x, batch, y);
        return 1;
    }
#ifdef DCZ_X86
    if (!dcz_pool_tiles2(g)) return 0;
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
        dcz_cpu_features()->avx512vl) {
        qavg_2x2__avx512(g, x, batch * g->in_c, y);
        return 1;
    }
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        qavg_2x2__avx2(g, x, batch * g->in_c, y);
        return 1;
    }
#endif
    return 0;
}

void dcz_qavgpool(const dcz_conv_geom *g, int count_include_pad, const dcz_q *x, size_t batch, dcz_q *y)
{
    if (!dcz_qavgpool_isa(DCZ_ISA_AVX512, g, count_include_pad, x, batch, y) &&
        !dcz_qavgpool_isa(DCZ_ISA_AVX2, g, count_include_pad, x, batch, y))
        dcz_qavgpool_ref(g, count_include_pad, x, batch, y);
}

int dcz_qmaxpool_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y)
{
    if (isa == DCZ_ISA_REF) {
        dcz_qmaxpool_ref(g, x, batch, y);
        return 1;
    }
#ifdef DCZ_X86
    const int avx512 = isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
                       dcz_cpu_features()->avx512vl;
    const int avx2 = isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2);
    if ((!avx512 && !avx2) || g->sw > 2) return 0;
    if (g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0) {
        if (avx512) qmax_2x2__avx512(g, x, batch * g->in_c, y);
        else qmax_2x2__avx2(g, x, batch * g->in_c, y);
        return 1;
    }
    /* AVX2's odd window at stride 2 reads the word before its last column */
    if (avx2 && g->sw == 2 && g->kw < 2) return 0;
    uint32_t lo, hi;
    dcz_pool_interior_cols(g, &lo, &hi);
    /* AVX2's whole vectors need a row of interior outputs a vector long */
    if (avx2 && hi - lo < (g->sw == 1 ? 16u : 8u)) lo = hi = g->out_w;
    /* AVX-512 at stride 2 takes the first output over one column of
     * padding with the interior (qmax_interior_s2__avx512), where it was a
     * call by scalars a row */
    if (qmax_lo_s2(avx512, g, lo, hi)) lo = 0;
    const size_t planes = batch * g->in_c;
    for (size_t p = 0; p < planes; p++) {
        const dcz_q *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++) {
            dcz_q *yr = y + (p * g->out_h + oy) * g->out_w;
            uint32_t y0, y1;
            dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
            qmax_cols(g, xp, y0, y1, 0, lo, yr);
            if (avx2) qmax_interior__avx2(g, xp, y0, y1, lo, hi, yr);
            else if (g->sw == 2) qmax_interior_s2__avx512(g, xp, y0, y1, lo, hi, yr);
            else qmax_interior__avx512(g, xp, y0, y1, lo, hi, yr);
            qmax_cols(g, xp, y0, y1, hi, g->out_w, yr);
        }
    }
    return 1;
#else
    (void)g; (void)x; (void)batch; (void)y;
    return 0;
#endif
}

void dcz_qmaxpool(const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y)
{
    if (!dcz_qmaxpool_isa(DCZ_ISA_AVX512, g, x, batch, y) && !dcz_qmaxpool_isa(DCZ_ISA_AVX2, g, x, batch, y))
        dcz_qmaxpool_ref(g, x, batch, y);
}
