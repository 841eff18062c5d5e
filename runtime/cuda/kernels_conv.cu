/* kernels_conv.cu: convolution and pooling kernels on CUDA, twins of
 * kernels_conv.c (gpu.h). Each thread computes one output element by the
 * body gpu_kern.h shares with the host: the sparse direct convolution
 * walks its output channel's compressed row (the threads of a warp share
 * that row, so its bytes are read once for all of them), the dense one its
 * row of weights (grouped convolutions), im2col_t lays out the patches of
 * a batch (one group) transposed for cuBLAS and the sparse batch kernel,
 * and the pools read their windows.
 *
 * Checked against dcz_conv2d_direct_ref (both direct kernels), dcz_im2col,
 * dcz_maxpool_ref, dcz_avgpool_ref and dcz_global_avgpool_ref on the host through
 * gpu_kern.h (tests/unit/test_gpu_emu.c) and launched on a GPU by
 * tests/unit/test_gpu.c.
 */
#include "runtime/cuda/gpu.h"

static __global__ void conv_sparse_kernel(dcz_conv_geom g, dcz_gsparse s, const float *bias, const float *x,
                                          uint64_t batch, dcz_act act, float *y)
{
    dcz_gpu_begin();
    const uint32_t per = g.out_c * g.out_h * g.out_w;
    const size_t in_sample = (size_t)g.in_c * g.in_h * g.in_w;
    DCZ_GPU_FOR_EACH(t, batch * per) {
        const float v = dcz_gk_conv_sparse(&g, &s, bias, x + t / per * in_sample, (uint32_t)(t % per));
        y[t] = dcz_gk_act(act.op, act.lo, act.hi, v);
    }
}

static __global__ void conv_dense_kernel(dcz_conv_geom g, const float *w, const float *bias, const float *x,
                                         uint64_t batch, dcz_act act, float *y)
{
    dcz_gpu_begin();
    const uint32_t per = g.out_c * g.out_h * g.out_w;
    const size_t in_sample = (size_t)g.in_c * g.in_h * g.in_w;
    DCZ_GPU_FOR_EACH(t, batch * per) {
        const float v = dcz_gk_conv_dense(&g, w, bias, x + t / per * in_sample, (uint32_t)(t % per));
        y[t] = dcz_gk_act(act.op, act.lo, act.hi, v);
    }
}

/* A thread a (sample, pixel) column j of the patches (x) and an input
 * channel (y, looping past 65535): its kh kw rows, read at consecutive
 * pixels and written coalesced across the warp. */
static __global__ void im2col_t_kernel(dcz_conv_geom g, const float *x, uint64_t batch, float *colt)
{
    dcz_gpu_begin();
    const uint32_t pixels = g.out_h * g.out_w, taps = g.kh * g.kw;
    const uint64_t cols = batch * pixels, in_sample = (uint64_t)g.in_c * g.in_h * g.in_w;
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += (uint64_t)gridDim.x * blockDim.x) {
        /* 32-bit division where the columns allow */
        const uint64_t b = cols <= UINT32_MAX ? (uint32_t)j / pixels : j / pixels;
        const uint32_t p = (uint32_t)(j - b * pixels);
        for (uint32_t ic = blockIdx.y; ic < g.in_c; ic += gridDim.y)
            dcz_gk_patch_taps(&g, x + b * in_sample, ic, p, colt + (uint64_t)ic * taps * cols + j, cols);
    }
}

static __global__ void pool_kernel(dcz_conv_geom g, int avg, int cip, const float *x, uint64_t batch, float *y)
{
    dcz_gpu_begin();
    const uint32_t per = g.in_c * g.out_h * g.out_w;
    const size_t in_sample = (size_t)g.in_c * g.in_h * g.in_w;
    DCZ_GPU_FOR_EACH(t, batch * per) y[t] = dcz_gk_pool(&g, avg, cip, x + t / per * in_sample, (uint32_t)(t % per));
}

static __global__ void mean_kernel(uint32_t plane, const float *x, uint64_t planes, float *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, planes) y[t] = dcz_mean_one(x + t * plane, plane);
}

extern "C" dcz_status dcz_conv2d_sparse__cuda(const dcz_conv_geom *g, const dcz_gsparse *s, const float *bias,
                                              const float *x, size_t batch, dcz_act act, float *y, void *stream)
{
    const uint64_t n = (uint64_t)batch * g->out_c * g->out_h * g->out_w;
    if (n == 0) return DCZ_OK;
    return dcz_gpu_launch(conv_sparse_kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, *g, *s, bias, x, batch, act,
                          y);
}

extern "C" dcz_status dcz_conv2d_dense__cuda(const dcz_conv_geom *g, const float *w, const float *bias,
                                             const float *x, size_t batch, dcz_act act, float *y, void *stream)
{
    const uint64_t n = (uint64_t)batch * g->out_c * g->out_h * g->out_w;
    if (n == 0) return DCZ_OK;
    return dcz_gpu_launch(conv_dense_kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, *g, w, bias, x, batch, act, y);
}

extern "C" dcz_status dcz_im2col_t__cuda(const dcz_conv_geom *g, const float *x, size_t batch, float *colt,
                                         void *stream)
{
    const uint64_t cols = (uint64_t)batch * g->out_h * g->out_w;
    if (cols == 0 || g->in_c == 0 || g->kh * g->kw == 0) return DCZ_OK;
    const dim3 grid(dcz_gpu_blocks(cols), g->in_c < 65535 ? g->in_c : 65535);
    return dcz_gpu_launch(im2col_t_kernel, grid, DCZ_GPU_BLOCK, 0, stream, *g, x, batch, colt);
}

extern "C" dcz_status dcz_pool__cuda(const dcz_conv_geom *g, int avg, int count_include_pad, const float *x,
                                     size_t batch, float *y, void *stream)
{
    const uint64_t n = (uint64_t)batch * g->in_c * g->out_h * g->out_w;
    if (n == 0) return DCZ_OK;
    return dcz_gpu_launch(pool_kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, *g, avg, count_include_pad, x, batch,
                          y);
}

extern "C" dcz_status dcz_global_avgpool__cuda(uint32_t channels, uint32_t plane, const float *x, size_t batch,
                                               float *y, void *stream)
{
    const uint64_t planes = (uint64_t)batch * channels;
    if (planes == 0) return DCZ_OK;
    return dcz_gpu_launch(mean_kernel, dcz_gpu_blocks(planes), DCZ_GPU_BLOCK, 0, stream, plane, x, planes, y);
}
