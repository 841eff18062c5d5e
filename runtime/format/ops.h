/* ops.h: the operator table. One operator enum serves the file format, the
 * runtime and the trainer, and one table entry per operator says what the
 * rest of the code needs to know of it: its name, its attributes and their
 * checks, whether it carries a weight and a bias, its shape inference, and
 * whether it exists only while training. Code that walks a network asks
 * the table (dcz_op_get) instead of switching on the operator.
 *
 * docs/FORMAT.md is the normative description of every stored operator;
 * the table implements its attribute limits and shape rules.
 *
 * Checked by tests/unit/test_format.c (attribute limits, shape rules, every
 * stored op through the container) and tests/unit/test_train.c (the
 * training-only ops).
 */
#ifndef DCZ_RUNTIME_OPS_H
#define DCZ_RUNTIME_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"

#define DCZ_MAX_RANK 4
#define DCZ_MAX_INPUTS 16   /* inputs of one layer (CONCAT's most) */

/* The shape of one sample's activations (no batch dimension). */
typedef struct dcz_shape {
    uint32_t rank;
    uint32_t dims[DCZ_MAX_RANK];
} dcz_shape;

/* Elements of a shape (product of its dims). */
uint64_t dcz_shape_count(const dcz_shape *s);

/* Nonzero when s has exactly the given rank and dims. */
int dcz_shape_is(const dcz_shape *s, uint32_t rank, const uint32_t *dims);

/* Operators. Codes below DCZ_OP_TRAIN_ONLY are stored in files (u16 op of
 * a graph record); the ones from it on exist only in the toolchain's
 * working model while training, and are folded or dropped before a file is
 * written (a file holding one is damaged). */
#define DCZ_OP_TRAIN_ONLY 0x8000u
typedef enum dcz_op {
    DCZ_OP_DENSE = 1,    /* attrs: in, out; tensors: weight (out, in), bias (out) */
    DCZ_OP_RELU = 2,
    DCZ_OP_SOFTMAX = 3,
    DCZ_OP_CONV2D = 4,   /* attrs: in_c, out_c, kernel_h, kernel_w, stride_h, stride_w,
                            pad_h, pad_w, group; tensors: weight (out_c, in_c / group,
                            kh, kw), bias (out_c) */
    DCZ_OP_MAXPOOL = 5,  /* attrs: kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w */
    DCZ_OP_AVGPOOL = 6,  /* attrs: as MAXPOOL, then count_include_pad (0 or 1) */
    DCZ_OP_GLOBAL_AVGPOOL = 7, /* no attrs: (C, H, W) -> (C, 1, 1) */
    DCZ_OP_FLATTEN = 8,  /* no attrs: any shape -> (product) */
    DCZ_OP_ADD = 9,      /* two inputs of one shape: their sum (a residual connection) */
    DCZ_OP_MUL = 10,     /* x times s: s of x's shape, or one value per channel of x
                            ((C) or (C, 1, 1) for x (C, H, W)): squeeze-and-excitation */
    DCZ_OP_CONCAT = 11,  /* 2 to 16 inputs joined on the channels ((C_i, H, W), or (n_i)) */
    DCZ_OP_CLIP = 12,    /* attrs: min, max (f32 bits): min(max(x, min), max); ReLU6 */
    DCZ_OP_LEAKY_RELU = 13, /* attr: alpha (f32 bits): x > 0 ? x : alpha x */
    DCZ_OP_SIGMOID = 14,
    DCZ_OP_TANH = 15,
    DCZ_OP_HARD_SIGMOID = 16, /* attrs: alpha, beta (f32 bits): max(0, min(1, alpha x + beta)) */
    DCZ_OP_HARD_SWISH = 17,   /* x max(0, min(1, x / 6 + 1 / 2)) */
    DCZ_OP_CHANNEL_SHUFFLE = 18, /* attr: groups: the channels of (C, H, W) or (C) read as a
                                    (groups, C / groups) matrix, transposed (ShuffleNet) */
    DCZ_OP_SLICE = 19,   /* attrs: start, count: channels start .. start + count - 1 of
                            (C, H, W) or (C) (one part of a split) */
    DCZ_OP_SILU = 20,         /* x / (1 + e^-x): x sigmoid(x) */
    DCZ_OP_BATCHNORM = 0x8001, /* attrs: eps, momentum (f32 bits); tensors: gamma, beta,
                                  running mean, running variance, (C) each, per channel
                                  of (C, H, W) or (C); folded into the weighted layer
                                  before it (dcz_doc_fold) */
    DCZ_OP_DROPOUT = 0x8002,   /* attr: rate (f32 bits): zeroes that fraction of its input
                                  while training; the identity in inference */
} dcz_op;

/* The window of CONV2D and the pools: kernel_h, kernel_w, stride_h,
 * stride_w, pad_h, pad_w, from attribute dcz_op_get(op)->window_at. */
#define DCZ_WINDOW_ATTRS 6

/* A float attribute (CLIP's bounds, LEAKY_RELU's alpha, ...) is stored as
 * the i32 of its IEEE binary32 bits. */
float dcz_attr_f32(int32_t a);
int32_t dcz_f32_attr(float f);

/* How an op's integer kernel treats scales (docs/FORMAT.md, "Integer
 * execution"): the tensors' scales a calibration table must give, and the
 * constants the loader derives from them. */
typedef enum dcz_qscale {
    DCZ_QS_NONE = 0,      /* no integer kernel: refused on the integer region */
    DCZ_QS_WEIGHTED,      /* accumulates, then requantizes to its output's scale */
    DCZ_QS_KEEP,          /* integers pass through: output scale = input scale */
    DCZ_QS_RESCALE,       /* each input requantized to the output's scale (ADD, CONCAT) */
    DCZ_QS_PRODUCT,       /* the product requantized to the output's scale (MUL) */
    DCZ_QS_TABLE,         /* a table of every input integer's output (activations) */
    DCZ_QS_MEAN           /* the integer mean, or the sum requantized to another
                             output scale (GLOBAL_AVGPOOL) */
} dcz_qscale;

typedef struct dcz_op_info {
    dcz_op op;
    const char *name;      /* as docs/FORMAT.md names it ("GLOBAL_AVGPOOL") */
    const char *label;     /* as dcz info and its JSON name it ("global_avgpool") */
    uint8_t min_in, max_in;/* inputs a layer of this op reads */
    uint8_t nattr;         /* attributes a record of format 2 carries, exactly (a
                              training-only op: those of its layer in a document) */
    uint8_t weighted;      /* a weight (rows = output channels) and a bias: the layers
                              that are pruned, shared and run on integers */
    uint8_t train_only;    /* never stored (op >= DCZ_OP_TRAIN_ONLY) */
    int8_t window_at;      /* attribute index of the window, or -1 */
    /* DCZ_OK when the attributes are within the format's limits, else
     * DCZ_ERR_FORMAT; attr holds nattr values */
    dcz_status (*check)(const int32_t *attr);
    /* The output shape from checked attributes and the shapes of the nin
     * inputs (DCZ_ERR_SHAPE when they do not fit) */
    dcz_status (*shape)(const int32_t *attr, const dcz_shape *in, uint32_t nin, dcz_shape *out);
    /* weighted ops: the weight and bias shapes from checked attributes */
    void (*param_shapes)(const int32_t *attr, dcz_shape *weight, dcz_shape *bias);
    dcz_qscale qscale;     /* how its integer kernel treats scales (no kernel: DCZ_QS_NONE) */
    uint8_t in_place;      /* every kernel of the op (float, integer, GPU) computes each
                              output element from the same element of its inputs alone
                              (or, for a Mul's factors, its channel's one), reading it
                              before writing that element, so the output may take its
                              first input's place when that input is read by no later
                              layer (the loader's plan) */
} dcz_op_info;

/* y (n) = the activation of op (CLIP, LEAKY_RELU, SIGMOID, TANH,
 * HARD_SIGMOID, HARD_SWISH, SILU; param: their float attributes, docs/FORMAT.md)
 * of x (n); y may be x. The reference (kernels_ref.c), which the trainer
 * runs as well. */
void dcz_activation_ref(uint16_t op, const float *param, const float *x, size_t n, float *y);

/* CHANNEL_SHUFFLE and SLICE move whole channel planes: output channel c
 * of n is input channel start + (c mod groups) (n / groups) + c div groups,
 * with (start, groups) = (0, groups) for CHANNEL_SHUFFLE (n = C) and
 * (start, 1) for SLICE, as dcz_op_gather gives them from the attributes.
 * One rule for every backend (the CUDA kernels call it on the device). */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline uint32_t dcz_gather_source(uint32_t c, uint32_t n, uint32_t start, uint32_t groups)
{
    return start + (c % groups) * (n / groups) + c / groups;
}

/* The (start, groups) of a CHANNEL_SHUFFLE or SLICE layer from its checked
 * attributes; nonzero when op is one of the two (else 0, nothing set). */
int dcz_op_gather(uint16_t op, const int32_t *attr, uint32_t *start, uint32_t *groups);

/* y (batch, out_c, plane) = the channels of x (batch, in_c, plane) that a
 * CHANNEL_SHUFFLE or SLICE gathers: output channel c is input channel
 * dcz_gather_source(c, out_c, start, groups). Elements of elem bytes: the
 * one kernel of both ops on floats, on the integer region (elem
 * sizeof(dcz_q)) and in the trainer (a plane copy needs nothing faster).
 * The reference (kernels_ref.c). */
void dcz_gather_channels_ref(const void *x, size_t elem, uint32_t in_c, uint32_t out_c, uint32_t plane,
                             uint32_t start, uint32_t groups, size_t batch, void *y);

/* The table entry of op, or NULL for an unknown operator. */
const dcz_op_info *dcz_op_get(uint32_t op);

/* The name of op ("DENSE"), or "?" for an unknown one. */
const char *dcz_op_name(uint32_t op);

/* Checks an operator's attributes against docs/FORMAT.md (count and
 * limits) and tells whether it has a parameter (LAYER) section. DCZ_ERR_FORMAT
 * when an attribute breaks a rule, DCZ_ERR_UNSUPPORTED for an unknown op. */
dcz_status dcz_op_check(uint16_t op, const int32_t *attr, uint32_t nattr, int *has_params);

/* The output shape of an operator given its attributes and the shapes of
 * its nin inputs (in[0 .. nin - 1]), by the shape rules of docs/FORMAT.md:
 * DENSE takes any input whose element count is attr in; CONV2D and the
 * pools take (C, H, W) and need an output of at least 1 x 1; RELU and
 * SOFTMAX keep the shape; ADD takes two inputs of one shape, MUL an input
 * and its factors, CONCAT inputs of equal planes. An output of more than
 * DCZ_MAX_ACT elements is refused too. DCZ_ERR_SHAPE when the inputs do not
 * fit (their count included), DCZ_ERR_UNSUPPORTED for an unknown op.
 * Attributes are assumed checked by dcz_op_check (a short attribute list
 * gives DCZ_ERR_FORMAT). Shared by the loader, the toolchain's reader and
 * writer. */
dcz_status dcz_op_shape(uint16_t op, const int32_t *attr, uint32_t nattr, const dcz_shape *in,
                        uint32_t nin, dcz_shape *out);

/* The weight and bias shapes of a weighted op (DENSE: (out, in) and (out);
 * CONV2D: (out_c, in_c / group, kh, kw) and (out_c)), from checked
 * attributes.
 * DCZ_ERR_UNSUPPORTED for an op without parameters. */
dcz_status dcz_op_param_shapes(uint16_t op, const int32_t *attr, dcz_shape *weight,
                               dcz_shape *bias);

/* The work of one sample through a layer of op (checked attributes, nin
 * inputs, output shape out): a weighted layer's multiply-adds (every
 * stored weight, pruned ones included, once per output position), a
 * window's reads per output for the pools, an element per output and input
 * for the rest. What dcz_options.max_work bounds. */
uint64_t dcz_op_work(uint16_t op, const int32_t *attr, uint32_t nin, const dcz_shape *out);

#endif /* DCZ_RUNTIME_OPS_H */
