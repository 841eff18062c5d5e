/* test_simd.c: the vectorized sparse kernels (runtime/kernels_simd.c)
 * against the references.
 *
 * Every variant this machine runs is called directly (x86: __avx2 and
 * __avx512 where the CPU has them; aarch64: __neon), and the dispatching
 * dcz_spmv / dcz_spmm too, on random matrices in the execution form
 * (stored weights, inputs and biases never zero) over a grid: rows 0, 1,
 * 7, 8, 9, 15, 16, 17, 31, 33 and columns 0, 1, 7, 8, 9, 15, 16, 17, 31,
 * 33, 300, 1000 (plus 300 x 300 and 64 x 4000), densities 0, 0.01 (fillers
 * on wide rows), 0.5 and 1, codebooks of 2, 16, 32 and 256 entries (each
 * a different weight path: register permute, one or two registers, or a
 * gather) and fp32 values, batch 0, 1, 2, 7, 16, 64, 65, with and without
 * bias. Each output must agree with the reference within 1e-5 of the sum
 * of its |w x| terms (plus |bias|), as float sums run in another order.
 * Each sample of a spmm batch must equal the same family's spmv on that
 * sample bit for bit (a sample's result does not depend on its batch), and
 * nothing past y is written. Declines: spmm without scratch, and (x86)
 * more than 2^31 - 1 columns.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"
#include "tests/check.h"
#define TEST_RNG_SEED 0x5eed
#include "tests/unit/test_util.h"


/* a sparse matrix and its twin of absolute weights (for the |w x| sums) */
typedef struct mat {
    dcz_sparse sp, abs;
    uint32_t *row_ptr;
    uint8_t *step, *idx, *src;
    float *val, *aval, *cb, *acb;
    uint32_t fillers;
} mat;

static int make_mat(mat *m, uint32_t rows, uint32_t cols, double density, uint32_t k)
{
    memset(m, 0, sizeof *m);
    const size_t n = (size_t)rows * cols;
    uint8_t *keep = malloc(n ? n : 1);
    uint32_t nnz = 0;
    for (size_t i = 0; i < n; i++) {
        keep[i] = density >= 1 || (density > 0 && (rnd() % 10000) < density * 10000);
        nnz += keep[i];
    }
    const uint64_t cap = dcz_sparse_max_entries(nnz, rows, cols);
    m->row_ptr = malloc(((size_t)rows + 1) * sizeof(uint32_t));
    m->step = malloc(cap ? cap : 1);
    m->src = malloc(nnz ? nnz : 1);
    m->cb = malloc((k ? k : 1) * sizeof(float));
    m->acb = malloc((k ? k : 1) * sizeof(float));
    for (uint32_t i = 0; i < k; i++) { m->cb[i] = nonzero(); m->acb[i] = fabsf(m->cb[i]); }
    uint8_t *vsrc = malloc(nnz ? (size_t)nnz * 4 : 4);
    if (k) {
        m->idx = malloc(cap ? cap : 1);
    } else {
        m->val = malloc((cap ? cap : 1) * sizeof(float));
        m->aval = malloc((cap ? cap : 1) * sizeof(float));
    }
    dcz_sparse_builder b;
    memset(&b, 0, sizeof b);
    b.rows = rows; b.cols = cols; b.row_ptr = m->row_ptr; b.step = m->step; b.cap = (uint32_t)cap;
    b.idx_dst = m->idx; b.idx_src = m->src; b.val_dst = m->val; b.val_src = vsrc;
    m->row_ptr[0] = 0;
    uint32_t w = 0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i]) continue;
        if (k) m->src[w] = (uint8_t)(rnd() % k);
        else dcz_put32(vsrc + (size_t)w * 4, dcz_f32_bits(nonzero()));
        ok &= dcz_sparse_builder_add(&b, w++, i) == DCZ_OK;
    }
    dcz_sparse_builder_finish(&b);
    for (uint32_t e = 0; e < b.entries; e++) {
        m->fillers += m->step[e] == DCZ_STEP_FILLER;
        if (m->val) m->aval[e] = fabsf(m->val[e]);
    }
    m->sp = (dcz_sparse){ rows, cols, b.entries, m->row_ptr, m->step, m->idx, m->val, m->cb, k };
    m->abs = m->sp;
    m->abs.val = m->aval;
    m->abs.codebook = m->acb;
    free(keep);
    free(vsrc);
    return ok;
}

static void free_mat(mat *m)
{
    free(m->row_ptr); free(m->step); free(m->idx); free(m->src);
    free(m->val); free(m->aval); free(m->cb); free(m->acb);
}

/* A family of kernels: spmv and spmm that sum in the same order. */
typedef int (*spmv_fn)(const dcz_sparse *, const float *, const float *, float *);
typedef int (*spmm_fn)(const dcz_sparse *, const float *, const float *, size_t, float *, float *);
typedef struct family {
    const char *name;
    dcz_isa isa;
    spmv_fn spmv;
    spmm_fn spmm;
} family;

static int spmv_dispatch(const dcz_sparse *s, const float *bias, const float *x, float *y)
{
    dcz_spmv(s, bias, x, y);
    return 1;
}
static int spmm_dispatch(const dcz_sparse *s, const float *bias, const float *x, size_t batch,
                         float *y, float *scratch)
{
    dcz_spmm(s, bias, x, batch, y, scratch);
    return 1;
}
#if defined(__aarch64__) && defined(__ARM_NEON)
static int spmv_reference(const dcz_sparse *s, const float *bias, const float *x, float *y)
{
    dcz_spmv_ref(s, bias, x, y);
    return 1;
}
#endif

static const family families[] = {
    { "dispatch", DCZ_ISA_REF, spmv_dispatch, spmm_dispatch },
#if defined(__x86_64__) || defined(__i386__)
    { "avx2", DCZ_ISA_AVX2, dcz_spmv__avx2, dcz_spmm__avx2 },
    { "avx512", DCZ_ISA_AVX512, dcz_spmv__avx512, dcz_spmm__avx512 },
#elif defined(__aarch64__) && defined(__ARM_NEON)
    { "neon", DCZ_ISA_NEON, spmv_reference, dcz_spmm__neon },
#endif
};
#define NFAM (sizeof families / sizeof *families)

#define GUARD 16
static const float canary = 12345.0f;

typedef struct tally {
    size_t cases[NFAM], outputs[NFAM], fillers;
} tally;

/* Mismatches of got (batch, rows) against ref beyond 1e-5 of mag. */
static size_t mismatches(const char *what, const mat *m, size_t batch, int bias,
                         const float *got, const float *ref, const float *mag)
{
    size_t bad = 0;
    for (size_t i = 0; i < batch * m->sp.rows; i++)
        if (!(fabsf(got[i] - ref[i]) <= 1e-5f * mag[i] + 1e-30f)) {
            if (bad++ < 3)
                fprintf(stderr, "  %s %ux%u k %u batch %zu%s: y[%zu][%zu] = %.9g, reference %.9g\n",
                        what, m->sp.rows, m->sp.cols, m->sp.k, batch, bias ? " bias" : "",
                        i / m->sp.rows, i % m->sp.rows, got[i], ref[i]);
        }
    return bad;
}

static void check_case(const mat *m, tally *t)
{
    static const size_t batches[] = { 0, 1, 2, 7, 16, 64, 65 };
    const size_t maxb = 65;
    const uint32_t rows = m->sp.rows, cols = m->sp.cols;
    float *x = malloc((maxb * cols + 1) * sizeof(float)), *ax = malloc((maxb * cols + 1) * sizeof(float));
    float *bias = malloc((rows + 1) * sizeof(float)), *abias = malloc((rows + 1) * sizeof(float));
    float *ref = malloc((maxb * rows + 1) * sizeof(float)), *mag = malloc((maxb * rows + 1) * sizeof(float));
    float *y = malloc((maxb * rows + GUARD) * sizeof(float)), *y1 = malloc((rows + 1) * sizeof(float));
    float *scratch = malloc((dcz_spmm_scratch_floats(cols) + 1) * sizeof(float));
    for (size_t i = 0; i < maxb * cols; i++) { x[i] = nonzero(); ax[i] = fabsf(x[i]); }
    for (uint32_t i = 0; i < rows; i++) { bias[i] = nonzero(); abias[i] = fabsf(bias[i]); }
    t->fillers += m->fillers;
    for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++)
        for (int hb = 0; hb < 2; hb++) {
            const size_t batch = batches[bi];
            const float *bv = hb ? bias : NULL;
            dcz_spmm_ref(&m->sp, bv, x, batch, ref);
            dcz_spmm_ref(&m->abs, hb ? abias : NULL, ax, batch, mag);
            for (size_t f = 0; f < NFAM; f++) {
                const family *fa = &families[f];
                if (!dcz_isa_supported(fa->isa)) continue;
                char what[64];
                for (size_t i = 0; i < maxb * rows + GUARD; i++) y[i] = canary;
                int done = fa->spmm(&m->sp, bv, x, batch, y, scratch);
                snprintf(what, sizeof what, "%s spmm", fa->name);
                CHECK(done, "%s declined %ux%u", what, rows, cols);
                CHECK(mismatches(what, m, batch, hb, y, ref, mag) == 0, "%s %ux%u k %u batch %zu",
                      what, rows, cols, m->sp.k, batch);
                size_t past = 0;
                for (size_t i = batch * rows; i < maxb * rows + GUARD; i++) past += y[i] != canary;
                CHECK(past == 0, "%s %ux%u batch %zu: %zu floats written past y", what, rows,
                      cols, batch, past);
                /* each sample equals the family's spmv on it, bit for bit */
                size_t differ = 0;
                for (size_t b = 0; b < batch; b++) {
                    if (rows) y1[rows - 1] = canary;
                    CHECK(fa->spmv(&m->sp, bv, x + b * cols, y1), "%s spmv declined", fa->name);
                    if (memcmp(y1, y + b * rows, rows * sizeof(float)) != 0) {
                        if (differ++ == 0)
                            fprintf(stderr, "  %s %ux%u k %u batch %zu: sample %zu spmv != spmm\n",
                                    fa->name, rows, cols, m->sp.k, batch, b);
                    }
                    if (b == 0) {
                        snprintf(what, sizeof what, "%s spmv", fa->name);
                        CHECK(mismatches(what, m, 1, hb, y1, ref, mag) == 0, "%s %ux%u", what,
                              rows, cols);
                    }
                }
                CHECK(differ == 0, "%s %ux%u batch %zu: %zu samples of spmm differ from spmv",
                      fa->name, rows, cols, batch, differ);
                t->cases[f]++;
                t->outputs[f] += batch * rows;
            }
        }
    free(x); free(ax); free(bias); free(abias); free(ref); free(mag); free(y); free(y1);
    free(scratch);
}

static void test_grid(void)
{
    static const uint32_t rows[] = { 0, 1, 7, 8, 9, 15, 16, 17, 31, 33 };
    static const uint32_t cols[] = { 0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 300, 1000 };
    static const uint32_t extra[][2] = { { 300, 300 }, { 64, 4000 } };
    static const double dens[] = { 0.0, 0.01, 0.5, 1.0 };
    static const uint32_t ks[] = { 2, 16, 32, 256, 0 };
    tally t;
    memset(&t, 0, sizeof t);
    const size_t nshape = sizeof rows / sizeof *rows * (sizeof cols / sizeof *cols) + 2;
    for (size_t si = 0; si < nshape; si++) {
        const size_t nc = sizeof cols / sizeof *cols, base = sizeof rows / sizeof *rows * nc;
        const uint32_t r = si < base ? rows[si / nc] : extra[si - base][0];
        const uint32_t c = si < base ? cols[si % nc] : extra[si - base][1];
        for (size_t di = 0; di < sizeof dens / sizeof *dens; di++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                mat m;
                REQUIRE(make_mat(&m, r, c, dens[di], ks[ki]), "build %ux%u", r, c);
                check_case(&m, &t);
                free_mat(&m);
            }
    }
    for (size_t f = 0; f < NFAM; f++) {
        if (dcz_isa_supported(families[f].isa))
            printf("     %-8s %zu cases, %zu outputs\n", families[f].name, t.cases[f], t.outputs[f]);
        else
            printf("     %-8s SKIP: this CPU lacks it\n", families[f].name);
    }
    CHECK(t.fillers > 100, "only %zu fillers in the grid", t.fillers);
    CHECK(t.cases[0] > 5000, "only %zu cases", t.cases[0]);
}

/* Variants decline what they cannot run, writing nothing; the dispatching
 * kernels then run the references. */
static void test_declines(void)
{
    mat m;
    REQUIRE(make_mat(&m, 9, 40, 0.5, 16), "build");
    float x[40], y[9], yr[9];
    for (int i = 0; i < 40; i++) x[i] = nonzero();
    for (size_t f = 1; f < NFAM; f++) {
        if (!dcz_isa_supported(families[f].isa)) continue;
        for (int i = 0; i < 9; i++) y[i] = canary;
        CHECK(families[f].spmm(&m.sp, NULL, x, 1, y, NULL) == 0 && y[0] == canary,
              "%s spmm without scratch", families[f].name);
    }
    dcz_spmm(&m.sp, NULL, x, 1, y, NULL);
    dcz_spmm_ref(&m.sp, NULL, x, 1, yr);
    CHECK(memcmp(y, yr, sizeof y) == 0, "dcz_spmm without scratch is the reference");
#if defined(__x86_64__) || defined(__i386__)
    /* columns past a signed 32-bit gather index (no rows, so nothing is read) */
    uint32_t row_ptr[1] = { 0 };
    dcz_sparse huge = { 0, 0x80000000u, 0, row_ptr, NULL, NULL, x, NULL, 0 };
    if (dcz_isa_supported(DCZ_ISA_AVX2))
        CHECK(dcz_spmv__avx2(&huge, NULL, x, y) == 0, "avx2 spmv of 2^31 columns");
    if (dcz_isa_supported(DCZ_ISA_AVX512))
        CHECK(dcz_spmv__avx512(&huge, NULL, x, y) == 0, "avx512 spmv of 2^31 columns");
#endif
    free_mat(&m);
}

int main(void)
{
    RUN(test_grid);
    RUN(test_declines);
    return check_summary();
}
