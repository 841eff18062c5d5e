/* convert.c: dcz_net <-> dcz_doc (see convert.h).
 *
 * Checked by tests/unit/test_convert.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/convert.h"

static void *dup_mem(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

dcz_status dcz_net_from_doc(const dcz_doc *d, dcz_net **out)
{
    dcz_net *net;
    *out = NULL;
    if (d->input_rank == 0) return DCZ_ERR_FORMAT;
    dcz_status s = dcz_net_alloc((int)d->nlayers, &net);
    if (s != DCZ_OK) return s;
    for (uint32_t i = 0; i < d->nlayers && s == DCZ_OK; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        dcz_tlayer *t = &net->layers[i];
        snprintf(t->name, sizeof t->name, "%s", l->name);
        switch (l->op) {
        case DCZ_OP_DENSE: {
            const dcz_doc_tensor *w = &l->t[0], *b = &l->t[1];
            t->kind = DCZ_TL_DENSE;
            t->in = l->attr[0];
            t->out = l->attr[1];
            t->w = dup_mem(w->values, w->n * sizeof(float));
            t->b = dup_mem(b->values, b->n * sizeof(float));
            if (!t->w || !t->b) { s = DCZ_ERR_NOMEM; break; }
            if (w->mask) {
                t->mask = dup_mem(w->mask, w->n);
                if (!t->mask) { s = DCZ_ERR_NOMEM; break; }
            }
            if (w->enc == DCZ_ENC_CODEBOOK) {
                t->k = (int)w->k;
                t->codebook = dup_mem(w->codebook, w->k * sizeof(float));
                t->assign = dup_mem(w->assign, w->n);
                if (!t->codebook || !t->assign) s = DCZ_ERR_NOMEM;
            }
            break;
        }
        case DCZ_OP_RELU:
        case DCZ_OP_SOFTMAX:
            t->kind = l->op == DCZ_OP_RELU ? DCZ_TL_RELU : DCZ_TL_SOFTMAX;
            t->in = t->out = i == 0 ? 0 : net->layers[i - 1].out;
            break;
        default:
            s = DCZ_ERR_UNSUPPORTED;
        }
    }
    if (s == DCZ_OK && net->nlayers > 0 && net->layers[0].kind != DCZ_TL_DENSE) s = DCZ_ERR_UNSUPPORTED;
    if (s == DCZ_OK) s = dcz_net_validate(net);
    if (s != DCZ_OK) {
        dcz_net_free(net);
        return s;
    }
    *out = net;
    return DCZ_OK;
}

static dcz_status fill_tensor(dcz_doc_tensor *t, uint32_t enc, uint32_t rank, const uint32_t *dims,
                              const float *values)
{
    t->enc = enc;
    t->rank = rank;
    t->n = 1;
    for (uint32_t i = 0; i < rank; i++) {
        t->dims[i] = dims[i];
        t->n *= dims[i];
    }
    t->values = dup_mem(values, t->n * sizeof(float));
    return t->values ? DCZ_OK : DCZ_ERR_NOMEM;
}

static unsigned bits_for(int k)
{
    unsigned b = 1;
    while ((1 << b) < k) b++;
    return b;
}

static dcz_status dense_to_doc(const dcz_tlayer *t, const dcz_layer_encoding *e, dcz_doc_layer *l)
{
    l->op = DCZ_OP_DENSE;
    l->nattr = 2;
    l->attr[0] = t->in;
    l->attr[1] = t->out;
    l->ntensors = 2;
    const uint32_t wd[2] = { (uint32_t)t->out, (uint32_t)t->in }, bd[1] = { (uint32_t)t->out };
    dcz_doc_tensor *w = &l->t[0];
    uint32_t enc = t->codebook ? DCZ_ENC_CODEBOOK : t->mask ? DCZ_ENC_SPARSE_F32 : DCZ_ENC_F32;
    dcz_status s = fill_tensor(w, enc, 2, wd, t->w);
    if (s == DCZ_OK) s = fill_tensor(&l->t[1], e->bias_f16 ? DCZ_ENC_F16 : DCZ_ENC_F32, 1, bd, t->b);
    if (s != DCZ_OK || enc == DCZ_ENC_F32) return s;
    const uint8_t coding = e->huffman ? DCZ_CODING_HUFFMAN : DCZ_CODING_RAW;
    w->gap_bits = t->mask ? e->gap_bits : 0;
    if (t->mask && (w->gap_bits < 1 || w->gap_bits > 8)) return DCZ_ERR_ARG;
    w->gap_coding = coding;
    if (t->mask && !(w->mask = dup_mem(t->mask, w->n))) return DCZ_ERR_NOMEM;
    if (enc == DCZ_ENC_CODEBOOK) {
        w->k = (uint32_t)t->k;
        w->index_bits = (uint8_t)(e->index_bits ? e->index_bits : bits_for(t->k));
        w->index_coding = coding;
        w->codebook = dup_mem(t->codebook, (size_t)t->k * sizeof(float));
        w->assign = dup_mem(t->assign, w->n);
        if (!w->codebook || !w->assign) return DCZ_ERR_NOMEM;
    }
    return DCZ_OK;
}

dcz_status dcz_net_to_doc(const dcz_net *net, const dcz_layer_encoding *enc, dcz_doc **out)
{
    dcz_doc *d;
    *out = NULL;
    dcz_status s = dcz_doc_alloc((uint32_t)net->nlayers, &d);
    if (s != DCZ_OK) return s;
    d->input_rank = 1;
    d->input_dims[0] = (uint32_t)net->in_dim;
    for (int i = 0; i < net->nlayers && s == DCZ_OK; i++) {
        const dcz_tlayer *t = &net->layers[i];
        dcz_doc_layer *l = &d->layers[i];
        snprintf(l->name, sizeof l->name, "%s", t->name);
        switch (t->kind) {
        case DCZ_TL_DENSE: s = dense_to_doc(t, &enc[i], l); break;
        case DCZ_TL_RELU: l->op = DCZ_OP_RELU; break;
        case DCZ_TL_SOFTMAX: l->op = DCZ_OP_SOFTMAX; break;
        default: s = DCZ_ERR_INTERNAL;
        }
    }
    if (s != DCZ_OK) {
        dcz_doc_free(d);
        return s;
    }
    *out = d;
    return DCZ_OK;
}
