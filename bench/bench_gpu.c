/* bench_gpu.c: libdcz's CUDA kernels for sparse fully connected layers
 * (runtime/cuda/gpu.h: dcz_spmv_chunks__cuda at batch 1; at batch 64
 * dcz_transpose__cuda then dcz_spmm_chunks__cuda, as dcz_run calls them)
 * next to cuBLAS on the dense matrix and cuSPARSE on a CSR copy, on the
 * same GPU in the same run, and whole models on the GPU next to the CPU.
 *   copy      cudaMemcpy device to device of 256 MiB, best of 5 after one:
 *             the device's copy bandwidth, bytes read + written per second;
 *             the same of 8 MiB (both buffers in L2): L2's
 *   layers    LeNet-300-100 and the EIE benchmark layers (Alex-6/7/8,
 *             VGG-6/7/8) at bench_spmv.c's shapes and weight densities,
 *             random weights of a 4-bit codebook (16 values):
 *     dcz       the chunk form (gpu_kern.h: dcz_gchunks) made from the
 *               execution form as gpu.c makes it: per row a chunk pointer,
 *               16 bytes for 8 entries (steps, codebook indices), the
 *               codebook; at batch 1 also with each lane count a row can
 *               take (1 to 32), beside the one gpu.c picks, and with the
 *               input staged in shared memory and not where it fits
 *     cublas    cublasSgemv / cublasSgemm on the dense fp32 copy, row-major
 *               (out, in) as gpu.c's dense layers (CUBLAS_OP_T, lda = in),
 *               fp32 math (no TF32)
 *     cusparse  cusparseSpMV / cusparseSpMM (the generic API, default
 *               algorithms) on a CSR copy: int32 row offsets and columns,
 *               fp32 values; the workspace sized and allocated once,
 *               outside the timing
 *   Each call is bracketed by two CUDA events on one stream, the calls
 *   issued back to back after WARMUP of them (a call whose host side
 *   outlasts its kernels is timed by its host side); median of RUNS, the
 *   input rotated over NBUF buffers. None of these kernels skips zero
 *   inputs, so inputs are dense, uniform in [-1, 1). Batch 64 is (64, in)
 *   in, (64, out) out, row-major, for all three.
 *   Checked once per layer and batch: dcz's and cuSPARSE's outputs against
 *   cuBLAS's, within 1e-4 of each output's sum of |w x| (else a FAIL line
 *   and exit 1).
 *   dcz's bandwidth: the bytes it must move at the least (the chunk
 *   form: 4 B a row, 16 B a chunk of 8 entries, fillers and padding
 *   included; the inputs read and the outputs written) per second, and as
 *   a share of the copy bandwidth of HBM and of L2 (the compressed form of
 *   each of these layers fits in an H100's 50 MB L2, their dense fp32
 *   matrices mostly do not).
 *   convolutions  torchvision ResNet-18's convolutions at batch 64 by
 *             patches, piece by piece (bench_conv_products), and the
 *             device's fp32 rate on a square sgemm
 *   models    each .dcz named on the command line, opened with dcz_open_file
 *             on the GPU and on the CPU (its default threads): dcz_run at
 *             batch 1, median and p99 of MODEL_RUNS runs after
 *             MODEL_WARMUP, on the host clock (dcz_run returns with the
 *             output on the host)
 * Without a CUDA device (or in a build without the backend) it prints SKIP
 * and the reason and exits 0. Timings are reported, never asserted.
 *
 *   bench_gpu [MODEL.dcz ...]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "dcz.h"
#include "runtime/model.h"

#ifndef DCZ_CUDA

int main(void)
{
    printf("SKIP bench_gpu: libdcz built without the CUDA backend (make CUDA=1)\n");
    return 0;
}

#else

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
/* cusparse.h marks its legacy API deprecated, and GCC warns at each of its
 * declarations in C; only the generic API is used here */
#define DISABLE_CUSPARSE_DEPRECATED
#include <cusparse.h>

#include "runtime/cuda/gpu.h"

#define BATCH 64
#define NBUF 8
#define WARMUP 20
#define RUNS 200
#define MODEL_WARMUP 50
#define MODEL_RUNS 500
#define COPY_BYTES ((size_t)256 << 20)
#define L2_COPY_BYTES ((size_t)8 << 20)
#define COPY_REPS 5
#define TOL 1e-4

/* ---- failures: every call checked, a clear message, exit 1 ---------------- */

static void die(const char *call, const char *why, int line)
{
    fprintf(stderr, "bench_gpu: line %d: %s failed: %s\n", line, call, why);
    exit(1);
}

#define CK(call) do { const cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) die(#call, cudaGetErrorString(e_), __LINE__); } while (0)
#define CB(call) do { const cublasStatus_t e_ = (call); \
    if (e_ != CUBLAS_STATUS_SUCCESS) die(#call, cublasGetStatusString(e_), __LINE__); } while (0)
#define CS(call) do { const cusparseStatus_t e_ = (call); \
    if (e_ != CUSPARSE_STATUS_SUCCESS) die(#call, cusparseGetErrorString(e_), __LINE__); } while (0)
#define DZ(call) do { const dcz_status e_ = (call); \
    if (e_ != DCZ_OK) die(#call, dcz_status_str(e_), __LINE__); } while (0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_gpu: out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static void *dev_alloc(size_t n)
{
    void *d = NULL;
    CK(cudaMalloc(&d, n ? n : 1));
    return d;
}

static void *dev_upload(const void *h, size_t n)
{
    void *d = dev_alloc(n);
    if (n) CK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    return d;
}

/* ---- random numbers: splitmix64 ------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static double rng_uniform(rng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- the layers ------------------------------------------------------------ */

typedef struct shape {
    const char *name;
    uint32_t rows, cols;
    double density;
} shape;

/* One layer on the host: the execution form, the CSR copy, the dense copy. */
typedef struct host_layer {
    uint32_t rows, cols, nnz, entries;
    uint32_t *row_ptr;   /* (rows + 1) */
    uint8_t *step, *idx; /* (entries) */
    float cb[16];
    int32_t *cptr, *ccol; /* CSR: (rows + 1), (nnz) */
    float *cval;          /* (nnz) */
    float *dense;         /* (rows, cols) row-major */
} host_layer;

/* s's matrix: each weight kept with probability density (the stream of
 * *keep), its codebook index uniform (the stream of *code). */
static void build_layer(const shape *s, rng *keep, rng *code, host_layer *h)
{
    memset(h, 0, sizeof *h);
    h->rows = s->rows;
    h->cols = s->cols;
    for (int i = 0; i < 16; i++) h->cb[i] = (float)rng_uniform(code) - 0.5f;
    /* the kept weights counted first, with a copy of the stream */
    rng k0 = *keep;
    uint64_t nnz = 0;
    for (uint64_t i = 0; i < (uint64_t)s->rows * s->cols; i++) nnz += rng_uniform(&k0) < s->density;
    const uint64_t cap = dcz_sparse_max_entries((uint32_t)nnz, s->rows, s->cols);
    if (nnz > INT32_MAX || cap > UINT32_MAX) {
        fprintf(stderr, "bench_gpu: %s: too many weights\n", s->name);
        exit(1);
    }
    h->nnz = (uint32_t)nnz;
    h->row_ptr = xmalloc(((size_t)s->rows + 1) * sizeof *h->row_ptr);
    h->step = xmalloc(cap);
    h->idx = xmalloc(cap);
    h->cptr = xmalloc(((size_t)s->rows + 1) * sizeof *h->cptr);
    h->ccol = xmalloc(nnz * sizeof *h->ccol);
    h->cval = xmalloc(nnz * sizeof *h->cval);
    h->dense = calloc((size_t)s->rows * s->cols, sizeof *h->dense);
    if (!h->dense) {
        fprintf(stderr, "bench_gpu: out of host memory (%s dense)\n", s->name);
        exit(1);
    }
    uint8_t *src = xmalloc(nnz); /* codebook index of each weight, in order */
    dcz_sparse_builder bld;
    memset(&bld, 0, sizeof bld);
    bld.rows = s->rows;
    bld.cols = s->cols;
    bld.row_ptr = h->row_ptr;
    bld.step = h->step;
    bld.cap = (uint32_t)cap;
    bld.idx_dst = h->idx;
    bld.idx_src = src;
    h->row_ptr[0] = 0;
    h->cptr[0] = 0;
    uint32_t k = 0;
    for (uint32_t r = 0; r < s->rows; r++) {
        for (uint32_t c = 0; c < s->cols; c++) {
            if (!(rng_uniform(keep) < s->density)) continue;
            const uint64_t pos = (uint64_t)r * s->cols + c;
            src[k] = (uint8_t)(rng_next(code) & 15);
            h->ccol[k] = (int32_t)c;
            h->cval[k] = h->cb[src[k]];
            h->dense[pos] = h->cb[src[k]];
            DZ(dcz_sparse_builder_add(&bld, k, pos));
            k++;
        }
        h->cptr[r + 1] = (int32_t)k;
    }
    dcz_sparse_builder_finish(&bld);
    h->entries = bld.entries;
    free(src);
}

static void free_host_layer(host_layer *h)
{
    free(h->row_ptr); free(h->step); free(h->idx);
    free(h->cptr); free(h->ccol); free(h->cval); free(h->dense);
}

enum { M_DCZ, M_CUBLAS, M_CUSPARSE, METHODS };
static const char *const method_name[METHODS] = { "dcz", "cuBLAS", "cuSPARSE" };

/* One layer on the device, in its three forms, with its inputs and an
 * output per method. */
typedef struct dev_layer {
    dcz_gchunks g;
    uint32_t parts;               /* of a row at batch 64 (DCZ_GK_SPMM_PARTS) */
    float *xt;                    /* (cols, BATCH): the transposed input */
    float *w;                     /* dense (rows, cols) */
    int32_t *cptr, *ccol;
    float *cval;
    float *x[NBUF];               /* (BATCH, cols) each */
    float *y[METHODS];            /* (BATCH, rows) each */
    cusparseSpMatDescr_t a;
    cusparseDnVecDescr_t vx[NBUF], vy;
    cusparseDnMatDescr_t mx[NBUF], my;
    void *work1, *work64;         /* cuSPARSE's workspaces */
} dev_layer;

typedef struct gpu {
    cudaStream_t stream;
    cublasHandle_t blas;
    cusparseHandle_t sparse;
    cudaEvent_t ev[2 * RUNS];
} gpu;

static const float one = 1.0f, zero = 0.0f;

/* The device copies of h; x0 receives input buffer 0 (BATCH, cols). */
static void upload_layer(const gpu *g, const host_layer *h, rng *r, float *x0, dev_layer *d)
{
    memset(d, 0, sizeof *d);
    const dcz_gsparse hs = { h->rows, h->cols, 16, h->row_ptr, h->step, h->idx, NULL, h->cb };
    dcz_gchunks c;
    if (dcz_gk_chunks_make(&hs, &c) != 0) die("dcz_gk_chunks_make", "out of host memory", __LINE__);
    d->g = c;
    int dev = 0, sms = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    d->g.stage = dcz_gk_chunk_stage(h->rows, h->cols, c.group, (uint32_t)sms);   /* as gpu.c sets it */
    d->parts = DCZ_GK_SPMM_PARTS;
    d->g.cptr = dev_upload(c.cptr, ((size_t)h->rows + 1) * sizeof *c.cptr);
    d->g.chunk = dev_upload(c.chunk, (size_t)c.cptr[h->rows] * 16);
    d->g.codebook = dev_upload(h->cb, sizeof h->cb);
    d->xt = dev_alloc((size_t)BATCH * h->cols * sizeof(float));
    dcz_gk_chunks_free(&c);
    d->w = dev_upload(h->dense, (size_t)h->rows * h->cols * sizeof *h->dense);
    d->cptr = dev_upload(h->cptr, ((size_t)h->rows + 1) * sizeof *h->cptr);
    d->ccol = dev_upload(h->ccol, (size_t)h->nnz * sizeof *h->ccol);
    d->cval = dev_upload(h->cval, (size_t)h->nnz * sizeof *h->cval);
    const size_t xn = (size_t)BATCH * h->cols;
    float *x = xmalloc(xn * sizeof *x);
    for (int b = 0; b < NBUF; b++) {
        float *xb = b == 0 ? x0 : x;
        for (size_t i = 0; i < xn; i++) xb[i] = (float)(2.0 * rng_uniform(r) - 1.0);
        d->x[b] = dev_upload(xb, xn * sizeof *xb);
    }
    free(x);
    for (int m = 0; m < METHODS; m++) {
        d->y[m] = dev_alloc((size_t)BATCH * h->rows * sizeof(float));
        CK(cudaMemset(d->y[m], 0, (size_t)BATCH * h->rows * sizeof(float)));
    }
    CS(cusparseCreateCsr(&d->a, h->rows, h->cols, h->nnz, d->cptr, d->ccol, d->cval, CUSPARSE_INDEX_32I,
                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    /* x (BATCH, cols) row-major is B (cols, BATCH) column-major; y likewise */
    for (int b = 0; b < NBUF; b++) {
        CS(cusparseCreateDnVec(&d->vx[b], h->cols, d->x[b], CUDA_R_32F));
        CS(cusparseCreateDnMat(&d->mx[b], h->cols, BATCH, h->cols, d->x[b], CUDA_R_32F, CUSPARSE_ORDER_COL));
    }
    CS(cusparseCreateDnVec(&d->vy, h->rows, d->y[M_CUSPARSE], CUDA_R_32F));
    CS(cusparseCreateDnMat(&d->my, h->rows, BATCH, h->rows, d->y[M_CUSPARSE], CUDA_R_32F, CUSPARSE_ORDER_COL));
    size_t n1 = 0, n64 = 0;
    CS(cusparseSpMV_bufferSize(g->sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, d->a, d->vx[0], &zero, d->vy,
                               CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &n1));
    CS(cusparseSpMM_bufferSize(g->sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                               d->a, d->mx[0], &zero, d->my, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &n64));
    d->work1 = dev_alloc(n1);
    d->work64 = dev_alloc(n64);
}

static void free_dev_layer(dev_layer *d)
{
    CS(cusparseDestroySpMat(d->a));
    for (int b = 0; b < NBUF; b++) {
        CS(cusparseDestroyDnVec(d->vx[b]));
        CS(cusparseDestroyDnMat(d->mx[b]));
        CK(cudaFree(d->x[b]));
    }
    CS(cusparseDestroyDnVec(d->vy));
    CS(cusparseDestroyDnMat(d->my));
    for (int m = 0; m < METHODS; m++) CK(cudaFree(d->y[m]));
    CK(cudaFree((void *)d->g.cptr));
    CK(cudaFree((void *)d->g.chunk));
    CK(cudaFree((void *)d->g.codebook));
    CK(cudaFree(d->xt));
    CK(cudaFree(d->w));
    CK(cudaFree(d->cptr));
    CK(cudaFree(d->ccol));
    CK(cudaFree(d->cval));
    CK(cudaFree(d->work1));
    CK(cudaFree(d->work64));
}

/* One product y = W x of method on input buffer buf, enqueued on g's
 * stream; nonzero when a call fails (then nothing more is enqueued). */
static int enqueue_once(const gpu *g, const dev_layer *d, int method, int batch, int buf)
{
    const int rows = (int)d->g.rows, cols = (int)d->g.cols;
    float *y = d->y[method];
    const float *x = d->x[buf];
    switch (method) {
    case M_DCZ: {
        const dcz_act none = { 0, 0.0f, 0.0f };
        if (batch == 1) return dcz_spmv_chunks__cuda(&d->g, NULL, x, y, none, g->stream) != DCZ_OK;
        const dcz_gplace fc = { 1, (uint64_t)rows, 0, 1 };
        return dcz_transpose__cuda(x, (size_t)batch, (uint32_t)cols, d->xt, g->stream) != DCZ_OK ||
               dcz_spmm_chunks__cuda(&d->g, NULL, d->xt, (size_t)batch, y, fc, none, d->parts, g->stream) != DCZ_OK;
    }
    case M_CUBLAS:
        /* row-major W (rows, cols) is column-major W^T (cols, rows) */
        if (batch == 1)
            return cublasSgemv(g->blas, CUBLAS_OP_T, cols, rows, &one, d->w, cols, x, 1, &zero, y, 1) !=
                   CUBLAS_STATUS_SUCCESS;
        return cublasSgemm(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, rows, batch, cols, &one, d->w, cols, x, cols, &zero,
                           y, rows) != CUBLAS_STATUS_SUCCESS;
    default:
        if (batch == 1)
            return cusparseSpMV(g->sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, d->a, d->vx[buf], &zero, d->vy,
                                CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, d->work1) != CUSPARSE_STATUS_SUCCESS;
        return cusparseSpMM(g->sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                            d->a, d->mx[buf], &zero, d->my, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT,
                            d->work64) != CUSPARSE_STATUS_SUCCESS;
    }
}

static void run_once(const gpu *g, const dev_layer *d, int method, int batch, int buf)
{
    if (enqueue_once(g, d, method, batch, buf)) die(method_name[method], "its product failed", __LINE__);
}

/* Microseconds of device time a call takes where a model's graph runs it:
 * GRAPH_CALLS calls (inputs rotated) captured in one CUDA graph, the
 * median of GRAPH_REPS replays (events around each) over GRAPH_CALLS, so
 * no call waits on the host's launch; 0 when the calls cannot be
 * captured. */
#define GRAPH_CALLS 50
#define GRAPH_REPS 21
static double graph_us(const gpu *g, const dev_layer *d, int method, int batch)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    CK(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
    int bad = 0;
    for (int i = 0; i < GRAPH_CALLS && !bad; i++) bad = enqueue_once(g, d, method, batch, i % NBUF);
    const cudaError_t end = cudaStreamEndCapture(g->stream, &graph);
    if (!bad && end == cudaSuccess) bad = cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess;
    if (graph) CK(cudaGraphDestroy(graph));
    if (bad || end != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    double t[GRAPH_REPS];
    CK(cudaGraphLaunch(exec, g->stream)); /* warm-up */
    for (int i = 0; i < GRAPH_REPS; i++) {
        CK(cudaEventRecord(g->ev[0], g->stream));
        CK(cudaGraphLaunch(exec, g->stream));
        CK(cudaEventRecord(g->ev[1], g->stream));
        CK(cudaEventSynchronize(g->ev[1]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]));
        t[i] = ms * 1e3 / GRAPH_CALLS;
    }
    CK(cudaGraphExecDestroy(exec));
    qsort(t, GRAPH_REPS, sizeof *t, bench_cmp_double);
    return t[GRAPH_REPS / 2];
}

/* The median microseconds between the event pairs g->ev[2 i], g->ev[2 i +
 * 1] for i under runs (at most RUNS), recorded on g's stream around runs
 * calls. */
static double events_median_us(const gpu *g, int runs)
{
    double t[RUNS];
    CK(cudaStreamSynchronize(g->stream));
    for (int i = 0; i < runs; i++) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, g->ev[2 * i], g->ev[2 * i + 1]));
        t[i] = ms * 1e3;
    }
    qsort(t, (size_t)runs, sizeof *t, bench_cmp_double);
    return t[runs / 2];
}

/* Median microseconds of one call of method, by CUDA events. */
static double time_us(const gpu *g, const dev_layer *d, int method, int batch)
{
    for (int i = 0; i < WARMUP; i++) run_once(g, d, method, batch, i % NBUF);
    for (int i = 0; i < RUNS; i++) {
        CK(cudaEventRecord(g->ev[2 * i], g->stream));
        run_once(g, d, method, batch, i % NBUF);
        CK(cudaEventRecord(g->ev[2 * i + 1], g->stream));
    }
    return events_median_us(g, RUNS);
}

/* dcz's and cuSPARSE's products of input buffer 0 (x0 on the host) against
 * cuBLAS's, each output within TOL of its sum of |w x|; exits 1 if not. */
static void check_layer(const gpu *g, const dev_layer *d, const host_layer *h, const float *x0, int batch,
                        const char *name)
{
    const size_t n = (size_t)batch * h->rows;
    float *y[METHODS];
    for (int m = 0; m < METHODS; m++) {
        /* 3.4e38 until written (finite: beta 0 times it is 0) */
        CK(cudaMemsetAsync(d->y[m], 0x7f, n * sizeof(float), g->stream));
        run_once(g, d, m, batch, 0);
    }
    CK(cudaStreamSynchronize(g->stream));
    for (int m = 0; m < METHODS; m++) {
        y[m] = xmalloc(n * sizeof(float));
        CK(cudaMemcpy(y[m], d->y[m], n * sizeof(float), cudaMemcpyDeviceToHost));
    }
    double *mag = calloc(n, sizeof *mag);
    if (!mag) die("calloc", "out of host memory", __LINE__);
    for (uint32_t r = 0; r < h->rows; r++)
        for (int32_t e = h->cptr[r]; e < h->cptr[r + 1]; e++) {
            const double w = fabs(h->cval[e]);
            const float *xc = x0 + h->ccol[e];
            for (int b = 0; b < batch; b++) mag[(size_t)b * h->rows + r] += w * fabs(xc[(size_t)b * h->cols]);
        }
    int fail = 0;
    for (int m = 0; m < METHODS; m++) {
        if (m == M_CUBLAS) continue;
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (!(fabs((double)y[m][i] - y[M_CUBLAS][i]) <= TOL * mag[i]) && bad++ == 0) first = i;
        if (bad) {
            printf("FAIL bench_gpu: %s batch %d: %s y[%zu][%zu] = %.8g, cuBLAS %.8g (%zu of %zu outputs off by "
                   "more than %g of their sum of |w x|)\n",
                   name, batch, method_name[m], first / h->rows, first % h->rows, y[m][first],
                   y[M_CUBLAS][first], bad, n, TOL);
            fail = 1;
        }
    }
    for (int m = 0; m < METHODS; m++) free(y[m]);
    free(mag);
    if (fail) exit(1);
}

/* The copy bandwidth of n-byte buffers: bytes read + written per second
 * (two buffers of 8 MiB stay in L2; of 256 MiB, HBM's). Each time is of
 * reps copies back to back, so launch gaps weigh little. */
static double copy_bandwidth(const gpu *g, size_t n, int reps)
{
    void *a = dev_alloc(n), *b = dev_alloc(n);
    CK(cudaMemset(a, 1, n));
    CK(cudaMemset(b, 2, n));
    CK(cudaDeviceSynchronize());
    double best = 0;
    for (int i = 0; i <= COPY_REPS; i++) { /* the first one warms up */
        CK(cudaEventRecord(g->ev[0], g->stream));
        for (int k = 0; k < reps; k++) CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, g->stream));
        CK(cudaEventRecord(g->ev[1], g->stream));
        CK(cudaEventSynchronize(g->ev[1]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]));
        const double bw = 2.0 * (double)n * reps / (ms * 1e-3);
        if (i > 0 && bw > best) best = bw;
    }
    CK(cudaFree(a));
    CK(cudaFree(b));
    return best;
}

/* ---- convolutions by patches at batch 64 ------------------------------------ */

/* What a dense convolution of one group costs at batch 64 on this device,
 * piece by piece, on torchvision ResNet-18's shapes at 224 x 224: the
 * transposed patches (dcz_im2col_t__cuda), the product as gpu.c calls it
 * (C (batch pixels, oc) column-major = colt^T W^T, cuBLAS N, N) and the
 * other way round (C (oc, batch pixels) = W colt, T, T: the output
 * channels fastest, another finish), the finish (dcz_bias_act__cuda); and
 * the device's fp32 rate on a square product of 8192 (no TF32). Events
 * around each, median of CONV_RUNS after 3. */
#define CONV_RUNS 15

typedef struct conv_case {
    dcz_conv_geom g;
    float *x, *w, *bias, *colt, *prod;
} conv_case;

static void conv_op(const gpu *g, const conv_case *c, int op)
{
    const int cols = (int)(BATCH * c->g.out_h * c->g.out_w), oc = (int)c->g.out_c;
    const int k = (int)(c->g.in_c * c->g.kh * c->g.kw);
    const dcz_act relu = { DCZ_OP_RELU, 0.0f, 0.0f };
    switch (op) {
    case 0: DZ(dcz_im2col_t__cuda(&c->g, c->x, BATCH, c->colt, g->stream)); break;
    case 1: CB(cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, cols, oc, k, &one, c->colt, cols, c->w, k, &zero,
                           c->prod, cols)); break;
    case 2: CB(cublasSgemm(g->blas, CUBLAS_OP_T, CUBLAS_OP_T, oc, cols, k, &one, c->w, k, c->colt, cols, &zero,
                           c->prod, oc)); break;
    default:
        DZ(dcz_bias_act__cuda(c->prod, c->bias, BATCH, c->g.out_c, c->g.out_h * c->g.out_w, 1, relu, c->x,
                              g->stream));
    }
}

static double conv_op_us(const gpu *g, const conv_case *c, int op)
{
    for (int i = 0; i < 3; i++) conv_op(g, c, op);
    for (int i = 0; i < CONV_RUNS; i++) {
        CK(cudaEventRecord(g->ev[2 * i], g->stream));
        conv_op(g, c, op);
        CK(cudaEventRecord(g->ev[2 * i + 1], g->stream));
    }
    return events_median_us(g, CONV_RUNS);
}

static float *dev_random(rng *r, size_t n)
{
    float *h = xmalloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = (float)(2.0 * rng_uniform(r) - 1.0);
    float *d = dev_upload(h, n * sizeof *h);
    free(h);
    return d;
}

static void bench_conv_products(const gpu *g, rng *r)
{
    /* in_c, in_h, out_c, kernel, stride, pad */
    static const uint32_t shapes[][6] = {
        { 3, 224, 64, 7, 2, 3 }, { 64, 56, 64, 3, 1, 1 }, { 128, 28, 128, 3, 1, 1 }, { 256, 14, 256, 3, 1, 1 },
        { 512, 7, 512, 3, 1, 1 },
    };
    /* the ceiling: a square product */
    const int n = 8192;
    conv_case sq = { .g = { 0 } };
    sq.w = dev_random(r, (size_t)n * n);
    sq.colt = dev_random(r, (size_t)n * n);
    sq.prod = dev_alloc((size_t)n * n * sizeof(float));
    double best = 1e30;
    for (int i = 0; i < 4; i++) {
        CK(cudaEventRecord(g->ev[0], g->stream));
        CB(cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, sq.colt, n, sq.w, n, &zero, sq.prod, n));
        CK(cudaEventRecord(g->ev[1], g->stream));
        CK(cudaEventSynchronize(g->ev[1]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]));
        if (i > 0 && ms < best) best = ms;
    }
    CK(cudaFree(sq.w));
    CK(cudaFree(sq.colt));
    CK(cudaFree(sq.prod));
    printf("\nconvolutions by patches at batch %d (torchvision ResNet-18's shapes at 224 x 224; us, median of %d; "
           "fp32 rate of a %d^3 sgemm: %.1f TFLOP/s)\n", BATCH, CONV_RUNS, n, 2.0 * n * n * n / (best * 1e-3) / 1e12);
    printf("%-24s %8s %6s %9s %9s %7s %9s %7s %9s\n", "layer", "cols", "k", "im2col_t", "gemm N,N", "TFLOP/s",
           "gemm T,T", "TFLOP/s", "finish");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const uint32_t *s = shapes[i];
        const uint32_t out = (s[1] + 2 * s[5] - s[3]) / s[4] + 1;
        conv_case c = { .g = { s[0], s[1], s[1], s[2], out, out, s[3], s[3], s[4], s[4], s[5], s[5], 1 } };
        const size_t cols = (size_t)BATCH * out * out, k = (size_t)s[0] * s[3] * s[3];
        c.x = dev_random(r, (size_t)BATCH * s[0] * s[1] * s[1] > cols * s[2] ? (size_t)BATCH * s[0] * s[1] * s[1]
                                                                                : cols * s[2]);
        c.w = dev_random(r, k * s[2]);
        c.bias = dev_random(r, s[2]);
        c.colt = dev_alloc(k * cols * sizeof(float));
        c.prod = dev_alloc(cols * s[2] * sizeof(float));
        double t[4];
        for (int op = 0; op < 4; op++) t[op] = conv_op_us(g, &c, op);
        const double flop = 2.0 * (double)cols * k * s[2];
        char name[48];
        snprintf(name, sizeof name, "%ux%ux%u k%u s%u -> %u", s[0], s[1], s[1], s[3], s[4], s[2]);
        printf("%-24s %8zu %6zu %9.1f %9.1f %7.1f %9.1f %7.1f %9.1f\n", name, cols, k, t[0], t[1],
               flop / (t[1] * 1e-6) / 1e12, t[2], flop / (t[2] * 1e-6) / 1e12, t[3]);
        CK(cudaFree(c.x));
        CK(cudaFree(c.w));
        CK(cudaFree(c.bias));
        CK(cudaFree(c.colt));
        CK(cudaFree(c.prod));
    }
}

/* ---- whole models ---------------------------------------------------------- */

/* the q-quantile of sorted v (nearest rank), as dcz bench reports it */
static double quantile(const double *v, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1];
}

/* Median and p99 microseconds of dcz_run at batch 1. */
static void time_model(dcz_model *m, const float *x, float *y, double *med, double *p99)
{
    static double t[MODEL_RUNS];
    for (int i = 0; i < MODEL_WARMUP; i++) DZ(dcz_run(m, x, 1, y));
    for (int i = 0; i < MODEL_RUNS; i++) {
        const double t0 = bench_now();
        DZ(dcz_run(m, x, 1, y));
        t[i] = (bench_now() - t0) * 1e6;
    }
    qsort(t, MODEL_RUNS, sizeof *t, bench_cmp_double);
    *med = quantile(t, MODEL_RUNS, 0.5);
    *p99 = quantile(t, MODEL_RUNS, 0.99);
}

/* The models of paths on the GPU and the CPU; 1 when one cannot be
 * opened at all. */
static int bench_models(char **paths, int n, rng *r)
{
    if (n == 0) {
        printf("\nwhole models: none given (bench_gpu MODEL.dcz ... times dcz_run on the GPU and the CPU)\n");
        return 0;
    }
    printf("\nwhole models: dcz_run at batch 1, median and p99 of %d runs after %d (microseconds; CPU: its "
           "default threads)\n", MODEL_RUNS, MODEL_WARMUP);
    printf("%-36s %10s %10s %10s %10s %9s\n", "model", "GPU med", "GPU p99", "CPU med", "CPU p99", "CPU/GPU");
    for (int i = 0; i < n; i++) {
        dcz_options o;
        dcz_options_init(&o);
        o.device = DCZ_DEVICE_CPU;
        dcz_model *cpu = NULL, *dev = NULL;
        dcz_status s = dcz_open_file(paths[i], &o, &cpu);
        if (s != DCZ_OK) {
            fprintf(stderr, "bench_gpu: %s: %s\n", paths[i], dcz_status_str(s));
            return 1;
        }
        o.device = DCZ_DEVICE_GPU;
        s = dcz_open_file(paths[i], &o, &dev);
        if (s != DCZ_OK) {
            printf("%-36s not on the GPU: %s\n", paths[i], dcz_status_str(s));
            dcz_close(cpu);
            continue;
        }
        const size_t in = dcz_input_size(cpu), out = dcz_output_size(cpu);
        float *x = xmalloc(in * sizeof *x), *y = xmalloc(out * sizeof *y);
        for (size_t k = 0; k < in; k++) x[k] = (float)(2.0 * rng_uniform(r) - 1.0);
        double gmed, gp99, cmed, cp99;
        time_model(dev, x, y, &gmed, &gp99);
        time_model(cpu, x, y, &cmed, &cp99);
        printf("%-36s %10.1f %10.1f %10.1f %10.1f %8.2fx\n", paths[i], gmed, gp99, cmed, cp99, cmed / gmed);
        free(x);
        free(y);
        dcz_close(dev);
        dcz_close(cpu);
    }
    printf("(CPU/GPU: the CPU's median over the GPU's; above 1, the GPU is faster)\n");
    return 0;
}

int main(int argc, char **argv)
{
    char why[256];
    if (dcz_device_probe(DCZ_DEVICE_GPU, why, sizeof why) != DCZ_OK) {
        printf("SKIP bench_gpu: %s\n", why);
        return 0;
    }
    int dev = 0;
    CK(cudaGetDevice(&dev));
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    gpu g;
    CK(cudaStreamCreate(&g.stream));
    CB(cublasCreate(&g.blas));
    CB(cublasSetStream(g.blas, g.stream));
    CB(cublasSetMathMode(g.blas, CUBLAS_DEFAULT_MATH)); /* fp32 throughout, as dcz: no TF32 */
    CS(cusparseCreate(&g.sparse));
    CS(cusparseSetStream(g.sparse, g.stream));
    for (int i = 0; i < 2 * RUNS; i++) CK(cudaEventCreate(&g.ev[i]));
    const double bw = copy_bandwidth(&g, COPY_BYTES, 1), l2bw = copy_bandwidth(&g, L2_COPY_BYTES, 20);
    printf("bench_gpu: %s (sm_%d%d, %d SMs, %.1f GiB, L2 %d MB), copy bandwidth %.1f GB/s HBM, %.1f GB/s L2 "
           "(cudaMemcpy device to device of %zu MiB and %zu MiB, read + write, best of %d)\n",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount,
           (double)prop.totalGlobalMem / (1u << 30), prop.l2CacheSize >> 20, bw / 1e9, l2bw / 1e9,
           COPY_BYTES >> 20, L2_COPY_BYTES >> 20, COPY_REPS);
    char info[512];
    dcz_gpu_build_info(info, sizeof info);
    printf("libdcz %s\n", info);
    printf("layers: CUDA events around each call, median of %d after %d, inputs rotated over %d buffers\n\n", RUNS,
           WARMUP, NBUF);

    const shape shapes[] = {
        { "lenet-fc1", 300, 784, 0.08 },   { "lenet-fc2", 100, 300, 0.08 }, { "lenet-fc3", 10, 100, 0.26 },
        { "alex-6", 4096, 9216, 0.09 },    { "alex-7", 4096, 4096, 0.09 },  { "alex-8", 1000, 4096, 0.25 },
        { "vgg-6", 4096, 25088, 0.04 },    { "vgg-7", 4096, 4096, 0.04 },   { "vgg-8", 1000, 4096, 0.23 },
    };
    printf("%-10s %11s %7s %5s %-6s %8s %8s %8s | %8s %8s %8s %9s %11s %9s %6s %6s\n", "layer", "shape", "density",
           "batch", "run", "dcz", "cublas", "cusparse", "dcz", "cublas", "cusparse", "vs cublas", "vs cusparse",
           "dcz GB/s", "of HBM", "of L2");
    printf("%-43s %-26s | %s\n", "", "one call (us)", "in a graph (us a call)");
    rng keep = { 1 }, code = { 2 }, input = { 3 };
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const shape *s = &shapes[si];
        host_layer h;
        dev_layer d;
        build_layer(s, &keep, &code, &h);
        float *x0 = xmalloc((size_t)BATCH * s->cols * sizeof *x0);
        upload_layer(&g, &h, &input, x0, &d);
        free(h.dense); /* on the device now */
        h.dense = NULL;
        char shp[32];
        snprintf(shp, sizeof shp, "%ux%u", s->rows, s->cols);
        const double density = (double)h.nnz / ((double)s->rows * s->cols);
        /* what dcz_run does with such a layer (gpu.h: dcz_gpu_pick) */
        const int wide = density >= DCZ_GPU_DENSE_DENSITY;
        /* the chunk form: a pointer a row, 16 bytes a chunk */
        const dcz_gsparse hs = { h.rows, h.cols, 16, h.row_ptr, h.step, h.idx, NULL, h.cb };
        const double form = ((double)s->rows + 1) * 4.0 + (double)dcz_gk_chunk_count(&hs) * 16.0;
        for (int bi = 0; bi < 2; bi++) {
            const int batch = bi == 0 ? 1 : BATCH;
            check_layer(&g, &d, &h, x0, batch, s->name);
            double t[METHODS], tg[METHODS];
            for (int m = 0; m < METHODS; m++) {
                t[m] = time_us(&g, &d, m, batch);
                tg[m] = graph_us(&g, &d, m, batch);
            }
            const double bytes = form + (double)batch * ((double)s->cols + s->rows) * 4.0;
            const double rate = bytes / (tg[M_DCZ] * 1e-6);
            printf("%-10s %11s %6.1f%% %5d %-6s %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f %8.2fx %10.2fx %9.1f %5.1f%% "
                   "%5.1f%%\n",
                   s->name, shp, density * 100, batch, batch == 1 ? "spmv" : wide ? "sgemm" : "spmm", t[M_DCZ],
                   t[M_CUBLAS], t[M_CUSPARSE], tg[M_DCZ], tg[M_CUBLAS], tg[M_CUSPARSE], tg[M_CUBLAS] / tg[M_DCZ],
                   tg[M_CUSPARSE] / tg[M_DCZ], rate / 1e9, rate / bw * 100, rate / l2bw * 100);
            /* the other choices beside the runtime's (in a graph): lanes a
             * row at batch 1, parts of a row at batch 64 */
            uint32_t *knob = batch == 1 ? &d.g.group : &d.parts;
            const uint32_t pick = *knob, most = batch == 1 ? 32 : 8;
            printf("%-10s %s:", "", batch == 1 ? "lanes a row" : "parts a row");
            for (uint32_t v = 1; v <= most; v <<= 1) {
                *knob = v;
                printf(" %u%s %.2f", v, v == pick ? "*" : "", graph_us(&g, &d, M_DCZ, batch));
            }
            *knob = pick;
            printf("  (us a call in a graph; * the runtime's)\n");
            if (batch == 1 && d.g.cols <= DCZ_GK_STAGE_COLS) {
                /* the input staged in shared memory (the rule's here) or read where it lies */
                const uint32_t staged = d.g.stage;
                printf("%-10s input staged:", "");
                for (uint32_t v = 0; v <= 1; v++) {
                    d.g.stage = v;
                    printf(" %s%s %.2f", v ? "yes" : "no", v == staged ? "*" : "", graph_us(&g, &d, M_DCZ, batch));
                }
                d.g.stage = staged;
                printf("\n");
            }
            fflush(stdout);
        }
        free_dev_layer(&d);
        free_host_layer(&h);
        free(x0);
    }
    printf("\n(run: what dcz_run uses for such a layer: dcz_spmv_chunks__cuda, dcz_spmm_chunks__cuda, or cuBLAS sgemm on a\n"
           " dense copy at %.0f%% density and above; the dcz columns always time dcz's own kernels.\n"
           " one call: events around each call, the host's launch included; in a graph: the device's time a\n"
           " call, as a model's graph replays it (0: the calls could not be captured). vs: the baseline's\n"
           " time in a graph over dcz's, above 1 dcz is faster. dcz GB/s: the bytes it must move at the\n"
           " least (the chunk form once, inputs, outputs) per second in a graph; of HBM, of L2: that as a\n"
           " share of each copy bandwidth. Outputs of dcz and cuSPARSE checked against cuBLAS.)\n",
           DCZ_GPU_DENSE_DENSITY * 100);

    bench_conv_products(&g, &input);
    const int rc = bench_models(argv + 1, argc - 1, &input);
    for (int i = 0; i < 2 * RUNS; i++) CK(cudaEventDestroy(g.ev[i]));
    CS(cusparseDestroy(g.sparse));
    CB(cublasDestroy(g.blas));
    CK(cudaStreamDestroy(g.stream));
    return rc;
}

#endif /* DCZ_CUDA */
