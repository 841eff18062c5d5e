/* par.c: the training engine's threads.
 *
 * One pool runs all of the trainer's parallel work: the runtime's dcz_pool,
 * started on first use with the thread count dcz_train_set_threads gave
 * (every online core until it is called). dcz_train_par splits a range of
 * independent items (channels, samples, elements) into contiguous parts,
 * one per thread, so a result never depends on the thread count: each item
 * is computed by the same code in the same order whichever thread owns it.
 * dcz_train_sgemm cuts a product's output into calls whose shapes depend on
 * the product alone (OpenBLAS chooses its kernel by a call's shape, and its
 * small-matrix kernels sum in another order than its blocked ones), and
 * shares those calls among the threads.
 *
 * OpenBLAS's own threads are not used (the library is set to one thread):
 * after a product they spin for some milliseconds, and on a core whose
 * hardware threads are the machine's processors that spinning takes the
 * core from the loops between the products (im2col, batch normalization,
 * activations), which then ran on one thread while the other spun: one
 * training epoch of the conv-heavy CNN at 2 threads spent a quarter of its
 * processor time in OpenBLAS's sched_yield.
 *
 * The pool serves one job at a time: a call made while it is busy (from
 * another thread of the program, or from inside a job) runs on the caller's
 * thread alone.
 */
#include <cblas.h>
#include <pthread.h>
#include <unistd.h>

#include "runtime/threads.h"
#include "train/internal.h"

static pthread_mutex_t state = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static int wanted;          /* threads asked for; 0: every online core */
static int started;         /* pool matches wanted (it may be NULL: one thread) */
static dcz_pool *pool;

void dcz_train_set_threads(int threads)
{
    if (threads <= 0) return;
    pthread_mutex_lock(&state);
    if (threads != wanted || !started) {
        pthread_mutex_lock(&busy);
        dcz_pool_stop(pool);
        pool = NULL;
        started = 0;
        wanted = threads;
        pthread_mutex_unlock(&busy);
    }
    pthread_mutex_unlock(&state);
}

/* The thread count asked for, or every online core; called with state
 * locked. */
static uint32_t threads_wanted(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t n = wanted > 0 ? (uint32_t)wanted : online > 0 ? (uint32_t)online : 1;
    return n < DCZ_POOL_MAX ? n : DCZ_POOL_MAX;
}

/* OpenBLAS's shutdown of its server threads (its fork handler's, not in
 * cblas.h; weak: a build of OpenBLAS without threads has none). They
 * start as the program loads and wait for work spinning on sched_yield for
 * about 2^28 cycles: a process that runs a model on threads at once (dcz
 * bench, dcz run) found its workers sharing a CPU with its main thread,
 * which the scheduler left so while the other CPU spun (small models on 2
 * threads: every run 2 to 7 times as long in some loads). */
extern int blas_thread_shutdown_(void) __attribute__((weak));

void dcz_train_blas_one_thread(void)
{
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

int dcz_train_threads(void)
{
    pthread_mutex_lock(&state);
    uint32_t n = threads_wanted();
    pthread_mutex_unlock(&state);
    return (int)n;
}

/* The pool, started when first needed; NULL for one thread or when threads
 * cannot be started (the work then runs on the caller's thread). */
static dcz_pool *get_pool(void)
{
    pthread_mutex_lock(&state);
    if (!started) {
        uint32_t n = threads_wanted();
        if (n < 2 || dcz_pool_start(n, &pool) != DCZ_OK) pool = NULL;
        dcz_train_blas_one_thread();
        started = 1;
    }
    dcz_pool *p = pool;
    pthread_mutex_unlock(&state);
    return p;
}

typedef struct par_job {
    size_t n;
    uint32_t parts;
    dcz_range_fn fn;
    void *ctx;
} par_job;

static void run_part(void *ctx, uint32_t t)
{
    const par_job *j = ctx;
    if (t >= j->parts) return;
    size_t lo = j->n / j->parts * t + (t < j->n % j->parts ? t : j->n % j->parts);
    size_t hi = lo + j->n / j->parts + (t < j->n % j->parts);
    j->fn(j->ctx, lo, hi);
}

void dcz_train_par(size_t n, size_t grain, dcz_range_fn fn, void *ctx)
{
    if (n == 0) return;
    size_t most = grain ? n / grain : n;
    dcz_pool *p = get_pool();   /* also sets OpenBLAS to one thread */
    if (most < 2 || !p || pthread_mutex_trylock(&busy) != 0) {
        fn(ctx, 0, n);
        return;
    }
    uint32_t threads = dcz_pool_threads(p);
    par_job j = { n, most < threads ? (uint32_t)most : threads, fn, ctx };
    dcz_pool_run(p, run_part, &j);
    pthread_mutex_unlock(&busy);
}

/* MACs of a product part below which a second thread costs more than it
 * saves. */
#define GEMM_GRAIN_MACS ((size_t)1 << 18)
/* Columns of a column part: a multiple of every vector width. */
#define GEMM_COL_STEP 16
/* A product is cut into as many calls as it has grains, at most
 * GEMM_CALLS, or one call for every GEMM_CALL_MACS where that is more:
 * every call packs its shared operand again and runs smaller, which the
 * small products of the trainer's dense layers feel, while a large
 * product keeps a call for every thread of a large machine. */
#define GEMM_CALLS 8
#define GEMM_CALL_MACS ((size_t)1 << 24)

typedef struct gemm_job {
    int ta, tb, by_rows;
    int M, N, K;
    float alpha, beta;
    const float *A, *B;
    int lda, ldb, ldc;
    float *C;
    size_t unit, units, calls;   /* rows or columns of C a unit; units, and calls, in C */
} gemm_job;

/* Calls lo..hi of the product, each one OpenBLAS call: call c takes units
 * units c / calls up to units (c + 1) / calls. */
static void gemm_part(void *ctx, size_t lo, size_t hi)
{
    const gemm_job *j = ctx;
    const size_t total = j->by_rows ? (size_t)j->M : (size_t)j->N;
    const enum CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = j->tb ? CblasTrans : CblasNoTrans;
    for (size_t c = lo; c < hi; c++) {
        const size_t a = j->units * c / j->calls * j->unit, end = j->units * (c + 1) / j->calls * j->unit;
        const size_t b = end < total ? end : total;
        if (j->by_rows)   /* rows a..b of C: rows of op(A) */
            cblas_sgemm(CblasRowMajor, ta, tb, (int)(b - a), j->N, j->K, j->alpha,
                        j->A + (j->ta ? a : a * (size_t)j->lda), j->lda, j->B, j->ldb, j->beta,
                        j->C + a * (size_t)j->ldc, j->ldc);
        else              /* columns a..b of C: columns of op(B) */
            cblas_sgemm(CblasRowMajor, ta, tb, j->M, (int)(b - a), j->K, j->alpha, j->A, j->lda,
                        j->B + (j->tb ? a * (size_t)j->ldb : a), j->ldb, j->beta, j->C + a, j->ldc);
    }
}

void dcz_train_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    /* the longer side of C cut evenly into calls (columns in steps that
     * keep vectors whole) whose count follows from the shape alone; the
     * threads share the calls */
    const int by_rows = M >= N;
    const size_t unit = by_rows ? 1 : GEMM_COL_STEP, side = by_rows ? (size_t)M : (size_t)N;
    const size_t units = (side + unit - 1) / unit;
    const size_t macs = (size_t)(K > 0 ? K : 1) * (size_t)M * (size_t)N;
    size_t calls = macs / GEMM_GRAIN_MACS;
    if (calls > GEMM_CALLS) calls = GEMM_CALLS > macs / GEMM_CALL_MACS ? GEMM_CALLS : macs / GEMM_CALL_MACS;
    if (calls > units) calls = units;
    if (calls < 1) calls = 1;
    gemm_job j = { ta, tb, by_rows, M, N, K, alpha, beta, A, B, lda, ldb, ldc, C, unit, units, calls };
    dcz_train_par(calls, 1, gemm_part, &j);
}
