/* sensitivity.c: the per-layer sensitivity scan (see steer.h).
 *
 * Each trial changes one layer, measures, and puts the layer back from a
 * saved copy of its weights and compression state.
 *
 * Checked by tests/unit/test_steer.c.
 */
#include <stdlib.h>
#include <string.h>

#include "prune/prune.h"
#include "steer/steer.h"

void dcz_sens_plan_init(dcz_sens_plan *p)
{
    static const double s[] = { 0.3, 0.5, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98 };
    memset(p, 0, sizeof *p);
    p->nsparsity = (int)(sizeof s / sizeof s[0]);
    memcpy(p->sparsity, s, sizeof s);
    p->nbits = 7;
    for (int i = 0; i < p->nbits; i++) p->bits[i] = i + 2;
    p->init = DCZ_KM_LINEAR;
    p->kmeans_iters = 30;
    p->seed = 1;
    p->block = 1;
}

dcz_status dcz_sens_plan_check(const dcz_sens_plan *p)
{
    if (!p || p->nsparsity < 0 || p->nbits < 0 || p->nsparsity > DCZ_SENS_MAX_LEVELS ||
        p->nbits > DCZ_SENS_MAX_LEVELS || p->nsparsity + p->nbits == 0 || p->kmeans_iters < 1 || p->block < 1 ||
        p->block > DCZ_PRUNE_MAX_BLOCK)
        return DCZ_ERR_ARG;
    for (int i = 0; i < p->nsparsity; i++)
        if (!(p->sparsity[i] >= 0 && p->sparsity[i] < 1) || (i && p->sparsity[i] <= p->sparsity[i - 1]))
            return DCZ_ERR_ARG;
    for (int i = 0; i < p->nbits; i++)
        if (p->bits[i] < 1 || p->bits[i] > 8 || (i && p->bits[i] <= p->bits[i - 1])) return DCZ_ERR_ARG;
    return DCZ_OK;
}

/* A layer's weights and compression state, to put back after a trial. */
typedef struct saved {
    float *w;
    uint8_t *mask, *assign;
    float *codebook;
    int k;
} saved;

static void *dup_or_null(const void *p, size_t n)
{
    if (!p) return NULL;
    void *q = malloc(n ? n : 1);
    if (q) memcpy(q, p, n);
    return q;
}

static dcz_status save(const dcz_tlayer *L, saved *s)
{
    const size_t n = dcz_tlayer_nweights(L);
    memset(s, 0, sizeof *s);
    s->k = L->k;
    s->w = dup_or_null(L->w, n * sizeof *L->w);
    s->mask = dup_or_null(L->mask, n);
    s->assign = dup_or_null(L->assign, n);
    s->codebook = dup_or_null(L->codebook, (size_t)L->k * sizeof *L->codebook);
    return s->w && (!L->mask || s->mask) && (!L->assign || s->assign) && (!L->codebook || s->codebook)
        ? DCZ_OK : DCZ_ERR_NOMEM;
}

/* Puts L back as saved (s is then empty). */
static void restore(dcz_tlayer *L, saved *s)
{
    memcpy(L->w, s->w, dcz_tlayer_nweights(L) * sizeof *L->w);
    free(s->w);
    free(L->mask);
    free(L->assign);
    free(L->codebook);
    L->mask = s->mask;
    L->assign = s->assign;
    L->codebook = s->codebook;
    L->k = s->k;
    memset(s, 0, sizeof *s);
}

static void drop(saved *s)
{
    free(s->w); free(s->mask); free(s->assign); free(s->codebook);
    memset(s, 0, sizeof *s);
}

/* One trial on layer L: pruned to sparsity (bits 0) or shared with 2^bits
 * centroids; the accuracy into *acc; L put back. */
static dcz_status trial(dcz_net *net, dcz_tlayer *L, const dcz_dataset *data, const dcz_sens_plan *p,
                        double sparsity, int bits, double baseline, double *acc)
{
    if (!bits && sparsity <= dcz_prune_layer_sparsity(L)) {   /* already that sparse */
        *acc = baseline;
        return DCZ_OK;
    }
    saved s;
    dcz_status st = save(L, &s);
    if (st != DCZ_OK) {
        drop(&s);
        return st;
    }
    if (bits) st = dcz_quantize_layer(L, bits, p->init, p->kmeans_iters, p->seed, NULL);
    else st = dcz_prune_layer_blocks(L, sparsity, p->block, NULL, NULL);
    if (st == DCZ_OK) st = dcz_net_evaluate(net, data, acc);
    restore(L, &s);
    return st;
}

dcz_status dcz_sensitivity(dcz_net *net, const dcz_dataset *data, const dcz_sens_plan *p,
                           dcz_sens_progress_fn progress, void *ctx, dcz_sens_report *rep)
{
    if (!net || !data || !rep) return DCZ_ERR_ARG;
    memset(rep, 0, sizeof *rep);
    if (dcz_sens_plan_check(p) != DCZ_OK || !dcz_dataset_fits(net, data)) return DCZ_ERR_ARG;
    int n = 0;
    for (int i = 0; i < net->nlayers; i++) n += dcz_tlayer_has_weights(&net->layers[i]);
    if (n == 0) return DCZ_ERR_ARG;
    rep->layers = calloc((size_t)n, sizeof *rep->layers);
    if (!rep->layers) return DCZ_ERR_NOMEM;
    rep->samples = data->n;
    dcz_net_reset_state(net);   /* trials change codebooks: no training state across them */
    dcz_status st = dcz_net_evaluate(net, data, &rep->baseline);
    const size_t total = (size_t)n * (size_t)(p->nsparsity + p->nbits);
    size_t done = 0;
    for (int i = 0; i < net->nlayers && st == DCZ_OK; i++) {
        dcz_tlayer *L = &net->layers[i];
        if (!dcz_tlayer_has_weights(L)) continue;
        dcz_sens_layer *r = &rep->layers[rep->nlayers++];
        r->layer = i;
        memcpy(r->name, L->name, sizeof r->name);
        r->weights = dcz_tlayer_nweights(L);
        r->density = 1 - dcz_prune_layer_sparsity(L);
        for (int j = 0; j < p->nsparsity + p->nbits && st == DCZ_OK; j++) {
            const int shared = j >= p->nsparsity;
            double *acc = shared ? &r->share_acc[j - p->nsparsity] : &r->prune_acc[j];
            st = trial(net, L, data, p, shared ? 0 : p->sparsity[j], shared ? p->bits[j - p->nsparsity] : 0,
                       rep->baseline, acc);
            if (progress) progress(ctx, ++done, total);
        }
    }
    dcz_net_reset_state(net);   /* codebooks came and went: no stale gradient layout */
    if (st != DCZ_OK) dcz_sens_report_free(rep);
    return st;
}

void dcz_sens_report_free(dcz_sens_report *rep)
{
    if (!rep) return;
    free(rep->layers);
    memset(rep, 0, sizeof *rep);
}
