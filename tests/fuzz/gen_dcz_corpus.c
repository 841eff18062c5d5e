/* gen_dcz_corpus.c: writes the seed corpus of fuzz_dcz into the directory
 * given as argument: small valid files using every encoding and coding, so
 * the fuzzer starts from inputs that reach deep into the readers.
 *   cc -Iinclude -I. tests/fuzz/gen_dcz_corpus.c lib/libdcztool.a lib/libdcz.a -lm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/doc.h"
#include "tests/unit/doc_build.h"

static void dense(dcz_doc_layer *l, const char *name, uint32_t in, uint32_t out, uint32_t enc,
                  unsigned gap_bits, unsigned index_bits, uint8_t coding, unsigned seed)
{
    doc_dense_layer(l, name, in, out, enc, gap_bits, index_bits, coding);
    dcz_doc_tensor *w = &l->t[0];
    for (uint32_t i = 0; i < w->k; i++) w->codebook[i] = (float)i * 0.25f - 0.5f;
    for (size_t i = 0; i < w->n; i++) {
        unsigned h = (unsigned)(i * 2654435761u + seed);
        if (w->mask && (h >> 28) > 5) continue;
        if (w->mask) w->mask[i] = 1;
        if (w->assign) { w->assign[i] = (uint8_t)(h % w->k); w->values[i] = w->codebook[w->assign[i]]; }
        else w->values[i] = (float)(h % 100) / 50.0f - 1.0f;
    }
}

static int emit(const char *dir, const char *name, dcz_doc *d)
{
    uint8_t *buf;
    size_t len;
    char path[4096];
    if (dcz_doc_write(d, &buf, &len) != DCZ_OK) return 1;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len) return 1;
    fclose(f);
    free(buf);
    dcz_doc_free(d);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: gen_dcz_corpus DIR\n"); return 1; }
    const uint32_t encs[] = { DCZ_ENC_F32, DCZ_ENC_F16, DCZ_ENC_SPARSE_F32, DCZ_ENC_CODEBOOK };
    int rc = 0;
    for (int e = 0; e < 4; e++)
        for (uint8_t coding = 0; coding <= 1; coding++) {
            if (e < 2 && coding) continue;
            dcz_doc *d;
            if (dcz_doc_alloc(3, &d) != DCZ_OK) return 1;
            d->input_rank = 1;
            d->input_dims[0] = 20;
            unsigned gap = encs[e] >= DCZ_ENC_SPARSE_F32 ? 3 : 0;
            dense(&d->layers[0], "fc1", 20, 6, encs[e], gap, 2, coding, 7u + (unsigned)e);
            d->layers[1].op = DCZ_OP_RELU;
            snprintf(d->layers[1].name, sizeof d->layers[1].name, "relu1");
            dense(&d->layers[2], "fc2", 6, 3, DCZ_ENC_F32, 0, 0, 0, 3);
            dcz_doc_add_stage(d, "stage = corpus\n");
            char name[64];
            snprintf(name, sizeof name, "enc%u_coding%u.dcz", encs[e], coding);
            rc |= emit(argv[1], name, d);
        }
    /* a dense codebook (every position stored, no gap stream) and a softmax */
    dcz_doc *d;
    if (dcz_doc_alloc(2, &d) != DCZ_OK) return 1;
    d->input_rank = 1;
    d->input_dims[0] = 9;
    dense(&d->layers[0], "fc", 9, 4, DCZ_ENC_CODEBOOK, 0, 3, 1, 11);
    d->layers[1].op = DCZ_OP_SOFTMAX;
    snprintf(d->layers[1].name, sizeof d->layers[1].name, "prob");
    rc |= emit(argv[1], "dense_codebook.dcz", d);
    return rc;
}
