/* qconv.h: integer convolutions other than the shift form: the
 * references (cpu/ref/kernels_int.c: direct, sparse by taps) and the
 * kernels of kernels_qconv.c (the taps in vectors, the product on int16
 * pairs and its patches, depthwise). The float convolutions' geometry they share:
 * cpu/f32/conv.h.
 *
 * Checked by tests/unit/test_qkernels.c (every kernel against
 * dcz_qconv2d_direct_ref on the convolution grid).
 */
#ifndef DCZ_RUNTIME_CPU_Q8_QCONV_H
#define DCZ_RUNTIME_CPU_Q8_QCONV_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/model.h"

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
/* The tap kernel of isa (kernels_qconv.c; DCZ_ISA_REF: dcz_qtap_ref; the
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

/* ---- integer sums held exactly by floats ------------------------------------
 * A float holds every integer of magnitude up to 2^24 exactly, so a sum of
 * integer products each of which, and each partial sum of which, stays
 * within that is computed exactly by fused multiply-adds in any order.
 * dcz_qconv2d_f32_rows: the output channels (rows) of the integer weights
 * s whose sums floats would not hold so on inputs of magnitude at most
 * xmax (the sum of the row's |w| times xmax past 2^24), each marked 1 in
 * over (NULL: counted only), the others 0; returns their count.
 * dcz_qconv2d_f32: acc (batch, out_c, out_h out_w) = bias + the
 * convolution of x by s: every row but those over marks (NULL: none) by
 * f, the shift form of s's weights as floats without those rows
 * (dcz_shift_build_int): each sample converted to floats, convolved by the
 * float shift kernels (their best variant, with no bias, split over
 * pool's threads where dcz_conv2d_shift_splits says so), the sums
 * converted back; the rows over marks by the integer taps (dcz_qtap_best,
 * ungrouped convolutions only). The integers of dcz_qconv2d_direct_ref,
 * on a CPU whose integer products run slower than its float ones (AVX2
 * without AVX-512 VNNI: the float form's taps at 8 floats a vector
 * against the dense int16 pairs of the other integer kernels). Scratch:
 * dcz_qconv2d_f32_scratch_floats. */
uint32_t dcz_qconv2d_f32_rows(const dcz_qsparse *s, int32_t xmax, uint8_t *over);
uint64_t dcz_qconv2d_f32_scratch_floats(const dcz_conv_geom *g);
void dcz_qconv2d_f32(dcz_pool *pool, const dcz_conv_geom *g, const dcz_shift *f, const dcz_qsparse *s,
                     const uint8_t *over, const int64_t *bias, const dcz_q *x, size_t batch, float *scratch,
                     int64_t *acc);
/* The same requantized by rq (an 8-bit scheme: qmax 127) as each channel's
 * sums are converted back, clamped to lo .. hi: y (batch, out_c, out_h
 * out_w), the bits of dcz_requant8 then dcz_qclamp on acc, without the
 * 64-bit accumulators. */
void dcz_qconv2d_f32_requant(dcz_pool *pool, const dcz_conv_geom *g, const dcz_shift *f, const dcz_qsparse *s,
                             const uint8_t *over, const int64_t *bias, const dcz_requant *rq, int32_t lo, int32_t hi,
                             const dcz_q *x, size_t batch, float *scratch, dcz_q *y);

#endif /* DCZ_RUNTIME_CPU_Q8_QCONV_H */
