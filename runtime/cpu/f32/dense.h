/* dense.h: a dense fully connected float layer by rows of weights: the
 * scalar reference (cpu/ref/kernels_ref.c) and its vector variants
 * (kernels_dense.c). The same layer on its weights transposed at load runs
 * on the dense matrix product (gemm.h).
 *
 * Checked by tests/unit/test_simd.c (every variant against the reference).
 */
#ifndef DCZ_RUNTIME_CPU_F32_DENSE_H
#define DCZ_RUNTIME_CPU_F32_DENSE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tool.h"

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

#endif /* DCZ_RUNTIME_CPU_F32_DENSE_H */
