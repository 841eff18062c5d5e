/* kernels_amx.c: the integer shift form's convolutions on AMX tiles
 * (model.h, dcz_qshift: amx), for x86 CPUs with AMX-INT8.
 *
 * Why: vpdpbusd multiply-adds 64 bytes an instruction; an AMX tile
 * multiply (tdpbsud) multiplies a tile of 16 rows of up to 64 signed bytes
 * (the weights) by one of up to 16 rows of 64 unsigned bytes (the inputs)
 * into 16 x 16 32-bit sums, up to 16,384 products, in about the time of 16
 * vector instructions. On a convolution's weights at their density (15% to
 * 65% in the presets) the dense tiles then do the work of the sparse quad
 * taps (qshift_form.c, kernels_qshift.c) in a fraction of their time.
 *
 * The input is the integer split of kernels_qshift.c as it is: a cell holds
 * the bytes x + 128 of four input channels (a quad) at one pixel of the
 * padded input split by stride phase, and tap (ky, kx) of quad c reads the
 * cells from toff[tap] + c qstride on, for output cells 0, 1, ... of the
 * plane as computed (rows of wq cells, out16 in all). So, for 16 output
 * cells from p on, the kc quads of a chunk at one tap are kc rows of 64
 * bytes, qstride cells apart: a tile B, loaded as it lies. The weights of
 * 16 output channels at the same tap and chunk are a tile A of 16 rows of
 * 4 kc bytes (byte 4 j + b of row o: channel o's weight of input channel
 * 4 (chunk's first quad + j) + b), made once at load. tdpbsud adds A B to
 * the 16 x 16 sums C: row o (an output channel), column i (output cell
 * p + i). C starts at zero and gathers every tap and chunk, then is
 * stored as it lies into the planes as computed, the layout of
 * shift_planes__vnni's, each sum short of its channel's corr (-128 times
 * its weights' sum, which takes the +128 of the inputs back out): the
 * caller adds corr where it adds the bias (kernels_qshift.c, dcz_qplanes_run),
 * in 32 bits, modulo 2^32, so that the sums end exact, as the loader's
 * bound in model.h says of the vector kernel's. The requantization, the
 * fused pool and activation that follow are the vector kernel's code. C
 * loaded with corr took a tile load a tile of sums, as many as the tiles
 * A and B: int8 MobileNetV2-style, one core of a Xeon, dcz_run medians of
 * alternated runs, batch 64 8.52 -> 8.39 ms, batch 1 137.2 -> 135.1 us;
 * ResNet-style batch 1 52.7 -> 52.0 us.
 *
 * Chunks: a tap's nq quads in chunks of kc <= 16 rows, as even as they go
 * (kc = ceil(nq / ceil(nq / 16))); the last chunk starts at nq - kc, so
 * every row it loads is a quad of the input, and its tile holds zeros for
 * the quads the chunk before took. Output channels past out_c in the last
 * tile of 16 have zero weights, their sums stored aside.
 *
 * The row form, for layers of few quads at column stride 1 (amx_run
 * DCZ_QAMX_ROWS):
 * the taps of a window row read cells one apart (tap (ky, kx) at toff[ky
 * kw] + kx), so one quad's kw taps of a window row are kw rows of 64 bytes
 * 4 bytes apart, a tile B as it lies too (rows overlap). A multiply then
 * takes a window row of one quad, kh nq multiplies of kw rows where the
 * taps take kh kw chunks multiplies of kc rows: an RGB image's 5 x 5 first
 * layer 5 multiplies of 5 rows where it took 25 of 1. A tile A is then 16
 * rows of 4 kw bytes (byte 4 kx + b of row o: channel o's weight of input
 * channel 4 q + b at (ky, kx)). amx_shape_of takes the form of the smaller
 * cost (dcz_qamx_cost's units). bench/bench_qconv.c, medians of three
 * alternated runs, tiles before -> after: 3 -> 64 channels 5 x 5 over 32 x
 * 32 45-48 -> 22.2 us (the quad taps 39-41: the tiles now win), 3 -> 32
 * 3 x 3 13.9 -> 10.8 (taps 12.0), 8 -> 32 over 28 x 28 10.7 -> 9.4, 12 ->
 * 32 5 x 5 over 14 x 14 5.8 -> 4.8.
 *
 * The copied rows form, for layers of a few quads more (amx_run
 * DCZ_QAMX_COPIES): the caller copies each quad's plane kw times, plane
 * q kw + kx holding its cells from kx on (kernels_qshift.c, dcz_qplanes_run),
 * so that the taps form over those nq kw planes and the kh window rows
 * (each at its first tap's offset) multiplies up to 16 taps and quads a
 * tile B: LeNet-5's second layer (5 quads, 5 x 5) 10 multiplies of 13 or
 * 12 rows where the taps took 25 of 5. Int8 LeNet-5, one core of a Xeon,
 * dcz_run medians of alternated runs: batch 1 12.5 -> 12.3 us (median of
 * the ratios 0.986), batch 64 720 -> 695 us (0.949). The copies cost
 * DCZ_QAMX_COPY_COST a vector in dcz_qamx_cost, the tiles' cost rule: at
 * a unit the form also ran the 3 x 3 layers of 16 and 32 channels of the
 * ResNet-style and conv-heavy CNN presets, whose int8 models then took
 * 1.03 and 1.09 times as long at batch 1 (as many rows of B loaded, in
 * fewer multiplies, and the copies besides).
 *
 * The columns form, for layers of column quads (one input channel at
 * column stride 1, qshift_form.c) at row stride 1 (amx_run
 * DCZ_QAMX_COLUMNS): a cell holds four columns of the input, so column
 * quad c's window rows are kh rows of 64 bytes wq cells apart, a tile B
 * as it lies: ceil(kw / 4) multiplies of kh rows (LeNet-5's 5 x 5 first
 * layer: 2 of 5). A tile A: byte 4 ky + b of row o, channel o's weight at
 * (ky, 4 c + b). Where the taps form cannot run (no quads of channels),
 * the tiles race the column quad taps: LeNet-5's first layer picks them,
 * the 3 x 3 ones of the other presets keep the taps. Int8 LeNet-5 at
 * batch 1 with both forms against neither, alternated runs: 12.9 -> 12.2
 * us (median of the ratios 0.934); ResNet-style and the CNN unchanged
 * (1.000, 1.007).
 *
 * The kernel holds four sums C through all taps and chunks: two tiles of
 * 16 channels over two blocks of 16 cells, or one over four.
 *
 * Which kernel runs a layer: dcz_qamx_cost against the quad taps' cost
 * (qshift.h), fitted on bench/bench_qconv.c. On one core of a Xeon with
 * AMX, batch 1 with the split and the requantization, quad taps against
 * tiles: 3 x 3 convolutions of the presets 1.3 to 3.5 times faster on the
 * tiles (ResNet-style 16 -> 16 over 28 x 28 at 40% 11.6 -> 7.2 us,
 * conv-heavy CNN 64 -> 64 over 14 x 14 at 30% 37.1 -> 10.5 us); 1 x 1 ones
 * over planes of a few vectors 1.2 to 2.4 times; 1 x 1 ones of few input
 * channels over large planes no faster (their sums' stores, one tile of
 * sums a multiply, bound them). Whole int8 models (dcz bench, medians):
 * ResNet-style 78.9 -> 52.4 us, conv-heavy CNN 121.3 -> 49.4,
 * MobileNetV2-style 187.3 -> 162.9, LeNet-5 15.1 -> 12.6.
 *
 * AMX needs the kernel's leave: dcz_amx_ready asks for it (arch_prctl
 * ARCH_REQ_XCOMP_PERM; granted, it holds for the process) and says no where
 * the CPU, the kernel or a sandbox refuses. The loader asks once a load
 * (load.c, FORM_AMX) and builds the form only where it may run.
 *
 * Checked by tests/unit/test_qkernels.c: on a CPU with AMX, every geometry
 * of the integer convolution grid that the form takes, the tiles against
 * the reference (dcz_qconv2d_direct_ref) and the vector kernel, bit for
 * bit, with the requantization, the fused activation and the fused pool.
 */
#define _GNU_SOURCE 1   /* syscall() */
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/q8/qshift.h"
#include "runtime/model.h"

#if DCZ_BUILD_Q8_X86
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

int dcz_amx_ready(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!(d & (1u << 24)) || !(d & (1u << 25))) return 0;   /* AMX-TILE, AMX-INT8 */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;   /* OSXSAVE */
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return 0;   /* XTILECFG, XTILEDATA enabled by the OS */
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
#else
int dcz_amx_ready(void) { return 0; }
#endif

/* the most planes of the copied rows form */
#define AMX_COPIES_MAX 256

/* The multiplies of a block: groups of taps (taps, or window rows),
 * chunks a group, rows of a tile B (quads of a chunk, or taps of a window
 * row); nq quads of input channels (the copied rows form: planes). */
typedef struct amx_shape {
    uint32_t nq, groups, chunks, kc, run;
} amx_shape;

/* the cost of a block's multiplies, in dcz_qamx_cost's units */
static double amx_mults_cost(const amx_shape *a)
{
    return (double)a->groups * a->chunks * (DCZ_QAMX_TILE_COST + DCZ_QAMX_ROW_COST * a->kc);
}

/* nq quads in chunks of at most 16 rows, as even as they go */
static amx_shape amx_chunked(uint32_t nq, uint32_t groups, uint32_t run)
{
    const uint32_t chunks = (nq + 15) / 16;
    const amx_shape a = { .nq = nq, .groups = groups, .chunks = chunks, .kc = (nq + chunks - 1) / chunks,
                          .run = run };
    return a;
}

/* The form of g's tiles: of the taps, the rows and the copied rows forms
 * that apply, the one of the smallest cost a sample; a block's
 * multiplies against the copies, whose cells (about 16 a block) cost
 * DCZ_QAMX_COPY_COST a vector each of their nq kw planes. */
static amx_shape amx_shape_of(const dcz_conv_geom *g)
{
    const uint32_t nq = (g->in_c + 3) / 4, mt = (g->out_c + 15) / 16;
    if (dcz_qshift_col_quads(g)) {   /* the columns form, or none */
        const amx_shape c = { .nq = g->kh, .groups = (g->kw + 3) / 4, .chunks = 1, .kc = g->kh,
                              .run = DCZ_QAMX_COLUMNS };
        const amx_shape none = { 0 };
        return g->sh == 1 && g->kh <= 16 ? c : none;
    }
    amx_shape a = amx_chunked(nq, g->kh * g->kw, DCZ_QAMX_TAPS);
    if (g->sw != 1 || g->kw < 2 || g->kw > 16) return a;
    const amx_shape r = { .nq = nq, .groups = g->kh, .chunks = nq, .kc = g->kw, .run = DCZ_QAMX_ROWS };
    if (amx_mults_cost(&r) < amx_mults_cost(&a)) a = r;
    const amx_shape c = amx_chunked(nq * g->kw, g->kh, DCZ_QAMX_COPIES);
    if (nq * g->kw <= AMX_COPIES_MAX && mt * amx_mults_cost(&c) + DCZ_QAMX_COPY_COST * c.nq < mt * amx_mults_cost(&a))
        a = c;
    return a;
}

/* Cells of a plane of the copied rows form: what the window rows read,
 * from the first tap of each (toff[ky kw]). */
static size_t copy_cells(const dcz_conv_geom *g, const uint32_t *toff, size_t out16)
{
    size_t most = 0;
    for (uint32_t ky = 0; ky < g->kh; ky++)
        if (toff[ky * g->kw] + out16 > most) most = toff[ky * g->kw] + out16;
    return most;
}

uint64_t dcz_qamx_copy_cells(const dcz_conv_geom *g, const uint32_t *toff, size_t out16)
{
    if (dcz_qamx_bytes(g) == 0) return 0;
    const amx_shape a = amx_shape_of(g);
    return a.run == DCZ_QAMX_COPIES ? (uint64_t)a.nq * copy_cells(g, toff, out16) : 0;
}

uint64_t dcz_qamx_bytes(const dcz_conv_geom *g)
{
    if (dcz_conv_groups(g) != 1 || g->in_c == 0 || g->out_c == 0) return 0;
    const amx_shape a = amx_shape_of(g);
    if (a.groups == 0) return 0;
    const uint64_t mt = (g->out_c + 15) / 16;
    /* the tiles A, and 64 bytes to align them */
    return mt * a.groups * a.chunks * 16 * 4 * a.kc + 64;
}

void dcz_qamx_build(const dcz_conv_geom *g, const dcz_qsparse *s, void *mem, dcz_qshift *f)
{
    const amx_shape sh = amx_shape_of(g);
    const uint32_t nq = sh.nq, chunks = sh.chunks, kc = sh.kc, groups = sh.groups;
    const uint32_t mt = (g->out_c + 15) / 16, ksize = g->kh * g->kw;
    const size_t tile = (size_t)16 * 4 * kc;
    int8_t *a = (int8_t *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    memset(a, 0, (size_t)mt * groups * chunks * tile);
    for (uint32_t oc = 0; oc < g->out_c; oc++) {
        uint32_t e, end, col = 0;
        for (dcz_steps_row(s->row_ptr, s->step, g->out_c, oc, &e, &end, &col); e < end;
             e++, dcz_steps_seek(s->step, &e, end, col, &col)) {
            /* column (ic, tap); taps: quad ic / 4 belongs to chunk (ic / 4) / kc, at row
             * j of it; rows: window row tap / kw, chunk ic / 4, row tap % kw */
            const uint32_t ic = col / ksize, tap = col % ksize, q = ic / 4;
            uint32_t grp = tap, ch = q / kc, j = 0;
            uint32_t byte = ic % 4;
            if (sh.run == DCZ_QAMX_ROWS) {
                grp = tap / g->kw, ch = q, j = tap % g->kw;
            } else if (sh.run == DCZ_QAMX_COLUMNS) {   /* column quad kx / 4, row ky, byte kx % 4 */
                grp = tap % g->kw / 4, ch = 0, j = tap / g->kw, byte = tap % g->kw % 4;
            } else {   /* taps; copied rows: plane q kw + kx is a quad of the taps form */
                const uint32_t v = sh.run == DCZ_QAMX_COPIES ? q * g->kw + tap % g->kw : q;
                if (sh.run == DCZ_QAMX_COPIES) grp = tap / g->kw, ch = v / kc;
                j = v - (ch * kc < nq - kc ? ch * kc : nq - kc);
            }
            const size_t at = (((size_t)(oc / 16) * groups + grp) * chunks + ch) * tile;
            a[at + (size_t)(oc % 16) * 4 * kc + 4 * j + byte] = (int8_t)dcz_qsparse_weight(s, oc, e);
        }
    }
    f->amx = a;
    f->amx_nq = nq;
    f->amx_kc = kc;
    f->amx_chunks = chunks;
    f->amx_run = (uint8_t)sh.run;
}

double dcz_qamx_cost(const dcz_conv_geom *g, size_t out16)
{
    const double mt = (g->out_c + 15) / 16, blocks = (double)(out16 / 16);
    const amx_shape a = amx_shape_of(g);   /* the form's, built from g */
    /* the copied rows form's copies, each plane about the output's blocks
     * and a row of margin */
    const double copies = a.run == DCZ_QAMX_COPIES ? DCZ_QAMX_COPY_COST * a.nq * (blocks + 1) : 0.0;
    return mt * blocks * (amx_mults_cost(&a) + DCZ_QAMX_SUMS_COST) + copies;
}

#if DCZ_BUILD_Q8_X86
#define AMX_TGT __attribute__((target("amx-tile,amx-int8")))

/* The tile configuration (palette 1): tiles 0 - 3 the sums (16 rows of 16
 * 32-bit sums), 4 and 5 the weights A (16 rows of 4 kc bytes), 6 and 7
 * the inputs B (kc rows of 64 bytes). */
typedef struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

/* What the kernel's loops share. */
typedef struct amx_job {
    const dcz_qshift *f;
    uint32_t out_c, groups, kc, chunks;
    uint32_t step, last;        /* chunk ch's first plane: min(ch step, last) */
    const uint32_t *goff;       /* (groups) each group's first cell */
    size_t tile, cstride, bs, out16;   /* cells from a plane to the next; from a row of B to the next */
    const uint8_t *xs;
    int32_t *t;
} amx_job;

/* the input of block p (16 output cells) at group k, chunk ch */
static inline const uint8_t *amx_src(const amx_job *j, uint32_t k, uint32_t ch, size_t p)
{
    const uint32_t first = ch * j->step < j->last ? ch * j->step : j->last;
    return j->xs + 4 * (j->goff[k] + (size_t)first * j->cstride + 16 * p);
}

/* the tiles A of channel tile m */
static inline const int8_t *amx_a(const amx_job *j, uint32_t m)
{
    return j->f->amx + (size_t)m * j->groups * j->chunks * j->tile;
}

/* Sums C (a tile number) of channel tile m, block p, stored into the
 * planes; a last tile of fewer channels through aside. */
#define AMX_STORE(C, m, p)                                                                     \
    do {                                                                                       \
        const uint32_t rows_ = j->out_c - 16 * (m) < 16 ? j->out_c - 16 * (m) : 16;            \
        int32_t *dst_ = j->t + (size_t)16 * (m) * j->out16 + 16 * (p);                         \
        if (rows_ == 16) {                                                                     \
            _tile_stored(C, dst_, 4 * j->out16);                                               \
        } else {                                                                               \
            _tile_stored(C, aside, 64);                                                        \
            for (uint32_t r_ = 0; r_ < rows_; r_++) memcpy(dst_ + r_ * j->out16, aside + 16 * r_, 64); \
        }                                                                                      \
    } while (0)

/* Channel tiles m and m + 1 over blocks p and p + 1 (two: p + 1 is one):
 * sums 0, 1 of m, 2, 3 of m + 1; each tile A and B loaded once for two
 * multiplies. */
AMX_TGT static void amx_2x2(const amx_job *j, uint32_t m, size_t p, int two)
{
    int32_t aside[16 * 16];
    const size_t lda = 4 * j->kc, bs = 4 * j->bs;
    _tile_zero(0);
    _tile_zero(2);
    if (two) {
        _tile_zero(1);
        _tile_zero(3);
    }
    const int8_t *a0 = amx_a(j, m), *a1 = amx_a(j, m + 1);
    for (uint32_t k = 0; k < j->groups; k++)
        for (uint32_t ch = 0; ch < j->chunks; ch++, a0 += j->tile, a1 += j->tile) {
            const uint8_t *src = amx_src(j, k, ch, p);
            _tile_loadd(4, a0, lda);
            _tile_loadd(6, src, bs);
            _tile_dpbsud(0, 4, 6);
            if (two) {
                _tile_loadd(7, src + 64, bs);
                _tile_dpbsud(1, 4, 7);
            }
            _tile_loadd(5, a1, lda);
            _tile_dpbsud(2, 5, 6);
            if (two) _tile_dpbsud(3, 5, 7);
        }
    AMX_STORE(0, m, p);
    AMX_STORE(2, m + 1, p);
    if (two) {
        AMX_STORE(1, m, p + 1);
        AMX_STORE(3, m + 1, p + 1);
    }
}

/* Channel tile m over blocks p .. p + nb - 1 (nb <= 4): sums 0 - 3, the
 * tile A loaded once for nb multiplies. */
AMX_TGT static void amx_1x4(const amx_job *j, uint32_t m, size_t p, size_t nb)
{
    int32_t aside[16 * 16];
    const size_t lda = 4 * j->kc, bs = 4 * j->bs;
    _tile_zero(0);
    if (nb > 1) _tile_zero(1);
    if (nb > 2) _tile_zero(2);
    if (nb > 3) _tile_zero(3);
    const int8_t *a = amx_a(j, m);
    for (uint32_t k = 0; k < j->groups; k++)
        for (uint32_t ch = 0; ch < j->chunks; ch++, a += j->tile) {
            const uint8_t *src = amx_src(j, k, ch, p);
            _tile_loadd(4, a, lda);
            _tile_loadd(6, src, bs);
            _tile_dpbsud(0, 4, 6);
            if (nb > 1) {
                _tile_loadd(7, src + 64, bs);
                _tile_dpbsud(1, 4, 7);
            }
            if (nb > 2) {
                _tile_loadd(5, src + 128, bs);
                _tile_dpbsud(2, 4, 5);
            }
            if (nb > 3) {
                _tile_loadd(6, src + 192, bs);
                _tile_dpbsud(3, 4, 6);
            }
        }
    AMX_STORE(0, m, p);
    if (nb > 1) AMX_STORE(1, m, p + 1);
    if (nb > 2) AMX_STORE(2, m, p + 2);
    if (nb > 3) AMX_STORE(3, m, p + 3);
}

/* Pairs of channel tiles by 2 x 2 blocks (amx_2x2), an odd last one by
 * four blocks (amx_1x4, tile 5 then holding inputs). In cache (64 -> 64
 * channels, 3 x 3 over 14 x 14, one core of a Xeon with AMX) the 2 x 2
 * blocks take 7.7 ns a multiply, blocks of one channel tile by four 12.2:
 * each tile loaded for two multiplies rather than 1.25 loads a multiply. */
AMX_TGT void dcz_qamx_planes(const dcz_qshift *f, const dcz_conv_geom *g, const uint32_t *toff, size_t qstride,
                             size_t out16, const uint8_t *xs, uint8_t *copies, int32_t *t, uint32_t m0, uint32_t m1)
{
    const uint32_t kc = f->amx_kc, out_c = g->out_c;
    /* the taps form: tap k's quads in chunks, kc rows qstride apart */
    amx_job j = { .f = f, .out_c = out_c, .groups = g->kh * g->kw, .kc = kc, .chunks = f->amx_chunks,
                  .step = kc, .last = f->amx_nq - kc, .goff = toff, .tile = (size_t)16 * 4 * kc,
                  .cstride = qstride, .bs = qstride, .out16 = out16, .xs = xs, .t = t };
    uint32_t goff[DCZ_QSHIFT_MAX_WINDOW];
    if (f->amx_run != DCZ_QAMX_TAPS) {   /* the other forms' groups: window rows, or column quads */
        const int cols = f->amx_run == DCZ_QAMX_COLUMNS;
        j.groups = cols ? (g->kw + 3) / 4 : g->kh;
        for (uint32_t k = 0; k < j.groups; k++) goff[k] = toff[cols ? 4 * k : k * g->kw];
        j.goff = goff;
    }
    if (f->amx_run == DCZ_QAMX_ROWS) {   /* quad ch a chunk, its window row's taps a cell apart */
        j.step = 1, j.last = f->amx_nq - 1, j.bs = 1;
    } else if (f->amx_run == DCZ_QAMX_COPIES) {   /* the taps form over the copies */
        const size_t cells = copy_cells(g, toff, out16);
        for (uint32_t v = 0; v < f->amx_nq; v++)   /* plane q kw + kx: quad q's cells from kx on */
            memcpy(copies + 4 * v * cells, xs + 4 * (v / g->kw * qstride + v % g->kw), 4 * cells);
        j.xs = copies, j.cstride = cells, j.bs = cells;
    } else if (f->amx_run == DCZ_QAMX_COLUMNS) {   /* one chunk; a column quad's rows wq apart */
        j.bs = g->kh > 1 ? toff[g->kw] - toff[0] : 0;
    }
    amx_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 4; i++) cfg.rows[i] = 16, cfg.colsb[i] = 64;
    const int pairs = m1 - m0 > 1;   /* tile 5: weights (pairs) or inputs (one channel tile) */
    cfg.rows[4] = 16, cfg.colsb[4] = (uint16_t)(4 * kc);
    cfg.rows[5] = pairs ? 16 : (uint8_t)kc, cfg.colsb[5] = pairs ? (uint16_t)(4 * kc) : 64;
    for (int i = 6; i < 8; i++) cfg.rows[i] = (uint8_t)kc, cfg.colsb[i] = 64;
    _tile_loadconfig(&cfg);
    const size_t nblk = out16 / 16;
    for (size_t p = 0; p < nblk; p += 2)
        for (uint32_t m = m0; m + 1 < m1; m += 2) amx_2x2(&j, m, p, nblk - p > 1);
    if ((m1 - m0) % 2) {
        if (pairs) {   /* tile 5 holds inputs from here */
            cfg.rows[5] = (uint8_t)kc, cfg.colsb[5] = 64;
            _tile_loadconfig(&cfg);
        }
        for (size_t p = 0; p < nblk; p += 4) amx_1x4(&j, m1 - 1, p, nblk - p < 4 ? nblk - p : 4);
    }
    _tile_release();
}
#else
/* never reached: the form is built only where dcz_amx_ready says yes */
void dcz_qamx_planes(const dcz_qshift *f, const dcz_conv_geom *g, const uint32_t *toff, size_t qstride,
                     size_t out16, const uint8_t *xs, uint8_t *copies, int32_t *t, uint32_t m0, uint32_t m1)
{
    (void)f; (void)g; (void)toff; (void)qstride; (void)out16; (void)xs; (void)copies; (void)t; (void)m0; (void)m1;
}
#endif
