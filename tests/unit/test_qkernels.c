/* test_qkernels.c: the integer kernels (runtime/cpu/ref/kernels_int.c) bit for bit.
 *
 * Matrix: dcz_qspmm and the 32-bit dcz_qspmm8 (each variant) against dcz_qspmm_ref, and the reference against a dense
 * int64 product of the matrix the execution form was built from, over rows
 * and columns in {0, 1, 3, 7, 8, 9, 31, 300} (every pair), batch 1, 2 and 7,
 * densities 0, 0.5, 1 and 0.01 (plus rows of 1000 columns, so step-255
 * fillers occur), codebooks of 2, 16 and 256 values with per-row integer
 * tables and per-entry values, weights and inputs in the 8-bit (+-127) and
 * 16-bit (+-32767) ranges including both extremes, bias given or NULL.
 *
 * Convolution: dcz_qconv2d_sparse, and for the 8-bit range on ungrouped
 * geometries dcz_qconv2d_gemm and every variant of dcz_qgemm over
 * dcz_qim2col_pairs and dcz_qexpand_pairs (one and 13 output channels
 * too), against dcz_qconv2d_direct_ref over
 * kernels 1, 3, 5 and non-square, strides 1 and 2, padding 0 and 1, odd
 * image sizes, batch 1 and 3, densities 0, 0.5 and 1 (0.01 on rows wide
 * enough for fillers); the reference itself on hand cases and against the
 * fp32 reference on 8-bit values, where every fp32 sum is exact.
 *
 * Quantization of the input against its reference near and at ties, on
 * scales from 2^-99 to 2^99 and past. Requantization against exact 128-bit
 * arithmetic (when the compiler has __int128) and hand cases: saturation just inside, at and past +-127 and
 * +-32767, ties of both signs (round half up), shift 0 with products past
 * int64, mult 0. dcz_round_shift on hand cases and against 128-bit
 * arithmetic; pools on hand cases (padding, count_include_pad 0 and 1,
 * negative averages and ties), max against the fp32 pool and averages
 * against an independent statement of the rounding on random data. Sizes 0:
 * an empty batch, matrix, channel count or plane writes nothing, no columns
 * give the bias, an empty plane averages to 0. The first mismatches print.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qlanes.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/model.h"
#include "runtime/threads.h"
#include "tests/check.h"
#define TEST_RNG_SEED 20240611
#include "tests/unit/test_util.h"
#include "tests/unit/conv_geom.h"
#include "tests/unit/qsparse_mat.h"


/* a bias up to +-2^40, sometimes 0 */
static int64_t brand(void)
{
    const uint64_t r = rnd();
    const int64_t mag = (int64_t)((r >> 20) & ((1ull << 40) - 1));
    return (r & 1) ? -mag : mag;
}

/* Mismatches printed so far by the running test: the first few of each
 * comparison, at most SHOW_MAX in all (tests reset it when they start). */
#define SHOW_MAX 12
static int shown;
static int show(void) { return shown < SHOW_MAX ? ++shown : 0; }

/* Number of differing elements of two int64 arrays; the first three print. */
static size_t diff_i64(const char *what, const char *ctx, const int64_t *got, const int64_t *want,
                       size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ < 3 && show())
            fprintf(stderr, "  %s %s: [%zu] = %lld, reference %lld\n", what, ctx, i,
                    (long long)got[i], (long long)want[i]);
    return bad;
}

static size_t diff_q(const char *what, const char *ctx, const dcz_q *got, const dcz_q *want,
                     size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ < 3 && show())
            fprintf(stderr, "  %s %s: [%zu] = %d, expected %d\n", what, ctx, i, got[i], want[i]);
    return bad;
}

/* acc (batch, rows) = x (batch, cols) dense^T + bias, plainly in int64 */
static void dense_product(const qmat *m, const int64_t *bias, const dcz_q *x, size_t batch,
                          int64_t *acc)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t r = 0; r < m->rows; r++) {
            int64_t a = bias ? bias[r] : 0;
            for (uint32_t c = 0; c < m->cols; c++)
                a += (int64_t)m->dense[(size_t)r * m->cols + c] * x[b * m->cols + c];
            acc[b * m->rows + r] = a;
        }
}

typedef struct grid_tally {
    size_t cases, ref_bad, opt_bad, variants, lane_forms, quad_forms, quad8_forms, lane_runnable, lane_variants;
    uint32_t fillers, value_rows;
} grid_tally;

static void qspmm_case(uint32_t rows, uint32_t cols, size_t batch, double density, uint32_t k,
                       int32_t vmax, int with_bias, grid_tally *t)
{
    qmat m;
    make_qmat(&m, rows, cols, density, k, vmax);
    const size_t nx = batch * cols, ny = batch * rows;
    dcz_q *x = alloc(nx, sizeof(dcz_q));
    int64_t *bias = alloc(rows, sizeof(int64_t));
    int64_t *want = alloc(ny, sizeof(int64_t)), *ref = alloc(ny, sizeof(int64_t));
    int64_t *got = alloc(ny, sizeof(int64_t));
    fill_q(x, nx, vmax);
    for (uint32_t r = 0; r < rows; r++) bias[r] = brand();
    const int64_t *bp = with_bias ? bias : NULL;
    /* different garbage in each output, so an element left unwritten shows */
    memset(ref, 0x55, ny * sizeof(int64_t));
    memset(got, 0xAA, ny * sizeof(int64_t));
    dense_product(&m, bp, x, batch, want);
    dcz_qspmm_ref(&m.sp, bp, x, batch, ref);
    dcz_qspmm(&m.sp, bp, x, batch, got);
    char ctx[128];
    snprintf(ctx, sizeof ctx, "%ux%u batch %zu density %g k %u vmax %d bias %d", rows, cols, batch,
             density, k, vmax, with_bias);
    t->ref_bad += diff_i64("qspmm_ref vs dense", ctx, ref, want, ny);
    t->opt_bad += diff_i64("qspmm vs qspmm_ref", ctx, got, ref, ny);
    if (vmax == 127) {
        /* the 32-bit kernels, with a bias the loader would admit (the sums
         * within 32 bits): every variant this machine runs */
        for (uint32_t r = 0; r < rows; r++) bias[r] /= 1 << 17;
        dcz_qspmm_ref(&m.sp, bp, x, batch, ref);
        int16_t *tile = alloc((size_t)dcz_qspmm8_scratch_floats(cols) * 2, sizeof(int16_t));
        const dcz_isa isas[] = { DCZ_ISA_REF, DCZ_ISA_AVX2, DCZ_ISA_AVX512, DCZ_ISA_NEON };
        for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
            memset(got, 0xAA, ny * sizeof(int64_t));
            if (!dcz_qspmm8_isa(isas[i], &m.sp, bp, x, batch, tile, got)) continue;
            t->opt_bad += diff_i64(i == 0 ? "qspmm8 (scalar) vs qspmm_ref" : "qspmm8 (vector) vs qspmm_ref", ctx,
                                   got, ref, ny);
            t->variants += i > 0;
        }
        memset(got, 0xAA, ny * sizeof(int64_t));
        dcz_qspmm8(&m.sp, bp, x, batch, tile, got);
        t->opt_bad += diff_i64("qspmm8 vs qspmm_ref", ctx, got, ref, ny);
        /* again with the integer lane form, where the walk builds one: its
         * specification, and each variant (AVX-512 runs the form) */
        uint64_t real = 0;
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t e = m.sp.row_ptr[r]; e < m.sp.row_ptr[r + 1]; e++) real += m.sp.step[e] != DCZ_STEP_FILLER;
        void *lmem = alloc((size_t)dcz_qlanes_bytes(rows, cols, real), 1);
        /* the inputs as given (signed), then their magnitudes: the 8-row
         * quads' kernel has a path for inputs without a negative one */
        dcz_q *xpos = alloc(nx, sizeof(dcz_q));
        int64_t *refpos = alloc(ny, sizeof(int64_t));
        for (size_t i = 0; i < nx; i++) xpos[i] = (dcz_q)abs(x[i]);
        dcz_qspmm_ref(&m.sp, bp, xpos, batch, refpos);
        static const char *const names[] = { "pairs", "byte quads", "8-row byte quads" };
        for (int f = 0; f < DCZ_QLANE_FORMS; f++) {
            if (!dcz_qlanes_build_form(&m.sp, real, lmem, (dcz_qlane_form)f)) continue;
            t->lane_forms++;
            t->quad_forms += f == DCZ_QLANE_QUADS;
            t->quad8_forms += f == DCZ_QLANE_QUADS8;
            t->lane_runnable += dcz_qlanes_variant(&m.sp) != NULL;
            for (int pos = 0; pos < 2; pos++) {
                const dcz_q *xin = pos ? xpos : x;
                const int64_t *want_in = pos ? refpos : ref;
                char what[96];
                snprintf(what, sizeof what, "qlanes_ref (%s%s) vs qspmm_ref", names[f], pos ? ", inputs >= 0" : "");
                memset(got, 0xAA, ny * sizeof(int64_t));
                dcz_qlanes_ref(&m.sp, bp, xin, batch, got);
                t->opt_bad += diff_i64(what, ctx, got, want_in, ny);
                for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
                    memset(got, 0xAA, ny * sizeof(int64_t));
                    if (!dcz_qspmm8_isa(isas[i], &m.sp, bp, xin, batch, tile, got)) continue;
                    snprintf(what, sizeof what, "qspmm8 (%s%s) vs qspmm_ref", names[f], pos ? ", inputs >= 0" : "");
                    t->opt_bad += diff_i64(what, ctx, got, want_in, ny);
                }
                for (int vnni = 0; vnni < 2; vnni++) {
                    memset(got, 0xAA, ny * sizeof(int64_t));
                    if (!dcz_qlanes_run_vnni(vnni, &m.sp, bp, xin, batch, tile, got)) continue;
                    snprintf(what, sizeof what, "qlanes (%s%s%s) vs qspmm_ref", names[f], vnni ? ", vnni" : "",
                             pos ? ", inputs >= 0" : "");
                    t->opt_bad += diff_i64(what, ctx, got, want_in, ny);
                    t->lane_variants += pos == 0;
                }
            }
            m.sp.lslices = 0;
        }
        free(xpos);
        free(refpos);
        free(lmem);
        free(tile);
    }
    t->fillers += m.fillers;
    t->value_rows += m.value_rows;
    t->cases++;
    free(x); free(bias); free(want); free(ref); free(got);
    free_qmat(&m);
}

static void qspmm_grid(uint32_t k)
{
    const uint32_t sizes[] = { 0, 1, 3, 7, 8, 9, 31, 300 };
    /* 8, 17 and 40 samples: vector tiles of 16 (AVX-512: of 32), part full,
     * and the samples left to the scalar rows (8-bit ranges only) */
    const size_t batches[] = { 1, 2, 7, 8, 17, 40 };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01 };
    const int32_t ranges[] = { 127, 32767 };
    const size_t ns = sizeof sizes / sizeof *sizes;
    grid_tally t = { 0 };
    for (size_t ri = 0; ri < ns; ri++)
        for (size_t ci = 0; ci < ns; ci++)
            for (size_t bi = 0; bi < 6; bi++)
                for (size_t di = 0; di < 4; di++)
                    for (size_t vi = 0; vi < 2; vi++)
                        if (bi < 3 || vi == 0)
                            qspmm_case(sizes[ri], sizes[ci], batches[bi], dens[di], k, ranges[vi],
                                       (int)((ri + ci + bi + di) & 1), &t);
    /* rows of 1000 columns at 1%: gaps past 255, so fillers, in most rows */
    for (size_t bi = 0; bi < 3; bi++)
        for (size_t vi = 0; vi < 2; vi++) {
            qspmm_case(5, 1000, batches[bi], 0.01, k, ranges[vi], 1, &t);
            qspmm_case(3, 1000, batches[bi], 0.5, k, ranges[vi], 0, &t);
        }
    CHECK(t.cases == ns * ns * 4 * (3 * 2 + 3) + 12, "%zu cases", t.cases);
    CHECK(t.variants > 0 || !(dcz_isa_supported(DCZ_ISA_AVX2) || dcz_isa_supported(DCZ_ISA_NEON)),
          "no vector variant of qspmm8 ran");
    CHECK(t.fillers > 0, "no fillers in the grid");
    CHECK(t.lane_forms > 0, "k %u: no matrix of the grid has the integer lane form", k);
    CHECK(t.quad_forms > 0, "k %u: no matrix of the grid has the integer lane form of byte quads", k);
    CHECK(t.quad8_forms > 0, "k %u: no matrix of the grid has the integer lane form of 8-row byte quads", k);
    CHECK(t.lane_variants >= t.lane_runnable && (t.lane_variants > 0 || t.lane_runnable == 0),
          "k %u: %zu integer lane forms could run here, %zu kernel runs", k, t.lane_runnable, t.lane_variants);
    if (k) CHECK(t.value_rows > 0, "k %u: no row summed per codebook value", k);
    CHECK(t.ref_bad == 0, "k %u: qspmm_ref differs from the dense product in %zu elements", k,
          t.ref_bad);
    CHECK(t.opt_bad == 0, "k %u: qspmm or qspmm8 differs from qspmm_ref in %zu elements", k, t.opt_bad);
}

static void test_qspmm_codebook_2(void) { qspmm_grid(2); }
static void test_qspmm_codebook_16(void) { qspmm_grid(16); }
static void test_qspmm_codebook_256(void) { qspmm_grid(256); }
static void test_qspmm_values(void) { qspmm_grid(0); }

/* A hand-built matrix of 2 rows and 1000 columns: row 0 empty, row 1 with
 * weights at columns 3, 300 (after a filler, step 42) and 811 (after two
 * fillers, step 1); batch 2. */
static void test_qspmm_fillers_by_hand(void)
{
    const uint32_t row_ptr[3] = { 0, 0, 6 };
    const uint8_t step[6] = { 3, 255, 42, 255, 255, 1 };
    dcz_q x[2 * 1000];
    for (int i = 0; i < 2000; i++) x[i] = (dcz_q)(i < 1000 ? i - 500 : 3 * (1500 - i));
    const int64_t bias[2] = { 100, -100 };
    int64_t want[4], y[4];
    /* weights by column, and the matrix in three encodings of them */
    const int64_t w3 = -7, w300 = 11, w811 = -7;
    for (int b = 0; b < 2; b++) {
        want[b * 2] = bias[0];
        want[b * 2 + 1] = bias[1] + w3 * x[b * 1000 + 3] + w300 * x[b * 1000 + 300]
                          + w811 * x[b * 1000 + 811];
    }
    /* k 3: three real entries, not more than k, entry by entry */
    const uint8_t idx3[6] = { 1, 0, 2, 0, 0, 1 };
    const int16_t tab3[6] = { 9, 9, 9, 5, -7, 11 };
    const dcz_qsparse s3 = { .rows = 2, .cols = 1000, .entries = 6, .row_ptr = row_ptr, .step = step, .idx = idx3,
                             .qtab = tab3, .k = 3 };
    /* k 2: more real entries than values, summed per value */
    const uint8_t idx2[6] = { 0, 0, 1, 0, 0, 0 };
    const int16_t tab2[4] = { 9, 9, -7, 11 };
    const dcz_qsparse s2 = { .rows = 2, .cols = 1000, .entries = 6, .row_ptr = row_ptr, .step = step, .idx = idx2,
                             .qtab = tab2, .k = 2 };
    /* per-entry values, fillers 0 */
    const int16_t qval[6] = { -7, 0, 11, 0, 0, -7 };
    const dcz_qsparse sv = { .rows = 2, .cols = 1000, .entries = 6, .row_ptr = row_ptr, .step = step, .qval = qval };
    const dcz_qsparse *forms[3] = { &s3, &s2, &sv };
    const char *names[3] = { "k 3", "k 2", "values" };
    for (int f = 0; f < 3; f++) {
        memset(y, 0x55, sizeof y);
        dcz_qspmm_ref(forms[f], bias, x, 2, y);
        CHECK(diff_i64("qspmm_ref", names[f], y, want, 4) == 0, "%s reference", names[f]);
        memset(y, 0xAA, sizeof y);
        dcz_qspmm(forms[f], bias, x, 2, y);
        CHECK(diff_i64("qspmm", names[f], y, want, 4) == 0, "%s", names[f]);
    }
}

/* ---- convolution ------------------------------------------------------------- */


static void test_qconv_ref_by_hand(void)
{
    const dcz_q x[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }; /* (1, 3, 3) */
    int64_t y[8];
    dcz_conv_geom g = conv_geom(1, 1, 3, 3, 2, 2, 1, 1, 0, 0);
    const int16_t w[4] = { 1, 2, 3, 4 };
    const int64_t bias = -1;
    dcz_qconv2d_direct_ref(&g, w, &bias, x, 1, y);
    CHECK(y[0] == 36 && y[1] == 46 && y[2] == 66 && y[3] == 76, "2x2: %lld %lld %lld %lld",
          (long long)y[0], (long long)y[1], (long long)y[2], (long long)y[3]);
    /* 3x3 ones, stride 2, padding 1: each output sums its window's cells inside */
    g = conv_geom(1, 1, 3, 3, 3, 3, 2, 2, 1, 1);
    const int16_t ones[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    dcz_qconv2d_direct_ref(&g, ones, NULL, x, 1, y);
    CHECK(y[0] == 12 && y[1] == 16 && y[2] == 24 && y[3] == 28, "padded: %lld %lld %lld %lld",
          (long long)y[0], (long long)y[1], (long long)y[2], (long long)y[3]);
    /* 1x1 mixes channels: 2 in, 2 out, batch 2 */
    g = conv_geom(2, 2, 1, 2, 1, 1, 1, 1, 0, 0);
    const int16_t w3[4] = { 1, 10, -1, 2 };
    const dcz_q x3[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    const int64_t want3[8] = { 31, 42, 5, 6, 75, 86, 9, 10 };
    dcz_qconv2d_direct_ref(&g, w3, NULL, x3, 2, y);
    CHECK(diff_i64("1x1", "by hand", y, want3, 8) == 0, "1x1 channel mixing");
}

typedef struct conv_tally {
    size_t cases, bad, float_cases, float_bad, variants, gemm_cases, shift_cases, shift_vector, dw_forms, dw_runs;
    size_t amx_forms, amx_runs, amx_rows, amx_copies, amx_cols, amx_split;
    size_t split_variants, split_want, blocks2, pooled, qdw, dw_maps, dwp_forms, dwp_runs, dwp_kernel, f32_cases, f32_over, f32_requant;
    size_t pre_channels;
    size_t threaded;   /* requantizing runs over pools of 2 and 3 threads */
    size_t dwp_small;  /* the int16 pairs' runs on small planes (qdwp_small) */
    size_t dw_rows;    /* depthwise forms by byte permutes by output rows */
    size_t spared;     /* requantizing runs on the quad taps with channels that hold no weight beside others */
    size_t constants;  /* requantizing runs with input channels taken as constants */
    size_t table_planes; /* depthwise runs on byte planes made by a table (dcz_qdw_planes_table) */
    size_t skipped;    /* requantizing runs that left channels without a weight unwritten */
    uint32_t fillers;
} conv_tally;

/* pools of 2 and 3 threads for the requantizing kernels' splits (started
 * by test_qconv_grid) */
static dcz_pool *thread_pools[2];

/* The requantizing shift kernel's constant channels (load.c,
 * pair_constants), on the b samples of x whose outputs are want: with
 * skip, the output channels that hold no weight left as they were, the
 * others want's; with some input channels marked as constants, the
 * outputs of the input whose marked planes hold their values, the marked
 * planes of x written over with others, never read (and the integer
 * split of every variant the same bytes). */
static void qshift_constants_case(const dcz_conv_geom *g, const dcz_qshift *f, const qmat *m, const int64_t *bp,
                                  const dcz_requant *rq, int32_t lo, int32_t hi, const dcz_q *x, size_t b,
                                  float *scratch, const dcz_q *want, const char *ctx, conv_tally *t)
{
    const size_t in_plane = (size_t)g->in_h * g->in_w, xin = g->in_c * in_plane;
    const size_t plane = (size_t)g->out_h * g->out_w, yout = g->out_c * plane;
    dcz_q *yq = alloc(b * yout + 1, sizeof(dcz_q));
    memset(yq, 0x55, (b * yout + 1) * sizeof(dcz_q));
    dcz_qconv2d_shift_requant(thread_pools[0], g, f, bp, rq, lo, hi, 0, 1, NULL, x, b, scratch, yq);
    size_t left = 0;
    for (size_t j = 0; j < b; j++)
        for (uint32_t c = 0; c < g->out_c; c++) {
            const size_t at = j * yout + c * plane;
            if (!f->none[c]) {
                t->bad += diff_q("qconv2d_shift_requant (skip)", ctx, yq + at, want + at, plane);
                continue;
            }
            for (size_t i = 0; i < plane; i++) t->bad += yq[at + i] != (dcz_q)0x5555;
            left++;
        }
    t->skipped += left > 0 && left < b * g->out_c;
    /* a third of the input channels marked, at least one */
    uint8_t *none = alloc(g->in_c, 1);
    dcz_q *value = alloc(g->in_c, sizeof(dcz_q));
    size_t marked = 0;
    for (uint32_t c = 0; c < g->in_c; c++) {
        none[c] = rnd() % 3 == 0 || (c + 1 == g->in_c && !marked);
        value[c] = (dcz_q)((int32_t)(rnd() % 255) - 127);
        marked += none[c];
    }
    const dcz_qconst xc = { none, value };
    dcz_q *xk = alloc(b * xin, sizeof(dcz_q)), *xg = alloc(b * xin, sizeof(dcz_q));
    memcpy(xk, x, b * xin * sizeof(dcz_q));
    memcpy(xg, x, b * xin * sizeof(dcz_q));
    for (size_t j = 0; j < b; j++)
        for (uint32_t c = 0; c < g->in_c; c++)
            for (size_t i = 0; none[c] && i < in_plane; i++) {
                xk[j * xin + c * in_plane + i] = value[c];
                xg[j * xin + c * in_plane + i] = (dcz_q)((int32_t)(rnd() % 255) - 127);
            }
    int64_t *acc = alloc(b * yout + 1, sizeof(int64_t));
    dcz_q *wk = alloc(b * yout + 1, sizeof(dcz_q));
    dcz_qconv2d_direct_ref(g, m->dense, bp, xk, b, acc);
    dcz_requant8_ref(rq, acc, b, g->out_c, (uint32_t)plane, wk);
    for (size_t i = 0; i < b * yout; i++) wk[i] = (dcz_q)(wk[i] < lo ? lo : wk[i] > hi ? hi : wk[i]);
    memset(yq, 0x55, (b * yout + 1) * sizeof(dcz_q));
    dcz_qconv2d_shift_requant(thread_pools[0], g, f, bp, rq, lo, hi, 0, 0, &xc, xg, b, scratch, yq);
    t->bad += diff_q("qconv2d_shift_requant (constant input channels)", ctx, yq, wk, b * yout);
    /* the split: every variant's bytes of xg with the marks the scalar one's of xk without */
    const size_t sbytes = (dcz_qshift_scratch_floats(g) + 1) * sizeof(float);
    uint8_t *s0 = alloc(sbytes, 1), *s1 = alloc(sbytes, 1), *s2 = alloc(sbytes, 1);
    memset(s0, 0, sbytes);
    memset(s1, 0, sbytes);
    t->bad += dcz_qsplit_check(g, NULL, xk, s0, s2) < 0;
    t->bad += dcz_qsplit_check(g, &xc, xg, s1, s2) < 0;
    t->bad += memcmp(s0, s1, sbytes) != 0;
    t->constants++;
    /* an activation by table fused into the byte planes of a depthwise
     * layer (load.c, pair_table_planes), sample by sample: the outputs of
     * the table's output, whose marked planes hold the marks' values (the
     * table's already) */
    if (dcz_qdw_planes_table_takes(f)) {
        dcz_q table[256];
        uint8_t tb[256];
        for (int i = 0; i < 255; i++) table[i] = (dcz_q)((int32_t)(rnd() % 255) - 127);
        table[255] = 0;
        REQUIRE(dcz_qtable_bytes(table, 127, tb), "%s: the table as bytes", ctx);
        dcz_q *xt = alloc(b * xin, sizeof(dcz_q));
        dcz_qtable_ref(table, 127, xg, b * xin, xt);
        for (size_t j = 0; j < b; j++)
            for (uint32_t c = 0; c < g->in_c; c++)
                for (size_t i = 0; none[c] && i < in_plane; i++) xt[j * xin + c * in_plane + i] = value[c];
        dcz_qconv2d_direct_ref(g, m->dense, bp, xt, b, acc);
        dcz_requant8_ref(rq, acc, b, g->out_c, (uint32_t)plane, wk);
        for (size_t i = 0; i < b * yout; i++) wk[i] = (dcz_q)(wk[i] < lo ? lo : wk[i] > hi ? hi : wk[i]);
        memset(yq, 0x55, (b * yout + 1) * sizeof(dcz_q));
        for (size_t j = 0; j < b; j++) {
            dcz_qdw_planes_table(g, f, &xc, xg + j * xin, tb, (uint8_t *)scratch);
            dcz_qconv2d_shift_requant(thread_pools[0], g, f, bp, rq, lo, hi, 0, 0, &xc, NULL, 1, scratch,
                                      yq + j * yout);
        }
        t->bad += diff_q("qconv2d_shift_requant (byte planes by table)", ctx, yq, wk, b * yout);
        t->table_planes++;
        free(xt);
    }
    free(s0); free(s1); free(s2);
    free(acc); free(wk); free(xk); free(xg); free(none); free(value); free(yq);
}

static void qconv_case(const dcz_conv_geom *g, double density, uint32_t k, int32_t vmax,
                       conv_tally *t)
{
    qmat m;
    const uint32_t cols = dcz_conv_group_in(g) * g->kh * g->kw;
    make_qmat(&m, g->out_c, cols, density, k, vmax);
    const size_t B = 3, xin = (size_t)g->in_c * g->in_h * g->in_w;
    const size_t yout = (size_t)g->out_c * g->out_h * g->out_w;
    dcz_q *x = alloc(B * xin, sizeof(dcz_q));
    int64_t *bias = alloc(g->out_c, sizeof(int64_t));
    int64_t *ref = alloc(B * yout, sizeof(int64_t)), *got = alloc(B * yout, sizeof(int64_t));
    fill_q(x, B * xin, vmax);
    for (uint32_t i = 0; i < g->out_c; i++) bias[i] = vmax == 127 ? (int64_t)(rnd() % 2001) - 1000
                                                                  : brand();
    const size_t batches[2] = { 1, B };
    char ctx[160];
    for (int bi = 0; bi < 2; bi++) {
        const size_t b = batches[bi];
        const int64_t *bp = (t->cases & 1) ? NULL : bias;
        snprintf(ctx, sizeof ctx, "in %ux%ux%u out %ux%ux%u k %ux%u s %u,%u p %u,%u batch %zu "
                 "density %g k %u vmax %d", g->in_c, g->in_h, g->in_w, g->out_c, g->out_h,
                 g->out_w, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, b, density, k, vmax);
        memset(ref, 0x55, B * yout * sizeof(int64_t));
        memset(got, 0xAA, B * yout * sizeof(int64_t));
        dcz_qconv2d_direct_ref(g, m.dense, bp, x, b, ref);
        dcz_qconv2d_sparse(g, &m.sp, bp, x, b, got);
        t->bad += diff_i64("qconv2d_sparse", ctx, got, ref, b * yout);
        /* and on every vector tap kernel this machine runs */
        const dcz_isa isas[] = { DCZ_ISA_AVX2, DCZ_ISA_NEON };
        for (size_t i = 0; i < 2; i++) {
            const dcz_qtap_fn tap = dcz_qtap_isa(isas[i]);
            if (!tap) continue;
            memset(got, 0xAA, B * yout * sizeof(int64_t));
            dcz_qconv2d_sparse_taps(g, &m.sp, bp, x, b, tap, got);
            t->bad += diff_i64("qconv2d_sparse (vector taps)", ctx, got, ref, b * yout);
            t->variants++;
        }
        /* the depthwise kernel (8-bit schemes) where it runs */
        if (vmax == 127) {
            /* its channel copies in a buffer of exactly the bytes asked for */
            const size_t cbytes = (size_t)dcz_qconv2d_copy_bytes(g);
            dcz_q *copy = alloc(cbytes, 1);
            memset(got, 0xAA, B * yout * sizeof(int64_t));
            if (dcz_qconv2d_depthwise(g, &m.sp, bp, x, b, cbytes ? copy : NULL, got)) {
                t->bad += diff_i64("qconv2d_depthwise", ctx, got, ref, b * yout);
                t->qdw++;
            }
            free(copy);
        }
        /* the integer shift form (8-bit schemes): its reference and its
         * VNNI variant, and the variant with the requantization fused in
         * against dcz_requant8_ref of the reference's sums */
        if (vmax == 127) {
            const int amx_here = dcz_amx_ready();
            void *mem = alloc(dcz_qshift_bytes(g, m.sp.entries, amx_here) + 4, 1);
            float *scratch = alloc(dcz_qshift_scratch_floats(g) + 1, sizeof(float));
            /* the split of the first sample by every vector variant, the scalar one's bytes */
            float *scratch2 = alloc(dcz_qshift_scratch_floats(g) + 1, sizeof(float));
            const int variants = dcz_qsplit_check(g, NULL, x, (uint8_t *)scratch, (uint8_t *)scratch2);
            t->bad += variants < 0;
            t->split_variants += variants > 0 ? (size_t)variants : 0;
            /* the variants this CPU has for the geometry: the VNNI split at
             * column strides 1 and 2, and with VBMI its byte-permute twin */
            t->split_want += dcz_qshift_variant() && g->sw <= 2 ? 1u + (dcz_cpu_features()->avx512vbmi != 0) : 0;
            free(scratch2);
            dcz_qshift f;
            if (dcz_qshift_build(g, &m.sp, amx_here, mem, &f)) {
                /* where the AMX tiles are built: on them and on the quad
                 * taps, whichever the cost rule picked */
                for (int amx = 0; amx < 1 + (f.amx != NULL); amx++) {
                    f.amx_pick = (uint8_t)amx;
                    t->amx_runs += (size_t)amx;
                    for (int r = 1; r >= 0; r--) {
                        memset(got, 0xAA, B * yout * sizeof(int64_t));
                        dcz_qconv2d_shift(g, &f, bp, x, b, r, scratch, got);
                        t->bad += diff_i64(r ? "qconv2d_shift (reference)" : amx ? "qconv2d_shift (AMX tiles)"
                                                                           : "qconv2d_shift", ctx, got, ref, b * yout);
                    }
                    t->shift_cases++;
                    t->blocks2 += f.ob == 2;
                    int32_t *mult = alloc(g->out_c + 1, sizeof(int32_t));
                    uint8_t *shift = alloc(g->out_c + 1, 1);
                    /* small multipliers and shifts make ties (half up) and shift 0 */
                    for (uint32_t c = 0; c < g->out_c; c++) {
                        mult[c] = c % 4 == 0 ? 1 : c % 4 == 1 ? 3 : (int32_t)(rnd() >> 33);
                        shift[c] = (uint8_t)(c % 4 == 0 ? 1 : c % 4 == 1 ? 2 : c % 8 == 2 ? 0 : rnd() % 63);
                    }
                    const dcz_requant rq = { mult, shift, 127, NULL };
                    dcz_q *want = alloc(B * yout + 1, sizeof(dcz_q)), *yq = alloc(B * yout + 1, sizeof(dcz_q));
                    dcz_requant8_ref(&rq, ref, b, g->out_c, g->out_h * g->out_w, want);
                    /* and clamped as a fused activation clamps them: ReLU's
                     * 0 .. 127 on odd cases, a narrower clamp on some */
                    const int32_t lo = t->cases % 2 ? 0 : t->cases % 4 == 2 ? -90 : -127;
                    const int32_t hi = t->cases % 8 == 4 ? 100 : 127;
                    for (size_t i = 0; i < b * yout; i++) want[i] = (dcz_q)(want[i] < lo ? lo : want[i] > hi ? hi : want[i]);
                    memset(yq, 0x55, (B * yout + 1) * sizeof(dcz_q));
                    if (dcz_qconv2d_shift_requant(NULL, g, &f, bp, &rq, lo, hi, 0, 0, NULL, x, b, scratch, yq)) {
                        const int dw = dcz_qshift_depthwise(&f);
                        t->bad += diff_q(dw == DCZ_QDW_BYTES ? "qconv2d_shift_requant (depthwise, byte permutes)"
                                         : dw == DCZ_QDW_PAIRS ? "qconv2d_shift_requant (depthwise, int16 pairs)"
                                         : amx ? "qconv2d_shift_requant (AMX tiles)" : "qconv2d_shift_requant",
                                         ctx, yq, want, b * yout);
                        /* over pools of 2 and 3 threads: the same bits; on
                         * the 3, the channels' pre-shifts from the largest
                         * |accumulator| each gave (dcz_requant_pre), where
                         * those of shift 32 or less requantize as shift 33 */
                        uint8_t *pre = alloc(g->out_c + 1, 1);
                        for (uint32_t c = 0; c < g->out_c; c++) {
                            double most = 0;
                            for (size_t j = 0; j < b; j++)
                                for (size_t cell = 0; cell < (size_t)g->out_h * g->out_w; cell++) {
                                    const double v = fabs((double)ref[j * yout + c * g->out_h * g->out_w + cell]);
                                    most = v > most ? v : most;
                                }
                            pre[c] = dcz_requant_pre(shift[c], most);
                            t->pre_channels += pre[c] != 0;
                        }
                        const dcz_requant rqp = { mult, shift, 127, pre };
                        /* (the tiles by blocks of cells, then by channels, where they split) */
                        t->amx_split += amx && dcz_qconv2d_shift_requant_splits(g, &f);
                        for (size_t p = 0; p < 2; p++) {
                            if (!thread_pools[p]) continue;
                            memset(yq, 0x55, (B * yout + 1) * sizeof(dcz_q));
                            dcz_qconv2d_shift_requant(thread_pools[p], g, &f, bp, p ? &rqp : &rq, lo, hi, 0, 0, NULL,
                                                      x, b, scratch, yq);
                            t->bad += diff_q(p ? "qconv2d_shift_requant (threads, pre-shifts)"
                                               : "qconv2d_shift_requant (threads)", ctx, yq, want, b * yout);
                            t->threaded++;
                        }
                        free(pre);
                        /* sums near 2^21 (biases of that size): high halves
                         * past 16 bits, which the pair's rounding after the
                         * pack saturates (shift counts up to 8; 9 would differ) */
                        int64_t *big = alloc(g->out_c, sizeof(int64_t));
                        int64_t *acc2 = alloc(B * yout + 1, sizeof(int64_t));
                        const size_t cells = (size_t)g->out_h * g->out_w;
                        for (uint32_t c = 0; c < g->out_c; c++)
                            big[c] = (int64_t)((1u << 20) + rnd() % (1u << 20)) * (rnd() % 2 ? 1 : -1);
                        for (size_t j = 0; j < b; j++)
                            for (uint32_t c = 0; c < g->out_c; c++)
                                for (size_t cell = 0; cell < cells; cell++) {
                                    const size_t i = j * yout + c * cells + cell;
                                    acc2[i] = ref[i] - (bp ? bp[c] : 0) + big[c];
                                }
                        dcz_q *want2 = alloc(B * yout + 1, sizeof(dcz_q));
                        dcz_requant8_ref(&rq, acc2, b, g->out_c, (uint32_t)cells, want2);
                        for (size_t i = 0; i < b * yout; i++)
                            want2[i] = (dcz_q)(want2[i] < lo ? lo : want2[i] > hi ? hi : want2[i]);
                        memset(yq, 0x55, (B * yout + 1) * sizeof(dcz_q));
                        dcz_qconv2d_shift_requant(NULL, g, &f, big, &rq, lo, hi, 0, 0, NULL, x, b, scratch, yq);
                        t->bad += diff_q("qconv2d_shift_requant (sums near 2^21)", ctx, yq, want2, b * yout);
                        free(big); free(acc2); free(want2);
                        t->shift_vector++;
                        qshift_constants_case(g, &f, &m, bp, &rq, lo, hi, x, b, scratch, want, ctx, t);
                        t->dw_runs += dw == DCZ_QDW_BYTES;
                        if (!dw) {   /* their sums left unwritten, their outputs filled */
                            size_t none = 0;
                            for (uint32_t r = 0; r < g->out_c; r++) {
                                uint32_t j = 0;
                                while (j < cols && !m.dense[(size_t)r * cols + j]) j++;
                                none += j == cols;
                            }
                            t->spared += none > 0 && none < g->out_c;
                        }
                        /* once a form that holds the pairs: it ran a depthwise kernel */
                        if (!amx && f.dwp) {
                            t->dwp_kernel += dw != 0;
                            t->dwp_runs += dw == DCZ_QDW_PAIRS;
                            t->dwp_small += dw == DCZ_QDW_PAIRS && qdwp_small(g);
                        }
                        /* a layer the byte permutes take by the int16 pairs
                         * too, as a CPU with VNNI and no VBMI runs it */
                        if (!amx && dw == DCZ_QDW_BYTES && f.dwp) {
                            dcz_qshift fp = f;
                            fp.dw = NULL;
                            memset(yq, 0x55, (B * yout + 1) * sizeof(dcz_q));
                            if (dcz_qconv2d_shift_requant(NULL, g, &fp, bp, &rq, lo, hi, 0, 0, NULL, x, b, scratch,
                                                          yq)) {
                                t->bad += diff_q("qconv2d_shift_requant (depthwise, int16 pairs for bytes)", ctx, yq,
                                                 want, b * yout);
                                t->dwp_runs++;
                            } else {
                                t->bad++;   /* the pairs run any layer they hold */
                            }
                        }
                    }
                    /* with the 2x2 max pool of stride 2 after it taken in: the
                     * reference pool of the above */
                    if (dcz_qconv2d_shift_requant_runs(g, &f, &rq, 1)) {
                        const dcz_conv_geom pg = conv_geom(g->out_c, g->out_c, g->out_h, g->out_w, 2, 2, 2, 2, 0, 0);
                        dcz_q *pooled = alloc(B * yout + 1, sizeof(dcz_q));
                        dcz_qmaxpool_ref(&pg, want, b, pooled);
                        memset(yq, 0x55, (B * yout + 1) * sizeof(dcz_q));
                        const size_t n = g->out_c * pg.out_h * pg.out_w;   /* a sample's, at the start of its place */
                        if (dcz_qconv2d_shift_requant(thread_pools[0], g, &f, bp, &rq, lo, hi, 1, 0, NULL, x, b, scratch,
                                                      yq)) {
                            for (size_t j = 0; j < b; j++) {
                                t->bad += diff_q("qconv2d_shift_requant (pool)", ctx, yq + j * yout, pooled + j * n, n);
                                t->bad += yq[j * yout + n] != (dcz_q)0x5555;   /* nothing past the pooled planes */
                            }
                            t->pooled++;
                        } else {
                            t->bad++;   /* said to run */
                        }
                        free(pooled);
                    }
                    free(mult); free(shift); free(want); free(yq);
                }
                t->dw_forms += f.dw != NULL;
                t->dwp_forms += f.dwp != NULL;
                t->dw_maps += f.dwmap != NULL;
                t->dw_rows += f.dw != NULL && f.dwrows;
                t->amx_forms += f.amx != NULL;
                t->amx_rows += f.amx != NULL && f.amx_run == DCZ_QAMX_ROWS;
                t->amx_copies += f.amx != NULL && f.amx_run == DCZ_QAMX_COPIES;
                t->amx_cols += f.amx != NULL && f.amx_run == DCZ_QAMX_COLUMNS;
            } else {
                t->bad++;   /* every 8-bit weight fits a byte, every window here 25 cells or fewer */
            }
            free(mem); free(scratch);
        }
        /* the integer product on the expanded weights (8-bit schemes,
         * ungrouped): dcz_qconv2d_gemm, and each variant of the product */
        if (vmax == 127 && dcz_conv_groups(g) == 1) {
            const uint32_t k2 = (cols + 1) / 2;
            const size_t pixels = (size_t)g->out_h * g->out_w, ldb = dcz_gemm_ldb(pixels);
            int32_t *w2 = alloc((size_t)g->out_c * k2 + 1, sizeof(int32_t));
            int32_t *col2 = alloc(dcz_qconv2d_gemm_scratch_floats(g), sizeof(int32_t));
            dcz_q *copy = (dcz_q *)(void *)(col2 + (size_t)k2 * ldb);
            dcz_qexpand_pairs(&m.sp, cols, w2);
            memset(got, 0xAA, B * yout * sizeof(int64_t));
            dcz_qconv2d_gemm(g, w2, bp, x, b, col2, got);
            t->bad += diff_i64("qconv2d_gemm", ctx, got, ref, b * yout);
            const dcz_isa qisas[] = { DCZ_ISA_REF, DCZ_ISA_AVX512, DCZ_ISA_AVX2 };
            for (size_t i = 0; i < 3; i++) {
                memset(got, 0xAA, B * yout * sizeof(int64_t));
                int ran = 1;
                for (size_t s = 0; s < b && ran; s++) {
                    dcz_qim2col_pairs(g, x + s * xin, col2, ldb, dcz_qconv2d_copy_bytes(g) ? copy : NULL);
                    int64_t *o = got + s * yout;
                    if (qisas[i] == DCZ_ISA_REF) dcz_qgemm_ref(g->out_c, pixels, k2, w2, k2, col2, ldb, bp, o, pixels);
                    else ran = dcz_qgemm_isa(qisas[i], g->out_c, pixels, k2, w2, k2, col2, ldb, bp, o, pixels);
                }
                if (!ran) continue;
                t->bad += diff_i64("qgemm", ctx, got, ref, b * yout);
                t->gemm_cases += qisas[i] != DCZ_ISA_REF;
            }
            free(w2); free(col2);
        }
        /* the 8-bit schemes' float shift form on the integer weights, its
         * sums exact here (at most 400 terms of 127 x 127): natively, and
         * with the CPU capped to AVX2 and to scalars where it has more */
        if (vmax == 127 && dcz_conv2d_shift_fits(g)) {
            const uint64_t kept = m.sp.entries - m.fillers;
            const uint32_t ob = dcz_shift_pick_block(g, kept);
            void *fmem = alloc(dcz_shift_bytes(g, kept, ob) + 1, 1);
            float *fs = alloc(dcz_qconv2d_f32_scratch_floats(g) + 1, sizeof(float));
            dcz_shift f;
            dcz_shift_build_int(g, &m.sp, NULL, ob, fmem, &f);
            t->bad += dcz_qconv2d_f32_rows(&m.sp, vmax, NULL) != 0;
            static const dcz_isa_cap caps[] = { DCZ_CAP_NATIVE, DCZ_CAP_AVX2, DCZ_CAP_SCALAR };
            for (size_t i = 0; i < sizeof caps / sizeof *caps; i++) {
                dcz_cpu cpu;
                if (i) {
                    if (dcz_cpu_capped(caps[i], &cpu, NULL, 0) != DCZ_OK) continue;   /* not on this CPU */
                    if (caps[i] == DCZ_CAP_AVX2 && !dcz_cpu_features()->avx512f) continue;   /* what it runs */
                    dcz_cpu_view = &cpu;
                }
                memset(got, 0xAA, B * yout * sizeof(int64_t));
                dcz_qconv2d_f32(NULL, g, &f, &m.sp, NULL, bp, x, b, fs, got);
                dcz_cpu_view = NULL;
                t->bad += diff_i64(i == 0 ? "qconv2d_f32" : i == 1 ? "qconv2d_f32 (AVX2)" : "qconv2d_f32 (scalar)", ctx,
                                   got, ref, b * yout);
                t->f32_cases++;
            }
            /* requantized as converted back, clamped as a fused activation
             * clamps: dcz_requant8 then the clamp on the reference's sums;
             * then every third channel by the integer taps, left out of the
             * form (as those past the bound are), on ungrouped convolutions */
            int32_t *mult = alloc(g->out_c + 1, sizeof(int32_t));
            uint8_t *shift = alloc(g->out_c + 1, 1);
            for (uint32_t c = 0; c < g->out_c; c++) {
                mult[c] = c % 4 == 0 ? 1 : (int32_t)(rnd() >> 33);
                shift[c] = (uint8_t)(c % 4 == 0 ? 1 : c % 8 == 2 ? 0 : 20 + rnd() % 40);
            }
            const dcz_requant rq = { mult, shift, 127, NULL };
            const int32_t lo = t->cases % 2 ? 0 : -127, hi = t->cases % 4 == 2 ? 100 : 127;
            dcz_q *want = alloc(B * yout + 1, sizeof(dcz_q)), *yq = alloc(B * yout + 1, sizeof(dcz_q));
            dcz_requant8_ref(&rq, ref, b, g->out_c, g->out_h * g->out_w, want);
            for (size_t i = 0; i < b * yout; i++) want[i] = (dcz_q)(want[i] < lo ? lo : want[i] > hi ? hi : want[i]);
            for (int rows = 0; rows < 2; rows++) {
                uint8_t *over = NULL;
                if (rows) {
                    if (dcz_conv_groups(g) != 1 || g->out_c < 2) break;
                    over = alloc(g->out_c, 1);
                    for (uint32_t c = 0; c < g->out_c; c++) over[c] = c % 3 == 1;
                    dcz_shift_build_int(g, &m.sp, over, ob, fmem, &f);
                    memset(got, 0xAA, B * yout * sizeof(int64_t));
                    dcz_qconv2d_f32(NULL, g, &f, &m.sp, over, bp, x, b, fs, got);
                    t->bad += diff_i64("qconv2d_f32 (channels by the taps)", ctx, got, ref, b * yout);
                    t->f32_over++;
                }
                memset(yq, 0x55, (B * yout + 1) * sizeof(dcz_q));
                dcz_qconv2d_f32_requant(NULL, g, &f, &m.sp, over, bp, &rq, lo, hi, x, b, fs, yq);
                t->bad += diff_q(rows ? "qconv2d_f32_requant (channels by the taps)" : "qconv2d_f32_requant", ctx, yq,
                                 want, b * yout);
                t->f32_requant++;
                free(over);
            }
            free(mult); free(shift); free(want); free(yq);
            free(fmem); free(fs);
        }
        t->cases++;
        if (vmax == 127) {
            /* the fp32 reference is exact here: every partial sum is an
             * integer below 2^24 (at most 400 terms of 127 * 127, bias 1000) */
            const size_t nw = (size_t)g->out_c * cols;
            float *xf = alloc(b * xin, sizeof(float)), *wf = alloc(nw, sizeof(float));
            float *bf = alloc(g->out_c, sizeof(float)), *yf = alloc(b * yout, sizeof(float));
            for (size_t i = 0; i < b * xin; i++) xf[i] = (float)x[i];
            for (size_t i = 0; i < nw; i++) wf[i] = (float)m.dense[i];
            for (uint32_t i = 0; i < g->out_c; i++) bf[i] = (float)bias[i];
            dcz_conv2d_direct_ref(g, wf, bp ? bf : NULL, xf, b, yf);
            size_t bad = 0;
            for (size_t i = 0; i < b * yout; i++)
                if ((float)ref[i] != yf[i] && bad++ < 3 && show())
                    fprintf(stderr, "  qconv2d_direct_ref vs fp32 %s: [%zu] = %lld, fp32 %.1f\n",
                            ctx, i, (long long)ref[i], (double)yf[i]);
            t->float_bad += bad;
            t->float_cases++;
            free(xf); free(wf); free(bf); free(yf);
        }
    }
    t->fillers += m.fillers;
    free(x); free(bias); free(ref); free(got);
    free_qmat(&m);
}

/* Floats hold a channel's sums exactly while its |w| sum times the
 * inputs' bound stays within 2^24: 1040 weights of 127 (a negative one
 * among them) at inputs of 127 are within, 1041 are not; each row is
 * marked alone. */
static void test_qconv_f32_rows(void)
{
    enum { N = 1041 };
    static uint32_t row_ptr[3];
    static uint8_t step[2 * N];
    static int16_t val[2 * N];
    for (uint32_t e = 0; e < 2 * N; e++) {
        step[e] = e % N ? 1 : 0;
        val[e] = e == 7 ? -127 : 127;
    }
    dcz_qsparse s = { 0 };
    s.rows = 1;
    s.cols = N;
    s.row_ptr = row_ptr;
    s.step = step;
    s.qval = val;
    row_ptr[0] = 0;
    row_ptr[1] = N - 1;
    s.entries = N - 1;
    uint8_t over[2] = { 9, 9 };
    CHECK(dcz_qconv2d_f32_rows(&s, 127, over) == 0 && over[0] == 0, "1040 weights of 127: within 2^24");
    CHECK(dcz_qconv2d_f32_rows(&s, 128, NULL) == 1, "1040 weights of 127 at inputs of 128: past 2^24");
    row_ptr[1] = N;
    s.entries = N;
    CHECK(dcz_qconv2d_f32_rows(&s, 127, over) == 1 && over[0] == 1, "1041 weights of 127: past 2^24");
    /* a first row within, a second past it */
    row_ptr[1] = N - 1;
    row_ptr[2] = 2 * N - 1;
    s.rows = 2;
    s.entries = 2 * N - 1;
    CHECK(dcz_qconv2d_f32_rows(&s, 127, over) == 1 && over[0] == 0 && over[1] == 1, "rows %u %u", over[0], over[1]);
}

static void test_qconv_grid(void)
{
    const uint32_t kernels[] = { 1, 3, 5 }, strides[] = { 1, 2 }, pads[] = { 0, 1 };
    const uint32_t sizes[][2] = { { 7, 9 }, { 11, 5 } };
    const double dens[] = { 0.0, 0.5, 1.0 };
    const uint32_t codebooks[] = { 256, 16, 0 };
    const int32_t ranges[] = { 127, 32767 };
    conv_tally t = { 0 };
    REQUIRE(dcz_pool_start(2, &thread_pools[0]) == DCZ_OK && dcz_pool_start(3, &thread_pools[1]) == DCZ_OK, "starting pools");
    for (size_t ki = 0; ki < 3; ki++)
        for (size_t si = 0; si < 2; si++)
            for (size_t pi = 0; pi < 2; pi++)
                for (size_t zi = 0; zi < 2; zi++)
                    for (size_t di = 0; di < 3; di++)
                        for (size_t ci = 0; ci < 3; ci++) {
                            const uint32_t kk = kernels[ki], st = strides[si], pad = pads[pi];
                            if (pad >= kk) continue;
                            dcz_conv_geom g = conv_geom(3, 4, sizes[zi][0], sizes[zi][1], kk, kk,
                                                        st, st, pad, pad);
                            qconv_case(&g, dens[di], codebooks[ci], ranges[(ki + zi + di) & 1], &t);
                        }
    /* non-square windows, mixed strides and paddings, a window as large as
     * the padded image, a 1x1 image, rows of 16 x 5 x 5 = 400 columns at 1%
     * (fillers), no input channel at all (outputs are the bias), and wide
     * rows */
    const dcz_conv_geom extra[] = {
        conv_geom_grouped(4, 6, 7, 9, 3, 1, 1, 2),    /* grouped */
        conv_geom_grouped(6, 6, 8, 8, 3, 2, 1, 6),    /* depthwise, strided */
        conv_geom_grouped(4, 8, 5, 5, 1, 1, 0, 4),    /* grouped 1x1, two filters each */
        conv_geom(2, 3, 7, 9, 3, 5, 2, 1, 1, 2),
        conv_geom(2, 3, 9, 7, 5, 1, 1, 2, 4, 0),
        conv_geom(3, 2, 3, 3, 5, 5, 1, 1, 1, 1),
        conv_geom(1, 5, 1, 1, 3, 3, 1, 1, 1, 1),
        conv_geom(16, 5, 11, 9, 5, 5, 1, 1, 2, 2),
        conv_geom(0, 2, 5, 5, 3, 3, 1, 1, 1, 1),
        conv_geom(2, 3, 6, 21, 3, 3, 1, 1, 1, 1),     /* rows of 21: vectors of 4 and 1 over */
        conv_geom(3, 1, 9, 40, 3, 3, 1, 1, 1, 1),     /* one output channel: the product's one-row tiles */
        conv_geom(5, 13, 10, 10, 3, 3, 1, 1, 1, 1),   /* 13 channels: 6-row tiles and one over */
        conv_geom(6, 3, 17, 30, 3, 3, 1, 1, 1, 1),    /* planes of several register tiles */
        conv_geom(5, 2, 29, 27, 3, 3, 2, 2, 1, 1),    /* the same strided, odd sizes */
        conv_geom(3, 2, 5, 37, 3, 3, 1, 1, 1, 1),     /* rows of 37: the split's 32 a step and 5 */
        conv_geom(2, 3, 6, 9, 1, 3, 1, 1, 0, 1),      /* padded columns only: rows, not one plane */
        conv_geom(6, 4, 7, 11, 1, 1, 1, 1, 0, 0),     /* 1x1: the split one plane of 77 cells */
        conv_geom(1, 2, 96, 90, 3, 3, 1, 1, 1, 1),    /* 96 x 91 cells: 546 vectors, requantized by vectors */
        conv_geom(1, 2, 128, 130, 3, 3, 1, 1, 1, 1),  /* 128 x 131 cells: past 1024 vectors, by rows */
        conv_geom(4, 3, 96, 90, 3, 3, 1, 1, 1, 1),    /* the same on quads of channels (the AMX tiles) */
        conv_geom(2, 9, 96, 90, 3, 3, 1, 1, 1, 1),    /* sums past the requantization's chunk: 2 chunks */
        conv_geom(2, 5, 128, 130, 3, 3, 1, 1, 1, 1),  /* 2 chunks, by rows */
        conv_geom(8, 100, 24, 30, 1, 1, 1, 1, 0, 0),  /* 1x1: 2 chunks of channels, by planes */
        /* one input channel: the integer form's column quads */
        conv_geom(1, 4, 12, 13, 5, 5, 1, 1, 2, 2),    /* two quads a window row, the second one column */
        conv_geom(1, 3, 11, 19, 3, 7, 2, 1, 1, 3),    /* row stride 2: the quads in the row phases */
        conv_geom(1, 3, 9, 9, 2, 2, 1, 1, 0, 0),      /* half a quad, no padding: one plane */
        conv_geom(1, 2, 8, 30, 1, 9, 1, 1, 0, 4),     /* three quads a row */
        conv_geom(1, 3, 9, 10, 3, 3, 1, 2, 1, 1),     /* column stride 2: channel quads */
        conv_geom(1, 20, 28, 28, 5, 5, 1, 1, 0, 0),   /* LeNet-5's first layer: the tiles' columns form */
        /* depthwise: the integer form's byte permutes */
        conv_geom_grouped(16, 16, 28, 28, 3, 1, 1, 16),   /* 15 maps of 64 bytes a plane, 7 patterns */
        conv_geom_grouped(8, 8, 14, 14, 3, 2, 1, 8),      /* stride 2 */
        conv_geom_grouped(6, 6, 7, 7, 3, 1, 1, 6),        /* small planes: two maps */
        conv_geom_grouped(5, 5, 7, 7, 3, 2, 1, 5),        /* the same strided: 81 bytes a plane */
        conv_geom_grouped(4, 4, 12, 12, 3, 2, 0, 4),      /* the last input column left out: no maps */
        conv_geom_grouped(7, 7, 4, 4, 3, 1, 1, 7),        /* one vector a channel */
        conv_geom_grouped(3, 3, 9, 9, 5, 1, 2, 3),        /* two quads a window row, 9 patterns */
        conv_geom_grouped(4, 4, 5, 5, 1, 1, 0, 4),        /* 1 x 1 */
        conv_geom_grouped(3, 3, 11, 6, 3, 1, 0, 3),       /* no padding, 4 x 9 outputs */
        conv_geom_grouped(2, 2, 6, 60, 3, 1, 1, 2),       /* rows too wide: the int16 pairs */
        /* by pairs of output rows: 16 cells past the 128 bytes */
        conv_geom_grouped(6, 6, 14, 14, 5, 2, 2, 6),      /* 5 x 5 at stride 2 to 7 x 7 */
        conv_geom_grouped(3, 3, 13, 16, 5, 2, 2, 3),      /* 7 rows of 8: the last pair one row */
        conv_geom_grouped(2, 2, 12, 12, 7, 2, 3, 2),      /* 7 x 7: two quads a window row */
        /* depthwise over planes the byte permutes do not take: the int16
         * pairs at strides 1 and 2, rows of several vectors and a part */
        conv_geom_grouped(3, 3, 40, 75, 3, 1, 1, 3),      /* 75 a row: 32, 32 and 11 */
        conv_geom_grouped(4, 4, 41, 70, 3, 2, 1, 4),      /* stride 2: 35 a row, 16, 16 and 3 */
        conv_geom_grouped(2, 2, 33, 37, 5, 1, 2, 2),      /* 5 x 5: three pairs a window row */
        conv_geom_grouped(3, 3, 38, 39, 5, 2, 2, 3),      /* 5 x 5, stride 2, an odd plane */
        conv_geom_grouped(2, 2, 36, 36, 3, 2, 0, 2),      /* no padding: the last column left out */
        conv_geom_grouped(2, 2, 30, 64, 7, 1, 3, 2),      /* 7 x 7: four pairs, the last one column */
        /* the int16 pairs' small planes in registers */
        conv_geom_grouped(4, 4, 6, 7, 3, 1, 1, 4),        /* 42 cells: three output vectors */
        conv_geom_grouped(3, 3, 8, 8, 3, 1, 1, 3),        /* 64 cells: both registers whole */
        conv_geom_grouped(3, 3, 7, 7, 5, 1, 2, 3),        /* 5 x 5 over 7 x 7, three pairs a row */
        conv_geom_grouped(2, 2, 3, 5, 7, 1, 3, 2),        /* a window past the plane each way */
        /* the AMX tiles: pairs of channel tiles and an odd one, several
         * blocks of 16 cells, a tap's quads in chunks */
        conv_geom(9, 40, 6, 9, 3, 3, 1, 1, 1, 1),         /* 40 channels: a pair and 8 rows over */
        conv_geom(72, 33, 5, 7, 3, 3, 2, 2, 1, 1),        /* 18 quads: two chunks of 9; strided */
        conv_geom(100, 17, 5, 6, 1, 1, 1, 1, 0, 0),       /* 25 quads: chunks of 13, the second from 12 */
        conv_geom(130, 48, 3, 3, 3, 3, 1, 1, 1, 1),       /* 33 quads: three chunks of 11; one block */
        conv_geom(64, 80, 10, 10, 3, 3, 1, 1, 1, 1),      /* five channel tiles over 2 and 3 threads */
        /* the tiles' row form: a window row's taps of one quad a tile */
        conv_geom(3, 20, 11, 13, 3, 3, 1, 1, 1, 1),       /* an RGB image's first layer */
        conv_geom(12, 17, 9, 8, 5, 5, 2, 1, 2, 2),        /* three quads, 5 x 5, row stride 2 */
        /* and its copied rows form: the taps form over copies of the quads */
        conv_geom(20, 50, 12, 12, 5, 5, 1, 1, 0, 0),      /* LeNet-5's second layer: 25 planes, 2 chunks */
        conv_geom(40, 33, 7, 9, 3, 3, 2, 1, 1, 1),        /* 30 planes, row stride 2: the phases' rows */
    };
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        for (size_t ci = 0; ci < 3; ci++)
            for (size_t vi = 0; vi < 2; vi++) {
                qconv_case(&extra[i], 0.5, codebooks[ci], ranges[vi], &t);
                qconv_case(&extra[i], 1.0, codebooks[ci], ranges[vi], &t);
                qconv_case(&extra[i], 0.01, codebooks[ci], ranges[vi], &t);
            }
    CHECK(t.cases > 400, "only %zu cases", t.cases);
    CHECK(t.fillers > 0, "no fillers in the grid");
    CHECK(t.bad == 0, "integer convolutions differ from the reference in %zu elements", t.bad);
    CHECK(t.variants > 0 || !(dcz_isa_supported(DCZ_ISA_AVX2) || dcz_isa_supported(DCZ_ISA_NEON)),
          "no vector tap kernel ran");
    CHECK(t.gemm_cases > 50 || !dcz_qgemm_variant(), "the integer product's vector variants ran %zu times",
          t.gemm_cases);
    CHECK(t.shift_cases > 100, "the integer shift form ran %zu times", t.shift_cases);
    CHECK(t.pre_channels > 100 || !dcz_qshift_variant(), "%zu channels requantized with a pre-shift", t.pre_channels);
    CHECK(t.spared > 50 || !dcz_qshift_variant(), "%zu requantizing runs with channels that hold no weight",
          t.spared);
    CHECK(t.f32_cases > 200 && t.f32_over > 100 && t.f32_requant > 200, "the float shift form on integer weights ran "
          "%zu times, %zu with channels by the taps, %zu requantized", t.f32_cases, t.f32_over, t.f32_requant);
    CHECK(t.blocks2 > 20 && t.blocks2 + 20 < t.shift_cases, "%zu of %zu integer shift forms in blocks of two",
          t.blocks2, t.shift_cases);
    CHECK(t.split_variants == t.split_want && (t.split_want > 100 || !dcz_qshift_variant()),
          "the integer split's vector variants ran %zu times of %zu", t.split_variants, t.split_want);
    /* five depthwise geometries above fit, each 18 times with 8-bit
     * weights (four more, of planes of 64 cells or fewer, go to the int16
     * pairs' small planes); all but one with the planes' maps */
    CHECK(t.dw_forms >= 5 * 18, "the depthwise form was built %zu times", t.dw_forms);
    /* and by pairs of output rows the three narrow planes after them */
    CHECK(t.dw_rows >= 3 * 18 && t.dw_rows < t.dw_forms, "the depthwise form by rows was built %zu of %zu times",
          t.dw_rows, t.dw_forms);
    CHECK(t.dw_maps >= 4 * 18 && t.dw_maps < t.dw_forms, "the depthwise form has maps %zu of %zu times", t.dw_maps,
          t.dw_forms);
    CHECK(!dcz_isa_supported(DCZ_ISA_AVX2) || t.qdw >= 8, "the AVX2 depthwise kernel ran %zu times", t.qdw);
    CHECK(t.dw_runs == 0 || t.dw_runs == t.dw_forms, "the depthwise kernel ran %zu of %zu times", t.dw_runs,
          t.dw_forms);
    /* every depthwise geometry at column stride 1 or 2 holds the int16
     * pairs; with VNNI they run each one the byte permutes do not */
    CHECK(t.dwp_forms >= 15 * 18, "the int16 pairs form was built %zu times", t.dwp_forms);
    CHECK(!dcz_qshift_variant() || t.dwp_kernel == t.dwp_forms,
          "a depthwise kernel ran on %zu of %zu forms with the int16 pairs", t.dwp_kernel, t.dwp_forms);
    /* and the pairs themselves on the six large planes at least, which the
     * byte permutes do not take */
    CHECK(!dcz_qshift_variant() || t.dwp_runs >= 6 * 18, "the int16 pairs ran %zu times", t.dwp_runs);
    /* and on the small planes in registers: the eight above */
    CHECK(!dcz_qshift_variant() || t.dwp_small >= 8 * 18, "the int16 pairs ran %zu times on small planes",
          t.dwp_small);
    CHECK(t.shift_vector > 100 || !dcz_qshift_variant(), "the VNNI shift kernel ran %zu times", t.shift_vector);
    CHECK(t.pooled > 100 || !dcz_qshift_variant(), "the VNNI shift kernel pooled %zu times", t.pooled);
    CHECK(t.threaded == 2 * t.shift_vector, "the VNNI shift kernel ran over threads %zu of %zu times", t.threaded,
          2 * t.shift_vector);
    CHECK(t.constants == t.shift_vector && (t.skipped > 50 || !dcz_qshift_variant()),
          "the VNNI shift kernel took constant input channels %zu of %zu times, left channels %zu times",
          t.constants, t.shift_vector, t.skipped);
    /* the byte permutes by maps: every such form took a table's planes */
    CHECK(!dcz_qshift_variant() || !dcz_cpu_features()->avx512vbmi || t.table_planes >= 4 * 18,
          "a depthwise layer ran on byte planes by table %zu times", t.table_planes);
    dcz_pool_stop(thread_pools[0]);
    dcz_pool_stop(thread_pools[1]);
    thread_pools[0] = thread_pools[1] = NULL;
    /* every ungrouped layer of quads of channels, where the CPU has AMX */
    if (dcz_amx_ready() && dcz_qshift_variant()) {
        CHECK(t.amx_forms > 100 && t.amx_runs == t.amx_forms, "the AMX tiles were built %zu times, ran %zu",
              t.amx_forms, t.amx_runs);
        /* and the row form of layers of few quads at column stride 1 */
        CHECK(t.amx_rows > 20 && t.amx_rows < t.amx_forms, "the AMX tiles' row form was built %zu of %zu times",
              t.amx_rows, t.amx_forms);
        CHECK(t.amx_copies > 20 && t.amx_copies + t.amx_rows < t.amx_forms,
              "the AMX tiles' copied rows form was built %zu of %zu times", t.amx_copies, t.amx_forms);
        CHECK(t.amx_cols > 20 && t.amx_cols + t.amx_copies + t.amx_rows < t.amx_forms,
              "the AMX tiles' columns form was built %zu of %zu times", t.amx_cols, t.amx_forms);
        /* and over the threads by blocks of cells on the larger layers */
        CHECK(t.amx_split > 10, "the AMX tiles ran over threads %zu times", t.amx_split);
    } else
        printf("SKIP AMX tiles: this CPU has no AMX-INT8 (or the OS refuses it)\n");
    CHECK(t.float_cases > 100 && t.float_bad == 0,
          "qconv2d_direct_ref differs from the fp32 reference in %zu elements (%zu cases)",
          t.float_bad, t.float_cases);
}

/* ---- rounding and requantization ----------------------------------------------- */

static void test_round_shift(void)
{
    static const struct { int64_t v; unsigned s; int64_t want; } c[] = {
        { 5, 0, 5 }, { -5, 0, -5 }, { INT64_MIN, 0, INT64_MIN }, { INT64_MAX, 0, INT64_MAX },
        { 0, 1, 0 }, { 0, 62, 0 },
        { 5, 1, 3 }, { -5, 1, -2 }, { 4, 1, 2 }, { -4, 1, -2 }, { -6, 1, -3 }, { -7, 1, -3 },
        { -1, 1, 0 }, { 1, 1, 1 }, { -3, 1, -1 }, { 3, 1, 2 },
        { 6, 2, 2 }, { -6, 2, -1 }, { -7, 2, -2 }, { -5, 2, -1 }, { -3, 2, -1 }, { -2, 2, 0 },
        { -1, 2, 0 }, { 2, 2, 1 }, { 1, 2, 0 },
        { 1000, 3, 125 }, { 1003, 3, 125 }, { 1004, 3, 126 }, { -1004, 3, -125 },
        { -1005, 3, -126 },
        { INT64_MAX, 1, (int64_t)1 << 62 }, { INT64_MIN, 1, -((int64_t)1 << 62) },
        { INT64_MIN + 1, 1, -((int64_t)1 << 62) + 1 },
        { INT64_MAX, 62, 2 }, { INT64_MIN, 62, -2 }, { ((int64_t)1 << 61) - 1, 62, 0 },
        { (int64_t)1 << 61, 62, 1 }, { -((int64_t)1 << 61), 62, 0 },
        { -((int64_t)1 << 61) - 1, 62, -1 },
        { INT64_MAX, 63, 1 }, { INT64_MIN, 63, -1 }, { ((int64_t)1 << 62) - 1, 63, 0 },
        { (int64_t)1 << 62, 63, 1 }, { -((int64_t)1 << 62), 63, 0 },
        { -((int64_t)1 << 62) - 1, 63, -1 }, { INT64_MIN, 64, 0 }, { INT64_MAX, 200, 0 },
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        const int64_t got = dcz_round_shift(c[i].v, c[i].s);
        CHECK(got == c[i].want, "round_shift(%lld, %u) = %lld, want %lld", (long long)c[i].v,
              c[i].s, (long long)got, (long long)c[i].want);
    }
}

/* y of one requantization of acc by (mult, shift, qmax) */
static dcz_q requant1(int64_t acc, int32_t mult, uint8_t shift, int32_t qmax)
{
    const dcz_requant rq = { &mult, &shift, qmax, NULL };
    dcz_q y = 0x5555;
    dcz_requant_ref(&rq, &acc, 1, 1, 1, &y);
    return y;
}

/* The pre-shift rule: where it gives p, the accumulator times 2^p stays
 * within 32 bits, the shift becomes 33 and the reference's value is the
 * same; none for shifts 0 and past 32 or a bound that leaves no room */
static void test_requant_pre(void)
{
    size_t taken = 0;
    for (int i = 0; i < 200000; i++) {
        const uint8_t shift = (uint8_t)(rnd() % 40);
        const int64_t acc = (int64_t)(rnd() % (1u << (1 + rnd() % 30))) * (rnd() % 2 ? 1 : -1);
        const int32_t mult = i % 5 == 0 ? 1 : (int32_t)(rnd() >> 33);
        const uint8_t p = dcz_requant_pre(shift, fabs((double)acc) + (double)(rnd() % 3));
        if (!p) continue;
        taken++;
        const int64_t a2 = acc * ((int64_t)1 << p);
        CHECK(shift + p == 33 && a2 < 2147483648LL && a2 > -2147483648LL,
              "pre-shift %u of shift %u for %lld", p, shift, (long long)acc);
        CHECK(requant1(a2, mult, (uint8_t)(shift + p), 127) == requant1(acc, mult, shift, 127),
              "pre-shift %u changes %lld x %d >> %u", p, (long long)acc, mult, shift);
    }
    CHECK(taken > 10000, "the rule took %zu of 200000", taken);
    CHECK(dcz_requant_pre(0, 1) == 0 && dcz_requant_pre(33, 1) == 0 && dcz_requant_pre(1, 0) == 0 &&
          dcz_requant_pre(2, 0) == 31 && dcz_requant_pre(2, 1) == 0 && dcz_requant_pre(32, 1073741823.0) == 1 &&
          dcz_requant_pre(32, 1073741824.0) == 0 && dcz_requant_pre(20, 0x1p30) == 0,
          "the rule's edges");
}

/* dcz_dequantize against its reference, bit for bit: planes of 1 to 40
 * (the vectors' 8 and the tail), accumulators of the 8-bit schemes' range
 * and past it (fixed16: the reference), scales of any size and sign of
 * exponent, several channels and samples */
static void test_dequantize(void)
{
    enum { C = 5, B = 2, P = 40 };
    static int64_t acc[B * C * P];
    static float want[B * C * P], got[B * C * P];
    double scale[C];
    size_t bad = 0;
    for (int round = 0; round < 200; round++) {
        const uint32_t plane = 1 + (uint32_t)(rnd() % P), channels = 1 + (uint32_t)(rnd() % C);
        const size_t batch = 1 + rnd() % B, n = batch * channels * plane;
        const int32_t qmax = round % 4 == 3 ? 32767 : 127;
        for (uint32_t c = 0; c < channels; c++) scale[c] = ldexp(0.5 + (double)(rnd() % 1000) / 1000, -(int)(rnd() % 40));
        for (size_t i = 0; i < n; i++) {
            const int64_t span = qmax == 127 ? (int64_t)1 << (rnd() % 32) : (int64_t)1 << (rnd() % 62);
            acc[i] = (int64_t)(rnd() % (uint64_t)span) * (rnd() % 2 ? 1 : -1);
        }
        acc[0] = qmax == 127 ? INT32_MAX : INT64_MAX / 2;
        acc[n - 1] = qmax == 127 ? -INT32_MAX : INT64_MIN / 2;
        dcz_dequantize_ref(acc, batch, channels, plane, scale, want);
        memset(got, 0x55, sizeof got);
        dcz_dequantize(acc, batch, channels, plane, scale, qmax, got);
        for (size_t i = 0; i < n; i++) bad += memcmp(&got[i], &want[i], sizeof *got) != 0;
        uint32_t past;
        memcpy(&past, &got[n < B * C * P ? n : 0], sizeof past);
        bad += n < B * C * P && past != 0x55555555u;   /* nothing written past the outputs */
    }
    CHECK(bad == 0, "dequantize differs from the reference in %zu values", bad);
}

static void test_requant_by_hand(void)
{
    static const struct { int64_t acc; int32_t mult; uint8_t shift; int32_t qmax; dcz_q want; } c[] = {
        /* saturation just inside, at and past the 8-bit range */
        { 126, 1, 0, 127, 126 }, { 127, 1, 0, 127, 127 }, { 128, 1, 0, 127, 127 },
        { -126, 1, 0, 127, -126 }, { -127, 1, 0, 127, -127 }, { -128, 1, 0, 127, -127 },
        { 253, 1, 1, 127, 127 }, { 252, 1, 1, 127, 126 }, { 254, 1, 1, 127, 127 },
        { 255, 1, 1, 127, 127 }, { -253, 1, 1, 127, -126 }, { -254, 1, 1, 127, -127 },
        { -255, 1, 1, 127, -127 }, { -256, 1, 1, 127, -127 }, { 1000000, 3, 4, 127, 127 },
        /* and of the 16-bit range */
        { 32766, 1, 0, 32767, 32766 }, { 32767, 1, 0, 32767, 32767 },
        { 32768, 1, 0, 32767, 32767 }, { -32767, 1, 0, 32767, -32767 },
        { -32768, 1, 0, 32767, -32767 }, { 65533, 1, 1, 32767, 32767 },
        { 65535, 1, 1, 32767, 32767 }, { -65534, 1, 1, 32767, -32767 },
        { -65535, 1, 1, 32767, -32767 }, { -65532, 1, 1, 32767, -32766 },
        /* ties round half up: -2.5 -> -2, 2.5 -> 3 */
        { -5, 1, 1, 127, -2 }, { 5, 1, 1, 127, 3 }, { -15, 1, 1, 127, -7 }, { -1, 1, 1, 127, 0 },
        { -10, 1, 2, 127, -2 }, { -3, 3, 1, 127, -4 }, { 3, 3, 1, 127, 5 },
        { -7, 5, 3, 32767, -4 }, { 7, 5, 3, 32767, 4 }, { -12, 5, 3, 32767, -7 },
        /* mult 0 */
        { 12345, 0, 0, 127, 0 }, { INT64_MIN, 0, 0, 127, 0 }, { INT64_MAX, 0, 7, 32767, 0 },
        /* shift 0 with a product past int64: saturation by sign */
        { INT64_MAX / 2 + 1, 2, 0, 127, 127 }, { -(INT64_MAX / 2) - 1, 2, 0, 127, -127 },
        { INT64_MIN, 1, 0, 127, -127 }, { INT64_MAX, 1, 0, 32767, 32767 },
        { INT64_MIN, 1 << 30, 0, 32767, -32767 }, { INT64_MAX, INT32_MAX, 0, 127, 127 },
        { -(INT64_MAX / (1 << 30)) - 1, 1 << 30, 0, 127, -127 },
        /* and right at the edge of int64 */
        { INT64_MAX / (1 << 30), 1 << 30, 0, 32767, 32767 },
        /* products past int64 with a shift bringing them back: still exact */
        { (int64_t)1 << 62, 4, 62, 127, 4 }, { -((int64_t)1 << 62), 6, 62, 127, -6 },
        { (int64_t)3 << 61, 3, 62, 127, 5 }, { -((int64_t)3 << 61), 3, 62, 127, -4 },
        { INT64_MIN, 2, 62, 127, -4 }, { INT64_MAX, 2, 62, 127, 4 },
        { INT64_MAX, INT32_MAX, 62, 32767, 32767 }, { INT64_MIN, INT32_MAX, 62, 127, -127 },
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        const dcz_q got = requant1(c[i].acc, c[i].mult, c[i].shift, c[i].qmax);
        CHECK(got == c[i].want, "requant(%lld * %d >> %u, qmax %d) = %d, want %d",
              (long long)c[i].acc, c[i].mult, c[i].shift, c[i].qmax, got, c[i].want);
    }
}

/* Channels and batch: channel c of every sample uses mult[c], shift[c]. */
static void test_requant_layout(void)
{
    const int32_t mult[3] = { 1, 3, 0 };
    const uint8_t shift[3] = { 0, 2, 5 };
    const dcz_requant rq = { mult, shift, 127, NULL };
    const int64_t acc[12] = { 1, -200, 5, -6, 99, 99, /* sample 0: (3, 2) */
                              -1, 200, -5, 6, -99, -99 };
    const dcz_q want[12] = { 1, -127, 4, -4, 0, 0, -1, 127, -4, 5, 0, 0 };
    dcz_q y[12];
    dcz_requant_ref(&rq, acc, 2, 3, 2, y);
    CHECK(diff_q("requant", "(2, 3, 2)", y, want, 12) == 0, "layout");
    /* plane 1 is the DENSE layout */
    dcz_requant_ref(&rq, acc, 4, 3, 1, y);
    const dcz_q want1[12] = { 1, -127, 0, -6, 74, 0, -1, 127, 0, 6, -74, 0 };
    CHECK(diff_q("requant", "(4, 3, 1)", y, want1, 12) == 0, "dense layout");
}

/* dcz_requant8 against the reference on what an 8-bit model feeds it:
 * accumulators within 32 bits (their extremes included), any multiplier,
 * every shift, by channel and by plane. */
/* dcz_requant8_f32: its vector variant against its scalar one and against
 * dcz_requant8_ref on the same sums as 64-bit accumulators, lengths across
 * the vectors' steps, ties, shift 0 and clamps */
static void test_requant8_f32(void)
{
    size_t bad = 0;
    for (size_t n = 1; n <= 37; n += 3) {
        float *yf = alloc(n, sizeof(float));
        int64_t *acc = alloc(n, sizeof(int64_t));
        dcz_q *a = alloc(n, sizeof(dcz_q)), *b = alloc(n, sizeof(dcz_q)), *want = alloc(n, sizeof(dcz_q));
        for (int trial = 0; trial < 6; trial++) {
            const int32_t bias = (int32_t)(rnd() % 2001) - 1000;
            const int32_t mult = trial == 0 ? 1 : trial == 1 ? 3 : (int32_t)(rnd() >> 33);
            const uint8_t shift = (uint8_t)(trial == 0 ? 1 : trial == 2 ? 0 : 20 + rnd() % 40);
            const int32_t lo = trial % 2 ? 0 : -127, hi = trial == 4 ? 90 : 127;
            for (size_t i = 0; i < n; i++) {
                yf[i] = (float)((int32_t)(rnd() % (1u << 25)) - (1 << 24));
                acc[i] = (int64_t)yf[i] + bias;
            }
            const dcz_requant rq = { &mult, &shift, 127, NULL };
            dcz_requant8_ref(&rq, acc, 1, 1, (uint32_t)n, want);
            for (size_t i = 0; i < n; i++) want[i] = (dcz_q)(want[i] < lo ? lo : want[i] > hi ? hi : want[i]);
            dcz_requant8_f32(yf, n, bias, mult, shift, 127, lo, hi, 0, a);
            dcz_requant8_f32(yf, n, bias, mult, shift, 127, lo, hi, 1, b);
            bad += diff_q("requant8_f32", "vector", a, want, n) + diff_q("requant8_f32", "scalar", b, want, n);
        }
        free(yf); free(acc); free(a); free(b); free(want);
    }
    CHECK(bad == 0, "dcz_requant8_f32 differs from the reference in %zu elements", bad);
}

static void test_requant8(void)
{
    enum { C = 67, P = 13, B = 3 };   /* planes across a vector of 8 and inside one */
    int32_t mult[C];
    uint8_t shift[C];
    int64_t acc[B * C * P];
    dcz_q want[B * C * P], got[B * C * P];
    size_t bad = 0, variants = 0;
    for (int round = 0; round < 200; round++) {
        for (int c = 0; c < C; c++) {
            mult[c] = c == 0 ? INT32_MAX : c == 1 ? 0 : (int32_t)(rnd() >> 33);
            shift[c] = (uint8_t)((c + round) % 63);
        }
        for (size_t i = 0; i < B * C * P; i++) {
            const uint64_t r = rnd();
            acc[i] = (r & 15) == 0 ? ((r & 16) ? INT32_MAX : -(int64_t)INT32_MAX)
                                   : (int64_t)(int32_t)(uint32_t)(r >> 32) >> (r % 31);
        }
        const dcz_requant rq = { mult, shift, 127, NULL };
        const uint32_t planes[2] = { P, 1 };
        for (int k = 0; k < 2; k++) {
            const size_t batch = k ? (size_t)B * P : B;
            dcz_requant_ref(&rq, acc, batch, C, planes[k], want);
            memset(got, 0x55, sizeof got);
            dcz_requant8(&rq, acc, batch, C, planes[k], got);
            bad += diff_q("requant8", k ? "plane 1" : "plane 13", got, want, (size_t)B * C * P);
            const dcz_isa isas[] = { DCZ_ISA_REF, DCZ_ISA_AVX2, DCZ_ISA_AVX512 };
            for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
                memset(got, 0x55, sizeof got);
                if (!dcz_requant8_isa(isas[i], &rq, acc, batch, C, planes[k], got)) continue;
                bad += diff_q(i == 0 ? "requant8_ref" : i == 1 ? "requant8 (avx2)" : "requant8 (avx512)",
                              k ? "plane 1" : "plane 13", got, want, (size_t)B * C * P);
                variants += i > 0;
            }
        }
    }
    CHECK(variants > 0 || !dcz_isa_supported(DCZ_ISA_AVX2), "no vector variant of requant8 ran");
    CHECK(bad == 0, "requant8 differs from requant_ref in %zu elements", bad);
}

/* dcz_quantize against the reference, bit for bit: random values across
 * the range and far past it, halves (ties), NaN of both signs, infinities
 * and zeros of both signs, on lengths that end inside and outside a
 * vector. */
static void test_quantize(void)
{
    /* 0x1.88p-7 (49 / 4096): exact ties x / s = k + 1/2 where x times the
     * double reciprocal of s rounds below the tie (k = 1, x = 0x1.26p-6) */
    const float scales[] = { 1.0f, 0.0078125f, 0.013f, 3.7e-5f, 250.0f, 0x1.88p-7f,
                             0x1.7p-99f, 0x1.3p99f, 1e-35f, 3e38f };
    const int32_t qmaxes[] = { 127, 32767 };
    const size_t ns = sizeof scales / sizeof *scales;
    enum { N = 1003 };
    float x[N];
    dcz_q want[N], got[N];
    size_t bad = 0;
    for (size_t si = 0; si < ns; si++)
        for (int qi = 0; qi < 2; qi++) {
            const float s = scales[si];
            for (size_t i = 0; i < N; i++) {
                const uint64_t r = rnd();
                switch (r % 8) {
                case 0: x[i] = ((float)(int32_t)((r >> 8) % 301) - 150.0f + 0.5f) * s; break;   /* ties */
                case 2:                                                                         /* beside them */
                    x[i] = ((float)(int32_t)((r >> 8) % 301) - 150.0f + 0.5f) * s;
                    x[i] = nextafterf(x[i], (r & 1 << 20) ? INFINITY : -INFINITY);
                    break;
                case 1: x[i] = frand() * s * 1e6f; break;                                       /* far out */
                default: x[i] = frand() * s * (float)qmaxes[qi] * 1.2f; break;
                }
            }
            x[0] = NAN; x[1] = INFINITY; x[2] = -INFINITY; x[3] = 0.0f; x[4] = -0.0f;
            x[5] = -0.5f * s; x[6] = 0.5f * s; x[7] = -(float)qmaxes[qi] * s;
            x[8] = -NAN; x[9] = 1e30f; x[10] = -1e30f;
            for (size_t n = N - 4; n <= N; n++) {
                memset(got, 0x55, sizeof got);
                dcz_quantize_ref(x, n, s, qmaxes[qi], want);
                dcz_quantize(x, n, s, qmaxes[qi], got);
                bad += diff_q("quantize", "random", got, want, n);
                if (n < N && got[n] != 0x5555) bad++;   /* nothing past n */
            }
        }
    CHECK(bad == 0, "quantize differs from quantize_ref in %zu elements", bad);
    /* the reference on cases worked by hand */
    const float hx[6] = { 2.5f, -2.5f, 2.49f, 1000.0f, -1000.0f, NAN };
    const dcz_q hw[6] = { 3, -3, 2, 127, -127, 0 };
    dcz_q hy[6];
    dcz_quantize_ref(hx, 6, 1.0f, 127, hy);
    CHECK(diff_q("quantize_ref", "by hand", hy, hw, 6) == 0, "quantize_ref by hand");
}

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 i128;

/* floor(n / 2^s) on exact 128-bit values, by division and a correction */
static i128 floor_pow2(i128 n, unsigned s)
{
    const i128 d = (i128)1 << s;
    i128 q = n / d;
    if (n % d != 0 && n < 0) q -= 1;
    return q;
}

static int64_t exact_requant(int64_t acc, int32_t mult, unsigned shift, int32_t qmax)
{
    i128 p = (i128)acc * mult;
    if (shift > 0) p = floor_pow2(p + ((i128)1 << (shift - 1)), shift);
    return p > qmax ? qmax : p < -qmax ? -qmax : (int64_t)p;
}

/* an int64 of random magnitude: 0 to 63 significant bits, either sign */
static int64_t any_i64(void)
{
    const unsigned bits = (unsigned)(rnd() % 64);
    const int64_t v = bits ? (int64_t)(rnd() >> (64 - bits)) : 0;
    return (rnd() & 1) ? -v - (int64_t)(rnd() & 1) : v;
}

static void test_requant_exact(void)
{
    const uint32_t n = 200000;
    size_t bad = 0, rs_bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        const int64_t acc = any_i64();
        const unsigned mbits = (unsigned)(rnd() % 32);
        const int32_t mult = mbits ? (int32_t)(rnd() >> (64 - mbits)) : 0;
        /* mostly the shifts requant is given (<= 62), some past them */
        const uint8_t shift = (uint8_t)(rnd() % 8 ? rnd() % 63 : 63 + rnd() % 40);
        const int32_t qmax = (rnd() & 1) ? 127 : 32767;
        const dcz_q got = requant1(acc, mult, shift, qmax);
        const int64_t want = exact_requant(acc, mult, shift, qmax);
        if (got != want && bad++ < 3 && show())
            fprintf(stderr, "  requant(%lld * %d >> %u, qmax %d) = %d, exact %lld\n",
                    (long long)acc, mult, shift, qmax, got, (long long)want);
        const int64_t r = dcz_round_shift(acc, shift);
        const i128 rw = shift ? floor_pow2((i128)acc + ((i128)1 << (shift - 1)), shift)
                                  : acc;
        if (r != rw && rs_bad++ < 3 && show())
            fprintf(stderr, "  round_shift(%lld, %u) = %lld\n", (long long)acc, shift,
                    (long long)r);
    }
    CHECK(bad == 0, "requant differs from 128-bit arithmetic in %zu of %u cases", bad, n);
    CHECK(rs_bad == 0, "round_shift differs from 128-bit arithmetic in %zu of %u cases", rs_bad, n);
}
#else
static void test_requant_exact(void)
{
    printf("SKIP test_requant_exact: the compiler has no __int128 (hand cases still run)\n");
}
#endif

/* ---- relu and pools ------------------------------------------------------------ */

static void test_qrelu(void)
{
    dcz_q v[7] = { -1, 0, 2, INT16_MIN, INT16_MAX, -32767, 127 };
    const dcz_q want[7] = { 0, 0, 2, 0, INT16_MAX, 0, 127 };
    dcz_qrelu_ref(v, 7);
    CHECK(diff_q("qrelu", "", v, want, 7) == 0, "relu");
    /* the vector one, on lengths that end inside and outside a vector */
    dcz_q a[77], r[77];
    size_t bad = 0;
    for (size_t n = 0; n <= 77; n += 7) {
        for (size_t i = 0; i < n; i++) a[i] = r[i] = (dcz_q)(rnd() % 65535 - 32767);
        dcz_qrelu_ref(r, n);
        dcz_qrelu(a, n);
        bad += diff_q("qrelu (vector)", "", a, r, n);
    }
    CHECK(bad == 0, "vector relu differs in %zu elements", bad);
}

/* dcz_qtable against the reference: both ranges and a table shorter than
 * the registers that hold it, every entry looked up, the last one
 * included, on lengths that end inside and outside a vector; tables of
 * any 16-bit values and, as calibration makes them, of values within
 * -qmax .. qmax (the byte permutes' path, where VBMI runs it), in place
 * too */
static void test_qtable(void)
{
    size_t bad = 0;
    for (int r = 0; r < 5; r++) {
        const int32_t qmax = r == 0 || r == 3 ? 127 : r == 1 ? 32767 : 50;
        const int small = r >= 3;
        const size_t entries = 2 * (size_t)qmax + 2, n = 2 * (size_t)qmax + 1 + 13;
        dcz_q *table = alloc(entries, sizeof(dcz_q)), *x = alloc(n, sizeof(dcz_q));
        dcz_q *want = alloc(n, sizeof(dcz_q)), *got = alloc(n, sizeof(dcz_q));
        for (size_t i = 0; i < entries; i++)
            table[i] = (dcz_q)(small ? (int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax
                                     : (int32_t)(rnd() % 65535) - 32767);
        for (size_t i = 0; i < n; i++) x[i] = (dcz_q)(i < 2 * (size_t)qmax + 1 ? (int32_t)i - qmax : (int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
        x[n - 1] = (dcz_q)qmax;
        dcz_qtable_ref(table, qmax, x, n, want);
        dcz_qtable(table, qmax, x, n, got);
        bad += diff_q("qtable", "", got, want, n);
        memcpy(got, x, n * sizeof *got);
        dcz_qtable(table, qmax, got, n, got);
        bad += diff_q("qtable in place", "", got, want, n);
        /* by planes, skipping the planes of some channels, which keep what
         * they hold: n values as 2 samples of channels of 7 */
        const uint32_t channels = (uint32_t)(n / 14), plane = 7;
        uint8_t *skip = alloc(channels, 1);
        for (uint32_t c = 0; c < channels; c++) skip[c] = rnd() % 3 == 0 || c == 1;
        skip[0] = 0;
        for (size_t i = 0; i < n; i++) got[i] = (dcz_q)0x5555;
        dcz_qtable_planes(table, qmax, x, 2, channels, plane, skip, got);
        size_t kept = 0;
        for (size_t i = 0; i < 2 * (size_t)channels * plane; i++) {
            const uint32_t c = (uint32_t)(i / plane % channels);
            bad += skip[c] ? got[i] != (dcz_q)0x5555 : got[i] != want[i];
            kept += !skip[c];
        }
        bad += kept == 0;
        free(skip);
        free(table); free(x); free(want); free(got);
    }
    CHECK(bad == 0, "qtable differs from the reference in %zu elements", bad);
}

/* dcz_qconcat and each variant this machine runs against the reference:
 * 1 to 5 inputs of widths across the vectors' steps (1 to 70, and past a
 * lookup's 64 values), batches 1 to 3, both ranges, every shift up to 63
 * (past 62 the variants decline and dcz_qconcat takes the reference), any
 * multiplier, inputs already on the output's scale (mult 2^shift, copied)
 * among them; each with and without the tables of the 8-bit range
 * (dcz_qconcat_tables, looked up on AVX-512BW) */
static void test_qconcat(void)
{
    enum { W = 70, NIN = 5, B = 3 };
    static dcz_q in[NIN][B * W], want[B * NIN * W], got[B * NIN * W], tables[NIN * 256];
    const dcz_isa isas[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2 };
    size_t bad = 0, runs = 0, copies = 0, tabled = 0;
    const int lookups = dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw;
    for (int round = 0; round < 400; round++) {
        const int32_t qmax = round & 1 ? 32767 : 127;
        const uint32_t nin = 1 + (uint32_t)(rnd() % NIN);
        const size_t batch = 1 + (size_t)(rnd() % B);
        uint32_t width[NIN];
        int32_t mult[NIN];
        uint8_t shift[NIN];
        const dcz_q *xs[NIN];
        size_t n = 0;
        for (uint32_t k = 0; k < nin; k++) {
            width[k] = 1 + (uint32_t)(rnd() % W);
            shift[k] = (uint8_t)(round % 9 == 0 ? 63 : rnd() % 63);
            const int same = rnd() % 4 == 0 && shift[k] <= 30;
            mult[k] = same ? (int32_t)1 << shift[k] : (int32_t)(rnd() >> 33);
            copies += same;
            for (size_t i = 0; i < batch * width[k]; i++)
                in[k][i] = (dcz_q)((int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
            xs[k] = in[k];
            n += batch * width[k];
        }
        dcz_qconcat_ref(xs, width, nin, batch, mult, shift, qmax, want);
        const int has_tables = dcz_qconcat_table_entries(nin, qmax) != 0;
        /* (none past the 8-bit range, nor where the lookups are not built) */
        CHECK(!has_tables || qmax <= 127, "tables for qmax %d", (int)qmax);
        CHECK(has_tables || qmax > 127 || !lookups, "no tables for qmax %d where AVX-512BW looks up", (int)qmax);
        if (has_tables) dcz_qconcat_tables(nin, mult, shift, qmax, tables);
        for (int t = 0; t <= has_tables; t++)
            for (size_t v = 0; v <= sizeof isas / sizeof *isas; v++) {
                /* v past the variants: dcz_qconcat itself */
                const dcz_q *tb = t ? tables : NULL;
                for (size_t i = 0; i < n; i++) got[i] = (dcz_q)0x5555;
                if (v == sizeof isas / sizeof *isas) dcz_qconcat(xs, width, nin, batch, mult, shift, qmax, tb, got);
                else if (!dcz_qconcat_isa(isas[v], xs, width, nin, batch, mult, shift, qmax, tb, got)) continue;
                runs++;
                /* lookups where AVX-512BW runs them (the variant's, or the dispatch's) */
                tabled += t && (v == 0 || v == sizeof isas / sizeof *isas) && lookups;
                bad += diff_q("qconcat", t ? " by tables" : "", got, want, n);
            }
    }
    CHECK(bad == 0, "qconcat differs from the reference in %zu elements", bad);
    CHECK(copies > 100, "only %zu inputs already on the output's scale", copies);
    CHECK(runs >= 400 && (tabled >= 200 || !lookups), "qconcat ran %zu times, %zu by lookups", runs, tabled);
}

/* dcz_qmul and each variant this machine runs against the reference:
 * batches 1 to 3 of 1 to 9 channels, planes across the vectors' steps
 * (1 to 70), and factors one a value (plane 1, up to 630 of them), both ranges (x f up to 32767^2), every shift up to 63 (past
 * 62 the variants decline), any multiplier */
static void test_qmul(void)
{
    enum { P = 70, C = 9, B = 3 };
    static dcz_q x[B * C * P], f[B * C * P], want[B * C * P], got[B * C * P];
    const dcz_isa isas[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2 };
    size_t bad = 0, runs = 0;
    for (int round = 0; round < 300; round++) {
        const int32_t qmax = round & 1 ? 32767 : 127;
        const size_t batch = 1 + (size_t)(rnd() % B);
        /* every fourth round a factor a value (plane 1), over up to C P of them */
        const int each = round % 4 == 0;
        const uint32_t channels = 1 + (uint32_t)(rnd() % (each ? C * P : C));
        const uint32_t plane = each ? 1 : 1 + (uint32_t)(rnd() % P);
        const int32_t mult = (int32_t)(rnd() >> 33);
        const uint8_t shift = (uint8_t)(round % 11 == 0 ? 63 : rnd() % 63);
        const size_t n = batch * channels * plane;
        for (size_t i = 0; i < n; i++) x[i] = (dcz_q)((int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
        for (size_t i = 0; i < batch * channels; i++)
            f[i] = (dcz_q)((int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
        if (round % 5 == 0) x[0] = f[0] = (dcz_q)(round & 2 ? qmax : -qmax);   /* the largest product */
        dcz_qmul_ref(x, f, batch, channels, plane, mult, shift, qmax, want);
        for (size_t v = 0; v <= sizeof isas / sizeof *isas; v++) {
            for (size_t i = 0; i < n; i++) got[i] = (dcz_q)0x5555;
            if (v == sizeof isas / sizeof *isas) dcz_qmul(x, f, batch, channels, plane, mult, shift, qmax, got);
            else if (!dcz_qmul_isa(isas[v], x, f, batch, channels, plane, mult, shift, qmax, got)) continue;
            runs++;
            bad += diff_q("qmul", "", got, want, n);
        }
    }
    CHECK(bad == 0, "qmul differs from the reference in %zu elements", bad);
    CHECK(runs >= 300, "qmul ran %zu times", runs);
    /* planes of 400 to 1500 values, about the 8-bit schemes' table path's
     * least (512, where VBMI runs it), in place too */
    enum { LP = 1500, LC = 3 };
    static dcz_q lx[LC * LP], lf[LC], lw[LC * LP], lg[LC * LP];
    bad = 0;
    for (int round = 0; round < 40; round++) {
        const int32_t qmax = round & 1 ? 127 : 50;
        const uint32_t channels = 1 + (uint32_t)(rnd() % LC), plane = 400 + (uint32_t)(rnd() % (LP - 399));
        const int32_t mult = (int32_t)(rnd() >> 33);
        /* (shifts below 16 too: the tables decline them, the product not reaching 33) */
        const uint8_t shift = (uint8_t)(round % 7 == 0 ? 63 : round % 5 == 0 ? rnd() % 16 : 20 + rnd() % 43);
        const size_t n = (size_t)channels * plane;
        for (size_t i = 0; i < n; i++) lx[i] = (dcz_q)((int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
        for (size_t i = 0; i < channels; i++) lf[i] = (dcz_q)((int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
        lx[0] = (dcz_q)-qmax;
        lx[n - 1] = (dcz_q)qmax;
        dcz_qmul_ref(lx, lf, 1, channels, plane, mult, shift, qmax, lw);
        dcz_qmul(lx, lf, 1, channels, plane, mult, shift, qmax, lg);
        bad += diff_q("qmul (large planes)", "", lg, lw, n);
        memcpy(lg, lx, n * sizeof *lg);
        dcz_qmul(lg, lf, 1, channels, plane, mult, shift, qmax, lg);
        bad += diff_q("qmul (large planes, in place)", "", lg, lw, n);
    }
    CHECK(bad == 0, "qmul over large planes differs from the reference in %zu elements", bad);
}

/* dcz_qadd and each variant this machine runs against the reference:
 * both ranges, every shift up to 62 (and past it, where the variants
 * decline and dcz_qadd takes the reference), any multiplier, in place too,
 * and with a ReLU's bounds against the reference and then dcz_qrelu_ref;
 * lengths across the vectors' steps; for the 8-bit schemes also by the
 * Add's tables where dcz_qadd_tables makes them (about half the rounds:
 * terms within +-16383), which it must where every term is */
static void test_qadd(void)
{
    enum { N = 131 };
    dcz_q a[N], b[N], want[N], got[N], relu[N];
    dcz_q tables[2 * DCZ_QADD_TABLE];
    const dcz_isa isas[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2 };
    size_t bad = 0, cut = 0, runs = 0, table_rounds = 0;
    for (int round = 0; round < 300; round++) {
        const int32_t qmax = round & 1 ? 32767 : 127;
        const int32_t mult[2] = { (int32_t)(rnd() >> 33), round % 7 == 0 ? 0 : (int32_t)(rnd() >> 33) };
        const uint8_t shift[2] = { (uint8_t)(round % 64), (uint8_t)((round * 7) % 64) };
        const size_t n = N - (size_t)round % 37;
        for (size_t i = 0; i < N; i++) {
            a[i] = (dcz_q)((int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
            b[i] = (dcz_q)((int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
        }
        dcz_qadd_ref(a, b, n, mult, shift, qmax, want);
        memcpy(relu, want, sizeof relu);
        for (size_t i = 0; i < n; i++) cut += want[i] < 0;   /* sums the ReLU's bound clamps */
        dcz_qrelu_ref(relu, n);
        /* the tables: made exactly where every term lies within +-16383 */
        int within = qmax == 127 && shift[0] <= 62 && shift[1] <= 62;
        for (int k = 0; k < 2 && within; k++)
            for (int32_t v = -qmax; v <= qmax; v++) {
                const int64_t r = dcz_round_shift((int64_t)v * mult[k], shift[k]);
                within &= r >= -16383 && r <= 16383;
            }
        const int made = dcz_qadd_tables(mult, shift, qmax, tables);
        bad += made != within;
        table_rounds += (size_t)made;
        for (size_t v = 0; v <= sizeof isas / sizeof *isas; v++)
            for (int t = 0; t <= made; t++) {
                /* v past the variants: dcz_qadd itself; t: by the tables */
                const int all = v == sizeof isas / sizeof *isas;
                const dcz_q *tab = t ? tables : NULL;
                dcz_q keep[N];
                memcpy(keep, a, sizeof keep);
                if (all) dcz_qadd(a, b, n, mult, shift, -qmax, qmax, tab, got);
                else if (!dcz_qadd_isa(isas[v], a, b, n, mult, shift, -qmax, qmax, tab, got)) continue;
                runs++;
                bad += diff_q(t ? "qadd (tables)" : "qadd", "", got, want, n);
                if (all) dcz_qadd(a, b, n, mult, shift, 0, qmax, tab, got);
                else dcz_qadd_isa(isas[v], a, b, n, mult, shift, 0, qmax, tab, got);
                bad += diff_q(t ? "qadd (tables, relu)" : "qadd (relu)", "", got, relu, n);
                /* bounds of an activation's table that is a clamp (ReLU6 and the like) */
                const int32_t lo = -(int32_t)(rnd() % (uint64_t)(qmax + 1)), hi = (int32_t)(rnd() % (uint64_t)(qmax + 1));
                dcz_q bounded[N];
                for (size_t i = 0; i < n; i++) bounded[i] = (dcz_q)(want[i] < lo ? lo : want[i] > hi ? hi : want[i]);
                if (all) dcz_qadd(a, b, n, mult, shift, lo, hi, tab, got);
                else dcz_qadd_isa(isas[v], a, b, n, mult, shift, lo, hi, tab, got);
                bad += diff_q(t ? "qadd (tables, bounds)" : "qadd (bounds)", "", got, bounded, n);
                if (all) dcz_qadd(a, b, n, mult, shift, -qmax, qmax, tab, a);   /* in place */
                else dcz_qadd_isa(isas[v], a, b, n, mult, shift, -qmax, qmax, tab, a);
                bad += diff_q(t ? "qadd (tables, in place)" : "qadd (in place)", "", a, want, n);
                memcpy(a, keep, sizeof keep);
            }
    }
    CHECK(bad == 0, "qadd differs from the reference in %zu elements (or its tables where the terms allow)", bad);
    CHECK(cut > 1000, "only %zu negative sums for the ReLU's bound", cut);
    CHECK(runs >= 300, "qadd ran %zu times", runs);
    CHECK(table_rounds >= 40, "the tables made in %zu rounds only", table_rounds);
}

/* dcz_qclamp against the reference: both ranges, bounds inside and at the
 * range's ends, lengths across the vector's steps */
static void test_qclamp(void)
{
    enum { N = 77 };
    dcz_q x[N], want[N];
    size_t bad = 0;
    for (int round = 0; round < 200; round++) {
        const int32_t qmax = round & 1 ? 32767 : 127;
        const int32_t lo = round % 3 == 0 ? -qmax : round % 3 == 1 ? 0 : -(int32_t)(rnd() % (uint64_t)qmax);
        const int32_t hi = round % 5 == 0 ? qmax : (int32_t)(rnd() % (uint64_t)qmax);
        const size_t n = N - (size_t)round % 23;
        for (size_t i = 0; i < N; i++) x[i] = (dcz_q)((int32_t)(rnd() % (2 * (uint64_t)qmax + 1)) - qmax);
        memcpy(want, x, sizeof want);
        dcz_qclamp_ref(want, n, lo, hi);
        dcz_qclamp(x, n, lo, hi);
        bad += diff_q("qclamp", "", x, want, N);
    }
    CHECK(bad == 0, "qclamp differs from the reference in %zu elements", bad);
}

static void test_qpools_by_hand(void)
{
    /* two samples of one 4x4 channel: the second is the first negated */
    dcz_q x[32], y[32];
    for (int i = 0; i < 16; i++) { x[i] = (dcz_q)((i * 7) % 16); x[16 + i] = (dcz_q)-x[i]; }
    /* x[0] = 0 7 14 5 / 12 3 10 1 / 8 15 6 13 / 4 11 2 9 */
    dcz_conv_geom g = conv_geom(1, 1, 4, 4, 2, 2, 2, 2, 0, 0);
    dcz_qmaxpool_ref(&g, x, 2, y);
    const dcz_q want_max[8] = { 12, 14, 15, 13, 0, -1, -4, -2 };
    CHECK(diff_q("qmaxpool", "2x2", y, want_max, 8) == 0, "max 2x2");
    /* 2x2 averages of the same: 22/4, 30/4, 38/4, 30/4, and negated */
    dcz_qavgpool_ref(&g, 0, x, 2, y);
    const dcz_q want_avg[8] = { 6, 8, 10, 8, -6, -8, -10, -8 }; /* 5.5 7.5 9.5 7.5 */
    CHECK(diff_q("qavgpool", "2x2 ties", y, want_avg, 8) == 0, "avg ties away from zero");
    /* 3x3 stride 2 padding 1 on negative values: padding never wins */
    const dcz_q neg[9] = { -1, -2, -3, -4, -5, -6, -7, -8, -9 };
    const dcz_q pos[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    g = conv_geom(1, 1, 3, 3, 3, 3, 2, 2, 1, 1);
    dcz_qmaxpool_ref(&g, neg, 1, y);
    const dcz_q want_neg[4] = { -1, -2, -4, -5 };
    CHECK(diff_q("qmaxpool", "padded", y, want_neg, 4) == 0, "max padded");
    /* windows hold 4 cells each: sums 12, 16, 24, 28 */
    dcz_qavgpool_ref(&g, 0, pos, 1, y);
    const dcz_q want_in[4] = { 3, 4, 6, 7 };
    CHECK(diff_q("qavgpool", "inside", y, want_in, 4) == 0, "avg over cells inside");
    dcz_qavgpool_ref(&g, 1, pos, 1, y); /* / 9: 1.33 1.78 2.67 3.11 */
    const dcz_q want_all[4] = { 1, 2, 3, 3 };
    CHECK(diff_q("qavgpool", "with pad", y, want_all, 4) == 0, "avg including padding");
    dcz_qavgpool_ref(&g, 1, neg, 1, y);
    const dcz_q want_all_neg[4] = { -1, -2, -3, -3 };
    CHECK(diff_q("qavgpool", "negative with pad", y, want_all_neg, 4) == 0, "negative averages");
    /* 2x2 stride 1 padding 1 on a 2x2 plane: corner windows hold one cell,
     * edges two, the centre four; count_include_pad divides all by 4 */
    const dcz_q c4[8] = { 2, -2, 6, -7, /* sample 2: */ -2, 3, 1, 1 };
    g = conv_geom(1, 1, 2, 2, 2, 2, 1, 1, 1, 1);
    dcz_qavgpool_ref(&g, 1, c4, 2, y);
    /* sample 1 sums: 2 0 -2 / 8 -1 -9 / 6 -1 -7, over 4 */
    const dcz_q want_c4[18] = { 1, 0, -1, 2, 0, -2, 2, 0, -2,
                                /* sums: -2 1 3 / -1 3 4 / 1 2 1 */
                                -1, 0, 1, 0, 1, 1, 0, 1, 0 };
    CHECK(diff_q("qavgpool", "corners with pad", y, want_c4, 18) == 0, "corner windows, pad");
    dcz_qavgpool_ref(&g, 0, c4, 2, y);
    /* sample 1: 2/1 0/2 -2/1 / 8/2 -1/4 -9/2 / 6/1 -1/2 -7/1 */
    const dcz_q want_c4_in[18] = { 2, 0, -2, 4, 0, -5, 6, -1, -7,
                                   /* -2/1 1/2 3/1 / -1/2 3/4 4/2 / 1/1 2/2 1/1 */
                                   -2, 1, 3, -1, 1, 2, 1, 1, 1 };
    CHECK(diff_q("qavgpool", "corners inside", y, want_c4_in, 18) == 0, "corner windows");
    /* global average: 2 samples x 3 channels of 2x2 */
    const dcz_q x3[24] = { 1, 2, 3, 4, 0, 0, 0, 8, -1, -2, -3, -4,
                           -1, 0, 0, 0, -2, 0, 0, 0, 5, 5, 5, 9 };
    const dcz_q want3[6] = { 3, 2, -3, 0, -1, 6 }; /* 2.5 2 -2.5 -0.25 -0.5 6 */
    dcz_qglobal_avgpool_ref(3, 4, x3, 2, y);
    CHECK(diff_q("qglobal_avgpool", "", y, want3, 6) == 0, "global average");
    /* extremes do not overflow */
    const dcz_q big[4] = { INT16_MIN, INT16_MIN, INT16_MIN, INT16_MIN };
    dcz_qglobal_avgpool_ref(1, 4, big, 1, y);
    CHECK(y[0] == INT16_MIN, "global average of INT16_MIN: %d", y[0]);
}

/* rounding half away from zero of sum / count, stated as inequalities:
 * |y| is the integer with 2 |y| count - count <= 2 |sum| < 2 |y| count + count,
 * and y has the sign of sum */
static int is_rounded_average(dcz_q y, int64_t sum, int64_t count)
{
    const int64_t s = sum < 0 ? -sum : sum, q = y < 0 ? -(int64_t)y : y;
    if (s != 0 && q != 0 && (sum < 0) != (y < 0)) return 0;
    return 2 * q * count - count <= 2 * s && 2 * s < 2 * q * count + count;
}

/* Random planes: max against the fp32 pool (exact on integers), averages
 * against the statement above with windows counted here cell by cell. */
static void test_qpools_random(void)
{
    const dcz_conv_geom geoms[] = {
        conv_geom(3, 3, 7, 9, 3, 3, 2, 2, 1, 1), conv_geom(2, 2, 5, 11, 2, 3, 1, 2, 1, 0),
        conv_geom(1, 1, 9, 7, 5, 5, 2, 1, 2, 4), conv_geom(4, 4, 1, 1, 3, 3, 1, 1, 1, 1),
        conv_geom(2, 2, 8, 8, 2, 2, 2, 2, 0, 0),
    };
    size_t max_bad = 0, avg_bad = 0;
    for (size_t gi = 0; gi < sizeof geoms / sizeof *geoms; gi++) {
        const dcz_conv_geom *g = &geoms[gi];
        const size_t B = 3, xin = (size_t)g->in_c * g->in_h * g->in_w;
        const size_t yout = (size_t)g->out_c * g->out_h * g->out_w;
        dcz_q *x = alloc(B * xin, sizeof(dcz_q)), *y = alloc(B * yout, sizeof(dcz_q));
        float *xf = alloc(B * xin, sizeof(float)), *yf = alloc(B * yout, sizeof(float));
        fill_q(x, B * xin, gi & 1 ? 127 : 32767);
        for (size_t i = 0; i < B * xin; i++) xf[i] = (float)x[i];
        dcz_qmaxpool_ref(g, x, B, y);
        dcz_maxpool_ref(g, xf, B, yf);
        for (size_t i = 0; i < B * yout; i++)
            if ((float)y[i] != yf[i] && max_bad++ < 3 && show())
                fprintf(stderr, "  qmaxpool geometry %zu: [%zu] = %d, fp32 %.1f\n", gi, i, y[i],
                        (double)yf[i]);
        for (int cip = 0; cip < 2; cip++) {
            dcz_qavgpool_ref(g, cip, x, B, y);
            size_t o = 0;
            for (size_t p = 0; p < B * g->in_c; p++)
                for (uint32_t oy = 0; oy < g->out_h; oy++)
                    for (uint32_t ox = 0; ox < g->out_w; ox++, o++) {
                        int64_t sum = 0, cells = 0;
                        for (uint32_t ky = 0; ky < g->kh; ky++)
                            for (uint32_t kx = 0; kx < g->kw; kx++) {
                                const int64_t iy = (int64_t)oy * g->sh + ky - g->ph;
                                const int64_t ix = (int64_t)ox * g->sw + kx - g->pw;
                                if (iy < 0 || iy >= g->in_h || ix < 0 || ix >= g->in_w) continue;
                                sum += x[p * g->in_h * g->in_w + (size_t)iy * g->in_w + (size_t)ix];
                                cells++;
                            }
                        const int64_t count = cip ? (int64_t)g->kh * g->kw : cells;
                        if (!is_rounded_average(y[o], sum, count) && avg_bad++ < 3 && show())
                            fprintf(stderr, "  qavgpool geometry %zu pad %d: [%zu] = %d, sum %lld "
                                    "over %lld\n", gi, cip, o, y[o], (long long)sum,
                                    (long long)count);
                    }
        }
        free(x); free(y); free(xf); free(yf);
    }
    CHECK(max_bad == 0, "qmaxpool differs from the fp32 pool in %zu elements", max_bad);
    /* dcz_qmaxpool against the reference: these and real networks' pools
     * (2x2 stride 2 on even, odd and padded images, 3x3 stride 2 padded,
     * stride 1 over rows of 40, stride 3; at column stride 2 rows of
     * several vectors and a part, windows 3, 4 and 5 wide), both ranges,
     * batch 3 */
    const dcz_conv_geom pools[] = {
        conv_geom(3, 3, 7, 9, 3, 3, 2, 2, 1, 1), conv_geom(2, 2, 5, 11, 2, 3, 1, 2, 1, 0),
        conv_geom(1, 1, 9, 7, 5, 5, 2, 1, 2, 4), conv_geom(4, 4, 1, 1, 3, 3, 1, 1, 1, 1),
        conv_geom(3, 3, 24, 24, 2, 2, 2, 2, 0, 0), conv_geom(2, 2, 9, 35, 2, 2, 2, 2, 0, 0),
        conv_geom(2, 2, 7, 9, 2, 2, 2, 2, 1, 1), conv_geom(2, 2, 14, 14, 3, 3, 2, 2, 1, 1),
        conv_geom(1, 1, 5, 40, 2, 2, 1, 1, 0, 0), conv_geom(2, 2, 9, 50, 3, 3, 3, 3, 0, 0),
        conv_geom(2, 2, 5, 111, 3, 3, 2, 2, 0, 0), conv_geom(2, 2, 13, 70, 3, 3, 2, 2, 1, 1),
        conv_geom(1, 1, 9, 60, 3, 4, 2, 2, 1, 1), conv_geom(2, 2, 11, 75, 5, 5, 2, 2, 2, 2),
        /* ResNet's first pool's rows (interior outputs 1 .. 55: a vector
         * rewritten in part), one of exactly 8 interior outputs at stride
         * 2 and of 16 and 17 at stride 1 */
        conv_geom(2, 2, 6, 112, 3, 3, 2, 2, 1, 1), conv_geom(1, 1, 5, 18, 3, 3, 2, 2, 1, 1),
        conv_geom(2, 2, 4, 18, 3, 3, 1, 1, 1, 1), conv_geom(2, 2, 4, 19, 3, 3, 1, 1, 1, 1),
    };
    size_t qbad = 0, qvariants = 0;
    for (size_t gi = 0; gi < sizeof pools / sizeof *pools; gi++)
        for (int range = 0; range < 2; range++) {
            const dcz_conv_geom *g = &pools[gi];
            const size_t B = 3, xin = (size_t)g->in_c * g->in_h * g->in_w;
            const size_t yout = (size_t)g->out_c * g->out_h * g->out_w;
            dcz_q *x = alloc(B * xin, sizeof(dcz_q)), *want = alloc(B * yout, sizeof(dcz_q));
            dcz_q *got = alloc(B * yout + 16, sizeof(dcz_q));   /* and 16 words nothing may write */
            fill_q(x, B * xin, range ? 127 : 32767);
            dcz_qmaxpool_ref(g, x, B, want);
            memset(got, 0x55, B * yout * sizeof(dcz_q));
            dcz_qmaxpool(g, x, B, got);
            qbad += diff_q("qmaxpool", "", got, want, B * yout);
            /* each variant this machine runs */
            static const dcz_isa isas[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2 };
            for (size_t k = 0; k < sizeof isas / sizeof *isas; k++) {
                memset(got, 0x55, (B * yout + 16) * sizeof(dcz_q));
                if (!dcz_qmaxpool_isa(isas[k], g, x, B, got)) continue;
                qbad += diff_q(k ? "qmaxpool (AVX2)" : "qmaxpool (AVX-512)", "", got, want, B * yout);
                for (size_t i = 0; i < 16; i++) qbad += got[B * yout + i] != (dcz_q)0x5555;
                qvariants++;
            }
            free(x); free(want); free(got);
        }
    CHECK(qbad == 0, "dcz_qmaxpool differs from the reference in %zu elements", qbad);
    /* dcz_qavgpool against the reference: 2x2 stride 2 without padding
     * (DenseNet's transitions: 56 -> 28, 28 -> 14, 14 -> 7; even and odd
     * images, rows of one vector and a part, of fewer than one), both
     * ranges (sums that round half away from zero, both signs), and
     * geometries it leaves to the reference */
    const dcz_conv_geom avgs[] = {
        conv_geom(2, 2, 56, 56, 2, 2, 2, 2, 0, 0), conv_geom(3, 3, 28, 28, 2, 2, 2, 2, 0, 0),
        conv_geom(2, 2, 14, 14, 2, 2, 2, 2, 0, 0), conv_geom(2, 2, 9, 35, 2, 2, 2, 2, 0, 0),
        conv_geom(1, 1, 7, 11, 2, 2, 2, 2, 0, 0), conv_geom(2, 2, 7, 9, 2, 2, 2, 2, 1, 1),
        conv_geom(2, 2, 9, 17, 3, 3, 2, 2, 1, 1),
    };
    size_t abad = 0, avariants = 0;
    for (size_t gi = 0; gi < sizeof avgs / sizeof *avgs; gi++)
        for (int range = 0; range < 2; range++)
            for (int cip = 0; cip < 2; cip++) {
                const dcz_conv_geom *g = &avgs[gi];
                const size_t B = 3, xin = (size_t)g->in_c * g->in_h * g->in_w;
                const size_t yout = (size_t)g->out_c * g->out_h * g->out_w;
                dcz_q *x = alloc(B * xin, sizeof(dcz_q)), *want = alloc(B * yout, sizeof(dcz_q));
                dcz_q *got = alloc(B * yout + 16, sizeof(dcz_q));
                fill_q(x, B * xin, range ? 127 : 32767);
                for (size_t i = 0; i < B * xin; i += 7) x[i] = (dcz_q)(i % 2 ? 2 : -2);   /* sums of 4 k + 2: ties */
                dcz_qavgpool_ref(g, cip, x, B, want);
                memset(got, 0x55, B * yout * sizeof(dcz_q));
                dcz_qavgpool(g, cip, x, B, got);
                abad += diff_q("qavgpool", "", got, want, B * yout);
                static const dcz_isa isas[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2 };
                for (size_t k = 0; k < sizeof isas / sizeof *isas; k++) {
                    memset(got, 0x55, (B * yout + 16) * sizeof(dcz_q));
                    if (!dcz_qavgpool_isa(isas[k], g, cip, x, B, got)) continue;
                    abad += diff_q(k ? "qavgpool (AVX2)" : "qavgpool (AVX-512)", "", got, want, B * yout);
                    for (size_t i = 0; i < 16; i++) abad += got[B * yout + i] != (dcz_q)0x5555;
                    avariants++;
                }
                free(x); free(want); free(got);
            }
    CHECK(abad == 0, "dcz_qavgpool differs from the reference in %zu elements", abad);
    CHECK(avariants >= 5 * 4 || !dcz_isa_supported(DCZ_ISA_AVX2), "the vector average pools ran %zu times",
          avariants);
#ifdef DCZ_X86
    /* AVX2's variant runs where the CPU has it (on all but the geometry of stride 3) */
    if (dcz_isa_supported(DCZ_ISA_AVX2))
        CHECK(qvariants >= 2 * (sizeof pools / sizeof *pools - 1), "qmaxpool's variants ran %zu times", qvariants);
#endif
    CHECK(avg_bad == 0, "qavgpool misrounds %zu elements", avg_bad);
    /* global average on random planes */
    const uint32_t C = 5, P = 37;
    const size_t B = 2;
    dcz_q *x = alloc(B * C * P, sizeof(dcz_q)), y[10];
    fill_q(x, B * C * P, 32767);
    dcz_qglobal_avgpool_ref(C, P, x, B, y);
    size_t bad = 0;
    for (size_t p = 0; p < B * C; p++) {
        int64_t sum = 0;
        for (uint32_t i = 0; i < P; i++) sum += x[p * P + i];
        bad += !is_rounded_average(y[p], sum, P);
    }
    CHECK(bad == 0, "qglobal_avgpool misrounds %zu of %zu planes", bad, B * C);
    free(x);
}

/* The global average into another scale: each plane's sum times s_in /
 * (s_out plane), rounded, within the multiplier's precision of the real
 * product; also on a plane whose sum passes 2^31 and on scales that clamp. */
/* The integer shift form's requantization takes shifts of 62 at most (the
 * 64-bit products): any past that, in the first channel, the last, or one
 * past a multiple of 64, and it declines, the caller running the others */
static void test_qshift_requant_shifts(void)
{
    const uint32_t outs[] = { 1, 63, 64, 65, 130 };
    for (size_t k = 0; k < sizeof outs / sizeof *outs; k++) {
        const uint32_t n = outs[k];
        const dcz_conv_geom g = conv_geom(4, n, 6, 6, 3, 3, 1, 1, 1, 1);
        int32_t *mult = alloc(n, sizeof(int32_t));
        uint8_t *shift = alloc(n, 1);
        for (uint32_t c = 0; c < n; c++) {
            mult[c] = 3;
            shift[c] = (uint8_t)(c % 63);
        }
        shift[n / 2] = 62;
        const dcz_requant rq = { mult, shift, 127, NULL };
        const int runs = dcz_qshift_variant() != NULL;
        CHECK(dcz_qconv2d_shift_requant_runs(&g, NULL, &rq, 0) == runs, "%u channels, shifts up to 62", n);
        const uint32_t at[3] = { 0, n - 1, n > 64 ? 64 : n / 2 };
        for (int j = 0; j < 3; j++) {
            const uint8_t keep = shift[at[j]];
            shift[at[j]] = j == 2 ? 255 : 63;
            CHECK(dcz_qconv2d_shift_requant_runs(&g, NULL, &rq, 0) == 0, "%u channels, shift %u at %u", n,
                  shift[at[j]], at[j]);
            shift[at[j]] = keep;
        }
        free(mult);
        free(shift);
    }
}

static void test_qglobal_avgpool_rescale(void)
{
    const uint32_t planes[3] = { 37, 9, 70000 };
    size_t bad = 0, clamped = 0, total = 0;
    for (int t = 0; t < 30; t++) {
        const uint32_t C = 3, P = planes[t % 3];
        const size_t B = 2;
        const int32_t qmax = t & 1 ? 127 : 32767;
        /* every other plane near the top (t % 6 == 2) into a scale below
         * its average: that side clamps whatever the generator gives */
        const double s_in = 0.01 * (1 + frand() * frand());
        const double s_out = s_in * (t % 6 == 2 ? 0.05 + 0.5 * fabs(frand()) : 0.05 + 3 * fabs(frand()));
        const double M = s_in / (s_out * P);
        int32_t mult;
        uint8_t shift;
        REQUIRE(dcz_requant_params(M, &mult, &shift) == DCZ_OK, "params of %g", M);
        dcz_q *x = alloc(B * C * P, sizeof(dcz_q)), y[6];
        fill_q(x, B * C * P, qmax);
        if (t % 3 == 2)   /* a sum past 2^31: every element near the top */
            for (size_t i = 0; i < B * C * P; i++) x[i] = (dcz_q)(qmax - (int32_t)(rnd() % 4));
        dcz_qglobal_avgpool_rescale_ref(C, P, x, B, mult, shift, qmax, y);
        for (size_t p = 0; p < B * C; p++, total++) {
            int64_t sum = 0;
            for (uint32_t i = 0; i < P; i++) sum += x[p * P + i];
            /* the average rounded, then clamped: one past qmax by more
             * than a half rounds past it too */
            const double want = (double)sum * M, near = want > qmax ? qmax : want < -qmax ? -qmax : want;
            clamped += near != want;
            bad += fabs(y[p] - near) > 0.5 + 1e-6 * fabs(near);
        }
        free(x);
    }
    CHECK(bad == 0, "%zu of %zu rescaled averages off", bad, total);
    CHECK(clamped > 0 && clamped < total, "%zu of %zu clamped: the cases miss a side", clamped, total);
    /* the vector variant: the reference's values, on eight planes at a time
     * and the rest, planes within and past a vector of cells, shifts 0 to
     * 62, multipliers of either sign, inputs to both ends of the range */
    const uint32_t Cs[4] = { 3, 8, 13, 130 }, Ps[6] = { 1, 9, 16, 33, 49, 65536 };
    size_t vbad = 0, vruns = 0;
    for (int t = 0; t < 48; t++) {
        const uint32_t C = Cs[t % 4], P = Ps[t % 6];
        const size_t B = 1 + (size_t)(t % 2);
        const int32_t qmax = t % 3 ? 127 : 32767;
        const uint8_t shift = (uint8_t)(t % 8 == 0 ? 0 : t % 8 == 1 ? 62 : 1 + rnd() % 61);
        const int32_t mult = (int32_t)(rnd() >> 33) * (t % 5 == 0 ? -1 : 1);
        dcz_q *x = alloc(B * C * P, sizeof(dcz_q)), *want = alloc(B * C + 1, sizeof(dcz_q));
        dcz_q *got = alloc(B * C + 1, sizeof(dcz_q));
        fill_q(x, B * C * P, qmax);
        if (t % 7 == 3)   /* every cell at one end */
            for (size_t i = 0; i < B * C * P; i++) x[i] = (dcz_q)(t % 2 ? qmax : -qmax);
        dcz_qglobal_avgpool_rescale_ref(C, P, x, B, mult, shift, qmax, want);
        got[B * C] = 0x5A5A;
        if (dcz_qglobal_avgpool_rescale_isa(DCZ_ISA_AVX512, C, P, x, B, mult, shift, qmax, got)) {
            vbad += memcmp(got, want, B * C * sizeof(dcz_q)) != 0 || got[B * C] != 0x5A5A;
            vruns++;
        }
        free(x); free(want); free(got);
    }
    CHECK(vbad == 0, "%zu of %zu runs of the vector variant differ from the reference", vbad, vruns);
    CHECK(vruns > 0 || !dcz_isa_supported(DCZ_ISA_AVX512), "the vector variant never ran");
}

/* ---- sizes 0 ----------------------------------------------------------------- */

/* Nothing is written for an empty batch, matrix or plane: each kernel gets a
 * canary buffer and must leave it as it was. */
static void test_zero_sizes(void)
{
    int64_t canary[4] = { 11, 22, 33, 44 };
    dcz_q qcanary[4] = { 11, 22, 33, 44 };
    const dcz_q x[4] = { 1, 2, 3, 4 };
    const int64_t bias[4] = { 7, 8, 9, 10 };
    qmat m;
    make_qmat(&m, 3, 4, 1.0, 2, 127);
    dcz_qspmm_ref(&m.sp, bias, x, 0, canary);
    dcz_qspmm(&m.sp, bias, x, 0, canary);
    qmat m0;
    make_qmat(&m0, 0, 4, 1.0, 2, 127);
    dcz_qspmm_ref(&m0.sp, bias, x, 3, canary);
    dcz_qspmm(&m0.sp, bias, x, 3, canary);
    CHECK(canary[0] == 11 && canary[3] == 44, "qspmm wrote on batch 0 or rows 0");
    /* cols 0: every output is its bias */
    qmat mc;
    make_qmat(&mc, 2, 0, 1.0, 16, 127);
    int64_t y[4] = { -1, -1, -1, -1 };
    dcz_qspmm(&mc.sp, bias, x, 2, y);
    CHECK(y[0] == 7 && y[1] == 8 && y[2] == 7 && y[3] == 8, "cols 0: %lld %lld", (long long)y[0],
          (long long)y[1]);
    int64_t y2[4] = { -1, -1, -1, -1 };
    dcz_qspmm_ref(&mc.sp, NULL, x, 2, y2);
    CHECK(y2[0] == 0 && y2[3] == 0, "cols 0, no bias");
    free_qmat(&m); free_qmat(&m0); free_qmat(&mc);

    dcz_conv_geom g = conv_geom(1, 2, 2, 2, 1, 1, 1, 1, 0, 0);
    const int16_t w[2] = { 3, 4 };
    dcz_qconv2d_direct_ref(&g, w, bias, x, 0, canary);
    qmat mw;
    make_qmat(&mw, 2, 1, 1.0, 0, 127);
    dcz_qconv2d_sparse(&g, &mw.sp, bias, x, 0, canary);
    free_qmat(&mw);
    CHECK(canary[0] == 11 && canary[3] == 44, "convolution wrote on batch 0");

    const int32_t mult[2] = { 1, 1 };
    const uint8_t shift[2] = { 0, 0 };
    const dcz_requant rq = { mult, shift, 127, NULL };
    dcz_requant_ref(&rq, canary, 0, 2, 2, qcanary);
    dcz_requant_ref(&rq, canary, 2, 0, 2, qcanary);
    dcz_requant_ref(&rq, canary, 2, 2, 0, qcanary);
    dcz_qrelu_ref(qcanary, 0);
    g = conv_geom(1, 1, 2, 2, 2, 2, 1, 1, 0, 0);
    dcz_qmaxpool_ref(&g, x, 0, qcanary);
    dcz_qavgpool_ref(&g, 1, x, 0, qcanary);
    dcz_qglobal_avgpool_ref(2, 2, x, 0, qcanary);
    dcz_qglobal_avgpool_ref(0, 2, x, 2, qcanary);
    CHECK(qcanary[0] == 11 && qcanary[1] == 22 && qcanary[2] == 33 && qcanary[3] == 44,
          "requant, relu or a pool wrote on an empty size");
    /* an empty plane averages to 0 rather than dividing by zero */
    dcz_q gy[2] = { 5, 5 };
    dcz_qglobal_avgpool_ref(2, 0, x, 1, gy);
    CHECK(gy[0] == 0 && gy[1] == 0, "global average of empty planes: %d %d", gy[0], gy[1]);
}

/* RUN with the mismatch budget reset */
#define RUNQ(fn) do { shown = 0; RUN(fn); } while (0)

int main(void)
{
    RUNQ(test_qspmm_codebook_2);
    RUNQ(test_qspmm_codebook_16);
    RUNQ(test_qspmm_codebook_256);
    RUNQ(test_qspmm_values);
    RUNQ(test_qspmm_fillers_by_hand);
    RUNQ(test_qconv_ref_by_hand);
    RUNQ(test_qconv_f32_rows);
    RUNQ(test_qconv_grid);
    RUNQ(test_round_shift);
    RUNQ(test_requant_by_hand);
    RUNQ(test_requant_pre);
    RUNQ(test_dequantize);
    RUNQ(test_requant_layout);
    RUNQ(test_requant_exact);
    RUNQ(test_requant8);
    RUNQ(test_requant8_f32);
    RUNQ(test_quantize);
    RUNQ(test_qrelu);
    RUNQ(test_qadd);
    RUNQ(test_qconcat);
    RUNQ(test_qmul);
    RUNQ(test_qclamp);
    RUNQ(test_qtable);
    RUNQ(test_qpools_by_hand);
    RUNQ(test_qpools_random);
    RUNQ(test_qshift_requant_shifts);
    RUNQ(test_qglobal_avgpool_rescale);
    RUNQ(test_zero_sizes);
    return check_summary();
}
