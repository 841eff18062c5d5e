/* prune.c: magnitude pruning of dense and convolution layers and the iterative
 * prune/retrain schedule (Deep Compression, section 2; Zhu & Gupta 2017 for
 * the cubic sparsity schedule). The contract is documented in prune.h.
 *
 * Exact-count pruning sorts the magnitudes of the kept weights once per call
 * (O(n log n)); the cut value v is the t-th smallest, everything strictly
 * below v goes, then weights equal to v go in index order until t are gone.
 * By blocks (prune.h), the kept blocks are sorted by the sum of their kept
 * weights' squares (then by index), and go whole, the smallest first.
 *
 * Tested by tests/unit/test_prune.c.
 */
#include "prune/prune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int layer_has_weights(const dcz_tlayer *L)
{
    return L && dcz_tlayer_has_weights(L) && L->w && dcz_tlayer_nweights(L) > 0;
}

static size_t layer_weights(const dcz_tlayer *L)
{
    return dcz_tlayer_nweights(L);
}

static size_t layer_pruned(const dcz_tlayer *L)
{
    size_t n = layer_weights(L), p = 0;
    if (!L->mask)
        return 0;
    for (size_t i = 0; i < n; i++)
        p += L->mask[i] == 0;
    return p;
}

size_t dcz_prune_count(double sparsity, size_t n)
{
    if (!(sparsity > 0.0))      /* also NaN */
        return 0;
    if (sparsity >= 1.0)
        return n;
    double t = sparsity * (double)n;
    double r = nearbyint(t);
    double m = fabs(t - r) <= 1e-9 * (t > 1.0 ? t : 1.0) ? r : floor(t);
    if (m <= 0.0)
        return 0;
    if (m >= (double)n)
        return n;
    return (size_t)m;
}

double dcz_prune_schedule(double s_i, double s_f, int r, int K)
{
    if (K < 1)
        K = 1;
    if (r <= 0)
        return s_i;
    if (r >= K)
        return s_f;
    double f = 1.0 - (double)r / (double)K;
    return s_f + (s_i - s_f) * f * f * f;
}

dcz_status dcz_prune_threshold_quality(const float *w, const uint8_t *mask, size_t n,
                                       double quality, float *thr)
{
    if (!w || !thr || n == 0 || !(quality >= 0.0) || !isfinite(quality))
        return DCZ_ERR_ARG;
    double sum = 0.0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (mask && !mask[i])
            continue;
        if (!isfinite(w[i]))
            return DCZ_ERR_DATA;
        sum += w[i];
        m++;
    }
    if (m == 0) {
        *thr = 0.0f;
        return DCZ_OK;
    }
    double mean = sum / (double)m, ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (mask && !mask[i])
            continue;
        double d = (double)w[i] - mean;
        ss += d * d;
    }
    *thr = (float)(quality * sqrt(ss / (double)m));
    return DCZ_OK;
}

dcz_status dcz_prune_threshold_sparsity(const float *w, size_t n, double sparsity,
                                        float *thr)
{
    if (!w || !thr || n == 0 || !(sparsity >= 0.0 && sparsity <= 1.0))
        return DCZ_ERR_ARG;
    size_t m = dcz_prune_count(sparsity, n);
    for (size_t i = 0; i < n; i++)
        if (isnan(w[i]))
            return DCZ_ERR_DATA;
    if (m == 0) {
        *thr = -1.0f;
        return DCZ_OK;
    }
    float *a = malloc(n * sizeof *a);
    if (!a)
        return DCZ_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        a[i] = fabsf(w[i]);
    qsort(a, n, sizeof *a, cmp_float);
    *thr = a[m - 1];
    free(a);
    return DCZ_OK;
}

static dcz_status ensure_mask(dcz_tlayer *L)
{
    if (L->mask)
        return DCZ_OK;
    size_t n = layer_weights(L);
    L->mask = malloc(n);
    if (!L->mask)
        return DCZ_ERR_NOMEM;
    memset(L->mask, 1, n);
    return DCZ_OK;
}

static void prune_one(dcz_tlayer *L, size_t i)
{
    L->mask[i] = 0;
    L->w[i] = 0.0f;
    if (L->vw)
        L->vw[i] = 0.0f;
}

dcz_status dcz_prune_layer(dcz_tlayer *L, float thr, size_t *kept)
{
    if (!layer_has_weights(L) || isnan(thr))
        return DCZ_ERR_ARG;
    dcz_status st = ensure_mask(L);
    if (st != DCZ_OK)
        return st;
    size_t n = layer_weights(L), k = 0;
    for (size_t i = 0; i < n; i++) {
        if (L->mask[i] && !(fabsf(L->w[i]) <= thr))
            k++;
        else
            prune_one(L, i);
    }
    if (kept)
        *kept = k;
    return DCZ_OK;
}

/* How layer L's weights fall into blocks of `block` input channels (see
 * dcz_prune_layer_blocks): rows (output channels), the input channels a
 * row reads (of its group), the taps of each (1 for DENSE), and the
 * channels a block spans (at most the row's). */
typedef struct block_shape { size_t rows, ins, taps, span; } block_shape;

static block_shape block_shape_of(const dcz_tlayer *L, int block)
{
    block_shape b;
    b.taps = L->op == DCZ_OP_CONV2D ? (size_t)L->kh * (size_t)L->kw : 1;
    b.ins = dcz_tlayer_wcols(L) / b.taps;
    b.rows = layer_weights(L) / dcz_tlayer_wcols(L);
    b.span = (size_t)block < b.ins ? (size_t)block : b.ins;   /* block >= 1: checked by the callers */
    return b;
}

/* A block: the index of its first weight (the others follow at a stride
 * of the layer's taps; as many as the span, or fewer at the end of a row:
 * block_count) and the sum of its kept weights' squares; 16 bytes, so the
 * blocks of a 100-million-weight layer take 400 MB at a span of 4. */
typedef struct block_ref { size_t first; double score; } block_ref;

static size_t block_count(block_shape b, size_t first)
{
    const size_t c0 = first / b.taps % b.ins;
    return b.ins - c0 < b.span ? b.ins - c0 : b.span;
}

static int cmp_block(const void *a, const void *b)
{
    const block_ref *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

/* prune_to_count by blocks of b.span > 1 input channels: the fewest whole
 * blocks, the smallest sums of squares first, that prune at least m. */
static dcz_status prune_blocks(dcz_tlayer *L, size_t m, block_shape b, float *thr, size_t *kept)
{
    const size_t n = layer_weights(L), per_row = (b.ins + b.span - 1) / b.span;
    size_t p = layer_pruned(L), nb = 0;
    block_ref *blk = malloc(b.rows * per_row * b.taps * sizeof *blk);
    if (!blk)
        return DCZ_ERR_NOMEM;
    for (size_t r = 0; r < b.rows; r++)
        for (size_t c0 = 0; c0 < b.ins; c0 += b.span)
            for (size_t t = 0; t < b.taps; t++) {
                block_ref k = { (r * b.ins + c0) * b.taps + t, 0 };
                size_t live = 0;
                for (size_t j = 0, cnt = block_count(b, k.first); j < cnt; j++) {
                    const size_t i = k.first + j * b.taps;
                    if (!L->mask[i]) continue;
                    live++;
                    k.score += (double)L->w[i] * L->w[i];
                }
                if (live) blk[nb++] = k;
            }
    qsort(blk, nb, sizeof *blk, cmp_block);
    float top = -1.0f;
    for (size_t k = 0; k < nb && p < m; k++)
        for (size_t j = 0, cnt = block_count(b, blk[k].first); j < cnt; j++) {
            const size_t i = blk[k].first + j * b.taps;
            if (!L->mask[i]) continue;
            if (fabsf(L->w[i]) > top) top = fabsf(L->w[i]);
            prune_one(L, i);
            p++;
        }
    free(blk);
    if (thr)
        *thr = top;
    if (kept)
        *kept = n - p;
    return DCZ_OK;
}

/* Prunes L until m of its weights are pruned (see prune.h), by blocks of
 * `block` input channels. */
static dcz_status prune_to_count(dcz_tlayer *L, size_t m, int block, float *thr, size_t *kept)
{
    size_t n = layer_weights(L);
    size_t p = layer_pruned(L);
    if (thr)
        *thr = -1.0f;
    if (m > n)
        m = n;
    for (size_t i = 0; m > p && i < n; i++)
        if ((!L->mask || L->mask[i]) && isnan(L->w[i]))
            return DCZ_ERR_DATA;
    dcz_status st = ensure_mask(L);
    if (st != DCZ_OK)
        return st;
    if (m <= p) {
        if (kept)
            *kept = n - p;
        return DCZ_OK;
    }
    const block_shape b = block_shape_of(L, block);
    if (b.span > 1)
        return prune_blocks(L, m, b, thr, kept);
    size_t t = m - p, nk = n - p;   /* t of the nk kept weights go */
    float *a = malloc(nk * sizeof *a);
    if (!a)
        return DCZ_ERR_NOMEM;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (L->mask[i])
            a[j++] = fabsf(L->w[i]);
    qsort(a, nk, sizeof *a, cmp_float);
    float v = a[t - 1];
    free(a);

    size_t less = 0;
    for (size_t i = 0; i < n; i++)
        if (L->mask[i] && fabsf(L->w[i]) < v) {
            prune_one(L, i);
            less++;
        }
    size_t ties = t - less;         /* >= 1: v itself is among the t smallest */
    for (size_t i = 0; i < n && ties > 0; i++)
        if (L->mask[i] && fabsf(L->w[i]) == v) {
            prune_one(L, i);
            ties--;
        }
    if (thr)
        *thr = v;
    if (kept)
        *kept = n - m;
    return DCZ_OK;
}

dcz_status dcz_prune_layer_blocks(dcz_tlayer *L, double sparsity, int block, float *thr, size_t *kept)
{
    if (!layer_has_weights(L) || !(sparsity >= 0.0 && sparsity <= 1.0) || block < 1 || block > DCZ_PRUNE_MAX_BLOCK)
        return DCZ_ERR_ARG;
    return prune_to_count(L, dcz_prune_count(sparsity, layer_weights(L)), block, thr, kept);
}

dcz_status dcz_prune_layer_to_sparsity(dcz_tlayer *L, double sparsity, float *thr,
                                       size_t *kept)
{
    return dcz_prune_layer_blocks(L, sparsity, 1, thr, kept);
}

double dcz_prune_layer_sparsity(const dcz_tlayer *L)
{
    if (!layer_has_weights(L))
        return 0.0;
    return (double)layer_pruned(L) / (double)layer_weights(L);
}

void dcz_prune_plan_init(dcz_prune_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->rounds = 3;
    plan->epochs = 2;
    plan->final_epochs = 4;
    plan->sgd.lr = 0.01f;
    plan->sgd.momentum = 0.9f;
    plan->sgd.weight_decay = 1e-4f;
    plan->sgd.batch = 64;
    plan->sgd.train_biases = 1;
    plan->sgd.train_weights = 1;
    plan->final_schedule = NULL;
    plan->seed = 1;
    plan->variational = 0;
    plan->variational_ramp = 5;
    plan->variational_lr = 1e-3f;
    plan->variational_threshold = 3.0f;
    plan->variational_kl = 1.0;
    plan->block = 1;
}

void dcz_prune_report_free(dcz_prune_report *rep)
{
    if (!rep)
        return;
    free(rep->rounds);
    free(rep->layers);
    memset(rep, 0, sizeof *rep);
}

/* ---- the run ------------------------------------------------------------- */

/* Trains one epoch at rate lr, advancing the run's progress. */
static dcz_status retrain_epoch(dcz_net *net, const dcz_dataset *train,
                                const dcz_sgd *base, float lr, dcz_rng *rng,
                                dcz_progress_relay *pr, size_t per_epoch, double *loss)
{
    dcz_sgd opt = *base;
    opt.lr = lr;
    float l = 0.0f;
    size_t start = pr->base;
    dcz_status st = dcz_train_epoch(net, train, &opt, rng,
                                    pr->fn ? dcz_progress_relay_fn : NULL, pr, &l);
    pr->base = start + per_epoch;
    *loss = l;
    return st;
}

/* The keys of the variational phase's generators (mixed with the seed) */
#define VD_SHUFFLE_KEY 0x76617264726f70ULL   /* "vardrop" */
#define VD_NOISE_KEY 0x6e6f697365ULL         /* "noise" */

/* The variational phase (variational.c) on the targeted layers:
 * plan->variational epochs, the KL weight rising over the ramp, Adam's rate
 * held for the first half and falling linearly over the second; then the
 * weights of large log alpha pruned, and the trainer's momentum reset. */
static dcz_status variational_phase(dcz_net *net, const dcz_prune_plan *plan, const dcz_dataset *train,
                                    dcz_progress_relay *pr, size_t per_epoch)
{
    dcz_rng shuffle;
    dcz_rng_seed(&shuffle, dcz_rng_mix64(plan->seed ^ VD_SHUFFLE_KEY));
    const int E = plan->variational, half = plan->variational / 2;
    uint8_t *chosen = calloc((size_t)net->nlayers, 1);
    if (!chosen) return DCZ_ERR_NOMEM;
    for (int l = 0; l < net->nlayers; l++)
        chosen[l] = layer_has_weights(&net->layers[l]) && plan->targets[l].mode != DCZ_PRUNE_NONE;
    dcz_vd_state *s = NULL;
    dcz_status st = dcz_vd_begin(net, chosen, dcz_rng_mix64(plan->seed ^ VD_NOISE_KEY), &s);
    free(chosen);
    if (st != DCZ_OK) return st;
    dcz_sgd opt = plan->sgd;
    opt.update = dcz_vd_update;
    opt.update_ctx = s;
    for (int e = 0; e < E && st == DCZ_OK; e++) {
        const int ramp = plan->variational_ramp;
        dcz_vd_set_kl(s, plan->variational_kl * (ramp > 0 && e < ramp ? (double)e / ramp : 1.0), train->n);
        const float lr = e < half ? plan->variational_lr
                                  : plan->variational_lr * (float)(E - e) / (float)(E - half);
        double loss;
        st = retrain_epoch(net, train, &opt, lr, &shuffle, pr, per_epoch, &loss);
    }
    if (st == DCZ_OK && !isinf(plan->variational_threshold)) st = dcz_vd_prune(s, plan->variational_threshold);
    dcz_vd_free(s);
    dcz_net_reset_state(net);
    return st;
}

dcz_status dcz_prune_run(dcz_net *net, const dcz_prune_plan *plan,
                         const dcz_dataset *train, const dcz_dataset *test,
                         dcz_progress_fn progress, void *ctx, dcz_prune_report *rep)
{
    if (rep)
        memset(rep, 0, sizeof *rep);
    if (!net || !plan || !plan->targets || plan->rounds < 1 || plan->epochs < 0 ||
        plan->final_epochs < 0 || net->nlayers < 1 || !net->layers || plan->block < 1 ||
        plan->block > DCZ_PRUNE_MAX_BLOCK)
        return DCZ_ERR_ARG;
    int K = plan->rounds, nl = net->nlayers;
    int training = train && (plan->epochs > 0 || plan->final_epochs > 0 || plan->variational > 0);
    if (training && (train->n == 0 || !dcz_dataset_fits(net, train) ||
                     !dcz_sgd_valid(&plan->sgd)))
        return DCZ_ERR_ARG;
    if (test && !dcz_dataset_fits(net, test))
        return DCZ_ERR_ARG;
    if (plan->variational < 0 || plan->variational_ramp < 0 || !(plan->variational_lr > 0) ||
        !isfinite(plan->variational_lr) || isnan(plan->variational_threshold) || !(plan->variational_kl > 0) ||
        !isfinite(plan->variational_kl))
        return DCZ_ERR_ARG;
    for (int l = 0; l < nl; l++) {
        const dcz_prune_target *t = &plan->targets[l];
        if (!layer_has_weights(&net->layers[l]) || t->mode == DCZ_PRUNE_NONE)
            continue;
        if (t->mode == DCZ_PRUNE_SPARSITY && !(t->value >= 0.0 && t->value <= 1.0))
            return DCZ_ERR_ARG;
        if (t->mode == DCZ_PRUNE_QUALITY && !(t->value >= 0.0 && isfinite(t->value)))
            return DCZ_ERR_ARG;
        if (t->mode != DCZ_PRUNE_SPARSITY && t->mode != DCZ_PRUNE_QUALITY)
            return DCZ_ERR_ARG;
    }

    dcz_status st = DCZ_OK;
    size_t *m_f = calloc((size_t)nl, sizeof *m_f);       /* final pruned counts */
    double *s_i = calloc((size_t)nl, sizeof *s_i);       /* starting sparsity */
    float *last_thr = malloc((size_t)nl * sizeof *last_thr);
    dcz_prune_round *rounds = calloc((size_t)K, sizeof *rounds);
    dcz_prune_layer_report *lrep = NULL;
    if (!m_f || !s_i || !last_thr || !rounds) {
        st = DCZ_ERR_NOMEM;
        goto done;
    }

    size_t per_epoch = 0, total = 0;
    if (training) {
        per_epoch = (train->n + (size_t)plan->sgd.batch - 1) / (size_t)plan->sgd.batch;
        total = per_epoch * ((size_t)K * (size_t)plan->epochs + (size_t)plan->final_epochs +
                             (size_t)plan->variational);
    }
    dcz_progress_relay pr = { progress, ctx, 0, total };
    dcz_rng rng;
    dcz_rng_seed(&rng, plan->seed);

    double acc_initial;
    st = dcz_net_evaluate_optional(net, test, &acc_initial);
    if (st != DCZ_OK)
        goto done;
    double acc_variational = -1.0;
    size_t variational_kept = 0;
    if (training && plan->variational > 0) {
        st = variational_phase(net, plan, train, &pr, per_epoch);
        for (int l = 0; l < nl; l++)
            if (layer_has_weights(&net->layers[l]))
                variational_kept += layer_weights(&net->layers[l]) - layer_pruned(&net->layers[l]);
        if (st == DCZ_OK)
            st = dcz_net_evaluate_optional(net, test, &acc_variational);
        if (st != DCZ_OK)
            goto done;
    }

    /* Final targets, fixed from the weights as they are now (after the
     * variational phase). */
    for (int l = 0; l < nl; l++) {
        dcz_tlayer *L = &net->layers[l];
        const dcz_prune_target *t = &plan->targets[l];
        last_thr[l] = -1.0f;
        if (!layer_has_weights(L) || t->mode == DCZ_PRUNE_NONE)
            continue;
        size_t n = layer_weights(L);
        s_i[l] = dcz_prune_layer_sparsity(L);
        if (t->mode == DCZ_PRUNE_SPARSITY) {
            m_f[l] = dcz_prune_count(t->value, n);
        } else {
            float thr;
            st = dcz_prune_threshold_quality(L->w, L->mask, n, t->value, &thr);
            if (st != DCZ_OK)
                goto done;
            size_t c = 0;
            for (size_t i = 0; i < n; i++)
                c += (L->mask && !L->mask[i]) || fabsf(L->w[i]) <= thr;
            m_f[l] = c;
        }
    }

    for (int r = 1; r <= K; r++) {
        size_t all = 0, pruned = 0;
        for (int l = 0; l < nl; l++) {
            dcz_tlayer *L = &net->layers[l];
            if (!layer_has_weights(L) || plan->targets[l].mode == DCZ_PRUNE_NONE)
                continue;
            size_t n = layer_weights(L), m = m_f[l];
            if (r < K) {
                double s_f = (double)m_f[l] / (double)n;
                size_t mr = dcz_prune_count(dcz_prune_schedule(s_i[l], s_f, r, K), n);
                m = mr < m ? mr : m;
            }
            float thr;
            size_t kept;
            st = prune_to_count(L, m, plan->block, &thr, &kept);
            if (st != DCZ_OK)
                goto done;
            if (thr >= 0.0f)
                last_thr[l] = thr;
            all += n;
            pruned += n - kept;
        }
        dcz_prune_round *R = &rounds[r - 1];
        R->target = all ? (double)pruned / (double)all : 0.0;
        R->loss = -1.0;
        st = dcz_net_evaluate_optional(net, test, &R->acc_pruned);
        if (st != DCZ_OK)
            goto done;
        if (training && plan->epochs > 0) {
            double sum = 0.0;
            for (int e = 0; e < plan->epochs; e++) {
                double loss;
                st = retrain_epoch(net, train, &plan->sgd, plan->sgd.lr, &rng, &pr,
                                   per_epoch, &loss);
                if (st != DCZ_OK)
                    goto done;
                sum += loss;
            }
            R->loss = sum / plan->epochs;
            st = dcz_net_evaluate_optional(net, test, &R->acc_retrained);
        } else {
            R->acc_retrained = R->acc_pruned;
        }
        if (st != DCZ_OK)
            goto done;
        if (plan->round_done)
            plan->round_done(plan->round_ctx, r, K, R);
    }

    double final_loss = -1.0, acc_final = rounds[K - 1].acc_retrained;
    if (training && plan->final_epochs > 0) {
        const char *sched = plan->final_schedule ? plan->final_schedule : "cosine";
        double sum = 0.0;
        for (int e = 0; e < plan->final_epochs; e++) {
            float lr = dcz_lr_at(sched, plan->sgd.lr, e, plan->final_epochs);
            double loss;
            st = retrain_epoch(net, train, &plan->sgd, lr, &rng, &pr, per_epoch, &loss);
            if (st != DCZ_OK)
                goto done;
            sum += loss;
        }
        final_loss = sum / plan->final_epochs;
        st = dcz_net_evaluate_optional(net, test, &acc_final);
        if (st != DCZ_OK)
            goto done;
    }
    if (progress && total > 0)
        progress(ctx, total, total);

    if (rep) {
        int nd = 0;
        for (int l = 0; l < nl; l++)
            nd += layer_has_weights(&net->layers[l]);
        lrep = calloc(nd > 0 ? (size_t)nd : 1, sizeof *lrep);
        if (!lrep) {
            st = DCZ_ERR_NOMEM;
            goto done;
        }
        size_t tw = 0, tk = 0;
        int j = 0;
        for (int l = 0; l < nl; l++) {
            dcz_tlayer *L = &net->layers[l];
            if (!layer_has_weights(L))
                continue;
            dcz_prune_layer_report *o = &lrep[j++];
            memcpy(o->name, L->name, sizeof o->name);
            o->name[sizeof o->name - 1] = '\0';
            o->layer = l;
            o->mode = plan->targets[l].mode;
            o->weights = layer_weights(L);
            o->kept = o->weights - layer_pruned(L);
            o->target = o->mode == DCZ_PRUNE_NONE ? 0.0
                      : (double)m_f[l] / (double)o->weights;
            o->density = (double)o->kept / (double)o->weights;
            o->threshold = last_thr[l];
            tw += o->weights;
            tk += o->kept;
        }
        rep->acc_initial = acc_initial;
        rep->acc_variational = acc_variational;
        rep->variational_kept = variational_kept;
        rep->acc_final = acc_final;
        rep->final_loss = final_loss;
        rep->nrounds = K;
        rep->rounds = rounds;
        rep->nlayers = nd;
        rep->layers = lrep;
        rep->weights = tw;
        rep->kept = tk;
        rounds = NULL;
        lrep = NULL;
    }

done:
    free(m_f);
    free(s_i);
    free(last_thr);
    free(rounds);
    free(lrep);
    return st;
}
