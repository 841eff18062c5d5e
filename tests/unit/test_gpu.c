/* test_gpu.c: the CUDA backend on a GPU against the CPU references. Without
 * the backend (a build without nvcc) or without a CUDA device it prints
 * SKIP with the reason and checks nothing else; it never passes silently.
 *
 * - kernels: the grid of test_kernels.c launched on the device: the
 *   sparse fully connected kernels on the chunk form (codebooks of 2, 16
 *   and 256 values, fp32 values; densities 0, 0.5, 1, 0.01 and 0.09 so
 *   fillers occur; batch 1 under every group a row can take, batches
 *   7, 9 and 70 through the transposed input (a row in 1, 3 and 8 parts),
 *   so a warp's samples are cut short and a second block takes the rest;
 *   with and without a ReLU
 *   applied as they write; into a NaN-filled output) against a dense
 *   product in double, within 1e-5 of each output's |w x| sum; the direct
 *   convolution, on compressed rows and on dense weights, and the patch
 *   path over a batch (transposed im2col, then the chunk rows placing each
 *   output), over the convolution grid (groups and depthwise included)
 *   against dcz_conv2d_direct_ref within the same bound; pools and the
 *   global mean bit for bit; activations and softmax within 4e-6
 *   relative (the device's expf and tanhf);
 * - integer kernels (8-bit schemes), bit for bit against kernels_int.c:
 *   the int8 rows (dp4a) over the same matrix grid with codebooks of 2, 16
 *   and 256 values and per-entry values, at batch 1, 7 and 9, finished to
 *   int8 by requantization and to float; the integer direct convolution and
 *   pools on the convolution geometries;
 * - models: every model of tests/fuzz/corpus/dcz but the regress-* ones,
 *   opened on the GPU and on the CPU with the reference kernels, at batch 1
 *   (twice: the captured graph replayed, with another input), 7 and 64,
 *   the input and the GPU's output in dcz_host_alloc's page-locked memory:
 *   float models within 1e-4 of 1 + |reference|; calibrated models of the
 *   8-bit schemes bit for bit (their integer region is the CPU's, and so is
 *   its float output) or, where the region's output goes on through a
 *   softmax, sigmoid or tanh (the device's expf and tanhf), within the
 *   activations' 4e-6 relative, which any integer one off would exceed by
 *   far (a step of the region's output scale); and again with precision
 *   FP32 within the float bound; 16-bit fixed point refused on the GPU
 *   (DCZ_ERR_UNSUPPORTED) and run there with precision FP32.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/model.h"
#include "tests/check.h"
#define TEST_RNG_SEED 9090
#include "tests/unit/test_util.h"
#include "tests/unit/conv_geom.h"
#include "tests/unit/sparse_mat.h"
#include "tests/unit/qsparse_mat.h"

#ifdef DCZ_CUDA
#include <cuda_runtime_api.h>

#include "runtime/cuda/gpu.h"

/* A copy of bytes bytes of h on the device (uninitialised for h NULL). */
static float *dev_copy(const void *h, size_t bytes)
{
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess) return NULL;
    if (h && bytes) cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    return d;
}

static void host_copy(void *h, const float *d, size_t bytes)
{
    cudaDeviceSynchronize();
    cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
}

/* The device copy of a sparse matrix (freed by free_gsparse). */
static dcz_gsparse upload_sparse(const dcz_sparse *s)
{
    dcz_gsparse g = { s->rows, s->cols, s->k, NULL, NULL, NULL, NULL, NULL };
    g.row_ptr = (const uint32_t *)dev_copy(s->row_ptr, ((size_t)s->rows + 1) * 4);
    g.step = (const uint8_t *)dev_copy(s->step, s->entries);
    if (s->idx) {
        g.idx = (const uint8_t *)dev_copy(s->idx, s->entries);
        g.codebook = dev_copy(s->codebook, (size_t)s->k * 4);
    } else {
        g.val = dev_copy(s->val, (size_t)s->entries * 4);
    }
    return g;
}

/* The device copy of s's chunk form (gpu_kern.h: dcz_gchunks, as gpu.c
 * makes it; freed by free_gchunks). */
static dcz_gchunks upload_chunks(const dcz_sparse *s)
{
    const dcz_gsparse hs = { s->rows, s->cols, s->k, s->row_ptr, s->step, s->idx, s->val, s->codebook };
    dcz_gchunks h, g;
    if (dcz_gk_chunks_make(&hs, &h) != 0) {   /* out of memory: nothing to test with */
        fprintf(stderr, "dcz_gk_chunks_make: out of memory\n");
        exit(1);
    }
    const size_t n = h.cptr[s->rows];
    g = h;
    g.cptr = (const uint32_t *)dev_copy(h.cptr, ((size_t)s->rows + 1) * 4);
    g.chunk = (const uint8_t *)dev_copy(h.chunk, n * 16);
    g.codebook = s->idx ? dev_copy(s->codebook, (size_t)s->k * 4) : NULL;
    g.val = s->idx ? NULL : dev_copy(h.val, n * DCZ_GK_CHUNK * 4);
    dcz_gk_chunks_free(&h);
    return g;
}

static void free_gchunks(dcz_gchunks *g)
{
    cudaFree((void *)g->cptr);
    cudaFree((void *)g->chunk);
    cudaFree((void *)g->codebook);
    cudaFree((void *)g->val);
}

static void free_gsparse(dcz_gsparse *g)
{
    cudaFree((void *)g->row_ptr);
    cudaFree((void *)g->step);
    cudaFree((void *)g->idx);
    cudaFree((void *)g->codebook);
    cudaFree((void *)g->val);
}

/* The fully connected kernels on the chunk form: batch 1 with every lane
 * count a row can take, the input staged in shared memory or not (5000
 * rows: more than the staged launch's blocks take in one round at 32
 * lanes; 20,000 columns: past the 48 KB a block has without opting in),
 * batches through the transposed input, ReLU applied as they write
 * (at the rule's lane count) or not, into a NaN-filled output. */
static void test_sparse_fc(void)
{
    const uint32_t sizes[][2] = { { 1, 1 }, { 1, 7 }, { 7, 1 }, { 3, 5 }, { 17, 31 }, { 33, 300 },
                                  { 5, 1000 }, { 64, 64 }, { 300, 784 }, { 8, 4096 },
                                  { 5000, 40 }, { 3, 20000 } };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01, 0.09 };
    const uint32_t codebooks[] = { 2, 16, 256, 0 };
    const size_t batches[] = { 1, 7, 9, 70 };
    const uint32_t parts[] = { 0, 1, 3, DCZ_GK_SPMM_PARTS };   /* batches: one warp a row, parts not a power of two, the runtime's */
    const dcz_act acts[] = { { 0, 0.0f, 0.0f }, { DCZ_OP_RELU, 0.0f, 0.0f } };
    size_t bad = 0, cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t di = 0; di < sizeof dens / sizeof *dens; di++)
            for (size_t ci = 0; ci < sizeof codebooks / sizeof *codebooks; ci++) {
                mat m;
                const uint32_t rows = sizes[si][0], cols = sizes[si][1];
                REQUIRE(make_mat(&m, rows, cols, dens[di], codebooks[ci]), "build");
                const size_t B = 70;
                float *x = malloc(B * cols * 4), *bias = malloc(rows * 4), *y = malloc(B * rows * 4);
                double *ref = malloc(B * rows * sizeof *ref), *mag = malloc(B * rows * sizeof *mag);
                for (size_t i = 0; i < B * cols; i++) x[i] = nonzero();
                for (uint32_t i = 0; i < rows; i++) bias[i] = nonzero();
                for (size_t k = 0; k < B; k++)
                    for (uint32_t r = 0; r < rows; r++) {
                        double v = bias[r], a = fabs(bias[r]);
                        for (uint32_t c = 0; c < cols; c++) {
                            const double t = (double)m.dense[(size_t)r * cols + c] * x[k * cols + c];
                            v += t;
                            a += fabs(t);
                        }
                        ref[k * rows + r] = v;
                        mag[k * rows + r] = a;
                    }
                dcz_gchunks g = upload_chunks(&m.sp);
                float *dx = dev_copy(x, B * cols * 4), *db = dev_copy(bias, rows * 4), *dy = dev_copy(NULL, B * rows * 4);
                float *dxt = dev_copy(NULL, B * cols * 4);
                const dcz_gplace fc = { 1, rows, 0, 1 };
                const uint32_t rule = g.group, stage_rule = g.stage;
                /* batch 1: every lane count, the input staged and not */
                for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++)
                    for (uint32_t G = bi ? rule : 1; G <= (bi ? rule : 32u); G <<= 1)
                        for (int a = 0; a < 4; a++) {
                            if (a >= 2 && (bi || cols > DCZ_GK_STAGE_COLS)) continue;
                            if (a % 2 && bi == 0 && G != rule) continue;
                            const size_t b = batches[bi];
                            g.group = G;
                            g.stage = a >= 2;
                            cudaMemset(dy, 0xff, B * rows * 4);
                            dcz_status s = b == 1 ? dcz_spmv_chunks__cuda(&g, db, dx, dy, acts[a % 2], NULL)
                                                  : dcz_transpose__cuda(dx, b, cols, dxt, NULL);
                            if (b > 1 && s == DCZ_OK)
                                s = dcz_spmm_chunks__cuda(&g, db, dxt, b, dy, fc, acts[a % 2], parts[bi], NULL);
                            CHECK(s == DCZ_OK, "launch: %s", dcz_status_str(s));
                            host_copy(y, dy, b * rows * 4);
                            for (size_t i = 0; i < b * rows; i++) {
                                const double want = a % 2 && ref[i] < 0 ? 0 : ref[i];
                                if (!(fabs(y[i] - want) <= 1e-5 * (mag[i] + 1)) && bad++ < 3)
                                    fprintf(stderr, "  %ux%u k %u batch %zu lanes %u staged %u act %d: y[%zu][%zu] = "
                                            "%.8g, reference %.8g\n", rows, cols, codebooks[ci], b, G, g.stage, a % 2,
                                            i / rows, i % rows, y[i], want);
                            }
                            cases++;
                        }
                g.group = rule;
                g.stage = stage_rule;
                free_gchunks(&g);
                cudaFree(dx); cudaFree(db); cudaFree(dy); cudaFree(dxt);
                free(x); free(bias); free(y); free(ref); free(mag);
                free_mat(&m);
            }
    CHECK(bad == 0, "%zu mismatches in %zu cases", bad, cases);
}

static void test_convolutions(void)
{
    const dcz_conv_geom geoms[] = {
        conv_geom(3, 4, 7, 9, 3, 3, 1, 1, 1, 1), conv_geom(3, 4, 11, 5, 5, 5, 2, 2, 1, 1),
        conv_geom(3, 4, 7, 9, 1, 1, 2, 2, 0, 0), conv_geom_grouped(4, 6, 7, 9, 3, 1, 1, 2),
        conv_geom_grouped(6, 6, 8, 8, 3, 1, 1, 6), conv_geom_grouped(4, 8, 9, 7, 3, 2, 1, 4),
        conv_geom(2, 3, 7, 9, 3, 5, 2, 1, 1, 2), conv_geom(16, 5, 11, 9, 5, 5, 1, 1, 2, 2),
        conv_geom(1, 20, 28, 28, 5, 5, 1, 1, 0, 0),
    };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01 };
    size_t bad = 0, cases = 0;
    for (size_t gi = 0; gi < sizeof geoms / sizeof *geoms; gi++)
        for (size_t di = 0; di < 4; di++)
            for (uint32_t k = 0; k <= 256; k += 256) {
                const dcz_conv_geom *g = &geoms[gi];
                mat m;
                const uint32_t cols = dcz_conv_group_in(g) * g->kh * g->kw;
                REQUIRE(make_mat(&m, g->out_c, cols, dens[di], k), "build");
                const size_t B = 3, xin = (size_t)g->in_c * g->in_h * g->in_w;
                const size_t yout = (size_t)g->out_c * g->out_h * g->out_w, nw = (size_t)g->out_c * cols;
                float *x = malloc(B * xin * 4), *xa = malloc(B * xin * 4), *wa = malloc(nw * 4 + 4);
                float *bias = malloc(g->out_c * 4), *ba = malloc(g->out_c * 4);
                float *ref = malloc(B * yout * 4), *mag = malloc(B * yout * 4), *y = malloc(B * yout * 4);
                for (size_t i = 0; i < B * xin; i++) xa[i] = fabsf(x[i] = nonzero());
                for (size_t i = 0; i < nw; i++) wa[i] = fabsf(m.dense[i]);
                for (uint32_t i = 0; i < g->out_c; i++) ba[i] = fabsf(bias[i] = nonzero());
                dcz_conv2d_direct_ref(g, m.dense, bias, x, B, ref);
                dcz_conv2d_direct_ref(g, wa, ba, xa, B, mag);
                dcz_gsparse gs = upload_sparse(&m.sp);
                dcz_gchunks gc = upload_chunks(&m.sp);
                const dcz_act none = { 0, 0.0f, 0.0f };
                float *dx = dev_copy(x, B * xin * 4), *db = dev_copy(bias, g->out_c * 4), *dy = dev_copy(NULL, B * yout * 4);
                float *dw = dev_copy(m.dense, nw * 4);
                const uint32_t pixels = g->out_h * g->out_w;
                float *dcol = dev_copy(NULL, B * pixels * cols * 4);
                const dcz_gplace place = { pixels, yout, 1, pixels };
                static const char *const path[] = { "sparse direct", "dense direct", "patches" };
                for (int p = 0; p < 3; p++) {   /* compressed rows, dense weights, the batch's patches */
                    if (p == 2 && g->group > 1) break;   /* grouped convolutions run direct */
                    cudaMemset(dy, 0xff, B * yout * 4);  /* NaN where a kernel writes nothing */
                    dcz_status s = p == 0   ? dcz_conv2d_sparse__cuda(g, &gs, db, dx, B, none, dy, NULL)
                                   : p == 1 ? dcz_conv2d_dense__cuda(g, dw, db, dx, B, none, dy, NULL)
                                            : dcz_im2col_t__cuda(g, dx, B, dcol, NULL);
                    if (p == 2 && s == DCZ_OK)
                        s = dcz_spmm_chunks__cuda(&gc, db, dcol, B * pixels, dy, place, none,
                                                  DCZ_GK_SPMM_PARTS, NULL);
                    CHECK(s == DCZ_OK, "launch: %s", dcz_status_str(s));
                    host_copy(y, dy, B * yout * 4);
                    for (size_t i = 0; i < B * yout; i++)
                        if (!(fabsf(y[i] - ref[i]) <= 1e-5f * (mag[i] + 1e-6f)) && bad++ < 3)
                            fprintf(stderr, "  conv geometry %zu (%s): y[%zu] = %.8g, reference %.8g\n", gi,
                                    path[p], i, y[i], ref[i]);
                    cases++;
                }
                cudaFree(dcol);
                free_gsparse(&gs);
                free_gchunks(&gc);
                cudaFree(dx); cudaFree(db); cudaFree(dy); cudaFree(dw);
                free(x); free(xa); free(wa); free(bias); free(ba); free(ref); free(mag); free(y);
                free_mat(&m);
            }
    CHECK(bad == 0, "%zu mismatches in %zu cases", bad, cases);
}

static void test_pools_and_elements(void)
{
    const dcz_conv_geom g = conv_geom(3, 3, 9, 7, 3, 3, 2, 2, 1, 1);
    const size_t B = 4, xin = 3 * 9 * 7, per = (size_t)3 * g.out_h * g.out_w;
    float *x = malloc(B * xin * 4), *ref = malloc(B * xin * 4), *y = malloc(B * xin * 4);
    for (size_t i = 0; i < B * xin; i++) x[i] = frand() * 6;
    float *dx = dev_copy(x, B * xin * 4), *dy = dev_copy(NULL, B * xin * 4);
    for (int kind = 0; kind < 3; kind++) {
        if (kind == 0) dcz_maxpool_ref(&g, x, B, ref);
        else dcz_avgpool_ref(&g, kind == 2, x, B, ref);
        CHECK(dcz_pool__cuda(&g, kind > 0, kind == 2, dx, B, dy, NULL) == DCZ_OK, "pool launch");
        host_copy(y, dy, B * per * 4);
        CHECK(memcmp(y, ref, B * per * 4) == 0, "pool kind %d differs", kind);
    }
    dcz_global_avgpool_ref(3, 63, x, B, ref);
    CHECK(dcz_global_avgpool__cuda(3, 63, dx, B, dy, NULL) == DCZ_OK, "mean launch");
    host_copy(y, dy, B * 3 * 4);
    CHECK(memcmp(y, ref, B * 3 * 4) == 0, "global mean differs");
    const uint16_t ops[] = { DCZ_OP_RELU, DCZ_OP_CLIP, DCZ_OP_LEAKY_RELU, DCZ_OP_SIGMOID, DCZ_OP_TANH,
                             DCZ_OP_HARD_SIGMOID, DCZ_OP_HARD_SWISH, DCZ_OP_SILU };
    const float param[2] = { 0.2f, 0.5f };
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        if (ops[o] == DCZ_OP_RELU) { memcpy(ref, x, B * xin * 4); dcz_relu_ref(ref, B * xin); }
        else dcz_activation_ref(ops[o], param, x, B * xin, ref);
        CHECK(dcz_activation__cuda(ops[o], param, dx, B * xin, dy, NULL) == DCZ_OK, "activation launch");
        host_copy(y, dy, B * xin * 4);
        size_t off = 0;
        for (size_t i = 0; i < B * xin; i++) off += !(fabsf(y[i] - ref[i]) <= 4e-6f * (fabsf(ref[i]) + 1e-3f));
        CHECK(off == 0, "%s: %zu values off", dcz_op_name(ops[o]), off);
    }
    memcpy(ref, x, B * xin * 4);
    dcz_softmax_ref(ref, B, xin);
    CHECK(dcz_softmax__cuda(dx, B, xin, dy, NULL) == DCZ_OK, "softmax launch");
    host_copy(y, dy, B * xin * 4);
    size_t off = 0;
    for (size_t i = 0; i < B * xin; i++) off += !(fabsf(y[i] - ref[i]) <= 4e-6f * (ref[i] + 1e-6f));
    CHECK(off == 0, "softmax: %zu values off", off);
    cudaFree(dx); cudaFree(dy);
    free(x); free(ref); free(y);
}

/* ---- integer kernels ---------------------------------------------------------- */

/* An integer matrix's device copy, with int8 weights. */
static dcz_gqsparse upload_qsparse(const qmat *m)
{
    dcz_gqsparse g = { m->rows, m->cols, m->k, NULL, NULL, NULL, NULL, NULL };
    const size_t n = m->k ? (size_t)m->rows * m->k : m->sp.entries;
    int8_t *w = alloc(n, 1);
    for (size_t i = 0; i < n; i++) w[i] = (int8_t)(m->k ? m->qtab[i] : m->qval[i]);
    g.row_ptr = (const uint32_t *)dev_copy(m->row_ptr, ((size_t)m->rows + 1) * 4);
    g.step = (const uint8_t *)dev_copy(m->step, m->sp.entries);
    if (m->k) {
        g.idx = (const uint8_t *)dev_copy(m->idx, m->sp.entries);
        g.qtab = (const int8_t *)dev_copy(w, n);
    } else {
        g.qval = (const int8_t *)dev_copy(w, n);
    }
    free(w);
    return g;
}

static void free_gqsparse(dcz_gqsparse *g)
{
    cudaFree((void *)g->row_ptr);
    cudaFree((void *)g->step);
    cudaFree((void *)g->idx);
    cudaFree((void *)g->qtab);
    cudaFree((void *)g->qval);
}

/* A layer's finishing constants on the host and the device: int32 biases,
 * multipliers below 2^31 with shifts that land most sums inside +-127,
 * float scales. */
typedef struct qfin {
    uint32_t n;
    int64_t *bias64;
    int32_t *bias, *mult;
    uint8_t *shift;
    double *scale;
    dcz_gqout o8, of;   /* device pointers; y set by the caller */
} qfin;

static void make_qfin(qfin *f, uint32_t n)
{
    f->n = n;
    f->bias64 = alloc(n, 8); f->bias = alloc(n, 4); f->mult = alloc(n, 4); f->shift = alloc(n, 1); f->scale = alloc(n, 8);
    for (uint32_t i = 0; i < n; i++) {
        f->bias[i] = (int32_t)(rnd() % 200001) - 100000;
        f->bias64[i] = f->bias[i];
        f->mult[i] = (int32_t)((1u << 30) + rnd() % (1u << 30));
        f->shift[i] = (uint8_t)(40 + rnd() % 8);
        f->scale[i] = (double)frand() * 1e-3;
    }
    const int32_t *db = (const int32_t *)dev_copy(f->bias, (size_t)n * 4);
    f->o8 = (dcz_gqout){ db, (const int32_t *)dev_copy(f->mult, (size_t)n * 4), (const uint8_t *)dev_copy(f->shift, n),
                         NULL, 127, NULL };
    f->of = (dcz_gqout){ db, NULL, NULL, (const double *)dev_copy(f->scale, (size_t)n * 8), 127, NULL };
}

static void free_qfin(qfin *f)
{
    cudaFree((void *)f->o8.bias); cudaFree((void *)f->o8.mult); cudaFree((void *)f->o8.shift); cudaFree((void *)f->of.scale);
    free(f->bias64); free(f->bias); free(f->mult); free(f->shift); free(f->scale);
}

/* Outputs of y8 (int8) and yf (float) that differ from acc finished as
 * run.c finishes it (requant_ref; acc times its channel's scale). */
static size_t qfin_bad(const qfin *f, const int64_t *acc, size_t batch, uint32_t plane, const int8_t *y8, const float *yf)
{
    const size_t n = batch * f->n * plane;
    dcz_q *want = alloc(n, sizeof(dcz_q));
    const dcz_requant rq = { f->mult, f->shift, 127, NULL };
    dcz_requant_ref(&rq, acc, batch, f->n, plane, want);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float w = (float)((double)acc[i] * f->scale[i / plane % f->n]);
        bad += y8[i] != want[i] || memcmp(&yf[i], &w, sizeof w) != 0;
    }
    free(want);
    return bad;
}

static void test_int_rows(void)
{
    const uint32_t sizes[][2] = { { 1, 1 }, { 1, 7 }, { 7, 1 }, { 3, 5 }, { 17, 31 }, { 33, 300 },
                                  { 5, 1000 }, { 64, 64 }, { 300, 784 } };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01 };
    const uint32_t codebooks[] = { 2, 16, 256, 0 };
    const size_t batches[] = { 1, 7, 9 };
    size_t bad = 0, cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t di = 0; di < 4; di++)
            for (size_t ci = 0; ci < 4; ci++) {
                const uint32_t rows = sizes[si][0], cols = sizes[si][1];
                const size_t B = 9;
                qmat m;
                make_qmat(&m, rows, cols, dens[di], codebooks[ci], 127);
                qfin f;
                make_qfin(&f, rows);
                dcz_q *xq = alloc(B * cols, sizeof(dcz_q));
                int8_t *x = alloc(B * cols, 1), *y8 = alloc(B * rows, 1);
                float *yf = alloc(B * rows, 4);
                int64_t *acc = alloc(B * rows, 8);
                fill_q(xq, B * cols, 127);
                for (size_t i = 0; i < B * cols; i++) x[i] = (int8_t)xq[i];
                dcz_gqsparse g = upload_qsparse(&m);
                const int8_t *dx = (const int8_t *)dev_copy(x, B * cols);
                void *d8 = dev_copy(NULL, B * rows), *dfl = dev_copy(NULL, B * rows * 4);
                for (size_t bi = 0; bi < 3; bi++, cases++) {
                    const size_t b = batches[bi];
                    dcz_gqout o8 = f.o8, of = f.of;
                    o8.y = d8;
                    of.y = dfl;
                    const dcz_gplace fc = { 1, rows, 0, 1 };
                    CHECK(dcz_qspmm__cuda(&g, &o8, dx, b, fc, NULL) == DCZ_OK &&
                          dcz_qspmm__cuda(&g, &of, dx, b, fc, NULL) == DCZ_OK, "launch");
                    host_copy(y8, d8, b * rows);
                    host_copy(yf, dfl, b * rows * 4);
                    dcz_qspmm_ref(&m.sp, f.bias64, xq, b, acc);
                    const size_t n = qfin_bad(&f, acc, b, 1, y8, yf);
                    if (n && bad < 3)
                        fprintf(stderr, "  %ux%u density %g k %u batch %zu: %zu outputs differ\n", rows, cols, dens[di],
                                codebooks[ci], b, n);
                    bad += n;
                }
                free_gqsparse(&g);
                cudaFree((void *)dx); cudaFree(d8); cudaFree(dfl);
                free(xq); free(x); free(y8); free(yf); free(acc);
                free_qfin(&f);
                free_qmat(&m);
            }
    CHECK(bad == 0, "%zu integer outputs differ from kernels_int.c in %zu cases", bad, cases);
}

static void test_int_convolutions(void)
{
    const uint32_t codebooks[] = { 256, 16, 0 };
    dcz_conv_geom geoms[CONV_EXTRA + 24];
    size_t ng = 0, bad = 0;
    for (size_t i = 0; conv_grid(i, &geoms[ng]) && ng < 24; i++) ng++;
    conv_extra(geoms + ng);
    ng += CONV_EXTRA;
    for (size_t gi = 0; gi < ng; gi++)
        for (size_t ci = 0; ci < 3; ci++) {
            const dcz_conv_geom *g = &geoms[gi];
            const uint32_t cols = dcz_conv_group_in(g) * g->kh * g->kw, plane = g->out_h * g->out_w;
            const size_t B = 3, xin = (size_t)g->in_c * g->in_h * g->in_w, yout = (size_t)g->out_c * plane;
            qmat m;
            make_qmat(&m, g->out_c, cols, gi % 2 ? 0.5 : 0.01, codebooks[ci], 127);
            qfin f;
            make_qfin(&f, g->out_c);
            dcz_q *xq = alloc(B * xin, sizeof(dcz_q)), *pref = alloc(B * xin, sizeof(dcz_q));
            int8_t *x = alloc(B * xin, 1), *y8 = alloc(B * yout, 1), *p8 = alloc(B * xin, 1);
            float *yf = alloc(B * yout, 4);
            int64_t *acc = alloc(B * yout, 8);
            fill_q(xq, B * xin, 127);
            for (size_t i = 0; i < B * xin; i++) x[i] = (int8_t)xq[i];
            dcz_gqsparse gs = upload_qsparse(&m);
            const int8_t *dx = (const int8_t *)dev_copy(x, B * xin);
            void *d8 = dev_copy(NULL, B * yout), *dfl = dev_copy(NULL, B * yout * 4);
            dcz_gqout o8 = f.o8, of = f.of;
            o8.y = d8;
            of.y = dfl;
            CHECK(dcz_qconv2d__cuda(g, &gs, &o8, dx, B, NULL) == DCZ_OK && dcz_qconv2d__cuda(g, &gs, &of, dx, B, NULL) == DCZ_OK,
                  "launch");
            host_copy(y8, d8, B * yout);
            host_copy(yf, dfl, B * yout * 4);
            dcz_qconv2d_direct_ref(g, m.dense, f.bias64, xq, B, acc);
            bad += qfin_bad(&f, acc, B, plane, y8, yf);
            if (g->group <= 1) {   /* the patch path over the batch (one group) */
                int8_t *dcol = (int8_t *)dev_copy(NULL, B * plane * cols);
                const dcz_gplace place = { plane, yout, 1, plane };
                cudaMemset(d8, 0, B * yout);
                cudaMemset(dfl, 0xff, B * yout * 4);
                CHECK(dcz_qim2col__cuda(g, dx, B, dcol, NULL) == DCZ_OK &&
                          dcz_qspmm__cuda(&gs, &o8, dcol, B * plane, place, NULL) == DCZ_OK &&
                          dcz_qspmm__cuda(&gs, &of, dcol, B * plane, place, NULL) == DCZ_OK,
                      "launch");
                host_copy(y8, d8, B * yout);
                host_copy(yf, dfl, B * yout * 4);
                bad += qfin_bad(&f, acc, B, plane, y8, yf);
                cudaFree(dcol);
            }
            /* the integer max pool on the same input and window */
            if (ci == 0 && g->group == 1) {
                dcz_conv_geom pg = *g;
                pg.out_c = pg.in_c;
                const size_t per = (size_t)pg.in_c * plane;
                void *dp = dev_copy(NULL, B * per);
                CHECK(dcz_qpool__cuda(&pg, 0, 0, dx, B, dp, NULL) == DCZ_OK, "launch");
                host_copy(p8, dp, B * per);
                dcz_qmaxpool_ref(&pg, xq, B, pref);
                for (size_t i = 0; i < B * per; i++) bad += p8[i] != pref[i];
                cudaFree(dp);
            }
            free_gqsparse(&gs);
            cudaFree((void *)dx); cudaFree(d8); cudaFree(dfl);
            free(xq); free(pref); free(x); free(y8); free(p8); free(yf); free(acc);
            free_qfin(&f);
            free_qmat(&m);
        }
    CHECK(bad == 0, "%zu integer convolution and pool outputs differ from kernels_int.c", bad);
}

/* ---- whole models ------------------------------------------------------------ */

static size_t models, calibrated, fixed16;

enum { FLOAT_BOUND, BIT_EXACT, TAIL_BOUND };

/* The model in buf on the GPU and on the CPU (reference kernels) at
 * precision p, outputs compared by how (FLOAT_BOUND, BIT_EXACT, TAIL_BOUND). */
static void compare_runs(const char *path, const uint8_t *buf, size_t len, dcz_precision p, int how)
{
    dcz_options c, g;
    dcz_options_init(&c);
    c.device = DCZ_DEVICE_CPU;
    c.force_reference = 1;
    dcz_options_init(&g);
    g.device = DCZ_DEVICE_GPU;
    c.precision = g.precision = p;
    dcz_model *mc = NULL, *mg = NULL;
    const dcz_status s = dcz_open_memory(buf, len, &g, &mg);
    CHECK(s == DCZ_OK && dcz_model_device(mg) == DCZ_DEVICE_GPU, "%s on the GPU: %s", path, dcz_status_str(s));
    REQUIRE(dcz_open_memory(buf, len, &c, &mc) == DCZ_OK, "%s on the CPU", path);
    if (s != DCZ_OK) { dcz_close(mc); return; }
    const size_t in = dcz_input_size(mc), out = dcz_output_size(mc), B = 64;
    /* the input and the GPU's output in page-locked memory (dcz_host_alloc) */
    float *x = dcz_host_alloc(mg, B * in * 4), *yc = malloc(B * out * 4), *yg = dcz_host_alloc(mg, B * out * 4);
    REQUIRE(x && yc && yg, "%s: buffers", path);
    const size_t batches[] = { 1, 1, 7, 64 };
    for (size_t bi = 0; bi < 4; bi++) {
        const size_t b = batches[bi];
        for (size_t i = 0; i < b * in; i++) x[i] = frand();
        CHECK(dcz_run(mc, x, b, yc) == DCZ_OK && dcz_run(mg, x, b, yg) == DCZ_OK, "%s: run batch %zu", path, b);
        size_t off = 0;
        for (size_t i = 0; i < b * out; i++)
            off += how == BIT_EXACT    ? memcmp(&yg[i], &yc[i], 4) != 0
                   : how == TAIL_BOUND ? !(fabsf(yg[i] - yc[i]) <= 4e-6f * (fabsf(yc[i]) + 1e-3f))
                                       : !(fabsf(yg[i] - yc[i]) <= 1e-4f * (1 + fabsf(yc[i])));
        CHECK(off == 0, "%s batch %zu%s: %zu outputs off", path, b,
              how == BIT_EXACT ? " (integers)" : how == TAIL_BOUND ? " (integers, float tail)" : "", off);
    }
    dcz_host_free(mg, x);
    dcz_host_free(mg, yg);
    free(yc);
    dcz_close(mc);
    dcz_close(mg);
}

static void model_case(const char *path, const uint8_t *buf, size_t len)
{
    dcz_options o;
    dcz_options_init(&o);
    o.device = DCZ_DEVICE_CPU;
    dcz_model *m = NULL;
    REQUIRE(dcz_open_memory(buf, len, &o, &m) == DCZ_OK, "%s on the CPU", path);
    const dcz_scheme scheme = dcz_model_scheme(m);
    int tail = 0; /* a layer after the integer region that the device's expf or tanhf computes */
    for (uint32_t i = m->q_last + 1; scheme != DCZ_SCHEME_NONE && i < m->nlayers; i++) {
        const uint16_t op = m->layers[i].op;
        tail |= op == DCZ_OP_SOFTMAX || op == DCZ_OP_SIGMOID || op == DCZ_OP_TANH || op == DCZ_OP_SILU;
    }
    dcz_close(m);
    models++;
    if (scheme == DCZ_SCHEME_NONE) {
        compare_runs(path, buf, len, DCZ_PRECISION_AUTO, FLOAT_BOUND);
        return;
    }
    calibrated++;
    if (scheme == DCZ_SCHEME_FIXED16) {
        fixed16++;
        o.device = DCZ_DEVICE_GPU;
        const dcz_status s = dcz_open_memory(buf, len, &o, &m);
        CHECK(s == DCZ_ERR_UNSUPPORTED, "%s: 16-bit fixed point on the GPU gave %s", path, dcz_status_str(s));
        if (s == DCZ_OK) dcz_close(m);
    } else {
        compare_runs(path, buf, len, DCZ_PRECISION_AUTO, tail ? TAIL_BOUND : BIT_EXACT);
    }
    compare_runs(path, buf, len, DCZ_PRECISION_FP32, FLOAT_BOUND);
}

static void test_models(void)
{
    const char *dir = "tests/fuzz/corpus/dcz";
    DIR *d = opendir(dir);
    REQUIRE(d, "cannot list %s", dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        const size_t nl = strlen(n);
        if (n[0] == '.' || strncmp(n, "regress-", 8) == 0 || nl < 4 || strcmp(n + nl - 4, ".dcz")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        FILE *f = fopen(path, "rb");
        if (!f) { CHECK(0, "cannot open %s", path); continue; }
        static uint8_t tmp[1 << 16];
        const size_t len = fread(tmp, 1, sizeof tmp, f);
        fclose(f);
        model_case(path, tmp, len);
    }
    closedir(d);
    CHECK(models >= 20 && calibrated - fixed16 >= 5, "%zu models, %zu calibrated, %zu of them 16-bit fixed point", models,
          calibrated, fixed16);
}
#endif /* DCZ_CUDA */

int main(void)
{
    char why[192];
    if (dcz_device_probe(DCZ_DEVICE_GPU, why, sizeof why) != DCZ_OK) {
        printf("SKIP test_gpu: %s\n", why);
        return check_summary();
    }
#ifdef DCZ_CUDA
    printf("GPU: %s\n", why);
    RUN(test_sparse_fc);
    RUN(test_convolutions);
    RUN(test_pools_and_elements);
    RUN(test_int_rows);
    RUN(test_int_convolutions);
    RUN(test_models);
#endif
    return check_summary();
}
