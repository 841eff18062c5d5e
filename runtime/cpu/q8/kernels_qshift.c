/* kernels_qshift.c: convolution by shifted planes on integers, the
 * 8-bit schemes' shift form (model.h: dcz_qshift), on the split input of
 * cpu/shift_split.h, laid out as the float form's (cpu/f32/kernels_shift.c
 * describes the split); AVX-512 VNNI and VBMI, the AMX tiles' forms
 * (kernels_amx.c) built here, and the scalar references.
 *
 * Checked by tests/unit/test_qkernels.c (every variant against the
 * references, bit for bit) and tests/unit/test_calibrate.c (models).
 */
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/model.h"

#if DCZ_BUILD_X86
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
    if (vec && g->sw == 1 && dcz_cpu_features()->avx512vbmi) qsplit1__vbmi(g, q, x, xs);
    else if (vec && g->sw == 2 && dcz_cpu_features()->avx512vbmi) qsplit2__vbmi(g, q, x, xs);
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
    const int vbmi = dcz_cpu_features()->avx512vbmi;
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
#include "runtime/cpu/f32/shift_tile.h"
#endif

static qplanes_fn qplanes_variant(dcz_isa isa)
{
    if (isa == DCZ_ISA_REF) return qshift_planes_ref;
#ifdef DCZ_X86
    if (isa == DCZ_ISA_AVX512 && dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
        dcz_cpu_features()->avx512vl && dcz_cpu_features()->avx512vnni)
        return shift_planes__vnni;
#endif
    return NULL;
}

const char *dcz_qshift_variant(void) { return qplanes_variant(DCZ_ISA_AVX512) ? "avx512 vnni" : NULL; }

int dcz_qshift_depthwise(const dcz_qshift *f)
{
#ifdef DCZ_X86
    return f->dw && qplanes_variant(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512vbmi;
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
