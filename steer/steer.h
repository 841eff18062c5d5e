/* steer.h: measurements that steer compression per layer.
 *
 * The sensitivity scan (Deep Compression, Figure 6): for each layer with
 * weights, alone, the accuracy of the network with that layer pruned to
 * each of a list of sparsities (no retraining) and with its kept weights
 * shared among 2^bits centroids for each of a list of widths (k-means, no
 * fine-tuning), every other layer as it is. Accuracies are measured on the
 * data given, which should be held out of training and never the test set
 * (dcz_dataset_holdout). The network is left as it was found.
 *
 * Checked by tests/unit/test_steer.c.
 */
#ifndef DCZ_STEER_H
#define DCZ_STEER_H

#include <stddef.h>

#include "quantize/quantize.h"
#include "train/train.h"

#define DCZ_SENS_MAX_LEVELS 32

typedef struct dcz_sens_plan {
    double sparsity[DCZ_SENS_MAX_LEVELS];   /* ascending, each in [0, 1) */
    int nsparsity;
    int bits[DCZ_SENS_MAX_LEVELS];          /* ascending, each 1..8 */
    int nbits;
    dcz_km_init init;                       /* k-means, as quantize */
    int kmeans_iters;
    uint64_t seed;
} dcz_sens_plan;

/* The defaults: sparsities 0.3 0.5 0.7 0.8 0.85 0.9 0.93 0.95 0.97 0.98,
 * bits 2 to 8, linear initialization, 30 k-means iterations. */
void dcz_sens_plan_init(dcz_sens_plan *p);

/* DCZ_OK when the levels are in range, ascending, and there is at least one
 * of either kind; DCZ_ERR_ARG otherwise. */
dcz_status dcz_sens_plan_check(const dcz_sens_plan *p);

typedef struct dcz_sens_layer {
    int layer;                 /* index in the net */
    char name[64];
    size_t weights;
    double density;            /* kept fraction before the scan */
    double prune_acc[DCZ_SENS_MAX_LEVELS];  /* at plan sparsity[i]: the baseline
                                               where the layer is already that sparse */
    double share_acc[DCZ_SENS_MAX_LEVELS];  /* at plan bits[i] */
} dcz_sens_layer;

typedef struct dcz_sens_report {
    double baseline;           /* the accuracy of the net as given */
    size_t samples;
    int nlayers;
    dcz_sens_layer *layers;    /* (nlayers) the layers with weights, in order; owned */
} dcz_sens_report;

/* Progress: trials done of total, after each. */
typedef void (*dcz_sens_progress_fn)(void *ctx, size_t done, size_t total);

/* Runs the scan of plan p over net (validated) on data. DCZ_ERR_ARG for a
 * bad plan or data that does not fit the net; the errors of the trainer's
 * evaluation and of pruning and clustering a layer. The net's weights,
 * masks and codebooks are those it came with afterwards, on error too. */
dcz_status dcz_sensitivity(dcz_net *net, const dcz_dataset *data, const dcz_sens_plan *p,
                           dcz_sens_progress_fn progress, void *ctx, dcz_sens_report *rep);

void dcz_sens_report_free(dcz_sens_report *rep);

#endif /* DCZ_STEER_H */
