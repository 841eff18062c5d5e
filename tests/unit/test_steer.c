/* test_steer.c: the validation hold-out (train/data.c) and the sensitivity
 * scan (steer/sensitivity.c).
 *
 * The hold-out splits a dataset into two disjoint parts that together are
 * the whole, each in the data's order, the same for the same seed. The scan
 * gives, for each layer and level, the accuracy of a second copy of the net
 * with that layer alone pruned or shared by the stage functions; a layer
 * already sparser than a level gives the baseline; the net comes back
 * exactly as it was (weights, masks, codebooks); bad plans are refused.
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
    dcz_sgd sgd = { 0.1f, 0.9f, 0, 50, 1, 1 };
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
    dcz_dataset wrong = d;
    wrong.c = IN + 1;
    CHECK(dcz_sensitivity(net, &wrong, &p, NULL, NULL, &rep) == DCZ_ERR_ARG, "data of another shape");
    free(params); free(mask); free(assign);
    dcz_net_free(net);
    dcz_net_free(copy);
    dcz_dataset_free(&d);
}

int main(void)
{
    RUN(test_holdout);
    RUN(test_scan);
    return check_summary();
}
