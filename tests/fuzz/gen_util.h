/* gen_util.h: what the seed-corpus generators share (header-only; each
 * generator stays one file built by hand): rnd(n), a splitmix64 stream
 * seeded by GEN_SEED (define it before including), below n; put(), one
 * seed file written whole. Checked by the corpora they write, which
 * tests/run.sh replays.
 */
#ifndef DCZ_TESTS_GEN_UTIL_H
#define DCZ_TESTS_GEN_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifndef GEN_SEED
#define GEN_SEED 1
#endif

static uint64_t seed = GEN_SEED;

static unsigned rnd(unsigned n)
{
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (unsigned)((z ^ (z >> 31)) % n);
}

/* Writes n bytes of b to DIR/NAME; 1 on failure. */
static int put(const char *dir, const char *name, const uint8_t *b, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    size_t w = fwrite(b, 1, n, f);
    return (fclose(f) != 0 || w != n) ? 1 : 0;
}

#endif
