/* qshift_requant.c: the integer shift form's convolution with the
 * requantization of each sum to the output's scale fused in
 * (dcz_qconv2d_shift_requant), on AVX-512 VNNI: the planes as the kernel of
 * kernels_qshift.c computes them, requantized by vectors or by rows, with
 * a 2x2 max pool fused in where the layer takes one (never a depthwise
 * layer on the kernels below); and the depthwise forms' kernels by byte
 * permutes (VBMI) and by int16 pairs (VNNI; qshift_form.c describes both
 * forms), which requantize in registers. Apart from the kernels on accumulators,
 * which the reference, the AMX tiles and the tests share: these write the
 * next layer's dcz_q activations straight, the bits of dcz_requant8 over
 * the accumulators.
 *
 * Checked by tests/unit/test_qkernels.c (against the accumulators
 * requantized, with the fused activation and the fused pool, bit for bit)
 * and tests/unit/test_calibrate.c (models).
 */
#include <string.h>

#include "runtime/cpu/q8/qrequant.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/model.h"
#include "runtime/threads.h"

#if DCZ_BUILD_Q8_X86
#include <immintrin.h>
#define DCZ_X86 1
#endif

#include "runtime/cpu/shift_split.h"
#ifdef DCZ_X86
#include "runtime/cpu/q8/rq16_x86.h"
#endif

#ifdef DCZ_X86
/* as kernels_qshift.c's */
#define VNNI_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/* y row (n) = the requantization of bias + (t row + add modulo 2^32), 8
 * at a time: as dcz_requant8 (|bias + t| < 2^31: the signed 32 x 32 multiply; k <= 62:
 * the rounding half and an arithmetic shift, a floor) */
VNNI_TGT static void requant_row__vnni(const int32_t *t, int32_t add, int64_t bias, int32_t mult, unsigned k,
                                       int32_t qlo, int32_t qhi, uint32_t n, dcz_q *y)
{
    const __m256i c = _mm256_set1_epi32(add);
    const __m512i b = _mm512_set1_epi64(bias), m = _mm512_set1_epi64(mult);
    const __m512i half = _mm512_set1_epi64(k ? (int64_t)1 << (k - 1) : 0);
    const __m512i hi = _mm512_set1_epi64(qhi), lo = _mm512_set1_epi64(qlo);
    const __m128i count = _mm_cvtsi32_si128((int)k);
    for (uint32_t i = 0; i < n; i += 8) {
        const __mmask8 km = (__mmask8)(n - i >= 8 ? 0xFF : (1u << (n - i)) - 1);
        const __m256i tc = _mm256_add_epi32(_mm256_maskz_loadu_epi32(km, t + i), c);
        const __m512i a = _mm512_add_epi64(_mm512_cvtepi32_epi64(tc), b);
        __m512i v = _mm512_sra_epi64(_mm512_add_epi64(_mm512_mul_epi32(a, m), half), count);
        v = _mm512_min_epi64(_mm512_max_epi64(v, lo), hi);
        _mm_mask_storeu_epi16(y + i, km, _mm512_cvtepi64_epi16(v));
    }
}

/* The requantization of a's 16 lanes (bias added) as 32-bit lanes: the
 * even and odd lanes' products P in 64 bits; in mode 0 (k < 32) P plus
 * half shifted by k and clamped in 64 bits; in mode 1 (k = 32) the high
 * halves of P plus half taken, shifted by k - 32 and clamped in 32 bits
 * (floor(P / 2^k) = floor(floor(P / 2^32) / 2^(k - 32)), and |P| < 2^62
 * leaves that within 2^30); in mode 2 (k > 32) the high halves of P
 * themselves, gathered by one permute, plus half / 2^32 = 2^(k - 33) (the
 * half adds to the high half alone). The high halves save a shift and a
 * clamp of 64-bit lanes: int8 batch 1 (medians of three alternated runs)
 * MobileNetV2-style 268.6 -> 259.6 us, ResNet-style 102.6 -> 99.5,
 * conv-heavy CNN 172.4 -> 168.5. Mode 2 saves two instructions more.
 * Mode 3 is mode 2 for a channel of shift k <= 32 that has a pre-shift p
 * (dcz_requant.pre; k + p = 33): a shifted left by p first, the same bits.
 * A channel of mode 0 took 64-bit lanes one vector at a time, where modes
 * 1 to 3 narrow two vectors together: int8 MobileNetV2 (torchvision, 90%
 * pruned by quads, 4-bit), one core of an AMD EPYC (Zen 4), least of four
 * alternated medians, 2266 -> 2071 us, EfficientNet-B0 3581 -> 3440,
 * ShuffleNetV2 968 -> 901, MobileNetV3-Small 789 -> 753, RegNetX-400MF
 * 1836 -> 1803. */
#define RQ_MODE(k, pre) ((pre) ? 3 : (k) > 32 ? 2 : (k) == 32 ? 1 : 0)
typedef struct rq_consts { __m512i m, half, lo, hi, half16; __m128i count, pre; int late; } rq_consts;

VNNI_TGT static inline __attribute__((always_inline)) rq_consts rq_setup(const int MODE, int32_t mult, unsigned k,
                                                                          unsigned pre, int32_t qlo, int32_t qhi)
{
    rq_consts c;
    if (MODE == 3) k += pre;   /* 33 */
    c.m = _mm512_set1_epi64(mult);
    c.half = MODE >= 2 ? _mm512_set1_epi32(1 << (k - 33)) : _mm512_set1_epi64(k ? (int64_t)1 << (k - 1) : 0);
    c.hi = MODE ? _mm512_set1_epi32(qhi) : _mm512_set1_epi64(qhi);
    c.lo = MODE ? _mm512_set1_epi32(qlo) : _mm512_set1_epi64(qlo);
    c.count = _mm_cvtsi32_si128((int)(MODE ? k - 32 : k));
    c.pre = _mm_cvtsi32_si128((int)(MODE == 3 ? pre : 0));
    /* modes 2 and 3 round and shift two vectors after packing them (see
     * requant_pair) where the shift count is 8 or less */
    c.late = MODE >= 2 && k - 32 <= 8;
    c.half16 = _mm512_set1_epi16((int16_t)(c.late ? 1 << (k - 33) : 0));
    return c;
}

/* modes 1 to 3: the requantized lanes before the clamp, in 32 bits (modes 2
 * and 3 by dcz_rq16_hi, rq16_x86.h) */
VNNI_TGT static inline __attribute__((always_inline)) __m512i requant16_wide(const int MODE, __m512i a,
                                                                             const rq_consts *c)
{
    const __m512i m = c->m, half = c->half;
    if (MODE == 3) a = _mm512_sll_epi32(a, c->pre);
    if (MODE >= 2) return dcz_rq16_hi(a, m, half, c->count);
    const __m512i ev = _mm512_add_epi64(_mm512_mul_epi32(a, m), half);
    const __m512i od = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(a, 32), m), half);
    const __m512i r = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(ev, 32), od);
    return _mm512_sra_epi32(r, c->count);
}

/* Two vectors' lanes requantized, packed to 16 bits with saturation and
 * put in order, before the clamp. In modes 2 and 3 with a shift count of 8
 * or less, the high halves are packed first and the half added and the
 * shift made in 16 bits, saturating: a value the pack saturates, or the
 * add, ends at 2^(15 - count) - 1 >= 127 or -2^(15 - count) <= -128 where
 * the 32-bit path's ends beyond them, so once clamped within +-127 the
 * same; two instructions fewer for 32 values. */
VNNI_TGT static inline __attribute__((always_inline)) __m512i requant_pair(const int MODE, __m512i a0, __m512i a1,
                                                                           const rq_consts *c)
{
    const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    if (MODE >= 2 && c->late) {
        if (MODE == 3) {
            a0 = _mm512_sll_epi32(a0, c->pre);
            a1 = _mm512_sll_epi32(a1, c->pre);
        }
        const __m512i h = _mm512_packs_epi32(dcz_rq16_high(a0, c->m), dcz_rq16_high(a1, c->m));
        return _mm512_permutexvar_epi64(order, _mm512_sra_epi16(_mm512_adds_epi16(h, c->half16), c->count));
    }
    return _mm512_permutexvar_epi64(order, _mm512_packs_epi32(requant16_wide(MODE, a0, c), requant16_wide(MODE, a1, c)));
}

VNNI_TGT static inline __attribute__((always_inline)) __m512i requant16(const int MODE, __m512i a, const rq_consts *c)
{
    const __m512i m = c->m, half = c->half, lo = c->lo, hi = c->hi;
    const __m128i count = c->count;
    if (MODE) return _mm512_min_epi32(_mm512_max_epi32(requant16_wide(MODE, a, c), lo), hi);
    __m512i ev = _mm512_add_epi64(_mm512_mul_epi32(a, m), half);
    __m512i od = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(a, 32), m), half);
    ev = _mm512_min_epi64(_mm512_max_epi64(_mm512_sra_epi64(ev, count), lo), hi);
    od = _mm512_min_epi64(_mm512_max_epi64(_mm512_sra_epi64(od, count), lo), hi);
    return _mm512_mask_blend_epi32((__mmask16)0xAAAA, ev, _mm512_slli_epi64(od, 32));
}

VNNI_TGT static inline __attribute__((always_inline)) void requant_vectors(const int MODE, const int32_t *t,
                                                                           const uint16_t *keep, size_t nv, size_t full,
                                                                           int64_t bias, int32_t mult, unsigned k,
                                                                           unsigned pre, int32_t qlo, int32_t qhi,
                                                                           size_t plane, dcz_q *y)
{
    const __m512i b = _mm512_set1_epi32((int32_t)(uint32_t)(uint64_t)bias);
    const rq_consts c = rq_setup(MODE, mult, k, pre, qlo, qhi);
    const __m512i lo16 = _mm512_set1_epi16((int16_t)qlo), hi16 = _mm512_set1_epi16((int16_t)qhi);
    size_t at = 0, j = 0;
    /* the leading whole vectors (a plane without columns to drop: every
     * one but the last) two at a time, with no test a vector: int8
     * MobileNetV3-Small (pruned by blocks of four input channels, batch
     * 1), one core of an AMD EPYC (Zen 5), dcz bench medians of twelve
     * alternated rounds, 0.979 of the time */
    if (MODE)
        for (; j + 2 <= full; j += 2, at += 32) {
            const __m512i p = requant_pair(MODE, _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + 16 * j)), b),
                                           _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + 16 * j + 16)), b), &c);
            _mm512_storeu_si512((void *)(y + at), _mm512_min_epi16(_mm512_max_epi16(p, lo16), hi16));
        }
    for (; j < nv; j++) {
        if (MODE && j + 1 < nv && (keep[j] & keep[j + 1]) == 0xFFFF && at + 32 <= plane) {
            /* two whole vectors: packed to 16 bits with saturation, then
             * clamped there (the same values: [qlo, qhi] lies within 16
             * bits), the 128-bit lanes put back in order; four
             * instructions for the two where each took four (two of them
             * vpmovdw's), on a CPU whose 512-bit work has two ports:
             * 1 x 1 16 -> 96 over 28 x 28, one core of a Xeon, 18.8 ->
             * 17.8 us */
            const __m512i p = requant_pair(MODE, _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + 16 * j)), b),
                                           _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + 16 * j + 16)), b), &c);
            _mm512_storeu_si512((void *)(y + at), _mm512_min_epi16(_mm512_max_epi16(p, lo16), hi16));
            at += 32;
            j++;
            continue;
        }
        __m512i a = _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + 16 * j)), b);
        if (keep[j] != 0xFFFF) a = _mm512_maskz_compress_epi32((__mmask16)keep[j], a);
        const __m256i r = _mm512_cvtepi32_epi16(requant16(MODE, a, &c));
        const unsigned n = (unsigned)__builtin_popcount(keep[j]);
        /* whole vectors inside the plane: the lanes past n are written
         * over by the next vector's */
        if (at + 16 <= plane) _mm256_storeu_si256((void *)(y + at), r);
        else _mm256_mask_storeu_epi16(y + at, (__mmask16)((1u << n) - 1), r);
        at += n;
    }
}

/* Whether channel c of f holds no weight: its sums are its bias (its
 * corr, -128 times the sum of its weights, is 0), which requant_fill
 * writes, so the kernels on accumulators leave its sums unwritten where its
 * whole block holds none (DCZ_QPLANES_SPARE). Pruned networks hold many
 * such channels: 53% of the outputs of torchvision's MobileNetV2 pruned to
 * 90% by blocks of four input channels, 74% of its 16 -> 96 expansion's. */
static inline int qshift_none(const dcz_qshift *f, uint32_t c) { return f->none[c]; }

/* y (n cells) = the requantization of the sum a0 alone, clamped to lo ..
 * hi: the outputs of a channel that holds no weight (its sums are its
 * bias), dcz_qshift_none_value written by vectors; nothing where skip
 * (the layer leaves those channels to the next: dcz_qconv2d_shift_requant) */
VNNI_TGT static void requant_fill(int skip, int32_t a0, int32_t mult, uint8_t k, int32_t lo, int32_t hi, size_t n,
                                  dcz_q *y)
{
    if (skip) return;
    const __m512i v = _mm512_set1_epi16(dcz_qshift_none_value(a0, mult, k, lo, hi));
    size_t i = 0;
    for (; i + 32 <= n; i += 32) _mm512_storeu_si512((void *)(y + i), v);
    if (i < n) _mm512_mask_storeu_epi16(y + i, (__mmask32)((1u << (n - i)) - 1), v);
}

/* y (channels output planes of plane cells, one after the other) = the
 * requantization of bias + add + t (planes as computed, tstride cells
 * apart, nv vectors each; bias and add NULL for none; channel c's
 * multiplier and shift mult[c], shift[c]), 16 at a time: each vector's
 * lanes that keep[j] says are output cells, packed by a compress where some lane is
 * not one, and stored after those of the vectors before it, whole (the
 * next vector writes over the lanes past them) but at the plane's end.
 * |bias + t| < 2^31, so the bias is added in 32 bits (modulo 2^32: a
 * bias that also holds the corr the AMX tiles leave out); the even and
 * the odd lanes are then multiplied, rounded, shifted and clamped in 64 bits as
 * requant_row__vnni does (the same integers), and narrowed together. One
 * pass over a plane with the channel's constants made once, rather than a
 * call per row of 7 to 28 cells: int8 at batch 1, one core of an AMD EPYC,
 * dcz bench medians of three alternated runs, MobileNetV2-style 307 -> 269
 * us, ResNet-style 110 -> 102, conv-heavy CNN 183 -> 172. A compress and a
 * masked store on every vector instead took twice as long as the rows.
 * The channels in one call, rather than a call a channel: int8
 * MobileNetV2-style (planes of 16 to 784 cells, up to 384 channels), one
 * core of a Xeon, dcz_run medians of alternated runs, batch 64 8.66 ->
 * 8.25 ms, batch 1 131.9 -> 126.1 us (ResNet-style unchanged). Channel c
 * is f's c0 + c; one that holds no weight is filled with its requantized
 * bias, its sums not read (qshift_none), or left unwritten with skip. */
VNNI_TGT static void requant_planes__vnni(const int32_t *t, size_t tstride, const uint16_t *keep, size_t nv,
                                          const int64_t *bias, const int32_t *add, const int32_t *mult,
                                          const uint8_t *shift, const uint8_t *pre, uint32_t channels, int32_t qlo,
                                          int32_t qhi, size_t plane, const dcz_qshift *f, uint32_t c0, int skip,
                                          dcz_q *y)
{
    size_t full = 0;
    while (full < nv && keep[full] == 0xFFFF && 16 * (full + 1) <= plane) full++;
    for (uint32_t c = 0; c < channels; c++) {
        const int64_t b = (bias ? bias[c] : 0) + (add ? add[c] : 0);
        const unsigned k = shift[c], p = pre ? pre[c] : 0;
        const int32_t *tc = t + c * tstride;
        dcz_q *yc = y + c * plane;
        if (qshift_none(f, c0 + c)) {
            requant_fill(skip, (int32_t)(uint32_t)(uint64_t)b, mult[c], (uint8_t)k, qlo, qhi, plane, yc);
            continue;
        }
        switch (RQ_MODE(k, p)) {
        case 3: requant_vectors(3, tc, keep, nv, full, b, mult[c], k, p, qlo, qhi, plane, yc); break;
        case 2: requant_vectors(2, tc, keep, nv, full, b, mult[c], k, 0, qlo, qhi, plane, yc); break;
        case 1: requant_vectors(1, tc, keep, nv, full, b, mult[c], k, 0, qlo, qhi, plane, yc); break;
        default: requant_vectors(0, tc, keep, nv, full, b, mult[c], k, 0, qlo, qhi, plane, yc); break;
        }
    }
}

/* The depthwise form (qshift_form.c) on AVX-512 VBMI and VNNI */
#define QDW_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni")))

/* One channel's byte plane dst by the maps (nv of them) from its plane
 * src, or its value kv where fixed; LOOK: each value looked up in t (its
 * entries + 128, 128 entries a register pair, bit 7 choosing), the lanes
 * outside the plane 128 */
QDW_TGT static inline __attribute__((always_inline)) void
qdw_plane_maps__vbmi(const int LOOK, const dcz_qdw_vmap *maps, size_t nv, const dcz_q *src, int fixed, dcz_q kv,
                     const __m512i *t, uint8_t *dst)
{
    const __m512i top512 = _mm512_set1_epi8((char)0x80), kvv = _mm512_set1_epi16(kv);
    for (size_t v = 0; v < nv; v++) {
        const dcz_qdw_vmap *m = maps + v;
        const dcz_q *at = src + m->first;
        const __m512i idx = _mm512_loadu_si512((const void *)m->idx);
        const __m512i lo = fixed ? kvv : _mm512_maskz_loadu_epi16((__mmask32)m->load, at);
        const __m512i hi = fixed ? kvv : _mm512_maskz_loadu_epi16((__mmask32)(m->load >> 32), at + 32);
        if (!LOOK) {
            const __m512i b = _mm512_maskz_permutex2var_epi8((__mmask64)m->inside, lo, idx, hi);
            _mm512_storeu_si512((void *)(dst + 64 * v), _mm512_xor_si512(b, top512));
            continue;
        }
        const __m512i b = _mm512_permutex2var_epi8(lo, idx, hi);
        const __m512i r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(b), _mm512_permutex2var_epi8(t[0], b, t[1]),
                                                 _mm512_permutex2var_epi8(t[2], b, t[3]));
        _mm512_storeu_si512((void *)(dst + 64 * v), _mm512_mask_mov_epi8(top512, (__mmask64)m->inside, r));
    }
}

/* planes = sample x's channels as bytes x + 128 in their padded planes
 * (PH x PW each), then QDW_WINDOW bytes of 128: by the maps where the form
 * has them (dcz_qdw_vmap), each vector stored whole (the next channel's
 * write over the bytes past a plane, the margin past the last). They took
 * the place of a permute of small planes and a masked copy a row of
 * others, whose loop took a fifth of the depthwise kernel's time: int8
 * MobileNetV2-style, one core of a Xeon, dcz_run medians of alternated
 * runs, batch 1 153.0 -> 150.8 us, batch 64 9.48 -> 9.46 ms (its inputs
 * come from beyond the first-level cache). Else the planes filled with
 * 128, then the rows copied into them. With tb (by the maps alone), each
 * value of x looked up in that table (dcz_qtable_bytes) as it is placed:
 * the planes of an activation by table's output (dcz_qdw_planes_table). */
QDW_TGT static void qdw_planes__vbmi(const dcz_conv_geom *g, const qdw_shape *s, const dcz_qdw_vmap *maps,
                                     const dcz_qshift *f, const dcz_qconst *xc, const dcz_q *x, const uint8_t *tb,
                                     uint8_t *planes)
{
    const size_t plane = (size_t)s->PH * s->PW, in_plane = (size_t)g->in_h * g->in_w;
    const __m512i top512 = _mm512_set1_epi8((char)0x80);
    if (maps) {
        /* with tb, each value looked up in it, its entries + 128 (the lanes
         * outside the plane 128): two byte permutes of 128 entries, the
         * value's bit 7 choosing */
        __m512i t[4];
        for (int k = 0; k < 4; k++)
            t[k] = tb ? _mm512_xor_si512(_mm512_loadu_si512((const void *)(tb + 64 * k)), top512) : top512;
        const size_t nv = qdw_vmaps(s);
        for (uint32_t c = 0; c < g->in_c; c++) {
            /* a channel without weight reads no plane; one xc marks is its
             * value (the table's already), with no load from its plane,
             * never written (not even under an empty mask:
             * kernels_qshift.c, quad_rows) */
            if (qshift_none(f, c)) continue;
            const int fixed = dcz_qconst_has(xc, c);
            const dcz_q *src = x + c * in_plane;
            uint8_t *dst = planes + c * plane;
            if (tb && !fixed) qdw_plane_maps__vbmi(1, maps, nv, src, 0, 0, t, dst);
            else qdw_plane_maps__vbmi(0, maps, nv, src, fixed, fixed ? xc->value[c] : 0, t, dst);
        }
        memset(planes + g->in_c * plane, 0x80, QDW_WINDOW);
        return;
    }
    memset(planes, 0x80, g->in_c * plane + QDW_WINDOW);
    const uint32_t rows = s->PH <= g->ph ? 0 : s->PH - g->ph < g->in_h ? s->PH - g->ph : g->in_h;
    const uint32_t cols = s->PW <= g->pw ? 0 : s->PW - g->pw < g->in_w ? s->PW - g->pw : g->in_w;
    const __m256i top = _mm256_set1_epi8((char)0x80);
    for (uint32_t c = 0; c < g->in_c; c++) {
        if (qshift_none(f, c)) continue;
        const int fixed = dcz_qconst_has(xc, c);
        const __m512i kv = _mm512_set1_epi16(fixed ? xc->value[c] : 0);
        for (uint32_t iy = 0; iy < rows; iy++) {
            const dcz_q *src = x + ((size_t)c * g->in_h + iy) * g->in_w;
            uint8_t *dst = planes + c * plane + (size_t)(iy + g->ph) * s->PW + g->pw;
            for (uint32_t k = 0; k < cols; k += 32) {
                const uint32_t n = cols - k < 32 ? cols - k : 32;
                const __mmask32 m = n == 32 ? 0xFFFFFFFFu : (__mmask32)((1u << n) - 1);
                const __m256i b = _mm512_cvtepi16_epi8(fixed ? kv : _mm512_maskz_loadu_epi16(m, src + k));
                _mm256_mask_storeu_epi8(dst + k, m, _mm256_xor_si256(b, top));
            }
        }
    }
}

/* y (the output plane) = one channel's outputs from its byte plane, T taps
 * of weights wq, the sums starting at a0 (corr and bias) */
/* Where output vector j (cells 16 j ..) reads its window in a channel's
 * byte plane, and the first byte of its permutes' indices, for the first
 * s->patterns vectors; every s->patterns vectors (lcm(16, out_w) cells,
 * 16 / d rows) the same again, 16 / d rows of the plane further. The
 * same for every channel: made once a call. A walk of the cells in each
 * channel, the next vector's first cell found by subtractions (a branch
 * whose pattern the predictor does not learn over rows of 14 or 7 cells),
 * took longer: int8 MobileNetV2-style, one core of a Xeon, dcz bench
 * medians of alternated runs, batch 1 153.0 -> 148.8 us, batch 64 (with
 * the planes above) 10.70 -> 9.99 ms. */
typedef struct qdw_vec { uint32_t src, ix; } qdw_vec;

static void qdw_vectors(const dcz_conv_geom *g, const qdw_shape *s, qdw_vec *v)
{
    const size_t rowstep = (size_t)g->sh * s->PW;
    for (size_t j = 0; j < s->patterns; j++) {
        const size_t oy0 = 16 * j / g->out_w, ox0 = 16 * j % g->out_w;
        v[j].src = (uint32_t)(oy0 * rowstep + ox0 * g->sw);
        v[j].ix = (uint32_t)((ox0 >> s->dshift) * s->taps * 64);
    }
}

/* A walk over a channel's output vectors: vector j of the period, base
 * bytes into the plane, a period of rows period bytes. */
typedef struct qdw_cursor { size_t j, base, period; } qdw_cursor;

/* The sums of cur's output vector (T taps of weights wq from init; with
 * nz, the n taps it lists), cur moved on to the next vector. */
QDW_TGT static inline __attribute__((always_inline)) __m512i
qdw_sums__vbmi(const uint32_t T, const uint8_t *nz, uint32_t n, const qdw_shape *s, const qdw_vec *vecs,
               const uint8_t *plane, const uint8_t *idx, const int32_t *wq, __m512i init, qdw_cursor *cur)
{
    const uint8_t *src = plane + cur->base + vecs[cur->j].src;
    const __m512i x0 = _mm512_loadu_si512((const void *)src), x1 = _mm512_loadu_si512((const void *)(src + 64));
    const uint8_t *ix = idx + vecs[cur->j].ix;
    if (++cur->j == s->patterns) {
        cur->j = 0;
        cur->base += cur->period;
    }
    __m512i acc = init;
    if (nz) {
        for (uint32_t i = 0; i < n; i++)
            acc = _mm512_dpbusd_epi32(
                acc, _mm512_permutex2var_epi8(x0, _mm512_loadu_si512((const void *)(ix + 64 * nz[i])), x1),
                _mm512_set1_epi32(wq[nz[i]]));
        return acc;
    }
#pragma GCC unroll 16
    for (uint32_t t = 0; t < T; t++)
        acc = _mm512_dpbusd_epi32(acc, _mm512_permutex2var_epi8(x0, _mm512_loadu_si512((const void *)(ix + 64 * t)), x1),
                                  _mm512_set1_epi32(wq[t]));
    return acc;
}

QDW_TGT static inline __attribute__((always_inline)) void
qdw_channel__vbmi(const int MODE, const uint32_t T, const uint8_t *nz, uint32_t n, const dcz_conv_geom *g,
                  const qdw_shape *s, const qdw_vec *vecs, const uint8_t *plane, const uint8_t *idx, const int32_t *wq,
                  int32_t a0, int32_t mult, unsigned k, unsigned pre, int32_t qlo, int32_t qhi, dcz_q *y)
{
    const rq_consts c = rq_setup(MODE, mult, k, pre, qlo, qhi);
    const __m512i init = _mm512_set1_epi32(a0);
    const size_t out_plane = (size_t)g->out_h * g->out_w;
    qdw_cursor cur = { 0, 0, ((size_t)16 >> s->dshift) * g->sh * s->PW };
    size_t c0 = 0;
    if (MODE) {
        /* two whole vectors: packed to 16 bits and clamped there, as
         * requant_vectors does (int8 MobileNetV2-style, one core of a Xeon,
         * dcz bench medians of alternated runs: batch 64 9.95 -> 9.81 ms,
         * batch 1 149 -> 147 us) */
        const __m512i lo16 = _mm512_set1_epi16((int16_t)qlo), hi16 = _mm512_set1_epi16((int16_t)qhi);
        for (; c0 + 32 <= out_plane; c0 += 32) {
            const __m512i a = qdw_sums__vbmi(T, nz, n, s, vecs, plane, idx, wq, init, &cur);
            const __m512i b = qdw_sums__vbmi(T, nz, n, s, vecs, plane, idx, wq, init, &cur);
            const __m512i p = requant_pair(MODE, a, b, &c);
            _mm512_storeu_si512((void *)(y + c0), _mm512_min_epi16(_mm512_max_epi16(p, lo16), hi16));
        }
    }
    for (; c0 < out_plane; c0 += 16) {
        const __m512i acc = qdw_sums__vbmi(T, nz, n, s, vecs, plane, idx, wq, init, &cur);
        const __m256i r = _mm512_cvtepi32_epi16(requant16(MODE, acc, &c));
        if (c0 + 16 <= out_plane) _mm256_storeu_si256((void *)(y + c0), r);
        else _mm256_mask_storeu_epi16(y + c0, (__mmask16)((1u << (out_plane - c0)) - 1), r);
    }
}

/* The same by pairs of output rows (the form's rows, qshift_form.c):
 * output rows oy and oy + 1 (at most 8 cells each) a vector, tap t (a
 * quad of window row t / nq) a byte permute of the 64 bytes from each
 * row's window row's first (toff[t] bytes past the first row's window
 * start, and sh PW further) by the indices ix[t]; the n taps nz lists (or
 * all of them, with every tap's weights in registers). A function a mode
 * of the requantization, not inlined where the kernel above is: the form
 * takes few layers, each of large windows, and its code a case served
 * twelve of them. */
QDW_TGT static inline __attribute__((always_inline)) void
qdw_rows_channel__vbmi(const int MODE, const uint8_t *nz, uint32_t n, const dcz_conv_geom *g, const qdw_shape *s,
                       const uint32_t *toff, const uint8_t *plane, const __m512i *ix, const int32_t *wq, int32_t a0,
                       int32_t mult, unsigned k, unsigned pre, int32_t qlo, int32_t qhi, dcz_q *y)
{
    const rq_consts c = rq_setup(MODE, mult, k, pre, qlo, qhi);
    const __m512i init = _mm512_set1_epi32(a0);
    const size_t rowstep = (size_t)g->sh * s->PW, out_plane = (size_t)g->out_h * g->out_w;
    __m512i wv[QDW_MAX_TAPS];   /* every tap's (nz NULL) */
    for (uint32_t t = 0; t < QDW_MAX_TAPS; t++) wv[t] = nz || t >= s->taps ? _mm512_setzero_si512() : _mm512_set1_epi32(wq[t]);
    for (uint32_t oy = 0; oy < g->out_h; oy += 2) {
        const uint8_t *src = plane + oy * rowstep;
        __m512i acc = init;
        if (nz) {
            for (uint32_t i = 0; i < n; i++) {
                const uint32_t t = nz[i];
                const __m512i x0 = _mm512_loadu_si512((const void *)(src + toff[t]));
                const __m512i x1 = _mm512_loadu_si512((const void *)(src + toff[t] + rowstep));
                acc = _mm512_dpbusd_epi32(acc, _mm512_permutex2var_epi8(x0, ix[t], x1), _mm512_set1_epi32(wq[t]));
            }
        } else {
            for (uint32_t t = 0; t < s->taps; t++) {
                const __m512i x0 = _mm512_loadu_si512((const void *)(src + toff[t]));
                const __m512i x1 = _mm512_loadu_si512((const void *)(src + toff[t] + rowstep));
                acc = _mm512_dpbusd_epi32(acc, _mm512_permutex2var_epi8(x0, ix[t], x1), wv[t]);
            }
        }
        /* the two rows' cells (one at an odd plane's last), under a mask */
        const size_t at = (size_t)oy * g->out_w, cells = out_plane - at < 2u * g->out_w ? out_plane - at : 2u * g->out_w;
        _mm256_mask_storeu_epi16(y + at, (__mmask16)((1u << cells) - 1), _mm512_cvtepi32_epi16(requant16(MODE, acc, &c)));
    }
}

#define QDW_ROWS_MODE(M)                                                                                        \
    QDW_TGT static __attribute__((noinline)) void qdw_rows_m##M(                                                \
        const uint8_t *nz, uint32_t n, const dcz_conv_geom *g, const qdw_shape *s, const uint32_t *toff,       \
        const uint8_t *plane, const __m512i *ix, const int32_t *wq, int32_t a0, int32_t mult, unsigned k,        \
        unsigned pre, int32_t qlo, int32_t qhi, dcz_q *y)                                                      \
    {                                                                                                           \
        qdw_rows_channel__vbmi(M, nz, n, g, s, toff, plane, ix, wq, a0, mult, k, pre, qlo, qhi, y);             \
    }
QDW_ROWS_MODE(0)
QDW_ROWS_MODE(1)
QDW_ROWS_MODE(2)
QDW_ROWS_MODE(3)
#undef QDW_ROWS_MODE

/* What a part of qdw_requant__vbmi's channels takes: one sample's byte
 * planes (read only) and its output */
typedef struct qdw_job {
    const dcz_conv_geom *g;
    const dcz_qshift *f;
    const qdw_shape *s;
    const qdw_vec *vecs;
    const uint8_t *planes;
    const int64_t *bias;
    const dcz_requant *rq;
    int32_t lo, hi;
    uint32_t parts;
    int skip;
    dcz_q *yb;
} qdw_job;

QDW_TGT static void qdw_part(void *ctx, uint32_t part)
{
    const qdw_job *j = ctx;
    if (part >= j->parts) return;   /* the pool runs every thread; parts may be fewer */
    const dcz_conv_geom *g = j->g;
    const dcz_qshift *f = j->f;
    const qdw_shape s = *j->s;
    const size_t out_plane = (size_t)g->out_h * g->out_w, plane = (size_t)s.PH * s.PW;
    uint32_t c0, c1;
    dcz_part_range(g->out_c, part, j->parts, &c0, &c1);
    /* by rows: each tap's window row, in bytes past a vector's window
     * start, and its indices */
    uint32_t toff[QDW_MAX_TAPS];
    __m512i ix[QDW_MAX_TAPS];
    for (uint32_t t = 0; s.rows && t < s.taps; t++) {
        toff[t] = t / s.nq * s.PW;
        ix[t] = _mm512_loadu_si512((const void *)(f->dwidx + 64 * (size_t)t));
    }
    for (uint32_t oc = c0; oc < c1; oc++) {
        /* the 32-bit sums wrap on their way (the bound: model.h) */
        const int32_t a0 = (int32_t)((uint32_t)f->corr[oc] + (uint32_t)(uint64_t)(j->bias ? j->bias[oc] : 0));
        const unsigned k = j->rq->shift[oc], p = j->rq->pre ? j->rq->pre[oc] : 0;
        const uint8_t *pc = j->planes + oc * plane;
        const int32_t *wq = f->dw + (size_t)oc * s.taps;
        dcz_q *yc = j->yb + oc * out_plane;
        const int32_t mult = j->rq->mult[oc], lo = j->lo, hi = j->hi;
        const qdw_vec *v = j->vecs;
        /* the taps that hold a weight (the form's): a pruned channel's sums
         * take those alone, and one that holds none is its requantized sum a0 */
        const uint8_t *nz = f->dwt + (size_t)oc * s.taps;
        const uint32_t n = f->dwn[oc];
        if (n == 0) {
            requant_fill(j->skip && qshift_none(f, oc), a0, mult, (uint8_t)k, lo, hi, out_plane, yc);
            continue;
        }
        if (s.rows) {
            const uint8_t *taps = n < s.taps ? nz : NULL;
            switch (RQ_MODE(k, p)) {
            case 3: qdw_rows_m3(taps, n, g, &s, toff, pc, ix, wq, a0, mult, k, p, lo, hi, yc); break;
            case 2: qdw_rows_m2(taps, n, g, &s, toff, pc, ix, wq, a0, mult, k, 0, lo, hi, yc); break;
            case 1: qdw_rows_m1(taps, n, g, &s, toff, pc, ix, wq, a0, mult, k, 0, lo, hi, yc); break;
            default: qdw_rows_m0(taps, n, g, &s, toff, pc, ix, wq, a0, mult, k, 0, lo, hi, yc); break;
            }
            continue;
        }
#define QDW_CHANNEL(M, T, L) \
    qdw_channel__vbmi(M, T, L, n, g, &s, v, pc, f->dwidx, wq, a0, mult, k, M == 3 ? p : 0, lo, hi, yc)
        switch (RQ_MODE(k, p) * 3 + (n < s.taps ? 2 : s.taps == 3)) {
        case 11: QDW_CHANNEL(3, s.taps, nz); break;
        case 10: QDW_CHANNEL(3, 3, NULL); break;
        case 9: QDW_CHANNEL(3, s.taps, NULL); break;
        case 8: QDW_CHANNEL(2, s.taps, nz); break;
        case 7: QDW_CHANNEL(2, 3, NULL); break;
        case 6: QDW_CHANNEL(2, s.taps, NULL); break;
        case 5: QDW_CHANNEL(1, s.taps, nz); break;
        case 4: QDW_CHANNEL(1, 3, NULL); break;
        case 3: QDW_CHANNEL(1, s.taps, NULL); break;
        case 2: QDW_CHANNEL(0, s.taps, nz); break;
        case 1: QDW_CHANNEL(0, 3, NULL); break;
        default: QDW_CHANNEL(0, s.taps, NULL); break;
        }
#undef QDW_CHANNEL
    }
}

/* dcz_qconv2d_shift_requant of a layer held in the depthwise form: each
 * sample's byte planes on this thread, then its channels over the pool's
 * (NULL: this one alone; each channel's outputs its own, so the bits of
 * one thread) */
QDW_TGT static void qdw_requant__vbmi(dcz_pool *pool, const dcz_conv_geom *g, const dcz_qshift *f,
                                      const int64_t *bias, const dcz_requant *rq, int32_t lo, int32_t hi, int skip,
                                      const dcz_qconst *xc, const dcz_q *x, size_t batch, uint8_t *planes, dcz_q *y)
{
    qdw_shape s;
    qdw_measure(g, &s);   /* f->dw: the form took g */
    if (f->dwrows) {
        s.rows = 2;
        s.patterns = 1;
        s.dshift = 0;
    }
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    qdw_vec vecs[QDW_MAX_PATTERNS];
    qdw_vectors(g, &s, vecs);
    qdw_job j = { g, f, &s, vecs, planes, bias, rq, lo, hi, pool ? dcz_pool_threads(pool) : 1, skip, NULL };
    for (size_t b = 0; b < batch; b++) {
        if (x) qdw_planes__vbmi(g, &s, f->dwmap, f, xc, x + b * in_sample, NULL, planes);
        j.yb = y + b * g->out_c * out_plane;
        if (j.parts > 1) dcz_pool_run(pool, qdw_part, &j);
        else qdw_part(&j, 0);
    }
}


QDW_TGT static void qdw_planes_table__vbmi(const dcz_conv_geom *g, const dcz_qshift *f, const dcz_qconst *xc,
                                           const dcz_q *x, const uint8_t *tb, uint8_t *planes)
{
    qdw_shape s;
    qdw_measure(g, &s);
    if (f->dwrows) {
        s.rows = 2;
        s.patterns = 1;
        s.dshift = 0;
    }
    qdw_planes__vbmi(g, &s, f->dwmap, f, xc, x, tb, planes);
}

/* The depthwise form by int16 pairs (qshift_form.c) on AVX-512 VNNI:
 * one channel's outputs y from its padded plane pc (PW cells a row), its
 * n pairs of weights w at cells off of a window's first, the sums starting
 * at a0 (the bias), requantized in registers as requant_planes__vnni does.
 * At stride 1 the plane's rows are taken as one row (a window's first cell
 * is its output's cell there, PW a row): vectors of 32 cells, the sums of
 * the even and of the odd ones, stored by the nst stores st. At stride 2,
 * each output row by vectors of 16 outputs, the last stored under a mask. */
VNNI_TGT static inline __attribute__((always_inline)) void
qdwp_stride1__vnni(const int MODE, size_t nvec, const qdwp_store *st, const dcz_q *pc, uint32_t n,
                   const uint32_t *off, const int32_t *w, int32_t a0, const rq_consts *c, dcz_q *y)
{
    const __m512i init = _mm512_set1_epi32(a0);
    const qdwp_store *s = st;
    for (size_t j = 0; j < nvec; j++) {
        __m512i ev = init, od = init;
        for (uint32_t p = 0; p < n; p++) {
            const dcz_q *a = pc + 32 * j + off[p];
            const __m512i wp = _mm512_set1_epi32(w[p]);
            ev = _mm512_dpwssd_epi32(ev, _mm512_loadu_si512((const void *)a), wp);
            od = _mm512_dpwssd_epi32(od, _mm512_loadu_si512((const void *)(a + 1)), wp);
        }
        /* the even cells' values in the low halves, the odd ones' in the high */
        const __m512i v = _mm512_mask_blend_epi16((__mmask32)0xAAAAAAAAu, requant16(MODE, ev, c),
                                                  _mm512_slli_epi32(requant16(MODE, od, c), 16));
        for (; s->vec == j; s++)
            _mm512_mask_storeu_epi16((void *)((uintptr_t)y + (intptr_t)s->at * (intptr_t)sizeof *y), (__mmask32)s->mask, v);
    }
}

/* At column stride 2, from the input plane itself, without a padded copy
 * (xp: the channel's plane, rows rs cells apart): pair p's window row lies
 * dy[p] rows from output row oy's first (oy sh + ky - ph), its two columns
 * dx[p] cells from output column ox's first (2 ox + 2 j - pw). A row
 * outside the plane adds nothing, and the lanes outside its columns load
 * as 0, the padding's value, by the pair's mask in[p] for the vector's
 * columns. A channel xc marks reads its value from one row of it (rs 0). */
VNNI_TGT static inline __attribute__((always_inline)) __m512i
qdwp_stride2_sums(const dcz_conv_geom *g, const dcz_q *xp, size_t rs, uint32_t oy, uint32_t ox0, uint32_t n,
                  const int32_t *dy, const int32_t *dx, const __mmask32 *in, const int32_t *w, __m512i acc)
{
    for (uint32_t p = 0; p < n; p++) {
        const int64_t iy = (int64_t)oy * g->sh + dy[p], c0 = 2 * (int64_t)ox0 + dx[p];
        if ((uint64_t)iy >= g->in_h) continue;
        /* (left of the row's first column at the left edge: those lanes masked) */
        const void *at = (const void *)((uintptr_t)(xp + (size_t)iy * rs) + (uintptr_t)(c0 * (int64_t)sizeof *xp));
        acc = _mm512_dpwssd_epi32(acc, _mm512_maskz_loadu_epi16(in[p], at), _mm512_set1_epi32(w[p]));
    }
    return acc;
}

/* in[p] = the lanes of pair p's load for the vector of outputs from ox0
 * that lie in the plane's columns */
static inline void qdwp_stride2_masks(const dcz_conv_geom *g, uint32_t ox0, uint32_t n, const int32_t *dx,
                                      __mmask32 *in)
{
    for (uint32_t p = 0; p < n; p++) {
        const int64_t c0 = 2 * (int64_t)ox0 + dx[p], hi = (int64_t)g->in_w - c0, lo = c0 < 0 ? -c0 : 0;
        const uint64_t right = hi >= 32 ? 0xFFFFFFFFu : hi <= 0 ? 0 : ((uint64_t)1 << hi) - 1;
        in[p] = (__mmask32)(lo >= 32 ? 0 : right & (0xFFFFFFFFull << lo));
    }
}

/* by vectors of 16 outputs of a row, each column of vectors down the rows
 * with its masks made once, two vectors requantized together
 * (requant_pair) where the row holds more than 16 from the first, the
 * last of a row stored under a mask */
VNNI_TGT static inline __attribute__((always_inline)) void
qdwp_stride2__vnni(const int MODE, const dcz_conv_geom *g, const dcz_q *xp, size_t rs, uint32_t n,
                   const int32_t *dy, const int32_t *dx, const int32_t *w, int32_t a0, const rq_consts *c,
                   int32_t qlo, int32_t qhi, dcz_q *y)
{
    const __m512i init = _mm512_set1_epi32(a0);
    const __m512i lo16 = _mm512_set1_epi16((int16_t)qlo), hi16 = _mm512_set1_epi16((int16_t)qhi);
    __mmask32 in0[QDWP_MAX_PAIRS], in1[QDWP_MAX_PAIRS];
    for (uint32_t ox0 = 0; ox0 < g->out_w;) {
        const uint32_t left = g->out_w - ox0;
        qdwp_stride2_masks(g, ox0, n, dx, in0);
        if (MODE && left > 16) {
            qdwp_stride2_masks(g, ox0 + 16, n, dx, in1);
            const __mmask32 st = left >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << left) - 1);
            for (uint32_t oy = 0; oy < g->out_h; oy++) {
                const __m512i s0 = qdwp_stride2_sums(g, xp, rs, oy, ox0, n, dy, dx, in0, w, init);
                const __m512i s1 = qdwp_stride2_sums(g, xp, rs, oy, ox0 + 16, n, dy, dx, in1, w, init);
                _mm512_mask_storeu_epi16(y + (size_t)oy * g->out_w + ox0, st,
                                         _mm512_min_epi16(_mm512_max_epi16(requant_pair(MODE, s0, s1, c), lo16), hi16));
            }
            ox0 += 32;
            continue;
        }
        const __mmask16 st = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        for (uint32_t oy = 0; oy < g->out_h; oy++)
            _mm256_mask_storeu_epi16(y + (size_t)oy * g->out_w + ox0, st,
                                     _mm512_cvtepi32_epi16(requant16(MODE, qdwp_stride2_sums(g, xp, rs, oy, ox0, n, dy, dx,
                                                                                              in0, w, init), c)));
        ox0 += 16;
    }
}

VNNI_TGT static inline __attribute__((always_inline)) void
qdwp_channel__vnni(const int MODE, const int S, const dcz_conv_geom *g, size_t rs, size_t nvec,
                   const qdwp_store *st, const dcz_q *pc, uint32_t n, const uint32_t *off, const int32_t *dy,
                   const int32_t *dx, const int32_t *w, int32_t a0, int32_t mult, unsigned k, unsigned pre,
                   int32_t qlo, int32_t qhi, dcz_q *y)
{
    const rq_consts c = rq_setup(MODE, mult, k, pre, qlo, qhi);
    if (S == 1) qdwp_stride1__vnni(MODE, nvec, st, pc, n, off, w, a0, &c, y);
    else qdwp_stride2__vnni(MODE, g, pc, rs, n, dy, dx, w, a0, &c, qlo, qhi, y);
}

/* st = the stores of g's vectors at stride 1 (qshift.h), ended by one of
 * no vector */
static void qdwp_stores(const dcz_conv_geom *g, size_t PW, size_t nvec, qdwp_store *st)
{
    for (size_t j = 0; j < nvec; j++)
        for (size_t q0 = 32 * j, r = q0 / PW; r < g->out_h && r * PW < q0 + 32; r++) {
            const size_t lo = q0 > r * PW ? q0 : r * PW, hi = q0 + 32 < r * PW + g->out_w ? q0 + 32 : r * PW + g->out_w;
            if (lo >= hi) continue;
            st->vec = (uint32_t)j;
            st->at = (int32_t)((int64_t)(r * g->out_w) + (int64_t)q0 - (int64_t)(r * PW));
            st->mask = (uint32_t)((((uint64_t)1 << (hi - lo)) - 1) << (lo - q0));
            st++;
        }
    st->vec = UINT32_MAX;
}

/* Channel oc's requantization in the pairs form: its sums start at its
 * bias (no corr: no +128), wrapping on their way (the bound: model.h) */
typedef struct qdwp_rq { int32_t a0, mult; unsigned k, p; } qdwp_rq;
static inline qdwp_rq qdwp_rq_of(const int64_t *bias, const dcz_requant *rq, uint32_t oc)
{
    return (qdwp_rq){ (int32_t)(uint32_t)(uint64_t)(bias ? bias[oc] : 0), rq->mult[oc], rq->shift[oc],
                      rq->pre ? rq->pre[oc] : 0u };
}

/* The int16 pairs over a small plane (qdwp_small): the channel's input
 * plane in two registers, x0 and x1 (32 cells each, 0 past the plane), and
 * for pair p of a window row and output vector v (cells 16 v ..) one word
 * permute of them (vpermt2w) by idx[p][v], whose lanes 2 i and 2 i + 1 hold
 * output 16 v + i's inputs at the pair's two columns, lanes that fall in
 * the padding or past the window row zero (in[p][v]): then the pair's
 * vpdpwssd as above. No padded plane is copied and no row stored apart:
 * int8 MobileNetV2's 960 x 7 x 7 layers took 21 us a layer on the byte
 * permutes, 16-17 so (10 in float; one core of an AMD EPYC, Zen 5). */
typedef struct qdwp_small_map {
    __m512i idx[QDWP_MAX_PAIRS][QDWP_SMALL_VECTORS];
    __mmask32 in[QDWP_MAX_PAIRS][QDWP_SMALL_VECTORS];
} qdwp_small_map;

VNNI_TGT static void qdwp_small_build(const dcz_conv_geom *g, qdwp_small_map *m)
{
    const uint32_t np = qdwp_row_pairs(g), nv = (g->out_h * g->out_w + 15) / 16;
    for (uint32_t v = 0; v < nv; v++) {
        /* lane 2 i + h: output cell 16 v + i's first window cell's row and
         * column (the column h further), or a row that is none */
        int16_t iy[32], ix[32];
        for (uint32_t l = 0; l < 32; l++) {
            const uint32_t cell = 16 * v + l / 2, oy = cell / g->out_w, ox = cell % g->out_w;
            const int inside = cell < g->out_h * g->out_w;
            iy[l] = (int16_t)(inside ? (int32_t)(oy * g->sh) - (int32_t)g->ph : INT16_MIN / 2);
            ix[l] = (int16_t)((int32_t)(ox * g->sw + l % 2) - (int32_t)g->pw);
        }
        const __m512i y0 = _mm512_loadu_si512(iy), x0 = _mm512_loadu_si512(ix);
        const __m512i h = _mm512_set1_epi16((int16_t)g->in_h), w = _mm512_set1_epi16((int16_t)g->in_w);
        for (uint32_t ky = 0; ky < g->kh; ky++)
            for (uint32_t j = 0; j < np; j++) {
                const __m512i yy = _mm512_add_epi16(y0, _mm512_set1_epi16((int16_t)ky));
                const __m512i xx = _mm512_add_epi16(x0, _mm512_set1_epi16((int16_t)(2 * j)));
                /* (an odd column past a window row carries weight 0) */
                m->in[ky * np + j][v] = _mm512_cmplt_epu16_mask(yy, h) & _mm512_cmplt_epu16_mask(xx, w);
                m->idx[ky * np + j][v] = _mm512_add_epi16(_mm512_mullo_epi16(yy, w), xx);
            }
    }
}

VNNI_TGT static inline __attribute__((always_inline)) void
qdwp_small_channel__vnni(const int MODE, const uint32_t NV, const qdwp_small_map *m, __m512i x0, __m512i x1,
                         uint32_t n, const uint8_t *pl, const int32_t *w, int32_t a0, int32_t mult, unsigned k,
                         unsigned pre, int32_t qlo, int32_t qhi, size_t out_plane, dcz_q *y)
{
    const rq_consts c = rq_setup(MODE, mult, k, pre, qlo, qhi);
    __m512i acc[QDWP_SMALL_VECTORS];
#pragma GCC unroll 4
    for (uint32_t v = 0; v < NV; v++) acc[v] = _mm512_set1_epi32(a0);
    for (uint32_t e = 0; e < n; e++) {
        const __m512i wp = _mm512_set1_epi32(w[e]);
        const uint32_t p = pl[e];
#pragma GCC unroll 4
        for (uint32_t v = 0; v < NV; v++)
            acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_maskz_permutex2var_epi16(m->in[p][v], x0, m->idx[p][v], x1),
                                         wp);
    }
    uint32_t v = 0;
    if (MODE) {
        const __m512i lo16 = _mm512_set1_epi16((int16_t)qlo), hi16 = _mm512_set1_epi16((int16_t)qhi);
#pragma GCC unroll 2
        for (; v + 2 <= NV; v += 2) {
            const size_t left = out_plane - 16 * v;
            const __mmask32 keep = left >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << left) - 1);
            const __m512i r = requant_pair(MODE, acc[v], acc[v + 1], &c);
            _mm512_mask_storeu_epi16(y + 16 * v, keep, _mm512_min_epi16(_mm512_max_epi16(r, lo16), hi16));
        }
    }
#pragma GCC unroll 4
    for (; v < NV; v++) {
        const size_t left = out_plane - 16 * v;
        const __mmask16 keep = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        _mm256_mask_storeu_epi16(y + 16 * v, keep, _mm512_cvtepi32_epi16(requant16(MODE, acc[v], &c)));
    }
}

VNNI_TGT static void qdwp_small__vnni(const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                                      const dcz_requant *rq, int32_t lo, int32_t hi, int skip, const dcz_qconst *xc,
                                      const dcz_q *x, size_t batch, dcz_q *y)
{
    qdwp_small_map m;
    qdwp_small_build(g, &m);
    const uint32_t np = qdwp_row_pairs(g), pairs = g->kh * np;
    const size_t in_plane = (size_t)g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    const uint32_t nv = (uint32_t)((out_plane + 15) / 16);
    const __mmask32 in0 = in_plane >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << in_plane) - 1);
    const __mmask32 in1 = in_plane >= 64 ? ~(__mmask32)0 : in_plane > 32 ? (__mmask32)((1u << (in_plane - 32)) - 1) : 0;
    for (size_t b = 0; b < batch; b++)
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            /* the channel's pairs that hold a weight (the form's, first) */
            const uint8_t *pl = f->dwpi + (size_t)oc * pairs;
            const uint32_t n = f->dwpn[oc];
            const int32_t *w = f->dwp + (size_t)oc * pairs;
            const qdwp_rq r = qdwp_rq_of(bias, rq, oc);
            dcz_q *yc = y + (b * g->out_c + oc) * out_plane;
            if (n == 0) {
                requant_fill(skip && qshift_none(f, oc), r.a0, r.mult, (uint8_t)r.k, lo, hi, out_plane, yc);
                continue;
            }
            /* a channel xc marks: its value in every cell of the plane, no
             * load from its plane (qdw_planes__vbmi) */
            const dcz_q *xp = x + (b * g->in_c + oc) * in_plane;
            const int fixed = dcz_qconst_has(xc, oc);
            const __m512i kv = _mm512_set1_epi16(fixed ? xc->value[oc] : 0);
            const __m512i x0 = fixed ? _mm512_maskz_mov_epi16(in0, kv) : _mm512_maskz_loadu_epi16(in0, xp),
                          x1 = fixed ? _mm512_maskz_mov_epi16(in1, kv) : _mm512_maskz_loadu_epi16(in1, xp + 32);
#define QDWP_SMALL(M, NV) \
    qdwp_small_channel__vnni(M, NV, &m, x0, x1, n, pl, w, r.a0, r.mult, r.k, M == 3 ? r.p : 0, lo, hi, out_plane, yc)
            switch (RQ_MODE(r.k, r.p) * 4 + (nv - 1)) {
            case 15: QDWP_SMALL(3, 4); break;
            case 14: QDWP_SMALL(3, 3); break;
            case 13: QDWP_SMALL(3, 2); break;
            case 12: QDWP_SMALL(3, 1); break;
            case 11: QDWP_SMALL(2, 4); break;
            case 10: QDWP_SMALL(2, 3); break;
            case 9: QDWP_SMALL(2, 2); break;
            case 8: QDWP_SMALL(2, 1); break;
            case 7: QDWP_SMALL(1, 4); break;
            case 6: QDWP_SMALL(1, 3); break;
            case 5: QDWP_SMALL(1, 2); break;
            case 4: QDWP_SMALL(1, 1); break;
            case 3: QDWP_SMALL(0, 4); break;
            case 2: QDWP_SMALL(0, 3); break;
            case 1: QDWP_SMALL(0, 2); break;
            default: QDWP_SMALL(0, 1); break;
            }
#undef QDWP_SMALL
        }
}

/* dcz_qconv2d_shift_requant of a layer held in the depthwise form by
 * int16 pairs: each sample's channels one at a time, at stride 1 through
 * one padded plane, whose padding every channel leaves as the first found
 * it, at column stride 2 from their planes; small planes in registers
 * (above) */
VNNI_TGT static void qdwp_requant__vnni(const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                                        const dcz_requant *rq, int32_t lo, int32_t hi, int skip, const dcz_qconst *xc,
                                        const dcz_q *x, size_t batch, void *scratch, dcz_q *y)
{
    if (qdwp_small(g)) {
        qdwp_small__vnni(g, f, bias, rq, lo, hi, skip, xc, x, batch, y);
        return;
    }
    const uint32_t np = qdwp_row_pairs(g);
    const size_t PW = qdwp_pw(g), nvec = qdwp_vectors(g);
    const size_t in_plane = (size_t)g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    dcz_q *pc = scratch;
    qdwp_store *st = (qdwp_store *)(void *)((char *)scratch + (qdwp_plane_cells(g) * sizeof *pc + 7) / 8 * 8);
    if (g->sw == 1) qdwp_stores(g, PW, nvec, st);
    /* the input rows and columns within the padded plane */
    const size_t PH = (size_t)(g->out_h - 1) * g->sh + g->kh;
    const size_t rows = PH <= g->ph ? 0 : PH - g->ph < g->in_h ? PH - g->ph : g->in_h;
    const size_t cols = PW <= g->pw ? 0 : PW - g->pw < g->in_w ? PW - g->pw : g->in_w;
    /* at column stride 2 the kernel reads the planes themselves */
    const int copy = g->sw == 1;
    /* where each pair of a window reads: in the padded plane (off), rows
     * and columns from a window's first output's (dy, dx) */
    const uint32_t pairs = g->kh * np;
    uint32_t poff[QDWP_MAX_PAIRS];
    int32_t pdy[QDWP_MAX_PAIRS], pdx[QDWP_MAX_PAIRS];
    for (uint32_t ky = 0; ky < g->kh; ky++)
        for (uint32_t j = 0; j < np; j++) {
            poff[ky * np + j] = (uint32_t)(ky * PW + 2 * j);
            pdy[ky * np + j] = (int32_t)ky - (int32_t)g->ph;
            pdx[ky * np + j] = 2 * (int32_t)j - (int32_t)g->pw;
        }
    if (copy) memset(pc, 0, qdwp_plane_cells(g) * sizeof *pc);
    for (size_t b = 0; b < batch; b++)
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            /* the channel's pairs that hold a weight (the form's, first),
             * where they read */
            uint32_t off[QDWP_MAX_PAIRS];
            int32_t dy[QDWP_MAX_PAIRS], dx[QDWP_MAX_PAIRS];
            const uint32_t n = f->dwpn[oc];
            const int32_t *w = f->dwp + (size_t)oc * pairs;
            for (uint32_t e = 0; e < n; e++) {
                const uint32_t pe = f->dwpi[(size_t)oc * pairs + e];
                off[e] = poff[pe];
                dy[e] = pdy[pe];
                dx[e] = pdx[pe];
            }
            const qdwp_rq r = qdwp_rq_of(bias, rq, oc);
            const int32_t a0 = r.a0, mult = r.mult;
            const unsigned k = r.k, p = r.p;
            dcz_q *yc = y + (b * g->out_c + oc) * out_plane;
            /* none: the requantized bias, without the plane */
            if (n == 0) {
                requant_fill(skip && qshift_none(f, oc), a0, mult, (uint8_t)k, lo, hi, out_plane, yc);
                continue;
            }
            /* rows of 7 to 112 cells: masked vectors, where a call to
             * memcpy a row took a third of 7 x 7 planes' time; a channel
             * xc marks its value in each (at stride 2, in one row read
             * for every row) */
            const dcz_q *xp = x + (b * g->in_c + oc) * in_plane;
            const int fixed = dcz_qconst_has(xc, oc);
            const __m512i kv = _mm512_set1_epi16(fixed ? xc->value[oc] : 0);
            size_t rs = g->in_w;
            if (!copy && fixed) {
                for (size_t i = 0; i < g->in_w; i += 32) {
                    const size_t left = g->in_w - i;
                    _mm512_mask_storeu_epi16(pc + i, left >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << left) - 1), kv);
                }
                xp = pc;
                rs = 0;
            }
            for (size_t iy = 0; copy && iy < rows; iy++) {
                const dcz_q *src = xp + iy * g->in_w;
                dcz_q *dst = pc + (iy + g->ph) * PW + g->pw;
                for (size_t i = 0; i < cols; i += 32) {
                    const __mmask32 m = cols - i >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << (cols - i)) - 1);
                    _mm512_mask_storeu_epi16(dst + i, m, fixed ? kv : _mm512_maskz_loadu_epi16(m, src + i));
                }
            }
            const dcz_q *in = copy ? pc : xp;
#define QDWP_CHANNEL(M, S) \
    qdwp_channel__vnni(M, S, g, rs, nvec, st, in, n, off, dy, dx, w, a0, mult, k, M == 3 ? p : 0, lo, hi, yc)
            switch (RQ_MODE(k, p) * 2 + (g->sw == 2)) {
            case 7: QDWP_CHANNEL(3, 2); break;
            case 6: QDWP_CHANNEL(3, 1); break;
            case 5: QDWP_CHANNEL(2, 2); break;
            case 4: QDWP_CHANNEL(2, 1); break;
            case 3: QDWP_CHANNEL(1, 2); break;
            case 2: QDWP_CHANNEL(1, 1); break;
            case 1: QDWP_CHANNEL(0, 2); break;
            default: QDWP_CHANNEL(0, 1); break;
            }
#undef QDWP_CHANNEL
        }
}

#endif

/* the most vectors of a plane requantized by vectors (its lanes' masks on
 * the stack), past which by rows of 8 cells in 64-bit lanes: 1024 takes
 * the 112 x 112 planes of torchvision's networks (784 to 798 vectors),
 * which 512 left to the rows: int8 MobileNetV2 (torchvision, 90% pruned by
 * quads, 4-bit), one core of an AMD EPYC (Zen 4), least of four alternated
 * medians, 2560 -> 2296 us, RegNetX-400MF 1955 -> 1845, EfficientNet-B0
 * 4138 -> 4002, ResNet-18 2757 -> 2681 */
#define REQ_PLANE_MAX 1024
/* the most bytes of 32-bit sums dcz_qconv2d_shift_requant computes before
 * it requantizes them, in chunks of output channels: a layer's sums at 224
 * x 224 are megabytes, which went out to memory and back */
#define REQ_CHUNK_BYTES (256u << 10)

#ifdef DCZ_X86
/* p (ph, pw) = the 2x2 maxima of stride 2 of the plane t (rows of wq
 * cells) plus add (modulo 2^32, before the maxima): the rows' pairs by
 * vectors, then the maxima of their even and odd lanes, 16 outputs a step. A convolution that takes the pool after it
 * (load.c) requantizes a quarter of its sums and the pool becomes a copy:
 * int8, one core of an AMD EPYC, medians of three alternated runs, LeNet-5
 * batch 1 15.7 -> 14.4 us, batch 64 938 -> 852; conv-heavy CNN batch 1
 * 125.3 -> 121.9, batch 64 8157 -> 8019. */
VNNI_TGT static void pool2_plane__avx512(const int32_t *t, size_t wq, uint32_t ph, uint32_t pw, int32_t add, int32_t *p)
{
    const __m512i c = _mm512_set1_epi32(add);
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    for (uint32_t py = 0; py < ph; py++, p += pw) {
        const int32_t *r0 = t + 2 * (size_t)py * wq, *r1 = r0 + wq;
        for (uint32_t px = 0; px < pw; px += 16) {
            const uint32_t n = pw - px < 16 ? pw - px : 16;   /* outputs, 2 n inputs a row */
            const __mmask16 m0 = (__mmask16)(n >= 8 ? 0xFFFF : (1u << (2 * n)) - 1);
            const __mmask16 m1 = (__mmask16)(n > 8 ? (1u << (2 * n - 16)) - 1 : 0);
            const int32_t *a = r0 + 2 * (size_t)px, *b = r1 + 2 * (size_t)px;
            const __m512i v0 = _mm512_max_epi32(_mm512_add_epi32(_mm512_maskz_loadu_epi32(m0, a), c),
                                                _mm512_add_epi32(_mm512_maskz_loadu_epi32(m0, b), c));
            const __m512i v1 = _mm512_max_epi32(_mm512_add_epi32(_mm512_maskz_loadu_epi32(m1, a + 16), c),
                                                _mm512_add_epi32(_mm512_maskz_loadu_epi32(m1, b + 16), c));
            const __m512i mx = _mm512_max_epi32(_mm512_permutex2var_epi32(v0, even, v1),
                                                _mm512_permutex2var_epi32(v0, odd, v1));
            _mm512_mask_storeu_epi32(p + px, (__mmask16)((1u << n) - 1), mx);
        }
    }
}

/* Output channels c0 .. c0 + n - 1 of one sample's output yb from their
 * sums t (planes q->out16 apart from channel c0's; add: NULL or what each
 * channel's lack, from c0), keep the lanes of each vector of a plane of nv
 * (within REQ_PLANE_MAX; past it by rows). */
VNNI_TGT static void requant_sums(const dcz_conv_geom *g, const dcz_qshift *f, const split_geom *q,
                                  const uint16_t *keep, size_t nv, uint32_t c0, uint32_t n, const int32_t *t,
                                  const int32_t *add, const int64_t *bias, const dcz_requant *rq, int32_t lo,
                                  int32_t hi, int skip, dcz_q *yb)
{
    const size_t out_plane = (size_t)g->out_h * g->out_w;
    if (nv <= REQ_PLANE_MAX) {
        requant_planes__vnni(t, q->out16, keep, nv, bias ? bias + c0 : NULL, add, rq->mult + c0, rq->shift + c0,
                             rq->pre ? rq->pre + c0 : NULL, n, lo, hi, out_plane, f, c0, skip, yb + c0 * out_plane);
        return;
    }
    /* rows with no columns to drop make one row of the whole plane */
    const uint32_t rows = q->wq == g->out_w ? 1 : g->out_h, w = q->wq == g->out_w ? (uint32_t)out_plane : g->out_w;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t oc = c0 + i;
        if (qshift_none(f, oc)) {   /* its sums unwritten, as above (its corr, add, is 0) */
            requant_fill(skip, (int32_t)(uint32_t)(uint64_t)(bias ? bias[oc] : 0), rq->mult[oc], rq->shift[oc], lo, hi,
                         out_plane, yb + oc * out_plane);
            continue;
        }
        for (uint32_t oy = 0; oy < rows; oy++)
            requant_row__vnni(t + i * q->out16 + oy * q->wq, add ? add[i] : 0, bias ? bias[oc] : 0, rq->mult[oc],
                              rq->shift[oc], lo, hi, w, yb + oc * out_plane + (size_t)oy * g->out_w);
    }
}

/* The plane path of dcz_qconv2d_shift_requant: the vectors of a plane as
 * the kernel computes it, within REQ_PLANE_MAX. */
static int requant_by_planes(const dcz_conv_geom *g, const dcz_qshift *f)
{
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    return !dcz_qshift_depthwise(f) && q.out16 / 16 <= REQ_PLANE_MAX;
}
#endif

#ifdef DCZ_X86
/* Whether one of the n shifts exceeds most: 64 at a time, where a test and
 * a return per channel took 1.2% of int8 MobileNetV2-style, which asks at
 * every call */
VNNI_TGT static int shifts_past__vnni(const uint8_t *shift, uint32_t n, uint8_t most)
{
    for (uint32_t i = 0; i < n; i += 64) {
        const __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        if (_mm512_mask_cmpgt_epu8_mask(m, _mm512_maskz_loadu_epi8(m, shift + i), _mm512_set1_epi8((char)most)))
            return 1;
    }
    return 0;
}
#endif

#ifdef DCZ_X86
/* What a part of a sample's chunks of output channels takes: each part
 * computes its chunks' sums in the place of its first chunk's within the
 * planes t (the scratch holds every channel's), so parts never share sums;
 * on the AMX tiles (amx_part), its channel tiles' sums in their own place,
 * tap k at cell toff[k] */
typedef struct req_job {
    const dcz_conv_geom *g;
    const split_geom *q;
    const dcz_qshift *f;
    dcz_qplanes_fn planes;
    const uint32_t *toff;
    const int32_t *xs;
    int32_t *t;
    const uint16_t *keep;
    size_t nv;
    uint32_t chunk, chunks, parts;
    const int64_t *bias;
    const dcz_requant *rq;
    int32_t lo, hi;
    int skip;
    dcz_q *yb;
} req_job;

VNNI_TGT static void req_part(void *ctx, uint32_t part)
{
    const req_job *j = ctx;
    const dcz_conv_geom *g = j->g;
    if (part >= j->parts) return;   /* the pool runs every thread; parts may be fewer */
    uint32_t k0, k1;
    dcz_part_range(j->chunks, part, j->parts, &k0, &k1);
    int32_t *t = j->t + (size_t)k0 * j->chunk * j->q->out16;
    for (uint32_t k = k0; k < k1; k++) {
        const uint32_t c0 = k * j->chunk, n = g->out_c - c0 < j->chunk ? g->out_c - c0 : j->chunk;
        dcz_qshift sub = *j->f;
        sub.ptr = j->f->ptr + c0 / j->f->ob;
        j->planes(&sub, j->f->corr + c0, n, j->q->out16, (size_t)g->out_h * j->q->wq, j->xs, t, DCZ_QPLANES_SPARE);
        requant_sums(g, j->f, j->q, j->keep, j->nv, c0, n, t, NULL, j->bias, j->rq, j->lo, j->hi, j->skip, j->yb);
    }
}

/* A sample's AMX tiles over the threads: each part its channel tiles (in
 * pairs, the kernel's unit), then their requantization. The parts write
 * disjoint sums and outputs: the bits of one thread. */
VNNI_TGT static void amx_part(void *ctx, uint32_t part)
{
    const req_job *j = ctx;
    size_t m0, m1;
    dcz_part_units((j->g->out_c + 15) / 16, 2, part, j->parts, &m0, &m1);
    if (m0 >= m1) return;
    dcz_qamx_planes(j->f, j->g, j->toff, (size_t)j->g->sh * j->g->sw * j->q->plane, j->q->out16,
                    (const uint8_t *)j->xs, copies_at(j->t, j->q, j->g), j->t, (uint32_t)m0, (uint32_t)m1);
    const uint32_t c0 = 16 * (uint32_t)m0, c1 = 16 * (uint32_t)m1 < j->g->out_c ? 16 * (uint32_t)m1 : j->g->out_c;
    requant_sums(j->g, j->f, j->q, j->keep, j->nv, c0, c1 - c0, j->t + (size_t)c0 * j->q->out16, j->f->corr + c0,
                 j->bias, j->rq, j->lo, j->hi, j->skip, j->yb);
}
#endif

/* A layer on the AMX tiles (but the copied rows form, whose copies come
 * first) over the threads by pairs of channel tiles, from AMX_SPLIT_MACS
 * multiply-adds of its dense weights, where it has more than a pair of
 * them. Each thread reads its channels' weights alone: by blocks of
 * output cells instead, where each read all of them, int8 ResNet-18 at
 * two threads, batch 1, took 1.37 times as long (medians of four
 * alternated rounds); by channels, dcz bench --per-layer at two threads,
 * least of three alternated rounds, int8 MobileNetV2's 320 -> 1280 over 7
 * x 7 152 -> 87 us, its 96 -> 576 over 14 x 14 97 -> 56, the sum of its
 * layers 0.893 of the time (one core of an Intel Xeon, family 6 model
 * 207, whose two threads left the tiles' layers at 0.88-0.96 of their
 * one-thread time before). Down to 2^19 the smaller layers timed within
 * this host's noise at two threads (up to 2x from one run to the next). */
#define AMX_SPLIT_MACS ((uint64_t)1 << 22)
static int amx_splits(const dcz_conv_geom *g, const dcz_qshift *f)
{
    const uint64_t cells = (uint64_t)g->out_h * g->out_w;
    return f->amx_run != DCZ_QAMX_COPIES && g->out_c > 32 &&
           (uint64_t)g->out_c * g->in_c * g->kh * g->kw * cells >= AMX_SPLIT_MACS;
}

/* The float rules' thresholds (threads.h): DCZ_SPLIT_MACS multiply-adds
 * on the quad taps (four a tap), DCZ_SPLIT_DW_CELLS outputs a depthwise
 * layer */
int dcz_qconv2d_shift_requant_splits(const dcz_conv_geom *g, const dcz_qshift *f)
{
    const uint64_t cells = (uint64_t)g->out_h * g->out_w;
    if (f->amx_pick) return amx_splits(g, f);
    switch (dcz_qshift_depthwise(f)) {
    case DCZ_QDW_BYTES: return g->out_c >= 2 && g->out_c * cells >= DCZ_SPLIT_DW_CELLS;
    case DCZ_QDW_PAIRS: return 0;
    default: break;
    }
    const uint32_t blocks = (g->out_c + f->ob - 1) / f->ob;
    return blocks >= 2 && (uint64_t)f->ptr[blocks] * f->ob * 4 * cells >= DCZ_SPLIT_MACS;
}

int dcz_qdw_planes_table_takes(const dcz_qshift *f)
{
#ifdef DCZ_X86
    return dcz_qshift_depthwise(f) == DCZ_QDW_BYTES && f->dwmap;
#else
    (void)f;
    return 0;
#endif
}

void dcz_qdw_planes_table(const dcz_conv_geom *g, const dcz_qshift *f, const dcz_qconst *xc, const dcz_q *x,
                          const uint8_t *tb, uint8_t *planes)
{
#ifdef DCZ_X86
    if (dcz_qdw_planes_table_takes(f)) qdw_planes_table__vbmi(g, f, xc, x, tb, planes);
#else
    (void)g; (void)f; (void)xc; (void)x; (void)tb; (void)planes;
#endif
}

int dcz_qconv2d_shift_requant_runs(const dcz_conv_geom *g, const dcz_qshift *f, const dcz_requant *rq, int pool2)
{
#ifdef DCZ_X86
    if (!dcz_qplanes_variant(DCZ_ISA_AVX512) || rq->qmax != 127 || shifts_past__vnni(rq->shift, g->out_c, 62)) return 0;
    return !pool2 || (requant_by_planes(g, f) && g->out_h >= 2 && g->out_w >= 2);
#else
    (void)g; (void)f; (void)rq; (void)pool2;
    return 0;
#endif
}

int dcz_qconv2d_shift_requant(dcz_pool *pool, const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                              const dcz_requant *rq, int32_t lo, int32_t hi, int pool2, int skip,
                              const dcz_qconst *xc, const dcz_q *x, size_t batch, float *scratch, dcz_q *y)
{
#ifdef DCZ_X86
    if (!dcz_qconv2d_shift_requant_runs(g, f, rq, pool2)) return 0;
    const dcz_qplanes_fn planes = dcz_qplanes_variant(DCZ_ISA_AVX512);
    switch (dcz_qshift_depthwise(f)) {
    case DCZ_QDW_BYTES:
        qdw_requant__vbmi(pool, g, f, bias, rq, lo, hi, skip, xc, x, batch, (uint8_t *)(void *)scratch, y);
        return 1;
    case DCZ_QDW_PAIRS: qdwp_requant__vnni(g, f, bias, rq, lo, hi, skip, xc, x, batch, scratch, y); return 1;
    default: break;
    }
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    int32_t *xs = (int32_t *)(void *)scratch, *t = planes_at(scratch, &q);
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    /* planes of up to REQ_PLANE_MAX vectors requantized by vectors, their
     * output lanes found once */
    const size_t nv = q.out16 / 16, cells = (size_t)g->out_h * q.wq;
    uint16_t keep[REQ_PLANE_MAX];
    if (nv <= REQ_PLANE_MAX && q.wq == g->out_w) {
        /* rows without columns to drop: every lane up to the last cell (the
         * lanes of each vector found by keep_lanes took 2% of int8
         * MobileNetV3-Small, whose 1 x 1 layers are all such) */
        const size_t whole = cells / 16;
        for (size_t j = 0; j < whole; j++) keep[j] = 0xFFFF;
        for (size_t j = whole; j < nv; j++) keep[j] = (uint16_t)lanes(0, (int64_t)(cells - 16 * j), 16);
    } else if (nv <= REQ_PLANE_MAX)
        for (size_t j = 0, col = 0; j < nv; j++, col = (col + 16) % q.wq)
            keep[j] = (uint16_t)keep_lanes(16, 16 * j, (int64_t)col, (int64_t)q.wq, g->out_w, cells);
    /* with pool2, the pooled plane: its cells one after the other, a
     * quarter of the plane's (within REQ_PLANE_MAX * 4, requant_by_planes) */
    const uint32_t ph = g->out_h / 2, pw = g->out_w / 2;
    const size_t pooled = (size_t)ph * pw, pnv = pool2 ? (pooled + 15) / 16 : 0;
    uint16_t pkeep[REQ_PLANE_MAX];
    for (size_t j = 0; j < pnv; j++) pkeep[j] = (uint16_t)keep_lanes(16, 16 * j, 0, (int64_t)pooled, pooled, pooled);
    /* output channels a chunk (a whole block's): their sums within
     * REQ_CHUNK_BYTES, requantized as soon as computed */
    const uint32_t ob = f->ob, fit = (uint32_t)(REQ_CHUNK_BYTES / (q.out16 * sizeof *t)) / ob * ob;
    uint32_t chunk = fit ? fit : ob, parts = 1;
    /* over a pool, at least a chunk a thread (the chunks are the parts'
     * units; each part sums its chunks in turn) */
    if (pool && !pool2 && !f->amx_pick) {
        const uint32_t threads = dcz_pool_threads(pool), blocks = (g->out_c + ob - 1) / ob;
        parts = threads < blocks ? threads : blocks;
        const uint32_t per = (blocks + parts - 1) / parts * ob;
        if (per < chunk) chunk = per;
    }
    const int chunks = !pool2 && !f->amx_pick && chunk < g->out_c;
    /* the tiles over the pool (amx_req_job) */
    const int amx_parts = pool && !pool2 && f->amx_pick && amx_splits(g, f);
    uint32_t toff[DCZ_QSHIFT_MAX_WINDOW];
    if (amx_parts) tap_offsets(g, &q, toff);
    req_job j = { g, &q, f, planes, toff, xs, t, keep, nv, chunk, (g->out_c + chunk - 1) / chunk, 0, bias, rq, lo, hi,
                  skip, NULL };
    j.parts = amx_parts ? dcz_pool_threads(pool) : parts < j.chunks ? parts : j.chunks;
    for (size_t b = 0; b < batch; b++) {
        dcz_qsplit_any(1, g, &q, xc, x + b * in_sample, (uint8_t *)xs);
        if (chunks) {
            j.yb = y + b * g->out_c * out_plane;
            if (j.parts > 1) dcz_pool_run(pool, req_part, &j);
            else req_part(&j, 0);
            continue;
        }
        if (amx_parts) {
            j.yb = y + b * g->out_c * out_plane;
            dcz_pool_run(pool, amx_part, &j);
            continue;
        }
        /* the sums' corr, where the tiles leave it, added with the bias */
        const int32_t *add = dcz_qplanes_run(planes, 1, g, &q, f, xs, t, 1);
        if (pool2) {   /* the pooled sums requantized: max commutes with the requantization */
            int32_t pt[REQ_PLANE_MAX * 4];
            dcz_q *yb = y + b * g->out_c * out_plane;   /* a sample's place as unpooled */
            for (uint32_t oc = 0; oc < g->out_c; oc++) {
                if (!qshift_none(f, oc)) pool2_plane__avx512(t + oc * q.out16, q.wq, ph, pw, add ? add[oc] : 0, pt);
                requant_planes__vnni(pt, 0, pkeep, pnv, bias ? bias + oc : NULL, NULL, rq->mult + oc,
                                     rq->shift + oc, rq->pre ? rq->pre + oc : NULL, 1, lo, hi, pooled, f, oc, skip,
                                     yb + oc * pooled);
            }
            continue;
        }
        requant_sums(g, f, &q, keep, nv, 0, g->out_c, t, add, bias, rq, lo, hi, skip, y + b * g->out_c * out_plane);
    }
    return 1;
#else
    (void)g; (void)f; (void)bias; (void)rq; (void)lo; (void)hi; (void)pool2; (void)skip; (void)xc; (void)x;
    (void)batch; (void)scratch; (void)y;
    return 0;
#endif
}
