/* shift_depthwise.c: depthwise float convolutions held in the shift form
 * (one input channel a group, one output channel each: blocks of one), run
 * straight from the input, without the split and the copy out that cost
 * several times their few multiply-adds on small planes: on AVX-512 by
 * rows or with the plane in registers, on AVX2 with the channels in the
 * lanes (every tap kept) or by rows (strided, or over rows of more than
 * 32 outputs). Each output starts from the bias and
 * takes the fused multiply-add of each of its channel's taps in column
 * order, the same taps from the same form, so the bits of the shift form's
 * reference (kernels_shift.c, shift_planes_ref). dcz_shift_dw_path,
 * dcz_shift_dw_lanes_fit and dcz_shift_dw_rows_avx2 say which runs a
 * layer; kernels_shift.c calls them (shift.h). x86 only.
 *
 * Checked by tests/unit/test_kernels.c: the shift form's variants on every
 * geometry of the convolution grid, depthwise ones among them, against the
 * scalar reference, bit for bit.
 */
#include <string.h>

#include "runtime/cpu/f32/shift.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>

#include "runtime/cpu/f32/act_x86.h"
#include "runtime/cpu/avx2_lanes.h"
#include "runtime/cpu/shift_split.h"

/* Depthwise convolutions (one input channel a group, one output channel
 * each: blocks of one) at strides 1 and 2, straight from the input into
 * the output (AVX-512): the split and the copy out cost several times the
 * nine or so multiply-adds of each output on such small planes. Two
 * kernels, each output starting from the bias and taking the fused
 * multiply-add of each of its channel's taps in column order, so the bits
 * of shift_planes_ref:
 *   rows   each output row, a vector of 16 columns at a time, over the
 *          input row its tap reads (masked loads: lanes outside the image
 *          read 0, as the split input's padding does; at stride 2 a permute
 *          keeps every other column); a row above or below the image is
 *          read from zeros, so the tap adds w x 0 there as the reference
 *          does. R rows are summed at once (8, or 7 where the plane has 7
 *          or 14 rows, 4 of two vectors), the tap outermost, so that each
 *          weight is broadcast once and the R NV sums stay in registers.
 *          Where a vector's window spans 32 columns or fewer (one vector
 *          a row, or two at stride 1), each input row is loaded once for
 *          all its taps and each tap permutes its lanes out of it
 *          (dw_rows1__avx512); else each tap loads (dw_rows__avx512).
 *          Rows wider than two vectors go in runs of two, each run down
 *          the whole plane before the next (an odd count's last run over
 *          the vector before it), 4 rows a call. A channel that keeps
 *          every cell of a 3 x 3 or 5 x 5 window (a dense layer's) goes
 *          by input rows instead (dw_full__avx512): each input row loaded
 *          and shifted once for every output row that reads it.
 *   plane  small planes held in registers whole (dcz_shift_dw_plane__avx512).
 * Both also run by bands of output rows from a ring of input rows, which
 * the pointwise convolution before it fills (dcz_shift_dw_band__avx512,
 * for kernels_bands.c).
 * A 1 x 1 window at stride 1 without padding (a batch norm held as a
 * convolution) goes through either rows entry as whole planes, a fused
 * multiply-add an output (dw_scale__avx512, dw_scale__avx2).
 * dcz_shift_dw_path picks: plane where it fits, else rows, except at stride 1 over
 * rows of 8 or fewer (7 x 7 that the plane cannot take), where the shift
 * form was faster. Measured per layer on the MobileNetV2-style preset,
 * dense, batch 1, one core of an AMD EPYC (us, shift form -> this):
 * 16 x 28 x 28 7.8 -> 6.5, 96 x 14 x 14 stride 2 30.6 -> 21.8,
 * 144 x 14 x 14 23.0 -> 21.0, 144 x 7 x 7 stride 2 19.7 -> 17.7,
 * 192 x 7 x 7 10.2 -> 8.2 (plane; 16.2 by rows), 192 x 4 x 4 stride 2
 * 14.7 -> 14.3, 384 x 4 x 4 10.3 -> 7.2 (plane; 20.4 by rows). The whole
 * model: dense 324 -> 302 us, compressed 285 -> 261 (dcz bench medians,
 * alternated); rows 7 at a time over 7 and 14 rows, not 8: the three
 * layers by rows 2 us faster each, the dense model 303 -> 297 us.
 * Over the large planes of torchvision's networks at 224 x 224, where the
 * shift form ran them before the runs (one thread of an Intel Xeon with
 * AVX-512, dense 3 x 3 weights, best thread times of alternated runs, us,
 * shift form -> rows): 32 x 112 x 112 436 -> 338, 96 x 112 x 112 stride
 * 2 975 -> 521, 144 x 56 x 56 513 -> 356; rows of 32 or fewer unchanged
 * (384 x 14 x 14 77 / 80, 192 x 28 x 28 stride 2 46 / 47, 144 x 56 x 56
 * 5 x 5 stride 2 422 / 404). */
#define DW_MAX_TAPS 49
#define DW_MAX_KW 7
/* the rows kernels' bounds: output rows of up to DW_MAX_VEC vectors
 * (AVX2: DW_MAX_VEC8 vectors of 8), input rows of up to DW_MAX_W columns
 * (the row of zeros read above and below the image), planes of up to
 * DW_MAX_ROWS output rows (a table of the input rows a channel's windows
 * read); the lanes kernel's band (see it) */
#define DW_MAX_VEC 32
#define DW_MAX_W 512
#define DW_MAX_ROWS 512
#define DW_MAX_VEC8 32
#define DWL_BAND_FLOATS (16u << 10)
static const float dw_zeros[DW_MAX_W];

/* a run of (up to) two vectors of an output row */
typedef struct dw_plan {
    int64_t first[DW_MAX_KW][2];   /* the input column of lane 0 of vector v at tap column kx */
    __mmask16 lo[DW_MAX_KW][2], hi[DW_MAX_KW][2];   /* its lanes inside the row (hi: the next 16, stride 2) */
} dw_plan;

/* Output rows oy0 .. oy0 + R - 1 of one channel (those below out_h
 * stored), the NV vectors of a run of each (the last one's lanes tail),
 * rows[j] the input row that window row j of output row 0 of the group
 * reads, times the stride. */
__attribute__((target("avx512f"), always_inline))
static inline void dw_rows__avx512(const size_t NV, const size_t R, const int S2, const dw_plan *pl,
                                   __mmask16 tail, size_t sh, const float *const *rows, const uint8_t *ky,
                                   const uint8_t *kx, const float *w, uint32_t n, float b, size_t nrows,
                                   size_t out_w, const dcz_act *act, float *y)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    __m512 acc[8][2];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 2
        for (size_t v = 0; v < NV; v++) acc[r][v] = _mm512_set1_ps(b);
    for (uint32_t e = 0; e < n; e++) {
        const __m512 wv = _mm512_set1_ps(w[e]);
        const size_t c = kx[e];
        const float *const *rp = rows + ky[e];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++) {
            const float *xr = rp[r * sh];
#pragma GCC unroll 2
            for (size_t v = 0; v < NV; v++) {
                const float *p = xr + pl->first[c][v];
                __m512 x = _mm512_maskz_loadu_ps(pl->lo[c][v], p);
                if (S2) x = _mm512_permutex2var_ps(x, even, _mm512_maskz_loadu_ps(pl->hi[c][v], p + 16));
                acc[r][v] = _mm512_fmadd_ps(wv, x, acc[r][v]);
            }
        }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++) {
        if (r >= nrows) break;
        float *yr = y + r * out_w;
        for (size_t v = 0; v + 1 < NV; v++) _mm512_storeu_ps(yr + 16 * v, dcz_act__avx512(acc[r][v], act));
        _mm512_mask_storeu_ps(yr + 16 * (NV - 1), tail, dcz_act__avx512(acc[r][NV - 1], act));
    }
}

/* Output rows oy0 .. oy0 + R - 1 of one channel, NV vectors of each
 * (written from y, the last one's lanes tail), where a vector's window
 * spans at most 32 input columns: NV = 1 with (ow - 1) sw + kw <= 32, or
 * NV up to 2 at stride 1. Each input row a window row reads is loaded
 * once, as NV + 1 vectors of the columns from base (the first output
 * column's, times the stride, less pw; masked m[j]: outside the row, 0),
 * and each of its taps picks the lanes
 * i sw + kx of vectors v, v + 1 for output vector v by a two-table
 * permute (idx[kx]). A channel's taps come in column order, so the taps of
 * a window row follow one another. Same taps in the same order as
 * dw_rows__avx512, so the same bits; a permute and a multiply-add a tap
 * and vector, where that takes two masked loads, a permute and the
 * multiply-add at stride 2, and a masked load across cache lines at 1.
 * One core of a Xeon (AVX-512), MobileNetV2-style dense, batch 1, per
 * layer (us, dw_rows__avx512 -> this): 16 x 28 x 28 6.9 -> 6.0, 96 x 28
 * x 28 stride 2 21.1 -> 14.3, 144 x 14 x 14 20.2 -> 17.6, 144 x 14 x 14
 * stride 2 16.8 -> 11.1, 192 x 7 x 7 stride 2 15.1 -> 10.7 (with the
 * window cells' rows and columns looked up, not divided); the whole
 * model, dcz bench medians of alternated runs: dense 270 -> 252 us,
 * compressed 255 -> 235. */
__attribute__((target("avx512f"), always_inline))
static inline void dw_rows1__avx512(const size_t NV, const size_t R, const __mmask16 *m, int64_t base, size_t sh,
                                    const float *const *rows, const uint8_t *ky, const uint8_t *kx,
                                    const __m512i *idx, const float *w, uint32_t n, float b, size_t nrows,
                                    size_t out_w, __mmask16 tail, const dcz_act *act, float *y)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    __m512 acc[8][2];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 2
        for (size_t v = 0; v < NV; v++) acc[r][v] = _mm512_set1_ps(b);
    for (uint32_t e = 0; e < n;) {
        const uint8_t row = ky[e];
        const float *const *rp = rows + row;
        __m512 x[8][3];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
#pragma GCC unroll 3
            for (size_t j = 0; j <= NV; j++) x[r][j] = _mm512_maskz_loadu_ps(m[j], rp[r * sh] + base + 16 * j);
        for (; e < n && ky[e] == row; e++) {
            const __m512 wv = _mm512_set1_ps(w[e]);
            const __m512i ix = idx[kx[e]];
#pragma GCC unroll 8
            for (size_t r = 0; r < R; r++)
#pragma GCC unroll 2
                for (size_t v = 0; v < NV; v++)
                    acc[r][v] = _mm512_fmadd_ps(wv, _mm512_permutex2var_ps(x[r][v], ix, x[r][v + 1]), acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++) {
        if (r >= nrows) break;
        float *yr = y + r * out_w;
        if (NV == 2) _mm512_storeu_ps(yr, dcz_act__avx512(acc[r][0], act));
        _mm512_mask_storeu_ps(yr + 16 * (NV - 1), tail, dcz_act__avx512(acc[r][NV - 1], act));
    }
}

/* Whole windows by input rows (AVX-512): a channel that keeps every cell
 * of a K x K window (3 or 5, padded by (K - 1) / 2 on every side) at
 * stride S (1 or 2, both axes), R output rows of a run of NV vectors at
 * once. Each input row the R rows read is loaded once, and the K vectors
 * of its columns that the window's columns read for each output vector
 * are made once (at stride 1 the row's vectors shifted by a lane
 * alignment; at 2 its even and odd columns dealt by two permutes, then
 * shifted), then multiplied into every output row whose window covers it:
 * about (R + K - 1) / R shifts of K vectors an output vector, where
 * dw_rows1__avx512 takes a permute a tap and output row. The input rows
 * come in order and each row's columns in order, so each output takes its
 * taps in column order: the bits of shift_planes_ref. Lanes outside the
 * row read 0 (masked loads), as the reference's padding. A pruned channel
 * keeps the tap lists of the kernels above (a weight of 0 in a whole
 * window would add w x inf = NaN where the reference skips the tap).
 * Torchvision's dense networks at 224 x 224, one thread of an AMD EPYC
 * (Zen 4), per layer (dcz bench --per-layer medians, us, rows -> this):
 * MobileNetV2 32 x 112 x 112 343 -> 240, 144 x 56 x 56 286 -> 198,
 * 144 x 56 x 56 stride 2 125 -> 76, 192 x 28 x 28 76 -> 54;
 * EfficientNet-B0 5 x 5: 144 x 56 x 56 stride 2 405 -> 233, 240 x 28 x 28
 * 330 -> 222. The whole models, least of three alternated minima of 40
 * runs: MobileNetV2 8.60 -> 8.15 ms, EfficientNet-B0 13.28 -> 12.66 ms
 * (ONNX Runtime 1.32 in the same session: 8.14 and 12.07). */
#define DW_FULL_RUNS (DW_MAX_VEC / 2)
typedef struct dw_full_run {
    int64_t at;              /* the input column of the run's first output column (times the stride) */
    __mmask16 m[4];          /* the run's loads: a vector (S 1) or two (S 2) for each output vector */
    __mmask16 prev, prev_o;  /* the lanes read before the run: S 1, its last P lanes; S 2, column at - 2 (prev), at - 1 */
    __mmask16 next;          /* after it: S 1, the first P lanes; S 2, column at + 32 NV */
} dw_full_run;

/* The vector of the columns h lanes on from a's (h from -2 to 2): prev's
 * last -h lanes then a's (h < 0), a's from lane h then next's (h > 0). */
__attribute__((target("avx512f"), always_inline))
static inline __m512 dw_shift__avx512(__m512 prev, __m512 a, __m512 next, const int h)
{
    const __m512i p = _mm512_castps_si512(prev), c = _mm512_castps_si512(a), n = _mm512_castps_si512(next);
    switch (h) {
    case -2: return _mm512_castsi512_ps(_mm512_alignr_epi32(c, p, 14));
    case -1: return _mm512_castsi512_ps(_mm512_alignr_epi32(c, p, 15));
    case 1: return _mm512_castsi512_ps(_mm512_alignr_epi32(n, c, 1));
    case 2: return _mm512_castsi512_ps(_mm512_alignr_epi32(n, c, 2));
    default: return a;
    }
}

__attribute__((target("avx512f"), always_inline))
static inline void dw_full__avx512(const int S, const int K, const int NV, const int R, const dw_full_run *u,
                                   const float *const *rp, const float *w, float b, size_t nrows, size_t out_w,
                                   __mmask16 tail, const dcz_act *act, float *y)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    const int P = (K - 1) / 2;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    __m512 acc[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_set1_ps(b);
#pragma GCC unroll 16
    for (int j = 0; j < (R - 1) * S + K; j++) {
        const float *xr = rp[j] + u->at;
        __m512 sv[5][2];
        if (S == 1) {
            __m512 X[4];   /* X[v + 1]: the columns of output vector v */
            X[0] = _mm512_maskz_loadu_ps(u->prev, xr - 16);
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) X[v + 1] = _mm512_maskz_loadu_ps(u->m[v], xr + 16 * v);
            X[NV + 1] = _mm512_maskz_loadu_ps(u->next, xr + 16 * NV);
#pragma GCC unroll 5
            for (int kx = 0; kx < K; kx++)
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++) sv[kx][v] = dw_shift__avx512(X[v], X[v + 1], X[v + 2], kx - P);
        } else {
            __m512 E[4], O[4];   /* E[v + 1], O[v + 1]: the even and odd columns from output vector v's first */
            E[0] = _mm512_maskz_loadu_ps(u->prev, xr - 17);
            O[0] = _mm512_maskz_loadu_ps(u->prev_o, xr - 16);
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) {
                const __m512 lo = _mm512_maskz_loadu_ps(u->m[2 * v], xr + 32 * v);
                const __m512 hi = _mm512_maskz_loadu_ps(u->m[2 * v + 1], xr + 32 * v + 16);
                E[v + 1] = _mm512_permutex2var_ps(lo, even, hi);
                O[v + 1] = _mm512_permutex2var_ps(lo, odd, hi);
            }
            E[NV + 1] = O[NV + 1] = _mm512_maskz_loadu_ps(u->next, xr + 32 * NV);
#pragma GCC unroll 5
            for (int kx = 0; kx < K; kx++) {
                const int d = kx - P, h = d >= 0 ? d / 2 : -((1 - d) / 2);
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++)
                    sv[kx][v] = d & 1 ? dw_shift__avx512(O[v], O[v + 1], O[v + 2], h)
                                      : dw_shift__avx512(E[v], E[v + 1], E[v + 2], h);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const int ky = j - r * S;
            if (ky < 0 || ky >= K) continue;
#pragma GCC unroll 5
            for (int kx = 0; kx < K; kx++) {
                const __m512 wv = _mm512_set1_ps(w[ky * K + kx]);
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(wv, sv[kx][v], acc[r][v]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        if ((size_t)r >= nrows) break;
        float *yr = y + (size_t)r * out_w;
        if (NV == 2) _mm512_storeu_ps(yr, dcz_act__avx512(acc[r][0], act));
        _mm512_mask_storeu_ps(yr + 16 * (NV - 1), tail, dcz_act__avx512(acc[r][NV - 1], act));
    }
}

/* Each window cell's row and column (cell_ky, cell_kx: looked up, since a
 * division per tap and channel took a tenth of the kernel's time). */
static void dw_taps_init(const dcz_conv_geom *g, uint8_t *cell_ky, uint8_t *cell_kx)
{
    for (uint32_t k = 0; k < (uint32_t)g->kh * g->kw; k++) {
        cell_ky[k] = (uint8_t)(k / g->kw);
        cell_kx[k] = (uint8_t)(k % g->kw);
    }
}

/* Channel c's n taps (returned) in the rows kernels' terms: tap e in
 * window row ky[e] and column kx[e], in column order, from the form's
 * cells (dcz_shift.cell, which every kernel here needs: dw_rows_within,
 * dcz_shift_dw_lanes_fit). */
static uint32_t dw_channel_taps(const dcz_shift *f, const uint8_t *cell_ky, const uint8_t *cell_kx, uint32_t c,
                                uint8_t *ky, uint8_t *kx)
{
    const uint32_t e0 = f->ptr[c], n = f->ptr[c + 1] - e0;
    for (uint32_t e = 0; e < n; e++) {
        kx[e] = cell_kx[f->cell[e0 + e]];
        ky[e] = cell_ky[f->cell[e0 + e]];
    }
    return n;
}

/* rows[j], j < nrow: the input row iy = oy0 sh + j - ph that window row j
 * of output row oy0 reads, at base + (iy % ring) in_w (a plane: ring
 * in_h, oy0 0; the bands' ring of rows: dcz_shift_dw_band__avx512),
 * dw_zeros above and below the image. */
static void dw_input_rows(const dcz_conv_geom *g, const float *base, size_t ring, size_t oy0, size_t nrow,
                          const float **rows)
{
    /* rows j0 .. j1 - 1 lie in the image, in three loops without tests
     * (a loop testing each row took 2.6% of compressed MobileNetV2's run,
     * a table a channel) */
    const int64_t top = (int64_t)(oy0 * g->sh) - (int64_t)g->ph;   /* the input row of window row 0 */
    const size_t j0 = top < 0 ? (size_t)-top < nrow ? (size_t)-top : nrow : 0;
    const int64_t end = (int64_t)g->in_h - top;
    const size_t j1 = end <= (int64_t)j0 ? j0 : (size_t)end < nrow ? (size_t)end : nrow;
    const size_t W = g->in_w;
    size_t j = 0;
    for (; j < j0; j++) rows[j] = dw_zeros;
    if (ring >= g->in_h) {   /* a plane */
        const float *r = base + (size_t)(top + (int64_t)j0) * W;
        for (; j < j1; j++, r += W) rows[j] = r;
    } else {
        for (size_t r = (size_t)(top + (int64_t)j0) % ring; j < j1; j++, r = r + 1 == ring ? 0 : r + 1)
            rows[j] = base + r * W;
    }
    for (; j < nrow; j++) rows[j] = dw_zeros;
}

/* A 1 x 1 window at stride 1 without padding: a channel's output is its
 * input times its weight plus its bias, one fused multiply-add an output
 * (the reference's one tap from the bias), so the whole plane goes as one
 * run of vectors where the rows kernel took each row, of a few vectors,
 * alone; a channel without its weight is its bias. The batch norm before
 * each of DenseNet-121's convolutions, which follows a Concat and so
 * stays a layer of its own, held as such a convolution: one core of an
 * AMD EPYC (Zen 4), in cache, medians of 31 runs, by rows -> by planes:
 * 192 x 56 x 56 195 -> 79 us, 256 x 56 x 56 268 -> 105, 512 x 28 x 28 99
 * -> 40, 992 x 14 x 14 76 -> 25. */
static int dw_scale_fits(const dcz_conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

#define DW_PLANE_VECTORS 4
static int dw_plane_fits(const dcz_conv_geom *g)
{
    const size_t W = g->in_w, H = g->in_h, out_plane = (size_t)g->out_h * g->out_w;
    if (H * W <= 32 && out_plane <= 16) return 1;
    return g->sh == 1 && g->sw == 1 && g->out_h == H && g->out_w == W && (g->kh - 1) * W + g->kw - 1 <= 16 &&
           out_plane <= 16 * DW_PLANE_VECTORS;
}

/* whether the rows kernels take g on the shift form f: a depthwise
 * convolution of strides up to 2 and windows within their bounds, its rows
 * of at most max_w outputs and in_w inputs */
static int dw_rows_within(const dcz_conv_geom *g, const dcz_shift *f, size_t max_w, size_t in_w)
{
    const size_t ksize = (size_t)g->kh * g->kw;
    return dcz_conv_groups(g) == g->in_c && g->out_c == g->in_c && f->ob == 1 && f->cell && g->out_w <= max_w &&
           g->sw <= 2 && g->sh <= 2 && g->kw <= DW_MAX_KW && ksize <= DW_MAX_TAPS && g->in_w <= in_w;
}

/* AVX-512's rows kernel: rows of any width within its bounds, in runs of
 * one or two vectors; AVX2's the same in vectors of 8 */
static int dw_rows_fit(const dcz_conv_geom *g, const dcz_shift *f)
{
    return dw_rows_within(g, f, 16 * DW_MAX_VEC, DW_MAX_W) && g->out_h <= DW_MAX_ROWS;
}

static int dw_rows_fit8(const dcz_conv_geom *g, const dcz_shift *f)
{
    return dw_rows_within(g, f, 8 * DW_MAX_VEC8, DW_MAX_W) && g->out_h <= DW_MAX_ROWS;
}

int dcz_shift_dw_scale_takes(const dcz_conv_geom *g, const dcz_shift *f)
{
    return dw_scale_fits(g) && dcz_conv_groups(g) == g->in_c && g->out_c == g->in_c && f->ob == 1;
}

int dcz_shift_dw_path(const dcz_conv_geom *g, const dcz_shift *f)
{
    const size_t ow = g->out_w;
    if (dcz_shift_dw_scale_takes(g, f)) return DCZ_SHIFT_DW_ROWS;   /* by the plane (dw_scale__avx512) */
    if (!dw_rows_fit(g, f)) return DCZ_SHIFT_DW_NONE;
    if (dw_plane_fits(g)) return DCZ_SHIFT_DW_PLANE;
    return g->sw == 1 && ow <= 8 ? DCZ_SHIFT_DW_NONE : DCZ_SHIFT_DW_ROWS;
}

/* The NV vectors of one plane, the taps outermost: NV independent sums
 * (NV is a constant at every call). */
__attribute__((target("avx512f"), always_inline))
static inline void dw_plane_vectors__avx512(const size_t NV, const float *xc, float *yc, const __mmask16 *lo,
                                            const __mmask16 *hi, const int64_t *base, const __mmask16 *store,
                                            const __mmask16 (*in)[DW_MAX_TAPS], const __m512i *idx,
                                            const uint8_t *tk, const float *w, uint32_t n, float b,
                                            const dcz_act *act)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    __m512 x0[DW_PLANE_VECTORS], x1[DW_PLANE_VECTORS], acc[DW_PLANE_VECTORS];
#pragma GCC unroll 4
    for (size_t j = 0; j < NV; j++) {
        x0[j] = _mm512_maskz_loadu_ps(lo[j], xc + base[j]);
        x1[j] = _mm512_maskz_loadu_ps(hi[j], xc + base[j] + 16);
        acc[j] = _mm512_set1_ps(b);
    }
    for (uint32_t e = 0; e < n; e++) {
        const __m512 wv = _mm512_set1_ps(w[e]);
        const __m512i ix = idx[tk[e]];
#pragma GCC unroll 4
        for (size_t j = 0; j < NV; j++)
            acc[j] = _mm512_fmadd_ps(wv, _mm512_maskz_permutex2var_ps(in[j][tk[e]], x0[j], ix, x1[j]), acc[j]);
    }
#pragma GCC unroll 4
    for (size_t j = 0; j < NV; j++) _mm512_mask_storeu_ps(yc + 16 * j, store[j], dcz_act__avx512(acc[j], act));
}

/* Small planes in registers: output vector j (cells 16 j ..) reads every
 * tap's inputs from a window of 32 cells at base[j], two masked loads, and
 * each tap is one permute of the window, its lanes that read padding
 * masked to 0 (the same w x 0 as above). dw_plane_fits takes two cases:
 * an input plane of at most 32 cells and an output of one vector (any
 * stride: the window is the plane), or stride 1 with the size kept over at
 * most DW_PLANE_VECTORS vectors, where the window of vector j starts
 * ph W + pw cells before it and tap (ky, kx) reads lane i at
 * i + ky W + kx, which fits while (kh - 1) W + kw - 1 <= 16 (7 x 7 planes
 * at 3 x 3). */
__attribute__((target("avx512f")))
void dcz_shift_dw_plane__avx512(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f, const float *bias,
                                const float *x, size_t batch, const dcz_act *act, uint32_t c0, uint32_t c1, float *y)
{
    const size_t H = g->in_h, W = g->in_w, oh = g->out_h, ow = g->out_w, ksize = (size_t)g->kh * g->kw;
    const size_t in_plane = H * W, out_plane = oh * ow, nv = (out_plane + 15) / 16;
    const int one = in_plane <= 32 && out_plane <= 16;
    __m512i idx[DW_MAX_TAPS];
    __mmask16 in[DW_PLANE_VECTORS][DW_MAX_TAPS], lo[DW_PLANE_VECTORS], hi[DW_PLANE_VECTORS], store[DW_PLANE_VECTORS];
    int64_t base[DW_PLANE_VECTORS];
    for (size_t j = 0; j < nv; j++) {
        base[j] = one ? 0 : (int64_t)(16 * j) - (int64_t)(g->ph * W + g->pw);
        lo[j] = (__mmask16)lanes(-base[j], (int64_t)in_plane - base[j], 16);
        hi[j] = (__mmask16)lanes(-base[j] - 16, (int64_t)in_plane - base[j] - 16, 16);
        store[j] = (__mmask16)lanes(0, (int64_t)out_plane - (int64_t)(16 * j), 16);
    }
    /* the input row and column that window cell (0, 0) reads for each output cell */
    int64_t iy0[16 * DW_PLANE_VECTORS], jx0[16 * DW_PLANE_VECTORS];
    for (size_t cell = 0, oy = 0, ox = 0; cell < out_plane; cell++) {
        iy0[cell] = (int64_t)(oy * g->sh) - g->ph;
        jx0[cell] = (int64_t)(ox * g->sw) - g->pw;
        if (++ox == ow) ox = 0, oy++;
    }
    for (size_t k = 0; k < ksize; k++) {
        const int64_t ky = (int64_t)(k / g->kw), kx = (int64_t)(k % g->kw);
        int32_t ix[16];
        for (size_t j = 0; j < nv; j++) {
            uint32_t m = 0;
            for (size_t i = 0; i < 16; i++) {
                const size_t cell = 16 * j + i;
                const int64_t iy = cell < out_plane ? iy0[cell] + ky : -1, jx = cell < out_plane ? jx0[cell] + kx : -1;
                const int inside = iy >= 0 && iy < (int64_t)H && jx >= 0 && jx < (int64_t)W;
                if (j == 0) /* one: the cell read; else the window's lane */
                    ix[i] = (int32_t)(one ? (inside ? iy * (int64_t)W + jx : 0) : (int64_t)i + ky * (int64_t)W + kx);
                m |= (uint32_t)inside << i;
            }
            in[j][k] = (__mmask16)m;
        }
        idx[k] = _mm512_loadu_si512((const void *)ix);
    }
    for (uint32_t c = c0; c < c1; c++) {
        const uint8_t *tk = f->cell + f->ptr[c];   /* the taps' window cells */
        const uint32_t n = f->ptr[c + 1] - f->ptr[c];
        const float *w = f->w + f->ptr[c], b = bias ? bias[c] : 0.0f;
        for (size_t s = 0; s < batch; s++) {
            const float *xc = x + (s * g->in_c + c) * in_plane;
            float *yc = y + (s * g->out_c + c) * out_plane;
            switch (nv) {
            case 1: dw_plane_vectors__avx512(1, xc, yc, lo, hi, base, store, in, idx, tk, w, n, b, act); break;
            case 2: dw_plane_vectors__avx512(2, xc, yc, lo, hi, base, store, in, idx, tk, w, n, b, act); break;
            case 3: dw_plane_vectors__avx512(3, xc, yc, lo, hi, base, store, in, idx, tk, w, n, b, act); break;
            default: dw_plane_vectors__avx512(4, xc, yc, lo, hi, base, store, in, idx, tk, w, n, b, act); break;
            }
        }
    }
}

/* What the rows kernels take for a layer, made once per call
 * (dcz_shift_dw_rows_run__avx512). */
typedef struct dw_rows_layer {
    size_t nv, cv, R, groups, nrow;   /* a row's vectors, a run's, output rows a call, calls a plane */
    int once;                         /* dw_rows1__avx512: an input row loaded once for its taps */
    size_t v0[DW_MAX_VEC / 2];        /* each run's first vector */
    dw_plan pl[DW_MAX_VEC / 2];       /* its taps' loads (dw_rows__avx512) */
    __mmask16 m1[DW_MAX_VEC / 2][3];  /* its row's three vectors from base (dw_rows1__avx512) */
    int64_t base[DW_MAX_VEC / 2];
    __mmask16 tail;                   /* the lanes of a row's last vector */
    __m512i idx1[DW_MAX_KW];
    uint8_t cell_ky[DW_MAX_TAPS], cell_kx[DW_MAX_TAPS];
    int full;                         /* dw_full__avx512 takes the channels that keep every cell */
    size_t full_R, full_groups, full_nrow;
    dw_full_run fu[DW_FULL_RUNS];
} dw_rows_layer;

/* Whether dw_full__avx512 takes g's channels that keep every cell: K x K
 * of 3 or 5, padded (K - 1) / 2, the same stride both ways; at stride 2
 * over rows of two vectors or more (over rows of one, 7 and 14 of them,
 * the tap lists' rows kernel was the faster: MobileNetV2's 576 x 14 x 14
 * 46 against 55 us, 192 x 28 x 28 29 against 32) */
int dcz_shift_dw_full_takes(const dcz_conv_geom *g)
{
    const uint32_t K = g->kw, P = (K - 1) / 2;
    return (K == 3 || K == 5) && g->kh == K && g->sh == g->sw && g->ph == P && g->pw == P &&
           (g->sw == 1 || g->out_w > 16);
}

/* Output rows oy0 .. oy1 - 1 of one channel by dw_full__avx512 (every
 * cell kept; oy0 a multiple of L->full_R, oy1 one too or the plane's
 * last): by bands of L->full_R rows, each band's runs of the layer's
 * vectors in turn; rows[j] the input row that window row j of output row
 * oy0 reads. Bands outermost, so that the rows are read and written in
 * order: each run down the whole plane before the next read and wrote
 * every row a strip at a time. MobileNetV2's 32 x 112 x 112 (AMD EPYC,
 * Zen 5, one thread, dcz bench --per-layer, least of three alternated
 * rounds, in both orders) 140-153 -> 106-109 us, its depthwise layers over
 * 56 x 56 and smaller within 2-4%; whole networks within their noise
 * (medians of alternated runs: MobileNetV2 0.99-1.0 of the time,
 * EfficientNet-B0 0.98-1.01, compressed MobileNetV2 0.99-1.01). Alone,
 * the layer 93-95 -> 83 us, but 305 -> 378 after a 64 MB sweep of the
 * caches, which the network never makes (its input was just written). */
__attribute__((target("avx512f"), noinline))
static void dw_full_rows__avx512(const dw_rows_layer *L, const dcz_conv_geom *g, const float *const *rows,
                                 size_t oy0, size_t oy1, const float *w, float b, const dcz_act *act, float *yc)
{
    const size_t ow = g->out_w, S = g->sw, R = L->full_R, runs = (L->nv + L->cv - 1) / L->cv;
    for (size_t oy = oy0; oy < oy1; oy += R) {
        const size_t left = oy1 - oy < R ? oy1 - oy : R;
        const float *const *rp = rows + (oy - oy0) * S;
        for (size_t k = 0; k < runs; k++) {
            const __mmask16 t = k + 1 == runs ? L->tail : (__mmask16)0xFFFF;
            const dw_full_run *u = &L->fu[k];
            float *yr = yc + oy * ow + 16 * L->v0[k];
#define DW_FULL(S_, K_, NV_, R_) dw_full__avx512(S_, K_, NV_, R_, u, rp, w, b, left, ow, t, act, yr)
            /* (rows of one vector at stride 1 alone: L->full) */
            if (L->cv == 2) {
                if (S == 1) { if (g->kw == 3) DW_FULL(1, 3, 2, 4); else DW_FULL(1, 5, 2, 4); }
                else { if (g->kw == 3) DW_FULL(2, 3, 2, 4); else DW_FULL(2, 5, 2, 4); }
            } else if (g->kw == 3) {
                DW_FULL(1, 3, 1, 8);
            } else {
                DW_FULL(1, 5, 1, 8);
            }
#undef DW_FULL
        }
    }
}

/* Output rows oy0 .. oy1 - 1 of one channel on the tap lists' kernels
 * (dw_rows1__avx512, dw_rows__avx512): by bands of R rows, each band's
 * runs of the layer's vectors in turn (bands outermost, as
 * dw_full_rows__avx512); rows[j] the input row that window row j of
 * output row oy0 reads. WIDE as dw_rows_channels__avx512 takes it. */
__attribute__((target("avx512f"), always_inline))
static inline void dw_taps_rows__avx512(const int WIDE, const dw_rows_layer *L, const dcz_conv_geom *g,
                                        const float *const *rows, size_t oy0, size_t oy1, const uint8_t *ky,
                                        const uint8_t *kx, const float *w, uint32_t n, float b, const dcz_act *act,
                                        float *yc)
{
    const size_t ow = g->out_w, sw = g->sw, sh = g->sh;
    const size_t runs = WIDE ? (L->nv + 1) / 2 : 1, cv = WIDE ? 2 : L->cv, R = WIDE ? 4 : L->R;
    const int once = WIDE ? sw == 1 : L->once;
    for (size_t oy = oy0; oy < oy1; oy += R) {
        const size_t left = oy1 - oy < R ? oy1 - oy : R;
        const float *const *rp = rows + (oy - oy0) * sh;
        for (size_t k = 0; k < runs; k++) {   /* the runs of the band's rows */
            const __mmask16 t = k + 1 == runs ? L->tail : (__mmask16)0xFFFF;
            const __mmask16 *m = L->m1[k];
            const int64_t at = L->base[k];
            const dw_plan *pl = &L->pl[k];
            float *yr = yc + oy * ow + 16 * L->v0[k];
#define DW_ROWS1(NV_, R_) dw_rows1__avx512(NV_, R_, m, at, sh, rp, ky, kx, L->idx1, w, n, b, left, ow, t, act, yr)
#define DW_ROWS(NV_, R_)                                                                  \
    (sw == 1 ? dw_rows__avx512(NV_, R_, 0, pl, t, sh, rp, ky, kx, w, n, b, left, ow, act, yr) \
             : dw_rows__avx512(NV_, R_, 1, pl, t, sh, rp, ky, kx, w, n, b, left, ow, act, yr))
            if (once && cv == 2) DW_ROWS1(2, 4);
            else if (once && R == 4) DW_ROWS1(1, 4);
            else if (once && R == 7) DW_ROWS1(1, 7);
            else if (once) DW_ROWS1(1, 8);
            else if (cv == 2) DW_ROWS(2, 4);
            else if (R == 4) DW_ROWS(1, 4);
            else if (R == 7) DW_ROWS(1, 7);
            else DW_ROWS(1, 8);
#undef DW_ROWS
#undef DW_ROWS1
        }
    }
}

/* Every channel of g on the layer's kernels: always inlined twice, for
 * rows of one run (32 outputs or fewer: WIDE 0, runs 1) and of several
 * (WIDE 1: runs of two vectors, 4 rows a call, each input row loaded once
 * at stride 1), each with what it is known to be as constants, so that the
 * compiler lifts the choice of kernel out of the loops (a tenth of the
 * time of small planes where it could not) and the second copy holds the
 * two kernels it calls alone. */
__attribute__((target("avx512f"), always_inline))
static inline void dw_rows_channels__avx512(const int WIDE, const dw_rows_layer *L, const dcz_conv_geom *g,
                                            const split_geom *q, const dcz_shift *f, const float *bias,
                                            const float *x, size_t batch, const dcz_act *act, uint32_t c0,
                                            uint32_t c1, float *y)
{
    const size_t ow = g->out_w, oh = g->out_h;
    const size_t in_plane = (size_t)g->in_h * g->in_w, out_plane = oh * ow;
    /* window row j of output row oy reads input row oy sh + j - ph */
    const float *rows[(DW_MAX_ROWS + 8) * 2 + DW_MAX_TAPS];
    for (uint32_t c = c0; c < c1; c++) {
        uint8_t ky[DW_MAX_TAPS], kx[DW_MAX_TAPS];
        const uint32_t n = dw_channel_taps(f, L->cell_ky, L->cell_kx, c, ky, kx);
        const float *w = f->w + f->ptr[c], b = bias ? bias[c] : 0.0f;
        const int full = L->full && n == (uint32_t)g->kh * g->kw;
        for (size_t s = 0; s < batch; s++) {
            const float *xc = x + (s * g->in_c + c) * in_plane;
            float *yc = y + (s * g->out_c + c) * out_plane;
            if (full) {
                dw_input_rows(g, xc, g->in_h, 0, L->full_nrow, rows);
                dw_full_rows__avx512(L, g, rows, 0, oh, w, b, act, yc);
                continue;
            }
            dw_input_rows(g, xc, g->in_h, 0, L->nrow, rows);
            dw_taps_rows__avx512(WIDE, L, g, rows, 0, oh, ky, kx, w, n, b, act, yc);
        }
    }
}

/* dw_scale_fits' planes: each channel's input times its weight plus its
 * bias, 16 outputs a vector */
__attribute__((target("avx512f")))
static void dw_scale__avx512(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                             size_t batch, const dcz_act *act, uint32_t c0, uint32_t c1, float *y)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    const size_t plane = (size_t)g->in_h * g->in_w;
    const __mmask16 tail = (__mmask16)((1u << (plane % 16)) - 1);
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = c0; c < c1; c++) {
            const float *xc = x + (b * g->in_c + c) * plane;
            float *yc = y + (b * g->out_c + c) * plane;
            const __m512 bv = _mm512_set1_ps(bias ? bias[c] : 0.0f);
            const int none = f->ptr[c + 1] == f->ptr[c];
            const __m512 wv = _mm512_set1_ps(none ? 0.0f : f->w[f->ptr[c]]), only = dcz_act__avx512(bv, act);
            size_t i = 0;
            for (; i + 16 <= plane; i += 16)
                _mm512_storeu_ps(yc + i, none ? only : dcz_act__avx512(_mm512_fmadd_ps(wv, _mm512_loadu_ps(xc + i), bv), act));
            if (tail)
                _mm512_mask_storeu_ps(yc + i, tail,
                                      none ? only : dcz_act__avx512(_mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(tail, xc + i), bv), act));
        }
}

/* Output rows a call of the whole windows' kernel (dw_full__avx512): 8
 * over rows of one vector, 4 over wider ones (runs of two vectors) */
static size_t dw_full_rows_a_call(const dcz_conv_geom *g)
{
    return (g->out_w + 15) / 16 == 1 ? 8 : 4;
}

/* Output rows a call of the tap lists' kernels over rows of one vector
 * (AVX-512's and AVX2's): 8, 7 over planes of 7 or 14 rows, 4 where the
 * plane has no more */
static size_t dw_rows_one_vector(size_t oh)
{
    return oh <= 4 ? 4 : oh % 7 == 0 ? 7 : 8;
}

/* ... on AVX-512: 4 over wider rows (runs of two vectors) */
static size_t dw_rows_a_call(const dcz_conv_geom *g)
{
    return (g->out_w + 15) / 16 > 1 ? 4 : dw_rows_one_vector(g->out_h);
}

/* The rows kernels' plan for g (AVX-512): each run's vectors, loads and
 * masks, output rows a call, and the whole windows' runs (L->full) */
__attribute__((target("avx512f")))
static void dw_layer_init(const dcz_conv_geom *g, dw_rows_layer *L)
{
    const size_t W = g->in_w, ow = g->out_w, oh = g->out_h, sw = g->sw;
    /* a row's nv vectors in runs of cv, two over rows wider than one; an
     * odd nv's last run starts a vector back, over the one before (its
     * outputs computed twice, the same bits), so that every call takes the
     * same vectors */
    L->nv = (ow + 15) / 16;
    L->cv = L->nv == 1 ? 1 : 2;
    const size_t nv = L->nv, cv = L->cv, runs = (nv + cv - 1) / cv;
    /* each run's loads: per tap column (dw_rows__avx512), and the three
     * vectors of an input row from base, its first column times the
     * stride less pw (dw_rows1__avx512) */
    for (size_t k = 0; k < runs; k++) {
        L->v0[k] = k + 1 < runs ? k * cv : nv - cv;
        L->base[k] = (int64_t)(16 * L->v0[k] * sw) - (int64_t)g->pw;
        for (size_t j = 0; j < 3; j++)
            L->m1[k][j] = (__mmask16)lanes(-L->base[k] - (int64_t)(16 * j), (int64_t)W - L->base[k] - (int64_t)(16 * j),
                                          16);
        for (size_t c = 0; c < g->kw; c++)
            for (size_t v = 0; v < cv; v++) {
                const int64_t first = (int64_t)(16 * (L->v0[k] + v) * sw + c) - (int64_t)g->pw;
                const uint32_t m = lanes(-first, (int64_t)W - first, sw == 1 ? 16 : 32);
                L->pl[k].first[c][v] = first;
                L->pl[k].lo[c][v] = (__mmask16)(m & 0xFFFF);
                L->pl[k].hi[c][v] = (__mmask16)(m >> 16);
            }
    }
    L->tail = (__mmask16)((1u << (ow - 16 * (nv - 1))) - 1);
    /* vectors whose windows fit two: a row loaded once for its taps (at
     * stride 1 every run; at 2 a row of one vector that fits) */
    L->once = nv == 1 ? (ow - 1) * sw + g->kw <= 32 : sw == 1;
    for (size_t c = 0; c < g->kw; c++)
        L->idx1[c] = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
                                                                          3, 2, 1, 0),
                                                         _mm512_set1_epi32((int)sw)),
                                     _mm512_set1_epi32((int)c));
    L->R = dw_rows_a_call(g);
    L->groups = (oh + L->R - 1) / L->R;
    L->nrow = (L->groups * L->R - 1) * g->sh + g->kh;
    const size_t K = g->kw;
    L->full = dcz_shift_dw_full_takes(g);
    if (L->full) {
        const size_t P = (K - 1) / 2;
        L->full_R = dw_full_rows_a_call(g);
        L->full_groups = (oh + L->full_R - 1) / L->full_R;
        L->full_nrow = (L->full_groups * L->full_R - 1) * sw + K;
        for (size_t k = 0; k < runs; k++) {
            dw_full_run *u = &L->fu[k];
            const int64_t at = (int64_t)(16 * L->v0[k] * sw), w = (int64_t)W;
            u->at = at;
            /* the lanes of the vector loaded at column c that lie in the row */
#define DW_IN(c) lanes(-(c), w - (c), 16)
            for (size_t v = 0; v < cv * sw; v++) u->m[v] = (__mmask16)DW_IN(at + 16 * (int64_t)v);
            if (sw == 1) {
                u->prev = (__mmask16)(DW_IN(at - 16) & lanes(16 - (int64_t)P, 16, 16));
                u->prev_o = 0;
                u->next = (__mmask16)(DW_IN(at + 16 * (int64_t)cv) & lanes(0, (int64_t)P, 16));
            } else {
                u->prev = (__mmask16)(P >= 2 ? DW_IN(at - 17) & 0x8000u : 0);
                u->prev_o = (__mmask16)(DW_IN(at - 16) & 0x8000u);
                u->next = (__mmask16)(P >= 2 ? DW_IN(at + 32 * (int64_t)cv) & 1u : 0);
            }
#undef DW_IN
        }
    }
}

__attribute__((target("avx512f")))
void dcz_shift_dw_rows_run__avx512(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f,
                                   const float *bias, const float *x, size_t batch, const dcz_act *act, uint32_t c0,
                                   uint32_t c1, float *y)
{
    if (dcz_shift_dw_scale_takes(g, f)) {
        dw_scale__avx512(g, f, bias, x, batch, act, c0, c1, y);
        return;
    }
    dw_rows_layer L;
    dw_layer_init(g, &L);
    dw_taps_init(g, L.cell_ky, L.cell_kx);
    if ((L.nv + L.cv - 1) / L.cv == 1) dw_rows_channels__avx512(0, &L, g, q, f, bias, x, batch, act, c0, c1, y);
    else dw_rows_channels__avx512(1, &L, g, q, f, bias, x, batch, act, c0, c1, y);
}

uint32_t dcz_shift_dw_band_step(const dcz_conv_geom *g)
{
    return (uint32_t)(dcz_shift_dw_full_takes(g) ? dw_full_rows_a_call(g) : dw_rows_a_call(g));
}

int dcz_shift_dw_band_takes(const dcz_conv_geom *g, const dcz_shift *f)
{
    return dcz_shift_dw_path(g, f) == DCZ_SHIFT_DW_ROWS && !dcz_shift_dw_scale_takes(g, f) && g->out_h <= DW_MAX_ROWS;
}

/* A band plan (dcz_shift_dw_band_plan__avx512): the rows kernels' tables,
 * made once for a thread's bands. */
uint64_t dcz_shift_dw_band_plan_bytes(void)
{
    return sizeof(dw_rows_layer);
}

__attribute__((target("avx512f")))
void dcz_shift_dw_band_plan__avx512(const dcz_conv_geom *g, void *mem)
{
    dw_rows_layer *L = mem;
    dw_layer_init(g, L);
    dw_taps_init(g, L->cell_ky, L->cell_kx);
}

/* Bands of every channel of one sample: always inlined twice, as
 * dw_rows_channels__avx512 is, WIDE or not. */
__attribute__((target("avx512f"), always_inline))
static inline void dw_band_channels__avx512(const int WIDE, const dw_rows_layer *L, const dcz_conv_geom *g,
                                            const dcz_shift *f, const float *bias, const dcz_act *act,
                                            const float *ring, uint32_t ring_rows, uint32_t oy0, uint32_t oy1,
                                            float *y)
{
    const size_t W = g->in_w, out_plane = (size_t)g->out_h * g->out_w, rows_n = oy1 - oy0;
    /* the input rows of the last call of either kernel, whole */
    const size_t R = WIDE ? 4 : L->R, R_full = L->full ? L->full_R : R;
    const size_t calls = (rows_n + R - 1) / R * R, calls_full = (rows_n + R_full - 1) / R_full * R_full;
    const size_t nrow = ((calls > calls_full ? calls : calls_full) - 1) * g->sh + g->kh;
    const float *rows[(DW_MAX_ROWS + 8) * 2 + DW_MAX_TAPS];
    for (uint32_t c = 0; c < g->out_c; c++) {
        uint8_t ky[DW_MAX_TAPS], kx[DW_MAX_TAPS];
        const uint32_t n = dw_channel_taps(f, L->cell_ky, L->cell_kx, c, ky, kx);
        const float *w = f->w + f->ptr[c], b = bias ? bias[c] : 0.0f;
        dw_input_rows(g, ring + (size_t)c * ring_rows * W, ring_rows, oy0, nrow, rows);
        if (L->full && n == (uint32_t)g->kh * g->kw)
            dw_full_rows__avx512(L, g, rows, oy0, oy1, w, b, act, y + c * out_plane);
        else dw_taps_rows__avx512(WIDE, L, g, rows, oy0, oy1, ky, kx, w, n, b, act, y + c * out_plane);
    }
}

/* Bands (kernels_bands.c): rows oy0 .. oy1 - 1 of every output channel of
 * one sample, each channel on the kernel that runs it in the plane (so the
 * bits of the plane), its input row iy read at ring + (c ring_rows + iy %
 * ring_rows) in_w, rows outside the image as zeros. A band's rows past oy1
 * in its last call (the plane's last rows: never stored) read whatever a
 * ring row holds. */
__attribute__((target("avx512f")))
void dcz_shift_dw_band__avx512(const void *plan, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                               const dcz_act *act, const float *ring, uint32_t ring_rows, uint32_t oy0, uint32_t oy1,
                               float *y)
{
    const dw_rows_layer *L = plan;
    if ((L->nv + L->cv - 1) / L->cv == 1) dw_band_channels__avx512(0, L, g, f, bias, act, ring, ring_rows, oy0, oy1, y);
    else dw_band_channels__avx512(1, L, g, f, bias, act, ring, ring_rows, oy0, oy1, y);
}

/* dw_rows__avx512 in AVX2, 8 columns a vector, R rows a call: rows of up
 * to 32 outputs in one run (NV up to 4: 8 rows of one vector, 7 over
 * planes of 7 or 14 rows, 4 of two, 2 of three or four), wider ones in
 * runs of two vectors, 4 rows a call, each run down the whole plane
 * before the next, an odd count's last run over the vector before it:
 * each tap's input vector by a load where its lanes lie inside the row,
 * else a masked one (lanes outside read 0); at stride 2 two, whose even
 * floats a shuffle and a permute deal. The same taps in the same order,
 * so the same bits. It runs the depthwise layers the channels-in-lanes
 * kernel below cannot take (a pruned layer, fewer than 8 channels) at
 * column stride 2 or over rows of more than 32 outputs
 * (dcz_shift_dw_rows_avx2):
 * one core of an AMD EPYC (Zen 3), MobileNetV2-style dense, batch 1, best
 * per-layer times of 2000 runs (us, shift form -> this): 96 x 28 x 28
 * stride 2 44.3 -> 42.0, 144 x 14 x 14 stride 2 24.6 -> 19.5, 192 x 7 x 7
 * stride 2 21.4 -> 17.0. At stride 1 over rows of 32 or fewer the shift
 * form is faster, the planes small or not (16 x 28 x 28 11.6 against
 * 15.8, 144 x 14 x 14 27.6 against 43.7, 384 x 4 x 4 16.5 against 30.2):
 * a masked load on Zen 3 costs several plain ones, and over planes of 4
 * or 7 columns half a vector's lanes or more lie outside, where the shift
 * form's split planes hold rows side by side. Over wider rows only the
 * runs at a row's ends mask: torchvision's MobileNetV2 pruned to 90%,
 * batch 1, the same core, least of four alternated dcz bench --per-layer
 * medians (us, shift form -> this): 96 x 112 x 112 stride 2 732 -> 244,
 * 144 x 56 x 56 355 -> 235, 32 x 112 x 112 319 -> 195; EfficientNet-B0's
 * 96 x 112 x 112 stride 2 1029 -> 610. With every tap kept the lanes
 * kernel is twice as fast as this (96 x 112 x 112 stride 2: 444 against
 * 993 us). */
/* whether the AVX2 rows kernel runs g on the shift form f (see above;
 * the lanes kernel, where it fits, runs first) */
int dcz_shift_dw_rows_avx2(const dcz_conv_geom *g, const dcz_shift *f)
{
    return (g->sw == 2 || g->out_w > 32) && dw_rows_fit8(g, f);
}

typedef struct dw_plan8 {
    int64_t first[DW_MAX_KW][4];    /* the input column of lane 0 of vector v at tap column kx */
    uint8_t lo[DW_MAX_KW][4], hi[DW_MAX_KW][4]; /* its lanes inside the row (hi: the next 8, stride 2) */
    uint8_t whole[DW_MAX_KW][4];    /* every lane of both inside: plain loads */
} dw_plan8;

/* Output rows oy0 .. oy0 + R - 1 of one channel (those below out_h
 * stored), the NV vectors of a run of each, the last one's first `last`
 * lanes (8: a plain store), rows[j] the input row that window row j of
 * output row 0 of the group reads, times the stride. */
__attribute__((target("avx2,fma"), always_inline))
static inline void dw_rows__avx2(const size_t NV, const size_t R, const int S2, const dw_plan8 *pl, size_t sh,
                                 const float *const *rows, const uint8_t *ky, const uint8_t *kx, const float *w,
                                 uint32_t n, float b, size_t nrows, size_t out_w, uint32_t last, const dcz_act *act,
                                 float *y)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    __m256 acc[8][4];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 4
        for (size_t v = 0; v < NV; v++) acc[r][v] = _mm256_set1_ps(b);
    for (uint32_t e = 0; e < n; e++) {
        const __m256 wv = _mm256_set1_ps(w[e]);
        const size_t c = kx[e];
        const float *const *rp = rows + ky[e];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++) {
            const float *xr = rp[r * sh];
#pragma GCC unroll 4
            for (size_t v = 0; v < NV; v++) {
                const float *p = xr + pl->first[c][v];
                __m256 x;
                if (pl->whole[c][v]) {
                    x = _mm256_loadu_ps(p);
                    if (S2) x = dcz_evens__avx2(x, _mm256_loadu_ps(p + 8));
                } else {
                    x = _mm256_maskload_ps(p, dcz_bits8__avx2(pl->lo[c][v]));
                    if (S2) x = dcz_evens__avx2(x, _mm256_maskload_ps(p + 8, dcz_bits8__avx2(pl->hi[c][v])));
                }
                acc[r][v] = _mm256_fmadd_ps(wv, x, acc[r][v]);
            }
        }
    }
    const __m256i tail = dcz_mask8__avx2(last);
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++) {
        if (r >= nrows) break;
        float *yr = y + r * out_w;
#pragma GCC unroll 4
        for (size_t v = 0; v + 1 < NV; v++) _mm256_storeu_ps(yr + 8 * v, dcz_act__avx2(acc[r][v], act));
        const __m256 a = dcz_act__avx2(acc[r][NV - 1], act);
        if (last == 8) _mm256_storeu_ps(yr + 8 * (NV - 1), a);
        else _mm256_maskstore_ps(yr + 8 * (NV - 1), tail, a);
    }
}

/* What the AVX2 rows kernel takes for a layer, made once per call. */
typedef struct dw_rows8_layer {
    size_t nv, cv, runs, R, groups, nrow;   /* a row's vectors, a run's, runs a row, rows a call, calls a plane */
    size_t v0[DW_MAX_VEC8 / 2];             /* each run's first vector */
    dw_plan8 pl[DW_MAX_VEC8 / 2];           /* its taps' loads */
    uint32_t last;                          /* the lanes of a row's last vector */
    uint8_t cell_ky[DW_MAX_TAPS], cell_kx[DW_MAX_TAPS];
} dw_rows8_layer;

/* Every channel of g by rows: inlined twice, for rows of one run (32
 * outputs or fewer: WIDE 0) and of several (WIDE 1: runs of two vectors,
 * 4 rows a call, an odd count's last run a vector back, over the one
 * before: its outputs computed twice, the same bits), each with what it is
 * known to be as constants (dw_rows_channels__avx512's reason). */
__attribute__((target("avx2,fma"), always_inline))
static inline void dw_rows8_channels__avx2(const int WIDE, const dw_rows8_layer *L, const dcz_conv_geom *g,
                                           const split_geom *q, const dcz_shift *f, const float *bias,
                                           const float *x, size_t batch, const dcz_act *act, uint32_t c0,
                                           uint32_t c1, float *y)
{
    const size_t ow = g->out_w, oh = g->out_h, sw = g->sw, sh = g->sh;
    const size_t runs = WIDE ? L->runs : 1, nv = WIDE ? 2 : L->nv, R = WIDE ? 4 : L->R;
    const size_t in_plane = (size_t)g->in_h * g->in_w, out_plane = oh * ow;
    const float *rows[(DW_MAX_ROWS + 8) * 2 + DW_MAX_TAPS];
    for (uint32_t c = c0; c < c1; c++) {
        uint8_t ky[DW_MAX_TAPS], kx[DW_MAX_TAPS];
        const uint32_t n = dw_channel_taps(f, L->cell_ky, L->cell_kx, c, ky, kx);
        const float *w = f->w + f->ptr[c], b = bias ? bias[c] : 0.0f;
        for (size_t s = 0; s < batch; s++) {
            const float *xc = x + (s * g->in_c + c) * in_plane;
            float *yc = y + (s * g->out_c + c) * out_plane;
            dw_input_rows(g, xc, g->in_h, 0, L->nrow, rows);
            for (size_t k = 0; k < runs; k++) {   /* a run's columns down the plane */
                const uint32_t last = k + 1 == runs ? L->last : 8;
                const dw_plan8 *pl = &L->pl[k];
                for (size_t gi = 0; gi < L->groups; gi++) {
                    const size_t oy = gi * R, left = oh - oy < R ? oh - oy : R;
                    const float *const *rp = rows + oy * sh;
                    float *yr = yc + oy * ow + 8 * L->v0[k];
#define DW_ROWS2(NV_, R_) \
    (sw == 1 ? dw_rows__avx2(NV_, R_, 0, pl, sh, rp, ky, kx, w, n, b, left, ow, last, act, yr) \
             : dw_rows__avx2(NV_, R_, 1, pl, sh, rp, ky, kx, w, n, b, left, ow, last, act, yr))
                    if (nv == 4) DW_ROWS2(4, 2);
                    else if (nv == 3) DW_ROWS2(3, 2);
                    else if (nv == 2) DW_ROWS2(2, 4);
                    else if (R == 4) DW_ROWS2(1, 4);
                    else if (R == 7) DW_ROWS2(1, 7);
                    else DW_ROWS2(1, 8);
#undef DW_ROWS2
                }
            }
        }
    }
}

/* dw_scale__avx512 in vectors of 8 */
__attribute__((target("avx2,fma")))
static void dw_scale__avx2(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                           size_t batch, const dcz_act *act, uint32_t c0, uint32_t c1, float *y)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    const size_t plane = (size_t)g->in_h * g->in_w;
    const __m256i tail = dcz_mask8__avx2((uint32_t)(plane % 8));
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = c0; c < c1; c++) {
            const float *xc = x + (b * g->in_c + c) * plane;
            float *yc = y + (b * g->out_c + c) * plane;
            const __m256 bv = _mm256_set1_ps(bias ? bias[c] : 0.0f);
            const int none = f->ptr[c + 1] == f->ptr[c];
            const __m256 wv = _mm256_set1_ps(none ? 0.0f : f->w[f->ptr[c]]), only = dcz_act__avx2(bv, act);
            size_t i = 0;
            for (; i + 8 <= plane; i += 8)
                _mm256_storeu_ps(yc + i, none ? only : dcz_act__avx2(_mm256_fmadd_ps(wv, _mm256_loadu_ps(xc + i), bv), act));
            if (i < plane)
                _mm256_maskstore_ps(yc + i, tail,
                                    none ? only : dcz_act__avx2(_mm256_fmadd_ps(wv, _mm256_maskload_ps(xc + i, tail), bv), act));
        }
}

__attribute__((target("avx2,fma")))
void dcz_shift_dw_rows_run__avx2(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f,
                                 const float *bias, const float *x, size_t batch, const dcz_act *act, uint32_t c0,
                                 uint32_t c1, float *y)
{
    if (dcz_shift_dw_scale_takes(g, f)) {
        dw_scale__avx2(g, f, bias, x, batch, act, c0, c1, y);
        return;
    }
    const size_t W = g->in_w, ow = g->out_w, oh = g->out_h, sw = g->sw;
    dw_rows8_layer L;
    L.nv = (ow + 7) / 8;
    /* rows of up to 4 vectors in one run, wider ones in runs of two */
    L.cv = L.nv <= 4 ? L.nv : 2;
    L.runs = (L.nv + L.cv - 1) / L.cv;
    for (size_t k = 0; k < L.runs; k++) {
        L.v0[k] = k + 1 < L.runs ? k * L.cv : L.nv - L.cv;
        for (size_t c = 0; c < g->kw; c++)
            for (size_t v = 0; v < L.cv; v++) {
                const int64_t first = (int64_t)(8 * (L.v0[k] + v) * sw + c) - (int64_t)g->pw;
                const uint32_t width = sw == 1 ? 8 : 16, m = lanes(-first, (int64_t)W - first, width);
                L.pl[k].first[c][v] = first;
                L.pl[k].lo[c][v] = (uint8_t)(m & 0xFF);
                L.pl[k].hi[c][v] = (uint8_t)(m >> 8);
                L.pl[k].whole[c][v] = m == (1u << width) - 1;
            }
    }
    L.last = (uint32_t)(ow - 8 * (L.nv - 1));
    L.R = L.cv == 1 ? dw_rows_one_vector(oh) : L.cv == 2 ? 4 : 2;
    L.groups = (oh + L.R - 1) / L.R;
    L.nrow = (L.groups * L.R - 1) * g->sh + g->kh;
    dw_taps_init(g, L.cell_ky, L.cell_kx);
    if (L.runs == 1) dw_rows8_channels__avx2(0, &L, g, q, f, bias, x, batch, act, c0, c1, y);
    else dw_rows8_channels__avx2(1, &L, g, q, f, bias, x, batch, act, c0, c1, y);
}

/* Depthwise convolutions with channels in the lanes (AVX2): a vector holds
 * 8 channels of one cell, so a tap is one multiply-add of 8 channels'
 * weights by 8 channels' inputs, whatever the plane's width, no lane
 * masked. Per block of 8 channels and sample, a band of output rows at a
 * time: the padded input rows its windows read transposed into cells of 8
 * channels (8 x 8 transposes of rows; zeros around), then each output row
 * 4 cells at a time, the sums of its taps in column order from the bias
 * (the reference's), through the activation into a row of cells,
 * transposed back into the 8 output planes. A band's rows in cells take
 * at most DWL_BAND_FLOATS (the whole plane where it fits; a plane of 114
 * padded columns, 17 rows) but where one output row's window alone takes
 * more, so that over large planes they stay in the second-level cache;
 * the rows two bands share are transposed twice.
 * Every channel of a block must hold the same taps: it runs layers whose
 * channels all hold every cell of the window (dense depthwise weights; a
 * pruned layer keeps the other kernels). The transposes cost 24 shuffles
 * per 64 floats each way; what it saves: the planes' masked edges,
 * half-empty vectors over planes of 4 and 7 columns and a call's setup per
 * channel. Its scratch: a band's input rows and a row of cells, within the
 * split input's (8 channels or more).
 * MobileNetV2-style dense layers, batch 1, one core of an AMD EPYC (Zen
 * 3), best of 2000 runs (us, the kernel before -> this): 16 x 28 x 28
 * 11.7 -> 7.4, 96 x 28 x 28 stride 2 42.4 -> 30.5 (rows), 144 x 14 x 14
 * 27.9 -> 19.1, 144 x 14 x 14 stride 2 20.2 -> 13.2 (rows), 192 x 7 x 7
 * 11.8 -> 9.5, 192 x 7 x 7 stride 2 17.2 -> 7.1 (rows), 384 x 4 x 4 16.5
 * -> 10.8; the dense model 451 -> 397 us (batch 64: 28.9 -> 25.6 ms), the
 * compressed one 379 -> 332. Of 144 x 14 x 14's 19 us, the transposes
 * take about 11 (the input's 6); 128-bit loads into the two halves, for
 * in-lane transposes only, ran slower (22.7). Over torchvision's planes
 * (the same core, least of three runs of 100 with the second-level cache
 * flushed between them, us): 32 x 112 x 112, which the shift form ran
 * before the bands (its rows past 64 outputs), 352 -> 245 (with bands of
 * 4 K floats 319, 8 K 261, 32 K 363); the others within the host's noise
 * of the whole plane at once (96 x 112 x 112 stride 2 456 / 462, 144 x 56
 * x 56 5 x 5 stride 2 229 / 228). A ring of window rows, each transposed
 * once, with the taps' rows looked up, ran slower on small planes (960 x
 * 7 x 7 49 -> 84, 240 x 28 x 28 5 x 5 245 -> 295). */
/* The floats of scratch the channels-in-lanes kernel needs at the least
 * (a window's rows in cells, an output row's, the alignment), and whether
 * it runs g on the shift form f: within the scratch of the shift form */
uint64_t dcz_shift_dw_lanes_floats(const dcz_conv_geom *g)
{
    return ((uint64_t)g->kh * (g->in_w + 2 * g->pw) + g->out_w) * 8 + 8;
}

int dcz_shift_dw_lanes_fit(const dcz_conv_geom *g, const dcz_shift *f)
{
    return dcz_conv_groups(g) == g->in_c && g->out_c == g->in_c && f->ob == 1 && f->cell && f->whole && g->in_c >= 8 &&
           (size_t)g->kh * g->kw <= DW_MAX_TAPS && dcz_shift_dw_lanes_floats(g) <= dcz_shift_scratch_floats(g);
}

/* The output rows of a band (dcz_shift_dw_lanes_run__avx2) in a scratch
 * of `floats`: as many as keep its input rows in cells within
 * DWL_BAND_FLOATS and the scratch, at least one. */
static size_t dw_lanes_band(const dcz_conv_geom *g, uint64_t floats)
{
    const size_t row = ((size_t)g->in_w + 2 * g->pw) * 8, kh = g->kh, sh = g->sh;
    const size_t have = (size_t)floats - (size_t)g->out_w * 8 - 8;
    const size_t rows = (DWL_BAND_FLOATS < have ? DWL_BAND_FLOATS : have) / row;
    const size_t bo = rows <= kh ? 1 : (rows - kh) / sh + 1;
    return bo < g->out_h ? bo : g->out_h;
}

/* 8 x 8 transpose: r[i] lane j to r[j] lane i */
__attribute__((target("avx2"), always_inline))
static inline void transpose8__avx2(__m256 *r)
{
    __m256 t[8], u[8];
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* O output cells from the window at t (the block's padded input in cells,
 * the window's first cell), sw cells apart: wt the taps' weights (n, 8),
 * toff their cells' offsets from the window's first (floats); into q (O
 * cells of 8). */
__attribute__((target("avx2,fma"), always_inline))
static inline void dw_lanes_cells__avx2(const int O, const float *t, size_t sw, const float *wt, const uint32_t *toff,
                                        uint32_t n, __m256 b, const dcz_act *act, float *q)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    __m256 acc[4];
#pragma GCC unroll 4
    for (int o = 0; o < O; o++) acc[o] = b;
    for (uint32_t e = 0; e < n; e++) {
        const __m256 wv = _mm256_load_ps(wt + 8 * (size_t)e);
        const float *x = t + toff[e];
#pragma GCC unroll 4
        for (int o = 0; o < O; o++) acc[o] = _mm256_fmadd_ps(wv, _mm256_load_ps(x + 8 * sw * (size_t)o), acc[o]);
    }
#pragma GCC unroll 4
    for (int o = 0; o < O; o++) _mm256_store_ps(q + 8 * (size_t)o, dcz_act__avx2(acc[o], act));
}

/* The same at stride 1 over 3 columns a window row, whose taps' column
 * order is the window's row by row: each window row's O + 2 input cells
 * loaded once for its three taps (O = 6: 8 loads and 3 weights for 18
 * multiply-adds, where a load a tap took 4 + 1 for 4). */
__attribute__((target("avx2,fma"), always_inline))
static inline void dw_lanes_cells3__avx2(const int O, const float *t, size_t wp, uint32_t kh, const float *wt,
                                         __m256 b, const dcz_act *act, float *q)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    __m256 acc[6], xr[8];
#pragma GCC unroll 6
    for (int o = 0; o < O; o++) acc[o] = b;
    for (uint32_t ky = 0; ky < kh; ky++) {
        const float *r = t + ky * wp * 8;
#pragma GCC unroll 8
        for (int j = 0; j < O + 2; j++) xr[j] = _mm256_load_ps(r + 8 * j);
#pragma GCC unroll 3
        for (int kx = 0; kx < 3; kx++) {
            const __m256 wv = _mm256_load_ps(wt + 8 * (ky * 3 + (size_t)kx));
#pragma GCC unroll 6
            for (int o = 0; o < O; o++) acc[o] = _mm256_fmadd_ps(wv, xr[o + kx], acc[o]);
        }
    }
#pragma GCC unroll 6
    for (int o = 0; o < O; o++) _mm256_store_ps(q + 8 * (size_t)o, dcz_act__avx2(acc[o], act));
}

/* Padded input row iy of the block of nc channels at xb (planes in_plane
 * apart, rows W wide, xend the input's end) in cells into row: zeros
 * around, each row's cells by transposes of 8 columns. */
__attribute__((target("avx2")))
static void dw_lanes_row__avx2(const dcz_conv_geom *g, const float *xb, size_t nc, size_t iy, const float *xend,
                               float *row)
{
    const size_t W = g->in_w, wp = W + 2 * (size_t)g->pw, in_plane = (size_t)g->in_h * W;
    const __m256 zero = _mm256_setzero_ps();
    for (size_t ix = 0; ix < g->pw; ix++) {
        _mm256_store_ps(row + 8 * ix, zero);
        _mm256_store_ps(row + 8 * (wp - 1 - ix), zero);
    }
    const float *xr = xb + (iy - g->ph) * W;
    for (size_t ix = 0; ix < W; ix += 8) {
        const size_t m = W - ix < 8 ? W - ix : 8;
        __m256 r[8];
#pragma GCC unroll 8
        for (size_t l = 0; l < 8; l++) {
            if (l >= nc) r[l] = zero;
            /* past the row: columns not stored below (a masked load only at the input's end:
               one costs several plain ones on Zen 3) */
            else if (xr + l * in_plane + ix + 8 <= xend) r[l] = _mm256_loadu_ps(xr + l * in_plane + ix);
            else r[l] = _mm256_maskload_ps(xr + l * in_plane + ix, dcz_mask8__avx2((uint32_t)m));
        }
        transpose8__avx2(r);
        for (size_t j = 0; j < m; j++) _mm256_store_ps(row + 8 * (g->pw + ix + j), r[j]);
    }
}

__attribute__((target("avx2,fma")))
void dcz_shift_dw_lanes_run__avx2(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f, const float *bias,
                                  const float *x, size_t batch, const dcz_act *act, uint32_t c0, uint32_t c1,
                                  float *scratch, uint64_t floats, float *y)
{
    const size_t H = g->in_h, C = g->in_c, oh = g->out_h, ow = g->out_w, sh = g->sh, sw = g->sw, kh = g->kh;
    const size_t wp = g->in_w + 2 * (size_t)g->pw, in_plane = H * g->in_w, out_plane = oh * ow;
    /* a band of padded rows in cells, the output row's cells */
    const size_t band = dw_lanes_band(g, floats);
    float *T = (float *)(((uintptr_t)scratch + 31) & ~(uintptr_t)31), *Q = T + ((band - 1) * sh + kh) * wp * 8;
    uint32_t toff[DW_MAX_TAPS];
    uint8_t cell_ky[DW_MAX_TAPS], cell_kx[DW_MAX_TAPS], ky[DW_MAX_TAPS], kx[DW_MAX_TAPS];
    dw_taps_init(g, cell_ky, cell_kx);
    const uint32_t n = dw_channel_taps(f, cell_ky, cell_kx, 0, ky, kx);   /* the same in every channel */
    for (uint32_t e = 0; e < n; e++) toff[e] = (uint32_t)((ky[e] * wp + kx[e]) * 8);
    const float *xend = x + batch * C * in_plane;
    /* stride 1, 3 columns a window row (the split input is then the padded
     * plane, so the taps' column order is the window's, row by row) */
    const int rows3 = sh == 1 && sw == 1 && g->kw == 3;
    float wt[DW_MAX_TAPS * 8] __attribute__((aligned(32)));
    const __m256 zero = _mm256_setzero_ps();
    for (size_t cb = c0; cb < c1; cb += 8) {
        const size_t nc = c1 - cb < 8 ? c1 - cb : 8;
        float b8[8];
        for (size_t l = 0; l < 8; l++) {
            b8[l] = bias && l < nc ? bias[cb + l] : 0.0f;
            for (uint32_t e = 0; e < n; e++) wt[8 * e + l] = l < nc ? f->w[f->ptr[cb + l] + e] : 0.0f;
        }
        const __m256 b = _mm256_loadu_ps(b8);
        for (size_t s = 0; s < batch; s++) {
            const float *xb = x + (s * C + cb) * in_plane;
            float *yb = y + (s * C + cb) * out_plane;
            for (size_t oy = 0; oy < oh; oy++) {
                /* a band's padded rows, oy0 sh .. (oy0 + band - 1) sh + kh - 1,
                 * in T in order: zeros above and below the image */
                const size_t oy0 = oy - oy % band;
                if (oy == oy0) {
                    const size_t r1 = (oy0 + band - 1) * sh + kh, r1p = r1 < H + 2 * (size_t)g->ph ? r1 : H + 2 * (size_t)g->ph;
                    for (size_t r = oy0 * sh; r < r1p; r++) {
                        float *row = T + (r - oy0 * sh) * wp * 8;
                        if (r < g->ph || r >= g->ph + H)
                            for (size_t ix = 0; ix < wp; ix++) _mm256_store_ps(row + 8 * ix, zero);
                        else dw_lanes_row__avx2(g, xb, nc, r, xend, row);
                    }
                }
                const float *tr = T + (oy - oy0) * sh * wp * 8;
                size_t ox = 0;
                if (rows3) {
                    for (; ox + 6 <= ow; ox += 6) dw_lanes_cells3__avx2(6, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox);
                    switch (ow - ox) {
                    case 5: dw_lanes_cells3__avx2(5, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    case 4: dw_lanes_cells3__avx2(4, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    case 3: dw_lanes_cells3__avx2(3, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    case 2: dw_lanes_cells3__avx2(2, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    case 1: dw_lanes_cells3__avx2(1, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    default: break;
                    }
                    ox = ow;
                }
                for (; ox + 4 <= ow; ox += 4) dw_lanes_cells__avx2(4, tr + ox * sw * 8, sw, wt, toff, n, b, act, Q + 8 * ox);
                switch (ow - ox) {
                case 3: dw_lanes_cells__avx2(3, tr + ox * sw * 8, sw, wt, toff, n, b, act, Q + 8 * ox); break;
                case 2: dw_lanes_cells__avx2(2, tr + ox * sw * 8, sw, wt, toff, n, b, act, Q + 8 * ox); break;
                case 1: dw_lanes_cells__avx2(1, tr + ox * sw * 8, sw, wt, toff, n, b, act, Q + 8 * ox); break;
                default: break;
                }
                /* the row's cells back into the channels' planes */
                float *yr = yb + oy * ow;
                for (ox = 0; ox < ow; ox += 8) {
                    const size_t m = ow - ox < 8 ? ow - ox : 8;
                    __m256 r[8];
#pragma GCC unroll 8
                    for (size_t j = 0; j < 8; j++) r[j] = j < m ? _mm256_load_ps(Q + 8 * (ox + j)) : zero;
                    transpose8__avx2(r);
                    /* whole stores but on a plane's last row: the lanes past a
                       row land on the next, stored after this one */
                    for (size_t l = 0; l < nc; l++) {
                        if (m == 8 || oy * ow + ox + 8 <= out_plane) _mm256_storeu_ps(yr + l * out_plane + ox, r[l]);
                        else _mm256_maskstore_ps(yr + l * out_plane + ox, dcz_mask8__avx2((uint32_t)m), r[l]);
                    }
                }
            }
        }
    }
}
#else
int dcz_shift_dw_full_takes(const dcz_conv_geom *g)
{
    (void)g;
    return 0;
}

int dcz_shift_dw_scale_takes(const dcz_conv_geom *g, const dcz_shift *f)
{
    (void)g;
    (void)f;
    return 0;
}
#endif /* DCZ_BUILD_F32_X86 */
