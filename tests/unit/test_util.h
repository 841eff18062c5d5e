/* test_util.h: what several test programs share (header-only, so each stays
 * one file and the runtime-only cross build needs nothing else):
 *   - a splitmix64 stream seeded by TEST_RNG_SEED (define it before
 *     including), rnd(), frand() in [-1, 1) and nonzero() away from 0;
 *   - independent splitmix64 streams, each its own seed (rng r = { SEED }):
 *     rng_next(), rng_below() and rng_unit() in [0, 1);
 *   - fix_crcs(): recompute every CRC of a .dcz buffer after a test edited
 *     its bytes, so that only the content checks of the readers remain;
 *   - read_file(): a whole file into a malloc'd buffer.
 * Checked by the tests that use it.
 */
#ifndef DCZ_TESTS_TEST_UTIL_H
#define DCZ_TESTS_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/format/format.h"

#ifndef TEST_RNG_SEED
#define TEST_RNG_SEED 1
#endif

static uint64_t rs = TEST_RNG_SEED;

static inline uint64_t rnd(void)
{
    uint64_t z = (rs += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct rng { uint64_t s; } rng;

static inline uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rng_below(rng *r, uint64_t n) { return n ? rng_next(r) % n : 0; }
static inline double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) / 9007199254740992.0; }

static inline float frand(void)
{
    return (float)((rnd() >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static inline float nonzero(void)
{
    float v = frand();
    return v >= 0 ? v + 0.01f : v - 0.01f;
}

/* Every section CRC, then the header CRC, of the len bytes at b; fields
 * that point outside the buffer are left alone. */
static inline void fix_crcs(uint8_t *b, size_t len);

/* Feeds a fuzz input to parse as it is, then a copy with every CRC
 * recomputed, so that mutations reach the readers behind the checksums. */
static inline void fuzz_with_crcs(const uint8_t *data, size_t size, void (*parse)(const uint8_t *, size_t))
{
    parse(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return;
    memcpy(copy, data, size);
    fix_crcs(copy, size);
    parse(copy, size);
    free(copy);
}

static inline void fix_crcs(uint8_t *b, size_t len)
{
    if (len < DCZ_HEADER_BYTES) return;
    uint32_t ns = dcz_le32(b + 24);
    if (ns > DCZ_MAX_SECTIONS || DCZ_HEADER_BYTES + (uint64_t)ns * DCZ_SECTION_ENTRY_BYTES > len) return;
    for (uint32_t i = 0; i < ns; i++) {
        uint8_t *e = b + DCZ_HEADER_BYTES + (size_t)i * DCZ_SECTION_ENTRY_BYTES;
        uint64_t off = dcz_le32(e + 8) | (uint64_t)dcz_le32(e + 12) << 32;
        uint64_t size = dcz_le32(e + 16) | (uint64_t)dcz_le32(e + 20) << 32;
        if (off <= len && size <= len - off) dcz_put32(e + 24, dcz_crc32(0, b + off, (size_t)size));
    }
    memset(b + 28, 0, 4);
    dcz_put32(b + 28, dcz_crc32(0, b, DCZ_HEADER_BYTES + (size_t)ns * DCZ_SECTION_ENTRY_BYTES));
}

/* The bytes of the file at path (malloc'd, *len of them), or NULL. */
static inline uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(n ? (size_t)n : 1)) != NULL &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

#endif
