/* qelem.h: integer layers without weights: ReLU, clamps, Add, Mul,
 * Concat, activations by table, max, average and global average pools
 * (the references in cpu/ref/kernels_int.c, the 8-bit schemes' vector
 * variants in kernels_qelem.c).
 *
 * Checked by tests/unit/test_qkernels.c (every variant against its
 * reference, bit for bit).
 */
#ifndef DCZ_RUNTIME_CPU_Q8_QELEM_H
#define DCZ_RUNTIME_CPU_Q8_QELEM_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

void dcz_qrelu_ref(dcz_q *x, size_t n);
/* x (n) = clamp(x, lo, hi): the bounds of an integer activation fused in
 * (lo <= hi). */
void dcz_qclamp_ref(dcz_q *x, size_t n, int32_t lo, int32_t hi);
/* y (n) = clamp(rq(a, mult[0], shift[0]) + rq(b, mult[1], shift[1]), +-qmax)
 * with rq(v, m, k) = round_shift(v m, k) (v m for k 0): both inputs
 * brought to the output's scale, then added. */
void dcz_qadd_ref(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult,
                  const uint8_t *shift, int32_t qmax, dcz_q *y);
/* The three above in vectors (kernels_qelem.c: Add in AVX-512 or AVX2
 * where both shifts are at most 62, ReLU and the clamp in AVX2), the same
 * bits; dcz_qadd clamps to lo .. hi, -qmax .. qmax for the reference's
 * bits, 0 .. qmax for those of a ReLU after it (an activation fused in,
 * load.c). With tables (NULL: none), the Add of the 8-bit schemes looks
 * each input's term up on AVX-512 (a and b within +-127, as every tensor
 * of the integer region). dcz_qadd_isa: on isa's variant (DCZ_ISA_REF:
 * the reference then the clamp; tables for DCZ_ISA_AVX512 alone), 0 where
 * this machine or the shifts have none. */
void dcz_qadd(const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift, int32_t lo,
              int32_t hi, const dcz_q *tables, dcz_q *y);
int dcz_qadd_isa(dcz_isa isa, const dcz_q *a, const dcz_q *b, size_t n, const int32_t *mult, const uint8_t *shift,
                 int32_t lo, int32_t hi, const dcz_q *tables, dcz_q *y);
/* The Add's tables of the 8-bit schemes: each input k's terms rq(v,
 * mult[k], shift[k]) for v = -127 .. 127 at k DCZ_QADD_TABLE + v + 127
 * (and one entry more, 0), dcz_qadd_table_entries entries (0 where no
 * kernel takes them: qmax not 127, a build without x86 kernels).
 * dcz_qadd_tables fills them; 0 where a term passes +-16383 (two terms
 * then add in 16 bits exactly) or a shift 62. */
#define DCZ_QADD_TABLE 256
uint64_t dcz_qadd_table_entries(int32_t qmax);
int dcz_qadd_tables(const int32_t *mult, const uint8_t *shift, int32_t qmax, dcz_q *tables);
void dcz_qrelu(dcz_q *x, size_t n);
void dcz_qclamp(dcz_q *x, size_t n, int32_t lo, int32_t hi);
/* y (batch, channels, plane) = clamp(rq(x f, mult, shift), +-qmax), f
 * (batch, channels) one factor per channel of each sample (plane 1: per
 * element). */
void dcz_qmul_ref(const dcz_q *x, const dcz_q *f, size_t batch, uint32_t channels, uint32_t plane,
                  int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y);
/* The same values in vectors (kernels_qelem.c: AVX-512 or AVX2 where the
 * shift is at most 62; the 8-bit schemes' planes of 1024 values or more by
 * a table of the values x can take, so x within +-qmax, as every tensor of
 * the integer region); dcz_qmul_isa on isa's variant, 0 where this
 * machine or the shift has none. */
void dcz_qmul(const dcz_q *x, const dcz_q *f, size_t batch, uint32_t channels, uint32_t plane, int32_t mult,
              uint8_t shift, int32_t qmax, dcz_q *y);
int dcz_qmul_isa(dcz_isa isa, const dcz_q *x, const dcz_q *f, size_t batch, uint32_t channels, uint32_t plane,
                 int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y);
/* y (batch, sum of width) = the nin inputs x[k] (batch, width[k]) side by
 * side per sample, each element clamp(rq(v, mult[k], shift[k]), +-qmax). */
void dcz_qconcat_ref(const dcz_q *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                     const int32_t *mult, const uint8_t *shift, int32_t qmax, dcz_q *y);
/* The same values in vectors (kernels_qelem.c: AVX-512 or AVX2 where every
 * shift is at most 62; an input already on the output's scale copied; on
 * AVX-512 with tables of the 8-bit schemes, the others looked up in them,
 * every x within +-qmax as in the integer region); dcz_qconcat_isa on
 * isa's variant, 0 where this machine or the shifts have none. tables:
 * NULL, or dcz_qconcat_tables' of mult and shift. */
void dcz_qconcat(const dcz_q *const *x, const uint32_t *width, uint32_t nin, size_t batch, const int32_t *mult,
                 const uint8_t *shift, int32_t qmax, const dcz_q *tables, dcz_q *y);
int dcz_qconcat_isa(dcz_isa isa, const dcz_q *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                    const int32_t *mult, const uint8_t *shift, int32_t qmax, const dcz_q *tables, dcz_q *y);
/* Entries of the tables dcz_qconcat_tables makes for nin inputs: 0 where
 * the scheme's qmax has none (past 127) or the build has no lookups
 * (off x86). */
uint64_t dcz_qconcat_table_entries(uint32_t nin, int32_t qmax);
/* tables (dcz_qconcat_table_entries of nin, qmax): input k's, from entry k
 * (2 qmax + 2), the values -qmax .. qmax rescaled by mult[k] and shift[k]
 * as dcz_qconcat_ref rescales them (and one entry more, never looked up). */
void dcz_qconcat_tables(uint32_t nin, const int32_t *mult, const uint8_t *shift, int32_t qmax, dcz_q *tables);
/* y (n) = table[x + qmax]: an activation by its table of 2 qmax + 1. */
void dcz_qtable_ref(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y);
/* The same on AVX-512 (kernels_qelem.c): 32 lookups a step by word
 * permutes of the table held in registers when qmax <= 127, else 16 by
 * gathers; the table must have 2 qmax + 2 entries, the last never looked
 * up. */
void dcz_qtable(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t n, dcz_q *y);
/* tb = table (of 2 qmax + 1 entries) by the low byte of the value looked
 * up, each entry a byte (the byte permutes' form, kernels_qelem.c); 0
 * where qmax passes 127, an entry passes a byte, or off x86. */
int dcz_qtable_bytes(const dcz_q *table, int32_t qmax, uint8_t tb[256]);
/* dcz_qtable over x and y (batch, channels, plane), but the planes of the
 * channels skip marks (channels bytes), which y keeps as they are: where
 * the convolution before left them unwritten and the one after takes
 * them as constants (load.c, pair_constants). The table made once a call. */
void dcz_qtable_planes(const dcz_q *table, int32_t qmax, const dcz_q *x, size_t batch, uint32_t channels,
                       uint32_t plane, const uint8_t *skip, dcz_q *y);
/* Integer pools on the geometry of the float ones: max over the window's
 * cells inside the input; average rounded half away from zero, divided as
 * dcz_avgpool_ref divides. */
void dcz_qmaxpool_ref(const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y);
/* The same, the interior columns of each row 16 at a time in AVX-512BW,
 * 16 or 8 in AVX2, where the column stride is 1 or 2 (kernels_qelem.c),
 * the same values. dcz_qmaxpool_isa on isa's variant (DCZ_ISA_REF: the
 * reference), 0 where this machine or the geometry has none. */
void dcz_qmaxpool(const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y);
int dcz_qmaxpool_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_q *x, size_t batch, dcz_q *y);
void dcz_qavgpool_ref(const dcz_conv_geom *g, int count_include_pad, const dcz_q *x,
                      size_t batch, dcz_q *y);
/* The same values where windows of 2 x 2 at stride 2 tile the image
 * without padding (DenseNet's transitions): each pair of cells summed by a
 * multiply-add of words, the two rows' pairs added, the sum rounded half
 * away from zero over 4, 16 outputs a step (AVX-512BW) or 8 (AVX2);
 * dcz_qavgpool_isa on isa's variant (DCZ_ISA_REF: the reference), 0 where
 * this machine or the geometry has none. */
void dcz_qavgpool(const dcz_conv_geom *g, int count_include_pad, const dcz_q *x, size_t batch, dcz_q *y);
int dcz_qavgpool_isa(dcz_isa isa, const dcz_conv_geom *g, int count_include_pad, const dcz_q *x, size_t batch,
                     dcz_q *y);
void dcz_qglobal_avgpool_ref(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                             dcz_q *y);
/* The global average into another scale: each plane's sum S requantized
 * as a weighted layer's accumulator is, clamp(rq(S, mult, shift)), exact
 * for any S; mult, shift from dcz_requant_params(s_in / (s_out plane)). */
void dcz_qglobal_avgpool_rescale_ref(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                                     int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y);
/* The same values on AVX-512 where planes hold 2^16 cells or fewer and the
 * shift is 62 or less (kernels_qelem.c), else by the reference;
 * dcz_qglobal_avgpool_rescale_isa on isa's variant, 0 where it declines. */
void dcz_qglobal_avgpool_rescale(uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch, int32_t mult,
                                 uint8_t shift, int32_t qmax, dcz_q *y);
int dcz_qglobal_avgpool_rescale_isa(dcz_isa isa, uint32_t channels, uint32_t plane, const dcz_q *x, size_t batch,
                                    int32_t mult, uint8_t shift, int32_t qmax, dcz_q *y);

#endif /* DCZ_RUNTIME_CPU_Q8_QELEM_H */
