/* act_x86.h: a fused activation (dcz_act, shapes.h) on an AVX-512 or an
 * AVX2 vector, for the kernels that apply the next layer's ReLU, CLIP,
 * SiLU or HardSwish as they store their output (kernels_shift.c,
 * shift_depthwise.c, kernels_lanes.c, kernels_gemm.c, kernels_wino.c), and
 * SIGMOID and SILU (shapes.h: dcz_sigmoid_one, dcz_silu_one) for those
 * and for kernels_elem.c's activation layers. Included after
 * <immintrin.h> on x86 only.
 *
 * ReLU is max(v, 0) and CLIP max(lo, min(hi, v)): the bits of dcz_act_one,
 * dcz_relu and dcz_clip (NaN and zeros of both signs included: max and min
 * return their second operand unless the first compares greater, or less).
 * SIGMOID and SILU take each of dcz_exp_core's operations in a vector in
 * its order, its fused multiply-adds fused (but AVX-512's scaling by 2^n,
 * one vscalefps, which rounds where the reference's second product does):
 * the same roundings, so the reference's bits (the AVX2 forms need FMA,
 * which the AVX2 level takes: dcz_isa_supported). act NULL or op 0: v. */
#ifndef DCZ_ACT_X86_H
#define DCZ_ACT_X86_H

/* dcz_exp_core of c, each lane in [DCZ_EXP_MIN, DCZ_EXP_MAX] */
__attribute__((target("avx2,fma"), always_inline))
static inline __m256 dcz_exp_core__avx2(__m256 c)
{
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(DCZ_EXP_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(DCZ_EXP_LN2_HI), c);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(DCZ_EXP_LN2_LO), r);
    const __m256 r2 = _mm256_mul_ps(r, r);
    const __m256 p01 = _mm256_fmadd_ps(_mm256_set1_ps(DCZ_EXP_P0), r, _mm256_set1_ps(DCZ_EXP_P1));
    const __m256 p23 = _mm256_fmadd_ps(_mm256_set1_ps(DCZ_EXP_P2), r, _mm256_set1_ps(DCZ_EXP_P3));
    const __m256 p45 = _mm256_fmadd_ps(_mm256_set1_ps(DCZ_EXP_P4), r, _mm256_set1_ps(DCZ_EXP_P5));
    const __m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(p01, r2, p23), r2, p45);
    const __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
    const __m256i k = _mm256_cvtps_epi32(n), k1 = _mm256_srai_epi32(k, 1), bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(k, k1), bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(e, s1), s2);
}

/* SIGMOID of v as dcz_sigmoid_one: e = dcz_exp_neg(-|v|), lanes below
 * DCZ_EXP_MIN 0 and NaN lanes their NaN, as its branch does; the others
 * run on -|v| clamped there, so no lane's integer conversion sees a NaN */
__attribute__((target("avx2,fma")))
static inline __m256 dcz_sigmoid__avx2(__m256 v)
{
    const __m256 one = _mm256_set1_ps(1.0f), lo = _mm256_set1_ps(DCZ_EXP_MIN);
    const __m256 t = _mm256_or_ps(v, _mm256_set1_ps(-0.0f));
    const __m256 in = _mm256_cmp_ps(t, lo, _CMP_GE_OQ);
    __m256 e = _mm256_and_ps(dcz_exp_core__avx2(_mm256_blendv_ps(lo, t, in)), in);
    e = _mm256_blendv_ps(e, t, _mm256_cmp_ps(t, t, _CMP_UNORD_Q));
    const __m256 s = _mm256_blendv_ps(e, one, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
    return _mm256_div_ps(s, _mm256_add_ps(one, e));
}

/* SILU of v as dcz_silu_one: maxps and minps return their second operand
 * unless the first compares greater, or less, the reference's clamp */
__attribute__((target("avx2,fma")))
static inline __m256 dcz_silu__avx2(__m256 v)
{
    const __m256 t = _mm256_xor_ps(v, _mm256_set1_ps(-0.0f));
    const __m256 c = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(DCZ_EXP_MIN)), _mm256_set1_ps(DCZ_EXP_MAX));
    return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), dcz_exp_core__avx2(c)));
}

/* The same in 16 lanes (AVX-512F), masks for the selects, and e 2^n by
 * vscalefps, one rounding: the reference's e 2^k1 is exact (a normal
 * float), so its product by 2^(n - k1) rounds e 2^n once too, the same
 * bits, in one instruction where the exponent's halves took nine */
__attribute__((target("avx512f"), always_inline))
static inline __m512 dcz_exp_core__avx512(__m512 c)
{
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(DCZ_EXP_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(DCZ_EXP_LN2_HI), c);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(DCZ_EXP_LN2_LO), r);
    const __m512 r2 = _mm512_mul_ps(r, r);
    const __m512 p01 = _mm512_fmadd_ps(_mm512_set1_ps(DCZ_EXP_P0), r, _mm512_set1_ps(DCZ_EXP_P1));
    const __m512 p23 = _mm512_fmadd_ps(_mm512_set1_ps(DCZ_EXP_P2), r, _mm512_set1_ps(DCZ_EXP_P3));
    const __m512 p45 = _mm512_fmadd_ps(_mm512_set1_ps(DCZ_EXP_P4), r, _mm512_set1_ps(DCZ_EXP_P5));
    const __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(p01, r2, p23), r2, p45);
    const __m512 e = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(e, n);
}

__attribute__((target("avx512f")))
static inline __m512 dcz_sigmoid__avx512(__m512 v)
{
    const __m512 one = _mm512_set1_ps(1.0f), lo = _mm512_set1_ps(DCZ_EXP_MIN);
    const __m512 t = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int32_t)0x80000000u)));
    const __mmask16 in = _mm512_cmp_ps_mask(t, lo, _CMP_GE_OQ);
    __m512 e = _mm512_maskz_mov_ps(in, dcz_exp_core__avx512(_mm512_mask_blend_ps(in, lo, t)));
    e = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q), e, t);
    const __mmask16 ge = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ);
    return _mm512_div_ps(_mm512_mask_blend_ps(ge, e, one), _mm512_add_ps(one, e));
}

__attribute__((target("avx512f")))
static inline __m512 dcz_silu__avx512(__m512 v)
{
    const __m512 t = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int32_t)0x80000000u)));
    const __m512 c = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(DCZ_EXP_MIN)), _mm512_set1_ps(DCZ_EXP_MAX));
    return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), dcz_exp_core__avx512(c)));
}

/* HARD_SWISH of v as dcz_hard_swish_one: max and min take their first
 * operand only where it compares greater, or less */
__attribute__((target("avx512f")))
static inline __m512 dcz_hard_swish__avx512(__m512 v)
{
    const __m512 t = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(6.0f)), _mm512_set1_ps(0.5f));
    return _mm512_mul_ps(v, _mm512_max_ps(_mm512_setzero_ps(), _mm512_min_ps(_mm512_set1_ps(1.0f), t)));
}

__attribute__((target("avx2")))
static inline __m256 dcz_hard_swish__avx2(__m256 v)
{
    const __m256 t = _mm256_add_ps(_mm256_div_ps(v, _mm256_set1_ps(6.0f)), _mm256_set1_ps(0.5f));
    return _mm256_mul_ps(v, _mm256_max_ps(_mm256_setzero_ps(), _mm256_min_ps(_mm256_set1_ps(1.0f), t)));
}

__attribute__((target("avx512f")))
static inline __m512 dcz_act__avx512(__m512 v, const dcz_act *act)
{
    if (!act || act->op == 0) return v;
    if (act->op == DCZ_OP_RELU) return _mm512_max_ps(v, _mm512_setzero_ps());
    if (act->op == DCZ_OP_SILU) return dcz_silu__avx512(v);
    if (act->op == DCZ_OP_HARD_SWISH) return dcz_hard_swish__avx512(v);
    return _mm512_max_ps(_mm512_set1_ps(act->lo), _mm512_min_ps(_mm512_set1_ps(act->hi), v));
}

__attribute__((target("avx2,fma")))
static inline __m256 dcz_act__avx2(__m256 v, const dcz_act *act)
{
    if (!act || act->op == 0) return v;
    if (act->op == DCZ_OP_RELU) return _mm256_max_ps(v, _mm256_setzero_ps());
    if (act->op == DCZ_OP_SILU) return dcz_silu__avx2(v);
    if (act->op == DCZ_OP_HARD_SWISH) return dcz_hard_swish__avx2(v);
    return _mm256_max_ps(_mm256_set1_ps(act->lo), _mm256_min_ps(_mm256_set1_ps(act->hi), v));
}

#endif
