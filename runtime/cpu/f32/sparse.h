/* sparse.h: the float sparse matrix kernels of fully connected layers on
 * model.h's execution form: the references (cpu/ref/kernels_ref.c), batch 1
 * by the column form (kernels_spmv.c, which also picks between it and the
 * lane forms of lanes.h) and the batch product by tiles (kernels_spmm.c),
 * over the worker threads or not.
 *
 * Checked by tests/unit/test_simd.c: every variant this machine runs
 * against the references on an edge-case grid, bit for bit.
 */
#ifndef DCZ_RUNTIME_CPU_F32_SPARSE_H
#define DCZ_RUNTIME_CPU_F32_SPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

/* y (out) = S x (in) + bias, batch 1. */
void dcz_spmv_ref(const dcz_sparse *s, const float *bias, const float *x, float *y);
/* y (batch, out) = x (batch, in) S^T + bias, every entry decoded once per row. */
void dcz_spmm_ref(const dcz_sparse *s, const float *bias, const float *x, size_t batch,
                  float *y);

/* The stream form (dcz_options.stream_weights; cpu/ref/stream.c): y
 * (batch, rows) = x (batch, cols) W^T + bias for a CODEBOOK weight w read
 * as stored at every call, its stored weights in position order
 * (dcz_entries: no decoded copy anywhere); codebook (w->k) its values as
 * floats, scratch dcz_entries_scratch_bytes(w) bytes. The references' sums
 * in their order: the same bits as dcz_spmm_ref on the decoded form. The
 * loader has read the streams to their end: a failure here (none) leaves
 * the output's rest at its bias. */
void dcz_fc_stream_ref(const dcz_tensor_view *w, const float *codebook, const float *bias, const float *x,
                       size_t batch, float *y, void *scratch);

/* ---- optimized matrix kernels (kernels_spmv.c, kernels_spmm.c) -------------
 * They compute what dcz_spmv_ref and dcz_spmm_ref compute, in the same
 * order (bias first, then each product w * x rounded and added in column
 * order), so they give the references' bits and a sample gives the same
 * bits at any batch (but for the lane form, which fuses the products into
 * the sums: lanes.h); the one exception is the sign of a zero: a column
 * skipped for its zero input leaves a sum of -0 at -0 where the reference
 * adds +0 to it. The variants can be called directly where
 * dcz_isa_supported says so; they return 0 when they decline (then nothing
 * was written) and 1 when done. */

/* Samples of x one dcz_spmm tile holds, transposed in its scratch. */
#define DCZ_SPMM_TILE 32
/* Floats of the scratch dcz_spmm needs for a matrix of rows x cols (or
 * any rows of it). */
uint64_t dcz_spmm_scratch_floats(uint32_t rows, uint32_t cols);
/* The batch-1 kernels, and the choice among them for one input. */
typedef enum dcz_spmv_kind {
    DCZ_SPMV_REF,       /* dcz_spmv_ref (rows split over parts) */
    DCZ_SPMV_COLUMNS,   /* the column form: dcz_spmv_csc, one block per part */
    DCZ_SPMV_LANES      /* the lane form: dcz_spmv_lanes__avx512, groups split over parts */
} dcz_spmv_kind;
/* The kernel for input x: the lane form when s has one, this CPU runs it
 * and its steps cost less than the entries the column kernel would visit
 * (estimated from the share of nonzero inputs); else the column form when
 * s has one; else the reference. */
dcz_spmv_kind dcz_spmv_pick(const dcz_sparse *s, const float *x);
/* The input's form kernel kind reads: for LANES on a CPU with AVX-512, x's
 * panels in scratch (dcz_lanes_scratch_floats floats); otherwise x. */
const float *dcz_spmv_input(const dcz_sparse *s, dcz_spmv_kind kind, const float *x,
                            float *scratch);
/* Part `part` of `parts` of y = S x + bias by kernel kind (COLUMNS needs
 * parts == s->cblocks), xin being dcz_spmv_input's form of x, then act
 * (NULL or op 0: none) on the part's rows, fused into the lane kernel's
 * stores. Parts write disjoint rows and sum each row in the same order, so
 * any split gives the same bits. */
void dcz_spmv_part(const dcz_sparse *s, dcz_spmv_kind kind, uint32_t part, uint32_t parts,
                   const float *bias, const dcz_act *act, const float *xin, float *y);
/* y = S x + bias by kernel kind over the threads of pool (NULL: the caller
 * alone), xin being dcz_spmv_input's form of x: dcz_spmv_part's parts, the
 * column form's blocks or about eight rows or lane groups per thread,
 * taken as the threads come, so a thread on a busier core takes fewer.
 * Any thread may run any part, so the bits do not depend on which. */
void dcz_spmv_pool(dcz_pool *pool, const dcz_sparse *s, dcz_spmv_kind kind, const float *bias,
                   const dcz_act *act, const float *xin, float *y);
/* y (batch, out) = x (batch, in) S^T + bias over the threads of pool (NULL:
 * the caller alone), as dcz_spmm computes it. Each tile of DCZ_SPMM_TILE
 * samples is transposed once into part 0 of scratch, its columns cut into
 * chunks; then the rows are cut into chunks, each run on that tile with
 * the sums of the taking thread t in part t (scratch + t part_floats;
 * part_floats at least dcz_spmm_scratch_floats). Chunks are taken as the
 * threads come, about eight per thread (one when the caller runs alone),
 * so a thread on a busier core takes fewer; rows are disjoint and sum in one order, so the bits do not depend
 * on the threads. scratch NULL: the reference's rows. */
void dcz_spmm_pool(dcz_pool *pool, const dcz_sparse *s, const float *bias, const float *x,
                   size_t batch, float *y, float *scratch, uint64_t part_floats);
/* y (out) = S x (in) + bias, batch 1, by dcz_spmv_pick's kernel, all parts;
 * scratch for the lane form's panels (dcz_lanes_scratch_floats floats), or
 * NULL, which leaves the lane form out. */
void dcz_spmv(const dcz_sparse *s, const float *bias, const float *x, float *y, float *scratch);
/* Rows of block `block` of s's column form (see dcz_sparse). */
void dcz_sparse_block_rows(const dcz_sparse *s, uint32_t block, uint32_t *r0, uint32_t *r1);
/* y rows of column block `block` from the column form: every column whose
 * input is nonzero adds its entries' products to their rows (a codebook of
 * up to 16 values is first multiplied by the input once per column). Plain
 * C: the same code on every machine. */
void dcz_spmv_csc(const dcz_sparse *s, uint32_t block, const float *bias, const float *x,
                  float *y);
/* y (batch, out) = x (batch, in) S^T + bias; scratch of
 * dcz_spmm_scratch_floats floats, or NULL for dcz_spmm_ref. Rows r0 .. r1 - 1 only for _rows. */
void dcz_spmm(const dcz_sparse *s, const float *bias, const float *x, size_t batch, float *y,
              float *scratch);
void dcz_spmm_rows(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch);
#if DCZ_BUILD_F32_X86
int dcz_spmm__avx2(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch);
#elif DCZ_BUILD_F32_NEON
int dcz_spmm__neon(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                   const float *x, size_t batch, float *y, float *scratch);
#endif
/* dcz_spmm_ref on rows r0 .. r1 - 1 of y only. */
void dcz_spmm_ref_rows(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                       const float *x, size_t batch, float *y);

/* Bytes of the column form of a rows x cols matrix of nnz real entries in
 * cblocks blocks (0 when it is not built: more than 65535 rows); k: the
 * codebook's size, 0 for fp32 values. */
uint64_t dcz_sparse_columns_bytes(uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k,
                                  uint32_t cblocks);
/* Builds s's column form in mem (dcz_sparse_columns_bytes bytes, 4-byte
 * aligned) from its row form. */
void dcz_sparse_build_columns(dcz_sparse *s, uint32_t cblocks, void *mem);

/* Chunks per thread of a call shared by threads: enough that a thread on a
 * slower core takes fewer of them (bench/bench_spmv.c, the EIE layers on
 * two threads). Both the batch-1 parts and the batch product's tiles are
 * shared so. */
#define DCZ_CHUNKS_PER_THREAD 8

/* chunks of n items for `threads` threads: about DCZ_CHUNKS_PER_THREAD
 * each, one when a single thread runs the call */
static inline uint32_t dcz_share_chunks(uint32_t n, uint32_t threads)
{
    const uint32_t want = threads > 1 ? threads * DCZ_CHUNKS_PER_THREAD : 1;
    return n < want ? (n ? n : 1) : want;
}

/* the next chunk of a call shared by threads (past the last: none left) */
static inline uint32_t dcz_take_chunk(uint32_t *next)
{
    return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
}

#endif /* DCZ_RUNTIME_CPU_F32_SPARSE_H */
