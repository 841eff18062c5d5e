/* rng.c: the training engine's random numbers: xoshiro256** (Blackman and
 * Vigna) seeded through splitmix64, with uniform floats, normals (Box-Muller)
 * and unbiased bounded integers (Lemire's multiply-and-reject).
 *
 * Everything random in training (initial weights, shuffling) comes from one
 * of these generators, so the same seed gives the same run.
 * Tested by tests/unit/test_train.c (range, mean, determinism).
 */
#include <math.h>

#include "train/train.h"

uint64_t dcz_rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *x) { return dcz_rng_mix64(*x += 0x9e3779b97f4a7c15ULL); }

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void dcz_rng_seed(dcz_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t dcz_rng_u64(dcz_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float dcz_rng_uniform(dcz_rng *r)
{
    /* 24 random bits: every value is exactly representable and < 1 */
    return (float)(dcz_rng_u64(r) >> 40) * (1.0f / 16777216.0f);
}

float dcz_rng_normal(dcz_rng *r)
{
    /* u1 in (0, 1] so that log(u1) is finite */
    double u1 = ((double)(dcz_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(dcz_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint32_t dcz_rng_below(dcz_rng *r, uint32_t n)
{
    if (n == 0) return 0;
    uint64_t m = (dcz_rng_u64(r) >> 32) * (uint64_t)n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;  /* 2^32 mod n */
        while (low < threshold) {
            m = (dcz_rng_u64(r) >> 32) * (uint64_t)n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}
