/* dev.c: the trainer's device path. A net opened on a device (tdev.h)
 * keeps its parameters, gradients, momenta, masks, codebooks and
 * activations there for a whole run; each step copies its batch and
 * labels in, runs the forward pass, the loss, the backward pass and the
 * SGD step there, and copies back one number per sample (the loss).
 * dcz_dev_sync copies the parameters back into the host net when the run
 * needs them there (evaluation, writing the file).
 *
 * The passes are the CPU trainer's (sgd.c, layers.c), op for op: the same
 * epoch order and augmentation (dcz_train_order), a dense layer's product
 * as the same sgemm calls (cuBLAS on a GPU), and every other pass one
 * body of train/cuda/tkern.h or runtime/cuda/gpu_kern.h an element.
 * Dropout draws its units from a key per layer and step
 * (dcz_tk_dropout_keep), not from the host net's generator, so a net with
 * dropout trains to other bits than on the CPU; without dropout, the
 * host device (tdev_host.c) gives the CPU's bits, which
 * tests/unit/test_train_dev.c checks.
 *
 * The device runs fully connected networks: DENSE (masks and codebooks
 * included), RELU and the other activations, DROPOUT, FLATTEN and the
 * final SOFTMAX, each reading the tensor before it. Other operators,
 * sharded steps and an update other than SGD (opt->update) are refused
 * with DCZ_ERR_UNSUPPORTED, the reason in dcz_dev_error.
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
} dev_layer;

struct dcz_dev_net {
    dcz_tdev *d;
    dcz_net *net;
    int cap;                 /* samples a step at most */
    float *param, *grad, *mom;   /* (param_count) each, laid out as net->param */
    float **act, **dact;     /* tensor t: (cap, twidth[t]) */
    uint8_t *labels;         /* (cap) */
    double *loss;            /* (cap) */
    float *x_host;           /* (cap, in_dim) the batch read on the host */
    uint8_t *y_host;         /* (cap) */
    double *loss_host;       /* (cap) */
    dev_layer *layers;
    char err[256];
};

static int op_on_device(dcz_op op)
{
    switch (op) {
    case DCZ_OP_DENSE: case DCZ_OP_RELU: case DCZ_OP_SOFTMAX: case DCZ_OP_FLATTEN: case DCZ_OP_DROPOUT:
    case DCZ_OP_CLIP: case DCZ_OP_LEAKY_RELU: case DCZ_OP_SIGMOID: case DCZ_OP_TANH: case DCZ_OP_HARD_SIGMOID:
    case DCZ_OP_HARD_SWISH: case DCZ_OP_SILU:
        return 1;
    default:
        return 0;
    }
}

const char *dcz_dev_error(const dcz_dev_net *dn) { return dn ? dn->err : ""; }

dcz_status dcz_dev_supports(const dcz_net *net, char *why, size_t whylen)
{
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        const dcz_op_info *info = dcz_op_get(l->op);
        if (!op_on_device(l->op)) {
            snprintf(why, whylen, "layer %s (%s): the GPU trainer runs fully connected networks (dense layers, "
                     "activations, dropout) so far", l->name, info ? info->name : "?");
            return DCZ_ERR_UNSUPPORTED;
        }
        if (l->nin != 1 || l->tin[0] != (uint32_t)i) {
            snprintf(why, whylen, "layer %s reads another layer than the one before it: the GPU trainer runs "
                     "chains so far", l->name);
            return DCZ_ERR_UNSUPPORTED;
        }
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

dcz_status dcz_dev_open(dcz_tdev *d, dcz_net *net, int cap, dcz_dev_net **out)
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
    *out = dn;
    if ((s = dcz_dev_supports(net, dn->err, sizeof dn->err)) != DCZ_OK) return s;
    const dcz_tdev_ops *o = d->ops;
    const int L = net->nlayers;
    dn->act = calloc((size_t)L + 1, sizeof *dn->act);
    dn->dact = calloc((size_t)L + 1, sizeof *dn->dact);
    dn->layers = calloc((size_t)L, sizeof *dn->layers);
    dn->x_host = malloc((size_t)cap * (size_t)net->in_dim * sizeof *dn->x_host);
    dn->y_host = malloc((size_t)cap);
    dn->loss_host = malloc((size_t)cap * sizeof *dn->loss_host);
    if (!dn->act || !dn->dact || !dn->layers || !dn->x_host || !dn->y_host || !dn->loss_host) return DCZ_ERR_NOMEM;
    const size_t P = net->param_count;
    s = dalloc(dn, P, sizeof(float), (void **)&dn->param);
    if (s == DCZ_OK) s = dalloc(dn, P, sizeof(float), (void **)&dn->grad);
    if (s == DCZ_OK) s = dalloc(dn, P, sizeof(float), (void **)&dn->mom);
    if (s == DCZ_OK) s = dalloc(dn, (size_t)cap, 1, (void **)&dn->labels);
    if (s == DCZ_OK) s = dalloc(dn, (size_t)cap, sizeof(double), (void **)&dn->loss);
    for (int t = 0; t <= L && s == DCZ_OK; t++) {
        s = dalloc(dn, (size_t)cap * net->twidth[t], sizeof(float), (void **)&dn->act[t]);
        if (s == DCZ_OK) s = dalloc(dn, (size_t)cap * net->twidth[t], sizeof(float), (void **)&dn->dact[t]);
    }
    dcz_net_apply_constraints(net);
    if (s == DCZ_OK) s = o->put(d, dn->param, net->param, P * sizeof(float));
    for (int i = 0; i < L && s == DCZ_OK; i++) {
        const dcz_tlayer *l = &net->layers[i];
        dev_layer *v = &dn->layers[i];
        if (l->op == DCZ_OP_DROPOUT) s = dalloc(dn, (size_t)cap * l->in, 1, (void **)&v->keep);
        if (!dcz_tlayer_has_params(l)) continue;
        v->w = at_of(net->param, l->w, dn->param);
        v->b = at_of(net->param, l->b, dn->param);
        v->gw = at_of(net->param, l->w, dn->grad);
        v->gb = at_of(net->param, l->b, dn->grad);
        v->vw = at_of(net->param, l->w, dn->mom);
        v->vb = at_of(net->param, l->b, dn->mom);
        const size_t nw = dcz_tlayer_nweights(l);
        if (l->mask && s == DCZ_OK && (s = dalloc(dn, nw, 1, (void **)&v->mask)) == DCZ_OK)
            s = o->put(d, v->mask, l->mask, nw);
        if (l->codebook && s == DCZ_OK) s = upload_codebook(dn, l, v);
    }
    if (s != DCZ_OK && !dn->err[0]) snprintf(dn->err, sizeof dn->err, "%s", d->err[0] ? d->err : dcz_status_str(s));
    return s;
}

void dcz_dev_close(dcz_dev_net *dn)
{
    if (!dn) return;
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
    }
    o->free(dn->d, dn->param);
    o->free(dn->d, dn->grad);
    o->free(dn->d, dn->mom);
    o->free(dn->d, dn->labels);
    o->free(dn->d, dn->loss);
    free(dn->act);
    free(dn->dact);
    free(dn->layers);
    free(dn->x_host);
    free(dn->y_host);
    free(dn->loss_host);
    free(dn);
}

dcz_status dcz_dev_sync(dcz_dev_net *dn)
{
    const dcz_tdev_ops *o = dn->d->ops;
    dcz_net *net = dn->net;
    dcz_status s = o->get(dn->d, net->param, dn->param, net->param_count * sizeof(float));
    for (int i = 0; i < net->nlayers && s == DCZ_OK; i++)
        if (net->layers[i].codebook)
            s = o->get(dn->d, net->layers[i].codebook, dn->layers[i].codebook,
                       (size_t)net->layers[i].k * sizeof(float));
    return s;
}

/* Layer i's forward pass in training mode over the batch. */
static dcz_status forward(dcz_dev_net *dn, int i, int batch)
{
    dcz_tdev *d = dn->d;
    const dcz_tdev_ops *o = d->ops;
    dcz_tlayer *l = &dn->net->layers[i];
    const dev_layer *v = &dn->layers[i];
    const float *x = dn->act[l->tin[0]];
    float *y = dn->act[i + 1];
    const size_t n = (size_t)batch * (size_t)l->out;
    switch (l->op) {
    case DCZ_OP_DENSE: {
        /* y = x W^T + b, as dense_forward */
        dcz_status s = o->rows(d, v->b, (size_t)batch, (uint32_t)l->out, y);
        return s == DCZ_OK ? o->sgemm(d, 0, 1, batch, l->out, l->in, 1.0f, x, l->in, v->w, l->in, 1.0f, y, l->out) : s;
    }
    case DCZ_OP_SOFTMAX:   /* the identity while training: the loss holds it */
    case DCZ_OP_FLATTEN:
        return o->copy(d, y, x, n * sizeof(float));
    case DCZ_OP_DROPOUT:
        if (l->rate <= 0.0f) return o->copy(d, y, x, n * sizeof(float));
        return o->dropout(d, x, n, dcz_rng_u64(&dn->net->rng), l->rate, v->keep, y);
    default:   /* the activations */
        return o->act(d, (uint16_t)l->op, l->param[0], l->param[1], x, n, y);
    }
}

/* Layer i's backward pass: dx into the gradient of the tensor it reads
 * (when that tensor needs one), the parameters' gradients, and a shared
 * layer's centroids' (the sums over their kept weights). A pruned weight's
 * gradient is left as the product gives it: its step (dcz_tk_sgd) keeps it
 * at 0 whatever the gradient. */
static dcz_status backward(dcz_dev_net *dn, int i, int batch, int need_dx)
{
    dcz_tdev *d = dn->d;
    const dcz_tdev_ops *o = d->ops;
    dcz_tlayer *l = &dn->net->layers[i];
    const dev_layer *v = &dn->layers[i];
    const float *x = dn->act[l->tin[0]], *y = dn->act[i + 1], *dy = dn->dact[i + 1];
    float *dx = need_dx ? dn->dact[l->tin[0]] : NULL;
    const size_t n = (size_t)batch * (size_t)l->in;
    dcz_status s = DCZ_OK;
    switch (l->op) {
    case DCZ_OP_DENSE:
        /* gW (out, in) = dy^T x; gb = column sums of dy; dx = dy W */
        s = o->sgemm(d, 1, 0, l->out, l->in, batch, 1.0f, dy, l->out, x, l->in, 0.0f, v->gw, l->in);
        if (s == DCZ_OK) s = o->bias_grad(d, dy, (uint32_t)batch, (uint32_t)l->out, 1, v->gb);
        if (s == DCZ_OK && dx) s = o->sgemm(d, 0, 0, batch, l->in, l->out, 1.0f, dy, l->out, v->w, l->in, 0.0f, dx, l->in);
        if (s == DCZ_OK && v->codebook) s = o->centroid_grads(d, v->gw, v->members, v->mstart, (uint32_t)l->k, v->gcb);
        return s;
    case DCZ_OP_SOFTMAX:
    case DCZ_OP_FLATTEN:
        return dx ? o->copy(d, dx, dy, n * sizeof(float)) : DCZ_OK;
    case DCZ_OP_DROPOUT:
        if (!dx) return DCZ_OK;
        if (l->rate <= 0.0f) return o->copy(d, dx, dy, n * sizeof(float));
        return o->dropout_grad(d, dy, v->keep, n, l->rate, dx);
    default:
        return dx ? o->act_grad(d, (uint16_t)l->op, l->param[0], l->param[1], x, y, dy, n, dx) : DCZ_OK;
    }
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
        if (v->codebook) {
            s = o->sgd(d, v->codebook, v->vcb, v->gcb, NULL, (size_t)l->k, lr, opt->momentum, 0.0f);
            if (s == DCZ_OK) s = o->shared(d, v->codebook, (uint32_t)l->k, v->assign, v->mask, nw, v->w);
        } else {
            s = o->sgd(d, v->w, v->vw, v->gw, v->mask, nw, lr, opt->momentum, opt->weight_decay);
        }
    }
    return s;
}

/* One step over the batch already on the device: forward, loss, backward,
 * update; the batch's mean loss into *loss. */
static dcz_status train_step(dcz_dev_net *dn, int batch, const dcz_sgd *opt, float lr, double *loss)
{
    dcz_net *net = dn->net;
    const dcz_tdev_ops *o = dn->d->ops;
    const int L = net->nlayers;
    dcz_status s = DCZ_OK;
    for (int i = 0; i < L && s == DCZ_OK; i++) s = forward(dn, i, batch);
    if (s == DCZ_OK)
        s = o->xent(dn->d, dn->act[L], dn->labels, (uint32_t)batch, (uint32_t)net->classes, dn->dact[L], dn->loss);
    /* no layer before the first one with parameters is differentiated */
    int first = L;
    for (int i = 0; i < L; i++)
        if (dcz_tlayer_has_params(&net->layers[i])) { first = i; break; }
    for (int i = L - 1; i >= first && s == DCZ_OK; i--) s = backward(dn, i, batch, i > first);
    if (s == DCZ_OK) s = update(dn, opt, lr);
    if (s == DCZ_OK) s = o->get(dn->d, dn->loss_host, dn->loss, (size_t)batch * sizeof(double));
    double t = 0;
    for (int r = 0; r < batch; r++) t += dn->loss_host[r];
    *loss = t / batch;   /* the batch's mean, as grad_core returns it */
    return s;
}

dcz_status dcz_dev_train_epoch(dcz_dev_net *dn, const dcz_dataset *data, const dcz_sgd *opt, dcz_rng *rng,
                               dcz_progress_fn progress, void *ctx, float *loss)
{
    if (!dn || !opt || !rng) return DCZ_ERR_ARG;
    dcz_net *net = dn->net;
    if (!dcz_sgd_valid(opt)) return DCZ_ERR_ARG;
    if (opt->shards > 1 || opt->comm || opt->update) {
        snprintf(dn->err, sizeof dn->err, "the GPU trainer runs plain SGD in one shard so far");
        return DCZ_ERR_UNSUPPORTED;
    }
    dcz_status s = dcz_train_check_data(net, data);
    if (s != DCZ_OK) return s;
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
    for (size_t start = 0; start < n && s == DCZ_OK; start += (size_t)bmax) {
        const int bs = n - start < (size_t)bmax ? (int)(n - start) : bmax;
        s = dcz_dataset_samples_aug(data, perm, start, (size_t)bs, augp, dn->x_host, NULL, 0);
        for (int r = 0; r < bs; r++) dn->y_host[r] = data->y[perm[start + (size_t)r]];
        if (s == DCZ_OK)
            s = o->put(dn->d, dn->act[0], dn->x_host, (size_t)bs * (size_t)net->in_dim * sizeof(float));
        if (s == DCZ_OK) s = o->put(dn->d, dn->labels, dn->y_host, (size_t)bs);
        double bl = 0;
        if (s == DCZ_OK) s = train_step(dn, bs, opt, dcz_train_step_lr(opt, start / (size_t)bmax, steps), &bl);
        if (s == DCZ_OK && !isfinite(bl)) s = DCZ_ERR_DIVERGED;
        total += bl * bs;
        if (s == DCZ_OK && progress) progress(ctx, start + (size_t)bs, n);
    }
    free(perm);
    /* the parameters back on the host, where the last step may have
     * overflowed one that no loss has seen */
    if (s == DCZ_OK) s = dcz_dev_sync(dn);
    for (size_t j = 0; s == DCZ_OK && j < net->param_count; j++)
        if (!isfinite(net->param[j])) s = DCZ_ERR_DIVERGED;
    if (s == DCZ_ERR_DEVICE && !dn->err[0]) snprintf(dn->err, sizeof dn->err, "%s", dn->d->err);
    if (s == DCZ_OK && loss) *loss = (float)(total / (double)n);
    return s;
}
