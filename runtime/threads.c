/* threads.c: the worker threads of a heap model (dcz_options.threads).
 *
 * A job is a function of a part number: dcz_pool_run calls fn(ctx, t) for
 * every t < threads, part 0 on the caller's thread and the others on the
 * workers, and returns when all are done. Workers spin briefly on the job
 * counter before they sleep on a condition variable, so consecutive layers
 * of one run do not pay a wake-up each; the caller likewise spins, then
 * sleeps, while it waits. Static models (dcz_open_static) have no pool:
 * they run on the caller's thread and call nothing that allocates.
 *
 * A build without threads (THREADS=0: cpu/isa.h, DCZ_THREADS) has no pool:
 * dcz_pool_start refuses, dcz_pool_run runs the one part on the caller's
 * thread.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE 1   /* sched_getcpu */
#endif
#include "runtime/model.h"

#if DCZ_THREADS
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

/* Polls of the job counter before a thread sleeps (about 0.2 ms with the
 * pause between polls on a current x86 core). */
#define SPIN 20000

/* A spinning thread's pause between polls i: it leaves the core to the
 * other hardware thread sharing it; past the first YIELD_AFTER polls,
 * every YIELD_EVERY-th poll leaves it to any thread the scheduler has
 * waiting. That matters where the pool has more threads than free cores:
 * a worker spinning through the whole SPIN while the thread holding the
 * job waits for its core cost the job a time slice (tests/unit/test_simd.c,
 * 58,240 jobs on a pool of 3 threads over 2 busy vCPUs of an AMD EPYC:
 * 85-98 s, 8-9 s with yields). Yields from the first polls cost jobs that
 * follow each other closely when threads of another pool spin beside them
 * (OpenBLAS's, idle in dcz bench): LeNet-300-100 at batch 64 on 2 threads
 * 150 -> 239 us with a yield every 64 polls from the start. */
#define YIELD_AFTER 2048
#define YIELD_EVERY 64
static inline void relax(int i)
{
    if (i >= YIELD_AFTER && i % YIELD_EVERY == YIELD_EVERY - 1) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The CPU the calling thread runs on, or -1 where unknown. A worker that
 * finds itself on its caller's CPU sleeps rather than spins, and the
 * caller that finds a worker of the job on its own CPU sleeps too: a
 * thread spinning there holds the CPU from the one it waits for, and the
 * scheduler, which had put both on one of two idle CPUs, moved neither
 * (small models on 2 threads, AMD EPYC Zen 5 with two vCPUs: a run took 5
 * to 10 times its time, every run of a load alike, in about one load of
 * five where layers split often; both threads pinned to one CPU gave the
 * same). Woken, a sleeper goes to an idle CPU. */
static inline int this_cpu(void)
{
#ifdef __linux__
    return sched_getcpu();
#else
    return -1;
#endif
}
/* polls between looks at the CPU */
#define CPU_EVERY 64

struct dcz_pool {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint32_t threads, started;
    uint64_t gen;          /* jobs handed out; read without the lock by spinners */
    uint32_t pending;      /* workers still on the current job */
    int stop;
    dcz_task_fn fn;
    void *ctx;
    const dcz_cpu *view;   /* the CPU as the job's caller sees it (cpu/isa.h) */
    int caller_cpu;        /* the CPU the latest job's caller ran on (this_cpu) */
    struct worker {
        dcz_pool *p;
        uint32_t part;
        int cpu;           /* the CPU it ran its latest part on */
        pthread_t tid;
    } w[];                 /* threads of them */
};

/* whether the calling thread shares the CPU `cpu` (-1: unknown, no) */
static inline int on_cpu(int cpu)
{
    return cpu >= 0 && this_cpu() == cpu;
}

static void *worker(void *argp)
{
    struct worker *w = argp;
    dcz_pool *p = w->p;
    uint64_t seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN && __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) == seen; i++) {
            if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return NULL;
            if (i % CPU_EVERY == CPU_EVERY - 1 && on_cpu(__atomic_load_n(&p->caller_cpu, __ATOMIC_RELAXED))) break;
            relax(i);
        }
        pthread_mutex_lock(&p->mu);
        while (!p->stop && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->gen;
        dcz_task_fn fn = p->fn;
        void *ctx = p->ctx;
        dcz_cpu_view = p->view;   /* the job's parts choose their variants alike */
        pthread_mutex_unlock(&p->mu);
        __atomic_store_n(&w->cpu, this_cpu(), __ATOMIC_RELAXED);
        fn(ctx, w->part);
        if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

uint32_t dcz_threads_online(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > DCZ_MAX_THREADS ? DCZ_MAX_THREADS : (uint32_t)n;
}

dcz_status dcz_pool_start(uint32_t threads, dcz_pool **out)
{
    *out = NULL;
    if (threads < 2 || threads > DCZ_POOL_MAX) return DCZ_ERR_ARG;
    dcz_pool *p = calloc(1, sizeof *p + threads * sizeof p->w[0]);
    if (!p) return DCZ_ERR_NOMEM;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = threads;
    for (uint32_t t = 1; t < threads; t++) {
        p->w[t].p = p;
        p->w[t].part = t;
        p->w[t].cpu = -1;
        if (pthread_create(&p->w[t].tid, NULL, worker, &p->w[t]) != 0) {
            dcz_pool_stop(p);
            return DCZ_ERR_NOMEM;
        }
        p->started = t;
    }
    *out = p;
    return DCZ_OK;
}

uint32_t dcz_pool_threads(const dcz_pool *p)
{
    return p ? p->threads : 1;
}

/* whether a worker ran its latest part on cpu (-1: unknown, no) */
static int shares_cpu(dcz_pool *p, int cpu)
{
    if (cpu < 0) return 0;
    for (uint32_t t = 1; t < p->threads; t++)
        if (__atomic_load_n(&p->w[t].cpu, __ATOMIC_RELAXED) == cpu) return 1;
    return 0;
}

void dcz_pool_run(dcz_pool *p, dcz_task_fn fn, void *ctx)
{
    if (!p) {
        fn(ctx, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->view = dcz_cpu_view;
    const int cpu = this_cpu();
    __atomic_store_n(&p->caller_cpu, cpu, __ATOMIC_RELAXED);
    __atomic_store_n(&p->pending, p->threads - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0);
    for (int i = 0; i < SPIN && __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0; i++) {
        if (i % CPU_EVERY == CPU_EVERY - 1 && shares_cpu(p, cpu)) break;
        relax(i);
    }
    if (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) == 0) return;
    pthread_mutex_lock(&p->mu);
    while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void dcz_pool_stop(dcz_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t t = 1; t <= p->started; t++) pthread_join(p->w[t].tid, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->go);
    pthread_mutex_destroy(&p->mu);
    free(p);
}


#else /* no threads: every job is one part, on the caller's thread */

uint32_t dcz_threads_online(void) { return 1; }

dcz_status dcz_pool_start(uint32_t threads, dcz_pool **out)
{
    (void)threads;
    *out = NULL;
    return DCZ_ERR_UNSUPPORTED;
}

uint32_t dcz_pool_threads(const dcz_pool *p)
{
    (void)p;
    return 1;
}

void dcz_pool_run(dcz_pool *p, dcz_task_fn fn, void *ctx)
{
    (void)p;
    fn(ctx, 0);
}

void dcz_pool_stop(dcz_pool *p) { (void)p; }

#endif

#if DCZ_HEAP   /* the clock of a measured plan, which only the heap loaders make */
#include <time.h>

uint64_t dcz_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif
