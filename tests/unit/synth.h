/* synth.h: synthetic data shared by the unit tests of the compression stages
 * (test_prune.c, test_quantize.c): Gaussian blobs, a small classification
 * problem a tiny MLP learns in a few epochs.
 *
 * Header-only (static inline) so that each test program stays one file; it
 * is checked by the tests that use it, which train on its data and expect
 * high accuracy.
 */
#ifndef DCZ_TESTS_SYNTH_H
#define DCZ_TESTS_SYNTH_H

#include <stdlib.h>
#include <string.h>

#include "train/train.h"

/* The shape of a blobs problem. Every class has a centre drawn once from
 * centre_seed, so splits drawn with different seeds share their centres. */
typedef struct synth_blobs {
    int dim;                /* features per sample, >= 1 */
    int classes;            /* 1..256 */
    uint64_t centre_seed;
    float lo, span;         /* centre coordinates: lo + span * uniform [0, 1) */
    float noise;            /* standard deviation around a centre */
} synth_blobs;

/* Fills d with n samples of b as a (1, 1, dim) dataset: labels uniform over
 * the classes, features the class centre plus Gaussian noise clamped to
 * [0, 1]; deterministic in (b, seed). Returns 1, or 0 when out of memory
 * (d is then freed and zeroed). */
static inline int synth_blobs_make(dcz_dataset *d, size_t n, uint64_t seed,
                                   const synth_blobs *b)
{
    size_t dim = (size_t)b->dim;
    float *centres = malloc((size_t)b->classes * dim * sizeof *centres);  /* (classes, dim) */
    memset(d, 0, sizeof *d);
    d->x = malloc(n * dim * sizeof *d->x);   /* (n, dim) */
    d->y = malloc(n);                        /* (n) */
    if (!centres || !d->x || !d->y) {
        free(centres);
        dcz_dataset_free(d);
        return 0;
    }
    d->n = n;
    d->c = 1;
    d->h = 1;
    d->w = (uint32_t)b->dim;
    d->classes = (uint32_t)b->classes;

    dcz_rng r;
    dcz_rng_seed(&r, b->centre_seed);
    for (size_t i = 0; i < (size_t)b->classes * dim; i++)
        centres[i] = b->lo + b->span * dcz_rng_uniform(&r);
    dcz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t c = dcz_rng_below(&r, (uint32_t)b->classes);
        d->y[i] = (uint8_t)c;
        for (size_t j = 0; j < dim; j++) {
            float v = centres[c * dim + j] + b->noise * dcz_rng_normal(&r);
            d->x[i * dim + j] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
        }
    }
    free(centres);
    return 1;
}

#endif /* DCZ_TESTS_SYNTH_H */
