/* test_prune.c: tests of prune/ (prune.h): thresholds by quality and by
 * sparsity, exact-count pruning with ties, pruning never reviving a weight,
 * the cubic schedule, and dcz_prune_run on a small MLP learning Gaussian
 * blobs (masks and target density survive retraining); pruning by blocks
 * of input channels (dense, convolution, grouped and depthwise layers;
 * whole blocks, the smallest first, the count, later calls, a run's
 * rounds); sparse variational
 * dropout: the noisy pass's gradients and the KL term's against finite
 * differences in double, pruning by log alpha, a run that prunes most of
 * the blobs' MLP and repeats bit for bit.
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

/* ---- blocks ----------------------------------------------------------------- */

/* A layer of out rows: DENSE over in inputs (kh 0), or CONV of in_c = in
 * channels in groups, kh x kh taps; normal weights from seed. */
static int block_layer(dcz_tlayer *L, int out, int in, int kh, int groups, uint64_t seed)
{
    memset(L, 0, sizeof *L);
    strcpy(L->name, "l");
    L->op = kh ? DCZ_OP_CONV2D : DCZ_OP_DENSE;
    L->in = L->in_c = in;
    L->out = L->out_c = out;
    L->kh = L->kw = kh;
    L->group = groups;
    const size_t n = dcz_tlayer_nweights(L);
    L->w = calloc(n, sizeof *L->w);
    L->b = calloc((size_t)out, sizeof *L->b);
    if (!L->w || !L->b) return 0;
    fill_normal(L->w, n, seed);
    return 1;
}

/* Checks L's mask against blocks of span input channels (the row's
 * channels ins, taps each): each block whole, kept or pruned; every pruned
 * block's sum of squares (of the weights before, w0) at most every kept
 * one's; between m and m + span - 1 pruned. */
static void check_blocks(const dcz_tlayer *L, const float *w0, size_t ins, size_t taps, size_t span, size_t m,
                        const char *what)
{
    const size_t n = dcz_tlayer_nweights(L), rows = n / (ins * taps);
    size_t pruned = 0, split = 0;
    double max_pruned = -1, min_kept = INFINITY;
    for (size_t r = 0; r < rows; r++)
        for (size_t c0 = 0; c0 < ins; c0 += span)
            for (size_t t = 0; t < taps; t++) {
                size_t gone = 0, cnt = 0;
                double s = 0;
                for (size_t c = c0; c < c0 + span && c < ins; c++, cnt++) {
                    const size_t i = (r * ins + c) * taps + t;
                    gone += !L->mask[i];
                    s += (double)w0[i] * w0[i];
                    if (!L->mask[i] && L->w[i] != 0.0f) split++;   /* a pruned weight left nonzero */
                }
                split += gone && gone != cnt;
                pruned += gone;
                if (gone) max_pruned = fmax(max_pruned, s);
                else min_kept = fmin(min_kept, s);
            }
    CHECK(split == 0, "%s: %zu blocks split or pruned weights nonzero", what, split);
    CHECK(max_pruned <= min_kept, "%s: a pruned block of sum of squares %g above a kept one of %g", what,
          max_pruned, min_kept);
    CHECK(pruned >= m && pruned < m + span, "%s: %zu pruned for a count of %zu", what, pruned, m);
}

static void test_blocks(void)
{
    /* dense rows of 10 (blocks 4, 4, 2), convolutions of 6 channels a row
     * over 3x3 taps (blocks 4 + 2 at each tap), 8 in 2 groups (4 a row:
     * one block), the first layer's 3 channels (a block of 3), depthwise
     * (single weights) */
    const struct { int out, in, kh, groups; size_t ins, taps, span; } cases[] = {
        { 6, 10, 0, 1, 10, 1, 4 }, { 5, 6, 3, 1, 6, 9, 4 }, { 6, 8, 3, 2, 4, 9, 4 },
        { 4, 3, 3, 1, 3, 9, 3 },  { 8, 8, 3, 8, 1, 9, 1 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        dcz_tlayer L, U;
        REQUIRE(block_layer(&L, cases[k].out, cases[k].in, cases[k].kh, cases[k].groups, 40 + k) &&
                block_layer(&U, cases[k].out, cases[k].in, cases[k].kh, cases[k].groups, 40 + k), "layers");
        const size_t n = dcz_tlayer_nweights(&L);
        float *w0 = malloc(n * sizeof *w0);
        REQUIRE(w0, "alloc");
        memcpy(w0, L.w, n * sizeof *w0);
        char what[64];
        snprintf(what, sizeof what, "case %zu at 0.5", k);
        size_t kept = 0;
        float thr = 0;
        CHECK(dcz_prune_layer_blocks(&L, 0.5, 4, &thr, &kept) == DCZ_OK, "%s", what);
        check_blocks(&L, w0, cases[k].ins, cases[k].taps, cases[k].span, dcz_prune_count(0.5, n), what);
        float top = 0;
        size_t gone = 0;
        for (size_t i = 0; i < n; i++) {
            gone += !L.mask[i];
            if (!L.mask[i]) top = fmaxf(top, fabsf(w0[i]));
        }
        CHECK(thr == top && kept == n - gone, "%s: threshold %g, largest pruned %g; %zu kept of %zu, %zu pruned",
              what, thr, top, kept, n, gone);
        /* a later call goes on from these blocks, reviving none */
        uint8_t *before = malloc(n);
        REQUIRE(before, "alloc");
        memcpy(before, L.mask, n);
        snprintf(what, sizeof what, "case %zu at 0.8", k);
        CHECK(dcz_prune_layer_blocks(&L, 0.8, 4, NULL, &kept) == DCZ_OK, "%s", what);
        size_t revived = 0;
        for (size_t i = 0; i < n; i++) revived += !before[i] && L.mask[i];
        CHECK(revived == 0, "%s: %zu weights revived", what, revived);
        check_blocks(&L, w0, cases[k].ins, cases[k].taps, cases[k].span, dcz_prune_count(0.8, n), what);
        /* single weights where a block spans one channel: the plain rule's mask */
        if (cases[k].span == 1) {
            REQUIRE(dcz_prune_layer_to_sparsity(&U, 0.8, NULL, NULL) == DCZ_OK, "plain");
            CHECK(memcmp(U.mask, L.mask, n) == 0, "case %zu: blocks of one channel differ from single weights", k);
        }
        free(before);
        free(w0);
        free_layer(&L);
        free_layer(&U);
    }
    /* a layer pruned weight by weight first: the blocks a call prunes go
     * whole of what they kept, the count holds, nothing revives */
    {
        dcz_tlayer L;
        REQUIRE(block_layer(&L, 5, 6, 3, 1, 60), "layer");
        const size_t n = dcz_tlayer_nweights(&L);
        REQUIRE(dcz_prune_layer_to_sparsity(&L, 0.3, NULL, NULL) == DCZ_OK, "weight by weight");
        uint8_t *before = malloc(n);
        REQUIRE(before, "alloc");
        memcpy(before, L.mask, n);
        size_t kept = 0;
        REQUIRE(dcz_prune_layer_blocks(&L, 0.7, 4, NULL, &kept) == DCZ_OK, "by blocks");
        size_t revived = 0, torn = 0, gone = 0;
        for (size_t r = 0; r < 5; r++)
            for (size_t c0 = 0; c0 < 6; c0 += 4)
                for (size_t t = 0; t < 9; t++) {
                    size_t cut = 0, left = 0;
                    for (size_t c = c0; c < c0 + 4 && c < 6; c++) {
                        const size_t i = (r * 6 + c) * 9 + t;
                        revived += !before[i] && L.mask[i];
                        cut += before[i] && !L.mask[i];
                        left += L.mask[i];
                    }
                    torn += cut && left;
                }
        for (size_t i = 0; i < n; i++) gone += !L.mask[i];
        const size_t m = dcz_prune_count(0.7, n);
        CHECK(revived == 0 && torn == 0 && gone >= m && gone < m + 4 && kept == n - gone,
              "after weight by weight: %zu revived, %zu blocks cut in part, %zu pruned for %zu, %zu kept", revived,
              torn, gone, m, kept);
        free(before);
        free_layer(&L);
    }
    /* block 1 is the plain rule, ties included; out of range refused */
    dcz_tlayer A, B;
    REQUIRE(block_layer(&A, 5, 6, 3, 1, 50) && block_layer(&B, 5, 6, 3, 1, 50), "layers");
    for (size_t i = 0; i < 20; i++) A.w[i] = B.w[i] = 0.01f;   /* ties straddling the cut */
    REQUIRE(dcz_prune_layer_blocks(&A, 0.3, 1, NULL, NULL) == DCZ_OK &&
            dcz_prune_layer_to_sparsity(&B, 0.3, NULL, NULL) == DCZ_OK, "prune");
    CHECK(memcmp(A.mask, B.mask, dcz_tlayer_nweights(&A)) == 0, "block 1 differs from the plain rule");
    CHECK(dcz_prune_layer_blocks(&A, 0.5, 0, NULL, NULL) == DCZ_ERR_ARG &&
          dcz_prune_layer_blocks(&A, 0.5, DCZ_PRUNE_MAX_BLOCK + 1, NULL, NULL) == DCZ_ERR_ARG, "blocks out of range");
    free_layer(&A);
    free_layer(&B);
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

/* A plan over tg (net->nlayers, allocated): every layer to sparsity s, as
 * a CLI's "*=s" would, in rounds of epochs each and final epochs, at rate
 * 0.02 and batches of 32. */
static void sparsity_plan(const dcz_net *net, dcz_prune_target *tg, double s, int rounds, int epochs, int final,
                          dcz_prune_plan *plan)
{
    for (int l = 0; l < net->nlayers; l++) {
        tg[l].mode = DCZ_PRUNE_SPARSITY;
        tg[l].value = s;
    }
    dcz_prune_plan_init(plan);
    plan->targets = tg;
    plan->rounds = rounds;
    plan->epochs = epochs;
    plan->final_epochs = final;
    plan->sgd.lr = 0.02f;
    plan->sgd.batch = 32;
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
    dcz_prune_plan plan;
    sparsity_plan(net, tg, 0.8, 3, 2, 2, &plan);
    tg[f2].value = 0.5;
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

/* Whether every block of 4 inputs of net's dense layers is kept or pruned
 * whole; their pruned weights into *pruned (by layer), their weights into
 * *weights. */
static int blocks_whole(const dcz_net *net, size_t *pruned, size_t *weights)
{
    int whole = 1;
    for (int l = 0, k = 0; l < net->nlayers; l++) {
        const dcz_tlayer *L = &net->layers[l];
        if (L->op != DCZ_OP_DENSE) continue;
        const size_t n = dcz_tlayer_nweights(L);
        size_t gone = 0;
        for (size_t i = 0; i < n; i += 4) {   /* rows of 16 and 32 inputs: blocks never cross a row */
            const int kept = !L->mask || L->mask[i] + L->mask[i + 1] + L->mask[i + 2] + L->mask[i + 3] == 4;
            const int none = L->mask && L->mask[i] + L->mask[i + 1] + L->mask[i + 2] + L->mask[i + 3] == 0;
            whole &= kept || none;
            gone += none ? 4 : 0;
        }
        pruned[k] = gone;
        weights[k++] = n;
    }
    return whole;
}

/* A run by blocks of 4 inputs: every round prunes whole blocks, which
 * stay whole through the retraining, to the targets within a block, by
 * sparsity and by quality; the net still learns; a plan of blocks out of
 * range is refused. */
static void test_run_blocks(void)
{
    dcz_dataset train, test;
    REQUIRE(synth_blobs_make(&train, 2000, 1, &blobs) && synth_blobs_make(&test, 500, 2, &blobs), "blobs");
    dcz_net *net = trained_net(&train);
    REQUIRE(net, "net");
    dcz_prune_target *tg = calloc((size_t)net->nlayers, sizeof *tg);
    REQUIRE(tg, "alloc");
    dcz_prune_plan plan;
    sparsity_plan(net, tg, 0.75, 2, 1, 1, &plan);
    plan.block = 0;
    CHECK(dcz_prune_run(net, &plan, &train, &test, NULL, NULL, NULL) == DCZ_ERR_ARG, "blocks of 0 accepted");
    plan.block = 4;
    dcz_prune_report rep;
    REQUIRE(dcz_prune_run(net, &plan, &train, &test, NULL, NULL, &rep) == DCZ_OK, "run");
    check_masked_zero(net);
    size_t pruned[2], weights[2];
    CHECK(blocks_whole(net, pruned, weights), "blocks split after the retraining");
    for (int k = 0; k < 2; k++) {
        const size_t m = dcz_prune_count(0.75, weights[k]);
        CHECK(pruned[k] >= m && pruned[k] < m + 4, "layer %d: %zu of %zu pruned for %zu", k, pruned[k], weights[k], m);
    }
    CHECK(rep.acc_final > 0.85, "pruned by blocks and retrained: %.3f", rep.acc_final);
    dcz_prune_report_free(&rep);
    dcz_net_free(net);
    /* by quality: the threshold fixes each layer's count, blocks reach it */
    REQUIRE((net = trained_net(&train)), "net");
    size_t below[2];
    for (int l = 0, k = 0; l < net->nlayers; l++) {
        const dcz_tlayer *L = &net->layers[l];
        if (L->op != DCZ_OP_DENSE) continue;
        float thr;
        REQUIRE(dcz_prune_threshold_quality(L->w, NULL, dcz_tlayer_nweights(L), 1.0, &thr) == DCZ_OK, "threshold");
        below[k++] = count_le(L->w, dcz_tlayer_nweights(L), thr);
        tg[l].mode = DCZ_PRUNE_QUALITY;
        tg[l].value = 1.0;
    }
    plan.rounds = 1;
    plan.epochs = plan.final_epochs = 0;
    REQUIRE(dcz_prune_run(net, &plan, NULL, NULL, NULL, NULL, NULL) == DCZ_OK, "by quality");
    CHECK(blocks_whole(net, pruned, weights), "blocks split by quality");
    for (int k = 0; k < 2; k++)
        CHECK(pruned[k] >= below[k] && pruned[k] < below[k] + 4, "layer %d: %zu pruned, %zu under the threshold",
              k, pruned[k], below[k]);
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


/* ---- sparse variational dropout ------------------------------------------- */

/* The noisy training pass of an MLP in double: each DENSE layer's output
 * b + W x + sqrt((x * x) s2 + 1e-8) eps, eps drawn as the trainer draws it
 * (net->rng, layer by layer, sample-major), then the mean cross-entropy. */
typedef struct vd_ref {
    int nl, in[4], out[4];
    double *w[4], *b[4], *ls[4];
    double *eps[4];         /* (batch, out) */
} vd_ref;

static double vd_ref_loss(const vd_ref *r, const float *x, const uint8_t *y, int batch)
{
    double total = 0;
    for (int s = 0; s < batch; s++) {
        double cur[16], nxt[16];
        for (int j = 0; j < r->in[0]; j++) cur[j] = x[s * r->in[0] + j];
        for (int i = 0; i < r->nl; i++) {
            for (int o = 0; o < r->out[i]; o++) {
                double mu = r->b[i][o], var = 1e-8;
                for (int q = 0; q < r->in[i]; q++) {
                    mu += r->w[i][o * r->in[i] + q] * cur[q];
                    var += cur[q] * cur[q] * exp(r->ls[i][o * r->in[i] + q]);
                }
                nxt[o] = mu + sqrt(var) * r->eps[i][s * r->out[i] + o];
            }
            for (int o = 0; o < r->out[i]; o++) cur[o] = i + 1 < r->nl && nxt[o] < 0 ? 0 : nxt[o];
        }
        const int k = r->out[r->nl - 1];
        double m = cur[0], sum = 0;
        for (int j = 1; j < k; j++) if (cur[j] > m) m = cur[j];
        for (int j = 0; j < k; j++) sum += exp(cur[j] - m);
        total += m + log(sum) - cur[y[s]];
    }
    return total / batch;
}

static double vd_ref_diff(const vd_ref *r, double *p, const float *x, const uint8_t *y, int batch)
{
    const double h = 1e-6, keep = *p;
    *p = keep + h;
    const double lp = vd_ref_loss(r, x, y, batch);
    *p = keep - h;
    const double lm = vd_ref_loss(r, x, y, batch);
    *p = keep;
    return (lp - lm) / (2 * h);
}

#define VD_GRAD_OK(a, n) (fabs((double)(a) - (n)) <= 1e-4 + 1e-3 * fabs(n))

/* The gradients of the noisy pass (weights, biases, log variances) against
 * finite differences of the same pass in double with the same noise. */
static void test_vd_grad(void)
{
    char err[128];
    dcz_net *net = NULL;
    REQUIRE(dcz_net_create_arch("mlp:6-7-5-3", 11, &net, err, sizeof err) == DCZ_OK, "%s", err);
    uint8_t chosen[8] = { 0 };
    vd_ref r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < net->nlayers; i++) chosen[i] = net->layers[i].op == DCZ_OP_DENSE;
    dcz_vd_state *vs = NULL;
    REQUIRE(dcz_vd_begin(net, chosen, 7, &vs) == DCZ_OK, "begin");
    dcz_rng g;
    dcz_rng_seed(&g, 3);
    enum { B = 4 };
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *L = &net->layers[i];
        if (!chosen[i]) continue;
        REQUIRE(L->vd_ls && L->vd_s2 && L->vd_gls, "%s: no variational state", L->name);
        const int k = r.nl++;
        r.in[k] = L->in;
        r.out[k] = L->out;
        const size_t nw = (size_t)L->in * L->out;
        r.w[k] = malloc(nw * sizeof(double));
        r.ls[k] = malloc(nw * sizeof(double));
        r.b[k] = malloc((size_t)L->out * sizeof(double));
        r.eps[k] = malloc((size_t)B * L->out * sizeof(double));
        for (size_t j = 0; j < nw; j++) {
            L->vd_ls[j] = -2.0f + 0.5f * dcz_rng_normal(&g);   /* noise that matters */
            L->vd_s2[j] = expf(L->vd_ls[j]);
            r.w[k][j] = L->w[j];
            r.ls[k][j] = L->vd_ls[j];
        }
        for (int j = 0; j < L->out; j++) r.b[k][j] = L->b[j] = 0.2f * dcz_rng_normal(&g);
    }
    float x[B * 6];
    uint8_t y[B];
    for (int i = 0; i < B * 6; i++) x[i] = dcz_rng_normal(&g);
    for (int i = 0; i < B; i++) y[i] = (uint8_t)dcz_rng_below(&g, 3);
    const dcz_rng before = net->rng;
    dcz_rng noise = *net->layers[0].vd_rng;   /* the draws the pass will make */
    for (int k = 0; k < r.nl; k++) {
        float e[B * 16];
        dcz_vd_noise(dcz_rng_u64(&noise), (size_t)(B * r.out[k]), e);
        for (int j = 0; j < B * r.out[k]; j++) r.eps[k][j] = e[j];
    }
    float loss;
    REQUIRE(dcz_net_grad(net, x, y, B, &loss) == DCZ_OK, "grad");
    CHECK(fabs(loss - vd_ref_loss(&r, x, y, B)) < 1e-5, "loss %g, reference %g", loss, vd_ref_loss(&r, x, y, B));
    CHECK(memcmp(&before, &net->rng, sizeof before) == 0, "the noise came from the net's generator");
    int bad = 0, checked = 0;
    for (int i = 0, k = 0; i < net->nlayers; i++) {
        const dcz_tlayer *L = &net->layers[i];
        if (!chosen[i]) continue;
        for (int j = 0; j < L->in * L->out; j++, checked += 3) {
            const double nw = vd_ref_diff(&r, &r.w[k][j], x, y, B), nl = vd_ref_diff(&r, &r.ls[k][j], x, y, B);
            if (!VD_GRAD_OK(L->gw[j], nw) && bad++ < 5) CHECK(0, "%s gw[%d] %.7g, numeric %.7g", L->name, j, L->gw[j], nw);
            if (!VD_GRAD_OK(L->vd_gls[j], nl) && bad++ < 5)
                CHECK(0, "%s gls[%d] %.7g, numeric %.7g", L->name, j, L->vd_gls[j], nl);
        }
        for (int j = 0; j < L->out; j++) {
            const double nb = vd_ref_diff(&r, &r.b[k][j], x, y, B);
            if (!VD_GRAD_OK(L->gb[j], nb) && bad++ < 5) CHECK(0, "%s gb[%d] %.7g, numeric %.7g", L->name, j, L->gb[j], nb);
        }
        k++;
    }
    CHECK(bad == 0, "%d gradients off", bad);
    CHECK(checked == 3 * (6 * 7 + 7 * 5 + 5 * 3), "checked %d", checked);
    /* the first layer's input gradient is not asked for, the others' are:
     * their log variances moved the loss through dx (checked above by fc2's
     * and fc3's weights, whose inputs come through it) */
    dcz_vd_free(vs);
    for (int i = 0; i < net->nlayers; i++)
        CHECK(!net->layers[i].vd_ls && !net->layers[i].vd_s2 && !net->layers[i].vd_gls, "state left on layer %d", i);
    for (int k = 0; k < r.nl; k++) { free(r.w[k]); free(r.b[k]); free(r.ls[k]); free(r.eps[k]); }
    dcz_net_free(net);
}


/* A convolution's noisy pass (batch norm and a fully connected layer
 * after it) against finite differences of the trainer's own float loss,
 * the noise replayed for every evaluation. */
static void test_vd_conv_grad(void)
{
    char err[128];
    dcz_net *net = NULL;
    REQUIRE(dcz_net_create_arch("cnn:i2x5x5-c3k3s2-f4", 4, &net, err, sizeof err) == DCZ_OK, "%s", err);
    uint8_t chosen[16] = { 0 };
    int conv = -1, fc = -1;
    for (int i = 0; i < net->nlayers; i++) {
        if (net->layers[i].op == DCZ_OP_CONV2D) conv = i;
        if (net->layers[i].op == DCZ_OP_DENSE) fc = i;
    }
    REQUIRE(conv >= 0 && fc >= 0, "layers");
    chosen[conv] = chosen[fc] = 1;
    dcz_vd_state *vs = NULL;
    REQUIRE(dcz_vd_begin(net, chosen, 9, &vs) == DCZ_OK, "begin");
    dcz_rng g;
    dcz_rng_seed(&g, 12);
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *L = &net->layers[i];
        if (!chosen[i]) continue;
        for (size_t j = 0, n = dcz_tlayer_nweights(L); j < n; j++) {
            L->vd_ls[j] = -2.0f + 0.5f * dcz_rng_normal(&g);
            L->vd_s2[j] = expf(L->vd_ls[j]);
        }
    }
    enum { B = 6 };
    float x[B * 50];
    uint8_t y[B];
    for (int i = 0; i < B * 50; i++) x[i] = dcz_rng_uniform(&g);
    for (int i = 0; i < B; i++) y[i] = (uint8_t)dcz_rng_below(&g, 4);
    const dcz_rng noise = *net->layers[conv].vd_rng;
    float loss;
    REQUIRE(dcz_net_grad(net, x, y, B, &loss) == DCZ_OK, "grad");
    dcz_tlayer *C = &net->layers[conv];
    const size_t n = dcz_tlayer_nweights(C);
    float *gw = malloc(n * sizeof *gw), *gls = malloc(n * sizeof *gls);
    REQUIRE(gw && gls, "copies");
    memcpy(gw, C->gw, n * sizeof *gw);
    memcpy(gls, C->vd_gls, n * sizeof *gls);
    int bad = 0;
    for (size_t j = 0; j < n; j++)
        for (int k = 0; k < 2; k++) {
            float *p = k ? &C->vd_ls[j] : &C->w[j];
            const float keep = *p, h = k ? 1e-2f : 1e-3f;
            float lp, lm;
            *p = keep + h;
            if (k) C->vd_s2[j] = expf(*p);
            *C->vd_rng = noise;
            dcz_net_grad(net, x, y, B, &lp);
            *p = keep - h;
            if (k) C->vd_s2[j] = expf(*p);
            *C->vd_rng = noise;
            dcz_net_grad(net, x, y, B, &lm);
            *p = keep;
            if (k) C->vd_s2[j] = expf(keep);
            const double num = ((double)lp - lm) / (2.0 * h), a = k ? gls[j] : gw[j];
            if (!(fabs(a - num) <= 2e-3 + 2e-2 * fabs(num)) && bad++ < 5)
                CHECK(0, "conv %s[%zu] %.6g, numeric %.6g", k ? "gls" : "gw", j, a, num);
        }
    CHECK(bad == 0, "%d of %zu gradients off", bad, 2 * n);
    double sum = 0;
    for (size_t j = 0; j < n; j++) sum += fabs(gls[j]);
    CHECK(sum > 1e-3, "the log variances barely matter (%g): a test that cannot fail", sum);
    free(gw);
    free(gls);
    dcz_vd_free(vs);
    dcz_net_free(net);
}


/* The noise: N(0, 1) by its moments, the same for any thread count, n
 * draws written and no more, other keys other draws. */
static void test_vd_noise(void)
{
    enum { N = 1 << 20 };
    float *a = malloc((N + 1) * sizeof *a), *b = malloc((N + 1) * sizeof *b);
    REQUIRE(a && b, "buffers");
    a[N] = b[N] = 12345.0f;
    dcz_train_set_threads(1);
    dcz_vd_noise(77, N, a);
    dcz_train_set_threads(3);
    dcz_vd_noise(77, N, b);
    dcz_train_set_threads(0);
    CHECK(memcmp(a, b, N * sizeof *a) == 0, "1 and 3 threads drew other noise");
    double m = 0, v = 0, k4 = 0;
    size_t tail = 0;
    for (size_t i = 0; i < N; i++) {
        m += a[i];
        v += (double)a[i] * a[i];
        k4 += (double)a[i] * a[i] * a[i] * a[i];
        tail += fabsf(a[i]) > 1.96f;
    }
    m /= N; v /= N; k4 /= N;
    CHECK(fabs(m) < 0.005 && fabs(v - 1) < 0.01 && fabs(k4 - 3) < 0.05, "mean %g, variance %g, 4th moment %g", m, v, k4);
    CHECK(fabs((double)tail / N - 0.05) < 0.002, "%g beyond 1.96", (double)tail / N);
    b[5] = 12345.0f;
    dcz_vd_noise(78, 5, b);
    CHECK(b[5] == 12345.0f && a[N] == 12345.0f, "wrote past n");
    CHECK(memcmp(a, b, 5 * sizeof *a) != 0, "keys 77 and 78 drew the same");
    free(a);
    free(b);
}

/* The KL term's gradient against finite differences of -KL; 0 where log
 * alpha is clipped. */
static void test_vd_kl(void)
{
    const double ws[] = { -0.8, -0.05, 0.003, 0.2, 1.5 }, lss[] = { -9.0, -4.0, -1.0, 0.5 };
    int bad = 0;
    for (size_t a = 0; a < sizeof ws / sizeof ws[0]; a++)
        for (size_t c = 0; c < sizeof lss / sizeof lss[0]; c++) {
            const float w = (float)ws[a], ls = (float)lss[c];
            const double la = ls - log((double)w * w + 1e-8);
            float gw = 0.25f, gls = -0.5f;   /* added to, not written */
            dcz_vd_kl_grad(w, ls, 2.0, &gw, &gls);
            const double h = 1e-6;
            double nw = -2.0 * (dcz_vd_neg_kl(w + h, ls) - dcz_vd_neg_kl(w - h, ls)) / (2 * h);
            double nl = -2.0 * (dcz_vd_neg_kl(w, ls + h) - dcz_vd_neg_kl(w, ls - h)) / (2 * h);
            if (!(la > -10 && la < 10)) nw = nl = 0;
            if ((!VD_GRAD_OK(gw - 0.25f, nw) || !VD_GRAD_OK(gls + 0.5f, nl)) && bad++ < 5)
                CHECK(0, "w %g ls %g: %.7g %.7g, numeric %.7g %.7g", w, ls, gw - 0.25f, gls + 0.5f, nw, nl);
        }
    CHECK(bad == 0, "%d KL gradients off", bad);
    /* -KL rises with log alpha (noisier weights cost less) and is near 0
     * for the noisiest */
    CHECK(dcz_vd_neg_kl(0.1, -8) < dcz_vd_neg_kl(0.1, -2), "-KL not rising with alpha");
    CHECK(fabs(dcz_vd_neg_kl(1e-6, 5)) < 1e-3, "-KL at log alpha 10: %g", dcz_vd_neg_kl(1e-6, 5));
    CHECK(dcz_vd_log_alpha(0.0, 0.0) == 10.0 && dcz_vd_log_alpha(1.0, -20.0) == -10.0, "clipping");
}

/* Pruning by log alpha: exactly the weights at or above the threshold go. */
static void test_vd_prune_rule(void)
{
    char err[128];
    dcz_net *net = NULL;
    REQUIRE(dcz_net_create_arch("mlp:20-30-4", 2, &net, err, sizeof err) == DCZ_OK, "%s", err);
    uint8_t chosen[8] = { 0 };
    chosen[0] = 1;   /* fc1 */
    REQUIRE(net->layers[0].op == DCZ_OP_DENSE, "fc1 first");
    dcz_vd_state *vs = NULL;
    REQUIRE(dcz_vd_begin(net, chosen, 7, &vs) == DCZ_OK, "begin");
    dcz_tlayer *L = &net->layers[0];
    const size_t n = 600;
    uint8_t want[600];
    dcz_rng g;
    dcz_rng_seed(&g, 8);
    for (size_t j = 0; j < n; j++) {
        L->vd_ls[j] = -8.0f + 8.0f * dcz_rng_uniform(&g);
        want[j] = dcz_vd_log_alpha(L->w[j], L->vd_ls[j]) < 3.0;
    }
    size_t kept = 0;
    for (size_t j = 0; j < n; j++) kept += want[j];
    CHECK(kept > 50 && kept < 550, "a test of both sides: %zu kept", kept);
    CHECK(dcz_vd_prune(vs, 3.0f) == DCZ_OK, "prune");
    REQUIRE(L->mask, "no mask");
    size_t bad = 0;
    for (size_t j = 0; j < n; j++) bad += L->mask[j] != want[j] || (!want[j] && L->w[j] != 0.0f);
    CHECK(bad == 0, "%zu weights pruned against the rule", bad);
    CHECK(!net->layers[2].mask, "fc2, not chosen, got a mask");
    dcz_vd_free(vs);
    CHECK(!L->vd_ls, "state left");
    /* only layers with weights learn noise */
    dcz_net *cnn = NULL;
    REQUIRE(dcz_net_create_arch("cnn:i1x6x6-c2k3-f3", 2, &cnn, err, sizeof err) == DCZ_OK, "%s", err);
    uint8_t all[16];
    memset(all, 1, sizeof all);
    CHECK(dcz_vd_begin(cnn, all, 7, &vs) == DCZ_ERR_UNSUPPORTED && !vs, "a batch norm chosen");
    dcz_net_free(cnn);
    dcz_net_free(net);
}

static void copy_params(const dcz_net *net, float *out)
{
    memcpy(out, net->param, net->param_count * sizeof *out);
}

/* dcz_prune_run with a variational phase on blobs: it prunes most weights
 * without losing the problem, masks hold, and the same seed gives the
 * same weights; a tenth of the KL weight prunes fewer. */
static void test_run_variational(void)
{
    dcz_dataset train, test;
    int ok = synth_blobs_make(&train, 2000, 1, &blobs);
    ok = synth_blobs_make(&test, 500, 2, &blobs) && ok;
    REQUIRE(ok, "blobs");
    float *first = NULL;
    size_t kept_first = 0;
    for (int run = 0; run < 3; run++) {
        dcz_net *net = trained_net(&train);
        REQUIRE(net, "net");
        dcz_prune_target *tg = calloc((size_t)net->nlayers, sizeof *tg);
        for (int l = 0; l < net->nlayers; l++)
            if (net->layers[l].op == DCZ_OP_DENSE) tg[l] = (dcz_prune_target){ DCZ_PRUNE_SPARSITY, 0.0 };
        dcz_prune_plan plan;
        dcz_prune_plan_init(&plan);
        plan.targets = tg;
        plan.rounds = 1;
        plan.epochs = 0;
        plan.final_epochs = 2;
        plan.variational = 12;
        plan.variational_ramp = 2;
        plan.variational_lr = 5e-3f;
        plan.variational_kl = run == 2 ? 0.1 : 1.0;
        dcz_prune_report rep;
        dcz_status st = dcz_prune_run(net, &plan, &train, &test, NULL, NULL, &rep);
        REQUIRE(st == DCZ_OK, "run: %s", dcz_status_str(st));
        CHECK(rep.acc_initial > 0.9, "trained to %g", rep.acc_initial);
        if (run < 2) CHECK(rep.kept < rep.weights / 3, "kept %zu of %zu", rep.kept, rep.weights);
        else CHECK(rep.kept > kept_first, "KL weight 0.1 kept %zu, 1 kept %zu", rep.kept, kept_first);
        CHECK(rep.variational_kept == rep.kept, "the rounds pruned more: %zu then %zu", rep.variational_kept, rep.kept);
        CHECK(rep.acc_variational > 0.85 && rep.acc_final > 0.9, "accuracy %g after the phase, %g at the end",
              rep.acc_variational, rep.acc_final);
        check_masked_zero(net);
        for (int l = 0; l < net->nlayers; l++)
            CHECK(!net->layers[l].vd_ls && !net->layers[l].vd_s2 && !net->layers[l].vd_gls, "state left");
        if (!run) {
            first = malloc(net->param_count * sizeof *first);
            REQUIRE(first, "copy");
            copy_params(net, first);
            kept_first = rep.kept;
        } else if (run == 1) {
            CHECK(memcmp(first, net->param, net->param_count * sizeof *first) == 0, "same seed, other weights");
        }
        dcz_prune_report_free(&rep);
        free(tg);
        dcz_net_free(net);
    }
    free(first);
    dcz_dataset_free(&train);
    dcz_dataset_free(&test);
}

int main(void)
{
    RUN(test_count);
    RUN(test_quality_threshold);
    RUN(test_sparsity_threshold);
    RUN(test_ties);
    RUN(test_never_revives);
    RUN(test_blocks);
    RUN(test_schedule);
    RUN(test_run_retrain);
    RUN(test_run_blocks);
    RUN(test_run_quality_oneshot);
    RUN(test_vd_grad);
    RUN(test_vd_noise);
    RUN(test_vd_conv_grad);
    RUN(test_vd_kl);
    RUN(test_vd_prune_rule);
    RUN(test_run_variational);
    return check_summary();
}
