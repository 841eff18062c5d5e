/* vec.c: the element-wise loops and sums of the training engine (batch
 * norm, ReLU, Add, bias gradients, depthwise taps), as a table of
 * functions per ISA: the scalar references here, and AVX-512 and AVX2
 * versions (vec_isa.h) that give the references' bits.
 *
 * The order of a sum is part of its definition: element j goes into
 * partial sum j % 16, each partial sum adds its elements in order, and
 * the 16 are added by halves (dcz_vec_tree16), as a 16-lane vector (or
 * two of 8) holds and folds them. Products and sums round apart (the build
 * has -ffp-contract=off; the vector versions use no fused multiply-add), so
 * every version gives the same bits on every machine.
 *
 * Why: the training engine compiles for the base x86-64, whose vectors
 * are 4 floats, and the four partial sums the sums had compiled to scalar
 * code: batch norm's passes took 14% of a ResNet-style epoch, the ReLU and
 * Add passes 5% (Intel Xeon, AVX-512, 2 threads).
 *
 * Checked by tests/unit/test_train.c (test_vec_isas): every version this
 * machine runs against the references, bit for bit, over lengths 0 to 80
 * at four alignments, with NaN and signed zeros for the ReLUs.
 */
#include <string.h>

#include "train/internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DCZ_X86 1
#endif

float dcz_vec_tree16(const float *p)
{
    float t8[8], t4[4];
    for (int i = 0; i < 8; i++) t8[i] = p[i] + p[i + 8];
    for (int i = 0; i < 4; i++) t4[i] = t8[i] + t8[i + 4];
    return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}
#define tree16 dcz_vec_tree16

/* ---- the references --------------------------------------------------------- */
/* A sum's whole blocks of 16 go by an inner loop of 16 that the compiler
 * can keep in vector registers (the same additions in the same order as
 * p[j % 16] += ... element by element); the last n % 16 elements after. */
static float sum_ref(const float *s, size_t n)
{
    float p[16] = { 0 };
    size_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) p[i] += s[j + i];
    for (; j < n; j++) p[j % 16] += s[j];
    return tree16(p);
}

static float dot_ref(const float *a, const float *b, size_t n)
{
    float p[16] = { 0 };
    size_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) p[i] += a[j + i] * b[j + i];
    for (; j < n; j++) p[j % 16] += a[j] * b[j];
    return tree16(p);
}

static float sumsq_dev_ref(const float *s, float m, size_t n)
{
    float p[16] = { 0 };
    size_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) {
            const float d = s[j + i] - m;
            p[i] += d * d;
        }
    for (; j < n; j++) {
        const float d = s[j] - m;
        p[j % 16] += d * d;
    }
    return tree16(p);
}

static void sums_grad_ref(const float *g, const float *x, float m, size_t n, float *sg, float *sgx)
{
    float p[16] = { 0 }, q[16] = { 0 };
    size_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) {
            p[i] += g[j + i];
            q[i] += g[j + i] * (x[j + i] - m);
        }
    for (; j < n; j++) {
        p[j % 16] += g[j];
        q[j % 16] += g[j] * (x[j] - m);
    }
    *sg = tree16(p);
    *sgx = tree16(q);
}

static void affine_relu_ref(float *restrict d, const float *restrict s, float a, float b, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        const float v = s[j] * a + b;
        d[j] = v > 0.0f ? v : 0.0f;
    }
}

static void affine_clip_ref(float *restrict d, const float *restrict s, float a, float b, float lo, float hi,
                            size_t n)
{
    for (size_t j = 0; j < n; j++) {
        const float v = s[j] * a + b, t = hi < v ? hi : v;
        d[j] = lo > t ? lo : t;
    }
}

static void relu_ref(float *restrict d, const float *restrict s, size_t n)
{
    for (size_t j = 0; j < n; j++) d[j] = s[j] > 0.0f ? s[j] : 0.0f;
}

/* Both operands are loaded before the choice, so that it compiles to a
 * mask, not a branch that mispredicts on half the units. */
static void relu_grad_ref(float *restrict d, const float *restrict g, const float *restrict y, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        const float gj = g[j];
        d[j] = y[j] > 0.0f ? gj : 0.0f;
    }
}

/* The same for a band: both comparisons taken (&, not &&), no branch. */
static void clip_grad_ref(float *restrict d, const float *restrict g, const float *restrict x, float lo, float hi,
                          size_t n)
{
    for (size_t j = 0; j < n; j++) {
        const float gj = g[j], v = x[j];
        d[j] = (v > lo) & (v < hi) ? gj : 0.0f;
    }
}

static void sum2_ref(float *restrict d, const float *a, const float *b, size_t n)
{
    for (size_t j = 0; j < n; j++) d[j] = a[j] + b[j];
}

/* add, affine, lincomb and axpy: internal.h's, which also run inline */
static const dcz_vec_ops ops_ref = {
    sum_ref, dot_ref, sumsq_dev_ref, sums_grad_ref, dcz_vaffine_ref, affine_relu_ref, affine_clip_ref,
    dcz_vlincomb_ref, relu_ref, relu_grad_ref, clip_grad_ref, dcz_vadd_ref, sum2_ref, dcz_vaxpy_ref,
};

/* ---- AVX-512 and AVX2 ------------------------------------------------------- */

#ifdef DCZ_X86
/* the same for lanes 0-7 in a, 8-15 in b */
__attribute__((target("avx2")))
static inline float tree16__avx2(__m256 a, __m256 b)
{
    const __m256 t8 = _mm256_add_ps(a, b);
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    return _mm_cvtss_f32(_mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1)));
}

/* the first c of 8 lanes (1..8) */
__attribute__((target("avx2")))
static inline __m256i first8__avx2(int c)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define SFX __avx512
#define TGT __attribute__((target("avx512f")))
#define V __m512
#define L 16
#define VZERO() _mm512_setzero_ps()
#define VSET1(f) _mm512_set1_ps(f)
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
/* maxps gives its second operand where either is NaN, and for two zeros */
#define VMAX0(v) _mm512_max_ps(v, _mm512_setzero_ps())
/* minps(hi, v) = hi < v ? hi : v, maxps(lo, t) = lo > t ? lo : t */
#define VCLIP(v, lo, hi) _mm512_max_ps(lo, _mm512_min_ps(hi, v))
#define VPOS(y, g) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ), g)
#define VBAND(x, lo, hi, g) \
    _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GT_OQ) & _mm512_cmp_ps_mask(x, hi, _CMP_LT_OQ), g)
#define VLOAD_PART(p, c) _mm512_maskz_loadu_ps((__mmask16)((1u << (c)) - 1), p)
#define VKEEP(v, c) _mm512_maskz_mov_ps((__mmask16)((1u << (c)) - 1), v)
#define VTREE16(acc) dcz_vec_tree16__avx512((acc)[0])
#include "train/vec_isa.h"

#define SFX __avx2
#define TGT __attribute__((target("avx2")))
#define V __m256
#define L 8
#define VZERO() _mm256_setzero_ps()
#define VSET1(f) _mm256_set1_ps(f)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VMAX0(v) _mm256_max_ps(v, _mm256_setzero_ps())
#define VCLIP(v, lo, hi) _mm256_max_ps(lo, _mm256_min_ps(hi, v))
#define VPOS(y, g) _mm256_and_ps(_mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_GT_OQ), g)
#define VBAND(x, lo, hi, g) \
    _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GT_OQ), _mm256_cmp_ps(x, hi, _CMP_LT_OQ)), g)
#define VLOAD_PART(p, c) _mm256_maskload_ps(p, first8__avx2(c))
#define VKEEP(v, c) _mm256_and_ps(v, _mm256_castsi256_ps(first8__avx2(c)))
#define VTREE16(acc) tree16__avx2((acc)[0], (acc)[1])
#include "train/vec_isa.h"
#endif

const dcz_vec_ops *dcz_vec_ops_of(dcz_isa isa)
{
    if (!dcz_isa_supported(isa)) return NULL;
    switch (isa) {
    case DCZ_ISA_REF: return &ops_ref;
#ifdef DCZ_X86
    case DCZ_ISA_AVX2: return &ops__avx2;
    case DCZ_ISA_AVX512: return &ops__avx512;
#endif
    default: return NULL;
    }
}

const dcz_vec_ops *dcz_vec(void)
{
#ifdef DCZ_X86
    if (__builtin_cpu_supports("avx512f")) return &ops__avx512;
    if (__builtin_cpu_supports("avx2")) return &ops__avx2;
#endif
    return &ops_ref;
}
