/* kernels_spmv.c: a sparse fully connected float layer at batch 1 on
 * model.h's execution form: the column form's kernel and its builder, the
 * choice for each input between it, the lane forms (lanes.h) and the
 * reference, and the parts that the worker threads share. The batch
 * product (kernels_spmm.c) has its own kernels and tile; the two share
 * the summation order and the threads' chunks (sparse.h).
 *
 *   spmv (batch 1): the column form (dcz_sparse). The input of a layer after
 *     a ReLU is often half zeros; a column whose input is 0 contributes
 *     nothing, so the kernel walks the columns, skips those, and adds each
 *     remaining entry's product to its row: two small loads (row, codebook
 *     index), a product from a per-column table (codebook times the input,
 *     computed once per column) and a read-modify-write of y, which stays in
 *     the first-level cache. Rows within a column are distinct, so four
 *     entries are loaded before any is stored. Plain C, the same on every
 *     machine; a gather-based row kernel measured slower than it
 *     (bench/bench_spmv.c). On CPUs with AVX-512, the lane form
 *     (kernels_lanes.c) runs batch 1 without scatter or gather, and
 *     dcz_spmv_pick takes whichever of the two visits less for the input.
 *
 * Summation order. Every kernel here sums as the references do: the bias
 * (or 0) first, then w * x, rounded, added entry by entry in column order
 * (the column form visits a row's entries in that order too). Products and
 * sums are not fused (the build uses -ffp-contract=off), so every variant
 * gives the references' bits, and a sample the same bits at any batch
 * (tests/unit/test_static.c runs a batch whole and in chunks of one). The
 * lane form (kernels_lanes.c) is the exception: it fuses each product into
 * the sum, so where it runs (batch 1, AVX-512) a row is within rounding of
 * these.
 *
 * Checked by tests/unit/test_simd.c: every variant the machine runs against
 * the references over an edge-case grid, bit for bit.
 */
#include <string.h>

#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/lanes.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>
#define DCZ_X86 1
#endif

/* ---- the column form ------------------------------------------------------- */

void dcz_sparse_block_rows(const dcz_sparse *s, uint32_t block, uint32_t *r0, uint32_t *r1)
{
    dcz_part_range(s->rows, block, s->cblocks, r0, r1);
}

/* The product of entry e (packed q) with the column's input xc: an fp32
 * value times xc (mode 0), from the column's table (1), or its codebook
 * value times xc (2). */
__attribute__((always_inline))
static inline float csc_prod(const int mode, uint32_t q, uint32_t e, uint32_t shift,
                             const float *tab, const float *cb, const float *val, float xc)
{
    return mode == 0 ? val[e] * xc : mode == 1 ? tab[q >> shift] : cb[q >> shift] * xc;
}

/* Adds entries e .. end - 1 of one column to y. Rows within a column are
 * distinct, so four entries are loaded before any is stored; the 16-bit
 * entries four at a time by one 64-bit load (little-endian hosts). wide
 * and mode are constants at every call. */
__attribute__((always_inline))
static inline void csc_column(float *y, const dcz_sparse *s, const int wide, const int mode,
                              uint32_t e, uint32_t end, const float *tab, float xc)
{
    const uint32_t shift = s->cshift, mask = (1u << shift) - 1;
    const float *cb = s->codebook, *val = s->cval;
    const uint16_t *e16 = s->cent16;
    const uint32_t *e32 = s->cent32;
    for (; end - e >= 4; e += 4) {
        uint32_t q0, q1, q2, q3;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (!wide) {
            uint64_t q;
            memcpy(&q, e16 + e, sizeof q);
            q0 = (uint32_t)q & 0xFFFF; q1 = (uint32_t)(q >> 16) & 0xFFFF;
            q2 = (uint32_t)(q >> 32) & 0xFFFF; q3 = (uint32_t)(q >> 48);
        } else
#endif
        {
            q0 = wide ? e32[e] : e16[e];         q1 = wide ? e32[e + 1] : e16[e + 1];
            q2 = wide ? e32[e + 2] : e16[e + 2]; q3 = wide ? e32[e + 3] : e16[e + 3];
        }
        const uint32_t r0 = q0 & mask, r1 = q1 & mask, r2 = q2 & mask, r3 = q3 & mask;
        const float v0 = y[r0] + csc_prod(mode, q0, e, shift, tab, cb, val, xc);
        const float v1 = y[r1] + csc_prod(mode, q1, e + 1, shift, tab, cb, val, xc);
        const float v2 = y[r2] + csc_prod(mode, q2, e + 2, shift, tab, cb, val, xc);
        const float v3 = y[r3] + csc_prod(mode, q3, e + 3, shift, tab, cb, val, xc);
        y[r0] = v0; y[r1] = v1; y[r2] = v2; y[r3] = v3;
    }
    for (; e < end; e++) {
        const uint32_t q = wide ? e32[e] : e16[e];
        y[q & mask] += csc_prod(mode, q, e, shift, tab, cb, val, xc);
    }
}

__attribute__((always_inline))
static inline void csc_block(const dcz_sparse *s, const uint32_t *ptr, const float *x, float *y,
                             const int wide)
{
    float tab[64];
    for (uint32_t c = 0; c < s->cols; c++) {
        const float xc = x[c];
        const uint32_t e = ptr[c], end = ptr[c + 1];
        if (xc == 0.0f || e == end) continue;
        if (s->cval) {
            csc_column(y, s, wide, 0, e, end, tab, xc);
        } else if (s->k <= 64 && s->k <= 2 * (end - e)) {
            /* the codebook's products with xc, each rounded as w * x is;
             * eight at a time so that the compiler uses vector multiplies */
            const float *cb = s->codebook;
            uint32_t i = 0;
            for (; i + 8 <= s->k; i += 8)
                for (uint32_t j = 0; j < 8; j++) tab[i + j] = cb[i + j] * xc;
            for (; i < s->k; i++) tab[i] = cb[i] * xc;
            csc_column(y, s, wide, 1, e, end, tab, xc);
        } else {
            csc_column(y, s, wide, 2, e, end, tab, xc);
        }
    }
}

void dcz_spmv_csc(const dcz_sparse *s, uint32_t block, const float *bias, const float *x,
                  float *y)
{
    uint32_t r0, r1;
    dcz_sparse_block_rows(s, block, &r0, &r1);
    if (r1 > r0 && bias) memcpy(y + r0, bias + r0, (size_t)(r1 - r0) * sizeof *y);
    else if (r1 > r0) memset(y + r0, 0, (size_t)(r1 - r0) * sizeof *y);
    const uint32_t *ptr = s->col_ptr + (size_t)block * ((size_t)s->cols + 1);
    if (s->cent32) csc_block(s, ptr, x, y, 1);
    else csc_block(s, ptr, x, y, 0);
}

/* bits of the largest of n values 0 .. n - 1 */
static uint32_t bits_of(uint32_t n)
{
    uint32_t b = 0;
    while (b < 32 && n > 1 && ((n - 1) >> b) != 0) b++;
    return b;
}

uint64_t dcz_sparse_columns_bytes(uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k,
                                  uint32_t cblocks)
{
    if (rows > 65535 || cblocks == 0) return 0;
    const int wide = bits_of(rows) + (k ? bits_of(k) : 0) > 16;
    return (uint64_t)cblocks * ((uint64_t)cols + 1) * 4 + (uint64_t)nnz * (wide ? 4 : 2) +
           (k ? 0 : (uint64_t)nnz * 4);
}

/* Runs body for each real entry of s, block by block, rows in order, with
 * blk_, r_, col_ and e_ its block, row, column and entry. */
#define FOR_EACH_ENTRY(s, body) do { \
    for (uint32_t blk_ = 0; blk_ < (s)->cblocks; blk_++) { \
        uint32_t ra_, rb_; \
        dcz_sparse_block_rows((s), blk_, &ra_, &rb_); \
        for (uint32_t r_ = ra_; r_ < rb_; r_++) { \
            uint32_t col_ = 0; \
            for (uint32_t e_ = (s)->row_ptr[r_]; e_ < (s)->row_ptr[r_ + 1]; e_++) { \
                col_ += (s)->step[e_]; \
                if ((s)->step[e_] != DCZ_STEP_FILLER) { body; } \
            } \
        } \
    } \
} while (0)

void dcz_sparse_build_columns(dcz_sparse *s, uint32_t cblocks, void *mem)
{
    const size_t stride = (size_t)s->cols + 1;
    uint32_t nnz = 0;
    for (uint32_t e = 0; e < s->entries; e++) nnz += s->step[e] != DCZ_STEP_FILLER;
    const uint32_t shift = bits_of(s->rows);
    const int wide = shift + (s->idx ? bits_of(s->k) : 0) > 16;
    uint32_t *ptr = mem;
    float *cval = s->val ? (float *)(ptr + cblocks * stride) : NULL;
    void *ent = cval ? (void *)(cval + nnz) : (void *)(ptr + cblocks * stride);
    uint16_t *e16 = wide ? NULL : ent;
    uint32_t *e32 = wide ? ent : NULL;
    s->cblocks = cblocks;
    s->cshift = shift;
    memset(ptr, 0, cblocks * stride * sizeof *ptr);
    /* counts at [c + 1], then running sums over blocks and columns: block
     * b's column c starts at ptr[b stride + c] */
    FOR_EACH_ENTRY(s, ptr[blk_ * stride + col_ + 1]++);
    uint32_t run = 0;
    for (uint32_t b = 0; b < cblocks; b++) {
        uint32_t *p = ptr + b * stride;
        p[0] = run;
        for (size_t c = 1; c < stride; c++) p[c] += p[c - 1];
        run = p[stride - 1];
    }
    /* ptr[b stride + c] as the cursor of column c, then shifted back */
    FOR_EACH_ENTRY(s, {
        const uint32_t at = ptr[blk_ * stride + col_]++;
        const uint32_t q = r_ | (s->idx ? (uint32_t)s->idx[e_] << shift : 0);
        if (e16) e16[at] = (uint16_t)q;
        else e32[at] = q;
        if (cval) cval[at] = s->val[e_];
    });
    for (uint32_t b = 0; b < cblocks; b++) {
        uint32_t *p = ptr + b * stride;
        for (size_t c = stride - 1; c > 0; c--) p[c] = p[c - 1];
        p[0] = b ? ptr[(b - 1) * stride + stride - 1] : 0;
    }
    s->col_ptr = ptr;
    s->cent16 = e16;
    s->cent32 = e32;
    s->cval = cval;
}

/* ---- dispatch --------------------------------------------------------------- */

/* the batch-1 kernel without the lane form */
static dcz_spmv_kind plain_kind(const dcz_sparse *s)
{
    return s->col_ptr ? DCZ_SPMV_COLUMNS : DCZ_SPMV_REF;
}

/* Whether this CPU runs s's lane form by its vector kernel. */
static inline int lanes_vector(const dcz_sparse *s)
{
    if (!s->lgroups) return 0;
#ifdef DCZ_X86
    if (s->lrows == DCZ_LANE8_ROWS) return dcz_lanes8_variant() != NULL;
    return dcz_isa_supported(DCZ_ISA_AVX512);
#else
    return 0;
#endif
}

#ifdef DCZ_X86
/* nonzeros_past__avx512 on AVX2: 32 at a time */
__attribute__((target("avx2,popcnt")))
static int nonzeros_past__avx2(const float *x, uint32_t n, uint64_t need)
{
    const __m256 zero = _mm256_setzero_ps();
    uint64_t nz = 0;
    uint32_t c = 0;
    for (; c + 32 <= n && nz <= need; c += 32)
        for (int v = 0; v < 4; v++)
            nz += (uint64_t)__builtin_popcount(
                (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + c + 8 * v), zero, _CMP_NEQ_UQ)));
    for (; c < n && nz <= need; c++) nz += x[c] != 0.0f;
    return nz > need;
}

/* Whether more than `need` of x[0 .. n) are nonzero (NaN counts, -0 does
 * not, as with x != 0), counted 64 at a time until the count passes need:
 * eight scalar tests at a time took 95 ns of LeNet-300-100's 2.8 us. */
__attribute__((target("avx512f,popcnt")))
static int nonzeros_past__avx512(const float *x, uint32_t n, uint64_t need)
{
    const __m512 zero = _mm512_setzero_ps();
    uint64_t nz = 0;
    uint32_t c = 0;
    for (; c + 64 <= n && nz <= need; c += 64)
        for (int v = 0; v < 4; v++)
            nz += (uint64_t)__builtin_popcount(
                _mm512_cmp_ps_mask(_mm512_loadu_ps(x + c + 16 * v), zero, _CMP_NEQ_UQ));
    for (; c < n && nz <= need; c += 16) {
        const __mmask16 in = n - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - c)) - 1);
        nz += (uint64_t)__builtin_popcount(
            _mm512_mask_cmp_ps_mask(in, _mm512_maskz_loadu_ps(in, x + c), zero, _CMP_NEQ_UQ));
    }
    return nz > need;
}
#endif

dcz_spmv_kind dcz_spmv_pick(const dcz_sparse *s, const float *x)
{
#ifdef DCZ_X86
    if (lanes_vector(s)) {
        /* lanes win once more than s->lneed inputs are nonzero, which
         * the count stops at */
        if (!s->col_ptr) return DCZ_SPMV_LANES;
        if (dcz_isa_supported(DCZ_ISA_AVX512) ? nonzeros_past__avx512(x, s->cols, s->lneed)
                                              : nonzeros_past__avx2(x, s->cols, s->lneed))
            return DCZ_SPMV_LANES;
    }
#else
    (void)x;
#endif
    return plain_kind(s);
}

const float *dcz_spmv_input(const dcz_sparse *s, dcz_spmv_kind kind, const float *x,
                            float *scratch)
{
#ifdef DCZ_X86
    if (kind == DCZ_SPMV_LANES && lanes_vector(s))
        return s->lrows == DCZ_LANE8_ROWS ? dcz_lanes8_panels__avx2(s, x, scratch)
                                          : dcz_lanes_panels__avx512(s, x, scratch);
#endif
    (void)scratch;
    return x;
}

void dcz_spmv_part(const dcz_sparse *s, dcz_spmv_kind kind, uint32_t part, uint32_t parts,
                   const float *bias, const dcz_act *act, const float *xin, float *y)
{
    uint32_t r0, r1;
    if (kind == DCZ_SPMV_COLUMNS && s->col_ptr && s->cblocks == parts) {
        dcz_spmv_csc(s, part, bias, xin, y);
        if (act) {
            dcz_sparse_block_rows(s, part, &r0, &r1);
            dcz_act_apply(act, y + r0, r1 - r0);
        }
        return;
    }
    if (kind == DCZ_SPMV_LANES && s->lgroups) {
        uint32_t g0, g1;
        dcz_part_range(s->lgroups, part, parts, &g0, &g1);
#ifdef DCZ_X86
        if (lanes_vector(s)) {
            if (s->lrows == DCZ_LANE8_ROWS) dcz_spmv_lanes8__avx2(s, g0, g1, bias, act, xin, y);
            else dcz_spmv_lanes__avx512(s, g0, g1, bias, act, xin, y);
            return;
        }
#endif
        dcz_spmv_lanes_ref(s, g0, g1, bias, act, xin, y);
        return;
    }
    dcz_part_range(s->rows, part, parts, &r0, &r1);
    dcz_spmm_ref_rows(s, r0, r1, bias, xin, 1, y);
    dcz_act_apply(act, y + r0, r1 - r0);
}

/* One batch-1 call of dcz_spmv_pool. */
typedef struct spmv_job {
    const dcz_sparse *s;
    dcz_spmv_kind kind;
    const float *bias, *xin;
    const dcz_act *act;
    float *y;
    uint32_t chunks, next;
} spmv_job;

static void spmv_share(void *ctx, uint32_t t)
{
    spmv_job *j = ctx;
    (void)t;
    for (uint32_t c; (c = dcz_take_chunk(&j->next)) < j->chunks;)
        dcz_spmv_part(j->s, j->kind, c, j->chunks, j->bias, j->act, j->xin, j->y);
}

void dcz_spmv_pool(dcz_pool *pool, const dcz_sparse *s, dcz_spmv_kind kind, const float *bias,
                   const dcz_act *act, const float *xin, float *y)
{
    const uint32_t items = kind == DCZ_SPMV_LANES && s->lgroups ? s->lgroups : s->rows;
    const uint32_t chunks = kind == DCZ_SPMV_COLUMNS && s->col_ptr
        ? s->cblocks : dcz_share_chunks(items, dcz_pool_threads(pool));
    if (!pool) {   /* the caller alone: the parts in turn, no job to share */
        for (uint32_t c = 0; c < chunks; c++) dcz_spmv_part(s, kind, c, chunks, bias, act, xin, y);
        return;
    }
    spmv_job j = { s, kind, bias, xin, act, y, chunks, 0 };
    dcz_pool_run(pool, spmv_share, &j);
}

void dcz_spmv(const dcz_sparse *s, const float *bias, const float *x, float *y, float *scratch)
{
    dcz_spmv_kind kind = dcz_spmv_pick(s, x);
    if (kind == DCZ_SPMV_LANES && !scratch) kind = plain_kind(s);
    dcz_spmv_pool(NULL, s, kind, bias, NULL, dcz_spmv_input(s, kind, x, scratch), y);
}
