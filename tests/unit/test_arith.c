/* test_arith.c: unit tests for the arithmetic coding of huffman/arith.h
 * (coding 2 of docs/FORMAT.md).
 *
 * Runtime side (also built for aarch64 and run under qemu by make
 * test-aarch64, where it links libdcz alone): a committed keep mask and a
 * committed index stream decode to the bits they were made from, so a
 * change of the specification, or a platform that computes it otherwise,
 * is caught.
 *
 * Toolchain side: the encoder writes the committed vectors; round trips of
 * masks of many shapes and densities (none kept, one, all, rows of 1,
 * columns of 1, empty and full columns) and of index streams of every
 * width; every truncation and an appended byte refused; every single-byte
 * corruption refused with DCZ_ERR_FORMAT or decoded to a valid stream (run
 * under the sanitizers); the header rules of a mask-coded tensor and
 * unknown codings; the writer's choice of codings; files written with
 * coding 2 (fully connected and convolutional) loading, on the heap and in
 * a planned static arena, and running to the same outputs as the same model
 * Huffman-coded, and read back by the toolchain to the same weights.
 * Deterministic (fixed seeds).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "huffman/arith.h"
#include "tests/check.h"

/* ---- the committed vectors --------------------------------------------- */

/* A 6 x 11 mask: column 3 never kept, column 7 always, the rest by a
 * formula; and 40 indices of 3 bits. */
#define VEC_ROWS 6
#define VEC_COLS 11
static int vec_keep(uint32_t r, uint32_t c)
{
    if (c == 3) return 0;
    if (c == 7) return 1;
    return (r * 5 + c * 3 + r * c) % 7 < 2;
}
#define VEC_NIDX 40
#define VEC_IDX_BITS 3
static uint8_t vec_index(uint32_t i) { return (uint8_t)((i * i + 3 * i) % 7 + (i % 9 == 0)); }

static const uint8_t vec_mask_code[] = {
    0x85, 0x6b, 0xb8, 0x87, 0xb7, 0xfb, 0x84, 0xac, 0xe3, 0xb6, 0x5d, 0x34,
};
static const uint8_t vec_index_code[] = {
    0x32, 0x44, 0x9f, 0xcf, 0xfb, 0x74, 0xd9, 0x2c, 0xac, 0x82, 0x27, 0x68, 0xcd, 0x6f, 0xa5, 0x9f,
    0x32, 0x00,
};

/* Collects the kept positions a decoder reports. */
typedef struct collect {
    uint64_t *pos;
    uint32_t cap, n;
    int order_bad;
} collect;

static dcz_status collect_pos(void *ctx, uint32_t weight, uint64_t pos)
{
    collect *c = (collect *)ctx;
    if (weight != c->n || (c->n && pos <= c->pos[c->n - 1])) c->order_bad = 1;
    if (c->n >= c->cap) return DCZ_ERR_FORMAT;
    c->pos[c->n++] = pos;
    return DCZ_OK;
}

static void test_vector_decode(void)
{
    uint32_t nnz = 0, scratch[VEC_COLS];
    uint64_t pos[VEC_ROWS * VEC_COLS];
    for (uint32_t i = 0; i < VEC_ROWS * VEC_COLS; i++) nnz += (uint32_t)vec_keep(i / VEC_COLS, i % VEC_COLS);
    collect c = { pos, VEC_ROWS * VEC_COLS, 0, 0 };
    dcz_status s = dcz_ac_decode_mask(vec_mask_code, sizeof vec_mask_code, VEC_ROWS, VEC_COLS, nnz, scratch,
                                      collect_pos, &c);
    REQUIRE(s == DCZ_OK, "mask vector: status %d", (int)s);
    CHECK(c.n == nnz && !c.order_bad, "mask vector: %u of %u kept", c.n, nnz);
    uint32_t j = 0, bad = 0;
    for (uint32_t i = 0; i < VEC_ROWS * VEC_COLS; i++)
        if (vec_keep(i / VEC_COLS, i % VEC_COLS)) bad += j >= c.n || c.pos[j++] != i;
    CHECK(bad == 0, "mask vector: %u positions differ", bad);

    uint8_t idx[VEC_NIDX];
    s = dcz_ac_decode_indices(vec_index_code, sizeof vec_index_code, VEC_IDX_BITS, idx, VEC_NIDX);
    REQUIRE(s == DCZ_OK, "index vector: status %d", (int)s);
    bad = 0;
    for (uint32_t i = 0; i < VEC_NIDX; i++) bad += idx[i] != vec_index(i);
    CHECK(bad == 0, "index vector: %u indices differ", bad);
}

#ifndef DCZ_RUNTIME_ONLY

#include "model/doc.h"
#include "tests/unit/doc_build.h"
#include "tests/unit/test_util.h"


/* Encodes a mask into a malloc'd buffer; NULL on failure. */
static uint8_t *encode_mask(const uint8_t *keep, uint32_t rows, uint32_t cols, size_t *len)
{
    size_t need;
    if (dcz_ac_encode_mask(keep, rows, cols, NULL, 0, &need) != DCZ_OK) return NULL;
    uint8_t *buf = malloc(need);
    size_t used = 0;
    if (buf && (dcz_ac_encode_mask(keep, rows, cols, buf, need, &used) != DCZ_OK || used != need)) {
        free(buf);
        return NULL;
    }
    /* a buffer one byte short is refused */
    if (buf && need && dcz_ac_encode_mask(keep, rows, cols, buf, need - 1, &used) != DCZ_ERR_NOMEM) {
        free(buf);
        return NULL;
    }
    if (buf && need && dcz_ac_encode_mask(keep, rows, cols, buf, need, &used) != DCZ_OK) {
        free(buf);
        return NULL;
    }
    *len = need;
    return buf;
}

static uint8_t *encode_indices(const uint8_t *sym, size_t n, unsigned bits, size_t *len)
{
    size_t need, used = 0;
    if (dcz_ac_encode_indices(sym, n, bits, NULL, 0, &need) != DCZ_OK) return NULL;
    uint8_t *buf = malloc(need);
    if (buf && (dcz_ac_encode_indices(sym, n, bits, buf, need, &used) != DCZ_OK || used != need)) {
        free(buf);
        return NULL;
    }
    *len = need;
    return buf;
}

/* Decodes a mask and compares it with keep: 1 when equal. */
static int mask_decodes_to(const uint8_t *code, size_t len, const uint8_t *keep, uint32_t rows, uint32_t cols)
{
    const size_t n = (size_t)rows * cols;
    uint32_t nnz = 0;
    for (size_t i = 0; i < n; i++) nnz += keep[i] != 0;
    uint64_t *pos = malloc((n ? n : 1) * sizeof *pos);
    uint32_t *scratch = malloc(dcz_ac_mask_scratch_bytes(cols));
    collect c = { pos, (uint32_t)n, 0, 0 };
    int ok = pos && scratch &&
             dcz_ac_decode_mask(code, len, rows, cols, nnz, scratch, collect_pos, &c) == DCZ_OK &&
             c.n == nnz && !c.order_bad;
    for (uint32_t j = 0, i = 0; ok && i < n; i++)
        if (keep[i]) ok = c.pos[j++] == i;
    free(pos);
    free(scratch);
    return ok;
}

static void test_vector_encode(void)
{
    uint8_t keep[VEC_ROWS * VEC_COLS], idx[VEC_NIDX];
    for (uint32_t i = 0; i < VEC_ROWS * VEC_COLS; i++) keep[i] = (uint8_t)vec_keep(i / VEC_COLS, i % VEC_COLS);
    for (uint32_t i = 0; i < VEC_NIDX; i++) idx[i] = vec_index(i);
    size_t len = 0;
    uint8_t *code = encode_mask(keep, VEC_ROWS, VEC_COLS, &len);
    REQUIRE(code, "mask vector: encoding failed");
    CHECK(len == sizeof vec_mask_code && memcmp(code, vec_mask_code, len) == 0, "mask vector: encoder differs");
    if (getenv("DCZ_PRINT_VECTORS")) {
        printf("mask:");
        for (size_t i = 0; i < len; i++) printf(" 0x%02x,", code[i]);
        printf("\n");
    }
    free(code);
    code = encode_indices(idx, VEC_NIDX, VEC_IDX_BITS, &len);
    REQUIRE(code, "index vector: encoding failed");
    CHECK(len == sizeof vec_index_code && memcmp(code, vec_index_code, len) == 0, "index vector: encoder differs");
    if (getenv("DCZ_PRINT_VECTORS")) {
        printf("index:");
        for (size_t i = 0; i < len; i++) printf(" 0x%02x,", code[i]);
        printf("\n");
    }
    free(code);
}

/* Kinds of masks: density in parts per 1000, and structure. */
enum { PLAIN, EMPTY_COLS, ROW_DENSITY };

static void make_mask(rng *r, uint8_t *keep, uint32_t rows, uint32_t cols, unsigned per_mille, int kind)
{
    for (uint32_t i = 0; i < rows; i++) {
        unsigned row_pm = kind == ROW_DENSITY ? (unsigned)rng_below(r, 2 * per_mille + 1) : per_mille;
        for (uint32_t j = 0; j < cols; j++) {
            unsigned pm = row_pm;
            if (kind == EMPTY_COLS) pm = j % 5 == 0 ? 0 : j % 5 == 1 ? 1000 : per_mille;
            keep[(size_t)i * cols + j] = rng_below(r, 1000) < pm;
        }
    }
}

static void test_mask_roundtrip(void)
{
    static const uint32_t shapes[][2] = { { 1, 1 }, { 1, 37 }, { 37, 1 }, { 2, 2 }, { 7, 13 }, { 33, 65 },
                                          { 100, 300 }, { 1, 5000 }, { 5000, 1 }, { 20, 25 } };
    static const unsigned dens[] = { 0, 5, 80, 300, 500, 920, 1000 };
    rng r = { 11 };
    int fails = 0, cases = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t d = 0; d < sizeof dens / sizeof dens[0]; d++)
            for (int kind = PLAIN; kind <= ROW_DENSITY; kind++) {
                const uint32_t rows = shapes[s][0], cols = shapes[s][1];
                const size_t n = (size_t)rows * cols;
                uint8_t *keep = malloc(n);
                if (!keep) continue;
                make_mask(&r, keep, rows, cols, dens[d], kind);
                for (int one = 0; one < 2; one++) {
                    if (one) {   /* exactly one kept, anywhere */
                        memset(keep, 0, n);
                        keep[rng_below(&r, n)] = 1;
                    }
                    size_t len = 0;
                    uint8_t *code = encode_mask(keep, rows, cols, &len);
                    cases++;
                    if (!code || !mask_decodes_to(code, len, keep, rows, cols)) {
                        if (fails++ < 5)
                            fprintf(stderr, "  %ux%u density %u kind %d one %d fails\n", rows, cols, dens[d], kind, one);
                    }
                    free(code);
                }
                free(keep);
            }
    CHECK(fails == 0, "%d of %d masks fail to round-trip", fails, cases);
}

static void test_index_roundtrip(void)
{
    static const size_t ns[] = { 0, 1, 2, 17, 1000, 20000 };
    rng r = { 5 };
    int fails = 0, cases = 0;
    for (unsigned bits = 1; bits <= 8; bits++)
        for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++)
            for (int skew = 0; skew < 3; skew++) {
                const size_t n = ns[t];
                uint8_t *sym = malloc(n ? n : 1), *back = malloc(n ? n : 1);
                if (!sym || !back) { free(sym); free(back); continue; }
                for (size_t i = 0; i < n; i++) {
                    uint64_t v = rng_below(&r, 1u << bits);
                    if (skew == 1) v = v * v >> bits;          /* small values likelier */
                    if (skew == 2) v = (1u << bits) - 1;     /* one symbol */
                    sym[i] = (uint8_t)v;
                }
                size_t len = 0;
                uint8_t *code = encode_indices(sym, n, bits, &len);
                cases++;
                if (!code || dcz_ac_decode_indices(code, len, bits, back, n) != DCZ_OK ||
                    (n && memcmp(sym, back, n) != 0)) {
                    if (fails++ < 5) fprintf(stderr, "  bits %u n %zu skew %d fails\n", bits, n, skew);
                }
                free(code);
                free(sym);
                free(back);
            }
    CHECK(fails == 0, "%d of %d index streams fail to round-trip", fails, cases);
    /* a symbol wider than the width is refused by the encoder */
    uint8_t wide = 8;
    size_t used;
    CHECK(dcz_ac_encode_indices(&wide, 1, 3, NULL, 0, &used) == DCZ_ERR_ARG, "index 8 at 3 bits accepted");
}

/* Compression: a skewed source costs about its entropy, and a mask of
 * empty and full columns far less than its flags' entropy. */
static void test_compresses(void)
{
    rng r = { 3 };
    const size_t n = 20000;
    uint8_t *sym = malloc(n);
    REQUIRE(sym, "memory");
    for (size_t i = 0; i < n; i++) sym[i] = rng_below(&r, 100) < 90 ? 0 : (uint8_t)(1 + rng_below(&r, 3));
    /* entropy: 0.9 log 1/0.9 + 0.1 (log 10 + log 3) = 0.6275 bits */
    size_t len = 0;
    free(encode_indices(sym, n, 2, &len));
    CHECK(len * 8 < n * 0.6275 * 1.03 + 64, "%zu bytes for %zu symbols of 0.6275 bits", len, n);
    free(sym);

    const uint32_t rows = 300, cols = 784;
    uint8_t *keep = malloc((size_t)rows * cols);
    REQUIRE(keep, "memory");
    make_mask(&r, keep, rows, cols, 100, EMPTY_COLS);
    uint8_t *code = encode_mask(keep, rows, cols, &len);
    /* 2/5 of the columns empty or full, the rest at 1/10: 0.6 H(0.1) = 0.2814 bits a flag */
    CHECK(code && len * 8 < (size_t)rows * cols * 0.2814 * 1.06, "%zu bytes for the mask", len);
    free(code);
    free(keep);
}

/* Every proper prefix of a stream is refused, and so is a byte appended. */
static void test_truncated(void)
{
    rng r = { 17 };
    const uint32_t rows = 40, cols = 50;
    uint8_t keep[40 * 50], sym[600], out[600];
    make_mask(&r, keep, rows, cols, 200, ROW_DENSITY);
    uint32_t nnz = 0, scratch[50];
    for (size_t i = 0; i < sizeof keep; i++) nnz += keep[i];
    uint64_t pos[40 * 50];
    size_t len = 0;
    uint8_t *code = encode_mask(keep, rows, cols, &len);
    REQUIRE(code, "encode");
    int bad = 0;
    for (size_t cut = 0; cut < len; cut++) {
        collect c = { pos, rows * cols, 0, 0 };
        bad += dcz_ac_decode_mask(code, cut, rows, cols, nnz, scratch, collect_pos, &c) != DCZ_ERR_FORMAT;
    }
    uint8_t *longer = malloc(len + 1);
    REQUIRE(longer, "memory");
    memcpy(longer, code, len);
    longer[len] = 0;
    collect c = { pos, rows * cols, 0, 0 };
    bad += dcz_ac_decode_mask(longer, len + 1, rows, cols, nnz, scratch, collect_pos, &c) != DCZ_ERR_FORMAT;
    /* and the wrong number of kept flags */
    c.n = 0;
    bad += dcz_ac_decode_mask(code, len, rows, cols, nnz + 1, scratch, collect_pos, &c) != DCZ_ERR_FORMAT;
    c.n = 0;   /* (and the callback never hears of more kept flags than expected) */
    bad += dcz_ac_decode_mask(code, len, rows, cols, nnz - 1, scratch, collect_pos, &c) != DCZ_ERR_FORMAT;
    bad += c.n > nnz - 1;
    CHECK(bad == 0, "%d truncated or padded masks accepted", bad);
    free(code);
    free(longer);

    for (size_t i = 0; i < sizeof sym; i++) sym[i] = (uint8_t)rng_below(&r, 1 + rng_below(&r, 32));
    code = encode_indices(sym, sizeof sym, 5, &len);
    REQUIRE(code, "encode");
    bad = 0;
    for (size_t cut = 0; cut < len; cut++)
        bad += dcz_ac_decode_indices(code, cut, 5, out, sizeof out) != DCZ_ERR_FORMAT;
    longer = malloc(len + 1);
    REQUIRE(longer, "memory");
    memcpy(longer, code, len);
    longer[len] = 0x5a;
    bad += dcz_ac_decode_indices(longer, len + 1, 5, out, sizeof out) != DCZ_ERR_FORMAT;
    CHECK(bad == 0, "%d truncated or padded index streams accepted", bad);
    free(code);
    free(longer);

    /* the first code is below the initial range */
    static const uint8_t ones[8] = { 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0 };
    CHECK(dcz_ac_decode_indices(ones, 4, 1, out, 0) == DCZ_ERR_FORMAT, "code 0xFFFFFFFF accepted");
    CHECK(dcz_ac_decode_indices(ones + 4, 4, 1, out, 0) == DCZ_OK, "four zero bytes: no symbols");
}

/* Every byte of a stream changed to every other value: refused with
 * DCZ_ERR_FORMAT, or decoded to a valid stream (the right count of kept
 * flags, in order; indices within their width). */
static void test_corrupted(void)
{
    rng r = { 23 };
    const uint32_t rows = 12, cols = 30;
    uint8_t keep[12 * 30], sym[300], out[300];
    make_mask(&r, keep, rows, cols, 250, EMPTY_COLS);
    uint32_t nnz = 0, scratch[30];
    for (size_t i = 0; i < sizeof keep; i++) nnz += keep[i];
    uint64_t pos[12 * 30];
    size_t len = 0;
    uint8_t *code = encode_mask(keep, rows, cols, &len);
    REQUIRE(code, "encode");
    long bad = 0, refused = 0, decoded = 0;
    for (size_t at = 0; at < len; at++)
        for (unsigned x = 1; x < 256; x++) {
            code[at] ^= (uint8_t)x;
            collect c = { pos, rows * cols, 0, 0 };
            dcz_status s = dcz_ac_decode_mask(code, len, rows, cols, nnz, scratch, collect_pos, &c);
            if (s == DCZ_OK) decoded++, bad += c.n != nnz || c.order_bad;
            else refused++, bad += s != DCZ_ERR_FORMAT;
            code[at] ^= (uint8_t)x;
        }
    CHECK(bad == 0, "%ld corrupted masks misdecoded (%ld refused, %ld decoded)", bad, refused, decoded);
    CHECK(refused > 0, "no corrupted mask refused");
    free(code);

    for (size_t i = 0; i < sizeof sym; i++) sym[i] = (uint8_t)rng_below(&r, 6);
    code = encode_indices(sym, sizeof sym, 3, &len);
    REQUIRE(code, "encode");
    bad = refused = decoded = 0;
    for (size_t at = 0; at < len; at++)
        for (unsigned x = 1; x < 256; x++) {
            code[at] ^= (uint8_t)x;
            dcz_status s = dcz_ac_decode_indices(code, len, 3, out, sizeof out);
            if (s == DCZ_OK) {
                decoded++;
                for (size_t i = 0; i < sizeof out; i++) bad += out[i] >= 8;
            } else {
                refused++;
                bad += s != DCZ_ERR_FORMAT;
            }
            code[at] ^= (uint8_t)x;
        }
    CHECK(bad == 0, "%ld corrupted index streams misdecoded", bad);
    CHECK(refused > 0, "no corrupted index stream refused");
    free(code);
}

/* ---- files of coding 2 --------------------------------------------------- */

/* input (2, 8, 8) -> conv 2->4 k3 (codebook) -> relu -> fc 144->20 (codebook)
 * -> relu -> fc 20->5 (sparse f32) -> softmax; positions gap-coded (Huffman)
 * or as keep masks, indices Huffman- or arithmetic-coded. */
static dcz_doc *coded_net(int arith)
{
    dcz_doc *d;
    if (dcz_doc_alloc(6, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 2;
    d->input_dims[1] = d->input_dims[2] = 8;
    const uint8_t coding = arith ? DCZ_CODING_ARITH : DCZ_CODING_HUFFMAN;
    const unsigned gap = arith ? 1 : 3;
    doc_conv_layer(&d->layers[0], "conv", 2, 4, 3, 1, 0, DCZ_ENC_CODEBOOK, gap, 3, coding);
    doc_plain_layer(&d->layers[1], DCZ_OP_RELU, "relu1");
    doc_dense_layer(&d->layers[2], "fc1", 144, 20, DCZ_ENC_CODEBOOK, gap, 4, coding);
    doc_plain_layer(&d->layers[3], DCZ_OP_RELU, "relu2");
    doc_dense_layer(&d->layers[4], "fc2", 20, 5, DCZ_ENC_SPARSE_F32, gap, 0, coding);
    doc_plain_layer(&d->layers[5], DCZ_OP_SOFTMAX, "prob");
    rng r = { 99 };
    for (int li = 0; li < 5; li += 2) {
        dcz_doc_tensor *w = &d->layers[li].t[0];
        const size_t cols = w->n / w->dims[0];
        for (uint32_t i = 0; i < w->k; i++) w->codebook[i] = (float)i * 0.125f - 0.5f;
        for (size_t i = 0; i < w->n; i++) {
            const size_t c = i % cols;
            w->mask[i] = c % 7 == 0 ? 1 : c % 7 == 1 ? 0 : rng_below(&r, 10) < 3;
            if (!w->mask[i]) continue;
            if (w->assign) {
                w->assign[i] = (uint8_t)rng_below(&r, w->k);
                w->values[i] = w->codebook[w->assign[i]];
            } else {
                w->values[i] = (float)rng_below(&r, 100) / 50.0f - 1.0f;
            }
        }
        for (size_t i = 0; i < d->layers[li].t[1].n; i++) d->layers[li].t[1].values[i] = 0.01f * (float)i;
    }
    return d;
}

static int run_model(const uint8_t *buf, size_t len, int statik, const float *x, float *y)
{
    dcz_model *m = NULL;
    void *arena = NULL;
    size_t bytes = 0;
    dcz_status s;
    if (statik) {
        s = dcz_plan(buf, len, NULL, &bytes);
        if (s == DCZ_OK && !(arena = malloc(bytes))) s = DCZ_ERR_NOMEM;
        if (s == DCZ_OK) s = dcz_open_static(buf, len, arena, bytes, NULL, &m);
    } else {
        s = dcz_open_memory(buf, len, NULL, &m);
    }
    if (s == DCZ_OK) s = dcz_run(m, x, 2, y);
    dcz_close(m);
    free(arena);
    return s == DCZ_OK;
}

static void test_file(void)
{
    dcz_doc *dh = coded_net(0), *da = coded_net(1);
    REQUIRE(dh && da, "documents");
    uint8_t *bh = NULL, *ba = NULL;
    size_t lh = 0, la = 0;
    REQUIRE(dcz_doc_write(dh, &bh, &lh) == DCZ_OK, "writing the Huffman-coded file");
    REQUIRE(dcz_doc_write(da, &ba, &la) == DCZ_OK, "writing the arithmetic-coded file");
    CHECK(ba[10] == 2 && ba[11] == 0, "minor version %u", ba[10]);
    float x[2 * 128], yh[10], ya[10], yhs[10], yas[10];
    rng r = { 7 };
    for (int i = 0; i < 256; i++) x[i] = (float)rng_below(&r, 200) / 100.0f - 1.0f;
    REQUIRE(run_model(bh, lh, 0, x, yh), "running the Huffman-coded file");
    REQUIRE(run_model(ba, la, 0, x, ya), "running the arithmetic-coded file");
    /* (a static model of max_batch 1 runs a sample at a time: the same
     * kernels for both files, maybe not those of the heap model) */
    REQUIRE(run_model(bh, lh, 1, x, yhs), "running the Huffman-coded file in a static arena");
    REQUIRE(run_model(ba, la, 1, x, yas), "running the arithmetic-coded file in a static arena");
    CHECK(memcmp(yh, ya, sizeof yh) == 0, "outputs differ: %g / %g", yh[0], ya[0]);
    CHECK(memcmp(yhs, yas, sizeof yhs) == 0, "static outputs differ: %g / %g", yhs[0], yas[0]);

    /* the toolchain reads it back: codings, widths and every weight */
    dcz_doc *back = NULL;
    REQUIRE(dcz_doc_read(ba, la, &back) == DCZ_OK, "reading the arithmetic-coded file");
    for (int li = 0; li < 5; li += 2) {
        const dcz_doc_tensor *a = &da->layers[li].t[0], *b = &back->layers[li].t[0];
        CHECK(b->gap_coding == DCZ_CODING_ARITH && b->gap_bits == 1 && b->st.gap_count == b->n,
              "layer %d: positions read as coding %u, %u bits, %u symbols", li, b->gap_coding, b->gap_bits,
              b->st.gap_count);
        CHECK(a->enc != DCZ_ENC_CODEBOOK || b->index_coding == DCZ_CODING_ARITH, "layer %d: indices", li);
        size_t diff = 0;
        for (size_t i = 0; i < a->n; i++)
            diff += a->mask[i] != b->mask[i] || (a->mask[i] && a->values[i] != b->values[i]);
        CHECK(diff == 0, "layer %d: %zu weights differ", li, diff);
    }
    /* and writes it again to the same bytes */
    uint8_t *again = NULL;
    size_t lg = 0;
    CHECK(dcz_doc_write(back, &again, &lg) == DCZ_OK && lg == la && memcmp(again, ba, la) == 0,
          "written again differently");
    free(again);
    dcz_doc_free(back);
    free(bh);
    free(ba);
    dcz_doc_free(dh);
    dcz_doc_free(da);
}

/* The header rules of coding 2, on the first LAYER section of a file
 * written with it (a conv weight of rank 4): a keep mask needs gap_bits 1
 * and gap_count n; a coding above 2 is unsupported, not damaged. */
static dcz_status patched_tensor(const uint8_t *sec, size_t len, size_t at, uint8_t v32, int wide)
{
    uint8_t *copy = malloc(len);
    if (!copy) return DCZ_ERR_NOMEM;
    memcpy(copy, sec, len);
    if (wide) dcz_put32(copy + at, dcz_le32(copy + at) + v32);
    else copy[at] = v32;
    dcz_cur cur;
    uint32_t nt;
    dcz_tensor_view t;
    dcz_status s = dcz_layer_begin(copy, len, &cur, &nt);
    if (s == DCZ_OK) s = dcz_tensor_next(&cur, &t);
    free(copy);
    return s;
}

static void test_header_rules(void)
{
    dcz_doc *d = coded_net(1);
    REQUIRE(d, "document");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_container c;
    REQUIRE(dcz_container_open(buf, len, &c) == DCZ_OK, "open");
    dcz_section sec = { 0 };
    for (uint32_t i = 0; i < c.nsections; i++) {
        dcz_container_section(&c, i, &sec);
        if (sec.type == DCZ_SEC_LAYER) break;
    }
    REQUIRE(sec.type == DCZ_SEC_LAYER, "no LAYER section");
    const uint8_t *p = buf + sec.offset;
    /* tensor count, encoding, rank, 4 dims, payload bytes: the payload at 32 */
    const size_t pay = 4 + 4 + 4 + 16 + 4;
    REQUIRE(dcz_le32(p + 8) == 4 && p[pay + 9] == DCZ_CODING_ARITH && p[pay + 11] == DCZ_CODING_ARITH,
            "layout of the record");
    CHECK(patched_tensor(p, (size_t)sec.size, pay + 9, DCZ_CODING_ARITH, 0) == DCZ_OK, "unchanged record refused");
    CHECK(patched_tensor(p, (size_t)sec.size, pay + 8, 2, 0) == DCZ_ERR_FORMAT, "mask with gap_bits 2 accepted");
    CHECK(patched_tensor(p, (size_t)sec.size, pay + 4, 1, 1) == DCZ_ERR_FORMAT, "mask with gap_count n + 1 accepted");
    CHECK(patched_tensor(p, (size_t)sec.size, pay + 9, 3, 0) == DCZ_ERR_UNSUPPORTED, "position coding 3 not unsupported");
    CHECK(patched_tensor(p, (size_t)sec.size, pay + 11, 3, 0) == DCZ_ERR_UNSUPPORTED, "index coding 3 not unsupported");
    free(buf);
    dcz_doc_free(d);
}

/* The writer's choice: each stream the smallest coding; without arith
 * never coding 2; the same choice twice. */
static void test_choose(void)
{
    dcz_doc *d = coded_net(0);
    REQUIRE(d, "document");
    dcz_doc_tensor *w = &d->layers[2].t[0];   /* fc1: 144 columns, a seventh empty, a seventh full */
    REQUIRE(dcz_doc_tensor_choose_codings(w, 0, 0) == DCZ_OK, "choose without arith");
    CHECK(w->gap_coding != DCZ_CODING_ARITH && w->index_coding != DCZ_CODING_ARITH, "arith chosen");
    uint8_t *b0 = NULL, *b1 = NULL, *b2 = NULL;
    size_t l0 = 0, l1 = 0, l2 = 0;
    REQUIRE(dcz_doc_write(d, &b0, &l0) == DCZ_OK, "write");
    const size_t pos0 = w->st.gap_bytes, idx0 = w->st.index_bytes;
    REQUIRE(dcz_doc_tensor_choose_codings(w, 0, 1) == DCZ_OK, "choose with arith");
    REQUIRE(dcz_doc_write(d, &b1, &l1) == DCZ_OK, "write");
    CHECK(w->st.gap_bytes <= pos0 && w->st.index_bytes <= idx0, "positions %zu > %zu or indices %zu > %zu",
          w->st.gap_bytes, pos0, w->st.index_bytes, idx0);
    CHECK(w->gap_coding == DCZ_CODING_ARITH && w->gap_bits == 1, "structured positions not mask-coded");
    REQUIRE(dcz_doc_tensor_choose_codings(w, 0, 1) == DCZ_OK, "choose again");
    REQUIRE(dcz_doc_write(d, &b2, &l2) == DCZ_OK, "write");
    CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0, "a second choice differs");
    /* a width fixed by the caller keeps gap coding */
    REQUIRE(dcz_doc_tensor_choose_codings(w, 5, 1) == DCZ_OK, "choose at width 5");
    CHECK(w->gap_bits == 5 && w->gap_coding != DCZ_CODING_ARITH, "width 5: %u bits, coding %u", w->gap_bits,
          w->gap_coding);
    free(b0);
    free(b1);
    free(b2);
    dcz_doc_free(d);
}

#endif /* DCZ_RUNTIME_ONLY */

int main(void)
{
    RUN(test_vector_decode);
#ifndef DCZ_RUNTIME_ONLY
    RUN(test_vector_encode);
    RUN(test_mask_roundtrip);
    RUN(test_index_roundtrip);
    RUN(test_compresses);
    RUN(test_truncated);
    RUN(test_corrupted);
    RUN(test_file);
    RUN(test_header_rules);
    RUN(test_choose);
#endif
    return check_summary();
}
