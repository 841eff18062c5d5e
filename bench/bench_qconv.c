/* bench_qconv.c: the convolutions of calibrated 8-bit models on the
 * integer shift form, batch 1, one thread, in the same run:
 *   taps   the quad taps (shift_planes__vnni: a load and a vpdpbusd a tap
 *          and vector of 16 output cells), the baseline
 *   amx    the AMX tiles (kernels_amx.c: tdpbsud, 16 channels by 16 cells)
 * both with the split of the input and the requantization around them, on
 * layers of the presets (the ResNet-style, MobileNetV2-style and
 * conv-heavy CNN ones, LeNet-5's conv2) at their recipes' densities, and layers of few
 * input channels (an RGB image's first layer: the tiles' row form), random
 * 8-bit weights. Prints microseconds (medians), taps / amx, the kernel the
 * cost rule (dcz_qamx_cost against the quad taps' cost) picks and whether
 * that was the faster one. Timings are reported, never asserted; without
 * AVX-512 VNNI nothing runs, without AMX the amx column says SKIP.
 * BENCH_LAYER=NAME times that layer alone (for a profiler).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/model.h"
#include "tests/unit/test_util.h"
#include "tests/unit/qsparse_mat.h"
#include "tests/unit/conv_geom.h"

#define REPS 301

/* median microseconds of one call of the layer on f as it is */
static double time_layer(const dcz_conv_geom *g, const dcz_qshift *f, const dcz_requant *rq, const dcz_q *x,
                         float *scratch, dcz_q *y)
{
    static double t[REPS];
    for (int i = 0; i < 100; i++)
        dcz_qconv2d_shift_requant(NULL, g, f, NULL, rq, -127, 127, 0, 0, NULL, x, 1, scratch, y);
    for (int r = 0; r < REPS; r++) {
        const double a = bench_now();
        for (int i = 0; i < 10; i++)
            dcz_qconv2d_shift_requant(NULL, g, f, NULL, rq, -127, 127, 0, 0, NULL, x, 1, scratch, y);
        t[r] = (bench_now() - a) / 10;
    }
    qsort(t, REPS, sizeof *t, bench_cmp_double);
    return t[REPS / 2] * 1e6;
}

int main(void)
{
    if (!dcz_qshift_variant()) {
        printf("bench_qconv: SKIP (no AVX-512 VNNI: the integer shift form does not run here)\n");
        return 0;
    }
    const int amx = dcz_amx_ready();
    const bench_layer layers[] = {
        { "resnet-16-16-28", 16, 16, 28, 3, 1, 1, 0.40 },
        { "resnet-s2-16-32", 16, 32, 28, 3, 1, 2, 0.30 },
        { "resnet-32-32-14", 32, 32, 14, 3, 1, 1, 0.30 },
        { "resnet-proj-16-32", 16, 32, 28, 1, 0, 2, 0.50 },
        { "resnet-s2-32-64", 32, 64, 14, 3, 1, 2, 0.20 },
        { "resnet-64-64-7", 64, 64, 7, 3, 1, 1, 0.16 },
        { "mbv2-pw-16-96-28", 16, 96, 28, 1, 0, 1, 0.50 },
        { "mbv2-pw-96-24-14", 96, 24, 14, 1, 0, 1, 0.50 },
        { "mbv2-pw-24-144-14", 24, 144, 14, 1, 0, 1, 0.40 },
        { "mbv2-pw-144-24-14", 144, 24, 14, 1, 0, 1, 0.40 },
        { "mbv2-pw-32-192-7", 32, 192, 7, 1, 0, 1, 0.35 },
        { "mbv2-pw-64-384-4", 64, 384, 4, 1, 0, 1, 0.25 },
        { "mbv2-pw-384-96-4", 384, 96, 4, 1, 0, 1, 0.25 },
        { "cnn-32-32-28", 32, 32, 28, 3, 1, 1, 0.30 },
        { "cnn-64-64-14", 64, 64, 14, 3, 1, 1, 0.30 },
        { "cnn-64-128-7", 64, 128, 7, 3, 1, 1, 0.30 },
        { "lenet5-conv2", 20, 50, 12, 5, 0, 1, 0.12 },
        { "rgb-3-32-32", 3, 32, 32, 3, 1, 1, 0.60 },
        { "rgb-3-64-32-k5", 3, 64, 32, 5, 2, 1, 0.60 },
        { "small-8-32-28", 8, 32, 28, 3, 1, 1, 0.50 },
        { "small-12-32-14-k5", 12, 32, 14, 5, 2, 1, 0.40 },
    };
    printf("== integer convolutions, batch 1, one thread: quad taps (vpdpbusd) against AMX tiles (tdpbsud), "
           "microseconds with the split and the requantization\n");
    if (!amx) printf("AMX: SKIP (this CPU has no AMX-INT8, or the OS refuses it)\n");
    printf("%-20s %8s %8s %8s %8s %6s\n", "layer", "density", "taps", "amx", "taps/amx", "pick");
    const char *only = getenv("BENCH_LAYER");
    for (size_t i = 0; i < sizeof layers / sizeof *layers; i++) {
        if (only && strcmp(only, layers[i].name)) continue;
        const bench_layer *l = &layers[i];
        const dcz_conv_geom g = conv_geom(l->in_c, l->out_c, l->hw, l->hw, l->k, l->k, l->stride, l->stride,
                                          l->pad, l->pad);
        qmat m;
        make_qmat(&m, g.out_c, l->in_c * l->k * l->k, l->density, 16, 127);
        void *mem = alloc(dcz_qshift_bytes(&g, m.sp.entries, amx), 1);
        float *scratch = alloc(dcz_qshift_scratch_floats(&g), sizeof(float));
        const size_t xin = (size_t)l->in_c * l->hw * l->hw, yout = (size_t)g.out_c * g.out_h * g.out_w;
        dcz_q *x = alloc(xin, sizeof(dcz_q)), *y = alloc(yout, sizeof(dcz_q));
        int32_t *mult = alloc(g.out_c, sizeof(int32_t));
        uint8_t *shift = alloc(g.out_c, 1);
        dcz_qshift f;
        if (!mem || !scratch || !x || !y || !mult || !shift || !dcz_qshift_build(&g, &m.sp, amx, mem, &f)) {
            fprintf(stderr, "bench_qconv: %s: no memory or no form\n", l->name);
            return 1;
        }
        fill_q(x, xin, 127);
        for (uint32_t c = 0; c < g.out_c; c++) mult[c] = 1 << 30, shift[c] = 40;
        const dcz_requant rq = { mult, shift, 127, NULL };
        const uint8_t pick = f.amx_pick;
        f.amx_pick = 0;
        const double taps = time_layer(&g, &f, &rq, x, scratch, y);
        if (f.amx) {
            f.amx_pick = 1;
            const double tiles = time_layer(&g, &f, &rq, x, scratch, y);
            printf("%-20s %7.0f%% %8.2f %8.2f %8.2f %6s%s\n", l->name, 100 * l->density, taps, tiles, taps / tiles,
                   pick ? "amx" : "taps", (pick ? tiles <= taps : taps <= tiles) ? "" : " (the slower)");
        } else {
            printf("%-20s %7.0f%% %8.2f %8s %8s %6s\n", l->name, 100 * l->density, taps, "-", "-", "taps");
        }
        free(mem); free(scratch); free(x); free(y); free(mult); free(shift);
        free_qmat(&m);
    }
    return 0;
}
