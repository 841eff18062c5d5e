/* test_calstats.c: tests of calibrate/stats.c (calstats.h): TensorRT's
 * entropy search on a hand-computed 8-bin histogram (divergence of every
 * candidate worked out below, a disqualified candidate, ties), entropy on
 * realistic 2048-bin histograms, percentile, min-max and MSE thresholds with
 * known answers, Ristretto's fixed-point rule and the power-of-two mapping
 * of the other methods, bit-identical statistics and choices for shuffled
 * and re-batched samples, and the edge cases (nothing observed, all zero,
 * NaN and infinities, bad arguments).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calstats.h"
#include "tests/check.h"
#include "train/train.h"

static const dcz_cal_method methods[] = { DCZ_CAL_MINMAX, DCZ_CAL_PERCENTILE, DCZ_CAL_MSE,
                                          DCZ_CAL_ENTROPY };

/* Statistics from both passes over one batch. */
static void gather(dcz_cal_stats *s, const float *x, size_t n)
{
    dcz_cal_stats_init(s);
    dcz_cal_observe_range(s, x, n);
    dcz_cal_observe_hist(s, x, n);
}

/* Statistics set by hand: amax, and count equal to the sum of the bins. */
static void hand_stats(dcz_cal_stats *s, float amax, const uint32_t *at, const uint64_t *cnt,
                       int n)
{
    dcz_cal_stats_init(s);
    s->min = -amax;
    s->max = amax;
    s->amax = amax;
    for (int i = 0; i < n; i++) {
        s->bins[at[i]] += cnt[i];
        s->count += cnt[i];
    }
}

static float laplace(dcz_rng *r)
{
    float u = dcz_rng_uniform(r);
    float m = -logf(1.0f - dcz_rng_uniform(r));
    return u < 0.5f ? -m : m;
}

/* Bins {4, 2, 1, 0, 0, 0, 1, 0}, 2 levels; 8 values in all, so P = counts / 8.
 * Candidate i keeps bins 0 .. i-1, folds the rest into P[i-1]; the groups
 * hold i / 2 bins (the last the remainder); Q is normalized by the sum of
 * bins 0 .. i-1 (S). KL in nats:
 *   i=2: P = {4, 4}/8; groups {0} {1}: Q = {4, 2}/6.
 *        KL = .5 ln(.5 / (2/3)) + .5 ln(.5 / (1/3)) = .5 ln(9/8) = 0.0589
 *   i=3: P = {4, 2, 2}/8; groups {0} {1,2}: counts 4, 3, spread over the two
 *        nonzero P of the second: Q = {4, 1.5, 1.5}/7.
 *        KL = .5 ln(.5 * 7/4) + 2 * .25 ln(.25 * 7/1.5) = .5 ln(49/48) = 0.0103
 *   i=4: P = {4, 2, 1, 1}/8; groups {0,1} {2,3}: Q = {3, 3, .5, .5}/7.
 *        KL = .5 ln(7/6) + .25 ln(7/12) + .25 ln(7/4) = .25 ln(2401/1728) = 0.0822
 *   i=5: P = {4, 2, 1, 0, 1}/8; groups {0,1} {2,3,4}: the second's count 1
 *        goes to its two nonzero P: Q = {3, 3, .5, 0, .5}/7; the same terms
 *        as i=4: KL = 0.0822 (a tie with i=4)
 *   i=6: P = {4, 2, 1, 0, 0, 1}/8; groups {0,1,2} {3,4,5}: the second group
 *        counts 0 but P[5] = 1/8 > 0: Q = 0 where P > 0, disqualified
 *   i=7: P = {4, 2, 1, 0, 0, 0, 1}/8; groups {0,1,2} {3..6}: counts 7, 1,
 *        S = 8: Q = {7/3, 7/3, 7/3, 0, 0, 0, 1}/8.
 *        KL = .5 ln(12/7) + .25 ln(6/7) + .125 ln(3/7) + .125 ln 1 = 0.1250
 * So from start 2 the least divergence is i = 3; from start 4 the tie
 * 4 = 5 goes to the smaller, 4; from start 6 the disqualified 6 leaves 7. */
static void test_entropy_hand(void)
{
    const uint64_t h[8] = { 4, 2, 1, 0, 0, 0, 1, 0 };
    CHECK(dcz_cal_entropy_bins(h, 8, 2, 2) == 3, "start 2: %u", dcz_cal_entropy_bins(h, 8, 2, 2));
    CHECK(dcz_cal_entropy_bins(h, 8, 3, 2) == 3, "start 3");
    CHECK(dcz_cal_entropy_bins(h, 8, 4, 2) == 4, "start 4 (tie 4 = 5): %u",
          dcz_cal_entropy_bins(h, 8, 4, 2));
    CHECK(dcz_cal_entropy_bins(h, 8, 5, 2) == 5, "start 5");
    CHECK(dcz_cal_entropy_bins(h, 8, 6, 2) == 7, "start 6 (6 disqualified): %u",
          dcz_cal_entropy_bins(h, 8, 6, 2));
    CHECK(dcz_cal_entropy_bins(h, 8, 7, 2) == 7, "start 7");
    CHECK(dcz_cal_entropy_bins(h, 8, 8, 2) == 8, "start = nbins: no candidate");
    CHECK(dcz_cal_entropy_bins(h, 8, 100, 2) == 8, "start > nbins: no candidate");
    /* candidate 0 keeps no bin; candidate 1 has P = Q = {1}: divergence 0 */
    CHECK(dcz_cal_entropy_bins(h, 8, 0, 2) == 1, "start 0: %u", dcz_cal_entropy_bins(h, 8, 0, 2));

    /* {3, 1, 0, ...}: i = 2 (groups {0} {1}) and i = 3 (groups {0} {1,2})
     * both reproduce P exactly, divergence 0: the smaller wins */
    const uint64_t t[8] = { 3, 1, 0, 0, 0, 0, 0, 0 };
    CHECK(dcz_cal_entropy_bins(t, 8, 2, 2) == 2, "exact tie: %u", dcz_cal_entropy_bins(t, 8, 2, 2));

    /* {3, 0, ..., 0, 1}: the last group of every candidate is empty while
     * the folded tail makes P[i-1] > 0: all disqualified */
    const uint64_t d[8] = { 3, 0, 0, 0, 0, 0, 0, 1 };
    CHECK(dcz_cal_entropy_bins(d, 8, 2, 2) == 8, "all disqualified: %u",
          dcz_cal_entropy_bins(d, 8, 2, 2));

    const uint64_t z[8] = { 0 };
    CHECK(dcz_cal_entropy_bins(z, 8, 2, 2) == 8, "empty histogram");
    CHECK(dcz_cal_entropy_bins(h, 8, 2, 0) == 8, "no levels");
    CHECK(dcz_cal_entropy_bins(NULL, 8, 2, 2) == 8, "no bins");
    /* more levels than bins: one group of all i bins, Q uniform over the
     * nonzero P; i = 2: P = {4, 4}/8, Q = {3, 3}/6: divergence 0 */
    CHECK(dcz_cal_entropy_bins(h, 8, 2, 1000) == 2, "levels > i: %u",
          dcz_cal_entropy_bins(h, 8, 2, 1000));
}

/* Entropy on 2048 bins: a Gaussian body with a few far outliers clips well
 * below amax and beyond most of the body; mass only in the first bins picks
 * the first candidate. */
static void test_entropy_2048(void)
{
    enum { N = 100000 };
    float *x = malloc(N * sizeof *x);
    REQUIRE(x, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 11);
    for (size_t i = 0; i < N; i++)
        x[i] = dcz_rng_normal(&r);
    x[10] = 40.0f;
    x[20] = -35.0f;
    x[30] = 30.0f;
    dcz_cal_stats s;
    gather(&s, x, N);
    REQUIRE(s.amax == 40.0f && s.count == N, "amax %g count %llu", s.amax,
            (unsigned long long)s.count);
    dcz_cal_choice c;
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_ENTROPY, 0, 127, 0, &c) == DCZ_OK, "choose");
    /* (T is 3.35 for this seed: about 3.3 sigma, clipping 0.09%) */
    CHECK(c.threshold < s.amax / 4.0 && c.threshold > 3.0, "T %g: past most of the body, "
          "well below the outliers", c.threshold);
    uint32_t i = dcz_cal_entropy_bins(s.bins, DCZ_CAL_BINS, 128, 128);
    CHECK(c.threshold == ((double)i + 0.5) * (40.0 / DCZ_CAL_BINS), "T = (i + 0.5) w");
    CHECK(c.scale == c.threshold / 127.0, "scale T / qmax");
    CHECK(c.clipped > 0.0 && c.clipped < 0.01, "clipped %g", c.clipped);

    /* mass in bins 0..9 and nothing beyond: every candidate from 128 to 255
     * keeps one bin per level, Q = P, divergence 0: the first wins */
    const uint32_t at[] = { 0, 1, 2, 5, 9 };
    const uint64_t cnt[] = { 100, 50, 20, 7, 3 };
    hand_stats(&s, 1.0f, at, cnt, 5);
    CHECK(dcz_cal_entropy_bins(s.bins, DCZ_CAL_BINS, 128, 128) == 128, "first bins: %u",
          dcz_cal_entropy_bins(s.bins, DCZ_CAL_BINS, 128, 128));
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_ENTROPY, 0, 127, 0, &c) == DCZ_OK, "choose");
    CHECK(c.threshold == 128.5 / DCZ_CAL_BINS && c.clipped == 0.0, "T %g clipped %g",
          c.threshold, c.clipped);

    /* the body below bin 127 and one value at amax: bins 127 .. 2046 are
     * empty and the tail is not, every candidate is disqualified; the
     * chooser clips at the first candidate */
    for (size_t k = 0; k < 1000; k++)
        x[k] = 0.05f * dcz_rng_uniform(&r);
    x[1000] = 1.0f;
    gather(&s, x, 1001);
    CHECK(dcz_cal_entropy_bins(s.bins, DCZ_CAL_BINS, 128, 128) == DCZ_CAL_BINS, "all disqualified");
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_ENTROPY, 0, 127, 0, &c) == DCZ_OK, "choose");
    CHECK(c.threshold == 128.5 / DCZ_CAL_BINS, "fallback T %g", c.threshold);
    CHECK(c.clipped == 1.0 / 1001.0, "the outlier clipped: %g", c.clipped);
    free(x);
}

/* Percentile: bins (width 1 with amax 2048) 0:40, 9:30, 15:10, 99:15,
 * 2047:5; cumulative 40, 70, 80, 95, 100. */
static void test_percentile(void)
{
    const uint32_t at[] = { 0, 9, 15, 99, 2047 };
    const uint64_t cnt[] = { 40, 30, 10, 15, 5 };
    dcz_cal_stats s;
    hand_stats(&s, 2048.0f, at, cnt, 5);
    const struct { double p, t, clipped; } cases[] = {
        { 1e-9, 1.0, 0.6 }, { 40.0, 1.0, 0.6 }, { 40.0001, 10.0, 0.3 }, { 70.0, 10.0, 0.3 },
        { 75.0, 16.0, 0.2 }, { 80.0, 16.0, 0.2 }, { 94.9, 100.0, 0.05 }, { 95.0, 100.0, 0.05 },
        { 99.9, 2048.0, 0.0 }, { 100.0, 2048.0, 0.0 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dcz_cal_choice c;
        REQUIRE(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, cases[k].p, 127, 0, &c) == DCZ_OK, "ok");
        CHECK(c.threshold == cases[k].t, "P %g: T %g want %g", cases[k].p, c.threshold,
              cases[k].t);
        CHECK(c.scale == cases[k].t / 127.0 && c.fl == 0, "P %g: scale", cases[k].p);
        CHECK(fabs(c.clipped - cases[k].clipped) < 1e-15, "P %g: clipped %g want %g",
              cases[k].p, c.clipped, cases[k].clipped);
    }
    /* 99th percentile of 1000 values 0.5, 1.5, ..., 999.5 with amax 1000:
     * value v falls in bin floor(v * 2.048); the 990th value is 989.5 */
    float *x = malloc(1000 * sizeof *x);
    REQUIRE(x, "alloc");
    for (int k = 0; k < 1000; k++)
        x[k] = (float)k + 0.5f;
    x[999] = 1000.0f;
    gather(&s, x, 1000);
    dcz_cal_choice c;
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 99.0, 127, 0, &c) == DCZ_OK, "ok");
    double bin = floor(989.5 / 1000.0 * 2048.0);
    CHECK(c.threshold == (bin + 1.0) * (1000.0 / 2048.0), "T %.9g want edge of bin %g",
          c.threshold, bin);
    free(x);
}

static void test_minmax(void)
{
    const float x[] = { -3.0f, 1.0f, 2.5f, 0.0f };
    dcz_cal_stats s;
    gather(&s, x, 4);
    CHECK(s.min == -3.0f && s.max == 2.5f && s.amax == 3.0f && s.count == 4, "pass 1");
    dcz_cal_choice c;
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MINMAX, 0, 127, 0, &c) == DCZ_OK, "ok");
    CHECK(c.threshold == 3.0 && c.scale == 3.0 / 127.0 && c.clipped == 0.0 && c.fl == 0,
          "int8: T %g scale %g clipped %g", c.threshold, c.scale, c.clipped);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MINMAX, 0, 32767, 0, &c) == DCZ_OK, "ok");
    CHECK(c.threshold == 3.0 && c.scale == 3.0 / 32767.0, "int16: scale %g", c.scale);
    /* min-max needs pass 1 only */
    dcz_cal_stats_init(&s);
    dcz_cal_observe_range(&s, x, 4);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MINMAX, 0, 127, 0, &c) == DCZ_OK, "pass 1 only");
    CHECK(c.threshold == 3.0 && c.clipped == 0.0, "pass 1 only: T %g", c.threshold);
}

/* MSE on a heavy-tailed distribution clips well below amax; on a uniform
 * one it keeps nearly all of the range. */
static void test_mse(void)
{
    enum { N = 100000 };
    float *x = malloc(N * sizeof *x);
    REQUIRE(x, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 5);
    dcz_cal_stats s;
    dcz_cal_choice c;

    /* Laplace(0, 1): amax near ln N = 11.5; the optimal 8-bit clip of a
     * Laplace distribution under this error model is 9.89 b (Banner et al.,
     * ACIQ, 2019) */
    for (size_t i = 0; i < N; i++)
        x[i] = laplace(&r);
    gather(&s, x, N);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 127, 0, &c) == DCZ_OK, "ok");
    CHECK(c.threshold < 0.9 * s.amax && fabs(c.threshold - 9.89) < 1.0,
          "laplace: T %g of amax %g", c.threshold, s.amax);
    CHECK(c.clipped > 0.0 && c.clipped < 1e-3, "clipped %g", c.clipped);
    double edge = c.threshold / (s.amax / (double)DCZ_CAL_BINS);
    CHECK(edge == floor(edge) && edge >= 128.0, "T on a bin edge from 128: %g", edge);

    for (size_t i = 0; i < N; i++)
        x[i] = 2.0f * dcz_rng_uniform(&r) - 1.0f;
    gather(&s, x, N);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 127, 0, &c) == DCZ_OK, "ok");
    CHECK(c.threshold > 0.97 * s.amax && c.threshold <= s.amax, "uniform: T %g of amax %g",
          c.threshold, s.amax);
    /* 16 bits: the rounding error is 2^16 times smaller, so clip less */
    dcz_cal_choice c16;
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 32767, 0, &c16) == DCZ_OK, "ok");
    CHECK(c16.threshold >= c.threshold, "int16 T %g >= int8 T %g", c16.threshold, c.threshold);

    /* every value in bin 999 of width 1 (centre 999.5): T = 1000 costs the
     * rounding error (1000/127)^2 / 12 = 5.2 per value, T = 999 saturates
     * by half a width, 0.25, T = 998 by 1.5, 2.25: T = 999 */
    const uint32_t at[] = { 999 };
    const uint64_t cnt[] = { 10 };
    hand_stats(&s, 2048.0f, at, cnt, 1);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 127, 0, &c) == DCZ_OK, "ok");
    CHECK(c.threshold == 999.0 && c.clipped == 1.0, "single bin: T %g clipped %g", c.threshold,
          c.clipped);
    free(x);
}

/* The entropy guard: a bulk of small values and a sparse tail ten times as
 * wide, which the divergence at 128 levels clips whole (its threshold sits
 * at the bulk's edge): mse's threshold is taken, method says mse and
 * entropy_threshold keeps entropy's; on a Laplace distribution entropy's
 * own threshold stands. Both for int8 and for power-of-two scales. */
static void test_entropy_guard(void)
{
    enum { N = 200000 };
    float *x = malloc(N * sizeof *x);
    REQUIRE(x, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 9);
    for (size_t i = 0; i < N; i++)
        x[i] = dcz_rng_uniform(&r) < 0.98f ? 0.5f * dcz_rng_uniform(&r) : 0.5f + 5.0f * dcz_rng_uniform(&r);
    dcz_cal_stats s;
    gather(&s, x, N);
    const uint32_t edge = dcz_cal_entropy_bins(s.bins, DCZ_CAL_BINS, 128, 128);
    const double width = s.amax / (double)DCZ_CAL_BINS;
    CHECK((edge + 0.5) * width < 1.0, "the divergence alone clips the tail: %g of %g", (edge + 0.5) * width,
          s.amax);
    dcz_cal_choice e, m;
    for (int fixed = 0; fixed < 2; fixed++) {
        REQUIRE(dcz_cal_choose(&s, DCZ_CAL_ENTROPY, 0, 127, fixed, &e) == DCZ_OK &&
                dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 127, fixed, &m) == DCZ_OK, "ok");
        CHECK(e.method == DCZ_CAL_MSE && e.entropy_threshold == (edge + 0.5) * width && m.entropy_threshold == 0,
              "fixed %d: method %d, entropy's threshold %g", fixed, (int)e.method, e.entropy_threshold);
        if (!fixed)
            CHECK(e.threshold == m.threshold && e.threshold > 0.9 * s.amax, "T %g, mse's %g, amax %g",
                  e.threshold, m.threshold, s.amax);
        else   /* the largest fl holding mse's bin-edge threshold */
            CHECK(e.threshold >= m.threshold * 0.5 && e.fl >= m.fl && e.threshold > 0.45 * s.amax,
                  "fixed: T %g (fl %d), mse's %g (fl %d)", e.threshold, e.fl, m.threshold, m.fl);
    }
    for (size_t i = 0; i < N; i++)
        x[i] = laplace(&r);
    gather(&s, x, N);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_ENTROPY, 0, 127, 0, &e) == DCZ_OK, "ok");
    CHECK(e.method == DCZ_CAL_ENTROPY && e.entropy_threshold == 0 &&
          e.threshold == (dcz_cal_entropy_bins(s.bins, DCZ_CAL_BINS, 128, 128) + 0.5) * (s.amax / DCZ_CAL_BINS),
          "laplace: method %d, T %g", (int)e.method, e.threshold);
    free(x);
}

/* Ristretto's rule for parameters, applied to activations too: IL =
 * ceil(log2 amax) + 1 (the sign bit), fl = bits - IL. */
static void test_fixed_minmax(void)
{
    const struct { float amax; int fl8, fl16; } cases[] = {
        { 1.0f, 7, 15 }, { 0.75f, 7, 15 }, { 3.2f, 5, 13 }, { 100.0f, 0, 8 },
        { 0.5f, 8, 16 }, { 2.0f, 6, 14 }, { 1e-3f, 16, 24 }, { 1000.0f, -3, 5 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        float x[2] = { cases[k].amax * 0.25f, -cases[k].amax };
        dcz_cal_stats s;
        gather(&s, x, 2);
        dcz_cal_choice c;
        REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MINMAX, 0, 127, 1, &c) == DCZ_OK, "ok");
        CHECK(c.fl == cases[k].fl8, "amax %g: fl %d want %d", cases[k].amax, c.fl,
              cases[k].fl8);
        CHECK(c.scale == ldexp(1.0, -c.fl) && c.threshold == ldexp(127.0, -c.fl),
              "amax %g: scale %g T %g", cases[k].amax, c.scale, c.threshold);
        /* the range is qmax 2^-fl = (1 - 2^-(bits-1)) 2^ceil(log2 amax): only
         * an amax that is a power of two exceeds it, by less than a step */
        const int pow2 = frexpf(cases[k].amax, &(int){ 0 }) == 0.5f;
        CHECK(c.clipped == (pow2 ? 0.5 : 0.0), "amax %g: clipped %g", cases[k].amax, c.clipped);
        REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MINMAX, 0, 32767, 1, &c) == DCZ_OK, "ok");
        CHECK(c.fl == cases[k].fl16, "amax %g 16-bit: fl %d want %d", cases[k].amax, c.fl,
              cases[k].fl16);
        CHECK(c.scale == ldexp(1.0, -c.fl) && c.threshold == ldexp(32767.0, -c.fl),
              "amax %g 16-bit: scale", cases[k].amax);
    }
}

/* Percentile and entropy: T as for int8, then the largest fl whose range
 * qmax 2^-fl holds T; the clipped fraction is measured at that range. */
static void test_fixed_mapping(void)
{
    const uint32_t at[] = { 0, 9, 15, 99, 2047 };
    const uint64_t cnt[] = { 40, 30, 10, 15, 5 };
    dcz_cal_stats s;
    dcz_cal_choice c;
    hand_stats(&s, 2048.0f, at, cnt, 5);
    /* P 70: T = 10; 127/8 = 15.875 >= 10 > 127/16: fl 3; at 15.875 the bin
     * 15 is one eighth above the range: clipped (15 + 5 + 10/8) / 100 */
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 70.0, 127, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == 3 && c.scale == 0.125 && c.threshold == 15.875, "fl %d T %g", c.fl,
          c.threshold);
    CHECK(c.clipped == 21.25 / 100.0, "clipped %.17g", c.clipped);
    /* 16 bits: 32767 / 2^11 = 15.9995 >= 10 > 32767 / 2^12 */
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 70.0, 32767, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == 11, "16-bit fl %d", c.fl);
    /* P 100: T = amax = 2048; 127 * 2^5 = 4064 >= 2048 > 2032: fl -5 */
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 100.0, 127, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == -5 && c.scale == 32.0 && c.clipped == 0.0, "amax: fl %d", c.fl);

    /* T exactly the range: amax 2032, bin width 127/128, all in bin 15:
     * P 100 gives T = 16 widths = 127/8, which fl 3 still holds */
    const uint32_t at1[] = { 15 };
    const uint64_t cnt1[] = { 7 };
    hand_stats(&s, 2032.0f, at1, cnt1, 1);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 100.0, 127, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == 3 && c.threshold == 15.875 && c.clipped == 0.0, "exact: fl %d", c.fl);
    s.bins[15] = 0;
    s.bins[16] = 7;   /* T = 17 widths = 16.87: fl 2 */
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 100.0, 127, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == 2, "just above: fl %d", c.fl);

    /* entropy: mass in the first bins picks i = 128, T = 128.5 with width 1;
     * 127 * 2 = 254 >= 128.5 > 127: fl -1 */
    const uint32_t at2[] = { 0, 1, 2, 5, 9 };
    const uint64_t cnt2[] = { 100, 50, 20, 7, 3 };
    hand_stats(&s, 2048.0f, at2, cnt2, 5);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_ENTROPY, 0, 127, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == -1 && c.scale == 2.0 && c.threshold == 254.0, "entropy: fl %d", c.fl);
}

/* MSE with power-of-two scales. */
static void test_fixed_mse(void)
{
    /* all values at the centre of bin 999 (999.5, width 1); amax 2048 needs
     * fl -5 (range 4064). Error per value: fl -5: 32^2/12 = 85.3; -4: 16^2/12
     * = 21.3; -3 (range 1016 holds 999.5): 8^2/12 = 5.3; -2 (range 508):
     * saturates, (999.5 - 508)^2. Least: fl -3. */
    const uint32_t at[] = { 999 };
    const uint64_t cnt[] = { 10 };
    dcz_cal_stats s;
    dcz_cal_choice c;
    hand_stats(&s, 2048.0f, at, cnt, 1);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 127, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == -3 && c.threshold == 1016.0 && c.clipped == 0.0, "single bin: fl %d", c.fl);

    enum { N = 100000 };
    float *x = malloc(N * sizeof *x);
    REQUIRE(x, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 9);
    /* uniform on [-1, 1]: fl 6 holds amax (range 1.98); fl 7 (range 0.992)
     * quarters the rounding error and saturates 0.8% of the values by less
     * than 0.008; fl 8 (range 0.496) saturates half: fl 7 */
    for (size_t i = 0; i < N; i++)
        x[i] = 2.0f * dcz_rng_uniform(&r) - 1.0f;
    gather(&s, x, N);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 127, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == 7, "uniform: fl %d", c.fl);
    /* 16 bits: fl 14 holds amax (range 1.99994); fl 15 (range 0.99997)
     * lies above the centre of the last bin, so nothing saturates in the
     * histogram's view and the rounding error is a quarter: fl 15 */
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 32767, 1, &c) == DCZ_OK, "ok");
    CHECK(c.fl == 15, "uniform 16-bit: fl %d", c.fl);

    /* Laplace(0, 1), amax about 12: fl 3 (range 15.9) holds amax at a
     * rounding error of 2^-6 / 12 per value (1e5 values: 130); fl 4 (range
     * 7.94) quarters it (33) and saturates the e^-7.94 = 0.04% beyond, each
     * by 2 b^2 on average (71): fl 4 */
    for (size_t i = 0; i < N; i++)
        x[i] = laplace(&r);
    gather(&s, x, N);
    REQUIRE(dcz_cal_choose(&s, DCZ_CAL_MSE, 0, 127, 1, &c) == DCZ_OK, "ok");
    CHECK(s.amax > 7.9375 && s.amax <= 15.875, "amax %g needs fl 3", s.amax);
    CHECK(c.fl == 4 && c.threshold == 7.9375 && c.clipped > 0.0, "laplace: fl %d", c.fl);
    free(x);
}

static int same_choice(const dcz_cal_choice *a, const dcz_cal_choice *b)
{
    return memcmp(&a->threshold, &b->threshold, sizeof a->threshold) == 0 &&
           memcmp(&a->scale, &b->scale, sizeof a->scale) == 0 && a->fl == b->fl &&
           memcmp(&a->clipped, &b->clipped, sizeof a->clipped) == 0;
}

static void shuffle(float *x, size_t n, dcz_rng *r)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = dcz_rng_below(r, (uint32_t)i);
        float t = x[i - 1];
        x[i - 1] = x[j];
        x[j] = t;
    }
}

/* One pass over x in batches of random sizes (0 included). */
static void batches(dcz_cal_stats *s, const float *x, size_t n, int hist, dcz_rng *r)
{
    size_t i = 0;
    while (i < n) {
        size_t b = dcz_rng_below(r, 3000);
        if (b > n - i)
            b = n - i;
        if (hist)
            dcz_cal_observe_hist(s, x + i, b);
        else
            dcz_cal_observe_range(s, x + i, b);
        i += b;
    }
}

/* The same multiset in any order and batching gives the same statistics
 * and the same choices, bit for bit. */
static void test_order_independence(void)
{
    enum { N = 100000 };
    float *x = malloc(N * sizeof *x);
    float *y = malloc(N * sizeof *y);
    REQUIRE(x && y, "alloc");
    dcz_rng r;
    dcz_rng_seed(&r, 2024);
    size_t finite = 0;
    for (size_t i = 0; i < N; i++) {
        uint32_t k = dcz_rng_below(&r, 8);
        float v;
        switch (k) {
        case 0: v = dcz_rng_normal(&r); break;
        case 1: v = 3.0f * dcz_rng_uniform(&r); break;   /* ReLU-like */
        case 2: v = 0.5f * laplace(&r); break;
        case 3: v = dcz_rng_below(&r, 2) ? 0.0f : -0.0f; break;
        case 4: v = (float)dcz_rng_below(&r, 5) * 0.25f; break;   /* repeats, bin edges */
        case 5: v = 20.0f * laplace(&r); break;
        case 6: v = i % 97 == 0 ? NAN : i % 89 == 0 ? -INFINITY : 1e-3f * dcz_rng_normal(&r);
                break;
        default: v = -4.0f * dcz_rng_uniform(&r); break;
        }
        x[i] = v;
        finite += isfinite(v) != 0;
    }
    dcz_cal_stats a, b;
    gather(&a, x, N);
    CHECK(a.count == finite, "count %llu of %zu finite", (unsigned long long)a.count, finite);

    memcpy(y, x, N * sizeof *y);
    dcz_cal_stats_init(&b);
    shuffle(y, N, &r);
    batches(&b, y, N, 0, &r);
    shuffle(y, N, &r);
    batches(&b, y, N, 1, &r);
    CHECK(memcmp(&a, &b, sizeof a) == 0, "stats differ: min %g/%g max %g/%g amax %g/%g "
          "count %llu/%llu", a.min, b.min, a.max, b.max, a.amax, b.amax,
          (unsigned long long)a.count, (unsigned long long)b.count);

    /* reversed, one value at a time */
    dcz_cal_stats c;
    dcz_cal_stats_init(&c);
    for (size_t i = N; i-- > 0;)
        dcz_cal_observe_range(&c, x + i, 1);
    for (size_t i = N; i-- > 0;)
        dcz_cal_observe_hist(&c, x + i, 1);
    CHECK(memcmp(&a, &c, sizeof a) == 0, "stats differ, one at a time reversed");

    const int32_t qmaxes[] = { 127, 32767 };
    for (int m = 0; m < 4; m++)
        for (int q = 0; q < 2; q++)
            for (int fixed = 0; fixed < 2; fixed++) {
                dcz_cal_choice ca, cb;
                REQUIRE(dcz_cal_choose(&a, methods[m], 99.99, qmaxes[q], fixed, &ca) ==
                        DCZ_OK, "a");
                REQUIRE(dcz_cal_choose(&b, methods[m], 99.99, qmaxes[q], fixed, &cb) ==
                        DCZ_OK, "b");
                CHECK(same_choice(&ca, &cb), "method %d qmax %d fixed %d: %.17g vs %.17g",
                      (int)methods[m], (int)qmaxes[q], fixed, ca.threshold, cb.threshold);
                CHECK(ca.threshold > 0.0 && ca.threshold <= 2.0 * a.amax && ca.scale > 0.0 &&
                      ca.clipped >= 0.0 && ca.clipped <= 1.0, "method %d: sane", (int)methods[m]);
            }
    free(x);
    free(y);
}

static void test_bin(void)
{
    CHECK(dcz_cal_bin(0.0f, 1.0f) == 0, "zero");
    CHECK(dcz_cal_bin(1.0f, 1.0f) == DCZ_CAL_BINS - 1, "amax: last bin");
    CHECK(dcz_cal_bin(2.0f, 1.0f) == DCZ_CAL_BINS - 1, "beyond amax: last bin");
    CHECK(dcz_cal_bin(nextafterf(1.0f, 0.0f), 1.0f) == DCZ_CAL_BINS - 1, "just below amax");
    CHECK(dcz_cal_bin(0.5f, 1.0f) == 1024, "half");
    CHECK(dcz_cal_bin(5.0f, 2048.0f) == 5 && dcz_cal_bin(4.999f, 2048.0f) == 4, "edges");
    CHECK(dcz_cal_bin(nextafterf(0.5f, 0.0f), 1.0f) == 1023, "just below an edge");
    CHECK(dcz_cal_bin(3.0f, 3.0f * 2048.0f) == 1, "bin 1");
    CHECK(dcz_cal_bin(NAN, 1.0f) == 0 && dcz_cal_bin(0.5f, 0.0f) == 0, "degenerate");
}

static void test_edge_cases(void)
{
    dcz_cal_stats s;
    dcz_cal_choice c;
    const int32_t qmaxes[] = { 127, 32767 };

    /* nothing observed: min > max, and every method gives scale 1, fl 0 */
    dcz_cal_stats_init(&s);
    dcz_cal_observe_range(&s, NULL, 0);
    dcz_cal_observe_hist(&s, NULL, 0);
    CHECK(s.min > s.max && s.amax == 0.0f && s.count == 0, "empty stats");
    for (int m = 0; m < 4; m++)
        for (int q = 0; q < 2; q++)
            for (int fixed = 0; fixed < 2; fixed++) {
                memset(&c, 0xff, sizeof c);
                REQUIRE(dcz_cal_choose(&s, methods[m], 50.0, qmaxes[q], fixed, &c) == DCZ_OK,
                        "empty: method %d", (int)methods[m]);
                CHECK(c.scale == 1.0 && c.fl == 0 && c.threshold == 0.0 && c.clipped == 0.0,
                      "empty: method %d", (int)methods[m]);
            }

    /* -0 and +0 in either order: the same bits */
    const float pz[] = { 0.0f, -0.0f, 1.0f }, zp[] = { -0.0f, 0.0f, 1.0f };
    dcz_cal_stats u;
    gather(&s, pz, 3);
    gather(&u, zp, 3);
    CHECK(memcmp(&s, &u, sizeof s) == 0, "signed zeros: order changed the stats");

    /* all zero, with -0 */
    const float z[] = { 0.0f, -0.0f, 0.0f };
    gather(&s, z, 3);
    CHECK(s.amax == 0.0f && s.count == 3 && s.bins[0] == 3, "zeros counted in bin 0");
    CHECK(s.min == 0.0f && !signbit(s.min) && s.max == 0.0f, "zeros are +0");
    for (int m = 0; m < 4; m++) {
        REQUIRE(dcz_cal_choose(&s, methods[m], 50.0, 127, 1, &c) == DCZ_OK, "zero");
        CHECK(c.scale == 1.0 && c.fl == 0, "zero: method %d", (int)methods[m]);
    }

    /* NaN and infinities are ignored by both passes */
    const float w[] = { NAN, 1.0f, INFINITY, -2.0f, -INFINITY, -NAN, 0.5f };
    gather(&s, w, 7);
    CHECK(s.min == -2.0f && s.max == 1.0f && s.amax == 2.0f && s.count == 3, "non-finite: "
          "min %g max %g amax %g count %llu", s.min, s.max, s.amax, (unsigned long long)s.count);
    CHECK(s.bins[DCZ_CAL_BINS - 1] == 1 && s.bins[1024] == 1 && s.bins[512] == 1, "bins");

    /* bad arguments */
    CHECK(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 0.0, 127, 0, &c) == DCZ_ERR_ARG, "P 0");
    CHECK(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, -5.0, 127, 0, &c) == DCZ_ERR_ARG, "P < 0");
    CHECK(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 100.5, 127, 0, &c) == DCZ_ERR_ARG, "P > 100");
    CHECK(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, NAN, 127, 0, &c) == DCZ_ERR_ARG, "P NaN");
    CHECK(dcz_cal_choose(&s, DCZ_CAL_PERCENTILE, 100.0, 127, 0, &c) == DCZ_OK, "P 100");
    CHECK(dcz_cal_choose(&s, DCZ_CAL_MINMAX, -1.0, 127, 0, &c) == DCZ_OK, "P unused");
    const int32_t bad_q[] = { 0, 1, 126, 128, 255, 32768, -127 };
    for (int k = 0; k < 7; k++)
        CHECK(dcz_cal_choose(&s, DCZ_CAL_MINMAX, 0, bad_q[k], 0, &c) == DCZ_ERR_ARG, "qmax %d",
              (int)bad_q[k]);
    CHECK(dcz_cal_choose(&s, (dcz_cal_method)0, 0, 127, 0, &c) == DCZ_ERR_ARG, "method 0");
    CHECK(dcz_cal_choose(&s, (dcz_cal_method)5, 0, 127, 0, &c) == DCZ_ERR_ARG, "method 5");
    CHECK(dcz_cal_choose(NULL, DCZ_CAL_MINMAX, 0, 127, 0, &c) == DCZ_ERR_ARG, "no stats");
    CHECK(dcz_cal_choose(&s, DCZ_CAL_MINMAX, 0, 127, 0, NULL) == DCZ_ERR_ARG, "no out");
    /* inconsistent statistics */
    dcz_cal_stats t = s;
    t.count++;
    CHECK(dcz_cal_choose(&t, DCZ_CAL_MINMAX, 0, 127, 0, &c) == DCZ_ERR_ARG, "count != sum");
    t = s;
    t.amax = INFINITY;
    CHECK(dcz_cal_choose(&t, DCZ_CAL_MINMAX, 0, 127, 0, &c) == DCZ_ERR_ARG, "amax inf");
    t.amax = NAN;
    CHECK(dcz_cal_choose(&t, DCZ_CAL_MINMAX, 0, 127, 0, &c) == DCZ_ERR_ARG, "amax NaN");
    t = s;
    t.bins[0] = UINT64_MAX;
    CHECK(dcz_cal_choose(&t, DCZ_CAL_MINMAX, 0, 127, 0, &c) == DCZ_ERR_ARG, "overflow");
    /* pass 1 without pass 2: the histogram methods refuse */
    dcz_cal_stats_init(&t);
    dcz_cal_observe_range(&t, w, 7);
    for (int m = 1; m < 4; m++)
        CHECK(dcz_cal_choose(&t, methods[m], 50.0, 127, 0, &c) == DCZ_ERR_ARG,
              "no histogram: method %d", (int)methods[m]);
}

int main(void)
{
    RUN(test_entropy_hand);
    RUN(test_entropy_2048);
    RUN(test_percentile);
    RUN(test_minmax);
    RUN(test_mse);
    RUN(test_entropy_guard);
    RUN(test_fixed_minmax);
    RUN(test_fixed_mapping);
    RUN(test_fixed_mse);
    RUN(test_order_independence);
    RUN(test_bin);
    RUN(test_edge_cases);
    return check_summary();
}
