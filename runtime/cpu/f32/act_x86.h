/* act_x86.h: a fused activation (dcz_act, model.h) on an AVX-512 or an AVX2
 * vector, for the kernels that apply the next layer's ReLU or CLIP as they store
 * their output (kernels_shift.c, shift_depthwise.c, kernels_lanes.c).
 * Included after <immintrin.h> on x86 only.
 *
 * ReLU is max(v, 0) and CLIP max(lo, min(hi, v)): the bits of dcz_act_one,
 * dcz_relu and dcz_clip (NaN and zeros of both signs included: max and min
 * return their second operand unless the first compares greater, or less).
 * act NULL or op 0: v. */
#ifndef DCZ_ACT_X86_H
#define DCZ_ACT_X86_H

__attribute__((target("avx512f")))
static inline __m512 dcz_act__avx512(__m512 v, const dcz_act *act)
{
    if (!act || act->op == 0) return v;
    if (act->op == DCZ_OP_RELU) return _mm512_max_ps(v, _mm512_setzero_ps());
    return _mm512_max_ps(_mm512_set1_ps(act->lo), _mm512_min_ps(_mm512_set1_ps(act->hi), v));
}

__attribute__((target("avx")))
static inline __m256 dcz_act__avx2(__m256 v, const dcz_act *act)
{
    if (!act || act->op == 0) return v;
    if (act->op == DCZ_OP_RELU) return _mm256_max_ps(v, _mm256_setzero_ps());
    return _mm256_max_ps(_mm256_set1_ps(act->lo), _mm256_min_ps(_mm256_set1_ps(act->hi), v));
}

#endif
