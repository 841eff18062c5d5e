/* stats.c: activation statistics over a calibration set and the scale
 * choosers built on them (min-max, percentile, MSE, TensorRT's entropy), for
 * symmetric int8/int16 scales and for power-of-two (dynamic fixed point)
 * scales. The contract is calibrate/calstats.h.
 *
 * Determinism: the statistics depend only on the multiset of observed
 * values. Pass 1 keeps min, max and max |x| (order-free; zeros are taken as
 * +0 so that -0 and +0 arriving in either order give the same bits); pass 2
 * adds integer counts. Bin indices are floor(|x| / amax * 2048) in double.
 * Every chooser reads only the statistics and sums over bins in ascending
 * order, so the same samples give bit-identical choices whatever their order
 * or batching.
 *
 * Non-finite values: NaN and +-inf are ignored by both passes (an infinity
 * would make amax infinite and every bin but the last empty).
 *
 * Bin arithmetic, all in double with w = amax / 2048 the bin width: bin k is
 * [k w, (k+1) w); its centre is (k + 0.5) w; a threshold T lies at t = T / w
 * bin widths. The fraction clipped counts the bins wholly above T plus the
 * part of the bin holding T above it, pro rata: bins[k] * (k + 1 - t).
 *
 * Checked by tests/unit/test_calstats.c: a hand-computed entropy case, each
 * chooser on histograms with known answers, Ristretto's fixed-point rule,
 * and bit-identical results for shuffled and re-batched samples.
 */
#include "calibrate/calstats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fixed point, MSE: fractional lengths tried beyond the one whose range just
 * holds amax. Ten more bits shrink the range to 2 to 4 bin widths, below
 * which the histogram cannot tell candidates apart. */
#define FIXED_MSE_EXTRA_FL 10

void dcz_cal_stats_init(dcz_cal_stats *s)
{
    if (!s)
        return;
    memset(s, 0, sizeof *s);   /* padding too, so that stats compare with memcmp */
    s->min = INFINITY;
    s->max = -INFINITY;
    s->amax = 0.0f;
}

void dcz_cal_observe_range(dcz_cal_stats *s, const float *x, size_t n)
{
    if (!s || !x)
        return;
    float lo = s->min, hi = s->max, am = s->amax;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (!isfinite(v))
            continue;
        if (v == 0.0f)
            v = 0.0f;   /* -0 -> +0: min/max of {-0, +0} would depend on order */
        if (v < lo)
            lo = v;
        if (v > hi)
            hi = v;
        float a = fabsf(v);
        if (a > am)
            am = a;
    }
    s->min = lo;
    s->max = hi;
    s->amax = am;
}

uint32_t dcz_cal_bin(float ax, float amax)
{
    /* zero, negative or NaN |x|, and amax 0 (every value is zero): bin 0 */
    if (!(ax > 0.0f) || !(amax > 0.0f))
        return 0;
    if (ax >= amax)
        return DCZ_CAL_BINS - 1;
    /* ax < amax, both floats: the double quotient stays below 1, and the
     * product by a power of two is exact, so b <= DCZ_CAL_BINS - 1 */
    double b = floor((double)ax / (double)amax * (double)DCZ_CAL_BINS);
    return b >= (double)(DCZ_CAL_BINS - 1) ? DCZ_CAL_BINS - 1 : (uint32_t)b;
}

void dcz_cal_observe_hist(dcz_cal_stats *s, const float *x, size_t n)
{
    if (!s || !x)
        return;
    float amax = s->amax;
    uint64_t counted = 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (!isfinite(v))
            continue;
        s->bins[dcz_cal_bin(fabsf(v), amax)]++;
        s->zeros += v == 0.0f;
        counted++;
    }
    s->count += counted;
}

/* KL(P || Q) of candidate i as the header defines it; returns 0 and leaves
 * *kl alone when a P > 0 meets a Q = 0. total: the sum of all nbins bins
 * (the mass of P), > 0. */
static int entropy_candidate(const uint64_t *bins, uint32_t nbins, uint32_t i,
                             uint32_t levels, uint64_t total, double *kl)
{
    uint64_t tail = 0;   /* bins i .. nbins-1, folded into P[i-1] */
    for (uint32_t j = i; j < nbins; j++)
        tail += bins[j];
    uint64_t kept = total - tail;   /* sum of bins[0 .. i-1]: the mass of Q */
    if (kept == 0)
        return 0;   /* Q is all zero while P[i-1] = total > 0 */
    uint32_t gsize = i / levels;
    double pn = (double)total, qn = (double)kept, sum = 0.0;
    /* with more levels than bins every group but the last is empty */
    for (uint32_t g = gsize == 0 ? levels - 1 : 0; g < levels; g++) {
        uint32_t a = g * gsize;
        uint32_t b = g + 1 == levels ? i : a + gsize;
        uint64_t c = 0;
        uint32_t nz = 0;
        for (uint32_t j = a; j < b; j++) {
            uint64_t p = j + 1 == i ? bins[j] + tail : bins[j];
            c += bins[j];
            nz += p != 0;
        }
        if (nz == 0)
            continue;
        if (c == 0)
            return 0;   /* only possible for the last group, P[i-1] = tail > 0 */
        double q = (double)c / (double)nz / qn;
        for (uint32_t j = a; j < b; j++) {
            uint64_t pc = j + 1 == i ? bins[j] + tail : bins[j];
            if (pc == 0)
                continue;
            double p = (double)pc / pn;
            sum += p * log(p / q);
        }
    }
    *kl = sum;
    return 1;
}

uint32_t dcz_cal_entropy_bins(const uint64_t *bins, uint32_t nbins, uint32_t start,
                              uint32_t levels)
{
    if (!bins || levels == 0 || nbins == 0)
        return nbins;
    uint64_t total = 0;
    for (uint32_t j = 0; j < nbins; j++) {
        if (bins[j] > UINT64_MAX - total)
            return nbins;   /* counts that overflow are no histogram */
        total += bins[j];
    }
    if (total == 0)
        return nbins;
    uint32_t best = nbins;
    double best_kl = 0.0;
    /* candidate 0 would keep no bin at all */
    for (uint32_t i = start > 0 ? start : 1; i < nbins; i++) {
        double kl;
        if (!entropy_candidate(bins, nbins, i, levels, total, &kl))
            continue;
        if (best == nbins || kl < best_kl) {   /* strict: ties keep the smallest i */
            best = i;
            best_kl = kl;
        }
    }
    return best;
}

/* Fraction of the counted values above t bin widths (see the opening note). */
static double clipped_fraction(const dcz_cal_stats *s, double t)
{
    if (s->count == 0 || !(t < (double)DCZ_CAL_BINS))
        return 0.0;
    if (!(t > 0.0))
        return 1.0;
    uint32_t k = (uint32_t)floor(t);
    uint64_t above = 0;
    for (uint32_t j = k + 1; j < DCZ_CAL_BINS; j++)
        above += s->bins[j];
    double part = (double)s->bins[k] * ((double)k + 1.0 - t);
    return ((double)above + part) / (double)s->count;
}

/* Percentile: the smallest bin k with 100 * cum(0..k) >= P * count, compared
 * in double; T is its upper edge, k + 1 bin widths. */
static uint32_t percentile_edge(const dcz_cal_stats *s, double percentile)
{
    double need = percentile * (double)s->count;
    uint64_t cum = 0;
    for (uint32_t k = 0; k < DCZ_CAL_BINS; k++) {
        cum += s->bins[k];
        if ((double)cum * 100.0 >= need)
            return k + 1;
    }
    return DCZ_CAL_BINS;
}

/* MSE, linear scale: the edge k in [128, 2048] minimizing, in units of the
 * bin width squared, cum(0..k-1) * (k / qmax)^2 / 12 + sum over j >= k of
 * bins[j] * (j + 0.5 - k)^2 (values beyond T saturate to T). Ties keep the
 * smallest k. */
static uint32_t mse_edge(const dcz_cal_stats *s, int32_t qmax)
{
    const uint32_t first = 128;
    uint64_t inside = 0;
    for (uint32_t j = 0; j < first; j++)
        inside += s->bins[j];
    uint32_t best = DCZ_CAL_BINS;
    double best_cost = 0.0;
    for (uint32_t k = first; k <= DCZ_CAL_BINS; k++) {
        double step = (double)k / (double)qmax;
        double cost = (double)inside * step * step / 12.0;
        for (uint32_t j = k; j < DCZ_CAL_BINS; j++) {
            double d = (double)j + 0.5 - (double)k;
            cost += (double)s->bins[j] * d * d;
        }
        if (k == first || cost < best_cost) {
            best = k;
            best_cost = cost;
        }
        if (k < DCZ_CAL_BINS)
            inside += s->bins[k];
    }
    return best;
}

/* MSE, power-of-two scale: expected squared error (in units of the bin width
 * squared) with step 2^-fl and saturation at r = qmax 2^-fl, both given in
 * bin widths: bins whose centre is within r cost step^2 / 12 per value,
 * bins beyond cost (centre - r)^2. */
static double mse_fixed_cost(const dcz_cal_stats *s, double step, double r)
{
    double cost = 0.0;
    for (uint32_t j = 0; j < DCZ_CAL_BINS; j++) {
        if (s->bins[j] == 0)
            continue;
        double c = (double)j + 0.5;
        double e = c <= r ? step * step / 12.0 : (c - r) * (c - r);
        cost += (double)s->bins[j] * e;
    }
    return cost;
}

/* The largest fl with qmax * 2^-fl >= t (t > 0, finite), found exactly:
 * start from frexp's exponent and step with exact ldexp comparisons. */
static int fl_holding(double t, int32_t qmax)
{
    int e;
    frexp(t / (double)qmax, &e);   /* t / qmax in [2^(e-1), 2^e) */
    int fl = -e;
    while (ldexp((double)qmax, -fl) < t)
        fl--;
    while (ldexp((double)qmax, -(fl + 1)) >= t)
        fl++;
    return fl;
}

/* Ristretto's integer length: ceil(log2 a) for a > 0, exactly. */
static int ceil_log2(double a)
{
    int e;
    double m = frexp(a, &e);   /* a = m 2^e, m in [0.5, 1) */
    return m == 0.5 ? e - 1 : e;
}

dcz_status dcz_cal_choose(const dcz_cal_stats *s, dcz_cal_method method, double percentile,
                          int32_t qmax, int fixed, dcz_cal_choice *out)
{
    if (!s || !out)
        return DCZ_ERR_ARG;
    if (qmax != 127 && qmax != 32767)
        return DCZ_ERR_ARG;
    if (method != DCZ_CAL_MINMAX && method != DCZ_CAL_PERCENTILE && method != DCZ_CAL_MSE &&
        method != DCZ_CAL_ENTROPY)
        return DCZ_ERR_ARG;
    if (method == DCZ_CAL_PERCENTILE && !(percentile > 0.0 && percentile <= 100.0))
        return DCZ_ERR_ARG;
    if (!isfinite(s->amax) || !(s->amax >= 0.0f))
        return DCZ_ERR_ARG;
    uint64_t total = 0;
    for (uint32_t j = 0; j < DCZ_CAL_BINS; j++) {
        if (s->bins[j] > UINT64_MAX - total)
            return DCZ_ERR_ARG;
        total += s->bins[j];
    }
    if (total != s->count)
        return DCZ_ERR_ARG;

    dcz_cal_choice c;
    memset(&c, 0, sizeof c);
    c.method = method;
    if (s->amax == 0.0f) {   /* nothing observed, or only zeros */
        c.scale = 1.0;
        *out = c;
        return DCZ_OK;
    }
    /* the histogram methods need pass 2 */
    if (method != DCZ_CAL_MINMAX && s->count == 0)
        return DCZ_ERR_ARG;

    /* mse and entropy on the nonzero values (calstats.h) */
    if (s->zeros > s->bins[0])
        return DCZ_ERR_ARG;
    dcz_cal_stats *nz = malloc(sizeof *nz);
    if (!nz)
        return DCZ_ERR_NOMEM;
    *nz = *s;
    nz->bins[0] -= s->zeros;
    nz->count -= s->zeros;
    nz->zeros = 0;

    double amax = (double)s->amax;
    double width = amax / (double)DCZ_CAL_BINS;
    double t;   /* T in bin widths */
    switch (method) {
    case DCZ_CAL_MINMAX:
        t = (double)DCZ_CAL_BINS;
        break;
    case DCZ_CAL_PERCENTILE:
        t = (double)percentile_edge(s, percentile);
        break;
    case DCZ_CAL_MSE:
        t = (double)mse_edge(nz, qmax);
        break;
    default: {
        uint32_t i = dcz_cal_entropy_bins(nz->bins, DCZ_CAL_BINS, 128, 128);
        /* No candidate qualifies exactly when bins 127 .. 2046 are empty
         * and the last bin is not (every last group is then empty under a
         * nonzero tail). The body lies below bin 127 and the rest sits at
         * amax: clip at the first candidate, as an argmin over all-infinite
         * divergences would. */
        if (i >= DCZ_CAL_BINS)
            i = 128;
        t = (double)i + 0.5;
        /* the guard (calstats.h): MSE's threshold where entropy's clips
         * more than DCZ_CAL_ENTROPY_CLIP_LIMIT of the nonzero values and
         * errs more than DCZ_CAL_ENTROPY_MSE_LIMIT times as much */
        const double tm = clipped_fraction(nz, t) > DCZ_CAL_ENTROPY_CLIP_LIMIT ? (double)mse_edge(nz, qmax) : t;
        if (tm != t &&
            mse_fixed_cost(nz, t / qmax, t) > DCZ_CAL_ENTROPY_MSE_LIMIT * mse_fixed_cost(nz, tm / qmax, tm)) {
            t = tm;
            c.method = DCZ_CAL_MSE;
            c.entropy_threshold = ((double)i + 0.5) * (amax / (double)DCZ_CAL_BINS);
        }
        break;
    }
    }
    double T = t * width;

    if (!fixed) {
        c.threshold = T;
        c.scale = T / (double)qmax;
        c.fl = 0;
        c.clipped = clipped_fraction(s, t);
        *out = c;
        free(nz);
        return DCZ_OK;
    }

    int fl;
    if (method == DCZ_CAL_MINMAX) {
        /* Ristretto's rule for parameters: the sign bit on top of
         * ceil(log2 amax) integer bits (its rule for activations drops that
         * bit and saturates everything above amax / 2) */
        int bits = qmax == 127 ? 8 : 16;
        fl = bits - (ceil_log2(amax) + 1);
    } else if (method == DCZ_CAL_MSE) {
        int fl0 = fl_holding(amax, qmax);
        double best_cost = 0.0;
        fl = fl0;
        for (int f = fl0; f <= fl0 + FIXED_MSE_EXTRA_FL; f++) {
            double step = ldexp((double)DCZ_CAL_BINS, -f) / amax;   /* 2^-f / width */
            double cost = mse_fixed_cost(nz, step, step * (double)qmax);
            if (f == fl0 || cost < best_cost) {   /* ties keep the wider range */
                fl = f;
                best_cost = cost;
            }
        }
    } else {
        fl = fl_holding(T, qmax);
    }
    double range = ldexp((double)qmax, -fl);
    c.threshold = range;
    c.scale = ldexp(1.0, -fl);
    c.fl = fl;
    c.clipped = clipped_fraction(s, range / width);
    *out = c;
    free(nz);
    return DCZ_OK;
}
