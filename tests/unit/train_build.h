/* train_build.h: small training networks built layer by layer, for the
 * trainer's tests (test_train.c, test_train_emu.c, test_train_dev.c,
 * test_gpu_train.c): build_net and the macros that spell its layers, and
 * blobs3, a small dataset of three classes. Header-only; checked by those
 * tests.
 */
#ifndef DCZ_TESTS_TRAIN_BUILD_H
#define DCZ_TESTS_TRAIN_BUILD_H

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

#endif /* DCZ_TESTS_TRAIN_BUILD_H */
