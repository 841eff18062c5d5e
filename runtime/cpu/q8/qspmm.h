/* qspmm.h: the integer sparse matrix of fully connected layers on a
 * calibrated model: the references on 64-bit sums (cpu/ref/kernels_int.c)
 * and the 8-bit schemes' vector tiles on 32-bit sums (kernels_qspmm.c).
 * The integer lane form has its own header (qlanes.h).
 *
 * Checked by tests/unit/test_qkernels.c (every variant against
 * dcz_qspmm_ref, bit for bit).
 */
#ifndef DCZ_RUNTIME_CPU_Q8_QSPMM_H
#define DCZ_RUNTIME_CPU_Q8_QSPMM_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

/* acc (batch, rows) = x (batch, cols) S^T + bias; bias (rows) or NULL.
 * Reference: each sample on its own, entries decoded per sample. */
void dcz_qspmm_ref(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                   int64_t *acc);
/* The stream form (sparse.h, dcz_fc_stream_ref) on integers: weight e of
 * row r is qtab[r * w->k + index]; dcz_qspmm_ref's sums. */
void dcz_qfc_stream_ref(const dcz_tensor_view *w, const dcz_q *qtab, const int64_t *bias, const dcz_q *x,
                        size_t batch, int64_t *acc, void *scratch);
/* The same, each entry decoded once for all samples; on codebook rows with
 * more entries than codebook values, inputs are first summed per codebook
 * value and multiplied once per value (exact in integers). */
void dcz_qspmm(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
               int64_t *acc);

/* The 8-bit schemes on 32-bit sums (kernels_qspmm.c): dcz_qspmm's result
 * for a model the loader admitted with qmax 127 (every sum within 32 bits),
 * batches of half a tile or more by vector tiles (16 samples; 32 on
 * AVX-512) in scratch (of dcz_qspmm8_scratch_floats(cols) floats), or
 * on AVX-512 by s's integer lane form when it has one.
 * dcz_qspmm8_isa runs the variant of isa (DCZ_ISA_REF: one sample at a
 * time); 0 when this build or machine has none. */
uint64_t dcz_qspmm8_scratch_floats(uint32_t cols);
void dcz_qspmm8(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, int16_t *scratch,
                int64_t *acc);
int dcz_qspmm8_isa(dcz_isa isa, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                   int16_t *scratch, int64_t *acc);
/* The vector variant dcz_qspmm8 runs here, with its tile ("avx512 tiles
 * of 32 samples", "avx2 ...", "neon ..."), or NULL. */
const char *dcz_qspmm8_variant(void);

#endif /* DCZ_RUNTIME_CPU_Q8_QSPMM_H */
