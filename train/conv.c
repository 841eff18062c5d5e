/* conv.c: 2-D convolution of the training engine, forward and backward, by
 * im2col over many samples at once and one OpenBLAS sgemm per chunk.
 *
 * Activations are batch major, (batch, C, H, W) in C order. A chunk of nb
 * samples is unrolled into columns cols (K, nb*OH*OW), K = in_c*kh*kw: row
 * (c, i, j), column (n, oh, ow) holds input pixel (c, oh*sh - ph + i,
 * ow*sw - pw + j) of sample n, 0 outside the input (zero padding). Then
 *   forward   Yc (out_c, nb*OHW) = W (out_c, K) cols; y (n, c, p) = Yc + b;
 *   backward  dYc (out_c, nb*OHW) gathered from dy; gb = row sums of dYc;
 *             gW += dYc cols^T; dcols = W^T dYc; dx = col2im(dcols), the
 *             adjoint of im2col (each column entry added back to its pixel).
 * One GEMM covers nb samples, so its N dimension is nb*OH*OW rather than the
 * OH*OW of one sample. nb is chosen so the columns stay within
 * CONV_COL_BUDGET floats; the columns and dYc live in the net's shared
 * scratch (net->work, dcz_conv_work_floats). In training, when the columns
 * of the whole batch fit CONV_KEEP_FLOATS, the forward pass builds them in
 * the layer's cache instead, in one chunk, and the backward pass reuses them
 * for gW in one product, then computes dcols and col2im chunk by chunk in
 * the scratch; larger layers rebuild their columns chunk by chunk.
 *
 * On x86 with AVX-512, im2col writes the columns of a layer of stride 1 or
 * 2 across a plane (one row of the columns, one sample) at a time, by
 * masked vectors made once per plane, 16 columns a step; elsewhere by
 * libc's copy between loops of zeros. On an AMD EPYC at one thread,
 * alternated runs: the ResNet-style preset 695-770 samples/s by a masked
 * call per row (stride 2 by scalar loops), 733-801 by planes; the
 * conv-heavy CNN 441-449 by a call per row, 471-487 by planes. Full stores
 * that run past a row into the next (masks only at the plane's end)
 * measured slower there (732-763 against 786-805).
 *
 * Every step splits over the trainer's threads (par.c): im2col by rows of
 * the columns, its adjoint by input channels, the bias by planes, dYc by
 * output channels, each product by the longer side of its output.
 *
 * libdcz's own dense convolution kernels (the shift form, the patches
 * times the weights), which beat im2col and OpenBLAS on one sample, lose to
 * them over a batch: run for the forward pass, sample by sample on the
 * threads, they trained the conv-heavy CNN at 855 samples/s against 950
 * and LeNet-5 at 8300 against 9000 at 2 threads (a product over the whole
 * chunk's pixels keeps OpenBLAS's kernel near the core's peak).
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
 * added back to an input row (input gradient); no scratch, no cache.
 *
 * Checked by tests/unit/test_train.c against a direct 7-loop convolution on
 * random data and by finite differences (strides 1 and 2, padding 0 and 1,
 * odd sizes).
 */
#include <string.h>

#include "train/internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
/* The plane d (OH, OW) of one row (c, ki, kj) of the columns and one
 * sample, at stride sw = 1 or 2 across: row oh is xp[ih * W + off + ow*sw]
 * for ow in [lo, hi), ih = oh*sh - ph + ki inside [0, H), and 0 elsewhere.
 * 16 columns a step: at stride 1 one masked load, at stride 2 two masked
 * loads and a permute that keeps their even lanes; lanes outside
 * [lo, hi) are neither read nor faulted (the loads cover only the inputs
 * from the first column's to the last's). The masks are the same for every
 * row of the plane, so they are made once: the rows of 7 to 28 columns of
 * the presets cost a libc call and two loops of zeros each otherwise. */
__attribute__((target("avx512f")))
static void im2col_plane__avx512(float *d, const float *xp, int ih0, int sh, int H, int W, int off,
                                 int sw, int lo, int hi, int OH, int OW)
{
    enum { MAXV = 8 };   /* vectors of a row whose masks are kept: OW <= 128 */
    __mmask16 in[MAXV], all[MAXV], ld0[MAXV], ld1[MAXV];
    const int nv = (OW + 15) / 16;
    if (nv > MAXV) {   /* wider rows: the masks are made row by row */
        for (int oh = 0, ih = ih0; oh < OH; oh++, ih += sh, d += OW)
            im2col_plane__avx512(d, xp, ih, sh, H, W, off, sw, lo, hi, 1, OW);
        return;
    }
    for (int v = 0; v < nv; v++) {
        const int o = 16 * v, n = OW - o < 16 ? OW - o : 16;
        const int a = lo - o < 0 ? 0 : lo - o, b = hi - o > n ? n : hi - o;
        /* input lanes [a sw, (b - 1) sw] of the step's 16 sw */
        const uint32_t inputs = b > a ? (uint32_t)(((uint64_t)1 << ((b - 1) * sw + 1)) - 1) &
                                            ~(((uint32_t)1 << (a * sw)) - 1) : 0;
        in[v] = (__mmask16)(b > a ? ((1u << b) - 1) & ~((1u << a) - 1) : 0);
        all[v] = (__mmask16)((1u << n) - 1);
        ld0[v] = (__mmask16)inputs;
        ld1[v] = (__mmask16)(inputs >> 16);
    }
    const __m512 zero = _mm512_setzero_ps();
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (int oh = 0, ih = ih0; oh < OH; oh++, ih += sh, d += OW) {
        if (ih < 0 || ih >= H) {
            for (int v = 0; v < nv; v++) _mm512_mask_storeu_ps(d + 16 * v, all[v], zero);
            continue;
        }
        const float *xr = xp + (size_t)ih * W + off;
        if (sw == 1)
            for (int v = 0; v < nv; v++)
                _mm512_mask_storeu_ps(d + 16 * v, all[v], _mm512_maskz_loadu_ps(in[v], xr + 16 * v));
        else
            for (int v = 0; v < nv; v++) {
                const __m512 x0 = _mm512_maskz_loadu_ps(ld0[v], xr + 32 * v);
                const __m512 x1 = _mm512_maskz_loadu_ps(ld1[v], xr + 32 * v + 16);
                _mm512_mask_storeu_ps(d + 16 * v, all[v],
                                      _mm512_maskz_permutex2var_ps(in[v], x0, even, x1));
            }
    }
}
#endif

/* floats of im2col columns per chunk: large enough that one GEMM has work
 * for every thread, small enough to stay in the last-level cache */
#define CONV_COL_BUDGET ((size_t)1 << 21)
/* floats of columns a layer may keep from the forward to the backward pass
 * (the net's total is bounded by DCZ_CONV_KEEP_TOTAL, internal.h). Larger
 * columns cross memory twice more than rebuilt ones, whose products run
 * while each chunk is in cache: at 2 threads, keeping up to 2^24 floats
 * instead trained the conv-heavy CNN at 792 samples/s against 837, the
 * ResNet-style preset at 1017 against 1059 (LeNet-5 keeps both its layers
 * either way) */
#define CONV_KEEP_FLOATS ((size_t)1 << 22)

/* Rows of the im2col columns: in_c kh kw (every group's together). */
static size_t col_rows(const dcz_tlayer *l)
{
    return (size_t)l->in_c * (size_t)l->kh * (size_t)l->kw;
}

/* Samples per chunk for a batch of batch samples. */
static int conv_chunk(const dcz_tlayer *l, int batch)
{
    size_t per = col_rows(l) * (size_t)l->out_h * (size_t)l->out_w;
    size_t c = CONV_COL_BUDGET / per;
    if (c < 1) c = 1;
    return c < (size_t)batch ? (int)c : batch;
}

/* Nonzero for a depthwise convolution (one input channel per group). */
static int depthwise(const dcz_tlayer *l)
{
    return dcz_tlayer_groups(l) > 1 && dcz_tlayer_groups(l) == l->in_c;
}

size_t dcz_conv_cache_floats(const dcz_tlayer *l, int batch)
{
    if (depthwise(l)) return 0;
    size_t cols = col_rows(l) * (size_t)l->out_h * (size_t)l->out_w * (size_t)batch;
    return cols <= CONV_KEEP_FLOATS ? cols : 0;
}

size_t dcz_conv_work_floats(const dcz_tlayer *l, int batch)
{
    if (depthwise(l)) return 0;
    size_t nb = (size_t)conv_chunk(l, batch), ohw = (size_t)l->out_h * (size_t)l->out_w;
    size_t chunked = nb * ohw * (col_rows(l) + (size_t)l->out_c);
    size_t kept = dcz_conv_cache_floats(l, batch)
                      ? ohw * ((size_t)batch * l->out_c + nb * col_rows(l)) : 0;
    return chunked > kept ? chunked : kept;
}

/* The columns kept in l->cache for batch samples, or NULL. */
static float *kept_cols(const dcz_tlayer *l, int batch)
{
    size_t need = dcz_conv_cache_floats(l, batch);
    return need && l->cache && l->cache_bytes >= need * sizeof(float) ? l->cache : NULL;
}

/* gW (oc, K) = dYc (oc, N) cols^T (N, K) (+ gW when accumulate). */
static void weight_grad(dcz_tlayer *l, int oc, int K, int N, const float *dyc,
                        const float *cols, int accumulate)
{
    const int G = dcz_tlayer_groups(l), og = oc / G, Kg = K / G;
    for (int g = 0; g < G; g++)   /* gW_g (og, Kg) = dYc_g cols_g^T */
        dcz_train_sgemm(0, 1, og, Kg, N, 1.0f, dyc + (size_t)g * og * N, N,
                        cols + (size_t)g * Kg * N, N, accumulate ? 1.0f : 0.0f,
                        l->gw + (size_t)g * og * Kg, Kg);
}

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

/* Floats a part of a split loop moves at least. */
#define CONV_GRAIN_FLOATS 16384

/* A loop of the columns over a chunk of nb samples, split over the
 * trainer's threads by rows (im2col: each row (c, ki, kj) of the columns is
 * written alone), by input channels (col2im: the rows of channel c all add
 * into its planes) or by planes (the bias) or output channels (dYc). */
typedef struct cols_job {
    const dcz_tlayer *l;
    const float *src;
    float *dst;
    int nb;
    size_t ld;   /* gather_dy: the row length of dYc */
    float *gb;   /* gather_dy: the bias gradient, summed into */
} cols_job;

static size_t grain_of(size_t floats_per_item)
{
    return (CONV_GRAIN_FLOATS + floats_per_item - 1) / (floats_per_item ? floats_per_item : 1);
}

/* rows [r0, r1) of cols (K, nb*OHW) from x (nb, C, H, W) */
static void im2col_part(void *ctx, size_t r0, size_t r1)
{
    const cols_job *jb = ctx;
    const dcz_tlayer *l = jb->l;
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w, C = l->in_c;
    const int kh = l->kh, kw = l->kw, sh = l->sh, sw = l->sw, ph = l->ph, pw = l->pw;
    const size_t hw = (size_t)H * W, ohw = (size_t)OH * OW, N = (size_t)jb->nb * ohw;
#if defined(__x86_64__)
    const int vec = sw <= 2 && __builtin_cpu_supports("avx512f");
#endif
    for (size_t r = r0; r < r1; r++) {
        const int c = (int)(r / (size_t)(kh * kw)), ki = (int)(r / (size_t)kw % (size_t)kh);
        const int kj = (int)(r % (size_t)kw);
        float *row = jb->dst + r * N;
        int lo, hi;
        valid_range(kj, W, OW, sw, pw, &lo, &hi);
        for (int n = 0; n < jb->nb; n++) {
            const float *xp = jb->src + ((size_t)n * C + c) * hw;   /* (H, W) */
            float *d = row + (size_t)n * ohw;
#if defined(__x86_64__)
            if (vec) {
                im2col_plane__avx512(d, xp, ki - ph, sh, H, W, kj - pw, sw, lo, hi, OH, OW);
                continue;
            }
#endif
            for (int oh = 0; oh < OH; oh++, d += OW) {
                int ih = oh * sh - ph + ki;
                if (ih < 0 || ih >= H) {
                    memset(d, 0, (size_t)OW * sizeof(float));
                    continue;
                }
                /* input column of ow is off + ow*sw, >= 0 from lo on */
                const float *xr = xp + (size_t)ih * W;
                int off = kj - pw;
                for (int ow = 0; ow < lo; ow++) d[ow] = 0.0f;
                if (sw == 1)   /* libc's copy: faster than dcz_vcopy on rows this short */
                    memcpy(d + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(float));
                else
                    for (int ow = lo; ow < hi; ow++) d[ow] = xr[ow * sw + off];
                for (int ow = hi; ow < OW; ow++) d[ow] = 0.0f;
            }
        }
    }
}

/* cols (K, nb*OHW) from x (nb, C, H, W). */
static void im2col(const dcz_tlayer *l, const float *x, int nb, float *cols)
{
    cols_job jb = { .l = l, .src = x, .dst = cols, .nb = nb };
    dcz_train_par(col_rows(l), grain_of((size_t)nb * l->out_h * l->out_w), im2col_part, &jb);
}

/* the planes of input channels [c0, c1) of dx from the columns */
static void col2im_part(void *ctx, size_t c0, size_t c1)
{
    const cols_job *jb = ctx;
    const dcz_tlayer *l = jb->l;
    const int C = l->in_c, H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    const int kh = l->kh, kw = l->kw, sh = l->sh, sw = l->sw, ph = l->ph, pw = l->pw;
    const size_t hw = (size_t)H * W, ohw = (size_t)OH * OW, N = (size_t)jb->nb * ohw;
    for (int n = 0; n < jb->nb; n++)
        memset(jb->dst + ((size_t)n * C + c0) * hw, 0, (c1 - c0) * hw * sizeof(float));
    for (int c = (int)c0; c < (int)c1; c++)
        for (int ki = 0; ki < kh; ki++)
            for (int kj = 0; kj < kw; kj++) {
                const float *row = jb->src + ((size_t)(c * kh + ki) * kw + kj) * N;
                int lo, hi;
                valid_range(kj, W, OW, sw, pw, &lo, &hi);
                for (int n = 0; n < jb->nb; n++) {
                    float *xp = jb->dst + ((size_t)n * C + c) * hw;
                    const float *d = row + (size_t)n * ohw;
                    for (int oh = 0; oh < OH; oh++, d += OW) {
                        int ih = oh * sh - ph + ki;
                        if (ih < 0 || ih >= H) continue;
                        float *xr = xp + (size_t)ih * W;
                        int off = kj - pw;
                        if (sw == 1)
                            dcz_vadd(xr + lo + off, d + lo, (size_t)(hi - lo));
                        else
                            for (int ow = lo; ow < hi; ow++) xr[ow * sw + off] += d[ow];
                    }
                }
            }
}

/* dx (nb, C, H, W) = col2im(cols): the sum, over every column entry, of the
 * entry into the pixel it was read from (padding reads are dropped). */
static void col2im(const dcz_tlayer *l, const float *cols, int nb, float *dx)
{
    cols_job jb = { .l = l, .src = cols, .dst = dx, .nb = nb };
    size_t per = (size_t)nb * l->kh * l->kw * l->out_h * l->out_w;
    dcz_train_par((size_t)l->in_c, grain_of(per), col2im_part, &jb);
}

/* The taps of a depthwise convolution: for every sample, output channel oc
 * (reading input channel oc / m, m = out_c / in_c), tap (ki, kj) and output
 * row oh that reads an input row, fn gets the output row's columns
 * [lo, hi) that read inside the input, the input row, and the weight's
 * index. Column ow reads input column ow * sw + off. */
typedef void (*tap_fn)(void *ctx, size_t yrow, size_t xrow, size_t wi, int lo, int hi, int off);
static void each_tap(const dcz_tlayer *l, int batch, tap_fn fn, void *ctx)
{
    const int C = l->in_c, H = l->in_h, W = l->in_w, OC = l->out_c, OH = l->out_h, OW = l->out_w;
    const int m = OC / C;
    for (int n = 0; n < batch; n++)
        for (int oc = 0; oc < OC; oc++) {
            const size_t yp = ((size_t)n * OC + oc) * OH * OW, xp = ((size_t)n * C + oc / m) * H * W;
            for (int ki = 0; ki < l->kh; ki++)
                for (int kj = 0; kj < l->kw; kj++) {
                    int lo, hi;
                    valid_range(kj, W, OW, l->sw, l->pw, &lo, &hi);
                    if (lo >= hi) continue;
                    const size_t wi = ((size_t)oc * l->kh + ki) * l->kw + kj;
                    for (int oh = 0; oh < OH; oh++) {
                        const int ih = oh * l->sh - l->ph + ki;
                        if (ih >= 0 && ih < H)
                            fn(ctx, yp + (size_t)oh * OW, xp + (size_t)ih * W, wi, lo, hi, kj - l->pw);
                    }
                }
        }
}

typedef struct tap_ctx {
    const dcz_tlayer *l;
    const float *x, *dy;   /* forward input, output gradient */
    float *y, *dx, *gw;    /* what the pass writes */
} tap_ctx;

/* y row += w x row */
static void tap_forward(void *ctx, size_t yrow, size_t xrow, size_t wi, int lo, int hi, int off)
{
    const tap_ctx *c = ctx;
    const float w = c->l->w[wi], *xr = c->x + xrow;
    float *yr = c->y + yrow;
    if (c->l->sw == 1) dcz_vaxpy(yr + lo, xr + lo + off, w, (size_t)(hi - lo));
    else for (int ow = lo; ow < hi; ow++) yr[ow] += w * xr[ow * c->l->sw + off];
}

/* gw += dy row . x row; dx row += w dy row */
static void tap_backward(void *ctx, size_t yrow, size_t xrow, size_t wi, int lo, int hi, int off)
{
    const tap_ctx *c = ctx;
    const int sw = c->l->sw;
    const float w = c->l->w[wi], *xr = c->x + xrow, *dyr = c->dy + yrow;
    float *dxr = c->dx ? c->dx + xrow : NULL;
    if (sw == 1) {
        c->gw[wi] += dcz_vdot(dyr + lo, xr + lo + off, (size_t)(hi - lo));
        if (dxr) dcz_vaxpy(dxr + lo + off, dyr + lo, w, (size_t)(hi - lo));
        return;
    }
    float g = 0.0f;
    for (int ow = lo; ow < hi; ow++) g += dyr[ow] * xr[ow * sw + off];
    c->gw[wi] += g;
    if (dxr)
        for (int ow = lo; ow < hi; ow++) dxr[ow * sw + off] += w * dyr[ow];
}

static void depthwise_forward(const dcz_tlayer *l, const float *x, float *y, int batch)
{
    const size_t ohw = (size_t)l->out_h * l->out_w;
    for (size_t p = 0; p < (size_t)batch * (size_t)l->out_c; p++)
        for (size_t j = 0; j < ohw; j++) y[p * ohw + j] = l->b[p % (size_t)l->out_c];
    tap_ctx c = { .l = l, .x = x, .y = y };
    each_tap(l, batch, tap_forward, &c);
}

static void depthwise_backward(dcz_tlayer *l, const float *x, const float *dy, float *dx, int batch)
{
    const size_t ohw = (size_t)l->out_h * l->out_w;
    memset(l->gw, 0, dcz_tlayer_nweights(l) * sizeof *l->gw);
    for (int c = 0; c < l->out_c; c++) l->gb[c] = 0.0f;
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < l->out_c; c++) l->gb[c] += dcz_vsum(dy + ((size_t)n * l->out_c + c) * ohw, ohw);
    if (dx) memset(dx, 0, (size_t)batch * (size_t)l->in * sizeof *dx);
    tap_ctx c = { .l = l, .x = x, .dy = dy, .dx = dx, .gw = l->gw };
    each_tap(l, batch, tap_backward, &c);
}

/* planes [p0, p1) of y (nb, oc, ohw) from Yc (oc, ld) plus the bias */
static void bias_part(void *ctx, size_t p0, size_t p1)
{
    const cols_job *jb = ctx;
    const dcz_tlayer *l = jb->l;
    const size_t ohw = (size_t)l->out_h * l->out_w, oc = (size_t)l->out_c;
    for (size_t p = p0; p < p1; p++) {
        const size_t n = p / oc, c = p % oc;
        dcz_vaffine(jb->dst + p * ohw, jb->src + c * jb->ld + n * ohw, 1.0f, l->b[c], ohw);
    }
}

/* rows [c0, c1) of dYc and those channels' gb */
static void gather_part(void *ctx, size_t c0, size_t c1)
{
    const cols_job *jb = ctx;
    const dcz_tlayer *l = jb->l;
    const size_t ohw = (size_t)l->out_h * l->out_w;
    for (int n = 0; n < jb->nb; n++)
        for (size_t c = c0; c < c1; c++) {
            const float *src = jb->src + (size_t)n * l->out + c * ohw;
            dcz_vcopy(jb->dst + c * jb->ld + (size_t)n * ohw, src, ohw);
            jb->gb[c] += dcz_vsum(src, ohw);
        }
}

/* dYc (oc, N) from dy of nb samples (ld: the row length of dYc); adds the
 * plane sums to gb. */
static void gather_dy(dcz_tlayer *l, const float *dy, int nb, float *dyc, size_t ld)
{
    cols_job jb = { .l = l, .src = dy, .dst = dyc, .nb = nb, .ld = ld, .gb = l->gb };
    dcz_train_par((size_t)l->out_c, grain_of((size_t)nb * l->out_h * l->out_w), gather_part, &jb);
}

void dcz_conv_forward(const dcz_tlayer *l, const float *x, float *y, int batch,
                      float *work, int train)
{
    if (depthwise(l)) {
        depthwise_forward(l, x, y, batch);
        return;
    }
    const int K = (int)col_rows(l), oc = l->out_c, G = dcz_tlayer_groups(l), og = oc / G, Kg = K / G;
    const size_t ohw = (size_t)l->out_h * l->out_w;
    float *keep = train ? kept_cols(l, batch) : NULL;
    const int chunk = keep ? batch : conv_chunk(l, batch);
    float *cols = keep ? keep : work;                    /* (K, chunk*ohw) */
    float *yc = keep ? work : work + (size_t)K * (size_t)chunk * ohw;  /* (oc, chunk*ohw) */
    for (int s = 0; s < batch; s += chunk) {
        int nb = batch - s < chunk ? batch - s : chunk;
        int N = (int)((size_t)nb * ohw);
        im2col(l, x + (size_t)s * l->in, nb, cols);
        for (int g = 0; g < G; g++)   /* Yc_g (og, N) = W_g (og, Kg) cols_g (Kg, N) */
            dcz_train_sgemm(0, 0, og, N, Kg, 1.0f, l->w + (size_t)g * og * Kg, Kg,
                            cols + (size_t)g * Kg * N, N, 0.0f, yc + (size_t)g * og * N, N);
        cols_job jb = { .l = l, .src = yc, .dst = y + (size_t)s * l->out, .nb = nb, .ld = (size_t)N };
        dcz_train_par((size_t)nb * oc, grain_of(ohw), bias_part, &jb);
    }
}

/* dx of nb samples from dYc (oc, nb*ohw, row length ld): dcols (K, nb*ohw) =
 * W^T dYc into the scratch dcols, then col2im. */
static void input_grad(const dcz_tlayer *l, const float *dyc, size_t ld, int nb, float *dcols,
                       float *dx)
{
    const int K = (int)col_rows(l), N = nb * l->out_h * l->out_w;
    const int G = dcz_tlayer_groups(l), og = l->out_c / G, Kg = K / G;
    for (int g = 0; g < G; g++)   /* dcols_g (Kg, N) = W_g^T dYc_g */
        dcz_train_sgemm(1, 0, Kg, N, og, 1.0f, l->w + (size_t)g * og * Kg, Kg,
                        dyc + (size_t)g * og * ld, (int)ld, 0.0f, dcols + (size_t)g * Kg * N, N);
    col2im(l, dcols, nb, dx);
}

void dcz_conv_backward(dcz_tlayer *l, const float *x, const float *dy, float *dx,
                       int batch, float *work)
{
    if (depthwise(l)) {
        depthwise_backward(l, x, dy, dx, batch);
        return;
    }
    const int K = (int)col_rows(l), oc = l->out_c;
    const size_t ohw = (size_t)l->out_h * l->out_w;
    const int chunk = conv_chunk(l, batch);
    float *keep = kept_cols(l, batch);   /* the forward pass's columns */
    for (int c = 0; c < oc; c++) l->gb[c] = 0.0f;
    if (keep) {
        /* one product for gW over the batch; dx chunk by chunk, so that the
         * columns of dx stay in cache between their product and col2im */
        const size_t N = (size_t)batch * ohw;
        float *dyc = work;                 /* (oc, N) */
        float *dcols = work + (size_t)oc * N;   /* (K, chunk*ohw) */
        gather_dy(l, dy, batch, dyc, N);
        weight_grad(l, oc, K, (int)N, dyc, keep, 0);
        if (dx)
            for (int s = 0; s < batch; s += chunk) {
                int nb = batch - s < chunk ? batch - s : chunk;
                input_grad(l, dyc + (size_t)s * ohw, N, nb, dcols, dx + (size_t)s * l->in);
            }
        return;
    }
    float *cols = work;                                  /* (K, chunk*ohw) */
    float *dyc = work + (size_t)K * (size_t)chunk * ohw; /* (oc, chunk*ohw) */
    for (int s = 0; s < batch; s += chunk) {
        int nb = batch - s < chunk ? batch - s : chunk;
        size_t N = (size_t)nb * ohw;
        gather_dy(l, dy + (size_t)s * l->out, nb, dyc, N);
        im2col(l, x + (size_t)s * l->in, nb, cols);
        weight_grad(l, oc, K, (int)N, dyc, cols, s > 0);
        if (dx) input_grad(l, dyc, N, nb, cols, dx + (size_t)s * l->in);
    }
}
