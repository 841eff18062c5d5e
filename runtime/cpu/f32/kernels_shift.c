/* kernels_shift.c: convolution by shifted planes (the shift form,
 * model.h), float; calibrated 8-bit on integers in cpu/q8/kernels_qshift.c,
 * which reads the same split input (cpu/shift_split.h).
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

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/model.h"

#if DCZ_BUILD_X86
#include <immintrin.h>

#include "runtime/cpu/f32/act_x86.h"
#include "runtime/cpu/avx2_lanes.h"
#define DCZ_X86 1
#elif DCZ_BUILD_NEON
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

#include "runtime/cpu/shift_split.h"

uint64_t dcz_shift_scratch_floats(const dcz_conv_geom *g) { return scratch_cells(g, g->in_c, 1); }

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
    else if (dcz_cpu_features()->amd) c.tap2 = 1.13;
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
#include "runtime/cpu/f32/shift_tile.h"

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
#include "runtime/cpu/f32/shift_tile.h"
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
#include "runtime/cpu/f32/shift_tile.h"
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
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512vl)
        return shift_planes__avx512;
    if (isa == DCZ_ISA_AVX2 && dcz_isa_supported(DCZ_ISA_AVX2) && dcz_cpu_features()->fma)
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
