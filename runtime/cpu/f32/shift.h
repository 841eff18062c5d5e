/* shift.h: float convolution by shifted planes on the shift form
 * (model.h's dcz_shift): the form's builder, the cost model that decides
 * where it runs, and its kernels (kernels_shift.c, whose opening comment
 * describes the form). The integer twin: cpu/q8/qshift.h.
 *
 * Checked by tests/unit/test_kernels.c: every variant against the scalar
 * reference, bit for bit, on the convolution grid.
 */
#ifndef DCZ_RUNTIME_CPU_F32_SHIFT_H
#define DCZ_RUNTIME_CPU_F32_SHIFT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

/* ---- the shift form ----------------------------------------------------------
 * dcz_shift: model.h. */
/* The channels a block of the shift form of a convolution of geometry g
 * and nnz stored weights: 1, 2 or 4 by a cost model of the kernel. */
uint32_t dcz_shift_pick_block(const dcz_conv_geom *g, uint64_t nnz);
/* Taps (at most) and bytes of the shift form of g in blocks of ob
 * channels, nnz stored weights. */
uint64_t dcz_shift_taps_bound(const dcz_conv_geom *g, uint64_t nnz, uint32_t ob);
/* Whether the form of g in blocks of ob channels holds each tap's window
 * cell (dcz_shift.cell): a depthwise layer's, whose kernels run each
 * channel by its taps' rows and columns (shift_depthwise.c; found from the
 * offsets on every run, they took 2.8% of compressed MobileNetV2's). */
int dcz_shift_cells(const dcz_conv_geom *g, uint32_t ob);
uint64_t dcz_shift_bytes(const dcz_conv_geom *g, uint64_t nnz, uint32_t ob);
/* f = the shift form of a convolution of geometry g in blocks of ob
 * channels (grouped: ob divides out_c / group, so a block stays within a
 * group), in mem (dcz_shift_bytes, 4-byte aligned), from its execution
 * form s, or when s is NULL from its dense weights w (out_c, in_c / group,
 * kh, kw), every one stored. */
void dcz_shift_build(const dcz_conv_geom *g, const dcz_sparse *s, const float *w, uint32_t ob, void *mem,
                     dcz_shift *f);
/* The same from the integer weights q of a calibrated convolution, each
 * stored as the float of its integer (exact: |w| < 2^15), for the integer
 * convolution whose sums floats hold exactly (cpu/q8/qconv.h,
 * dcz_qconv2d_f32); the rows skip marks (NULL: none) left empty. */
void dcz_shift_build_int(const dcz_conv_geom *g, const dcz_qsparse *q, const uint8_t *skip, uint32_t ob, void *mem,
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
 * (shift_depthwise.c), or NULL where the shift form itself runs it. */
const char *dcz_conv2d_shift_depthwise(const dcz_conv_geom *g, const dcz_shift *f);
/* Whether the AVX-512 rows kernel takes g's channels that keep every cell
 * of their window by whole windows (shift_depthwise.c, dw_full__avx512),
 * where it runs g (dcz_conv2d_shift_depthwise: "rows" on AVX-512); 0 off
 * x86. */
int dcz_shift_dw_full_takes(const dcz_conv_geom *g);
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
/* dcz_conv2d_shift_act with each sample's output channel blocks split
 * over pool's threads (NULL: the caller's alone), all reading the sample
 * split once into scratch: the same bits at any thread count. The vector
 * maps split each sample's channel blocks, the depthwise kernels their
 * output channels over every sample; the generic path (a residual the
 * stores do not take) runs on the caller's thread. */
void dcz_conv2d_shift_pool(dcz_pool *pool, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                           const float *x, size_t batch, const dcz_act *act, const float *res, float *scratch,
                           float *y);
/* Whether a convolution on the shift form is worth splitting over
 * threads: two blocks, and DCZ_SPLIT_MACS (threads.h), or for a layer a
 * depthwise kernel runs 2^16 outputs a sample (kernels_shift.c). */
int dcz_conv2d_shift_splits(const dcz_conv_geom *g, const dcz_shift *f);
/* Whether dcz_conv2d_shift_act on this CPU adds the residual as its
 * kernel stores the sums (AVX-512, not the depthwise kernels), rather than
 * as a slower generic path copies them out. */
int dcz_conv2d_shift_res_fuses(const dcz_conv_geom *g, const dcz_shift *f);
/* dcz_conv2d_shift_fits: a float convolution of geometry g can run on its
 * shift form: its scratch within DCZ_CONV_SCRATCH_MAX.
 * dcz_conv2d_pick_shift, the rule: one of nnz stored weights should: it fits,
 * and either the dense product cannot run it (grouped, or patches past the
 * cap) or the shift kernel's taps (in its blocks' cost, over the output
 * plane as computed) take less time than the dense product's multiply-adds
 * of 16 lanes (over the plane in whole vectors, as it runs). The costs of
 * a tap and of a multiply-add are measured per instruction set
 * (shift_form.c, shift_costs). */
int dcz_conv2d_shift_fits(const dcz_conv_geom *g);
int dcz_conv2d_pick_shift(const dcz_conv_geom *g, uint64_t nnz);

/* ---- between the family's files -------------------------------------------
 * Not for callers: what kernels_shift.c's dispatch and the cost model of
 * shift_form.c take from the other files of the family. */

/* The instruction set dcz_conv2d_shift runs here (kernels_shift.c; the
 * scalar reference: DCZ_ISA_REF), whose costs the cost model weighs. */
dcz_isa dcz_shift_best(void);

/* Whether g is a depthwise convolution of a 1 x 1 window at stride 1
 * without padding, which the rows kernels (both instruction sets) run as
 * whole planes, a fused multiply-add an output; 0 in a build without the
 * x86 float kernels. */
int dcz_shift_dw_scale_takes(const dcz_conv_geom *g, const dcz_shift *f);

#if DCZ_BUILD_F32_X86
struct split_geom;

/* xs = the split input of sample x by isa's vector split
 * (shift_split_x86.c); 0 (nothing written) where isa has none for g. */
int dcz_shift_split_vector(dcz_isa isa, const dcz_conv_geom *g, const struct split_geom *q, const float *x,
                           float *xs);

/* The depthwise kernels (shift_depthwise.c). */
/* Which of the two AVX-512 depthwise kernels runs g on the shift form f
 * (dcz_shift_dw_path): DCZ_SHIFT_DW_PLANE where the plane fits
 * (dw_plane_fits), else DCZ_SHIFT_DW_ROWS, except at stride 1 over rows of
 * 8 or fewer, where the shift form is faster; DCZ_SHIFT_DW_NONE for other
 * convolutions. */
enum { DCZ_SHIFT_DW_NONE, DCZ_SHIFT_DW_ROWS, DCZ_SHIFT_DW_PLANE };
int dcz_shift_dw_path(const dcz_conv_geom *g, const dcz_shift *f);
/* Each kernel runs output channels [c0, c1) of every sample. */
void dcz_shift_dw_plane__avx512(const dcz_conv_geom *g, const struct split_geom *q, const dcz_shift *f,
                                const float *bias, const float *x, size_t batch, const dcz_act *act, uint32_t c0,
                                uint32_t c1, float *y);
void dcz_shift_dw_rows_run__avx512(const dcz_conv_geom *g, const struct split_geom *q, const dcz_shift *f,
                                   const float *bias, const float *x, size_t batch, const dcz_act *act, uint32_t c0,
                                   uint32_t c1, float *y);
/* The bands of kernels_bands.c: whether the AVX-512 rows kernel runs g
 * on f (a depthwise layer, by whole windows where a channel keeps every
 * cell, else by its taps); the output rows of its calls (a band's rows are
 * a multiple of them); output rows oy0 .. oy1 - 1 of every channel of one
 * sample (y) from a ring of ring_rows input rows a channel: channel c's
 * input row iy at ring + (c ring_rows + iy % ring_rows) in_w
 * (shift_depthwise.c). */
int dcz_shift_dw_band_takes(const dcz_conv_geom *g, const dcz_shift *f);
uint32_t dcz_shift_dw_band_step(const dcz_conv_geom *g);
/* The bands run from a plan, made once for a thread's bands in
 * dcz_shift_dw_band_plan_bytes() bytes at a 64-byte boundary. */
uint64_t dcz_shift_dw_band_plan_bytes(void);
void dcz_shift_dw_band_plan__avx512(const dcz_conv_geom *g, void *mem);
void dcz_shift_dw_band__avx512(const void *plan, const dcz_conv_geom *g, const dcz_shift *f, const float *bias,
                               const dcz_act *act, const float *ring, uint32_t ring_rows, uint32_t oy0, uint32_t oy1,
                               float *y);
/* The bands' pointwise layer on its shift form: output pixels p0 .. p0 +
 * n - 1 (n a multiple of 16) of pointwise convolution g (1 x 1, stride
 * 1, no padding) on f, straight from one sample's input x (no split: the
 * form's offsets are x's planes), act applied, channel c's at y + c
 * ystride: the bits of dcz_conv2d_shift_act at those pixels (AVX-512,
 * kernels_shift.c). */
void dcz_shift_pixels__avx512(const dcz_conv_geom *g, const dcz_shift *f, const float *bias, const dcz_act *act,
                              const float *x, size_t p0, size_t n, float *y, size_t ystride);
/* whether the AVX2 rows kernel runs g on the shift form f (column stride
 * 2, or rows of more than 32 outputs) */
int dcz_shift_dw_rows_avx2(const dcz_conv_geom *g, const dcz_shift *f);
void dcz_shift_dw_rows_run__avx2(const dcz_conv_geom *g, const struct split_geom *q, const dcz_shift *f,
                                 const float *bias, const float *x, size_t batch, const dcz_act *act, uint32_t c0,
                                 uint32_t c1, float *y);
/* whether the AVX2 channels-in-lanes kernel runs g on the shift form f,
 * and the floats of scratch it needs at the least; it runs channels
 * [c0, c1) (c0 a multiple of 8) in a scratch of `floats` */
int dcz_shift_dw_lanes_fit(const dcz_conv_geom *g, const dcz_shift *f);
uint64_t dcz_shift_dw_lanes_floats(const dcz_conv_geom *g);
void dcz_shift_dw_lanes_run__avx2(const dcz_conv_geom *g, const struct split_geom *q, const dcz_shift *f,
                                  const float *bias, const float *x, size_t batch, const dcz_act *act, uint32_t c0,
                                  uint32_t c1, float *scratch, uint64_t floats, float *y);
#endif

#endif /* DCZ_RUNTIME_CPU_F32_SHIFT_H */
