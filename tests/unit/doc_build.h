/* doc_build.h: building document layers by hand, for the tests and the
 * fuzz corpus generator that write .dcz files without a trained net. */
#ifndef DCZ_TESTS_DOC_BUILD_H
#define DCZ_TESTS_DOC_BUILD_H

#include <stdio.h>
#include <stdlib.h>

#include "runtime/doc.h"

/* Makes l a DENSE layer in -> out whose weight (out, in) uses encoding enc:
 * zeroed values; for sparse encodings with gap_bits > 0 a zeroed mask (no
 * weight stored yet); for CODEBOOK a zeroed codebook of 2^index_bits entries
 * and zeroed assignments; a zeroed f32 bias. The caller fills them in. */
static inline void doc_dense_layer(dcz_doc_layer *l, const char *name, uint32_t in, uint32_t out,
                                   uint32_t enc, unsigned gap_bits, unsigned index_bits, uint8_t coding)
{
    l->op = DCZ_OP_DENSE;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->nattr = 2;
    l->attr[0] = (int32_t)in;
    l->attr[1] = (int32_t)out;
    l->ntensors = 2;
    dcz_doc_tensor *w = &l->t[0], *b = &l->t[1];
    w->enc = enc;
    w->rank = 2;
    w->dims[0] = out;
    w->dims[1] = in;
    w->n = (size_t)in * out;
    w->values = calloc(w->n, sizeof(float));
    const int sparse = enc == DCZ_ENC_SPARSE_F32 || enc == DCZ_ENC_CODEBOOK;
    if (sparse) {
        w->gap_bits = (uint8_t)gap_bits;
        w->gap_coding = coding;
        if (gap_bits) w->mask = calloc(w->n, 1);
    }
    if (enc == DCZ_ENC_CODEBOOK) {
        w->index_bits = (uint8_t)index_bits;
        w->index_coding = coding;
        w->k = 1u << index_bits;
        w->codebook = calloc(w->k, sizeof(float));
        w->assign = calloc(w->n, 1);
    }
    b->enc = DCZ_ENC_F32;
    b->rank = 1;
    b->dims[0] = out;
    b->n = out;
    b->values = calloc(out, sizeof(float));
}

#endif
