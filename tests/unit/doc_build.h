/* doc_build.h: building document layers by hand, for the tests and the
 * fuzz corpus generator that write .dcz files without a trained net. */
#ifndef DCZ_TESTS_DOC_BUILD_H
#define DCZ_TESTS_DOC_BUILD_H

#include <stdio.h>
#include <stdlib.h>

#include "model/doc.h"

/* Makes w a weight tensor of the given shape using encoding enc: zeroed
 * values; for sparse encodings with gap_bits > 0 a zeroed mask (no weight
 * stored yet); for CODEBOOK a zeroed codebook of 2^index_bits entries and
 * zeroed assignments. */
static inline void doc_weight_tensor(dcz_doc_tensor *w, uint32_t rank, const uint32_t *dims,
                                     uint32_t enc, unsigned gap_bits, unsigned index_bits,
                                     uint8_t coding)
{
    w->enc = enc;
    w->rank = rank;
    w->n = 1;
    for (uint32_t i = 0; i < rank; i++) {
        w->dims[i] = dims[i];
        w->n *= dims[i];
    }
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
}

/* A zeroed f32 bias (out). */
static inline void doc_bias_tensor(dcz_doc_tensor *b, uint32_t out)
{
    b->enc = DCZ_ENC_F32;
    b->rank = 1;
    b->dims[0] = out;
    b->n = out;
    b->values = calloc(out, sizeof(float));
}

/* Makes l a DENSE layer in -> out whose weight (out, in) uses encoding enc
 * (doc_weight_tensor), with a zeroed f32 bias. The caller fills them in. */
static inline void doc_dense_layer(dcz_doc_layer *l, const char *name, uint32_t in, uint32_t out,
                                   uint32_t enc, unsigned gap_bits, unsigned index_bits, uint8_t coding)
{
    l->op = DCZ_OP_DENSE;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->nattr = 2;
    l->attr[0] = (int32_t)in;
    l->attr[1] = (int32_t)out;
    l->ntensors = 2;
    const uint32_t dims[2] = { out, in };
    doc_weight_tensor(&l->t[0], 2, dims, enc, gap_bits, index_bits, coding);
    doc_bias_tensor(&l->t[1], out);
}

/* Makes l a CONV2D layer in_c -> out_c with a square k x k window, stride
 * and padding, whose weight (out_c, in_c, k, k) uses encoding enc, with a
 * zeroed f32 bias. The caller fills them in. */
static inline void doc_conv_layer(dcz_doc_layer *l, const char *name, uint32_t in_c, uint32_t out_c,
                                  uint32_t k, uint32_t stride, uint32_t pad, uint32_t enc,
                                  unsigned gap_bits, unsigned index_bits, uint8_t coding)
{
    l->op = DCZ_OP_CONV2D;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->nattr = 9;
    const int32_t attr[9] = { (int32_t)in_c, (int32_t)out_c, (int32_t)k, (int32_t)k,
                              (int32_t)stride, (int32_t)stride, (int32_t)pad, (int32_t)pad, 1 };
    for (int i = 0; i < 9; i++) l->attr[i] = attr[i];
    l->ntensors = 2;
    const uint32_t dims[4] = { out_c, in_c, k, k };
    doc_weight_tensor(&l->t[0], 4, dims, enc, gap_bits, index_bits, coding);
    doc_bias_tensor(&l->t[1], out_c);
}

/* Makes the CONV2D layer l grouped: group groups, its weight (out_c,
 * in_c / groups, k, k) made anew (zeroed) with the same encoding. */
static inline void doc_conv_groups(dcz_doc_layer *l, uint32_t groups)
{
    dcz_doc_tensor *w = &l->t[0];
    const uint32_t enc = w->enc, gap = w->gap_bits, ib = w->index_bits;
    const uint8_t coding = enc == DCZ_ENC_CODEBOOK ? w->index_coding : w->gap_coding;
    const uint32_t dims[4] = { w->dims[0], w->dims[1] / groups, w->dims[2], w->dims[3] };
    l->attr[8] = (int32_t)groups;
    dcz_doc_tensor_clear(w);
    doc_weight_tensor(w, 4, dims, enc, gap, ib, coding);
}

/* Makes l a MAXPOOL or AVGPOOL layer with a square k x k window. */
static inline void doc_pool_layer(dcz_doc_layer *l, uint16_t op, const char *name, uint32_t k,
                                  uint32_t stride, uint32_t pad, int count_include_pad)
{
    l->op = op;
    snprintf(l->name, sizeof l->name, "%s", name);
    const int32_t attr[7] = { (int32_t)k, (int32_t)k, (int32_t)stride, (int32_t)stride,
                              (int32_t)pad, (int32_t)pad, count_include_pad };
    l->nattr = op == DCZ_OP_AVGPOOL ? 7 : 6;
    for (uint32_t i = 0; i < l->nattr; i++) l->attr[i] = attr[i];
}

/* Makes l a layer without attributes or parameters (RELU, SOFTMAX,
 * GLOBAL_AVGPOOL, FLATTEN). */
static inline void doc_plain_layer(dcz_doc_layer *l, uint16_t op, const char *name)
{
    l->op = op;
    snprintf(l->name, sizeof l->name, "%s", name);
}

/* Layer l becomes a CHANNEL_SHUFFLE of groups channel groups, or with
 * count > 0 a SLICE of channels from .. from + count - 1. */
static inline void doc_gather_layer(dcz_doc_layer *l, const char *name, int32_t from_or_groups, int32_t count)
{
    doc_plain_layer(l, count ? DCZ_OP_SLICE : DCZ_OP_CHANNEL_SHUFFLE, name);
    l->nattr = count ? 2 : 1;
    l->attr[0] = from_or_groups;
    l->attr[1] = count;
}

#endif
