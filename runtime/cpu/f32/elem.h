/* elem.h: the float layers without weights that run element by element:
 * ReLU, Clip, HardSigmoid, HardSwish, Mul, Add (kernels_elem.c, in
 * vectors, and their references in
 * cpu/ref/kernels_ref.c), the fused activation a kernel applies as it
 * stores (dcz_act_apply), and the scalar references of Mul, Concat and
 * Softmax.
 *
 * Checked by tests/unit/test_simd.c (each variant against its reference,
 * bit for bit) and tests/unit/test_kernels.c.
 */
#ifndef DCZ_RUNTIME_CPU_F32_ELEM_H
#define DCZ_RUNTIME_CPU_F32_ELEM_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/shapes.h"
#include "runtime/threads.h"
#include "runtime/tool.h"

void dcz_relu_ref(float *x, size_t n);
/* y (n) = ReLU of x (n), vectorized (kernels_elem.c), the reference's bits;
 * y may be x. dcz_relu_isa: the variant of isa, 0 when missing. */
void dcz_relu(const float *x, size_t n, float *y);
int dcz_relu_isa(dcz_isa isa, const float *x, size_t n, float *y);
/* CLIP (ReLU6 and kin) in vectors, the bits of dcz_activation_ref's (AVX2,
 * NEON; y may be x); dcz_clip_isa: the variant of isa, 0 when missing. */
void dcz_clip(float lo, float hi, const float *x, size_t n, float *y);
int dcz_clip_isa(dcz_isa isa, float lo, float hi, const float *x, size_t n, float *y);
/* HARD_SIGMOID (param: alpha, beta) or HARD_SWISH in vectors, the bits of
 * dcz_activation_ref's (AVX2, NEON; y may be x); dcz_hard_act_isa: the
 * variant of isa, 0 when missing (or op is another). */
void dcz_hard_act(uint16_t op, const float *param, const float *x, size_t n, float *y);
int dcz_hard_act_isa(dcz_isa isa, uint16_t op, const float *param, const float *x, size_t n, float *y);
/* SIGMOID or SILU in vectors, the bits of dcz_activation_ref's (AVX-512,
 * AVX2, NEON; y may be x); dcz_exp_act_isa: the variant of isa, 0 when missing
 * (or op is another). */
void dcz_exp_act(uint16_t op, const float *x, size_t n, float *y);
int dcz_exp_act_isa(dcz_isa isa, uint16_t op, const float *x, size_t n, float *y);
/* An activation of the operator table in vectors where it has them
 * (HARD_SIGMOID, HARD_SWISH, SIGMOID, SILU, CLIP), else by its reference:
 * the reference's bits either way. */
void dcz_activation(uint16_t op, const float *param, const float *x, size_t n, float *y);
/* MUL in vectors, the bits of dcz_mul_ref (AVX2, NEON; y may be x);
 * dcz_mul_isa: the variant of isa, 0 when missing. */
void dcz_mul(const float *x, const float *f, size_t batch, uint32_t channels, uint32_t plane, float *y);
int dcz_mul_isa(dcz_isa isa, const float *x, const float *f, size_t batch, uint32_t channels, uint32_t plane,
                float *y);
/* act (NULL or op 0: none; ReLU, CLIP, SiLU or HardSwish) over y (n) in
 * place, by dcz_relu, dcz_clip, dcz_exp_act or dcz_hard_act: the bits of
 * dcz_act_one. */
void dcz_act_apply(const dcz_act *act, float *y, size_t n);
/* ADD in vectors, then act (NULL or op 0: none; ReLU or CLIP): the bits
 * of dcz_add_ref and the activation's reference after it (AVX2, NEON; y
 * may be a or b); dcz_add_isa: the variant of isa, 0 when missing. */
void dcz_add(const float *a, const float *b, size_t n, const dcz_act *act, float *y);
int dcz_add_isa(dcz_isa isa, const float *a, const float *b, size_t n, const dcz_act *act, float *y);
/* y (batch, sum of width) = the nin inputs x[k] (batch, width[k]) side by
 * side, each sample's in order: dcz_concat_ref's copies, split over pool's
 * threads (NULL: the caller's alone) by ranges of the output where it
 * reaches DCZ_SPLIT_ELEMS values. */
void dcz_concat_pool(dcz_pool *pool, const float *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                     float *y);
/* dcz_add split over pool's threads (NULL: the caller's alone) where n
 * reaches DCZ_SPLIT_ELEMS: the same bits. */
void dcz_add_pool(dcz_pool *pool, const float *a, const float *b, size_t n, const dcz_act *act, float *y);

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
/* in-place softmax over each of batch rows of width n */
void dcz_softmax_ref(float *x, size_t batch, size_t n);

#endif /* DCZ_RUNTIME_CPU_F32_ELEM_H */
