/* quantize.c: 1-D k-means weight sharing and centroid fine-tuning (Deep
 * Compression, section 3). The contract is documented in quantize.h.
 *
 * k-means works on a sorted copy of the data. With sorted centroids the
 * nearest centroid is a non-decreasing function of the value, so one sweep
 * with a centroid pointer that only moves forward assigns every point
 * (O(n + k) per iteration) and every cluster is a contiguous run of the
 * sorted data, whose mean is a single pass. The data are sorted once
 * (O(n log n)); results are mapped back to the caller's order at the end.
 *
 * Tested by tests/unit/test_quantize.c.
 */
#include "quantize/quantize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct vidx {
    float v;
    size_t i;   /* position in the caller's array */
} vidx;

static int cmp_vidx(const void *a, const void *b)
{
    const vidx *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Uniform in [0, bound), bound > 0, without modulo bias. */
static uint64_t rng_below64(dcz_rng *r, uint64_t bound)
{
    uint64_t floor_ = ((uint64_t)0 - bound) % bound;   /* 2^64 mod bound */
    for (;;) {
        uint64_t v = dcz_rng_u64(r);
        if (v >= floor_)
            return v % bound;
    }
}

/* Initial centroids (unsorted for RANDOM; the caller sorts). */
static void km_init(const float *x, const vidx *s, size_t n, int k, dcz_km_init init,
                    uint64_t seed, float *c)
{
    double lo = n ? s[0].v : 0.0, hi = n ? s[n - 1].v : 0.0;
    if (n == 0) {
        for (int j = 0; j < k; j++)
            c[j] = 0.0f;
        return;
    }
    switch (init) {
    case DCZ_KM_LINEAR:
        if (k == 1) {
            c[0] = (float)((lo + hi) / 2.0);
            break;
        }
        for (int j = 0; j < k; j++)
            c[j] = (float)(lo + (double)j * (hi - lo) / (double)(k - 1));
        break;
    case DCZ_KM_DENSITY:
        for (int j = 0; j < k; j++) {
            size_t q = ((size_t)(2 * j + 1) * n) / (2 * (size_t)k);
            c[j] = s[q < n ? q : n - 1].v;
        }
        break;
    case DCZ_KM_RANDOM: {
        dcz_rng rng;
        dcz_rng_seed(&rng, seed);
        size_t kk = (size_t)k < n ? (size_t)k : n;
        size_t chosen[DCZ_KMEANS_MAX_K];
        size_t m = 0;
        /* Floyd: kk distinct positions out of n. */
        for (size_t j = n - kk; j < n; j++) {
            size_t t = (size_t)rng_below64(&rng, (uint64_t)j + 1);
            for (size_t q = 0; q < m; q++)
                if (chosen[q] == t) {
                    t = j;
                    break;
                }
            chosen[m++] = t;
        }
        for (size_t q = 0; q < m; q++)
            c[q] = x[chosen[q]];
        for (size_t q = m; q < (size_t)k; q++)
            c[q] = x[rng_below64(&rng, n)];
        break;
    }
    }
}

/* Assigns every sorted value to its nearest centroid (ties: higher index),
 * writes labels to a, returns how many labels changed, and the cost. */
static size_t km_assign(const vidx *s, size_t n, const float *c, int k, uint8_t *a,
                        double *cost)
{
    size_t changed = 0;
    double sse = 0.0;
    int j = 0;
    for (size_t i = 0; i < n; i++) {
        double x = s[i].v;
        while (j + 1 < k && fabs(x - (double)c[j + 1]) <= fabs(x - (double)c[j]))
            j++;
        if (a[i] != (uint8_t)j) {
            a[i] = (uint8_t)j;
            changed++;
        }
        double d = x - (double)c[j];
        sse += d * d;
    }
    *cost = sse;
    return changed;
}

/* Moves each centroid to the mean of its cluster (a contiguous run of the
 * sorted data, labels non-decreasing); empty clusters keep theirs. */
static void km_update(const vidx *s, size_t n, const uint8_t *a, float *c)
{
    size_t i = 0;
    while (i < n) {
        int j = a[i];
        double sum = 0.0;
        size_t start = i;
        for (; i < n && a[i] == j; i++)
            sum += s[i].v;
        c[j] = (float)(sum / (double)(i - start));
    }
}

dcz_status dcz_kmeans_1d(const float *x, size_t n, int k, dcz_km_init init, int max_iter,
                         uint64_t seed, float *centroids, uint8_t *assign,
                         dcz_kmeans_info *info)
{
    if (k < 1 || k > DCZ_KMEANS_MAX_K || max_iter < 0 || !centroids || (n > 0 && !x))
        return DCZ_ERR_ARG;
    if (init != DCZ_KM_LINEAR && init != DCZ_KM_DENSITY && init != DCZ_KM_RANDOM)
        return DCZ_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return DCZ_ERR_DATA;
    if (n > SIZE_MAX / sizeof(vidx))
        return DCZ_ERR_NOMEM;

    vidx *s = malloc((n ? n : 1) * sizeof *s);
    uint8_t *a = malloc(n ? n : 1);
    if (!s || !a) {
        free(s);
        free(a);
        return DCZ_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        s[i].v = x[i];
        s[i].i = i;
    }
    qsort(s, n, sizeof *s, cmp_vidx);

    float c[DCZ_KMEANS_MAX_K];
    km_init(x, s, n, k, init, seed, c);
    qsort(c, (size_t)k, sizeof *c, cmp_float);

    dcz_kmeans_info inf;
    memset(&inf, 0, sizeof inf);
    memset(a, 0, n ? n : 1);
    double cost;
    km_assign(s, n, c, k, a, &cost);
    inf.cost[inf.ncost++] = cost;
    for (int it = 1; it <= max_iter; it++) {
        km_update(s, n, a, c);
        /* An empty cluster's centroid may now be out of order. */
        qsort(c, (size_t)k, sizeof *c, cmp_float);
        size_t changed = km_assign(s, n, c, k, a, &cost);
        inf.iterations = it;
        if (inf.ncost < DCZ_KMEANS_TRACE)
            inf.cost[inf.ncost++] = cost;
        if (changed == 0) {
            inf.converged = 1;
            break;
        }
    }
    inf.final_cost = cost;

    memcpy(centroids, c, (size_t)k * sizeof *c);
    if (assign)
        for (size_t i = 0; i < n; i++)
            assign[s[i].i] = a[i];
    if (info)
        *info = inf;
    free(s);
    free(a);
    return DCZ_OK;
}

/* ---- layers -------------------------------------------------------------- */

static int layer_has_weights(const dcz_tlayer *L)
{
    return L && dcz_tlayer_has_weights(L) && L->w && dcz_tlayer_nweights(L) > 0;
}

static int init_valid(dcz_km_init init)
{
    return init == DCZ_KM_LINEAR || init == DCZ_KM_DENSITY || init == DCZ_KM_RANDOM;
}

dcz_status dcz_quantize_layer(dcz_tlayer *L, int bits, dcz_km_init init, int max_iter,
                              uint64_t seed, dcz_quant_layer_report *rep)
{
    if (!layer_has_weights(L) || bits < 1 || bits > 8 || !init_valid(init) || max_iter < 0)
        return DCZ_ERR_ARG;
    size_t n = dcz_tlayer_nweights(L), nk = 0;
    int k = 1 << bits;
    for (size_t i = 0; i < n; i++)
        nk += !L->mask || L->mask[i];

    dcz_status st = DCZ_OK;
    float *x = malloc((nk ? nk : 1) * sizeof *x);
    uint8_t *ak = malloc(nk ? nk : 1);
    float *cb = malloc((size_t)k * sizeof *cb);
    uint8_t *assign = malloc(n);
    if (!x || !ak || !cb || !assign) {
        st = DCZ_ERR_NOMEM;
        goto fail;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (!L->mask || L->mask[i])
            x[j++] = L->w[i];

    dcz_kmeans_info info;
    st = dcz_kmeans_1d(x, nk, k, init, max_iter, seed, cb, ak, &info);
    if (st != DCZ_OK)
        goto fail;

    double sse = 0.0;
    for (size_t q = 0; q < nk; q++) {
        double d = (double)x[q] - (double)cb[ak[q]];
        sse += d * d;
    }

    j = 0;
    for (size_t i = 0; i < n; i++) {
        if (!L->mask || L->mask[i]) {
            assign[i] = ak[j++];
            L->w[i] = cb[assign[i]];
        } else {
            assign[i] = 0;
            L->w[i] = 0.0f;
        }
    }
    free(L->codebook);
    free(L->assign);
    /* the codebook's gradient and momentum live in the net's flat buffers,
     * laid out anew (zeroed) for the new size at the next step */
    L->gcb = L->vcb = NULL;
    L->codebook = cb;
    L->assign = assign;
    L->k = k;

    if (rep) {
        memset(rep, 0, sizeof *rep);
        memcpy(rep->name, L->name, sizeof rep->name);
        rep->name[sizeof rep->name - 1] = '\0';
        rep->layer = -1;
        rep->bits = bits;
        rep->k = k;
        rep->weights = n;
        rep->kept = nk;
        rep->iterations = info.iterations;
        rep->rms_error = nk ? sqrt(sse / (double)nk) : 0.0;
        rep->rms_final = rep->rms_error;
    }
    free(x);
    free(ak);
    return DCZ_OK;

fail:
    free(x);
    free(ak);
    free(cb);
    free(assign);
    return st;
}

void dcz_quant_plan_init(dcz_quant_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->init = DCZ_KM_LINEAR;
    plan->max_iter = 100;
    plan->seed = 1;
    plan->epochs = 2;
    plan->sgd.lr = 1e-4f;
    plan->sgd.momentum = 0.9f;
    plan->sgd.weight_decay = 0.0f;
    plan->sgd.batch = 64;
    plan->sgd.train_biases = 1;
    plan->sgd.train_weights = 1;
    plan->schedule = NULL;
}

void dcz_quant_report_free(dcz_quant_report *rep)
{
    if (!rep)
        return;
    free(rep->epochs);
    free(rep->layers);
    memset(rep, 0, sizeof *rep);
}

/* ---- fine-tuning --------------------------------------------------------- */

dcz_status dcz_quantize_finetune(dcz_net *net, const dcz_quant_plan *plan,
                                 const dcz_dataset *train, const dcz_dataset *test,
                                 dcz_progress_fn progress, void *ctx,
                                 dcz_quant_report *rep)
{
    if (rep)
        memset(rep, 0, sizeof *rep);
    if (!net || !plan || !plan->bits || net->nlayers < 1 || !net->layers ||
        !init_valid(plan->init) || plan->max_iter < 0 || plan->epochs < 0)
        return DCZ_ERR_ARG;
    int nl = net->nlayers, nq = 0;
    for (int l = 0; l < nl; l++) {
        if (!layer_has_weights(&net->layers[l]))
            continue;
        if (plan->bits[l] < 0 || plan->bits[l] > 8)
            return DCZ_ERR_ARG;
        nq += plan->bits[l] > 0;
    }
    int training = train && plan->epochs > 0;
    if (training && (train->n == 0 || !dcz_dataset_fits(net, train) ||
                     !dcz_sgd_valid(&plan->sgd)))
        return DCZ_ERR_ARG;
    if (test && !dcz_dataset_fits(net, test))
        return DCZ_ERR_ARG;

    dcz_status st = DCZ_OK;
    dcz_quant_layer_report *lrep = calloc(nq ? (size_t)nq : 1, sizeof *lrep);
    float **orig = calloc(nq ? (size_t)nq : 1, sizeof *orig);  /* weights before */
    dcz_quant_epoch *ep = calloc(plan->epochs ? (size_t)plan->epochs : 1, sizeof *ep);
    if (!lrep || !orig || !ep) {
        st = DCZ_ERR_NOMEM;
        goto done;
    }

    double acc_initial, acc_clustered, acc_final;
    st = dcz_net_evaluate_optional(net, test, &acc_initial);
    if (st != DCZ_OK)
        goto done;

    int q = 0;
    for (int l = 0; l < nl; l++) {
        dcz_tlayer *L = &net->layers[l];
        if (!layer_has_weights(L) || plan->bits[l] == 0)
            continue;
        size_t n = dcz_tlayer_nweights(L);
        orig[q] = malloc(n * sizeof **orig);
        if (!orig[q]) {
            st = DCZ_ERR_NOMEM;
            goto done;
        }
        memcpy(orig[q], L->w, n * sizeof **orig);
        st = dcz_quantize_layer(L, plan->bits[l], plan->init, plan->max_iter,
                                plan->seed + (uint64_t)l, &lrep[q]);
        if (st != DCZ_OK)
            goto done;
        lrep[q].layer = l;
        q++;
    }
    st = dcz_net_evaluate_optional(net, test, &acc_clustered);
    if (st != DCZ_OK)
        goto done;
    acc_final = acc_clustered;

    if (training) {
        size_t per_epoch = (train->n + (size_t)plan->sgd.batch - 1) / (size_t)plan->sgd.batch;
        dcz_progress_relay pr = { progress, ctx, 0,
                                  per_epoch * (size_t)plan->epochs };
        const char *sched = plan->schedule ? plan->schedule : "cosine";
        dcz_rng rng;
        dcz_rng_seed(&rng, plan->seed);
        for (int e = 0; e < plan->epochs; e++) {
            dcz_sgd opt = plan->sgd;
            opt.lr = dcz_lr_at(sched, plan->sgd.lr, e, plan->epochs);
            float loss = 0.0f;
            size_t start = pr.base;
            st = dcz_train_epoch(net, train, &opt, &rng,
                                 progress ? dcz_progress_relay_fn : NULL, &pr, &loss);
            if (st != DCZ_OK)
                goto done;
            pr.base = start + per_epoch;
            ep[e].lr = opt.lr;
            ep[e].loss = loss;
        }
        if (progress)
            progress(ctx, pr.total, pr.total);
        st = dcz_net_evaluate_optional(net, test, &acc_final);
        if (st != DCZ_OK)
            goto done;
    }

    for (int j = 0; j < nq; j++) {
        const dcz_tlayer *L = &net->layers[lrep[j].layer];
        size_t n = lrep[j].weights;
        double sse = 0.0;
        for (size_t i = 0; i < n; i++) {
            if (L->mask && !L->mask[i])
                continue;
            double d = (double)orig[j][i] - (double)L->w[i];
            sse += d * d;
        }
        lrep[j].rms_final = lrep[j].kept ? sqrt(sse / (double)lrep[j].kept) : 0.0;
    }

    if (rep) {
        rep->acc_initial = acc_initial;
        rep->acc_clustered = acc_clustered;
        rep->acc_final = acc_final;
        rep->nepochs = training ? plan->epochs : 0;
        rep->epochs = ep;
        rep->nlayers = nq;
        rep->layers = lrep;
        ep = NULL;
        lrep = NULL;
    }

done:
    if (orig)
        for (int j = 0; j < nq; j++)
            free(orig[j]);
    free(orig);
    free(lrep);
    free(ep);
    return st;
}
