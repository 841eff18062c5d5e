/* tdev_host.c: the host device of the trainer's device path (tdev.h):
 * memory from malloc, copies by memcpy, products through the trainer's
 * OpenBLAS sgemm, and every launch a loop over its body from
 * train/cuda/tkern.h or runtime/cuda/gpu_kern.h, in the order of the
 * outputs. It runs the device path wherever the trainer runs, so
 * tests/unit/test_train_dev.c checks the path on machines without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/cuda/tkern.h"
#include "train/internal.h"
#include "train/tdev.h"

static dcz_status h_alloc(dcz_tdev *d, size_t bytes, void **out)
{
    (void)d;
    *out = calloc(bytes ? bytes : 1, 1);
    return *out ? DCZ_OK : DCZ_ERR_NOMEM;
}

static void h_free(dcz_tdev *d, void *p)
{
    (void)d;
    free(p);
}

static dcz_status h_put(dcz_tdev *d, void *dst, const void *src, size_t bytes)
{
    (void)d;
    if (bytes) memcpy(dst, src, bytes);
    return DCZ_OK;
}

static dcz_status h_sgemm(dcz_tdev *d, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc)
{
    (void)d;
    dcz_train_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return DCZ_OK;
}

static dcz_status h_rows(dcz_tdev *d, const float *b, size_t batch, uint32_t n, float *y)
{
    (void)d;
    for (size_t r = 0; r < batch; r++) memcpy(y + r * n, b, n * sizeof *y);
    return DCZ_OK;
}

static dcz_status h_act(dcz_tdev *d, uint16_t op, float a, float c, const float *x, size_t n, float *y)
{
    (void)d;
    for (size_t i = 0; i < n; i++) y[i] = dcz_gk_act(op, a, c, x[i]);
    return DCZ_OK;
}

static dcz_status h_act_grad(dcz_tdev *d, uint16_t op, float a, float c, const float *x, const float *y,
                             const float *dy, size_t n, float *dx)
{
    (void)d;
    for (size_t i = 0; i < n; i++) dx[i] = dcz_tk_act_grad(op, a, c, x ? x[i] : 0.0f, y[i], dy[i]);
    return DCZ_OK;
}

static dcz_status h_bias_grad(dcz_tdev *d, const float *dy, uint32_t batch, uint32_t rows, uint32_t plane, float *gb)
{
    (void)d;
    for (uint32_t o = 0; o < rows; o++) gb[o] = dcz_tk_bias_grad(dy, batch, rows, plane, o);
    return DCZ_OK;
}

static dcz_status h_xent(dcz_tdev *d, const float *z, const uint8_t *labels, const float *t, float a, float T,
                         uint32_t batch, uint32_t n, float *dz, double *loss)
{
    (void)d;
    for (uint32_t r = 0; r < batch; r++)
        loss[r] = dcz_tk_xent_row(z + (size_t)r * n, n, labels[r], batch, t ? t + (size_t)r * n : NULL, a, T,
                                  dz + (size_t)r * n);
    return DCZ_OK;
}

static dcz_status h_sgd(dcz_tdev *d, float *w, float *v, const float *g, const uint8_t *mask, size_t n, float lr,
                        float mom, float wd)
{
    (void)d;
    for (size_t i = 0; i < n; i++) dcz_tk_sgd(&w[i], &v[i], g[i], lr, mom, wd, !mask || mask[i]);
    return DCZ_OK;
}

static dcz_status h_centroid_grads(dcz_tdev *d, const float *gw, const uint32_t *members, const uint32_t *start,
                                   uint32_t k, float *gcb)
{
    (void)d;
    for (uint32_t c = 0; c < k; c++) gcb[c] = dcz_tk_centroid_grad(gw, members, start[c], start[c + 1]);
    return DCZ_OK;
}

static dcz_status h_shared(dcz_tdev *d, const float *codebook, uint32_t k, const uint8_t *assign,
                           const uint8_t *mask, size_t n, float *w)
{
    (void)d;
    for (size_t i = 0; i < n; i++) w[i] = dcz_tk_shared_weight(codebook, k, assign[i], !mask || mask[i]);
    return DCZ_OK;
}

static dcz_status h_dropout(dcz_tdev *d, const float *x, size_t n, uint64_t key, float rate, uint8_t *keep, float *y)
{
    (void)d;
    const float scale = 1.0f / (1.0f - rate);
    for (size_t i = 0; i < n; i++) {
        keep[i] = (uint8_t)dcz_tk_dropout_keep(key, i, rate);
        y[i] = keep[i] ? x[i] * scale : 0.0f;
    }
    return DCZ_OK;
}

static dcz_status h_dropout_grad(dcz_tdev *d, const float *dy, const uint8_t *keep, size_t n, float rate, float *dx)
{
    (void)d;
    for (size_t i = 0; i < n; i++) dx[i] = dcz_tk_dropout_grad(dy[i], keep[i], rate);
    return DCZ_OK;
}

static dcz_status h_add(dcz_tdev *d, const float *a, const float *b, size_t n, float *y)
{
    (void)d;
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
    return DCZ_OK;
}

static dcz_status h_im2col(dcz_tdev *d, const dcz_conv_geom *g, const float *x, uint32_t batch, float *colt)
{
    (void)d;
    const uint64_t ohw = (uint64_t)g->out_h * g->out_w, P = batch * ohw, in1 = (uint64_t)g->in_c * g->in_h * g->in_w;
    for (uint32_t ic = 0; ic < g->in_c; ic++)
        for (uint64_t q = 0; q < P; q++)
            dcz_gk_patch_taps(g, x + q / ohw * in1, ic, (uint32_t)(q % ohw), colt + (uint64_t)ic * g->kh * g->kw * P + q,
                              P);
    return DCZ_OK;
}

static dcz_status h_col2im(dcz_tdev *d, const dcz_conv_geom *g, const float *dcolt, uint32_t batch, float *dx)
{
    (void)d;
    const uint32_t in1 = g->in_c * g->in_h * g->in_w;
    for (uint32_t b = 0; b < batch; b++)
        for (uint32_t i = 0; i < in1; i++) dx[(uint64_t)b * in1 + i] = dcz_tk_col2im(g, dcolt, batch, b, i);
    return DCZ_OK;
}

static dcz_status h_bias_rows(dcz_tdev *d, const float *c, const float *bias, uint32_t batch, uint32_t rows,
                              uint32_t plane, float *y)
{
    (void)d;
    const dcz_act none = { 0, 0.0f, 0.0f };
    for (uint64_t t = 0; t < (uint64_t)batch * rows * plane; t++)
        y[t] = dcz_gk_bias_act(c, bias, batch, rows, plane, 1, none, t);
    return DCZ_OK;
}

static dcz_status h_by_rows(dcz_tdev *d, const float *x, uint32_t batch, uint32_t rows, uint32_t plane, float *xr)
{
    (void)d;
    for (uint64_t t = 0; t < (uint64_t)batch * rows * plane; t++) xr[t] = dcz_tk_by_rows(x, batch, rows, plane, t);
    return DCZ_OK;
}

static dcz_status h_conv(dcz_tdev *d, const dcz_conv_geom *g, const float *w, const float *b, const float *x,
                         uint32_t batch, float *y)
{
    (void)d;
    const uint32_t in1 = g->in_c * g->in_h * g->in_w, out1 = g->out_c * g->out_h * g->out_w;
    for (uint32_t s = 0; s < batch; s++)
        for (uint32_t i = 0; i < out1; i++)
            y[(uint64_t)s * out1 + i] = dcz_gk_conv_dense(g, w, b, x + (uint64_t)s * in1, i);
    return DCZ_OK;
}

static dcz_status h_conv_dx(dcz_tdev *d, const dcz_conv_geom *g, const float *w, const float *dy, uint32_t batch,
                            float *dx)
{
    (void)d;
    const uint32_t in1 = g->in_c * g->in_h * g->in_w, out1 = g->out_c * g->out_h * g->out_w;
    for (uint32_t s = 0; s < batch; s++)
        for (uint32_t i = 0; i < in1; i++) dx[(uint64_t)s * in1 + i] = dcz_tk_conv_dx(g, w, dy + (uint64_t)s * out1, i);
    return DCZ_OK;
}

static dcz_status h_conv_dw(dcz_tdev *d, const dcz_conv_geom *g, const float *x, const float *dy, uint32_t batch,
                            float *gw)
{
    (void)d;
    const uint64_t n = (uint64_t)g->out_c * (g->in_c / (g->group ? g->group : 1)) * g->kh * g->kw;
    for (uint64_t j = 0; j < n; j++) gw[j] = dcz_tk_conv_dw(g, x, dy, batch, j);
    return DCZ_OK;
}

static dcz_status h_pool(dcz_tdev *d, const dcz_conv_geom *g, int avg, int count_include_pad, const float *x,
                         uint32_t batch, int32_t *arg, float *y)
{
    (void)d;
    const uint32_t in1 = g->in_c * g->in_h * g->in_w, out1 = g->in_c * g->out_h * g->out_w;
    const uint32_t hw = g->in_h * g->in_w, ohw = g->out_h * g->out_w;
    for (uint32_t s = 0; s < batch; s++)
        for (uint32_t i = 0; i < out1; i++) {
            const float *xs = x + (uint64_t)s * in1;
            const uint64_t o = (uint64_t)s * out1 + i;
            if (avg) {
                y[o] = dcz_gk_pool(g, 1, count_include_pad, xs, i);
            } else {
                const uint32_t a = dcz_tk_maxpool_arg(g, xs, i);
                arg[o] = (int32_t)a;
                y[o] = xs[(uint64_t)(i / ohw) * hw + a];
            }
        }
    return DCZ_OK;
}

static dcz_status h_pool_grad(dcz_tdev *d, const dcz_conv_geom *g, int avg, int count_include_pad, const float *dy,
                              const int32_t *arg, uint32_t batch, float *dx)
{
    (void)d;
    const uint32_t in1 = g->in_c * g->in_h * g->in_w, out1 = g->in_c * g->out_h * g->out_w;
    for (uint32_t s = 0; s < batch; s++)
        for (uint32_t i = 0; i < in1; i++)
            dx[(uint64_t)s * in1 + i] = avg ? dcz_tk_avgpool_grad(g, count_include_pad, dy + (uint64_t)s * out1, i)
                                            : dcz_tk_maxpool_grad(g, dy + (uint64_t)s * out1, arg + (uint64_t)s * out1, i);
    return DCZ_OK;
}

static dcz_status h_gap(dcz_tdev *d, const float *x, size_t planes, uint32_t plane, float *y)
{
    (void)d;
    for (size_t p = 0; p < planes; p++) y[p] = dcz_mean_one(x + p * plane, plane);
    return DCZ_OK;
}

static dcz_status h_gap_grad(dcz_tdev *d, const float *dy, size_t planes, uint32_t plane, float *dx)
{
    (void)d;
    for (uint64_t i = 0; i < (uint64_t)planes * plane; i++) dx[i] = dcz_tk_gap_grad(dy, plane, i);
    return DCZ_OK;
}

static dcz_status h_bn(dcz_tdev *d, const float *x, uint32_t batch, uint32_t C, uint32_t hw, float eps, float mom,
                       const float *gamma, const float *beta, float *mean, float *istd, float *run_mean,
                       float *run_var, float *y)
{
    (void)d;
    for (uint32_t c = 0; c < C; c++) {
        float unbiased;
        dcz_tk_bn_stats(x, batch, C, hw, c, eps, &mean[c], &istd[c], &unbiased);
        run_mean[c] = dcz_tk_bn_running(run_mean[c], mean[c], mom);
        run_var[c] = dcz_tk_bn_running(run_var[c], unbiased, mom);
    }
    for (uint64_t t = 0; t < (uint64_t)batch * C * hw; t++) {
        const uint32_t c = (uint32_t)(t / hw % C);
        y[t] = dcz_tk_bn_out(x[t], gamma[c], beta[c], mean[c], istd[c], 0);
    }
    return DCZ_OK;
}

static dcz_status h_bn_infer(dcz_tdev *d, const float *x, uint32_t batch, uint32_t C, uint32_t hw, float eps,
                             const float *gamma, const float *beta, const float *run_mean, const float *run_var,
                             float *y)
{
    (void)d;
    for (uint64_t t = 0; t < (uint64_t)batch * C * hw; t++) {
        const uint32_t c = (uint32_t)(t / hw % C);
        y[t] = dcz_tk_bn_infer(x[t], gamma[c], beta[c], run_mean[c], run_var[c], eps);
    }
    return DCZ_OK;
}

static dcz_status h_bn_grad(dcz_tdev *d, const float *x, const float *dy, uint32_t batch, uint32_t C, uint32_t hw,
                            const float *gamma, const float *mean, const float *istd, double *sums, float *ggamma,
                            float *gbeta, float *dx)
{
    (void)d;
    for (uint32_t c = 0; c < C; c++) {
        dcz_tk_bn_param_grads(x, dy, batch, C, hw, c, mean[c], istd[c], &sums[c], &sums[C + c]);
        gbeta[c] = (float)sums[c];
        ggamma[c] = (float)sums[C + c];
    }
    const uint64_t M = (uint64_t)batch * hw;
    for (uint64_t t = 0; dx && t < M * C; t++) {
        const uint32_t c = (uint32_t)(t / hw % C);
        dx[t] = dcz_tk_bn_dx(dy[t], x[t], gamma[c], mean[c], istd[c], sums[c], sums[C + c], M);
    }
    return DCZ_OK;
}

static dcz_status h_mul(dcz_tdev *d, const float *x, const float *f, uint32_t batch, uint32_t C, uint32_t plane,
                        float *y)
{
    (void)d;
    for (uint64_t t = 0; t < (uint64_t)batch * C * plane; t++) y[t] = dcz_tk_mul(x, f, plane, t);
    return DCZ_OK;
}

static dcz_status h_mul_grad(dcz_tdev *d, const float *x, const float *f, const float *dy, uint32_t batch,
                             uint32_t C, uint32_t plane, float *dx, float *df)
{
    (void)d;
    for (uint64_t t = 0; dx && t < (uint64_t)batch * C * plane; t++) dx[t] = dcz_tk_mul(dy, f, plane, t);
    for (uint64_t t = 0; df && t < (uint64_t)batch * C; t++) df[t] = dcz_tk_mul_factor_grad(dy, x, plane, t);
    return DCZ_OK;
}

static dcz_status h_concat_put(dcz_tdev *d, const float *x, uint32_t batch, uint32_t width, uint32_t out, uint32_t at,
                               float *y)
{
    (void)d;
    for (uint64_t t = 0; t < (uint64_t)batch * width; t++) y[dcz_tk_concat_index(out, at, width, t)] = x[t];
    return DCZ_OK;
}

static dcz_status h_concat_grad(dcz_tdev *d, const float *dy, uint32_t batch, uint32_t width, uint32_t out,
                                uint32_t at, float *dx)
{
    (void)d;
    for (uint64_t t = 0; t < (uint64_t)batch * width; t++) dx[t] = dcz_tk_concat_grad(dy, out, at, width, t);
    return DCZ_OK;
}

static dcz_status h_gather(dcz_tdev *d, const dcz_conv_geom *g, uint32_t start, uint32_t groups, const float *x,
                           uint32_t batch, float *y)
{
    (void)d;
    for (uint64_t t = 0; t < (uint64_t)batch * g->out_c * g->in_h * g->in_w; t++)
        y[t] = x[dcz_gk_gather_from(g, start, groups, t)];
    return DCZ_OK;
}

static dcz_status h_gather_grad(dcz_tdev *d, const dcz_conv_geom *g, const int32_t *from, const float *dy,
                                uint32_t batch, float *dx)
{
    (void)d;
    for (uint64_t t = 0; t < (uint64_t)batch * g->in_c * g->in_h * g->in_w; t++) dx[t] = dcz_tk_gather_grad(g, from, dy, t);
    return DCZ_OK;
}

static dcz_status h_stage(dcz_tdev *d, int slot, void *dst, const void *src, size_t bytes)
{
    (void)slot;
    return h_put(d, dst, src, bytes);
}

static dcz_status h_slot(dcz_tdev *d, int slot)
{
    (void)d;
    (void)slot;
    return DCZ_OK;
}

static void h_close(dcz_tdev *d) { free(d); }

static const dcz_tdev_ops host_ops = {
    "host", h_alloc, h_free, h_put, h_put, h_put, h_sgemm, h_rows, h_act, h_act_grad, h_bias_grad, h_xent,
    h_sgd, h_centroid_grads, h_shared, h_dropout, h_dropout_grad, h_add, h_im2col, h_col2im, h_bias_rows, h_by_rows,
    h_conv, h_conv_dx, h_conv_dw, h_pool, h_pool_grad, h_gap, h_gap_grad, h_bn, h_bn_grad, h_bn_infer, h_mul,
    h_mul_grad, h_concat_put, h_concat_grad, h_gather, h_gather_grad, h_alloc, h_free, h_stage, h_slot, h_slot, h_slot,
    h_close,
};

dcz_status dcz_tdev_open_host(dcz_tdev **out)
{
    dcz_tdev *d = calloc(1, sizeof *d);
    if (!d) return DCZ_ERR_NOMEM;
    d->ops = &host_ops;
    *out = d;
    return DCZ_OK;
}

void dcz_tdev_close(dcz_tdev *d)
{
    if (d) d->ops->close(d);
}

#ifndef DCZ_CUDA
dcz_status dcz_tdev_open_cuda(int index, dcz_tdev **out, char *err, size_t errlen)
{
    (void)index;
    *out = NULL;
    snprintf(err, errlen, "this dcz was built without the CUDA backend (make CUDA=1 where nvcc is)");
    return DCZ_ERR_DEVICE;
}
#endif
