/* test_gpu_emu.c: the bodies of the CUDA kernels (runtime/gpu_kern.h), run
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
 *   dcz_conv2d_direct_ref within 1e-5 of each output's |w x| sum;
 * - the patch path the GPU takes on small planes and dense weights: each
 *   group's im2col (dcz_gk_im2col, equal to dcz_im2col of the group's
 *   channels) times that group's rows (dcz_gk_sparse_row on the rows from
 *   the group's first), laid out as gpu.c lays it out, against the same
 *   reference;
 * - sparse rows against dcz_spmm_ref, pools and the global mean against
 *   their references, activations against dcz_activation_ref and
 *   dcz_relu_ref, Concat's element map against dcz_concat_ref: bit for bit
 *   (the same sums in the same order; on the host the same expf).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/gpu_kern.h"
#include "runtime/ops.h"
#include "tests/check.h"
#define TEST_RNG_SEED 4242
#include "tests/unit/test_util.h"
#include "tests/unit/conv_geom.h"
#include "tests/unit/sparse_mat.h"

static dcz_gsparse gsparse_of(const dcz_sparse *s)
{
    dcz_gsparse g = { s->rows, s->cols, s->k, s->row_ptr, s->step, s->idx, s->val, s->codebook };
    return g;
}

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = nonzero();
}

typedef struct tally {
    size_t cases, direct, patches;
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

/* The GPU's patch path for a sample: per group, dcz_gk_im2col's patches
 * (checked against dcz_im2col of the group's channels) times the group's
 * rows, into y (out_c, pixels) as gpu.c's dcz_gpu_run_conv2d lays it out. */
static size_t patch_path(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias, const float *x, float *y)
{
    const uint32_t groups = dcz_conv_groups(g), oc = g->out_c / groups, ic = g->in_c / groups;
    const uint32_t pixels = g->out_h * g->out_w, k = ic * g->kh * g->kw;
    const size_t plane = (size_t)g->in_h * g->in_w;
    float *col = malloc((size_t)pixels * k * sizeof *col + 1), *want = malloc((size_t)pixels * k * sizeof *want + 1);
    size_t bad = 0;
    dcz_conv_geom g1 = *g;
    g1.in_c = ic;
    g1.out_c = oc;
    g1.group = 1;
    for (uint32_t gr = 0; gr < groups; gr++) {
        for (uint32_t i = 0; i < pixels * k; i++) col[i] = dcz_gk_im2col(g, gr, x, i);
        dcz_im2col(&g1, x + (size_t)gr * ic * plane, want);
        bad += memcmp(col, want, (size_t)pixels * k * sizeof *col) != 0;
        dcz_gsparse sg = gsparse_of(s);
        sg.row_ptr += (size_t)gr * oc;
        sg.rows = oc;
        for (uint32_t r = 0; r < oc; r++)
            for (uint32_t p = 0; p < pixels; p++)
                y[((size_t)gr * oc + r) * pixels + p] =
                    dcz_gk_sparse_row(&sg, bias + (size_t)gr * oc, col + (size_t)p * k, r);
    }
    free(col);
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
    for (size_t b = 0; b < B; b++) t->patches += patch_path(g, &m.sp, bias, x + b * xin, y + b * yout);
    t->patches += off("patches", g, y, ref, mag, B * yout);
    t->cases++;
    free(x); free(xa); free(wa); free(bias); free(ba); free(ref); free(mag); free(y);
    free_mat(&m);
}

static void test_convolutions(void)
{
    const double dens[] = { 0.0, 0.5, 1.0 };
    const uint32_t codebooks[] = { 256, 0 };
    tally t = { 0, 0, 0 };
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
    CHECK(t.patches == 0, "patches: %zu mismatches", t.patches);
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

static void test_pools(void)
{
    const dcz_conv_geom geoms[] = {
        conv_geom(3, 3, 7, 9, 2, 2, 2, 2, 0, 0), conv_geom(2, 2, 8, 8, 3, 3, 2, 2, 1, 1),
        conv_geom(2, 2, 5, 7, 3, 2, 1, 2, 1, 1), conv_geom(1, 1, 4, 4, 4, 4, 1, 1, 0, 0),
        conv_geom(4, 4, 9, 5, 5, 3, 3, 1, 2, 1),
    };
    size_t bad = 0;
    for (size_t gi = 0; gi < sizeof geoms / sizeof *geoms; gi++) {
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
        for (size_t p = 0; p < B * g->in_c; p++) y[p] = dcz_gk_mean(x + p * plane, plane);
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
        { DCZ_OP_HARD_SWISH, { 0, 0 } },
    };
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        dcz_activation_ref(acts[a].op, acts[a].p, x, N, ref);
        for (int i = 0; i < N; i++) y[i] = dcz_gk_act(acts[a].op, acts[a].p[0], acts[a].p[1], x[i]);
        CHECK(memcmp(y, ref, sizeof y) == 0, "%s differs", dcz_op_name(acts[a].op));
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
}

int main(void)
{
    RUN(test_convolutions);
    RUN(test_sparse_rows);
    RUN(test_pools);
    RUN(test_elements);
    return check_summary();
}
