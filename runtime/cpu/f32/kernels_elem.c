/* kernels_elem.c: the float layers that run element by element, in
 * vectors: ReLU, Clip, HardSigmoid and HardSwish, Sigmoid and SiLU, Mul,
 * and Add (with the activation after it), and
 * dcz_act_apply, which the kernels that fuse an activation run over their
 * output. Each variant gives its reference's bits (cpu/ref/kernels_ref.c,
 * dcz_act_one: the same comparisons, one rounding per sum). Apart from the
 * matrix kernels, with which they share nothing but the instruction sets.
 * The x86 variants (AVX2) have per-function target attributes; aarch64:
 * NEON.
 *
 * Checked by tests/unit/test_simd.c: every variant the machine runs against
 * its reference over an edge-case grid, bit for bit.
 */
#include <string.h>

#include "runtime/cpu/f32/elem.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>

#include "runtime/cpu/f32/act_x86.h"
#define DCZ_X86 1
#elif DCZ_BUILD_F32_NEON
#include <arm_neon.h>

#include "runtime/cpu/f32/act_neon.h"
#define DCZ_NEON 1
#endif

/* ---- ReLU --------------------------------------------------------------------- */

/* y = x where x > 0, else 0 (NaN and -0 too): a compare and an and per
 * vector, the reference's bits. */
#ifdef DCZ_X86
__attribute__((target("avx2")))
static void relu__avx2(const float *x, size_t n, float *y)
{
    const __m256 zero = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(y + i, _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), v));
    }
    for (; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
#endif

#ifdef DCZ_NEON
static void relu__neon(const float *x, size_t n, float *y)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        vst1q_f32(y + i, vreinterpretq_f32_u32(vandq_u32(vcgtq_f32(v, zero), vreinterpretq_u32_f32(v))));
    }
    for (; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
#endif

int dcz_relu_isa(dcz_isa isa, const float *x, size_t n, float *y)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        relu__avx2(x, n, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) {
        relu__neon(x, n, y);
        return 1;
    }
#endif
    (void)isa;
    (void)x;
    (void)n;
    (void)y;
    return 0;
}

void dcz_relu(const float *x, size_t n, float *y)
{
    if (dcz_relu_isa(dcz_isa_best(), x, n, y)) return;
    if (y != x) memcpy(y, x, n * sizeof *y);
    dcz_relu_ref(y, n);
}

/* ---- Clip (ReLU6) ------------------------------------------------------------------ */

/* y = lo > t ? lo : t, t = hi < x ? hi : x: the reference's formula, NaN
 * and zeros of both signs included: max_ps(a, b) and min_ps(a, b) return
 * b unless a compares greater (less), as the conditional expressions do;
 * NEON's min and max propagate NaN, so there a compare and a select. */
#ifdef DCZ_X86
__attribute__((target("avx2")))
static void clip__avx2(float lo, float hi, const float *x, size_t n, float *y)
{
    const __m256 l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_max_ps(l, _mm256_min_ps(h, _mm256_loadu_ps(x + i))));
    for (; i < n; i++) {
        const float t = hi < x[i] ? hi : x[i];
        y[i] = lo > t ? lo : t;
    }
}
#endif

#ifdef DCZ_NEON
static void clip__neon(float lo, float hi, const float *x, size_t n, float *y)
{
    const float32x4_t l = vdupq_n_f32(lo), h = vdupq_n_f32(hi);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i), t = vbslq_f32(vcltq_f32(h, v), h, v);
        vst1q_f32(y + i, vbslq_f32(vcgtq_f32(l, t), l, t));
    }
    for (; i < n; i++) {
        const float t = hi < x[i] ? hi : x[i];
        y[i] = lo > t ? lo : t;
    }
}
#endif

int dcz_clip_isa(dcz_isa isa, float lo, float hi, const float *x, size_t n, float *y)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        clip__avx2(lo, hi, x, n, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) {
        clip__neon(lo, hi, x, n, y);
        return 1;
    }
#endif
    (void)isa;
    (void)lo;
    (void)hi;
    (void)x;
    (void)n;
    (void)y;
    return 0;
}

void dcz_clip(float lo, float hi, const float *x, size_t n, float *y)
{
    if (dcz_clip_isa(DCZ_ISA_AVX2, lo, hi, x, n, y) || dcz_clip_isa(DCZ_ISA_NEON, lo, hi, x, n, y)) return;
    const float param[2] = { lo, hi };
    dcz_activation_ref(DCZ_OP_CLIP, param, x, n, y);
}

void dcz_act_apply(const dcz_act *act, float *y, size_t n)
{
    if (act && act->op == DCZ_OP_RELU) dcz_relu(y, n, y);
    else if (act && act->op == DCZ_OP_CLIP) dcz_clip(act->lo, act->hi, y, n, y);
    else if (act && act->op == DCZ_OP_SILU) dcz_exp_act(DCZ_OP_SILU, y, n, y);
    else if (act && act->op == DCZ_OP_HARD_SWISH) {
        static const float none[2] = { 0.0f, 0.0f };   /* HARD_SWISH has no attribute */
        dcz_hard_act(DCZ_OP_HARD_SWISH, none, y, n, y);
    }
}

/* ---- HardSigmoid, HardSwish ---------------------------------------------------------- */

/* HARD_SIGMOID (a x + b clamped to [0, 1]) and HARD_SWISH (x times x / 6 +
 * 1/2 clamped to [0, 1]): the reference's operations in its order, one
 * rounding each (a product, then a sum; a quotient, then a sum), the clamp
 * as CLIP's (min_ps(1, t) is 1 < t ? 1 : t, max_ps(0, u) is 0 > u ? 0 :
 * u, NaN passing through; NEON: a compare and a select). */
#ifdef DCZ_X86
__attribute__((target("avx2")))
static void hard__avx2(uint16_t op, float a, float b, const float *x, size_t n, float *y)
{
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    const int swish = op == DCZ_OP_HARD_SWISH;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(y + i, swish ? dcz_hard_swish__avx2(v)
                                      : _mm256_max_ps(zero, _mm256_min_ps(one, _mm256_add_ps(_mm256_mul_ps(va, v), vb))));
    }
    const float param[2] = { a, b };
    dcz_activation_ref(op, param, x + i, n - i, y + i);
}
#endif

#ifdef DCZ_NEON
static void hard__neon(uint16_t op, float a, float b, const float *x, size_t n, float *y)
{
    const float32x4_t va = vdupq_n_f32(a), vb = vdupq_n_f32(b), one = vdupq_n_f32(1.0f), zero = vdupq_n_f32(0.0f);
    const int swish = op == DCZ_OP_HARD_SWISH;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        if (swish) {
            vst1q_f32(y + i, dcz_hard_swish__neon(v));
            continue;
        }
        const float32x4_t t = vaddq_f32(vmulq_f32(va, v), vb);
        const float32x4_t m = vbslq_f32(vcltq_f32(one, t), one, t);
        vst1q_f32(y + i, vbslq_f32(vcgtq_f32(zero, m), zero, m));
    }
    const float param[2] = { a, b };
    dcz_activation_ref(op, param, x + i, n - i, y + i);
}
#endif

int dcz_hard_act_isa(dcz_isa isa, uint16_t op, const float *param, const float *x, size_t n, float *y)
{
    if (op != DCZ_OP_HARD_SIGMOID && op != DCZ_OP_HARD_SWISH) return 0;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        hard__avx2(op, param[0], param[1], x, n, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) {
        hard__neon(op, param[0], param[1], x, n, y);
        return 1;
    }
#endif
    (void)isa;
    (void)param;
    (void)x;
    (void)n;
    (void)y;
    return 0;
}

void dcz_hard_act(uint16_t op, const float *param, const float *x, size_t n, float *y)
{
    if (dcz_hard_act_isa(DCZ_ISA_AVX2, op, param, x, n, y) || dcz_hard_act_isa(DCZ_ISA_NEON, op, param, x, n, y))
        return;
    dcz_activation_ref(op, param, x, n, y);
}

/* ---- Sigmoid, SiLU --------------------------------------------------------------------- */

/* SIGMOID and SILU (shapes.h: dcz_sigmoid_one, dcz_silu_one), each of
 * their operations in a vector in its order (act_x86.h, act_neon.h): the
 * same roundings, so the reference's bits. */
#ifdef DCZ_X86
__attribute__((target("avx2,fma")))
static void exp_act__avx2(uint16_t op, const float *x, size_t n, float *y)
{
    size_t i = 0;
    if (op == DCZ_OP_SILU)
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, dcz_silu__avx2(_mm256_loadu_ps(x + i)));
    else
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, dcz_sigmoid__avx2(_mm256_loadu_ps(x + i)));
    dcz_activation_ref(op, NULL, x + i, n - i, y + i);
}

__attribute__((target("avx512f")))
static void exp_act__avx512(uint16_t op, const float *x, size_t n, float *y)
{
    size_t i = 0;
    if (op == DCZ_OP_SILU)
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, dcz_silu__avx512(_mm512_loadu_ps(x + i)));
    else
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, dcz_sigmoid__avx512(_mm512_loadu_ps(x + i)));
    exp_act__avx2(op, x + i, n - i, y + i);
}
#endif

#ifdef DCZ_NEON
static void exp_act__neon(uint16_t op, const float *x, size_t n, float *y)
{
    size_t i = 0;
    if (op == DCZ_OP_SILU)
        for (; i + 4 <= n; i += 4) vst1q_f32(y + i, dcz_silu__neon(vld1q_f32(x + i)));
    else
        for (; i + 4 <= n; i += 4) vst1q_f32(y + i, dcz_sigmoid__neon(vld1q_f32(x + i)));
    dcz_activation_ref(op, NULL, x + i, n - i, y + i);
}
#endif

int dcz_exp_act_isa(dcz_isa isa, uint16_t op, const float *x, size_t n, float *y)
{
    if (op != DCZ_OP_SIGMOID && op != DCZ_OP_SILU) return 0;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512)) {
        exp_act__avx512(op, x, n, y);
        return 1;
    }
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        exp_act__avx2(op, x, n, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) {
        exp_act__neon(op, x, n, y);
        return 1;
    }
#endif
    (void)isa;
    (void)x;
    (void)n;
    (void)y;
    return 0;
}

void dcz_exp_act(uint16_t op, const float *x, size_t n, float *y)
{
    if (dcz_exp_act_isa(DCZ_ISA_AVX512, op, x, n, y) || dcz_exp_act_isa(DCZ_ISA_AVX2, op, x, n, y) ||
        dcz_exp_act_isa(DCZ_ISA_NEON, op, x, n, y))
        return;
    dcz_activation_ref(op, NULL, x, n, y);
}

void dcz_activation(uint16_t op, const float *param, const float *x, size_t n, float *y)
{
    if (op == DCZ_OP_HARD_SIGMOID || op == DCZ_OP_HARD_SWISH) dcz_hard_act(op, param, x, n, y);
    else if (op == DCZ_OP_SIGMOID || op == DCZ_OP_SILU) dcz_exp_act(op, x, n, y);
    else if (op == DCZ_OP_CLIP) dcz_clip(param[0], param[1], x, n, y);
    else dcz_activation_ref(op, param, x, n, y);
}

/* ---- Mul ------------------------------------------------------------------------------ */

/* x times its channel's factor, a plane at a time with the factor in a
 * vector, or element by element where each element has its own factor
 * (plane 1): one product each, the reference's bits. */
#ifdef DCZ_X86
__attribute__((target("avx2")))
static void mul__avx2(const float *x, const float *f, size_t rows, uint32_t plane, float *y)
{
    if (plane == 1) {
        size_t i = 0;
        for (; i + 8 <= rows; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(f + i)));
        for (; i < rows; i++) y[i] = x[i] * f[i];
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * plane;
        float *yr = y + r * plane;
        const __m256 s = _mm256_set1_ps(f[r]);
        uint32_t p = 0;
        for (; p + 8 <= plane; p += 8) _mm256_storeu_ps(yr + p, _mm256_mul_ps(_mm256_loadu_ps(xr + p), s));
        for (; p < plane; p++) yr[p] = xr[p] * f[r];
    }
}
#endif

#ifdef DCZ_NEON
static void mul__neon(const float *x, const float *f, size_t rows, uint32_t plane, float *y)
{
    if (plane == 1) {
        size_t i = 0;
        for (; i + 4 <= rows; i += 4) vst1q_f32(y + i, vmulq_f32(vld1q_f32(x + i), vld1q_f32(f + i)));
        for (; i < rows; i++) y[i] = x[i] * f[i];
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * plane;
        float *yr = y + r * plane;
        const float32x4_t s = vdupq_n_f32(f[r]);
        uint32_t p = 0;
        for (; p + 4 <= plane; p += 4) vst1q_f32(yr + p, vmulq_f32(vld1q_f32(xr + p), s));
        for (; p < plane; p++) yr[p] = xr[p] * f[r];
    }
}
#endif

int dcz_mul_isa(dcz_isa isa, const float *x, const float *f, size_t batch, uint32_t channels, uint32_t plane,
                float *y)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        mul__avx2(x, f, batch * channels, plane, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) {
        mul__neon(x, f, batch * channels, plane, y);
        return 1;
    }
#endif
    (void)isa;
    (void)x;
    (void)f;
    (void)batch;
    (void)channels;
    (void)plane;
    (void)y;
    return 0;
}

void dcz_mul(const float *x, const float *f, size_t batch, uint32_t channels, uint32_t plane, float *y)
{
    if (dcz_mul_isa(DCZ_ISA_AVX2, x, f, batch, channels, plane, y) ||
        dcz_mul_isa(DCZ_ISA_NEON, x, f, batch, channels, plane, y))
        return;
    dcz_mul_ref(x, f, batch, channels, plane, y);
}

/* ---- Add ---------------------------------------------------------------------------- */

/* y = act(a + b), a vector at a time: one rounding per sum, then ReLU or
 * CLIP by the instructions of relu and clip above (the references' bits);
 * act NULL or op 0: the sum alone. */
#ifdef DCZ_X86
__attribute__((target("avx2,fma")))
static void add__avx2(const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
    const int op = act ? act->op : 0;
    const float lo = op == DCZ_OP_CLIP ? act->lo : 0.0f, hi = op == DCZ_OP_CLIP ? act->hi : 0.0f;
    const __m256 zero = _mm256_setzero_ps(), l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        if (op == DCZ_OP_RELU) v = _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), v);
        else if (op == DCZ_OP_CLIP) v = _mm256_max_ps(l, _mm256_min_ps(h, v));
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; i++) y[i] = dcz_act_one(act, a[i] + b[i]);
}
#endif

#ifdef DCZ_NEON
static void add__neon(const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, dcz_act__neon(vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)), act));
    for (; i < n; i++) y[i] = dcz_act_one(act, a[i] + b[i]);
}
#endif

int dcz_add_isa(dcz_isa isa, const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        add__avx2(a, b, n, act, y);
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) {
        add__neon(a, b, n, act, y);
        return 1;
    }
#endif
    (void)isa;
    (void)a;
    (void)b;
    (void)n;
    (void)act;
    (void)y;
    return 0;
}

void dcz_add(const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
    if (dcz_add_isa(DCZ_ISA_AVX2, a, b, n, act, y) || dcz_add_isa(DCZ_ISA_NEON, a, b, n, act, y)) return;
    dcz_add_ref(a, b, n, y);
    dcz_act_apply(act, y, n);
}

/* Part `part` of a CONCAT over a pool: its whole vectors of 16 of the
 * flat output, from the inputs' pieces they cover */
typedef struct concat_job {
    const float *const *x;
    const uint32_t *width;
    uint32_t nin, parts;
    size_t batch, total;   /* total: a sample's outputs */
    float *y;
} concat_job;

static void concat_part(void *ctx, uint32_t part)
{
    const concat_job *j = ctx;
    size_t lo, hi;
    dcz_part_units(j->batch * j->total, 16, part, j->parts, &lo, &hi);
    size_t at = 0;   /* the flat output index of the piece's first */
    for (size_t b = 0; b < j->batch && at < hi; b++)
        for (uint32_t k = 0; k < j->nin && at < hi; k++) {
            const size_t w = j->width[k], a = lo > at ? lo : at, e = hi < at + w ? hi : at + w;
            if (a < e) memcpy(j->y + a, j->x[k] + b * w + (a - at), (e - a) * sizeof *j->y);
            at += w;
        }
}

void dcz_concat_pool(dcz_pool *pool, const float *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                     float *y)
{
    size_t total = 0;
    for (uint32_t k = 0; k < nin; k++) total += width[k];
    const int split = pool && batch * total >= DCZ_SPLIT_ELEMS;
    concat_job j = { x, width, nin, split ? dcz_pool_threads(pool) : 1, batch, total, y };
    dcz_pool_run(split ? pool : NULL, concat_part, &j);
}

/* Part `part` of an ADD over a pool: whole vectors of 16 floats a part
 * but the last */
typedef struct add_job {
    const float *a, *b;
    const dcz_act *act;
    float *y;
    size_t n;
    uint32_t parts;
} add_job;

static void add_part(void *ctx, uint32_t part)
{
    const add_job *j = ctx;
    size_t lo, hi;
    dcz_part_units(j->n, 16, part, j->parts, &lo, &hi);
    if (lo < hi) dcz_add(j->a + lo, j->b + lo, hi - lo, j->act, j->y + lo);
}

void dcz_add_pool(dcz_pool *pool, const float *a, const float *b, size_t n, const dcz_act *act, float *y)
{
    const int split = pool && n >= DCZ_SPLIT_ELEMS;
    add_job j = { a, b, act, y, n, split ? dcz_pool_threads(pool) : 1 };
    dcz_pool_run(split ? pool : NULL, add_part, &j);
}
