/* test_format.c: the .dcz container and its encodings.
 *
 * Round trips every encoding through dcz_doc_write / dcz_doc_read and the
 * runtime loader, checks gap coding with fillers (gaps at and around the
 * limit, every gap width, raw and Huffman), byte-identical rewrites, and
 * that every single-byte corruption and every truncation of a small dense
 * file and of a small conv file is refused by both readers; where a file's
 * bytes go (the parts of dcz_doc_parts) and a file without its records.
 *
 * Convolutional networks: two documents (conv, relu, max and average pools
 * with and without count_include_pad, global average pool, flatten, DENSE on
 * a (C, H, W) input; conv weights as codebook + sparse, sparse f32, dense
 * f32 and f16, raw and Huffman streams, strides 1 and 2, both sparse conv
 * kernels of the runtime) written, loaded and run at batch 1 and 5 must give
 * the outputs of a forward pass by the reference kernels over the
 * document's values; the operator rules (attribute limits, output shapes)
 * and the shape errors the writer and both readers refuse. Squeeze and
 * excitation's 1x1 convolutions of one input cell run on the fully
 * connected kernels with the references' bits.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "model/doc.h"
#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/dense.h"
#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/model.h"
#include "tests/check.h"
#define TEST_RNG_SEED 0x9E3779B97F4A7C15ull
#include "tests/unit/test_util.h"
#include "tests/unit/doc_build.h"


/* A dense layer whose weight uses encoding enc; density applies to sparse ones. */
static void make_dense_layer(dcz_doc_layer *l, const char *name, uint32_t in, uint32_t out,
                             uint32_t enc, double density, unsigned index_bits,
                             unsigned gap_bits, uint8_t coding)
{
    doc_dense_layer(l, name, in, out, enc, gap_bits, index_bits, coding);
    dcz_doc_tensor *w = &l->t[0];
    for (uint32_t i = 0; i < w->k; i++) w->codebook[i] = frand();
    for (size_t i = 0; i < w->n; i++) {
        int keep = !w->mask || (rnd() % 1000000) < density * 1000000;
        if (w->mask) w->mask[i] = (uint8_t)keep;
        if (!keep) continue;
        if (w->assign) {
            w->assign[i] = (uint8_t)(rnd() % w->k);
            w->values[i] = w->codebook[w->assign[i]];
        } else {
            w->values[i] = frand();
            if (enc == DCZ_ENC_F16) w->values[i] = dcz_f16_to_f32(dcz_f32_to_f16(w->values[i]));
        }
    }
    for (uint32_t i = 0; i < out; i++) l->t[1].values[i] = frand();
}

static void make_op(dcz_doc_layer *l, uint16_t op, const char *name)
{
    l->op = op;
    snprintf(l->name, sizeof l->name, "%s", name);
}

/* 12 -> 9 (codebook, Huffman) -> relu -> 7 (sparse f32) -> relu -> 5 (f32) -> softmax */
static dcz_doc *small_doc(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(6, &d) != DCZ_OK) return NULL;
    d->input_rank = 1;
    d->input_dims[0] = 12;
    make_dense_layer(&d->layers[0], "fc1", 12, 9, DCZ_ENC_CODEBOOK, 0.4, 3, 2, DCZ_CODING_HUFFMAN);
    make_op(&d->layers[1], DCZ_OP_RELU, "relu1");
    make_dense_layer(&d->layers[2], "fc2", 9, 7, DCZ_ENC_SPARSE_F32, 0.5, 0, 3, DCZ_CODING_RAW);
    make_op(&d->layers[3], DCZ_OP_RELU, "relu2");
    make_dense_layer(&d->layers[4], "fc3", 7, 5, DCZ_ENC_F16, 1, 0, 0, 0);
    make_op(&d->layers[5], DCZ_OP_SOFTMAX, "prob");
    dcz_doc_add_stage(d, "stage = test\nnote = small\n");
    dcz_doc_add_stage(d, "stage = second\ncommand = dcz x --y 'stage = z'\n");
    return d;
}

static void same_tensor(const dcz_doc_tensor *a, const dcz_doc_tensor *b, const char *what)
{
    CHECK(a->n == b->n && a->rank == b->rank && a->enc == b->enc, "%s: header", what);
    if (a->n != b->n) return;
    size_t bad = 0;
    for (size_t i = 0; i < a->n; i++) {
        int ma = !a->mask || a->mask[i], mb = !b->mask || b->mask[i];
        float va = ma ? a->values[i] : 0.0f, vb = mb ? b->values[i] : 0.0f;
        if (ma != mb || memcmp(&va, &vb, 4) != 0) {
            if (bad++ < 3) fprintf(stderr, "  %s[%zu]: mask %d/%d value %g/%g\n", what, i, ma, mb, va, vb);
        }
        if (a->assign && ma && b->assign && a->assign[i] != b->assign[i]) bad++;
    }
    CHECK(bad == 0, "%s: %zu elements differ", what, bad);
}

/* forward pass of a doc in double, the reference for the runtime */
static void doc_forward(const dcz_doc *d, const float *x, double *y, size_t *out_n)
{
    double a[64], b[64];
    size_t n = d->input_dims[0];
    for (size_t i = 0; i < n; i++) a[i] = x[i];
    for (uint32_t li = 0; li < d->nlayers; li++) {
        const dcz_doc_layer *l = &d->layers[li];
        if (l->op == DCZ_OP_DENSE) {
            size_t out = (size_t)l->attr[1];
            for (size_t r = 0; r < out; r++) {
                double acc = l->t[1].values[r];
                for (size_t c = 0; c < n; c++) acc += (double)l->t[0].values[r * n + c] * a[c];
                b[r] = acc;
            }
            n = out;
            memcpy(a, b, n * sizeof *a);
        } else if (l->op == DCZ_OP_RELU) {
            for (size_t i = 0; i < n; i++) a[i] = a[i] > 0 ? a[i] : 0;
        } else {
            double mx = a[0], s = 0;
            for (size_t i = 1; i < n; i++) mx = a[i] > mx ? a[i] : mx;
            for (size_t i = 0; i < n; i++) s += (a[i] = exp(a[i] - mx));
            for (size_t i = 0; i < n; i++) a[i] /= s;
        }
    }
    memcpy(y, a, n * sizeof *y);
    *out_n = n;
}

/* CRC-32 by its definition, a bit at a time (the reflected polynomial
 * 0xEDB88320, initial and final complement): what dcz_crc32's tables must
 * give for any length, alignment and split of the data. */
static uint32_t crc32_bits(uint32_t crc, const uint8_t *b, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= b[i];
        for (int k = 0; k < 8; k++) crc = crc >> 1 ^ (crc & 1 ? 0xEDB88320u : 0);
    }
    return ~crc;
}

static void test_crc32(void)
{
    CHECK(dcz_crc32(0, "123456789", 9) == 0xCBF43926u, "the check value: %08x", dcz_crc32(0, "123456789", 9));
    CHECK(dcz_crc32(0, NULL, 0) == 0, "nothing");
    rng r = { 31 };
    enum { N = 1 << 16 };
    uint8_t *buf = malloc(N + 8);
    REQUIRE(buf, "memory");
    for (size_t i = 0; i < N + 8; i++) buf[i] = (uint8_t)rng_next(&r);
    /* every length to 80 at every alignment, from every starting CRC kind */
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n <= 80; n++) {
            const uint32_t c0 = (uint32_t)(off * 0x9E3779B9u);
            CHECK(dcz_crc32(c0, buf + off, n) == crc32_bits(c0, buf + off, n), "offset %zu, %zu bytes", off, n);
        }
    /* a long run, and the same run split anywhere: the CRC goes on */
    const uint32_t whole = crc32_bits(0, buf + 3, N);
    CHECK(dcz_crc32(0, buf + 3, N) == whole, "%d bytes", N);
    for (int k = 0; k < 50; k++) {
        const size_t cut = (size_t)rng_below(&r, N + 1);
        CHECK(dcz_crc32(dcz_crc32(0, buf + 3, cut), buf + 3 + cut, N - cut) == whole, "split at %zu", cut);
    }
    free(buf);
}

static void test_doc_round_trip(void)
{
    dcz_doc *d = small_doc(), *r = NULL;
    REQUIRE(d != NULL, "alloc");
    uint8_t *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    CHECK(len % 64 == 0 || len > 0, "length %zu", len);
    CHECK(d->file_bytes == len, "file_bytes %zu vs %zu", d->file_bytes, len);
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read back");
    REQUIRE(r->nlayers == 6 && r->nstages == 2, "layers %u stages %u", r->nlayers, r->nstages);
    CHECK(strcmp(r->stages[0], d->stages[0]) == 0, "stage text '%s'", r->stages[0]);
    CHECK(strcmp(r->stages[1], d->stages[1]) == 0, "stage text '%s'", r->stages[1]);
    for (uint32_t i = 0; i < 6; i++) {
        CHECK(strcmp(r->layers[i].name, d->layers[i].name) == 0, "name %u", i);
        CHECK(r->layers[i].op == d->layers[i].op, "op %u", i);
        for (uint32_t j = 0; j < d->layers[i].ntensors; j++)
            same_tensor(&d->layers[i].t[j], &r->layers[i].t[j], d->layers[i].name);
        CHECK(r->layers[i].t[0].st.record_bytes == d->layers[i].t[0].st.record_bytes,
              "stats of layer %u", i);
    }
    /* the document read back writes the same bytes */
    REQUIRE(dcz_doc_write(r, &buf2, &len2) == DCZ_OK, "rewrite");
    CHECK(len2 == len && memcmp(buf, buf2, len) == 0, "rewrite differs (%zu vs %zu bytes)", len2, len);
    free(buf);
    free(buf2);
    dcz_doc_free(d);
    dcz_doc_free(r);
}

/* Packing for the encode stage: a codebook of 16 entries of which four
 * are used shrinks to those four (order kept, 2-bit indices) with every
 * weight unchanged, so the file is smaller and the runtime's outputs are the
 * same bit for bit; the chosen position width writes the fewest bytes of
 * all eight, raw and Huffman; an assignment out of the codebook is refused. */
static void test_pack(void)
{
    static const uint8_t used[4] = { 2, 5, 9, 13 };
    for (int coding = 0; coding <= 1; coding++) {
        dcz_doc *d = small_doc();
        REQUIRE(d != NULL, "alloc");
        dcz_doc_tensor *w = &d->layers[0].t[0];
        dcz_doc_tensor_clear(&d->layers[0].t[0]);
        dcz_doc_tensor_clear(&d->layers[0].t[1]);
        make_dense_layer(&d->layers[0], "fc1", 12, 9, DCZ_ENC_CODEBOOK, 0.3, 4, 8, (uint8_t)coding);
        for (size_t i = 0; i < w->n; i++) {
            w->assign[i] = used[rnd() % 4];
            w->values[i] = w->mask[i] ? w->codebook[w->assign[i]] : 0;
        }
        float cb[16];
        memcpy(cb, w->codebook, sizeof cb);
        uint8_t *before = NULL, *after = NULL;
        size_t lb = 0, la = 0;
        REQUIRE(dcz_doc_write(d, &before, &lb) == DCZ_OK, "write before");
        REQUIRE(dcz_doc_tensor_compact(w) == DCZ_OK, "compact");
        CHECK(w->k == 4 && w->index_bits == 2, "k %u bits %u", w->k, w->index_bits);
        for (int c = 0; c < 4; c++) CHECK(w->codebook[c] == cb[used[c]], "entry %d", c);
        size_t bad = 0;
        for (size_t i = 0; i < w->n; i++) bad += w->mask[i] && w->codebook[w->assign[i]] != w->values[i];
        CHECK(bad == 0, "%zu weights changed", bad);
        uint8_t best = 0;
        size_t sizes[9] = { 0 };
        for (unsigned b = 1; b <= 8; b++) {
            w->gap_bits = (uint8_t)b;
            uint8_t *buf = NULL;
            REQUIRE(dcz_doc_write(d, &buf, &sizes[b]) == DCZ_OK, "write with %u-bit gaps", b);
            free(buf);
        }
        REQUIRE(dcz_doc_tensor_best_gap_bits(w, &best) == DCZ_OK && best >= 1 && best <= 8, "best width");
        for (unsigned b = 1; b <= 8; b++)
            CHECK(sizes[best] <= sizes[b], "coding %d: %u bits write %zu bytes, %u bits %zu", coding, best,
                  sizes[best], b, sizes[b]);
        w->gap_bits = best;
        REQUIRE(dcz_doc_write(d, &after, &la) == DCZ_OK, "write after");
        CHECK(la < lb, "coding %d: packed %zu bytes, before %zu", coding, la, lb);
        dcz_model *ma = NULL, *mb = NULL;
        REQUIRE(dcz_open_memory(before, lb, NULL, &mb) == DCZ_OK && dcz_open_memory(after, la, NULL, &ma) == DCZ_OK,
                "open");
        float x[3 * 12], ya[3 * 5], yb[3 * 5];
        for (int i = 0; i < 3 * 12; i++) x[i] = frand();
        REQUIRE(dcz_run(ma, x, 3, ya) == DCZ_OK && dcz_run(mb, x, 3, yb) == DCZ_OK, "run");
        CHECK(memcmp(ya, yb, sizeof ya) == 0, "coding %d: outputs differ after packing", coding);
        dcz_close(ma);
        dcz_close(mb);
        /* every position stored: no position stream, same outputs */
        for (size_t i = 0; i < w->n; i++) {
            w->mask[i] = 1;
            w->values[i] = w->codebook[w->assign[i] % w->k];
            w->assign[i] = (uint8_t)(w->assign[i] % w->k);
        }
        uint8_t *all = NULL, *none = NULL;
        size_t lall = 0, lnone = 0;
        REQUIRE(dcz_doc_write(d, &all, &lall) == DCZ_OK, "write, all stored");
        const size_t rec_all = w->st.record_bytes;
        REQUIRE(dcz_doc_tensor_best_gap_bits(w, &best) == DCZ_OK && best == 0, "width %u with all stored", best);
        free(w->mask);
        w->mask = NULL;
        w->gap_bits = 0;
        REQUIRE(dcz_doc_write(d, &none, &lnone) == DCZ_OK, "write without positions");
        CHECK(w->st.record_bytes < rec_all && lnone <= lall, "without positions a %zu-byte record, with %zu",
              w->st.record_bytes, rec_all);
        REQUIRE(dcz_open_memory(all, lall, NULL, &mb) == DCZ_OK && dcz_open_memory(none, lnone, NULL, &ma) == DCZ_OK,
                "open all stored");
        REQUIRE(dcz_run(ma, x, 3, ya) == DCZ_OK && dcz_run(mb, x, 3, yb) == DCZ_OK, "run all stored");
        CHECK(memcmp(ya, yb, sizeof ya) == 0, "coding %d: outputs differ without positions", coding);
        dcz_close(ma);
        dcz_close(mb);
        free(all);
        free(none);
        w->mask = calloc(w->n, 1);
        w->assign[0] = 7;
        w->mask[0] = 1;
        CHECK(dcz_doc_tensor_compact(w) == DCZ_ERR_ARG, "assignment out of the codebook");
        free(before);
        free(after);
        dcz_doc_free(d);
    }
}

static void test_runtime_matches_doc(void)
{
    dcz_doc *d = small_doc();
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_model *m = NULL;
    dcz_status st = dcz_open_memory(buf, len, NULL, &m);
    REQUIRE(st == DCZ_OK, "open: %s", dcz_status_str(st));
    CHECK(dcz_input_size(m) == 12 && dcz_output_size(m) == 5, "sizes %zu %zu",
          dcz_input_size(m), dcz_output_size(m));
    enum { B = 7 };
    float x[B * 12], y[B * 5], y1[5];
    for (int i = 0; i < B * 12; i++) x[i] = frand();
    REQUIRE(dcz_run(m, x, B, y) == DCZ_OK, "run batch");
    double worst = 0;
    for (int b = 0; b < B; b++) {
        double ref[64];
        size_t n;
        doc_forward(d, x + b * 12, ref, &n);
        REQUIRE(dcz_run(m, x + b * 12, 1, y1) == DCZ_OK, "run 1");
        for (size_t i = 0; i < n; i++) {
            worst = fmax(worst, fabs(y[b * 5 + i] - ref[i]));
            worst = fmax(worst, fabs(y1[i] - ref[i]));
        }
    }
    CHECK(worst < 1e-5, "max error %g", worst);
    CHECK(dcz_run(m, x, 0, y) == DCZ_OK, "batch 0");
    dcz_close(m);
    dcz_close(NULL);
    free(buf);
    dcz_doc_free(d);
}

/* Gap coding with fillers: positions chosen so that every gap from 0 to well
 * beyond the limit occurs, for every gap width, raw and Huffman. */
static void test_gaps_at_limit(void)
{
    for (unsigned bits = 1; bits <= 8; bits++) {
        for (int coding = 0; coding <= 1; coding++) {
            const uint32_t filler = (1u << bits) - 1;
            dcz_doc *d;
            REQUIRE(dcz_doc_alloc(1, &d) == DCZ_OK, "alloc");
            const uint32_t in = 1000, out = 3;
            d->input_rank = 1;
            d->input_dims[0] = in;
            make_dense_layer(&d->layers[0], "fc", in, out, DCZ_ENC_CODEBOOK, 0, 2, bits, (uint8_t)coding);
            dcz_doc_tensor *w = &d->layers[0].t[0];
            /* gaps 0, F-1, F, F+1, 2F-1, 2F, 2F+1, 0, 3F ... placed across rows */
            const uint32_t gaps[] = { 0, filler - 1, filler, filler + 1, 2 * filler - 1, 2 * filler,
                                      2 * filler + 1, 0, 0, 3 * filler, 1, 255, 256, 509, 510 };
            int64_t pos = -1;
            uint32_t placed = 0;
            for (size_t g = 0; g < sizeof gaps / sizeof *gaps; g++) {
                pos += gaps[g] + 1;
                if (pos >= (int64_t)w->n) break;
                w->mask[pos] = 1;
                w->assign[pos] = (uint8_t)(placed % w->k);
                w->values[pos] = w->codebook[w->assign[pos]];
                placed++;
            }
            w->mask[w->n - 1] = 1; /* the very last position too */
            w->values[w->n - 1] = w->codebook[0];
            placed++;
            uint8_t *buf = NULL;
            size_t len = 0;
            dcz_doc *r = NULL;
            REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write bits %u", bits);
            CHECK(w->st.nnz == placed, "nnz %u placed %u", w->st.nnz, placed);
            CHECK(w->st.gap_count > placed, "fillers expected for bits %u", bits);
            REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read bits %u coding %d", bits, coding);
            same_tensor(w, &r->layers[0].t[0], "gaps");
            /* and the runtime computes with the same positions */
            dcz_model *m = NULL;
            REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open bits %u", bits);
            float *x = malloc(in * sizeof *x), y[3];
            for (uint32_t i = 0; i < in; i++) x[i] = frand();
            dcz_run(m, x, 1, y);
            for (uint32_t o = 0; o < out; o++) {
                double ref = d->layers[0].t[1].values[o];
                for (uint32_t i = 0; i < in; i++) ref += (double)w->values[o * in + i] * x[i];
                CHECK(fabs(ref - y[o]) < 1e-4, "bits %u row %u: %g vs %g", bits, o, y[o], ref);
            }
            free(x);
            dcz_close(m);
            free(buf);
            dcz_doc_free(r);
            dcz_doc_free(d);
        }
    }
}


/* ---- convolutional networks ------------------------------------------------ */


/* Random weights for any layer with parameters (codebook, mask, values),
 * like make_dense_layer. */
static void fill_weights(dcz_doc_layer *l, double density)
{
    dcz_doc_tensor *w = &l->t[0];
    for (uint32_t i = 0; i < w->k; i++) w->codebook[i] = frand();
    for (size_t i = 0; i < w->n; i++) {
        int keep = !w->mask || (rnd() % 1000000) < density * 1000000;
        if (w->mask) w->mask[i] = (uint8_t)keep;
        if (!keep) continue;
        if (w->assign) {
            w->assign[i] = (uint8_t)(rnd() % w->k);
            w->values[i] = w->codebook[w->assign[i]];
        } else {
            w->values[i] = frand();
            if (w->enc == DCZ_ENC_F16) w->values[i] = dcz_f16_to_f32(dcz_f32_to_f16(w->values[i]));
        }
    }
    for (size_t i = 0; i < l->t[1].n; i++) l->t[1].values[i] = frand();
}

static void set_input(dcz_doc *d, uint32_t c, uint32_t h, uint32_t w)
{
    d->input_rank = 3;
    d->input_dims[0] = c;
    d->input_dims[1] = h;
    d->input_dims[2] = w;
}

/* (2, 11, 9) -> conv 3x3 pad 1 (8-bit codebook, sparse, Huffman; direct
 * kernel) -> relu -> maxpool 2 -> (4, 5, 4) -> conv 3x3 pad 1 (sparse f32,
 * raw; im2col kernel) -> avgpool 3 pad 1 -> conv 1x1 (dense f32) -> gap ->
 * flatten -> dense 5 -> 3 (codebook, every position) -> softmax */
static dcz_doc *conv_doc(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(10, &d) != DCZ_OK) return NULL;
    set_input(d, 2, 11, 9);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv1", 2, 4, 3, 1, 1, DCZ_ENC_CODEBOOK, 3, 8, DCZ_CODING_HUFFMAN);
    fill_weights(&l[0], 0.5);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu1");
    doc_pool_layer(&l[2], DCZ_OP_MAXPOOL, "pool1", 2, 2, 0, 0);
    doc_conv_layer(&l[3], "conv2", 4, 6, 3, 1, 1, DCZ_ENC_SPARSE_F32, 4, 0, DCZ_CODING_RAW);
    fill_weights(&l[3], 0.5);
    doc_pool_layer(&l[4], DCZ_OP_AVGPOOL, "pool2", 3, 1, 1, 0);
    doc_conv_layer(&l[5], "conv3", 6, 5, 1, 1, 0, DCZ_ENC_F32, 0, 0, 0);
    fill_weights(&l[5], 1);
    doc_plain_layer(&l[6], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[7], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&l[8], "fc", 5, 3, DCZ_ENC_CODEBOOK, 0, 2, DCZ_CODING_RAW);
    fill_weights(&l[8], 1);
    doc_plain_layer(&l[9], DCZ_OP_SOFTMAX, "prob");
    dcz_doc_add_stage(d, "stage = test\nnote = conv\n");
    return d;
}

/* (32, 6, 6) -> conv 3x3 pad 1 to 32 (dense f32: Winograd's where this
 * CPU runs it) -> relu -> gap -> flatten -> dense (f32) -> softmax */
static dcz_doc *wino_doc(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(6, &d) != DCZ_OK) return NULL;
    set_input(d, 32, 6, 6);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv", 32, 32, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    fill_weights(&l[0], 1);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu");
    doc_plain_layer(&l[2], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[3], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&l[4], "fc", 32, 3, DCZ_ENC_F32, 0, 0, 0);
    fill_weights(&l[4], 1);
    doc_plain_layer(&l[5], DCZ_OP_SOFTMAX, "prob");
    return d;
}

/* (3, 9, 7) -> conv 3x3 stride 2 pad 1 (4-bit codebook, 2-bit gaps, raw:
 * fillers) -> relu -> avgpool 2 pad 1 counting the padding -> conv 3x3
 * (dense f16) -> (3, 4, 3) -> dense 36 -> 4 on the (C, H, W) input
 * (sparse f32, Huffman) */
static dcz_doc *conv_doc_b(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(5, &d) != DCZ_OK) return NULL;
    set_input(d, 3, 9, 7);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv1", 3, 4, 3, 2, 1, DCZ_ENC_CODEBOOK, 2, 4, DCZ_CODING_RAW);
    fill_weights(&l[0], 0.3);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu1");
    doc_pool_layer(&l[2], DCZ_OP_AVGPOOL, "pool1", 2, 1, 1, 1);
    doc_conv_layer(&l[3], "conv2", 4, 3, 3, 1, 0, DCZ_ENC_F16, 0, 0, 0);
    fill_weights(&l[3], 1);
    doc_dense_layer(&l[4], "fc", 36, 4, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_HUFFMAN);
    fill_weights(&l[4], 0.6);
    return d;
}

/* One layer of the reference forward pass, from the document's values:
 * x (batch, in) -> y (batch, out). */
static void ref_layer(const dcz_doc_layer *l, const dcz_shape *in, const dcz_shape *out,
                      const float *x, size_t batch, float *y)
{
    const size_t n_in = (size_t)dcz_shape_count(in), n_out = (size_t)dcz_shape_count(out);
    dcz_conv_geom g;
    switch (l->op) {
    case DCZ_OP_DENSE:
        dcz_dense_f32_ref(l->t[0].values, l->t[1].values, x, batch, (uint32_t)n_in, (uint32_t)n_out, y);
        break;
    case DCZ_OP_CONV2D:
        dcz_conv_geom_init(&g, l->op, l->attr, l->nattr, in);
        dcz_conv2d_direct_ref(&g, l->t[0].values, l->t[1].values, x, batch, y);
        break;
    case DCZ_OP_MAXPOOL:
        dcz_conv_geom_init(&g, l->op, l->attr, l->nattr, in);
        dcz_maxpool_ref(&g, x, batch, y);
        break;
    case DCZ_OP_AVGPOOL:
        dcz_conv_geom_init(&g, l->op, l->attr, l->nattr, in);
        dcz_avgpool_ref(&g, l->attr[6], x, batch, y);
        break;
    case DCZ_OP_GLOBAL_AVGPOOL:
        dcz_global_avgpool_ref(in->dims[0], in->dims[1] * in->dims[2], x, batch, y);
        break;
    case DCZ_OP_RELU:
        memcpy(y, x, batch * n_in * sizeof *y);
        dcz_relu_ref(y, batch * n_in);
        break;
    case DCZ_OP_SOFTMAX:
        memcpy(y, x, batch * n_in * sizeof *y);
        dcz_softmax_ref(y, batch, n_in);
        break;
    case DCZ_OP_FLATTEN:
        memcpy(y, x, batch * n_in * sizeof *y);
        break;
    case DCZ_OP_CHANNEL_SHUFFLE: {   /* the (g, C / g) channels transposed */
        const size_t c = in->dims[0], plane = n_in / c, groups = (size_t)l->attr[0];
        for (size_t b = 0; b < batch; b++)
            for (size_t i = 0; i < groups; i++)
                for (size_t j = 0; j < c / groups; j++)
                    memcpy(y + (b * c + j * groups + i) * plane, x + (b * c + i * (c / groups) + j) * plane,
                           plane * sizeof *y);
        break;
    }
    case DCZ_OP_SLICE:
        for (size_t b = 0; b < batch; b++)
            memcpy(y + b * n_out, x + b * n_in + (size_t)l->attr[0] * (n_in / in->dims[0]), n_out * sizeof *y);
        break;
    default: { /* the activations, as docs/FORMAT.md writes them */
        const double a = l->nattr > 0 ? dcz_attr_f32(l->attr[0]) : 0, c = l->nattr > 1 ? dcz_attr_f32(l->attr[1]) : 0;
        for (size_t i = 0; i < batch * n_in; i++) {
            const double v = x[i];
            double r = v;
            if (l->op == DCZ_OP_CLIP) r = fmin(fmax(v, a), c);
            else if (l->op == DCZ_OP_LEAKY_RELU) r = v > 0 ? v : a * v;
            else if (l->op == DCZ_OP_SIGMOID) r = 1 / (1 + exp(-v));
            else if (l->op == DCZ_OP_TANH) r = tanh(v);
            else if (l->op == DCZ_OP_HARD_SIGMOID) r = fmax(0, fmin(1, a * v + c));
            else if (l->op == DCZ_OP_HARD_SWISH) r = v * fmax(0, fmin(1, v / 6 + 0.5));
            else if (l->op == DCZ_OP_SILU) r = v / (1 + exp(-v));
            y[i] = (float)r;
        }
    }
    }
}

/* The graph ops, as plain loops: y (batch, width of the output) from the
 * layer's inputs x[k] (batch, w[k]). */
static void ref_graph_op(const dcz_doc_layer *l, const float *const *x, const size_t *w, size_t batch,
                         float *y)
{
    for (size_t b = 0; b < batch; b++) {
        if (l->op == DCZ_OP_ADD) {
            for (size_t i = 0; i < w[0]; i++) y[b * w[0] + i] = x[0][b * w[0] + i] + x[1][b * w[0] + i];
        } else if (l->op == DCZ_OP_MUL) {   /* w[1] factors, each over w[0] / w[1] values */
            for (size_t i = 0; i < w[0]; i++)
                y[b * w[0] + i] = x[0][b * w[0] + i] * x[1][b * w[1] + i / (w[0] / w[1])];
        } else {                            /* CONCAT */
            size_t at = 0, total = 0;
            for (uint32_t k = 0; k < l->nin; k++) total += w[k];
            for (uint32_t k = 0; k < l->nin; k++)
                for (size_t i = 0; i < w[k]; i++) y[b * total + at++] = x[k][b * w[k] + i];
        }
    }
}

/* The reference forward pass of a document over batch samples, every
 * tensor kept apart; returns the output (malloc'd) and its width. */
static float *ref_forward(const dcz_doc *d, const float *x, size_t batch, size_t *out_n)
{
    enum { MAXL = 24 };
    dcz_shape shapes[MAXL + 1];
    float *t[MAXL + 1] = { 0 };
    if (d->nlayers > MAXL || dcz_doc_shapes(d, shapes) != DCZ_OK) return NULL;
    const size_t n0 = (size_t)dcz_shape_count(&shapes[0]);
    t[0] = malloc(batch * n0 * sizeof *t[0]);
    memcpy(t[0], x, batch * n0 * sizeof *t[0]);
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        t[i + 1] = malloc(batch * dcz_shape_count(&shapes[i + 1]) * sizeof *t[0]);
        if (l->op == DCZ_OP_ADD || l->op == DCZ_OP_MUL || l->op == DCZ_OP_CONCAT) {
            const float *xs[DCZ_MAX_INPUTS];
            size_t w[DCZ_MAX_INPUTS];
            for (uint32_t k = 0; k < l->nin; k++) {
                xs[k] = t[l->in[k]];
                w[k] = (size_t)dcz_shape_count(&shapes[l->in[k]]);
            }
            ref_graph_op(l, xs, w, batch, t[i + 1]);
        } else {
            ref_layer(l, &shapes[l->in[0]], &shapes[i + 1], t[l->in[0]], batch, t[i + 1]);
        }
    }
    for (uint32_t i = 0; i < d->nlayers; i++) free(t[i]);
    *out_n = (size_t)dcz_shape_count(&shapes[d->nlayers]);
    return t[d->nlayers];
}

/* Writes d, loads it, runs batch 1 (sample by sample) and batch 5, and
 * compares with the reference forward pass: within 1e-5 of each sample's
 * largest output (plus 1e-5). */
static uint32_t check_places1(const dcz_model *m, const char *what);

static void runtime_matches_reference(dcz_doc *d, const char *what)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    dcz_status st = dcz_doc_write(d, &buf, &len);
    REQUIRE(st == DCZ_OK, "%s: write: %s", what, dcz_status_str(st));
    dcz_model *m = NULL;
    st = dcz_open_memory(buf, len, NULL, &m);
    REQUIRE(st == DCZ_OK, "%s: open: %s", what, dcz_status_str(st));
    check_places1(m, what);   /* its places at batch 1 */
    enum { B = 5 };
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = malloc(B * in * sizeof *x), *y = malloc(B * out * sizeof *y), *y1 = malloc(out * sizeof *y1);
    for (size_t i = 0; i < B * in; i++) x[i] = frand();
    size_t ref_n = 0;
    float *ref = ref_forward(d, x, B, &ref_n);
    REQUIRE(ref && ref_n == out, "%s: reference width %zu, model %zu", what, ref_n, out);
    CHECK(dcz_run(m, x, B, y) == DCZ_OK, "%s: run batch", what);
    /* the tolerance of a sample's outputs scales with its largest: a sum
     * taken in another order errs by its terms' magnitude, which an output
     * that cancels to near 0 does not show */
    double worst = 0;
    for (size_t b = 0; b < B; b++) {
        CHECK(dcz_run(m, x + b * in, 1, y1) == DCZ_OK, "%s: run 1", what);
        double scale = 0;
        for (size_t i = 0; i < out; i++) scale = fmax(scale, fabs(ref[b * out + i]));
        for (size_t i = 0; i < out; i++) {
            const double r = ref[b * out + i], tol = 1e-5 * (1 + scale);
            worst = fmax(worst, fabs(y[b * out + i] - r) / tol);
            worst = fmax(worst, fabs(y1[i] - r) / tol);
        }
    }
    CHECK(worst <= 1, "%s: error %g of the tolerance", what, worst);
    free(x); free(y); free(y1); free(ref);
    dcz_close(m);
    free(buf);
}

static void test_conv_runtime_matches_reference(void)
{
    dcz_doc *a = conv_doc(), *b = conv_doc_b();
    REQUIRE(a && b, "alloc");
    runtime_matches_reference(a, "conv network a");
    runtime_matches_reference(b, "conv network b");
    /* both sparse conv kernels of the runtime are exercised */
    dcz_shape in = { 3, { 4, 5, 4, 0 } };
    dcz_conv_geom g1, g2;
    dcz_shape in1 = { 3, { 2, 11, 9, 0 } };
    REQUIRE(dcz_conv_geom_init(&g1, DCZ_OP_CONV2D, a->layers[0].attr, 9, &in1) == DCZ_OK, "geom");
    REQUIRE(dcz_conv_geom_init(&g2, DCZ_OP_CONV2D, a->layers[3].attr, 9, &in) == DCZ_OK, "geom");
    CHECK(!dcz_conv2d_pick_im2col(&g1) && dcz_conv2d_pick_im2col(&g2), "kernel choice");
    dcz_doc_free(a);
    dcz_doc_free(b);
}

/* dcz_options.max_work bounds the work of one sample at load: a small
 * model at exactly its work loads and one unit less is refused; a crafted
 * 255x255 convolution over a 4096x4096 plane (a minute and more per
 * sample) is refused by the default in the time it takes to read it, and
 * loads when the caller lifts the bound. */
static void test_work_limit(void)
{
    dcz_doc *d;
    REQUIRE(dcz_doc_alloc(2, &d) == DCZ_OK, "alloc");
    set_input(d, 1, 1, 4);
    doc_dense_layer(&d->layers[0], "fc", 4, 3, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&d->layers[1], DCZ_OP_RELU, "relu");
    uint8_t *buf;
    size_t len;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_doc_free(d);
    dcz_options opt;
    dcz_options_init(&opt);
    CHECK(opt.max_work == DCZ_DEFAULT_MAX_WORK, "default bound %llu", (unsigned long long)opt.max_work);
    dcz_model *m = NULL;
    opt.max_work = 4 * 3 + 3;   /* 12 multiply-adds, 3 ReLU outputs */
    CHECK(dcz_open_memory(buf, len, &opt, &m) == DCZ_OK, "at its work");
    dcz_close(m);
    m = NULL;
    opt.max_work = 4 * 3 + 2;
    CHECK(dcz_open_memory(buf, len, &opt, &m) == DCZ_ERR_LIMIT && !m, "one over its work");
    free(buf);

    REQUIRE(dcz_doc_alloc(1, &d) == DCZ_OK, "alloc");
    set_input(d, 1, 4096, 4096);
    doc_conv_layer(&d->layers[0], "huge", 1, 1, 255, 1, 0, DCZ_ENC_F32, 0, 0, 0);
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write the crafted model");
    dcz_doc_free(d);
    CHECK(len > 255 * 255 * 4 && len < 300000, "a small file: %zu bytes", len);
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_ERR_LIMIT && !m, "refused by default");
    dcz_options_init(&opt);
    opt.max_work = UINT64_MAX;
    CHECK(dcz_open_memory(buf, len, &opt, &m) == DCZ_OK, "taken without a bound");
    dcz_close(m);
    free(buf);
}

/* The toolchain's reader expands tensors to dense arrays; a file that
 * claims far more elements than its bytes can describe (a 4096 x 4096
 * layer of one weight, the rest Huffman-coded fillers: over 2,000
 * elements a byte) is refused with DCZ_ERR_LIMIT before the memory is
 * taken, while libdcz, which keeps the compressed form, still loads it. */
static void test_doc_expansion_bound(void)
{
    dcz_doc *d;
    REQUIRE(dcz_doc_alloc(1, &d) == DCZ_OK, "alloc");
    set_input(d, 1, 1, 4096);
    doc_dense_layer(&d->layers[0], "fc", 4096, 4096, DCZ_ENC_SPARSE_F32, 8, 0, DCZ_CODING_HUFFMAN);
    d->layers[0].t[0].mask[12345] = 1;
    d->layers[0].t[0].values[12345] = 0.5f;
    uint8_t *buf;
    size_t len;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_doc_free(d);
    CHECK((uint64_t)4096 * 4096 > (uint64_t)len * DCZ_DOC_ELEMENTS_PER_BYTE + (1u << 20),
          "the file (%zu bytes) claims more than the bound", len);
    d = NULL;
    CHECK(dcz_doc_read(buf, len, &d) == DCZ_ERR_LIMIT && !d, "expansion refused");
    dcz_model *m = NULL;
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "libdcz loads it");
    dcz_close(m);
    free(buf);
}

static void test_conv_doc_round_trip(void)
{
    dcz_doc *d = conv_doc(), *r = NULL;
    REQUIRE(d != NULL, "alloc");
    uint8_t *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    CHECK((dcz_le32(buf + 8) & 0xFFFF) == 2 && dcz_le32(buf + 8) >> 16 == DCZ_FMT_MINOR, "version 2.x");
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read back");
    REQUIRE(r->nlayers == d->nlayers, "layers %u", r->nlayers);
    CHECK(r->input_rank == 3 && r->input_dims[0] == 2 && r->input_dims[1] == 11 &&
          r->input_dims[2] == 9, "input shape");
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const dcz_doc_layer *a = &d->layers[i], *b = &r->layers[i];
        CHECK(a->op == b->op && a->nattr == b->nattr && strcmp(a->name, b->name) == 0 &&
              memcmp(a->attr, b->attr, sizeof a->attr) == 0 && a->ntensors == b->ntensors,
              "layer %u", i);
        for (uint32_t j = 0; j < a->ntensors && j < b->ntensors; j++) {
            same_tensor(&a->t[j], &b->t[j], a->name);
            CHECK(memcmp(a->t[j].dims, b->t[j].dims, sizeof a->t[j].dims) == 0, "dims %u.%u", i, j);
        }
    }
    CHECK(r->layers[0].t[0].rank == 4 && r->layers[0].t[0].dims[3] == 3, "rank-4 weight");
    REQUIRE(dcz_doc_write(r, &buf2, &len2) == DCZ_OK, "rewrite");
    CHECK(len2 == len && memcmp(buf, buf2, len) == 0, "rewrite differs");
    free(buf);
    free(buf2);
    dcz_doc_free(d);
    dcz_doc_free(r);
}

/* ---- operator rules and shape errors ----------------------------------------- */

static void test_op_rules(void)
{
    int p;
    const int32_t conv[9] = { 2, 3, 3, 5, 1, 2, 1, 4, 1 }, pool[7] = { 2, 3, 2, 1, 1, 0, 1 };
    CHECK(dcz_op_check(DCZ_OP_CONV2D, conv, 9, &p) == DCZ_OK && p == 1, "conv attrs");
    CHECK(dcz_op_check(DCZ_OP_CONV2D, conv, 8, &p) == DCZ_ERR_FORMAT, "conv count");
    CHECK(dcz_op_check(DCZ_OP_MAXPOOL, pool, 6, &p) == DCZ_OK && p == 0, "max attrs");
    CHECK(dcz_op_check(DCZ_OP_AVGPOOL, pool, 7, &p) == DCZ_OK && p == 0, "avg attrs");
    CHECK(dcz_op_check(DCZ_OP_GLOBAL_AVGPOOL, NULL, 0, &p) == DCZ_OK, "gap");
    CHECK(dcz_op_check(DCZ_OP_FLATTEN, pool, 1, &p) == DCZ_ERR_FORMAT, "flatten with attrs");
    CHECK(dcz_op_check(99, NULL, 0, &p) == DCZ_ERR_UNSUPPORTED, "unknown op");
    CHECK(dcz_op_check(DCZ_OP_BATCHNORM, NULL, 0, &p) == DCZ_ERR_UNSUPPORTED, "training-only op in a file");
    /* each limit, one at a time */
    const struct { int at; int32_t v; } bad[] = {
        { 0, 0 }, { 1, -1 }, { 1, (1 << 24) + 1 }, { 2, 0 }, { 3, 256 }, { 4, 0 }, { 5, 256 },
        { 6, 3 }, { 7, 5 }, { 6, -1 }, { 8, 0 }, { 8, 3 }, { 8, -1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int32_t a[9];
        memcpy(a, conv, sizeof a);
        a[bad[i].at] = bad[i].v;
        CHECK(dcz_op_check(DCZ_OP_CONV2D, a, 9, &p) == DCZ_ERR_FORMAT, "conv attr %d = %d", bad[i].at, bad[i].v);
    }
    int32_t pa[7];
    memcpy(pa, pool, sizeof pa);
    pa[6] = 2;
    CHECK(dcz_op_check(DCZ_OP_AVGPOOL, pa, 7, &p) == DCZ_ERR_FORMAT, "count_include_pad 2");
    pa[6] = 0; pa[4] = 2;
    CHECK(dcz_op_check(DCZ_OP_AVGPOOL, pa, 7, &p) == DCZ_ERR_FORMAT, "pool pad = kernel");

    /* shapes */
    dcz_shape in = { 3, { 2, 7, 9, 0 } }, out;
    CHECK(dcz_op_shape(DCZ_OP_CONV2D, conv, 9, &in, 1, &out) == DCZ_OK && out.rank == 3 &&
          out.dims[0] == 3 && out.dims[1] == 7 && out.dims[2] == 7, "conv (3, %u, %u)", out.dims[1], out.dims[2]);
    CHECK(dcz_op_shape(DCZ_OP_MAXPOOL, pool, 6, &in, 1, &out) == DCZ_OK && out.dims[0] == 2 &&
          out.dims[1] == 4 && out.dims[2] == 7, "pool (2, %u, %u)", out.dims[1], out.dims[2]);
    CHECK(dcz_op_shape(DCZ_OP_GLOBAL_AVGPOOL, NULL, 0, &in, 1, &out) == DCZ_OK && out.rank == 3 &&
          out.dims[0] == 2 && out.dims[1] == 1 && out.dims[2] == 1, "gap");
    CHECK(dcz_op_shape(DCZ_OP_FLATTEN, NULL, 0, &in, 1, &out) == DCZ_OK && out.rank == 1 &&
          out.dims[0] == 126, "flatten");
    const int32_t fc[2] = { 126, 10 }, fc_bad[2] = { 125, 10 };
    CHECK(dcz_op_shape(DCZ_OP_DENSE, fc, 2, &in, 1, &out) == DCZ_OK && out.dims[0] == 10, "dense on (C, H, W)");
    CHECK(dcz_op_shape(DCZ_OP_DENSE, fc_bad, 2, &in, 1, &out) == DCZ_ERR_SHAPE, "dense count");
    dcz_shape flat = { 1, { 126, 0, 0, 0 } }, small = { 3, { 2, 1, 9, 0 } }, other_c = { 3, { 3, 7, 9, 0 } };
    CHECK(dcz_op_shape(DCZ_OP_CONV2D, conv, 9, &flat, 1, &out) == DCZ_ERR_SHAPE, "conv on rank 1");
    CHECK(dcz_op_shape(DCZ_OP_MAXPOOL, pool, 6, &flat, 1, &out) == DCZ_ERR_SHAPE, "pool on rank 1");
    CHECK(dcz_op_shape(DCZ_OP_GLOBAL_AVGPOOL, NULL, 0, &flat, 1, &out) == DCZ_ERR_SHAPE, "gap on rank 1");
    CHECK(dcz_op_shape(DCZ_OP_CONV2D, conv, 9, &other_c, 1, &out) == DCZ_ERR_SHAPE, "channels");
    /* 1 + 2 - 3 = 0 rows: the output would be 1 x ...; 1 + 2 - 4 < 0: none */
    const int32_t tall[9] = { 2, 3, 4, 1, 1, 1, 1, 0, 1 };
    CHECK(dcz_op_shape(DCZ_OP_CONV2D, conv, 9, &small, 1, &out) == DCZ_OK && out.dims[1] == 1, "1 row");
    CHECK(dcz_op_shape(DCZ_OP_CONV2D, tall, 9, &small, 1, &out) == DCZ_ERR_SHAPE, "below 1 row");
    /* an activation above 2^24 elements */
    const int32_t wide[9] = { 2, 1 << 20, 1, 1, 1, 1, 0, 0, 1 };
    CHECK(dcz_op_shape(DCZ_OP_CONV2D, wide, 9, &in, 1, &out) == DCZ_ERR_SHAPE, "too large");
    /* grouped: weight (out_c, in_c / group, kh, kw) */
    const int32_t grouped[9] = { 4, 6, 3, 3, 1, 1, 1, 1, 2 };
    dcz_shape ws, bs, in4 = { 3, { 4, 5, 5, 0 } };
    CHECK(dcz_op_check(DCZ_OP_CONV2D, grouped, 9, &p) == DCZ_OK, "group 2");
    CHECK(dcz_op_param_shapes(DCZ_OP_CONV2D, grouped, &ws, &bs) == DCZ_OK && ws.rank == 4 &&
          ws.dims[0] == 6 && ws.dims[1] == 2 && bs.dims[0] == 6, "grouped weight (6, %u)", ws.dims[1]);
    CHECK(dcz_op_shape(DCZ_OP_CONV2D, grouped, 9, &in4, 1, &out) == DCZ_OK && out.dims[0] == 6, "grouped shape");

    /* graph ops: ADD of one shape, MUL by one factor per channel or per
     * element, CONCAT on the channels of equal planes */
    dcz_shape two[2] = { in, in };
    CHECK(dcz_op_shape(DCZ_OP_ADD, NULL, 0, two, 2, &out) == DCZ_OK && dcz_shape_is(&out, 3, in.dims), "add");
    CHECK(dcz_op_shape(DCZ_OP_ADD, NULL, 0, two, 1, &out) == DCZ_ERR_SHAPE, "add of one input");
    two[1] = other_c;
    CHECK(dcz_op_shape(DCZ_OP_ADD, NULL, 0, two, 2, &out) == DCZ_ERR_SHAPE, "add of two shapes");
    const dcz_shape per_c = { 3, { 2, 1, 1, 0 } }, per_c1 = { 1, { 2, 0, 0, 0 } }, wrong_c = { 1, { 3, 0, 0, 0 } };
    two[1] = per_c;
    CHECK(dcz_op_shape(DCZ_OP_MUL, NULL, 0, two, 2, &out) == DCZ_OK && dcz_shape_is(&out, 3, in.dims), "mul (C,1,1)");
    two[1] = per_c1;
    CHECK(dcz_op_shape(DCZ_OP_MUL, NULL, 0, two, 2, &out) == DCZ_OK, "mul (C)");
    two[1] = in;
    CHECK(dcz_op_shape(DCZ_OP_MUL, NULL, 0, two, 2, &out) == DCZ_OK, "mul elementwise");
    two[1] = wrong_c;
    CHECK(dcz_op_shape(DCZ_OP_MUL, NULL, 0, two, 2, &out) == DCZ_ERR_SHAPE, "mul by other channels");
    dcz_shape three[3] = { in, other_c, in };
    CHECK(dcz_op_shape(DCZ_OP_CONCAT, NULL, 0, three, 3, &out) == DCZ_OK && out.dims[0] == 7 &&
          out.dims[1] == 7 && out.dims[2] == 9, "concat (%u, %u, %u)", out.dims[0], out.dims[1], out.dims[2]);
    three[1] = small;
    CHECK(dcz_op_shape(DCZ_OP_CONCAT, NULL, 0, three, 3, &out) == DCZ_ERR_SHAPE, "concat of other planes");
    three[1] = flat;
    CHECK(dcz_op_shape(DCZ_OP_CONCAT, NULL, 0, three, 3, &out) == DCZ_ERR_SHAPE, "concat of other ranks");
    CHECK(dcz_op_shape(DCZ_OP_CONCAT, NULL, 0, three, 1, &out) == DCZ_ERR_SHAPE, "concat of one input");

    /* SILU: one input of any shape, kept; no attributes, no weights; run on
     * integers by a table, in place */
    const dcz_op_info *silu = dcz_op_get(DCZ_OP_SILU);
    CHECK(DCZ_OP_SILU == 20 && silu && silu->op == DCZ_OP_SILU && strcmp(silu->name, "SILU") == 0 &&
          strcmp(silu->label, "silu") == 0 && strcmp(dcz_op_name(20), "SILU") == 0, "silu's entry");
    CHECK(silu && silu->min_in == 1 && silu->max_in == 1 && !silu->weighted && !silu->train_only &&
          silu->qscale == DCZ_QS_TABLE && silu->in_place, "silu: one input, a table, in place");
    CHECK(dcz_op_check(DCZ_OP_SILU, NULL, 0, &p) == DCZ_OK && p == 0, "silu attrs");
    CHECK(dcz_op_check(DCZ_OP_SILU, pool, 1, &p) == DCZ_ERR_FORMAT, "silu with an attribute");
    CHECK(dcz_op_shape(DCZ_OP_SILU, NULL, 0, &in, 1, &out) == DCZ_OK && dcz_shape_is(&out, 3, in.dims),
          "silu (C, H, W)");
    CHECK(dcz_op_shape(DCZ_OP_SILU, NULL, 0, &flat, 1, &out) == DCZ_OK && dcz_shape_is(&out, 1, flat.dims),
          "silu (n)");
    const dcz_shape pair[2] = { in, in };
    CHECK(dcz_op_shape(DCZ_OP_SILU, NULL, 0, pair, 2, &out) == DCZ_ERR_SHAPE, "silu of two inputs");
}

/* The writer refuses documents whose shapes do not chain. */
static void test_conv_writer_refuses(void)
{
    struct { const char *what; dcz_status want; } cases[] = {
        { "conv on rank 1", DCZ_ERR_SHAPE }, { "output below 1x1", DCZ_ERR_SHAPE },
        { "weight dims", DCZ_ERR_SHAPE }, { "channels", DCZ_ERR_SHAPE },
        { "pool pad = kernel", DCZ_ERR_ARG }, { "tensors on a pool", DCZ_ERR_ARG },
        { "dense count", DCZ_ERR_SHAPE },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dcz_doc *d;
        REQUIRE(dcz_doc_alloc(3, &d) == DCZ_OK, "alloc");
        set_input(d, 2, 5, 5);
        doc_conv_layer(&d->layers[0], "conv", 2, 3, 3, 1, 0, DCZ_ENC_F32, 0, 0, 0);
        doc_pool_layer(&d->layers[1], DCZ_OP_MAXPOOL, "pool", 2, 1, 0, 0);
        doc_dense_layer(&d->layers[2], "fc", 12, 2, DCZ_ENC_F32, 0, 0, 0);
        uint8_t *buf = NULL;
        size_t len = 0;
        REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "the valid document");
        free(buf);
        switch (i) {
        case 0: d->input_rank = 1; d->input_dims[0] = 50; break;
        case 1: d->input_dims[1] = 2; break;
        case 2: d->layers[0].t[0].dims[2] = 1; d->layers[0].t[0].dims[3] = 9; break;
        case 3: d->layers[0].attr[0] = 3; break;
        case 4: d->layers[1].attr[4] = 2; break;
        case 5: d->layers[1].ntensors = 1; d->layers[1].t[0] = d->layers[0].t[1];
                memset(&d->layers[0].t[1], 0, sizeof d->layers[0].t[1]); d->layers[0].ntensors = 1; break;
        case 6: d->layers[2].attr[0] = 13; break;
        }
        dcz_status st = dcz_doc_write(d, &buf, &len);
        CHECK(st == cases[i].want && buf == NULL, "%s: %s", cases[i].what, dcz_status_str(st));
        dcz_doc_free(d);
    }
}

/* Offset of layer `layer`'s record in the graph section of a written file
 * (the graph is section 0). */
static size_t graph_record(const uint8_t *buf, uint32_t layer)
{
    uint64_t g = dcz_le32(buf + DCZ_HEADER_BYTES + 8);
    size_t at = (size_t)g + 8 + 4 * dcz_le32(buf + g + 4);
    for (uint32_t i = 0; i < layer; i++) {
        size_t name_len = (size_t)(buf[at + 2] | buf[at + 3] << 8);
        at += 4 + name_len;
        at += 4 + 4 * (size_t)dcz_le32(buf + at);       /* inputs */
        at += 4 + 4 * (size_t)dcz_le32(buf + at) + 4;   /* attributes, param_section */
    }
    return at;
}

/* Offset of the input count of the record at rec. */
static size_t record_inputs(const uint8_t *buf, size_t rec)
{
    return rec + 4 + (size_t)(buf[rec + 2] | buf[rec + 3] << 8);
}

/* Offset of attribute j of the record at rec. */
static size_t record_attr(const uint8_t *buf, size_t rec, uint32_t j)
{
    const size_t in = record_inputs(buf, rec);
    return in + 4 + 4 * (size_t)dcz_le32(buf + in) + 4 + 4 * (size_t)j;
}

/* Both readers refuse files whose shapes do not chain, even with valid
 * checksums. */
static void test_conv_readers_refuse(void)
{
    dcz_doc *d;
    REQUIRE(dcz_doc_alloc(4, &d) == DCZ_OK, "alloc");
    set_input(d, 2, 5, 5);
    doc_plain_layer(&d->layers[0], DCZ_OP_RELU, "relu");
    doc_conv_layer(&d->layers[1], "conv", 2, 3, 3, 1, 0, DCZ_ENC_CODEBOOK, 3, 2, DCZ_CODING_RAW);
    fill_weights(&d->layers[1], 0.5);
    doc_pool_layer(&d->layers[2], DCZ_OP_MAXPOOL, "pool", 2, 1, 0, 0);
    doc_dense_layer(&d->layers[3], "fc", 12, 2, DCZ_ENC_F32, 0, 0, 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    const uint64_t g = dcz_le32(buf + DCZ_HEADER_BYTES + 8);
    const size_t relu = graph_record(buf, 0), conv = graph_record(buf, 1), pool = graph_record(buf, 2);
    struct { const char *what; size_t at; uint32_t v; dcz_status want; } cases[] = {
        { "conv on rank 1 (relu made flatten)", relu, DCZ_OP_FLATTEN, DCZ_ERR_SHAPE },
        { "output below 1x1", (size_t)g + 8 + 4, 2, DCZ_ERR_SHAPE },
        { "weight dims", record_attr(buf, conv, 2), 1, DCZ_ERR_SHAPE },
        { "channels", record_attr(buf, conv, 0), 1, DCZ_ERR_SHAPE },
        { "pool pad = kernel", record_attr(buf, pool, 4), 2, DCZ_ERR_FORMAT },
        { "conv stride 0", record_attr(buf, conv, 4), 0, DCZ_ERR_FORMAT },
    };
    uint8_t *copy = malloc(len);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memcpy(copy, buf, len);
        if (cases[i].at == relu) { copy[relu] = (uint8_t)cases[i].v; copy[relu + 1] = 0; }
        else dcz_put32(copy + cases[i].at, cases[i].v);
        fix_crcs(copy, len);
        dcz_model *m = NULL;
        dcz_doc *r = NULL;
        dcz_status s1 = dcz_open_memory(copy, len, NULL, &m), s2 = dcz_doc_read(copy, len, &r);
        CHECK(s1 == cases[i].want && m == NULL, "%s: runtime %s", cases[i].what, dcz_status_str(s1));
        CHECK(s2 == cases[i].want && r == NULL, "%s: toolchain %s", cases[i].what, dcz_status_str(s2));
        dcz_close(m);
        dcz_doc_free(r);
    }
    /* the untouched file is fine */
    dcz_model *m = NULL;
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "original");
    dcz_close(m);
    free(copy);
    free(buf);
    dcz_doc_free(d);
}

/* Every single-byte change (three patterns) and every truncation of the
 * file of d is refused by both readers. */
static void corruption_refused(dcz_doc *d)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    uint8_t *copy = malloc(len);
    size_t accepted = 0, doc_accepted = 0;
    const uint8_t flips[] = { 0x01, 0x80, 0xFF };
    for (size_t i = 0; i < len; i++) {
        for (size_t f = 0; f < sizeof flips; f++) {
            memcpy(copy, buf, len);
            copy[i] ^= flips[f];
            dcz_model *m = NULL;
            if (dcz_open_memory(copy, len, NULL, &m) == DCZ_OK) {
                if (accepted++ < 3) fprintf(stderr, "  accepted flip 0x%02x at byte %zu\n", flips[f], i);
                dcz_close(m);
            }
            dcz_doc *r = NULL;
            if (dcz_doc_read(copy, len, &r) == DCZ_OK) { doc_accepted++; dcz_doc_free(r); }
        }
    }
    CHECK(accepted == 0, "%zu corrupted files loaded by the runtime", accepted);
    CHECK(doc_accepted == 0, "%zu corrupted files read by the toolchain", doc_accepted);
    size_t trunc_ok = 0;
    for (size_t n = 0; n < len; n++) {
        uint8_t *t = malloc(n ? n : 1); /* exact size: sanitizers see overreads */
        memcpy(t, buf, n);
        dcz_model *m = NULL;
        dcz_doc *r = NULL;
        if (dcz_open_memory(t, n, NULL, &m) == DCZ_OK) { trunc_ok++; dcz_close(m); }
        if (dcz_doc_read(t, n, &r) == DCZ_OK) { trunc_ok++; dcz_doc_free(r); }
        free(t);
    }
    CHECK(trunc_ok == 0, "%zu truncations accepted", trunc_ok);
    free(copy);
    free(buf);
    dcz_doc_free(d);
}

static void test_corruption_refused(void) { corruption_refused(small_doc()); }
static void test_conv_corruption_refused(void) { corruption_refused(conv_doc()); }

/* Installs an int8 calibration table into d over its n weighted layers
 * (per-channel weight scales: each channel's largest |w| as 127; the input
 * scales 0.01, 0.015, ...): 0 when it fails. */
static int calibrate_int8(dcz_doc *d, const uint32_t *weighted, uint32_t n)
{
    dcz_doc_calib *t = calloc(1, sizeof *t);
    t->scheme = DCZ_SCHEME_INT8;
    t->model_hash = 0x0123456789abcdefull;
    t->data_hash = 42;
    t->count = n;
    t->e = calloc(n, sizeof *t->e);
    for (uint32_t j = 0; j < n; j++) {
        const dcz_doc_tensor *w = &d->layers[weighted[j]].t[0];
        dcz_doc_calib_entry *e = &t->e[j];
        e->layer = weighted[j];
        e->in_scale = 0.01f + 0.005f * (float)j;
        e->nw = w->dims[0];
        e->w_scale = malloc(e->nw * sizeof *e->w_scale);
        for (uint32_t r = 0; r < e->nw; r++) {
            float m = 1e-3f;
            for (size_t i = r * (w->n / e->nw); i < (r + 1) * (w->n / e->nw); i++)
                if (fabsf(w->values[i]) > m) m = fabsf(w->values[i]);
            e->w_scale[r] = m / 127;
        }
    }
    return dcz_cal_install(d, t) == DCZ_OK;
}

/* conv_doc with an int8 calibration table (per-channel weight scales; the
 * dense conv3 becomes I8 on disk) */
static dcz_doc *calib_doc(void)
{
    dcz_doc *d = conv_doc();
    if (!d) return NULL;
    static const uint32_t weighted[4] = { 0, 3, 5, 8 };
    if (!calibrate_int8(d, weighted, 4)) { dcz_doc_free(d); return NULL; }
    return d;
}

/* A calibrated convolution two of whose channels' sums floats would not
 * hold (1,200 input channels of 3x3 windows at 12%, every kept weight +-1
 * at a scale of 1/127, so +-127: 1,300-odd of them a channel, past 2^24 /
 * 127^2), the other two thinned to a tenth of that, beside a small one:
 * where the CPU runs no integer shift form (AVX2, as capped on a machine
 * with more), the plan gives both the float shift form, the first with
 * its two channels by the integer taps; heap and static arenas give the
 * references' outputs. */
static void test_qconv_f32_over(void)
{
    dcz_doc *d;
    REQUIRE(dcz_doc_alloc(7, &d) == DCZ_OK, "alloc");
    set_input(d, 1200, 8, 8);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "wide", 1200, 4, 3, 1, 1, DCZ_ENC_CODEBOOK, 8, 1, DCZ_CODING_RAW);
    fill_weights(&l[0], 0.12);
    dcz_doc_tensor *w = &l[0].t[0];
    w->codebook[0] = 1.0f;
    w->codebook[1] = -1.0f;
    const size_t per = w->n / 4;
    for (size_t i = 0; i < w->n; i++) {
        if (i / per % 2 && w->mask[i] && rnd() % 10) w->mask[i] = 0;   /* channels 1 and 3 thinned */
        w->values[i] = w->mask[i] ? w->codebook[w->assign[i]] : 0.0f;
    }
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu");
    doc_conv_layer(&l[2], "small", 4, 8, 3, 1, 1, DCZ_ENC_CODEBOOK, 8, 4, DCZ_CODING_RAW);
    fill_weights(&l[2], 0.1);
    doc_plain_layer(&l[3], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[4], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&l[5], "fc", 8, 3, DCZ_ENC_F32, 0, 0, 0);
    fill_weights(&l[5], 1);
    doc_plain_layer(&l[6], DCZ_OP_SOFTMAX, "prob");
    static const uint32_t weighted[3] = { 0, 2, 5 };
    REQUIRE(calibrate_int8(d, weighted, 3), "calibrate");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_options o, r;
    dcz_options_init(&o);
    dcz_options_init(&r);
    o.device = r.device = DCZ_DEVICE_CPU;
    r.force_reference = 1;
    dcz_cpu capped;
    if (dcz_cpu_capped(DCZ_CAP_AVX2, &capped, NULL, 0) != DCZ_OK) {
        printf("SKIP test_qconv_f32_over: this CPU has no AVX2\n");
        free(buf);
        dcz_doc_free(d);
        return;
    }
    o.isa = DCZ_CAP_AVX2;
    dcz_model *m = NULL, *ref = NULL, *s = NULL;
    const dcz_status so = dcz_open_memory(buf, len, &o, &m), sr = dcz_open_memory(buf, len, &r, &ref);
    REQUIRE(so == DCZ_OK && sr == DCZ_OK, "open: %s, reference %s", dcz_status_str(so), dcz_status_str(sr));
    dcz_layer_desc dw, ds;
    REQUIRE(dcz_describe_layer(m, 0, &dw) == DCZ_OK && dcz_describe_layer(m, 2, &ds) == DCZ_OK, "describe");
    CHECK(strcmp(dw.kernel, "qconv2d_shift_f32 (integers)") == 0, "the wide layer runs %s", dw.kernel);
    CHECK(m->layers[0].qover && m->layers[0].qover[0] && !m->layers[0].qover[1] && m->layers[0].qover[2] &&
          !m->layers[0].qover[3], "the wide layer's channels past the bound");
    CHECK(strcmp(ds.kernel, "qconv2d_shift_f32 (integers)") == 0, "the small layer runs %s", ds.kernel);
    size_t need = 0;
    REQUIRE(dcz_plan(buf, len, &o, &need) == DCZ_OK, "plan");
    void *arena = malloc(need);
    REQUIRE(arena && dcz_open_static(buf, len, arena, need, &o, &s) == DCZ_OK, "open static");
    enum { B = 3 };
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = malloc(B * in * sizeof *x), *y = malloc(3 * B * out * sizeof *y);
    for (size_t i = 0; i < B * in; i++) x[i] = frand();
    CHECK(dcz_run(ref, x, B, y) == DCZ_OK && dcz_run(m, x, B, y + B * out) == DCZ_OK &&
              dcz_run(s, x, B, y + 2 * B * out) == DCZ_OK, "run");
    CHECK(memcmp(y, y + B * out, B * out * sizeof *y) == 0, "heap: not the references' outputs");
    CHECK(memcmp(y, y + 2 * B * out, B * out * sizeof *y) == 0, "static: not the references' outputs");
    dcz_close(m); dcz_close(ref); dcz_close(s);
    free(arena); free(x); free(y); free(buf);
    dcz_doc_free(d);
}

static void test_calib_round_trip(void)
{
    dcz_doc *d = calib_doc(), *r = NULL;
    REQUIRE(d, "calibrated doc");
    CHECK(d->layers[5].t[0].enc == DCZ_ENC_I8, "dense conv weight as I8");
    uint8_t *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read back");
    REQUIRE(r->calib && r->calib->count == 4 && r->calib->scheme == DCZ_SCHEME_INT8, "table read");
    CHECK(r->calib->model_hash == d->calib->model_hash && r->calib->data_hash == 42, "hashes");
    for (uint32_t j = 0; j < 4; j++) {
        CHECK(r->calib->e[j].nw == d->calib->e[j].nw && r->calib->e[j].layer == d->calib->e[j].layer,
              "entry %u", j);
        CHECK(memcmp(r->calib->e[j].w_scale, d->calib->e[j].w_scale, d->calib->e[j].nw * 4) == 0,
              "scales of entry %u", j);
    }
    same_tensor(&d->layers[5].t[0], &r->layers[5].t[0], "I8 weight");
    REQUIRE(dcz_doc_write(r, &buf2, &len2) == DCZ_OK, "rewrite");
    CHECK(len == len2 && memcmp(buf, buf2, len) == 0, "rewrite is not byte-identical");
    dcz_model *m = NULL;
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK && dcz_model_scheme(m) == DCZ_SCHEME_INT8,
          "runtime loads it as int8");
    if (m) {
        float x[2 * 11 * 9], y[3];
        for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = frand();
        CHECK(dcz_run(m, x, 1, y) == DCZ_OK && fabsf(y[0] + y[1] + y[2] - 1) < 1e-5f, "runs");
    }
    dcz_close(m);
    free(buf);
    free(buf2);
    dcz_doc_free(d);
    dcz_doc_free(r);
}

static void test_calib_corruption_refused(void) { corruption_refused(calib_doc()); }

/* A file whose CRCs are right but whose content lies must still be refused:
 * rewrite the header CRC after damaging a field. */

/* Rewrites every byte (xor 0x41) with checksums fixed: whatever loads must
 * run at batch 1 and 2 without touching memory it does not own. */
static void lies_with_valid_crc(dcz_doc *d)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    uint8_t *copy = malloc(len);
    size_t accepted_changes = 0;
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, buf, len);
        copy[i] ^= 0x41;
        fix_crcs(copy, len);
        dcz_model *m = NULL;
        if (dcz_open_memory(copy, len, NULL, &m) == DCZ_OK) {
            const size_t in = dcz_input_size(m), out = dcz_output_size(m);
            float *x = malloc(2 * in * sizeof *x), *y = malloc(2 * out * sizeof *y);
            for (size_t j = 0; j < 2 * in; j++) x[j] = frand();
            CHECK(dcz_run(m, x, 1, y) == DCZ_OK, "run after change at %zu", i);
            CHECK(dcz_run(m, x, 2, y) == DCZ_OK, "run batch 2 after change at %zu", i);
            accepted_changes++;
            free(x);
            free(y);
            dcz_close(m);
        }
        dcz_doc *r = NULL;
        if (dcz_doc_read(copy, len, &r) == DCZ_OK) dcz_doc_free(r);
    }
    /* changes inside weights and stage text are legitimate files */
    CHECK(accepted_changes < len, "everything accepted");
    free(copy);
    free(buf);
    dcz_doc_free(d);
}

static void test_lies_with_valid_crc(void) { lies_with_valid_crc(small_doc()); }
static void test_conv_lies_with_valid_crc(void) { lies_with_valid_crc(conv_doc()); }
static void test_calib_lies_with_valid_crc(void) { lies_with_valid_crc(calib_doc()); }

/* The PREPROCESS section: written and read back by the toolchain and the
 * runtime (dcz_model_preprocess) as recorded; a record a reader would
 * refuse is not written (channels other than the input's, a crop other
 * than its size, std 0, an input that is not (C, H, W)); a damaged one
 * (every field set out of its range, with valid CRCs) is refused by both
 * readers; corruption and lies elsewhere are caught as in any file. */
static dcz_doc *prep_doc(void)
{
    dcz_doc *d = conv_doc();   /* input (2, 11, 9) */
    if (!d) return NULL;
    d->input_dims[0] = 1;
    d->layers[0].attr[0] = 1;
    dcz_doc_tensor *w = &d->layers[0].t[0];
    w->dims[1] = 1;
    w->n = (size_t)w->dims[0] * 9;
    d->has_prep = 1;
    d->prep = (dcz_preprocess){ 12, 11, 9, 1, { 0.25f, 0, 0 }, { 0.5f, 1, 1 } };
    return d;
}

static void test_prep_section(void)
{
    dcz_doc *d = prep_doc();
    REQUIRE(d, "doc");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_doc *r = NULL;
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read");
    CHECK(r->has_prep && memcmp(&r->prep, &d->prep, sizeof r->prep) == 0, "the record read back");
    dcz_model *m = NULL;
    dcz_preprocess got;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    CHECK(dcz_model_preprocess(m, &got) == 1 && memcmp(&got, &d->prep, sizeof got) == 0, "the runtime's view");
    dcz_close(m);
    dcz_doc_free(r);
    /* the section's offset: the table entry of type 5 */
    size_t at = 0, size = 0;
    const uint32_t nsec = dcz_le32(buf + 24);
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *e = buf + 64 + 32 * i;
        if (dcz_le32(e) == DCZ_SEC_PREP) {
            at = dcz_le32(e + 8);
            size = dcz_le32(e + 16);
        }
    }
    REQUIRE(at && size == 24, "a section of 24 bytes (%zu)", size);
    static const struct { size_t off; uint32_t v; const char *what; } bad[] = {
        { 0, 70000, "resize" }, { 4, 0, "a crop of no height" }, { 4, 12, "a crop other than the input" },
        { 12, 2, "2 channels" }, { 12, 3, "3 channels of a gray input" }, { 20, 0, "std 0" },
        { 20, 0xbf800000u, "std -1" }, { 16, 0x7fc00000u, "a NaN mean" },
    };
    uint8_t *copy = malloc(len);
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        memcpy(copy, buf, len);
        dcz_put32(copy + at + bad[k].off, bad[k].v);
        fix_crcs(copy, len);
        CHECK(dcz_open_memory(copy, len, NULL, &m) == DCZ_ERR_FORMAT, "runtime accepted %s", bad[k].what);
        CHECK(dcz_doc_read(copy, len, &r) != DCZ_OK, "reader accepted %s", bad[k].what);
    }
    free(copy);
    free(buf);
    /* what a reader would refuse is not written */
    d->prep.channels = 3;
    CHECK(dcz_doc_write(d, &buf, &len) == DCZ_ERR_ARG, "3 channels for a gray input written");
    d->prep.channels = 1;
    d->prep.crop_w = 8;
    CHECK(dcz_doc_write(d, &buf, &len) == DCZ_ERR_ARG, "a crop of another width written");
    d->prep.crop_w = 9;
    d->prep.std[0] = 0;
    CHECK(dcz_doc_write(d, &buf, &len) == DCZ_ERR_ARG, "std 0 written");
    d->prep.std[0] = 0.5f;
    d->prep.crop_h = d->prep.crop_w = 0;
    CHECK(dcz_doc_write(d, &buf, &len) == DCZ_OK, "no crop: any size after resizing");
    free(buf);
    dcz_doc_free(d);
}

static void test_prep_corruption_refused(void) { corruption_refused(prep_doc()); }
static void test_prep_lies_with_valid_crc(void) { lies_with_valid_crc(prep_doc()); }

static void test_version_and_magic(void)
{
    dcz_doc *d = small_doc();
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_model *m = NULL;
    CHECK(buf[8] == DCZ_FMT_MAJOR && buf[9] == 0 && buf[10] == DCZ_FMT_MINOR, "version written");
    buf[8] = DCZ_FMT_MAJOR + 1;
    fix_crcs(buf, len);
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_ERR_VERSION, "major %d refused", DCZ_FMT_MAJOR + 1);
    buf[8] = 0;
    fix_crcs(buf, len);
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_ERR_VERSION, "major 0 refused");
    buf[8] = DCZ_FMT_MAJOR;
    buf[10] = 9; /* a newer minor is fine */
    fix_crcs(buf, len);
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "minor 9 accepted");
    dcz_close(m);
    m = NULL;
    buf[0] = 'X';
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_ERR_FORMAT && m == NULL, "magic");
    CHECK(dcz_open_memory(NULL, 0, NULL, &m) == DCZ_ERR_FORMAT, "null buffer");
    CHECK(dcz_open_file("/nonexistent/x.dcz", NULL, &m) == DCZ_ERR_IO, "missing file");
    dcz_options o;
    dcz_options_init(&o);
    o.device = DCZ_DEVICE_GPU;
    buf[0] = 0x89;
    /* a GPU: where one is (this build's backend and a device), the model on
     * it; else DCZ_ERR_DEVICE, and AUTO the CPU with a note only when the
     * backend looked for one */
    char why[192];
    const dcz_status have_gpu = dcz_device_probe(DCZ_DEVICE_GPU, why, sizeof why);
    CHECK(why[0] != '\0', "the probe says why");
    const dcz_status s = dcz_open_memory(buf, len, &o, &m);
    CHECK(s == have_gpu, "gpu: %s, the probe %s (%s)", dcz_status_str(s), dcz_status_str(have_gpu), why);
    CHECK(s != DCZ_OK || dcz_model_device(m) == DCZ_DEVICE_GPU, "placed on the GPU");
    dcz_close(m);
    m = NULL;
    o.device = DCZ_DEVICE_AUTO;
    REQUIRE(dcz_open_memory(buf, len, &o, &m) == DCZ_OK, "auto");
    const char *note = dcz_model_device_note(m);
#ifdef DCZ_CUDA
    CHECK(have_gpu == DCZ_OK ? dcz_model_device(m) == DCZ_DEVICE_GPU && !*note
                             : dcz_model_device(m) == DCZ_DEVICE_CPU && strstr(note, "running on the CPU"),
          "auto: device %d, note '%s'", (int)dcz_model_device(m), note);
#else
    CHECK(dcz_model_device(m) == DCZ_DEVICE_CPU && !*note, "auto without the backend: the CPU, no note");
#endif
    /* dcz_host_alloc's buffers, wherever the model runs: a run reads and
     * writes them as any other */
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *hx = dcz_host_alloc(m, 3 * in * sizeof *hx), *hy = dcz_host_alloc(m, 3 * out * sizeof *hy);
    float *ry = malloc(3 * out * sizeof *ry);
    REQUIRE(hx && hy && ry, "dcz_host_alloc");
    for (size_t i = 0; i < 3 * in; i++) hx[i] = (float)(i % 7) * 0.25f - 0.5f;
    for (size_t i = 0; i < 3 * out; i++) hy[i] = NAN;
    CHECK(dcz_run(m, hx, 3, hy) == DCZ_OK && dcz_run(m, hx, 3, ry) == DCZ_OK && memcmp(hy, ry, 3 * out * 4) == 0,
          "a run on dcz_host_alloc's buffers");
    dcz_host_free(m, hx);
    dcz_host_free(m, hy);
    dcz_host_free(m, NULL);
    free(ry);
    dcz_close(m);
    m = NULL;
    CHECK(dcz_device_probe(DCZ_DEVICE_CPU, why, sizeof why) == DCZ_OK, "the CPU is always there");
    CHECK(dcz_device_probe((dcz_device)7, why, sizeof why) == DCZ_ERR_ARG, "unknown device");
    o.device = (dcz_device)7;
    CHECK(dcz_open_memory(buf, len, &o, &m) == DCZ_ERR_ARG && !m, "unknown device refused");
    free(buf);
    dcz_doc_free(d);
}

/* An unknown optional section is skipped; an unknown required one refused. */
static void test_unknown_sections(void)
{
    dcz_doc *d = small_doc();
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    uint32_t ns = dcz_le32(buf + 24);
    uint8_t *last = buf + 64 + 32 * (ns - 1); /* the stage section */
    dcz_put32(last, 77);
    fix_crcs(buf, len);
    dcz_model *m = NULL;
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "optional unknown skipped");
    dcz_close(m);
    dcz_put32(last + 4, DCZ_SECF_REQUIRED);
    fix_crcs(buf, len);
    m = NULL;
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_ERR_UNSUPPORTED, "required unknown refused");
    free(buf);
    dcz_doc_free(d);
}

/* Where the bytes go (dcz_doc_parts): the writer's parts (from its layout)
 * and the reader's (from the section table) agree and sum to the file's
 * size, for files with records, a calibration table and preprocessing; a
 * document whose records are dropped (--strip) is written without the
 * STAGES section, every other part the same, smaller by that section, its
 * table entry and the padding that moved, and runs to the same outputs; an
 * unknown optional section counts as other. */
static int same_parts(const dcz_doc_parts *a, const dcz_doc_parts *b)
{
    return a->header == b->header && a->graph == b->graph && a->layers == b->layers &&
           a->nlayer_sections == b->nlayer_sections && a->stages == b->stages && a->calib == b->calib &&
           a->prep == b->prep && a->other == b->other && a->padding == b->padding;
}

static void parts_of(dcz_doc *d, const char *what)
{
    uint8_t *buf = NULL, *sbuf = NULL;
    size_t len = 0, slen = 0;
    dcz_doc *r = NULL, *sr = NULL;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "%s: write", what);
    const dcz_doc_parts full = d->parts;
    CHECK(dcz_doc_parts_total(&full) == len, "%s: writer's parts sum to %zu, the file has %zu", what,
          dcz_doc_parts_total(&full), len);
    CHECK(full.stages > 0 && full.graph > 0 && full.layers > 0, "%s: stages %zu graph %zu layers %zu", what,
          full.stages, full.graph, full.layers);
    CHECK(full.header == 64 + 32 * (size_t)dcz_le32(buf + 24), "%s: header and table %zu", what, full.header);
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "%s: read", what);
    CHECK(same_parts(&r->parts, &full), "%s: the reader's parts differ from the writer's", what);
    CHECK(r->parts.layers + r->overhead_bytes == len, "%s: layers %zu + overhead %zu != %zu", what,
          r->parts.layers, r->overhead_bytes, len);
    /* stripped */
    dcz_doc_clear_stages(r);
    REQUIRE(dcz_doc_write(r, &sbuf, &slen) == DCZ_OK, "%s: write stripped", what);
    const dcz_doc_parts st = r->parts;
    CHECK(st.stages == 0 && dcz_doc_parts_total(&st) == slen, "%s: stripped parts", what);
    CHECK(st.graph == full.graph && st.layers == full.layers && st.calib == full.calib && st.prep == full.prep &&
          st.header + 32 == full.header, "%s: stripping changed more than the records", what);
    CHECK(slen + full.stages + 32 + full.padding - st.padding == len, "%s: stripped %zu bytes, full %zu", what, slen,
          len);
    REQUIRE(dcz_doc_read(sbuf, slen, &sr) == DCZ_OK, "%s: read stripped", what);
    CHECK(sr->nstages == 0 && same_parts(&sr->parts, &st), "%s: stripped file read back", what);
    /* the same model: the runtime gives the same outputs, bit for bit */
    dcz_model *m1 = NULL, *m2 = NULL;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m1) == DCZ_OK && dcz_open_memory(sbuf, slen, NULL, &m2) == DCZ_OK,
            "%s: open", what);
    const size_t in = dcz_input_size(m1), out = dcz_output_size(m1);
    float *x = malloc(3 * in * sizeof *x), *y1 = malloc(3 * out * sizeof *y1), *y2 = malloc(3 * out * sizeof *y2);
    for (size_t i = 0; i < 3 * in; i++) x[i] = (float)((i * 7919) % 101) / 50.0f - 1.0f;
    CHECK(dcz_run(m1, x, 3, y1) == DCZ_OK && dcz_run(m2, x, 3, y2) == DCZ_OK &&
          memcmp(y1, y2, 3 * out * sizeof *y1) == 0, "%s: the stripped file runs otherwise", what);
    dcz_close(m1);
    dcz_close(m2);
    free(x);
    free(y1);
    free(y2);
    free(buf);
    free(sbuf);
    dcz_doc_free(r);
    dcz_doc_free(sr);
    dcz_doc_free(d);
}

/* An f16 codebook and 8-bit biases (format 2.2) store the model the
 * rounding gives: written that way, read back to those very values and
 * run by libdcz to the bits of the same values written as f32; smaller by
 * two bytes a codebook entry and three a bias (padding aside); a codebook
 * format past f16 refused. */
static void compact_of(dcz_doc *d, const char *what)
{
    REQUIRE(d, "%s: build", what);
    size_t entries = 0, biases = 0, nbias = 0;
    uint32_t first_k = 0;
    for (uint32_t i = 0; i < d->nlayers; i++) {
        dcz_doc_layer *l = &d->layers[i];
        if (l->ntensors != 2) continue;
        nbias++;
        if (dcz_doc_tensor_codebook_f16(&l->t[0])) {
            entries += l->t[0].k;
            if (!first_k) first_k = l->t[0].k;
        }
        REQUIRE(dcz_doc_tensor_to_i8(&l->t[1]) == DCZ_OK, "%s: i8 bias", what);
        biases += l->t[1].n;
    }
    CHECK(entries > 0 && biases > 0, "%s: %zu entries, %zu biases", what, entries, biases);
    uint8_t *buf = NULL, *wide = NULL;
    size_t len = 0, wlen = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "%s: write compact", what);
    const size_t compact_layers = d->parts.layers;
    dcz_doc *r = NULL;
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "%s: read compact", what);
    for (uint32_t i = 0; i < d->nlayers; i++)
        for (uint32_t t = 0; t < d->layers[i].ntensors; t++) {
            char name[DCZ_MAX_NAME + 64];
            snprintf(name, sizeof name, "%s %s tensor %u", what, d->layers[i].name, t);
            same_tensor(&d->layers[i].t[t], &r->layers[i].t[t], name);
        }
    /* the same values stored wide */
    for (uint32_t i = 0; i < d->nlayers; i++) {
        dcz_doc_layer *l = &d->layers[i];
        if (l->ntensors != 2) continue;
        l->t[0].codebook_f16 = 0;
        l->t[1].enc = DCZ_ENC_F32;
    }
    REQUIRE(dcz_doc_write(d, &wide, &wlen) == DCZ_OK, "%s: write wide", what);
    /* an I8 bias costs its scale and count (8 bytes); records pad to 4 */
    CHECK(d->parts.layers + 8 * nbias + 6 * nbias >= compact_layers + 2 * entries + 3 * biases &&
          d->parts.layers > compact_layers, "%s: layers %zu compact, %zu wide, %zu entries, %zu biases", what,
          compact_layers, d->parts.layers, entries, biases);
    dcz_model *m1 = NULL, *m2 = NULL;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m1) == DCZ_OK && dcz_open_memory(wide, wlen, NULL, &m2) == DCZ_OK,
            "%s: open", what);
    const size_t in = dcz_input_size(m1), out = dcz_output_size(m1);
    float *x = malloc(3 * in * sizeof *x), *y1 = malloc(3 * out * sizeof *y1), *y2 = malloc(3 * out * sizeof *y2);
    for (size_t i = 0; i < 3 * in; i++) x[i] = (float)((i * 7919) % 101) / 50.0f - 1.0f;
    CHECK(dcz_run(m1, x, 3, y1) == DCZ_OK && dcz_run(m2, x, 3, y2) == DCZ_OK &&
          memcmp(y1, y2, 3 * out * sizeof *y1) == 0, "%s: the compact file runs otherwise", what);
    dcz_close(m1);
    dcz_close(m2);
    /* a codebook format of 2 is no format */
    size_t field = 0;   /* of the first CODEBOOK record: after its header, nnz .. k */
    for (size_t i = 0; i + 64 < len && !field; i += 4) {
        const uint32_t rank = dcz_le32(buf + i + 4);
        if (dcz_le32(buf + i) != DCZ_ENC_CODEBOOK || rank < 1 || rank > 4) continue;
        const size_t f = i + 8 + 4 * rank + 4 + 4 + 4 + 1 + 1 + 1 + 1 + 2;
        if (f + 2 < len && buf[f] == DCZ_CODEBOOK_F16 && buf[f + 1] == 0 &&
            (uint32_t)(buf[f - 2] | buf[f - 1] << 8) == first_k)
            field = f;
    }
    REQUIRE(field, "%s: the codebook format field of a CODEBOOK record", what);
    buf[field] = 2;
    fix_crcs(buf, len);
    dcz_doc *bad = NULL;
    CHECK(dcz_doc_read(buf, len, &bad) == DCZ_ERR_FORMAT && dcz_open_memory(buf, len, NULL, &m1) == DCZ_ERR_FORMAT,
          "%s: codebook format 2 not refused", what);
    free(x);
    free(y1);
    free(y2);
    free(buf);
    free(wide);
    dcz_doc_free(r);
    dcz_doc_free(d);
}

static void test_compact(void)
{
    compact_of(small_doc(), "small");
    compact_of(conv_doc(), "conv");
}

static void test_parts(void)
{
    parts_of(small_doc(), "small");
    parts_of(conv_doc(), "conv");
    dcz_doc *c = calib_doc();
    if (c) dcz_doc_add_stage(c, "stage = calibrate\n");
    parts_of(c, "calibrated");
    dcz_doc *p = prep_doc();
    if (p) dcz_doc_add_stage(p, "stage = import\n");
    parts_of(p, "preprocessing");
    /* an optional section of a type this reader does not know: other */
    dcz_doc *d = small_doc(), *r = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    const size_t stages = d->parts.stages;
    dcz_put32(buf + 64 + 32 * (dcz_le32(buf + 24) - 1), 77);   /* the last section: the records */
    fix_crcs(buf, len);
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read with an unknown section");
    CHECK(r->parts.other == stages && r->parts.stages == 0 && dcz_doc_parts_total(&r->parts) == len,
          "unknown section: other %zu stages %zu", r->parts.other, r->parts.stages);
    free(buf);
    dcz_doc_free(d);
    dcz_doc_free(r);
}

/* Two layers may not share a parameter section: a small file could
 * otherwise make the loader expand the same weights again and again. */
static void test_shared_param_section(void)
{
    dcz_doc *d;
    REQUIRE(dcz_doc_alloc(2, &d) == DCZ_OK, "alloc");
    d->input_rank = 1;
    d->input_dims[0] = 6;
    make_dense_layer(&d->layers[0], "a", 6, 6, DCZ_ENC_F32, 1, 0, 0, 0);
    make_dense_layer(&d->layers[1], "b", 6, 6, DCZ_ENC_F32, 1, 0, 0, 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    /* walk the graph section (section 0) to the second record's param_section */
    uint64_t g = dcz_le32(buf + 64 + 8);
    size_t at = (size_t)g + 4 + 4 + 4 * dcz_le32(buf + g + 4);
    for (int rec = 0; rec < 2; rec++) {
        size_t name_len = (size_t)(buf[at + 2] | buf[at + 3] << 8);
        at += 4 + name_len;
        at += 4 + 4 * (size_t)dcz_le32(buf + at);   /* the inputs */
        size_t nattr = dcz_le32(buf + at);
        at += 4 + 4 * nattr;
        if (rec == 1) {
            CHECK(dcz_le32(buf + at) == 2, "second layer's section is %u", dcz_le32(buf + at));
            dcz_put32(buf + at, 1);
        }
        at += 4;
    }
    fix_crcs(buf, len);
    dcz_model *m = NULL;
    dcz_doc *r = NULL;
    CHECK(dcz_open_memory(buf, len, NULL, &m) == DCZ_ERR_FORMAT, "shared section loaded");
    CHECK(dcz_doc_read(buf, len, &r) == DCZ_ERR_FORMAT, "shared section read");
    dcz_close(m);
    dcz_doc_free(r);
    free(buf);
    dcz_doc_free(d);
}

static void test_f16(void)
{
    const float vals[] = { 0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 1e-7f, 6.1e-5f, 3.14159f, 1e6f };
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        float r = dcz_f16_to_f32(dcz_f32_to_f16(vals[i]));
        float tol = fabsf(vals[i]) * 1e-3f + 6e-8f;
        if (vals[i] > 65504.0f) CHECK(isinf(r), "overflow to inf");
        else CHECK(fabsf(r - vals[i]) <= tol, "%g -> %g", vals[i], r);
    }
    /* every half converts back to itself */
    size_t bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN payloads */
        if (dcz_f32_to_f16(dcz_f16_to_f32((uint16_t)h)) != h) bad++;
    }
    CHECK(bad == 0, "%zu halves do not round trip", bad);
}

/* ---- graphs ------------------------------------------------------------------ */

/* Layer l reads the tensors listed (0 the input, j + 1 layer j's output). */
static void reads(dcz_doc_layer *l, uint32_t nin, const uint32_t *in)
{
    l->nin = nin;
    for (uint32_t k = 0; k < nin; k++) l->in[k] = in[k];
}

/* (2, side, side), side even: conv a 3x3 (codebook) -> relu -> conv b 3x3
 * (sparse f32), a 1x1 projection of the input (dense f32), their ADD
 * (residual); squeeze and excitation of the sum: gap -> dense 4 -> 4 -> MUL
 * per channel; a CONCAT of that with conv a's output (read again far
 * below) -> maxpool 2 -> flatten -> dense 8 (side / 2)^2 -> 5 -> softmax. */
static dcz_doc *dag_doc_sized(uint32_t side)
{
    dcz_doc *d;
    if (dcz_doc_alloc(13, &d) != DCZ_OK) return NULL;
    set_input(d, 2, side, side);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conva", 2, 4, 3, 1, 1, DCZ_ENC_CODEBOOK, 3, 3, DCZ_CODING_HUFFMAN);
    fill_weights(&l[0], 0.6);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu");
    doc_conv_layer(&l[2], "convb", 4, 4, 3, 1, 1, DCZ_ENC_SPARSE_F32, 4, 0, DCZ_CODING_RAW);
    fill_weights(&l[2], 0.5);
    doc_conv_layer(&l[3], "proj", 2, 4, 1, 1, 0, DCZ_ENC_F32, 0, 0, 0);
    fill_weights(&l[3], 1);
    reads(&l[3], 1, (const uint32_t[]){ 0 });
    doc_plain_layer(&l[4], DCZ_OP_ADD, "add");
    reads(&l[4], 2, (const uint32_t[]){ 3, 4 });
    doc_plain_layer(&l[5], DCZ_OP_GLOBAL_AVGPOOL, "squeeze");
    doc_dense_layer(&l[6], "excite", 4, 4, DCZ_ENC_F32, 0, 0, 0);
    fill_weights(&l[6], 1);
    doc_plain_layer(&l[7], DCZ_OP_MUL, "scale");
    reads(&l[7], 2, (const uint32_t[]){ 5, 7 });
    doc_plain_layer(&l[8], DCZ_OP_CONCAT, "cat");
    reads(&l[8], 2, (const uint32_t[]){ 8, 1 });
    doc_pool_layer(&l[9], DCZ_OP_MAXPOOL, "pool", 2, 2, 0, 0);
    doc_plain_layer(&l[10], DCZ_OP_FLATTEN, "flatten");
    doc_dense_layer(&l[11], "fc", 8 * (side / 2) * (side / 2), 5, DCZ_ENC_CODEBOOK, 5, 4, DCZ_CODING_RAW);
    fill_weights(&l[11], 0.7);
    doc_plain_layer(&l[12], DCZ_OP_SOFTMAX, "prob");
    for (uint32_t i = 0; i < d->nlayers; i++)
        if (l[i].ntensors)
            for (uint32_t j = 0; j < l[i].t[1].n; j++) l[i].t[1].values[j] = frand();
    return d;
}

static dcz_doc *dag_doc(void) { return dag_doc_sized(6); }

/* Layer l becomes activation op with float attributes a. */
static void activation(dcz_doc_layer *l, uint16_t op, const char *name, uint32_t nattr, const float *a)
{
    doc_plain_layer(l, op, name);
    l->nattr = nattr;
    for (uint32_t k = 0; k < nattr; k++) l->attr[k] = dcz_f32_attr(a[k]);
}

/* An inverted residual block, as MobileNetV2 has it, and every activation:
 * (4, 6, 6) -> 1x1 expand to 8 (codebook) -> CLIP [0, 6] -> depthwise 3x3
 * (group 8, sparse f32) -> HARD_SWISH -> 1x1 project to 4 (f16) -> ADD the
 * input; gap -> dense -> HARD_SIGMOID -> MUL per channel -> LEAKY_RELU ->
 * grouped 3x3 stride 2 (group 2, codebook) -> SILU -> SIGMOID -> TANH ->
 * flatten -> dense (codebook) -> softmax */
static dcz_doc *mobile_doc(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(18, &d) != DCZ_OK) return NULL;
    set_input(d, 4, 6, 6);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "expand", 4, 8, 1, 1, 0, DCZ_ENC_CODEBOOK, 2, 4, DCZ_CODING_HUFFMAN);
    fill_weights(&l[0], 0.8);
    activation(&l[1], DCZ_OP_CLIP, "relu6", 2, (const float[]){ 0.0f, 6.0f });
    doc_conv_layer(&l[2], "dw", 8, 8, 3, 1, 1, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW);
    doc_conv_groups(&l[2], 8);
    fill_weights(&l[2], 0.7);
    activation(&l[3], DCZ_OP_HARD_SWISH, "hswish", 0, NULL);
    doc_conv_layer(&l[4], "project", 8, 4, 1, 1, 0, DCZ_ENC_F16, 0, 0, 0);
    fill_weights(&l[4], 1);
    doc_plain_layer(&l[5], DCZ_OP_ADD, "add");
    reads(&l[5], 2, (const uint32_t[]){ 5, 0 });
    doc_plain_layer(&l[6], DCZ_OP_GLOBAL_AVGPOOL, "squeeze");
    doc_dense_layer(&l[7], "excite", 4, 4, DCZ_ENC_F32, 0, 0, 0);
    fill_weights(&l[7], 1);
    activation(&l[8], DCZ_OP_HARD_SIGMOID, "gate", 2, (const float[]){ 1.0f / 6, 0.5f });
    doc_plain_layer(&l[9], DCZ_OP_MUL, "scale");
    reads(&l[9], 2, (const uint32_t[]){ 6, 9 });
    activation(&l[10], DCZ_OP_LEAKY_RELU, "leaky", 1, (const float[]){ 0.1f });
    doc_conv_layer(&l[11], "grouped", 4, 6, 3, 2, 1, DCZ_ENC_CODEBOOK, 3, 3, DCZ_CODING_RAW);
    doc_conv_groups(&l[11], 2);
    fill_weights(&l[11], 0.6);
    activation(&l[12], DCZ_OP_SILU, "silu", 0, NULL);
    activation(&l[13], DCZ_OP_SIGMOID, "sigmoid", 0, NULL);
    activation(&l[14], DCZ_OP_TANH, "tanh", 0, NULL);
    doc_plain_layer(&l[15], DCZ_OP_FLATTEN, "flatten");
    doc_dense_layer(&l[16], "fc", 54, 5, DCZ_ENC_CODEBOOK, 5, 4, DCZ_CODING_HUFFMAN);
    fill_weights(&l[16], 0.7);
    doc_plain_layer(&l[17], DCZ_OP_SOFTMAX, "prob");
    for (uint32_t i = 0; i < d->nlayers; i++)
        if (l[i].ntensors)
            for (uint32_t j = 0; j < l[i].t[1].n; j++) l[i].t[1].values[j] = frand();
    return d;
}

/* ShuffleNet's moves: (8, 4, 4) -> 1x1 conv (codebook) -> CHANNEL_SHUFFLE
 * of 2 -> SLICE 0..2 and SLICE 3..7 -> relu of the second -> CONCAT ->
 * CHANNEL_SHUFFLE of 4 -> SLICE 2..5 -> flatten -> dense (codebook) ->
 * softmax */
static dcz_doc *shuffle_doc(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(11, &d) != DCZ_OK) return NULL;
    set_input(d, 8, 4, 4);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv", 8, 8, 1, 1, 0, DCZ_ENC_CODEBOOK, 3, 4, DCZ_CODING_HUFFMAN);
    fill_weights(&l[0], 0.8);
    doc_gather_layer(&l[1], "shuffle", 2, 0);
    doc_gather_layer(&l[2], "part1", 0, 3);
    doc_gather_layer(&l[3], "part2", 3, 5);
    reads(&l[3], 1, (const uint32_t[]){ 2 });
    doc_plain_layer(&l[4], DCZ_OP_RELU, "relu");
    doc_plain_layer(&l[5], DCZ_OP_CONCAT, "cat");
    reads(&l[5], 2, (const uint32_t[]){ 3, 5 });
    doc_gather_layer(&l[6], "shuffle2", 4, 0);
    doc_gather_layer(&l[7], "part3", 2, 4);
    doc_plain_layer(&l[8], DCZ_OP_FLATTEN, "flatten");
    doc_dense_layer(&l[9], "fc", 64, 5, DCZ_ENC_CODEBOOK, 5, 4, DCZ_CODING_RAW);
    fill_weights(&l[9], 0.7);
    doc_plain_layer(&l[10], DCZ_OP_SOFTMAX, "prob");
    for (uint32_t i = 0; i < d->nlayers; i++)
        if (l[i].ntensors)
            for (uint32_t j = 0; j < l[i].t[1].n; j++) l[i].t[1].values[j] = frand();
    return d;
}

/* CHANNEL_SHUFFLE and SLICE: their attribute limits and shape rules, and
 * a network of them through the container, run as the definition says
 * (and with the reference kernels forced). */
static void test_shuffle_runtime_matches_reference(void)
{
    const dcz_shape chw = { 3, { 6, 2, 3, 0 } }, flat = { 1, { 6, 0, 0, 0 } }, r2 = { 2, { 6, 2, 0, 0 } };
    dcz_shape out;
    int p;
    const int32_t g3[1] = { 3 }, g4[1] = { 4 }, g0[1] = { 0 }, s15[2] = { 1, 5 }, s25[2] = { 2, 5 },
                  s0[2] = { 0, 0 }, neg[2] = { -1, 2 };
    CHECK(dcz_op_check(DCZ_OP_CHANNEL_SHUFFLE, g3, 1, &p) == DCZ_OK && !p, "shuffle: no parameters");
    CHECK(dcz_op_check(DCZ_OP_CHANNEL_SHUFFLE, g0, 1, &p) == DCZ_ERR_FORMAT, "shuffle of 0 groups");
    CHECK(dcz_op_check(DCZ_OP_CHANNEL_SHUFFLE, g3, 2, &p) == DCZ_ERR_FORMAT, "shuffle with 2 attributes");
    CHECK(dcz_op_check(DCZ_OP_SLICE, s15, 2, &p) == DCZ_OK, "slice 1, 5");
    CHECK(dcz_op_check(DCZ_OP_SLICE, s0, 2, &p) == DCZ_ERR_FORMAT, "slice of no channel");
    CHECK(dcz_op_check(DCZ_OP_SLICE, neg, 2, &p) == DCZ_ERR_FORMAT, "slice from -1");
    CHECK(dcz_op_shape(DCZ_OP_CHANNEL_SHUFFLE, g3, 1, &chw, 1, &out) == DCZ_OK && dcz_shape_is(&out, 3, chw.dims),
          "shuffle keeps the shape");
    CHECK(dcz_op_shape(DCZ_OP_CHANNEL_SHUFFLE, g3, 1, &flat, 1, &out) == DCZ_OK, "shuffle of (C)");
    CHECK(dcz_op_shape(DCZ_OP_CHANNEL_SHUFFLE, g4, 1, &chw, 1, &out) == DCZ_ERR_SHAPE, "4 groups of 6 channels");
    CHECK(dcz_op_shape(DCZ_OP_CHANNEL_SHUFFLE, g3, 1, &r2, 1, &out) == DCZ_ERR_SHAPE, "shuffle of rank 2");
    CHECK(dcz_op_shape(DCZ_OP_SLICE, s15, 2, &chw, 1, &out) == DCZ_OK && out.rank == 3 && out.dims[0] == 5 &&
          out.dims[2] == 3, "slice (5, 2, 3)");
    CHECK(dcz_op_shape(DCZ_OP_SLICE, s25, 2, &chw, 1, &out) == DCZ_ERR_SHAPE, "slice past the channels");
    CHECK(dcz_op_shape(DCZ_OP_SLICE, s15, 2, &flat, 1, &out) == DCZ_OK && out.dims[0] == 5, "slice of (C)");
    uint32_t start, groups;
    CHECK(dcz_op_gather(DCZ_OP_SLICE, s25, &start, &groups) && start == 2 && groups == 1, "slice gathers");
    CHECK(dcz_op_gather(DCZ_OP_CHANNEL_SHUFFLE, g3, &start, &groups) && start == 0 && groups == 3, "shuffle gathers");
    CHECK(!dcz_op_gather(DCZ_OP_RELU, g3, &start, &groups), "relu gathers nothing");

    dcz_doc *d = shuffle_doc();
    REQUIRE(d, "alloc");
    runtime_matches_reference(d, "channel shuffles and slices");
    dcz_doc_free(d);
}

static void test_mobile_runtime_matches_reference(void)
{
    dcz_doc *d = mobile_doc();
    REQUIRE(d, "alloc");
    runtime_matches_reference(d, "inverted residual");
    dcz_doc_free(d);
}

/* Squeeze-and-excitation as torchvision writes it: (8, 6, 6) -> conv 3x3
 * (f32) -> relu -> gap -> 1x1 conv 8 -> 4 -> relu -> 1x1 conv 4 -> 8 ->
 * hard sigmoid -> mul by the relu's planes -> gap -> flatten, the two 1x1
 * convolutions dense (f32) or compressed (codebook, half the weights
 * kept). The two 1x1 convolutions of one input cell run on the fully
 * connected layers' kernels (their vectors over output channels), the
 * first with its ReLU fused, the Mul runs over the planes it scales, and
 * the net gives the bits of the references forced (the direct
 * convolution's), at batch 1 and in a batch; compressed, the compressed
 * fully connected kernels, whose sums at batch 1 may differ in their last
 * bits: within 1e-5 of the references. */
static void squeeze_excite_case(int compressed)
{
    dcz_doc *d;
    REQUIRE(dcz_doc_alloc(10, &d) == DCZ_OK, "alloc");
    set_input(d, 8, 6, 6);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv", 8, 8, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    fill_weights(&l[0], 1);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu");
    doc_plain_layer(&l[2], DCZ_OP_GLOBAL_AVGPOOL, "squeeze");
    const uint32_t enc = compressed ? DCZ_ENC_CODEBOOK : DCZ_ENC_F32;
    const unsigned ib = compressed ? 4 : 0, gap = compressed ? 3 : 0;
    const uint8_t coding = compressed ? DCZ_CODING_HUFFMAN : 0;
    const double density = compressed ? 0.5 : 1;
    doc_conv_layer(&l[3], "fc1", 8, 4, 1, 1, 0, enc, gap, ib, coding);
    fill_weights(&l[3], density);
    doc_plain_layer(&l[4], DCZ_OP_RELU, "relu2");
    doc_conv_layer(&l[5], "fc2", 4, 8, 1, 1, 0, enc, gap, ib, coding);
    fill_weights(&l[5], density);
    activation(&l[6], DCZ_OP_HARD_SIGMOID, "gate", 2, (const float[]){ 1.0f / 6.0f, 0.5f });
    doc_plain_layer(&l[7], DCZ_OP_MUL, "scale");
    reads(&l[7], 2, (const uint32_t[]){ 2, 7 });
    doc_plain_layer(&l[8], DCZ_OP_GLOBAL_AVGPOOL, "pool");
    doc_plain_layer(&l[9], DCZ_OP_FLATTEN, "flatten");
    for (uint32_t i = 0; i < d->nlayers; i++)
        if (l[i].ntensors)
            for (uint32_t j = 0; j < l[i].t[1].n; j++) l[i].t[1].values[j] = frand();
    uint8_t *buf = NULL;
    size_t len = 0;
    const dcz_status ws = dcz_doc_write(d, &buf, &len);
    dcz_doc_free(d);
    REQUIRE(ws == DCZ_OK, "write: %s", dcz_status_str(ws));
    dcz_model *m = NULL, *r = NULL;
    dcz_options ro;
    dcz_options_init(&ro);
    ro.force_reference = 1;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK && dcz_open_memory(buf, len, &ro, &r) == DCZ_OK, "open");
    for (uint32_t i = 3; i <= 5; i += 2)
        CHECK(compressed ? m->layers[i].kernel == DCZ_K_FC_CODEBOOK
                         : m->layers[i].kernel == DCZ_K_FC_GEMM || m->layers[i].kernel == DCZ_K_FC_ROWS,
              "%s: %s, not a fully connected kernel", m->layers[i].name, dcz_kernel_name((dcz_kernel)m->layers[i].kernel));
    CHECK(m->layers[0].kernel != DCZ_K_FC_GEMM && m->layers[0].kernel != DCZ_K_FC_ROWS, "the 3x3 conv: %s",
          dcz_kernel_name((dcz_kernel)m->layers[0].kernel));
    CHECK(m->layers[4].fused == DCZ_FUSED_ACT && m->layers[3].act.op == DCZ_OP_RELU, "fc1 takes its relu");
    /* the gate's Mul, the last reader of the tensor it scales, writes over it */
    CHECK(m->layers[7].tin[0] == 2 && m->tensors[8].inner == m->tensors[2].inner && m->tensors[8].off == m->tensors[2].off,
          "the Mul not in its input's place");
    enum { B = 4 };
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = malloc(B * in * sizeof *x), *y = malloc(B * out * sizeof *y), *yr = malloc(B * out * sizeof *yr);
    REQUIRE(x && y && yr, "out of memory");
    for (size_t i = 0; i < B * in; i++) x[i] = frand();
    for (size_t b = 1; b <= B; b += B - 1) {
        CHECK(dcz_run(m, x, b, y) == DCZ_OK && dcz_run(r, x, b, yr) == DCZ_OK, "run batch %zu", b);
        if (!compressed) {
            CHECK(memcmp(y, yr, b * out * sizeof *y) == 0, "batch %zu: other bits than the references'", b);
            continue;
        }
        size_t off = 0;
        for (size_t i = 0; i < b * out; i++) off += !(fabsf(y[i] - yr[i]) <= 1e-5f * (1.0f + fabsf(yr[i])));
        CHECK(off == 0, "compressed, batch %zu: %zu outputs off the references'", b, off);
    }
    free(x); free(y); free(yr);
    dcz_close(m);
    dcz_close(r);
    free(buf);
}

static void test_squeeze_excite_as_fc(void)
{
    squeeze_excite_case(0);
    squeeze_excite_case(1);
}

/* The place plan of m holds: two tensors of one block whose places
 * overlap are never alive together, the later one written in place over the
 * earlier aside. Alive: an inner tensor from its layer to its last reader;
 * any other from its layer's segment to the end of its last reader's (run
 * by chunks, a segment has every layer at work on some sample meanwhile). */
static void check_places(const dcz_model *m, const char *what)
{
    const dcz_tensor *t = m->tensors;
    const uint32_t n = m->nlayers;
    for (uint32_t a = 1; a <= n; a++)
        for (uint32_t b = a + 1; b <= n; b++) {
            if (t[a].inner != t[b].inner || t[a].off + t[a].width <= t[b].off ||
                t[b].off + t[b].width <= t[a].off)
                continue;
            if (t[b].share == a && t[a].last == b - 1) continue;   /* in place */
            const uint32_t last = t[a].last;
            const int apart = t[a].inner ? last < b - 1
                                         : last < n && t[last + 1].seg_last < t[b].seg_first;
            CHECK(apart, "%s: tensor %u takes the place of tensor %u, alive until layer %u", what, b, a, last);
        }
}

/* The same at batch 1 in a run that fuses, where each tensor a CONCAT
 * hosts lies in its place (load.c, place_concats): alive from the layer
 * writing it (writer) to its last reader, a hosting CONCAT from its from, each in
 * its outermost host's block; a tensor and the CONCAT it lies in (at any
 * depth) aside. Returns the tensors hosted. */
static uint64_t place1(const dcz_tensor *t, uint32_t v)
{
    return t[v].host ? place1(t, t[v].host) + t[v].host_at : t[v].off;
}

static int lies_in(const dcz_tensor *t, uint32_t a, uint32_t v)
{
    for (; a; a = t[a].host)
        if (a == v) return 1;
    return 0;
}

/* the block a tensor lies in at batch 1: its outermost host's */
static int block1(const dcz_tensor *t, uint32_t v)
{
    while (t[v].host) v = t[v].host;
    return t[v].inner;
}

/* the layer that writes tensor v: a depthwise layer's run by bands by the
 * pointwise one, a fused ADD's by the convolution before */
static uint32_t writer(const dcz_model *m, uint32_t v)
{
    const dcz_exec_layer *l = &m->layers[v - 1];
    if (l->fused == DCZ_FUSED_ADD) return v - 2;
    if (l->fused == DCZ_FUSED_BANDS)
        for (uint32_t i = 0; i < v - 1; i++)
            if (m->layers[i].band == v - 1) return i;
    return v - 1;
}

static uint32_t check_places1(const dcz_model *m, const char *what)
{
    const dcz_tensor *t = m->tensors;
    const uint32_t n = m->nlayers;
    uint32_t hosted = 0;
    for (uint32_t a = 1; a <= n; a++) {
        hosted += t[a].host != 0;
        if (t[a].host) {
            const uint32_t v = t[a].host;
            CHECK(v > a && m->layers[v - 1].op == DCZ_OP_CONCAT &&
                  m->layers[v - 1].fused == DCZ_FUSED_CONCAT && t[v].from <= writer(m, a) &&
                  t[a].host_at + t[a].width <= t[v].width, "%s: tensor %u in the place of %u", what, a, v);
        }
        for (uint32_t b = a + 1; b <= n; b++) {
            const uint64_t pa = place1(t, a), pb = place1(t, b);
            if (block1(t, a) != block1(t, b) || pa + t[a].width <= pb || pb + t[b].width <= pa) continue;
            if (lies_in(t, a, b) || lies_in(t, b, a)) continue;
            if (t[b].share == a && t[a].last == b - 1) continue;   /* in place */
            const uint32_t from = writer(m, b) < t[b].from ? writer(m, b) : t[b].from;
            CHECK(t[a].last < from, "%s, batch 1: tensor %u takes the place of tensor %u, alive until layer %u",
                  what, b, a, t[a].last);
        }
    }
    return hosted;
}

static void test_dag_runtime_matches_reference(void)
{
    dcz_doc *d = dag_doc();
    REQUIRE(d, "alloc");
    runtime_matches_reference(d, "dag");
    /* places are reused: fewer floats than every tensor would take, and a
     * chain takes two places */
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_model *m = NULL;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    uint64_t all = 0;
    uint32_t opened = 0;
    for (uint32_t t = 1; t <= m->nlayers; t++) {
        all += m->tensors[t].width;
        opened += m->tensors[t].slot == t;
    }
    CHECK(m->act_width + m->chunk_width < all && opened <= m->nlayers / 2,
          "dag: %u places, %llu + %llu floats a sample of %llu", opened, (unsigned long long)m->act_width,
          (unsigned long long)m->chunk_width, (unsigned long long)all);
    check_places(m, "dag");
    /* at batch 1 its Concat hosts both inputs (the Mul's output, with the
     * Add and the convolution it was written in place over, and conv a's),
     * and copies nothing */
    const uint32_t cat = 9;
    CHECK(m->layers[cat - 1].op == DCZ_OP_CONCAT && m->layers[cat - 1].fused == DCZ_FUSED_CONCAT &&
          m->tensors[8].host == cat && m->tensors[8].host_at == 0 && m->tensors[1].host == cat &&
          m->tensors[1].host_at == m->tensors[8].width && m->tensors[5].host == cat && m->tensors[3].host == cat,
          "dag: the Concat does not host its inputs");
    CHECK(check_places1(m, "dag") == 4, "dag: %u tensors hosted", check_places1(m, "dag"));
    /* the output of conv a lives until the concat: nothing else shares its
     * place before (in its block) */
    const dcz_tensor *t = m->tensors;
    for (uint32_t v = 2; v <= 8; v++)
        CHECK(t[v].inner != t[1].inner || t[v].off + t[v].width <= t[1].off ||
              t[1].off + t[1].width <= t[v].off, "tensor %u overlaps the live tensor 1", v);
    dcz_close(m);
    free(buf);
    dcz_doc *c = conv_doc();
    REQUIRE(c && dcz_doc_write(c, &buf, &len) == DCZ_OK, "write chain");
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open chain");
    /* in each block */
    uint32_t places[2] = { 0, 0 };
    for (uint32_t v = 1; v <= m->nlayers; v++) places[m->tensors[v].inner] += m->tensors[v].slot == v;
    CHECK(places[0] <= 2 && places[1] <= 2 && m->act_width <= 2ull * m->max_width &&
          m->chunk_width <= 2ull * m->max_width, "chain: %u + %u places, %llu + %llu floats", places[0],
          places[1], (unsigned long long)m->act_width, (unsigned long long)m->chunk_width);
    dcz_close(m);
    free(buf);
    dcz_doc_free(c);
    dcz_doc_free(d);
}

/* A Concat whose first input is read after it (by an Add) keeps its
 * inputs in their own places at batch 1, and matches the reference: conv a
 * -> relu -> (conv b 1x1, conv c 3x3) -> concat -> conv d 1x1 -> add b ->
 * flatten */
static void test_concat_input_read_after(void)
{
    dcz_doc *d;
    REQUIRE(dcz_doc_alloc(8, &d) == DCZ_OK, "alloc");
    set_input(d, 2, 6, 6);
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conva", 2, 4, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu");
    doc_conv_layer(&l[2], "convb", 4, 4, 1, 1, 0, DCZ_ENC_F32, 0, 0, 0);
    doc_conv_layer(&l[3], "convc", 4, 4, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    reads(&l[3], 1, (const uint32_t[]){ 2 });
    doc_plain_layer(&l[4], DCZ_OP_CONCAT, "cat");
    reads(&l[4], 2, (const uint32_t[]){ 3, 4 });
    doc_conv_layer(&l[5], "convd", 8, 4, 1, 1, 0, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&l[6], DCZ_OP_ADD, "add");
    reads(&l[6], 2, (const uint32_t[]){ 6, 3 });
    doc_plain_layer(&l[7], DCZ_OP_FLATTEN, "flatten");
    for (uint32_t i = 0; i < d->nlayers; i++)
        if (l[i].ntensors) {
            fill_weights(&l[i], 1);
            for (uint32_t j = 0; j < l[i].t[1].n; j++) l[i].t[1].values[j] = frand();
        }
    runtime_matches_reference(d, "concat read after");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_model *m = NULL;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    CHECK(m->layers[4].fused != DCZ_FUSED_CONCAT && check_places1(m, "concat read after") == 0,
          "concat read after: its inputs hosted");
    check_places(m, "concat read after");
    dcz_close(m);
    free(buf);
    dcz_doc_free(d);
}

static void no_tap(void *ctx, uint32_t layer, const float *y, size_t batch, uint32_t width)
{
    (void)ctx, (void)layer, (void)y, (void)batch, (void)width;
}

/* The DAG on planes large enough that its segments of per-sample layers
 * run by chunks of fewer samples than the batch (run.c): it still matches
 * the reference, and a run with a tap (whole batches, layer after layer)
 * gives the same bits, on the heap and in an arena. */
static void test_dag_chunks(void)
{
    dcz_doc *d = dag_doc_sized(96);
    REQUIRE(d, "alloc");
    runtime_matches_reference(d, "wide dag");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_model *m = NULL;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    enum { B = 7 };
    uint32_t chunked = 0, inner = 0, outer = 0;
    for (uint32_t v = 1; v <= m->nlayers; v++) {
        const dcz_tensor *t = &m->tensors[v];
        chunked += t->chunk > 0 && t->chunk < B;
        inner += t->inner;
        outer += !t->inner && t->seg_first != t->seg_last;
    }
    CHECK(chunked >= 2 && inner > 0 && outer > 0 && m->chunk_width > 0,
          "wide dag: %u segments by chunks, %u inner tensors, %u leaving a segment", chunked, inner, outer);
    check_places(m, "wide dag");
    CHECK(check_places1(m, "wide dag") > 0, "wide dag: no tensor hosted");
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = malloc(B * in * sizeof *x), *y = malloc(B * out * sizeof *y), *yt = malloc(B * out * sizeof *yt);
    float *ys = malloc(B * out * sizeof *ys);
    REQUIRE(x && y && yt && ys, "alloc");
    for (size_t i = 0; i < B * in; i++) x[i] = frand();
    CHECK(dcz_run(m, x, B, y) == DCZ_OK, "run");
    CHECK(dcz_run_tapped(m, x, B, yt, no_tap, NULL) == DCZ_OK, "run tapped");
    CHECK(memcmp(y, yt, B * out * sizeof *y) == 0, "wide dag: chunked run differs from the tapped one");
    /* an arena of 5 samples: a chunk block of fewer */
    dcz_options o;
    dcz_options_init(&o);
    o.max_batch = 5;
    size_t need = 0;
    REQUIRE(dcz_plan(buf, len, &o, &need) == DCZ_OK, "plan");
    void *arena = malloc(need);
    dcz_model *s = NULL;
    REQUIRE(arena && dcz_open_static(buf, len, arena, need, &o, &s) == DCZ_OK, "open static");
    CHECK(s->cact_batch > 0 && s->cact_batch < 5, "arena: chunk block of %zu samples", s->cact_batch);
    CHECK(dcz_run(s, x, B, ys) == DCZ_OK && memcmp(y, ys, B * out * sizeof *y) == 0, "arena run differs");
    /* a tapped run goes by the chunk block's samples: a last piece of one
     * sample would take the codebook layer's batch-1 lane form, whose sums
     * may differ in their last bits from a batch's (README), so the batch
     * is one less where it would leave one */
    const size_t bt = B % s->cact_batch == 1 ? B - 1 : B;
    memset(ys, 0, B * out * sizeof *ys);
    CHECK(dcz_run_tapped(s, x, bt, ys, no_tap, NULL) == DCZ_OK && memcmp(y, ys, bt * out * sizeof *y) == 0,
          "arena tapped run differs");
    dcz_close(s);
    free(arena);
    free(x); free(y); free(yt); free(ys);
    dcz_close(m);
    free(buf);
    dcz_doc_free(d);
}

static void test_dag_round_trip(void)
{
    dcz_doc *d = dag_doc(), *r = NULL;
    uint8_t *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read");
    CHECK(r->nlayers == d->nlayers, "layers");
    for (uint32_t i = 0; i < d->nlayers && i < r->nlayers; i++) {
        CHECK(r->layers[i].nin == d->layers[i].nin, "layer %u inputs", i);
        for (uint32_t k = 0; k < d->layers[i].nin; k++)
            CHECK(r->layers[i].in[k] == d->layers[i].in[k], "layer %u input %u", i, k);
    }
    REQUIRE(dcz_doc_write(r, &buf2, &len2) == DCZ_OK, "rewrite");
    CHECK(len == len2 && memcmp(buf, buf2, len) == 0, "rewrite is byte-identical");
    free(buf); free(buf2);
    dcz_doc_free(r);
    dcz_doc_free(d);
}

/* The writer refuses a graph out of order, a layer nobody reads, inputs
 * that do not fit their op; the readers refuse the same in a file. */
static void test_dag_refused(void)
{
    struct { const char *what; dcz_status want; } cases[] = {
        { "reads a later layer", DCZ_ERR_ARG }, { "reads itself", DCZ_ERR_ARG },
        { "layer left unread", DCZ_ERR_ARG }, { "add of two shapes", DCZ_ERR_SHAPE },
        { "add of one input", DCZ_ERR_SHAPE }, { "concat of other planes", DCZ_ERR_SHAPE },
        { "training-only op", DCZ_ERR_ARG },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dcz_doc *d = dag_doc();
        REQUIRE(d, "alloc");
        dcz_doc_layer *l = d->layers;
        switch (i) {
        case 0: l[4].in[1] = 6; break;
        case 1: l[4].in[1] = 5; break;
        case 2: l[5].in[0] = 1; l[7].in[0] = 1; break;  /* the add's output: unread */
        case 3: l[4].in[1] = 0; break;
        case 4: l[4].nin = 1; break;
        case 5: l[8].in[1] = 6; break;
        case 6: l[1].op = DCZ_OP_DROPOUT; break;
        }
        uint8_t *buf = NULL;
        size_t len = 0;
        dcz_status st = dcz_doc_write(d, &buf, &len);
        CHECK(st == cases[i].want && buf == NULL, "%s: %s", cases[i].what, dcz_status_str(st));
        free(buf);
        dcz_doc_free(d);
    }
    /* in a file */
    dcz_doc *d = dag_doc();
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    const size_t add = record_inputs(buf, graph_record(buf, 4)), cat = record_inputs(buf, graph_record(buf, 8));
    struct { const char *what; size_t at; uint32_t v; } patches[] = {
        { "input of a later layer", add + 8, 6 }, { "its own output", add + 8, 5 },
        { "no input", add, 0 }, { "17 inputs", cat, 17 },
        { "the projection left unread: add reads conv b twice", add + 8, 3 },
    };
    uint8_t *copy = malloc(len);
    for (size_t i = 0; i < sizeof patches / sizeof *patches; i++) {
        memcpy(copy, buf, len);
        dcz_put32(copy + patches[i].at, patches[i].v);
        fix_crcs(copy, len);
        dcz_model *m = NULL;
        dcz_doc *r = NULL;
        dcz_status s1 = dcz_open_memory(copy, len, NULL, &m), s2 = dcz_doc_read(copy, len, &r);
        CHECK(s1 != DCZ_OK && m == NULL, "%s: runtime %s", patches[i].what, dcz_status_str(s1));
        CHECK(s2 != DCZ_OK && r == NULL, "%s: toolchain %s", patches[i].what, dcz_status_str(s2));
        dcz_close(m);
        dcz_doc_free(r);
    }
    free(copy);
    free(buf);
    dcz_doc_free(d);
}

/* The fixtures of format 1.2 (tests/fixtures/v1) read as documents of
 * format 2: chains, each CONV2D with group 1, and rewritten as 2.0 files
 * that run to the same bits. */
/* The toolchain's description of each layer (runtime/tool.h) names the
 * plan's kernel (runtime/plan.h), and the plan agrees with the form the
 * loader built: weights, widths, dense or sparse, im2col or direct, the
 * extra forms of the kernels that read them (Winograd's transform, the
 * shift form, transposed or expanded weights, the column form), integer
 * kernels on a calibrated model, the references when they are forced. */
static void test_describe_layers(void)
{
    dcz_doc *(*const make[])(void) = { small_doc, conv_doc, conv_doc_b, dag_doc, mobile_doc, calib_doc, wino_doc };
    int seen_im2col = 0, seen_direct = 0, seen_cols = 0, seen_int = 0, seen_dense = 0, seen_fused = 0;
    int seen_act = 0, seen_wino = 0;
    /* each document as this CPU's kernels run it and, for the sparse
     * convolutions, as the references do: which convolutions take the
     * shift form depends on the CPU's costs, the references' choice
     * between im2col and direct on the geometry alone, so both show on any
     * CPU */
    for (size_t fr = 0; fr < 2 * (sizeof make / sizeof make[0]); fr++) {
        const size_t f = fr / 2;
        const dcz_options opt = { .force_reference = (int)(fr % 2) };
        dcz_doc *d = make[f]();
        uint8_t *buf = NULL;
        size_t len = 0;
        dcz_model *m = NULL;
        REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK && dcz_open_memory(buf, len, &opt, &m) == DCZ_OK,
                "doc %zu", f);
        REQUIRE(dcz_model_layer_count(m) == d->nlayers, "doc %zu: layer count", f);
        for (uint32_t i = 0; i < m->nlayers; i++) {
            const dcz_exec_layer *l = &m->layers[i];
            const dcz_kernel k = (dcz_kernel)l->kernel;
            dcz_layer_desc ld;
            REQUIRE(dcz_describe_layer(m, i, &ld) == DCZ_OK, "describe %u", i);
            CHECK(ld.op == l->op && ld.width == l->out && ld.weighted == dcz_op_get(l->op)->weighted,
                  "doc %zu layer %u: op, width, weights", f, i);
            CHECK(k != DCZ_K_NONE && k < DCZ_K_COUNT, "doc %zu layer %u: no kernel planned", f, i);
            /* the forms built are those the kernel reads */
            CHECK((k == DCZ_K_CONV_WINO) == (l->wu != NULL), "doc %zu layer %u: %s, Winograd's weights", f, i,
                  dcz_kernel_name(k));
            CHECK((k == DCZ_K_FC_GEMM) == (l->wt != NULL), "doc %zu layer %u: %s, transposed weights", f, i,
                  dcz_kernel_name(k));
            CHECK((k == DCZ_K_QCONV_GEMM) == (l->qw2 != NULL), "doc %zu layer %u: %s, int16 pairs", f, i,
                  dcz_kernel_name(k));
            CHECK((k == DCZ_K_CONV_EXPANDED) == (l->sparse && !l->q && l->w != NULL),
                  "doc %zu layer %u: %s, expanded weights", f, i, dcz_kernel_name(k));
            CHECK((!dcz_kernel_shifts(k)) == (l->q ? !l->qshift.ob : !l->shift.ob),
                  "doc %zu layer %u: %s, the shift form", f, i, dcz_kernel_name(k));
            if (opt.force_reference) {   /* the references, and the convolutions' im2col or direct */
                CHECK(!ld.weighted || strstr(ld.kernel, "_ref"), "doc %zu layer %u: %s forced to the reference", f,
                      i, ld.kernel);
                if (ld.weighted && !l->q && l->sparse && l->op == DCZ_OP_CONV2D) {
                    const int im2col = k == DCZ_K_CONV_SPARSE_IM2COL_REF;
                    seen_im2col += im2col;
                    seen_direct += !im2col;
                    CHECK(im2col == dcz_conv2d_pick_im2col(&l->geom), "doc %zu layer %u: %s", f, i, ld.kernel);
                }
                continue;
            }
            if (l->fused == DCZ_FUSED_BANDS) {   /* a depthwise layer the pointwise one before runs by bands */
                seen_fused++;
                const uint32_t by = m->layers[i - 1].band == i ? i - 1 : i - 2;
                CHECK(m->layers[by].band == i && strcmp(ld.kernel, "fused") == 0 &&
                          strstr(ld.why, m->layers[by].name) != NULL,
                      "doc %zu layer %u: by bands: %s (%s)", f, i, ld.kernel, ld.why);
                continue;
            }
            if (l->fused == DCZ_FUSED_CONCAT) {   /* a Concat whose inputs are written in its place at batch 1 */
                seen_fused++;
                CHECK(strcmp(ld.kernel, dcz_kernel_name(k)) == 0 && strstr(ld.why, "batch 1") != NULL,
                      "doc %zu layer %u: a Concat hosting its inputs: %s (%s)", f, i, ld.kernel, ld.why);
                continue;
            }
            if (!ld.weighted && l->fused) {   /* an activation the convolution before applies, or a pool */
                seen_fused++;
                const uint32_t by = l->fused == DCZ_FUSED_POOL && !m->layers[i - 1].qpool ? i - 2 : i - 1;
                CHECK(strcmp(ld.kernel, "fused") == 0 && strstr(ld.why, m->layers[by].name) != NULL,
                      "doc %zu layer %u: fused: %s (%s)", f, i, ld.kernel, ld.why);
                continue;
            }
            CHECK(strcmp(ld.kernel, dcz_kernel_name(k)) == 0, "doc %zu layer %u: %s, planned %s", f, i, ld.kernel,
                  dcz_kernel_name(k));
            if (!ld.weighted) {
                CHECK(ld.why[0] == '\0', "plain layer %u", i);
                continue;
            }
            CHECK(ld.why[0] != '\0', "doc %zu layer %u: no reason", f, i);
            if (l->act.op) {   /* a fully connected layer or a convolution that applies the next */
                seen_act++;
                char then[32];
                snprintf(then, sizeof then, "then %s", dcz_op_get(l->act.op)->label);
                CHECK(strstr(ld.why, then) != NULL, "doc %zu layer %u: %s", f, i, ld.why);
            }
            if (l->q) {
                seen_int++;
                CHECK(strstr(ld.kernel, "integers") != NULL, "doc %zu layer %u: %s on integers", f, i, ld.kernel);
            } else if (!l->sparse) {
                seen_dense++;
                seen_wino += k == DCZ_K_CONV_WINO;
                CHECK(strstr(ld.kernel, "dense") != NULL, "doc %zu layer %u: %s for dense weights", f, i, ld.kernel);
            } else if (l->op == DCZ_OP_CONV2D) {
                const int im2col = k == DCZ_K_CONV_SPARSE_IM2COL || k == DCZ_K_CONV_EXPANDED;
                seen_im2col += im2col;
                seen_direct += !im2col;
                CHECK(!strstr(ld.kernel, "im2col") == !im2col, "doc %zu layer %u: %s", f, i, ld.kernel);
            } else {
                seen_cols += l->sp.col_ptr != NULL;
                CHECK(!strstr(ld.why, "by columns") == !l->sp.col_ptr, "doc %zu layer %u: %s", f, i, ld.why);
            }
        }
        CHECK(dcz_describe_layer(m, m->nlayers, &(dcz_layer_desc){ 0 }) == DCZ_ERR_ARG, "past the last layer");
        CHECK(dcz_model_threads(m) >= 1, "threads");
        dcz_close(m);
        free(buf);
        dcz_doc_free(d);
    }
    CHECK(seen_im2col && seen_direct && seen_cols && seen_int && seen_dense,
          "kinds seen: im2col %d direct %d columns %d integer %d dense %d", seen_im2col, seen_direct,
          seen_cols, seen_int, seen_dense);
    CHECK(seen_fused > 0 || !dcz_conv2d_shift_variant(), "no activation fused into a convolution");
    CHECK(seen_act > 0, "no activation fused into a weighted layer");
    const dcz_conv_geom wg = { 32, 6, 6, 32, 6, 6, 3, 3, 1, 1, 1, 1, 1 };   /* wino_doc's */
    CHECK(seen_wino == (dcz_conv2d_pick_wino(&wg) && dcz_conv2d_wino_rule(&wg) ? 1 : 0),
          "Winograd layers described: %d", seen_wino);
}

/* A load that measures (dcz_options.plan DCZ_PLAN_MEASURE): every weighted
 * layer that more than one kernel can run is timed on each, the rules'
 * first, and runs its fastest, which dcz info's description lists; the
 * model's outputs are the rules' within float rounding, an integer
 * model's bit for bit; the references forced leave nothing to time; the
 * loaders that cannot measure (the static ones, the GPU) refuse it. */
static void test_plan_measure(void)
{
    dcz_doc *(*const make[])(void) = { small_doc, conv_doc, dag_doc, mobile_doc, calib_doc, wino_doc };
    int timed = 0;
    for (size_t f = 0; f < sizeof make / sizeof make[0]; f++) {
        dcz_doc *d = make[f]();
        uint8_t *buf = NULL;
        size_t len = 0;
        REQUIRE(d && dcz_doc_write(d, &buf, &len) == DCZ_OK, "doc %zu", f);
        dcz_options rules_opt, opt;
        dcz_options_init(&rules_opt);
        rules_opt.device = DCZ_DEVICE_CPU;
        opt = rules_opt;
        opt.plan = DCZ_PLAN_MEASURE;
        dcz_model *r = NULL, *m = NULL;
        REQUIRE(dcz_open_memory(buf, len, &rules_opt, &r) == DCZ_OK && dcz_open_memory(buf, len, &opt, &m) == DCZ_OK,
                "doc %zu: open", f);
        for (uint32_t i = 0; i < m->nlayers && m->measured; i++) {
            const dcz_measured *t = &m->measured[i];
            dcz_layer_desc ld;
            REQUIRE(dcz_describe_layer(m, i, &ld) == DCZ_OK, "describe %u", i);
            CHECK(ld.timed == t->n && ld.timed_pick == t->pick, "doc %zu layer %u: described %u of %u", f, i,
                  ld.timed, t->n);
            if (!t->n) continue;
            timed++;
            CHECK(dcz_op_get(m->layers[i].op)->weighted && t->n >= 2 && t->n <= DCZ_PLAN_CANDIDATES &&
                  t->pick < t->n, "doc %zu layer %u: %u candidates, pick %u", f, i, t->n, t->pick);
            CHECK(t->kernel[0] == r->layers[i].kernel, "doc %zu layer %u: the rules' %s first, not %s", f, i,
                  dcz_kernel_name((dcz_kernel)r->layers[i].kernel), dcz_kernel_name((dcz_kernel)t->kernel[0]));
            CHECK(m->layers[i].kernel == t->kernel[t->pick], "doc %zu layer %u: runs %s, kept %s", f, i,
                  dcz_kernel_name((dcz_kernel)m->layers[i].kernel), dcz_kernel_name((dcz_kernel)t->kernel[t->pick]));
            for (uint32_t k = 0; k < t->n; k++) {
                CHECK(t->ns[k] > 0 && t->ns[k] != UINT64_MAX && t->ns[t->pick] <= t->ns[k],
                      "doc %zu layer %u: candidate %u %llu ns, the kept %llu", f, i, k, (unsigned long long)t->ns[k],
                      (unsigned long long)t->ns[t->pick]);
                CHECK(strcmp(ld.timed_kernel[k], dcz_kernel_name((dcz_kernel)t->kernel[k])) == 0 &&
                      ld.timed_us[k] == (double)t->ns[k] / 1000.0, "doc %zu layer %u: candidate %u described", f, i, k);
                for (uint32_t j = 0; j < k; j++)
                    CHECK(t->kernel[j] != t->kernel[k], "doc %zu layer %u: %s timed twice", f, i,
                          dcz_kernel_name((dcz_kernel)t->kernel[k]));
            }
        }
        enum { B = 3 };
        const size_t in = dcz_input_size(m), out = dcz_output_size(m);
        float *x = malloc(B * in * sizeof *x), *yr = malloc(B * out * sizeof *yr), *ym = malloc(B * out * sizeof *ym);
        REQUIRE(x && yr && ym, "memory");
        for (size_t i = 0; i < B * in; i++) x[i] = (float)(rnd() % 2001) / 1000.0f - 1.0f;
        CHECK(dcz_run(r, x, B, yr) == DCZ_OK && dcz_run(m, x, B, ym) == DCZ_OK, "doc %zu: run", f);
        if (dcz_model_scheme(m) != DCZ_SCHEME_NONE)
            CHECK(memcmp(yr, ym, B * out * sizeof *yr) == 0, "doc %zu: integer outputs differ", f);
        else
            for (size_t i = 0; i < B * out; i++)
                CHECK(fabsf(yr[i] - ym[i]) <= 1e-4f * (1.0f + fabsf(yr[i])), "doc %zu output %zu: %g by the rules, "
                      "%g measured", f, i, yr[i], ym[i]);
        free(x); free(yr); free(ym);
        dcz_close(r);
        dcz_close(m);
        /* the references leave nothing to time */
        opt.force_reference = 1;
        REQUIRE(dcz_open_memory(buf, len, &opt, &m) == DCZ_OK, "doc %zu: references", f);
        CHECK(m->measured == NULL, "doc %zu: references timed", f);
        dcz_close(m);
        opt.force_reference = 0;
        /* the loaders that cannot measure */
        size_t bytes = 0;
        static uint8_t arena[1 << 16];
        CHECK(dcz_plan(buf, len, &opt, &bytes) == DCZ_ERR_ARG && bytes == 0, "doc %zu: dcz_plan measures", f);
        CHECK(dcz_open_static(buf, len, arena, sizeof arena, &opt, &m) == DCZ_ERR_ARG && m == NULL,
              "doc %zu: dcz_open_static measures", f);
        opt.device = DCZ_DEVICE_GPU;
        CHECK(dcz_open_memory(buf, len, &opt, &m) == DCZ_ERR_ARG && m == NULL, "doc %zu: a GPU measures", f);
        opt.device = DCZ_DEVICE_CPU;
        opt.plan = (dcz_plan_mode)7;
        CHECK(dcz_open_memory(buf, len, &opt, &m) == DCZ_ERR_ARG && m == NULL, "doc %zu: plan 7", f);
        free(buf);
        dcz_doc_free(d);
    }
    CHECK(timed > 0, "no layer timed");
}

static void test_v1_files(void)
{
    static const char *const names[] = { "mlp-codebook", "mlp-fixed8", "cnn-codebook", "cnn-int8",
                                         "lenet5-codebook" };
    for (size_t f = 0; f < sizeof names / sizeof *names; f++) {
        char path[128];
        snprintf(path, sizeof path, "tests/fixtures/v1/%s.dcz", names[f]);
        size_t len = 0;
        uint8_t *v1 = read_file(path, &len);
        REQUIRE(v1, "%s: cannot read (run from the repository root)", path);
        CHECK((dcz_le32(v1 + 8) & 0xFFFF) == 1, "%s is of format 1", path);
        dcz_doc *d = NULL;
        REQUIRE(dcz_doc_read(v1, len, &d) == DCZ_OK, "%s: read", path);
        for (uint32_t i = 0; i < d->nlayers; i++) {
            CHECK(d->layers[i].nin == 1 && d->layers[i].in[0] == i, "%s: layer %u is a chain", path, i);
            if (d->layers[i].op == DCZ_OP_CONV2D)
                CHECK(d->layers[i].nattr == 9 && d->layers[i].attr[8] == 1, "%s: conv group 1", path);
        }
        uint8_t *v2 = NULL;
        size_t len2 = 0;
        REQUIRE(dcz_doc_write(d, &v2, &len2) == DCZ_OK, "%s: rewrite", path);
        dcz_model *a = NULL, *b = NULL;
        REQUIRE(dcz_open_memory(v1, len, NULL, &a) == DCZ_OK && dcz_open_memory(v2, len2, NULL, &b) == DCZ_OK,
                "%s: open", path);
        enum { B = 3 };
        const size_t in = dcz_input_size(a), out = dcz_output_size(a);
        float *x = malloc(B * in * sizeof *x), *ya = malloc(B * out * sizeof *ya), *yb = malloc(B * out * sizeof *yb);
        for (size_t i = 0; i < B * in; i++) x[i] = (float)(rnd() % 1000) / 1000.0f;
        CHECK(dcz_run(a, x, B, ya) == DCZ_OK && dcz_run(b, x, B, yb) == DCZ_OK, "%s: run", path);
        CHECK(memcmp(ya, yb, B * out * sizeof *ya) == 0, "%s: 1.2 and 2.0 files differ", path);
        free(x); free(ya); free(yb);
        dcz_close(a);
        dcz_close(b);
        free(v2);
        dcz_doc_free(d);
        free(v1);
    }
}

/* A heap model on the CPU keeps no dense copy of a convolution's weights
 * that its kernel never reads (the shift form, Winograd's transform: built
 * from the weights in the decoding scratch); one on another kernel keeps
 * it, and so does every layer under the references. The runs match the
 * reference network (runtime_matches_reference, on these docs too). */
static void test_forms_only(void)
{
    dcz_doc *(*const make[])(void) = { wino_doc, conv_doc_b, mobile_doc, dag_doc };
    size_t formed = 0, kept = 0;
    for (size_t k = 0; k < sizeof make / sizeof *make; k++) {
        dcz_doc *d = make[k]();
        REQUIRE(d, "doc %zu", k);
        uint8_t *buf = NULL;
        size_t len = 0;
        REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write %zu", k);
        for (int ref = 0; ref < 2; ref++) {
            dcz_options o;
            dcz_options_init(&o);
            o.device = DCZ_DEVICE_CPU;
            o.force_reference = ref;
            dcz_model *m = NULL;
            REQUIRE(dcz_open_memory(buf, len, &o, &m) == DCZ_OK, "open %zu", k);
            for (uint32_t i = 0; i < m->nlayers; i++) {
                const dcz_exec_layer *l = &m->layers[i];
                if (l->op != DCZ_OP_CONV2D || l->q || l->sparse) continue;
                const int form = dcz_kernel_shifts((dcz_kernel)l->kernel) || l->kernel == DCZ_K_CONV_WINO;
                CHECK(form ? !l->w : l->w != NULL, "doc %zu layer %u (kernel %u, reference %d): dense copy %s", k, i,
                      l->kernel, ref, l->w ? "kept" : "dropped");
                CHECK(!ref || !form, "doc %zu layer %u: a form under the references", k, i);
                formed += form;
                kept += !form;
            }
            dcz_close(m);
        }
        free(buf);
        runtime_matches_reference(d, "a doc of dense convolutions");
        dcz_doc_free(d);
    }
    CHECK(formed > 0 && kept > 0, "%zu dense convolutions on their forms, %zu keeping their weights", formed, kept);
}

int main(void)
{
    RUN(test_crc32);
    RUN(test_doc_round_trip);
    RUN(test_runtime_matches_doc);
    RUN(test_pack);
    RUN(test_gaps_at_limit);
    RUN(test_corruption_refused);
    RUN(test_lies_with_valid_crc);
    RUN(test_version_and_magic);
    RUN(test_unknown_sections);
    RUN(test_shared_param_section);
    RUN(test_parts);
    RUN(test_f16);
    RUN(test_op_rules);
    RUN(test_conv_doc_round_trip);
    RUN(test_work_limit);
    RUN(test_forms_only);
    RUN(test_doc_expansion_bound);
    RUN(test_conv_runtime_matches_reference);
    RUN(test_conv_writer_refuses);
    RUN(test_conv_readers_refuse);
    RUN(test_conv_corruption_refused);
    RUN(test_conv_lies_with_valid_crc);
    RUN(test_calib_round_trip);
    RUN(test_calib_corruption_refused);
    RUN(test_calib_lies_with_valid_crc);
    RUN(test_prep_section);
    RUN(test_prep_corruption_refused);
    RUN(test_prep_lies_with_valid_crc);
    RUN(test_dag_runtime_matches_reference);
    RUN(test_concat_input_read_after);
    RUN(test_dag_chunks);
    RUN(test_dag_round_trip);
    RUN(test_mobile_runtime_matches_reference);
    RUN(test_squeeze_excite_as_fc);
    RUN(test_shuffle_runtime_matches_reference);
    RUN(test_dag_refused);
    RUN(test_describe_layers);
    RUN(test_plan_measure);
    RUN(test_v1_files);
    RUN(test_compact);
    RUN(test_qconv_f32_over);   /* last: the others keep their random draws */
    return check_summary();
}
