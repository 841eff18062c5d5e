/* bench_spmv.c: sparse matrix-vector (batch 1) and matrix-matrix (batch 64)
 * products on the LeNet-300-100 layers and the EIE benchmark layers, in the
 * same run and on the same number of threads:
 *   dense   OpenBLAS sgemv / sgemm on the dense fp32 matrix (the baseline),
 *           OpenBLAS's own threads
 *   csr     a plain CSR fp32 kernel (values + u32 column indices), rows
 *           split over the threads; once per sample at batch 64
 *   ref     libdcz's reference kernels (dcz_spmv_ref, dcz_spmm_ref) on the
 *           execution form (one-byte column steps, 4-bit-codebook indices),
 *           always one thread
 *   dcz     libdcz's kernels as dcz_run calls them: at batch 1 the column
 *           kernel (dcz_spmv_csc) or, on AVX-512, the lane kernel, as
 *           dcz_spmv_pick chooses per call, in chunks taken by the threads
 *           of libdcz's pool; at batch 64 dcz_spmm_pool (the vectorized
 *           variant this CPU runs: each tile of samples transposed once,
 *           rows taken in chunks)
 * A layer with fewer than DCZ_PARALLEL_MIN_ENTRIES weights (the LeNet
 * layers) runs csr and dcz on one thread, as dcz_run does: for it the
 * hand-over to the pool costs more than it saves.
 * Inputs have the layer's activation density (the share of nonzero inputs,
 * as EIE measured it on these layers; half for LeNet), and at batch 1 also
 * none zero, the column kernel's worst case.
 * Prints microseconds (median of repeated runs), the ratios, and the memory
 * floor of dcz: the bytes it must read and write (the compressed form, x
 * and y) at a copy bandwidth measured here, as a share of its time.
 * Timings are reported, never asserted.
 *
 *   bench_spmv [LAYER [THREADS]]   (LAYER: part of a layer's name, or "all")
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "runtime/cpu/f32/dense.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/lanes.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/model.h"
#include "train/train.h"

#define REPS 31   /* batch 1 */
#define REPS_MM 7 /* batch 64: seconds per call for the slowest kernels */
#define BATCH 64

typedef struct csr {
    uint32_t rows;
    uint32_t *ptr, *col;
    float *val;
} csr;

static void csr_rows(const csr *m, uint32_t r0, uint32_t r1, const float *x, float *y)
{
    for (uint32_t r = r0; r < r1; r++) {
        float acc = 0;
        for (uint32_t e = m->ptr[r]; e < m->ptr[r + 1]; e++) acc += m->val[e] * x[m->col[e]];
        y[r] = acc;
    }
}

/* One call of the csr kernel over the threads of a pool: part t runs its
 * share of the rows. */
typedef struct csr_job {
    const csr *c;
    uint32_t cols, threads;
    const float *x;
    float *y;
    size_t batch;
} csr_job;

/* csr: y (batch, rows), sample by sample */
static void csr_part(void *ctx, uint32_t t)
{
    const csr_job *j = ctx;
    uint32_t r0, r1;
    dcz_part_range(j->c->rows, t, j->threads, &r0, &r1);
    for (size_t b = 0; b < j->batch; b++)
        csr_rows(j->c, r0, r1, j->x + b * j->cols, j->y + b * j->c->rows);
}

typedef struct shape {
    const char *name;
    uint32_t rows, cols;
    double density, act;
} shape;

/* median seconds of one call over reps runs, after one warm-up call */
#define TIME(reps, stmt, out) do { \
    double t_[REPS]; \
    stmt; \
    for (int r_ = 0; r_ < (reps); r_++) { double a_ = bench_now(); stmt; t_[r_] = bench_now() - a_; } \
    qsort(t_, (reps), sizeof *t_, bench_cmp_double); \
    out = t_[(reps) / 2]; \
} while (0)

/* tk[0], tk[1]: batch 1 by the column and the lane kernel (0: not run) */
static void row(const char *name, const char *shp, double density, double act, int batch,
                double td, double tc, double tr, const double *tk, const char *pick, double tz,
                double bytes, double bw)
{
    char k[2][16];
    for (int i = 0; i < 2; i++) {
        if (tk[i] > 0) snprintf(k[i], sizeof k[i], "%.1f", tk[i] * 1e6);
        else snprintf(k[i], sizeof k[i], "-");
    }
    printf("%-10s %11s %6.0f%% %5.0f%% %5d %10.1f %10.1f %10.1f %9s %9s %-7s %10.1f %8.2fx %8.2fx "
           "%8.2fx %7.1f%%\n",
           name, shp, density * 100, act * 100, batch, td * 1e6, tc * 1e6, tr * 1e6, k[0], k[1],
           pick, tz * 1e6, tr / tz, td / tz, tc / tz, bytes / (bw / 2) / tz * 100);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 && strcmp(argv[1], "all") != 0 ? argv[1] : NULL;
    const int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > DCZ_MAX_THREADS) return 2;
    openblas_set_num_threads(threads);
    dcz_pool *pool = NULL;
    if (threads > 1 && dcz_pool_start((uint32_t)threads, &pool) != DCZ_OK) return 1;
    /* copy bandwidth, the physical floor's denominator */
    const double bw = bench_copy_bandwidth((size_t)128 << 20);
    if (bw <= 0) return 1;
    printf("copy bandwidth %.1f GB/s (read + write), one thread; kernels on %d thread(s)\n\n",
           bw / 1e9, threads);

    /* activation density: the share of nonzero inputs, as EIE measured
     * them on these layers; LeNet's layers see about half zeros too */
    const shape shapes[] = {
        { "lenet-fc1", 300, 784, 0.08, 0.50 }, { "lenet-fc2", 100, 300, 0.08, 0.50 },
        { "lenet-fc3", 10, 100, 0.26, 0.50 },  { "alex-6", 4096, 9216, 0.09, 0.351 },
        { "alex-7", 4096, 4096, 0.09, 0.353 }, { "alex-8", 1000, 4096, 0.25, 0.375 },
        { "vgg-6", 4096, 25088, 0.04, 0.183 }, { "vgg-7", 4096, 4096, 0.04, 0.375 },
        { "vgg-8", 1000, 4096, 0.23, 0.411 },
    };
    const char *isa = dcz_isa_supported(DCZ_ISA_AVX2)   ? "avx2"
                      : dcz_isa_supported(DCZ_ISA_NEON) ? "neon"
                                                        : "none (the references)";
    /* the lane form the loader builds on this CPU: 16 rows (AVX-512), 8
     * (AVX2 and FMA) or none */
    const uint32_t lanes = dcz_lanes_rows();
    printf("dcz spmm kernels: %s; batch 1: the column kernel%s, dcz_spmv_pick's choice per call\n\n", isa,
           lanes == 16 ? " and the lane kernel (avx512)"
           : lanes == 8 ? " and the 8-row lane kernel (avx2)" : " (no AVX2: no lane kernel)");
    printf("%-10s %11s %7s %6s %5s %10s %10s %10s %9s %9s %-7s %10s %9s %9s %9s %8s\n", "layer",
           "shape", "density", "act", "batch", "dense us", "csr us", "ref us", "csc us", "lanes us",
           "picks", "dcz us", "vs ref", "vs dense", "vs csr", "floor %");
    dcz_rng rng;
    dcz_rng_seed(&rng, 1);
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const shape *s = &shapes[si];
        if (only && strstr(s->name, only) == NULL) continue;
        const size_t n = (size_t)s->rows * s->cols;
        float *w = calloc(n, sizeof *w), *x = malloc(BATCH * s->cols * sizeof *x);
        float *y = malloc(BATCH * s->rows * sizeof *y);
        const uint64_t sf = dcz_spmm_scratch_floats(s->rows, s->cols);
        float *scratch = malloc(sf * threads * sizeof *scratch);
        uint8_t *keep = calloc(n, 1);
        float cb[16];
        for (int i = 0; i < 16; i++) cb[i] = dcz_rng_uniform(&rng) - 0.5f;
        uint32_t nnz = 0;
        for (size_t i = 0; i < n; i++)
            if (dcz_rng_uniform(&rng) < s->density) { keep[i] = 1; nnz++; }
        /* execution form */
        uint64_t cap = dcz_sparse_max_entries(nnz, s->rows, s->cols);
        uint32_t *row_ptr = malloc((s->rows + 1) * sizeof *row_ptr);
        uint8_t *step = malloc(cap), *idx = malloc(cap), *src = malloc(nnz);
        csr c = { s->rows, malloc((s->rows + 1) * 4), malloc((size_t)nnz * 4), malloc((size_t)nnz * 4) };
        dcz_sparse_builder bld;
        memset(&bld, 0, sizeof bld);
        bld.rows = s->rows; bld.cols = s->cols; bld.row_ptr = row_ptr; bld.step = step;
        bld.cap = (uint32_t)cap; bld.idx_dst = idx; bld.idx_src = src;
        row_ptr[0] = 0;
        uint32_t k = 0;
        c.ptr[0] = 0;
        for (uint32_t r = 0; r < s->rows; r++) {
            for (uint32_t col = 0; col < s->cols; col++) {
                size_t i = (size_t)r * s->cols + col;
                if (!keep[i]) continue;
                src[k] = (uint8_t)dcz_rng_below(&rng, 16);
                w[i] = cb[src[k]];
                c.col[k] = col;
                c.val[k] = w[i];
                dcz_sparse_builder_add(&bld, k, i);
                k++;
            }
            c.ptr[r + 1] = k;
        }
        dcz_sparse_builder_finish(&bld);
        dcz_sparse sp = { .rows = s->rows, .cols = s->cols, .entries = bld.entries, .row_ptr = row_ptr,
                          .step = step, .idx = idx, .codebook = cb, .k = 16 };
        /* as the loader and run.c do: a layer too small to split runs on
         * the caller's thread alone, its column form in one block */
        const uint32_t lthreads = nnz >= DCZ_PARALLEL_MIN_ENTRIES ? (uint32_t)threads : 1;
        dcz_pool *lpool = lthreads > 1 ? pool : NULL;
        void *cols_mem = malloc(dcz_sparse_columns_bytes(s->rows, s->cols, nnz, 16, lthreads));
        dcz_sparse_build_columns(&sp, lthreads, cols_mem);
        void *lanes_mem = NULL;
        if (lanes) {
            lanes_mem = malloc(dcz_lanes_bytes(lanes, s->rows, s->cols, nnz, 16));
            dcz_lanes_build(&sp, lanes, nnz, lanes_mem);
        }
        float *panels = malloc((dcz_lanes_scratch_floats(lanes, s->cols, 16) + 1) * sizeof(float));
        csr_job j = { &c, s->cols, lthreads, x, y, 1 };
        double td, tc, tr, tz;
        char shp[32];
        snprintf(shp, sizeof shp, "%ux%u", s->rows, s->cols);
        /* the row form: a step and an index byte per entry, row_ptr */
        const double form = (double)bld.entries * 2 + (s->rows + 1) * 4.0;
        for (int pass = 0; pass < 3; pass++) {
            /* batch 1 at the layer's activation density, then with no zero
             * input (the column kernel's worst case), then batch 64 */
            const double act = pass == 1 ? 1.0 : s->act;
            const int batch = pass == 2 ? BATCH : 1;
            for (uint32_t i = 0; i < BATCH * s->cols; i++)
                x[i] = dcz_rng_uniform(&rng) < act ? dcz_rng_uniform(&rng) + 0.01f : 0.0f;
            if (batch == 1) {
                TIME(REPS, cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)s->rows, (int)s->cols, 1.0f, w,
                                       (int)s->cols, x, 1, 0.0f, y, 1), td);
                j.batch = 1;
                TIME(REPS, dcz_pool_run(lpool, csr_part, &j), tc);
                TIME(REPS, dcz_spmv_ref(&sp, NULL, x, y), tr);
                /* each kernel, then dcz_spmv_pick's choice with the choosing */
                double tk[2] = { 0, 0 };
                TIME(REPS, dcz_spmv_pool(lpool, &sp, DCZ_SPMV_COLUMNS, NULL, NULL, x, y), tk[0]);
                /* the lane kernel with its copy of x into panels */
                if (sp.lgroups)
                    TIME(REPS, dcz_spmv_pool(lpool, &sp, DCZ_SPMV_LANES, NULL, NULL,
                                             dcz_spmv_input(&sp, DCZ_SPMV_LANES, x, panels), y),
                         tk[1]);
                const dcz_spmv_kind pick = dcz_spmv_pick(&sp, x);
                dcz_spmv_kind kz = pick;
                TIME(REPS, (kz = dcz_spmv_pick(&sp, x),
                            dcz_spmv_pool(lpool, &sp, kz, NULL, NULL, dcz_spmv_input(&sp, kz, x, panels), y)),
                     tz);
                /* what the column kernel reads: col_ptr, and the packed
                 * entries of the columns of nonzero inputs */
                double live = 0;
                for (uint32_t b = 0; b < sp.cblocks; b++) {
                    const uint32_t *p = sp.col_ptr + (size_t)b * (s->cols + 1);
                    for (uint32_t jc = 0; jc < s->cols; jc++)
                        if (x[jc] != 0.0f) live += p[jc + 1] - p[jc];
                }
                /* the lane kernel reads its slots and bases whatever x is */
                const double lane_bytes = dcz_lanes_steps(&sp) *
                    (lanes == 8 ? DCZ_LANE8_ROWS * 5 + 2.0 : DCZ_LANE_SLOTS * 2 + 4.0);
                const double csc_bytes = (s->cols + 1) * 4.0 + live * (sp.cent16 ? 2 : 4);
                row(s->name, shp, s->density, act, 1, td, tc, tr, tk,
                    pick == DCZ_SPMV_LANES ? "lanes" : "columns", tz,
                    (pick == DCZ_SPMV_LANES ? lane_bytes : csc_bytes) + (s->cols + s->rows) * 4.0, bw);
                continue;
            }
            TIME(REPS_MM, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BATCH, (int)s->rows,
                                      (int)s->cols, 1.0f, x, (int)s->cols, w, (int)s->cols, 0.0f, y,
                                      (int)s->rows), td);
            j.batch = BATCH;
            TIME(REPS_MM, dcz_pool_run(lpool, csr_part, &j), tc);
            TIME(REPS_MM, dcz_spmm_ref(&sp, NULL, x, BATCH, y), tr);
            TIME(REPS_MM, dcz_spmm_pool(lpool, &sp, NULL, x, BATCH, y, scratch, sf), tz);
            row(s->name, shp, s->density, act, BATCH, td, tc, tr, (const double[2]){ 0, 0 }, "spmm", tz,
                form * ((BATCH + DCZ_SPMM_TILE - 1) / DCZ_SPMM_TILE) + BATCH * (s->cols + s->rows) * 4.0,
                bw);
        }
        free(w); free(x); free(scratch); free(y); free(keep); free(row_ptr); free(step); free(idx); free(src);
        free(c.ptr); free(c.col); free(c.val); free(cols_mem); free(lanes_mem);
        free(panels);
    }
    /* dense fp32 layers: libdcz's own dense kernels (no BLAS in libdcz)
     * against OpenBLAS on the same shapes, one thread each: by rows
     * (dcz_dense_f32, on the weights as the file holds them) and the
     * product dcz_run takes where the CPU has a vector variant of it
     * (dcz_gemm_f32 on the weights transposed at load, rows padded to
     * DCZ_GEMM_PAD, on a cache line as the loader lays them) */
    const char *dv = dcz_dense_f32_variant(), *gv = dcz_gemm_f32_variant();
    printf("\ndense fp32 layers: dcz_dense_f32 (%s) and dcz_gemm_f32 on the transposed weights (%s, what "
           "dcz_run takes%s) against OpenBLAS sgemv / sgemm, one thread\n",
           dv ? dv : "the reference", gv ? gv : "the reference", gv ? "" : " on no CPU without it");
    printf("%-10s %11s %5s %12s %10s %10s %10s %8s\n", "layer", "shape", "batch", "openblas us", "ref us",
           "rows us", "gemm us", "vs blas");
    openblas_set_num_threads(1);
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const shape *s = &shapes[si];
        if (only && strstr(s->name, only) == NULL) continue;
        const size_t n = (size_t)s->rows * s->cols, ldb = dcz_gemm_ldb(s->rows);
        float *w = malloc(n * sizeof *w), *x = malloc(BATCH * s->cols * sizeof *x);
        float *y = malloc(BATCH * s->rows * sizeof *y);
        float *wt = aligned_alloc(64, ((size_t)s->cols * ldb * sizeof *wt + 63) & ~(size_t)63);
        if (!w || !x || !y || !wt) {
            fprintf(stderr, "bench_spmv: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < n; i++) w[i] = dcz_rng_uniform(&rng) - 0.5f;
        for (size_t i = 0; i < BATCH * s->cols; i++) x[i] = dcz_rng_uniform(&rng);
        for (size_t c = 0; c < s->cols; c++)
            for (size_t r = 0; r < ldb; r++) wt[c * ldb + r] = r < s->rows ? w[r * s->cols + c] : 0.0f;
        char shp[32];
        snprintf(shp, sizeof shp, "%ux%u", s->rows, s->cols);
        for (int batch = 1; batch <= BATCH; batch += BATCH - 1) {
            double tb, tr, tz, tg;
            const int reps = batch == 1 ? REPS : REPS_MM;
            if (batch == 1)
                TIME(reps, cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)s->rows, (int)s->cols, 1.0f, w,
                                       (int)s->cols, x, 1, 0.0f, y, 1), tb);
            else
                TIME(reps, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, (int)s->rows, (int)s->cols,
                                       1.0f, x, (int)s->cols, w, (int)s->cols, 0.0f, y, (int)s->rows), tb);
            tr = 0;   /* the scalar reference at batch 1 only: at 64 it takes seconds a call */
            if (batch == 1) TIME(reps, dcz_dense_f32_ref(w, NULL, x, 1, s->cols, s->rows, y), tr);
            TIME(reps, dcz_dense_f32(w, NULL, x, (size_t)batch, s->cols, s->rows, y), tz);
            /* without a vector variant it is the scalar reference: batch 1 only */
            tg = 0;
            if (gv || batch == 1)
                TIME(reps, dcz_gemm_f32((size_t)batch, s->rows, s->cols, x, s->cols, wt, ldb, NULL, NULL, y,
                                        s->rows), tg);
            char ref[32] = "-", gemm[32] = "-";
            if (tr > 0) snprintf(ref, sizeof ref, "%.1f", tr * 1e6);
            if (tg > 0) snprintf(gemm, sizeof gemm, "%.1f", tg * 1e6);
            printf("%-10s %11s %5d %12.1f %10s %10.1f %10s %7.2fx\n", s->name, shp, batch, tb * 1e6, ref,
                   tz * 1e6, gemm, tb / (gv ? tg : tz));
        }
        free(w); free(x); free(y); free(wt);
    }
    printf("\n(ratios > 1: dcz faster. floor %%: the time moving its bytes takes at the copy\n"
           " bandwidth measured above, as a share of the time it took; at batch 64 dcz_spmm reads\n"
           " the compressed form once per tile of %d samples. 100%% would be bound by memory\n"
           " bandwidth; ref: always one thread)\n", DCZ_SPMM_TILE);
    dcz_pool_stop(pool);
    return 0;
}
