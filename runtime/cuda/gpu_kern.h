/* gpu_kern.h: the bodies of the CUDA kernels that compute one output
 * element each, written once for the device and the host.
 *
 * Each function here computes output element i of one layer for one
 * sample, reading the same execution form the CPU kernels read (model.h):
 * the compressed forms and the integer region. What needs dense values
 * alone (the launch, the dense and grouped convolutions, im2col, pools,
 * activations, Concat and the gathers) is in gpu_elem.h, which the
 * trainer's kernels share.
 * The .cu kernels beside their CPU twins (kernels_conv.cu, kernels_ref.cu)
 * are a grid-stride loop over i around one of these; compiled by nvcc they
 * are __host__ __device__, compiled by a C compiler plain static inline
 * functions. tests/unit/test_gpu_emu.c runs them on the host over every
 * output of the kernel test grid and compares them with the CPU references,
 * so the indexing of every such GPU kernel is checked on any machine;
 * tests/unit/test_gpu.c checks the launched kernels on a GPU.
 *
 * Sums are taken in the reference's order where the reference has one
 * order per output (pools, the direct convolution walks a row's entries in
 * column order as dcz_conv2d_direct_ref walks its taps); the sigmoid and
 * SiLU and softmax's exponentials are the runtime's own (shapes.h:
 * dcz_exp_neg), the same bits on both; tanh is CUDA's on the device, so it
 * agrees within a few ulps, not bit for bit (and softmax's sum is a tree
 * over the block's threads, in another order than the CPU's).
 */
#ifndef DCZ_RUNTIME_GPU_KERN_H
#define DCZ_RUNTIME_GPU_KERN_H

#include <math.h>
#include <stdint.h>

#include "runtime/cuda/gpu_elem.h"
#include "runtime/model.h"

/* The sparse execution form as a kernel reads it (device pointers on the
 * device): model.h's dcz_sparse without the CPU's extra forms. */
typedef struct dcz_gsparse {
    uint32_t rows, cols, k;
    const uint32_t *row_ptr;  /* (rows + 1) */
    const uint8_t *step;      /* (entries) */
    const uint8_t *idx;       /* (entries) or NULL */
    const float *val;         /* (entries) when !idx */
    const float *codebook;    /* (k) when idx */
} dcz_gsparse;

/* Where a sparse product's output row r of its sample s goes in y: samples
 * come in blocks of per, s at (s / per) block + (s % per) sample + r row. A
 * fully connected layer: per 1, block rows, row 1; a convolution's patches
 * over a batch (each sample's pixels are the product's samples): per
 * pixels, block out_c pixels, sample 1, row pixels. */
typedef struct dcz_gplace {
    uint32_t per;
    uint64_t block, sample, row;
} dcz_gplace;

DCZ_HD uint64_t dcz_gk_place(const dcz_gplace *p, uint32_t s, uint32_t r)
{
    return (uint64_t)(s / p->per) * p->block + (uint64_t)(s % p->per) * p->sample + (uint64_t)r * p->row;
}

/* Output i (of out_c out_h out_w) of one sample of a sparse convolution:
 * the row of output channel oc walked in column order, each real entry's
 * tap (ic, ky, kx) read where it falls inside the input sample x. */
DCZ_HD float dcz_gk_conv_sparse(const dcz_conv_geom *g, const dcz_gsparse *s, const float *bias,
                                const float *x, uint32_t i)
{
    uint32_t ic0;
    int64_t y0, x0;
    const uint32_t oc = dcz_gk_conv_out(g, i, &ic0, &y0, &x0);
    float sum = bias ? bias[oc] : 0.0f;
    /* the column as its input channel ic0 + c and tap r, carried from entry
     * to entry (a division only where a step crosses a channel) */
    const uint32_t taps = g->kh * g->kw;
    uint32_t c = 0, r = 0;
    for (uint32_t e = s->row_ptr[oc]; e < s->row_ptr[oc + 1]; e++) {
        const uint32_t st = s->step[e];
        r += st;
        if (r >= taps) {
            c += r / taps;
            r %= taps;
        }
        if (st == DCZ_STEP_FILLER) continue;
        const uint32_t ky = r / g->kw;
        const int64_t iy = y0 + ky, ix = x0 + (r - ky * g->kw);
        if (iy < 0 || iy >= g->in_h || ix < 0 || ix >= g->in_w) continue;
        sum += (s->idx ? s->codebook[s->idx[e]] : s->val[e]) * x[((int64_t)(ic0 + c) * g->in_h + iy) * g->in_w + ix];
    }
    return sum;
}

/* The GPU's own form of a compressed fully connected layer (and of a
 * convolution's rows where it runs by patches), made from dcz_gsparse at
 * upload: each row's entries, fillers included, in chunks of
 * DCZ_GK_CHUNK, 16 bytes a chunk (its 8 column steps, then its 8 codebook
 * indices), a row's last chunk padded with fillers (step 255: they advance
 * the column past the row and add nothing). A lane loads a chunk in one
 * 16-byte load; its entries' columns are its first column plus the running
 * sum of its steps, and the lanes of a row find their chunks' first
 * columns by one scan of the chunks' step totals: a scan per 8 entries
 * where the execution form takes one per entry. Without a codebook the
 * values sit in val, DCZ_GK_CHUNK a chunk in the chunks' order (padding
 * 0). */
#define DCZ_GK_CHUNK 8
typedef struct dcz_gchunks {
    uint32_t rows, cols, k;
    uint32_t group;           /* lanes a row at batch 1: a power of two, 1 to 32 */
    uint32_t stage;           /* 1: batch 1 stages the input in shared memory
                                 (dcz_gk_chunk_stage), 0: reads it where it lies */
    const uint32_t *cptr;     /* (rows + 1): row r's chunks are [cptr[r], cptr[r + 1]) */
    const uint8_t *chunk;     /* (cptr[rows], 16) */
    const float *codebook;    /* (k), or NULL */
    const float *val;         /* (cptr[rows], DCZ_GK_CHUNK) without a codebook */
} dcz_gchunks;

/* Row r's chunks, and all of s's rows' (what the chunk form of s holds). */
DCZ_HD uint32_t dcz_gk_row_chunks(const dcz_gsparse *s, uint32_t r)
{
    return (s->row_ptr[r + 1] - s->row_ptr[r] + DCZ_GK_CHUNK - 1) / DCZ_GK_CHUNK;
}

DCZ_HD uint64_t dcz_gk_chunk_count(const dcz_gsparse *s)
{
    uint64_t n = 0;
    for (uint32_t r = 0; r < s->rows; r++) n += dcz_gk_row_chunks(s, r);
    return n;
}

/* The lanes that take a row at batch 1 (dcz_gchunks.group): the power of
 * two at or above twice the mean chunks a row, 8 to 32. Measured on an
 * H100 over every choice 1 to 32 (bench_gpu, in a graph), this was the
 * fastest or within 5% of it on each of the nine layers timed: a row of
 * 47 chunks (4096 columns 9% full) takes 32 lanes, two rounds; the 100 x
 * 300 layer of LeNet-300-100 (3 chunks a row) 8. Fewer lanes than twice
 * the chunks left rounds to wait on; fewer than 8 left small layers with
 * too few threads in flight. A variant with two chunks a lane (32 bytes in
 * flight, rows of more than 32 chunks) gained nothing (Alex-6 8.78 us
 * against 8.86) and lost 14% on VGG-6: the loads in flight were not the
 * limit. */
#define DCZ_GK_GROUP_MIN 8
DCZ_HD uint32_t dcz_gk_chunk_group(uint32_t rows, uint64_t chunks)
{
    uint32_t g = DCZ_GK_GROUP_MIN;
    while (g < 32 && (uint64_t)g * rows < 2 * chunks) g <<= 1;
    return g;
}

/* Whether batch 1 stages the input vector of a layer of rows x cols whose
 * rows take group lanes each (dcz_gchunks.stage) on a device of sms
 * multiprocessors: each block copies the input once, then its lanes'
 * gathers of x read shared memory, where a warp's 32 scattered columns
 * cost a few bank conflicts, instead of L1, where they touch up to 32
 * cache lines a load. The blocks are fewer and larger
 * (DCZ_GK_STAGE_BLOCK threads, no more blocks than multiprocessors, so
 * each multiprocessor copies the input about once), so it pays only where
 * the rows fill at least half the multiprocessors that way, and only for
 * inputs of up to DCZ_GK_STAGE_COLS floats (48 KB, what a block has without
 * opting in to more; the launch opts in where the codebook takes it past
 * that, and reads the input where it lies on a device that allows less).
 * Measured on an H100 (bench_gpu, in a graph, us; staged against not, in
 * the run of the launches as built): Alex-6 7.24 / 8.31, Alex-7 4.64 /
 * 5.31, VGG-7 3.68 / 4.14 (4096 rows: 128 blocks); VGG-6 10.37 / 9.80 (its
 * 25,088 columns, 98 KB a block to copy, outweigh the gathers); Alex-8
 * 6.98 / 6.48 (1000 rows: 32 blocks); LeNet-300-100's fc1 2.34 / 1.97 (300
 * rows at 32 lanes: 10 blocks, where the plain launch spreads them over 38
 * smaller ones). */
#define DCZ_GK_STAGE_COLS 12288
#define DCZ_GK_STAGE_BLOCK 1024
DCZ_HD uint32_t dcz_gk_chunk_stage(uint32_t rows, uint32_t cols, uint32_t group, uint32_t sms)
{
    const uint64_t blocks = ((uint64_t)rows * group + DCZ_GK_STAGE_BLOCK - 1) / DCZ_GK_STAGE_BLOCK;
    return cols <= DCZ_GK_STAGE_COLS && 2 * blocks >= sms;
}

/* Fills cptr (rows + 1), chunk (16 bytes a chunk) and, without a
 * codebook, val (DCZ_GK_CHUNK a chunk) from s; cptr first by itself
 * (chunk NULL) to size the others. */
DCZ_HD void dcz_gk_chunks_fill(const dcz_gsparse *s, uint32_t *cptr, uint8_t *chunk, float *val)
{
    cptr[0] = 0;
    for (uint32_t r = 0; r < s->rows; r++) {
        cptr[r + 1] = cptr[r] + dcz_gk_row_chunks(s, r);
        if (!chunk) continue;
        for (uint32_t c = cptr[r]; c < cptr[r + 1]; c++)
            for (uint32_t j = 0; j < DCZ_GK_CHUNK; j++) {
                const uint32_t e = s->row_ptr[r] + (c - cptr[r]) * DCZ_GK_CHUNK + j;
                const int real = e < s->row_ptr[r + 1];
                chunk[(size_t)c * 16 + j] = real ? s->step[e] : (uint8_t)DCZ_STEP_FILLER;
                chunk[(size_t)c * 16 + 8 + j] = real && s->idx ? s->idx[e] : 0;
                if (val) val[(size_t)c * DCZ_GK_CHUNK + j] = real && !s->idx ? s->val[e] : 0.0f;
            }
    }
}

#ifndef __CUDACC__
#include <stdlib.h>
/* The chunk form of s on the host, in memory of its own (malloc): cptr,
 * chunk, and val without a codebook; the codebook is s's. 0, or -1 when
 * memory ran out (nothing left allocated); the input read where it lies
 * (stage 0: gpu.c sets it by dcz_gk_chunk_stage, which needs the device).
 * What gpu.c uploads, and what the tests and bench_gpu build theirs from. */
static inline int dcz_gk_chunks_make(const dcz_gsparse *s, dcz_gchunks *h)
{
    uint32_t *cptr = malloc(((size_t)s->rows + 1) * sizeof *cptr);
    if (!cptr) return -1;
    dcz_gk_chunks_fill(s, cptr, NULL, NULL);
    const size_t n = cptr[s->rows];
    uint8_t *chunk = malloc(n * 16 + 1);
    float *val = s->idx ? NULL : malloc(n * DCZ_GK_CHUNK * sizeof *val + 1);
    if (!chunk || (!s->idx && !val)) {
        free(cptr);
        free(chunk);
        free(val);
        return -1;
    }
    dcz_gk_chunks_fill(s, cptr, chunk, val);
    *h = (dcz_gchunks){ s->rows, s->cols, s->k, dcz_gk_chunk_group(s->rows, n), 0, cptr, chunk,
                        s->idx ? s->codebook : NULL, val };
    return 0;
}

/* Frees what dcz_gk_chunks_make allocated. */
static inline void dcz_gk_chunks_free(dcz_gchunks *h)
{
    free((void *)h->cptr);
    free((void *)h->chunk);
    free((void *)h->val);
    h->cptr = NULL;
    h->chunk = NULL;
    h->val = NULL;
}
#endif

/* A chunk as a lane holds it (the 16 bytes as 4 little-endian words):
 * entry j's step and codebook index. */
DCZ_HD uint32_t dcz_gk_chunk_step(const uint32_t w[4], uint32_t j)
{
    return w[j >> 2] >> (8 * (j & 3)) & 255u;
}

DCZ_HD uint32_t dcz_gk_chunk_index(const uint32_t w[4], uint32_t j)
{
    return w[2 + (j >> 2)] >> (8 * (j & 3)) & 255u;
}

/* The sum of a chunk's steps: how far it moves the column. */
DCZ_HD uint32_t dcz_gk_chunk_span(const uint32_t w[4])
{
    uint32_t t = 0;
    for (uint32_t j = 0; j < DCZ_GK_CHUNK; j++) t += dcz_gk_chunk_step(w, j);
    return t;
}

/* sum plus chunk c's products with one sample x (cols), its entries'
 * columns from col (the column before its first step), in entry order;
 * cb the codebook (shared memory on the device) or NULL for s's values. */
DCZ_HD float dcz_gk_chunk_dot(const dcz_gchunks *s, const float *cb, const uint32_t w[4], uint64_t c, uint32_t col,
                              const float *x, float sum)
{
    for (uint32_t j = 0; j < DCZ_GK_CHUNK; j++) {
        const uint32_t st = dcz_gk_chunk_step(w, j);
        col += st;
        if (st == DCZ_STEP_FILLER) continue;
        sum += (cb ? cb[dcz_gk_chunk_index(w, j)] : s->val[c * DCZ_GK_CHUNK + j]) * x[col];
    }
    return sum;
}

/* Chunk c's 16 bytes as 4 little-endian words: one 16-byte load on the
 * device. */
DCZ_HD void dcz_gk_chunk_words(const uint8_t *chunk, uint64_t c, uint32_t w[4])
{
#ifdef __CUDA_ARCH__
    const uint4 v = __ldg((const uint4 *)(chunk + c * 16));
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
#else
    for (uint32_t i = 0; i < 4; i++) {
        const uint8_t *b = chunk + c * 16 + 4 * i;
        w[i] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    }
#endif
}

/* The product over a batch held transposed: column col of sample j at
 * xt[col samples + j] (a warp's lanes read consecutive samples of a
 * column: coalesced). A lane takes samples j and j + 32 (those under
 * samples): sum[i] += the products of chunks [c, c_end) of a row with
 * sample j + 32 i, from column col (the column before chunk c's first
 * step), in entry order. cb: the codebook (shared memory on the device),
 * or NULL. */
#define DCZ_GK_LANE_SAMPLES 2
DCZ_HD void dcz_gk_chunks_t(const dcz_gchunks *s, const float *cb, const float *xt, uint64_t samples, uint64_t j,
                            uint32_t c, uint32_t c_end, uint32_t col, float sum[DCZ_GK_LANE_SAMPLES])
{
    const int one = j < samples, two = j + 32 < samples;
    for (; c < c_end; c++) {
        uint32_t w[4];
        dcz_gk_chunk_words(s->chunk, c, w);
        for (uint32_t e = 0; e < DCZ_GK_CHUNK; e++) {
            const uint32_t st = dcz_gk_chunk_step(w, e);
            col += st;
            if (st == DCZ_STEP_FILLER) continue;
            const float wt = cb ? cb[dcz_gk_chunk_index(w, e)] : s->val[(uint64_t)c * DCZ_GK_CHUNK + e];
            const float *xc = xt + (uint64_t)col * samples + j;
            if (one) sum[0] += wt * xc[0];
            if (two) sum[1] += wt * xc[32];
        }
    }
}

/* Row r, samples j and j + 32, of act(S x + bias) in one piece: from the
 * bias, the row's entries in order, as dcz_spmm_ref sums them. */
DCZ_HD void dcz_gk_chunk_row_t(const dcz_gchunks *s, const float *cb, const float *bias, const float *xt,
                               uint64_t samples, uint64_t j, uint32_t r, dcz_act act, float y[DCZ_GK_LANE_SAMPLES])
{
    const float b = bias ? bias[r] : 0.0f;
    float sum[DCZ_GK_LANE_SAMPLES] = { b, b };
    dcz_gk_chunks_t(s, cb, xt, samples, j, s->cptr[r], s->cptr[r + 1], 0, sum);
    for (int i = 0; i < DCZ_GK_LANE_SAMPLES; i++) y[i] = dcz_gk_act(act.op, act.lo, act.hi, sum[i]);
}

/* The parts a row's chunks are split into at batches, a warp each, their
 * sums added in part order (deterministic): part p of n chunks from c0
 * takes [c0 + n p / parts, c0 + n (p + 1) / parts). Measured on an H100
 * at batch 64 with 1, 2, 4 and 8 parts (bench_gpu, in a graph), 8 was
 * the fastest or within 5% on eight of nine layers: 2.6x faster than one
 * part on LeNet-300-100's fc1 (300 rows: one warp a row leaves the device
 * nearly empty), 1.5x on VGG-6, 5% slower on Alex-7; it also fills the
 * device for a convolution's patches at batch 1 (LeNet-5's conv2: 50
 * rows). */
#define DCZ_GK_SPMM_PARTS 8

/* Row r of y = S x + bias for one sample x (cols): from the bias, the
 * row's entries in order, as dcz_spmm_ref sums them. */
DCZ_HD float dcz_gk_sparse_row(const dcz_gsparse *s, const float *bias, const float *x, uint32_t r)
{
    float sum = bias ? bias[r] : 0.0f;
    uint32_t col = 0;
    for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
        const uint32_t st = s->step[e];
        col += st;
        if (st == DCZ_STEP_FILLER) continue;
        sum += (s->idx ? s->codebook[s->idx[e]] : s->val[e]) * x[col];
    }
    return sum;
}

/* ---- the integer region of a calibrated model (8-bit schemes) -------------
 *
 * On the device the activations of the integer region are int8 (the 8-bit
 * schemes hold -127..127, so nothing is lost from the CPU's dcz_q lanes),
 * weights int8, sums int32: the loader has checked every sum of an 8-bit
 * scheme fits 32 bits (qload.c), so these are the CPU's int64 sums, bit for
 * bit. Requantization multiplies such a sum (|acc| < 2^31) by a multiplier
 * below 2^31 in 64 bits, which never overflows, and rounds as
 * dcz_round_shift does. */

/* The integer execution form (model.h's dcz_qsparse) with int8 weights. */
typedef struct dcz_gqsparse {
    uint32_t rows, cols, k;
    const uint32_t *row_ptr;  /* (rows + 1) */
    const uint8_t *step;      /* (entries) */
    const uint8_t *idx;       /* (entries) or NULL */
    const int8_t *qtab;       /* (rows, k) when idx: a row's integer codebook */
    const int8_t *qval;       /* (entries) when !idx; fillers 0 */
} dcz_gqsparse;

/* What becomes of a weighted layer's sums: channel c's sum plus bias[c],
 * requantized to int8 by (mult[c], shift[c]), or, on the region's last
 * weighted layer (scale set), made float by scale[c] as run.c's dequantize. */
typedef struct dcz_gqout {
    const int32_t *bias;      /* (channels) in accumulator units, or NULL */
    const int32_t *mult;      /* (channels) when !scale */
    const uint8_t *shift;
    const double *scale;      /* (channels): float output */
    int32_t qmax;
    void *y;                  /* int8_t, or float when scale */
} dcz_gqout;

/* floor((v + 2^(shift-1)) / 2^shift), as dcz_round_shift, for |v| < 2^62
 * and shift <= 62: v lifted by 2^62 is never negative, and 2^62 divides
 * by 2^shift exactly, so unsigned shifts give the floor. */
DCZ_HD int64_t dcz_gk_round_shift(int64_t v, uint32_t shift)
{
    if (shift == 0) return v;
    const uint64_t lift = (uint64_t)1 << 62;
    return (int64_t)(((uint64_t)v + lift + ((uint64_t)1 << (shift - 1))) >> shift) - (int64_t)(lift >> shift);
}

DCZ_HD int32_t dcz_gk_clamp(int64_t v, int32_t qmax)
{
    return (int32_t)(v > qmax ? qmax : v < -qmax ? -qmax : v);
}

/* clamp(round_shift(v mult, shift)) for |v mult| < 2^62: a weighted layer's
 * requantization, and the rescaling of Add, Mul, Concat and the mean. */
DCZ_HD int32_t dcz_gk_requant(int64_t v, int32_t mult, uint32_t shift, int32_t qmax)
{
    return dcz_gk_clamp(dcz_gk_round_shift(v * mult, shift), qmax);
}

/* The region's float input on its scale, as run.c's quantize_input: the
 * quotient in double, rounded half away from zero, clamped; NaN gives 0. */
DCZ_HD int32_t dcz_gk_quantize(float x, float scale, int32_t qmax)
{
    double v = (double)x / scale;
    if (v != v) v = 0;
    v = v >= 0 ? floor(v + 0.5) : -floor(-v + 0.5);
    return (int32_t)(v > qmax ? qmax : v < -qmax ? -qmax : v);
}

/* Element at of the output: channel c's sum (without its bias) finished. */
DCZ_HD void dcz_gk_qfinish(const dcz_gqout *o, uint32_t c, int32_t sum, size_t at)
{
    const int64_t acc = (int64_t)sum + (o->bias ? o->bias[c] : 0);
    if (o->scale) ((float *)o->y)[at] = (float)((double)acc * o->scale[c]);
    else ((int8_t *)o->y)[at] = (int8_t)dcz_gk_requant(acc, o->mult[c], o->shift[c], o->qmax);
}

DCZ_HD int32_t dcz_gk_qweight(const dcz_gqsparse *s, uint32_t r, uint32_t e)
{
    return s->idx ? s->qtab[(size_t)r * s->k + s->idx[e]] : s->qval[e];
}

/* Row r's sum over one sample x (cols), without the bias. */
DCZ_HD int32_t dcz_gk_qsparse_row(const dcz_gqsparse *s, const int8_t *x, uint32_t r)
{
    int32_t sum = 0;
    uint32_t col = 0;
    for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
        const uint32_t st = s->step[e];
        col += st;
        if (st != DCZ_STEP_FILLER) sum += dcz_gk_qweight(s, r, e) * x[col];
    }
    return sum;
}

/* Output i (of out_c out_h out_w) of one sample of an integer convolution,
 * without the bias: dcz_gk_conv_sparse on integers. */
DCZ_HD int32_t dcz_gk_qconv(const dcz_conv_geom *g, const dcz_gqsparse *s, const int8_t *x, uint32_t i)
{
    uint32_t ic0;
    int64_t y0, x0;
    const uint32_t oc = dcz_gk_conv_out(g, i, &ic0, &y0, &x0);
    int32_t sum = 0;
    uint32_t col = 0;
    for (uint32_t e = s->row_ptr[oc]; e < s->row_ptr[oc + 1]; e++) {
        const uint32_t st = s->step[e];
        col += st;
        if (st == DCZ_STEP_FILLER) continue;
        const int64_t at = dcz_gk_tap_cell(g, ic0, y0, x0, col);
        if (at >= 0) sum += dcz_gk_qweight(s, oc, e) * x[at];
    }
    return sum;
}

/* Element i of one sample's int8 patches (one group; 0 in the padding). */
DCZ_HD int8_t dcz_gk_qim2col(const dcz_conv_geom *g, const int8_t *x, uint32_t i)
{
    const int64_t at = dcz_gk_patch_cell(g, i);
    return at < 0 ? 0 : x[at];
}

/* sum / count rounded half away from zero (kernels_int.c's div_round);
 * count 0 gives 0. */
DCZ_HD int32_t dcz_gk_div_round(int64_t sum, uint64_t count)
{
    if (count == 0) return 0;
    const uint64_t mag = sum < 0 ? 0 - (uint64_t)sum : (uint64_t)sum, q = (mag + count / 2) / count;
    return (int32_t)(sum < 0 ? -(int64_t)q : (int64_t)q);
}

/* Output i of one sample of an integer max (avg 0) or average pool. */
DCZ_HD int8_t dcz_gk_qpool(const dcz_conv_geom *g, int avg, int count_include_pad, const int8_t *x, uint32_t i)
{
    const uint32_t plane = g->out_h * g->out_w, c = i / plane, p = i % plane;
    uint32_t y0, y1, x0, x1;
    dcz_gk_window(p / g->out_w, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
    dcz_gk_window(p % g->out_w, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
    const int8_t *xp = x + (size_t)c * g->in_h * g->in_w;
    int32_t m = avg ? 0 : -128;
    for (uint32_t iy = y0; iy < y1; iy++)
        for (uint32_t ix = x0; ix < x1; ix++) {
            const int32_t v = xp[(size_t)iy * g->in_w + ix];
            if (avg) m += v;
            else if (v > m) m = v;
        }
    if (!avg) return (int8_t)m;
    return (int8_t)dcz_gk_div_round(m, count_include_pad ? (uint64_t)g->kh * g->kw : (uint64_t)(y1 - y0) * (x1 - x0));
}

/* The integer mean of plane values (one channel of one sample): rounded
 * (rescale 0), or their sum requantized to another scale (mult, shift;
 * 127 plane < 2^31, which gpu.c checks). */
DCZ_HD int8_t dcz_gk_qmean(const int8_t *x, uint32_t plane, int rescale, int32_t mult, uint32_t shift, int32_t qmax)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < plane; i++) sum += x[i];
    return (int8_t)(rescale ? dcz_gk_requant(sum, mult, shift, qmax) : dcz_gk_div_round(sum, plane));
}

/* Add: both inputs brought to the output's scale, then added (dcz_qadd_ref). */
DCZ_HD int8_t dcz_gk_qadd(int32_t a, int32_t b, const int32_t *mult, const uint8_t *shift, int32_t qmax)
{
    return (int8_t)dcz_gk_clamp(dcz_gk_round_shift((int64_t)a * mult[0], shift[0]) +
                                dcz_gk_round_shift((int64_t)b * mult[1], shift[1]), qmax);
}

#endif /* DCZ_RUNTIME_GPU_KERN_H */
