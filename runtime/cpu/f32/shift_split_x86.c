/* shift_split_x86.c: the split input of the float shift form (the
 * sample padded and split by stride phase: kernels_shift.c's opening
 * comment, cpu/shift_split.h) written by vectors, at strides 1 and 2: in
 * AVX2 and in AVX-512, each the bits of the scalar split (kernels_shift.c,
 * split), which runs where none of these does. x86 only: a NEON build,
 * or a scalar one, splits by scalars.
 *
 * Checked by tests/unit/test_kernels.c: the shift form's variants run on
 * every geometry of the convolution grid, against the scalar reference,
 * bit for bit (the splits included).
 */
#include <string.h>

#include "runtime/cpu/f32/shift.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>

#include "runtime/cpu/avx2_lanes.h"
#include "runtime/cpu/shift_split.h"

#define SPLIT_MAX_VECTORS 64

/* split at stride 1 in AVX2 vectors (padding on some side): a row's cells
 * and its right padding by whole vectors, the lanes past the input row
 * loaded as zeros by masked loads and every vector stored whole, the last
 * running up to 7 cells into the next row (written after it), the plane's
 * bottom padding or the next plane (zeroed or written after it) or the
 * scratch's margin (16 cells or more, zeroed after it); the scalar split's
 * bits. 0 where it does not run. (It replaces a memcpy and a memset a row
 * of the scalar split; with the output stored from the tiles, see
 * out_store__avx2.) */
__attribute__((target("avx2")))
static int split1__avx2(const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    if (g->sh != 1 || g->sw != 1 || split_is_input(g)) return 0;
    const size_t W = g->in_w, wq = q->wq, nv = (wq + 7) / 8, top = g->ph * wq + g->pw;
    __m256i m[SPLIT_MAX_VECTORS];
    if (nv > SPLIT_MAX_VECTORS) return 0;
    for (size_t v = 0; v < nv; v++)
        m[v] = dcz_mask8__avx2((uint32_t)(W > 8 * v ? W - 8 * v : 0));
    for (uint32_t c = 0; c < g->in_c; c++) {
        float *p = xs + c * q->plane;
        const float *xc = x + (size_t)c * g->in_h * W;
        memset(p, 0, top * sizeof *p);
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            float *r = p + top + (size_t)iy * wq;
            const float *xr = xc + (size_t)iy * W;
            for (size_t v = 0; v < nv; v++) _mm256_storeu_ps(r + 8 * v, _mm256_maskload_ps(xr + 8 * v, m[v]));
        }
        const size_t done = top + (size_t)g->in_h * wq;
        if (done < q->plane) memset(p + done, 0, (q->plane - done) * sizeof *p);
    }
    memset(xs + g->in_c * q->plane, 0, (q->floats - g->in_c * q->plane) * sizeof *xs);
    return 1;
}

/* split at column stride 2 in AVX2 vectors: lane i of vector v of phase px
 * reads input column 16 v + 2 i + px - pw: the 16 columns from 16 v - pw
 * loaded where they are in the row (0 elsewhere) by two masked loads, then
 * two shuffles and two permutes give the even and odd ones, each stored
 * whole: the lanes past a phase row, zeros, land on the next row of the
 * plane, written or zero already, but for a plane's last row, whose vectors
 * past the row are masked; the cells no input row lands on are zeroed
 * first, as the scalar split does, whose bits these are. 0 where it does
 * not run. The scalar split took 60% of MobileNetV2-style's 96 x 28 x 28
 * stride-2 depthwise layer (dense, batch 1, Zen 3: 98 -> 50 us); a row
 * copied into a padded row of zeros first and loaded from it stalled on
 * loads across two stores (65 us). */
__attribute__((target("avx2")))
static int split2__avx2(const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    const size_t sh = g->sh, W = g->in_w, wq = q->wq, nv = (wq + 7) / 8;
    if (g->sw != 2 || nv > SPLIT_MAX_VECTORS) return 0;
    __m256i m[2 * SPLIT_MAX_VECTORS];
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (size_t v = 0; v < 2 * nv; v++) {
        /* lanes whose column 8 v - pw + i lies in 0 .. W - 1 */
        const int64_t first = (int64_t)(8 * v) - (int64_t)g->pw;
        m[v] = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)((int64_t)W - first)), iota),
                                _mm256_cmpgt_epi32(iota, _mm256_set1_epi32((int)(-first - 1))));
    }
    const __m256i last = dcz_mask8__avx2((uint32_t)(wq - 8 * (nv - 1)));
    for (uint32_t c = 0; c < g->in_c; c++) {
        /* zeros where no input row lands: planes no tap reads, padding rows,
         * each plane's cells past its rows */
        for (size_t py = 0; py < sh; py++)
            for (size_t px = 0; px < 2; px++) {
                float *pl = xs + ((c * sh + py) * 2 + px) * q->plane;
                if (py >= g->kh || px >= g->kw) {
                    memset(pl, 0, q->plane * sizeof *pl);
                    continue;
                }
                for (size_t i = 0; i < q->hq; i++) {
                    const int64_t iy = (int64_t)(i * sh + py) - (int64_t)g->ph;
                    if (iy < 0 || iy >= (int64_t)g->in_h) memset(pl + i * wq, 0, wq * sizeof *pl);
                }
                memset(pl + q->hq * wq, 0, (q->plane - q->hq * wq) * sizeof *pl);
            }
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            const size_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;   /* a phase no tap reads */
            /* the row from column -pw: lanes before column 0 are masked,
             * never read */
            const float *xr = x + ((size_t)c * g->in_h + iy) * W - g->pw;
            float *row = xs + (c * sh + r % sh) * 2 * q->plane + r / sh * wq;
            const int end = r / sh == q->hq - 1;
            for (size_t v = 0; v < nv; v++) {
                const __m256 a = _mm256_maskload_ps(xr + 16 * v, m[2 * v]);
                const __m256 b = _mm256_maskload_ps(xr + 16 * v + 8, m[2 * v + 1]);
                const __m256 ev = dcz_evens__avx2(a, b), od = dcz_odds__avx2(a, b);
                if (end && v == nv - 1) {
                    _mm256_maskstore_ps(row + 8 * v, last, ev);
                    if (g->kw > 1) _mm256_maskstore_ps(row + q->plane + 8 * v, last, od);
                } else {
                    _mm256_storeu_ps(row + 8 * v, ev);
                    if (g->kw > 1) _mm256_storeu_ps(row + q->plane + 8 * v, od);
                }
            }
        }
    }
    const size_t planes = (size_t)g->in_c * sh * 2;
    memset(xs + planes * q->plane, 0, (q->floats - planes * q->plane) * sizeof *xs);
    return 1;
}

/* split at column stride 1 or 2 in vectors: each row of a phase plane is
 * written whole, its padding and its cells in one pass, the cells by
 * masked loads (lanes past the input row are neither read nor faulted) and,
 * at stride 2, two permutes of the same two loads, one per column phase;
 * the scalar split's bits. The masks depend on the vector only, so they
 * are made once a call; 0 (nothing written) for rows of more than
 * SPLIT_MAX_VECTORS vectors, strides past 2, or no padding at stride 1.
 * Loading each input row once for both phases, rather than once a phase,
 * took the ResNet-style preset's two 3 x 3 stride-2 splits from 2.7 and
 * 2.9 us to 1.8 and 1.9 (one core of an AMD EPYC). */
typedef struct split_vec {
    int64_t first;
    __mmask16 lo, hi, store;
} split_vec;

/* The rows of split__avx512, NV vectors a row (0: nv, not a constant),
 * S2: column stride 2. */
__attribute__((target("avx512f"), always_inline))
static inline void split_rows__avx512(const size_t NV, const int S2, const dcz_conv_geom *g, const split_geom *q,
                                      const split_vec *t, size_t nv, const float *x, float *xs)
{
    const size_t sh = g->sh, sw = S2 ? 2 : 1, wq = q->wq, W = g->in_w, n = NV ? NV : nv;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const size_t phases = sw < g->kw ? sw : g->kw;  /* the phases a tap reads */
    for (size_t c = 0; c < g->in_c; c++)
        for (size_t py = 0; py < sh && py < g->kh; py++) {
            float *plane = xs + (c * sh + py) * sw * q->plane;   /* phase (py, 0); (py, 1) follows */
            for (size_t ry = 0; ry < q->hq; ry++) {
                float *row = plane + ry * wq;
                const int64_t iy = (int64_t)(ry * sh + py) - (int64_t)g->ph;
                if (iy < 0 || iy >= (int64_t)g->in_h) {
                    for (size_t px = 0; px < phases; px++)
                        for (size_t v = 0; v < n; v++)
                            _mm512_mask_storeu_ps(row + px * q->plane + 16 * v, t[v].store, _mm512_setzero_ps());
                    continue;
                }
                const float *xr = x + (c * g->in_h + (size_t)iy) * W;
                for (size_t v = 0; v < n; v++) {
                    const float *p = xr + t[v].first;
                    const __m512 a = _mm512_maskz_loadu_ps(t[v].lo, p);
                    if (!S2) {
                        _mm512_mask_storeu_ps(row + 16 * v, t[v].store, a);
                        continue;
                    }
                    /* columns outside the row are 0 */
                    const __m512 b = _mm512_maskz_loadu_ps(t[v].hi, p + 16);
                    _mm512_mask_storeu_ps(row + 16 * v, t[v].store, _mm512_permutex2var_ps(a, even, b));
                    if (phases > 1)
                        _mm512_mask_storeu_ps(row + q->plane + 16 * v, t[v].store, _mm512_permutex2var_ps(a, odd, b));
                }
            }
            /* the cells between the plane's rows and the next plane, 31 at most */
            const size_t rows_end = q->hq * wq, gap = q->plane - rows_end;
            for (size_t px = 0; px < phases; px++) {
                float *z = plane + px * q->plane + rows_end;
                _mm512_mask_storeu_ps(z, (__mmask16)lanes(0, (int64_t)gap, 16), _mm512_setzero_ps());
                _mm512_mask_storeu_ps(z + 16, (__mmask16)lanes(16, (int64_t)gap, 32) >> 16, _mm512_setzero_ps());
            }
        }
}

__attribute__((target("avx512f")))
static int split__avx512(const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    const size_t sh = g->sh, sw = g->sw, wq = q->wq, W = g->in_w, nv = (wq + 15) / 16;
    /* without padding or stride the scalar split is one copy */
    if (nv > SPLIT_MAX_VECTORS || sw > 2 || split_is_input(g)) return 0;
    split_vec t[SPLIT_MAX_VECTORS];
    for (size_t v = 0; v < nv; v++) {
        /* lane i of vector v of phase px reads column first + i sw + px:
         * the columns first .. first + 16 sw - 1 are loaded where they are
         * in the row (0 elsewhere), once for the phases, the first n lanes
         * stored */
        const int64_t first = (int64_t)(16 * v * sw) - (int64_t)g->pw;
        const size_t n = wq - 16 * v < 16 ? wq - 16 * v : 16;
        const uint32_t m2 = lanes(-first, (int64_t)W - first, 32);
        t[v].first = first;
        t[v].lo = (__mmask16)(m2 & 0xFFFF);
        t[v].hi = (__mmask16)(m2 >> 16);
        t[v].store = (__mmask16)((1u << n) - 1);
    }
    /* rows of one or two vectors with the loops over them unrolled (the
     * ResNet-style preset's splits, which took 8% of its batch-1 run, in
     * about half the time) */
    if (nv == 1 && sw == 1) split_rows__avx512(1, 0, g, q, t, nv, x, xs);
    else if (nv == 2 && sw == 1) split_rows__avx512(2, 0, g, q, t, nv, x, xs);
    else if (nv == 1) split_rows__avx512(1, 1, g, q, t, nv, x, xs);
    else if (nv == 2) split_rows__avx512(2, 1, g, q, t, nv, x, xs);
    else if (sw == 1) split_rows__avx512(0, 0, g, q, t, nv, x, xs);
    else split_rows__avx512(0, 1, g, q, t, nv, x, xs);
    const size_t planes = (size_t)g->in_c * sh * sw;
    memset(xs + planes * q->plane, 0, (q->floats - planes * q->plane) * sizeof *xs);
    return 1;
}

/* xs = the split input of sample x by isa's vector split; 0 (nothing
 * written) where isa has none for g */
int dcz_shift_split_vector(dcz_isa isa, const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    if (isa == DCZ_ISA_AVX512) return split__avx512(g, q, x, xs);
    if (isa == DCZ_ISA_AVX2) return split1__avx2(g, q, x, xs) || split2__avx2(g, q, x, xs);
    return 0;
}
#endif /* DCZ_BUILD_F32_X86 */
