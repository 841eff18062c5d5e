/* test_kernels.c: the runtime's sparse kernels against a dense reference.
 *
 * Random matrices (values never zero where stored) at densities 0, 0.5 and
 * 1, odd sizes, rows wider than one step byte can span (so fillers occur),
 * codebooks of 2 and 256 entries and fp32 values; batch 1 (SpMV) and batch
 * 7 (SpMM). The reference is a dense product in double; fp32 results must
 * agree within 1e-5 relative to the sum of |w x| terms.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"
#include "tests/check.h"

static uint64_t rs = 12345;
static uint64_t rnd(void)
{
    uint64_t z = (rs += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float frand(void) { return (float)((rnd() >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f; }
static float nonzero(void) { float v = frand(); return v >= 0 ? v + 0.01f : v - 0.01f; }

typedef struct mat {
    uint32_t rows, cols, k;
    float *dense;       /* (rows, cols) the weights the sparse form means */
    dcz_sparse sp;
    uint32_t *row_ptr;
    uint8_t *step, *idx, *idx_src;
    float *val, *cb;
} mat;

static int make_mat(mat *m, uint32_t rows, uint32_t cols, double density, uint32_t k)
{
    memset(m, 0, sizeof *m);
    m->rows = rows; m->cols = cols; m->k = k;
    size_t n = (size_t)rows * cols;
    m->dense = calloc(n ? n : 1, sizeof(float));
    m->cb = malloc((k ? k : 1) * sizeof(float));
    for (uint32_t i = 0; i < k; i++) m->cb[i] = nonzero();
    uint8_t *keep = calloc(n ? n : 1, 1);
    uint32_t nnz = 0;
    for (size_t i = 0; i < n; i++) {
        keep[i] = density >= 1 || (density > 0 && (rnd() % 1000) < density * 1000);
        nnz += keep[i];
    }
    uint64_t cap = dcz_sparse_max_entries(nnz, rows, cols);
    m->row_ptr = malloc((rows + 1) * sizeof(uint32_t));
    m->step = malloc(cap ? cap : 1);
    m->idx_src = malloc(nnz ? nnz : 1);
    uint8_t *vsrc = malloc(nnz ? (size_t)nnz * 4 : 4);
    if (k) m->idx = malloc(cap ? cap : 1);
    else m->val = malloc((cap ? cap : 1) * sizeof(float));
    dcz_sparse_builder b;
    memset(&b, 0, sizeof b);
    b.rows = rows; b.cols = cols; b.row_ptr = m->row_ptr; b.step = m->step; b.cap = (uint32_t)cap;
    b.idx_dst = m->idx; b.idx_src = m->idx_src; b.val_dst = m->val; b.val_src = vsrc;
    m->row_ptr[0] = 0;
    uint32_t w = 0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i]) continue;
        float v;
        if (k) { m->idx_src[w] = (uint8_t)(rnd() % k); v = m->cb[m->idx_src[w]]; }
        else { v = nonzero(); dcz_put32(vsrc + (size_t)w * 4, dcz_f32_bits(v)); }
        m->dense[i] = v;
        ok &= dcz_sparse_builder_add(&b, w++, i) == DCZ_OK;
    }
    dcz_sparse_builder_finish(&b);
    m->sp = (dcz_sparse){ rows, cols, b.entries, m->row_ptr, m->step, m->idx, m->val, m->cb, k };
    free(keep);
    free(vsrc);
    return ok;
}

static void free_mat(mat *m)
{
    free(m->dense); free(m->row_ptr); free(m->step); free(m->idx); free(m->idx_src);
    free(m->val); free(m->cb);
}

static void compare(const char *what, const mat *m, const float *bias, const float *x,
                    size_t batch, const float *y)
{
    size_t bad = 0;
    for (size_t b = 0; b < batch; b++)
        for (uint32_t r = 0; r < m->rows; r++) {
            double ref = bias[r], mag = fabs(bias[r]);
            for (uint32_t c = 0; c < m->cols; c++) {
                double t = (double)m->dense[(size_t)r * m->cols + c] * x[b * m->cols + c];
                ref += t;
                mag += fabs(t);
            }
            double got = y[b * m->rows + r];
            if (fabs(got - ref) > 1e-5 * (mag + 1)) {
                if (bad++ < 3)
                    fprintf(stderr, "  %s %ux%u batch %zu: y[%zu][%u] = %.8g, reference %.8g\n",
                            what, m->rows, m->cols, batch, b, r, got, ref);
            }
        }
    CHECK(bad == 0, "%s: %zu mismatches", what, bad);
}

static void run_grid(uint32_t k)
{
    const uint32_t sizes[][2] = { { 1, 1 }, { 1, 7 }, { 7, 1 }, { 3, 5 }, { 17, 31 },
                                  { 33, 300 }, { 5, 1000 }, { 64, 64 } };
    const double dens[] = { 0.0, 0.5, 1.0, 0.01 };
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t di = 0; di < sizeof dens / sizeof *dens; di++) {
            mat m;
            uint32_t rows = sizes[si][0], cols = sizes[si][1];
            REQUIRE(make_mat(&m, rows, cols, dens[di], k), "build %ux%u", rows, cols);
            const size_t B = 7;
            float *x = malloc(B * cols * sizeof(float)), *y = malloc(B * rows * sizeof(float));
            float *bias = malloc(rows * sizeof(float));
            for (size_t i = 0; i < B * cols; i++) x[i] = frand();
            for (uint32_t i = 0; i < rows; i++) bias[i] = frand();
            dcz_spmv_ref(&m.sp, bias, x, y);
            compare("spmv", &m, bias, x, 1, y);
            dcz_spmm_ref(&m.sp, bias, x, B, y);
            compare("spmm", &m, bias, x, B, y);
            /* the dense kernel on the same weights */
            dcz_dense_f32_ref(m.dense, bias, x, B, cols, rows, y);
            compare("dense", &m, bias, x, B, y);
            free(x); free(y); free(bias);
            free_mat(&m);
        }
}

static void test_codebook_2(void) { run_grid(2); }
static void test_codebook_256(void) { run_grid(256); }
static void test_fp32_values(void) { run_grid(0); }

/* fillers: a row whose only weight sits far to the right */
static void test_fillers(void)
{
    const uint32_t cols = 1000;
    for (uint32_t at = 250; at < 780; at += 11) {
        /* build by hand: row 1 has weights at 0 and at `at` */
        uint32_t row_ptr[3];
        uint8_t step[16], idx[16], src[2] = { 1, 3 };
        dcz_sparse_builder b;
        memset(&b, 0, sizeof b);
        b.rows = 2; b.cols = cols; b.row_ptr = row_ptr; b.step = step; b.cap = 16;
        b.idx_dst = idx; b.idx_src = src;
        row_ptr[0] = 0;
        REQUIRE(dcz_sparse_builder_add(&b, 0, cols + 0) == DCZ_OK, "add");
        REQUIRE(dcz_sparse_builder_add(&b, 1, cols + at) == DCZ_OK, "add");
        dcz_sparse_builder_finish(&b);
        CHECK(b.entries == 2 + at / 255, "at %u: %u entries", at, b.entries);
        float cb[4] = { 0.5f, 2.0f, -1.0f, 3.0f }, x[1000], y[2];
        for (uint32_t i = 0; i < cols; i++) x[i] = (float)i;
        dcz_sparse s = { 2, cols, b.entries, row_ptr, step, idx, NULL, cb, 4 };
        dcz_spmv_ref(&s, NULL, x, y);
        CHECK(y[0] == 0.0f && y[1] == 3.0f * (float)at, "at %u: y = %g %g", at, y[0], y[1]);
    }
    /* positions out of order are refused */
    uint32_t row_ptr[3];
    uint8_t step[8];
    dcz_sparse_builder b;
    memset(&b, 0, sizeof b);
    b.rows = 2; b.cols = 10; b.row_ptr = row_ptr; b.step = step; b.cap = 8;
    row_ptr[0] = 0;
    CHECK(dcz_sparse_builder_add(&b, 0, 15) == DCZ_OK, "first");
    CHECK(dcz_sparse_builder_add(&b, 1, 12) == DCZ_ERR_FORMAT, "backwards refused");
    CHECK(dcz_sparse_builder_add(&b, 1, 25) == DCZ_ERR_FORMAT, "past the end refused");
}

static void test_relu_softmax(void)
{
    float v[6] = { -1.0f, 0.0f, 2.0f, NAN, -0.0f, 3.5f };
    dcz_relu_ref(v, 6);
    CHECK(v[0] == 0 && v[1] == 0 && v[2] == 2 && v[3] == 0 && v[5] == 3.5f, "relu");
    float s[6] = { 1, 2, 3, 1000, 1000, 1000 };
    dcz_softmax_ref(s, 2, 3);
    double e = exp(1.0) + exp(2.0) + exp(3.0);
    CHECK(fabs(s[2] - exp(3.0) / e) < 1e-6, "softmax %g", s[2]);
    CHECK(fabs(s[3] - 1.0 / 3) < 1e-6 && !isnan(s[4]), "softmax of large logits");
}

int main(void)
{
    RUN(test_codebook_2);
    RUN(test_codebook_256);
    RUN(test_fp32_values);
    RUN(test_fillers);
    RUN(test_relu_softmax);
    return check_summary();
}
