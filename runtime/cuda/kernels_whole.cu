/* kernels_whole.cu: a small model whole at batch 1 in one launch (gpu.h:
 * dcz_whole__cuda; gpu_kern.h: dcz_gwhole): a cooperative grid whose
 * blocks share each layer's outputs, a grid barrier between layers (a
 * block barrier where the grid is one block). Each layer's outputs are
 * the bodies the layer-by-layer kernels use (dcz_gk_whole_output, checked
 * on the host by tests/unit/test_gpu_emu.c); softmax is reduced by the
 * first block as softmax_kernel does. tests/unit/test_gpu.c checks the
 * launch against the CPU on every corpus model, at one block and at many.
 */
#include <cooperative_groups.h>

#include "runtime/cuda/gpu.h"

namespace cg = cooperative_groups;

/* Softmax of the n values x into y by the block: the maximum, the sum of
 * the exponentials, then each exponential (taken again, the same bits)
 * over the sum: y is written once, as pinned host memory wants. */
static __device__ void whole_softmax(const float *x, uint32_t n, float *y, float *red)
{
    float m = -INFINITY;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, x[i]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (uint32_t o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + o]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) sum += dcz_exp_neg(x[i] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (uint32_t o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
        __syncthreads();
    }
    sum = red[0];
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) y[i] = dcz_exp_neg(x[i] - m) / sum;
}

/* Every block waits for every other: after it, each layer's outputs are
 * written for all (the grid barrier orders memory as a fence does). */
static __device__ void whole_barrier(void)
{
    if (gridDim.x == 1) __syncthreads();
    else cg::this_grid().sync();
}

static __global__ void __launch_bounds__(DCZ_GPU_WHOLE_THREADS, 1)
    whole_kernel(const dcz_gwhole *__restrict__ layers, uint32_t nlayers, const float *h_in, float *in,
                 uint32_t in_size)
{
    __shared__ float red[DCZ_GPU_WHOLE_THREADS];
    const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
    for (uint32_t i = first; i < in_size; i += stride) in[i] = h_in[i];
    whole_barrier();
    for (uint32_t k = 0; k < nlayers; k++) {
        const dcz_gwhole *t = &layers[k];
        if (t->op != DCZ_OP_SOFTMAX)
            for (uint32_t i = first; i < t->n; i += stride) dcz_gk_whole_output(t, i);
        else if (blockIdx.x == 0) whole_softmax(t->x[0], t->len, t->y, red);
        if (k + 1 < nlayers) whole_barrier();
    }
}

extern "C" uint32_t dcz_whole_blocks__cuda(void)
{
    int dev = 0, sms = 0, per = 0, coop = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) ||
        cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, whole_kernel, DCZ_GPU_WHOLE_THREADS, 0) != cudaSuccess)
        return 1;
    return coop && sms > 0 && per > 0 ? (uint32_t)sms : 1;
}

extern "C" dcz_status dcz_whole__cuda(const dcz_gwhole *layers, uint32_t n, uint32_t blocks, const float *h_in,
                                      float *in, uint32_t in_size, void *stream)
{
    if (blocks == 0) return DCZ_ERR_ARG;
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute coop;
    coop.id = cudaLaunchAttributeCooperative;
    coop.val.cooperative = blocks > 1;
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(DCZ_GPU_WHOLE_THREADS);
    cfg.stream = (cudaStream_t)stream;
    cfg.attrs = &coop;
    cfg.numAttrs = 1;
    if (cudaLaunchKernelEx(&cfg, whole_kernel, layers, n, h_in, in, in_size) != cudaSuccess) return DCZ_ERR_DEVICE;
    return dcz_gpu_launched();
}
