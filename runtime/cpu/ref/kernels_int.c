/* kernels_int.c: the integer kernels of calibrated models (model.h,
 * "integer execution"). Activations are dcz_q lanes, weights int16, sums
 * int64; nothing here touches a floating-point value.
 *
 * The plain kernels (_ref, and the convolution by seven loops) are the
 * integer specification; dcz_qspmm and dcz_qconv2d_sparse are the kernels
 * the runtime runs on the compressed execution form. Checked by
 * tests/unit/test_qkernels.c: the optimized twins bit for bit against the
 * references on random data (sizes 0, 1, 3, 7, 8, 9, 31, 300; densities 0,
 * 0.5, 1 and 0.01 with fillers; codebooks of 2, 16 and 256 values and
 * per-entry values; 8- and 16-bit ranges with their extremes), the matrix
 * reference against a dense int64 product, the convolution reference
 * against the fp32 one on values where fp32 is exact, requantization
 * against exact 128-bit arithmetic, the pools on cases worked by hand.
 * The Makefile compiles this file a second time with -mgeneral-regs-only,
 * where any floating-point operation is a compile error, and tests/run.sh
 * also scans the normal object's disassembly for float instructions.
 */
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/model.h"

/* ---- rounding and requantization ------------------------------------------ */

/* Where |v| < 2^62 and shift <= 62 (every requantization the loader
 * allows), v lifted by 2^62 is never negative and 2^62 divides by 2^shift
 * exactly, so unsigned shifts give the floor, without a division (the CUDA
 * backend's dcz_gk_round_shift). Elsewhere C division truncates toward
 * zero; the floor quotient and a remainder in [0, 2^shift) follow from it
 * by one correction, and rounding half up adds 1 when the remainder is at
 * least half. Nothing overflows: v + 2^(shift-1) is never formed. Shifts of
 * 63 and more are exact too (outside what requant uses): 2^63 is not an
 * int64, so they are answered by comparison. */
int64_t dcz_round_shift(int64_t v, unsigned shift)
{
    if (shift == 0) return v;
    const int64_t lim = (int64_t)1 << 62;
    if (shift <= 62 && v < lim && v > -lim) {
        const uint64_t lift = (uint64_t)1 << 62;
        return (int64_t)(((uint64_t)v + lift + ((uint64_t)1 << (shift - 1))) >> shift) - (int64_t)(lift >> shift);
    }
    if (shift >= 64) return 0; /* |v| < 2^63 <= 2^(shift-1) */
    if (shift == 63) return v >= ((int64_t)1 << 62) ? 1 : v < -((int64_t)1 << 62) ? -1 : 0;
    const int64_t d = (int64_t)1 << shift;
    int64_t q = v / d, r = v % d;
    if (r < 0) {
        q -= 1;
        r += d;
    }
    return q + (r >= d / 2);
}

static int64_t clamp_q(int64_t v, int64_t qmax)
{
    return v > qmax ? qmax : v < -qmax ? -qmax : v;
}

/* Requantization when acc * mult does not fit an int64 (|product| >= 2^63,
 * outside what the loader produces except with shift 0, where it only
 * saturates). Exact all the same: the magnitude |acc| |mult| < 2^95 is
 * formed in two 64-bit halves (hi, lo), rounded and shifted there. Rounding
 * half up of -P is minus rounding half down of P, so a negative product adds
 * 2^(shift-1) - 1 to its magnitude instead of 2^(shift-1). */
static int64_t requant_wide(int64_t acc, int64_t mult, unsigned shift, int64_t qmax)
{
    const int neg = (acc < 0) != (mult < 0);
    const uint64_t a = acc < 0 ? 0 - (uint64_t)acc : (uint64_t)acc;
    const uint64_t m = mult < 0 ? 0 - (uint64_t)mult : (uint64_t)mult; /* <= 2^31 */
    const uint64_t p0 = (a & 0xffffffffu) * m, p1 = (a >> 32) * m;  /* each < 2^63 */
    uint64_t lo = p0 + (p1 << 32);
    uint64_t hi = (p1 >> 32) + (lo < p0);
    if (shift >= 96) return 0; /* P < 2^95: (P + 2^(shift-1)) / 2^shift < 1 */
    if (shift > 0) {
        const unsigned h = shift - 1; /* add 2^h, less one when neg */
        uint64_t add_lo = h < 64 ? (uint64_t)1 << h : 0, add_hi = h < 64 ? 0 : (uint64_t)1 << (h - 64);
        if (neg) { /* (add_hi, add_lo) -= 1 */
            if (add_lo == 0) add_hi -= 1;
            add_lo -= 1;
        }
        lo += add_lo;
        hi += add_hi + (lo < add_lo);
        if (shift < 64) {
            lo = (lo >> shift) | (hi << (64 - shift));
            hi >>= shift;
        } else {
            lo = hi >> (shift - 64);
            hi = 0;
        }
    }
    if (hi != 0 || lo > (uint64_t)qmax) return neg ? -qmax : qmax;
    return neg ? -(int64_t)lo : (int64_t)lo;
}

/* clamp(floor((a m + 2^(k-1)) / 2^k)), exact for every a and m. */
static dcz_q requant_one(int64_t a, int64_t mult, unsigned shift, int64_t qmax)
{
    const uint64_t m = mult < 0 ? 0 - (uint64_t)mult : (uint64_t)mult;
    const uint64_t am = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
    if (m == 0) return 0;
    if (am <= (uint64_t)INT64_MAX / m) return (dcz_q)clamp_q(dcz_round_shift(a * mult, shift), qmax);
    return (dcz_q)requant_wide(a, mult, shift, qmax);
}

void dcz_requant_ref(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                     uint32_t plane, dcz_q *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = 0; c < channels; c++) {
            const size_t at = (b * channels + c) * plane;
            for (uint32_t i = 0; i < plane; i++)
                y[at + i] = requant_one(acc[at + i], rq->mult[c], rq->shift[c], rq->qmax);
        }
}

/* a select, not a conditional store, so that compilers vectorize it */
void dcz_qrelu_ref(dcz_q *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = x[i] < 0 ? 0 : x[i];
}

void dcz_qclamp_ref(dcz_q *x, size_t n, int32_t lo, int32_t hi)
{
    for (size_t i = 0; i < n; i++) x[i] = (dcz_q)(x[i] < lo ? lo : x[i] > hi ? hi : x[i]);
}

/* rq(v, m, k) of a value |v| < 2^31 (an activation or the product of two):
 * |v m| < 2^62, so the product never overflows. */
static int64_t rescale(int64_t v, int32_t mult, uint8_t shift)
{
    return dcz_round_shift(v * mult, shift);
}

void dcz_qadd_ref(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult,
                  const uint8_t *shift, int32_t qmax, dcz_q *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (dcz_q)clamp_q(rescale(a[i], mult[0], shift[0]) + rescale(b[i], mult[1], shift[1]),
                              qmax);
}

void dcz_qmul_ref(const dcz_q *x, const dcz_q *f, size_t batch, uint32_t channels, uint32_t plane,
                  int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = 0; c < channels; c++) {
            const int64_t s = f[b * channels + c];
            const size_t at = (b * channels + c) * plane;
            for (uint32_t p = 0; p < plane; p++)
                y[at + p] = (dcz_q)clamp_q(rescale(x[at + p] * s, mult, shift), qmax);
        }
}

void dcz_qconcat_ref(const dcz_q *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                     const int32_t *mult, const uint8_t *shift, int32_t qmax, dcz_q *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t k = 0; k < nin; k++) {
            const dcz_q *v = x[k] + b * width[k];
            for (uint32_t i = 0; i < width[k]; i++)
                *y++ = (dcz_q)clamp_q(rescale(v[i], mult[k], shift[k]), qmax);
        }
}

void dcz_qtable_ref(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y)
{
    for (size_t i = 0; i < n; i++) y[i] = table[x[i] + qmax];
}

/* ---- sparse matrix times a batch ------------------------------------------ */

void dcz_qspmm_ref(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                   int64_t *acc)
{
    const uint32_t in = s->cols, out = s->rows;
    for (size_t b = 0; b < batch; b++) {
        const dcz_q *xb = x + b * in;
        for (uint32_t r = 0; r < out; r++) {
            int64_t a = bias ? bias[r] : 0;
            uint32_t col = 0;
            for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
                col += s->step[e];
                if (s->step[e] == DCZ_STEP_FILLER) continue;
                a += (int64_t)dcz_qsparse_weight(s, r, e) * xb[col];
            }
            acc[b * out + r] = a;
        }
    }
}

/* Samples whose per-value sums are kept at once: sums (DCZ_QSPMM_TILE, 256)
 * int64 on the stack (8 KiB), since running allocates nothing. */
#define DCZ_QSPMM_TILE 4

/* A codebook row with more real entries than values: each sample's inputs
 * are first summed per codebook value, then each sum is multiplied once by
 * its value. Integer sums are exact, so the result is the reference's. The
 * row's entries are decoded once per DCZ_QSPMM_TILE samples. */
static void qspmm_row_by_value(const dcz_qsparse *s, uint32_t r, const dcz_q *x, size_t batch,
                               int64_t *acc)
{
    const uint32_t in = s->cols, out = s->rows, k = s->k < 256 ? s->k : 256;
    const int16_t *tab = s->qtab + (size_t)r * s->k;
    int64_t sums[DCZ_QSPMM_TILE][256];
    for (size_t b0 = 0; b0 < batch; b0 += DCZ_QSPMM_TILE) {
        const size_t nb = batch - b0 < DCZ_QSPMM_TILE ? batch - b0 : DCZ_QSPMM_TILE;
        for (size_t t = 0; t < nb; t++) memset(sums[t], 0, k * sizeof(int64_t));
        uint32_t col = 0;
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
            col += s->step[e];
            if (s->step[e] == DCZ_STEP_FILLER) continue;
            const uint8_t v = s->idx[e];
            for (size_t t = 0; t < nb; t++) sums[t][v] += x[(b0 + t) * in + col];
        }
        for (size_t t = 0; t < nb; t++) {
            int64_t a = 0;
            for (uint32_t v = 0; v < k; v++) a += (int64_t)tab[v] * sums[t][v];
            acc[(b0 + t) * out + r] += a;
        }
    }
}

void dcz_qspmm(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
               int64_t *acc)
{
    const uint32_t in = s->cols, out = s->rows;
    for (uint32_t r = 0; r < out; r++) {
        const uint32_t e0 = s->row_ptr[r], e1 = s->row_ptr[r + 1];
        for (size_t b = 0; b < batch; b++) acc[b * out + r] = bias ? bias[r] : 0;
        if (s->idx && e1 - e0 > s->k) {
            uint32_t real = 0;
            for (uint32_t e = e0; e < e1; e++) real += s->step[e] != DCZ_STEP_FILLER;
            if (real > s->k) {
                qspmm_row_by_value(s, r, x, batch, acc);
                continue;
            }
        }
        uint32_t col = 0;
        for (uint32_t e = e0; e < e1; e++) {
            col += s->step[e];
            if (s->step[e] == DCZ_STEP_FILLER) continue;
            const int64_t w = dcz_qsparse_weight(s, r, e);
            for (size_t b = 0; b < batch; b++) acc[b * out + r] += w * x[b * in + col];
        }
    }
}

/* ---- convolution ------------------------------------------------------------ */

void dcz_qconv2d_direct_ref(const dcz_conv_geom *g, const int16_t *w, const int64_t *bias,
                            const dcz_q *x, size_t batch, int64_t *acc)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t oc = 0; oc < g->out_c; oc++)
            for (uint32_t oy = 0; oy < g->out_h; oy++)
                for (uint32_t ox = 0; ox < g->out_w; ox++) {
                    int64_t a = bias ? bias[oc] : 0;
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
                                a += (int64_t)w[wi] * x[xi];
                            }
                    acc[(((size_t)b * g->out_c + oc) * g->out_h + oy) * g->out_w + ox] = a;
                }
}

typedef dcz_conv_tap qtap; /* cpu/f32/conv.h */

/* ap (out_h, out_w) += w * (input plane xp seen through tap (ty, tx)) */
void dcz_qtap_ref(const dcz_conv_geom *g, const qtap *ty, const qtap *tx, int64_t w, const dcz_q *xp, int64_t *ap)
{
    const uint32_t n = tx->hi - tx->lo, sw = g->sw;
    const size_t x_step = (size_t)g->sh * g->in_w;
    size_t xi = (size_t)ty->first * g->in_w + tx->first, ai = (size_t)ty->lo * g->out_w + tx->lo;
    for (uint32_t oy = ty->lo; oy < ty->hi; oy++, xi += x_step, ai += g->out_w) {
        const dcz_q *xr = xp + xi;
        int64_t *ar = ap + ai;
        if (sw == 1)
            for (uint32_t i = 0; i < n; i++) ar[i] += w * xr[i];
        else
            for (uint32_t i = 0; i < n; i++) ar[i] += w * xr[(size_t)i * sw];
    }
}

/* Column c of a row is the tap (ic, ky, kx) = (c / (kh kw), c / kw % kh,
 * c % kw) (model.h); the divisions are per stored weight, not per pixel. */
void dcz_qconv2d_sparse(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias,
                        const dcz_q *x, size_t batch, int64_t *acc)
{
    dcz_qconv2d_sparse_taps(g, s, bias, x, batch, dcz_qtap_ref, acc);
}

void dcz_qconv2d_sparse_taps(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x,
                             size_t batch, dcz_qtap_fn add_tap, int64_t *acc)
{
    qtap ty[DCZ_MAX_WINDOW], tx[DCZ_MAX_WINDOW];
    dcz_conv_taps(g, ty, tx);
    const uint32_t ksize = g->kh * g->kw;
    const size_t in_plane = (size_t)g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    for (uint32_t oc = 0; oc < s->rows; oc++) {
        for (size_t b = 0; b < batch; b++) {
            int64_t *ap = acc + (b * g->out_c + oc) * out_plane;
            for (size_t i = 0; i < out_plane; i++) ap[i] = bias ? bias[oc] : 0;
        }
        uint32_t col = 0;
        const uint32_t ic0 = dcz_conv_in0(g, oc);
        for (uint32_t e = s->row_ptr[oc]; e < s->row_ptr[oc + 1]; e++) {
            col += s->step[e];
            if (s->step[e] == DCZ_STEP_FILLER) continue;
            const uint32_t ic = ic0 + col / ksize, r = col % ksize, ky = r / g->kw, kx = r % g->kw;
            const int64_t w = dcz_qsparse_weight(s, oc, e);
            for (size_t b = 0; b < batch; b++)
                add_tap(g, &ty[ky], &tx[kx], w, x + (b * g->in_c + ic) * in_plane,
                        acc + (b * g->out_c + oc) * out_plane);
        }
    }
}

/* ---- pooling ---------------------------------------------------------------- */

/* sum / count rounded half away from zero; count 0 (an empty plane) gives 0 */
static dcz_q div_round(int64_t sum, uint64_t count)
{
    if (count == 0) return 0;
    const uint64_t mag = sum < 0 ? 0 - (uint64_t)sum : (uint64_t)sum;
    const uint64_t q = (mag + count / 2) / count;
    return (dcz_q)(sum < 0 ? -(int64_t)q : (int64_t)q);
}

void dcz_qmaxpool_ref(const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y)
{
    const size_t planes = batch * g->in_c;
    for (size_t p = 0; p < planes; p++) {
        const dcz_q *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++)
            for (uint32_t ox = 0; ox < g->out_w; ox++) {
                uint32_t y0, y1, x0, x1;
                dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
                dcz_window_cells(ox, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
                dcz_q m = INT16_MIN;
                for (uint32_t iy = y0; iy < y1; iy++)
                    for (uint32_t ix = x0; ix < x1; ix++)
                        if (xp[(size_t)iy * g->in_w + ix] > m) m = xp[(size_t)iy * g->in_w + ix];
                *y++ = m;
            }
    }
}

void dcz_qavgpool_ref(const dcz_conv_geom *g, int count_include_pad, const dcz_q *x,
                      size_t batch, dcz_q *y)
{
    const size_t planes = batch * g->in_c;
    for (size_t p = 0; p < planes; p++) {
        const dcz_q *xp = x + p * g->in_h * g->in_w;
        for (uint32_t oy = 0; oy < g->out_h; oy++)
            for (uint32_t ox = 0; ox < g->out_w; ox++) {
                uint32_t y0, y1, x0, x1;
                dcz_window_cells(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
                dcz_window_cells(ox, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
                int64_t sum = 0;
                for (uint32_t iy = y0; iy < y1; iy++)
                    for (uint32_t ix = x0; ix < x1; ix++) sum += xp[(size_t)iy * g->in_w + ix];
                const uint64_t count = count_include_pad ? (uint64_t)g->kh * g->kw
                                                         : (uint64_t)(y1 - y0) * (x1 - x0);
                *y++ = div_round(sum, count);
            }
    }
}

void dcz_qglobal_avgpool_ref(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                             dcz_q *y)
{
    const size_t planes = batch * channels;
    for (size_t p = 0; p < planes; p++) {
        int64_t sum = 0;
        for (uint32_t i = 0; i < plane; i++) sum += x[p * plane + i];
        y[p] = div_round(sum, plane);
    }
}

void dcz_qglobal_avgpool_rescale_ref(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                                     int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y)
{
    const size_t planes = batch * channels;
    for (size_t p = 0; p < planes; p++) {
        int64_t sum = 0;
        for (uint32_t i = 0; i < plane; i++) sum += x[p * plane + i];
        y[p] = requant_one(sum, mult, shift, qmax);
    }
}

