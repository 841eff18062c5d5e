/* kernels_lanes8.c: the 8-row lane form of a sparse codebook matrix
 * (lanes.h, "the 8-row lane form"), its builder and its batch-1 kernels:
 * the lane form of CPUs with AVX2 and FMA but not AVX-512.
 *
 * Why another form. The 16-row form (kernels_lanes.c) looks up a window of
 * 31 columns and a codebook of 32 values with vpermt2ps, one instruction
 * each; AVX2's vpermps reads 8 floats, so the same lookups take four
 * permutes and three blends each, about 18 instructions for 8 slots.
 * Here a lane's slot is its weight as a float, which needs no lookup, and
 * a window lane of a 15-column window (16 floats: two registers, one
 * blend): a slot takes a sign-extending byte load, two permutes, a blend
 * and a multiply-add. The price is memory: 5 bytes a slot, about 9 a
 * nonzero at 8% density, where the 16-row form takes 2 a slot (the form
 * exists beside the compressed one, on x86 only, for layers the column
 * kernel would run at a cycle or more an entry).
 *
 * One entry of each row a step. Simulated on random 8% matrices (300 x
 * 784): one entry a row a step fills 53% of the slots (4383 steps), two a
 * step sharing a window 45% (2588 steps of two slices, 5176 slices), 31
 * columns (four permutes) 66%. A step's sum is fused into one of four
 * chains, step j of a group into chain j mod 4, so four independent
 * multiply-adds are in flight (a chain alone waits on the latency of the
 * one before: Zen 3 takes 4 cycles for one, a step fewer than 2).
 *
 * The windows: as in the 16-row form, the kernel reads panels of the
 * input, copied per call into aligned panels of 16 floats (15 columns and
 * a 0, the empty slot's lane) in three copies shifted by 5 columns; a
 * step's window is the latest to start at or before the smallest column
 * its rows need.
 *
 * A slot's byte: the window lane's low three bits in bits 0-2 and its bit
 * 3 in bit 7, so that sign-extended to 32 bits the permute reads the low
 * three and the blend the sign. An empty slot is lane 15 (the panel's 0)
 * with weight 0.
 *
 * Rounding: each product fused into its chain (one rounding per entry);
 * the row is act((c0 + c1) + (c2 + c3)), c0 starting from the bias.
 * dcz_spmv_lanes8_ref, the specification, does the same per slot, empty
 * ones included, so the vector kernel gives its bits.
 *
 * Checked by tests/unit/test_simd.c: the vector kernel against the scalar
 * one bit for bit, with and without a fused ReLU or CLIP, in parts, both
 * against dcz_spmv_ref within the rounding bound, over the edge-case grid
 * (codebooks of 2 to 256 values), and the builder's bound.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/f32/lanes.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>

#include "runtime/cpu/f32/act_x86.h"
#include "runtime/cpu/avx2_lanes.h"
#define DCZ_X86 1
#endif

#define ROWS DCZ_LANE8_ROWS
#define W DCZ_LANE8_W
#define PANEL 16          /* floats of a panel: a window and a 0 */
#define CHAINS 4
/* Bytes of weights the vector kernel asks for ahead of its reads, with a
 * non-temporal hint (the 16-row form's reason: the stream then leaves the
 * panels in the second-level cache). */
#define WEIGHT_PREFETCH 2048

static int lanes8_fit(uint32_t cols)
{
    return cols > 0 && cols <= 65535;
}

static uint32_t lane8_panels(uint32_t cols)
{
    return cols ? ((cols - 1) / W + 1) * DCZ_LANE_COPIES : 0;
}

const char *dcz_lanes8_variant(void)
{
#ifdef DCZ_X86
    if (dcz_isa_supported(DCZ_ISA_AVX2) && dcz_cpu_features()->fma) return "avx2";
#endif
    return NULL;
}

uint64_t dcz_lanes8_scratch_floats(uint32_t cols)
{
    if (!lanes8_fit(cols)) return 0;
    /* and 8 to align the first to 32 bytes */
    return (uint64_t)lane8_panels(cols) * PANEL + 8;
}

uint64_t dcz_lanes8_bytes(uint32_t rows, uint32_t cols, uint32_t nnz)
{
    if (!lanes8_fit(cols) || nnz == 0) return 0;
    const uint64_t groups = ((uint64_t)rows + ROWS - 1) / ROWS;
    const uint64_t steps = DCZ_LANE8_STEPS_MAX(nnz, rows);
    return (groups + 1) * 4 + steps * 2 + 31 + steps * ROWS * (sizeof(float) + 1);
}

/* the byte of window lane o (0 .. 15) */
static int8_t lane_byte(uint32_t o)
{
    return (int8_t)(uint8_t)((o & 7) | (o & 8 ? 0x80 : 0));
}

/* the window lane of a slot's byte */
static uint32_t byte_lane(int8_t q)
{
    return ((uint32_t)(uint8_t)q & 7) | ((uint8_t)q & 0x80 ? 8 : 0);
}

typedef struct lane {
    uint32_t e, end, col;
} lane;

/* One step of a group: its window and each row's slot. Returns 0 when no
 * row has entries left. */
static int group_step(const dcz_sparse *s, lane *ln, uint16_t *base, int8_t *off, float *w)
{
    uint32_t b = UINT32_MAX;
    for (int l = 0; l < ROWS; l++)
        if (ln[l].e < ln[l].end && ln[l].col < b) b = ln[l].col;
    if (b == UINT32_MAX) return 0;
    const uint32_t v = dcz_lanes_window_of_w(W, b), start = dcz_lanes_window_start_w(W, v);
    *base = (uint16_t)v;
    for (int l = 0; l < ROWS; l++) {
        if (ln[l].e < ln[l].end && ln[l].col < start + W) {
            off[l] = lane_byte(ln[l].col - start);
            w[l] = s->codebook[s->idx[ln[l].e]];
            ln[l].e++;
            dcz_steps_seek(s->step, &ln[l].e, ln[l].end, ln[l].col, &ln[l].col);
        } else {
            off[l] = lane_byte(W); /* lane 15: the panel's 0 */
            w[l] = 0.0f;
        }
    }
    return 1;
}

void dcz_lanes8_build(dcz_sparse *s, uint32_t nnz, void *mem)
{
    s->lgroups = 0;
    if (!s->idx || dcz_lanes8_bytes(s->rows, s->cols, nnz) == 0) return;
    const uint32_t groups = (s->rows + ROWS - 1) / ROWS;
    const uint64_t cap = DCZ_LANE8_STEPS_MAX(nnz, s->rows);
    uint32_t *start = mem;
    uint16_t *base = (uint16_t *)(start + groups + 1);
    float *w = (float *)(((uintptr_t)(base + cap) + 31) & ~(uintptr_t)31);
    int8_t *off = (int8_t *)(w + cap * ROWS);
    uint64_t t = 0;
    for (uint32_t g = 0; g < groups; g++) {
        lane ln[ROWS];
        for (uint32_t i = 0; i < ROWS; i++)
            dcz_steps_row(s->row_ptr, s->step, s->rows, g * ROWS + i, &ln[i].e, &ln[i].end, &ln[i].col);
        start[g] = (uint32_t)t;
        for (;;) {
            uint16_t b;
            int8_t o[ROWS];
            float q[ROWS];
            if (!group_step(s, ln, &b, o, q)) break;
            if (t == cap) return; /* past the bound: no lane form */
            base[t] = b;
            memcpy(off + t * ROWS, o, sizeof o);
            memcpy(w + t * ROWS, q, sizeof q);
            t++;
        }
    }
    start[groups] = (uint32_t)t;
    /* lanes win past this many nonzero inputs (DCZ_LANE8_STEP_EIGHTHS) */
    const uint64_t need = nnz ? t * DCZ_LANE8_STEP_EIGHTHS * s->cols / (8 * (uint64_t)nnz) : UINT32_MAX;
    s->lneed = need < UINT32_MAX ? (uint32_t)need : UINT32_MAX;
    s->lrows = ROWS;
    s->lgroups = groups;
    s->lstart = start;
    s->lbase = base;
    s->loff = off;
    s->lw = w;
}

void dcz_spmv_lanes8_ref(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                         const dcz_act *act, const float *x, float *y)
{
    for (uint32_t g = g0; g < g1; g++) {
        float acc[CHAINS][ROWS];
        const uint32_t r0 = g * ROWS;
        for (uint32_t l = 0; l < ROWS; l++) {
            acc[0][l] = bias && r0 + l < s->rows ? bias[r0 + l] : 0.0f;
            for (uint32_t c = 1; c < CHAINS; c++) acc[c][l] = 0.0f;
        }
        for (uint32_t t = s->lstart[g]; t < s->lstart[g + 1]; t++) {
            const uint32_t b = dcz_lanes_window_start_w(W, s->lbase[t]), c = (t - s->lstart[g]) % CHAINS;
            for (uint32_t l = 0; l < ROWS; l++) {
                const uint32_t o = byte_lane(s->loff[(size_t)t * ROWS + l]);
                const float xv = o < W ? x[b + o] : 0.0f;
                acc[c][l] = fmaf(s->lw[(size_t)t * ROWS + l], xv, acc[c][l]);
            }
        }
        for (uint32_t l = 0; l < ROWS && r0 + l < s->rows; l++)
            y[r0 + l] = dcz_act_one(act, (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]));
    }
}

#ifdef DCZ_X86

__attribute__((target("avx2")))
const float *dcz_lanes8_panels__avx2(const dcz_sparse *s, const float *x, float *scratch)
{
    float *p = (float *)(((uintptr_t)scratch + 31) & ~(uintptr_t)31);
    const uint32_t cols = s->cols, n = lane8_panels(cols);
    const __m256i first7 = dcz_mask8__avx2(7);
    for (uint32_t v = 0; v < n; v++) {
        const uint32_t st = dcz_lanes_window_start_w(W, v);
        const uint32_t take = st < cols ? (cols - st < W ? cols - st : W) : 0;
        const float *src = x + (take ? st : 0);
        __m256 lo, hi;
        if (take == W) { /* whole loads, the last float cleared */
            lo = _mm256_loadu_ps(src);
            hi = _mm256_maskload_ps(src + 8, first7);
        } else {
            lo = _mm256_maskload_ps(src, dcz_mask8__avx2(take));
            hi = _mm256_maskload_ps(src + 8, dcz_mask8__avx2(take > 8 ? take - 8 : 0));
        }
        _mm256_store_ps(p + (size_t)v * PANEL, lo);
        _mm256_store_ps(p + (size_t)v * PANEL + 8, hi);
    }
    return p;
}

/* Step t into chain A: the window's lanes the slots name (the low three
 * bits by two permutes, bit 3 by the blend on the sign), times the
 * weights. */
#define LANE8_STEP(A, t)                                                                            \
    do {                                                                                            \
        const float *pw = panels + (size_t)base[t] * PANEL;                                         \
        const __m256i o = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(off + (size_t)(t) * ROWS))); \
        const __m256 xv = _mm256_blendv_ps(_mm256_permutevar8x32_ps(_mm256_load_ps(pw), o),        \
                                           _mm256_permutevar8x32_ps(_mm256_load_ps(pw + 8), o),    \
                                           _mm256_castsi256_ps(o));                                 \
        A = _mm256_fmadd_ps(_mm256_load_ps(w + (size_t)(t) * ROWS), xv, A);                       \
    } while (0)

__attribute__((target("avx2,fma")))
void dcz_spmv_lanes8__avx2(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                           const dcz_act *act, const float *panels, float *y)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    const uint16_t *base = s->lbase;
    const int8_t *off = s->loff;
    const float *w = s->lw;
    for (uint32_t g = g0; g < g1; g++) {
        const uint32_t r0 = g * ROWS;
        const __m256i m = dcz_mask8__avx2(s->rows - r0);
        __m256 a0 = bias ? _mm256_maskload_ps(bias + r0, m) : _mm256_setzero_ps();
        __m256 a1 = _mm256_setzero_ps(), a2 = a1, a3 = a1;
        uint32_t t = s->lstart[g];
        const uint32_t end = s->lstart[g + 1];
        for (; t + CHAINS <= end; t += CHAINS) {
            _mm_prefetch((const char *)(w + (size_t)t * ROWS) + WEIGHT_PREFETCH, _MM_HINT_NTA);
            _mm_prefetch((const char *)(w + (size_t)t * ROWS) + WEIGHT_PREFETCH + 64, _MM_HINT_NTA);
            LANE8_STEP(a0, t);
            LANE8_STEP(a1, t + 1);
            LANE8_STEP(a2, t + 2);
            LANE8_STEP(a3, t + 3);
        }
        if (t < end) LANE8_STEP(a0, t);
        if (t + 1 < end) LANE8_STEP(a1, t + 1);
        if (t + 2 < end) LANE8_STEP(a2, t + 2);
        _mm256_maskstore_ps(y + r0, m, dcz_act__avx2(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)), act));
    }
}

#endif /* DCZ_X86 */
