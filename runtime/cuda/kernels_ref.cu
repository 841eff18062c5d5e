/* kernels_ref.cu: the element-wise kernels on CUDA, twins of kernels_ref.c
 * (gpu.h): activations, softmax, Add, Mul, Concat, and the bias and
 * activation that finish a cuBLAS product. The element bodies are
 * gpu_kern.h's, checked on the host by tests/unit/test_gpu_emu.c;
 * tests/unit/test_gpu.c checks the
 * launched kernels on a GPU (activations within a few ulps: the device's
 * expf and tanhf).
 */
#include "runtime/cuda/gpu.h"

static __global__ void act_kernel(uint16_t op, float p0, float p1, const float *x, uint64_t n, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = dcz_gk_act(op, p0, p1, x[t]);
}

/* One block per row: the maximum, the sum of the exponentials, then each
 * value divided by it. */
static __global__ void softmax_kernel(const float *x, uint32_t n, float *y)
{
    dcz_gpu_begin();
    __shared__ float red[DCZ_GPU_BLOCK];
    const float *xr = x + (size_t)blockIdx.x * n;
    float *yr = y + (size_t)blockIdx.x * n;
    float m = -INFINITY;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, xr[i]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (uint32_t o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + o]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float e = dcz_exp_neg(xr[i] - m);   /* the CPU's exponential (shapes.h) */
        yr[i] = e;
        sum += e;
    }
    red[threadIdx.x] = sum;
    __syncthreads();
    for (uint32_t o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
        __syncthreads();
    }
    sum = red[0];
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] /= sum;
}

static __global__ void add_kernel(const float *a, const float *b, uint64_t n, dcz_act act, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = dcz_gk_act(act.op, act.lo, act.hi, a[t] + b[t]);
}

static __global__ void mul_kernel(const float *x, const float *f, uint32_t plane, uint64_t n, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = x[t] * f[t / plane];
}

typedef struct concat_inputs {
    const float *x[DCZ_MAX_INPUTS];
    uint32_t width[DCZ_MAX_INPUTS];
} concat_inputs;

static __global__ void concat_kernel(concat_inputs in, uint32_t nin, uint32_t per, uint64_t n, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) {
        uint32_t at;
        const uint64_t b = t / per;
        const uint32_t k = dcz_gk_concat_from(in.width, nin, (uint32_t)(t % per), &at);
        y[t] = in.x[k][b * in.width[k] + at];
    }
}

template <typename T>
static __global__ void gather_kernel(dcz_conv_geom g, uint32_t start, uint32_t groups, const T *x, uint64_t n, T *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = x[dcz_gk_gather_from(&g, start, groups, t)];
}

static __global__ void bias_act_kernel(const float *c, const float *bias, uint64_t batch, uint32_t rows,
                                       uint32_t plane, int by_rows, dcz_act act, uint64_t n, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = dcz_gk_bias_act(c, bias, batch, rows, plane, by_rows, act, t);
}

extern "C" dcz_status dcz_activation__cuda(uint16_t op, const float *param, const float *x, size_t n, float *y,
                                           void *stream)
{
    if (n == 0) return DCZ_OK;
    return dcz_gpu_launch(act_kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, op, param[0], param[1], x, n, y);
}

extern "C" dcz_status dcz_softmax__cuda(const float *x, size_t batch, uint32_t n, float *y, void *stream)
{
    if (batch == 0 || n == 0) return DCZ_OK;
    if (batch > INT32_MAX) return DCZ_ERR_ARG;
    return dcz_gpu_launch(softmax_kernel, (unsigned)batch, DCZ_GPU_BLOCK, 0, stream, x, n, y);
}

extern "C" dcz_status dcz_add__cuda(const float *a, const float *b, size_t n, dcz_act act, float *y, void *stream)
{
    if (n == 0) return DCZ_OK;
    return dcz_gpu_launch(add_kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, a, b, n, act, y);
}

extern "C" dcz_status dcz_mul__cuda(const float *x, const float *f, size_t batch, uint32_t channels,
                                    uint32_t plane, float *y, void *stream)
{
    const uint64_t n = (uint64_t)batch * channels * plane;
    if (n == 0) return DCZ_OK;
    return dcz_gpu_launch(mul_kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, x, f, plane, n, y);
}

extern "C" dcz_status dcz_concat__cuda(const float *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                                       float *y, void *stream)
{
    if (nin == 0 || nin > DCZ_MAX_INPUTS) return DCZ_ERR_ARG;
    concat_inputs in;
    uint32_t per = 0;
    for (uint32_t k = 0; k < nin; k++) {
        in.x[k] = x[k];
        in.width[k] = width[k];
        per += width[k];
    }
    const uint64_t n = (uint64_t)batch * per;
    if (n == 0) return DCZ_OK;
    return dcz_gpu_launch(concat_kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, in, nin, per, n, y);
}

extern "C" dcz_status dcz_gather__cuda(const dcz_conv_geom *g, uint32_t start, uint32_t groups, const void *x,
                                       size_t elem, size_t batch, void *y, void *stream)
{
    const uint64_t n = (uint64_t)batch * g->out_c * g->in_h * g->in_w;
    if (n == 0) return DCZ_OK;
    if (elem == sizeof(float))
        return dcz_gpu_launch(gather_kernel<float>, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, *g, start, groups,
                              (const float *)x, n, (float *)y);
    if (elem == sizeof(int8_t))
        return dcz_gpu_launch(gather_kernel<int8_t>, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, *g, start, groups,
                              (const int8_t *)x, n, (int8_t *)y);
    return DCZ_ERR_ARG;
}

extern "C" dcz_status dcz_bias_act__cuda(const float *c, const float *bias, size_t batch, uint32_t rows,
                                         uint32_t plane, int by_rows, dcz_act act, float *y, void *stream)
{
    const uint64_t n = (uint64_t)batch * rows * plane;
    if (n == 0) return DCZ_OK;
    return dcz_gpu_launch(bias_act_kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, c, bias, batch, rows, plane,
                          by_rows, act, n, y);
}
