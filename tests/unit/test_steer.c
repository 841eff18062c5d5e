/* test_steer.c: the validation hold-out (train/data.c) and the sensitivity
 * scan (steer/sensitivity.c).
 *
 * The hold-out splits a dataset into two disjoint parts that together are
 * the whole, each in the data's order, the same for the same seed. The scan
 * gives, for each layer and level, the accuracy of a second copy of the net
 * with that layer alone pruned or shared by the stage functions; a layer
 * already sparser than a level gives the baseline; the net comes back
 * exactly as it was (weights, masks, codebooks); bad plans are refused.
 *
 * The budget's candidates (steer/budget.c) run from the smallest estimate
 * to the largest, each layer's sparsity moving one way only and the
 * codebooks the fewest bytes whose losses sum to at most the tolerance, the first every layer at
 * its sparsest and the last every layer unpruned, one layer moving one
 * level between two (levels above a layer's hull included); a large layer that loses little is compressed before a
 * small one that loses much. The search finds the smallest candidate
 * within the floor of a monotone accuracy in log2(n) runs, runs the most
 * accurate when none is within, and passes a run's error on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prune/prune.h"
#include "steer/steer.h"
#include "tests/check.h"

enum { N = 600, IN = 12, CLASSES = 4 };

/* Samples whose first value is their index / N, labels from a rule the net can
 * partly learn (the sign pattern of two inputs). */
static void make_data(dcz_dataset *d)
{
    memset(d, 0, sizeof *d);
    d->n = N;
    d->c = IN;
    d->h = d->w = 1;
    d->classes = CLASSES;
    d->x = malloc((size_t)N * IN * sizeof(float));
    d->y = malloc(N);
    dcz_rng r;
    dcz_rng_seed(&r, 5);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < IN; k++) d->x[i * IN + k] = dcz_rng_uniform(&r);
        d->y[i] = (uint8_t)((d->x[i * IN + 1] > 0.5f) * 2 + (d->x[i * IN + 2] > 0.5f));
        d->x[i * IN] = (float)i / N;
    }
}

static void test_holdout(void)
{
    dcz_dataset d, a, b, a2, c;
    make_data(&d);
    REQUIRE(dcz_dataset_holdout(&d, 150, 9, &a, &b) == DCZ_OK, "hold out");
    CHECK(a.n == 150 && b.n == N - 150 && a.c == IN && b.classes == CLASSES, "sizes %zu %zu", a.n, b.n);
    uint8_t *seen = calloc(N, 1);
    int order = 1, labels = 1;
    for (size_t i = 0; i < a.n + b.n; i++) {
        const dcz_dataset *p = i < a.n ? &a : &b;
        const size_t j = i < a.n ? i : i - a.n;
        const int idx = (int)lrintf(p->x[j * IN] * N);
        seen[idx]++;
        labels &= p->y[j] == d.y[idx] && memcmp(p->x + j * IN, d.x + (size_t)idx * IN, IN * sizeof(float)) == 0;
        if (j > 0) order &= p->x[j * IN] > p->x[(j - 1) * IN];
    }
    int once = 1;
    for (int i = 0; i < N; i++) once &= seen[i] == 1;
    CHECK(once, "every sample in exactly one part");
    CHECK(labels, "samples and labels carried together");
    CHECK(order, "each part in the data's order");
    REQUIRE(dcz_dataset_holdout(&d, 150, 9, &a2, NULL) == DCZ_OK, "again");
    CHECK(a2.n == a.n && memcmp(a.x, a2.x, a.n * IN * sizeof(float)) == 0 && a.hash == a2.hash, "same seed, same part");
    REQUIRE(dcz_dataset_holdout(&d, 150, 10, &c, NULL) == DCZ_OK, "another seed");
    CHECK(memcmp(a.x, c.x, a.n * IN * sizeof(float)) != 0 && a.hash != c.hash, "another seed, another part");
    dcz_dataset e;
    CHECK(dcz_dataset_holdout(&d, 0, 1, &e, NULL) == DCZ_ERR_ARG && dcz_dataset_holdout(&d, N, 1, &e, NULL) == DCZ_ERR_ARG,
          "n of 0 or all refused");
    free(seen);
    dcz_dataset_free(&a); dcz_dataset_free(&b); dcz_dataset_free(&a2); dcz_dataset_free(&c);
    dcz_dataset_free(&d);
}

/* A small net trained a little on d, its last layer pruned and shared. */
static dcz_net *make_net(const dcz_dataset *d)
{
    dcz_net *net = NULL;
    char err[128];
    if (dcz_net_create_arch("mlp:12-24-16-4", 3, &net, err, sizeof err) != DCZ_OK) return NULL;
    dcz_sgd sgd = { .lr = 0.1f, .momentum = 0.9f, .weight_decay = 0, .batch = 50, .train_biases = 1, .train_weights = 1 };
    dcz_rng r;
    dcz_rng_seed(&r, 2);
    for (int e = 0; e < 5; e++)
        if (dcz_train_epoch(net, d, &sgd, &r, NULL, NULL, NULL) != DCZ_OK) return net;
    dcz_tlayer *last = &net->layers[4];
    if (dcz_prune_layer_to_sparsity(last, 0.5, NULL, NULL) != DCZ_OK ||
        dcz_quantize_layer(last, 3, DCZ_KM_LINEAR, 20, 1, NULL) != DCZ_OK)
        return net;
    dcz_net_reset_state(net);
    return net;
}

static size_t calls;
static void count(void *ctx, size_t done, size_t total)
{
    (void)ctx;
    calls++;
    CHECK(done == calls && done <= total, "progress %zu of %zu", done, total);
}

static void test_scan(void)
{
    dcz_dataset d;
    make_data(&d);
    dcz_net *net = make_net(&d), *copy = make_net(&d);
    REQUIRE(net && copy, "nets");
    /* the state the scan must leave */
    const size_t np = net->param_count;
    float *params = malloc(np * sizeof(float));
    memcpy(params, net->param, np * sizeof(float));
    const dcz_tlayer *last = &net->layers[4];
    const size_t nw = dcz_tlayer_nweights(last);
    uint8_t *mask = malloc(nw), *assign = malloc(nw);
    memcpy(mask, last->mask, nw);
    memcpy(assign, last->assign, nw);
    float cb[8];
    memcpy(cb, last->codebook, sizeof cb);

    dcz_sens_plan p;
    dcz_sens_plan_init(&p);
    p.nsparsity = 3;
    p.sparsity[0] = 0.2; p.sparsity[1] = 0.5; p.sparsity[2] = 0.9;
    p.nbits = 2;
    p.bits[0] = 1; p.bits[1] = 4;
    dcz_sens_report rep;
    calls = 0;
    REQUIRE(dcz_sensitivity(net, &d, &p, count, NULL, &rep) == DCZ_OK, "scan");
    CHECK(calls == 3 * 5, "%zu progress calls", calls);
    CHECK(rep.nlayers == 3 && rep.samples == N && strcmp(rep.layers[2].name, "fc3") == 0, "layers");
    double base;
    REQUIRE(dcz_net_evaluate(copy, &d, &base) == DCZ_OK, "baseline");
    CHECK(base == rep.baseline, "baseline %g, scan %g", base, rep.baseline);
    CHECK(fabs(rep.layers[2].density - 0.5) < 1e-9, "density %g", rep.layers[2].density);
    /* each entry is the accuracy of the copy with that layer alone changed */
    int bad = 0;
    for (int l = 0; l < rep.nlayers; l++) {
        for (int j = 0; j < p.nsparsity + p.nbits; j++) {
            dcz_net *t = make_net(&d);
            dcz_tlayer *L = &t->layers[rep.layers[l].layer];
            const int shared = j >= p.nsparsity;
            if (shared) dcz_quantize_layer(L, p.bits[j - p.nsparsity], p.init, p.kmeans_iters, p.seed, NULL);
            else dcz_prune_layer_to_sparsity(L, p.sparsity[j], NULL, NULL);
            double acc;
            dcz_net_evaluate(t, &d, &acc);
            const double got = shared ? rep.layers[l].share_acc[j - p.nsparsity] : rep.layers[l].prune_acc[j];
            if (acc != got) {
                bad++;
                CHECK(0, "%s level %d: scan %g, by hand %g", rep.layers[l].name, j, got, acc);
            }
            dcz_net_free(t);
        }
    }
    CHECK(bad == 0, "%d entries differ", bad);
    CHECK(rep.layers[2].prune_acc[0] == rep.baseline && rep.layers[2].prune_acc[1] == rep.baseline,
          "fc3 is already half pruned: 20%% and 50%% are the baseline");
    CHECK(rep.layers[0].prune_acc[2] < rep.baseline, "fc1 at 90%%: %g, baseline %g", rep.layers[0].prune_acc[2],
          rep.baseline);
    /* the net as it was */
    CHECK(memcmp(params, net->param, np * sizeof(float)) == 0, "parameters restored");
    CHECK(net->layers[0].mask == NULL && net->layers[0].codebook == NULL && net->layers[2].k == 0,
          "unpruned layers have no mask or codebook again");
    CHECK(last->k == 8 && memcmp(cb, last->codebook, sizeof cb) == 0 && memcmp(mask, last->mask, nw) == 0 &&
          memcmp(assign, last->assign, nw) == 0, "fc3's mask and codebook restored");
    double after;
    REQUIRE(dcz_net_evaluate(net, &d, &after) == DCZ_OK && after == rep.baseline, "same accuracy after");
    dcz_sens_report_free(&rep);

    /* bad plans */
    dcz_sens_plan q = p;
    q.sparsity[1] = 0.1;
    CHECK(dcz_sensitivity(net, &d, &q, NULL, NULL, &rep) == DCZ_ERR_ARG, "descending sparsities");
    q = p;
    q.sparsity[2] = 1.0;
    CHECK(dcz_sens_plan_check(&q) == DCZ_ERR_ARG, "sparsity 1");
    q = p;
    q.bits[1] = 9;
    CHECK(dcz_sens_plan_check(&q) == DCZ_ERR_ARG, "9 bits");
    q = p;
    q.nsparsity = q.nbits = 0;
    CHECK(dcz_sens_plan_check(&q) == DCZ_ERR_ARG, "no levels");
    q = p;
    q.block = 0;
    CHECK(dcz_sens_plan_check(&q) == DCZ_ERR_ARG, "blocks of 0");
    q.block = DCZ_PRUNE_MAX_BLOCK + 1;
    CHECK(dcz_sens_plan_check(&q) == DCZ_ERR_ARG, "blocks past the most");
    q.block = 4;
    CHECK(dcz_sens_plan_check(&q) == DCZ_OK, "blocks of 4");
    dcz_dataset wrong = d;
    wrong.c = IN + 1;
    CHECK(dcz_sensitivity(net, &wrong, &p, NULL, NULL, &rep) == DCZ_ERR_ARG, "data of another shape");
    free(params); free(mask); free(assign);
    dcz_net_free(net);
    dcz_net_free(copy);
    dcz_dataset_free(&d);
}

static void test_est_bytes(void)
{
    /* dense: only the indices and the codebook */
    CHECK(fabs(dcz_budget_est_bytes(1000, 1.0, 4) - (1000 * 4 / 8.0 + 64)) < 1e-9, "dense estimate");
    double prev = INFINITY;
    for (double d = 0.5; d > 0.004; d /= 2) {
        const double e = dcz_budget_est_bytes(100000, d, 5);
        CHECK(e < prev, "fewer bytes at density %g: %g after %g", d, e, prev);
        /* positions cost more bits per kept weight as they spread */
        const double pos = (e - 4 * 32) * 8 / (100000 * d) - 5;
        CHECK(pos > 1 && pos < 2 - log2(d), "position bits at density %g: %g", d, pos);
        prev = e;
    }
}

/* A scan of two layers: "big" (100,000 weights) loses little, "small" (500)
 * loses much at every level. */
static void fake_scan(dcz_sens_report *r, dcz_sens_plan *p)
{
    dcz_sens_plan_init(p);
    const double sp[] = { 0.5, 0.8, 0.9, 0.95, 0.98 };
    p->nsparsity = 5;
    memcpy(p->sparsity, sp, sizeof sp);
    p->nbits = 4;
    for (int i = 0; i < 4; i++) p->bits[i] = 2 + i;   /* 2..5 */
    memset(r, 0, sizeof *r);
    r->baseline = 0.90;
    r->nlayers = 2;
    r->layers = calloc(2, sizeof *r->layers);
    const char *names[] = { "big", "small" };
    const size_t w[] = { 100000, 500 };
    for (int l = 0; l < 2; l++) {
        dcz_sens_layer *L = &r->layers[l];
        L->layer = 2 * l;
        snprintf(L->name, sizeof L->name, "%s", names[l]);
        L->weights = w[l];
        L->density = 1;
        for (int i = 0; i < 5; i++) L->prune_acc[i] = 0.90 - (l ? 0.05 : 0.002) * (i + 1) * (i + 1);
        for (int i = 0; i < 4; i++) L->share_acc[i] = 0.90 - (l ? 0.03 : 0.001) * (3 - i);
    }
    /* big at 90% loses more than its neighbours suggest: above its lower
     * hull, which an exchange rate alone never chooses */
    r->layers[0].prune_acc[2] = 0.90 - 0.025;
}

static void test_candidates(void)
{
    dcz_sens_report r;
    dcz_sens_plan p;
    fake_scan(&r, &p);
    dcz_budget_cands c;
    REQUIRE(dcz_budget_candidates(&r, &p, 0.25, 5, &c) == DCZ_OK, "candidates");
    CHECK(c.n == 5 && c.nlayers == 2, "%d candidates", c.n);
    const dcz_budget_cand *first = &c.c[0], *last = &c.c[c.n - 1];
    /* bits: the fewest that lose at most 0.25 points (big: 3 bits lose 0.2,
     * small: only 5 bits lose nothing) */
    CHECK(first->layers[0].sparsity == 0.98 && first->layers[0].bits == 3 && first->layers[1].sparsity == 0.98 &&
          first->layers[1].bits == 5, "the smallest: every layer at its sparsest");
    CHECK(last->layers[0].sparsity == 0 && last->layers[1].sparsity == 0 && fabs(last->drop - 0.2) < 1e-9,
          "the most accurate loses only its codebooks' points: %g", last->drop);
    int one_way = 1, ordered = 1, big_first = 0;
    for (int i = 1; i < c.n; i++) {
        ordered &= c.c[i].est_bytes > c.c[i - 1].est_bytes && c.c[i].lambda >= c.c[i - 1].lambda;
        for (int l = 0; l < 2; l++)
            one_way &= c.c[i].layers[l].sparsity <= c.c[i - 1].layers[l].sparsity &&
                       c.c[i].layers[l].bits == c.c[i - 1].layers[l].bits;
        /* somewhere big is pruned hard while small is left alone */
        big_first |= c.c[i].layers[0].sparsity >= 0.9 && c.c[i].layers[1].sparsity == 0;
        CHECK(c.c[i].layers[1].layer == 2, "layer index kept");
    }
    CHECK(ordered, "from the smallest estimate to the largest");
    CHECK(one_way, "each layer's choice moves one way");
    CHECK(big_first, "the large, insensitive layer is compressed before the small, sensitive one");
    dcz_budget_cands_free(&c);
    dcz_budget_cands_free(&c);   /* freed twice: empty the second time */
    dcz_budget_cands all;
    REQUIRE(dcz_budget_candidates(&r, &p, 0.25, 1000, &all) == DCZ_OK, "all candidates");
    CHECK(all.n > 5, "more without a cap: %d", all.n);
    int steps = 1, big90 = 0;
    for (int i = 0; i < all.n; i++) {
        big90 |= all.c[i].layers[0].sparsity == 0.9;
        if (i == 0) continue;
        int moved = 0;
        for (int l = 0; l < 2; l++) moved += all.c[i].layers[l].sparsity != all.c[i - 1].layers[l].sparsity;
        steps &= moved == 1;
    }
    CHECK(steps, "each candidate moves one layer from the one before");
    CHECK(big90, "a level above the hull is a candidate too");
    dcz_budget_cands_free(&all);
    REQUIRE(dcz_budget_candidates(&r, &p, 0, 4, &all) == DCZ_OK, "no tolerance");
    CHECK(all.c[0].layers[0].bits == 5 && all.c[0].layers[1].bits == 5, "no tolerance: the widest");
    dcz_budget_cands_free(&all);
    /* small at 4 bits loses 0.2 too: both narrower lose 0.4, so only the
     * one that saves more bytes per point, big, narrows (to 3 bits: 2 would
     * lose 0.3); with 0.45 big goes to 2 bits, with 0.55 small to 4 too */
    r.layers[1].share_acc[2] = 0.90 - 0.002;
    const double tol[] = { 0.25, 0.45, 0.55 };
    const int want_big[] = { 3, 2, 2 }, want_small[] = { 5, 5, 4 };
    for (int i = 0; i < 3; i++) {
        REQUIRE(dcz_budget_candidates(&r, &p, tol[i], 4, &all) == DCZ_OK, "a shared tolerance");
        const dcz_budget_cand *a = &all.c[all.n - 1];   /* unpruned: its losses are its codebooks' */
        CHECK(a->layers[0].bits == want_big[i] && a->layers[1].bits == want_small[i] && a->drop <= tol[i] + 1e-9,
              "tolerance %g: big %d bits, small %d, losing %g", tol[i], a->layers[0].bits, a->layers[1].bits,
              a->drop);
        dcz_budget_cands_free(&all);
    }
    REQUIRE(dcz_budget_candidates(&r, &p, 100, 4, &all) == DCZ_OK, "any tolerance");
    CHECK(all.c[0].layers[0].bits == 2 && all.c[0].layers[1].bits == 2, "any tolerance: the narrowest");
    dcz_budget_cands_free(&all);
    CHECK(dcz_budget_candidates(&r, &p, 0.25, 1, &c) == DCZ_ERR_ARG, "max 1");
    CHECK(dcz_budget_candidates(&r, &p, NAN, 4, &c) == DCZ_ERR_ARG, "NaN tolerance");
    p.nbits = 0;
    CHECK(dcz_budget_candidates(&r, &p, 0.25, 8, &c) == DCZ_ERR_ARG && c.n == 0, "no bits levels");
    dcz_sens_report_free(&r);
}

/* A scan that cannot tell the levels apart (every level lossless, as the
 * weights of a variational phase look): the most accurate candidate is
 * the sparsest, and dcz_budget_extend adds less sparse ones after it, a
 * level at a time, down to the least sparse level and no further. */
static void test_extend(void)
{
    dcz_sens_report r;
    dcz_sens_plan p;
    fake_scan(&r, &p);
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 5; i++) r.layers[l].prune_acc[i] = r.baseline;
    dcz_budget_cands c;
    REQUIRE(dcz_budget_candidates(&r, &p, 0.25, 5, &c) == DCZ_OK, "candidates");
    const int n0 = c.n;
    const dcz_budget_layer top = c.c[n0 - 1].layers[0];
    CHECK(top.sparsity == 0.98, "the most accurate is the sparsest: %g", top.sparsity);
    REQUIRE(dcz_budget_extend(&r, &p, 10, &c) == DCZ_OK, "extend");
    CHECK(c.n == n0 + 4, "%d candidates past %d: 0.95, 0.9, 0.8, 0.5 and no further", c.n - n0, n0);
    const double want[] = { 0.95, 0.9, 0.8, 0.5 };
    for (int k = 0; k < c.n - n0 && k < 4; k++) {
        const dcz_budget_cand *a = &c.c[n0 + k];
        for (int l = 0; l < 2; l++)
            CHECK(a->layers[l].sparsity == want[k] && a->layers[l].bits == c.c[n0 - 1].layers[l].bits &&
                  a->layers[l].layer == c.c[n0 - 1].layers[l].layer, "step %d layer %d: %g, %d bits", k, l,
                  a->layers[l].sparsity, a->layers[l].bits);
        CHECK(a->est_bytes > c.c[n0 + k - 1].est_bytes, "step %d: %g bytes after %g", k, a->est_bytes,
              c.c[n0 + k - 1].est_bytes);
        CHECK(fabs(a->drop - c.c[n0 - 1].drop) < 1e-9, "step %d: the scan's losses %g", k, a->drop);
    }
    dcz_budget_cands_free(&c);
    dcz_budget_cands empty = { 0 };
    CHECK(dcz_budget_extend(&r, &p, 2, &empty) == DCZ_ERR_ARG, "no candidates");
    dcz_sens_report_free(&r);
}

typedef struct fake_runs {
    int calls, fail_at;
    double step;     /* accuracy of candidate i: 0.5 + step * i */
    double margin;
} fake_runs;

static dcz_status fake_try(void *ctx, int cand, double *acc, double *margin, size_t *bytes)
{
    fake_runs *f = ctx;
    if (++f->calls == f->fail_at) return DCZ_ERR_IO;
    *acc = 0.5 + f->step * cand;
    *margin = f->margin;
    *bytes = 1000 + 100 * (size_t)cand;
    return DCZ_OK;
}

static void test_paired_se(void)
{
    /* a right where b is wrong twice, b right where a is wrong once: the
     * differences d = b - a are -1, -1, +1 and seven 0, mean -0.1, E[d^2] 0.3 */
    const uint8_t a[10] = { 1, 1, 0, 1, 1, 0, 1, 1, 1, 0 };
    const uint8_t b[10] = { 0, 0, 1, 1, 1, 0, 1, 1, 1, 0 };
    const double want = sqrt((0.3 - 0.01) / 10);
    CHECK(fabs(dcz_paired_se(a, b, 10) - want) < 1e-12, "se %g, want %g", dcz_paired_se(a, b, 10), want);
    CHECK(fabs(dcz_paired_se(b, a, 10) - want) < 1e-12, "symmetric");
    CHECK(dcz_paired_se(a, a, 10) == 0, "the same predictions: no noise");
    CHECK(dcz_paired_se(a, b, 0) == 0, "no samples");
}

static void test_search(void)
{
    dcz_budget_trial t[8];
    int nt, best;
    /* 15 candidates (16 answers with "none"), 4 runs: exactly the smallest
     * within, for every floor */
    for (int want = 0; want < 15; want++) {
        fake_runs f = { 0, 0, 0.01, 0 };
        const double floor = 0.5 + 0.01 * want - 0.005;
        REQUIRE(dcz_budget_search(15, 4, floor, 0, fake_try, &f, t, &nt, &best) == DCZ_OK, "search");
        CHECK(t[best].within && t[best].cand == want && t[best].bytes == 1000 + 100 * (size_t)want,
              "floor %g: chose %d, the smallest within is %d", floor, t[best].cand, want);
        CHECK(nt <= 4 && f.calls == nt, "%d runs", nt);
    }
    /* at z = 0 a margin is reported, not taken off the accuracy: the same
     * choices; at z = 1 a run must stay one margin (two candidates' steps
     * here) above the floor: the answer moves two candidates up */
    for (int want = 0; want < 15; want += 3) {
        fake_runs f = { 0, 0, 0.01, 0.02 };
        const double floor = 0.5 + 0.01 * want - 0.005;
        REQUIRE(dcz_budget_search(15, 4, floor, 0, fake_try, &f, t, &nt, &best) == DCZ_OK, "search");
        CHECK(t[best].within && t[best].cand == want && t[best].margin == 0.02,
              "margin: floor %g chose %d, the smallest within is %d", floor, t[best].cand, want);
        if (want + 2 >= 15) continue;
        f = (fake_runs){ 0, 0, 0.01, 0.02 };
        REQUIRE(dcz_budget_search(15, 4, floor, 1, fake_try, &f, t, &nt, &best) == DCZ_OK, "search");
        CHECK(t[best].within && t[best].cand == want + 2, "z 1: floor %g chose %d, want %d", floor, t[best].cand,
              want + 2);
        for (int k = 0; k < nt; k++)
            CHECK(t[k].within == (t[k].accuracy - t[k].margin >= floor), "run %d: within %d at %g", k,
                  t[k].within, t[k].accuracy);
    }
    CHECK(dcz_budget_within(0.9, 0.01, 0.885, 1) && !dcz_budget_within(0.9, 0.01, 0.895, 1) &&
          dcz_budget_within(0.9, 0.01, 0.9, 0) && !dcz_budget_within(-1, 0, -2, 0), "within");
    /* none within: the most accurate is run as well and chosen */
    fake_runs f = { 0, 0, 0.01, 0 };
    REQUIRE(dcz_budget_search(16, 3, 0.99, 0, fake_try, &f, t, &nt, &best) == DCZ_OK, "none within");
    CHECK(nt == 4 && t[nt - 1].cand == 15 && t[best].cand == 15 && !t[best].within, "most accurate: %d of %d",
          t[best].cand, nt);
    /* one candidate */
    f = (fake_runs){ 0, 0, 0.01, 0 };
    REQUIRE(dcz_budget_search(1, 4, 0.4, 0, fake_try, &f, t, &nt, &best) == DCZ_OK && nt == 1 && best == 0, "one");
    /* an error stops the search */
    f = (fake_runs){ 0, 2, 0.01, 0 };
    CHECK(dcz_budget_search(16, 4, 0.55, 0, fake_try, &f, t, &nt, &best) == DCZ_ERR_IO && f.calls == 2, "error");
    CHECK(dcz_budget_search(0, 4, 0.5, 0, fake_try, &f, t, &nt, &best) == DCZ_ERR_ARG, "no candidates");
    CHECK(dcz_budget_search(16, 4, 0.5, -1, fake_try, &f, t, &nt, &best) == DCZ_ERR_ARG, "negative z");
    CHECK(dcz_budget_search(16, 4, 0.5, NAN, fake_try, &f, t, &nt, &best) == DCZ_ERR_ARG, "z not a number");
}

int main(void)
{
    RUN(test_holdout);
    RUN(test_paired_se);
    RUN(test_scan);
    RUN(test_est_bytes);
    RUN(test_candidates);
    RUN(test_extend);
    RUN(test_search);
    return check_summary();
}
