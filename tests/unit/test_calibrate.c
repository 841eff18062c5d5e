/* test_calibrate.c: the calibrate stage and integer execution end to end.
 *
 * - The same calibration samples give bit-identical tables whatever the
 *   batch size and order (every method, every scheme).
 * - A calibrated model runs on integers and stays close to its float twin
 *   (int8, fixed8, fixed16; dense, pruned and codebook weights; conv,
 *   pools, dense).
 * - A graph (residual Add, squeeze-and-excitation Mul, Concat, depthwise
 *   convolution, table activations) does the same, with one scale per
 *   tensor and the refusals of tables that break the scale rules; an Add
 *   takes the ReLU after it, with the bits of the two run apart.
 * - A fixed-point MLP computed by hand from docs/FORMAT.md ("Integer
 *   execution") equals libdcz's output bit for bit.
 * - SILU's table is the format's rule and, within a step, the definition.
 * - Tables survive their text form exactly; malformed tables and CALIB
 *   sections that do not fit the graph are refused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/plan.h"
#include "runtime/model.h"
#include "runtime/tool.h"
#include "tests/check.h"
#include "tests/unit/test_util.h"
#include "tests/unit/doc_build.h"

static float urand(dcz_rng *r, float lo, float hi) { return lo + (hi - lo) * dcz_rng_uniform(r); }

/* input (1, 8, 8) -> conv1 3x3 pad 1 (4, dense) -> relu -> maxpool 2 ->
 * conv2 3x3 (6, codebook, half pruned) -> avgpool 2 -> flatten -> fc1 (16,
 * dense) -> relu -> fc2 (5, sparse fp32) -> softmax */
static void fill_params(dcz_doc *d, uint64_t seed);

static dcz_doc *make_net(uint64_t seed)
{
    dcz_doc *d;
    if (dcz_doc_alloc(10, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 1; d->input_dims[1] = 8; d->input_dims[2] = 8;
    dcz_doc_layer *L = d->layers;
    doc_conv_layer(&L[0], "conv1", 1, 4, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&L[1], DCZ_OP_RELU, "relu1");
    doc_pool_layer(&L[2], DCZ_OP_MAXPOOL, "pool1", 2, 2, 0, 0);
    doc_conv_layer(&L[3], "conv2", 4, 6, 3, 1, 0, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    doc_pool_layer(&L[4], DCZ_OP_AVGPOOL, "pool2", 2, 2, 0, 0);
    doc_plain_layer(&L[5], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&L[6], "fc1", 6, 16, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&L[7], DCZ_OP_RELU, "relu2");
    doc_dense_layer(&L[8], "fc2", 16, 5, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW);
    doc_plain_layer(&L[9], DCZ_OP_SOFTMAX, "prob");
    fill_params(d, seed);
    return d;
}

/* Random parameters for every weighted layer of d: biases, codebooks,
 * half of the weights of masked layers, assignments or values. */
static void fill_params(dcz_doc *d, uint64_t seed)
{
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (uint32_t li = 0; li < d->nlayers; li++) {
        dcz_doc_layer *l = &d->layers[li];
        if (!l->ntensors) continue;
        dcz_doc_tensor *w = &l->t[0], *b = &l->t[1];
        for (size_t i = 0; i < b->n; i++) b->values[i] = urand(&r, -0.2f, 0.2f);
        if (w->enc == DCZ_ENC_CODEBOOK)
            for (uint32_t k = 0; k < w->k; k++) w->codebook[k] = urand(&r, -0.6f, 0.6f);
        for (size_t i = 0; i < w->n; i++) {
            if (w->mask) {
                w->mask[i] = dcz_rng_uniform(&r) < 0.5f;
                if (!w->mask[i]) continue;
            }
            if (w->enc == DCZ_ENC_CODEBOOK) {
                w->assign[i] = (uint8_t)dcz_rng_below(&r, w->k);
                w->values[i] = w->codebook[w->assign[i]];
            } else {
                w->values[i] = urand(&r, -0.5f, 0.5f);
            }
        }
    }
}

static int make_data(dcz_dataset *data, size_t n, uint64_t seed)
{
    memset(data, 0, sizeof *data);
    data->x = malloc(n * 64 * sizeof *data->x);
    data->y = malloc(n);
    if (!data->x || !data->y) return 0;
    data->n = n;
    data->c = 1; data->h = 8; data->w = 8;
    data->classes = 5;
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        data->y[i] = (uint8_t)dcz_rng_below(&r, 5);
        for (int j = 0; j < 64; j++) {
            float v = dcz_rng_uniform(&r);
            data->x[i * 64 + j] = v * v; /* skewed towards 0, like images */
        }
    }
    return 1;
}

static const dcz_cal_method methods[] = { DCZ_CAL_MINMAX, DCZ_CAL_PERCENTILE, DCZ_CAL_MSE, DCZ_CAL_ENTROPY };
static const uint32_t schemes[] = { DCZ_SCHEME_INT8, DCZ_SCHEME_FIXED8, DCZ_SCHEME_FIXED16 };

static void fill_cfg(dcz_cal_layer_cfg *cfg, uint32_t count, dcz_cal_method m, int per_channel)
{
    for (uint32_t j = 0; j < count; j++) {
        cfg[j].method = m;
        cfg[j].percentile = 99.9;
        cfg[j].per_channel = per_channel;
    }
}

static int same_table(const dcz_doc_calib *a, const dcz_doc_calib *b)
{
    if (a->scheme != b->scheme || a->count != b->count || a->model_hash != b->model_hash ||
        a->data_hash != b->data_hash)
        return 0;
    for (uint32_t j = 0; j < a->count; j++) {
        if (a->e[j].layer != b->e[j].layer || a->e[j].nw != b->e[j].nw ||
            dcz_f32_bits(a->e[j].in_scale) != dcz_f32_bits(b->e[j].in_scale))
            return 0;
        for (uint32_t i = 0; i < a->e[j].nw; i++)
            if (dcz_f32_bits(a->e[j].w_scale[i]) != dcz_f32_bits(b->e[j].w_scale[i])) return 0;
    }
    return 1;
}

static void test_order_and_batch_independence(void)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 600, 11), "data");
    dcz_doc *d = make_net(1);
    REQUIRE(d, "net");
    size_t *a = malloc(500 * sizeof *a), *b = malloc(500 * sizeof *b);
    for (size_t i = 0; i < 500; i++) a[i] = i;
    memcpy(b, a, 500 * sizeof *b);
    dcz_rng r;
    dcz_rng_seed(&r, 5);
    for (size_t i = 500; i > 1; i--) {
        size_t j = dcz_rng_below(&r, (uint32_t)i), t = b[i - 1];
        b[i - 1] = b[j];
        b[j] = t;
    }
    dcz_cal_collect ca, cb;
    REQUIRE(dcz_cal_collect_stats(d, &data, a, 500, 100, NULL, NULL, &ca) == DCZ_OK, "collect a");
    REQUIRE(dcz_cal_collect_stats(d, &data, b, 500, 37, NULL, NULL, &cb) == DCZ_OK, "collect b");
    CHECK(ca.count == 4 && cb.count == 4, "4 weighted layers, got %u", ca.count);
    CHECK(ca.data_hash == cb.data_hash, "data hash depends on order");
    CHECK(ca.model_hash == cb.model_hash, "model hash differs");
    CHECK(ca.ntensors == cb.ntensors && memcmp(ca.stats, cb.stats, ca.ntensors * sizeof *ca.stats) == 0, "statistics differ");
    dcz_cal_layer_cfg cfg[4];
    dcz_cal_result res[4];
    for (size_t s = 0; s < 3; s++)
        for (size_t m = 0; m < 4; m++) {
            dcz_doc *da = make_net(1), *db = make_net(1);
            fill_cfg(cfg, 4, methods[m], (int)(m & 1));
            CHECK(dcz_cal_apply(da, schemes[s], &ca, cfg, res) == DCZ_OK, "apply a");
            CHECK(dcz_cal_apply(db, schemes[s], &cb, cfg, res) == DCZ_OK, "apply b");
            CHECK(da->calib && db->calib && same_table(da->calib, db->calib),
                  "scheme %u method %u: tables differ", schemes[s], methods[m]);
            dcz_doc_free(da);
            dcz_doc_free(db);
        }
    /* a different sample set gives a different data hash */
    uint64_t h499 = 0;
    CHECK(dcz_cal_data_hash(&data, a, 499, &h499) == DCZ_OK && h499 != ca.data_hash, "data hash ignores a sample");
    dcz_cal_collect_free(&ca);
    dcz_cal_collect_free(&cb);
    free(a);
    free(b);
    dcz_doc_free(d);
    dcz_dataset_free(&data);
}

/* runs doc bytes on every sample with the given precision */
static int run_all(const uint8_t *buf, size_t len, dcz_precision p, const dcz_dataset *data,
                   float *out, dcz_scheme *scheme)
{
    dcz_options o;
    dcz_options_init(&o);
    o.precision = p;
    dcz_model *m;
    if (dcz_open_memory(buf, len, &o, &m) != DCZ_OK) return 0;
    *scheme = dcz_model_scheme(m);
    int ok = dcz_run(m, data->x, data->n, out) == DCZ_OK;
    /* batch 1 gives the same bits as a batch */
    float one[5];
    for (size_t i = 0; ok && i < data->n; i += 37) {
        ok = dcz_run(m, data->x + i * 64, 1, one) == DCZ_OK && memcmp(one, out + i * 5, sizeof one) == 0;
    }
    dcz_close(m);
    /* and the reference kernels give the same bits (the integer kernels
     * are exact; the float ones only where the model runs on integers) */
    if (ok && *scheme != DCZ_SCHEME_NONE) {
        o.force_reference = 1;
        float *ref = malloc(data->n * 5 * sizeof *ref);
        ok = ref && dcz_open_memory(buf, len, &o, &m) == DCZ_OK;
        if (ok) {
            ok = dcz_run(m, data->x, data->n, ref) == DCZ_OK && memcmp(ref, out, data->n * 5 * sizeof *ref) == 0;
            dcz_close(m);
        }
        free(ref);
    }
    return ok;
}

static void test_integer_close_to_float(void)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 400, 21), "data");
    size_t idx[300];
    for (size_t i = 0; i < 300; i++) idx[i] = i;
    float *fo = malloc(data.n * 5 * sizeof *fo), *qo = malloc(data.n * 5 * sizeof *qo);
    /* the tolerances: max |p_int - p_float| over all outputs, and top-1 agreement */
    const double tol[3] = { 0.08, 0.3, 0.002 };
    const double agree_min[3] = { 0.9, 0.6, 0.99 };
    for (size_t s = 0; s < 3; s++) {
        dcz_doc *d = make_net(3);
        uint8_t *fbuf, *qbuf;
        size_t flen, qlen;
        REQUIRE(dcz_doc_write(d, &fbuf, &flen) == DCZ_OK, "write float");
        dcz_cal_collect c;
        REQUIRE(dcz_cal_collect_stats(d, &data, idx, 300, 64, NULL, NULL, &c) == DCZ_OK, "collect");
        dcz_cal_layer_cfg cfg[4];
        dcz_cal_result res[4];
        fill_cfg(cfg, 4, s == 1 ? DCZ_CAL_MSE : DCZ_CAL_MINMAX, s == 0);
        REQUIRE(dcz_cal_apply(d, schemes[s], &c, cfg, res) == DCZ_OK, "apply");
        dcz_cal_collect_free(&c);
        CHECK(d->layers[0].t[0].enc == (s == 2 ? DCZ_ENC_I16 : DCZ_ENC_I8), "dense weights as integers");
        CHECK(d->layers[3].t[0].enc == DCZ_ENC_CODEBOOK && d->layers[8].t[0].enc == DCZ_ENC_SPARSE_F32,
              "sparse weights keep their encoding");
        REQUIRE(dcz_doc_write(d, &qbuf, &qlen) == DCZ_OK, "write calibrated");
        dcz_scheme fs, qs, ps;
        REQUIRE(run_all(fbuf, flen, DCZ_PRECISION_AUTO, &data, fo, &fs), "float run");
        REQUIRE(run_all(qbuf, qlen, DCZ_PRECISION_AUTO, &data, qo, &qs), "integer run");
        CHECK(fs == DCZ_SCHEME_NONE && qs == (dcz_scheme)schemes[s], "schemes %d %d", fs, qs);
        double maxd = 0;
        size_t agree = 0;
        for (size_t i = 0; i < data.n; i++) {
            size_t af = 0, aq = 0;
            for (int k = 0; k < 5; k++) {
                double e = fabs((double)fo[i * 5 + k] - qo[i * 5 + k]);
                if (e > maxd) maxd = e;
                if (fo[i * 5 + k] > fo[i * 5 + af]) af = (size_t)k;
                if (qo[i * 5 + k] > qo[i * 5 + aq]) aq = (size_t)k;
            }
            agree += af == aq;
        }
        CHECK(maxd <= tol[s], "scheme %u: max |diff| %g > %g", schemes[s], maxd, tol[s]);
        CHECK((double)agree / data.n >= agree_min[s], "scheme %u: top-1 agreement %zu of %zu",
              schemes[s], agree, data.n);
        /* SQNR rises with the bits */
        double sq[4];
        REQUIRE(dcz_cal_sqnr(fbuf, flen, qbuf, qlen, &data, idx, 300, 50, 4, sq) == DCZ_OK, "sqnr");
        for (int j = 0; j < 4; j++)
            CHECK(sq[j] > (s == 2 ? 40 : 10), "scheme %u layer %d: SQNR %g dB", schemes[s], j, sq[j]);
        /* FP32 precision ignores the table */
        REQUIRE(run_all(qbuf, qlen, DCZ_PRECISION_FP32, &data, qo, &ps), "fp32 run");
        CHECK(ps == DCZ_SCHEME_NONE, "precision fp32 runs in float");
        free(fbuf);
        free(qbuf);
        dcz_doc_free(d);
    }
    free(fo);
    free(qo);
    dcz_dataset_free(&data);
}

/* ---- graphs on integers -------------------------------------------------------- */

/* Layer i of d reads the tensors in[0 .. nin). */
static void reads(dcz_doc *d, uint32_t i, uint32_t nin, uint32_t a, uint32_t b)
{
    d->layers[i].nin = nin;
    d->layers[i].in[0] = a;
    d->layers[i].in[1] = b;
}

/* A float activation attribute list. */
static void act_attrs(dcz_doc_layer *l, uint32_t n, float a, float b)
{
    l->nattr = n;
    l->attr[0] = dcz_f32_attr(a);
    l->attr[1] = dcz_f32_attr(b);
}

/* input (1, 8, 8) -> conv1 (4, dense) -> relu1 -> conv2 (4, codebook) ->
 * clip [0, 6] -> add (relu1 + clip) -> dw (depthwise 4, sparse) -> gap ->
 * se (1x1 convolution 4 -> 4 of the one cell, codebook: the fully
 * connected kernels run it) -> gate (hard sigmoid) -> mul (dw x gate) -> concat
 * (mul, relu1) -> leaky -> maxpool 2 -> flatten -> fc (128 -> 5, sparse)
 * -> softmax: every op of the integer region. */
static dcz_doc *make_graph(uint64_t seed)
{
    dcz_doc *d;
    if (dcz_doc_alloc(16, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 1; d->input_dims[1] = 8; d->input_dims[2] = 8;
    dcz_doc_layer *L = d->layers;
    doc_conv_layer(&L[0], "conv1", 1, 4, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&L[1], DCZ_OP_RELU, "relu1");
    doc_conv_layer(&L[2], "conv2", 4, 4, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    doc_plain_layer(&L[3], DCZ_OP_CLIP, "clip");
    act_attrs(&L[3], 2, 0.0f, 6.0f);
    doc_plain_layer(&L[4], DCZ_OP_ADD, "add");
    reads(d, 4, 2, 2, 4);
    doc_conv_layer(&L[5], "dw", 4, 4, 3, 1, 1, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW);
    doc_conv_groups(&L[5], 4);
    doc_plain_layer(&L[6], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_conv_layer(&L[7], "se", 4, 4, 1, 1, 0, DCZ_ENC_CODEBOOK, 3, 4, DCZ_CODING_HUFFMAN);
    doc_plain_layer(&L[8], DCZ_OP_HARD_SIGMOID, "gate");
    act_attrs(&L[8], 2, 1.0f / 6, 0.5f);
    doc_plain_layer(&L[9], DCZ_OP_MUL, "mul");
    reads(d, 9, 2, 6, 9);
    doc_plain_layer(&L[10], DCZ_OP_CONCAT, "cat");
    reads(d, 10, 2, 10, 2);
    doc_plain_layer(&L[11], DCZ_OP_LEAKY_RELU, "leaky");
    act_attrs(&L[11], 1, 0.1f, 0);
    doc_pool_layer(&L[12], DCZ_OP_MAXPOOL, "pool", 2, 2, 0, 0);
    doc_plain_layer(&L[13], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&L[14], "fc", 128, 5, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW);
    doc_plain_layer(&L[15], DCZ_OP_SOFTMAX, "prob");
    fill_params(d, seed);
    return d;
}

/* d calibrated in scheme on its first ncal samples (count weighted layers,
 * min-max per channel) and written to *buf; 0 when a step fails. */
static int calibrate_doc_by(dcz_doc *d, const dcz_dataset *data, size_t ncal, uint32_t scheme, uint32_t count,
                            int per_channel, uint8_t **buf, size_t *len)
{
    size_t idx[200];
    dcz_cal_collect c;
    dcz_cal_layer_cfg cfg[8];
    dcz_cal_result res[8];
    if (ncal > 200 || count > 8) return 0;
    for (size_t i = 0; i < ncal; i++) idx[i] = i;
    if (dcz_cal_collect_stats(d, data, idx, ncal, 50, NULL, NULL, &c) != DCZ_OK) return 0;
    fill_cfg(cfg, count, DCZ_CAL_MINMAX, per_channel);
    const int ok = c.count == count && dcz_cal_apply(d, scheme, &c, cfg, res) == DCZ_OK &&
                   dcz_doc_write(d, buf, len) == DCZ_OK;
    dcz_cal_collect_free(&c);
    return ok;
}

static int calibrate_doc(dcz_doc *d, const dcz_dataset *data, size_t ncal, uint32_t scheme, uint32_t count,
                         uint8_t **buf, size_t *len)
{
    return calibrate_doc_by(d, data, ncal, scheme, count, 1, buf, len);
}

/* The float file and the calibrated one run on every sample of data
 * (run_all: batch, sample by sample and reference kernels alike): the
 * latter on integers of scheme, within tol of the former but not equal. */
static void integer_gap(const uint8_t *fbuf, size_t flen, const uint8_t *qbuf, size_t qlen, const dcz_dataset *data,
                        uint32_t scheme, double tol, float *fo, float *qo)
{
    dcz_scheme fs, qs;
    REQUIRE(run_all(fbuf, flen, DCZ_PRECISION_AUTO, data, fo, &fs), "float run");
    REQUIRE(run_all(qbuf, qlen, DCZ_PRECISION_AUTO, data, qo, &qs), "integer run");
    CHECK(qs == (dcz_scheme)scheme, "runs on integers");
    double maxd = 0;
    for (size_t i = 0; i < data->n * 5; i++) maxd = fmax(maxd, fabs((double)fo[i] - qo[i]));
    CHECK(maxd <= tol && maxd > 0, "scheme %u: max |diff| %g (limit %g)", scheme, maxd, tol);
}

/* A graph with residual Add, Mul, Concat, depthwise convolution and table
 * activations runs on integers close to float in every scheme; ops that
 * keep the scale share it; the table survives text; a table whose tensor
 * scales break a rule, or a graph table without tensor scales, is
 * refused. */
static void test_graph_integer(void)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 300, 41), "data");
    size_t idx[200];
    for (size_t i = 0; i < 200; i++) idx[i] = i;
    float *fo = malloc(data.n * 5 * sizeof *fo), *qo = malloc(data.n * 5 * sizeof *qo);
    const double tol[3] = { 0.08, 0.3, 0.002 };
    uint32_t fused = 0;
    for (size_t s = 0; s < 3; s++) {
        dcz_doc *d = make_graph(7);
        REQUIRE(d, "graph");
        uint8_t *fbuf, *qbuf;
        size_t flen, qlen;
        REQUIRE(dcz_doc_write(d, &fbuf, &flen) == DCZ_OK, "write float");
        dcz_cal_collect c;
        REQUIRE(dcz_cal_collect_stats(d, &data, idx, 200, 64, NULL, NULL, &c) == DCZ_OK, "collect");
        REQUIRE(c.count == 5 && c.ntensors == 17, "%u weighted layers, %u tensors", c.count, c.ntensors);
        dcz_cal_layer_cfg cfg[5];
        dcz_cal_result res[5];
        fill_cfg(cfg, 5, DCZ_CAL_MINMAX, s == 0);
        REQUIRE(dcz_cal_apply(d, schemes[s], &c, cfg, res) == DCZ_OK, "apply");
        const float *ts = d->calib->t_scale;
        REQUIRE(ts && d->calib->ntensors == 17, "tensor scales");
        CHECK(ts[1] == ts[2] && ts[12] == ts[13] && ts[13] == ts[14], "ops that keep the scale share it");
        /* the Mul's output, which the Concat alone reads, is written on the
         * Concat's scale (its own range is narrower) */
        CHECK(ts[10] == ts[11], "the Mul's scale %g, the Concat's %g", ts[10], ts[11]);
        /* the global average has a range of its own, narrower than its input's */
        CHECK(ts[7] < ts[6], "the global average's scale %g, its input's %g", ts[7], ts[6]);
        CHECK(ts[0] > 0 && ts[4] > 0 && ts[9] > 0 && ts[15] == 0 && ts[16] == 0,
              "the region's tensors have scales, the float tail none");
        CHECK(d->calib->e[1].in_scale == ts[2] && d->calib->e[3].in_scale == ts[7], "in_scale is the input's");
        REQUIRE(dcz_doc_write(d, &qbuf, &qlen) == DCZ_OK, "write calibrated");
        integer_gap(fbuf, flen, qbuf, qlen, &data, schemes[s], tol[s], fo, qo);
        /* the CLIP alone after conv2 shares its scale: a clamp, which every
         * scheme fuses into conv2's requantization, as ReLU into conv1's,
         * whatever form the convolution runs on (run_all: the same bits as
         * the reference kernels, which run them apart) */
        CHECK(ts[3] == ts[4], "the CLIP's scale %g, conv2's %g", ts[4], ts[3]);
        dcz_model *fm;
        REQUIRE(dcz_open_memory(qbuf, qlen, NULL, &fm) == DCZ_OK, "open calibrated");
        for (uint32_t i = 0; i < 4; i += 2) {
            dcz_layer_desc wd, ad;
            REQUIRE(dcz_describe_layer(fm, i, &wd) == DCZ_OK && dcz_describe_layer(fm, i + 1, &ad) == DCZ_OK,
                    "describe");
            const int is_fused = strcmp(ad.kernel, "fused") == 0;
            CHECK(is_fused && strstr(wd.kernel, "(integers)"), "scheme %u: layer %u runs %s, the next %s",
                  schemes[s], i, wd.kernel, ad.kernel);
            fused += is_fused;
        }
        /* squeeze-and-excitation's convolution of one cell on the integer
         * fully connected kernels (run_all: the references' bits) */
        dcz_layer_desc se;
        REQUIRE(dcz_describe_layer(fm, 7, &se) == DCZ_OK, "describe se");
        CHECK(strstr(se.kernel, "qspmm") != NULL, "scheme %u: se runs %s", schemes[s], se.kernel);
        dcz_close(fm);

        /* through text and back, the same table */
        char *text, method[32], err[256];
        dcz_doc_calib *back = NULL;
        REQUIRE(dcz_cal_table_format(d, "minmax", 200, &text) == DCZ_OK, "format");
        CHECK(dcz_cal_table_parse(text, d, &back, method, sizeof method, NULL, err, sizeof err) == DCZ_OK &&
              back && back->ntensors == 17 && memcmp(back->t_scale, ts, 17 * sizeof *ts) == 0,
              "tensor scales through text: %s", err);
        dcz_doc_calib_free(back);
        free(text);

        /* a pool whose output scale differs from its input's: refused */
        dcz_model *m = NULL;
        d->calib->t_scale[13] *= 2;
        uint8_t *bad;
        size_t blen;
        REQUIRE(dcz_doc_write(d, &bad, &blen) == DCZ_OK, "write");
        CHECK(dcz_open_memory(bad, blen, NULL, &m) == DCZ_ERR_FORMAT, "a pool changing scale accepted");
        free(bad);
        d->calib->t_scale[13] /= 2;
        /* an in_scale that is not its input's scale: refused by the reader */
        d->calib->t_scale[2] *= 2;
        CHECK(dcz_doc_write(d, &bad, &blen) == DCZ_ERR_ARG, "in_scale off its tensor's scale written");
        d->calib->t_scale[2] /= 2;
        /* without tensor scales a graph cannot run on integers */
        free(d->calib->t_scale);
        d->calib->t_scale = NULL;
        d->calib->ntensors = 0;
        REQUIRE(dcz_doc_write(d, &bad, &blen) == DCZ_OK, "write without tensor scales");
        CHECK(dcz_open_memory(bad, blen, NULL, &m) == DCZ_ERR_UNSUPPORTED, "a graph without tensor scales ran");
        free(bad);
        free(fbuf);
        free(qbuf);
        dcz_cal_collect_free(&c);
        dcz_doc_free(d);
    }
    CHECK(fused == 6, "activations fused in %u convolutions of the three schemes", fused);
    /* a tensor an Add, Concat or Mul reads keeps its range: min-max there */
    dcz_doc *d = make_graph(7);
    dcz_cal_collect c;
    dcz_cal_layer_cfg cfg[5];
    dcz_cal_result res[5];
    fill_cfg(cfg, 5, DCZ_CAL_ENTROPY, 1);
    REQUIRE(d && dcz_cal_collect_stats(d, &data, idx, 200, 64, NULL, NULL, &c) == DCZ_OK &&
            dcz_cal_apply(d, DCZ_SCHEME_INT8, &c, cfg, res) == DCZ_OK, "entropy");
    CHECK(res[0].act.method == DCZ_CAL_ENTROPY && res[1].act.method == DCZ_CAL_MINMAX &&
          res[4].act.method == DCZ_CAL_ENTROPY, "methods %d %d %d: relu1 feeds the Add and the Concat",
          res[0].act.method, res[1].act.method, res[4].act.method);
    dcz_cal_collect_free(&c);
    dcz_doc_free(d);
    free(fo);
    free(qo);
    dcz_dataset_free(&data);
}

/* input (1, 8, 8) -> conv1 (8, dense) -> relu -> CHANNEL_SHUFFLE of 2 ->
 * SLICE 0..2, SLICE 3..7 -> conv2 of the second (5, codebook) -> concat
 * (first, conv2) -> CHANNEL_SHUFFLE of 4 -> SLICE 2..7 -> maxpool 2 ->
 * flatten -> fc (96 -> 5) -> softmax: ShuffleNet's moves on integers. */
static dcz_doc *doc_8x8(uint32_t nlayers);

static dcz_doc *make_shuffle(uint64_t seed)
{
    dcz_doc *d = doc_8x8(13);
    if (!d) return NULL;
    dcz_doc_layer *L = d->layers;
    doc_conv_layer(&L[0], "conv1", 1, 8, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&L[1], DCZ_OP_RELU, "relu1");
    doc_gather_layer(&L[2], "shuffle1", 2, 0);
    doc_gather_layer(&L[3], "part1", 0, 3);
    doc_gather_layer(&L[4], "part2", 3, 5);
    reads(d, 4, 1, 3, 0);
    doc_conv_layer(&L[5], "conv2", 5, 5, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    doc_plain_layer(&L[6], DCZ_OP_CONCAT, "cat");
    reads(d, 6, 2, 4, 6);
    doc_gather_layer(&L[7], "shuffle2", 4, 0);
    doc_gather_layer(&L[8], "part3", 2, 6);
    doc_pool_layer(&L[9], DCZ_OP_MAXPOOL, "pool", 2, 2, 0, 0);
    doc_plain_layer(&L[10], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&L[11], "fc", 96, 5, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW);
    doc_plain_layer(&L[12], DCZ_OP_SOFTMAX, "prob");
    fill_params(d, seed);
    return d;
}

/* Channel shuffles and slices run on integers in every scheme, close to
 * float, batch and reference kernels bit for bit (run_all); they keep
 * their input's scale. */
static void test_shuffle_integer(void)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 200, 43), "data");
    float *fo = malloc(data.n * 5 * sizeof *fo), *qo = malloc(data.n * 5 * sizeof *qo);
    const double tol[3] = { 0.08, 0.3, 0.002 };
    for (size_t s = 0; s < 3; s++) {
        dcz_doc *d = make_shuffle(9);
        REQUIRE(d, "graph");
        uint8_t *fbuf, *qbuf;
        size_t flen, qlen;
        REQUIRE(dcz_doc_write(d, &fbuf, &flen) == DCZ_OK, "write float");
        REQUIRE(calibrate_doc_by(d, &data, 150, schemes[s], 3, s == 0, &qbuf, &qlen), "calibrate");
        const float *ts = d->calib->t_scale;
        REQUIRE(ts && d->calib->ntensors == 14, "tensor scales");
        CHECK(ts[2] == ts[3] && ts[3] == ts[4] && ts[4] == ts[5] && ts[7] == ts[8] && ts[8] == ts[9] &&
              ts[9] == ts[10], "shuffles and slices keep the scale");
        integer_gap(fbuf, flen, qbuf, qlen, &data, schemes[s], tol[s], fo, qo);
        dcz_model *m;
        REQUIRE(dcz_open_memory(qbuf, qlen, NULL, &m) == DCZ_OK, "open calibrated");
        dcz_layer_desc ld;
        CHECK(dcz_describe_layer(m, 2, &ld) == DCZ_OK && strcmp(ld.kernel, "qgather_channels_ref") == 0,
              "shuffle1 runs %s", ld.kernel);
        CHECK(dcz_describe_layer(m, 8, &ld) == DCZ_OK && strcmp(ld.kernel, "qgather_channels_ref") == 0,
              "part3 runs %s", ld.kernel);
        dcz_close(m);
        free(fbuf);
        free(qbuf);
        dcz_doc_free(d);
    }
    free(fo);
    free(qo);
    dcz_dataset_free(&data);
}

/* A doc of nlayers layers on the (1, 8, 8) input of make_data. */
static dcz_doc *doc_8x8(uint32_t nlayers)
{
    dcz_doc *d;
    if (dcz_doc_alloc(nlayers, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 1; d->input_dims[1] = 8; d->input_dims[2] = 8;
    return d;
}


/* input (1, 8, 8) -> conv1 (4, dense) -> relu1 -> conv2 (4, codebook) ->
 * add (conv2 + relu1) -> relu -> gap -> fc (4 -> 5, dense) -> softmax: a
 * residual block whose ReLU after the Add the Add takes on integers, in
 * every scheme, with the bits of the two run apart (run_all: batch 1 and
 * the reference kernels, which run them apart, give the same bits). */
static void test_residual_relu_fused(void)
{
    uint32_t table_adds = 0;
    dcz_dataset data;
    REQUIRE(make_data(&data, 200, 43), "data");
    float *fo = malloc(data.n * 5 * sizeof *fo), *qo = malloc(data.n * 5 * sizeof *qo);
    REQUIRE(fo && qo, "alloc");
    for (size_t s = 0; s < 3; s++) {
        dcz_doc *d = doc_8x8(8);
        REQUIRE(d, "alloc doc");
        dcz_doc_layer *L = d->layers;
        doc_conv_layer(&L[0], "conv1", 1, 4, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
        doc_plain_layer(&L[1], DCZ_OP_RELU, "relu1");
        doc_conv_layer(&L[2], "conv2", 4, 4, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
        doc_plain_layer(&L[3], DCZ_OP_ADD, "add");
        reads(d, 3, 2, 3, 2);
        doc_plain_layer(&L[4], DCZ_OP_RELU, "relu");
        doc_plain_layer(&L[5], DCZ_OP_GLOBAL_AVGPOOL, "gap");
        doc_dense_layer(&L[6], "fc", 4, 5, DCZ_ENC_F32, 0, 0, 0);
        doc_plain_layer(&L[7], DCZ_OP_SOFTMAX, "prob");
        fill_params(d, 17 + s);
        uint8_t *fbuf, *qbuf;
        size_t flen, qlen;
        REQUIRE(dcz_doc_write(d, &fbuf, &flen) == DCZ_OK, "write float");
        REQUIRE(calibrate_doc(d, &data, 200, schemes[s], 3, &qbuf, &qlen), "calibrate");
        dcz_scheme fs, qs;
        REQUIRE(run_all(fbuf, flen, DCZ_PRECISION_AUTO, &data, fo, &fs), "float run");
        CHECK(run_all(qbuf, qlen, DCZ_PRECISION_AUTO, &data, qo, &qs) && qs == (dcz_scheme)schemes[s],
              "scheme %u: the integer run differs at batch 1 or from the reference kernels", schemes[s]);
        dcz_model *m;
        REQUIRE(dcz_open_memory(qbuf, qlen, NULL, &m) == DCZ_OK, "open calibrated");
        dcz_layer_desc ad;
        CHECK(dcz_describe_layer(m, 4, &ad) == DCZ_OK && strcmp(ad.kernel, "fused") == 0,
              "scheme %u: the ReLU after the Add runs %s", schemes[s], ad.kernel);
        /* the 8-bit schemes' Add on its terms' tables where this build's
         * kernels take them (the run above gave the references' bits) */
        const dcz_exec_layer *add = &m->layers[3];
        dcz_q tab[2 * DCZ_QADD_TABLE];
        const int tables = dcz_qadd_table_entries(m->qmax) != 0 &&
                           dcz_qadd_tables(add->in_mult, add->in_shift, m->qmax, tab);
        CHECK((add->table != NULL) == tables && (!tables || memcmp(add->table, tab, sizeof tab) == 0),
              "scheme %u: the Add's tables %s where %s", schemes[s], add->table ? "made" : "not made",
              tables ? "this build takes these" : "none are taken");
        table_adds += tables;
        dcz_close(m);
        double maxd = 0;
        for (size_t i = 0; i < data.n * 5; i++) maxd = fmax(maxd, fabs((double)fo[i] - qo[i]));
        CHECK(maxd <= 0.3 && maxd > 0, "scheme %u: max |diff| %g from float", schemes[s], maxd);
        free(fbuf);
        free(qbuf);
        dcz_doc_free(d);
    }
    /* the two 8-bit schemes' Adds ran on their tables where this build takes them */
    CHECK(table_adds == (dcz_qadd_table_entries(127) ? 2u : 0u), "%u Adds on tables", table_adds);
    free(fo);
    free(qo);
    dcz_dataset_free(&data);
}

/* input (1, 8, 8) -> conv1 (128) -> relu -> maxpool 2 -> conv2 (4) -> relu
 * -> maxpool 2 -> gap -> fc (4 -> 5) -> softmax, wide enough that its
 * per-sample layers run by chunks of fewer samples than the batch (run.c).
 * Where the convolutions run on the integer shift form, each takes the pool
 * after it: conv1, the first weighted layer, takes the whole batch and its
 * pool a chunk at a time, conv2 and its pool the same chunks. The bits are
 * those of batch 1 and of the reference kernels, which pool apart. */
static void test_pool_fused_in_chunks(void)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 300, 47), "data");
    float *qo = malloc(data.n * 5 * sizeof *qo);
    dcz_doc *d = doc_8x8(10);
    REQUIRE(qo && d, "alloc");
    dcz_doc_layer *L = d->layers;
    doc_conv_layer(&L[0], "conv1", 1, 128, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&L[1], DCZ_OP_RELU, "relu1");
    doc_pool_layer(&L[2], DCZ_OP_MAXPOOL, "pool1", 2, 2, 0, 0);
    doc_conv_layer(&L[3], "conv2", 128, 4, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    doc_plain_layer(&L[4], DCZ_OP_RELU, "relu2");
    doc_pool_layer(&L[5], DCZ_OP_MAXPOOL, "pool2", 2, 2, 0, 0);
    doc_plain_layer(&L[6], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&L[7], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&L[8], "fc", 4, 5, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&L[9], DCZ_OP_SOFTMAX, "prob");
    fill_params(d, 29);
    uint8_t *qbuf;
    size_t qlen;
    REQUIRE(calibrate_doc(d, &data, 100, DCZ_SCHEME_INT8, 3, &qbuf, &qlen), "calibrate");
    dcz_scheme qs;
    CHECK(run_all(qbuf, qlen, DCZ_PRECISION_AUTO, &data, qo, &qs) && qs == DCZ_SCHEME_INT8,
          "the integer run differs at batch 1 or from the reference kernels");
    dcz_model *m;
    REQUIRE(dcz_open_memory(qbuf, qlen, NULL, &m) == DCZ_OK, "open calibrated");
    CHECK(m->tensors[1].chunk == 0 && m->tensors[2].chunk > 0 && m->tensors[2].chunk < data.n &&
          m->tensors[2].seg_last >= 5, "conv1 takes the batch (chunk %u), the layers after it chunks of %u samples "
          "up to layer %u", m->tensors[1].chunk, m->tensors[2].chunk, m->tensors[2].seg_last);
    for (uint32_t i = 0; i <= 3; i += 3) {
        dcz_layer_desc cd, pd;
        REQUIRE(dcz_describe_layer(m, i, &cd) == DCZ_OK && dcz_describe_layer(m, i + 2, &pd) == DCZ_OK, "describe");
        const int shift = strcmp(cd.kernel, "qconv2d_shift (integers)") == 0 ||
                          strcmp(cd.kernel, "qconv2d_amx (integers)") == 0;
        CHECK(shift == (strcmp(pd.kernel, "fused") == 0), "layer %u runs %s, its pool %s", i, cd.kernel, pd.kernel);
    }
    dcz_close(m);
    free(qbuf);
    dcz_doc_free(d);
    free(qo);
    dcz_dataset_free(&data);
}

/* The weights of output channels ch (n of them) of weighted layer l made
 * none: no weight stored, or 0 */
static void drop_channels(dcz_doc_layer *l, const uint32_t *ch, size_t n)
{
    dcz_doc_tensor *w = &l->t[0];
    const size_t row = w->n / w->dims[0];
    for (size_t k = 0; k < n; k++)
        for (size_t i = (size_t)ch[k] * row; i < (size_t)(ch[k] + 1) * row; i++) {
            if (w->mask) w->mask[i] = 0;
            w->values[i] = 0;
        }
}

/* input (1, 8, 8) -> conv1 (16, 3x3, padding pad1) -> act1 -> depthwise
 * 3x3 -> relu -> conv3 (8, 1x1) -> relu -> gap -> fc -> softmax, its
 * parameters from seed */
static dcz_doc *doc_depthwise_chain(uint32_t pad1, uint16_t act1, uint64_t seed)
{
    dcz_doc *d = doc_8x8(10);
    if (!d) return NULL;
    dcz_doc_layer *L = d->layers;
    doc_conv_layer(&L[0], "conv1", 1, 16, 3, 1, pad1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    doc_plain_layer(&L[1], act1, "act1");
    doc_conv_layer(&L[2], "dw", 16, 16, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    doc_conv_groups(&L[2], 16);
    doc_plain_layer(&L[3], DCZ_OP_RELU, "relu2");
    doc_conv_layer(&L[4], "conv3", 16, 8, 1, 1, 0, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    doc_plain_layer(&L[5], DCZ_OP_RELU, "relu3");
    doc_plain_layer(&L[6], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&L[7], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&L[8], "fc", 8, 5, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&L[9], DCZ_OP_SOFTMAX, "prob");
    fill_params(d, seed);
    return d;
}

/* doc_depthwise_chain (padding 1), with channels of each
 * convolution that hold no weight, and the same with a SiLU (an
 * activation by table) after conv1. Where the integer shift form runs,
 * conv1 and the depthwise layer leave those channels unwritten, the SiLU
 * skips them and the layer after each takes them as constants (load.c,
 * pair_constants); the bits are those of batch 1 and of the reference
 * kernels, which write and read every channel. */
static void constant_channels(uint16_t act1)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 200, 53), "data");
    float *qo = malloc(data.n * 5 * sizeof *qo);
    dcz_doc *d = doc_depthwise_chain(1, act1, 31);
    REQUIRE(qo && d, "alloc");
    dcz_doc_layer *L = d->layers;
    const uint32_t none1[] = { 1, 4, 5, 9, 14 }, none2[] = { 2, 7, 11 }, none3[] = { 3 };
    drop_channels(&L[0], none1, 5);
    drop_channels(&L[2], none2, 3);
    drop_channels(&L[4], none3, 1);
    uint8_t *qbuf;
    size_t qlen;
    REQUIRE(calibrate_doc(d, &data, 100, DCZ_SCHEME_INT8, 4, &qbuf, &qlen), "calibrate");
    dcz_scheme qs;
    CHECK(run_all(qbuf, qlen, DCZ_PRECISION_AUTO, &data, qo, &qs) && qs == DCZ_SCHEME_INT8,
          "the integer run differs at batch 1 or from the reference kernels");
    dcz_model *m;
    REQUIRE(dcz_open_memory(qbuf, qlen, NULL, &m) == DCZ_OK, "open calibrated");
    /* paired where both layers of a pair requantize on the shift form */
    const uint32_t pairs[2][2] = { { 0, 2 }, { 2, 4 } };
    for (int p = 0; p < 2; p++) {
        const dcz_exec_layer *a = &m->layers[pairs[p][0]], *b = &m->layers[pairs[p][1]];
        const dcz_requant ra = { a->rq_mult, a->rq_shift, m->qmax, a->rq_pre };
        const dcz_requant rb = { b->rq_mult, b->rq_shift, m->qmax, b->rq_pre };
        const int shift = dcz_kernel_shifts((dcz_kernel)a->kernel) && dcz_kernel_shifts((dcz_kernel)b->kernel) &&
                          dcz_qconv2d_shift_requant_runs(&a->geom, &a->qshift, &ra, 0) &&
                          dcz_qconv2d_shift_requant_runs(&b->geom, &b->qshift, &rb, 0);
        CHECK(a->qskip == shift && (b->qin.none == a->qshift.none) == shift, "%s -> %s: left %u, taken %d where "
              "the shift form %s", a->name, b->name, a->qskip, b->qin.none != NULL, shift ? "runs" : "does not");
        uint32_t left = 0;
        for (uint32_t c = 0; shift && c < a->geom.out_c; c++) left += a->qshift.none[c];
        CHECK(!shift || left == (p ? 3u : 5u), "%s: %u channels left", a->name, left);
        dcz_layer_desc ld;
        CHECK(dcz_describe_layer(m, pairs[p][0], &ld) == DCZ_OK && (strstr(ld.why, "unwritten") != NULL) == shift,
              "%s described as %s", a->name, ld.why);
    }
    /* the SiLU's table between conv1 and the depthwise layer skips them */
    CHECK((m->layers[1].qin.none != NULL) == (act1 == DCZ_OP_SILU && m->layers[0].qskip),
          "act1 %s the planes conv1 leaves", m->layers[1].qin.none ? "skips" : "does not skip");
    /* a layer whose output two layers read, or a model's last layer, leaves nothing */
    CHECK(!m->layers[4].qskip, "conv3 leaves channels to the Global average pool");
    dcz_close(m);
    free(qbuf);
    dcz_doc_free(d);
    free(qo);
    dcz_dataset_free(&data);
}

static void test_constant_channels(void)
{
    constant_channels(DCZ_OP_RELU);
    constant_channels(DCZ_OP_SILU);
}

/* doc_depthwise_chain with conv1's padding 2 (planes of 10 x 10) and a
 * HardSwish: where the depthwise layer runs on the byte permutes by maps,
 * the HardSwish writes its byte planes by its table at batch 1 and its
 * output is never written (load.c, pair_table_planes); the bits are those
 * of a batch and of the reference kernels, which run the two apart. */
static void test_table_planes(void)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 200, 57), "data");
    float *qo = malloc(data.n * 5 * sizeof *qo);
    dcz_doc *d = doc_depthwise_chain(2, DCZ_OP_HARD_SWISH, 37);
    REQUIRE(qo && d, "alloc");
    uint8_t *qbuf;
    size_t qlen;
    REQUIRE(calibrate_doc(d, &data, 100, DCZ_SCHEME_INT8, 4, &qbuf, &qlen), "calibrate");
    dcz_scheme qs;
    CHECK(run_all(qbuf, qlen, DCZ_PRECISION_AUTO, &data, qo, &qs) && qs == DCZ_SCHEME_INT8,
          "the integer run differs at batch 1 or from the reference kernels");
    dcz_model *m;
    REQUIRE(dcz_open_memory(qbuf, qlen, NULL, &m) == DCZ_OK, "open calibrated");
    const dcz_exec_layer *dw = &m->layers[2];
    const dcz_requant rq = { dw->rq_mult, dw->rq_shift, m->qmax, dw->rq_pre };
    const int takes = dcz_kernel_shifts((dcz_kernel)dw->kernel) &&
                      dcz_qconv2d_shift_requant_runs(&dw->geom, &dw->qshift, &rq, 0) &&
                      dcz_qdw_planes_table_takes(&dw->qshift);
    CHECK(m->layers[1].qplanes == takes, "the HardSwish writes the byte planes: %d, where the form %s",
          m->layers[1].qplanes, takes ? "takes them" : "does not");
    CHECK(takes || !dcz_qshift_variant() || !dcz_cpu_features()->avx512vbmi,
          "the depthwise layer over 10 x 10 runs on the byte permutes by maps where the CPU has VBMI");
    dcz_close(m);
    free(qbuf);
    dcz_doc_free(d);
    free(qo);
    dcz_dataset_free(&data);
}

/* ---- a fixed-point MLP by hand ------------------------------------------------- */

static int64_t rnd_shift(int64_t v, int k)
{
    if (k <= 0) return v * ((int64_t)1 << -k);
    const int64_t d = (int64_t)1 << k;
    int64_t h = v + d / 2;
    return h >= 0 ? h / d : -((-h + d - 1) / d);
}

static int64_t clampq(int64_t v, int64_t q) { return v > q ? q : v < -q ? -q : v; }

static int64_t round_away(double v) { return (int64_t)(v >= 0 ? floor(v + 0.5) : -floor(-v + 0.5)); }

static void test_fixed_point_by_hand(void)
{
    /* 6 -> fc1 (5) -> relu -> fc2 (3), fixed8: in 2^-6, w1 2^-7, h 2^-4, w2 2^-6 */
    dcz_doc *d;
    REQUIRE(dcz_doc_alloc(3, &d) == DCZ_OK, "alloc");
    d->input_rank = 1;
    d->input_dims[0] = 6;
    doc_dense_layer(&d->layers[0], "fc1", 6, 5, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&d->layers[1], DCZ_OP_RELU, "relu");
    doc_dense_layer(&d->layers[2], "fc2", 5, 3, DCZ_ENC_F32, 0, 0, 0);
    dcz_rng r;
    dcz_rng_seed(&r, 9);
    for (int li = 0; li < 3; li += 2)
        for (int t = 0; t < 2; t++)
            for (size_t i = 0; i < d->layers[li].t[t].n; i++)
                d->layers[li].t[t].values[i] = urand(&r, -0.9f, 0.9f);
    const int fl_in = 6, fl_w1 = 7, fl_h = 4, fl_w2 = 6;
    dcz_doc_calib *t = calloc(1, sizeof *t);
    t->scheme = DCZ_SCHEME_FIXED8;
    t->count = 2;
    t->e = calloc(2, sizeof *t->e);
    t->e[0] = (dcz_doc_calib_entry){ 0, ldexpf(1, -fl_in), 1, malloc(sizeof(float)) };
    t->e[1] = (dcz_doc_calib_entry){ 2, ldexpf(1, -fl_h), 1, malloc(sizeof(float)) };
    t->e[0].w_scale[0] = ldexpf(1, -fl_w1);
    t->e[1].w_scale[0] = ldexpf(1, -fl_w2);
    /* keep the float weights for the hand computation */
    float w1[30], b1[5], w2[15], b2[3];
    memcpy(w1, d->layers[0].t[0].values, sizeof w1);
    memcpy(b1, d->layers[0].t[1].values, sizeof b1);
    memcpy(w2, d->layers[2].t[0].values, sizeof w2);
    memcpy(b2, d->layers[2].t[1].values, sizeof b2);
    REQUIRE(dcz_cal_install(d, t) == DCZ_OK, "install");
    uint8_t *buf;
    size_t len;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_model *m;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    int mismatches = 0;
    for (int trial = 0; trial < 200; trial++) {
        float x[6], y[3];
        for (int i = 0; i < 6; i++) x[i] = urand(&r, -2.5f, 2.5f); /* some saturate at +-127/64 */
        REQUIRE(dcz_run(m, x, 1, y) == DCZ_OK, "run");
        int64_t xq[6], h[5];
        for (int i = 0; i < 6; i++) xq[i] = clampq(round_away(ldexp(x[i], fl_in)), 127);
        for (int o = 0; o < 5; o++) {
            int64_t acc = round_away(ldexp(b1[o], fl_in + fl_w1));
            for (int i = 0; i < 6; i++) acc += clampq(round_away(ldexp(w1[o * 6 + i], fl_w1)), 127) * xq[i];
            h[o] = clampq(rnd_shift(acc, fl_in + fl_w1 - fl_h), 127);
            if (h[o] < 0) h[o] = 0;
        }
        for (int o = 0; o < 3; o++) {
            int64_t acc = round_away(ldexp(b2[o], fl_h + fl_w2));
            for (int i = 0; i < 5; i++) acc += clampq(round_away(ldexp(w2[o * 5 + i], fl_w2)), 127) * h[i];
            const float want = (float)acc * ldexpf(1, -(fl_h + fl_w2));
            if (dcz_f32_bits(want) != dcz_f32_bits(y[o]) && mismatches++ < 5)
                CHECK(0, "trial %d output %d: libdcz %.9g, by hand %.9g", trial, o, y[o], want);
        }
    }
    CHECK(mismatches == 0, "%d mismatches", mismatches);
    dcz_close(m);
    free(buf);
    dcz_doc_free(d);
}

/* input (1, 8, 8) -> conv1 (4, dense) -> silu -> conv2 (4, codebook) ->
 * gap -> fc (4 -> 5) -> softmax: the SILU between the convolutions runs on
 * integers by its table in every scheme. Each entry is the rule of
 * docs/FORMAT.md (v s_in rounded to fp32, the fp32 reference, rounded to
 * s_out) and within one step of x / (1 + e^-x) computed in double from the
 * definition; the run stays close to float, with the bits of batch 1 and
 * of the reference kernels (run_all). */
static void test_silu_table(void)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 200, 53), "data");
    float *fo = malloc(data.n * 5 * sizeof *fo), *qo = malloc(data.n * 5 * sizeof *qo);
    REQUIRE(fo && qo, "alloc");
    const double tol[3] = { 0.08, 0.3, 0.002 };
    for (size_t s = 0; s < 3; s++) {
        dcz_doc *d = doc_8x8(6);
        REQUIRE(d, "alloc doc");
        dcz_doc_layer *L = d->layers;
        doc_conv_layer(&L[0], "conv1", 1, 4, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
        doc_plain_layer(&L[1], DCZ_OP_SILU, "silu");
        doc_conv_layer(&L[2], "conv2", 4, 4, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
        doc_plain_layer(&L[3], DCZ_OP_GLOBAL_AVGPOOL, "gap");
        doc_dense_layer(&L[4], "fc", 4, 5, DCZ_ENC_F32, 0, 0, 0);
        doc_plain_layer(&L[5], DCZ_OP_SOFTMAX, "prob");
        fill_params(d, 61 + s);
        /* conv1's outputs wide enough to reach both arms of the curve */
        for (size_t i = 0; i < L[0].t[0].n; i++) L[0].t[0].values[i] *= 4;
        uint8_t *fbuf, *qbuf;
        size_t flen, qlen;
        REQUIRE(dcz_doc_write(d, &fbuf, &flen) == DCZ_OK, "write float");
        REQUIRE(calibrate_doc(d, &data, 200, schemes[s], 3, &qbuf, &qlen), "calibrate");
        dcz_model *m;
        REQUIRE(dcz_open_memory(qbuf, qlen, NULL, &m) == DCZ_OK, "open calibrated");
        const dcz_exec_layer *l = &m->layers[1];
        REQUIRE(l->op == DCZ_OP_SILU && l->q && l->table, "scheme %u: the SILU has no table", schemes[s]);
        const double si = m->t_scale[l->tin[0]], so = m->t_scale[2];
        const int32_t qmax = m->qmax;
        size_t off_rule = 0, off_def = 0, exact_def = 0;
        int32_t lowest = 0, highest = 0;
        for (int32_t v = -qmax; v <= qmax; v++) {
            const float x = (float)((double)v * si);
            float f;
            dcz_activation_ref(DCZ_OP_SILU, l->param, &x, 1, &f);
            const int64_t got = l->table[v + qmax], rule = clampq(round_away((double)f / so), qmax);
            const int64_t def = clampq(round_away((double)x / (1 + exp(-(double)x)) / so), qmax);
            off_rule += got != rule;
            off_def += llabs(got - def) > 1;
            exact_def += got == def;
            lowest = got < lowest ? (int32_t)got : lowest;
            highest = got > highest ? (int32_t)got : highest;
        }
        CHECK(off_rule == 0 && off_def == 0, "scheme %u: %zu entries off the rule, %zu more than a step off the "
              "definition", schemes[s], off_rule, off_def);
        CHECK(exact_def * 100 >= 99 * (2 * (size_t)qmax + 1), "scheme %u: %zu of %d entries are the definition's",
              schemes[s], exact_def, 2 * qmax + 1);
        /* the curve's dip, -0.2785 at x = -1.2785, and its rise */
        CHECK(lowest < 0 && fabs(lowest * so + 0.2785) <= so && highest * so > 1.5, "scheme %u: entries %d .. %d",
              schemes[s], lowest, highest);
        dcz_close(m);
        dcz_scheme fs, qs;
        REQUIRE(run_all(fbuf, flen, DCZ_PRECISION_AUTO, &data, fo, &fs), "float run");
        CHECK(run_all(qbuf, qlen, DCZ_PRECISION_AUTO, &data, qo, &qs) && qs == (dcz_scheme)schemes[s],
              "scheme %u: the integer run differs at batch 1 or from the reference kernels", schemes[s]);
        double maxd = 0;
        for (size_t i = 0; i < data.n * 5; i++) maxd = fmax(maxd, fabs((double)fo[i] - qo[i]));
        CHECK(maxd <= tol[s] && maxd > 0, "scheme %u: max |diff| %g from float (limit %g)", schemes[s], maxd,
              tol[s]);
        free(fbuf);
        free(qbuf);
        dcz_doc_free(d);
    }
    free(fo);
    free(qo);
    dcz_dataset_free(&data);
}

/* ---- the table as text ------------------------------------------------------------ */

static void test_table_text(void)
{
    dcz_dataset data;
    REQUIRE(make_data(&data, 200, 31), "data");
    size_t idx[200];
    for (size_t i = 0; i < 200; i++) idx[i] = i;
    dcz_doc *d = make_net(4), *fresh = make_net(4);
    dcz_cal_collect c;
    REQUIRE(dcz_cal_collect_stats(d, &data, idx, 200, 64, NULL, NULL, &c) == DCZ_OK, "collect");
    dcz_cal_layer_cfg cfg[4];
    dcz_cal_result res[4];
    fill_cfg(cfg, 4, DCZ_CAL_ENTROPY, 1);
    REQUIRE(dcz_cal_apply(d, DCZ_SCHEME_INT8, &c, cfg, res) == DCZ_OK, "apply");
    char *text, method[32], err[256];
    size_t samples = 0;
    REQUIRE(dcz_cal_table_format(d, "entropy", 200, &text) == DCZ_OK, "format");
    dcz_doc_calib *back;
    CHECK(dcz_cal_table_parse(text, fresh, &back, method, sizeof method, &samples, err, sizeof err) == DCZ_OK,
          "parse: %s", err);
    if (back) {
        CHECK(same_table(back, d->calib), "table changed through text");
        CHECK(strcmp(method, "entropy") == 0, "method '%s'", method);
        CHECK(samples == 200, "samples %zu", samples);
        /* installing it into the float model gives the same file */
        REQUIRE(dcz_cal_install(fresh, back) == DCZ_OK, "install");
        uint8_t *a, *b;
        size_t la, lb;
        REQUIRE(dcz_doc_write(d, &a, &la) == DCZ_OK && dcz_doc_write(fresh, &b, &lb) == DCZ_OK, "write");
        CHECK(la == lb && memcmp(a, b, la) == 0, "installed table gives other bytes");
        free(a);
        free(b);
    }
    /* malformed tables: each edit must be refused with a line number */
    static const char *const edits[][2] = {
        { "format = dcz-calibration 1", "format = dcz-calibration 9" },
        { "scheme = int8", "scheme = int4" },
        { "[fc1]", "[fc9]" },
        { "index = 6", "index = 5" },
        { "w_scale =", "w_scale = zz" },
        { "in_scale =", "in_scale = -1 #" },
        { "model_hash =", "model_hash = xyz #" },
        { "[conv2]", "oops" },
        { "model_hash = ", "model_hash = -" },
        { "samples = 200", "samples = -3" },
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        const char *at = strstr(text, edits[i][0]);
        REQUIRE(at, "edit %zu: '%s' not found", i, edits[i][0]);
        size_t n = strlen(text) + 64;
        char *bad = malloc(n);
        snprintf(bad, n, "%.*s%s%s", (int)(at - text), text, edits[i][1], at + strlen(edits[i][0]));
        dcz_doc_calib *t = NULL;
        dcz_status s = dcz_cal_table_parse(bad, fresh, &t, method, sizeof method, NULL, err, sizeof err);
        CHECK(s == DCZ_ERR_DATA && !t && err[0], "edit %zu accepted ('%s')", i, edits[i][1]);
        dcz_doc_calib_free(t);
        free(bad);
    }
    /* a fixed-point table needs powers of two */
    const char *sch = strstr(text, "scheme = int8");
    char *fx = malloc(strlen(text) + 8);
    sprintf(fx, "%.*sscheme = fixed8%s", (int)(sch - text), text, sch + strlen("scheme = int8"));
    dcz_doc_calib *t = NULL;
    CHECK(dcz_cal_table_parse(fx, fresh, &t, method, sizeof method, NULL, err, sizeof err) == DCZ_ERR_DATA,
          "non-power-of-two scales accepted for fixed8");
    dcz_doc_calib_free(t);
    free(fx);
    free(text);
    dcz_cal_collect_free(&c);
    dcz_doc_free(d);
    dcz_doc_free(fresh);
    dcz_dataset_free(&data);
}

/* ---- CALIB sections that do not fit the graph ------------------------------------------ */

static dcz_status write_then_open(dcz_doc *d, void (*edit)(dcz_doc_calib *))
{
    edit(d->calib);
    uint8_t *buf;
    size_t len;
    return dcz_doc_write(d, &buf, &len);
}

static void bad_layer(dcz_doc_calib *c) { c->e[1].layer = 4; }
static void bad_count(dcz_doc_calib *c) { c->e[0].nw = 3; }
static void bad_pow2(dcz_doc_calib *c) { c->e[0].in_scale = 0.3f; }


static size_t calib_offset(const uint8_t *b)
{
    uint32_t ns = dcz_le32(b + 24);
    for (uint32_t i = 0; i < ns; i++)
        if (dcz_le32(b + 64 + 32 * i) == DCZ_SEC_CALIB) return dcz_le32(b + 64 + 32 * i + 8);
    return 0;
}

static void test_bad_tables_refused(void)
{
    void (*edits[])(dcz_doc_calib *) = { bad_layer, bad_count, bad_pow2 };
    dcz_dataset data;
    REQUIRE(make_data(&data, 64, 41), "data");
    size_t idx[64];
    for (size_t k = 0; k < 64; k++) idx[k] = k;
    for (size_t i = 0; i < 4; i++) {
        dcz_doc *d = make_net(5);
        dcz_cal_collect c;
        REQUIRE(dcz_cal_collect_stats(d, &data, idx, 64, 64, NULL, NULL, &c) == DCZ_OK, "collect");
        dcz_cal_layer_cfg cfg[4];
        dcz_cal_result res[4];
        fill_cfg(cfg, 4, DCZ_CAL_MINMAX, 0);
        REQUIRE(dcz_cal_apply(d, DCZ_SCHEME_FIXED8, &c, cfg, res) == DCZ_OK, "apply");
        if (i < 3) {
            /* the writer refuses to write such a table */
            CHECK(write_then_open(d, edits[i]) == DCZ_ERR_ARG, "edit %zu written", i);
        } else {
            /* the readers refuse the same lies made in the bytes */
            uint8_t *buf;
            size_t len;
            REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
            const size_t at = calib_offset(buf);
            REQUIRE(at, "no CALIB section");
            const struct { size_t off; uint32_t v; } lies[] = {
                { 0, 9 },                                   /* unknown scheme */
                { 4, 3 },                                   /* fewer entries than weighted layers */
                { 24, 1 },                                  /* entry on a RELU */
                { 28, dcz_f32_bits(0.3f) },                 /* fixed8 scale not a power of two */
                { 32, 3 },                                  /* 3 scales for 4 channels */
                { 36, dcz_f32_bits(-1.0f) },                /* negative weight scale */
            };
            for (size_t k = 0; k < sizeof lies / sizeof lies[0]; k++) {
                uint8_t *copy = malloc(len);
                memcpy(copy, buf, len);
                dcz_put32(copy + at + lies[k].off, lies[k].v);
                fix_crcs(copy, len);
                dcz_model *m = NULL;
                dcz_doc *r = NULL;
                CHECK(dcz_open_memory(copy, len, NULL, &m) != DCZ_OK, "lie %zu loaded", k);
                CHECK(dcz_doc_read(copy, len, &r) != DCZ_OK, "lie %zu read", k);
                dcz_close(m);
                dcz_doc_free(r);
                /* asking for float skips the table in the runtime */
                dcz_options o;
                dcz_options_init(&o);
                o.precision = DCZ_PRECISION_FP32;
                if (dcz_open_memory(copy, len, &o, &m) == DCZ_OK) dcz_close(m);
                free(copy);
            }
            free(buf);
        }
        dcz_cal_collect_free(&c);
        dcz_doc_free(d);
    }
    dcz_dataset_free(&data);
}


/* ---- requantization constants and integer weights the readers refuse ------------ */

static void test_requant_params(void)
{
    const struct { double M; int32_t mult; uint8_t shift; dcz_status s; } cases[] = {
        { 1.0, 1, 0, DCZ_OK }, { 0.5, 1, 1, DCZ_OK }, { 3.0, 3, 0, DCZ_OK },
        { 0.75, 3, 2, DCZ_OK }, { 0x1p-62, 1, 62, DCZ_OK }, { 0x1p-63, 0, 62, DCZ_OK },
        { 0x1p30, 1 << 30, 0, DCZ_OK }, { 0, 0, 0, DCZ_OK },
        { 0x1p31, 0, 0, DCZ_ERR_UNSUPPORTED }, { 0x1p31 - 0.5, 0, 0, DCZ_ERR_UNSUPPORTED },
        { -1.0, 0, 0, DCZ_ERR_FORMAT },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t m = -7;
        uint8_t k = 99;
        dcz_status s = dcz_requant_params(cases[i].M, &m, &k);
        CHECK(s == cases[i].s, "M %a: status %d", cases[i].M, s);
        if (s == DCZ_OK)
            CHECK(m == cases[i].mult && k == cases[i].shift, "M %a: %d * 2^-%u", cases[i].M, m, k);
    }
    /* every M in [2^-31, 2^31) within 2^-31 relative, mult odd unless shift 0 */
    dcz_rng r;
    dcz_rng_seed(&r, 3);
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        const double M = ldexp(1.0 + dcz_rng_uniform(&r), (int)dcz_rng_below(&r, 61) - 31);
        int32_t m;
        uint8_t k;
        if (M >= 0x1p31 || dcz_requant_params(M, &m, &k) != DCZ_OK) continue;
        const double got = ldexp((double)m, -(int)k);
        if (fabs(got - M) > M * 0x1p-31 || k > 62 || (k > 0 && !(m & 1)) || m < 0) bad++;
    }
    CHECK(bad == 0, "%d constants off", bad);
}

/* A DENSE 4 -> 2 whose weights are the integers 0x11, 0x22, ... on scale 2^-6
 * (fixed8), so the I8 payload can be found in the file. */
static dcz_doc *pattern_doc(int fixed16)
{
    dcz_doc *d;
    if (dcz_doc_alloc(1, &d) != DCZ_OK) return NULL;
    d->input_rank = 1;
    d->input_dims[0] = 4;
    doc_dense_layer(&d->layers[0], "fc", 4, 2, DCZ_ENC_F32, 0, 0, 0);
    for (int i = 0; i < 8; i++) d->layers[0].t[0].values[i] = ldexpf((float)(0x11 * (i + 1) % 0x7f), -6);
    dcz_doc_calib *t = calloc(1, sizeof *t);
    t->scheme = fixed16 ? DCZ_SCHEME_FIXED16 : DCZ_SCHEME_FIXED8;
    t->count = 1;
    t->e = calloc(1, sizeof *t->e);
    t->e[0] = (dcz_doc_calib_entry){ 0, 0x1p-6f, 1, malloc(sizeof(float)) };
    t->e[0].w_scale[0] = 0x1p-6f;
    if (dcz_cal_install(d, t) != DCZ_OK) { dcz_doc_free(d); return NULL; }
    return d;
}

static void test_readers_refuse_integers(void)
{
    for (int fixed16 = 0; fixed16 < 2; fixed16++) {
        dcz_doc *d = pattern_doc(fixed16);
        REQUIRE(d, "doc");
        CHECK(d->layers[0].t[0].enc == (fixed16 ? DCZ_ENC_I16 : DCZ_ENC_I8), "encoding");
        uint8_t *buf;
        size_t len;
        REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
        dcz_model *m = NULL;
        dcz_doc *r = NULL;
        REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "the valid file loads");
        dcz_close(m);
        /* the first weight, 0x11, becomes -128 (I8) or -32768 (I16) */
        const uint8_t pat8[3] = { 0x11, 0x22, 0x33 }, pat16[4] = { 0x11, 0, 0x22, 0 };
        uint8_t *at = NULL;
        for (size_t i = 0; i + 4 <= len && !at; i++)
            if (memcmp(buf + i, fixed16 ? pat16 : pat8, fixed16 ? 4 : 3) == 0) at = buf + i;
        REQUIRE(at, "weights not found");
        if (fixed16) { at[0] = 0; at[1] = 0x80; } else { at[0] = 0x80; }
        fix_crcs(buf, len);
        CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_ERR_FORMAT, "-128 / -32768 loaded");
        CHECK(dcz_doc_read(buf, len, &r) == DCZ_ERR_FORMAT, "-128 / -32768 read");
        dcz_close(m);
        dcz_doc_free(r);
        if (fixed16) {
            /* I16 weights under an 8-bit scheme: refused by both readers */
            at[0] = 0x11;
            at[1] = 0;
            const size_t calib = calib_offset(buf);
            REQUIRE(calib, "no CALIB");
            dcz_put32(buf + calib, DCZ_SCHEME_FIXED8);
            fix_crcs(buf, len);
            CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_ERR_FORMAT, "I16 under fixed8 loaded");
            CHECK(dcz_doc_read(buf, len, &r) == DCZ_ERR_FORMAT, "I16 under fixed8 read");
            dcz_close(m);
            dcz_doc_free(r);
        }
        free(buf);
        dcz_doc_free(d);
    }
}

int main(void)
{
    RUN(test_order_and_batch_independence);
    RUN(test_integer_close_to_float);
    RUN(test_graph_integer);
    RUN(test_shuffle_integer);
    RUN(test_residual_relu_fused);
    RUN(test_pool_fused_in_chunks);
    RUN(test_constant_channels);
    RUN(test_table_planes);
    RUN(test_fixed_point_by_hand);
    RUN(test_silu_table);
    RUN(test_table_text);
    RUN(test_bad_tables_refused);
    RUN(test_requant_params);
    RUN(test_readers_refuse_integers);
    return check_summary();
}
