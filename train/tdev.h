/* tdev.h: the device the trainer's device path runs on (dev.c): memory,
 * copies, the products and the launches of the per-element bodies of
 * train/cuda/tkern.h and runtime/cuda/gpu_kern.h.
 *
 * One interface, two implementations, each a table of the functions
 * below: the CUDA device (train/cuda/tdev_cuda.cu: cudaMalloc, a stream,
 * cuBLAS, a grid-stride kernel around each body; built with the CUDA
 * backend) and the host (tdev_host.c: malloc, a loop over each body,
 * products through the trainer's OpenBLAS sgemm). The host device runs the
 * whole device path on any machine, so the tests check its buffers,
 * layouts and order of passes without a GPU (tests/unit/test_train_dev.c);
 * the CUDA one differs only in where each body runs.
 *
 * Pointers named d_* are the device's; every length is in elements.
 * Calls are queued in order on the device's one stream; get waits for
 * what was queued before it. Functions return DCZ_OK or DCZ_ERR_DEVICE
 * (DCZ_ERR_NOMEM for an allocation).
 */
#ifndef DCZ_TRAIN_TDEV_H
#define DCZ_TRAIN_TDEV_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "runtime/shapes.h"

typedef struct dcz_tdev dcz_tdev;

typedef struct dcz_tdev_ops {
    const char *name;   /* "host" or "cuda" */
    dcz_status (*alloc)(dcz_tdev *d, size_t bytes, void **out);   /* zeroed */
    void (*free)(dcz_tdev *d, void *p);                           /* NULL-safe */
    dcz_status (*put)(dcz_tdev *d, void *d_dst, const void *src, size_t bytes);
    dcz_status (*get)(dcz_tdev *d, void *dst, const void *d_src, size_t bytes);
    dcz_status (*copy)(dcz_tdev *d, void *d_dst, const void *d_src, size_t bytes);
    /* C (M, N) = alpha op(A) op(B) + beta C, row major, op(X) = X^T when
     * its flag is set (as cblas_sgemm) */
    dcz_status (*sgemm)(dcz_tdev *d, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                        const float *B, int ldb, float beta, float *C, int ldc);
    /* y (batch, n) = the row b repeated */
    dcz_status (*rows)(dcz_tdev *d, const float *b, size_t batch, uint32_t n, float *y);
    /* y (n) = activation op (a, c its attributes) of x: dcz_gk_act */
    dcz_status (*act)(dcz_tdev *d, uint16_t op, float a, float c, const float *x, size_t n, float *y);
    /* dx (n) from x, y, dy: dcz_tk_act_grad */
    dcz_status (*act_grad)(dcz_tdev *d, uint16_t op, float a, float c, const float *x, const float *y,
                           const float *dy, size_t n, float *dx);
    /* gb (rows) of dy (batch, rows, plane): dcz_tk_bias_grad */
    dcz_status (*bias_grad)(dcz_tdev *d, const float *dy, uint32_t batch, uint32_t rows, uint32_t plane,
                            float *gb);
    /* dz (batch, n) and each row's loss (batch, double) of the logits z
     * against labels (batch), with a teacher's logits t (batch, n; NULL:
     * none) a share a of it at temperature T: dcz_tk_xent_row */
    dcz_status (*xent)(dcz_tdev *d, const float *z, const uint8_t *labels, const float *t, float a, float T,
                       uint32_t batch, uint32_t n, float *dz, double *loss);
    /* one SGD step of n parameters w with momenta v and gradients g, wd
     * their weight decay, mask (NULL: all kept) the pruned: dcz_tk_sgd */
    dcz_status (*sgd)(dcz_tdev *d, float *w, float *v, const float *g, const uint8_t *mask, size_t n, float lr,
                      float mom, float wd);
    /* gcb (k): centroid c's gradient from gw over members[start[c],
     * start[c + 1]): dcz_tk_centroid_grad */
    dcz_status (*centroid_grads)(dcz_tdev *d, const float *gw, const uint32_t *members, const uint32_t *start,
                                 uint32_t k, float *gcb);
    /* w (n) = the centroids' values, 0 where pruned: dcz_tk_shared_weight */
    dcz_status (*shared)(dcz_tdev *d, const float *codebook, uint32_t k, const uint8_t *assign,
                         const uint8_t *mask, size_t n, float *w);
    /* dropout of n values at rate: y = x / (1 - rate) where kept, else 0,
     * keep (n) the draws of dcz_tk_dropout_keep from key */
    dcz_status (*dropout)(dcz_tdev *d, const float *x, size_t n, uint64_t key, float rate, uint8_t *keep,
                          float *y);
    /* dx (n) from dy and the draws: dcz_tk_dropout_grad */
    dcz_status (*dropout_grad)(dcz_tdev *d, const float *dy, const uint8_t *keep, size_t n, float rate, float *dx);
    /* y (n) = a + b (y may be a or b) */
    dcz_status (*add)(dcz_tdev *d, const float *a, const float *b, size_t n, float *y);
    /* a convolution of one group over its patches: colt (in_c kh kw, batch
     * out_h out_w) of x (batch, in_c, in_h, in_w), dcz_gk_patch_taps; dx
     * from their gradient dcolt, dcz_tk_col2im */
    dcz_status (*im2col)(dcz_tdev *d, const dcz_conv_geom *g, const float *x, uint32_t batch, float *colt);
    dcz_status (*col2im)(dcz_tdev *d, const dcz_conv_geom *g, const float *dcolt, uint32_t batch, float *dx);
    /* y (batch, rows, plane) = c + bias by row, c laid out (rows, batch,
     * plane): dcz_gk_bias_act; xr (rows, batch, plane) = x (batch, rows,
     * plane): dcz_tk_by_rows */
    dcz_status (*bias_rows)(dcz_tdev *d, const float *c, const float *bias, uint32_t batch, uint32_t rows,
                            uint32_t plane, float *y);
    dcz_status (*by_rows)(dcz_tdev *d, const float *x, uint32_t batch, uint32_t rows, uint32_t plane, float *xr);
    /* a grouped convolution run directly: y (dcz_gk_conv_dense), dx
     * (dcz_tk_conv_dx), gw (dcz_tk_conv_dw) */
    dcz_status (*conv)(dcz_tdev *d, const dcz_conv_geom *g, const float *w, const float *b, const float *x,
                       uint32_t batch, float *y);
    dcz_status (*conv_dx)(dcz_tdev *d, const dcz_conv_geom *g, const float *w, const float *dy, uint32_t batch,
                          float *dx);
    dcz_status (*conv_dw)(dcz_tdev *d, const dcz_conv_geom *g, const float *x, const float *dy, uint32_t batch,
                          float *gw);
    /* a max (arg: the argmax of each output, dcz_tk_maxpool_arg) or
     * average pool (count_include_pad) of x (batch, in_c, in_h, in_w), and
     * its input's gradient (dcz_tk_maxpool_grad, dcz_tk_avgpool_grad) */
    dcz_status (*pool)(dcz_tdev *d, const dcz_conv_geom *g, int avg, int count_include_pad, const float *x,
                       uint32_t batch, int32_t *arg, float *y);
    dcz_status (*pool_grad)(dcz_tdev *d, const dcz_conv_geom *g, int avg, int count_include_pad, const float *dy,
                            const int32_t *arg, uint32_t batch, float *dx);
    /* the global mean of planes of plane (dcz_mean_one) and its gradient
     * (dcz_tk_gap_grad) */
    dcz_status (*gap)(dcz_tdev *d, const float *x, size_t planes, uint32_t plane, float *y);
    dcz_status (*gap_grad)(dcz_tdev *d, const float *dy, size_t planes, uint32_t plane, float *dx);
    /* batch norm in training over x (batch, C, hw): each channel's mean and
     * 1 / sqrt(var + eps) into mean, istd and the running statistics moved
     * by mom (dcz_tk_bn_stats, dcz_tk_bn_running), then y (dcz_tk_bn_out) */
    dcz_status (*bn)(dcz_tdev *d, const float *x, uint32_t batch, uint32_t C, uint32_t hw, float eps, float mom,
                     const float *gamma, const float *beta, float *mean, float *istd, float *run_mean,
                     float *run_var, float *y);
    /* its gradients: gamma's and beta's (dcz_tk_bn_param_grads, the sums
     * kept in sums (2 C doubles)), then dx (dcz_tk_bn_dx; NULL: none) */
    dcz_status (*bn_grad)(dcz_tdev *d, const float *x, const float *dy, uint32_t batch, uint32_t C, uint32_t hw,
                          const float *gamma, const float *mean, const float *istd, double *sums, float *ggamma,
                          float *gbeta, float *dx);
    /* batch norm in inference over x (batch, C, hw), by the running
     * statistics (a teacher's pass): y = dcz_tk_bn_infer */
    dcz_status (*bn_infer)(dcz_tdev *d, const float *x, uint32_t batch, uint32_t C, uint32_t hw, float eps,
                           const float *gamma, const float *beta, const float *run_mean, const float *run_var,
                           float *y);
    /* MUL of x (batch, C, plane) by f (batch, C): y = dcz_tk_mul; its
     * gradients dx (dcz_tk_mul of dy) and df (dcz_tk_mul_factor_grad),
     * either NULL when not needed */
    dcz_status (*mul)(dcz_tdev *d, const float *x, const float *f, uint32_t batch, uint32_t C, uint32_t plane,
                      float *y);
    dcz_status (*mul_grad)(dcz_tdev *d, const float *x, const float *f, const float *dy, uint32_t batch,
                           uint32_t C, uint32_t plane, float *dx, float *df);
    /* input k (batch, width) of a CONCAT into its place in y (batch, out)
     * at offset at (dcz_tk_concat_index), and its gradient from dy */
    dcz_status (*concat_put)(dcz_tdev *d, const float *x, uint32_t batch, uint32_t width, uint32_t out, uint32_t at,
                             float *y);
    dcz_status (*concat_grad)(dcz_tdev *d, const float *dy, uint32_t batch, uint32_t width, uint32_t out,
                              uint32_t at, float *dx);
    /* a CHANNEL_SHUFFLE or SLICE of x (dcz_gk_gather_from) and its
     * gradient (dcz_tk_gather_grad; from: (in_c) the inverse map) */
    dcz_status (*gather)(dcz_tdev *d, const dcz_conv_geom *g, uint32_t start, uint32_t groups, const float *x,
                         uint32_t batch, float *y);
    dcz_status (*gather_grad)(dcz_tdev *d, const dcz_conv_geom *g, const int32_t *from, const float *dy,
                              uint32_t batch, float *dx);
    /* page-locked host memory for the batches (the host device: malloc),
     * zeroed, and its release */
    dcz_status (*host_alloc)(dcz_tdev *d, size_t bytes, void **out);
    void (*host_free)(dcz_tdev *d, void *p);
    /* The batches' copies, on a stream of their own beside the steps':
     * stage copies host memory of slot (0 or 1) to the slot's device
     * memory, once the steps enqueued before the slot's last stage_release
     * are done with it; stage_done makes the steps enqueued after it wait
     * for the slot's copies; stage_release marks the steps enqueued so far
     * as the last that read the slot's device memory; stage_wait returns
     * once the slot's last copies are done, so that its host memory may be
     * written again. The host device copies at once. */
    dcz_status (*stage)(dcz_tdev *d, int slot, void *d_dst, const void *src, size_t bytes);
    dcz_status (*stage_done)(dcz_tdev *d, int slot);
    dcz_status (*stage_release)(dcz_tdev *d, int slot);
    dcz_status (*stage_wait)(dcz_tdev *d, int slot);
    void (*close)(dcz_tdev *d);
} dcz_tdev_ops;

struct dcz_tdev {
    const dcz_tdev_ops *ops;
    void *ctx;            /* the implementation's */
    char err[256];        /* why the last call failed */
};

/* The host device (always built). */
dcz_status dcz_tdev_open_host(dcz_tdev **out);
/* The CUDA device on GPU `index` modulo the GPUs there are (one rank per
 * GPU: its rank on the node): DCZ_ERR_DEVICE with the reason in err when
 * there is none or the build has no CUDA backend. */
dcz_status dcz_tdev_open_cuda(int index, dcz_tdev **out, char *err, size_t errlen);
/* Closes d (NULL-safe): frees what it holds. */
void dcz_tdev_close(dcz_tdev *d);

#endif /* DCZ_TRAIN_TDEV_H */
