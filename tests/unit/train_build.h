/* train_build.h: small training networks built layer by layer, for the
 * trainer's tests (test_train.c, test_train_emu.c, test_train_dev.c,
 * test_gpu_train.c): build_net and the macros that spell its layers,
 * blobs3 and image_blobs, small datasets of three classes, and two small
 * convolutional networks. Header-only; checked by those
 * tests.
 */
#ifndef DCZ_TESTS_TRAIN_BUILD_H
#define DCZ_TESTS_TRAIN_BUILD_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train.h"

/* A network of the given layers (kind and settings; names are given here)
 * on input shape (c, h, w), sized by dcz_net_infer_shapes and initialized
 * from seed, with small random biases and batch-norm parameters. */
static inline dcz_net *build_net(const dcz_tlayer *protos, int n, int c, int h, int w, uint64_t seed)
{
    dcz_net *net = NULL;
    if (dcz_net_alloc(n, &net) != DCZ_OK) return NULL;
    memcpy(net->layers, protos, (size_t)n * sizeof *protos);
    for (int i = 0; i < n; i++)
        if (net->layers[i].name[0] == '\0') snprintf(net->layers[i].name, 64, "l%d", i);
    net->in_rank = 3;
    net->in_dims[0] = (uint32_t)c;
    net->in_dims[1] = (uint32_t)h;
    net->in_dims[2] = (uint32_t)w;
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    if (dcz_net_infer_shapes(net) != DCZ_OK || dcz_net_init_params(net, &r) != DCZ_OK) {
        dcz_net_free(net);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        dcz_tlayer *l = &net->layers[i];
        size_t nb = dcz_tlayer_nbias(l);
        for (size_t j = 0; j < nb && l->b; j++) l->b[j] = 0.2f * dcz_rng_normal(&r);
        if (l->op == DCZ_OP_BATCHNORM)
            for (size_t j = 0; j < nb; j++) {
                l->w[j] = 1.0f + 0.3f * dcz_rng_normal(&r);
                l->run_mean[j] = 0.3f * dcz_rng_normal(&r);
                l->run_var[j] = 0.5f + dcz_rng_uniform(&r);
            }
    }
    if (dcz_net_validate(net) != DCZ_OK) {
        dcz_net_free(net);
        return NULL;
    }
    return net;
}

/* Three classes of Gaussian blobs in d dimensions: class c's mean is
 * 1.2 on the axes j with j % 3 == c and -0.4 on the others. */
static inline int blobs3(dcz_dataset *ds, size_t n, int d, uint64_t seed)
{
    memset(ds, 0, sizeof *ds);
    ds->x = malloc(n * (size_t)d * sizeof(float));
    ds->y = malloc(n);
    if (!ds->x || !ds->y) return 0;
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        ds->y[i] = (uint8_t)(i % 3);
        for (int j = 0; j < d; j++)
            ds->x[i * (size_t)d + (size_t)j] = (j % 3 == ds->y[i] ? 1.2f : -0.4f) + dcz_rng_normal(&r);
    }
    ds->n = n;
    ds->c = ds->h = 1;
    ds->w = (uint32_t)d;
    ds->classes = 3;
    return 1;
}

#define CONV(oc, k_h, k_w, s, p) { .op = DCZ_OP_CONV2D, .out_c = (oc), .kh = (k_h), .kw = (k_w), \
                                   .sh = (s), .sw = (s), .ph = (p), .pw = (p) }
#define POOL(kd, k, s, p, cip) { .op = (kd), .kh = (k), .kw = (k), .sh = (s), .sw = (s), \
                                 .ph = (p), .pw = (p), .count_include_pad = (cip) }
#define SIMPLE(kd) { .op = (kd) }
#define FC(n) { .op = DCZ_OP_DENSE, .out = (n) }
#define READS1(a) .nin = 1, .tin = { (a) }
#define READS2(a, b) .nin = 2, .tin = { (a), (b) }

/* Two networks over 2 x 8 x 8 images of three classes (image_blobs):
 * LeNet-like (convolutions of 5x5 and of 3x3 at stride 2, both pools,
 * ReLU) and one of every graph layer (batch norm, a residual ADD, a
 * depthwise convolution, squeeze-and-excitation by a global mean and MUL,
 * CONCAT of a tensor read twice, a channel shuffle, a slice, a grouped
 * convolution at stride 2). */
static inline const dcz_tlayer *lenet_like(int *n)
{
    static const dcz_tlayer g[] = {
        CONV(6, 5, 5, 1, 2), POOL(DCZ_OP_MAXPOOL, 2, 2, 0, 0), SIMPLE(DCZ_OP_RELU), CONV(8, 3, 3, 2, 1),
        POOL(DCZ_OP_AVGPOOL, 3, 1, 1, 0), SIMPLE(DCZ_OP_FLATTEN), FC(16), SIMPLE(DCZ_OP_RELU), FC(3), SIMPLE(DCZ_OP_SOFTMAX),
    };
    *n = (int)(sizeof g / sizeof *g);
    return g;
}

static inline const dcz_tlayer *graph_layers(int *n)
{
    static const dcz_tlayer g[] = {
        CONV(8, 3, 3, 1, 1),                                                        /* 1 */
        SIMPLE(DCZ_OP_BATCHNORM),                                                   /* 2 */
        SIMPLE(DCZ_OP_RELU),                                                        /* 3 */
        { .op = DCZ_OP_CONV2D, .out_c = 8, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .group = 8 },
        SIMPLE(DCZ_OP_BATCHNORM),                                                   /* 5 */
        { .op = DCZ_OP_ADD, READS2(5, 3) },                                         /* 6 */
        SIMPLE(DCZ_OP_GLOBAL_AVGPOOL),                                              /* 7 */
        FC(8),                                                                      /* 8 */
        { .op = DCZ_OP_HARD_SIGMOID, .param = { 1.0f / 6, 0.5f } },                 /* 9 */
        { .op = DCZ_OP_MUL, READS2(6, 9) },                                         /* 10 */
        { .op = DCZ_OP_CONCAT, READS2(10, 3) },                                     /* 11: 16 channels */
        { .op = DCZ_OP_CHANNEL_SHUFFLE, .group = 2 },                               /* 12 */
        { .op = DCZ_OP_SLICE, .start = 2, .out_c = 10 },                            /* 13 */
        { .op = DCZ_OP_CONV2D, .out_c = 6, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .group = 2 },
        SIMPLE(DCZ_OP_SILU),                                                        /* 15 */
        SIMPLE(DCZ_OP_FLATTEN),                                                     /* 16 */
        FC(3),                                                                      /* 17 */
        SIMPLE(DCZ_OP_SOFTMAX),
    };
    *n = (int)(sizeof g / sizeof *g);
    return g;
}

/* n images of 2 x 8 x 8 in three classes: noise, and a bright 3 x 3 patch
 * where the class says (near corner 0, the centre, near corner 2). */
static inline int image_blobs(dcz_dataset *ds, size_t n, uint64_t seed)
{
    if (!blobs3(ds, n, 2 * 8 * 8, seed)) return 0;
    ds->c = 2;
    ds->h = ds->w = 8;
    dcz_rng r;
    dcz_rng_seed(&r, seed + 1);
    for (size_t i = 0; i < ds->n; i++) {
        float *x = ds->x + i * 128;
        const int at = ds->y[i] * 2 + 1;   /* rows and columns at .. at + 2: 1, 3 or 5 */
        for (int j = 0; j < 128; j++) x[j] = 0.5f * dcz_rng_normal(&r);
        for (int c = 0; c < 2; c++)
            for (int y = at; y < at + 3; y++)
                for (int xx = at; xx < at + 3; xx++) x[c * 64 + y * 8 + xx] += 1.5f;
    }
    return 1;
}

/* Running statistics of a teacher's batch norm layers away from 0 and 1,
 * so that its inference pass differs from a pass by batch statistics. */
static inline void teacher_stats(dcz_net *t, uint64_t seed)
{
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (int i = 0; i < t->nlayers; i++) {
        dcz_tlayer *l = &t->layers[i];
        if (l->op != DCZ_OP_BATCHNORM) continue;
        for (int c = 0; c < l->in_c; c++) {
            l->run_mean[c] = 0.3f * dcz_rng_normal(&r);
            l->run_var[c] = 0.5f + dcz_rng_uniform(&r);
        }
    }
}

/* The largest difference of two parameter vectors against the largest
 * parameter. */
static inline double param_gap(const dcz_net *a, const dcz_net *b)
{
    double gap = 0, top = 0;
    for (size_t j = 0; j < a->param_count; j++) {
        gap = fmax(gap, fabs((double)a->param[j] - b->param[j]));
        top = fmax(top, fabs((double)a->param[j]));
    }
    return gap / (top > 0 ? top : 1);
}

#endif /* DCZ_TESTS_TRAIN_BUILD_H */
