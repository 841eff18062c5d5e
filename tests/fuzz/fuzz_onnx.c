/* fuzz_onnx.c: libFuzzer target for the ONNX importer (dcz_onnx_import).
 *
 * Whatever the bytes, the importer must return a status (with a message
 * when it fails) without crashing, reading out of bounds, recursing without
 * limit or leaking. When it accepts a model, the document must encode
 * (dcz_doc_write: the graph in order, every layer but the last read, every
 * layer's inputs of the shapes it takes), load in the runtime and run one
 * sample, and its ONNX export must import again and give the same outputs
 * (the round trip dcz export promises). The seeds hold graphs (residual
 * Adds, Mul per channel, Concat, grouped convolutions, batch norm in a
 * branch, every activation), so mutations reach the graph code: value
 * aliasing, read counts, folding, dead layers.
 * Seed corpus: tests/fuzz/corpus/onnx/ (written by
 * scripts/make_onnx_fixtures.py); replayed by `make test` through
 * tests/fuzz/replay.c, fuzzed by `make fuzz`.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interop/interop.h"
#include "model/doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs d on one sample x; the outputs in *y (malloc'd), their count in *n. */
static int run_doc(dcz_doc *d, const float *x, float **y, size_t *n)
{
    uint8_t *buf;
    size_t len;
    if (dcz_doc_write(d, &buf, &len) != DCZ_OK) return -1;
    dcz_model *m = NULL;
    dcz_status s = dcz_open_memory(buf, len, NULL, &m);
    free(buf);
    if (s != DCZ_OK) return -1;
    *n = dcz_output_size(m);
    *y = malloc((*n ? *n : 1) * sizeof **y);
    if (!*y || dcz_run(m, x, 1, *y) != DCZ_OK) {
        dcz_close(m);
        return -1;
    }
    dcz_close(m);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dcz_doc *d = NULL;
    dcz_onnx_info info;
    char err[2048];
    if (dcz_onnx_import(data, size, NULL, &d, &info, err, sizeof err) != DCZ_OK) {
        if (!err[0] || d) abort();   /* a failure always says why and returns nothing */
        return 0;
    }
    if (info.nlayers != d->nlayers || !info.source) abort();
    dcz_shape in = { d->input_rank, { 0 } };
    memcpy(in.dims, d->input_dims, sizeof in.dims);
    const size_t n_in = (size_t)dcz_shape_count(&in);
    float *x = malloc((n_in ? n_in : 1) * sizeof *x), *y1 = NULL, *y2 = NULL;
    if (!x) abort();
    for (size_t i = 0; i < n_in; i++) x[i] = (float)(i % 7) * 0.25f - 0.75f;
    size_t n1 = 0, n2 = 0;
    if (run_doc(d, x, &y1, &n1) != 0) abort();   /* an imported model always runs */
    uint8_t *onnx = NULL;
    size_t len = 0;
    if (d->nlayers + 2 < DCZ_MAX_LAYERS) {
        if (dcz_onnx_export(d, NULL, &onnx, &len, err, sizeof err) != DCZ_OK) abort();
        dcz_doc *back = NULL;
        if (dcz_onnx_import(onnx, len, NULL, &back, NULL, err, sizeof err) != DCZ_OK) abort();
        if (run_doc(back, x, &y2, &n2) != 0 || n2 != n1) abort();
        for (size_t i = 0; i < n1; i++)
            if (isfinite(y1[i]) && y1[i] != y2[i]) abort();   /* the same numbers, the same kernels */
        dcz_doc_free(back);
    }
    free(onnx);
    free(x);
    free(y1);
    free(y2);
    dcz_onnx_info_free(&info);
    dcz_doc_free(d);
    return 0;
}
