/* kernels_ref.c: the scalar reference kernels of the runtime. They are the
 * specification every optimized kernel is compared with, so they stay plain:
 * one loop nest each, fp32 accumulation in the natural order.
 *
 * Checked by tests/unit/test_kernels.c against a dense double-precision
 * product on random matrices (densities 0, 0.5, 1; odd sizes; fillers).
 */
#include <math.h>
#include <string.h>

#include "runtime/cpu/f32/dense.h"
#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/model.h"

void dcz_dense_f32_ref(const float *w, const float *bias, const float *x, size_t batch,
                       uint32_t in, uint32_t out, float *y)
{
    for (size_t b = 0; b < batch; b++) {
        const float *xb = x + b * in;
        for (uint32_t r = 0; r < out; r++) {
            const float *wr = w + (size_t)r * in;
            float acc = bias ? bias[r] : 0.0f;
            for (uint32_t c = 0; c < in; c++) acc += wr[c] * xb[c];
            y[b * out + r] = acc;
        }
    }
}

void dcz_spmv_ref(const dcz_sparse *s, const float *bias, const float *x, float *y)
{
    for (uint32_t r = 0; r < s->rows; r++) {
        float acc = bias ? bias[r] : 0.0f;
        uint32_t col = 0;
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
            col += s->step[e];
            if (s->step[e] != DCZ_STEP_FILLER) acc += dcz_sparse_weight(s, e) * x[col];
        }
        y[r] = acc;
    }
}

void dcz_spmm_ref(const dcz_sparse *s, const float *bias, const float *x, size_t batch,
                  float *y)
{
    dcz_spmm_ref_rows(s, 0, s->rows, bias, x, batch, y);
}

void dcz_spmm_ref_rows(const dcz_sparse *s, uint32_t r0, uint32_t r1, const float *bias,
                       const float *x, size_t batch, float *y)
{
    const uint32_t in = s->cols, out = s->rows;
    for (uint32_t r = r0; r < r1; r++) {
        for (size_t b = 0; b < batch; b++) y[b * out + r] = bias ? bias[r] : 0.0f;
        uint32_t col = 0;
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
            col += s->step[e];
            if (s->step[e] == DCZ_STEP_FILLER) continue;
            const float wv = dcz_sparse_weight(s, e);
            for (size_t b = 0; b < batch; b++) y[b * out + r] += wv * x[b * in + col];
        }
    }
}

/* A select, not a branch (signs fall at random: a branch mispredicts half
 * the time), which compilers make a vector max; NaN gives 0. */
void dcz_relu_ref(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* One loop per op, the choice made once, and each clamp written as two
 * selects (min, then max) that compile to minss/maxss without a branch:
 * nested conditionals branch on every element, and ReLU6 inputs fall on
 * either side of 0 at random (the trainer's MobileNetV2 preset spent a
 * quarter of its time mispredicting them). NaN passes through unchanged. */
void dcz_activation_ref(uint16_t op, const float *param, const float *x, size_t n, float *y)
{
    switch (op) {
    case DCZ_OP_CLIP: {
        const float lo = param[0], hi = param[1];
        for (size_t i = 0; i < n; i++) {
            const float v = x[i], t = hi < v ? hi : v;
            y[i] = lo > t ? lo : t;
        }
        break;
    }
    case DCZ_OP_LEAKY_RELU: {
        const float a = param[0];
        for (size_t i = 0; i < n; i++) {
            const float v = x[i];
            y[i] = v > 0.0f ? v : a * v;
        }
        break;
    }
    case DCZ_OP_SIGMOID:
        for (size_t i = 0; i < n; i++) y[i] = dcz_sigmoid_one(x[i]);
        break;
    case DCZ_OP_TANH:
        for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
        break;
    case DCZ_OP_HARD_SIGMOID: {
        const float a = param[0], b = param[1];
        for (size_t i = 0; i < n; i++) {
            const float t = a * x[i] + b, u = 1.0f < t ? 1.0f : t;
            y[i] = 0.0f > u ? 0.0f : u;
        }
        break;
    }
    case DCZ_OP_HARD_SWISH:
        for (size_t i = 0; i < n; i++) y[i] = dcz_hard_swish_one(x[i]);
        break;
    case DCZ_OP_SILU:
        /* x / (1 + e^-x), -x clamped (shapes.h) */
        for (size_t i = 0; i < n; i++) y[i] = dcz_silu_one(x[i]);
        break;
    default:
        if (y != x) memmove(y, x, n * sizeof *y);
    }
}

void dcz_add_ref(const float *a, const float *b, size_t n, float *y)
{
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

void dcz_mul_ref(const float *x, const float *f, size_t batch, uint32_t channels, uint32_t plane,
                 float *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = 0; c < channels; c++) {
            const float s = f[b * channels + c];
            const size_t at = (b * channels + c) * plane;
            for (uint32_t p = 0; p < plane; p++) y[at + p] = x[at + p] * s;
        }
}

void dcz_concat_ref(const float *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                    float *y)
{
    for (size_t b = 0; b < batch; b++)
        for (uint32_t k = 0; k < nin; k++) {
            memcpy(y, x[k] + b * width[k], width[k] * sizeof *y);
            y += width[k];
        }
}

void dcz_gather_channels_ref(const void *x, size_t elem, uint32_t in_c, uint32_t out_c, uint32_t plane,
                             uint32_t start, uint32_t groups, size_t batch, void *y)
{
    const size_t bytes = (size_t)plane * elem;
    for (size_t b = 0; b < batch; b++)
        for (uint32_t c = 0; c < out_c; c++)
            memcpy((char *)y + (b * out_c + c) * bytes,
                   (const char *)x + (b * in_c + dcz_gather_source(c, out_c, start, groups)) * bytes, bytes);
}

void dcz_softmax_ref(float *x, size_t batch, size_t n)
{
    for (size_t b = 0; b < batch; b++) {
        float *v = x + b * n;
        float mx = -INFINITY;
        for (size_t i = 0; i < n; i++)
            if (v[i] > mx) mx = v[i];
        float sum = 0.0f;
        /* the exponential is libdcz's own (shapes.h), not the C library's,
         * so every machine's libc gives the same bits (a microcontroller's
         * picolibc and glibc differ in the last bit of expf) */
        for (size_t i = 0; i < n; i++) {
            v[i] = dcz_exp_neg(v[i] - mx);
            sum += v[i];
        }
        for (size_t i = 0; i < n; i++) v[i] /= sum;
    }
}

/* ---- execution-form builder --------------------------------------------- */

uint64_t dcz_sparse_max_entries(uint32_t nnz, uint32_t rows, uint32_t cols)
{
    /* a filler covers 255 columns and only precedes a weight of its row, so
     * a row needs at most cols / 255 and only rows holding weights need any */
    uint64_t rows_with_weights = nnz < rows ? nnz : rows;
    return (uint64_t)nnz + rows_with_weights * (cols / DCZ_STEP_FILLER);
}

static void start_rows_until(dcz_sparse_builder *b, uint32_t row)
{
    while (b->cur_row < row) {
        b->cur_row++;
        b->row_ptr[b->cur_row] = b->entries;
    }
}

dcz_status dcz_sparse_builder_add(void *builder, uint32_t weight, uint64_t pos)
{
    dcz_sparse_builder *b = (dcz_sparse_builder *)builder;
    uint32_t row = (uint32_t)(pos / b->cols);
    uint64_t col = pos % b->cols;
    if (row >= b->rows || row < b->cur_row) return DCZ_ERR_FORMAT;
    if (row > b->cur_row) {
        start_rows_until(b, row);
        b->cur_col = 0;
        b->row_started = 0;
    }
    if (b->row_started && col <= b->cur_col) return DCZ_ERR_FORMAT;
    uint64_t delta = col - b->cur_col;
    while (delta >= DCZ_STEP_FILLER) {
        if (b->entries >= b->cap) return DCZ_ERR_FORMAT;
        if (b->idx_dst) b->idx_dst[b->entries] = 0;
        if (b->val_dst) b->val_dst[b->entries] = 0.0f;
        b->step[b->entries++] = DCZ_STEP_FILLER;
        delta -= DCZ_STEP_FILLER;
    }
    if (b->entries >= b->cap) return DCZ_ERR_FORMAT;
    if (b->idx_dst) b->idx_dst[b->entries] = b->idx_src[weight];
    if (b->val_dst) {
        const uint8_t *v = b->val_src + (size_t)weight * 4;
        b->val_dst[b->entries] = dcz_f32_from_bits(dcz_le32(v));
    }
    b->step[b->entries++] = (uint8_t)delta;
    b->cur_col = col;
    b->row_started = 1;
    return DCZ_OK;
}

void dcz_sparse_builder_finish(dcz_sparse_builder *b)
{
    start_rows_until(b, b->rows);
}
