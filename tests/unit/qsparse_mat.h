/* qsparse_mat.h: random integer matrices in the runtime's integer execution
 * form (model.h's dcz_qsparse) beside the dense integers they mean, for the
 * integer kernel tests. Values are never zero, one in eight an extreme of
 * the range. Needs tests/unit/test_util.h's generator included before it.
 * Checked by the tests that use it (test_qkernels.c compares the reference
 * on these matrices with a dense int64 product).
 */
#ifndef DCZ_TESTS_QSPARSE_MAT_H
#define DCZ_TESTS_QSPARSE_MAT_H

#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"

/* a value in [-vmax, vmax], never 0, one in eight an extreme */
static inline int16_t qrand(int32_t vmax)
{
    const uint64_t r = rnd();
    const int32_t mag = (r & 7) == 0 ? vmax : 1 + (int32_t)((r >> 8) % (uint64_t)vmax);
    return (int16_t)((r & 8) ? -mag : mag);
}

static inline void fill_q(int16_t *p, size_t n, int32_t vmax)
{
    for (size_t i = 0; i < n; i++) p[i] = qrand(vmax);
    if (n > 0) p[0] = (int16_t)vmax;
    if (n > 1) p[1] = (int16_t)-vmax;
}

/* malloc of n elements (at least one byte, so 0 is a valid empty buffer) */
static inline void *alloc(size_t n, size_t size) { return malloc(n ? n * size : 1); }

typedef struct qmat {
    uint32_t rows, cols, k;
    int16_t *dense;       /* (rows, cols) the weights the execution form holds */
    uint32_t *row_ptr;
    uint8_t *step, *idx;
    int16_t *qtab, *qval;
    dcz_qsparse sp;
    uint32_t fillers;     /* filler entries */
    uint32_t value_rows;  /* codebook rows with more real entries than k */
} qmat;

/* Random weights at density (codebook of k values per row, or per-entry
 * values when k is 0), then their execution form, built here by the rule of
 * model.h: a row's column cursor starts at 0, each entry adds its step,
 * gaps of 255 or more take fillers (step 255, idx and value 0). */
static inline void make_qmat(qmat *m, uint32_t rows, uint32_t cols, double density, uint32_t k,
                      int32_t vmax)
{
    memset(m, 0, sizeof *m);
    m->rows = rows; m->cols = cols; m->k = k;
    const size_t n = (size_t)rows * cols;
    m->dense = calloc(n ? n : 1, sizeof(int16_t));
    uint8_t *keep = calloc(n ? n : 1, 1), *pick = calloc(n ? n : 1, 1);
    if (k) {
        m->qtab = alloc((size_t)rows * k, sizeof(int16_t));
        fill_q(m->qtab, (size_t)rows * k, vmax);
    }
    uint32_t entries = 0;
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t cursor = 0, real = 0;
        for (uint32_t c = 0; c < cols; c++) {
            const size_t i = (size_t)r * cols + c;
            keep[i] = density >= 1 || (density > 0 && (double)(rnd() % 10000) < density * 10000);
            if (!keep[i]) continue;
            if (k) {
                pick[i] = (uint8_t)(rnd() % k);
                m->dense[i] = m->qtab[(size_t)r * k + pick[i]];
            } else {
                m->dense[i] = qrand(vmax);
            }
            entries += (c - cursor) / DCZ_STEP_FILLER + 1;
            cursor = c;
            real++;
        }
        if (k && real > k) m->value_rows++;
    }
    m->row_ptr = alloc(rows + 1, sizeof(uint32_t));
    m->step = alloc(entries, 1);
    if (k) m->idx = alloc(entries, 1);
    else m->qval = alloc(entries, sizeof(int16_t));
    uint32_t e = 0;
    for (uint32_t r = 0; r < rows; r++) {
        m->row_ptr[r] = e;
        uint32_t cursor = 0;
        for (uint32_t c = 0; c < cols; c++) {
            const size_t i = (size_t)r * cols + c;
            if (!keep[i]) continue;
            uint32_t delta = c - cursor;
            for (; delta >= DCZ_STEP_FILLER; delta -= DCZ_STEP_FILLER, e++) {
                m->step[e] = DCZ_STEP_FILLER;
                if (k) m->idx[e] = 0;
                else m->qval[e] = 0;
                m->fillers++;
            }
            m->step[e] = (uint8_t)delta;
            if (k) m->idx[e] = pick[i];
            else m->qval[e] = m->dense[i];
            e++;
            cursor = c;
        }
    }
    m->row_ptr[rows] = e;
    m->sp = (dcz_qsparse){ .rows = rows, .cols = cols, .entries = e, .row_ptr = m->row_ptr, .step = m->step,
                           .idx = m->idx, .qtab = m->qtab, .k = k, .qval = m->qval };
    free(keep);
    free(pick);
}

static inline void free_qmat(qmat *m)
{
    free(m->dense); free(m->row_ptr); free(m->step); free(m->idx); free(m->qtab); free(m->qval);
}

#endif /* DCZ_TESTS_QSPARSE_MAT_H */
