/* test_quantize.c: tests of quantize/ (quantize.h): the three k-means
 * initializations, k-means invariants (cost never increases, every point at
 * its nearest centroid, centroids sorted, determinism), edge sizes, layer
 * quantization leaving pruned weights out, and centroid fine-tuning of a
 * small pruned MLP on Gaussian blobs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prune/prune.h"
#include "quantize/quantize.h"
#include "tests/check.h"
#include "tests/unit/synth.h"

/* A mixture of three Gaussians, like trained weights plus outliers. */
static void fill_mixture(float *x, size_t n, uint64_t seed)
{
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t c = dcz_rng_below(&r, 3);
        float mu = c == 0 ? -0.2f : c == 1 ? 0.0f : 0.15f;
        x[i] = mu + 0.05f * dcz_rng_normal(&r);
    }
}

static void minmax(const float *x, size_t n, float *lo, float *hi)
{
    *lo = *hi = x[0];
    for (size_t i = 1; i < n; i++) {
        if (x[i] < *lo)
            *lo = x[i];
        if (x[i] > *hi)
            *hi = x[i];
    }
}

static void test_linear_init_exact(void)
{
    enum { N = 3001 };
    float *x = malloc(N * sizeof *x);
    uint8_t *a = malloc(N);
    REQUIRE(x && a, "alloc");
    fill_mixture(x, N, 1);
    float lo, hi;
    minmax(x, N, &lo, &hi);
    const int ks[] = { 2, 3, 5, 16, 32, 255, 256 };
    for (int t = 0; t < 7; t++) {
        int k = ks[t];
        float c[256];
        dcz_kmeans_info info;
        dcz_status st = dcz_kmeans_1d(x, N, k, DCZ_KM_LINEAR, 0, 0, c, a, &info);
        REQUIRE(st == DCZ_OK, "%s", dcz_status_str(st));
        CHECK(info.iterations == 0 && info.ncost == 1, "no iterations");
        CHECK(c[0] == lo && c[k - 1] == hi, "k %d: ends %g %g", k, c[0], c[k - 1]);
        for (int j = 0; j < k; j++) {
            float want = (float)((double)lo + (double)j * ((double)hi - (double)lo) /
                                 (double)(k - 1));
            CHECK(c[j] == want, "k %d c[%d] = %.9g, want %.9g", k, j, c[j], want);
        }
    }
    float c1;
    CHECK(dcz_kmeans_1d(x, N, 1, DCZ_KM_LINEAR, 0, 0, &c1, a, NULL) == DCZ_OK &&
          c1 == (float)(((double)lo + (double)hi) / 2.0), "k 1: midpoint %g", c1);
    free(x);
    free(a);
}

/* Checks the k-means postconditions for a result. */
static void check_result(const float *x, size_t n, int k, const float *c,
                         const uint8_t *a, const dcz_kmeans_info *info, const char *what)
{
    for (int j = 1; j < k; j++)
        CHECK(c[j - 1] <= c[j], "%s: centroids sorted at %d", what, j);
    size_t far = 0;
    double sse = 0.0;
    for (size_t i = 0; i < n; i++) {
        CHECK(a[i] < k, "%s: assign range", what);
        double d = fabs((double)x[i] - (double)c[a[i]]);
        sse += d * d;
        for (int j = 0; j < k; j++)
            if (fabs((double)x[i] - (double)c[j]) < d) {
                far++;
                break;
            }
    }
    CHECK(far == 0, "%s: %zu points not at their nearest centroid", what, far);
    CHECK(fabs(sse - info->final_cost) <= 1e-9 * sse + 1e-30, "%s: final cost %g vs %g",
          what, info->final_cost, sse);
    for (int i = 1; i < info->ncost; i++)
        CHECK(info->cost[i] <= info->cost[i - 1] * (1.0 + 1e-12), "%s: cost rose at %d: "
              "%.17g after %.17g", what, i, info->cost[i], info->cost[i - 1]);
    if (info->iterations < DCZ_KMEANS_TRACE)
        CHECK(info->ncost == info->iterations + 1 &&
              info->cost[info->ncost - 1] == info->final_cost, "%s: trace", what);
}

static void test_kmeans_invariants(void)
{
    enum { N = 20000 };
    float *x = malloc(N * sizeof *x);
    uint8_t *a = malloc(N);
    REQUIRE(x && a, "alloc");
    fill_mixture(x, N, 2);
    const int ks[] = { 1, 2, 4, 16, 64, 256 };
    const dcz_km_init inits[] = { DCZ_KM_LINEAR, DCZ_KM_DENSITY, DCZ_KM_RANDOM };
    for (int t = 0; t < 6; t++)
        for (int m = 0; m < 3; m++) {
            float c[256];
            dcz_kmeans_info info;
            char what[64];
            snprintf(what, sizeof what, "k %d init %d", ks[t], m);
            dcz_status st = dcz_kmeans_1d(x, N, ks[t], inits[m], 300, 42, c, a, &info);
            REQUIRE(st == DCZ_OK, "%s", dcz_status_str(st));
            CHECK(info.iterations >= 1, "%s: iterated", what);
            check_result(x, N, ks[t], c, a, &info, what);
            if (info.converged) {
                /* a fixed point: each non-empty centroid is its cluster's mean */
                for (int j = 0; j < ks[t]; j++) {
                    double s = 0.0;
                    size_t cnt = 0;
                    for (size_t i = 0; i < N; i++)
                        if (a[i] == j) {
                            s += x[i];
                            cnt++;
                        }
                    if (cnt)
                        CHECK(c[j] == (float)(s / cnt), "%s: centroid %d not the mean",
                              what, j);
                }
            }
        }
    /* few iterations: still nearest-assigned and monotone */
    float c[16];
    dcz_kmeans_info info;
    CHECK(dcz_kmeans_1d(x, N, 16, DCZ_KM_RANDOM, 2, 7, c, a, &info) == DCZ_OK, "run");
    CHECK(info.iterations == 2 && !info.converged, "stopped at max_iter");
    check_result(x, N, 16, c, a, &info, "max_iter 2");
    free(x);
    free(a);
}

static void test_density_init(void)
{
    enum { N = 5000 };
    float *x = malloc(N * sizeof *x);
    uint8_t *a = malloc(N);
    REQUIRE(x && a, "alloc");
    fill_mixture(x, N, 3);
    float lo, hi;
    minmax(x, N, &lo, &hi);
    const int ks[] = { 1, 2, 7, 32, 256 };
    for (int t = 0; t < 5; t++) {
        float c[256];
        dcz_kmeans_info info;
        CHECK(dcz_kmeans_1d(x, N, ks[t], DCZ_KM_DENSITY, 0, 0, c, a, &info) == DCZ_OK,
              "run");
        for (int j = 0; j < ks[t]; j++) {
            CHECK(c[j] >= lo && c[j] <= hi, "k %d c[%d] %g outside [%g, %g]", ks[t], j,
                  c[j], lo, hi);
            if (j > 0)
                CHECK(c[j - 1] <= c[j], "k %d sorted at %d", ks[t], j);
        }
        check_result(x, N, ks[t], c, a, &info, "density");
    }
    /* quantiles follow the density: with a 90/10 split most centroids go
     * to the dense part */
    for (size_t i = 0; i < N; i++)
        x[i] = i < N * 9 / 10 ? (float)i / N : 10.0f + (float)i / N;
    float c[10];
    CHECK(dcz_kmeans_1d(x, N, 10, DCZ_KM_DENSITY, 0, 0, c, a, NULL) == DCZ_OK, "run");
    int dense = 0;
    for (int j = 0; j < 10; j++)
        dense += c[j] < 1.0f;
    CHECK(dense == 9, "%d centroids in the dense part", dense);
    free(x);
    free(a);
}

static void test_random_init(void)
{
    enum { N = 4000 };
    float *x = malloc(N * sizeof *x);
    uint8_t *a1 = malloc(N), *a2 = malloc(N);
    REQUIRE(x && a1 && a2, "alloc");
    fill_mixture(x, N, 4);
    float c1[32], c2[32], c3[32];
    CHECK(dcz_kmeans_1d(x, N, 32, DCZ_KM_RANDOM, 0, 99, c1, a1, NULL) == DCZ_OK, "a");
    CHECK(dcz_kmeans_1d(x, N, 32, DCZ_KM_RANDOM, 0, 99, c2, a2, NULL) == DCZ_OK, "b");
    CHECK(memcmp(c1, c2, sizeof c1) == 0 && memcmp(a1, a2, N) == 0, "same seed");
    CHECK(dcz_kmeans_1d(x, N, 32, DCZ_KM_RANDOM, 0, 100, c3, a2, NULL) == DCZ_OK, "c");
    CHECK(memcmp(c1, c3, sizeof c1) != 0, "another seed, other samples");
    /* Forgy: centroids are samples, at distinct positions (values distinct here) */
    for (int j = 0; j < 32; j++) {
        int found = 0;
        for (size_t i = 0; i < N && !found; i++)
            found = x[i] == c1[j];
        CHECK(found, "c[%d] is a sample", j);
        if (j > 0)
            CHECK(c1[j - 1] < c1[j], "distinct samples at %d", j);
    }
    /* and after iterating, still deterministic */
    CHECK(dcz_kmeans_1d(x, N, 32, DCZ_KM_RANDOM, 50, 5, c1, a1, NULL) == DCZ_OK, "d");
    CHECK(dcz_kmeans_1d(x, N, 32, DCZ_KM_RANDOM, 50, 5, c2, a2, NULL) == DCZ_OK, "e");
    CHECK(memcmp(c1, c2, sizeof c1) == 0 && memcmp(a1, a2, N) == 0, "iterated");
    free(x);
    free(a1);
    free(a2);
}

static void test_edge_sizes(void)
{
    float c[256];
    uint8_t a[8];
    dcz_kmeans_info info;
    const dcz_km_init inits[] = { DCZ_KM_LINEAR, DCZ_KM_DENSITY, DCZ_KM_RANDOM };
    for (int m = 0; m < 3; m++) {
        CHECK(dcz_kmeans_1d(NULL, 0, 4, inits[m], 10, 1, c, NULL, &info) == DCZ_OK, "n 0");
        CHECK(c[0] == 0.0f && c[3] == 0.0f && info.final_cost == 0.0, "n 0 centroids");
        const float x[3] = { 0.5f, -1.0f, 2.0f };
        CHECK(dcz_kmeans_1d(x, 3, 8, inits[m], 10, 1, c, a, &info) == DCZ_OK, "n < k");
        check_result(x, 3, 8, c, a, &info, "n < k");
        CHECK(info.final_cost == 0.0, "each point its own centroid: %g", info.final_cost);
        const float same[5] = { 0.25f, 0.25f, 0.25f, 0.25f, 0.25f };
        CHECK(dcz_kmeans_1d(same, 5, 4, inits[m], 10, 1, c, a, &info) == DCZ_OK, "equal");
        check_result(same, 5, 4, c, a, &info, "equal values");
        CHECK(c[a[0]] == 0.25f, "equal values centroid %g", c[a[0]]);
    }
    const float x[2] = { 1.0f, NAN };
    CHECK(dcz_kmeans_1d(x, 2, 2, DCZ_KM_LINEAR, 10, 1, c, a, NULL) == DCZ_ERR_DATA, "NaN");
    CHECK(dcz_kmeans_1d(x, 1, 0, DCZ_KM_LINEAR, 10, 1, c, a, NULL) == DCZ_ERR_ARG, "k 0");
    CHECK(dcz_kmeans_1d(x, 1, 257, DCZ_KM_LINEAR, 10, 1, c, a, NULL) == DCZ_ERR_ARG,
          "k 257");
    CHECK(dcz_kmeans_1d(x, 1, 2, DCZ_KM_LINEAR, -1, 1, c, a, NULL) == DCZ_ERR_ARG,
          "max_iter < 0");
    CHECK(dcz_kmeans_1d(x, 1, 2, (dcz_km_init)9, 1, 1, c, a, NULL) == DCZ_ERR_ARG, "init");
}

static void test_large(void)
{
    enum { N = 266200 };      /* LeNet-300-100's weights */
    float *x = malloc(N * sizeof *x);
    uint8_t *a = malloc(N);
    REQUIRE(x && a, "alloc");
    fill_mixture(x, N, 5);
    float c[256];
    dcz_kmeans_info info;
    clock_t t0 = clock();
    dcz_status st = dcz_kmeans_1d(x, N, 256, DCZ_KM_LINEAR, 200, 0, c, a, &info);
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(st == DCZ_OK, "%s", dcz_status_str(st));
    CHECK(s < 5.0, "%.2f s for 200 iterations of k 256", s);
    for (int i = 1; i < info.ncost; i++)
        CHECK(info.cost[i] <= info.cost[i - 1] * (1.0 + 1e-12), "cost rose at %d", i);
    free(x);
    free(a);
}

/* ---- layers ------------------------------------------------------------- */

static void test_layer_pruned_not_clustered(void)
{
    enum { OUT = 40, IN = 50, N = OUT * IN };
    dcz_tlayer L;
    memset(&L, 0, sizeof L);
    L.op = DCZ_OP_DENSE;
    strcpy(L.name, "fc1");
    L.out = OUT;
    L.in = IN;
    L.w = malloc(N * sizeof *L.w);
    L.b = calloc(OUT, sizeof *L.b);
    float *orig = malloc(N * sizeof *orig);
    float *kept = malloc(N * sizeof *kept);
    uint8_t *ka = malloc(N);
    REQUIRE(L.w && L.b && orig && kept && ka, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 8);
    for (size_t i = 0; i < N; i++)
        L.w[i] = 0.1f * dcz_rng_normal(&r);
    size_t nk;
    dcz_status st = dcz_prune_layer_to_sparsity(&L, 0.7, NULL, &nk);
    REQUIRE(st == DCZ_OK && nk == N - 1400, "pruned");
    memcpy(orig, L.w, sizeof(float) * N);
    size_t j = 0;
    float minabs = INFINITY;
    for (size_t i = 0; i < N; i++)
        if (L.mask[i]) {
            kept[j++] = L.w[i];
            if (fabsf(L.w[i]) < minabs)
                minabs = fabsf(L.w[i]);
        }
    REQUIRE(j == nk, "kept count");

    float want[8];
    dcz_kmeans_info info;
    st = dcz_kmeans_1d(kept, nk, 8, DCZ_KM_LINEAR, 100, 3, want, ka, &info);
    REQUIRE(st == DCZ_OK, "direct k-means");
    dcz_quant_layer_report rep;
    st = dcz_quantize_layer(&L, 3, DCZ_KM_LINEAR, 100, 3, &rep);
    REQUIRE(st == DCZ_OK, "%s", dcz_status_str(st));
    REQUIRE(L.k == 8 && L.codebook && L.assign, "codebook set");
    CHECK(memcmp(L.codebook, want, sizeof want) == 0, "codebook = k-means of kept only");
    /* clustering the pruned zeros too would give another codebook, with a
     * centroid on the 1400 zeros */
    float with_zeros[8];
    st = dcz_kmeans_1d(orig, N, 8, DCZ_KM_LINEAR, 100, 3, with_zeros, NULL, NULL);
    REQUIRE(st == DCZ_OK, "k-means with zeros");
    CHECK(memcmp(L.codebook, with_zeros, sizeof want) != 0, "zeros change the codebook");
    int zero_centroid = 0;
    for (int c = 0; c < 8; c++) {
        zero_centroid |= fabsf(with_zeros[c]) < 0.01f * minabs;
        CHECK(fabsf(L.codebook[c]) >= 0.01f * minabs, "centroid %d = %g at zero", c,
              L.codebook[c]);
    }
    CHECK(zero_centroid, "the test would catch zeros clustered");
    double sse = 0.0;
    j = 0;
    for (size_t i = 0; i < N; i++) {
        if (!L.mask[i]) {
            CHECK(L.w[i] == 0.0f && L.assign[i] == 0, "pruned %zu", i);
            continue;
        }
        CHECK(L.assign[i] == ka[j], "assign %zu", i);
        CHECK(L.w[i] == L.codebook[L.assign[i]], "w = codebook[assign] at %zu", i);
        double d = (double)orig[i] - L.w[i];
        sse += d * d;
        j++;
    }
    CHECK(rep.k == 8 && rep.bits == 3 && rep.kept == nk && rep.weights == N, "report");
    CHECK(fabs(rep.rms_error - sqrt(sse / nk)) < 1e-12, "rms %g", rep.rms_error);
    CHECK(strcmp(rep.name, "fc1") == 0, "name");

    /* re-quantizing replaces the codebook (no leak under ASan) */
    st = dcz_quantize_layer(&L, 1, DCZ_KM_DENSITY, 10, 3, NULL);
    CHECK(st == DCZ_OK && L.k == 2, "requantize");
    CHECK(dcz_quantize_layer(&L, 0, DCZ_KM_LINEAR, 10, 3, NULL) == DCZ_ERR_ARG, "bits 0");
    CHECK(dcz_quantize_layer(&L, 9, DCZ_KM_LINEAR, 10, 3, NULL) == DCZ_ERR_ARG, "bits 9");
    CHECK(L.k == 2, "unchanged after errors");

    /* all pruned: a codebook of zeros, every weight 0 */
    memset(L.mask, 0, N);
    st = dcz_quantize_layer(&L, 2, DCZ_KM_LINEAR, 10, 3, &rep);
    CHECK(st == DCZ_OK && rep.kept == 0 && rep.rms_error == 0.0, "all pruned");
    free(L.w);
    free(L.b);
    free(L.mask);
    free(L.codebook);
    free(L.assign);
    free(orig);
    free(kept);
    free(ka);
}

/* ---- fine-tuning on Gaussian blobs ---------------------------------------- */

enum { DIM = 16, CLASSES = 4 };

/* The same centres for every split. */
static const synth_blobs blobs = { DIM, CLASSES, 4321, 0.3f, 0.4f, 0.15f };

/* Mean cross-entropy of net on d (the net ends in a softmax). */
static double mean_loss(dcz_net *net, const dcz_dataset *d)
{
    float p[CLASSES];
    double s = 0.0;
    for (size_t i = 0; i < d->n; i++) {
        if (dcz_net_forward(net, d->x + i * DIM, 1, p) != DCZ_OK)
            return INFINITY;
        s -= log(p[d->y[i]] > 1e-30f ? p[d->y[i]] : 1e-30f);
    }
    return s / d->n;
}

static void check_shared(const dcz_net *net, const char *when)
{
    for (int l = 0; l < net->nlayers; l++) {
        const dcz_tlayer *L = &net->layers[l];
        if (L->op != DCZ_OP_DENSE || !L->codebook)
            continue;
        size_t n = (size_t)L->in * L->out, bad = 0;
        for (size_t i = 0; i < n; i++) {
            int keep = !L->mask || L->mask[i];
            bad += keep ? L->w[i] != L->codebook[L->assign[i]] : L->w[i] != 0.0f;
        }
        CHECK(bad == 0, "%s: %s has %zu weights off the codebook", when, L->name, bad);
    }
}

static void count_progress(void *ctx, size_t done, size_t total)
{
    size_t *p = ctx;
    if (done >= p[0] && done <= total)
        p[0] = done;
    else
        p[2] = 1;
    p[1] = total;
}

static void test_finetune(void)
{
    dcz_dataset train, test;
    int ok = synth_blobs_make(&train, 2000, 1, &blobs);
    ok = synth_blobs_make(&test, 1000, 2, &blobs) && ok;
    REQUIRE(ok, "blobs");
    dcz_net *net = NULL;
    char err[128];
    dcz_status st = dcz_net_create_arch("mlp:16-32-4", 3, &net, err, sizeof err);
    REQUIRE(st == DCZ_OK, "%s", err);
    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f, .batch = 32, .train_biases = 1, .train_weights = 1 };
    dcz_rng r;
    dcz_rng_seed(&r, 9);
    for (int e = 0; e < 6 && st == DCZ_OK; e++) {
        float loss;
        st = dcz_train_epoch(net, &train, &opt, &r, NULL, NULL, &loss);
    }
    REQUIRE(st == DCZ_OK, "training: %s", dcz_status_str(st));
    int *bits = calloc((size_t)net->nlayers, sizeof *bits);
    REQUIRE(bits, "alloc");
    for (int l = 0; l < net->nlayers; l++)
        if (net->layers[l].op == DCZ_OP_DENSE) {
            st = dcz_prune_layer_to_sparsity(&net->layers[l], 0.5, NULL, NULL);
            REQUIRE(st == DCZ_OK, "prune");
            bits[l] = 1;          /* two centroids: a large, recoverable loss */
        }

    /* clustering only */
    dcz_quant_plan plan;
    dcz_quant_plan_init(&plan);
    plan.bits = bits;
    plan.epochs = 0;
    dcz_quant_report rep;
    st = dcz_quantize_finetune(net, &plan, &train, &test, NULL, NULL, &rep);
    REQUIRE(st == DCZ_OK, "%s", dcz_status_str(st));
    CHECK(rep.nlayers == 2 && rep.nepochs == 0, "%d layers", rep.nlayers);
    CHECK(rep.acc_clustered == rep.acc_final, "no fine-tuning");
    for (int j = 0; j < rep.nlayers; j++)
        CHECK(rep.layers[j].k == 2 && rep.layers[j].bits == 1 && rep.layers[j].rms_error > 0.0
              && rep.layers[j].rms_final == rep.layers[j].rms_error, "layer %d", j);
    check_shared(net, "clustered");
    double acc_clustered = rep.acc_clustered;
    dcz_quant_report_free(&rep);

    /* remember assignments and codebooks, then fine-tune the centroids only */
    uint8_t *asg[8];
    float cb[8][2];
    int nq = 0;
    for (int l = 0; l < net->nlayers && nq < 8; l++) {
        const dcz_tlayer *L = &net->layers[l];
        if (L->op != DCZ_OP_DENSE)
            continue;
        size_t n = (size_t)L->in * L->out;
        asg[nq] = malloc(n);
        REQUIRE(asg[nq], "alloc");
        memcpy(asg[nq], L->assign, n);
        memcpy(cb[nq], L->codebook, sizeof cb[nq]);
        nq++;
    }
    double loss0 = mean_loss(net, &train);
    memset(bits, 0, sizeof *bits * (size_t)net->nlayers);
    plan.epochs = 4;
    plan.sgd.lr = 0.001f;
    plan.sgd.batch = 32;
    size_t prog[3] = { 0, 0, 0 };
    st = dcz_quantize_finetune(net, &plan, &train, &test, count_progress, prog, &rep);
    REQUIRE(st == DCZ_OK, "%s", dcz_status_str(st));
    double loss1 = mean_loss(net, &train);
    check_shared(net, "fine-tuned");
    CHECK(rep.nlayers == 0 && rep.nepochs == 4, "nothing re-clustered, 4 epochs");
    CHECK(rep.acc_initial == acc_clustered, "starts from the clustered net");
    CHECK(rep.acc_final >= rep.acc_initial - 0.002, "accuracy %.4f -> %.4f",
          rep.acc_initial, rep.acc_final);
    CHECK(loss1 < loss0, "training loss %.5f -> %.5f", loss0, loss1);
    CHECK(rep.epochs[0].lr == 0.001f && rep.epochs[3].lr < 0.001f, "cosine lr %g %g",
          rep.epochs[0].lr, rep.epochs[3].lr);
    size_t per_epoch = (2000 + 31) / 32;
    CHECK(prog[0] == 4 * per_epoch && prog[1] == 4 * per_epoch && !prog[2],
          "progress %zu/%zu", prog[0], prog[1]);
    int moved = 0;
    nq = 0;
    for (int l = 0; l < net->nlayers; l++) {
        const dcz_tlayer *L = &net->layers[l];
        if (L->op != DCZ_OP_DENSE)
            continue;
        size_t n = (size_t)L->in * L->out;
        CHECK(L->k == 2 && memcmp(asg[nq], L->assign, n) == 0, "%s assignments fixed",
              L->name);
        moved += memcmp(cb[nq], L->codebook, sizeof cb[nq]) != 0;
        free(asg[nq]);
        nq++;
    }
    CHECK(moved > 0, "centroids moved");
    dcz_quant_report_free(&rep);
    dcz_quant_report_free(NULL);

    /* the whole stage in one call from float weights, and argument errors */
    dcz_net *net2 = NULL;
    st = dcz_net_create_arch("mlp:16-32-4", 3, &net2, err, sizeof err);
    REQUIRE(st == DCZ_OK, "%s", err);
    for (int l = 0; l < net2->nlayers; l++)
        bits[l] = net2->layers[l].op == DCZ_OP_DENSE ? 4 : 0;
    bits[0] = 9;
    CHECK(dcz_quantize_finetune(net2, &plan, &train, NULL, NULL, NULL, &rep) ==
          DCZ_ERR_ARG, "bits 9");
    bits[0] = 4;
    plan.sgd.batch = 0;
    CHECK(dcz_quantize_finetune(net2, &plan, &train, NULL, NULL, NULL, &rep) ==
          DCZ_ERR_ARG, "batch 0");
    plan.sgd.batch = 64;
    plan.epochs = 1;
    st = dcz_quantize_finetune(net2, &plan, &train, &test, NULL, NULL, &rep);
    CHECK(st == DCZ_OK && rep.nlayers == 2, "one call: %s", dcz_status_str(st));
    check_shared(net2, "one call");
    for (int j = 0; j < rep.nlayers; j++)
        CHECK(rep.layers[j].k == 16 && rep.layers[j].kept == rep.layers[j].weights &&
              rep.layers[j].rms_final > 0.0, "layer %d report", j);
    dcz_quant_report_free(&rep);

    free(bits);
    dcz_net_free(net);
    dcz_net_free(net2);
    dcz_dataset_free(&train);
    dcz_dataset_free(&test);
}

int main(void)
{
    RUN(test_linear_init_exact);
    RUN(test_kmeans_invariants);
    RUN(test_density_init);
    RUN(test_random_init);
    RUN(test_edge_sizes);
    RUN(test_large);
    RUN(test_layer_pruned_not_clustered);
    RUN(test_finetune);
    return check_summary();
}
