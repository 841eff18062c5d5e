/* test_simd.c: the optimized sparse kernels (runtime/cpu/f32/kernels_spmv.c,
 * kernels_spmm.c, kernels_lanes.c, kernels_lanes8.c, and the element-wise
 * kernels_elem.c) against the references, bit for bit.
 *
 * Every spmm variant this machine runs is called directly (x86: __avx2
 * where the CPU has it; aarch64: __neon), and the dispatching dcz_spmm
 * too, on whole matrices and on row ranges, and dcz_spmm_pool on whole
 * matrices over a pool of GRID_THREADS threads; the column-form kernel
 * dcz_spmv_csc with the rows cut into 1, 2 and 3 blocks, and the
 * dispatching dcz_spmv; each lane form's kernels (the 16-row form's
 * dcz_spmv_lanes_ref and __avx512 where the CPU has AVX-512, the 8-row
 * form's dcz_spmv_lanes8_ref and __avx2 where it has AVX2 and FMA) on
 * whole matrices and in parts. The lane forms fuse their products into the
 * sums, so a form's kernels must give the bits of its own reference, and
 * that reference be within rounding of dcz_spmv_ref (past_rounding states
 * the bound).
 * Random matrices in the execution form (stored
 * weights and biases never zero) over a grid: rows 0, 1, 7, 8, 9, 15, 16,
 * 17, 31, 33 and columns 0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 300, 1000 (plus
 * 300 x 300 and 64 x 4000), densities 0, 0.01 (fillers on wide rows), 0.5
 * and 1, codebooks of 2, 16, 32 and 256 entries (the column kernel's
 * product table is used or not) and fp32 values, batch 0, 1, 2, 7, 8, 9,
 * 16, 17, 64, 65 (both halves of the 16-sample tile), with and without
 * bias, inputs never zero, and (batch 1 and 17) half zeros, the columns
 * batch 1 skips; row ranges at batch 9 and 17; batch 64 and 65 on the
 * matrices up to 20000 weights, and on larger ones under an emulator
 * (check_emulated) batch 1 and 17 alone (their other batches took 70% of
 * the grid's three minutes under qemu-user). Every
 * output must equal the reference's bits (the kernels sum in its order),
 * and nothing past y or outside the asked rows is written. Declines: spmm
 * without scratch. The split over threads run.c makes (chunks of the
 * batch-1 kernels; dcz_spmm_pool above), run by libdcz's pool of 1 to 4
 * threads, gives the same bits. dcz_spmv_pick at its boundary: the lanes
 * once more than its count of nonzero inputs is passed (NaN counting, -0
 * not), the columns at that count.
 *
 * Dense fp32 layers (kernels_dense.c): every variant this machine runs
 * (dcz_dense_f32_isa: __avx2 with FMA, __neon) and the dispatching
 * dcz_dense_f32 over rows 0, 1, 3, 4, 5, 7, 8, 9, 33 and 300 and columns
 * 0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 300, 784 and 1000 (every tail of the
 * 16- and 8-column blocks), batch 1, 2, 5 and 64, with and without bias,
 * against a product in double within 1e-6 of each output's |w x| sum;
 * each sample of a batch bit for bit equal to that sample alone (batch 1),
 * and nothing written past y.
 *
 * The dense product (kernels_gemm.c): every variant this machine runs
 * (dcz_gemm_f32_isa: __avx512, __avx2, __neon) and dcz_gemm_f32 against
 * dcz_gemm_f32_ref bit for bit, and the reference within 1e-6 of each
 * output's |a b| sum of a product in double, over rows 1 to 7, 12 and 13
 * (every tail of the 6-row tiles, a one-row C), columns 1, 5, 15, 16, 17,
 * 63, 64, 65, 129 and 300 (tails of every vector width and of the 64- and
 * 128-column panels), k 0, 1, 9 and 300, a row stride past k and B rows
 * padded with a sentinel, and B past 2 MB (bands of its rows: 1, 3, 7
 * and 13 rows of C), with a bias per row, per column and none; no
 * element of C's row padding written. dcz_im2col_k_ref and dcz_im2col_k
 * (by planes where stride 1 keeps the width) over the convolution
 * geometries against dcz_im2col transposed, their padding columns 0. ReLU:
 * every variant against dcz_relu_ref bit for bit, -0, NaN and infinities
 * among the inputs, in place and not.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/dense.h"
#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/lanes.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/model.h"
#include "tests/check.h"
#define TEST_RNG_SEED 0x5eed
#include "tests/unit/test_util.h"
#include "tests/unit/sparse_mat.h"
#include "tests/unit/conv_geom.h"

/* (Re)builds m's column form in cblocks blocks. */
static void make_columns(mat *m, uint32_t cblocks)
{
    free(m->cols_mem);
    const uint64_t bytes = dcz_sparse_columns_bytes(m->sp.rows, m->sp.cols, m->nnz,
                                                    m->val ? 0 : m->sp.k, cblocks);
    m->cols_mem = malloc(bytes ? bytes : 1);
    dcz_sparse_build_columns(&m->sp, cblocks, m->cols_mem);
}

/* The two lane forms of codebook matrices: 16 rows a group (codebooks to
 * 32; the vector kernel needs AVX-512) and 8 rows (any codebook; AVX2 and
 * FMA). */
typedef struct lane_form {
    const char *name, *vec_name;
    uint32_t rows;
} lane_form;
static const lane_form lane_forms[] = { { "lanes", "lanes avx512", DCZ_LANE_ROWS },
                                        { "lanes8", "lanes8 avx2", DCZ_LANE8_ROWS } };

/* bytes of f's form of m (its most), 0 where m does not qualify */
static uint64_t lane_bytes(const lane_form *f, const mat *m)
{
    return m->idx ? dcz_lanes_bytes(f->rows, m->sp.rows, m->sp.cols, m->nnz, m->sp.k) : 0;
}

/* whether this CPU runs f's vector kernel */
static int lane_vec(const lane_form *f)
{
    return f->rows == DCZ_LANE8_ROWS ? dcz_lanes8_variant() != NULL : dcz_isa_supported(DCZ_ISA_AVX512);
}

/* f's vector kernel from the panels xin (only where lane_vec) */
static void lane_kernel(const lane_form *f, const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bv,
                        const dcz_act *act, const float *xin, float *y)
{
#if DCZ_BUILD_X86
    if (f->rows == DCZ_LANE8_ROWS) dcz_spmv_lanes8__avx2(s, g0, g1, bv, act, xin, y);
    else dcz_spmv_lanes__avx512(s, g0, g1, bv, act, xin, y);
#else
    (void)f; (void)s; (void)g0; (void)g1; (void)bv; (void)act; (void)xin; (void)y;
#endif
}

/* Builds m's lane form f where the matrix qualifies; returns whether it
 * has one. */
static int make_lanes(mat *m, const lane_form *f)
{
    free(m->lanes_mem);
    m->lanes_mem = NULL;
    const uint64_t bytes = lane_bytes(f, m);
    m->sp.lgroups = 0;
    if (!bytes) return 0;
    m->lanes_mem = malloc(bytes);
    dcz_lanes_build(&m->sp, f->rows, m->nnz, m->lanes_mem);
    return m->sp.lgroups != 0;
}

/* The spmm variants, on rows r0 .. r1 - 1. */
typedef int (*spmm_fn)(const dcz_sparse *, uint32_t, uint32_t, const float *, const float *,
                       size_t, float *, float *);
typedef struct family {
    const char *name;
    dcz_isa isa;
    spmm_fn spmm;
} family;

static int spmm_dispatch(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                         const float *x, size_t batch, float *y, float *scratch)
{
    if (r0 == 0 && r1 == s->rows) dcz_spmm(s, bias, x, batch, y, scratch);
    else dcz_spmm_rows(s, r0, r1, bias, x, batch, y, scratch);
    return 1;
}

/* the pool the grid runs dcz_spmm_pool on, and the scratch parts it takes */
#define GRID_THREADS 3
static dcz_pool *grid_pool;

/* dcz_spmm_pool on whole matrices; it runs no row range, which falls to
 * dcz_spmm_rows */
static int spmm_pooled(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                       const float *x, size_t batch, float *y, float *scratch)
{
    if (r0 != 0 || r1 != s->rows) return spmm_dispatch(s, r0, r1, bias, x, batch, y, scratch);
    dcz_spmm_pool(grid_pool, s, bias, x, batch, y, scratch, dcz_spmm_scratch_floats(s->rows, s->cols));
    return 1;
}

static const family families[] = {
    { "dispatch", DCZ_ISA_REF, spmm_dispatch },
    { "pool", DCZ_ISA_REF, spmm_pooled },
#if DCZ_BUILD_X86
    { "avx2", DCZ_ISA_AVX2, dcz_spmm__avx2 },
#elif DCZ_BUILD_NEON
    { "neon", DCZ_ISA_NEON, dcz_spmm__neon },
#endif
};
#define NFAM (sizeof families / sizeof *families)

#define GUARD 16
static const float canary = 12345.0f;

typedef struct tally {
    size_t cases[NFAM], outputs[NFAM], csc, skipped, fillers, wide[2];
    /* per lane form: built (codebooks to 16, to 32, to 256), vector kernel
     * runs, over the step bound, dcz_spmv ran it */
    size_t lanes[2][3], lanes_vec[2], lanes_over[2], lanes_picked[2];
    size_t act_changed;                        /* outputs a fused activation changed */
} tally;

/* Outputs of got (batch, rows) in rows r0 .. r1 - 1 whose bits differ from
 * ref's, plus every other float of got (up to batch * rows + GUARD) that is
 * no longer the canary. */
static size_t differences(const char *what, const mat *m, size_t batch, uint32_t r0, uint32_t r1,
                          const float *got, const float *ref)
{
    const uint32_t rows = m->sp.rows;
    size_t bad = 0;
    for (size_t i = 0; i < batch * rows + GUARD; i++) {
        const uint32_t r = rows ? (uint32_t)(i % rows) : 0;
        const int inside = i < batch * rows && r >= r0 && r < r1;
        const int ok = inside ? memcmp(&got[i], &ref[i], sizeof(float)) == 0 : got[i] == canary;
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s %ux%u k %u batch %zu rows %u..%u: y[%zu] = %.9g, expected %.9g\n",
                    what, rows, m->sp.cols, m->sp.k, batch, r0, r1, i, got[i],
                    inside ? ref[i] : canary);
    }
    return bad;
}

static void check_spmm(const mat *m, const float *x, const float *bv, size_t batch,
                       const float *ref, float *y, float *scratch, tally *t)
{
    const uint32_t rows = m->sp.rows;
    /* whole, and (at two batches) the middle third of the rows */
    const uint32_t ranges[2][2] = { { 0, rows }, { rows / 3, rows - rows / 3 } };
    const int nranges = batch == 9 || batch == 17 ? 2 : 1;
    for (size_t f = 0; f < NFAM; f++) {
        const family *fa = &families[f];
        if (!dcz_isa_supported(fa->isa)) continue;
        for (int ri = 0; ri < nranges; ri++) {
            for (size_t i = 0; i < batch * rows + GUARD; i++) y[i] = canary;
            const uint32_t r0 = ranges[ri][0], r1 = ranges[ri][1];
            CHECK(fa->spmm(&m->sp, r0, r1, bv, x, batch, y, scratch), "%s declined", fa->name);
            CHECK(differences(fa->name, m, batch, r0, r1, y, ref) == 0,
                  "%s spmm %ux%u k %u batch %zu rows %u..%u", fa->name, rows, m->sp.cols,
                  m->sp.k, batch, r0, r1);
        }
        t->cases[f]++;
        t->outputs[f] += batch * rows;
    }
}

/* Rows (of sample 0) where lanes, the lane form's fused sums, differ from
 * ref, dcz_spmv_ref's, by more than the two roundings allow: each is
 * within (n + 1) u of the exact sum per unit of |bias| + sum |w x| (n
 * entries in the row, u = 2^-24), so the two within twice that. */
static size_t past_rounding(const mat *m, const float *x, const float *bv, const float *lanes,
                            const float *ref)
{
    size_t bad = 0;
    for (uint32_t r = 0; r < m->sp.rows; r++) {
        double mag = bv ? fabs(bv[r]) : 0.0;
        uint32_t n = 0, col = 0;
        for (uint32_t e = m->sp.row_ptr[r]; e < m->sp.row_ptr[r + 1]; e++) {
            col += m->sp.step[e];
            if (m->sp.step[e] == DCZ_STEP_FILLER) continue;
            mag += fabs((double)m->cb[m->idx[e]] * x[col]);
            n++;
        }
        const double bound = 2.0 * (n + 1) * 0x1p-24 * mag + 0x1p-126;
        if (fabs((double)lanes[r] - ref[r]) > bound && bad++ < 3)
            fprintf(stderr, "  lanes %ux%u k %u: y[%u] = %.9g, reference %.9g, bound %.3g\n",
                    m->sp.rows, m->sp.cols, m->sp.k, r, lanes[r], ref[r], bound);
    }
    return bad;
}

/* A fused activation (ReLU, a CLIP that cuts both ends, SiLU, HardSwish) in each batch-1
 * kernel of m's parts: the rows' bits (lref by lanes, ref otherwise), then
 * the activation's (dcz_act_one). */
static void check_lanes_act(const mat *m, const lane_form *f, const float *x, const float *bv,
                            const float *lref, const float *ref, const float *xin, float *y, tally *t)
{
    static const dcz_act acts[] = { { DCZ_OP_RELU, 0.0f, 0.0f }, { DCZ_OP_CLIP, -0.5f, 0.75f },
                                    { DCZ_OP_SILU, 0.0f, 0.0f }, { DCZ_OP_HARD_SWISH, 0.0f, 0.0f } };
    const uint32_t rows = m->sp.rows;
    const int vec = lane_vec(f);
    float *want = malloc(((size_t)rows + GUARD) * sizeof(float));
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        /* 0 the form's reference, 1 spmv_part lanes, 2 its vector kernel, 3 spmv_part columns,
         * 4 spmv_part rows */
        for (int kind = 0; kind < 5; kind++) {
            if ((kind == 2 && !vec) || (kind == 3 && !m->sp.col_ptr)) continue;
            const float *rows_bits = kind <= 2 ? lref : ref;
            for (uint32_t i = 0; i < rows; i++) {
                want[i] = dcz_act_one(&acts[a], rows_bits[i]);
                t->act_changed += want[i] != rows_bits[i];
            }
            const uint32_t parts = kind == 3 ? m->sp.cblocks : 3;
            for (size_t i = 0; i < rows + GUARD; i++) y[i] = canary;
            for (uint32_t p = 0; p < parts; p++) {
                uint32_t g0, g1;
                dcz_part_range(m->sp.lgroups, p, parts, &g0, &g1);
                if (kind == 0) dcz_spmv_lanes_ref(&m->sp, g0, g1, bv, &acts[a], x, y);
                else if (kind == 1) dcz_spmv_part(&m->sp, DCZ_SPMV_LANES, p, parts, bv, &acts[a], xin, y);
                else if (kind == 2) lane_kernel(f, &m->sp, g0, g1, bv, &acts[a], xin, y);
                else dcz_spmv_part(&m->sp, kind == 3 ? DCZ_SPMV_COLUMNS : DCZ_SPMV_REF, p, parts, bv, &acts[a],
                                   x, y);
            }
            const char *names[] = { "lanes_ref", "spmv_part lanes", f->vec_name, "spmv_part columns",
                                    "spmv_part rows" };
            CHECK(differences(names[kind], m, 1, 0, rows, y, want) == 0, "%s: %s with %s %ux%u k %u", f->name,
                  names[kind], dcz_op_name(acts[a].op), rows, m->sp.cols, m->sp.k);
        }
    }
    free(want);
}

/* Lane form f of m (index fi of lane_forms), where it qualifies: the
 * scalar kernel within rounding of the reference; the scalar kernel in
 * three parts, dcz_spmv_part by lanes, and (where this CPU runs it) the
 * vector kernel from the input's panels on all groups and on each of three
 * parts, against the scalar kernel's bits; dcz_spmv with the lane form
 * beside the column form gives the bits of the kernel dcz_spmv_pick names. */
static void check_lanes(mat *m, size_t fi, const float *x, const float *bv, const float *ref, float *y,
                        tally *t)
{
    const lane_form *f = &lane_forms[fi];
    const uint32_t rows = m->sp.rows;
    const int eligible = lane_bytes(f, m) != 0;
    const int built = make_lanes(m, f);
    if (eligible && !built) t->lanes_over[fi]++;
    if (!built) return;
    t->lanes[fi][(m->sp.k > 16) + (m->sp.k > 32)]++;
    const int eight = f->rows == DCZ_LANE8_ROWS;
    CHECK(m->sp.lrows == f->rows && m->sp.lgroups == (rows + f->rows - 1) / f->rows, "%s groups", f->name);
    CHECK(dcz_lanes_steps(&m->sp) <= (eight ? DCZ_LANE8_STEPS_MAX(m->nnz, rows) : DCZ_LANE_STEPS_MAX(m->nnz, rows)),
          "%s steps past the bound", f->name);
    float *lref = malloc(((size_t)rows + GUARD) * sizeof(float));
    float *scratch = malloc(dcz_lanes_scratch_floats(f->rows, m->sp.cols, m->sp.k) * sizeof(float));
    for (size_t i = 0; i < rows + GUARD; i++) lref[i] = canary;
    dcz_spmv_lanes_ref(&m->sp, 0, m->sp.lgroups, bv, NULL, x, lref);
    CHECK(differences("lanes_ref (rows written)", m, 1, 0, rows, lref, lref) == 0, "%s guard", f->name);
    CHECK(past_rounding(m, x, bv, lref, ref) == 0, "%s ref %ux%u k %u vs spmv_ref", f->name, rows,
          m->sp.cols, m->sp.k);
    const int vec = lane_vec(f);
    const float *xin = dcz_spmv_input(&m->sp, DCZ_SPMV_LANES, x, scratch);
    CHECK(vec ? xin != x : xin == x, "%s input: panels exactly where the CPU runs its kernel", f->name);
    for (int kind = 0; kind < 2 + vec; kind++) {
        for (uint32_t parts = 1; parts <= 3; parts += 2) {
            if (kind == 0 && parts == 1) continue; /* lref itself */
            for (size_t i = 0; i < rows + GUARD; i++) y[i] = canary;
            for (uint32_t p = 0; p < parts; p++) {
                uint32_t g0, g1;
                dcz_part_range(m->sp.lgroups, p, parts, &g0, &g1);
                if (kind == 0) dcz_spmv_lanes_ref(&m->sp, g0, g1, bv, NULL, x, y);
                else if (kind == 1) dcz_spmv_part(&m->sp, DCZ_SPMV_LANES, p, parts, bv, NULL, xin, y);
                else lane_kernel(f, &m->sp, g0, g1, bv, NULL, xin, y);
            }
            const char *names[] = { "lanes_ref", "spmv_part lanes", f->vec_name };
            CHECK(differences(names[kind], m, 1, 0, rows, y, lref) == 0, "%s: %s %ux%u k %u in %u parts",
                  f->name, names[kind], rows, m->sp.cols, m->sp.k, parts);
        }
    }
    t->lanes_vec[fi] += vec;
    check_lanes_act(m, f, x, bv, lref, ref, xin, y, t);
    for (size_t i = 0; i < rows + GUARD; i++) y[i] = canary;
    dcz_spmv(&m->sp, bv, x, y, scratch);
    const int lanes = dcz_spmv_pick(&m->sp, x) == DCZ_SPMV_LANES;
    t->lanes_picked[fi] += lanes;
    CHECK(differences("spmv (lanes built)", m, 1, 0, rows, y, lanes ? lref : ref) == 0,
          "spmv %ux%u k %u (%s, %s)", rows, m->sp.cols, m->sp.k, f->name, lanes ? "lanes" : "columns");
    /* without scratch for the panels: the column form */
    for (size_t i = 0; i < rows + GUARD; i++) y[i] = canary;
    dcz_spmv(&m->sp, bv, x, y, NULL);
    CHECK(differences("spmv (lanes built, no scratch)", m, 1, 0, rows, y, ref) == 0,
          "spmv %ux%u k %u without scratch", rows, m->sp.cols, m->sp.k);
    free(lref);
    free(scratch);
    m->sp.lgroups = 0; /* the next check of this matrix rebuilds it */
}

/* dcz_spmv_csc block by block, and dcz_spmv, on sample 0 of x */
static void check_csc(mat *m, const float *x, const float *bv, const float *ref, float *y,
                      tally *t)
{
    const uint32_t rows = m->sp.rows;
    for (uint32_t nb = 1; nb <= 3; nb++) {
        make_columns(m, nb);
        for (uint32_t b = 0; b < nb; b++) {
            uint32_t r0, r1;
            dcz_sparse_block_rows(&m->sp, b, &r0, &r1);
            for (size_t i = 0; i < rows + GUARD; i++) y[i] = canary;
            dcz_spmv_csc(&m->sp, b, bv, x, y);
            CHECK(differences("csc", m, 1, r0, r1, y, ref) == 0, "csc %ux%u k %u block %u of %u",
                  rows, m->sp.cols, m->sp.k, b, nb);
        }
        for (size_t i = 0; i < rows + GUARD; i++) y[i] = canary;
        dcz_spmv(&m->sp, bv, x, y, NULL);
        CHECK(differences("spmv", m, 1, 0, rows, y, ref) == 0, "spmv %ux%u k %u blocks %u", rows,
              m->sp.cols, m->sp.k, nb);
        t->csc++;
        t->wide[m->sp.cent32 != NULL]++;
    }
    for (size_t fi = 0; fi < sizeof lane_forms / sizeof *lane_forms; fi++) check_lanes(m, fi, x, bv, ref, y, t);
}

static void check_case(mat *m, tally *t)
{
    static const size_t batches[] = { 0, 1, 2, 7, 8, 9, 16, 17, 64, 65 };
    const size_t maxb = 65;
    const uint32_t rows = m->sp.rows, cols = m->sp.cols;
    float *x = malloc((maxb * cols + 1) * sizeof(float)), *bias = malloc((rows + 1) * sizeof(float));
    float *ref = malloc((maxb * rows + 1) * sizeof(float));
    float *y = malloc((maxb * rows + GUARD) * sizeof(float));
    float *scratch = malloc((dcz_spmm_scratch_floats(rows, cols) * GRID_THREADS + 1) * sizeof(float));
    for (uint32_t i = 0; i < rows; i++) bias[i] = nonzero();
    t->fillers += m->fillers;
    for (int zeros = 0; zeros < 2; zeros++) {
        /* inputs never zero, or half of them zero as after a ReLU */
        for (size_t i = 0; i < maxb * cols; i++) x[i] = zeros && rnd() % 2 ? 0.0f : nonzero();
        for (size_t i = 0; zeros && i < cols; i++) t->skipped += x[i] == 0.0f;
        for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++)
            for (int hb = 0; hb < 2; hb++) {
                const size_t batch = batches[bi];
                const float *bv = hb ? bias : NULL;
                if (zeros && batch != 1 && batch != 17) continue;
                if ((size_t)rows * cols > 20000 && (batch > 17 || (check_emulated() && batch != 1 && batch != 17)))
                    continue;
                dcz_spmm_ref(&m->sp, bv, x, batch, ref);
                if (batch == 1) {
                    float *r1 = malloc((rows + 1) * sizeof(float));
                    dcz_spmv_ref(&m->sp, bv, x, r1);
                    CHECK(memcmp(r1, ref, rows * sizeof(float)) == 0,
                          "spmv_ref != spmm_ref %ux%u", rows, cols);
                    free(r1);
                    check_csc(m, x, bv, ref, y, t);
                }
                check_spmm(m, x, bv, batch, ref, y, scratch, t);
            }
    }
    free(x); free(bias); free(ref); free(y); free(scratch);
}

static void test_grid(void)
{
    REQUIRE(dcz_pool_start(GRID_THREADS, &grid_pool) == DCZ_OK, "pool of %d", GRID_THREADS);
    static const uint32_t rows[] = { 0, 1, 7, 8, 9, 15, 16, 17, 31, 33 };
    static const uint32_t cols[] = { 0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 300, 1000 };
    static const uint32_t extra[][2] = { { 300, 300 }, { 64, 4000 } };
    static const double dens[] = { 0.0, 0.01, 0.5, 1.0 };
    static const uint32_t ks[] = { 2, 16, 32, 256, 0 };
    tally t;
    memset(&t, 0, sizeof t);
    const size_t nshape = sizeof rows / sizeof *rows * (sizeof cols / sizeof *cols) + 2;
    for (size_t si = 0; si < nshape; si++) {
        const size_t nc = sizeof cols / sizeof *cols, base = sizeof rows / sizeof *rows * nc;
        const uint32_t r = si < base ? rows[si / nc] : extra[si - base][0];
        const uint32_t c = si < base ? cols[si % nc] : extra[si - base][1];
        for (size_t di = 0; di < sizeof dens / sizeof *dens; di++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                mat m;
                REQUIRE(make_mat(&m, r, c, dens[di], ks[ki]), "build %ux%u", r, c);
                check_case(&m, &t);
                free_mat(&m);
            }
    }
    if (check_emulated())
        printf("     SKIP batches but 1 and 17 of the matrices past 20000 weights: under an emulator\n");
    for (size_t f = 0; f < NFAM; f++) {
        if (dcz_isa_supported(families[f].isa))
            printf("     %-8s %zu cases, %zu outputs\n", families[f].name, t.cases[f], t.outputs[f]);
        else
            printf("     %-8s SKIP: this CPU lacks it\n", families[f].name);
    }
    printf("     csc      %zu cases (%zu with 16-bit entries, %zu with 32), %zu zero inputs skipped\n",
           t.csc, t.wide[0], t.wide[1], t.skipped);
    for (size_t fi = 0; fi < 2; fi++) {
        const lane_form *f = &lane_forms[fi];
        printf("     %-8s %zu cases (%zu with codebooks to 16, %zu to 32, %zu to 256), %zu over the "
               "step bound, %zu picked by dcz_spmv; %s: %s\n", f->name,
               t.lanes[fi][0] + t.lanes[fi][1] + t.lanes[fi][2], t.lanes[fi][0], t.lanes[fi][1], t.lanes[fi][2],
               t.lanes_over[fi], t.lanes_picked[fi], f->vec_name,
               t.lanes_vec[fi] ? "checked" : "SKIP: this CPU lacks it");
        if (lane_vec(f)) CHECK(t.lanes_picked[fi] > 50, "dcz_spmv picks %s", f->name);
        CHECK(t.lanes[fi][0] > 100 && t.lanes[fi][1] > 100, "%s of both codebook sizes", f->name);
        CHECK(t.lanes_over[fi] > 10, "%s: matrices past the step bound", f->name);
    }
    CHECK(t.lanes[1][2] > 100, "lanes8 of codebooks past 32 values");
    printf("     fused    %zu outputs changed by a ReLU or CLIP in the batch-1 kernels\n", t.act_changed);
    CHECK(t.act_changed > 1000, "fused activations that change outputs");
    CHECK(t.wide[0] > 100 && t.wide[1] > 10, "entries of both widths");
    CHECK(t.fillers > 100, "only %zu fillers in the grid", t.fillers);
    CHECK(t.cases[0] > 5000, "only %zu cases", t.cases[0]);
    CHECK(t.skipped > 1000, "only %zu zero inputs", t.skipped);
    CHECK(t.cases[1] == t.cases[0], "dcz_spmm_pool on every case");
    dcz_pool_stop(grid_pool);
}

/* dcz_spmv_pick at its boundary: with each lane form beside the column
 * form, the lanes once more than `need` inputs are nonzero (NaN counts, -0
 * does not, as with x != 0), the columns at `need` or fewer; the count in
 * vectors of 64 or 32 and a tail (1000 inputs), the deciding input in the
 * tail and in a whole vector. Where this CPU does not run the form's
 * kernel, always the columns. */
static void test_spmv_pick(void)
{
    for (size_t fi = 0; fi < sizeof lane_forms / sizeof *lane_forms; fi++) {
    const lane_form *f = &lane_forms[fi];
    mat m;
    REQUIRE(make_mat(&m, 300, 1000, 0.08, 16), "build");
    make_columns(&m, 1);
    REQUIRE(make_lanes(&m, f), "%s", f->name);
    const uint64_t nnz = m.sp.col_ptr[m.sp.cols], steps = dcz_lanes_steps(&m.sp);
    const uint64_t need = f->rows == DCZ_LANE8_ROWS ? steps * DCZ_LANE8_STEP_EIGHTHS * m.sp.cols / (8 * nnz)
                                                    : steps * DCZ_LANE_STEP_ENTRIES * m.sp.cols / nnz;
    REQUIRE(need + 1 < 960, "need %llu", (unsigned long long)need);
    float x[1000];
    const int vec = lane_vec(f);
    for (int where = 0; where < 2; where++) {
        /* need nonzeros (every seventh NaN) over the first 960 inputs but
         * one, -0 and 0 elsewhere; then one more nonzero, in the tail (past
         * 960) or in the vectors */
        for (uint32_t i = 0; i < 1000; i++) x[i] = i % 2 ? -0.0f : 0.0f;
        uint32_t placed = 0;
        for (uint32_t i = 0; placed < need; i = (i + 13) % 959)
            if (x[i] == 0.0f) x[i] = placed++ % 7 ? nonzero() : NAN;
        CHECK(dcz_spmv_pick(&m.sp, x) == DCZ_SPMV_COLUMNS, "%llu nonzero inputs of %llu: the columns",
              (unsigned long long)need, (unsigned long long)need);
        x[where ? 999 : 959] = NAN;
        CHECK(dcz_spmv_pick(&m.sp, x) == (vec ? DCZ_SPMV_LANES : DCZ_SPMV_COLUMNS),
              "%s: %llu nonzero inputs of %llu (the last at %u): %s", f->name, (unsigned long long)need + 1,
              (unsigned long long)need, where ? 999 : 959, vec ? "the lanes" : "the columns");
    }
    free_mat(&m);
    }
}

/* A matrix past the column form's 65535 rows gets none, and dcz_spmv runs
 * the reference; variants decline spmm without scratch, writing nothing,
 * and dcz_spmm then runs the reference. */
static void test_declines(void)
{
    CHECK(dcz_sparse_columns_bytes(65536, 10, 5, 0, 1) == 0, "no column form past 65535 rows");
    CHECK(dcz_sparse_columns_bytes(65535, 10, 5, 0, 1) == 11 * 4 + 5 * (2 + 4),
          "65535 rows: 16-bit entries and values");
    CHECK(dcz_sparse_columns_bytes(4096, 10, 5, 16, 2) == 2 * 11 * 4 + 5 * 2,
          "4096 rows, 16 codes: 16-bit entries");
    CHECK(dcz_sparse_columns_bytes(4097, 10, 5, 16, 1) == 11 * 4 + 5 * 4,
          "4097 rows, 16 codes: 32-bit entries");
    mat m;
    REQUIRE(make_mat(&m, 9, 40, 0.5, 16), "build");
    float x[40], y[9], yr[9];
    for (int i = 0; i < 40; i++) x[i] = nonzero();
    dcz_spmv(&m.sp, NULL, x, y, NULL);
    dcz_spmv_ref(&m.sp, NULL, x, yr);
    CHECK(memcmp(y, yr, sizeof y) == 0, "dcz_spmv without a column form is the reference");
    for (size_t f = 0; f < NFAM; f++) {
        if (families[f].isa == DCZ_ISA_REF || !dcz_isa_supported(families[f].isa)) continue;
        for (int i = 0; i < 9; i++) y[i] = canary;
        CHECK(families[f].spmm(&m.sp, 0, 9, NULL, x, 1, y, NULL) == 0 && y[0] == canary,
              "%s spmm without scratch", families[f].name);
    }
    dcz_spmm(&m.sp, NULL, x, 1, y, NULL);
    dcz_spmm_ref(&m.sp, NULL, x, 1, yr);
    CHECK(memcmp(y, yr, sizeof y) == 0, "dcz_spmm without scratch is the reference");
    free_mat(&m);
}

/* A dense convolution by patches with its output channels split over a
 * pool of 1 to 4 threads (dcz_conv2d_dense_im2col_pool, as run.c splits
 * it), odd channel counts, a pointwise one reading its input in place, with
 * a ReLU, a SiLU and a HardSwish taken as it stores: the bits of one call. */
static void test_conv_threads(void)
{
    const dcz_conv_geom geoms[] = { conv_geom(5, 7, 11, 13, 3, 3, 1, 1, 1, 1), conv_geom(6, 9, 8, 8, 1, 1, 1, 1, 0, 0),
                                    conv_geom(3, 5, 12, 9, 5, 5, 2, 2, 2, 2) };
    const dcz_act acts[] = { { DCZ_OP_RELU, 0.0f, 0.0f }, { DCZ_OP_SILU, 0.0f, 0.0f },
                             { DCZ_OP_HARD_SWISH, 0.0f, 0.0f } };
    size_t runs = 0;
    for (uint32_t threads = 1; threads <= 4; threads++) {
        dcz_pool *pool = NULL;
        if (threads > 1) REQUIRE(dcz_pool_start(threads, &pool) == DCZ_OK, "pool of %u", threads);
        for (size_t gi = 0; gi < sizeof geoms / sizeof *geoms; gi++) {
            const dcz_conv_geom *g = &geoms[gi];
            const size_t B = 2, xin = (size_t)g->in_c * g->in_h * g->in_w, yout = (size_t)g->out_c * g->out_h * g->out_w;
            const size_t nw = (size_t)g->out_c * g->in_c * g->kh * g->kw;
            float *x = malloc(B * xin * 4), *w = malloc(nw * 4), *bias = malloc(g->out_c * 4);
            float *want = malloc(B * yout * 4), *y = malloc(B * yout * 4);
            float *scratch = malloc((dcz_conv2d_im2col_floats(g) + 1) * 4);
            REQUIRE(x && w && bias && want && y && scratch, "out of memory");
            for (size_t i = 0; i < B * xin; i++) x[i] = nonzero();
            for (size_t i = 0; i < nw; i++) w[i] = nonzero();
            for (uint32_t i = 0; i < g->out_c; i++) bias[i] = nonzero();
            for (size_t a = 0; a < 3; a++) {
                dcz_conv2d_dense_im2col_act(g, w, bias, x, B, 0, &acts[a], scratch, want);
                memset(y, 0xFF, B * yout * 4);
                dcz_conv2d_dense_im2col_pool(pool, g, w, bias, x, B, 0, &acts[a], scratch, y);
                CHECK(memcmp(y, want, B * yout * 4) == 0, "geometry %zu act %zu on %u threads", gi, a, threads);
                runs++;
            }
            free(x); free(w); free(bias); free(want); free(y); free(scratch);
        }
        dcz_pool_stop(pool);
    }
    CHECK(runs == 4 * 3 * 3, "%zu runs", runs);
}

/* The split run.c makes over threads: at batch 1 dcz_spmv_pool (column
 * blocks, lane groups, or the reference's rows, taken by the threads as
 * they come), above it dcz_spmm_pool (one shared tile, rows taken in
 * chunks, sums in the taking thread's scratch part), run by a pool of 1 to
 * 4 threads, give the reference's bits (the lane form its own reference's). */
static void test_threads(void)
{
    static const uint32_t shapes[][2] = { { 300, 784 }, { 33, 3000 }, { 2, 50 } };
    size_t runs = 0;
    for (size_t fi = 0; fi < sizeof lane_forms / sizeof *lane_forms; fi++)
    for (uint32_t threads = 1; threads <= 4; threads++) {
        dcz_pool *pool = NULL;
        if (threads > 1) REQUIRE(dcz_pool_start(threads, &pool) == DCZ_OK, "pool of %u", threads);
        CHECK(dcz_pool_threads(pool) == threads, "pool of %u threads", threads);
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            mat m;
            const uint32_t rows = shapes[si][0], cols = shapes[si][1];
            REQUIRE(make_mat(&m, rows, cols, 0.3, 16), "build");
            make_columns(&m, threads);
            make_lanes(&m, &lane_forms[fi]);
            const size_t batch_max = 40;
            float *x = malloc(batch_max * cols * sizeof(float)), *bias = malloc(rows * sizeof(float));
            float *y = malloc(batch_max * rows * sizeof(float)), *ref = malloc(batch_max * rows * sizeof(float));
            const uint64_t sf = dcz_spmm_scratch_floats(rows, cols);
            float *scratch = malloc(sf * threads * sizeof(float));
            float *panels = malloc(dcz_lanes_scratch_floats(lane_forms[fi].rows, cols, 16) * sizeof(float));
            for (size_t i = 0; i < batch_max * cols; i++) x[i] = rnd() % 3 == 0 ? 0.0f : nonzero();
            for (uint32_t i = 0; i < rows; i++) bias[i] = nonzero();
            /* batch 1 by columns, by lanes and by the reference's rows, then 40 */
            const size_t batches[] = { 1, 1, 1, 40 };
            const dcz_spmv_kind kinds[] = { DCZ_SPMV_COLUMNS, DCZ_SPMV_LANES, DCZ_SPMV_REF,
                                            DCZ_SPMV_REF };
            for (int bi = 0; bi < 4; bi++) {
                /* the lane form reads the input's panels, and sums as its reference */
                const int lanes = kinds[bi] == DCZ_SPMV_LANES;
                const float *xin = lanes ? dcz_spmv_input(&m.sp, kinds[bi], x, panels) : x;
                const size_t batch = batches[bi];
                if (lanes) dcz_spmv_lanes_ref(&m.sp, 0, m.sp.lgroups, bias, NULL, x, ref);
                else dcz_spmm_ref(&m.sp, bias, x, batch, ref);
                for (int rep = 0; rep < 3; rep++) {
                    memset(y, 0xFF, batch_max * rows * sizeof(float));
                    if (batch == 1) dcz_spmv_pool(pool, &m.sp, kinds[bi], bias, NULL, xin, y);
                    else dcz_spmm_pool(pool, &m.sp, bias, x, batch, y, rep < 2 ? scratch : NULL, sf);
                    CHECK(memcmp(y, ref, batch * rows * sizeof(float)) == 0,
                          "%ux%u batch %zu on %u threads%s", rows, cols, batch, threads,
                          rep < 2 || batch == 1 ? "" : " without scratch");
                    runs++;
                }
            }
            free(x); free(bias); free(y); free(ref); free(scratch); free(panels);
            free_mat(&m);
        }
        dcz_pool_stop(pool);
    }
    CHECK(runs == 2 * 4 * 3 * 4 * 3, "%zu runs", runs);
    CHECK(dcz_pool_start(1, &(dcz_pool *){ NULL }) == DCZ_ERR_ARG, "a pool of one is refused");
}

/* The view of the CPU a job's caller has (a model's cap, cpu/isa.h) is the
 * one every part of the job reads, on the workers too; and a cap leaves
 * out what is above it. */
typedef struct view_job {
    const dcz_cpu *seen[4];
} view_job;

static void view_part(void *ctx, uint32_t t)
{
    ((view_job *)ctx)->seen[t] = dcz_cpu_features();
}

static void test_cpu_view(void)
{
    dcz_cpu scalar, avx2;
    REQUIRE(dcz_cpu_capped(DCZ_CAP_SCALAR, &scalar, NULL, 0) == DCZ_OK, "the scalar level is everywhere");
    CHECK(!scalar.avx2 && !scalar.fma && !scalar.avx512f && !scalar.neon && !scalar.amx && scalar.probed,
          "scalar: no vector feature left");
    char why[256];
    if (dcz_cpu_capped(DCZ_CAP_AVX2, &avx2, why, sizeof why) == DCZ_OK)
        CHECK(avx2.avx2 && avx2.fma && !avx2.avx512f && !avx2.avx512vnni && !avx2.amx, "avx2: AVX2 and FMA alone");
    else
        CHECK(strstr(why, DCZ_BUILD_X86 || DCZ_BUILD_NEON ? "avx2 needs avx2" : "no vector kernels") != NULL,
              "a CPU or build without AVX2 says so: %s", why);
    CHECK(dcz_cpu_capped(DCZ_CAP_COUNT, &avx2, NULL, 0) == DCZ_ERR_ARG, "no such level");
    dcz_pool *pool;
    REQUIRE(dcz_pool_start(4, &pool) == DCZ_OK, "pool of 4");
    for (int round = 0; round < 3; round++) {
        view_job j = { { NULL } };
        const dcz_cpu *was = round == 1 ? dcz_cpu_enter(&scalar) : NULL;
        dcz_pool_run(pool, view_part, &j);
        const dcz_cpu *want = round == 1 ? &scalar : &dcz_cpu_probed;
        if (round == 1) dcz_cpu_leave(was);
        for (int t = 0; t < 4; t++)
            CHECK(j.seen[t] == want, "round %d, part %d: %s view", round, t, round == 1 ? "the caller's" : "the probed");
    }
    dcz_pool_stop(pool);
}

/* ---- dense fp32 layers ---------------------------------------------------------- */

typedef int (*dense_fn)(dcz_isa isa, const float *w, const float *bias, const float *x, size_t batch, uint32_t in,
                        uint32_t out, float *y);

/* dcz_dense_f32 as a variant (always runs) */
static int dense_dispatch(dcz_isa isa, const float *w, const float *bias, const float *x, size_t batch, uint32_t in,
                          uint32_t out, float *y)
{
    (void)isa;
    dcz_dense_f32(w, bias, x, batch, in, out, y);
    return 1;
}

static void test_dense(void)
{
    const uint32_t rows[] = { 0, 1, 3, 4, 5, 7, 8, 9, 33, 300 };
    const uint32_t cols[] = { 0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 300, 784, 1000 };
    const size_t batches[] = { 1, 2, 5, 64 };
    const struct { const char *name; dcz_isa isa; dense_fn fn; } vs[] = {
        { "avx2", DCZ_ISA_AVX2, dcz_dense_f32_isa }, { "neon", DCZ_ISA_NEON, dcz_dense_f32_isa },
        { "dcz_dense_f32", DCZ_ISA_REF, dense_dispatch },
    };
    size_t ran[3] = { 0, 0, 0 }, off = 0, unlike = 0, past = 0, cases = 0;
    const size_t B = 64;
    for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++)
        for (size_t ci = 0; ci < sizeof cols / sizeof *cols; ci++) {
            const uint32_t out = rows[ri], in = cols[ci];
            float *w = malloc((size_t)out * in * 4 + 4), *bias = malloc((size_t)out * 4 + 4);
            float *x = malloc(B * in * 4 + 4), *y = malloc((B * out + 1) * 4), *y1 = malloc((size_t)out * 4 + 4);
            double *ref = malloc(B * out * 8 + 8), *mag = malloc(B * out * 8 + 8);
            for (size_t i = 0; i < (size_t)out * in; i++) w[i] = nonzero();
            for (uint32_t i = 0; i < out; i++) bias[i] = nonzero();
            for (size_t i = 0; i < B * in; i++) x[i] = nonzero();
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const float *bp = with_bias ? bias : NULL;
                for (size_t b = 0; b < B; b++)
                    for (uint32_t r = 0; r < out; r++) {
                        double t = bp ? bp[r] : 0, a = bp ? fabs(bp[r]) : 0;
                        for (uint32_t c = 0; c < in; c++) {
                            const double p = (double)w[(size_t)r * in + c] * x[b * in + c];
                            t += p;
                            a += fabs(p);
                        }
                        ref[b * out + r] = t;
                        mag[b * out + r] = a;
                    }
                for (size_t v = 0; v < 3; v++)
                    for (size_t bi = 0; bi < 4; bi++) {
                        const size_t nb = batches[bi];
                        y[nb * out] = 12345.0f;   /* a canary past y */
                        if (!vs[v].fn(vs[v].isa, w, bp, x, nb, in, out, y)) continue;
                        ran[v]++;
                        cases++;
                        past += y[nb * out] != 12345.0f;
                        for (size_t i = 0; i < nb * out; i++)
                            if (!(fabs(y[i] - ref[i]) <= 1e-6 * mag[i] + 1e-30) && off++ < 3)
                                fprintf(stderr, "  %s %ux%u batch %zu: y[%zu] = %.9g, reference %.9g\n", vs[v].name, out,
                                        in, nb, i, (double)y[i], ref[i]);
                        for (size_t b = 0; b < nb; b++) {
                            vs[v].fn(vs[v].isa, w, bp, x + b * in, 1, in, out, y1);
                            unlike += memcmp(y1, y + b * out, (size_t)out * 4) != 0;
                        }
                    }
            }
            free(w); free(bias); free(x); free(y); free(y1); free(ref); free(mag);
        }
    CHECK(ran[2] > 0 && (ran[0] > 0 || ran[1] > 0 || !dcz_dense_f32_variant()),
          "variants run: avx2 %zu, neon %zu, dispatch %zu", ran[0], ran[1], ran[2]);
    CHECK(off == 0, "%zu dense outputs beyond 1e-6 of their |w x| sum (%zu cases)", off, cases);
    CHECK(unlike == 0, "%zu samples differ between a batch and batch 1", unlike);
    CHECK(past == 0, "%zu runs wrote past y", past);
}

typedef int (*gemm_isa_fn)(dcz_isa isa, const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a,
                           size_t lda, const float *b, size_t ldb, const float *bias_m, const float *bias_n,
                           float *c, size_t ldc);

/* dcz_gemm_f32_isa where act is none, which has no activation */
static int gemm_plain_isa(dcz_isa isa, const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a,
                          size_t lda, const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c,
                          size_t ldc)
{
    if (act->op) return 0;
    return dcz_gemm_f32_isa(isa, m, n, k, a, lda, b, ldb, bias_m, bias_n, c, ldc);
}

static int gemm_dispatch(dcz_isa isa, const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a,
                         size_t lda, const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c,
                         size_t ldc)
{
    (void)isa;
    if (act->op) dcz_gemm_f32_act(act, m, n, k, a, lda, b, ldb, bias_m, bias_n, c, ldc);
    else dcz_gemm_f32(m, n, k, a, lda, b, ldb, bias_m, bias_n, c, ldc);
    return 1;
}

typedef struct gemm_tally {
    size_t ran[7], unlike, far, past, acted, cut;   /* ran: per entry of gemm_case's table */
    size_t unpadded;                                /* cases with B unpadded */
} gemm_tally;

/* floats that end where a page that cannot be read begins, so that a
 * read past them faults (guard_free gives them back) */
typedef struct guarded { void *base; size_t bytes; float *p; } guarded;

static float *guard_alloc(guarded *g, size_t floats)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), want = floats * sizeof(float);
    g->bytes = (want + page - 1) / page * page + page;
    g->base = NULL;
    if (posix_memalign(&g->base, page, g->bytes) != 0) return NULL;
    if (mprotect((char *)g->base + g->bytes - page, page, PROT_NONE) != 0) {
        free(g->base);
        return NULL;
    }
    return g->p = (float *)(void *)((char *)g->base + g->bytes - page - want);
}

static void guard_free(guarded *g)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    mprotect((char *)g->base + g->bytes - page, page, PROT_READ | PROT_WRITE);
    free(g->base);
}

/* One product of m x k by k x n, each variant against the reference, the
 * reference against a sum in double, three kinds of bias; and with each
 * activation after it (dcz_gemm_f32_act_isa against dcz_gemm_f32_act_ref,
 * which is dcz_act_one over the reference's outputs). B's rows padded to
 * whole vectors, or (unpadded) n apart, B then ending where a page that
 * faults on reading begins, and A then read by columns
 * (dcz_gemm_f32_strided: a copy of A laid out by columns, m + 2 apart). */
static void gemm_case(size_t m, size_t n, uint32_t k, int unpadded, gemm_tally *t)
{
    const struct { const char *name; dcz_isa isa; gemm_isa_fn fn; } vs[] = {
        { "avx512", DCZ_ISA_AVX512, gemm_plain_isa }, { "avx2", DCZ_ISA_AVX2, gemm_plain_isa },
        { "neon", DCZ_ISA_NEON, gemm_plain_isa }, { "dcz_gemm_f32", DCZ_ISA_REF, gemm_dispatch },
        { "avx512 act", DCZ_ISA_AVX512, dcz_gemm_f32_act_isa }, { "avx2 act", DCZ_ISA_AVX2, dcz_gemm_f32_act_isa },
        { "neon act", DCZ_ISA_NEON, dcz_gemm_f32_act_isa },
    };
    const dcz_act acts[] = { { 0, 0.0f, 0.0f }, { DCZ_OP_RELU, 0.0f, 0.0f }, { DCZ_OP_CLIP, -0.25f, 0.5f },
                             { DCZ_OP_SILU, 0.0f, 0.0f }, { DCZ_OP_HARD_SWISH, 0.0f, 0.0f } };
    float *plain = malloc(m * (n + 3) * 4);
    REQUIRE(plain, "out of memory");
    const size_t ldb = unpadded ? n : dcz_gemm_ldb(n), ldc = n + 3;
    const size_t lda = (size_t)k + 2;
    guarded gb;
    float *a = malloc((m * lda + 1) * 4), *b = guard_alloc(&gb, (size_t)k * ldb + !unpadded);
    float *acol = malloc(((m + 2) * (size_t)k + 1) * 4);
    float *bm = malloc(m * 4), *bn = malloc(n * 4);
    float *want = malloc(m * ldc * 4), *c = malloc(m * ldc * 4);
    REQUIRE(a && b && bm && bn && want && c, "out of memory");
    REQUIRE(acol, "out of memory");
    for (size_t i = 0; i < m * lda; i++) a[i] = nonzero();
    for (size_t i = 0; i < m; i++)
        for (uint32_t p = 0; p < k; p++) acol[i + p * (m + 2)] = a[i * lda + p];
    for (uint32_t p = 0; p < k; p++)
        for (size_t j = 0; j < ldb; j++) b[(size_t)p * ldb + j] = j < n ? nonzero() : 7.0f;
    for (size_t i = 0; i < m; i++) bm[i] = nonzero();
    for (size_t j = 0; j < n; j++) bn[j] = nonzero();
    /* each activation (kind / 3) with each kind of bias (kind % 3) */
    for (int kind = 0; kind < 5 * 3; kind++) {
        const dcz_act *act = &acts[kind / 3];
        const int bias = kind % 3;
        const float *pm = bias == 1 ? bm : NULL, *pn = bias == 2 ? bn : NULL;
        dcz_gemm_f32_act_ref(act, m, n, k, a, lda, b, ldb, pm, pn, want, ldc);
        if (act->op) {   /* the activation took effect, on outputs of both signs */
            dcz_gemm_f32_ref(m, n, k, a, lda, b, ldb, pm, pn, plain, ldc);
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < n; j++) {
                    const float v = plain[i * ldc + j];
                    t->cut += want[i * ldc + j] != v;
                    t->acted += want[i * ldc + j] != dcz_act_one(act, v);
                }
        } else {   /* the reference against a sum in double */
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < n; j++) {
                    double sum = pm ? pm[i] : pn ? pn[j] : 0, mag = fabs(sum);
                    for (uint32_t p = 0; p < k; p++) {
                        const double q = (double)a[i * lda + p] * b[(size_t)p * ldb + j];
                        sum += q;
                        mag += fabs(q);
                    }
                    t->far += !(fabs(want[i * ldc + j] - sum) <= 1e-6 * mag + 1e-30);
                }
        }
        for (size_t v = 0; v < sizeof vs / sizeof *vs; v++) {
            for (size_t i = 0; i < m * ldc; i++) c[i] = -9.0f;
            int ran;
            if (!unpadded) ran = vs[v].fn(vs[v].isa, act, m, n, k, a, lda, b, ldb, pm, pn, c, ldc);
            else if (vs[v].fn == gemm_plain_isa && act->op) ran = 0;
            else if (vs[v].isa == DCZ_ISA_REF) {
                dcz_gemm_f32_strided(act, m, n, k, acol, 1, m + 2, b, ldb, pm, pn, c, ldc, a, m * lda * 4);
                ran = 1;
            } else   /* with A's lines asked for ahead: the same bits */
                ran = dcz_gemm_f32_strided_isa(vs[v].isa, act, m, n, k, acol, 1, m + 2, b, ldb, pm, pn, c, ldc, a,
                                               m * lda * 4);
            if (!ran) continue;
            t->ran[v]++;
            for (size_t i = 0; i < m; i++) {
                size_t bad = memcmp(c + i * ldc, want + i * ldc, n * 4) != 0;
                if (bad && t->unlike < 3)
                    fprintf(stderr, "  %s m %zu n %zu k %u bias %d act %u: row %zu differs\n", vs[v].name, m, n,
                            k, bias, act->op, i);
                t->unlike += bad;
                for (size_t j = n; j < ldc; j++) t->past += c[i * ldc + j] != -9.0f;
            }
        }
    }
    if (unpadded) {   /* the strided reference: the same bits */
        for (size_t i = 0; i < m * ldc; i++) c[i] = -9.0f;
        dcz_gemm_f32_strided_ref(&acts[1], m, n, k, acol, 1, m + 2, b, ldb, bm, NULL, c, ldc);
        dcz_gemm_f32_act_ref(&acts[1], m, n, k, a, lda, b, ldb, bm, NULL, want, ldc);
        for (size_t i = 0; i < m; i++) t->unlike += memcmp(c + i * ldc, want + i * ldc, n * 4) != 0;
    }
    free(a); free(acol); free(bm); free(bn); free(want); free(c); free(plain);
    guard_free(&gb);
    t->unpadded += unpadded;
}

static void test_gemm(void)
{
    const size_t ms[] = { 1, 2, 3, 4, 5, 6, 7, 12, 13 };
    const size_t ns[] = { 1, 5, 15, 16, 17, 63, 64, 65, 129, 300 };
    const uint32_t ks[] = { 0, 1, 9, 300 };
    /* and B past 2 MB, which the walk takes a band of rows at a time:
     * one row of C, a few, more than a tile's; depths not a whole number
     * of bands; */
    const struct { size_t m, n; uint32_t k; } big[] = {
        { 1, 300, 1800 }, { 3, 300, 1800 }, { 13, 300, 1800 }, { 7, 129, 4100 }, { 1, 65, 8200 },
        /* one row of C, by groups of B's rows across chunks of C's
         * columns: past one chunk, ending in part of a vector, a depth not
         * a whole number of groups */
        { 1, 2100, 301 }, { 1, 4100, 131 },
        /* and a small B beside a taller A, which the walk takes a tile of
         * rows across every panel at a time: rows not a whole number of
         * tiles, columns past one panel and ending in part of a vector */
        { 40, 17, 0 }, { 50, 33, 9 }, { 100, 17, 300 }, { 131, 49, 64 }, { 200, 65, 20 }, { 301, 130, 7 },
        { 7, 4100, 16 }, { 13, 8209, 9 },   /* shallow: past one block of columns */
        /* a B of 345 KB (within AVX-512's block of columns, past AVX2's)
         * and of 576 KB (past both) */
        { 301, 130, 600 }, { 301, 130, 1000 },
    };
    gemm_tally t = { { 0 }, 0, 0, 0, 0, 0, 0 };
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (int u = 0; u < 1 + (ns[ni] % DCZ_GEMM_PAD != 0); u++) gemm_case(ms[mi], ns[ni], ks[ki], u, &t);
    for (size_t i = 0; i < sizeof big / sizeof *big; i++)
        for (int u = 0; u < 1 + (big[i].n % DCZ_GEMM_PAD != 0); u++) gemm_case(big[i].m, big[i].n, big[i].k, u, &t);
    CHECK(t.ran[3] > 0 && (t.ran[0] > 0 || t.ran[1] > 0 || t.ran[2] > 0 || !dcz_gemm_f32_variant()),
          "variants run: avx512 %zu, avx2 %zu, neon %zu, dispatch %zu", t.ran[0], t.ran[1], t.ran[2], t.ran[3]);
    CHECK(t.far == 0, "%zu reference outputs beyond 1e-6 of their |a b| sum", t.far);
    CHECK(t.unlike == 0, "%zu rows of C differ from the reference's bits", t.unlike);
    CHECK(t.past == 0, "%zu elements of C's row padding written", t.past);
    CHECK(t.ran[4] + t.ran[5] + t.ran[6] > 0 || !dcz_gemm_f32_variant(), "no variant ran with an activation");
    CHECK(t.acted == 0, "%zu outputs of dcz_gemm_f32_act_ref are not the activation of the product's", t.acted);
    CHECK(t.cut > 0, "no activation changed an output");
    CHECK(t.unpadded > 50, "only %zu products on B unpadded", t.unpadded);
}

static void test_im2col_k(void)
{
    dcz_conv_geom all[64 + CONV_EXTRA];
    size_t count = 0, bad = 0, geoms = 0, planes = 0, strided = 0;
    while (count < 64 && conv_grid(count, &all[count])) count++;
    conv_extra(all + count);
    count += CONV_EXTRA;
    for (size_t gi = 0; gi < count; gi++) {
        const dcz_conv_geom *g = &all[gi];
        if (dcz_conv_groups(g) != 1) continue;
        geoms++;
        const size_t pixels = (size_t)g->out_h * g->out_w, ldb = dcz_gemm_ldb(pixels);
        const size_t k = (size_t)g->in_c * g->kh * g->kw, xin = (size_t)g->in_c * g->in_h * g->in_w;
        /* the input ending where a page that faults on reading begins */
        guarded gx;
        float *x = guard_alloc(&gx, xin), *col = malloc(pixels * k * 4 + 4), *colk = malloc(k * ldb * 4 + 4);
        REQUIRE(x && col && colk, "out of memory");
        for (size_t i = 0; i < xin; i++) x[i] = nonzero();
        dcz_im2col(g, x, col);
        for (int v = 0; v < 2; v++) {
            for (size_t i = 0; i < k * ldb; i++) colk[i] = -5.0f;
            if (v == 0) dcz_im2col_k_ref(g, x, colk, ldb);
            else dcz_im2col_k(g, x, colk, ldb);
            planes += v == 1 && g->sh == 1 && g->sw == 1 && g->in_w == g->out_w;
            strided += v == 1 && g->sw == 2;
            for (size_t r = 0; r < k; r++)
                for (size_t p = 0; p < ldb; p++)
                    bad += colk[r * ldb + p] != (p < pixels ? col[p * k + r] : 0.0f);
        }
        guard_free(&gx);
        free(col); free(colk);
    }
    CHECK(geoms > 5, "only %zu ungrouped geometries", geoms);
    CHECK(planes >= 3, "only %zu geometries copied by planes", planes);
    CHECK(strided >= 3, "only %zu geometries of column stride 2", strided);
    CHECK(bad == 0, "%zu elements of dcz_im2col_k differ from dcz_im2col transposed", bad);
}

static void test_relu(void)
{
    const size_t n = 1003;
    float *x = malloc(n * 4), *want = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = frand();
    x[3] = -0.0f; x[10] = NAN; x[11] = -NAN; x[20] = INFINITY; x[21] = -INFINITY; x[n - 1] = NAN;
    memcpy(want, x, n * 4);
    dcz_relu_ref(want, n);
    const dcz_isa isas[] = { DCZ_ISA_AVX2, DCZ_ISA_NEON };
    size_t ran = 0, bad = 0;
    for (size_t v = 0; v < 2; v++) {
        if (!dcz_relu_isa(isas[v], x, n, y)) continue;
        ran++;
        bad += memcmp(y, want, n * 4) != 0;
        memcpy(y, x, n * 4);
        dcz_relu_isa(isas[v], y, n, y);
        bad += memcmp(y, want, n * 4) != 0;
    }
    dcz_relu(x, n, y);
    bad += memcmp(y, want, n * 4) != 0;
    CHECK(want[3] == 0.0f && !signbit(want[3]) && want[10] == 0.0f && want[20] == INFINITY && want[21] == 0.0f,
          "the reference's ReLU of -0, NaN and infinities");
    CHECK(ran > 0 || !dcz_gemm_f32_variant(), "no ReLU variant ran");
    CHECK(bad == 0, "%zu ReLU runs differ from the reference", bad);
    free(x); free(want); free(y);
}

/* CLIP in vectors: the reference's bits on random values, NaN of both
 * signs, infinities, zeros of both signs and the bounds themselves, in
 * place too, on a length that ends inside a vector */
static void test_clip(void)
{
    const size_t n = 1003;
    const float lo = -0.0f, hi = 6.0f, param[2] = { lo, hi };
    float *x = malloc(n * 4), *want = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = 16.0f * frand();
    x[3] = -0.0f; x[4] = 0.0f; x[5] = 6.0f; x[10] = NAN; x[11] = -NAN; x[20] = INFINITY; x[21] = -INFINITY;
    x[n - 1] = NAN;
    dcz_activation_ref(DCZ_OP_CLIP, param, x, n, want);
    const dcz_isa isas[] = { DCZ_ISA_AVX2, DCZ_ISA_NEON };
    size_t ran = 0, bad = 0;
    for (size_t v = 0; v < 2; v++) {
        if (!dcz_clip_isa(isas[v], lo, hi, x, n, y)) continue;
        ran++;
        bad += memcmp(y, want, n * 4) != 0;
        memcpy(y, x, n * 4);
        dcz_clip_isa(isas[v], lo, hi, y, n, y);
        bad += memcmp(y, want, n * 4) != 0;
    }
    dcz_clip(lo, hi, x, n, y);
    bad += memcmp(y, want, n * 4) != 0;
    CHECK(isnan(want[10]) && want[20] == 6.0f && want[21] == 0.0f, "the reference's clip of NaN and infinities");
    CHECK(ran > 0 || !dcz_gemm_f32_variant(), "no clip variant ran");
    CHECK(bad == 0, "%zu clip runs differ from the reference", bad);
    free(x); free(want); free(y);
}

/* HARD_SIGMOID and HARD_SWISH in vectors: the reference's bits on random
 * values over the clamps' range and past it, NaN of both signs,
 * infinities, zeros of both signs and the knees (-3, 3; for HardSigmoid
 * with alpha 0.2, beta 0.5: -2.5, 2.5), in place too, on a length that
 * ends inside a vector */
static void test_hard_act(void)
{
    const size_t n = 1003;
    const float params[][2] = { { 0.2f, 0.5f }, { 1.0f / 6.0f, 0.5f }, { 0.0f, 0.0f } };
    const uint16_t ops[] = { DCZ_OP_HARD_SIGMOID, DCZ_OP_HARD_SIGMOID, DCZ_OP_HARD_SWISH };
    float *x = malloc(n * 4), *want = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = 16.0f * frand();
    x[3] = -0.0f; x[4] = 0.0f; x[5] = 3.0f; x[6] = -3.0f; x[7] = 2.5f; x[8] = -2.5f;
    x[10] = NAN; x[11] = -NAN; x[20] = INFINITY; x[21] = -INFINITY; x[n - 1] = NAN;
    const dcz_isa isas[] = { DCZ_ISA_AVX2, DCZ_ISA_NEON };
    size_t ran = 0, bad = 0;
    for (size_t o = 0; o < 3; o++) {
        dcz_activation_ref(ops[o], params[o], x, n, want);
        for (size_t v = 0; v < 2; v++) {
            if (!dcz_hard_act_isa(isas[v], ops[o], params[o], x, n, y)) continue;
            ran++;
            bad += memcmp(y, want, n * 4) != 0;
            memcpy(y, x, n * 4);
            dcz_hard_act_isa(isas[v], ops[o], params[o], y, n, y);
            bad += memcmp(y, want, n * 4) != 0;
        }
        dcz_hard_act(ops[o], params[o], x, n, y);
        bad += memcmp(y, want, n * 4) != 0;
    }
    CHECK(!dcz_hard_act_isa(DCZ_ISA_AVX2, DCZ_OP_SIGMOID, params[0], x, n, y) &&
              !dcz_hard_act_isa(DCZ_ISA_NEON, DCZ_OP_SIGMOID, params[0], x, n, y),
          "another op taken by the hard activations' variants");
    CHECK(ran > 0 || !dcz_gemm_f32_variant(), "no hard activation variant ran");
    CHECK(bad == 0, "%zu hard activation runs differ from the reference", bad);
    free(x); free(want); free(y);
}

/* Whether y and want hold the same bits, NaN but for its sign and
 * payload (an arithmetic operation's NaN takes either operand's, by the
 * order a compiler picks for it). */
static int same_or_nan(const float *y, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(want[i]) ? !isnan(y[i]) : memcmp(&y[i], &want[i], sizeof *y) != 0) return 0;
    return 1;
}

/* SIGMOID and SILU of x (n) on every vector variant this machine runs
 * (*ran counts them), and with all, in place and by dcz_activation: how
 * many runs differ from the reference (want and y: n floats of scratch) */
static size_t exp_variants_off(const float *x, size_t n, int all, float *want, float *y, size_t *ran)
{
    const dcz_isa isas[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2, DCZ_ISA_NEON };
    const uint16_t ops[] = { DCZ_OP_SIGMOID, DCZ_OP_SILU };
    size_t bad = 0;
    for (size_t o = 0; o < 2; o++) {
        dcz_activation_ref(ops[o], NULL, x, n, want);
        for (size_t v = 0; v < 3; v++) {
            if (!dcz_exp_act_isa(isas[v], ops[o], x, n, y)) continue;
            ++*ran;
            bad += !same_or_nan(y, want, n);
            if (!all) continue;
            memcpy(y, x, n * 4);
            dcz_exp_act_isa(isas[v], ops[o], y, n, y);
            bad += !same_or_nan(y, want, n);
        }
        if (!all) continue;
        dcz_activation(ops[o], NULL, x, n, y);
        bad += !same_or_nan(y, want, n);
    }
    return bad;
}

/* SIGMOID and SILU: dcz_exp_neg within 2 ulp of e^t in double over
 * [-87, 0], within the subnormals' step to -104 and 0 below, dcz_exp_core
 * within 2 ulp over [0, 88.7] and +inf past the largest float, the
 * references within 4e-7 of the functions in
 * double; the vector variants the references' bits on random values over
 * [-30, 30] and [-100, 100], zeros of both signs, the cut-off at -87 and
 * past it, the subnormal results and 0 past -104, infinities and NaN of
 * both signs (NaN for NaN, its sign
 * either), in place too, on a length that ends inside a vector */
static void test_exp_act(void)
{
    size_t far = 0;
    for (int i = 0; i <= 870000; i++) {
        const float t = -(float)i * 1e-4f;
        const double want = exp((double)t), got = dcz_exp_neg(t);
        far += fabs(got - want) > 2.0 * 1.1920929e-7 * want;
    }
    for (int i = 870; i <= 1050; i++) {   /* subnormal results, then 0 below -104 */
        const float t = -(float)i * 0.1f;
        far += fabs(dcz_exp_neg(t) - exp((double)t)) > 1.5e-45 + 2.4e-7 * exp((double)t);
    }
    far += dcz_exp_neg(-104.5f) != 0.0f || dcz_exp_neg(-INFINITY) != 0.0f || !isnan(dcz_exp_neg(NAN));
    far += dcz_exp_neg(0.0f) != 1.0f || dcz_exp_neg(-0.0f) != 1.0f;
    for (int i = 0; i <= 887000; i++) {
        const float t = (float)i * 1e-4f;
        const double want = exp((double)t), got = dcz_exp_core(t);
        far += fabs(got - want) > 2.0 * 1.1920929e-7 * want;
    }
    far += dcz_exp_core(88.73f) != INFINITY || dcz_exp_core(DCZ_EXP_MAX) != INFINITY;
    for (int i = -200000; i <= 200000; i++) {
        const float v = (float)i * 1e-4f * 5.0f;
        const double sg = 1.0 / (1.0 + exp(-(double)v)), sl = (double)v * sg;
        far += fabs(dcz_sigmoid_one(v) - sg) > 4e-7 * sg + 1e-37;
        /* |v| times a subnormal's step; below -88.72, where e^-v passes the
         * largest float, -0 for a SiLU under 3e-37 in magnitude */
        far += fabs(dcz_silu_one(v) - sl) > 4e-7 * fabs(sl) + (v < -88.72f ? 3e-37 : 1e-43);
    }
    CHECK(far == 0, "%zu values off e^t, the sigmoid or SiLU by more than their bounds", far);

    const size_t n = 2003;
    float *x = malloc(n * 4), *want = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = (i < n / 2 ? 60.0f : 200.0f) * frand();
    const float edge[] = { 0.0f, -0.0f, 87.0f, -87.0f, 86.999f, -86.999f, 87.001f, -87.001f, 88.8f, -88.8f,
                           100.0f, -100.0f, 103.0f, -103.0f, 103.01f, -103.01f, 1e-30f, -1e-30f,
                           INFINITY, -INFINITY, NAN, -NAN };
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) x[3 + i] = edge[i];
    x[n - 1] = NAN;
    size_t ran = 0;
    const size_t bad = exp_variants_off(x, n, 1, want, y, &ran);
    CHECK(ran > 0 || !dcz_gemm_f32_variant(), "no sigmoid variant ran");
    CHECK(bad == 0, "%zu sigmoid and SiLU runs differ from the reference", bad);
    free(x); free(want); free(y);
    /* and a sweep of the floats of both signs up to 112 in magnitude, every
     * 1021st bit pattern (the subnormal results, the cut-offs at -87 and
     * -104, the scaling by 2^n of every n on the way), on every variant */
    const size_t m = 2 * (0x42E00000u / 1021 + 1);
    float *sx = malloc(m * 4), *sw = malloc(m * 4), *sy = malloc(m * 4);
    REQUIRE(sx && sw && sy, "out of memory");
    for (size_t i = 0; i < m; i++) {
        const uint32_t u = (uint32_t)(i / 2 * 1021) | (i % 2 ? 0x80000000u : 0);
        memcpy(&sx[i], &u, 4);
    }
    size_t swept = 0;
    const size_t off = exp_variants_off(sx, m, 0, sw, sy, &swept);
    CHECK(off == 0 && (swept > 0 || !dcz_gemm_f32_variant()), "%zu of %zu sweeps differ from the reference", off,
          swept);
    free(sx); free(sw); free(sy);
}

/* MUL in vectors: a factor a channel over planes of 1 (each element its
 * own factor), 5, 8 and 37 cells (a tail inside a vector), random values
 * with NaN, infinities and zeros of both signs among factors and inputs,
 * in place too: the bits of dcz_mul_ref */
static void test_mul(void)
{
    const uint32_t planes[] = { 1, 5, 8, 37 };
    const size_t batch = 3;
    const uint32_t channels = 7;
    const dcz_isa isas[] = { DCZ_ISA_AVX2, DCZ_ISA_NEON };
    size_t ran = 0, bad = 0;
    for (size_t pi = 0; pi < 4; pi++) {
        const size_t n = batch * channels * planes[pi], nf = batch * channels;
        float *x = malloc(n * 4), *f = malloc(nf * 4), *want = malloc(n * 4), *y = malloc(n * 4);
        for (size_t i = 0; i < n; i++) x[i] = 8.0f * frand();
        for (size_t i = 0; i < nf; i++) f[i] = 4.0f * frand();
        x[0] = NAN; x[1] = -0.0f; x[n - 1] = INFINITY; f[1] = -0.0f; f[2] = -INFINITY; f[nf - 1] = NAN;
        dcz_mul_ref(x, f, batch, channels, planes[pi], want);
        for (size_t v = 0; v < 2; v++) {
            if (!dcz_mul_isa(isas[v], x, f, batch, channels, planes[pi], y)) continue;
            ran++;
            bad += memcmp(y, want, n * 4) != 0;
            memcpy(y, x, n * 4);
            dcz_mul_isa(isas[v], y, f, batch, channels, planes[pi], y);
            bad += memcmp(y, want, n * 4) != 0;
        }
        dcz_mul(x, f, batch, channels, planes[pi], y);
        bad += memcmp(y, want, n * 4) != 0;
        free(x); free(f); free(want); free(y);
    }
    CHECK(ran > 0 || !dcz_gemm_f32_variant(), "no Mul variant ran");
    CHECK(bad == 0, "%zu Mul runs differ from the reference", bad);
}

/* ADD in vectors, alone and followed by ReLU and CLIP: the bits of the
 * references (dcz_add_ref, then dcz_relu_ref or dcz_activation_ref) on
 * random values, NaN, infinities of both signs (their sum NaN) and zeros
 * of both signs, in place too */
static void test_add(void)
{
    const size_t n = 1003;
    float *a = malloc(n * 4), *b = malloc(n * 4), *want = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++) { a[i] = frand(); b[i] = frand(); }
    a[3] = -0.0f; b[3] = -0.0f; a[4] = 0.0f; b[4] = -0.0f; a[10] = NAN; b[20] = INFINITY; a[21] = INFINITY;
    b[21] = -INFINITY; a[n - 1] = NAN;
    const dcz_act acts[] = { { 0, 0.0f, 0.0f }, { DCZ_OP_RELU, 0.0f, 0.0f }, { DCZ_OP_CLIP, -0.25f, 0.5f } };
    const dcz_isa isas[] = { DCZ_ISA_AVX2, DCZ_ISA_NEON };
    size_t ran = 0, bad = 0, changed = 0;
    for (size_t k = 0; k < 3; k++) {
        const dcz_act *act = &acts[k];
        dcz_add_ref(a, b, n, want);
        if (act->op == DCZ_OP_RELU) dcz_relu_ref(want, n);
        if (act->op == DCZ_OP_CLIP) {
            const float param[2] = { act->lo, act->hi };
            dcz_activation_ref(DCZ_OP_CLIP, param, want, n, want);
        }
        /* the activation changes the sums: the test sees whether it ran */
        dcz_add_ref(a, b, n, y);
        changed += act->op && memcmp(y, want, n * 4) != 0;
        for (size_t v = 0; v < 2; v++) {
            if (!dcz_add_isa(isas[v], a, b, n, act, y)) continue;
            ran++;
            bad += memcmp(y, want, n * 4) != 0;
            memcpy(y, a, n * 4);
            dcz_add_isa(isas[v], y, b, n, act, y);
            bad += memcmp(y, want, n * 4) != 0;
        }
        dcz_add(a, b, n, act, y);
        bad += memcmp(y, want, n * 4) != 0;
        if (!act->op) {
            dcz_add(a, b, n, NULL, y);
            bad += memcmp(y, want, n * 4) != 0;
        }
    }
    CHECK(changed == 2, "the activations change no sum");
    CHECK(ran > 0 || !dcz_gemm_f32_variant(), "no add variant ran");
    CHECK(bad == 0, "%zu add runs differ from the reference", bad);
    free(a); free(b); free(want); free(y);
    /* split over a pool of 3 (past DCZ_SPLIT_ELEMS, off whole vectors),
     * in place too: the bits of one call */
    const size_t nb = DCZ_SPLIT_ELEMS + 1003;
    float *ba = malloc(nb * 4), *bb = malloc(nb * 4), *bw = malloc(nb * 4), *by = malloc(nb * 4);
    REQUIRE(ba && bb && bw && by, "memory");
    for (size_t i = 0; i < nb; i++) { ba[i] = frand(); bb[i] = frand(); }
    dcz_pool *pool;
    REQUIRE(dcz_pool_start(3, &pool) == DCZ_OK, "pool of 3");
    size_t split_bad = 0;
    for (size_t k = 0; k < 3; k++) {
        dcz_add(ba, bb, nb, &acts[k], bw);
        memset(by, 0xA5, nb * 4);
        dcz_add_pool(pool, ba, bb, nb, &acts[k], by);
        split_bad += memcmp(by, bw, nb * 4) != 0;
        memcpy(by, ba, nb * 4);
        dcz_add_pool(pool, by, bb, nb, &acts[k], by);
        split_bad += memcmp(by, bw, nb * 4) != 0;
    }
    dcz_pool_stop(pool);
    CHECK(split_bad == 0, "%zu adds over a pool differ from one call", split_bad);
    free(ba); free(bb); free(bw); free(by);
}

/* CONCAT's copies over a pool of 3 (dcz_concat_pool): the bits of
 * dcz_concat_ref, inputs of odd widths, one sample and three, below and
 * past DCZ_SPLIT_ELEMS, the parts' bounds inside inputs and samples */
static void test_concat(void)
{
    const uint32_t width[4] = { 5003, 17, 1, 2999 }, nin = 4, total = 5003 + 17 + 1 + 2999;
    const size_t bmax = 3;
    float *x[4], *want = malloc(bmax * total * 4), *y = malloc(bmax * total * 4);
    REQUIRE(want && y, "memory");
    for (uint32_t k = 0; k < nin; k++) {
        x[k] = malloc(bmax * width[k] * 4);
        REQUIRE(x[k], "memory");
        for (size_t i = 0; i < bmax * width[k]; i++) x[k][i] = frand();
    }
    dcz_pool *pool;
    REQUIRE(dcz_pool_start(3, &pool) == DCZ_OK, "pool of 3");
    size_t bad = 0;
    for (size_t batch = 1; batch <= bmax; batch += 2)
        for (int pooled = 0; pooled < 2; pooled++) {
            dcz_concat_ref((const float *const *)x, width, nin, batch, want);
            memset(y, 0xA5, bmax * total * 4);
            dcz_concat_pool(pooled ? pool : NULL, (const float *const *)x, width, nin, batch, y);
            bad += memcmp(y, want, batch * total * 4) != 0;
        }
    dcz_pool_stop(pool);
    CHECK(bmax * total >= DCZ_SPLIT_ELEMS, "the batch of 3 stays below the split");
    CHECK(bad == 0, "%zu concats differ from the reference", bad);
    for (uint32_t k = 0; k < nin; k++) free(x[k]);
    free(want); free(y);
}

int main(void)
{
    RUN(test_grid);
    RUN(test_spmv_pick);
    RUN(test_declines);
    RUN(test_threads);
    RUN(test_conv_threads);
    RUN(test_cpu_view);
    RUN(test_dense);
    RUN(test_gemm);
    RUN(test_im2col_k);
    RUN(test_relu);
    RUN(test_concat);
    RUN(test_clip);
    RUN(test_hard_act);
    RUN(test_exp_act);
    RUN(test_mul);
    RUN(test_add);
    return check_summary();
}
