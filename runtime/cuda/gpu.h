/* gpu.h: libdcz's CUDA backend (built with CUDA=1 or CUDA=auto where nvcc
 * is found; see the Makefile).
 *
 * A model opened with dcz_options.device GPU (or AUTO on a machine with a
 * CUDA device) is loaded into its CPU execution form as always (load.c),
 * then uploaded once (gpu.c): every weight in its compressed form
 * (convolutions: row pointers, column steps, codebook indices, the
 * codebook, as the CPU holds them; fully connected layers, and
 * convolutions that may run by patches, also in the chunk form of
 * gpu_kern.h, 16 bytes for 8 entries, which the sparse products read),
 * dense weights and biases, and the buffers every activation of a batch
 * lives in. dcz_run copies the input in, runs every layer on the device
 * through the operator table's GPU entry (ops.h: run_gpu), activations
 * never leaving the device between layers, a RELU or CLIP the loader fused
 * into the layer before applied by that layer's kernel (or right after
 * it, in place), and copies the output back. Batch-1 runs are replayed
 * from a CUDA graph captured on the first one. Every kernel of this folder
 * is launched so that it may start before the one ahead of it ends, and
 * waits for it before it touches an activation (gpu_kern.h:
 * dcz_gpu_launch).
 *
 * The kernels are the .cu files of this folder, twins of the CPU kernels: kernels_sparse.cu
 * (sparse fully connected layers and the patch products: the chunk form,
 * a group of lanes a row at batch 1, a warp a row and 64 samples of a
 * transposed input above), kernels_conv.cu
 * (sparse direct convolution, im2col, pools), kernels_ref.cu (activations,
 * softmax, Add, Mul, Concat, bias rows), kernels_int.cu (the integer
 * region of calibrated models of the 8-bit schemes: int8 values, dp4a,
 * int32 sums, the CPU's requantization). Dense layers and dense
 * convolutions go through cuBLAS. The kernels computing one output each
 * have their bodies in gpu_kern.h, checked on the host by
 * tests/unit/test_gpu_emu.c; every launched kernel is checked against the
 * CPU reference by tests/unit/test_gpu.c on a GPU (SKIP without one).
 *
 * Each launcher below enqueues its kernel on stream (a cudaStream_t) and
 * returns DCZ_ERR_DEVICE when the launch fails; pointers are device
 * pointers.
 */
#ifndef DCZ_RUNTIME_GPU_H
#define DCZ_RUNTIME_GPU_H

#include "runtime/cuda/gpu_kern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernels_sparse.cu ------------------------------------------------------ */

/* y (rows) = act(S x (cols) + bias), S in the chunk form: a group of
 * s->group lanes a row, a chunk a lane at a time, the codebook in shared
 * memory, and x too where s->stage says (gpu_kern.h: dcz_gk_chunk_stage). */
dcz_status dcz_spmv_chunks__cuda(const dcz_gchunks *s, const float *bias, const float *x, float *y, dcz_act act,
                                 void *stream);
/* Row r of sample j = act(S x_j + bias) where place puts it, the samples'
 * inputs transposed in xt (cols, samples): a block a row and 64 samples,
 * its parts warps (DCZ_GK_SPMM_PARTS) each a part of the row's chunks
 * (gpu_kern.h: dcz_gk_chunks_t), each entry decoded once for the 64
 * samples and their inputs read in two coalesced loads. */
dcz_status dcz_spmm_chunks__cuda(const dcz_gchunks *s, const float *bias, const float *xt, size_t samples,
                                 float *y, dcz_gplace place, dcz_act act, uint32_t parts, void *stream);
/* xt (cols, n) = x (n, cols) transposed. */
dcz_status dcz_transpose__cuda(const float *x, size_t n, uint32_t cols, float *xt, void *stream);

/* ---- kernels_conv.cu -------------------------------------------------------- */

/* y (batch, out_c, out_h, out_w) = act of the sparse convolution of x
 * (batch, in_c, in_h, in_w): a thread per output (dcz_gk_conv_sparse). */
dcz_status dcz_conv2d_sparse__cuda(const dcz_conv_geom *g, const dcz_gsparse *s, const float *bias,
                                   const float *x, size_t batch, dcz_act act, float *y, void *stream);
/* The same with dense weights w (out_c, in_c / groups, kh, kw): a thread
 * per output (dcz_gk_conv_dense). */
dcz_status dcz_conv2d_dense__cuda(const dcz_conv_geom *g, const float *w, const float *bias,
                                  const float *x, size_t batch, dcz_act act, float *y, void *stream);
/* colt (in_c kh kw, batch out_h out_w) = the patches of the batch x of a
 * convolution of one group, transposed (dcz_gk_patch_taps): what cuBLAS and
 * dcz_spmm_chunks__cuda read. */
dcz_status dcz_im2col_t__cuda(const dcz_conv_geom *g, const float *x, size_t batch, float *colt, void *stream);
/* Max (avg 0) or average (avg 1) pool of x (batch, in_c, in_h, in_w). */
dcz_status dcz_pool__cuda(const dcz_conv_geom *g, int avg, int count_include_pad, const float *x,
                          size_t batch, float *y, void *stream);
/* y (batch, channels) = the mean of each plane of x (batch, channels, plane). */
dcz_status dcz_global_avgpool__cuda(uint32_t channels, uint32_t plane, const float *x, size_t batch,
                                    float *y, void *stream);

/* ---- kernels_ref.cu ------------------------------------------------------------ */

/* y (n) = activation op (dcz_gk_act; param: its float attributes) of x. */
dcz_status dcz_activation__cuda(uint16_t op, const float *param, const float *x, size_t n, float *y,
                                void *stream);
/* y (batch, n) = the softmax of each row of x (one block per row). */
dcz_status dcz_softmax__cuda(const float *x, size_t batch, uint32_t n, float *y, void *stream);
/* y (n) = act(a + b). */
dcz_status dcz_add__cuda(const float *a, const float *b, size_t n, dcz_act act, float *y, void *stream);
/* y (batch, channels, plane) = x times f (batch, channels). */
dcz_status dcz_mul__cuda(const float *x, const float *f, size_t batch, uint32_t channels,
                         uint32_t plane, float *y, void *stream);
/* y (batch, sum of width) = the nin inputs x[k] (batch, width[k]) side by side. */
dcz_status dcz_concat__cuda(const float *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                            float *y, void *stream);
/* y = the channels of x a CHANNEL_SHUFFLE or SLICE of geometry g gathers
 * (dcz_gk_gather_from), elements of elem bytes: 4 (floats) or 1 (the
 * integer region's int8). */
dcz_status dcz_gather__cuda(const dcz_conv_geom *g, uint32_t start, uint32_t groups, const void *x, size_t elem,
                            size_t batch, void *y, void *stream);
/* y (batch, rows, plane) = act(c + bias[row]), c a cuBLAS product laid
 * out as y (by_rows 0; in place where c is y) or as (rows, batch, plane)
 * (by_rows 1): gpu_kern.h's dcz_gk_bias_act. */
dcz_status dcz_bias_act__cuda(const float *c, const float *bias, size_t batch, uint32_t rows, uint32_t plane,
                              int by_rows, dcz_act act, float *y, void *stream);

/* ---- kernels_int.cu: the integer region (8-bit schemes) ----------------------- */

#define DCZ_GPU_SPMM_SAMPLES 8
/* Output row r of sample b, finished by o (gpu_kern.h: dcz_gk_qfinish), in
 * o->y where place puts it: x (batch, cols) int8 times the rows of s; a
 * warp per row and DCZ_GPU_SPMM_SAMPLES samples, 4 entries a lane
 * multiplied and summed by one dp4a, the row's codebook in shared memory. */
dcz_status dcz_qspmm__cuda(const dcz_gqsparse *s, const dcz_gqout *o, const int8_t *x, size_t batch,
                           dcz_gplace place, void *stream);
/* The integer convolution of x (batch, in_c, in_h, in_w), a thread per
 * output (dcz_gk_qconv), finished by o into (batch, out_c, out_h, out_w). */
dcz_status dcz_qconv2d__cuda(const dcz_conv_geom *g, const dcz_gqsparse *s, const dcz_gqout *o,
                             const int8_t *x, size_t batch, void *stream);
/* col (batch out_h out_w, in_c kh kw) int8 = the patches of the batch x (one group). */
dcz_status dcz_qim2col__cuda(const dcz_conv_geom *g, const int8_t *x, size_t batch, int8_t *col, void *stream);
/* y (n) = x (n) on scale, as run.c quantizes the region's input. */
dcz_status dcz_quantize__cuda(const float *x, size_t n, float scale, int32_t qmax, int8_t *y, void *stream);
dcz_status dcz_qpool__cuda(const dcz_conv_geom *g, int avg, int count_include_pad, const int8_t *x,
                           size_t batch, int8_t *y, void *stream);
/* y (batch, channels) = each plane's integer mean, or its sum requantized
 * (rescale: mult, shift). */
dcz_status dcz_qmean__cuda(uint32_t channels, uint32_t plane, const int8_t *x, size_t batch, int rescale,
                           int32_t mult, uint8_t shift, int32_t qmax, int8_t *y, void *stream);
dcz_status dcz_qrelu__cuda(const int8_t *x, size_t n, int8_t *y, void *stream);
/* y (n) = table[x + qmax] (an activation's table, int8). */
dcz_status dcz_qtable__cuda(const int8_t *table, int32_t qmax, const int8_t *x, size_t n, int8_t *y,
                            void *stream);
dcz_status dcz_qadd__cuda(const int8_t *a, const int8_t *b, size_t n, const int32_t *mult,
                          const uint8_t *shift, int32_t qmax, int8_t *y, void *stream);
dcz_status dcz_qmul__cuda(const int8_t *x, const int8_t *f, size_t batch, uint32_t channels, uint32_t plane,
                          int32_t mult, uint8_t shift, int32_t qmax, int8_t *y, void *stream);
dcz_status dcz_qconcat__cuda(const int8_t *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                             const int32_t *mult, const uint8_t *shift, int32_t qmax, int8_t *y,
                             void *stream);

/* ---- the kernel of each layer (describe.c, so dcz info tells it anywhere) ---- */

/* The kernel a layer runs with on the device. */
typedef enum dcz_gpu_kernel {
    DCZ_GK_ELEMENT = 0,   /* a layer without weights: its op's kernel */
    DCZ_GK_DENSE_FC,      /* dense weights: cuBLAS sgemv (batch 1) or sgemm */
    DCZ_GK_SPARSE_FC,     /* compressed: dcz_spmv_chunks__cuda / dcz_spmm_chunks__cuda */
    DCZ_GK_SPARSE_FC_WIDE,/* compressed, at least DCZ_GPU_DENSE_DENSITY dense: dcz_spmv_chunks__cuda at
                             batch 1, cuBLAS sgemm on a dense copy above (dcz_gpu_dense_copy) */
    DCZ_GK_CONV_DENSE,    /* dense weights, one group: im2col (none for a 1x1 convolution of stride
                             1) and cuBLAS sgemm */
    DCZ_GK_CONV_DENSE_DIRECT, /* dense weights, grouped: dcz_conv2d_dense__cuda */
    DCZ_GK_CONV_DIRECT,   /* compressed, grouped: dcz_conv2d_sparse__cuda */
    DCZ_GK_CONV_DIRECT_WIDE, /* compressed, grouped, DCZ_GPU_GROUPED_DENSE_DENSITY dense or more:
                             dcz_conv2d_dense__cuda on a dense copy */
    DCZ_GK_CONV_IM2COL,   /* compressed, one group, under DCZ_GPU_DENSE_DENSITY: transposed im2col
                             (none for a pointwise one at batch 1) and dcz_spmm_chunks__cuda */
    DCZ_GK_CONV_IM2COL_WIDE, /* compressed, one group, DCZ_GPU_DENSE_DENSITY or more: as
                             CONV_IM2COL in launches under DCZ_GPU_DIRECT_MIN_OUTPUTS outputs,
                             as CONV_DENSE on a dense copy in larger ones (and, pointwise,
                             above batch 1) */
    DCZ_GK_QFC,           /* integer region: dcz_qspmm__cuda (dense weights too: every
                             entry present) */
    DCZ_GK_QCONV_DIRECT,  /* integer region, planes of DCZ_GPU_DIRECT_MIN_PLANE cells or
                             more, or grouped: dcz_qconv2d__cuda */
    DCZ_GK_QCONV_IM2COL   /* integer region, one group, smaller planes: dcz_qim2col__cuda
                             and dcz_qspmm__cuda */
} dcz_gpu_kernel;

/* Rules of the choice. The direct convolution walks a whole row in each
 * thread, one entry after the other, and its latency shows where few
 * outputs are in flight; the patch path (one im2col over the batch, then
 * a warp per row and 8 pixels, the row's entries split over the lanes)
 * pays a pass over the patches instead. Measured on an H100 (dcz bench,
 * compressed presets; batch 1 / batch 64, microseconds), the smallest
 * plane the direct kernel takes at 32 cells, then at 256:
 *   LeNet-5 94 / 299 -> 52 / 194, ResNet-style 313 / 1086 -> 142 / 835,
 *   conv-heavy CNN 250 / 1778 -> 111 / 1200, MobileNetV2-style
 *   326 / 1449 -> 207 / 1605, int8 ResNet-style 309 / 1075 -> 151 / 986;
 * at 1000 cells (28 x 28 planes by patches too) batch 1 gains more
 * (ResNet-style 102) and batch 64 loses (913). So a launch of fewer than
 * DCZ_GPU_DIRECT_MIN_OUTPUTS outputs (batch out_c out_h out_w: about 30
 * warps a multiprocessor of an H100) takes the patch path whatever its
 * planes (dcz_gpu_by_patches), the same compressed rows uploaded once for
 * both. Measured at batches 1 / 4 / 16 / 64 with the bound at 2^15, 2^17,
 * 2^19 and 2^21 outputs, 2^17 was the fastest or within 5% of it
 * everywhere: ResNet-style 102 / 170 / 323 / 849 us (2^21: 104 / 174 /
 * 324 / 921), CNN 78 / 162 / 380 / 1208, LeNet-5 45 / 77 / 98 / 201, int8
 * ResNet-style 119 / 202 / 368 / 998. Grouped convolutions run
 * direct whatever their planes: their rows are short, and a patch path per
 * group would cost two launches a group. The integer region keeps that
 * rule (DCZ_GPU_DIRECT_MIN_PLANE, then the bound).
 *
 * Float layers above it: a compressed layer at least DCZ_GPU_DENSE_DENSITY
 * full runs on a dense copy of its weights through cuBLAS where the launch
 * is large (a fully connected layer above batch 1, a convolution of one
 * group at DCZ_GPU_DIRECT_MIN_OUTPUTS outputs or more), the copy made the
 * first time a run needs it. Measured on an H100 at batch 64 (bench_gpu,
 * in a graph, us: the chunk product against sgemm on the dense matrix):
 * 4% full, VGG-6 182.7 against 288.4 and VGG-7 44.1 against 63.7; 8-9%
 * full, Alex-6 150.5 against 126.0, Alex-7 75.0 against 64.3, LeNet-300's
 * fc1 9.05 against 7.79 (its fc2, 7.9%, 7.54 against 8.81, the one loss,
 * by a microsecond). Whole models at batch 64, where the compressed
 * convolutions (90% pruned) ran direct: ResNet-style preset 736 against
 * 436 dense, MobileNetV2-style 1,211 against 704, torchvision ResNet-18
 * at 224 x 224 35 ms against 18 (653 against 569 us at batch 1): a kernel
 * that reads every kept weight's inputs apart cannot match cuBLAS, whose
 * tiles reuse each input across many outputs, on a matrix a tenth full.
 *
 * A pointwise layer that wide runs on its dense copy at every batch above
 * 1, whatever the launch: cuBLAS reads its input as it lies, where the
 * chunk product needs it laid out first. Measured on an H100 (dcz bench
 * --per-layer, the MobileNetV2-style preset compressed to about half its
 * weights, batch 64, us, compressed against dense), before: the 1x1
 * projections of 7 x 7 and 4 x 4 planes (launches under 2^17 outputs)
 * 15.7 to 28.7 against 12.2 to 16.6; at batch 1 the chunk product, which
 * reads a pointwise layer's one sample as its patches, won (7.4 to 12.2
 * against 9.4 to 13.9).
 *
 * A grouped (depthwise) compressed layer at least
 * DCZ_GPU_GROUPED_DENSE_DENSITY full runs the dense direct kernel on a
 * dense copy. The sparse direct kernel carries each kept weight's channel
 * and tap from entry to entry and costs 6 to 7 times a dense tap: measured
 * (same runs), torchvision's MobileNetV2 with a tenth of its weights kept ran its depthwise
 * layers sparse in 0.58 of the dense time at batch 64 (conv2: 266 against
 * 459 us) and 0.71 at batch 1 (8.8 against 12.4), so the two cross near a
 * sixth full; the preset's depthwise layers, left whole by pruning, ran
 * sparse 25 to 55% slower at batch 64 (inv3.dw 62.8 against 40.5) and
 * about 1 us slower at batch 1. These two rules come from those layer
 * times; no GPU run has timed them yet (bench/gpu-notes.md). */
#define DCZ_GPU_DIRECT_MIN_PLANE 256
#define DCZ_GPU_DIRECT_MIN_OUTPUTS 131072
#define DCZ_GPU_DENSE_DENSITY 0.06
#define DCZ_GPU_GROUPED_DENSE_DENSITY 0.15

struct dcz_model;
struct dcz_exec_layer;

dcz_gpu_kernel dcz_gpu_pick(const struct dcz_exec_layer *l);
/* Nonzero when convolution l, whose kernel is k, runs by patches at batch
 * samples: every float convolution of one group but a pointwise one
 * (shapes.h: dcz_conv_pointwise) through cuBLAS, which reads its input as
 * it lies, and a pointwise one at batch 1, whose input is its patches
 * already (one sample: (in_c, pixels), as the patches lie); the integer ones of one group below DCZ_GPU_DIRECT_MIN_PLANE
 * cells, and the integer direct ones of one group below
 * DCZ_GPU_DIRECT_MIN_OUTPUTS outputs. */
int dcz_gpu_by_patches(const struct dcz_exec_layer *l, dcz_gpu_kernel k, size_t batch);
/* Nonzero when compressed layer l, whose kernel is k, runs on a dense
 * copy of its weights in a launch of batch samples (SPARSE_FC_WIDE above
 * batch 1, CONV_IM2COL_WIDE at DCZ_GPU_DIRECT_MIN_OUTPUTS outputs or more
 * and a pointwise one above batch 1, through cuBLAS; CONV_DIRECT_WIDE
 * always, direct); it does at any larger batch too. */
int dcz_gpu_dense_copy(const struct dcz_exec_layer *l, dcz_gpu_kernel k, size_t batch);
/* ---- gpu.c: the model on the device ------------------------------------------ */

/* DCZ_OK when this build has the backend and the machine a CUDA device;
 * else DCZ_ERR_DEVICE, why saying what is missing (the CUDA runtime's
 * reason included). */
dcz_status dcz_gpu_probe(char *why, size_t why_len);

/* The build's CUDA targets and runtime, and the device found (for
 * dcz_backend_describe). */
void dcz_gpu_build_info(char *buf, size_t len);

/* Uploads m's layers to the device (m->gpu); the CPU form stays as it is.
 * DCZ_ERR_UNSUPPORTED for a model the backend does not run (a calibrated
 * model of 16-bit fixed point, whose sums need 64 bits), DCZ_ERR_DEVICE or
 * DCZ_ERR_NOMEM when the device fails or is full. */
dcz_status dcz_gpu_open(struct dcz_model *m);
/* dcz_run on the device. */
dcz_status dcz_gpu_run(struct dcz_model *m, const float *input, size_t batch, float *output);
/* dcz_run on the device at batch samples, adding each layer's device time
 * to ns[i] (events around it; nothing for a layer the one before applies,
 * whose time counts there): dcz_run_layer_times on a GPU. */
dcz_status dcz_gpu_layer_times(struct dcz_model *m, const float *input, size_t batch, float *output, uint64_t *ns);
/* bytes of page-locked host memory (dcz_host_alloc on a GPU model), or
 * NULL; and its free. */
void *dcz_gpu_host_alloc(size_t bytes);
void dcz_gpu_host_free(void *p);
/* Frees what dcz_gpu_open made (m->gpu NULL is fine). */
void dcz_gpu_close(struct dcz_model *m);

#ifdef __cplusplus
}
#endif

#endif /* DCZ_RUNTIME_GPU_H */
