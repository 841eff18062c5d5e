/* kernels_qrequant.c: the ends and joints of the integer region of an
 * 8-bit scheme (int8, fixed8), vectorized: the float input quantized
 * (dcz_quantize), the accumulators requantized to the next layer's scale
 * (dcz_requant8) on 32-bit sums; the references are dcz_quantize_ref here
 * and kernels_int.c's dcz_requant_ref, on 64-bit sums.
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
 * Checked by tests/unit/test_qkernels.c: every variant this machine runs,
 * bit for bit against dcz_requant_ref on the matrix grid (8-bit ranges with
 * their extremes), and dcz_quantize against dcz_quantize_ref.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/q8/qrequant.h"
#include "runtime/model.h"

#if DCZ_BUILD_Q8_X86
#include <immintrin.h>
#define DCZ_X86 1
#endif

/* ---- requantization and the scalar matrix ------------------------------- */

void dcz_dequantize_ref(const int64_t *acc, size_t batch, uint32_t channels, uint32_t plane, const double *scale,
                        float *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = 0; c < channels; c++)
            for (uint32_t p = 0; p < plane; p++) {
                const size_t i = (b * channels + c) * plane + p;
                y[i] = (float)((double)acc[i] * scale[c]);
            }
}

#ifdef DCZ_X86
/* 8 accumulators a step: narrowed to 32 bits (exact below 2^31), widened
 * to doubles, times the scale, rounded to floats; the plane's last few as
 * the reference (SqueezeNet 1.1's 1000 x 13 x 13 classifier spent 6% of
 * int8's time in the scalar loop) */
__attribute__((target("avx512f")))
static void dequantize__avx512(const int64_t *acc, size_t batch, uint32_t channels, uint32_t plane,
                               const double *scale, float *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = 0; c < channels; c++) {
            const size_t at = (b * channels + c) * plane;
            const __m512d s = _mm512_set1_pd(scale[c]);
            uint32_t p = 0;
            for (; p + 8 <= plane; p += 8) {
                const __m256i a = _mm512_cvtepi64_epi32(_mm512_loadu_si512((const void *)(acc + at + p)));
                _mm256_storeu_ps(y + at + p, _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtepi32_pd(a), s)));
            }
            for (; p < plane; p++) y[at + p] = (float)((double)acc[at + p] * scale[c]);
        }
}
#endif

void dcz_dequantize(const int64_t *acc, size_t batch, uint32_t channels, uint32_t plane, const double *scale,
                    int32_t qmax, float *y)
{
#ifdef DCZ_X86
    if (qmax == 127 && dcz_isa_supported(DCZ_ISA_AVX512)) {
        dequantize__avx512(acc, batch, channels, plane, scale, y);
        return;
    }
#else
    (void)qmax;
#endif
    dcz_dequantize_ref(acc, batch, channels, plane, scale, y);
}

uint8_t dcz_requant_pre(uint8_t shift, double bound)
{
    if (shift < 2 || shift > 32 || !(bound >= 0)) return 0;
    const unsigned p = 33u - shift;   /* 1 .. 31: bound 2^p < 2^31, without a call to ldexp (a Mul asks
                                         at every channel's plane) */
    return bound < (double)((uint32_t)1 << (31 - p)) ? (uint8_t)p : 0;
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
            for (; c < channels; c++) yb[c] = dcz_requant8_one(ab[c], rq->mult[c], rq->shift[c], rq->qmax);
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
            for (; i < plane; i++) y[at + i] = dcz_requant8_one(acc[at + i], rq->mult[c], rq->shift[c], rq->qmax);
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
            for (; c < channels; c++) yb[c] = dcz_requant8_one(ab[c], rq->mult[c], rq->shift[c], rq->qmax);
            continue;
        }
        for (uint32_t c = 0; c < channels; c++) {
            const size_t at = (b * channels + c) * plane;
            const __m512i m = _mm512_set1_epi64(rq->mult[c]), k = _mm512_set1_epi64(rq->shift[c]);
            uint32_t i = 0;
            for (; i + 8 <= plane; i += 8)
                _mm_storeu_si128((__m128i *)(void *)(y + at + i),
                                 requant8x8__avx512(_mm512_loadu_si512((const void *)(acc + at + i)), m, k, lo, hi));
            for (; i < plane; i++) y[at + i] = dcz_requant8_one(acc[at + i], rq->mult[c], rq->shift[c], rq->qmax);
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
                y[at + i] = dcz_requant8_one(acc[at + i], rq->mult[c], rq->shift[c], rq->qmax);
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

/* ---- sums held by floats ------------------------------------------------- */

#ifdef DCZ_X86
/* 8 outputs a step: the floats' integers plus the bias as 32-bit lanes,
 * requant4__avx2 on each half, clamped to lo .. hi, narrowed */
__attribute__((target("avx2")))
static void requant8_f32__avx2(const float *yf, size_t n, int32_t bias, int32_t mult, uint8_t shift, int32_t qmax,
                               int32_t lo, int32_t hi, dcz_q *y)
{
    const __m256i m = _mm256_set1_epi64x(mult), k = _mm256_set1_epi64x(shift), q = _mm256_set1_epi64x(qmax);
    const __m256i b = _mm256_set1_epi32(bias);
    const __m128i vlo = _mm_set1_epi32(lo), vhi = _mm_set1_epi32(hi);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i a = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_loadu_ps(yf + i)), b);
        __m128i r0 = requant4__avx2(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(a)), m, k, q);
        __m128i r1 = requant4__avx2(_mm256_cvtepi32_epi64(_mm256_extracti128_si256(a, 1)), m, k, q);
        r0 = _mm_min_epi32(_mm_max_epi32(r0, vlo), vhi);
        r1 = _mm_min_epi32(_mm_max_epi32(r1, vlo), vhi);
        _mm_storeu_si128((__m128i *)(void *)(y + i), _mm_packs_epi32(r0, r1));
    }
    for (; i < n; i++) {
        const dcz_q v = dcz_requant8_one((int64_t)yf[i] + bias, mult, shift, qmax);
        y[i] = (dcz_q)(v < lo ? lo : v > hi ? hi : v);
    }
}
#endif

void dcz_requant8_f32(const float *yf, size_t n, int32_t bias, int32_t mult, uint8_t shift, int32_t qmax, int32_t lo,
                      int32_t hi, int ref, dcz_q *y)
{
#ifdef DCZ_X86
    if (!ref && dcz_isa_supported(DCZ_ISA_AVX2)) {
        requant8_f32__avx2(yf, n, bias, mult, shift, qmax, lo, hi, y);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) {
        const dcz_q v = dcz_requant8_one((int64_t)yf[i] + bias, mult, shift, qmax);
        y[i] = (dcz_q)(v < lo ? lo : v > hi ? hi : v);
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
 * lies below |x| / s by less than 2^-19 of it, so k = floor(that + 1/2) is
 * n or n - 1; so it is with the product and the add fused into one
 * rounding of |x| r + 1/2: that sum lies below n + 1 by more than |x| / s
 * 2^-21 (r is below 1 / s by more than 2^-21 of it, and |x| / s < n +
 * 1/2), at least (n + 1) 2^-23 where n >= 1 (|x| / s >= n - 1/2) and
 * 2^-22 where n is 0, more than half the spacing of floats near n + 1
 * (2^-24 (n + 1) at most), so the rounding never reaches n + 1, and k is n
 * or n - 1 still (past 2^22, far past any qmax, the clamp decides). A
 * fused s (k + 1/2) - |x| <= 0 then says exactly that |x| / s
 * has reached the next tie (the product is exact inside the fused
 * multiply-add, and one rounding keeps the sign of a difference that for
 * scales in [2^-100, 2^100] cannot fall below the smallest float), and k
 * moves up by one. NaN: the max with 1/2 takes its second operand where
 * the first is NaN, k 0; the sign then x's. One instruction fewer than the
 * product and the add apart: 3 x 224 x 224 floats, one core of an AMD
 * EPYC (Zen 5), least of 3,000 calls, 11.7 -> 10.8 us. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __attribute__((always_inline)) __m512i
quantize16(__m512 v, __m512 s, __m512 r, __m512 q)
{
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
    const __m512 a = _mm512_abs_ps(v);
    __m512 k = _mm512_roundscale_ps(_mm512_max_ps(_mm512_fmadd_ps(a, r, half), half),
                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(_mm512_fmsub_ps(s, _mm512_add_ps(k, half), a), _mm512_setzero_ps(),
                                            _CMP_LE_OQ);
    k = _mm512_min_ps(_mm512_mask_add_ps(k, up, k, one), q);
    /* k | (v & sign): x's sign on k */
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    k = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(k), _mm512_castps_si512(v), sign, 0xF8));
    return _mm512_cvtps_epi32(k);
}

/* 32 values a step narrowed together by a pack (two instructions where
 * two narrowings take four; vpmovsdw into memory is slow on some cores),
 * 16 at the end. Without the cap and the NaN mask of a first version,
 * and by pairs: 3 x 224 x 224 floats, one core of an AMD EPYC (Zen 5),
 * least of 2,000 calls, 15.0 -> 11.3 us. */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void quantize__avx512(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y)
{
    const __m512 s = _mm512_set1_ps(scale), r = _mm512_set1_ps(1.0f / scale * (1.0f - 0x1p-20f));
    const __m512 q = _mm512_set1_ps((float)qmax);
    const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512i a = quantize16(_mm512_loadu_ps(x + i), s, r, q);
        const __m512i b = quantize16(_mm512_loadu_ps(x + i + 16), s, r, q);
        _mm512_storeu_si512((void *)(y + i), _mm512_permutexvar_epi64(order, _mm512_packs_epi32(a, b)));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtsepi32_epi16(quantize16(_mm512_maskz_loadu_ps(m, x + i), s, r, q)));
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
