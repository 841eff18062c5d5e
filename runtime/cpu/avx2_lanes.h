/* avx2_lanes.h: lane helpers of the AVX2 kernels (kernels_shift.c,
 * shift_split_x86.c, shift_depthwise.c, kernels_conv.c, kernels_gemm.c,
 * kernels_qelem.c, kernels_qconv.c). Included after <immintrin.h> on x86
 * only.
 *
 * dcz_mask8__avx2(n): the mask of lanes 0 .. n - 1 (all 8 for n >= 8), for
 * masked loads and stores; dcz_bits8__avx2(bits): that of the lanes whose
 * bits are set. dcz_evens__avx2(a, b), dcz_odds__avx2(a, b):
 * the even (odd) floats of the 16 in a then b, in order: a shuffle takes
 * a0 a2 b0 b2 a4 a6 b4 b6, a permute of its 64-bit pairs puts them in
 * order (a column stride of 2 dealt into its two phases). */
#ifndef DCZ_AVX2_LANES_H
#define DCZ_AVX2_LANES_H

#include <stdint.h>

__attribute__((target("avx2"))) static inline __m256i dcz_mask8__avx2(uint32_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n > 8 ? 8 : (int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* the lanes whose bits of `bits` are set (bit i: lane i) */
__attribute__((target("avx2"))) static inline __m256i dcz_bits8__avx2(uint32_t bits)
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), bit), bit);
}

__attribute__((target("avx2"))) static inline __m256 dcz_evens__avx2(__m256 a, __m256 b)
{
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
}

__attribute__((target("avx2"))) static inline __m256 dcz_odds__avx2(__m256 a, __m256 b)
{
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
}

#endif
