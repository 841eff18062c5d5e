/* kernels_simd.c: the vectorized sparse matrix kernels on model.h's
 * execution form (one-byte column steps, fillers, codebook indices or fp32
 * values), and the entry points that pick one at run time.
 *
 *   spmv (batch 1), x86: each chunk of entries of a row is loaded as a
 *     vector of steps; an in-register prefix sum (shift-and-add, log2 lanes
 *     steps) plus the row's cursor gives the columns, a compare gives the
 *     filler mask, and the inputs are gathered. Codebook weights come from a
 *     register permute when the codebook fits one or two registers, else
 *     from a gather of the codebook. AVX-512 handles 16 entries a step,
 *     AVX2 8.
 *   spmm (batch N): a tile of DCZ_SPMM_TILE samples of x is transposed into
 *     scratch (cols, tile), then each entry is decoded once and adds w times
 *     the row of the tile at its column to the tile's accumulators: one
 *     vector FMA over the samples, no gather.
 *
 * Summation order. A sample must give the same bits whatever batch it runs
 * in (tests/unit/test_static.c runs a batch whole and in chunks, where a
 * chunk of one takes the spmv path), so spmv and spmm of one ISA family sum
 * in the same order: on x86, entry j of a row (fillers counted) goes to
 * partial sum j mod 8 by a fused multiply-add, the partials are added as
 * ((p0+p4)+(p2+p6)) + ((p1+p5)+(p3+p7)), then the bias (or 0). On aarch64
 * there is no gather, spmv is the reference and the NEON spmm sums in the
 * reference's order (bias first, then unfused w*x in entry order), which
 * is the same bits. The order differs from the x86 references, so there the
 * results agree with them within rounding, not bit for bit.
 *
 * Dispatch (dcz_spmv, dcz_spmm): x86 with AVX-512F/BW/VL: __avx512; with
 * AVX2 and FMA: __avx2; aarch64: spmm__neon; otherwise, or when a variant
 * declines (more than 2^31 - 1 columns, the gathers' signed index; spmm
 * without scratch), the _ref kernels. The x86 variants are compiled with
 * per-function target attributes, so libdcz needs no global -m flags.
 *
 * Checked by tests/unit/test_simd.c: every variant the machine runs against
 * the references over an edge-case grid, and spmv against spmm bit for bit.
 */
#include <string.h>

#include "runtime/model.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DCZ_X86 1
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

#define SPMM_TILE DCZ_SPMM_TILE

uint64_t dcz_spmm_scratch_floats(uint32_t cols)
{
    return (uint64_t)cols * SPMM_TILE;
}

int dcz_isa_supported(dcz_isa isa)
{
    switch (isa) {
    case DCZ_ISA_REF:
        return 1;
#ifdef DCZ_X86
    case DCZ_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case DCZ_ISA_AVX512: /* its kernels also call AVX2 and FMA helpers */
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
               __builtin_cpu_supports("fma");
#endif
#ifdef DCZ_NEON
    case DCZ_ISA_NEON:
        return 1;
#endif
    default:
        return 0;
    }
}

/* The best family this machine runs. */
static dcz_isa best_isa(void)
{
    if (dcz_isa_supported(DCZ_ISA_AVX512)) return DCZ_ISA_AVX512;
    if (dcz_isa_supported(DCZ_ISA_AVX2)) return DCZ_ISA_AVX2;
    if (dcz_isa_supported(DCZ_ISA_NEON)) return DCZ_ISA_NEON;
    return DCZ_ISA_REF;
}

/* scratch (cols, SPMM_TILE) = samples b0 .. b0 + nb - 1 of x (batch, cols),
 * transposed; lanes nb .. SPMM_TILE - 1 are 0. */
static void fill_tile(const float *x, uint32_t cols, size_t b0, size_t nb, float *scratch)
{
    for (uint32_t c = 0; c < cols; c++) {
        float *t = scratch + (size_t)c * SPMM_TILE;
        size_t b = 0;
        for (; b < nb; b++) t[b] = x[(b0 + b) * cols + c];
        for (; b < SPMM_TILE; b++) t[b] = 0.0f;
    }
}

/* ---- x86 -------------------------------------------------------------------- */
#ifdef DCZ_X86

/* The fixed order of the eight partial sums (see the header), over the
 * lanes of a vector and, in spmm, over eight vectors lane by lane. */
__attribute__((target("avx2,fma")))
static float reduce8__avx2(__m256 p)
{
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(p), _mm256_extractf128_ps(p, 1)); /* p_i + p_i+4 */
    __m128 r = _mm_add_ps(q, _mm_movehl_ps(q, q));                                /* q_i + q_i+2 */
    return _mm_cvtss_f32(_mm_add_ss(r, _mm_shuffle_ps(r, r, 1)));                 /* r_0 + r_1 */
}

/* A codebook of up to 8 floats in one register, the rest 0. */
__attribute__((target("avx2,fma")))
static __m256 codebook8__avx2(const dcz_sparse *s)
{
    float cb[8] = { 0 };
    if (s->idx && s->k <= 8) memcpy(cb, s->codebook, s->k * sizeof(float));
    return _mm256_loadu_ps(cb);
}

/* Adds 8 entries starting at step, idx or val (all readable) to acc;
 * live: the lanes that are entries; base: the row's cursor in every lane. */
__attribute__((target("avx2,fma")))
static __m256 chunk8__avx2(const dcz_sparse *s, __m256 cbv, const uint8_t *step,
                           const uint8_t *idx, const float *val, __m256i live,
                           const float *x, __m256i *base, __m256 acc)
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i st = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)step));
    st = _mm256_and_si256(st, live);
    /* inclusive prefix sum of 8 lanes: within each 128-bit half, then the
     * low half's total added to the high half */
    __m256i c = _mm256_add_epi32(st, _mm256_slli_si256(st, 4));
    c = _mm256_add_epi32(c, _mm256_slli_si256(c, 8));
    __m256i lo_total = _mm256_permutevar8x32_epi32(c, _mm256_set1_epi32(3));
    c = _mm256_add_epi32(c, _mm256_blend_epi32(zero, lo_total, 0xF0));
    c = _mm256_add_epi32(c, *base);
    *base = _mm256_permutevar8x32_epi32(c, _mm256_set1_epi32(7));
    __m256i real = _mm256_andnot_si256(_mm256_cmpeq_epi32(st, _mm256_set1_epi32(DCZ_STEP_FILLER)), live);
    __m256 realf = _mm256_castsi256_ps(real);
    __m256 w;
    if (val) {
        w = _mm256_loadu_ps(val);
    } else {
        __m256i ix = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)idx));
        w = s->k <= 8 ? _mm256_permutevar8x32_ps(cbv, ix)
                      : _mm256_mask_i32gather_ps(_mm256_setzero_ps(), s->codebook, ix, realf, 4);
    }
    __m256 xv = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), x, c, realf, 4);
    /* fillers and lanes past the row leave the partials as they are */
    return _mm256_blendv_ps(acc, _mm256_fmadd_ps(w, xv, acc), realf);
}

__attribute__((target("avx2,fma")))
int dcz_spmv__avx2(const dcz_sparse *s, const float *bias, const float *x, float *y)
{
    if (s->cols > INT32_MAX) return 0;
    const __m256 cbv = codebook8__avx2(s);
    const __m256i all = _mm256_set1_epi32(-1);
    for (uint32_t r = 0; r < s->rows; r++) {
        uint32_t e = s->row_ptr[r];
        const uint32_t end = s->row_ptr[r + 1];
        __m256 acc = _mm256_setzero_ps();
        __m256i base = _mm256_setzero_si256();
        for (; end - e >= 8; e += 8)
            acc = chunk8__avx2(s, cbv, s->step + e, s->idx ? s->idx + e : NULL,
                               s->val ? s->val + e : NULL, all, x, &base, acc);
        if (e < end) {
            /* the tail through copies padded to 8 lanes */
            const uint32_t n = end - e;
            uint8_t st[8] = { 0 }, ix[8] = { 0 };
            float v[8] = { 0 };
            int32_t lanes[8];
            for (int i = 0; i < 8; i++) lanes[i] = (uint32_t)i < n ? -1 : 0;
            memcpy(st, s->step + e, n);
            if (s->idx) memcpy(ix, s->idx + e, n);
            if (s->val) memcpy(v, s->val + e, n * sizeof(float));
            acc = chunk8__avx2(s, cbv, st, ix, s->val ? v : NULL,
                               _mm256_loadu_si256((const __m256i *)lanes), x, &base, acc);
        }
        y[r] = reduce8__avx2(acc) + (bias ? bias[r] : 0.0f);
    }
    return 1;
}

/* The eight partial sums of one row over the 8 samples at lane offset h of
 * a tile (cols, SPMM_TILE): acc[j] += w(e) * tile[col(e)][h..h+7] for the
 * entries e of partial j. */
__attribute__((target("avx2,fma")))
static void row_tile8__avx2(const dcz_sparse *s, uint32_t r, const float *tile, __m256 acc[8])
{
    const uint32_t start = s->row_ptr[r], end = s->row_ptr[r + 1];
    uint32_t col = 0;
    for (uint32_t e = start; e < end; e++) {
        col += s->step[e];
        if (s->step[e] == DCZ_STEP_FILLER) continue;
        const __m256 w = _mm256_set1_ps(dcz_sparse_weight(s, e));
        const uint32_t j = (e - start) & 7;
        acc[j] = _mm256_fmadd_ps(w, _mm256_loadu_ps(tile + (size_t)col * SPMM_TILE), acc[j]);
    }
}

/* y (batch, rows) lanes b .. b + n - 1 of the reduced partials plus bias. */
__attribute__((target("avx2,fma")))
static void store_reduced8__avx2(const __m256 acc[8], const float *bias, uint32_t r,
                                 uint32_t rows, size_t b, size_t n, float *y)
{
    __m256 q0 = _mm256_add_ps(acc[0], acc[4]), q1 = _mm256_add_ps(acc[1], acc[5]);
    __m256 q2 = _mm256_add_ps(acc[2], acc[6]), q3 = _mm256_add_ps(acc[3], acc[7]);
    __m256 t = _mm256_add_ps(_mm256_add_ps(q0, q2), _mm256_add_ps(q1, q3));
    t = _mm256_add_ps(t, _mm256_set1_ps(bias ? bias[r] : 0.0f));
    float out[8];
    _mm256_storeu_ps(out, t);
    for (size_t i = 0; i < n; i++) y[(b + i) * rows + r] = out[i];
}

__attribute__((target("avx2,fma")))
int dcz_spmm__avx2(const dcz_sparse *s, const float *bias, const float *x, size_t batch,
                   float *y, float *scratch)
{
    if (s->cols > INT32_MAX || !scratch) return 0;
    for (size_t b0 = 0; b0 < batch; b0 += SPMM_TILE) {
        const size_t nb = batch - b0 < SPMM_TILE ? batch - b0 : SPMM_TILE;
        fill_tile(x, s->cols, b0, nb, scratch);
        for (size_t h = 0; h < nb; h += 8) {
            for (uint32_t r = 0; r < s->rows; r++) {
                __m256 acc[8];
                for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
                row_tile8__avx2(s, r, scratch + h, acc);
                store_reduced8__avx2(acc, bias, r, s->rows, b0 + h, nb - h < 8 ? nb - h : 8, y);
            }
        }
    }
    return 1;
}

/* A codebook of up to 32 floats in two registers, the rest 0. */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void codebook32__avx512(const dcz_sparse *s, __m512 *lo, __m512 *hi)
{
    float cb[32] = { 0 };
    if (s->idx && s->k <= 32) memcpy(cb, s->codebook, s->k * sizeof(float));
    *lo = _mm512_loadu_ps(cb);
    *hi = _mm512_loadu_ps(cb + 16);
}

__attribute__((target("avx512f,avx512bw,avx512vl")))
int dcz_spmv__avx512(const dcz_sparse *s, const float *bias, const float *x, float *y)
{
    if (s->cols > INT32_MAX) return 0;
    __m512 cb_lo, cb_hi;
    codebook32__avx512(s, &cb_lo, &cb_hi);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i filler = _mm512_set1_epi32(DCZ_STEP_FILLER), last = _mm512_set1_epi32(15);
    for (uint32_t r = 0; r < s->rows; r++) {
        const uint32_t end = s->row_ptr[r + 1];
        __m256 acc = _mm256_setzero_ps();
        __m512i base = zero;
        for (uint32_t e = s->row_ptr[r]; e < end; e += end - e >= 16 ? 16 : end - e) {
            const __mmask16 live = end - e >= 16 ? 0xFFFF : (__mmask16)((1u << (end - e)) - 1);
            const __m512i st = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(live, s->step + e));
            /* inclusive prefix sum: lane i adds lane i - 1, i - 2, i - 4, i - 8 */
            __m512i c = _mm512_add_epi32(st, _mm512_alignr_epi32(st, zero, 15));
            c = _mm512_add_epi32(c, _mm512_alignr_epi32(c, zero, 14));
            c = _mm512_add_epi32(c, _mm512_alignr_epi32(c, zero, 12));
            c = _mm512_add_epi32(c, _mm512_alignr_epi32(c, zero, 8));
            c = _mm512_add_epi32(c, base);
            base = _mm512_permutexvar_epi32(last, c);
            const __mmask16 real = _mm512_mask_cmpneq_epi32_mask(live, st, filler);
            __m512 w;
            if (s->val) {
                w = _mm512_maskz_loadu_ps(real, s->val + e);
            } else {
                const __m512i ix = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(live, s->idx + e));
                if (s->k <= 16) w = _mm512_permutexvar_ps(ix, cb_lo);
                else if (s->k <= 32) w = _mm512_permutex2var_ps(cb_lo, ix, cb_hi);
                else w = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), real, ix, s->codebook, 4);
            }
            const __m512 xv = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), real, c, x, 4);
            /* entries e .. e+7, then e+8 .. e+15, into partials 0 .. 7 */
            const __m256 w_hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(w), 1));
            const __m256 x_hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xv), 1));
            acc = _mm256_mask3_fmadd_ps(_mm512_castps512_ps256(w), _mm512_castps512_ps256(xv), acc,
                                        (__mmask8)real);
            acc = _mm256_mask3_fmadd_ps(w_hi, x_hi, acc, (__mmask8)(real >> 8));
        }
        y[r] = reduce8__avx2(acc) + (bias ? bias[r] : 0.0f);
    }
    return 1;
}

__attribute__((target("avx512f,avx512bw,avx512vl")))
int dcz_spmm__avx512(const dcz_sparse *s, const float *bias, const float *x, size_t batch,
                     float *y, float *scratch)
{
    if (s->cols > INT32_MAX || !scratch) return 0;
    for (size_t b0 = 0; b0 < batch; b0 += SPMM_TILE) {
        const size_t nb = batch - b0 < SPMM_TILE ? batch - b0 : SPMM_TILE;
        fill_tile(x, s->cols, b0, nb, scratch);
        for (uint32_t r = 0; r < s->rows; r++) {
            const uint32_t start = s->row_ptr[r], end = s->row_ptr[r + 1];
            __m512 acc[8];
            for (int j = 0; j < 8; j++) acc[j] = _mm512_setzero_ps();
            uint32_t col = 0;
            for (uint32_t e = start; e < end; e++) {
                col += s->step[e];
                if (s->step[e] == DCZ_STEP_FILLER) continue;
                const __m512 w = _mm512_set1_ps(dcz_sparse_weight(s, e));
                const uint32_t j = (e - start) & 7;
                acc[j] = _mm512_fmadd_ps(w, _mm512_loadu_ps(scratch + (size_t)col * SPMM_TILE), acc[j]);
            }
            __m512 q0 = _mm512_add_ps(acc[0], acc[4]), q1 = _mm512_add_ps(acc[1], acc[5]);
            __m512 q2 = _mm512_add_ps(acc[2], acc[6]), q3 = _mm512_add_ps(acc[3], acc[7]);
            __m512 t = _mm512_add_ps(_mm512_add_ps(q0, q2), _mm512_add_ps(q1, q3));
            t = _mm512_add_ps(t, _mm512_set1_ps(bias ? bias[r] : 0.0f));
            float out[SPMM_TILE];
            _mm512_storeu_ps(out, t);
            for (size_t i = 0; i < nb; i++) y[(b0 + i) * s->rows + r] = out[i];
        }
    }
    return 1;
}

#endif /* DCZ_X86 */

/* ---- aarch64 ---------------------------------------------------------------- */
#ifdef DCZ_NEON

/* The reference's order: bias (or 0) first, then w * x rounded and added
 * entry by entry, for 16 samples in four registers. */
int dcz_spmm__neon(const dcz_sparse *s, const float *bias, const float *x, size_t batch,
                   float *y, float *scratch)
{
    if (!scratch) return 0;
    for (size_t b0 = 0; b0 < batch; b0 += SPMM_TILE) {
        const size_t nb = batch - b0 < SPMM_TILE ? batch - b0 : SPMM_TILE;
        fill_tile(x, s->cols, b0, nb, scratch);
        for (uint32_t r = 0; r < s->rows; r++) {
            const float32x4_t b = vdupq_n_f32(bias ? bias[r] : 0.0f);
            float32x4_t a0 = b, a1 = b, a2 = b, a3 = b;
            uint32_t col = 0;
            for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
                col += s->step[e];
                if (s->step[e] == DCZ_STEP_FILLER) continue;
                const float32x4_t w = vdupq_n_f32(dcz_sparse_weight(s, e));
                const float *t = scratch + (size_t)col * SPMM_TILE;
                a0 = vaddq_f32(a0, vmulq_f32(w, vld1q_f32(t)));
                a1 = vaddq_f32(a1, vmulq_f32(w, vld1q_f32(t + 4)));
                a2 = vaddq_f32(a2, vmulq_f32(w, vld1q_f32(t + 8)));
                a3 = vaddq_f32(a3, vmulq_f32(w, vld1q_f32(t + 12)));
            }
            float out[SPMM_TILE];
            vst1q_f32(out, a0);
            vst1q_f32(out + 4, a1);
            vst1q_f32(out + 8, a2);
            vst1q_f32(out + 12, a3);
            for (size_t i = 0; i < nb; i++) y[(b0 + i) * s->rows + r] = out[i];
        }
    }
    return 1;
}

#endif /* DCZ_NEON */

/* ---- dispatch --------------------------------------------------------------- */

void dcz_spmv(const dcz_sparse *s, const float *bias, const float *x, float *y)
{
    int done = 0;
    switch (best_isa()) {
#ifdef DCZ_X86
    case DCZ_ISA_AVX512: done = dcz_spmv__avx512(s, bias, x, y); break;
    case DCZ_ISA_AVX2: done = dcz_spmv__avx2(s, bias, x, y); break;
#endif
    default: break; /* NEON: no gather; the reference is its order */
    }
    if (!done) dcz_spmv_ref(s, bias, x, y);
}

void dcz_spmm(const dcz_sparse *s, const float *bias, const float *x, size_t batch, float *y,
              float *scratch)
{
    int done = 0;
    switch (best_isa()) {
#ifdef DCZ_X86
    case DCZ_ISA_AVX512: done = dcz_spmm__avx512(s, bias, x, batch, y, scratch); break;
    case DCZ_ISA_AVX2: done = dcz_spmm__avx2(s, bias, x, batch, y, scratch); break;
#endif
#ifdef DCZ_NEON
    case DCZ_ISA_NEON: done = dcz_spmm__neon(s, bias, x, batch, y, scratch); break;
#endif
    default: break;
    }
    if (!done) dcz_spmm_ref(s, bias, x, batch, y);
}
