/* kernels_shift.c: convolution by shifted planes (the shift form,
 * model.h), float; calibrated 8-bit on integers in cpu/q8/kernels_qshift.c,
 * which reads the same split input (cpu/shift_split.h).
 *
 * This file holds the kernels and their dispatch: the split of the input by
 * scalars, the scalar reference, the vector kernel of each instruction set
 * (shift_tile.h: AVX-512, AVX2, NEON) with the output map that stores the
 * sums straight into the output, the small planes' split by remaps. The
 * rest of the family (shift.h): the form's builder and the cost model that
 * decides where it runs (shift_form.c), the split by AVX2 and AVX-512
 * vectors (shift_split_x86.c), the depthwise kernels (shift_depthwise.c).
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
 * than in multiply-adds (shift_form.c: dcz_conv2d_pick_shift, shift_costs).
 *
 * Sums: bias first, then each weight's product fused into the sum in
 * column order (fmaf), the order of dcz_gemm_f32 on the weights expanded,
 * which adds the same products and exact zeros for the weights not stored.
 * shift_planes_ref is the specification; the vector variants give its
 * bits (tests/unit/test_kernels.c, every geometry of the convolution grid).
 * Timings: bench/bench_conv.c; the rule that picks the kernel:
 * dcz_conv2d_pick_shift (shift_form.c).
 *
 * Depthwise convolutions held in this form run on AVX-512 by two kernels
 * of their own, straight from the input (shift_depthwise.c; `dcz info` says
 * conv2d_depthwise), on AVX2 by two others (rows at column stride 2, and
 * channels in the lanes where every channel holds the whole window): the
 * same taps from the same form, the same bits.
 */
#include <math.h>
#include <string.h>

#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>

#include "runtime/cpu/f32/act_x86.h"
#include "runtime/cpu/avx2_lanes.h"
#define DCZ_X86 1
#elif DCZ_BUILD_F32_NEON
#include <arm_neon.h>
#define DCZ_NEON 1
#endif

#include "runtime/cpu/shift_split.h"

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
/* Where a tile's sums go, which its stores read: copied into a local
 * (OUT_LOCAL) before them, since a store through the vectors' types may
 * alias anything, and each store read these again with the activation
 * (dcz_act_of): eight loads and a multiply a vector, about as many loads as
 * the taps of a block of few (first convolutions, pruned blocks;
 * bench/cpu-profile.md). */
typedef struct tile_dst {
    float *y;                   /* the sample's output, planes plane cells apart */
    const float *res;           /* the residual added before act (AVX-512 only), or NULL; y's
                                   layout, and may be y itself: each store reads its own cells */
    size_t plane;
    dcz_act act;                /* applied in line */
    const dcz_act *call;        /* the same, for the call that applies it (out_act__avx512) */
} tile_dst;

#ifdef DCZ_X86   /* (the vector kernels' maps alone take it) */
static const dcz_act no_act = { 0, 0.0f, 0.0f };
#endif

typedef struct tile_out {
    tile_dst d;
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
        om->v[i].tail = at + L > om->d.plane;
        at += kept;
        for (col += (int64_t)L; col >= wq; col -= wq) {}
    }
}

/* act on a stored vector: in a block of several channels (wide), by a
 * call. Dense EfficientNet-B0's 1 x 1 layers of 192 -> 1152 channels over
 * 7 x 7 on this kernel (AMD EPYC, Zen 5, one thread, least medians of
 * alternated runs) take 153-156 us so; 168-221 with a SiLU's 15
 * operations in line in each store of the block, whose sums fill the
 * registers; 168 with the SiLU applied after each tile over the cells it
 * stored, whose loads wait on the masked stores (its first layer: 235,
 * 287, 287). A block of one channel holds few sums and takes act in line:
 * by a call after each tile, the compressed form's 5 x 5 depthwise layers
 * over 7 x 7 took 49 us, not 39. ReLU, one maximum with a zero that holds
 * no register, goes in line in every block: dense SqueezeNet 1.1 0.975-0.98
 * of the time, RegNetX-400MF 0.99, ResNet-18 0.98-1.0 (Zen 5, both orders);
 * a Clip in line (two constants held) took MobileNetV2 to 1.00-1.04 of
 * the time, and stays a call. */
__attribute__((target("avx512f"), noinline)) static __m512 act_call__avx512(__m512 v, const dcz_act *act)
{
    return dcz_act__avx512(v, act);
}
static inline __attribute__((target("avx512f"), always_inline)) __m512 out_act__avx512(__m512 v, const tile_dst *d,
                                                                                      int wide)
{
    if (!wide || d->act.op == 0 || d->act.op == DCZ_OP_RELU) return dcz_act__avx512(v, &d->act);
    return act_call__avx512(v, d->call);
}

/* the kept lanes of sum, act applied, packed into channel oc's plane (a
 * compress only where some lane is not an output, or an unmasked store
 * where the vector lies inside the plane, as the integer requantization
 * does, ran no faster, and slower: ResNet-style 115 -> 121 us) */
#define OUT_STORE(d, om, oc, i, sum, wide)                                                                       \
    _mm512_mask_storeu_ps((d)->y + (size_t)(oc) * (d)->plane + (om)->v[i].at, (__mmask16)(om)->v[i].n,         \
                          _mm512_maskz_compress_ps((__mmask16)(om)->v[i].keep, out_act__avx512(sum, d, wide)))
/* the same with the ADD after the convolution: res's cells added before act */
static inline __attribute__((target("avx512f"), always_inline)) void
out_store_res__avx512(const tile_dst *d, const tile_out *om, uint32_t oc, size_t i, __m512 sum, int wide)
{
    const size_t at = (size_t)oc * d->plane + om->v[i].at;
    const __mmask16 n = (__mmask16)om->v[i].n;
    const __m512 v = _mm512_add_ps(_mm512_maskz_compress_ps((__mmask16)om->v[i].keep, sum),
                                   _mm512_maskz_loadu_ps(n, d->res + at));
    _mm512_mask_storeu_ps(d->y + at, n, out_act__avx512(v, d, wide));
}
#define OUT_STORE_RES(d, om, oc, i, sum, wide) out_store_res__avx512(d, om, oc, i, sum, wide)
#define OUT_LOCAL(name, om) const tile_dst name = (om)->d
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
__attribute__((target("avx2,fma"), noinline)) static __m256 act_call__avx2(__m256 v, const dcz_act *act)
{
    return dcz_act__avx2(v, act);
}
static inline __attribute__((target("avx2,fma"), always_inline)) void
out_store__avx2(const tile_dst *d, const tile_out *om, uint32_t oc, size_t i, __m256 sum, int wide)
{
    float *y = d->y + (size_t)oc * d->plane + om->v[i].at;
    const __m256 a = wide ? act_call__avx2(sum, d->call) : dcz_act__avx2(sum, &d->act);
    const __m256 v = _mm256_permutevar8x32_ps(a,
                                              _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)om->v[i].idx)));
    if (om->v[i].tail)
        _mm256_maskstore_ps(y, dcz_mask8__avx2((uint32_t)__builtin_popcount(om->v[i].n)), v);
    else _mm256_storeu_ps(y, v);
}
#define OUT_STORE(d, om, oc, i, sum, wide) out_store__avx2(d, om, oc, i, sum, wide)
#define OUT_LOCAL(name, om) const tile_dst name = (om)->d
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
    if (isa == DCZ_ISA_NEON && dcz_isa_supported(DCZ_ISA_NEON)) return shift_planes__neon;
#endif
    return NULL;
}

dcz_isa dcz_shift_best(void)
{
    static const dcz_isa order[] = { DCZ_ISA_AVX512, DCZ_ISA_AVX2, DCZ_ISA_NEON };
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (planes_variant(order[i])) return order[i];
    return DCZ_ISA_REF;
}

const char *dcz_conv2d_shift_variant(void)
{
    switch (dcz_shift_best()) {
    case DCZ_ISA_AVX512: return "avx512";
    case DCZ_ISA_AVX2: return "avx2";
    case DCZ_ISA_NEON: return "neon";
    default: return NULL;
    }
}

/* The depthwise kernel that runs g on the shift form f on isa's planes
 * straight from the input (shift_depthwise.c), DW_NONE where the shift
 * form's own path does. */
enum { DW_NONE, DW_PLANE_AVX512, DW_ROWS_AVX512, DW_LANES_AVX2, DW_ROWS_AVX2 };
static int dw_kernel(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f)
{
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512) {
        const int dw = dcz_shift_dw_path(g, f);
        return dw == DCZ_SHIFT_DW_PLANE ? DW_PLANE_AVX512 : dw == DCZ_SHIFT_DW_ROWS ? DW_ROWS_AVX512 : DW_NONE;
    }
    if (isa == DCZ_ISA_AVX2)
        return dcz_shift_dw_scale_takes(g, f) ? DW_ROWS_AVX2
             : dcz_shift_dw_lanes_fit(g, f)   ? DW_LANES_AVX2
             : dcz_shift_dw_rows_avx2(g, f)   ? DW_ROWS_AVX2
                                              : DW_NONE;
#endif
    (void)isa;
    (void)g;
    (void)f;
    return DW_NONE;
}

const char *dcz_conv2d_shift_depthwise(const dcz_conv_geom *g, const dcz_shift *f)
{
    static const char *const names[] = { NULL, "plane", "rows", "lanes", "rows" };
    return names[dw_kernel(dcz_shift_best(), g, f)];
}

#ifdef DCZ_X86
/* What dw_run hands a part: every sample's output channels of part `part`
 * of `parts` (blocks of 8 for the lanes kernel), each part its slice of
 * the scratch (the lanes kernel's rows in cells). A channel's outputs do
 * not depend on the others', so the parts give the bits of one. */
typedef struct dw_job {
    int kind;
    const dcz_conv_geom *g;
    const split_geom *q;
    const dcz_shift *f;
    const float *bias, *x;
    size_t batch;
    const dcz_act *act;
    float *scratch;
    uint64_t slice;
    uint32_t parts;
    float *y;
} dw_job;

/* the channels a kernel's part takes at once: the lanes kernel's 8 */
static uint32_t dw_unit(int kind)
{
    return kind == DW_LANES_AVX2 ? 8 : 1;
}

static void dw_part(void *ctx, uint32_t part)
{
    const dw_job *j = ctx;
    const uint32_t unit = dw_unit(j->kind), units = (j->g->out_c + unit - 1) / unit;
    uint32_t lo, hi;
    dcz_part_range(units, part, j->parts, &lo, &hi);
    const uint32_t c0 = lo * unit, c1 = hi * unit < j->g->out_c ? hi * unit : j->g->out_c;
    if (c0 >= c1) return;
    switch (j->kind) {
    case DW_PLANE_AVX512:
        dcz_shift_dw_plane__avx512(j->g, j->q, j->f, j->bias, j->x, j->batch, j->act, c0, c1, j->y);
        break;
    case DW_ROWS_AVX512:
        dcz_shift_dw_rows_run__avx512(j->g, j->q, j->f, j->bias, j->x, j->batch, j->act, c0, c1, j->y);
        break;
    case DW_LANES_AVX2:
        dcz_shift_dw_lanes_run__avx2(j->g, j->q, j->f, j->bias, j->x, j->batch, j->act, c0, c1,
                                     j->scratch + (size_t)part * j->slice, j->slice, j->y);
        break;
    default: dcz_shift_dw_rows_run__avx2(j->g, j->q, j->f, j->bias, j->x, j->batch, j->act, c0, c1, j->y); break;
    }
}

/* The depthwise kernel `kind` over the pool's threads (NULL: this one),
 * as many parts as there are channels (blocks) and, for the lanes kernel,
 * slices of the scratch its least fits */
static void dw_run(int kind, dcz_pool *pool, const dcz_conv_geom *g, const split_geom *q, const dcz_shift *f,
                   const float *bias, const float *x, size_t batch, const dcz_act *act, float *scratch, float *y)
{
    const uint32_t unit = dw_unit(kind), units = (g->out_c + unit - 1) / unit;
    const uint64_t total = scratch_cells(g, g->in_c, 1);   /* dcz_shift_scratch_floats */
    uint32_t parts = pool ? dcz_pool_threads(pool) : 1;
    if (parts > units) parts = units;
    if (kind == DW_LANES_AVX2 && parts > total / dcz_shift_dw_lanes_floats(g))
        parts = (uint32_t)(total / dcz_shift_dw_lanes_floats(g));
    dw_job j = { kind, g, q, f, bias, x, batch, act, scratch, total / parts / 8 * 8, parts, y };
    if (parts > 1) dcz_pool_run(pool, dw_part, &j);
    else dw_part(&j, 0);
}
#endif

/* Whether isa's kernel adds a residual as it stores the sums: the AVX-512
 * map, not the depthwise kernels. */
static int res_in_store(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f)
{
#ifdef DCZ_X86
    return isa == DCZ_ISA_AVX512 && dw_kernel(isa, g, f) == DW_NONE;
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

/* xs = sample x split, by the fastest way isa has: small planes at stride
 * 1 a vector at a time (rs, where remap_init took g), else the vector
 * split, else the scalar one; the same floats. */
static void split_sample(dcz_isa isa, const dcz_conv_geom *g, const split_geom *q, const void *rs, const float *x,
                         float *xs)
{
#ifdef DCZ_X86
    if (rs) {
        remap_run__avx512((const remap *)rs, g->in_c, x, (size_t)g->in_h * g->in_w, xs, q->plane);
        memset(xs + g->in_c * q->plane, 0, (q->floats - g->in_c * q->plane) * sizeof *xs);
        return;
    }
    if (dcz_shift_split_vector(isa, g, q, x, xs)) return;
#else
    (void)isa; (void)rs;
#endif
    split(g, q, x, xs);
}

#ifdef DCZ_X86   /* (the vector maps alone write straight into the output) */
/* What shift_run hands a part of the work: sample b of the convolution,
 * split already into xs (which every part reads), and the output channel
 * blocks of part `part` of `parts` (a pool's threads). */
typedef struct shift_job {
    const dcz_conv_geom *g;
    const split_geom *q;
    const dcz_shift *f;
    planes_fn planes;
    const float *bias, *xs, *res;
    float *t;   /* the planes' scratch, which the map leaves unwritten */
    const dcz_act *act;
    float *y;
    size_t b;
    uint32_t parts;
} shift_job;

/* The sums straight into the output (the vector maps), for the channels of
 * blocks [b0, b1) of sample j->b. A block's sums do not depend on the
 * others', so the parts give the bits of one. */
static void shift_blocks(const shift_job *j, uint32_t b0, uint32_t b1)
{
    const dcz_conv_geom *g = j->g;
    const split_geom *q = j->q;
    const uint32_t ob = j->f->ob, c0 = b0 * ob, c1 = b1 * ob < g->out_c ? b1 * ob : g->out_c;
    if (c0 >= c1) return;
    const size_t out_plane = (size_t)g->out_h * g->out_w, at = (j->b * g->out_c + c0) * out_plane;
    dcz_shift sub = *j->f;
    sub.ptr = j->f->ptr + b0;
    tile_out om = { .d = { .y = j->y + at, .res = j->res ? j->res + at : NULL, .plane = out_plane,
                           .act = dcz_act_of(j->act), .call = j->act ? j->act : &no_act },
                    .out_c = c1 - c0, .out_w = g->out_w, .wq = (uint32_t)q->wq, .cells = (size_t)g->out_h * q->wq };
    j->planes(&sub, j->bias ? j->bias + c0 : NULL, c1 - c0, q->out16, om.cells, j->xs, j->t, &om);
}

static void shift_part(void *ctx, uint32_t part)
{
    const shift_job *j = ctx;
    uint32_t b0, b1;
    dcz_part_range((j->g->out_c + j->f->ob - 1) / j->f->ob, part, j->parts, &b0, &b1);
    shift_blocks(j, b0, b1);
}
#endif

/* The convolution on isa's planes, act (op 0: none) applied as the output
 * is written; with a residual res (or NULL), act(conv + res): the ADD
 * after the convolution, so the bits of the two run apart (a sum of two
 * floats is the same in either order, but for which NaN a NaN plus a NaN
 * keeps, which no kernel of the ADD fixes either). The AVX-512 map adds res
 * as it stores the sums (res_in_store); elsewhere the generic path adds it
 * as it copies the planes out (AVX2's map stores whole vectors, whose lanes
 * past the kept ones would overwrite res where it is y; the depthwise
 * kernels write y as they go). The loader fuses an ADD only where the
 * stores take it (dcz_conv2d_shift_res_fuses). With a pool (heap models),
 * the vector maps' path splits each sample's output channel blocks over its
 * threads (shift_part) and the depthwise kernels their channels (dw_run);
 * the generic path runs on the caller's thread. */
static int shift_run(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                     size_t batch, const dcz_act *act, const float *res, float *scratch, dcz_pool *pool, float *y)
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
    const int dw = apart ? DW_NONE : dw_kernel(isa, g, f);
    if (dw != DW_NONE) {   /* depthwise: straight from the input */
        dw_run(dw, pool, g, &q, f, bias, x, batch, act, scratch, y);
        return 1;
    }
    remap rs;
    const int small_split = vec && g->sh == 1 && g->sw == 1 && (g->ph || g->pw) &&
                            remap_init(&rs, g, q.wq, q.plane, (size_t)g->in_h * g->in_w, q.hq);
    if ((vec || isa == DCZ_ISA_AVX2) && !apart) {   /* the sums straight into the output */
        /* each sample split on this thread, then its channel blocks over
         * the pool's: the output may lie where the input does (an ADD
         * after the convolution writing over its other input, the
         * convolution's own), so no sample is written while one is split */
        /* a pointwise layer's split is its input: read where it lies where
         * its planes are whole vectors (the last one's loads end within
         * it) and the output does not overwrite it (compressed
         * MobileNetV2, AMD EPYC Zen 5: the copies took 4.9% of the run) */
        const size_t out_sample = (size_t)g->out_c * out_plane;
        const uintptr_t xa = (uintptr_t)x, ya = (uintptr_t)y;
        const int direct = split_is_input(g) && ((size_t)g->in_h * g->in_w) % 16 == 0 &&
                           (ya + batch * out_sample * sizeof *y <= xa || xa + batch * in_sample * sizeof *x <= ya);
        shift_job j = { g, &q, f, planes, bias, xs, res, t, act, y, 0, pool ? dcz_pool_threads(pool) : 1 };
        for (size_t b = 0; b < batch; b++) {
            if (direct) j.xs = x + b * in_sample;
            else split_sample(isa, g, &q, small_split ? &rs : NULL, x + b * in_sample, xs);
            j.b = b;
            if (j.parts > 1) dcz_pool_run(pool, shift_part, &j);
            else shift_blocks(&j, 0, (g->out_c + f->ob - 1) / f->ob);
        }
        return 1;
    }
#else
    (void)pool;
    const void *rsp = NULL;
#endif
    for (size_t b = 0; b < batch; b++) {
        float *yb = y + b * g->out_c * out_plane;
        const float *rb = res ? res + b * g->out_c * out_plane : NULL;
#ifdef DCZ_X86
        const void *rsp = small_split ? &rs : NULL;
#endif
        split_sample(isa, g, &q, rsp, x + b * in_sample, xs);
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

#ifdef DCZ_X86
void dcz_shift_pixels__avx512(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const dcz_act *act,
                              const float *x, size_t p0, size_t n, float *y, size_t ystride)
{
    /* the n pixels one row of the map: every lane an output */
    tile_out om = { .d = { .y = y, .res = NULL, .plane = ystride, .act = dcz_act_of(act),
                           .call = act ? act : &no_act },
                    .out_c = g->out_c, .out_w = (uint32_t)n, .wq = (uint32_t)n, .cells = n };
    shift_planes__avx512(f, bias, g->out_c, n, n, x + p0, NULL, &om);
}
#endif

int dcz_conv2d_shift_splits(const dcz_conv_geom *g, const dcz_shift *f)
{
    const uint32_t blocks = (g->out_c + f->ob - 1) / f->ob;
    const uint64_t cells = (uint64_t)g->out_c * g->out_h * g->out_w;
    if (blocks >= 2 && dw_kernel(dcz_shift_best(), g, f) != DW_NONE) return cells >= DCZ_SPLIT_DW_CELLS;
    return blocks >= 2 && (uint64_t)f->ptr[blocks] * f->ob * g->out_h * g->out_w >= DCZ_SPLIT_MACS;
}

int dcz_conv2d_shift_res_fuses(const dcz_conv_geom *g, const dcz_shift *f)
{
    return res_in_store(dcz_shift_best(), g, f);
}

int dcz_conv2d_shift_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                         const float *x, size_t batch, float *scratch, float *y)
{
    const dcz_act none = { 0, 0.0f, 0.0f };
    return shift_run(isa, g, f, bias, x, batch, &none, NULL, scratch, NULL, y);
}

int dcz_conv2d_shift_act_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                             const float *x, size_t batch, const dcz_act *act, const float *res, float *scratch,
                             float *y)
{
    return shift_run(isa, g, f, bias, x, batch, act, res, scratch, NULL, y);
}

void dcz_conv2d_shift(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                      size_t batch, int ref, float *scratch, float *y)
{
    dcz_conv2d_shift_isa(ref ? DCZ_ISA_REF : dcz_shift_best(), g, f, bias, x, batch, scratch, y);
}

void dcz_conv2d_shift_act(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                          size_t batch, const dcz_act *act, const float *res, float *scratch, float *y)
{
    shift_run(dcz_shift_best(), g, f, bias, x, batch, act, res, scratch, NULL, y);
}

void dcz_conv2d_shift_pool(dcz_pool *pool, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                           const float *x, size_t batch, const dcz_act *act, const float *res, float *scratch,
                           float *y)
{
    shift_run(dcz_shift_best(), g, f, bias, x, batch, act, res, scratch, pool, y);
}
