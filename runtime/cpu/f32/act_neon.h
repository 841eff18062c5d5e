/* act_neon.h: a fused activation (dcz_act, model.h) on a NEON vector, for
 * the kernels that apply the next layer's ReLU or CLIP as they store their
 * output (kernels_gemm.c, kernels_elem.c's add). Included after
 * <arm_neon.h> on aarch64 only.
 *
 * ReLU is v > 0 ? v : 0 and CLIP max(lo, min(hi, v)) by compares and
 * selects, the bits of dcz_act_one (NaN and zeros of both signs included):
 * NEON's fmax and fmin return NaN for a NaN operand, where ReLU gives 0.
 * act NULL or op 0: v. */
#ifndef DCZ_ACT_NEON_H
#define DCZ_ACT_NEON_H

static inline float32x4_t dcz_act__neon(float32x4_t v, const dcz_act *act)
{
    if (!act || act->op == 0) return v;
    const float32x4_t zero = vdupq_n_f32(0.0f);
    if (act->op == DCZ_OP_RELU) return vbslq_f32(vcgtq_f32(v, zero), v, zero);
    const float32x4_t lo = vdupq_n_f32(act->lo), hi = vdupq_n_f32(act->hi), t = vbslq_f32(vcltq_f32(hi, v), hi, v);
    return vbslq_f32(vcgtq_f32(lo, t), lo, t);
}

#endif
