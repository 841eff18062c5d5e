/* gemm.h: the dense matrix product of libdcz (kernels_gemm.c), which
 * dense convolutions run on their patches, dense fully connected layers on
 * their weights transposed at load, Winograd's transforms on their
 * products, and the trainer on its layers; and its integer twin on int16
 * pairs, which the 8-bit schemes' convolutions run on their weights
 * expanded at load.
 */
#ifndef DCZ_RUNTIME_CPU_F32_GEMM_H
#define DCZ_RUNTIME_CPU_F32_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/shapes.h"
#include "runtime/tool.h"

/* C (m, n) = A (m, k) B (k, n) + a bias per row of C (bias_m) or per
 * column (bias_n), or none; A rows lda floats apart, B rows ldb apart, C
 * rows ldc apart. Each output starts at its bias (else 0) and adds its k
 * products in order, each by a fused multiply-add (fmaf). The reference
 * loops; dcz_gemm_f32 runs the best vector variant of this machine
 * (kernels_gemm.c), dcz_gemm_f32_isa the one asked for (0: this build or
 * machine lacks it, nothing written): ldb is at least n; they read whole
 * vectors of B's rows, past a row's n columns into the next row (whatever
 * its values: those lanes are never stored), but not past the n columns of
 * B's last row, so B may be a tensor whose rows are its planes, unpadded.
 * All of them give the same bits. */
#define DCZ_GEMM_PAD 16
static inline size_t dcz_gemm_ldb(size_t n) { return (n + DCZ_GEMM_PAD - 1) / DCZ_GEMM_PAD * DCZ_GEMM_PAD; }
void dcz_gemm_f32_ref(size_t m, size_t n, uint32_t k, const float *a, size_t lda, const float *b, size_t ldb,
                      const float *bias_m, const float *bias_n, float *c, size_t ldc);
void dcz_gemm_f32(size_t m, size_t n, uint32_t k, const float *a, size_t lda, const float *b, size_t ldb,
                  const float *bias_m, const float *bias_n, float *c, size_t ldc);
int dcz_gemm_f32_isa(dcz_isa isa, size_t m, size_t n, uint32_t k, const float *a, size_t lda, const float *b,
                     size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc);
/* The same, then act (NULL or op 0: none) on each output, dcz_act_one's
 * bits: the vector variants apply it in registers as their tiles store the
 * sums the last time, the reference after its loops. */
void dcz_gemm_f32_act_ref(const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a, size_t lda,
                          const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc);
void dcz_gemm_f32_act(const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a, size_t lda,
                      const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc);
int dcz_gemm_f32_act_isa(dcz_isa isa, const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a,
                         size_t lda, const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c,
                         size_t ldc);
/* The same with A's columns ka floats apart: A (i, p) at a[i lda + p ka]
 * (ka 1 above), so that A may be a matrix laid out by columns (lda 1): a
 * 1 x 1 convolution's input planes read as its pixels' rows. And next
 * (NULL: none): next_bytes that the caller reads after this product (the
 * next panel of a layer's weights, which it runs as products of one panel
 * each), and before them, where B is one panel, its blocks of k after the
 * first, asked for from memory a line a step of the tiles' k loops
 * (shared evenly among the tiles of the walk by blocks of k, the one
 * taken where C has more than one row and fits the caches), so that they
 * arrive while the tiles before them run, where the first tile of a block
 * would otherwise wait for each of its lines in turn. The reference
 * ignores it. */
void dcz_gemm_f32_strided_ref(const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a, size_t lda,
                              size_t ka, const float *b, size_t ldb, const float *bias_m, const float *bias_n,
                              float *c, size_t ldc);
void dcz_gemm_f32_strided(const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a, size_t lda, size_t ka,
                          const float *b, size_t ldb, const float *bias_m, const float *bias_n, float *c, size_t ldc,
                          const void *next, size_t next_bytes);
int dcz_gemm_f32_strided_isa(dcz_isa isa, const dcz_act *act, size_t m, size_t n, uint32_t k, const float *a,
                             size_t lda, size_t ka, const float *b, size_t ldb, const float *bias_m,
                             const float *bias_n, float *c, size_t ldc, const void *next, size_t next_bytes);
/* What the tiles of the vector variants still ask for ahead (the walk's
 * next, kernels_gemm.c): from at, lines of 64 bytes, at most share of
 * them a tile */
typedef struct dcz_gemm_ahead {
    const char *at;
    size_t lines;
    const char *then;   /* then then_lines from there */
    size_t then_lines, share;
} dcz_gemm_ahead;
/* The variant dcz_gemm_f32 runs here ("avx512", "avx2", "neon"), NULL: the reference. */
const char *dcz_gemm_f32_variant(void);
/* The integer product of the 8-bit schemes: C (m, n) int64 = bias_m + A B
 * where A (m, k2) and B (k2, n) hold int32 pairs of int16 (the first of a
 * pair in the low half): each output adds, over p, a's pair times b's pair
 * (two products). The vector variants (AVX-512BW, AVX2: vpmaddwd) sum in
 * 32 bits, so every sum, the bias included, must fit 32 bits, which the
 * loader checks for the 8-bit schemes; then all give the same integers.
 * ldb at least n rounded up to DCZ_GEMM_PAD, and B's last row that long
 * (the vector variants read whole vectors of every row). */
void dcz_qgemm_ref(size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b, size_t ldb,
                   const int64_t *bias_m, int64_t *c, size_t ldc);
void dcz_qgemm(size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b, size_t ldb,
               const int64_t *bias_m, int64_t *c, size_t ldc);
int dcz_qgemm_isa(dcz_isa isa, size_t m, size_t n, uint32_t k2, const int32_t *a, size_t lda, const int32_t *b,
                  size_t ldb, const int64_t *bias_m, int64_t *c, size_t ldc);
const char *dcz_qgemm_variant(void);
#endif /* DCZ_RUNTIME_CPU_F32_GEMM_H */
