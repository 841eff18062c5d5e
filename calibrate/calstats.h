/* calstats.h: activation statistics over a calibration set and the scale
 * choosers of the calibrate stage (stats.c).
 *
 * Statistics are gathered in two passes so that they depend on the set of
 * calibration samples alone, never on batch size or order: pass 1 finds
 * min, max and max |x| (order-free); pass 2 counts |x| into DCZ_CAL_BINS
 * fixed bins over [0, max |x|] (integer counts, order-free). Every chooser
 * reads only these, so the same samples give the same scales bit for bit.
 *
 * Checked by tests/unit/test_calstats.c (a hand-computed entropy case, each
 * chooser on known histograms, pass order and split independence).
 */
#ifndef DCZ_CALIBRATE_CALSTATS_H
#define DCZ_CALIBRATE_CALSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"

#define DCZ_CAL_BINS 2048

typedef enum dcz_cal_method {
    DCZ_CAL_MINMAX = 1,   /* T = max |x| */
    DCZ_CAL_PERCENTILE,   /* T = the P-th percentile of |x| */
    DCZ_CAL_MSE,          /* T minimizing the expected squared quantization error */
    DCZ_CAL_ENTROPY       /* T minimizing KL(P || Q), TensorRT's method */
} dcz_cal_method;

/* Statistics of one activation tensor over the calibration set. */
typedef struct dcz_cal_stats {
    float min, max;                 /* pass 1; min > max while nothing observed */
    float amax;                     /* pass 1: max |x| */
    uint64_t count;                 /* pass 2: values counted */
    uint64_t zeros;                 /* pass 2: values exactly 0 (also in bins[0]) */
    uint64_t bins[DCZ_CAL_BINS];    /* pass 2: |x| per bin of width amax / DCZ_CAL_BINS */
} dcz_cal_stats;

void dcz_cal_stats_init(dcz_cal_stats *s);
/* Pass 1 over n values (NaN values are ignored by both passes). */
void dcz_cal_observe_range(dcz_cal_stats *s, const float *x, size_t n);
/* Pass 2 over n values; needs pass 1 complete over every sample. */
void dcz_cal_observe_hist(dcz_cal_stats *s, const float *x, size_t n);
/* The bin of a value with |x| = ax, given the tensor's amax > 0: floor(ax /
 * amax * DCZ_CAL_BINS) in double, and the last bin for ax >= amax. */
uint32_t dcz_cal_bin(float ax, float amax);

/* TensorRT's entropy calibration on a histogram of nbins bins: for each
 * candidate i in [start, nbins), P = bins[0 .. i-1] with the count of bins
 * i .. nbins-1 added to P[i-1]; Q = bins[0 .. i-1] merged into `levels`
 * groups of i / levels bins (the last group takes the remainder) and
 * expanded back, each group's count spread evenly over its bins where P is
 * nonzero; both normalized; KL(P || Q) summed where P > 0 (a P > 0 where Q
 * is 0 disqualifies i). Returns the i of least divergence (the smallest on
 * ties); the threshold is then (i + 0.5) bin widths. With no candidate
 * (empty histogram, start >= nbins) returns nbins. */
uint32_t dcz_cal_entropy_bins(const uint64_t *bins, uint32_t nbins, uint32_t start,
                              uint32_t levels);

/* What a chooser decided for one tensor. */
typedef struct dcz_cal_choice {
    dcz_cal_method method; /* the method that chose it */
    double threshold;    /* T: |x| above it saturates */
    double scale;        /* the quantization step: T / qmax (int8), 2^-fl (fixed) */
    int fl;              /* fixed point: fractional length (scale = 2^-fl) */
    double clipped;      /* fraction of the counted values with |x| > T (histogram bins
                            wholly above T, and the part of a bin above T pro rata) */
    double entropy_threshold; /* entropy asked, mse chose (the guard below): the threshold
                                 entropy chose; else 0 */
} dcz_cal_choice;

/* Chooses the scale of an activation tensor from its statistics.
 * qmax: 127 (8-bit) or 32767 (16-bit). fixed: power-of-two scales only.
 * percentile: for DCZ_CAL_PERCENTILE, in (0, 100].
 *  - int8 (fixed == 0): T by the method (minmax: amax; percentile: the upper
 *    edge of the bin where the cumulative count reaches P%; mse: the bin edge
 *    from bin 128 up minimizing sum over bins of count * err(center), err =
 *    step^2 / 12 inside T and (center - T)^2 beyond, step = T / qmax;
 *    entropy: dcz_cal_entropy_bins with start 128 and 128 levels), scale =
 *    T / qmax.
 *  - fixed: minmax follows Ristretto's dynamic fixed point rule for
 *    parameters: integer length IL = ceil(log2 amax) + 1 (the sign bit),
 *    fl = bits - IL, where bits = 8 for qmax 127 and 16 for 32767 (Ristretto
 *    drops the sign bit for activations, which saturates every value above
 *    amax / 2: on images in [0, 1], every pixel above 0.5; dcz keeps the
 *    bit); percentile and entropy take T as
 *    for int8 and the largest fl whose range (qmax * 2^-fl) still holds T;
 *    mse tries every fl and keeps the one of least expected error.
 * mse and entropy leave exact zeros out of the histogram: every scale
 * represents them exactly, and the spike a ReLU leaves at 0 (often half the
 * values) would otherwise dominate the KL divergence and pull the
 * threshold far down (on LeNet-300-100's hidden layers: 12 to 15% of the
 * activations clipped and 6 points of accuracy lost).
 * The entropy guard: TensorRT's divergence, at 128 levels, counts merging
 * many small values as a greater loss than clipping a sparse tail, and
 * can clip far into a tensor (seen: a convolution's input clipped at 0.37
 * where its values reach 5.8, 39% of its nonzero values, and the int8
 * model 22.9 points worse than float, where mse lost none). Where
 * entropy's threshold clips more than DCZ_CAL_ENTROPY_CLIP_LIMIT of the
 * nonzero values (far outliers, which it is meant to clip, are fewer) and
 * its expected squared error (mse's measure, on the nonzero values) passes
 * DCZ_CAL_ENTROPY_MSE_LIMIT times the least, the choice is mse's: method
 * says DCZ_CAL_MSE and entropy_threshold keeps entropy's.
 * An all-zero tensor gets scale 1 (fl 0). DCZ_ERR_ARG on bad arguments. */
#define DCZ_CAL_ENTROPY_CLIP_LIMIT 0.01
#define DCZ_CAL_ENTROPY_MSE_LIMIT 4.0
dcz_status dcz_cal_choose(const dcz_cal_stats *s, dcz_cal_method method, double percentile,
                          int32_t qmax, int fixed, dcz_cal_choice *out);

#endif /* DCZ_CALIBRATE_CALSTATS_H */
