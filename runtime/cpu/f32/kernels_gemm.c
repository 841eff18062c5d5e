/* kernels_gemm.c: the dense matrix products of libdcz, vectorized, beside
 * their scalar references: fp32 (AVX-512, AVX2 with FMA, NEON), and the
 * integer product of the 8-bit schemes (AVX-512BW, AVX2).
 *
 * C (m, n) = A (m, k) B (k, n) plus a bias per row or per column of C. The
 * vectors run along C's columns (whole vectors of B's rows are read, into
 * the next row where a row ends inside one, masked on B's last row: the
 * float product takes B unpadded; the integer one's rows are padded to
 * DCZ_GEMM_PAD elements), A's elements
 * are broadcast, and a tile keeps MR rows by NV vectors of sums in
 * registers over k, or a block of k, the float products storing them into
 * C between blocks and loading them back exactly (gemm_tile.h, one
 * template for both element types). fp32: each output is its bias plus the products added
 * one by one in k order by fused multiply-adds, exactly as the reference
 * computes it, so every variant and the reference give the same bits, at
 * any size, on any machine, and a sample of a batch the bits it has alone.
 * Integers: A and B hold int16 pairs, vpmaddwd adds a pair's two products
 * into 32-bit sums, widened to int64 at the store; exact integers, so the
 * reference's.
 *
 * Tiles (rows of C x columns): AVX-512 6 x 64 (24 of its 32 registers hold
 * sums), AVX2 6 x 16 (12 of 16), NEON 6 x 16 (24 of 32); a C of one row
 * (one output channel) takes 128, 64 and 32 columns a tile so that eight
 * sums are in flight. The panel of B a tile reads stays in the caches
 * while the tiles go down A; the float products take it a block of rows
 * at a time where it would not, and a B past the second-level cache by
 * bands of rows in order (gemm_tile.h, the walk).
 *
 * Checked by tests/unit/test_simd.c (fp32: every variant this machine runs
 * against the reference bit for bit on random matrices of odd sizes, with
 * both kinds of bias) and tests/unit/test_qkernels.c (the integer product
 * over the convolution grid against dcz_qconv2d_direct_ref).
 */
#include <math.h>
#include <string.h>

#include "runtime/cpu/f32/gemm.h"
#include "runtime/model.h"

/* the integer product is the 8-bit family's (KERNELS=: DCZ_QX86), the
 * float one the float family's */
#if DCZ_BUILD_F32_X86 || DCZ_BUILD_Q8_X86
#include <immintrin.h>

#include "runtime/cpu/f32/act_x86.h"
#include "runtime/cpu/avx2_lanes.h"
#endif
#if DCZ_BUILD_F32_X86
#define DCZ_X86 1
#endif
#if DCZ_BUILD_Q8_X86
#define DCZ_QX86 1
#endif
#if DCZ_BUILD_F32_NEON
#include <arm_neon.h>

#include "runtime/cpu/f32/act_neon.h"
#define DCZ_NEON 1
#endif

void dcz_gemm_f32_strided_ref(const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a, size_t lda,
                              size_t ka, const float *b, size_t ldb, const float *bias_m, const float *bias_n,
                              float *c, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float acc = bias_m ? bias_m[i] : bias_n ? bias_n[j] : 0.0f;
            for (uint32_t p = 0; p < k; p++) acc = fmaf(a[i * lda + p * ka], b[(size_t)p * ldb + j], acc);
            c[i * ldc + j] = act && act->op ? dcz_act_one(act, acc) : acc;
        }
}

void dcz_gemm_f32_ref(size_t m, size_t n, uint32_t k, const float *a, size_t lda, const float *b, size_t ldb,
                      const float *bias_m, const float *bias_n, float *c, size_t ldc)
{
    dcz_gemm_f32_strided_ref(NULL, m, n, k, a, lda, 1, b, ldb, bias_m, bias_n, c, ldc);
}

#ifdef DCZ_X86
/* The band of B's rows a product of 2 to MR rows of C takes across every
 * panel where B streams from memory (gemm_tile.h, the walk): on Intel's
 * cores 16, whose rows, a row of B apart, are as many streams as the
 * prefetcher follows; 64 on AMD's, where it was measured before and not
 * since. One core of an Intel Xeon @ 2.50GHz with AVX-512, best of two
 * runs, 64 rows against 16: 4096 x 4096 at batch 1 10.9 -> 6.0 ms, at
 * batch 4 11.8 -> 6.7, 25088 x 4096 at batch 1 72 -> 40-44; in the
 * networks, 1000 classes from 1280 (MobileNetV2) 819 -> 487 us, from 1024
 * (ShuffleNetV2) 673 -> 380, from 2048 (ResNet-50) 1427 -> 868 (dcz bench
 * --per-layer, alternated); 4 rows ran 10-20% slower than 16. (One row of
 * C, batch 1, now goes by gemm_tile.h's gemv_rows, whole rows of B.) */
static uint32_t gemv_band(void)
{
    return dcz_cpu_features()->amd ? 64 : 16;
}

#define SFX __avx512
#define TGT __attribute__((target("avx512f")))
#define V __m512
#define L 16
#define VZERO() _mm512_setzero_ps()
#define VSET1(f) _mm512_set1_ps(f)
#define VLOAD(p) _mm512_loadu_ps(p)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VSTORE_PART(p, v, n) _mm512_mask_storeu_ps(p, (__mmask16)((1u << (n)) - 1), v)
#define VLOAD_PART(p, n) _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1), p)
#define VLOADB_PART(p, n) VLOAD_PART(p, n)
#define MR 6
#define NV 4
#define NV1 8
#define KC 128
#define KR gemv_band()
#define GEMV_BYTES (2u << 20)
/* every AVX-512 core has 1 MB or more of second-level cache (the AVX2 and
 * NEON products keep 256 KB): a B of up to 512 KB read once, where the
 * panels read A once each. SqueezeNet 1.1's classifier, 1000 from 512
 * over 13 x 13 (B 360 KB, A 2 MB), one core of an AMD EPYC (Zen 5), dcz
 * bench --per-layer least of three alternated rounds, 783 -> 747 us; the
 * network 0.98-1.0 of the time, ResNet-50 0.99, MobileNetV2 0.98-1.0, the
 * others within noise (medians of alternated runs in both orders) */
#define SMALLB_BYTES (512u << 10)
#define ROWS_KMAX 16
#define VLOADC(p) _mm512_loadu_ps(p)
#define VACT(v, act) dcz_act__avx512(v, act)
/* A tile's lines of C asked for before its k loop (gemm_tile.h): where C
 * is past the second-level cache, a tile's 24 stores at its end missed
 * and stalled the next tile (measured on an Intel Xeon:
 * bench/cpu-profile.md; not on AMD's cores; AVX2's tiles unchanged). */
#define CPREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#include "runtime/cpu/f32/gemm_tile.h"

/* lanes 0 .. n - 1 of an AVX2 mask */
#define mask8 dcz_mask8__avx2

#define SFX __avx2
#define TGT __attribute__((target("avx2,fma")))
#define V __m256
#define L 8
#define VZERO() _mm256_setzero_ps()
#define VSET1(f) _mm256_set1_ps(f)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VSTORE_PART(p, v, n) _mm256_maskstore_ps(p, mask8(n), v)
#define VLOAD_PART(p, n) _mm256_maskload_ps(p, mask8(n))
#define VLOADB_PART(p, n) VLOAD_PART(p, n)
#define MR 6
#define NV 2
#define NV1 8
#define KC 256
#define KR gemv_band()
#define GEMV_BYTES (2u << 20)
#define SMALLB_BYTES (256u << 10)
#define ROWS_KMAX 16
#define VLOADC(p) _mm256_loadu_ps(p)
#define VACT(v, act) dcz_act__avx2(v, act)
#include "runtime/cpu/f32/gemm_tile.h"
#endif

#ifdef DCZ_NEON
static inline void store_part__neon(float *p, float32x4_t v, uint32_t n)
{
    float t[4];
    vst1q_f32(t, v);
    memcpy(p, t, n * sizeof *t);
}

static inline float32x4_t load_part__neon(const float *p, uint32_t n)
{
    float t[4] = { 0 };
    memcpy(t, p, n * sizeof *t);
    return vld1q_f32(t);
}

#define SFX __neon
#define TGT
#define V float32x4_t
#define L 4
#define VZERO() vdupq_n_f32(0.0f)
#define VSET1(f) vdupq_n_f32(f)
#define VLOAD(p) vld1q_f32(p)
#define VFMA(a, b, c) vfmaq_f32(c, a, b)
#define VSTORE(p, v) vst1q_f32(p, v)
#define VSTORE_PART(p, v, n) store_part__neon(p, v, n)
#define VLOAD_PART(p, n) load_part__neon(p, n)
#define VLOADB_PART(p, n) VLOAD_PART(p, n)
#define MR 6
#define NV 4
#define NV1 8
#define KC 128
#define KR 64
#define GEMV_BYTES (2u << 20)
#define SMALLB_BYTES (256u << 10)
#define ROWS_KMAX 16
#define VLOADC(p) vld1q_f32(p)
#define VACT(v, act) dcz_act__neon(v, act)
#include "runtime/cpu/f32/gemm_tile.h"
#endif

/* ---- the integer product ------------------------------------------------- */

/* A pair of int16 in an int32: the first in the low half. */
static inline int64_t pair_lo(int32_t v) { return (int16_t)(uint16_t)((uint32_t)v & 0xffffu); }
static inline int64_t pair_hi(int32_t v) { return (int16_t)(uint16_t)((uint32_t)v >> 16); }

void dcz_qgemm_ref(size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b, size_t ldb,
                   const int64_t *bias_m, int64_t *c, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            int64_t acc = bias_m ? bias_m[i] : 0;
            for (uint32_t p = 0; p < k2; p++) {
                const int32_t x = a[i * lda + p], y = b[(size_t)p * ldb + j];
                acc += pair_lo(x) * pair_lo(y) + pair_hi(x) * pair_hi(y);
            }
            c[i * ldc + j] = acc;
        }
}

#ifdef DCZ_QX86
__attribute__((target("avx512f,avx512bw")))
static inline void qstore__avx512(int64_t *p, __m512i v)
{
    _mm512_storeu_si512(p, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)));
    _mm512_storeu_si512(p + 8, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1)));
}

__attribute__((target("avx512f,avx512bw")))
static inline void qstore_part__avx512(int64_t *p, __m512i v, uint32_t n)
{
    int32_t t[16];
    _mm512_storeu_si512(t, v);
    for (uint32_t i = 0; i < n; i++) p[i] = t[i];
}

#define SFX __q_avx512
#define TGT __attribute__((target("avx512f,avx512bw")))
#define V __m512i
#define L 16
#define VZERO() _mm512_setzero_si512()
#define VSET1(f) _mm512_set1_epi32((int32_t)(f))
#define VLOAD(p) _mm512_loadu_si512(p)
#define VFMA(a, b, c) _mm512_add_epi32(_mm512_madd_epi16(a, b), c)
#define VSTORE(p, v) qstore__avx512(p, v)
#define VSTORE_PART(p, v, n) qstore_part__avx512(p, v, n)
#define VLOAD_PART(p, n) _mm512_setzero_si512() /* column biases: the integer product has none */
#define MR 6
#define NV 4
#define NV1 8
#define TA int32_t
#define TB int32_t
#define TC int64_t
#define TBIAS int64_t
#include "runtime/cpu/f32/gemm_tile.h"

__attribute__((target("avx2")))
static inline void qstore__avx2(int64_t *p, __m256i v)
{
    _mm256_storeu_si256((__m256i *)(void *)p, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)));
    _mm256_storeu_si256((__m256i *)(void *)(p + 4), _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
}

__attribute__((target("avx2")))
static inline void qstore_part__avx2(int64_t *p, __m256i v, uint32_t n)
{
    int32_t t[8];
    _mm256_storeu_si256((__m256i *)(void *)t, v);
    for (uint32_t i = 0; i < n; i++) p[i] = t[i];
}

#define SFX __q_avx2
#define TGT __attribute__((target("avx2")))
#define V __m256i
#define L 8
#define VZERO() _mm256_setzero_si256()
#define VSET1(f) _mm256_set1_epi32((int32_t)(f))
#define VLOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define VFMA(a, b, c) _mm256_add_epi32(_mm256_madd_epi16(a, b), c)
#define VSTORE(p, v) qstore__avx2(p, v)
#define VSTORE_PART(p, v, n) qstore_part__avx2(p, v, n)
#define VLOAD_PART(p, n) _mm256_setzero_si256() /* column biases: the integer product has none */
#define MR 6
#define NV 2
#define NV1 8
#define TA int32_t
#define TB int32_t
#define TC int64_t
#define TBIAS int64_t
#include "runtime/cpu/f32/gemm_tile.h"
#endif

typedef void (*qgemm_fn)(size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, size_t ka, const int32_t *b,
                         size_t ldb, const int64_t *bias_m, const int64_t *bias_n, int64_t *c, size_t ldc,
                         const dcz_act *act, const void *next, size_t next_bytes);

static qgemm_fn qvariant(dcz_isa isa)
{
#ifdef DCZ_QX86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw)
        return gemm__q_avx512;
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) return gemm__q_avx2;
#endif
    (void)isa;
    return NULL;
}

static dcz_isa qbest(void)
{
    if (qvariant(DCZ_ISA_AVX512)) return DCZ_ISA_AVX512;
    if (qvariant(DCZ_ISA_AVX2)) return DCZ_ISA_AVX2;
    return DCZ_ISA_REF;
}

int dcz_qgemm_isa(dcz_isa isa, size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b,
                  size_t ldb, const int64_t *bias_m, int64_t *c, size_t ldc)
{
    const qgemm_fn f = qvariant(isa);
    if (!f) return 0;
    if (m && n) f(m, n, k2, a, lda, 1, b, ldb, bias_m, NULL, c, ldc, NULL, NULL, 0);
    return 1;
}

void dcz_qgemm(size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b, size_t ldb,
               const int64_t *bias_m, int64_t *c, size_t ldc)
{
    if (!dcz_qgemm_isa(qbest(), m, n, k2, a, lda, b, ldb, bias_m, c, ldc))
        dcz_qgemm_ref(m, n, k2, a, lda, b, ldb, bias_m, c, ldc);
}

const char *dcz_qgemm_variant(void)
{
    const dcz_isa isa = qbest();
    return isa == DCZ_ISA_AVX512 ? "avx512" : isa == DCZ_ISA_AVX2 ? "avx2" : NULL;
}

/* ---- dispatch of the float product ------------------------------------------- */

typedef void (*gemm_fn)(size_t m, size_t n, uint32_t k, const float *a, size_t lda, size_t ka, const float *b,
                        size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc, const dcz_act *act,
                        const void *next, size_t next_bytes);

/* The variant for isa; NULL when this build or machine has none. */
static gemm_fn variant(dcz_isa isa)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512)) return gemm__avx512;
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2) && dcz_cpu_features()->fma) return gemm__avx2;
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) return gemm__neon;
#endif
    (void)isa;
    return NULL;
}

static dcz_isa best(void)
{
    static const dcz_isa order[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2, DCZ_ISA_NEON };
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (variant(order[i])) return order[i];
    return DCZ_ISA_REF;
}

int dcz_gemm_f32_strided_isa(dcz_isa isa, const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a,
                             size_t lda, size_t ka, const float *b, size_t ldb, const float *bias_m,
                             const float *bias_n, float *c, size_t ldc, const void *next, size_t next_bytes)
{
    const gemm_fn f = variant(isa);
    if (!f) return 0;
    if (m && n) f(m, n, k, a, lda, ka, b, ldb, bias_m, bias_n, c, ldc, act && act->op ? act : NULL, next, next_bytes);
    return 1;
}

void dcz_gemm_f32_strided(const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a, size_t lda, size_t ka,
                          const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc,
                          const void *next, size_t next_bytes)
{
    if (!dcz_gemm_f32_strided_isa(best(), act, m, n, k, a, lda, ka, b, ldb, bias_m, bias_n, c, ldc, next, next_bytes))
        dcz_gemm_f32_strided_ref(act, m, n, k, a, lda, ka, b, ldb, bias_m, bias_n, c, ldc);
}

int dcz_gemm_f32_act_isa(dcz_isa isa, const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a,
                         size_t lda, const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c,
                         size_t ldc)
{
    return dcz_gemm_f32_strided_isa(isa, act, m, n, k, a, lda, 1, b, ldb, bias_m, bias_n, c, ldc, NULL, 0);
}

int dcz_gemm_f32_isa(dcz_isa isa, size_t m, size_t n, uint32_t k, const float *a, size_t lda, const float *b,
                     size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc)
{
    return dcz_gemm_f32_act_isa(isa, NULL, m, n, k, a, lda, b, ldb, bias_m, bias_n, c, ldc);
}

void dcz_gemm_f32_act_ref(const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a, size_t lda,
                          const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc)
{
    dcz_gemm_f32_strided_ref(act, m, n, k, a, lda, 1, b, ldb, bias_m, bias_n, c, ldc);
}

void dcz_gemm_f32_act(const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a, size_t lda,
                      const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc)
{
    dcz_gemm_f32_strided(act, m, n, k, a, lda, 1, b, ldb, bias_m, bias_n, c, ldc, NULL, 0);
}

void dcz_gemm_f32(size_t m, size_t n, uint32_t k, const float *a, size_t lda, const float *b, size_t ldb,
                  const float *bias_m, const float *bias_n, float *c, size_t ldc)
{
    dcz_gemm_f32_act(NULL, m, n, k, a, lda, b, ldb, bias_m, bias_n, c, ldc);
}

const char *dcz_gemm_f32_variant(void)
{
    switch (best()) {
    case DCZ_ISA_AVX512: return "avx512";
    case DCZ_ISA_AVX2: return "avx2";
    case DCZ_ISA_NEON: return "neon";
    default: return NULL;
    }
}
