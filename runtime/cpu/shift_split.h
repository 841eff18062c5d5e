/* shift_split.h: the geometry of the split input that the shift forms
 * read, float (cpu/f32/kernels_shift.c, whose opening comment describes
 * the split) and 8-bit integer (cpu/q8/kernels_qshift.c): a sample padded
 * and split by stride phase, its planes, the taps' offsets in it, and the
 * scratch that holds it and the planes as computed.
 */
#ifndef DCZ_RUNTIME_CPU_SHIFT_SPLIT_H
#define DCZ_RUNTIME_CPU_SHIFT_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

/* the split input's geometry */
typedef struct split_geom {
    size_t hq, wq, plane;   /* a phase plane */
    size_t floats;          /* the split input, its margin included */
    size_t out16;           /* out_h wq rounded up to 16: an output plane as computed */
} split_geom;

/* Cells of a row of a phase plane. At column stride 1 a row's right
 * padding is the next row's left, its pw zeros: rows of in_w + pw cells,
 * not in_w + 2 pw. The last output column, out_w - 1 = in_w + 2 pw - kw,
 * reads up to input column in_w + pw - 1, so a tap reads at most pw cells
 * past a row's end, the next row's zeros, at the offset it would read the
 * row's own right padding at. The planes as computed are that many cells
 * narrower a row: 28 x 28 pad 1 takes 51 vectors rather than 53. */
static inline uint64_t split_wq(const dcz_conv_geom *g)
{
    if (g->sw == 1) return (uint64_t)g->in_w + g->pw;
    return ((uint64_t)g->in_w + 2 * (uint64_t)g->pw + g->sw - 1) / g->sw;
}

/* Whether g's split input is the input itself (no padding at stride 1). */
static inline int split_is_input(const dcz_conv_geom *g)
{
    return g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* The float form's rows: 16 cells where rows of 16 take no more vectors of
 * the planes as computed (14 x 14 pad 1: 14 vectors both, rows of 15 or
 * 16), so that with the planes at 64-byte boundaries (plane_stride) the
 * taps at window column 0, and at stride 2 column 1 too, read whole
 * aligned vectors, not across two cache lines; not where the split is the
 * input itself (no padding at stride 1). One core of a Xeon, the
 * ResNet-style preset compressed, batch 1, with the planes aligned: its
 * 14 x 14 layers 12.0 -> 10.2 (stride 2) and 17.8 -> 16.0 us. */
static inline uint64_t float_wq(const dcz_conv_geom *g)
{
    const uint64_t wq = split_wq(g);
    if (wq >= 16 || split_is_input(g)) return wq;
    return (uint64_t)g->out_h * wq + 15 >= (uint64_t)g->out_h * 16 ? 16 : wq;
}

/* Cells from one phase plane of the split input to the next: hq wq, and in
 * the float form rounded up to whole vectors, an odd number of cache lines,
 * so that every plane starts at a 64-byte boundary (shift_run aligns the
 * first) and the same cell of each channel falls in a different cache set
 * (planes of 16 x 16 cells, 1 KB apart, put every fourth channel in the
 * same sets: the conv-heavy CNN's 64 -> 64 layer over 14 x 14 took 90 us,
 * 63 with planes 17 lines apart). One core of a Xeon, the ResNet-style
 * preset compressed, batch 1, per layer with the planes aligned, rows as
 * they were (us): 14 x 14 stride 2 13.4 -> 12.0, 14 x 14 20.7 -> 17.8,
 * 7 x 7 stride 2 9.2 -> 7.8, 7 x 7 11.7 -> 10.9. */
static inline uint64_t plane_stride(const dcz_conv_geom *g, uint64_t hq, uint64_t wq, int f32)
{
    /* the integer form's, and the input itself where the split is a copy */
    if (!f32 || split_is_input(g)) return hq * wq;
    const uint64_t lines = (hq * wq + 15) / 16;
    return (lines | 1) * 16;
}

/* units: channels of the split input (the integer form: quads of channels);
 * f32: the float form's (float_wq, plane_stride) */
static inline split_geom split_geom_of(const dcz_conv_geom *g, uint32_t units, int f32)
{
    split_geom s;
    s.hq = ((size_t)g->in_h + 2 * (size_t)g->ph + g->sh - 1) / g->sh;
    s.wq = (size_t)(f32 ? float_wq(g) : split_wq(g));
    s.plane = (size_t)plane_stride(g, s.hq, s.wq, f32);
    /* the last plane is read up to (kw - 1) / sw + 15 cells past its end */
    s.floats = (size_t)units * g->sh * g->sw * s.plane + (g->kw - 1) / g->sw + 16;
    s.out16 = ((size_t)g->out_h * s.wq + 15) / 16 * 16;
    return s;
}

/* floats (or 32-bit cells) of the split input of units channels and of the
 * output planes as computed; saturates rather than wraps for absurd
 * geometries */
static inline uint64_t scratch_cells(const dcz_conv_geom *g, uint32_t units, int f32)
{
    const uint64_t hq = ((uint64_t)g->in_h + 2 * (uint64_t)g->ph + g->sh - 1) / g->sh;
    const uint64_t wq = f32 ? float_wq(g) : split_wq(g);
    const uint64_t planes = (uint64_t)units * g->sh * g->sw, plane = plane_stride(g, hq, wq, f32);
    const uint64_t out16 = ((uint64_t)g->out_h * wq + 15) / 16 * 16;
    if (plane > UINT32_MAX || planes > UINT32_MAX || out16 > UINT32_MAX) return UINT64_MAX;
    /* the output planes of whole blocks of up to 4 channels */
    const uint64_t in = planes * plane, out = out16 * (((uint64_t)g->out_c + 3) / 4 * 4);  /* each below 2^64 */
    if (in > UINT64_MAX / 4 || out > UINT64_MAX / 4) return UINT64_MAX;
    return in + (g->kw - 1) / g->sw + 16 + 16 + 16 + out;   /* 16 + 16: the split's and planes_at's alignment */
}

/* The planes as computed, after the split input xs at the first 64-byte
 * boundary, so that a vector's store or a tile's row fills one cache line
 * (a tile's rows stored across two took twice as long). */
static inline void *planes_at(void *xs, const split_geom *q)
{
    return (void *)(((uintptr_t)((uint32_t *)xs + q->floats) + 63) & ~(uintptr_t)63);
}


/* the offset of weight (c, ky, kx) in the split input */
static inline uint32_t tap_offset(const dcz_conv_geom *g, const split_geom *q, uint32_t c, uint32_t ky, uint32_t kx)
{
    return (uint32_t)((((size_t)c * g->sh + ky % g->sh) * g->sw + kx % g->sw) * q->plane +
                      ky / g->sh * q->wq + kx / g->sw);
}

/* toff[k] = tap k's offset for quad 0 (the AMX tiles' input) */
static inline void tap_offsets(const dcz_conv_geom *g, const split_geom *q, uint32_t *toff)
{
    for (uint32_t k = 0; k < g->kh * g->kw; k++) toff[k] = tap_offset(g, q, 0, k / g->kw, k % g->kw);
}

/* The copies of the AMX tiles' copied rows form: after the planes as
 * computed t (of whole blocks of 4 channels), at a 64-byte boundary. */
static inline uint8_t *copies_at(int32_t *t, const split_geom *q, const dcz_conv_geom *g)
{
    return (uint8_t *)(((uintptr_t)(t + q->out16 * (((size_t)g->out_c + 3) / 4 * 4)) + 63) & ~(uintptr_t)63);
}


#if DCZ_BUILD_X86
/* bits lo .. hi - 1 of the first n (each bound clamped to 0 .. n) */
static inline uint32_t lanes(int64_t lo, int64_t hi, int64_t n)
{
    lo = lo < 0 ? 0 : lo > n ? n : lo;
    hi = hi < lo ? lo : hi > n ? n : hi;
    const uint64_t below_hi = hi >= 64 ? ~0ull : (1ull << hi) - 1, below_lo = (1ull << lo) - 1;
    return (uint32_t)(below_hi & ~below_lo);
}

/* The lanes of the vector of L cells from cell p, at column col of its
 * row, that are output cells: columns below out_w of rows wq wide, cells
 * below cells. */
static inline uint32_t keep_lanes(size_t L, size_t p, int64_t col, int64_t wq, int64_t out_w, size_t cells)
{
    uint32_t keep = 0;
    if (out_w >= (int64_t)L) {
        /* rows of L cells or more: the lanes up to the row's out_w, and the
         * next row's, all outputs, past its start, without the loop over
         * the rows' starts below: int8 MobileNetV3-Small's first layer (791
         * vectors a plane), one core of an AMD EPYC (Zen 5), dcz bench
         * --per-layer least of three alternated rounds, 35.5 -> 34.9 us */
        const uint32_t all = (uint32_t)((1ull << L) - 1);
        const int64_t cut = out_w - col, next = wq - col;
        keep = (cut <= 0 ? 0 : cut >= (int64_t)L ? all : (1u << cut) - 1) | (next >= (int64_t)L ? 0 : (all << next) & all);
    } else {
        /* lane s starts a row's cells at column c */
        for (int64_t s = 0, c = col; s < (int64_t)L; s += wq - c, c = 0) keep |= lanes(s, s + out_w - c, (int64_t)L);
    }
    return keep & lanes(0, (int64_t)cells - (int64_t)p, (int64_t)L);
}
#endif

#endif /* DCZ_RUNTIME_CPU_SHIFT_SPLIT_H */
