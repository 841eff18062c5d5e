/* prune.h: magnitude pruning with retraining, the first stage of Deep
 * Compression (Han, Mao, Dally, ICLR 2016, section 2; Han et al., NIPS 2015).
 *
 * A weight is pruned by clearing its bit in the layer's mask (train.h) and
 * setting it, and its momentum, to exactly 0. Pruning never revives a weight:
 * a weight whose mask bit is 0 stays pruned whatever a later call asks for,
 * and counts towards any sparsity target.
 *
 * Two ways to choose what to prune in a layer:
 * - quality q: threshold = q x the standard deviation of the layer's weights
 *   (the paper's rule); everything with |w| <= threshold goes.
 * - sparsity s: the floor(s * n) weights of smallest magnitude go (n: all the
 *   layer's weights, pruned ones included). Ties in magnitude are broken by
 *   index, lower index pruned first, so the count is exact even with ties.
 *   By blocks of B input channels (dcz_prune_layer_blocks), whole blocks go,
 *   the fewest that reach the count.
 *
 * dcz_prune_run prunes a whole net over K rounds following the cubic schedule
 * of Zhu & Gupta (2017), retraining after each round with the training
 * engine, which keeps masked weights at 0.
 *
 * Only dense and convolution layers (dcz_tlayer_has_weights) carry weights
 * that prune; other layers are skipped by every function
 * that takes a net. Nothing here prints or exits.
 *
 * Tested by tests/unit/test_prune.c.
 */
#ifndef DCZ_PRUNE_H
#define DCZ_PRUNE_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "train/train.h"

/* ---- thresholds and single layers -------------------------------------- */

/* Number of weights a sparsity s in [0, 1] prunes out of n: floor(s * n),
 * except that a product within 1e-9 (relative) of an integer counts as that
 * integer, so that a decimal sparsity such as 0.7 of 10 weights gives 7
 * despite binary rounding. Out-of-range s is clamped to [0, 1]. */
size_t dcz_prune_count(double sparsity, size_t n);

/* *thr = quality x the population standard deviation (divisor n, computed in
 * double around the mean) of the n weights w. When mask is not NULL only
 * weights with mask[i] != 0 enter the statistic (a layer with every weight
 * pruned gives *thr = 0). DCZ_ERR_ARG: n == 0, w or thr NULL, quality
 * negative or not finite. DCZ_ERR_DATA: a weight that enters the statistic
 * is NaN or infinite. */
dcz_status dcz_prune_threshold_quality(const float *w, const uint8_t *mask, size_t n,
                                       double quality, float *thr);

/* *thr = the m-th smallest magnitude |w[i]| with m = dcz_prune_count(s, n),
 * so pruning |w| <= *thr removes exactly m weights when magnitudes are
 * distinct. Tie rule: every weight whose magnitude equals the m-th smallest
 * is at or below the threshold, so a tie straddling the cut prunes more than
 * m (use dcz_prune_layer_to_sparsity for an exact count). m == 0 gives
 * *thr = -1, below every magnitude. DCZ_ERR_ARG: n == 0, NULL pointers,
 * sparsity outside [0, 1]. DCZ_ERR_DATA: a weight is NaN. DCZ_ERR_NOMEM. */
dcz_status dcz_prune_threshold_sparsity(const float *w, size_t n, double sparsity,
                                        float *thr);

/* Prunes every weight of layer L (dense or conv) with |w| <= thr: allocates L->mask
 * (all ones) when NULL, clears the mask there, sets those weights and their
 * momentum (L->vw, when allocated) to 0. Weights already pruned stay pruned
 * and are zeroed again. *kept (may be NULL) gets the number of weights left.
 * DCZ_ERR_ARG: L NULL, without prunable weights, thr NaN.
 * DCZ_ERR_NOMEM: the mask could not be allocated (L is unchanged). */
dcz_status dcz_prune_layer(dcz_tlayer *L, float thr, size_t *kept);

/* Prunes layer L (dense or conv) until exactly dcz_prune_count(s, n) of its n weights
 * are pruned (allocating L->mask, all ones, when NULL), taking the smallest magnitudes first and breaking ties by
 * index (lower first). Weights already pruned count towards the target; when
 * they alone reach it nothing changes (nothing is revived). *thr (may be
 * NULL) gets the largest magnitude pruned by this call, or -1 when the call
 * prunes nothing. *kept (may be NULL) gets the weights left.
 * DCZ_ERR_ARG: bad layer or s outside [0, 1]. DCZ_ERR_DATA: a kept weight
 * is NaN. DCZ_ERR_NOMEM (L's weights and mask bits are unchanged). */
dcz_status dcz_prune_layer_to_sparsity(dcz_tlayer *L, double sparsity, float *thr,
                                       size_t *kept);

/* The most input channels a block of dcz_prune_layer_blocks spans. */
#define DCZ_PRUNE_MAX_BLOCK 64

/* dcz_prune_layer_to_sparsity by blocks: a block is `block` consecutive
 * input channels of one output (a row of the weight matrix) at one tap,
 * aligned on multiples of block (a row's last may hold fewer): for DENSE,
 * block consecutive columns; for CONV, input channels c .. c + block - 1
 * of the row's group at the same (ky, kx). A block spans at most the
 * channels a row reads, so a depthwise layer's blocks are single weights.
 * The kept blocks go whole, those of the smallest sum of squares of their
 * kept weights first (ties by index), until at least dcz_prune_count(s,
 * n) weights are pruned: at most span - 1 more. Weights pruned before stay
 * pruned, so a block some of whose weights a mask already held may stay
 * partial (a block's score counts its kept weights). Four input channels
 * are what the 8-bit kernels multiply in one instruction (their quads,
 * four consecutive input channels of the layer): a layer pruned by blocks
 * of 4 fills every quad it runs, a grouped one where its groups' widths
 * are multiples of 4. block 1 is
 * dcz_prune_layer_to_sparsity itself. *thr gets the largest magnitude this
 * call pruned (-1: none). DCZ_ERR_ARG also for block outside [1,
 * DCZ_PRUNE_MAX_BLOCK]. */
dcz_status dcz_prune_layer_blocks(dcz_tlayer *L, double sparsity, int block, float *thr, size_t *kept);

/* Fraction of L's weights that are pruned (0 without a mask, 0 for a layer
 * without weights). */
double dcz_prune_layer_sparsity(const dcz_tlayer *L);

/* The cubic schedule of Zhu & Gupta: the sparsity to reach after round r of
 * K, s_f + (s_i - s_f)(1 - r/K)^3. r <= 0 gives s_i; r >= K gives exactly
 * s_f. Monotone in r from s_i to s_f. K < 1 is treated as 1. */
double dcz_prune_schedule(double s_i, double s_f, int r, int K);

/* ---- sparse variational dropout (variational.c) -------------------------- */

/* The state of a variational phase over a net: per chosen layer the log
 * variances (the layer's vd_ls, vd_s2 and vd_gls point into it), and Adam's
 * moments of every parameter. */
typedef struct dcz_vd_state dcz_vd_state;

/* Starts a phase: chosen (net->nlayers, nonzero: that layer learns its
 * noise) names DENSE and CONV layers only, every log sigma^2 starting at -10,
 * the noise drawn from a generator of the state's seeded with seed (the
 * net's own, net->rng, is left alone). DCZ_ERR_UNSUPPORTED for a chosen
 * layer of another op or a net with a codebook, DCZ_ERR_NOMEM. */
dcz_status dcz_vd_begin(dcz_net *net, const uint8_t *chosen, uint64_t seed, dcz_vd_state **out);

/* The KL term's weight for the next steps: beta / samples. */
void dcz_vd_set_kl(dcz_vd_state *s, double beta, size_t samples);

/* A dcz_sgd.update (ctx the state): adds the KL term's gradient to the
 * chosen layers' gw and vd_gls, moves every trained parameter by Adam at
 * step->lr, keeps masked weights 0 and refreshes vd_s2. */
dcz_status dcz_vd_update(dcz_net *net, const dcz_sgd *step, void *ctx);

/* Prunes every weight of the chosen layers whose log alpha is at least
 * threshold (allocating masks as dcz_prune_layer does), weights to 0. */
dcz_status dcz_vd_prune(dcz_vd_state *s, float threshold);

/* Ends the phase: the layers' vd_ pointers cleared, everything freed.
 * NULL-safe. */
void dcz_vd_free(dcz_vd_state *s);

/* log alpha = log sigma^2 - log(w^2 + 1e-8), clipped to [-10, 10]; the
 * approximate -KL of one weight of log sigma^2 ls; and scale times the
 * gradient of KL with respect to w and ls, added to *gw and *gls (0 where
 * log alpha is clipped). Exposed for tests. */
double dcz_vd_log_alpha(double w, double ls);
double dcz_vd_neg_kl(double w, double ls);
void dcz_vd_kl_grad(float w, float ls, float scale, float *gw, float *gls);

/* ---- the whole net, with retraining -------------------------------------- */

typedef enum dcz_prune_mode {
    DCZ_PRUNE_NONE = 0,   /* leave the layer as it is */
    DCZ_PRUNE_SPARSITY,   /* value: target sparsity in [0, 1] */
    DCZ_PRUNE_QUALITY     /* value: quality q >= 0, threshold q x std */
} dcz_prune_mode;

typedef struct dcz_prune_target {
    dcz_prune_mode mode;
    double value;
} dcz_prune_target;

struct dcz_prune_round;   /* below */

typedef struct dcz_prune_plan {
    const dcz_prune_target *targets; /* (net->nlayers), indexed by layer; the
                                        entries of layers without weights are ignored */
    int rounds;           /* K >= 1 prune/retrain cycles */
    int epochs;           /* retraining epochs after each round (>= 0) */
    int final_epochs;     /* extra retraining at the end (>= 0) */
    dcz_sgd sgd;          /* retraining settings; sgd.lr is the base rate */
    const char *final_schedule; /* lr schedule of the final phase for
                                   dcz_lr_at; NULL means "cosine" */
    uint64_t seed;        /* shuffling during retraining */
    /* Sparse variational dropout before the rounds (variational.c), its
     * shuffles and noise from generators of its own seeded from seed, so
     * that the rounds draw as they would after the same masks made apart:
     * epochs of it (0: none) on every targeted layer, Adam at variational_lr, the
     * KL term's weight (variational_kl: 1 the variational bound itself, less
     * a weaker pull toward dropping weights) rising over variational_ramp
     * epochs, weights of
     * log alpha >= variational_threshold pruned at its end (+infinity:
     * none, the phase only making the weights prunable). The rounds
     * then prune by magnitude what the targets still ask for (a layer
     * already sparser is left alone) and retrain. */
    int variational, variational_ramp;
    float variational_lr, variational_threshold;
    double variational_kl;
    /* input channels a block (dcz_prune_layer_blocks) in the rounds'
     * pruning by sparsity and quality: 1 (each weight alone) to
     * DCZ_PRUNE_MAX_BLOCK; a quality target fixes the count its threshold
     * reaches, then blocks reach that count */
    int block;
    /* called after each round r (1..rounds) with its figures, as soon as
     * its retraining ends (NULL: not called); the report holds them too */
    void (*round_done)(void *ctx, int r, int rounds, const struct dcz_prune_round *round);
    void *round_ctx;
} dcz_prune_plan;

/* Fills plan with the recommended defaults: no targets, 3 rounds of 2 epochs,
 * 4 final epochs under a cosine schedule, lr 0.01 (a tenth of the usual
 * training rate: set it from the original training rate when known),
 * momentum 0.9, weight decay 1e-4, batch 64, weights and biases trained,
 * seed 1, each weight alone (block 1). The caller sets targets. */
void dcz_prune_plan_init(dcz_prune_plan *plan);

typedef struct dcz_prune_round {
    double target;        /* overall sparsity of the targeted layers after pruning */
    double acc_pruned;    /* test accuracy right after pruning; -1: no test set */
    double acc_retrained; /* after this round's retraining; -1: no test set */
    double loss;          /* mean training loss over this round's epochs; -1: none */
} dcz_prune_round;

typedef struct dcz_prune_layer_report {
    char name[64];
    int layer;            /* index in net->layers */
    dcz_prune_mode mode;
    double target;        /* final target sparsity (a quality converted); 0 for NONE */
    size_t weights;       /* all weights of the layer */
    size_t kept;          /* weights left after the run */
    double density;       /* kept / weights */
    float threshold;      /* largest magnitude pruned in the last round that
                             pruned something; -1 when nothing was pruned */
} dcz_prune_layer_report;

typedef struct dcz_prune_report {
    double acc_initial;   /* test accuracy before pruning; -1: no test set */
    double acc_variational; /* after the variational phase's pruning; -1: no
                               phase or no test set */
    size_t variational_kept;  /* weights of the layers with weights kept after
                                 that phase (0: no phase) */
    double acc_final;     /* after the final phase (or the last round); -1 */
    double final_loss;    /* mean loss over the final phase; -1: none */
    int nrounds;
    dcz_prune_round *rounds;          /* (nrounds), owned */
    int nlayers;                      /* layers with weights (dense, conv) */
    dcz_prune_layer_report *layers;   /* (nlayers), owned, in net order */
    size_t weights, kept;             /* totals over the layers with weights */
} dcz_prune_report;

/* Prunes net following plan, with retraining on train.
 *
 * With plan->variational, the variational phase runs first (on the
 * targeted layers; see the plan). Then each layer's final target
 * sparsity s_f is fixed: a SPARSITY
 * target directly, a QUALITY target as the fraction of the layer's weights
 * (pruned ones included) with |w| <= q x std of its kept weights. In round
 * r = 1..K every targeted layer is pruned by magnitude to exactly
 * dcz_prune_count(dcz_prune_schedule(s_i, s_f, r, K), n) weights, s_i being
 * its sparsity at the start (round K hits s_f exactly; a layer already
 * sparser than s_f is left alone). Then test accuracy is measured (test not
 * NULL), the net is retrained for plan->epochs epochs at plan->sgd.lr, and
 * accuracy is measured again. After round K come plan->final_epochs epochs
 * whose rate follows plan->final_schedule from plan->sgd.lr.
 *
 * train NULL (or epochs and final_epochs both 0) gives one-shot pruning, K
 * rounds without retraining. test may be NULL (accuracies reported as -1).
 * progress (may be NULL) gets (ctx, done, total) after each training batch,
 * total counting the batches of the whole run.
 *
 * rep (may be NULL) is filled on success and then owns memory released by
 * dcz_prune_report_free; on failure it is left zeroed. On failure the net
 * may be partially pruned, but masks, weights and momentum stay consistent.
 * DCZ_ERR_ARG: NULL net or plan, targets NULL, rounds < 1, negative epochs,
 * sparsity outside [0, 1], quality negative, bad SGD settings when training
 * is asked for, a dataset whose sample size or classes do not match the net.
 * Errors from training and evaluation are passed on. */
dcz_status dcz_prune_run(dcz_net *net, const dcz_prune_plan *plan,
                         const dcz_dataset *train, const dcz_dataset *test,
                         dcz_progress_fn progress, void *ctx, dcz_prune_report *rep);

/* Releases what rep owns and zeroes it. NULL-safe. */
void dcz_prune_report_free(dcz_prune_report *rep);

#endif /* DCZ_PRUNE_H */
