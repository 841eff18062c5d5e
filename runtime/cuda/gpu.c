/* gpu.c: a loaded model on a CUDA device (gpu.h): the upload, the
 * activation buffers on the device, the batch-1 CUDA graph, cuBLAS for
 * dense weights, and the operator table's GPU entries.
 *
 * Built only with the CUDA backend (the Makefile's CUDA toggle). The
 * model's CPU execution form is uploaded as it is; the activations of a
 * run live in one device block laid out as the CPU's activation block
 * (each tensor at m->tensors[t].off floats a sample) followed by its chunk
 * block (the inner tensors, there for the whole batch: the device runs
 * each layer on the whole batch), grown to the largest batch run.
 * A batch-1 run copies the input into a pinned host buffer and replays a
 * graph that copies it in and runs every layer, the last one writing the
 * output into a pinned host buffer; the graph is captured on the first
 * batch-1 run and again after the block moves. A RELU or CLIP the loader
 * fused into the layer before (load.c) runs in that layer's kernel, or
 * right after it in place.
 *
 * A calibrated model of an 8-bit scheme runs its integer region as the CPU
 * does (run.c), on int8 values: each of its tensors holds int8 at the
 * tensor's place in the block, the region's input is quantized once into
 * its own buffer, weighted layers requantize their int32 sums (or make the
 * region's last one float), and the other ops take the operator table's
 * integer GPU entries. 16-bit fixed point, whose sums need 64 bits, stays
 * on the CPU.
 *
 * Checked on a GPU by tests/unit/test_gpu.c (every corpus model and the
 * kernel grid against the CPU reference); without one that test reports
 * SKIP.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda/gpu.h"
#include "runtime/model.h"

/* cuBLAS's workspace, given to it so that a captured graph allocates
 * nothing (32 MiB: what NVIDIA advises for Hopper). */
#define BLAS_WORKSPACE ((size_t)32 << 20)

typedef struct gpu_layer {
    dcz_gpu_kernel kernel;
    dcz_gsparse sp;           /* the compressed weight of a grouped convolution (the direct
                                 kernel's) */
    dcz_gchunks ch;           /* the compressed weight of any other layer, in the chunk form */
    const float *w;           /* dense weight (dense layers; the dense copy of a compressed one,
                                 once a batch needs it: dense_copies) */
    const float *bias;        /* or NULL */
    dcz_gqsparse qs;          /* integer region: int8 weights */
    dcz_gqout qo;             /* its bias and requantization or scales (y set per run) */
    const int8_t *table;      /* integer region: an activation's table */
} gpu_layer;

struct dcz_gpu {
    cudaStream_t stream;
    cublasHandle_t blas;
    uint32_t sms;             /* the device's multiprocessors (dcz_gk_chunk_stage) */
    gpu_layer *layers;        /* (nlayers) */
    void **mem;               /* every device allocation of the weights */
    size_t nmem, capmem;
    void *workspace;          /* cuBLAS's */
    float *act;               /* (act_batch, act_width + chunk_width) */
    float *in;                /* (act_batch, in_size) */
    size_t act_batch;
    int8_t *qin;              /* (act_batch, max_width): the integer region's input */
    float *col;               /* im2col patches (int8 ones in the integer region), or a
                                 compressed fully connected layer's input transposed: as
                                 many as a run of up to act_batch samples needs
                                 (scratch_floats) */
    float *prod;              /* a cuBLAS product over a batch's patches, (out_c, batch, pixels),
                                 before its finish lays it out (prod_floats) */
    float *h_in, *h_out;      /* pinned: the batch-1 input and output */
    cudaGraphExec_t graph1;   /* the batch-1 run, or NULL */
};

static dcz_status cu(cudaError_t e)
{
    if (e == cudaSuccess) return DCZ_OK;
    return e == cudaErrorMemoryAllocation ? DCZ_ERR_NOMEM : DCZ_ERR_DEVICE;
}

static dcz_status blas(cublasStatus_t e)
{
    if (e == CUBLAS_STATUS_SUCCESS) return DCZ_OK;
    return e == CUBLAS_STATUS_ALLOC_FAILED ? DCZ_ERR_NOMEM : DCZ_ERR_DEVICE;
}

#define TRY(x) do { dcz_status s_ = (x); if (s_ != DCZ_OK) return s_; } while (0)

dcz_status dcz_gpu_probe(char *why, size_t why_len)
{
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) {
        struct cudaDeviceProp p;
        if (why && cudaGetDeviceProperties(&p, 0) == cudaSuccess)
            snprintf(why, why_len, "%s (compute capability %d.%d)", p.name, p.major, p.minor);
        return DCZ_OK;
    }
    if (!why) return DCZ_ERR_DEVICE;
    /* the driver's CUDA version: 0 where no NVIDIA driver is installed */
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (driver == 0)
        snprintf(why, why_len, "no NVIDIA GPU or driver found");
    else if (e == cudaErrorInsufficientDriver)
        snprintf(why, why_len, "the NVIDIA driver supports CUDA %d.%d, older than this build's CUDA %d.%d: update the driver",
                 driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    else if (e == cudaSuccess || e == cudaErrorNoDevice)
        snprintf(why, why_len, "no NVIDIA GPU found (driver for CUDA %d.%d)", driver / 1000, driver % 1000 / 10);
    else
        snprintf(why, why_len, "no CUDA device (%s)", cudaGetErrorString(e));
    return DCZ_ERR_DEVICE;
}

void dcz_gpu_build_info(char *buf, size_t len)
{
    char why[160];
    const dcz_status s = dcz_gpu_probe(why, sizeof why);
    snprintf(buf, len, "CUDA backend: built for %s (CUDA %d.%d, cuBLAS); %s%s", DCZ_CUDA_TARGETS,
             CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, s == DCZ_OK ? "GPU: " : "", why);
}

/* n bytes on the device, kept in g's list for dcz_gpu_close. */
static dcz_status device_alloc(dcz_gpu *g, size_t n, void **out)
{
    *out = NULL;
    if (g->nmem == g->capmem) {
        const size_t cap = g->capmem ? 2 * g->capmem : 16;
        void **m = realloc(g->mem, cap * sizeof *m);
        if (!m) return DCZ_ERR_NOMEM;
        g->mem = m;
        g->capmem = cap;
    }
    TRY(cu(cudaMalloc(out, n ? n : 1)));
    g->mem[g->nmem++] = *out;
    return DCZ_OK;
}

/* A copy of n bytes of host memory h on the device (NULL for h NULL). */
static dcz_status upload(dcz_gpu *g, const void *h, size_t n, const void **out)
{
    *out = NULL;
    if (!h) return DCZ_OK;
    void *d;
    TRY(device_alloc(g, n, &d));
    TRY(cu(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice)));
    *out = d;
    return DCZ_OK;
}

/* The dense (rows, cols) matrix of a compressed one, on the host. */
static float *expand(const dcz_sparse *s)
{
    float *w = malloc((size_t)s->rows * s->cols * sizeof *w);
    if (w) dcz_sparse_expand(s, w);
    return w;
}

/* Floats (or int8 cells) of patches layer l, whose kernel is k, needs
 * in a launch of batch samples: 0 where it reads its input as it lies. */
static uint64_t layer_patches(const dcz_exec_layer *l, dcz_gpu_kernel k, size_t batch)
{
    if (l->op != DCZ_OP_CONV2D || !dcz_gpu_by_patches(l, k, batch)) return 0;
    const dcz_conv_geom *c = &l->geom;
    return (uint64_t)batch * c->out_h * c->out_w * c->in_c * c->kh * c->kw;
}

/* Floats (or int8 cells) of patches the layers of m need in a run of up to
 * batch samples: the most any one layer needs at any batch up to that.
 * A layer's need grows with the batch but for a step down where a large
 * launch leaves the patches (a direct kernel, a pointwise product on a
 * dense copy): the batch just under that step is weighed too. */
static uint64_t patch_floats(const dcz_model *m, size_t batch)
{
    uint64_t most = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const dcz_exec_layer *l = &m->layers[i];
        const dcz_gpu_kernel k = m->gpu->layers[i].kernel;
        if (l->op != DCZ_OP_CONV2D) continue;
        const dcz_conv_geom *c = &l->geom;
        const uint64_t outputs = (uint64_t)c->out_c * c->out_h * c->out_w;
        const uint64_t under = outputs ? (DCZ_GPU_DIRECT_MIN_OUTPUTS - 1) / outputs : 0;
        uint64_t n = layer_patches(l, k, batch);
        if (under >= 1 && under < batch && layer_patches(l, k, under) > n) n = layer_patches(l, k, under);
        if (n > most) most = n;
    }
    return most;
}

/* Floats of scratch a run of up to batch samples needs: the patches, or
 * the transposed input of a compressed fully connected layer above batch
 * 1 (dcz_spmm_chunks__cuda). */
static uint64_t scratch_floats(const dcz_model *m, size_t batch)
{
    uint64_t most = patch_floats(m, batch);
    for (uint32_t i = 0; batch > 1 && i < m->nlayers; i++)
        if (m->gpu->layers[i].kernel == DCZ_GK_SPARSE_FC && (uint64_t)batch * m->layers[i].in > most)
            most = (uint64_t)batch * m->layers[i].in;
    return most;
}

/* Floats of a cuBLAS product over the patches of a batch of up to batch
 * samples (dcz_gpu_run_conv2d): above batch 1, a convolution of one group
 * on cuBLAS by patches writes its product there first. A layer takes that
 * path at every batch above 1 once it does at one (dcz_gpu_dense_copy
 * grows with the batch; a pointwise layer on a dense copy reads its input
 * as it lies), so batch itself sizes it. */
static uint64_t prod_floats(const dcz_model *m, size_t batch)
{
    uint64_t most = 0;
    for (uint32_t i = 0; batch > 1 && i < m->nlayers; i++) {
        const dcz_exec_layer *l = &m->layers[i];
        const dcz_gpu_kernel k = m->gpu->layers[i].kernel;
        if (l->op != DCZ_OP_CONV2D || l->q || !dcz_gpu_by_patches(l, k, batch) ||
            (k != DCZ_GK_CONV_DENSE && !dcz_gpu_dense_copy(l, k, batch)))
            continue;
        const uint64_t n = (uint64_t)batch * l->geom.out_c * l->geom.out_h * l->geom.out_w;
        if (n > most) most = n;
    }
    return most;
}

/* A compressed matrix's rows on the device, as the execution form holds
 * them: row pointers (rows + 1), column steps and codebook indices
 * (entries each; idx NULL without a codebook). */
static dcz_status upload_rows(dcz_gpu *g, uint32_t rows, uint32_t entries, const uint32_t *row_ptr,
                              const uint8_t *step, const uint8_t *idx, const uint32_t **d_row_ptr,
                              const uint8_t **d_step, const uint8_t **d_idx)
{
    const void *p;
    TRY(upload(g, row_ptr, ((size_t)rows + 1) * sizeof *row_ptr, &p));
    *d_row_ptr = p;
    TRY(upload(g, step, entries, &p));
    *d_step = p;
    TRY(upload(g, idx, entries, &p));
    *d_idx = p;
    return DCZ_OK;
}

/* n int16 values of an 8-bit scheme (within +-127) as int8, on the device. */
static dcz_status upload_i8(dcz_gpu *g, const int16_t *h, size_t n, const int8_t **out)
{
    *out = NULL;
    if (!h) return DCZ_OK;
    int8_t *t = malloc(n ? n : 1);
    if (!t) return DCZ_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) t[i] = (int8_t)h[i];
    const void *p;
    const dcz_status s = upload(g, t, n, &p);
    free(t);
    *out = p;
    return s;
}

/* The kernels of the operators on the device, float and integer (the
 * table at the end of this file; NULL where the op has none). */
typedef dcz_status (*gpu_fn)(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch, float *y);
typedef dcz_status (*gpu_qfn)(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y);
typedef struct gpu_op_kernels {
    gpu_fn run;
    gpu_qfn run_q;
} gpu_op_kernels;
static gpu_op_kernels gpu_op(uint16_t op);

/* Integer layer i of m (the 8-bit schemes) on the device: a weighted
 * layer's int8 weights, int32 biases and its requantization (or, the
 * region's last, its float scales); an activation's table. */
static dcz_status upload_qlayer(dcz_gpu *g, const dcz_model *m, uint32_t i)
{
    const dcz_exec_layer *l = &m->layers[i];
    gpu_layer *gl = &g->layers[i];
    gl->kernel = (dcz_gpu_kernel)l->gpu_kernel;
    if (!gpu_op(l->op).run_q) return DCZ_ERR_UNSUPPORTED;
    if (l->table && dcz_op_get(l->op)->qscale == DCZ_QS_TABLE)   /* a Concat's tables are the CPU's */
        return upload_i8(g, l->table, 2 * (size_t)m->qmax + 1, &gl->table);
    if (l->op == DCZ_OP_GLOBAL_AVGPOOL && 127.0 * l->geom.in_h * l->geom.in_w >= 0x1p31)
        return DCZ_ERR_UNSUPPORTED;   /* a plane's sum would not fit the int32 dcz_gk_qmean requantizes */
    if (gl->kernel == DCZ_GK_ELEMENT) return DCZ_OK;
    const dcz_qsparse *q = &l->qs;
    dcz_gqsparse *d = &gl->qs;
    const void *p;
    d->rows = q->rows;
    d->cols = q->cols;
    d->k = q->idx ? q->k : 0;
    TRY(upload_rows(g, q->rows, q->entries, q->row_ptr, q->step, q->idx, &d->row_ptr, &d->step, &d->idx));
    TRY(upload_i8(g, q->idx ? q->qtab : NULL, (size_t)q->rows * q->k, &d->qtab));
    TRY(upload_i8(g, q->idx ? NULL : q->qval, q->entries, &d->qval));
    /* every sum of an 8-bit scheme, the bias in it, fits 32 bits (qload.c) */
    int32_t *bias = malloc((size_t)l->channels * sizeof *bias + 1);
    if (!bias) return DCZ_ERR_NOMEM;
    for (uint32_t c = 0; c < l->channels; c++) bias[c] = (int32_t)l->qbias[c];
    dcz_status s = upload(g, bias, (size_t)l->channels * sizeof *bias, &p);
    free(bias);
    TRY(s);
    gl->qo.bias = p;
    gl->qo.qmax = m->qmax;
    if (i == m->q_last) {
        TRY(upload(g, l->out_scale, (size_t)l->channels * sizeof(double), &p));
        gl->qo.scale = p;
    } else {
        TRY(upload(g, l->rq_mult, (size_t)l->channels * sizeof(int32_t), &p));
        gl->qo.mult = p;
        TRY(upload(g, l->rq_shift, l->channels, &p));
        gl->qo.shift = p;
    }
    return DCZ_OK;
}

/* The chunk form of s (gpu_kern.h: dcz_gchunks), made on the host and
 * uploaded; its codebook at codebook (on the device already). */
static dcz_status upload_chunks(dcz_gpu *g, const dcz_sparse *s, const float *codebook, dcz_gchunks *d)
{
    const dcz_gsparse hs = { s->rows, s->cols, s->k, s->row_ptr, s->step, s->idx, s->val, s->codebook };
    dcz_gchunks h;
    if (dcz_gk_chunks_make(&hs, &h) != 0) return DCZ_ERR_NOMEM;
    const size_t n = h.cptr[s->rows];
    const void *cptr = NULL, *chunk = NULL, *val = NULL;
    dcz_status st = upload(g, h.cptr, ((size_t)s->rows + 1) * sizeof *h.cptr, &cptr);
    if (st == DCZ_OK) st = upload(g, h.chunk, n * 16, &chunk);
    if (st == DCZ_OK) st = upload(g, h.val, n * DCZ_GK_CHUNK * sizeof *h.val, &val);
    *d = (dcz_gchunks){ s->rows, s->cols, s->k, h.group, dcz_gk_chunk_stage(s->rows, s->cols, h.group, g->sms),
                        cptr, chunk, codebook, val };
    dcz_gk_chunks_free(&h);
    return st;
}

/* Layer i's weights on the device, by the kernel dcz_gpu_pick chose. */
static dcz_status upload_layer(dcz_gpu *g, const dcz_model *m, uint32_t i)
{
    const dcz_exec_layer *l = &m->layers[i];
    gpu_layer *gl = &g->layers[i];
    gl->kernel = (dcz_gpu_kernel)l->gpu_kernel;
    if (gl->kernel == DCZ_GK_ELEMENT) return DCZ_OK;
    const uint32_t rows = l->op == DCZ_OP_CONV2D ? l->geom.out_c : l->out;
    const void *p;
    TRY(upload(g, l->bias, (size_t)rows * sizeof(float), &p));
    gl->bias = p;
    if (!l->sparse) {
        const size_t cells = l->op == DCZ_OP_CONV2D
                                 ? (size_t)rows * dcz_conv_group_in(&l->geom) * l->geom.kh * l->geom.kw
                                 : (size_t)l->out * l->in;
        TRY(upload(g, l->w, cells * sizeof(float), &p));
        gl->w = p;
        return DCZ_OK;
    }
    const dcz_sparse *s = &l->sp;
    dcz_gsparse *d = &gl->sp;
    TRY(upload(g, s->idx ? s->codebook : NULL, (size_t)s->k * sizeof(float), &p));
    const float *codebook = p;
    /* grouped convolutions run direct (the execution form; those dense
     * enough on a dense copy alone), everything else on the chunk form (a
     * dense copy comes when a batch needs it: dense_copies) */
    if (gl->kernel == DCZ_GK_CONV_DIRECT_WIDE) return DCZ_OK;
    if (gl->kernel != DCZ_GK_CONV_DIRECT) return upload_chunks(g, s, codebook, &gl->ch);
    d->rows = s->rows;
    d->cols = s->cols;
    d->k = s->k;
    d->codebook = codebook;
    TRY(upload_rows(g, s->rows, s->entries, s->row_ptr, s->step, s->idx, &d->row_ptr, &d->step, &d->idx));
    TRY(upload(g, s->val, (size_t)s->entries * sizeof(float), &p));
    d->val = p;
    return DCZ_OK;
}

/* The dense copies of compressed weights that the layers of m run on in
 * launches of up to batch samples (dcz_gpu_dense_copy), each made the
 * first time a batch needs it. */
static dcz_status dense_copies(dcz_model *m, size_t batch)
{
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const dcz_exec_layer *l = &m->layers[i];
        gpu_layer *gl = &m->gpu->layers[i];
        if (gl->w || l->q || !dcz_gpu_dense_copy(l, gl->kernel, batch)) continue;
        float *w = expand(&l->sp);
        if (!w) return DCZ_ERR_NOMEM;
        const void *p;
        const dcz_status st = upload(m->gpu, w, (size_t)l->sp.rows * l->sp.cols * sizeof(float), &p);
        free(w);
        TRY(st);
        gl->w = p;
    }
    return DCZ_OK;
}

dcz_status dcz_gpu_open(dcz_model *m)
{
    if (m->scheme == DCZ_SCHEME_FIXED16) return DCZ_ERR_UNSUPPORTED; /* 64-bit sums: the CPU's */
    dcz_gpu *g = calloc(1, sizeof *g);
    if (!g) return DCZ_ERR_NOMEM;
    m->gpu = g;
    dcz_status s = DCZ_OK;
    g->layers = calloc(m->nlayers ? m->nlayers : 1, sizeof *g->layers);
    if (!g->layers) s = DCZ_ERR_NOMEM;
    int dev = 0, sms = 0;
    if (s == DCZ_OK) s = cu(cudaGetDevice(&dev));
    if (s == DCZ_OK) s = cu(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    g->sms = (uint32_t)sms;
    if (s == DCZ_OK) s = cu(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    if (s == DCZ_OK) s = blas(cublasCreate(&g->blas));
    if (s == DCZ_OK) s = blas(cublasSetStream(g->blas, g->stream));
    if (s == DCZ_OK) s = cu(cudaMalloc(&g->workspace, BLAS_WORKSPACE));
    if (s == DCZ_OK) s = blas(cublasSetWorkspace(g->blas, g->workspace, BLAS_WORKSPACE));
    for (uint32_t i = 0; s == DCZ_OK && i < m->nlayers; i++)
        s = m->layers[i].q ? upload_qlayer(g, m, i) : upload_layer(g, m, i);
    if (s == DCZ_OK) s = cu(cudaMallocHost((void **)&g->h_in, (size_t)m->in_size * sizeof(float)));
    if (s == DCZ_OK) s = cu(cudaMallocHost((void **)&g->h_out, (size_t)m->out_size * sizeof(float)));
    if (s != DCZ_OK) dcz_gpu_close(m);
    return s;
}

void *dcz_gpu_host_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaMallocHost(&p, bytes ? bytes : 1) == cudaSuccess ? p : NULL;
}

void dcz_gpu_host_free(void *p)
{
    cudaFreeHost(p);
}

void dcz_gpu_close(dcz_model *m)
{
    dcz_gpu *g = m ? m->gpu : NULL;
    if (!g) return;
    if (g->graph1) cudaGraphExecDestroy(g->graph1);
    for (size_t i = 0; i < g->nmem; i++) cudaFree(g->mem[i]);
    cudaFree(g->act);
    cudaFree(g->in);
    cudaFree(g->qin);
    cudaFree(g->col);
    cudaFree(g->prod);
    cudaFree(g->workspace);
    cudaFreeHost(g->h_in);
    cudaFreeHost(g->h_out);
    if (g->blas) cublasDestroy(g->blas);
    if (g->stream) cudaStreamDestroy(g->stream);
    free(g->mem);
    free(g->layers);
    free(g);
    m->gpu = NULL;
}

/* The device buffers of batch samples; a move drops the captured graph. */
static dcz_status ensure_batch(dcz_model *m, size_t batch)
{
    dcz_gpu *g = m->gpu;
    if (batch <= g->act_batch) return DCZ_OK;
    TRY(dense_copies(m, batch));
    const uint64_t col = scratch_floats(m, batch), prod = prod_floats(m, batch);
    if (batch > SIZE_MAX / sizeof(float) / (m->act_width + m->chunk_width + m->in_size) ||
        col > SIZE_MAX / sizeof(float) || prod > SIZE_MAX / sizeof(float))
        return DCZ_ERR_NOMEM;
    if (g->graph1) cudaGraphExecDestroy(g->graph1);
    g->graph1 = NULL;
    cudaFree(g->act);
    cudaFree(g->in);
    cudaFree(g->qin);
    cudaFree(g->col);
    cudaFree(g->prod);
    g->act = g->in = g->col = g->prod = NULL;
    g->qin = NULL;
    g->act_batch = 0;
    TRY(cu(cudaMalloc((void **)&g->act, batch * (m->act_width + m->chunk_width) * sizeof(float))));
    TRY(cu(cudaMalloc((void **)&g->in, batch * m->in_size * sizeof(float))));
    if (m->scheme != DCZ_SCHEME_NONE) TRY(cu(cudaMalloc((void **)&g->qin, batch * m->max_width)));
    if (col) TRY(cu(cudaMalloc((void **)&g->col, col * sizeof(float))));
    if (prod) TRY(cu(cudaMalloc((void **)&g->prod, prod * sizeof(float))));
    g->act_batch = batch;
    return DCZ_OK;
}

/* Tensor t of a run of batch samples on the device. */
static float *device_tensor(const dcz_model *m, uint32_t t, size_t batch)
{
    const dcz_tensor *x = &m->tensors[t];
    return t == 0 ? m->gpu->in : m->gpu->act + ((x->inner ? m->act_width : 0) + x->off) * batch;
}

/* Whether layer l runs apart on the device: not a RELU or CLIP the layer
 * before applies (gpu_act). */
static int runs_apart(const dcz_exec_layer *l)
{
    return l->q || l->fused != DCZ_FUSED_ACT;
}

/* Every layer, enqueued on the stream; the integer region's as run.c's
 * run_batch runs it: its float input quantized once, where it starts, for
 * every layer of the region that reads it. Where out is not NULL (pinned
 * host memory, which a kernel writes directly), the last layer that runs
 * writes the model's output there: no copy after it (a copy where no
 * layer runs at all). */
static dcz_status enqueue_layers(const dcz_model *m, size_t batch, float *out, cudaEvent_t *marks)
{
    uint32_t last = m->nlayers;
    while (last > 0 && !runs_apart(&m->layers[last - 1])) last--;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const dcz_exec_layer *l = &m->layers[i];
        if (marks) TRY(cu(cudaEventRecord(marks[i], m->gpu->stream)));
        if (!runs_apart(l)) continue;
        const gpu_op_kernels o = gpu_op(l->op);
        const void *xs[DCZ_MAX_INPUTS];
        for (uint32_t k = 0; k < l->nin; k++) xs[k] = device_tensor(m, l->tin[k], batch);
        float *y = out && i + 1 == last ? out : device_tensor(m, i + 1, batch);
        if (!l->q) {
            TRY(o.run(m, i, (const float *const *)xs, batch, y));
            continue;
        }
        if (i == m->q_first)
            TRY(dcz_quantize__cuda(xs[0], batch * l->in, l->in_scale, m->qmax, m->gpu->qin, m->gpu->stream));
        for (uint32_t k = 0; k < l->nin; k++)
            if (l->tin[k] == m->q_in) xs[k] = m->gpu->qin;
        TRY(o.run_q(m, i, xs, batch, y));
    }
    if (marks) TRY(cu(cudaEventRecord(marks[m->nlayers], m->gpu->stream)));
    if (!out || last > 0) return DCZ_OK;
    return cu(cudaMemcpyAsync(out, device_tensor(m, m->nlayers, batch), batch * m->out_size * sizeof(float),
                              cudaMemcpyDefault, m->gpu->stream));
}

/* The batch-1 graph: input in, every layer, the last one writing the
 * output straight into pinned host memory (unified addressing: its
 * device address is its host address), where a copy after it would be
 * one more node to wait for. */
static dcz_status capture_batch1(dcz_model *m)
{
    dcz_gpu *g = m->gpu;
    cudaGraph_t graph = NULL;
    TRY(cu(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal)));
    dcz_status s = cu(cudaMemcpyAsync(g->in, g->h_in, (size_t)m->in_size * sizeof(float),
                                      cudaMemcpyHostToDevice, g->stream));
    if (s == DCZ_OK) s = enqueue_layers(m, 1, g->h_out, NULL);
    const dcz_status end = cu(cudaStreamEndCapture(g->stream, &graph));
    if (s == DCZ_OK) s = end;
    if (s == DCZ_OK) s = cu(cudaGraphInstantiate(&g->graph1, graph, 0));
    if (graph) cudaGraphDestroy(graph);
    return s;
}

dcz_status dcz_gpu_run(dcz_model *m, const float *input, size_t batch, float *output)
{
    dcz_gpu *g = m->gpu;
    TRY(ensure_batch(m, batch));
    if (batch == 1) {
        memcpy(g->h_in, input, (size_t)m->in_size * sizeof(float));
        if (!g->graph1) TRY(capture_batch1(m));
        TRY(cu(cudaGraphLaunch(g->graph1, g->stream)));
        TRY(cu(cudaStreamSynchronize(g->stream)));
        memcpy(output, g->h_out, (size_t)m->out_size * sizeof(float));
        return DCZ_OK;
    }
    TRY(cu(cudaMemcpyAsync(g->in, input, batch * m->in_size * sizeof(float), cudaMemcpyHostToDevice,
                           g->stream)));
    dcz_status s = enqueue_layers(m, batch, NULL, NULL);
    if (s == DCZ_OK)
        s = cu(cudaMemcpyAsync(output, device_tensor(m, m->nlayers, batch), batch * m->out_size * sizeof(float),
                               cudaMemcpyDeviceToHost, g->stream));
    const dcz_status done = cu(cudaStreamSynchronize(g->stream));
    return s != DCZ_OK ? s : done;
}

dcz_status dcz_gpu_layer_times(dcz_model *m, const float *input, size_t batch, float *output, uint64_t *ns)
{
    dcz_gpu *g = m->gpu;
    TRY(ensure_batch(m, batch));
    cudaEvent_t *marks = calloc((size_t)m->nlayers + 1, sizeof *marks);
    if (!marks) return DCZ_ERR_NOMEM;
    dcz_status s = DCZ_OK;
    uint32_t made = 0;
    while (s == DCZ_OK && made <= m->nlayers) s = cu(cudaEventCreate(&marks[made++]));
    if (s == DCZ_OK)
        s = cu(cudaMemcpyAsync(g->in, input, batch * m->in_size * sizeof(float), cudaMemcpyHostToDevice, g->stream));
    if (s == DCZ_OK) s = enqueue_layers(m, batch, NULL, marks);
    if (s == DCZ_OK)
        s = cu(cudaMemcpyAsync(output, device_tensor(m, m->nlayers, batch), batch * m->out_size * sizeof(float),
                               cudaMemcpyDeviceToHost, g->stream));
    const dcz_status done = cu(cudaStreamSynchronize(g->stream));
    if (s == DCZ_OK) s = done;
    for (uint32_t i = 0; s == DCZ_OK && i < m->nlayers; i++) {
        float ms = 0.0f;
        s = cu(cudaEventElapsedTime(&ms, marks[i], marks[i + 1]));
        ns[i] += (uint64_t)(ms * 1e6f + 0.5f);
    }
    while (made > 0) cudaEventDestroy(marks[--made]);
    free(marks);
    return s;
}

/* ---- the operator table's GPU entries --------------------------------------- */

static const float one = 1.0f, zero = 0.0f;

/* y (batch, out) = x (batch, in) W^T, W (out, in) row-major: in
 * cuBLAS's column-major terms y^T = W^T' x^T with W^T' the (in, out)
 * matrix W is, transposed. */
static dcz_status dense_product(const dcz_model *m, const float *w, uint32_t in, uint32_t out,
                                const float *x, size_t batch, float *y)
{
    cublasHandle_t h = m->gpu->blas;
    if (batch == 1) return blas(cublasSgemv(h, CUBLAS_OP_T, (int)in, (int)out, &one, w, (int)in, x, 1, &zero, y, 1));
    return blas(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)out, (int)batch, (int)in, &one, w, (int)in, x,
                            (int)in, &zero, y, (int)out));
}

/* The place of a fully connected layer's outputs: sample after sample. */
static dcz_gplace fc_place(uint32_t rows)
{
    const dcz_gplace p = { 1, rows, 0, 1 };
    return p;
}

/* The activation layer l applies as it writes its output: the RELU or
 * CLIP after it, which the loader fused (load.c) and enqueue_layers skips;
 * not that of an ADD a convolution takes on the CPU (res: the ADD applies
 * it here). */
static dcz_act gpu_act(const dcz_exec_layer *l)
{
    const dcz_act none = { 0, 0.0f, 0.0f };
    return l->act.op && !l->res ? l->act : none;
}

static dcz_status dcz_gpu_run_dense(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch,
                             float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    const gpu_layer *gl = &m->gpu->layers[index];
    void *st = m->gpu->stream;
    const int sparse = gl->kernel == DCZ_GK_SPARSE_FC || gl->kernel == DCZ_GK_SPARSE_FC_WIDE;
    if (sparse && batch == 1) return dcz_spmv_chunks__cuda(&gl->ch, gl->bias, xs[0], y, gpu_act(l), st);
    if (sparse && !dcz_gpu_dense_copy(l, gl->kernel, batch)) {
        TRY(dcz_transpose__cuda(xs[0], batch, l->in, m->gpu->col, st));
        return dcz_spmm_chunks__cuda(&gl->ch, gl->bias, m->gpu->col, batch, y, fc_place(l->out), gpu_act(l),
                                     DCZ_GK_SPMM_PARTS, st);
    }
    TRY(dense_product(m, gl->w, l->in, l->out, xs[0], batch, y));
    return dcz_bias_act__cuda(y, gl->bias, batch, l->out, 1, 0, gpu_act(l), y, st);
}

static dcz_status dcz_gpu_run_conv2d(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch,
                              float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    const gpu_layer *gl = &m->gpu->layers[index];
    const dcz_conv_geom *g = &l->geom;
    void *st = m->gpu->stream;
    const uint32_t pixels = g->out_h * g->out_w, k = g->in_c * g->kh * g->kw;
    const size_t out_sample = (size_t)g->out_c * pixels;
    float *col = m->gpu->col;
    if (gl->kernel == DCZ_GK_CONV_DENSE_DIRECT || gl->kernel == DCZ_GK_CONV_DIRECT_WIDE)
        return dcz_conv2d_dense__cuda(g, gl->w, gl->bias, xs[0], batch, gpu_act(l), y, st);
    if (gl->kernel == DCZ_GK_CONV_DIRECT)
        return dcz_conv2d_sparse__cuda(g, &gl->sp, gl->bias, xs[0], batch, gpu_act(l), y, st);
    if (gl->kernel == DCZ_GK_CONV_DENSE || dcz_gpu_dense_copy(l, gl->kernel, batch)) {
        /* one group through cuBLAS, without the bias, which the finish adds
         * with the activation. A pointwise convolution: y_b (oc, pixels) =
         * W (oc, in_c) x_b for each sample b, x_b as it lies (column-major:
         * y_b^T = x_b^T W^T', W^T' the same for all, stride 0). Else the
         * batch's patches transposed in one launch, colt (k, batch pixels),
         * and one product over all of them, W colt (column-major: its
         * transpose colt^T W^T', colt^T the (batch pixels, k) matrix colt
         * is), (oc, batch pixels), which the finish lays out as y (straight
         * into y at batch 1). */
        if (!dcz_gpu_by_patches(l, gl->kernel, batch)) {
            TRY(blas(cublasSgemmStridedBatched(m->gpu->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)pixels, (int)g->out_c,
                                               (int)k, &one, xs[0], (int)pixels, (long long)pixels * k, gl->w,
                                               (int)k, 0, &zero, y, (int)pixels, (long long)out_sample,
                                               (int)batch)));
            return dcz_bias_act__cuda(y, gl->bias, batch, g->out_c, pixels, 0, gpu_act(l), y, st);
        }
        const int by_rows = batch > 1;
        float *prod = by_rows ? m->gpu->prod : y;
        const int cols = (int)(batch * pixels);
        TRY(dcz_im2col_t__cuda(g, xs[0], batch, col, st));
        TRY(blas(cublasSgemm(m->gpu->blas, CUBLAS_OP_N, CUBLAS_OP_N, cols, (int)g->out_c, (int)k, &one, col, cols,
                             gl->w, (int)k, &zero, prod, cols)));
        return dcz_bias_act__cuda(prod, gl->bias, batch, g->out_c, pixels, by_rows, gpu_act(l), y, st);
    }
    /* compressed, one group: the batch's patches transposed in one launch
     * (none for a pointwise layer at batch 1: its input is its patches),
     * then one product over all of them, the activation applied as it
     * writes */
    const dcz_gplace place = { pixels, out_sample, 1, pixels };
    const float *patches = xs[0];
    if (dcz_gpu_by_patches(l, gl->kernel, batch)) {
        TRY(dcz_im2col_t__cuda(g, xs[0], batch, col, st));
        patches = col;
    }
    return dcz_spmm_chunks__cuda(&gl->ch, gl->bias, patches, batch * pixels, y, place, gpu_act(l),
                                 DCZ_GK_SPMM_PARTS, st);
}

static dcz_status dcz_gpu_run_pool(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch, float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    return dcz_pool__cuda(&l->geom, l->op == DCZ_OP_AVGPOOL, l->count_include_pad, xs[0], batch, y,
                          m->gpu->stream);
}

static dcz_status dcz_gpu_run_global_avgpool(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch,
                                      float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    return dcz_global_avgpool__cuda(l->geom.in_c, l->geom.in_h * l->geom.in_w, xs[0], batch, y, m->gpu->stream);
}

static dcz_status dcz_gpu_run_copy(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch, float *y)
{
    if (y == xs[0]) return DCZ_OK;
    return cu(cudaMemcpyAsync(y, xs[0], batch * m->layers[index].in * sizeof(float), cudaMemcpyDefault,
                              m->gpu->stream));
}

static dcz_status dcz_gpu_run_activation(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch,
                                  float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    return dcz_activation__cuda(l->op, l->param, xs[0], batch * l->in, y, m->gpu->stream);
}

static dcz_status dcz_gpu_run_softmax(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch,
                               float *y)
{
    return dcz_softmax__cuda(xs[0], batch, m->layers[index].in, y, m->gpu->stream);
}

static dcz_status dcz_gpu_run_add(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch, float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    return dcz_add__cuda(xs[0], xs[1], batch * l->in, gpu_act(l), y, m->gpu->stream);
}

static dcz_status dcz_gpu_run_mul(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch, float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    const uint32_t factors = m->tensors[l->tin[1]].width;
    return dcz_mul__cuda(xs[0], xs[1], batch, factors, l->in / factors, y, m->gpu->stream);
}

static dcz_status dcz_gpu_run_concat(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch,
                              float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    uint32_t width[DCZ_MAX_INPUTS];
    for (uint32_t k = 0; k < l->nin; k++) width[k] = m->tensors[l->tin[k]].width;
    return dcz_concat__cuda(xs, width, l->nin, batch, y, m->gpu->stream);
}

static dcz_status dcz_gpu_run_gather(const dcz_model *m, uint32_t index, const float *const *xs, size_t batch,
                                     float *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    return dcz_gather__cuda(&l->geom, l->gather_start, l->gather_groups, xs[0], sizeof *y, batch, y, m->gpu->stream);
}

/* ---- the operator table's integer GPU entries ----------------------------------- */

static dcz_status dcz_gpu_qrun_weighted(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    const gpu_layer *gl = &m->gpu->layers[index];
    const dcz_conv_geom *g = &l->geom;
    void *st = m->gpu->stream;
    dcz_gqout o = gl->qo;   /* the layer's output finisher, writing to y */
    o.y = y;
    if (gl->kernel == DCZ_GK_QFC) return dcz_qspmm__cuda(&gl->qs, &o, xs[0], batch, fc_place(l->out), st);
    if (!dcz_gpu_by_patches(l, gl->kernel, batch)) return dcz_qconv2d__cuda(g, &gl->qs, &o, xs[0], batch, st);
    /* small planes, one group: the batch's patches, then one product */
    const uint32_t pixels = g->out_h * g->out_w;
    int8_t *col = (int8_t *)m->gpu->col;
    TRY(dcz_qim2col__cuda(g, (const int8_t *)xs[0], batch, col, st));
    const dcz_gplace place = { pixels, (uint64_t)g->out_c * pixels, 1, pixels };
    return dcz_qspmm__cuda(&gl->qs, &o, col, batch * pixels, place, st);
}

static dcz_status dcz_gpu_qrun_relu(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    return dcz_qrelu__cuda(xs[0], batch * m->layers[index].in, y, m->gpu->stream);
}

static dcz_status dcz_gpu_qrun_copy(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    if (y == xs[0]) return DCZ_OK;
    return cu(cudaMemcpyAsync(y, xs[0], batch * m->layers[index].in, cudaMemcpyDefault, m->gpu->stream));
}

static dcz_status dcz_gpu_qrun_pool(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    return dcz_qpool__cuda(&l->geom, l->op == DCZ_OP_AVGPOOL, l->count_include_pad, xs[0], batch, y, m->gpu->stream);
}

static dcz_status dcz_gpu_qrun_global_avgpool(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch,
                                       void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    /* run.c's rule: the same scale in and out keeps the rounded mean */
    const int rescale = dcz_f32_bits(m->t_scale[l->tin[0]]) != dcz_f32_bits(m->t_scale[index + 1]);
    return dcz_qmean__cuda(l->geom.in_c, l->geom.in_h * l->geom.in_w, xs[0], batch, rescale, l->in_mult[0],
                           l->in_shift[0], m->qmax, y, m->gpu->stream);
}

static dcz_status dcz_gpu_qrun_add(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    return dcz_qadd__cuda(xs[0], xs[1], batch * l->in, l->in_mult, l->in_shift, m->qmax, y, m->gpu->stream);
}

static dcz_status dcz_gpu_qrun_mul(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    const uint32_t factors = m->tensors[l->tin[1]].width;
    return dcz_qmul__cuda(xs[0], xs[1], batch, factors, l->in / factors, l->in_mult[0], l->in_shift[0], m->qmax, y,
                          m->gpu->stream);
}

static dcz_status dcz_gpu_qrun_concat(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    uint32_t width[DCZ_MAX_INPUTS];
    for (uint32_t k = 0; k < l->nin; k++) width[k] = m->tensors[l->tin[k]].width;
    return dcz_qconcat__cuda((const int8_t *const *)xs, width, l->nin, batch, l->in_mult, l->in_shift, m->qmax, y,
                             m->gpu->stream);
}

static dcz_status dcz_gpu_qrun_table(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    return dcz_qtable__cuda(m->gpu->layers[index].table, m->qmax, xs[0], batch * m->layers[index].in, y,
                            m->gpu->stream);
}

static dcz_status dcz_gpu_qrun_gather(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch,
                                      void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    return dcz_gather__cuda(&l->geom, l->gather_start, l->gather_groups, xs[0], sizeof(int8_t), batch, y,
                            m->gpu->stream);
}

static gpu_op_kernels gpu_op(uint16_t op)
{
    static const gpu_op_kernels by_op[] = {
        [DCZ_OP_DENSE] = { dcz_gpu_run_dense, dcz_gpu_qrun_weighted },
        [DCZ_OP_RELU] = { dcz_gpu_run_activation, dcz_gpu_qrun_relu },
        [DCZ_OP_SOFTMAX] = { dcz_gpu_run_softmax, NULL },
        [DCZ_OP_CONV2D] = { dcz_gpu_run_conv2d, dcz_gpu_qrun_weighted },
        [DCZ_OP_MAXPOOL] = { dcz_gpu_run_pool, dcz_gpu_qrun_pool },
        [DCZ_OP_AVGPOOL] = { dcz_gpu_run_pool, dcz_gpu_qrun_pool },
        [DCZ_OP_GLOBAL_AVGPOOL] = { dcz_gpu_run_global_avgpool, dcz_gpu_qrun_global_avgpool },
        [DCZ_OP_FLATTEN] = { dcz_gpu_run_copy, dcz_gpu_qrun_copy },
        [DCZ_OP_ADD] = { dcz_gpu_run_add, dcz_gpu_qrun_add },
        [DCZ_OP_MUL] = { dcz_gpu_run_mul, dcz_gpu_qrun_mul },
        [DCZ_OP_CONCAT] = { dcz_gpu_run_concat, dcz_gpu_qrun_concat },
        [DCZ_OP_CLIP] = { dcz_gpu_run_activation, dcz_gpu_qrun_table },
        [DCZ_OP_LEAKY_RELU] = { dcz_gpu_run_activation, dcz_gpu_qrun_table },
        [DCZ_OP_SIGMOID] = { dcz_gpu_run_activation, dcz_gpu_qrun_table },
        [DCZ_OP_TANH] = { dcz_gpu_run_activation, dcz_gpu_qrun_table },
        [DCZ_OP_HARD_SIGMOID] = { dcz_gpu_run_activation, dcz_gpu_qrun_table },
        [DCZ_OP_HARD_SWISH] = { dcz_gpu_run_activation, dcz_gpu_qrun_table },
        [DCZ_OP_CHANNEL_SHUFFLE] = { dcz_gpu_run_gather, dcz_gpu_qrun_gather },
        [DCZ_OP_SLICE] = { dcz_gpu_run_gather, dcz_gpu_qrun_gather },
        [DCZ_OP_SILU] = { dcz_gpu_run_activation, dcz_gpu_qrun_table },
    };
    const gpu_op_kernels none = { NULL, NULL };
    return op < sizeof by_op / sizeof *by_op ? by_op[op] : none;
}
