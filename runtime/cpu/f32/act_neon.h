/* act_neon.h: a fused activation (dcz_act, shapes.h) on a NEON vector, for
 * the kernels that apply the next layer's ReLU, CLIP, SiLU or HardSwish as
 * they store their output (kernels_gemm.c, kernels_elem.c's add), and
 * SIGMOID and SILU (shapes.h: dcz_sigmoid_one, dcz_silu_one) for those
 * and for kernels_elem.c's activation layers. Included after <arm_neon.h>
 * on aarch64 only.
 *
 * ReLU is v > 0 ? v : 0 and CLIP max(lo, min(hi, v)) by compares and
 * selects, the bits of dcz_act_one (NaN and zeros of both signs included):
 * NEON's fmax and fmin return NaN for a NaN operand, where ReLU gives 0.
 * SIGMOID and SILU as act_x86.h takes them, the reference's bits. act NULL
 * or op 0: v. */
#ifndef DCZ_ACT_NEON_H
#define DCZ_ACT_NEON_H

/* dcz_exp_core of c, each lane in [DCZ_EXP_MIN, DCZ_EXP_MAX] */
static inline float32x4_t dcz_exp_core__neon(float32x4_t c)
{
    const float32x4_t n = vrndnq_f32(vmulq_f32(c, vdupq_n_f32(DCZ_EXP_LOG2E)));
    float32x4_t r = vfmsq_f32(c, n, vdupq_n_f32(DCZ_EXP_LN2_HI));
    r = vfmsq_f32(r, n, vdupq_n_f32(DCZ_EXP_LN2_LO));
    const float32x4_t r2 = vmulq_f32(r, r);
    const float32x4_t p01 = vfmaq_f32(vdupq_n_f32(DCZ_EXP_P1), vdupq_n_f32(DCZ_EXP_P0), r);
    const float32x4_t p23 = vfmaq_f32(vdupq_n_f32(DCZ_EXP_P3), vdupq_n_f32(DCZ_EXP_P2), r);
    const float32x4_t p45 = vfmaq_f32(vdupq_n_f32(DCZ_EXP_P5), vdupq_n_f32(DCZ_EXP_P4), r);
    const float32x4_t p = vfmaq_f32(p45, vfmaq_f32(p23, p01, r2), r2);
    const float32x4_t e = vaddq_f32(vfmaq_f32(r, p, r2), vdupq_n_f32(1.0f));
    const int32x4_t k = vcvtq_s32_f32(n), k1 = vshrq_n_s32(k, 1), bias = vdupq_n_s32(127);
    const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k1, bias), 23));
    const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vsubq_s32(k, k1), bias), 23));
    return vmulq_f32(vmulq_f32(e, s1), s2);
}

/* SIGMOID of v as dcz_sigmoid_one: e = dcz_exp_neg(-|v|), lanes below
 * DCZ_EXP_MIN 0 and NaN lanes their NaN */
static inline float32x4_t dcz_sigmoid__neon(float32x4_t v)
{
    const float32x4_t one = vdupq_n_f32(1.0f), lo = vdupq_n_f32(DCZ_EXP_MIN), t = vnegq_f32(vabsq_f32(v));
    const uint32x4_t in = vcgeq_f32(t, lo), nan = vmvnq_u32(vceqq_f32(t, t));
    const float32x4_t x = dcz_exp_core__neon(vbslq_f32(in, t, lo));
    const float32x4_t e = vbslq_f32(nan, t, vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(x), in)));
    const float32x4_t s = vbslq_f32(vcgeq_f32(v, vdupq_n_f32(0.0f)), one, e);
    return vdivq_f32(s, vaddq_f32(one, e));
}

/* SILU of v as dcz_silu_one, its clamp by compares and selects (NEON's
 * fmax and fmin return NaN for a NaN operand) */
static inline float32x4_t dcz_silu__neon(float32x4_t v)
{
    const float32x4_t lo = vdupq_n_f32(DCZ_EXP_MIN), hi = vdupq_n_f32(DCZ_EXP_MAX), t = vnegq_f32(v);
    const float32x4_t m = vbslq_f32(vcgtq_f32(t, lo), t, lo), c = vbslq_f32(vcltq_f32(m, hi), m, hi);
    return vdivq_f32(v, vaddq_f32(vdupq_n_f32(1.0f), dcz_exp_core__neon(c)));
}

/* HARD_SWISH of v as dcz_hard_swish_one, its clamp by compares and selects */
static inline float32x4_t dcz_hard_swish__neon(float32x4_t v)
{
    const float32x4_t one = vdupq_n_f32(1.0f), zero = vdupq_n_f32(0.0f);
    const float32x4_t t = vaddq_f32(vdivq_f32(v, vdupq_n_f32(6.0f)), vdupq_n_f32(0.5f));
    const float32x4_t m = vbslq_f32(vcltq_f32(one, t), one, t);
    return vmulq_f32(v, vbslq_f32(vcgtq_f32(zero, m), zero, m));
}

static inline float32x4_t dcz_act__neon(float32x4_t v, const dcz_act *act)
{
    if (!act || act->op == 0) return v;
    const float32x4_t zero = vdupq_n_f32(0.0f);
    if (act->op == DCZ_OP_RELU) return vbslq_f32(vcgtq_f32(v, zero), v, zero);
    if (act->op == DCZ_OP_SILU) return dcz_silu__neon(v);
    if (act->op == DCZ_OP_HARD_SWISH) return dcz_hard_swish__neon(v);
    const float32x4_t lo = vdupq_n_f32(act->lo), hi = vdupq_n_f32(act->hi), t = vbslq_f32(vcltq_f32(hi, v), hi, v);
    return vbslq_f32(vcgtq_f32(lo, t), lo, t);
}

#endif
