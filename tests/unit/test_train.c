/* test_train.c: tests of the retraining engine (train/): the backward pass
 * against finite differences computed in double, masks and codebooks kept
 * through training, convergence on a separable problem, determinism,
 * architecture parsing, validation, forward probabilities, learning-rate
 * schedules and the random number generator.
 *
 * Run by `make test` (build/tests/test_train); takes a few seconds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "train/train.h"

/* ---- helpers ------------------------------------------------------------- */

/* REQUIRE evaluates its condition twice: calls go through this instead. */
#define REQUIRE_OK(call, ...) do { \
    dcz_status req_st_ = (call); \
    REQUIRE(req_st_ == DCZ_OK, __VA_ARGS__); \
} while (0)

/* Two Gaussian blobs in d dimensions, centred at -sep and +sep on every axis,
 * unit variance; classes alternate. */
static int make_blobs(dcz_dataset *ds, size_t n, int d, float sep, uint64_t seed)
{
    memset(ds, 0, sizeof *ds);
    ds->x = malloc(n * (size_t)d * sizeof(float));   /* (n, d) */
    ds->y = malloc(n);                               /* (n) */
    if (!ds->x || !ds->y) { dcz_dataset_free(ds); return 0; }
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        ds->y[i] = (uint8_t)(i & 1);
        float c = ds->y[i] ? sep : -sep;
        for (int j = 0; j < d; j++) ds->x[i * (size_t)d + (size_t)j] = c + dcz_rng_normal(&r);
    }
    ds->n = n;
    ds->c = 1;
    ds->h = 1;
    ds->w = (uint32_t)d;
    ds->classes = 2;
    return 1;
}

static dcz_tlayer *layer_named(dcz_net *net, const char *name)
{
    for (int i = 0; i < net->nlayers; i++)
        if (strcmp(net->layers[i].name, name) == 0) return &net->layers[i];
    return NULL;
}

static uint8_t *random_mask(size_t n, float keep, dcz_rng *r)
{
    uint8_t *m = malloc(n);
    if (!m) return NULL;
    for (size_t i = 0; i < n; i++) m[i] = dcz_rng_uniform(r) < keep;
    return m;
}

/* Gives layer l a k-entry codebook, linear between min and max weight, each
 * weight assigned to its nearest centroid (what quantize/ will do). */
static int add_codebook(dcz_tlayer *l, int k)
{
    size_t nw = (size_t)l->in * (size_t)l->out;
    float lo = l->w[0], hi = l->w[0];
    for (size_t i = 1; i < nw; i++) {
        if (l->w[i] < lo) lo = l->w[i];
        if (l->w[i] > hi) hi = l->w[i];
    }
    l->k = k;
    l->codebook = malloc((size_t)k * sizeof(float));
    l->assign = malloc(nw);
    if (!l->codebook || !l->assign) return 0;
    for (int c = 0; c < k; c++) l->codebook[c] = lo + (hi - lo) * (float)c / (float)(k - 1);
    for (size_t i = 0; i < nw; i++) {
        int best = 0;
        for (int c = 1; c < k; c++)
            if (fabsf(l->w[i] - l->codebook[c]) < fabsf(l->w[i] - l->codebook[best])) best = c;
        l->assign[i] = (uint8_t)best;
    }
    return 1;
}

/* ---- a double-precision reference of the loss ----------------------------- */

/* Parameters of the net in double, so finite differences are accurate. */
typedef struct ref_net {
    const dcz_net *net;
    double *w[8], *b[8];   /* per layer: (out, in), (out); NULL for non-dense */
} ref_net;

static void ref_init(ref_net *r, const dcz_net *net)
{
    memset(r, 0, sizeof *r);
    r->net = net;
    for (int i = 0; i < net->nlayers && i < 8; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (l->kind != DCZ_TL_DENSE) continue;
        size_t nw = (size_t)l->in * (size_t)l->out;
        r->w[i] = malloc(nw * sizeof(double));
        r->b[i] = malloc((size_t)l->out * sizeof(double));
        for (size_t j = 0; j < nw; j++) r->w[i][j] = l->w[j];
        for (int j = 0; j < l->out; j++) r->b[i][j] = l->b[j];
    }
}

static void ref_free(ref_net *r)
{
    for (int i = 0; i < 8; i++) { free(r->w[i]); free(r->b[i]); }
}

/* Mean softmax cross-entropy of the batch, all in double. */
static double ref_loss(const ref_net *r, const float *x, const uint8_t *y, int batch)
{
    const dcz_net *net = r->net;
    double cur[64], nxt[64];
    double total = 0;
    for (int s = 0; s < batch; s++) {
        int dim = net->in_dim;
        for (int j = 0; j < dim; j++) cur[j] = x[(size_t)s * (size_t)dim + (size_t)j];
        for (int i = 0; i < net->nlayers; i++) {
            const dcz_tlayer *l = &net->layers[i];
            if (l->kind == DCZ_TL_DENSE) {
                for (int o = 0; o < l->out; o++) {
                    double a = r->b[i][o];
                    for (int q = 0; q < l->in; q++) a += r->w[i][(size_t)o * l->in + q] * cur[q];
                    nxt[o] = a;
                }
                memcpy(cur, nxt, (size_t)l->out * sizeof(double));
            } else if (l->kind == DCZ_TL_RELU) {
                for (int o = 0; o < l->out; o++) if (cur[o] < 0) cur[o] = 0;
            }
            dim = l->out;
        }
        double m = cur[0];
        for (int j = 1; j < dim; j++) if (cur[j] > m) m = cur[j];
        double sum = 0;
        for (int j = 0; j < dim; j++) sum += exp(cur[j] - m);
        total += m + log(sum) - cur[y[s]];
    }
    return total / batch;
}

static double ref_diff(ref_net *r, double *p, const float *x, const uint8_t *y, int batch)
{
    const double h = 1e-5;
    double keep = *p;
    *p = keep + h;
    double lp = ref_loss(r, x, y, batch);
    *p = keep - h;
    double lm = ref_loss(r, x, y, batch);
    *p = keep;
    return (lp - lm) / (2 * h);
}

/* Tolerance of the float analytic gradient against the double numeric one. */
#define GRAD_ABS 1e-4
#define GRAD_REL 1e-3
#define GRAD_OK(a, n) (fabs((double)(a) - (n)) <= GRAD_ABS + GRAD_REL * fabs(n))

/* ---- gradients ------------------------------------------------------------ */

static void test_gradcheck(void)
{
    char err[256];
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:6-7-5-3", 11, &net, err, sizeof err), "%s", err);
    dcz_rng r;
    dcz_rng_seed(&r, 5);
    for (int i = 0; i < net->nlayers; i++)
        if (net->layers[i].kind == DCZ_TL_DENSE)
            for (int j = 0; j < net->layers[i].out; j++)
                net->layers[i].b[j] = 0.3f * dcz_rng_normal(&r);
    enum { B = 5 };
    float x[B * 6];
    uint8_t y[B];
    for (int i = 0; i < B * 6; i++) x[i] = dcz_rng_normal(&r);
    for (int i = 0; i < B; i++) y[i] = (uint8_t)dcz_rng_below(&r, 3);

    float loss = 0;
    REQUIRE_OK(dcz_net_grad(net, x, y, B, &loss), "grad failed");
    ref_net ref;
    ref_init(&ref, net);
    CHECK(fabs(loss - ref_loss(&ref, x, y, B)) < 1e-5, "loss %g vs reference %g",
          loss, ref_loss(&ref, x, y, B));
    int bad = 0, checked = 0;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (l->kind != DCZ_TL_DENSE) continue;
        for (int j = 0; j < l->in * l->out; j++, checked++) {
            double n = ref_diff(&ref, &ref.w[i][j], x, y, B);
            if (!GRAD_OK(l->gw[j], n) && bad++ < 5)
                CHECK(0, "%s gw[%d] = %.7g, numeric %.7g", l->name, j, l->gw[j], n);
        }
        for (int j = 0; j < l->out; j++, checked++) {
            double n = ref_diff(&ref, &ref.b[i][j], x, y, B);
            if (!GRAD_OK(l->gb[j], n) && bad++ < 5)
                CHECK(0, "%s gb[%d] = %.7g, numeric %.7g", l->name, j, l->gb[j], n);
        }
    }
    CHECK(bad == 0, "%d of %d gradients off (tolerance %g + %g relative)",
          bad, checked, GRAD_ABS, GRAD_REL);
    CHECK(checked == 6 * 7 + 7 + 7 * 5 + 5 + 5 * 3 + 3, "checked %d parameters", checked);

    uint8_t ybad[B] = { 0, 1, 3, 0, 0 };
    CHECK(dcz_net_grad(net, x, ybad, B, &loss) == DCZ_ERR_DATA, "label 3 of 3 classes accepted");
    ref_free(&ref);
    dcz_net_free(net);
}

/* Masked layer and codebook layer: masked gradients are 0, the centroid
 * gradient is the sum of its weights' gradients and matches the numeric
 * derivative of the loss by the centroid. */
static void test_gradcheck_codebook(void)
{
    char err[256];
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:6-8-4", 21, &net, err, sizeof err), "%s", err);
    dcz_tlayer *fc1 = layer_named(net, "fc1"), *fc2 = layer_named(net, "fc2");
    REQUIRE(fc1 && fc2, "layers missing");
    dcz_rng r;
    dcz_rng_seed(&r, 9);
    fc1->mask = random_mask(48, 0.7f, &r);
    fc2->mask = random_mask(32, 0.6f, &r);
    int ok = fc1->mask && fc2->mask && add_codebook(fc1, 5);
    REQUIRE(ok, "alloc");
    dcz_net_apply_constraints(net);
    REQUIRE_OK(dcz_net_validate(net), "validate");

    enum { B = 6 };
    float x[B * 6];
    uint8_t y[B];
    for (int i = 0; i < B * 6; i++) x[i] = dcz_rng_normal(&r);
    for (int i = 0; i < B; i++) y[i] = (uint8_t)dcz_rng_below(&r, 4);
    REQUIRE_OK(dcz_net_grad(net, x, y, B, NULL), "grad");
    REQUIRE(fc1->gcb != NULL, "no codebook gradient");

    for (int j = 0; j < 32; j++)
        if (!fc2->mask[j]) CHECK(fc2->gw[j] == 0.0f, "masked fc2 gw[%d] = %g", j, fc2->gw[j]);
    for (int j = 0; j < 48; j++)
        if (!fc1->mask[j]) CHECK(fc1->gw[j] == 0.0f, "masked fc1 gw[%d] = %g", j, fc1->gw[j]);

    ref_net ref;
    ref_init(&ref, net);
    int fc1_index = (int)(fc1 - net->layers);
    for (int c = 0; c < fc1->k; c++) {
        double sum = 0;
        for (int j = 0; j < 48; j++)
            if (fc1->mask[j] && fc1->assign[j] == c) sum += fc1->gw[j];
        CHECK(fabs(fc1->gcb[c] - sum) <= 1e-6 * (1 + fabs(sum)),
              "gcb[%d] = %.8g, sum of gw %.8g", c, fc1->gcb[c], sum);
        /* numeric: move every kept weight of cluster c together */
        const double h = 1e-5;
        double l2[2];
        for (int s = 0; s < 2; s++) {
            for (int j = 0; j < 48; j++)
                if (fc1->mask[j] && fc1->assign[j] == c)
                    ref.w[fc1_index][j] = (double)fc1->codebook[c] + (s ? -h : h);
            l2[s] = ref_loss(&ref, x, y, B);
            for (int j = 0; j < 48; j++)
                if (fc1->mask[j] && fc1->assign[j] == c) ref.w[fc1_index][j] = fc1->codebook[c];
        }
        double n = (l2[0] - l2[1]) / (2 * h);
        CHECK(GRAD_OK(fc1->gcb[c], n), "gcb[%d] = %.7g, numeric %.7g", c, fc1->gcb[c], n);
    }
    for (int j = 0; j < 32; j++) {
        if (!fc2->mask[j]) continue;
        double n = ref_diff(&ref, &ref.w[fc1_index + 2][j], x, y, B);
        CHECK(GRAD_OK(fc2->gw[j], n), "fc2 gw[%d] = %.7g, numeric %.7g", j, fc2->gw[j], n);
    }
    ref_free(&ref);
    dcz_net_free(net);
}

/* ---- training --------------------------------------------------------------- */

static void test_masks_stay_zero(void)
{
    char err[256];
    dcz_net *net = NULL;
    dcz_dataset ds;
    int ok = make_blobs(&ds, 600, 8, 1.0f, 3);
    REQUIRE(ok, "alloc");
    REQUIRE_OK(dcz_net_create_arch("mlp:8-16-12-2", 4, &net, err, sizeof err), "%s", err);
    dcz_rng r;
    dcz_rng_seed(&r, 17);
    const char *names[] = { "fc1", "fc2", "fc3" };
    float *before[3];
    for (int i = 0; i < 3; i++) {
        dcz_tlayer *l = layer_named(net, names[i]);
        size_t nw = (size_t)l->in * (size_t)l->out;
        l->mask = random_mask(nw, 0.5f, &r);
        before[i] = malloc(nw * sizeof(float));
        memcpy(before[i], l->w, nw * sizeof(float));
    }
    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-3f, .batch = 32,
                    .train_biases = 1, .train_weights = 1 };
    for (int e = 0; e < 4; e++) {
        float loss;
        CHECK(dcz_train_epoch(net, &ds, &opt, &r, NULL, NULL, &loss) == DCZ_OK, "epoch %d", e);
    }
    for (int i = 0; i < 3; i++) {
        dcz_tlayer *l = layer_named(net, names[i]);
        size_t nw = (size_t)l->in * (size_t)l->out, nonzero_v = 0, moved = 0, kept = 0;
        REQUIRE(l->vw != NULL, "%s has no momentum", names[i]);
        for (size_t j = 0; j < nw; j++) {
            if (l->mask[j]) {
                kept++;
                moved += l->w[j] != before[i][j];
                continue;
            }
            uint32_t bits;
            memcpy(&bits, &l->w[j], 4);
            nonzero_v += l->vw[j] != 0.0f;
            if (bits != 0) CHECK(0, "%s pruned w[%zu] = %g", names[i], j, l->w[j]);
        }
        CHECK(nonzero_v == 0, "%s: %zu pruned weights with momentum", names[i], nonzero_v);
        CHECK(moved == kept, "%s: only %zu of %zu kept weights trained", names[i], moved, kept);
        free(before[i]);
    }
    dcz_net_free(net);
    dcz_dataset_free(&ds);
}

static void test_codebook_training(void)
{
    char err[256];
    dcz_net *net = NULL;
    dcz_dataset ds;
    int ok = make_blobs(&ds, 600, 8, 1.0f, 8);
    REQUIRE(ok, "alloc");
    REQUIRE_OK(dcz_net_create_arch("mlp:8-16-2", 6, &net, err, sizeof err), "%s", err);
    dcz_tlayer *fc1 = layer_named(net, "fc1");
    dcz_rng r;
    dcz_rng_seed(&r, 23);
    fc1->mask = random_mask(128, 0.75f, &r);
    ok = fc1->mask && add_codebook(fc1, 4);
    REQUIRE(ok, "alloc");
    uint8_t assign0[128];
    float cb0[4];
    memcpy(assign0, fc1->assign, sizeof assign0);
    memcpy(cb0, fc1->codebook, sizeof cb0);
    dcz_sgd opt = { .lr = 0.02f, .momentum = 0.9f, .weight_decay = 5e-4f, .batch = 25,
                    .train_biases = 1, .train_weights = 1 };
    for (int e = 0; e < 3; e++)
        CHECK(dcz_train_epoch(net, &ds, &opt, &r, NULL, NULL, NULL) == DCZ_OK, "epoch %d", e);
    CHECK(memcmp(assign0, fc1->assign, sizeof assign0) == 0, "assignments changed");
    int moved = 0;
    for (int c = 0; c < 4; c++) moved += fc1->codebook[c] != cb0[c];
    CHECK(moved == 4, "only %d of 4 centroids moved", moved);
    int bad = 0;
    for (int j = 0; j < 128; j++) {
        float want = fc1->mask[j] ? fc1->codebook[fc1->assign[j]] : 0.0f;
        if (memcmp(&fc1->w[j], &want, 4) != 0 && bad++ < 5)
            CHECK(0, "w[%d] = %g, want %g", j, fc1->w[j], want);
    }
    CHECK(bad == 0, "%d weights off their centroid", bad);
    CHECK(fc1->vcb != NULL && fc1->vw == NULL, "codebook layer keeps centroid momentum only");
    double acc = 0;
    CHECK(dcz_net_evaluate(net, &ds, &acc) == DCZ_OK && acc > 0.9, "accuracy %g", acc);

    /* biases only: weights and centroids stay */
    memcpy(cb0, fc1->codebook, sizeof cb0);
    opt.train_weights = 0;
    CHECK(dcz_train_epoch(net, &ds, &opt, &r, NULL, NULL, NULL) == DCZ_OK, "bias epoch");
    CHECK(memcmp(cb0, fc1->codebook, sizeof cb0) == 0, "centroids moved with train_weights = 0");
    dcz_net_free(net);
    dcz_dataset_free(&ds);
}

static size_t progress_calls, progress_last;
static void count_progress(void *ctx, size_t done, size_t total)
{
    (void)ctx;
    (void)total;
    progress_calls++;
    progress_last = done;
}

static void test_sgd_blobs(void)
{
    char err[256];
    dcz_net *net = NULL;
    dcz_dataset tr, te;
    int ok = make_blobs(&tr, 1000, 8, 0.7f, 101) && make_blobs(&te, 1000, 8, 0.7f, 202);
    REQUIRE(ok, "alloc");
    REQUIRE_OK(dcz_net_create_arch("mlp:8-16-2", 1, &net, err, sizeof err), "%s", err);
    double acc0 = 0, acc = 0;
    CHECK(dcz_net_evaluate(net, &te, &acc0) == DCZ_OK, "evaluate");
    dcz_rng r;
    dcz_rng_seed(&r, 1);
    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f, .batch = 32,
                    .train_biases = 1, .train_weights = 1 };
    float first = 0, last = 0;
    for (int e = 0; e < 10; e++) {
        progress_calls = 0;
        REQUIRE_OK(dcz_train_epoch(net, &tr, &opt, &r, count_progress, NULL, &last),
                "epoch %d", e);
        if (e == 0) first = last;
    }
    CHECK(progress_calls == 32 && progress_last == 1000, "progress %zu calls, last %zu",
          progress_calls, progress_last);
    CHECK(last < first && last < 0.15f, "loss %g after 10 epochs (first %g)", last, first);
    CHECK(dcz_net_evaluate(net, &te, &acc) == DCZ_OK, "evaluate");
    CHECK(acc > 0.95, "test accuracy %g (before training %g)", acc, acc0);

    /* data that does not fit the net */
    te.w = 7;
    CHECK(dcz_net_evaluate(net, &te, &acc) == DCZ_ERR_SHAPE, "7 features accepted by 8-input net");
    te.w = 8;
    te.y[3] = 2;
    CHECK(dcz_net_evaluate(net, &te, &acc) == DCZ_ERR_SHAPE, "label 2 accepted by 2-class net");
    opt.batch = 0;
    CHECK(dcz_train_epoch(net, &tr, &opt, &r, NULL, NULL, NULL) == DCZ_ERR_ARG, "batch 0");
    dcz_net_free(net);
    dcz_dataset_free(&tr);
    dcz_dataset_free(&te);
}

/* Trains a fresh net; returns it (NULL on failure). */
static dcz_net *train_run(uint64_t net_seed, uint64_t shuffle_seed, const dcz_dataset *ds)
{
    dcz_net *net = NULL;
    if (dcz_net_create_arch("mlp:8-32-16-2", net_seed, &net, NULL, 0) != DCZ_OK) return NULL;
    dcz_rng r;
    dcz_rng_seed(&r, shuffle_seed);
    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .batch = 16,
                    .train_biases = 1, .train_weights = 1 };
    for (int e = 0; e < 2; e++)
        if (dcz_train_epoch(net, ds, &opt, &r, NULL, NULL, NULL) != DCZ_OK) {
            dcz_net_free(net);
            return NULL;
        }
    return net;
}

static int same_params(const dcz_net *a, const dcz_net *b)
{
    if (a->nlayers != b->nlayers) return 0;
    for (int i = 0; i < a->nlayers; i++) {
        const dcz_tlayer *la = &a->layers[i], *lb = &b->layers[i];
        if (la->kind != DCZ_TL_DENSE) continue;
        size_t nw = (size_t)la->in * (size_t)la->out;
        if (memcmp(la->w, lb->w, nw * sizeof(float)) != 0) return 0;
        if (memcmp(la->b, lb->b, (size_t)la->out * sizeof(float)) != 0) return 0;
    }
    return 1;
}

static void test_determinism(void)
{
    dcz_dataset ds;
    int ok = make_blobs(&ds, 500, 8, 0.5f, 77);
    REQUIRE(ok, "alloc");
    dcz_net *a = train_run(1, 2, &ds), *b = train_run(1, 2, &ds);
    dcz_net *c = train_run(3, 2, &ds), *d = train_run(1, 4, &ds);
    REQUIRE(a && b && c && d, "training failed");
    CHECK(same_params(a, b), "same seeds gave different weights");
    CHECK(!same_params(a, c), "different init seed gave the same weights");
    CHECK(!same_params(a, d), "different shuffle seed gave the same weights");
    dcz_net_free(a);
    dcz_net_free(b);
    dcz_net_free(c);
    dcz_net_free(d);
    dcz_dataset_free(&ds);
}

/* ---- network structure -------------------------------------------------------- */

static void test_arch(void)
{
    char err[256];
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("lenet300", 42, &net, err, sizeof err), "%s", err);
    CHECK(dcz_net_param_count(net) == 266610, "lenet300 has %zu parameters",
          dcz_net_param_count(net));
    CHECK(net->in_dim == 784 && net->classes == 10, "in %d classes %d", net->in_dim, net->classes);
    static const char *names[] = { "fc1", "relu1", "fc2", "relu2", "fc3", "prob" };
    static const dcz_tlayer_kind kinds[] = { DCZ_TL_DENSE, DCZ_TL_RELU, DCZ_TL_DENSE,
                                            DCZ_TL_RELU, DCZ_TL_DENSE, DCZ_TL_SOFTMAX };
    REQUIRE(net->nlayers == 6, "%d layers", net->nlayers);
    for (int i = 0; i < 6; i++)
        CHECK(strcmp(net->layers[i].name, names[i]) == 0 && net->layers[i].kind == kinds[i],
              "layer %d is %s", i, net->layers[i].name);
    /* He-normal: sd of fc1 near sqrt(2 / 784), biases zero */
    double s = 0, s2 = 0;
    size_t nw = 784 * 300;
    for (size_t j = 0; j < nw; j++) { s += net->layers[0].w[j]; s2 += (double)net->layers[0].w[j] * net->layers[0].w[j]; }
    double sd = sqrt(s2 / nw - (s / nw) * (s / nw));
    CHECK(fabs(sd / sqrt(2.0 / 784) - 1) < 0.02, "fc1 sd %g", sd);
    CHECK(net->layers[2].b[5] == 0.0f, "bias not zero");

    dcz_net *same = NULL, *other = NULL;
    REQUIRE_OK(dcz_net_create_arch("lenet300", 42, &same, err, sizeof err), "%s", err);
    REQUIRE_OK(dcz_net_create_arch("lenet300", 43, &other, err, sizeof err), "%s", err);
    CHECK(same_params(net, same), "same seed, different weights");
    CHECK(!same_params(net, other), "different seeds, same weights");
    dcz_net_free(same);
    dcz_net_free(other);
    dcz_net_free(net);

    net = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:784-500-300-10", 1, &net, err, sizeof err), "%s", err);
    CHECK(net->nlayers == 6 && net->in_dim == 784 && net->classes == 10, "mlp shape");
    CHECK(dcz_net_param_count(net) == 784 * 500 + 500 + 500 * 300 + 300 + 300 * 10 + 10, "count");
    dcz_net_free(net);
    net = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:3-2", 1, &net, err, sizeof err), "%s", err);
    CHECK(net->nlayers == 2 && strcmp(net->layers[0].name, "fc1") == 0 &&
          strcmp(net->layers[1].name, "prob") == 0, "mlp:3-2 layers");
    dcz_net_free(net);

    static const char *bad[] = { "mlp:", "mlp:784", "mlp:784-x-10", "foo", "mlp:784--10",
                                 "mlp:784-10-", "mlp:0-10", "mlp:65537-10", "mlp: 784-10",
                                 "mlp:-784-10", "mlp:784-10x", "lenet300 ", "mlp:99999999999999999999-1", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        net = (dcz_net *)1;
        err[0] = '\0';
        CHECK(dcz_net_create_arch(bad[i], 1, &net, err, sizeof err) == DCZ_ERR_ARG,
              "\"%s\" accepted", bad[i]);
        CHECK(net == NULL && err[0] != '\0', "\"%s\": out %p, message \"%s\"", bad[i], (void *)net, err);
    }
    CHECK(dcz_net_create_arch(NULL, 1, &net, NULL, 0) == DCZ_ERR_ARG, "NULL arch");
    dcz_net_free(NULL);
}

static void test_validate(void)
{
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_alloc(3, &net), "alloc");
    dcz_tlayer *l = net->layers;
    CHECK(l[0].w == NULL && l[1].kind == 0 && net->act == NULL, "alloc not zeroed");
    CHECK(dcz_net_validate(net) != DCZ_OK, "empty net accepted");
    l[0] = (dcz_tlayer){ .kind = DCZ_TL_DENSE, .name = "fc1", .in = 3, .out = 4 };
    l[1] = (dcz_tlayer){ .kind = DCZ_TL_RELU, .name = "relu1", .in = 4, .out = 4 };
    l[2] = (dcz_tlayer){ .kind = DCZ_TL_DENSE, .name = "fc2", .in = 4, .out = 2 };
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "dense without weights accepted");
    for (int i = 0; i < 3; i += 2) {
        l[i].w = calloc((size_t)l[i].in * (size_t)l[i].out, sizeof(float));
        l[i].b = calloc((size_t)l[i].out, sizeof(float));
    }
    REQUIRE_OK(dcz_net_validate(net), "good net rejected");
    CHECK(net->in_dim == 3 && net->classes == 2, "in %d classes %d", net->in_dim, net->classes);
    l[1].out = 5;
    CHECK(dcz_net_validate(net) == DCZ_ERR_SHAPE, "relu in != out accepted");
    l[1].out = 4;
    l[2].in = 5;
    CHECK(dcz_net_validate(net) == DCZ_ERR_SHAPE, "broken chain accepted");
    l[2].in = 4;
    l[1].kind = DCZ_TL_SOFTMAX;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "softmax in the middle accepted");
    l[1].kind = (dcz_tlayer_kind)99;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "unknown kind accepted");
    l[1].kind = DCZ_TL_RELU;
    l[2].k = 4;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "k without codebook accepted");
    l[2].codebook = calloc(4, sizeof(float));
    l[2].assign = calloc(8, 1);
    REQUIRE_OK(dcz_net_validate(net), "codebook rejected");
    l[2].assign[5] = 4;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "assignment 4 of k = 4 accepted");
    l[2].mask = calloc(8, 1);
    for (int j = 0; j < 8; j++) l[2].mask[j] = j != 5;
    CHECK(dcz_net_validate(net) == DCZ_OK, "pruned weight's assignment should not matter");
    l[2].k = 257;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "k = 257 accepted");
    l[2].k = 4;
    dcz_net *none = (dcz_net *)1;
    CHECK(dcz_net_alloc(0, &none) == DCZ_ERR_ARG && none == NULL, "alloc(0)");
    dcz_net_free(net);
}

static void test_forward(void)
{
    char err[256];
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:5-9-4", 3, &net, err, sizeof err), "%s", err);
    enum { N = 2500 };
    float *x = malloc(N * 5 * sizeof(float)), *p = malloc(N * 4 * sizeof(float));
    REQUIRE(x && p, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 8);
    for (int i = 0; i < N * 5; i++) x[i] = 30.0f * dcz_rng_normal(&r);   /* large logits */
    REQUIRE_OK(dcz_net_forward(net, x, N, p), "forward");
    int bad = 0;
    for (int i = 0; i < N; i++) {
        double s = 0;
        for (int j = 0; j < 4; j++) {
            if (!(p[i * 4 + j] >= 0.0f && p[i * 4 + j] <= 1.0f)) bad++;
            s += p[i * 4 + j];
        }
        if (fabs(s - 1) > 1e-5) bad++;
    }
    CHECK(bad == 0, "%d bad probabilities", bad);
    /* one sample at a time gives the same answer as the chunked batch */
    float one[4];
    double maxd = 0;
    for (int i = 0; i < N; i += 97) {
        REQUIRE_OK(dcz_net_forward(net, x + i * 5, 1, one), "forward 1");
        for (int j = 0; j < 4; j++) maxd = fmax(maxd, fabs(one[j] - p[i * 4 + j]));
    }
    CHECK(maxd < 1e-5, "batch and single forward differ by %g", maxd);
    CHECK(dcz_net_forward(net, x, 0, p) == DCZ_OK, "batch 0");
    CHECK(dcz_net_forward(net, x, -1, p) == DCZ_ERR_ARG, "batch -1");

    /* masks and codebooks are re-applied */
    dcz_tlayer *fc1 = layer_named(net, "fc1");
    fc1->mask = calloc(45, 1);
    fc1->mask[7] = 1;
    fc1->w[3] = 1.0f;
    dcz_net_apply_constraints(net);
    CHECK(fc1->w[3] == 0.0f && fc1->w[7] != 0.0f, "mask not applied");
    free(x);
    free(p);
    dcz_net_free(net);
}

static void test_lr(void)
{
    CHECK(dcz_lr_at(NULL, 0.1f, 7, 30) == 0.1f, "NULL is const");
    CHECK(dcz_lr_at("const", 0.1f, 29, 30) == 0.1f, "const");
    CHECK(dcz_lr_at("step", 1.0f, 14, 30) == 1.0f, "step e14");
    CHECK(fabsf(dcz_lr_at("step", 1.0f, 15, 30) - 0.1f) < 1e-7f, "step e15");
    CHECK(fabsf(dcz_lr_at("step", 1.0f, 22, 30) - 0.1f) < 1e-7f, "step e22");
    CHECK(fabsf(dcz_lr_at("step", 1.0f, 23, 30) - 0.01f) < 1e-7f, "step e23");
    CHECK(dcz_lr_at("cosine", 0.2f, 0, 10) == 0.2f, "cosine start");
    CHECK(fabsf(dcz_lr_at("cosine", 0.2f, 5, 10) - 0.1f) < 1e-6f, "cosine middle");
    CHECK(dcz_lr_at("cosine", 0.2f, 9, 10) < 0.01f, "cosine end");
    CHECK(dcz_lr_check("cosine") == DCZ_OK && dcz_lr_check(NULL) == DCZ_OK, "known schedules");
    CHECK(dcz_lr_check("linear") == DCZ_ERR_ARG, "unknown schedule accepted");
}

static void test_rng(void)
{
    dcz_rng a, b;
    dcz_rng_seed(&a, 1234);
    dcz_rng_seed(&b, 1234);
    int same = 1;
    for (int i = 0; i < 100; i++) same &= dcz_rng_u64(&a) == dcz_rng_u64(&b);
    CHECK(same, "same seed, different sequence");
    dcz_rng_seed(&b, 1235);
    CHECK(dcz_rng_u64(&a) != dcz_rng_u64(&b), "seeds 1234 and 1235 agree");

    static const uint32_t ns[] = { 1, 2, 3, 7, 10, 1000, 0x80000001u, 0xffffffffu };
    int out_of_range = 0;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (int i = 0; i < 20000; i++) out_of_range += dcz_rng_below(&a, ns[k]) >= ns[k];
    CHECK(out_of_range == 0, "%d values out of range", out_of_range);
    int hist[7] = { 0 };
    for (int i = 0; i < 70000; i++) hist[dcz_rng_below(&a, 7)]++;
    for (int j = 0; j < 7; j++) CHECK(abs(hist[j] - 10000) < 500, "below(7) bucket %d: %d", j, hist[j]);

    double s = 0, mn = 1, mx = 0, ns2 = 0, nsum = 0;
    enum { N = 200000 };
    for (int i = 0; i < N; i++) {
        float u = dcz_rng_uniform(&a);
        s += u;
        mn = fmin(mn, u);
        mx = fmax(mx, u);
        float z = dcz_rng_normal(&a);
        nsum += z;
        ns2 += (double)z * z;
    }
    CHECK(fabs(s / N - 0.5) < 0.005, "uniform mean %g", s / N);
    CHECK(mn >= 0 && mx < 1, "uniform range [%g, %g]", mn, mx);
    CHECK(fabs(nsum / N) < 0.01 && fabs(ns2 / N - 1) < 0.02, "normal mean %g var %g",
          nsum / N, ns2 / N);
}

int main(void)
{
    RUN(test_gradcheck);
    RUN(test_gradcheck_codebook);
    RUN(test_masks_stay_zero);
    RUN(test_codebook_training);
    RUN(test_sgd_blobs);
    RUN(test_determinism);
    RUN(test_arch);
    RUN(test_validate);
    RUN(test_forward);
    RUN(test_lr);
    RUN(test_rng);
    return check_summary();
}
