/* test_kernels.c: the runtime's kernels against their references.
 *
 * Matrix kernels: random matrices (values never zero where stored) at
 * densities 0, 0.5 and 1, odd sizes, rows wider than one step byte can span
 * (so fillers occur), codebooks of 2 and 256 entries and fp32 values; batch
 * 1 (SpMV) and batch 7 (SpMM). The reference is a dense product in double;
 * fp32 results must agree within 1e-5 relative to the sum of |w x| terms.
 *
 * Convolution kernels: dcz_conv2d_direct_ref is first checked on small
 * hand-computed cases, then every other convolution (direct sparse, im2col
 * + SpMM vectorized and reference, dense direct) is compared with it over a grid: kernels 1, 3, 5
 * and non-square, strides 1 and 2, padding 0 and 1, odd image sizes,
 * densities 0, 0.5 and 1 (and 0.01 on rows wide enough for fillers),
 * 8-bit codebook and fp32 weights, batch 1 and 7, random never-zero data;
 * within 1e-5 relative to the sum of |w x| terms (computed by the reference
 * on absolute values). Pooling kernels are checked on hand-computed cases,
 * with and without padding, at batch 2.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/dense.h"
#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/cpu/isa.h"
#include "runtime/model.h"
#include "tests/check.h"
#define TEST_RNG_SEED 12345
#include "tests/unit/test_util.h"
#include "tests/unit/conv_geom.h"
#include "tests/unit/sparse_mat.h"


/* Outputs of got and want whose bits differ, NaNs of either sign or
 * payload counting as equal: a NaN's sign after an activation that passes
 * it through (SiLU) is the C compiler's choice of operand order. */
static size_t differ_but_nan(const float *got, const float *want, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += memcmp(&got[i], &want[i], sizeof *got) != 0 && !(isnan(got[i]) && isnan(want[i]));
    return bad;
}

static void compare(const char *what, const mat *m, const float *bias, const float *x,
                    size_t batch, const float *y)
{
    size_t bad = 0;
    for (size_t b = 0; b < batch; b++)
        for (uint32_t r = 0; r < m->rows; r++) {
            double ref = bias[r], mag = fabs(bias[r]);
            for (uint32_t c = 0; c < m->cols; c++) {
                double t = (double)m->dense[(size_t)r * m->cols + c] * x[b * m->cols + c];
                ref += t;
                mag += fabs(t);
            }
            double got = y[b * m->rows + r];
            if (fabs(got - ref) > 1e-5 * (mag + 1)) {
                if (bad++ < 3)
                    fprintf(stderr, "  %s %ux%u batch %zu: y[%zu][%u] = %.8g, reference %.8g\n",
                            what, m->rows, m->cols, batch, b, r, got, ref);
            }
        }
    CHECK(bad == 0, "%s: %zu mismatches", what, bad);
}

static void run_grid(uint32_t k)
{
    const uint32_t sizes[][2] = { { 1, 1 }, { 1, 7 }, { 7, 1 }, { 3, 5 }, { 17, 31 },
                                  { 33, 300 }, { 5, 1000 }, { 64, 64 } };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01 };
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t di = 0; di < sizeof dens / sizeof *dens; di++) {
            mat m;
            uint32_t rows = sizes[si][0], cols = sizes[si][1];
            REQUIRE(make_mat(&m, rows, cols, dens[di], k), "build %ux%u", rows, cols);
            const size_t B = 7;
            float *x = malloc(B * cols * sizeof(float)), *y = malloc(B * rows * sizeof(float));
            float *bias = malloc(rows * sizeof(float));
            for (size_t i = 0; i < B * cols; i++) x[i] = frand();
            for (uint32_t i = 0; i < rows; i++) bias[i] = frand();
            dcz_spmv_ref(&m.sp, bias, x, y);
            compare("spmv", &m, bias, x, 1, y);
            dcz_spmm_ref(&m.sp, bias, x, B, y);
            compare("spmm", &m, bias, x, B, y);
            /* the dense kernel on the same weights */
            dcz_dense_f32_ref(m.dense, bias, x, B, cols, rows, y);
            compare("dense", &m, bias, x, B, y);
            free(x); free(y); free(bias);
            free_mat(&m);
        }
}

static void test_codebook_2(void) { run_grid(2); }
static void test_codebook_256(void) { run_grid(256); }
static void test_fp32_values(void) { run_grid(0); }

/* fillers: a row whose only weight sits far to the right */
static void test_fillers(void)
{
    const uint32_t cols = 1000;
    for (uint32_t at = 250; at < 780; at += 11) {
        /* build by hand: row 1 has weights at 0 and at `at` */
        uint32_t row_ptr[3];
        uint8_t step[16], idx[16], src[2] = { 1, 3 };
        dcz_sparse_builder b;
        memset(&b, 0, sizeof b);
        b.rows = 2; b.cols = cols; b.row_ptr = row_ptr; b.step = step; b.cap = 16;
        b.idx_dst = idx; b.idx_src = src;
        row_ptr[0] = 0;
        REQUIRE(dcz_sparse_builder_add(&b, 0, cols + 0) == DCZ_OK, "add");
        REQUIRE(dcz_sparse_builder_add(&b, 1, cols + at) == DCZ_OK, "add");
        dcz_sparse_builder_finish(&b);
        CHECK(b.entries == 2 + at / 255, "at %u: %u entries", at, b.entries);
        float cb[4] = { 0.5f, 2.0f, -1.0f, 3.0f }, x[1000], y[2];
        for (uint32_t i = 0; i < cols; i++) x[i] = (float)i;
        dcz_sparse s = { .rows = 2, .cols = cols, .entries = b.entries, .row_ptr = row_ptr,
                         .step = step, .idx = idx, .codebook = cb, .k = 4 };
        dcz_spmv_ref(&s, NULL, x, y);
        CHECK(y[0] == 0.0f && y[1] == 3.0f * (float)at, "at %u: y = %g %g", at, y[0], y[1]);
    }
    /* positions out of order are refused */
    uint32_t row_ptr[3];
    uint8_t step[8];
    dcz_sparse_builder b;
    memset(&b, 0, sizeof b);
    b.rows = 2; b.cols = 10; b.row_ptr = row_ptr; b.step = step; b.cap = 8;
    row_ptr[0] = 0;
    CHECK(dcz_sparse_builder_add(&b, 0, 15) == DCZ_OK, "first");
    CHECK(dcz_sparse_builder_add(&b, 1, 12) == DCZ_ERR_FORMAT, "backwards refused");
    CHECK(dcz_sparse_builder_add(&b, 1, 25) == DCZ_ERR_FORMAT, "past the end refused");
}

static void test_relu_softmax(void)
{
    float v[6] = { -1.0f, 0.0f, 2.0f, NAN, -0.0f, 3.5f };
    dcz_relu_ref(v, 6);
    CHECK(v[0] == 0 && v[1] == 0 && v[2] == 2 && v[3] == 0 && v[5] == 3.5f, "relu");
    float s[6] = { 1, 2, 3, 1000, 1000, 1000 };
    dcz_softmax_ref(s, 2, 3);
    double e = exp(1.0) + exp(2.0) + exp(3.0);
    CHECK(fabs(s[2] - exp(3.0) / e) < 1e-6, "softmax %g", s[2]);
    CHECK(fabs(s[3] - 1.0 / 3) < 1e-6 && !isnan(s[4]), "softmax of large logits");
}


/* the activations, on values worked out by hand */
static void test_activations(void)
{
    const float x[5] = { -8.0f, -1.0f, 0.0f, 0.5f, 7.0f };
    float y[5], p[2];
    p[0] = 0.0f; p[1] = 6.0f;
    dcz_activation_ref(DCZ_OP_CLIP, p, x, 5, y);
    CHECK(y[0] == 0 && y[1] == 0 && y[3] == 0.5f && y[4] == 6.0f, "clip to [0, 6]");
    p[0] = 0.125f;
    dcz_activation_ref(DCZ_OP_LEAKY_RELU, p, x, 5, y);
    CHECK(y[0] == -1.0f && y[1] == -0.125f && y[2] == 0 && y[4] == 7.0f, "leaky relu");
    dcz_activation_ref(DCZ_OP_SIGMOID, p, x, 5, y);
    CHECK(fabs(y[2] - 0.5) < 1e-7 && fabs(y[1] - 1 / (1 + exp(1.0))) < 1e-7 && y[0] > 0, "sigmoid");
    dcz_activation_ref(DCZ_OP_TANH, p, x, 5, y);
    CHECK(fabs(y[3] - tanh(0.5)) < 1e-7 && y[2] == 0, "tanh");
    p[0] = 0.25f; p[1] = 0.5f;
    dcz_activation_ref(DCZ_OP_HARD_SIGMOID, p, x, 5, y);
    CHECK(y[0] == 0 && y[1] == 0.25f && y[2] == 0.5f && y[3] == 0.625f && y[4] == 1.0f, "hard sigmoid");
    dcz_activation_ref(DCZ_OP_HARD_SWISH, p, x, 5, y);
    CHECK(y[0] == 0 && fabs(y[1] + 1.0 / 3) < 1e-7 && y[2] == 0 && fabs(y[3] - 0.5 * (3.5 / 6)) < 1e-7 &&
          y[4] == 7.0f, "hard swish %g %g", y[1], y[3]);
    float v[5];
    memcpy(v, x, sizeof v);
    dcz_activation_ref(DCZ_OP_TANH, p, v, 5, v);
    CHECK(fabs(v[4] - tanh(7.0)) < 1e-7, "in place");
    /* SILU x / (1 + e^-x), in double from the definition, out to where e^x
     * and e^-x overflow a float (|x| > 88.7) and beyond */
    const float sx[12] = { -1000.0f, -150.0f, -88.0f, -20.0f, -1.0f, -0.0f, 0.0f, 0.25f, 3.0f, 89.0f, 500.0f, 3e38f };
    float sy[12];
    dcz_activation_ref(DCZ_OP_SILU, p, sx, 12, sy);
    int silu_ok = 1;
    for (int i = 0; i < 12; i++) {
        const double t = sx[i] / (1 + exp(-(double)sx[i]));
        const int ok = isfinite(sy[i]) && fabs(sy[i] - t) <= 1e-6 * fabs(t) + 1e-45;
        if (!ok) fprintf(stderr, "  silu(%g) = %g, expected %g\n", (double)sx[i], (double)sy[i], t);
        silu_ok &= ok;
    }
    CHECK(silu_ok, "silu");
    CHECK(sy[0] == 0 && sy[11] == 3e38f && sy[6] == 0 && signbit(sy[5]), "silu at the ends and at 0");
    memcpy(v, x, sizeof v);
    dcz_activation_ref(DCZ_OP_SILU, p, v, 5, v);
    CHECK(fabs(v[1] + 1 / (1 + exp(1.0))) < 1e-7 && fabs(v[4] - 7 / (1 + exp(-7.0))) < 1e-6, "silu in place");
}

/* ---- convolution ---------------------------------------------------------- */


static int near_all(const float *got, const float *ref, size_t n, float tol)
{
    for (size_t i = 0; i < n; i++)
        if (fabsf(got[i] - ref[i]) > tol) return 0;
    return 1;
}

/* the reference itself, on cases worked out by hand */
static void test_conv_ref_by_hand(void)
{
    float x[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }; /* (1, 3, 3) */
    float y[8];
    /* 2x2 kernel, no padding: y = sum of w * window, plus bias */
    dcz_conv_geom g = conv_geom(1, 1, 3, 3, 2, 2, 1, 1, 0, 0);
    float w[4] = { 1, 2, 3, 4 }, bias = 0.5f;
    dcz_conv2d_direct_ref(&g, w, &bias, x, 1, y);
    float want[4] = { 37.5f, 47.5f, 67.5f, 77.5f };
    CHECK(g.out_h == 2 && g.out_w == 2 && near_all(y, want, 4, 0), "2x2: %g %g %g %g", y[0], y[1], y[2], y[3]);
    /* 3x3 ones, stride 2, padding 1: each output sums its window's cells inside */
    g = conv_geom(1, 1, 3, 3, 3, 3, 2, 2, 1, 1);
    float ones[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    dcz_conv2d_direct_ref(&g, ones, NULL, x, 1, y);
    float want2[4] = { 12, 16, 24, 28 };
    CHECK(g.out_h == 2 && near_all(y, want2, 4, 0), "padded: %g %g %g %g", y[0], y[1], y[2], y[3]);
    /* 1x1 kernel mixes channels: 2 in, 2 out, batch 2 */
    g = conv_geom(2, 2, 1, 2, 1, 1, 1, 1, 0, 0);
    float w3[4] = { 1, 10, -1, 2 };       /* (out 2, in 2) */
    float x3[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }; /* (2, 2, 1, 2) */
    dcz_conv2d_direct_ref(&g, w3, NULL, x3, 2, y);
    float want3[8] = { 31, 42, 5, 6, 75, 86, 9, 10 };
    CHECK(near_all(y, want3, 8, 0), "1x1: %g %g %g %g %g %g %g %g", y[0], y[1], y[2], y[3], y[4], y[5],
          y[6], y[7]);
}

static void fill_nonzero(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = nonzero();
}

static void absolute(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = fabsf(src[i]);
}

/* Mismatches between got and ref beyond 1e-5 of each output's |w x| sum. */
static size_t conv_mismatches(const char *what, const dcz_conv_geom *g, size_t batch,
                              const float *got, const float *ref, const float *mag)
{
    const size_t n = batch * g->out_c * g->out_h * g->out_w;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - ref[i]) <= 1e-5f * (mag[i] + 1e-6f))) {
            if (bad++ < 3)
                fprintf(stderr, "  %s in %ux%ux%u out %ux%ux%u k %ux%u s %u,%u p %u,%u batch %zu: "
                        "y[%zu] = %.8g, reference %.8g\n", what, g->in_c, g->in_h, g->in_w,
                        g->out_c, g->out_h, g->out_w, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw,
                        batch, i, got[i], ref[i]);
        }
    return bad;
}

typedef struct conv_tally {
    size_t cases, direct, im2col, dense, variant, variants;
    size_t shift, shift_gemm, shift_variants, shift_act, shift_res, shift_res_runs, shift_res_store;
    size_t pooled, pooled_runs, pooled_dw, dw_whole;
    size_t forms, form_diff;   /* shift forms of every weight, from the two sources */
    dcz_pool *pools[2];   /* of 2 and 3 threads */
} conv_tally;

/* One geometry and weight set: every kernel against the reference, batch 1
 * and 7. */
static int conv_case(const dcz_conv_geom *g, double density, uint32_t k, conv_tally *t)
{
    mat m;
    const uint32_t cols = dcz_conv_group_in(g) * g->kh * g->kw;
    if (!make_mat(&m, g->out_c, cols, density, k)) return 0;
    const size_t B = 7, xin = (size_t)g->in_c * g->in_h * g->in_w;
    const size_t yout = (size_t)g->out_c * g->out_h * g->out_w, nw = (size_t)g->out_c * cols;
    float *x = malloc(B * xin * sizeof(float)), *xa = malloc(B * xin * sizeof(float));
    float *wa = malloc(nw * sizeof(float)), *bias = malloc(g->out_c * sizeof(float));
    float *ba = malloc(g->out_c * sizeof(float)), *ref = malloc(B * yout * sizeof(float));
    float *mag = malloc(B * yout * sizeof(float)), *y = malloc(B * yout * sizeof(float));
    float *scratch = malloc(dcz_conv2d_im2col_floats(g) * sizeof(float));
    float *sscratch = malloc(dcz_shift_scratch_floats(g) * sizeof(float)), *y2 = malloc(B * yout * sizeof(float));
    float *res = malloc(B * yout * sizeof(float));
    /* the shift form in blocks of 1, 2 and 4 channels, from the execution
     * form and from the dense weights */
    void *smem[3], *smemd[3];
    dcz_shift sfs[3], sfds[3];
    for (uint32_t i = 0; i < 3; i++) {
        /* (a block stays within a group) */
        const uint32_t per_group = g->out_c / dcz_conv_groups(g);
        const uint32_t ob = dcz_conv_groups(g) > 1 && per_group % (1u << i) ? 1 : 1u << i;
        smem[i] = malloc(dcz_shift_bytes(g, m.nnz, ob));
        smemd[i] = malloc(dcz_shift_bytes(g, nw, ob));
        dcz_shift_build(g, &m.sp, NULL, ob, smem[i], &sfs[i]);
        dcz_shift_build(g, NULL, m.dense, ob, smemd[i], &sfds[i]);
        /* every weight kept: the merge of the execution form's rows and the
         * dense weights' own path give the same form, word for word */
        if (m.nnz == nw) {
            const dcz_shift *a = &sfs[i], *d = &sfds[i];
            const uint32_t blocks = (g->out_c + ob - 1) / ob, n = a->ptr[blocks];
            t->forms++;
            t->form_diff += memcmp(a->ptr, d->ptr, (blocks + 1) * sizeof *a->ptr) != 0 || d->ptr[blocks] != n ||
                            memcmp(a->off, d->off, n * sizeof *a->off) != 0 ||
                            memcmp(a->w, d->w, (size_t)n * ob * sizeof *a->w) != 0 || a->whole != d->whole;
        }
    }
    fill_nonzero(x, B * xin);
    fill_nonzero(bias, g->out_c);
    absolute(xa, x, B * xin);
    absolute(wa, m.dense, nw);
    absolute(ba, bias, g->out_c);
    const size_t batches[2] = { 1, B };
    for (int bi = 0; bi < 2; bi++) {
        const size_t b = batches[bi];
        dcz_conv2d_direct_ref(g, m.dense, bias, x, b, ref);
        dcz_conv2d_direct_ref(g, wa, ba, xa, b, mag);
        dcz_conv2d_sparse_direct(g, &m.sp, bias, x, b, y);
        t->direct += conv_mismatches("sparse direct", g, b, y, ref, mag);
        if (dcz_conv_groups(g) == 1) {   /* im2col runs ungrouped convolutions only */
            dcz_conv2d_sparse_im2col(g, &m.sp, bias, x, b, 0, scratch, y);
            t->im2col += conv_mismatches("sparse im2col", g, b, y, ref, mag);
            dcz_conv2d_sparse_im2col(g, &m.sp, bias, x, b, 1, scratch, y);
            t->im2col += conv_mismatches("sparse im2col (reference spmm)", g, b, y, ref, mag);
            for (int r = 0; r < 2; r++) {
                dcz_conv2d_dense_im2col(g, m.dense, bias, x, b, r, scratch, y);
                t->dense += conv_mismatches(r ? "dense im2col (reference)" : "dense im2col", g, b, y, ref, mag);
                /* a sample gives the same bits at any batch */
                if (b > 1) {
                    dcz_conv2d_dense_im2col(g, m.dense, bias, x + (b - 1) * xin, 1, r, scratch, mag);
                    t->dense += memcmp(mag, y + (b - 1) * yout, yout * sizeof(float)) != 0;
                    dcz_conv2d_direct_ref(g, wa, ba, xa, b, mag);
                }
            }
        }
        dcz_conv2d_dense(g, m.dense, bias, x, b, y);
        t->dense += conv_mismatches("dense direct", g, b, y, ref, mag);
        /* the shift form, built from the execution form and from the dense
         * weights: its reference and best variant near the reference
         * convolution; from the execution form, the dense product's bits on
         * the weights expanded; every vector variant the reference's bits */
        for (int form = 0; form < 6; form++) {
            const int from_dense = form >= 3;
            const dcz_shift *f = from_dense ? &sfds[form - 3] : &sfs[form];
            /* an output left unwritten shows, and a cell of the split input (NaN) */
            const size_t sfloats = dcz_shift_scratch_floats(g);
            for (int r = 0; r < 2; r++) {
                memset(y, 0xA5, b * yout * sizeof(float));
                memset(sscratch, 0xFF, sfloats * sizeof(float));
                dcz_conv2d_shift(g, f, bias, x, b, r, sscratch, y);
                t->shift += conv_mismatches(r ? "shift (reference)" : "shift", g, b, y, ref, mag);
            }
            if (!from_dense && dcz_conv_groups(g) == 1) {
                dcz_conv2d_dense_im2col(g, m.dense, bias, x, b, 1, scratch, y2);
                t->shift_gemm += memcmp(y, y2, b * yout * sizeof(float)) != 0;
            }
            const dcz_isa sisas[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2, DCZ_ISA_NEON };
            memset(sscratch, 0xFF, sfloats * sizeof(float));
            dcz_conv2d_shift_isa(DCZ_ISA_REF, g, f, bias, x, b, sscratch, y2);
            for (size_t i = 0; i < 3; i++) {
                memset(y, 0xA5, b * yout * sizeof(float));
                memset(sscratch, 0xFF, sfloats * sizeof(float));
                if (!dcz_conv2d_shift_isa(sisas[i], g, f, bias, x, b, sscratch, y)) continue;
                t->variant += memcmp(y, y2, b * yout * sizeof(float)) != 0;
                t->shift_variants++;
            }
            /* split over a pool's threads (the map's channel blocks, the
             * depthwise kernels' channels, the lanes kernel's blocks each in
             * a slice of the scratch): the bits of one thread */
            dcz_conv2d_shift(g, f, bias, x, b, 0, sscratch, y2);
            for (int p = 0; p < 2; p++) {
                const dcz_act none = { 0, 0.0f, 0.0f };
                memset(y, 0xA5, b * yout * sizeof(float));
                memset(sscratch, 0xFF, sfloats * sizeof(float));
                dcz_conv2d_shift_pool(t->pools[p], g, f, bias, x, b, &none, NULL, sscratch, y);
                t->pooled += memcmp(y, y2, b * yout * sizeof(float)) != 0;
                t->pooled_runs++;
                t->pooled_dw += dcz_conv2d_shift_depthwise(g, f) != NULL;
                /* the rows kernel by whole windows (AVX-512) */
                const char *dwk = dcz_conv2d_shift_depthwise(g, f), *var = dcz_conv2d_shift_variant();
                t->dw_whole += dwk && !strcmp(dwk, "rows") && var && !strcmp(var, "avx512") &&
                               dcz_shift_dw_full_takes(g);
            }
            /* an activation taken on the way out: the bits of the activation
             * run over the output (ReLU, ReLU6, a clip around 0, SiLU,
             * HardSwish), on an input with a NaN and an infinity, so some
             * outputs are NaN or infinite */
            const dcz_act acts[] = { { DCZ_OP_RELU, 0.0f, 0.0f }, { DCZ_OP_CLIP, 0.0f, 6.0f },
                                     { DCZ_OP_CLIP, -0.25f, 0.5f }, { DCZ_OP_SILU, 0.0f, 0.0f },
                                     { DCZ_OP_HARD_SWISH, 0.0f, 0.0f } };
            const float keep0 = x[0], keep1 = x[b * xin - 1];
            x[0] = NAN;
            x[b * xin - 1] = -INFINITY;
            for (size_t a = 0; a < 5; a++) {
                dcz_conv2d_shift(g, f, bias, x, b, 0, sscratch, y2);
                if (acts[a].op == DCZ_OP_RELU) dcz_relu(y2, b * yout, y2);
                else if (acts[a].op == DCZ_OP_SILU || acts[a].op == DCZ_OP_HARD_SWISH)
                    dcz_activation_ref(acts[a].op, NULL, y2, b * yout, y2);
                else dcz_clip(acts[a].lo, acts[a].hi, y2, b * yout, y2);
                memset(y, 0xA5, b * yout * sizeof(float));
                dcz_conv2d_shift_act(g, f, bias, x, b, &acts[a], NULL, sscratch, y);
                t->shift_act += differ_but_nan(y, y2, b * yout) != 0;
            }
            /* the ADD after it taken too: act(conv + res) on every variant,
             * with res apart and res in y's place, the bits of the
             * reference convolution, dcz_add_ref and the activation after */
            fill_nonzero(res, b * yout);
            for (size_t a = 1; a < 6; a += 4) {   /* ReLU6, and no activation */
                const dcz_act none = { 0, 0.0f, 0.0f }, *act = a < 5 ? &acts[a] : &none;
                dcz_conv2d_shift_isa(DCZ_ISA_REF, g, f, bias, x, b, sscratch, y2);
                dcz_add_ref(y2, res, b * yout, y2);
                if (act->op == DCZ_OP_RELU) dcz_relu(y2, b * yout, y2);
                else if (act->op == DCZ_OP_CLIP) dcz_clip(act->lo, act->hi, y2, b * yout, y2);
                const dcz_isa risas[] = { DCZ_ISA_REF, DCZ_ISA_AVX512, DCZ_ISA_AVX2, DCZ_ISA_NEON };
                for (size_t i = 0; i < 4; i++)
                    for (int inplace = 0; inplace < 2; inplace++) {
                        if (inplace) memcpy(y, res, b * yout * sizeof(float));
                        else memset(y, 0xA5, b * yout * sizeof(float));
                        if (!dcz_conv2d_shift_act_isa(risas[i], g, f, bias, x, b, act, inplace ? y : res,
                                                      sscratch, y))
                            continue;
                        t->shift_res += memcmp(y, y2, b * yout * sizeof(float)) != 0;
                        t->shift_res_runs++;
                        t->shift_res_store += risas[i] == DCZ_ISA_AVX512;
                    }
            }
            x[0] = keep0;
            x[b * xin - 1] = keep1;
        }
        /* every vector variant gives the scalar rows' bits */
        const dcz_isa isas[] = { DCZ_ISA_AVX2, DCZ_ISA_NEON };
        for (size_t i = 0; i < 2; i++) {
            if (!dcz_conv2d_sparse_direct_isa(isas[i], g, &m.sp, bias, x, b, y)) continue;
            dcz_conv2d_sparse_direct_isa(DCZ_ISA_REF, g, &m.sp, bias, x, b, mag);
            t->variant += memcmp(y, mag, b * yout * sizeof(float)) != 0;
            dcz_conv2d_dense_isa(isas[i], g, m.dense, bias, x, b, y);
            dcz_conv2d_dense_isa(DCZ_ISA_REF, g, m.dense, bias, x, b, mag);
            t->variant += memcmp(y, mag, b * yout * sizeof(float)) != 0;
            t->variants++;
        }
        t->cases++;
    }
    free(x); free(xa); free(wa); free(bias); free(ba); free(ref); free(mag); free(y); free(scratch);
    free(sscratch); free(y2); free(res);
    for (int i = 0; i < 3; i++) { free(smem[i]); free(smemd[i]); }
    free_mat(&m);
    return 1;
}

/* A grouped convolution is its groups' ungrouped convolutions side by side:
 * the reference on groups 2 and depthwise, against the reference run once
 * per group on that group's channels, bit for bit. */
static void test_conv_groups_ref(void)
{
    const uint32_t cases[][4] = { /* in_c, out_c, groups, stride */
        { 4, 6, 2, 1 }, { 6, 6, 6, 1 }, { 6, 12, 6, 2 }, { 3, 3, 3, 2 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const uint32_t in_c = cases[c][0], out_c = cases[c][1], G = cases[c][2], st = cases[c][3];
        const dcz_conv_geom g = conv_geom_grouped(in_c, out_c, 7, 6, 3, st, 1, G);
        const dcz_conv_geom g1 = conv_geom(in_c / G, out_c / G, 7, 6, 3, 3, st, st, 1, 1);
        const size_t B = 2, plane = 7 * 6, oplane = (size_t)g.out_h * g.out_w;
        const size_t nw = (size_t)out_c * (in_c / G) * 9;
        float *x = malloc(B * in_c * plane * sizeof(float)), *w = malloc(nw * sizeof(float));
        float *bias = malloc(out_c * sizeof(float)), *y = malloc(B * out_c * oplane * sizeof(float));
        float *xs = malloc(B * (in_c / G) * plane * sizeof(float));
        float *ys = malloc(B * (out_c / G) * oplane * sizeof(float));
        fill_nonzero(x, B * in_c * plane);
        fill_nonzero(w, nw);
        fill_nonzero(bias, out_c);
        dcz_conv2d_direct_ref(&g, w, bias, x, B, y);
        size_t bad = 0;
        for (uint32_t gi = 0; gi < G; gi++) {
            const uint32_t ci = in_c / G, co = out_c / G;
            for (size_t b = 0; b < B; b++)
                memcpy(xs + b * ci * plane, x + (b * in_c + gi * ci) * plane, ci * plane * sizeof(float));
            dcz_conv2d_direct_ref(&g1, w + (size_t)gi * co * ci * 9, bias + gi * co, xs, B, ys);
            for (size_t b = 0; b < B; b++)
                bad += memcmp(ys + b * co * oplane, y + (b * out_c + gi * co) * oplane,
                              co * oplane * sizeof(float)) != 0;
        }
        CHECK(bad == 0, "in %u out %u groups %u: %zu groups differ", in_c, out_c, G, bad);
        free(x); free(w); free(bias); free(y); free(xs); free(ys);
    }
}

static void test_conv_grid(void)
{
    const double dens[] = { 0.0, 0.5, 1.0 };
    const uint32_t codebooks[] = { 256, 0 }; /* 8-bit codebook, fp32 values */
    conv_tally t = { 0 };
    REQUIRE(dcz_pool_start(2, &t.pools[0]) == DCZ_OK && dcz_pool_start(3, &t.pools[1]) == DCZ_OK, "pools");
    dcz_conv_geom g, extra[CONV_EXTRA];
    for (size_t i = 0; conv_grid(i, &g); i++)
        for (size_t di = 0; di < 3; di++)
            for (size_t ci = 0; ci < 2; ci++) REQUIRE(conv_case(&g, dens[di], codebooks[ci], &t), "build");
    conv_extra(extra);
    for (size_t i = 0; i < CONV_EXTRA; i++)
        for (size_t ci = 0; ci < 2; ci++) {
            REQUIRE(conv_case(&extra[i], 0.5, codebooks[ci], &t), "build");
            REQUIRE(conv_case(&extra[i], 0.01, codebooks[ci], &t), "build");
            /* depthwise ones with every cell kept too: the AVX-512 rows
             * kernel's whole windows */
            const int dw = extra[i].group == extra[i].in_c && extra[i].out_c == extra[i].in_c;
            if (dw) REQUIRE(conv_case(&extra[i], 1.0, codebooks[ci], &t), "build");
        }
    CHECK(t.cases > 250, "only %zu cases", t.cases);
    CHECK(t.direct == 0, "sparse direct: %zu mismatches", t.direct);
    CHECK(t.im2col == 0, "sparse im2col: %zu mismatches", t.im2col);
    CHECK(t.dense == 0, "dense direct: %zu mismatches", t.dense);
    CHECK(t.shift == 0, "shift: %zu mismatches", t.shift);
    CHECK(t.form_diff == 0 && t.forms > 50, "shift forms of dense weights: %zu of %zu differ from the merged rows'",
          t.form_diff, t.forms);
    CHECK(t.shift_gemm == 0, "shift: %zu cases differ from the dense product on the weights expanded", t.shift_gemm);
    CHECK(t.variant == 0, "vector convolutions: %zu cases differ from the scalar rows", t.variant);
    CHECK(t.shift_variants > 0 || !dcz_conv2d_shift_variant(), "no vector shift kernel ran");
    CHECK(t.shift_act == 0, "shift with an activation: %zu cases differ from the activation run after", t.shift_act);
    CHECK(t.shift_res == 0 && t.shift_res_runs > 0,
          "shift with a residual: %zu of %zu runs differ from the add and the activation run after", t.shift_res,
          t.shift_res_runs);
    CHECK(t.shift_res_store > 0 || !dcz_isa_supported(DCZ_ISA_AVX512), "no residual added in the AVX-512 stores");
    CHECK(t.pooled == 0 && t.pooled_runs > 0, "shift over 2 and 3 threads: %zu of %zu runs differ from one thread's",
          t.pooled, t.pooled_runs);
    const char *sv = dcz_conv2d_shift_variant();   /* the depthwise kernels are x86's */
    CHECK(t.pooled_dw > 0 || !sv || !strcmp(sv, "neon"), "no depthwise kernel ran over threads");
    CHECK(t.dw_whole >= 10 || !sv || strcmp(sv, "avx512"), "the depthwise rows kernel took whole windows %zu times",
          t.dw_whole);
    dcz_pool_stop(t.pools[0]);
    dcz_pool_stop(t.pools[1]);
    CHECK(t.variants > 0 || !(dcz_isa_supported(DCZ_ISA_AVX2) || dcz_isa_supported(DCZ_ISA_NEON)),
          "no vector convolution ran");
}

/* ---- pooling -------------------------------------------------------------- */

/* cell k of a pool's input: of 256 cells (by a hash of k), 20 +0, 20 -0,
 * nans NaN, 2 -infinity, the rest nonzero() (drawn in cell order) */
static float edge_cell(size_t k, uint32_t nans)
{
    const uint32_t u = (uint32_t)(k * 2654435761u) >> 24;
    return u < 20 ? 0.0f : u < 40 ? -0.0f : u < 40 + nans ? NAN : u < 42 + nans ? -INFINITY : nonzero();
}

/* dcz_maxpool's variants give the reference's bits on every geometry of
 * the convolution grid, the extra ones and pools', batch 1 and 3, on values that
 * include NaN, infinities and zeros of both signs (where the order of the
 * comparisons shows), and write nothing past the output (batch 1: the rest
 * of the buffer keeps its bytes) */
static void test_maxpool_variants(void)
{
    /* and the pools of real networks: 2x2 stride 2 (even and odd images,
     * padded), 3x3 stride 2 padded, 2x2 stride 1 over rows of 40, 3x3 stride 3,
     * 2x2 stride 2 over rows of 8 and 16 */
    const dcz_conv_geom pools[] = {
        conv_geom(3, 3, 24, 24, 2, 2, 2, 2, 0, 0), conv_geom(2, 2, 9, 35, 2, 2, 2, 2, 0, 0),
        conv_geom(2, 2, 7, 9, 2, 2, 2, 2, 1, 1), conv_geom(2, 2, 14, 14, 3, 3, 2, 2, 1, 1),
        conv_geom(1, 1, 5, 40, 2, 2, 1, 1, 0, 0), conv_geom(2, 2, 9, 50, 3, 3, 3, 3, 0, 0),
        /* 2x2 stride 2 over rows of 8 (two output rows a vector; planes of
         * 4 rows, and of 3, whose stacked rows end alone) and of 16 */
        conv_geom(3, 3, 8, 8, 2, 2, 2, 2, 0, 0), conv_geom(1, 1, 6, 8, 2, 2, 2, 2, 0, 0),
        conv_geom(2, 2, 5, 16, 2, 2, 2, 2, 0, 0),
        /* 3x3 stride 2: ResNet's (112 -> 56, padded), SqueezeNet's (111 ->
         * 55, 55 -> 27, 27 -> 13), rows of 8 to 17 outputs (one vector and
         * an overlapping one, on each instruction set) */
        conv_geom(1, 1, 40, 112, 3, 3, 2, 2, 1, 1), conv_geom(2, 2, 111, 111, 3, 3, 2, 2, 0, 0),
        conv_geom(2, 2, 27, 27, 3, 3, 2, 2, 0, 0), conv_geom(2, 2, 9, 17, 3, 3, 2, 2, 0, 0),
        conv_geom(2, 2, 9, 19, 3, 3, 2, 2, 1, 1), conv_geom(1, 1, 7, 33, 3, 3, 2, 2, 0, 0),
        conv_geom(1, 1, 7, 35, 3, 3, 2, 2, 1, 1), conv_geom(1, 1, 5, 15, 3, 3, 2, 2, 0, 0),
    };
    const size_t npools = sizeof pools / sizeof *pools;
    dcz_conv_geom grid[64], extra[CONV_EXTRA];
    size_t n = 0;
    while (n < 64 && conv_grid(n, &grid[n])) n++;
    conv_extra(extra);
    size_t cases = 0, bad = 0, variants = 0;
    for (size_t i = 0; i < n + CONV_EXTRA + npools; i++) {
        dcz_conv_geom g = i < n ? grid[i] : i < n + CONV_EXTRA ? extra[i - n] : pools[i - n - CONV_EXTRA];
        g.out_c = g.in_c;
        g.group = 1;
        const size_t B = 3, xin = (size_t)g.in_c * g.in_h * g.in_w, yout = (size_t)g.in_c * g.out_h * g.out_w;
        float *x = malloc(B * xin * sizeof *x), *y = malloc(B * yout * sizeof *y), *r = malloc(B * yout * sizeof *r);
        for (size_t k = 0; k < B * xin; k++) x[k] = edge_cell(k, 4);
        const size_t batches[2] = { 1, B };
        for (int bi = 0; bi < 2; bi++) {
            dcz_maxpool_ref(&g, x, batches[bi], r);
            const dcz_isa isas[] = { DCZ_ISA_REF, DCZ_ISA_AVX512, DCZ_ISA_AVX2, DCZ_ISA_NEON };
            for (size_t v = 0; v < 4; v++) {
                memset(y, 0x55, B * yout * sizeof *y);
                if (!dcz_maxpool_isa(isas[v], &g, x, batches[bi], y)) continue;
                bad += memcmp(y, r, batches[bi] * yout * sizeof *y) != 0;
                for (size_t k = batches[bi] * yout; k < B * yout; k++) {
                    uint32_t u;
                    memcpy(&u, &y[k], sizeof u);
                    bad += u != 0x55555555u;
                }
                variants += v > 0;
                cases++;
            }
            dcz_maxpool(&g, x, batches[bi], y);
            bad += memcmp(y, r, batches[bi] * yout * sizeof *y) != 0;
        }
        free(x); free(y); free(r);
    }
    CHECK(cases >= 2 * (n + CONV_EXTRA + npools) && bad == 0, "max pool: %zu of %zu cases differ from the reference",
          bad, cases);
    CHECK(variants > 0 || !(dcz_isa_supported(DCZ_ISA_AVX512) || dcz_isa_supported(DCZ_ISA_AVX2)), "no vector max pool ran");
}

/* dcz_avgpool's variants give the reference's bits: 2x2 stride 2
 * without padding (DenseNet's transitions, even and odd images, rows of
 * one vector and a part and of fewer than one), zeros of both signs,
 * infinities and NaN among the cells, batches 1 and 3; and geometries they
 * leave to the reference */
static void test_avgpool_variants(void)
{
    const dcz_conv_geom pools[] = {
        conv_geom(2, 2, 56, 56, 2, 2, 2, 2, 0, 0), conv_geom(3, 3, 28, 28, 2, 2, 2, 2, 0, 0),
        conv_geom(2, 2, 14, 14, 2, 2, 2, 2, 0, 0), conv_geom(2, 2, 9, 35, 2, 2, 2, 2, 0, 0),
        conv_geom(1, 1, 7, 11, 2, 2, 2, 2, 0, 0), conv_geom(1, 1, 6, 8, 2, 2, 2, 2, 0, 0),
        conv_geom(2, 2, 7, 9, 2, 2, 2, 2, 1, 1), conv_geom(2, 2, 9, 17, 3, 3, 2, 2, 1, 1),
    };
    size_t cases = 0, bad = 0, variants = 0;
    for (size_t i = 0; i < sizeof pools / sizeof *pools; i++)
        for (int cip = 0; cip < 2; cip++) {
            const dcz_conv_geom g = pools[i];
            const size_t B = 3, xin = (size_t)g.in_c * g.in_h * g.in_w, yout = (size_t)g.in_c * g.out_h * g.out_w;
            float *x = malloc(B * xin * sizeof *x), *y = malloc((B * yout + 16) * sizeof *y),
                  *r = malloc(B * yout * sizeof *r);
            for (size_t k = 0; k < B * xin; k++) x[k] = edge_cell(k, 2);
            const size_t batches[2] = { 1, B };
            for (int bi = 0; bi < 2; bi++) {
                dcz_avgpool_ref(&g, cip, x, batches[bi], r);
                const dcz_isa isas[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2 };
                for (size_t v = 0; v < 2; v++) {
                    memset(y, 0x55, (B * yout + 16) * sizeof *y);
                    if (!dcz_avgpool_isa(isas[v], &g, cip, x, batches[bi], y)) continue;
                    for (size_t k = 0; k < batches[bi] * yout; k++)
                        bad += memcmp(&y[k], &r[k], sizeof *y) != 0 && !(isnan(y[k]) && isnan(r[k]));
                    for (size_t k = batches[bi] * yout; k < B * yout + 16; k++) {
                        uint32_t u;
                        memcpy(&u, &y[k], sizeof u);
                        bad += u != 0x55555555u;
                    }
                    variants++;
                }
                dcz_avgpool(&g, cip, x, batches[bi], y);
                for (size_t k = 0; k < batches[bi] * yout; k++)
                    bad += memcmp(&y[k], &r[k], sizeof *y) != 0 && !(isnan(y[k]) && isnan(r[k]));
                cases++;
            }
            free(x); free(y); free(r);
        }
    CHECK(bad == 0, "average pool: %zu outputs differ from the reference over %zu cases", bad, cases);
    CHECK(variants >= 6 * 2 * 2 || !dcz_isa_supported(DCZ_ISA_AVX2), "the vector average pools ran %zu times",
          variants);
}

/* windows wider than 16 columns (up to 40, past a 32-bit mask's width),
 * strides 1, 2 and 3, with and without padding, rows of more than one
 * vector of outputs, batch 1 and 3, random nonzero values: every variant
 * the machine has gives the reference's bits. (Run with SANITIZE=undefined
 * it also proves no mask is computed by a shift past its type's width.) */
static void test_maxpool_wide(void)
{
    static const uint32_t widths[] = { 17, 24, 25, 31, 32, 33, 40 }, strides[] = { 1, 2, 3 };
    const dcz_isa isas[] = { DCZ_ISA_REF, DCZ_ISA_AVX512, DCZ_ISA_AVX2, DCZ_ISA_NEON };
    size_t cases = 0, bad = 0, ran[4] = { 0 };
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
        for (size_t si = 0; si < sizeof strides / sizeof *strides; si++)
            for (uint32_t pad = 0; pad < 2; pad++) {
                const uint32_t kw = widths[wi], sw = strides[si], kh = 1 + pad, out_w = 37 + (uint32_t)wi;
                dcz_conv_geom g = conv_geom(2, 2, 3 + pad, kw + sw * (out_w - 1) - 2 * pad * 3, kh, kw, 1, sw,
                                            pad, 3 * pad);
                g.group = 1;
                const size_t B = 3, xin = (size_t)g.in_c * g.in_h * g.in_w, yout = (size_t)g.in_c * g.out_h * g.out_w;
                float *x = malloc(B * xin * sizeof *x), *y = malloc(B * yout * sizeof *y),
                      *r = malloc(B * yout * sizeof *r);
                for (size_t k = 0; k < B * xin; k++) x[k] = nonzero();
                const size_t batches[2] = { 1, B };
                for (int bi = 0; bi < 2; bi++) {
                    dcz_maxpool_ref(&g, x, batches[bi], r);
                    for (size_t v = 0; v < 4; v++) {
                        memset(y, 0x55, B * yout * sizeof *y);
                        if (!dcz_maxpool_isa(isas[v], &g, x, batches[bi], y)) continue;
                        size_t diff = memcmp(y, r, batches[bi] * yout * sizeof *y) != 0;
                        for (size_t k = batches[bi] * yout; k < B * yout; k++) {
                            uint32_t u;
                            memcpy(&u, &y[k], sizeof u);
                            diff += u != 0x55555555u;
                        }
                        if (diff && bad < 5)
                            fprintf(stderr, "  max pool %ux%u stride %u pad %u batch %zu: isa %zu differs\n", kh, kw,
                                    sw, pad, batches[bi], v);
                        bad += diff != 0;
                        ran[v]++;
                        cases++;
                    }
                }
                free(x); free(y); free(r);
            }
    CHECK(bad == 0, "wide max pool: %zu of %zu cases differ from the reference", bad, cases);
    CHECK(ran[0] == 2 * 7 * 3 * 2, "the reference ran %zu times", ran[0]);
    CHECK(ran[1] > 0 || !dcz_isa_supported(DCZ_ISA_AVX512), "AVX-512 max pool never ran");
    CHECK(ran[2] > 0 || !dcz_isa_supported(DCZ_ISA_AVX2), "AVX2 max pool never ran");
    /* a pool past DCZ_SPLIT_ELEMS outputs split over 2 and 3 threads (the
     * planes of both samples among them), padded and not: the reference's
     * bits */
    const dcz_conv_geom big[] = { conv_geom(37, 37, 47, 45, 3, 3, 2, 2, 1, 1), conv_geom(29, 29, 55, 55, 3, 3, 2, 2, 0, 0) };
    size_t split_bad = 0;
    for (size_t gi = 0; gi < 2; gi++) {
        dcz_conv_geom g = big[gi];
        g.group = 1;
        const size_t B = 2, xin = (size_t)g.in_c * g.in_h * g.in_w, yout = (size_t)g.in_c * g.out_h * g.out_w;
        REQUIRE(yout >= DCZ_SPLIT_ELEMS, "pool %zu below the split", gi);
        float *x = malloc(B * xin * sizeof *x), *y = malloc(B * yout * sizeof *y), *r = malloc(B * yout * sizeof *r);
        REQUIRE(x && y && r, "memory");
        for (size_t k = 0; k < B * xin; k++) x[k] = nonzero();
        dcz_maxpool_ref(&g, x, B, r);
        for (uint32_t threads = 2; threads <= 3; threads++) {
            dcz_pool *pool;
            REQUIRE(dcz_pool_start(threads, &pool) == DCZ_OK, "pool of %u", threads);
            memset(y, 0x55, B * yout * sizeof *y);
            dcz_maxpool_pool(pool, &g, x, B, y);
            split_bad += memcmp(y, r, B * yout * sizeof *y) != 0;
            dcz_pool_stop(pool);
        }
        free(x); free(y); free(r);
    }
    CHECK(split_bad == 0, "%zu max pools over threads differ from the reference", split_bad);
}

static void test_pools(void)
{
    /* two samples of one 4x4 channel: the second is the first negated */
    float x[32], y[32];
    for (int i = 0; i < 16; i++) { x[i] = (float)((i * 7) % 16); x[16 + i] = -x[i]; }
    /* x[0] = 0 7 14 5 / 12 3 10 1 / 8 15 6 13 / 4 11 2 9 */
    dcz_conv_geom g = conv_geom(1, 1, 4, 4, 2, 2, 2, 2, 0, 0);
    dcz_maxpool_ref(&g, x, 2, y);
    float want[8] = { 12, 14, 15, 13, -0, -1, -4, -2 };
    CHECK(near_all(y, want, 8, 0), "max 2x2: %g %g %g %g | %g %g %g %g", y[0], y[1], y[2], y[3],
          y[4], y[5], y[6], y[7]);
    /* 3x3 stride 2 padding 1 on negative values: padding never wins */
    float neg[9] = { -1, -2, -3, -4, -5, -6, -7, -8, -9 }, pos[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    g = conv_geom(1, 1, 3, 3, 3, 3, 2, 2, 1, 1);
    dcz_maxpool_ref(&g, neg, 1, y);
    float want_neg[4] = { -1, -2, -4, -5 };
    CHECK(near_all(y, want_neg, 4, 0), "max padded: %g %g %g %g", y[0], y[1], y[2], y[3]);
    /* average over cells inside the image, or over the whole window */
    dcz_avgpool_ref(&g, 0, pos, 1, y);
    float want_in[4] = { 3, 4, 6, 7 };
    CHECK(near_all(y, want_in, 4, 1e-6f), "avg: %g %g %g %g", y[0], y[1], y[2], y[3]);
    dcz_avgpool_ref(&g, 1, pos, 1, y);
    float want_all[4] = { 12 / 9.0f, 16 / 9.0f, 24 / 9.0f, 28 / 9.0f };
    CHECK(near_all(y, want_all, 4, 1e-6f), "avg with pad: %g %g %g %g", y[0], y[1], y[2], y[3]);
    /* 2x2 stride 1 on two samples of a 2x3 channel */
    float x2[12] = { 1, 2, 3, 4, 5, 6, 0, 0, 4, 8, 0, 4 };
    g = conv_geom(1, 1, 2, 3, 2, 2, 1, 1, 0, 0);
    dcz_avgpool_ref(&g, 0, x2, 2, y);
    float want2[4] = { 3, 4, 2, 2 };
    CHECK(near_all(y, want2, 4, 1e-6f), "avg batch: %g %g %g %g", y[0], y[1], y[2], y[3]);
    /* global average: 2 samples x 2 channels of 2x2 */
    float x3[16] = { 1, 2, 3, 4, 0, 0, 0, 8, -1, -1, -1, -1, 5, 5, 5, 9 };
    dcz_global_avgpool_ref(2, 4, x3, 2, y);
    float want3[4] = { 2.5f, 2, -1, 6 };
    CHECK(near_all(y, want3, 4, 1e-6f), "gap: %g %g %g %g", y[0], y[1], y[2], y[3]);
    /* the reference's order (dcz_mean_one): sixteen running sums folded in
     * halves; and the vector kernels on every level this machine has (AVX-512
     * and AVX2 the CPU capped): its bits on random planes of lengths about
     * 16's multiples, channel counts about the four taken side by side, with
     * zeros of both signs, infinities and a NaN among the cells */
    size_t bad = 0, levels = 0;
    for (uint32_t plane = 1; plane <= 70; plane++) {
        float xs[70], s16[16] = { 0.0f };
        for (uint32_t i = 0; i < plane; i++) xs[i] = frand() * 100.0f;
        for (uint32_t i = 0; i < plane; i++) s16[i % 16] += xs[i];
        const float a8[8] = { s16[0] + s16[8], s16[1] + s16[9], s16[2] + s16[10], s16[3] + s16[11],
                              s16[4] + s16[12], s16[5] + s16[13], s16[6] + s16[14], s16[7] + s16[15] };
        const float a4[4] = { a8[0] + a8[4], a8[1] + a8[5], a8[2] + a8[6], a8[3] + a8[7] };
        const float mean = ((a4[0] + a4[2]) + (a4[1] + a4[3])) / (float)plane, got = dcz_mean_one(xs, plane);
        bad += memcmp(&mean, &got, sizeof got) != 0;
    }
    CHECK(bad == 0, "the mean's order: %zu planes off sixteen sums folded in halves", bad);
    dcz_cpu capped;
    const dcz_isa_cap caps[] = { DCZ_CAP_NATIVE, DCZ_CAP_AVX2 };
    for (size_t v = 0; v < sizeof caps / sizeof caps[0]; v++) {
        if (dcz_cpu_capped(caps[v], &capped, NULL, 0) != DCZ_OK) continue;
        dcz_cpu_view = &capped;
        levels++;
        for (uint32_t c = 1; c <= 11; c += 2)
            for (uint32_t plane = 1; plane <= 100; plane += plane < 40 ? 1 : 29)
                for (size_t b = 1; b <= 2; b++) {
                    const size_t n = b * c * plane;
                    float *in = malloc(n * sizeof *in), *ref = malloc(b * c * sizeof *ref),
                          *got = malloc(b * c * sizeof *got);
                    for (size_t i = 0; i < n; i++) in[i] = frand() * 10.0f;
                    const float edge[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN };
                    if (plane % 7 == 3) in[(plane * c) % n] = edge[(plane + c) % 5];
                    if (plane % 5 == 1) in[n - 1] = -0.0f;
                    dcz_global_avgpool_ref(c, plane, in, b, ref);
                    dcz_global_avgpool(c, plane, in, b, got);
                    for (size_t i = 0; i < b * c; i++)
                        bad += memcmp(&ref[i], &got[i], sizeof *got) != 0 && !(isnan(ref[i]) && isnan(got[i]));
                    free(in); free(ref); free(got);
                }
        dcz_cpu_view = NULL;
    }
    CHECK(levels > 0, "no instruction-set level ran the global average");
    CHECK(bad == 0, "global average: %zu cases differ from the reference", bad);
}

/* Winograd's F(2x2, 3x3) (kernels_wino.c): the AVX-512 and AVX2
 * transforms give the scalar reference's bits; both within 1e-5 of the sum of |w x| terms
 * of the direct reference (its rounding and the transforms'); a sample the
 * same bits alone as in a batch; a fused activation the bits of
 * dcz_act_one on the sums; which geometries the runtime gives it. */
static void test_conv_wino(void)
{
    static const uint32_t cases[][6] = {
        /* C, K, H, W, padding, batch */
        { 32, 32, 9, 8, 1, 3 },  /* odd output rows */
        { 16, 48, 7, 7, 0, 2 },  /* no padding */
        { 32, 16, 20, 20, 1, 2 },/* a sample's tiles in rounds */
        { 16, 16, 5, 6, 2, 7 },  /* padding 2, several samples a round */
        { 48, 32, 3, 3, 1, 23 }, /* 4 tiles a sample: rounds of 16 samples */
        { 192, 192, 6, 5, 1, 2 },/* U of 2.25 MB: threads split the products, not the tiles */
    };
    size_t bad = 0, capped = 0;
    const dcz_act silu_act = { DCZ_OP_SILU, 0, 0 };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const uint32_t *c = cases[k];
        const dcz_conv_geom g = conv_geom(c[0], c[1], c[2], c[3], 3, 3, 1, 1, c[4], c[4]);
        dcz_wino p;
        dcz_wino_init(&p, c[0], c[1], c[2], c[3], c[4], c[4]);
        CHECK(p.OH == g.out_h && p.OW == g.out_w, "case %zu: output %zux%zu", k, p.OH, p.OW);
        const size_t b = c[5], nx = b * p.in, ny = b * p.out, nw = (size_t)c[0] * c[1] * 9;
        float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *bias = malloc(c[1] * sizeof *bias);
        float *ax = malloc(nx * sizeof *ax), *aw = malloc(nw * sizeof *aw), *zero = calloc(c[1], sizeof *zero);
        float *yd = malloc(ny * sizeof *yd), *mag = malloc(ny * sizeof *mag), *y = malloc(4 * ny * sizeof *y);
        float *u = malloc(dcz_wino_weights_floats(&p) * sizeof *u), *u2 = malloc(dcz_wino_weights_floats(&p) * sizeof *u);
        float *tmp = malloc(16 * (size_t)c[1] * sizeof *tmp), *scratch = malloc(p.scratch * sizeof *scratch);
        for (size_t i = 0; i < nx; i++) ax[i] = fabsf(x[i] = nonzero());
        for (size_t i = 0; i < nw; i++) aw[i] = fabsf(w[i] = nonzero());
        for (uint32_t i = 0; i < c[1]; i++) bias[i] = frand();
        dcz_conv2d_direct_ref(&g, w, bias, x, b, yd);
        dcz_conv2d_direct_ref(&g, aw, zero, ax, b, mag);
        dcz_wino_weights(&p, w, 0, u, tmp);
        dcz_wino_weights(&p, w, 0, u2, NULL);   /* in place: the same */
        bad += memcmp(u, u2, dcz_wino_weights_floats(&p) * sizeof *u) != 0;
        const dcz_act relu = { DCZ_OP_RELU, 0, 0 }, clip = { DCZ_OP_CLIP, -0.5f, 0.75f };
        dcz_wino_conv(&p, u, bias, NULL, x, b, 1, scratch, y);
        dcz_wino_conv(&p, u, bias, NULL, x, b, 0, scratch, y + ny);
        bad += memcmp(y, y + ny, ny * sizeof *y) != 0;
        /* the AVX2 variant where the machine has more (the CPU capped), the same bits */
        dcz_cpu avx2;
        if (dcz_wino_vector() == 2 && dcz_cpu_capped(DCZ_CAP_AVX2, &avx2, NULL, 0) == DCZ_OK) {
            dcz_cpu_view = &avx2;
            capped += dcz_wino_vector() == 1;
            dcz_wino_conv(&p, u, bias, &silu_act, x, b, 0, scratch, y + 2 * ny);
            dcz_cpu_view = NULL;
            for (size_t i = 0; i < ny; i++) {
                const float want = dcz_act_one(&silu_act, y[i]);
                bad += memcmp(&want, &y[2 * ny + i], sizeof want) != 0;
            }
        }
        for (size_t i = 0; i < ny; i++) bad += !(fabsf(y[i] - yd[i]) <= 1e-5f * (1 + mag[i]));
        /* the last sample alone */
        dcz_wino_conv(&p, u, bias, NULL, x + (b - 1) * p.in, 1, 0, scratch, y + 2 * ny);
        bad += memcmp(y + 2 * ny, y + (b - 1) * p.out, p.out * sizeof *y) != 0;
        /* over 2 and 3 threads (the tiles split, or the 16 products): the same bits */
        for (uint32_t threads = 2; threads <= 3; threads++) {
            dcz_pool *pool = NULL;
            REQUIRE(dcz_pool_start(threads, &pool) == DCZ_OK, "pool of %u", threads);
            dcz_wino_conv_pool(pool, &p, u, bias, NULL, x, b, 0, scratch, y + 2 * ny);
            bad += memcmp(y + 2 * ny, y + ny, ny * sizeof *y) != 0;
            dcz_pool_stop(pool);
        }
        const dcz_act silu = { DCZ_OP_SILU, 0, 0 }, hswish = { DCZ_OP_HARD_SWISH, 0, 0 };
        const dcz_act *const wacts[4] = { &relu, &clip, &silu, &hswish };
        for (int a = 0; a < 4; a++) {
            const dcz_act *act = wacts[a];
            for (int r = 0; r < 2; r++) {
                dcz_wino_conv(&p, u, bias, act, x, b, r, scratch, y + 3 * ny);
                for (size_t i = 0; i < ny; i++) {
                    const float want = dcz_act_one(act, y[i]);
                    bad += memcmp(&want, &y[3 * ny + i], sizeof want) != 0;
                }
            }
        }
        free(x); free(w); free(bias); free(ax); free(aw); free(zero); free(yd); free(mag); free(y);
        free(u); free(u2); free(tmp); free(scratch);
    }
    CHECK(bad == 0, "Winograd: %zu outputs or transforms off", bad);
    CHECK(dcz_wino_vector() != 2 || capped == sizeof cases / sizeof cases[0], "AVX2's variant ran %zu times", capped);
    /* the runtime's rule: 3x3 at stride 1, one group, channels multiples
     * of 16 and at least DCZ_WINO_MIN_C, padding at most 2, the scratch
     * within its cap; the machine's AVX2 or AVX-512 */
    const dcz_conv_geom yes = conv_geom(32, 64, 14, 14, 3, 3, 1, 1, 1, 1);
    const dcz_conv_geom no[] = {
        conv_geom(16, 64, 14, 14, 3, 3, 1, 1, 1, 1), conv_geom(32, 40, 14, 14, 3, 3, 1, 1, 1, 1),
        conv_geom(32, 64, 14, 14, 3, 3, 2, 2, 1, 1), conv_geom(32, 64, 14, 14, 3, 1, 1, 1, 1, 0),
        conv_geom_grouped(32, 64, 14, 14, 3, 1, 1, 2), conv_geom(64, 64, 200, 200, 3, 3, 1, 1, 1, 1),
    };
    const int wino = dcz_wino_vector() != 0;   /* 2 AVX-512, 1 AVX2: either runs it */
    CHECK(dcz_conv2d_pick_wino(&yes) == wino, "the rule declines 32 -> 64 over 14 x 14");
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECK(!dcz_conv2d_pick_wino(&no[i]), "the rule takes geometry %zu", i);
    /* an odd output plane: Winograd runs it, and the rules give it the
     * shift form but on AMD's cores with AVX-512 over few channels, and on
     * Zen 5 over any */
    const dcz_conv_geom odd[] = { conv_geom(64, 64, 7, 7, 3, 3, 1, 1, 1, 1), conv_geom(32, 64, 14, 13, 3, 3, 1, 1, 1, 1),
                                  conv_geom(512, 512, 7, 7, 3, 3, 1, 1, 1, 1) };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        const int amd512 = dcz_cpu_features()->amd && dcz_wino_vector() == 2, few = i < 2;
        CHECK(dcz_conv2d_pick_wino(&odd[i]) == wino, "odd plane %zu: Winograd does not run it", i);
        CHECK(dcz_conv2d_wino_rule(&odd[i]) == (amd512 && (few || dcz_cpu_features()->full512)),
              "odd plane %zu: rule %d on %s", i, dcz_conv2d_wino_rule(&odd[i]),
              dcz_cpu_features()->amd ? "AMD" : "Intel");
    }
    /* the same on views of this CPU as Zen 4 and as Zen 5 */
    if (dcz_wino_vector() == 2) {
        dcz_cpu zen4 = dcz_cpu_probed, zen5 = dcz_cpu_probed;
        zen4.amd = zen5.amd = 1;
        zen4.full512 = 0;
        zen5.full512 = 1;
        const dcz_cpu *was = dcz_cpu_enter(&zen4);
        CHECK(dcz_conv2d_wino_rule(&odd[1]) && !dcz_conv2d_wino_rule(&odd[2]),
              "Zen 4: Winograd over few channels of an odd plane, the shift form over many");
        dcz_cpu_enter(&zen5);
        CHECK(dcz_conv2d_wino_rule(&odd[1]) && dcz_conv2d_wino_rule(&odd[2]), "Zen 5: Winograd over any odd plane");
        dcz_cpu_leave(was);
    }
    CHECK(dcz_conv2d_wino_rule(&yes), "the rule declines an even plane");
}

/* 1x1 convolutions by pixel rows (dcz_conv2d_pixels_pool) against the
 * dense product's reference by planes, bit for bit, on every instruction
 * set of this machine (views of the CPU capped to each level): planes of
 * 1 to 81 pixels, channel counts off the vectors and over panels of weights
 * (130: two of 64 and one of 2), strides 1, 2 and 3 (odd input sizes:
 * the last row and column dropped), batches 1 and 3, the threads
 * splitting the pixels or (384 and 330 channels) the panels, without
 * an activation and with the fused ones, alone and split over a pool of 3
 * threads; and where the rules take it. */
static void test_conv_pixels(void)
{
    static const uint32_t shapes[][5] = { /* in_c, out_c, h, w, stride */
        { 1, 1, 1, 1, 1 }, { 3, 17, 7, 7, 1 }, { 16, 16, 4, 4, 1 }, { 40, 33, 5, 7, 1 },
        { 64, 400, 7, 7, 1 }, { 17, 130, 9, 9, 1 }, { 200, 48, 3, 3, 1 }, { 8, 24, 2, 1, 1 },
        { 24, 70, 14, 14, 2 }, { 9, 20, 15, 13, 2 }, { 33, 16, 10, 11, 3 }, { 5, 7, 1, 3, 2 },
        { 20, 384, 6, 6, 1 }, { 12, 330, 5, 5, 1 },   /* the three threads split the panels */
    };
    const dcz_act acts[] = { { 0, 0.0f, 0.0f }, { DCZ_OP_RELU, 0.0f, 0.0f }, { DCZ_OP_CLIP, 0.0f, 6.0f },
                             { DCZ_OP_SILU, 0.0f, 0.0f } };
    const dcz_isa_cap caps[] = { DCZ_CAP_NATIVE, DCZ_CAP_AVX2, DCZ_CAP_SCALAR };
    dcz_pool *pool;
    REQUIRE(dcz_pool_start(3, &pool) == DCZ_OK, "pool of 3");
    size_t bad = 0, runs = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const uint32_t in = shapes[si][0], out = shapes[si][1], st = shapes[si][4];
        const dcz_conv_geom g = conv_geom(in, out, shapes[si][2], shapes[si][3], 1, 1, st, st, 0, 0);
        const size_t px = (size_t)g.out_h * g.out_w, in_px = (size_t)g.in_h * g.in_w;
        CHECK(dcz_conv2d_pick_pixels(&g), "shape %zu: pixel rows do not run it", si);
        const size_t bmax = 3, ldb = dcz_gemm_ldb(out);
        float *x = malloc(bmax * in * in_px * sizeof *x), *w = malloc((size_t)out * in * sizeof *w);
        float *bias = malloc(out * sizeof *bias), *wt = malloc(in * ldb * sizeof *wt);
        float *scratch = malloc(dcz_conv2d_im2col_floats(&g) * sizeof *scratch);
        float *y = malloc(bmax * out * px * sizeof *y), *y2 = malloc(bmax * out * px * sizeof *y2);
        REQUIRE(x && w && bias && wt && scratch && y && y2, "memory");
        for (size_t i = 0; i < bmax * in * in_px; i++) x[i] = nonzero() * 4.0f;
        for (size_t i = 0; i < (size_t)out * in; i++) w[i] = nonzero();
        for (uint32_t i = 0; i < out; i++) bias[i] = nonzero();
        dcz_conv_weights_by_panel(w, out, in, wt);
        for (size_t b = 1; b <= bmax; b += 2)
            for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
                dcz_conv2d_dense_im2col_act(&g, w, bias, x, b, 1, &acts[a], scratch, y2);
                for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
                    dcz_cpu view;
                    if (dcz_cpu_capped(caps[c], &view, NULL, 0) != DCZ_OK) continue;
                    const dcz_cpu *was = dcz_cpu_enter(&view);
                    for (int pooled = 0; pooled < 2; pooled++) {
                        memset(y, 0xA5, b * out * px * sizeof *y);
                        dcz_conv2d_pixels_pool(pooled ? pool : NULL, &g, wt, bias, x, b, &acts[a], scratch, y);
                        const int differ = memcmp(y, y2, b * out * px * sizeof *y) != 0;
                        if (differ)
                            printf("  shape %zu batch %zu act %zu level %s%s: off the reference\n", si, b, a,
                                   dcz_isa_cap_name(caps[c]), pooled ? " pooled" : "");
                        bad += differ;
                        runs++;
                    }
                    dcz_cpu_leave(was);
                }
            }
        free(x); free(w); free(bias); free(wt); free(scratch); free(y); free(y2);
    }
    dcz_pool_stop(pool);
    CHECK(bad == 0, "%zu of %zu runs by pixel rows off the reference", bad, runs);
    /* the rules: small planes that fill few vectors, weights within the
     * cap (512 -> 2048, 4 MB of weights, is within it; 1024 -> 2048 at
     * stride 2, 8 MB, too), and layers that narrow by half or more over
     * up to 14 x 14; not 14 x 14 as wide out as in (13 whole vectors), nor
     * one that widens there, nor one that narrows over 28 x 28, not 4 x 4
     * (one), not 1024 -> 2304 (9 MB of weights), not 144 -> 32 (too few
     * multiply-adds), not a 3x3 window nor a padded 1 x 1 one */
    const dcz_conv_geom takes[] = { conv_geom(400, 400, 7, 7, 1, 1, 1, 1, 0, 0),
                                    conv_geom(512, 2048, 7, 7, 1, 1, 1, 1, 0, 0),
                                    conv_geom(1024, 2048, 14, 14, 1, 1, 2, 2, 0, 0),
                                    conv_geom(1024, 256, 14, 14, 1, 1, 1, 1, 0, 0),
                                    conv_geom(384, 64, 13, 13, 1, 1, 1, 1, 0, 0) },
                        not_rule[] = { conv_geom(400, 400, 14, 14, 1, 1, 1, 1, 0, 0),
                                       conv_geom(256, 1024, 14, 14, 1, 1, 1, 1, 0, 0),
                                       conv_geom(512, 256, 28, 28, 1, 1, 1, 1, 0, 0),
                                       conv_geom(64, 64, 4, 4, 1, 1, 1, 1, 0, 0),
                                       conv_geom(1024, 2304, 7, 7, 1, 1, 1, 1, 0, 0),
                                       conv_geom(144, 32, 7, 7, 1, 1, 1, 1, 0, 0) },
                        not_run[] = { conv_geom(64, 64, 7, 7, 3, 3, 1, 1, 1, 1),
                                      conv_geom(64, 64, 14, 14, 1, 1, 2, 2, 1, 1) };
    for (size_t i = 0; i < sizeof takes / sizeof *takes; i++)
        CHECK(dcz_conv2d_pixels_rule(&takes[i]), "geometry %zu not by pixel rows", i);
    for (size_t i = 0; i < sizeof not_rule / sizeof *not_rule; i++)
        CHECK(dcz_conv2d_pick_pixels(&not_rule[i]) && !dcz_conv2d_pixels_rule(&not_rule[i]),
              "geometry %zu: the rule takes it", i);
    for (size_t i = 0; i < sizeof not_run / sizeof *not_run; i++)
        CHECK(!dcz_conv2d_pick_pixels(&not_run[i]) && !dcz_conv2d_pixels_rule(&not_run[i]),
              "geometry %zu: pixel rows say they run it", i);
}

/* A pointwise layer on the shift form reads its input where it lies (no
 * copy) where its planes are whole vectors and its output lies elsewhere,
 * and copies it where the output overwrites it (the same place, as an
 * arena may give a layer whose input dies there): both the reference's
 * bits, on every instruction set, for planes of whole vectors and not,
 * sparse and dense weights, batch 1 and 3. */
static void test_shift_pointwise_input(void)
{
    static const uint32_t shapes[][3] = { { 24, 8, 8 }, { 16, 7, 9 }, { 40, 16, 4 } };   /* channels, h, w */
    const dcz_act silu = { DCZ_OP_SILU, 0.0f, 0.0f };
    const dcz_isa_cap caps[] = { DCZ_CAP_NATIVE, DCZ_CAP_AVX2, DCZ_CAP_SCALAR };
    size_t bad = 0, runs = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
        for (int dense = 0; dense < 2; dense++) {
            const uint32_t c = shapes[si][0], px = shapes[si][1] * shapes[si][2];
            const dcz_conv_geom g = conv_geom(c, c, shapes[si][1], shapes[si][2], 1, 1, 1, 1, 0, 0);
            mat m;
            REQUIRE(make_mat(&m, c, c, dense ? 1.0 : 0.2, 0), "weights");
            void *mem = malloc(dcz_shift_bytes(&g, m.nnz, 1));
            dcz_shift f;
            dcz_shift_build(&g, &m.sp, NULL, 1, mem, &f);
            const size_t B = 3, n = B * c * px;
            float *x = malloc(n * sizeof *x), *y = malloc(2 * n * sizeof *y), *want = malloc(n * sizeof *want);
            float *bias = malloc(c * sizeof *bias), *scratch = malloc(dcz_shift_scratch_floats(&g) * sizeof *scratch);
            REQUIRE(mem && x && y && want && bias && scratch, "memory");
            for (size_t i = 0; i < n; i++) x[i] = nonzero() * 3.0f;
            for (uint32_t i = 0; i < c; i++) bias[i] = nonzero();
            for (size_t b = 1; b <= B; b += 2) {
                REQUIRE(dcz_conv2d_shift_act_isa(DCZ_ISA_REF, &g, &f, bias, x, b, &silu, NULL, scratch, want),
                        "reference");
                for (size_t ci = 0; ci < sizeof caps / sizeof *caps; ci++) {
                    dcz_cpu view;
                    if (dcz_cpu_capped(caps[ci], &view, NULL, 0) != DCZ_OK) continue;
                    const dcz_cpu *was = dcz_cpu_enter(&view);
                    for (int in_place = 0; in_place < 2; in_place++) {
                        memcpy(y, x, b * c * px * sizeof *y);
                        float *out = in_place ? y : y + n;   /* the input's own place, or past it */
                        if (!in_place) memset(out, 0xA5, b * c * px * sizeof *out);
                        dcz_conv2d_shift_act(&g, &f, bias, y, b, &silu, NULL, scratch, out);
                        const int differ = memcmp(out, want, b * c * px * sizeof *out) != 0;
                        if (differ)
                            printf("  %u channels over %ux%u, %s, batch %zu, level %s%s: off the reference\n", c,
                                   shapes[si][1], shapes[si][2], dense ? "dense" : "sparse", b,
                                   dcz_isa_cap_name(caps[ci]), in_place ? ", in place" : "");
                        bad += differ;
                        runs++;
                    }
                    dcz_cpu_leave(was);
                }
            }
            free(x); free(y); free(want); free(bias); free(scratch); free(mem);
            free_mat(&m);
        }
    CHECK(bad == 0, "%zu of %zu pointwise runs off the reference", bad, runs);
}

/* The dense product takes a dense 1x1 layer on the cores that run 512-bit
 * vectors whole (shift_form.c, pw_dense: AMD's Zen 5, Intel's with
 * AVX-512) unless the layer widens from under 256 channels over a plane
 * too large for pixel rows, or is small, where the cost model decides as
 * before; a sparse one is the model's on either. Views of this CPU as Zen
 * 4, as Zen 5 and as an Intel core (their AVX-512 branch needs AVX-512
 * here). */
static void test_pointwise_rule(void)
{
    if (!dcz_cpu_probed.avx512f || !DCZ_BUILD_X86) {
        printf("  SKIP: the AMD rules' AVX-512 branch needs AVX-512\n");
        return;
    }
    dcz_cpu zen4 = dcz_cpu_probed, zen5 = dcz_cpu_probed, intel = dcz_cpu_probed;
    zen4.amd = zen5.amd = 1;
    intel.amd = 0;
    zen4.full512 = 0;
    zen5.full512 = intel.full512 = 1;
    const dcz_conv_geom narrow = conv_geom(1024, 256, 14, 14, 1, 1, 1, 1, 0, 0),
                        down = conv_geom(1024, 2048, 14, 14, 1, 1, 2, 2, 0, 0),
                        wide_many = conv_geom(256, 1024, 14, 14, 1, 1, 1, 1, 0, 0),
                        wide_few[] = { conv_geom(96, 576, 14, 14, 1, 1, 1, 1, 0, 0),
                                       conv_geom(24, 144, 56, 56, 1, 1, 1, 1, 0, 0),
                                       conv_geom(160, 960, 7, 7, 1, 1, 1, 1, 0, 0) };
    const uint64_t dense_narrow = 1024u * 256u, dense_down = 1024u * 2048u, dense_wide = 256u * 1024u;
    const dcz_conv_geom small = conv_geom(96, 24, 14, 14, 1, 1, 1, 1, 0, 0);   /* 451,584 multiply-adds */
    const dcz_cpu *was = dcz_cpu_enter(&zen4);
    const int small4 = dcz_conv2d_pick_shift(&small, 96u * 24u);
    const int narrow4 = dcz_conv2d_pick_shift(&narrow, dense_narrow);
    const int sparse4 = dcz_conv2d_pick_shift(&narrow, dense_narrow / 10);
    int few4[3];
    for (int i = 0; i < 3; i++) few4[i] = dcz_conv2d_pick_shift(&wide_few[i], (uint64_t)wide_few[i].in_c * wide_few[i].out_c);
    dcz_cpu_enter(&zen5);
    CHECK(!dcz_conv2d_pick_shift(&narrow, dense_narrow), "Zen 5: dense 1024 -> 256 over 14 x 14 on the shift form");
    CHECK(!dcz_conv2d_pick_shift(&down, dense_down), "Zen 5: dense 1024 -> 2048 at stride 2 on the shift form");
    CHECK(!dcz_conv2d_pick_shift(&wide_many, dense_wide), "Zen 5: dense 256 -> 1024 on the shift form");
    CHECK(dcz_conv2d_pick_shift(&small, 96u * 24u) == small4, "Zen 5: a small layer left the model's choice");
    CHECK(dcz_conv2d_pick_shift(&narrow, dense_narrow / 10) == sparse4, "Zen 5: a sparse layer's choice changed");
    for (int i = 0; i < 2; i++)
        CHECK(dcz_conv2d_pick_shift(&wide_few[i], (uint64_t)wide_few[i].in_c * wide_few[i].out_c) == few4[i],
              "Zen 5: widening layer %d from few channels left the model's choice", i);
    CHECK(dcz_conv2d_pixels_rule(&wide_few[2]) && !dcz_conv2d_pick_shift(&wide_few[2], 160u * 960u),
          "Zen 5: dense 160 -> 960 over 7 x 7 not by pixel rows");
    dcz_cpu_enter(&intel);
    CHECK(!dcz_conv2d_pick_shift(&narrow, dense_narrow), "Intel: dense 1024 -> 256 over 14 x 14 on the shift form");
    CHECK(!dcz_conv2d_pick_shift(&down, dense_down), "Intel: dense 1024 -> 2048 at stride 2 on the shift form");
    CHECK(!dcz_conv2d_pick_shift(&wide_many, dense_wide), "Intel: dense 256 -> 1024 on the shift form");
    const int small_intel = dcz_conv2d_pick_shift(&small, 96u * 24u);
    const int sparse_intel = dcz_conv2d_pick_shift(&narrow, dense_narrow / 10);
    intel.full512 = 0;   /* the model alone, on Intel's costs */
    CHECK(dcz_conv2d_pick_shift(&small, 96u * 24u) == small_intel, "Intel: a small layer left the model's choice");
    CHECK(dcz_conv2d_pick_shift(&narrow, dense_narrow / 10) == sparse_intel, "Intel: a sparse layer's choice changed");
    CHECK(dcz_conv2d_pick_shift(&narrow, dense_narrow), "Intel's model: dense 1024 -> 256 left the shift form");
    dcz_cpu_leave(was);
    CHECK(narrow4, "Zen 4: dense 1024 -> 256 over 14 x 14 left the shift form");
    CHECK(sparse4, "Zen 4: 10%% of 1024 -> 256 left the shift form");
}

int main(void)
{
    RUN(test_codebook_2);
    RUN(test_codebook_256);
    RUN(test_fp32_values);
    RUN(test_fillers);
    RUN(test_relu_softmax);
    RUN(test_activations);
    RUN(test_conv_ref_by_hand);
    RUN(test_conv_groups_ref);
    RUN(test_conv_grid);
    RUN(test_conv_wino);
    RUN(test_pointwise_rule);
    RUN(test_conv_pixels);
    RUN(test_shift_pointwise_input);
    RUN(test_pools);
    RUN(test_maxpool_variants);
    RUN(test_avgpool_variants);
    RUN(test_maxpool_wide);
    return check_summary();
}
