/* variational.c: pruning by sparse variational dropout (Molchanov, Ashukha,
 * Vetrov, "Variational Dropout Sparsifies Deep Neural Networks", ICML
 * 2017), the phase dcz_prune_run runs before its magnitude rounds when a
 * plan asks for it (dcz_prune_plan.variational).
 *
 * Each chosen fully connected or convolution layer learns, beside each
 * weight w, the log variance log sigma^2 of a Gaussian noise on it; the
 * trainer draws the layer's outputs through that noise (the local
 * reparameterization trick, train/layers.c: vd_forward, vd_backward). The
 * loss is the data term plus beta / N times the sum over weights of the approximate KL divergence of
 * the log-uniform prior, -KL = k1 sigmoid(k2 + k3 la) - log(1 + 1/alpha) / 2
 * - k1 with la = log alpha = log sigma^2 - log w^2 clipped to [-10, 10]
 * (the paper's equation 14), beta rising linearly from 0 to 1 over the
 * first epochs. A weight whose noise outgrows it (log alpha >= the plan's
 * threshold, 3: alpha about 20) carries no signal, and is pruned when the
 * phase ends; a weight that matters keeps its noise small. So the training
 * decides which weights go, layer by layer, rather than their magnitude
 * alone.
 *
 * Every parameter moves by Adam (beta1 0.9, beta2 0.999, 1e-8) during the
 * phase: the KL term's gradient on a log variance is of order 1 / N, which
 * plain SGD would take thousands of epochs to follow. The rate is the
 * plan's for the first half of the phase, then falls linearly towards 0.
 * Masked weights stay 0, with no noise.
 *
 * Tested by tests/unit/test_prune.c (the gradients of the noisy pass,
 * dense and convolution, and of the KL term against finite differences,
 * pruning by log alpha, a run that prunes most weights and repeats bit for
 * bit), tests/cli/budget.sh (a budget's phase, and its recipe giving the
 * same model) and tests/cli/fail_fast.sh (the refusals).
 */
#include "prune/prune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The paper's fit of -KL for the log-uniform prior (equation 14). */
#define VD_K1 0.63576
#define VD_K2 1.87320
#define VD_K3 1.48695
#define VD_LA_MIN -10.0       /* log alpha clipped to this range in the KL */
#define VD_LA_MAX 10.0
#define VD_LS_INIT -10.0f     /* log sigma^2 at the start: nearly no noise */
#define VD_WEPS 1e-8          /* w^2 + this under the logarithm */

/* Adam's moments of one parameter array. */
typedef struct adam_pair { float *m, *v; } adam_pair;

typedef struct vd_layer {
    adam_pair w, b, ls;       /* ls: only for the chosen layers */
    float *ls_buf, *s2, *gls; /* (rows, cols) each, chosen layers */
} vd_layer;

struct dcz_vd_state {
    dcz_net *net;
    dcz_rng rng;              /* the noise of every chosen layer */
    vd_layer *l;              /* (net->nlayers) */
    double kl_scale;          /* beta / N for the epoch under way */
    uint64_t t;               /* Adam steps taken */
};

double dcz_vd_log_alpha(double w, double ls)
{
    const double la = ls - log(w * w + VD_WEPS);
    return la < VD_LA_MIN ? VD_LA_MIN : la > VD_LA_MAX ? VD_LA_MAX : la;
}

double dcz_vd_neg_kl(double w, double ls)
{
    const double la = dcz_vd_log_alpha(w, ls);
    return VD_K1 / (1.0 + exp(-(VD_K2 + VD_K3 * la))) - 0.5 * log1p(exp(-la)) - VD_K1;
}

void dcz_vd_kl_grad(float w, float ls, float scale, float *gw, float *gls)
{
    const float w2 = w * w + (float)VD_WEPS, la = ls - logf(w2);
    if (!(la > (float)VD_LA_MIN && la < (float)VD_LA_MAX)) return;
    const float sg = 1.0f / (1.0f + expf(-((float)VD_K2 + (float)VD_K3 * la)));
    const float dnk = (float)(VD_K1 * VD_K3) * sg * (1.0f - sg) + 0.5f / (1.0f + expf(la));   /* d(-KL) / d la */
    const float g = -scale * dnk;                                                           /* d loss / d la */
    *gls += g;
    *gw += g * (-2.0f * w / w2);
}

/* One Adam step of a parameter p with gradient g and moments m, v, the
 * bias corrections folded into the rate and epsilon (lr_t = lr sqrt(1 -
 * b2^t) / (1 - b1^t), eps_t = 1e-8 sqrt(1 - b2^t): Kingma and Ba's
 * section 2 form). */
static inline void adam1(float *p, float g, float *m, float *v, float lr_t, float eps_t)
{
    *m = 0.9f * *m + 0.1f * g;
    *v = 0.999f * *v + 0.001f * g * g;
    *p -= lr_t * *m / (sqrtf(*v) + eps_t);
}

/* sigma^2 of the kept weights, 0 for the pruned */
static void refresh_s2(const dcz_tlayer *L, vd_layer *v)
{
    const size_t n = dcz_tlayer_nweights(L);
    for (size_t j = 0; j < n; j++) v->s2[j] = L->mask && !L->mask[j] ? 0.0f : expf(v->ls_buf[j]);
}

/* The weights of one layer, a range at a time over the trainer's threads:
 * the KL term's gradient, Adam on log sigma^2 and on w, sigma^2 refreshed;
 * pruned weights stay 0, without noise. Each weight on its own: the same
 * bits for any thread count. */
typedef struct vd_job {
    dcz_tlayer *L;
    vd_layer *v;
    float kl, lr_t, eps_t;
    int weights;          /* the step trains weights */
} vd_job;

static void vd_part(void *ctx, size_t lo, size_t hi)
{
    const vd_job *j = ctx;
    dcz_tlayer *L = j->L;
    vd_layer *v = j->v;
    for (size_t i = lo; i < hi; i++) {
        if (L->mask && !L->mask[i]) continue;
        float gw = L->gw[i];
        if (v->s2) {
            float gls = v->gls[i];
            dcz_vd_kl_grad(L->w[i], v->ls_buf[i], j->kl, &gw, &gls);
            adam1(&v->ls_buf[i], gls, &v->ls.m[i], &v->ls.v[i], j->lr_t, j->eps_t);
            v->s2[i] = expf(v->ls_buf[i]);
        }
        if (j->weights) adam1(&L->w[i], gw, &v->w.m[i], &v->w.v[i], j->lr_t, j->eps_t);
    }
}

/* weights a part of the update takes at least */
#define VD_GRAIN 4096

dcz_status dcz_vd_update(dcz_net *net, const dcz_sgd *step, void *ctx)
{
    dcz_vd_state *s = ctx;
    if (!s || s->net != net) return DCZ_ERR_ARG;
    s->t++;
    const double c1 = 1.0 - pow(0.9, (double)s->t), c2 = 1.0 - pow(0.999, (double)s->t);
    const float lr_t = (float)(step->lr * sqrt(c2) / c1), eps_t = (float)(1e-8 * sqrt(c2));
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *L = &net->layers[i];
        vd_layer *v = &s->l[i];
        if (!v->w.m) continue;
        if (!L->gw || !L->gb) return DCZ_ERR_ARG;   /* no gradients: dcz_net_grad first */
        vd_job j = { L, v, (float)s->kl_scale, lr_t, eps_t, step->train_weights };
        if (v->s2 || j.weights) dcz_train_par(dcz_tlayer_nweights(L), VD_GRAIN, vd_part, &j);
        if (step->train_biases)
            for (size_t k = 0, nb = dcz_tlayer_nbias(L); k < nb; k++)
                adam1(&L->b[k], L->gb[k], &v->b.m[k], &v->b.v[k], lr_t, eps_t);
    }
    return DCZ_OK;
}

void dcz_vd_free(dcz_vd_state *s)
{
    if (!s) return;
    if (s->l)
        for (int i = 0; i < s->net->nlayers; i++) {
            dcz_tlayer *L = &s->net->layers[i];
            L->vd_ls = L->vd_s2 = L->vd_gls = NULL;
            L->vd_rng = NULL;
            vd_layer *v = &s->l[i];
            free(v->w.m); free(v->b.m); free(v->ls.m);
            free(v->ls_buf);
        }
    free(s->l);
    free(s);
}

/* layers with parameters: DENSE, CONV, BATCHNORM (gamma in w, beta in b) */
static int has_params(const dcz_tlayer *L) { return dcz_tlayer_has_weights(L) || L->op == DCZ_OP_BATCHNORM; }

static float *zeros(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

/* Two moments of n floats in one block */
static int pair_alloc(adam_pair *a, size_t n)
{
    a->m = zeros(2 * n);
    a->v = a->m ? a->m + n : NULL;
    return a->m != NULL;
}

dcz_status dcz_vd_begin(dcz_net *net, const uint8_t *chosen, uint64_t seed, dcz_vd_state **out)
{
    *out = NULL;
    if (!net || !chosen) return DCZ_ERR_ARG;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *L = &net->layers[i];
        if (L->codebook) return DCZ_ERR_UNSUPPORTED;   /* shared weights move as centroids */
        if (chosen[i] && !dcz_tlayer_has_weights(L)) return DCZ_ERR_UNSUPPORTED;
    }
    dcz_vd_state *s = calloc(1, sizeof *s);
    if (!s) return DCZ_ERR_NOMEM;
    s->net = net;
    dcz_rng_seed(&s->rng, seed);
    s->l = calloc((size_t)net->nlayers, sizeof *s->l);
    if (!s->l) { free(s); return DCZ_ERR_NOMEM; }
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *L = &net->layers[i];
        vd_layer *v = &s->l[i];
        if (!has_params(L)) continue;
        const size_t nw = dcz_tlayer_nweights(L), nb = dcz_tlayer_nbias(L);
        if (!pair_alloc(&v->w, nw) || !pair_alloc(&v->b, nb)) goto nomem;
        if (!chosen[i]) continue;
        if (!pair_alloc(&v->ls, nw) || !(v->ls_buf = zeros(3 * nw))) goto nomem;
        v->s2 = v->ls_buf + nw;
        v->gls = v->s2 + nw;
        for (size_t j = 0; j < nw; j++) v->ls_buf[j] = VD_LS_INIT;
        refresh_s2(L, v);
        L->vd_ls = v->ls_buf;
        L->vd_s2 = v->s2;
        L->vd_gls = v->gls;
        L->vd_rng = &s->rng;
    }
    *out = s;
    return DCZ_OK;
nomem:
    dcz_vd_free(s);
    return DCZ_ERR_NOMEM;
}

void dcz_vd_set_kl(dcz_vd_state *s, double beta, size_t samples)
{
    s->kl_scale = samples ? beta / (double)samples : 0.0;
}

dcz_status dcz_vd_prune(dcz_vd_state *s, float threshold)
{
    dcz_net *net = s->net;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *L = &net->layers[i];
        const vd_layer *v = &s->l[i];
        if (!v->s2) continue;
        const size_t nw = dcz_tlayer_nweights(L);
        if (!L->mask) {
            if (!(L->mask = malloc(nw))) return DCZ_ERR_NOMEM;
            memset(L->mask, 1, nw);
        }
        for (size_t j = 0; j < nw; j++)
            if (dcz_vd_log_alpha(L->w[j], v->ls_buf[j]) >= threshold) L->mask[j] = 0;
        for (size_t j = 0; j < nw; j++)
            if (!L->mask[j]) L->w[j] = 0.0f;
    }
    return DCZ_OK;
}
