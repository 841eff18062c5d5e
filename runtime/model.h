/* model.h: the runtime's execution form of a loaded .dcz and its kernels.
 *
 * At load (load.c) every layer becomes one exec layer. Sparse layers keep
 * their compressed form: per row a run of entries, each a one-byte column
 * step and (codebook layers) a one-byte codebook index; Huffman streams are
 * decoded once into this form. Weights are never expanded to dense fp32.
 *
 * Execution form of a sparse matrix (out rows, in columns):
 *   row r owns entries row_ptr[r] .. row_ptr[r+1]-1; a column cursor starts
 *   at 0 for each row; each entry adds step[e] to it; an entry whose step is
 *   DCZ_STEP_FILLER (255) only advances the cursor, any other entry
 *   contributes weight(e) * x[cursor]. Real steps are 0..254 (0 only for the
 *   first entry of a row or right after a filler).
 *
 * Kernels (kernels_ref.c) are the scalar references; every faster kernel
 * added later is tested against them (tests/unit/test_kernels.c).
 */
#ifndef DCZ_RUNTIME_MODEL_H
#define DCZ_RUNTIME_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "runtime/format.h"

#define DCZ_STEP_FILLER 255u

typedef struct dcz_sparse {
    uint32_t rows, cols;
    uint32_t entries;       /* real entries and fillers */
    const uint32_t *row_ptr;/* (rows + 1) */
    const uint8_t *step;    /* (entries) */
    const uint8_t *idx;     /* (entries) codebook index; NULL for fp32 values */
    const float *val;       /* (entries) fp32 values; NULL for codebook */
    const float *codebook;  /* (k) */
    uint32_t k;
} dcz_sparse;

typedef enum dcz_kernel {
    DCZ_K_DENSE_F32 = 1,
    DCZ_K_SPARSE_F32,
    DCZ_K_SPARSE_CB,
    DCZ_K_RELU,
    DCZ_K_SOFTMAX
} dcz_kernel;

typedef struct dcz_exec_layer {
    dcz_kernel kernel;
    char name[DCZ_MAX_NAME + 1];
    uint32_t in, out;       /* features in and out of one sample */
    const float *w;         /* DENSE_F32: (out, in) */
    dcz_sparse sp;          /* SPARSE_*: (out, in) */
    const float *bias;      /* (out) or NULL */
} dcz_exec_layer;

struct dcz_model {
    dcz_options opt;
    uint32_t in_rank, in_dims[DCZ_MAX_RANK];
    uint32_t in_size, out_size, max_width;
    uint32_t nlayers;
    dcz_exec_layer *layers;   /* (nlayers), inside block */
    void *block;              /* everything loaded, one allocation */
    float *act;               /* two activation buffers of max_width * act_batch */
    size_t act_batch;
};

/* ---- scalar reference kernels ------------------------------------------- */

/* y (batch, out) = x (batch, in) W^T + bias; W (out, in) row-major. */
void dcz_dense_f32_ref(const float *w, const float *bias, const float *x, size_t batch,
                       uint32_t in, uint32_t out, float *y);
/* y (out) = S x (in) + bias, batch 1. */
void dcz_spmv_ref(const dcz_sparse *s, const float *bias, const float *x, float *y);
/* y (batch, out) = x (batch, in) S^T + bias, every entry decoded once per row. */
void dcz_spmm_ref(const dcz_sparse *s, const float *bias, const float *x, size_t batch,
                  float *y);
void dcz_relu_ref(float *x, size_t n);
/* in-place softmax over each of batch rows of width n */
void dcz_softmax_ref(float *x, size_t batch, size_t n);

/* ---- building the execution form ---------------------------------------- */

/* Upper bound of execution entries (real + fillers) for nnz weights in a
 * rows x cols matrix. */
uint64_t dcz_sparse_max_entries(uint32_t nnz, uint32_t rows, uint32_t cols);

/* Fills row_ptr (rows + 1), step and (when idx_out) the entry order of
 * weight indices from the flat positions produced by walking a gap stream.
 * src_of_entry[e] receives, for each real execution entry, the number of the
 * weight it carries (its order in the stream) so callers can place indices
 * or values; fillers get UINT32_MAX. *entries receives the count. */
typedef struct dcz_sparse_builder {
    uint32_t rows, cols;
    uint32_t *row_ptr;
    uint8_t *step;
    uint32_t cap, entries;
    uint32_t cur_row;
    uint64_t cur_col;          /* cursor of the current row */
    int row_started;
    uint8_t *idx_dst;          /* optional: idx_src[weight] copied per entry */
    const uint8_t *idx_src;
    float *val_dst;            /* optional: val_src[weight] per entry */
    const uint8_t *val_src;    /* little-endian float32 */
} dcz_sparse_builder;

dcz_status dcz_sparse_builder_add(void *builder, uint32_t weight, uint64_t pos);
void dcz_sparse_builder_finish(dcz_sparse_builder *b);

#endif /* DCZ_RUNTIME_MODEL_H */
