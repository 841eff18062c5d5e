/* shapes.h: what a kernel is given besides its data: the geometry of a
 * convolution or a pooling, and the activation a layer applies as it
 * writes its output. Shared by libdcz's kernels and the trainer, which
 * runs the runtime's dense products and Winograd's transforms
 * (runtime/tool.h names the headers the toolchain may include).
 */
#ifndef DCZ_RUNTIME_SHAPES_H
#define DCZ_RUNTIME_SHAPES_H

#include <math.h>
#include <stdint.h>

#include "dcz.h"
#include "runtime/format/ops.h"

/* The geometry of a convolution or a pooling over one sample: input
 * (in_c, in_h, in_w), output (out_c, out_h, out_w), window kh x kw, stride
 * sh, sw, zero padding ph, pw on each side (ph < kh, pw < kw, so every
 * window holds at least one input cell). Pools have out_c = in_c. */
typedef struct dcz_conv_geom {
    uint32_t in_c, in_h, in_w;
    uint32_t out_c, out_h, out_w;
    uint32_t kh, kw, sh, sw, ph, pw;
    uint32_t group;         /* CONV2D: groups (0 counts as 1); output channel oc sees the
                               in_c / group input channels of group oc / (out_c / group) */
} dcz_conv_geom;

/* Whether g's patches are its input as it lies: a 1 x 1 window at stride 1
 * without padding. */
static inline int dcz_conv_pointwise(const dcz_conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* Groups of a convolution, and the input channels each output channel sees. */
static inline uint32_t dcz_conv_groups(const dcz_conv_geom *g) { return g->group ? g->group : 1; }
static inline uint32_t dcz_conv_group_in(const dcz_conv_geom *g) { return g->in_c / dcz_conv_groups(g); }
/* First input channel output channel oc sees. */
static inline uint32_t dcz_conv_in0(const dcz_conv_geom *g, uint32_t oc)
{
    const uint32_t groups = dcz_conv_groups(g);
    return groups == 1 ? 0 : oc / (g->out_c / groups) * (g->in_c / groups);
}

/* Fills g for a CONV2D, MAXPOOL or AVGPOOL with checked attributes on input
 * shape in (dcz_op_shape's errors; DCZ_ERR_UNSUPPORTED for other ops). */
dcz_status dcz_conv_geom_init(dcz_conv_geom *g, uint16_t op, const int32_t *attr, uint32_t nattr,
                              const dcz_shape *in);

/* The activation a layer's output takes on its way out, the next layer's
 * run in its place (run.c): DCZ_OP_RELU, DCZ_OP_CLIP between lo and hi,
 * DCZ_OP_SILU or DCZ_OP_HARD_SWISH; op 0 for none. */
typedef struct dcz_act { uint16_t op; float lo, hi; } dcz_act;

/* *act, or none where act is NULL, by value: what a kernel's stores read
 * copied into a local before them, since a store through the vector types
 * may alias anything, and each read *act again (a load and a test of the
 * code before every vector, the bounds for a Clip) */
static inline dcz_act dcz_act_of(const dcz_act *act)
{
    dcz_act a = { 0, 0.0f, 0.0f };
    if (act) a = *act;
    return a;
}

/* The references' formulas on one value that the CUDA kernels share
 * (runtime/cuda/gpu_kern.h): host and device functions under nvcc. */
#ifdef __CUDACC__
#define DCZ_ONE_VALUE __host__ __device__ static inline
#else
#define DCZ_ONE_VALUE static inline
#endif

/* The mean of plane floats from x (GLOBAL_AVGPOOL's, one channel of one
 * sample) as libdcz computes it on every machine and the GPU: sixteen
 * running sums, cell i added to sum i mod 16 in order, one rounding each;
 * then sum j + sum j + 8, those j + j + 4, j + j + 2 and the last two (the
 * halves of a vector's lanes folded in turn); then divided by plane. A
 * vector of 16 (or two of 8) holds the sums, so the kernels read each
 * plane once, in order, with no transposes (a sum in cell order had the
 * planes of eight channels transposed into vector lanes); a sum never
 * becomes -0 (it starts at +0), so lanes past the plane may add +0. */
DCZ_ONE_VALUE float dcz_mean_one(const float *x, uint32_t plane)
{
    float s[16] = { 0.0f };
    for (uint32_t i = 0; i < plane; i++) s[i % 16] += x[i];
    for (uint32_t half = 8; half >= 1; half /= 2)
        for (uint32_t j = 0; j < half; j++) s[j] += s[j + half];
    return s[0] / (float)plane;
}

/* e^t as libdcz computes it for SIGMOID (on -|x|: dcz_exp_neg) and SILU
 * (on -x clamped: dcz_exp_core), the same operations on every machine,
 * in every variant (cpu/f32/act_x86.h and act_neon.h in vectors) and on
 * the GPU, one rounding each, a fused multiply-add (fmaf) where written:
 * t = n ln 2 + r with n = rint(t log2 e) and ln 2 in two parts (Cody and
 * Waite), e^r = 1 + r + r^2 p(r), p Cephes' degree-5 polynomial taken in
 * Estrin's order (three pairs, then two steps in r^2), times 2^n by the
 * exponent's bits in two halves (each a normal float down to the
 * subnormal results). The fused steps and Estrin's order make the chain of
 * dependent operations about half as long as one rounding a product and
 * Horner's order took, which bounded the vector kernels (SiLU in 16
 * lanes, one core of an Intel Xeon @ 2.50GHz: 1.75 -> 1.25 ns an
 * element). Within 1.03 ulp of e^t where it is a normal float (every float
 * of [-87, 0] measured; 0.99 before), SIGMOID within 2.4 (as before),
 * subnormal below that, 0 below -104 (where e^t is under half the least
 * subnormal), NaN for NaN. n times ln 2's parts negated is -n times them,
 * the same bits, an instruction less on a Cortex-M4 (whose libdcz, make
 * size, stays within 32 KiB by it). */
#define DCZ_EXP_LOG2E 1.44269504088896341f
#define DCZ_EXP_LN2_HI 0.693359375f
#define DCZ_EXP_LN2_LO -2.12194440e-4f
#define DCZ_EXP_MIN -104.0f
#define DCZ_EXP_P0 1.9875691500e-4f
#define DCZ_EXP_P1 1.3981999507e-3f
#define DCZ_EXP_P2 8.3334519073e-3f
#define DCZ_EXP_P3 4.1665795894e-2f
#define DCZ_EXP_P4 1.6666665459e-1f
#define DCZ_EXP_P5 5.0000001201e-1f
#define DCZ_EXP_MAX 89.0f
/* e^c for c in [DCZ_EXP_MIN, DCZ_EXP_MAX] (its callers clamp): +inf
 * past 88.73 */
DCZ_ONE_VALUE float dcz_exp_core(float c)
{
    const float n = rintf(c * DCZ_EXP_LOG2E);
    float r = fmaf(n, -DCZ_EXP_LN2_HI, c);
    r = fmaf(n, -DCZ_EXP_LN2_LO, r);
    const float r2 = r * r;
    const float p01 = fmaf(DCZ_EXP_P0, r, DCZ_EXP_P1), p23 = fmaf(DCZ_EXP_P2, r, DCZ_EXP_P3);
    const float p45 = fmaf(DCZ_EXP_P4, r, DCZ_EXP_P5);
    const float p = fmaf(fmaf(p01, r2, p23), r2, p45);
    const float e = fmaf(p, r2, r) + 1.0f;
    const int32_t k = (int32_t)n, k1 = (k - (k & 1)) / 2;   /* k1 = floor(k / 2), k - k1 */
    union { uint32_t u; float f; } s1, s2;
    s1.u = (uint32_t)(k1 + 127) << 23;
    s2.u = (uint32_t)(k - k1 + 127) << 23;
    return e * s1.f * s2.f;
}

DCZ_ONE_VALUE float dcz_exp_neg(float t)
{
    if (!(t >= DCZ_EXP_MIN)) return t != t ? t : 0.0f;
    return dcz_exp_core(t);
}

/* SIGMOID of v through e = dcz_exp_neg(-|v|): (v >= 0 ? 1 : e) / (1 + e). */
DCZ_ONE_VALUE float dcz_sigmoid_one(float v)
{
    const float e = dcz_exp_neg(-fabsf(v));
    return (v >= 0.0f ? 1.0f : e) / (1.0f + e);
}

/* SILU of v: v / (1 + e^-v), e^-v by dcz_exp_core on -v clamped as a
 * vector's max and min clamp, m = t > DCZ_EXP_MIN ? t : DCZ_EXP_MIN, then
 * m < DCZ_EXP_MAX ? m : DCZ_EXP_MAX (NaN takes DCZ_EXP_MIN, and the
 * quotient v's NaN). No sign to test, no select: 15 operations in a
 * vector where v e^-|v| over v's sign took 19 (16 lanes, AMD EPYC Zen 5:
 * 2.5 -> 1.8 ns a vector). Below -88.72 (-v past the largest float's
 * log) it is -0, where SiLU is under 3e-37 in magnitude; within 2.4 ulp
 * of SiLU elsewhere (every seventh float measured; tests/unit/test_simd.c
 * checks 4e-7). */
DCZ_ONE_VALUE float dcz_silu_one(float v)
{
    const float t = -v, m = t > DCZ_EXP_MIN ? t : DCZ_EXP_MIN, c = m < DCZ_EXP_MAX ? m : DCZ_EXP_MAX;
    return v / (1.0f + dcz_exp_core(c));
}

/* HARD_SWISH of v: v times u, t = v / 6 + 1/2 clamped to [0, 1] as CLIP
 * clamps (u = 0 > m ? 0 : m, m = 1 < t ? 1 : t), one rounding each. */
DCZ_ONE_VALUE float dcz_hard_swish_one(float v)
{
    const float t = v / 6.0f + 0.5f, m = 1.0f < t ? 1.0f : t;
    return v * (0.0f > m ? 0.0f : m);
}

/* act (NULL or op 0: none) on one value, the references' formulas (NaN and
 * zeros of both signs included): ReLU v > 0 ? v : 0; CLIP lo > t ? lo : t,
 * t = hi < v ? hi : v; SILU dcz_silu_one and HARD_SWISH
 * dcz_hard_swish_one, but in a build for size (DCZ_SMALL, make mcu), whose
 * loader fuses neither (load.c): the SiLU's branch alone cost its firmware
 * 110 bytes. */
static inline float dcz_act_one(const dcz_act *act, float v)
{
    if (!act || act->op == 0) return v;
    if (act->op == DCZ_OP_RELU) return v > 0.0f ? v : 0.0f;
#ifndef DCZ_SMALL
    if (act->op == DCZ_OP_SILU) return dcz_silu_one(v);
    if (act->op == DCZ_OP_HARD_SWISH) return dcz_hard_swish_one(v);
#endif
    const float t = act->hi < v ? act->hi : v;
    return act->lo > t ? act->lo : t;
}

#endif /* DCZ_RUNTIME_SHAPES_H */
