/* test_gpu_emu.c: the bodies of the CUDA kernels (runtime/cuda/gpu_kern.h), run
 * on the host over every output, against the CPU references. Runs in every
 * build, with or without nvcc or a GPU: the CUDA kernels of
 * kernels_conv.cu and kernels_ref.cu are a grid-stride loop around these
 * bodies, so their indexing (groups, strides, padding, fillers, the
 * im2col layout the GPU's patch products read) is checked here;
 * tests/unit/test_gpu.c checks the launched kernels on a GPU.
 *
 * - the sparse direct convolution: the grid conv_geom.h shares with
 *   test_kernels.c (kernels 1, 3,
 *   5 and non-square, strides 1 and 2, padding 0 and 1, groups and
 *   depthwise, densities 0, 0.5, 1 and 0.01 so fillers occur, 8-bit
 *   codebooks and fp32 values, batch 1 and 3) against
 *   dcz_conv2d_direct_ref within 1e-5 of each output's |w x| sum; the
 *   dense direct convolution (grouped layers with dense weights) likewise;
 * - the backend's choice of convolution kernel (dcz_gpu_pick);
 * - the patch path the GPU takes on small planes of one group: each
 *   sample's patches transposed (dcz_gk_patch_taps, equal to dcz_im2col's) times the rows
 *   (dcz_gk_sparse_row) over the batch's patches, each output where
 *   dcz_gk_place puts it as gpu.c lays it out, against the same reference;
 * - sparse rows against dcz_spmm_ref, pools and the global mean against
 *   their references, activations against dcz_activation_ref and
 *   dcz_relu_ref, Concat's element map against dcz_concat_ref: bit for bit
 *   (the same sums in the same order; on the host the same expf).
 *
 * The integer region of calibrated models (8-bit schemes: int8 values,
 * int32 sums), bit for bit against kernels_int.c: the rounding shift and
 * requantization against dcz_round_shift and dcz_requant_ref over every
 * shift 0 to 62 (sums up to +-(2^31 - 1), multipliers up to 2^31 - 1, ties);
 * integer rows (codebooks of 2, 16 and 256 values, per-entry values,
 * densities 0, 0.5, 1, 0.01 with fillers) finished to int8 and to float
 * against dcz_qspmm_ref and dcz_requant_ref; the integer direct convolution
 * and its patch path over the convolution grid against
 * dcz_qconv2d_direct_ref; the pools and the mean (plain and rescaled)
 * against their references; Add, Mul and Concat's rescaling against
 * dcz_qadd_ref, dcz_qmul_ref and dcz_qconcat_ref; the input's quantization
 * on hand cases (ties, NaN, infinities).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/cuda/gpu.h"
#include "runtime/format/ops.h"
#include "tests/check.h"
#define TEST_RNG_SEED 4242
#include "tests/unit/test_util.h"
#include "tests/unit/conv_geom.h"
#include "tests/unit/sparse_mat.h"
#include "tests/unit/qsparse_mat.h"

static dcz_gsparse gsparse_of(const dcz_sparse *s)
{
    dcz_gsparse g = { s->rows, s->cols, s->k, s->row_ptr, s->step, s->idx, s->val, s->codebook };
    return g;
}

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = nonzero();
}

/* The chunk form of s on the host (gpu_kern.h: dcz_gchunks, as gpu.c
 * makes it), freed by dcz_gk_chunks_free. */
static dcz_gchunks chunks_of(const dcz_sparse *s)
{
    const dcz_gsparse g = gsparse_of(s);
    dcz_gchunks c;
    if (dcz_gk_chunks_make(&g, &c) != 0) {   /* out of memory: nothing to test with */
        fprintf(stderr, "dcz_gk_chunks_make: out of memory\n");
        exit(1);
    }
    return c;
}

/* Row r of act(S x + bias) as spmv_chunks_kernel<G> computes it: lane l
 * of the row's G takes chunks l, l + G, ...; each round the lanes' step
 * totals scanned into each chunk's first column; then the lanes' sums
 * reduced as the shuffles do (lane l adds lane l + o's, o = G/2 .. 1). */
static float chunk_row_lanes(const dcz_gchunks *s, uint32_t G, const float *bias, const float *x, uint32_t r,
                             dcz_act act)
{
    float sum[32] = { 0 };
    uint32_t col = 0;
    for (uint32_t c0 = s->cptr[r]; c0 < s->cptr[r + 1]; c0 += G)
        for (uint32_t l = 0; l < G && c0 + l < s->cptr[r + 1]; l++) {
            uint32_t w[4];
            dcz_gk_chunk_words(s->chunk, c0 + l, w);
            sum[l] = dcz_gk_chunk_dot(s, s->codebook, w, c0 + l, col, x, sum[l]);
            col += dcz_gk_chunk_span(w);
        }
    for (uint32_t o = G / 2; o > 0; o >>= 1)
        for (uint32_t l = 0; l < o; l++) sum[l] += sum[l + o];
    return dcz_gk_act(act.op, act.lo, act.hi, bias ? sum[0] + bias[r] : sum[0]);
}

/* Row r, samples j and j + 32, as spmm_chunks_kernel computes them with
 * parts warps a row: part p's chunks from the column the spans before
 * them reach, summed from 0, then the bias plus the parts in order (one
 * part: from the bias, dcz_gk_chunk_row_t). */
static void chunk_row_parts(const dcz_gchunks *s, uint32_t parts, const float *bias, const float *xt,
                            uint64_t samples, uint64_t j, uint32_t r, dcz_act act, float y[2])
{
    if (parts == 1) {
        dcz_gk_chunk_row_t(s, s->codebook, bias, xt, samples, j, r, act, y);
        return;
    }
    const uint32_t c0 = s->cptr[r], n = s->cptr[r + 1] - c0;
    float total[2] = { bias ? bias[r] : 0.0f, bias ? bias[r] : 0.0f };
    for (uint32_t p = 0; p < parts; p++) {
        const uint32_t cb = c0 + (uint32_t)((uint64_t)n * p / parts), ce = c0 + (uint32_t)((uint64_t)n * (p + 1) / parts);
        uint32_t col = 0;
        for (uint32_t c = c0; c < cb; c++) {
            uint32_t w[4];
            dcz_gk_chunk_words(s->chunk, c, w);
            col += dcz_gk_chunk_span(w);
        }
        float sum[2] = { 0.0f, 0.0f };
        dcz_gk_chunks_t(s, s->codebook, xt, samples, j, cb, ce, col, sum);
        total[0] += sum[0];
        total[1] += sum[1];
    }
    for (int i = 0; i < 2; i++) y[i] = dcz_gk_act(act.op, act.lo, act.hi, total[i]);
}

typedef struct tally {
    size_t cases, direct, dense, patches;
} tally;

/* got against ref within 1e-5 of each output's |w x| sum (mag). */
static size_t off(const char *what, const dcz_conv_geom *g, const float *got, const float *ref, const float *mag,
                  size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - ref[i]) <= 1e-5f * (mag[i] + 1e-6f)) && bad++ < 3)
            fprintf(stderr, "  %s in %ux%ux%u out %ux%ux%u k %ux%u s %u p %u groups %u: y[%zu] = %.8g, ref %.8g\n",
                    what, g->in_c, g->in_h, g->in_w, g->out_c, g->out_h, g->out_w, g->kh, g->kw, g->sh, g->ph,
                    g->group, i, got[i], ref[i]);
    return bad;
}

/* The GPU's patch path over a batch of B samples x (one group: grouped
 * convolutions run direct): the batch's patches transposed, the kh kw
 * rows of each input channel at column b pixels + p by dcz_gk_patch_taps
 * (checked against dcz_im2col's elements of sample b), then the chunk rows over the B pixels transposed
 * patches (dcz_gk_chunk_row_t, two samples a lane), each output where
 * dcz_gk_place puts it, as gpu.c's dcz_gpu_run_conv2d lays them out in y
 * (B, out_c, pixels). */
static size_t patch_path(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias, const float *x, size_t B,
                         float *y)
{
    const uint32_t pixels = g->out_h * g->out_w, k = g->in_c * g->kh * g->kw;
    const size_t xin = (size_t)g->in_c * g->in_h * g->in_w, per = (size_t)pixels * k, n = B * pixels;
    float *want = malloc(per * sizeof *want + 1), *colt = malloc(B * per * sizeof *colt + 1);
    size_t bad = 0;
    const uint32_t taps = g->kh * g->kw;
    for (size_t i = 0; i < B * per; i++) colt[i] = NAN;   /* every cell written */
    for (size_t b = 0; b < B; b++) {
        for (uint32_t ic = 0; ic < g->in_c; ic++)
            for (uint32_t p = 0; p < pixels; p++)
                dcz_gk_patch_taps(g, x + b * xin, ic, p, colt + (size_t)ic * taps * n + b * pixels + p, n);
        dcz_im2col(g, x + b * xin, want);
        for (uint32_t kk = 0; kk < k; kk++)
            for (uint32_t p = 0; p < pixels; p++)
                bad += memcmp(&colt[kk * n + b * pixels + p], &want[(size_t)p * k + kk], sizeof *want) != 0;
    }
    dcz_gchunks ch = chunks_of(s);
    const dcz_act none = { 0, 0.0f, 0.0f };
    const dcz_gplace place = { pixels, (uint64_t)g->out_c * pixels, 1, pixels };
    for (uint64_t j0 = 0; j0 < n; j0 += 64)
        for (uint32_t lane = 0; lane < 32 && j0 + lane < n; lane++)
            for (uint32_t r = 0; r < g->out_c; r++) {
                float v[DCZ_GK_LANE_SAMPLES];
                dcz_gk_chunk_row_t(&ch, ch.codebook, bias, colt, n, j0 + lane, r, none, v);
                y[dcz_gk_place(&place, (uint32_t)(j0 + lane), r)] = v[0];
                if (j0 + lane + 32 < n) y[dcz_gk_place(&place, (uint32_t)(j0 + lane + 32), r)] = v[1];
            }
    dcz_gk_chunks_free(&ch);
    free(colt);
    free(want);
    return bad;
}

static void conv_case(const dcz_conv_geom *g, double density, uint32_t k, tally *t)
{
    mat m;
    const uint32_t cols = dcz_conv_group_in(g) * g->kh * g->kw;
    REQUIRE(make_mat(&m, g->out_c, cols, density, k), "build");
    const size_t B = 3, xin = (size_t)g->in_c * g->in_h * g->in_w, yout = (size_t)g->out_c * g->out_h * g->out_w;
    const size_t nw = (size_t)g->out_c * cols;
    float *x = malloc(B * xin * sizeof *x), *xa = malloc(B * xin * sizeof *x), *wa = malloc(nw * sizeof *wa + 1);
    float *bias = malloc(g->out_c * sizeof *bias), *ba = malloc(g->out_c * sizeof *ba);
    float *ref = malloc(B * yout * sizeof *ref), *mag = malloc(B * yout * sizeof *mag), *y = malloc(B * yout * sizeof *y);
    fill(x, B * xin);
    fill(bias, g->out_c);
    for (size_t i = 0; i < B * xin; i++) xa[i] = fabsf(x[i]);
    for (size_t i = 0; i < nw; i++) wa[i] = fabsf(m.dense[i]);
    for (uint32_t i = 0; i < g->out_c; i++) ba[i] = fabsf(bias[i]);
    dcz_conv2d_direct_ref(g, m.dense, bias, x, B, ref);
    dcz_conv2d_direct_ref(g, wa, ba, xa, B, mag);
    const dcz_gsparse gs = gsparse_of(&m.sp);
    for (size_t b = 0; b < B; b++)
        for (uint32_t i = 0; i < yout; i++) y[b * yout + i] = dcz_gk_conv_sparse(g, &gs, bias, x + b * xin, i);
    t->direct += off("direct", g, y, ref, mag, B * yout);
    for (size_t b = 0; b < B; b++)
        for (uint32_t i = 0; i < yout; i++) y[b * yout + i] = dcz_gk_conv_dense(g, m.dense, bias, x + b * xin, i);
    t->dense += off("dense", g, y, ref, mag, B * yout);
    if (dcz_conv_groups(g) == 1) {
        for (size_t i = 0; i < B * yout; i++) y[i] = NAN;   /* every output written */
        t->patches += patch_path(g, &m.sp, bias, x, B, y);
        t->patches += off("patches", g, y, ref, mag, B * yout);
    }
    t->cases++;
    free(x); free(xa); free(wa); free(bias); free(ba); free(ref); free(mag); free(y);
    free_mat(&m);
}

static void test_convolutions(void)
{
    const double dens[] = { 0.0, 0.5, 1.0 };
    const uint32_t codebooks[] = { 256, 0 };
    tally t = { 0, 0, 0, 0 };
    dcz_conv_geom g, extra[CONV_EXTRA];
    for (size_t i = 0; conv_grid(i, &g); i++)
        for (size_t di = 0; di < 3; di++)
            for (size_t ci = 0; ci < 2; ci++) conv_case(&g, dens[di], codebooks[ci], &t);
    conv_extra(extra);
    for (size_t i = 0; i < CONV_EXTRA; i++)
        for (size_t ci = 0; ci < 2; ci++) {
            conv_case(&extra[i], 0.5, codebooks[ci], &t);
            conv_case(&extra[i], 0.01, codebooks[ci], &t);
        }
    CHECK(t.cases > 120, "only %zu cases", t.cases);
    CHECK(t.direct == 0, "direct: %zu mismatches", t.direct);
    CHECK(t.dense == 0, "dense direct: %zu mismatches", t.dense);
    CHECK(t.patches == 0, "patches: %zu mismatches", t.patches);
}

/* The backend's choice for convolutions (dcz_gpu_pick): grouped ones run
 * direct, dense weights and integers too, compressed ones at least
 * DCZ_GPU_GROUPED_DENSE_DENSITY full on a dense copy; compressed ones of
 * one group by patches, those at least DCZ_GPU_DENSE_DENSITY full on a
 * dense copy in large launches and, pointwise, above batch 1
 * (dcz_gpu_dense_copy); a pointwise one at batch 1 reads its input as its
 * patches; integer ones of one group take the patch path on planes under
 * DCZ_GPU_DIRECT_MIN_PLANE cells, and on larger ones in small launches
 * (dcz_gpu_by_patches). */
static void test_pick(void)
{
    /* rows of 8 x 3 x 3 columns, 16 of them: 1152 cells, wide from 70 entries */
    static uint8_t steps[1152];
    memset(steps, 1, sizeof steps);
    const uint32_t wide = (uint32_t)(DCZ_GPU_DENSE_DENSITY * 1152) + 1, narrow = wide - 2;
    /* grouped by 8: rows of 1 x 3 x 3 columns, 144 cells */
    const uint32_t gwide = (uint32_t)(DCZ_GPU_GROUPED_DENSE_DENSITY * 144) + 1, gnarrow = gwide - 2;
    static const struct { uint32_t groups, hw; int sparse, q, wide; dcz_gpu_kernel want; } cases[] = {
        { 1, 28, 1, 0, 0, DCZ_GK_CONV_IM2COL },      { 1, 4, 1, 0, 0, DCZ_GK_CONV_IM2COL },
        { 1, 28, 1, 0, 1, DCZ_GK_CONV_IM2COL_WIDE }, { 1, 4, 1, 0, 1, DCZ_GK_CONV_IM2COL_WIDE },
        { 8, 4, 1, 0, 0, DCZ_GK_CONV_DIRECT },       { 8, 28, 1, 0, 1, DCZ_GK_CONV_DIRECT_WIDE },
        { 8, 28, 1, 0, 0, DCZ_GK_CONV_DIRECT },      { 8, 4, 1, 0, 1, DCZ_GK_CONV_DIRECT_WIDE },
        { 1, 4, 0, 0, 0, DCZ_GK_CONV_DENSE },        { 1, 28, 0, 0, 0, DCZ_GK_CONV_DENSE },
        { 8, 4, 0, 0, 0, DCZ_GK_CONV_DENSE_DIRECT }, { 8, 28, 0, 0, 0, DCZ_GK_CONV_DENSE_DIRECT },
        { 1, 4, 1, 1, 0, DCZ_GK_QCONV_IM2COL },      { 1, 28, 1, 1, 0, DCZ_GK_QCONV_DIRECT },
        { 8, 4, 1, 1, 0, DCZ_GK_QCONV_DIRECT },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dcz_exec_layer l;
        memset(&l, 0, sizeof l);
        l.op = DCZ_OP_CONV2D;
        l.geom = conv_geom_grouped(8, 16, cases[i].hw, cases[i].hw, 3, 1, 1, cases[i].groups);
        l.sparse = (uint8_t)cases[i].sparse;
        l.q = cases[i].q;
        l.sp.rows = 16;
        l.sp.cols = 8 / cases[i].groups * 9;
        l.sp.step = steps;
        l.sp.entries = cases[i].groups > 1 ? (cases[i].wide ? gwide : gnarrow) : cases[i].wide ? wide : narrow;
        CHECK(dcz_gpu_pick(&l) == cases[i].want, "case %zu: kernel %d, expected %d", i, (int)dcz_gpu_pick(&l),
              (int)cases[i].want);
    }
    /* a launch of DCZ_GPU_DIRECT_MIN_OUTPUTS outputs or more (here 16 x 28 x
     * 28 a sample) takes the dense copy of a wide layer, and the integer
     * direct kernel of one group */
    dcz_exec_layer l;
    memset(&l, 0, sizeof l);
    l.op = DCZ_OP_CONV2D;
    l.sparse = 1;
    l.geom = conv_geom_grouped(8, 16, 28, 28, 3, 1, 1, 1);
    const size_t last = (DCZ_GPU_DIRECT_MIN_OUTPUTS - 1) / (16 * 28 * 28);
    CHECK(!dcz_gpu_dense_copy(&l, DCZ_GK_CONV_IM2COL_WIDE, last) && dcz_gpu_dense_copy(&l, DCZ_GK_CONV_IM2COL_WIDE, last + 1) &&
          dcz_gpu_dense_copy(&l, DCZ_GK_CONV_IM2COL_WIDE, 64) && !dcz_gpu_dense_copy(&l, DCZ_GK_CONV_IM2COL, 1000) &&
          !dcz_gpu_dense_copy(&l, DCZ_GK_CONV_DIRECT, 1000) && dcz_gpu_dense_copy(&l, DCZ_GK_CONV_DIRECT_WIDE, 1),
          "dense copies of a wide convolution");
    CHECK(dcz_gpu_by_patches(&l, DCZ_GK_CONV_IM2COL_WIDE, 1) && dcz_gpu_by_patches(&l, DCZ_GK_CONV_IM2COL_WIDE, 64) &&
          dcz_gpu_by_patches(&l, DCZ_GK_CONV_IM2COL, 1000) && dcz_gpu_by_patches(&l, DCZ_GK_CONV_DENSE, 1000),
          "3x3: by patches, on the dense copy too");
    CHECK(dcz_gpu_by_patches(&l, DCZ_GK_QCONV_DIRECT, 1) && dcz_gpu_by_patches(&l, DCZ_GK_QCONV_DIRECT, last) &&
          !dcz_gpu_by_patches(&l, DCZ_GK_QCONV_DIRECT, last + 1) && dcz_gpu_by_patches(&l, DCZ_GK_QCONV_IM2COL, 1000),
          "int8");
    CHECK(!dcz_gpu_by_patches(&l, DCZ_GK_CONV_DIRECT, 1) && !dcz_gpu_by_patches(&l, DCZ_GK_CONV_DENSE_DIRECT, 1) &&
          !dcz_gpu_by_patches(&l, DCZ_GK_CONV_DIRECT_WIDE, 64), "the direct kinds never");
    /* a pointwise convolution reads its input as it lies: through cuBLAS,
     * and as the one sample's patches at batch 1; a wide one takes its
     * dense copy above batch 1 */
    l.geom = conv_geom_grouped(8, 16, 28, 28, 1, 1, 0, 1);
    CHECK(!dcz_gpu_by_patches(&l, DCZ_GK_CONV_DENSE, 1) && !dcz_gpu_by_patches(&l, DCZ_GK_CONV_IM2COL_WIDE, 1) &&
          !dcz_gpu_by_patches(&l, DCZ_GK_CONV_IM2COL, 1) && !dcz_gpu_by_patches(&l, DCZ_GK_CONV_IM2COL_WIDE, 2) &&
          dcz_gpu_by_patches(&l, DCZ_GK_CONV_IM2COL, 2) && dcz_gpu_by_patches(&l, DCZ_GK_CONV_IM2COL, 64),
          "pointwise");
    CHECK(!dcz_gpu_dense_copy(&l, DCZ_GK_CONV_IM2COL_WIDE, 1) && dcz_gpu_dense_copy(&l, DCZ_GK_CONV_IM2COL_WIDE, 2) &&
          !dcz_gpu_dense_copy(&l, DCZ_GK_CONV_IM2COL, 64), "pointwise: the dense copy above batch 1");
    l.geom.group = 8;
    l.geom.in_c = 8;
    CHECK(!dcz_gpu_by_patches(&l, DCZ_GK_QCONV_DIRECT, 1), "int8 grouped: always direct");
    /* fully connected: the dense copy above batch 1, wide layers only */
    l.op = DCZ_OP_DENSE;
    CHECK(!dcz_gpu_dense_copy(&l, DCZ_GK_SPARSE_FC_WIDE, 1) && dcz_gpu_dense_copy(&l, DCZ_GK_SPARSE_FC_WIDE, 2) &&
          !dcz_gpu_dense_copy(&l, DCZ_GK_SPARSE_FC, 64), "fully connected");
}

static void test_sparse_rows(void)
{
    const uint32_t sizes[][2] = { { 1, 1 }, { 7, 1 }, { 17, 31 }, { 33, 300 }, { 5, 1000 } };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01 };
    const uint32_t codebooks[] = { 2, 256, 0 };
    size_t bad = 0, cases = 0;
    for (size_t si = 0; si < 5; si++)
        for (size_t di = 0; di < 4; di++)
            for (size_t ci = 0; ci < 3; ci++) {
                mat m;
                const uint32_t rows = sizes[si][0], cols = sizes[si][1];
                REQUIRE(make_mat(&m, rows, cols, dens[di], codebooks[ci]), "build");
                const size_t B = 3;
                float *x = malloc(B * cols * sizeof *x), *bias = malloc(rows * sizeof *bias);
                float *ref = malloc(B * rows * sizeof *ref), *y = malloc(B * rows * sizeof *y);
                fill(x, B * cols);
                fill(bias, rows);
                dcz_spmm_ref(&m.sp, bias, x, B, ref);
                const dcz_gsparse gs = gsparse_of(&m.sp);
                for (size_t b = 0; b < B; b++)
                    for (uint32_t r = 0; r < rows; r++) y[b * rows + r] = dcz_gk_sparse_row(&gs, bias, x + b * cols, r);
                bad += memcmp(y, ref, B * rows * sizeof *y) != 0;
                cases++;
                free(x); free(bias); free(ref); free(y);
                free_mat(&m);
            }
    CHECK(bad == 0, "%zu of %zu matrices differ from dcz_spmm_ref", bad, cases);
}

/* The chunk form against the execution form, each on the matrix grid:
 * batch 1 through every lane count a row can take (within 1e-5 of each
 * output's |w x| sum: the lanes add in another order), the batch kernel's
 * body on the transposed input over 70 samples (past a warp's two rounds)
 * bit for bit with dcz_spmm_ref, a ReLU applied after; the fill pads each
 * row with fillers and writes every byte; the lane count rule. */
static void test_chunk_rows(void)
{
    const uint32_t sizes[][2] = { { 1, 1 }, { 7, 1 }, { 17, 31 }, { 33, 300 }, { 5, 1000 }, { 3, 4096 } };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01, 0.09 };
    const uint32_t codebooks[] = { 2, 16, 256, 0 };
    const dcz_act relu = { DCZ_OP_RELU, 0.0f, 0.0f }, none = { 0, 0.0f, 0.0f };
    size_t bad1 = 0, badb = 0, badf = 0, badp = 0, cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t di = 0; di < sizeof dens / sizeof *dens; di++)
            for (size_t ci = 0; ci < sizeof codebooks / sizeof *codebooks; ci++) {
                mat m;
                const uint32_t rows = sizes[si][0], cols = sizes[si][1];
                REQUIRE(make_mat(&m, rows, cols, dens[di], codebooks[ci]), "build");
                dcz_gchunks ch = chunks_of(&m.sp);
                for (uint32_t r = 0; r < rows; r++) {
                    const uint32_t n = m.sp.row_ptr[r + 1] - m.sp.row_ptr[r];
                    badf += ch.cptr[r + 1] - ch.cptr[r] != (n + 7) / 8;
                    for (uint32_t j = n; j < (ch.cptr[r + 1] - ch.cptr[r]) * 8; j++)
                        badf += ch.chunk[(size_t)(ch.cptr[r] + j / 8) * 16 + j % 8] != DCZ_STEP_FILLER;
                }
                const size_t B = 70;
                float *x = malloc(B * cols * sizeof *x), *xt = malloc(B * cols * sizeof *x);
                float *bias = malloc(rows * sizeof *bias), *mag = malloc(rows * sizeof *mag);
                float *ref = malloc(B * rows * sizeof *ref), *magb = malloc(B * rows * sizeof *magb);
                fill(x, B * cols);
                fill(bias, rows);
                for (size_t b = 0; b < B; b++)
                    for (uint32_t c = 0; c < cols; c++) xt[(size_t)c * B + b] = x[b * cols + c];
                dcz_spmm_ref(&m.sp, bias, x, B, ref);
                for (size_t b = 0; b < B; b++)
                    for (uint32_t r = 0; r < rows; r++) {
                        double t = fabs(bias[r]);
                        for (uint32_t c = 0; c < cols; c++)
                            t += fabs((double)m.dense[(size_t)r * cols + c] * x[b * cols + c]);
                        magb[b * rows + r] = (float)t;
                        if (b == 0) mag[r] = (float)t;
                    }
                for (uint32_t G = 1; G <= 32; G <<= 1)
                    for (uint32_t r = 0; r < rows; r++) {
                        const float y = chunk_row_lanes(&ch, G, bias, x, r, none);
                        if (!(fabsf(y - ref[r]) <= 1e-5f * (mag[r] + 1e-6f)) && bad1++ < 3)
                            fprintf(stderr, "  %ux%u k %u lanes %u: row %u = %.8g, reference %.8g\n", rows, cols,
                                    codebooks[ci], G, r, y, ref[r]);
                    }
                /* parts of a row: 3 and 8 warps, within the bound (the parts
                 * add in another order), samples j and j + 32 */
                for (uint32_t parts = 3; parts <= 8; parts += 5)
                    for (uint32_t r = 0; r < rows; r++)
                        for (size_t j = 0; j < 32; j++) {
                            float y[2];
                            chunk_row_parts(&ch, parts, bias, xt, B, j, r, none, y);
                            for (int i = 0; i < 2; i++) {
                                const size_t at = (j + 32 * i) * rows + r;
                                if (!(fabsf(y[i] - ref[at]) <= 1e-5f * (magb[at] + 1e-6f)) && badp++ < 3)
                                    fprintf(stderr, "  %ux%u k %u parts %u: row %u sample %zu = %.8g, ref %.8g\n",
                                            rows, cols, codebooks[ci], parts, r, j + 32 * i, y[i], ref[at]);
                            }
                        }
                dcz_relu_ref(ref, B * rows);
                for (uint32_t r = 0; r < rows; r++)
                    for (size_t j = 0; j < 32; j++) {
                        float y[DCZ_GK_LANE_SAMPLES];
                        chunk_row_parts(&ch, 1, bias, xt, B, j, r, relu, y);
                        badb += memcmp(&y[0], &ref[j * rows + r], sizeof *y) != 0;
                        badb += memcmp(&y[1], &ref[(j + 32) * rows + r], sizeof *y) != 0;
                        if (j + 64 < B) {   /* the next 64 samples' warp */
                            dcz_gk_chunk_row_t(&ch, ch.codebook, bias, xt, B, j + 64, r, relu, y);
                            badb += memcmp(&y[0], &ref[(j + 64) * rows + r], sizeof *y) != 0;
                        }
                    }
                cases++;
                free(x); free(xt); free(bias); free(mag); free(ref); free(magb);
                dcz_gk_chunks_free(&ch);
                free_mat(&m);
            }
    CHECK(badf == 0, "%zu chunk counts or paddings wrong", badf);
    CHECK(bad1 == 0, "%zu batch-1 rows of %zu matrices off dcz_spmm_ref", bad1, cases);
    CHECK(badb == 0, "%zu transposed-batch outputs differ from dcz_spmm_ref", badb);
    CHECK(badp == 0, "%zu outputs of rows in parts off dcz_spmm_ref", badp);
    CHECK(dcz_gk_chunk_group(4096, 4096 * 47) == 32 && dcz_gk_chunk_group(300, 300 * 8) == 16 &&
              dcz_gk_chunk_group(100, 300) == 8 && dcz_gk_chunk_group(10, 40) == 8 &&
              dcz_gk_chunk_group(4096, 4096 * 126) == 32 && dcz_gk_chunk_group(4096, 4096 * 9) == 32 &&
              dcz_gk_chunk_group(4096, 4096 * 8) == 16 && dcz_gk_chunk_group(0, 0) == 8,
          "lanes a row: the power of two at or above twice the mean chunks a row, 8 to 32");
}

/* The pool windows: strided, padded, non-square, one window per plane. */
#define POOL_GEOMS 5
static void pool_geoms(dcz_conv_geom *g)
{
    g[0] = conv_geom(3, 3, 7, 9, 2, 2, 2, 2, 0, 0);
    g[1] = conv_geom(2, 2, 8, 8, 3, 3, 2, 2, 1, 1);
    g[2] = conv_geom(2, 2, 5, 7, 3, 2, 1, 2, 1, 1);
    g[3] = conv_geom(1, 1, 4, 4, 4, 4, 1, 1, 0, 0);
    g[4] = conv_geom(4, 4, 9, 5, 5, 3, 3, 1, 2, 1);
}

static void test_pools(void)
{
    dcz_conv_geom geoms[POOL_GEOMS];
    pool_geoms(geoms);
    size_t bad = 0;
    for (size_t gi = 0; gi < POOL_GEOMS; gi++) {
        const dcz_conv_geom *g = &geoms[gi];
        const size_t B = 2, xin = (size_t)g->in_c * g->in_h * g->in_w, per = (size_t)g->in_c * g->out_h * g->out_w;
        float *x = malloc(B * xin * sizeof *x), *ref = malloc(B * per * sizeof *ref), *y = malloc(B * per * sizeof *y);
        fill(x, B * xin);
        for (int kind = 0; kind < 3; kind++) {   /* max, average, average counting the padding */
            if (kind == 0) dcz_maxpool_ref(g, x, B, ref);
            else dcz_avgpool_ref(g, kind == 2, x, B, ref);
            for (size_t b = 0; b < B; b++)
                for (uint32_t i = 0; i < per; i++) y[b * per + i] = dcz_gk_pool(g, kind > 0, kind == 2, x + b * xin, i);
            if (memcmp(y, ref, B * per * sizeof *y) && bad++ < 3)
                fprintf(stderr, "  pool kind %d, geometry %zu differs\n", kind, gi);
        }
        /* the global mean over each plane */
        const uint32_t plane = g->in_h * g->in_w;
        dcz_global_avgpool_ref(g->in_c, plane, x, B, ref);
        for (size_t p = 0; p < B * g->in_c; p++) y[p] = dcz_mean_one(x + p * plane, plane);
        bad += memcmp(y, ref, B * g->in_c * sizeof *y) != 0;
        free(x); free(ref); free(y);
    }
    CHECK(bad == 0, "%zu pools differ", bad);
}

static void test_elements(void)
{
    enum { N = 513 };
    float x[N], ref[N], y[N];
    for (int i = 0; i < N; i++) x[i] = frand() * 8;
    x[0] = 0.0f;
    x[1] = -0.0f;
    x[2] = INFINITY;
    x[3] = -INFINITY;
    const struct { uint16_t op; float p[2]; } acts[] = {
        { DCZ_OP_CLIP, { 0.0f, 6.0f } }, { DCZ_OP_CLIP, { -1.5f, 0.25f } }, { DCZ_OP_LEAKY_RELU, { 0.1f, 0 } },
        { DCZ_OP_SIGMOID, { 0, 0 } }, { DCZ_OP_TANH, { 0, 0 } }, { DCZ_OP_HARD_SIGMOID, { 0.2f, 0.5f } },
        { DCZ_OP_HARD_SWISH, { 0, 0 } }, { DCZ_OP_SILU, { 0, 0 } },
    };
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        dcz_activation_ref(acts[a].op, acts[a].p, x, N, ref);
        for (int i = 0; i < N; i++) y[i] = dcz_gk_act(acts[a].op, acts[a].p[0], acts[a].p[1], x[i]);
        CHECK(memcmp(y, ref, sizeof y) == 0, "%s differs", dcz_op_name(acts[a].op));
    }
    {   /* the finish of a cuBLAS product: 3 samples of 5 rows of 7, the
         * product laid out as the output and by rows (rows, samples, plane) */
        enum { SB = 3, SR = 5, SP = 7 };
        float c[SB * SR * SP], bias[SR], want[SB * SR * SP], got[SB * SR * SP];
        fill(c, SB * SR * SP);
        fill(bias, SR);
        const dcz_act relu6 = { DCZ_OP_CLIP, 0.0f, 6.0f };
        for (int by_rows = 0; by_rows < 2; by_rows++) {
            for (int b = 0; b < SB; b++)
                for (int r = 0; r < SR; r++)
                    for (int p = 0; p < SP; p++) {
                        const float v = c[by_rows ? (r * SB + b) * SP + p : (b * SR + r) * SP + p] + bias[r];
                        want[(b * SR + r) * SP + p] = v < 0.0f ? 0.0f : v > 6.0f ? 6.0f : v;
                    }
            for (uint64_t t = 0; t < SB * SR * SP; t++) got[t] = dcz_gk_bias_act(c, bias, SB, SR, SP, by_rows, relu6, t);
            CHECK(memcmp(got, want, sizeof got) == 0, "bias and activation after a product (by rows %d) differ", by_rows);
        }
    }
    memcpy(ref, x, sizeof ref);
    dcz_relu_ref(ref, N);
    for (int i = 0; i < N; i++) y[i] = dcz_gk_act(DCZ_OP_RELU, 0, 0, x[i]);
    CHECK(memcmp(y, ref, sizeof y) == 0, "relu differs");
    /* Concat of three inputs of 3, 1 and 5 elements, batch 2 */
    const uint32_t width[3] = { 3, 1, 5 };
    float a[6], b[2], c[10], cat[18], got[18];
    fill(a, 6);
    fill(b, 2);
    fill(c, 10);
    const float *xs[3] = { a, b, c };
    dcz_concat_ref(xs, width, 3, 2, cat);
    for (uint32_t t = 0; t < 18; t++) {
        uint32_t at;
        const uint32_t k = dcz_gk_concat_from(width, 3, t % 9, &at);
        got[t] = xs[k][t / 9 * width[k] + at];
    }
    CHECK(memcmp(got, cat, sizeof got) == 0, "concat differs");
    /* CHANNEL_SHUFFLE of 3 groups of 12 channels of 2 x 3 planes, and
     * SLICE 5..11 of them, batch 2: each output element from where the
     * device's index rule says, against the CPU's copy of the planes */
    enum { C = 12, P = 6 };
    float cx[2 * C * P], cref[2 * C * P], cgot[2 * C * P];
    fill(cx, 2 * C * P);
    for (int op = 0; op < 2; op++) {
        const uint32_t out_c = op ? 7 : C, start = op ? 5 : 0, groups = op ? 1 : 3;
        const dcz_conv_geom g = { .in_c = C, .out_c = out_c, .in_h = 2, .in_w = 3, .out_h = 2, .out_w = 3 };
        dcz_gather_channels_ref(cx, sizeof *cx, C, out_c, P, start, groups, 2, cref);
        for (uint64_t t = 0; t < 2 * out_c * P; t++) cgot[t] = cx[dcz_gk_gather_from(&g, start, groups, t)];
        CHECK(memcmp(cgot, cref, 2 * out_c * P * sizeof *cref) == 0, "%s differs", op ? "slice" : "shuffle");
    }
}

/* ---- the integer region --------------------------------------------------------- */

/* An integer matrix on the "device": its int8 weights beside the int16 ones. */
typedef struct qdev {
    qmat m;
    int8_t *tab, *val;
    dcz_gqsparse gs;
} qdev;

static void make_qdev(qdev *d, uint32_t rows, uint32_t cols, double density, uint32_t k)
{
    make_qmat(&d->m, rows, cols, density, k, 127);
    const size_t nt = k ? (size_t)rows * k : 0, nv = k ? 0 : d->m.sp.entries;
    d->tab = alloc(nt, 1);
    d->val = alloc(nv, 1);
    for (size_t i = 0; i < nt; i++) d->tab[i] = (int8_t)d->m.qtab[i];
    for (size_t i = 0; i < nv; i++) d->val[i] = (int8_t)d->m.qval[i];
    d->gs = (dcz_gqsparse){ rows, cols, k, d->m.row_ptr, d->m.step, d->m.idx, k ? d->tab : NULL, k ? NULL : d->val };
}

static void free_qdev(qdev *d)
{
    free(d->tab);
    free(d->val);
    free_qmat(&d->m);
}

/* x (n) random int8 values (both extremes among them), and their dcz_q twins. */
static void fill_q8(int8_t *x, dcz_q *xq, size_t n)
{
    fill_q(xq, n, 127);
    for (size_t i = 0; i < n; i++) x[i] = (int8_t)xq[i];
}

/* A layer's output constants: biases (within the 32-bit sums), and per
 * channel a multiplier below 2^31 and a shift that lands most sums inside
 * +-127 (some saturate), or float scales. */
typedef struct qconsts {
    int64_t *bias64;
    int32_t *bias, *mult;
    uint8_t *shift;
    double *scale;
} qconsts;

static void make_consts(qconsts *c, uint32_t n)
{
    c->bias64 = alloc(n, sizeof(int64_t));
    c->bias = alloc(n, sizeof(int32_t));
    c->mult = alloc(n, sizeof(int32_t));
    c->shift = alloc(n, 1);
    c->scale = alloc(n, sizeof(double));
    for (uint32_t i = 0; i < n; i++) {
        c->bias[i] = (int32_t)(rnd() % 200001) - 100000;
        c->bias64[i] = c->bias[i];
        c->mult[i] = (int32_t)((1u << 30) + rnd() % (1u << 30));
        c->shift[i] = (uint8_t)(40 + rnd() % 8);
        c->scale[i] = (double)frand() * 1e-3;
    }
}

static void free_consts(qconsts *c)
{
    free(c->bias64); free(c->bias); free(c->mult); free(c->shift); free(c->scale);
}

/* Compares the two finishes of acc (n = batch channels plane; bias already
 * in acc) with run.c's: requant_ref to dcz_q, and acc times scale to float.
 * got8 and gotf are what dcz_gk_qfinish wrote. */
static size_t finish_bad(const qconsts *c, const int64_t *acc, size_t batch, uint32_t channels, uint32_t plane,
                         const int8_t *got8, const float *gotf)
{
    const size_t n = batch * channels * plane;
    dcz_q *want = alloc(n, sizeof(dcz_q));
    const dcz_requant rq = { c->mult, c->shift, 127, NULL };
    dcz_requant_ref(&rq, acc, batch, channels, plane, want);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t ch = (uint32_t)(i / plane % (channels ? channels : 1));
        const float f = (float)((double)acc[i] * c->scale[ch]);
        if (got8[i] != want[i] || memcmp(&gotf[i], &f, sizeof f)) bad++;
    }
    free(want);
    return bad;
}

static void test_int_requant(void)
{
    size_t bad = 0, n = 0;
    const int64_t edge = ((int64_t)1 << 62) - 1;
    for (uint32_t sh = 0; sh <= 62; sh++) {
        /* the rounding shift over its whole domain, ties of both signs */
        const int64_t half = sh ? (int64_t)1 << (sh - 1) : 0;
        const int64_t vs[] = { 0, 1, -1, half, -half, 3 * half, -3 * half, edge, -edge, edge - half, -edge + half };
        for (size_t i = 0; i < sizeof vs / sizeof *vs; i++, n++) bad += dcz_gk_round_shift(vs[i], sh) != dcz_round_shift(vs[i], sh);
        for (int i = 0; i < 200; i++, n++) {
            const int64_t v = (int64_t)(rnd() & (uint64_t)edge) * ((rnd() & 1) ? -1 : 1);
            bad += dcz_gk_round_shift(v, sh) != dcz_round_shift(v, sh);
        }
        /* requantization of 32-bit sums by multipliers below 2^31 */
        for (int i = 0; i < 200; i++, n++) {
            int64_t acc = (int64_t)(rnd() % 0x7fffffffu) * ((rnd() & 1) ? -1 : 1);
            int32_t mult = (int32_t)(rnd() % 0x7fffffffu);
            if (i == 0) acc = 0x7fffffff, mult = 0x7fffffff;
            if (i == 1) acc = -0x7fffffff, mult = 0x7fffffff;
            if (i == 2) mult = 0;
            const uint8_t s8 = (uint8_t)sh;
            const dcz_requant rq = { &mult, &s8, 127, NULL };
            dcz_q want;
            dcz_requant_ref(&rq, &acc, 1, 1, 1, &want);
            bad += dcz_gk_requant(acc, mult, sh, 127) != want;
        }
    }
    CHECK(n > 20000, "only %zu cases", n);
    CHECK(bad == 0, "%zu of %zu rounding shifts and requantizations differ from kernels_int.c", bad, n);
}

static void test_int_rows(void)
{
    const uint32_t sizes[][2] = { { 1, 1 }, { 7, 1 }, { 17, 31 }, { 33, 300 }, { 5, 1000 } };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01 };
    const uint32_t codebooks[] = { 2, 16, 256, 0 };
    size_t bad = 0, cases = 0, fillers = 0;
    for (size_t si = 0; si < 5; si++)
        for (size_t di = 0; di < 4; di++)
            for (size_t ci = 0; ci < 4; ci++) {
                const uint32_t rows = sizes[si][0], cols = sizes[si][1];
                const size_t B = 3;
                qdev d;
                make_qdev(&d, rows, cols, dens[di], codebooks[ci]);
                qconsts c;
                make_consts(&c, rows);
                int8_t *x = alloc(B * cols, 1), *y8 = alloc(B * rows, 1);
                dcz_q *xq = alloc(B * cols, sizeof(dcz_q));
                int64_t *acc = alloc(B * rows, sizeof(int64_t));
                float *yf = alloc(B * rows, sizeof(float));
                fill_q8(x, xq, B * cols);
                dcz_qspmm_ref(&d.m.sp, c.bias64, xq, B, acc);
                dcz_gqout o8 = { c.bias, c.mult, c.shift, NULL, 127, y8 }, of = { c.bias, NULL, NULL, c.scale, 127, yf };
                for (size_t b = 0; b < B; b++)
                    for (uint32_t r = 0; r < rows; r++) {
                        const int32_t sum = dcz_gk_qsparse_row(&d.gs, x + b * cols, r);
                        dcz_gk_qfinish(&o8, r, sum, b * rows + r);
                        dcz_gk_qfinish(&of, r, sum, b * rows + r);
                    }
                bad += finish_bad(&c, acc, B, rows, 1, y8, yf) != 0;
                fillers += d.m.fillers;
                cases++;
                free(x); free(y8); free(xq); free(acc); free(yf);
                free_consts(&c);
                free_qdev(&d);
            }
    CHECK(fillers > 0, "no fillers in the grid");
    CHECK(bad == 0, "%zu of %zu integer matrices differ from dcz_qspmm_ref and dcz_requant_ref", bad, cases);
}

/* The integer convolution on g: direct and by patches, as gpu.c runs them. */
static size_t qconv_case(const dcz_conv_geom *g, double density, uint32_t k)
{
    const uint32_t groups = dcz_conv_groups(g), pixels = g->out_h * g->out_w;
    const uint32_t cols = dcz_conv_group_in(g) * g->kh * g->kw;
    const size_t B = 2, xin = (size_t)g->in_c * g->in_h * g->in_w, yout = (size_t)g->out_c * pixels;
    qdev d;
    make_qdev(&d, g->out_c, cols, density, k);
    qconsts c;
    make_consts(&c, g->out_c);
    int8_t *x = alloc(B * xin, 1), *y8 = alloc(B * yout, 1), *p8 = alloc(B * yout, 1);
    int8_t *col = alloc(B * pixels * cols, 1);
    dcz_q *xq = alloc(B * xin, sizeof(dcz_q));
    int64_t *acc = alloc(B * yout, sizeof(int64_t));
    float *yf = alloc(B * yout, sizeof(float)), *pf = alloc(B * yout, sizeof(float));
    fill_q8(x, xq, B * xin);
    dcz_qconv2d_direct_ref(g, d.m.dense, c.bias64, xq, B, acc);
    dcz_gqout o8 = { c.bias, c.mult, c.shift, NULL, 127, y8 }, of = { c.bias, NULL, NULL, c.scale, 127, yf };
    for (size_t b = 0; b < B; b++)
        for (uint32_t i = 0; i < yout; i++) {
            const int32_t sum = dcz_gk_qconv(g, &d.gs, x + b * xin, i);
            dcz_gk_qfinish(&o8, i / pixels, sum, b * yout + i);
            dcz_gk_qfinish(&of, i / pixels, sum, b * yout + i);
        }
    size_t bad = finish_bad(&c, acc, B, g->out_c, pixels, y8, yf);
    /* the patch path (one group: grouped convolutions run direct): the
     * batch's patches times the rows, each output where dcz_gk_place puts it */
    if (groups == 1) {
        o8.y = p8;
        of.y = pf;
        for (size_t b = 0; b < B; b++)
            for (uint32_t i = 0; i < pixels * cols; i++)
                col[b * pixels * cols + i] = dcz_gk_qim2col(g, x + b * xin, i);
        const dcz_gplace place = { pixels, yout, 1, pixels };
        for (uint32_t j = 0; j < B * pixels; j++)
            for (uint32_t r = 0; r < g->out_c; r++) {
                const int32_t sum = dcz_gk_qsparse_row(&d.gs, col + (size_t)j * cols, r);
                dcz_gk_qfinish(&o8, r, sum, dcz_gk_place(&place, j, r));
                dcz_gk_qfinish(&of, r, sum, dcz_gk_place(&place, j, r));
            }
        bad += finish_bad(&c, acc, B, g->out_c, pixels, p8, pf);
    }
    free(x); free(y8); free(p8); free(col); free(xq); free(acc); free(yf); free(pf);
    free_consts(&c);
    free_qdev(&d);
    return bad;
}

static void test_int_convolutions(void)
{
    const double dens[] = { 0.0, 0.5, 1.0 };
    const uint32_t codebooks[] = { 256, 16, 0 };
    size_t bad = 0, cases = 0;
    dcz_conv_geom g, extra[CONV_EXTRA];
    for (size_t i = 0; conv_grid(i, &g); i++)
        for (size_t di = 0; di < 3; di++)
            for (size_t ci = 0; ci < 3; ci++, cases++) bad += qconv_case(&g, dens[di], codebooks[ci]);
    conv_extra(extra);
    for (size_t i = 0; i < CONV_EXTRA; i++)
        for (size_t ci = 0; ci < 3; ci++, cases += 2) {
            bad += qconv_case(&extra[i], 0.5, codebooks[ci]);
            bad += qconv_case(&extra[i], 0.01, codebooks[ci]);
        }
    CHECK(cases > 150, "only %zu cases", cases);
    CHECK(bad == 0, "%zu integer convolution outputs differ from dcz_qconv2d_direct_ref", bad);
}

static void test_int_pools(void)
{
    dcz_conv_geom geoms[POOL_GEOMS];
    pool_geoms(geoms);
    size_t bad = 0;
    for (size_t gi = 0; gi < POOL_GEOMS; gi++) {
        const dcz_conv_geom *g = &geoms[gi];
        const size_t B = 2, xin = (size_t)g->in_c * g->in_h * g->in_w, per = (size_t)g->in_c * g->out_h * g->out_w;
        int8_t *x = alloc(B * xin, 1);
        dcz_q *xq = alloc(B * xin, sizeof(dcz_q)), *ref = alloc(B * xin, sizeof(dcz_q));
        fill_q8(x, xq, B * xin);
        for (int kind = 0; kind < 3; kind++) {   /* max, average, average counting the padding */
            if (kind == 0) dcz_qmaxpool_ref(g, xq, B, ref);
            else dcz_qavgpool_ref(g, kind == 2, xq, B, ref);
            for (size_t b = 0; b < B; b++)
                for (uint32_t i = 0; i < per; i++)
                    if (dcz_gk_qpool(g, kind > 0, kind == 2, x + b * xin, i) != ref[b * per + i] && bad++ < 3)
                        fprintf(stderr, "  integer pool kind %d, geometry %zu, output %zu differs\n", kind, gi, b * per + i);
        }
        /* the mean of each plane, rounded, and rescaled to another scale */
        const uint32_t plane = g->in_h * g->in_w;
        const int32_t mult = (int32_t)((1u << 30) + rnd() % (1u << 30));
        const uint8_t shift = 36;
        dcz_qglobal_avgpool_ref(g->in_c, plane, xq, B, ref);
        for (size_t p = 0; p < B * g->in_c; p++) bad += dcz_gk_qmean(x + p * plane, plane, 0, 0, 0, 127) != ref[p];
        dcz_qglobal_avgpool_rescale_ref(g->in_c, plane, xq, B, mult, shift, 127, ref);
        for (size_t p = 0; p < B * g->in_c; p++) bad += dcz_gk_qmean(x + p * plane, plane, 1, mult, shift, 127) != ref[p];
        free(x); free(xq); free(ref);
    }
    CHECK(bad == 0, "%zu integer pool outputs differ", bad);
}

static void test_int_elements(void)
{
    enum { N = 517 };
    int8_t a[N], b[N];
    dcz_q aq[N], bq[N], ref[N];
    fill_q8(a, aq, N);
    fill_q8(b, bq, N);
    size_t bad = 0;
    /* Add: each input by its own multiplier and shift (a pure shift too) */
    const int32_t mult[2][2] = { { 1 << 30, 1518500250 }, { 1, 1 } };
    const uint8_t shift[2][2] = { { 31, 30 }, { 1, 0 } };
    for (int v = 0; v < 2; v++) {
        dcz_qadd_ref(aq, bq, N, mult[v], shift[v], 127, ref);
        for (int i = 0; i < N; i++) bad += dcz_gk_qadd(a[i], b[i], mult[v], shift[v], 127) != ref[i];
    }
    /* Mul: x (3 channels of plane 5, batch 2) times a factor per channel */
    enum { C = 3, P = 5 };
    dcz_qmul_ref(aq, bq, 2, C, P, 1518500250, 37, 127, ref);
    for (int i = 0; i < 2 * C * P; i++) bad += dcz_gk_requant((int32_t)a[i] * b[i / P], 1518500250, 37, 127) != ref[i];
    /* Concat: the second input rescaled, the first as it is */
    const uint32_t width[2] = { 4, 7 };
    const dcz_q *xs[2] = { aq, bq };
    const int32_t cm[2] = { 1, 1431655765 };
    const uint8_t cs[2] = { 0, 31 };
    dcz_qconcat_ref(xs, width, 2, 3, cm, cs, 127, ref);
    for (uint32_t t = 0; t < 33; t++) {
        uint32_t at;
        const uint32_t k = dcz_gk_concat_from(width, 2, t % 11, &at);
        const int8_t *src = k ? b : a;
        bad += dcz_gk_requant(src[t / 11 * width[k] + at], cm[k], cs[k], 127) != ref[t];
    }
    CHECK(bad == 0, "%zu Add, Mul and Concat outputs differ from kernels_int.c", bad);
    /* the input's quantization: half away from zero, NaN 0, clamped */
    const struct { float x, s; int32_t want; } qc[] = {
        { 0.5f, 1.0f, 1 }, { -0.5f, 1.0f, -1 }, { 1.5f, 1.0f, 2 }, { -2.5f, 1.0f, -3 }, { 0.49999997f, 1.0f, 0 },
        { 0.3f, 0.1f, 3 }, { 12.7f, 0.1f, 127 }, { 1000.0f, 0.1f, 127 }, { -1000.0f, 0.1f, -127 },
        { NAN, 0.5f, 0 }, { INFINITY, 0.5f, 127 }, { -INFINITY, 0.5f, -127 }, { -0.0f, 0.25f, 0 },
    };
    for (size_t i = 0; i < sizeof qc / sizeof *qc; i++)
        CHECK(dcz_gk_quantize(qc[i].x, qc[i].s, 127) == qc[i].want, "quantize(%g / %g) = %d, want %d", (double)qc[i].x,
              (double)qc[i].s, dcz_gk_quantize(qc[i].x, qc[i].s, 127), qc[i].want);
}

int main(void)
{
    RUN(test_convolutions);
    RUN(test_pick);
    RUN(test_sparse_rows);
    RUN(test_chunk_rows);
    RUN(test_pools);
    RUN(test_elements);
    RUN(test_int_requant);
    RUN(test_int_rows);
    RUN(test_int_convolutions);
    RUN(test_int_pools);
    RUN(test_int_elements);
    return check_summary();
}
