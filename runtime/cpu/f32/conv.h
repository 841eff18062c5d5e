/* conv.h: float convolutions and pools (kernels_conv.c): direct, dense
 * and sparse, by im2col and the dense product, and the choices between
 * them; the patches (im2col) and the taps' geometry the integer
 * convolutions share (cpu/q8/qconv.h); max, average and global average
 * pools. The shift form has its own header (shift.h), Winograd's
 * transforms theirs (wino.h).
 *
 * Checked by tests/unit/test_kernels.c (every kernel against the direct
 * references on the convolution grid).
 */
#ifndef DCZ_RUNTIME_CPU_F32_CONV_H
#define DCZ_RUNTIME_CPU_F32_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

/* ---- convolution and pooling (kernels_conv.c) ---------------------------
 * x (batch, in_c, in_h, in_w) and y (batch, out_c, out_h, out_w), C order. */

/* The specification: y = conv(x, w) + bias by seven plain loops, taps in
 * the padding skipped. w (out_c, in_c, kh, kw); bias (out_c) or NULL. */
void dcz_conv2d_direct_ref(const dcz_conv_geom *g, const float *w, const float *bias,
                           const float *x, size_t batch, float *y);
/* The same on dense weights, one output row at a time: each weight adds
 * itself times a shifted input row to an output row. What the runtime runs
 * for dense-weight convolutions. */
void dcz_conv2d_dense(const dcz_conv_geom *g, const float *w, const float *bias,
                      const float *x, size_t batch, float *y);
/* Direct sparse convolution on the execution form s (out_c, in_c kh kw):
 * for each output channel, each stored weight (ic, ky, kx, w) adds w times
 * the shifted input plane ic to the output plane, for every sample. What the
 * runtime runs for most sparse convolutions (dcz_conv2d_pick_im2col). */
void dcz_conv2d_sparse_direct(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                              const float *x, size_t batch, float *y);
/* Both on the variant of isa (DCZ_ISA_REF: scalar rows; the vector ones
 * take 8 or 4 outputs of a row at once, stride 1, and give the same bits);
 * 0 when this build or machine has none. The two above run the best. */
int dcz_conv2d_dense_isa(dcz_isa isa, const dcz_conv_geom *g, const float *w, const float *bias,
                         const float *x, size_t batch, float *y);
int dcz_conv2d_sparse_direct_isa(dcz_isa isa, const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                                 const float *x, size_t batch, float *y);
/* The vector variant the two run here ("avx2", "neon"), or NULL. */
const char *dcz_conv2d_variant(void);
/* The alternative: im2col of each sample into (out_h out_w, in_c kh kw),
 * then dcz_spmm (dcz_spmm_ref when ref) with the output pixels as its
 * batch, then a transpose into (out_c, out_h, out_w). scratch holds
 * dcz_conv2d_im2col_floats(g). What the runtime runs on small output
 * planes. */
void dcz_conv2d_sparse_im2col(const dcz_conv_geom *g, const dcz_sparse *s, const float *bias,
                              const float *x, size_t batch, int ref, float *scratch, float *y);
/* Floats of scratch dcz_conv2d_sparse_im2col needs (per call, any batch),
 * dcz_spmm's tile included. */
uint64_t dcz_conv2d_im2col_floats(const dcz_conv_geom *g);
/* dcz_conv2d_im2col_fits: a sparse convolution of geometry g can run by
 * im2col: ungrouped, with scratch of at most DCZ_CONV_SCRATCH_MAX floats.
 * dcz_conv2d_pick_im2col: the rule, it should rather than directly: it
 * fits, and its output rows are shorter than DCZ_CONV_DIRECT_MIN_W, where
 * direct pays a loop per short row (kernels_conv.c has the numbers). */
#define DCZ_CONV_DIRECT_MIN_W 8
#define DCZ_CONV_SCRATCH_MAX (1u << 22)
int dcz_conv2d_im2col_fits(const dcz_conv_geom *g);
int dcz_conv2d_pick_im2col(const dcz_conv_geom *g);
/* Dense weights: each sample's patches laid out by dcz_im2col_k (a 1 x 1
 * convolution at stride 1 without padding whose planes are whole vectors
 * reads the input itself: its patches are the input), then the weights
 * (out_c, in_c kh kw) times them by dcz_gemm_f32 (its reference when ref),
 * straight into the output planes; scratch of dcz_conv2d_im2col_floats
 * floats. A sample gives the same bits at any batch, and on every variant
 * the reference's. The runtime takes it for every ungrouped dense
 * convolution whose patches take at most DCZ_CONV_SCRATCH_MAX floats
 * (dcz_conv2d_pick_dense_im2col). dcz_conv2d_dense_im2col_act: then act
 * (NULL or op 0: none) on each output, by dcz_gemm_f32_act. */
void dcz_conv2d_dense_im2col(const dcz_conv_geom *g, const float *w, const float *bias, const float *x,
                             size_t batch, int ref, float *scratch, float *y);
void dcz_conv2d_dense_im2col_act(const dcz_conv_geom *g, const float *w, const float *bias, const float *x,
                                 size_t batch, int ref, const dcz_act *act, float *scratch, float *y);
int dcz_conv2d_pick_dense_im2col(const dcz_conv_geom *g);
/* dcz_conv2d_dense_im2col_act with each sample's output channels split
 * over pool's threads (NULL: the caller's alone),
 * all reading the sample's patches laid out once by the caller: the same
 * bits at any thread count (each output its own sum, dcz_gemm_f32).
 * dcz_conv2d_dense_splits: whether g is worth it (DCZ_SPLIT_MACS a sample,
 * two output channels). */
void dcz_conv2d_dense_im2col_pool(dcz_pool *pool, const dcz_conv_geom *g, const float *w, const float *bias,
                                  const float *x, size_t batch, int ref, const dcz_act *act, float *scratch,
                                  float *y);
int dcz_conv2d_dense_splits(const dcz_conv_geom *g);
/* A dense 1 x 1 convolution without padding by pixel rows: each sample's
 * input (at a stride, its patches: its planes subsampled by dcz_im2col_k)
 * read as (pixels, in_c) rows (its planes by columns: dcz_gemm_f32_strided),
 * times the weights transposed by panels of DCZ_PIXELS_PANEL output
 * channels (dcz_conv_weights_by_panel), a panel at a time, bias per output channel, then
 * the product (pixels, out_c) transposed into the output planes. A panel's
 * weights lie in the order the product reads them, so that they stream
 * from memory in order: AMD EPYC (Zen 5), one thread, batch 1, dcz bench
 * medians of alternated runs in both orders, against the weights
 * transposed whole (each panel's rows a row of all out_c apart):
 * RegNetX-400MF 0.97-0.99 of the time, ResNet-50 0.98-1.0, MobileNetV2
 * within noise. At stride 1 every sample of the batch takes a panel before
 * the next panel (each panel's product then its part of the sample's
 * planes), so that the weights come from memory once a batch, where a
 * sample's every panel before the next sample read them once a sample
 * (the loader gives such layers the whole batch: load.c,
 * batch_weights). The vectors hold output
 * channels where dcz_conv2d_dense_im2col's hold pixels: a plane of few
 * pixels (7 x 7 takes 4 vectors for 49) fills them. Each output is its
 * bias and its products in input-channel order by fused multiply-adds, as
 * there: dcz_conv2d_dense_im2col_act's bits (the reference's), at any
 * batch and thread count (pool splits the pixel rows; NULL: the caller's
 * alone). scratch: dcz_conv2d_im2col_floats(g) floats. Runs g where
 * dcz_conv2d_pick_pixels (a 1 x 1 window without padding, one group, the
 * scratch within its cap); dcz_conv2d_pixels_rule: where the rules take it over
 * dcz_conv2d_dense_im2col (below). */
void dcz_conv2d_pixels_pool(dcz_pool *pool, const dcz_conv_geom *g, const float *wt, const float *bias,
                            const float *x, size_t batch, const dcz_act *act, float *scratch, float *y);
/* wp = w (rows, cols) transposed by panels of DCZ_PIXELS_PANEL rows (the
 * last one fewer), each (cols, its rows padded to DCZ_GEMM_PAD with
 * zeros) and all of them one after the other (panel p at float cols
 * DCZ_PIXELS_PANEL p; rows padded to DCZ_GEMM_PAD in all):
 * the weights of a 1 x 1 convolution as the pixel rows read them, each
 * panel's in order */
#define DCZ_PIXELS_PANEL 64u
void dcz_conv_weights_by_panel(const float *w, uint32_t rows, uint32_t cols, float *wp);
int dcz_conv2d_pick_pixels(const dcz_conv_geom *g);
int dcz_conv2d_pixels_rule(const dcz_conv_geom *g);
/* wt (cols, rows padded to DCZ_GEMM_PAD with zeros) = w (rows, cols)
 * transposed: the weights of a fully connected layer or of a 1 x 1
 * convolution as the dense product reads them by samples or pixels. */
void dcz_conv_weights_by_column(const float *w, uint32_t rows, uint32_t cols, float *wt);
/* A sparse convolution of nnz stored weights runs faster expanded to dense
 * weights by dcz_conv2d_dense_im2col than by its sparse kernels from this
 * density on: the dense product does 6 to 20 times the multiply-adds per
 * second of dcz_conv2d_sparse_direct (bench/bench_conv.c: 16 -> 16
 * channels over 28 x 28 break even near 15%, 32 -> 64 and wider near 5%).
 * dcz_conv2d_pick_expand: ungrouped, its patches within the scratch cap, and
 * at least that dense. */
#define DCZ_CONV_DENSE_MIN_DENSITY 0.10
int dcz_conv2d_pick_expand(const dcz_conv_geom *g, uint64_t nnz);

/* col (out_h out_w, in_c kh kw): row p is the receptive field of output
 * pixel p in (ic, ky, kx) order, 0 where it falls in the padding. */
void dcz_im2col(const dcz_conv_geom *g, const float *x, float *col);
/* col (in_c kh kw, ldb): row (ic, ky, kx) holds, for every output pixel,
 * the input it multiplies by that weight, 0 in the padding; columns from
 * out_h out_w to ldb are 0. */
/* The output columns ox whose input column ox sw + kx - pw is inside the
 * image: lo .. hi - 1 (an empty range when none). */
void dcz_conv_inside_cols(const dcz_conv_geom *g, uint32_t kx, uint32_t *lo, uint32_t *hi);
void dcz_im2col_k_ref(const dcz_conv_geom *g, const float *x, float *col, size_t ldb);
/* The same, whole planes at a time where stride 1 keeps the width (else
 * the reference). */
void dcz_im2col_k(const dcz_conv_geom *g, const float *x, float *col, size_t ldb);

/* Geometry shared by the float and integer convolutions and pools
 * (kernels_conv.c; integer arithmetic only). A tap is one kernel offset k
 * along one axis: it touches the output positions o in [lo, hi) whose input
 * o * stride + k - pad lies inside the image; first is the input position of
 * o = lo. Computed once per call, so the inner loops test no bounds. */
typedef struct dcz_conv_tap {
    uint32_t lo, hi, first;
} dcz_conv_tap;
/* ty (kh) and tx (kw): the taps of every kernel offset of g */
void dcz_conv_taps(const dcz_conv_geom *g, dcz_conv_tap *ty, dcz_conv_tap *tx);
/* The input cells [lo, hi) of pooling window o along an axis of n cells
 * (never empty: the padding is smaller than the window). */
void dcz_window_cells(uint32_t o, uint32_t stride, uint32_t pad, uint32_t k, uint32_t n,
                      uint32_t *lo, uint32_t *hi);

/* Max over each window's cells inside the input (padding never wins),
 * taken column by column, each column top to bottom, a cell kept only
 * when greater than the maximum so far: NaN never wins, and of +0 and -0
 * the first in that order does. (Columns first: the vector kernels fold a
 * window's rows into one vector before its columns, three maxima a row
 * rather than a permute a cell.) */
void dcz_maxpool_ref(const dcz_conv_geom *g, const float *x, size_t batch, float *y);
/* The same, the interior columns of each row in vector lanes (AVX-512;
 * the reference's bits, NaN and signed zeros included); dcz_maxpool_isa
 * runs the variant of isa (DCZ_ISA_REF: interior rows by scalar loops), 0
 * when this build or machine has none. */
void dcz_maxpool(const dcz_conv_geom *g, const float *x, size_t batch, float *y);
int dcz_maxpool_isa(dcz_isa isa, const dcz_conv_geom *g, const float *x, size_t batch, float *y);
/* dcz_maxpool with the planes split over pool's threads (NULL: the
 * caller's alone) where a sample's outputs reach DCZ_SPLIT_ELEMS: the same
 * bits. At two threads (one core of an AMD EPYC, Zen 5, dcz bench
 * --per-layer), SqueezeNet 1.1's three pools 58, 32 and 24 us -> 30, 16
 * and 12, the model 0.97 of the time; ResNet-50's and DenseNet-121's
 * first 98 and 86 -> 67 and 46 us. */
void dcz_maxpool_pool(dcz_pool *pool, const dcz_conv_geom *g, const float *x, size_t batch, float *y);
/* The interior columns of a pool (or convolution) g, whose windows lie
 * inside the image across: lo .. hi - 1, ox sw - pw >= 0 and
 * ox sw - pw + kw <= in_w (an empty range when none). */
void dcz_pool_interior_cols(const dcz_conv_geom *g, uint32_t *lo, uint32_t *hi);
/* Whether windows of 2 x 2 at stride 2 tile the image without padding
 * (every window full: an average's count is 4 in either mode). */
static inline int dcz_pool_tiles2(const dcz_conv_geom *g)
{
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 &&
           2 * (size_t)g->out_h <= g->in_h && 2 * (size_t)g->out_w <= g->in_w && g->out_w > 0;
}
/* Mean over each window: divided by kh kw when count_include_pad, else by
 * the number of its cells inside the input. */
void dcz_avgpool_ref(const dcz_conv_geom *g, int count_include_pad, const float *x,
                     size_t batch, float *y);
/* The same in vectors where windows of 2 x 2 at stride 2 tile the image
 * without padding (DenseNet's transitions): 16 (AVX-512) or 8 (AVX2)
 * outputs a step, each sum taken as the reference takes it, from 0, the
 * cells row by row, then divided by 4: its bits. dcz_avgpool_isa: isa's
 * variant (DCZ_ISA_REF: the reference), 0 where this machine or the
 * geometry has none. */
void dcz_avgpool(const dcz_conv_geom *g, int count_include_pad, const float *x, size_t batch, float *y);
int dcz_avgpool_isa(dcz_isa isa, const dcz_conv_geom *g, int count_include_pad, const float *x, size_t batch,
                    float *y);
/* y (batch, channels) = mean of each of the channels planes of plane floats. */
void dcz_global_avgpool_ref(uint32_t channels, uint32_t plane, const float *x, size_t batch,
                            float *y);
/* The same bits, a plane's sixteen sums in vector lanes (AVX-512, AVX2;
 * kernels_conv.c). */
void dcz_global_avgpool(uint32_t channels, uint32_t plane, const float *x, size_t batch, float *y);

#endif /* DCZ_RUNTIME_CPU_F32_CONV_H */
