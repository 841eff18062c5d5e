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

#include "train/cuda/tkern.h"

extern "C" {
#include "train/tdev.h"
}

typedef struct cuda_ctx {
    cudaStream_t stream;
    cublasHandle_t blas;
} cuda_ctx;

static cuda_ctx *ctx_of(dcz_tdev *d) { return (cuda_ctx *)d->ctx; }

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

__global__ void k_xent(const float *z, const uint8_t *labels, uint32_t batch, uint32_t n, float *dz, double *loss)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(r, batch) loss[r] = dcz_tk_xent_row(z + r * n, n, labels[r], batch, dz + r * n);
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
    return cuda_ok(d, cudaMemsetAsync(*out, 0, bytes ? bytes : 1, ctx_of(d)->stream), "zeroing a buffer");
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
    return LAUNCH(d, "bias gradients", k_bias_grad, rows, dy, batch, rows, plane, gb);
}

static dcz_status c_xent(dcz_tdev *d, const float *z, const uint8_t *labels, uint32_t batch, uint32_t n, float *dz,
                         double *loss)
{
    return LAUNCH(d, "the loss", k_xent, batch, z, labels, batch, n, dz, loss);
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

static void c_close(dcz_tdev *d)
{
    cuda_ctx *c = ctx_of(d);
    if (c) {
        if (c->blas) cublasDestroy(c->blas);
        if (c->stream) cudaStreamDestroy(c->stream);
        free(c);
    }
    free(d);
}

static const dcz_tdev_ops cuda_ops = {
    "cuda", c_alloc, c_free, c_put, c_get, c_copy, c_sgemm, c_rows, c_act, c_act_grad, c_bias_grad, c_xent,
    c_sgd, c_centroid_grads, c_shared, c_dropout, c_dropout_grad, c_close,
};

extern "C" dcz_status dcz_tdev_open_cuda(dcz_tdev **out, char *err, size_t errlen)
{
    *out = NULL;
    if (dcz_device_probe(DCZ_DEVICE_GPU, err, errlen) != DCZ_OK) return DCZ_ERR_DEVICE;   /* libdcz's reason */
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
        cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(c->blas, c->stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cannot set up a stream and cuBLAS on the GPU");
        c_close(d);
        return DCZ_ERR_DEVICE;
    }
    *out = d;
    return DCZ_OK;
}
