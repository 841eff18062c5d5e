/* test_prune.c: tests of prune/ (prune.h): thresholds by quality and by
 * sparsity, exact-count pruning with ties, pruning never reviving a weight,
 * the cubic schedule, and dcz_prune_run on a small MLP learning Gaussian
 * blobs (masks and target density survive retraining).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prune/prune.h"
#include "tests/check.h"
#include "tests/unit/synth.h"

/* A dense layer with malloc'd weights for the single-layer tests. */
static int make_layer(dcz_tlayer *L, int out, int in)
{
    memset(L, 0, sizeof *L);
    L->op = DCZ_OP_DENSE;
    strcpy(L->name, "fc");
    L->in = in;
    L->out = out;
    L->w = calloc((size_t)out * in, sizeof *L->w);
    L->b = calloc((size_t)out, sizeof *L->b);
    return L->w && L->b;
}

static void free_layer(dcz_tlayer *L)
{
    free(L->w);
    free(L->b);
    free(L->mask);
    free(L->vw);
}

static void fill_normal(float *w, size_t n, uint64_t seed)
{
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        w[i] = 0.1f * dcz_rng_normal(&r);
}

static size_t count_le(const float *w, size_t n, float thr)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += fabsf(w[i]) <= thr;
    return c;
}

static void test_count(void)
{
    CHECK(dcz_prune_count(0.7, 10) == 7, "%zu", dcz_prune_count(0.7, 10));
    CHECK(dcz_prune_count(0.9, 1000) == 900, "%zu", dcz_prune_count(0.9, 1000));
    CHECK(dcz_prune_count(0.5, 7) == 3, "%zu", dcz_prune_count(0.5, 7));
    CHECK(dcz_prune_count(0.0, 7) == 0, "zero");
    CHECK(dcz_prune_count(1.0, 7) == 7, "one");
    CHECK(dcz_prune_count(0.999, 100) == 99, "%zu", dcz_prune_count(0.999, 100));
    for (size_t n = 1; n < 300; n += 7)
        for (int p = 0; p <= 100; p++) {
            size_t m = dcz_prune_count(p / 100.0, n);
            CHECK(m == (size_t)p * n / 100, "p %d n %zu: %zu", p, n, m);
        }
}

static void test_quality_threshold(void)
{
    enum { N = 4099 };
    float *w = malloc(N * sizeof *w);
    uint8_t *mask = malloc(N);
    REQUIRE(w && mask, "alloc");
    fill_normal(w, N, 7);
    for (size_t i = 0; i < N; i++) {
        w[i] += 0.03f;                /* a nonzero mean */
        mask[i] = (i % 3) != 0;
    }
    const double qs[] = { 0.0, 0.5, 1.0, 1.7 };
    for (int t = 0; t < 4; t++) {
        for (int masked = 0; masked < 2; masked++) {
            double sum = 0.0, ss = 0.0;
            size_t m = 0;
            for (size_t i = 0; i < N; i++)
                if (!masked || mask[i]) {
                    sum += w[i];
                    m++;
                }
            double mean = sum / m;
            for (size_t i = 0; i < N; i++)
                if (!masked || mask[i])
                    ss += ((double)w[i] - mean) * ((double)w[i] - mean);
            float want = (float)(qs[t] * sqrt(ss / m));
            float thr = -5.0f;
            dcz_status st = dcz_prune_threshold_quality(w, masked ? mask : NULL, N,
                                                        qs[t], &thr);
            CHECK(st == DCZ_OK, "%s", dcz_status_str(st));
            CHECK(fabsf(thr - want) <= 1e-6f * want, "q %g masked %d: %.9g vs %.9g",
                  qs[t], masked, thr, want);
        }
    }
    float thr;
    CHECK(dcz_prune_threshold_quality(w, NULL, 0, 1.0, &thr) == DCZ_ERR_ARG, "n 0");
    CHECK(dcz_prune_threshold_quality(w, NULL, N, -1.0, &thr) == DCZ_ERR_ARG, "q < 0");
    memset(mask, 0, N);
    CHECK(dcz_prune_threshold_quality(w, mask, N, 1.0, &thr) == DCZ_OK && thr == 0.0f,
          "all pruned: %g", thr);
    w[5] = NAN;
    CHECK(dcz_prune_threshold_quality(w, NULL, N, 1.0, &thr) == DCZ_ERR_DATA, "NaN");
    free(w);
    free(mask);
}

static void test_sparsity_threshold(void)
{
    enum { N = 5000 };
    float *w = malloc(N * sizeof *w);
    REQUIRE(w, "alloc");
    fill_normal(w, N, 11);
    const double ss[] = { 0.0, 0.5, 0.9, 1.0, 0.333 };
    for (int t = 0; t < 5; t++) {
        size_t want = (size_t)floor(ss[t] * N);
        float thr;
        dcz_status st = dcz_prune_threshold_sparsity(w, N, ss[t], &thr);
        REQUIRE(st == DCZ_OK, "%s", dcz_status_str(st));
        CHECK(count_le(w, N, thr) == want, "s %g: %zu pruned, want %zu", ss[t],
              count_le(w, N, thr), want);

        dcz_tlayer L;
        int ok = make_layer(&L, 50, 100);
        REQUIRE(ok, "alloc");
        memcpy(L.w, w, sizeof(float) * N);
        float thr2;
        size_t kept;
        st = dcz_prune_layer_to_sparsity(&L, ss[t], &thr2, &kept);
        CHECK(st == DCZ_OK, "%s", dcz_status_str(st));
        CHECK(kept == N - want, "kept %zu", kept);
        CHECK(want == 0 ? thr2 == -1.0f : thr2 == thr, "thr %g vs %g", thr2, thr);
        size_t k2 = 0;
        for (size_t i = 0; i < N; i++) {
            k2 += L.mask[i];
            if (!L.mask[i])
                CHECK(L.w[i] == 0.0f && fabsf(w[i]) <= thr, "pruned %zu", i);
            else
                CHECK(L.w[i] == w[i] && fabsf(w[i]) > thr, "kept %zu", i);
        }
        CHECK(k2 == kept, "mask count %zu", k2);

        /* the threshold path agrees on distinct magnitudes */
        dcz_tlayer L2;
        ok = make_layer(&L2, 50, 100);
        REQUIRE(ok, "alloc");
        memcpy(L2.w, w, sizeof(float) * N);
        st = dcz_prune_layer(&L2, thr, &kept);
        CHECK(st == DCZ_OK && kept == N - want, "layer by thr: kept %zu", kept);
        CHECK(memcmp(L.mask, L2.mask, N) == 0, "same masks");
        free_layer(&L);
        free_layer(&L2);
    }
    float thr;
    CHECK(dcz_prune_threshold_sparsity(w, 0, 0.5, &thr) == DCZ_ERR_ARG, "n 0");
    CHECK(dcz_prune_threshold_sparsity(w, N, 1.5, &thr) == DCZ_ERR_ARG, "s > 1");
    free(w);
}

static void test_ties(void)
{
    dcz_tlayer L;
    int ok = make_layer(&L, 10, 10);
    REQUIRE(ok, "alloc");
    /* magnitudes 0, 0.25, 0.5, 0.75 repeating, alternating signs */
    for (int i = 0; i < 100; i++)
        L.w[i] = (float)(i % 4) * 0.25f * (i % 2 ? -1.0f : 1.0f);
    float thr;
    CHECK(dcz_prune_threshold_sparsity(L.w, 100, 0.3, &thr) == DCZ_OK, "thr");
    /* 30th smallest is 0.25 (25 zeros, 25 of 0.25): ties all at or below */
    CHECK(thr == 0.25f, "%g", thr);
    CHECK(count_le(L.w, 100, thr) == 50, "tie rule prunes the whole tie");

    size_t kept;
    float t2;
    CHECK(dcz_prune_layer_to_sparsity(&L, 0.3, &t2, &kept) == DCZ_OK, "to sparsity");
    CHECK(kept == 70 && t2 == 0.25f, "kept %zu thr %g", kept, t2);
    /* all 25 zeros, then the five lowest-index weights of magnitude 0.25 */
    int seen = 0;
    for (int i = 0; i < 100; i++) {
        int mag = i % 4;
        int want_pruned = mag == 0 || (mag == 1 && seen < 5);
        if (mag == 1 && seen < 5)
            seen++;
        CHECK(L.mask[i] == !want_pruned, "index %d", i);
    }
    /* all weights equal: exact count still */
    for (int i = 0; i < 100; i++) {
        L.w[i] = 0.5f;
        L.mask[i] = 1;
    }
    CHECK(dcz_prune_layer_to_sparsity(&L, 0.42, NULL, &kept) == DCZ_OK && kept == 58,
          "kept %zu", kept);
    for (int i = 0; i < 100; i++)
        CHECK(L.mask[i] == (i >= 42), "equal weights, index %d", i);
    free_layer(&L);
}

static void test_never_revives(void)
{
    dcz_tlayer L;
    int ok = make_layer(&L, 20, 30);
    REQUIRE(ok, "alloc");
    size_t n = 600;
    fill_normal(L.w, n, 3);
    L.vw = malloc(n * sizeof *L.vw);
    REQUIRE(L.vw, "alloc");
    for (size_t i = 0; i < n; i++)
        L.vw[i] = 1.0f;
    size_t kept;
    CHECK(dcz_prune_layer_to_sparsity(&L, 0.8, NULL, &kept) == DCZ_OK && kept == 120,
          "kept %zu", kept);
    uint8_t before[600];
    memcpy(before, L.mask, n);
    for (size_t i = 0; i < n; i++)
        if (!L.mask[i])
            CHECK(L.w[i] == 0.0f && L.vw[i] == 0.0f, "pruned %zu zeroed", i);
        else
            CHECK(L.vw[i] == 1.0f, "kept momentum %zu untouched", i);

    /* a pruned weight that somehow became large stays pruned */
    for (size_t i = 0; i < n; i++)
        if (!L.mask[i])
            L.w[i] = 100.0f;
    CHECK(dcz_prune_layer_to_sparsity(&L, 0.3, NULL, &kept) == DCZ_OK && kept == 120,
          "lower target keeps %zu", kept);
    CHECK(dcz_prune_layer(&L, -1.0f, &kept) == DCZ_OK && kept == 120, "thr -1: %zu", kept);
    CHECK(memcmp(before, L.mask, n) == 0, "mask unchanged");
    for (size_t i = 0; i < n; i++)
        if (!L.mask[i])
            CHECK(L.w[i] == 0.0f, "re-zeroed %zu", i);
    CHECK(dcz_prune_layer(&L, 1e9f, &kept) == DCZ_OK && kept == 0, "all: %zu", kept);
    CHECK(dcz_prune_layer_sparsity(&L) == 1.0, "sparsity 1");
    CHECK(dcz_prune_layer_to_sparsity(&L, 0.5, NULL, &kept) == DCZ_OK && kept == 0,
          "stays empty");
    for (size_t i = 0; i < n; i++)
        CHECK(L.mask[i] == 0 && L.w[i] == 0.0f, "%zu", i);

    dcz_tlayer R;
    memset(&R, 0, sizeof R);
    R.op = DCZ_OP_RELU;
    CHECK(dcz_prune_layer(&R, 0.1f, &kept) == DCZ_ERR_ARG, "relu");
    CHECK(dcz_prune_layer(&L, NAN, &kept) == DCZ_ERR_ARG, "NaN thr");
    free_layer(&L);
}

static void test_schedule(void)
{
    const double si[] = { 0.0, 0.2, 0.5, 0.9 };
    const double sf[] = { 0.9, 0.95, 0.5, 0.99 };
    for (int t = 0; t < 4; t++)
        for (int K = 1; K <= 12; K++) {
            double prev = dcz_prune_schedule(si[t], sf[t], 0, K);
            CHECK(prev == si[t], "r 0");
            for (int r = 1; r <= K; r++) {
                double s = dcz_prune_schedule(si[t], sf[t], r, K);
                CHECK(s >= prev && s <= sf[t], "monotone K %d r %d: %g after %g", K, r,
                      s, prev);
                prev = s;
            }
            CHECK(prev == sf[t], "last round exactly s_f: %.17g", prev);
        }
    /* the cubic form: most pruning early */
    double s1 = dcz_prune_schedule(0.0, 0.9, 1, 3);
    CHECK(fabs(s1 - 0.9 * (1.0 - 8.0 / 27.0)) < 1e-12, "%g", s1);
}

/* ---- dcz_prune_run on Gaussian blobs -------------------------------------- */

enum { DIM = 16, CLASSES = 4 };

/* The same centres for every split. */
static const synth_blobs blobs = { DIM, CLASSES, 1234, 0.2f, 0.6f, 0.12f };

typedef struct prog {
    size_t calls, last, total;
    int bad;
} prog;

static void on_progress(void *ctx, size_t done, size_t total)
{
    prog *p = ctx;
    if (done < p->last || done > total || (p->calls && total != p->total))
        p->bad = 1;
    p->calls++;
    p->last = done;
    p->total = total;
}

static dcz_net *trained_net(const dcz_dataset *train)
{
    dcz_net *net = NULL;
    char err[128];
    if (dcz_net_create_arch("mlp:16-32-4", 5, &net, err, sizeof err) != DCZ_OK)
        return NULL;
    dcz_sgd opt = { .lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.0f, .batch = 32, .train_biases = 1, .train_weights = 1 };
    dcz_rng r;
    dcz_rng_seed(&r, 9);
    for (int e = 0; e < 5; e++) {
        float loss;
        if (dcz_train_epoch(net, train, &opt, &r, NULL, NULL, &loss) != DCZ_OK) {
            dcz_net_free(net);
            return NULL;
        }
    }
    return net;
}

static int find_layer(const dcz_net *net, const char *name)
{
    for (int l = 0; l < net->nlayers; l++)
        if (strcmp(net->layers[l].name, name) == 0)
            return l;
    return -1;
}

static void check_masked_zero(const dcz_net *net)
{
    for (int l = 0; l < net->nlayers; l++) {
        const dcz_tlayer *L = &net->layers[l];
        if (L->op != DCZ_OP_DENSE || !L->mask)
            continue;
        size_t n = (size_t)L->in * L->out, bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += !L->mask[i] && L->w[i] != 0.0f;
        CHECK(bad == 0, "%s: %zu masked weights nonzero", L->name, bad);
    }
}

static void test_run_retrain(void)
{
    dcz_dataset train, test;
    int ok = synth_blobs_make(&train, 2000, 1, &blobs);
    ok = synth_blobs_make(&test, 500, 2, &blobs) && ok;
    REQUIRE(ok, "blobs");
    dcz_net *net = trained_net(&train);
    REQUIRE(net, "net");
    int f1 = find_layer(net, "fc1"), f2 = find_layer(net, "fc2");
    REQUIRE(f1 >= 0 && f2 >= 0, "layer names");

    dcz_prune_target *tg = calloc((size_t)net->nlayers, sizeof *tg);
    REQUIRE(tg, "alloc");
    for (int l = 0; l < net->nlayers; l++) {   /* "*=0.8", as a CLI would */
        tg[l].mode = DCZ_PRUNE_SPARSITY;
        tg[l].value = 0.8;
    }
    tg[f2].value = 0.5;
    dcz_prune_plan plan;
    dcz_prune_plan_init(&plan);
    plan.targets = tg;
    plan.rounds = 3;
    plan.epochs = 2;
    plan.final_epochs = 2;
    plan.sgd.lr = 0.02f;
    plan.sgd.batch = 32;
    prog p = { 0, 0, 0, 0 };
    dcz_prune_report rep;
    dcz_status st = dcz_prune_run(net, &plan, &train, &test, on_progress, &p, &rep);
    REQUIRE(st == DCZ_OK, "%s", dcz_status_str(st));
    check_masked_zero(net);

    size_t n1 = 16 * 32, n2 = 32 * 4;
    const dcz_tlayer *L1 = &net->layers[f1], *L2 = &net->layers[f2];
    REQUIRE(L1->mask && L2->mask, "masks");
    size_t k1 = 0, k2 = 0;
    for (size_t i = 0; i < n1; i++)
        k1 += L1->mask[i];
    for (size_t i = 0; i < n2; i++)
        k2 += L2->mask[i];
    CHECK(k1 == n1 - (size_t)floor(0.8 * n1), "fc1 kept %zu", k1);
    CHECK(k2 == n2 - n2 / 2, "fc2 kept %zu", k2);

    CHECK(rep.nrounds == 3 && rep.nlayers == 2, "%d rounds %d layers", rep.nrounds,
          rep.nlayers);
    if (rep.nlayers == 2) {
        CHECK(rep.layers[0].layer == f1 && strcmp(rep.layers[0].name, "fc1") == 0, "l0");
        CHECK(rep.layers[0].kept == k1 && rep.layers[0].weights == n1, "l0 counts");
        CHECK(fabs(rep.layers[0].density - (double)k1 / n1) < 1e-12, "l0 density");
        CHECK(rep.layers[1].kept == k2, "l1 kept");
        CHECK(rep.layers[0].threshold > 0.0f, "thr %g", rep.layers[0].threshold);
        CHECK(rep.kept == k1 + k2 && rep.weights == n1 + n2, "totals");
    }
    for (int r = 0; r < rep.nrounds; r++) {
        CHECK(rep.rounds[r].acc_pruned >= 0.0 && rep.rounds[r].acc_retrained >= 0.0,
              "round %d accuracy", r);
        CHECK(rep.rounds[r].loss > 0.0, "round %d loss %g", r, rep.rounds[r].loss);
        if (r > 0)
            CHECK(rep.rounds[r].target >= rep.rounds[r - 1].target, "targets grow");
    }
    CHECK(fabs(rep.rounds[2].target - (double)(n1 + n2 - k1 - k2) / (n1 + n2)) < 1e-12,
          "last round target");
    CHECK(rep.acc_initial > 0.9, "trained net %.3f", rep.acc_initial);
    CHECK(rep.acc_final > 0.9, "pruned + retrained %.3f", rep.acc_final);
    CHECK(rep.final_loss > 0.0, "final loss");

    size_t per_epoch = (2000 + 31) / 32;
    CHECK(!p.bad && p.calls > 0, "progress consistent (%zu calls)", p.calls);
    CHECK(p.total == per_epoch * (3 * 2 + 2) && p.last == p.total, "progress %zu/%zu",
          p.last, p.total);

    /* a second run to a higher target keeps the first run's pruned weights */
    uint8_t *before = malloc(n1);
    REQUIRE(before, "alloc");
    memcpy(before, L1->mask, n1);
    for (int l = 0; l < net->nlayers; l++)
        tg[l].value = 0.9;
    dcz_prune_report rep2;
    st = dcz_prune_run(net, &plan, &train, NULL, NULL, NULL, &rep2);
    CHECK(st == DCZ_OK, "%s", dcz_status_str(st));
    for (size_t i = 0; i < n1; i++)
        if (!before[i])
            CHECK(!L1->mask[i], "revived %zu", i);
    check_masked_zero(net);
    CHECK(rep2.acc_initial == -1.0 && rep2.acc_final == -1.0, "no test set: -1");
    CHECK(rep2.layers && rep2.layers[0].kept == n1 - (size_t)floor(0.9 * n1), "kept");

    dcz_prune_report_free(&rep);
    dcz_prune_report_free(&rep2);
    dcz_prune_report_free(NULL);
    CHECK(rep.rounds == NULL && rep.layers == NULL, "freed and zeroed");
    free(before);
    free(tg);
    dcz_net_free(net);
    dcz_dataset_free(&train);
    dcz_dataset_free(&test);
}

static void test_run_quality_oneshot(void)
{
    dcz_dataset test;
    int ok = synth_blobs_make(&test, 300, 2, &blobs);
    REQUIRE(ok, "blobs");
    dcz_net *net = NULL;
    char err[128];
    dcz_status st = dcz_net_create_arch("mlp:16-32-4", 5, &net, err, sizeof err);
    REQUIRE(st == DCZ_OK, "%s", err);
    int f1 = find_layer(net, "fc1");
    REQUIRE(f1 >= 0, "fc1");
    dcz_tlayer *L = &net->layers[f1];
    size_t n = 16 * 32;
    float thr;
    st = dcz_prune_threshold_quality(L->w, NULL, n, 0.7, &thr);
    REQUIRE(st == DCZ_OK, "thr");
    size_t want = count_le(L->w, n, thr);

    dcz_prune_target *tg = calloc((size_t)net->nlayers, sizeof *tg);
    REQUIRE(tg, "alloc");
    tg[f1].mode = DCZ_PRUNE_QUALITY;
    tg[f1].value = 0.7;
    dcz_prune_plan plan;
    dcz_prune_plan_init(&plan);
    plan.targets = tg;
    plan.rounds = 4;
    dcz_prune_report rep;
    st = dcz_prune_run(net, &plan, NULL, &test, NULL, NULL, &rep);
    REQUIRE(st == DCZ_OK, "%s", dcz_status_str(st));
    CHECK(rep.nlayers == 2 && rep.layers[0].kept == n - want, "kept %zu want %zu",
          rep.layers[0].kept, n - want);
    CHECK(fabs(rep.layers[0].target - (double)want / n) < 1e-12, "target");
    CHECK(rep.layers[1].mode == DCZ_PRUNE_NONE && rep.layers[1].kept == 32 * 4 &&
          net->layers[find_layer(net, "fc2")].mask == NULL, "fc2 untouched");
    for (int r = 0; r < 4; r++)
        CHECK(rep.rounds[r].loss == -1.0 &&
              rep.rounds[r].acc_retrained == rep.rounds[r].acc_pruned, "one-shot");
    check_masked_zero(net);
    dcz_prune_report_free(&rep);

    /* argument errors */
    plan.rounds = 0;
    CHECK(dcz_prune_run(net, &plan, NULL, NULL, NULL, NULL, &rep) == DCZ_ERR_ARG, "K 0");
    plan.rounds = 1;
    tg[f1].mode = DCZ_PRUNE_SPARSITY;
    tg[f1].value = 1.5;
    CHECK(dcz_prune_run(net, &plan, NULL, NULL, NULL, NULL, &rep) == DCZ_ERR_ARG, "s 1.5");
    tg[f1].value = 0.5;
    plan.targets = NULL;
    CHECK(dcz_prune_run(net, &plan, NULL, NULL, NULL, NULL, &rep) == DCZ_ERR_ARG, "NULL");
    plan.targets = tg;
    dcz_dataset bad = test;
    bad.w = 15;
    CHECK(dcz_prune_run(net, &plan, NULL, &bad, NULL, NULL, &rep) == DCZ_ERR_ARG, "shape");
    plan.sgd.batch = 0;
    CHECK(dcz_prune_run(net, &plan, &test, NULL, NULL, NULL, &rep) == DCZ_ERR_ARG, "batch");
    CHECK(rep.rounds == NULL && rep.layers == NULL, "zeroed on failure");
    free(tg);
    dcz_net_free(net);
    dcz_dataset_free(&test);
}

int main(void)
{
    RUN(test_count);
    RUN(test_quality_threshold);
    RUN(test_sparsity_threshold);
    RUN(test_ties);
    RUN(test_never_revives);
    RUN(test_schedule);
    RUN(test_run_retrain);
    RUN(test_run_quality_oneshot);
    return check_summary();
}
