/* qshift_form.c: the integer shift form of the 8-bit schemes (qshift.h;
 * model.h's dcz_qshift) as the loader builds it from a layer's integer
 * weights: quad taps by blocks of one or two output channels, column
 * quads, the depthwise forms by byte permutes and by int16 pairs, and the AMX tiles' forms
 * (kernels_amx.c) where the CPU has them; its bytes and its kernels'
 * scratch. The kernels that read it: kernels_qshift.c (on accumulators),
 * qshift_requant.c (requantized as they store). The form is described
 * below; the split input it reads, in cpu/f32/kernels_shift.c.
 *
 * Checked by tests/unit/test_qkernels.c (forms of the integer convolution
 * grid built and run against the references, bit for bit) and
 * tests/unit/test_calibrate.c (models).
 */
#include <string.h>

#include "runtime/cpu/q8/qshift.h"
#include "runtime/model.h"

#if DCZ_BUILD_Q8_X86
#include <immintrin.h>
#define DCZ_X86 1
#endif

#include "runtime/cpu/shift_split.h"

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
 * of products within 32 bits (model.h). qshift_planes_ref (kernels_qshift.c)
 * computes the same sums in 64 bits, products of the activations themselves.
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
 * is the usual one, its cells then widened in place (colquads,
 * kernels_qshift.c); byte j of a tap past the window's last column is a 0
 * weight, whatever it reads. */

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
 * requantized in registers as requant_planes__vnni does (the kernel:
 * qshift_requant.c); the references are the same (qshift_planes_ref,
 * dcz_qconv2d_direct_ref). Its bounds, shape and maps: qshift.h.
 * Where a vector's inputs pass 128 bytes and the output rows hold at most
 * 8 cells, by pairs of output rows (qdw_shape.rows): a vector holds two
 * output rows, and each tap permutes the 64 bytes from each row's window
 * row (vpermt2b of two loads), one pattern for the plane. The int16 pairs
 * ran such layers with 7 of 16 lanes a vector and a multiply-add for two
 * taps: 5 x 5 at stride 2 from 14 x 14, one core of an AMD EPYC (Zen 5),
 * dcz bench --per-layer least of three alternated rounds,
 * MobileNetV3-Small's 288 channels 13.9 -> 8.6 us (float: 10.4),
 * EfficientNet-B0's 672 39.1 -> 27.1; the model MobileNetV3-Small 0.983
 * of the time (int8, pruned by blocks; dcz bench medians of eight
 * alternated rounds in both orders). By single output rows of up to 16
 * cells, planes of 28 and 56 columns gained 1-1.6 us at stride 2 and lost
 * up to 17 at stride 1 (MobileNetV2's 144 channels over 56 x 56: 35 ->
 * 52 us), so they stay with the int16 pairs. */
static int qdwp_takes(const dcz_conv_geom *g);

/* s = g's shape in the depthwise form; 0 where the form does not take g
 * (nor a small plane the int16 pairs take, qdwp_small) */
static int qdw_shape_of(const dcz_conv_geom *g, qdw_shape *s)
{
    if ((qdwp_takes(g) && qdwp_small(g)) || g->in_c == 0 || dcz_conv_groups(g) != g->in_c || g->out_c != g->in_c ||
        g->out_h == 0 || g->out_w == 0 || g->kw > 8 || g->kh > QDW_WINDOW ||
        ((uint64_t)(g->out_h - 1) * g->sh + g->kh) * ((uint64_t)(g->out_w - 1) * g->sw + g->kw + QDW_WINDOW) >
            UINT32_MAX / 2)
        return 0;
    qdw_measure(g, s);
    const uint64_t PW = s->PW;
    if (s->taps > QDW_MAX_TAPS) return 0;
    int window = g->out_w <= 16 * QDW_MAX_PATTERNS && PW < QDW_WINDOW && s->patterns <= QDW_MAX_PATTERNS;
    /* the last byte lane i reads: window row kh - 1, column kw - 1 */
    for (uint32_t p = 0; window && p < s->patterns; p++)
        for (uint32_t i = 0, ox0 = p << s->dshift; i < 16; i++) {
            const uint64_t dy = (ox0 + i) / g->out_w, ox = (ox0 + i) % g->out_w;
            if ((dy * g->sh + g->kh - 1) * PW + ox * g->sw + g->kw - 1 >= (uint64_t)ox0 * g->sw + QDW_WINDOW)
                window = 0;
        }
    if (window) return 1;
    /* else by pairs of output rows of at most 8 (taller planes at stride
     * 2: a vector's window rows lie within 64 bytes each, and the second
     * row's loads past the last plane within the margin after it) */
    if (g->out_w > 8 || qdw_rows_span(g) > 64 || (uint64_t)(g->sh - 1) * PW + 64 > QDW_WINDOW) return 0;
    s->rows = 2;
    s->patterns = 1;
    s->dshift = 0;
    return 1;
}

static uint64_t qdw_bytes(const dcz_conv_geom *g)
{
    qdw_shape s;
    if (!qdw_shape_of(g, &s)) return 0;
    /* the maps aligned to 8 bytes after the rest, then each channel's taps
     * that hold a weight and their count */
    return ((uint64_t)g->out_c * sizeof(int32_t) + (uint64_t)s.patterns * 64) * s.taps + 8 +
           qdw_vmaps(&s) * sizeof(dcz_qdw_vmap) + (uint64_t)g->out_c * (s.taps + 1);
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
    /* by pairs of output rows: lane i of tap (ky, q) reads byte i sw + 4 q
     * + b of its window row's load, lane out_w + i byte 64 + i sw + 4 q +
     * b, of the next output row's (lanes past them: byte 0) */
    for (uint32_t t = 0; d->rows && t < d->taps; t++)
        for (uint32_t i = 0; i < 16; i++)
            for (uint32_t b = 0; b < 4; b++) {
                const uint32_t kq = 4 * (t % d->nq), kx = kq + b < g->kw ? kq + b : kq;
                const uint32_t r = i / g->out_w, col = i - r * g->out_w;
                idx[(size_t)t * 64 + 4 * i + b] = r < 2 ? (uint8_t)(64 * r + col * g->sw + kx) : 0;
            }
    for (uint32_t p = 0; !d->rows && p < d->patterns; p++) {
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
    f->dwrows = (uint8_t)d->rows;
    uint8_t *end = idx + (size_t)d->patterns * d->taps * 64;
    dcz_qdw_vmap *maps = (dcz_qdw_vmap *)(void *)(end + (-(uintptr_t)end & 7));
    f->dwmap = qdw_vmap_build(g, d, maps) ? maps : NULL;
    /* each channel's taps that hold a weight, listed once (as the pairs'
     * are, qdwp_build): MobileNetV3-Small's 5 x 5 layers 0.4-1.2 us each */
    uint8_t *taps = (uint8_t *)(maps + qdw_vmaps(d)), *count = taps + (size_t)g->out_c * d->taps;
    for (uint32_t oc = 0; oc < g->out_c; oc++) {
        uint32_t n = 0;
        for (uint32_t t = 0; t < d->taps; t++)
            if (dw[(size_t)oc * d->taps + t]) taps[(size_t)oc * d->taps + n++] = (uint8_t)t;
        for (uint32_t t = n; t < d->taps; t++) taps[(size_t)oc * d->taps + t] = 0;
        count[oc] = (uint8_t)n;
    }
    f->dwt = taps;
    f->dwn = count;
}

/* Depthwise by int16 pairs. A depthwise layer the byte permutes do not
 * take (planes past 28 x 28, or a CPU without VBMI) reads its activations
 * as they lie, 16-bit: a 32-bit lane of a vector loaded from a plane
 * holds two neighbouring columns, which vpdpwssd multiplies by two
 * weights of a window row at once ("a pair": columns 2j and 2j + 1, the
 * low half the even one, 0 past the row). At column stride 2 lane i of a
 * load at column 2 ox0 + 2j holds output ox0 + i's two inputs at those
 * window columns: ceil(kw / 2) vpdpwssd a window row for 16 outputs, a
 * row's last vector stored under a mask. The loads read the input plane
 * itself, masked where they pass its left or right edge (the padding's
 * zeros), and a window row above or below it adds nothing; two vectors of
 * a row are requantized together. They took the place of a copy of each
 * plane into a padded one: one core of an AMD EPYC (Zen 5), dcz bench
 * --per-layer least of three alternated rounds, MobileNetV3-Small's 16 x
 * 112 x 112 layer 8.3 -> 6.0 us, 72 x 56 x 56 10.4 -> 6.4, its 5 x 5 over
 * 96 x 28 x 28 7.8 -> 5.5 (int8, pruned by blocks; float 7.8, 8.5, 5.6);
 * the model 0.975 of the time, MobileNetV2 0.962 (dcz bench medians of
 * alternated rounds in both orders). At stride 1 (row stride 1 too) each
 * channel's plane is copied into a padded plane (zeros around, PH x PW as
 * above), whose rows are taken as one long row, each cell the first
 * of its window (the last kw - 1 cells of a row are no output's): a load
 * from cell q0 + 2j serves cells q0 + 2i, and one a cell on the cells q0 +
 * 2i + 1, two sums of 16 lanes requantized apart in registers, their
 * halves put side by side for 32 cells, stored into each output row they
 * hold under a mask (made once a call: qdwp_store); a 7 x 7 plane is two
 * vectors, not seven. An input plane of 64 cells or fewer (qdwp_small)
 * is not copied: the kernel holds it in two registers and deals each
 * pair's inputs to the lanes by word permutes, at either stride; the byte
 * permutes then are not built (qdw_shape_of). The kernel skips a
 * channel's pairs of two zeros (a pruned layer's most). No +128 and no
 * split: the sums start at the bias.
 * The kernel: qshift_requant.c; the references as above. Measured against
 * the quad taps: bench/cpu-profile.md. */
static int qdwp_takes(const dcz_conv_geom *g)
{
    return g->in_c > 0 && dcz_conv_groups(g) == g->in_c && g->out_c == g->in_c && g->out_h > 0 && g->out_w > 0 &&
           (g->sw == 2 || (g->sw == 1 && g->sh == 1)) && g->kw <= QDWP_MAX_KW &&
           (uint64_t)g->kh * qdwp_row_pairs(g) <= QDWP_MAX_PAIRS;
}

/* the pairs, after 4 bytes that align them, then their indices and their
 * counts */
static uint64_t qdwp_bytes(const dcz_conv_geom *g)
{
    const uint64_t pairs = (uint64_t)g->out_c * g->kh * qdwp_row_pairs(g);
    return qdwp_takes(g) ? 4 + pairs * (sizeof(int32_t) + 1) + g->out_c : 0;
}

static void qdwp_build(const dcz_conv_geom *g, const dcz_qsparse *s, void *mem, dcz_qshift *f)
{
    uint8_t *at = mem;
    int32_t *dwp = (int32_t *)(void *)(at + (-(uintptr_t)at & 3));
    const uint32_t np = qdwp_row_pairs(g), pairs = g->kh * np;
    uint8_t *idx = (uint8_t *)(dwp + (size_t)g->out_c * pairs), *count = idx + (size_t)g->out_c * pairs;
    memset(dwp, 0, (size_t)g->out_c * pairs * sizeof *dwp);
    for (uint32_t oc = 0; oc < g->out_c; oc++) {
        int32_t *wc = dwp + (size_t)oc * pairs;
        uint32_t e, end, col;
        for (dcz_steps_row(s->row_ptr, s->step, g->out_c, oc, &e, &end, &col); e < end;
             e++, dcz_steps_seek(s->step, &e, end, col, &col)) {
            const uint32_t ky = col / g->kw, kx = col % g->kw;
            uint32_t *p = (uint32_t *)&wc[ky * np + kx / 2];
            *p |= (uint32_t)(uint16_t)(int16_t)dcz_qsparse_weight(s, oc, e) << (16 * (kx % 2));
        }
        /* the pairs that hold a weight first, in order, with their indices:
         * the kernel found them at every call, a test a pair of the window,
         * which cost about what a pruned channel's sums do (one core of an
         * AMD EPYC, Zen 5, dcz bench --per-layer least of three alternated
         * rounds, MobileNetV3-Small's 576 x 7 x 7 layers 8.7 -> 6.0 us,
         * int8, pruned by blocks; with the byte permutes' taps, qdw_build,
         * the model 0.956 of the time, dcz bench medians of ten alternated
         * rounds in both orders) */
        uint32_t n = 0;
        for (uint32_t p = 0; p < pairs; p++) {
            if (!wc[p]) continue;
            const int32_t w = wc[p];
            wc[p] = 0;
            wc[n] = w;
            idx[(size_t)oc * pairs + n++] = (uint8_t)p;
        }
        for (uint32_t p = n; p < pairs; p++) idx[(size_t)oc * pairs + p] = 0;
        count[oc] = (uint8_t)n;
    }
    f->dwp = dwp;
    f->dwpi = idx;
    f->dwpn = count;
}

/* the AMX tile form's bytes where it is built (amx): ungrouped layers,
 * column quads included (kernels_amx.c, the columns form) */
static uint64_t qamx_bytes(const dcz_conv_geom *g, int amx) { return amx ? dcz_qamx_bytes(g) : 0; }

uint64_t dcz_qshift_bytes(const dcz_conv_geom *g, uint64_t nnz, int amx)
{
    return ((uint64_t)g->out_c * 2 + 1) * sizeof(uint32_t) +
           nnz * (sizeof(uint32_t) + DCZ_QSHIFT_MAX_OB * sizeof(int32_t)) + qdw_bytes(g) + qamx_bytes(g, amx) +
           qdwp_bytes(g) + g->out_c * (1 + sizeof(dcz_q)) + 1;
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
    /* the int16 pairs' padded plane and stores */
    if (qdwp_takes(g) && (qdwp_scratch_bytes(g) + 3) / 4 > cells) cells = (qdwp_scratch_bytes(g) + 3) / 4;
    qdw_shape s;
    if (!qdw_shape_of(g, &s)) return cells;
    /* the byte planes and the window past the last */
    const uint64_t planes = ((uint64_t)g->in_c * s.PH * s.PW + QDW_WINDOW + 3) / 4;
    return planes > cells ? planes : cells;
}

/* A block's cursor on one channel's row of weights: its next stored
 * weight e (e == end past the row) at column col (dcz_steps_row), and
 * where that weight lies: its quad of input channels (UINT32_MAX past the
 * row), its window cell (the quad tap's first) and its byte in the tap;
 * cin, k: col's input channel of the group and window offset, followed as
 * col grows (a division a weight was the build's largest cost) */
typedef struct qrow { uint32_t e, end, col, ic0, quad, cell, byte, cin, k, kcol; } qrow;

static void qrow_place(const dcz_conv_geom *g, uint32_t ksize, int cq, qrow *r)
{
    if (r->e >= r->end) {
        r->quad = UINT32_MAX;
        return;
    }
    /* kcol: the column k and cin were last worked out at */
    uint32_t k = r->k + (r->col - r->kcol), cin = r->cin;
    if (k >= 4 * ksize) {
        cin += k / ksize;
        k %= ksize;
    }
    for (; k >= ksize; k -= ksize) cin++;
    r->cin = cin, r->k = k, r->kcol = r->col;
    const uint32_t c = r->ic0 + cin, kx4 = cq ? k % g->kw % 4 : 0;   /* column quads: kx % 4 */
    r->quad = c / 4;
    r->cell = k - kx4;
    r->byte = cq ? kx4 : c % 4;
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
    const int cq = dcz_qshift_col_quads(g);
    uint32_t packed[DCZ_QSHIFT_MAX_OB][DCZ_QSHIFT_MAX_WINDOW];
    uint8_t used[DCZ_QSHIFT_MAX_WINDOW] = { 0 };
    qrow row[DCZ_QSHIFT_MAX_OB];
    for (uint32_t o = 0; o < ob; o++) {
        dcz_steps_row(s->row_ptr, s->step, g->out_c, oc0 + o, &row[o].e, &row[o].end, &row[o].col);
        row[o].ic0 = oc0 + o < g->out_c ? dcz_conv_in0(g, oc0 + o) : 0;
        row[o].cin = row[o].k = row[o].kcol = 0;
        qrow_place(g, ksize, cq, &row[o]);
        memset(packed[o], 0, ksize * sizeof packed[o][0]);
        sum[o] = 0;
    }
    for (;;) {
        uint32_t quad = UINT32_MAX;
        for (uint32_t o = 0; o < ob; o++)
            if (row[o].quad < quad) quad = row[o].quad;
        if (quad == UINT32_MAX) return n;
        /* a row's entries come in column order, so a quad's are consecutive */
        for (uint32_t o = 0; o < ob; o++)
            for (qrow *r = &row[o]; r->quad == quad; qrow_place(g, ksize, cq, r)) {
                const int32_t v = dcz_qsparse_weight(s, oc0 + o, r->e);
                if (v < -128 || v > 127) return UINT32_MAX;
                packed[o][r->cell] |= (uint32_t)(uint8_t)(int8_t)v << (8 * r->byte);
                used[r->cell] = 1;
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
    f->dwt = f->dwn = NULL;
    f->dwmap = NULL;
    f->dwrows = 0;
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
    f->dwp = NULL;
    f->dwpi = f->dwpn = NULL;
    if (qdwp_takes(g)) qdwp_build(g, s, rest + qdw_bytes(g) + qamx_bytes(g, amx), f);
    /* the channels without a weight, which the requantization fills with
     * their bias where the kernels may leave their sums unwritten: read at
     * every run, where finding them in their blocks' taps took a division
     * and a walk of the block a channel */
    uint8_t *none = rest + qdw_bytes(g) + qamx_bytes(g, amx) + qdwp_bytes(g);
    for (uint32_t c = 0; c < g->out_c; c++) {
        const uint32_t k = c / ob, o = c % ob;
        none[c] = 1;
        for (uint32_t e = ptr[k]; e < ptr[k + 1] && none[c]; e++) none[c] = w[(size_t)e * ob + o] == 0;
    }
    f->none = none;
    /* their values, where the loader has the layer leave them to the next
     * (load.c, pair_constants), after the flags at a 2-byte boundary */
    uint8_t *value = none + g->out_c;
    f->none_value = (dcz_q *)(void *)(value + ((uintptr_t)value & 1));
    memset(f->none_value, 0, (size_t)g->out_c * sizeof(dcz_q));
    return 1;
}
