/* sgd.c: backward pass and SGD with momentum and weight decay, honouring
 * pruning masks and shared-weight codebooks; epochs, evaluation, learning
 * rate schedules and the OpenBLAS thread count.
 *
 * Backward, for a batch of B samples (activations are (B, features)):
 *   softmax cross-entropy on the last layer's logits z, fused and shifted by
 *   the row maximum: loss = lse(z) - z[y], dz = (softmax(z) - onehot(y)) / B;
 *   with a teacher, its term added (dcz_sgd.teacher: the teacher's logits
 *   from its inference pass over the same samples);
 *   dense y = x W^T + b: gW = dy^T x, gb = column sums of dy, dx = dy W;
 *   relu: dx = dy where the output is > 0; dropout: dx = dy where kept,
 *   scaled as in the forward pass; flatten and softmax: dx = dy;
 *   convolution (conv.c), pooling (pool.c), batch norm (bnorm.c).
 * No layer before the first one with parameters is differentiated.
 * Update (per parameter): v = momentum v + (g + wd w); w -= lr v, with wd on
 * DENSE and CONV weights only (not biases, batch-norm gamma and beta or
 * centroids). Masked weights get g = v = w = 0. A codebook layer moves its
 * centroids by gcb[c] = sum of gW over the kept weights assigned to c (Deep
 * Compression, section 3.2; no weight decay) and rewrites w = cb[assign].
 * Convolution weights are a (out_c, in_c*kh*kw) matrix and take masks and
 * codebooks exactly as dense ones.
 *
 * Sharded steps (dcz_sgd.shards, dcz_sgd.comm; see train.h): each part of
 * the batch runs as a batch of its own; its gradients times its size go
 * into 64-bit integers (2^-32 units), summed over the parts and the ranks
 * and divided by the batch size. A part's batch-norm statistics are read
 * by running it with momentum 1 (the running statistics then are the
 * part's), and the running statistics move once per step toward the parts'
 * mean. Dropout draws come from a generator seeded by a number the step
 * draws from net->rng and the part's index.
 *
 * Batches are read through dcz_dataset_samples (in memory, or decoded from
 * a streaming set's files, in the epoch's shuffled order); a failed read
 * ends the epoch or the evaluation with its status. Training batches may be
 * varied (dcz_sgd.augment, augment.c): the epoch draws one key from its
 * generator after the shuffle, and each sample its crop and flip from that
 * key and its index, so sharding and threads change nothing.
 *
 * Tested by tests/unit/test_train.c: finite-difference gradient checks in
 * double, masks, codebooks, convergence, determinism, sharded steps.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/cuda/tkern.h"
#include "train/dev.h"
#include "train/internal.h"

#define EVAL_CHUNK 1000
#define FIX_SCALE 4294967296.0   /* 2^32 units per 1 in the sharded sums */
#define FIX_LIMIT 67108864.0     /* 2^26: a part's size x gradient beyond it
                                    (no sum of 32 such can overflow) is divergence */
#define MAX_SHARDS 1024

/* Gradients and momentum live in the net's flat buffers (dcz_net_flatten). */
static dcz_status alloc_grads(dcz_net *net) { return dcz_net_flatten(net, DCZ_FLAT_GRAD); }
static dcz_status alloc_momentum(dcz_net *net) { return dcz_net_flatten(net, DCZ_FLAT_MOM); }

/* The loss of the logits act[L] against y, and with a teacher (o not NULL,
 * its logits t) the distillation term (dcz_sgd.teacher); writes dact[L]
 * and returns the mean loss: each row's by dcz_tk_xent_row, the body the
 * GPU's loss runs too, then their sum in row order over the batch. */
static double loss_and_dlogits(dcz_net *net, const uint8_t *y, int batch, const dcz_sgd *o, const float *t)
{
    const uint32_t n = (uint32_t)net->classes;
    const float *z = net->act[net->nlayers];   /* (batch, classes) */
    float *dz = net->dact[net->nlayers];       /* (batch, classes) */
    const double a = t ? o->distill : 0, T = t ? o->temperature : 1;
    double total = 0;
    for (int r = 0; r < batch; r++) {
        const size_t at = (size_t)r * n;
        total += dcz_tk_xent_row(z + at, n, y[r], (uint32_t)batch, t ? t + at : NULL, a, T, dz + at);
    }
    return total / batch;
}

/* The teacher's logits of the samples in net->act[0] (dcz_sgd.teacher),
 * NULL without one. */
static const float *teacher_logits(const dcz_net *net, int batch, const dcz_sgd *o)
{
    if (!o || !o->teacher) return NULL;
    dcz_net *t = o->teacher;
    memcpy(t->act[0], net->act[0], (size_t)batch * (size_t)net->in_dim * sizeof(float));
    dcz_net_run_layers(t, batch, 0);
    return t->act[t->nlayers];
}

/* Forward (training mode) and backward of the batch already in act[0].
 * Only tensors that depend on parameters get gradients. A tensor read by
 * several layers gets the sum of their gradients: the first of them (last
 * in layer order) writes it, the others write into net->gsum and add. */
static double grad_core(dcz_net *net, const uint8_t *y, int batch, const dcz_sgd *o)
{
    const float *soft = teacher_logits(net, batch, o);
    dcz_net_run_layers(net, batch, DCZ_RUN_TRAIN);
    double loss = loss_and_dlogits(net, y, batch, o, soft);
    const int L = net->nlayers;
    /* need[t]: tensor t depends on some parameter; set[t]: its gradient holds a value */
    uint8_t *need = calloc((size_t)L + 1, 1), *set = calloc((size_t)L + 1, 1);
    if (!need || !set) {
        free(need); free(set);
        return NAN;
    }
    dcz_train_need(net, need);
    set[L] = 1;
    for (int i = L - 1; i >= 0; i--) {
        dcz_tlayer *l = &net->layers[i];
        if (!need[i + 1] || !set[i + 1]) continue;
        const float *xs[DCZ_MAX_INPUTS];
        float *dxs[DCZ_MAX_INPUTS];
        for (uint32_t k = 0; k < l->nin; k++) xs[k] = net->act[l->tin[k]];
        dcz_train_grad_dests(net, need, set, i, batch, net->dact, net->gsum, dxs);
        dcz_train_backward(net, l, xs, net->act[i + 1], net->dact[i + 1], dxs, batch);
        for (uint32_t k = 0; k < l->nin; k++) {
            const uint32_t t = l->tin[k];
            if (!dxs[k]) continue;
            if (dxs[k] != net->dact[t]) dcz_vadd(net->dact[t], dxs[k], (size_t)batch * net->twidth[t]);
            set[t] = 1;
        }
    }
    free(need);
    free(set);
    return loss;
}

/* A part of a sharded step on the CPU (dcz_part_fn; ctx: the dcz_sgd). */
static dcz_status cpu_part(dcz_net *net, const uint8_t *y, int batch, void *ctx, double *loss)
{
    *loss = grad_core(net, y, batch, ctx);
    return DCZ_OK;
}

void dcz_train_need(const dcz_net *net, uint8_t *need)
{
    need[0] = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        need[i + 1] = (uint8_t)dcz_tlayer_has_params(l);
        for (uint32_t k = 0; k < l->nin; k++) need[i + 1] |= need[l->tin[k]];
    }
}

void dcz_train_grad_dests(const dcz_net *net, const uint8_t *need, const uint8_t *set, int i, int batch,
                          float *const *dact, float *gsum, float **dx)
{
    const dcz_tlayer *l = &net->layers[i];
    size_t scratch = 0;
    for (uint32_t k = 0; k < l->nin; k++) {
        const uint32_t t = l->tin[k];
        dx[k] = NULL;
        if (!need[t]) continue;
        /* a gradient already written (by a later reader, or by this
         * layer's earlier input reading the same tensor) is added to */
        int taken = set[t];
        for (uint32_t j = 0; j < k && !taken; j++) taken = l->tin[j] == t;
        if (taken) {
            dx[k] = gsum + scratch;
            scratch += (size_t)batch * net->twidth[t];
        } else {
            dx[k] = dact[t];
        }
    }
}

static int labels_fit(const uint8_t *y, size_t n, int classes)
{
    for (size_t i = 0; i < n; i++)
        if ((int)y[i] >= classes) return 0;
    return 1;
}

dcz_status dcz_net_grad(dcz_net *net, const float *x, const uint8_t *y, int batch,
                        float *loss)
{
    if (!net || !net->layers || net->in_dim <= 0 || !x || !y || batch <= 0)
        return DCZ_ERR_ARG;
    if (!labels_fit(y, (size_t)batch, net->classes)) return DCZ_ERR_DATA;
    dcz_status st = dcz_net_reserve(net, batch, 1);
    if (st != DCZ_OK) return st;
    st = alloc_grads(net);
    if (st != DCZ_OK) return st;
    memcpy(net->act[0], x, (size_t)batch * (size_t)net->in_dim * sizeof(float));
    double l = grad_core(net, y, batch, NULL);
    if (loss) *loss = (float)l;
    return DCZ_OK;
}

static void step_weights(dcz_tlayer *l, const dcz_sgd *o)
{
    size_t nw = dcz_tlayer_nweights(l);
    if (l->codebook) {
        for (int c = 0; c < l->k; c++) {
            l->vcb[c] = o->momentum * l->vcb[c] + l->gcb[c];
            l->codebook[c] -= o->lr * l->vcb[c];
        }
        for (size_t j = 0; j < nw; j++) {
            int kept = !l->mask || l->mask[j];
            l->w[j] = kept && l->assign[j] < l->k ? l->codebook[l->assign[j]] : 0.0f;
        }
        return;
    }
    for (size_t j = 0; j < nw; j++) {
        l->vw[j] = o->momentum * l->vw[j] + (l->gw[j] + o->weight_decay * l->w[j]);
        l->w[j] -= o->lr * l->vw[j];
    }
    if (l->mask)
        for (size_t j = 0; j < nw; j++)
            if (!l->mask[j]) { l->w[j] = 0.0f; l->vw[j] = 0.0f; }
}

static dcz_status check_sgd(const dcz_sgd *o)
{
    if (!o || o->batch <= 0) return DCZ_ERR_ARG;
    if (!isfinite(o->lr) || o->lr < 0) return DCZ_ERR_ARG;
    if (!isfinite(o->momentum) || o->momentum < 0) return DCZ_ERR_ARG;
    if (!isfinite(o->weight_decay) || o->weight_decay < 0) return DCZ_ERR_ARG;
    if (!(o->ramp_from >= 0 && o->ramp_to >= 0 && o->ramp_from <= 1 && o->ramp_to <= 1)) return DCZ_ERR_ARG;
    if (o->augment & ~DCZ_AUG_ALL) return DCZ_ERR_ARG;
    if (!dcz_sgd_distill_valid(o)) return DCZ_ERR_ARG;
    return DCZ_OK;
}

dcz_status dcz_net_step(dcz_net *net, const dcz_sgd *opt)
{
    if (!net || !net->layers || check_sgd(opt) != DCZ_OK) return DCZ_ERR_ARG;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (dcz_tlayer_has_params(l) && (!l->gw || !l->gb || (l->codebook && !l->gcb)))
            return DCZ_ERR_ARG;   /* no gradients: dcz_net_grad first */
    }
    dcz_status st = alloc_momentum(net);
    if (st != DCZ_OK) return st;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (!dcz_tlayer_has_params(l)) continue;
        size_t nb = dcz_tlayer_nbias(l);
        if (opt->train_biases)
            for (size_t j = 0; j < nb; j++) {
                l->vb[j] = opt->momentum * l->vb[j] + l->gb[j];
                l->b[j] -= opt->lr * l->vb[j];
            }
        if (!opt->train_weights) continue;
        if (l->op == DCZ_OP_BATCHNORM) {
            /* gamma: momentum, no weight decay */
            for (size_t j = 0; j < nb; j++) {
                l->vw[j] = opt->momentum * l->vw[j] + l->gw[j];
                l->w[j] -= opt->lr * l->vw[j];
            }
        } else {
            step_weights(l, opt);
        }
    }
    return DCZ_OK;
}

dcz_status dcz_train_check_data(const dcz_net *net, const dcz_dataset *d)
{
    if (!d || d->n == 0 || !dcz_dataset_ready(d)) return DCZ_ERR_ARG;
    if (d->n > UINT32_MAX) return DCZ_ERR_ARG;
    uint64_t sample = (uint64_t)d->c * d->h * d->w;
    if (sample != (uint64_t)net->in_dim) return DCZ_ERR_SHAPE;
    if (net->in_rank == 3 && (d->c != net->in_dims[0] || d->h != net->in_dims[1] ||
                              d->w != net->in_dims[2]))
        return DCZ_ERR_SHAPE;
    if (!labels_fit(d->y, d->n, net->classes)) return DCZ_ERR_SHAPE;
    return DCZ_OK;
}

/* Adds w v[j] (v[idx[j]] when idx is not NULL) in fixed point to acc[j]:
 * 0 when a value is out of range. */
static int add_fixed(int64_t *acc, const float *v, const uint32_t *idx, size_t n, double w)
{
    for (size_t j = 0; j < n; j++) {
        const double x = (double)v[idx ? idx[j] : j] * w;
        if (!(fabs(x) <= FIX_LIMIT)) return 0;
        acc[j] += (int64_t)llrint(x * FIX_SCALE);
    }
    return 1;
}

/* The channels of every batch-norm layer, one after the other. */
static size_t bn_channels(const dcz_net *net)
{
    size_t n = 0;
    for (int i = 0; i < net->nlayers; i++)
        if (net->layers[i].op == DCZ_OP_BATCHNORM) n += (size_t)net->layers[i].in_c;
    return n;
}

/* What a sharded epoch keeps per step. acc: the nsum gradients that move
 * something (at the positions idx of net->grad), (2 x bn channels)
 * batch-norm means and variances, (1) the loss, each times its part's
 * size; run: the saved running statistics (2 x bn channels); mom: the
 * layers' momenta (nlayers). A pruned weight's gradient moves nothing (the
 * step zeroes the weight and its momentum) and neither does a shared
 * layer's per-weight gradient (the step moves its centroids by gcb), so
 * the sum carries kept weights, biases, batch-norm parameters and centroid
 * gradients only: what ranks send each step. */
struct dcz_shards {
    int64_t *acc;
    size_t nacc, nbn, nsum;
    uint32_t *idx;            /* (nsum) positions in net->grad */
    float *run, *mom;
    int parts, first, last;   /* this rank's parts: [first, last) of parts */
};

void dcz_shards_free(dcz_shards *s)
{
    if (!s) return;
    free(s->acc);
    free(s->idx);
    free(s->run);
    free(s->mom);
    free(s);
}

/* s->idx and s->nsum: the positions in net->grad of the gradients that
 * move something. */
static dcz_status summed_grads(const dcz_net *net, dcz_shards *s)
{
    const size_t G = net->grad_count;
    if (G > UINT32_MAX) return DCZ_ERR_ARG;
    uint8_t *used = malloc(G ? G : 1);
    s->idx = malloc((G ? G : 1) * sizeof *s->idx);
    if (!used || !s->idx) { free(used); return DCZ_ERR_NOMEM; }
    memset(used, 1, G);
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (!dcz_tlayer_has_params(l) || l->op == DCZ_OP_BATCHNORM || !l->gw) continue;
        const size_t at = (size_t)(l->gw - net->grad), nw = dcz_tlayer_nweights(l);
        for (size_t j = 0; j < nw; j++) used[at + j] = !l->codebook && (!l->mask || l->mask[j]);
    }
    s->nsum = 0;
    for (size_t j = 0; j < G; j++)
        if (used[j]) s->idx[s->nsum++] = (uint32_t)j;
    free(used);
    return DCZ_OK;
}

dcz_status dcz_shards_new(const dcz_net *net, const dcz_sgd *opt, dcz_shards **out)
{
    dcz_shards *s = calloc(1, sizeof *s);
    *out = s;
    if (!s) return DCZ_ERR_NOMEM;
    const int size = opt->comm ? opt->comm->size : 1, rank = opt->comm ? opt->comm->rank : 0;
    s->parts = opt->shards > 1 ? opt->shards : size;
    if (size < 1 || rank < 0 || rank >= size || s->parts > MAX_SHARDS || s->parts % size ||
        (opt->comm && !opt->comm->sum_i64))
        return DCZ_ERR_ARG;
    s->first = rank * (s->parts / size);
    s->last = s->first + s->parts / size;
    dcz_status st = summed_grads(net, s);
    if (st != DCZ_OK) return st;
    s->nbn = bn_channels(net);
    s->nacc = s->nsum + 2 * s->nbn + 1;
    s->acc = malloc(s->nacc * sizeof *s->acc);
    s->run = malloc((2 * s->nbn + 1) * sizeof *s->run);
    s->mom = malloc(((size_t)net->nlayers + 1) * sizeof *s->mom);
    return s->acc && s->run && s->mom ? DCZ_OK : DCZ_ERR_NOMEM;
}

/* Saves (dir 0) or restores (dir 1) the batch-norm running statistics and
 * momenta; saving sets every momentum to 1. */
static void bn_swap(dcz_net *net, dcz_shards *s, int dir)
{
    size_t k = 0;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (l->op != DCZ_OP_BATCHNORM) continue;
        const size_t C = (size_t)l->in_c;
        if (dir == 0) {
            memcpy(s->run + k, l->run_mean, C * sizeof *s->run);
            memcpy(s->run + s->nbn + k, l->run_var, C * sizeof *s->run);
            s->mom[i] = l->bn_momentum;
            l->bn_momentum = 1.0f;
        } else {
            memcpy(l->run_mean, s->run + k, C * sizeof *s->run);
            memcpy(l->run_var, s->run + s->nbn + k, C * sizeof *s->run);
            l->bn_momentum = s->mom[i];
        }
        k += C;
    }
}

/* The gradient of one batch of bs samples (perm[start...]) as the sum of
 * its parts' (this rank's, then every rank's); the batch-norm running
 * statistics moved once; the mean loss into *loss. */
dcz_status dcz_shards_grad(dcz_net *net, const dcz_dataset *data, const size_t *perm, size_t start, int bs,
                           const dcz_sgd *opt, const dcz_augment *aug, dcz_shards *s, uint8_t *yb,
                           dcz_part_fn part, void *part_ctx, double *loss)
{
    const size_t G = net->grad_count, S = s->nsum;
    memset(s->acc, 0, s->nacc * sizeof *s->acc);
    dcz_rng step_rng = net->rng;   /* the net's generator after the step's draw */
    const uint64_t seed = dcz_rng_u64(&step_rng);
    bn_swap(net, s, 0);
    dcz_status st = DCZ_OK;
    for (int m = s->first; m < s->last && st == DCZ_OK; m++) {
        const int lo = (int)((long)bs * m / s->parts), hi = (int)((long)bs * (m + 1) / s->parts), b = hi - lo;
        if (b == 0) continue;
        if ((st = dcz_dataset_samples_aug(data, perm, start + (size_t)lo, (size_t)b, aug, net->act[0], NULL, 0)) !=
            DCZ_OK)
            break;
        for (int r = 0; r < b; r++) yb[r] = data->y[perm[start + (size_t)(lo + r)]];
        dcz_rng_seed(&net->rng, seed + 0x9E3779B97F4A7C15ull * (uint64_t)(m + 1));
        double got = 0;
        if ((st = part(net, yb, b, part_ctx, &got)) != DCZ_OK) break;
        const float part_loss = (float)got;
        /* the part's statistics: its running ones, at momentum 1 */
        size_t k = 0;
        int ok = isfinite(part_loss) && add_fixed(s->acc, net->grad, s->idx, s->nsum, b) &&
                 add_fixed(s->acc + s->nacc - 1, &part_loss, NULL, 1, b);
        for (int i = 0; i < net->nlayers && ok; i++) {
            const dcz_tlayer *l = &net->layers[i];
            if (l->op != DCZ_OP_BATCHNORM) continue;
            ok = add_fixed(s->acc + S + k, l->run_mean, NULL, (size_t)l->in_c, b) &&
                 add_fixed(s->acc + S + s->nbn + k, l->run_var, NULL, (size_t)l->in_c, b);
            k += (size_t)l->in_c;
        }
        if (!ok) st = DCZ_ERR_DIVERGED;
    }
    bn_swap(net, s, 1);
    net->rng = step_rng;
    if (st == DCZ_OK && opt->comm) st = opt->comm->sum_i64(opt->comm->ctx, s->acc, s->nacc);
    if (st != DCZ_OK) return st;
    memset(net->grad, 0, G * sizeof *net->grad);
    for (size_t j = 0; j < S; j++) net->grad[s->idx[j]] = (float)((double)s->acc[j] / FIX_SCALE / bs);
    size_t k = 0;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (l->op != DCZ_OP_BATCHNORM) continue;
        const float mom = l->bn_momentum;
        for (int c = 0; c < l->in_c; c++, k++) {
            const float m = (float)((double)s->acc[S + k] / FIX_SCALE / bs);
            const float v = (float)((double)s->acc[S + s->nbn + k] / FIX_SCALE / bs);
            l->run_mean[c] = (1.0f - mom) * l->run_mean[c] + mom * m;
            l->run_var[c] = (1.0f - mom) * l->run_var[c] + mom * v;
        }
    }
    *loss = (double)s->acc[s->nacc - 1] / FIX_SCALE / bs;
    return DCZ_OK;
}

void dcz_train_order(dcz_rng *rng, size_t n, unsigned augment, size_t *perm, dcz_augment *aug)
{
    /* Fisher-Yates */
    for (size_t i = 0; i < n; i++) perm[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = dcz_rng_below(rng, (uint32_t)(i + 1));
        size_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    /* the epoch's variations: a key from rng, drawn only when augmenting */
    aug->what = augment;
    aug->key = augment ? dcz_rng_u64(rng) : 0;
}

float dcz_train_step_lr(const dcz_sgd *opt, size_t step, size_t steps)
{
    if (!(opt->ramp_to > 0)) return opt->lr;
    const double f = (double)(step + 1) / (double)steps;
    return (float)((double)opt->lr * (opt->ramp_from + (opt->ramp_to - opt->ramp_from) * f));
}

dcz_status dcz_train_epoch(dcz_net *net, const dcz_dataset *data, const dcz_sgd *opt,
                           dcz_rng *rng, dcz_progress_fn progress, void *ctx,
                           float *loss)
{
    if (!net || !rng) return DCZ_ERR_ARG;
    dcz_status st = check_sgd(opt);
    if (st != DCZ_OK) return st;
    st = dcz_net_validate(net);
    if (st != DCZ_OK) return st;
    st = dcz_train_check_data(net, data);
    if (st != DCZ_OK) return st;
    if (opt->augment & DCZ_AUG_CROP && !data->files) return DCZ_ERR_UNSUPPORTED;   /* no image to crop */
    if (opt->update && (opt->shards > 1 || opt->comm)) return DCZ_ERR_UNSUPPORTED;
    if (opt->teacher) {   /* the net's input and classes, ready for a batch */
        dcz_net *t = opt->teacher;
        if (t == net) return DCZ_ERR_ARG;   /* its logits would be the net's own, overwritten */
        if ((st = dcz_net_validate(t)) != DCZ_OK) return st;
        if (t->in_dim != net->in_dim || t->classes != net->classes) return DCZ_ERR_SHAPE;
    }
    if (opt->device && dcz_dev_runs(net, opt, NULL, 0)) return dcz_dev_epoch(opt->device, net, data, opt, rng, progress, ctx, loss);
    size_t n = data->n;
    int bmax = (size_t)opt->batch < n ? opt->batch : (int)n;
    size_t *perm = malloc(n * sizeof *perm);     /* (n) sample order */
    uint8_t *yb = malloc((size_t)bmax);          /* (bmax) batch labels */
    const int sharded = opt->shards > 1 || opt->comm;
    dcz_shards *sh = NULL;
    if (!perm || !yb) { st = DCZ_ERR_NOMEM; goto cleanup; }
    st = dcz_net_reserve(net, bmax, 1);
    if (st == DCZ_OK && opt->teacher) st = dcz_net_reserve(opt->teacher, bmax, 0);
    if (st != DCZ_OK) goto cleanup;
    st = alloc_grads(net);
    if (st != DCZ_OK) goto cleanup;
    if (sharded && (st = dcz_shards_new(net, opt, &sh)) != DCZ_OK) goto cleanup;
    dcz_net_apply_constraints(net);

    dcz_augment aug;
    dcz_train_order(rng, n, opt->augment, perm, &aug);
    const dcz_augment *augp = aug.what ? &aug : NULL;
    double total = 0;
    const size_t steps = (n + (size_t)bmax - 1) / (size_t)bmax;
    dcz_sgd step = *opt;
    for (size_t start = 0; start < n; start += (size_t)bmax) {
        int bs = n - start < (size_t)bmax ? (int)(n - start) : bmax;
        double bl;
        if (sharded) {
            if ((st = dcz_shards_grad(net, data, perm, start, bs, opt, augp, sh, yb, cpu_part, (void *)opt, &bl)) != DCZ_OK)
                goto cleanup;
        } else {
            if ((st = dcz_dataset_samples_aug(data, perm, start, (size_t)bs, augp, net->act[0], NULL, 0)) != DCZ_OK)
                goto cleanup;
            for (int r = 0; r < bs; r++) yb[r] = data->y[perm[start + (size_t)r]];
            bl = grad_core(net, yb, bs, opt);
        }
        if (!isfinite(bl)) { st = DCZ_ERR_DIVERGED; goto cleanup; }
        total += bl * bs;
        step.lr = dcz_train_step_lr(opt, start / (size_t)bmax, steps);
        st = opt->update ? opt->update(net, &step, opt->update_ctx) : dcz_net_step(net, &step);
        if (st != DCZ_OK) goto cleanup;
        if (progress) progress(ctx, start + (size_t)bs, n);
    }
    /* the last step may have overflowed a weight that no loss has seen */
    for (size_t j = 0; j < net->param_count; j++)
        if (!isfinite(net->param[j])) { st = DCZ_ERR_DIVERGED; goto cleanup; }
    if (loss) *loss = (float)(total / (double)n);
cleanup:
    dcz_shards_free(sh);
    free(perm);
    free(yb);
    return st;
}

dcz_status dcz_net_evaluate(dcz_net *net, const dcz_dataset *data, double *accuracy)
{
    if (!net || !accuracy) return DCZ_ERR_ARG;
    dcz_status st = dcz_net_validate(net);
    if (st != DCZ_OK) return st;
    st = dcz_train_check_data(net, data);
    if (st != DCZ_OK) return st;
    size_t n = data->n;
    int max = dcz_net_chunk(net, EVAL_CHUNK);
    int chunk = n < (size_t)max ? (int)n : max;
    st = dcz_net_reserve(net, chunk, 0);
    if (st != DCZ_OK) return st;
    size_t correct = 0;
    int classes = net->classes;
    for (size_t start = 0; start < n; start += (size_t)chunk) {
        int bs = n - start < (size_t)chunk ? (int)(n - start) : chunk;
        if ((st = dcz_dataset_samples(data, NULL, start, (size_t)bs, net->act[0], NULL, 0)) != DCZ_OK) return st;
        dcz_net_run_layers(net, bs, 0);   /* inference, logits: same argmax as probabilities */
        const float *z = net->act[net->nlayers];   /* (bs, classes) */
        for (int r = 0; r < bs; r++) {
            const float *zr = z + (size_t)r * classes;
            int best = 0;
            for (int j = 1; j < classes; j++) if (zr[j] > zr[best]) best = j;
            correct += best == data->y[start + (size_t)r];
        }
    }
    *accuracy = (double)correct / (double)n;
    return DCZ_OK;
}

dcz_status dcz_lr_check(const char *schedule)
{
    if (!schedule || strcmp(schedule, "const") == 0 || strcmp(schedule, "step") == 0 ||
        strcmp(schedule, "cosine") == 0)
        return DCZ_OK;
    return DCZ_ERR_ARG;
}

float dcz_lr_at(const char *schedule, float base, int e, int n)
{
    if (!schedule || n <= 0 || e < 0) return base;
    if (strcmp(schedule, "step") == 0) {
        if (4 * (long)e >= 3 * (long)n) return base * 0.01f;
        if (2 * (long)e >= (long)n) return base * 0.1f;
        return base;
    }
    if (strcmp(schedule, "cosine") == 0) {
        if (e >= n) return 0.0f;
        return (float)(0.5 * base * (1.0 + cos(3.141592653589793 * e / n)));
    }
    return base;
}
