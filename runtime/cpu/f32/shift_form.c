/* shift_form.c: the float shift form (shift.h; model.h's dcz_shift) as
 * the loader builds it from a layer's weights, and the cost model that
 * decides where it runs: the output channels of a block
 * (dcz_shift_pick_block) and the shift form against the dense product
 * (dcz_conv2d_pick_shift), from costs measured per instruction set.
 * Apart from the kernels (kernels_shift.c, whose opening comment describes
 * the layout and the sums), which only read the form; the model weighs the
 * instruction set they run on (dcz_shift_best).
 *
 * Checked by tests/unit/test_kernels.c (forms of sparse and dense weights
 * in blocks of 1, 2 and 4 over the convolution grid, run against the
 * references) and bench/bench_conv.c (what the costs pick, layer by layer).
 */
#include <math.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#define DCZ_X86 1
#endif

#include "runtime/cpu/shift_split.h"

uint64_t dcz_shift_scratch_floats(const dcz_conv_geom *g) { return scratch_cells(g, g->in_c, 1); }

/* The weights a shift form is built from: a float execution form s, an
 * integer one q (their rows and steps alike; skip, when not NULL, the rows
 * the form leaves empty), or dense weights w. */
typedef struct shift_source {
    const dcz_sparse *s;
    const dcz_qsparse *q;
    const uint8_t *skip;
    const float *w;
} shift_source;

static void shift_build(const dcz_conv_geom *g, const shift_source *src, uint32_t ob, void *mem, dcz_shift *f);

void dcz_shift_build(const dcz_conv_geom *g, const dcz_sparse *s, const float *w, uint32_t ob, void *mem,
                     dcz_shift *f)
{
    const shift_source src = { s, NULL, NULL, s ? NULL : w };
    shift_build(g, &src, ob, mem, f);
}

void dcz_shift_build_int(const dcz_conv_geom *g, const dcz_qsparse *q, const uint8_t *skip, uint32_t ob, void *mem,
                         dcz_shift *f)
{
    const shift_source src = { NULL, q, skip, NULL };
    shift_build(g, &src, ob, mem, f);
}

static void shift_build(const dcz_conv_geom *g, const shift_source *src, uint32_t ob, void *mem, dcz_shift *f)
{
    const dcz_sparse *const s = src->s;
    const uint32_t *const row_ptr = s ? s->row_ptr : src->q ? src->q->row_ptr : NULL;
    const uint8_t *const step = s ? s->step : src->q ? src->q->step : NULL;
    const uint32_t entries = s ? s->entries : src->q ? src->q->entries : 0;
    const split_geom q = split_geom_of(g, g->in_c, 1);
    const uint32_t ksize = g->kh * g->kw, cols = dcz_conv_group_in(g) * ksize;
    const uint32_t blocks = (g->out_c + ob - 1) / ob;
    uint64_t nnz = (uint64_t)cols * g->out_c;
    if (row_ptr) {
        nnz = 0;
        for (uint32_t e = 0; e < entries; e++) nnz += step[e] != DCZ_STEP_FILLER;
    }
    const uint64_t bound = dcz_shift_taps_bound(g, nnz, ob);
    uint32_t *ptr = mem, *off = ptr + blocks + 1;
    float *val = (float *)(off + bound);
    uint8_t *cell = dcz_shift_cells(g, ob) ? (uint8_t *)(val + bound * ob) : NULL;
    uint32_t n = 0;
    const int dense = !row_ptr && !src->q;
    if (dense) {
        /* dense weights: each block takes every column of its group in
         * order, what the merge below gives them, without a merge: the
         * offsets of one channel's taps shifted by whole channels, the
         * values the block's rows side by side (torchvision's ResNet-50
         * spent a fifth of its loading in the merge) */
        const uint32_t gin = dcz_conv_group_in(g);
        const size_t cstride = (size_t)g->sh * g->sw * q.plane;
        for (uint32_t k = 0; k < blocks; k++) {
            const uint32_t rows = g->out_c - k * ob < ob ? g->out_c - k * ob : ob, ic0 = dcz_conv_in0(g, k * ob);
            ptr[k] = n;
            for (uint32_t c = 0; c < gin; c++)
                for (uint32_t t = 0; t < ksize; t++) {
                    off[n + c * ksize + t] = (uint32_t)((ic0 + c) * cstride) + tap_offset(g, &q, 0, t / g->kw, t % g->kw);
                    if (cell) cell[n + c * ksize + t] = (uint8_t)t;
                }
            for (uint32_t j = 0; j < cols; j++)
                for (uint32_t o = 0; o < ob; o++)
                    val[(size_t)(n + j) * ob + o] = o < rows ? src->w[(size_t)(k * ob + o) * cols + j] : 0.0f;
            n += cols;
        }
    }
    for (uint32_t k = 0; !dense && k < blocks; k++) {
        ptr[k] = n;
        /* the union of the block's columns, in column order: a k-way merge
         * of its rows */
        uint32_t e[4], end[4], col[4];
        const uint32_t rows = g->out_c - k * ob < ob ? g->out_c - k * ob : ob;
        for (uint32_t o = 0; o < rows; o++) {
            const uint32_t r = k * ob + o;
            e[o] = row_ptr[r];
            end[o] = row_ptr[r + 1];
            if (src->skip && src->skip[r]) end[o] = e[o];
            col[o] = 0;
            /* the first real entry: col[o] its column, e[o] its index */
            while (e[o] < end[o] && (col[o] += step[e[o]], step[e[o]] == DCZ_STEP_FILLER)) e[o]++;
        }
        const uint32_t ic0 = dcz_conv_in0(g, k * ob);
        for (;;) {
            uint32_t next = UINT32_MAX;
            for (uint32_t o = 0; o < rows; o++)
                if (e[o] < end[o] && col[o] < next) next = col[o];
            if (next == UINT32_MAX) break;
            off[n] = tap_offset(g, &q, ic0 + next / ksize, next % ksize / g->kw, next % g->kw);
            if (cell) cell[n] = (uint8_t)(next % ksize);
            for (uint32_t o = 0; o < ob; o++) {
                float v = 0.0f;
                if (o < rows && e[o] < end[o] && col[o] == next) {
                    v = s ? dcz_sparse_weight(s, e[o]) : (float)dcz_qsparse_weight(src->q, k * ob + o, e[o]);
                    e[o]++;
                    while (e[o] < end[o] && (col[o] += step[e[o]], step[e[o]] == DCZ_STEP_FILLER)) e[o]++;
                }
                val[(size_t)n * ob + o] = v;
            }
            n++;
        }
    }
    ptr[blocks] = n;
    f->ob = ob;
    f->ptr = ptr;
    f->off = off;
    f->w = val;
    f->cell = cell;
    f->whole = 1;
    for (uint32_t k = 0; k < blocks; k++) f->whole &= ptr[k + 1] - ptr[k] == cols;
}

uint64_t dcz_shift_taps_bound(const dcz_conv_geom *g, uint64_t entries, uint32_t ob)
{
    const uint64_t blocks = (g->out_c + ob - 1) / ob, cols = (uint64_t)dcz_conv_group_in(g) * g->kh * g->kw;
    return entries < blocks * cols ? entries : blocks * cols;
}

int dcz_shift_cells(const dcz_conv_geom *g, uint32_t ob)
{
    return ob == 1 && dcz_conv_groups(g) == g->in_c && g->out_c == g->in_c && (uint32_t)g->kh * g->kw <= 256;
}

uint64_t dcz_shift_bytes(const dcz_conv_geom *g, uint64_t entries, uint32_t ob)
{
    const uint64_t blocks = (g->out_c + ob - 1) / ob, taps = dcz_shift_taps_bound(g, entries, ob);
    return (blocks + 1) * sizeof(uint32_t) + taps * (sizeof(uint32_t) + ob * sizeof(float)) +
           (dcz_shift_cells(g, ob) ? taps : 0);
}

/* The costs behind the choice of blocks and of the shift form against the
 * dense product, per instruction set of the variant that runs, in units of
 * a tap of one channel over one vector of 16 cells:
 *   tap2, tap4  a tap of a block of 2, of 4 channels
 *   fixed       what every tap costs more for its offset, weights and
 *               broadcasts, whatever the plane: what decides on planes of
 *               one or two vectors
 *   gemm_rate   multiply-adds of 16 lanes the dense product does in the
 *               time of a unit (gemm_rate1 on 1x1 windows, whose patches
 *               are the input itself and whose taps each read a plane of
 *               their own)
 *   store       what each output vector of a channel costs the shift form
 *               besides its taps (its store and its tile's setup): what
 *               decides where a channel has few taps
 *   gemm_pw, store_pw  gemm_rate1 and store on dense 1x1 windows at
 *               stride 1
 *   gemm_rate5  gemm_rate on windows of 25 cells or more
 * AVX-512 (bench/bench_conv.c on a Xeon): dense 16 -> 16 channels over 28 x
 * 28 take 49, 32 and 25 us in blocks of 1, 2 and 4; 1x1 convolutions over
 * 4 x 4 at 100% and 40% run 1.2 and 1.5 times as long as on the dense
 * product, at 10% 4.4 times faster; the dense product takes 0.23 to 0.30 ns
 * a vector multiply-add on 3x3 layers of 4x4 to 28x28 planes, the shift
 * kernel 0.40 to 0.58 ns a tap of one channel. The model then predicts the
 * sparse layers within 10% on planes of many vectors, 30% on planes of one.
 * AMD's cores with AVX-512 (Zen 4: in 256-bit halves) pay more for the load
 * of a tap against its multiply-adds, which a block shares: a tap of a block
 * of 2 costs 1.13 units there (the same dense layer: 71.5, 40.5 and 36.5
 * us), which took the compressed presets 2-3% faster at batch 1 (dcz bench,
 * medians: ResNet-style 130.0 -> 127.7 us, conv-heavy CNN 264.8 -> 258.4,
 * MobileNetV2-style 292.4 -> 284.7). AVX2 (Zen 3): a tile of a block of 4
 * holds 3 vectors, whose 4 broadcasts and 3 loads a tap feed 12 multiply-
 * adds: dense 16 -> 16 over 28 x 28 takes 72, 47 and 93 us in blocks of 1,
 * 2 and 4, 32 -> 64 over 14 x 14 148, 94 and 185 us (tap2 1.29, tap4 5.2);
 * blocks of 2 run dense 3x3 layers 1.1 to 1.4 times as fast as the
 * dense product, so gemm_rate 1.2 (dense presets at batch 1, dcz bench:
 * ResNet-style 528 -> 290 us). Dense 1x1 layers of MobileNetV2 run 1.0 to
 * 1.7 times as fast on the dense product as in blocks of 2 (16 -> 96 over
 * 28 x 28 31.6 against 45.1 us, 24 -> 144 over 14 x 14 17.1 against 24.1,
 * 144 -> 32 over 7 x 7 8.8 against 8.9, 64 -> 384 over 4 x 4 9.0 against
 * 15.3): gemm_rate1 1.6. Over few input channels the shift form pays for
 * its output more than for its taps (dense 3x3 over 28 x 28 into 16
 * channels, us, shift form against the dense product: from 1 channel 7.6
 * against 4.4, 2 10.0 against 8.0, 3 12.5 against 11.5, 4 15.0 against
 * 16.0; 1 -> 20 by 5 x 5 11.6 against 10.5): store 2.5 units a vector,
 * which takes the 3x3 layers over one channel (the dense product 1.7 times
 * as fast) to the dense product and keeps LeNet-5's first layer (5 x 5,
 * even once the shift form's fused ReLU is counted) on the shift form;
 * other instruction sets 0, unmeasured. Compressed presets at batch 1,
 * best medians of alternated runs: ResNet-style 157.9 -> 153.8 us,
 * MobileNetV2-style 333.0 -> 325.6, conv-heavy CNN 304.5 -> 300.8,
 * LeNet-5 unchanged (35.3 -> 35.1). Intel's cores with AVX-512 (the Xeon
 * above): on 1x1 windows at stride 1 the output weighs as on AVX2, the
 * taps being few where a layer widens. The 17 dense pointwise layers of
 * the MobileNetV2-style preset and bench_conv's, each timed on both
 * kernels at batch 1: the dense product is the faster on every layer of
 * fewer input than output channels (16 -> 96 over 28 x 28: 18.5 us, the
 * shift form 21.1; 32 -> 192 over 7 x 7: 5.2 against 5.4), the shift form
 * on the others (384 -> 64 over 4 x 4: 7.8 us, the dense product 10.5).
 * store_pw 10 and gemm_pw 1.15 pick the faster on all 17, where store 0
 * and gemm_rate1 1.7 lost 11.8 us over them; the dense model at batch 1,
 * dcz bench medians of alternated runs, 207.8-211.3 -> 200.9-204.0 us.
 * AMD's (Zen 4) differ by plane: over 7 x 7 the shift form wins where the
 * layer widens (32 -> 192: 7.2-7.4 us, the dense product 7.9-8.7), over 4 x
 * 4 the dense product where it narrows (192 -> 64: 3.5-4.0 against 3.9-4.2;
 * 384 -> 64: 7.0-7.5 against 7.7-8.0; 384 -> 96: 10.2-11.2 against
 * 10.8-11.6), two sets of bench/plan.sh timings of the dense MobileNetV2-
 * style preset; no one store_pw parts them at gemm_pw 1.15 (the widening
 * layers need it under 9.4, the narrowing ones over 13): gemm_pw 1.27 and
 * store_pw 6 pick the faster of every pointwise layer timed apart by more
 * than the two sets differ. There, dense 5x5 layers run on
 * the shift form 1.2 to 1.3 times as fast as on the dense product (dense
 * LeNet-5: 1 -> 20 over 28 x 28 10.6 us against 12.7, 20 -> 50 over 12 x
 * 12 48.9 against 58.3 to 63.5), which the model of 3x3 layers put the
 * other way (a tap cost that moves them, tap4 1.6, sends the 1x1 layers
 * back to the worse kernel): gemm_rate5 1.0 on AMD alone, the other
 * machines unmeasured.
 * Sparse layers keep the other costs: the compressed model (25% to 50% of
 * the weights kept) ran slower with its 50% layers over 28 x 28 on the
 * dense product (186.4 -> 189.1 us), though timed alone they were faster
 * there. So do the 3x3 layers (their dense product pays for its patches)
 * and 1x1 ones at stride 2, which the shift form runs from one phase of
 * four. */
typedef struct shift_costs {
    double tap2, tap4, fixed, gemm_rate, gemm_rate1, store, gemm_pw, store_pw, gemm_rate5;
    double pw_large;   /* the shift form's cost of a dense pointwise layer over PW_LARGE vectors or more, times */
    int pw_single;     /* a pointwise layer over one pixel on the shift form */
    int pw_dense;      /* dense 1x1 layers on the dense product whatever the model says,
                          but those that widen from under PW_WIDEN_IN channels, which the
                          model decides */
} shift_costs;

/* AMD's Zen 5 runs a 512-bit multiply-add whole, where Zen 4 ran it in two
 * halves: the dense product, bound by its multiply-adds, gained on it
 * about twice what the shift form, bound by its loads, did, and the costs
 * fitted on Zen 4 no longer part the dense 1x1 layers. Every dense 1x1
 * layer of the nine torchvision networks at 224 x 224 timed in the network
 * on both kernels (dcz bench --per-layer, one thread, batch 1, least of
 * three alternated rounds, an ADD the shift form took counted with the
 * dense product; one core of an AMD EPYC, family 1Ah): 255 layers, 36.4 ms
 * on the shift form, 33.6 on the dense product, 32.8 on the faster of each.
 * The dense product lost on the layers that widen from few channels (96
 * -> 576 over 14 x 14: 146 us against 108; 64 -> 384: 60 against 48;
 * over 7 x 7, 160 -> 960: 130 against 120), won where they widen from
 * many (256 -> 1024 over 14 x 14: 521 against 647) and on the others
 * (1024 -> 256: 528 against 589; ResNet-50's 1024 -> 2048 at stride 2:
 * 1697 against 2246); leaving the layers that widen from under 256
 * channels on the shift form gives 33.0 ms. The whole dense networks by
 * this rule against the rules of Zen 4, least of five alternated medians:
 * ResNet-50 0.93-0.95 of the time, SqueezeNet 0.96, RegNetX-400MF 0.97,
 * MobileNetV2 0.97, DenseNet-121 0.97-0.99, ShuffleNetV2 0.98,
 * EfficientNet-B0 0.98-0.99, MobileNetV3-Small and ResNet-18 within 1%;
 * the presets' dense models (28 x 28) within 0.5% once the rule leaves
 * layers of under PW_DENSE_MACS multiply-adds to the model (the
 * MobileNetV2-style preset's 96 -> 24 over 14 x 14, 451,584 of them, took
 * 5.3 us on the dense product, 4.9 on the shift form, and the model 1.06
 * times as long with its four smallest on the dense product; the least
 * that the networks above measured faster there took 1.5 million). The
 * product measured against the shift form there ran by planes; a widening
 * layer that the product runs by pixel rows (dcz_conv2d_pixels_rule: small
 * planes) goes to it all the same: MobileNetV2's 160 -> 960 over 7 x 7
 * 93 us a layer on the shift form, 80-81 by pixel rows (dcz bench
 * --per-layer, least of three alternated rounds), the network 0.977-0.978
 * of the time and EfficientNet-B0 0.986-0.998 (medians of alternated runs
 * in both orders), MobileNetV3-Small within 1%.
 *
 * Intel's cores with AVX-512 run 512-bit vectors whole too, and the same
 * rule holds there: on one core of an Intel Xeon (family 6, model 207:
 * AVX-512 with VNNI, VBMI and AMX), dcz bench --per-layer, one thread,
 * batch 1, least of three alternated rounds, the shift form against the
 * dense product: ResNet-50's 1024 -> 256 over 14 x 14 1016-1121 against
 * 725-895 us, 256 -> 1024 1028-1038 against 897-911, 1024 -> 2048 at
 * stride 2 2007 against 1469; DenseNet-121's 1024 -> 512 over 14 x 14 2042
 * against 1545, its 128..992 -> 128 over 7 x 7 73-140 against 55-96;
 * RegNetX-400MF's 400 -> 400 over 7 x 7 163-178 against 110-127;
 * SqueezeNet's 512 -> 1000 over 13 x 13 1604 against 1301. The sums of
 * the layers: SqueezeNet 1.1 0.894 of the time, RegNetX-400MF 0.865,
 * MobileNetV2 0.893, DenseNet-121 0.925, ResNet-50 0.957; the other four
 * within 1.5% either way (Intel's own costs below kept for its other
 * layers: Zen 5's in full gave the same to 2%). */
#define PW_WIDEN_IN 256
#define PW_DENSE_MACS (1u << 20)

/* Pointwise layers over planes of 28 x 28 or more (49 vectors), the
 * planes of torchvision's networks at 224 x 224, and over one pixel (the
 * squeeze-and-excitation layers) lie outside the planes the costs above
 * were fitted on (4 x 4 to 28 x 28 of the presets). On AMD's Zen 4, dcz
 * info --plan measure on torchvision's dense MobileNetV2 and
 * EfficientNet-B0 and on both pruned to 90% (4-bit), one thread, best of
 * two loads (us, shift form against the dense product): dense 32 -> 16
 * over 112 x 112 206 against 106, 144 -> 24 over 56 x 56 255 against 146,
 * 24 -> 144 over 56 x 56 254 against 190, 144 -> 32 over 28 x 28 95
 * against 73: every dense pointwise layer over 28 x 28 or more ran 1.1 to
 * 1.9 times as fast on the dense product, where the model put the shift
 * form 1.2 to 1.7 times as fast (off by 1.9 to 2.5): pw_large 2.5 takes
 * all of them to the dense product. Pruned ones stay with the model: at
 * 10% of the weights, the same factor and output cost on them took
 * MobileNetV2's and EfficientNet-B0's pointwise layers over 28 x 28 or
 * more to the product on the weights expanded, and the models from 3.35
 * to 3.78 ms and from 6.03 to 7.44 (though --plan measure, one load's
 * timings, had put some of EfficientNet-B0's faster there: 16 -> 96 over
 * 112 x 112 with its SiLU, 396 us against 678). Over one pixel the dense product packs a panel for a
 * single column: the squeeze-and-excitation layers of EfficientNet-B0
 * (1152 -> 48 and back, ...) took 20 to 58 us there, 5 to 22 on the shift
 * form. The whole dense models, batch 1, least of three alternated minima
 * of 40 runs (ms): MobileNetV2 8.45 -> 8.09, EfficientNet-B0 12.80 ->
 * 12.55, MobileNetV3-Small 2.10 -> 2.00, RegNetX-400MF 10.68 -> 9.83
 * (measured again an hour later, five alternated minima: 9.73 -> 9.61,
 * ResNet-50 73.96 -> 73.01: the first figure had this host's drift in it).
 * Intel's cores unmeasured on these planes: their costs keep the fit of
 * the presets. */
#define PW_LARGE 49.0

static shift_costs costs(void)
{
    shift_costs c = { 1.29, 2.0, 1.2, 1.7, 1.7, 0.0, 1.7, 0.0, 1.7, 1.0, 0, 0 };
#ifdef DCZ_X86
    if (dcz_shift_best() == DCZ_ISA_AVX2) c = (shift_costs){ 1.29, 5.2, 1.2, 1.2, 1.6, 2.5, 1.6, 2.5, 1.2, 1.0, 0, 0 };
    else {
        if (dcz_cpu_features()->amd)
            c.tap2 = 1.13, c.gemm_pw = 1.27, c.store_pw = 6.0, c.gemm_rate5 = 1.0, c.pw_large = 2.5, c.pw_single = 1;
        else if (dcz_shift_best() == DCZ_ISA_AVX512) c.gemm_pw = 1.15, c.store_pw = 10.0;
        /* either vendor's cores that run 512-bit vectors whole (0 under a
         * cap below AVX-512: dcz_cpu_capped) */
        c.pw_dense = dcz_cpu_features()->full512;
    }
#endif
    return c;
}

/* The time a channel of density d costs per column of its plane of v
 * vectors in blocks of ob, in units of a tap of one channel over one
 * vector: a block reads each tap of the union of its channels' columns
 * once and multiplies it into ob sums, stored weights or zeros. */
static double block_cost(const shift_costs *c, double d, uint32_t ob, double v)
{
    const double tap = ob == 1 ? 1.0 : ob == 2 ? c->tap2 : c->tap4;
    return (tap * v + c->fixed) * (1.0 - pow(1.0 - d, ob)) / ob;
}

/* Vectors of g's output plane as the shift kernel computes it. */
static double plane_vectors(const dcz_conv_geom *g)
{
    return (double)(split_geom_of(g, g->in_c, 1).out16 / 16);
}

uint32_t dcz_shift_pick_block(const dcz_conv_geom *g, uint64_t nnz)
{
    const double cols = (double)dcz_conv_group_in(g) * g->kh * g->kw, v = plane_vectors(g);
    const double d = g->out_c && cols > 0 ? (double)nnz / (g->out_c * cols) : 0;
    /* a block's channels read the same input channels: within a group */
    const uint32_t per_group = g->out_c / dcz_conv_groups(g);
    const shift_costs c = costs();
    uint32_t pick = 1;
    for (uint32_t ob = 2; ob <= 4; ob *= 2)
        if ((dcz_conv_groups(g) == 1 || per_group % ob == 0) &&
            block_cost(&c, d > 1 ? 1 : d, ob, v) < block_cost(&c, d > 1 ? 1 : d, pick, v))
            pick = ob;
    return pick;
}

int dcz_conv2d_shift_fits(const dcz_conv_geom *g)
{
    return dcz_shift_scratch_floats(g) <= DCZ_CONV_SCRATCH_MAX;
}

int dcz_conv2d_pick_shift(const dcz_conv_geom *g, uint64_t nnz)
{
    if (!dcz_conv2d_shift_fits(g)) return 0;
    if (!dcz_conv2d_pick_dense_im2col(g)) return 1;   /* the dense product cannot run it */
    const double cols = (double)g->in_c * g->kh * g->kw;
    const double d = g->out_c && cols > 0 ? (double)nnz / (g->out_c * cols) : 0;
    const shift_costs c = costs();
    const int win1 = g->kh * g->kw == 1, pw = win1 && g->sh == 1 && g->sw == 1 && d >= 1;
    const int pointwise = dcz_conv_pointwise(g);
    if (pointwise && c.pw_single && (size_t)g->out_h * g->out_w == 1) return 1;
    if (c.pw_dense && win1 && d >= 1 &&
        !(g->out_c > g->in_c && g->in_c < PW_WIDEN_IN && !dcz_conv2d_pixels_rule(g)) &&
        (uint64_t)g->out_c * g->in_c * g->out_h * g->out_w >= PW_DENSE_MACS)
        return 0;
    const double v = plane_vectors(g);
    const double shift = (g->out_c * cols * block_cost(&c, d > 1 ? 1 : d, dcz_shift_pick_block(g, nnz), v) +
                          g->out_c * v * (pw ? c.store_pw : c.store)) *
                         (pw && v >= PW_LARGE ? c.pw_large : 1.0);
    /* the dense product runs whole vectors of the plane: 7 x 7 takes 4 */
    const double gemm = (double)g->out_c * cols * (double)(dcz_gemm_ldb((size_t)g->out_h * g->out_w) / 16) /
                        (pw ? c.gemm_pw : win1 ? c.gemm_rate1 : g->kh * g->kw >= 25 ? c.gemm_rate5 : c.gemm_rate);
    return shift < gemm;
}
