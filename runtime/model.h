/* model.h: the runtime's execution form of a loaded .dcz and its kernels.
 *
 * At load (load.c) every layer becomes one exec layer. Sparse layers keep
 * their compressed form: per row a run of entries, each a one-byte column
 * step and (codebook layers) a one-byte codebook index; Huffman streams are
 * decoded once into this form. Weights are expanded to dense only where the
 * dense product beats the sparse kernels (dcz_conv2d_pick_expand), as an
 * extra form beside the compressed one.
 *
 * Execution form of a sparse matrix (out rows, in columns):
 *   row r owns entries row_ptr[r] .. row_ptr[r+1]-1; a column cursor starts
 *   at 0 for each row; each entry adds step[e] to it; an entry whose step is
 *   DCZ_STEP_FILLER (255) only advances the cursor, any other entry
 *   contributes weight(e) * x[cursor]. Real steps are 0..254 (0 only for the
 *   first entry of a row or right after a filler).
 *
 * A convolution weight (out_c, in_c, kh, kw) has the same execution form
 * with rows = out_c and columns = in_c * kh * kw (the flattened C order of
 * the tensor), so column c is the tap (ic, ky, kx) = (c / (kh kw),
 * c / kw % kh, c % kw).
 *
 * Activations of one sample are (C, H, W) in C order; a batch is stored
 * sample after sample.
 *
 * Kernels: kernels_ref.c holds the matrix references, kernels_simd.c their
 * vectorized versions, kernels_lanes.c the lane form and its batch-1
 * kernels, kernels_conv.c the convolution and pooling kernels
 * with their references; every kernel is tested against a reference
 * (tests/unit/test_kernels.c, tests/unit/test_simd.c).
 */
#ifndef DCZ_RUNTIME_MODEL_H
#define DCZ_RUNTIME_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/isa.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/format/format.h"
#include "runtime/plan.h"
#include "runtime/shapes.h"
#include "runtime/threads.h"
#include "runtime/tool.h"

#define DCZ_STEP_FILLER 255u

typedef struct dcz_sparse {
    uint32_t rows, cols;
    uint32_t entries;       /* real entries and fillers */
    const uint32_t *row_ptr;/* (rows + 1) */
    const uint8_t *step;    /* (entries) */
    const uint8_t *idx;     /* (entries) codebook index; NULL for fp32 values */
    const float *val;       /* (entries) fp32 values; NULL for codebook */
    const float *codebook;  /* (k) */
    uint32_t k;
    /* The column form, for batch 1 (dcz_spmv skips the columns whose input
     * is 0): the rows are cut into cblocks blocks of consecutive rows, block
     * b holding rows [rows b / cblocks, rows (b + 1) / cblocks), one per
     * thread; block b's entries of column c are col_ptr[b (cols + 1) + c]
     * .. col_ptr[b (cols + 1) + c + 1] - 1, rows ascending, each packed as
     * row | index << cshift (index 0 for fp32 values) in 16 bits when that
     * fits, else 32. Built at load for fully connected layers of at most
     * 65535 rows (dcz_sparse_build_columns); col_ptr is NULL otherwise. */
    uint32_t cblocks, cshift;
    const uint32_t *col_ptr;  /* (cblocks, cols + 1) */
    const uint16_t *cent16;   /* (nnz) packed entries when they fit 16 bits, */
    const uint32_t *cent32;   /*   else these */
    const float *cval;        /* (nnz) value of each entry, when val */
    /* A lane form, for batch 1 where the CPU runs its vector kernel: the
     * 16-row form (dcz_spmv_lanes__avx512, "the lane form" below) or the
     * 8-row one (dcz_spmv_lanes8__avx2, "the 8-row lane form"), as lrows
     * says; lgroups is 0 when neither is built. */
    uint32_t lgroups, lrows;
    const uint32_t *lstart;   /* (lgroups + 1) first step of each group */
    const uint16_t *lbase;    /* (steps) window of each step */
    const uint16_t *lslot;    /* 16 rows: (steps, DCZ_LANE_SLOTS) slots, 64-byte aligned */
    const int8_t *loff;       /* 8 rows: (steps, 8) window lanes of the slots */
    const float *lw;          /* 8 rows: (steps, 8) weights of the slots, 32-byte aligned */
    uint32_t lneed;           /* the lane form wins for an input with more nonzeros
                                 (dcz_spmv_pick; capped at UINT32_MAX) */
} dcz_sparse;

/* Moves *e (before end) to the first real entry at or after it, the
 * column cursor standing at cur before *e, and sets *col to its column;
 * *e == end when none is left. */
static inline void dcz_steps_seek(const uint8_t *step, uint32_t *e, uint32_t end, uint32_t cur, uint32_t *col)
{
    for (; *e < end; (*e)++) {
        cur += step[*e];
        if (step[*e] != DCZ_STEP_FILLER) {
            *col = cur;
            return;
        }
    }
}

/* A lane's start on row r of a row form (rows rows): *e its first real
 * entry and *col that entry's column, *e == *end when it has none (a row
 * past the last has none). */
static inline void dcz_steps_row(const uint32_t *row_ptr, const uint8_t *step, uint32_t rows, uint32_t r,
                                 uint32_t *e, uint32_t *end, uint32_t *col)
{
    *e = *end = 0;
    if (r >= rows) return;
    *e = row_ptr[r];
    *end = row_ptr[r + 1];
    dcz_steps_seek(step, e, *end, 0, col);
}

/* The weight of real entry e. */
static inline float dcz_sparse_weight(const dcz_sparse *s, uint32_t e)
{
    return s->idx ? s->codebook[s->idx[e]] : s->val[e];
}

/* Integer weights of a calibrated model (see "integer execution" below). */
typedef int16_t dcz_q;

/* The execution form of model.h's sparse matrix with integer weights: the
 * same row_ptr and step arrays; an entry's weight is qtab[row * k + idx[e]]
 * (a codebook made integer per row, since a row's scale is its own) when idx
 * is set, else qval[e]. Fillers carry weight 0. */
typedef struct dcz_qsparse {
    uint32_t rows, cols;
    uint32_t entries;
    const uint32_t *row_ptr;  /* (rows + 1) */
    const uint8_t *step;      /* (entries) */
    const uint8_t *idx;       /* (entries) or NULL */
    const int16_t *qtab;      /* (rows, k) when idx */
    uint32_t k;
    const int16_t *qval;      /* (entries) when !idx */
    /* The integer lane form, for fully connected layers of the 8-bit
     * schemes where the CPU runs one of its kernels (see "the integer lane
     * form" below); lslices is 0 when it is not built. */
    uint32_t lslices;
    uint32_t lform;           /* dcz_qlane_form */
    const uint32_t *lstart;   /* (lslices + 1) first step of each slice */
    const uint16_t *lbase;    /* (steps) window of each step */
    const uint32_t *lslot;    /* (steps, 16) slots, or (steps, 2 lanes) quads; 64-byte aligned */
    const int32_t *lcorr;     /* byte quads of 16 rows: (lslices, 16) -128 times each row's weight sum */
} dcz_qsparse;

static inline int32_t dcz_qsparse_weight(const dcz_qsparse *s, uint32_t row, uint32_t e)
{
    return s->idx ? s->qtab[(size_t)row * s->k + s->idx[e]] : s->qval[e];
}


/* The shift form of a float convolution (kernels_shift.c has the layout
 * and the numbers): for each block of output channels, the union of their
 * stored weights' columns in column order ("taps"), each as the offset in
 * the split input (the sample padded and split by stride phase) of the
 * cell it multiplies for output pixel 0, and the block's values there. */
typedef struct dcz_shift {
    uint32_t ob;            /* output channels a block: 1, 2 or 4 */
    const uint32_t *ptr;    /* (blocks + 1) first tap of each block of ob channels */
    const uint32_t *off;    /* (taps) offset in the split input */
    const float *w;         /* (taps, ob) the block's weights at the tap, 0 where none is stored */
    int whole;              /* every block holds every cell of its window (dense weights) */
} dcz_shift;
/* Its integer twin for the 8-bit schemes (cpu/q8/kernels_qshift.c): weights by
 * quads of input channels, four bytes in a 32-bit word. */
typedef struct dcz_qshift {
    uint32_t ob;            /* output channels a block: 1 or 2 (DCZ_QSHIFT_MAX_OB) */
    const uint32_t *ptr;    /* (blocks + 1) first quad tap of each block of ob channels */
    const uint32_t *off;    /* (quad taps) offset in the split input, in 4-byte cells */
    const int32_t *w;       /* (quad taps, ob) the four input channels' weights, a byte each, of
                               each channel of the block (0 where it stores none) */
    const int32_t *corr;    /* (out_c) -128 times the sum of the channel's weights, modulo 2^32 */
    /* depthwise convolutions whose windows fit (kernels_qshift.c, "depthwise
     * by byte permutes"), else NULL: */
    const int32_t *dw;      /* (out_c, kh, ceil(kw / 4)) the weights of four columns of a window row, a byte each */
    const uint8_t *dwidx;   /* (patterns, kh ceil(kw / 4), 64) the bytes of a vector's window each lane reads */
    const struct dcz_qdw_vmap *dwmap;  /* (ceil(PH PW / 64)) where each 64 bytes of a channel's padded plane
                                          come from in its input plane; NULL where some do not fit a vector */
    /* the AMX tile form (kernels_amx.c) of ungrouped convolutions where the
     * CPU has AMX-INT8, else NULL: */
    const int8_t *amx;      /* (ceil(out_c / 16), kh kw, amx_chunks, 16, 4 amx_kc) tiles of weights: row o
                               an output channel, byte 4 j + b input channel 4 (chunk's first quad + j) + b;
                               in the row form (ceil(out_c / 16), kh, amx_nq, 16, 4 kw), byte 4 kx + b input
                               channel 4 q + b at (ky, kx) */
    uint32_t amx_nq, amx_kc, amx_chunks;  /* quads of input channels; rows of a tile B (quads a chunk, or kw
                                             taps a window row); chunks a tap (quads a window row) */
    uint8_t amx_run;        /* the form of the tiles (kernels_amx.c): DCZ_QAMX_TAPS, a tile B a tap's quads;
                               DCZ_QAMX_ROWS, a window row's taps of one quad; DCZ_QAMX_COPIES, the taps form
                               over kw copies of each quad's plane (amx_nq planes);
                               DCZ_QAMX_COLUMNS, a column quad's window rows (column quads, row stride 1) */
    uint8_t amx_pick;       /* the tiles run the layer (dcz_qamx_cost below the quad taps' cost) */
} dcz_qshift;

/* A layer in execution form. Its kernel is the plan's (plan.h: kernel),
 * which run.c dispatches by its table; a weighted layer's weight is dense
 * (w) or in the sparse execution form (sp, sparse set), with the extra
 * form its kernel reads beside it. */
/* What a layer fused into the one before it leaves to do (load.c,
 * fuse_activations; dcz_exec_layer.fused): DCZ_FUSED_ADD, nothing (the
 * convolution before wrote its output). */
enum { DCZ_FUSED_ACT = 1, DCZ_FUSED_POOL = 2, DCZ_FUSED_ADD = 3 };

typedef struct dcz_exec_layer {
    uint16_t op;
    uint8_t sparse;         /* weighted: sp holds the weight (else w) */
    char name[DCZ_MAX_NAME + 1];
    uint32_t nin;
    uint16_t tin[DCZ_MAX_INPUTS]; /* the tensors it reads (see dcz_tensor) */
    dcz_shape in_shape, out_shape; /* of one sample; in_shape: of the first input */
    uint32_t in, out;       /* elements in and out of one sample (in: of the first input) */
    dcz_conv_geom geom;     /* CONV2D, MAXPOOL, AVGPOOL, GLOBAL_AVGPOOL (window unused) */
    int count_include_pad;  /* AVGPOOL */
    uint8_t kernel;         /* dcz_kernel (plan.h): the kernel it runs, decided once at load */
    uint8_t gpu_kernel;     /* dcz_gpu_kernel (gpu.h): the one it runs on a GPU */
    dcz_act act;            /* float CONV2D on the shift form, float ADD, float DENSE: the next
                               layer's activation (that of an ADD it takes: res), applied as it
                               writes its output when the run fuses (op 0: none) */
    uint8_t fused;          /* DCZ_FUSED_ACT: a RELU or CLIP the layer before applies when the
                               run fuses; DCZ_FUSED_POOL: a MAXPOOL the convolution before (or
                               the one before its fused activation) takes, leaving it a copy;
                               DCZ_FUSED_ADD: a float ADD the convolution before computes */
    uint16_t res;           /* float CONV2D on the shift form that takes the ADD after it when
                               the run fuses: the ADD's other input (a tensor), added to each
                               output as it is written, before act, into the ADD's output place;
                               0 for none */
    uint8_t qpool;          /* integer CONV2D on the shift form: takes the 2x2 MAXPOOL after it
                               when the run fuses (dcz_qconv2d_shift_requant pool2) */
    float param[2];         /* CLIP min, max; LEAKY_RELU alpha; HARD_SIGMOID alpha, beta */
    const float *w;         /* dense DENSE: (out, in); dense CONV2D, and expanded sparse ones:
                               (out_c, in_c / group, kh, kw) */
    const float *wu;        /* wino CONV2D: dcz_wino_weights of w (line-aligned) */
    const float *wt;        /* dense DENSE where this CPU runs dcz_gemm_f32: w transposed,
                               (in, dcz_gemm_ldb(out)), the padding 0 */
    dcz_sparse sp;          /* sparse DENSE: (out, in); sparse CONV2D: (out_c, in_c / group kh kw) */
    dcz_shift shift;        /* shifted float CONV2D */
    dcz_qshift qshift;      /* shifted integer CONV2D */
    const float *bias;      /* (out) or (out_c), or NULL */
    /* integer execution (qload.c): layers from the first weighted layer to
     * the last run on dcz_q activations */
    int q;                  /* this layer runs on integers */
    uint32_t channels;      /* weighted: output channels (rows of the weight) */
    dcz_qsparse qs;         /* weighted: integer weights */
    const float *w_scale;   /* weighted: (channels) weight scale of each output channel */
    float in_scale;         /* weighted: scale of the activations it receives */
    int64_t *qbias;         /* weighted: (channels) bias in accumulator units */
    const int32_t *qw2;     /* expanded integer CONV2D: (out_c, ceil(in_c kh kw / 2)) int16 pairs */
    int32_t *rq_mult;       /* weighted but the last: (channels) requantization to */
    uint8_t *rq_shift;      /*   the scale of its output (dcz_requant) */
    int32_t qlo, qhi;       /* integer CONV2D on the shift form: its outputs' clamp, that of the
                               activation after it where that is one and fused in (load.c), else
                               -qmax, qmax */
    double *out_scale;      /* the last weighted layer: (channels) accumulator to float,
                               s_in * s_w[c] exactly */
    int32_t in_mult[DCZ_MAX_INPUTS]; /* ADD, CONCAT: input k to the output's scale; MUL: */
    uint8_t in_shift[DCZ_MAX_INPUTS]; /*  the product ([0]); GLOBAL_AVGPOOL: the sum ([0])
                                          when its output's scale is not its input's;
                                          as dcz_requant_params */
    dcz_q *table;           /* DCZ_QS_TABLE ops: (2 qmax + 1) outputs of -qmax .. qmax */
} dcz_exec_layer;

/* ---- the lane form (kernels_lanes.c) ---------------------------------------
 * Batch 1 without scatter: sixteen rows in the lanes of one vector, each
 * lane summing its own row, the input read from a window of it held in
 * registers. For fully connected codebook layers of at most 32 values.
 *
 * The rows are cut into groups of DCZ_LANE_ROWS (16) consecutive rows,
 * lane l being row 16 g + l. A group is a sequence of steps. In a step,
 * the group reads a window of DCZ_LANE_W = 31 columns, and each lane two
 * 16-bit slots, one a slice: its row's next two entries whose columns lie
 * in the window, each as (column - start) | codebook index << 8, else 31,
 * "no entry" (index 0). The windows start every 10 or 11 columns: window v
 * covers columns dcz_lanes_window_start(v) .. + 30 (the vector kernel reads
 * it as one aligned panel of 32 inputs whose last is 0). A row's entries
 * come in column order; slice 0 sums the bias and each step's first entry,
 * slice 1 each step's second, each product fused into its sum, and the row
 * is the two sums added.
 *
 * Steps of a group (dcz_lanes_build, a greedy walk): the window is the
 * latest to start at or before the smallest column among the 16 rows'
 * next entries; every row takes its next entries that lie in it, two at
 * most. Step t of the layer: lbase[t] its window, and lslot[32 t + 2 l + s]
 * the slot of lane l in slice s, so one 64-byte vector holds both slices'
 * slots as the two halves of its 32-bit lanes, and a step loads that
 * vector and one panel (kernels_lanes.c: what a step costs).
 *
 * The form is built where it pays: at most 32 codebook values, at most
 * 65535 columns, and no more steps than DCZ_LANE_STEPS_MAX allows (a
 * quarter of the slots filled); dcz_spmv_pick chooses it or the column
 * kernel per call from their measured costs. The integer lane form (below)
 * has the same windows.
 */
#define DCZ_LANE_ROWS 16
#define DCZ_LANE_SLOTS 32   /* slots of a step: two per row */
#define DCZ_LANE_W 31
/* Steps a matrix of nnz entries may take, with rows rows. */
#define DCZ_LANE_STEPS_MAX(nnz, rows) ((uint64_t)(nnz) / 8 + ((uint64_t)(rows) + 15) / 16)
/* The lane form a load builds on this CPU, whose vector kernel it runs:
 * DCZ_LANE_ROWS (AVX-512), DCZ_LANE8_ROWS (AVX2 and FMA: "the 8-row lane
 * form" below), or 0. The functions below take a form by its rows a group,
 * lrows, and run the one s holds (s->lrows). */
uint32_t dcz_lanes_rows(void);
/* Bytes of lane form lrows of a rows x cols codebook matrix of nnz
 * entries and k values (its most: the steps' bound), 0 when it is not
 * built. */
uint64_t dcz_lanes_bytes(uint32_t lrows, uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k);
/* Builds s's lane form lrows in mem (dcz_lanes_bytes bytes for its nnz
 * real entries, 4-byte aligned) from its row form, setting s->lrows;
 * leaves lgroups 0 (no lane form) for fp32 values or when the walk needs
 * more steps than the bound. */
void dcz_lanes_build(dcz_sparse *s, uint32_t lrows, uint32_t nnz, void *mem);
/* Steps of s's lane form (0 without one). */
static inline uint32_t dcz_lanes_steps(const dcz_sparse *s)
{
    return s->lgroups ? s->lstart[s->lgroups] : 0;
}
/* Windows of the lane forms per DCZ_LANE_W columns (three shifted copies
 * of the input), and the first column of window v. */
#define DCZ_LANE_COPIES 3
static inline uint32_t dcz_lanes_window_start_w(uint32_t w, uint32_t v)
{
    return v / DCZ_LANE_COPIES * w + v % DCZ_LANE_COPIES * w / DCZ_LANE_COPIES;
}
static inline uint32_t dcz_lanes_window_start(uint32_t v)
{
    return dcz_lanes_window_start_w(DCZ_LANE_W, v);
}
/* The latest window of w columns to start at or before column b (the
 * builders' choice for a step whose lanes need b first). */
static inline uint32_t dcz_lanes_window_of_w(uint32_t w, uint32_t b)
{
    uint32_t c = DCZ_LANE_COPIES - 1;
    while (c * w / DCZ_LANE_COPIES > b % w) c--;
    return b / w * DCZ_LANE_COPIES + c;
}
static inline uint32_t dcz_lanes_window_of(uint32_t b)
{
    return dcz_lanes_window_of_w(DCZ_LANE_W, b);
}
/* Floats of the scratch the vector kernel of lane form lrows takes for
 * the panels of the input of a matrix of cols columns and k codebook
 * values (0 without a lane form). */
uint64_t dcz_lanes_scratch_floats(uint32_t lrows, uint32_t cols, uint32_t k);
/* y rows of groups g0 .. g1 - 1 = act(S x + bias) (act NULL or op 0:
 * none), slot by slot, scalar, with fmaf: the specification of s's lane
 * form (the 8-row one: dcz_spmv_lanes8_ref). */
void dcz_spmv_lanes_ref(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                        const dcz_act *act, const float *x, float *y);
#if DCZ_BUILD_X86
/* The panels of x for s's lane form, in scratch (dcz_lanes_scratch_floats
 * floats): returns the first, 64-byte aligned. */
const float *dcz_lanes_panels__avx512(const dcz_sparse *s, const float *x, float *scratch);
/* dcz_spmv_lanes_ref with AVX-512, from x's panels: per step, one panel
 * loaded, two 16-lane window lookups in it (vpermt2ps), two codebook
 * lookups, two fused multiply-adds into two slices' sums; act applied as
 * the group's rows are stored. */
void dcz_spmv_lanes__avx512(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                            const dcz_act *act, const float *panels, float *y);
#endif

/* ---- the 8-row lane form (kernels_lanes8.c) --------------------------------
 * The lane form of CPUs with AVX2 and FMA but not AVX-512, for fully
 * connected codebook layers (any codebook size): eight rows in the lanes
 * of a vector, the weights held as floats (AVX2 has no one-instruction
 * lookup of 32 values).
 *
 * The rows are cut into groups of DCZ_LANE8_ROWS (8) consecutive rows. A
 * step of a group reads a window of DCZ_LANE8_W = 15 columns (window v
 * covers dcz_lanes_window_start_w(15, v) .. + 14: three shifted copies as
 * the 16-row form's) and gives each lane one slot: its row's next entry,
 * if its column lies in the window, as a weight lw[8 t + l] and a window
 * lane loff[8 t + l] (bits 0-2 the lane's low three bits, bit 7 its bit
 * 3), else weight 0 and lane 15, the panel's 0. Steps as the 16-row form's
 * greedy walk. Step j of a group is fused into the row's chain j mod 4,
 * chain 0 starting from the bias, and the row is (c0 + c1) + (c2 + c3).
 * Built where it pays: at most 65535 columns, no more steps than
 * DCZ_LANE8_STEPS_MAX (a quarter of the slots filled). */
#define DCZ_LANE8_ROWS 8
#define DCZ_LANE8_W 15
#define DCZ_LANE8_STEPS_MAX(nnz, rows) ((uint64_t)(nnz) / 2 + ((uint64_t)(rows) + 7) / 8)
/* The 8-row form's dcz_lanes_bytes, dcz_lanes_build and
 * dcz_lanes_scratch_floats, which call them. */
uint64_t dcz_lanes8_bytes(uint32_t rows, uint32_t cols, uint32_t nnz);
void dcz_lanes8_build(dcz_sparse *s, uint32_t nnz, void *mem);
uint64_t dcz_lanes8_scratch_floats(uint32_t cols);
/* "avx2" where this CPU runs dcz_spmv_lanes8__avx2 (AVX2 and FMA), else
 * NULL. */
const char *dcz_lanes8_variant(void);
/* y rows of groups g0 .. g1 - 1 = act(S x + bias), slot by slot, scalar,
 * with fmaf: the specification of the 8-row form. */
void dcz_spmv_lanes8_ref(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                         const dcz_act *act, const float *x, float *y);
#if DCZ_BUILD_X86
/* The panels of x for the 8-row form, in scratch: returns the first,
 * 32-byte aligned. */
const float *dcz_lanes8_panels__avx2(const dcz_sparse *s, const float *x, float *scratch);
/* dcz_spmv_lanes8_ref with AVX2 and FMA, from x's panels: per step a
 * window lookup (two vpermps and a blend) and a multiply-add into one of
 * four chains; act applied as the group's rows are stored. */
void dcz_spmv_lanes8__avx2(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                           const dcz_act *act, const float *panels, float *y);
#endif

/* ---- threads (threads.c): runtime/threads.h -------------------------------- */

/* Entries of a sparse fully connected layer from which its rows are split
 * over the threads: below it the hand-over costs more than it saves
 * (bench/bench_spmv.c, LeNet-300-100's 300 x 784 layer and the EIE layers,
 * one thread against two). */
#define DCZ_PARALLEL_MIN_ENTRIES 65536
/* Whether sparse layer s is split over the threads: its column form was
 * built in one block per thread (the loader does so from
 * DCZ_PARALLEL_MIN_ENTRIES real entries on), or, without a column form,
 * it has that many entries. */
static inline int dcz_sparse_split(const dcz_sparse *s)
{
    return s->col_ptr ? s->cblocks > 1 : s->entries >= DCZ_PARALLEL_MIN_ENTRIES;
}

/* The activations of a chunk of samples a segment of per-sample layers
 * runs at once (run.c, load.c plan_segments): within a core's second-level
 * cache (1 MB and up on the x86 and Arm cores of this decade). */
#define DCZ_CHUNK_BYTES (1u << 20)

/* A tensor of the graph: 0 the model input, j + 1 the output of layer j.
 * Activations live in one block of act_width floats a sample, each tensor
 * at its offset there, planned from the tensors' lifetimes (load.c): a
 * tensor's place is reused once its last reader has run on every sample
 * (the end of that reader's segment), so a chain of layers that each take
 * the whole batch uses two places, as a ping-pong pair would. A batch of b
 * samples keeps tensor t at act + off b, its samples one after the other.
 * A tensor written and last read within one segment run by chunks of
 * samples ("inner") lives in the chunk block instead, planned the same way
 * over the inner tensors: a chunk of n samples keeps it at cact + off n.
 * The model input stays where the caller has it (off unused). */
typedef struct dcz_tensor {
    dcz_shape shape;          /* one sample */
    uint32_t width;           /* elements of one sample */
    uint32_t last;            /* the last layer reading it; nlayers for the model output */
    uint32_t slot;            /* the tensor that opened the place it lives in (itself or
                                 an earlier one) */
    uint32_t busy;            /* of a tensor that opened a place: the last reader of the
                                 place's latest tenant */
    uint32_t share;           /* the input whose place it may take (the first input of an
                                 in-place op, dcz_op_info.in_place), 0 for none */
    uint64_t size;            /* of a tensor that opened a place: its floats a sample */
    uint64_t off;             /* floats a sample before its place in its block */
    uint8_t inner;            /* written and last read within one segment run by chunks:
                                 it lives in the chunk block, which holds a chunk */
    /* The segment of the layer writing it (run.c, "segments"): the first
     * and last layer of the run of layers a chunk of samples goes through
     * together, and, on the output of a segment's first layer, the samples
     * of a chunk (0: the whole batch at once). */
    uint32_t seg_first, seg_last;
    uint32_t chunk;
} dcz_tensor;

/* The model on a CUDA device (gpu.c; the CUDA backend only). */
typedef struct dcz_gpu dcz_gpu;

struct dcz_model {
    dcz_options opt;
    dcz_cpu cpu;              /* the CPU's features less those above opt.isa: the
                                 view its load and runs take (cpu/isa.h) */
    uint32_t threads;         /* column-form blocks and spmm scratch tiles; 1 for static models */
    dcz_pool *pool;           /* threads - 1 workers when a layer is worth splitting, or NULL */
    uint32_t in_rank, in_dims[DCZ_MAX_RANK];
    uint32_t in_size, out_size;
    uint32_t max_width;       /* elements of the largest activation of one sample */
    uint32_t nlayers;
    dcz_exec_layer *layers;   /* (nlayers), inside block */
    dcz_tensor *tensors;      /* (nlayers + 1), inside block */
    uint64_t act_width;       /* floats a sample of the activation block */
    uint64_t chunk_width;     /* floats a sample of the chunk block (the inner tensors) */
    uint32_t chunk_max;       /* the largest chunk of a segment (run.c) */
    void *block;              /* everything loaded, one allocation; NULL when fixed */
    int keep_acc;             /* a tap reads each weighted layer's accumulators (dcz_run_tapped):
                                 no kernel may fuse them away */
    int fuse;                 /* this run applies fused activations (no tap reads the
                                 outputs between, no reference kernels forced) */
    int fixed;                /* dcz_open_static: everything lives in the caller's arena,
                                 act and qacc hold act_batch samples and never grow */
    float *scratch;           /* (scratch_floats) for im2col layers, dcz_spmm's tile and
                                 the lane form's panels of the input, inside block */
    uint64_t scratch_floats;
    float *act;               /* the activation block: act_width * act_batch floats */
    size_t act_batch;
    float *cact;              /* the chunk block: chunk_width * cact_batch floats */
    size_t cact_batch;
    dcz_scheme scheme;        /* DCZ_SCHEME_NONE: every layer in float */
    int32_t qmax;             /* the scheme's integer range */
    uint32_t q_first, q_last; /* the integer region: layers from the first weighted one
                                 to the last */
    uint32_t q_in;            /* the region's float input: the first weighted layer's */
    float *t_scale;           /* (nlayers + 1) scale of each tensor of the region, 0 off it */
    int64_t *qacc;            /* accumulators, max_width * act_batch, then as many
                                 dcz_q for the quantized input of the integer segment */
    dcz_gpu *gpu;             /* the device copy dcz_run runs when on a GPU, else NULL */
    char device_note[192];    /* why a GPU was looked for and not used ("" otherwise) */
};

/* Memory of a model being loaded: sized by a walk with base NULL, then
 * filled by the same walk into one block (load.c): a malloc'd block, or
 * the caller's arena from its first DCZ_ARENA_ALIGN boundary. */
typedef struct dcz_arena {
    uint8_t *base;   /* NULL while sizing */
    size_t used;
    int overflow;
} dcz_arena;

/* bytes at a DCZ_ARENA_ALIGN boundary of the block (NULL while sizing) */
void *dcz_arena_take(dcz_arena *a, uint64_t bytes);
/* bytes at a 64-byte boundary of memory (a cache line), wherever the block
 * lies: for the operands whose rows a kernel reads by whole vectors, which
 * would otherwise straddle two lines each (NULL while sizing) */
void *dcz_arena_take_line(dcz_arena *a, uint64_t bytes);

/* The requantization constants of a scale ratio M > 0: M ~ mult 2^-shift
 * with mult < 2^31 and shift <= 62; mult is odd unless shift is 0 (a power
 * of two becomes a pure shift or a pure multiply); for M below 2^-31 the
 * mantissa keeps the bits a 62-bit shift allows (mult may become 0). M = 0
 * gives 0, 0. DCZ_ERR_UNSUPPORTED for M >= 2^31, DCZ_ERR_FORMAT for M < 0
 * or NaN. docs/FORMAT.md ("Integer execution") states the same steps. */
dcz_status dcz_requant_params(double M, int32_t *mult, uint8_t *shift);

/* Builds the integer form of a weighted layer whose float form the loader
 * has made (l->w for dense weights, l->sp for sparse ones) from its weight
 * tensor view and calibration entry e (qload.c): the weight scales, the
 * integer weights (dense weights become a sparse form with every entry),
 * sized while a->base is NULL. DCZ_ERR_FORMAT when e does not fit the layer
 * or an integer tensor's scales differ from e's. */
dcz_status dcz_qload_weights(dcz_arena *a, uint32_t scheme, const dcz_tensor_view *w,
                             const dcz_calib_entry *e, dcz_exec_layer *l);
/* After every layer is loaded: the scale of every tensor of the integer
 * region (from the table's ntscales tensor scales, little-endian f32, or
 * with tscales NULL derived along a chain), then per layer of the region
 * the constants of its op's scale rule (dcz_qscale): biases in accumulator
 * units and requantization of weighted layers, input multipliers,
 * activation tables; the last weighted layer's dequantization. Marks the
 * region. DCZ_ERR_FORMAT for a scale that breaks a rule (docs/FORMAT.md)
 * or SOFTMAX on the region, DCZ_ERR_UNSUPPORTED for an op without integer
 * kernel, a sum that could leave the accumulator's range, a region that
 * reads a float tensor other than its first layer's input or whose inner
 * tensors are read after it, or a graph without tensor scales. */
dcz_status dcz_qload_finish(dcz_model *m, const uint8_t *tscales, uint32_t ntscales);

/* ---- scalar reference kernels ------------------------------------------- */
/* (the dense matrix product: runtime/cpu/f32/gemm.h) */

/* y (batch, out) = x (batch, in) W^T + bias; W (out, in) row-major. */
void dcz_dense_f32_ref(const float *w, const float *bias, const float *x, size_t batch,
                       uint32_t in, uint32_t out, float *y);
/* The same, vectorized (kernels_dense.c): each output's dot product split
 * over vector lanes, so within rounding of the reference, and the same
 * bits for a sample at any batch. dcz_dense_f32 runs the best variant of
 * this machine (the reference where there is none); dcz_dense_f32_isa the
 * one asked for, returning 0 (nothing written) when this build or machine
 * lacks it. */
void dcz_dense_f32(const float *w, const float *bias, const float *x, size_t batch, uint32_t in, uint32_t out,
                   float *y);
int dcz_dense_f32_isa(dcz_isa isa, const float *w, const float *bias, const float *x, size_t batch, uint32_t in,
                      uint32_t out, float *y);
/* The variant dcz_dense_f32 runs here ("avx2", "neon"), NULL: the reference. */
const char *dcz_dense_f32_variant(void);
/* The integer product of the 8-bit schemes: C (m, n) int64 = bias_m + A B
 * where A (m, k2) and B (k2, n) hold int32 pairs of int16 (the first of a
 * pair in the low half): each output adds, over p, a's pair times b's pair
 * (two products). The vector variants (AVX-512BW, AVX2: vpmaddwd) sum in
 * 32 bits, so every sum, the bias included, must fit 32 bits, which the
 * loader checks for the 8-bit schemes; then all give the same integers.
 * ldb and B's padding as dcz_gemm_f32's. */
void dcz_qgemm_ref(size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b, size_t ldb,
                   const int64_t *bias_m, int64_t *c, size_t ldc);
void dcz_qgemm(size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b, size_t ldb,
               const int64_t *bias_m, int64_t *c, size_t ldc);
int dcz_qgemm_isa(dcz_isa isa, size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b,
                  size_t ldb, const int64_t *bias_m, int64_t *c, size_t ldc);
const char *dcz_qgemm_variant(void);
/* y (out) = S x (in) + bias, batch 1. */
void dcz_spmv_ref(const dcz_sparse *s, const float *bias, const float *x, float *y);
/* y (batch, out) = x (batch, in) S^T + bias, every entry decoded once per row. */
void dcz_spmm_ref(const dcz_sparse *s, const float *bias, const float *x, size_t batch,
                  float *y);
void dcz_relu_ref(float *x, size_t n);
/* y (n) = ReLU of x (n), vectorized (kernels_simd.c), the reference's bits;
 * y may be x. dcz_relu_isa: the variant of isa, 0 when missing. */
void dcz_relu(const float *x, size_t n, float *y);
int dcz_relu_isa(dcz_isa isa, const float *x, size_t n, float *y);
/* CLIP (ReLU6 and kin) in vectors, the bits of dcz_activation_ref's (AVX2,
 * NEON; y may be x); dcz_clip_isa: the variant of isa, 0 when missing. */
void dcz_clip(float lo, float hi, const float *x, size_t n, float *y);
int dcz_clip_isa(dcz_isa isa, float lo, float hi, const float *x, size_t n, float *y);
/* act (NULL or op 0: none; ReLU or CLIP) over y (n) in place, by dcz_relu
 * or dcz_clip: the bits of dcz_act_one. */
void dcz_act_apply(const dcz_act *act, float *y, size_t n);
/* ADD in vectors, then act (NULL or op 0: none; ReLU or CLIP): the bits
 * of dcz_add_ref and the activation's reference after it (AVX2, NEON; y
 * may be a or b); dcz_add_isa: the variant of isa, 0 when missing. */
void dcz_add(const float *a, const float *b, size_t n, const dcz_act *act, float *y);
int dcz_add_isa(dcz_isa isa, const float *a, const float *b, size_t n, const dcz_act *act, float *y);

/* y (n) = a + b. */
void dcz_add_ref(const float *a, const float *b, size_t n, float *y);
/* y (batch, channels, plane) = x times f (batch, channels), each factor
 * over its channel's plane (plane 1: elementwise). */
void dcz_mul_ref(const float *x, const float *f, size_t batch, uint32_t channels, uint32_t plane,
                 float *y);
/* y (batch, sum of width) = x[0] .. x[nin - 1] (batch, width[k]) side by
 * side, sample by sample: a concatenation on the channels of (C, H, W) or
 * (n) samples. */
void dcz_concat_ref(const float *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                    float *y);

/* ---- optimized matrix kernels (kernels_simd.c) ----------------------------
 * They compute what dcz_spmv_ref and dcz_spmm_ref compute, in the same
 * order (bias first, then each product w * x rounded and added in column
 * order), so they give the references' bits and a sample gives the same
 * bits at any batch (but for the lane form, which fuses the products into
 * the sums: see above); the one exception is the sign of a zero: a column
 * skipped for its zero input leaves a sum of -0 at -0 where the reference
 * adds +0 to it. The variants can be called directly where
 * dcz_isa_supported says so; they return 0 when they decline (then nothing
 * was written) and 1 when done. */
/* dcz_isa and dcz_isa_supported: tool.h */
/* The family dcz_spmm dispatches to on this machine. */
dcz_isa dcz_isa_best(void);

/* Samples of x one dcz_spmm tile holds, transposed in its scratch. */
#define DCZ_SPMM_TILE 32
/* Floats of the scratch dcz_spmm needs for a matrix of rows x cols (or
 * any rows of it). */
uint64_t dcz_spmm_scratch_floats(uint32_t rows, uint32_t cols);
/* The batch-1 kernels, and the choice among them for one input. */
typedef enum dcz_spmv_kind {
    DCZ_SPMV_REF,       /* dcz_spmv_ref (rows split over parts) */
    DCZ_SPMV_COLUMNS,   /* the column form: dcz_spmv_csc, one block per part */
    DCZ_SPMV_LANES      /* the lane form: dcz_spmv_lanes__avx512, groups split over parts */
} dcz_spmv_kind;
/* Cost of one lane-form step in column-kernel entries (an entry whose
 * input is nonzero), as bench/bench_spmv.c measures the two kernels: a step
 * fills 32 slots with one panel and two lookups of each kind, the column
 * kernel pays a read-modify-write of y per entry (LeNet-300-100 fc1, 1110
 * steps: 1.7 us by lanes, 13.0 us by columns with every input nonzero, a
 * step 2.2 entries; fc2 1.7, fc3 1.3, where fewer rows make an entry
 * dearer). */
#define DCZ_LANE_STEP_ENTRIES 2
/* The same for a step of the 8-row form, in eighths of an entry. */
#define DCZ_LANE8_STEP_EIGHTHS 12
/* The kernel for input x: the lane form when s has one, this CPU runs it
 * and its steps cost less than the entries the column kernel would visit
 * (estimated from the share of nonzero inputs); else the column form when
 * s has one; else the reference. */
dcz_spmv_kind dcz_spmv_pick(const dcz_sparse *s, const float *x);
/* The input's form kernel kind reads: for LANES on a CPU with AVX-512, x's
 * panels in scratch (dcz_lanes_scratch_floats floats); otherwise x. */
const float *dcz_spmv_input(const dcz_sparse *s, dcz_spmv_kind kind, const float *x,
                            float *scratch);
/* Part `part` of `parts` of y = S x + bias by kernel kind (COLUMNS needs
 * parts == s->cblocks), xin being dcz_spmv_input's form of x, then act
 * (NULL or op 0: none) on the part's rows, fused into the lane kernel's
 * stores. Parts write disjoint rows and sum each row in the same order, so
 * any split gives the same bits. */
void dcz_spmv_part(const dcz_sparse *s, dcz_spmv_kind kind, uint32_t part, uint32_t parts,
                   const float *bias, const dcz_act *act, const float *xin, float *y);
/* y = S x + bias by kernel kind over the threads of pool (NULL: the caller
 * alone), xin being dcz_spmv_input's form of x: dcz_spmv_part's parts, the
 * column form's blocks or about eight rows or lane groups per thread,
 * taken as the threads come, so a thread on a busier core takes fewer.
 * Any thread may run any part, so the bits do not depend on which. */
void dcz_spmv_pool(dcz_pool *pool, const dcz_sparse *s, dcz_spmv_kind kind, const float *bias,
                   const dcz_act *act, const float *xin, float *y);
/* y (batch, out) = x (batch, in) S^T + bias over the threads of pool (NULL:
 * the caller alone), as dcz_spmm computes it. Each tile of DCZ_SPMM_TILE
 * samples is transposed once into part 0 of scratch, its columns cut into
 * chunks; then the rows are cut into chunks, each run on that tile with
 * the sums of the taking thread t in part t (scratch + t part_floats;
 * part_floats at least dcz_spmm_scratch_floats). Chunks are taken as the
 * threads come, about eight per thread (one when the caller runs alone),
 * so a thread on a busier core takes fewer; rows are disjoint and sum in one order, so the bits do not depend
 * on the threads. scratch NULL: the reference's rows. */
void dcz_spmm_pool(dcz_pool *pool, const dcz_sparse *s, const float *bias, const float *x,
                   size_t batch, float *y, float *scratch, uint64_t part_floats);
/* y (out) = S x (in) + bias, batch 1, by dcz_spmv_pick's kernel, all parts;
 * scratch for the lane form's panels (dcz_lanes_scratch_floats floats), or
 * NULL, which leaves the lane form out. */
void dcz_spmv(const dcz_sparse *s, const float *bias, const float *x, float *y, float *scratch);
/* Rows of block `block` of s's column form (see dcz_sparse). */
void dcz_sparse_block_rows(const dcz_sparse *s, uint32_t block, uint32_t *r0, uint32_t *r1);
/* y rows of column block `block` from the column form: every column whose
 * input is nonzero adds its entries' products to their rows (a codebook of
 * up to 16 values is first multiplied by the input once per column). Plain
 * C: the same code on every machine. */
void dcz_spmv_csc(const dcz_sparse *s, uint32_t block, const float *bias, const float *x,
                  float *y);
/* y (batch, out) = x (batch, in) S^T + bias; scratch of
 * dcz_spmm_scratch_floats floats, or NULL for dcz_spmm_ref. Rows r0 .. r1 - 1 only for _rows. */
void dcz_spmm(const dcz_sparse *s, const float *bias, const float *x, size_t batch, float *y,
              float *scratch);
void dcz_spmm_rows(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch);
#if DCZ_BUILD_X86
int dcz_spmm__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch);
#elif DCZ_BUILD_NEON
int dcz_spmm__neon(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch);
#endif
/* dcz_spmm_ref on rows r0 .. r1 - 1 of y only. */
void dcz_spmm_ref_rows(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                       const float *x, size_t batch, float *y);
/* in-place softmax over each of batch rows of width n */
void dcz_softmax_ref(float *x, size_t batch, size_t n);

/* ---- convolution and pooling (kernels_conv.c) ---------------------------
 * x (batch, in_c, in_h, in_w) and y (batch, out_c, out_h, out_w), C order. */

/* The specification: y = conv(x, w) + bias by seven plain loops, taps in
 * the padding skipped. w (out_c, in_c, kh, kw); bias (out_c) or NULL. */
void dcz_conv2d_direct_ref(const dcz_conv_geom *g, const float *w, const float *bias,
                           const float *x, size_t batch, float *y);
/* The same on dense weights, one output row at a time: each weight adds
 * itself times a shifted input row to an output row. What the runtime runs
 * for dense-weight convolutions. */
void dcz_conv2d_dense(const dcz_conv_geom *g, const float *w, const float *bias,
                      const float *x, size_t batch, float *y);
/* Direct sparse convolution on the execution form s (out_c, in_c kh kw):
 * for each output channel, each stored weight (ic, ky, kx, w) adds w times
 * the shifted input plane ic to the output plane, for every sample. What the
 * runtime runs for most sparse convolutions (dcz_conv2d_pick_im2col). */
void dcz_conv2d_sparse_direct(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                              const float *x, size_t batch, float *y);
/* Both on the variant of isa (DCZ_ISA_REF: scalar rows; the vector ones
 * take 8 or 4 outputs of a row at once, stride 1, and give the same bits);
 * 0 when this build or machine has none. The two above run the best. */
int dcz_conv2d_dense_isa(dcz_isa isa, const dcz_conv_geom *g, const float *w, const float *bias,
                         const float *x, size_t batch, float *y);
int dcz_conv2d_sparse_direct_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                                 const float *x, size_t batch, float *y);
/* The vector variant the two run here ("avx2", "neon"), or NULL. */
const char *dcz_conv2d_variant(void);
/* The alternative: im2col of each sample into (out_h out_w, in_c kh kw),
 * then dcz_spmm (dcz_spmm_ref when ref) with the output pixels as its
 * batch, then a transpose into (out_c, out_h, out_w). scratch holds
 * dcz_conv2d_im2col_floats(g). What the runtime runs on small output
 * planes. */
void dcz_conv2d_sparse_im2col(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                              const float *x, size_t batch, int ref, float *scratch, float *y);
/* Floats of scratch dcz_conv2d_sparse_im2col needs (per call, any batch),
 * dcz_spmm's tile included. */
uint64_t dcz_conv2d_im2col_floats(const dcz_conv_geom *g);
/* Nonzero when the runtime should run a sparse convolution of geometry g
 * by im2col rather than directly: output rows shorter than
 * DCZ_CONV_DIRECT_MIN_W, where direct pays a loop per short row, and scratch
 * of at most DCZ_CONV_SCRATCH_MAX floats (kernels_conv.c has the numbers). */
#define DCZ_CONV_DIRECT_MIN_W 8
#define DCZ_CONV_SCRATCH_MAX (1u << 22)
int dcz_conv2d_pick_im2col(const dcz_conv_geom *g);
/* Dense weights: each sample's patches laid out by dcz_im2col_k (a 1 x 1
 * convolution at stride 1 without padding whose planes are whole vectors
 * reads the input itself: its patches are the input), then the weights
 * (out_c, in_c kh kw) times them by dcz_gemm_f32 (its reference when ref),
 * straight into the output planes; scratch of dcz_conv2d_im2col_floats
 * floats. A sample gives the same bits at any batch, and on every variant
 * the reference's. The runtime takes it for every ungrouped dense
 * convolution whose patches take at most DCZ_CONV_SCRATCH_MAX floats
 * (dcz_conv2d_pick_dense_im2col). dcz_conv2d_dense_im2col_act: then act
 * (NULL or op 0: none) on each output, by dcz_gemm_f32_act. */
void dcz_conv2d_dense_im2col(const dcz_conv_geom *g, const float *w, const float *bias, const float *x,
                             size_t batch, int ref, float *scratch, float *y);
void dcz_conv2d_dense_im2col_act(const dcz_conv_geom *g, const float *w, const float *bias, const float *x,
                                 size_t batch, int ref, const dcz_act *act, float *scratch, float *y);
int dcz_conv2d_pick_dense_im2col(const dcz_conv_geom *g);
/* w (rows, cols) = the matrix s stores, 0 where it stores nothing. */
void dcz_sparse_expand(const dcz_sparse *s, float *w);
/* A sparse convolution of nnz stored weights runs faster expanded to dense
 * weights by dcz_conv2d_dense_im2col than by its sparse kernels from this
 * density on: the dense product does 6 to 20 times the multiply-adds per
 * second of dcz_conv2d_sparse_direct (bench/bench_conv.c: 16 -> 16
 * channels over 28 x 28 break even near 15%, 32 -> 64 and wider near 5%).
 * dcz_conv2d_pick_expand: ungrouped, its patches within the scratch cap, and
 * at least that dense. */
#define DCZ_CONV_DENSE_MIN_DENSITY 0.10
int dcz_conv2d_pick_expand(const dcz_conv_geom *g, uint64_t nnz);
/* ---- Winograd's F(2x2, 3x3): runtime/cpu/f32/wino.h ---------------------- */

/* ---- the shift form (f32/kernels_shift.c, q8/kernels_qshift.c) --------------
 * dcz_shift: see above. */
/* The channels a block of the shift form of a convolution of geometry g
 * and nnz stored weights: 1, 2 or 4 by a cost model of the kernel. */
uint32_t dcz_shift_pick_block(const dcz_conv_geom *g, uint64_t nnz);
/* Taps (at most) and bytes of the shift form of g in blocks of ob
 * channels, nnz stored weights. */
uint64_t dcz_shift_taps_bound(const dcz_conv_geom *g, uint64_t nnz, uint32_t ob);
uint64_t dcz_shift_bytes(const dcz_conv_geom *g, uint64_t nnz, uint32_t ob);
/* f = the shift form of a convolution of geometry g in blocks of ob
 * channels (grouped: ob divides out_c / group, so a block stays within a
 * group), in mem (dcz_shift_bytes, 4-byte aligned), from its execution
 * form s, or when s is NULL from its dense weights w (out_c, in_c / group,
 * kh, kw), every one stored. */
void dcz_shift_build(const dcz_conv_geom *g, const dcz_sparse *s, const float *w, uint32_t ob, void *mem,
                     dcz_shift *f);
/* Floats of scratch dcz_conv2d_shift needs (per call, any batch): the
 * split input and the output planes as computed. */
uint64_t dcz_shift_scratch_floats(const dcz_conv_geom *g);
/* y = the convolution: per sample, the split input, then each output
 * plane as the sum of the split input shifted by each stored weight's
 * offset times the weight (bias first, then each product fused into the
 * sum in column order: the bits of dcz_conv2d_dense_im2col on the weights
 * expanded, finite inputs), on the best vector variant or the scalar
 * reference (ref). dcz_conv2d_shift_isa runs the variant of isa
 * (DCZ_ISA_REF: the reference), 0 when this build or machine has none. */
void dcz_conv2d_shift(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                      size_t batch, int ref, float *scratch, float *y);
int dcz_conv2d_shift_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                         const float *x, size_t batch, float *scratch, float *y);
/* The vector variant dcz_conv2d_shift runs here ("avx512", "avx2",
 * "neon"), or NULL. */
const char *dcz_conv2d_shift_variant(void);
/* "rows", "plane" or "lanes" (channels in the lanes): the depthwise
 * kernel that runs g on the shift form f straight from the input
 * (kernels_shift.c), or NULL where the shift form itself runs it. */
const char *dcz_conv2d_shift_depthwise(const dcz_conv_geom *g, const dcz_shift *f);
/* dcz_conv2d_shift on the best variant, then what the layers after it
 * leave to it: a residual res (NULL for none) added to every output, the
 * bits of dcz_add over the convolution's output and res, then act (op 0:
 * none), the bits of dcz_relu or dcz_clip run over that. res (batch, out_c,
 * out_h, out_w) may be y itself, not x. dcz_conv2d_shift_act_isa on the
 * variant of isa (DCZ_ISA_REF: the references), 0 where missing. */
void dcz_conv2d_shift_act(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const float *x,
                          size_t batch, const dcz_act *act, const float *res, float *scratch, float *y);
int dcz_conv2d_shift_act_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                             const float *x, size_t batch, const dcz_act *act, const float *res, float *scratch,
                             float *y);
/* Whether dcz_conv2d_shift_act on this CPU adds the residual as its
 * kernel stores the sums (AVX-512, not the depthwise kernels), rather than
 * as a slower generic path copies them out. */
int dcz_conv2d_shift_res_fuses(const dcz_conv_geom *g, const dcz_shift *f);
/* Nonzero when a float convolution of geometry g and nnz stored weights
 * should run on its shift form: its scratch within DCZ_CONV_SCRATCH_MAX,
 * and either the dense product cannot run it (grouped, or patches past the
 * cap) or the shift kernel's taps (in its blocks' cost, over the output
 * plane as computed) take less time than the dense product's multiply-adds
 * of 16 lanes (over the plane in whole vectors, as it runs). The costs of
 * a tap and of a multiply-add are measured per instruction set
 * (kernels_shift.c, shift_costs). */
int dcz_conv2d_pick_shift(const dcz_conv_geom *g, uint64_t nnz);
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
 * copied rows form writes its copies to copies (dcz_qamx_copy_cells). dcz_qamx_cost: the time of a sample
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
 * column stride 1: a cell four columns of it; kernels_shift.c). */
int dcz_qshift_col_quads(const dcz_conv_geom *g);
int dcz_amx_ready(void);
uint64_t dcz_qamx_bytes(const dcz_conv_geom *g);
/* Cells of the copies the copied rows form makes of the input for g (its
 * taps at toff, out16 cells a plane as computed), 0 where its tiles take
 * another form. */
uint64_t dcz_qamx_copy_cells(const dcz_conv_geom *g, const uint32_t *toff, size_t out16);
void dcz_qamx_build(const dcz_conv_geom *g, const dcz_qsparse *s, void *mem, dcz_qshift *f);
void dcz_qamx_planes(const dcz_qshift *f, const dcz_conv_geom *g, const uint32_t *toff, size_t qstride,
                     size_t out16, const uint8_t *xs, uint8_t *copies, int32_t *t);
double dcz_qamx_cost(const dcz_conv_geom *g, size_t out16);
/* The integer split of sample x (kernels_shift.c) by each vector variant
 * this CPU runs, against the scalar one: the number of variants that gave
 * its bytes, -1 at the first that did not; a and b hold
 * dcz_qshift_scratch_floats(g) floats each. For the tests. */
int dcz_qsplit_check(const dcz_conv_geom *g, const dcz_q *x, uint8_t *a, uint8_t *b);
/* Whether dcz_qconv2d_shift_requant runs f by the depthwise kernel
 * (f->dw set and this CPU has AVX-512 VBMI and VNNI). */
int dcz_qshift_depthwise(const dcz_qshift *f);

/* col (out_h out_w, in_c kh kw): row p is the receptive field of output
 * pixel p in (ic, ky, kx) order, 0 where it falls in the padding. */
void dcz_im2col(const dcz_conv_geom *g, const float *x, float *col);
/* col (in_c kh kw, ldb): row (ic, ky, kx) holds, for every output pixel,
 * the input it multiplies by that weight, 0 in the padding; columns from
 * out_h out_w to ldb are 0. */
/* The output columns ox whose input column ox sw + kx - pw is inside the
 * image: lo .. hi - 1 (an empty range when none). */
void dcz_conv_inside_cols(const dcz_conv_geom *g, uint32_t kx, uint32_t *lo, uint32_t *hi);
void dcz_im2col_k_ref(const dcz_conv_geom *g, const float *x, float *col, size_t ldb);
/* The same, whole planes at a time where stride 1 keeps the width (else
 * the reference). */
void dcz_im2col_k(const dcz_conv_geom *g, const float *x, float *col, size_t ldb);

/* Geometry shared by the float and integer convolutions and pools
 * (kernels_conv.c; integer arithmetic only). A tap is one kernel offset k
 * along one axis: it touches the output positions o in [lo, hi) whose input
 * o * stride + k - pad lies inside the image; first is the input position of
 * o = lo. Computed once per call, so the inner loops test no bounds. */
typedef struct dcz_conv_tap {
    uint32_t lo, hi, first;
} dcz_conv_tap;
/* ty (kh) and tx (kw): the taps of every kernel offset of g */
void dcz_conv_taps(const dcz_conv_geom *g, dcz_conv_tap *ty, dcz_conv_tap *tx);
/* The input cells [lo, hi) of pooling window o along an axis of n cells
 * (never empty: the padding is smaller than the window). */
void dcz_window_cells(uint32_t o, uint32_t stride, uint32_t pad, uint32_t k, uint32_t n,
                      uint32_t *lo, uint32_t *hi);

/* Max over each window's cells inside the input (padding never wins). */
void dcz_maxpool_ref(const dcz_conv_geom *g, const float *x, size_t batch, float *y);
/* The same, the interior columns of each row in vector lanes (AVX-512;
 * the reference's bits, NaN and signed zeros included); dcz_maxpool_isa
 * runs the variant of isa (DCZ_ISA_REF: interior rows by scalar loops), 0
 * when this build or machine has none. */
void dcz_maxpool(const dcz_conv_geom *g, const float *x, size_t batch, float *y);
int dcz_maxpool_isa(dcz_isa isa, const dcz_conv_geom *g, const float *x, size_t batch, float *y);
/* The interior columns of a pool (or convolution) g, whose windows lie
 * inside the image across: lo .. hi - 1, ox sw - pw >= 0 and
 * ox sw - pw + kw <= in_w (an empty range when none). */
void dcz_pool_interior_cols(const dcz_conv_geom *g, uint32_t *lo, uint32_t *hi);
/* Mean over each window: divided by kh kw when count_include_pad, else by
 * the number of its cells inside the input. */
void dcz_avgpool_ref(const dcz_conv_geom *g, int count_include_pad, const float *x,
                     size_t batch, float *y);
/* y (batch, channels) = mean of each of the channels planes of plane floats. */
void dcz_global_avgpool_ref(uint32_t channels, uint32_t plane, const float *x, size_t batch,
                            float *y);
/* The same bits, eight channels at a time in AVX2 (kernels_conv.c). */
void dcz_global_avgpool(uint32_t channels, uint32_t plane, const float *x, size_t batch, float *y);

/* ---- integer execution (calibrated models; kernels_int.c) ----------------
 * A calibrated model runs its weighted layers on integers: activations are
 * dcz_q lanes holding values of the scheme's width (-127..127 for the 8-bit
 * schemes, -32767..32767 for fixed16), weights are integers of the same
 * range, products are summed in 64-bit accumulators (for the 8-bit schemes
 * every sum fits 32 bits, which the loader checks, so 32-bit lanes give the
 * same bits), and each output channel is requantized to the next layer's
 * activation scale by an integer multiply and a rounding shift. Nothing in
 * kernels_int.c touches a float; tests/unit/test_qkernels.c compares every
 * kernel with its reference bit for bit, and the Makefile builds the file a
 * second time with floating point disabled to prove it. */

/* floor((v + 2^(shift-1)) / 2^shift): v / 2^shift rounded half up, without
 * relying on the sign behaviour of >>. shift 0 returns v. */
int64_t dcz_round_shift(int64_t v, unsigned shift);

/* Requantization of output channel c: y = clamp(round_shift(acc * mult[c],
 * shift[c]), -qmax, qmax). The loader keeps |acc * mult| below 2^62 where
 * shift > 0; with shift 0 a product past the range only saturates. */
typedef struct dcz_requant {
    const int32_t *mult;      /* (channels), >= 0 */
    const uint8_t *shift;     /* (channels), <= 62 */
    int32_t qmax;             /* 127 or 32767 */
} dcz_requant;

/* acc (batch, rows) = x (batch, cols) S^T + bias; bias (rows) or NULL.
 * Reference: each sample on its own, entries decoded per sample. */
void dcz_qspmm_ref(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                   int64_t *acc);
/* The same, each entry decoded once for all samples; on codebook rows with
 * more entries than codebook values, inputs are first summed per codebook
 * value and multiplied once per value (exact in integers). */
void dcz_qspmm(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
               int64_t *acc);

/* The 8-bit schemes on 32-bit sums (kernels_qsimd.c): dcz_qspmm's result
 * for a model the loader admitted with qmax 127 (every sum within 32 bits),
 * batches of half a tile or more by vector tiles (16 samples; 32 on
 * AVX-512) in scratch (of dcz_qspmm8_scratch_floats(cols) floats), or
 * on AVX-512 by s's integer lane form when it has one.
 * dcz_qspmm8_isa runs the variant of isa (DCZ_ISA_REF: one sample at a
 * time); 0 when this build or machine has none. */
uint64_t dcz_qspmm8_scratch_floats(uint32_t cols);
void dcz_qspmm8(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, int16_t *scratch,
                int64_t *acc);
int dcz_qspmm8_isa(dcz_isa isa, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                   int16_t *scratch, int64_t *acc);
/* The vector variant dcz_qspmm8 runs here, with its tile ("avx512 tiles
 * of 32 samples", "avx2 ...", "neon ..."), or NULL. */
const char *dcz_qspmm8_variant(void);

/* ---- the integer lane form (kernels_qlanes.c) -------------------------------
 * The float lane form's idea (above) for the 8-bit schemes, where a weight
 * is a byte and two products fit one multiply-add of 16-bit pairs: sixteen
 * rows in the 32-bit lanes of one vector, each lane summing two entries of
 * its row a step, the input read from a window of it held in a register.
 *
 * The rows are cut into slices of 16 consecutive rows, lane l of slice s
 * being row 16 s + l; a slice is a sequence of steps, lstart[s] ..
 * lstart[s + 1] - 1. In step t, the slice reads window lbase[t] of
 * DCZ_LANE_W = 31 columns (window v covers dcz_lanes_window_start(v) ..
 * + 30: the windows start every 10 or 11 columns), and lane l the two
 * 16-bit slots of lslot[16 t + l], low one first: the next entry of its
 * row whose column lies in the window, as (column - start) | weight << 8,
 * the weight a signed byte, else 31, "no entry" (weight 0). The vector
 * kernel reads a window as one aligned panel of 32 inputs whose last is 0,
 * so an empty slot adds 0 x 0.
 *
 * Steps (dcz_qlanes_build, a greedy walk): the window is the latest to
 * start at or before the smallest column among the lanes' next entries;
 * every lane takes up to two of its next entries that lie in it.
 *
 * The form of byte quads (lbytes 1) has the same slices and walk, with
 * wider windows and four entries a lane a step, for CPUs that permute
 * bytes and multiply-add byte quads (AVX-512 VBMI and VNNI): window v
 * covers the DCZ_QLANE8_W = 64 columns from DCZ_QLANE8_STRIDE v, and step
 * t holds 32 words at lslot[32 t]: lane l's four column offsets in window
 * (bytes of word l, its next entries in column order, 0 where it has
 * none) and their weights (signed bytes of word 16 + l, 0 where none).
 * The kernel reads the inputs as unsigned bytes, x + 128 (an 8-bit scheme's
 * inputs lie within +-127), and starts each row's sum at lcorr, -128 times
 * its weights' sum, which takes the offset back out. On random entries at
 * 8% density (LeNet-300-100 fc1) a step fills 64% of its 64 slots against
 * 55% of 32 for the form of pairs: 457 steps against 1060.
 *
 * The form of 8-row quads (DCZ_QLANE_QUADS8) is the one of CPUs with AVX2
 * but not AVX-512, whose byte shuffle (vpshufb) reads 16 bytes: slices of
 * 8 rows, lane l of slice s being row 8 s + l; step t's window covers the
 * DCZ_QLANE_Q8_W = 32 columns from column lbase[t] itself (the smallest
 * column among the lanes' next entries; the kernel shuffles each half of
 * it and blends the two by bit 4 of the offset), and it holds 16 words at
 * lslot[16 t]: lane l's four column offsets in the window (bytes of word
 * l, 0 where none) and their weights (signed bytes of word 8 + l, 0 where
 * none). The kernel reads the inputs as signed bytes and multiplies their
 * magnitudes by the weights carrying their signs (vpmaddubsw: each pair
 * of products within 2 x 128 x 127, no saturation); no lcorr. On the same
 * 8% matrix a step fills 54% of its 32 slots: 1092 steps (16-column
 * windows: 1786).
 *
 * Each form is built for weights within +-127 and at most 65535 columns,
 * and given up when the walk needs more steps than DCZ_QLANE_STEPS_MAX
 * (each form takes 8 bytes a weight at most). Sums are exact in 32 bits (the
 * loader's bound; the byte form's are exact modulo 2^32, and so is its
 * offset), so the kernels give dcz_qspmm_ref's bits whatever the order.
 */
typedef enum dcz_qlane_form {
    DCZ_QLANE_PAIRS,    /* 16 rows, two entries a lane a step, 31-column windows (AVX-512 BW) */
    DCZ_QLANE_QUADS,    /* 16 rows, four entries, 64-column windows (AVX-512 VBMI and VNNI) */
    DCZ_QLANE_QUADS8,   /* 8 rows, four entries, 16-column windows (AVX2) */
    DCZ_QLANE_FORMS
} dcz_qlane_form;
#define DCZ_QLANE_ROWS(form) ((form) == DCZ_QLANE_QUADS8 ? 8u : 16u)
/* 8 bytes a weight at most: a step of pairs holds 64 bytes, of quads 128,
 * of the 8-row quads 64 */
#define DCZ_QLANE_STEPS_MAX(nnz, rows, form) \
    ((uint64_t)(nnz) / ((form) == DCZ_QLANE_QUADS ? 16 : 8) + \
     ((uint64_t)(rows) + DCZ_QLANE_ROWS(form) - 1) / DCZ_QLANE_ROWS(form))
#define DCZ_QLANE8_W 64
#define DCZ_QLANE8_STRIDE 16
#define DCZ_QLANE_Q8_W 32
/* Bytes of the lane form of a rows x cols matrix of nnz entries (its most:
 * the steps' bound, any form), 0 when it cannot have one. */
uint64_t dcz_qlanes_bytes(uint32_t rows, uint32_t cols, uint64_t nnz);
/* Builds s's lane form in mem (dcz_qlanes_bytes of its real entries,
 * DCZ_ARENA_ALIGN aligned) from its row form: the first of byte quads,
 * pairs and 8-row quads whose kernel this build and CPU run and whose
 * walk keeps within its bound; dcz_qlanes_build_form builds the form
 * asked for. Returns 0, leaving lslices 0, when there is none, a weight
 * is past a byte or the walk needs more steps than the bound. */
int dcz_qlanes_build(dcz_qsparse *s, uint64_t nnz, void *mem);
int dcz_qlanes_build_form(dcz_qsparse *s, uint64_t nnz, void *mem, dcz_qlane_form form);
/* Columns of a window of s's lane form. */
uint32_t dcz_qlanes_window_width(const dcz_qsparse *s);
/* Steps of s's lane form (0 without one). */
static inline uint32_t dcz_qlanes_steps(const dcz_qsparse *s)
{
    return s->lslices ? s->lstart[s->lslices] : 0;
}
/* acc (batch, rows) = x S^T + bias from the lane form, slot by slot: its
 * specification. */
void dcz_qlanes_ref(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, int64_t *acc);
/* Bytes of the panels the vector kernels read for a matrix of cols
 * columns (samples at a time included); the kernel's variant for s's form
 * where this build and CPU have one ("avx512vbmi byte quads" for quads;
 * "avx512vnni", else "avx512bw" for pairs; "avx2 byte quads" for 8-row
 * quads), else NULL; the instruction set of s's form's kernel; the kernel itself
 * on s's form, the best variant: 0 when s has none or nothing runs it;
 * dcz_qlanes_run_vnni runs the one with VNNI (vnni 1), the one without (0,
 * pairs only) or the best (-1), 0 where the CPU lacks it. */
uint64_t dcz_qlanes_scratch_bytes(uint32_t cols);
const char *dcz_qlanes_variant(const dcz_qsparse *s);
static inline dcz_isa dcz_qlanes_isa(const dcz_qsparse *s)
{
    return s->lform == DCZ_QLANE_QUADS8 ? DCZ_ISA_AVX2 : DCZ_ISA_AVX512;
}
int dcz_qlanes_run(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, void *scratch,
                   int64_t *acc);
int dcz_qlanes_run_vnni(int vnni, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                        void *scratch, int64_t *acc);

/* acc (batch, out_c, out_h, out_w) = conv(x, w) + bias by seven plain loops,
 * taps in the padding skipped; w (out_c, in_c, kh, kw) dense integers. The
 * specification of the integer convolutions. */
void dcz_qconv2d_direct_ref(const dcz_conv_geom *g, const int16_t *w, const int64_t *bias,
                            const dcz_q *x, size_t batch, int64_t *acc);
/* Direct sparse convolution on s (out_c, in_c kh kw): each stored weight
 * adds itself times a shifted input plane to the output plane. */
void dcz_qconv2d_sparse(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias,
                        const dcz_q *x, size_t batch, int64_t *acc);
/* What one stored weight does there: ap (out_h, out_w) += w * (input plane
 * xp seen through tap (ty, tx)). dcz_qtap_ref: one output at a time. */
typedef void (*dcz_qtap_fn)(const dcz_conv_geom *g, const dcz_conv_tap *ty, const dcz_conv_tap *tx, int64_t w,
                            const dcz_q *xp, int64_t *ap);
void dcz_qtap_ref(const dcz_conv_geom *g, const dcz_conv_tap *ty, const dcz_conv_tap *tx, int64_t w,
                  const dcz_q *xp, int64_t *ap);
/* dcz_qconv2d_sparse with the tap kernel add_tap. */
/* col2 (ceil(in_c kh kw / 2), ldb): pair p holds rows 2p and 2p + 1 of
 * dcz_im2col_k's matrix of the integers x (the second 0 past the last row),
 * ldb >= out_h out_w, padding columns 0; copy (dcz_qconv2d_copy_bytes, or
 * NULL: the scalar rows) holds the channels the vector paths copy. */
void dcz_qim2col_pairs(const dcz_conv_geom *g, const dcz_q *x, int32_t *col2, size_t ldb, dcz_q *copy);
/* Bytes of the channel copies the AVX2 integer patches and depthwise
 * kernels take for g (two channels between zeros or split by column
 * phase), 0 where none runs: in the caller's scratch, not on the stack (up
 * to 32 KB, too much for the small thread stacks of embedded systems). */
uint64_t dcz_qconv2d_copy_bytes(const dcz_conv_geom *g);
/* w2 (rows, ceil(k / 2)) = the integer weights of s (rows, k) as dense
 * int16 pairs, 0 where s stores nothing. */
void dcz_qexpand_pairs(const dcz_qsparse *s, uint32_t k, int32_t *w2);
/* acc (batch, out_c, out_h out_w) = bias + the convolution of x by w2
 * (dcz_qexpand_pairs of the weights): each sample's patches by
 * dcz_qim2col_pairs into scratch (dcz_qconv2d_gemm_scratch_floats floats:
 * the patches, then the channel copies), then dcz_qgemm. The integers of
 * dcz_qconv2d_direct_ref, for the 8-bit schemes (sums within 32 bits).
 * Ungrouped convolutions. */
uint64_t dcz_qconv2d_gemm_scratch_floats(const dcz_conv_geom *g);
void dcz_qconv2d_gemm(const dcz_conv_geom *g, const int32_t *w2, const int64_t *bias, const dcz_q *x, size_t batch,
                      int32_t *scratch, int64_t *acc);
void dcz_qconv2d_sparse_taps(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x,
                             size_t batch, dcz_qtap_fn add_tap, int64_t *acc);
/* The tap kernel of isa (kernels_qsimd.c; DCZ_ISA_REF: dcz_qtap_ref; the
 * vector ones take 4 outputs of a row at once, stride 1, exact as integers
 * are), NULL when this build or machine has none; dcz_qtap_best: the
 * fastest here. */
dcz_qtap_fn dcz_qtap_isa(dcz_isa isa);
/* An 8-bit scheme's convolution each of whose output channels reads one
 * input channel (depthwise), at column stride 1 or 2: acc as
 * dcz_qconv2d_sparse computes it, on 32-bit sums in AVX2 (exact where the
 * loader admits the model, qload.c), a channel at a time copied into copy
 * (dcz_qconv2d_copy_bytes); 0 (nothing written) where
 * dcz_qconv2d_depthwise_runs says it does not run, or copy is NULL. */
int dcz_qconv2d_depthwise(const dcz_conv_geom *g, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x,
                          size_t batch, dcz_q *copy, int64_t *acc);
int dcz_qconv2d_depthwise_runs(const dcz_conv_geom *g);
dcz_qtap_fn dcz_qtap_best(void);

/* y (batch, channels, plane) from acc of the same layout (plane 1 for
 * DENSE), channel c requantized by rq (see dcz_requant). */
void dcz_requant_ref(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                     uint32_t plane, dcz_q *y);

/* y (n) = x / scale on the integer grid: round(x / s) half away from zero,
 * clamped to +-qmax; NaN gives 0. The quotient is taken in double, where it
 * is exact enough that the rounding is that of the real quotient (x and s
 * have 24-bit mantissas). dcz_quantize: the same bits, vectorized
 * (kernels_qsimd.c). */
void dcz_quantize_ref(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y);
void dcz_quantize(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y);
/* dcz_requant_ref for qmax 127, where |acc| < 2^31: an add and a shift
 * where the reference divides (kernels_qsimd.c); dcz_requant8_ref one
 * element at a time, dcz_requant8 8 at a time on AVX-512, 4 on AVX2, the
 * same bits; dcz_requant8_isa the variant of isa (0 where this build or
 * machine has none). */
void dcz_requant8_ref(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                      uint32_t plane, dcz_q *y);
void dcz_requant8(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                  uint32_t plane, dcz_q *y);
int dcz_requant8_isa(dcz_isa isa, const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                     uint32_t plane, dcz_q *y);
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
 * the layer is depthwise, its planes pass the kernel's or are below 2x2. */
int dcz_qconv2d_shift_requant_runs(const dcz_conv_geom *g, const dcz_qshift *f, const dcz_requant *rq, int pool2);
int dcz_qconv2d_shift_requant(const dcz_conv_geom *g, const dcz_qshift *f, const int64_t *bias,
                              const dcz_requant *rq, int32_t lo, int32_t hi, int pool2, const dcz_q *x,
                              size_t batch, float *scratch, dcz_q *y);

void dcz_qrelu_ref(dcz_q *x, size_t n);
/* x (n) = clamp(x, lo, hi): the bounds of an integer activation fused in
 * (lo <= hi). */
void dcz_qclamp_ref(dcz_q *x, size_t n, int32_t lo, int32_t hi);
/* y (n) = clamp(rq(a, mult[0], shift[0]) + rq(b, mult[1], shift[1]), +-qmax)
 * with rq(v, m, k) = round_shift(v m, k) (v m for k 0): both inputs
 * brought to the output's scale, then added. */
void dcz_qadd_ref(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult,
                  const uint8_t *shift, int32_t qmax, dcz_q *y);
/* The three above in vectors (kernels_qsimd.c: Add in AVX-512 or AVX2
 * where both shifts are at most 62, ReLU and the clamp in AVX2), the same
 * bits; dcz_qadd clamps to lo .. hi, -qmax .. qmax for the reference's
 * bits, 0 .. qmax for those of a ReLU after it (an activation fused in,
 * load.c). dcz_qadd_isa: on isa's variant (DCZ_ISA_REF: the reference
 * then the clamp), 0 where this machine or the shifts have none. */
void dcz_qadd(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift, int32_t lo,
              int32_t hi, dcz_q *y);
int dcz_qadd_isa(dcz_isa isa, const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift,
                 int32_t lo, int32_t hi, dcz_q *y);
void dcz_qrelu(dcz_q *x, size_t n);
void dcz_qclamp(dcz_q *x, size_t n, int32_t lo, int32_t hi);
/* y (batch, channels, plane) = clamp(rq(x f, mult, shift), +-qmax), f
 * (batch, channels) one factor per channel of each sample (plane 1: per
 * element). */
void dcz_qmul_ref(const dcz_q *x, const dcz_q *f, size_t batch, uint32_t channels, uint32_t plane,
                  int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y);
/* y (batch, sum of width) = the nin inputs x[k] (batch, width[k]) side by
 * side per sample, each element clamp(rq(v, mult[k], shift[k]), +-qmax). */
void dcz_qconcat_ref(const dcz_q *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                     const int32_t *mult, const uint8_t *shift, int32_t qmax, dcz_q *y);
/* y (n) = table[x + qmax]: an activation by its table of 2 qmax + 1. */
void dcz_qtable_ref(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y);
/* The same on AVX-512 (kernels_qsimd.c): 32 lookups a step by word
 * permutes of the table held in registers when qmax <= 127, else 16 by
 * gathers; the table must have 2 qmax + 2 entries, the last never looked
 * up. */
void dcz_qtable(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y);
/* Integer pools on the geometry of the float ones: max over the window's
 * cells inside the input; average rounded half away from zero, divided as
 * dcz_avgpool_ref divides. */
void dcz_qmaxpool_ref(const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y);
/* The same, the interior columns of each row 16 at a time in AVX-512BW
 * where the column stride is 1 or 2 (kernels_qsimd.c), the same values. */
void dcz_qmaxpool(const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y);
void dcz_qavgpool_ref(const dcz_conv_geom *g, int count_include_pad, const dcz_q *x,
                      size_t batch, dcz_q *y);
void dcz_qglobal_avgpool_ref(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                             dcz_q *y);
/* The global average into another scale: each plane's sum S requantized
 * as a weighted layer's accumulator is, clamp(rq(S, mult, shift)), exact
 * for any S; mult, shift from dcz_requant_params(s_in / (s_out plane)). */
void dcz_qglobal_avgpool_rescale_ref(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                                     int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y);
/* The same values on AVX-512 where planes hold 2^16 cells or fewer and the
 * shift is 62 or less (kernels_qsimd.c), else by the reference;
 * dcz_qglobal_avgpool_rescale_isa on isa's variant, 0 where it declines. */
void dcz_qglobal_avgpool_rescale(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch, int32_t mult,
                                 uint8_t shift, int32_t qmax, dcz_q *y);
int dcz_qglobal_avgpool_rescale_isa(dcz_isa isa, uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                                    int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y);

/* ---- running with a tap (run.c): dcz_run_tapped, tool.h ------------------ */

/* ---- building the execution form ---------------------------------------- */

/* Upper bound of execution entries (real + fillers) for nnz weights in a
 * rows x cols matrix. */
uint64_t dcz_sparse_max_entries(uint32_t nnz, uint32_t rows, uint32_t cols);

/* Fills row_ptr (rows + 1), step and (when idx_out) the entry order of
 * weight indices from the flat positions produced by walking a gap stream.
 * src_of_entry[e] receives, for each real execution entry, the number of the
 * weight it carries (its order in the stream) so callers can place indices
 * or values; fillers get UINT32_MAX. *entries receives the count. */
typedef struct dcz_sparse_builder {
    uint32_t rows, cols;
    uint32_t *row_ptr;
    uint8_t *step;
    uint32_t cap, entries;
    uint32_t cur_row;
    uint64_t cur_col;          /* cursor of the current row */
    int row_started;
    uint8_t *idx_dst;          /* optional: idx_src[weight] copied per entry */
    const uint8_t *idx_src;
    float *val_dst;            /* optional: val_src[weight] per entry */
    const uint8_t *val_src;    /* little-endian float32 */
} dcz_sparse_builder;

dcz_status dcz_sparse_builder_add(void *builder, uint32_t weight, uint64_t pos);
void dcz_sparse_builder_finish(dcz_sparse_builder *b);

/* Bytes of the column form of a rows x cols matrix of nnz real entries in
 * cblocks blocks (0 when it is not built: more than 65535 rows); k: the
 * codebook's size, 0 for fp32 values. */
uint64_t dcz_sparse_columns_bytes(uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k,
                                  uint32_t cblocks);
/* Builds s's column form in mem (dcz_sparse_columns_bytes bytes, 4-byte
 * aligned) from its row form. */
void dcz_sparse_build_columns(dcz_sparse *s, uint32_t cblocks, void *mem);

#endif /* DCZ_RUNTIME_MODEL_H */
