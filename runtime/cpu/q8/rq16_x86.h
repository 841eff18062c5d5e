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

#endif /* DCZ_RQ16_X86_H */
