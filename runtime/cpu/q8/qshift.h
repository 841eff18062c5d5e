/* qshift.h: 8-bit convolution by shifted planes on integers, the
 * integer shift form (model.h's dcz_qshift): its builder (qshift_form.c),
 * its kernels on accumulators (kernels_qshift.c), with the requantization
 * fused in (qshift_requant.c), and the AMX tiles' form (kernels_amx.c).
 * The float form: cpu/f32/shift.h.
 *
 * Checked by tests/unit/test_qkernels.c (every variant against the
 * references, bit for bit) and tests/unit/test_calibrate.c (models).
 */
#ifndef DCZ_RUNTIME_CPU_Q8_QSHIFT_H
#define DCZ_RUNTIME_CPU_Q8_QSHIFT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/cpu/q8/qrequant.h"
#include "runtime/model.h"

/* The integer shift form of the 8-bit schemes: bytes of dcz_qshift_bytes
 * for out_c channels and nnz stored weights (a bound: quad taps are fewer);
 * dcz_qshift_build fills f from the integer weights s in mem, 0 when it
 * cannot (a weight past a byte, a window of more than
 * DCZ_QSHIFT_MAX_WINDOW cells). dcz_qconv2d_shift: acc (batch, out_c,
 * out_h, out_w) = bias + the sums of products, exact, on AVX-512 VNNI or
 * the scalar reference (ref); scratch of dcz_qshift_scratch_floats floats.
 * dcz_qconv2d_shift_isa: DCZ_ISA_AVX512 (VNNI) or DCZ_ISA_REF, 0 when this
 * machine has none. dcz_qconv2d_pick_shift: the loader's choice for the
 * convolutions of 8-bit schemes where this CPU has VNNI. */
#define DCZ_QSHIFT_MAX_WINDOW 64
#define DCZ_QSHIFT_MAX_OB 2
uint64_t dcz_qshift_bytes(const dcz_conv_geom *g, uint64_t nnz, int amx);
int dcz_qshift_build(const dcz_conv_geom *g, const dcz_qsparse *s, int amx, void *mem, dcz_qshift *f);
uint64_t dcz_qshift_scratch_floats(const dcz_conv_geom *g);
void dcz_qconv2d_shift(const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias, const dcz_q *x,
                       size_t batch, int ref, float *scratch, int64_t *acc);
int dcz_qconv2d_shift_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                          const dcz_q *x, size_t batch, float *scratch, int64_t *acc);
const char *dcz_qshift_variant(void);
int dcz_qconv2d_pick_shift(const dcz_conv_geom *g);
/* The AMX tile form of the integer shift form (kernels_amx.c).
 * dcz_amx_ready: the CPU has AMX-INT8 and the OS lets this process use it
 * (asked by arch_prctl; the loader asks once a load, FORM_AMX, and passes
 * the answer to dcz_qshift_bytes and dcz_qshift_build as amx: with 0 no
 * tiles are built). dcz_qamx_bytes: the form's bytes for g, 0 where it is
 * not built (a grouped convolution). dcz_qamx_build
 * fills f's amx part in mem from the weights s.
 * dcz_qamx_planes: the planes as computed t (out_c rows of out16 cells)
 * from the integer split xs, tap k of quad c at cell toff[k] + c qstride,
 * the vector kernel's sums less each channel's f->corr (modulo 2^32); the
 * copied rows form writes its copies to copies (dcz_qamx_copy_cells); the
 * channel tiles m0 .. m1 - 1 alone (16 channels each, the last of those
 * left: a part of the planes, the others' untouched; the copied rows
 * form, which writes its copies first, takes them all). dcz_qamx_cost: the time of a sample
 * on the tiles, which dcz_qshift_build weighs against the quad taps', in
 * units of a quad tap over one vector (a load and a vpdpbusd or two): a
 * tile multiply
 * costs DCZ_QAMX_TILE_COST + DCZ_QAMX_ROW_COST a row of its inputs (kc),
 * loading and storing a tile of sums DCZ_QAMX_SUMS_COST; a block of the
 * quad taps DCZ_QSHIFT_BLOCK_COST a vector for its sums. Fitted on one
 * core of a Xeon with AMX (kernels_amx.c has the times). */
#define DCZ_QAMX_TILE_COST 7.0
#define DCZ_QAMX_ROW_COST 0.45
#define DCZ_QAMX_SUMS_COST 39.0
/* a vector of the copied rows form's copies (kernels_amx.c): fitted so
 * that the form runs LeNet-5's second layer, where it was faster, and not
 * the ResNet-style and conv-heavy CNN presets' 3 x 3 layers of 16 and 32
 * channels, where int8 ResNet-style took 1.03 and the CNN 1.09 times as
 * long at batch 1 with a unit */
#define DCZ_QAMX_COPY_COST 8.0
#define DCZ_QSHIFT_BLOCK_COST 2.0
enum { DCZ_QAMX_TAPS, DCZ_QAMX_ROWS, DCZ_QAMX_COPIES, DCZ_QAMX_COLUMNS };
/* Whether g's integer shift form holds column quads (one input channel at
 * column stride 1: a cell four columns of it; qshift_form.c). */
static inline int dcz_qshift_col_quads(const dcz_conv_geom *g)
{
    return g->in_c == 1 && g->sw == 1 && g->kw > 1;
}
int dcz_amx_ready(void);
uint64_t dcz_qamx_bytes(const dcz_conv_geom *g);
/* Cells of the copies the copied rows form makes of the input for g (its
 * taps at toff, out16 cells a plane as computed), 0 where its tiles take
 * another form. */
uint64_t dcz_qamx_copy_cells(const dcz_conv_geom *g, const uint32_t *toff, size_t out16);
void dcz_qamx_build(const dcz_conv_geom *g, const dcz_qsparse *s, void *mem, dcz_qshift *f);
void dcz_qamx_planes(const dcz_qshift *f, const dcz_conv_geom *g, const uint32_t *toff, size_t qstride,
                     size_t out16, const uint8_t *xs, uint8_t *copies, int32_t *t, uint32_t m0, uint32_t m1);
double dcz_qamx_cost(const dcz_conv_geom *g, size_t out16);
/* The integer split of sample x (kernels_qshift.c) by each vector variant
 * this CPU runs, against the scalar one: the number of variants that gave
 * its bytes, -1 at the first that did not; a and b hold
 * dcz_qshift_scratch_floats(g) floats each. For the tests. */
int dcz_qsplit_check(const dcz_conv_geom *g, const dcz_qconst *xc, const dcz_q *x, uint8_t *a, uint8_t *b);
/* An activation by table fused into the byte planes of the depthwise
 * convolution that alone reads its output (load.c, pair_table_planes):
 * planes = one sample's byte planes of the table's output (as
 * dcz_qconv2d_shift_requant's scratch holds them for the byte form, which
 * then runs on them: x NULL), made from x itself, each value looked up in
 * tb (dcz_qtable_bytes) as it is placed; the channels xc marks (values
 * already the table's) from their values. dcz_qdw_planes_table_takes:
 * whether f runs on the byte form by maps (dcz_qdw_vmap) on this CPU. */
int dcz_qdw_planes_table_takes(const dcz_qshift *f);
void dcz_qdw_planes_table(const dcz_conv_geom *g, const dcz_qshift *f, const dcz_qconst *xc, const dcz_q *x,
                          const uint8_t *tb, uint8_t *planes);
/* Which depthwise kernel dcz_qconv2d_shift_requant runs f by: the byte
 * permutes (DCZ_QDW_BYTES: f->dw set and this CPU has AVX-512 VBMI and
 * VNNI), else the int16 pairs (DCZ_QDW_PAIRS: f->dwp set and VNNI), else
 * none (0: the quad taps, as any other layer). qshift_form.c describes
 * both. */
enum { DCZ_QDW_BYTES = 1, DCZ_QDW_PAIRS = 2 };
int dcz_qshift_depthwise(const dcz_qshift *f);
/* dcz_qconv2d_shift on AVX-512 VNNI with the requantization of each sum to
 * the output's scale fused in: y = what dcz_requant8 makes of its
 * accumulators, bit for bit, without them, then clamped to lo .. hi
 * (-qmax <= lo <= hi <= qmax: the bounds of an activation fused in, else
 * -qmax, qmax); with pool2, then the 2x2 maxima of stride 2 of each plane
 * (out_h / 2 by out_w / 2 a plane, a sample's planes one after the other
 * from the start of its place as unpooled, so that every sample keeps its
 * place whatever samples a call takes): the
 * kernel takes the maxima of the sums and requantizes those alone, as the
 * requantization and the clamp never decrease (mult >= 0). 0 (nothing
 * written) where dcz_qconv2d_shift_requant_runs says it does not run: this
 * machine has no VNNI, qmax is not 127, a shift passes 62, or, with pool2,
 * the layer is depthwise, its planes pass the kernel's or are below 2x2.
 * With skip, the channels that hold no weight (f->none) are left
 * unwritten: the layer reading them takes their values as constants
 * (dcz_qshift_none_value). With xc (NULL: none), the input channels it
 * marks are taken as its values, their planes in x never read. With x
 * NULL (batch 1, the byte form by maps), the scratch holds its byte planes
 * already (dcz_qdw_planes_table). */
int dcz_qconv2d_shift_requant_runs(const dcz_conv_geom *g, const dcz_qshift *f, const dcz_requant *rq, int pool2);
/* With a pool (NULL: the caller's thread alone), a sample's chunks of
 * output channels (the depthwise byte form: its channels) go over the
 * pool's threads, each part its own channels' sums: the bits of one
 * thread. dcz_qconv2d_shift_requant_splits: whether g is worth it (the
 * fp32 rules' thresholds; never the tiles, the pairs form or a fused
 * pool, which run on the caller's thread). */
int dcz_qconv2d_shift_requant_splits(const dcz_conv_geom *g, const dcz_qshift *f);
struct dcz_pool;
int dcz_qconv2d_shift_requant(struct dcz_pool *pool, const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                              const dcz_requant *rq, int32_t lo, int32_t hi, int pool2, int skip,
                              const dcz_qconst *xc, const dcz_q *x, size_t batch, float *scratch, dcz_q *y);
/* The output of a channel that holds no weight (its sums are its bias, its
 * corr 0): the bias requantized by mult and shift, clamped to lo .. hi;
 * what every kernel above writes for each of its cells. */
static inline dcz_q dcz_qshift_none_value(int64_t bias, int32_t mult, uint8_t shift, int32_t lo, int32_t hi)
{
    const dcz_q q = dcz_requant8_one((int32_t)(uint32_t)(uint64_t)bias, mult, shift, 127);
    return (dcz_q)(q < lo ? lo : q > hi ? hi : q);
}
/* Whether input channel c of a layer is one of xc's constants */
static inline int dcz_qconst_has(const dcz_qconst *xc, uint32_t c) { return xc && xc->none && xc->none[c]; }

/* ---- between the family's files -------------------------------------------
 * Not for callers: what the builder (qshift_form.c), the kernels on
 * accumulators (kernels_qshift.c), the requantizing ones
 * (qshift_requant.c) and the AMX tiles (kernels_amx.c) share. */

/* The depthwise form by byte permutes (qshift_form.c describes it), which
 * the builder makes and the requantizing kernel reads: its bounds, a
 * geometry's shape in it, and the maps of its padded planes. */
#define QDW_MAX_TAPS 16
#define QDW_MAX_PATTERNS 32
#define QDW_WINDOW 128

typedef struct qdw_shape {
    uint32_t PH, PW;            /* the padded plane */
    uint32_t nq, taps;          /* quads of a window row; kh nq */
    uint32_t dshift, patterns;  /* d = 2^dshift; out_w / d (by rows: 1) */
    uint32_t rows;              /* the form by pairs of output rows (qshift_form.c): 2 output rows a
                                   vector, its windows' rows loaded apart; 0 not */
} qdw_shape;

/* s = the shape of g, a geometry the form takes (qdw_shape_of) */
static inline void qdw_measure(const dcz_conv_geom *g, qdw_shape *s)
{
    s->nq = (g->kw + 3) / 4;
    s->taps = g->kh * s->nq;
    s->PW = (g->out_w - 1) * g->sw + g->kw;
    s->PH = (g->out_h - 1) * g->sh + g->kh;
    s->dshift = 0;
    while (s->dshift < 4 && g->out_w % (2u << s->dshift) == 0) s->dshift++;
    s->patterns = g->out_w >> s->dshift;
    s->rows = 0;
}

/* The bytes a row of a vector by pairs of output rows reads past its
 * window start: its last lane's last quad */
static inline uint64_t qdw_rows_span(const dcz_conv_geom *g)
{
    return (uint64_t)(g->out_w - 1) * g->sw + 4ull * ((g->kw + 3) / 4);
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

static inline size_t qdw_vmaps(const qdw_shape *s) { return ((size_t)s->PH * s->PW + 63) / 64; }

/* The depthwise form by int16 pairs (qshift_form.c describes it): its
 * bounds on a window (pairs, columns), the pairs of a window row, a
 * channel's padded plane as the kernel copies it (PH x PW cells, then
 * QDWP_SLACK cells its last vectors read past the plane), and at stride 1
 * where each vector of 32 cells of the plane's rows (as computed: PW a
 * row, the last kw - 1 of each not outputs) goes in the output plane: a
 * masked store of the vector from lane 0's place, at (may lie before the
 * plane: its lanes there are masked), for each output row the vector
 * holds. The kernel's scratch: the plane, then the stores. */
#define QDWP_MAX_PAIRS 32
#define QDWP_MAX_KW 16
#define QDWP_SLACK 64
typedef struct qdwp_store { uint32_t vec; int32_t at; uint32_t mask; } qdwp_store;
static inline uint32_t qdwp_row_pairs(const dcz_conv_geom *g) { return (g->kw + 1) / 2; }
static inline size_t qdwp_pw(const dcz_conv_geom *g) { return (size_t)(g->out_w - 1) * g->sw + g->kw; }
static inline size_t qdwp_plane_cells(const dcz_conv_geom *g)
{
    return ((size_t)(g->out_h - 1) * g->sh + g->kh) * qdwp_pw(g) + QDWP_SLACK;
}
static inline size_t qdwp_vectors(const dcz_conv_geom *g) { return ((size_t)g->out_h * qdwp_pw(g) + 31) / 32; }
/* Small planes, which the pairs' kernel holds in registers rather than
 * copies (qshift_requant.c, qdwp_small__vnni): an input plane of at most
 * 64 cells (two vectors of 32) and an output of at most QDWP_SMALL_VECTORS
 * vectors of 16. The byte permutes leave them to it (qshift_form.c). */
#define QDWP_SMALL_VECTORS 4
static inline int qdwp_small(const dcz_conv_geom *g)
{
    return (uint64_t)g->in_h * g->in_w <= 64 && (uint64_t)g->out_h * g->out_w <= 16 * QDWP_SMALL_VECTORS;
}
static inline uint64_t qdwp_scratch_bytes(const dcz_conv_geom *g)
{
    const uint64_t plane = ((uint64_t)qdwp_plane_cells(g) * sizeof(int16_t) + 7) / 8 * 8;
    return plane + ((uint64_t)qdwp_vectors(g) + g->out_h) * sizeof(qdwp_store);
}

/* The kernels on accumulators (kernels_qshift.c) that the requantizing
 * ones run too. */
struct split_geom;
/* t (out_c, out16) = the planes as computed of the split xs; with om
 * DCZ_QPLANES_SPARE (a caller that reads no sum of a channel holding no
 * weight), the vector kernel leaves the planes of blocks without taps
 * unwritten */
typedef void (*dcz_qplanes_fn)(const dcz_qshift *f, const int32_t *corr, uint32_t out_c, size_t out16, size_t cells,
                               const int32_t *xs, int32_t *t, void *om);
extern const char dcz_qplanes_spare;   /* its address alone: never read */
#define DCZ_QPLANES_SPARE ((void *)(uintptr_t)&dcz_qplanes_spare)
/* xs = the integer split of sample x, widened to column quads where the
 * form has them, by the fastest variants this CPU has (the scalar ones
 * with vec 0); the channels xc marks (NULL: none) from their values, not
 * from x */
void dcz_qsplit_any(int vec, const dcz_conv_geom *g, const struct split_geom *q, const dcz_qconst *xc,
                    const dcz_q *x, uint8_t *xs);
/* t = the planes as computed of one sample's split xs by planes, or on the
 * AMX tiles where the form picks them (a vector variant). Returns what
 * each channel's sums still lack, to be added with its bias modulo 2^32:
 * f->corr after the tiles, which start their sums at zero; else NULL. */
const int32_t *dcz_qplanes_run(dcz_qplanes_fn planes, int vec, const dcz_conv_geom *g, const struct split_geom *q,
                               const dcz_qshift *f, const int32_t *xs, int32_t *t, int spare);
/* the planes kernel of isa (DCZ_ISA_AVX512: VNNI; DCZ_ISA_REF: the
 * reference), NULL where this build or machine has none */
dcz_qplanes_fn dcz_qplanes_variant(dcz_isa isa);

#endif /* DCZ_RUNTIME_CPU_Q8_QSHIFT_H */
