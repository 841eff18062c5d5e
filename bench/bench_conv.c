/* bench_conv.c: convolution on compressed and dense weights, on the
 * LeNet-5 conv layers, layers of the CNN and ResNet-style presets and 1x1
 * layers over 4 x 4 planes, batch 1 and 8, in the same run and on one
 * thread:
 *   blas     im2col + OpenBLAS sgemm on the dense fp32 weights (the baseline)
 *   dense    dcz_conv2d_dense, the direct loop for dense-weight layers
 *   gemm     dcz_conv2d_dense_im2col on the same weights expanded: patches
 *            times the weights by dcz_gemm_f32 (what the runtime runs for
 *            dense convolutions, and for sparse ones above
 *            DCZ_CONV_DENSE_MIN_DENSITY)
 *   shift    dcz_conv2d_shift on the shift form in the blocks the runtime
 *            picks (dcz_shift_pick_block): what the runtime runs where
 *            dcz_conv2d_pick_shift says so
 *   direct   dcz_conv2d_sparse_direct on the execution form (8-bit codebook)
 *   im2col   dcz_conv2d_sparse_im2col: im2col + dcz_spmm_ref, same weights
 *   im2colT  im2col into (in_c kh kw, pixels) + a row-streaming sparse
 *            product (this file only): im2col without the strided access of
 *            dcz_spmm_ref, to show what the layout costs
 * Prints microseconds (median of repeated runs), the ratios im2col / direct
 * (kernels_conv.c) and gemm / shift (shift_form.c) behind the runtime's
 * choice of kernel and the kernel it picks, direct against the baseline,
 * the useful multiply-adds per second of shift, and the memory
 * floor: bytes direct must move (compressed weights, input, output) at the
 * copy bandwidth measured here, as a share of its time. Timings are
 * reported, never asserted.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/model.h"
#include "train/train.h"

#define REPS 21

/* median seconds of one call */
#define TIME(stmt, out) do { \
    double t_[REPS]; \
    stmt; \
    for (int r_ = 0; r_ < REPS; r_++) { double a_ = bench_now(); stmt; t_[r_] = bench_now() - a_; } \
    qsort(t_, REPS, sizeof *t_, bench_cmp_double); \
    out = t_[REPS / 2]; \
} while (0)

/* im2col + OpenBLAS: col (pixels, K) from dcz_im2col, y (out_c, pixels) =
 * W (out_c, K) col^T + bias */
static void blas_conv(const dcz_conv_geom *g, const float *w, const float *bias, const float *x,
                      size_t batch, float *col, float *y)
{
    const int K = (int)(g->in_c * g->kh * g->kw), P = (int)(g->out_h * g->out_w);
    for (size_t b = 0; b < batch; b++) {
        float *yb = y + b * g->out_c * (size_t)P;
        for (uint32_t oc = 0; oc < g->out_c; oc++)
            for (int p = 0; p < P; p++) yb[(size_t)oc * P + p] = bias[oc];
        dcz_im2col(g, x + b * g->in_c * g->in_h * g->in_w, col);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g->out_c, P, K, 1.0f, w, K,
                    col, K, 1.0f, yb, P);
    }
}

/* im2col into (K, pixels), then for each output row and stored weight
 * y[oc][:] += w * col[c][:], a contiguous row of `pixels` floats */
static void im2col_t_conv(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                          const float *x, size_t batch, float *col, float *tmp, float *y)
{
    const size_t K = (size_t)g->in_c * g->kh * g->kw, P = (size_t)g->out_h * g->out_w;
    for (size_t b = 0; b < batch; b++) {
        dcz_im2col(g, x + b * g->in_c * g->in_h * g->in_w, tmp);
        for (size_t p = 0; p < P; p++)
            for (size_t c = 0; c < K; c++) col[c * P + p] = tmp[p * K + c];
        float *yb = y + b * g->out_c * P;
        for (uint32_t oc = 0; oc < s->rows; oc++) {
            float *yr = yb + oc * P;
            for (size_t p = 0; p < P; p++) yr[p] = bias[oc];
            uint32_t c = 0;
            for (uint32_t e = s->row_ptr[oc]; e < s->row_ptr[oc + 1]; e++) {
                c += s->step[e];
                if (s->step[e] == DCZ_STEP_FILLER) continue;
                const float wv = dcz_sparse_weight(s, e);
                const float *cr = col + (size_t)c * P;
                for (size_t p = 0; p < P; p++) yr[p] += wv * cr[p];
            }
        }
    }
}

int main(void)
{
    openblas_set_num_threads(1);
    const double bw = bench_copy_bandwidth((size_t)64 << 20);
    printf("copy bandwidth %.1f GB/s (read + write), one thread\n\n", bw / 1e9);
    const bench_layer layers[] = {
        { "dense-16-16", 16, 16, 28, 3, 1, 1, 1.0 },
        { "dense-32-64", 32, 64, 14, 3, 1, 1, 1.0 },
        { "dense-64-64-7", 64, 64, 7, 3, 1, 1, 1.0 },
        { "lenet5-conv1", 1, 20, 28, 5, 0, 1, 1.0 },
        { "lenet5-conv1", 1, 20, 28, 5, 0, 1, 0.66 },
        { "lenet5-conv2", 20, 50, 12, 5, 0, 1, 1.0 },
        { "lenet5-conv2", 20, 50, 12, 5, 0, 1, 0.12 },
        { "resnet-16-16", 16, 16, 28, 3, 1, 1, 0.40 },
        { "resnet-16-16", 16, 16, 28, 3, 1, 1, 0.15 },
        { "resnet-16-16", 16, 16, 28, 3, 1, 1, 0.05 },
        { "cnn-32-64", 32, 64, 14, 3, 1, 1, 0.40 },
        { "cnn-32-64", 32, 64, 14, 3, 1, 1, 0.15 },
        { "cnn-32-64", 32, 64, 14, 3, 1, 1, 0.05 },
        { "cnn-64-128", 64, 128, 7, 3, 1, 1, 0.40 },
        { "cnn-64-128", 64, 128, 7, 3, 1, 1, 0.10 },
        { "cnn-128-256", 128, 256, 4, 3, 1, 1, 0.40 },
        { "cnn-128-256", 128, 256, 4, 3, 1, 1, 0.10 },
        { "resnet-s2-16-32", 16, 32, 28, 3, 1, 2, 0.30 },
        { "resnet-s2-32-64", 32, 64, 14, 3, 1, 2, 0.20 },
        { "resnet-64-64-7", 64, 64, 7, 3, 1, 1, 0.16 },
        { "pw-64-384-4", 64, 384, 4, 1, 0, 1, 1.0 },
        { "pw-64-384-4", 64, 384, 4, 1, 0, 1, 0.40 },
        { "pw-384-96-4", 384, 96, 4, 1, 0, 1, 0.10 },
    };
    const size_t batches[] = { 1, 8 };
    printf("%-15s %5s %7s %9s %9s %9s %9s %9s %9s %10s %8s %8s %8s %8s %7s %6s %7s\n", "layer", "batch",
           "density", "blas us", "dense us", "gemm us", "shift us", "direct us", "im2col us", "im2colT us", "im2col/",
           "blas/", "gemm/", "gemm/", "GMAC/s", "floor", "runtime");
    printf("%-15s %5s %7s %9s %9s %9s %9s %9s %9s %10s %8s %8s %8s %8s %7s %6s %7s\n", "", "", "", "", "", "", "",
           "", "", "", "direct", "direct", "direct", "shift", "shift", "%", "runs");
    dcz_rng rng;
    dcz_rng_seed(&rng, 1);
    for (size_t li = 0; li < sizeof layers / sizeof *layers; li++) {
        const bench_layer *L = &layers[li];
        const uint32_t out_hw = (L->hw + 2 * L->pad - L->k) / L->stride + 1;
        const dcz_conv_geom g = { L->in_c, L->hw, L->hw, L->out_c, out_hw, out_hw,
                                  L->k, L->k, L->stride, L->stride, L->pad, L->pad, 1 };
        const uint32_t rows = L->out_c, cols = L->in_c * L->k * L->k;
        const size_t n = (size_t)rows * cols, B = 8;
        const size_t xin = (size_t)L->in_c * L->hw * L->hw, yout = (size_t)L->out_c * out_hw * out_hw;
        float *w = calloc(n, sizeof *w), *bias = malloc(rows * sizeof *bias), cb[256];
        float *x = malloc(B * xin * sizeof *x), *y = malloc(B * yout * sizeof *y);
        float *scratch = malloc(dcz_conv2d_im2col_floats(&g) * sizeof *scratch);
        float *colt = malloc((size_t)cols * out_hw * out_hw * sizeof *colt);
        uint8_t *keep = calloc(n, 1);
        for (int i = 0; i < 256; i++) cb[i] = dcz_rng_uniform(&rng) - 0.5f;
        for (uint32_t i = 0; i < rows; i++) bias[i] = dcz_rng_uniform(&rng) - 0.5f;
        for (size_t i = 0; i < B * xin; i++) x[i] = dcz_rng_uniform(&rng);
        uint32_t nnz = 0;
        for (size_t i = 0; i < n; i++)
            if (dcz_rng_uniform(&rng) < L->density) { keep[i] = 1; nnz++; }
        /* the execution form: one-byte steps and 8-bit codebook indices */
        const uint64_t cap = dcz_sparse_max_entries(nnz, rows, cols);
        uint32_t *row_ptr = malloc((rows + 1) * sizeof *row_ptr);
        uint8_t *step = malloc(cap ? cap : 1), *idx = malloc(cap ? cap : 1), *src = malloc(nnz ? nnz : 1);
        dcz_sparse_builder bld;
        memset(&bld, 0, sizeof bld);
        bld.rows = rows; bld.cols = cols; bld.row_ptr = row_ptr; bld.step = step;
        bld.cap = (uint32_t)cap; bld.idx_dst = idx; bld.idx_src = src;
        row_ptr[0] = 0;
        uint32_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (!keep[i]) continue;
            src[k] = (uint8_t)dcz_rng_below(&rng, 256);
            w[i] = cb[src[k]];
            dcz_sparse_builder_add(&bld, k, i);
            k++;
        }
        dcz_sparse_builder_finish(&bld);
        const dcz_sparse sp = { .rows = rows, .cols = cols, .entries = bld.entries, .row_ptr = row_ptr, .step = step,
                                .idx = idx, .codebook = cb, .k = 256 };
        dcz_shift sf;
        const uint32_t ob = dcz_shift_pick_block(&g, nnz);
        void *sfmem = malloc(dcz_shift_bytes(&g, nnz, ob));
        dcz_shift_build(&g, &sp, NULL, ob, sfmem, &sf);
        float *sscratch = malloc(dcz_shift_scratch_floats(&g) * sizeof *sscratch);
        for (size_t bi = 0; bi < 2; bi++) {
            const size_t batch = batches[bi];
            double tb, td, tg, ts, tz, ti, tt;
            TIME(blas_conv(&g, w, bias, x, batch, scratch, y), tb);
            TIME(dcz_conv2d_dense(&g, w, bias, x, batch, y), td);
            TIME(dcz_conv2d_dense_im2col(&g, w, bias, x, batch, 0, scratch, y), tg);
            TIME(dcz_conv2d_shift(&g, &sf, bias, x, batch, 0, sscratch, y), ts);
            TIME(dcz_conv2d_sparse_direct(&g, &sp, bias, x, batch, y), tz);
            TIME(dcz_conv2d_sparse_im2col(&g, &sp, bias, x, batch, 1, scratch, y), ti);
            TIME(im2col_t_conv(&g, &sp, bias, x, batch, colt, scratch, y), tt);
            /* multiply-adds of the stored weights, padding taps included */
            const double macs = (double)nnz * out_hw * out_hw * batch;
            const double bytes = bld.entries * 2.0 + (rows + 1) * 4.0 + 256 * 4.0 +
                                 (double)batch * (xin + yout) * 4.0;
            printf("%-15s %5zu %6.0f%% %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %10.1f %7.2fx %7.2fx %7.2fx %7.2fx "
                   "%7.2f %5.1f%% %7s\n",
                   L->name, batch, L->density * 100, tb * 1e6, td * 1e6, tg * 1e6, ts * 1e6, tz * 1e6, ti * 1e6,
                   tt * 1e6, ti / tz, tb / tz, tg / tz, tg / ts, macs / ts / 1e9, bytes / (bw / 2) / tz * 100,
                   dcz_conv2d_pick_shift(&g, nnz) ? "shift" : dcz_conv2d_pick_expand(&g, nnz) ? "gemm"
                   : dcz_conv2d_pick_im2col(&g) ? "im2col" : "direct");
        }
        free(w); free(bias); free(x); free(y); free(scratch); free(colt); free(keep);
        free(row_ptr); free(step); free(idx); free(src); free(sfmem); free(sscratch);
    }
    printf("\n(ratios > 1: the kernel below the bar (direct, shift) faster. All dcz kernels run on\n"
           " one thread, as does OpenBLAS. GMAC/s: multiply-adds of the stored weights per second\n"
           " in shift. floor %%: the time moving direct's bytes takes at the copy bandwidth measured\n"
           " above, as a share of its time: convolution is compute-bound. runtime runs: the\n"
           " kernel dcz_run picks for the layer (dcz_conv2d_pick_shift, then _expand, _im2col))\n");
    return 0;
}
