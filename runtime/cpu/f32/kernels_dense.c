/* kernels_dense.c: dense fp32 fully connected layers, vectorized (the
 * reference is kernels_ref.c's dcz_dense_f32_ref).
 *
 * Each output is a dot product of a weight row with a sample, split over
 * vector lanes: two accumulators of DENSE_LANES lanes take columns 0..L-1
 * and L..2L-1 of every 2L, fused multiply-adds; a last block of L columns
 * goes to the first; the two are added, the lanes summed in a fixed order,
 * the columns left over added one by one, then the bias. Every output is
 * computed by that same sequence whatever the batch, the rows and samples
 * around it and the block it falls in (a block of rows and samples shares
 * their loads), so a sample gives the same bits at batch 1 and in any
 * batch. The sums are in another order than the reference's, so the two
 * agree within rounding, not bit for bit.
 *
 * Batch 1 takes four rows a block; a batch takes two rows by two samples
 * (eight sums in registers), the two rows staying in the first level cache
 * while every sample streams past, so the weights are read from memory
 * once per batch.
 *
 * Dispatch: x86 with AVX2 and FMA: __avx2; aarch64: __neon; otherwise the
 * reference. The x86 variant has a per-function target attribute, so
 * libdcz needs no global -m flags.
 *
 * Checked by tests/unit/test_simd.c: every variant this machine runs
 * against a product in double within a stated bound, and batch N against
 * batch 1 bit for bit.
 */
#include <math.h>

#include "runtime/cpu/f32/dense.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>
#define DCZ_X86 1
#elif DCZ_BUILD_F32_NEON
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

#ifdef DCZ_X86
/* The lanes of v summed: halves, then pairs, then the last two. */
__attribute__((target("avx2,fma"), always_inline))
static inline float hsum__avx2(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* Rows R of w (rows of in floats) times samples S of x (ld floats apart):
 * y[j * ldy + k] for row k and sample j. */
#define DENSE_BLOCK__AVX2(R, S)                                                                        \
    __attribute__((target("avx2,fma")))                                                                \
    static void block##R##x##S##__avx2(const float *w, uint32_t in, const float *x, size_t ld,      \
                                       const float *bias, float *y, size_t ldy)                    \
    {                                                                                                  \
        __m256 a0[R][S], a1[R][S];                                                                     \
        _Pragma("GCC unroll 4") for (int k = 0; k < R; k++)                                                                    \
            _Pragma("GCC unroll 4") for (int j = 0; j < S; j++) a0[k][j] = a1[k][j] = _mm256_setzero_ps();                   \
        uint32_t c = 0;                                                                                \
        for (; c + 16 <= in; c += 16)                                                                  \
            _Pragma("GCC unroll 4") for (int j = 0; j < S; j++) {                                                              \
                const __m256 x0 = _mm256_loadu_ps(x + j * ld + c), x1 = _mm256_loadu_ps(x + j * ld + c + 8); \
                _Pragma("GCC unroll 4") for (int k = 0; k < R; k++) {                                                          \
                    a0[k][j] = _mm256_fmadd_ps(_mm256_loadu_ps(w + (size_t)k * in + c), x0, a0[k][j]); \
                    a1[k][j] = _mm256_fmadd_ps(_mm256_loadu_ps(w + (size_t)k * in + c + 8), x1, a1[k][j]); \
                }                                                                                      \
            }                                                                                          \
        if (c + 8 <= in) {                                                                             \
            _Pragma("GCC unroll 4") for (int j = 0; j < S; j++) {                                                              \
                const __m256 x0 = _mm256_loadu_ps(x + j * ld + c);                                     \
                _Pragma("GCC unroll 4") for (int k = 0; k < R; k++)                                                            \
                    a0[k][j] = _mm256_fmadd_ps(_mm256_loadu_ps(w + (size_t)k * in + c), x0, a0[k][j]); \
            }                                                                                          \
            c += 8;                                                                                    \
        }                                                                                              \
        _Pragma("GCC unroll 4") for (int k = 0; k < R; k++)                                                                    \
            _Pragma("GCC unroll 4") for (int j = 0; j < S; j++) {                                                              \
                float s = hsum__avx2(_mm256_add_ps(a0[k][j], a1[k][j]));                               \
                for (uint32_t t = c; t < in; t++) s = fmaf(w[(size_t)k * in + t], x[j * ld + t], s);  \
                y[j * ldy + k] = bias ? s + bias[k] : s;                                               \
            }                                                                                          \
    }
DENSE_BLOCK__AVX2(1, 1)
DENSE_BLOCK__AVX2(4, 1)
DENSE_BLOCK__AVX2(2, 1)
DENSE_BLOCK__AVX2(2, 2)
#endif

#ifdef DCZ_NEON
static inline float hsum__neon(float32x4_t v) { return vaddvq_f32(v); }

/* The blocks of the AVX2 variant on 4 lanes: two accumulators take
 * columns 0..3 and 4..7 of every 8. */
#define DENSE_BLOCK__NEON(R, S)                                                                        \
    static void block##R##x##S##__neon(const float *w, uint32_t in, const float *x, size_t ld,      \
                                       const float *bias, float *y, size_t ldy)                    \
    {                                                                                                  \
        float32x4_t a0[R][S], a1[R][S];                                                                \
        _Pragma("GCC unroll 4") for (int k = 0; k < R; k++)                                                                    \
            _Pragma("GCC unroll 4") for (int j = 0; j < S; j++) a0[k][j] = a1[k][j] = vdupq_n_f32(0.0f);                      \
        uint32_t c = 0;                                                                                \
        for (; c + 8 <= in; c += 8)                                                                    \
            _Pragma("GCC unroll 4") for (int j = 0; j < S; j++) {                                                              \
                const float32x4_t x0 = vld1q_f32(x + j * ld + c), x1 = vld1q_f32(x + j * ld + c + 4);  \
                _Pragma("GCC unroll 4") for (int k = 0; k < R; k++) {                                                          \
                    a0[k][j] = vfmaq_f32(a0[k][j], vld1q_f32(w + (size_t)k * in + c), x0);            \
                    a1[k][j] = vfmaq_f32(a1[k][j], vld1q_f32(w + (size_t)k * in + c + 4), x1);        \
                }                                                                                      \
            }                                                                                          \
        if (c + 4 <= in) {                                                                             \
            _Pragma("GCC unroll 4") for (int j = 0; j < S; j++) {                                                              \
                const float32x4_t x0 = vld1q_f32(x + j * ld + c);                                      \
                _Pragma("GCC unroll 4") for (int k = 0; k < R; k++) a0[k][j] = vfmaq_f32(a0[k][j], vld1q_f32(w + (size_t)k * in + c), x0); \
            }                                                                                          \
            c += 4;                                                                                    \
        }                                                                                              \
        _Pragma("GCC unroll 4") for (int k = 0; k < R; k++)                                                                    \
            _Pragma("GCC unroll 4") for (int j = 0; j < S; j++) {                                                              \
                float s = hsum__neon(vaddq_f32(a0[k][j], a1[k][j]));                                  \
                for (uint32_t t = c; t < in; t++) s = fmaf(w[(size_t)k * in + t], x[j * ld + t], s);  \
                y[j * ldy + k] = bias ? s + bias[k] : s;                                               \
            }                                                                                          \
    }
DENSE_BLOCK__NEON(1, 1)
DENSE_BLOCK__NEON(4, 1)
DENSE_BLOCK__NEON(2, 1)
DENSE_BLOCK__NEON(2, 2)
#endif

typedef void (*block_fn)(const float *w, uint32_t in, const float *x, size_t ld, const float *bias, float *y,
                         size_t ldy);
typedef struct blocks {
    block_fn b1x1, b4x1, b2x1, b2x2;
} blocks;

/* The blocks of the variant for isa; 0 when this build or machine has none. */
static int variant(dcz_isa isa, blocks *v)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2) && dcz_cpu_features()->fma) {
        *v = (blocks){ block1x1__avx2, block4x1__avx2, block2x1__avx2, block2x2__avx2 };
        return 1;
    }
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) {
        *v = (blocks){ block1x1__neon, block4x1__neon, block2x1__neon, block2x2__neon };
        return 1;
    }
#endif
    (void)isa;
    (void)v;
    return 0;
}

int dcz_dense_f32_isa(dcz_isa isa, const float *w, const float *bias, const float *x, size_t batch, uint32_t in,
                      uint32_t out, float *y)
{
    blocks v;
    if (!variant(isa, &v)) return 0;
#define BLOCK(fn, r, b) fn(w + (size_t)(r) * in, in, x + (b) * in, in, bias ? bias + (r) : NULL, y + (b) * out + (r), out)
    uint32_t r = 0;
    if (batch == 1) {
        for (; r + 4 <= out; r += 4) BLOCK(v.b4x1, r, 0);
    } else {
        /* two rows at a time, every sample: the rows stay in cache */
        for (; r + 2 <= out; r += 2) {
            size_t b = 0;
            for (; b + 2 <= batch; b += 2) BLOCK(v.b2x2, r, b);
            if (b < batch) BLOCK(v.b2x1, r, b);
        }
    }
    for (; r < out; r++)
        for (size_t b = 0; b < batch; b++) BLOCK(v.b1x1, r, b);
#undef BLOCK
    return 1;
}

const char *dcz_dense_f32_variant(void)
{
    blocks v;
    const dcz_isa isa = dcz_isa_best();
    return variant(isa, &v) ? isa == DCZ_ISA_AVX2 ? "avx2" : "neon" : NULL;
}

void dcz_dense_f32(const float *w, const float *bias, const float *x, size_t batch, uint32_t in, uint32_t out,
                   float *y)
{
    if (!dcz_dense_f32_isa(dcz_isa_best(), w, bias, x, batch, in, out, y))
        dcz_dense_f32_ref(w, bias, x, batch, in, out, y);
}
