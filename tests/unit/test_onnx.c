/* test_onnx.c: tests of ONNX import and export (interop/).
 *
 * - The PyTorch fixtures (tests/fixtures/onnx/, scripts/make_onnx_fixtures.py)
 *   import and give PyTorch's outputs on 100 inputs within 1e-4 (absolute)
 *   and the same argmax: chains, a ResNet (residual Adds, batch norm in the
 *   projection shortcut) and a MobileNetV2-style net (depthwise convolutions,
 *   Clip, HardSwish, squeeze-and-excitation with Mul); the layers pruned in
 *   PyTorch come in sparse.
 * - Export then import gives the same outputs (dense, pruned, and codebook
 *   with Huffman coding), at every opset 11..22: bit for bit at the default
 *   opset.
 * - Models built here node by node: every operator and attribute form
 *   against a direct computation (a reference convolution here) or an
 *   equivalent model, graphs (residual Add, Mul per channel, Concat, grouped
 *   and depthwise Conv, batch norm folded in a branch, dead nodes dropped),
 *   and every refusal (attributes, data types, tensor sizes, graph shapes,
 *   batch norm on a shared output, opsets) with its status and a message
 *   naming the node; batch norms with nothing to fold into counted in one
 *   message.
 * - SiLU as Sigmoid then Mul of its input and output: one SILU layer, only
 *   where the Sigmoid's output is read by that Mul alone; exported as the
 *   same pair, imported back as one SILU.
 * - Opsets 18 to 22: ReduceMean (axes attribute, then input) as global
 *   average pooling, Pad with axes, AveragePool dilations, and the forms
 *   PyTorch's dynamo exporter writes (SiLU as Sigmoid and Mul, a Reshape to
 *   the traced batch).
 * - External data: tensors read from files beside the model, and every
 *   reference that is wrong (outside the folder, missing, past the end, of
 *   another length, overflowing, no folder given) refused.
 * - Damaged bytes: every truncation and byte flip of six models (chains and
 *   graphs), random bytes, and a protobuf nested 100,000 deep never crash;
 *   what imports also writes, loads and runs.
 *
 * Run by `make test` (build/tests/test_onnx).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "interop/interop.h"
#include "model/doc.h"
#include "tests/check.h"
#include "tests/unit/onnx_build.h"

#define FIX "tests/fixtures/onnx/"
#define CORPUS "tests/fuzz/corpus/onnx/"

/* REQUIRE evaluates its condition twice: calls go through this instead. */
#define REQUIRE_OK(call, ...) do { \
    dcz_status req_st_ = (call); \
    REQUIRE(req_st_ == DCZ_OK, __VA_ARGS__); \
} while (0)

/* A whole file, plain or gzip-compressed. */
static uint8_t *read_path(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    *len = 0;
    if (!f) return NULL;
    size_t cap = 1 << 16;
    uint8_t *b = malloc(cap);
    int got;
    while (b && (got = gzread(f, b + *len, (unsigned)(cap - *len))) > 0) {
        *len += (size_t)got;
        if (*len == cap) b = realloc(b, cap *= 2);
    }
    gzclose(f);
    return b;
}

static float *floats_le(const uint8_t *b, size_t n)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = dcz_f32_from_bits(dcz_le32(b + 4 * i));
    return x;
}

static void fill(float *v, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

static float maxdiff(const float *a, const float *b, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* Runs document d on batch samples x through libdcz; *out_n gets the
 * outputs per sample. */
static dcz_status run_doc(dcz_doc *d, const float *x, size_t batch, float *y, size_t *out_n)
{
    uint8_t *buf;
    size_t len;
    dcz_status s = dcz_doc_write(d, &buf, &len);
    if (s != DCZ_OK) return s;
    dcz_model *m;
    s = dcz_open_memory(buf, len, NULL, &m);
    free(buf);
    if (s != DCZ_OK) return s;
    if (out_n) *out_n = dcz_output_size(m);
    s = dcz_run(m, x, batch, y);
    dcz_close(m);
    return s;
}

static dcz_status import_bytes(const uint8_t *buf, size_t len, int keep_dense, dcz_doc **d, char *err, size_t errlen)
{
    dcz_onnx_import_opts o = { keep_dense, NULL };
    return dcz_onnx_import(buf, len, &o, d, NULL, err, errlen);
}

/* Packs b, imports it and runs batch samples; the status of the first step
 * that fails. */
static dcz_status build_run(ob *b, const float *x, size_t batch, float *y, size_t *out_n, char *err, size_t errlen)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    dcz_doc *d = NULL;
    dcz_status s = import_bytes(buf, len, 0, &d, err, errlen);
    free(buf);
    if (s == DCZ_OK) s = run_doc(d, x, batch, y, out_n);
    dcz_doc_free(d);
    return s;
}

static dcz_status build_import(ob *b, dcz_doc **d, char *err, size_t errlen)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    dcz_status s = import_bytes(buf, len, 0, d, err, errlen);
    free(buf);
    return s;
}

/* Expects the model of b to be refused with status want and a message
 * holding every string of the NULL-terminated list. */
static int refused(ob *b, dcz_status want, const char *const *words, char *err, size_t errlen)
{
    dcz_doc *d = NULL;
    dcz_status s = build_import(b, &d, err, errlen);
    dcz_doc_free(d);
    if (s != want) return 0;
    for (const char *const *w = words; *w; w++)
        if (!strstr(err, *w)) return 0;
    return 1;
}

#define EXPECT_REFUSED(b, want, ...) do { \
    char err_[2048] = ""; \
    const char *const words_[] = { __VA_ARGS__, NULL }; \
    CHECK(refused(b, want, words_, err_, sizeof err_), "expected status %d and %s: got '%s'", (int)(want), \
          words_[0], err_); \
} while (0)

/* ---- the PyTorch fixtures ------------------------------------------------------ */

static const char *const fixtures[] = { "mlp", "cnn", "cnn_matmul", "resnet", "mbv2" };

/* Layers of op in d (and of them, CONV2D layers with group > 1 in *grouped). */
static uint32_t count_op(const dcz_doc *d, uint16_t op, uint32_t *grouped)
{
    uint32_t n = 0;
    if (grouped) *grouped = 0;
    for (uint32_t k = 0; k < d->nlayers; k++) {
        n += d->layers[k].op == op;
        if (grouped && op == DCZ_OP_CONV2D && d->layers[k].op == op && d->layers[k].attr[8] > 1) (*grouped)++;
    }
    return n;
}

static int argmax(const float *v, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return (int)best;
}

static void test_fixtures_match_pytorch(void)
{
    size_t len;
    uint8_t *raw = read_path(FIX "inputs.f32.gz", &len);
    REQUIRE(raw && len == 100 * 784 * 4, "inputs.f32.gz: %zu bytes", len);
    float *x = floats_le(raw, 100 * 784);
    free(raw);
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s.out.f32", fixtures[f]);
        uint8_t *ref_raw = read_path(path, &len);
        CHECK(ref_raw && len == 100 * 10 * 4, "%s: %zu bytes", path, len);
        snprintf(path, sizeof path, FIX "%s.onnx", fixtures[f]);
        uint8_t *model = read_path(path, &len);
        CHECK(model != NULL, "cannot read %s", path);
        if (!ref_raw || !model) { free(ref_raw); free(model); continue; }
        float *ref = floats_le(ref_raw, 1000), y[1000];
        dcz_doc *d = NULL;
        char err[1024];
        size_t out_n = 0;
        dcz_status s = import_bytes(model, len, 0, &d, err, sizeof err);
        CHECK(s == DCZ_OK, "%s: %s", path, err);
        if (s == DCZ_OK) s = run_doc(d, x, 100, y, &out_n);
        CHECK(s == DCZ_OK && out_n == 10, "%s: run status %d, %zu outputs", path, (int)s, out_n);
        if (s == DCZ_OK) {
            float md = maxdiff(y, ref, 1000);
            int same = 0;
            for (int i = 0; i < 100; i++) same += argmax(y + 10 * i, 10) == argmax(ref + 10 * i, 10);
            printf("  %-11s max |dcz - pytorch| over 100 inputs = %.3g, same argmax on %d\n", fixtures[f],
                   (double)md, same);
            CHECK(md <= 1e-4f, "%s: max abs difference %g", path, (double)md);
            CHECK(same == 100, "%s: argmax differs from PyTorch's on %d inputs", path, 100 - same);
        }
        uint32_t grouped;
        if (s == DCZ_OK && strcmp(fixtures[f], "resnet") == 0) {
            /* 8 convolutions (one a projection shortcut with its batch norm), 3 residual Adds */
            CHECK(count_op(d, DCZ_OP_CONV2D, NULL) == 8 && count_op(d, DCZ_OP_ADD, NULL) == 3 &&
                  count_op(d, DCZ_OP_DENSE, NULL) == 1 && d->nlayers == 21, "resnet: %u layers", d->nlayers);
        }
        if (s == DCZ_OK && strcmp(fixtures[f], "mbv2") == 0) {
            CHECK(count_op(d, DCZ_OP_CONV2D, &grouped) == 16 && grouped == 4, "mbv2: %u depthwise", grouped);
            CHECK(count_op(d, DCZ_OP_CLIP, NULL) == 8 && count_op(d, DCZ_OP_HARD_SWISH, NULL) == 2 &&
                  count_op(d, DCZ_OP_HARD_SIGMOID, NULL) == 1 && count_op(d, DCZ_OP_MUL, NULL) == 1 &&
                  count_op(d, DCZ_OP_ADD, NULL) == 2 && count_op(d, DCZ_OP_GLOBAL_AVGPOOL, NULL) == 2,
                  "mbv2: layers by op");
        }
        if (s == DCZ_OK && strcmp(fixtures[f], "cnn") == 0) {
            /* conv2 and fc were pruned by magnitude in PyTorch: 50% and 80% zeros */
            const char *names[] = { "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "fc1" };
            CHECK(d->nlayers == 8, "%u layers", d->nlayers);
            for (uint32_t k = 0; k < d->nlayers && k < 8; k++)
                CHECK(strcmp(d->layers[k].name, names[k]) == 0, "layer %u is %s", k, d->layers[k].name);
            CHECK(d->input_rank == 3 && d->input_dims[0] == 1 && d->input_dims[1] == 28, "input shape");
            if (d->nlayers == 8) {
                const dcz_doc_tensor *c1 = &d->layers[0].t[0], *c2 = &d->layers[3].t[0], *fc = &d->layers[7].t[0];
                CHECK(c1->enc == DCZ_ENC_F32 && !c1->mask, "conv1 dense");
                CHECK(c2->enc == DCZ_ENC_SPARSE_F32 && c2->mask && c2->gap_bits == 8, "conv2 sparse");
                CHECK(fc->enc == DCZ_ENC_SPARSE_F32 && fc->mask && fc->gap_bits == 5, "fc1 sparse");
                size_t kept = 0;
                for (size_t i = 0; fc->mask && i < fc->n; i++) kept += fc->mask[i];
                CHECK(kept * 5 == fc->n, "fc1 keeps %zu of %zu", kept, fc->n);
            }
        }
        dcz_doc_free(d);
        free(ref);
        free(ref_raw);
        free(model);
    }
    free(x);
}

/* A DENSE layer of d applied to x (in values) into y. */
static void dense_ref(const dcz_doc_layer *l, const float *x, float *y)
{
    const uint32_t in = (uint32_t)l->attr[0], out = (uint32_t)l->attr[1];
    for (uint32_t o = 0; o < out; o++) {
        double acc = l->t[1].values[o];
        for (uint32_t k = 0; k < in; k++) acc += (double)l->t[0].values[(size_t)o * in + k] * x[k];
        y[o] = (float)acc;
    }
}

/* The two older fixtures: branch.onnx (a residual Add of the input) and
 * unsupported.onnx (Sigmoid and Tanh, unsupported when it was made) import
 * now, and compute what their weights say. */
static void test_older_fixtures(void)
{
    float x[3 * 16], y[3 * 4];
    fill(x, 48, 71);
    for (int f = 0; f < 2; f++) {
        size_t len;
        char err[2048];
        dcz_doc *d = NULL;
        uint8_t *b = read_path(f ? FIX "unsupported.onnx" : FIX "branch.onnx", &len);
        REQUIRE(b, "read");
        dcz_status s = import_bytes(b, len, 0, &d, err, sizeof err);
        free(b);
        CHECK(s == DCZ_OK, "fixture %d: %s", f, err);
        if (s != DCZ_OK) continue;
        size_t out_n = 0;
        CHECK(run_doc(d, x, 3, y, &out_n) == DCZ_OK && out_n == 4, "fixture %d: run", f);
        float worst = 0;
        for (int i = 0; i < 3; i++) {
            float h[16], g[16], z[4];
            const float *xi = x + 16 * i;
            if (f == 0) {   /* b(relu(a(x)) + x) */
                CHECK(d->nlayers == 4 && d->layers[2].op == DCZ_OP_ADD && d->layers[2].nin == 2 &&
                      d->layers[2].in[1] == 0, "branch.onnx: the Add reads the input");
                if (d->nlayers != 4) break;
                dense_ref(&d->layers[0], xi, h);
                for (int k = 0; k < 16; k++) g[k] = fmaxf(h[k], 0.0f) + xi[k];
                dense_ref(&d->layers[3], g, z);
            } else {        /* c(tanh(b(sigmoid(a(x))))) */
                CHECK(d->nlayers == 5 && d->layers[1].op == DCZ_OP_SIGMOID && d->layers[3].op == DCZ_OP_TANH,
                      "unsupported.onnx: layers");
                if (d->nlayers != 5) break;
                dense_ref(&d->layers[0], xi, h);
                for (int k = 0; k < 8; k++) h[k] = 1.0f / (1.0f + expf(-h[k]));
                dense_ref(&d->layers[2], h, g);
                for (int k = 0; k < 8; k++) g[k] = tanhf(g[k]);
                dense_ref(&d->layers[4], g, z);
            }
            worst = fmaxf(worst, maxdiff(z, y + 4 * i, 4));
        }
        CHECK(worst < 1e-5f, "fixture %d: max difference %g", f, (double)worst);
        dcz_doc_free(d);
    }
}

/* Two operators dcz lacks: both named in one message. */
static void test_unsupported_ops(void)
{
    ob b;
    ob_init(&b, 13);
    ob_input(&b, "x", 2, (const int64_t[]){ -1, 4 });
    ob_output(&b, "y");
    float W[16];
    fill(W, 16, 72);
    ob_init_f(&b, "W", 2, (const int64_t[]){ 4, 4 }, W);
    ob_node(&b, "Gemm", "/a/Gemm", "x,W", "h1");
    ob_node(&b, "Softplus", "/Softplus", "h1", "h2");
    ob_node(&b, "Gemm", "/b/Gemm", "h2,W", "h3");
    ob_node(&b, "Erf", "/Erf", "h3", "h4");
    ob_node(&b, "Gemm", "/c/Gemm", "h4,W", "y");
    EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "2 unsupported operators: Softplus '/Softplus', Erf '/Erf'",
                   "dcz imports Add");
    ob_free(&b);
}

/* Many nodes of a few operators dcz lacks (as many as the builder holds;
 * a real model has hundreds): one short message with each operator once,
 * its count of nodes and the first of them. */
static void test_unsupported_many(void)
{
    ob b;
    ob_init(&b, 13);
    ob_input(&b, "x", 2, (const int64_t[]){ -1, 4 });
    ob_output(&b, "y");
    enum { N = 60 };
    char name[N][16], out[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(name[i], sizeof name[i], "/n%d", i);
        snprintf(out[i], sizeof out[i], i == N - 1 ? "y" : "h%d", i);
        ob_node(&b, i % 3 == 2 ? "Erf" : "Softplus", name[i], i ? out[i - 1] : "x", out[i]);
    }
    char err[2048] = "";
    const char *const words[] = { "60 nodes of 2 unsupported operators", "Softplus (40 nodes, the first '/n0')",
                                  "Erf (20 nodes, the first '/n2')", NULL };
    CHECK(refused(&b, DCZ_ERR_UNSUPPORTED, words, err, sizeof err), "got '%s'", err);
    CHECK(strlen(err) < 500, "a message of %zu characters: '%s'", strlen(err), err);
    CHECK(!strstr(err, "/n1'") && !strstr(err, "/n59"), "a node past the first of its type named: '%s'", err);
    ob_free(&b);
}

/* ---- export ---------------------------------------------------------------------- */

/* Exports d at opset (0: the default), imports the result, and compares
 * outputs on x. */
static void export_roundtrip(dcz_doc *d, const float *x, size_t batch, int opset, float tol, const char *what)
{
    size_t out_n = 0, n2 = 0;
    float *y1 = malloc(batch * 1024 * sizeof *y1), *y2 = malloc(batch * 1024 * sizeof *y2);
    dcz_status s = run_doc(d, x, batch, y1, &out_n);
    CHECK(s == DCZ_OK && out_n <= 1024, "%s: run %d", what, (int)s);
    uint8_t *onnx = NULL;
    size_t len = 0;
    char err[1024];
    dcz_onnx_export_opts o = { opset, "test" };
    if (s == DCZ_OK) s = dcz_onnx_export(d, &o, &onnx, &len, err, sizeof err);
    CHECK(s == DCZ_OK, "%s: export at opset %d: %s", what, opset, err);
    const int written = dcz_onnx_export_opset(d, opset);   /* opset 0: the default */
    if (s == DCZ_OK) {   /* the header: opset, IR version, symbolic batch */
        Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, onnx);
        CHECK(m && m->n_opset_import == 1 && m->opset_import[0]->version == written, "%s: opset", what);
        const int64_t ir = written <= 11 ? 6 : written <= 14 ? 7 : written <= 18 ? 8 : written <= 20 ? 9 : 10;
        CHECK(m && m->ir_version == ir, "%s: IR version", what);
        CHECK(m && m->graph->n_input == 1 && m->graph->input[0]->type->tensor_type->shape->dim[0]->value_case ==
              ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, "%s: batch dimension", what);
        onnx__model_proto__free_unpacked(m, NULL);
    }
    dcz_doc *back = NULL;
    if (s == DCZ_OK) s = import_bytes(onnx, len, 0, &back, err, sizeof err);
    CHECK(s == DCZ_OK, "%s: import of the export at opset %d: %s", what, opset, err);
    if (s == DCZ_OK) s = run_doc(back, x, batch, y2, &n2);
    CHECK(s == DCZ_OK && n2 == out_n, "%s: run of the re-import", what);
    if (s == DCZ_OK) {
        float md = maxdiff(y1, y2, batch * out_n);
        CHECK(md <= tol, "%s at opset %d: max abs difference %g", what, opset, (double)md);
        if (opset == 0)
            printf("  %-22s export -> import: max |difference| = %.3g\n", what, (double)md);
    }
    dcz_doc_free(back);
    free(onnx);
    free(y1);
    free(y2);
}

static void test_export_roundtrip_dense(void)
{
    size_t len;
    uint8_t *raw = read_path(FIX "inputs.f32.gz", &len);
    REQUIRE(raw && len == 100 * 784 * 4, "inputs");
    float *x = floats_le(raw, 100 * 784);
    free(raw);
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s.onnx", fixtures[f]);
        uint8_t *model = read_path(path, &len);
        dcz_doc *d = NULL;
        char err[512];
        CHECK(model && import_bytes(model, len, 0, &d, err, sizeof err) == DCZ_OK, "%s", path);
        if (d) export_roundtrip(d, x, 100, 0, 0, fixtures[f]);   /* the default opset: bit for bit */
        for (int opset = DCZ_ONNX_OPSET_MIN; d && opset <= DCZ_ONNX_OPSET_MAX; opset++)
            export_roundtrip(d, x, 100, opset, 1e-5f, fixtures[f]);
        dcz_doc_free(d);
        free(model);
    }
    free(x);
}

/* The cnn fixture with every weight on a 16-entry codebook, Huffman-coded
 * streams and fp16 biases: the form `dcz compress` writes. */
static void test_export_roundtrip_codebook(void)
{
    size_t len;
    uint8_t *raw = read_path(FIX "inputs.f32.gz", &len), *model = read_path(FIX "cnn.onnx", &len);
    REQUIRE(raw && model, "fixtures");
    float *x = floats_le(raw, 100 * 784);
    free(raw);
    dcz_doc *d = NULL;
    char err[512];
    dcz_status s = import_bytes(model, len, 0, &d, err, sizeof err);
    free(model);
    REQUIRE(s == DCZ_OK, "%s", err);
    for (uint32_t k = 0; k < d->nlayers; k++) {
        dcz_doc_layer *l = &d->layers[k];
        if (!l->ntensors) continue;
        dcz_doc_tensor *w = &l->t[0];
        float lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < w->n; i++)
            if (!w->mask || w->mask[i]) { lo = fminf(lo, w->values[i]); hi = fmaxf(hi, w->values[i]); }
        w->k = 16;
        w->index_bits = 4;
        w->codebook = malloc(16 * sizeof *w->codebook);
        w->assign = calloc(w->n, 1);
        for (int c = 0; c < 16; c++) w->codebook[c] = lo + (hi - lo) * (float)c / 15.0f;
        for (size_t i = 0; i < w->n; i++) {
            if (w->mask && !w->mask[i]) continue;
            int best = 0;
            for (int c = 1; c < 16; c++)
                if (fabsf(w->values[i] - w->codebook[c]) < fabsf(w->values[i] - w->codebook[best])) best = c;
            w->assign[i] = (uint8_t)best;
            w->values[i] = w->codebook[best];
        }
        w->enc = DCZ_ENC_CODEBOOK;
        w->index_coding = DCZ_CODING_HUFFMAN;
        w->gap_coding = DCZ_CODING_HUFFMAN;
        l->t[1].enc = DCZ_ENC_F16;
    }
    /* read back from bytes, as `dcz export` gets it */
    uint8_t *bytes;
    REQUIRE_OK(dcz_doc_write(d, &bytes, &len), "write");
    dcz_doc_free(d);
    REQUIRE_OK(dcz_doc_read(bytes, len, &d), "read");
    free(bytes);
    CHECK(d->layers[3].t[0].enc == DCZ_ENC_CODEBOOK && d->layers[3].t[0].index_coding == DCZ_CODING_HUFFMAN,
          "conv2 codebook, Huffman");
    /* within rounding, not bit for bit: the compressed convolutions sum by
     * taps, the re-imported dense ones by im2col dot products */
    export_roundtrip(d, x, 100, 0, 1e-5f, "cnn codebook+huffman");
    for (int opset = DCZ_ONNX_OPSET_MIN; opset <= DCZ_ONNX_OPSET_MAX; opset++)
        export_roundtrip(d, x, 100, opset, 1e-5f, "cnn codebook+huffman");
    dcz_doc_free(d);
    free(x);
}

static void test_export_refusals(void)
{
    dcz_doc *d = NULL;
    REQUIRE_OK(dcz_doc_alloc(0, &d), "alloc");
    uint8_t *buf;
    size_t len;
    char err[256];
    CHECK(dcz_onnx_export(d, NULL, &buf, &len, err, sizeof err) == DCZ_ERR_ARG, "no layers");
    dcz_doc_free(d);
    size_t mlen;
    uint8_t *model = read_path(CORPUS "mlp_opset11.onnx", &mlen);
    REQUIRE(model && import_bytes(model, mlen, 0, &d, err, sizeof err) == DCZ_OK, "import");
    free(model);
    dcz_onnx_export_opts o = { 10, NULL };
    CHECK(dcz_onnx_export(d, &o, &buf, &len, err, sizeof err) == DCZ_ERR_ARG && strstr(err, "opset"), "opset 10");
    o.opset = 23;
    CHECK(dcz_onnx_export(d, &o, &buf, &len, err, sizeof err) == DCZ_ERR_ARG, "opset 23");
    dcz_doc_free(d);
}

/* ---- operators, node by node ------------------------------------------------- */

static const int64_t d2[2] = { -1, 5 };

/* Gemm: y = alpha x op(B) + beta C against the formula, for transB 0 and 1,
 * biases of shape (3), (1, 3), scalar and none. */
static void test_gemm_forms(void)
{
    float x[2 * 5], B[15], C[3], y[6], want[6];
    fill(x, 10, 1);
    fill(B, 15, 2);
    fill(C, 3, 3);
    for (int tb = 0; tb < 2; tb++)
        for (int cform = 0; cform < 4; cform++) {
            ob b;
            ob_init(&b, 13);
            ob_input(&b, "x", 2, d2);
            ob_output(&b, "y");
            const int64_t bd[2] = { tb ? 3 : 5, tb ? 5 : 3 }, c1[1] = { 3 }, c2[2] = { 1, 3 }, c0[1] = { 1 };
            ob_init_f(&b, "B", 2, bd, B);
            if (cform == 0) ob_init_f(&b, "C", 1, c1, C);
            if (cform == 1) ob_init_f(&b, "C", 2, c2, C);
            if (cform == 2) ob_init_f(&b, "C", 1, c0, C);
            Onnx__NodeProto *n = ob_node(&b, "Gemm", "g", cform == 3 ? "x,B" : "x,B,C", "y");
            ob_attr_i(&b, n, "transB", tb);
            ob_attr_f(&b, n, "alpha", 0.5f);
            ob_attr_f(&b, n, "beta", 2.0f);
            for (int s = 0; s < 2; s++)
                for (int o = 0; o < 3; o++) {
                    double acc = 0;
                    for (int k = 0; k < 5; k++) acc += (double)x[s * 5 + k] * B[tb ? o * 5 + k : k * 3 + o];
                    want[s * 3 + o] = (float)(0.5 * acc + (cform == 3 ? 0 : 2.0 * C[cform == 2 ? 0 : o]));
                }
            char err[512];
            size_t out_n = 0;
            dcz_status st = build_run(&b, x, 2, y, &out_n, err, sizeof err);
            CHECK(st == DCZ_OK && out_n == 3, "transB %d bias form %d: %s", tb, cform, err);
            if (st == DCZ_OK) CHECK(maxdiff(y, want, 6) < 1e-5f, "transB %d bias form %d: %g", tb, cform,
                                    (double)maxdiff(y, want, 6));
            ob_free(&b);
        }
}

/* MatMul alone, MatMul + Add with the constant first or second, and a
 * Constant node (value_floats) as the bias. */
static void test_matmul_add(void)
{
    float x[2 * 5], B[15], C[3], y[6], want[6];
    fill(x, 10, 4);
    fill(B, 15, 5);
    fill(C, 3, 6);
    for (int form = 0; form < 4; form++) {
        ob b;
        ob_init(&b, 17);
        ob_input(&b, "x", 2, d2);
        ob_output(&b, "y");
        const int64_t bd[2] = { 5, 3 }, cd[2] = { 1, 3 };
        ob_init_f(&b, "B", 2, bd, B);
        if (form == 0) {
            ob_node(&b, "MatMul", "mm", "x,B", "y");
        } else {
            ob_node(&b, "MatMul", "mm", "x,B", "h");
            if (form == 3) {
                Onnx__NodeProto *c = ob_node(&b, "Constant", "c", "", "C");
                ob_attr_floats(&b, c, "value_floats", C, 3);
            } else ob_init_f(&b, "C", 2, cd, C);
            ob_node(&b, "Add", "add", form == 2 ? "C,h" : "h,C", "y");
        }
        for (int s = 0; s < 2; s++)
            for (int o = 0; o < 3; o++) {
                double acc = form ? C[o] : 0;
                for (int k = 0; k < 5; k++) acc += (double)x[s * 5 + k] * B[k * 3 + o];
                want[s * 3 + o] = (float)acc;
            }
        char err[512];
        dcz_status st = build_run(&b, x, 2, y, NULL, err, sizeof err);
        CHECK(st == DCZ_OK, "form %d: %s", form, err);
        if (st == DCZ_OK) CHECK(maxdiff(y, want, 6) < 1e-5f, "form %d: %g", form, (double)maxdiff(y, want, 6));
        ob_free(&b);
    }
}

/* Conv models that must compute the same: pads 1; Pad then Conv without
 * pads; auto_pad SAME_UPPER; no bias then Add of a (1, C, 1, 1) constant. */
static void test_conv_equivalent_forms(void)
{
    const int64_t in[4] = { -1, 2, 6, 6 }, wd[4] = { 3, 2, 3, 3 }, bd[1] = { 3 }, bd4[4] = { 1, 3, 1, 1 };
    float W[54], B[3], x[2 * 72], ref[2 * 108], y[2 * 108];
    fill(W, 54, 7);
    fill(B, 3, 8);
    fill(x, 144, 9);
    for (int form = 0; form < 4; form++) {
        ob b;
        ob_init(&b, form == 1 ? 11 : 13);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        ob_init_f(&b, "W", 4, wd, W);
        ob_init_f(&b, form == 3 ? "B4" : "B", form == 3 ? 4 : 1, form == 3 ? bd4 : bd, B);
        Onnx__NodeProto *n;
        if (form == 0) {
            n = ob_node(&b, "Conv", "c", "x,W,B", "y");
            ob_attr_ints(&b, n, "pads", 4, 1, 1, 1, 1);
        } else if (form == 1) {
            const int64_t pads[8] = { 0, 0, 1, 1, 0, 0, 1, 1 };
            ob_init_i64(&b, "pads", 8, pads);
            ob_node(&b, "Pad", "p", "x,pads", "xp");
            n = ob_node(&b, "Conv", "c", "xp,W,B", "y");
        } else if (form == 2) {
            n = ob_node(&b, "Conv", "c", "x,W,B", "y");
            ob_attr_s(&b, n, "auto_pad", "SAME_UPPER");
        } else {
            n = ob_node(&b, "Conv", "c", "x,W", "h");
            ob_attr_ints(&b, n, "pads", 4, 1, 1, 1, 1);
            ob_node(&b, "Add", "a", "h,B4", "y");
        }
        ob_attr_ints(&b, n, "kernel_shape", 2, 3, 3);
        ob_attr_ints(&b, n, "strides", 2, 1, 1);
        char err[512];
        size_t out_n = 0;
        dcz_status st = build_run(&b, x, 2, form ? y : ref, &out_n, err, sizeof err);
        CHECK(st == DCZ_OK && out_n == 108, "form %d: %s", form, err);
        if (form && st == DCZ_OK) CHECK(maxdiff(y, ref, 216) < 1e-6f, "form %d differs: %g", form,
                                        (double)maxdiff(y, ref, 216));
        ob_free(&b);
    }
    /* one direct value: output (0, 0, 0) of sample 0 */
    double acc = B[0];
    for (int c = 0; c < 2; c++)
        for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
                int iy = ky - 1, ix = kx - 1;
                if (iy >= 0 && ix >= 0) acc += (double)W[(c * 3 + ky) * 3 + kx] * x[(c * 6 + iy) * 6 + ix];
            }
    CHECK(fabs(acc - ref[0]) < 1e-5, "conv corner %g vs %g", acc, (double)ref[0]);
}

/* Batch norm after Gemm and after Conv, against the formula applied to the
 * outputs of the same models without it. */
static void test_batchnorm_folding(void)
{
    const int64_t in4[4] = { -1, 2, 5, 5 }, wd4[4] = { 3, 2, 3, 3 }, wd2[2] = { 3, 50 }, cd[1] = { 3 };
    float W[150], B[3], g[3] = { 1.5f, -0.5f, 2.0f }, be[3] = { 0.1f, 0.2f, -0.3f }, mu[3] = { 0.3f, -0.2f, 0.05f },
          var[3] = { 0.5f, 2.0f, 0.01f }, x[2 * 50], plain[2 * 75], folded[2 * 75];
    fill(W, 150, 11);
    fill(B, 3, 12);
    fill(x, 100, 13);
    for (int conv = 0; conv < 2; conv++) {
        const size_t per = conv ? 25 : 1, n = 2 * 3 * per;
        for (int bn = 0; bn < 2; bn++) {
            ob b;
            ob_init(&b, 15);
            ob_input(&b, "x", conv ? 4 : 2, conv ? in4 : (const int64_t[]){ -1, 50 });
            ob_output(&b, "y");
            ob_init_f(&b, "W", conv ? 4 : 2, conv ? wd4 : wd2, W);
            ob_init_f(&b, "B", 1, cd, B);
            ob_init_f(&b, "g", 1, cd, g);
            ob_init_f(&b, "be", 1, cd, be);
            ob_init_f(&b, "mu", 1, cd, mu);
            ob_init_f(&b, "var", 1, cd, var);
            Onnx__NodeProto *l = ob_node(&b, conv ? "Conv" : "Gemm", "l", "x,W,B", bn ? "h" : "y");
            if (conv) ob_attr_ints(&b, l, "pads", 4, 1, 1, 1, 1);
            else ob_attr_i(&b, l, "transB", 1);
            if (bn) {
                Onnx__NodeProto *m = ob_node(&b, "BatchNormalization", "bn", "h,g,be,mu,var", "y");
                ob_attr_f(&b, m, "epsilon", 1e-3f);
            }
            char err[512];
            dcz_status st = build_run(&b, x, 2, bn ? folded : plain, NULL, err, sizeof err);
            CHECK(st == DCZ_OK, "conv %d bn %d: %s", conv, bn, err);
            ob_free(&b);
        }
        float worst = 0;
        for (size_t i = 0; i < n; i++) {
            const size_t c = (i / per) % 3;
            const double want = g[c] * ((double)plain[i] - mu[c]) / sqrt((double)var[c] + 1e-3) + be[c];
            worst = fmaxf(worst, (float)(fabs(want - folded[i]) / fmax(1.0, fabs(want))));
        }
        CHECK(worst < 1e-5f, "%s + batch norm: max relative difference %g", conv ? "conv" : "gemm", (double)worst);
    }
}

/* Pooling: ceil_mode where it agrees with floor, Pad folded into an
 * AveragePool (counted), global average pooling against the mean. */
static void test_pools(void)
{
    const int64_t in[4] = { -1, 2, 6, 6 };
    float x[2 * 72], y1[2 * 18], y2[2 * 18];
    fill(x, 144, 21);
    for (int ceil = 0; ceil < 2; ceil++) {   /* 6 = 2 * 3: ceil and floor agree */
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        Onnx__NodeProto *n = ob_node(&b, "MaxPool", "mp", "x", "y");
        ob_attr_ints(&b, n, "kernel_shape", 2, 2, 2);
        ob_attr_ints(&b, n, "strides", 2, 2, 2);
        ob_attr_i(&b, n, "ceil_mode", ceil);
        char err[256];
        CHECK(build_run(&b, x, 2, ceil ? y2 : y1, NULL, err, sizeof err) == DCZ_OK, "ceil %d: %s", ceil, err);
        ob_free(&b);
    }
    CHECK(maxdiff(y1, y2, 36) == 0, "ceil_mode 1 where sizes agree");
    CHECK(y1[0] == fmaxf(fmaxf(x[0], x[1]), fmaxf(x[6], x[7])), "max of the first window");
    float a1[2 * 32], a2[2 * 32];
    for (int form = 0; form < 2; form++) {   /* pads 1 counted == Pad then no pads */
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        Onnx__NodeProto *n;
        if (form) {
            const int64_t pads[8] = { 0, 0, 1, 1, 0, 0, 1, 1 };
            ob_init_i64(&b, "pads", 8, pads);
            ob_node(&b, "Pad", "p", "x,pads", "xp");
            n = ob_node(&b, "AveragePool", "ap", "xp", "y");
        } else {
            n = ob_node(&b, "AveragePool", "ap", "x", "y");
            ob_attr_ints(&b, n, "pads", 4, 1, 1, 1, 1);
            ob_attr_i(&b, n, "count_include_pad", 1);
        }
        ob_attr_ints(&b, n, "kernel_shape", 2, 3, 3);
        ob_attr_ints(&b, n, "strides", 2, 2, 2);
        char err[256];
        size_t out_n;
        CHECK(build_run(&b, x, 2, form ? a2 : a1, &out_n, err, sizeof err) == DCZ_OK && out_n == 18, "avg %d: %s",
              form, err);
        ob_free(&b);
    }
    CHECK(maxdiff(a1, a2, 36) < 1e-7f, "Pad + AveragePool");
    CHECK(fabsf(a1[0] - (x[0] + x[1] + x[6] + x[7]) / 9) < 1e-6f, "padding counted in the mean");
    ob b;
    ob_init(&b, 13);
    ob_input(&b, "x", 4, in);
    ob_output(&b, "y");
    ob_node(&b, "GlobalAveragePool", "gap", "x", "y");
    float g[4];
    char err[256];
    size_t out_n;
    CHECK(build_run(&b, x, 2, g, &out_n, err, sizeof err) == DCZ_OK && out_n == 2, "gap: %s", err);
    double mean = 0;
    for (int i = 36; i < 72; i++) mean += x[i];
    CHECK(fabs(mean / 36 - g[1]) < 1e-6, "mean of channel 1: %g vs %g", mean / 36, (double)g[1]);
    ob_free(&b);
}

/* Constant, Identity and Dropout nodes; Reshape and Flatten forms. */
static void test_passthrough_and_shapes(void)
{
    /* the helper-made seed: Constant shape, Reshape with 0, Identity, Gemm
     * transB 0 alpha beta, Dropout (ratio input, mask output), Constant weight */
    size_t len;
    uint8_t *m = read_path(CORPUS "helper_ops.onnx", &len);
    dcz_doc *d = NULL;
    char err[1024];
    REQUIRE(m, "read");
    CHECK(import_bytes(m, len, 0, &d, err, sizeof err) == DCZ_OK, "helper_ops: %s", err);
    /* the Reshape of the input (N, 3, 2, 2) to (N, 12) becomes the input shape */
    CHECK(d && d->nlayers == 3 && d->input_rank == 1 && d->input_dims[0] == 12 && d->layers[0].op == DCZ_OP_DENSE,
          "helper_ops layers");
    dcz_doc_free(d);
    free(m);

    /* input (N, 16) reshaped to (N, 1, 4, 4) for a Conv, flattened, Gemm */
    const int64_t in[2] = { -1, 16 }, wd[4] = { 2, 1, 3, 3 }, fd[2] = { 3, 8 };
    float W[18], F[24], x[32], y[6];
    fill(W, 18, 31);
    fill(F, 24, 32);
    fill(x, 32, 33);
    for (int form = 0; form < 9; form++) {
        ob b;
        ob_init(&b, form == 8 ? 12 : 14);
        ob_input(&b, "x", 2, form == 5 ? (const int64_t[]){ 1, 16 } : in);
        ob_output(&b, "y");
        ob_init_f(&b, "W", 4, wd, W);
        ob_init_f(&b, "F", 2, fd, F);
        const int64_t s0[4] = { 0, 1, 4, 4 }, sflat[2] = { -1, 8 }, sfixed[2] = { 1, -1 }, sbad[3] = { -1, 2, 4 };
        ob_init_i64(&b, "s0", 4, s0);
        if (form == 6) ob_init_i64(&b, "sf", 3, sbad);
        else ob_init_i64(&b, "sf", 2, form == 4 || form == 5 ? sfixed : sflat);
        ob_node(&b, "Reshape", "r0", "x,s0", "x4");
        Onnx__NodeProto *c = ob_node(&b, "Conv", "c", "x4,W", "h");
        ob_attr_ints(&b, c, "strides", 2, 2, 2);
        ob_attr_ints(&b, c, "pads", 4, 1, 1, 1, 1);
        const char *flat_out = "hf";
        if (form == 1 || form == 2 || form == 3) {
            Onnx__NodeProto *f = ob_node(&b, "Flatten", "f", "h", "hf");
            if (form == 2) ob_attr_i(&b, f, "axis", 0);
            if (form == 3) ob_attr_i(&b, f, "axis", 2);
        } else {
            ob_node(&b, "Reshape", "r1", "h,sf", "hf");
        }
        if (form == 7) {   /* Identity, then Dropout with training_mode false */
            Onnx__TensorProto *t = ob_alloc(&b, sizeof *t);
            const Onnx__TensorProto ti = ONNX__TENSOR_PROTO__INIT;
            *t = ti;
            t->name = ob_str(&b, "tm");
            t->has_data_type = 1;
            t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
            t->has_raw_data = 1;
            t->raw_data.data = ob_alloc(&b, 1);   /* false */
            t->raw_data.len = 1;
            b.inits[b.g.n_initializer++] = t;
            const int64_t rd[1] = { 1 };
            const float ratio = 0.5f;
            ob_init_f(&b, "ratio", 0, rd, &ratio);
            ob_node(&b, "Identity", "id", "hf", "hi");
            ob_node(&b, "Dropout", "do", "hi,ratio,tm", "hd,mask");
            flat_out = "hd";
        }
        if (form == 8) {   /* Dropout whose mask is read later */
            ob_node(&b, "Dropout", "do", "hf", "hd,mask");
            ob_node(&b, "Add", "a", "hd,mask", "hm");
            flat_out = "hm";
        }
        char ins[32];
        snprintf(ins, sizeof ins, "%s,F", flat_out);
        Onnx__NodeProto *g = ob_node(&b, "Gemm", "fc", ins, "y");
        ob_attr_i(&b, g, "transB", 1);
        size_t out_n = 0;
        dcz_status st = build_run(&b, x, 2, y, &out_n, err, sizeof err);
        if (form <= 1 || form == 5 || form == 7)
            CHECK(st == DCZ_OK && out_n == 3, "form %d: %d %s", form, (int)st, err);
        else if (form == 2 || form == 3)
            CHECK(st == DCZ_ERR_UNSUPPORTED && strstr(err, "Flatten 'f'") && strstr(err, "batch"), "form %d: %s",
                  form, err);
        else if (form == 4)
            CHECK(st == DCZ_ERR_UNSUPPORTED && strstr(err, "fixes the batch size"), "form 4: %s", err);
        else if (form == 6)
            CHECK(st == DCZ_ERR_UNSUPPORTED && strstr(err, "Reshape 'r1'") && strstr(err, "Gemm 'fc'"), "form 6: %s",
                  err);
        else
            CHECK(st != DCZ_OK && strstr(err, "mask"), "form 8: %s", err);
        ob_free(&b);
    }
}

/* Softmax: the whole sample before opset 13 (axis 1), the last axis of a
 * flat sample; another axis, or a softmax before other layers, refused. */
static void test_softmax(void)
{
    const int64_t in4[4] = { -1, 2, 2, 2 };
    float x[16], y[16];
    fill(x, 16, 41);
    for (int form = 0; form < 4; form++) {
        ob b;
        ob_init(&b, form == 0 ? 11 : 13);
        ob_input(&b, "x", form >= 2 ? 2 : 4, form >= 2 ? (const int64_t[]){ -1, 8 } : in4);
        ob_output(&b, "y");
        Onnx__NodeProto *n = ob_node(&b, "Softmax", "sm", "x", form == 3 ? "s" : "y");
        if (form == 0) ob_attr_i(&b, n, "axis", 1);
        if (form == 3) ob_node(&b, "Relu", "r", "s", "y");
        char err[512];
        dcz_status st = build_run(&b, x, 2, y, NULL, err, sizeof err);
        if (form == 0 || form == 2) {
            CHECK(st == DCZ_OK, "form %d: %s", form, err);
            double sum = 0;
            for (int i = 0; i < 8; i++) sum += y[i];
            CHECK(fabs(sum - 1) < 1e-5, "form %d: sample sums to %g", form, sum);
        } else if (form == 1) {
            CHECK(st == DCZ_ERR_UNSUPPORTED && strstr(err, "Softmax 'sm'") && strstr(err, "axis"), "form 1: %s", err);
        } else {
            CHECK(st == DCZ_ERR_UNSUPPORTED && strstr(err, "last"), "form 3: %s", err);
        }
        ob_free(&b);
    }
}

/* A softmax over each whole (C, H, W) sample exports from opset 13 as
 * Flatten, Softmax, Reshape, and that imports back to the same outputs. */
static void test_softmax_export(void)
{
    const int64_t in4[4] = { -1, 2, 2, 2 };
    float x[16];
    fill(x, 16, 42);
    ob b;
    ob_init(&b, 11);
    ob_input(&b, "x", 4, in4);
    ob_output(&b, "y");
    ob_node(&b, "Relu", "r", "x", "h");
    Onnx__NodeProto *n = ob_node(&b, "Softmax", "sm", "h", "y");
    ob_attr_i(&b, n, "axis", 1);
    dcz_doc *d = NULL;
    char err[256];
    CHECK(build_import(&b, &d, err, sizeof err) == DCZ_OK, "%s", err);
    for (int opset = 0; d && opset <= DCZ_ONNX_OPSET_MAX; opset = opset ? opset + 1 : DCZ_ONNX_OPSET_MIN)
        export_roundtrip(d, x, 2, opset, 0, "softmax of (C, H, W)");
    dcz_doc_free(d);
    ob_free(&b);
}

/* Attributes and forms dcz refuses, each with the node named. */
static void test_attribute_refusals(void)
{
    const int64_t in4[4] = { -1, 2, 5, 5 }, wd[4] = { 4, 2, 3, 3 }, wd1[4] = { 4, 1, 3, 3 };
    float W[100];   /* the largest weight below: 2 x 50 */
    fill(W, 100, 51);
    for (int form = 0; form < 12; form++) {
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in4);
        ob_output(&b, "y");
        ob_init_f(&b, "W", 4, form == 0 ? wd1 : wd, W);
        Onnx__NodeProto *n = form < 6 ? ob_node(&b, "Conv", "cv", "x,W", "y") : NULL;
        switch (form) {
        case 0: ob_attr_i(&b, n, "group", 3); EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Conv 'cv'", "group 3"); break;
        case 1: ob_attr_ints(&b, n, "dilations", 2, 2, 2); EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Conv 'cv'", "dilations"); break;
        case 2: ob_attr_ints(&b, n, "pads", 4, 0, 0, 1, 1); EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "asymmetric"); break;
        case 3: ob_attr_i(&b, n, "frobnicate", 1); EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Conv 'cv'", "frobnicate"); break;
        case 4: ob_attr_s(&b, n, "auto_pad", "SAME_UPPER"); ob_attr_ints(&b, n, "strides", 2, 2, 2);
                /* 5 with stride 2: output 3, padding 2 * 2 + 3 - 5 = 2, even: accepted */
                { char err[256]; float x[50], y[200]; fill(x, 50, 1);
                  CHECK(build_run(&b, x, 1, y, NULL, err, sizeof err) == DCZ_OK, "SAME stride 2: %s", err); }
                break;
        case 5: ob_attr_ints(&b, n, "kernel_shape", 2, 5, 5); EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "kernel_shape"); break;
        case 6: {
            Onnx__NodeProto *g = ob_node(&b, "Flatten", "f", "x", "xf");
            (void)g;
            const int64_t gd[2] = { 2, 50 };
            ob_init_f(&b, "G", 2, gd, W);
            Onnx__NodeProto *m = ob_node(&b, "Gemm", "gm", "xf,G", "y");
            ob_attr_i(&b, m, "transA", 1);
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Gemm 'gm'", "transA");
            break;
        }
        case 7: {   /* batch norm of the flat input: nothing to fold into */
            const int64_t cd[1] = { 8 };
            const float one[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, zero[8] = { 0 };
            ob_init_f(&b, "g", 1, cd, one);
            ob_init_f(&b, "bb", 1, cd, zero);
            ob_init_f(&b, "m", 1, cd, zero);
            ob_init_f(&b, "v", 1, cd, one);
            ob_attr_i(&b, ob_node(&b, "Flatten", "f", "x", "h"), "axis", 1);
            ob_node(&b, "BatchNormalization", "bn", "h,g,bb,m,v", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "BatchNormalization 'bn'", "normalizes a flat value");
            break;
        }
        case 8: {   /* a constant added to what no Conv or Gemm computes */
            ob_node(&b, "Relu", "r", "x", "h");
            ob_node(&b, "Add", "a", "h,W", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Add 'a'", "follows no");
            break;
        }
        case 9: {   /* Pad then MaxPool: zero padding is not max padding */
            const int64_t pads[8] = { 0, 0, 1, 1, 0, 0, 1, 1 };
            ob_init_i64(&b, "pads", 8, pads);
            ob_node(&b, "Pad", "p", "x,pads", "xp");
            Onnx__NodeProto *m = ob_node(&b, "MaxPool", "mp", "xp", "y");
            ob_attr_ints(&b, m, "kernel_shape", 2, 2, 2);
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "MaxPool 'mp'", "Pad 'p'");
            break;
        }
        case 10: {   /* ceil_mode where it differs: 5 with window 2 stride 2 */
            Onnx__NodeProto *m = ob_node(&b, "MaxPool", "mp", "x", "y");
            ob_attr_ints(&b, m, "kernel_shape", 2, 2, 2);
            ob_attr_ints(&b, m, "strides", 2, 2, 2);
            ob_attr_i(&b, m, "ceil_mode", 1);
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "MaxPool 'mp'", "ceil_mode");
            break;
        }
        case 11: {   /* Relu on a constant only */
            ob_node(&b, "Relu", "r", "W", "w2");
            ob_node(&b, "Relu", "r2", "x", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Relu 'r'", "constants");
            break;
        }
        }
        ob_free(&b);
    }
}

/* Tensor contents: other float types converted exactly, every
 * inconsistency refused. */
static void test_tensor_data(void)
{
    const int64_t wd[2] = { 2, 3 };
    const float W[6] = { 0.5f, -1.25f, 2.0f, 0.75f, -0.125f, 3.0f };
    float x[3] = { 1.0f, 2.0f, -1.0f }, want[2], y[2];
    for (int o = 0; o < 2; o++) want[o] = W[o * 3] * x[0] + W[o * 3 + 1] * x[1] + W[o * 3 + 2] * x[2];
    for (int form = 0; form < 12; form++) {
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 2, (const int64_t[]){ -1, 3 });
        ob_output(&b, "y");
        Onnx__TensorProto *t = ob_init_f(&b, "W", 2, wd, W);
        Onnx__NodeProto *g = ob_node(&b, "Gemm", "g", "x,W", "y");
        ob_attr_i(&b, g, "transB", 1);
        int ok = 0;
        dcz_status want_st = DCZ_ERR_FORMAT;
        switch (form) {
        case 0:   /* float_data instead of raw_data */
            t->has_raw_data = 0;
            t->float_data = (float *)W;
            t->n_float_data = 6;
            ok = 1;
            break;
        case 1: {   /* float16: these values are exact */
            uint8_t *r = ob_alloc(&b, 12);
            for (int k = 0; k < 6; k++) { uint16_t h = dcz_f32_to_f16(W[k]); r[2 * k] = (uint8_t)h; r[2 * k + 1] = (uint8_t)(h >> 8); }
            t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
            t->raw_data.data = r;
            t->raw_data.len = 12;
            ok = 1;
            break;
        }
        case 2: {   /* float64 */
            double *dv = ob_alloc(&b, 6 * sizeof *dv);
            for (int k = 0; k < 6; k++) dv[k] = W[k];
            t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
            t->has_raw_data = 0;
            t->double_data = dv;
            t->n_double_data = 6;
            ok = 1;
            break;
        }
        case 3: {   /* bfloat16 through int32_data */
            int32_t *iv = ob_alloc(&b, 6 * sizeof *iv);
            for (int k = 0; k < 6; k++) iv[k] = (int32_t)(dcz_f32_bits(W[k]) >> 16);
            t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
            t->has_raw_data = 0;
            t->int32_data = iv;
            t->n_int32_data = 6;
            ok = 1;
            break;
        }
        case 4: t->raw_data.len = 20; break;                                     /* short raw_data */
        case 5: t->has_raw_data = 0; t->float_data = (float *)W; t->n_float_data = 5; break;   /* too few */
        case 6: t->float_data = (float *)W; t->n_float_data = 6; break;          /* two fields */
        case 7: t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT8; t->raw_data.len = 6; want_st = DCZ_ERR_UNSUPPORTED; break;
        case 8: t->dims[0] = -2; break;                                          /* negative dim */
        case 9: dcz_put32(t->raw_data.data + 8, 0x7fc00000u); break;             /* NaN */
        case 10: t->has_data_location = 1; t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
                 break;   /* both external and raw_data (tests of external data: test_external_data) */
        case 11: t->has_data_type = 0; break;
        }
        char err[512] = "";
        dcz_status st = build_run(&b, x, 1, y, NULL, err, sizeof err);
        if (ok) CHECK(st == DCZ_OK && maxdiff(y, want, 2) < 1e-6f, "form %d: %d %s", form, (int)st, err);
        else CHECK(st == want_st && strstr(err, "'W'"), "form %d: status %d (want %d): %s", form, (int)st,
                   (int)want_st, err);
        ob_free(&b);
    }
}

/* The graph as a whole: opsets, inputs, outputs, connectivity, operators. */
static void test_graph_refusals(void)
{
    const int64_t wd[2] = { 2, 3 };
    const float W[6] = { 1, 2, 3, 4, 5, 6 };
    for (int form = 0; form < 14; form++) {
        ob b;
        ob_init(&b, form == 0 ? 10 : form == 1 ? 23 : form == 2 ? 0 : 13);
        ob_input(&b, "x", 2, (const int64_t[]){ -1, form == 4 ? -1 : 3 });
        if (form == 3) ob_input(&b, "x2", 2, (const int64_t[]){ -1, 3 });
        ob_output(&b, "y");
        if (form == 5) ob_output(&b, "z");
        ob_init_f(&b, "W", 2, wd, W);
        Onnx__NodeProto *g = ob_node(&b, "Gemm", "g", form == 7 ? "nowhere,W" : "x,W", form == 6 ? "h" : "y");
        ob_attr_i(&b, g, "transB", 1);
        if (form == 6) ob_node(&b, "Relu", "r", "h", "z");
        if (form == 8) ob_node(&b, "Relu", "r", "x", "y");        /* y twice */
        if (form == 9) {
            Onnx__NodeProto *n = ob_node(&b, "FusedThing", "ft", "y", "y2");
            n->domain = "com.example";
            ob_node(&b, "LSTM", "lstm", "y2", "y3");
            ob_node(&b, "Softplus", NULL, "y3", "y4");
        }
        if (form == 10) b.ins[0]->type->tensor_type->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        if (form == 11) b.ins[0]->type->tensor_type->shape = NULL;
        if (form == 12) {   /* a declared output shape that disagrees */
            b.outs[0] = ob_value(&b, "y", 2, (const int64_t[]){ -1, 7 });
        }
        if (form == 13) b.g.n_input = 0;
        switch (form) {
        case 0: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "opset 10", "11 to 22"); break;
        case 1: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "opset 23"); break;
        case 2: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "no ONNX opset"); break;
        case 3: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "2 inputs"); break;
        case 4: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "symbolic"); break;
        case 5: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "2 outputs"); break;
        case 6: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "graph output 'y'", "no node"); break;
        case 7: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "Gemm 'g'", "'nowhere'"); break;
        case 8: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "'y'", "twice", "Relu 'r'"); break;
        case 9: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "3 unsupported operators", "com.example.FusedThing 'ft'",
                               "LSTM 'lstm'", "Softplus (node 3)"); break;
        case 10: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "float32"); break;
        case 11: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "no shape"); break;
        case 12: EXPECT_REFUSED(&b, DCZ_ERR_SHAPE, "declared"); break;
        case 13: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "0 inputs"); break;
        }
        ob_free(&b);
    }
    /* a duplicate value name */
    ob b;
    ob_init(&b, 13);
    ob_input(&b, "x", 2, (const int64_t[]){ -1, 3 });
    ob_output(&b, "y");
    ob_init_f(&b, "W", 2, wd, W);
    ob_init_f(&b, "W", 2, wd, W);
    ob_node(&b, "Gemm", "g", "x,W", "y");
    EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "'W'", "twice");
    ob_free(&b);
}

/* Exact zeros: a layer of at least 10% zeros comes in pruned (sparse, its
 * zeros the mask), fewer stay dense, and keep_dense keeps them all dense. */
static void test_pruned_detection(void)
{
    float W[100], x[10], y1[10], y2[10];
    fill(x, 10, 61);
    for (int zeros = 0; zeros <= 100; zeros += 5) {
        fill(W, 100, 62);
        for (int k = 0; k < zeros; k++) W[(k * 37) % 100] = k % 2 ? 0.0f : -0.0f;
        for (int keep = 0; keep < 2; keep++) {
            ob b;
            ob_init(&b, 13);
            ob_input(&b, "x", 2, (const int64_t[]){ -1, 10 });
            ob_output(&b, "y");
            ob_init_f(&b, "W", 2, (const int64_t[]){ 10, 10 }, W);
            Onnx__NodeProto *g = ob_node(&b, "Gemm", "g", "x,W", "y");
            ob_attr_i(&b, g, "transB", 1);
            size_t len;
            uint8_t *buf = ob_pack(&b, &len);
            dcz_doc *d = NULL;
            char err[256];
            CHECK(import_bytes(buf, len, keep, &d, err, sizeof err) == DCZ_OK, "%d zeros: %s", zeros, err);
            free(buf);
            ob_free(&b);
            if (!d) continue;
            const dcz_doc_tensor *w = &d->layers[0].t[0];
            const int sparse = zeros >= 10 && !keep;
            CHECK((w->enc == DCZ_ENC_SPARSE_F32) == sparse && !!w->mask == sparse, "%d zeros, keep %d: enc %u",
                  zeros, keep, w->enc);
            if (sparse) {
                size_t kept = 0;
                for (size_t i = 0; i < 100; i++) kept += w->mask[i];
                CHECK(kept == (size_t)(100 - zeros) && w->gap_bits == 5, "%d zeros: %zu kept", zeros, kept);
            }
            CHECK(run_doc(d, x, 1, keep ? y2 : y1, NULL) == DCZ_OK, "%d zeros: run", zeros);
            dcz_doc_free(d);
        }
        CHECK(maxdiff(y1, y2, 10) < 1e-6f, "%d zeros: sparse and dense agree", zeros);
    }
}

/* ---- graphs ------------------------------------------------------------------------ */

/* The reference convolution: one sample x (c, h, w), weight (oc, c / group,
 * k, k), bias b (oc) or NULL, stride 1, padding p: y (oc, h', w'). */
static void conv_ref(const float *x, int c, int h, int w, const float *wt, const float *b, int oc, int group,
                     int k, int p, float *y)
{
    const int ho = h + 2 * p - k + 1, wo = w + 2 * p - k + 1, cg = c / group, og = oc / group;
    for (int o = 0; o < oc; o++)
        for (int oy = 0; oy < ho; oy++)
            for (int ox = 0; ox < wo; ox++) {
                double acc = b ? b[o] : 0;
                for (int ci = 0; ci < cg; ci++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            const int iy = oy + ky - p, ix = ox + kx - p, ic = (o / og) * cg + ci;
                            if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                                acc += (double)wt[((o * cg + ci) * k + ky) * k + kx] * x[(ic * h + iy) * w + ix];
                        }
                y[(o * ho + oy) * wo + ox] = (float)acc;
            }
}

/* Export and import back at the default opset and every one, the same
 * outputs bit for bit (HardSwish, written as HardSigmoid and Mul before
 * opset 14, comes back as one HARD_SWISH). */
static void roundtrip_all(dcz_doc *d, const float *x, size_t batch, const char *what)
{
    for (int opset = 0; opset <= DCZ_ONNX_OPSET_MAX; opset = opset ? opset + 1 : DCZ_ONNX_OPSET_MIN)
        export_roundtrip(d, x, batch, opset, 0, what);
}

/* Imports b (the document in *d, kept for the caller when d is not NULL),
 * runs it on batch samples of x and compares with want (n values per
 * sample) within tol; exports it and imports it back at every opset. */
static void graph_check(ob *b, const float *x, size_t batch, const float *want, size_t n, float tol,
                        const char *what, dcz_doc **keep)
{
    dcz_doc *d = NULL;
    char err[1024];
    float y[1024];
    size_t out_n = 0;
    dcz_status s = build_import(b, &d, err, sizeof err);
    CHECK(s == DCZ_OK, "%s: %s", what, err);
    if (s == DCZ_OK) s = run_doc(d, x, batch, y, &out_n);
    CHECK(s == DCZ_OK && out_n == n, "%s: run %d, %zu outputs (want %zu)", what, (int)s, out_n, n);
    if (s == DCZ_OK && out_n == n) {
        float md = maxdiff(y, want, batch * n);
        CHECK(md <= tol, "%s: max difference %g", what, (double)md);
        roundtrip_all(d, x, batch, what);
    }
    if (keep) *keep = d;
    else dcz_doc_free(d);
}

static const int64_t in245[4] = { -1, 2, 5, 5 };

/* A residual connection: y = relu(conv(x)) + x, the Add's inputs in
 * either order; the ADD layer reads the model input. */
static void test_residual_add(void)
{
    float x[2 * 50], W[36], B[2], want[2 * 50];
    fill(x, 100, 81);
    fill(W, 36, 82);
    fill(B, 2, 83);
    for (int i = 0; i < 2; i++) {
        conv_ref(x + 50 * i, 2, 5, 5, W, B, 2, 1, 3, 1, want + 50 * i);
        for (int k = 0; k < 50; k++) want[50 * i + k] = fmaxf(want[50 * i + k], 0.0f) + x[50 * i + k];
    }
    for (int order = 0; order < 2; order++) {
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in245);
        ob_output(&b, "y");
        ob_init_f(&b, "W", 4, (const int64_t[]){ 2, 2, 3, 3 }, W);
        ob_init_f(&b, "B", 1, (const int64_t[]){ 2 }, B);
        Onnx__NodeProto *c = ob_node(&b, "Conv", "c", "x,W,B", "h");
        ob_attr_ints(&b, c, "pads", 4, 1, 1, 1, 1);
        ob_node(&b, "Relu", "r", "h", "hr");
        ob_node(&b, "Add", "a", order ? "x,hr" : "hr,x", "y");
        dcz_doc *d = NULL;
        graph_check(&b, x, 2, want, 50, 1e-5f, "residual Add", &d);
        if (d) {
            const dcz_doc_layer *a = &d->layers[2];
            CHECK(d->nlayers == 3 && a->op == DCZ_OP_ADD && a->nin == 2 &&
                  a->in[order] == 2 && a->in[1 - order] == 0, "the ADD reads relu1 and the input");
        }
        dcz_doc_free(d);
        ob_free(&b);
    }
}

/* Mul: x (C, H, W) times sigmoid(mean per channel) as (N, C, 1, 1), in
 * either order; times relu(x), same shape; and squeeze-and-excitation with
 * dense layers, its factors reshaped from (N, C) to (N, C, 1, 1). */
static void test_mul(void)
{
    const int64_t in[4] = { -1, 3, 4, 4 };
    float x[2 * 48], G[9], want[2 * 48];
    fill(x, 96, 84);
    fill(G, 9, 85);
    for (int form = 0; form < 4; form++) {
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        if (form < 2) {
            ob_node(&b, "GlobalAveragePool", "gap", "x", "g");
            ob_node(&b, "Sigmoid", "s", "g", "f");
        } else if (form == 2) {
            ob_node(&b, "Relu", "r", "x", "f");
        } else {
            ob_init_f(&b, "G", 2, (const int64_t[]){ 3, 3 }, G);
            ob_init_i64(&b, "shape", 4, (const int64_t[]){ -1, 3, 1, 1 });
            ob_node(&b, "GlobalAveragePool", "gap", "x", "g");
            ob_node(&b, "Flatten", "fl", "g", "gf");
            Onnx__NodeProto *g = ob_node(&b, "Gemm", "fc", "gf,G", "e");
            ob_attr_i(&b, g, "transB", 1);
            ob_node(&b, "Sigmoid", "s", "e", "s2");
            ob_node(&b, "Reshape", "rs", "s2,shape", "f");
        }
        ob_node(&b, "Mul", "m", form == 1 ? "f,x" : "x,f", "y");
        for (int i = 0; i < 2; i++) {
            double mean[3], e[3];
            for (int c = 0; c < 3; c++) {
                mean[c] = 0;
                for (int k = 0; k < 16; k++) mean[c] += x[48 * i + 16 * c + k] / 16.0;
            }
            for (int o = 0; o < 3; o++) e[o] = G[3 * o] * mean[0] + G[3 * o + 1] * mean[1] + G[3 * o + 2] * mean[2];
            for (int k = 0; k < 48; k++) {
                const float v = x[48 * i + k];
                const double f = form < 2 ? 1 / (1 + exp(-mean[k / 16])) : form == 2 ? fmax(v, 0)
                                                                          : 1 / (1 + exp(-e[k / 16]));
                want[48 * i + k] = (float)(v * f);
            }
        }
        char what[32];
        snprintf(what, sizeof what, "Mul form %d", form);
        dcz_doc *d = NULL;
        graph_check(&b, x, 2, want, 48, 1e-6f, what, &d);
        if (d) {
            const dcz_doc_layer *m = &d->layers[d->nlayers - 1];
            CHECK(m->op == DCZ_OP_MUL && m->in[0] == 0, "%s: MUL of the input by its factors", what);
        }
        dcz_doc_free(d);
        ob_free(&b);
    }
}

/* A MUL by factors of rank 1, (C) for x (C, H, W), as dcz train makes them:
 * exported with a Reshape to (N, C, 1, 1), imported back the same. */
static void test_mul_rank1_export(void)
{
    dcz_doc *d = NULL;
    REQUIRE_OK(dcz_doc_alloc(4, &d), "alloc");
    d->input_rank = 3;
    d->input_dims[0] = 3, d->input_dims[1] = 4, d->input_dims[2] = 4;
    const uint16_t ops[4] = { DCZ_OP_GLOBAL_AVGPOOL, DCZ_OP_FLATTEN, DCZ_OP_SIGMOID, DCZ_OP_MUL };
    for (int k = 0; k < 4; k++) {
        d->layers[k].op = ops[k];
        snprintf(d->layers[k].name, sizeof d->layers[k].name, "l%d", k);
    }
    d->layers[3].nin = 2;
    d->layers[3].in[0] = 0;
    d->layers[3].in[1] = 3;
    float x[2 * 48];
    fill(x, 96, 86);
    uint8_t *onnx = NULL;
    size_t len = 0;
    char err[256];
    REQUIRE_OK(dcz_onnx_export(d, NULL, &onnx, &len, err, sizeof err), "export: %s", err);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, onnx);
    int reshape = 0;
    for (size_t k = 0; m && k < m->graph->n_node; k++) reshape += strcmp(m->graph->node[k]->op_type, "Reshape") == 0;
    CHECK(reshape == 1, "a Reshape of the factors");
    onnx__model_proto__free_unpacked(m, NULL);
    free(onnx);
    roundtrip_all(d, x, 2, "MUL by (C) factors");
    dcz_doc_free(d);
}

/* Concat on the channels: of (C_i, H, W) values (axis 1 and -3) and of
 * flat ones (axis -1). */
static void test_concat(void)
{
    float x[2 * 18], W[6], B[3], G[12], want[2 * 63];
    fill(x, 36, 87);
    fill(W, 6, 88);
    fill(B, 3, 89);
    fill(G, 12, 90);
    for (int form = 0; form < 3; form++) {
        ob b;
        ob_init(&b, 13);
        ob_output(&b, "y");
        Onnx__NodeProto *n;
        size_t per;
        if (form < 2) {   /* x (2, 3, 3): relu(x), conv1x1(x) (3 channels), x */
            ob_input(&b, "x", 4, (const int64_t[]){ -1, 2, 3, 3 });
            ob_init_f(&b, "W", 4, (const int64_t[]){ 3, 2, 1, 1 }, W);
            ob_init_f(&b, "B", 1, (const int64_t[]){ 3 }, B);
            ob_node(&b, "Relu", "r", "x", "a");
            ob_node(&b, "Conv", "c", "x,W,B", "h");
            n = ob_node(&b, "Concat", "cat", "a,h,x", "y");
            ob_attr_i(&b, n, "axis", form ? -3 : 1);
            per = 63;
            for (int i = 0; i < 2; i++) {
                const float *xi = x + 18 * i;
                float *wi = want + 63 * i;
                for (int k = 0; k < 18; k++) wi[k] = fmaxf(xi[k], 0.0f);
                conv_ref(xi, 2, 3, 3, W, B, 3, 1, 1, 0, wi + 18);
                memcpy(wi + 45, xi, 18 * sizeof *xi);
            }
        } else {          /* x (4): x, fc(x) (3), sigmoid(x) */
            ob_input(&b, "x", 2, (const int64_t[]){ -1, 4 });
            ob_init_f(&b, "G", 2, (const int64_t[]){ 3, 4 }, G);
            Onnx__NodeProto *g = ob_node(&b, "Gemm", "fc", "x,G", "h");
            ob_attr_i(&b, g, "transB", 1);
            ob_node(&b, "Sigmoid", "s", "x", "sx");
            n = ob_node(&b, "Concat", "cat", "x,h,sx", "y");
            ob_attr_i(&b, n, "axis", -1);
            per = 11;
            for (int i = 0; i < 2; i++) {
                const float *xi = x + 4 * i;
                float *wi = want + 11 * i;
                memcpy(wi, xi, 4 * sizeof *xi);
                for (int o = 0; o < 3; o++) {
                    double acc = 0;
                    for (int k = 0; k < 4; k++) acc += (double)G[4 * o + k] * xi[k];
                    wi[4 + o] = (float)acc;
                }
                for (int k = 0; k < 4; k++) wi[7 + k] = 1.0f / (1.0f + expf(-xi[k]));
            }
        }
        char what[32];
        snprintf(what, sizeof what, "Concat form %d", form);
        graph_check(&b, x, 2, want, per, 1e-6f, what, NULL);
        ob_free(&b);
    }
}

/* Grouped and depthwise convolutions against the reference, group in the
 * layer and weight (out_c, in_c / group, k, k). */
static void test_grouped_conv(void)
{
    const int64_t in[4] = { -1, 4, 5, 5 };
    static const int forms[4][2] = { { 1, 3 }, { 2, 6 }, { 4, 4 }, { 4, 8 } };   /* group, out_c */
    float x[2 * 100], W[8 * 4 * 9], B[8], want[2 * 200];
    fill(x, 200, 91);
    fill(W, sizeof W / sizeof *W, 92);
    fill(B, 8, 93);
    for (int f = 0; f < 4; f++) {
        const int group = forms[f][0], oc = forms[f][1];
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        ob_init_f(&b, "W", 4, (const int64_t[]){ oc, 4 / group, 3, 3 }, W);
        ob_init_f(&b, "B", 1, (const int64_t[]){ oc }, B);
        Onnx__NodeProto *c = ob_node(&b, "Conv", "c", "x,W,B", "y");
        ob_attr_ints(&b, c, "pads", 4, 1, 1, 1, 1);
        ob_attr_i(&b, c, "group", group);
        for (int i = 0; i < 2; i++) conv_ref(x + 100 * i, 4, 5, 5, W, B, oc, group, 3, 1, want + 25 * oc * i);
        char what[48];
        snprintf(what, sizeof what, "Conv group %d, %d outputs", group, oc);
        dcz_doc *d = NULL;
        graph_check(&b, x, 2, want, (size_t)25 * oc, 1e-5f, what, &d);
        if (d) CHECK(d->layers[0].attr[8] == group && d->layers[0].t[0].dims[1] == (uint32_t)(4 / group),
                     "%s: group %d, weight (%u, %u, 3, 3)", what, d->layers[0].attr[8], d->layers[0].t[0].dims[0],
                     d->layers[0].t[0].dims[1]);
        dcz_doc_free(d);
        ob_free(&b);
    }
}

/* Every activation with its attributes and their defaults, and Clip with
 * bounds from initializers, Constant nodes, or absent. */
static void test_activations(void)
{
    enum { N = 16 };
    float x[2 * N], want[2 * N];
    fill(x, 2 * N, 94);
    for (int i = 0; i < 2 * N; i++) x[i] *= 5.0f;   /* -5 .. 5 */
    const float six = 6.0f, zero = 0.0f, one = 1.0f;
    for (int form = 0; form < 14; form++) {
        ob b;
        ob_init(&b, form == 3 ? 14 : 13);
        ob_input(&b, "x", 2, (const int64_t[]){ -1, N });
        ob_output(&b, "y");
        Onnx__NodeProto *n = NULL;
        switch (form) {
        case 0: ob_node(&b, "Relu", "a", "x", "y"); break;
        case 1: ob_node(&b, "Sigmoid", "a", "x", "y"); break;
        case 2: ob_node(&b, "Tanh", "a", "x", "y"); break;
        case 3: ob_node(&b, "HardSwish", "a", "x", "y"); break;
        case 4: ob_node(&b, "LeakyRelu", "a", "x", "y"); break;
        case 5: n = ob_node(&b, "LeakyRelu", "a", "x", "y"); ob_attr_f(&b, n, "alpha", 0.25f); break;
        case 6: ob_node(&b, "HardSigmoid", "a", "x", "y"); break;
        case 7: n = ob_node(&b, "HardSigmoid", "a", "x", "y"); ob_attr_f(&b, n, "alpha", 0.3f);
                ob_attr_f(&b, n, "beta", 0.4f); break;
        case 8: ob_node(&b, "Clip", "a", "x", "y"); break;
        case 9:   /* ReLU6 from initializers of rank 0 */
            ob_init_f(&b, "lo", 0, NULL, &zero);
            ob_init_f(&b, "hi", 0, NULL, &six);
            ob_node(&b, "Clip", "a", "x,lo,hi", "y");
            break;
        case 10: {   /* bounds from Constant nodes: a tensor and a value_float */
            Onnx__NodeProto *c = ob_node(&b, "Constant", "c0", "", "lo");
            Onnx__AttributeProto *a = ob_attr(&b, c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
            const float m1 = -1.0f;
            a->t = ob_tensor_f(&b, NULL, 0, NULL, &m1);
            c = ob_node(&b, "Constant", "c1", "", "hi");
            ob_attr_f(&b, c, "value_float", 2.5f);
            ob_node(&b, "Clip", "a", "x,lo,hi", "y");
            break;
        }
        case 11: ob_init_f(&b, "lo", 0, NULL, &one); ob_node(&b, "Clip", "a", "x,lo", "y"); break;
        case 12: ob_init_f(&b, "hi", 0, NULL, &one); ob_node(&b, "Clip", "a", "x,,hi", "y"); break;
        case 13: ob_init_f(&b, "hi", 1, (const int64_t[]){ 1 }, &zero); ob_node(&b, "Clip", "a", "x,,hi", "y"); break;
        }
        for (int i = 0; i < 2 * N; i++) {
            const double v = x[i];
            double r;
            switch (form) {
            case 0: r = fmax(v, 0); break;
            case 1: r = 1 / (1 + exp(-v)); break;
            case 2: r = tanh(v); break;
            case 3: r = v * fmin(fmax(v / 6 + 0.5, 0), 1); break;
            case 4: r = v > 0 ? v : 0.01 * v; break;
            case 5: r = v > 0 ? v : 0.25 * v; break;
            case 6: r = fmin(fmax(0.2 * v + 0.5, 0), 1); break;
            case 7: r = fmin(fmax(0.3 * v + 0.4, 0), 1); break;
            case 8: r = v; break;
            case 9: r = fmin(fmax(v, 0), 6); break;
            case 10: r = fmin(fmax(v, -1), 2.5); break;
            case 11: r = fmax(v, 1); break;
            default: r = fmin(v, form == 12 ? 1 : 0); break;
            }
            want[i] = (float)r;
        }
        char what[32];
        snprintf(what, sizeof what, "activation form %d", form);
        graph_check(&b, x, 2, want, N, 1e-6f, what, NULL);
        ob_free(&b);
    }
}

/* Batch norm inside a branch folds into its Conv: y = bn(conv2(r)) + r,
 * r = relu(conv1(x)); when the Conv's output has another reader, y =
 * bn(h) + relu(h), h = conv1(x), it is a per-channel affine of its own; a
 * constant Add there is refused. */
static void test_batchnorm_in_branch(void)
{
    const float g[2] = { 1.5f, -0.5f }, be[2] = { 0.1f, 0.2f }, mu[2] = { 0.3f, -0.2f }, var[2] = { 0.5f, 2.0f };
    float x[2 * 50], W1[36], B1[2], W2[36], want[2 * 50], want1[2 * 50];
    fill(x, 100, 95);
    fill(W1, 36, 96);
    fill(B1, 2, 97);
    fill(W2, 36, 98);
    for (int i = 0; i < 2; i++) {
        float r[50], h2[50];
        conv_ref(x + 50 * i, 2, 5, 5, W1, B1, 2, 1, 3, 1, r);
        for (int k = 0; k < 50; k++) {
            const int c = k / 25;
            want1[50 * i + k] = (float)(g[c] * (r[k] - mu[c]) / sqrt(var[c] + 1e-5) + be[c] + fmaxf(r[k], 0.0f));
        }
        for (int k = 0; k < 50; k++) r[k] = fmaxf(r[k], 0.0f);
        conv_ref(r, 2, 5, 5, W2, NULL, 2, 1, 3, 1, h2);
        for (int k = 0; k < 50; k++) {
            const int c = k / 25;
            want[50 * i + k] = (float)(g[c] * (h2[k] - mu[c]) / sqrt(var[c] + 1e-5) + be[c] + r[k]);
        }
    }
    for (int form = 0; form < 3; form++) {
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in245);
        ob_output(&b, "y");
        const int64_t cd[1] = { 2 }, wd[4] = { 2, 2, 3, 3 };
        ob_init_f(&b, "W1", 4, wd, W1);
        ob_init_f(&b, "B1", 1, cd, B1);
        ob_init_f(&b, "W2", 4, wd, W2);
        ob_init_f(&b, "g", 1, cd, g);
        ob_init_f(&b, "be", 1, cd, be);
        ob_init_f(&b, "mu", 1, cd, mu);
        ob_init_f(&b, "var", 1, cd, var);
        ob_init_f(&b, "B4", 4, (const int64_t[]){ 1, 2, 1, 1 }, B1);
        Onnx__NodeProto *c = ob_node(&b, "Conv", "c1", "x,W1,B1", "h");
        ob_attr_ints(&b, c, "pads", 4, 1, 1, 1, 1);
        ob_node(&b, "Relu", "r", "h", "hr");
        if (form == 0) {
            c = ob_node(&b, "Conv", "c2", "hr,W2", "h2");
            ob_attr_ints(&b, c, "pads", 4, 1, 1, 1, 1);
            ob_node(&b, "BatchNormalization", "bn", "h2,g,be,mu,var", "b2");
            ob_node(&b, "Add", "a", "b2,hr", "y");
            dcz_doc *d = NULL;
            graph_check(&b, x, 2, want, 50, 1e-5f, "batch norm in a branch", &d);
            if (d) CHECK(d->nlayers == 4 && d->layers[2].op == DCZ_OP_CONV2D && d->layers[3].op == DCZ_OP_ADD,
                         "conv1, relu1, conv2 (with the batch norm), add1");
            dcz_doc_free(d);
        } else if (form == 1) {   /* the Conv's output also goes to the Add */
            ob_node(&b, "BatchNormalization", "bn", "h,g,be,mu,var", "hb");
            ob_node(&b, "Add", "a", "hb,hr", "y");
            dcz_doc *d = NULL;
            graph_check(&b, x, 2, want1, 50, 1e-5f, "batch norm of an output read twice", &d);
            CHECK(d && d->nlayers == 4 && d->layers[2].op == DCZ_OP_CONV2D && d->layers[2].in[0] == 1 &&
                  d->layers[2].attr[8] == 2 && d->layers[2].attr[2] == 1, "conv1, relu1, bn1 (an affine), add1");
            dcz_doc_free(d);
        } else {
            ob_node(&b, "Add", "ab", "h,B4", "hb");
            ob_node(&b, "Add", "a", "hb,hr", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Add 'ab'", "read by other nodes");
        }
        ob_free(&b);
    }
}

/* ---- opsets 18 to 22 ---------------------------------------------------------- */

/* ReduceMean over the spatial axes is global average pooling: the axes as
 * an attribute before opset 18, as an input (initializer or Constant) from
 * 18 on, keepdims 1 (GLOBAL_AVGPOOL) or 0 (then FLATTEN), followed by a
 * Reshape to (N, C) and a Gemm as PyTorch writes it; noop_with_empty_axes
 * without axes changes nothing; every other form is refused. */
static void test_reduce_mean(void)
{
    const int64_t in[4] = { -1, 3, 4, 4 }, wd[2] = { 2, 3 }, flat[2] = { -1, 3 }, sp[2] = { 2, 3 }, neg[2] = { -1, -2 };
    float x[2 * 48], W[6], mean[2 * 3], fc[2 * 2], relu[2 * 48];
    fill(x, 96, 201);
    fill(W, 6, 202);
    for (int i = 0; i < 2 * 3; i++) {
        double m = 0;
        for (int k = 0; k < 16; k++) m += x[16 * i + k];
        mean[i] = (float)(m / 16);
    }
    for (int i = 0; i < 2; i++)
        for (int o = 0; o < 2; o++)
            fc[2 * i + o] = W[3 * o] * mean[3 * i] + W[3 * o + 1] * mean[3 * i + 1] + W[3 * o + 2] * mean[3 * i + 2];
    for (int i = 0; i < 96; i++) relu[i] = fmaxf(x[i], 0.0f);
    for (int form = 0; form < 14; form++) {
        ob b;
        ob_init(&b, form == 0 ? 13 : form == 1 ? 17 : form == 3 ? 20 : form == 4 ? 22 : 18);
        ob_input(&b, "x", form == 13 ? 2 : 4, form == 13 ? (const int64_t[]){ -1, 48 } : in);
        ob_output(&b, "y");
        ob_init_f(&b, "W", 2, wd, W);
        ob_init_i64(&b, "sp", 2, sp);
        ob_init_i64(&b, "neg", 2, neg);
        ob_init_i64(&b, "flat", 2, flat);
        Onnx__NodeProto *n;
        switch (form) {
        case 0:   /* opset 13: axes attribute, keepdims 1 */
            n = ob_node(&b, "ReduceMean", "m", "x", "y");
            ob_attr_ints(&b, n, "axes", 2, 2, 3);
            break;
        case 1:   /* opset 17: keepdims 0, negative axes, then Gemm */
            n = ob_node(&b, "ReduceMean", "m", "x", "m0");
            ob_attr_ints(&b, n, "axes", 2, -1, -2);
            ob_attr_i(&b, n, "keepdims", 0);
            ob_attr_i(&b, ob_node(&b, "Gemm", "g", "m0,W", "y"), "transB", 1);
            break;
        case 2:   /* opset 18: axes input, keepdims 0 */
            n = ob_node(&b, "ReduceMean", "m", "x,neg", "y");
            ob_attr_i(&b, n, "keepdims", 0);
            break;
        case 3:   /* opset 20, as PyTorch 2.9+ writes it: keepdims 1, Reshape (N, C), Gemm */
            n = ob_node(&b, "ReduceMean", "m", "x,neg", "m1");
            ob_attr_i(&b, n, "keepdims", 1);
            ob_attr_i(&b, n, "noop_with_empty_axes", 0);
            ob_attr_i(&b, ob_node(&b, "Reshape", "v", "m1,flat", "m2"), "allowzero", 1);
            ob_attr_i(&b, ob_node(&b, "Gemm", "g", "m2,W", "y"), "transB", 1);
            break;
        case 4: {   /* opset 22: axes from a Constant node */
            Onnx__NodeProto *c = ob_node(&b, "Constant", "c", "", "ax");
            ob_attr_ints(&b, c, "value_ints", 2, 3, 2);
            ob_attr_i(&b, ob_node(&b, "ReduceMean", "m", "x,ax", "y"), "keepdims", 0);
            break;
        }
        case 5:   /* no axes, noop_with_empty_axes: nothing happens */
            ob_attr_i(&b, ob_node(&b, "ReduceMean", "m", "x", "m1"), "noop_with_empty_axes", 1);
            ob_node(&b, "Relu", "r", "m1", "y");
            break;
        case 6: n = ob_node(&b, "ReduceMean", "m", "x", "y"); ob_attr_ints(&b, n, "axes", 2, 2, 3); break;
        case 7: ob_node(&b, "ReduceMean", "m", "x,neg", "y"); b.os.version = 17; break;
        case 8: n = ob_node(&b, "ReduceMean", "m", "x,ax", "y");
                ob_init_i64(&b, "ax", 1, (const int64_t[]){ 1 }); break;
        case 9: ob_node(&b, "ReduceMean", "m", "x", "y"); break;
        case 10: case 11:
            ob_init_i64(&b, "ax", 2, (const int64_t[]){ 2, form == 10 ? -2 : 4 });
            ob_node(&b, "ReduceMean", "m", "x,ax", "y");
            break;
        case 12: ob_attr_i(&b, ob_node(&b, "ReduceMean", "m", "x,sp", "y"), "keepdims", 2); break;
        case 13: ob_init_i64(&b, "ax", 1, (const int64_t[]){ -1 }); ob_node(&b, "ReduceMean", "m", "x,ax", "y"); break;
        }
        char what[32];
        snprintf(what, sizeof what, "ReduceMean form %d", form);
        dcz_doc *d = NULL;
        switch (form) {
        case 0: case 2: case 4: graph_check(&b, x, 2, mean, 3, 1e-6f, what, &d); break;
        case 1: case 3: graph_check(&b, x, 2, fc, 2, 1e-6f, what, &d); break;
        case 5: graph_check(&b, x, 2, relu, 48, 0, what, &d); break;
        case 6: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "ReduceMean 'm'", "attribute 'axes'"); break;
        case 7: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "ReduceMean 'm'", "2 inputs"); break;
        case 8: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "ReduceMean 'm'", "axes (1)", "spatial"); break;
        case 9: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "ReduceMean 'm'", "every axis"); break;
        case 10: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "ReduceMean 'm'", "axis 2 given twice"); break;
        case 11: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "ReduceMean 'm'", "axis 4"); break;
        case 12: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "ReduceMean 'm'", "keepdims 2"); break;
        case 13: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "ReduceMean 'm'", "axes (1) of a rank-2"); break;
        }
        if (d) {   /* the layers each form makes */
            static const uint16_t layers[6][3] = {
                { DCZ_OP_GLOBAL_AVGPOOL }, { DCZ_OP_GLOBAL_AVGPOOL, DCZ_OP_FLATTEN, DCZ_OP_DENSE },
                { DCZ_OP_GLOBAL_AVGPOOL, DCZ_OP_FLATTEN }, { DCZ_OP_GLOBAL_AVGPOOL, DCZ_OP_FLATTEN, DCZ_OP_DENSE },
                { DCZ_OP_GLOBAL_AVGPOOL, DCZ_OP_FLATTEN }, { DCZ_OP_RELU } };
            static const uint32_t count[6] = { 1, 3, 2, 3, 2, 1 };
            int same = d->nlayers == count[form];
            for (uint32_t k = 0; same && k < count[form]; k++) same = d->layers[k].op == layers[form][k];
            CHECK(same, "%s: %u layers, the first %s", what, d->nlayers, d->nlayers ? d->layers[0].name : "-");
        }
        dcz_doc_free(d);
        ob_free(&b);
    }
}

/* Pad from opset 18 may name the axes its pads are for: the same as the
 * pads of every axis; before 18 a fourth input is refused, and so are axes
 * that repeat or do not match the pads. AveragePool takes dilations (1)
 * from opset 19 on. */
static void test_pad_axes_and_pool_dilations(void)
{
    const int64_t in[4] = { -1, 2, 6, 6 };
    float x[2 * 72], ref[2 * 18], y[2 * 18];
    fill(x, 144, 211);
    for (int form = 0; form < 10; form++) {
        ob b;
        ob_init(&b, form == 0 ? 13 : form == 4 ? 17 : form == 7 || form == 8 ? 19 : 18);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        const char *pad_in = "x,pads";
        switch (form) {
        case 0: case 7: case 8: case 9:
            ob_init_i64(&b, "pads", 8, (const int64_t[]){ 0, 0, 1, 1, 0, 0, 1, 1 });
            break;
        case 1: case 4:
            ob_init_i64(&b, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
            ob_init_i64(&b, "axes", 2, (const int64_t[]){ 2, 3 });
            pad_in = "x,pads,,axes";
            break;
        case 2:
            ob_init_i64(&b, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
            ob_init_i64(&b, "axes", 2, (const int64_t[]){ -1, -2 });
            ob_init_f(&b, "zero", 0, NULL, (const float[]){ 0.0f });
            pad_in = "x,pads,zero,axes";
            break;
        case 3:
            ob_init_i64(&b, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
            ob_init_i64(&b, "axes", 2, (const int64_t[]){ 2, -2 });
            pad_in = "x,pads,,axes";
            break;
        case 5:
            ob_init_i64(&b, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
            ob_init_i64(&b, "axes", 1, (const int64_t[]){ 2 });
            pad_in = "x,pads,,axes";
            break;
        case 6:
            ob_init_i64(&b, "pads", 2, (const int64_t[]){ 1, 1 });
            ob_init_i64(&b, "axes", 1, (const int64_t[]){ 1 });
            pad_in = "x,pads,,axes";
            break;
        }
        ob_node(&b, "Pad", "p", pad_in, "xp");
        Onnx__NodeProto *n = ob_node(&b, "AveragePool", "ap", "xp", "y");
        ob_attr_ints(&b, n, "kernel_shape", 2, 3, 3);
        ob_attr_ints(&b, n, "strides", 2, 2, 2);
        if (form >= 7) ob_attr_ints(&b, n, "dilations", 2, form == 8 ? 2 : 1, form == 8 ? 2 : 1);
        char err[512] = "", what[32];
        snprintf(what, sizeof what, "Pad form %d", form);
        switch (form) {
        case 0: CHECK(build_run(&b, x, 2, ref, NULL, err, sizeof err) == DCZ_OK, "%s: %s", what, err); break;
        case 1: case 2: case 7:
            CHECK(build_run(&b, x, 2, y, NULL, err, sizeof err) == DCZ_OK && maxdiff(y, ref, 36) == 0, "%s: %s",
                  what, err);
            break;
        case 3: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "Pad 'p'", "twice"); break;
        case 4: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "Pad 'p'", "4 inputs"); break;
        case 5: EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "Pad 'p'", "4 pads for 1 axes"); break;
        case 6: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Pad 'p'", "height and width"); break;
        case 8: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "AveragePool 'ap'", "dilations 2 x 2"); break;
        case 9: EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "AveragePool 'ap'", "attribute 'dilations'"); break;
        }
        ob_free(&b);
    }
}

/* What PyTorch's dynamo exporter writes around the operators dcz has: SiLU
 * as Sigmoid then Mul (one SILU layer), and a Reshape to the
 * traced batch and the features, (2, 18), after a Conv of a model whose
 * input fixes the batch at 2 (FLATTEN), at opset 20. */
static void test_torch_dynamo_forms(void)
{
    const int64_t in[4] = { 2, 2, 5, 5 }, wd[4] = { 2, 2, 3, 3 }, fd[2] = { 3, 18 };
    float x[2 * 50], W[36], B[2], F[54], silu[2 * 18], fc[2 * 3];
    fill(x, 100, 221);
    fill(W, 36, 222);
    fill(B, 2, 223);
    fill(F, 54, 224);
    for (int i = 0; i < 2; i++) {
        conv_ref(x + 50 * i, 2, 5, 5, W, B, 2, 1, 3, 0, silu + 18 * i);
        for (int o = 0; o < 3; o++) {
            double acc = 0;
            for (int k = 0; k < 18; k++) acc += (double)F[18 * o + k] * silu[18 * i + k];
            fc[3 * i + o] = (float)acc;
        }
        for (int k = 0; k < 18; k++) {
            const double v = silu[18 * i + k];
            silu[18 * i + k] = (float)(v / (1 + exp(-v)));
        }
    }
    for (int form = 0; form < 3; form++) {
        ob b;
        ob_init(&b, 20);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        ob_init_f(&b, "W", 4, wd, W);
        ob_init_f(&b, "B", 1, (const int64_t[]){ 2 }, B);
        ob_init_f(&b, "F", 2, fd, F);
        ob_init_i64(&b, "shape", 2, (const int64_t[]){ form == 2 ? -1 : 2, 18 });
        ob_node(&b, "Conv", "c", "x,W,B", "h");
        dcz_doc *d = NULL;
        if (form == 0) {
            ob_node(&b, "Sigmoid", "s", "h", "hs");
            ob_node(&b, "Mul", "m", "h,hs", "y");
            graph_check(&b, x, 2, silu, 18, 1e-6f, "SiLU as Sigmoid and Mul", &d);
            CHECK(d && d->nlayers == 2 && d->layers[1].op == DCZ_OP_SILU, "conv1, silu1");
        } else {
            ob_attr_i(&b, ob_node(&b, "Reshape", "v", "h,shape", "hv"), "allowzero", 1);
            ob_attr_i(&b, ob_node(&b, "Gemm", "g", "hv,F", "y"), "transB", 1);
            graph_check(&b, x, 2, fc, 3, 1e-5f, form == 1 ? "Reshape (2, 18)" : "Reshape (-1, 18)", &d);
            CHECK(d && d->nlayers == 3 && d->layers[1].op == DCZ_OP_FLATTEN, "conv1, flatten, fc1");
        }
        dcz_doc_free(d);
        ob_free(&b);
    }
}

/* Whether d's layers are the operators of ops, in order (up to 4, 0 past
 * the last). */
static int layers_are(const dcz_doc *d, const uint16_t ops[4])
{
    uint32_t n = 0;
    while (n < 4 && ops[n]) n++;
    int same = d && d->nlayers == n;
    for (uint32_t k = 0; same && k < n; k++) same = d->layers[k].op == ops[k];
    return same;
}

/* b imported with its report: one node folded, none dropped, and layer
 * at made from the nodes from ("Sigmoid 's' + Mul 'm'"). */
static void check_folded(ob *b, uint32_t at, const char *from, const char *what)
{
    char err[512] = "";
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    dcz_doc *d = NULL;
    dcz_onnx_info info;
    dcz_onnx_import_opts o = { 0, NULL };
    REQUIRE_OK(dcz_onnx_import(buf, len, &o, &d, &info, err, sizeof err), "%s: %s", what, err);
    CHECK(info.folded == 1 && info.dropped == 0 && strcmp(info.source[at], from) == 0, "%s: folded %u, from %s",
          what, info.folded, info.source[at]);
    dcz_onnx_info_free(&info);
    dcz_doc_free(d);
    free(buf);
}

/* The start of the SiLU and HardSwish graphs: opset 13, input x (2, 5, 5),
 * output y, and with conv a 3x3 Conv of weights W (2, 2, 3, 3) and bias
 * B, padding 1, whose output is h. */
static void gate_graph(ob *b, const float *W, const float *B, int conv)
{
    static const int64_t wd[4] = { 2, 2, 3, 3 };
    ob_init(b, 13);
    ob_input(b, "x", 4, in245);
    ob_output(b, "y");
    ob_init_f(b, "W", 4, wd, W);
    ob_init_f(b, "B", 1, (const int64_t[]){ 2 }, B);
    if (conv) ob_attr_ints(b, ob_node(b, "Conv", "c", "x,W,B", "h"), "pads", 4, 1, 1, 1, 1);
}

/* SiLU as exporters write it, Conv -> Sigmoid -> Mul of the Conv's output
 * and the Sigmoid's, in either order (forms 0 and 1), and of the model
 * input (2): one SILU layer, named silu1, from both nodes (the Sigmoid
 * counted as folded), giving x / (1 + e^-x); (3) the same with the Conv's
 * output read again by an Add. Not a SiLU, the layers as they are: (4) the
 * Sigmoid's output read by an Add too, (5) a Mul of the Sigmoid by another
 * value, (6) a Sigmoid alone. Each exported and imported back gives the
 * same layers and outputs; a SILU is written as Sigmoid and Mul. */
static void test_silu(void)
{
    float x[2 * 50], W[36], B[2], h[2 * 50], want[2 * 50];
    fill(x, 100, 241);
    fill(W, 36, 242);
    fill(B, 2, 243);
    for (int k = 0; k < 36; k++) W[k] *= 3.0f;   /* outputs over both arms of the curve */
    for (int i = 0; i < 2; i++) conv_ref(x + 50 * i, 2, 5, 5, W, B, 2, 1, 3, 1, h + 50 * i);
    static const uint16_t layers[7][4] = {
        { DCZ_OP_CONV2D, DCZ_OP_SILU }, { DCZ_OP_CONV2D, DCZ_OP_SILU }, { DCZ_OP_SILU },
        { DCZ_OP_CONV2D, DCZ_OP_SILU, DCZ_OP_ADD }, { DCZ_OP_CONV2D, DCZ_OP_SIGMOID, DCZ_OP_MUL, DCZ_OP_ADD },
        { DCZ_OP_CONV2D, DCZ_OP_SIGMOID, DCZ_OP_RELU, DCZ_OP_MUL }, { DCZ_OP_CONV2D, DCZ_OP_SIGMOID },
    };
    double lo = 0, hi = 0;
    for (int form = 0; form < 7; form++) {
        ob b;
        gate_graph(&b, W, B, form != 2);
        const char *v = form == 2 ? "x" : "h";
        ob_node(&b, "Sigmoid", "s", v, form == 6 ? "y" : "hs");
        switch (form) {
        case 0: case 2: ob_node(&b, "Mul", "m", form == 2 ? "x,hs" : "h,hs", "y"); break;
        case 1: ob_node(&b, "Mul", "m", "hs,h", "y"); break;
        case 3: ob_node(&b, "Mul", "m", "h,hs", "p"); ob_node(&b, "Add", "a", "p,h", "y"); break;
        case 4: ob_node(&b, "Mul", "m", "h,hs", "p"); ob_node(&b, "Add", "a", "p,hs", "y"); break;
        case 5: ob_node(&b, "Relu", "r", "h", "hr"); ob_node(&b, "Mul", "m", "hr,hs", "y"); break;
        default: break;
        }
        for (int i = 0; i < 100; i++) {
            const double u = form == 2 ? x[i] : h[i], sg = 1 / (1 + exp(-u)), silu = u / (1 + exp(-u));
            const double r[7] = { silu, silu, silu, silu + u, silu + sg, fmax(u, 0) * sg, sg };
            want[i] = (float)r[form];
            lo = fmin(lo, u);
            hi = fmax(hi, u);
        }
        char what[32], err[512] = "";
        snprintf(what, sizeof what, "SiLU form %d", form);
        dcz_doc *d = NULL;
        graph_check(&b, x, 2, want, 50, 1e-5f, what, &d);
        const int same = layers_are(d, layers[form]);
        CHECK(same, "%s: %u layers, the first %s", what, d ? d->nlayers : 0, d ? dcz_op_name(d->layers[0].op) : "");
        if (same && form < 4) {   /* the SILU: its name, its input, its nodes */
            const dcz_doc_layer *l = &d->layers[form == 2 ? 0 : 1];
            CHECK(strcmp(l->name, "silu1") == 0 && l->nin == 1 && l->in[0] == (form == 2 ? 0u : 1u) &&
                  l->nattr == 0, "%s: %s reads tensor %u", what, l->name, l->in[0]);
            if (form == 3)
                CHECK(d->layers[2].in[0] == 2 && d->layers[2].in[1] == 1, "%s: the Add reads silu1 and conv1", what);
            check_folded(&b, form == 2 ? 0 : 1, "Sigmoid 's' + Mul 'm'", what);
            /* written as Sigmoid and Mul of the SILU's input, read back as one SILU */
            size_t len;
            uint8_t *onnx = NULL;
            REQUIRE_OK(dcz_onnx_export(d, NULL, &onnx, &len, err, sizeof err), "%s: export: %s", what, err);
            Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, onnx);
            REQUIRE(m, "%s: the export does not parse", what);
            const Onnx__GraphProto *g = m->graph;
            const size_t at = form == 2 ? 0 : 1;
            CHECK(g->n_node == at + 2 + (form == 3) && strcmp(g->node[at]->op_type, "Sigmoid") == 0 &&
                  strcmp(g->node[at + 1]->op_type, "Mul") == 0 && g->node[at + 1]->n_input == 2 &&
                  strcmp(g->node[at + 1]->input[0], g->node[at]->input[0]) == 0 &&
                  strcmp(g->node[at + 1]->input[1], g->node[at]->output[0]) == 0,
                  "%s: the SILU is not written as Sigmoid and Mul", what);
            onnx__model_proto__free_unpacked(m, NULL);
            dcz_doc *back = NULL;
            REQUIRE_OK(import_bytes(onnx, len, 0, &back, err, sizeof err), "%s: re-import: %s", what, err);
            CHECK(back->nlayers == d->nlayers && back->layers[at].op == DCZ_OP_SILU &&
                  strcmp(back->layers[at].name, "silu1") == 0, "%s: re-imported as %u layers", what, back->nlayers);
            dcz_doc_free(back);
            free(onnx);
        }
        dcz_doc_free(d);
        ob_free(&b);
    }
    CHECK(lo < -3 && hi > 3, "the Conv's outputs span %g .. %g", lo, hi);
}

/* HardSwish as exporters write it before opset 14, Conv -> HardSigmoid
 * (alpha 1/6, beta 1/2) -> Mul of the Conv's output and the HardSigmoid's,
 * in either order (forms 0 and 1): one HARD_SWISH layer, hswish1, from
 * both nodes, x clamp(x / 6 + 1/2, 0, 1). Not a HardSwish, the layers as
 * they are: (2) a HardSigmoid of other constants (ONNX's defaults), (3)
 * its output read by an Add too, (4) alpha 1/6 with beta 1/4. Exported and imported back (below opset
 * 14 as HardSigmoid and Mul again), the same layers. */
static void test_hswish(void)
{
    float x[2 * 50], W[36], B[2], h[2 * 50], want[2 * 50];
    fill(x, 100, 251);
    fill(W, 36, 252);
    fill(B, 2, 253);
    for (int k = 0; k < 36; k++) W[k] *= 8.0f;   /* outputs past both bends, -3 and 3 */
    for (int i = 0; i < 2; i++) conv_ref(x + 50 * i, 2, 5, 5, W, B, 2, 1, 3, 1, h + 50 * i);
    static const uint16_t layers[5][4] = {
        { DCZ_OP_CONV2D, DCZ_OP_HARD_SWISH }, { DCZ_OP_CONV2D, DCZ_OP_HARD_SWISH },
        { DCZ_OP_CONV2D, DCZ_OP_HARD_SIGMOID, DCZ_OP_MUL }, { DCZ_OP_CONV2D, DCZ_OP_HARD_SIGMOID, DCZ_OP_MUL, DCZ_OP_ADD },
        { DCZ_OP_CONV2D, DCZ_OP_HARD_SIGMOID, DCZ_OP_MUL },
    };
    double lo = 0, hi = 0;
    for (int form = 0; form < 5; form++) {
        ob b;
        gate_graph(&b, W, B, 1);
        Onnx__NodeProto *n = ob_node(&b, "HardSigmoid", "s", "h", "hs");
        if (form != 2) {
            ob_attr_f(&b, n, "alpha", 1.0f / 6.0f);
            ob_attr_f(&b, n, "beta", form == 4 ? 0.25f : 0.5f);
        }
        if (form == 1) ob_node(&b, "Mul", "m", "hs,h", "y");
        else ob_node(&b, "Mul", "m", "h,hs", form == 3 ? "p" : "y");
        if (form == 3) ob_node(&b, "Add", "a", "p,hs", "y");
        for (int i = 0; i < 100; i++) {
            const double u = h[i], a = form == 2 ? 0.2 : 1.0 / 6.0, be = form == 4 ? 0.25 : 0.5;
            const double g = fmin(fmax(a * u + be, 0), 1);
            want[i] = (float)(u * g + (form == 3 ? g : 0));
            lo = fmin(lo, u);
            hi = fmax(hi, u);
        }
        char what[32], err[512] = "";
        snprintf(what, sizeof what, "HardSwish form %d", form);
        dcz_doc *d = NULL;
        graph_check(&b, x, 2, want, 50, 1e-5f, what, &d);
        const int same = layers_are(d, layers[form]);
        CHECK(same, "%s: %u layers, the second %s", what, d ? d->nlayers : 0,
              d && d->nlayers > 1 ? dcz_op_name(d->layers[1].op) : "");
        if (same && form < 2) {
            CHECK(strcmp(d->layers[1].name, "hswish1") == 0 && d->layers[1].nin == 1 && d->layers[1].in[0] == 1,
                  "%s: %s reads tensor %u", what, d->layers[1].name, d->layers[1].in[0]);
            check_folded(&b, 1, "HardSigmoid 's' + Mul 'm'", what);
            /* below opset 14 written as HardSigmoid and Mul, read back as one HARD_SWISH */
            size_t len;
            uint8_t *onnx = NULL;
            dcz_doc *back = NULL;
            const dcz_onnx_export_opts eo = { 13, NULL };
            REQUIRE_OK(dcz_onnx_export(d, &eo, &onnx, &len, err, sizeof err), "%s: export: %s", what, err);
            REQUIRE_OK(import_bytes(onnx, len, 0, &back, err, sizeof err), "%s: re-import: %s", what, err);
            CHECK(back->nlayers == 2 && back->layers[1].op == DCZ_OP_HARD_SWISH, "%s: re-imported as %u layers, %s",
                  what, back->nlayers, back->nlayers > 1 ? dcz_op_name(back->layers[1].op) : "");
            dcz_doc_free(back);
            free(onnx);
        }
        dcz_doc_free(d);
        ob_free(&b);
    }
    CHECK(lo < -3 && hi > 3, "the Conv's outputs span %g .. %g", lo, hi);
}

/* Shapes computed by the graph, as PyTorch 1.13 exports ShuffleNet at
 * opset 13 with a batch left open: Shape, Gather, Div, Cast, Unsqueeze and
 * Concat build the Reshapes' shapes around the channel shuffle (the batch
 * size moved into their first dimension), and Shape, Gather, Add, Div and
 * Mul the bounds of two Slices. They fold into constants and leave no
 * layer: RELU, CHANNEL_SHUFFLE, SLICE, SLICE, SIGMOID, CONCAT, with the
 * outputs of the definition. Refused with the node named: a Gather of an
 * activation, arithmetic on the batch size, a Cast of a shape to float. */
static void scalar_const(ob *b, const char *name, int64_t v)
{
    ob_attr_i(b, ob_node(b, "Constant", name, "", name), "value_int", v);
}

static void test_shape_folding(void)
{
    const int64_t in[4] = { -1, 8, 3, 3 };
    float x[2 * 72], sh[2 * 72], want[2 * 72];
    fill(x, 144, 261);
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++)
                for (int p = 0; p < 9; p++) {
                    const float v = x[(n * 8 + i * 4 + j) * 9 + p];
                    sh[(n * 8 + j * 2 + i) * 9 + p] = v > 0 ? v : 0.0f;
                }
    for (int i = 0; i < 144; i++) want[i] = i / 9 % 8 < 4 ? sh[i] : (float)(1 / (1 + exp(-(double)sh[i])));
    for (int form = 0; form < 4; form++) {
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        ob_init_i64(&b, "ax0", 1, (const int64_t[]){ 0 });
        ob_init_i64(&b, "g2", 1, (const int64_t[]){ 2 });
        ob_init_i64(&b, "m1", 1, (const int64_t[]){ -1 });
        ob_init_i64(&b, "one", 1, (const int64_t[]){ 1 });
        ob_init_i64(&b, "zero", 1, (const int64_t[]){ 0 });
        ob_node(&b, "Relu", "r", "x", "h");
        ob_node(&b, "Shape", "shp", "h", "shp");
        for (int k = 0; k < 4; k++) {
            char cn[8], gn[8], gi[32];
            snprintf(cn, sizeof cn, "i%d", k);
            snprintf(gn, sizeof gn, "d%d", k);
            snprintf(gi, sizeof gi, "shp,%s", cn);
            scalar_const(&b, cn, k);
            ob_attr_i(&b, ob_node(&b, "Gather", gn, gi, gn), "axis", 0);
        }
        scalar_const(&b, "two", 2);
        ob_node(&b, "Div", "div", "d1,two", "half");
        ob_attr_i(&b, ob_node(&b, "Cast", "cast", "half", "halfc"), "to", form == 3 ? 1 : 7);
        if (form == 2) ob_node(&b, "Mul", "bad", "d0,two", "bad");
        ob_node(&b, "Unsqueeze", "u0", form == 2 ? "bad,ax0" : "d0,ax0", "un");
        ob_node(&b, "Unsqueeze", "u1", "halfc,ax0", "uh");
        ob_node(&b, "Unsqueeze", "u2", "d2,ax0", "uhh");
        ob_node(&b, "Unsqueeze", "u3", "d3,ax0", "uww");
        ob_attr_i(&b, ob_node(&b, "Concat", "s5", "un,g2,uh,uhh,uww", "s5"), "axis", 0);
        ob_node(&b, "Reshape", "v1", "h,s5", "v");
        ob_attr_ints(&b, ob_node(&b, "Transpose", "t", "v", "vt"), "perm", 5, 0, 2, 1, 3, 4);
        ob_attr_i(&b, ob_node(&b, "Concat", "s4", "un,m1,uhh,uww", "s4"), "axis", 0);
        ob_node(&b, "Reshape", "v2", "vt,s4", "s");
        ob_node(&b, "Shape", "shp2", "s", "shp2");
        ob_attr_i(&b, ob_node(&b, "Gather", "c", form == 1 ? "s,one" : "shp2,one", "c"), "axis", 0);
        ob_node(&b, "Add", "add", "c,one", "c1");
        ob_node(&b, "Div", "div2", "c1,g2", "q");
        ob_node(&b, "Mul", "mul1", "q,one", "e1");
        ob_node(&b, "Mul", "mul2", "q,g2", "e2");
        ob_node(&b, "Slice", "sl0", "s,zero,e1,one", "p0");
        ob_node(&b, "Slice", "sl1", "s,e1,e2,one", "p1");
        ob_node(&b, "Sigmoid", "sg", "p1", "q1");
        ob_attr_i(&b, ob_node(&b, "Concat", "cat", "p0,q1", "y"), "axis", 1);
        if (form == 0) {
            dcz_doc *d = NULL;
            graph_check(&b, x, 2, want, 72, 1e-6f, "shapes folded", &d);
            static const uint16_t ops[6] = { DCZ_OP_RELU, DCZ_OP_CHANNEL_SHUFFLE, DCZ_OP_SLICE, DCZ_OP_SLICE,
                                             DCZ_OP_SIGMOID, DCZ_OP_CONCAT };
            int same = d && d->nlayers == 6;
            for (uint32_t k = 0; same && k < 6; k++) same = d->layers[k].op == ops[k];
            CHECK(same && d->layers[1].attr[0] == 2 && d->layers[2].attr[1] == 4 && d->layers[3].attr[0] == 4,
                  "relu1, shuffle1, slice1, slice2, sigmoid1, concat1");
            dcz_doc_free(d);
        } else if (form == 1) {
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Gather 'c' reads the computed value 's' as its data");
        } else if (form == 2) {
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Mul 'bad' computes with the batch size");
        } else {
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Cast 'cast' casts a shape to float");
        }
        ob_free(&b);
    }
}

/* A Concat of more values than a layer reads (DenseNet-121 joins 25):
 * Relu of x joined 40 times with x between, a chain of three CONCAT
 * layers (16, then the first and 15 more, then the second and the last
 * 10), with the outputs of the definition. */
static void test_concat_chain(void)
{
    enum { K = 41 };
    const int64_t in[4] = { -1, 2, 2, 2 };
    float x[2 * 8], want[2 * 8 * K];
    fill(x, 16, 251);
    char names[512] = "";
    size_t len = 0;
    for (int k = 0; k < K; k++) {
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", k ? "," : "", k % 2 ? "x" : "h");
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 8; i++) {
                const float v = x[n * 8 + i];
                want[(n * K + k) * 8 + i] = k % 2 || v > 0 ? v : 0.0f;
            }
    }
    ob b;
    ob_init(&b, 13);
    ob_input(&b, "x", 4, in);
    ob_output(&b, "y");
    ob_node(&b, "Relu", "r", "x", "h");
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", names, "y"), "axis", 1);
    dcz_doc *d = NULL;
    graph_check(&b, x, 2, want, 8 * K, 0.0f, "a Concat of 41 values", &d);
    CHECK(d && d->nlayers == 4 && d->layers[1].nin == 16 && d->layers[2].nin == 16 && d->layers[2].in[0] == 2 &&
          d->layers[3].nin == 11 && d->layers[3].in[0] == 3, "relu1 and a chain of three concats");
    dcz_doc_free(d);
    ob_free(&b);
}

/* Batch norms with nothing to fold into, as in a DenseNet (on the input,
 * after a Relu): each a per-channel affine, the depthwise 1 x 1 CONV2D of
 * weight g and bias beta - mean g, into which a constant Add after it folds
 * as into any convolution; the outputs are those of the definition. A
 * batch norm of a flat value with nothing to fold into is refused, counted
 * with a constant Add that has nothing to fold into either. */
static void test_unfoldable_affine(void)
{
    const int64_t cd[1] = { 4 }, in[4] = { -1, 4, 3, 3 };
    float x[2 * 36], g[4], be[4], mu[4], var[4], c[4], want[2 * 36];
    fill(x, 72, 231);
    fill(g, 4, 232);
    fill(be, 4, 233);
    fill(mu, 4, 234);
    fill(var, 4, 235);
    fill(c, 4, 236);
    for (int k = 0; k < 4; k++) var[k] += 1.5f;
    for (int i = 0; i < 72; i++) {
        const int ch = i / 9 % 4;
        const double a = (double)g[ch] / sqrt((double)var[ch] + 1e-5);
        double v = (x[i] - mu[ch]) * a + be[ch];
        v = v > 0 ? v : 0;
        want[i] = (float)((v - mu[ch]) * a + be[ch] + c[ch]);
    }
    ob b;
    ob_init(&b, 13);
    ob_input(&b, "x", 4, in);
    ob_output(&b, "y");
    ob_init_f(&b, "g", 1, cd, g);
    ob_init_f(&b, "be", 1, cd, be);
    ob_init_f(&b, "mu", 1, cd, mu);
    ob_init_f(&b, "var", 1, cd, var);
    ob_init_f(&b, "c", 4, (const int64_t[]){ 1, 4, 1, 1 }, c);
    ob_node(&b, "BatchNormalization", "bn1", "x,g,be,mu,var", "b1");
    ob_node(&b, "Relu", "r", "b1", "hr");
    ob_node(&b, "BatchNormalization", "bn2", "hr,g,be,mu,var", "b2");
    ob_node(&b, "Add", "a", "b2,c", "y");
    dcz_doc *d = NULL;
    graph_check(&b, x, 2, want, 36, 1e-5f, "batch norms as per-channel affines", &d);
    CHECK(d && d->nlayers == 3 && d->layers[0].op == DCZ_OP_CONV2D && d->layers[0].attr[8] == 4 &&
          d->layers[0].attr[2] == 1 && d->layers[2].op == DCZ_OP_CONV2D && strcmp(d->layers[2].name, "bn2") == 0,
          "bn1, relu1, bn2 (the Add folded in)");
    if (d) export_roundtrip(d, x, 2, 0, 0, "per-channel affines");
    dcz_doc_free(d);
    ob_free(&b);

    ob_init(&b, 13);
    ob_input(&b, "x", 2, (const int64_t[]){ -1, 4 });
    ob_output(&b, "y");
    ob_init_f(&b, "g", 1, cd, g);
    ob_init_f(&b, "be", 1, cd, be);
    ob_init_f(&b, "mu", 1, cd, mu);
    ob_init_f(&b, "var", 1, cd, var);
    ob_init_f(&b, "c", 2, (const int64_t[]){ 1, 4 }, c);
    ob_node(&b, "Relu", "r", "x", "h");
    ob_node(&b, "BatchNormalization", "bn1", "h,g,be,mu,var", "b1");
    ob_node(&b, "BatchNormalization", "bn2", "b1,g,be,mu,var", "b2");
    ob_node(&b, "Add", "a", "b2,c", "y");
    EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "2 BatchNormalization nodes cannot be folded",
                   "the first: BatchNormalization 'bn1' normalizes a flat value", "; Add 'a' follows no Conv");
    ob_free(&b);
}

/* ShuffleNet's unit as exporters write it: a Reshape of (N, 8, 3, 3) to
 * (N, 2, 4, 3, 3), Transpose (0, 2, 1, 3, 4), a Reshape back, then the
 * channels cut in two parts, the second through a Sigmoid, and joined again.
 * The cut as Split with num_outputs (opset 20, 4 and 4), with its sizes
 * as an input (opset 13, 3 and 5) or an attribute (opset 11, 3 and 5), and
 * as two Slices (opset 13, 3 and 5; ends past the end, a negative axis):
 * CHANNEL_SHUFFLE, SLICE, SLICE, SIGMOID, CONCAT, with the outputs of the
 * definition, through export and import again. A Split of another axis,
 * a Slice of rows and other permutations are refused. */
static void test_channel_shuffle_split(void)
{
    const int64_t in[4] = { 2, 8, 3, 3 };
    float x[2 * 72], sh[2 * 72], want[2 * 72];
    fill(x, 144, 241);
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 2; i++)        /* (2, 4) transposed to (4, 2), of relu(x) */
            for (int j = 0; j < 4; j++)
                for (int p = 0; p < 9; p++) {
                    const float v = x[(n * 8 + i * 4 + j) * 9 + p];
                    sh[(n * 8 + j * 2 + i) * 9 + p] = v > 0 ? v : 0.0f;
                }
    for (int form = 0; form < 4; form++) {
        const int cut = form == 0 ? 4 : 3;
        for (int i = 0; i < 144; i++)
            want[i] = i / 9 % 8 < cut ? sh[i] : (float)(1 / (1 + exp(-(double)sh[i])));
        ob b;
        ob_init(&b, form == 0 ? 20 : form == 2 ? 11 : 13);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        ob_init_i64(&b, "s5", 5, (const int64_t[]){ 2, 2, 4, 3, 3 });
        ob_init_i64(&b, "s4", 4, (const int64_t[]){ 2, 8, 3, 3 });
        ob_node(&b, "Relu", "r0", "x", "h");
        ob_node(&b, "Reshape", "v1", "h,s5", "v");
        ob_attr_ints(&b, ob_node(&b, "Transpose", "t", "v", "vt"), "perm", 5, 0, 2, 1, 3, 4);
        ob_node(&b, "Reshape", "v2", "vt,s4", "s");
        if (form == 0) {
            Onnx__NodeProto *sp = ob_node(&b, "Split", "sp", "s", "p0,p1");
            ob_attr_i(&b, sp, "axis", 1);
            ob_attr_i(&b, sp, "num_outputs", 2);
        } else if (form == 1) {
            ob_init_i64(&b, "sizes", 2, (const int64_t[]){ 3, 5 });
            ob_attr_i(&b, ob_node(&b, "Split", "sp", "s,sizes", "p0,p1"), "axis", 1);
        } else if (form == 2) {
            Onnx__NodeProto *sp = ob_node(&b, "Split", "sp", "s", "p0,p1");
            ob_attr_i(&b, sp, "axis", 1);
            ob_attr_ints(&b, sp, "split", 2, 3, 5);
        } else {
            ob_init_i64(&b, "a0", 1, (const int64_t[]){ 0 });
            ob_init_i64(&b, "a3", 1, (const int64_t[]){ 3 });
            ob_init_i64(&b, "big", 1, (const int64_t[]){ INT64_MAX });
            ob_init_i64(&b, "ax", 1, (const int64_t[]){ -3 });
            ob_init_i64(&b, "a1", 1, (const int64_t[]){ 1 });
            ob_node(&b, "Slice", "sl0", "s,a0,a3,a1", "p0");
            ob_node(&b, "Slice", "sl1", "s,a3,big,ax", "p1");
        }
        ob_node(&b, "Sigmoid", "sg", "p1", "q1");
        ob_attr_i(&b, ob_node(&b, "Concat", "cat", "p0,q1", "y"), "axis", 1);
        char what[64];
        snprintf(what, sizeof what, "channel shuffle and cut, form %d", form);
        dcz_doc *d = NULL;
        graph_check(&b, x, 2, want, 72, 1e-6f, what, &d);
        CHECK(d && d->nlayers == 6 && d->layers[1].op == DCZ_OP_CHANNEL_SHUFFLE && d->layers[1].attr[0] == 2 &&
              d->layers[2].op == DCZ_OP_SLICE && d->layers[2].attr[1] == cut && d->layers[3].op == DCZ_OP_SLICE &&
              d->layers[3].attr[0] == cut && d->layers[3].attr[1] == 8 - cut, "%s: relu1, shuffle1, slice1, slice2, "
              "sigmoid1, concat1", what);
        if (d) export_roundtrip(d, x, 2, 0, 0, what);
        dcz_doc_free(d);
        ob_free(&b);
    }
    for (int bad = 0; bad < 3; bad++) {
        ob b;
        ob_init(&b, 13);
        ob_input(&b, "x", 4, in);
        ob_output(&b, "y");
        ob_init_i64(&b, "s5", 5, (const int64_t[]){ 2, 2, 4, 3, 3 });
        ob_init_i64(&b, "a0", 1, (const int64_t[]){ 0 });
        ob_init_i64(&b, "a1", 1, (const int64_t[]){ 1 });
        ob_init_i64(&b, "ax", 1, (const int64_t[]){ 2 });
        if (bad == 0) {
            ob_attr_i(&b, ob_node(&b, "Split", "sp", "x", "p0,y"), "axis", 2);
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Split 'sp' splits axis 2");
        } else if (bad == 1) {
            ob_node(&b, "Slice", "sl", "x,a0,a1,ax", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Slice 'sl' slices axis 2 other than in whole channels");
        } else {
            ob_node(&b, "Reshape", "v1", "x,s5", "v");
            ob_attr_ints(&b, ob_node(&b, "Transpose", "t", "v", "y"), "perm", 5, 0, 1, 2, 4, 3);
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Transpose 't' permutes axes other than as a channel shuffle");
        }
        ob_free(&b);
    }
}

/* ---- external data ------------------------------------------------------------- */

static int write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    const int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Tensors kept in files beside the model: Gemm weight W (2, 3) and bias B
 * (2) read at offsets of one file, from two files in turn, or one file
 * holding W alone (no offset, no length), give the outputs of the model
 * holding them; every reference that is wrong is refused with its status
 * and a message naming the tensor: a location with a '..' component
 * or absolute, a file missing, a folder or a FIFO (refused at once, no
 * wait), an offset past the end, a length that is not the tensor's, an
 * offset + length that overflows 64 bits, counts that are not numbers, no
 * length where the file's end is not the tensor's, no folder given (as
 * from standard input), no location, an unknown or repeated key, entries
 * without data_location EXTERNAL, and data both inside and outside. */
static void test_external_data(void)
{
    char dir[] = "/tmp/dcz-onnx-XXXXXX", path[256], abs_loc[256];
    REQUIRE(mkdtemp(dir), "mkdtemp");
    const float W[6] = { 0.5f, -1.25f, 2.0f, 0.75f, -0.125f, 3.0f }, B[2] = { 0.25f, -2.0f };
    uint8_t file[48];   /* 16 bytes of something else, W at 16, B at 40 */
    for (int k = 0; k < 16; k++) file[k] = (uint8_t)(0xa0 + k);
    for (int k = 0; k < 6; k++) dcz_put32(file + 16 + 4 * k, dcz_f32_bits(W[k]));
    for (int k = 0; k < 2; k++) dcz_put32(file + 40 + 4 * k, dcz_f32_bits(B[k]));
    snprintf(path, sizeof path, "%s/w.data", dir);
    int ok = write_bytes(path, file, 48) == 0;
    snprintf(abs_loc, sizeof abs_loc, "%s", path);
    snprintf(path, sizeof path, "%s/w.only", dir);
    ok &= write_bytes(path, file + 16, 24) == 0;
    snprintf(path, sizeof path, "%s/sub", dir);
    ok &= mkdir(path, 0700) == 0;
    snprintf(path, sizeof path, "%s/sub/b.data", dir);
    ok &= write_bytes(path, file + 40, 8) == 0;
    snprintf(path, sizeof path, "%s/fifo", dir);
    ok &= mkfifo(path, 0600) == 0;
    CHECK(ok, "the data files in %s", dir);
    const float x[3] = { 1.0f, 2.0f, -1.0f };
    float want[2], y[2];
    for (int o = 0; o < 2; o++) want[o] = W[o * 3] * x[0] + W[o * 3 + 1] * x[1] + W[o * 3 + 2] * x[2] + B[o];
    for (int form = 0; ok && form < 22; form++) {
        ob b;
        ob_init(&b, 20);
        ob_input(&b, "x", 2, (const int64_t[]){ -1, 3 });
        ob_output(&b, "y");
        Onnx__TensorProto *w = ob_init_f(&b, "W", 2, (const int64_t[]){ 2, 3 }, W);
        Onnx__TensorProto *bias = ob_init_f(&b, "B", 1, (const int64_t[]){ 2 }, B);
        ob_attr_i(&b, ob_node(&b, "Gemm", "g", "x,W,B", "y"), "transB", 1);
        const char *where = dir, *expect[3] = { NULL, NULL, NULL };
        dcz_status want_st = DCZ_OK;
        if (form != 1) ob_external(&b, bias, 3, "location", "w.data", "offset", "40", "length", "8");
        switch (form) {
        case 0: ob_external(&b, w, 3, "location", "w.data", "offset", "16", "length", "24"); break;
        case 1: ob_external(&b, w, 4, "location", "w.data", "offset", "16", "length", "24", "checksum", "0"); break;
        case 2:   /* two files in turn, in a folder below */
            ob_external(&b, w, 1, "location", "./w.only");
            ob_external(&b, bias, 2, "location", "sub/b.data", "length", "8");
            break;
        case 3: ob_external(&b, w, 1, "location", "../w.data");
                want_st = DCZ_ERR_UNSUPPORTED; expect[0] = "'..'"; break;
        case 4: ob_external(&b, w, 1, "location", "sub/../../w.data");
                want_st = DCZ_ERR_UNSUPPORTED; expect[0] = "'..'"; break;
        case 5: ob_external(&b, w, 2, "location", abs_loc, "offset", "16");
                want_st = DCZ_ERR_FORMAT; expect[0] = "absolute"; break;
        case 6: ob_external(&b, w, 1, "location", "missing.data");
                want_st = DCZ_ERR_IO; expect[0] = "cannot open"; expect[1] = "'missing.data'"; break;
        case 7: ob_external(&b, w, 1, "location", "sub");
                want_st = DCZ_ERR_IO; expect[0] = "not a regular file"; break;
        case 8: ob_external(&b, w, 1, "location", "fifo");
                want_st = DCZ_ERR_IO; expect[0] = "not a regular file"; break;
        case 9: ob_external(&b, w, 3, "location", "w.data", "offset", "32", "length", "24");
                want_st = DCZ_ERR_FORMAT; expect[0] = "beyond the end"; expect[1] = "48 bytes"; break;
        case 10: ob_external(&b, w, 3, "location", "w.data", "offset", "4096", "length", "24");
                 want_st = DCZ_ERR_FORMAT; expect[0] = "beyond the end"; break;
        case 11: ob_external(&b, w, 3, "location", "w.data", "offset", "16", "length", "20");
                 want_st = DCZ_ERR_FORMAT; expect[0] = "20 bytes long"; expect[1] = "need 24"; break;
        case 12:   /* 2^64 - 8 + 24 wraps to 16, inside the file */
            ob_external(&b, w, 3, "location", "w.data", "offset", "18446744073709551608", "length", "24");
            want_st = DCZ_ERR_FORMAT; expect[0] = "beyond the end"; break;
        case 13: ob_external(&b, w, 2, "location", "w.data", "offset", "18446744073709551616");
                 want_st = DCZ_ERR_FORMAT; expect[0] = "not a byte count"; break;
        case 14: ob_external(&b, w, 3, "location", "w.data", "offset", "16", "length", "-24");
                 want_st = DCZ_ERR_FORMAT; expect[0] = "not a byte count"; break;
        case 15: ob_external(&b, w, 2, "location", "w.data", "offset", "16");   /* 32 bytes to the end */
                 want_st = DCZ_ERR_FORMAT; expect[0] = "to the end"; expect[1] = "32 bytes"; break;
        case 16: ob_external(&b, w, 3, "location", "w.data", "offset", "16", "length", "24");
                 where = NULL; want_st = DCZ_ERR_UNSUPPORTED; expect[0] = "standard input"; break;
        case 17: ob_external(&b, w, 1, "offset", "16");
                 want_st = DCZ_ERR_FORMAT; expect[0] = "no 'location'"; break;
        case 18: ob_external(&b, w, 2, "location", "w.data", "basepath", "/");
                 want_st = DCZ_ERR_UNSUPPORTED; expect[0] = "'basepath'"; break;
        case 19: ob_external(&b, w, 2, "location", "w.data", "location", "w.only");
                 want_st = DCZ_ERR_FORMAT; expect[0] = "twice"; break;
        case 20: ob_external(&b, w, 1, "location", "w.only");
                 w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
                 want_st = DCZ_ERR_FORMAT; expect[0] = "not EXTERNAL"; break;
        case 21: ob_external(&b, w, 1, "location", "w.only");
                 w->float_data = (float *)W;
                 w->n_float_data = 6;
                 want_st = DCZ_ERR_FORMAT; expect[0] = "both"; break;
        }
        size_t len;
        uint8_t *buf = ob_pack(&b, &len);
        dcz_doc *d = NULL;
        char err[1024] = "";
        dcz_onnx_import_opts o = { 0, where };
        dcz_status s = dcz_onnx_import(buf, len, &o, &d, NULL, err, sizeof err);
        if (want_st == DCZ_OK) {
            CHECK(s == DCZ_OK, "external form %d: %s", form, err);
            if (s == DCZ_OK) s = run_doc(d, x, 1, y, NULL);
            CHECK(s == DCZ_OK && maxdiff(y, want, 2) == 0, "external form %d: outputs", form);
        } else {
            int has = s == want_st && strstr(err, "tensor 'W'") != NULL;
            for (int k = 0; has && expect[k]; k++) has = strstr(err, expect[k]) != NULL;
            CHECK(has && !d, "external form %d: status %d (want %d): %s", form, (int)s, (int)want_st, err);
        }
        dcz_doc_free(d);
        free(buf);
        ob_free(&b);
    }
    static const char *const made[] = { "w.data", "w.only", "sub/b.data", "fifo", "sub" };
    for (size_t k = 0; k < sizeof made / sizeof *made; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, made[k]);
        remove(path);
    }
    CHECK(rmdir(dir) == 0, "remove %s", dir);
}

/* Nodes whose outputs nothing reads are dropped, with the layers they made. */
static void test_dead_nodes(void)
{
    ob b;
    ob_init(&b, 13);
    ob_input(&b, "x", 4, in245);
    ob_output(&b, "y");
    float W[36], x[50], y[50];
    fill(W, 36, 99);
    fill(x, 50, 100);
    ob_init_f(&b, "W", 4, (const int64_t[]){ 2, 2, 3, 3 }, W);
    ob_node(&b, "Sigmoid", "s", "x", "sx");
    ob_node(&b, "Conv", "c", "sx,W", "unused");
    ob_node(&b, "Relu", "r", "x", "y");
    ob_node(&b, "Tanh", "t", "y", "unused2");
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);
    dcz_doc *d = NULL;
    dcz_onnx_info info;
    char err[512];
    dcz_status s = dcz_onnx_import(buf, len, NULL, &d, &info, err, sizeof err);
    free(buf);
    CHECK(s == DCZ_OK, "%s", err);
    if (s == DCZ_OK) {
        CHECK(d->nlayers == 1 && d->layers[0].op == DCZ_OP_RELU && info.dropped == 3 && info.nlayers == 1 &&
              strstr(info.source[0], "Relu 'r'"), "%u layers, %u dropped", d->nlayers, info.dropped);
        CHECK(run_doc(d, x, 1, y, NULL) == DCZ_OK && y[7] == fmaxf(x[7], 0.0f), "run");
        dcz_onnx_info_free(&info);
    }
    dcz_doc_free(d);
    ob_free(&b);
}

/* Bad graphs: refused with their status and a message naming the node. */
static void test_graph_bad_inputs(void)
{
    float W[36];
    fill(W, 36, 101);
    const float six = 6.0f, zero = 0.0f;
    for (int form = 0; form < 13; form++) {
        ob b;
        ob_init(&b, 13);
        if (form == 12) ob_input(&b, "x", 2, (const int64_t[]){ -1, 32 });
        else ob_input(&b, "x", 4, (const int64_t[]){ -1, 2, 4, 4 });
        ob_output(&b, "y");
        ob_init_f(&b, "W3", 4, (const int64_t[]){ 3, 2, 1, 1 }, W);
        ob_init_f(&b, "W2", 4, (const int64_t[]){ 2, 2, 1, 1 }, W);
        ob_init_f(&b, "lo", 0, NULL, &six);
        ob_init_f(&b, "hi", 0, NULL, &zero);
        Onnx__NodeProto *n;
        switch (form) {
        case 0:
            ob_node(&b, "Relu", "r", "x", "h");
            ob_node(&b, "Add", "a", "h,nowhere", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "Add 'a'", "'nowhere'");
            break;
        case 1:   /* planes of 4 x 4 and 2 x 2 */
            n = ob_node(&b, "MaxPool", "mp", "x", "p");
            ob_attr_ints(&b, n, "kernel_shape", 2, 2, 2);
            ob_attr_ints(&b, n, "strides", 2, 2, 2);
            n = ob_node(&b, "Concat", "cat", "x,p", "y");
            ob_attr_i(&b, n, "axis", 1);
            EXPECT_REFUSED(&b, DCZ_ERR_SHAPE, "Concat 'cat'", "(2, 4, 4) and (2, 2, 2)");
            break;
        case 2:
            ob_node(&b, "Conv", "c", "x,W3", "h");
            ob_node(&b, "Add", "a", "x,h", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_SHAPE, "Add 'a'", "(2, 4, 4) and (3, 4, 4)");
            break;
        case 3:   /* (2, 4, 4) times (2, 2, 2) */
            ob_node(&b, "Conv", "c", "x,W2", "h");
            n = ob_node(&b, "MaxPool", "mp", "h", "p");
            ob_attr_ints(&b, n, "kernel_shape", 2, 2, 2);
            ob_attr_ints(&b, n, "strides", 2, 2, 2);
            ob_node(&b, "Mul", "m", "x,p", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_SHAPE, "Mul 'm'", "(2, 4, 4) and (2, 2, 2)");
            break;
        case 4:   /* (N, 2, 4, 4) times (N, 2): ONNX aligns the last axes, not the channels */
            ob_node(&b, "GlobalAveragePool", "gap", "x", "g");
            ob_node(&b, "Flatten", "f", "g", "gf");
            ob_node(&b, "Mul", "m", "x,gf", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_SHAPE, "Mul 'm'");
            break;
        case 5:
            ob_node(&b, "Mul", "m", "x,W2", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Mul 'm'", "constant");
            break;
        case 6:
            n = ob_node(&b, "Concat", "cat", "x,x", "y");
            ob_attr_i(&b, n, "axis", 2);
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Concat 'cat'", "axis 2");
            break;
        case 7: {   /* more values than a chain of CONCAT layers takes */
            static char many[2 * 1025];
            for (int k = 0; k < 1025; k++) {
                many[2 * k] = 'x';
                many[2 * k + 1] = ',';
            }
            many[2 * 1025 - 1] = '\0';
            n = ob_node(&b, "Concat", "cat", many, "y");
            ob_attr_i(&b, n, "axis", 1);
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Concat 'cat'", "1025 values");
            break;
        }
        case 8:
            ob_node(&b, "Clip", "cl", "x,lo,hi", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Clip 'cl'", "above");
            break;
        case 9:
            ob_node(&b, "Relu", "r", "x", "h");
            ob_node(&b, "Clip", "cl", "x,h", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Clip 'cl'", "computed");
            break;
        case 10:   /* a value read before the node making it */
            ob_node(&b, "Add", "a", "x,later", "y");
            ob_node(&b, "Relu", "r", "x", "later");
            EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "Add 'a'", "'later'", "earlier node");
            break;
        case 11:
            ob_node(&b, "Concat", "cat", "x,x", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_FORMAT, "Concat 'cat'", "no axis");
            break;
        case 12:   /* a Reshape of the input that another node reads too: no new input shape */
            ob_init_i64(&b, "s", 4, (const int64_t[]){ -1, 2, 4, 4 });
            ob_node(&b, "Relu", "r", "x", "xr");
            ob_node(&b, "Reshape", "rs", "x,s", "x4");
            ob_node(&b, "Conv", "c", "x4,W2", "y");
            EXPECT_REFUSED(&b, DCZ_ERR_UNSUPPORTED, "Reshape 'rs'", "Conv 'c' follows it");
            break;
        }
        ob_free(&b);
    }
}

/* ---- damaged bytes ---------------------------------------------------------------- */

/* Imports buf; when it imports, the document must also write, load and
 * run. Never crashes; a failure leaves a message. */
static int import_any(const uint8_t *buf, size_t len)
{
    dcz_doc *d = NULL;
    char err[2048] = "";
    dcz_status s = import_bytes(buf, len, 0, &d, err, sizeof err);
    if (s != DCZ_OK) return err[0] ? 0 : -1;
    float *x = calloc(dcz_shape_count(&(dcz_shape){ d->input_rank, { d->input_dims[0], d->input_dims[1],
                                                                      d->input_dims[2], d->input_dims[3] } }) + 1,
                      sizeof *x);
    float y[4096];
    size_t out_n = 0;
    uint8_t *wb;
    size_t wl;
    int r = 1;
    if (dcz_doc_write(d, &wb, &wl) == DCZ_OK) {
        dcz_model *m;
        if (dcz_open_memory(wb, wl, NULL, &m) == DCZ_OK) {
            out_n = dcz_output_size(m);
            if (out_n <= 4096 && dcz_run(m, x, 1, y) != DCZ_OK) r = -2;
            dcz_close(m);
        } else r = -3;
        free(wb);
    } else r = -4;
    free(x);
    dcz_doc_free(d);
    return r;
}

static void test_truncations_and_flips(void)
{
    const char *seeds[] = { CORPUS "mlp_opset11.onnx", CORPUS "cnn_bn_opset17.onnx",
                            CORPUS "conv_bn_branch_opset13.onnx", CORPUS "add_branches_opset13.onnx",
                            CORPUS "concat_axis1_opset13.onnx", CORPUS "mul_channel_opset13.onnx" };
    for (size_t f = 0; f < sizeof seeds / sizeof *seeds; f++) {
        size_t len;
        uint8_t *b = read_path(seeds[f], &len);
        REQUIRE(b && len > 100, "%s", seeds[f]);
        CHECK(import_any(b, len) == 1, "%s imports", seeds[f]);
        size_t bad = 0, ok = 0;
        for (size_t n = 0; n < len; n++) {
            uint8_t *t = malloc(n ? n : 1);
            memcpy(t, b, n);
            int r = import_any(t, n);
            if (r < 0) bad++;
            ok += r == 1;
            free(t);
        }
        CHECK(bad == 0, "%s: %zu truncations failed without a message or imported but did not run", seeds[f], bad);
        CHECK(ok == 0, "%s: %zu truncations imported (the opset list comes last: none should)", seeds[f], ok);
        for (size_t i = 0; i < len; i++) {
            uint8_t *t = malloc(len);
            memcpy(t, b, len);
            t[i] ^= (uint8_t)(1u << (i % 8));
            if (import_any(t, len) < 0) bad++;
            t[i] = 0xff;
            if (import_any(t, len) < 0) bad++;
            free(t);
        }
        CHECK(bad == 0, "%s: %zu byte changes failed without a message or did not run", seeds[f], bad);
        printf("  %s: %zu truncations and %zu byte changes handled\n", seeds[f], len, 2 * len);
        free(b);
    }
    uint32_t s = 12345;
    for (int k = 0; k < 200; k++) {
        uint8_t junk[512];
        for (size_t i = 0; i < sizeof junk; i++) { s = s * 1664525u + 1013904223u; junk[i] = (uint8_t)(s >> 24); }
        CHECK(import_any(junk, (size_t)k * 2 + 1) >= 0, "random bytes %d", k);
    }
    char err[256];
    dcz_doc *d = NULL;
    CHECK(dcz_onnx_import("", 0, NULL, &d, NULL, err, sizeof err) == DCZ_ERR_FORMAT && strstr(err, "empty"), "empty");
}

/* Prepends a length-delimited field header (tag, then the length of what
 * follows at buf + *pos) before *pos. */
static void prepend_field(uint8_t *buf, size_t *pos, size_t end, uint8_t tag)
{
    uint8_t v[10];
    size_t n = 0;
    for (size_t len = end - *pos; ; len >>= 7) {
        v[n++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
        if (len <= 0x7f) break;
    }
    *pos -= n;
    memcpy(buf + *pos, v, n);
    buf[--*pos] = tag;
}

/* A graph attribute nested 100,000 deep must be refused, not recursed into. */
static void test_deep_nesting(void)
{
    const size_t depth = 100000, cap = depth * 8 + 64;
    uint8_t *buf = malloc(cap);
    REQUIRE(buf, "alloc");
    size_t pos = cap;
    /* innermost first, so that from the outside it reads GraphProto.node (1)
     * { NodeProto.attribute (5) { AttributeProto.g (6) { GraphProto.node ... } } } */
    static const uint8_t tags[3] = { 0x0a, 0x2a, 0x32 };   /* by level from the outside, mod 3 */
    for (size_t k = 0; k < depth; k++) prepend_field(buf, &pos, cap, tags[(depth - 1 - k) % 3]);
    prepend_field(buf, &pos, cap, 0x3a);   /* ModelProto.graph (7) */
    char err[256];
    dcz_doc *d = NULL;
    CHECK(dcz_onnx_import(buf + pos, cap - pos, NULL, &d, NULL, err, sizeof err) == DCZ_ERR_FORMAT &&
          strstr(err, "nest"), "deep nesting: %s", err);
    free(buf);
}

int main(void)
{
    RUN(test_fixtures_match_pytorch);
    RUN(test_older_fixtures);
    RUN(test_unsupported_ops);
    RUN(test_unsupported_many);
    RUN(test_export_roundtrip_dense);
    RUN(test_export_roundtrip_codebook);
    RUN(test_export_refusals);
    RUN(test_gemm_forms);
    RUN(test_matmul_add);
    RUN(test_conv_equivalent_forms);
    RUN(test_batchnorm_folding);
    RUN(test_pools);
    RUN(test_passthrough_and_shapes);
    RUN(test_softmax);
    RUN(test_softmax_export);
    RUN(test_attribute_refusals);
    RUN(test_tensor_data);
    RUN(test_graph_refusals);
    RUN(test_pruned_detection);
    RUN(test_residual_add);
    RUN(test_mul);
    RUN(test_mul_rank1_export);
    RUN(test_concat);
    RUN(test_grouped_conv);
    RUN(test_activations);
    RUN(test_batchnorm_in_branch);
    RUN(test_reduce_mean);
    RUN(test_pad_axes_and_pool_dilations);
    RUN(test_torch_dynamo_forms);
    RUN(test_silu);
    RUN(test_hswish);
    RUN(test_unfoldable_affine);
    RUN(test_channel_shuffle_split);
    RUN(test_concat_chain);
    RUN(test_shape_folding);
    RUN(test_external_data);
    RUN(test_dead_nodes);
    RUN(test_graph_bad_inputs);
    RUN(test_truncations_and_flips);
    RUN(test_deep_nesting);
    return check_summary();
}
