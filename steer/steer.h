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
#include <stdint.h>

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
    int block;                              /* input channels a pruned block (dcz_prune_layer_blocks) */
} dcz_sens_plan;

/* The defaults: sparsities 0.3 0.5 0.7 0.8 0.85 0.9 0.93 0.95 0.97 0.98,
 * bits 2 to 8, linear initialization, 30 k-means iterations, each weight
 * pruned alone (block 1). */
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

/* ---- compression to an accuracy budget (budget.c) ------------------------
 *
 * The scan says what each layer alone costs in accuracy at each sparsity
 * and codebook width; an estimate of the bytes says what it saves. The two
 * scans are not alike: pruned without retraining, a layer loses far more
 * than retraining will leave lost (tens of points where a retrained run
 * loses one), while shared without fine-tuning it loses about what a
 * fine-tuned run keeps losing. So the codebook widths are chosen from the
 * scan directly: the fewest estimated bytes whose losses, summed over the
 * layers (each lost alone; together they add up), stay within a
 * tolerance. The sparsities are chosen by rank: a candidate is one sparsity per layer, the
 * one that minimizes
 *     estimated bytes + lambda x points lost in the scan
 * for one exchange rate lambda (bytes per point of accuracy): the classic
 * rate-distortion allocation, which gives a large layer's bytes their
 * weight and leaves a small sensitive layer alone. Sweeping lambda gives
 * allocations from the most accurate (every layer unpruned) to the smallest
 * (every layer at its sparsest); between two, greedy steps of one layer by
 * one level fill the gaps a curve that is not convex leaves. The scan does not say
 * what retraining will recover, so which candidate fits a budget is
 * measured (dcz_budget_search).
 */

typedef struct dcz_budget_layer {
    int layer;              /* index in the net */
    double sparsity;        /* a plan level, or the layer's own sparsity when
                               the scan found every level too costly */
    int bits;               /* a plan width */
    double drop;            /* points the scan lost with this layer's choices
                               (pruned and shared, each alone) */
    double est_bytes;       /* estimated bytes of its weights (positions,
                               indices, codebook) */
} dcz_budget_layer;

typedef struct dcz_budget_cand {
    double lambda;          /* bytes per point of the allocation the
                               candidate is or steps toward */
    double est_bytes;       /* sum over the layers */
    double drop;            /* sum over the layers (the scan's, not retrained) */
    dcz_budget_layer *layers;   /* (nlayers), the scan's layers in order */
} dcz_budget_cand;

typedef struct dcz_budget_cands {
    int n, nlayers;
    dcz_budget_cand *c;     /* (n), from the smallest estimate to the largest; owned */
} dcz_budget_cands;

/* The estimated bytes of a layer's weights when n weights keep a fraction
 * density, each with a bits-wide codebook index and a Huffman-coded
 * relative position (the entropy of geometric gaps), plus the fp32
 * codebook. */
double dcz_budget_est_bytes(size_t n, double density, int bits);

/* At most max (>= 2) candidates from the scan rep of plan p (both bits and
 * sparsity levels needed), spread evenly in the logarithm of their
 * estimated bytes between the smallest and the most accurate. Every
 * candidate has the same codebook widths: an allocation by exchange rate
 * whose scan losses sum to at most bits_tol points (each layer's least
 * lossy width when none does). DCZ_ERR_ARG for a plan without sparsity or
 * bits levels, an empty report or a negative tolerance; DCZ_ERR_NOMEM. */
dcz_status dcz_budget_candidates(const dcz_sens_report *rep, const dcz_sens_plan *p, double bits_tol, int max,
                                 dcz_budget_cands *out);

/* Appends to c up to steps candidates past its most accurate one, each
 * every layer one plan level less sparse than the last (a layer at the
 * least sparse level stays there), the widths kept. For a scan that cannot
 * tell the levels apart (the weights of a variational phase prune almost
 * free up to 97%, but the retrained runs are not), so that the search may
 * still go less sparse. The appended candidates carry the scan's losses at
 * their levels. DCZ_ERR_ARG for an empty c, DCZ_ERR_NOMEM (c then as it
 * was). */
dcz_status dcz_budget_extend(const dcz_sens_report *rep, const dcz_sens_plan *p, int steps, dcz_budget_cands *c);

void dcz_budget_cands_free(dcz_budget_cands *c);

/* One measured run of candidate cand: its accuracy (a fraction), the
 * standard error of its change from the input's (a fraction, >= 0) and its
 * file bytes; *accuracy < 0 when it was stopped early as out of the
 * budget. */
typedef dcz_status (*dcz_budget_try_fn)(void *ctx, int cand, double *accuracy, double *margin, size_t *bytes);

typedef struct dcz_budget_trial {
    int cand;
    double accuracy;        /* < 0: stopped early, out of the budget */
    double margin;
    size_t bytes;
    int within;             /* dcz_budget_within */
} dcz_budget_trial;

/* Whether a run measured at accuracy, with the standard error margin of
 * its change, is within the floor: accuracy - z * margin >= floor, that
 * is, at least z (>= 0) standard errors above the floor (0 takes the
 * measurement as it is; 1 asks for a margin of one standard error of
 * noise, so that the choice among several noisy runs is not merely the
 * luckiest); a run stopped early (accuracy < 0) never is. */
int dcz_budget_within(double accuracy, double margin, double floor, double z);

/* The standard error of the difference in accuracy between two models
 * measured on the same n samples (right_a[i], right_b[i]: 1 where each
 * classified sample i right): the paired estimate, from the samples on
 * which they disagree. 0 when n is 0. */
double dcz_paired_se(const uint8_t *right_a, const uint8_t *right_b, size_t n);

/* Searches candidates 0..n-1 (from the smallest to the most accurate,
 * accuracy taken to grow with the index) for the smallest within floor
 * (dcz_budget_within, z standard errors): a bisection that starts in the middle, at
 * most runs (>= 1) trials (exact for n = 2^runs - 1: n answers and "none"), and one more of the most accurate candidate
 * when none was within. The trials go into trials (room for runs + 1) in
 * the order run, *ntrials their count, *best the index in trials of the
 * smallest file within the floor, or of the most accurate when none was.
 * DCZ_ERR_ARG for no candidates, no runs or a negative z; the errors of
 * try. */
dcz_status dcz_budget_search(int n, int runs, double floor, double z, dcz_budget_try_fn try_fn, void *ctx,
                             dcz_budget_trial *trials, int *ntrials, int *best);

#endif /* DCZ_STEER_H */
