/* test_gpu.c: the CUDA backend on a GPU against the CPU references. Without
 * the backend (a build without nvcc) or without a CUDA device it prints
 * SKIP with the reason and checks nothing else; it never passes silently.
 *
 * - kernels: the grid of test_kernels.c launched on the device: sparse
 *   matrix-vector and matrix-matrix (codebooks of 2 and 256 values, fp32
 *   values; densities 0, 0.5, 1 and 0.01 so fillers occur; batch 1 and 7,
 *   and 9 so a warp's sample group is cut short) against a dense product in
 *   double, within 1e-5 of each output's |w x| sum; the sparse direct
 *   convolution over the convolution grid (groups and depthwise included)
 *   against dcz_conv2d_direct_ref within the same bound; pools and the
 *   global mean bit for bit; activations and softmax within 4e-6
 *   relative (the device's expf and tanhf);
 * - models: every model of tests/fuzz/corpus/dcz but the regress-* ones,
 *   opened on the GPU (calibrated ones with precision FP32; with AUTO
 *   precision the GPU refuses them, DCZ_ERR_UNSUPPORTED) and on the CPU
 *   with the reference kernels, at batch 1 (twice: the captured graph
 *   replayed, with another input), 7 and 64, outputs within 1e-4 of
 *   1 + |reference|.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"
#include "tests/check.h"
#define TEST_RNG_SEED 9090
#include "tests/unit/test_util.h"
#include "tests/unit/conv_geom.h"
#include "tests/unit/sparse_mat.h"

#ifdef DCZ_CUDA
#include <cuda_runtime_api.h>

#include "runtime/gpu.h"

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

static void free_gsparse(dcz_gsparse *g)
{
    cudaFree((void *)g->row_ptr);
    cudaFree((void *)g->step);
    cudaFree((void *)g->idx);
    cudaFree((void *)g->codebook);
    cudaFree((void *)g->val);
}

static void test_sparse_fc(void)
{
    const uint32_t sizes[][2] = { { 1, 1 }, { 1, 7 }, { 7, 1 }, { 3, 5 }, { 17, 31 }, { 33, 300 },
                                  { 5, 1000 }, { 64, 64 }, { 300, 784 } };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01 };
    const uint32_t codebooks[] = { 2, 256, 0 };
    const size_t batches[] = { 1, 7, 9 };
    size_t bad = 0, cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t di = 0; di < 4; di++)
            for (size_t ci = 0; ci < 3; ci++) {
                mat m;
                const uint32_t rows = sizes[si][0], cols = sizes[si][1];
                REQUIRE(make_mat(&m, rows, cols, dens[di], codebooks[ci]), "build");
                const size_t B = 9;
                float *x = malloc(B * cols * 4), *bias = malloc(rows * 4), *y = malloc(B * rows * 4);
                for (size_t i = 0; i < B * cols; i++) x[i] = nonzero();
                for (uint32_t i = 0; i < rows; i++) bias[i] = nonzero();
                dcz_gsparse g = upload_sparse(&m.sp);
                float *dx = dev_copy(x, B * cols * 4), *db = dev_copy(bias, rows * 4), *dy = dev_copy(NULL, B * rows * 4);
                for (size_t bi = 0; bi < 3; bi++) {
                    const size_t b = batches[bi];
                    const dcz_status s = b == 1 ? dcz_spmv__cuda(&g, db, dx, dy, NULL)
                                                : dcz_spmm__cuda(&g, db, dx, b, dy, rows, 1, NULL);
                    CHECK(s == DCZ_OK, "launch: %s", dcz_status_str(s));
                    host_copy(y, dy, b * rows * 4);
                    for (size_t k = 0; k < b; k++)
                        for (uint32_t r = 0; r < rows; r++) {
                            double ref = bias[r], mag = fabs(bias[r]);
                            for (uint32_t c = 0; c < cols; c++) {
                                const double t = (double)m.dense[(size_t)r * cols + c] * x[k * cols + c];
                                ref += t;
                                mag += fabs(t);
                            }
                            if (fabs(y[k * rows + r] - ref) > 1e-5 * (mag + 1) && bad++ < 3)
                                fprintf(stderr, "  %ux%u k %u batch %zu: y[%zu][%u] = %.8g, reference %.8g\n", rows,
                                        cols, codebooks[ci], b, k, r, y[k * rows + r], ref);
                        }
                    cases++;
                }
                free_gsparse(&g);
                cudaFree(dx); cudaFree(db); cudaFree(dy);
                free(x); free(bias); free(y);
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
                float *dx = dev_copy(x, B * xin * 4), *db = dev_copy(bias, g->out_c * 4), *dy = dev_copy(NULL, B * yout * 4);
                CHECK(dcz_conv2d_sparse__cuda(g, &gs, db, dx, B, dy, NULL) == DCZ_OK, "launch");
                host_copy(y, dy, B * yout * 4);
                for (size_t i = 0; i < B * yout; i++)
                    if (!(fabsf(y[i] - ref[i]) <= 1e-5f * (mag[i] + 1e-6f)) && bad++ < 3)
                        fprintf(stderr, "  conv geometry %zu: y[%zu] = %.8g, reference %.8g\n", gi, i, y[i], ref[i]);
                cases++;
                free_gsparse(&gs);
                cudaFree(dx); cudaFree(db); cudaFree(dy);
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
                             DCZ_OP_HARD_SIGMOID, DCZ_OP_HARD_SWISH };
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

/* ---- whole models ------------------------------------------------------------ */

static size_t models, calibrated;

static void model_case(const char *path, const uint8_t *buf, size_t len)
{
    dcz_options c, g;
    dcz_options_init(&c);
    c.device = DCZ_DEVICE_CPU;
    c.force_reference = 1;
    dcz_options_init(&g);
    g.device = DCZ_DEVICE_GPU;
    dcz_model *mc = NULL, *mg = NULL;
    dcz_status s = dcz_open_memory(buf, len, &g, &mg);
    if (s == DCZ_ERR_UNSUPPORTED) {   /* calibrated: the integer path is the CPU's */
        calibrated++;
        c.precision = g.precision = DCZ_PRECISION_FP32;
        s = dcz_open_memory(buf, len, &g, &mg);
    }
    CHECK(s == DCZ_OK && dcz_model_device(mg) == DCZ_DEVICE_GPU, "%s on the GPU: %s", path, dcz_status_str(s));
    REQUIRE(dcz_open_memory(buf, len, &c, &mc) == DCZ_OK, "%s on the CPU", path);
    if (s != DCZ_OK) { dcz_close(mc); return; }
    const size_t in = dcz_input_size(mc), out = dcz_output_size(mc), B = 64;
    float *x = malloc(B * in * 4), *yc = malloc(B * out * 4), *yg = malloc(B * out * 4);
    const size_t batches[] = { 1, 1, 7, 64 };
    for (size_t bi = 0; bi < 4; bi++) {
        const size_t b = batches[bi];
        for (size_t i = 0; i < b * in; i++) x[i] = frand();
        CHECK(dcz_run(mc, x, b, yc) == DCZ_OK && dcz_run(mg, x, b, yg) == DCZ_OK, "%s: run batch %zu", path, b);
        size_t off = 0;
        for (size_t i = 0; i < b * out; i++) off += !(fabsf(yg[i] - yc[i]) <= 1e-4f * (1 + fabsf(yc[i])));
        CHECK(off == 0, "%s batch %zu: %zu outputs off", path, b, off);
    }
    models++;
    free(x); free(yc); free(yg);
    dcz_close(mc);
    dcz_close(mg);
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
    CHECK(models >= 20 && calibrated >= 5, "%zu models, %zu calibrated", models, calibrated);
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
    RUN(test_models);
#endif
    return check_summary();
}
