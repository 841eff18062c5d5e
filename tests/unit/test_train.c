/* test_train.c: tests of the retraining engine (train/): the backward pass
 * against finite differences computed in double, masks and codebooks kept
 * through training, convergence on a separable problem, determinism,
 * architecture parsing, validation, forward probabilities, learning-rate
 * schedules and the random number generator; for convolutional networks, a
 * double-precision reference of every layer kind (the convolution as the
 * direct 7-loop sum) that the forward pass and finite differences of the
 * training loss are checked against, dropout, batch-norm statistics and
 * folding, masks and codebooks on conv weights, the lenet5 and cnn:
 * architectures and refused specs, learning and determinism.
 *
 * Run by `make test` (build/tests/test_train); takes a few seconds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcz.h"
#include "model/doc.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/model.h"
#include "tests/check.h"
#include "train/internal.h"
#include "tests/unit/doc_build.h"
#include "tests/unit/train_build.h"
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
        if (l->op != DCZ_OP_DENSE) continue;
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

/* The logits of one sample x (in_dim floats) into z (at most 64), in
 * double; returns how many. */
static int ref_logits(const ref_net *r, const float *x, double *z)
{
    const dcz_net *net = r->net;
    double nxt[64];
    int dim = net->in_dim;
    for (int j = 0; j < dim; j++) z[j] = x[j];
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (l->op == DCZ_OP_DENSE) {
            for (int o = 0; o < l->out; o++) {
                double a = r->b[i][o];
                for (int q = 0; q < l->in; q++) a += r->w[i][(size_t)o * l->in + q] * z[q];
                nxt[o] = a;
            }
            memcpy(z, nxt, (size_t)l->out * sizeof(double));
        } else if (l->op == DCZ_OP_RELU) {
            for (int o = 0; o < l->out; o++) if (z[o] < 0) z[o] = 0;
        }
        dim = l->out;
    }
    return dim;
}

/* log sum exp(z[j] / T), in double. */
static double ref_lse(const double *z, int n, double T)
{
    double m = z[0], sum = 0;
    for (int j = 1; j < n; j++) if (z[j] > m) m = z[j];
    for (int j = 0; j < n; j++) sum += exp((z[j] - m) / T);
    return m / T + log(sum);
}

/* Mean softmax cross-entropy of the batch, all in double. */
static double ref_loss(const ref_net *r, const float *x, const uint8_t *y, int batch)
{
    double total = 0, z[64];
    for (int s = 0; s < batch; s++) {
        const int n = ref_logits(r, x + (size_t)s * (size_t)r->net->in_dim, z);
        total += ref_lse(z, n, 1) - z[y[s]];
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
        if (net->layers[i].op == DCZ_OP_DENSE)
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
        if (l->op != DCZ_OP_DENSE) continue;
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

/* The mean distillation loss (dcz_sgd.teacher) of the batch in double:
 * (1 - a) CE + a T^2 KL(teacher_T || net_T). */
static double ref_distill_loss(const ref_net *r, const ref_net *teacher, const float *x, const uint8_t *y,
                               int batch, double a, double T)
{
    double total = 0, z[64], t[64];
    for (int s = 0; s < batch; s++) {
        const float *xs = x + (size_t)s * (size_t)r->net->in_dim;
        const int n = ref_logits(r, xs, z);
        ref_logits(teacher, xs, t);
        const double zl = ref_lse(z, n, T), tl = ref_lse(t, n, T);
        double kl = 0;
        for (int j = 0; j < n; j++) kl += exp(t[j] / T - tl) * ((t[j] / T - tl) - (z[j] / T - zl));
        total += (1 - a) * (ref_lse(z, n, 1) - z[y[s]]) + a * T * T * kl;
    }
    return total / batch;
}

/* The weights then the bias of every dense layer of net, in layer order,
 * into v (when not NULL); returns how many. */
static size_t dense_params(const dcz_net *net, float *v)
{
    size_t n = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (l->op != DCZ_OP_DENSE) continue;
        const size_t nw = (size_t)l->in * (size_t)l->out;
        if (v) memcpy(v + n, l->w, nw * sizeof *v);
        if (v) memcpy(v + n + nw, l->b, (size_t)l->out * sizeof *v);
        n += nw + (size_t)l->out;
    }
    return n;
}

/* Distillation: one full-batch step at rate 1 moves every parameter by
 * minus its gradient, which matches central differences of the distilled
 * loss in double; the epoch's loss is that loss; a teacher equal to the
 * net with distill 1 gives no gradient at all; a teacher of other classes,
 * the net as its own teacher and settings out of range are refused. */
static void test_distill(void)
{
    char err[256];
    dcz_net *net = NULL, *teacher = NULL, *twin = NULL, *wide = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:6-7-5-3", 11, &net, err, sizeof err), "%s", err);
    REQUIRE_OK(dcz_net_create_arch("mlp:6-9-3", 29, &teacher, err, sizeof err), "%s", err);
    REQUIRE_OK(dcz_net_create_arch("mlp:6-7-5-3", 11, &twin, err, sizeof err), "%s", err);
    REQUIRE_OK(dcz_net_create_arch("mlp:6-7-4", 3, &wide, err, sizeof err), "%s", err);
    enum { B = 6 };
    dcz_dataset ds;
    memset(&ds, 0, sizeof ds);
    ds.x = malloc(B * 6 * sizeof(float));
    ds.y = malloc(B);
    REQUIRE(ds.x && ds.y, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 8);
    for (int i = 0; i < B * 6; i++) ds.x[i] = 1.5f * dcz_rng_normal(&r);
    for (int i = 0; i < B; i++) ds.y[i] = (uint8_t)dcz_rng_below(&r, 3);
    ds.n = B;
    ds.c = ds.h = 1;
    ds.w = 6;
    ds.classes = 3;
    /* biases off zero: no pre-activation sits on a ReLU's kink */
    for (int i = 0; i < net->nlayers; i++)
        if (net->layers[i].op == DCZ_OP_DENSE)
            for (int j = 0; j < net->layers[i].out; j++) net->layers[i].b[j] = 0.3f * dcz_rng_normal(&r);
    ref_net ref, tref;
    ref_init(&ref, net);
    ref_init(&tref, teacher);
    const double a = 0.7, T = 3;
    dcz_sgd opt = { .lr = 1.0f, .batch = B, .train_biases = 1, .train_weights = 1, .teacher = teacher,
                    .distill = (float)a, .temperature = (float)T };
    const size_t np = dense_params(net, NULL);
    float *before = malloc(np * sizeof *before), *after = malloc(np * sizeof *after);
    REQUIRE(before && after, "alloc");
    dense_params(net, before);
    dcz_rng order;
    dcz_rng_seed(&order, 1);
    float loss = 0;
    REQUIRE_OK(dcz_train_epoch(net, &ds, &opt, &order, NULL, NULL, &loss), "distilled epoch");
    const double want = ref_distill_loss(&ref, &tref, ds.x, ds.y, B, a, T);
    CHECK(fabs(loss - want) < 1e-5 * (1 + fabs(want)), "loss %.7g, reference %.7g", loss, want);
    CHECK(fabs(want - ref_loss(&ref, ds.x, ds.y, B)) > 1e-3, "the teacher changed nothing in the loss");
    dense_params(net, after);
    int bad = 0, checked = 0;
    size_t at = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (l->op != DCZ_OP_DENSE) continue;
        for (int j = 0; j < l->in * l->out + l->out; j++, checked++, at++) {
            double *p = j < l->in * l->out ? &ref.w[i][j] : &ref.b[i][j - l->in * l->out];
            const double keep = *p, h = 1e-5;
            *p = keep + h;
            const double lp = ref_distill_loss(&ref, &tref, ds.x, ds.y, B, a, T);
            *p = keep - h;
            const double lm = ref_distill_loss(&ref, &tref, ds.x, ds.y, B, a, T);
            *p = keep;
            const double num = (lp - lm) / (2 * h), got = (double)before[at] - after[at];
            if (!GRAD_OK(got, num) && bad++ < 5) CHECK(0, "%s param %d: step %.7g, numeric gradient %.7g", l->name, j, got, num);
        }
    }
    CHECK(bad == 0, "%d of %d distilled gradients off", bad, checked);
    CHECK(checked == 6 * 7 + 7 + 7 * 5 + 5 + 5 * 3 + 3, "checked %d parameters", checked);

    /* taught by itself alone: nothing to learn */
    dense_params(twin, before);
    dcz_net *self = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:6-7-5-3", 11, &self, err, sizeof err), "%s", err);
    opt.teacher = self;
    opt.distill = 1.0f;
    REQUIRE_OK(dcz_train_epoch(twin, &ds, &opt, &order, NULL, NULL, &loss), "self-distilled epoch");
    dense_params(twin, after);
    float most = 0;
    for (size_t j = 0; j < np; j++)
        if (fabsf(after[j] - before[j]) > most) most = fabsf(after[j] - before[j]);
    CHECK(most < 1e-6f, "a teacher equal to the net moved a parameter by %g", most);
    CHECK(fabsf(loss) < 1e-5f, "a teacher equal to the net: loss %g", loss);

    opt.teacher = wide;
    CHECK(dcz_train_epoch(twin, &ds, &opt, &order, NULL, NULL, &loss) == DCZ_ERR_SHAPE, "a teacher of 4 classes taught 3");
    opt.teacher = twin;
    CHECK(dcz_train_epoch(twin, &ds, &opt, &order, NULL, NULL, &loss) == DCZ_ERR_ARG, "the net taught itself");
    opt.teacher = self;
    opt.distill = 1.5f;
    CHECK(dcz_train_epoch(twin, &ds, &opt, &order, NULL, NULL, &loss) == DCZ_ERR_ARG, "distill 1.5 accepted");
    opt.distill = 0.5f;
    opt.temperature = 0;
    CHECK(dcz_train_epoch(twin, &ds, &opt, &order, NULL, NULL, &loss) == DCZ_ERR_ARG, "temperature 0 accepted");
    CHECK(!dcz_sgd_valid(&opt), "dcz_sgd_valid took temperature 0");
    free(before);
    free(after);
    ref_free(&ref);
    ref_free(&tref);
    dcz_dataset_free(&ds);
    dcz_net_free(net);
    dcz_net_free(teacher);
    dcz_net_free(twin);
    dcz_net_free(wide);
    dcz_net_free(self);
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
        if (la->op != DCZ_OP_DENSE) continue;
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

/* Warmup: an epoch with ramp_from 0, ramp_to 1 over 3 batches steps at
 * lr/3, 2lr/3 and lr: the same weights, bit for bit, as those steps taken
 * one by one in the epoch's order; a factor outside [0, 1] is refused. */
static void test_warmup(void)
{
    dcz_dataset ds;
    REQUIRE(make_blobs(&ds, 48, 8, 0.5f, 9), "alloc");
    dcz_net *a = NULL, *b = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:8-16-2", 5, &a, NULL, 0), "net a");
    REQUIRE_OK(dcz_net_create_arch("mlp:8-16-2", 5, &b, NULL, 0), "net b");
    dcz_sgd opt = { .lr = 0.3f, .momentum = 0.9f, .weight_decay = 1e-4f, .batch = 16,
                    .train_biases = 1, .train_weights = 1, .ramp_from = 0, .ramp_to = 1 };
    dcz_rng r;
    dcz_rng_seed(&r, 6);
    REQUIRE_OK(dcz_train_epoch(a, &ds, &opt, &r, NULL, NULL, NULL), "epoch");
    /* the epoch's order, then its steps one by one */
    uint32_t perm[48];
    for (uint32_t i = 0; i < 48; i++) perm[i] = i;
    dcz_rng_seed(&r, 6);
    for (uint32_t i = 47; i > 0; i--) {
        uint32_t j = dcz_rng_below(&r, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    float x[16 * 8];
    uint8_t y[16];
    dcz_sgd step = opt;
    step.ramp_to = 0;
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 16; i++) {
            memcpy(x + i * 8, ds.x + (size_t)perm[k * 16 + i] * 8, 8 * sizeof(float));
            y[i] = ds.y[perm[k * 16 + i]];
        }
        step.lr = (float)((double)opt.lr * ((double)(k + 1) / 3.0));
        REQUIRE_OK(dcz_net_grad(b, x, y, 16, NULL), "grad %d", k);
        REQUIRE_OK(dcz_net_step(b, &step), "step %d", k);
    }
    CHECK(same_params(a, b), "the warmup epoch is not its steps at lr/3, 2lr/3, lr");
    /* and not the steps at a constant lr */
    dcz_net *c = NULL;
    REQUIRE_OK(dcz_net_create_arch("mlp:8-16-2", 5, &c, NULL, 0), "net c");
    opt.ramp_to = 0;
    dcz_rng_seed(&r, 6);
    REQUIRE_OK(dcz_train_epoch(c, &ds, &opt, &r, NULL, NULL, NULL), "epoch at lr");
    CHECK(!same_params(a, c), "the warmup changed nothing");
    opt.ramp_to = 1.5f;
    CHECK(dcz_train_epoch(c, &ds, &opt, &r, NULL, NULL, NULL) == DCZ_ERR_ARG, "ramp to 1.5 accepted");
    opt.ramp_to = 1;
    opt.ramp_from = -0.5f;
    CHECK(dcz_train_epoch(c, &ds, &opt, &r, NULL, NULL, NULL) == DCZ_ERR_ARG, "ramp from -0.5 accepted");
    dcz_net_free(a);
    dcz_net_free(b);
    dcz_net_free(c);
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
    static const dcz_op kinds[] = { DCZ_OP_DENSE, DCZ_OP_RELU, DCZ_OP_DENSE,
                                            DCZ_OP_RELU, DCZ_OP_DENSE, DCZ_OP_SOFTMAX };
    REQUIRE(net->nlayers == 6, "%d layers", net->nlayers);
    for (int i = 0; i < 6; i++)
        CHECK(strcmp(net->layers[i].name, names[i]) == 0 && net->layers[i].op == kinds[i],
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
    CHECK(l[0].w == NULL && l[1].op == 0 && net->act == NULL, "alloc not zeroed");
    CHECK(dcz_net_validate(net) != DCZ_OK, "empty net accepted");
    l[0] = (dcz_tlayer){ .op = DCZ_OP_DENSE, .name = "fc1", .in = 3, .out = 4 };
    l[1] = (dcz_tlayer){ .op = DCZ_OP_RELU, .name = "relu1", .in = 4, .out = 4 };
    l[2] = (dcz_tlayer){ .op = DCZ_OP_DENSE, .name = "fc2", .in = 4, .out = 2 };
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
    l[1].op = DCZ_OP_SOFTMAX;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "softmax in the middle accepted");
    l[1].op = (dcz_op)99;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "unknown kind accepted");
    l[1].op = DCZ_OP_RELU;
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

/* ---- convolutional networks ------------------------------------------------------ */


/* Parameters of one layer in double (DENSE, CONV, BATCHNORM). */
typedef struct refp { double *w, *b; } refp;

typedef struct ref2 {
    const dcz_net *net;
    refp p[32];
} ref2;

static void ref2_init(ref2 *r, const dcz_net *net)
{
    memset(r, 0, sizeof *r);
    r->net = net;
    for (int i = 0; i < net->nlayers && i < 32; i++) {
        const dcz_tlayer *l = &net->layers[i];
        size_t nw = dcz_tlayer_nweights(l), nb = dcz_tlayer_nbias(l);
        if (nb == 0) continue;
        r->p[i].w = malloc(nw * sizeof(double));
        r->p[i].b = malloc(nb * sizeof(double));
        for (size_t j = 0; j < nw; j++) r->p[i].w[j] = l->w[j];
        for (size_t j = 0; j < nb; j++) r->p[i].b[j] = l->b[j];
    }
}

static void ref2_free(ref2 *r)
{
    for (int i = 0; i < 32; i++) { free(r->p[i].w); free(r->p[i].b); }
}

/* One layer over a batch of B samples, in training mode (batch norm by batch
 * statistics, dropout the identity: tests use rate 0 or inference). Direct
 * loops: the convolution is the 7-loop definition. */
static void ref_layer(const dcz_net *net, const dcz_tlayer *l, const refp *p, double *const *t,
                      double *y, int B)
{
    const int C = l->in_c, H = l->in_h, W = l->in_w, OC = l->out_c, OH = l->out_h, OW = l->out_w;
    const double *x = t[l->tin[0]];
    const int G = l->op == DCZ_OP_CONV2D && l->group > 1 ? l->group : 1, Cg = C / G;
    switch (l->op) {
    case DCZ_OP_DENSE:
        for (int n = 0; n < B; n++)
            for (int o = 0; o < l->out; o++) {
                double a = p->b[o];
                for (int i = 0; i < l->in; i++) a += p->w[(size_t)o * l->in + i] * x[(size_t)n * l->in + i];
                y[(size_t)n * l->out + o] = a;
            }
        break;
    case DCZ_OP_CONV2D:
        for (int n = 0; n < B; n++)
            for (int o = 0; o < OC; o++)
                for (int oh = 0; oh < OH; oh++)
                    for (int ow = 0; ow < OW; ow++) {
                        double a = p->b[o];
                        const int c0 = o / (OC / G) * Cg;   /* the group's first input channel */
                        for (int c = 0; c < Cg; c++)
                            for (int i = 0; i < l->kh; i++)
                                for (int j = 0; j < l->kw; j++) {
                                    int ih = oh * l->sh - l->ph + i, iw = ow * l->sw - l->pw + j;
                                    if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                    a += p->w[(((size_t)o * Cg + c) * l->kh + i) * l->kw + j] *
                                         x[(((size_t)n * C + c0 + c) * H + ih) * W + iw];
                                }
                        y[(((size_t)n * OC + o) * OH + oh) * OW + ow] = a;
                    }
        break;
    case DCZ_OP_MAXPOOL:
    case DCZ_OP_AVGPOOL:
        for (int n = 0; n < B; n++)
            for (int c = 0; c < C; c++)
                for (int oh = 0; oh < OH; oh++)
                    for (int ow = 0; ow < OW; ow++) {
                        double m = -INFINITY, s = 0;
                        int cnt = 0;
                        for (int i = 0; i < l->kh; i++)
                            for (int j = 0; j < l->kw; j++) {
                                int ih = oh * l->sh - l->ph + i, iw = ow * l->sw - l->pw + j;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                double v = x[(((size_t)n * C + c) * H + ih) * W + iw];
                                m = v > m ? v : m;
                                s += v;
                                cnt++;
                            }
                        double div = l->count_include_pad ? l->kh * l->kw : cnt;
                        y[(((size_t)n * C + c) * OH + oh) * OW + ow] =
                            l->op == DCZ_OP_MAXPOOL ? m : s / div;
                    }
        break;
    case DCZ_OP_GLOBAL_AVGPOOL:
        for (int n = 0; n < B; n++)
            for (int c = 0; c < C; c++) {
                double s = 0;
                for (int j = 0; j < H * W; j++) s += x[((size_t)n * C + c) * H * W + j];
                y[(size_t)n * C + c] = s / (H * W);
            }
        break;
    case DCZ_OP_BATCHNORM: {
        size_t hw = (size_t)H * W, M = (size_t)B * hw;
        for (int c = 0; c < C; c++) {
            double s = 0, v = 0;
            for (int n = 0; n < B; n++)
                for (size_t j = 0; j < hw; j++) s += x[((size_t)n * C + c) * hw + j];
            double mu = s / M;
            for (int n = 0; n < B; n++)
                for (size_t j = 0; j < hw; j++) {
                    double d = x[((size_t)n * C + c) * hw + j] - mu;
                    v += d * d;
                }
            v /= M;
            for (int n = 0; n < B; n++)
                for (size_t j = 0; j < hw; j++) {
                    size_t o = ((size_t)n * C + c) * hw + j;
                    y[o] = p->w[c] * (x[o] - mu) / sqrt(v + l->eps) + p->b[c];
                }
        }
        break;
    }
    case DCZ_OP_RELU:
        for (size_t j = 0; j < (size_t)B * l->in; j++) y[j] = x[j] > 0 ? x[j] : 0;
        break;
    case DCZ_OP_ADD:
        for (size_t j = 0; j < (size_t)B * l->in; j++) y[j] = x[j] + t[l->tin[1]][j];
        break;
    case DCZ_OP_MUL: {
        const size_t f = net->twidth[l->tin[1]], plane = (size_t)l->in / f;
        for (size_t j = 0; j < (size_t)B * l->in; j++) y[j] = x[j] * t[l->tin[1]][j / plane];
        break;
    }
    case DCZ_OP_CONCAT:
        for (int n = 0; n < B; n++)
            for (uint32_t k = 0; k < l->nin; k++) {
                const size_t w = net->twidth[l->tin[k]];
                memcpy(y, t[l->tin[k]] + (size_t)n * w, w * sizeof(double));
                y += w;
            }
        break;
    case DCZ_OP_CLIP: case DCZ_OP_LEAKY_RELU: case DCZ_OP_SIGMOID: case DCZ_OP_TANH:
    case DCZ_OP_HARD_SIGMOID: case DCZ_OP_HARD_SWISH: case DCZ_OP_SILU: {
        const double a = l->param[0], c = l->param[1];
        for (size_t j = 0; j < (size_t)B * l->in; j++) {
            const double v = x[j];
            y[j] = l->op == DCZ_OP_CLIP ? fmin(fmax(v, a), c)
                 : l->op == DCZ_OP_LEAKY_RELU ? (v > 0 ? v : a * v)
                 : l->op == DCZ_OP_SIGMOID ? 1 / (1 + exp(-v))
                 : l->op == DCZ_OP_TANH ? tanh(v)
                 : l->op == DCZ_OP_HARD_SIGMOID ? fmax(0, fmin(1, a * v + c))
                 : l->op == DCZ_OP_SILU ? v / (1 + exp(-v))
                 : v * fmax(0, fmin(1, v / 6 + 0.5));
        }
        break;
    }
    case DCZ_OP_CHANNEL_SHUFFLE: {   /* (g, C / g) planes transposed to (C / g, g) */
        const size_t hw = (size_t)H * W, g = (size_t)l->group, per = (size_t)C / g;
        for (int n = 0; n < B; n++)
            for (size_t i = 0; i < g; i++)
                for (size_t j = 0; j < per; j++)
                    memcpy(y + ((size_t)n * C + j * g + i) * hw, x + ((size_t)n * C + i * per + j) * hw,
                           hw * sizeof(double));
        break;
    }
    case DCZ_OP_SLICE:
        for (int n = 0; n < B; n++)
            memcpy(y + (size_t)n * OC * H * W, x + ((size_t)n * C + l->start) * H * W,
                   (size_t)OC * H * W * sizeof(double));
        break;
    default:   /* FLATTEN, SOFTMAX (fused with the loss), DROPOUT */
        memcpy(y, x, (size_t)B * l->in * sizeof(double));
        break;
    }
}

/* Runs the reference on x; returns the last activations (B, classes), to be
 * freed by the caller. */
static double *ref2_run(const ref2 *r, const float *x, int B)
{
    const dcz_net *net = r->net;
    double **t = calloc((size_t)net->nlayers + 1, sizeof *t);   /* every tensor kept */
    t[0] = malloc((size_t)B * net->in_dim * sizeof(double));
    for (size_t j = 0; j < (size_t)B * net->in_dim; j++) t[0][j] = x[j];
    for (int i = 0; i < net->nlayers; i++) {
        t[i + 1] = malloc((size_t)B * net->layers[i].out * sizeof(double));
        ref_layer(net, &net->layers[i], &r->p[i], t, t[i + 1], B);
    }
    double *out = t[net->nlayers];
    for (int i = 0; i < net->nlayers; i++) free(t[i]);
    free(t);
    return out;
}

static double ref2_loss(const ref2 *r, const float *x, const uint8_t *y, int B)
{
    int k = r->net->classes;
    double *z = ref2_run(r, x, B), total = 0;
    for (int s = 0; s < B; s++) {
        const double *zr = z + (size_t)s * k;
        double m = zr[0], sum = 0;
        for (int j = 1; j < k; j++) if (zr[j] > m) m = zr[j];
        for (int j = 0; j < k; j++) sum += exp(zr[j] - m);
        total += m + log(sum) - zr[y[s]];
    }
    free(z);
    return total / B;
}

static double ref2_diff(ref2 *r, double *p, const float *x, const uint8_t *y, int B)
{
    const double h = 1e-5;
    double keep = *p;
    *p = keep + h;
    double lp = ref2_loss(r, x, y, B);
    *p = keep - h;
    double lm = ref2_loss(r, x, y, B);
    *p = keep;
    return (lp - lm) / (2 * h);
}

/* Random inputs and labels for net. */
static void random_batch(const dcz_net *net, int B, float *x, uint8_t *y, uint64_t seed)
{
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (int i = 0; i < B * net->in_dim; i++) x[i] = dcz_rng_normal(&r);
    for (int i = 0; i < B; i++) y[i] = (uint8_t)dcz_rng_below(&r, (uint32_t)net->classes);
}

/* Compares the gradients of dcz_net_grad with central differences of the
 * reference for up to `limit` entries of every parameter tensor (masked and
 * shared weights skipped). Returns the number of mismatches. */
static int gradcheck_net(dcz_net *net, int B, int limit, uint64_t seed, const char *what)
{
    float *x = malloc((size_t)B * net->in_dim * sizeof(float));
    uint8_t *y = malloc((size_t)B);
    random_batch(net, B, x, y, seed);
    float loss = 0;
    int bad = 0, checked = 0;
    if (dcz_net_grad(net, x, y, B, &loss) != DCZ_OK) {
        CHECK(0, "%s: grad failed", what);
        free(x);
        free(y);
        return 1;
    }
    ref2 ref;
    ref2_init(&ref, net);
    double rl = ref2_loss(&ref, x, y, B);
    CHECK(fabs(loss - rl) < 1e-4 * (1 + fabs(rl)), "%s: loss %g vs reference %g", what, loss, rl);
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        size_t nb = dcz_tlayer_nbias(l);
        if (nb == 0) continue;
        for (int t = 0; t < 2; t++) {
            size_t n = t == 0 ? dcz_tlayer_nweights(l) : nb;
            size_t step = n > (size_t)limit ? n / (size_t)limit : 1;
            for (size_t j = (size_t)i % step; j < n; j += step) {
                if (t == 0 && ((l->mask && !l->mask[j]) || l->codebook)) continue;
                double num = ref2_diff(&ref, t == 0 ? &ref.p[i].w[j] : &ref.p[i].b[j], x, y, B);
                float an = t == 0 ? l->gw[j] : l->gb[j];
                checked++;
                if (!GRAD_OK(an, num) && bad++ < 5)
                    CHECK(0, "%s: %s %s[%zu] = %.7g, numeric %.7g", what, l->name,
                          t == 0 ? "gw" : "gb", j, an, num);
            }
        }
    }
    CHECK(bad == 0, "%s: %d of %d gradients off", what, bad, checked);
    CHECK(checked > 20, "%s: only %d gradients checked", what, checked);
    ref2_free(&ref);
    free(x);
    free(y);
    return bad;
}

/* The largest error, relative to 1 + |reference|, of the net's inference
 * outputs on B random samples (seed) against the double reference. */
static double forward_error(dcz_net *net, int B, uint64_t seed)
{
    float *x = malloc((size_t)B * net->in_dim * sizeof(float));
    float *out = malloc((size_t)B * net->classes * sizeof(float));
    uint8_t *y = malloc((size_t)B);
    random_batch(net, B, x, y, seed);
    double worst = INFINITY;
    if (dcz_net_forward(net, x, B, out) == DCZ_OK) {
        ref2 ref;
        ref2_init(&ref, net);
        double *want = ref2_run(&ref, x, B);
        worst = 0;
        for (size_t j = 0; j < (size_t)B * net->classes; j++)
            worst = fmax(worst, fabs(out[j] - want[j]) / (1 + fabs(want[j])));
        free(want);
        ref2_free(&ref);
    }
    free(x);
    free(out);
    free(y);
    return worst;
}

static void test_conv_forward_direct(void)
{
    static const struct { int c, h, w, oc, kh, kw, s, p, batch; } g[] = {
        { 3, 9, 8, 4, 3, 3, 1, 1, 3 },    /* same padding */
        { 2, 11, 7, 5, 5, 5, 2, 2, 2 },   /* stride 2, odd sizes */
        { 4, 6, 6, 3, 1, 1, 1, 0, 4 },    /* 1x1 */
        { 3, 10, 9, 2, 3, 2, 3, 1, 2 },   /* non-square kernel, stride 3 */
        { 1, 5, 5, 2, 5, 5, 1, 0, 1 },    /* output 1x1 */
        { 8, 40, 40, 16, 3, 3, 1, 1, 40 },/* many samples */
        { 2, 6, 300, 3, 3, 3, 1, 1, 2 },  /* rows of 300 columns */
        { 2, 5, 301, 3, 3, 3, 2, 1, 2 },  /* rows of 151 columns, stride 2 */
        /* Winograd's (3x3, stride 1, channels multiples of 16): */
        { 16, 9, 8, 16, 3, 3, 1, 1, 3 },  /* odd output rows */
        { 16, 7, 7, 32, 3, 3, 1, 0, 2 },  /* no padding, 5x5 outputs */
        { 32, 28, 28, 16, 3, 3, 1, 1, 2 },/* a sample's tiles in rounds */
        { 16, 5, 6, 16, 3, 3, 1, 2, 5 },  /* padding 2, several samples a round */
        { 48, 3, 3, 16, 3, 3, 1, 1, 7 },  /* 4 tiles a sample */
    };
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        dcz_tlayer protos[1] = { CONV(g[k].oc, g[k].kh, g[k].kw, g[k].s, g[k].p) };
        dcz_net *net = build_net(protos, 1, g[k].c, g[k].h, g[k].w, 30 + k);
        REQUIRE(net, "geometry %zu: build failed", k);
        const double worst = forward_error(net, g[k].batch, 90 + k);
        CHECK(worst < 1e-5, "geometry %zu (%dx%dx%d, %d filters %dx%d s%d p%d): error %g", k,
              g[k].c, g[k].h, g[k].w, g[k].oc, g[k].kh, g[k].kw, g[k].s, g[k].p, worst);
        /* the products read the scratch's rows by whole vectors */
        CHECK(net->work && ((uintptr_t)net->work & 63) == 0, "geometry %zu: scratch at %p", k,
              (void *)net->work);
        dcz_net_free(net);
    }
}

/* The largest error, relative to 1 + |reference|, of dx (batch, in) from
 * dy (batch, out) against the adjoint of l's convolution in doubles (its
 * groups: output o reads the inputs of its group, weights (out_c, in_c /
 * G, kh, kw)). */
static double input_grad_error(const dcz_tlayer *l, const float *dy, const float *dx, int batch)
{
    const int G = dcz_tlayer_groups(l), ig = l->in_c / G, og = l->out_c / G;
    double worst = 0;
    for (int n = 0; n < batch; n++)
        for (int i = 0; i < l->in_c; i++)
            for (int iy = 0; iy < l->in_h; iy++)
                for (int ix = 0; ix < l->in_w; ix++) {
                    double want = 0;
                    for (int o = (i / ig) * og; o < (i / ig + 1) * og; o++)
                        for (int r = 0; r < l->kh; r++)
                            for (int c = 0; c < l->kw; c++) {
                                const int oy = iy + l->ph - r, ox = ix + l->pw - c;
                                if (oy < 0 || oy >= l->out_h || ox < 0 || ox >= l->out_w) continue;
                                want += (double)l->w[((size_t)(o * ig + i % ig) * l->kh + r) * l->kw + c] *
                                        dy[(size_t)n * l->out + ((size_t)o * l->out_h + oy) * l->out_w + ox];
                            }
                    const double got = dx[(size_t)n * l->in + ((size_t)i * l->in_h + iy) * l->in_w + ix];
                    worst = fmax(worst, isnan(got) ? INFINITY : fabs(got - want) / (1 + fabs(want)));
                }
    return worst;
}

/* A pointwise convolution's input gradient is written from the product's
 * rows, each entry added to +0, into dx, which is not zeroed first
 * (conv.c, dx_copy_tile): against
 * the adjoint in doubles, every entry written (dx starts as NaN), over
 * planes a sample spans several tiles of (56 x 56 of 64 channels: tiles of
 * 14 rows), one tile (28 x 28) and a tile several samples share (14 x 14,
 * 7 x 7, 4 x 4), one and two groups, at one and three threads (each thread
 * its channels); and products that underflow to -0 give +0 there, as
 * col2im's adds to a zeroed dx do. */
static void test_conv_pointwise_dx(void)
{
    static const struct { int c, h, w, oc, groups, batch; } g[] = {
        { 64, 56, 56, 96, 1, 2 }, { 16, 28, 28, 96, 1, 2 }, { 16, 14, 14, 24, 1, 3 }, { 24, 7, 7, 32, 2, 5 },
        { 12, 4, 4, 8, 1, 9 },
    };
    for (size_t run = 0; run < 2 * (sizeof g / sizeof g[0]); run++) {
        const size_t k = run / 2;
        dcz_train_set_threads(run % 2 ? 3 : 1);   /* before the reserve: the scratch's slots */
        const dcz_tlayer proto = { .op = DCZ_OP_CONV2D, .out_c = g[k].oc, .kh = 1, .kw = 1, .sh = 1, .sw = 1,
                                   .group = g[k].groups };
        dcz_net *net = build_net(&proto, 1, g[k].c, g[k].h, g[k].w, 110 + k);
        REQUIRE(net, "geometry %zu: build failed", k);
        REQUIRE(dcz_net_reserve(net, g[k].batch, 1) == DCZ_OK, "geometry %zu: reserve", k);
        dcz_tlayer *l = &net->layers[0];
        const size_t nx = (size_t)g[k].batch * l->in, ny = (size_t)g[k].batch * l->out;
        float *x = malloc(nx * sizeof *x), *dy = malloc(ny * sizeof *dy), *dx = malloc(nx * sizeof *dx);
        REQUIRE(x && dy && dx, "alloc");
        dcz_rng r;
        dcz_rng_seed(&r, 120 + k);
        for (size_t i = 0; i < nx; i++) x[i] = dcz_rng_normal(&r);
        for (size_t i = 0; i < ny; i++) dy[i] = dcz_rng_normal(&r);
        for (size_t i = 0; i < nx; i++) dx[i] = NAN;
        l->gw = malloc(dcz_tlayer_nweights(l) * sizeof(float));
        l->gb = malloc((size_t)l->out_c * sizeof(float));
        REQUIRE(l->gw && l->gb, "alloc");
        dcz_conv_backward(l, x, dy, dx, g[k].batch, net->work, net->work_floats);
        const double err = input_grad_error(l, dy, dx, g[k].batch);
        CHECK(err < 1e-5, "geometry %zu (%d -> %d over %dx%d, %d groups, batch %d, %s): dx off the adjoint by %g", k,
              g[k].c, g[k].oc, g[k].h, g[k].w, g[k].groups, g[k].batch, run % 2 ? "3 threads" : "1 thread", err);
        /* products that underflow to -0 (the least negative subnormal
         * times weights under a half): +0 in dx, as col2im's adds to +0 give */
        for (size_t i = 0; i < ny; i++) dy[i] = -0x1p-149f;
        for (size_t i = 0; i < dcz_tlayer_nweights(l); i++) l->w[i] = 0.1f + 0.3f * dcz_rng_uniform(&r);
        dcz_conv_backward(l, x, dy, dx, g[k].batch, net->work, net->work_floats);
        size_t signed_zeros = 0;
        const float zero = 0.0f;
        for (size_t i = 0; i < nx; i++) signed_zeros += memcmp(&dx[i], &zero, sizeof zero) != 0;
        CHECK(signed_zeros == 0, "geometry %zu: %zu of dx's %zu entries not +0 from underflowing products", k,
              signed_zeros, nx);
        free(l->gw);
        free(l->gb);
        l->gw = l->gb = NULL;
        free(x);
        free(dy);
        free(dx);
        dcz_net_free(net);
    }
    dcz_train_set_threads(2);
}

/* Floats of a and b (n each) whose bits differ. */
static size_t bits_apart(const float *a, const float *b, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += memcmp(&a[i], &b[i], sizeof *a) != 0;
    return k;
}

/* Winograd's passes: taken by the layers they fit, the AVX-512 transforms
 * the same bits as the scalar reference, and the same outputs as
 * dcz_conv_forward and dcz_conv_backward give; the input's gradient
 * within the bound of the direct check of its adjoint. */
static void test_conv_winograd(void)
{
    static const struct { int c, h, w, oc, p, batch; } g[] = {
        { 16, 9, 8, 16, 1, 3 }, { 32, 28, 28, 48, 1, 2 }, { 16, 5, 6, 16, 2, 13 }, { 48, 3, 3, 32, 0, 7 },
    };
    /* stride 2, a 3x2 kernel, 12 channels out, 8 in, a 64-channel image of
     * 180 x 180 (past the scratch cap) */
    const dcz_tlayer other[] = { CONV(16, 3, 3, 2, 1), CONV(16, 3, 2, 1, 1), CONV(12, 3, 3, 1, 1),
                                 CONV(16, 3, 3, 1, 1), CONV(64, 3, 3, 1, 1) };
    const int other_c[] = { 16, 16, 16, 8, 64 }, other_hw[] = { 8, 8, 8, 8, 180 };
    for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
        dcz_net *net = build_net(&other[k], 1, other_c[k], other_hw[k], other_hw[k], 70 + k);
        REQUIRE(net, "layer %zu: build failed", k);
        CHECK(!dcz_wino_fits(&net->layers[0]), "layer %zu: Winograd fits", k);
        dcz_net_free(net);
    }
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        dcz_tlayer protos[1] = { CONV(g[k].oc, 3, 3, 1, g[k].p) };
        dcz_net *net = build_net(protos, 1, g[k].c, g[k].h, g[k].w, 50 + k);
        REQUIRE(net, "geometry %zu: build failed", k);
        REQUIRE(dcz_net_reserve(net, g[k].batch, 1) == DCZ_OK, "geometry %zu: reserve", k);
        const dcz_tlayer *l = &net->layers[0];
        CHECK(dcz_wino_fits(l), "geometry %zu: Winograd does not fit", k);
        const size_t nx = (size_t)g[k].batch * l->in, ny = (size_t)g[k].batch * l->out;
        float *x = malloc(nx * sizeof *x), *y = malloc(3 * ny * sizeof *y);
        dcz_rng r;
        dcz_rng_seed(&r, 60 + k);
        for (size_t i = 0; i < nx; i++) x[i] = dcz_rng_normal(&r);
        for (size_t i = 0; i < 3 * ny; i++) y[i] = NAN;
        CHECK(dcz_wino_forward_ref(l, x, y, g[k].batch, net->work, net->work_floats), "geometry %zu: ref", k);
        if (dcz_wino_vector()) {
            CHECK(dcz_wino_forward(l, x, y + ny, g[k].batch, net->work, net->work_floats), "geometry %zu", k);
            dcz_conv_forward(l, x, y + 2 * ny, g[k].batch, net->work, net->work_floats);
            const size_t apart = bits_apart(y, y + ny, ny), conv = bits_apart(y + ny, y + 2 * ny, ny);
            CHECK(apart == 0, "geometry %zu: %zu of %zu outputs not the reference's bits", k, apart, ny);
            CHECK(conv == 0, "geometry %zu: dcz_conv_forward differs at %zu outputs", k, conv);
        }
        size_t unset = 0;
        for (size_t i = 0; i < ny; i++) unset += isnan(y[i]);
        CHECK(unset == 0, "geometry %zu: %zu outputs not written", k, unset);
        CHECK(!dcz_wino_forward(l, x, y, g[k].batch, net->work, dcz_wino_work_floats(l) / 64),
              "geometry %zu: ran in a scratch too small", k);
        /* the input's gradient from dy = y's first ny floats */
        float *dx = malloc(3 * nx * sizeof *dx);
        for (size_t i = 0; i < 3 * nx; i++) dx[i] = NAN;
        CHECK(dcz_wino_input_grad_ref(l, y, dx, g[k].batch, net->work, net->work_floats), "geometry %zu: dx ref", k);
        CHECK(input_grad_error(l, y, dx, g[k].batch) < 1e-5, "geometry %zu: dx off the adjoint by %g", k,
              input_grad_error(l, y, dx, g[k].batch));
        if (dcz_wino_vector()) {
            CHECK(dcz_wino_input_grad(l, y, dx + nx, g[k].batch, net->work, net->work_floats), "geometry %zu: dx", k);
            dcz_tlayer *lw = &net->layers[0];   /* the weights' gradients land in scratch here */
            float *gw = lw->gw, *gb = lw->gb;
            lw->gw = malloc(dcz_tlayer_nweights(lw) * sizeof(float));
            lw->gb = malloc((size_t)lw->out_c * sizeof(float));
            dcz_conv_backward(lw, x, y, dx + 2 * nx, g[k].batch, net->work, net->work_floats);
            free(lw->gw);
            free(lw->gb);
            lw->gw = gw;
            lw->gb = gb;
            const size_t apart = bits_apart(dx, dx + nx, nx), conv = bits_apart(dx + nx, dx + 2 * nx, nx);
            CHECK(apart == 0, "geometry %zu: %zu of %zu of dx not the reference's bits", k, apart, nx);
            CHECK(conv == 0, "geometry %zu: dcz_conv_backward's dx differs at %zu", k, conv);
        }
        free(dx);
        free(x);
        free(y);
        dcz_net_free(net);
    }
}

/* Depthwise convolutions (groups = input channels) run directly, tap by
 * tap, not through im2col: forward against the 7-loop definition, and
 * gradients (weights, biases and, through a 1x1 convolution before it, the
 * input) against central differences, over strides 1 and 2, padding 0 to
 * 2, channel multipliers 1 to 3, windows 1 to 5 and odd planes. */
static void test_conv_depthwise(void)
{
    static const struct { int c, h, w, m, k, s, p, batch; } g[] = {
        { 4, 7, 7, 1, 3, 1, 1, 3 },   /* MobileNet's: same padding */
        { 3, 9, 6, 2, 3, 2, 1, 2 },   /* stride 2, multiplier 2 */
        { 5, 6, 5, 1, 3, 2, 0, 2 },   /* no padding, odd plane */
        { 2, 5, 5, 3, 5, 1, 2, 1 },   /* 5x5, multiplier 3 */
        { 6, 4, 4, 1, 1, 1, 0, 3 },   /* 1x1 window */
        { 3, 3, 8, 1, 3, 1, 1, 2 },   /* a window as tall as the plane */
    };
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        dcz_tlayer dw = CONV(g[k].c * g[k].m, g[k].k, g[k].k, g[k].s, g[k].p);
        dw.group = g[k].c;
        dcz_tlayer protos[] = { CONV(g[k].c, 1, 1, 1, 0), dw, SIMPLE(DCZ_OP_FLATTEN), FC(3) };
        dcz_net *net = build_net(protos + 1, 1, g[k].c, g[k].h, g[k].w, 40 + k);
        REQUIRE(net && net->layers[0].group == g[k].c, "geometry %zu: build failed", k);
        const int B = g[k].batch;
        const double worst = forward_error(net, B, 60 + k);
        CHECK(worst < 1e-5, "depthwise %zu (%dx%dx%d, x%d, %dx%d s%d p%d): error %g", k, g[k].c,
              g[k].h, g[k].w, g[k].m, g[k].k, g[k].k, g[k].s, g[k].p, worst);
        dcz_net_free(net);

        net = build_net(protos, 4, g[k].c, g[k].h, g[k].w, 50 + k);
        REQUIRE(net, "geometry %zu: build failed", k);
        char what[64];
        snprintf(what, sizeof what, "depthwise %zu", k);
        gradcheck_net(net, B, 60, 70 + k, what);
        dcz_net_free(net);
    }
}

/* A depthwise convolution's passes by planes or by lanes (AVX-512)
 * against its taps alone, bit for bit: outputs, weight and bias
 * gradients, input gradient; strides 1 and 2 (apart across and down),
 * padding 0 to 3, multipliers 1 to 3, windows 1x1 to 7x7 and 3x1, rows of
 * one to three vectors, rows of 4 to 7 outputs over up to 48 channels
 * (the lanes: at one thread a slot takes every chunk, whole and partial
 * ones, at three each its share), and geometries the planes leave to the
 * taps (a row past 128 columns, a window of 9 columns). Random inputs and
 * gradients, an infinite weight at a corner tap (where a tap reads
 * padding, its product must not be taken), a NaN among the inputs, and
 * NaN in the input gradient's buffers beforehand (every pixel must be
 * written); the backward pass once more without the input gradient (a
 * network's first layer), its weight and bias gradients the same. */
static void test_depthwise_planes(void)
{
    static const struct { int c, h, w, m, kh, kw, sh, sw, ph, pw, batch; } g[] = {
        { 3, 28, 28, 1, 3, 3, 1, 1, 1, 1, 2 }, { 2, 14, 14, 2, 3, 3, 2, 2, 1, 1, 2 },
        { 3, 9, 40, 1, 5, 5, 1, 1, 2, 2, 2 },  { 2, 7, 7, 3, 3, 3, 1, 1, 0, 0, 3 },
        { 2, 11, 33, 1, 7, 7, 2, 2, 3, 3, 1 }, { 2, 6, 17, 1, 3, 1, 1, 1, 1, 0, 2 },
        { 2, 8, 9, 1, 3, 3, 2, 1, 1, 1, 2 },   { 2, 9, 8, 1, 3, 3, 1, 2, 1, 1, 2 },
        { 2, 4, 140, 1, 3, 3, 1, 1, 1, 1, 1 }, { 2, 5, 12, 1, 9, 9, 1, 1, 4, 4, 1 },
        { 2, 16, 16, 1, 1, 1, 1, 1, 0, 0, 2 },
        /* rows of at most 7 columns, a multiplier of 1: the lane form, in
         * chunks of 32 channels (at one thread 40: 32 then 8, 48: 32
         * then 16) */
        { 40, 7, 7, 1, 3, 3, 2, 2, 1, 1, 2 },  { 48, 7, 7, 1, 3, 3, 1, 1, 1, 1, 3 },
        { 20, 7, 7, 1, 5, 5, 1, 1, 2, 2, 2 },  { 17, 4, 4, 1, 3, 3, 1, 1, 1, 1, 2 },
        { 33, 9, 6, 1, 3, 3, 2, 1, 0, 1, 2 },
    };
    for (size_t run = 0; run < 2 * (sizeof g / sizeof g[0]); run++) {
        const size_t k = run / 2;
        dcz_train_set_threads(run % 2 ? 3 : 1);   /* before the reserve: the scratch's slots */
        const dcz_tlayer proto = { .op = DCZ_OP_CONV2D, .out_c = g[k].c * g[k].m, .kh = g[k].kh, .kw = g[k].kw,
                                   .sh = g[k].sh, .sw = g[k].sw, .ph = g[k].ph, .pw = g[k].pw, .group = g[k].c };
        dcz_net *net = build_net(&proto, 1, g[k].c, g[k].h, g[k].w, 90 + k);
        REQUIRE(net, "geometry %zu: build failed", k);
        REQUIRE(dcz_net_reserve(net, g[k].batch, 1) == DCZ_OK, "geometry %zu: reserve", k);
        dcz_tlayer *l = &net->layers[0];
        const int B = g[k].batch;
        const size_t nx = (size_t)B * l->in, ny = (size_t)B * l->out, nw = dcz_tlayer_nweights(l);
        float *x = malloc(nx * sizeof *x), *dy = malloc(ny * sizeof *dy), *y = malloc(2 * ny * sizeof *y);
        float *dx = malloc(2 * nx * sizeof *dx), *gw = malloc(3 * nw * sizeof *gw);
        float *gb = malloc(3 * (size_t)l->out_c * sizeof *gb);
        REQUIRE(x && dy && y && dx && gw && gb, "alloc");
        dcz_rng r;
        dcz_rng_seed(&r, 100 + k);
        for (size_t i = 0; i < nx; i++) x[i] = dcz_rng_normal(&r);
        for (size_t i = 0; i < ny; i++) dy[i] = dcz_rng_normal(&r);
        for (size_t i = 0; i < 2 * nx; i++) dx[i] = NAN;   /* each pass writes all of it */
        l->w[(size_t)(l->out_c - 1) * g[k].kh * g[k].kw] = INFINITY;
        x[nx / 2 + 1] = NAN;
        float *lgw = l->gw, *lgb = l->gb;
        dcz_depthwise_forward_ref(l, x, y, B);
        dcz_conv_forward(l, x, y + ny, B, net->work, net->work_floats);
        l->gw = gw, l->gb = gb;
        dcz_depthwise_backward_ref(l, x, dy, dx, B);
        l->gw = gw + nw, l->gb = gb + l->out_c;
        dcz_conv_backward(l, x, dy, dx + nx, B, net->work, net->work_floats);
        l->gw = gw + 2 * nw, l->gb = gb + 2 * l->out_c;
        dcz_conv_backward(l, x, dy, NULL, B, net->work, net->work_floats);
        l->gw = lgw, l->gb = lgb;
        const size_t oy = bits_apart(y, y + ny, ny), ox = bits_apart(dx, dx + nx, nx);
        const size_t ow = bits_apart(gw, gw + nw, nw), ob = bits_apart(gb, gb + l->out_c, (size_t)l->out_c);
        const size_t ow2 = bits_apart(gw, gw + 2 * nw, nw), ob2 = bits_apart(gb, gb + 2 * l->out_c, (size_t)l->out_c);
        CHECK(oy + ox + ow + ob + ow2 + ob2 == 0, "geometry %zu at %d thread(s): outputs %zu of %zu, dx %zu of %zu, "
              "gw %zu of %zu, gb %zu (without dx: gw %zu, gb %zu) not the taps' bits", k, run % 2 ? 3 : 1, oy, ny, ox,
              nx, ow, nw, ob, ow2, ob2);
        free(x), free(dy), free(y), free(dx), free(gw), free(gb);
        dcz_net_free(net);
    }
    dcz_train_set_threads(2);
}

static void test_gradcheck_conv(void)
{
    /* stride 1 and 2, padding 0 and 1, odd sizes; flatten then dense */
    dcz_tlayer a[] = { CONV(3, 3, 3, 1, 0), SIMPLE(DCZ_OP_RELU), CONV(4, 2, 2, 2, 1),
                       SIMPLE(DCZ_OP_FLATTEN), FC(5), SIMPLE(DCZ_OP_SOFTMAX) };
    dcz_net *net = build_net(a, 6, 2, 7, 5, 1);
    REQUIRE(net, "build a");
    CHECK(net->layers[2].out_h == 3 && net->layers[2].out_w == 2, "conv s2 p1 shape %dx%d",
          net->layers[2].out_h, net->layers[2].out_w);
    gradcheck_net(net, 3, 60, 11, "conv s1p0 + s2p1");
    dcz_net_free(net);

    dcz_tlayer b[] = { CONV(3, 3, 3, 2, 1), CONV(2, 3, 1, 1, 0), SIMPLE(DCZ_OP_FLATTEN), FC(3) };
    net = build_net(b, 4, 3, 9, 6, 2);
    REQUIRE(net, "build b");
    gradcheck_net(net, 4, 60, 12, "conv s2p1 + 3x1");
    dcz_net_free(net);

    /* rows wider than the vector kernels keep masks for (128 columns), and
     * columns of a sample larger than a tile (bands of output rows): 12 x
     * 800, 3x3 to 3 at stride 1 (bands of 9 rows), then to 4 at stride 2
     * (400 columns) */
    dcz_tlayer c[] = { CONV(3, 3, 3, 1, 1), SIMPLE(DCZ_OP_RELU), CONV(4, 3, 3, 2, 1),
                       SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(3) };
    net = build_net(c, 5, 2, 12, 800, 3);
    REQUIRE(net, "build c");
    gradcheck_net(net, 2, 60, 17, "wide rows, bands");
    CHECK(forward_error(net, 2, 18) < 1e-5, "wide rows, bands: forward off the reference");
    dcz_net_free(net);

    /* output channels past the 16 x 16 blocks dY is transposed by: 20 (a
     * block and 4 more), then 2 groups of 16 (each group's dY^T read from
     * its offset) */
    dcz_tlayer d[] = { CONV(20, 3, 3, 1, 1), SIMPLE(DCZ_OP_RELU), CONV(32, 3, 3, 1, 1),
                       SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(3) };
    d[2].group = 2;
    net = build_net(d, 5, 4, 6, 7, 4);
    REQUIRE(net && net->layers[2].group == 2, "build d");
    gradcheck_net(net, 3, 60, 19, "20 channels, 2 groups of 16");
    CHECK(forward_error(net, 3, 20) < 1e-5, "20 channels, 2 groups of 16: forward off the reference");
    dcz_net_free(net);
}

/* Winograd's passes inside a network (16 channels, 3x3 at stride 1,
 * paddings 1, 0 and 2): the later layers' input gradients reach the
 * first's weights. */
static void test_gradcheck_winograd(void)
{
    dcz_tlayer a[] = { CONV(16, 3, 3, 1, 1), SIMPLE(DCZ_OP_RELU), CONV(16, 3, 3, 1, 0), SIMPLE(DCZ_OP_RELU),
                       CONV(16, 3, 3, 1, 2), SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(3) };
    dcz_net *net = build_net(a, 7, 16, 7, 6, 5);
    REQUIRE(net, "build");
    CHECK(dcz_wino_fits(&net->layers[0]) && dcz_wino_fits(&net->layers[2]) && dcz_wino_fits(&net->layers[4]),
          "the layers do not fit Winograd's");
    gradcheck_net(net, 3, 60, 21, "Winograd 16 channels");
    CHECK(forward_error(net, 3, 22) < 1e-5, "Winograd 16 channels: forward off the reference");
    dcz_net_free(net);
}

/* ---- graphs ------------------------------------------------------------------ */


/* (4, 6, 6): conv 3x3 to 8 -> CLIP [0, 6] -> depthwise 3x3 -> HARD_SWISH ->
 * 1x1 to 4 -> ADD the input (residual) -> gap -> dense 4 -> HARD_SIGMOID ->
 * MUL the sum per channel -> LEAKY_RELU -> CONCAT with the CLIP's output
 * (read again far below) -> 3x3 stride 2 in 2 groups -> SILU -> SIGMOID ->
 * TANH -> flatten -> dense 3 -> softmax. Tensors 0, 2 and 6 have two
 * readers. */
static dcz_net *graph_net(uint64_t seed)
{
    dcz_tlayer g[] = {
        CONV(8, 3, 3, 1, 1),
        { .op = DCZ_OP_CLIP, .param = { 0.0f, 6.0f } },
        { .op = DCZ_OP_CONV2D, .out_c = 8, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .group = 8 },
        SIMPLE(DCZ_OP_HARD_SWISH),
        CONV(4, 1, 1, 1, 0),
        { .op = DCZ_OP_ADD, READS2(5, 0) },
        SIMPLE(DCZ_OP_GLOBAL_AVGPOOL),
        FC(4),
        { .op = DCZ_OP_HARD_SIGMOID, .param = { 1.0f / 6, 0.5f } },
        { .op = DCZ_OP_MUL, READS2(6, 9) },
        { .op = DCZ_OP_LEAKY_RELU, .param = { 0.1f } },
        { .op = DCZ_OP_CONCAT, READS2(11, 2) },
        { .op = DCZ_OP_CONV2D, .out_c = 6, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .group = 2 },
        SIMPLE(DCZ_OP_SILU),
        SIMPLE(DCZ_OP_SIGMOID),
        SIMPLE(DCZ_OP_TANH),
        SIMPLE(DCZ_OP_FLATTEN),
        FC(3),
        SIMPLE(DCZ_OP_SOFTMAX),
    };
    return build_net(g, (int)(sizeof g / sizeof g[0]), 4, 6, 6, seed);
}

static void test_gradcheck_graph(void)
{
    dcz_net *net = graph_net(21);
    REQUIRE(net, "build");
    CHECK(net->layers[11].out_c == 0 && net->layers[11].out == 12 * 36, "concat of 4 + 8 channels: %d",
          net->layers[11].out);
    CHECK(net->layers[12].out_c == 6 && net->layers[12].out_h == 3, "grouped conv (6, %d, %d)",
          net->layers[12].out_h, net->layers[12].out_w);
    gradcheck_net(net, 3, 40, 31, "graph");
    /* a layer nobody reads, a forward reference, an input count the op refuses */
    dcz_tlayer keep = net->layers[9];
    net->layers[9].tin[0] = 5;                    /* the ADD's output: read by gap alone, fine */
    CHECK(dcz_net_validate(net) == DCZ_OK, "the add read once");
    net->layers[6].tin[0] = 0;                    /* now nothing reads the ADD */
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "a layer nobody reads");
    net->layers[6].tin[0] = 6;
    net->layers[9].tin[1] = 11;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "reads a later layer");
    net->layers[9] = keep;
    net->layers[9].nin = 1;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "mul of one input");
    net->layers[9] = keep;
    CHECK(dcz_net_validate(net) == DCZ_OK, "restored");
    dcz_net_free(net);
}

/* (4, 6, 6): conv 3x3 to 8 -> CHANNEL_SHUFFLE of 2 -> SLICE 0..2 and SLICE
 * 3..7 -> 1x1 conv of the second part to 3 -> CONCAT of the first part and
 * it (6 channels) -> CHANNEL_SHUFFLE of 3 -> SLICE 1..4 -> gap -> dense 3
 * -> softmax: the ShuffleNet unit's moves, with parts of unequal sizes. */
static dcz_net *shuffle_net(uint64_t seed)
{
    dcz_tlayer g[] = {
        CONV(8, 3, 3, 1, 1),
        { .op = DCZ_OP_CHANNEL_SHUFFLE, .group = 2 },
        { .op = DCZ_OP_SLICE, .start = 0, .out_c = 3, READS1(2) },
        { .op = DCZ_OP_SLICE, .start = 3, .out_c = 5, READS1(2) },
        CONV(3, 1, 1, 1, 0),
        { .op = DCZ_OP_CONCAT, READS2(3, 5) },
        { .op = DCZ_OP_CHANNEL_SHUFFLE, .group = 3 },
        { .op = DCZ_OP_SLICE, .start = 1, .out_c = 4 },
        SIMPLE(DCZ_OP_GLOBAL_AVGPOOL),
        FC(3),
        SIMPLE(DCZ_OP_SOFTMAX),
    };
    return build_net(g, (int)(sizeof g / sizeof g[0]), 4, 6, 6, seed);
}

static void test_gradcheck_shuffle(void)
{
    dcz_net *net = shuffle_net(23);
    REQUIRE(net, "build");
    CHECK(net->layers[2].out_c == 3 && net->layers[3].out_c == 5 && net->layers[5].out == 6 * 36 &&
          net->layers[7].out_c == 4 && net->layers[7].out_h == 6, "shapes of the parts");
    gradcheck_net(net, 3, 40, 33, "channel shuffle and slices");
    dcz_net_free(net);
}

/* The trained network and libdcz compute the same function: net written
 * to a document, loaded and run, and read back as the same network. */
static void matches_runtime(dcz_net *net, const char *what)
{
    dcz_layer_encoding enc[32];
    memset(enc, 0, sizeof enc);
    REQUIRE(dcz_net_store(net, enc) == DCZ_OK, "store");
    dcz_doc *d = net->doc;
    const int nout = net->layers[net->nlayers - 1].out;
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_model *m = NULL;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    enum { B = 3 };
    float x[B * 144], yn[B * 8], ym[B * 8];
    uint8_t lbl[B];
    REQUIRE(net->layers[0].in <= 144 && nout <= 8, "sizes");
    random_batch(net, B, x, lbl, 5);
    REQUIRE(dcz_net_forward(net, x, B, yn) == DCZ_OK && dcz_run(m, x, B, ym) == DCZ_OK, "run");
    double worst = 0;
    for (int i = 0; i < B * nout; i++) worst = fmax(worst, fabs(yn[i] - ym[i]));
    CHECK(worst < 1e-5, "%s: trainer and runtime differ by %g", what, worst);
    dcz_net *back = NULL;
    dcz_doc *r = NULL;
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK && dcz_net_open(r, &back) == DCZ_OK, "open");
    float yb[B * 8];
    REQUIRE(dcz_net_forward(back, x, B, yb) == DCZ_OK, "run back");
    CHECK(memcmp(yb, yn, (size_t)(B * nout) * sizeof *yb) == 0, "%s: the network read back computes the same bits",
          what);
    dcz_net_free(back);
    dcz_doc_free(r);
    dcz_close(m);
    free(buf);
}

static void test_shuffle_matches_runtime(void)
{
    dcz_net *net = shuffle_net(24);
    REQUIRE(net, "build");
    matches_runtime(net, "channel shuffle and slices");
    CHECK(net->doc->layers[1].attr[0] == 2 && net->doc->layers[3].attr[0] == 3 && net->doc->layers[3].attr[1] == 5,
          "stored attributes");
    dcz_net_free(net);
}

/* SILU's backward, dy (s + x s (1 - s)), s = sigmoid(x), on
 * pre-activations spread over both arms of the curve and its dip: dense
 * 5 -> 12 (weights x 4) -> SILU -> dense 3, every gradient of the first
 * layer passing through it; then its forward and backward alone against
 * the definition in double, out where e^x and e^-x overflow a float. */
static void test_gradcheck_silu(void)
{
    const dcz_tlayer g[] = { FC(12), SIMPLE(DCZ_OP_SILU), FC(3) };
    dcz_net *net = build_net(g, 3, 1, 1, 5, 91);
    REQUIRE(net, "build");
    for (size_t j = 0; j < dcz_tlayer_nweights(&net->layers[0]); j++) net->layers[0].w[j] *= 4.0f;
    gradcheck_net(net, 4, 80, 92, "silu");
    CHECK(forward_error(net, 4, 93) < 1e-5, "silu: forward off the reference");
    dcz_net_free(net);
    /* the backward alone, against the derivative in double, x from -120 to
     * 120 (the float e^-x of -120 is infinite) */
    enum { N = 481 };
    dcz_tlayer l = { .op = DCZ_OP_SILU, .in = N, .out = N };
    float x[N], y[N], dy[N], dx[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i - 240) * 0.5f;
        dy[i] = 1.0f + (float)(i % 7) * 0.25f;
    }
    const dcz_train_op *op = dcz_train_op_get(DCZ_OP_SILU);
    REQUIRE(op && op->forward && op->backward, "silu has no training op");
    const float *xs[1] = { x };
    float *dxs[1] = { dx };
    op->forward(NULL, &l, xs, y, 1, 0);
    op->backward(NULL, &l, xs, y, dy, dxs, 1);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const double v = x[i], sg = 1 / (1 + exp(-v)), want_y = v * sg;
        const double want_dx = dy[i] * (sg + v * sg * (1 - sg));
        const int ok = fabs(y[i] - want_y) <= 1e-6 * (1 + fabs(want_y)) &&
                       fabs(dx[i] - want_dx) <= 1e-6 * (1 + fabs(want_dx));
        if (!ok && bad++ < 5)
            CHECK(0, "silu at %g: y %.9g (want %.9g), dx %.9g (want %.9g)", v, y[i], want_y, dx[i], want_dx);
    }
    CHECK(bad == 0, "silu: %d of %d points off", bad, N);
}

/* The trained network and libdcz compute the same function: the graph net
 * written to a document, loaded and run. */
static void test_graph_matches_runtime(void)
{
    dcz_net *net = graph_net(22);
    REQUIRE(net, "build");
    matches_runtime(net, "graph");
    const dcz_doc *d = net->doc;
    CHECK(d->layers[5].nin == 2 && d->layers[5].in[1] == 0 && d->layers[2].attr[8] == 8, "inputs and groups");
    dcz_net_free(net);
}

/* Batch norm folds into the convolution whose output it reads, anywhere in
 * a graph; dropout goes; the folded network computes what the unfolded one
 * does in inference. */
static void test_fold_graph(void)
{
    dcz_tlayer g[] = {
        CONV(4, 3, 3, 1, 1),                                  /* 0 */
        SIMPLE(DCZ_OP_RELU),                                  /* 1 */
        CONV(4, 3, 3, 1, 1),                                  /* 2: a branch */
        SIMPLE(DCZ_OP_BATCHNORM),                             /* 3 */
        { .op = DCZ_OP_CONV2D, .out_c = 4, .kh = 1, .kw = 1, .sh = 1, .sw = 1, READS1(2) }, /* 4: shortcut */
        { .op = DCZ_OP_BATCHNORM, READS1(5) },                /* 5 */
        { .op = DCZ_OP_ADD, READS2(4, 6) },                   /* 6 */
        { .op = DCZ_OP_DROPOUT, .rate = 0.5f },               /* 7 */
        SIMPLE(DCZ_OP_FLATTEN),                               /* 8 */
        FC(3),                                                /* 9 */
    };
    dcz_net *net = build_net(g, 10, 2, 5, 5, 41);
    REQUIRE(net, "build");
    enum { B = 2 };
    float x[B * 50], before[B * 3], after[B * 3];
    uint8_t lbl[B];
    random_batch(net, B, x, lbl, 6);
    REQUIRE(dcz_net_forward(net, x, B, before) == DCZ_OK, "run");
    REQUIRE(dcz_net_fold_for_inference(net) == DCZ_OK, "fold");
    CHECK(net->nlayers == 7, "%d layers left", net->nlayers);
    CHECK(net->layers[4].op == DCZ_OP_ADD && net->layers[4].tin[0] == 3 && net->layers[4].tin[1] == 4,
          "the add reads the folded convolutions (%u, %u)", net->layers[4].tin[0], net->layers[4].tin[1]);
    REQUIRE(dcz_net_forward(net, x, B, after) == DCZ_OK, "run folded");
    double worst = 0;
    for (int i = 0; i < B * 3; i++) worst = fmax(worst, fabs(before[i] - after[i]) / (1 + fabs(before[i])));
    CHECK(worst < 1e-5, "folding changed the outputs by %g", worst);
    dcz_net_free(net);
    /* a batch norm after a convolution that another layer reads as well stays */
    dcz_tlayer h[] = {
        CONV(4, 3, 3, 1, 1), SIMPLE(DCZ_OP_BATCHNORM), { .op = DCZ_OP_ADD, READS2(2, 1) },
        SIMPLE(DCZ_OP_FLATTEN), FC(3),
    };
    net = build_net(h, 5, 2, 5, 5, 42);
    REQUIRE(net, "build h");
    CHECK(dcz_net_fold_for_inference(net) == DCZ_ERR_UNSUPPORTED && net->nlayers == 5, "shared conv output");
    dcz_net_free(net);
}

static void test_gradcheck_pool(void)
{
    dcz_tlayer a[] = { CONV(3, 3, 3, 1, 1), POOL(DCZ_OP_MAXPOOL, 2, 2, 0, 0),
                       POOL(DCZ_OP_MAXPOOL, 3, 2, 1, 0), SIMPLE(DCZ_OP_FLATTEN), FC(4) };
    dcz_net *net = build_net(a, 5, 2, 6, 7, 3);
    REQUIRE(net, "build max");
    CHECK(net->layers[1].out_h == 3 && net->layers[1].out_w == 3 && net->layers[2].out_h == 2,
          "max pool shapes");
    gradcheck_net(net, 3, 60, 13, "max pool 2x2 s2 and 3x3 s2 p1");
    dcz_net_free(net);
    /* even sizes: the 2x2 windows tile the input */
    dcz_tlayer e[] = { CONV(3, 3, 3, 1, 1), POOL(DCZ_OP_MAXPOOL, 2, 2, 0, 0),
                       CONV(2, 3, 3, 1, 1), POOL(DCZ_OP_MAXPOOL, 2, 2, 0, 0),
                       SIMPLE(DCZ_OP_FLATTEN), FC(3) };
    net = build_net(e, 6, 2, 8, 12, 10);
    REQUIRE(net, "build max even");
    gradcheck_net(net, 3, 60, 19, "max pool 2x2 s2 tiling the input");
    dcz_net_free(net);

    for (int cip = 0; cip < 2; cip++) {
        dcz_tlayer b[] = { CONV(3, 3, 3, 1, 0), POOL(DCZ_OP_AVGPOOL, 3, 2, 1, cip),
                           POOL(DCZ_OP_AVGPOOL, 2, 1, 1, cip), SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(3) };
        net = build_net(b, 5, 2, 9, 8, 4 + cip);
        REQUIRE(net, "build avg");
        gradcheck_net(net, 3, 60, 14, cip ? "avg pool, padding counted" : "avg pool, padding not counted");
        dcz_net_free(net);
    }
}

static void test_gradcheck_batchnorm(void)
{
    dcz_tlayer a[] = { CONV(4, 3, 3, 1, 1), SIMPLE(DCZ_OP_BATCHNORM), SIMPLE(DCZ_OP_RELU),
                       CONV(3, 3, 3, 2, 0), SIMPLE(DCZ_OP_BATCHNORM), SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(3) };
    dcz_net *net = build_net(a, 7, 2, 7, 6, 5);
    REQUIRE(net, "build conv bn");
    gradcheck_net(net, 4, 60, 15, "conv + batch norm");
    dcz_net_free(net);

    /* batch norm after a dense layer: channels of 1 x 1 */
    dcz_tlayer b[] = { SIMPLE(DCZ_OP_FLATTEN), FC(6), SIMPLE(DCZ_OP_BATCHNORM), SIMPLE(DCZ_OP_RELU),
                       FC(3) };
    net = build_net(b, 5, 1, 3, 3, 6);
    REQUIRE(net, "build dense bn");
    CHECK(net->layers[2].in_c == 6 && net->layers[2].in_h == 1, "bn after dense: %dx%dx%d",
          net->layers[2].in_c, net->layers[2].in_h, net->layers[2].in_w);
    gradcheck_net(net, 5, 60, 16, "dense + batch norm");

    /* running statistics: one training pass moves them by momentum 0.1 toward
     * the batch mean and unbiased variance */
    dcz_tlayer *bn = &net->layers[2];
    for (int c = 0; c < 6; c++) { bn->run_mean[c] = 0.0f; bn->run_var[c] = 1.0f; }
    enum { B = 5 };
    float x[B * 9];
    uint8_t y[B];
    random_batch(net, B, x, y, 17);
    REQUIRE_OK(dcz_net_grad(net, x, y, B, NULL), "grad");
    const float *h = net->act[2];   /* (B, 6): the input of bn */
    for (int c = 0; c < 6; c++) {
        double s = 0, s2 = 0;
        for (int n = 0; n < B; n++) s += h[n * 6 + c];
        double mu = s / B;
        for (int n = 0; n < B; n++) s2 += (h[n * 6 + c] - mu) * (h[n * 6 + c] - mu);
        double var = s2 / (B - 1);
        CHECK(fabs(bn->run_mean[c] - 0.1 * mu) < 1e-5 && fabs(bn->run_var[c] - (0.9 + 0.1 * var)) < 1e-5,
              "running stats of channel %d: %g %g, want %g %g", c, bn->run_mean[c], bn->run_var[c],
              0.1 * mu, 0.9 + 0.1 * var);
    }
    dcz_net_free(net);
}

/* A ReLU or a Clip that alone reads a batch norm's output is applied by
 * the batch norm (bnorm.c): the two share a buffer, whose values are the
 * batch norm's output run alone then ReLU'd or clipped by the runtime's
 * CLIP, bit for bit; the Clip's gradient, masked by the clipped values it
 * then reads, is its mask of the values before it, bit for bit, and the
 * fused net passes the finite-difference check; a batch norm read by
 * another layer too keeps its ReLU apart. */
static void test_bn_relu_fused(void)
{
    for (int clip = 0; clip < 2; clip++) {
        const float lo = -0.2f, hi = 0.3f;   /* a Clip that cuts both sides of the batch's values */
        dcz_tlayer act = clip ? (dcz_tlayer){ .op = DCZ_OP_CLIP, .param = { lo, hi } }
                              : (dcz_tlayer)SIMPLE(DCZ_OP_RELU);
        dcz_tlayer a[] = { CONV(5, 3, 3, 1, 1), SIMPLE(DCZ_OP_BATCHNORM), act, SIMPLE(DCZ_OP_GLOBAL_AVGPOOL),
                           FC(3) };
        dcz_net *net = build_net(a, 5, 2, 6, 7, 41);
        REQUIRE(net, "build conv bn %s", clip ? "clip" : "relu");
        enum { B = 6 };
        float x[B * 2 * 6 * 7];
        uint8_t y[B];
        random_batch(net, B, x, y, 43);
        REQUIRE_OK(dcz_net_grad(net, x, y, B, NULL), "grad");
        dcz_tlayer *bn = &net->layers[1];
        const uint16_t op = clip ? DCZ_OP_CLIP : DCZ_OP_RELU;
        CHECK(bn->act_after == op && net->layers[2].act_fused && net->act[3] == net->act[2], "fused: %u %d",
              bn->act_after, net->layers[2].act_fused);
        const size_t n = (size_t)B * (size_t)bn->out;
        float *apart = malloc(n * sizeof *apart), *after = malloc(n * sizeof *after);
        float *dy = malloc(n * sizeof *dy), *g0 = malloc(n * sizeof *g0), *g1 = malloc(n * sizeof *g1);
        REQUIRE(apart && after && dy && g0 && g1, "alloc");
        bn->act_after = 0;   /* the batch norm alone, then the activation: the same statistics of the same batch */
        dcz_bn_forward(bn, net->act[1], apart, B, 1);
        bn->act_after = op;
        const float param[2] = { lo, hi };
        if (clip) dcz_activation_ref(DCZ_OP_CLIP, param, apart, n, after);
        else
            for (size_t i = 0; i < n; i++) after[i] = apart[i] > 0.0f ? apart[i] : 0.0f;
        size_t cut = 0, bad = 0;
        for (size_t i = 0; i < n; i++) {
            bad += memcmp(&after[i], &net->act[2][i], sizeof(float)) != 0;
            cut += after[i] != apart[i];
            dy[i] = (float)((i * 7919) % 13) - 6.0f;
        }
        CHECK(bad == 0 && cut > n / 10 && cut < n - n / 10, "%s: %zu of %zu values differ (%zu cut)",
              clip ? "clip" : "relu", bad, n, cut);
        if (clip) {   /* the mask by the clipped values is the mask by the values before */
            dcz_vclip_grad(g0, dy, apart, lo, hi, n);
            dcz_vclip_grad(g1, dy, net->act[2], lo, hi, n);
            CHECK(memcmp(g0, g1, n * sizeof *g0) == 0, "the clip's gradient by its clipped input differs");
            gradcheck_net(net, 3, 40, 45, "batch norm with its clip fused");
        }
        free(apart); free(after); free(dy); free(g0); free(g1);
        dcz_net_free(net);
    }

    /* the batch norm's output also read by the ADD: no fusion */
    dcz_tlayer b[] = { CONV(4, 3, 3, 1, 1), SIMPLE(DCZ_OP_BATCHNORM), SIMPLE(DCZ_OP_RELU),
                       { .op = DCZ_OP_ADD, .nin = 2, .tin = { 3, 2 } }, SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(3) };
    enum { B = 6 };
    float x[B * 2 * 6 * 7];
    uint8_t y[B];
    dcz_net *net = build_net(b, 6, 2, 6, 7, 47);
    REQUIRE(net, "build bn read twice");
    random_batch(net, B, x, y, 49);
    REQUIRE_OK(dcz_net_grad(net, x, y, B, NULL), "grad");
    CHECK(!net->layers[1].act_after && !net->layers[2].act_fused && net->act[3] != net->act[2],
          "a batch norm read twice fused its ReLU");
    gradcheck_net(net, 3, 40, 51, "batch norm read by a ReLU and an Add");
    dcz_net_free(net);
}

static void test_dropout(void)
{
    dcz_tlayer a[] = { { .op = DCZ_OP_DROPOUT, .rate = 0.4f }, SIMPLE(DCZ_OP_FLATTEN), FC(3),
                       SIMPLE(DCZ_OP_SOFTMAX) };
    dcz_net *net = build_net(a, 4, 2, 10, 10, 7);
    REQUIRE(net, "build");
    enum { B = 20 };
    int n = B * 200;
    float *x = malloc((size_t)n * sizeof(float)), *p1 = malloc(B * 3 * sizeof(float));
    float *p2 = malloc(B * 3 * sizeof(float));
    uint8_t y[B];
    random_batch(net, B, x, y, 18);
    /* inference: the identity, so the same as the net without dropout */
    REQUIRE_OK(dcz_net_forward(net, x, B, p1), "forward");
    REQUIRE_OK(dcz_net_grad(net, x, y, B, NULL), "grad");
    const float *d = net->act[1];   /* (B, 200): the dropout output */
    int zeros = 0, bad = 0;
    for (int j = 0; j < n; j++) {
        if (d[j] == 0.0f) zeros++;
        else if (fabsf(d[j] - x[j] / 0.6f) > 1e-6f * (1 + fabsf(x[j]))) bad++;
    }
    CHECK(bad == 0, "%d kept units not scaled by 1 / (1 - rate)", bad);
    CHECK(abs(zeros - (int)(0.4 * n)) < 150, "%d of %d units dropped at rate 0.4", zeros, n);
    /* the dense gradient is the one of the masked input */
    dcz_tlayer *fc = &net->layers[2];
    float *gw = malloc(600 * sizeof(float));
    memcpy(gw, fc->gw, 600 * sizeof(float));
    dcz_net *plain = NULL;
    REQUIRE_OK(dcz_net_alloc(2, &plain), "alloc");
    plain->layers[0] = (dcz_tlayer){ .op = DCZ_OP_DENSE, .name = "fc", .in = 200, .out = 3,
                                     .w = malloc(600 * sizeof(float)), .b = malloc(12) };
    plain->layers[1] = (dcz_tlayer){ .op = DCZ_OP_SOFTMAX, .name = "prob", .in = 3, .out = 3 };
    memcpy(plain->layers[0].w, fc->w, 600 * sizeof(float));
    memcpy(plain->layers[0].b, fc->b, 12);
    REQUIRE_OK(dcz_net_validate(plain), "validate");
    REQUIRE_OK(dcz_net_grad(plain, d, y, B, NULL), "plain grad");
    double worst = 0;
    for (int j = 0; j < 600; j++) worst = fmax(worst, fabs(gw[j] - plain->layers[0].gw[j]));
    CHECK(worst < 1e-6, "dense gradient behind dropout off by %g", worst);
    REQUIRE_OK(dcz_net_forward(plain, x, B, p2), "plain forward");
    worst = 0;
    for (int j = 0; j < B * 3; j++) worst = fmax(worst, fabs(p1[j] - p2[j]));
    CHECK(worst < 1e-6, "inference with dropout differs from without by %g", worst);
    free(gw);
    free(x);
    free(p1);
    free(p2);
    dcz_net_free(plain);
    dcz_net_free(net);
}

/* A conv layer with a mask and a codebook layer after it: gradients masked,
 * centroid gradients the sums of their weights' gradients and the numeric
 * derivative by the centroid; steps keep pruned weights at 0 and shared
 * weights on their centroids. */
static void test_conv_masks_codebooks(void)
{
    dcz_tlayer a[] = { CONV(4, 3, 3, 1, 1), SIMPLE(DCZ_OP_RELU), CONV(3, 3, 3, 2, 0),
                       SIMPLE(DCZ_OP_FLATTEN), FC(3) };
    dcz_net *net = build_net(a, 5, 2, 7, 7, 8);
    REQUIRE(net, "build");
    dcz_tlayer *c1 = &net->layers[0], *c2 = &net->layers[2];
    size_t n1 = dcz_tlayer_nweights(c1), n2 = dcz_tlayer_nweights(c2);
    dcz_rng r;
    dcz_rng_seed(&r, 19);
    c1->mask = random_mask(n1, 0.6f, &r);
    c2->mask = random_mask(n2, 0.7f, &r);
    REQUIRE(c1->mask && c2->mask, "alloc");
    /* codebook of 5 on c2, linear between min and max, nearest centroid */
    float lo = c2->w[0], hi = c2->w[0];
    for (size_t j = 1; j < n2; j++) { lo = fminf(lo, c2->w[j]); hi = fmaxf(hi, c2->w[j]); }
    c2->k = 5;
    c2->codebook = malloc(5 * sizeof(float));
    c2->assign = malloc(n2);
    REQUIRE(c2->codebook && c2->assign, "alloc");
    for (int c = 0; c < 5; c++) c2->codebook[c] = lo + (hi - lo) * (float)c / 4.0f;
    for (size_t j = 0; j < n2; j++) {
        int best = 0;
        for (int c = 1; c < 5; c++)
            if (fabsf(c2->w[j] - c2->codebook[c]) < fabsf(c2->w[j] - c2->codebook[best])) best = c;
        c2->assign[j] = (uint8_t)best;
    }
    dcz_net_apply_constraints(net);
    REQUIRE_OK(dcz_net_validate(net), "validate");
    gradcheck_net(net, 3, 80, 20, "masked conv");
    int masked_nonzero = 0;
    for (size_t j = 0; j < n1; j++) masked_nonzero += !c1->mask[j] && c1->gw[j] != 0.0f;
    for (size_t j = 0; j < n2; j++) masked_nonzero += !c2->mask[j] && c2->gw[j] != 0.0f;
    CHECK(masked_nonzero == 0, "%d masked conv gradients not 0", masked_nonzero);
    REQUIRE(c2->gcb != NULL, "no centroid gradient");

    enum { B = 3 };
    float x[B * 98];
    uint8_t y[B];
    random_batch(net, B, x, y, 20);   /* the batch gradcheck_net used */
    ref2 ref;
    ref2_init(&ref, net);
    for (int c = 0; c < 5; c++) {
        double sum = 0;
        for (size_t j = 0; j < n2; j++)
            if (c2->mask[j] && c2->assign[j] == c) sum += c2->gw[j];
        CHECK(fabs(c2->gcb[c] - sum) <= 1e-6 * (1 + fabs(sum)), "gcb[%d] = %.8g, sum %.8g", c,
              c2->gcb[c], sum);
        const double h = 1e-5;
        double l2[2];
        for (int s = 0; s < 2; s++) {
            for (size_t j = 0; j < n2; j++)
                if (c2->mask[j] && c2->assign[j] == c)
                    ref.p[2].w[j] = (double)c2->codebook[c] + (s ? -h : h);
            l2[s] = ref2_loss(&ref, x, y, B);
            for (size_t j = 0; j < n2; j++)
                if (c2->mask[j] && c2->assign[j] == c) ref.p[2].w[j] = c2->codebook[c];
        }
        double num = (l2[0] - l2[1]) / (2 * h);
        CHECK(GRAD_OK(c2->gcb[c], num), "gcb[%d] = %.7g, numeric %.7g", c, c2->gcb[c], num);
    }
    ref2_free(&ref);

    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-3f, .batch = B,
                    .train_biases = 1, .train_weights = 1 };
    float cb0[5];
    memcpy(cb0, c2->codebook, sizeof cb0);
    for (int s = 0; s < 5; s++) {
        REQUIRE_OK(dcz_net_grad(net, x, y, B, NULL), "grad %d", s);
        REQUIRE_OK(dcz_net_step(net, &opt), "step %d", s);
    }
    int bad = 0, moved = 0;
    for (size_t j = 0; j < n1; j++) bad += !c1->mask[j] && c1->w[j] != 0.0f;
    for (size_t j = 0; j < n2; j++) {
        float want = c2->mask[j] ? c2->codebook[c2->assign[j]] : 0.0f;
        bad += memcmp(&c2->w[j], &want, sizeof want) != 0;
    }
    for (int c = 0; c < 5; c++) moved += c2->codebook[c] != cb0[c];
    CHECK(bad == 0, "%d conv weights off their mask or centroid after steps", bad);
    CHECK(moved >= 4, "only %d of 5 centroids moved", moved);
    dcz_net_free(net);
}

/* Weight decay reaches DENSE and CONV weights, never biases or batch norm. */
static void test_weight_decay_scope(void)
{
    dcz_tlayer a[] = { CONV(3, 3, 3, 1, 1), SIMPLE(DCZ_OP_BATCHNORM), SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(2) };
    dcz_net *net = build_net(a, 4, 1, 5, 5, 9);
    REQUIRE(net, "build");
    enum { B = 4 };
    float x[B * 25];
    uint8_t y[B];
    random_batch(net, B, x, y, 21);
    REQUIRE_OK(dcz_net_grad(net, x, y, B, NULL), "grad");
    float before[4][32], bias[4][32];
    for (int i = 0; i < 4; i++) {
        dcz_tlayer *l = &net->layers[i];
        size_t nw = dcz_tlayer_nweights(l), nb = dcz_tlayer_nbias(l);
        if (nb) {
            memset(l->gw, 0, nw * sizeof(float));
            memset(l->gb, 0, nb * sizeof(float));
            memcpy(before[i], l->w, (nw < 32 ? nw : 32) * sizeof(float));
            memcpy(bias[i], l->b, nb * sizeof(float));
        }
    }
    dcz_sgd opt = { .lr = 1.0f, .momentum = 0.0f, .weight_decay = 0.25f, .batch = B,
                    .train_biases = 1, .train_weights = 1 };
    REQUIRE_OK(dcz_net_step(net, &opt), "step");
    for (int i = 0; i < 4; i++) {
        dcz_tlayer *l = &net->layers[i];
        size_t nw = dcz_tlayer_nweights(l), nb = dcz_tlayer_nbias(l);
        if (!nb) continue;
        int decayed = 1, same = 1;
        for (size_t j = 0; j < (nw < 32 ? nw : 32); j++) {
            decayed &= fabsf(l->w[j] - 0.75f * before[i][j]) <= 1e-6f * fabsf(before[i][j]);
            same &= l->w[j] == before[i][j];
        }
        CHECK(memcmp(bias[i], l->b, nb * sizeof(float)) == 0, "%s: bias decayed", l->name);
        if (l->op == DCZ_OP_BATCHNORM) CHECK(same, "%s: gamma decayed", l->name);
        else CHECK(decayed, "%s: weights not decayed", l->name);
    }
    dcz_net_free(net);
}

static void test_fold_for_inference(void)
{
    char err[256];
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("cnn:i2x12x10-c6k3-p2-c8k3s2-d30-f12-d20-f4", 4, &net, err,
                                   sizeof err), "%s", err);
    /* train a little so that batch norm has statistics and parameters of its own */
    dcz_dataset ds = { 0 };
    size_t n = 96;
    ds.x = malloc(n * 240 * sizeof(float));
    ds.y = malloc(n);
    REQUIRE(ds.x && ds.y, "alloc");
    random_batch(net, (int)n, ds.x, ds.y, 22);
    ds.n = n; ds.c = 2; ds.h = 12; ds.w = 10; ds.classes = 4;
    dcz_rng r;
    dcz_rng_seed(&r, 23);
    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .batch = 16,
                    .train_biases = 1, .train_weights = 1 };
    for (int e = 0; e < 3; e++)
        REQUIRE_OK(dcz_train_epoch(net, &ds, &opt, &r, NULL, NULL, NULL), "epoch %d", e);
    float *before = malloc(n * 4 * sizeof(float)), *after = malloc(n * 4 * sizeof(float));
    REQUIRE_OK(dcz_net_forward(net, ds.x, (int)n, before), "forward");
    size_t params = dcz_net_param_count(net);
    int layers = net->nlayers;
    REQUIRE_OK(dcz_net_fold_for_inference(net), "fold");
    REQUIRE_OK(dcz_net_forward(net, ds.x, (int)n, after), "forward after folding");
    double worst = 0;
    for (size_t j = 0; j < n * 4; j++) worst = fmax(worst, fabs(before[j] - after[j]));
    CHECK(worst < 1e-4, "outputs moved by %g with folding", worst);
    CHECK(net->nlayers == layers - 4, "%d layers left of %d", net->nlayers, layers);
    for (int i = 0; i < net->nlayers; i++)
        CHECK(net->layers[i].op != DCZ_OP_BATCHNORM && net->layers[i].op != DCZ_OP_DROPOUT,
              "%s left", net->layers[i].name);
    CHECK(dcz_net_param_count(net) == params - 2 * (6 + 8), "%zu parameters after folding, %zu before",
          dcz_net_param_count(net), params);
    double acc;
    CHECK(dcz_net_evaluate(net, &ds, &acc) == DCZ_OK, "evaluate after folding");
    dcz_net_free(net);

    /* batch norm after a dense layer folds too */
    dcz_tlayer b[] = { SIMPLE(DCZ_OP_FLATTEN), FC(5), SIMPLE(DCZ_OP_BATCHNORM), SIMPLE(DCZ_OP_RELU),
                       FC(4), SIMPLE(DCZ_OP_SOFTMAX) };
    net = build_net(b, 6, 2, 12, 10, 24);
    REQUIRE(net, "build");
    REQUIRE_OK(dcz_net_forward(net, ds.x, (int)n, before), "forward");
    REQUIRE_OK(dcz_net_fold_for_inference(net), "fold dense");
    REQUIRE_OK(dcz_net_forward(net, ds.x, (int)n, after), "forward after folding");
    worst = 0;
    for (size_t j = 0; j < n * 4; j++) worst = fmax(worst, fabs(before[j] - after[j]));
    CHECK(worst < 1e-4 && net->nlayers == 5, "dense fold: outputs moved by %g, %d layers", worst,
          net->nlayers);
    dcz_net_free(net);

    /* refused: batch norm first, after a relu, after a masked conv; net unchanged */
    dcz_tlayer c[] = { SIMPLE(DCZ_OP_BATCHNORM), CONV(2, 3, 3, 1, 1), SIMPLE(DCZ_OP_RELU),
                       SIMPLE(DCZ_OP_BATCHNORM), FC(2) };
    net = build_net(c, 5, 1, 4, 4, 25);
    REQUIRE(net, "build");
    CHECK(dcz_net_fold_for_inference(net) == DCZ_ERR_UNSUPPORTED && net->nlayers == 5 &&
          net->doc->nlayers == 5, "batch norm first folded");
    /* w and b lie in the net's flat parameter buffer, the statistics apart */
    CHECK(net->layers[0].w == net->param && net->layers[0].b == net->param + 1, "batch norm's parameters flat");
    dcz_net_free(net);
    c[0] = (dcz_tlayer)SIMPLE(DCZ_OP_RELU);
    net = build_net(c, 5, 1, 4, 4, 25);
    REQUIRE(net, "build");
    CHECK(dcz_net_fold_for_inference(net) == DCZ_ERR_UNSUPPORTED && net->nlayers == 5,
          "batch norm after relu folded");
    dcz_net_free(net);

    dcz_tlayer d[] = { CONV(2, 3, 3, 1, 1), SIMPLE(DCZ_OP_BATCHNORM), FC(2) };
    net = build_net(d, 3, 1, 4, 4, 26);
    REQUIRE(net, "build");
    net->layers[0].mask = calloc(dcz_tlayer_nweights(&net->layers[0]), 1);
    float w0 = net->layers[0].w[1];
    CHECK(dcz_net_fold_for_inference(net) == DCZ_ERR_UNSUPPORTED && net->nlayers == 3 &&
          net->layers[0].w[1] == w0, "batch norm after a masked conv folded");
    dcz_net_free(net);
    free(before);
    free(after);
    dcz_dataset_free(&ds);
}

/* The parameters, gradients and momentum each lie in one flat buffer:
 * layers point into it in order (weights, then bias), gradient j is that of
 * parameter j (a loss difference of a step on param[j] matches grad[j]),
 * codebook gradients follow them all, and a fold lays the buffer out anew
 * without the folded layers. */
static void test_flat_buffers(void)
{
    char err[256];
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("cnn:i2x12x10-c6k3-p2-c8k3s2-f12-f4", 31, &net, err, sizeof err),
               "%s", err);
    REQUIRE(net->param && net->param_count == dcz_net_param_count(net), "%zu parameters flat of %zu",
            net->param_count, dcz_net_param_count(net));
    size_t at = 0;
    int layers_bad = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (!l->w) continue;
        layers_bad += l->w != net->param + at || l->b != net->param + at + dcz_tlayer_nweights(l);
        at += dcz_tlayer_nweights(l) + dcz_tlayer_nbias(l);
    }
    CHECK(layers_bad == 0 && at == net->param_count, "%d layers off the flat layout", layers_bad);
    enum { B = 8 };
    float x[B * 240];
    uint8_t y[B];
    random_batch(net, B, x, y, 32);
    float loss, lp, lm;
    REQUIRE_OK(dcz_net_grad(net, x, y, B, &loss), "grad");
    REQUIRE(net->grad && net->grad_count == net->param_count, "%zu gradients", net->grad_count);
    float *g = malloc(net->grad_count * sizeof *g);
    REQUIRE(g, "alloc");
    memcpy(g, net->grad, net->grad_count * sizeof *g);
    dcz_rng r;
    dcz_rng_seed(&r, 33);
    int bad = 0, checked = 0;
    for (int t = 0; t < 40; t++) {
        const size_t j = dcz_rng_below(&r, (uint32_t)net->param_count);
        const float p0 = net->param[j], h = 1e-2f;
        net->param[j] = p0 + h;
        REQUIRE_OK(dcz_net_grad(net, x, y, B, &lp), "grad +");
        net->param[j] = p0 - h;
        REQUIRE_OK(dcz_net_grad(net, x, y, B, &lm), "grad -");
        net->param[j] = p0;
        const double fd = ((double)lp - lm) / (2.0 * h);
        if (fabs(g[j]) < 1e-3 && fabs(fd) < 1e-3) continue;
        checked++;
        if (fabs(fd - g[j]) > 0.05 * fabs(g[j]) + 2e-3 && bad++ < 3)
            fprintf(stderr, "  param %zu: grad %g, difference %g\n", j, g[j], fd);
    }
    CHECK(bad == 0 && checked >= 10, "%d of %d flat gradients off their parameter's", bad, checked);
    free(g);
    /* a codebook's gradients follow every weight and bias */
    dcz_tlayer *fc = layer_named(net, "fc1");
    REQUIRE(fc && add_codebook(fc, 4), "codebook");
    dcz_net_reset_state(net);
    REQUIRE_OK(dcz_net_validate(net), "validate");
    REQUIRE_OK(dcz_net_grad(net, x, y, B, &loss), "grad with a codebook");
    CHECK(net->grad_count == net->param_count + 4 && fc->gcb == net->grad + net->param_count,
          "codebook gradients at %td of %zu", fc->gcb - net->grad, net->grad_count);
    dcz_net_free(net);

    /* folding batch norm lays the parameters out anew */
    REQUIRE_OK(dcz_net_create_arch("cnn:i2x12x10-c6k3-p2-f4", 34, &net, err, sizeof err), "%s", err);
    const size_t before = net->param_count;
    REQUIRE_OK(dcz_net_fold_for_inference(net), "fold");
    CHECK(net->param_count == dcz_net_param_count(net) && net->param_count < before &&
          net->layers[0].w == net->param, "after folding: %zu of %zu parameters flat",
          net->param_count, before);
    dcz_net_free(net);
}

static void test_arch_cnn(void)
{
    char err[256];
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("lenet5", 42, &net, err, sizeof err), "%s", err);
    CHECK(dcz_net_param_count(net) == 431080, "lenet5 has %zu parameters", dcz_net_param_count(net));
    static const char *ln[] = { "conv1", "pool1", "conv2", "pool2", "flatten", "fc1", "relu1",
                                "fc2", "prob" };
    static const int lout[] = { 20 * 24 * 24, 20 * 12 * 12, 50 * 8 * 8, 50 * 4 * 4, 800, 500, 500,
                                10, 10 };
    REQUIRE(net->nlayers == 9, "lenet5: %d layers", net->nlayers);
    for (int i = 0; i < 9; i++)
        CHECK(strcmp(net->layers[i].name, ln[i]) == 0 && net->layers[i].out == lout[i],
              "lenet5 layer %d: %s out %d", i, net->layers[i].name, net->layers[i].out);
    CHECK(net->in_dim == 784 && net->in_rank == 3 && net->in_dims[0] == 1 && net->in_dims[1] == 28,
          "lenet5 input");
    CHECK(net->layers[0].op == DCZ_OP_CONV2D && net->layers[1].op == DCZ_OP_MAXPOOL &&
          net->layers[0].ph == 0 && net->layers[1].sh == 2, "lenet5 kinds");
    /* He-normal conv2: sd sqrt(2 / 500) */
    double s2 = 0;
    for (size_t j = 0; j < 25000; j++) s2 += (double)net->layers[2].w[j] * net->layers[2].w[j];
    CHECK(fabs(sqrt(s2 / 25000) / sqrt(2.0 / 500) - 1) < 0.03, "conv2 sd %g", sqrt(s2 / 25000));
    dcz_net_free(net);

    net = NULL;
    REQUIRE_OK(dcz_net_create_arch("cnn:c32k3-c32k3-p2-c64k3-c64k3-p2-c128k3-gap-f10", 1, &net,
                                   err, sizeof err), "%s", err);
    static const char *cn[] = { "conv1", "bn1", "relu1", "conv2", "bn2", "relu2", "pool1",
                                "conv3", "bn3", "relu3", "conv4", "bn4", "relu4", "pool2",
                                "conv5", "bn5", "relu5", "gap1", "flatten", "fc1", "prob" };
    static const int cc[] = { 32, 32, 0, 32, 32, 0, 32, 64, 64, 0, 64, 64, 0, 64, 128, 128, 0,
                              128, 128 * 1 * 1, 0, 0 };
    static const int ch[] = { 28, 28, 0, 28, 28, 0, 14, 14, 14, 0, 14, 14, 0, 7, 7, 7, 0, 1, 1, 0, 0 };
    REQUIRE(net->nlayers == 21, "cnn example: %d layers", net->nlayers);
    for (int i = 0; i < 21; i++) {
        const dcz_tlayer *l = &net->layers[i];
        CHECK(strcmp(l->name, cn[i]) == 0 && l->out_c == cc[i] && l->out_h == ch[i],
              "cnn layer %d: %s out %dx%dx%d", i, l->name, l->out_c, l->out_h, l->out_w);
    }
    CHECK(net->layers[3].ph == 1 && net->layers[3].kh == 3 && net->layers[19].in == 128 &&
          net->classes == 10, "cnn example geometry");
    CHECK(dcz_net_param_count(net) == 140778, "cnn example has %zu parameters",
          dcz_net_param_count(net));
    dcz_net_free(net);

    net = NULL;
    REQUIRE_OK(dcz_net_create_arch("cnn:i3x32x30-c16k5s2p1-a2-d25-f64-d50-f10", 1, &net, err,
                                   sizeof err), "%s", err);
    static const char *dn[] = { "conv1", "bn1", "relu1", "pool1", "drop1", "flatten", "fc1",
                                "relu2", "drop2", "fc2", "prob" };
    REQUIRE(net->nlayers == 11, "%d layers", net->nlayers);
    for (int i = 0; i < 11; i++)
        CHECK(strcmp(net->layers[i].name, dn[i]) == 0, "layer %d is %s, want %s", i,
              net->layers[i].name, dn[i]);
    CHECK(net->layers[0].out_h == 15 && net->layers[0].out_w == 14 && net->layers[3].out_h == 7 &&
          net->layers[3].op == DCZ_OP_AVGPOOL && net->layers[6].in == 16 * 7 * 7 &&
          fabsf(net->layers[8].rate - 0.5f) < 1e-6f && net->in_dim == 3 * 32 * 30,
          "spec geometry: conv %dx%d pool %d", net->layers[0].out_h, net->layers[0].out_w,
          net->layers[3].out_h);
    dcz_net_free(net);

    static const char *bad[] = {
        "cnn:", "cnn:c32", "cnn:c32k3", "cnn:c32k3-", "cnn:-f10", "cnn:c0k3-f10", "cnn:c32k0-f10",
        "cnn:c32k3p3-f10", "cnn:c32k3s0-f10", "cnn:c32k33-f10", "cnn:c5000k3-f10",
        "cnn:p2-p2-p2-p2-p2-f10", "cnn:c8k3s40-f10", "cnn:f10-c8k3-f10", "cnn:f10-gap-f10",
        "cnn:i1x28-f10", "cnn:f10-i1x28x28", "cnn:i0x28x28-f10", "cnn:i1x28x28", "cnn:x5-f10",
        "cnn:d100-f10", "cnn:f0", "cnn:f10-", "cnn:c8k3--f10", "cnn:gap2-f10", "cnn:C8k3-f10",
        "cnn:c8k3s2p1x-f10", "cnn:c8k3p1s2-f10", "cnn:i64x64x64-f65536", "cnn:i4096x4096x4096-f10",
        "cnn:i1x128x128-c4096k1-f10", "cnn:c8k3-f10-d50", "cnn:a0-f10", "cnn:c8k3 -f10",
        "cnn:f99999999999999999999", "lenet5 ", "cnn:i1x1x1-c2k3p0-f2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        net = (dcz_net *)1;
        err[0] = '\0';
        CHECK(dcz_net_create_arch(bad[i], 1, &net, err, sizeof err) == DCZ_ERR_ARG,
              "\"%s\" accepted", bad[i]);
        CHECK(net == NULL && err[0] != '\0' && strchr(err, '\n') == NULL,
              "\"%s\": out %p, message \"%s\"", bad[i], (void *)net, err);
    }
    char many[400] = "cnn:";
    for (int i = 0; i < 64; i++) strcat(many, "d0-");
    strcat(many, "f2");
    net = (dcz_net *)1;
    CHECK(dcz_net_create_arch(many, 1, &net, err, sizeof err) == DCZ_ERR_ARG && net == NULL,
          "65 tokens accepted");
}

/* Index of the layer named name in net, or -1. */
static int layer_index(const dcz_net *net, const char *name)
{
    for (int i = 0; i < net->nlayers; i++)
        if (strcmp(net->layers[i].name, name) == 0) return i;
    return -1;
}

/* Tensor written by the layer named name (its index + 1). */
static uint32_t tensor_of(const dcz_net *net, const char *name)
{
    return (uint32_t)(layer_index(net, name) + 1);
}

/* Residual and inverted residual blocks of cnn: specs: their layers, the
 * tensors each reads, the shortcut only where the shape changes, groups of
 * the depthwise convolution; the presets; malformed block tokens. Then a
 * block net trains a step, folds and runs in the runtime to the trainer's
 * outputs. */
static void test_arch_blocks(void)
{
    char err[256];
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("cnn:i3x12x12-c8k3-r8-r16s2-gap-f4", 3, &net, err, sizeof err),
               "%s", err);
    static const char *rn[] = { "conv1", "bn1", "relu1", "res1.conv1", "res1.bn1", "res1.relu1",
                                "res1.conv2", "res1.bn2", "res1.add", "res1.relu", "res2.conv1",
                                "res2.bn1", "res2.relu1", "res2.conv2", "res2.bn2", "res2.proj",
                                "res2.projbn", "res2.add", "res2.relu", "gap1", "flatten", "fc1",
                                "prob" };
    REQUIRE(net->nlayers == 23, "%d layers", net->nlayers);
    for (int i = 0; i < 23; i++)
        CHECK(strcmp(net->layers[i].name, rn[i]) == 0, "layer %d is %s, want %s", i,
              net->layers[i].name, rn[i]);
    const dcz_tlayer *add1 = &net->layers[layer_index(net, "res1.add")];
    CHECK(add1->nin == 2 && add1->tin[0] == tensor_of(net, "res1.bn2") &&
          add1->tin[1] == tensor_of(net, "relu1"), "res1.add reads the block's input itself");
    const dcz_tlayer *proj = &net->layers[layer_index(net, "res2.proj")];
    CHECK(proj->tin[0] == tensor_of(net, "res1.relu") && proj->kh == 1 && proj->sh == 2 &&
          proj->out_c == 16 && proj->out_h == 6, "res2.proj: 1x1 stride 2 on the block's input");
    const dcz_tlayer *add2 = &net->layers[layer_index(net, "res2.add")];
    CHECK(add2->tin[0] == tensor_of(net, "res2.bn2") && add2->tin[1] == tensor_of(net, "res2.projbn") &&
          add2->out == 16 * 6 * 6, "res2.add sums the block and the projection");
    CHECK(net->layers[layer_index(net, "res2.conv1")].sh == 2 &&
          net->layers[layer_index(net, "res2.conv2")].sh == 1, "strides of res2");
    dcz_net_free(net);

    net = NULL;
    REQUIRE_OK(dcz_net_create_arch("cnn:i2x8x8-c8k3-m8e2q-m12s2-gap-f3", 3, &net, err, sizeof err),
               "%s", err);
    const int dw = layer_index(net, "inv1.dw"), ex = layer_index(net, "inv1.expand");
    REQUIRE(dw > 0 && ex > 0, "inv1 has an expansion and a depthwise convolution");
    CHECK(net->layers[ex].out_c == 16 && net->layers[ex].kh == 1 && net->layers[dw].group == 16 &&
          net->layers[dw].out_c == 16 && net->layers[dw].kh == 3, "expand 8 -> 16, depthwise 16 groups");
    CHECK(net->layers[layer_index(net, "inv1.relu1")].op == DCZ_OP_CLIP &&
          net->layers[layer_index(net, "inv1.relu1")].param[1] == 6.0f, "ReLU6 is a clip to 6");
    const dcz_tlayer *scale = &net->layers[layer_index(net, "inv1.se.scale")];
    CHECK(scale->op == DCZ_OP_MUL && scale->tin[0] == tensor_of(net, "inv1.relu2") &&
          scale->tin[1] == tensor_of(net, "inv1.se.gate"), "the gate multiplies the depthwise output");
    CHECK(net->layers[layer_index(net, "inv1.se.fc1")].out == 8 &&
          net->layers[layer_index(net, "inv1.se.fc2")].out == 16 &&
          net->layers[layer_index(net, "inv1.se.gate")].op == DCZ_OP_HARD_SIGMOID, "squeeze widths");
    const dcz_tlayer *iadd = &net->layers[layer_index(net, "inv1.add")];
    CHECK(iadd->tin[0] == tensor_of(net, "relu1") && iadd->tin[1] == tensor_of(net, "inv1.bn3"),
          "inv1.add reads the block's input and the projection");
    CHECK(layer_index(net, "inv2.add") < 0 && layer_index(net, "inv2.se.pool") < 0 &&
          net->layers[layer_index(net, "inv2.dw")].out_h == 4 &&
          net->layers[layer_index(net, "inv2.expand")].out_c == 48, "inv2: stride 2, no shortcut");
    /* one step of training, then the folded net in the runtime */
    enum { B = 4 };
    float x[B * 128], yn[B * 3], ym[B * 3];
    uint8_t lbl[B];
    random_batch(net, B, x, lbl, 9);
    dcz_sgd sgd = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 0, .batch = B, .train_biases = 1, .train_weights = 1 };
    float loss = 0;
    REQUIRE(dcz_net_grad(net, x, lbl, B, &loss) == DCZ_OK && dcz_net_step(net, &sgd) == DCZ_OK &&
            isfinite(loss), "a training step");
    REQUIRE(dcz_net_fold_for_inference(net) == DCZ_OK, "fold");
    CHECK(layer_index(net, "inv1.bn1") < 0 && layer_index(net, "inv1.expand") >= 0, "batch norms folded");
    dcz_layer_encoding enc[64];
    memset(enc, 0, sizeof enc);
    uint8_t *buf = NULL;
    size_t len = 0;
    dcz_model *m = NULL;
    REQUIRE(dcz_net_store(net, enc) == DCZ_OK && dcz_doc_write(net->doc, &buf, &len) == DCZ_OK &&
            dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "written and opened");
    REQUIRE(dcz_net_forward(net, x, B, yn) == DCZ_OK && dcz_run(m, x, B, ym) == DCZ_OK, "run");
    double worst = 0;
    for (int i = 0; i < B * 3; i++) worst = fmax(worst, fabs(yn[i] - ym[i]));
    CHECK(worst < 1e-5, "trainer and runtime differ by %g", worst);
    dcz_close(m);
    free(buf);
    dcz_net_free(net);

    /* the presets are their specs */
    static const char *const presets[][2] = { { "resnet", DCZ_ARCH_RESNET },
                                              { "mobilenetv2", DCZ_ARCH_MOBILENETV2 } };
    for (int i = 0; i < 2; i++) {
        dcz_net *a = NULL, *b = NULL;
        REQUIRE_OK(dcz_net_create_arch(presets[i][0], 5, &a, err, sizeof err), "%s", err);
        REQUIRE_OK(dcz_net_create_arch(presets[i][1], 5, &b, err, sizeof err), "%s", err);
        CHECK(a->nlayers == b->nlayers && dcz_net_param_count(a) == dcz_net_param_count(b) &&
              a->in_dim == 784 && a->classes == 10, "%s", presets[i][0]);
        CHECK(memcmp(a->layers[0].w, b->layers[0].w, 9 * sizeof(float)) == 0, "same seed, same weights");
        dcz_net_free(a);
        dcz_net_free(b);
    }

    static const char *bad[] = {
        "cnn:r0-f10", "cnn:r8s0-f10", "cnn:r8k3-f10", "cnn:m8e0-f10", "cnn:m8e9-f10", "cnn:m8x-f10",
        "cnn:m8qq-f10", "cnn:m8s2e2-f10", "cnn:c8k3g3-f10", "cnn:c8k3g0-f10", "cnn:f10-r8-f10",
        "cnn:i1x4096x4096-r8-f10", "cnn:r8-m8", "resnet ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        net = (dcz_net *)1;
        err[0] = '\0';
        CHECK(dcz_net_create_arch(bad[i], 1, &net, err, sizeof err) == DCZ_ERR_ARG && net == NULL &&
              err[0] != '\0', "\"%s\" accepted (%s)", bad[i], err);
    }
}

static void test_validate_cnn(void)
{
    dcz_tlayer a[] = { CONV(3, 3, 3, 1, 1), POOL(DCZ_OP_MAXPOOL, 2, 2, 0, 0), SIMPLE(DCZ_OP_BATCHNORM),
                       { .op = DCZ_OP_DROPOUT, .rate = 0.5f }, SIMPLE(DCZ_OP_FLATTEN), FC(2) };
    dcz_net *net = build_net(a, 6, 2, 6, 6, 27);
    REQUIRE(net, "build");
    dcz_tlayer *c = &net->layers[0], *p = &net->layers[1], *bn = &net->layers[2];
    c->out_h = 5;
    CHECK(dcz_net_validate(net) == DCZ_ERR_SHAPE, "wrong conv output height accepted");
    c->out_h = 6;
    c->ph = 3;
    CHECK(dcz_net_validate(net) == DCZ_ERR_SHAPE, "padding >= kernel accepted");
    c->ph = 1;
    c->sh = 0;
    CHECK(dcz_net_validate(net) == DCZ_ERR_SHAPE, "stride 0 accepted");
    c->sh = 1;
    p->in_c = 2;
    CHECK(dcz_net_validate(net) == DCZ_ERR_SHAPE, "pool input channels off the chain accepted");
    p->in_c = 3;
    bn->eps = 0.0f;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "batch norm eps 0 accepted");
    bn->eps = 1e-5f;
    bn->bn_momentum = 1.5f;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "batch norm momentum 1.5 accepted");
    bn->bn_momentum = 0.1f;
    net->layers[3].rate = 1.0f;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "dropout rate 1 accepted");
    net->layers[3].rate = 0.5f;
    bn->mask = calloc(3, 1);
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "mask on batch norm accepted");
    free(bn->mask);
    bn->mask = NULL;
    float *keep = c->w;
    c->w = NULL;
    CHECK(dcz_net_validate(net) == DCZ_ERR_ARG, "conv without weights accepted");
    c->w = keep;
    net->in_dims[1] = 7;
    CHECK(dcz_net_validate(net) == DCZ_ERR_SHAPE, "input shape off the first layer accepted");
    net->in_dims[1] = 6;
    net->layers[4].out_c = 5;
    CHECK(dcz_net_validate(net) == DCZ_ERR_SHAPE, "flatten geometry off accepted");
    net->layers[4].out_c = 27;
    REQUIRE_OK(dcz_net_validate(net), "restored net rejected");
    CHECK(dcz_net_param_count(net) == 3 * 18 + 3 + 2 * 3 + 27 * 2 + 2, "param count %zu",
          dcz_net_param_count(net));
    dcz_net_free(net);

    /* a dense layer takes a spatial input by element count; a conv after
     * dense sees (n, 1, 1) */
    dcz_tlayer b[] = { FC(6), CONV(2, 1, 1, 1, 0), SIMPLE(DCZ_OP_FLATTEN), FC(2) };
    net = build_net(b, 4, 2, 3, 3, 28);
    REQUIRE(net, "dense then conv");
    CHECK(net->layers[1].in_c == 6 && net->layers[1].in_h == 1 && net->layers[0].in == 18,
          "conv after dense: %dx%dx%d", net->layers[1].in_c, net->layers[1].in_h,
          net->layers[1].in_w);
    dcz_net_free(net);
}

/* Two classes of 1x8x8 images: a horizontal or a vertical bar at a random
 * place, plus noise. */
static int make_bars(dcz_dataset *ds, size_t n, uint64_t seed)
{
    memset(ds, 0, sizeof *ds);
    ds->x = malloc(n * 64 * sizeof(float));
    ds->y = malloc(n);
    if (!ds->x || !ds->y) { dcz_dataset_free(ds); return 0; }
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        float *im = ds->x + i * 64;
        int cls = (int)(i & 1), at = (int)dcz_rng_below(&r, 8);
        for (int j = 0; j < 64; j++) im[j] = 0.2f * dcz_rng_uniform(&r);
        for (int j = 0; j < 8; j++) im[cls ? j * 8 + at : at * 8 + j] += 0.8f;
        ds->y[i] = (uint8_t)cls;
    }
    ds->n = n; ds->c = 1; ds->h = 8; ds->w = 8; ds->classes = 2;
    return 1;
}

static void test_cnn_learns(void)
{
    char err[256];
    dcz_dataset tr, te;
    int ok = make_bars(&tr, 512, 31) && make_bars(&te, 256, 32);
    REQUIRE(ok, "alloc");
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_create_arch("cnn:i1x8x8-c4k3-p2-c8k3-gap-d10-f2", 3, &net, err, sizeof err),
               "%s", err);
    dcz_rng r;
    dcz_rng_seed(&r, 33);
    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .batch = 32,
                    .train_biases = 1, .train_weights = 1 };
    float first = 0, last = 0;
    for (int e = 0; e < 8; e++) {
        REQUIRE_OK(dcz_train_epoch(net, &tr, &opt, &r, NULL, NULL, &last), "epoch %d", e);
        if (e == 0) first = last;
    }
    double acc = 0;
    REQUIRE_OK(dcz_net_evaluate(net, &te, &acc), "evaluate");
    CHECK(last < 0.5f * first, "loss %g after 8 epochs (first %g)", last, first);
    CHECK(acc > 0.95, "test accuracy %g", acc);
    /* a (C, H, W) input takes samples of that shape only */
    CHECK(dcz_dataset_fits(net, &te), "1x8x8 data does not fit a 1x8x8 net");
    te.h = 4;
    te.w = 16;
    CHECK(!dcz_dataset_fits(net, &te), "1x4x16 data fits a 1x8x8 net");
    CHECK(dcz_net_evaluate(net, &te, &acc) == DCZ_ERR_SHAPE, "1x4x16 data evaluated");
    te.h = te.w = 8;
    dcz_net_free(net);
    dcz_dataset_free(&tr);
    dcz_dataset_free(&te);
}

/* Every parameter and batch-norm statistic of two nets bit for bit. */
static int same_all_params(const dcz_net *a, const dcz_net *b)
{
    if (a->nlayers != b->nlayers) return 0;
    for (int i = 0; i < a->nlayers; i++) {
        const dcz_tlayer *la = &a->layers[i], *lb = &b->layers[i];
        size_t nw = dcz_tlayer_nweights(la), nb = dcz_tlayer_nbias(la);
        if (nb == 0) continue;
        if (memcmp(la->w, lb->w, nw * sizeof(float)) || memcmp(la->b, lb->b, nb * sizeof(float)))
            return 0;
        if (la->run_mean && (memcmp(la->run_mean, lb->run_mean, nb * sizeof(float)) ||
                             memcmp(la->run_var, lb->run_var, nb * sizeof(float))))
            return 0;
    }
    return 1;
}

static dcz_net *train_cnn(uint64_t seed, const dcz_dataset *ds)
{
    dcz_net *net = NULL;
    if (dcz_net_create_arch("cnn:i1x8x8-c4k3-d20-p2-f8-d30-f2", seed, &net, NULL, 0) != DCZ_OK)
        return NULL;
    dcz_rng r;
    dcz_rng_seed(&r, 5);
    dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .batch = 16,
                    .train_biases = 1, .train_weights = 1 };
    if (dcz_train_epoch(net, ds, &opt, &r, NULL, NULL, NULL) != DCZ_OK) {
        dcz_net_free(net);
        return NULL;
    }
    return net;
}

static void test_cnn_determinism(void)
{
    dcz_dataset ds;
    REQUIRE(make_bars(&ds, 200, 41), "alloc");
    dcz_net *a = train_cnn(1, &ds), *b = train_cnn(1, &ds), *c = train_cnn(2, &ds);
    REQUIRE(a && b && c, "training failed");
    CHECK(same_all_params(a, b), "same seed gave different weights");
    CHECK(!same_all_params(a, c), "different seeds gave the same weights");
    dcz_net_free(a);
    dcz_net_free(b);
    dcz_net_free(c);
    dcz_dataset_free(&ds);
}

/* dcz_train_par covers its range once, in parts of at least the grain, on
 * any thread count; a call from inside a job runs on its caller's thread. */
typedef struct par_probe { int *hits; size_t *part; } par_probe;   /* part[lo]: its size */

static void par_count(void *ctx, size_t lo, size_t hi)
{
    par_probe *p = ctx;
    for (size_t i = lo; i < hi; i++) p->hits[i]++;
    if (p->part) p->part[lo] = hi - lo;
}

static void par_outer(void *ctx, size_t lo, size_t hi)
{
    par_probe *p = ctx;
    for (size_t i = lo; i < hi; i++) {
        par_probe inner = { p->hits + i * 100, NULL };
        dcz_train_par(100, 1, par_count, &inner);
    }
}

static void test_par_covers(void)
{
    static int hits[1000];
    static size_t part[1000];
    for (int threads = 1; threads <= 3; threads++) {
        dcz_train_set_threads(threads);
        for (size_t grain = 1; grain <= 400; grain *= 20) {
            memset(hits, 0, sizeof hits);
            memset(part, 0, sizeof part);
            par_probe p = { hits, part };
            dcz_train_par(1000, grain, par_count, &p);
            int once = 1, parts = 0;
            size_t smallest = 1000;
            for (int i = 0; i < 1000; i++) {
                once &= hits[i] == 1;
                if (part[i]) parts++;
                if (part[i] && part[i] < smallest) smallest = part[i];
            }
            CHECK(once, "%d threads, grain %zu: an item not covered once", threads, grain);
            CHECK(smallest >= grain, "%d threads: a part of %zu items under the grain %zu", threads,
                  smallest, grain);
            int cap = (int)(1000 / grain), most = cap < 2 ? 1 : cap < threads ? cap : threads;
            CHECK(parts == most, "%d threads, grain %zu: %d parts", threads, grain, parts);
        }
        memset(hits, 0, sizeof hits);
        par_probe p = { hits, NULL };
        dcz_train_par(10, 1, par_outer, &p);
        int once = 1;
        for (int i = 0; i < 1000; i++) once &= hits[i] == 1;
        CHECK(once, "%d threads: a nested split did not cover its items once", threads);
    }
    dcz_train_set_threads(2);
}

/* The largest difference between two nets' parameters and batch-norm
 * statistics, relative to the largest magnitude of the layer's weights
 * (statistics: of the statistic). A bias ahead of a batch norm has no
 * gradient but rounding, so its own magnitude is no scale. */
static double params_apart(const dcz_net *a, const dcz_net *b)
{
    double worst = 0;
    for (int i = 0; i < a->nlayers; i++) {
        const dcz_tlayer *la = &a->layers[i], *lb = &b->layers[i];
        size_t n[4] = { dcz_tlayer_nweights(la), dcz_tlayer_nbias(la), 0, 0 };
        if (!n[1]) continue;
        n[2] = n[3] = n[1];
        const float *pa[4] = { la->w, la->b, la->run_mean, la->run_var };
        const float *pb[4] = { lb->w, lb->b, lb->run_mean, lb->run_var };
        double scale[4] = { 1e-30, 0, 1e-30, 1e-30 };
        for (int t = 0; t < 4; t++)
            for (size_t j = 0; pa[t] && t != 1 && j < n[t]; j++) scale[t] = fmax(scale[t], fabs((double)pa[t][j]));
        scale[1] = scale[0];
        for (int t = 0; t < 4; t++) {
            double d = 0;
            for (size_t j = 0; pa[t] && j < n[t]; j++) d = fmax(d, fabs((double)pa[t][j] - pb[t][j]));
            worst = fmax(worst, d / scale[t]);
        }
    }
    return worst;
}

/* Splitting a batch over threads (samples of the activations and pooling,
 * channels of batch norm, rows of im2col, channels of its adjoint, the
 * outputs of every product, channels of a depthwise convolution's passes)
 * changes no arithmetic: training on 1 thread
 * and on 3 (uneven parts) gives the same parameters and statistics, bit
 * for bit. The batch is large enough that every kind of split happens. */
static void test_threads_same_result(void)
{
    dcz_dataset ds;
    REQUIRE(make_bars(&ds, 384, 43), "alloc");
    dcz_net *net[2] = { NULL, NULL };
    for (int k = 0; k < 2; k++) {
        dcz_train_set_threads(k ? 3 : 1);
        REQUIRE_OK(dcz_net_create_arch("cnn:i1x8x8-c16k3-r16-m16e4-p2-c32k3-gap-f48-f2", 9, &net[k], NULL, 0),
                   "arch");
        dcz_rng r;
        dcz_rng_seed(&r, 6);
        dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .batch = 128,
                        .train_biases = 1, .train_weights = 1 };
        REQUIRE_OK(dcz_train_epoch(net[k], &ds, &opt, &r, NULL, NULL, NULL), "epoch on %d threads",
                   k ? 3 : 1);
    }
    dcz_train_set_threads(2);
    double apart = params_apart(net[0], net[1]);
    CHECK(apart == 0, "3 threads trained other parameters than 1 (apart by %g)", apart);
    dcz_net_free(net[0]);
    dcz_net_free(net[1]);
    dcz_dataset_free(&ds);
}

/* dcz_train_sgemm gives the same bits on 1, 2 and 3 threads, for products
 * of every transpose whose calls OpenBLAS runs by its small-matrix kernels
 * (the 21 and 22 sample parts of a sharded batch of 64) or by its blocked
 * ones, C's rows or columns the longer side, beta 0 and 1, random values. */
static void test_sgemm_threads(void)
{
    static const int shapes[][3] = { { 21, 64, 784 }, { 64, 784, 21 }, { 22, 784, 64 }, { 300, 100, 64 },
                                     { 64, 500, 800 }, { 500, 800, 22 }, { 7, 33, 5 } };
    dcz_rng r;
    dcz_rng_seed(&r, 12);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int t = 0; t < 4; t++) {
            const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ta = t & 1, tb = t >> 1;
            const float beta = (float)(s & 1);
            float *A = malloc((size_t)M * K * sizeof *A), *B = malloc((size_t)K * N * sizeof *B);
            float *C[3];
            REQUIRE(A && B, "alloc");
            for (size_t i = 0; i < (size_t)M * K; i++) A[i] = dcz_rng_uniform(&r) - 0.5f;
            for (size_t i = 0; i < (size_t)K * N; i++) B[i] = dcz_rng_uniform(&r) - 0.5f;
            for (int k = 0; k < 3; k++) {
                REQUIRE(C[k] = malloc((size_t)M * N * sizeof *C[k]), "alloc");
                for (size_t i = 0; i < (size_t)M * N; i++) C[k][i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
                dcz_train_set_threads(k + 1);
                dcz_train_sgemm(ta, tb, M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, beta, C[k], N);
            }
            CHECK(!memcmp(C[0], C[1], (size_t)M * N * sizeof *C[0]) &&
                  !memcmp(C[0], C[2], (size_t)M * N * sizeof *C[0]),
                  "%d x %d x %d, transposes %d %d: other bits on 2 or 3 threads than on 1", M, N, K, ta, tb);
            for (int k = 0; k < 3; k++) free(C[k]);
            free(A);
            free(B);
        }
    dcz_train_set_threads(2);
}

/* A conv layer whose columns of one sample exceed a tile works in bands
 * of output rows: its gradient over a batch equals the mean of the
 * gradients of parts of the batch. */
static void test_conv_bands_backward(void)
{
    /* the second conv is the large one: 16 -> 8 channels, 3x3, 64x64 */
    dcz_tlayer a[] = { CONV(16, 1, 1, 1, 0), CONV(8, 3, 3, 1, 1), SIMPLE(DCZ_OP_RELU),
                       CONV(4, 3, 3, 2, 1), SIMPLE(DCZ_OP_GLOBAL_AVGPOOL), FC(3) };
    dcz_net *net = build_net(a, 6, 4, 64, 64, 34);
    REQUIRE(net, "build");
    enum { B = 30, PART = 5 };
    size_t in = (size_t)net->in_dim;
    float *x = malloc(B * in * sizeof(float));
    uint8_t y[B];
    random_batch(net, B, x, y, 35);
    const int conv[3] = { 0, 1, 3 };
    double *sum[3];
    for (int k = 0; k < 3; k++) sum[k] = calloc(dcz_tlayer_nweights(&net->layers[conv[k]]), sizeof(double));
    for (int s = 0; s < B; s += PART) {
        REQUIRE_OK(dcz_net_grad(net, x + (size_t)s * in, y + s, PART, NULL), "part %d", s);
        for (int k = 0; k < 3; k++) {
            const dcz_tlayer *l = &net->layers[conv[k]];
            for (size_t j = 0; j < dcz_tlayer_nweights(l); j++) sum[k][j] += l->gw[j] * PART / (double)B;
        }
    }
    REQUIRE_OK(dcz_net_grad(net, x, y, B, NULL), "whole batch");
    for (int k = 0; k < 3; k++) {
        const dcz_tlayer *l = &net->layers[conv[k]];
        double worst = 0, scale = 0;
        for (size_t j = 0; j < dcz_tlayer_nweights(l); j++) {
            worst = fmax(worst, fabs(l->gw[j] - sum[k][j]));
            scale = fmax(scale, fabs(sum[k][j]));
        }
        CHECK(worst <= 1e-4 * scale, "%s: whole-batch gradient off the parts by %g (scale %g)",
              l->name, worst, scale);
        free(sum[k]);
    }
    free(x);
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

/* a and b have the same bits */
static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The element-wise loops and sums of vec.c: every version this machine
 * runs against the references, bit for bit, over lengths 0 to 80 at four
 * alignments; values of mixed signs and sizes (a sum's order shows in its
 * bits), NaN, infinities and signed zeros where the ReLUs and Clip choose. */
static void test_vec_isas(void)
{
    enum { N = 84, SPECIAL = 6 };
    static const dcz_isa isas[] = { DCZ_ISA_AVX2, DCZ_ISA_AVX512, DCZ_ISA_NEON };
    const dcz_vec_ops *ref = dcz_vec_ops_of(DCZ_ISA_REF);
    REQUIRE(ref && dcz_vec(), "no reference table");
    const float special[SPECIAL] = { NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 1e-40f };
    float a[N], b[N], c[N], d0[N], d1[N];
    dcz_rng r;
    dcz_rng_seed(&r, 77);
    int ran = 0;
    for (size_t v = 0; v < sizeof isas / sizeof *isas; v++) {
        const dcz_vec_ops *o = dcz_vec_ops_of(isas[v]);
        if (!o) continue;
        ran++;
        size_t bad = 0;
        for (size_t n = 0; n <= 80; n++)
            for (size_t off = 0; off < 4; off++) {
                for (size_t i = 0; i < N; i++) {
                    const float scale = (float)(1 << (i % 7)) * 0.37f;
                    a[i] = (dcz_rng_uniform(&r) - 0.45f) * scale;
                    b[i] = (dcz_rng_uniform(&r) - 0.5f) * scale;
                    c[i] = dcz_rng_uniform(&r) - 0.5f;
                }
                const float *x = a + off, *y = b + off;
                const float m = 0.125f, p = 0.7f, q = -1.3f, t = 0.01f;
                float s0, s1, g0, g1;
                bad += !same_bits(o->sum(x, n), ref->sum(x, n));
                bad += !same_bits(o->dot(x, y, n), ref->dot(x, y, n));
                bad += !same_bits(o->sumsq_dev(x, m, n), ref->sumsq_dev(x, m, n));
                o->sums_grad(x, y, m, n, &s0, &g0);
                ref->sums_grad(x, y, m, n, &s1, &g1);
                bad += !same_bits(s0, s1) + !same_bits(g0, g1);
                /* element-wise: each into d0 by the version, d1 by the
                 * reference, from the same start (d += ... reads it) */
                for (int op = 0; op < 11; op++) {
                    for (size_t i = 0; i < N; i++) d0[i] = d1[i] = c[i];
                    if (op == 4 || op == 5 || op >= 8) /* the ReLUs, Clip: special values among the inputs */
                        for (size_t i = 0; i < n; i += 5) a[off + i] = special[(i / 5) % SPECIAL];
                    const dcz_vec_ops *w[2] = { o, ref };
                    float *dst[2] = { d0 + off, d1 + off };
                    for (int k = 0; k < 2; k++) switch (op) {
                        case 0: w[k]->affine(dst[k], x, p, t, n); break;
                        case 1: w[k]->affine_relu(dst[k], x, p, t, n); break;
                        case 2: w[k]->lincomb(dst[k], x, y, p, q, t, n); break;
                        case 3: w[k]->add(dst[k], x, n); break;
                        case 4: w[k]->relu(dst[k], x, n); break;
                        case 5: w[k]->relu_grad(dst[k], y, x, n); break;
                        case 6: w[k]->sum2(dst[k], x, y, n); break;
                        case 7: w[k]->axpy(dst[k], x, q, n); break;
                        case 8: w[k]->clip_grad(dst[k], y, x, -0.25f, 0.5f, n); break;
                        case 9: w[k]->affine_clip(dst[k], x, p, t, -0.25f, 0.5f, n); break;
                        default: w[k]->affine_clip(dst[k], x, p, -0.0f, 0.0f, 6.0f, n); break;   /* -0 kept */
                    }
                    for (size_t i = 0; i < N; i++)
                        if (!same_bits(d0[i], d1[i])) {
                            if (bad < 5) printf("     isa %d op %d n %zu off %zu: [%zu] %a, reference %a\n",
                                                (int)isas[v], op, n, off, i, d0[i], d1[i]);
                            bad++;
                        }
                }
            }
        CHECK(bad == 0, "isa %d: %zu results off the references' bits", (int)isas[v], bad);
    }
    printf("     %d vector version(s) checked\n", ran);
    /* the wrappers, inline below DCZ_VEC_INLINE_MAX and by the table above */
    size_t wbad = 0;
    for (size_t n = 1; n <= 80; n++) {
        for (size_t i = 0; i < N; i++) {
            a[i] = dcz_rng_uniform(&r) - 0.5f;
            b[i] = dcz_rng_uniform(&r) - 0.5f;
            c[i] = dcz_rng_uniform(&r) - 0.5f;
        }
        for (int op = 0; op < 4; op++) {
            for (size_t i = 0; i < N; i++) d0[i] = d1[i] = c[i];
            switch (op) {
            case 0: dcz_vaffine(d0, a, 0.7f, 0.01f, n); ref->affine(d1, a, 0.7f, 0.01f, n); break;
            case 1: dcz_vlincomb(d0, a, b, 0.7f, -1.3f, 0.01f, n); ref->lincomb(d1, a, b, 0.7f, -1.3f, 0.01f, n); break;
            case 2: dcz_vadd(d0, a, n); ref->add(d1, a, n); break;
            default: dcz_vaxpy(d0, a, -1.3f, n); ref->axpy(d1, a, -1.3f, n); break;
            }
            for (size_t i = 0; i < N; i++) wbad += !same_bits(d0[i], d1[i]);
        }
    }
    CHECK(wbad == 0, "%zu results of the inline wrappers off the references' bits", wbad);
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

/* dcz_doc_new_head: the last DENSE layer of a trained MLP becomes a fresh
 * one of 3 outputs (He-normal from the seed, the same for the same seed,
 * zero biases), which a net opens and runs to 3 outputs, the layers before
 * it untouched; a document ending in a convolution is refused, unchanged. */
static void test_new_head(void)
{
    char err[256] = "";
    dcz_doc *d[2] = { NULL, NULL };
    for (int k = 0; k < 2; k++) {
        dcz_net *net = NULL;
        REQUIRE_OK(dcz_net_create_arch("mlp:6-8-4", 21, &net, err, sizeof err), "%s", err);
        REQUIRE_OK(dcz_net_store(net, NULL), "store");
        uint8_t *buf = NULL;
        size_t len = 0;
        REQUIRE_OK(dcz_doc_write(net->doc, &buf, &len), "write");
        REQUIRE_OK(dcz_doc_read(buf, len, &d[k]), "read");
        free(buf);
        dcz_net_free(net);
    }
    const dcz_doc_layer *first = &d[0]->layers[0];
    float w0 = first->t[0].values[0];
    uint32_t was = 0;
    for (int k = 0; k < 2; k++)
        REQUIRE_OK(dcz_doc_new_head(d[k], 3, 99, &was, err, sizeof err), "new head: %s", err);
    CHECK(was == 4, "the old width %u", was);
    uint32_t last = d[0]->nlayers;
    while (last-- > 0 && d[0]->layers[last].op != DCZ_OP_DENSE) {}
    const dcz_doc_layer *h = &d[0]->layers[last];
    CHECK(h->attr[1] == 3 && h->ntensors == 2 && h->t[0].n == 3 * 8 && h->t[0].dims[0] == 3 &&
          h->t[1].n == 3 && h->t[0].enc == DCZ_ENC_F32, "the head: %d outputs, %zu weights", (int)h->attr[1],
          h->t[0].n);
    double ss = 0;
    int nonzero = 0;
    for (size_t i = 0; i < h->t[0].n; i++) {
        ss += (double)h->t[0].values[i] * h->t[0].values[i];
        nonzero += h->t[0].values[i] != 0.0f;
    }
    CHECK(nonzero == (int)h->t[0].n && ss / (double)h->t[0].n > 0.05 && ss / (double)h->t[0].n < 1.0,
          "He-normal weights (fan in 8: variance 0.25): mean square %g", ss / (double)h->t[0].n);
    CHECK(h->t[1].values[0] == 0 && h->t[1].values[2] == 0, "zero biases");
    CHECK(memcmp(h->t[0].values, d[1]->layers[last].t[0].values, h->t[0].n * sizeof(float)) == 0,
          "the same seed, the same head");
    CHECK(first->t[0].values[0] == w0, "the layers before untouched");
    dcz_net *net = NULL;
    REQUIRE_OK(dcz_net_open(d[0], &net), "open with the new head");
    const float x[6] = { 0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f };
    float y[3];
    CHECK(net->classes == 3 && dcz_net_forward(net, x, 1, y) == DCZ_OK, "3 outputs");
    dcz_net_free(net);
    CHECK(dcz_doc_new_head(d[0], 0, 1, NULL, err, sizeof err) == DCZ_ERR_ARG, "0 outputs");
    dcz_doc_free(d[0]);
    dcz_doc_free(d[1]);

    /* conv 1 -> 2 (3x3) as the last weighted layer, then a softmax */
    dcz_doc *c = NULL;
    REQUIRE_OK(dcz_doc_alloc(2, &c), "alloc");
    c->input_rank = 3;
    c->input_dims[0] = 1;
    c->input_dims[1] = c->input_dims[2] = 4;
    doc_conv_layer(&c->layers[0], "conv", 1, 2, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    doc_plain_layer(&c->layers[1], DCZ_OP_SOFTMAX, "prob");
    err[0] = 0;
    CHECK(dcz_doc_new_head(c, 3, 1, NULL, err, sizeof err) == DCZ_ERR_UNSUPPORTED &&
          strstr(err, "conv, is a conv2d; a new head replaces a fully connected one") && c->layers[0].attr[1] == 2,
          "conv last: %s", err);
    dcz_doc_free(c);
}

int main(void)
{
    RUN(test_gradcheck);
    RUN(test_distill);
    RUN(test_gradcheck_codebook);
    RUN(test_masks_stay_zero);
    RUN(test_codebook_training);
    RUN(test_sgd_blobs);
    RUN(test_determinism);
    RUN(test_warmup);
    RUN(test_arch);
    RUN(test_validate);
    RUN(test_forward);
    RUN(test_conv_forward_direct);
    RUN(test_conv_winograd);
    RUN(test_conv_depthwise);
    RUN(test_depthwise_planes);
    RUN(test_gradcheck_conv);
    RUN(test_gradcheck_winograd);
    RUN(test_gradcheck_pool);
    RUN(test_gradcheck_graph);
    RUN(test_gradcheck_silu);
    RUN(test_graph_matches_runtime);
    RUN(test_gradcheck_shuffle);
    RUN(test_shuffle_matches_runtime);
    RUN(test_fold_graph);
    RUN(test_gradcheck_batchnorm);
    RUN(test_bn_relu_fused);
    RUN(test_conv_pointwise_dx);
    RUN(test_dropout);
    RUN(test_conv_masks_codebooks);
    RUN(test_weight_decay_scope);
    RUN(test_conv_bands_backward);
    RUN(test_fold_for_inference);
    RUN(test_flat_buffers);
    RUN(test_arch_cnn);
    RUN(test_arch_blocks);
    RUN(test_validate_cnn);
    RUN(test_cnn_learns);
    RUN(test_cnn_determinism);
    RUN(test_par_covers);
    RUN(test_threads_same_result);
    RUN(test_sgemm_threads);
    RUN(test_lr);
    RUN(test_rng);
    RUN(test_new_head);
    RUN(test_vec_isas);
    return check_summary();
}
