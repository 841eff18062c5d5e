/* plan.h: the plan, every layer's kernel decided once, at load.
 *
 * A layer's kernel is one value of dcz_kernel, chosen by plan.c from the
 * layer's operator, its weight's form, the precision it runs in, the forms
 * this CPU's kernels can use (DCZ_FORM_*), and the options (the scalar
 * references when forced). The loader asks the plan before it builds a
 * weight's extra form, and builds the form that kernel reads; a form that
 * declines as it is built (a weight past a byte in the integer shift form)
 * sends the layer to the plan's next choice. The runner dispatches through
 * a table indexed by the value (run.c), dcz info prints the value's name and
 * the reason (describe.c); neither decides again. The CUDA backend's choice
 * (dcz_gpu_kernel, gpu.h) is made at the same time and kept beside it.
 *
 * What a kernel still chooses as it runs is what only the call knows: the
 * batch (a sparse fully connected layer's batch-1 product, or the batch
 * product above it), the input (the lane or the column form at batch 1, by
 * how many inputs are zero), and whether the run fuses (no tap reads the
 * layers in between).
 *
 * Checked by tests/unit/test_format.c (every kernel of the test models
 * named by dcz info as the plan chose it) and, for the bits, by
 * scripts/output-bits.sh across a change.
 */
#ifndef DCZ_RUNTIME_PLAN_H
#define DCZ_RUNTIME_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"

struct dcz_model;
struct dcz_conv_geom;
struct dcz_shift;
struct dcz_qshift;

/* The extra forms of weights a load may build for speed, each where this
 * CPU runs the kernel that reads it (none when the references are forced;
 * a static arena too small for them takes the model without). */
enum {
    DCZ_FORM_LANES = 1,   /* fully connected codebook layers: the lane form (AVX-512) */
    DCZ_FORM_DENSE = 2,   /* the dense product's forms: sparse float convolutions past
                             DCZ_CONV_DENSE_MIN_DENSITY as dense weights, dense fully
                             connected and 1x1 convolution weights transposed */
    DCZ_FORM_SHIFT = 4,   /* float convolutions: the shift form (dcz_conv2d_pick_shift) */
    DCZ_FORM_AMX = 8,     /* the integer shift form's AMX tiles (dcz_amx_ready, asked once a load) */
    DCZ_FORM_LANES8 = 16, /* fully connected codebook layers: the 8-row lane form (AVX2 and
                             FMA without AVX-512) */
    DCZ_FORM_WINO = 32,   /* dense float convolutions: Winograd's transform of the weights
                             (dcz_conv2d_pick_wino) */
    /* the 8-bit integer kernels' forms (a build may leave either family out:
       cpu/isa.h) */
    DCZ_FORM_QSHIFT = 64, /* convolutions: the integer shift form (dcz_qconv2d_pick_shift) */
    DCZ_FORM_QLANES = 128,/* fully connected layers: the integer lane form (dcz_qlanes_runs) */
    DCZ_FORM_QDENSE = 256,/* ungrouped convolutions dense enough: int16 pairs (dcz_qgemm_variant) */
};

/* The kernels. _REF: the scalar reference (the specification of the kernel
 * without the suffix; the options force them). A layer of the integer
 * region of a calibrated model runs a DCZ_K_Q kernel, every other layer a
 * float one. */
typedef enum dcz_kernel {
    DCZ_K_NONE = 0,            /* not planned (a layer of a model being sized) */
    /* float layers without weights */
    DCZ_K_RELU, DCZ_K_RELU_REF,
    DCZ_K_SOFTMAX_REF,
    DCZ_K_MAXPOOL, DCZ_K_MAXPOOL_REF,
    DCZ_K_AVGPOOL, DCZ_K_AVGPOOL_REF,
    DCZ_K_GLOBAL_AVGPOOL, DCZ_K_GLOBAL_AVGPOOL_REF,
    DCZ_K_COPY,                /* FLATTEN: the data is already flat */
    DCZ_K_ADD, DCZ_K_ADD_REF,
    DCZ_K_MUL, DCZ_K_MUL_REF,
    DCZ_K_CONCAT, DCZ_K_CONCAT_REF,
    DCZ_K_GATHER_REF,          /* CHANNEL_SHUFFLE, SLICE: channel planes copied */
    DCZ_K_CLIP,                /* CLIP vectorized; the other activations by their reference */
    DCZ_K_ACTIVATION_REF,
    DCZ_K_ACTIVATION,          /* HARD_SIGMOID, HARD_SWISH, SIGMOID, SILU vectorized */
    /* float fully connected layers */
    DCZ_K_FC_GEMM,             /* dense weights transposed at load, dcz_gemm_f32 */
    DCZ_K_FC_ROWS,             /* dense weights, dcz_dense_f32: a row's dot product over the lanes */
    DCZ_K_FC_REF,
    DCZ_K_FC_CODEBOOK,         /* compressed codebook rows: dcz_spmv (lanes, columns or rows) / spmm */
    DCZ_K_FC_SPARSE,           /* compressed fp32 rows: the same kernels */
    DCZ_K_FC_SPARSE_REF,
    DCZ_K_FC_STREAM_REF,       /* codebook weights read as stored at every run (the stream form) */
    /* float convolutions */
    DCZ_K_CONV_SHIFT,          /* the shift form: shifted input planes times each weight */
    DCZ_K_CONV_DEPTHWISE_LANES,/* the shift form, one channel a group: 8 channels a vector (AVX2) */
    DCZ_K_CONV_DEPTHWISE_PLANE,/* ... each output plane in registers (AVX-512) */
    DCZ_K_CONV_DEPTHWISE_ROWS, /* ... each output row, 4 to 8 at a time */
    DCZ_K_CONV_WINO,           /* dense 3x3 stride 1: Winograd's F(2x2, 3x3) */
    DCZ_K_CONV_GEMM,           /* dense weights times im2col patches by dcz_gemm_f32 */
    DCZ_K_CONV_GEMM_PIXELS,    /* dense 1x1 weights transposed at load, the input's pixel rows times
                                  them: output channels in the vectors (small planes) */
    DCZ_K_CONV_GEMM_REF,
    DCZ_K_CONV_EXPANDED,       /* sparse weights expanded to dense at load, then as CONV_GEMM */
    DCZ_K_CONV_DIRECT,         /* dense weights: direct convolution by rows */
    DCZ_K_CONV_DIRECT_REF,
    DCZ_K_CONV_SPARSE_IM2COL,  /* im2col patches times the compressed rows */
    DCZ_K_CONV_SPARSE_IM2COL_REF,
    DCZ_K_CONV_SPARSE_DIRECT,  /* each stored weight scales a shifted input plane */
    DCZ_K_CONV_SPARSE_DIRECT_REF,
    /* the integer region: layers without weights */
    DCZ_K_QRELU, DCZ_K_QRELU_REF,
    DCZ_K_QMAXPOOL, DCZ_K_QMAXPOOL_REF,
    DCZ_K_QAVGPOOL, DCZ_K_QAVGPOOL_REF,
    DCZ_K_QMEAN_REF,           /* GLOBAL_AVGPOOL whose output keeps its input's scale */
    DCZ_K_QMEAN_RESCALE, DCZ_K_QMEAN_RESCALE_REF, /* ... to another scale */
    DCZ_K_QCOPY,
    DCZ_K_QADD, DCZ_K_QADD_REF,
    DCZ_K_QMUL, DCZ_K_QMUL_REF,
    DCZ_K_QCONCAT, DCZ_K_QCONCAT_REF,
    DCZ_K_QGATHER_REF,
    DCZ_K_QTABLE, DCZ_K_QTABLE_REF,
    /* the integer region: fully connected layers */
    DCZ_K_QFC8_LANES,          /* 8-bit: rows in the lanes of a vector (the integer lane form) */
    DCZ_K_QFC8,                /* 8-bit: dcz_qspmm8, 32-bit sums */
    DCZ_K_QFC,                 /* 16-bit fixed point: dcz_qspmm, 64-bit sums */
    DCZ_K_QFC_REF,
    DCZ_K_QFC_STREAM_REF,      /* ... on integers */
    /* the integer region: convolutions */
    DCZ_K_QCONV_SHIFT,         /* 8-bit: the integer shift form, vpdpbusd */
    DCZ_K_QCONV_SHIFT_DEPTHWISE, /* ... one channel a group, byte permutes (VBMI) */
    DCZ_K_QCONV_DEPTHWISE_PAIRS, /* ... one channel a group, int16 pairs, vpdpwssd */
    DCZ_K_QCONV_AMX,           /* ... by AMX tiles */
    DCZ_K_QCONV_GEMM,          /* 8-bit: weights as int16 pairs, dcz_qgemm over patches */
    DCZ_K_QCONV_DEPTHWISE,     /* 8-bit, one channel a group: planes shifted, AVX2 */
    DCZ_K_QCONV_TAPS,          /* each stored integer weight scales a shifted input plane */
    DCZ_K_QCONV_TAPS_REF,
    DCZ_K_QCONV_F32,           /* 8-bit: its integer weights on the float shift form, sums exact in floats */
    DCZ_K_COUNT
} dcz_kernel;

/* The name of kernel k, as dcz info and its JSON print it ("?" for none). */
const char *dcz_kernel_name(dcz_kernel k);

/* The most kernels that can run one layer. */
#define DCZ_PLAN_CANDIDATES 4

/* A weighted layer's candidates: the kernels that can run it here (its
 * form built, its scratch within the caps), the rules' choice first, the
 * one a load by the rules takes; a load that measures (DCZ_PLAN_MEASURE,
 * load.c) times each and keeps the fastest. One kernel only when the
 * references are forced. */
typedef struct dcz_candidates {
    uint32_t n;
    dcz_kernel k[DCZ_PLAN_CANDIDATES];
} dcz_candidates;

/* Whether a layer's weight (of encoding enc) takes the stream form, read
 * as stored at every run (cpu/ref/stream.c): where the options ask for it
 * (asked: dcz_options.stream_weights), the CODEBOOK weights of fully
 * connected layers; the loader builds no decoded form for them then. */
int dcz_plan_streams(int asked, uint16_t op, uint32_t enc);

/* A float fully connected layer of sparse (compressed) or dense weights,
 * codebook ones or not, given the forms this load builds; stream: its
 * weight takes the stream form (dcz_plan_streams). */
void dcz_plan_fc(int sparse, int codebook, int stream, int forms, int force_reference, dcz_candidates *c);

/* A float convolution of geometry g whose weight keeps kept entries
 * (sparse, codebook ones or not) or is dense, before its form is built; a
 * shift form built is refined by dcz_plan_conv_shift. */
void dcz_plan_conv(const struct dcz_conv_geom *g, int sparse, int codebook, uint64_t kept, int forms,
                   int force_reference, dcz_candidates *c);
/* Whether a float convolution of geometry g is a fully connected layer to
 * the plan, its kernels and their forms: a 1 x 1 window at stride 1, one
 * group, over one input cell (squeeze-and-excitation's two, after the
 * global mean). dcz_plan_fc_layer: whether a layer of op (of geometry g
 * where a convolution) takes the fully connected kernels and forms: a
 * DENSE layer, or such a convolution. */
int dcz_plan_conv_as_fc(const struct dcz_conv_geom *g);
int dcz_plan_fc_layer(uint16_t op, const struct dcz_conv_geom *g);

/* A float convolution's kernel once its shift form is built: the shift
 * kernel, or the depthwise one the form runs. */
dcz_kernel dcz_plan_conv_shift(const struct dcz_conv_geom *g, const struct dcz_shift *f);

/* An integer convolution of geometry g whose integer weight keeps kept
 * entries, for a scheme of largest integer qmax; declined: the shift form
 * would not take its weights (then neither it nor the int16 pairs);
 * f32_exact: 0 where the float shift form on the integer weights declined
 * it (a grouped layer with a channel whose sums floats would not hold,
 * cpu/q8/qconv.h, dcz_qconv2d_f32_rows), 1 before the weights are read. */
void dcz_plan_qconv(const struct dcz_conv_geom *g, uint64_t kept, int32_t qmax, int forms, int force_reference,
                    int declined, int f32_exact, dcz_candidates *c);

/* An integer convolution's kernel once its shift form is built: the shift
 * kernel, its depthwise form or its AMX tiles. */
dcz_kernel dcz_plan_qconv_shift(const struct dcz_qshift *f);

/* Nonzero when k runs a convolution's shift form (float or integer). */
int dcz_kernel_shifts(dcz_kernel k);
/* Nonzero when k reads a convolution's im2col patches (in the model's
 * scratch). */
int dcz_kernel_patches(dcz_kernel k);

/* An integer fully connected layer (qmax as above), lanes: the integer
 * lane form was built and this CPU runs it. */
void dcz_plan_qfc(int32_t qmax, int lanes, int stream, int force_reference, dcz_candidates *c);

/* What a load that measures learned of a weighted layer of more than one
 * candidate: each as it ran (a shift form's refined kernel), the rules'
 * first, its time (the best of the runs, in ns: the layer with the layers
 * after it up to the next weighted one, which it may have fused), and the
 * one kept, the fastest. n 0: not timed. */
typedef struct dcz_measured {
    uint8_t n, pick;
    uint8_t kernel[DCZ_PLAN_CANDIDATES];
    uint64_t ns[DCZ_PLAN_CANDIDATES];
} dcz_measured;

/* The time of each weighted layer of m, ns[i] (nlayers entries, UINT64_MAX
 * for the others): the best of a few runs at batch samples (0: 1) on a
 * generated input, the layer with the layers it owns (measure.c). */
dcz_status dcz_measure_layers(struct dcz_model *m, size_t batch, uint64_t *ns);

/* Every layer without weights of a loaded model m gets its kernel, and
 * every layer its kernel on a GPU (called once the model's scales and
 * fusions are known: load.c). DCZ_ERR_UNSUPPORTED when a layer is left
 * without a kernel. */
dcz_status dcz_plan_finish(struct dcz_model *m);

#endif /* DCZ_RUNTIME_PLAN_H */
