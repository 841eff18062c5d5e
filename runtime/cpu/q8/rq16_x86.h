/* rq16_x86.h: the requantization of 16 32-bit lanes at once on AVX-512
 * for a shift k of 33 or more (dcz_requant's rounding shift, model.h; a
 * shift of 32 or less reaches 33 by its pre-shift, dcz_requant_pre, the
 * value shifted left first). Shared by the convolutions that requantize as
 * they store (qshift_requant.c) and the element-wise layers
 * (kernels_qelem.c). Included after <immintrin.h> on x86 only.
 *
 * floor((P + 2^(k-1)) / 2^k) = floor((floor(P / 2^32) + 2^(k-33)) /
 * 2^(k-32)) for k > 32: the even and the odd lanes' signed products P =
 * v m in 64 bits (|v m| < 2^62), their high halves gathered by one
 * permute, the half added to them alone, an arithmetic shift; the result
 * within 32 bits, before any clamp. m: the multiplier in each 64-bit lane;
 * half: 2^(k - 33) in each 32-bit lane; count: k - 32. */
#ifndef DCZ_RQ16_X86_H
#define DCZ_RQ16_X86_H

#include "runtime/cpu/q8/qrequant.h"

/* the high halves floor(P / 2^32) alone, in the lanes' order */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) __m512i
dcz_rq16_high(__m512i v, __m512i m)
{
    const __m512i odd = _mm512_set_epi32(31, 15, 29, 13, 27, 11, 25, 9, 23, 7, 21, 5, 19, 3, 17, 1);
    const __m512i ev = _mm512_mul_epi32(v, m), od = _mm512_mul_epi32(_mm512_srli_epi64(v, 32), m);
    return _mm512_permutex2var_epi32(ev, odd, od);
}

__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) __m512i
dcz_rq16_hi(__m512i v, __m512i m, __m512i half, __m128i count)
{
    return _mm512_sra_epi32(_mm512_add_epi32(dcz_rq16_high(v, m), half), count);
}

/* The constants of dcz_rq16_hi for a value of at most bound times mult,
 * rounded and shifted by k: its pre-shift in *pre; 0 where the shift, with
 * any pre-shift, stays 32 or less (dcz_requant_pre, qrequant.h) */
__attribute__((target("avx512f"))) static inline int dcz_rq16_consts(int32_t mult, uint8_t k, double bound, __m512i *m,
                                                                     __m512i *half, __m128i *count, __m128i *pre)
{
    const unsigned p = dcz_requant_pre(k, bound), kk = k + p;
    if (kk <= 32 || kk > 62) return 0;
    *m = _mm512_set1_epi64(mult);
    *half = _mm512_set1_epi32(1 << (kk - 33));
    *count = _mm_cvtsi32_si128((int)(kk - 32));
    *pre = _mm_cvtsi32_si128((int)p);
    return 1;
}

/* 32 lookups of 16-bit entries in a table of 256 held in eight registers
 * (q[k]: entries 32 k .. 32 k + 31), at (32 16-bit lanes, each 0 .. 255):
 * a two-register word permute (vpermt2w) looks up the index's low six bits
 * in each quarter of the table, and its bits 6 and 7 choose the quarter.
 * The 8-bit schemes' tables hold 2 qmax + 1 = 255 entries, v at v + qmax. */
__attribute__((target("avx512f,avx512bw"))) static inline __attribute__((always_inline)) __m512i
dcz_qlook16(const __m512i q[8], __m512i at)
{
    const __m512i bit6 = _mm512_set1_epi16(64), bit7 = _mm512_set1_epi16(128);
    const __m512i r0 = _mm512_permutex2var_epi16(q[0], at, q[1]);
    const __m512i r1 = _mm512_permutex2var_epi16(q[2], at, q[3]);
    const __m512i r2 = _mm512_permutex2var_epi16(q[4], at, q[5]);
    const __m512i r3 = _mm512_permutex2var_epi16(q[6], at, q[7]);
    const __mmask32 b6 = _mm512_test_epi16_mask(at, bit6), b7 = _mm512_test_epi16_mask(at, bit7);
    const __m512i lo = _mm512_mask_blend_epi16(b6, r0, r1), hi = _mm512_mask_blend_epi16(b6, r2, r3);
    return _mm512_mask_blend_epi16(b7, lo, hi);
}

#endif /* DCZ_RQ16_X86_H */
