/* kernels_qshift.c: convolution by shifted planes on integers, the
 * 8-bit schemes' shift form (qshift.h; model.h: dcz_qshift), on the split
 * input of cpu/shift_split.h, laid out as the float form's
 * (cpu/f32/kernels_shift.c describes the split): the integer split (scalar,
 * AVX-512 VNNI and VBMI), the scalar reference and the AVX-512 VNNI kernel
 * on accumulators, or on the AMX tiles (kernels_amx.c) where the form picks
 * them, and their dispatch. The form and its builder: qshift_form.c; the
 * kernels that requantize as they store: qshift_requant.c.
 *
 * Checked by tests/unit/test_qkernels.c (every variant against the
 * references, bit for bit; the splits against the scalar one) and
 * tests/unit/test_calibrate.c (models).
 */
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/model.h"

#if DCZ_BUILD_Q8_X86
#include <immintrin.h>
#define DCZ_X86 1
#endif

#include "runtime/cpu/shift_split.h"

/* xs = the integer split input of sample x: byte c % 4 of the cells of quad c / 4;
 * the phases no tap reads (py >= kh, px >= kw: a 1x1 at stride 2 reads one
 * of four) keep the padding, in every variant below; a channel xc marks
 * (NULL: none) its value in every cell of its plane */
static void qsplit(const dcz_conv_geom *g, const split_geom *q, const dcz_qconst *xc, const dcz_q *x, uint8_t *xs)
{
    const size_t sh = g->sh, sw = g->sw, plane = q->plane;
    memset(xs, 0x80, q->floats * 4);
    size_t lo[DCZ_MAX_WINDOW], hi[DCZ_MAX_WINDOW];
    for (size_t px = 0; px < sw; px++) {
        lo[px] = px < g->pw ? (g->pw - px + sw - 1) / sw : 0;
        hi[px] = (g->in_w + g->pw - px + sw - 1) / sw;
    }
    for (uint32_t c = 0; c < g->in_c; c++)
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            const size_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;   /* a phase no tap reads keeps the padding */
            const dcz_q *xr = x + ((size_t)c * g->in_h + iy) * g->in_w;
            uint8_t *row = xs + 4 * ((c / 4 * sh + r % sh) * sw * plane + r / sh * q->wq) + c % 4;
            const int fixed = dcz_qconst_has(xc, c);
            for (size_t px = 0; px < sw && px < g->kw; px++, row += 4 * plane)
                for (size_t cell = lo[px]; cell < hi[px]; cell++)
                    row[4 * cell] = (uint8_t)((fixed ? xc->value[c] : xr[cell * sw + px - g->pw]) + 128);
        }
}

/* The split's n cells (one channel in byte 0 of each) widened in place to
 * column quads: byte j of cell i from byte 0 of cell i + j (0x80, zero,
 * past the last). Byte 0 never changes, so cells later in the pass still
 * read their own. */
static void colquads(uint32_t *cells, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t v = cells[i] & 0xFF;
        for (size_t j = 1; j < 4; j++) v |= (i + j < n ? cells[i + j] & 0xFF : 0x80u) << (8 * j);
        cells[i] = v;
    }
}

#ifdef DCZ_X86
#define VNNI_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
/* colquads sixteen cells at a time: the cells at i, i + 1, i + 2 and i + 3
 * loaded (each vector before this step's store, whose byte 0s are the
 * same), their low bytes shifted into place */
VNNI_TGT static void colquads__avx512(uint32_t *cells, size_t n)
{
    const __m512i low = _mm512_set1_epi32(0xFF), none = _mm512_set1_epi32(0x80);
    for (size_t i = 0; i < n; i += 16) {
        __m512i v = _mm512_setzero_si512();
        for (size_t j = 0; j < 4; j++) {
            const size_t left = n - i > j ? n - i - j : 0;
            const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
            const __m512i b = _mm512_and_si512(_mm512_mask_loadu_epi32(none, m, cells + i + j), low);
            v = _mm512_or_si512(v, _mm512_slli_epi32(b, (unsigned)(8 * j)));
        }
        const size_t left = n - i;
        _mm512_mask_storeu_epi32(cells + i, left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1), v);
    }
}

/* The channels of the quad from c0 as the VBMI splits load them: channel
 * c0 + j's row from at[j] cells into the sample (a missing channel's, and
 * one xc marks, from the plane of channel first, the first the layer
 * reads: quad_first), under the row's mask alone; the merged rows' bytes
 * of channel c0 + j then kept where byte j of *keep is 0xFF (a channel
 * read) and offset by byte j of *ck: 128 for those and for a missing
 * channel (whose bytes are 0, the padding's byte once offset), its value +
 * 128 for a marked one. Keeping and offsetting are one vpternlog
 * (KEEP_OFFSET), in the instruction the offset took alone, so a layer with
 * marked channels costs no more than one without, and no load reads a marked
 * channel's plane: the layer before never writes it (its pages perhaps
 * never mapped), and a load from it under an empty mask still costs what
 * the page costs (int8 MobileNetV2, most of whose expansions' planes are
 * constants, took 1.7 times as long with such loads). The merged bytes
 * in registers: the splits that picked each row by a test took them
 * through an array on the stack, a store and a load each (the split of
 * 400 channels of 7 x 7, RegNetX-400MF's grouped layers, 37% of the
 * layer's time). */
static uint32_t quad_first(const dcz_conv_geom *g, const dcz_qconst *xc)
{
    uint32_t c = 0;
    while (c + 1 < g->in_c && dcz_qconst_has(xc, c)) c++;
    return c;
}

static inline void quad_rows(const dcz_conv_geom *g, const dcz_qconst *xc, uint32_t first, uint32_t c0,
                             size_t at[4], uint32_t *keep, uint32_t *ck)
{
    const size_t plane = (size_t)g->in_h * g->in_w;
    *keep = 0;
    *ck = 0x80808080u;
    for (uint32_t j = 0; j < 4; j++) {
        const uint32_t c = c0 + j;
        const int fixed = c < g->in_c && dcz_qconst_has(xc, c), in = c < g->in_c && !fixed;
        at[j] = (size_t)(in ? c : first) * plane;
        *keep |= (in ? 0xFFu : 0u) << (8 * j);
        *ck ^= (fixed ? (uint32_t)(uint8_t)xc->value[c] : 0u) << (8 * j);
    }
}

/* (a & b) ^ c: the merged rows a, kept by b and offset by c (quad_rows) */
#define KEEP_OFFSET 0x6A

/* qsplit at column strides 1 and 2 (any row stride): sixteen cells of a
 * row phase at once, the quad's four channel rows widened, offset by 128
 * and merged byte by byte; at stride 2 the sixteen inputs of a phase come
 * from 32 consecutive ones by a permute. The phases no tap reads (py >=
 * kh, px >= kw) keep the padding. qsplit2__vbmi (column stride 2 on a CPU
 * with VBMI) merges the four rows by byte permutes instead: the low
 * bytes of the even words of two rows paired by vpermt2b, the pairs of the
 * two pairs of rows made cells by vpermt2w (a word the load masks out is
 * 0, whose byte becomes the padding's 128 by the same offset as the
 * others, quad_rows): int8 ResNet-style's 3x3 stride-2 convolutions split
 * in half the time. */
static const uint8_t qsplit_pair2[64] = {
    0, 64, 4, 68, 8, 72, 12, 76, 16, 80, 20, 84, 24, 88, 28, 92,
    32, 96, 36, 100, 40, 104, 44, 108, 48, 112, 52, 116, 56, 120, 60, 124,
};
static const uint16_t qsplit_cells2[32] = {
    0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
};
VNNI_TGT static void qsplit__vnni(const dcz_conv_geom *g, const split_geom *q, const dcz_qconst *xc, const dcz_q *x,
                                  uint8_t *xs)
{
    memset(xs, 0x80, q->floats * 4);
    int32_t *cells = (int32_t *)(void *)xs;
    const uint32_t sh = g->sh, sw = g->sw;
    const __m512i off = _mm512_set1_epi32(128), none = _mm512_set1_epi32(0x80);
    const __m512i even = _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32,
                                          30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (uint32_t c0 = 0; c0 < g->in_c; c0 += 4)
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            const uint32_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;
            for (uint32_t px = 0; px < sw && px < g->kw; px++) {
                /* cells lo .. hi - 1 of phase px hold input columns cell sw + px - pw */
                const uint32_t lo = px < g->pw ? (g->pw - px + sw - 1) / sw : 0;
                const uint32_t hi = (g->in_w + g->pw - px + sw - 1) / sw;
                int32_t *row = cells + ((c0 / 4 * sh + r % sh) * sw + px) * q->plane + r / sh * q->wq;
                for (uint32_t cell = lo; cell < hi; cell += 16) {
                    const uint32_t n = hi - cell < 16 ? hi - cell : 16, src = cell * sw + px - g->pw;
                    const uint32_t words = sw * (n - 1) + 1;   /* the inputs the n cells span */
                    const __mmask32 kw = words >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << words) - 1);
                    __m512i merged = _mm512_setzero_si512();
                    for (uint32_t j = 0; j < 4; j++) {
                        __m512i v = none;
                        if (c0 + j < g->in_c && dcz_qconst_has(xc, c0 + j)) {
                            v = _mm512_set1_epi32(xc->value[c0 + j] + 128);
                        } else if (c0 + j < g->in_c) {
                            const dcz_q *xr = x + ((size_t)(c0 + j) * g->in_h + iy) * g->in_w + src;
                            __m512i w = _mm512_maskz_loadu_epi16(kw, xr);
                            if (sw == 2) w = _mm512_permutexvar_epi16(even, w);
                            v = _mm512_add_epi32(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(w)), off);
                        }
                        merged = _mm512_or_si512(merged, _mm512_slli_epi32(v, 8 * j));
                    }
                    _mm512_mask_storeu_epi32(row + cell, (__mmask16)((1u << n) - 1), merged);
                }
            }
        }
}

/* qsplit__vnni at column stride 2 on a CPU with VBMI */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) static void
qsplit2__vbmi(const dcz_conv_geom *g, const split_geom *q, const dcz_qconst *xc, const dcz_q *x, uint8_t *xs)
{
    memset(xs, 0x80, q->floats * 4);
    int32_t *cells = (int32_t *)(void *)xs;
    const uint32_t sh = g->sh;
    const __m512i pair = _mm512_loadu_si512((const void *)qsplit_pair2),
                  merge = _mm512_loadu_si512((const void *)qsplit_cells2);
    const uint32_t first = quad_first(g, xc);
    for (uint32_t c0 = 0; c0 < g->in_c; c0 += 4) {
        size_t at[4];
        uint32_t keep, ck;
        quad_rows(g, xc, first, c0, at, &keep, &ck);
        const __m512i kept = _mm512_set1_epi32((int32_t)keep), off = _mm512_set1_epi32((int32_t)ck);
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            const uint32_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;
            for (uint32_t px = 0; px < 2 && px < g->kw; px++) {
                const uint32_t lo = px < g->pw ? (g->pw - px + 1) / 2 : 0, hi = (g->in_w + g->pw - px + 1) / 2;
                int32_t *row = cells + ((c0 / 4 * sh + r % sh) * 2 + px) * q->plane + r / sh * q->wq;
                const dcz_q *xr = x + (size_t)iy * g->in_w;
                for (uint32_t cell = lo; cell < hi; cell += 16) {
                    const uint32_t n = hi - cell < 16 ? hi - cell : 16, src = cell * 2 + px - g->pw;
                    const __mmask32 kw = n == 16 ? 0x7FFFFFFFu : (__mmask32)((1u << (2 * n - 1)) - 1);
                    const dcz_q *p = xr + src;
                    const __m512i r0 = _mm512_maskz_loadu_epi16(kw, p + at[0]),
                                  r1 = _mm512_maskz_loadu_epi16(kw, p + at[1]),
                                  r2 = _mm512_maskz_loadu_epi16(kw, p + at[2]),
                                  r3 = _mm512_maskz_loadu_epi16(kw, p + at[3]);
                    const __m512i ab = _mm512_permutex2var_epi8(r0, pair, r1);
                    const __m512i cd = _mm512_permutex2var_epi8(r2, pair, r3);
                    _mm512_mask_storeu_epi32(row + cell, (__mmask16)((1u << n) - 1),
                                             _mm512_ternarylogic_epi32(_mm512_permutex2var_epi16(ab, merge, cd), kept,
                                                                       off, KEEP_OFFSET));
                }
            }
        }
    }
}

/* qsplit1__vbmi's permutes: pair's bytes 2 i and 2 i + 1 are the low bytes
 * of word i of two rows (vpermt2b); cells' words 2 i and 2 i + 1 are pair i
 * of each of two such vectors, for cells 0 .. 15 and then 16 .. 31 */
static const uint8_t qsplit_pair[64] = {
    0, 64, 2, 66, 4, 68, 6, 70, 8, 72, 10, 74, 12, 76, 14, 78,
    16, 80, 18, 82, 20, 84, 22, 86, 24, 88, 26, 90, 28, 92, 30, 94,
    32, 96, 34, 98, 36, 100, 38, 102, 40, 104, 42, 106, 44, 108, 46, 110,
    48, 112, 50, 114, 52, 116, 54, 118, 56, 120, 58, 122, 60, 124, 62, 126,
};
static const uint16_t qsplit_cells[64] = {
    0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
    16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
    24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63,
};

/* qsplit at column stride 1 with VBMI: 32 cells a step, the four channel
 * rows' low bytes paired by a byte permute (vpermt2b) of two rows at a
 * time, the pairs merged into cells by a word permute (vpermt2w), the
 * offset of 128 and the marked channels' values one vpternlog on the
 * pairs (quad_rows) */
#define VBMI_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))
VBMI_TGT static void qsplit1__vbmi(const dcz_conv_geom *g, const split_geom *q, const dcz_qconst *xc, const dcz_q *x,
                                   uint8_t *xs)
{
    int32_t *cells = (int32_t *)(void *)xs;
    const uint32_t sh = g->sh;
    /* without padding at row stride 1 the planes are the input's, each one
     * row: every cell is written, so only the margin past them is cleared */
    const int flat = g->ph == 0 && g->pw == 0 && sh == 1;
    const uint32_t rows = flat ? 1 : g->in_h, width = flat ? g->in_h * g->in_w : g->in_w;
    const size_t quads = (g->in_c + 3) / 4;
    if (flat) memset(cells + quads * q->plane, 0x80, (q->floats - quads * q->plane) * 4);
    else memset(xs, 0x80, q->floats * 4);
    const __m512i pair = _mm512_loadu_si512(qsplit_pair), lo16 = _mm512_loadu_si512(qsplit_cells),
                  hi16 = _mm512_loadu_si512(qsplit_cells + 32);
    const uint32_t first = quad_first(g, xc);
    for (uint32_t c0 = 0; c0 < g->in_c; c0 += 4) {
        size_t at[4];
        uint32_t keep, ck;
        quad_rows(g, xc, first, c0, at, &keep, &ck);
        /* as the pairs' bytes: channels c0 and c0 + 1 in ab, the others in cd */
        const __m512i kab = _mm512_set1_epi16((int16_t)(keep & 0xFFFF)), kcd = _mm512_set1_epi16((int16_t)(keep >> 16));
        const __m512i oab = _mm512_set1_epi16((int16_t)(ck & 0xFFFF)), ocd = _mm512_set1_epi16((int16_t)(ck >> 16));
        for (uint32_t iy = 0; iy < rows; iy++) {
            const uint32_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;
            int32_t *row = cells + (c0 / 4 * sh + r % sh) * q->plane + r / sh * q->wq + g->pw;
            for (uint32_t ix = 0; ix < width; ix += 32) {
                const uint32_t n = width - ix < 32 ? width - ix : 32;
                const __mmask32 m = n == 32 ? 0xFFFFFFFFu : (__mmask32)((1u << n) - 1);
                const dcz_q *p = x + (size_t)iy * width + ix;
                const __m512i r0 = _mm512_maskz_loadu_epi16(m, p + at[0]), r1 = _mm512_maskz_loadu_epi16(m, p + at[1]),
                              r2 = _mm512_maskz_loadu_epi16(m, p + at[2]), r3 = _mm512_maskz_loadu_epi16(m, p + at[3]);
                const __m512i ab =
                    _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(r0, pair, r1), kab, oab, KEEP_OFFSET);
                const __m512i cd =
                    _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(r2, pair, r3), kcd, ocd, KEEP_OFFSET);
                _mm512_mask_storeu_epi32(row + ix, (__mmask16)m, _mm512_permutex2var_epi16(ab, lo16, cd));
                if (n > 16) _mm512_mask_storeu_epi32(row + ix + 16, (__mmask16)(m >> 16), _mm512_permutex2var_epi16(ab, hi16, cd));
            }
        }
    }
}

/* acc row (n) = bias + (t row + add modulo 2^32), 8 at a time */
VNNI_TGT static void widen_row__vnni(const int32_t *t, int32_t add, int64_t bias, uint32_t n, int64_t *acc)
{
    const __m256i c = _mm256_set1_epi32(add);
    const __m512i b = _mm512_set1_epi64(bias);
    for (uint32_t i = 0; i < n; i += 8) {
        const __mmask8 k = (__mmask8)(n - i >= 8 ? 0xFF : (1u << (n - i)) - 1);
        const __m256i tc = _mm256_add_epi32(_mm256_maskz_loadu_epi32(k, t + i), c);
        _mm512_mask_storeu_epi64(acc + i, k, _mm512_add_epi64(_mm512_cvtepi32_epi64(tc), b));
    }
}
#endif

/* The integer split of sample x, widened to column quads where the form
 * has them, by the fastest variants this CPU has (the scalar ones with
 * vec 0). */
void dcz_qsplit_any(int vec, const dcz_conv_geom *g, const split_geom *q, const dcz_qconst *xc, const dcz_q *x,
                    uint8_t *xs)
{
#ifdef DCZ_X86
    if (vec && g->sw == 1 && dcz_cpu_features()->avx512vbmi) qsplit1__vbmi(g, q, xc, x, xs);
    else if (vec && g->sw == 2 && dcz_cpu_features()->avx512vbmi) qsplit2__vbmi(g, q, xc, x, xs);
    else if (vec && g->sw <= 2) qsplit__vnni(g, q, xc, x, xs);
    else
#endif
        qsplit(g, q, xc, x, xs);
    if (!dcz_qshift_col_quads(g)) return;
#ifdef DCZ_X86
    if (vec) {
        colquads__avx512((uint32_t *)(void *)xs, q->floats);
        return;
    }
#endif
    colquads((uint32_t *)(void *)xs, q->floats);
}

int dcz_qsplit_check(const dcz_conv_geom *g, const dcz_qconst *xc, const dcz_q *x, uint8_t *a, uint8_t *b)
{
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    const size_t bytes = q.floats * 4;
    qsplit(g, &q, xc, x, a);
    int n = 0;
#ifdef DCZ_X86
    if (!dcz_qshift_variant()) return 0;   /* the variants run where the form's kernel does */
    const int vbmi = dcz_cpu_features()->avx512vbmi;
    for (int v = 0; v < 3; v++) {
        if (v == 0 && g->sw <= 2) qsplit__vnni(g, &q, xc, x, b);
        else if (v == 1 && vbmi && g->sw == 1) qsplit1__vbmi(g, &q, xc, x, b);
        else if (v == 2 && vbmi && g->sw == 2) qsplit2__vbmi(g, &q, xc, x, b);
        else continue;
        if (memcmp(a, b, bytes)) return -1;
        n++;
    }
#else
    (void)b;
    (void)bytes;
#endif
    return n;
}

const char dcz_qplanes_spare = 1;

/* t = the planes as computed of one sample's split xs by planes, or on
 * the AMX tiles where the form picks them (a vector variant). Returns what
 * each channel's sums still lack, to be added with its bias modulo 2^32:
 * f->corr after the tiles, which start their sums at zero; else NULL. */
const int32_t *dcz_qplanes_run(dcz_qplanes_fn planes, int vec, const dcz_conv_geom *g, const split_geom *q,
                               const dcz_qshift *f, const int32_t *xs, int32_t *t, int spare)
{
    if (vec && f->amx_pick) {
        uint32_t toff[DCZ_QSHIFT_MAX_WINDOW];
        tap_offsets(g, q, toff);
        dcz_qamx_planes(f, g, toff, (size_t)g->sh * g->sw * q->plane, q->out16, (const uint8_t *)xs,
                        copies_at(t, q, g), t, 0, (g->out_c + 15) / 16);
        return f->corr;
    }
    planes(f, f->corr, g->out_c, q->out16, (size_t)g->out_h * q->wq, xs, t, spare ? DCZ_QPLANES_SPARE : NULL);
    return NULL;
}

static void qshift_planes_ref(const dcz_qshift *f, const int32_t *corr, uint32_t out_c, size_t out16, size_t cells,
                              const int32_t *xs, int32_t *t, void *om)
{
    (void)cells;
    (void)corr;
    (void)om;
    const uint8_t *xb = (const uint8_t *)xs;
    for (uint32_t oc = 0; oc < out_c; oc++) {
        const uint32_t k = oc / f->ob, o = oc % f->ob;
        for (size_t p = 0; p < out16; p++) {
            int64_t acc = 0;
            for (uint32_t e = f->ptr[k]; e < f->ptr[k + 1]; e++)
                for (uint32_t j = 0; j < 4; j++)
                    acc += (int64_t)((int32_t)xb[4 * (f->off[e] + p) + j] - 128) *
                           (int8_t)(uint8_t)((uint32_t)f->w[(size_t)e * f->ob + o] >> (8 * j));
            t[(size_t)oc * out16 + p] = (int32_t)acc;
        }
    }
}

#ifdef DCZ_X86
#define SFX __vnni
#define TGT VNNI_TGT
#define V __m512i
#define L 16
#define ET int32_t
#define FORM dcz_qshift
#define VSET1(f) _mm512_set1_epi32(f)
#define VLOAD(p) _mm512_loadu_si512((const void *)(p))
#define VFMA(a, b, c) _mm512_dpbusd_epi32(c, b, a)
#define VHLOAD(p) _mm512_castsi256_si512(_mm256_loadu_si256((const void *)(p)))
#define VHFMA(a, b, c)                                                                                           \
    _mm512_castsi256_si512(                                                                                    \
        _mm256_dpbusd_epi32(_mm512_castsi512_si256(c), _mm512_castsi512_si256(b), _mm512_castsi512_si256(a)))
#define VSTORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define VREG(x) "v"(x)
#define VADD(a, b) _mm512_add_epi32(a, b)
#define SPLIT_TMAX 6
#define SPARE(om) ((om) != NULL)
#define TMAX1 12
#define TMAX2 12
#define TMAX4 0
#include "runtime/cpu/f32/shift_tile.h"
#endif

dcz_qplanes_fn dcz_qplanes_variant(dcz_isa isa)
{
    if (isa == DCZ_ISA_REF) return qshift_planes_ref;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
        dcz_cpu_features()->avx512vl && dcz_cpu_features()->avx512vnni)
        return shift_planes__vnni;
#endif
    return NULL;
}

const char *dcz_qshift_variant(void) { return dcz_qplanes_variant(DCZ_ISA_AVX512) ? "avx512 vnni" : NULL; }

int dcz_qshift_depthwise(const dcz_qshift *f)
{
#ifdef DCZ_X86
    if (!dcz_qplanes_variant(DCZ_ISA_AVX512)) return 0;
    return f->dw && dcz_cpu_features()->avx512vbmi ? DCZ_QDW_BYTES : f->dwp ? DCZ_QDW_PAIRS : 0;
#else
    return 0;
#endif
}

int dcz_qconv2d_pick_shift(const dcz_conv_geom *g)
{
    return dcz_qshift_variant() && g->kh * g->kw <= DCZ_QSHIFT_MAX_WINDOW &&
           dcz_qshift_scratch_floats(g) <= DCZ_CONV_SCRATCH_MAX;
}

int dcz_qconv2d_shift_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                          const dcz_q *x, size_t batch, float *scratch, int64_t *acc)
{
    const dcz_qplanes_fn planes = dcz_qplanes_variant(isa);
    if (!planes) return 0;
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    int32_t *xs = (int32_t *)(void *)scratch, *t = planes_at(scratch, &q);
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    /* the vector variant also splits and widens in vectors */
    int vec = 0;
#ifdef DCZ_X86
    vec = isa != DCZ_ISA_REF;
#endif
    for (size_t b = 0; b < batch; b++) {
        dcz_qsplit_any(vec, g, &q, NULL, x + b * in_sample, (uint8_t *)xs);
        const int32_t *add = dcz_qplanes_run(planes, vec, g, &q, f, xs, t, 0);
        int64_t *ab = acc + b * g->out_c * out_plane;
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            const int64_t bo = bias ? bias[oc] : 0;
            const int32_t ao = add ? add[oc] : 0;
            for (uint32_t oy = 0; oy < g->out_h; oy++) {
                const int32_t *tr = t + oc * q.out16 + oy * q.wq;
                int64_t *ar = ab + oc * out_plane + (size_t)oy * g->out_w;
#ifdef DCZ_X86
                if (vec) {
                    widen_row__vnni(tr, ao, bo, g->out_w, ar);
                    continue;
                }
#endif
                for (uint32_t ox = 0; ox < g->out_w; ox++) ar[ox] = bo + (int32_t)((uint32_t)tr[ox] + (uint32_t)ao);
            }
        }
    }
    return 1;
}

void dcz_qconv2d_shift(const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias, const dcz_q *x,
                       size_t batch, int ref, float *scratch, int64_t *acc)
{
    if (ref || !dcz_qconv2d_shift_isa(DCZ_ISA_AVX512, g, f, bias, x, batch, scratch, acc))
        dcz_qconv2d_shift_isa(DCZ_ISA_REF, g, f, bias, x, batch, scratch, acc);
}
