/* budget.c: compression to an accuracy budget (see steer.h): candidates
 * from the sensitivity scan by a rate-distortion sweep, and the measured
 * search among them.
 *
 * Checked by tests/unit/test_steer.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "huffman/huffman.h"
#include "steer/steer.h"

double dcz_budget_est_bytes(size_t n, double density, int bits)
{
    const double d = density < 1e-6 ? 1e-6 : density > 1 ? 1 : density;
    /* positions: a kept weight follows a run of pruned ones whose length is
     * geometric with parameter d; the entropy of that run, H(d) / d bits */
    const double pos = dcz_huff_gap_floor(d);
    return (double)n * d * (bits + pos) / 8 + 4.0 * (double)(1u << bits);
}

/* Points lost (never negative: a gain in the scan is noise). */
static double lost(double baseline, double acc) { return acc < baseline ? (baseline - acc) * 100 : 0; }

/* A greedy step's price: points lost per byte saved (a step that saves
 * nothing costs as if it saved a billionth of a byte). */
static double per_byte(double more, double saved) { return more / (saved > 1e-9 ? saved : 1e-9); }

/* The estimated bytes of layer S's indices (as many as it keeps now) and
 * codebook at bits. */
static double width_bytes(const dcz_sens_layer *S, int bits)
{
    return (double)S->weights * S->density * bits / 8 + 4.0 * (double)(1u << bits);
}

/* The codebook widths (bits[l], the points each lost in the scan in
 * drop[l]). From each layer's least lossy width (the narrowest of equals),
 * greedy steps: a layer one level narrower at a time, the one that loses
 * fewest points per byte saved first, while the losses sum to at most tol. */
static void choose_bits(const dcz_sens_report *rep, const dcz_sens_plan *p, double tol, int *lv, int *bits,
                        double *drop)
{
    double total = 0;
    for (int l = 0; l < rep->nlayers; l++) {
        const dcz_sens_layer *S = &rep->layers[l];
        lv[l] = 0;
        for (int j = 1; j < p->nbits; j++)
            if (lost(rep->baseline, S->share_acc[j]) < lost(rep->baseline, S->share_acc[lv[l]])) lv[l] = j;
        total += lost(rep->baseline, S->share_acc[lv[l]]);
    }
    for (;;) {
        int move = -1;
        double best = INFINITY;
        for (int l = 0; l < rep->nlayers; l++) {
            const dcz_sens_layer *S = &rep->layers[l];
            const int j = lv[l];
            if (j == 0) continue;
            const double more = lost(rep->baseline, S->share_acc[j - 1]) - lost(rep->baseline, S->share_acc[j]);
            const double saved = width_bytes(S, p->bits[j]) - width_bytes(S, p->bits[j - 1]);
            if (total + more > tol) continue;
            const double rate = per_byte(more, saved);
            if (rate < best) { best = rate; move = l; }
        }
        if (move < 0) break;
        const dcz_sens_layer *S = &rep->layers[move];
        total += lost(rep->baseline, S->share_acc[lv[move] - 1]) - lost(rep->baseline, S->share_acc[lv[move]]);
        lv[move]--;
    }
    for (int l = 0; l < rep->nlayers; l++) {
        bits[l] = p->bits[lv[l]];
        drop[l] = lost(rep->baseline, rep->layers[l].share_acc[lv[l]]);
    }
}

/* Sets choice L of scanned layer S to sparsity option i of plan p (-1:
 * the layer as it is). */
static void set_level(const dcz_sens_layer *S, const dcz_sens_plan *p, double baseline, int i, int bits,
                      double bits_drop, dcz_budget_layer *L)
{
    L->layer = S->layer;
    L->sparsity = i < 0 ? 1 - S->density : p->sparsity[i];
    L->bits = bits;
    L->drop = (i < 0 ? 0 : lost(baseline, S->prune_acc[i])) + bits_drop;
    L->est_bytes = dcz_budget_est_bytes(S->weights, 1 - L->sparsity, bits);
}

/* The option of layer S after option i: the next level sparser than the
 * layer is, or p->nsparsity when there is none. */
static int next_level(const dcz_sens_layer *S, const dcz_sens_plan *p, int i)
{
    for (i++; i < p->nsparsity; i++)
        if (p->sparsity[i] > 1 - S->density) break;
    return i;
}

/* Layer S's choice at exchange rate lambda, its width chosen: the option
 * into *level. */
static void choose(const dcz_sens_layer *S, const dcz_sens_plan *p, double baseline, double lambda, int bits,
                   double bits_drop, dcz_budget_layer *out, int *level)
{
    double best = INFINITY;
    for (int i = -1; i < p->nsparsity; i = next_level(S, p, i)) {
        dcz_budget_layer L;
        set_level(S, p, baseline, i, bits, bits_drop, &L);
        const double cost = L.est_bytes + lambda * L.drop;
        if (cost < best) {
            best = cost;
            *out = L;
            *level = i;
        }
    }
}

void dcz_budget_cands_free(dcz_budget_cands *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) free(c->c[i].layers);
    free(c->c);
    memset(c, 0, sizeof *c);
}

static void add_up(dcz_budget_cand *c, int n)
{
    c->est_bytes = c->drop = 0;
    for (int l = 0; l < n; l++) {
        c->est_bytes += c->layers[l].est_bytes;
        c->drop += c->layers[l].drop;
    }
}

/* Appends a copy of c to all (room reserved). */
static dcz_status push(dcz_budget_cands *all, const dcz_budget_cand *c)
{
    dcz_budget_cand *d = &all->c[all->n];
    *d = *c;
    d->layers = malloc((size_t)all->nlayers * sizeof *d->layers);
    if (!d->layers) return DCZ_ERR_NOMEM;
    memcpy(d->layers, c->layers, (size_t)all->nlayers * sizeof *d->layers);
    all->n++;
    return DCZ_OK;
}

/* The sweep: lambda from 2^40 down to 2^-20 bytes per point, 8 steps per
 * doubling; each new allocation in *all, from the most accurate to the
 * smallest. A layer's curve need not be convex, so the allocations skip
 * the levels above its lower hull, and one step can move a large layer
 * several levels at once (twice the bytes). Between two allocations, so,
 * greedy steps: one layer one level at a time, the one that loses fewest
 * scan points per byte saved first. Every candidate moves one layer one
 * level from the one before. */
static dcz_status sweep(const dcz_sens_report *rep, const dcz_sens_plan *p, double bits_tol,
                        dcz_budget_cands *all)
{
    const int nl = rep->nlayers, steps = 60 * 8;
    all->nlayers = nl;
    /* a chain of one-level moves has at most nl x (levels + 1) + 1 members */
    all->c = calloc((size_t)nl * ((size_t)p->nsparsity + 1) + 1, sizeof *all->c);
    int *bits = calloc((size_t)nl, sizeof *bits), *lv = calloc((size_t)nl, sizeof *lv),
        *cur_lv = calloc((size_t)nl, sizeof *cur_lv);
    double *bits_drop = calloc((size_t)nl, sizeof *bits_drop);
    dcz_budget_cand c = { 0 }, cur = { 0 };
    c.layers = calloc((size_t)nl, sizeof *c.layers);
    cur.layers = calloc((size_t)nl, sizeof *cur.layers);
    dcz_status st = all->c && bits && lv && cur_lv && bits_drop && c.layers && cur.layers ? DCZ_OK : DCZ_ERR_NOMEM;
    if (st == DCZ_OK) choose_bits(rep, p, bits_tol, lv, bits, bits_drop);
    for (int k = steps; k >= 0 && st == DCZ_OK; k--) {
        c.lambda = ldexp(1.0, -20) * exp2((double)k / 8);
        for (int l = 0; l < nl; l++)
            choose(&rep->layers[l], p, rep->baseline, c.lambda, bits[l], bits_drop[l], &c.layers[l], &lv[l]);
        add_up(&c, nl);
        if (all->n == 0) {
            st = push(all, &c);
            memcpy(cur_lv, lv, (size_t)nl * sizeof *lv);
            continue;
        }
        /* from the last candidate toward this allocation, a level at a time */
        cur.lambda = c.lambda;
        memcpy(cur.layers, all->c[all->n - 1].layers, (size_t)nl * sizeof *cur.layers);
        for (;;) {
            int move = -1, to = 0;
            double best = INFINITY;
            for (int l = 0; l < nl; l++) {
                if (cur_lv[l] >= lv[l]) continue;
                const int nx = next_level(&rep->layers[l], p, cur_lv[l]);
                dcz_budget_layer L;
                set_level(&rep->layers[l], p, rep->baseline, nx, bits[l], bits_drop[l], &L);
                const double rate = per_byte(L.drop - cur.layers[l].drop, cur.layers[l].est_bytes - L.est_bytes);
                if (rate < best) { best = rate; move = l; to = nx; }
            }
            if (move < 0 || st != DCZ_OK) break;
            set_level(&rep->layers[move], p, rep->baseline, to, bits[move], bits_drop[move], &cur.layers[move]);
            cur_lv[move] = to;
            add_up(&cur, nl);
            st = push(all, &cur);
        }
    }
    free(c.layers);
    free(cur.layers);
    free(bits);
    free(lv);
    free(cur_lv);
    free(bits_drop);
    return st;
}

dcz_status dcz_budget_candidates(const dcz_sens_report *rep, const dcz_sens_plan *p, double bits_tol, int max,
                                 dcz_budget_cands *out)
{
    if (!out) return DCZ_ERR_ARG;
    memset(out, 0, sizeof *out);
    if (!rep || !p || max < 2 || !(bits_tol >= 0) || rep->nlayers < 1 || p->nsparsity < 1 || p->nbits < 1 ||
        dcz_sens_plan_check(p) != DCZ_OK)
        return DCZ_ERR_ARG;
    dcz_budget_cands all;
    memset(&all, 0, sizeof all);
    dcz_status s = sweep(rep, p, bits_tol, &all);
    if (s != DCZ_OK) {
        dcz_budget_cands_free(&all);
        return s;
    }
    /* all runs from the most accurate to the smallest: reverse it, then keep
     * max spread evenly in log bytes (the first and last always) */
    for (int i = 0, j = all.n - 1; i < j; i++, j--) {
        dcz_budget_cand t = all.c[i];
        all.c[i] = all.c[j];
        all.c[j] = t;
    }
    out->nlayers = all.nlayers;
    out->c = calloc((size_t)(all.n < max ? all.n : max), sizeof *out->c);
    if (!out->c) {
        dcz_budget_cands_free(&all);
        return DCZ_ERR_NOMEM;
    }
    const double lo = log(all.c[0].est_bytes), hi = log(all.c[all.n - 1].est_bytes);
    const int want = all.n < max ? all.n : max;
    int next = 0;   /* candidates before next are taken or passed over */
    for (int k = 0; k < want; k++) {
        const double target = want > 1 ? lo + (hi - lo) * k / (want - 1) : lo;
        /* the nearest in log bytes at or after next, leaving room for the rest */
        int pick = k == want - 1 ? all.n - 1 : next;   /* the most accurate always */
        for (int i = next; i <= all.n - (want - k) && k < want - 1; i++)
            if (fabs(log(all.c[i].est_bytes) - target) < fabs(log(all.c[pick].est_bytes) - target)) pick = i;
        out->c[out->n++] = all.c[pick];
        all.c[pick].layers = NULL;   /* moved */
        next = pick + 1;
    }
    dcz_budget_cands_free(&all);
    return DCZ_OK;
}

/* The plan level of sparsity s, or -1 (the layer's own) */
static int level_of(const dcz_sens_plan *p, double s)
{
    for (int i = 0; i < p->nsparsity; i++)
        if (p->sparsity[i] == s) return i;
    return -1;
}

dcz_status dcz_budget_extend(const dcz_sens_report *rep, const dcz_sens_plan *p, int steps, dcz_budget_cands *c)
{
    if (!rep || !p || !c || c->n < 1 || steps < 0 || rep->nlayers != c->nlayers) return DCZ_ERR_ARG;
    dcz_budget_cand *grown = realloc(c->c, (size_t)(c->n + steps) * sizeof *grown);
    if (!grown) return DCZ_ERR_NOMEM;
    c->c = grown;
    const int n0 = c->n;
    for (int k = 0; k < steps; k++) {
        const dcz_budget_cand *last = &c->c[c->n - 1];
        dcz_budget_cand d = *last;
        d.layers = malloc((size_t)c->nlayers * sizeof *d.layers);
        if (!d.layers) {   /* c as it was */
            while (c->n > n0) free(c->c[--c->n].layers);
            return DCZ_ERR_NOMEM;
        }
        int moved = 0;
        for (int l = 0; l < c->nlayers; l++) {
            const dcz_budget_layer *L = &last->layers[l];
            const dcz_sens_layer *S = &rep->layers[l];
            const int at = level_of(p, L->sparsity);
            d.layers[l] = *L;
            if (at <= 0) continue;   /* the least sparse level, or the layer's own */
            const double bits_part = L->drop - lost(rep->baseline, S->prune_acc[at]);
            set_level(S, p, rep->baseline, at - 1, L->bits, bits_part, &d.layers[l]);
            moved = 1;
        }
        if (!moved) {
            free(d.layers);
            break;
        }
        add_up(&d, c->nlayers);
        c->c[c->n++] = d;
    }
    return DCZ_OK;
}

double dcz_paired_se(const uint8_t *right_a, const uint8_t *right_b, size_t n)
{
    if (!n) return 0;
    size_t a_only = 0, b_only = 0;
    for (size_t i = 0; i < n; i++) {
        a_only += right_a[i] && !right_b[i];
        b_only += !right_a[i] && right_b[i];
    }
    /* d_i = right_b[i] - right_a[i] in {-1, 0, 1}: the variance of its
     * mean is (E[d^2] - E[d]^2) / n */
    const double N = (double)n, mean = ((double)b_only - (double)a_only) / N;
    const double var = ((double)(a_only + b_only) / N - mean * mean) / N;
    return var > 0 ? sqrt(var) : 0;
}

int dcz_budget_within(double accuracy, double margin, double floor, double z)
{
    return accuracy >= 0 && accuracy - z * margin >= floor;
}

dcz_status dcz_budget_search(int n, int runs, double floor, double z, dcz_budget_try_fn try_fn, void *ctx,
                             dcz_budget_trial *trials, int *ntrials, int *best)
{
    if (n < 1 || runs < 1 || !(z >= 0) || !try_fn || !trials || !ntrials || !best) return DCZ_ERR_ARG;
    *ntrials = 0;
    *best = -1;
    /* the smallest candidate within the floor is in [lo, hi]; hi == n: none
     * measured within yet */
    int lo = 0, hi = n, i = (n - 1) / 2;
    while (*ntrials < runs + 1) {
        dcz_budget_trial *t = &trials[*ntrials];
        t->cand = i;
        t->margin = 0;
        dcz_status s = try_fn(ctx, i, &t->accuracy, &t->margin, &t->bytes);
        if (s != DCZ_OK) return s;
        t->within = dcz_budget_within(t->accuracy, t->margin, floor, z);
        (*ntrials)++;
        if (t->within) hi = i;
        else lo = i + 1;
        if (lo >= hi || *ntrials >= runs) {
            /* none within: the most accurate, once, unless it was run */
            if (hi < n || *ntrials > runs || lo >= n) break;
            i = n - 1;
            int ran = 0;
            for (int k = 0; k < *ntrials; k++) ran |= trials[k].cand == i;
            if (ran) break;
            continue;
        }
        i = hi == n ? (lo + n) / 2 : (lo + hi) / 2;
        if (i >= n) i = n - 1;
    }
    /* the smallest file within; else the most accurate run */
    for (int k = 0; k < *ntrials; k++) {
        const dcz_budget_trial *t = &trials[k];
        if (*best < 0) { *best = k; continue; }
        const dcz_budget_trial *b = &trials[*best];
        if (t->within ? !b->within || t->bytes < b->bytes : !b->within && t->accuracy > b->accuracy) *best = k;
    }
    return DCZ_OK;
}
