/* bench.h: the clock, the median order and the copy bandwidth the
 * benchmarks share. */
#ifndef DCZ_BENCH_H
#define DCZ_BENCH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort order of doubles, for medians. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Best of three memcpy's of nb bytes, in bytes moved (read + write) per
 * second on one thread: the denominator of the physical floors. 0 when the
 * buffers cannot be had. */
static inline double bench_copy_bandwidth(size_t nb)
{
    char *a = malloc(nb), *b = malloc(nb);
    double bw = 0;
    if (a && b) {
        memset(a, 1, nb);
        memset(b, 2, nb);
        for (int i = 0; i < 3; i++) {
            double t0 = bench_now();
            memcpy(b, a, nb);
            double t = bench_now() - t0;
            if (2.0 * (double)nb / t > bw) bw = 2.0 * (double)nb / t;
        }
    }
    free(a);
    free(b);
    return bw;
}

/* A convolution layer of the benchmarks: in_c -> out_c over hw x hw, a
 * k x k window, its padding and stride, at a density of stored weights. */
typedef struct bench_layer {
    const char *name;
    uint32_t in_c, out_c, hw, k, pad, stride;
    double density;
} bench_layer;

#endif /* DCZ_BENCH_H */
