/* quantize.h: trained quantization by weight sharing, the second stage of
 * Deep Compression (Han, Mao, Dally, ICLR 2016, section 3).
 *
 * The kept weights of a layer are clustered by 1-D k-means into k = 2^bits
 * centroids (the codebook); every kept weight is replaced by its centroid
 * and remembers the centroid's index (assign). Pruned weights take no part:
 * they stay exactly 0 and are not clustered. The centroids are then
 * fine-tuned by the training engine (train.h), which moves each centroid by
 * the sum of the gradients of its weights while assignments stay fixed.
 *
 * k-means conventions (dcz_kmeans_1d):
 * - Centroids are returned sorted ascending, so the output is canonical.
 * - A point goes to its nearest centroid (distances in double); a point
 *   exactly halfway between two, or at equal distance from duplicate
 *   centroids, goes to the one with the higher index.
 * - Lloyd iterations: move each centroid to the mean of its points (an
 *   empty cluster keeps its centroid), re-sort, reassign; stop when no
 *   assignment changes or after max_iter iterations.
 *
 * Nothing here prints or exits. Tested by tests/unit/test_quantize.c.
 */
#ifndef DCZ_QUANTIZE_H
#define DCZ_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "train/train.h"

#define DCZ_KMEANS_MAX_K 256
#define DCZ_KMEANS_TRACE 64     /* costs kept in dcz_kmeans_info */

typedef enum dcz_km_init {
    /* c_j = min + j (max - min) / (k - 1), computed in double and rounded to
     * float, so c_0 = min and c_{k-1} = max; k == 1: (min + max) / 2.
     * The paper's best initialization. */
    DCZ_KM_LINEAR = 0,
    /* c_j = the sample at quantile (j + 0.5) / k of the sorted data (index
     * floor((j + 0.5) n / k)): density-based, sorted, within [min, max]. */
    DCZ_KM_DENSITY,
    /* Forgy: k samples at distinct positions drawn with dcz_rng seeded by
     * seed (Floyd's algorithm), then sorted; when n < k every sample is used
     * and the remaining centroids are samples drawn with replacement. */
    DCZ_KM_RANDOM
} dcz_km_init;

typedef struct dcz_kmeans_info {
    int iterations;      /* Lloyd iterations run (0 .. max_iter) */
    int converged;       /* 1: the last iteration changed no assignment */
    int ncost;           /* entries of cost filled: min(iterations + 1, TRACE) */
    double cost[DCZ_KMEANS_TRACE]; /* sum of squared errors (in double): cost[0]
                                      with the initial centroids, cost[i]
                                      after iteration i; never increases (up
                                      to rounding of the sums) */
    double final_cost;   /* the cost of the returned centroids and assignment */
} dcz_kmeans_info;

/* Clusters the n values x into k (1..256) centroids, sorted ascending into
 * centroids (k floats), with assign[i] (n bytes; may be NULL) the index of
 * x[i]'s centroid, following the conventions above. max_iter 0 returns the
 * initial centroids with their assignment. n == 0 is allowed: the
 * initialization runs as if min = max = 0 (every centroid 0). n < k is
 * allowed (some clusters stay empty). Deterministic for given inputs and
 * seed (seed matters only for DCZ_KM_RANDOM). info may be NULL.
 * DCZ_ERR_ARG: k outside 1..256, max_iter < 0, NULL x (n > 0) or centroids,
 * unknown init. DCZ_ERR_DATA: a value is NaN or infinite. DCZ_ERR_NOMEM. */
dcz_status dcz_kmeans_1d(const float *x, size_t n, int k, dcz_km_init init, int max_iter,
                         uint64_t seed, float *centroids, uint8_t *assign,
                         dcz_kmeans_info *info);

typedef struct dcz_quant_layer_report {
    char name[64];
    int layer;           /* index in net->layers; -1 from dcz_quantize_layer */
    int bits;            /* index width; k = 2^bits */
    int k;
    size_t weights;      /* all weights of the layer */
    size_t kept;         /* weights clustered (not pruned) */
    int iterations;      /* k-means iterations */
    double rms_error;    /* RMS over kept weights between each weight before
                            quantization and its centroid right after clustering */
    double rms_final;    /* the same against the centroids after fine-tuning */
} dcz_quant_layer_report;

/* Clusters the kept weights of layer L (dense or conv) (mask NULL: all are kept) into
 * k = 2^bits centroids (bits 1..8) with dcz_kmeans_1d, then sets L->k,
 * L->codebook (k floats, sorted), L->assign (one byte per weight, 0 for pruned
 * positions), rewrites each kept weight to its centroid and each pruned one
 * to 0. A codebook the layer already had is replaced, and the layer's
 * pointers to its codebook's training state (gcb, vcb, in the net's flat
 * buffers) are cleared, so the engine lays them out anew for the new size
 * (zeroed) at its next step. rep
 * (may be NULL) gets the layer's statistics (rms_final = rms_error).
 * DCZ_ERR_ARG: L without weights (not dense or conv), bits outside 1..8, bad
 * init/max_iter. DCZ_ERR_DATA: a kept weight is NaN or infinite.
 * DCZ_ERR_NOMEM (L is unchanged on every error). */
dcz_status dcz_quantize_layer(dcz_tlayer *L, int bits, dcz_km_init init, int max_iter,
                              uint64_t seed, dcz_quant_layer_report *rep);

typedef struct dcz_quant_plan {
    const int *bits;      /* (net->nlayers), indexed by layer: 0 leaves the
                             layer as it is, 1..8 clusters it; entries of
                             layers without weights are ignored */
    dcz_km_init init;
    int max_iter;         /* k-means iterations per layer */
    uint64_t seed;        /* k-means (random init) and shuffling */
    int epochs;           /* centroid fine-tuning epochs (0: cluster only) */
    dcz_sgd sgd;          /* fine-tuning settings; sgd.lr is the base rate */
    const char *schedule; /* lr schedule for dcz_lr_at; NULL means "cosine" */
} dcz_quant_plan;

/* Fills plan with the recommended defaults: no bits (the caller sets them;
 * the paper uses 5 for fully connected layers), linear init, 100 k-means
 * iterations, seed 1, 2 fine-tuning epochs, lr 1e-4 under a cosine schedule
 * (a centroid moves by the sum of many gradients, so its rate is far below a
 * weight's), momentum 0.9, no weight decay, batch 64, biases and centroids
 * trained. */
void dcz_quant_plan_init(dcz_quant_plan *plan);

typedef struct dcz_quant_epoch {
    double lr;
    double loss;          /* mean training loss of the epoch */
} dcz_quant_epoch;

typedef struct dcz_quant_report {
    double acc_initial;   /* test accuracy before clustering; -1: no test set */
    double acc_clustered; /* after clustering, before fine-tuning; -1 */
    double acc_final;     /* after fine-tuning; -1 */
    int nepochs;
    dcz_quant_epoch *epochs;          /* (nepochs), owned */
    int nlayers;                      /* layers clustered by this call */
    dcz_quant_layer_report *layers;   /* (nlayers), owned, in net order */
} dcz_quant_report;

/* Clusters every dense or conv layer whose plan->bits entry is not 0
 * (dcz_quantize_layer, seeded by plan->seed + layer index), measures test
 * accuracy, then fine-tunes the centroids for plan->epochs epochs with
 * dcz_train_epoch, the rate following plan->schedule from plan->sgd.lr, and
 * measures accuracy again. Assignments never change; kept weights stay equal
 * to codebook[assign] and pruned ones 0. Layers without a codebook that the
 * plan leaves alone are trained as ordinary (masked) weights when
 * plan->sgd.train_weights is set.
 *
 * train NULL or epochs 0: clustering only. test may be NULL (accuracies -1).
 * progress (may be NULL) gets (ctx, done, total) after each training batch,
 * total counting the batches of all epochs. rep (may be NULL) is filled on
 * success and owns memory released by dcz_quant_report_free; on failure it
 * is left zeroed and the net may be partially quantized (each layer
 * consistent).
 * DCZ_ERR_ARG: NULL net or plan, bits NULL or an entry outside 0..8, bad
 * k-means or SGD settings, negative epochs, a dataset that does not fit the
 * net. Errors of clustering, training and evaluation are passed on. */
dcz_status dcz_quantize_finetune(dcz_net *net, const dcz_quant_plan *plan,
                                 const dcz_dataset *train, const dcz_dataset *test,
                                 dcz_progress_fn progress, void *ctx,
                                 dcz_quant_report *rep);

/* Releases what rep owns and zeroes it. NULL-safe. */
void dcz_quant_report_free(dcz_quant_report *rep);

#endif /* DCZ_QUANTIZE_H */
