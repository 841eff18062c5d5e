/* kernels_conv.c: convolution and pooling kernels of the runtime.
 *
 * dcz_conv2d_direct_ref is the specification: seven plain loops over dense
 * weights. Everything else is checked against it on random data
 * (tests/unit/test_kernels.c: kernels 1, 3, 5 and non-square, strides 1 and
 * 2, padding 0 and 1, odd image sizes, densities 0, 0.5 and 1, batch 1 and
 * 7, codebook and fp32 weights, rows wide enough for fillers).
 *
 * Two ways to convolve with the compressed execution form, both kept and
 * tested:
 *   direct  dcz_conv2d_sparse_direct: for each output channel and each
 *           stored weight (ic, ky, kx, w), add w times the shifted input
 *           plane ic to the output plane; the inner loop runs along an
 *           output row; no scratch
 *   im2col  dcz_conv2d_sparse_im2col: copy each sample's receptive fields
 *           into a (pixels, in_c kh kw) matrix and run dcz_spmm with the
 *           pixels as its batch; scratch of pixels (in_c kh kw + out_c)
 *           and dcz_spmm's tile
 * Measured by bench/bench_conv.c (one core of an AMD EPYC, gcc 12 -O2, 8-bit
 * codebook, median of 21 runs, microseconds):
 *
 *   layer (output plane)                       batch  direct  im2col  im2col/direct
 *   LeNet-5 conv1 1->20 5x5 (24x24), 66%          1      60     148     2.47
 *                                                 8     473    1146     2.42
 *   LeNet-5 conv2 20->50 5x5 (8x8), 12%           1      83      85     1.03
 *                                                 8     570     657     1.15
 *   32->64 3x3 pad 1 (14x14), 40%                 1     504     904     1.79
 *                                                 8    3706    6894     1.86
 *   64->128 3x3 pad 1 (7x7), 40%                  1     678     417     0.61
 *                                                 8    3967    3371     0.85
 *   128->256 3x3 pad 1 (4x4), 40%                 1    1767     704     0.40
 *                                                 8    7911    5712     0.72
 *
 * Direct reads the input planes in place and streams contiguous rows;
 * im2col first copies every receptive field (kh kw times the input) and
 * then walks that matrix and its output with a stride of a whole row. So
 * direct wins by 1.8x to 2.5x on planes of 14 x 14 and more and is even at
 * 8 x 8; on planes narrower than 8 it pays a loop per output row of a few
 * elements for every weight, and im2col, one loop over all pixels per
 * weight, wins (1.6x at 7 x 7, 2.5x at 4 x 4, batch 1). The runtime therefore picks per layer
 * (dcz_conv2d_pick_im2col): im2col when output rows are shorter than 8 and
 * its scratch is at most 2^22 floats, direct otherwise. The same bench shows
 * OpenBLAS on dense weights still 3x to 15x ahead of both in scalar loops.
 * Direct's rows are now vectorized (AVX2, NEON: 8 or 4 outputs of a row
 * per multiply and add, the scalar rows' bits), which halves compressed
 * LeNet-5 at batch 1; the rule above was measured before that and
 * favours im2col more than direct deserves.
 */
#include <math.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/model.h"
#include "runtime/threads.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>

#include "runtime/cpu/avx2_lanes.h"
#define DCZ_X86 1
#elif DCZ_BUILD_F32_NEON
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

dcz_status dcz_conv_geom_init(dcz_conv_geom *g, uint16_t op, const int32_t *attr, uint32_t nattr,
                              const dcz_shape *in)
{
    dcz_shape out;
    const dcz_op_info *o = dcz_op_get(op);
    if (!o || o->window_at < 0) return DCZ_ERR_UNSUPPORTED;
    dcz_status s = dcz_op_shape(op, attr, nattr, in, 1, &out);
    if (s != DCZ_OK) return s;
    const int32_t *w = attr + o->window_at;
    *g = (dcz_conv_geom){
        in->dims[0], in->dims[1], in->dims[2], out.dims[0], out.dims[1], out.dims[2],
        (uint32_t)w[0], (uint32_t)w[1], (uint32_t)w[2], (uint32_t)w[3], (uint32_t)w[4], (uint32_t)w[5],
        op == DCZ_OP_CONV2D ? (uint32_t)attr[8] : 1
    };
    return DCZ_OK;
}

/* ---- the reference -------------------------------------------------------- */

void dcz_conv2d_direct_ref(const dcz_conv_geom *g, const float *w, const float *bias,
                           const float *x, size_t batch, float *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t oc = 0; oc < g->out_c; oc++)
            for (uint32_t oy = 0; oy < g->out_h; oy++)
                for (uint32_t ox = 0; ox < g->out_w; ox++) {
                    float acc = bias ? bias[oc] : 0.0f;
                    const uint32_t gin = dcz_conv_group_in(g), ic0 = dcz_conv_in0(g, oc);
                    for (uint32_t ic = 0; ic < gin; ic++)
                        for (uint32_t ky = 0; ky < g->kh; ky++)
                            for (uint32_t kx = 0; kx < g->kw; kx++) {
                                int64_t iy = (int64_t)oy * g->sh + ky - g->ph;
                                int64_t ix = (int64_t)ox * g->sw + kx - g->pw;
                                if (iy < 0 || iy >= g->in_h || ix < 0 || ix >= g->in_w) continue;
                                size_t wi = (((size_t)oc * gin + ic) * g->kh + ky) * g->kw + kx;
                                size_t xi = (((size_t)b * g->in_c + ic0 + ic) * g->in_h + (size_t)iy)
                                            * g->in_w + (size_t)ix;
                                acc += w[wi] * x[xi];
                            }
                    y[(((size_t)b * g->out_c + oc) * g->out_h + oy) * g->out_w + ox] = acc;
                }
}

/* ---- direct convolution by taps -------------------------------------------
 * Taps (conv.h, dcz_conv_taps) are computed once per call for every kernel
 * offset, so the inner loops carry no bounds tests. */

typedef dcz_conv_tap tap;

static tap axis_tap(uint32_t n, uint32_t out_n, uint32_t stride, uint32_t pad, uint32_t k)
{
    tap t = { 0, 0, 0 };
    if ((uint64_t)n - 1 + pad < k) return t; /* this offset only ever sees padding */
    uint64_t lo = k >= pad ? 0 : (pad - k + stride - 1) / stride;
    uint64_t hi = ((uint64_t)n - 1 + pad - k) / stride + 1;
    if (hi > out_n) hi = out_n;
    if (lo >= hi) return t;
    t.lo = (uint32_t)lo;
    t.hi = (uint32_t)hi;
    t.first = (uint32_t)(lo * stride + k - pad);
    return t;
}

void dcz_conv_taps(const dcz_conv_geom *g, tap *ty, tap *tx)
{
    for (uint32_t k = 0; k < g->kh; k++) ty[k] = axis_tap(g->in_h, g->out_h, g->sh, g->ph, k);
    for (uint32_t k = 0; k < g->kw; k++) tx[k] = axis_tap(g->in_w, g->out_w, g->sw, g->pw, k);
}

/* yp (out_h, out_w) += w * (input plane xp seen through tap (ty, tx)): the
 * scalar variant (DCZ_ISA_REF). The vector variants below do the same
 * multiply, then add, on each output (the build keeps them apart:
 * -ffp-contract=off), so every variant gives the same bits. */
typedef void (*tap_fn)(const dcz_conv_geom *g, const tap *ty, const tap *tx, float w, const float *xp,
                       float *yp);

static void add_tap(const dcz_conv_geom *g, const tap *ty, const tap *tx, float w,
                    const float *xp, float *yp)
{
    const uint32_t n = tx->hi - tx->lo, sw = g->sw;
    const size_t x_step = (size_t)g->sh * g->in_w;
    size_t xi = (size_t)ty->first * g->in_w + tx->first, yi = (size_t)ty->lo * g->out_w + tx->lo;
    for (uint32_t oy = ty->lo; oy < ty->hi; oy++, xi += x_step, yi += g->out_w) {
        const float *xr = xp + xi;
        float *yr = yp + yi;
        if (sw == 1)
            for (uint32_t i = 0; i < n; i++) yr[i] += w * xr[i];
        else
            for (uint32_t i = 0; i < n; i++) yr[i] += w * xr[(size_t)i * sw];
    }
}

#ifdef DCZ_X86
__attribute__((target("avx2")))
static void add_tap__avx2(const dcz_conv_geom *g, const tap *ty, const tap *tx, float w, const float *xp,
                          float *yp)
{
    if (g->sw != 1) {
        add_tap(g, ty, tx, w, xp, yp);
        return;
    }
    const uint32_t n = tx->hi - tx->lo;
    const size_t x_step = (size_t)g->sh * g->in_w;
    const __m256 wv = _mm256_set1_ps(w);
    size_t xi = (size_t)ty->first * g->in_w + tx->first, yi = (size_t)ty->lo * g->out_w + tx->lo;
    for (uint32_t oy = ty->lo; oy < ty->hi; oy++, xi += x_step, yi += g->out_w) {
        const float *xr = xp + xi;
        float *yr = yp + yi;
        uint32_t i = 0;
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(yr + i, _mm256_add_ps(_mm256_loadu_ps(yr + i), _mm256_mul_ps(wv, _mm256_loadu_ps(xr + i))));
        for (; i < n; i++) yr[i] += w * xr[i];
    }
}
#endif

#ifdef DCZ_NEON
static void add_tap__neon(const dcz_conv_geom *g, const tap *ty, const tap *tx, float w, const float *xp,
                          float *yp)
{
    if (g->sw != 1) {
        add_tap(g, ty, tx, w, xp, yp);
        return;
    }
    const uint32_t n = tx->hi - tx->lo;
    const size_t x_step = (size_t)g->sh * g->in_w;
    const float32x4_t wv = vdupq_n_f32(w);
    size_t xi = (size_t)ty->first * g->in_w + tx->first, yi = (size_t)ty->lo * g->out_w + tx->lo;
    for (uint32_t oy = ty->lo; oy < ty->hi; oy++, xi += x_step, yi += g->out_w) {
        const float *xr = xp + xi;
        float *yr = yp + yi;
        uint32_t i = 0;
        for (; i + 4 <= n; i += 4) vst1q_f32(yr + i, vaddq_f32(vld1q_f32(yr + i), vmulq_f32(wv, vld1q_f32(xr + i))));
        for (; i < n; i++) yr[i] += w * xr[i];
    }
}
#endif

/* The tap kernel of isa; NULL when this build or machine has none. */
static tap_fn tap_variant(dcz_isa isa)
{
    if (isa == DCZ_ISA_REF) return add_tap;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) return add_tap__avx2;
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) return add_tap__neon;
#endif
    return NULL;
}

const char *dcz_conv2d_variant(void)
{
    const dcz_isa isa = dcz_isa_best();
    return isa != DCZ_ISA_REF && tap_variant(isa) ? isa == DCZ_ISA_AVX2 ? "avx2" : "neon" : NULL;
}

static void fill(float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++) p[i] = v;
}

int dcz_conv2d_dense_isa(dcz_isa isa, const dcz_conv_geom *g, const float *w, const float *bias,
                         const float *x, size_t batch, float *y)
{
    const tap_fn add = tap_variant(isa);
    if (!add) return 0;
    tap ty[DCZ_MAX_WINDOW], tx[DCZ_MAX_WINDOW];
    dcz_conv_taps(g, ty, tx);
    const size_t in_plane = (size_t)g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    for (size_t b = 0; b < batch; b++)
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            float *yp = y + (b * g->out_c + oc) * out_plane;
            const uint32_t gin = dcz_conv_group_in(g), ic0 = dcz_conv_in0(g, oc);
            const float *wo = w + (size_t)oc * gin * g->kh * g->kw;
            fill(yp, out_plane, bias ? bias[oc] : 0.0f);
            for (uint32_t ic = 0; ic < gin; ic++) {
                const float *xp = x + (b * g->in_c + ic0 + ic) * in_plane;
                for (uint32_t ky = 0; ky < g->kh; ky++)
                    for (uint32_t kx = 0; kx < g->kw; kx++)
                        add(g, &ty[ky], &tx[kx], *wo++, xp, yp);
            }
        }
    return 1;
}

void dcz_conv2d_dense(const dcz_conv_geom *g, const float *w, const float *bias, const float *x, size_t batch,
                      float *y)
{
    if (!dcz_conv2d_dense_isa(dcz_isa_best(), g, w, bias, x, batch, y))
        dcz_conv2d_dense_isa(DCZ_ISA_REF, g, w, bias, x, batch, y);
}

/* Column c of a conv weight row is the tap (ic, ky, kx) with c = ic ksize +
 * r, r = ky kw + kx. Walking a row, r and ic advance by the entries' steps;
 * a division is needed only when a step crosses into another input
 * channel, and r splits into (ky, kx) through a table for windows of up to
 * DCZ_TAP_TABLE cells (16 x 16), by division above. */
#define DCZ_TAP_TABLE 256

typedef struct tap_walk {
    uint32_t ksize, kw;
    uint32_t ic, r;
    uint8_t ky[DCZ_TAP_TABLE], kx[DCZ_TAP_TABLE];
} tap_walk;

static void tap_walk_init(tap_walk *t, const dcz_conv_geom *g)
{
    t->ksize = g->kh * g->kw;
    t->kw = g->kw;
    if (t->ksize > DCZ_TAP_TABLE) return;
    for (uint32_t r = 0; r < t->ksize; r++) {
        t->ky[r] = (uint8_t)(r / g->kw);
        t->kx[r] = (uint8_t)(r % g->kw);
    }
}

static void tap_walk_row(tap_walk *t) { t->ic = 0; t->r = 0; }

/* advances by step columns; *ky, *kx receive the tap reached */
static void tap_walk_step(tap_walk *t, uint32_t step, uint32_t *ky, uint32_t *kx)
{
    t->r += step;
    if (t->r >= t->ksize) {
        t->ic += t->r / t->ksize;
        t->r %= t->ksize;
    }
    if (t->ksize <= DCZ_TAP_TABLE) {
        *ky = t->ky[t->r];
        *kx = t->kx[t->r];
    } else {
        *ky = t->r / t->kw;
        *kx = t->r % t->kw;
    }
}

int dcz_conv2d_sparse_direct_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                                 const float *x, size_t batch, float *y)
{
    const tap_fn add = tap_variant(isa);
    if (!add) return 0;
    tap ty[DCZ_MAX_WINDOW], tx[DCZ_MAX_WINDOW];
    tap_walk walk;
    dcz_conv_taps(g, ty, tx);
    tap_walk_init(&walk, g);
    const size_t in_plane = (size_t)g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    for (uint32_t oc = 0; oc < s->rows; oc++) {
        for (size_t b = 0; b < batch; b++)
            fill(y + (b * g->out_c + oc) * out_plane, out_plane, bias ? bias[oc] : 0.0f);
        tap_walk_row(&walk);
        const uint32_t ic0 = dcz_conv_in0(g, oc);
        for (uint32_t e = s->row_ptr[oc]; e < s->row_ptr[oc + 1]; e++) {
            uint32_t ky, kx;
            tap_walk_step(&walk, s->step[e], &ky, &kx);
            if (s->step[e] == DCZ_STEP_FILLER) continue;
            const float wv = dcz_sparse_weight(s, e);
            for (size_t b = 0; b < batch; b++)
                add(g, &ty[ky], &tx[kx], wv, x + (b * g->in_c + ic0 + walk.ic) * in_plane,
                    y + (b * g->out_c + oc) * out_plane);
        }
    }
    return 1;
}

void dcz_conv2d_sparse_direct(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias, const float *x,
                              size_t batch, float *y)
{
    if (!dcz_conv2d_sparse_direct_isa(dcz_isa_best(), g, s, bias, x, batch, y))
        dcz_conv2d_sparse_direct_isa(DCZ_ISA_REF, g, s, bias, x, batch, y);
}

/* ---- im2col + sparse matrix-matrix ---------------------------------------- */

/* the im2col matrix and the product before its transpose */
static uint64_t im2col_matrix_floats(const dcz_conv_geom *g)
{
    /* saturates rather than wraps for absurd geometries */
    const uint64_t pixels = (uint64_t)g->out_h * g->out_w;
    const uint64_t per_pixel = (uint64_t)g->in_c * g->kh * g->kw + g->out_c;
    return per_pixel && pixels > UINT64_MAX / per_pixel ? UINT64_MAX : pixels * per_pixel;
}

/* the dense kernel's patch matrix (in_c kh kw, pixels padded to DCZ_GEMM_PAD) */
static uint64_t dense_col_floats(const dcz_conv_geom *g)
{
    const uint64_t k = (uint64_t)g->in_c * g->kh * g->kw;
    const uint64_t ldb = dcz_gemm_ldb((size_t)g->out_h * g->out_w);
    return k && ldb > UINT64_MAX / k ? UINT64_MAX : k * ldb;
}

/* Whether pixel rows take g's geometry: a 1 x 1 window without padding,
 * one group, any stride */
static int pixels_geom(const dcz_conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->ph == 0 && g->pw == 0 && dcz_conv_groups(g) == 1;
}

/* what pixel rows take (0 where they do not run g): the product (pixels,
 * out_c), after the patch matrix of a layer whose input is not its patches
 * (a stride) */
static uint64_t pixels_floats(const dcz_conv_geom *g)
{
    if (!pixels_geom(g)) return 0;
    const uint64_t t = (uint64_t)g->out_h * g->out_w * g->out_c;
    const uint64_t col = dcz_conv_pointwise(g) ? 0 : dense_col_floats(g);
    return col > UINT64_MAX - t ? UINT64_MAX : col + t;
}

uint64_t dcz_conv2d_im2col_floats(const dcz_conv_geom *g)
{
    const uint64_t m = im2col_matrix_floats(g);
    const uint64_t tile = dcz_spmm_scratch_floats(g->out_c, g->in_c * g->kh * g->kw);
    const uint64_t sparse = m > UINT64_MAX - tile ? UINT64_MAX : m + tile, dense = dense_col_floats(g);
    const uint64_t most = sparse > dense ? sparse : dense, px = pixels_floats(g);
    return px > most ? px : most;
}

int dcz_conv2d_im2col_fits(const dcz_conv_geom *g)
{
    return dcz_conv_groups(g) == 1 && im2col_matrix_floats(g) <= DCZ_CONV_SCRATCH_MAX;
}

int dcz_conv2d_pick_im2col(const dcz_conv_geom *g)
{
    return dcz_conv2d_im2col_fits(g) && g->out_w < DCZ_CONV_DIRECT_MIN_W;
}

void dcz_im2col(const dcz_conv_geom *g, const float *x, float *col)
{
    for (uint32_t oy = 0; oy < g->out_h; oy++)
        for (uint32_t ox = 0; ox < g->out_w; ox++)
            for (uint32_t ic = 0; ic < g->in_c; ic++)
                for (uint32_t ky = 0; ky < g->kh; ky++)
                    for (uint32_t kx = 0; kx < g->kw; kx++) {
                        int64_t iy = (int64_t)oy * g->sh + ky - g->ph;
                        int64_t ix = (int64_t)ox * g->sw + kx - g->pw;
                        int inside = iy >= 0 && iy < g->in_h && ix >= 0 && ix < g->in_w;
                        *col++ = inside ? x[((size_t)ic * g->in_h + (size_t)iy) * g->in_w + (size_t)ix]
                                        : 0.0f;
                    }
}

void dcz_conv2d_sparse_im2col(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                              const float *x, size_t batch, int ref, float *scratch, float *y)
{
    const size_t pixels = (size_t)g->out_h * g->out_w;
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_sample = pixels * g->out_c;
    float *col = scratch;                                  /* (pixels, in_c kh kw) */
    float *t = scratch + pixels * ((size_t)g->in_c * g->kh * g->kw); /* (pixels, out_c) */
    float *tile = t + pixels * g->out_c;                   /* (in_c kh kw, DCZ_SPMM_TILE) */
    for (size_t b = 0; b < batch; b++) {
        dcz_im2col(g, x + b * in_sample, col);
        if (ref) dcz_spmm_ref(s, bias, col, pixels, t);
        else dcz_spmm(s, bias, col, pixels, t, tile);
        float *yb = y + b * out_sample;
        for (uint32_t oc = 0; oc < g->out_c; oc++)
            for (size_t p = 0; p < pixels; p++) yb[oc * pixels + p] = t[p * g->out_c + oc];
    }
}

int dcz_conv2d_pick_dense_im2col(const dcz_conv_geom *g)
{
    return dcz_conv_groups(g) == 1 && dense_col_floats(g) <= DCZ_CONV_SCRATCH_MAX;
}

int dcz_conv2d_pick_expand(const dcz_conv_geom *g, uint64_t nnz)
{
    const double weights = (double)g->out_c * g->in_c * g->kh * g->kw;
    return dcz_conv2d_pick_dense_im2col(g) && (double)nnz >= DCZ_CONV_DENSE_MIN_DENSITY * weights;
}

void dcz_conv_inside_cols(const dcz_conv_geom *g, uint32_t kx, uint32_t *lo, uint32_t *hi)
{
    const int64_t off = (int64_t)kx - g->pw;
    *lo = *hi = 0;
    for (uint32_t ox = 0; ox < g->out_w; ox++) {
        const int64_t ix = (int64_t)ox * g->sw + off;
        if (ix < 0) *lo = ox + 1;
        else if (ix < g->in_w) *hi = ox + 1;
    }
    if (*hi < *lo) *hi = *lo;
}

/* r[i] = xr[i sw] for i < n: a row of patches taken from an input row */
typedef void (*gather_fn)(const float *xr, uint32_t sw, uint32_t n, float *r);

static void gather_ref(const float *xr, uint32_t sw, uint32_t n, float *r)
{
    if (sw == 1) memcpy(r, xr, n * sizeof *r);
    else
        for (uint32_t i = 0; i < n; i++) r[i] = xr[(size_t)i * sw];
}

static void im2col_k_rows(const dcz_conv_geom *g, const float *x, float *col, size_t ldb, gather_fn gather)
{
    const size_t pixels = (size_t)g->out_h * g->out_w;
    for (uint32_t ic = 0; ic < g->in_c; ic++)
        for (uint32_t ky = 0; ky < g->kh; ky++)
            for (uint32_t kx = 0; kx < g->kw; kx++) {
                float *row = col + (((size_t)ic * g->kh + ky) * g->kw + kx) * ldb;
                const int64_t off = (int64_t)kx - g->pw;
                uint32_t lo, hi;
                dcz_conv_inside_cols(g, kx, &lo, &hi);
                for (uint32_t oy = 0; oy < g->out_h; oy++) {
                    float *r = row + (size_t)oy * g->out_w;
                    const int64_t iy = (int64_t)oy * g->sh + ky - g->ph;
                    if (iy < 0 || iy >= g->in_h) {
                        memset(r, 0, g->out_w * sizeof *r);
                        continue;
                    }
                    const float *xr = x + ((size_t)ic * g->in_h + (size_t)iy) * g->in_w;
                    for (uint32_t ox = 0; ox < lo; ox++) r[ox] = 0.0f;
                    if (hi > lo) gather(xr + ((int64_t)lo * g->sw + off), g->sw, hi - lo, r + lo);
                    for (uint32_t ox = hi; ox < g->out_w; ox++) r[ox] = 0.0f;
                }
                for (size_t p = pixels; p < ldb; p++) row[p] = 0.0f;
            }
}

void dcz_im2col_k_ref(const dcz_conv_geom *g, const float *x, float *col, size_t ldb)
{
    im2col_k_rows(g, x, col, ldb, gather_ref);
}

#ifdef DCZ_X86
/* gather_ref at stride 2 by vectors: outputs i .. i + 15 from the 31 cells
 * at 2 i, the even lanes of two loads, masked to the row's cells (up to 2
 * (n - 1)), never read past them. The 1 x 1 projections at stride 2 of
 * RegNetX-400MF and ResNet-50 took their patches by scalars, 32 x 56 x 56
 * of them about the time of the product. */
__attribute__((target("avx512f"))) static void gather__avx512(const float *xr, uint32_t sw, uint32_t n, float *r)
{
    if (sw != 2) {
        gather_ref(xr, sw, n, r);
        return;
    }
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const size_t cells = 2 * (size_t)n - 1;
    for (uint32_t i = 0; i < n; i += 16) {
        const size_t at = 2 * (size_t)i, left = cells - at;
        const __mmask16 m0 = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        const __mmask16 m1 = left >= 32 ? (__mmask16)0xFFFF : left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
        const __m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m0, xr + at), even,
                                                _mm512_maskz_loadu_ps(m1, xr + at + 16));
        if (n - i >= 16) _mm512_storeu_ps(r + i, v);
        else _mm512_mask_storeu_ps(r + i, (__mmask16)((1u << (n - i)) - 1), v);
    }
}
#endif

/* dcz_im2col_k where stride 1 keeps the width (in_w == out_w, "same"
 * padding, 1x1): an output plane is its input plane shifted, so the inside
 * rows come in one copy, and the columns that wrapped around a row's end
 * are then zeroed. */
static void im2col_k_planes(const dcz_conv_geom *g, const float *x, float *col, size_t ldb)
{
    const size_t W = g->out_w, plane = (size_t)g->in_h * W;
    for (uint32_t ic = 0; ic < g->in_c; ic++)
        for (uint32_t ky = 0; ky < g->kh; ky++)
            for (uint32_t kx = 0; kx < g->kw; kx++) {
                float *row = col + (((size_t)ic * g->kh + ky) * g->kw + kx) * ldb;
                const int64_t off = (int64_t)kx - g->pw, dy = (int64_t)ky - g->ph;
                /* the output rows whose input row oy + dy is inside: ylo .. yhi - 1 */
                const int64_t ylo = dy < 0 ? -dy : 0;
                const int64_t yhi = (int64_t)g->in_h - dy < g->out_h ? (int64_t)g->in_h - dy : g->out_h;
                if (yhi <= ylo) {
                    memset(row, 0, ldb * sizeof *row);
                    continue;
                }
                memset(row, 0, (size_t)ylo * W * sizeof *row);
                const int64_t start = (ylo + dy) * (int64_t)W + off, len = (yhi - ylo) * (int64_t)W;
                /* what falls before or after the plane lands in wrapped columns */
                const int64_t first = start < 0 ? -start : 0;
                const int64_t last = start + len > (int64_t)plane ? start + len - (int64_t)plane : 0;
                memcpy(row + ylo * W + first, x + (size_t)ic * plane + (start + first),
                       (size_t)(len - first - last) * sizeof *row);
                for (int64_t oy = ylo; oy < yhi; oy++) {
                    float *r = row + oy * W;
                    if (off < 0) memset(r, 0, (size_t)-off * sizeof *r);
                    else if (off > 0) memset(r + W - (size_t)off, 0, (size_t)off * sizeof *r);
                }
                memset(row + yhi * W, 0, (ldb - (size_t)yhi * W) * sizeof *row);
            }
}

void dcz_im2col_k(const dcz_conv_geom *g, const float *x, float *col, size_t ldb)
{
    if (g->sh == 1 && g->sw == 1 && g->in_w == g->out_w) im2col_k_planes(g, x, col, ldb);
#ifdef DCZ_X86
    else if (g->sw == 2 && dcz_isa_supported(DCZ_ISA_AVX512)) im2col_k_rows(g, x, col, ldb, gather__avx512);
#endif
    else dcz_im2col_k_ref(g, x, col, ldb);
}

/* Whether g's patches are its input as it lies: a 1 x 1 window at stride 1
 * without padding, whose planes dcz_gemm_f32 reads as B's rows, unpadded.
 * The copy into rows padded to whole vectors that it saves was about 1.5%
 * of the MobileNetV2-style preset at batch 64 over 28 x 28 planes, and
 * every layer over 14 x 14 and 7 x 7 made it (bench/cpu-profile.md). */
static int patches_are_input(const dcz_conv_geom *g)
{
    return dcz_conv_pointwise(g);
}

/* Rows [lo, hi) of part `part` of a dense product over one sample's
 * patches (dcz_conv2d_dense_im2col_pool). */
typedef struct gemm_job {
    const dcz_act *act;
    int ref;
    uint32_t rows, k, parts;
    size_t pixels, ldb;
    const float *w, *bias, *col;
    float *y;
} gemm_job;

static void gemm_part(void *ctx, uint32_t part)
{
    const gemm_job *j = ctx;
    uint32_t lo, hi;
    dcz_part_range(j->rows, part, j->parts, &lo, &hi);
    if (lo == hi) return;
    const float *w = j->w + (size_t)lo * j->k, *bias = j->bias ? j->bias + lo : NULL;
    float *y = j->y + (size_t)lo * j->pixels;
    if (j->ref) dcz_gemm_f32_act_ref(j->act, hi - lo, j->pixels, j->k, w, j->k, j->col, j->ldb, bias, NULL, y, j->pixels);
    else dcz_gemm_f32_act(j->act, hi - lo, j->pixels, j->k, w, j->k, j->col, j->ldb, bias, NULL, y, j->pixels);
}

int dcz_conv2d_dense_splits(const dcz_conv_geom *g)
{
    return g->out_c >= 2 &&
           (uint64_t)g->out_c * g->out_h * g->out_w * g->in_c * g->kh * g->kw >= DCZ_SPLIT_MACS;
}

void dcz_conv2d_dense_im2col_pool(dcz_pool *pool, const dcz_conv_geom *g, const float *w, const float *bias,
                                  const float *x, size_t batch, int ref, const dcz_act *act, float *scratch,
                                  float *y)
{
    const int direct = patches_are_input(g);
    const size_t pixels = (size_t)g->out_h * g->out_w, ldb = direct ? pixels : dcz_gemm_ldb(pixels);
    const uint32_t k = g->in_c * g->kh * g->kw, parts = pool ? dcz_pool_threads(pool) : 1;
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_sample = pixels * g->out_c;
    for (size_t b = 0; b < batch; b++) {
        const float *col = scratch;
        if (direct) col = x + b * in_sample;
        else if (ref) dcz_im2col_k_ref(g, x + b * in_sample, scratch, ldb);
        else dcz_im2col_k(g, x + b * in_sample, scratch, ldb);
        gemm_job j = { act, ref, g->out_c, k, parts, pixels, ldb, w, bias, col, y + b * out_sample };
        if (parts > 1) dcz_pool_run(pool, gemm_part, &j);
        else gemm_part(&j, 0);
    }
}

/* ---- 1 x 1 convolutions by pixel rows ------------------------------------- */

void dcz_conv_weights_by_column(const float *w, uint32_t rows, uint32_t cols, float *wt)
{
    const size_t ldb = dcz_gemm_ldb(rows);
    dcz_transpose_planes(w, cols, rows, cols, wt, ldb);
    for (uint32_t col = 0; col < cols; col++)
        for (size_t r = rows; r < ldb; r++) wt[col * ldb + r] = 0.0f;
}

/* the rows of the panel of weights from row c0 (its output channels) */
static uint32_t panel_width(uint32_t out_c, uint32_t c0)
{
    return out_c - c0 < DCZ_PIXELS_PANEL ? out_c - c0 : DCZ_PIXELS_PANEL;
}

void dcz_conv_weights_by_panel(const float *w, uint32_t rows, uint32_t cols, float *wp)
{
    for (uint32_t r0 = 0; r0 < rows; r0 += DCZ_PIXELS_PANEL)
        dcz_conv_weights_by_column(w + (size_t)r0 * cols, panel_width(rows, r0),
                                   cols, wp + (size_t)cols * r0);
}

int dcz_conv2d_pick_pixels(const dcz_conv_geom *g)
{
    return pixels_geom(g) && pixels_floats(g) <= DCZ_CONV_SCRATCH_MAX;
}

/* Pixel rows where the product by planes pads its vectors of pixels by
 * more than PIXELS_PAD times what the product by pixels pads its vectors
 * of output channels, on planes of at most PIXELS_MAX pixels, where the
 * two transposes cost little against the product, and weights of at most
 * PIXELS_MAX_BYTES transposed. One core of an AMD EPYC (Zen 5),
 * dcz_gemm_f32 alone (us): 400 -> 400 over 7 x 7 75.8 by planes, 60.8 by
 * pixels; 512 -> 2048 504 and 420; 160 -> 960 74.7 and 57.5; over 14 x 14
 * (13 vectors for 196 pixels) 4-10% apart, which the transposes take back.
 * In the networks (dcz bench --per-layer, least of three alternated
 * rounds), over 7 x 7: RegNetX-400MF's 400 -> 400 93-100 us by planes, the
 * network 0.92 of the time by pixels; 1152 -> 192 141 against 128 us, 1152
 * -> 320 225 and 202 (1.5 MB of weights), 128 -> 800 83 and 72. Weights
 * past the second-level cache (1 MB there) stream from huge pages
 * (dcz_walked_alloc): MobileNetV2's 320 -> 1280 (1.6 MB) 280 against 228
 * us, ResNet-50's 512 -> 2048 and back (4 MB) 740-796 against 599-668; the
 * networks 0.97-1.01 and 0.97-1.0 of the time (dcz bench medians of
 * alternated runs in both orders). On pages of 4 KB the product by pixels
 * had streamed them slower: 320 -> 1280 0.97-1.03 of the time, 464 -> 1024
 * 1.12. And
 * layers of at least PIXELS_MACS multiply-adds, where the transposes and
 * the product's short rows of channels cost little: the
 * MobileNetV2-style preset's 144 -> 32 over 7 x 7 (225,792 of them) took
 * 4.6 us by pixel rows, 2.8 on the shift form. At a stride, the planes
 * subsampled first (dcz_im2col_k), where the product by planes ran on the
 * same patches (one core of an AMD EPYC, Zen 5, dcz bench --per-layer in
 * the networks, least of alternated rounds): ResNet-50's 1024 -> 2048 at
 * stride 2 over 14 x 14 (8 MB of weights) 1357-1406 -> 1060-1095 us, the
 * model 0.98-0.99 of the time (medians of alternated runs in both orders);
 * ResNet-18's 256 -> 512 89 -> 81 us; RegNetX-400MF's 160 -> 400 45 ->
 * 42.5, the model within its noise.
 *
 * And on planes of up to PIXELS_NARROW_MAX pixels, the layers that narrow
 * by PIXELS_NARROW or more (output rows short against the input's, so
 * that the product's transpose costs little), whatever the pad: over 14 x
 * 14 (the same host and method), ResNet-50's 1024 -> 256 508-520 ->
 * 423-433 us, 1024 -> 512 1029-1041 -> 852-854; DenseNet-121's 256..992 ->
 * 128 15-22% less; MobileNetV2's 384 -> 64 44 -> 40, 576 -> 96 98 -> 89;
 * EfficientNet-B0's 672 -> 112 143 -> 122. The models: ResNet-50 and
 * DenseNet-121 0.98 of the time at one thread and at two, MobileNetV2,
 * EfficientNet-B0 and SqueezeNet 1.1 within their noise (medians of
 * alternated runs in both orders). Not the others: the layers that widen
 * lost (MobileNetV2's 64 -> 384 45 -> 51 us, EfficientNet-B0's 112 -> 672
 * 150 -> 156, SqueezeNet's classifier 512 -> 1000 over 13 x 13 693 ->
 * 712), 160 -> 160 over 14 x 14 (RegNetX-400MF) ran the same, and over 28
 * x 28 the narrowing ones lost too (DenseNet-121's 256..480 -> 128 3-4%,
 * its 512 -> 256 824 -> 993 us). Fitted on this AMD host alone. */
#define PIXELS_PAD 1.15
#define PIXELS_MAX 64
#define PIXELS_MAX_BYTES (8u << 20)
#define PIXELS_MACS (1u << 21)
#define PIXELS_NARROW 2u
#define PIXELS_NARROW_MAX 196
int dcz_conv2d_pixels_rule(const dcz_conv_geom *g)
{
    const size_t pixels = (size_t)g->out_h * g->out_w;
    const int few = pixels <= PIXELS_MAX &&
                    (double)dcz_gemm_ldb(pixels) * g->out_c > PIXELS_PAD * (double)dcz_gemm_ldb(g->out_c) * pixels;
    const int narrows = pixels <= PIXELS_NARROW_MAX && g->in_c >= PIXELS_NARROW * g->out_c;
    return dcz_conv2d_pick_pixels(g) && (few || narrows) &&
           (uint64_t)g->in_c * dcz_gemm_ldb(g->out_c) * sizeof(float) <= PIXELS_MAX_BYTES &&
           (uint64_t)g->in_c * g->out_c * pixels >= PIXELS_MACS;
}

/* Part `part` of samples by pixel rows: its pixel rows (every output
 * channel) or its panels of output channels (every pixel row), each
 * panel's product for every sample in turn (the panel's weights read from
 * memory once, then from the caches), its cells of the sample's output
 * planes after each */
typedef struct pixels_job {
    const dcz_act *act;
    uint32_t in_c, out_c, parts;
    size_t pixels, ldx;   /* ldx: x's planes apart */
    size_t batch, x_sample, y_sample;   /* samples, and theirs apart in x and in y */
    int by_panels;        /* the parts split the output channels' panels, not the pixels */
    const float *wt, *bias, *x;
    float *t, *y;
} pixels_job;

static void pixels_part(void *ctx, uint32_t part)
{
    const pixels_job *j = ctx;
    size_t lo = 0, hi = j->pixels, c_lo = 0, c_hi = j->out_c;
    if (j->by_panels) dcz_part_units(j->out_c, DCZ_PIXELS_PANEL, part, j->parts, &c_lo, &c_hi);
    else dcz_part_units(j->pixels, 1, part, j->parts, &lo, &hi);
    if (lo >= hi || c_lo >= c_hi) return;
    float *t = j->t + (size_t)lo * j->out_c;
    for (uint32_t c0 = (uint32_t)c_lo; c0 < c_hi; c0 += DCZ_PIXELS_PANEL) {
        const uint32_t width = panel_width(j->out_c, c0);
        const float *w = j->wt + (size_t)j->in_c * c0;
        /* the next panel's weights asked for as the last sample's product
         * runs (the last panel, and the samples before: the panel's own
         * blocks of k alone) */
        const uint32_t next = c0 + DCZ_PIXELS_PANEL < c_hi ? c0 + DCZ_PIXELS_PANEL : c0;
        const size_t next_bytes =
            next == c0 ? 0 : (size_t)j->in_c * dcz_gemm_ldb(panel_width(j->out_c, next)) * sizeof(float);
        for (size_t b = 0; b < j->batch; b++) {
            const int last = b + 1 == j->batch;
            dcz_gemm_f32_strided(j->act, hi - lo, width, j->in_c, j->x + b * j->x_sample + lo, 1, j->ldx, w,
                                 dcz_gemm_ldb(width), NULL, j->bias + c0, t + c0, j->out_c,
                                 last ? j->wt + (size_t)j->in_c * next : w, last ? next_bytes : 0);
            dcz_transpose_planes(t + c0, j->out_c, hi - lo, width, j->y + b * j->y_sample + c0 * j->pixels + lo,
                                 j->pixels);
        }
    }
}

/* Whether parts threads split g's pixel rows by panels of output channels
 * (each thread reading its panels' weights alone) rather than by pixels
 * (each thread reading every weight): where the largest part's channels
 * are within PIXELS_PANELS_SKEW of an even share. At two threads, batch 1
 * (one core of an AMD EPYC, Zen 5, dcz bench --per-layer, least of
 * alternated rounds), by panels against by pixels: ResNet-50's 12 such
 * layers 3969 -> 3496 us, DenseNet-121's 41 2712 -> 2536; the model
 * ResNet-50 0.97 of the time (medians of alternated runs in both orders),
 * the others within their noise. Parts a panel apart lost: MobileNetV2's
 * 960 -> 320 (three panels and two) 70 -> 84 us; split by single vectors
 * of channels instead, which leaves narrow tiles, RegNetX-400MF's 400 ->
 * 400 layers lost 8%. */
#define PIXELS_PANELS_SKEW 1.1
static int pixels_by_panels(const dcz_conv_geom *g, uint32_t parts)
{
    const uint32_t panels = (g->out_c + DCZ_PIXELS_PANEL - 1) / DCZ_PIXELS_PANEL;
    if (parts < 2 || panels < parts) return 0;
    const uint32_t most = (panels + parts - 1) / parts * DCZ_PIXELS_PANEL;
    return (double)(most < g->out_c ? most : g->out_c) * parts <= PIXELS_PANELS_SKEW * g->out_c;
}

void dcz_conv2d_pixels_pool(dcz_pool *pool, const dcz_conv_geom *g, const float *wt, const float *bias,
                            const float *x, size_t batch, const dcz_act *act, float *scratch, float *y)
{
    const size_t pixels = (size_t)g->out_h * g->out_w, in_sample = (size_t)g->in_c * g->in_h * g->in_w;
    const uint32_t parts = pool ? dcz_pool_threads(pool) : 1;
    /* a stride: the input's patches (its planes subsampled) first, then
     * the product (pixels, out_c) after them */
    const int direct = dcz_conv_pointwise(g), by_panels = pixels_by_panels(g, parts);
    const size_t ldx = direct ? pixels : dcz_gemm_ldb(pixels);
    float *t = direct ? scratch : scratch + dense_col_floats(g);
    const size_t out_sample = pixels * g->out_c;
    if (direct) {   /* every sample at once, each panel's weights read once */
        pixels_job j = { act, g->in_c, g->out_c, parts, pixels, ldx, batch, in_sample, out_sample, by_panels,
                         wt, bias, x, t, y };
        dcz_pool_run(pool, pixels_part, &j);
        return;
    }
    for (size_t b = 0; b < batch; b++) {   /* each sample's patches in turn */
        dcz_im2col_k(g, x + b * in_sample, scratch, ldx);
        pixels_job j = { act, g->in_c, g->out_c, parts, pixels, ldx, 1, 0, 0, by_panels, wt, bias, scratch, t,
                         y + b * out_sample };
        dcz_pool_run(pool, pixels_part, &j);
    }
}

void dcz_conv2d_dense_im2col_act(const dcz_conv_geom *g, const float *w, const float *bias, const float *x,
                                 size_t batch, int ref, const dcz_act *act, float *scratch, float *y)
{
    dcz_conv2d_dense_im2col_pool(NULL, g, w, bias, x, batch, ref, act, scratch, y);
}

void dcz_conv2d_dense_im2col(const dcz_conv_geom *g, const float *w, const float *bias, const float *x,
                             size_t batch, int ref, float *scratch, float *y)
{
    dcz_conv2d_dense_im2col_act(g, w, bias, x, batch, ref, NULL, scratch, y);
}

/* ---- pooling ---------------------------------------------------------------- */

void dcz_window_cells(uint32_t o, uint32_t stride, uint32_t pad, uint32_t k, uint32_t n,
                      uint32_t *lo, uint32_t *hi)
{
    int64_t start = (int64_t)o * stride - pad, end = start + k;
    *lo = start < 0 ? 0 : (uint32_t)start;
    *hi = end > n ? n : (uint32_t)end;
}

void dcz_maxpool_ref(const dcz_conv_geom *g, const float *x, size_t batch, float *y)
{
    const size_t planes = batch * g->in_c;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++)
            for (uint32_t ox = 0; ox < g->out_w; ox++) {
                uint32_t y0, y1, x0, x1;
                dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
                dcz_window_cells(ox, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
                float m = -INFINITY;
                for (uint32_t ix = x0; ix < x1; ix++)
                    for (uint32_t iy = y0; iy < y1; iy++)
                        if (xp[(size_t)iy * g->in_w + ix] > m) m = xp[(size_t)iy * g->in_w + ix];
                *y++ = m;
            }
    }
}

/* Max pooling in vectors: the outputs of a row whose windows lie inside the
 * image across (interior columns) take one vector lane each, the cells of
 * their windows folded in the reference's order (column by column, each top
 * to bottom, each kept only when greater: max_ps(cell, m)), so NaN and the
 * sign of a zero come out as there; the other columns run the reference's
 * loop. A fold kept only when greater is associative over consecutive runs
 * of that order: a window column's maximum, taken alone, then folded into
 * the columns before it gives the same bits. */

void dcz_pool_interior_cols(const dcz_conv_geom *g, uint32_t *lo, uint32_t *hi)
{
    const uint32_t l = g->pw ? (g->pw + g->sw - 1) / g->sw : 0;
    const uint32_t h = g->in_w + g->pw < g->kw ? 0 : (g->in_w + g->pw - g->kw) / g->sw + 1;
    *lo = l < g->out_w ? l : g->out_w;
    *hi = h < g->out_w ? h : g->out_w;
    if (*hi < *lo) *hi = *lo;
}

/* yp (out_h, out_w), interior columns only, = the max pool of plane xp;
 * room floats from yp may be written (cells past the plane's interior
 * are rewritten later by dcz_maxpool_isa) */
typedef void (*maxplane_fn)(const dcz_conv_geom *g, uint32_t lo, uint32_t hi, const float *xp, float *yp,
                            size_t room);

static void maxplane(const dcz_conv_geom *g, uint32_t lo, uint32_t hi, const float *xp, float *yp, size_t room)
{
    (void)room;
    for (uint32_t oy = 0; oy < g->out_h; oy++) {
        uint32_t y0, y1;
        dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
        for (uint32_t ox = lo; ox < hi; ox++) {
            const float *r = xp + (size_t)ox * g->sw - g->pw;
            float m = -INFINITY;
            for (uint32_t kx = 0; kx < g->kw; kx++)
                for (uint32_t iy = y0; iy < y1; iy++)
                    if (r[(size_t)iy * g->in_w + kx] > m) m = r[(size_t)iy * g->in_w + kx];
            yp[(size_t)oy * g->out_w + ox] = m;
        }
    }
}

#ifdef DCZ_X86
/* 3 x 3 windows at stride 2 (the pools after the first convolution of
 * ResNets and SqueezeNet), the interior columns lo .. hi - 1 of each row, n
 * = hi - lo >= 8: 8 outputs a vector, whose 17 cells (c[0] .. c[16]) four
 * plain loads hold, all inside the windows: c[0..7] and c[8..15] give
 * each window's first and second columns (their even and odd floats, by
 * the in-lane shuffle as below), c[2..9] and c[9..16] its third (the even
 * floats of the first, the odd of the second). The four loads of each
 * window row are folded into four column maxima first (top to bottom,
 * from -infinity: NaN never wins), then the three columns dealt out and
 * folded left to right: the reference's order, three shuffles an output
 * vector where a shuffle a cell took them before. A row's last vector
 * overlaps the one before (recomputing its outputs, the same bits) rather
 * than masked. */
__attribute__((target("avx2")))
static void maxplane3s2__avx2(const dcz_conv_geom *g, uint32_t lo, uint32_t hi, const float *xp, float *yp)
{
    const uint32_t n = hi - lo;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (uint32_t oy = 0; oy < g->out_h; oy++) {
        uint32_t y0, y1;
        dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
        for (uint32_t i = 0; i < n; i += 8) {
            const uint32_t at = i + 8 <= n ? i : n - 8;
            const float *r = xp + ((size_t)lo + at) * 2 - g->pw;
            __m256 a = ninf, b = ninf, a2 = ninf, b2 = ninf;
            for (uint32_t iy = y0; iy < y1; iy++) {
                const float *c = r + (size_t)iy * g->in_w;
                a = _mm256_max_ps(_mm256_loadu_ps(c), a);
                b = _mm256_max_ps(_mm256_loadu_ps(c + 8), b);
                a2 = _mm256_max_ps(_mm256_loadu_ps(c + 2), a2);
                b2 = _mm256_max_ps(_mm256_loadu_ps(c + 9), b2);
            }
            /* the lanes in the shuffle's order, outputs 0 1 4 5 2 3 6 7 */
            __m256 m = _mm256_shuffle_ps(a, b, 0x88);
            m = _mm256_max_ps(_mm256_shuffle_ps(a, b, 0xDD), m);
            m = _mm256_max_ps(_mm256_shuffle_ps(a2, b2, 0xD8), m);
            m = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8));
            _mm256_storeu_ps(yp + (size_t)oy * g->out_w + lo + at, m);
        }
    }
}

/* The same in AVX-512, 16 outputs a vector over c[0] .. c[32]: c[0..15]
 * and c[16..31] for the first two columns (dealt to the lanes by a permute
 * of the two vectors) and c[32] alone (a broadcast), whose maxima down the
 * rows give the third column: the first column's lanes 1 .. 15 and c[32]'s,
 * by a third permute. Three loads and three maxima a window row where the
 * AVX2 form takes four; n >= 16. One core of an AMD EPYC (Zen 4), least of
 * 3000 runs in cache, a permute a cell before: SqueezeNet 1.1's 64 x 111 x
 * 111 and 128 x 55 x 55 pools 143 -> 85 and 76 -> 46 us, ResNet's 64 x 112
 * x 112 (padded) 167 -> 103. */
__attribute__((target("avx512f")))
static void maxplane3s2__avx512(const dcz_conv_geom *g, uint32_t lo, uint32_t hi, const float *xp, float *yp)
{
    const uint32_t n = hi - lo;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i next = _mm512_set_epi32(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (uint32_t oy = 0; oy < g->out_h; oy++) {
        uint32_t y0, y1;
        dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
        for (uint32_t i = 0; i < n; i += 16) {
            const uint32_t at = i + 16 <= n ? i : n - 16;
            const float *r = xp + ((size_t)lo + at) * 2 - g->pw;
            __m512 a = ninf, b = ninf, q = ninf;
            for (uint32_t iy = y0; iy < y1; iy++) {
                const float *c = r + (size_t)iy * g->in_w;
                a = _mm512_max_ps(_mm512_loadu_ps(c), a);
                b = _mm512_max_ps(_mm512_loadu_ps(c + 16), b);
                q = _mm512_max_ps(_mm512_set1_ps(c[32]), q);
            }
            const __m512 first = _mm512_permutex2var_ps(a, even, b);
            __m512 m = _mm512_max_ps(_mm512_permutex2var_ps(a, odd, b), first);
            m = _mm512_max_ps(_mm512_permutex2var_ps(first, next, q), m);
            _mm512_storeu_ps(yp + (size_t)oy * g->out_w + lo + at, m);
        }
    }
}

/* the mask of lanes 0 .. n - 1 of 16 (all 16 for n >= 16): the shift stays
 * inside the type's width for any n */
static inline __mmask16 first16(uint32_t n)
{
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

__attribute__((target("avx512f")))
static void maxplane__avx512(const dcz_conv_geom *g, uint32_t lo, uint32_t hi, const float *xp, float *yp,
                             size_t room)
{
    (void)room;
    const uint32_t sw = g->sw, kw = g->kw, n = hi - lo;
    if (sw == 2 && kw == 3 && n >= 8) {
        if (n >= 16) maxplane3s2__avx512(g, lo, hi, xp, yp);
        else maxplane3s2__avx2(g, lo, hi, xp, yp);
        return;
    }
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i step = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)sw));
    /* stride 2 over windows of at most 2 columns: the cells of 16 outputs
     * lie in 32 consecutive floats, dealt to the lanes by a permute */
    const int pairs = sw == 2 && kw <= 2;
    const __m512i even = _mm512_add_epi32(lane, lane), odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (uint32_t oy = 0; oy < g->out_h; oy++) {
        uint32_t y0, y1;
        dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
        for (uint32_t i = 0; i < n; i += 16) {
            const uint32_t lanes = n - i >= 16 ? 16 : n - i;
            const __mmask16 k = first16(lanes);
            /* pairs: the 2 (lanes - 1) + kw <= 32 cells, the first 16 in
             * k0, the rest in k1 (computed only there: wider windows
             * span more cells than two masks hold) */
            __mmask16 k0 = 0, k1 = 0;
            if (pairs) {
                const uint32_t cells = 2 * (lanes - 1) + kw;
                k0 = first16(cells);
                k1 = cells > 16 ? first16(cells - 16) : 0;
            }
            const float *r = xp + ((size_t)lo + i) * sw - g->pw;
            const __m512 ninf = _mm512_set1_ps(-INFINITY);
            __m512 m = ninf;
            if (pairs) {
                /* each cell's maximum down the window's rows, then the
                 * window's columns dealt out and folded */
                __m512 a = ninf, b = ninf;
                for (uint32_t iy = y0; iy < y1; iy++) {
                    const float *c = r + (size_t)iy * g->in_w;
                    a = _mm512_max_ps(_mm512_maskz_loadu_ps(k0, c), a);
                    b = _mm512_max_ps(_mm512_maskz_loadu_ps(k1, c + 16), b);
                }
                m = _mm512_permutex2var_ps(a, even, b);
                if (kw == 2) m = _mm512_max_ps(_mm512_permutex2var_ps(a, odd, b), m);
            } else {
                for (uint32_t kx = 0; kx < kw; kx++)
                    for (uint32_t iy = y0; iy < y1; iy++) {
                        const float *c = r + (size_t)iy * g->in_w;
                        const __m512 v = sw == 1 ? _mm512_maskz_loadu_ps(k, c + kx)
                                                 : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, step, c + kx, 4);
                        m = _mm512_max_ps(v, m);
                    }
            }
            _mm512_mask_storeu_ps(yp + (size_t)oy * g->out_w + lo + i, k, m);
        }
    }
}
#endif

#ifdef DCZ_X86
/* maxplane__avx512 in AVX2, 8 outputs a step: at stride 1 a masked load a
 * window column; at stride 2 over windows of at most 2 columns, the 16
 * cells of 8 outputs in two masked loads, whose even and odd floats two
 * shuffles and a permute each deal to the lanes; other strides by the
 * scalar loop. max(v, m) keeps m where v is NaN, as the reference's
 * comparison does. Where AVX2 ran the scalar loop, one core of an AMD EPYC
 * (Zen 3), dcz bench best medians of alternated runs at batch 1:
 * compressed LeNet-5 63.4 -> 56.6 us, conv-heavy CNN 355 -> 330.
 * Masked loads and stores cost several plain ones on Zen 3, so a vector
 * whose cells all lie in the row loads them plainly, and a row's last
 * vector is stored whole while its 8 lanes end inside the call's output
 * (room floats from yp): the lanes past the row land on cells stored later
 * (the row's edge columns, the next rows, the next plane). 20 planes of 24
 * x 24 (LeNet-5's pool1): 4.68 -> 3.84 us. At stride 2 each window row's
 * even and odd floats stay in the in-lane shuffle's order and one permute
 * of the maximum puts them in order (a permute per row before); with the
 * planes stacked into one call (dcz_maxpool_isa), LeNet-5 batch 1 per
 * layer, best of 3000 runs: pool1 4.0 -> 3.0 us, pool2 2.24 -> 1.47.
 * 2x2 windows at stride 2 inside the image, the common pool, take a path
 * of their own: no masks, no window bounds per row, a row's last vector
 * overlapping the one before it (recomputing its cells, the same bits)
 * rather than masked, and rows of 4 outputs over rows of 8 cells two
 * output rows a vector: pool1 3.0 -> 1.1 us, pool2 1.5 -> 0.23; the
 * compressed LeNet-5 38.1 -> 35.0 us. */
__attribute__((target("avx2")))
static void maxplane__avx2(const dcz_conv_geom *g, uint32_t lo, uint32_t hi, const float *xp, float *yp,
                           size_t room)
{
    const uint32_t sw = g->sw, kw = g->kw, n = hi - lo;
    if (sw == 2 && kw == 3 && n >= 8) {
        maxplane3s2__avx2(g, lo, hi, xp, yp);
        return;
    }
    if (sw > 2 || (sw == 2 && kw > 2)) {
        maxplane(g, lo, hi, xp, yp, room);
        return;
    }
    const int tile2 = sw == 2 && kw == 2 && g->sh == 2 && g->kh == 2 && g->ph == 0 && g->pw == 0 &&
                      2 * (size_t)g->out_h <= g->in_h;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    uint32_t oy0 = 0;
    if (tile2 && n == 4 && lo == 0 && g->out_w == 4 && g->in_w == 8) {
        /* rows of 4 outputs over rows of 8 cells: two output rows a vector,
         * the first's input rows in the low cells of each load, the second's
         * in the high (the shuffles' order as below); the last row alone
         * where the rows are odd */
        for (; oy0 + 1 < g->out_h; oy0 += 2) {
            const float *r = xp + (size_t)16 * oy0;
            const __m256 a0 = _mm256_loadu_ps(r), a1 = _mm256_loadu_ps(r + 8);
            const __m256 b0 = _mm256_loadu_ps(r + 16), b1 = _mm256_loadu_ps(r + 24);
            __m256 m = _mm256_max_ps(_mm256_shuffle_ps(a0, b0, 0x88), ninf);
            m = _mm256_max_ps(_mm256_shuffle_ps(a1, b1, 0x88), m);
            m = _mm256_max_ps(_mm256_shuffle_ps(a0, b0, 0xDD), m);
            m = _mm256_max_ps(_mm256_shuffle_ps(a1, b1, 0xDD), m);
            _mm256_storeu_ps(yp + (size_t)4 * oy0, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8)));
        }
    }
    if (tile2 && n >= 8) {
        /* 2 x 2 windows at stride 2 inside the image: two rows a window,
         * whole vectors (a row's last one ends at its last output), the
         * same fold */
        for (uint32_t oy = 0; oy < g->out_h; oy++) {
            const float *r0 = xp + (size_t)2 * oy * g->in_w + 2 * (size_t)lo, *r1 = r0 + g->in_w;
            float *yr = yp + (size_t)oy * g->out_w + lo;
            for (uint32_t i = 0; i < n; i += 8) {
                const uint32_t at = i + 8 <= n ? i : n - 8;
                const __m256 a0 = _mm256_loadu_ps(r0 + 2 * at), b0 = _mm256_loadu_ps(r0 + 2 * at + 8);
                const __m256 a1 = _mm256_loadu_ps(r1 + 2 * at), b1 = _mm256_loadu_ps(r1 + 2 * at + 8);
                __m256 m = _mm256_max_ps(_mm256_shuffle_ps(a0, b0, 0x88), ninf);
                m = _mm256_max_ps(_mm256_shuffle_ps(a1, b1, 0x88), m);
                m = _mm256_max_ps(_mm256_shuffle_ps(a0, b0, 0xDD), m);
                m = _mm256_max_ps(_mm256_shuffle_ps(a1, b1, 0xDD), m);
                _mm256_storeu_ps(yr + at, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8)));
            }
        }
        return;
    }
    for (uint32_t oy = oy0; oy < g->out_h; oy++) {
        uint32_t y0, y1;
        dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
        for (uint32_t i = 0; i < n; i += 8) {
            const uint32_t lanes = n - i >= 8 ? 8 : n - i, cells = 2 * (lanes - 1) + kw;
            const __m256i k = dcz_mask8__avx2(lanes);
            const __m256i k0 = dcz_mask8__avx2(cells >= 8 ? 8 : cells);
            const __m256i k1 = dcz_mask8__avx2(cells > 8 ? cells - 8 : 0);
            const float *r = xp + ((size_t)lo + i) * sw - g->pw;
            __m256 m = ninf;
            if (sw == 2) {
                /* each cell's maximum down the window's rows, then the
                 * columns, the lanes in the shuffle's order, outputs 0 1 4
                 * 5 2 3 6 7 */
                __m256 a = ninf, b = ninf;
                for (uint32_t iy = y0; iy < y1; iy++) {
                    const float *c = r + (size_t)iy * g->in_w;
                    a = _mm256_max_ps(cells >= 8 ? _mm256_loadu_ps(c) : _mm256_maskload_ps(c, k0), a);
                    b = _mm256_max_ps(cells >= 16 ? _mm256_loadu_ps(c + 8)
                                      : cells > 8 ? _mm256_maskload_ps(c + 8, k1) : _mm256_setzero_ps(), b);
                }
                m = _mm256_shuffle_ps(a, b, 0x88);
                if (kw == 2) m = _mm256_max_ps(_mm256_shuffle_ps(a, b, 0xDD), m);
            } else {
                for (uint32_t kx = 0; kx < kw; kx++)
                    for (uint32_t iy = y0; iy < y1; iy++) {
                        const float *c = r + (size_t)iy * g->in_w;
                        m = _mm256_max_ps(lanes == 8 ? _mm256_loadu_ps(c + kx) : _mm256_maskload_ps(c + kx, k), m);
                    }
            }
            if (sw == 2) m = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8));
            const size_t at = (size_t)oy * g->out_w + lo + i;
            if (at + 8 <= room) _mm256_storeu_ps(yp + at, m);
            else _mm256_maskstore_ps(yp + at, k, m);
        }
    }
}
#endif

static maxplane_fn maxplane_variant(dcz_isa isa)
{
    if (isa == DCZ_ISA_REF) return maxplane;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512)) return maxplane__avx512;
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) return maxplane__avx2;
#endif
    return NULL;
}

int dcz_maxpool_isa(dcz_isa isa, const dcz_conv_geom *g, const float *x, size_t batch, float *y)
{
    const maxplane_fn plane = maxplane_variant(isa);
    if (!plane) return 0;
    uint32_t lo, hi;
    dcz_pool_interior_cols(g, &lo, &hi);
    const size_t planes = batch * g->in_c;
    /* where windows tile the rows exactly (no padding above or below, none
     * left over), the planes stacked are one plane of their rows: one call
     * (a call a plane cost about as much as its vectors on small planes:
     * 50 planes of 8 x 8, LeNet-5's pool2) */
    const int stack = g->ph == 0 && g->kh == g->sh && g->in_h == g->out_h * g->sh &&
                      planes * g->in_h <= UINT32_MAX;
    if (stack) {
        dcz_conv_geom t = *g;
        t.in_h = (uint32_t)(planes * g->in_h);
        t.out_h = (uint32_t)(planes * g->out_h);
        plane(&t, lo, hi, x, y, planes * g->out_h * g->out_w);
        if (lo == 0 && hi == g->out_w) return 1;   /* no edge columns */
    }
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * g->in_h * g->in_w;
        float *yp = y + p * g->out_h * g->out_w;
        if (!stack) plane(g, lo, hi, xp, yp, (planes - p) * g->out_h * g->out_w);
        /* the columns whose windows reach past the image */
        for (uint32_t oy = 0; oy < g->out_h; oy++) {
            uint32_t y0, y1;
            dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
            for (uint32_t ox = 0; ox < g->out_w; ox++) {
                if (ox == lo) ox = hi;
                if (ox >= g->out_w) break;
                uint32_t x0, x1;
                dcz_window_cells(ox, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
                float m = -INFINITY;
                for (uint32_t ix = x0; ix < x1; ix++)
                    for (uint32_t iy = y0; iy < y1; iy++)
                        if (xp[(size_t)iy * g->in_w + ix] > m) m = xp[(size_t)iy * g->in_w + ix];
                yp[(size_t)oy * g->out_w + ox] = m;
            }
        }
    }
    return 1;
}

void dcz_maxpool(const dcz_conv_geom *g, const float *x, size_t batch, float *y)
{
    if (!dcz_maxpool_isa(DCZ_ISA_AVX512, g, x, batch, y) && !dcz_maxpool_isa(DCZ_ISA_AVX2, g, x, batch, y))
        dcz_maxpool_isa(DCZ_ISA_REF, g, x, batch, y);
}

/* Part `part` of a max pool over a pool of threads: its planes of every
 * sample's, as one pool of that many channels */
typedef struct maxpool_job {
    const dcz_conv_geom *g;
    const float *x;
    float *y;
    size_t planes;
    uint32_t parts;
} maxpool_job;

static void maxpool_part(void *ctx, uint32_t part)
{
    const maxpool_job *j = ctx;
    size_t lo, hi;
    dcz_part_units(j->planes, 1, part, j->parts, &lo, &hi);
    if (lo == hi) return;
    dcz_conv_geom g = *j->g;
    g.in_c = g.out_c = (uint32_t)(hi - lo);   /* (split: planes within 32 bits) */
    dcz_maxpool(&g, j->x + (size_t)lo * g.in_h * g.in_w, 1, j->y + (size_t)lo * g.out_h * g.out_w);
}

void dcz_maxpool_pool(dcz_pool *pool, const dcz_conv_geom *g, const float *x, size_t batch, float *y)
{
    const size_t planes = batch * g->in_c;
    const int split = pool && planes <= UINT32_MAX && (uint64_t)g->out_c * g->out_h * g->out_w >= DCZ_SPLIT_ELEMS;
    maxpool_job j = { g, x, y, planes, split ? dcz_pool_threads(pool) : 1 };
    dcz_pool_run(split ? pool : NULL, maxpool_part, &j);
}

void dcz_avgpool_ref(const dcz_conv_geom *g, int count_include_pad, const float *x,
                     size_t batch, float *y)
{
    const size_t planes = batch * g->in_c;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++)
            for (uint32_t ox = 0; ox < g->out_w; ox++) {
                uint32_t y0, y1, x0, x1;
                dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
                dcz_window_cells(ox, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
                float sum = 0.0f;
                for (uint32_t iy = y0; iy < y1; iy++)
                    for (uint32_t ix = x0; ix < x1; ix++) sum += xp[(size_t)iy * g->in_w + ix];
                const uint32_t count = count_include_pad ? g->kh * g->kw : (y1 - y0) * (x1 - x0);
                *y++ = sum / (float)count;
            }
    }
}

#ifdef DCZ_X86
/* each output row from its two input rows: their even and odd cells dealt
 * to the lanes by a permute of two vectors each, added from 0 in the
 * reference's order (row 0's two cells, then row 1's), divided by 4 */
__attribute__((target("avx512f")))
static void avg_tile2__avx512(const dcz_conv_geom *g, const float *x, size_t planes, float *y)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512 four = _mm512_set1_ps(4.0f);
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++, y += g->out_w) {
            const float *r0 = xp + (size_t)2 * oy * g->in_w, *r1 = r0 + g->in_w;
            for (uint32_t ox = 0; ox < g->out_w; ox += 16) {
                const uint32_t n = g->out_w - ox < 16 ? g->out_w - ox : 16;
                const __mmask16 k0 = n >= 8 ? (__mmask16)0xFFFF : (__mmask16)((1u << 2 * n) - 1);
                const __mmask16 k1 = n > 8 ? (__mmask16)((1u << (2 * n - 16)) - 1) : 0;
                const __m512 a0 = _mm512_maskz_loadu_ps(k0, r0 + 2 * ox), b0 = _mm512_maskz_loadu_ps(k1, r0 + 2 * ox + 16);
                const __m512 a1 = _mm512_maskz_loadu_ps(k0, r1 + 2 * ox), b1 = _mm512_maskz_loadu_ps(k1, r1 + 2 * ox + 16);
                __m512 s = _mm512_add_ps(_mm512_setzero_ps(), _mm512_permutex2var_ps(a0, even, b0));
                s = _mm512_add_ps(s, _mm512_permutex2var_ps(a0, odd, b0));
                s = _mm512_add_ps(s, _mm512_permutex2var_ps(a1, even, b1));
                s = _mm512_add_ps(s, _mm512_permutex2var_ps(a1, odd, b1));
                _mm512_mask_storeu_ps(y + ox, (__mmask16)((1u << n) - 1), _mm512_div_ps(s, four));
            }
        }
    }
}

/* the same in AVX2, 8 outputs a step: the in-lane shuffles deal the even
 * and odd cells in the order 0 1 4 5 2 3 6 7, one permute of the result
 * puts it in order */
__attribute__((target("avx2")))
static void avg_tile2__avx2(const dcz_conv_geom *g, const float *x, size_t planes, float *y)
{
    const __m256 four = _mm256_set1_ps(4.0f);
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++, y += g->out_w) {
            const float *r0 = xp + (size_t)2 * oy * g->in_w, *r1 = r0 + g->in_w;
            for (uint32_t ox = 0; ox < g->out_w; ox += 8) {
                const uint32_t n = g->out_w - ox < 8 ? g->out_w - ox : 8;
                const __m256i k0 = dcz_mask8__avx2(2 * n), k1 = dcz_mask8__avx2(n > 4 ? 2 * n - 8 : 0);
                const __m256 a0 = _mm256_maskload_ps(r0 + 2 * ox, k0), b0 = _mm256_maskload_ps(r0 + 2 * ox + 8, k1);
                const __m256 a1 = _mm256_maskload_ps(r1 + 2 * ox, k0), b1 = _mm256_maskload_ps(r1 + 2 * ox + 8, k1);
                __m256 s = _mm256_add_ps(_mm256_setzero_ps(), _mm256_shuffle_ps(a0, b0, 0x88));
                s = _mm256_add_ps(s, _mm256_shuffle_ps(a0, b0, 0xDD));
                s = _mm256_add_ps(s, _mm256_shuffle_ps(a1, b1, 0x88));
                s = _mm256_add_ps(s, _mm256_shuffle_ps(a1, b1, 0xDD));
                s = _mm256_div_ps(_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xD8)), four);
                _mm256_maskstore_ps(y + ox, dcz_mask8__avx2(n), s);
            }
        }
    }
}
#endif

int dcz_avgpool_isa(dcz_isa isa, const dcz_conv_geom *g, int count_include_pad, const float *x, size_t batch,
                    float *y)
{
    if (isa == DCZ_ISA_REF) {
        dcz_avgpool_ref(g, count_include_pad, x, batch, y);
        return 1;
    }
#ifdef DCZ_X86
    if (!dcz_pool_tiles2(g)) return 0;
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512)) {
        avg_tile2__avx512(g, x, batch * g->in_c, y);
        return 1;
    }
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2)) {
        avg_tile2__avx2(g, x, batch * g->in_c, y);
        return 1;
    }
#endif
    return 0;
}

void dcz_avgpool(const dcz_conv_geom *g, int count_include_pad, const float *x, size_t batch, float *y)
{
    if (!dcz_avgpool_isa(DCZ_ISA_AVX512, g, count_include_pad, x, batch, y) &&
        !dcz_avgpool_isa(DCZ_ISA_AVX2, g, count_include_pad, x, batch, y))
        dcz_avgpool_ref(g, count_include_pad, x, batch, y);
}

void dcz_global_avgpool_ref(uint32_t channels, uint32_t plane, const float *x, size_t batch,
                            float *y)
{
    const size_t planes = batch * channels;
    for (size_t p = 0; p < planes; p++) y[p] = dcz_mean_one(x + p * plane, plane);
}

/* dcz_mean_one's sixteen sums in the lanes of an AVX-512 vector, or of
 * two AVX2 vectors (lanes 0-7 and 8-15), 16 cells a step, the plane's
 * last cells by a masked load (+0 past the plane), then its folds: the
 * reference's bits. AVX-512 takes four planes side by side, each its own
 * chain of adds. Where the sum ran in cell order (eight planes'
 * cells transposed into the lanes, 24 shuffles per 64 cells, the shuffles
 * bounding it), EfficientNet-B0's 17 means took 437 us a sample on one
 * core of an AMD EPYC (Zen 4), now 104; MobileNetV3-Small's 61 -> 13. */
#ifdef DCZ_X86
/* the last folds of dcz_mean_one from its eight sums s8, and the mean */
__attribute__((target("avx2"), always_inline))
static inline float mean_fold8__avx2(__m256 s8, uint32_t plane)
{
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    return _mm_cvtss_f32(s1) / (float)plane;
}

__attribute__((target("avx512f"), always_inline))
static inline float mean_fold__avx512(__m512 v, uint32_t plane)
{
    return mean_fold8__avx2(_mm256_add_ps(_mm512_castps512_ps256(v),
                                          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))),
                            plane);
}

__attribute__((target("avx512f")))
static void global_avgpool__avx512(size_t planes, uint32_t plane, const float *x, float *y)
{
    const uint32_t full = plane / 16 * 16, rest = plane - full;
    const __mmask16 tail = (__mmask16)((1u << rest) - 1);
    size_t p = 0;
    for (; p + 4 <= planes; p += 4) {
        const float *xp = x + p * plane;
        __m512 a[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) a[k] = _mm512_setzero_ps();
        for (uint32_t i = 0; i < full; i += 16)
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) a[k] = _mm512_add_ps(a[k], _mm512_loadu_ps(xp + (size_t)k * plane + i));
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            if (rest) a[k] = _mm512_add_ps(a[k], _mm512_maskz_loadu_ps(tail, xp + (size_t)k * plane + full));
            y[p + k] = mean_fold__avx512(a[k], plane);
        }
    }
    for (; p < planes; p++) {
        const float *xp = x + p * plane;
        __m512 a = _mm512_setzero_ps();
        for (uint32_t i = 0; i < full; i += 16) a = _mm512_add_ps(a, _mm512_loadu_ps(xp + i));
        if (rest) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(tail, xp + full));
        y[p] = mean_fold__avx512(a, plane);
    }
}

__attribute__((target("avx2")))
static void global_avgpool__avx2(size_t planes, uint32_t plane, const float *x, float *y)
{
    const uint32_t full = plane / 16 * 16, rest = plane - full;
    const __m256i m0 = dcz_mask8__avx2(rest), m1 = dcz_mask8__avx2(rest > 8 ? rest - 8 : 0);
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * plane;
        __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
        for (uint32_t i = 0; i < full; i += 16) {
            a = _mm256_add_ps(a, _mm256_loadu_ps(xp + i));
            b = _mm256_add_ps(b, _mm256_loadu_ps(xp + i + 8));
        }
        if (rest) {
            a = _mm256_add_ps(a, _mm256_maskload_ps(xp + full, m0));
            b = _mm256_add_ps(b, _mm256_maskload_ps(xp + full + 8, m1));
        }
        y[p] = mean_fold8__avx2(_mm256_add_ps(a, b), plane);
    }
}
#endif

void dcz_global_avgpool(uint32_t channels, uint32_t plane, const float *x, size_t batch, float *y)
{
#ifdef DCZ_X86
    if (dcz_isa_supported(DCZ_ISA_AVX512)) {
        global_avgpool__avx512(batch * channels, plane, x, y);
        return;
    }
    if (dcz_isa_supported(DCZ_ISA_AVX2)) {
        global_avgpool__avx2(batch * channels, plane, x, y);
        return;
    }
#endif
    dcz_global_avgpool_ref(channels, plane, x, batch, y);
}
