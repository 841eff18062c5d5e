/* gpu_kern.h: the bodies of the CUDA kernels that compute one output
 * element each, written once for the device and the host.
 *
 * Each function here computes output element i of one layer for one
 * sample, reading the same execution form the CPU kernels read (model.h).
 * The .cu kernels beside their CPU twins (kernels_conv.cu, kernels_ref.cu)
 * are a grid-stride loop over i around one of these; compiled by nvcc they
 * are __host__ __device__, compiled by a C compiler plain static inline
 * functions. tests/unit/test_gpu_emu.c runs them on the host over every
 * output of the kernel test grid and compares them with the CPU references,
 * so the indexing of every such GPU kernel is checked on any machine;
 * tests/unit/test_gpu.c checks the launched kernels on a GPU.
 *
 * Sums are taken in the reference's order where the reference has one
 * order per output (pools, the direct convolution walks a row's entries in
 * column order as dcz_conv2d_direct_ref walks its taps); transcendental
 * functions are CUDA's on the device, so activations agree within a few
 * ulps, not bit for bit.
 */
#ifndef DCZ_RUNTIME_GPU_KERN_H
#define DCZ_RUNTIME_GPU_KERN_H

#include <math.h>
#include <stdint.h>

#include "runtime/model.h"

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
#define DCZ_GPU_FOR_EACH(t, n) \
    for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < (n); t += (uint64_t)gridDim.x * blockDim.x)
static inline dcz_status dcz_gpu_launched(void)
{
    return cudaGetLastError() == cudaSuccess ? DCZ_OK : DCZ_ERR_DEVICE;
}
#endif

/* The sparse execution form as a kernel reads it (device pointers on the
 * device): model.h's dcz_sparse without the CPU's extra forms. */
typedef struct dcz_gsparse {
    uint32_t rows, cols, k;
    const uint32_t *row_ptr;  /* (rows + 1) */
    const uint8_t *step;      /* (entries) */
    const uint8_t *idx;       /* (entries) or NULL */
    const float *val;         /* (entries) when !idx */
    const float *codebook;    /* (k) when idx */
} dcz_gsparse;

/* Input cells [lo, hi) of window o along an axis of n cells (as
 * dcz_window_cells). */
DCZ_HD void dcz_gk_window(uint32_t o, uint32_t stride, uint32_t pad, uint32_t k, uint32_t n,
                          uint32_t *lo, uint32_t *hi)
{
    const int64_t start = (int64_t)o * stride - pad, end = start + k;
    *lo = start < 0 ? 0 : (uint32_t)start;
    *hi = end > (int64_t)n ? n : (uint32_t)end;
}

/* Output i (of out_c out_h out_w) of one sample of a sparse convolution:
 * the row of output channel oc walked in column order, each real entry's
 * tap (ic, ky, kx) read where it falls inside the input sample x. */
DCZ_HD float dcz_gk_conv_sparse(const dcz_conv_geom *g, const dcz_gsparse *s, const float *bias,
                                const float *x, uint32_t i)
{
    const uint32_t plane = g->out_h * g->out_w, oc = i / plane, p = i % plane;
    const uint32_t oy = p / g->out_w, ox = p % g->out_w, taps = g->kh * g->kw;
    const uint32_t groups = g->group ? g->group : 1;
    const uint32_t ic0 = groups == 1 ? 0 : oc / (g->out_c / groups) * (g->in_c / groups);
    const int64_t y0 = (int64_t)oy * g->sh - g->ph, x0 = (int64_t)ox * g->sw - g->pw;
    float sum = bias ? bias[oc] : 0.0f;
    uint32_t col = 0;
    for (uint32_t e = s->row_ptr[oc]; e < s->row_ptr[oc + 1]; e++) {
        const uint32_t st = s->step[e];
        col += st;
        if (st == DCZ_STEP_FILLER) continue;
        const uint32_t ic = col / taps, r = col % taps;
        const int64_t iy = y0 + r / g->kw, ix = x0 + r % g->kw;
        if (iy < 0 || iy >= g->in_h || ix < 0 || ix >= g->in_w) continue;
        const float w = s->idx ? s->codebook[s->idx[e]] : s->val[e];
        sum += w * x[((size_t)(ic0 + ic) * g->in_h + (size_t)iy) * g->in_w + (size_t)ix];
    }
    return sum;
}

/* Element i of one sample's im2col patches of a convolution whose group
 * gr is taken: (out_h out_w, in_c / groups kh kw) row-major, as dcz_im2col
 * lays them out for one group. */
DCZ_HD float dcz_gk_im2col(const dcz_conv_geom *g, uint32_t gr, const float *x, uint32_t i)
{
    const uint32_t taps = g->kh * g->kw, groups = g->group ? g->group : 1;
    const uint32_t k = (g->in_c / groups) * taps, p = i / k, c = i % k;
    const uint32_t ic = gr * (g->in_c / groups) + c / taps, r = c % taps;
    const int64_t iy = (int64_t)(p / g->out_w) * g->sh + r / g->kw - g->ph;
    const int64_t ix = (int64_t)(p % g->out_w) * g->sw + r % g->kw - g->pw;
    if (iy < 0 || iy >= g->in_h || ix < 0 || ix >= g->in_w) return 0.0f;
    return x[((size_t)ic * g->in_h + (size_t)iy) * g->in_w + (size_t)ix];
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
    float m = avg ? 0.0f : -INFINITY;
    for (uint32_t iy = y0; iy < y1; iy++)
        for (uint32_t ix = x0; ix < x1; ix++) {
            const float v = xp[(size_t)iy * g->in_w + ix];
            if (avg) m += v;
            else if (v > m) m = v;
        }
    if (!avg) return m;
    return m / (float)(count_include_pad ? g->kh * g->kw : (y1 - y0) * (x1 - x0));
}

/* The mean of plane floats from x (one channel of one sample). */
DCZ_HD float dcz_gk_mean(const float *x, uint32_t plane)
{
    float sum = 0.0f;
    for (uint32_t i = 0; i < plane; i++) sum += x[i];
    return sum / (float)plane;
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
    case DCZ_OP_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case DCZ_OP_TANH: return tanhf(v);
    case DCZ_OP_HARD_SIGMOID: {
        const float t = p0 * v + p1, u = 1.0f < t ? 1.0f : t;
        return 0.0f > u ? 0.0f : u;
    }
    case DCZ_OP_HARD_SWISH: {
        const float t = v / 6.0f + 0.5f, u = 1.0f < t ? 1.0f : t;
        return v * (0.0f > u ? 0.0f : u);
    }
    default: return v;
    }
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

/* Row r of y = S x + bias for one sample x (cols): from the bias, the
 * row's entries in order, as dcz_spmm_ref sums them. */
DCZ_HD float dcz_gk_sparse_row(const dcz_gsparse *s, const float *bias, const float *x, uint32_t r)
{
    float sum = bias ? bias[r] : 0.0f;
    uint32_t col = 0;
    for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
        const uint32_t st = s->step[e];
        col += st;
        if (st == DCZ_STEP_FILLER) continue;
        sum += (s->idx ? s->codebook[s->idx[e]] : s->val[e]) * x[col];
    }
    return sum;
}

#endif /* DCZ_RUNTIME_GPU_KERN_H */
