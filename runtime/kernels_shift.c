/* kernels_shift.c: convolution by shifted planes (the shift form,
 * model.h): float, and calibrated 8-bit on integers (below).
 *
 * One sample's input is first laid out padded and split by stride phase,
 * "the split input": for input channel c and phase (py, px), py < sh,
 * px < sw, the plane Q[c][py][px] of hq x wq cells holds
 *   Q[i][j] = P[i sh + py][j sw + px],
 * P being the input with ph, pw zeros around it, hq = ceil((in_h + 2 ph) /
 * sh), wq = ceil((in_w + 2 pw) / sw), and 0 past P; at column stride 1, wq
 * = in_w + pw, each row's right padding being the next row's left
 * (split_wq). Output pixel (oy, ox) then reads, for weight (c, ky, kx),
 * the cell
 *   Q[c][ky % sh][kx % sw][oy + ky / sh][ox + kx / sw].
 * Number the output pixels p = oy wq + ox: rows of wq, the last wq - out_w
 * of each not outputs (they are computed and dropped). Every weight then
 * reads the split input at p plus its own offset
 *   off = ((c sh + ky % sh) sw + kx % sw) plane + (ky / sh) wq + kx / sw,
 * plane being hq wq, or in the float form the next odd number of whole
 * cache lines (plane_stride), whose rows of fewer than 16 cells may take
 * 16 (float_wq),
 * so an output plane is the sum of the split input shifted by each of its
 * weights' offsets, times the weight. The shift form stores a layer's
 * weights by blocks of ob output channels (1, 2 or 4): the union of the
 * block's columns in column order, each as its offset and the ob weights
 * (0 where a channel stores none). The vector kernel (shift_tile.h) holds a
 * tile of the block's output planes in registers through all its taps, one
 * load per vector and tap and ob fused multiply-adds, with no bounds to
 * test: the padding is in the split input. Blocks share each load among
 * their channels at the price of the zeros' multiply-adds:
 * dcz_shift_pick_block weighs the two from the layer's density (dense
 * weights: 4, sparse ones mostly 1). Stride 1 is the single phase; the
 * stride 2 of a downsampling convolution costs nothing more than the split,
 * which writes only the phases a tap reads: phase (py, px) holds the cells
 * of kernel rows ky = py mod sh and columns kx = px mod sw, so py < kh and
 * px < kw (a 1x1 projection at stride 2 reads one phase of four). Outputs
 * read the phases no tap reads only past their rows, where the planes as
 * computed are dropped.
 *
 * Measured by bench/bench_conv.c (one core of a Xeon with AVX-512, batch 1,
 * microseconds; the dense product is dcz_conv2d_dense_im2col on the weights
 * expanded, what the runtime ran before):
 *
 *   layer (output plane)                 density  dense product  shift (block)
 *   16 -> 16 3x3 pad 1 (28 x 28)           100%        38           25 (4)
 *                                           40%        33           23 (1)
 *                                           15%        33           11 (1)
 *   32 -> 64 3x3 pad 1 (14 x 14)           100%        47           44 (4)
 *                                           15%        47           19 (1)
 *   16 -> 32 3x3 stride 2 pad 1 (14 x 14)   30%        31           17 (1)
 *   64 -> 64 3x3 pad 1 (7 x 7)             100%        38           29 (4)
 *                                           16%        34           13 (1)
 *   128 -> 256 3x3 pad 1 (4 x 4)            40%        88          129 (1)
 *
 * A multiply-add of the shift kernel costs about twice one of the dense
 * product (most of its loads cross a cache line; the product reuses each
 * load six ways): it wins by doing fewer, and loses on dense layers over
 * planes of a few vectors, whose taps cost more in loads and broadcasts
 * than in multiply-adds (dcz_conv2d_pick_shift, shift_costs).
 *
 * Sums: bias first, then each weight's product fused into the sum in
 * column order (fmaf), the order of dcz_gemm_f32 on the weights expanded,
 * which adds the same products and exact zeros for the weights not stored.
 * shift_planes_ref is the specification; the vector variants give its
 * bits (tests/unit/test_kernels.c, every geometry of the convolution grid).
 * Timings: bench/bench_conv.c; the rule that picks the kernel:
 * dcz_conv2d_pick_shift (model.h).
 *
 * Depthwise convolutions held in this form run on AVX-512 by two kernels
 * of their own, straight from the input (dw_path below; `dcz info` says
 * conv2d_depthwise), on AVX2 by two others (rows at column stride 2, and
 * channels in the lanes where every channel holds the whole window): the
 * same taps from the same form, the same bits.
 */
#include <math.h>
#include <string.h>

#include "runtime/model.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "runtime/act_x86.h"
#include "runtime/avx2_lanes.h"
#define DCZ_X86 1
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

/* the split input's geometry */
typedef struct split_geom {
    size_t hq, wq, plane;   /* a phase plane */
    size_t floats;          /* the split input, its margin included */
    size_t out16;           /* out_h wq rounded up to 16: an output plane as computed */
} split_geom;

/* Cells of a row of a phase plane. At column stride 1 a row's right
 * padding is the next row's left, its pw zeros: rows of in_w + pw cells,
 * not in_w + 2 pw. The last output column, out_w - 1 = in_w + 2 pw - kw,
 * reads up to input column in_w + pw - 1, so a tap reads at most pw cells
 * past a row's end, the next row's zeros, at the offset it would read the
 * row's own right padding at. The planes as computed are that many cells
 * narrower a row: 28 x 28 pad 1 takes 51 vectors rather than 53. */
static uint64_t split_wq(const dcz_conv_geom *g)
{
    if (g->sw == 1) return (uint64_t)g->in_w + g->pw;
    return ((uint64_t)g->in_w + 2 * (uint64_t)g->pw + g->sw - 1) / g->sw;
}

/* Whether g's split input is the input itself (no padding at stride 1). */
static int split_is_input(const dcz_conv_geom *g)
{
    return g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* The float form's rows: 16 cells where rows of 16 take no more vectors of
 * the planes as computed (14 x 14 pad 1: 14 vectors both, rows of 15 or
 * 16), so that with the planes at 64-byte boundaries (plane_stride) the
 * taps at window column 0, and at stride 2 column 1 too, read whole
 * aligned vectors, not across two cache lines; not where the split is the
 * input itself (no padding at stride 1). One core of a Xeon, the
 * ResNet-style preset compressed, batch 1, with the planes aligned: its
 * 14 x 14 layers 12.0 -> 10.2 (stride 2) and 17.8 -> 16.0 us. */
static uint64_t float_wq(const dcz_conv_geom *g)
{
    const uint64_t wq = split_wq(g);
    if (wq >= 16 || split_is_input(g)) return wq;
    return (uint64_t)g->out_h * wq + 15 >= (uint64_t)g->out_h * 16 ? 16 : wq;
}

/* Cells from one phase plane of the split input to the next: hq wq, and in
 * the float form rounded up to whole vectors, an odd number of cache lines,
 * so that every plane starts at a 64-byte boundary (shift_run aligns the
 * first) and the same cell of each channel falls in a different cache set
 * (planes of 16 x 16 cells, 1 KB apart, put every fourth channel in the
 * same sets: the conv-heavy CNN's 64 -> 64 layer over 14 x 14 took 90 us,
 * 63 with planes 17 lines apart). One core of a Xeon, the ResNet-style
 * preset compressed, batch 1, per layer with the planes aligned, rows as
 * they were (us): 14 x 14 stride 2 13.4 -> 12.0, 14 x 14 20.7 -> 17.8,
 * 7 x 7 stride 2 9.2 -> 7.8, 7 x 7 11.7 -> 10.9. */
static uint64_t plane_stride(const dcz_conv_geom *g, uint64_t hq, uint64_t wq, int f32)
{
    /* the integer form's, and the input itself where the split is a copy */
    if (!f32 || split_is_input(g)) return hq * wq;
    const uint64_t lines = (hq * wq + 15) / 16;
    return (lines | 1) * 16;
}

/* units: channels of the split input (the integer form: quads of channels);
 * f32: the float form's (float_wq, plane_stride) */
static split_geom split_geom_of(const dcz_conv_geom *g, uint32_t units, int f32)
{
    split_geom s;
    s.hq = ((size_t)g->in_h + 2 * (size_t)g->ph + g->sh - 1) / g->sh;
    s.wq = (size_t)(f32 ? float_wq(g) : split_wq(g));
    s.plane = (size_t)plane_stride(g, s.hq, s.wq, f32);
    /* the last plane is read up to (kw - 1) / sw + 15 cells past its end */
    s.floats = (size_t)units * g->sh * g->sw * s.plane + (g->kw - 1) / g->sw + 16;
    s.out16 = ((size_t)g->out_h * s.wq + 15) / 16 * 16;
    return s;
}

/* floats (or 32-bit cells) of the split input of units channels and of the
 * output planes as computed; saturates rather than wraps for absurd
 * geometries */
static uint64_t scratch_cells(const dcz_conv_geom *g, uint32_t units, int f32)
{
    const uint64_t hq = ((uint64_t)g->in_h + 2 * (uint64_t)g->ph + g->sh - 1) / g->sh;
    const uint64_t wq = f32 ? float_wq(g) : split_wq(g);
    const uint64_t planes = (uint64_t)units * g->sh * g->sw, plane = plane_stride(g, hq, wq, f32);
    const uint64_t out16 = ((uint64_t)g->out_h * wq + 15) / 16 * 16;
    if (plane > UINT32_MAX || planes > UINT32_MAX || out16 > UINT32_MAX) return UINT64_MAX;
    /* the output planes of whole blocks of up to 4 channels */
    const uint64_t in = planes * plane, out = out16 * (((uint64_t)g->out_c + 3) / 4 * 4);  /* each below 2^64 */
    if (in > UINT64_MAX / 4 || out > UINT64_MAX / 4) return UINT64_MAX;
    return in + (g->kw - 1) / g->sw + 16 + 16 + 16 + out;   /* 16 + 16: the split's and planes_at's alignment */
}

uint64_t dcz_shift_scratch_floats(const dcz_conv_geom *g) { return scratch_cells(g, g->in_c, 1); }

/* The planes as computed, after the split input xs at the first 64-byte
 * boundary, so that a vector's store or a tile's row fills one cache line
 * (a tile's rows stored across two took twice as long). */
static void *planes_at(void *xs, const split_geom *q)
{
    return (void *)(((uintptr_t)((uint32_t *)xs + q->floats) + 63) & ~(uintptr_t)63);
}


/* the offset of weight (c, ky, kx) in the split input */
static uint32_t tap_offset(const dcz_conv_geom *g, const split_geom *q, uint32_t c, uint32_t ky, uint32_t kx)
{
    return (uint32_t)((((size_t)c * g->sh + ky % g->sh) * g->sw + kx % g->sw) * q->plane +
                      ky / g->sh * q->wq + kx / g->sw);
}

/* toff[k] = tap k's offset for quad 0 (the AMX tiles' input) */
static void tap_offsets(const dcz_conv_geom *g, const split_geom *q, uint32_t *toff)
{
    for (uint32_t k = 0; k < g->kh * g->kw; k++) toff[k] = tap_offset(g, q, 0, k / g->kw, k % g->kw);
}

/* The copies of the AMX tiles' copied rows form: after the planes as
 * computed t (of whole blocks of 4 channels), at a 64-byte boundary. */
static uint8_t *copies_at(int32_t *t, const split_geom *q, const dcz_conv_geom *g)
{
    return (uint8_t *)(((uintptr_t)(t + q->out16 * (((size_t)g->out_c + 3) / 4 * 4)) + 63) & ~(uintptr_t)63);
}

void dcz_shift_build(const dcz_conv_geom *g, const dcz_sparse *s, const float *w, uint32_t ob, void *mem,
                     dcz_shift *f)
{
    const split_geom q = split_geom_of(g, g->in_c, 1);
    const uint32_t ksize = g->kh * g->kw, cols = dcz_conv_group_in(g) * ksize;
    const uint32_t blocks = (g->out_c + ob - 1) / ob;
    uint64_t nnz = (uint64_t)cols * g->out_c;
    if (s) {
        nnz = 0;
        for (uint32_t e = 0; e < s->entries; e++) nnz += s->step[e] != DCZ_STEP_FILLER;
    }
    uint32_t *ptr = mem, *off = ptr + blocks + 1;
    float *val = (float *)(off + dcz_shift_taps_bound(g, nnz, ob));
    uint32_t n = 0;
    for (uint32_t k = 0; k < blocks; k++) {
        ptr[k] = n;
        /* the union of the block's columns, in column order: a k-way merge
         * of its rows (or every column of dense weights) */
        uint32_t e[4], end[4], col[4];
        const uint32_t rows = g->out_c - k * ob < ob ? g->out_c - k * ob : ob;
        for (uint32_t o = 0; o < rows; o++) {
            const uint32_t r = k * ob + o;
            e[o] = s ? s->row_ptr[r] : 0;
            end[o] = s ? s->row_ptr[r + 1] : cols;
            col[o] = 0;
            /* the first real entry: col[o] its column, e[o] its index */
            if (s)
                while (e[o] < end[o] && (col[o] += s->step[e[o]], s->step[e[o]] == DCZ_STEP_FILLER)) e[o]++;
        }
        const uint32_t ic0 = dcz_conv_in0(g, k * ob);
        for (;;) {
            uint32_t next = UINT32_MAX;
            for (uint32_t o = 0; o < rows; o++)
                if (e[o] < end[o] && col[o] < next) next = col[o];
            if (next == UINT32_MAX) break;
            off[n] = tap_offset(g, &q, ic0 + next / ksize, next % ksize / g->kw, next % g->kw);
            for (uint32_t o = 0; o < ob; o++) {
                float v = 0.0f;
                if (o < rows && e[o] < end[o] && col[o] == next) {
                    v = s ? dcz_sparse_weight(s, e[o]) : w[(size_t)(k * ob + o) * cols + next];
                    e[o]++;
                    if (!s) col[o]++;
                    else
                        while (e[o] < end[o] && (col[o] += s->step[e[o]], s->step[e[o]] == DCZ_STEP_FILLER)) e[o]++;
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
    f->whole = 1;
    for (uint32_t k = 0; k < blocks; k++) f->whole &= ptr[k + 1] - ptr[k] == cols;
}

uint64_t dcz_shift_taps_bound(const dcz_conv_geom *g, uint64_t entries, uint32_t ob)
{
    const uint64_t blocks = (g->out_c + ob - 1) / ob, cols = (uint64_t)dcz_conv_group_in(g) * g->kh * g->kw;
    return entries < blocks * cols ? entries : blocks * cols;
}

uint64_t dcz_shift_bytes(const dcz_conv_geom *g, uint64_t entries, uint32_t ob)
{
    const uint64_t blocks = (g->out_c + ob - 1) / ob;
    return (blocks + 1) * sizeof(uint32_t) + dcz_shift_taps_bound(g, entries, ob) * (sizeof(uint32_t) + ob * sizeof(float));
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
 * Sparse layers keep the other costs: the compressed model (25% to 50% of
 * the weights kept) ran slower with its 50% layers over 28 x 28 on the
 * dense product (186.4 -> 189.1 us), though timed alone they were faster
 * there. So do the 3x3 layers (their dense product pays for its patches)
 * and 1x1 ones at stride 2, which the shift form runs from one phase of
 * four. */
typedef struct shift_costs {
    double tap2, tap4, fixed, gemm_rate, gemm_rate1, store, gemm_pw, store_pw;
} shift_costs;

static dcz_isa best(void);

static shift_costs costs(void)
{
    shift_costs c = { 1.29, 2.0, 1.2, 1.7, 1.7, 0.0, 1.7, 0.0 };
#ifdef DCZ_X86
    if (best() == DCZ_ISA_AVX2) c = (shift_costs){ 1.29, 5.2, 1.2, 1.2, 1.6, 2.5, 1.6, 2.5 };
    else if (__builtin_cpu_is("amd")) c.tap2 = 1.13;
    else if (best() == DCZ_ISA_AVX512) c.gemm_pw = 1.15, c.store_pw = 10.0;
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

int dcz_conv2d_pick_shift(const dcz_conv_geom *g, uint64_t nnz)
{
    if (dcz_shift_scratch_floats(g) > DCZ_CONV_SCRATCH_MAX) return 0;
    if (!dcz_conv2d_pick_dense_im2col(g)) return 1;   /* the dense product cannot run it */
    const double cols = (double)g->in_c * g->kh * g->kw;
    const double d = g->out_c && cols > 0 ? (double)nnz / (g->out_c * cols) : 0;
    const shift_costs c = costs();
    const int win1 = g->kh * g->kw == 1, pw = win1 && g->sh == 1 && g->sw == 1 && d >= 1;
    const double shift = g->out_c * cols * block_cost(&c, d > 1 ? 1 : d, dcz_shift_pick_block(g, nnz), plane_vectors(g)) +
                         g->out_c * plane_vectors(g) * (pw ? c.store_pw : c.store);
    /* the dense product runs whole vectors of the plane: 7 x 7 takes 4 */
    const double gemm = (double)g->out_c * cols * (double)(dcz_gemm_ldb((size_t)g->out_h * g->out_w) / 16) /
                        (pw ? c.gemm_pw : win1 ? c.gemm_rate1 : c.gemm_rate);
    return shift < gemm;
}

static size_t plane_in(const dcz_conv_geom *g) { return (size_t)g->in_h * g->in_w; }

/* xs = the split input of sample x */
static void split(const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    const size_t sh = g->sh, sw = g->sw;
    if (split_is_input(g)) {
        /* no padding: the input as it is */
        memcpy(xs, x, (size_t)g->in_c * plane_in(g) * sizeof *xs);
    } else if (sh == 1 && sw == 1) {
        /* one plane per channel: zero rows above and below, each row after pw zeros
         * (split_wq) */
        for (uint32_t c = 0; c < g->in_c; c++) {
            float *p = xs + c * q->plane;
            memset(p, 0, (g->ph * q->wq + g->pw) * sizeof *p);
            for (uint32_t iy = 0; iy < g->in_h; iy++) {
                float *r = p + (iy + g->ph) * q->wq + g->pw;
                memcpy(r, x + ((size_t)c * g->in_h + iy) * g->in_w, g->in_w * sizeof *r);
                /* this row's right, the next one's left */
                memset(r + g->in_w, 0, (q->wq - g->in_w) * sizeof *r);
            }
            const size_t done = (g->ph + g->in_h) * q->wq + g->pw;
            memset(p + done, 0, (q->plane - (done < q->plane ? done : q->plane)) * sizeof *p);
        }
    } else {
        memset(xs, 0, g->in_c * sh * sw * q->plane * sizeof *xs);
        /* padded column j = ix + pw goes to phase j % sw, cell j / sw: phase
         * px holds input columns cell sw + px - pw for cells lo[px] .. hi[px] - 1 */
        size_t lo[DCZ_MAX_WINDOW], hi[DCZ_MAX_WINDOW];
        for (size_t px = 0; px < sw; px++) {
            lo[px] = px < g->pw ? (g->pw - px + sw - 1) / sw : 0;
            hi[px] = (g->in_w + g->pw - px + sw - 1) / sw;
        }
        for (uint32_t c = 0; c < g->in_c; c++)
            for (uint32_t iy = 0; iy < g->in_h; iy++) {
                const size_t r = iy + g->ph;
                if (r % sh >= g->kh) continue;   /* a phase no tap reads */
                const float *xr = x + ((size_t)c * g->in_h + iy) * g->in_w;
                float *row = xs + (c * sh + r % sh) * sw * q->plane + r / sh * q->wq;
                for (size_t px = 0; px < sw && px < g->kw; px++, row += q->plane)
                    for (size_t cell = lo[px]; cell < hi[px]; cell++) row[cell] = xr[cell * sw + px - g->pw];
            }
    }
    memset(xs + g->in_c * sh * sw * q->plane, 0, (q->floats - g->in_c * sh * sw * q->plane) * sizeof *xs);
}

/* The fused copy out: a tile's sums stored straight into the output
 * planes, only the lanes that are output cells, act applied as they are
 * (the float AVX-512 and AVX2 variants, which save writing the planes as
 * computed and copying their rows out; shift_run gives the others no map).
 * The tile's vector i keeps lanes keep (the cells p with p mod wq < out_w
 * and p < cells) and stores them packed, the first n lanes, from output
 * cell at of each channel's plane: on AVX-512 by a compress in registers,
 * on AVX2, which has none, by a permute of the lanes idx (byte j the lane
 * that goes to lane j) and a masked store. dcz bench at batch 1, one core,
 * medians of alternated runs: AVX-512 (an AMD EPYC), the ResNet-style
 * preset 126.2 -> 122.2 us, the conv-heavy CNN 262.0 -> 256.6; AVX2 (an
 * AMD EPYC, Zen 3), see OUT_STORE there. */
typedef struct tile_out {
    const dcz_act *act;
    float *y;                   /* the sample's output, planes plane cells apart */
    const float *res;           /* the residual added before act (AVX-512 only), or NULL; y's
                                   layout, and may be y itself: each store reads its own cells */
    size_t plane;
    uint32_t out_c, out_w, wq;
    size_t cells;               /* out_h wq: the cells of the rows as computed */
    struct {
        size_t at;
        uint16_t keep, n;
        uint64_t idx;           /* AVX2's permute; AVX-512 compresses by keep instead */
        int tail;               /* at + L past the plane */
    } v[12];                    /* of the tile at hand (TMAX1, TMAX2 and TMAX4 at most 12) */
} tile_out;

/* t (out_c, out16): each output channel's plane as computed, p = oy wq +
 * ox; or, where the variant takes a map om, the output itself */
typedef void (*planes_fn)(const dcz_shift *f, const float *bias, uint32_t out_c, size_t out16, size_t cells,
                          const float *xs, float *t, tile_out *om);

static void shift_planes_ref(const dcz_shift *f, const float *bias, uint32_t out_c, size_t out16, size_t cells,
                             const float *xs, float *t, tile_out *om)
{
    (void)cells;
    (void)om;
    const uint32_t ob = f->ob;
    for (uint32_t oc = 0; oc < out_c; oc++)
        for (size_t p = 0; p < out16; p++) {
            const uint32_t k = oc / ob, o = oc % ob;
            float acc = bias ? bias[oc] : 0.0f;
            for (uint32_t e = f->ptr[k]; e < f->ptr[k + 1]; e++)
                acc = fmaf(f->w[(size_t)e * ob + o], xs[f->off[e] + p], acc);
            t[(size_t)oc * out16 + p] = acc;
        }
}

#ifdef DCZ_X86
/* bits lo .. hi - 1 of the first n (each bound clamped to 0 .. n) */
static inline uint32_t lanes(int64_t lo, int64_t hi, int64_t n)
{
    lo = lo < 0 ? 0 : lo > n ? n : lo;
    hi = hi < lo ? lo : hi > n ? n : hi;
    const uint64_t below_hi = hi >= 64 ? ~0ull : (1ull << hi) - 1, below_lo = (1ull << lo) - 1;
    return (uint32_t)(below_hi & ~below_lo);
}

/* The lanes of the vector of L cells from cell p, at column col of its
 * row, that are output cells: columns below out_w of rows wq wide, cells
 * below cells. */
static uint32_t keep_lanes(size_t L, size_t p, int64_t col, int64_t wq, int64_t out_w, size_t cells)
{
    uint32_t keep = 0;
    /* lane s starts a row's cells at column c */
    for (int64_t s = 0, c = col; s < (int64_t)L; s += wq - c, c = 0) keep |= lanes(s, s + out_w - c, (int64_t)L);
    return keep & lanes(0, (int64_t)cells - (int64_t)p, (int64_t)L);
}

/* om's map of the tile of vectors v0 .. v0 + T - 1 of L lanes (cells L v0
 * ..), made per tile and sample: idx only for AVX2 (L = 8), its loop a
 * step per kept lane having been most of the map's cost, and popcount an
 * instruction rather than libgcc's call (the maps took 3.7% of the
 * ResNet-style preset's batch-1 run on one core of a Xeon, 1.3% after) */
__attribute__((target("popcnt"))) static void out_fill(tile_out *om, size_t L, size_t v0, size_t T)
{
    const int64_t wq = om->wq, out_w = om->out_w;
    size_t p = L * v0, at = p / om->wq * om->out_w;
    int64_t col = (int64_t)(p % om->wq);
    at += (size_t)(col < out_w ? col : out_w);
    for (size_t i = 0; i < T; i++, p += L) {
        const uint32_t keep = keep_lanes(L, p, col, wq, out_w, om->cells);
        const uint32_t kept = (uint32_t)__builtin_popcount(keep);
        om->v[i].at = at;
        om->v[i].keep = (uint16_t)keep;
        om->v[i].n = (uint16_t)((1u << kept) - 1);
        uint64_t idx = 0;
        if (L == 8)
            for (uint32_t k = keep, j = 0; k; k &= k - 1, j++) idx |= (uint64_t)__builtin_ctz(k) << (8 * j);
        om->v[i].idx = idx;
        om->v[i].tail = at + L > om->plane;
        at += kept;
        for (col += (int64_t)L; col >= wq; col -= wq) {}
    }
}

/* the kept lanes of sum, act applied, packed into channel oc's plane (a
 * compress only where some lane is not an output, or an unmasked store
 * where the vector lies inside the plane, as the integer requantization
 * does, ran no faster, and slower: ResNet-style 115 -> 121 us) */
#define OUT_STORE(om, oc, i, sum)                                                                                \
    _mm512_mask_storeu_ps((om)->y + (size_t)(oc) * (om)->plane + (om)->v[i].at, (__mmask16)(om)->v[i].n,       \
                          _mm512_maskz_compress_ps((__mmask16)(om)->v[i].keep, dcz_act__avx512(sum, (om)->act)))
/* the same with the ADD after the convolution: res's cells added before act */
static inline __attribute__((target("avx512f"), always_inline)) void out_store_res__avx512(const tile_out *om,
                                                                                          uint32_t oc, size_t i,
                                                                                          __m512 sum)
{
    const size_t at = (size_t)oc * om->plane + om->v[i].at;
    const __mmask16 n = (__mmask16)om->v[i].n;
    const __m512 v = _mm512_add_ps(_mm512_maskz_compress_ps((__mmask16)om->v[i].keep, sum),
                                   _mm512_maskz_loadu_ps(n, om->res + at));
    _mm512_mask_storeu_ps(om->y + at, n, dcz_act__avx512(v, om->act));
}
#define OUT_STORE_RES(om, oc, i, sum) out_store_res__avx512(om, oc, i, sum)
#define OUT_FILL(om, v0, T) out_fill(om, 16, v0, T)
#define OUT_T tile_out
#define VHLOAD(p) _mm512_castps256_ps512(_mm256_loadu_ps(p))
#define VHFMA(a, b, c)                                                                                           \
    _mm512_castps256_ps512(                                                                                    \
        _mm256_fmadd_ps(_mm512_castps512_ps256(a), _mm512_castps512_ps256(b), _mm512_castps512_ps256(c)))
#define SFX __avx512
/* fma for the half vectors (every AVX-512 CPU has it), in EVEX encoding
 * (avx512vl) so that they may use registers 16 to 31: in VEX only, the
 * compiler moved each half's sums and weights down to the first sixteen
 * registers and back, an extract and a move a multiply-add (one core of a
 * Xeon, batch 1, dcz bench medians of alternated runs: dense conv-heavy
 * CNN 293.1-297.9 -> 284.1-287.0 us, dense ResNet-style 141.3 -> 135.0-136.0) */
#define TGT __attribute__((target("avx512f,avx512vl,fma")))
#define V __m512
#define L 16
#define VSET1(f) _mm512_set1_ps(f)
#define VLOAD(p) _mm512_loadu_ps(p)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VREG(x) "v"(x)
#define TMAX1 12
#define TMAX2 12
#define TMAX4 6
#include "runtime/shift_tile.h"

/* The kept lanes of sum, act applied, packed by a permute and stored
 * whole: the lanes past the kept ones land on cells of the plane that a
 * later vector of the same channel writes, since a channel's vectors are
 * stored in order. Only where the vector would write past the plane (tail)
 * does a masked store write the kept lanes alone: on Zen 3 a masked store a vector took the
 * ResNet-style preset from 168 to 200 us. Where the AVX2 variant wrote the
 * planes as computed and copied their rows out (then applied act over the
 * output), with split1__avx2: dcz bench at batch 1, one core of an AMD
 * EPYC (Zen 3), best medians of alternated runs: compressed ResNet-style
 * 164.8 -> 163.2 us, conv-heavy CNN 345 -> 332, MobileNetV2-style 453 ->
 * 418, dense MobileNetV2-style 518 -> 486. */
static inline __attribute__((target("avx2"), always_inline)) void out_store__avx2(const tile_out *om, uint32_t oc,
                                                                                  size_t i, __m256 sum)
{
    float *y = om->y + (size_t)oc * om->plane + om->v[i].at;
    const __m256 v = _mm256_permutevar8x32_ps(dcz_act__avx2(sum, om->act),
                                              _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)om->v[i].idx)));
    if (om->v[i].tail)
        _mm256_maskstore_ps(y, dcz_mask8__avx2((uint32_t)__builtin_popcount(om->v[i].n)), v);
    else _mm256_storeu_ps(y, v);
}
#define OUT_STORE(om, oc, i, sum) out_store__avx2(om, oc, i, sum)
#define OUT_FILL(om, v0, T) out_fill(om, 8, v0, T)
#define OUT_T tile_out
#define SFX __avx2
#define TGT __attribute__((target("avx2,fma")))
#define V __m256
#define L 8
#define VSET1(f) _mm256_set1_ps(f)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VREG(x) "x"(x)
#define TMAX1 12
#define TMAX2 6
#define TMAX4 3
#include "runtime/shift_tile.h"
#endif

#ifdef DCZ_NEON
#define OUT_T tile_out
#define SFX __neon
#define TGT
#define V float32x4_t
#define L 4
#define VSET1(f) vdupq_n_f32(f)
#define VLOAD(p) vld1q_f32(p)
#define VFMA(a, b, c) vfmaq_f32(c, a, b)
#define VSTORE(p, v) vst1q_f32(p, v)
#define VREG(x) "w"(x)
#define TMAX1 12
#define TMAX2 12
#define TMAX4 6
#include "runtime/shift_tile.h"
#endif

#ifdef DCZ_X86

#define SPLIT_MAX_VECTORS 64

/* split at stride 1 in AVX2 vectors (padding on some side): a row's cells
 * and its right padding by whole vectors, the lanes past the input row
 * loaded as zeros by masked loads and every vector stored whole, the last
 * running up to 7 cells into the next row (written after it), the plane's
 * bottom padding or the next plane (zeroed or written after it) or the
 * scratch's margin (16 cells or more, zeroed after it); the scalar split's
 * bits. 0 where it does not run. (It replaces a memcpy and a memset a row
 * of the scalar split; with the output stored from the tiles, see
 * out_store__avx2.) */
__attribute__((target("avx2")))
static int split1__avx2(const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    if (g->sh != 1 || g->sw != 1 || split_is_input(g)) return 0;
    const size_t W = g->in_w, wq = q->wq, nv = (wq + 7) / 8, top = g->ph * wq + g->pw;
    __m256i m[SPLIT_MAX_VECTORS];
    if (nv > SPLIT_MAX_VECTORS) return 0;
    for (size_t v = 0; v < nv; v++)
        m[v] = dcz_mask8__avx2((uint32_t)(W > 8 * v ? W - 8 * v : 0));
    for (uint32_t c = 0; c < g->in_c; c++) {
        float *p = xs + c * q->plane;
        const float *xc = x + (size_t)c * g->in_h * W;
        memset(p, 0, top * sizeof *p);
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            float *r = p + top + (size_t)iy * wq;
            const float *xr = xc + (size_t)iy * W;
            for (size_t v = 0; v < nv; v++) _mm256_storeu_ps(r + 8 * v, _mm256_maskload_ps(xr + 8 * v, m[v]));
        }
        const size_t done = top + (size_t)g->in_h * wq;
        if (done < q->plane) memset(p + done, 0, (q->plane - done) * sizeof *p);
    }
    memset(xs + g->in_c * q->plane, 0, (q->floats - g->in_c * q->plane) * sizeof *xs);
    return 1;
}

/* split at column stride 2 in AVX2 vectors: lane i of vector v of phase px
 * reads input column 16 v + 2 i + px - pw: the 16 columns from 16 v - pw
 * loaded where they are in the row (0 elsewhere) by two masked loads, then
 * two shuffles and two permutes give the even and odd ones, each stored
 * whole: the lanes past a phase row, zeros, land on the next row of the
 * plane, written or zero already, but for a plane's last row, whose vectors
 * past the row are masked; the cells no input row lands on are zeroed
 * first, as the scalar split does, whose bits these are. 0 where it does
 * not run. The scalar split took 60% of MobileNetV2-style's 96 x 28 x 28
 * stride-2 depthwise layer (dense, batch 1, Zen 3: 98 -> 50 us); a row
 * copied into a padded row of zeros first and loaded from it stalled on
 * loads across two stores (65 us). */
__attribute__((target("avx2")))
static int split2__avx2(const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    const size_t sh = g->sh, W = g->in_w, wq = q->wq, nv = (wq + 7) / 8;
    if (g->sw != 2 || nv > SPLIT_MAX_VECTORS) return 0;
    __m256i m[2 * SPLIT_MAX_VECTORS];
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (size_t v = 0; v < 2 * nv; v++) {
        /* lanes whose column 8 v - pw + i lies in 0 .. W - 1 */
        const int64_t first = (int64_t)(8 * v) - (int64_t)g->pw;
        m[v] = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)((int64_t)W - first)), iota),
                                _mm256_cmpgt_epi32(iota, _mm256_set1_epi32((int)(-first - 1))));
    }
    const __m256i last = dcz_mask8__avx2((uint32_t)(wq - 8 * (nv - 1)));
    for (uint32_t c = 0; c < g->in_c; c++) {
        /* zeros where no input row lands: planes no tap reads, padding rows,
         * each plane's cells past its rows */
        for (size_t py = 0; py < sh; py++)
            for (size_t px = 0; px < 2; px++) {
                float *pl = xs + ((c * sh + py) * 2 + px) * q->plane;
                if (py >= g->kh || px >= g->kw) {
                    memset(pl, 0, q->plane * sizeof *pl);
                    continue;
                }
                for (size_t i = 0; i < q->hq; i++) {
                    const int64_t iy = (int64_t)(i * sh + py) - (int64_t)g->ph;
                    if (iy < 0 || iy >= (int64_t)g->in_h) memset(pl + i * wq, 0, wq * sizeof *pl);
                }
                memset(pl + q->hq * wq, 0, (q->plane - q->hq * wq) * sizeof *pl);
            }
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            const size_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;   /* a phase no tap reads */
            /* the row from column -pw: lanes before column 0 are masked,
             * never read */
            const float *xr = x + ((size_t)c * g->in_h + iy) * W - g->pw;
            float *row = xs + (c * sh + r % sh) * 2 * q->plane + r / sh * wq;
            const int end = r / sh == q->hq - 1;
            for (size_t v = 0; v < nv; v++) {
                const __m256 a = _mm256_maskload_ps(xr + 16 * v, m[2 * v]);
                const __m256 b = _mm256_maskload_ps(xr + 16 * v + 8, m[2 * v + 1]);
                const __m256 ev = dcz_evens__avx2(a, b), od = dcz_odds__avx2(a, b);
                if (end && v == nv - 1) {
                    _mm256_maskstore_ps(row + 8 * v, last, ev);
                    if (g->kw > 1) _mm256_maskstore_ps(row + q->plane + 8 * v, last, od);
                } else {
                    _mm256_storeu_ps(row + 8 * v, ev);
                    if (g->kw > 1) _mm256_storeu_ps(row + q->plane + 8 * v, od);
                }
            }
        }
    }
    const size_t planes = (size_t)g->in_c * sh * 2;
    memset(xs + planes * q->plane, 0, (q->floats - planes * q->plane) * sizeof *xs);
    return 1;
}

/* split at column stride 1 or 2 in vectors: each row of a phase plane is
 * written whole, its padding and its cells in one pass, the cells by
 * masked loads (lanes past the input row are neither read nor faulted) and,
 * at stride 2, two permutes of the same two loads, one per column phase;
 * the scalar split's bits. The masks depend on the vector only, so they
 * are made once a call; 0 (nothing written) for rows of more than
 * SPLIT_MAX_VECTORS vectors, strides past 2, or no padding at stride 1.
 * Loading each input row once for both phases, rather than once a phase,
 * took the ResNet-style preset's two 3 x 3 stride-2 splits from 2.7 and
 * 2.9 us to 1.8 and 1.9 (one core of an AMD EPYC). */
typedef struct split_vec {
    int64_t first;
    __mmask16 lo, hi, store;
} split_vec;

/* The rows of split__avx512, NV vectors a row (0: nv, not a constant),
 * S2: column stride 2. */
__attribute__((target("avx512f"), always_inline))
static inline void split_rows__avx512(const size_t NV, const int S2, const dcz_conv_geom *g, const split_geom *q,
                                      const split_vec *t, size_t nv, const float *x, float *xs)
{
    const size_t sh = g->sh, sw = S2 ? 2 : 1, wq = q->wq, W = g->in_w, n = NV ? NV : nv;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const size_t phases = sw < g->kw ? sw : g->kw;  /* the phases a tap reads */
    for (size_t c = 0; c < g->in_c; c++)
        for (size_t py = 0; py < sh && py < g->kh; py++) {
            float *plane = xs + (c * sh + py) * sw * q->plane;   /* phase (py, 0); (py, 1) follows */
            for (size_t ry = 0; ry < q->hq; ry++) {
                float *row = plane + ry * wq;
                const int64_t iy = (int64_t)(ry * sh + py) - (int64_t)g->ph;
                if (iy < 0 || iy >= (int64_t)g->in_h) {
                    for (size_t px = 0; px < phases; px++)
                        for (size_t v = 0; v < n; v++)
                            _mm512_mask_storeu_ps(row + px * q->plane + 16 * v, t[v].store, _mm512_setzero_ps());
                    continue;
                }
                const float *xr = x + (c * g->in_h + (size_t)iy) * W;
                for (size_t v = 0; v < n; v++) {
                    const float *p = xr + t[v].first;
                    const __m512 a = _mm512_maskz_loadu_ps(t[v].lo, p);
                    if (!S2) {
                        _mm512_mask_storeu_ps(row + 16 * v, t[v].store, a);
                        continue;
                    }
                    /* columns outside the row are 0 */
                    const __m512 b = _mm512_maskz_loadu_ps(t[v].hi, p + 16);
                    _mm512_mask_storeu_ps(row + 16 * v, t[v].store, _mm512_permutex2var_ps(a, even, b));
                    if (phases > 1)
                        _mm512_mask_storeu_ps(row + q->plane + 16 * v, t[v].store, _mm512_permutex2var_ps(a, odd, b));
                }
            }
            /* the cells between the plane's rows and the next plane, 31 at most */
            const size_t rows_end = q->hq * wq, gap = q->plane - rows_end;
            for (size_t px = 0; px < phases; px++) {
                float *z = plane + px * q->plane + rows_end;
                _mm512_mask_storeu_ps(z, (__mmask16)lanes(0, (int64_t)gap, 16), _mm512_setzero_ps());
                _mm512_mask_storeu_ps(z + 16, (__mmask16)lanes(16, (int64_t)gap, 32) >> 16, _mm512_setzero_ps());
            }
        }
}

__attribute__((target("avx512f")))
static int split__avx512(const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    const size_t sh = g->sh, sw = g->sw, wq = q->wq, W = g->in_w, nv = (wq + 15) / 16;
    /* without padding or stride the scalar split is one copy */
    if (nv > SPLIT_MAX_VECTORS || sw > 2 || split_is_input(g)) return 0;
    split_vec t[SPLIT_MAX_VECTORS];
    for (size_t v = 0; v < nv; v++) {
        /* lane i of vector v of phase px reads column first + i sw + px:
         * the columns first .. first + 16 sw - 1 are loaded where they are
         * in the row (0 elsewhere), once for the phases, the first n lanes
         * stored */
        const int64_t first = (int64_t)(16 * v * sw) - (int64_t)g->pw;
        const size_t n = wq - 16 * v < 16 ? wq - 16 * v : 16;
        const uint32_t m2 = lanes(-first, (int64_t)W - first, 32);
        t[v].first = first;
        t[v].lo = (__mmask16)(m2 & 0xFFFF);
        t[v].hi = (__mmask16)(m2 >> 16);
        t[v].store = (__mmask16)((1u << n) - 1);
    }
    /* rows of one or two vectors with the loops over them unrolled (the
     * ResNet-style preset's splits, which took 8% of its batch-1 run, in
     * about half the time) */
    if (nv == 1 && sw == 1) split_rows__avx512(1, 0, g, q, t, nv, x, xs);
    else if (nv == 2 && sw == 1) split_rows__avx512(2, 0, g, q, t, nv, x, xs);
    else if (nv == 1) split_rows__avx512(1, 1, g, q, t, nv, x, xs);
    else if (nv == 2) split_rows__avx512(2, 1, g, q, t, nv, x, xs);
    else if (sw == 1) split_rows__avx512(0, 0, g, q, t, nv, x, xs);
    else split_rows__avx512(0, 1, g, q, t, nv, x, xs);
    const size_t planes = (size_t)g->in_c * sh * sw;
    memset(xs + planes * q->plane, 0, (q->floats - planes * q->plane) * sizeof *xs);
    return 1;
}

/* Small planes split a vector at a time: a remap takes, for each of count
 * channels, dest cell d (d < D) of the split plane = input cell
 * split_src(d) of that channel, or 0 where split_src(d) is none (padding). Dest vector j reads a window of 32
 * source cells from first[j] (two loads, masked to the source's S cells)
 * and permutes its lanes out of it (zeros masked in), so a plane of a few
 * rows costs a few vectors, not a masked copy per row. Built per call;
 * remap_init fails (0) where a vector's sources span 32 cells or more, or
 * the plane takes REMAP_MAX vectors or more, or no fewer vectors than rows
 * (a row a vector: the rows' copy is as short, and reads less). dcz bench
 * at batch 1 on one core of an AMD EPYC, medians of three alternated runs:
 * MobileNetV2-style dense 331.0 -> 323.3 us, compressed 288.5 -> 275.7 (its
 * depthwise layers over 7 x 7 and 4 x 4); the ResNet-style and CNN presets
 * within 1%. */
#define REMAP_MAX 16
typedef struct remap {
    size_t nv;
    struct {
        int64_t first;
        int32_t idx[16];
        __mmask16 some, lo, hi, store;
    } v[REMAP_MAX];
} remap;

/* src(d) for the split input: padded cell d of a plane of wq columns */
static int64_t split_src(const dcz_conv_geom *g, size_t wq, size_t d)
{
    const int64_t iy = (int64_t)(d / wq) - (int64_t)g->ph, ix = (int64_t)(d % wq) - (int64_t)g->pw;
    return iy < 0 || iy >= (int64_t)g->in_h || ix < 0 || ix >= (int64_t)g->in_w ? -1 : iy * g->in_w + ix;
}

static int remap_init(remap *r, const dcz_conv_geom *g, size_t wq, size_t D, size_t S, size_t rows)
{
    r->nv = (D + 15) / 16;
    if (r->nv > REMAP_MAX || r->nv >= rows) return 0;
    for (size_t j = 0; j < r->nv; j++) {
        int64_t lo = INT64_MAX, hi = -1;
        for (size_t i = 0; i < 16 && 16 * j + i < D; i++) {
            const int64_t c = split_src(g, wq, 16 * j + i);
            if (c < 0) continue;
            if (c < lo) lo = c;
            if (c > hi) hi = c;
        }
        if (hi < 0) lo = 0;
        if (hi - lo >= 32) return 0;
        r->v[j].first = lo;
        uint32_t some = 0;
        for (size_t i = 0; i < 16; i++) {
            const int64_t c = 16 * j + i < D ? split_src(g, wq, 16 * j + i) : -1;
            r->v[j].idx[i] = c < 0 ? 0 : (int32_t)(c - lo);
            if (c >= 0) some |= 1u << i;
        }
        r->v[j].some = (__mmask16)some;
        r->v[j].lo = (__mmask16)lanes(0, (int64_t)S - lo, 16);
        r->v[j].hi = (__mmask16)lanes(0, (int64_t)S - lo - 16, 16);
        r->v[j].store = (__mmask16)lanes(0, (int64_t)(D - 16 * j), 16);
    }
    return 1;
}

/* The remap of count channels, source planes ss apart, dest planes ds apart. */
__attribute__((target("avx512f")))
static void remap_run__avx512(const remap *r, size_t count, const float *x, size_t ss, float *y, size_t ds)
{
    for (size_t c = 0; c < count; c++) {
        const float *xc = x + c * ss;
        float *yc = y + c * ds;
        for (size_t j = 0; j < r->nv; j++) {
            const float *p = xc + r->v[j].first;
            const __m512 a = _mm512_maskz_loadu_ps(r->v[j].lo, p), b = _mm512_maskz_loadu_ps(r->v[j].hi, p + 16);
            const __m512i idx = _mm512_loadu_si512((const void *)r->v[j].idx);
            const __m512 v = _mm512_maskz_permutex2var_ps(r->v[j].some, a, idx, b);
            _mm512_mask_storeu_ps(yc + 16 * j, r->v[j].store, v);
        }
    }
}


/* Depthwise convolutions (one input channel a group, one output channel
 * each: blocks of one) at strides 1 and 2, straight from the input into
 * the output (AVX-512): the split and the copy out cost several times the
 * nine or so multiply-adds of each output on such small planes. Two
 * kernels, each output starting from the bias and taking the fused
 * multiply-add of each of its channel's taps in column order, so the bits
 * of shift_planes_ref:
 *   rows   each output row, a vector of 16 columns at a time, over the
 *          input row its tap reads (masked loads: lanes outside the image
 *          read 0, as the split input's padding does; at stride 2 a permute
 *          keeps every other column); a row above or below the image is
 *          read from zeros, so the tap adds w x 0 there as the reference
 *          does. R rows are summed at once (8, or 7 where the plane has 7
 *          or 14 rows, 4 of two vectors), the tap outermost, so that each
 *          weight is broadcast once and the R NV sums stay in registers.
 *          Where a vector's window spans 32 columns or fewer (one vector
 *          a row, or two at stride 1), each input row is loaded once for
 *          all its taps and each tap permutes its lanes out of it
 *          (dw_rows1__avx512); else each tap loads (dw_rows__avx512).
 *   plane  small planes held in registers whole (dw_plane__avx512).
 * dw_path picks: plane where it fits, else rows, except at stride 1 over
 * rows of 8 or fewer (7 x 7 that the plane cannot take), where the shift
 * form was faster. Measured per layer on the MobileNetV2-style preset,
 * dense, batch 1, one core of an AMD EPYC (us, shift form -> this):
 * 16 x 28 x 28 7.8 -> 6.5, 96 x 14 x 14 stride 2 30.6 -> 21.8,
 * 144 x 14 x 14 23.0 -> 21.0, 144 x 7 x 7 stride 2 19.7 -> 17.7,
 * 192 x 7 x 7 10.2 -> 8.2 (plane; 16.2 by rows), 192 x 4 x 4 stride 2
 * 14.7 -> 14.3, 384 x 4 x 4 10.3 -> 7.2 (plane; 20.4 by rows). The whole
 * model: dense 324 -> 302 us, compressed 285 -> 261 (dcz bench medians,
 * alternated); rows 7 at a time over 7 and 14 rows, not 8: the three
 * layers by rows 2 us faster each, the dense model 303 -> 297 us. */
#define DW_MAX_TAPS 49
#define DW_MAX_KW 7
#define DW_MAX_ROWS 64
#define DW_MAX_W 96
static const float dw_zeros[DW_MAX_W];

typedef struct dw_plan {
    int64_t first[DW_MAX_KW][2];   /* the input column of lane 0 of vector v at tap column kx */
    __mmask16 lo[DW_MAX_KW][2], hi[DW_MAX_KW][2];   /* its lanes inside the row (hi: the next 16, stride 2) */
    __mmask16 tail;                /* the lanes of the last vector of an output row */
} dw_plan;

/* Output rows oy0 .. oy0 + R - 1 of one channel (those below out_h stored),
 * rows[j] the input row that window row j of output row 0 of the group
 * reads, times the stride. */
__attribute__((target("avx512f"), always_inline))
static inline void dw_rows__avx512(const size_t NV, const size_t R, const int S2, const dw_plan *pl, size_t sh,
                                   const float *const *rows, const uint8_t *ky, const uint8_t *kx,
                                   const float *w, uint32_t n, float b, size_t nrows, size_t out_w,
                                   const dcz_act *act, float *y)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    __m512 acc[8][2];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 2
        for (size_t v = 0; v < NV; v++) acc[r][v] = _mm512_set1_ps(b);
    for (uint32_t e = 0; e < n; e++) {
        const __m512 wv = _mm512_set1_ps(w[e]);
        const size_t c = kx[e];
        const float *const *rp = rows + ky[e];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++) {
            const float *xr = rp[r * sh];
#pragma GCC unroll 2
            for (size_t v = 0; v < NV; v++) {
                const float *p = xr + pl->first[c][v];
                __m512 x = _mm512_maskz_loadu_ps(pl->lo[c][v], p);
                if (S2) x = _mm512_permutex2var_ps(x, even, _mm512_maskz_loadu_ps(pl->hi[c][v], p + 16));
                acc[r][v] = _mm512_fmadd_ps(wv, x, acc[r][v]);
            }
        }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++) {
        if (r >= nrows) break;
        float *yr = y + r * out_w;
        for (size_t v = 0; v + 1 < NV; v++) _mm512_storeu_ps(yr + 16 * v, dcz_act__avx512(acc[r][v], act));
        _mm512_mask_storeu_ps(yr + 16 * (NV - 1), pl->tail, dcz_act__avx512(acc[r][NV - 1], act));
    }
}

/* Output rows oy0 .. oy0 + R - 1 of one channel, NV vectors a row, where
 * a vector's window spans at most 32 input columns: NV = 1 with (ow - 1)
 * sw + kw <= 32, or NV = 2 at stride 1. Each input row a window row reads
 * is loaded once, as NV + 1 vectors of the columns from -pw (masked
 * m[j]: outside the row, 0), and each of its taps picks the lanes
 * i sw + kx of vectors v, v + 1 for output vector v by a two-table
 * permute (idx[kx]). A channel's taps come in column order, so the taps of
 * a window row follow one another. Same taps in the same order as
 * dw_rows__avx512, so the same bits; a permute and a multiply-add a tap
 * and vector, where that takes two masked loads, a permute and the
 * multiply-add at stride 2, and a masked load across cache lines at 1.
 * One core of a Xeon (AVX-512), MobileNetV2-style dense, batch 1, per
 * layer (us, dw_rows__avx512 -> this): 16 x 28 x 28 6.9 -> 6.0, 96 x 28
 * x 28 stride 2 21.1 -> 14.3, 144 x 14 x 14 20.2 -> 17.6, 144 x 14 x 14
 * stride 2 16.8 -> 11.1, 192 x 7 x 7 stride 2 15.1 -> 10.7 (with the
 * window cells' rows and columns looked up, not divided); the whole
 * model, dcz bench medians of alternated runs: dense 270 -> 252 us,
 * compressed 255 -> 235. */
__attribute__((target("avx512f"), always_inline))
static inline void dw_rows1__avx512(const size_t NV, const size_t R, const __mmask16 *m, size_t pw, size_t sh,
                                    const float *const *rows, const uint8_t *ky, const uint8_t *kx,
                                    const __m512i *idx, const float *w, uint32_t n, float b, size_t nrows,
                                    size_t out_w, __mmask16 tail, const dcz_act *act, float *y)
{
    __m512 acc[8][2];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 2
        for (size_t v = 0; v < NV; v++) acc[r][v] = _mm512_set1_ps(b);
    for (uint32_t e = 0; e < n;) {
        const uint8_t row = ky[e];
        const float *const *rp = rows + row;
        __m512 x[8][3];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
#pragma GCC unroll 3
            for (size_t j = 0; j <= NV; j++) x[r][j] = _mm512_maskz_loadu_ps(m[j], rp[r * sh] - pw + 16 * j);
        for (; e < n && ky[e] == row; e++) {
            const __m512 wv = _mm512_set1_ps(w[e]);
            const __m512i ix = idx[kx[e]];
#pragma GCC unroll 8
            for (size_t r = 0; r < R; r++)
#pragma GCC unroll 2
                for (size_t v = 0; v < NV; v++)
                    acc[r][v] = _mm512_fmadd_ps(wv, _mm512_permutex2var_ps(x[r][v], ix, x[r][v + 1]), acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++) {
        if (r >= nrows) break;
        float *yr = y + r * out_w;
        if (NV == 2) _mm512_storeu_ps(yr, dcz_act__avx512(acc[r][0], act));
        _mm512_mask_storeu_ps(yr + 16 * (NV - 1), tail, dcz_act__avx512(acc[r][NV - 1], act));
    }
}

/* rel[k]: the offset of window cell k (ky kw + kx) in the split input from
 * its channel's first cell */
static void dw_cells_rel(const dcz_conv_geom *g, const split_geom *q, uint32_t *rel)
{
    for (uint32_t k = 0; k < (uint32_t)g->kh * g->kw; k++) rel[k] = tap_offset(g, q, 0, k / g->kw, k % g->kw);
}

/* cell[e]: the window cell of each of channel c's taps, from its offset: a
 * channel's taps are some of the cells, in column order */
static uint32_t dw_cells(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f, const uint32_t *rel,
                         uint32_t c, uint8_t *cell)
{
    const uint32_t e0 = f->ptr[c], n = f->ptr[c + 1] - e0, first = tap_offset(g, q, c, 0, 0);
    for (uint32_t e = 0, k = 0; e < n; e++, k++) {
        while (rel[k] != f->off[e0 + e] - first) k++;
        cell[e] = (uint8_t)k;
    }
    return n;
}

/* The rows kernels' tables for g: rel (dw_cells_rel), and each window
 * cell's row and column (cell_ky, cell_kx: looked up, since a division per
 * tap and channel took a tenth of the kernel's time). */
static void dw_taps_init(const dcz_conv_geom *g, const split_geom *q, uint32_t *rel, uint8_t *cell_ky,
                         uint8_t *cell_kx)
{
    dw_cells_rel(g, q, rel);
    for (uint32_t k = 0; k < (uint32_t)g->kh * g->kw; k++) {
        cell_ky[k] = (uint8_t)(k / g->kw);
        cell_kx[k] = (uint8_t)(k % g->kw);
    }
}

/* Channel c's n taps (returned) in the rows kernels' terms: tap e in
 * window row ky[e] and column kx[e], in column order. */
static uint32_t dw_channel_taps(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f, const uint32_t *rel,
                                const uint8_t *cell_ky, const uint8_t *cell_kx, uint32_t c, uint8_t *ky, uint8_t *kx)
{
    const uint32_t n = dw_cells(g, q, f, rel, c, ky);
    for (uint32_t e = 0; e < n; e++) {
        kx[e] = cell_kx[ky[e]];
        ky[e] = cell_ky[ky[e]];
    }
    return n;
}

/* rows[j], j < nrow: the input row of plane xc that window row j of output
 * row 0 reads (row j - ph), dw_zeros above and below the image. */
static void dw_input_rows(const dcz_conv_geom *g, const float *xc, size_t nrow, const float **rows)
{
    for (size_t j = 0; j < nrow; j++) {
        const int64_t iy = (int64_t)j - (int64_t)g->ph;
        rows[j] = iy >= 0 && iy < (int64_t)g->in_h ? xc + (size_t)iy * g->in_w : dw_zeros;
    }
}

#define DW_PLANE_VECTORS 4
static int dw_plane_fits(const dcz_conv_geom *g)
{
    const size_t W = g->in_w, H = g->in_h, out_plane = (size_t)g->out_h * g->out_w;
    if (H * W <= 32 && out_plane <= 16) return 1;
    return g->sh == 1 && g->sw == 1 && g->out_h == H && g->out_w == W && (g->kh - 1) * W + g->kw - 1 <= 16 &&
           out_plane <= 16 * DW_PLANE_VECTORS;
}

/* Which of the two depthwise kernels runs g on the shift form f: DW_PLANE
 * where the plane fits (dw_plane_fits), else DW_ROWS, except at stride 1
 * over rows of 8 or fewer, where the shift form is faster; DW_NONE for
 * other convolutions. */
enum { DW_NONE, DW_ROWS, DW_PLANE };
/* whether the rows kernels take g on the shift form f: a depthwise
 * convolution of rows of at most 32 outputs within their bounds */
static int dw_rows_fit(const dcz_conv_geom *g, const dcz_shift *f)
{
    const size_t ksize = (size_t)g->kh * g->kw;
    return dcz_conv_groups(g) == g->in_c && g->out_c == g->in_c && f->ob == 1 && g->out_w <= 32 && g->sw <= 2 &&
           g->sh <= 2 && g->kw <= DW_MAX_KW && ksize <= DW_MAX_TAPS && g->out_h <= DW_MAX_ROWS &&
           g->in_w <= DW_MAX_W;
}

static int dw_path(const dcz_conv_geom *g, const dcz_shift *f)
{
    const size_t ow = g->out_w;
    if (!dw_rows_fit(g, f)) return DW_NONE;
    if (dw_plane_fits(g)) return DW_PLANE;
    return g->sw == 1 && ow <= 8 ? DW_NONE : DW_ROWS;
}

/* The NV vectors of one plane, the taps outermost: NV independent sums
 * (NV is a constant at every call). */
__attribute__((target("avx512f"), always_inline))
static inline void dw_plane_vectors__avx512(const size_t NV, const float *xc, float *yc, const __mmask16 *lo,
                                            const __mmask16 *hi, const int64_t *base, const __mmask16 *store,
                                            const __mmask16 (*in)[DW_MAX_TAPS], const __m512i *idx,
                                            const uint8_t *tk, const float *w, uint32_t n, float b,
                                            const dcz_act *act)
{
    __m512 x0[DW_PLANE_VECTORS], x1[DW_PLANE_VECTORS], acc[DW_PLANE_VECTORS];
#pragma GCC unroll 4
    for (size_t j = 0; j < NV; j++) {
        x0[j] = _mm512_maskz_loadu_ps(lo[j], xc + base[j]);
        x1[j] = _mm512_maskz_loadu_ps(hi[j], xc + base[j] + 16);
        acc[j] = _mm512_set1_ps(b);
    }
    for (uint32_t e = 0; e < n; e++) {
        const __m512 wv = _mm512_set1_ps(w[e]);
        const __m512i ix = idx[tk[e]];
#pragma GCC unroll 4
        for (size_t j = 0; j < NV; j++)
            acc[j] = _mm512_fmadd_ps(wv, _mm512_maskz_permutex2var_ps(in[j][tk[e]], x0[j], ix, x1[j]), acc[j]);
    }
#pragma GCC unroll 4
    for (size_t j = 0; j < NV; j++) _mm512_mask_storeu_ps(yc + 16 * j, store[j], dcz_act__avx512(acc[j], act));
}

/* Small planes in registers: output vector j (cells 16 j ..) reads every
 * tap's inputs from a window of 32 cells at base[j], two masked loads, and
 * each tap is one permute of the window, its lanes that read padding
 * masked to 0 (the same w x 0 as above). dw_plane_fits takes two cases:
 * an input plane of at most 32 cells and an output of one vector (any
 * stride: the window is the plane), or stride 1 with the size kept over at
 * most DW_PLANE_VECTORS vectors, where the window of vector j starts
 * ph W + pw cells before it and tap (ky, kx) reads lane i at
 * i + ky W + kx, which fits while (kh - 1) W + kw - 1 <= 16 (7 x 7 planes
 * at 3 x 3). */
__attribute__((target("avx512f")))
static void dw_plane__avx512(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f, const float *bias,
                             const float *x, size_t batch, const dcz_act *act, float *y)
{
    const size_t H = g->in_h, W = g->in_w, oh = g->out_h, ow = g->out_w, ksize = (size_t)g->kh * g->kw;
    const size_t in_plane = H * W, out_plane = oh * ow, nv = (out_plane + 15) / 16;
    const int one = in_plane <= 32 && out_plane <= 16;
    __m512i idx[DW_MAX_TAPS];
    __mmask16 in[DW_PLANE_VECTORS][DW_MAX_TAPS], lo[DW_PLANE_VECTORS], hi[DW_PLANE_VECTORS], store[DW_PLANE_VECTORS];
    int64_t base[DW_PLANE_VECTORS];
    uint32_t rel[DW_MAX_TAPS];
    for (size_t j = 0; j < nv; j++) {
        base[j] = one ? 0 : (int64_t)(16 * j) - (int64_t)(g->ph * W + g->pw);
        lo[j] = (__mmask16)lanes(-base[j], (int64_t)in_plane - base[j], 16);
        hi[j] = (__mmask16)lanes(-base[j] - 16, (int64_t)in_plane - base[j] - 16, 16);
        store[j] = (__mmask16)lanes(0, (int64_t)out_plane - (int64_t)(16 * j), 16);
    }
    /* the input row and column that window cell (0, 0) reads for each output cell */
    int64_t iy0[16 * DW_PLANE_VECTORS], jx0[16 * DW_PLANE_VECTORS];
    for (size_t cell = 0, oy = 0, ox = 0; cell < out_plane; cell++) {
        iy0[cell] = (int64_t)(oy * g->sh) - g->ph;
        jx0[cell] = (int64_t)(ox * g->sw) - g->pw;
        if (++ox == ow) ox = 0, oy++;
    }
    for (size_t k = 0; k < ksize; k++) {
        const int64_t ky = (int64_t)(k / g->kw), kx = (int64_t)(k % g->kw);
        int32_t ix[16];
        for (size_t j = 0; j < nv; j++) {
            uint32_t m = 0;
            for (size_t i = 0; i < 16; i++) {
                const size_t cell = 16 * j + i;
                const int64_t iy = cell < out_plane ? iy0[cell] + ky : -1, jx = cell < out_plane ? jx0[cell] + kx : -1;
                const int inside = iy >= 0 && iy < (int64_t)H && jx >= 0 && jx < (int64_t)W;
                if (j == 0) /* one: the cell read; else the window's lane */
                    ix[i] = (int32_t)(one ? (inside ? iy * (int64_t)W + jx : 0) : (int64_t)i + ky * (int64_t)W + kx);
                m |= (uint32_t)inside << i;
            }
            in[j][k] = (__mmask16)m;
        }
        idx[k] = _mm512_loadu_si512((const void *)ix);
    }
    dw_cells_rel(g, q, rel);
    for (uint32_t c = 0; c < g->out_c; c++) {
        uint8_t tk[DW_MAX_TAPS];
        const uint32_t n = dw_cells(g, q, f, rel, c, tk);
        const float *w = f->w + f->ptr[c], b = bias ? bias[c] : 0.0f;
        for (size_t s = 0; s < batch; s++) {
            const float *xc = x + (s * g->in_c + c) * in_plane;
            float *yc = y + (s * g->out_c + c) * out_plane;
            switch (nv) {
            case 1: dw_plane_vectors__avx512(1, xc, yc, lo, hi, base, store, in, idx, tk, w, n, b, act); break;
            case 2: dw_plane_vectors__avx512(2, xc, yc, lo, hi, base, store, in, idx, tk, w, n, b, act); break;
            case 3: dw_plane_vectors__avx512(3, xc, yc, lo, hi, base, store, in, idx, tk, w, n, b, act); break;
            default: dw_plane_vectors__avx512(4, xc, yc, lo, hi, base, store, in, idx, tk, w, n, b, act); break;
            }
        }
    }
}

__attribute__((target("avx512f")))
static void dw_rows_run__avx512(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f,
                                const float *bias, const float *x, size_t batch, const dcz_act *act, float *y)
{
    const size_t W = g->in_w, H = g->in_h, ow = g->out_w, oh = g->out_h, sw = g->sw, sh = g->sh;
    const size_t nv = (ow + 15) / 16;
    dw_plan pl;
    for (size_t c = 0; c < g->kw; c++)
        for (size_t v = 0; v < nv; v++) {
            const int64_t first = (int64_t)(16 * v * sw + c) - (int64_t)g->pw;
            const uint32_t m = lanes(-first, (int64_t)W - first, sw == 1 ? 16 : 32);
            pl.first[c][v] = first;
            pl.lo[c][v] = (__mmask16)(m & 0xFFFF);
            pl.hi[c][v] = (__mmask16)(m >> 16);
        }
    pl.tail = (__mmask16)((1u << (ow - 16 * (nv - 1))) - 1);
    /* vectors whose windows fit two: a row loaded once for its taps */
    const int once = nv == 1 ? (ow - 1) * sw + g->kw <= 32 : sw == 1;
    __mmask16 m1[3];
    for (size_t j = 0; j < 3; j++)
        m1[j] = (__mmask16)lanes((int64_t)g->pw - (int64_t)(16 * j), (int64_t)(W + g->pw) - (int64_t)(16 * j), 16);
    __m512i idx1[DW_MAX_KW];
    for (size_t c = 0; c < g->kw; c++)
        idx1[c] = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
                                                                        2, 1, 0),
                                                       _mm512_set1_epi32((int)sw)),
                                   _mm512_set1_epi32((int)c));
    /* output rows a call: 8 of one vector (7 over planes of 7 or 14 rows, 4
     * where the plane has no more), 4 of two */
    const size_t R = nv == 2 ? 4 : oh <= 4 ? 4 : oh % 7 == 0 ? 7 : 8, groups = (oh + R - 1) / R;
    uint32_t rel[DW_MAX_TAPS];
    uint8_t cell_ky[DW_MAX_TAPS], cell_kx[DW_MAX_TAPS];
    dw_taps_init(g, q, rel, cell_ky, cell_kx);
    /* window row j of output row oy reads input row oy sh + j - ph */
    const float *rows[(DW_MAX_ROWS + 8) * 2 + DW_MAX_TAPS];
    const size_t nrow = (groups * R - 1) * sh + g->kh;
    const size_t in_plane = H * W, out_plane = oh * ow;
    for (uint32_t c = 0; c < g->out_c; c++) {
        uint8_t ky[DW_MAX_TAPS], kx[DW_MAX_TAPS];
        const uint32_t n = dw_channel_taps(g, q, f, rel, cell_ky, cell_kx, c, ky, kx);
        const float *w = f->w + f->ptr[c], b = bias ? bias[c] : 0.0f;
        for (size_t s = 0; s < batch; s++) {
            const float *xc = x + (s * g->in_c + c) * in_plane;
            float *yc = y + (s * g->out_c + c) * out_plane;
            dw_input_rows(g, xc, nrow, rows);
            for (size_t gi = 0; gi < groups; gi++) {
                const size_t oy = gi * R, left = oh - oy < R ? oh - oy : R;
                const float *const *rp = rows + oy * sh;
                float *yr = yc + oy * ow;
                if (once && nv == 2)
                    dw_rows1__avx512(2, 4, m1, g->pw, sh, rp, ky, kx, idx1, w, n, b, left, ow, pl.tail, act, yr);
                else if (once && R == 4)
                    dw_rows1__avx512(1, 4, m1, g->pw, sh, rp, ky, kx, idx1, w, n, b, left, ow, pl.tail, act, yr);
                else if (once && R == 7)
                    dw_rows1__avx512(1, 7, m1, g->pw, sh, rp, ky, kx, idx1, w, n, b, left, ow, pl.tail, act, yr);
                else if (once)
                    dw_rows1__avx512(1, 8, m1, g->pw, sh, rp, ky, kx, idx1, w, n, b, left, ow, pl.tail, act, yr);
                else if (nv == 2 && sw == 1) dw_rows__avx512(2, 4, 0, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr);
                else if (nv == 2) dw_rows__avx512(2, 4, 1, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr);
                else if (R == 4 && sw == 1) dw_rows__avx512(1, 4, 0, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr);
                else if (R == 4) dw_rows__avx512(1, 4, 1, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr);
                else if (R == 7 && sw == 1) dw_rows__avx512(1, 7, 0, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr);
                else if (R == 7) dw_rows__avx512(1, 7, 1, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr);
                else if (sw == 1) dw_rows__avx512(1, 8, 0, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr);
                else dw_rows__avx512(1, 8, 1, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr);
            }
        }
    }
}

/* dw_rows__avx512 in AVX2, 8 columns a vector (rows of up to 32 outputs:
 * NV up to 4), R rows a call (8 of one vector, 7 over planes of 7 or 14
 * rows, 4 of two, 2 of three or four): each tap's input vector by a load
 * where its lanes lie inside the row, else a masked one (lanes outside
 * read 0); at stride 2 two, whose even floats a shuffle and a permute
 * deal. The same taps in the same order, so the same bits. It runs the
 * depthwise layers dw_rows_fit takes at column stride 2 (dw_rows_avx2):
 * one core of an AMD EPYC (Zen 3), MobileNetV2-style dense, batch 1, best
 * per-layer times of 2000 runs (us, shift form -> this): 96 x 28 x 28
 * stride 2 44.3 -> 42.0, 144 x 14 x 14 stride 2 24.6 -> 19.5, 192 x 7 x 7
 * stride 2 21.4 -> 17.0. At stride 1 the shift form is faster, the planes
 * small or not (16 x 28 x 28 11.6 against 15.8, 144 x 14 x 14 27.6
 * against 43.7, 384 x 4 x 4 16.5 against 30.2): a masked load on Zen 3
 * costs several plain ones, and over planes of 4 or 7 columns half a
 * vector's lanes or more lie outside, where the shift form's split planes
 * hold rows side by side. */
/* whether the AVX2 rows kernel runs g on the shift form f (see above) */
static int dw_rows_avx2(const dcz_conv_geom *g, const dcz_shift *f)
{
    return g->sw == 2 && dw_rows_fit(g, f);
}

typedef struct dw_plan8 {
    int64_t first[DW_MAX_KW][4];    /* the input column of lane 0 of vector v at tap column kx */
    __m256i lo[DW_MAX_KW][4], hi[DW_MAX_KW][4]; /* its lanes inside the row (hi: the next 8, stride 2) */
    uint8_t whole[DW_MAX_KW][4];    /* every lane of both inside: plain loads */
    __m256i tail;                   /* the lanes of the last vector of an output row */
} dw_plan8;

__attribute__((target("avx2,fma"), always_inline))
static inline void dw_rows__avx2(const size_t NV, const size_t R, const int S2, const dw_plan8 *pl, size_t sh,
                                 const float *const *rows, const uint8_t *ky, const uint8_t *kx, const float *w,
                                 uint32_t n, float b, size_t nrows, size_t out_w, const dcz_act *act, float *y)
{
    __m256 acc[8][4];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 4
        for (size_t v = 0; v < NV; v++) acc[r][v] = _mm256_set1_ps(b);
    for (uint32_t e = 0; e < n; e++) {
        const __m256 wv = _mm256_set1_ps(w[e]);
        const size_t c = kx[e];
        const float *const *rp = rows + ky[e];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++) {
            const float *xr = rp[r * sh];
#pragma GCC unroll 4
            for (size_t v = 0; v < NV; v++) {
                const float *p = xr + pl->first[c][v];
                __m256 x;
                if (pl->whole[c][v]) {
                    x = _mm256_loadu_ps(p);
                    if (S2) x = dcz_evens__avx2(x, _mm256_loadu_ps(p + 8));
                } else {
                    x = _mm256_maskload_ps(p, pl->lo[c][v]);
                    if (S2) x = dcz_evens__avx2(x, _mm256_maskload_ps(p + 8, pl->hi[c][v]));
                }
                acc[r][v] = _mm256_fmadd_ps(wv, x, acc[r][v]);
            }
        }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++) {
        if (r >= nrows) break;
        float *yr = y + r * out_w;
#pragma GCC unroll 4
        for (size_t v = 0; v + 1 < NV; v++) _mm256_storeu_ps(yr + 8 * v, dcz_act__avx2(acc[r][v], act));
        _mm256_maskstore_ps(yr + 8 * (NV - 1), pl->tail, dcz_act__avx2(acc[r][NV - 1], act));
    }
}

__attribute__((target("avx2,fma")))
static void dw_rows_run__avx2(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f,
                              const float *bias, const float *x, size_t batch, const dcz_act *act, float *y)
{
    const size_t W = g->in_w, H = g->in_h, ow = g->out_w, oh = g->out_h, sw = g->sw, sh = g->sh;
    const size_t nv = (ow + 7) / 8;
    dw_plan8 pl;
    for (size_t c = 0; c < g->kw; c++)
        for (size_t v = 0; v < nv; v++) {
            const int64_t first = (int64_t)(8 * v * sw + c) - (int64_t)g->pw;
            const uint32_t width = sw == 1 ? 8 : 16, m = lanes(-first, (int64_t)W - first, width);
            pl.first[c][v] = first;
            pl.lo[c][v] = dcz_bits8__avx2(m & 0xFF);
            pl.hi[c][v] = dcz_bits8__avx2(m >> 8);
            pl.whole[c][v] = m == (1u << width) - 1;
        }
    pl.tail = dcz_mask8__avx2((uint32_t)(ow - 8 * (nv - 1)));
    const size_t R = nv == 1 ? (oh <= 4 ? 4 : oh % 7 == 0 ? 7 : 8) : nv == 2 ? 4 : 2, groups = (oh + R - 1) / R;
    uint32_t rel[DW_MAX_TAPS];
    uint8_t cell_ky[DW_MAX_TAPS], cell_kx[DW_MAX_TAPS];
    dw_taps_init(g, q, rel, cell_ky, cell_kx);
    const float *rows[(DW_MAX_ROWS + 8) * 2 + DW_MAX_TAPS];
    const size_t nrow = (groups * R - 1) * sh + g->kh;
    const size_t in_plane = H * W, out_plane = oh * ow;
    for (uint32_t c = 0; c < g->out_c; c++) {
        uint8_t ky[DW_MAX_TAPS], kx[DW_MAX_TAPS];
        const uint32_t n = dw_channel_taps(g, q, f, rel, cell_ky, cell_kx, c, ky, kx);
        const float *w = f->w + f->ptr[c], b = bias ? bias[c] : 0.0f;
        for (size_t s = 0; s < batch; s++) {
            const float *xc = x + (s * g->in_c + c) * in_plane;
            float *yc = y + (s * g->out_c + c) * out_plane;
            dw_input_rows(g, xc, nrow, rows);
            for (size_t gi = 0; gi < groups; gi++) {
                const size_t oy = gi * R, left = oh - oy < R ? oh - oy : R;
                const float *const *rp = rows + oy * sh;
                float *yr = yc + oy * ow;
#define DW_ROWS2(NV_, R_) \
    (sw == 1 ? dw_rows__avx2(NV_, R_, 0, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr) \
             : dw_rows__avx2(NV_, R_, 1, &pl, sh, rp, ky, kx, w, n, b, left, ow, act, yr))
                if (nv == 4) DW_ROWS2(4, 2);
                else if (nv == 3) DW_ROWS2(3, 2);
                else if (nv == 2) DW_ROWS2(2, 4);
                else if (R == 4) DW_ROWS2(1, 4);
                else if (R == 7) DW_ROWS2(1, 7);
                else DW_ROWS2(1, 8);
#undef DW_ROWS2
            }
        }
    }
}
#endif

#ifdef DCZ_X86
/* Depthwise convolutions with channels in the lanes (AVX2): a vector holds
 * 8 channels of one cell, so a tap is one multiply-add of 8 channels'
 * weights by 8 channels' inputs, whatever the plane's width, no lane
 * masked. Per block of 8 channels and sample: the padded input transposed
 * into cells of 8 channels (8 x 8 transposes of rows; zeros around), then
 * each output row 4 cells at a time, the sums of its taps in column order
 * from the bias (the reference's), through the activation into a row of
 * cells, transposed back into the 8 output planes. Every channel of a block
 * must hold the same taps: it runs layers whose channels all hold every
 * cell of the window (dense depthwise weights; a pruned layer keeps the
 * other kernels). The transposes cost 24 shuffles per 64 floats each way;
 * what it saves: the planes' masked edges, half-empty vectors over planes
 * of 4 and 7 columns and a call's setup per channel. Its scratch: the
 * block's padded input and a row of cells, within the split input's (8
 * channels or more).
 * MobileNetV2-style dense layers, batch 1, one core of an AMD EPYC (Zen
 * 3), best of 2000 runs (us, the kernel before -> this): 16 x 28 x 28
 * 11.7 -> 7.4, 96 x 28 x 28 stride 2 42.4 -> 30.5 (rows), 144 x 14 x 14
 * 27.9 -> 19.1, 144 x 14 x 14 stride 2 20.2 -> 13.2 (rows), 192 x 7 x 7
 * 11.8 -> 9.5, 192 x 7 x 7 stride 2 17.2 -> 7.1 (rows), 384 x 4 x 4 16.5
 * -> 10.8; the dense model 451 -> 397 us (batch 64: 28.9 -> 25.6 ms), the
 * compressed one 379 -> 332. Of 144 x 14 x 14's 19 us, the transposes
 * take about 11 (the input's 6); 128-bit loads into the two halves, for
 * in-lane transposes only, ran slower (22.7). */
#define DWL_MAX_OUT_W 64

/* whether the channels-in-lanes kernel runs g on the shift form f */
static int dw_lanes_fit(const dcz_conv_geom *g, const dcz_shift *f)
{
    const size_t taps = (size_t)g->kh * g->kw, hp = (size_t)g->in_h + 2 * g->ph, wp = (size_t)g->in_w + 2 * g->pw;
    return dcz_conv_groups(g) == g->in_c && g->out_c == g->in_c && f->ob == 1 && f->whole && g->in_c >= 8 &&
           taps <= DW_MAX_TAPS && g->out_w <= DWL_MAX_OUT_W &&
           hp * wp * 8 + (size_t)DWL_MAX_OUT_W * 8 + 8 <= dcz_shift_scratch_floats(g);
}

/* 8 x 8 transpose: r[i] lane j to r[j] lane i */
__attribute__((target("avx2"), always_inline))
static inline void transpose8__avx2(__m256 *r)
{
    __m256 t[8], u[8];
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* O output cells from the window at t (the block's padded input in cells,
 * the window's first cell), sw cells apart: wt the taps' weights (n, 8),
 * toff their cells' offsets from the window's first (floats); into q (O
 * cells of 8). */
__attribute__((target("avx2,fma"), always_inline))
static inline void dw_lanes_cells__avx2(const int O, const float *t, size_t sw, const float *wt, const uint32_t *toff,
                                        uint32_t n, __m256 b, const dcz_act *act, float *q)
{
    __m256 acc[4];
#pragma GCC unroll 4
    for (int o = 0; o < O; o++) acc[o] = b;
    for (uint32_t e = 0; e < n; e++) {
        const __m256 wv = _mm256_load_ps(wt + 8 * (size_t)e);
        const float *x = t + toff[e];
#pragma GCC unroll 4
        for (int o = 0; o < O; o++) acc[o] = _mm256_fmadd_ps(wv, _mm256_load_ps(x + 8 * sw * (size_t)o), acc[o]);
    }
#pragma GCC unroll 4
    for (int o = 0; o < O; o++) _mm256_store_ps(q + 8 * (size_t)o, dcz_act__avx2(acc[o], act));
}

/* The same at stride 1 over 3 columns a window row, whose taps' column
 * order is the window's row by row: each window row's O + 2 input cells
 * loaded once for its three taps (O = 6: 8 loads and 3 weights for 18
 * multiply-adds, where a load a tap took 4 + 1 for 4). */
__attribute__((target("avx2,fma"), always_inline))
static inline void dw_lanes_cells3__avx2(const int O, const float *t, size_t wp, uint32_t kh, const float *wt,
                                         __m256 b, const dcz_act *act, float *q)
{
    __m256 acc[6], xr[8];
#pragma GCC unroll 6
    for (int o = 0; o < O; o++) acc[o] = b;
    for (uint32_t ky = 0; ky < kh; ky++) {
        const float *r = t + ky * wp * 8;
#pragma GCC unroll 8
        for (int j = 0; j < O + 2; j++) xr[j] = _mm256_load_ps(r + 8 * j);
#pragma GCC unroll 3
        for (int kx = 0; kx < 3; kx++) {
            const __m256 wv = _mm256_load_ps(wt + 8 * (ky * 3 + (size_t)kx));
#pragma GCC unroll 6
            for (int o = 0; o < O; o++) acc[o] = _mm256_fmadd_ps(wv, xr[o + kx], acc[o]);
        }
    }
#pragma GCC unroll 6
    for (int o = 0; o < O; o++) _mm256_store_ps(q + 8 * (size_t)o, dcz_act__avx2(acc[o], act));
}

__attribute__((target("avx2,fma")))
static void dw_lanes_run__avx2(const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f, const float *bias,
                               const float *x, size_t batch, const dcz_act *act, float *scratch, float *y)
{
    const size_t H = g->in_h, W = g->in_w, C = g->in_c, oh = g->out_h, ow = g->out_w, sh = g->sh, sw = g->sw;
    const size_t hp = H + 2 * g->ph, wp = W + 2 * g->pw, in_plane = H * W, out_plane = oh * ow;
    float *T = (float *)(((uintptr_t)scratch + 31) & ~(uintptr_t)31), *Q = T + hp * wp * 8;
    uint32_t rel[DW_MAX_TAPS];
    uint8_t cell_ky[DW_MAX_TAPS], cell_kx[DW_MAX_TAPS], ky[DW_MAX_TAPS], kx[DW_MAX_TAPS];
    dw_taps_init(g, q, rel, cell_ky, cell_kx);
    const uint32_t n = dw_channel_taps(g, q, f, rel, cell_ky, cell_kx, 0, ky, kx);   /* the same in every channel */
    uint32_t toff[DW_MAX_TAPS];
    for (uint32_t e = 0; e < n; e++) toff[e] = (uint32_t)((ky[e] * wp + kx[e]) * 8);
    const float *xend = x + batch * C * in_plane;
    /* stride 1, 3 columns a window row (the split input is then the padded
     * plane, so the taps' column order is the window's, row by row) */
    const int rows3 = sh == 1 && sw == 1 && g->kw == 3;
    float wt[DW_MAX_TAPS * 8] __attribute__((aligned(32)));
    const __m256 zero = _mm256_setzero_ps();
    for (size_t c0 = 0; c0 < C; c0 += 8) {
        const size_t nc = C - c0 < 8 ? C - c0 : 8;
        float b8[8];
        for (size_t l = 0; l < 8; l++) {
            b8[l] = bias && l < nc ? bias[c0 + l] : 0.0f;
            for (uint32_t e = 0; e < n; e++) wt[8 * e + l] = l < nc ? f->w[f->ptr[c0 + l] + e] : 0.0f;
        }
        const __m256 b = _mm256_loadu_ps(b8);
        for (size_t s = 0; s < batch; s++) {
            const float *xb = x + (s * C + c0) * in_plane;
            /* the padded input in cells: zeros around, each row's cells by
             * transposes of 8 columns (the last ones through a copy) */
            for (size_t iy = 0; iy < hp; iy++) {
                float *row = T + iy * wp * 8;
                if (iy < g->ph || iy >= g->ph + H) {
                    for (size_t ix = 0; ix < wp; ix++) _mm256_store_ps(row + 8 * ix, zero);
                    continue;
                }
                for (size_t ix = 0; ix < g->pw; ix++) {
                    _mm256_store_ps(row + 8 * ix, zero);
                    _mm256_store_ps(row + 8 * (wp - 1 - ix), zero);
                }
                const float *xr = xb + (iy - g->ph) * W;
                for (size_t ix = 0; ix < W; ix += 8) {
                    const size_t m = W - ix < 8 ? W - ix : 8;
                    __m256 r[8];
#pragma GCC unroll 8
                    for (size_t l = 0; l < 8; l++) {
                        if (l >= nc) r[l] = zero;
                        /* past the row: columns not stored below (a masked load only at the input's end:
                           one costs several plain ones on Zen 3) */
                        else if (xr + l * in_plane + ix + 8 <= xend) r[l] = _mm256_loadu_ps(xr + l * in_plane + ix);
                        else r[l] = _mm256_maskload_ps(xr + l * in_plane + ix, dcz_mask8__avx2((uint32_t)m));
                    }
                    transpose8__avx2(r);
                    for (size_t j = 0; j < m; j++) _mm256_store_ps(row + 8 * (g->pw + ix + j), r[j]);
                }
            }
            float *yb = y + (s * C + c0) * out_plane;
            for (size_t oy = 0; oy < oh; oy++) {
                const float *tr = T + oy * sh * wp * 8;
                size_t ox = 0;
                if (rows3) {
                    for (; ox + 6 <= ow; ox += 6) dw_lanes_cells3__avx2(6, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox);
                    switch (ow - ox) {
                    case 5: dw_lanes_cells3__avx2(5, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    case 4: dw_lanes_cells3__avx2(4, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    case 3: dw_lanes_cells3__avx2(3, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    case 2: dw_lanes_cells3__avx2(2, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    case 1: dw_lanes_cells3__avx2(1, tr + ox * 8, wp, g->kh, wt, b, act, Q + 8 * ox); break;
                    default: break;
                    }
                    ox = ow;
                }
                for (; ox + 4 <= ow; ox += 4) dw_lanes_cells__avx2(4, tr + ox * sw * 8, sw, wt, toff, n, b, act, Q + 8 * ox);
                switch (ow - ox) {
                case 3: dw_lanes_cells__avx2(3, tr + ox * sw * 8, sw, wt, toff, n, b, act, Q + 8 * ox); break;
                case 2: dw_lanes_cells__avx2(2, tr + ox * sw * 8, sw, wt, toff, n, b, act, Q + 8 * ox); break;
                case 1: dw_lanes_cells__avx2(1, tr + ox * sw * 8, sw, wt, toff, n, b, act, Q + 8 * ox); break;
                default: break;
                }
                /* the row's cells back into the channels' planes */
                float *yr = yb + oy * ow;
                for (ox = 0; ox < ow; ox += 8) {
                    const size_t m = ow - ox < 8 ? ow - ox : 8;
                    __m256 r[8];
#pragma GCC unroll 8
                    for (size_t j = 0; j < 8; j++) r[j] = j < m ? _mm256_load_ps(Q + 8 * (ox + j)) : zero;
                    transpose8__avx2(r);
                    /* whole stores but on a plane's last row: the lanes past a
                       row land on the next, stored after this one */
                    for (size_t l = 0; l < nc; l++) {
                        if (m == 8 || oy * ow + ox + 8 <= out_plane) _mm256_storeu_ps(yr + l * out_plane + ox, r[l]);
                        else _mm256_maskstore_ps(yr + l * out_plane + ox, dcz_mask8__avx2((uint32_t)m), r[l]);
                    }
                }
            }
        }
    }
}
#endif

#ifdef DCZ_X86
/* xs = the split input of sample x by isa's vector split; 0 (nothing
 * written) where isa has none for g */
static int split_vector(dcz_isa isa, const dcz_conv_geom *g, const split_geom *q, const float *x, float *xs)
{
    if (isa == DCZ_ISA_AVX512) return split__avx512(g, q, x, xs);
    if (isa == DCZ_ISA_AVX2) return split1__avx2(g, q, x, xs) || split2__avx2(g, q, x, xs);
    return 0;
}
#endif

static planes_fn planes_variant(dcz_isa isa)
{
    if (isa == DCZ_ISA_REF) return shift_planes_ref;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && __builtin_cpu_supports("avx512vl"))
        return shift_planes__avx512;
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2) && __builtin_cpu_supports("fma"))
        return shift_planes__avx2;
#endif
#ifdef DCZ_NEON
    if (isa == DCZ_ISA_NEON) return shift_planes__neon;
#endif
    return NULL;
}

static dcz_isa best(void)
{
    static const dcz_isa order[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2, DCZ_ISA_NEON };
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (planes_variant(order[i])) return order[i];
    return DCZ_ISA_REF;
}

const char *dcz_conv2d_shift_variant(void)
{
    switch (best()) {
    case DCZ_ISA_AVX512: return "avx512";
    case DCZ_ISA_AVX2: return "avx2";
    case DCZ_ISA_NEON: return "neon";
    default: return NULL;
    }
}

const char *dcz_conv2d_shift_depthwise(const dcz_conv_geom *g, const dcz_shift *f)
{
#ifdef DCZ_X86
    if (best() == DCZ_ISA_AVX512) {
        const int dw = dw_path(g, f);
        return dw == DW_PLANE ? "plane" : dw == DW_ROWS ? "rows" : NULL;
    }
    if (best() == DCZ_ISA_AVX2) return dw_lanes_fit(g, f) ? "lanes" : dw_rows_avx2(g, f) ? "rows" : NULL;
#endif
    (void)g;
    (void)f;
    return NULL;
}

/* Whether isa's kernel adds a residual as it stores the sums: the AVX-512
 * map, not the depthwise kernels. */
static int res_in_store(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f)
{
#ifdef DCZ_X86
    return isa == DCZ_ISA_AVX512 && dw_path(g, f) == DW_NONE;
#else
    (void)isa; (void)g; (void)f;
    return 0;
#endif
}

/* y (n) = src, or src + res; res may be y, each cell read before it is
 * written */
static void copy_out(dcz_isa isa, const float *src, const float *res, size_t n, float *y)
{
    if (!res) memcpy(y, src, n * sizeof *y);
    else if (isa == DCZ_ISA_REF) dcz_add_ref(src, res, n, y);
    else dcz_add(src, res, n, NULL, y);
}

/* The convolution on isa's planes, act (op 0: none) applied as the output
 * is written; with a residual res (or NULL), act(conv + res): the ADD
 * after the convolution, so the bits of the two run apart (a sum of two
 * floats is the same in either order, but for which NaN a NaN plus a NaN
 * keeps, which no kernel of the ADD fixes either). The AVX-512 map adds res
 * as it stores the sums (res_in_store); elsewhere the generic path adds it
 * as it copies the planes out (AVX2's map stores whole vectors, whose lanes
 * past the kept ones would overwrite res where it is y; the depthwise
 * kernels write y as they go). The loader fuses an ADD only where the
 * stores take it (dcz_conv2d_shift_res_fuses). */
static int shift_run(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                     size_t batch, const dcz_act *act, const float *res, float *scratch, float *y)
{
    const planes_fn planes = planes_variant(isa);
    if (!planes) return 0;
    const split_geom q = split_geom_of(g, g->in_c, 1);
    float *xs = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63), *t = planes_at(xs, &q);
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w;
    const size_t out_plane = (size_t)g->out_h * g->out_w;
#ifdef DCZ_X86
    const int vec = isa == DCZ_ISA_AVX512;
    const int apart = res && !res_in_store(isa, g, f);   /* the other paths give way to the generic one */
    if (vec && !apart) {   /* depthwise: straight from the input */
        const int dw = dw_path(g, f);
        if (dw == DW_PLANE) dw_plane__avx512(g, &q, f, bias, x, batch, act, y);
        if (dw == DW_ROWS) dw_rows_run__avx512(g, &q, f, bias, x, batch, act, y);
        if (dw != DW_NONE) return 1;
    }
    if (isa == DCZ_ISA_AVX2 && !apart && dw_lanes_fit(g, f)) {
        dw_lanes_run__avx2(g, &q, f, bias, x, batch, act, scratch, y);
        return 1;
    }
    if (isa == DCZ_ISA_AVX2 && !apart && dw_rows_avx2(g, f)) {
        dw_rows_run__avx2(g, &q, f, bias, x, batch, act, y);
        return 1;
    }
    /* small planes at stride 1 split a vector at a time */
    remap rs;
    const int small_split = vec && g->sh == 1 && g->sw == 1 && (g->ph || g->pw) &&
                            remap_init(&rs, g, q.wq, q.plane, (size_t)g->in_h * g->in_w, q.hq);
#endif
    for (size_t b = 0; b < batch; b++) {
        float *yb = y + b * g->out_c * out_plane;
        const float *rb = res ? res + b * g->out_c * out_plane : NULL;
#ifdef DCZ_X86
        if (small_split) {
            remap_run__avx512(&rs, g->in_c, x + b * in_sample, (size_t)g->in_h * g->in_w, xs, q.plane);
            memset(xs + g->in_c * q.plane, 0, (q.floats - g->in_c * q.plane) * sizeof *xs);
        } else if (!split_vector(isa, g, &q, x + b * in_sample, xs))
#endif
            split(g, &q, x + b * in_sample, xs);
#ifdef DCZ_X86
        if ((vec || isa == DCZ_ISA_AVX2) && !apart) {   /* the sums straight into the output */
            tile_out om = { .act = act, .y = yb, .res = rb, .plane = out_plane, .out_c = g->out_c,
                            .out_w = g->out_w, .wq = (uint32_t)q.wq, .cells = (size_t)g->out_h * q.wq };
            planes(f, bias, g->out_c, q.out16, om.cells, xs, t, &om);
            continue;
        }
#endif
        planes(f, bias, g->out_c, q.out16, (size_t)g->out_h * q.wq, xs, t, NULL);
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            /* the plane in one copy where no columns are dropped */
            const uint32_t rows = q.wq == g->out_w ? 1 : g->out_h, n = q.wq == g->out_w ? out_plane : g->out_w;
            for (uint32_t oy = 0; oy < rows; oy++) {
                const size_t at = oc * out_plane + (size_t)oy * g->out_w;
                copy_out(isa, t + oc * q.out16 + oy * q.wq, rb ? rb + at : NULL, n, yb + at);
            }
        }
        dcz_act_apply(act, yb, g->out_c * out_plane);
    }
    return 1;
}

int dcz_conv2d_shift_res_fuses(const dcz_conv_geom *g, const dcz_shift *f)
{
    return res_in_store(best(), g, f);
}

int dcz_conv2d_shift_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                         const float *x, size_t batch, float *scratch, float *y)
{
    const dcz_act none = { 0, 0.0f, 0.0f };
    return shift_run(isa, g, f, bias, x, batch, &none, NULL, scratch, y);
}

int dcz_conv2d_shift_act_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                             const float *x, size_t batch, const dcz_act *act, const float *res, float *scratch,
                             float *y)
{
    return shift_run(isa, g, f, bias, x, batch, act, res, scratch, y);
}

void dcz_conv2d_shift(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                      size_t batch, int ref, float *scratch, float *y)
{
    dcz_conv2d_shift_isa(ref ? DCZ_ISA_REF : best(), g, f, bias, x, batch, scratch, y);
}

void dcz_conv2d_shift_act(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                          size_t batch, const dcz_act *act, const float *res, float *scratch, float *y)
{
    shift_run(best(), g, f, bias, x, batch, act, res, scratch, y);
}

/* ---- the integer shift form ------------------------------------------------
 * The 8-bit schemes' convolutions the same way on integers, four input
 * channels at a time: the split input holds, in each 32-bit cell, the
 * activations of four consecutive channels ("a quad") at one position, each
 * as a byte x + 128 (0 to 255; the padding, and the channels past in_c,
 * 128: zero); a weight of the form ("a quad tap") holds the four channels'
 * weights at one kernel offset as bytes (0 where nothing is stored). One
 * vpdpbusd per vector of 16 cells and quad tap adds the four products of
 * each cell to its 32-bit sum; -128 times the sum of the channel's weights,
 * the sums' starting value, takes the +128 back out. The sums wrap modulo
 * 2^32 on their way, and end exact: the loader bounds every output's sum
 * of products within 32 bits (model.h). qshift_planes_ref computes the same
 * sums in 64 bits, products of the activations themselves.
 *
 * Blocks. As the float form, the integer one holds an ungrouped layer's
 * quad taps by blocks of two output channels where that shares loads
 * (qshift_pick_block: the pairs' taps fewer than 0.9 times those of their
 * channels apart): a tap of the block is the union of the two channels'
 * (quad, window cell), each vector loaded once for two vpdpbusd, a zero
 * quad where a channel stores none. The kernel is bound by its loads (most
 * cross a cache line; about 2 cycles each on Zen 4, a vpdpbusd 1), so the
 * pairs pay: int8 at batch 1, one core of an AMD EPYC, the convolutions of
 * the ResNet-style preset 84 -> 73 us, of the conv-heavy CNN 172 -> 134,
 * of MobileNetV2-style 170 -> 157.
 *
 * Column quads. A layer of one input channel at column stride 1 (a
 * network's first, on a grey image) would fill one byte of four: its quads
 * are four neighbouring columns instead. Byte j of cell i of the split is
 * then the one channel's byte at cell i + j, and a quad tap holds the
 * weights of kernel columns kx .. kx + 3 of one row, at kx's offset: a
 * 5 x 5 window is 10 quad taps, not 25, a 3 x 3 one 3, not 9. The split
 * is the usual one, its cells then widened in place (colquads); byte j of
 * a tap past the window's last column is a 0 weight, whatever it reads. */

/* Depthwise by byte permutes. A depthwise convolution (one input and one
 * output channel a group) fills one byte of each channel quad above, so
 * its vpdpbusd do a quarter of their work, and the split gives every
 * input a cell of its own: int8 ran MobileNetV2-style's depthwise layers
 * no faster than float. The form also holds such a layer, where it fits,
 * another way. Each channel's plane is copied once as bytes x + 128,
 * padded, PH x PW (the extent its windows read: (out_h - 1) sh + kh rows
 * of (out_w - 1) sw + kw). An output vector, 16 consecutive cells of the
 * output plane (across its rows), reads its inputs from the 128 bytes at
 * the cell its first lane's window starts at: two loads. For each window
 * row and each four columns of it, a byte permute of those 128 bytes
 * (vpermt2b) gathers every lane's four inputs into its 32-bit cell, and
 * one vpdpbusd adds their products with the four weights: 3 permutes and
 * 3 vpdpbusd for 16 outputs of a 3 x 3 window. The permute's indices depend
 * on the first lane's column alone; vectors start at the columns that are
 * multiples of d = gcd(16, out_w), so out_w / d patterns serve the whole
 * plane, made by dcz_qshift_build. It takes a layer where every pattern's
 * inputs lie within 128 bytes (3 x 3 windows over planes up to 28 x 28 at
 * stride 1, 14 x 14 at stride 2). Bytes past a window row's last column
 * carry weight 0. The sums are those of the form above (corr included),
 * requantized in registers as requant_planes__vnni does; the references
 * are the same (qshift_planes_ref, dcz_qconv2d_direct_ref). */
#define QDW_MAX_TAPS 16
#define QDW_MAX_PATTERNS 32
#define QDW_WINDOW 128

typedef struct qdw_shape {
    uint32_t PH, PW;            /* the padded plane */
    uint32_t nq, taps;          /* quads of a window row; kh nq */
    uint32_t dshift, patterns;  /* d = 2^dshift; out_w / d */
} qdw_shape;

/* s = the shape of g, a geometry the form takes (qdw_shape_of) */
static void qdw_measure(const dcz_conv_geom *g, qdw_shape *s)
{
    s->nq = (g->kw + 3) / 4;
    s->taps = g->kh * s->nq;
    s->PW = (g->out_w - 1) * g->sw + g->kw;
    s->PH = (g->out_h - 1) * g->sh + g->kh;
    s->dshift = 0;
    while (s->dshift < 4 && g->out_w % (2u << s->dshift) == 0) s->dshift++;
    s->patterns = g->out_w >> s->dshift;
}

/* s = g's shape in the depthwise form; 0 where the form does not take g */
static int qdw_shape_of(const dcz_conv_geom *g, qdw_shape *s)
{
    if (g->in_c == 0 || dcz_conv_groups(g) != g->in_c || g->out_c != g->in_c || g->out_h == 0 || g->out_w == 0 ||
        g->kw > 8 || g->kh > QDW_WINDOW || g->out_w > 16 * QDW_MAX_PATTERNS ||
        (uint64_t)(g->out_w - 1) * g->sw + g->kw >= QDW_WINDOW ||
        ((uint64_t)(g->out_h - 1) * g->sh + g->kh) * QDW_WINDOW > UINT32_MAX / 2)
        return 0;
    qdw_measure(g, s);
    const uint64_t PW = s->PW;
    if (s->taps > QDW_MAX_TAPS || s->patterns > QDW_MAX_PATTERNS) return 0;
    /* the last byte lane i reads: window row kh - 1, column kw - 1 */
    for (uint32_t p = 0; p < s->patterns; p++)
        for (uint32_t i = 0, ox0 = p << s->dshift; i < 16; i++) {
            const uint64_t dy = (ox0 + i) / g->out_w, ox = (ox0 + i) % g->out_w;
            if ((dy * g->sh + g->kh - 1) * PW + ox * g->sw + g->kw - 1 >= (uint64_t)ox0 * g->sw + QDW_WINDOW) return 0;
        }
    return 1;
}

/* The padded planes are made 64 bytes at a time, each vector of them by
 * one byte permute (vpermt2b) of the 64 input cells from its first one:
 * an input cell's place in the padded plane grows with it, so the cells
 * a vector takes lie within 64 of each other, unless the plane leaves out
 * input columns between them (a strided window that never reaches the
 * last ones). Byte o of the vector is the low byte of input cell first +
 * idx[o] / 2 where bit o of inside is set, else 128; load: the cells from
 * first that lie in the input plane. The same for every channel: made
 * with the form. */
typedef struct dcz_qdw_vmap {
    uint8_t idx[64];
    uint64_t inside, load;
    uint32_t first;
} dcz_qdw_vmap;

static size_t qdw_vmaps(const qdw_shape *s) { return ((size_t)s->PH * s->PW + 63) / 64; }

static uint64_t qdw_bytes(const dcz_conv_geom *g)
{
    qdw_shape s;
    if (!qdw_shape_of(g, &s)) return 0;
    /* the maps aligned to 8 bytes after the rest */
    return ((uint64_t)g->out_c * sizeof(int32_t) + (uint64_t)s.patterns * 64) * s.taps + 8 +
           qdw_vmaps(&s) * sizeof(dcz_qdw_vmap);
}

/* m = the maps of g's padded plane (qdw_vmaps of them); 0 where some
 * vector's cells do not lie within 64 */
static int qdw_vmap_build(const dcz_conv_geom *g, const qdw_shape *s, dcz_qdw_vmap *m)
{
    const uint64_t plane = (uint64_t)s->PH * s->PW, in_plane = (uint64_t)g->in_h * g->in_w;
    memset(m, 0, qdw_vmaps(s) * sizeof *m);
    for (size_t v = 0; v < qdw_vmaps(s); v++, m++) {
        int have = 0;
        for (uint32_t o = 0; o < 64 && 64 * v + o < plane; o++) {
            const int64_t iy = (int64_t)((64 * v + o) / s->PW) - g->ph, ix = (int64_t)((64 * v + o) % s->PW) - g->pw;
            if (iy < 0 || iy >= (int64_t)g->in_h || ix < 0 || ix >= (int64_t)g->in_w) continue;
            const uint64_t cell = (uint64_t)iy * g->in_w + (uint64_t)ix;
            if (!have) m->first = (uint32_t)cell, have = 1;
            if (cell - m->first >= 64) return 0;
            m->idx[o] = (uint8_t)(2 * (cell - m->first));
            m->inside |= (uint64_t)1 << o;
        }
        const uint64_t n = have ? in_plane - m->first : 0;
        m->load = n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
    }
    return 1;
}

/* Fill the depthwise part of the form at mem (qdw_bytes) from s */
static void qdw_build(const dcz_conv_geom *g, const qdw_shape *d, const dcz_qsparse *s, void *mem, dcz_qshift *f)
{
    int32_t *dw = mem;
    uint8_t *idx = (uint8_t *)(dw + (size_t)g->out_c * d->taps);
    memset(dw, 0, (size_t)g->out_c * d->taps * sizeof *dw);
    for (uint32_t oc = 0; oc < g->out_c; oc++) {
        uint32_t e, end, col;
        for (dcz_steps_row(s->row_ptr, s->step, g->out_c, oc, &e, &end, &col); e < end;
             e++, dcz_steps_seek(s->step, &e, end, col, &col)) {
            const uint32_t ky = col / g->kw, kx = col % g->kw;
            uint32_t *q = (uint32_t *)&dw[((size_t)oc * g->kh + ky) * d->nq + kx / 4];
            *q |= (uint32_t)(uint8_t)(int8_t)dcz_qsparse_weight(s, oc, e) << (8 * (kx % 4));
        }
    }
    for (uint32_t p = 0; p < d->patterns; p++) {
        const uint32_t ox0 = p << d->dshift;
        for (uint32_t t = 0; t < d->taps; t++) {
            uint8_t *v = idx + ((size_t)p * d->taps + t) * 64;
            const uint32_t ky = t / d->nq, kq = 4 * (t % d->nq);
            for (uint32_t i = 0; i < 16; i++) {
                const uint32_t dy = (ox0 + i) / g->out_w, ox = (ox0 + i) % g->out_w;
                for (uint32_t b = 0; b < 4; b++) {
                    const uint32_t kx = kq + b < g->kw ? kq + b : kq;   /* past the row: weight 0 */
                    v[4 * i + b] = (uint8_t)((dy * g->sh + ky) * d->PW + ox * g->sw + kx - ox0 * g->sw);
                }
            }
        }
    }
    f->dw = dw;
    f->dwidx = idx;
    uint8_t *end = idx + (size_t)d->patterns * d->taps * 64;
    dcz_qdw_vmap *maps = (dcz_qdw_vmap *)(void *)(end + (-(uintptr_t)end & 7));
    f->dwmap = qdw_vmap_build(g, d, maps) ? maps : NULL;
}

/* the AMX tile form's bytes where it is built (amx): ungrouped layers,
 * column quads included (kernels_amx.c, the columns form) */
static uint64_t qamx_bytes(const dcz_conv_geom *g, int amx) { return amx ? dcz_qamx_bytes(g) : 0; }

uint64_t dcz_qshift_bytes(const dcz_conv_geom *g, uint64_t nnz, int amx)
{
    return ((uint64_t)g->out_c * 2 + 1) * sizeof(uint32_t) +
           nnz * (sizeof(uint32_t) + DCZ_QSHIFT_MAX_OB * sizeof(int32_t)) + qdw_bytes(g) + qamx_bytes(g, amx);
}

uint64_t dcz_qshift_scratch_floats(const dcz_conv_geom *g)
{
    uint64_t cells = scratch_cells(g, (g->in_c + 3) / 4, 0);
    if (cells != UINT64_MAX && g->kh * g->kw <= DCZ_QSHIFT_MAX_WINDOW) {   /* and the tiles' copies */
        const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
        uint32_t toff[DCZ_QSHIFT_MAX_WINDOW];
        tap_offsets(g, &q, toff);
        const uint64_t copies = dcz_qamx_copy_cells(g, toff, q.out16);
        if (copies) cells += copies + 16;   /* at a 64-byte boundary */
    }
    qdw_shape s;
    if (!qdw_shape_of(g, &s)) return cells;
    /* the byte planes and the window past the last */
    const uint64_t planes = ((uint64_t)g->in_c * s.PH * s.PW + QDW_WINDOW + 3) / 4;
    return planes > cells ? planes : cells;
}

/* Whether g's integer quads are column quads (above). */
static int col_quads(const dcz_conv_geom *g)
{
    return g->in_c == 1 && g->sw == 1 && g->kw > 1;
}

int dcz_qshift_col_quads(const dcz_conv_geom *g) { return col_quads(g); }

/* A block's cursor on one channel's row of weights: its next stored
 * weight e (e == end past the row) at column col (dcz_steps_row) */
typedef struct qrow { uint32_t e, end, col, ic0; } qrow;

/* the quad of input channels of the row's next stored weight, UINT32_MAX
 * past the row */
static uint32_t qrow_quad(uint32_t ksize, const qrow *r)
{
    return r->e < r->end ? (r->ic0 + r->col / ksize) / 4 : UINT32_MAX;
}

/* The quad taps of output channels oc0 .. oc0 + ob - 1 (a block; those past
 * out_c store nothing): for each quad of input channels in order, each
 * window cell where a channel of the block stores a weight, in cell order,
 * its offset in off[n], the ob channels' quads of weights in w[n ob ..];
 * count only where off is NULL. sum[o]: the sum of channel o's weights.
 * Returns the taps then made (n and on), UINT32_MAX where a weight passes
 * a byte. */
static uint32_t qblock_taps(const dcz_conv_geom *g, const split_geom *q, const dcz_qsparse *s, uint32_t oc0,
                            uint32_t ob, uint32_t n, uint32_t *off, int32_t *w, int64_t *sum)
{
    const uint32_t ksize = g->kh * g->kw;
    const int cq = col_quads(g);
    uint32_t packed[DCZ_QSHIFT_MAX_OB][DCZ_QSHIFT_MAX_WINDOW];
    uint8_t used[DCZ_QSHIFT_MAX_WINDOW] = { 0 };
    qrow row[DCZ_QSHIFT_MAX_OB];
    for (uint32_t o = 0; o < ob; o++) {
        dcz_steps_row(s->row_ptr, s->step, g->out_c, oc0 + o, &row[o].e, &row[o].end, &row[o].col);
        row[o].ic0 = oc0 + o < g->out_c ? dcz_conv_in0(g, oc0 + o) : 0;
        memset(packed[o], 0, ksize * sizeof packed[o][0]);
        sum[o] = 0;
    }
    for (;;) {
        uint32_t quad = UINT32_MAX;
        for (uint32_t o = 0; o < ob; o++) {
            const uint32_t qo = qrow_quad(ksize, &row[o]);
            if (qo < quad) quad = qo;
        }
        if (quad == UINT32_MAX) return n;
        /* a row's entries come in column order, so a quad's are consecutive */
        for (uint32_t o = 0; o < ob; o++)
            while (qrow_quad(ksize, &row[o]) == quad) {
                qrow *r = &row[o];
                const int32_t v = dcz_qsparse_weight(s, oc0 + o, r->e);
                if (v < -128 || v > 127) return UINT32_MAX;
                /* the quad tap (its first window cell) and the weight's byte */
                const uint32_t c = r->ic0 + r->col / ksize;
                const uint32_t kx4 = cq ? r->col % ksize % g->kw % 4 : 0;   /* column quads: kx % 4 */
                const uint32_t cell = r->col % ksize - kx4, byte = cq ? kx4 : c % 4;
                packed[o][cell] |= (uint32_t)(uint8_t)(int8_t)v << (8 * byte);
                used[cell] = 1;
                sum[o] += v;
                r->e++;
                dcz_steps_seek(s->step, &r->e, r->end, r->col, &r->col);
            }
        for (uint32_t r = 0; r < ksize; r++) {
            if (!used[r]) continue;
            if (off) {
                off[n] = (uint32_t)(((uint64_t)quad * g->sh + r / g->kw % g->sh) * g->sw * q->plane +
                                    (uint64_t)(r % g->kw % g->sw) * q->plane + r / g->kw / g->sh * q->wq +
                                    r % g->kw / g->sw);
                for (uint32_t o = 0; o < ob; o++) w[(size_t)n * ob + o] = (int32_t)packed[o][r];
            }
            for (uint32_t o = 0; o < ob; o++) packed[o][r] = 0;
            used[r] = 0;
            n++;
        }
    }
}

/* The block of the integer form: 2 where blocks of two channels share
 * enough of their loads (an ungrouped convolution whose pairs' taps are
 * fewer than 0.9 times those of their channels apart), else 1 */
static uint32_t qshift_pick_block(const dcz_conv_geom *g, const split_geom *q, const dcz_qsparse *s)
{
    if (dcz_conv_groups(g) != 1 || g->out_c < 2) return 1;
    uint64_t n1 = 0, n2 = 0;
    int64_t sum[DCZ_QSHIFT_MAX_OB];
    for (uint32_t oc = 0; oc < g->out_c; oc++) {
        const uint32_t t = qblock_taps(g, q, s, oc, 1, 0, NULL, NULL, sum);
        if (t == UINT32_MAX) return 1;
        n1 += t;
    }
    for (uint32_t oc = 0; oc < g->out_c; oc += 2) n2 += qblock_taps(g, q, s, oc, 2, 0, NULL, NULL, sum);
    return n2 * 10 < n1 * 9 ? 2 : 1;
}

int dcz_qshift_build(const dcz_conv_geom *g, const dcz_qsparse *s, int amx, void *mem, dcz_qshift *f)
{
    if (g->kh * g->kw > DCZ_QSHIFT_MAX_WINDOW) return 0;
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    uint32_t nnz = 0;
    for (uint32_t e = 0; e < s->entries; e++) nnz += s->step[e] != DCZ_STEP_FILLER;
    const uint32_t ob = qshift_pick_block(g, &q, s), blocks = (g->out_c + ob - 1) / ob;
    uint32_t *ptr = mem;
    int32_t *corr = (int32_t *)(ptr + g->out_c + 1);
    uint32_t *off = (uint32_t *)(corr + g->out_c);
    /* taps: at most one a stored weight */
    int32_t *w = (int32_t *)(off + nnz);
    uint32_t n = 0;
    for (uint32_t k = 0; k < blocks; k++) {
        ptr[k] = n;
        int64_t sum[DCZ_QSHIFT_MAX_OB];
        n = qblock_taps(g, &q, s, k * ob, ob, n, off, w, sum);
        if (n == UINT32_MAX) return 0;
        for (uint32_t o = 0; o < ob && k * ob + o < g->out_c; o++)
            corr[k * ob + o] = (int32_t)(uint32_t)((uint64_t)(-128 * sum[o]) & 0xFFFFFFFFu);
    }
    ptr[blocks] = n;
    f->ob = ob;
    f->ptr = ptr;
    f->off = off;
    f->w = w;
    f->corr = corr;
    f->dw = NULL;
    f->dwidx = NULL;
    f->dwmap = NULL;
    qdw_shape d;
    uint8_t *rest = (uint8_t *)(w + (size_t)nnz * DCZ_QSHIFT_MAX_OB);
    if (qdw_shape_of(g, &d)) qdw_build(g, &d, s, rest, f);
    /* the AMX tiles, run where they take less time than the quad taps */
    f->amx = NULL;
    f->amx_pick = 0;
    if (qamx_bytes(g, amx)) {
        dcz_qamx_build(g, s, rest + qdw_bytes(g), f);
        f->amx_pick = dcz_qamx_cost(g, q.out16) < (double)(q.out16 / 16) * (n + blocks * DCZ_QSHIFT_BLOCK_COST);
    }
    return 1;
}

/* xs = the integer split input of sample x: byte c % 4 of the cells of quad c / 4;
 * the phases no tap reads (py >= kh, px >= kw: a 1x1 at stride 2 reads one
 * of four) keep the padding, in every variant below */
static void qsplit(const dcz_conv_geom *g, const split_geom *q, const dcz_q *x, uint8_t *xs)
{
    const size_t sh = g->sh, sw = g->sw, plane = q->plane;
    memset(xs, 0x80, q->floats * 4);
    size_t lo[DCZ_MAX_WINDOW], hi[DCZ_MAX_WINDOW];
    for (size_t px = 0; px < sw; px++) {
        lo[px] = px < g->pw ? (g->pw - px + sw - 1) / sw : 0;
        hi[px] = (g->in_w + g->pw - px + sw - 1) / sw;
    }
    for (uint32_t c = 0; c < g->in_c; c++)
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            const size_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;   /* a phase no tap reads keeps the padding */
            const dcz_q *xr = x + ((size_t)c * g->in_h + iy) * g->in_w;
            uint8_t *row = xs + 4 * ((c / 4 * sh + r % sh) * sw * plane + r / sh * q->wq) + c % 4;
            for (size_t px = 0; px < sw && px < g->kw; px++, row += 4 * plane)
                for (size_t cell = lo[px]; cell < hi[px]; cell++)
                    row[4 * cell] = (uint8_t)(xr[cell * sw + px - g->pw] + 128);
        }
}

/* The split's n cells (one channel in byte 0 of each) widened in place to
 * column quads: byte j of cell i from byte 0 of cell i + j (0x80, zero,
 * past the last). Byte 0 never changes, so cells later in the pass still
 * read their own. */
static void colquads(uint32_t *cells, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t v = cells[i] & 0xFF;
        for (size_t j = 1; j < 4; j++) v |= (i + j < n ? cells[i + j] & 0xFF : 0x80u) << (8 * j);
        cells[i] = v;
    }
}

#ifdef DCZ_X86
#define VNNI_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
/* colquads sixteen cells at a time: the cells at i, i + 1, i + 2 and i + 3
 * loaded (each vector before this step's store, whose byte 0s are the
 * same), their low bytes shifted into place */
VNNI_TGT static void colquads__avx512(uint32_t *cells, size_t n)
{
    const __m512i low = _mm512_set1_epi32(0xFF), none = _mm512_set1_epi32(0x80);
    for (size_t i = 0; i < n; i += 16) {
        __m512i v = _mm512_setzero_si512();
        for (size_t j = 0; j < 4; j++) {
            const size_t left = n - i > j ? n - i - j : 0;
            const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
            const __m512i b = _mm512_and_si512(_mm512_mask_loadu_epi32(none, m, cells + i + j), low);
            v = _mm512_or_si512(v, _mm512_slli_epi32(b, (unsigned)(8 * j)));
        }
        const size_t left = n - i;
        _mm512_mask_storeu_epi32(cells + i, left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1), v);
    }
}
/* qsplit at column strides 1 and 2 (any row stride): sixteen cells of a
 * row phase at once, the quad's four channel rows widened, offset by 128
 * and merged byte by byte; at stride 2 the sixteen inputs of a phase come
 * from 32 consecutive ones by a permute. The phases no tap reads (py >=
 * kh, px >= kw) keep the padding. qsplit2__vbmi (column stride 2 on a CPU
 * with VBMI) merges the four rows by byte permutes instead: the low
 * bytes of the even words of two rows paired by vpermt2b, the pairs of the
 * two pairs of rows made cells by vpermt2w (a word the load masks out is
 * 0, whose byte becomes the padding's 128 by the same exclusive or of the
 * top bit as the others): int8 ResNet-style's 3x3 stride-2 convolutions
 * split in half the time. */
static const uint8_t qsplit_pair2[64] = {
    0, 64, 4, 68, 8, 72, 12, 76, 16, 80, 20, 84, 24, 88, 28, 92,
    32, 96, 36, 100, 40, 104, 44, 108, 48, 112, 52, 116, 56, 120, 60, 124,
};
static const uint16_t qsplit_cells2[32] = {
    0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
};
VNNI_TGT static void qsplit__vnni(const dcz_conv_geom *g, const split_geom *q, const dcz_q *x, uint8_t *xs)
{
    memset(xs, 0x80, q->floats * 4);
    int32_t *cells = (int32_t *)(void *)xs;
    const uint32_t sh = g->sh, sw = g->sw;
    const __m512i off = _mm512_set1_epi32(128), none = _mm512_set1_epi32(0x80);
    const __m512i even = _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32,
                                          30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (uint32_t c0 = 0; c0 < g->in_c; c0 += 4)
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            const uint32_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;
            for (uint32_t px = 0; px < sw && px < g->kw; px++) {
                /* cells lo .. hi - 1 of phase px hold input columns cell sw + px - pw */
                const uint32_t lo = px < g->pw ? (g->pw - px + sw - 1) / sw : 0;
                const uint32_t hi = (g->in_w + g->pw - px + sw - 1) / sw;
                int32_t *row = cells + ((c0 / 4 * sh + r % sh) * sw + px) * q->plane + r / sh * q->wq;
                for (uint32_t cell = lo; cell < hi; cell += 16) {
                    const uint32_t n = hi - cell < 16 ? hi - cell : 16, src = cell * sw + px - g->pw;
                    const uint32_t words = sw * (n - 1) + 1;   /* the inputs the n cells span */
                    const __mmask32 kw = words >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << words) - 1);
                    __m512i merged = _mm512_setzero_si512();
                    for (uint32_t j = 0; j < 4; j++) {
                        __m512i v = none;
                        if (c0 + j < g->in_c) {
                            const dcz_q *xr = x + ((size_t)(c0 + j) * g->in_h + iy) * g->in_w + src;
                            __m512i w = _mm512_maskz_loadu_epi16(kw, xr);
                            if (sw == 2) w = _mm512_permutexvar_epi16(even, w);
                            v = _mm512_add_epi32(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(w)), off);
                        }
                        merged = _mm512_or_si512(merged, _mm512_slli_epi32(v, 8 * j));
                    }
                    _mm512_mask_storeu_epi32(row + cell, (__mmask16)((1u << n) - 1), merged);
                }
            }
        }
}

/* qsplit__vnni at column stride 2 on a CPU with VBMI */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) static void
qsplit2__vbmi(const dcz_conv_geom *g, const split_geom *q, const dcz_q *x, uint8_t *xs)
{
    memset(xs, 0x80, q->floats * 4);
    int32_t *cells = (int32_t *)(void *)xs;
    const uint32_t sh = g->sh;
    const __m512i top = _mm512_set1_epi8((char)0x80), pair = _mm512_loadu_si512((const void *)qsplit_pair2),
                  merge = _mm512_loadu_si512((const void *)qsplit_cells2);
    for (uint32_t c0 = 0; c0 < g->in_c; c0 += 4)
        for (uint32_t iy = 0; iy < g->in_h; iy++) {
            const uint32_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;
            for (uint32_t px = 0; px < 2 && px < g->kw; px++) {
                const uint32_t lo = px < g->pw ? (g->pw - px + 1) / 2 : 0, hi = (g->in_w + g->pw - px + 1) / 2;
                int32_t *row = cells + ((c0 / 4 * sh + r % sh) * 2 + px) * q->plane + r / sh * q->wq;
                for (uint32_t cell = lo; cell < hi; cell += 16) {
                    const uint32_t n = hi - cell < 16 ? hi - cell : 16, src = cell * 2 + px - g->pw;
                    const __mmask32 kw = n == 16 ? 0x7FFFFFFFu : (__mmask32)((1u << (2 * n - 1)) - 1);
                    __m512i v[4];
                    for (uint32_t j = 0; j < 4; j++)
                        v[j] = c0 + j < g->in_c
                                   ? _mm512_maskz_loadu_epi16(kw, x + ((size_t)(c0 + j) * g->in_h + iy) * g->in_w + src)
                                   : _mm512_setzero_si512();
                    const __m512i ab = _mm512_permutex2var_epi8(v[0], pair, v[1]);
                    const __m512i cd = _mm512_permutex2var_epi8(v[2], pair, v[3]);
                    _mm512_mask_storeu_epi32(row + cell, (__mmask16)((1u << n) - 1),
                                             _mm512_xor_si512(_mm512_permutex2var_epi16(ab, merge, cd), top));
                }
            }
        }
}

/* qsplit1__vbmi's permutes: pair's bytes 2 i and 2 i + 1 are the low bytes
 * of word i of two rows (vpermt2b); cells' words 2 i and 2 i + 1 are pair i
 * of each of two such vectors, for cells 0 .. 15 and then 16 .. 31 */
static const uint8_t qsplit_pair[64] = {
    0, 64, 2, 66, 4, 68, 6, 70, 8, 72, 10, 74, 12, 76, 14, 78,
    16, 80, 18, 82, 20, 84, 22, 86, 24, 88, 26, 90, 28, 92, 30, 94,
    32, 96, 34, 98, 36, 100, 38, 102, 40, 104, 42, 106, 44, 108, 46, 110,
    48, 112, 50, 114, 52, 116, 54, 118, 56, 120, 58, 122, 60, 124, 62, 126,
};
static const uint16_t qsplit_cells[64] = {
    0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
    16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
    24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63,
};

/* qsplit at column stride 1 with VBMI: 32 cells a step, the four channel
 * rows' low bytes paired by a byte permute (vpermt2b) of two rows at a
 * time, the pairs merged into cells by a word permute (vpermt2w), the
 * offset of 128 one exclusive or of the bytes' top bits */
#define VBMI_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))
VBMI_TGT static void qsplit1__vbmi(const dcz_conv_geom *g, const split_geom *q, const dcz_q *x, uint8_t *xs)
{
    int32_t *cells = (int32_t *)(void *)xs;
    const uint32_t sh = g->sh;
    /* without padding at row stride 1 the planes are the input's, each one
     * row: every cell is written, so only the margin past them is cleared */
    const int flat = g->ph == 0 && g->pw == 0 && sh == 1;
    const uint32_t rows = flat ? 1 : g->in_h, width = flat ? g->in_h * g->in_w : g->in_w;
    const size_t quads = (g->in_c + 3) / 4;
    if (flat) memset(cells + quads * q->plane, 0x80, (q->floats - quads * q->plane) * 4);
    else memset(xs, 0x80, q->floats * 4);
    const __m512i pair = _mm512_loadu_si512(qsplit_pair), lo16 = _mm512_loadu_si512(qsplit_cells),
                  hi16 = _mm512_loadu_si512(qsplit_cells + 32);
    const __m512i top = _mm512_set1_epi8((char)0x80);
    for (uint32_t c0 = 0; c0 < g->in_c; c0 += 4) {
        const dcz_q *xc[4];
        for (uint32_t j = 0; j < 4; j++) xc[j] = c0 + j < g->in_c ? x + (size_t)(c0 + j) * g->in_h * g->in_w : NULL;
        for (uint32_t iy = 0; iy < rows; iy++) {
            const uint32_t r = iy + g->ph;
            if (r % sh >= g->kh) continue;
            int32_t *row = cells + (c0 / 4 * sh + r % sh) * q->plane + r / sh * q->wq + g->pw;
            for (uint32_t ix = 0; ix < width; ix += 32) {
                const uint32_t n = width - ix < 32 ? width - ix : 32;
                const __mmask32 m = n == 32 ? 0xFFFFFFFFu : (__mmask32)((1u << n) - 1);
                __m512i v[4];
                for (uint32_t j = 0; j < 4; j++)
                    v[j] = xc[j] ? _mm512_maskz_loadu_epi16(m, xc[j] + (size_t)iy * width + ix) : _mm512_setzero_si512();
                const __m512i ab = _mm512_xor_si512(_mm512_permutex2var_epi8(v[0], pair, v[1]), top);
                const __m512i cd = _mm512_xor_si512(_mm512_permutex2var_epi8(v[2], pair, v[3]), top);
                _mm512_mask_storeu_epi32(row + ix, (__mmask16)m, _mm512_permutex2var_epi16(ab, lo16, cd));
                if (n > 16) _mm512_mask_storeu_epi32(row + ix + 16, (__mmask16)(m >> 16), _mm512_permutex2var_epi16(ab, hi16, cd));
            }
        }
    }
}


/* y row (n) = the requantization of bias + (t row + add modulo 2^32), 8
 * at a time: as dcz_requant8 (|bias + t| < 2^31: the signed 32 x 32 multiply; k <= 62:
 * the rounding half and an arithmetic shift, a floor) */
VNNI_TGT static void requant_row__vnni(const int32_t *t, int32_t add, int64_t bias, int32_t mult, unsigned k,
                                       int32_t qlo, int32_t qhi, uint32_t n, dcz_q *y)
{
    const __m256i c = _mm256_set1_epi32(add);
    const __m512i b = _mm512_set1_epi64(bias), m = _mm512_set1_epi64(mult);
    const __m512i half = _mm512_set1_epi64(k ? (int64_t)1 << (k - 1) : 0);
    const __m512i hi = _mm512_set1_epi64(qhi), lo = _mm512_set1_epi64(qlo);
    const __m128i count = _mm_cvtsi32_si128((int)k);
    for (uint32_t i = 0; i < n; i += 8) {
        const __mmask8 km = (__mmask8)(n - i >= 8 ? 0xFF : (1u << (n - i)) - 1);
        const __m256i tc = _mm256_add_epi32(_mm256_maskz_loadu_epi32(km, t + i), c);
        const __m512i a = _mm512_add_epi64(_mm512_cvtepi32_epi64(tc), b);
        __m512i v = _mm512_sra_epi64(_mm512_add_epi64(_mm512_mul_epi32(a, m), half), count);
        v = _mm512_min_epi64(_mm512_max_epi64(v, lo), hi);
        _mm_mask_storeu_epi16(y + i, km, _mm512_cvtepi64_epi16(v));
    }
}

/* The requantization of a's 16 lanes (bias added) as 32-bit lanes: the
 * even and odd lanes' products P in 64 bits; in mode 0 (k < 32) P plus
 * half shifted by k and clamped in 64 bits; in mode 1 (k = 32) the high
 * halves of P plus half taken, shifted by k - 32 and clamped in 32 bits
 * (floor(P / 2^k) = floor(floor(P / 2^32) / 2^(k - 32)), and |P| < 2^62
 * leaves that within 2^30); in mode 2 (k > 32) the high halves of P
 * themselves, gathered by one permute, plus half / 2^32 = 2^(k - 33) (the
 * half adds to the high half alone). The high halves save a shift and a
 * clamp of 64-bit lanes: int8 batch 1 (medians of three alternated runs)
 * MobileNetV2-style 268.6 -> 259.6 us, ResNet-style 102.6 -> 99.5,
 * conv-heavy CNN 172.4 -> 168.5. Mode 2 saves two instructions more. */
#define RQ_MODE(k) ((k) > 32 ? 2 : (k) == 32 ? 1 : 0)
typedef struct rq_consts { __m512i m, half, lo, hi; __m128i count; } rq_consts;

VNNI_TGT static inline __attribute__((always_inline)) rq_consts rq_setup(const int MODE, int32_t mult, unsigned k,
                                                                          int32_t qlo, int32_t qhi)
{
    rq_consts c;
    c.m = _mm512_set1_epi64(mult);
    c.half = MODE == 2 ? _mm512_set1_epi32(1 << (k - 33)) : _mm512_set1_epi64(k ? (int64_t)1 << (k - 1) : 0);
    c.hi = MODE ? _mm512_set1_epi32(qhi) : _mm512_set1_epi64(qhi);
    c.lo = MODE ? _mm512_set1_epi32(qlo) : _mm512_set1_epi64(qlo);
    c.count = _mm_cvtsi32_si128((int)(MODE ? k - 32 : k));
    return c;
}

/* modes 1 and 2: the requantized lanes before the clamp, in 32 bits */
VNNI_TGT static inline __attribute__((always_inline)) __m512i requant16_wide(const int MODE, __m512i a,
                                                                             const rq_consts *c)
{
    const __m512i m = c->m, half = c->half;
    if (MODE == 2) {
        const __m512i odd = _mm512_set_epi32(31, 15, 29, 13, 27, 11, 25, 9, 23, 7, 21, 5, 19, 3, 17, 1);
        const __m512i ev = _mm512_mul_epi32(a, m), od = _mm512_mul_epi32(_mm512_srli_epi64(a, 32), m);
        const __m512i r = _mm512_add_epi32(_mm512_permutex2var_epi32(ev, odd, od), half);
        return _mm512_sra_epi32(r, c->count);
    }
    const __m512i ev = _mm512_add_epi64(_mm512_mul_epi32(a, m), half);
    const __m512i od = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(a, 32), m), half);
    const __m512i r = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(ev, 32), od);
    return _mm512_sra_epi32(r, c->count);
}

VNNI_TGT static inline __attribute__((always_inline)) __m512i requant16(const int MODE, __m512i a, const rq_consts *c)
{
    const __m512i m = c->m, half = c->half, lo = c->lo, hi = c->hi;
    const __m128i count = c->count;
    if (MODE) return _mm512_min_epi32(_mm512_max_epi32(requant16_wide(MODE, a, c), lo), hi);
    __m512i ev = _mm512_add_epi64(_mm512_mul_epi32(a, m), half);
    __m512i od = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(a, 32), m), half);
    ev = _mm512_min_epi64(_mm512_max_epi64(_mm512_sra_epi64(ev, count), lo), hi);
    od = _mm512_min_epi64(_mm512_max_epi64(_mm512_sra_epi64(od, count), lo), hi);
    return _mm512_mask_blend_epi32((__mmask16)0xAAAA, ev, _mm512_slli_epi64(od, 32));
}

VNNI_TGT static inline __attribute__((always_inline)) void requant_vectors(const int MODE, const int32_t *t,
                                                                           const uint16_t *keep, size_t nv,
                                                                           int64_t bias, int32_t mult, unsigned k,
                                                                           int32_t qlo, int32_t qhi, size_t plane,
                                                                           dcz_q *y)
{
    const __m512i b = _mm512_set1_epi32((int32_t)(uint32_t)(uint64_t)bias);
    const rq_consts c = rq_setup(MODE, mult, k, qlo, qhi);
    const __m512i lo16 = _mm512_set1_epi16((int16_t)qlo), hi16 = _mm512_set1_epi16((int16_t)qhi);
    const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    size_t at = 0;
    for (size_t j = 0; j < nv; j++) {
        if (MODE && j + 1 < nv && (keep[j] & keep[j + 1]) == 0xFFFF && at + 32 <= plane) {
            /* two whole vectors: packed to 16 bits with saturation, then
             * clamped there (the same values: [qlo, qhi] lies within 16
             * bits), the 128-bit lanes put back in order; four
             * instructions for the two where each took four (two of them
             * vpmovdw's), on a CPU whose 512-bit work has two ports:
             * 1 x 1 16 -> 96 over 28 x 28, one core of a Xeon, 18.8 ->
             * 17.8 us */
            const __m512i r0 = requant16_wide(MODE, _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + 16 * j)), b), &c);
            const __m512i r1 = requant16_wide(MODE, _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + 16 * j + 16)), b), &c);
            const __m512i p = _mm512_permutexvar_epi64(order, _mm512_packs_epi32(r0, r1));
            _mm512_storeu_si512((void *)(y + at), _mm512_min_epi16(_mm512_max_epi16(p, lo16), hi16));
            at += 32;
            j++;
            continue;
        }
        __m512i a = _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + 16 * j)), b);
        if (keep[j] != 0xFFFF) a = _mm512_maskz_compress_epi32((__mmask16)keep[j], a);
        const __m256i r = _mm512_cvtepi32_epi16(requant16(MODE, a, &c));
        const unsigned n = (unsigned)__builtin_popcount(keep[j]);
        /* whole vectors inside the plane: the lanes past n are written
         * over by the next vector's */
        if (at + 16 <= plane) _mm256_storeu_si256((void *)(y + at), r);
        else _mm256_mask_storeu_epi16(y + at, (__mmask16)((1u << n) - 1), r);
        at += n;
    }
}

/* y (channels output planes of plane cells, one after the other) = the
 * requantization of bias + add + t (planes as computed, tstride cells
 * apart, nv vectors each; bias and add NULL for none; channel c's
 * multiplier and shift mult[c], shift[c]), 16 at a time: each vector's
 * lanes that keep[j] says are output cells, packed by a compress where some lane is
 * not one, and stored after those of the vectors before it, whole (the
 * next vector writes over the lanes past them) but at the plane's end.
 * |bias + t| < 2^31, so the bias is added in 32 bits (modulo 2^32: a
 * bias that also holds the corr the AMX tiles leave out); the even and
 * the odd lanes are then multiplied, rounded, shifted and clamped in 64 bits as
 * requant_row__vnni does (the same integers), and narrowed together. One
 * pass over a plane with the channel's constants made once, rather than a
 * call per row of 7 to 28 cells: int8 at batch 1, one core of an AMD EPYC,
 * dcz bench medians of three alternated runs, MobileNetV2-style 307 -> 269
 * us, ResNet-style 110 -> 102, conv-heavy CNN 183 -> 172. A compress and a
 * masked store on every vector instead took twice as long as the rows.
 * The channels in one call, rather than a call a channel: int8
 * MobileNetV2-style (planes of 16 to 784 cells, up to 384 channels), one
 * core of a Xeon, dcz_run medians of alternated runs, batch 64 8.66 ->
 * 8.25 ms, batch 1 131.9 -> 126.1 us (ResNet-style unchanged). */
VNNI_TGT static void requant_planes__vnni(const int32_t *t, size_t tstride, const uint16_t *keep, size_t nv,
                                          const int64_t *bias, const int32_t *add, const int32_t *mult,
                                          const uint8_t *shift, uint32_t channels, int32_t qlo, int32_t qhi,
                                          size_t plane, dcz_q *y)
{
    for (uint32_t c = 0; c < channels; c++) {
        const int64_t b = (bias ? bias[c] : 0) + (add ? add[c] : 0);
        const unsigned k = shift[c];
        const int32_t *tc = t + c * tstride;
        dcz_q *yc = y + c * plane;
        switch (RQ_MODE(k)) {
        case 2: requant_vectors(2, tc, keep, nv, b, mult[c], k, qlo, qhi, plane, yc); break;
        case 1: requant_vectors(1, tc, keep, nv, b, mult[c], k, qlo, qhi, plane, yc); break;
        default: requant_vectors(0, tc, keep, nv, b, mult[c], k, qlo, qhi, plane, yc); break;
        }
    }
}

/* The depthwise form (above) on AVX-512 VBMI and VNNI */
#define QDW_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni")))

/* planes = sample x's channels as bytes x + 128 in their padded planes
 * (PH x PW each), then QDW_WINDOW bytes of 128: by the maps where the form
 * has them (dcz_qdw_vmap), each vector stored whole (the next channel's
 * write over the bytes past a plane, the margin past the last). They took
 * the place of a permute of small planes and a masked copy a row of
 * others, whose loop took a fifth of the depthwise kernel's time: int8
 * MobileNetV2-style, one core of a Xeon, dcz_run medians of alternated
 * runs, batch 1 153.0 -> 150.8 us, batch 64 9.48 -> 9.46 ms (its inputs
 * come from beyond the first-level cache). Else the planes filled with
 * 128, then the rows copied into them. */
QDW_TGT static void qdw_planes__vbmi(const dcz_conv_geom *g, const qdw_shape *s, const dcz_qdw_vmap *maps,
                                     const dcz_q *x, uint8_t *planes)
{
    const size_t plane = (size_t)s->PH * s->PW, in_plane = (size_t)g->in_h * g->in_w;
    const __m512i top512 = _mm512_set1_epi8((char)0x80);
    if (maps) {
        const size_t nv = qdw_vmaps(s);
        for (uint32_t c = 0; c < g->in_c; c++) {
            const dcz_q *src = x + c * in_plane;
            uint8_t *dst = planes + c * plane;
            for (size_t v = 0; v < nv; v++) {
                const dcz_qdw_vmap *m = maps + v;
                const dcz_q *at = src + m->first;
                const __m512i lo = _mm512_maskz_loadu_epi16((__mmask32)m->load, at);
                const __m512i hi = _mm512_maskz_loadu_epi16((__mmask32)(m->load >> 32), at + 32);
                const __m512i b = _mm512_maskz_permutex2var_epi8((__mmask64)m->inside, lo,
                                                                 _mm512_loadu_si512((const void *)m->idx), hi);
                _mm512_storeu_si512((void *)(dst + 64 * v), _mm512_xor_si512(b, top512));
            }
        }
        memset(planes + g->in_c * plane, 0x80, QDW_WINDOW);
        return;
    }
    memset(planes, 0x80, g->in_c * plane + QDW_WINDOW);
    const uint32_t rows = s->PH <= g->ph ? 0 : s->PH - g->ph < g->in_h ? s->PH - g->ph : g->in_h;
    const uint32_t cols = s->PW <= g->pw ? 0 : s->PW - g->pw < g->in_w ? s->PW - g->pw : g->in_w;
    const __m256i top = _mm256_set1_epi8((char)0x80);
    for (uint32_t c = 0; c < g->in_c; c++)
        for (uint32_t iy = 0; iy < rows; iy++) {
            const dcz_q *src = x + ((size_t)c * g->in_h + iy) * g->in_w;
            uint8_t *dst = planes + c * plane + (size_t)(iy + g->ph) * s->PW + g->pw;
            for (uint32_t k = 0; k < cols; k += 32) {
                const uint32_t n = cols - k < 32 ? cols - k : 32;
                const __mmask32 m = n == 32 ? 0xFFFFFFFFu : (__mmask32)((1u << n) - 1);
                const __m256i b = _mm512_cvtepi16_epi8(_mm512_maskz_loadu_epi16(m, src + k));
                _mm256_mask_storeu_epi8(dst + k, m, _mm256_xor_si256(b, top));
            }
        }
}

/* y (the output plane) = one channel's outputs from its byte plane, T taps
 * of weights wq, the sums starting at a0 (corr and bias) */
/* Where output vector j (cells 16 j ..) reads its window in a channel's
 * byte plane, and the first byte of its permutes' indices, for the first
 * s->patterns vectors; every s->patterns vectors (lcm(16, out_w) cells,
 * 16 / d rows) the same again, 16 / d rows of the plane further. The
 * same for every channel: made once a call. A walk of the cells in each
 * channel, the next vector's first cell found by subtractions (a branch
 * whose pattern the predictor does not learn over rows of 14 or 7 cells),
 * took longer: int8 MobileNetV2-style, one core of a Xeon, dcz bench
 * medians of alternated runs, batch 1 153.0 -> 148.8 us, batch 64 (with
 * the planes above) 10.70 -> 9.99 ms. */
typedef struct qdw_vec { uint32_t src, ix; } qdw_vec;

static void qdw_vectors(const dcz_conv_geom *g, const qdw_shape *s, qdw_vec *v)
{
    const size_t rowstep = (size_t)g->sh * s->PW;
    for (size_t j = 0; j < s->patterns; j++) {
        const size_t oy0 = 16 * j / g->out_w, ox0 = 16 * j % g->out_w;
        v[j].src = (uint32_t)(oy0 * rowstep + ox0 * g->sw);
        v[j].ix = (uint32_t)((ox0 >> s->dshift) * s->taps * 64);
    }
}

/* A walk over a channel's output vectors: vector j of the period, base
 * bytes into the plane, a period of rows period bytes. */
typedef struct qdw_cursor { size_t j, base, period; } qdw_cursor;

/* The sums of cur's output vector (T taps of weights wq from init), cur
 * moved on to the next vector. */
QDW_TGT static inline __attribute__((always_inline)) __m512i
qdw_sums__vbmi(const uint32_t T, const qdw_shape *s, const qdw_vec *vecs, const uint8_t *plane,
               const uint8_t *idx, const int32_t *wq, __m512i init, qdw_cursor *cur)
{
    const uint8_t *src = plane + cur->base + vecs[cur->j].src;
    const __m512i x0 = _mm512_loadu_si512((const void *)src), x1 = _mm512_loadu_si512((const void *)(src + 64));
    const uint8_t *ix = idx + vecs[cur->j].ix;
    if (++cur->j == s->patterns) {
        cur->j = 0;
        cur->base += cur->period;
    }
    __m512i acc = init;
#pragma GCC unroll 16
    for (uint32_t t = 0; t < T; t++)
        acc = _mm512_dpbusd_epi32(acc, _mm512_permutex2var_epi8(x0, _mm512_loadu_si512((const void *)(ix + 64 * t)), x1),
                                  _mm512_set1_epi32(wq[t]));
    return acc;
}

QDW_TGT static inline __attribute__((always_inline)) void
qdw_channel__vbmi(const int MODE, const uint32_t T, const dcz_conv_geom *g, const qdw_shape *s,
                  const qdw_vec *vecs, const uint8_t *plane, const uint8_t *idx, const int32_t *wq, int32_t a0,
                  int32_t mult, unsigned k, int32_t qlo, int32_t qhi, dcz_q *y)
{
    const rq_consts c = rq_setup(MODE, mult, k, qlo, qhi);
    const __m512i init = _mm512_set1_epi32(a0);
    const size_t out_plane = (size_t)g->out_h * g->out_w;
    qdw_cursor cur = { 0, 0, ((size_t)16 >> s->dshift) * g->sh * s->PW };
    size_t c0 = 0;
    if (MODE) {
        /* two whole vectors: packed to 16 bits and clamped there, as
         * requant_vectors does (int8 MobileNetV2-style, one core of a Xeon,
         * dcz bench medians of alternated runs: batch 64 9.95 -> 9.81 ms,
         * batch 1 149 -> 147 us) */
        const __m512i lo16 = _mm512_set1_epi16((int16_t)qlo), hi16 = _mm512_set1_epi16((int16_t)qhi);
        const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
        for (; c0 + 32 <= out_plane; c0 += 32) {
            const __m512i a = qdw_sums__vbmi(T, s, vecs, plane, idx, wq, init, &cur);
            const __m512i b = qdw_sums__vbmi(T, s, vecs, plane, idx, wq, init, &cur);
            const __m512i p = _mm512_permutexvar_epi64(
                order, _mm512_packs_epi32(requant16_wide(MODE, a, &c), requant16_wide(MODE, b, &c)));
            _mm512_storeu_si512((void *)(y + c0), _mm512_min_epi16(_mm512_max_epi16(p, lo16), hi16));
        }
    }
    for (; c0 < out_plane; c0 += 16) {
        const __m512i acc = qdw_sums__vbmi(T, s, vecs, plane, idx, wq, init, &cur);
        const __m256i r = _mm512_cvtepi32_epi16(requant16(MODE, acc, &c));
        if (c0 + 16 <= out_plane) _mm256_storeu_si256((void *)(y + c0), r);
        else _mm256_mask_storeu_epi16(y + c0, (__mmask16)((1u << (out_plane - c0)) - 1), r);
    }
}

/* dcz_qconv2d_shift_requant of a layer held in the depthwise form */
QDW_TGT static void qdw_requant__vbmi(const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                                      const dcz_requant *rq, int32_t lo, int32_t hi, const dcz_q *x, size_t batch,
                                      uint8_t *planes, dcz_q *y)
{
    qdw_shape s;
    qdw_measure(g, &s);   /* f->dw: the form took g */
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    const size_t plane = (size_t)s.PH * s.PW;
    qdw_vec vecs[QDW_MAX_PATTERNS];
    qdw_vectors(g, &s, vecs);
    for (size_t b = 0; b < batch; b++) {
        qdw_planes__vbmi(g, &s, f->dwmap, x + b * in_sample, planes);
        dcz_q *yb = y + b * g->out_c * out_plane;
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            /* the 32-bit sums wrap on their way (the bound: model.h) */
            const int32_t a0 = (int32_t)((uint32_t)f->corr[oc] + (uint32_t)(uint64_t)(bias ? bias[oc] : 0));
            const unsigned k = rq->shift[oc];
            const uint8_t *pc = planes + oc * plane;
            const int32_t *wq = f->dw + (size_t)oc * s.taps;
            dcz_q *yc = yb + oc * out_plane;
            const int32_t mult = rq->mult[oc];
            switch (RQ_MODE(k) * 2 + (s.taps == 3)) {
            case 5: qdw_channel__vbmi(2, 3, g, &s, vecs, pc, f->dwidx, wq, a0, mult, k, lo, hi, yc); break;
            case 4: qdw_channel__vbmi(2, s.taps, g, &s, vecs, pc, f->dwidx, wq, a0, mult, k, lo, hi, yc); break;
            case 3: qdw_channel__vbmi(1, 3, g, &s, vecs, pc, f->dwidx, wq, a0, mult, k, lo, hi, yc); break;
            case 2: qdw_channel__vbmi(1, s.taps, g, &s, vecs, pc, f->dwidx, wq, a0, mult, k, lo, hi, yc); break;
            case 1: qdw_channel__vbmi(0, 3, g, &s, vecs, pc, f->dwidx, wq, a0, mult, k, lo, hi, yc); break;
            default: qdw_channel__vbmi(0, s.taps, g, &s, vecs, pc, f->dwidx, wq, a0, mult, k, lo, hi, yc); break;
            }
        }
    }
}

/* acc row (n) = bias + (t row + add modulo 2^32), 8 at a time */
VNNI_TGT static void widen_row__vnni(const int32_t *t, int32_t add, int64_t bias, uint32_t n, int64_t *acc)
{
    const __m256i c = _mm256_set1_epi32(add);
    const __m512i b = _mm512_set1_epi64(bias);
    for (uint32_t i = 0; i < n; i += 8) {
        const __mmask8 k = (__mmask8)(n - i >= 8 ? 0xFF : (1u << (n - i)) - 1);
        const __m256i tc = _mm256_add_epi32(_mm256_maskz_loadu_epi32(k, t + i), c);
        _mm512_mask_storeu_epi64(acc + i, k, _mm512_add_epi64(_mm512_cvtepi32_epi64(tc), b));
    }
}
#endif

/* The integer split of sample x, widened to column quads where the form
 * has them, by the fastest variants this CPU has (the scalar ones with
 * vec 0). */
static void qsplit_any(int vec, const dcz_conv_geom *g, const split_geom *q, const dcz_q *x, uint8_t *xs)
{
#ifdef DCZ_X86
    if (vec && g->sw == 1 && __builtin_cpu_supports("avx512vbmi")) qsplit1__vbmi(g, q, x, xs);
    else if (vec && g->sw == 2 && __builtin_cpu_supports("avx512vbmi")) qsplit2__vbmi(g, q, x, xs);
    else if (vec && g->sw <= 2) qsplit__vnni(g, q, x, xs);
    else
#endif
        qsplit(g, q, x, xs);
    if (!col_quads(g)) return;
#ifdef DCZ_X86
    if (vec) {
        colquads__avx512((uint32_t *)(void *)xs, q->floats);
        return;
    }
#endif
    colquads((uint32_t *)(void *)xs, q->floats);
}

int dcz_qsplit_check(const dcz_conv_geom *g, const dcz_q *x, uint8_t *a, uint8_t *b)
{
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    const size_t bytes = q.floats * 4;
    qsplit(g, &q, x, a);
    int n = 0;
#ifdef DCZ_X86
    if (!dcz_qshift_variant()) return 0;   /* the variants run where the form's kernel does */
    const int vbmi = __builtin_cpu_supports("avx512vbmi");
    for (int v = 0; v < 3; v++) {
        if (v == 0 && g->sw <= 2) qsplit__vnni(g, &q, x, b);
        else if (v == 1 && vbmi && g->sw == 1) qsplit1__vbmi(g, &q, x, b);
        else if (v == 2 && vbmi && g->sw == 2) qsplit2__vbmi(g, &q, x, b);
        else continue;
        if (memcmp(a, b, bytes)) return -1;
        n++;
    }
#else
    (void)b;
    (void)bytes;
#endif
    return n;
}

typedef void (*qplanes_fn)(const dcz_qshift *f, const int32_t *corr, uint32_t out_c, size_t out16, size_t cells,
                           const int32_t *xs, int32_t *t, void *om);

/* t = the planes as computed of one sample's split xs by planes, or on
 * the AMX tiles where the form picks them (a vector variant). Returns what
 * each channel's sums still lack, to be added with its bias modulo 2^32:
 * f->corr after the tiles, which start their sums at zero; else NULL. */
static const int32_t *qplanes_run(qplanes_fn planes, int vec, const dcz_conv_geom *g, const split_geom *q,
                                  const dcz_qshift *f, const int32_t *xs, int32_t *t)
{
    if (vec && f->amx_pick) {
        uint32_t toff[DCZ_QSHIFT_MAX_WINDOW];
        tap_offsets(g, q, toff);
        dcz_qamx_planes(f, g, toff, (size_t)g->sh * g->sw * q->plane, q->out16, (const uint8_t *)xs,
                        copies_at(t, q, g), t);
        return f->corr;
    }
    planes(f, f->corr, g->out_c, q->out16, (size_t)g->out_h * q->wq, xs, t, NULL);
    return NULL;
}

static void qshift_planes_ref(const dcz_qshift *f, const int32_t *corr, uint32_t out_c, size_t out16, size_t cells,
                              const int32_t *xs, int32_t *t, void *om)
{
    (void)cells;
    (void)corr;
    (void)om;
    const uint8_t *xb = (const uint8_t *)xs;
    for (uint32_t oc = 0; oc < out_c; oc++) {
        const uint32_t k = oc / f->ob, o = oc % f->ob;
        for (size_t p = 0; p < out16; p++) {
            int64_t acc = 0;
            for (uint32_t e = f->ptr[k]; e < f->ptr[k + 1]; e++)
                for (uint32_t j = 0; j < 4; j++)
                    acc += (int64_t)((int32_t)xb[4 * (f->off[e] + p) + j] - 128) *
                           (int8_t)(uint8_t)((uint32_t)f->w[(size_t)e * f->ob + o] >> (8 * j));
            t[(size_t)oc * out16 + p] = (int32_t)acc;
        }
    }
}

#ifdef DCZ_X86
#define SFX __vnni
#define TGT VNNI_TGT
#define V __m512i
#define L 16
#define ET int32_t
#define FORM dcz_qshift
#define VSET1(f) _mm512_set1_epi32(f)
#define VLOAD(p) _mm512_loadu_si512((const void *)(p))
#define VFMA(a, b, c) _mm512_dpbusd_epi32(c, b, a)
#define VHLOAD(p) _mm512_castsi256_si512(_mm256_loadu_si256((const void *)(p)))
#define VHFMA(a, b, c)                                                                                           \
    _mm512_castsi256_si512(                                                                                    \
        _mm256_dpbusd_epi32(_mm512_castsi512_si256(c), _mm512_castsi512_si256(b), _mm512_castsi512_si256(a)))
#define VSTORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define VREG(x) "v"(x)
#define VADD(a, b) _mm512_add_epi32(a, b)
#define SPLIT_TMAX 6
#define TMAX1 12
#define TMAX2 12
#define TMAX4 0
#include "runtime/shift_tile.h"
#endif

static qplanes_fn qplanes_variant(dcz_isa isa)
{
    if (isa == DCZ_ISA_REF) return qshift_planes_ref;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
        return shift_planes__vnni;
#endif
    return NULL;
}

const char *dcz_qshift_variant(void) { return qplanes_variant(DCZ_ISA_AVX512) ? "avx512 vnni" : NULL; }

int dcz_qshift_depthwise(const dcz_qshift *f)
{
#ifdef DCZ_X86
    return f->dw && qplanes_variant(DCZ_ISA_AVX512) && __builtin_cpu_supports("avx512vbmi");
#else
    return 0;
#endif
}

int dcz_qconv2d_pick_shift(const dcz_conv_geom *g)
{
    return dcz_qshift_variant() && g->kh * g->kw <= DCZ_QSHIFT_MAX_WINDOW &&
           dcz_qshift_scratch_floats(g) <= DCZ_CONV_SCRATCH_MAX;
}

int dcz_qconv2d_shift_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                          const dcz_q *x, size_t batch, float *scratch, int64_t *acc)
{
    const qplanes_fn planes = qplanes_variant(isa);
    if (!planes) return 0;
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    int32_t *xs = (int32_t *)(void *)scratch, *t = planes_at(scratch, &q);
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    /* the vector variant also splits and widens in vectors */
    int vec = 0;
#ifdef DCZ_X86
    vec = isa != DCZ_ISA_REF;
#endif
    for (size_t b = 0; b < batch; b++) {
        qsplit_any(vec, g, &q, x + b * in_sample, (uint8_t *)xs);
        const int32_t *add = qplanes_run(planes, vec, g, &q, f, xs, t);
        int64_t *ab = acc + b * g->out_c * out_plane;
        for (uint32_t oc = 0; oc < g->out_c; oc++) {
            const int64_t bo = bias ? bias[oc] : 0;
            const int32_t ao = add ? add[oc] : 0;
            for (uint32_t oy = 0; oy < g->out_h; oy++) {
                const int32_t *tr = t + oc * q.out16 + oy * q.wq;
                int64_t *ar = ab + oc * out_plane + (size_t)oy * g->out_w;
#ifdef DCZ_X86
                if (vec) {
                    widen_row__vnni(tr, ao, bo, g->out_w, ar);
                    continue;
                }
#endif
                for (uint32_t ox = 0; ox < g->out_w; ox++) ar[ox] = bo + (int32_t)((uint32_t)tr[ox] + (uint32_t)ao);
            }
        }
    }
    return 1;
}

#define REQ_PLANE_MAX 512

#ifdef DCZ_X86
/* p (ph, pw) = the 2x2 maxima of stride 2 of the plane t (rows of wq
 * cells) plus add (modulo 2^32, before the maxima): the rows' pairs by
 * vectors, then the maxima of their even and odd lanes, 16 outputs a step. A convolution that takes the pool after it
 * (load.c) requantizes a quarter of its sums and the pool becomes a copy:
 * int8, one core of an AMD EPYC, medians of three alternated runs, LeNet-5
 * batch 1 15.7 -> 14.4 us, batch 64 938 -> 852; conv-heavy CNN batch 1
 * 125.3 -> 121.9, batch 64 8157 -> 8019. */
VNNI_TGT static void pool2_plane__avx512(const int32_t *t, size_t wq, uint32_t ph, uint32_t pw, int32_t add, int32_t *p)
{
    const __m512i c = _mm512_set1_epi32(add);
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    for (uint32_t py = 0; py < ph; py++, p += pw) {
        const int32_t *r0 = t + 2 * (size_t)py * wq, *r1 = r0 + wq;
        for (uint32_t px = 0; px < pw; px += 16) {
            const uint32_t n = pw - px < 16 ? pw - px : 16;   /* outputs, 2 n inputs a row */
            const __mmask16 m0 = (__mmask16)(n >= 8 ? 0xFFFF : (1u << (2 * n)) - 1);
            const __mmask16 m1 = (__mmask16)(n > 8 ? (1u << (2 * n - 16)) - 1 : 0);
            const int32_t *a = r0 + 2 * (size_t)px, *b = r1 + 2 * (size_t)px;
            const __m512i v0 = _mm512_max_epi32(_mm512_add_epi32(_mm512_maskz_loadu_epi32(m0, a), c),
                                                _mm512_add_epi32(_mm512_maskz_loadu_epi32(m0, b), c));
            const __m512i v1 = _mm512_max_epi32(_mm512_add_epi32(_mm512_maskz_loadu_epi32(m1, a + 16), c),
                                                _mm512_add_epi32(_mm512_maskz_loadu_epi32(m1, b + 16), c));
            const __m512i mx = _mm512_max_epi32(_mm512_permutex2var_epi32(v0, even, v1),
                                                _mm512_permutex2var_epi32(v0, odd, v1));
            _mm512_mask_storeu_epi32(p + px, (__mmask16)((1u << n) - 1), mx);
        }
    }
}

/* The plane path of dcz_qconv2d_shift_requant: the vectors of a plane as
 * the kernel computes it, within REQ_PLANE_MAX. */
static int requant_by_planes(const dcz_conv_geom *g, const dcz_qshift *f)
{
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    return !dcz_qshift_depthwise(f) && q.out16 / 16 <= REQ_PLANE_MAX;
}
#endif

#ifdef DCZ_X86
/* Whether one of the n shifts exceeds most: 64 at a time, where a test and
 * a return per channel took 1.2% of int8 MobileNetV2-style, which asks at
 * every call */
VNNI_TGT static int shifts_past__vnni(const uint8_t *shift, uint32_t n, uint8_t most)
{
    for (uint32_t i = 0; i < n; i += 64) {
        const __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        if (_mm512_mask_cmpgt_epu8_mask(m, _mm512_maskz_loadu_epi8(m, shift + i), _mm512_set1_epi8((char)most)))
            return 1;
    }
    return 0;
}
#endif

int dcz_qconv2d_shift_requant_runs(const dcz_conv_geom *g, const dcz_qshift *f, const dcz_requant *rq, int pool2)
{
#ifdef DCZ_X86
    if (!qplanes_variant(DCZ_ISA_AVX512) || rq->qmax != 127 || shifts_past__vnni(rq->shift, g->out_c, 62)) return 0;
    return !pool2 || (requant_by_planes(g, f) && g->out_h >= 2 && g->out_w >= 2);
#else
    (void)g; (void)f; (void)rq; (void)pool2;
    return 0;
#endif
}

int dcz_qconv2d_shift_requant(const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                              const dcz_requant *rq, int32_t lo, int32_t hi, int pool2, const dcz_q *x,
                              size_t batch, float *scratch, dcz_q *y)
{
#ifdef DCZ_X86
    if (!dcz_qconv2d_shift_requant_runs(g, f, rq, pool2)) return 0;
    const qplanes_fn planes = qplanes_variant(DCZ_ISA_AVX512);
    if (dcz_qshift_depthwise(f)) {
        qdw_requant__vbmi(g, f, bias, rq, lo, hi, x, batch, (uint8_t *)(void *)scratch, y);
        return 1;
    }
    const split_geom q = split_geom_of(g, (g->in_c + 3) / 4, 0);
    int32_t *xs = (int32_t *)(void *)scratch, *t = planes_at(scratch, &q);
    const size_t in_sample = (size_t)g->in_c * g->in_h * g->in_w, out_plane = (size_t)g->out_h * g->out_w;
    /* planes of up to REQ_PLANE_MAX vectors requantized by vectors, their
     * output lanes found once */
    const size_t nv = q.out16 / 16, cells = (size_t)g->out_h * q.wq;
    uint16_t keep[REQ_PLANE_MAX];
    if (nv <= REQ_PLANE_MAX)
        for (size_t j = 0, col = 0; j < nv; j++, col = (col + 16) % q.wq)
            keep[j] = (uint16_t)keep_lanes(16, 16 * j, (int64_t)col, (int64_t)q.wq, g->out_w, cells);
    /* with pool2, the pooled plane: its cells one after the other, a
     * quarter of the plane's (within REQ_PLANE_MAX * 4, requant_by_planes) */
    const uint32_t ph = g->out_h / 2, pw = g->out_w / 2;
    const size_t pooled = (size_t)ph * pw, pnv = pool2 ? (pooled + 15) / 16 : 0;
    uint16_t pkeep[REQ_PLANE_MAX];
    for (size_t j = 0; j < pnv; j++) pkeep[j] = (uint16_t)keep_lanes(16, 16 * j, 0, (int64_t)pooled, pooled, pooled);
    for (size_t b = 0; b < batch; b++) {
        qsplit_any(1, g, &q, x + b * in_sample, (uint8_t *)xs);
        /* the sums' corr, where the tiles leave it, added with the bias */
        const int32_t *add = qplanes_run(planes, 1, g, &q, f, xs, t);
        if (pool2) {   /* the pooled sums requantized: max commutes with the requantization */
            int32_t pt[REQ_PLANE_MAX * 4];
            dcz_q *yb = y + b * g->out_c * out_plane;   /* a sample's place as unpooled */
            for (uint32_t oc = 0; oc < g->out_c; oc++) {
                pool2_plane__avx512(t + oc * q.out16, q.wq, ph, pw, add ? add[oc] : 0, pt);
                requant_planes__vnni(pt, 0, pkeep, pnv, bias ? bias + oc : NULL, NULL, rq->mult + oc,
                                     rq->shift + oc, 1, lo, hi, pooled, yb + oc * pooled);
            }
            continue;
        }
        dcz_q *yb = y + b * g->out_c * out_plane;
        if (nv <= REQ_PLANE_MAX) {
            requant_planes__vnni(t, q.out16, keep, nv, bias, add, rq->mult, rq->shift, g->out_c, lo, hi, out_plane, yb);
            continue;
        }
        /* rows with no columns to drop make one row of the whole plane */
        const uint32_t rows = q.wq == g->out_w ? 1 : g->out_h, n = q.wq == g->out_w ? (uint32_t)out_plane : g->out_w;
        for (uint32_t oc = 0; oc < g->out_c; oc++)
            for (uint32_t oy = 0; oy < rows; oy++)
                requant_row__vnni(t + oc * q.out16 + oy * q.wq, add ? add[oc] : 0, bias ? bias[oc] : 0, rq->mult[oc],
                                  rq->shift[oc], lo, hi, n, yb + oc * out_plane + (size_t)oy * g->out_w);
    }
    return 1;
#else
    (void)g; (void)f; (void)bias; (void)rq; (void)lo; (void)hi; (void)pool2; (void)x; (void)batch; (void)scratch;
    (void)y;
    return 0;
#endif
}

void dcz_qconv2d_shift(const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias, const dcz_q *x,
                       size_t batch, int ref, float *scratch, int64_t *acc)
{
    if (ref || !dcz_qconv2d_shift_isa(DCZ_ISA_AVX512, g, f, bias, x, batch, scratch, acc))
        dcz_qconv2d_shift_isa(DCZ_ISA_REF, g, f, bias, x, batch, scratch, acc);
}
