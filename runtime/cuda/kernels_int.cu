/* kernels_int.cu: the integer region of calibrated models on CUDA (the 8-bit
 * schemes), twins of kernels_int.c (gpu.h). Activations and weights are
 * int8, sums int32 (every sum of an 8-bit scheme fits 32 bits: qload.c
 * checks it), so the sums are the CPU's bit for bit, and each output is
 * finished as the CPU finishes it: requantized by the same multiply and
 * rounding shift, or made float on the region's last weighted layer.
 *
 * The rows of fully connected layers (and of the patches of small
 * convolutions) take a warp each, 4 consecutive entries a lane: a warp
 * scan of the lanes' step sums gives the columns, the row's integer
 * codebook sits in the warp's slice of shared memory, and the 4 weights
 * and the 4 inputs they meet are packed into two words for one dp4a (a
 * 4-way int8 dot product into an int32 sum); a row's entries are decoded
 * once for 8 samples. Convolutions on wide planes take a thread per output
 * (dcz_gk_qconv), pools, means and the element-wise ops a thread per
 * output too, all through the bodies gpu_kern.h shares with the host.
 *
 * Checked through those bodies on the host by tests/unit/test_gpu_emu.c,
 * and launched on a GPU by tests/unit/test_gpu.c (bit for bit against
 * kernels_int.c, and every calibrated corpus model against the CPU).
 */
#include "runtime/cuda/gpu.h"

#define FULL_MASK 0xffffffffu
#define ENTRIES_PER_LANE 4

/* The inclusive warp scan of v. */
static __device__ __forceinline__ uint32_t warp_scan(uint32_t v, uint32_t lane)
{
    for (uint32_t o = 1; o < 32; o <<= 1) {
        const uint32_t t = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

static __device__ __forceinline__ int32_t warp_sum(int32_t v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL_MASK, v, o);
    return v;
}

static __device__ __forceinline__ uint32_t pack4(const int32_t *v)
{
    return (uint32_t)(v[0] & 0xff) | (uint32_t)(v[1] & 0xff) << 8 | (uint32_t)(v[2] & 0xff) << 16 |
           (uint32_t)(v[3] & 0xff) << 24;
}

/* A warp per (row, 8 samples): output row r of sample b where place puts
 * it, as dcz_spmm_chunks__cuda lays it out. */
static __global__ void qspmm_kernel(dcz_gqsparse s, dcz_gqout o, const int8_t *__restrict__ x, uint32_t batch,
                                    dcz_gplace place)
{
    dcz_gpu_begin();
    __shared__ int8_t tabs[DCZ_GPU_BLOCK / 32][256];
    const uint32_t lane = threadIdx.x & 31;
    int8_t *tab = tabs[threadIdx.x >> 5];
    const uint32_t groups = (batch + DCZ_GPU_SPMM_SAMPLES - 1) / DCZ_GPU_SPMM_SAMPLES;
    const uint64_t items = (uint64_t)s.rows * groups;
    const uint32_t warps = gridDim.x * (blockDim.x >> 5);
    for (uint64_t it = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); it < items; it += warps) {
        const uint32_t r = (uint32_t)(it % s.rows), b0 = (uint32_t)(it / s.rows) * DCZ_GPU_SPMM_SAMPLES;
        const uint32_t nb = batch - b0 < DCZ_GPU_SPMM_SAMPLES ? batch - b0 : DCZ_GPU_SPMM_SAMPLES;
        if (s.idx) {
            __syncwarp();   /* the last row's readers are done with the slice */
            for (uint32_t i = lane; i < s.k; i += 32) tab[i] = s.qtab[(size_t)r * s.k + i];
            __syncwarp();
        }
        const uint32_t e1 = s.row_ptr[r + 1];
        int32_t acc[DCZ_GPU_SPMM_SAMPLES];
#pragma unroll
        for (int j = 0; j < DCZ_GPU_SPMM_SAMPLES; j++) acc[j] = 0;
        uint32_t base = 0;
        for (uint32_t e0 = s.row_ptr[r]; e0 < e1; e0 += 32 * ENTRIES_PER_LANE) {
            const uint32_t e = e0 + lane * ENTRIES_PER_LANE;
            uint32_t col[ENTRIES_PER_LANE], run = 0;
            int32_t w[ENTRIES_PER_LANE];
            bool real[ENTRIES_PER_LANE];
#pragma unroll
            for (int j = 0; j < ENTRIES_PER_LANE; j++) {
                const uint32_t st = e + j < e1 ? s.step[e + j] : 0;
                run += st;
                col[j] = run;
                real[j] = e + j < e1 && st != DCZ_STEP_FILLER;
                w[j] = real[j] ? (s.idx ? tab[s.idx[e + j]] : s.qval[e + j]) : 0;
            }
            const uint32_t scan = warp_scan(run, lane), before = base + scan - run;
            base += __shfl_sync(FULL_MASK, scan, 31);
            const int wp = (int)pack4(w);
#pragma unroll
            for (int b = 0; b < DCZ_GPU_SPMM_SAMPLES; b++) {
                if ((uint32_t)b >= nb) break;
                const int8_t *xb = x + (size_t)(b0 + b) * s.cols;
                int32_t v[ENTRIES_PER_LANE];
#pragma unroll
                for (int j = 0; j < ENTRIES_PER_LANE; j++) v[j] = real[j] ? __ldg(&xb[before + col[j]]) : 0;
                acc[b] = __dp4a(wp, (int)pack4(v), acc[b]);
            }
        }
#pragma unroll
        for (int b = 0; b < DCZ_GPU_SPMM_SAMPLES; b++) {
            const int32_t sum = warp_sum(acc[b]);
            if (lane == 0 && (uint32_t)b < nb) dcz_gk_qfinish(&o, r, sum, dcz_gk_place(&place, b0 + b, r));
        }
    }
}

static __global__ void qconv_kernel(dcz_conv_geom g, dcz_gqsparse s, dcz_gqout o, const int8_t *x, uint64_t batch)
{
    dcz_gpu_begin();
    const uint32_t plane = g.out_h * g.out_w, per = g.out_c * plane;
    const size_t in_sample = (size_t)g.in_c * g.in_h * g.in_w;
    DCZ_GPU_FOR_EACH(t, batch * per) {
        const uint32_t i = (uint32_t)(t % per);
        dcz_gk_qfinish(&o, i / plane, dcz_gk_qconv(&g, &s, x + t / per * in_sample, i), t);
    }
}

static __global__ void qim2col_kernel(dcz_conv_geom g, const int8_t *x, int8_t *col, uint64_t per, uint64_t n)
{
    dcz_gpu_begin();
    const size_t in_sample = (size_t)g.in_c * g.in_h * g.in_w;
    DCZ_GPU_FOR_EACH(t, n) col[t] = dcz_gk_qim2col(&g, x + t / per * in_sample, (uint32_t)(t % per));
}

static __global__ void quantize_kernel(const float *x, uint64_t n, float scale, int32_t qmax, int8_t *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = (int8_t)dcz_gk_quantize(x[t], scale, qmax);
}

static __global__ void qpool_kernel(dcz_conv_geom g, int avg, int cip, const int8_t *x, uint64_t batch, int8_t *y)
{
    dcz_gpu_begin();
    const uint32_t per = g.in_c * g.out_h * g.out_w;
    const size_t in_sample = (size_t)g.in_c * g.in_h * g.in_w;
    DCZ_GPU_FOR_EACH(t, batch * per) y[t] = dcz_gk_qpool(&g, avg, cip, x + t / per * in_sample, (uint32_t)(t % per));
}

static __global__ void qmean_kernel(uint32_t plane, const int8_t *x, uint64_t planes, int rescale, int32_t mult,
                                    uint32_t shift, int32_t qmax, int8_t *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, planes) y[t] = dcz_gk_qmean(x + t * plane, plane, rescale, mult, shift, qmax);
}

static __global__ void qrelu_kernel(const int8_t *x, uint64_t n, int8_t *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = x[t] > 0 ? x[t] : 0;
}

static __global__ void qtable_kernel(const int8_t *table, int32_t qmax, const int8_t *x, uint64_t n, int8_t *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = table[x[t] + qmax];
}

/* the multipliers and shifts of up to DCZ_MAX_INPUTS inputs, by value */
typedef struct qscales {
    int32_t mult[DCZ_MAX_INPUTS];
    uint8_t shift[DCZ_MAX_INPUTS];
} qscales;

static __global__ void qadd_kernel(const int8_t *a, const int8_t *b, uint64_t n, qscales q, int32_t qmax, int8_t *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = dcz_gk_qadd(a[t], b[t], q.mult, q.shift, qmax);
}

static __global__ void qmul_kernel(const int8_t *x, const int8_t *f, uint64_t n, uint32_t plane, int32_t mult,
                                   uint32_t shift, int32_t qmax, int8_t *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, n) y[t] = (int8_t)dcz_gk_requant((int32_t)x[t] * f[t / plane], mult, shift, qmax);
}

typedef struct qinputs {
    const int8_t *x[DCZ_MAX_INPUTS];
    uint32_t width[DCZ_MAX_INPUTS];
} qinputs;

static __global__ void qconcat_kernel(qinputs in, uint32_t nin, uint32_t per, uint64_t batch, qscales q,
                                      int32_t qmax, int8_t *y)
{
    dcz_gpu_begin();
    DCZ_GPU_FOR_EACH(t, batch * per) {
        uint32_t at;
        const uint32_t k = dcz_gk_concat_from(in.width, nin, (uint32_t)(t % per), &at);
        y[t] = (int8_t)dcz_gk_requant(in.x[k][t / per * in.width[k] + at], q.mult[k], q.shift[k], qmax);
    }
}

/* ---- launchers ------------------------------------------------------------------ */

#define LAUNCH(kernel, n, ...)                                                                              \
    do {                                                                                                    \
        if ((n) == 0) return DCZ_OK;                                                                        \
        return dcz_gpu_launch(kernel, dcz_gpu_blocks(n), DCZ_GPU_BLOCK, 0, stream, __VA_ARGS__);             \
    } while (0)

extern "C" dcz_status dcz_qspmm__cuda(const dcz_gqsparse *s, const dcz_gqout *o, const int8_t *x, size_t batch,
                                      dcz_gplace place, void *stream)
{
    if (s->rows == 0 || batch == 0) return DCZ_OK;
    if (batch > UINT32_MAX || place.per == 0 || (s->idx && s->k > 256)) return DCZ_ERR_ARG;
    const uint64_t groups = (batch + DCZ_GPU_SPMM_SAMPLES - 1) / DCZ_GPU_SPMM_SAMPLES;
    return dcz_gpu_launch(qspmm_kernel, dcz_gpu_warp_blocks(groups * s->rows), DCZ_GPU_BLOCK, 0, stream, *s, *o, x,
                          (uint32_t)batch, place);
}

extern "C" dcz_status dcz_qconv2d__cuda(const dcz_conv_geom *g, const dcz_gqsparse *s, const dcz_gqout *o,
                                        const int8_t *x, size_t batch, void *stream)
{
    LAUNCH(qconv_kernel, (uint64_t)batch * g->out_c * g->out_h * g->out_w, *g, *s, *o, x, batch);
}

extern "C" dcz_status dcz_qim2col__cuda(const dcz_conv_geom *g, const int8_t *x, size_t batch, int8_t *col,
                                        void *stream)
{
    const uint64_t per = (uint64_t)g->out_h * g->out_w * g->in_c * g->kh * g->kw;
    LAUNCH(qim2col_kernel, per * batch, *g, x, col, per, per * batch);
}

extern "C" dcz_status dcz_quantize__cuda(const float *x, size_t n, float scale, int32_t qmax, int8_t *y,
                                         void *stream)
{
    LAUNCH(quantize_kernel, (uint64_t)n, x, n, scale, qmax, y);
}

extern "C" dcz_status dcz_qpool__cuda(const dcz_conv_geom *g, int avg, int count_include_pad, const int8_t *x,
                                      size_t batch, int8_t *y, void *stream)
{
    LAUNCH(qpool_kernel, (uint64_t)batch * g->in_c * g->out_h * g->out_w, *g, avg, count_include_pad, x, batch, y);
}

extern "C" dcz_status dcz_qmean__cuda(uint32_t channels, uint32_t plane, const int8_t *x, size_t batch, int rescale,
                                      int32_t mult, uint8_t shift, int32_t qmax, int8_t *y, void *stream)
{
    const uint64_t planes = (uint64_t)batch * channels;
    LAUNCH(qmean_kernel, planes, plane, x, planes, rescale, mult, shift, qmax, y);
}

extern "C" dcz_status dcz_qrelu__cuda(const int8_t *x, size_t n, int8_t *y, void *stream)
{
    LAUNCH(qrelu_kernel, (uint64_t)n, x, n, y);
}

extern "C" dcz_status dcz_qtable__cuda(const int8_t *table, int32_t qmax, const int8_t *x, size_t n, int8_t *y,
                                       void *stream)
{
    LAUNCH(qtable_kernel, (uint64_t)n, table, qmax, x, n, y);
}

extern "C" dcz_status dcz_qadd__cuda(const int8_t *a, const int8_t *b, size_t n, const int32_t *mult,
                                     const uint8_t *shift, int32_t qmax, int8_t *y, void *stream)
{
    qscales q = {};
    for (int k = 0; k < 2; k++) q.mult[k] = mult[k], q.shift[k] = shift[k];
    LAUNCH(qadd_kernel, (uint64_t)n, a, b, n, q, qmax, y);
}

extern "C" dcz_status dcz_qmul__cuda(const int8_t *x, const int8_t *f, size_t batch, uint32_t channels,
                                     uint32_t plane, int32_t mult, uint8_t shift, int32_t qmax, int8_t *y,
                                     void *stream)
{
    const uint64_t n = (uint64_t)batch * channels * plane;
    LAUNCH(qmul_kernel, n, x, f, n, plane, mult, shift, qmax, y);
}

extern "C" dcz_status dcz_qconcat__cuda(const int8_t *const *x, const uint32_t *width, uint32_t nin, size_t batch,
                                        const int32_t *mult, const uint8_t *shift, int32_t qmax, int8_t *y,
                                        void *stream)
{
    if (nin > DCZ_MAX_INPUTS) return DCZ_ERR_ARG;
    qinputs in = {};
    qscales q = {};
    uint32_t per = 0;
    for (uint32_t k = 0; k < nin; k++) {
        in.x[k] = x[k];
        in.width[k] = width[k];
        q.mult[k] = mult[k];
        q.shift[k] = shift[k];
        per += width[k];
    }
    LAUNCH(qconcat_kernel, (uint64_t)batch * per, in, nin, per, batch, q, qmax, y);
}
