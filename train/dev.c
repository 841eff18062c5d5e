/* dev.c: the trainer's device path. A net opened on a device (tdev.h)
 * keeps its parameters, gradients, momenta, masks, codebooks, batch-norm
 * statistics and activations there for a whole run; each step's batch is
 * read into page-locked memory and copied over on a stream of its own
 * while the step before still runs (two slots in turn), and the step runs
 * the forward pass, the loss, the backward pass and the SGD step there
 * without the host waiting: every sample's loss stays on the device until
 * the epoch ends. dcz_dev_sync copies the parameters and running
 * statistics back into the host net when the run needs them there
 * (evaluation, writing). Sharded steps run each part there and sum the
 * parts on the host (sgd.c's dcz_shards_grad), and wait for each part.
 *
 * The passes are the CPU trainer's (sgd.c, layers.c), op for op: the same
 * epoch order and augmentation (dcz_train_order), the same graph walk
 * (a tensor several layers read gets the sum of their gradients, the first
 * of them written in place and the others added), dense layers' products
 * as the same sgemm calls (cuBLAS on a GPU); convolutions of one group as
 * one product over the batch's patches (im2col, the product, col2im for
 * the input's gradient), grouped and depthwise ones directly; every other
 * pass one body of train/cuda/tkern.h or runtime/cuda/gpu_elem.h an
 * element. Batch norm keeps no fused activation (a RELU or CLIP after it
 * runs as a layer). Dropout draws its units from a key per layer and step
 * (dcz_tk_dropout_keep), not from the host net's generator. So a fully
 * connected network without dropout trains to the CPU's bits on the host
 * device (tdev_host.c); convolutions and batch norm sum in other orders
 * than the CPU's, and agree within rounding (tests/unit/test_train_dev.c).
 *
 * A teacher (distillation, opt->teacher) is opened on the same device for
 * its forward passes alone, in inference (batch norm by its running
 * statistics, dropout off), with no gradients or momenta; each step copies
 * the batch to it and its logits go into the loss (dcz_tk_xent_row), as
 * sgd.c's teacher_logits.
 *
 * Layers under variational dropout and an update other than SGD
 * (opt->update) are refused with DCZ_ERR_UNSUPPORTED, the reason in
 * dcz_dev_error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/dev.h"
#include "train/internal.h"

/* A layer's device state beside the flat buffers. */
typedef struct dev_layer {
    float *w, *b, *gw, *gb, *vw, *vb;   /* into the flat buffers */
    uint8_t *mask;                      /* (rows, cols) or NULL */
    uint8_t *assign;                    /* codebook layers: (rows, cols) */
    float *codebook, *gcb, *vcb;        /* (k) each */
    uint32_t *members, *mstart;         /* the kept weights of each centroid, ascending; (k + 1) starts */
    uint8_t *keep;                      /* DROPOUT: (cap, in) the step's draws */
    int32_t *arg;                       /* MAXPOOL: (cap, out) the argmax of each output */
    float *mean, *istd, *run_mean, *run_var;   /* BATCHNORM: (C) each */
    double *sums;                       /* BATCHNORM: (2 C) the gradient's sums */
    int32_t *from;                      /* CHANNEL_SHUFFLE, SLICE: (in_c) the output channel each feeds, or -1 */
} dev_layer;

struct dcz_dev_net {
    dcz_tdev *d;
    dcz_net *net;
    int cap;                 /* samples a step at most */
    int train;               /* trained here; 0: a teacher, forward passes in inference alone */
    dcz_dev_net *teacher;    /* the teacher of distillation, opened for the epoch's opt->teacher */
    float *param, *grad, *mom;   /* (param_count) each, laid out as net->param */
    float **act, **dact;     /* tensor t: (cap, twidth[t]) */
    float *gsum;             /* the gradients of a layer's inputs that others read too, added after */
    float *colt, *dcolt;     /* a convolution's patches and their gradient (in_c kh kw, cap out_h out_w) */
    float *rows;             /* a convolution's product or output gradient by rows (out_c, cap out_h out_w) */
    uint8_t *need;           /* (nlayers + 1): tensor t depends on a parameter (host) */
    uint8_t *set;            /* (nlayers + 1): its gradient holds a value this step (host) */
    uint8_t *labels;         /* (cap) */
    double *loss;            /* (cap) */
    double *loss_host;       /* (cap) a sharded step's part's losses */
    /* A step's batch is read while the step before runs: two slots, each
     * page-locked host memory and a device input and labels, taken in
     * turn (slot 0's device buffers are act[0] and labels) */
    float *x_pin[2], *in[2];     /* (cap, in_dim) */
    uint8_t *y_pin[2], *lab[2];  /* (cap) */
    double *losses;          /* (losses_n) every sample's loss of an epoch, read at its end */
    size_t losses_n;
    dev_layer *layers;
    char err[256];
};

const char *dcz_dev_error(const dcz_dev_net *dn) { return dn ? dn->err : ""; }

dcz_status dcz_dev_supports(const dcz_net *net, char *why, size_t whylen)
{
    for (int i = 0; i < net->nlayers; i++) {   /* every operator of a valid net has its passes */
        const dcz_tlayer *l = &net->layers[i];
        if (l->vd_s2) {
            snprintf(why, whylen, "layer %s is under variational dropout, which the GPU trainer does not run",
                     l->name);
            return DCZ_ERR_UNSUPPORTED;
        }
    }
    return DCZ_OK;
}

/* An allocation of n elements of size bytes each on the device. */
static dcz_status dalloc(dcz_dev_net *dn, size_t n, size_t size, void **out)
{
    *out = NULL;
    if (n > SIZE_MAX / size) return DCZ_ERR_NOMEM;
    return dn->d->ops->alloc(dn->d, n * size, out);
}

static void *at_of(const float *host_base, const float *host_ptr, float *dev_base)
{
    return dev_base + (host_ptr - host_base);
}

/* The centroid members of a codebook layer: kept weights by centroid, in
 * ascending order, and the starts. */
static dcz_status upload_codebook(dcz_dev_net *dn, const dcz_tlayer *l, dev_layer *v)
{
    const size_t nw = dcz_tlayer_nweights(l);
    const uint32_t k = (uint32_t)l->k;
    uint32_t *start = calloc((size_t)k + 1, sizeof *start), *members = malloc((nw ? nw : 1) * sizeof *members);
    uint32_t *fill = calloc((size_t)k + 1, sizeof *fill);
    dcz_status s = start && members && fill ? DCZ_OK : DCZ_ERR_NOMEM;
    if (s == DCZ_OK) {
        for (size_t j = 0; j < nw; j++)
            if ((!l->mask || l->mask[j]) && l->assign[j] < k) start[l->assign[j] + 1]++;
        for (uint32_t c = 0; c < k; c++) start[c + 1] += start[c];
        memcpy(fill, start, ((size_t)k + 1) * sizeof *fill);
        for (size_t j = 0; j < nw; j++)
            if ((!l->mask || l->mask[j]) && l->assign[j] < k) members[fill[l->assign[j]]++] = (uint32_t)j;
    }
    const dcz_tdev_ops *o = dn->d->ops;
    if (s == DCZ_OK) s = dalloc(dn, k, sizeof(float), (void **)&v->codebook);
    if (s == DCZ_OK) s = dalloc(dn, k, sizeof(float), (void **)&v->gcb);
    if (s == DCZ_OK) s = dalloc(dn, k, sizeof(float), (void **)&v->vcb);
    if (s == DCZ_OK) s = dalloc(dn, nw, 1, (void **)&v->assign);
    if (s == DCZ_OK) s = dalloc(dn, (size_t)k + 1, sizeof(uint32_t), (void **)&v->mstart);
    if (s == DCZ_OK) s = dalloc(dn, nw ? nw : 1, sizeof(uint32_t), (void **)&v->members);
    if (s == DCZ_OK) s = o->put(dn->d, v->codebook, l->codebook, k * sizeof(float));
    if (s == DCZ_OK) s = o->put(dn->d, v->assign, l->assign, nw);
    if (s == DCZ_OK) s = o->put(dn->d, v->mstart, start, ((size_t)k + 1) * sizeof(uint32_t));
    if (s == DCZ_OK) s = o->put(dn->d, v->members, members, start ? start[k] * sizeof(uint32_t) : 0);
    free(start);
    free(members);
    free(fill);
    return s;
}

/* A layer's own buffers beside the flat ones (dropout's draws, the max
 * pool's argmax, batch norm's statistics, a gather's inverse map, a shared
 * layer's codebook), uploaded. */
static dcz_status open_layer(dcz_dev_net *dn, int i)
{
    dcz_tdev *d = dn->d;
    const dcz_tdev_ops *o = d->ops;
    dcz_net *net = dn->net;
    const dcz_tlayer *l = &net->layers[i];
    dev_layer *v = &dn->layers[i];
    const size_t cap = (size_t)dn->cap;
    dcz_status s = DCZ_OK;
    if (l->op == DCZ_OP_DROPOUT && dn->train) s = dalloc(dn, cap * (size_t)l->in, 1, (void **)&v->keep);
    if (l->op == DCZ_OP_MAXPOOL) s = dalloc(dn, cap * (size_t)l->out, sizeof(int32_t), (void **)&v->arg);
    if (l->op == DCZ_OP_CHANNEL_SHUFFLE || l->op == DCZ_OP_SLICE) {
        int32_t *from = malloc((size_t)l->in_c * sizeof *from);
        if (!from) return DCZ_ERR_NOMEM;
        const uint32_t start = l->op == DCZ_OP_SLICE ? (uint32_t)l->start : 0;
        const uint32_t groups = l->op == DCZ_OP_CHANNEL_SHUFFLE ? (uint32_t)l->group : 1;
        for (int c = 0; c < l->in_c; c++) from[c] = -1;
        for (uint32_t c = 0; c < (uint32_t)l->out_c; c++)
            from[dcz_gather_source(c, (uint32_t)l->out_c, start, groups)] = (int32_t)c;
        s = dalloc(dn, (size_t)l->in_c, sizeof(int32_t), (void **)&v->from);
        if (s == DCZ_OK) s = o->put(d, v->from, from, (size_t)l->in_c * sizeof *from);
        free(from);
    }
    if (l->op == DCZ_OP_BATCHNORM) {
        const size_t C = (size_t)l->in_c;
        s = dalloc(dn, C, sizeof(float), (void **)&v->mean);
        if (s == DCZ_OK) s = dalloc(dn, C, sizeof(float), (void **)&v->istd);
        if (s == DCZ_OK) s = dalloc(dn, C, sizeof(float), (void **)&v->run_mean);
        if (s == DCZ_OK) s = dalloc(dn, C, sizeof(float), (void **)&v->run_var);
        if (s == DCZ_OK) s = dalloc(dn, 2 * C, sizeof(double), (void **)&v->sums);
        if (s == DCZ_OK) s = o->put(d, v->run_mean, l->run_mean, C * sizeof(float));
        if (s == DCZ_OK) s = o->put(d, v->run_var, l->run_var, C * sizeof(float));
    }
    if (s != DCZ_OK || !dcz_tlayer_has_params(l)) return s;
    v->w = at_of(net->param, l->w, dn->param);
    v->b = at_of(net->param, l->b, dn->param);
    if (!dn->train) return s;   /* a teacher's weights as they are */
    v->gw = at_of(net->param, l->w, dn->grad);
    v->gb = at_of(net->param, l->b, dn->grad);
    v->vw = at_of(net->param, l->w, dn->mom);
    v->vb = at_of(net->param, l->b, dn->mom);
    const size_t nw = dcz_tlayer_nweights(l);
    if (l->mask && (s = dalloc(dn, nw, 1, (void **)&v->mask)) == DCZ_OK) s = o->put(d, v->mask, l->mask, nw);
    if (l->codebook && s == DCZ_OK) s = upload_codebook(dn, l, v);
    return s;
}

/* The scratch a step needs: the gradients summed into tensors several
 * layers read, and the patches of the largest convolution run over them. */
static dcz_status open_scratch(dcz_dev_net *dn)
{
    const dcz_net *net = dn->net;
    size_t sum = 0, colt = 0, rows = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        size_t in = 0;
        for (uint32_t k = 0; k < l->nin; k++) in += net->twidth[l->tin[k]];
        if (in > sum) sum = in;
        if (l->op != DCZ_OP_CONV2D || dcz_tlayer_groups(l) != 1) continue;
        const size_t P = (size_t)l->out_h * (size_t)l->out_w;
        if (dcz_tlayer_wcols(l) * P > colt) colt = dcz_tlayer_wcols(l) * P;
        if ((size_t)l->out_c * P > rows) rows = (size_t)l->out_c * P;
    }
    const size_t cap = (size_t)dn->cap;
    dcz_status s = dn->train ? dalloc(dn, cap * sum, sizeof(float), (void **)&dn->gsum) : DCZ_OK;
    if (s == DCZ_OK && colt) s = dalloc(dn, cap * colt, sizeof(float), (void **)&dn->colt);
    if (s == DCZ_OK && colt && dn->train) s = dalloc(dn, cap * colt, sizeof(float), (void **)&dn->dcolt);
    if (s == DCZ_OK && rows) s = dalloc(dn, cap * rows, sizeof(float), (void **)&dn->rows);
    return s;
}

/* What training adds to a net opened on the device: gradients, momenta,
 * labels, losses, activation gradients and the second staging slot. */
static dcz_status open_training(dcz_dev_net *dn)
{
    dcz_tdev *d = dn->d;
    const dcz_net *net = dn->net;
    const size_t P = net->param_count, cap = (size_t)dn->cap;
    dcz_status s = dalloc(dn, P, sizeof(float), (void **)&dn->grad);
    if (s == DCZ_OK) s = dalloc(dn, P, sizeof(float), (void **)&dn->mom);
    if (s == DCZ_OK) s = dalloc(dn, cap, 1, (void **)&dn->labels);
    if (s == DCZ_OK) s = dalloc(dn, cap, sizeof(double), (void **)&dn->loss);
    for (int t = 0; t <= net->nlayers && s == DCZ_OK; t++)
        s = dalloc(dn, cap * net->twidth[t], sizeof(float), (void **)&dn->dact[t]);
    for (int k = 0; k < 2 && s == DCZ_OK; k++) {
        s = d->ops->host_alloc(d, cap * (size_t)net->in_dim * sizeof(float), (void **)&dn->x_pin[k]);
        if (s == DCZ_OK) s = d->ops->host_alloc(d, cap, (void **)&dn->y_pin[k]);
    }
    if (s == DCZ_OK) s = dalloc(dn, cap * (size_t)net->in_dim, sizeof(float), (void **)&dn->in[1]);
    if (s == DCZ_OK) s = dalloc(dn, cap, 1, (void **)&dn->lab[1]);
    dn->in[0] = dn->act[0];
    dn->lab[0] = dn->labels;
    return s;
}

/* dcz_dev_open, or (train 0) a teacher's net for forward passes in
 * inference alone: its parameters as they are, its activations, and no
 * gradients, momenta, masks, codebooks or staging slots. */
static dcz_status open_net(dcz_tdev *d, dcz_net *net, int cap, int train, dcz_dev_net **out)
{
    *out = NULL;
    if (!d || !net || cap < 1) return DCZ_ERR_ARG;
    dcz_status s = dcz_net_validate(net);
    if (s != DCZ_OK) return s;
    dcz_dev_net *dn = calloc(1, sizeof *dn);
    if (!dn) return DCZ_ERR_NOMEM;
    dn->d = d;
    dn->net = net;
    dn->cap = cap;
    dn->train = train;
    *out = dn;
    if (train && (s = dcz_dev_supports(net, dn->err, sizeof dn->err)) != DCZ_OK) return s;
    const dcz_tdev_ops *o = d->ops;
    const int L = net->nlayers;
    dn->act = calloc((size_t)L + 1, sizeof *dn->act);
    dn->dact = calloc((size_t)L + 1, sizeof *dn->dact);
    dn->layers = calloc((size_t)L, sizeof *dn->layers);
    dn->need = calloc((size_t)L + 1, 1);
    dn->set = calloc((size_t)L + 1, 1);
    dn->loss_host = malloc((size_t)cap * sizeof *dn->loss_host);
    if (!dn->act || !dn->dact || !dn->layers || !dn->need || !dn->set || !dn->loss_host) return DCZ_ERR_NOMEM;
    dcz_train_need(net, dn->need);
    const size_t P = net->param_count;
    s = dalloc(dn, P, sizeof(float), (void **)&dn->param);
    for (int t = 0; t <= L && s == DCZ_OK; t++)
        s = dalloc(dn, (size_t)cap * net->twidth[t], sizeof(float), (void **)&dn->act[t]);
    if (s == DCZ_OK) s = open_scratch(dn);
    if (train) {   /* a student's state, its constraints applied; a teacher's weights stay as they are */
        if (s == DCZ_OK) s = open_training(dn);
        dcz_net_apply_constraints(net);
    }
    if (s == DCZ_OK) s = o->put(d, dn->param, net->param, P * sizeof(float));
    for (int i = 0; i < L && s == DCZ_OK; i++) s = open_layer(dn, i);
    if (s != DCZ_OK && !dn->err[0]) snprintf(dn->err, sizeof dn->err, "%s", d->err[0] ? d->err : dcz_status_str(s));
    return s;
}

dcz_status dcz_dev_open(dcz_tdev *d, dcz_net *net, int cap, dcz_dev_net **out)
{
    return open_net(d, net, cap, 1, out);
}

void dcz_dev_close(dcz_dev_net *dn)
{
    if (!dn) return;
    dcz_dev_close(dn->teacher);
    const dcz_tdev_ops *o = dn->d->ops;
    for (int t = 0; dn->act && dn->dact && t <= dn->net->nlayers; t++) {
        o->free(dn->d, dn->act[t]);
        o->free(dn->d, dn->dact[t]);
    }
    for (int i = 0; dn->layers && i < dn->net->nlayers; i++) {
        dev_layer *v = &dn->layers[i];
        o->free(dn->d, v->mask);
        o->free(dn->d, v->assign);
        o->free(dn->d, v->codebook);
        o->free(dn->d, v->gcb);
        o->free(dn->d, v->vcb);
        o->free(dn->d, v->members);
        o->free(dn->d, v->mstart);
        o->free(dn->d, v->keep);
        o->free(dn->d, v->arg);
        o->free(dn->d, v->mean);
        o->free(dn->d, v->istd);
        o->free(dn->d, v->run_mean);
        o->free(dn->d, v->run_var);
        o->free(dn->d, v->sums);
        o->free(dn->d, v->from);
    }
    o->free(dn->d, dn->gsum);
    o->free(dn->d, dn->colt);
    o->free(dn->d, dn->dcolt);
    o->free(dn->d, dn->rows);
    o->free(dn->d, dn->param);
    o->free(dn->d, dn->grad);
    o->free(dn->d, dn->mom);
    o->free(dn->d, dn->labels);
    o->free(dn->d, dn->loss);
    o->free(dn->d, dn->in[1]);
    o->free(dn->d, dn->lab[1]);
    o->free(dn->d, dn->losses);
    for (int k = 0; k < 2; k++) {
        o->host_free(dn->d, dn->x_pin[k]);
        o->host_free(dn->d, dn->y_pin[k]);
    }
    free(dn->act);
    free(dn->dact);
    free(dn->layers);
    free(dn->need);
    free(dn->set);
    free(dn->loss_host);
    free(dn);
}

dcz_status dcz_dev_sync(dcz_dev_net *dn)
{
    const dcz_tdev_ops *o = dn->d->ops;
    dcz_net *net = dn->net;
    dcz_status s = o->get(dn->d, net->param, dn->param, net->param_count * sizeof(float));
    for (int i = 0; i < net->nlayers && s == DCZ_OK; i++) {
        dcz_tlayer *l = &net->layers[i];
        const dev_layer *v = &dn->layers[i];
        if (l->codebook) s = o->get(dn->d, l->codebook, v->codebook, (size_t)l->k * sizeof(float));
        if (s == DCZ_OK && l->op == DCZ_OP_BATCHNORM) {
            s = o->get(dn->d, l->run_mean, v->run_mean, (size_t)l->in_c * sizeof(float));
            if (s == DCZ_OK) s = o->get(dn->d, l->run_var, v->run_var, (size_t)l->in_c * sizeof(float));
        }
    }
    return s;
}

/* The width of the tensor layer l reads as its input k: a MUL's factors, a
 * CONCAT's parts. */
static uint32_t width_of(const dcz_dev_net *dn, const dcz_tlayer *l, uint32_t k)
{
    return dn->net->twidth[l->tin[k]];
}

/* A convolution of one group, forward: the batch's patches, W times them
 * (out_c, batch out_h out_w), each row's bias added as it goes to y. */
static dcz_status conv_patches(dcz_dev_net *dn, const dcz_tlayer *l, const dev_layer *v, const float *x, int batch,
                               float *y)
{
    dcz_tdev *d = dn->d;
    const dcz_tdev_ops *o = d->ops;
    const dcz_conv_geom g = dcz_tlayer_geom(l);
    const int K = (int)dcz_tlayer_wcols(l), ohw = l->out_h * l->out_w, P = batch * ohw;
    dcz_status s = o->im2col(d, &g, x, (uint32_t)batch, dn->colt);
    if (s == DCZ_OK) s = o->sgemm(d, 0, 0, l->out_c, P, K, 1.0f, v->w, K, dn->colt, P, 0.0f, dn->rows, P);
    return s == DCZ_OK ? o->bias_rows(d, dn->rows, v->b, (uint32_t)batch, (uint32_t)l->out_c, (uint32_t)ohw, y) : s;
}

/* Layer i's forward pass over the batch: in training mode, or in
 * inference for a teacher (dn->train 0). */
static dcz_status forward(dcz_dev_net *dn, int i, int batch)
{
    dcz_tdev *d = dn->d;
    const dcz_tdev_ops *o = d->ops;
    dcz_tlayer *l = &dn->net->layers[i];
    const dev_layer *v = &dn->layers[i];
    const float *x = dn->act[l->tin[0]];
    float *y = dn->act[i + 1];
    const size_t n = (size_t)batch * (size_t)l->out;
    const dcz_conv_geom g = dcz_tlayer_geom(l);
    const uint32_t B = (uint32_t)batch, hw = (uint32_t)(l->in_h * l->in_w);
    switch (l->op) {
    case DCZ_OP_DENSE: {
        /* y = x W^T + b, as dense_forward */
        dcz_status s = o->rows(d, v->b, (size_t)batch, (uint32_t)l->out, y);
        return s == DCZ_OK ? o->sgemm(d, 0, 1, batch, l->out, l->in, 1.0f, x, l->in, v->w, l->in, 1.0f, y, l->out) : s;
    }
    case DCZ_OP_CONV2D:
        if (dcz_tlayer_groups(l) == 1) return conv_patches(dn, l, v, x, batch, y);
        return o->conv(d, &g, v->w, v->b, x, B, y);
    case DCZ_OP_MAXPOOL:
    case DCZ_OP_AVGPOOL:
        return o->pool(d, &g, l->op == DCZ_OP_AVGPOOL, l->count_include_pad, x, B, v->arg, y);
    case DCZ_OP_GLOBAL_AVGPOOL:
        return o->gap(d, x, (size_t)batch * (size_t)l->in_c, hw, y);
    case DCZ_OP_BATCHNORM:
        if (!dn->train)
            return o->bn_infer(d, x, B, (uint32_t)l->in_c, hw, l->eps, v->w, v->b, v->run_mean, v->run_var, y);
        return o->bn(d, x, B, (uint32_t)l->in_c, hw, l->eps, l->bn_momentum, v->w, v->b, v->mean, v->istd, v->run_mean,
                     v->run_var, y);
    case DCZ_OP_ADD:
        return o->add(d, x, dn->act[l->tin[1]], n, y);
    case DCZ_OP_MUL: {
        const uint32_t C = width_of(dn, l, 1);
        return o->mul(d, x, dn->act[l->tin[1]], B, C, (uint32_t)l->out / C, y);
    }
    case DCZ_OP_CONCAT: {
        dcz_status s = DCZ_OK;
        for (uint32_t k = 0, at = 0; k < l->nin && s == DCZ_OK; at += width_of(dn, l, k), k++)
            s = o->concat_put(d, dn->act[l->tin[k]], B, width_of(dn, l, k), (uint32_t)l->out, at, y);
        return s;
    }
    case DCZ_OP_CHANNEL_SHUFFLE:
    case DCZ_OP_SLICE:
        return o->gather(d, &g, l->op == DCZ_OP_SLICE ? (uint32_t)l->start : 0,
                         l->op == DCZ_OP_CHANNEL_SHUFFLE ? (uint32_t)l->group : 1, x, B, y);
    case DCZ_OP_SOFTMAX:   /* the identity while training: the loss holds it */
    case DCZ_OP_FLATTEN:
        return o->copy(d, y, x, n * sizeof(float));
    case DCZ_OP_DROPOUT:
        if (l->rate <= 0.0f || !dn->train) return o->copy(d, y, x, n * sizeof(float));
        return o->dropout(d, x, n, dcz_rng_u64(&dn->net->rng), l->rate, v->keep, y);
    default:   /* the activations */
        return o->act(d, (uint16_t)l->op, l->param[0], l->param[1], x, n, y);
    }
}

/* A convolution's bias, weight and input gradients (dx NULL: none). */
static dcz_status conv_backward(dcz_dev_net *dn, const dcz_tlayer *l, const dev_layer *v, const float *x,
                                const float *dy, int batch, float *dx)
{
    dcz_tdev *d = dn->d;
    const dcz_tdev_ops *o = d->ops;
    const dcz_conv_geom g = dcz_tlayer_geom(l);
    const uint32_t B = (uint32_t)batch, ohw = (uint32_t)(l->out_h * l->out_w);
    dcz_status s = o->bias_grad(d, dy, B, (uint32_t)l->out_c, ohw, v->gb);
    if (dcz_tlayer_groups(l) != 1) {
        if (s == DCZ_OK) s = o->conv_dw(d, &g, x, dy, B, v->gw);
        return s == DCZ_OK && dx ? o->conv_dx(d, &g, v->w, dy, B, dx) : s;
    }
    /* over the patches: dY by rows, gW = dY colt^T, dcolt = W^T dY */
    const int K = (int)dcz_tlayer_wcols(l), P = batch * (int)ohw;
    if (s == DCZ_OK) s = o->by_rows(d, dy, B, (uint32_t)l->out_c, ohw, dn->rows);
    if (s == DCZ_OK) s = o->im2col(d, &g, x, B, dn->colt);
    if (s == DCZ_OK) s = o->sgemm(d, 0, 1, l->out_c, K, P, 1.0f, dn->rows, P, dn->colt, P, 0.0f, v->gw, K);
    if (s != DCZ_OK || !dx) return s;
    s = o->sgemm(d, 1, 0, K, P, l->out_c, 1.0f, v->w, K, dn->rows, P, 0.0f, dn->dcolt, P);
    return s == DCZ_OK ? o->col2im(d, &g, dn->dcolt, B, dx) : s;
}

/* Layer i's backward pass: the gradient of each input k into dx[k] (NULL:
 * not needed), the parameters' gradients, and a shared layer's centroids'
 * (the sums over their kept weights). A pruned weight's gradient is left as
 * the product gives it: its step (dcz_tk_sgd) keeps it at 0 whatever the
 * gradient. */
static dcz_status backward(dcz_dev_net *dn, int i, int batch, float *const *dx)
{
    dcz_tdev *d = dn->d;
    const dcz_tdev_ops *o = d->ops;
    dcz_tlayer *l = &dn->net->layers[i];
    const dev_layer *v = &dn->layers[i];
    const float *x = dn->act[l->tin[0]], *y = dn->act[i + 1], *dy = dn->dact[i + 1];
    const size_t n = (size_t)batch * (size_t)l->in;
    const dcz_conv_geom g = dcz_tlayer_geom(l);
    const uint32_t B = (uint32_t)batch, hw = (uint32_t)(l->in_h * l->in_w);
    dcz_status s = DCZ_OK;
    switch (l->op) {
    case DCZ_OP_DENSE:
        /* gW (out, in) = dy^T x; gb = column sums of dy; dx = dy W */
        s = o->sgemm(d, 1, 0, l->out, l->in, batch, 1.0f, dy, l->out, x, l->in, 0.0f, v->gw, l->in);
        if (s == DCZ_OK) s = o->bias_grad(d, dy, B, (uint32_t)l->out, 1, v->gb);
        if (s == DCZ_OK && dx[0])
            s = o->sgemm(d, 0, 0, batch, l->in, l->out, 1.0f, dy, l->out, v->w, l->in, 0.0f, dx[0], l->in);
        break;
    case DCZ_OP_CONV2D:
        s = conv_backward(dn, l, v, x, dy, batch, dx[0]);
        break;
    case DCZ_OP_MAXPOOL:
    case DCZ_OP_AVGPOOL:
        return dx[0] ? o->pool_grad(d, &g, l->op == DCZ_OP_AVGPOOL, l->count_include_pad, dy, v->arg, B, dx[0]) : s;
    case DCZ_OP_GLOBAL_AVGPOOL:
        return dx[0] ? o->gap_grad(d, dy, (size_t)batch * (size_t)l->in_c, hw, dx[0]) : s;
    case DCZ_OP_BATCHNORM:
        return o->bn_grad(d, x, dy, B, (uint32_t)l->in_c, hw, v->w, v->mean, v->istd, v->sums, v->gw, v->gb, dx[0]);
    case DCZ_OP_ADD:
        for (int k = 0; k < 2 && s == DCZ_OK; k++)
            if (dx[k]) s = o->copy(d, dx[k], dy, (size_t)batch * (size_t)l->out * sizeof(float));
        return s;
    case DCZ_OP_MUL: {
        const uint32_t C = width_of(dn, l, 1);
        if (!dx[0] && !dx[1]) return s;
        return o->mul_grad(d, x, dn->act[l->tin[1]], dy, B, C, (uint32_t)l->out / C, dx[0], dx[1]);
    }
    case DCZ_OP_CONCAT:
        for (uint32_t k = 0, at = 0; k < l->nin && s == DCZ_OK; at += width_of(dn, l, k), k++)
            if (dx[k]) s = o->concat_grad(d, dy, B, width_of(dn, l, k), (uint32_t)l->out, at, dx[k]);
        return s;
    case DCZ_OP_CHANNEL_SHUFFLE:
    case DCZ_OP_SLICE:
        return dx[0] ? o->gather_grad(d, &g, v->from, dy, B, dx[0]) : s;
    case DCZ_OP_SOFTMAX:
    case DCZ_OP_FLATTEN:
        return dx[0] ? o->copy(d, dx[0], dy, n * sizeof(float)) : s;
    case DCZ_OP_DROPOUT:
        if (!dx[0]) return s;
        if (l->rate <= 0.0f) return o->copy(d, dx[0], dy, n * sizeof(float));
        return o->dropout_grad(d, dy, v->keep, n, l->rate, dx[0]);
    default:
        return dx[0] ? o->act_grad(d, (uint16_t)l->op, l->param[0], l->param[1], x, y, dy, n, dx[0]) : s;
    }
    if (s == DCZ_OK && v->codebook) s = o->centroid_grads(d, v->gw, v->members, v->mstart, (uint32_t)l->k, v->gcb);
    return s;
}

/* The backward pass of the whole net over the batch, from the loss's
 * gradient in dact[nlayers]: only tensors that depend on parameters get
 * gradients; a tensor read by several layers gets the sum of theirs, the
 * first of them (last in layer order) written in place, the others written
 * into gsum and added (grad_core's walk). */
static dcz_status backward_all(dcz_dev_net *dn, int batch)
{
    const dcz_net *net = dn->net;
    const dcz_tdev_ops *o = dn->d->ops;
    const int L = net->nlayers;
    memset(dn->set, 0, (size_t)L + 1);
    dn->set[L] = 1;
    dcz_status s = DCZ_OK;
    for (int i = L - 1; i >= 0 && s == DCZ_OK; i--) {
        const dcz_tlayer *l = &net->layers[i];
        if (!dn->need[i + 1] || !dn->set[i + 1]) continue;
        float *dx[DCZ_MAX_INPUTS];
        dcz_train_grad_dests(net, dn->need, dn->set, i, batch, dn->dact, dn->gsum, dx);
        s = backward(dn, i, batch, dx);
        for (uint32_t k = 0; k < l->nin && s == DCZ_OK; k++) {
            const uint32_t t = l->tin[k];
            if (!dx[k]) continue;
            if (dx[k] != dn->dact[t]) s = o->add(dn->d, dn->dact[t], dx[k], (size_t)batch * net->twidth[t], dn->dact[t]);
            dn->set[t] = 1;
        }
    }
    return s;
}

/* The SGD step of every parameter, as dcz_net_step. */
static dcz_status update(dcz_dev_net *dn, const dcz_sgd *opt, float lr)
{
    dcz_tdev *d = dn->d;
    const dcz_tdev_ops *o = d->ops;
    dcz_status s = DCZ_OK;
    for (int i = 0; i < dn->net->nlayers && s == DCZ_OK; i++) {
        const dcz_tlayer *l = &dn->net->layers[i];
        const dev_layer *v = &dn->layers[i];
        if (!dcz_tlayer_has_params(l)) continue;
        if (opt->train_biases) s = o->sgd(d, v->b, v->vb, v->gb, NULL, dcz_tlayer_nbias(l), lr, opt->momentum, 0.0f);
        if (s != DCZ_OK || !opt->train_weights) continue;
        const size_t nw = dcz_tlayer_nweights(l);
        if (l->op == DCZ_OP_BATCHNORM) {   /* gamma: momentum, no weight decay */
            s = o->sgd(d, v->w, v->vw, v->gw, NULL, dcz_tlayer_nbias(l), lr, opt->momentum, 0.0f);
        } else if (v->codebook) {
            s = o->sgd(d, v->codebook, v->vcb, v->gcb, NULL, (size_t)l->k, lr, opt->momentum, 0.0f);
            if (s == DCZ_OK) s = o->shared(d, v->codebook, (uint32_t)l->k, v->assign, v->mask, nw, v->w);
        } else {
            s = o->sgd(d, v->w, v->vw, v->gw, v->mask, nw, lr, opt->momentum, opt->weight_decay);
        }
    }
    return s;
}

/* The forward passes of the batch in act[0] and the loss, each sample's
 * into losses (device memory): with a teacher, its logits of the same
 * samples first (sgd.c's teacher_logits), and their term in the loss. */
static dcz_status forward_loss(dcz_dev_net *dn, int batch, const dcz_sgd *opt, double *losses)
{
    const dcz_net *net = dn->net;
    const dcz_tdev_ops *o = dn->d->ops;
    const int L = net->nlayers;
    dcz_dev_net *t = dn->teacher;
    dcz_status s = DCZ_OK;
    if (t) {
        const int tl = t->net->nlayers;
        s = o->copy(dn->d, t->act[0], dn->act[0], (size_t)batch * (size_t)net->in_dim * sizeof(float));
        for (int i = 0; i < tl && s == DCZ_OK; i++) s = forward(t, i, batch);
        if (s != DCZ_OK && !dn->err[0])
            snprintf(dn->err, sizeof dn->err, "the teacher's forward pass: %.200s", t->d->err);
    }
    for (int i = 0; i < L && s == DCZ_OK; i++) s = forward(dn, i, batch);
    if (s != DCZ_OK) return s;
    return o->xent(dn->d, dn->act[L], dn->labels, t ? t->act[t->net->nlayers] : NULL, opt->distill, opt->temperature,
                   (uint32_t)batch, (uint32_t)net->classes, dn->dact[L], losses);
}

/* One step over the batch in act[0] and labels: forward, loss (each
 * sample's into the device's losses), backward, update; nothing waits for
 * it. */
static dcz_status train_step(dcz_dev_net *dn, int batch, const dcz_sgd *opt, float lr, double *losses)
{
    dcz_status s = forward_loss(dn, batch, opt, losses);
    if (s == DCZ_OK) s = backward_all(dn, batch);
    return s == DCZ_OK ? update(dn, opt, lr) : s;
}

/* The mean loss of a batch from its samples' (grad_core's arithmetic). */
static double batch_loss(const double *rows, int batch)
{
    double t = 0;
    for (int r = 0; r < batch; r++) t += rows[r];
    return t / batch;
}

/* The gradients the sharded sums read and write, device to host (dir 1)
 * or host to device (dir 0): each weighted layer's weights' (its
 * centroids' when shared) and biases', batch norm's gamma's and beta's;
 * with them the batch-norm running statistics. */
static dcz_status move_grads(dcz_dev_net *dn, int dir)
{
    dcz_net *net = dn->net;
    const dcz_tdev_ops *o = dn->d->ops;
    dcz_status s = DCZ_OK;
    for (int i = 0; i < net->nlayers && s == DCZ_OK; i++) {
        dcz_tlayer *l = &net->layers[i];
        const dev_layer *v = &dn->layers[i];
        if (!dcz_tlayer_has_params(l)) continue;
        const size_t nb = dcz_tlayer_nbias(l), nw = l->op == DCZ_OP_BATCHNORM ? nb : dcz_tlayer_nweights(l);
        const struct { float *host, *dev; size_t n; } part[5] = {
            { l->gw, v->gw, l->codebook ? 0 : nw }, { l->gb, v->gb, nb }, { l->gcb, v->gcb, l->codebook ? (size_t)l->k : 0 },
            { l->run_mean, v->run_mean, l->op == DCZ_OP_BATCHNORM ? nb : 0 },
            { l->run_var, v->run_var, l->op == DCZ_OP_BATCHNORM ? nb : 0 },
        };
        for (int p = 0; p < 5 && s == DCZ_OK; p++) {
            if (!part[p].n) continue;
            s = dir ? o->get(dn->d, part[p].host, part[p].dev, part[p].n * sizeof(float))
                    : o->put(dn->d, part[p].dev, part[p].host, part[p].n * sizeof(float));
        }
    }
    return s;
}

/* The options of the sharded step running (device_part's). */
typedef struct part_ctx {
    dcz_dev_net *dn;
    const dcz_sgd *opt;
} part_ctx;

/* One part of a sharded step on the device (a dcz_part_fn): its samples
 * and labels over, its forward, loss and backward passes there, its
 * gradients and running statistics back in the host net. */
static dcz_status device_part(dcz_net *net, const uint8_t *y, int batch, void *ctx, double *loss)
{
    const part_ctx *pc = ctx;
    dcz_dev_net *dn = pc->dn;
    const dcz_tdev_ops *o = dn->d->ops;
    dcz_status s = o->put(dn->d, dn->act[0], net->act[0], (size_t)batch * (size_t)net->in_dim * sizeof(float));
    if (s == DCZ_OK) s = o->put(dn->d, dn->labels, y, (size_t)batch);
    if (s == DCZ_OK) s = forward_loss(dn, batch, pc->opt, dn->loss);
    if (s == DCZ_OK) s = backward_all(dn, batch);
    if (s == DCZ_OK) s = o->get(dn->d, dn->loss_host, dn->loss, (size_t)batch * sizeof(double));
    if (s == DCZ_OK) s = move_grads(dn, 1);
    *loss = batch_loss(dn->loss_host, batch);
    return s;
}

dcz_status dcz_dev_train_epoch(dcz_dev_net *dn, const dcz_dataset *data, const dcz_sgd *opt, dcz_rng *rng,
                               dcz_progress_fn progress, void *ctx, float *loss)
{
    if (!dn || !opt || !rng) return DCZ_ERR_ARG;
    dcz_net *net = dn->net;
    if (!dcz_sgd_valid(opt)) return DCZ_ERR_ARG;
    if (opt->update) {
        snprintf(dn->err, sizeof dn->err, "the GPU trainer runs plain SGD");
        return DCZ_ERR_UNSUPPORTED;
    }
    dcz_status s = dcz_train_check_data(net, data);
    if (s != DCZ_OK) return s;
    if (dn->teacher && dn->teacher->net != opt->teacher) {
        dcz_dev_close(dn->teacher);
        dn->teacher = NULL;
    }
    if (opt->teacher && !dn->teacher) {
        const dcz_net *t = opt->teacher;
        if (t == net) return DCZ_ERR_ARG;   /* its logits would be the net's own (dcz_train_epoch's rule) */
        if (t->in_dim != net->in_dim || t->classes != net->classes) {
            snprintf(dn->err, sizeof dn->err, "the teacher reads %d values and gives %d classes, the net %d and %d",
                     t->in_dim, t->classes, net->in_dim, net->classes);
            return DCZ_ERR_SHAPE;
        }
        s = open_net(dn->d, opt->teacher, dn->cap, 0, &dn->teacher);
        if (s != DCZ_OK) {
            snprintf(dn->err, sizeof dn->err, "opening the teacher: %.200s",
                     dn->teacher && dn->teacher->err[0] ? dn->teacher->err : dcz_status_str(s));
            dcz_dev_close(dn->teacher);
            dn->teacher = NULL;
            return s;
        }
    }
    if (opt->augment & DCZ_AUG_CROP && !data->files) return DCZ_ERR_UNSUPPORTED;   /* no image to crop */
    const size_t n = data->n;
    const int bmax = (size_t)opt->batch < n ? opt->batch : (int)n;
    if (bmax > dn->cap) return DCZ_ERR_ARG;
    size_t *perm = malloc(n * sizeof *perm);
    if (!perm) return DCZ_ERR_NOMEM;
    dcz_augment aug;
    dcz_train_order(rng, n, opt->augment, perm, &aug);
    const dcz_augment *augp = aug.what ? &aug : NULL;
    const size_t steps = (n + (size_t)bmax - 1) / (size_t)bmax;
    const dcz_tdev_ops *o = dn->d->ops;
    double total = 0;
    /* sharded steps: the parts on the device, their sums on the host */
    dcz_shards *sh = NULL;
    uint8_t *yb = NULL;
    if (opt->shards > 1 || opt->comm) {
        s = dcz_net_reserve(net, bmax, 1);
        if (s == DCZ_OK) s = dcz_net_flatten(net, DCZ_FLAT_GRAD);
        if (s == DCZ_OK) s = dcz_shards_new(net, opt, &sh);
        if (s == DCZ_OK && !(yb = malloc((size_t)bmax))) s = DCZ_ERR_NOMEM;
    }
    if (s == DCZ_OK && !sh && n > dn->losses_n) {
        o->free(dn->d, dn->losses);
        dn->losses = NULL;
        dn->losses_n = 0;
        if ((s = dalloc(dn, n, sizeof(double), (void **)&dn->losses)) == DCZ_OK) dn->losses_n = n;
    }
    for (size_t start = 0; start < n && s == DCZ_OK; start += (size_t)bmax) {
        const int bs = n - start < (size_t)bmax ? (int)(n - start) : bmax;
        const float lr = dcz_train_step_lr(opt, start / (size_t)bmax, steps);
        if (sh) {
            double bl = 0;
            part_ctx pc = { dn, opt };
            s = dcz_shards_grad(net, data, perm, start, bs, opt, augp, sh, yb, device_part, &pc, &bl);
            if (s == DCZ_OK && !isfinite(bl)) s = DCZ_ERR_DIVERGED;
            if (s == DCZ_OK) s = move_grads(dn, 0);
            if (s == DCZ_OK) s = update(dn, opt, lr);
            total += bl * bs;
            if (s == DCZ_OK && progress) progress(ctx, start + (size_t)bs, n);
            continue;
        }
        /* the batch into its slot's host memory, once the slot's last
         * copies are done (its step may still run), and over on the
         * copies' stream once that step is done with the slot's device
         * memory; this step waits for them */
        const int slot = (int)(start / (size_t)bmax) & 1;
        s = o->stage_wait(dn->d, slot);
        if (s == DCZ_OK) s = dcz_dataset_samples_aug(data, perm, start, (size_t)bs, augp, dn->x_pin[slot], NULL, 0);
        for (int r = 0; r < bs; r++) dn->y_pin[slot][r] = data->y[perm[start + (size_t)r]];
        if (s == DCZ_OK)
            s = o->stage(dn->d, slot, dn->in[slot], dn->x_pin[slot], (size_t)bs * (size_t)net->in_dim * sizeof(float));
        if (s == DCZ_OK) s = o->stage(dn->d, slot, dn->lab[slot], dn->y_pin[slot], (size_t)bs);
        if (s == DCZ_OK) s = o->stage_done(dn->d, slot);
        dn->act[0] = dn->in[slot];
        dn->labels = dn->lab[slot];
        if (s == DCZ_OK) s = train_step(dn, bs, opt, lr, dn->losses + start);
        if (s == DCZ_OK) s = o->stage_release(dn->d, slot);   /* the slot's next copy waits for this step */
        if (s == DCZ_OK && progress) progress(ctx, start + (size_t)bs, n);
    }
    dn->act[0] = dn->in[0];
    dn->labels = dn->lab[0];
    /* every sample's loss, read once: each batch's mean as the CPU takes it */
    if (s == DCZ_OK && !sh) {
        double *rows = malloc(n * sizeof *rows);
        s = rows ? o->get(dn->d, rows, dn->losses, n * sizeof *rows) : DCZ_ERR_NOMEM;
        for (size_t start = 0; start < n && s == DCZ_OK; start += (size_t)bmax) {
            const int bs = n - start < (size_t)bmax ? (int)(n - start) : bmax;
            const double bl = batch_loss(rows + start, bs);
            if (!isfinite(bl)) s = DCZ_ERR_DIVERGED;
            total += bl * bs;
        }
        free(rows);
    }
    free(perm);
    free(yb);
    dcz_shards_free(sh);
    /* the parameters back on the host, where the last step may have
     * overflowed one that no loss has seen */
    if (s == DCZ_OK) s = dcz_dev_sync(dn);
    for (size_t j = 0; s == DCZ_OK && j < net->param_count; j++)
        if (!isfinite(net->param[j])) s = DCZ_ERR_DIVERGED;
    if (s == DCZ_ERR_DEVICE && !dn->err[0]) snprintf(dn->err, sizeof dn->err, "%s", dn->d->err);
    if (s == DCZ_OK && loss) *loss = (float)(total / (double)n);
    return s;
}

int dcz_dev_runs(const dcz_net *net, const dcz_sgd *opt, char *why, size_t whylen)
{
    char own[256];
    if (!why) {
        why = own;
        whylen = sizeof own;
    }
    if (opt->update) {
        snprintf(why, whylen, "an update of its own (variational dropout's), which the GPU trainer does not run");
        return 0;
    }
    return dcz_dev_supports(net, why, whylen) == DCZ_OK;
}

/* The host's momenta (when it has them: a step has run) to the device (dir
 * 0), or the device's back to the host, which then has them (dir 1). */
static dcz_status move_momenta(dcz_dev_net *dn, int dir)
{
    dcz_net *net = dn->net;
    const dcz_tdev_ops *o = dn->d->ops;
    if (dir == 0 && !net->mom) return DCZ_OK;
    dcz_status s = dir ? dcz_net_flatten(net, DCZ_FLAT_MOM) : DCZ_OK;
    for (int i = 0; i < net->nlayers && s == DCZ_OK; i++) {
        const dcz_tlayer *l = &net->layers[i];
        const dev_layer *v = &dn->layers[i];
        if (!dcz_tlayer_has_params(l)) continue;
        const size_t nb = dcz_tlayer_nbias(l), nw = l->op == DCZ_OP_BATCHNORM ? nb : dcz_tlayer_nweights(l);
        const struct { float *host, *dev; size_t n; } part[3] = {
            { l->vw, v->vw, l->codebook ? 0 : nw }, { l->vb, v->vb, nb }, { l->vcb, v->vcb, l->codebook ? (size_t)l->k : 0 },
        };
        for (int p = 0; p < 3 && s == DCZ_OK; p++) {
            if (!part[p].host || !part[p].dev || !part[p].n) continue;
            s = dir ? o->get(dn->d, part[p].host, part[p].dev, part[p].n * sizeof(float))
                    : o->put(dn->d, part[p].dev, part[p].host, part[p].n * sizeof(float));
        }
    }
    return s;
}

dcz_status dcz_dev_epoch(dcz_tdev *d, dcz_net *net, const dcz_dataset *data, const dcz_sgd *opt, dcz_rng *rng,
                         dcz_progress_fn progress, void *ctx, float *loss)
{
    if (!d || !net || !data || !opt) return DCZ_ERR_ARG;
    const int cap = data->n && (size_t)opt->batch > data->n ? (int)data->n : opt->batch;
    dcz_dev_net *dn = NULL;
    dcz_status s = dcz_dev_open(d, net, cap, &dn);
    if (s == DCZ_OK) s = move_momenta(dn, 0);
    if (s == DCZ_OK) s = dcz_dev_train_epoch(dn, data, opt, rng, progress, ctx, loss);
    if (s == DCZ_OK) s = move_momenta(dn, 1);
    if (s != DCZ_OK && dn && dn->err[0]) snprintf(d->err, sizeof d->err, "%s", dn->err);
    dcz_dev_close(dn);
    return s;
}
