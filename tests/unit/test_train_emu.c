/* test_train_emu.c: the bodies of the trainer's GPU kernels
 * (train/cuda/tkern.h), run on the host over every output, against the
 * trainer's CPU passes (train/layers.c's operator table). Runs in every
 * build, with or without nvcc or a GPU.
 *
 * Each case builds a small network whose tested layer follows a
 * convolution (so every pass after it is differentiated), runs one
 * training step's forward and backward pass on random inputs and labels
 * (dcz_net_grad), then runs the tested layer's backward pass again into
 * buffers of its own (dcz_train_backward writes, never adds) and compares:
 * - bit for bit, where the body sums in the CPU's order: every
 *   activation's gradient, the loss's gradient by row, a fully connected
 *   layer's bias gradient, the pools (the max pool's argmax, its output and
 *   every pool's input gradient over overlapping and ragged windows),
 *   Mul's output and two gradients, Concat's output and gradients, the
 *   channel shuffle's and slice's,
 *   dropout's, the SGD step of masked, plain, shared (centroid gradients
 *   and moved centroids) and batch-norm parameters, two steps so momentum
 *   counts;
 * - within a stated tolerance, where the CPU splits its sums its own way:
 *   batch norm's statistics, output, running statistics and gradients
 *   (with and without the ReLU it applies), and convolutions, those of one
 *   group as the GPU runs them (the patches transposed by the runtime's
 *   dcz_gk_patch_taps, the products in double as cuBLAS would take them,
 *   col2im for the input's gradient) over 1x1, 3x3, 5x5, 7x7 and
 *   non-square windows at strides 1 and 2, and grouped and depthwise ones
 *   run directly (the runtime's dcz_gk_conv_dense forward, the input's and
 *   weights' gradients by dcz_tk_conv_dx and dcz_tk_conv_dw).
 * Also dropout's keep draws: deterministic, rate-true, key-dependent.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/unit/train_build.h"
#include "train/cuda/tkern.h"
#include "train/internal.h"
#include "train/train.h"

enum { B = 3 };   /* samples a step */

/* One training step's passes over random inputs and labels. */
static int step(dcz_net *net, uint64_t seed)
{
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    float *x = malloc((size_t)B * net->in_dim * sizeof *x);
    uint8_t y[B];
    if (!x) return 0;
    for (int i = 0; i < B * net->in_dim; i++) x[i] = dcz_rng_normal(&r);
    for (int i = 0; i < B; i++) y[i] = (uint8_t)dcz_rng_below(&r, (uint32_t)net->classes);
    const int ok = dcz_net_grad(net, x, y, B, NULL) == DCZ_OK;
    free(x);
    return ok;
}

/* Layer i's backward pass again, each input's gradient into a buffer of
 * its own (dx[k], malloc'd, the caller's to free). */
static void backward_again(dcz_net *net, int i, float **dx)
{
    dcz_tlayer *l = &net->layers[i];
    const float *xs[DCZ_MAX_INPUTS];
    for (uint32_t k = 0; k < l->nin; k++) {
        xs[k] = net->act[l->tin[k]];
        dx[k] = calloc((size_t)B * net->twidth[l->tin[k]], sizeof(float));
    }
    dcz_train_backward(net, l, xs, net->act[i + 1], net->dact[i + 1], dx, B);
}

/* Elements of tensor t of the batch. */
static size_t elems(const dcz_net *net, uint32_t t) { return (size_t)B * net->twidth[t]; }

/* Counts and prints (the first few) elements where got and want differ by
 * more than tol (0: must be equal bit for bit, NaN-ness alike). */
static int differ(const char *what, const float *got, const float *want, size_t n, double tol)
{
    int bad = 0;
    for (size_t j = 0; j < n; j++) {
        const int same = tol == 0 ? memcmp(&got[j], &want[j], sizeof(float)) == 0
                                  : fabs((double)got[j] - want[j]) <= tol;
        if (!same && bad++ < 3) printf("    %s[%zu]: %.9g, want %.9g\n", what, j, got[j], want[j]);
    }
    return bad;
}

/* A tolerance for sums of about terms products of values of the size of
 * the reference's largest. */
static double tol_of(const float *want, size_t n)
{
    double m = 0;
    for (size_t j = 0; j < n; j++) m = fmax(m, fabs(want[j]));
    return 2e-5 * (m + 1e-3);
}

/* ---- activations and the loss ------------------------------------------- */

static void test_activations(void)
{
    const dcz_tlayer acts[] = {
        SIMPLE(DCZ_OP_RELU),
        { .op = DCZ_OP_CLIP, .param = { -0.5f, 0.7f } },
        { .op = DCZ_OP_LEAKY_RELU, .param = { 0.1f } },
        SIMPLE(DCZ_OP_SIGMOID),
        SIMPLE(DCZ_OP_TANH),
        { .op = DCZ_OP_HARD_SIGMOID, .param = { 1.0f / 6, 0.5f } },
        SIMPLE(DCZ_OP_HARD_SWISH),
        SIMPLE(DCZ_OP_SILU),
    };
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        /* wide enough values that HARD_SWISH and HARD_SIGMOID see every
         * piece: the convolution's weights scaled up */
        const dcz_tlayer g[] = { CONV(6, 3, 3, 1, 1), acts[a], SIMPLE(DCZ_OP_FLATTEN), FC(4), SIMPLE(DCZ_OP_SOFTMAX) };
        dcz_net *net = build_net(g, 5, 3, 5, 5, 40 + a);
        REQUIRE(net, "build");
        for (size_t j = 0; j < dcz_tlayer_nweights(&net->layers[0]); j++) net->layers[0].w[j] *= 6.0f;
        REQUIRE(step(net, 7 + a), "step");
        const dcz_tlayer *l = &net->layers[1];
        float *dx[DCZ_MAX_INPUTS];
        backward_again(net, 1, dx);
        const size_t n = elems(net, 1);
        const float *x = net->act[1], *y = net->act[2], *dy = net->dact[2];
        float *want_y = malloc(n * sizeof *want_y), *want_dx = malloc(n * sizeof *want_dx);
        REQUIRE(want_y && want_dx, "alloc");
        size_t pieces[3] = { 0 };
        for (size_t j = 0; j < n; j++) {
            want_y[j] = dcz_gk_act((uint16_t)l->op, l->param[0], l->param[1], x[j]);
            want_dx[j] = dcz_tk_act_grad((uint16_t)l->op, l->param[0], l->param[1], x[j], y[j], dy[j]);
            pieces[x[j] <= -3.0f ? 0 : x[j] >= 3.0f ? 2 : 1]++;
        }
        CHECK(pieces[0] && pieces[1] && pieces[2], "op %d: inputs below -3, between and above 3: %zu %zu %zu",
              l->op, pieces[0], pieces[1], pieces[2]);
        CHECK(differ("y", y, want_y, n, 0) == 0, "op %d: forward differs", l->op);
        CHECK(differ("dx", dx[0], want_dx, n, 0) == 0, "op %d: input gradient differs", l->op);
        free(dx[0]);
        free(want_y);
        free(want_dx);
        dcz_net_free(net);
    }
}

/* The loss's gradient by row (the CPU's loss runs the same body, which
 * test_train.c holds to finite differences: here, that it does), and a
 * fully connected layer's bias gradient, against the CPU's. */
static void test_loss_and_bias(void)
{
    const dcz_tlayer g[] = { CONV(4, 3, 3, 1, 1), SIMPLE(DCZ_OP_FLATTEN), FC(9), SIMPLE(DCZ_OP_RELU), FC(7),
                             SIMPLE(DCZ_OP_SOFTMAX) };
    dcz_net *net = build_net(g, 6, 2, 4, 4, 3);
    REQUIRE(net, "build");
    dcz_rng r;
    dcz_rng_seed(&r, 77);
    float *x = malloc((size_t)B * net->in_dim * sizeof *x);
    REQUIRE(x, "alloc");
    for (int i = 0; i < B * net->in_dim; i++) x[i] = 3.0f * dcz_rng_normal(&r);
    const uint8_t y[B] = { 6, 0, 3 };
    float loss = 0;
    REQUIRE(dcz_net_grad(net, x, y, B, &loss) == DCZ_OK, "grad");
    const int L = net->nlayers, n = net->classes;
    float dz[B * 7];
    double total = 0;
    for (int b = 0; b < B; b++)
        total += dcz_tk_xent_row(net->act[L] + b * n, (uint32_t)n, y[b], B, NULL, 0, 1, dz + b * n);
    CHECK(differ("dz", net->dact[L], dz, (size_t)B * n, 0) == 0, "the loss's gradient differs");
    CHECK(fabs(total / B - loss) < 1e-6, "loss %g, rows' mean %g", loss, total / B);
    for (int i = 2; i <= 4; i += 2) {
        const dcz_tlayer *l = &net->layers[i];
        float gb[16];
        for (int o = 0; o < l->out; o++) gb[o] = dcz_tk_bias_grad(net->dact[i + 1], B, (uint32_t)l->out, 1, (uint32_t)o);
        CHECK(differ("gb", l->gb, gb, (size_t)l->out, 0) == 0, "%s: bias gradient differs", l->name);
    }
    free(x);
    dcz_net_free(net);
}

/* ---- pools ------------------------------------------------------------------- */

static void test_pools(void)
{
    const dcz_tlayer pools[] = {
        POOL(DCZ_OP_MAXPOOL, 2, 2, 0, 0),   /* the CPU's 2x2 path, windows tiling the plane (8) */
        POOL(DCZ_OP_MAXPOOL, 3, 2, 1, 0),   /* overlapping, padded */
        POOL(DCZ_OP_MAXPOOL, 3, 1, 1, 0),
        POOL(DCZ_OP_AVGPOOL, 3, 2, 1, 0),   /* padding left out of the divisor */
        POOL(DCZ_OP_AVGPOOL, 3, 2, 1, 1),   /* and counted */
        POOL(DCZ_OP_AVGPOOL, 2, 2, 0, 0),
        SIMPLE(DCZ_OP_GLOBAL_AVGPOOL),
    };
    /* sides 8 and 7 (2x2 windows leave a ragged edge); a RELU before the
     * pool or not (its zeros tie: the first of equal values wins) */
    for (size_t k = 0; k < sizeof pools / sizeof *pools; k++)
        for (int s = 0; s < 4; s++) {
            const int side = s & 1 ? 7 : 8, at = 1 + (s >> 1);
            const dcz_tlayer g[] = { CONV(3, 3, 3, 1, 1), SIMPLE(DCZ_OP_RELU), pools[k], SIMPLE(DCZ_OP_FLATTEN), FC(4),
                                     SIMPLE(DCZ_OP_SOFTMAX) };
            dcz_tlayer h[6];
            memcpy(h, g, sizeof h);
            if (at == 1) memmove(h + 1, h + 2, 4 * sizeof *h);   /* the RELU left out */
            dcz_net *net = build_net(h, 5 + (at == 2), 2, side, side, 60 + k);
            REQUIRE(net, "build");
            REQUIRE(step(net, 5 + k), "step");
            dcz_tlayer *l = &net->layers[at];
            const dcz_conv_geom gm = dcz_tlayer_geom(l);
            float *dx[DCZ_MAX_INPUTS];
            backward_again(net, at, dx);
            const size_t nin = elems(net, (uint32_t)at), nout = elems(net, (uint32_t)at + 1);
            const size_t in1 = nin / B, out1 = nout / B;
            float *want_y = malloc(nout * sizeof(float)), *want_dx = malloc(nin * sizeof(float));
            REQUIRE(want_y && want_dx, "alloc");
            const float *x = net->act[at], *dy = net->dact[at + 1];
            int bad_arg = 0;
            for (size_t b = 0; b < B; b++) {
                for (size_t o = 0; o < out1; o++) {
                    if (l->op == DCZ_OP_MAXPOOL) {
                        const uint32_t a = dcz_tk_maxpool_arg(&gm, x + b * in1, (uint32_t)o);
                        const int32_t *arg = l->cache;
                        bad_arg += arg[b * out1 + o] != (int32_t)a;
                        want_y[b * out1 + o] = x[b * in1 + o / (gm.out_h * gm.out_w) * gm.in_h * gm.in_w + a];
                    } else if (l->op == DCZ_OP_AVGPOOL) {
                        want_y[b * out1 + o] = dcz_gk_pool(&gm, 1, l->count_include_pad, x + b * in1, (uint32_t)o);
                    } else {
                        want_y[b * out1 + o] = dcz_mean_one(x + b * in1 + o * gm.in_h * gm.in_w, gm.in_h * gm.in_w);
                    }
                }
                for (size_t i = 0; i < in1; i++) {
                    float v;
                    if (l->op == DCZ_OP_MAXPOOL)
                        v = dcz_tk_maxpool_grad(&gm, dy + b * out1, (const int32_t *)l->cache + b * out1, (uint32_t)i);
                    else if (l->op == DCZ_OP_AVGPOOL)
                        v = dcz_tk_avgpool_grad(&gm, l->count_include_pad, dy + b * out1, (uint32_t)i);
                    else
                        v = dcz_tk_gap_grad(dy, gm.in_h * gm.in_w, b * in1 + i);
                    want_dx[b * in1 + i] = v;
                }
            }
            /* the global mean divides where the CPU multiplies by the inverse */
            const double ytol = l->op == DCZ_OP_GLOBAL_AVGPOOL ? tol_of(want_y, nout) : 0;
            CHECK(bad_arg == 0, "pool %zu case %d: %d argmaxes differ", k, s, bad_arg);
            CHECK(differ("y", net->act[at + 1], want_y, nout, ytol) == 0, "pool %zu case %d: output differs", k, s);
            CHECK(differ("dx", dx[0], want_dx, nin, 0) == 0, "pool %zu case %d: input gradient differs", k, s);
            free(dx[0]);
            free(want_y);
            free(want_dx);
            dcz_net_free(net);
        }
}

/* ---- graph layers -------------------------------------------------------------- */

static void test_graph_layers(void)
{
    /* MUL of the convolution's planes by a gate per channel */
    const dcz_tlayer gm[] = { CONV(4, 3, 3, 1, 1), SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(4), SIMPLE(DCZ_OP_SIGMOID),
                              { .op = DCZ_OP_MUL, READS2(1, 4) }, SIMPLE(DCZ_OP_FLATTEN), FC(3),
                              SIMPLE(DCZ_OP_SOFTMAX) };
    dcz_net *net = build_net(gm, 8, 3, 5, 5, 81);
    REQUIRE(net && step(net, 2), "mul net");
    float *dx[DCZ_MAX_INPUTS];
    backward_again(net, 4, dx);
    const uint32_t C = 4, plane = 25;
    float want0[B * 100], want1[B * 4], wanty[B * 100];
    for (uint64_t t = 0; t < (uint64_t)B * C; t++) want1[t] = dcz_tk_mul_factor_grad(net->dact[5], net->act[1], plane, t);
    for (uint64_t t = 0; t < (uint64_t)B * C * plane; t++) {
        wanty[t] = dcz_tk_mul(net->act[1], net->act[4], plane, t);
        want0[t] = dcz_tk_mul(net->dact[5], net->act[4], plane, t);
    }
    CHECK(differ("y", net->act[5], wanty, (size_t)B * 100, 0) == 0, "mul: output differs");
    CHECK(differ("dx", dx[0], want0, (size_t)B * 100, 0) == 0, "mul: the planes' gradient differs");
    CHECK(differ("df", dx[1], want1, (size_t)B * C, 0) == 0, "mul: the factors' gradient differs");
    free(dx[0]);
    free(dx[1]);
    dcz_net_free(net);

    /* CONCAT of 3 and 2 channels */
    const dcz_tlayer gc[] = { CONV(3, 3, 3, 1, 1), CONV(2, 1, 1, 1, 0), { .op = DCZ_OP_CONCAT, READS2(1, 2) },
                              SIMPLE(DCZ_OP_FLATTEN), FC(3), SIMPLE(DCZ_OP_SOFTMAX) };
    net = build_net(gc, 6, 2, 4, 4, 82);
    REQUIRE(net && step(net, 3), "concat net");
    backward_again(net, 2, dx);
    float cat_y[B * 80];
    for (int k = 0; k < 2; k++) {
        const uint32_t width = net->twidth[k + 1], at = k ? net->twidth[1] : 0, out = net->twidth[3];
        float want[B * 48];
        for (uint64_t t = 0; t < (uint64_t)B * width; t++) {
            want[t] = dcz_tk_concat_grad(net->dact[3], out, at, width, t);
            cat_y[dcz_tk_concat_index(out, at, width, t)] = net->act[k + 1][t];
        }
        CHECK(differ("dx", dx[k], want, (size_t)B * width, 0) == 0, "concat: input %d's gradient differs", k);
        free(dx[k]);
    }
    CHECK(differ("y", net->act[3], cat_y, elems(net, 3), 0) == 0, "concat: output differs");
    dcz_net_free(net);

    /* CHANNEL_SHUFFLE of 2 groups, then a SLICE of channels 3..6 */
    const dcz_tlayer gs[] = { CONV(8, 3, 3, 1, 1), { .op = DCZ_OP_CHANNEL_SHUFFLE, .group = 2 },
                              { .op = DCZ_OP_SLICE, .start = 3, .out_c = 4 }, SIMPLE(DCZ_OP_FLATTEN), FC(3),
                              SIMPLE(DCZ_OP_SOFTMAX) };
    net = build_net(gs, 6, 2, 3, 3, 83);
    REQUIRE(net && step(net, 4), "gather net");
    for (int i = 1; i <= 2; i++) {
        const dcz_tlayer *l = &net->layers[i];
        const dcz_conv_geom g = dcz_tlayer_geom(l);
        const uint32_t start = l->op == DCZ_OP_SLICE ? (uint32_t)l->start : 0;
        const uint32_t groups = l->op == DCZ_OP_CHANNEL_SHUFFLE ? (uint32_t)l->group : 1;
        int32_t from[8];
        for (int c = 0; c < 8; c++) from[c] = -1;
        for (uint32_t c = 0; c < g.out_c; c++) from[dcz_gather_source(c, g.out_c, start, groups)] = (int32_t)c;
        backward_again(net, i, dx);
        float want[B * 72];
        const size_t n = elems(net, (uint32_t)i);
        for (uint64_t t = 0; t < n; t++) want[t] = dcz_tk_gather_grad(&g, from, net->dact[i + 1], t);
        CHECK(differ("dx", dx[0], want, n, 0) == 0, "%s: input gradient differs", i == 1 ? "shuffle" : "slice");
        free(dx[0]);
    }
    dcz_net_free(net);

    /* DROPOUT at 0.3: the CPU's mask, the body's scaling */
    const dcz_tlayer gd[] = { CONV(4, 3, 3, 1, 1), SIMPLE(DCZ_OP_FLATTEN), { .op = DCZ_OP_DROPOUT, .rate = 0.3f },
                              FC(3), SIMPLE(DCZ_OP_SOFTMAX) };
    net = build_net(gd, 5, 2, 4, 4, 84);
    REQUIRE(net && step(net, 5), "dropout net");
    backward_again(net, 2, dx);
    {
        const size_t n = elems(net, 2);
        const uint8_t *m = net->layers[2].cache;
        float want[B * 64];
        for (size_t j = 0; j < n; j++) want[j] = dcz_tk_dropout_grad(net->dact[3][j], m[j], 0.3f);
        CHECK(differ("dx", dx[0], want, n, 0) == 0, "dropout: input gradient differs");
        free(dx[0]);
    }
    dcz_net_free(net);

    /* the device's keep draws: the rate's share kept, the same for the same
     * key, other draws for another */
    size_t kept = 0, same = 0, other = 0;
    const size_t N = 200000;
    for (size_t i = 0; i < N; i++) {
        const int k = dcz_tk_dropout_keep(0x1234, i, 0.3f);
        kept += (size_t)k;
        same += k == dcz_tk_dropout_keep(0x1234, i, 0.3f);
        other += k != dcz_tk_dropout_keep(0x1235, i, 0.3f);
    }
    CHECK(fabs((double)kept / N - 0.7) < 0.005, "kept %.4f of the draws at rate 0.3", (double)kept / N);
    CHECK(same == N && other > N / 4, "draws: %zu of %zu repeat, %zu differ under another key", same, N, other);
    CHECK(dcz_tk_dropout_keep(9, 9, 0.0f), "rate 0 dropped a unit");
}

/* ---- batch norm ------------------------------------------------------------------ */

static void test_batchnorm(void)
{
    for (int relu = 0; relu < 2; relu++) {
        /* a RELU alone after the batch norm is applied by it (bnorm.c) */
        const dcz_tlayer g[] = { CONV(5, 3, 3, 1, 1), SIMPLE(DCZ_OP_BATCHNORM),
                                 relu ? (dcz_tlayer)SIMPLE(DCZ_OP_RELU) : (dcz_tlayer)SIMPLE(DCZ_OP_TANH),
                                 SIMPLE(DCZ_OP_FLATTEN), FC(3), SIMPLE(DCZ_OP_SOFTMAX) };
        dcz_net *net = build_net(g, 6, 3, 6, 6, 90 + relu);
        REQUIRE(net, "build");
        dcz_tlayer *l = &net->layers[1];
        const uint32_t C = 5, hw = 36;
        float run_mean[5], run_var[5];
        memcpy(run_mean, l->run_mean, sizeof run_mean);
        memcpy(run_var, l->run_var, sizeof run_var);
        REQUIRE(step(net, 8 + relu), "step");
        CHECK((l->act_after == DCZ_OP_RELU) == relu, "relu applied by the batch norm: %u", l->act_after);
        const float *x = net->act[1], *cache = l->cache;
        const float mom = l->bn_momentum;
        float mean[5], istd[5], unb[5], want_rm[5], want_rv[5], want_gw[5], want_gb[5];
        double sdy[5], sdyx[5];
        for (uint32_t c = 0; c < C; c++) {
            dcz_tk_bn_stats(x, B, C, hw, c, l->eps, &mean[c], &istd[c], &unb[c]);
            want_rm[c] = dcz_tk_bn_running(run_mean[c], mean[c], mom);
            want_rv[c] = dcz_tk_bn_running(run_var[c], unb[c], mom);
        }
        CHECK(differ("mean", cache, mean, C, 1e-6) == 0, "relu %d: batch means differ", relu);
        CHECK(differ("istd", cache + C, istd, C, tol_of(istd, C)) == 0, "relu %d: inverse deviations differ", relu);
        CHECK(differ("run_mean", l->run_mean, want_rm, C, 1e-6) == 0, "relu %d: running means differ", relu);
        CHECK(differ("run_var", l->run_var, want_rv, C, tol_of(want_rv, C)) == 0, "relu %d: running variances differ",
              relu);
        const size_t n = elems(net, 1);
        float *want_y = malloc(n * sizeof(float)), *want_dx = malloc(n * sizeof(float));
        REQUIRE(want_y && want_dx, "alloc");
        for (size_t j = 0; j < n; j++) {
            const uint32_t c = (uint32_t)(j / hw % C);
            want_y[j] = dcz_tk_bn_out(x[j], l->w[c], l->b[c], mean[c], istd[c], relu);
        }
        CHECK(differ("y", net->act[2], want_y, n, tol_of(want_y, n)) == 0, "relu %d: output differs", relu);
        /* the gradient into the batch norm's output: the RELU's, masked by
         * its output, or the TANH's */
        float *dx[DCZ_MAX_INPUTS];
        backward_again(net, 1, dx);
        const float *dy = net->dact[2];
        for (uint32_t c = 0; c < C; c++) {
            dcz_tk_bn_param_grads(x, dy, B, C, hw, c, mean[c], istd[c], &sdy[c], &sdyx[c]);
            want_gb[c] = (float)sdy[c];
            want_gw[c] = (float)sdyx[c];
        }
        for (size_t j = 0; j < n; j++) {
            const uint32_t c = (uint32_t)(j / hw % C);
            want_dx[j] = dcz_tk_bn_dx(dy[j], x[j], l->w[c], mean[c], istd[c], sdy[c], sdyx[c], (uint64_t)B * hw);
        }
        CHECK(differ("gb", l->gb, want_gb, C, tol_of(want_gb, C)) == 0, "relu %d: beta's gradient differs", relu);
        CHECK(differ("gw", l->gw, want_gw, C, tol_of(want_gw, C)) == 0, "relu %d: gamma's gradient differs", relu);
        CHECK(differ("dx", dx[0], want_dx, n, tol_of(want_dx, n)) == 0, "relu %d: input gradient differs", relu);
        free(dx[0]);
        free(want_y);
        free(want_dx);
        dcz_net_free(net);
    }
}

/* ---- convolutions ---------------------------------------------------------------- */

/* What the tested convolution's passes should give (layer 1 of the net),
 * and the CPU's against it. */
typedef struct conv_want { float *y, *gw, *gb, *dx; size_t ny, nw, nb, nx; } conv_want;

static conv_want conv_want_alloc(const dcz_net *net)
{
    const dcz_tlayer *l = &net->layers[1];
    conv_want w = { NULL, NULL, NULL, NULL, elems(net, 2), dcz_tlayer_nweights(l), dcz_tlayer_nbias(l),
                    elems(net, 1) };
    w.y = malloc(w.ny * sizeof(float));
    w.gw = malloc(w.nw * sizeof(float));
    w.gb = malloc(w.nb * sizeof(float));
    w.dx = malloc(w.nx * sizeof(float));
    return w;
}

static void compare_conv(dcz_net *net, const char *what, conv_want *w)
{
    const dcz_tlayer *l = &net->layers[1];
    float *dx[DCZ_MAX_INPUTS];
    backward_again(net, 1, dx);
    CHECK(differ("y", net->act[2], w->y, w->ny, tol_of(w->y, w->ny)) == 0, "%s: output differs", what);
    CHECK(differ("gw", l->gw, w->gw, w->nw, tol_of(w->gw, w->nw)) == 0, "%s: weight gradient differs", what);
    CHECK(differ("gb", l->gb, w->gb, w->nb, tol_of(w->gb, w->nb)) == 0, "%s: bias gradient differs", what);
    CHECK(differ("dx", dx[0], w->dx, w->nx, tol_of(w->dx, w->nx)) == 0, "%s: input gradient differs", what);
    free(dx[0]);
    free(w->y);
    free(w->gw);
    free(w->gb);
    free(w->dx);
}

/* A convolution of one group as the GPU runs it: its patches transposed
 * (in_c kh kw, batch out_h out_w), the products in double, col2im. */
static void check_conv_patches(dcz_net *net, const char *what)
{
    dcz_tlayer *l = &net->layers[1];
    const dcz_conv_geom g = dcz_tlayer_geom(l);
    const size_t K = (size_t)g.in_c * g.kh * g.kw, ohw = (size_t)g.out_h * g.out_w, P = B * ohw;
    const size_t in1 = (size_t)g.in_c * g.in_h * g.in_w, out1 = (size_t)g.out_c * ohw;
    float *colt = malloc(K * P * sizeof(float)), *dcolt = malloc(K * P * sizeof(float));
    conv_want w = conv_want_alloc(net);
    REQUIRE(colt && dcolt && w.y && w.gw && w.gb && w.dx, "alloc");
    const float *x = net->act[1], *dy = net->dact[2];
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t ic = 0; ic < g.in_c; ic++)
            for (uint32_t p = 0; p < ohw; p++)
                dcz_gk_patch_taps(&g, x + b * in1, ic, p, colt + (size_t)ic * g.kh * g.kw * P + b * ohw + p, P);
    for (uint32_t oc = 0; oc < g.out_c; oc++) {
        for (size_t q = 0; q < P; q++) {   /* y = W colt + b */
            double s = l->b[oc];
            for (size_t k = 0; k < K; k++) s += (double)l->w[oc * K + k] * colt[k * P + q];
            w.y[q / ohw * out1 + oc * ohw + q % ohw] = (float)s;
        }
        for (size_t k = 0; k < K; k++) {   /* gW = dY colt^T */
            double s = 0;
            for (size_t q = 0; q < P; q++) s += (double)dy[q / ohw * out1 + oc * ohw + q % ohw] * colt[k * P + q];
            w.gw[oc * K + k] = (float)s;
        }
        w.gb[oc] = dcz_tk_bias_grad(dy, B, g.out_c, (uint32_t)ohw, oc);
    }
    float *dyr = malloc(g.out_c * P * sizeof(float));   /* dY by rows (out_c, batch out_h out_w) */
    REQUIRE(dyr, "alloc");
    for (uint64_t t = 0; t < g.out_c * P; t++) dyr[t] = dcz_tk_by_rows(dy, B, g.out_c, (uint32_t)ohw, t);
    for (size_t k = 0; k < K; k++)   /* dcolt = W^T dY */
        for (size_t q = 0; q < P; q++) {
            double s = 0;
            for (uint32_t oc = 0; oc < g.out_c; oc++) s += (double)l->w[oc * K + k] * dyr[oc * P + q];
            dcolt[k * P + q] = (float)s;
        }
    free(dyr);
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t i = 0; i < in1; i++) w.dx[b * in1 + i] = dcz_tk_col2im(&g, dcolt, B, b, i);
    compare_conv(net, what, &w);
    free(colt);
    free(dcolt);
}

/* A grouped or depthwise layer run directly. */
static void check_conv_direct(dcz_net *net, const char *what)
{
    dcz_tlayer *l = &net->layers[1];
    const dcz_conv_geom g = dcz_tlayer_geom(l);
    const size_t ohw = (size_t)g.out_h * g.out_w, in1 = (size_t)g.in_c * g.in_h * g.in_w, out1 = (size_t)g.out_c * ohw;
    conv_want w = conv_want_alloc(net);
    REQUIRE(w.y && w.gw && w.gb && w.dx, "alloc");
    const float *x = net->act[1], *dy = net->dact[2];
    for (uint32_t b = 0; b < B; b++) {
        for (uint32_t i = 0; i < out1; i++) w.y[b * out1 + i] = dcz_gk_conv_dense(&g, l->w, l->b, x + b * in1, i);
        for (uint32_t i = 0; i < in1; i++) w.dx[b * in1 + i] = dcz_tk_conv_dx(&g, l->w, dy + b * out1, i);
    }
    for (size_t j = 0; j < w.nw; j++) w.gw[j] = dcz_tk_conv_dw(&g, x, dy, B, j);
    for (uint32_t oc = 0; oc < g.out_c; oc++) w.gb[oc] = dcz_tk_bias_grad(dy, B, g.out_c, (uint32_t)ohw, oc);
    compare_conv(net, what, &w);
}

static void test_convolutions(void)
{
    struct { dcz_tlayer l; int c, h, w; const char *name; } cases[] = {
        { CONV(5, 3, 3, 1, 1), 4, 7, 7, "3x3 stride 1" },
        { CONV(5, 3, 3, 2, 1), 4, 7, 7, "3x3 stride 2" },
        { CONV(3, 5, 5, 1, 2), 2, 6, 6, "5x5 pad 2" },
        { CONV(6, 1, 1, 1, 0), 4, 5, 5, "1x1" },
        { CONV(6, 1, 1, 2, 0), 4, 5, 5, "1x1 stride 2" },
        { CONV(4, 7, 7, 2, 3), 3, 9, 9, "7x7 stride 2" },
        { { .op = DCZ_OP_CONV2D, .out_c = 4, .kh = 3, .kw = 1, .sh = 2, .sw = 1, .ph = 1, .pw = 0 }, 3, 6, 5,
          "3x1 strides 2, 1" },
        { { .op = DCZ_OP_CONV2D, .out_c = 16, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1 }, 16, 6, 6,
          "3x3 of 16 channels (Winograd on the CPU)" },
        { { .op = DCZ_OP_CONV2D, .out_c = 6, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .group = 6 }, 6, 7,
          7, "depthwise 3x3" },
        { { .op = DCZ_OP_CONV2D, .out_c = 6, .kh = 5, .kw = 5, .sh = 2, .sw = 2, .ph = 2, .pw = 2, .group = 6 }, 6, 9,
          9, "depthwise 5x5 stride 2" },
        { { .op = DCZ_OP_CONV2D, .out_c = 4, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .group = 2 }, 6, 7,
          7, "2 groups stride 2" },
        { { .op = DCZ_OP_CONV2D, .out_c = 12, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .group = 4 }, 4,
          5, 5, "depthwise, 3 filters a channel" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        /* a first convolution makes the tested one's input channels */
        const dcz_tlayer first = CONV(cases[k].c, 3, 3, 1, 1);
        const dcz_tlayer g[] = { first, cases[k].l, SIMPLE(DCZ_OP_FLATTEN), FC(3), SIMPLE(DCZ_OP_SOFTMAX) };
        dcz_net *net = build_net(g, 5, 2, cases[k].h, cases[k].w, 100 + k);
        REQUIRE(net, "build %s", cases[k].name);
        REQUIRE(step(net, 30 + k), "step");
        if (dcz_tlayer_groups(&net->layers[1]) == 1) check_conv_patches(net, cases[k].name);
        else check_conv_direct(net, cases[k].name);
        dcz_net_free(net);
    }
}

/* ---- the SGD step ------------------------------------------------------------------ */

/* Two steps of SGD with momentum and weight decay on a net with a pruned
 * layer, a shared one and a batch norm: the bodies on copies of the
 * parameters against dcz_net_step. */
/* The parts a channel's sum over a batch is cut into: 64 for up to 64 x
 * 256 values, then one every 256 (at most 8192), each non-empty and
 * together every value once; a large channel's bias gradient and batch
 * statistics, whose sums take more than 64 parts, are their parts' sums
 * in order and the whole sum's within rounding. */
static void test_parts(void)
{
    CHECK(dcz_tk_parts(1) == 64 && dcz_tk_parts(16384) == 64 && dcz_tk_parts(16640) == 65 &&
              dcz_tk_parts(200704) == 784 && dcz_tk_parts((uint64_t)1 << 40) == DCZ_TK_PARTS_MAX,
          "parts: %u %u %u %u", dcz_tk_parts(1), dcz_tk_parts(16640), dcz_tk_parts(200704), dcz_tk_parts(1ull << 40));
    const uint64_t ns[] = { 64, 100, 16384, 16385, 16640, 25600, 200704, 802816, 3000017 };
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        const uint32_t P = dcz_tk_parts(ns[i]);
        int ok = dcz_tk_part_lo(ns[i], 0) == 0 && dcz_tk_part_lo(ns[i], P) == ns[i];
        for (uint32_t p = 0; p < P; p++) {
            const uint64_t len = dcz_tk_part_lo(ns[i], p + 1) - dcz_tk_part_lo(ns[i], p);
            ok &= ns[i] < P ? len <= 1 : len >= ns[i] / P && len <= ns[i] / P + 1;
        }
        CHECK(ok, "%llu values: parts that do not cover them evenly", (unsigned long long)ns[i]);
    }
    enum { NB = 2, C = 3, HW = 128 * 100 };   /* 25,600 values a channel: 100 parts */
    float *x = malloc(sizeof(float) * NB * C * HW);
    REQUIRE(x, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 150);
    for (int j = 0; j < NB * C * HW; j++) x[j] = dcz_rng_uniform(&r) * 4 - 1;
    const uint32_t P = dcz_tk_parts((uint64_t)NB * HW);
    REQUIRE(P == 100, "%u parts", P);
    for (uint32_t c = 0; c < C; c++) {
        double parts = 0, whole = 0, dev = 0;
        for (uint32_t p = 0; p < P; p++) parts += dcz_tk_chan_part(x, NB, C, HW, c, p, 0.0f, 0);
        for (int b = 0; b < NB; b++)
            for (int k = 0; k < HW; k++) whole += x[((size_t)b * C + c) * HW + k];
        const float g = dcz_tk_bias_grad(x, NB, C, HW, c);
        CHECK(g == (float)parts && fabs(g - whole) <= 1e-6 * fabs(whole) + 1e-3, "channel %u: %g, parts %g, whole %g",
              c, g, parts, whole);
        float mean, istd, unbiased;
        dcz_tk_bn_stats(x, NB, C, HW, c, 1e-5f, &mean, &istd, &unbiased);
        for (int b = 0; b < NB; b++)
            for (int k = 0; k < HW; k++) {
                const double d = x[((size_t)b * C + c) * HW + k] - (double)mean;
                dev += d * d;
            }
        CHECK(fabs(mean - whole / (NB * HW)) < 1e-6 && fabs(unbiased - dev / (NB * HW - 1)) < 1e-5 * unbiased,
              "channel %u: mean %g variance %g", c, mean, unbiased);
    }
    free(x);
}

static void test_sgd(void)
{
    const dcz_tlayer g[] = { CONV(4, 3, 3, 1, 1), SIMPLE(DCZ_OP_BATCHNORM), SIMPLE(DCZ_OP_TANH),
                             SIMPLE(DCZ_OP_FLATTEN), FC(8), SIMPLE(DCZ_OP_RELU), FC(3), SIMPLE(DCZ_OP_SOFTMAX) };
    dcz_net *net = build_net(g, 8, 2, 4, 4, 110);
    REQUIRE(net, "build");
    dcz_rng r;
    dcz_rng_seed(&r, 111);
    dcz_tlayer *pruned = &net->layers[4], *shared = &net->layers[6];
    const size_t np = dcz_tlayer_nweights(pruned), ns = dcz_tlayer_nweights(shared);
    pruned->mask = malloc(np);
    shared->mask = malloc(ns);
    shared->assign = malloc(ns);
    shared->codebook = malloc(4 * sizeof(float));
    REQUIRE(pruned->mask && shared->mask && shared->assign && shared->codebook, "alloc");
    for (size_t j = 0; j < np; j++) pruned->mask[j] = dcz_rng_uniform(&r) > 0.4f;
    shared->k = 4;
    for (int c = 0; c < 4; c++) shared->codebook[c] = 0.3f * (float)(c - 1.5);
    for (size_t j = 0; j < ns; j++) {
        shared->mask[j] = dcz_rng_uniform(&r) > 0.3f;
        shared->assign[j] = (uint8_t)dcz_rng_below(&r, 4);
    }
    REQUIRE(dcz_net_validate(net) == DCZ_OK, "validate");
    dcz_net_apply_constraints(net);
    const dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-3f, .batch = B, .train_biases = 1,
                          .train_weights = 1 };
    REQUIRE(step(net, 1) && dcz_net_step(net, &opt) == DCZ_OK, "first step");
    REQUIRE(step(net, 2), "second gradients");
    /* the centroids' gradients from their members, in ascending order */
    uint32_t members[64];
    float gcb[4];
    for (int c = 0; c < 4; c++) {
        uint32_t n = 0;
        for (size_t j = 0; j < ns; j++)
            if (shared->mask[j] && shared->assign[j] == c) members[n++] = (uint32_t)j;
        gcb[c] = dcz_tk_centroid_grad(shared->gw, members, 0, n);
    }
    CHECK(differ("gcb", shared->gcb, gcb, 4, 0) == 0, "centroid gradients differ");
    /* copies of every parameter and momentum, stepped by the bodies */
    const int L = net->nlayers;
    float *w[8] = { 0 }, *b[8] = { 0 }, *vw[8] = { 0 }, *vb[8] = { 0 };
    float cb[4], vcb[4];
    for (int i = 0; i < L; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (!dcz_tlayer_has_params(l)) continue;
        const size_t nw = dcz_tlayer_nweights(l), nb = dcz_tlayer_nbias(l);
        const int bn = l->op == DCZ_OP_BATCHNORM;
        w[i] = malloc(nw * sizeof(float));
        vw[i] = calloc(nw, sizeof(float));
        b[i] = malloc(nb * sizeof(float));
        vb[i] = malloc(nb * sizeof(float));
        REQUIRE(w[i] && vw[i] && b[i] && vb[i], "alloc");
        memcpy(w[i], l->w, nw * sizeof(float));
        if (l->vw) memcpy(vw[i], l->vw, (bn ? nb : nw) * sizeof(float));
        memcpy(b[i], l->b, nb * sizeof(float));
        memcpy(vb[i], l->vb, nb * sizeof(float));
        for (size_t j = 0; j < nb; j++) dcz_tk_sgd(&b[i][j], &vb[i][j], l->gb[j], opt.lr, opt.momentum, 0, 1);
        if (l == shared) {
            memcpy(cb, l->codebook, sizeof cb);
            memcpy(vcb, l->vcb, sizeof vcb);
            for (int c = 0; c < 4; c++) dcz_tk_sgd(&cb[c], &vcb[c], gcb[c], opt.lr, opt.momentum, 0, 1);
            for (size_t j = 0; j < nw; j++) w[i][j] = dcz_tk_shared_weight(cb, 4, l->assign[j], l->mask[j]);
        } else {
            for (size_t j = 0; j < (bn ? nb : nw); j++)
                dcz_tk_sgd(&w[i][j], &vw[i][j], l->gw[j], opt.lr, opt.momentum, bn ? 0 : opt.weight_decay,
                           !l->mask || l->mask[j]);
        }
    }
    REQUIRE(dcz_net_step(net, &opt) == DCZ_OK, "second step");
    for (int i = 0; i < L; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (!w[i]) continue;
        const size_t nw = dcz_tlayer_nweights(l), nb = dcz_tlayer_nbias(l);
        CHECK(differ("w", l->w, w[i], nw, 0) == 0, "%s: weights differ after the step", l->name);
        CHECK(differ("b", l->b, b[i], nb, 0) == 0, "%s: biases differ after the step", l->name);
        CHECK(differ("vb", l->vb, vb[i], nb, 0) == 0, "%s: bias momenta differ", l->name);
        if (l != shared)
            CHECK(differ("vw", l->vw, vw[i], l->op == DCZ_OP_BATCHNORM ? nb : nw, 0) == 0, "%s: momenta differ",
                  l->name);
        free(w[i]);
        free(b[i]);
        free(vw[i]);
        free(vb[i]);
    }
    CHECK(differ("codebook", shared->codebook, cb, 4, 0) == 0, "centroids differ after the step");
    size_t zeros = 0;
    for (size_t j = 0; j < np; j++) zeros += !pruned->mask[j] && pruned->w[j] == 0.0f;
    CHECK(zeros > np / 5, "pruned weights at 0: %zu", zeros);
    /* a pruned weight ends at 0 with its momentum whatever it was given */
    float pw = 0.5f, pv = 0.25f;
    dcz_tk_sgd(&pw, &pv, 1.0f, 0.1f, 0.9f, 1e-3f, 0);
    CHECK(pw == 0.0f && pv == 0.0f, "a pruned weight stepped to %g (momentum %g)", pw, pv);
    dcz_net_free(net);
}

int main(void)
{
    RUN(test_activations);
    RUN(test_loss_and_bias);
    RUN(test_pools);
    RUN(test_graph_layers);
    RUN(test_batchnorm);
    RUN(test_convolutions);
    RUN(test_sgd);
    RUN(test_parts);
    return check_summary();
}
