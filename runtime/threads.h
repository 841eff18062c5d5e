/* threads.h: the worker threads of libdcz (threads.c): a heap model's
 * (dcz_options.threads), and the trainer's, which splits its products
 * over the same pool.
 */
#ifndef DCZ_RUNTIME_THREADS_H
#define DCZ_RUNTIME_THREADS_H

#include <stdint.h>

#include "dcz.h"

/* Part `part` of `parts` of n items: [*lo, *hi), parts in order, sizes
 * within one of each other. Every split of rows, column blocks and lane
 * groups over threads uses it. */
static inline void dcz_part_range(uint32_t n, uint32_t part, uint32_t parts, uint32_t *lo,
                                  uint32_t *hi)
{
    *lo = (uint32_t)((uint64_t)n * part / parts);
    *hi = (uint32_t)((uint64_t)n * (part + 1) / parts);
}

/* Part `part` of parts of n items in whole units of `unit` items (the
 * last part ends at n): [*lo, *hi), as even as whole units go, any size */
static inline void dcz_part_units(size_t n, size_t unit, uint32_t part, uint32_t parts, size_t *lo, size_t *hi)
{
    const size_t units = (n + unit - 1) / unit, q = units / parts, r = units % parts;
    const size_t u0 = part * q + (part < r ? part : r), u1 = u0 + q + (part < r);
    *lo = u0 * unit < n ? u0 * unit : n;
    *hi = u1 * unit < n ? u1 * unit : n;
}

/* Whether a layer is worth splitting over a model's threads: at least
 * DCZ_SPLIT_MACS multiply-adds a sample (the shift form's stored taps times
 * the output plane; a dense product's rows times columns times depth),
 * about 2 us on one core. The pool's workers spin between jobs, so a
 * dispatch costs little more than the job's last part to finish: on two
 * vCPUs of an AMD EPYC (Zen 5) that run as two cores, batch 1, least of
 * four medians, 2^22 (where an early pool, which woke its workers for
 * each job, took the compressed LeNet-5 from 23 to 46 us on two threads)
 * -> 2^18: torchvision's MobileNetV2 compressed 1620 -> 1101 us,
 * EfficientNet-B0 compressed 2922 -> 1942, RegNetX-400MF 1839 -> 1224,
 * DenseNet-121 10.4 -> 8.5 ms, ShuffleNetV2 dense 1490 -> 1178; the
 * presets at 28 x 28, dense, compressed and int8, 0.58 to 0.94 of the time;
 * dense ResNet-18 and every batch of 8 or 64 within 2%. */
#define DCZ_SPLIT_MACS ((uint64_t)1 << 18)
/* A depthwise layer's time follows its outputs more than its few taps each
 * (memory, transposes): it splits at DCZ_SPLIT_DW_CELLS outputs a sample,
 * about 10 us on one core, float or integer. Two threads, batch 1 (two
 * vCPUs of an AMD EPYC, Zen 5, that run as two cores; medians of
 * alternated runs in both orders), 2^16 against 2^14: the
 * MobileNetV2-style preset dense 1.07-1.10 of the time, pruned 1.07-1.08,
 * int8 1.04; torchvision's compressed MobileNetV2 1.03-1.04; the
 * ResNet-style preset the same. (Before the pool's workers slept on their
 * caller's CPU, 2^14 had made those presets 1.2 to 1.8 times as slow.) */
#define DCZ_SPLIT_DW_CELLS ((uint64_t)1 << 14)
/* An element-wise layer (ADD) splits at DCZ_SPLIT_ELEMS values a call:
 * left to the caller's thread, a two-thread run's ADDs took longer than
 * one thread's (RegNetX-400MF's 22: 45 us at one thread, 78 at two, the
 * other thread spinning beside it). Split: 48 us; ResNet-50's 16 at two
 * threads about 0.6 of their time (dcz bench --per-layer, one core of an
 * AMD EPYC, Zen 5); the models at two threads RegNetX-400MF 0.985 of the
 * time, ResNet-50 0.99, ResNet-18 the same (medians of alternated runs in
 * both orders). */
#define DCZ_SPLIT_ELEMS ((size_t)1 << 14)

/* Threads a model runs on at most; a pool (the trainer's) takes up to
 * DCZ_POOL_MAX. */
#define DCZ_MAX_THREADS 16
#define DCZ_POOL_MAX 1024
typedef void (*dcz_task_fn)(void *ctx, uint32_t part);
typedef struct dcz_pool dcz_pool;
/* Online processors, at most DCZ_MAX_THREADS. */
uint32_t dcz_threads_online(void);
/* threads - 1 workers (threads 2 .. DCZ_POOL_MAX). */
dcz_status dcz_pool_start(uint32_t threads, dcz_pool **out);
/* fn(ctx, t) for every t < threads, t = 0 on the caller's thread; returns
 * when all are done. A NULL pool runs fn(ctx, 0) alone. */
void dcz_pool_run(dcz_pool *p, dcz_task_fn fn, void *ctx);
uint32_t dcz_pool_threads(const dcz_pool *p);
void dcz_pool_stop(dcz_pool *p);
/* A monotonic clock in nanoseconds (a load that measures times its
 * kernels by it). */
uint64_t dcz_now_ns(void);

#endif /* DCZ_RUNTIME_THREADS_H */
