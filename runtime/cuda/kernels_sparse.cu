/* kernels_sparse.cu: the sparse fully connected kernels on CUDA, twins of
 * kernels_spmv.c's dcz_spmv and kernels_spmm.c's dcz_spmm (gpu.h). Both read the execution
 * form of model.h as it is: a warp takes a row, its 32 lanes one entry each
 * (coalesced reads of the step and index bytes), a warp scan of the steps
 * gives each lane its column, the codebook sits in shared memory, and the
 * products are summed by a warp reduction. Fillers (step 255) only advance
 * the column.
 *
 * Checked against dcz_spmv_ref / dcz_spmm_ref on a GPU by
 * tests/unit/test_gpu.c (fp32 within 1e-5 relative: the warp sums in
 * another order than the reference).
 */
#include "runtime/cuda/gpu.h"

#define FULL_MASK 0xffffffffu

/* Lane l's column among the 32 entries at e: base plus the inclusive scan
 * of the steps; *base advances past the 32. */
static __device__ __forceinline__ uint32_t lane_column(uint32_t step, uint32_t lane, uint32_t *base)
{
    uint32_t c = step;
    for (uint32_t o = 1; o < 32; o <<= 1) {
        const uint32_t t = __shfl_up_sync(FULL_MASK, c, o);
        if (lane >= o) c += t;
    }
    const uint32_t col = *base + c;
    *base += __shfl_sync(FULL_MASK, c, 31);
    return col;
}

static __device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL_MASK, v, o);
    return v;
}

/* The codebook into shared memory (every thread of the block calls it). */
static __device__ __forceinline__ const float *load_codebook(const dcz_gsparse &s, float *cb)
{
    if (!s.idx) return NULL;
    for (uint32_t i = threadIdx.x; i < s.k; i += blockDim.x) cb[i] = s.codebook[i];
    __syncthreads();
    return cb;
}

/* Whether lane's entry e is a real one (not past the row, not a filler). */
static __device__ __forceinline__ bool real_entry(uint32_t e, uint32_t e1, uint32_t step)
{
    return e < e1 && step != DCZ_STEP_FILLER;
}

static __device__ __forceinline__ float entry_weight(const dcz_gsparse &s, const float *cb, uint32_t e)
{
    return cb ? cb[s.idx[e]] : s.val[e];
}

static __global__ void spmv_kernel(dcz_gsparse s, const float *bias, const float *__restrict__ x,
                                   float *y)
{
    extern __shared__ float shared_cb[];
    const float *cb = load_codebook(s, shared_cb);
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t warps = gridDim.x * (blockDim.x >> 5);
    for (uint32_t r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < s.rows; r += warps) {
        const uint32_t e1 = s.row_ptr[r + 1];
        uint32_t base = 0;
        float sum = 0.0f;
        for (uint32_t e0 = s.row_ptr[r]; e0 < e1; e0 += 32) {
            const uint32_t e = e0 + lane, step = e < e1 ? s.step[e] : 0;
            const uint32_t col = lane_column(step, lane, &base);
            if (real_entry(e, e1, step)) sum += entry_weight(s, cb, e) * __ldg(&x[col]);
        }
        sum = warp_sum(sum);
        if (lane == 0) y[r] = bias ? sum + bias[r] : sum;
    }
}

static __global__ void spmm_kernel(dcz_gsparse s, const float *bias, const float *__restrict__ x,
                                   uint32_t batch, float *y, dcz_gplace place)
{
    extern __shared__ float shared_cb[];
    const float *cb = load_codebook(s, shared_cb);
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t groups = (batch + DCZ_GPU_SPMM_SAMPLES - 1) / DCZ_GPU_SPMM_SAMPLES;
    const uint64_t items = (uint64_t)s.rows * groups;
    const uint32_t warps = gridDim.x * (blockDim.x >> 5);
    for (uint64_t it = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); it < items; it += warps) {
        const uint32_t r = (uint32_t)(it % s.rows), b0 = (uint32_t)(it / s.rows) * DCZ_GPU_SPMM_SAMPLES;
        const uint32_t nb = batch - b0 < DCZ_GPU_SPMM_SAMPLES ? batch - b0 : DCZ_GPU_SPMM_SAMPLES;
        const uint32_t e1 = s.row_ptr[r + 1];
        float acc[DCZ_GPU_SPMM_SAMPLES];
        for (int j = 0; j < DCZ_GPU_SPMM_SAMPLES; j++) acc[j] = 0.0f;
        uint32_t base = 0;
        for (uint32_t e0 = s.row_ptr[r]; e0 < e1; e0 += 32) {
            const uint32_t e = e0 + lane, step = e < e1 ? s.step[e] : 0;
            const uint32_t col = lane_column(step, lane, &base);
            if (!real_entry(e, e1, step)) continue;
            const float w = entry_weight(s, cb, e);
            const float *xc = x + (size_t)b0 * s.cols + col;
#pragma unroll
            for (int j = 0; j < DCZ_GPU_SPMM_SAMPLES; j++)
                if ((uint32_t)j < nb) acc[j] += w * __ldg(&xc[(size_t)j * s.cols]);
        }
#pragma unroll
        for (int j = 0; j < DCZ_GPU_SPMM_SAMPLES; j++) {
            const float v = warp_sum(acc[j]);
            if (lane == 0 && (uint32_t)j < nb)
                y[dcz_gk_place(&place, b0 + j, r)] = bias ? v + bias[r] : v;
        }
    }
}

extern "C" dcz_status dcz_spmv__cuda(const dcz_gsparse *s, const float *bias, const float *x, float *y,
                                     void *stream)
{
    if (s->rows == 0) return DCZ_OK;
    const size_t shared = s->idx ? (size_t)s->k * sizeof(float) : 0;
    spmv_kernel<<<dcz_gpu_warp_blocks(s->rows), DCZ_GPU_BLOCK, shared, (cudaStream_t)stream>>>(*s, bias, x, y);
    return dcz_gpu_launched();
}

extern "C" dcz_status dcz_spmm__cuda(const dcz_gsparse *s, const float *bias, const float *x, size_t batch,
                                     float *y, dcz_gplace place, void *stream)
{
    if (s->rows == 0 || batch == 0) return DCZ_OK;
    if (batch > UINT32_MAX || place.per == 0) return DCZ_ERR_ARG;
    const uint64_t groups = (batch + DCZ_GPU_SPMM_SAMPLES - 1) / DCZ_GPU_SPMM_SAMPLES;
    const size_t shared = s->idx ? (size_t)s->k * sizeof(float) : 0;
    spmm_kernel<<<dcz_gpu_warp_blocks(groups * s->rows), DCZ_GPU_BLOCK, shared, (cudaStream_t)stream>>>(
        *s, bias, x, (uint32_t)batch, y, place);
    return dcz_gpu_launched();
}
