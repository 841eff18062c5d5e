/* kernels_bands.c: a pointwise convolution and the depthwise one after it
 * by bands of output rows (bands.h says why).
 *
 * For each band of the depthwise layer's output rows (rows of them,
 * dcz_bands), the pointwise layer computes, by dcz_gemm_f32_act over the
 * columns of those input rows (or on its shift form over those pixels,
 * dcz_shift_pixels__avx512), the rows of its output the band reads that
 * no band before computed, into a ring of `ring` rows a channel (row iy in
 * slot iy % ring), then the depthwise kernel (dcz_shift_dw_band__avx512)
 * computes the band from the ring. A band reads (rows - 1) stride + k rows
 * and shares k - stride with the one before, which stay in the ring: no
 * row is computed twice but where a thread's first band starts. The
 * product starts each computation on a row that is a multiple of `align`
 * (16 / gcd(in_w, 16)), so that its whole vectors of a row of the input
 * end within it (a plane of whole vectors: in_h in_w a multiple of 16),
 * and ends on one or at the image's last row; the ring holds the band's
 * rows and those up to two alignments around them. A sample's bands are
 * split over the threads in runs, each thread its ring.
 *
 * Each output of the product (and of the shift form) is its bias plus its
 * products in order whatever columns a call takes (gemm.h), and each of
 * the depthwise layer its taps in column order over the same rows, so the
 * pair gives the bits of the two layers run apart; tests/unit/test_bands.c
 * checks it on every geometry of its grid, dense and pruned, against the
 * two layers' references.
 *
 * x86 with AVX-512 only: the depthwise kernel of the bands is the rows
 * kernel's (shift_depthwise.c).
 */
#include <string.h>

#include "runtime/cpu/f32/bands.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/isa.h"

/* The wide tensor a pair must exceed to run by bands: below it, the
 * tensor stays in the second-level cache between the layers. */
#define BANDS_MIN_BYTES ((uint64_t)1 << 20)
/* The same where the pointwise layer runs on its shift form (a compressed
 * one), whose few multiply-adds a band leaves less to hide its set-up
 * behind: compressed MobileNetV2 (pruned to 90%, one thread, AMD EPYC Zen
 * 5) by bands, against apart: its 96 x 112 x 112 pair (4.8 MB) 204 against
 * 284 us, its 144 x 56 x 56 ones (1.8 MB) 140 against 137 and 94 against
 * 88. */
#define BANDS_SHIFT_MIN_BYTES ((uint64_t)2 << 20)
/* A ring's bytes at most, where a band of more rows than the depthwise
 * kernel's call fits in them. */
#define BANDS_RING_BYTES ((uint64_t)256 << 10)

#if DCZ_BUILD_F32_X86
static uint32_t bands_align(uint32_t w)
{
    uint32_t a = 16, b = w % 16;
    while (b) {
        const uint32_t t = a % b;
        a = b;
        b = t;
    }
    return 16 / a;
}

/* ring rows for bands of `rows` output rows */
static uint32_t ring_rows(const dcz_conv_geom *d, uint32_t rows, uint32_t align)
{
    const uint32_t need = (rows - 1) * d->sh + d->kh + 2 * (align - 1);
    return (need + align - 1) / align * align;
}

static void bands_of(const dcz_conv_geom *d, dcz_bands *p);

/* what the depthwise layer's geometry alone says: a ring of at most half
 * the plane's rows (planes of few rows, whose rows' alignment is 8 or 16,
 * would take most of the plane for a few bands) */
static int bands_geom(const dcz_conv_geom *d)
{
    const uint64_t plane = (uint64_t)d->in_h * d->in_w;
    if (dcz_shift_best() != DCZ_ISA_AVX512 || dcz_conv_groups(d) != d->in_c || d->out_c != d->in_c ||
        d->in_w < 16 || plane % 16 != 0 || plane * d->in_c * sizeof(float) < BANDS_MIN_BYTES)
        return 0;
    dcz_bands p;
    bands_of(d, &p);
    return 2 * p.ring <= d->in_h;
}

static void bands_of(const dcz_conv_geom *d, dcz_bands *p)
{
    const uint32_t step = dcz_shift_dw_band_step(d);
    const uint64_t row_bytes = (uint64_t)d->in_c * d->in_w * sizeof(float);
    const uint32_t align = bands_align(d->in_w);
    uint32_t rows = step;   /* out_h within the rows kernel's 512 (dcz_shift_dw_band_takes) */
    while (rows + step <= d->out_h && ring_rows(d, rows + step, align) * row_bytes <= BANDS_RING_BYTES) rows += step;
    p->align = align;
    p->rows = rows;
    p->ring = ring_rows(d, rows, align);
}

uint64_t dcz_conv2d_bands_floats(const dcz_conv_geom *d)
{
    if (!bands_geom(d)) return 0;
    dcz_bands p;
    bands_of(d, &p);
    /* the ring, then the depthwise kernel's plan, each from a line */
    return (uint64_t)d->in_c * p.ring * d->in_w + 16 + (dcz_shift_dw_band_plan_bytes() + 3) / 4 + 16;
}

int dcz_conv2d_bands_takes(const dcz_conv_geom *pw, const dcz_shift *pf, const dcz_conv_geom *d, const dcz_shift *f)
{
    const uint64_t wide = (uint64_t)d->in_c * d->in_h * d->in_w * sizeof(float);
    if (pf && wide < BANDS_SHIFT_MIN_BYTES) return 0;
    return dcz_conv_pointwise(pw) && dcz_conv_groups(pw) == 1 && pw->out_c == d->in_c && pw->out_h == d->in_h &&
           pw->out_w == d->in_w && bands_geom(d) && dcz_shift_dw_band_takes(d, f);
}

void dcz_conv2d_bands_of(const dcz_conv_geom *d, dcz_bands *p)
{
    bands_of(d, p);
}

typedef struct bands_job {
    const dcz_bands *p;
    const dcz_conv_geom *pw, *d;
    const float *w, *pb, *db;
    const dcz_shift *pf;   /* where w is NULL */
    const dcz_act *pact, *dact;
    const dcz_shift *f;
    const float *x;   /* the sample's */
    float *scratch;
    uint64_t slice;
    uint32_t parts;
    float *y;         /* the sample's */
} bands_job;

/* the pointwise layer's output rows r0 .. r1 - 1 into the ring, a call
 * for each lap of it they span */
static void bands_fill(const bands_job *j, float *ring, uint32_t r0, uint32_t r1)
{
    const size_t W = j->d->in_w, plane = (size_t)j->d->in_h * W, ring_n = (size_t)j->p->ring * W;
    while (r0 < r1) {
        const uint32_t lap = (r0 / j->p->ring + 1) * j->p->ring, e = r1 < lap ? r1 : lap;
        float *at = ring + (size_t)(r0 % j->p->ring) * W;
        if (j->w)
            dcz_gemm_f32_act(j->pact, j->pw->out_c, (size_t)(e - r0) * W, j->pw->in_c, j->w, j->pw->in_c,
                             j->x + (size_t)r0 * W, plane, j->pb, NULL, at, ring_n);
        else
            dcz_shift_pixels__avx512(j->pw, j->pf, j->pb, j->pact, j->x, (size_t)r0 * W, (size_t)(e - r0) * W, at,
                                     ring_n);
        r0 = e;
    }
}

static void bands_part(void *ctx, uint32_t part)
{
    const bands_job *j = ctx;
    const dcz_conv_geom *d = j->d;
    const uint32_t rows = j->p->rows, a = j->p->align, bands = (d->out_h + rows - 1) / rows;
    if (part >= j->parts) return;   /* a pool of more threads than bands */
    uint32_t b0, b1;
    dcz_part_range(bands, part, j->parts, &b0, &b1);
    float *ring = (float *)(((uintptr_t)(j->scratch + (size_t)part * j->slice) + 63) & ~(uintptr_t)63);
    void *plan = (void *)(((uintptr_t)(ring + (size_t)d->in_c * j->p->ring * d->in_w) + 63) & ~(uintptr_t)63);
    dcz_shift_dw_band_plan__avx512(d, plan);
    uint32_t have = 0;   /* the rows computed: up to have (none before b0's) */
    for (uint32_t b = b0; b < b1; b++) {
        const uint32_t oy0 = b * rows, oy1 = oy0 + rows < d->out_h ? oy0 + rows : d->out_h;
        const int64_t lo = (int64_t)oy0 * d->sh - d->ph, hi = (int64_t)(oy1 - 1) * d->sh - d->ph + d->kh;
        const uint32_t first = lo < 0 ? 0 : (uint32_t)lo, end = hi > d->in_h ? d->in_h : (uint32_t)hi;
        const uint32_t from = b == b0 ? first / a * a : have;
        uint32_t to = (end + a - 1) / a * a;
        if (to > d->in_h) to = d->in_h;
        if (to > from) bands_fill(j, ring, from, to);
        if (to > have) have = to;
        dcz_shift_dw_band__avx512(plan, d, j->f, j->db, j->dact, ring, j->p->ring, oy0, oy1, j->y);
    }
}

void dcz_conv2d_bands_pool(dcz_pool *pool, const dcz_conv_geom *pw, const float *w, const dcz_shift *pf,
                           const float *pb, const dcz_act *pact, const dcz_conv_geom *d, const dcz_shift *f,
                           const float *db, const dcz_act *dact, const float *x, size_t batch, float *scratch,
                           uint64_t slice, float *y)
{
    dcz_bands plan;
    bands_of(d, &plan);
    const dcz_bands *p = &plan;
    const uint32_t bands = (d->out_h + p->rows - 1) / p->rows;
    uint32_t parts = pool ? dcz_pool_threads(pool) : 1;
    if (parts > bands) parts = bands;
    const size_t in_sample = (size_t)pw->in_c * pw->in_h * pw->in_w, out_sample = (size_t)d->out_c * d->out_h * d->out_w;
    for (size_t s = 0; s < batch; s++) {
        bands_job j = { p, pw, d, w, pb, db, pf, pact, dact, f, x + s * in_sample, scratch, slice, parts,
                        y + s * out_sample };
        if (parts > 1) dcz_pool_run(pool, bands_part, &j);
        else bands_part(&j, 0);
    }
}
#else
uint64_t dcz_conv2d_bands_floats(const dcz_conv_geom *d)
{
    (void)d;
    return 0;
}

int dcz_conv2d_bands_takes(const dcz_conv_geom *pw, const dcz_shift *pf, const dcz_conv_geom *d, const dcz_shift *f)
{
    (void)pw; (void)pf; (void)d; (void)f;
    return 0;
}

void dcz_conv2d_bands_of(const dcz_conv_geom *d, dcz_bands *p)
{
    (void)d;
    p->rows = p->ring = p->align = 0;
}

void dcz_conv2d_bands_pool(dcz_pool *pool, const dcz_conv_geom *pw, const float *w, const dcz_shift *pf,
                           const float *pb, const dcz_act *pact, const dcz_conv_geom *d, const dcz_shift *f,
                           const float *db, const dcz_act *dact, const float *x, size_t batch, float *scratch,
                           uint64_t slice, float *y)
{
    (void)pool; (void)pw; (void)w; (void)pf; (void)pb; (void)pact; (void)d; (void)f; (void)db; (void)dact;
    (void)x; (void)batch; (void)scratch; (void)slice; (void)y;
}
#endif
