/* conv.c: 2-D convolution of the training engine, forward and backward, by
 * im2col and libdcz's dense product (dcz_gemm_f32), a tile of the batch at
 * a time.
 *
 * Activations are batch major, (batch, C, H, W) in C order. A tile is
 * output rows [oh0, oh0 + nr) of samples [n0, n0 + ns): its columns cols
 * (K, T), K = in_c*kh*kw, T = ns*nr*OW, hold in row (c, i, j), column
 * (n, oh, ow) input pixel (c, oh*sh - ph + i, ow*sw - pw + j) of sample n,
 * 0 outside the input (zero padding). A tile has as many rows as keep its
 * columns and its out_c rows of product within CONV_TILE_FLOATS, and when
 * those are all of a sample's rows, as many samples, so that its columns
 * are still in the core's cache when the products read them. Then
 *   forward   y's part (out_c, T) = b + W cols;
 *   backward  gW^T += cols dY^T and dcols = W^T dY, dY being dy's part;
 *             dx = col2im(dcols), the adjoint of im2col (each column entry
 *             added back to its pixel); gb = plane sums of dy.
 * dcz_gemm_f32 reads B's rows whole (C = A B, B's rows as vectors, A's
 * entries broadcast), so each product is put in that form: the columns are
 * B of the forward pass; W^T, made once a pass, is A of dcols; the weight
 * gradient is computed transposed, cols times dY^T, dY transposed by 16 x
 * 16 blocks. The rows of cols and of the scratch parts are padded to
 * whole vectors; net->work starts zeroed, so the padding a product reads
 * holds finite values. With one sample a tile, y's part is written in
 * place (rows OH*OW apart); with several, through a scratch of out_c rows.
 * The work splits over the trainer's threads (par.c) in slots, each with
 * its own scratch in net->work (dcz_conv_work_floats): forward by tiles;
 * backward by input channels (rows of the columns when dx is not wanted),
 * each slot building only its channels' rows of each tile's columns, so
 * that its part of gW and its channels of dx are its own. An item's result
 * is the same whichever slot computes it.
 *
 * Against OpenBLAS sgemm on the same tiles (forward in place with beta 1,
 * backward gW += dY cols^T and dcols = W^T dY straight from the tile), on
 * an AMD EPYC (Zen 4) at 2 threads, alternated runs of a tenth of an
 * epoch: the conv-heavy CNN 5.89-5.99 s against 6.34-6.93 s, the
 * ResNet-style preset 3.45-3.72 s against 4.06-4.43 s, the
 * MobileNetV2-style preset (a twentieth) 8.94-8.97 s against 9.60-9.78 s.
 * On the products' shapes alone (one thread, in cache) dcz_gemm_f32 ran
 * at 106-114 GFLOP/s where sgemm ran at 66-96; on 49-column products they
 * tie (88). On a CPU without AVX2 or NEON dcz_gemm_f32 is its scalar
 * reference, much slower than OpenBLAS there.
 *
 * Against building the columns of chunks of samples (up to 2^21 floats,
 * out of cache by the products) and, for layers whose columns fit 2^22
 * floats, keeping them from the forward to the backward pass, on an AMD
 * EPYC at 2 threads, alternated runs of a tenth of an epoch: the
 * ResNet-style preset 3.6-4.5 s against 4.3-5.0 s, the conv-heavy CNN
 * 6.7-7.1 s against 6.9-7.6 s.
 *
 * On x86 with AVX-512, im2col writes the columns of a layer of stride 1 or
 * 2 across a plane (one row of the columns, one sample's rows of a tile)
 * at a time, by masked vectors made once per plane, 16 columns a step;
 * elsewhere by libc's copy between loops of zeros. On an AMD EPYC at one thread,
 * alternated runs: the ResNet-style preset 695-770 samples/s by a masked
 * call per row (stride 2 by scalar loops), 733-801 by planes; the
 * conv-heavy CNN 441-449 by a call per row, 471-487 by planes. Full stores
 * that run past a row into the next (masks only at the plane's end)
 * measured slower there (732-763 against 786-805). Its adjoint at stride 1
 * across goes by input rows: each vector of pixels loaded once, every tap's
 * entries added, stored once (the ResNet-style preset's col2im took 10% of
 * a training run tap by tap, 3% by rows); at stride 2 tap by tap, each
 * tap's entries spread over even lanes by permutes. A pointwise layer's
 * (1 x 1 at stride 1, no padding: each pixel its one entry) writes each
 * channel's rows into dx, not zeroed first (dx_copy_tile): on an AMD
 * EPYC (Zen 4), a twentieth of an epoch of the MobileNetV2-style preset,
 * whose layers but the stem and the depthwise ones are pointwise, 6.12-6.49
 * -> 5.75-6.34 s at one thread (medians 6.33 and 5.92 of five alternated
 * runs), 3.74-4.12 -> 3.53-4.20 at two.
 *
 * libdcz's own dense convolution kernels (the shift form, the patches
 * times the weights), which beat im2col and OpenBLAS on one sample, lose to
 * them over a batch: run for the forward pass, sample by sample on the
 * threads, they trained the conv-heavy CNN at 855 samples/s against 950
 * and LeNet-5 at 8300 against 9000 at 2 threads (measured against products
 * over chunks of samples).
 *
 * The forward pass of a 3x3 convolution of stride 1, one group, whose
 * input and output channels are multiples of 16, and its input's gradient
 * go by Winograd's F(2x2, 3x3) where the machine has AVX-512 (wino.c): 16
 * products of C by K per 2x2 outputs where the columns' product holds 36;
 * the columns then serve the weights' gradient alone. A tenth of an epoch
 * at 2 threads, median ratio of 4 alternated pairs against the columns:
 * the conv-heavy CNN, whose layers but the first are such, the forward
 * pass alone 0.904, both 0.864; the ResNet-style preset (16 to 64
 * channels, strides 1 and 2) 0.984 and 0.975 with the forward pass alone,
 * 0.955 more with the input's gradient. Its scratch holds whole samples
 * (a zero-bordered image and the outputs, as pixels), per thread, up to
 * DCZ_WINO_SCRATCH_MAX floats (16 MB; larger layers keep the columns),
 * where the columns' tiles stay within CONV_TILE_FLOATS.
 *
 * A grouped convolution (G groups) uses the same columns: group g's output
 * channels (oc / G of them) read rows g K/G .. (g + 1) K/G - 1, its input
 * channels, so each product above runs once per group on those rows.
 *
 * A depthwise convolution (G = in_c: each group reads one channel) skips
 * the columns: unrolled, each of its products would be one row of kh*kw
 * weights per group, and the columns kh*kw times the input. It runs
 * directly instead, tap by tap, each tap a scaled row added to an output
 * row (forward), a dot product of rows (weight gradient) or a scaled row
 * added back to an input row (input gradient), with no columns. Its
 * input channels go over the trainer's threads (each part its channels'
 * outputs, weights and input gradients: the bits of one thread), a plane
 * at a time, on AVX-512 in masked vectors with the bits of the scalar
 * planes (dw_forward_plane_ref). A weight's gradient is one tree of 16
 * partial sums over the plane (it was a tree per row, and a plain sum at
 * stride 2, which cost a reduction per row of 4 to 28 products). Where
 * the rows are short (7 columns or fewer: a plane's vectors would idle
 * more than half their lanes) and each group has one output channel, the
 * layer runs by lanes instead: chunks of 32 channels transposed to pixels
 * of 32 floats, each tap a vector of channels (dwl_forward__avx512), in
 * slots of net->work, with the same bits (dwl_fits). Both forms take the
 * samples outermost. On the MobileNetV2-style preset's eight depthwise
 * layers, a batch of 64 on one core of an AMD EPYC (Zen 4), best of ten:
 * forward 13.9-15.1 -> 6.7-7.7 ms, backward 38.0-40.3 -> 20.0-21.9
 * (the layers over 4 x 4 planes 1.7-2.0 -> 0.32-0.45 ms forward, by
 * lanes); a twentieth of an epoch 8.5-8.7 -> 6.3-6.8 s at one thread,
 * 5.1-5.2 -> 3.9-4.2 at two.
 *
 * Checked by tests/unit/test_train.c against a direct 7-loop convolution on
 * random data and by finite differences (strides 1 and 2, padding 0 and 1,
 * odd sizes).
 */
#include <string.h>

#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/wino.h"
#include "train/internal.h"

/* Output columns [*lo, *hi) whose input column ow*s - pad + j is inside
 * [0, n); the others read padding. */
static void valid_range(int j, int n, int out, int s, int pad, int *lo, int *hi)
{
    int a = pad - j;   /* ow*s >= a */
    int l = a > 0 ? (a + s - 1) / s : 0;
    int t = n - 1 + pad - j;   /* ow*s <= t */
    int h = t < 0 ? 0 : t / s + 1;
    if (h > out) h = out;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* gb[c] for output channels [c0, c1): the sum of dy's planes of channel c
 * (batch samples of out floats, planes of ohw), sample by sample, each
 * plane by dcz_vsum; the samples outermost, so that each sample's
 * channels are read as one run of memory (as bnorm.c's passes). The bias
 * gradient of every convolution, depthwise or not. */
static void plane_sums(const float *dy, int batch, size_t out, size_t ohw, size_t c0, size_t c1, float *gb)
{
    for (size_t c = c0; c < c1; c++) gb[c] = 0.0f;
    for (size_t n = 0; n < (size_t)batch; n++)
        for (size_t c = c0; c < c1; c++) gb[c] += dcz_vsum(dy + n * out + c * ohw, ohw);
}

/* The depthwise lane form's chunk of channels, and its bounds on a window
 * (dwl_forward__avx512 below). */
#define DWL_CH 32
#define DWL_MAXKW 16
#define DWL_MAXTAPS 64

#if defined(__x86_64__)
#include <immintrin.h>
/* A row of OW columns, 16 a vector (at most ROW_MAXV vectors: OW <= 128),
 * of which [lo, hi) read inside the input, at stride sw = 1 or 2 across:
 * per vector, in: its columns that read; all: its columns; ld0, ld1: the
 * input lanes those read among the 16 sw from the vector's first (ld0 the
 * first 16, ld1 the next 16). The same for every row of a plane, so made
 * once a plane. */
enum { ROW_MAXV = 8 };
typedef struct row_masks {
    int nv;
    __mmask16 in[ROW_MAXV], all[ROW_MAXV], ld0[ROW_MAXV], ld1[ROW_MAXV];
} row_masks;

/* Piece o.. of a row wider than ROW_MAXV vectors: its *n columns, and its
 * columns [*l, *h) of the row's [lo, hi). */
static void row_piece(int o, int OW, int lo, int hi, int *n, int *l, int *h)
{
    *n = OW - o < 16 * ROW_MAXV ? OW - o : 16 * ROW_MAXV;
    *l = lo - o < 0 ? 0 : lo - o > *n ? *n : lo - o;
    *h = hi - o < *l ? *l : hi - o > *n ? *n : hi - o;
}

/* The masks of a row; 0 when it is wider than ROW_MAXV vectors. */
static int row_masks_make(row_masks *m, int sw, int lo, int hi, int OW)
{
    m->nv = (OW + 15) / 16;
    if (m->nv > ROW_MAXV) return 0;
    for (int v = 0; v < m->nv; v++) {
        const int o = 16 * v, n = OW - o < 16 ? OW - o : 16;
        const int a = lo - o < 0 ? 0 : lo - o, b = hi - o > n ? n : hi - o;
        /* input lanes [a sw, (b - 1) sw] of the step's 16 sw */
        const uint32_t inputs = b > a ? (uint32_t)(((uint64_t)1 << ((b - 1) * sw + 1)) - 1) &
                                            ~(((uint32_t)1 << (a * sw)) - 1) : 0;
        m->in[v] = (__mmask16)(b > a ? ((1u << b) - 1) & ~((1u << a) - 1) : 0);
        m->all[v] = (__mmask16)((1u << n) - 1);
        m->ld0[v] = (__mmask16)inputs;
        m->ld1[v] = (__mmask16)(inputs >> 16);
    }
    return 1;
}

/* The permute index that keeps the even lanes of two vectors: 16 inputs
 * read at stride 2 across. */
__attribute__((target("avx512f")))
static inline __m512i even_lanes__avx512(void)
{
    return _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
}

/* The plane d (OH, OW) of one row (c, ki, kj) of the columns and one
 * sample, at stride sw = 1 or 2 across: row oh is xp[ih * W + off + ow*sw]
 * for ow in [lo, hi), ih = ih0 + oh*sh inside [0, H), and 0 elsewhere.
 * 16 columns a step: at stride 1 one masked load, at stride 2 two masked
 * loads and a permute that keeps their even lanes; lanes outside
 * [lo, hi) are neither read nor faulted (the loads cover only the inputs
 * from the first column's to the last's). The rows of 7 to 28 columns of
 * the presets cost a libc call and two loops of zeros each otherwise. */
__attribute__((target("avx512f")))
static void im2col_masked__avx512(float *d, const float *xp, int ih0, int sh, int H, int W, int off,
                                  int sw, const row_masks *mp, int OH, int OW);

__attribute__((target("avx512f")))
static void im2col_plane__avx512(float *d, const float *xp, int ih0, int sh, int H, int W, int off,
                                 int sw, int lo, int hi, int OH, int OW)
{
    row_masks m;
    if (!row_masks_make(&m, sw, lo, hi, OW)) {   /* wider rows: masks made row by row */
        for (int oh = 0, ih = ih0; oh < OH; oh++, ih += sh, d += OW)
            for (int o = 0, n, l, h; o < OW; o += n) {
                row_piece(o, OW, lo, hi, &n, &l, &h);
                im2col_plane__avx512(d + o, xp, ih, sh, H, W, off + o * sw, sw, l, h, 1, n);
            }
        return;
    }
    im2col_masked__avx512(d, xp, ih0, sh, H, W, off, sw, &m, OH, OW);
}

/* im2col_plane__avx512 with the row's masks m made (row_masks_make
 * returned 1). */
__attribute__((target("avx512f")))
static void im2col_masked__avx512(float *d, const float *xp, int ih0, int sh, int H, int W, int off,
                                  int sw, const row_masks *mp, int OH, int OW)
{
    const row_masks m = *mp;
    const __m512 zero = _mm512_setzero_ps();
    const __m512i even = even_lanes__avx512();
    for (int oh = 0, ih = ih0; oh < OH; oh++, ih += sh, d += OW) {
        if (ih < 0 || ih >= H) {
            for (int v = 0; v < m.nv; v++) _mm512_mask_storeu_ps(d + 16 * v, m.all[v], zero);
            continue;
        }
        const float *xr = xp + (size_t)ih * W + off;
        if (sw == 1)
            for (int v = 0; v < m.nv; v++)
                _mm512_mask_storeu_ps(d + 16 * v, m.all[v], _mm512_maskz_loadu_ps(m.in[v], xr + 16 * v));
        else
            for (int v = 0; v < m.nv; v++) {
                const __m512 x0 = _mm512_maskz_loadu_ps(m.ld0[v], xr + 32 * v);
                const __m512 x1 = _mm512_maskz_loadu_ps(m.ld1[v], xr + 32 * v + 16);
                _mm512_mask_storeu_ps(d + 16 * v, m.all[v],
                                      _mm512_maskz_permutex2var_ps(m.in[v], x0, even, x1));
            }
    }
}

/* The adjoint of im2col_plane__avx512: entry (oh, ow) of d, ow in
 * [lo, hi), added back to xp[ih * W + off + ow*sw] (ih = ih0 + oh*sh
 * inside [0, H)); at stride 2 each vector of d spread over the even lanes
 * of two vectors of the input by permutes. */
__attribute__((target("avx512f")))
static void col2im_masked__avx512(const float *d, float *xp, int ih0, int sh, int H, int W, int off,
                                  int sw, const row_masks *mp, int OH, int OW);

__attribute__((target("avx512f")))
static void col2im_plane__avx512(const float *d, float *xp, int ih0, int sh, int H, int W, int off,
                                 int sw, int lo, int hi, int OH, int OW)
{
    row_masks m;
    if (!row_masks_make(&m, sw, lo, hi, OW)) {
        for (int oh = 0, ih = ih0; oh < OH; oh++, ih += sh, d += OW)
            for (int o = 0, n, l, h; o < OW; o += n) {
                row_piece(o, OW, lo, hi, &n, &l, &h);
                col2im_plane__avx512(d + o, xp, ih, sh, H, W, off + o * sw, sw, l, h, 1, n);
            }
        return;
    }
    col2im_masked__avx512(d, xp, ih0, sh, H, W, off, sw, &m, OH, OW);
}

/* col2im_plane__avx512 with the row's masks m made (row_masks_make
 * returned 1). */
__attribute__((target("avx512f")))
static void col2im_masked__avx512(const float *d, float *xp, int ih0, int sh, int H, int W, int off,
                                  int sw, const row_masks *mp, int OH, int OW)
{
    const row_masks m = *mp;
    const __m512i lower = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i upper = _mm512_add_epi32(lower, _mm512_set1_epi32(8));
    for (int oh = 0, ih = ih0; oh < OH; oh++, ih += sh, d += OW) {
        if (ih < 0 || ih >= H) continue;
        float *xr = xp + (size_t)ih * W + off;
        if (sw == 1)
            for (int v = 0; v < m.nv; v++) {
                const __mmask16 k = m.in[v];
                const __m512 s = _mm512_add_ps(_mm512_maskz_loadu_ps(k, xr + 16 * v),
                                               _mm512_maskz_loadu_ps(k, d + 16 * v));
                _mm512_mask_storeu_ps(xr + 16 * v, k, s);
            }
        else
            for (int v = 0; v < m.nv; v++) {
                const __mmask16 k0 = m.ld0[v] & 0x5555, k1 = m.ld1[v] & 0x5555;
                const __m512 g = _mm512_maskz_loadu_ps(m.in[v], d + 16 * v);
                const __m512 s0 = _mm512_add_ps(_mm512_maskz_loadu_ps(k0, xr + 32 * v),
                                                _mm512_permutexvar_ps(lower, g));
                const __m512 s1 = _mm512_add_ps(_mm512_maskz_loadu_ps(k1, xr + 32 * v + 16),
                                                _mm512_permutexvar_ps(upper, g));
                _mm512_mask_storeu_ps(xr + 32 * v, k0, s0);
                _mm512_mask_storeu_ps(xr + 32 * v + 16, k1, s1);
            }
    }
}

/* Kernels of at most this many columns a vectorized adjoint by input rows
 * takes. */
enum { ROWS_MAXKW = 8 };

/* Tap kj at stride sw across (1 or 2) adds output column ow to pixel
 * ow sw + kj - pw. Of vector v of an input row of W pixels (16 v + j,
 * j < 16), the lanes that take it: those whose column (16 v + j + pw - kj)
 * / sw divides exactly and lies in [0, OW). *ow0 and *odd: that column is
 * *ow0 + (j + *odd) / sw; *ld: the columns from *ow0 on the lanes read. */
static __mmask16 tap_pixels(int W, int OW, int sw, int pw, int kj, int v, int *ow0, int *odd, __mmask16 *ld)
{
    const int n = W - 16 * v < 16 ? W - 16 * v : 16, t = 16 * v + pw - kj;
    const int o = t >= 0 ? t / sw : -((sw - 1 - t) / sw), r = t - o * sw;
    uint32_t pix = 0, cols = 0;
    for (int j = 0; j < n; j++) {
        const int ow = o + (r + j) / sw;
        if ((r + j) % sw == 0 && ow >= 0 && ow < OW) {
            pix |= 1u << j;
            cols |= 1u << (ow - o);
        }
    }
    *ow0 = o;
    *odd = r;
    *ld = (__mmask16)cols;
    return (__mmask16)pix;
}

/* The adjoint of one input channel's rows at stride 1 across, by input
 * rows: each vector of 16 pixels of a row of xp (H, W) is loaded once,
 * gets every entry of the tile's columns read from it (the kh kw rows
 * d, each b.T long) and is stored once, so a pixel is not read back
 * right after its store for each tap in turn. 0 (nothing done) for rows
 * wider than ROW_MAXV vectors or kernels wider than ROWS_MAXKW. */
__attribute__((target("avx512f")))
static int col2im_channel__avx512(const dcz_tlayer *l, const float *d, int oh0, int nr, size_t T,
                                  float *xp)
{
    const int H = l->in_h, W = l->in_w, OW = l->out_w, kh = l->kh, kw = l->kw;
    const int sh = l->sh, ph = l->ph, pw = l->pw, nv = (W + 15) / 16;
    if (nv > ROW_MAXV || kw > ROWS_MAXKW) return 0;
    __mmask16 m[ROWS_MAXKW][ROW_MAXV], all[ROW_MAXV];   /* tap kj adds d entry ow to pixel ow + kj - pw */
    for (int v = 0; v < nv; v++) {
        const int n = W - 16 * v < 16 ? W - 16 * v : 16;
        all[v] = (__mmask16)((1u << n) - 1);
        for (int kj = 0; kj < kw; kj++) {
            int ow0, odd;
            __mmask16 ld;
            m[kj][v] = tap_pixels(W, OW, 1, pw, kj, v, &ow0, &odd, &ld);
        }
    }
    int ih0 = oh0 * sh - ph, ih1 = (oh0 + nr - 1) * sh - ph + kh;   /* rows [ih0, ih1) */
    if (ih0 < 0) ih0 = 0;
    if (ih1 > H) ih1 = H;
    for (int ih = ih0; ih < ih1; ih++) {
        float *xr = xp + (size_t)ih * W;
        for (int v = 0; v < nv; v++) {
            __m512 acc = _mm512_maskz_loadu_ps(all[v], xr + 16 * v);
            for (int ki = 0; ki < kh; ki++) {
                const int t = ih + ph - ki, oh = t / sh;
                if (t < 0 || t % sh || oh < oh0 || oh >= oh0 + nr) continue;
                const float *dr = d + (size_t)ki * kw * T + (size_t)(oh - oh0) * OW + 16 * v + pw;
                for (int kj = 0; kj < kw; kj++, dr += T)   /* entry ow = pixel - kj + pw */
                    acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m[kj][v], dr - kj));
            }
            _mm512_mask_storeu_ps(xr + 16 * v, all[v], acc);
        }
    }
    return 1;
}

/* A depthwise convolution's planes on AVX-512, one (sample, output
 * channel) a call, with the bits of the reference planes below
 * (dw_forward_plane_ref, dw_backward_plane_ref): every output, input
 * gradient and weight gradient takes the same products, each rounded, then
 * added, in the same order. Rows of at most ROW_MAXV vectors, kernels of
 * at most ROWS_MAXKW columns, strides 1 and 2 across. */
typedef struct dw_masks {
    row_masks out[ROWS_MAXKW];   /* tap kj's output lanes, its input lanes */
    /* the input gradient, pixel by pixel: vector v of an input row takes
     * tap kj in lanes pix (of all, the row's), from output columns ow0 +
     * (lane + odd) / sw, which a load of lanes ld at ow0 holds */
    __mmask16 pix[ROWS_MAXKW][ROW_MAXV], ld[ROWS_MAXKW][ROW_MAXV], all[ROW_MAXV];
    int ow0[ROWS_MAXKW][ROW_MAXV], odd[ROWS_MAXKW][ROW_MAXV];
} dw_masks;

static int dw_masks_make(const dcz_tlayer *l, dw_masks *m)
{
    const int W = l->in_w, OW = l->out_w, sw = l->sw, pw = l->pw;
    if (l->kw > ROWS_MAXKW || l->kh * l->kw > ROWS_MAXKW * ROWS_MAXKW || sw > 2 || (W + 15) / 16 > ROW_MAXV)
        return 0;
    for (int kj = 0; kj < l->kw; kj++) {
        int lo, hi;
        valid_range(kj, W, OW, sw, pw, &lo, &hi);
        if (!row_masks_make(&m->out[kj], sw, lo, hi, OW)) return 0;
        for (int v = 0; v < (W + 15) / 16; v++)
            m->pix[kj][v] = tap_pixels(W, OW, sw, pw, kj, v, &m->ow0[kj][v], &m->odd[kj][v], &m->ld[kj][v]);
    }
    for (int v = 0; v < (W + 15) / 16; v++) {
        const int n = W - 16 * v < 16 ? W - 16 * v : 16;
        m->all[v] = (__mmask16)((1u << n) - 1);
    }
    return 1;
}

/* y plane = b, then every tap in (ki, kj) order where it reads inside x */
__attribute__((target("avx512f")))
static void dw_forward_plane__avx512(const dcz_tlayer *l, const dw_masks *m, const float *w, float b,
                                     const float *x, float *y)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, kh = l->kh, kw = l->kw;
    const int sh = l->sh, sw = l->sw, ph = l->ph, pw = l->pw, nv = m->out[0].nv;
    const __m512i even = even_lanes__avx512();
    for (int oh = 0; oh < OH; oh++, y += OW)
        for (int v = 0; v < nv; v++) {
            __m512 acc = _mm512_set1_ps(b);
            for (int ki = 0; ki < kh; ki++) {
                const int ih = oh * sh - ph + ki;
                if (ih < 0 || ih >= H) continue;
                const float *xr = x + (size_t)ih * W;
                for (int kj = 0; kj < kw; kj++) {
                    const row_masks *r = &m->out[kj];
                    const __mmask16 k = r->in[v];
                    if (!k) continue;
                    const float *xs = xr + kj - pw;
                    const __m512 xv = sw == 1 ? _mm512_maskz_loadu_ps(k, xs + 16 * v)
                                              : _mm512_maskz_permutex2var_ps(
                                                    k, _mm512_maskz_loadu_ps(r->ld0[v], xs + 32 * v), even,
                                                    _mm512_maskz_loadu_ps(r->ld1[v], xs + 32 * v + 16));
                    acc = _mm512_mask_add_ps(acc, k, acc, _mm512_mul_ps(_mm512_set1_ps(w[ki * kw + kj]), xv));
                }
            }
            _mm512_mask_storeu_ps(y + 16 * v, m->out[0].all[v], acc);
        }
}

/* gw[tap] += the tree of the 16 partial sums of dy x, each row's run of
 * the tap's columns in 16-lane steps into one vector (row by row, a row's
 * steps in order): every tap's vector at once, a row at a time, so that
 * the taps' sums do not wait on each other and each step of dy is loaded
 * once for a column of taps (one sum a tap, tap by tap, waited on its
 * adds). KH, KW and SW: the window and the stride across, constants where
 * the caller names them (3 x 3). */
__attribute__((target("avx512f"), always_inline))
static inline void dw_weight_grad_body__avx512(const dcz_tlayer *l, const float *x, const float *dy, float *gw, const int KH,
                                       const int KW, const int SW)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, sh = l->sh, ph = l->ph, pw = l->pw;
    const __m512i even = even_lanes__avx512();
    int lo[ROWS_MAXKW], steps[ROWS_MAXKW];
    __mmask16 k[ROWS_MAXKW][ROW_MAXV], in0[ROWS_MAXKW][ROW_MAXV], in1[ROWS_MAXKW][ROW_MAXV];
    for (int kj = 0; kj < KW; kj++) {
        int hi;
        valid_range(kj, W, OW, SW, pw, &lo[kj], &hi);
        const int len = hi - lo[kj];
        steps[kj] = (len + 15) / 16;
        for (int o = 0, v = 0; o < len; o += 16, v++) {
            const int c = len - o >= 16 ? 16 : len - o;
            const uint32_t span = 2 * (uint32_t)c - 1, in = span >= 32 ? ~0u : (1u << span) - 1;
            k[kj][v] = (__mmask16)(c == 16 ? 0xffff : (1u << c) - 1);
            in0[kj][v] = (__mmask16)in;   /* at stride 2: inputs 2j of the 2c - 1 from the step's first */
            in1[kj][v] = (__mmask16)(in >> 16);
        }
    }
    __m512 p[ROWS_MAXKW * ROWS_MAXKW];
    for (int t = 0; t < KH * KW; t++) p[t] = _mm512_setzero_ps();
    for (int oh = 0; oh < OH; oh++)
#pragma GCC unroll 8
        for (int kj = 0; kj < KW; kj++)
            for (int v = 0; v < steps[kj]; v++) {
                const int o = 16 * v;
                const __m512 d = _mm512_maskz_loadu_ps(k[kj][v], dy + (size_t)oh * OW + lo[kj] + o);
#pragma GCC unroll 8
                for (int ki = 0; ki < KH; ki++) {
                    const int ih = oh * sh - ph + ki;
                    if (ih < 0 || ih >= H) continue;
                    const float *xr = x + (size_t)ih * W + lo[kj] * SW + kj - pw;
                    const __m512 xv = SW == 1 ? _mm512_maskz_loadu_ps(k[kj][v], xr + o)
                                              : _mm512_maskz_permutex2var_ps(
                                                    k[kj][v], _mm512_maskz_loadu_ps(in0[kj][v], xr + 2 * o), even,
                                                    _mm512_maskz_loadu_ps(in1[kj][v], xr + 2 * o + 16));
                    p[ki * KW + kj] = _mm512_add_ps(p[ki * KW + kj], _mm512_mul_ps(d, xv));
                }
            }
    for (int ki = 0; ki < KH; ki++)
        for (int kj = 0; kj < KW; kj++)
            if (steps[kj]) gw[ki * KW + kj] += dcz_vec_tree16__avx512(p[ki * KW + kj]);
}

/* dw_backward_plane__avx512's weight gradient, the window and stride as
 * constants where they are 3 x 3 at stride 1 or 2 across */
__attribute__((target("avx512f")))
static void dw_weight_grad__avx512(const dcz_tlayer *l, const float *x, const float *dy, float *gw)
{
    if (l->kh == 3 && l->kw == 3 && l->sw == 1) dw_weight_grad_body__avx512(l, x, dy, gw, 3, 3, 1);
    else if (l->kh == 3 && l->kw == 3 && l->sw == 2) dw_weight_grad_body__avx512(l, x, dy, gw, 3, 3, 2);
    else dw_weight_grad_body__avx512(l, x, dy, gw, l->kh, l->kw, l->sw);
}

/* dx (a plane), each pixel's taps in (ki, kj) order added to it
 * (dx_set), or to +0 (the plane's first channel: not read), gathered: a
 * vector of pixels takes tap kj from the output columns its lanes read (at
 * stride 2 every other lane, by a permute). KH, KW, SH and SW: the window
 * and strides, constants where the caller names them (3 x 3 at strides 1
 * or 2), so that the loops unroll and a row's output row is a shift, not
 * a division. */
__attribute__((target("avx512f"), always_inline))
static inline void dw_input_grad_body__avx512(const dcz_tlayer *l, const dw_masks *m, const float *w, const float *dy,
                                      float *dx, int dx_set, const int KH, const int KW, const int SH, const int SW)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, ph = l->ph;
    const __m512i half[2] = { _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0),
                              _mm512_set_epi32(8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0) };
    __m512 wv[ROWS_MAXKW * ROWS_MAXKW];
    for (int t = 0; t < KH * KW; t++) wv[t] = _mm512_set1_ps(w[t]);
    for (int ih = 0; ih < H; ih++) {
        float *xr = dx + (size_t)ih * W;
        for (int v = 0; v < (W + 15) / 16; v++) {
            __m512 acc = dx_set ? _mm512_maskz_loadu_ps(m->all[v], xr + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 8
            for (int ki = 0; ki < KH; ki++) {
                const int t = ih + ph - ki, oh = t / SH;
                if (t < 0 || t % SH || oh >= OH) continue;
                const float *dr = dy + (size_t)oh * OW;
#pragma GCC unroll 8
                for (int kj = 0; kj < KW; kj++) {
                    const __mmask16 k = m->pix[kj][v];
                    if (!k) continue;
                    __m512 g = _mm512_maskz_loadu_ps(m->ld[kj][v], dr + m->ow0[kj][v]);
                    if (SW == 2) g = _mm512_permutexvar_ps(half[m->odd[kj][v]], g);
                    acc = _mm512_mask_add_ps(acc, k, acc, _mm512_mul_ps(wv[ki * KW + kj], g));
                }
            }
            _mm512_mask_storeu_ps(xr + 16 * v, m->all[v], acc);
        }
    }
}

/* gw (dw_weight_grad__avx512), then dx when wanted (dw_input_grad_body__avx512) */
__attribute__((target("avx512f")))
static void dw_backward_plane__avx512(const dcz_tlayer *l, const dw_masks *m, const float *w, const float *x,
                                      const float *dy, float *gw, float *dx, int dx_set)
{
    dw_weight_grad__avx512(l, x, dy, gw);
    if (!dx) return;
    if (l->kh == 3 && l->kw == 3 && l->sh == 1 && l->sw == 1) dw_input_grad_body__avx512(l, m, w, dy, dx, dx_set, 3, 3, 1, 1);
    else if (l->kh == 3 && l->kw == 3 && l->sh == 2 && l->sw == 2)
        dw_input_grad_body__avx512(l, m, w, dy, dx, dx_set, 3, 3, 2, 2);
    else dw_input_grad_body__avx512(l, m, w, dy, dx, dx_set, l->kh, l->kw, l->sh, l->sw);
}

/* A depthwise convolution of multiplier 1 with the channels in the lanes:
 * a chunk of up to DWL_CH channels of a sample transposed to pixels of
 * DWL_CH floats (dcz_transpose_planes), each pixel's channels one or two
 * vectors, so that a tap is a vector of weights times a vector of
 * channels at any stride and on planes of any size, with no lane left
 * idle by a short row (the planes above fill 4 of 16 lanes over 4 x 4
 * planes, 7 over 7 x 7) and no mask. The same products and sums in the
 * same order as the planes (dw_forward_plane_ref), so the same bits:
 * forward, each output the bias, then its taps in (ki, kj) order; the
 * weight gradient, each tap's 16 partial sums, element j of a row's run
 * into sum j % 16 row by row, then the tree; the input gradient, each
 * pixel +0, then its taps in (ki, kj) order. lo[kj], hi[kj]: tap kj's
 * output columns that read inside a row (valid_range). */
typedef struct dwl_cols { int lo[DWL_MAXKW], hi[DWL_MAXKW]; } dwl_cols;

/* yT (OH OW pixels) of the chunk's nv vectors = bT + the taps of wT (kh kw
 * pixels) over xT (H W pixels); a vector of channels at a time, its
 * weights held in registers. KH, KW, SH and SW: the window and strides,
 * constants where the caller names them (3 x 3 at stride 1 or 2), so that
 * its loops unroll. */
__attribute__((target("avx512f"), always_inline))
static inline void dwl_forward_body__avx512(const dcz_tlayer *l, const dwl_cols *c, int nv, const float *wT, const float *bT,
                                    const float *xT, float *yT, const int KH, const int KW, const int SH,
                                    const int SW)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, ph = l->ph, pw = l->pw;
    for (int v = 0; v < nv; v++) {
        __m512 wv[DWL_MAXTAPS];
        for (int t = 0; t < KH * KW; t++) wv[t] = _mm512_loadu_ps(wT + (size_t)t * DWL_CH + 16 * v);
        const __m512 b = _mm512_loadu_ps(bT + 16 * v);
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                __m512 acc = b;
#pragma GCC unroll 8
                for (int ki = 0; ki < KH; ki++) {
                    const int ih = oh * SH - ph + ki;
                    if (ih < 0 || ih >= H) continue;
                    const float *xr = xT + (size_t)ih * W * DWL_CH + 16 * v;
#pragma GCC unroll 8
                    for (int kj = 0; kj < KW; kj++) {
                        if (ow < c->lo[kj] || ow >= c->hi[kj]) continue;
                        const __m512 x = _mm512_loadu_ps(xr + (size_t)(ow * SW - pw + kj) * DWL_CH);
                        acc = _mm512_add_ps(acc, _mm512_mul_ps(wv[ki * KW + kj], x));
                    }
                }
                _mm512_storeu_ps(yT + ((size_t)oh * OW + ow) * DWL_CH + 16 * v, acc);
            }
    }
}

__attribute__((target("avx512f")))
static void dwl_forward__avx512(const dcz_tlayer *l, const dwl_cols *c, int nv, const float *wT, const float *bT,
                                const float *xT, float *yT)
{
    if (l->kh == 3 && l->kw == 3 && l->sh == 1 && l->sw == 1) dwl_forward_body__avx512(l, c, nv, wT, bT, xT, yT, 3, 3, 1, 1);
    else if (l->kh == 3 && l->kw == 3 && l->sh == 2 && l->sw == 2)
        dwl_forward_body__avx512(l, c, nv, wT, bT, xT, yT, 3, 3, 2, 2);
    else dwl_forward_body__avx512(l, c, nv, wT, bT, xT, yT, l->kh, l->kw, l->sh, l->sw);
}

/* dxT (H W pixels) = each pixel's taps of wT dyT from +0, a vector of
 * channels at a time, its weights held in registers (KH, KW, SH and SW as
 * for dwl_forward_body__avx512; here a pixel's output row and column are
 * divisions by the strides, shifts where they are constants) */
__attribute__((target("avx512f"), always_inline))
static inline void dwl_input_grad_body__avx512(const dcz_tlayer *l, int nv, const float *wT, const float *dyT, float *dxT,
                                       const int KH, const int KW, const int SH, const int SW)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, ph = l->ph, pw = l->pw;
    for (int v = 0; v < nv; v++) {
        __m512 wv[DWL_MAXTAPS];
        for (int t = 0; t < KH * KW; t++) wv[t] = _mm512_loadu_ps(wT + (size_t)t * DWL_CH + 16 * v);
        for (int ih = 0; ih < H; ih++)
            for (int iw = 0; iw < W; iw++) {
                __m512 acc = _mm512_setzero_ps();
#pragma GCC unroll 8
                for (int ki = 0; ki < KH; ki++) {
                    const int t = ih + ph - ki;
                    if (t < 0 || t % SH || t / SH >= OH) continue;
                    const float *dr = dyT + (size_t)(t / SH) * OW * DWL_CH + 16 * v;
#pragma GCC unroll 8
                    for (int kj = 0; kj < KW; kj++) {
                        const int u = iw + pw - kj;
                        if (u < 0 || u % SW || u / SW >= OW) continue;
                        const __m512 g = _mm512_loadu_ps(dr + (size_t)(u / SW) * DWL_CH);
                        acc = _mm512_add_ps(acc, _mm512_mul_ps(wv[ki * KW + kj], g));
                    }
                }
                _mm512_storeu_ps(dxT + ((size_t)ih * W + iw) * DWL_CH + 16 * v, acc);
            }
    }
}

__attribute__((target("avx512f")))
static void dwl_input_grad__avx512(const dcz_tlayer *l, int nv, const float *wT, const float *dyT, float *dxT)
{
    if (l->kh == 3 && l->kw == 3 && l->sh == 1 && l->sw == 1) dwl_input_grad_body__avx512(l, nv, wT, dyT, dxT, 3, 3, 1, 1);
    else if (l->kh == 3 && l->kw == 3 && l->sh == 2 && l->sw == 2)
        dwl_input_grad_body__avx512(l, nv, wT, dyT, dxT, 3, 3, 2, 2);
    else dwl_input_grad_body__avx512(l, nv, wT, dyT, dxT, l->kh, l->kw, l->sh, l->sw);
}

/* gwT (kh kw pixels) += each tap's tree of partial sums of dyT xT; dxT
 * (H W pixels, when wanted) = each pixel's taps of wT dyT from +0 */
__attribute__((target("avx512f")))
static void dwl_backward__avx512(const dcz_tlayer *l, const dwl_cols *c, int nv, const float *wT, const float *xT,
                                 const float *dyT, float *gwT, float *dxT)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, kh = l->kh, kw = l->kw;
    const int sh = l->sh, sw = l->sw, ph = l->ph, pw = l->pw;
    for (int ki = 0; ki < kh; ki++)
        for (int kj = 0; kj < kw; kj++) {
            const int lo = c->lo[kj], hi = c->hi[kj];
            if (lo >= hi) continue;
            for (int v = 0; v < nv; v++) {
                __m512 p[16];
                for (int k = 0; k < 16; k++) p[k] = _mm512_setzero_ps();
                for (int oh = 0; oh < OH; oh++) {
                    const int ih = oh * sh - ph + ki;
                    if (ih < 0 || ih >= H) continue;
                    const float *dr = dyT + (size_t)oh * OW * DWL_CH + 16 * v;
                    const float *xr = xT + (size_t)ih * W * DWL_CH + 16 * v;
                    for (int o = lo; o < hi; o += 16) {
                        const int n = hi - o < 16 ? hi - o : 16;
#pragma GCC unroll 16
                        for (int k = 0; k < 16; k++)
                            if (k < n) {
                                const __m512 d = _mm512_loadu_ps(dr + (size_t)(o + k) * DWL_CH);
                                const __m512 xv = _mm512_loadu_ps(xr + (size_t)((o + k) * sw - pw + kj) * DWL_CH);
                                p[k] = _mm512_add_ps(p[k], _mm512_mul_ps(d, xv));
                            }
                    }
                }
                /* dcz_vec_tree16's halves, a channel a lane */
                for (int k = 0; k < 8; k++) p[k] = _mm512_add_ps(p[k], p[k + 8]);
                for (int k = 0; k < 4; k++) p[k] = _mm512_add_ps(p[k], p[k + 4]);
                const __m512 s = _mm512_add_ps(_mm512_add_ps(p[0], p[2]), _mm512_add_ps(p[1], p[3]));
                float *g = gwT + (size_t)(ki * kw + kj) * DWL_CH + 16 * v;
                _mm512_storeu_ps(g, _mm512_add_ps(_mm512_loadu_ps(g), s));
            }
        }
    if (dxT) dwl_input_grad__avx512(l, nv, wT, dyT, dxT);
}

#endif

/* Floats a part of a split loop moves at least. */
#define CONV_GRAIN_FLOATS 16384

/* Floats of a tile's columns and its part of y or dy: a tile has as many
 * output rows as keep its columns (all K rows) and out_c rows of its
 * product within this (at least one), and when they are a whole sample's,
 * as many samples. Small enough that they stay in the core's second-level
 * cache. */
#define CONV_TILE_FLOATS ((size_t)1 << 17)

/* Rows of the im2col columns: in_c kh kw (every group's together). */
static size_t col_rows(const dcz_tlayer *l)
{
    return (size_t)l->in_c * (size_t)l->kh * (size_t)l->kw;
}

/* Nonzero for a depthwise convolution (one input channel per group). */
static int depthwise(const dcz_tlayer *l)
{
    return dcz_tlayer_groups(l) > 1 && dcz_tlayer_groups(l) == l->in_c;
}

/* Output channels of a group. */
static size_t group_out(const dcz_tlayer *l)
{
    return (size_t)(l->out_c / dcz_tlayer_groups(l));
}

/* Rows a tile's columns count for in CONV_TILE_FLOATS: K and out_c. */
static size_t tile_height(const dcz_tlayer *l)
{
    return col_rows(l) + (size_t)l->out_c;
}

/* Output rows of a tile. */
static int tile_rows(const dcz_tlayer *l)
{
    size_t r = CONV_TILE_FLOATS / (tile_height(l) * (size_t)l->out_w);
    if (r < 1) r = 1;
    return r < (size_t)l->out_h ? (int)r : l->out_h;
}

/* Samples of a tile (at most; 1 unless a tile has every output row). */
static int tile_samples(const dcz_tlayer *l)
{
    if (tile_rows(l) < l->out_h) return 1;
    size_t s = CONV_TILE_FLOATS / (tile_height(l) * (size_t)l->out_h * (size_t)l->out_w);
    return s < 1 ? 1 : s > 4096 ? 4096 : (int)s;
}

/* Columns of a tile (at most). */
static size_t tile_cols(const dcz_tlayer *l)
{
    return (size_t)tile_samples(l) * (size_t)tile_rows(l) * (size_t)l->out_w;
}

/* Floats between rows of a tile's columns, their gradient and its part of
 * y or dy: the columns rounded up as dcz_gemm_f32 reads B's rows. */
static size_t tile_ld(const dcz_tlayer *l)
{
    return dcz_gemm_ldb(tile_cols(l));
}

/* One thread's scratch, in floats from its start (slot_floats in all):
 *   cols   (K, ld)        a tile's columns
 *   dcols  (K, ld)        their gradient (backward)
 *   yt     (out_c, ld)    its part of y (forward, tiles of several
 *                         samples) or of dy (backward)
 *   dyT    (ld, ldT)      that part of dy transposed (backward), ldT =
 *                         out_c rounded up as yt's rows are, then
 *                         DCZ_GEMM_PAD floats that a product may read past
 *                         its last row
 *   gwt    (K, out_c/G)   the slot's rows of gW transposed, summed over
 *                         the tiles (backward)
 *   gtmp   (K, out_c/G)   one tile's part of them */
typedef struct slot_map {
    size_t dcols, yt, dyT, gwt, gtmp, floats;
} slot_map;

/* n floats rounded up to whole cache lines: every block of the scratch
 * starts on a line, as net->work does, so that the products' rows of B
 * (ld floats apart, ld a multiple of 16) do too; rows 4 bytes off a line
 * took a load across two lines for every vector. */
static size_t lines(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

static slot_map slot_of(const dcz_tlayer *l)
{
    const size_t K = col_rows(l), ld = tile_ld(l), C = (size_t)l->out_c;
    slot_map m;
    m.dcols = K * ld;
    m.yt = m.dcols + K * ld;
    m.dyT = m.yt + C * ld;
    m.gwt = m.dyT + ld * dcz_gemm_ldb(C) + DCZ_GEMM_PAD;
    m.gtmp = lines(m.gwt + K * group_out(l));
    m.floats = lines(m.gtmp + K * group_out(l));
    return m;
}

static size_t slot_floats(const dcz_tlayer *l)
{
    return slot_of(l).floats;
}

/* Floats of W transposed per group, (K, out_c/G), which the slots of a
 * backward pass share: the first block of the scratch. */
static size_t shared_floats(const dcz_tlayer *l)
{
    return lines(col_rows(l) * group_out(l));
}

/* Whether the layer's forward pass and input gradient go by Winograd's
 * transforms (wino.c) on this machine. */
static int wino_runs(const dcz_tlayer *l)
{
    return dcz_wino_fits(l) && dcz_wino_vector();
}

/* ---- the lane form's passes (dwl_forward__avx512) ----
 * Floats of one slot's scratch, from its start: for a chunk, xT (H W
 * pixels of DWL_CH floats), yT or dyT (OH OW pixels), dxT (H W pixels);
 * for every chunk a slot may take (of all the channels, at most), wT and
 * gwT (kh kw pixels each), then bT (DWL_CH). */
static size_t dwl_slot_floats(const dcz_tlayer *l)
{
    const size_t hw = (size_t)l->in_h * l->in_w, ohw = (size_t)l->out_h * l->out_w, taps = (size_t)l->kh * l->kw;
    const size_t chunks = ((size_t)l->in_c + DWL_CH - 1) / DWL_CH;
    return lines(DWL_CH * (2 * hw + ohw) + chunks * DWL_CH * (2 * taps + 1));
}

/* Whether l's passes go by the lane form on this machine: a multiplier
 * of 1, a window within its bounds, AVX-512, and input rows that fill
 * less than half the lanes of the planes' vectors (rows of 7 or 4 of 16,
 * and outputs as short, where the planes' vectors idle; from rows of 14
 * on, the transposes cost more than the planes lose: bench/cpu-profile.md,
 * "The trainer's depthwise passes"). */
static int dwl_fits(const dcz_tlayer *l)
{
#if defined(__x86_64__)
    const int vec = (l->in_w + 15) / 16 * 16;
    return l->out_c == l->in_c && l->kw <= DWL_MAXKW && l->kh * l->kw <= DWL_MAXTAPS && 2 * l->in_w < vec &&
           __builtin_cpu_supports("avx512f");
#else
    (void)l;
    return 0;
#endif
}

/* The scratch net->work holds: W transposed per group (shared_floats),
 * then one slot per thread; or, where Winograd's passes run, their U and
 * slots (dcz_wino_work_floats), whichever is larger; for a depthwise
 * layer, the lane form's slots, one per thread, where it runs (dwl_fits). */
size_t dcz_conv_work_floats(const dcz_tlayer *l)
{
    if (depthwise(l)) return dwl_fits(l) ? (size_t)dcz_train_threads() * dwl_slot_floats(l) : 0;
    const size_t im2col = (size_t)dcz_train_threads() * slot_floats(l) + shared_floats(l);
    if (!wino_runs(l)) return im2col;
    const size_t wino = dcz_wino_work_floats(l);
    return wino > im2col ? wino : im2col;
}


/* A depthwise convolution's planes, one (sample, output channel) a call:
 * the references of the AVX-512 planes above, whose bits they define.
 * Forward: y = b, then each tap (ki, kj) in turn adds w x to the outputs
 * that read inside x. Backward: the weight of tap t gets, in gw[t], the
 * tree (dcz_vec_tree16) of 16 partial sums of dy x over the outputs that
 * read through it, row by row, element j of a row's run into sum j % 16;
 * each pixel of dx (when wanted) gets its taps' w dy in (ki, kj) order. */
static void dw_forward_plane_ref(const dcz_tlayer *l, const float *w, float b, const float *x, float *y)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, sw = l->sw;
    for (size_t i = 0; i < (size_t)OH * OW; i++) y[i] = b;
    for (int ki = 0; ki < l->kh; ki++)
        for (int kj = 0; kj < l->kw; kj++) {
            int lo, hi;
            valid_range(kj, W, OW, sw, l->pw, &lo, &hi);
            const float wt = w[ki * l->kw + kj];
            for (int oh = 0; oh < OH; oh++) {
                const int ih = oh * l->sh - l->ph + ki;
                if (ih < 0 || ih >= H) continue;
                const float *xr = x + (size_t)ih * W + kj - l->pw;
                float *yr = y + (size_t)oh * OW;
                for (int ow = lo; ow < hi; ow++) yr[ow] += wt * xr[ow * sw];
            }
        }
}

static void dw_backward_plane_ref(const dcz_tlayer *l, const float *w, const float *x, const float *dy,
                                  float *gw, float *dx)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, sw = l->sw;
    for (int ki = 0; ki < l->kh; ki++)
        for (int kj = 0; kj < l->kw; kj++) {
            int lo, hi;
            valid_range(kj, W, OW, sw, l->pw, &lo, &hi);
            if (lo >= hi) continue;
            const float wt = w[ki * l->kw + kj];
            float p[16] = { 0 };
            for (int oh = 0; oh < OH; oh++) {
                const int ih = oh * l->sh - l->ph + ki;
                if (ih < 0 || ih >= H) continue;
                const float *xr = x + (size_t)ih * W + kj - l->pw, *dr = dy + (size_t)oh * OW;
                for (int ow = lo; ow < hi; ow++) p[(ow - lo) % 16] += dr[ow] * xr[ow * sw];
                if (dx) {
                    float *xg = dx + (size_t)ih * W + kj - l->pw;
                    for (int ow = lo; ow < hi; ow++) xg[ow * sw] += wt * dr[ow];
                }
            }
            gw[ki * l->kw + kj] += dcz_vec_tree16(p);
        }
}

typedef struct dw_job {
    const dcz_tlayer *l;
    int batch, ref;        /* ref: the reference planes, never the vectors */
    const float *x, *dy;   /* forward input, output gradient */
    float *y, *dx;         /* what the pass writes */
    float *work;           /* the lane form's scratch (dwl_slots_run) */
    size_t slots;          /* the lane form's slots, the channels cut in */
} dw_job;

#if defined(__x86_64__)
/* Whether j's planes run in AVX-512 vectors (their masks made in m), or
 * by the reference planes: the one choice of both passes. */
static int dw_vectors(const dw_job *j, dw_masks *m)
{
    return !j->ref && __builtin_cpu_supports("avx512f") && dw_masks_make(j->l, m);
}
#endif

/* Input channels a part of the pool takes at least: about 2^15 taps' worth
 * of output cells (a channel of a sample of the MobileNetV2-style preset's
 * first block is 9 x 784). */
static size_t depthwise_grain(const dcz_tlayer *l, int batch)
{
    const size_t per = (size_t)batch * (size_t)(l->out_c / l->in_c) * (size_t)l->kh * (size_t)l->kw *
                       (size_t)l->out_h * (size_t)l->out_w;
    return per >= 32768 ? 1 : (32768 + per - 1) / per;
}

/* Input channels [c0, c1) of every sample in turn, then the output
 * channels reading each (m = out_c / in_c of them), a plane at a time: a
 * part touches only its own outputs, weights and input gradients, each in
 * the order one part of all the channels gives, so the same bits for any
 * split. Samples outermost, so that a part reads and writes each sample's
 * channels as one run of memory, which the prefetchers follow, where
 * channels outermost jumped a whole sample from plane to plane. */
static void depthwise_forward_part(void *ctx, size_t c0, size_t c1)
{
    const dw_job *j = ctx;
    const dcz_tlayer *l = j->l;
    const size_t ohw = (size_t)l->out_h * l->out_w, m = (size_t)(l->out_c / l->in_c);
    const size_t taps = (size_t)l->kh * (size_t)l->kw, hw = (size_t)l->in_h * l->in_w;
#if defined(__x86_64__)
    dw_masks mk;
    const int vec = dw_vectors(j, &mk);
#endif
    for (size_t n = 0; n < (size_t)j->batch; n++)
        for (size_t ic = c0; ic < c1; ic++)
            for (size_t oc = ic * m; oc < (ic + 1) * m; oc++) {
                const float *x = j->x + (n * (size_t)l->in_c + ic) * hw;
                float *y = j->y + (n * (size_t)l->out_c + oc) * ohw;
#if defined(__x86_64__)
                if (vec) {
                    dw_forward_plane__avx512(l, &mk, l->w + oc * taps, l->b[oc], x, y);
                    continue;
                }
#endif
                dw_forward_plane_ref(l, l->w + oc * taps, l->b[oc], x, y);
            }
}

#if defined(__x86_64__)
/* Slots [k0, k1) of j, each its part of the channels in chunks of
 * DWL_CH: every chunk's weights (and bias) made pixels, then sample by
 * sample each chunk's input (and output gradient) transposed in, the
 * pass, its result transposed out; backward, the chunks' gW (and gb)
 * summed over the samples in order, then written. Samples outermost, as
 * the planes go (depthwise_forward_part). */
static void dwl_slots_run(const dw_job *j, size_t k0, size_t k1, int backward)
{
    const dcz_tlayer *l = j->l;
    const size_t C = (size_t)l->in_c, hw = (size_t)l->in_h * l->in_w, ohw = (size_t)l->out_h * l->out_w;
    const size_t taps = (size_t)l->kh * l->kw, per = DWL_CH * taps, slot = dwl_slot_floats(l);
    dwl_cols cols;
    for (int kj = 0; kj < l->kw; kj++) valid_range(kj, l->in_w, l->out_w, l->sw, l->pw, &cols.lo[kj], &cols.hi[kj]);
    for (size_t k = k0; k < k1; k++) {
        const size_t cs = C * k / j->slots, ce = C * (k + 1) / j->slots, chunks = (ce - cs + DWL_CH - 1) / DWL_CH;
        float *xT = j->work + k * slot, *yT = xT + DWL_CH * hw, *dxT = yT + DWL_CH * ohw;
        float *wT = dxT + DWL_CH * hw, *gwT = wT + chunks * per, *bT = gwT + chunks * per;
        /* the lanes past a partial chunk's channels: zero weights */
        memset(wT, 0, chunks * (2 * per + DWL_CH) * sizeof *wT);
        for (size_t q = 0, c0 = cs; c0 < ce; q++, c0 += DWL_CH) {
            const size_t nc = ce - c0 < DWL_CH ? ce - c0 : DWL_CH;
            dcz_transpose_planes(l->w + c0 * taps, taps, nc, taps, wT + q * per, DWL_CH);
            if (!backward) memcpy(bT + q * DWL_CH, l->b + c0, nc * sizeof *bT);
        }
        if (backward) plane_sums(j->dy, j->batch, C * ohw, ohw, cs, ce, l->gb);
        for (size_t n = 0; n < (size_t)j->batch; n++)
            for (size_t q = 0, c0 = cs; c0 < ce; q++, c0 += DWL_CH) {
                const size_t nc = ce - c0 < DWL_CH ? ce - c0 : DWL_CH;
                const int nv = (int)(nc + 15) / 16;
                if (nc % 16)   /* the last vector's lanes past nc: zeros, not another chunk's */
                    memset(xT, 0, DWL_CH * (2 * hw + ohw) * sizeof *xT);
                dcz_transpose_planes(j->x + (n * C + c0) * hw, hw, nc, hw, xT, DWL_CH);
                if (!backward) {
                    dwl_forward__avx512(l, &cols, nv, wT + q * per, bT + q * DWL_CH, xT, yT);
                    dcz_transpose_planes(yT, DWL_CH, ohw, nc, j->y + (n * C + c0) * ohw, ohw);
                    continue;
                }
                dcz_transpose_planes(j->dy + (n * C + c0) * ohw, ohw, nc, ohw, yT, DWL_CH);
                dwl_backward__avx512(l, &cols, nv, wT + q * per, xT, yT, gwT + q * per, j->dx ? dxT : NULL);
                if (j->dx) dcz_transpose_planes(dxT, DWL_CH, hw, nc, j->dx + (n * C + c0) * hw, hw);
            }
        if (backward)
            for (size_t q = 0, c0 = cs; c0 < ce; q++, c0 += DWL_CH) {
                const size_t nc = ce - c0 < DWL_CH ? ce - c0 : DWL_CH;
                dcz_transpose_planes(gwT + q * per, DWL_CH, taps, nc, l->gw + c0 * taps, taps);
            }
    }
}

static void dwl_forward_slots(void *ctx, size_t k0, size_t k1)
{
    dwl_slots_run(ctx, k0, k1, 0);
}

static void dwl_backward_slots(void *ctx, size_t k0, size_t k1)
{
    dwl_slots_run(ctx, k0, k1, 1);
}
#endif

/* j's pass (backward or not) by the lane form, in work_floats of scratch,
 * over as many slots as fit, threads and channels allow: 1, or 0 (nothing
 * done) where the planes take it (or, with ref, the reference planes).
 * The one choice of both passes between the lane form and the planes. */
static int dwl_run(dw_job *j, size_t work_floats, int backward)
{
#if defined(__x86_64__)
    const dcz_tlayer *l = j->l;
    if (j->ref || !j->work || !dwl_fits(l)) return 0;
    size_t n = work_floats / dwl_slot_floats(l), t = (size_t)dcz_train_threads();
    if (n > t) n = t;
    j->slots = n < (size_t)l->in_c ? n : (size_t)l->in_c;
    if (!j->slots) return 0;
    dcz_train_par(j->slots, 1, backward ? dwl_backward_slots : dwl_forward_slots, j);
    return 1;
#else
    (void)j, (void)work_floats, (void)backward;
    return 0;
#endif
}

static void depthwise_forward(const dcz_tlayer *l, const float *x, float *y, int batch, int ref, float *work,
                              size_t work_floats)
{
    dw_job j = { .l = l, .batch = batch, .ref = ref, .x = x, .y = y, .work = work };
    if (dwl_run(&j, work_floats, 0)) return;
    dcz_train_par((size_t)l->in_c, depthwise_grain(l, batch), depthwise_forward_part, &j);
}

/* channels [c0, c1) as above: their weights' and biases' gradients, their
 * input gradient */
static void depthwise_backward_part(void *ctx, size_t c0, size_t c1)
{
    const dw_job *j = ctx;
    const dcz_tlayer *l = j->l;
    const size_t ohw = (size_t)l->out_h * l->out_w, m = (size_t)(l->out_c / l->in_c);
    const size_t taps = (size_t)l->kh * (size_t)l->kw, hw = (size_t)l->in_h * l->in_w;
    memset(l->gw + c0 * m * taps, 0, (c1 - c0) * m * taps * sizeof *l->gw);
    plane_sums(j->dy, j->batch, l->out, ohw, c0 * m, c1 * m, l->gb);
#if defined(__x86_64__)
    dw_masks mk;
    const int vec = dw_vectors(j, &mk);
#else
    const int vec = 0;
#endif
    /* the vectors write each input gradient's plane from its first channel
     * on, never reading it first: cleared, a layer's dx (megabytes) left
     * the cache before they came back to it */
    if (j->dx && !vec)
        for (size_t n = 0; n < (size_t)j->batch; n++)
            memset(j->dx + (n * (size_t)l->in_c + c0) * hw, 0, (c1 - c0) * hw * sizeof *j->dx);
    for (size_t n = 0; n < (size_t)j->batch; n++)
        for (size_t ic = c0; ic < c1; ic++)
            for (size_t oc = ic * m; oc < (ic + 1) * m; oc++) {
                const float *x = j->x + (n * (size_t)l->in_c + ic) * hw, *dy = j->dy + (n * (size_t)l->out_c + oc) * ohw;
                float *dx = j->dx ? j->dx + (n * (size_t)l->in_c + ic) * hw : NULL;
#if defined(__x86_64__)
                if (vec) {
                    dw_backward_plane__avx512(l, &mk, l->w + oc * taps, x, dy, l->gw + oc * taps, dx, oc > ic * m);
                    continue;
                }
#endif
                dw_backward_plane_ref(l, l->w + oc * taps, x, dy, l->gw + oc * taps, dx);
            }
}

static void depthwise_backward(dcz_tlayer *l, const float *x, const float *dy, float *dx, int batch, int ref,
                               float *work, size_t work_floats)
{
    dw_job j = { .l = l, .batch = batch, .ref = ref, .x = x, .dy = dy, .dx = dx, .work = work };
    if (dwl_run(&j, work_floats, 1)) return;
    dcz_train_par((size_t)l->in_c, depthwise_grain(l, batch), depthwise_backward_part, &j);
}

void dcz_depthwise_forward_ref(const dcz_tlayer *l, const float *x, float *y, int batch)
{
    depthwise_forward(l, x, y, batch, 1, NULL, 0);
}

void dcz_depthwise_backward_ref(dcz_tlayer *l, const float *x, const float *dy, float *dx, int batch)
{
    depthwise_backward(l, x, dy, dx, batch, 1, NULL, 0);
}


/* A tile: output rows [oh0, oh0 + nr) of samples [n0, n0 + ns) (ns > 1
 * only with every row); its columns are T = ns nr OW wide, sample n0 + i's
 * from i nr OW on. */
typedef struct tile {
    int n0, ns, oh0, nr;
    size_t T;
} tile;

/* Tiles of a batch. */
static size_t tiles_of(const dcz_tlayer *l, int batch)
{
    const int R = tile_rows(l), S = tile_samples(l);
    return R < l->out_h ? (size_t)batch * (size_t)((l->out_h + R - 1) / R)
                        : (size_t)((batch + S - 1) / S);
}

/* Tile t of a batch. */
static tile tile_of(const dcz_tlayer *l, size_t t, int batch)
{
    const int R = tile_rows(l), S = tile_samples(l), per = (l->out_h + R - 1) / R;
    tile b;
    if (R < l->out_h) {
        b.n0 = (int)(t / (size_t)per);
        b.ns = 1;
        b.oh0 = (int)(t % (size_t)per) * R;
        b.nr = l->out_h - b.oh0 < R ? l->out_h - b.oh0 : R;
    } else {
        b.n0 = (int)t * S;
        b.ns = batch - b.n0 < S ? batch - b.n0 : S;
        b.oh0 = 0;
        b.nr = l->out_h;
    }
    b.T = (size_t)b.ns * (size_t)b.nr * (size_t)l->out_w;
    return b;
}

/* Whether im2col and its adjoint run by the AVX-512 plane kernels above
 * (this CPU has AVX-512, the layer's column stride is 1 or 2). */
#if defined(__x86_64__)
static int planes_vec(const dcz_tlayer *l) { return l->sw <= 2 && __builtin_cpu_supports("avx512f"); }
#endif

#if defined(__x86_64__)
/* The masks of the rows of the columns of each kernel column kj, mk[kj]
 * (a row's masks depend on its kernel column only, so im2col and its
 * adjoint make them once a call, not once a row of the columns: the
 * ResNet-style preset's training, alternated runs at 2 threads, 6.36 ->
 * 6.20 s an epoch's fifth); 0 for kernels wider than ROWS_MAXKW or rows
 * wider than ROW_MAXV vectors. */
static int kernel_masks(const dcz_tlayer *l, row_masks *mk)
{
    if (l->kw > ROWS_MAXKW) return 0;
    for (int kj = 0; kj < l->kw; kj++) {
        int lo, hi;
        valid_range(kj, l->in_w, l->out_w, l->sw, l->pw, &lo, &hi);
        if (!row_masks_make(&mk[kj], l->sw, lo, hi, l->out_w)) return 0;
    }
    return 1;
}
#endif

/* Rows [r0, r1) of the columns of output rows [oh0, oh0 + nr) of one
 * sample, row r at cols + (r - r0) ld, from xn, the sample's input
 * (C, H, W). */
static void im2col_rows(const dcz_tlayer *l, const float *xn, size_t r0, size_t r1, int oh0,
                        int nr, float *cols, size_t ld)
{
    const int H = l->in_h, W = l->in_w, OW = l->out_w;
    const int kh = l->kh, kw = l->kw, sh = l->sh, sw = l->sw, ph = l->ph, pw = l->pw;
    const size_t hw = (size_t)H * W;
#if defined(__x86_64__)
    const int vec = planes_vec(l);
    row_masks mk[ROWS_MAXKW];
    const int masked = vec && kernel_masks(l, mk);
#endif
    for (size_t r = r0; r < r1; r++) {
        const int c = (int)(r / (size_t)(kh * kw)), ki = (int)(r / (size_t)kw % (size_t)kh);
        const int kj = (int)(r % (size_t)kw), off = kj - pw;
        const float *xp = xn + (size_t)c * hw;   /* (H, W) */
        float *d = cols + (r - r0) * ld;
#if defined(__x86_64__)
        if (masked) {
            im2col_masked__avx512(d, xp, oh0 * sh - ph + ki, sh, H, W, off, sw, &mk[kj], nr, OW);
            continue;
        }
#endif
        int lo, hi;
        valid_range(kj, W, OW, sw, pw, &lo, &hi);
#if defined(__x86_64__)
        if (vec) {
            im2col_plane__avx512(d, xp, oh0 * sh - ph + ki, sh, H, W, off, sw, lo, hi, nr, OW);
            continue;
        }
#endif
        for (int oh = oh0; oh < oh0 + nr; oh++, d += OW) {
            int ih = oh * sh - ph + ki;
            if (ih < 0 || ih >= H) {
                memset(d, 0, (size_t)OW * sizeof(float));
                continue;
            }
            /* input column of ow is off + ow*sw, >= 0 from lo on */
            const float *xr = xp + (size_t)ih * W;
            for (int ow = 0; ow < lo; ow++) d[ow] = 0.0f;
            if (sw == 1)   /* libc's copy: faster than dcz_vcopy on rows this short */
                memcpy(d + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(float));
            else
                for (int ow = lo; ow < hi; ow++) d[ow] = xr[ow * sw + off];
            for (int ow = hi; ow < OW; ow++) d[ow] = 0.0f;
        }
    }
}

/* The adjoint of im2col_rows for input channels [c0, c1): each entry of
 * the columns of output rows [oh0, oh0 + nr) of one sample (channel c's kh
 * kw rows from cols + (c - c0) kh kw ld, ld apart) added back to the pixel
 * of dxn (C, H, W) it was read from. */
static void col2im_channels(const dcz_tlayer *l, const float *cols, size_t ld, int c0, int c1,
                            int oh0, int nr, float *dxn)
{
    const int H = l->in_h, W = l->in_w, OW = l->out_w;
    const int kh = l->kh, kw = l->kw, sh = l->sh, sw = l->sw, ph = l->ph, pw = l->pw;
    const size_t hw = (size_t)H * W;
#if defined(__x86_64__)
    const int vec = planes_vec(l);
    row_masks mk[ROWS_MAXKW];
    const int masked = vec && kernel_masks(l, mk);
#endif
    for (int c = c0; c < c1; c++) {
        const float *dc = cols + (size_t)(c - c0) * (size_t)(kh * kw) * ld;
        float *xp = dxn + (size_t)c * hw;
#if defined(__x86_64__)
        if (vec && sw == 1 && col2im_channel__avx512(l, dc, oh0, nr, ld, xp)) continue;
#endif
        for (int ki = 0; ki < kh; ki++)
            for (int kj = 0, off = -pw; kj < kw; kj++, off++) {
                const float *d = dc + (size_t)(ki * kw + kj) * ld;
#if defined(__x86_64__)
                if (masked) {
                    col2im_masked__avx512(d, xp, oh0 * sh - ph + ki, sh, H, W, off, sw, &mk[kj], nr,
                                          OW);
                    continue;
                }
#endif
                int lo, hi;
                valid_range(kj, W, OW, sw, pw, &lo, &hi);
#if defined(__x86_64__)
                if (vec) {
                    col2im_plane__avx512(d, xp, oh0 * sh - ph + ki, sh, H, W, off, sw, lo, hi, nr, OW);
                    continue;
                }
#endif
                for (int oh = oh0; oh < oh0 + nr; oh++, d += OW) {
                    int ih = oh * sh - ph + ki;
                    if (ih < 0 || ih >= H) continue;
                    float *xr = xp + (size_t)ih * W;
                    if (sw == 1)
                        dcz_vadd(xr + lo + off, d + lo, (size_t)(hi - lo));
                    else
                        for (int ow = lo; ow < hi; ow++) xr[ow * sw + off] += d[ow];
                }
            }
    }
}

/* Whether each pixel of the input is one entry of the columns, its own
 * output pixel's: a 1 x 1 window at stride 1 without padding. */
static int pointwise(const dcz_tlayer *l)
{
    return l->kh == 1 && l->kw == 1 && l->sh == 1 && l->sw == 1 && l->ph == 0 && l->pw == 0;
}

/* col2im_tile of a pointwise layer (each pixel its one entry) into dx that
 * nothing before has written: each channel's rows, each entry added to
 * +0 as it is written (v 1 + 0, by the vector table: v 1 is v), so the
 * bits col2im gives adding it to a zeroed dx (+0 + v is v but for v = -0,
 * which a product whose fused multiply-adds underflow can give). */
static void dx_copy_tile(const dcz_tlayer *l, const float *cols, size_t ld, int c0, int c1, tile b, float *dx)
{
    const size_t per = (size_t)b.nr * (size_t)l->out_w, hw = (size_t)l->in_h * l->in_w;
    for (int i = 0; i < b.ns; i++)
        for (int c = c0; c < c1; c++) {
            float *d = dx + (size_t)(b.n0 + i) * l->in + (size_t)c * hw + (size_t)b.oh0 * l->in_w;
            const float *s = cols + (size_t)(c - c0) * ld + (size_t)i * per;
            dcz_vaffine(d, s, 1.0f, 0.0f, per);
        }
}

/* Rows [r0, r1) of tile b's columns, cols (r1 - r0, b.T) with rows ld
 * apart, from x (batch, C, H, W). */
static void im2col_tile(const dcz_tlayer *l, const float *x, size_t r0, size_t r1, tile b,
                        float *cols, size_t ld)
{
    const size_t per = (size_t)b.nr * (size_t)l->out_w;
    for (int i = 0; i < b.ns; i++)
        im2col_rows(l, x + (size_t)(b.n0 + i) * l->in, r0, r1, b.oh0, b.nr, cols + i * per, ld);
}

/* The adjoint of im2col_tile for the rows of input channels [c0, c1), into
 * dx (batch, C, H, W). */
static void col2im_tile(const dcz_tlayer *l, const float *cols, size_t ld, int c0, int c1, tile b,
                        float *dx)
{
    const size_t per = (size_t)b.nr * (size_t)l->out_w;
    for (int i = 0; i < b.ns; i++)
        col2im_channels(l, cols + i * per, ld, c0, c1, b.oh0, b.nr, dx + (size_t)(b.n0 + i) * l->in);
}

/* Tile b's part of y or dy is out_c rows of b.T, sample n0 + i's from
 * column i nr OW on: where, in the activations (batch, out_c, OH, OW),
 * sample n0 + i's piece of row c is. */
static size_t part_offset(const dcz_tlayer *l, tile b, int i, int c)
{
    return (size_t)(b.n0 + i) * l->out + (size_t)c * l->out_h * l->out_w + (size_t)b.oh0 * l->out_w;
}

/* Tile b's part p (rows ld apart) from the activations a. */
static void part_gather(const dcz_tlayer *l, tile b, const float *a, float *p, size_t ld)
{
    const size_t per = (size_t)b.nr * (size_t)l->out_w;
    for (int i = 0; i < b.ns; i++)
        for (int c = 0; c < l->out_c; c++)
            memcpy(p + (size_t)c * ld + (size_t)i * per, a + part_offset(l, b, i, c), per * sizeof(float));
}

/* Tile b's part p (rows ld apart) into the activations a. */
static void part_scatter(const dcz_tlayer *l, tile b, const float *p, size_t ld, float *a)
{
    const size_t per = (size_t)b.nr * (size_t)l->out_w;
    for (int i = 0; i < b.ns; i++)
        for (int c = 0; c < l->out_c; c++)
            memcpy(a + part_offset(l, b, i, c), p + (size_t)c * ld + (size_t)i * per, per * sizeof(float));
}

/* A pass over the tiles of a batch, in slots: each slot one part of the
 * work with its own scratch (slot floats of work). */
typedef struct tile_job {
    const dcz_tlayer *l;
    const float *x, *dy;
    float *y, *dx;
    float *work;
    float *wt;        /* W transposed per group (backward), before the slots */
    size_t slot;      /* floats of a slot's scratch */
    size_t slots;     /* parts the work is cut in */
    size_t units;     /* forward: tiles; backward: rows or input channels */
    int batch;
} tile_job;

/* Slots the work is cut in: one per thread, at most one per unit, and no
 * more than the scratch holds (net->work is sized for the thread count at
 * dcz_net_reserve; a later, larger count uses fewer). */
static size_t slots_for(const dcz_tlayer *l, size_t units, size_t work_floats)
{
    const size_t shared = shared_floats(l);
    size_t s = work_floats > shared ? (work_floats - shared) / slot_floats(l) : 0;
    size_t t = (size_t)dcz_train_threads();
    if (s > t) s = t;
    if (s > units) s = units;
    return s ? s : 1;
}

/* Units [*u0, *u1) of slot k. */
static void slot_units(const tile_job *j, size_t k, size_t *u0, size_t *u1)
{
    *u0 = j->units * k / j->slots;
    *u1 = j->units * (k + 1) / j->slots;
}

/* Slot k's scratch. */
static float *slot_base(const tile_job *j, size_t k)
{
    return j->work + shared_floats(j->l) + k * j->slot;
}

/* Forward, slots [k0, k1): the tiles of a slot in turn, each its columns,
 * then y's part = b + W cols, one product per group: in place for a tile
 * of one sample (its rows of y are OH*OW apart), else into the scratch yt
 * and copied out. */
static void forward_slots(void *ctx, size_t k0, size_t k1)
{
    const tile_job *j = ctx;
    const dcz_tlayer *l = j->l;
    const size_t K = col_rows(l), og = group_out(l);
    const int G = dcz_tlayer_groups(l);
    const size_t kg = K / (size_t)G, ld = tile_ld(l), ohw = (size_t)l->out_h * l->out_w;
    const slot_map m = slot_of(l);
    for (size_t k = k0; k < k1; k++) {
        float *cols = slot_base(j, k), *yt = cols + m.yt;
        size_t t0, t1;
        slot_units(j, k, &t0, &t1);
        for (size_t t = t0; t < t1; t++) {
            const tile b = tile_of(l, t, j->batch);
            im2col_tile(l, j->x, 0, K, b, cols, ld);
            float *out = b.ns == 1 ? j->y + part_offset(l, b, 0, 0) : yt;
            const size_t ldo = b.ns == 1 ? ohw : ld;
            for (int g = 0; g < G; g++)   /* out_g (og, T) = b_g + W_g (og, Kg) cols_g (Kg, T) */
                dcz_gemm_f32(og, b.T, (uint32_t)kg, l->w + (size_t)g * og * kg, kg, cols + (size_t)g * kg * ld,
                             ld, l->b + (size_t)g * og, NULL, out + (size_t)g * og * ldo, ldo);
            if (b.ns > 1) part_scatter(l, b, yt, ld, j->y);
        }
    }
}

void dcz_conv_forward(const dcz_tlayer *l, const float *x, float *y, int batch, float *work,
                      size_t work_floats)
{
    if (depthwise(l)) {
        depthwise_forward(l, x, y, batch, 0, work, work_floats);
        return;
    }
    if (wino_runs(l) && dcz_wino_forward(l, x, y, batch, work, work_floats)) return;
    tile_job j = { .l = l, .x = x, .y = y, .work = work, .slot = slot_floats(l),
                   .units = tiles_of(l, batch), .batch = batch };
    j.slots = slots_for(l, j.units, work_floats);
    dcz_train_par(j.slots, 1, forward_slots, &j);
}

/* Backward, slots [k0, k1): slot k owns rows [r0, r1) of the columns
 * (whole input channels when dx is wanted) and, for every tile in turn,
 * gathers dY (dy's part) into yt and transposed into dyT, builds its rows
 * of the columns, adds their part of gW^T = cols dY^T to gwt, and computes
 * their gradient dcols = W^T dY and adds it back into its channels of dx
 * (a pointwise layer's, one entry a pixel, written, not added:
 * dx_copy_tile).
 * Its rows of gW are gwt transposed. */
static void backward_slots(void *ctx, size_t k0, size_t k1)
{
    const tile_job *j = ctx;
    const dcz_tlayer *l = j->l;
    const size_t K = col_rows(l), og = group_out(l), kg = K / (size_t)dcz_tlayer_groups(l);
    const size_t ld = tile_ld(l), C = (size_t)l->out_c, ldT = dcz_gemm_ldb(C);
    const size_t per_unit = j->dx ? (size_t)l->kh * (size_t)l->kw : 1;
    const size_t hw = (size_t)l->in_h * l->in_w;
    const slot_map m = slot_of(l);
    const int copy = pointwise(l);   /* dx written by copies, not added to zeros */
    for (size_t k = k0; k < k1; k++) {
        float *cols = slot_base(j, k), *dcols = cols + m.dcols, *dyt = cols + m.yt;
        float *dyT = cols + m.dyT, *gwt = cols + m.gwt, *gtmp = cols + m.gtmp;
        size_t u0, u1;
        slot_units(j, k, &u0, &u1);
        const size_t r0 = u0 * per_unit, r1 = u1 * per_unit;
        memset(gwt, 0, (r1 - r0) * og * sizeof *gwt);
        if (j->dx && !copy)
            for (int n = 0; n < j->batch; n++)
                memset(j->dx + (size_t)n * l->in + u0 * hw, 0, (u1 - u0) * hw * sizeof(float));
        for (size_t t = 0, nt = tiles_of(l, j->batch); t < nt; t++) {
            const tile b = tile_of(l, t, j->batch);
            part_gather(l, b, j->dy, dyt, ld);
            dcz_transpose_planes(dyt, ld, C, b.T, dyT, ldT);
            im2col_tile(l, j->x, r0, r1, b, cols, ld);
            for (size_t g = r0 / kg; g * kg < r1; g++) {
                const size_t a = r0 > g * kg ? r0 : g * kg, e = r1 < (g + 1) * kg ? r1 : (g + 1) * kg;
                /* gW_g[:, a..e)^T += cols[a..e) (T) dY_g^T (T, og) */
                dcz_gemm_f32(e - a, og, (uint32_t)b.T, cols + (a - r0) * ld, ld, dyT + g * og, ldT, NULL,
                             NULL, gtmp, og);
                dcz_vadd(gwt + (a - r0) * og, gtmp, (e - a) * og);
                if (j->dx)   /* dcols[a..e) = W_g[:, a..e)^T (og) dY_g (og, T) */
                    dcz_gemm_f32(e - a, b.T, (uint32_t)og, j->wt + a * og, og, dyt + g * og * ld, ld, NULL,
                                 NULL, dcols + (a - r0) * ld, ld);
            }
            if (j->dx && copy) dx_copy_tile(l, dcols, ld, (int)u0, (int)u1, b, j->dx);
            else if (j->dx) col2im_tile(l, dcols, ld, (int)u0, (int)u1, b, j->dx);
        }
        for (size_t r = r0; r < r1; r++) {
            const size_t g = r / kg;
            for (size_t o = 0; o < og; o++) l->gw[(g * og + o) * kg + (r - g * kg)] = gwt[(r - r0) * og + o];
        }
    }
}

/* gb for channels [c0, c1) (plane_sums) */
static void bias_grad_part(void *ctx, size_t c0, size_t c1)
{
    const tile_job *j = ctx;
    const dcz_tlayer *l = j->l;
    plane_sums(j->dy, j->batch, l->out, (size_t)l->out_h * l->out_w, c0, c1, l->gb);
}

void dcz_conv_backward(dcz_tlayer *l, const float *x, const float *dy, float *dx, int batch,
                       float *work, size_t work_floats)
{
    if (depthwise(l)) {
        depthwise_backward(l, x, dy, dx, batch, 0, work, work_floats);
        return;
    }
    /* dx by Winograd's transforms where they fit: then the columns' pass
     * computes the weights' gradient alone */
    if (dx && wino_runs(l) && dcz_wino_input_grad(l, dy, dx, batch, work, work_floats))
        dx = NULL;
    tile_job j = { .l = l, .x = x, .dy = dy, .dx = dx, .work = work, .slot = slot_floats(l),
                   .units = dx ? (size_t)l->in_c : col_rows(l), .batch = batch };
    j.slots = slots_for(l, j.units, work_floats);
    if (dx) {   /* W transposed per group: wt[r][o] = W[g og + o][r - g Kg], r in group g */
        const size_t K = col_rows(l), og = group_out(l), kg = K / (size_t)dcz_tlayer_groups(l);
        j.wt = work;
        for (size_t r = 0; r < K; r++) {
            const size_t g = r / kg;
            for (size_t o = 0; o < og; o++) j.wt[r * og + o] = l->w[(g * og + o) * kg + (r - g * kg)];
        }
    }
    dcz_train_par(j.slots, 1, backward_slots, &j);
    const size_t planes = (size_t)batch * l->out_h * l->out_w;   /* floats a channel sums */
    dcz_train_par((size_t)l->out_c, (CONV_GRAIN_FLOATS + planes - 1) / planes, bias_grad_part, &j);
}
