/* test_gpu_train.c: the trainer's device path on a GPU (train/dev.c on the
 * CUDA device, train/cuda/tdev_cuda.cu), against the same path on the host
 * device (which tests/unit/test_train_dev.c holds to the CPU trainer's
 * bits): fully connected networks, plain, pruned and shared, trained three
 * epochs each way reach the same loss within 1e-3 and the same accuracy
 * within a point, masks and codebooks kept; two runs on the GPU give the
 * same parameters bit for bit (no atomics: every output one thread's), and
 * so do two runs with dropout; a LeNet-like network and one of every graph
 * layer (tests/unit/train_build.h) give the host's losses and parameters
 * within rounding after two epochs, and the same bits twice, the graph
 * network also taught by another (distillation: the teacher's forward
 * passes in inference on the GPU). Without a GPU (or a build without the
 * CUDA backend) it prints SKIP with the reason and checks nothing else; it
 * never passes silently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/unit/train_build.h"
#include "train/dev.h"
#include "train/internal.h"

/* mlp:64-256-128-3 with fc1 pruned at random and fc2 shared on 16
 * centroids as `kind` says (0 plain, 1 pruned, 2 shared), dropout rate. */
static dcz_net *mlp(int kind, float dropout)
{
    dcz_tlayer g[] = { FC(256), SIMPLE(DCZ_OP_RELU), { .op = DCZ_OP_DROPOUT, .rate = dropout }, FC(128),
                       SIMPLE(DCZ_OP_TANH), FC(3), SIMPLE(DCZ_OP_SOFTMAX) };
    dcz_net *net = build_net(g, 7, 1, 1, 64, 31);
    if (!net) return NULL;
    dcz_rng r;
    dcz_rng_seed(&r, 32);
    dcz_tlayer *fc1 = &net->layers[0], *fc2 = &net->layers[3];
    if (kind == 1) {
        const size_t n = dcz_tlayer_nweights(fc1);
        fc1->mask = malloc(n);
        for (size_t j = 0; fc1->mask && j < n; j++) fc1->mask[j] = dcz_rng_uniform(&r) > 0.7f;
    }
    if (kind == 2) {   /* 16 centroids evenly over the weights' range, each weight on its nearest, as quantize does */
        const size_t n = dcz_tlayer_nweights(fc2);
        fc2->assign = malloc(n);
        fc2->codebook = malloc(16 * sizeof(float));
        fc2->k = 16;
        float lo = fc2->w[0], hi = fc2->w[0];
        for (size_t j = 1; j < n; j++) {
            lo = fminf(lo, fc2->w[j]);
            hi = fmaxf(hi, fc2->w[j]);
        }
        for (int c = 0; fc2->codebook && c < 16; c++) fc2->codebook[c] = lo + (hi - lo) * (float)c / 15.0f;
        for (size_t j = 0; fc2->assign && j < n; j++) {
            const float t = (fc2->w[j] - lo) / (hi - lo) * 15.0f + 0.5f;
            fc2->assign[j] = (uint8_t)(t < 0 ? 0 : t > 15 ? 15 : t);
        }
    }
    if (dcz_net_validate(net) != DCZ_OK) {
        dcz_net_free(net);
        return NULL;
    }
    return net;
}

/* Three epochs on device d; a net with a shared layer, whose centroids
 * each move by the sum of thousands of weights' gradients, at a fiftieth
 * of the rate (as quantize's fine-tuning runs slower than training). */
static int train3(dcz_net *net, dcz_tdev *d, const dcz_dataset *ds, float *loss, char *why, size_t whylen)
{
    const int shared = net->layers[3].codebook != NULL;
    const dcz_sgd opt = { .lr = shared ? 0.001f : 0.05f, .momentum = 0.9f, .weight_decay = 1e-3f, .batch = 64,
                          .train_biases = 1, .train_weights = 1 };
    dcz_rng r;
    dcz_rng_seed(&r, 9);
    dcz_dev_net *dn = NULL;
    dcz_status s = dcz_dev_open(d, net, opt.batch, &dn);
    for (int e = 0; e < 3 && s == DCZ_OK; e++) s = dcz_dev_train_epoch(dn, ds, &opt, &r, NULL, NULL, loss);
    if (s != DCZ_OK) snprintf(why, whylen, "%s: %s", dcz_status_str(s), dcz_dev_error(dn));
    dcz_dev_close(dn);
    return s == DCZ_OK;
}

static dcz_tdev *gpu, *host;

static void test_against_host(void)
{
    dcz_dataset ds, te;
    REQUIRE(blobs3(&ds, 4000, 64, 4) && blobs3(&te, 1000, 64, 5), "blobs");
    for (int kind = 0; kind < 3; kind++) {
        dcz_net *a = mlp(kind, 0), *b = mlp(kind, 0), *c = mlp(kind, 0);
        REQUIRE(a && b && c, "nets");
        float la = 0, lb = 0, lc = 0;
        char why[300] = "";
        REQUIRE(train3(a, gpu, &ds, &la, why, sizeof why), "GPU: %s", why);
        REQUIRE(train3(b, gpu, &ds, &lb, why, sizeof why), "GPU again: %s", why);
        REQUIRE(train3(c, host, &ds, &lc, why, sizeof why), "host: %s", why);
        CHECK(memcmp(a->param, b->param, a->param_count * sizeof(float)) == 0 && la == lb,
              "kind %d: two GPU runs differ", kind);
        CHECK(fabsf(la - lc) < 1e-3f, "kind %d: loss %g on the GPU, %g on the host", kind, la, lc);
        double acc_a = 0, acc_c = 0;
        CHECK(dcz_net_evaluate(a, &te, &acc_a) == DCZ_OK && dcz_net_evaluate(c, &te, &acc_c) == DCZ_OK, "evaluate");
        CHECK(acc_a > 0.9 && fabs(acc_a - acc_c) < 0.01, "kind %d: accuracy %g on the GPU, %g on the host", kind,
              acc_a, acc_c);
        if (kind == 1) {
            size_t bad = 0;
            for (size_t j = 0; j < dcz_tlayer_nweights(&a->layers[0]); j++)
                bad += !a->layers[0].mask[j] && a->layers[0].w[j] != 0.0f;
            CHECK(bad == 0, "%zu pruned weights moved on the GPU", bad);
        }
        if (kind == 2) {
            size_t bad = 0;
            for (size_t j = 0; j < dcz_tlayer_nweights(&a->layers[3]); j++)
                bad += a->layers[3].w[j] != a->layers[3].codebook[a->layers[3].assign[j]];
            CHECK(bad == 0, "%zu shared weights off their centroids on the GPU", bad);
        }
        dcz_net_free(a);
        dcz_net_free(b);
        dcz_net_free(c);
    }
    dcz_net *a = mlp(0, 0.3f), *b = mlp(0, 0.3f);
    float la = 0, lb = 0;
    char why[300] = "";
    REQUIRE(a && b && train3(a, gpu, &ds, &la, why, sizeof why) && train3(b, gpu, &ds, &lb, why, sizeof why),
            "dropout: %s", why);
    CHECK(memcmp(a->param, b->param, a->param_count * sizeof(float)) == 0, "two GPU runs with dropout differ");
    dcz_net_free(a);
    dcz_net_free(b);
    dcz_dataset_free(&ds);
    dcz_dataset_free(&te);
}

/* The convolutional and graph networks, the graph also with a teacher
 * (batch norm by running statistics of its own): two epochs on the GPU
 * and on the host device reach the same losses and parameters within
 * rounding (cuBLAS sums in its own order), and two GPU runs the same
 * bits. */
static void test_graphs(void)
{
    dcz_dataset ds;
    REQUIRE(image_blobs(&ds, 600, 7), "images");
    for (int k = 0; k < 3; k++) {
        int n = 0;
        const dcz_tlayer *g = k ? graph_layers(&n) : lenet_like(&n);
        dcz_net *teacher = k == 2 ? build_net(g, n, 2, 8, 8, 65) : NULL;
        if (teacher) teacher_stats(teacher, 66);
        REQUIRE(k < 2 || teacher, "teacher");
        const dcz_sgd opt = { .lr = 0.02f, .momentum = 0.9f, .weight_decay = 1e-4f, .batch = 32, .train_biases = 1,
                              .train_weights = 1, .teacher = teacher, .distill = teacher ? 0.6f : 0.0f,
                              .temperature = teacher ? 3.0f : 0.0f };
        dcz_net *nets[3];
        float loss[3][2];
        for (int r = 0; r < 3; r++) {   /* the GPU twice, then the host */
            nets[r] = build_net(g, n, 2, 8, 8, 60 + (uint64_t)k);
            REQUIRE(nets[r], "build");
            dcz_rng rng;
            dcz_rng_seed(&rng, 3);
            dcz_dev_net *dn = NULL;
            dcz_status s = dcz_dev_open(r < 2 ? gpu : host, nets[r], opt.batch, &dn);
            for (int e = 0; e < 2 && s == DCZ_OK; e++) s = dcz_dev_train_epoch(dn, &ds, &opt, &rng, NULL, NULL, &loss[r][e]);
            REQUIRE(s == DCZ_OK, "net %d run %d: %s", k, r, dcz_dev_error(dn));
            dcz_dev_close(dn);
        }
        CHECK(memcmp(nets[0]->param, nets[1]->param, nets[0]->param_count * sizeof(float)) == 0,
              "net %d: two GPU runs differ", k);
        const double gap = param_gap(nets[2], nets[0]);
        CHECK(gap <= 1e-4, "net %d: parameters %.3g apart on the GPU and the host (of the largest)", k, gap);
        CHECK(fabsf(loss[0][1] - loss[2][1]) <= 1e-3f * fabsf(loss[2][1]) + 1e-6f, "net %d: loss %g on the GPU, %g on the host",
              k, loss[0][1], loss[2][1]);
        for (int r = 0; r < 3; r++) dcz_net_free(nets[r]);
        dcz_net_free(teacher);
    }
    dcz_dataset_free(&ds);
}

int main(void)
{
    char why[256];
    if (dcz_tdev_open_cuda(0, &gpu, why, sizeof why) != DCZ_OK) {
        printf("SKIP test_gpu_train: %s\n", why);
        return check_summary();
    }
    if (dcz_tdev_open_host(&host) != DCZ_OK) return 1;
    RUN(test_against_host);
    RUN(test_graphs);
    dcz_tdev_close(gpu);
    dcz_tdev_close(host);
    return check_summary();
}
