/* tdev_cuda.cu: the CUDA device of the trainer's device path (tdev.h):
 * memory from cudaMalloc, copies on one stream, products by cuBLAS (fp32,
 * TF32 off: the CPU's arithmetic), and each launch a grid-stride kernel
 * around its body from tkern.h or the runtime's gpu_kern.h, one output a
 * thread, so no two threads write one value and a pass gives the same bits
 * every run. Kernels are launched as the runtime's (dcz_gpu_launch, each
 * waiting for the one before it).
 *
 * The bodies are checked on the host by tests/unit/test_train_emu.c and
 * the path by tests/unit/test_train_dev.c on the host device; the GPU
 * tests run this file where a GPU is.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/cuda/tkern.h"

extern "C" {
#include "train/tdev.h"
}

typedef struct cuda_ctx {
    cudaStream_t stream;
    cudaStream_t copies;  /* the batches' copies (stage) */
    cudaEvent_t staged[2];   /* each slot's last copies */
    cudaEvent_t released[2]; /* the end of the last step that read each slot */
    cublasHandle_t blas;
    double *parts;        /* the parts of the sums over a batch's planes (tkern.h) */
    size_t parts_bytes;
} cuda_ctx;

static cuda_ctx *ctx_of(dcz_tdev *d) { return (cuda_ctx *)d->ctx; }

/* Room for n parts (doubles), grown as needed: the stream is drained
 * first, since kernels before may still read the old buffer. */
static dcz_status parts_for(dcz_tdev *d, uint64_t n, double **out)
{
    cuda_ctx *c = ctx_of(d);
    const size_t bytes = (size_t)n * sizeof(double);
    if (bytes > c->parts_bytes) {
        if (cudaStreamSynchronize(c->stream) != cudaSuccess) {
            snprintf(d->err, sizeof d->err, "running the step: %s", cudaGetErrorString(cudaGetLastError()));
            return DCZ_ERR_DEVICE;
        }
        cudaFree(c->parts);
        c->parts = NULL;
        c->parts_bytes = 0;
        if (cudaMalloc((void **)&c->parts, bytes) != cudaSuccess) {
            snprintf(d->err, sizeof d->err, "cannot allocate %zu bytes on the GPU", bytes);
            c->parts = NULL;
            return DCZ_ERR_NOMEM;
        }
        c->parts_bytes = bytes;
    }
    *out = c->parts;
    return DCZ_OK;
}

/* DCZ_OK, or DCZ_ERR_DEVICE with CUDA's reason for what failed. */
static dcz_status cuda_ok(dcz_tdev *d, cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return DCZ_OK;
    snprintf(d->err, sizeof d->err, "%s: %s", what, cudaGetErrorString(e));
    return DCZ_ERR_DEVICE;
}

static dcz_status launched(dcz_tdev *d, dcz_status s, const char *what)
{
    if (s != DCZ_OK) snprintf(d->err, sizeof d->err, "launching %s: %s", what, cudaGetErrorString(cudaGetLastError()));
    return s;
}

/* ---- kernels: one output a thread ------------------------------------------ */

__global__ void k_rows(const float *b, uint64_t n_all, uint32_t n, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n_all) y[t] = b[t % n];
}

__global__ void k_act(uint16_t op, float a, float c, const float *x, uint64_t n, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = dcz_gk_act(op, a, c, x[t]);
}

__global__ void k_act_grad(uint16_t op, float a, float c, const float *x, const float *y, const float *dy, uint64_t n,
                           float *dx)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) dx[t] = dcz_tk_act_grad(op, a, c, x ? x[t] : 0.0f, y[t], dy[t]);
}

__global__ void k_bias_grad(const float *dy, uint32_t batch, uint32_t rows, uint32_t plane, float *gb)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(o, rows) gb[o] = dcz_tk_bias_grad(dy, batch, rows, plane, (uint32_t)o);
}

/* thread t: part t % P of channel t / P (P = dcz_tk_parts(batch hw)), less
 * its shift (shift NULL: none), squared (sq) or not */
__global__ void k_chan_parts(const float *x, uint32_t batch, uint32_t C, uint32_t hw, uint32_t P, const float *shift,
                             int sq, double *parts)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, (uint64_t)C * P) {
        const uint32_t c = (uint32_t)(t / P);
        parts[t] = dcz_tk_chan_part(x, batch, C, hw, c, (uint32_t)(t % P), shift ? shift[c] : 0.0f, sq);
    }
}

/* y[i]: the sum of output i's P parts */
__global__ void k_parts_to_float(const double *parts, uint64_t n, uint32_t P, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(i, n) y[i] = (float)dcz_tk_parts_sum(parts + i * P, P);
}

__global__ void k_xent(const float *z, const uint8_t *labels, const float *t, float a, float T, uint32_t batch,
                       uint32_t n, float *dz, double *loss)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(r, batch) {
        loss[r] = dcz_tk_xent_row(z + r * n, n, labels[r], batch, t ? t + r * n : NULL, a, T, dz + r * n);
    }
}

__global__ void k_sgd(float *w, float *v, const float *g, const uint8_t *mask, uint64_t n, float lr, float mom,
                      float wd)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) dcz_tk_sgd(&w[t], &v[t], g[t], lr, mom, wd, !mask || mask[t]);
}

__global__ void k_centroid_grads(const float *gw, const uint32_t *members, const uint32_t *start, uint32_t k,
                                 float *gcb)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(c, k) gcb[c] = dcz_tk_centroid_grad(gw, members, start[c], start[c + 1]);
}

__global__ void k_shared(const float *codebook, uint32_t k, const uint8_t *assign, const uint8_t *mask, uint64_t n,
                         float *w)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) w[t] = dcz_tk_shared_weight(codebook, k, assign[t], !mask || mask[t]);
}

__global__ void k_dropout(const float *x, uint64_t n, uint64_t key, float rate, uint8_t *keep, float *y)
{
    dcz_gpu_begin();
    const float scale = 1.0f / (1.0f - rate);
    DCZ_GPU_FOR_EACH(t, n) {
        keep[t] = (uint8_t)dcz_tk_dropout_keep(key, t, rate);
        y[t] = keep[t] ? x[t] * scale : 0.0f;
    }
}

__global__ void k_dropout_grad(const float *dy, const uint8_t *keep, uint64_t n, float rate, float *dx)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) dx[t] = dcz_tk_dropout_grad(dy[t], keep[t], rate);
}

__global__ void k_add(const float *a, const float *b, uint64_t n, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = a[t] + b[t];
}

/* thread t: input channel t / P, patch column t % P, its kh kw taps */
__global__ void k_im2col(const dcz_conv_geom g, const float *x, uint32_t batch, float *colt)
{
    dcz_gpu_begin();
    const uint64_t ohw = (uint64_t)g.out_h * g.out_w, P = batch * ohw, in1 = (uint64_t)g.in_c * g.in_h * g.in_w;
    DCZ_GPU_FOR_EACH(t, g.in_c * P) {
        const uint32_t ic = (uint32_t)(t / P);
        const uint64_t q = t % P;
        dcz_gk_patch_taps(&g, x + q / ohw * in1, ic, (uint32_t)(q % ohw), colt + (uint64_t)ic * g.kh * g.kw * P + q, P);
    }
}

__global__ void k_col2im(const dcz_conv_geom g, const float *dcolt, uint32_t batch, float *dx)
{
    dcz_gpu_begin();
    const uint32_t in1 = g.in_c * g.in_h * g.in_w;
    DCZ_GPU_FOR_EACH(t, (uint64_t)batch * in1) dx[t] = dcz_tk_col2im(&g, dcolt, batch, (uint32_t)(t / in1), (uint32_t)(t % in1));
}

__global__ void k_bias_rows(const float *c, const float *bias, uint32_t batch, uint32_t rows, uint32_t plane, float *y)
{
    dcz_gpu_begin();
    const dcz_act none = { 0, 0.0f, 0.0f };
    DCZ_GPU_FOR_EACH(t, (uint64_t)batch * rows * plane) y[t] = dcz_gk_bias_act(c, bias, batch, rows, plane, 1, none, t);
}

__global__ void k_by_rows(const float *x, uint32_t batch, uint32_t rows, uint32_t plane, float *xr)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, (uint64_t)batch * rows * plane) xr[t] = dcz_tk_by_rows(x, batch, rows, plane, t);
}

__global__ void k_conv(const dcz_conv_geom g, const float *w, const float *b, const float *x, uint32_t batch, float *y)
{
    dcz_gpu_begin();
    const uint32_t in1 = g.in_c * g.in_h * g.in_w, out1 = g.out_c * g.out_h * g.out_w;
    DCZ_GPU_FOR_EACH(t, (uint64_t)batch * out1) y[t] = dcz_gk_conv_dense(&g, w, b, x + t / out1 * in1, (uint32_t)(t % out1));
}

__global__ void k_conv_dx(const dcz_conv_geom g, const float *w, const float *dy, uint32_t batch, float *dx)
{
    dcz_gpu_begin();
    const uint32_t in1 = g.in_c * g.in_h * g.in_w, out1 = g.out_c * g.out_h * g.out_w;
    DCZ_GPU_FOR_EACH(t, (uint64_t)batch * in1) dx[t] = dcz_tk_conv_dx(&g, w, dy + t / in1 * out1, (uint32_t)(t % in1));
}

__global__ void k_conv_dw_parts(const dcz_conv_geom g, const float *x, const float *dy, uint32_t batch, uint64_t n,
                                uint32_t P, double *parts)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n * P) parts[t] = dcz_tk_conv_dw_part(&g, x, dy, batch, t / P, (uint32_t)(t % P));
}

__global__ void k_pool(const dcz_conv_geom g, int avg, int cip, const float *x, uint32_t batch, int32_t *arg, float *y)
{
    dcz_gpu_begin();
    const uint32_t in1 = g.in_c * g.in_h * g.in_w, out1 = g.in_c * g.out_h * g.out_w;
    const uint32_t hw = g.in_h * g.in_w, ohw = g.out_h * g.out_w;
    DCZ_GPU_FOR_EACH(t, (uint64_t)batch * out1) {
        const float *xs = x + t / out1 * in1;
        const uint32_t i = (uint32_t)(t % out1);
        if (avg) {
            y[t] = dcz_gk_pool(&g, 1, cip, xs, i);
        } else {
            const uint32_t a = dcz_tk_maxpool_arg(&g, xs, i);
            arg[t] = (int32_t)a;
            y[t] = xs[(uint64_t)(i / ohw) * hw + a];
        }
    }
}

__global__ void k_pool_grad(const dcz_conv_geom g, int avg, int cip, const float *dy, const int32_t *arg, uint32_t batch,
                            float *dx)
{
    dcz_gpu_begin();
    const uint32_t in1 = g.in_c * g.in_h * g.in_w, out1 = g.in_c * g.out_h * g.out_w;
    DCZ_GPU_FOR_EACH(t, (uint64_t)batch * in1) {
        const uint64_t s = t / in1;
        const uint32_t i = (uint32_t)(t % in1);
        dx[t] = avg ? dcz_tk_avgpool_grad(&g, cip, dy + s * out1, i) : dcz_tk_maxpool_grad(&g, dy + s * out1, arg + s * out1, i);
    }
}

__global__ void k_gap(const float *x, uint64_t planes, uint32_t plane, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(p, planes) y[p] = dcz_mean_one(x + p * plane, plane);
}

__global__ void k_gap_grad(const float *dy, uint64_t n, uint32_t plane, float *dx)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) dx[t] = dcz_tk_gap_grad(dy, plane, t);
}

__global__ void k_bn_mean(const double *parts, uint32_t C, uint64_t M, uint32_t P, float *mean)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(c, C) mean[c] = dcz_tk_bn_mean(dcz_tk_parts_sum(parts + c * P, P), M);
}

__global__ void k_bn_var(const double *parts, uint32_t C, uint64_t M, uint32_t P, float eps, float mom,
                         const float *mean, float *istd, float *run_mean, float *run_var)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(c, C) {
        float unbiased;
        dcz_tk_bn_var(dcz_tk_parts_sum(parts + c * P, P), M, eps, &istd[c], &unbiased);
        run_mean[c] = dcz_tk_bn_running(run_mean[c], mean[c], mom);
        run_var[c] = dcz_tk_bn_running(run_var[c], unbiased, mom);
    }
}

__global__ void k_bn_out(const float *x, uint64_t n, uint32_t C, uint32_t hw, const float *gamma, const float *beta,
                         const float *mean, const float *istd, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) {
        const uint32_t c = (uint32_t)(t / hw % C);
        y[t] = dcz_tk_bn_out(x[t], gamma[c], beta[c], mean[c], istd[c], 0);
    }
}

__global__ void k_bn_infer(const float *x, uint64_t n, uint32_t C, uint32_t hw, float eps, const float *gamma,
                           const float *beta, const float *run_mean, const float *run_var, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) {
        const uint32_t c = (uint32_t)(t / hw % C);
        y[t] = dcz_tk_bn_infer(x[t], gamma[c], beta[c], run_mean[c], run_var[c], eps);
    }
}

/* parts: (C, P) of dy's sums, then as many of dy (x - mean)'s */
__global__ void k_bn_grad_parts(const float *x, const float *dy, uint32_t batch, uint32_t C, uint32_t hw, uint32_t P,
                                const float *mean, double *parts)
{
    dcz_gpu_begin();
    const uint64_t n = (uint64_t)C * P;
    DCZ_GPU_FOR_EACH(t, n) {
        const uint32_t c = (uint32_t)(t / P);
        dcz_tk_bn_grad_part(x, dy, batch, C, hw, c, (uint32_t)(t % P), mean[c], &parts[t], &parts[n + t]);
    }
}

__global__ void k_bn_sums(const double *parts, uint32_t C, uint32_t P, const float *istd, double *sums, float *ggamma,
                          float *gbeta)
{
    dcz_gpu_begin();
    const uint64_t n = (uint64_t)C * P;
    DCZ_GPU_FOR_EACH(c, C) {
        sums[c] = dcz_tk_parts_sum(parts + c * P, P);
        sums[C + c] = dcz_tk_parts_sum(parts + n + c * P, P) * istd[c];
        gbeta[c] = (float)sums[c];
        ggamma[c] = (float)sums[C + c];
    }
}

__global__ void k_bn_dx(const float *x, const float *dy, uint32_t batch, uint32_t C, uint32_t hw, const float *gamma,
                        const float *mean, const float *istd, const double *sums, float *dx)
{
    dcz_gpu_begin();
    const uint64_t M = (uint64_t)batch * hw;
    DCZ_GPU_FOR_EACH(t, M * C) {
        const uint32_t c = (uint32_t)(t / hw % C);
        dx[t] = dcz_tk_bn_dx(dy[t], x[t], gamma[c], mean[c], istd[c], sums[c], sums[C + c], M);
    }
}

__global__ void k_mul(const float *x, const float *f, uint64_t n, uint32_t plane, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = dcz_tk_mul(x, f, plane, t);
}

__global__ void k_mul_factor_grad(const float *dy, const float *x, uint64_t n, uint32_t plane, float *df)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) df[t] = dcz_tk_mul_factor_grad(dy, x, plane, t);
}

__global__ void k_concat_put(const float *x, uint64_t n, uint32_t width, uint32_t out, uint32_t at, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[dcz_tk_concat_index(out, at, width, t)] = x[t];
}

__global__ void k_concat_grad(const float *dy, uint64_t n, uint32_t width, uint32_t out, uint32_t at, float *dx)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) dx[t] = dcz_tk_concat_grad(dy, out, at, width, t);
}

__global__ void k_gather(const dcz_conv_geom g, uint32_t start, uint32_t groups, const float *x, uint64_t n, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = x[dcz_gk_gather_from(&g, start, groups, t)];
}

__global__ void k_gather_grad(const dcz_conv_geom g, const int32_t *from, const float *dy, uint64_t n, float *dx)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) dx[t] = dcz_tk_gather_grad(&g, from, dy, t);
}

/* ---- the device's table ---------------------------------------------------------- */

#define LAUNCH(d, what, kernel, n, ...) \
    launched((d), dcz_gpu_launch(kernel, dim3(dcz_gpu_blocks(n)), dim3(DCZ_GPU_BLOCK), 0, ctx_of(d)->stream, \
                                 __VA_ARGS__), what)

static dcz_status c_alloc(dcz_tdev *d, size_t bytes, void **out)
{
    *out = NULL;
    if (cudaMalloc(out, bytes ? bytes : 1) != cudaSuccess) {
        snprintf(d->err, sizeof d->err, "cannot allocate %zu bytes on the GPU", bytes);
        *out = NULL;
        return DCZ_ERR_NOMEM;
    }
    /* zeroed before it returns: the batches' copies, on a stream of their
     * own, may write it next, and would otherwise race the zeroing */
    dcz_status s = cuda_ok(d, cudaMemsetAsync(*out, 0, bytes ? bytes : 1, ctx_of(d)->stream), "zeroing a buffer");
    return s == DCZ_OK ? cuda_ok(d, cudaStreamSynchronize(ctx_of(d)->stream), "zeroing a buffer") : s;
}

static void c_free(dcz_tdev *d, void *p)
{
    (void)d;
    if (p) cudaFree(p);
}

static dcz_status c_put(dcz_tdev *d, void *dst, const void *src, size_t bytes)
{
    return cuda_ok(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx_of(d)->stream), "copying to the GPU");
}

static dcz_status c_get(dcz_tdev *d, void *dst, const void *src, size_t bytes)
{
    dcz_status s = cuda_ok(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx_of(d)->stream),
                           "copying from the GPU");
    return s == DCZ_OK ? cuda_ok(d, cudaStreamSynchronize(ctx_of(d)->stream), "running the step") : s;
}

static dcz_status c_copy(dcz_tdev *d, void *dst, const void *src, size_t bytes)
{
    return cuda_ok(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx_of(d)->stream),
                   "copying on the GPU");
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
 * operands swap. */
static dcz_status c_sgemm(dcz_tdev *d, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc)
{
    const cublasStatus_t e = cublasSgemm(ctx_of(d)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc);
    if (e == CUBLAS_STATUS_SUCCESS) return DCZ_OK;
    snprintf(d->err, sizeof d->err, "cuBLAS sgemm (%d x %d x %d): status %d", M, N, K, (int)e);
    return DCZ_ERR_DEVICE;
}

static dcz_status c_rows(dcz_tdev *d, const float *b, size_t batch, uint32_t n, float *y)
{
    const uint64_t all = (uint64_t)batch * n;
    return LAUNCH(d, "bias rows", k_rows, all, b, all, n, y);
}

static dcz_status c_act(dcz_tdev *d, uint16_t op, float a, float c, const float *x, size_t n, float *y)
{
    return LAUNCH(d, "an activation", k_act, n, op, a, c, x, (uint64_t)n, y);
}

static dcz_status c_act_grad(dcz_tdev *d, uint16_t op, float a, float c, const float *x, const float *y,
                             const float *dy, size_t n, float *dx)
{
    return LAUNCH(d, "an activation's gradient", k_act_grad, n, op, a, c, x, y, dy, (uint64_t)n, dx);
}

static dcz_status c_bias_grad(dcz_tdev *d, const float *dy, uint32_t batch, uint32_t rows, uint32_t plane, float *gb)
{
    if (plane == 1) return LAUNCH(d, "bias gradients", k_bias_grad, rows, dy, batch, rows, plane, gb);
    const uint32_t P = dcz_tk_parts((uint64_t)batch * plane);
    double *parts;
    dcz_status s = parts_for(d, (uint64_t)rows * P, &parts);
    if (s == DCZ_OK)
        s = LAUNCH(d, "bias gradients' parts", k_chan_parts, (uint64_t)rows * P, dy, batch, rows, plane, P,
                   (const float *)NULL, 0, parts);
    return s == DCZ_OK ? LAUNCH(d, "bias gradients", k_parts_to_float, rows, (const double *)parts, (uint64_t)rows, P, gb)
                       : s;
}

static dcz_status c_xent(dcz_tdev *d, const float *z, const uint8_t *labels, const float *t, float a, float T,
                         uint32_t batch, uint32_t n, float *dz, double *loss)
{
    return LAUNCH(d, "the loss", k_xent, batch, z, labels, t, a, T, batch, n, dz, loss);
}

static dcz_status c_sgd(dcz_tdev *d, float *w, float *v, const float *g, const uint8_t *mask, size_t n, float lr,
                        float mom, float wd)
{
    return LAUNCH(d, "the SGD step", k_sgd, n, w, v, g, mask, (uint64_t)n, lr, mom, wd);
}

static dcz_status c_centroid_grads(dcz_tdev *d, const float *gw, const uint32_t *members, const uint32_t *start,
                                   uint32_t k, float *gcb)
{
    return LAUNCH(d, "centroid gradients", k_centroid_grads, k, gw, members, start, k, gcb);
}

static dcz_status c_shared(dcz_tdev *d, const float *codebook, uint32_t k, const uint8_t *assign,
                           const uint8_t *mask, size_t n, float *w)
{
    return LAUNCH(d, "shared weights", k_shared, n, codebook, k, assign, mask, (uint64_t)n, w);
}

static dcz_status c_dropout(dcz_tdev *d, const float *x, size_t n, uint64_t key, float rate, uint8_t *keep, float *y)
{
    return LAUNCH(d, "dropout", k_dropout, n, x, (uint64_t)n, key, rate, keep, y);
}

static dcz_status c_dropout_grad(dcz_tdev *d, const float *dy, const uint8_t *keep, size_t n, float rate, float *dx)
{
    return LAUNCH(d, "dropout's gradient", k_dropout_grad, n, dy, keep, (uint64_t)n, rate, dx);
}

static dcz_status c_add(dcz_tdev *d, const float *a, const float *b, size_t n, float *y)
{
    return LAUNCH(d, "a sum", k_add, n, a, b, (uint64_t)n, y);
}

static dcz_status c_im2col(dcz_tdev *d, const dcz_conv_geom *g, const float *x, uint32_t batch, float *colt)
{
    const uint64_t n = (uint64_t)g->in_c * batch * g->out_h * g->out_w;
    return LAUNCH(d, "im2col", k_im2col, n, *g, x, batch, colt);
}

static dcz_status c_col2im(dcz_tdev *d, const dcz_conv_geom *g, const float *dcolt, uint32_t batch, float *dx)
{
    const uint64_t n = (uint64_t)batch * g->in_c * g->in_h * g->in_w;
    return LAUNCH(d, "col2im", k_col2im, n, *g, dcolt, batch, dx);
}

static dcz_status c_bias_rows(dcz_tdev *d, const float *c, const float *bias, uint32_t batch, uint32_t rows,
                              uint32_t plane, float *y)
{
    return LAUNCH(d, "bias rows", k_bias_rows, (uint64_t)batch * rows * plane, c, bias, batch, rows, plane, y);
}

static dcz_status c_by_rows(dcz_tdev *d, const float *x, uint32_t batch, uint32_t rows, uint32_t plane, float *xr)
{
    return LAUNCH(d, "a transpose", k_by_rows, (uint64_t)batch * rows * plane, x, batch, rows, plane, xr);
}

static dcz_status c_conv(dcz_tdev *d, const dcz_conv_geom *g, const float *w, const float *b, const float *x,
                         uint32_t batch, float *y)
{
    return LAUNCH(d, "a convolution", k_conv, (uint64_t)batch * g->out_c * g->out_h * g->out_w, *g, w, b, x, batch, y);
}

static dcz_status c_conv_dx(dcz_tdev *d, const dcz_conv_geom *g, const float *w, const float *dy, uint32_t batch,
                            float *dx)
{
    return LAUNCH(d, "a convolution's input gradient", k_conv_dx, (uint64_t)batch * g->in_c * g->in_h * g->in_w, *g, w,
                  dy, batch, dx);
}

static dcz_status c_conv_dw(dcz_tdev *d, const dcz_conv_geom *g, const float *x, const float *dy, uint32_t batch,
                            float *gw)
{
    const uint64_t n = (uint64_t)g->out_c * (g->in_c / (g->group ? g->group : 1)) * g->kh * g->kw;
    const uint32_t P = dcz_tk_parts((uint64_t)batch * g->out_h);
    double *parts;
    dcz_status s = parts_for(d, n * P, &parts);
    if (s == DCZ_OK)
        s = LAUNCH(d, "a convolution's weight gradient's parts", k_conv_dw_parts, n * P, *g, x, dy, batch, n, P, parts);
    return s == DCZ_OK ? LAUNCH(d, "a convolution's weight gradient", k_parts_to_float, n, (const double *)parts, n, P, gw)
                       : s;
}

static dcz_status c_pool(dcz_tdev *d, const dcz_conv_geom *g, int avg, int cip, const float *x, uint32_t batch,
                         int32_t *arg, float *y)
{
    return LAUNCH(d, "a pool", k_pool, (uint64_t)batch * g->in_c * g->out_h * g->out_w, *g, avg, cip, x, batch, arg, y);
}

static dcz_status c_pool_grad(dcz_tdev *d, const dcz_conv_geom *g, int avg, int cip, const float *dy,
                              const int32_t *arg, uint32_t batch, float *dx)
{
    return LAUNCH(d, "a pool's gradient", k_pool_grad, (uint64_t)batch * g->in_c * g->in_h * g->in_w, *g, avg, cip, dy,
                  arg, batch, dx);
}

static dcz_status c_gap(dcz_tdev *d, const float *x, size_t planes, uint32_t plane, float *y)
{
    return LAUNCH(d, "a global mean", k_gap, planes, x, (uint64_t)planes, plane, y);
}

static dcz_status c_gap_grad(dcz_tdev *d, const float *dy, size_t planes, uint32_t plane, float *dx)
{
    const uint64_t n = (uint64_t)planes * plane;
    return LAUNCH(d, "a global mean's gradient", k_gap_grad, n, dy, n, plane, dx);
}

static dcz_status c_bn(dcz_tdev *d, const float *x, uint32_t batch, uint32_t C, uint32_t hw, float eps, float mom,
                       const float *gamma, const float *beta, float *mean, float *istd, float *run_mean,
                       float *run_var, float *y)
{
    const uint64_t n = (uint64_t)batch * C * hw, M = (uint64_t)batch * hw;
    const uint32_t P = dcz_tk_parts(M);
    const uint64_t np = (uint64_t)C * P;
    double *parts;
    dcz_status s = parts_for(d, np, &parts);
    if (s == DCZ_OK) s = LAUNCH(d, "batch sums", k_chan_parts, np, x, batch, C, hw, P, (const float *)NULL, 0, parts);
    if (s == DCZ_OK) s = LAUNCH(d, "batch means", k_bn_mean, C, (const double *)parts, C, M, P, mean);
    if (s == DCZ_OK)
        s = LAUNCH(d, "batch deviations", k_chan_parts, np, x, batch, C, hw, P, (const float *)mean, 1, parts);
    if (s == DCZ_OK)
        s = LAUNCH(d, "batch variances", k_bn_var, C, (const double *)parts, C, M, P, eps, mom, (const float *)mean,
                   istd, run_mean, run_var);
    return s == DCZ_OK ? LAUNCH(d, "batch norm", k_bn_out, n, x, n, C, hw, gamma, beta, mean, istd, y) : s;
}

static dcz_status c_bn_grad(dcz_tdev *d, const float *x, const float *dy, uint32_t batch, uint32_t C, uint32_t hw,
                            const float *gamma, const float *mean, const float *istd, double *sums, float *ggamma,
                            float *gbeta, float *dx)
{
    const uint32_t P = dcz_tk_parts((uint64_t)batch * hw);
    const uint64_t np = (uint64_t)C * P;
    double *parts;
    dcz_status s = parts_for(d, 2 * np, &parts);
    if (s == DCZ_OK) s = LAUNCH(d, "batch norm's sums' parts", k_bn_grad_parts, np, x, dy, batch, C, hw, P, mean, parts);
    if (s == DCZ_OK)
        s = LAUNCH(d, "batch norm's sums", k_bn_sums, C, (const double *)parts, C, P, istd, sums, ggamma, gbeta);
    if (s != DCZ_OK || !dx) return s;
    return LAUNCH(d, "batch norm's input gradient", k_bn_dx, (uint64_t)batch * C * hw, x, dy, batch, C, hw, gamma, mean,
                  istd, (const double *)sums, dx);
}

static dcz_status c_bn_infer(dcz_tdev *d, const float *x, uint32_t batch, uint32_t C, uint32_t hw, float eps,
                             const float *gamma, const float *beta, const float *run_mean, const float *run_var,
                             float *y)
{
    const uint64_t n = (uint64_t)batch * C * hw;
    return LAUNCH(d, "batch norm in inference", k_bn_infer, n, x, n, C, hw, eps, gamma, beta, run_mean, run_var, y);
}

static dcz_status c_mul(dcz_tdev *d, const float *x, const float *f, uint32_t batch, uint32_t C, uint32_t plane, float *y)
{
    const uint64_t n = (uint64_t)batch * C * plane;
    return LAUNCH(d, "a product by channel", k_mul, n, x, f, n, plane, y);
}

static dcz_status c_mul_grad(dcz_tdev *d, const float *x, const float *f, const float *dy, uint32_t batch, uint32_t C,
                             uint32_t plane, float *dx, float *df)
{
    const uint64_t n = (uint64_t)batch * C * plane, nf = (uint64_t)batch * C;
    dcz_status s = dx ? LAUNCH(d, "a product's gradient", k_mul, n, dy, f, n, plane, dx) : DCZ_OK;
    if (s == DCZ_OK && df) s = LAUNCH(d, "a factor's gradient", k_mul_factor_grad, nf, dy, x, nf, plane, df);
    return s;
}

static dcz_status c_concat_put(dcz_tdev *d, const float *x, uint32_t batch, uint32_t width, uint32_t out, uint32_t at,
                               float *y)
{
    const uint64_t n = (uint64_t)batch * width;
    return LAUNCH(d, "a concatenation", k_concat_put, n, x, n, width, out, at, y);
}

static dcz_status c_concat_grad(dcz_tdev *d, const float *dy, uint32_t batch, uint32_t width, uint32_t out,
                                uint32_t at, float *dx)
{
    const uint64_t n = (uint64_t)batch * width;
    return LAUNCH(d, "a concatenation's gradient", k_concat_grad, n, dy, n, width, out, at, dx);
}

static dcz_status c_gather(dcz_tdev *d, const dcz_conv_geom *g, uint32_t start, uint32_t groups, const float *x,
                           uint32_t batch, float *y)
{
    const uint64_t n = (uint64_t)batch * g->out_c * g->in_h * g->in_w;
    return LAUNCH(d, "a channel gather", k_gather, n, *g, start, groups, x, n, y);
}

static dcz_status c_gather_grad(dcz_tdev *d, const dcz_conv_geom *g, const int32_t *from, const float *dy,
                                uint32_t batch, float *dx)
{
    const uint64_t n = (uint64_t)batch * g->in_c * g->in_h * g->in_w;
    return LAUNCH(d, "a channel gather's gradient", k_gather_grad, n, *g, from, dy, n, dx);
}

static dcz_status c_host_alloc(dcz_tdev *d, size_t bytes, void **out)
{
    *out = NULL;
    if (cudaHostAlloc(out, bytes ? bytes : 1, cudaHostAllocDefault) != cudaSuccess) {
        snprintf(d->err, sizeof d->err, "cannot allocate %zu bytes of page-locked host memory", bytes);
        *out = NULL;
        return DCZ_ERR_NOMEM;
    }
    memset(*out, 0, bytes);
    return DCZ_OK;
}

static void c_host_free(dcz_tdev *d, void *p)
{
    (void)d;
    if (p) cudaFreeHost(p);
}

static dcz_status c_stage(dcz_tdev *d, int slot, void *dst, const void *src, size_t bytes)
{
    cuda_ctx *c = ctx_of(d);
    dcz_status s = cuda_ok(d, cudaStreamWaitEvent(c->copies, c->released[slot & 1], 0), "waiting for a step");
    return s == DCZ_OK ? cuda_ok(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->copies), "copying a batch")
                       : s;
}

static dcz_status c_stage_release(dcz_tdev *d, int slot)
{
    cuda_ctx *c = ctx_of(d);
    return cuda_ok(d, cudaEventRecord(c->released[slot & 1], c->stream), "marking a step's end");
}

static dcz_status c_stage_done(dcz_tdev *d, int slot)
{
    cuda_ctx *c = ctx_of(d);
    dcz_status s = cuda_ok(d, cudaEventRecord(c->staged[slot & 1], c->copies), "marking a batch's copy");
    return s == DCZ_OK ? cuda_ok(d, cudaStreamWaitEvent(c->stream, c->staged[slot & 1], 0), "waiting for a batch") : s;
}

static dcz_status c_stage_wait(dcz_tdev *d, int slot)
{
    return cuda_ok(d, cudaEventSynchronize(ctx_of(d)->staged[slot & 1]), "waiting for a batch's copy");
}

static void c_close(dcz_tdev *d)
{
    cuda_ctx *c = ctx_of(d);
    if (c) {
        for (int k = 0; k < 2; k++) {
            if (c->staged[k]) cudaEventDestroy(c->staged[k]);
            if (c->released[k]) cudaEventDestroy(c->released[k]);
        }
        if (c->copies) cudaStreamDestroy(c->copies);
        if (c->parts) cudaFree(c->parts);
        if (c->blas) cublasDestroy(c->blas);
        if (c->stream) cudaStreamDestroy(c->stream);
        free(c);
    }
    free(d);
}

static const dcz_tdev_ops cuda_ops = {
    "cuda", c_alloc, c_free, c_put, c_get, c_copy, c_sgemm, c_rows, c_act, c_act_grad, c_bias_grad, c_xent,
    c_sgd, c_centroid_grads, c_shared, c_dropout, c_dropout_grad, c_add, c_im2col, c_col2im, c_bias_rows, c_by_rows,
    c_conv, c_conv_dx, c_conv_dw, c_pool, c_pool_grad, c_gap, c_gap_grad, c_bn, c_bn_grad, c_bn_infer, c_mul,
    c_mul_grad, c_concat_put, c_concat_grad, c_gather, c_gather_grad, c_host_alloc, c_host_free, c_stage, c_stage_done,
    c_stage_release, c_stage_wait, c_close,
};

extern "C" dcz_status dcz_tdev_open_cuda(int index, dcz_tdev **out, char *err, size_t errlen)
{
    *out = NULL;
    if (dcz_device_probe(DCZ_DEVICE_GPU, err, errlen) != DCZ_OK) return DCZ_ERR_DEVICE;   /* libdcz's reason */
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1 || cudaSetDevice(index < 0 ? 0 : index % gpus) != cudaSuccess) {
        snprintf(err, errlen, "cannot choose GPU %d of %d", index, gpus);
        return DCZ_ERR_DEVICE;
    }
    dcz_tdev *d = (dcz_tdev *)calloc(1, sizeof *d);
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    if (!d || !c) {
        free(d);
        free(c);
        return DCZ_ERR_NOMEM;
    }
    d->ops = &cuda_ops;
    d->ctx = c;
    if (cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&c->copies, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->staged[0], cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->staged[1], cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->released[0], cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->released[1], cudaEventDisableTiming) != cudaSuccess ||
        cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(c->blas, c->stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cannot set up a stream and cuBLAS on the GPU");
        c_close(d);
        return DCZ_ERR_DEVICE;
    }
    *out = d;
    return DCZ_OK;
}
