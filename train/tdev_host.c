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

static dcz_status h_xent(dcz_tdev *d, const float *z, const uint8_t *labels, uint32_t batch, uint32_t n, float *dz,
                         double *loss)
{
    (void)d;
    for (uint32_t r = 0; r < batch; r++)
        loss[r] = dcz_tk_xent_row(z + (size_t)r * n, n, labels[r], batch, dz + (size_t)r * n);
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

static void h_close(dcz_tdev *d) { free(d); }

static const dcz_tdev_ops host_ops = {
    "host", h_alloc, h_free, h_put, h_put, h_put, h_sgemm, h_rows, h_act, h_act_grad, h_bias_grad, h_xent,
    h_sgd, h_centroid_grads, h_shared, h_dropout, h_dropout_grad, h_close,
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
dcz_status dcz_tdev_open_cuda(dcz_tdev **out, char *err, size_t errlen)
{
    *out = NULL;
    snprintf(err, errlen, "this dcz was built without the CUDA backend (make CUDA=1 where nvcc is)");
    return DCZ_ERR_DEVICE;
}
#endif
