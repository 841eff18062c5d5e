/* kernels_sparse.cu: the sparse fully connected kernels on CUDA, twins of
 * the CPU's dcz_spmv and dcz_spmm (gpu.h), on the chunk form gpu.c makes at
 * upload (gpu_kern.h: dcz_gchunks, 16 bytes for 8 entries).
 *
 * Batch 1 (dcz_spmv_chunks__cuda): a group of G lanes a row (G a power of
 * two up to a warp, near the row's chunk count: several short rows share a
 * warp), each lane one chunk at a time in one 16-byte load, the next one
 * loaded before the current one is used; the group's scan of the chunks'
 * step totals gives each lane its chunk's first column, then its 8
 * products; the group's partial sums by a shuffle reduction. The codebook
 * sits in shared memory; the input too where the rows fill the device
 * (dcz_gchunks.stage: blocks of DCZ_GK_STAGE_BLOCK threads, no more than
 * the multiprocessors, each copying it once), else it is read where it
 * lies, through the read-only cache.
 *
 * Batches (dcz_spmm_chunks__cuda): the input transposed first (column by
 * column, the batch's samples side by side: dcz_transpose__cuda, or the
 * patches as im2col_t lays them out), then a warp a row and 64 samples,
 * each lane 2 samples: every lane decodes the row's chunks (the same 16
 * bytes for the warp: one load) and reads, for each entry, its column's
 * samples, 32 consecutive floats across the warp. The sums run from the
 * bias through the entries in order, as dcz_spmm_ref's.
 *
 * Checked against dcz_spmm_ref on a GPU by tests/unit/test_gpu.c (batch
 * 1 within 1e-5 of each output's |w x| sum: the lanes' partial sums add in
 * another order), and the bodies on the host by test_gpu_emu.c.
 */
#include "runtime/cuda/gpu.h"

/* Floats of shared memory the codebook takes (rounded to an even count,
 * so what follows it stays 8-byte aligned). */
static __host__ __device__ __forceinline__ uint32_t codebook_floats(const dcz_gchunks &s)
{
    return s.codebook ? (s.k + 1) / 2 * 2 : 0;
}

/* The codebook into shared memory (every thread of the block calls it). */
static __device__ __forceinline__ const float *load_codebook(const dcz_gchunks &s, float *cb)
{
    if (!s.codebook) return NULL;
    for (uint32_t i = threadIdx.x; i < s.k; i += blockDim.x) cb[i] = s.codebook[i];
    __syncthreads();
    return cb;
}

template <int G>
static __global__ void spmv_chunks_kernel(dcz_gchunks s, const float *bias, const float *__restrict__ x, float *y,
                                          dcz_act act)
{
    extern __shared__ float shared[];
    dcz_gpu_let_next();
    const float *cb = load_codebook(s, shared);
    dcz_gpu_wait_prior();
    if (s.stage) {   /* the input into shared memory, after the codebook */
        float *xs = shared + codebook_floats(s);
        for (uint32_t i = threadIdx.x; i < s.cols; i += blockDim.x) xs[i] = x[i];
        __syncthreads();
        x = xs;
    }
    const uint32_t lane = threadIdx.x % G, per_block = blockDim.x / G;
    const uint32_t warp_lane = threadIdx.x & 31;
    const unsigned mask = G == 32 ? 0xffffffffu : ((1u << G) - 1) << (warp_lane & ~(uint32_t)(G - 1));
    for (uint32_t r = blockIdx.x * per_block + threadIdx.x / G; r < s.rows; r += gridDim.x * per_block) {
        const uint32_t c1 = s.cptr[r + 1];
        uint32_t base = 0, w[4] = { 0, 0, 0, 0 }, next[4] = { 0, 0, 0, 0 };
        float sum = 0.0f;
        uint32_t c = s.cptr[r] + lane;
        if (c < c1) dcz_gk_chunk_words(s.chunk, c, next);
        for (uint32_t c0 = s.cptr[r]; c0 < c1; c0 += G, c += G) {
            for (int i = 0; i < 4; i++) w[i] = next[i];
            if (c + G < c1) dcz_gk_chunk_words(s.chunk, c + G, next);
            const uint32_t span = c < c1 ? dcz_gk_chunk_span(w) : 0;
            uint32_t incl = span;
            for (int o = 1; o < G; o <<= 1) {
                const uint32_t t = __shfl_up_sync(mask, incl, o, G);
                if (lane >= (uint32_t)o) incl += t;
            }
            if (c < c1) sum = dcz_gk_chunk_dot(&s, cb, w, c, base + incl - span, x, sum);
            base += __shfl_sync(mask, incl, G - 1, G);
        }
        for (int o = G / 2; o > 0; o >>= 1) sum += __shfl_down_sync(mask, sum, o, G);
        if (lane == 0) y[r] = dcz_gk_act(act.op, act.lo, act.hi, bias ? sum + bias[r] : sum);
    }
}

/* A block of parts warps a (row, 64 samples): warp p takes part p of the
 * row's chunks (DCZ_GK_SPMM_PARTS), its first column found by the
 * spans of the chunks before it (summed across the warp); one part alone
 * sums from the bias, as dcz_spmm_ref, else part 0 adds the parts' sums in
 * order to the bias. Shared memory: the codebook, then the parts' sums. */
static __global__ void spmm_chunks_kernel(dcz_gchunks s, const float *bias, const float *__restrict__ xt,
                                          uint64_t samples, float *y, dcz_gplace place, dcz_act act)
{
    extern __shared__ float shared[];
    dcz_gpu_let_next();
    const float *cb = load_codebook(s, shared);
    dcz_gpu_wait_prior();
    float *partial = shared + codebook_floats(s);
    const uint32_t lane = threadIdx.x & 31, part = threadIdx.x >> 5, parts = blockDim.x >> 5;
    const uint64_t tiles = (samples + 63) / 64, items = (uint64_t)s.rows * tiles;
    for (uint64_t it = blockIdx.x; it < items; it += gridDim.x) {
        const uint32_t r = (uint32_t)(it % s.rows);
        const uint64_t j = it / s.rows * 64 + lane;
        const uint32_t c0 = s.cptr[r], n = s.cptr[r + 1] - c0;
        const uint32_t cb0 = c0 + (uint32_t)((uint64_t)n * part / parts);
        const uint32_t ce = c0 + (uint32_t)((uint64_t)n * (part + 1) / parts);
        uint32_t col = 0;
        for (uint32_t c = c0 + lane; c < cb0; c += 32) {
            uint32_t w[4];
            dcz_gk_chunk_words(s.chunk, c, w);
            col += dcz_gk_chunk_span(w);
        }
        for (int o = 16; o > 0; o >>= 1) col += __shfl_xor_sync(0xffffffffu, col, o);
        const float b = parts == 1 && bias ? bias[r] : 0.0f;
        float sum[DCZ_GK_LANE_SAMPLES] = { b, b };
        dcz_gk_chunks_t(&s, cb, xt, samples, j, cb0, ce, col, sum);
        if (parts > 1) {
            partial[part * 64 + lane] = sum[0];
            partial[part * 64 + lane + 32] = sum[1];
            __syncthreads();
            if (part == 0)
                for (int i = 0; i < DCZ_GK_LANE_SAMPLES; i++) {
                    float v = bias ? bias[r] : 0.0f;
                    for (uint32_t p = 0; p < parts; p++) v += partial[p * 64 + lane + 32 * i];
                    sum[i] = v;
                }
            __syncthreads();
        }
        if (part != 0) continue;
        if (j < samples) y[dcz_gk_place(&place, (uint32_t)j, r)] = dcz_gk_act(act.op, act.lo, act.hi, sum[0]);
        if (j + 32 < samples) y[dcz_gk_place(&place, (uint32_t)(j + 32), r)] = dcz_gk_act(act.op, act.lo, act.hi, sum[1]);
    }
}

/* xt (cols, n) = x (n, cols) transposed, through 32 x 32 tiles in shared
 * memory (a row of padding against bank conflicts). */
static __global__ void transpose_kernel(const float *__restrict__ x, uint64_t n, uint32_t cols, float *xt)
{
    __shared__ float tile[32][33];
    dcz_gpu_begin();
    const uint64_t tiles_c = (cols + 31) / 32, tiles = (n + 31) / 32 * tiles_c;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t r0 = t / tiles_c * 32, c0 = t % tiles_c * 32;
        __syncthreads();
        for (uint32_t i = threadIdx.y; i < 32; i += blockDim.y) {
            const uint64_t r = r0 + i, c = c0 + threadIdx.x;
            if (r < n && c < cols) tile[i][threadIdx.x] = x[r * cols + c];
        }
        __syncthreads();
        for (uint32_t i = threadIdx.y; i < 32; i += blockDim.y) {
            const uint64_t c = c0 + i, r = r0 + threadIdx.x;
            if (r < n && c < cols) xt[c * n + r] = tile[threadIdx.x][i];
        }
    }
}

/* An attribute of the current device, read once (one device a process);
 * fallback where it cannot be read. */
static int device_attribute(cudaDeviceAttr what, int *cache, int fallback)
{
    if (*cache == 0) {
        int dev = 0, v = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, what, dev) != cudaSuccess || v <= 0)
            return fallback;
        *cache = v;
    }
    return *cache;
}

template <int G>
static dcz_status launch_spmv(dcz_gchunks s, const float *bias, const float *x, float *y, dcz_act act, void *st)
{
    static int sms, optin, raised;
    size_t shared = ((size_t)codebook_floats(s) + (s.stage ? s.cols : 0)) * sizeof(float);
    if (s.stage && shared > 48 * 1024) {
        /* past 48 KB a block must opt in, up to what the device allows */
        if ((size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, &optin, 0) < shared) s.stage = 0;
        else if (raised < (int)shared) {
            if (cudaFuncSetAttribute(spmv_chunks_kernel<G>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)shared) != cudaSuccess)
                return DCZ_ERR_DEVICE;
            raised = (int)shared;
        }
        if (!s.stage) shared = (size_t)codebook_floats(s) * sizeof(float);
    }
    const uint32_t block = s.stage ? DCZ_GK_STAGE_BLOCK : DCZ_GPU_BLOCK;
    const uint64_t rows_per_block = block / G;
    const uint64_t most = s.stage ? (uint64_t)device_attribute(cudaDevAttrMultiProcessorCount, &sms, 1) : 65535;
    const uint64_t want = (s.rows + rows_per_block - 1) / rows_per_block;
    const unsigned blocks = (unsigned)(want < 1 ? 1 : want > most ? most : want);
    return dcz_gpu_launch(spmv_chunks_kernel<G>, blocks, block, shared, st, s, bias, x, y, act);
}

extern "C" dcz_status dcz_spmv_chunks__cuda(const dcz_gchunks *s, const float *bias, const float *x, float *y,
                                           dcz_act act, void *stream)
{
    if (s->rows == 0) return DCZ_OK;
    switch (s->group) {
    case 1: return launch_spmv<1>(*s, bias, x, y, act, stream);
    case 2: return launch_spmv<2>(*s, bias, x, y, act, stream);
    case 4: return launch_spmv<4>(*s, bias, x, y, act, stream);
    case 8: return launch_spmv<8>(*s, bias, x, y, act, stream);
    case 16: return launch_spmv<16>(*s, bias, x, y, act, stream);
    case 32: return launch_spmv<32>(*s, bias, x, y, act, stream);
    default: return DCZ_ERR_ARG;
    }
}

extern "C" dcz_status dcz_spmm_chunks__cuda(const dcz_gchunks *s, const float *bias, const float *xt,
                                           size_t samples, float *y, dcz_gplace place, dcz_act act,
                                           uint32_t parts, void *stream)
{
    if (s->rows == 0 || samples == 0) return DCZ_OK;
    if (samples > UINT32_MAX || place.per == 0 || parts < 1 || parts > 32) return DCZ_ERR_ARG;
    const uint64_t items = (uint64_t)s->rows * ((samples + 63) / 64);
    const unsigned blocks = (unsigned)(items > 65535 ? 65535 : items);
    const size_t shared = ((size_t)codebook_floats(*s) + parts * 64) * sizeof(float);
    return dcz_gpu_launch(spmm_chunks_kernel, blocks, 32 * parts, shared, stream, *s, bias, xt, samples, y, place, act);
}
extern "C" dcz_status dcz_transpose__cuda(const float *x, size_t n, uint32_t cols, float *xt, void *stream)
{
    if (n == 0 || cols == 0) return DCZ_OK;
    const uint64_t tiles = (n + 31) / 32 * ((cols + 31) / 32);
    const dim3 block(32, 8);
    return dcz_gpu_launch(transpose_kernel, (unsigned)(tiles > 65535 ? 65535 : tiles), block, 0, stream, x, n, cols,
                          xt);
}
