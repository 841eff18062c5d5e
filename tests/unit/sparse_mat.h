/* sparse_mat.h: random sparse matrices in the runtime's execution form
 * (model.h) beside the dense weights they mean, for the kernel tests.
 * Stored values are never zero; a codebook of k values (k 0: fp32 values).
 * Needs tests/unit/test_util.h's generator included before it.
 * Checked by the tests that use it (test_kernels.c compares every kernel on
 * these matrices with a dense product).
 */
#ifndef DCZ_TESTS_SPARSE_MAT_H
#define DCZ_TESTS_SPARSE_MAT_H

#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"

typedef struct mat {
    uint32_t rows, cols, k;
    float *dense;       /* (rows, cols) the weights the sparse form means */
    dcz_sparse sp;
    uint32_t *row_ptr;
    uint8_t *step, *idx, *idx_src;
    float *val, *cb;
    uint32_t nnz, fillers;      /* real entries; filler entries (step 255) */
    void *cols_mem, *lanes_mem; /* the column and lane forms, where a test builds them */
} mat;

/* m: rows x cols at about density (0: empty, 1: full). 0 when a builder
 * step fails. */
static inline int make_mat(mat *m, uint32_t rows, uint32_t cols, double density, uint32_t k)
{
    memset(m, 0, sizeof *m);
    m->rows = rows; m->cols = cols; m->k = k;
    size_t n = (size_t)rows * cols;
    m->dense = calloc(n ? n : 1, sizeof(float));
    m->cb = malloc((k ? k : 1) * sizeof(float));
    for (uint32_t i = 0; i < k; i++) m->cb[i] = nonzero();
    uint8_t *keep = calloc(n ? n : 1, 1);
    uint32_t nnz = 0;
    for (size_t i = 0; i < n; i++) {
        keep[i] = density >= 1 || (density > 0 && (rnd() % 1000) < density * 1000);
        nnz += keep[i];
    }
    uint64_t cap = dcz_sparse_max_entries(nnz, rows, cols);
    m->row_ptr = malloc((rows + 1) * sizeof(uint32_t));
    m->step = malloc(cap ? cap : 1);
    m->idx_src = malloc(nnz ? nnz : 1);
    uint8_t *vsrc = malloc(nnz ? (size_t)nnz * 4 : 4);
    if (k) m->idx = malloc(cap ? cap : 1);
    else m->val = malloc((cap ? cap : 1) * sizeof(float));
    dcz_sparse_builder b;
    memset(&b, 0, sizeof b);
    b.rows = rows; b.cols = cols; b.row_ptr = m->row_ptr; b.step = m->step; b.cap = (uint32_t)cap;
    b.idx_dst = m->idx; b.idx_src = m->idx_src; b.val_dst = m->val; b.val_src = vsrc;
    m->row_ptr[0] = 0;
    uint32_t w = 0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i]) continue;
        float v;
        if (k) { m->idx_src[w] = (uint8_t)(rnd() % k); v = m->cb[m->idx_src[w]]; }
        else { v = nonzero(); dcz_put32(vsrc + (size_t)w * 4, dcz_f32_bits(v)); }
        m->dense[i] = v;
        ok &= dcz_sparse_builder_add(&b, w++, i) == DCZ_OK;
    }
    dcz_sparse_builder_finish(&b);
    for (uint32_t e = 0; e < b.entries; e++) m->fillers += m->step[e] == DCZ_STEP_FILLER;
    m->nnz = nnz;
    m->sp = (dcz_sparse){ .rows = rows, .cols = cols, .entries = b.entries, .row_ptr = m->row_ptr,
                          .step = m->step, .idx = m->idx, .val = m->val, .codebook = m->cb, .k = k };
    free(keep);
    free(vsrc);
    return ok;
}

static inline void free_mat(mat *m)
{
    free(m->dense); free(m->row_ptr); free(m->step); free(m->idx); free(m->idx_src);
    free(m->val); free(m->cb); free(m->cols_mem); free(m->lanes_mem);
}

#endif /* DCZ_TESTS_SPARSE_MAT_H */
