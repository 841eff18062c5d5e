/* stream.c: fully connected layers whose compressed weights stay where
 * the file holds them (the stream form, dcz_options.stream_weights): each
 * call reads the weight's streams from the start through dcz_entries
 * (format.h), a stored weight at a time in position order, and adds its
 * product to its row's sum. Nothing of the weight is kept decoded, so the
 * arena holds only the codebook (and on integers its table per row): the
 * form of a microcontroller, whose flash holds the file and whose RAM is
 * counted in kilobytes. Every call decodes the whole tensor: slower than
 * the decoded form's kernels wherever RAM allows those.
 *
 * Rows come in order and, within a row, columns ascending, so each sum
 * takes its bias and then its products in the references' order: the bits
 * of dcz_spmm_ref and dcz_qspmm_ref (tests/unit/test_static.c checks them
 * on every coding, batch 1 and more).
 */
#include "runtime/cpu/f32/sparse.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/format/format.h"

/* The walk over w's stored weights: row and column of each, tracked from
 * the flat positions (which only grow) without a division. */
typedef struct walk {
    dcz_entries e;
    uint32_t rows, cols, row;
    uint64_t row_start;
} walk;

static int walk_begin(walk *k, const dcz_tensor_view *w, void *scratch)
{
    k->rows = w->dims[0];
    k->cols = (uint32_t)(w->n / w->dims[0]);
    k->row = 0;
    k->row_start = 0;
    return dcz_entries_begin(&k->e, w, scratch) == DCZ_OK;
}

/* The next stored weight's row, column and codebook index; 0 past the last. */
static int walk_next(walk *k, uint32_t *row, uint32_t *col, uint32_t *idx)
{
    uint64_t pos;
    if (k->e.entry == k->e.t->nnz || dcz_entries_next(&k->e, &pos, idx) != DCZ_OK) return 0;
    while (pos - k->row_start >= k->cols) {
        k->row_start += k->cols;
        k->row++;
    }
    *row = k->row;
    *col = (uint32_t)(pos - k->row_start);
    return 1;
}

void dcz_fc_stream_ref(const dcz_tensor_view *w, const float *codebook, const float *bias, const float *x,
                       size_t batch, float *y, void *scratch)
{
    walk k;
    const int ok = walk_begin(&k, w, scratch);
    const uint32_t out = k.rows, in = k.cols;
    for (size_t b = 0; b < batch; b++)
        for (uint32_t r = 0; r < out; r++) y[b * out + r] = bias ? bias[r] : 0.0f;
    uint32_t r, c, i;
    while (ok && walk_next(&k, &r, &c, &i)) {
        const float wv = codebook[i];
        for (size_t b = 0; b < batch; b++) y[b * out + r] += wv * x[b * in + c];
    }
}

void dcz_qfc_stream_ref(const dcz_tensor_view *w, const dcz_q *qtab, const int64_t *bias, const dcz_q *x,
                        size_t batch, int64_t *acc, void *scratch)
{
    walk k;
    const int ok = walk_begin(&k, w, scratch);
    const uint32_t out = k.rows, in = k.cols, nk = w->k;
    for (size_t b = 0; b < batch; b++)
        for (uint32_t r = 0; r < out; r++) acc[b * out + r] = bias ? bias[r] : 0;
    uint32_t r, c, i;
    while (ok && walk_next(&k, &r, &c, &i)) {
        const int64_t wq = qtab[(size_t)r * nk + i];
        for (size_t b = 0; b < batch; b++) acc[b * out + r] += wq * x[b * in + c];
    }
}
