/* qrequant.h: the integer region's ends and joints: the float input
 * quantized, accumulators requantized to the next layer's scale (the
 * requantization's reference in cpu/ref/kernels_int.c; the quantization's
 * reference and the 8-bit schemes' vector variants in kernels_qrequant.c).
 * The requantization's constants: model.h's dcz_requant.
 *
 * Checked by tests/unit/test_qkernels.c (every variant against its
 * reference, bit for bit).
 */
#ifndef DCZ_RUNTIME_CPU_Q8_QREQUANT_H
#define DCZ_RUNTIME_CPU_Q8_QREQUANT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

/* floor((v + 2^(shift-1)) / 2^shift): v / 2^shift rounded half up, without
 * relying on the sign behaviour of >>. shift 0 returns v. */
int64_t dcz_round_shift(int64_t v, unsigned shift);

/* One accumulator a of the 8-bit schemes (|a| < 2^31) requantized by
 * multiplier m and shift k, clamped to +-qmax: floor((a m + 2^(k-1)) /
 * 2^k), the floor taken without shifting a negative value; dcz_requant8's
 * value for it. Inline for the kernels that requantize a value alone (a
 * plane's last few, a channel that holds no weight). */
static inline dcz_q dcz_requant8_one(int64_t a, int64_t m, unsigned k, int64_t qmax)
{
    const int64_t t = a * m + (k ? (int64_t)1 << (k - 1) : 0), v = t >= 0 ? t >> k : ~(~t >> k);
    return (dcz_q)(v > qmax ? qmax : v < -qmax ? -qmax : v);
}

/* y (batch, channels, plane) from acc of the same layout (plane 1 for
 * DENSE), channel c requantized by rq (see dcz_requant). */
void dcz_requant_ref(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                     uint32_t plane, dcz_q *y);

/* The left shift of a channel's accumulator that makes its requantization
 * one of shift 33 (dcz_requant.pre): 33 - shift where the shift is 1 to 32
 * and bound (the largest |accumulator| the channel can produce) times
 * 2^(33 - shift) stays below 2^31, else 0. floor((a m + 2^(k-1)) / 2^k) is
 * floor((a 2^p m + 2^(k+p-1)) / 2^(k+p)) for any p, and a 2^p within 32
 * bits keeps the product within 62, so the same bits; a shift of 33 or
 * more takes the products' 32-bit high halves, which the AVX-512 kernels
 * narrow two vectors at a time, where one of 32 or less takes 64-bit lanes
 * one vector at a time (qshift_requant.c). */
uint8_t dcz_requant_pre(uint8_t shift, double bound);

/* y (n) = x / scale on the integer grid: round(x / s) half away from zero,
 * clamped to +-qmax; NaN gives 0. The quotient is taken in double, where it
 * is exact enough that the rounding is that of the real quotient (x and s
 * have 24-bit mantissas). dcz_quantize: the same bits, vectorized
 * (kernels_qrequant.c). */
void dcz_quantize_ref(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y);
void dcz_quantize(const float *x, size_t n, float scale, int32_t qmax, dcz_q *y);
/* y (batch, channels, plane) = the accumulators acc of the same layout as
 * floats: acc times its channel's scale in double, rounded once (the last
 * weighted layer's output). dcz_dequantize: the same bits, 8 a step on
 * AVX-512 for the 8-bit schemes (qmax 127: |acc| < 2^31, converted
 * exactly through 32 bits), else the reference. */
void dcz_dequantize_ref(const int64_t *acc, size_t batch, uint32_t channels, uint32_t plane, const double *scale,
                        float *y);
void dcz_dequantize(const int64_t *acc, size_t batch, uint32_t channels, uint32_t plane, const double *scale,
                    int32_t qmax, float *y);
/* dcz_requant_ref for qmax 127, where |acc| < 2^31: an add and a shift
 * where the reference divides (kernels_qrequant.c); dcz_requant8_ref one
 * element at a time, dcz_requant8 8 at a time on AVX-512, 4 on AVX2, the
 * same bits; dcz_requant8_isa the variant of isa (0 where this build or
 * machine has none). */
void dcz_requant8_ref(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                      uint32_t plane, dcz_q *y);
/* y (n) = dcz_requant8's value of the accumulators yf[i] + bias (yf's
 * floats integers, |yf[i] + bias| < 2^31) by mult and shift, clamped to lo
 * .. hi (within +-qmax): one channel's plane of the sums the float shift
 * form gives an integer convolution (cpu/q8/qconv.h, dcz_qconv2d_f32);
 * 8 a step on AVX2, or one at a time (ref, or a CPU without), the same
 * bits. */
void dcz_requant8_f32(const float *yf, size_t n, int32_t bias, int32_t mult, uint8_t shift, int32_t qmax, int32_t lo,
                      int32_t hi, int ref, dcz_q *y);
void dcz_requant8(const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                  uint32_t plane, dcz_q *y);
int dcz_requant8_isa(dcz_isa isa, const dcz_requant *rq, const int64_t *acc, size_t batch, uint32_t channels,
                     uint32_t plane, dcz_q *y);

#endif /* DCZ_RUNTIME_CPU_Q8_QREQUANT_H */
