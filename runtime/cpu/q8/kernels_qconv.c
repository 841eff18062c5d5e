/* kernels_qconv.c: the integer convolutions other than the shift form,
 * vectorized: the taps of the sparse direct convolution (every scheme), and
 * for the 8-bit schemes the product on int16 pairs (the weights expanded
 * at load, dcz_qexpand_pairs; the patches, dcz_qim2col_pairs; then
 * dcz_qgemm, dcz_qconv2d_gemm) and the depthwise convolutions (by
 * a channel's copy between zeros, or by rows of its phase planes). The
 * references are kernels_int.c's.
 *
 * The convolution's taps (every scheme): a stored weight adds itself times
 * a shifted input row to an output row of 64-bit sums, 4 outputs a step
 * (the product of two 16-bit values fits the signed 32 x 32 -> 64
 * multiply), the loop around them kernels_int.c's.
 *
 * The patches and the depthwise kernels sum in 32 bits, exact for the
 * 8-bit schemes: the loader admits a model only when every output's sum
 * stays below 2^31 (qload.c). Last, the 8-bit schemes' convolutions on the
 * float shift form of their integer weights (qconv.h: integer sums that
 * floats hold exactly), where the CPU has no integer shift form: the
 * conversions here, the convolution by the float kernels. The x86 variants have per-function target
 * attributes, so libdcz needs no global -m flags.
 *
 * Checked by tests/unit/test_qkernels.c: the taps, the patches and the
 * depthwise kernels against dcz_qconv2d_direct_ref on the convolution grid,
 * bit for bit.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/model.h"

#if DCZ_BUILD_Q8_X86
#include <immintrin.h>

#include "runtime/cpu/avx2_lanes.h"
#define DCZ_X86 1
#elif DCZ_BUILD_Q8_NEON
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

/* the largest plane and margins a channel copied between zeros may have
 * (qim2col_pairs_same__avx2, qdw_same); the copies lie in the caller's
 * scratch (dcz_qconv2d_copy_bytes), not on the stack */
#define QPAIR_PLANE 4096
#define QPAIR_MARGIN 512

/* ---- the convolution's taps ---------------------------------------------- */

#ifdef DCZ_X86
/* 4 outputs a step: 4 int16 inputs widened to int64 lanes, times w by the
 * signed 32 x 32 -> 64 multiply (|x w| < 2^31), added to the sums */
__attribute__((target("avx2")))
static void qtap__avx2(const dcz_conv_geom *g, const dcz_conv_tap *ty, const dcz_conv_tap *tx, int64_t w,
                       const dcz_q *xp, int64_t *ap)
{
    if (g->sw != 1) {
        dcz_qtap_ref(g, ty, tx, w, xp, ap);
        return;
    }
    const uint32_t n = tx->hi - tx->lo;
    const size_t x_step = (size_t)g->sh * g->in_w;
    const __m256i wv = _mm256_set1_epi64x(w);
    size_t xi = (size_t)ty->first * g->in_w + tx->first, ai = (size_t)ty->lo * g->out_w + tx->lo;
    for (uint32_t oy = ty->lo; oy < ty->hi; oy++, xi += x_step, ai += g->out_w) {
        const dcz_q *xr = xp + xi;
        int64_t *ar = ap + ai;
        uint32_t i = 0;
        for (; i + 4 <= n; i += 4) {
            const __m256i xv = _mm256_cvtepi16_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(xr + i)));
            __m256i *at = (__m256i *)(void *)(ar + i);
            _mm256_storeu_si256(at, _mm256_add_epi64(_mm256_loadu_si256(at), _mm256_mul_epi32(xv, wv)));
        }
        for (; i < n; i++) ar[i] += w * xr[i];
    }
}
#endif

#ifdef DCZ_X86
/* A convolution each of whose output channels reads one input channel
 * (depthwise), at stride 1 with output rows as wide as the input's, in
 * AVX2 on 32-bit sums held in registers (exact on 8-bit schemes, qload.c):
 * as qim2col_pairs_same__avx2, output pixel p of tap (ky, kx) reads input
 * cell p + (ky - ph) in_w + (kx - pw) of the channel copied between zeros,
 * masked in the columns the shift takes past a row's side; 8 pixels a
 * step, every stored tap of the channel multiplied in, the sums widened to
 * the int64 accumulators once. The tap kernels added each tap to int64
 * sums in memory, 4 a step, and ran stride 2 by the scalar reference.
 * qdw_rows runs these layers too, by output rows, whose vectors of 8 leave
 * lanes empty on rows of 14 and 7: MobileNetV2-style int8 without this
 * path 2-4% slower (batch 1 670 -> 698 us, batch 64 47.0 -> 47.7 ms). */
/* 8 sums of 32 bits widened to the accumulators ap[at ..], within the
 * plane's pixels (the next channel's sums follow it) */
__attribute__((target("avx2")))
static inline void store_sums8__avx2(int64_t *ap, size_t at, size_t pixels, __m256i acc)
{
    const __m256i a0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(acc));
    const __m256i a1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(acc, 1));
    if (at + 8 <= pixels) {
        _mm256_storeu_si256((__m256i *)(void *)(ap + at), a0);
        _mm256_storeu_si256((__m256i *)(void *)(ap + at + 4), a1);
        return;
    }
    int64_t tail[8];
    _mm256_storeu_si256((__m256i *)(void *)tail, a0);
    _mm256_storeu_si256((__m256i *)(void *)(tail + 4), a1);
    memcpy(ap + at, tail, (pixels - at) * sizeof *ap);
}

__attribute__((target("avx2")))
static void dw_same_channel__avx2(const dcz_conv_geom *g, const dcz_q *src, const int32_t *off, const int32_t *w,
                                  const int32_t *lo, const int32_t *hi, uint32_t taps, int32_t bias, int64_t *ap)
{
    const size_t W = g->in_w, pixels = (size_t)g->out_h * g->out_w;
    int32_t col0[8];
    for (int i = 0; i < 8; i++) col0[i] = (int32_t)(i % W);
    const __m256i next = _mm256_set1_epi32((int32_t)(8 % W)), wv = _mm256_set1_epi32((int32_t)W);
    const __m256i last = _mm256_set1_epi32((int32_t)(W - 1));
    __m256i col = _mm256_loadu_si256((const __m256i *)(const void *)col0);
    for (size_t p = 0; p < pixels; p += 8) {
        __m256i acc = _mm256_set1_epi32(bias);
        for (uint32_t t = 0; t < taps; t++) {
            const __m256i in = _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(lo[t])),
                                                _mm256_cmpgt_epi32(_mm256_set1_epi32(hi[t]), col));
            const __m256i v = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + off[t] + p)));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(_mm256_and_si256(v, in), _mm256_set1_epi32(w[t])));
        }
        store_sums8__avx2(ap, p, pixels, acc);
        col = _mm256_add_epi32(col, next);
        col = _mm256_sub_epi32(col, _mm256_and_si256(_mm256_cmpgt_epi32(col, last), wv));
    }
}
#endif

#ifdef DCZ_NEON
static void qtap__neon(const dcz_conv_geom *g, const dcz_conv_tap *ty, const dcz_conv_tap *tx, int64_t w,
                       const dcz_q *xp, int64_t *ap)
{
    if (g->sw != 1) {
        dcz_qtap_ref(g, ty, tx, w, xp, ap);
        return;
    }
    const uint32_t n = tx->hi - tx->lo;
    const size_t x_step = (size_t)g->sh * g->in_w;
    const int32_t w32 = (int32_t)w;   /* a weight of the scheme's range */
    size_t xi = (size_t)ty->first * g->in_w + tx->first, ai = (size_t)ty->lo * g->out_w + tx->lo;
    for (uint32_t oy = ty->lo; oy < ty->hi; oy++, xi += x_step, ai += g->out_w) {
        const dcz_q *xr = xp + xi;
        int64_t *ar = ap + ai;
        uint32_t i = 0;
        for (; i + 4 <= n; i += 4) {
            const int32x4_t xv = vmovl_s16(vld1_s16(xr + i));
            vst1q_s64(ar + i, vmlal_n_s32(vld1q_s64(ar + i), vget_low_s32(xv), w32));
            vst1q_s64(ar + i + 2, vmlal_high_n_s32(vld1q_s64(ar + i + 2), xv, w32));
        }
        for (; i < n; i++) ar[i] += w * xr[i];
    }
}
#endif

dcz_qtap_fn dcz_qtap_isa(dcz_isa isa)
{
    if (isa == DCZ_ISA_REF) return dcz_qtap_ref;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) return qtap__avx2;
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) return qtap__neon;
#endif
    return NULL;
}

dcz_qtap_fn dcz_qtap_best(void)
{
    const dcz_qtap_fn f = dcz_qtap_isa(dcz_isa_best());
    return f ? f : dcz_qtap_ref;
}

/* ---- the patches of the integer product --------------------------------- */

#ifdef DCZ_X86
/* pair_row below at stride 1, 8 outputs a step: the int16 zero-extended
 * into the low half, or shifted into the high one. */
__attribute__((target("avx2")))
static void pair_row__avx2(uint32_t *o, const dcz_q *src, uint32_t out_w, uint32_t lo, uint32_t hi, int high)
{
    if (!high) {
        for (uint32_t ox = 0; ox < lo; ox++) o[ox] = 0;
        for (uint32_t ox = hi; ox < out_w; ox++) o[ox] = 0;
    }
    uint32_t ox = lo;
    for (; ox + 8 <= hi; ox += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + ox)));
        __m256i *d = (__m256i *)(void *)(o + ox);
        if (high) v = _mm256_or_si256(_mm256_loadu_si256(d), _mm256_slli_epi32(v, 16));
        _mm256_storeu_si256(d, v);
    }
    for (; ox < hi; ox++) {
        const uint32_t v = (uint16_t)src[ox];
        o[ox] = high ? o[ox] | v << 16 : v;
    }
}

/* The patches of a stride-1 convolution whose output rows are as wide as
 * its input's (padding (kw - 1) / 2 a side, or a 1x1 without), two patch
 * rows at a time in AVX2: output pixel p of tap (c, ky, kx) reads input
 * cell p + (ky - ph) in_w + (kx - pw) of channel c, one shift for the
 * whole plane, so each channel is copied once between zeros (above and
 * below, no mask needed there) and a tap is 8 loads a vector, zeroed in
 * the columns its shift takes past a row's side; the two rows' vectors are
 * interleaved (unpack) into pairs. Planes of up to QPAIR_PLANE cells with
 * margins of up to QPAIR_MARGIN (two channels on the stack); 0 elsewhere.
 * Where pair_row filled a row of each tap at a time (a vector at most per
 * row of 14 cells, the rest scalar) and or-ed the second tap in, one core
 * of an AMD EPYC (Zen 3), dcz bench best medians of alternated runs:
 * ResNet-style int8 batch 1 472 -> 316 us, batch 64 30.8 -> 20.2 ms. */
static int same_copy_fits(const dcz_conv_geom *g);

__attribute__((target("avx2")))
static int qim2col_pairs_same__avx2(const dcz_conv_geom *g, const dcz_q *x, int32_t *col2, size_t ldb, dcz_q *copy)
{
    const size_t W = g->in_w, pixels = (size_t)g->out_h * g->out_w, plane = (size_t)g->in_h * W;
    const size_t margin = (size_t)g->ph * W + g->pw + 16;
    if (!copy || !same_copy_fits(g)) return 0;
    /* two channels between zeros: the taps of a pair may be in two */
    dcz_q *pad[2] = { copy, copy + 2 * margin + plane };
    uint32_t held[2] = { UINT32_MAX, UINT32_MAX };
    const uint32_t ksize = g->kh * g->kw, K = g->in_c * ksize;
    /* lane i's column at pixel 0, and what 8 pixels further adds to it */
    int16_t col0[8];
    for (int i = 0; i < 8; i++) col0[i] = (int16_t)(i % W);
    const __m128i next = _mm_set1_epi16((int16_t)(8 % W)), w = _mm_set1_epi16((int16_t)W);
    const __m128i last = _mm_set1_epi16((int16_t)(W - 1));
    for (uint32_t r = 0; r < K; r += 2) {
        /* tap j of the pair: its channel's copy shifted, its column bounds */
        const dcz_q *src[2] = { NULL, NULL };
        __m128i lo[2], hi[2];
        for (uint32_t j = 0; j < 2 && r + j < K; j++) {
            const uint32_t c = (r + j) / ksize, ky = (r + j) % ksize / g->kw, kx = (r + j) % g->kw;
            dcz_q *pc = pad[c & 1];
            if (held[c & 1] != c) {
                memset(pc, 0, margin * sizeof *pc);
                memcpy(pc + margin, x + (size_t)c * plane, plane * sizeof *pc);
                memset(pc + margin + plane, 0, margin * sizeof *pc);
                held[c & 1] = c;
            }
            src[j] = pc + margin + ((int64_t)ky - g->ph) * (int64_t)W + ((int64_t)kx - g->pw);
            /* output columns ox with 0 <= ox + kx - pw < W */
            lo[j] = _mm_set1_epi16((int16_t)((int)g->pw - (int)kx - 1));
            hi[j] = _mm_set1_epi16((int16_t)((int)W + (int)g->pw - (int)kx));
        }
        uint32_t *row = (uint32_t *)(void *)(col2 + (size_t)(r / 2) * ldb);
        __m128i col = _mm_loadu_si128((const __m128i *)(const void *)col0);
        for (size_t p = 0; p < pixels; p += 8) {
            __m128i v[2] = { _mm_setzero_si128(), _mm_setzero_si128() };
            for (uint32_t j = 0; j < 2; j++) {
                if (!src[j]) continue;
                const __m128i in = _mm_and_si128(_mm_cmpgt_epi16(col, lo[j]), _mm_cmplt_epi16(col, hi[j]));
                v[j] = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(src[j] + p)), in);
            }
            const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi16(v[0], v[1]), _mm_unpacklo_epi16(v[0], v[1]));
            _mm256_storeu_si256((__m256i *)(void *)(row + p), pairs);
            /* each lane 8 pixels further: its column plus 8 mod W, less W
             * past the row */
            col = _mm_add_epi16(col, next);
            col = _mm_sub_epi16(col, _mm_and_si128(_mm_cmpgt_epi16(col, last), w));
        }
        /* the pairs past the plane: the last vector's loads ran past it */
        for (size_t p = pixels; p < ldb; p++) row[p] = 0;
    }
    return 1;
}

/* A channel padded (ph zero rows above and below, pw zero columns left and
 * the rest right) and split by column phase: PH[px][iy][j] = padded row
 * iy's column j sw + px, phase rows of wq cells (8 more than a run of
 * out_w from any tap reads, for a vector's overrun), QPH_CELLS at most. */
#define QPH_CELLS 8192
typedef struct qphase {
    size_t rows, wq, cells;
} qphase;

static int qphase_of(const dcz_conv_geom *g, qphase *q)
{
    const size_t sw = g->sw;
    q->rows = (size_t)g->in_h + 2 * (size_t)g->ph;
    q->wq = ((size_t)g->in_w + 2 * (size_t)g->pw + sw - 1) / sw + 8;
    q->cells = sw * q->rows * q->wq;
    return sw <= 2 && q->cells <= QPH_CELLS;
}

/* Whether a stride-1 convolution whose output rows are as wide as its
 * input's takes its channels copied between zeros (the plane and margins
 * of qim2col_pairs_same__avx2 and qdw_same). */
static int same_copy_fits(const dcz_conv_geom *g)
{
    const size_t plane = (size_t)g->in_h * g->in_w, margin = (size_t)g->ph * g->in_w + g->pw + 16;
    return dcz_isa_supported(DCZ_ISA_AVX2) && g->sh == 1 && g->sw == 1 && g->out_w == g->in_w &&
           g->out_h == g->in_h && plane <= QPAIR_PLANE && margin <= QPAIR_MARGIN;
}

/* dcz_qconv2d_copy_bytes here: two channels' copies of the larger kind
 * that runs g */
static uint64_t copy_bytes(const dcz_conv_geom *g)
{
    uint64_t cells = 0;
    qphase q;
    if (same_copy_fits(g)) cells = 2 * (2 * ((uint64_t)g->ph * g->in_w + g->pw + 16) + (uint64_t)g->in_h * g->in_w);
    if (dcz_isa_supported(DCZ_ISA_AVX2) && qphase_of(g, &q) && 2 * (uint64_t)q.cells > cells) cells = 2 * (uint64_t)q.cells;
    return cells * sizeof(dcz_q);
}

#ifdef DCZ_X86
/* The rows of qphase_copy at column stride 2 and padding 0 or 1 (the phase
 * planes zeroed): each row's even and odd inputs (E, O) dealt by a byte
 * shuffle and a permute, 16 inputs a step, by masked loads of their pairs
 * (a 32-bit lane each; an odd row's last input by itself), the phases'
 * cells past the row zeros. Padding 0: phase 0 takes E from cell 0, phase
 * 1 O; padding 1: phase 1 takes E from cell 0, phase 0 O from cell 1. */
__attribute__((target("avx2")))
static void qphase_copy2__avx2(const dcz_conv_geom *g, const qphase *q, const dcz_q *xc, dcz_q *pc)
{
    const size_t W = g->in_w, pairs = W / 2;
    /* per 128-bit lane: the even words to the low 8 bytes, the odd ones to the high */
    const __m256i deal = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                          0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    for (size_t iy = 0; iy < g->in_h; iy++) {
        const dcz_q *xr = xc + iy * W;
        dcz_q *p0 = pc + (iy + g->ph) * q->wq, *p1 = p0 + q->rows * q->wq;
        dcz_q *e = g->pw ? p1 : p0, *o = g->pw ? p0 + 1 : p1;
        for (size_t k = 0; k < pairs; k += 8) {
            const __m256i m = dcz_mask8__avx2((uint32_t)(pairs - k));
            const __m256i v = _mm256_permute4x64_epi64(
                _mm256_shuffle_epi8(_mm256_maskload_epi32((const int *)(const void *)(xr + 2 * k), m), deal), 0xD8);
            _mm_storeu_si128((__m128i *)(void *)(e + k), _mm256_castsi256_si128(v));
            _mm_storeu_si128((__m128i *)(void *)(o + k), _mm256_extracti128_si256(v, 1));
        }
        if (W & 1) e[pairs] = xr[W - 1];   /* an odd row's last input: even */
    }
}
#endif

static void qphase_copy(const dcz_conv_geom *g, const qphase *q, const dcz_q *xc, dcz_q *pc)
{
    const size_t sw = g->sw, W = g->in_w;
    memset(pc, 0, q->cells * sizeof *pc);
    if (sw == 1) {   /* one phase: the padded rows */
        for (size_t iy = 0; iy < g->in_h; iy++)
            memcpy(pc + (iy + g->ph) * q->wq + g->pw, xc + iy * W, W * sizeof *pc);
        return;
    }
#ifdef DCZ_X86
    if (g->pw <= 1 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        qphase_copy2__avx2(g, q, xc, pc);
        return;
    }
#endif
    for (size_t iy = 0; iy < g->in_h; iy++) {
        /* padded column ix + pw: phase px, cell at (no division a cell: they
         * took this layout longer than pair_row) */
        size_t px = g->pw % sw, at = g->pw / sw;
        dcz_q *p0 = pc + (iy + g->ph) * q->wq, *p1 = p0 + q->rows * q->wq;
        for (size_t ix = 0; ix < W; ix++) {
            (px ? p1 : p0)[at] = xc[iy * W + ix];
            if (++px == sw) {
                px = 0;
                at++;
            }
        }
    }
}

/* Where output row 0 of tap (ky, kx) starts in a channel's phase copy:
 * phase kx % sw, padded row ky, cell kx / sw; output row oy's run is sh wq
 * cells further a row. */
static size_t qphase_tap(const dcz_conv_geom *g, const qphase *q, uint32_t ky, uint32_t kx)
{
    return (kx % g->sw * q->rows + ky) * q->wq + kx / g->sw;
}

/* The patches of any convolution at column stride 1 or 2, two patch rows
 * at a time in AVX2: each channel copied once, padded (ph zero rows above
 * and below, pw zero columns left and the rest right) and split by column
 * phase (PH[px][iy][j] = padded row iy's column j sw + px), so that output
 * row oy of tap (ky, kx) is the contiguous run PH[kx % sw][oy sh + ky][kx /
 * sw ..] of out_w cells: a load of 8 a vector, no mask. A row's vectors run
 * up to 7 pairs past it, into the next row's cells (written after it) or
 * past the plane (zeroed after), but never past the patch row. The copy is QPH_CELLS cells at most (two
 * channels on the stack); 0 elsewhere. Where pair_row filled a row of a tap
 * at a time, scalar at stride 2, one core of an AMD EPYC (Zen 3), dcz bench
 * best medians of alternated runs, batch 1: ResNet-style int8 316 -> 300
 * us, LeNet-5 int8 144 -> 119. */
__attribute__((target("avx2")))
static int qim2col_pairs_rows__avx2(const dcz_conv_geom *g, const dcz_q *x, int32_t *col2, size_t ldb, dcz_q *copy)
{
    qphase q;
    const size_t pixels = (size_t)g->out_h * g->out_w;
    if (!copy || !qphase_of(g, &q) || !dcz_isa_supported(DCZ_ISA_AVX2)) return 0;
    const size_t wq = q.wq;
    dcz_q *ph[2] = { copy, copy + q.cells };
    uint32_t held[2] = { UINT32_MAX, UINT32_MAX };
    const uint32_t ksize = g->kh * g->kw, K = g->in_c * ksize;
    for (uint32_t r = 0; r < K; r += 2) {
        const dcz_q *src[2] = { NULL, NULL };
        for (uint32_t j = 0; j < 2 && r + j < K; j++) {
            const uint32_t c = (r + j) / ksize, ky = (r + j) % ksize / g->kw, kx = (r + j) % g->kw;
            dcz_q *pc = ph[c & 1];
            if (held[c & 1] != c) {
                qphase_copy(g, &q, x + (size_t)c * g->in_h * g->in_w, pc);
                held[c & 1] = c;
            }
            src[j] = pc + qphase_tap(g, &q, ky, kx);
        }
        uint32_t *row = (uint32_t *)(void *)(col2 + (size_t)(r / 2) * ldb);
        const size_t step = (size_t)g->sh * wq;
        for (uint32_t oy = 0; oy < g->out_h; oy++) {
            uint32_t *o = row + (size_t)oy * g->out_w;
            for (uint32_t ox = 0; ox < g->out_w; ox += 8) {
                __m128i v[2] = { _mm_setzero_si128(), _mm_setzero_si128() };
                for (uint32_t j = 0; j < 2; j++)
                    if (src[j]) v[j] = _mm_loadu_si128((const __m128i *)(const void *)(src[j] + oy * step + ox));
                const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi16(v[0], v[1]), _mm_unpacklo_epi16(v[0], v[1]));
                if ((size_t)oy * g->out_w + ox + 8 <= ldb) {
                    _mm256_storeu_si256((__m256i *)(void *)(o + ox), pairs);
                } else {   /* past the patch row: its own cells only */
                    uint32_t t[8];
                    _mm256_storeu_si256((__m256i *)(void *)t, pairs);
                    memcpy(o + ox, t, (g->out_w - ox < 8 ? g->out_w - ox : 8) * sizeof *t);
                }
            }
        }
        for (size_t p = pixels; p < ldb; p++) row[p] = 0;
    }
    return 1;
}

#endif

/* One output row of one patch row into the low (high 0: every element
 * written, 0 outside) or high halves (high 1: or-ed in, inside only) of o;
 * xr the input row (NULL: in the padding), inside outputs lo .. hi - 1;
 * avx2: this CPU runs pair_row__avx2. */
static void pair_row(uint32_t *o, const dcz_q *xr, uint32_t out_w, uint32_t sw, int64_t off, uint32_t lo,
                     uint32_t hi, int high, int avx2)
{
#ifdef DCZ_X86
    if (sw == 1 && xr && hi > lo && avx2) {
        pair_row__avx2(o, xr + off, out_w, lo, hi, high);
        return;
    }
#endif
    if (!xr) lo = hi = 0;
    if (!high) {
        for (uint32_t ox = 0; ox < lo; ox++) o[ox] = 0;
        for (uint32_t ox = hi; ox < out_w; ox++) o[ox] = 0;
    }
    const dcz_q *src = xr ? xr + off : NULL;
    if (high)
        for (uint32_t ox = lo; ox < hi; ox++) o[ox] |= (uint32_t)(uint16_t)src[(int64_t)ox * sw] << 16;
    else
        for (uint32_t ox = lo; ox < hi; ox++) o[ox] = (uint16_t)src[(int64_t)ox * sw];
}

void dcz_qim2col_pairs(const dcz_conv_geom *g, const dcz_q *x, int32_t *col2, size_t ldb, dcz_q *copy)
{
#ifdef DCZ_X86
    if (qim2col_pairs_same__avx2(g, x, col2, ldb, copy) || qim2col_pairs_rows__avx2(g, x, col2, ldb, copy)) return;
#else
    (void)copy;
#endif
    const size_t pixels = (size_t)g->out_h * g->out_w;
    const int avx2 = dcz_isa_supported(DCZ_ISA_AVX2);
    for (uint32_t ic = 0; ic < g->in_c; ic++)
        for (uint32_t ky = 0; ky < g->kh; ky++)
            for (uint32_t kx = 0; kx < g->kw; kx++) {
                const uint32_t r = (ic * g->kh + ky) * g->kw + kx;
                uint32_t *row = (uint32_t *)(void *)(col2 + (size_t)(r / 2) * ldb);
                const int64_t off = (int64_t)kx - g->pw;
                uint32_t lo, hi;
                dcz_conv_inside_cols(g, kx, &lo, &hi);
                for (uint32_t oy = 0; oy < g->out_h; oy++) {
                    const int64_t iy = (int64_t)oy * g->sh + ky - g->ph;
                    const dcz_q *xr = iy >= 0 && iy < g->in_h ? x + ((size_t)ic * g->in_h + (size_t)iy) * g->in_w : NULL;
                    pair_row(row + (size_t)oy * g->out_w, xr, g->out_w, g->sw, off, lo, hi, (int)(r & 1), avx2);
                }
                if (!(r & 1))
                    for (size_t p = pixels; p < ldb; p++) row[p] = 0;
            }
}

/* ---- the integer product for convolutions ------------------------------- */

void dcz_qexpand_pairs(const dcz_qsparse *s, uint32_t k, int32_t *w2)
{
    const uint32_t k2 = (k + 1) / 2;
    memset(w2, 0, (size_t)s->rows * k2 * sizeof *w2);
    for (uint32_t r = 0; r < s->rows; r++) {
        uint32_t *row = (uint32_t *)(void *)(w2 + (size_t)r * k2), col = 0;
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
            col += s->step[e];
            if (s->step[e] == DCZ_STEP_FILLER) continue;
            row[col / 2] |= (uint32_t)(uint16_t)dcz_qsparse_weight(s, r, e) << (16 * (col & 1));
        }
    }
}

uint64_t dcz_qconv2d_gemm_scratch_floats(const dcz_conv_geom *g)
{
    const uint64_t k2 = ((uint64_t)g->in_c * g->kh * g->kw + 1) / 2, ldb = dcz_gemm_ldb((size_t)g->out_h * g->out_w);
    return k2 * ldb + (dcz_qconv2d_copy_bytes(g) + sizeof(float) - 1) / sizeof(float);
}

void dcz_qconv2d_gemm(const dcz_conv_geom *g, const int32_t *w2, const int64_t *bias, const dcz_q *x, size_t batch,
                      int32_t *scratch, int64_t *acc)
{
    const size_t pixels = (size_t)g->out_h * g->out_w, ldb = dcz_gemm_ldb(pixels);
    const uint32_t k2 = (g->in_c * g->kh * g->kw + 1) / 2;
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_sample = pixels * g->out_c;
    dcz_q *copy = (dcz_q *)(void *)(scratch + (size_t)k2 * ldb);   /* after the patches */
    for (size_t b = 0; b < batch; b++) {
        dcz_qim2col_pairs(g, x + b * in_sample, scratch, ldb, copy);
        dcz_qgemm(g->out_c, pixels, k2, w2, k2, scratch, ldb, bias, acc + b * out_sample, pixels);
    }
}

/* ---- depthwise convolutions on integers --------------------------------- */

#ifdef DCZ_X86
/* The stored taps of output channel oc of a depthwise convolution: their
 * window rows and columns and weights, in column order; their count. */
static uint32_t qdw_taps(const dcz_conv_geom *g, const dcz_qsparse *s, uint32_t oc, uint32_t *ky, uint32_t *kx,
                         int32_t *w)
{
    const uint32_t ksize = g->kh * g->kw;
    uint32_t taps = 0, c = 0;
    for (uint32_t e = s->row_ptr[oc]; e < s->row_ptr[oc + 1]; e++) {
        c += s->step[e];
        if (s->step[e] == DCZ_STEP_FILLER) continue;
        ky[taps] = c % ksize / g->kw;
        kx[taps] = c % g->kw;
        w[taps++] = (int32_t)dcz_qsparse_weight(s, oc, e);
    }
    return taps;
}

static int qdw_same_runs(const dcz_conv_geom *g)
{
    return dcz_conv_group_in(g) == 1 && same_copy_fits(g) && g->kh * g->kw <= DCZ_MAX_WINDOW * DCZ_MAX_WINDOW;
}

/* dcz_qconv2d_depthwise where the output planes are as large as the
 * input's at stride 1: dw_same_channel__avx2 */
static int qdw_same(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                    dcz_q *pad, int64_t *acc)
{
    const size_t W = g->in_w, plane = (size_t)g->in_h * W, pixels = plane;
    const size_t margin = (size_t)g->ph * W + g->pw + 16;
    if (!pad || !qdw_same_runs(g)) return 0;
    int32_t off[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], w[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    int32_t lo[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], hi[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    uint32_t ky[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], kx[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    for (size_t b = 0; b < batch; b++) {
        uint32_t held = UINT32_MAX;
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            const uint32_t ic = dcz_conv_in0(g, oc);
            if (held != ic) {
                memset(pad, 0, margin * sizeof *pad);
                memcpy(pad + margin, x + (b * g->in_c + ic) * plane, plane * sizeof *pad);
                memset(pad + margin + plane, 0, margin * sizeof *pad);
                held = ic;
            }
            const uint32_t taps = qdw_taps(g, s, oc, ky, kx, w);
            for (uint32_t t = 0; t < taps; t++) {
                off[t] = (int32_t)((int64_t)margin + ((int64_t)ky[t] - g->ph) * (int64_t)W + ((int64_t)kx[t] - g->pw));
                /* output columns ox with 0 <= ox + kx - pw < W */
                lo[t] = (int32_t)g->pw - (int32_t)kx[t] - 1;
                hi[t] = (int32_t)W + (int32_t)g->pw - (int32_t)kx[t];
            }
            dw_same_channel__avx2(g, pad, off, w, lo, hi, taps, bias ? (int32_t)bias[oc] : 0,
                                  acc + (b * g->out_c + oc) * pixels);
        }
    }
    return 1;
}

/* dcz_qconv2d_depthwise elsewhere (column stride 1 or 2, any padding): the
 * channel's phase copy (qphase_copy), each output row's runs of the
 * channel's stored taps, 8 outputs a step on 32-bit sums in registers,
 * widened to the accumulators once; a row's last vector running past it
 * lands on the next row's (written after it), but for the plane's last
 * row. The tap kernels ran stride 2 by the scalar reference, with 64-bit
 * sums in memory. */
static int qdw_rows_runs(const dcz_conv_geom *g)
{
    qphase q;
    return dcz_isa_supported(DCZ_ISA_AVX2) && dcz_conv_group_in(g) == 1 && qphase_of(g, &q) &&
           g->kh * g->kw <= DCZ_MAX_WINDOW * DCZ_MAX_WINDOW;
}

__attribute__((target("avx2")))
static void qdw_rows_channel__avx2(const dcz_conv_geom *g, const qphase *q, const dcz_q *pc, const uint32_t *off,
                                   const int32_t *w, uint32_t taps, int32_t bias, int64_t *ap)
{
    const size_t step = (size_t)g->sh * q->wq, pixels = (size_t)g->out_h * g->out_w;
    for (uint32_t oy = 0; oy < g->out_h; oy++) {
        const dcz_q *row = pc + oy * step;
        for (uint32_t ox = 0; ox < g->out_w; ox += 8) {
            __m256i acc = _mm256_set1_epi32(bias);
            for (uint32_t t = 0; t < taps; t++) {
                const __m256i v = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(row + off[t] + ox)));
                acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(v, _mm256_set1_epi32(w[t])));
            }
            store_sums8__avx2(ap, (size_t)oy * g->out_w + ox, pixels, acc);
        }
    }
}

static int qdw_rows(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                    dcz_q *pc, int64_t *acc)
{
    qphase q;
    if (!pc || !qdw_rows_runs(g) || !qphase_of(g, &q)) return 0;
    const size_t plane = (size_t)g->in_h * g->in_w, pixels = (size_t)g->out_h * g->out_w;
    uint32_t off[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], ky[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW], kx[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    int32_t w[DCZ_MAX_WINDOW * DCZ_MAX_WINDOW];
    for (size_t b = 0; b < batch; b++) {
        uint32_t held = UINT32_MAX;
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            const uint32_t ic = dcz_conv_in0(g, oc);
            if (held != ic) {
                qphase_copy(g, &q, x + (b * g->in_c + ic) * plane, pc);
                held = ic;
            }
            const uint32_t taps = qdw_taps(g, s, oc, ky, kx, w);
            for (uint32_t t = 0; t < taps; t++) off[t] = (uint32_t)qphase_tap(g, &q, ky[t], kx[t]);
            qdw_rows_channel__avx2(g, &q, pc, off, w, taps, bias ? (int32_t)bias[oc] : 0,
                                   acc + (b * g->out_c + oc) * pixels);
        }
    }
    return 1;
}

#endif

int dcz_qconv2d_depthwise(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x,
                          size_t batch, dcz_q *copy, int64_t *acc)
{
#ifdef DCZ_X86
    return qdw_same(g, s, bias, x, batch, copy, acc) || qdw_rows(g, s, bias, x, batch, copy, acc);
#else
    (void)g; (void)s; (void)bias; (void)x; (void)batch; (void)copy; (void)acc;
    return 0;
#endif
}

uint64_t dcz_qconv2d_copy_bytes(const dcz_conv_geom *g)
{
#ifdef DCZ_X86
    return copy_bytes(g);
#else
    (void)g;
    return 0;
#endif
}

int dcz_qconv2d_depthwise_runs(const dcz_conv_geom *g)
{
#ifdef DCZ_X86
    return qdw_same_runs(g) || qdw_rows_runs(g);
#else
    (void)g;
    return 0;
#endif
}

/* ---- integer sums held exactly by floats ---------------------------------- */

uint32_t dcz_qconv2d_f32_rows(const dcz_qsparse *s, int32_t xmax, uint8_t *over)
{
    uint32_t n = 0;
    for (uint32_t r = 0; r < s->rows; r++) {
        int64_t sum = 0;
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
            const int32_t w = dcz_qsparse_weight(s, r, e);
            sum += w < 0 ? -(int64_t)w : w;
        }
        const int past = sum * xmax > ((int64_t)1 << 24);
        if (over) over[r] = (uint8_t)past;
        n += (uint32_t)past;
    }
    return n;
}

uint64_t dcz_qconv2d_f32_scratch_floats(const dcz_conv_geom *g)
{
    const uint64_t in = (uint64_t)g->in_c * g->in_h * g->in_w, plane = (uint64_t)g->out_h * g->out_w;
    const uint64_t out = plane * g->out_c;
    /* the sample as floats, its sums, a channel's 64-bit sums, the form's scratch */
    return ((in + 15) & ~(uint64_t)15) + ((out + 15) & ~(uint64_t)15) + ((2 * plane + 15) & ~(uint64_t)15) +
           dcz_shift_scratch_floats(g);
}

#ifdef DCZ_X86
__attribute__((target("avx2")))
static void to_floats__avx2(const dcz_q *x, size_t n, float *y)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(x + i)))));
    for (; i < n; i++) y[i] = (float)x[i];
}

/* acc (n) = the integers of y (each exact) plus b */
__attribute__((target("avx2")))
static void to_sums__avx2(const float *y, size_t n, int64_t b, int64_t *acc)
{
    const __m256i vb = _mm256_set1_epi64x(b);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_cvtps_epi32(_mm256_loadu_ps(y + i));
        _mm256_storeu_si256((__m256i *)(void *)(acc + i), _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)), vb));
        _mm256_storeu_si256((__m256i *)(void *)(acc + i + 4),
                            _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)), vb));
    }
    for (; i < n; i++) acc[i] = (int64_t)y[i] + b;
}
#endif

/* The scratch's blocks (dcz_qconv2d_f32_scratch_floats) */
typedef struct f32_blocks {
    float *xf, *yf, *work;
    int64_t *row;
} f32_blocks;

static f32_blocks f32_scratch(const dcz_conv_geom *g, float *scratch)
{
    const size_t in = (size_t)g->in_c * g->in_h * g->in_w, plane = (size_t)g->out_h * g->out_w;
    const size_t out = plane * g->out_c;
    f32_blocks k;
    k.xf = scratch;
    k.yf = k.xf + ((in + 15) & ~(size_t)15);
    k.row = (int64_t *)(void *)(k.yf + ((out + 15) & ~(size_t)15));
    k.work = (float *)(void *)k.row + ((2 * plane + 15) & ~(size_t)15);
    return k;
}

/* Sample xs's float sums into k->yf (no bias): converted, convolved */
static void f32_sums(dcz_pool *pool, const dcz_conv_geom *g, const dcz_shift *f, const dcz_q *xs, const f32_blocks *k)
{
    const size_t in = (size_t)g->in_c * g->in_h * g->in_w;
    const dcz_act none = { 0, 0.0f, 0.0f };
#ifdef DCZ_X86
    if (dcz_isa_supported(DCZ_ISA_AVX2)) to_floats__avx2(xs, in, k->xf);
    else
#endif
        for (size_t i = 0; i < in; i++) k->xf[i] = (float)xs[i];
    dcz_conv2d_shift_pool(dcz_conv2d_shift_splits(g, f) ? pool : NULL, g, f, NULL, k->xf, 1, &none, NULL, k->work,
                          k->yf);
}

/* ap (out_h out_w) = bias[r] + output channel r of sample xs by the
 * integer taps, as a layer of one output channel */
static void f32_row_taps(const dcz_conv_geom *g, const dcz_qsparse *s, uint32_t r, const int64_t *bias, const dcz_q *xs,
                         int64_t *ap)
{
    dcz_conv_geom g1 = *g;
    g1.out_c = 1;
    dcz_qsparse v = *s;
    v.rows = 1;
    v.row_ptr = s->row_ptr + r;
    if (s->idx) v.qtab = s->qtab + (size_t)r * s->k;
    dcz_qconv2d_sparse_taps(&g1, &v, bias ? bias + r : NULL, xs, 1, dcz_qtap_best(), ap);
}

void dcz_qconv2d_f32(dcz_pool *pool, const dcz_conv_geom *g, const dcz_shift *f, const dcz_qsparse *s,
                     const uint8_t *over, const int64_t *bias, const dcz_q *x, size_t batch, float *scratch,
                     int64_t *acc)
{
    const size_t in = (size_t)g->in_c * g->in_h * g->in_w, plane = (size_t)g->out_h * g->out_w;
    const size_t out = plane * g->out_c;
    const f32_blocks k = f32_scratch(g, scratch);
#ifdef DCZ_X86
    const int avx2 = dcz_isa_supported(DCZ_ISA_AVX2);
#endif
    for (size_t b = 0; b < batch; b++) {
        const dcz_q *xs = x + b * in;
        int64_t *as = acc + b * out;
        f32_sums(pool, g, f, xs, &k);
        for (uint32_t c = 0; c < g->out_c; c++) {
            if (over && over[c]) {
                f32_row_taps(g, s, c, bias, xs, as + c * plane);
                continue;
            }
            const int64_t bc = bias ? bias[c] : 0;
#ifdef DCZ_X86
            if (avx2) {
                to_sums__avx2(k.yf + c * plane, plane, bc, as + c * plane);
                continue;
            }
#endif
            for (size_t i = 0; i < plane; i++) as[c * plane + i] = (int64_t)k.yf[c * plane + i] + bc;
        }
    }
}

void dcz_qconv2d_f32_requant(dcz_pool *pool, const dcz_conv_geom *g, const dcz_shift *f, const dcz_qsparse *s,
                             const uint8_t *over, const int64_t *bias, const dcz_requant *rq, int32_t lo, int32_t hi,
                             const dcz_q *x, size_t batch, float *scratch, dcz_q *y)
{
    const size_t in = (size_t)g->in_c * g->in_h * g->in_w, plane = (size_t)g->out_h * g->out_w;
    const size_t out = plane * g->out_c;
    const f32_blocks k = f32_scratch(g, scratch);
    for (size_t b = 0; b < batch; b++) {
        const dcz_q *xs = x + b * in;
        dcz_q *ys = y + b * out;
        f32_sums(pool, g, f, xs, &k);
        for (uint32_t c = 0; c < g->out_c; c++) {
            if (over && over[c]) {
                f32_row_taps(g, s, c, bias, xs, k.row);
                const dcz_requant rc = { rq->mult + c, rq->shift + c, rq->qmax, rq->pre ? rq->pre + c : NULL };
                dcz_requant8(&rc, k.row, 1, 1, (uint32_t)plane, ys + c * plane);
                dcz_qclamp(ys + c * plane, plane, lo, hi);
                continue;
            }
            dcz_requant8_f32(k.yf + c * plane, plane, bias ? (int32_t)bias[c] : 0, rq->mult[c], rq->shift[c], rq->qmax,
                             lo, hi, 0, ys + c * plane);
        }
    }
}
