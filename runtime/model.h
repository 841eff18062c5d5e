/* model.h: the runtime's execution form of a loaded .dcz.
 *
 * At load (load.c, load_layer.c) every layer becomes one exec layer. Sparse layers keep
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
 * Its kernels are declared by family, each in a header beside its files
 * (runtime/README.md is the map): in cpu/f32/, dense.h, gemm.h, sparse.h,
 * lanes.h, elem.h, conv.h, wino.h and shift.h; in cpu/q8/, qspmm.h,
 * qlanes.h, qconv.h, qshift.h, qrequant.h and qelem.h; the instruction
 * sets and the CPU's features in cpu/isa.h. Every kernel is tested against
 * a reference (tests/unit/test_kernels.c, tests/unit/test_simd.c,
 * tests/unit/test_qkernels.c).
 */
#ifndef DCZ_RUNTIME_MODEL_H
#define DCZ_RUNTIME_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "runtime/cpu/isa.h"
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
     * 16-row form (dcz_spmv_lanes__avx512, "the lane form" of cpu/f32/lanes.h)
     * or the 8-row one (dcz_spmv_lanes8__avx2, "the 8-row lane form"), as lrows
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
     * schemes where the CPU runs one of its kernels (cpu/q8/qlanes.h); lslices is 0 when it is not built. */
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

/* The shift form of a float convolution (cpu/f32/kernels_shift.c has the
 * layout and the numbers, shift_form.c the costs that choose it): for each
 * block of output channels, the union of their stored weights' columns in
 * column order ("taps"), each as the offset in the split input (the sample
 * padded and split by stride phase) of the cell it multiplies for output
 * pixel 0, and the block's values there. */
typedef struct dcz_shift {
    uint32_t ob;            /* output channels a block: 1, 2 or 4 */
    const uint32_t *ptr;    /* (blocks + 1) first tap of each block of ob channels */
    const uint32_t *off;    /* (taps) offset in the split input */
    const float *w;         /* (taps, ob) the block's weights at the tap, 0 where none is stored */
    const uint8_t *cell;    /* (taps) a depthwise form's (dcz_shift_cells): each tap's cell of its
                               channel's window, ky kw + kx; else NULL */
    int whole;              /* every block holds every cell of its window (dense weights) */
} dcz_shift;
/* Its integer twin for the 8-bit schemes (cpu/q8/qshift.h, qshift_form.c):
 * weights by quads of input channels, four bytes in a 32-bit word. */
typedef struct dcz_qshift {
    uint32_t ob;            /* output channels a block: 1 or 2 (DCZ_QSHIFT_MAX_OB) */
    const uint32_t *ptr;    /* (blocks + 1) first quad tap of each block of ob channels */
    const uint32_t *off;    /* (quad taps) offset in the split input, in 4-byte cells */
    const int32_t *w;       /* (quad taps, ob) the four input channels' weights, a byte each, of
                               each channel of the block (0 where it stores none) */
    const int32_t *corr;    /* (out_c) -128 times the sum of the channel's weights, modulo 2^32 */
    const uint8_t *none;    /* (out_c) 1 where the channel holds no weight: its sums are its bias */
    dcz_q *none_value;      /* (out_c) where none: the channel's every output (its bias requantized and
                               clamped) as the layer that takes it reads it (through an activation by
                               table, that table's value), set at load where the layer leaves those
                               channels unwritten (load.c, pair_constants) */
    /* depthwise convolutions whose windows fit (qshift_form.c, "depthwise
     * by byte permutes"), else NULL: */
    const int32_t *dw;      /* (out_c, kh, ceil(kw / 4)) the weights of four columns of a window row, a byte each */
    const uint8_t *dwidx;   /* (patterns, kh ceil(kw / 4), 64) the bytes of a vector's window each lane reads */
    const struct dcz_qdw_vmap *dwmap;  /* (ceil(PH PW / 64)) where each 64 bytes of a channel's padded plane
                                          come from in its input plane; NULL where some do not fit a vector */
    const uint8_t *dwt;     /* (out_c, kh ceil(kw / 4)) each channel's taps (quads of a window row) that
                               hold a weight, in order, then zeros */
    const uint8_t *dwn;     /* (out_c) how many */
    uint8_t dwrows;         /* the byte permutes by pairs of output rows (planes of at most 8 columns):
                               dwidx one pattern, each window row loaded apart; 0 not */
    /* depthwise convolutions at column stride 2, or 1 at row stride 1, windows up
     * to QDWP_MAX_KW wide (qshift_form.c, "depthwise by int16 pairs"), else NULL: */
    const int32_t *dwp;     /* (out_c, kh ceil(kw / 2)) each channel's pairs that hold a weight, then
                               zeros: the weights of two columns of a window row, a 16-bit half each
                               (the low one the even column; 0 past the row) */
    const uint8_t *dwpi;    /* (out_c, kh ceil(kw / 2)) where each of dwp's lies: pair ky ceil(kw / 2) + j
                               of the window (its columns 2 j and 2 j + 1) */
    const uint8_t *dwpn;    /* (out_c) the pairs of the channel that hold a weight */
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
    uint8_t amx_pick;       /* the tiles run the layer (dcz_qamx_cost, cpu/q8/qshift.h, below the quad
                               taps' cost) */
} dcz_qshift;
/* Input channels of an integer shift-form layer that hold one value each,
 * which it takes from here, not from its input (the layer before left
 * them unwritten: load.c, pair_constants): channel c where none[c], of
 * value value[c]; none NULL: every channel read. */
typedef struct dcz_qconst {
    const uint8_t *none;
    const dcz_q *value;
} dcz_qconst;

/* A layer in execution form. Its kernel is the plan's (plan.h: kernel),
 * which run.c dispatches by its table; a weighted layer's weight is dense
 * (w) or in the sparse execution form (sp, sparse set), with the extra
 * form its kernel reads beside it. */
/* What a layer fused into the one before it leaves to do (load.c,
 * fuse_activations; dcz_exec_layer.fused): DCZ_FUSED_ADD, nothing (the
 * convolution before wrote its output). DCZ_FUSED_CONCAT: a float CONCAT
 * whose inputs, at batch 1, are written in its own place (load.c,
 * place_concats; dcz_tensor.host), so that it has nothing to copy. */
enum { DCZ_FUSED_ACT = 1, DCZ_FUSED_POOL = 2, DCZ_FUSED_ADD = 3, DCZ_FUSED_BANDS = 4, DCZ_FUSED_CONCAT = 5 };

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
    uint32_t gather_start, gather_groups; /* CHANNEL_SHUFFLE, SLICE (dcz_op_gather): output
                               channel c of geom.out_c is input channel dcz_gather_source(c,
                               geom.out_c, gather_start, gather_groups) of geom.in_c, planes
                               of geom.in_h x geom.in_w */
    uint8_t kernel;         /* dcz_kernel (plan.h): the kernel it runs, decided once at load */
    uint8_t gpu_kernel;     /* dcz_gpu_kernel (gpu.h): the one it runs on a GPU */
    dcz_act act;            /* float CONV2D on the shift form, float ADD, float DENSE: the next
                               layer's activation (that of an ADD it takes: res), applied as it
                               writes its output when the run fuses (op 0: none) */
    uint8_t fused;          /* DCZ_FUSED_ACT: a RELU or CLIP the layer before applies when the
                               run fuses; DCZ_FUSED_POOL: a MAXPOOL the convolution before (or
                               the one before its fused activation) takes, leaving it a copy;
                               DCZ_FUSED_ADD: a float ADD the convolution before computes;
                               DCZ_FUSED_BANDS: a depthwise convolution the pointwise one
                               before it (or before its fused activation) runs with it by
                               bands (band) */
    uint16_t res;           /* float CONV2D on the shift form that takes the ADD after it when
                               the run fuses: the ADD's other input (a tensor), added to each
                               output as it is written, before act, into the ADD's output place;
                               0 for none */
    uint8_t qpool;          /* integer CONV2D on the shift form: takes the 2x2 MAXPOOL after it
                               when the run fuses (dcz_qconv2d_shift_requant pool2) */
    uint8_t qplanes;        /* integer activation by table: at batch 1 when the run fuses, writes
                               the byte planes of the depthwise convolution after it rather than
                               its output (load.c, pair_table_planes) */
    uint16_t band;          /* float pointwise CONV2D on the dense product: the depthwise layer
                               it runs with by bands (cpu/f32/bands.h) when the run fuses,
                               writing that layer's output place (0 for none) */
    float param[2];         /* CLIP min, max; LEAKY_RELU alpha; HARD_SIGMOID alpha, beta */
    const float *w;         /* dense DENSE: (out, in); dense CONV2D, and expanded sparse ones:
                               (out_c, in_c / group, kh, kw) */
    const float *wu;        /* wino CONV2D: dcz_wino_weights of w (line-aligned) */
    const float *wt;        /* dense DENSE where this CPU runs dcz_gemm_f32: w transposed,
                               (in, dcz_gemm_ldb(out)), the padding 0 */
    dcz_sparse sp;          /* sparse DENSE: (out, in); sparse CONV2D: (out_c, in_c / group kh kw) */
    const dcz_tensor_view *wv; /* DENSE on the stream form (dcz_options.stream_weights): the
                               weight's record, read as stored at every run (cpu/ref/stream.c);
                               sp then holds only rows, cols and the codebook */
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
    const uint8_t *qover;   /* integer CONV2D on the float shift form: (out_c) 1 where a channel's sums
                               floats would not hold (it runs by the integer taps), or NULL: none */
    int32_t *rq_mult;       /* weighted but the last: (channels) requantization to */
    uint8_t *rq_shift;      /*   the scale of its output (dcz_requant) */
    uint8_t *rq_pre;        /*   and the 8-bit schemes' pre-shifts (dcz_requant.pre) */
    int32_t qlo, qhi;       /* integer CONV2D on the shift form: its outputs' clamp, that of the
                               activation after it where that is one and fused in (load.c), else
                               -qmax, qmax */
    uint8_t qskip;          /* integer CONV2D on the shift form: leaves its channels that hold no
                               weight unwritten when the run fuses; the one layer that reads its
                               output takes them from qshift.none_value (its qin) */
    dcz_qconst qin;         /* integer CONV2D on the shift form: the input channels it takes as
                               constants when the run fuses (those of the layer before's qskip); an
                               integer activation by table between two such: the planes it skips
                               (value NULL) */
    double *out_scale;      /* the last weighted layer: (channels) accumulator to float,
                               s_in * s_w[c] exactly */
    int32_t in_mult[DCZ_MAX_INPUTS]; /* ADD, CONCAT: input k to the output's scale; MUL: */
    uint8_t in_shift[DCZ_MAX_INPUTS]; /*  the product ([0]); GLOBAL_AVGPOOL: the sum ([0])
                                          when its output's scale is not its input's;
                                          as dcz_requant_params */
    dcz_q *table;           /* DCZ_QS_TABLE ops: (2 qmax + 1) outputs of -qmax .. qmax; a CONCAT
                               of the 8-bit schemes: its inputs' (dcz_qconcat_tables); an ADD of
                               them: its inputs' terms (dcz_qadd_tables), NULL past their range */
} dcz_exec_layer;

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
    uint32_t from;            /* the layer from which its place is held: the layer writing it,
                                 or, for a CONCAT output that hosts its inputs, the first
                                 layer writing one of them */
    uint32_t host, host_at;   /* a run of one sample that fuses keeps it in the place of the
                                 CONCAT output host, host_at elements from its start (load.c,
                                 place_concats); 0: in its own */
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
    int has_prep;             /* the file's PREPROCESS section, read at load */
    dcz_preprocess prep;
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
    dcz_measured *measured;   /* (nlayers) what a load that measured timed (plan.h), on the
                                 heap; NULL: the rules planned it */
    uint64_t *layer_ns;       /* (nlayers) while a load measures: each layer's time in
                                 this run, added to by run.c; else NULL */
    char device_note[192];    /* why a GPU was looked for and not used ("" otherwise) */
};

/* The instruction sets' family dcz_spmm dispatches to on this machine
 * (cpu/features.c; dcz_isa and dcz_isa_supported: tool.h). */
dcz_isa dcz_isa_best(void);

/* Memory of a model being loaded: sized by a walk with base NULL, then
 * filled by the same walk into one block (load.c; taken by arena.c): a
 * malloc'd block, or the caller's arena from its first DCZ_ARENA_ALIGN
 * boundary. */
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

#if DCZ_HEAP
/* bytes (free() releases them) for a heap model's blocks that every run
 * walks through, its weights and scratch (load.c) and its activations
 * (run.c): from 2 MB, in whole huge pages of 2 MB on Linux, asked of the
 * kernel by madvise (Debian's default for transparent huge pages,
 * "madvise", gives none to memory that does not ask). Several megabytes
 * walked on pages of 4 KB miss the TLB: AMD EPYC (Zen 5), one thread,
 * batch 1, medians of alternated runs in both orders, torchvision's
 * networks at 0.95-1.0 of the time dense, MobileNetV2 and DenseNet-121 90%
 * pruned at 0.91-0.93 and 0.88-0.93 (bench/cpu-profile.md). */
void *dcz_walked_alloc(size_t bytes);
#endif

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

/* Requantization of output channel c: y = clamp(round_shift(acc * mult[c],
 * shift[c]), -qmax, qmax). The loader keeps |acc * mult| below 2^62 where
 * shift > 0; with shift 0 a product past the range only saturates. */
typedef struct dcz_requant {
    const int32_t *mult;      /* (channels), >= 0 */
    const uint8_t *shift;     /* (channels), <= 62 */
    int32_t qmax;             /* 127 or 32767 */
    const uint8_t *pre;       /* (channels) or NULL: the left shift of the accumulator that lets
                                 the vector kernels requantize channel c as one of shift 33, the
                                 same bits (dcz_requant_pre, cpu/q8/qrequant.h); 0 where none */
} dcz_requant;

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

/* w (rows, cols) = the matrix s stores, 0 where it stores nothing
 * (load_layer.c). */
void dcz_sparse_expand(const dcz_sparse *s, float *w);

#endif /* DCZ_RUNTIME_MODEL_H */
