/* test_train_dev.c: the trainer's device path (train/dev.c) on the host
 * device (train/tdev_host.c), which runs every pass of the path as the GPU
 * does (the same buffers, layouts, order of passes and per-element bodies;
 * products through the host's sgemm instead of cuBLAS), against the CPU
 * trainer (dcz_train_epoch):
 * - fully connected networks, plain, with a pruned layer and with a
 *   shared one (4 centroids), three epochs with a warmup and weight
 *   decay, on the device for the run and epoch by epoch through
 *   dcz_train_epoch (the momenta going back and forth): the same
 *   parameters and losses bit for bit, and the same masks and codebooks
 *   kept;
 * - with dropout, whose draws the device makes its own way: it learns,
 *   and two runs give the same bits;
 * - convolutional and graph networks (convolutions of 5x5, 3x3 at stride
 *   2, depthwise and grouped; both pools, batch norm, a residual ADD,
 *   squeeze-and-excitation, CONCAT of a tensor read twice, a channel
 *   shuffle, a slice): two epochs give the CPU's losses and parameters
 *   within rounding, its running statistics and its accuracy;
 * - sharded steps (4 parts a step, summed in fixed point): the CPU's
 *   sharded bits for a fully connected network, its parameters and running
 *   statistics within rounding for the graph network;
 * - distillation from a teacher run in inference on the device (its
 *   dropout off, its batch norm by its running statistics): a fully
 *   connected network gets the CPU's bits, whole steps and sharded; the
 *   graph network its parameters within rounding; a net kept open while
 *   the teachers of its epochs change gets the CPU's bits;
 * - what the path does not run (variational dropout, an update of its
 *   own, a batch over the net's cap) is refused, naming the layer.
 * The CUDA device is the same path with each body in a kernel; the GPU
 * tests run it where a GPU is.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/unit/train_build.h"
#include "train/dev.h"
#include "train/internal.h"

/* A net of mlp:12-20-10-3 from seed; pruned: fc1 masked at random;
 * shared: fc2 on 4 centroids, a third of it pruned. */
static dcz_net *mlp(uint64_t seed, int pruned, int shared, float dropout)
{
    dcz_tlayer g[] = { FC(20), SIMPLE(DCZ_OP_RELU), { .op = DCZ_OP_DROPOUT, .rate = dropout }, FC(10),
                       SIMPLE(DCZ_OP_TANH), FC(3), SIMPLE(DCZ_OP_SOFTMAX) };
    dcz_net *net = build_net(g, 7, 1, 1, 12, seed);
    if (!net) return NULL;
    dcz_rng r;
    dcz_rng_seed(&r, seed + 1);
    dcz_tlayer *fc1 = &net->layers[0], *fc2 = &net->layers[3];
    if (pruned) {
        const size_t n = dcz_tlayer_nweights(fc1);
        fc1->mask = malloc(n);
        for (size_t j = 0; fc1->mask && j < n; j++) fc1->mask[j] = dcz_rng_uniform(&r) > 0.5f;
    }
    if (shared) {
        const size_t n = dcz_tlayer_nweights(fc2);
        fc2->mask = malloc(n);
        fc2->assign = malloc(n);
        fc2->codebook = malloc(4 * sizeof(float));
        fc2->k = 4;
        for (int c = 0; fc2->codebook && c < 4; c++) fc2->codebook[c] = 0.2f * (float)(c - 1.5);
        for (size_t j = 0; fc2->mask && fc2->assign && j < n; j++) {
            fc2->mask[j] = dcz_rng_uniform(&r) > 0.33f;
            fc2->assign[j] = (uint8_t)dcz_rng_below(&r, 4);
        }
    }
    if (dcz_net_validate(net) != DCZ_OK) {
        dcz_net_free(net);
        return NULL;
    }
    return net;
}

static const dcz_sgd OPT = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-3f, .batch = 32, .train_biases = 1,
                             .train_weights = 1 };

/* Three epochs, the first a warmup: on the device when d is not NULL, the
 * net there for the three (each = 0) or for each epoch, through
 * dcz_train_epoch (each = 1: the momenta go back and forth). */
static int train3(dcz_net *net, dcz_tdev *d, int each, const dcz_dataset *ds, float loss[3], char *why, size_t whylen)
{
    dcz_rng r;
    dcz_rng_seed(&r, 9);
    dcz_dev_net *dn = NULL;
    if (d && !each && dcz_dev_open(d, net, OPT.batch, &dn) != DCZ_OK) {
        snprintf(why, whylen, "open: %s", dcz_dev_error(dn));
        dcz_dev_close(dn);
        return 0;
    }
    int ok = 1;
    for (int e = 0; e < 3 && ok; e++) {
        dcz_sgd opt = OPT;
        if (e == 0) opt.ramp_to = 1.0f;
        if (each) opt.device = d;
        const dcz_status s = dn ? dcz_dev_train_epoch(dn, ds, &opt, &r, NULL, NULL, &loss[e])
                                : dcz_train_epoch(net, ds, &opt, &r, NULL, NULL, &loss[e]);
        if (s != DCZ_OK) {
            snprintf(why, whylen, "epoch %d: %s %s", e, dcz_status_str(s), dn ? dcz_dev_error(dn) : d ? d->err : "");
            ok = 0;
        }
    }
    dcz_dev_close(dn);
    return ok;
}

static void test_same_bits(void)
{
    dcz_dataset ds;
    REQUIRE(blobs3(&ds, 500, 12, 4), "blobs");
    dcz_tdev *d = NULL;
    REQUIRE(dcz_tdev_open_host(&d) == DCZ_OK, "host device");
    for (int c = 0; c < 6; c++) {   /* plain, pruned, shared; on the device for the run, then by epoch */
        const int kind = c % 3, each = c >= 3;
        dcz_net *cpu = mlp(21, kind == 1, kind == 2, 0), *dev = mlp(21, kind == 1, kind == 2, 0);
        REQUIRE(cpu && dev, "nets");
        float lc[3], ld[3];
        char why[300] = "";
        REQUIRE(train3(cpu, NULL, 0, &ds, lc, why, sizeof why), "CPU: %s", why);
        REQUIRE(train3(dev, d, each, &ds, ld, why, sizeof why), "device: %s", why);
        CHECK(memcmp(lc, ld, sizeof lc) == 0, "case %d: losses %.9g %.9g %.9g on the CPU, %.9g %.9g %.9g on the device",
              c, lc[0], lc[1], lc[2], ld[0], ld[1], ld[2]);
        CHECK(lc[2] < lc[0] * 0.8f, "case %d: the loss fell from %g to %g", c, lc[0], lc[2]);
        size_t diff = 0;
        for (size_t j = 0; j < cpu->param_count; j++) diff += memcmp(&cpu->param[j], &dev->param[j], sizeof(float)) != 0;
        CHECK(diff == 0, "case %d: %zu of %zu parameters differ", c, diff, cpu->param_count);
        if (kind == 2)
            CHECK(memcmp(cpu->layers[3].codebook, dev->layers[3].codebook, 4 * sizeof(float)) == 0,
                  "the centroids differ");
        const dcz_tlayer *m = &dev->layers[kind == 2 ? 3 : 0];
        size_t zero = 0, pruned = 0;
        for (size_t j = 0; m->mask && j < dcz_tlayer_nweights(m); j++) {
            pruned += !m->mask[j];
            zero += !m->mask[j] && m->w[j] == 0.0f;
        }
        CHECK(zero == pruned && (kind == 0 || pruned > 20), "case %d: %zu of %zu pruned weights at 0", c, zero, pruned);
        double acc = 0;
        CHECK(dcz_net_evaluate(dev, &ds, &acc) == DCZ_OK && acc > 0.8, "case %d: accuracy %g after training", c,
              acc);
        dcz_net_free(cpu);
        dcz_net_free(dev);
    }
    dcz_tdev_close(d);
    dcz_dataset_free(&ds);
}

static void test_dropout(void)
{
    dcz_dataset ds;
    REQUIRE(blobs3(&ds, 500, 12, 5), "blobs");
    dcz_tdev *d = NULL;
    REQUIRE(dcz_tdev_open_host(&d) == DCZ_OK, "host device");
    dcz_net *a = mlp(22, 0, 0, 0.3f), *b = mlp(22, 0, 0, 0.3f);
    REQUIRE(a && b, "nets");
    float la[3], lb[3];
    char why[300] = "";
    REQUIRE(train3(a, d, 0, &ds, la, why, sizeof why) && train3(b, d, 1, &ds, lb, why, sizeof why), "%s", why);
    CHECK(memcmp(a->param, b->param, a->param_count * sizeof(float)) == 0,
          "two runs with dropout differ (one on the device for the run, one by epoch)");
    double acc = 0;
    CHECK(dcz_net_evaluate(a, &ds, &acc) == DCZ_OK && acc > 0.8, "accuracy %g with dropout", acc);
    CHECK(la[2] < la[0], "loss %g -> %g", la[0], la[2]);
    dcz_net_free(a);
    dcz_net_free(b);
    dcz_tdev_close(d);
    dcz_dataset_free(&ds);
}

/* Convolutional and graph networks: two epochs on the CPU and on the host
 * device from the same start reach the same losses and parameters within
 * rounding (the convolutions and batch norm sum in other orders), the same
 * running statistics, and the same accuracy. */
static void test_graphs(void)
{
    dcz_tdev *d = NULL;
    REQUIRE(dcz_tdev_open_host(&d) == DCZ_OK, "host device");
    struct { const dcz_tlayer *g; int n; const char *name; } nets[] = { { NULL, 0, "LeNet-like" }, { NULL, 0, "graph" } };
    nets[0].g = lenet_like(&nets[0].n);
    nets[1].g = graph_layers(&nets[1].n);
    dcz_dataset ds;
    REQUIRE(image_blobs(&ds, 300, 7), "images");
    const dcz_sgd opt = { .lr = 0.02f, .momentum = 0.9f, .weight_decay = 1e-4f, .batch = 16, .train_biases = 1,
                          .train_weights = 1 };
    for (size_t k = 0; k < sizeof nets / sizeof *nets; k++) {
        dcz_net *cpu = build_net(nets[k].g, nets[k].n, 2, 8, 8, 50 + k), *dev = build_net(nets[k].g, nets[k].n, 2, 8, 8, 50 + k);
        REQUIRE(cpu && dev, "%s: build", nets[k].name);
        dcz_rng rc, rd;
        dcz_rng_seed(&rc, 3);
        dcz_rng_seed(&rd, 3);
        dcz_dev_net *dn = NULL;
        REQUIRE(dcz_dev_open(d, dev, opt.batch, &dn) == DCZ_OK, "%s: open: %s", nets[k].name, dcz_dev_error(dn));
        float lc[2], ld[2];
        for (int e = 0; e < 2; e++) {
            REQUIRE(dcz_train_epoch(cpu, &ds, &opt, &rc, NULL, NULL, &lc[e]) == DCZ_OK, "%s: CPU epoch", nets[k].name);
            REQUIRE(dcz_dev_train_epoch(dn, &ds, &opt, &rd, NULL, NULL, &ld[e]) == DCZ_OK, "%s: device epoch: %s",
                    nets[k].name, dcz_dev_error(dn));
        }
        dcz_dev_close(dn);
        for (int e = 0; e < 2; e++)
            CHECK(fabsf(lc[e] - ld[e]) <= 1e-5f * fabsf(lc[e]), "%s epoch %d: loss %.7g on the CPU, %.7g on the device",
                  nets[k].name, e, lc[e], ld[e]);
        CHECK(lc[1] < lc[0], "%s: the loss fell from %g to %g", nets[k].name, lc[0], lc[1]);
        const double gap = param_gap(cpu, dev);
        CHECK(gap < 1e-5, "%s: parameters %.3g apart (of the largest)", nets[k].name, gap);
        for (int i = 0; i < cpu->nlayers; i++) {
            const dcz_tlayer *a = &cpu->layers[i], *b = &dev->layers[i];
            if (a->op != DCZ_OP_BATCHNORM) continue;
            double m = 0;
            for (int c = 0; c < a->in_c; c++)
                m = fmax(m, fmax(fabs(a->run_mean[c] - b->run_mean[c]), fabs(a->run_var[c] - b->run_var[c])));
            CHECK(m < 1e-3, "%s: %s's running statistics %.3g apart", nets[k].name, a->name, m);
        }
        double ac = 0, ad = 0;
        CHECK(dcz_net_evaluate(cpu, &ds, &ac) == DCZ_OK && dcz_net_evaluate(dev, &ds, &ad) == DCZ_OK, "evaluate");
        CHECK(fabs(ac - ad) <= 0.01 && ad > 0.6, "%s: accuracy %g on the CPU, %g on the device", nets[k].name, ac, ad);
        dcz_net_free(cpu);
        dcz_net_free(dev);
    }
    dcz_dataset_free(&ds);
    dcz_tdev_close(d);
}

/* Sharded steps: a step's batch in 4 parts, each run on the host device,
 * their gradients and batch-norm statistics summed in fixed point on the
 * host as the CPU's sharded steps sum theirs: a fully connected network
 * gives the CPU's sharded bits, the graph network its parameters within
 * rounding. */
static void test_shards(void)
{
    dcz_tdev *d = NULL;
    REQUIRE(dcz_tdev_open_host(&d) == DCZ_OK, "host device");
    dcz_dataset ds, img;
    REQUIRE(blobs3(&ds, 300, 12, 9) && image_blobs(&img, 200, 10), "data");
    for (int k = 0; k < 2; k++) {
        int n = 0;
        const dcz_tlayer *g = k ? graph_layers(&n) : NULL;
        dcz_net *cpu = k ? build_net(g, n, 2, 8, 8, 70) : mlp(24, 1, 0, 0);
        dcz_net *dev = k ? build_net(g, n, 2, 8, 8, 70) : mlp(24, 1, 0, 0);
        REQUIRE(cpu && dev, "nets");
        dcz_sgd opt = OPT;
        opt.batch = 32;
        opt.shards = 4;
        dcz_rng rc, rd;
        dcz_rng_seed(&rc, 5);
        dcz_rng_seed(&rd, 5);
        float lc = 0, ld = 0;
        for (int e = 0; e < 2; e++) {
            REQUIRE(dcz_train_epoch(cpu, k ? &img : &ds, &opt, &rc, NULL, NULL, &lc) == DCZ_OK, "CPU");
            opt.device = d;
            const dcz_status s = dcz_train_epoch(dev, k ? &img : &ds, &opt, &rd, NULL, NULL, &ld);
            REQUIRE(s == DCZ_OK, "device: %s %s", dcz_status_str(s), d->err);
            opt.device = NULL;
        }
        if (k == 0) {
            CHECK(lc == ld && memcmp(cpu->param, dev->param, cpu->param_count * sizeof(float)) == 0,
                  "sharded: losses %.9g and %.9g, parameters %.3g apart", lc, ld, param_gap(cpu, dev));
        } else {
            CHECK(fabsf(lc - ld) <= 1e-5f * fabsf(lc) && param_gap(cpu, dev) < 1e-5,
                  "sharded graph: losses %.9g and %.9g, parameters %.3g apart", lc, ld, param_gap(cpu, dev));
            double m = 0;
            for (int i = 0; i < cpu->nlayers; i++)
                if (cpu->layers[i].op == DCZ_OP_BATCHNORM)
                    for (int c = 0; c < cpu->layers[i].in_c; c++)
                        m = fmax(m, fabs(cpu->layers[i].run_var[c] - dev->layers[i].run_var[c]));
            CHECK(m < 1e-4, "sharded graph: running variances %.3g apart", m);
        }
        dcz_net_free(cpu);
        dcz_net_free(dev);
    }
    dcz_dataset_free(&ds);
    dcz_dataset_free(&img);
    dcz_tdev_close(d);
}

/* Distillation (opt.teacher): two epochs from the same start on the CPU
 * and on the host device, whole steps and 4 parts a step. The fully
 * connected student, taught by a net with dropout (which its inference
 * pass leaves off), gets the CPU's losses and parameters bit for bit; the
 * graph network, taught by another graph network whose batch norm runs
 * by its running statistics, within rounding. */
static void test_distill(void)
{
    dcz_tdev *d = NULL;
    REQUIRE(dcz_tdev_open_host(&d) == DCZ_OK, "host device");
    dcz_dataset ds, img;
    REQUIRE(blobs3(&ds, 300, 12, 11) && image_blobs(&img, 200, 12), "data");
    for (int c = 0; c < 4; c++) {
        const int k = c & 1, shards = c & 2 ? 4 : 1;
        int n = 0;
        const dcz_tlayer *g = k ? graph_layers(&n) : NULL;
        dcz_net *cpu = k ? build_net(g, n, 2, 8, 8, 71) : mlp(25, 1, 0, 0);
        dcz_net *dev = k ? build_net(g, n, 2, 8, 8, 71) : mlp(25, 1, 0, 0);
        dcz_net *teacher = k ? build_net(g, n, 2, 8, 8, 72) : mlp(26, 0, 0, 0.3f);
        REQUIRE(cpu && dev && teacher, "nets");
        teacher_stats(teacher, 73);
        dcz_sgd opt = OPT;
        opt.batch = 32;
        opt.shards = shards;
        opt.teacher = teacher;
        opt.distill = 0.6f;
        opt.temperature = 3.0f;
        dcz_rng rc, rd;
        dcz_rng_seed(&rc, 6);
        dcz_rng_seed(&rd, 6);
        float lc[2] = { 0 }, ld[2] = { 0 };
        for (int e = 0; e < 2; e++) {
            REQUIRE(dcz_train_epoch(cpu, k ? &img : &ds, &opt, &rc, NULL, NULL, &lc[e]) == DCZ_OK, "CPU");
            opt.device = d;
            const dcz_status s = dcz_train_epoch(dev, k ? &img : &ds, &opt, &rd, NULL, NULL, &ld[e]);
            REQUIRE(s == DCZ_OK, "case %d: device: %s %s", c, dcz_status_str(s), d->err);
            opt.device = NULL;
        }
        CHECK(lc[1] < lc[0], "case %d: the loss fell from %g to %g", c, lc[0], lc[1]);
        if (k == 0) {
            const size_t bytes = cpu->param_count * sizeof(float);
            CHECK(memcmp(lc, ld, sizeof lc) == 0 && memcmp(cpu->param, dev->param, bytes) == 0,
                  "case %d: losses %.9g %.9g and %.9g %.9g, parameters %.3g apart", c, lc[0], lc[1], ld[0], ld[1],
                  param_gap(cpu, dev));
        } else {
            CHECK(fabsf(lc[1] - ld[1]) <= 1e-5f * fabsf(lc[1]) && param_gap(cpu, dev) < 1e-5,
                  "case %d: losses %.9g and %.9g, parameters %.3g apart", c, lc[1], ld[1], param_gap(cpu, dev));
        }
        /* the teacher counts: without it the student learns other weights */
        dcz_net *plain = k ? build_net(g, n, 2, 8, 8, 71) : mlp(25, 1, 0, 0);
        REQUIRE(plain, "net");
        opt.teacher = NULL;
        opt.distill = 0;
        opt.device = d;
        dcz_rng_seed(&rd, 6);
        for (int e = 0; e < 2; e++)
            REQUIRE(dcz_train_epoch(plain, k ? &img : &ds, &opt, &rd, NULL, NULL, NULL) == DCZ_OK, "without a teacher");
        CHECK(param_gap(plain, dev) > 1e-3, "case %d: the teacher changed the parameters by %.3g only", c,
              param_gap(plain, dev));
        dcz_net_free(plain);
        dcz_net_free(cpu);
        dcz_net_free(dev);
        dcz_net_free(teacher);
    }
    dcz_dataset_free(&ds);
    dcz_dataset_free(&img);
    dcz_tdev_close(d);
}

/* One net kept open on the device for three epochs whose teachers change
 * (one, none, another): the CPU's bits; the net as its own teacher and a
 * teacher of other classes refused, the latter saying why. */
static void test_teacher_switch(void)
{
    dcz_tdev *d = NULL;
    REQUIRE(dcz_tdev_open_host(&d) == DCZ_OK, "host device");
    dcz_dataset ds;
    REQUIRE(blobs3(&ds, 300, 12, 13), "data");
    dcz_net *cpu = mlp(27, 0, 0, 0), *dev = mlp(27, 0, 0, 0), *ta = mlp(28, 0, 0, 0), *tb = mlp(29, 0, 0, 0.2f);
    REQUIRE(cpu && dev && ta && tb, "nets");
    dcz_dev_net *dn = NULL;
    REQUIRE(dcz_dev_open(d, dev, 32, &dn) == DCZ_OK, "open: %s", dcz_dev_error(dn));
    dcz_rng rc, rd;
    dcz_rng_seed(&rc, 8);
    dcz_rng_seed(&rd, 8);
    dcz_net *teachers[3] = { ta, NULL, tb };
    float lc[3], ld[3];
    for (int e = 0; e < 3; e++) {
        dcz_sgd opt = OPT;
        opt.teacher = teachers[e];
        opt.distill = teachers[e] ? 0.5f : 0.0f;
        opt.temperature = teachers[e] ? 2.0f : 0.0f;
        REQUIRE(dcz_train_epoch(cpu, &ds, &opt, &rc, NULL, NULL, &lc[e]) == DCZ_OK, "CPU epoch %d", e);
        REQUIRE(dcz_dev_train_epoch(dn, &ds, &opt, &rd, NULL, NULL, &ld[e]) == DCZ_OK, "device epoch %d: %s", e,
                dcz_dev_error(dn));
    }
    CHECK(memcmp(lc, ld, sizeof lc) == 0 && memcmp(cpu->param, dev->param, cpu->param_count * sizeof(float)) == 0,
          "teachers changing between epochs: losses %.9g %.9g %.9g and %.9g %.9g %.9g", lc[0], lc[1], lc[2], ld[0],
          ld[1], ld[2]);
    dcz_sgd opt = OPT;
    opt.distill = 0.5f;
    opt.temperature = 2.0f;
    opt.teacher = dev;
    CHECK(dcz_dev_train_epoch(dn, &ds, &opt, &rd, NULL, NULL, NULL) == DCZ_ERR_ARG, "the net as its own teacher");
    dcz_net *wide = NULL;
    char err[128];
    REQUIRE(dcz_net_create_arch("mlp:12-8-4", 3, &wide, err, sizeof err) == DCZ_OK, "%s", err);
    opt.teacher = wide;
    CHECK(dcz_dev_train_epoch(dn, &ds, &opt, &rd, NULL, NULL, NULL) == DCZ_ERR_SHAPE &&
          strstr(dcz_dev_error(dn), "classes"), "a teacher of 4 classes: '%s'", dcz_dev_error(dn));
    dcz_dev_close(dn);
    dcz_net_free(wide);
    dcz_net_free(cpu);
    dcz_net_free(dev);
    dcz_net_free(ta);
    dcz_net_free(tb);
    dcz_dataset_free(&ds);
    dcz_tdev_close(d);
}

static dcz_status update_none(dcz_net *net, const dcz_sgd *step, void *ctx)
{
    (void)net;
    (void)step;
    (void)ctx;
    return DCZ_OK;
}

static void test_refused(void)
{
    dcz_tdev *d = NULL;
    REQUIRE(dcz_tdev_open_host(&d) == DCZ_OK, "host device");
    dcz_net *net = mlp(23, 0, 0, 0);
    dcz_dataset ds;
    REQUIRE(net && blobs3(&ds, 100, 12, 6), "net");
    /* a layer under variational dropout */
    float s2 = 0;
    net->layers[3].vd_s2 = &s2;
    dcz_dev_net *dn = NULL;
    CHECK(dcz_dev_open(d, net, 16, &dn) == DCZ_ERR_UNSUPPORTED && strstr(dcz_dev_error(dn), "l3"),
          "variational dropout accepted: '%s'", dcz_dev_error(dn));
    dcz_dev_close(dn);
    net->layers[3].vd_s2 = NULL;
    REQUIRE(dcz_dev_open(d, net, 16, &dn) == DCZ_OK, "open: %s", dcz_dev_error(dn));
    dcz_rng r;
    dcz_rng_seed(&r, 1);
    dcz_sgd opt = OPT;
    CHECK(dcz_dev_train_epoch(dn, &ds, &opt, &r, NULL, NULL, NULL) == DCZ_ERR_ARG, "a batch of 32 on a cap of 16");
    opt.batch = 16;
    opt.update = update_none;
    CHECK(dcz_dev_train_epoch(dn, &ds, &opt, &r, NULL, NULL, NULL) == DCZ_ERR_UNSUPPORTED, "an update of its own accepted");
    opt.update = NULL;
    CHECK(dcz_dev_train_epoch(dn, &ds, &opt, &r, NULL, NULL, NULL) == DCZ_OK, "an epoch: %s", dcz_dev_error(dn));
    dcz_dev_close(dn);
    dcz_net_free(net);
    dcz_dataset_free(&ds);
    dcz_tdev_close(d);
}

int main(void)
{
    RUN(test_same_bits);
    RUN(test_dropout);
    RUN(test_graphs);
    RUN(test_shards);
    RUN(test_distill);
    RUN(test_teacher_switch);
    RUN(test_refused);
    return check_summary();
}
