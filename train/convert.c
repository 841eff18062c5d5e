/* convert.c: dcz_net <-> dcz_doc (see convert.h).
 *
 * Checked by tests/unit/test_convert.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/convert.h"
#include "train/internal.h"

static void *dup_mem(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

/* Copies the weight and bias tensors of a DENSE or CONV2D doc layer into t,
 * with the mask and codebook that describe their compression. */
static dcz_status weights_from_doc(const dcz_doc_layer *l, dcz_tlayer *t)
{
    const dcz_doc_tensor *w = &l->t[0], *b = &l->t[1];
    if (l->ntensors != 2 || w->n != dcz_tlayer_nweights(t) || b->n != dcz_tlayer_nbias(t))
        return DCZ_ERR_SHAPE;
    t->w = dup_mem(w->values, w->n * sizeof(float));
    t->b = dup_mem(b->values, b->n * sizeof(float));
    if (!t->w || !t->b) return DCZ_ERR_NOMEM;
    if (w->mask && !(t->mask = dup_mem(w->mask, w->n))) return DCZ_ERR_NOMEM;
    if (w->enc == DCZ_ENC_CODEBOOK) {
        t->k = (int)w->k;
        t->codebook = dup_mem(w->codebook, w->k * sizeof(float));
        t->assign = dup_mem(w->assign, w->n);
        if (!t->codebook || !t->assign) return DCZ_ERR_NOMEM;
    }
    return DCZ_OK;
}

/* The kind, inputs and settings of t from doc layer l (attributes already
 * checked by the reader): the trainer's entry of the op reads them
 * (dcz_train_op.settings); dcz_net_infer_shapes derives the sizes. */
static dcz_status settings_from_doc(const dcz_doc_layer *l, dcz_tlayer *t)
{
    const dcz_train_op *o = dcz_train_op_get((dcz_op)l->op);
    if (!o) return DCZ_ERR_UNSUPPORTED;
    t->op = (dcz_op)l->op;
    t->nin = l->nin;
    memcpy(t->tin, l->in, sizeof t->tin);
    o->settings(t, l->attr);
    return DCZ_OK;
}

dcz_status dcz_net_from_doc(const dcz_doc *d, dcz_net **out)
{
    dcz_net *net;
    *out = NULL;
    if (d->input_rank == 0 || d->input_rank > 4) return DCZ_ERR_FORMAT;
    dcz_status s = dcz_net_alloc((int)d->nlayers, &net);
    if (s != DCZ_OK) return s;
    net->in_rank = d->input_rank;
    memcpy(net->in_dims, d->input_dims, d->input_rank * sizeof *d->input_dims);
    for (uint32_t i = 0; i < d->nlayers && s == DCZ_OK; i++) {
        snprintf(net->layers[i].name, sizeof net->layers[i].name, "%s", d->layers[i].name);
        s = settings_from_doc(&d->layers[i], &net->layers[i]);
    }
    if (s == DCZ_OK) s = dcz_net_infer_shapes(net);
    for (uint32_t i = 0; i < d->nlayers && s == DCZ_OK; i++)
        if (dcz_tlayer_has_weights(&net->layers[i])) s = weights_from_doc(&d->layers[i], &net->layers[i]);
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

/* The weight and bias of a DENSE or CONV layer, of the shapes its op's
 * attributes give, encoded as its compression state and e ask. */
static dcz_status weights_to_doc(const dcz_tlayer *t, const dcz_layer_encoding *e, dcz_doc_layer *l)
{
    dcz_shape ws, bs;
    if (dcz_op_param_shapes(l->op, l->attr, &ws, &bs) != DCZ_OK) return DCZ_ERR_ARG;
    l->ntensors = 2;
    dcz_doc_tensor *w = &l->t[0];
    uint32_t enc = t->codebook ? DCZ_ENC_CODEBOOK : t->mask ? DCZ_ENC_SPARSE_F32 : DCZ_ENC_F32;
    dcz_status s = fill_tensor(w, enc, ws.rank, ws.dims, t->w);
    if (s == DCZ_OK) s = fill_tensor(&l->t[1], e->bias_f16 ? DCZ_ENC_F16 : DCZ_ENC_F32, bs.rank, bs.dims, t->b);
    if (s != DCZ_OK || enc == DCZ_ENC_F32) return s;
    const uint8_t coding = e->huffman ? DCZ_CODING_HUFFMAN : DCZ_CODING_RAW;
    w->gap_bits = t->mask ? e->gap_bits : 0;
    if (t->mask && (w->gap_bits < 1 || w->gap_bits > 8)) return DCZ_ERR_ARG;
    w->gap_coding = coding;
    if (t->mask && !(w->mask = dup_mem(t->mask, w->n))) return DCZ_ERR_NOMEM;
    if (enc == DCZ_ENC_CODEBOOK) {
        w->k = (uint32_t)t->k;
        w->index_bits = (uint8_t)(e->index_bits ? e->index_bits : dcz_doc_index_bits((uint32_t)t->k));
        w->index_coding = coding;
        w->codebook = dup_mem(t->codebook, (size_t)t->k * sizeof(float));
        w->assign = dup_mem(t->assign, w->n);
        if (!w->codebook || !w->assign) return DCZ_ERR_NOMEM;
    }
    return DCZ_OK;
}

/* Layer t of net as a doc layer: its op's attributes from its settings
 * (dcz_tlayer_attrs), then its parameters. Batch norm and dropout are
 * never stored: fold first. */
static dcz_status layer_to_doc(const dcz_net *net, const dcz_tlayer *t, const dcz_layer_encoding *e,
                               dcz_doc_layer *l)
{
    const dcz_op_info *o = dcz_op_get(t->op);
    if (!o || o->train_only) return DCZ_ERR_UNSUPPORTED;
    if (!net->tshape) return DCZ_ERR_ARG;   /* not validated */
    const uint32_t *in = net->tshape[t->tin[0]];
    l->op = (uint16_t)t->op;
    l->nin = t->nin;
    memcpy(l->in, t->tin, sizeof l->in);
    l->nattr = dcz_tlayer_attrs(t, (dcz_chw){ in[0], in[1], in[2] }, l->attr);
    return o->weighted ? weights_to_doc(t, e, l) : DCZ_OK;
}

dcz_status dcz_net_to_doc(const dcz_net *net, const dcz_layer_encoding *enc, dcz_doc **out)
{
    dcz_doc *d;
    *out = NULL;
    dcz_status s = dcz_doc_alloc((uint32_t)net->nlayers, &d);
    if (s != DCZ_OK) return s;
    if (net->in_rank >= 1 && net->in_rank <= 4) {
        d->input_rank = net->in_rank;
        memcpy(d->input_dims, net->in_dims, net->in_rank * sizeof *net->in_dims);
    } else {
        d->input_rank = 1;
        d->input_dims[0] = (uint32_t)net->in_dim;
    }
    for (int i = 0; i < net->nlayers && s == DCZ_OK; i++) {
        const dcz_tlayer *t = &net->layers[i];
        dcz_doc_layer *l = &d->layers[i];
        snprintf(l->name, sizeof l->name, "%s", t->name);
        s = layer_to_doc(net, t, &enc[i], l);
    }
    if (s != DCZ_OK) {
        dcz_doc_free(d);
        return s;
    }
    *out = d;
    return DCZ_OK;
}
