/* kernels_spmm.c: a sparse fully connected float layer on a batch (spmm)
 * on model.h's execution form, by tiles of samples, over the worker
 * threads or not. Batch 1 runs on its own forms (kernels_spmv.c).
 *
 *   spmm (batch N): a tile of DCZ_SPMM_TILE samples of x is transposed into
 *     scratch (cols, tile), then each entry is decoded once and adds w times
 *     the row of the tile at its column to the tile's accumulators, over
 *     the samples at once, no gather. AVX2 walks two rows side by side with
 *     up to four registers of eight samples each (eight independent sums
 *     hide the latency of the additions, and an entry's decoding serves 32
 *     samples; the tile is filled by 8 x 8 transposes in registers); NEON
 *     one row, 16 samples in four registers. Over threads
 *     (dcz_spmm_pool) the tile is transposed once, by all of them, and
 *     then shared: the threads take rows in chunks.
 *
 * Summation order. Every kernel here sums as the references do: the bias
 * (or 0) first, then w * x, rounded, added entry by entry in column order
 * (the column form visits a row's entries in that order too). Products and
 * sums are not fused (the build uses -ffp-contract=off), so every variant
 * gives the references' bits, and a sample the same bits at any batch
 * (tests/unit/test_static.c runs a batch whole and in chunks of one). The
 * lane form (kernels_lanes.c) is the exception: it fuses each product into
 * the sum, so where it runs (batch 1, AVX-512) a row is within rounding of
 * these.
 *
 * Dispatch (dcz_spmm): x86 with AVX2: __avx2; aarch64: __neon; otherwise,
 * or when a variant declines (spmm without scratch), dcz_spmm_ref. The x86
 * variant is compiled with a per-function target attribute, so libdcz needs
 * no global -m flags.
 *
 * Checked by tests/unit/test_simd.c: every variant the machine runs against
 * the references over an edge-case grid, bit for bit.
 */
#include <string.h>

#include "runtime/cpu/f32/sparse.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>
#define DCZ_X86 1
#elif DCZ_BUILD_F32_NEON
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

#define SPMM_TILE DCZ_SPMM_TILE
/* Columns of one panel: as many as give a row about 16 entries in it, at
 * least SPMM_PANEL_MIN (whose part of the tile, 16 KiB, stays in the
 * first-level cache) and at most SPMM_PANEL_MAX (256 KiB, the second
 * level). Measured on 1000 x 4096 at 25% and 4096 x 4096 at 4%, batch 64
 * (bench/bench_spmv.c): the whole tile, 512 KiB, took 1.4 and 1.3 times as
 * long as these panels. */
#define SPMM_PANEL_MIN 128
#define SPMM_PANEL_MAX 2048

uint64_t dcz_spmm_scratch_floats(uint32_t rows, uint32_t cols)
{
    /* the tile, then the sums (rows, SPMM_TILE) and cursors (rows, 2) */
    return (uint64_t)cols * SPMM_TILE +
           (cols > SPMM_PANEL_MIN ? (uint64_t)rows * (SPMM_TILE + 2) : 0);
}

/* Columns c0 .. c1 - 1 of tile (cols, SPMM_TILE) = samples b0 .. b0 + nb - 1
 * of x (batch, cols), transposed; lanes nb .. SPMM_TILE - 1 are 0. */
static void fill_tile(const float *x, uint32_t cols, uint32_t c0, uint32_t c1, size_t b0,
                      size_t nb, float *tile)
{
    for (uint32_t c = c0; c < c1; c++) {
        float *t = tile + (size_t)c * SPMM_TILE;
        size_t b = 0;
        for (; b < nb; b++) t[b] = x[(b0 + b) * cols + c];
        for (; b < SPMM_TILE; b++) t[b] = 0.0f;
    }
}

/* y[(b0 + i) rows + r] = out[i] for nb samples of a tile */
static inline void store_tile(const float *out, size_t nb, size_t b0, uint32_t rows, uint32_t r, float *y)
{
    for (size_t i = 0; i < nb; i++) y[(b0 + i) * rows + r] = out[i];
}

/* ---- x86 -------------------------------------------------------------------- */
#ifdef DCZ_X86

/* the panel width of a layer (SPMM_PANEL_MIN .. SPMM_PANEL_MAX): only the
 * AVX2 rows walk panels */
static uint32_t spmm_panel(const dcz_sparse *s)
{
    const double density = (double)s->entries / ((double)s->rows * s->cols + 1);
    uint32_t p = SPMM_PANEL_MIN;
    while (p < SPMM_PANEL_MAX && p * density < 16) p *= 2;
    return p;
}

/* fill_tile by blocks of 8 samples x 8 columns: eight row loads, a
 * transpose in registers, eight column stores (samples past nb load as 0);
 * the columns past the last whole block by fill_tile. */
__attribute__((target("avx2")))
static void fill_tile__avx2(const float *x, uint32_t cols, uint32_t c0, uint32_t c1, size_t b0,
                            size_t nb, float *tile)
{
    uint32_t c = c0;
    for (; c1 - c >= 8; c += 8) {
        for (size_t h = 0; h < SPMM_TILE; h += 8) {
            __m256 r[8];
            for (size_t i = 0; i < 8; i++)
                r[i] = h + i < nb ? _mm256_loadu_ps(x + (b0 + h + i) * cols + c) : _mm256_setzero_ps();
            /* pairs of samples interleaved, then quads, then halves swapped */
            const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
            const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
            const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
            const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
            const __m256 q0 = _mm256_shuffle_ps(t0, t2, 0x44), q1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            const __m256 q2 = _mm256_shuffle_ps(t1, t3, 0x44), q3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            const __m256 q4 = _mm256_shuffle_ps(t4, t6, 0x44), q5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            const __m256 q6 = _mm256_shuffle_ps(t5, t7, 0x44), q7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float *t = tile + (size_t)c * SPMM_TILE + h;
            _mm256_storeu_ps(t + 0 * SPMM_TILE, _mm256_permute2f128_ps(q0, q4, 0x20));
            _mm256_storeu_ps(t + 1 * SPMM_TILE, _mm256_permute2f128_ps(q1, q5, 0x20));
            _mm256_storeu_ps(t + 2 * SPMM_TILE, _mm256_permute2f128_ps(q2, q6, 0x20));
            _mm256_storeu_ps(t + 3 * SPMM_TILE, _mm256_permute2f128_ps(q3, q7, 0x20));
            _mm256_storeu_ps(t + 4 * SPMM_TILE, _mm256_permute2f128_ps(q0, q4, 0x31));
            _mm256_storeu_ps(t + 5 * SPMM_TILE, _mm256_permute2f128_ps(q1, q5, 0x31));
            _mm256_storeu_ps(t + 6 * SPMM_TILE, _mm256_permute2f128_ps(q2, q6, 0x31));
            _mm256_storeu_ps(t + 7 * SPMM_TILE, _mm256_permute2f128_ps(q3, q7, 0x31));
        }
    }
    fill_tile(x, cols, c, c1, b0, nb, tile);
}

/* w times tile lanes 8q .. 8q + 7 added to A */
#define MADD_AVX2(A, q) A = _mm256_add_ps(A, _mm256_mul_ps(w_, _mm256_loadu_ps(t_ + 8 * (q))))
/* One entry e of a row into its accumulators A0 .. A(nq - 1) (tile lanes
 * 8q .. 8q + 7); col is the row's cursor. Named registers, not an array,
 * so the compiler keeps them in registers. */
#define ENTRY_AVX2(e, col, A0, A1, A2, A3) do { \
    const uint8_t st_ = s->step[e]; \
    col += st_; \
    if (st_ != DCZ_STEP_FILLER) { \
        const __m256 w_ = _mm256_set1_ps(cbk ? s->codebook[s->idx[e]] : s->val[e]); \
        const float *t_ = tile + (size_t)col * SPMM_TILE; \
        MADD_AVX2(A0, 0); \
        if (nq > 1) MADD_AVX2(A1, 1); \
        if (nq > 2) MADD_AVX2(A2, 2); \
        if (nq > 3) MADD_AVX2(A3, 3); \
    } \
} while (0)

/* The accumulators of row r (lanes of nb samples) into y. */
__attribute__((target("avx2"), always_inline))
static inline void store_row__avx2(__m256 A0, __m256 A1, __m256 A2, __m256 A3, size_t nb,
                                   size_t b0, uint32_t rows, uint32_t r, float *y)
{
    float out[SPMM_TILE];
    _mm256_storeu_ps(out, A0);
    _mm256_storeu_ps(out + 8, A1);
    _mm256_storeu_ps(out + 16, A2);
    _mm256_storeu_ps(out + 24, A3);
    store_tile(out, nb, b0, rows, r, y);
}

/* Rows r0 .. r1 - 1 on one tile of nb <= 8 nq samples: two rows side by
 * side over their common length, then the rest of the longer one. cbk and
 * nq are constants at every call, so each combination compiles to its own
 * loop with the accumulators in registers. */
__attribute__((target("avx2"), always_inline))
static inline void rows_tile__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1,
                                   const float *bias, const float *tile, size_t b0, size_t nb,
                                   float *y, const int cbk, const int nq)
{
    uint32_t r = r0;
    for (; r + 2 <= r1; r += 2) {
        const uint32_t sa = s->row_ptr[r], sb = s->row_ptr[r + 1], eb = s->row_ptr[r + 2];
        const uint32_t n = sb - sa < eb - sb ? sb - sa : eb - sb;
        __m256 a0 = _mm256_set1_ps(bias ? bias[r] : 0.0f), a1 = a0, a2 = a0, a3 = a0;
        __m256 c0 = _mm256_set1_ps(bias ? bias[r + 1] : 0.0f), c1 = c0, c2 = c0, c3 = c0;
        uint32_t ca = 0, cc = 0;
        for (uint32_t i = 0; i < n; i++) {
            ENTRY_AVX2(sa + i, ca, a0, a1, a2, a3);
            ENTRY_AVX2(sb + i, cc, c0, c1, c2, c3);
        }
        for (uint32_t e = sa + n; e < sb; e++) ENTRY_AVX2(e, ca, a0, a1, a2, a3);
        for (uint32_t e = sb + n; e < eb; e++) ENTRY_AVX2(e, cc, c0, c1, c2, c3);
        store_row__avx2(a0, a1, a2, a3, nb, b0, s->rows, r, y);
        store_row__avx2(c0, c1, c2, c3, nb, b0, s->rows, r + 1, y);
    }
    if (r < r1) {
        __m256 a0 = _mm256_set1_ps(bias ? bias[r] : 0.0f), a1 = a0, a2 = a0, a3 = a0;
        uint32_t ca = 0;
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++)
            ENTRY_AVX2(e, ca, a0, a1, a2, a3);
        store_row__avx2(a0, a1, a2, a3, nb, b0, s->rows, r, y);
    }
}

/* Rows r0 .. r1 - 1 of a matrix wider than one panel, panel by panel, so
 * the part of the tile the entries read stays in cache: each row's sums and
 * cursor wait in acc and cur between panels. */
__attribute__((target("avx2"), always_inline))
static inline void rows_panels__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1,
                                     const float *bias, const float *tile, size_t b0, size_t nb,
                                     float *y, float *acc, uint32_t *cur, uint32_t panel,
                                     const int cbk, const int nq)
{
    for (uint32_t p0 = 0; p0 < s->cols; p0 += panel) {
        const uint32_t pend = s->cols - p0 > panel ? p0 + panel : s->cols;
        for (uint32_t r = r0; r < r1; r++) {
            float *ar = acc + (size_t)(r - r0) * SPMM_TILE;
            uint32_t *cr = cur + (size_t)(r - r0) * 2;
            __m256 a0, a1, a2, a3;
            uint32_t e, col;
            if (p0 == 0) {
                a0 = a1 = a2 = a3 = _mm256_set1_ps(bias ? bias[r] : 0.0f);
                e = s->row_ptr[r];
                col = 0;
            } else {
                a0 = _mm256_loadu_ps(ar);
                a1 = _mm256_loadu_ps(ar + 8);
                a2 = _mm256_loadu_ps(ar + 16);
                a3 = _mm256_loadu_ps(ar + 24);
                e = cr[0];
                col = cr[1];
            }
            const uint32_t end = s->row_ptr[r + 1];
            /* the entries whose column lies in this panel */
            for (; e < end && col + s->step[e] < pend; e++) ENTRY_AVX2(e, col, a0, a1, a2, a3);
            if (pend == s->cols) {
                store_row__avx2(a0, a1, a2, a3, nb, b0, s->rows, r, y);
            } else {
                _mm256_storeu_ps(ar, a0);
                _mm256_storeu_ps(ar + 8, a1);
                _mm256_storeu_ps(ar + 16, a2);
                _mm256_storeu_ps(ar + 24, a3);
                cr[0] = e;
                cr[1] = col;
            }
        }
    }
}

/* rows_tile__avx2 with its constants: codebook or values, and the eighths
 * of the tile nb samples fill. */
#define ROWS_TILE_NQ(cbk) do { \
    switch ((nb + 7) / 8) { \
    case 1: rows_tile__avx2(s, r0, r1, bias, tile, b0, nb, y, cbk, 1); break; \
    case 2: rows_tile__avx2(s, r0, r1, bias, tile, b0, nb, y, cbk, 2); break; \
    case 3: rows_tile__avx2(s, r0, r1, bias, tile, b0, nb, y, cbk, 3); break; \
    default: rows_tile__avx2(s, r0, r1, bias, tile, b0, nb, y, cbk, 4); break; \
    } \
} while (0)
#define ROWS_PANELS(cbk) \
    rows_panels__avx2(s, r0, r1, bias, tile, b0, nb, y, acc, cur, panel, cbk, 4)

/* Rows r0 .. r1 - 1 on a filled tile of nb samples from b0; work holds the
 * sums and cursors of those rows between panels. */
__attribute__((target("avx2")))
static void tile_rows__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                            const float *tile, size_t b0, size_t nb, float *y, float *work)
{
    float *acc = work;
    uint32_t *cur = (uint32_t *)(acc + (size_t)(r1 - r0) * SPMM_TILE);
    const uint32_t panel = spmm_panel(s);
    if (s->cols > panel && s->idx) ROWS_PANELS(1);
    else if (s->cols > panel) ROWS_PANELS(0);
    else if (s->idx) ROWS_TILE_NQ(1);
    else ROWS_TILE_NQ(0);
}

int dcz_spmm__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch)
{
    if (!scratch) return 0;
    for (size_t b0 = 0; b0 < batch; b0 += SPMM_TILE) {
        const size_t nb = batch - b0 < SPMM_TILE ? batch - b0 : SPMM_TILE;
        fill_tile__avx2(x, s->cols, 0, s->cols, b0, nb, scratch);
        tile_rows__avx2(s, r0, r1, bias, scratch, b0, nb, y, scratch + (size_t)s->cols * SPMM_TILE);
    }
    return 1;
}

#endif /* DCZ_X86 */

/* ---- aarch64 ---------------------------------------------------------------- */
#ifdef DCZ_NEON

/* Rows r0 .. r1 - 1 on a filled tile of nb samples from b0: one row at a
 * time, 16 samples of the tile in four registers, then the next 16. */
static void tile_rows__neon(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                            const float *tile, size_t b0, size_t nb, float *y)
{
    for (size_t h = 0; h < nb; h += 16) {
        const size_t nh = nb - h < 16 ? nb - h : 16;
        for (uint32_t r = r0; r < r1; r++) {
            const float32x4_t b = vdupq_n_f32(bias ? bias[r] : 0.0f);
            float32x4_t a0 = b, a1 = b, a2 = b, a3 = b;
            uint32_t col = 0;
            for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
                col += s->step[e];
                if (s->step[e] == DCZ_STEP_FILLER) continue;
                const float32x4_t w = vdupq_n_f32(dcz_sparse_weight(s, e));
                const float *t = tile + (size_t)col * SPMM_TILE + h;
                a0 = vaddq_f32(a0, vmulq_f32(w, vld1q_f32(t)));
                a1 = vaddq_f32(a1, vmulq_f32(w, vld1q_f32(t + 4)));
                a2 = vaddq_f32(a2, vmulq_f32(w, vld1q_f32(t + 8)));
                a3 = vaddq_f32(a3, vmulq_f32(w, vld1q_f32(t + 12)));
            }
            float out[16];
            vst1q_f32(out, a0);
            vst1q_f32(out + 4, a1);
            vst1q_f32(out + 8, a2);
            vst1q_f32(out + 12, a3);
            store_tile(out, nh, b0 + h, s->rows, r, y);
        }
    }
}

int dcz_spmm__neon(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch)
{
    if (!scratch) return 0;
    for (size_t b0 = 0; b0 < batch; b0 += SPMM_TILE) {
        const size_t nb = batch - b0 < SPMM_TILE ? batch - b0 : SPMM_TILE;
        fill_tile(x, s->cols, 0, s->cols, b0, nb, scratch);
        tile_rows__neon(s, r0, r1, bias, scratch, b0, nb, y);
    }
    return 1;
}

#endif /* DCZ_NEON */

void dcz_spmm_rows(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch)
{
    int done = 0;
    switch (dcz_isa_best()) {
#ifdef DCZ_X86
    case DCZ_ISA_AVX2: done = dcz_spmm__avx2(s, r0, r1, bias, x, batch, y, scratch); break;
#endif
#ifdef DCZ_NEON
    case DCZ_ISA_NEON: done = dcz_spmm__neon(s, r0, r1, bias, x, batch, y, scratch); break;
#endif
    default: break;
    }
    if (!done) dcz_spmm_ref_rows(s, r0, r1, bias, x, batch, y);
}

void dcz_spmm(const dcz_sparse *s, const float *bias, const float *x, size_t batch, float *y,
              float *scratch)
{
    dcz_spmm_rows(s, 0, s->rows, bias, x, batch, y, scratch);
}

/* The two phases of a tile on this machine's vector variant, which the
 * caller knows there is (on x86: AVX2): its columns c0 .. c1 - 1 filled,
 * and rows r0 .. r1 - 1 run on it, work for their sums between panels. */
static void fill_tile_vec(const float *x, uint32_t cols, uint32_t c0, uint32_t c1, size_t b0,
                          size_t nb, float *tile)
{
#ifdef DCZ_X86
    fill_tile__avx2(x, cols, c0, c1, b0, nb, tile);
#else
    fill_tile(x, cols, c0, c1, b0, nb, tile);
#endif
}

static void tile_rows_vec(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                          const float *tile, size_t b0, size_t nb, float *y, float *work)
{
#ifdef DCZ_X86
    tile_rows__avx2(s, r0, r1, bias, tile, b0, nb, y, work);
#elif defined(DCZ_NEON)
    (void)work;
    tile_rows__neon(s, r0, r1, bias, tile, b0, nb, y);
#else
    (void)s; (void)r0; (void)r1; (void)bias; (void)tile; (void)b0; (void)nb; (void)y; (void)work;
#endif
}

/* Whether a vector variant of the tiles runs here (none where the build
 * left the float family's vector kernels out). */
static int tiles_vector(void)
{
#if defined(DCZ_X86) || defined(DCZ_NEON)
    return dcz_isa_best() != DCZ_ISA_REF;
#else
    return 0;
#endif
}

/* One call of dcz_spmm_pool, phase by phase. */
typedef struct spmm_job {
    const dcz_sparse *s;
    const float *bias, *x;
    size_t batch;
    float *y, *scratch;
    uint64_t part_floats;
    int vec;              /* a vector variant runs on tiles; else the reference on rows */
    size_t b0, nb;        /* the tile in hand */
    int fill;             /* this phase transposes the tile's columns, else runs rows */
    uint32_t chunks, next;
} spmm_job;

static void spmm_part(void *ctx, uint32_t t)
{
    spmm_job *j = ctx;
    const dcz_sparse *s = j->s;
    for (uint32_t c; (c = dcz_take_chunk(&j->next)) < j->chunks;) {
        uint32_t lo, hi;
        dcz_part_range(j->fill ? s->cols : s->rows, c, j->chunks, &lo, &hi);
        if (j->fill)
            fill_tile_vec(j->x, s->cols, lo, hi, j->b0, j->nb, j->scratch);
        else if (j->vec)
            tile_rows_vec(s, lo, hi, j->bias, j->scratch, j->b0, j->nb, j->y,
                          j->scratch + (size_t)t * j->part_floats + (size_t)s->cols * SPMM_TILE);
        else
            dcz_spmm_ref_rows(s, lo, hi, j->bias, j->x, j->batch, j->y);
    }
}

void dcz_spmm_pool(dcz_pool *pool, const dcz_sparse *s, const float *bias, const float *x,
                   size_t batch, float *y, float *scratch, uint64_t part_floats)
{
    const uint32_t threads = dcz_pool_threads(pool);
    spmm_job j = { s, bias, x, batch, y, scratch, part_floats, 0, 0, 0, 0, 0, 0 };
    j.vec = scratch && tiles_vector();
    if (!j.vec) {
        j.chunks = dcz_share_chunks(s->rows, threads);
        dcz_pool_run(pool, spmm_part, &j);
        return;
    }
    for (j.b0 = 0; j.b0 < batch; j.b0 += SPMM_TILE) {
        j.nb = batch - j.b0 < SPMM_TILE ? batch - j.b0 : SPMM_TILE;
        j.fill = 1;
        j.chunks = dcz_share_chunks(s->cols, threads);
        j.next = 0;
        dcz_pool_run(pool, spmm_part, &j);
        j.fill = 0;
        j.chunks = dcz_share_chunks(s->rows, threads);
        j.next = 0;
        dcz_pool_run(pool, spmm_part, &j);
    }
}
