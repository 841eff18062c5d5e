/* gpu_elem.h: what every CUDA kernel of dcz shares, and the bodies that
 * compute one output of a layer from dense values alone, written once for
 * the device and the host: the launch (blocks, the grid-stride loop, the
 * programmatic dependent launch every kernel goes through), a window's
 * cells, the dense and grouped convolution, im2col's taps, the pools and
 * the mean, the activations, a bias row with its activation, Concat's and
 * the channel gathers' element maps. It needs only the operator table and
 * the shapes (ops.h, shapes.h), not the execution form, so the trainer's
 * device path (train/cuda/) builds on it as libdcz's kernels do
 * (gpu_kern.h adds the compressed forms and the integer region).
 *
 * Checked on the host by tests/unit/test_gpu_emu.c (libdcz's kernels) and
 * tests/unit/test_train_emu.c (the trainer's); on a GPU by
 * tests/unit/test_gpu.c and tests/unit/test_gpu_train.c.
 */
#ifndef DCZ_RUNTIME_GPU_ELEM_H
#define DCZ_RUNTIME_GPU_ELEM_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "runtime/format/ops.h"
#include "runtime/shapes.h"

#ifdef __CUDACC__
#define DCZ_HD __host__ __device__ __forceinline__
#else
#define DCZ_HD static inline
#endif

#ifdef __CUDACC__
/* What every launcher of the .cu files shares: threads a block, blocks for
 * n threads of work (at most 65535: the kernels loop over the rest), the
 * grid-stride loop over n outputs, and the launch's status. */
#define DCZ_GPU_BLOCK 256
static inline unsigned dcz_gpu_blocks(uint64_t n)
{
    const uint64_t want = (n + DCZ_GPU_BLOCK - 1) / DCZ_GPU_BLOCK;
    return (unsigned)(want < 1 ? 1 : want > 65535 ? 65535 : want);
}
/* Blocks for n warps of work, a warp per item (the kernels loop over the
 * rest past 65535 blocks). */
static inline unsigned dcz_gpu_warp_blocks(uint64_t warps)
{
    return dcz_gpu_blocks(warps * 32);
}
#define DCZ_GPU_FOR_EACH(t, n) \
    for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < (n); t += (uint64_t)gridDim.x * blockDim.x)
static inline dcz_status dcz_gpu_launched(void)
{
    return cudaGetLastError() == cudaSuccess ? DCZ_OK : DCZ_ERR_DEVICE;
}

/* Programmatic dependent launch (compute capability 9.0 and later): every
 * kernel is launched by dcz_gpu_launch, which lets the stream (and a graph
 * captured from it) start the next kernel while the one before still runs.
 * So each kernel first lets its own successor start (dcz_gpu_let_next),
 * then may read weights, which no run writes, and waits for the kernels
 * before it to finish, their writes visible, before it reads or writes any
 * activation (dcz_gpu_wait_prior); dcz_gpu_begin does both at once, for
 * kernels with nothing to read before. A kernel of at most
 * DCZ_GPU_EARLY_THREADS threads lets its successor start as soon as all its
 * blocks run, so the successor's blocks are placed and wait on the
 * multiprocessors it leaves free; a larger one only when its blocks end
 * (the successor's blocks, placed early, would sit beside its own). What
 * it saves is the gap between the small kernels of a batch-1 graph.
 * Kernels launched otherwise (cuBLAS) wait for everything before them as
 * always; on older devices the calls compile to nothing and the launch is
 * an ordinary one. DCZ_GPU_PDL (a build flag, for timing the ways apart):
 * 0 launches every kernel the ordinary way, 2 lets every kernel's
 * successor start early whatever its size. */
#ifndef DCZ_GPU_PDL
#define DCZ_GPU_PDL 1
#endif
#define DCZ_GPU_EARLY_THREADS 32768
static __device__ __forceinline__ void dcz_gpu_let_next(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (DCZ_GPU_PDL == 2 ||
        (uint64_t)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z <= DCZ_GPU_EARLY_THREADS)
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
static __device__ __forceinline__ void dcz_gpu_wait_prior(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ __forceinline__ void dcz_gpu_begin(void)
{
    dcz_gpu_let_next();
    dcz_gpu_wait_prior();
}
/* kernel<<<grid, block, shared, stream>>>(args), its successor allowed to
 * start early (above); DCZ_ERR_DEVICE when the launch fails. */
template <typename... P, typename... A>
static inline dcz_status dcz_gpu_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, void *stream,
                                        A... args)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = DCZ_GPU_PDL != 0;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = shared;
    cfg.stream = (cudaStream_t)stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, ((P)args)...);
    const dcz_status pending = dcz_gpu_launched();
    return e == cudaSuccess ? pending : DCZ_ERR_DEVICE;
}
#endif

/* Input cells [lo, hi) of window o along an axis of n cells (as
 * dcz_window_cells). */
DCZ_HD void dcz_gk_window(uint32_t o, uint32_t stride, uint32_t pad, uint32_t k, uint32_t n,
                          uint32_t *lo, uint32_t *hi)
{
    const int64_t start = (int64_t)o * stride - pad, end = start + k;
    *lo = start < 0 ? 0 : (uint32_t)start;
    *hi = end > (int64_t)n ? n : (uint32_t)end;
}

/* The cell of one input sample that output pixel (y0, x0: its window's
 * corner, padding included) of an output channel whose group starts at
 * input channel ic0 reads through column col of its row; -1 in the
 * padding. */
DCZ_HD int64_t dcz_gk_tap_cell(const dcz_conv_geom *g, uint32_t ic0, int64_t y0, int64_t x0, uint32_t col)
{
    const uint32_t taps = g->kh * g->kw, ic = col / taps, r = col % taps;
    const int64_t iy = y0 + r / g->kw, ix = x0 + r % g->kw;
    if (iy < 0 || iy >= g->in_h || ix < 0 || ix >= g->in_w) return -1;
    return ((int64_t)(ic0 + ic) * g->in_h + iy) * g->in_w + ix;
}

/* Output i's channel oc, its group's first input channel *ic0 and its
 * window's corner (*y0, *x0). */
DCZ_HD uint32_t dcz_gk_conv_out(const dcz_conv_geom *g, uint32_t i, uint32_t *ic0, int64_t *y0, int64_t *x0)
{
    const uint32_t plane = g->out_h * g->out_w, oc = i / plane, p = i % plane;
    const uint32_t groups = g->group ? g->group : 1;
    *ic0 = groups == 1 ? 0 : oc / (g->out_c / groups) * (g->in_c / groups);
    *y0 = (int64_t)(p / g->out_w) * g->sh - g->ph;
    *x0 = (int64_t)(p % g->out_w) * g->sw - g->pw;
    return oc;
}

/* Output i of one sample of a convolution with dense weights w (out_c,
 * in_c / groups, kh, kw): dcz_gk_conv_sparse with every column present. */
DCZ_HD float dcz_gk_conv_dense(const dcz_conv_geom *g, const float *w, const float *bias, const float *x,
                               uint32_t i)
{
    uint32_t ic0;
    int64_t y0, x0;
    const uint32_t oc = dcz_gk_conv_out(g, i, &ic0, &y0, &x0);
    const uint32_t groups = g->group ? g->group : 1, cols = g->in_c / groups * g->kh * g->kw;
    const float *row = w + (size_t)oc * cols;
    float sum = bias ? bias[oc] : 0.0f;
    /* the columns in order, (c, ky, kx) nested: no division a tap */
    uint32_t col = 0;
    for (uint32_t c = 0; c < g->in_c / groups; c++) {
        const float *xc = x + (size_t)(ic0 + c) * g->in_h * g->in_w;
        for (uint32_t ky = 0; ky < g->kh; ky++) {
            const int64_t iy = y0 + ky;
            for (uint32_t kx = 0; kx < g->kw; kx++, col++) {
                const int64_t ix = x0 + kx;
                if (iy >= 0 && iy < g->in_h && ix >= 0 && ix < g->in_w) sum += row[col] * xc[iy * g->in_w + ix];
            }
        }
    }
    return sum;
}

/* The cell of one input sample that element i of the im2col patches of a
 * convolution of one group holds: (out_h out_w, in_c kh kw) row-major, as
 * dcz_im2col lays them out; -1 in the padding. */
DCZ_HD int64_t dcz_gk_patch_cell(const dcz_conv_geom *g, uint32_t i)
{
    const uint32_t k = g->in_c * g->kh * g->kw, p = i / k;
    const int64_t y0 = (int64_t)(p / g->out_w) * g->sh - g->ph, x0 = (int64_t)(p % g->out_w) * g->sw - g->pw;
    return dcz_gk_tap_cell(g, 0, y0, x0, i % k);
}

/* The kh kw patch cells of input channel ic for output pixel p of one
 * sample x (one group; 0 in the padding), tap t = ky kw + kx into
 * out[t stride]: column p of rows ic kh kw .. of the sample's patches
 * transposed, (in_c kh kw, out_h out_w), dcz_im2col's elements p (in_c kh
 * kw) + ic kh kw + t. A launch over a batch lays samples side by side,
 * (in_c kh kw, batch out_h out_w), stride batch out_h out_w: what cuBLAS
 * and the chunk products read. */
DCZ_HD void dcz_gk_patch_taps(const dcz_conv_geom *g, const float *x, uint32_t ic, uint32_t p, float *out,
                              uint64_t stride)
{
    const int64_t y0 = (int64_t)(p / g->out_w) * g->sh - g->ph, x0 = (int64_t)(p % g->out_w) * g->sw - g->pw;
    const float *xc = x + (size_t)ic * g->in_h * g->in_w;
    uint64_t t = 0;
    for (uint32_t ky = 0; ky < g->kh; ky++) {
        const int64_t iy = y0 + ky;
        for (uint32_t kx = 0; kx < g->kw; kx++, t++) {
            const int64_t ix = x0 + kx;
            out[t * stride] = iy >= 0 && iy < g->in_h && ix >= 0 && ix < g->in_w ? xc[iy * g->in_w + ix] : 0.0f;
        }
    }
}

/* Output i (of in_c out_h out_w) of one sample of a max pool (avg 0) or an
 * average pool (avg 1; count_include_pad as AVGPOOL's attribute). */
DCZ_HD float dcz_gk_pool(const dcz_conv_geom *g, int avg, int count_include_pad, const float *x,
                         uint32_t i)
{
    const uint32_t plane = g->out_h * g->out_w, c = i / plane, p = i % plane;
    uint32_t y0, y1, x0, x1;
    dcz_gk_window(p / g->out_w, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
    dcz_gk_window(p % g->out_w, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
    const float *xp = x + (size_t)c * g->in_h * g->in_w;
    float m;
    if (!avg) {   /* dcz_maxpool_ref's order: column by column */
        m = -INFINITY;
        for (uint32_t ix = x0; ix < x1; ix++)
            for (uint32_t iy = y0; iy < y1; iy++)
                if (xp[(size_t)iy * g->in_w + ix] > m) m = xp[(size_t)iy * g->in_w + ix];
        return m;
    }
    m = 0.0f;
    for (uint32_t iy = y0; iy < y1; iy++)
        for (uint32_t ix = x0; ix < x1; ix++) m += xp[(size_t)iy * g->in_w + ix];
    return m / (float)(count_include_pad ? g->kh * g->kw : (y1 - y0) * (x1 - x0));
}

/* An activation of the operator table (RELU and the ones of
 * dcz_activation_ref; param: their float attributes) of v; any other op
 * passes v through. */
DCZ_HD float dcz_gk_act(uint16_t op, float p0, float p1, float v)
{
    switch (op) {
    case DCZ_OP_RELU: return v > 0.0f ? v : 0.0f;
    case DCZ_OP_CLIP: {
        const float t = p1 < v ? p1 : v;
        return p0 > t ? p0 : t;
    }
    case DCZ_OP_LEAKY_RELU: return v > 0.0f ? v : p0 * v;
    case DCZ_OP_SIGMOID: return dcz_sigmoid_one(v);
    case DCZ_OP_TANH: return tanhf(v);
    case DCZ_OP_HARD_SIGMOID: {
        const float t = p0 * v + p1, u = 1.0f < t ? 1.0f : t;
        return 0.0f > u ? 0.0f : u;
    }
    case DCZ_OP_HARD_SWISH: return dcz_hard_swish_one(v);
    case DCZ_OP_SILU: return dcz_silu_one(v);
    default: return v;
    }
}

/* Element t of y (batch, rows, plane) finished from a product c that
 * cuBLAS wrote without the bias: c laid out as y (by_rows 0; y may be c),
 * or as (rows, batch, plane) (by_rows 1: one product over the patches of
 * the whole batch); the row's bias added, then the activation. */
DCZ_HD float dcz_gk_bias_act(const float *c, const float *bias, uint64_t batch, uint32_t rows, uint32_t plane,
                             int by_rows, dcz_act act, uint64_t t)
{
    const uint64_t p = t % plane, r = t / plane % rows, b = t / plane / rows;
    const float v = c[by_rows ? (r * batch + b) * plane + p : t] + (bias ? bias[r] : 0.0f);
    return dcz_gk_act(act.op, act.lo, act.hi, v);
}

/* Element i of one sample of a CONCAT of nin inputs of width[k] elements
 * each: which input, and where in it (*at). */
DCZ_HD uint32_t dcz_gk_concat_from(const uint32_t *width, uint32_t nin, uint32_t i, uint32_t *at)
{
    uint32_t k = 0;
    while (k + 1 < nin && i >= width[k]) i -= width[k++];
    *at = i;
    return k;
}

/* Element t of a batch's output of a CHANNEL_SHUFFLE or SLICE of geometry
 * g (in_c channels in, out_c out, planes of in_h x in_w): where it is in
 * the batch's input, by dcz_gather_source (ops.h). */
DCZ_HD uint64_t dcz_gk_gather_from(const dcz_conv_geom *g, uint32_t start, uint32_t groups, uint64_t t)
{
    const uint64_t plane = (uint64_t)g->in_h * g->in_w;
    const uint64_t p = t % plane, c = t / plane % g->out_c, b = t / plane / g->out_c;
    return (b * g->in_c + dcz_gather_source((uint32_t)c, g->out_c, start, groups)) * plane + p;
}

#endif /* DCZ_RUNTIME_GPU_ELEM_H */
