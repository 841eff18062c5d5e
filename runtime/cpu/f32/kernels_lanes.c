/* kernels_lanes.c: the lane form of a sparse codebook matrix (lanes.h, "the
 * lane form"), its builder and its batch-1 kernels.
 *
 * Why: at batch 1 the column kernel (kernels_spmv.c) adds each entry to its
 * row of y in memory, a scalar read-modify-write that costs a cycle or more
 * per entry whatever the vector width. Here a vector lane owns a row and
 * keeps its sum in a register; the input a lane needs comes from a window
 * of 31 columns held in two registers and looked up by a two-table permute
 * (vpermt2ps), its weight from the codebook by another, so nothing is
 * gathered or scattered. The price is the empty slots of lanes whose row
 * has no entry in the window: the builder's greedy walk keeps about half
 * the slots full at 8% density (LeNet-300-100 fc1: 55%).
 *
 * Two entries of a row a step. A step's two slices are the same sixteen
 * rows, slice 0 taking each row's next entry in the window and slice 1 the
 * one after it, into two sums a row that the end adds: the walk of 32
 * rows, a slice each, took 1110 steps on LeNet-300-100 fc1, 181 on fc2 and
 * 32 on fc3, this one 1060, 163 and 16 (batch 1: 2.46 -> 2.35 us, with the
 * ReLUs fused into the stores). Eight rows of four entries took more steps
 * (1189 on fc1), and so did sixteen rows of three or four with their wider
 * steps counted as 1.5 or 2 (1165, 1268).
 *
 * Slots of 16 bits, two slices a vector: the form had byte slots, four
 * slices a vector, and windows of 15 columns for codebooks of 16 values
 * but of 7 for 32 (the fully connected layers' 5 bits), a third of its
 * slots filled; with 31 columns and a byte for each of offset and index,
 * LeNet-300-100 batch 1 took 5.4 -> 3.4 us.
 *
 * The windows. A window load that straddles two cache lines costs about
 * twice an aligned one, and a masked load more, so the vector kernel does
 * not read x itself: per call, dcz_lanes_panels__avx512 copies x into
 * aligned panels of 32 floats, each W = 31 consecutive inputs and a 0 (the
 * empty slot's lane), in three copies shifted by W / 3 columns. A window
 * is one panel, loaded whole as two vectors; the builder picks,
 * of the windows that start at or before the column it needs, the latest,
 * so it loses a third of a window at most (measured on 4096 x 4096 at 9%:
 * 7% more steps than windows at any column, each a third cheaper). Both
 * slices of a step share its window (a panel per slice took 5 loads where
 * one takes 3; LeNet-300-100 fc1 with the slots loaded once: 2.26 -> 1.70
 * us), and the next window for slice 1 took more steps (1137 on fc1).
 *
 * The cost of a step (Zen 4, measured by removing instructions from the
 * loop): its nine vector instructions, four permutes, three shifts that
 * bring the other three fields of the slots down to the bits a permute
 * reads, and two multiply-adds; without the shifts a step takes 30% less.
 * Each field loaded in its own vector instead (four slot vectors a step)
 * took 1.8 times as long, two vectors and two shifts 1.05 times, the
 * weights loaded as floats 1.3 times: the slots then no longer fit the
 * second-level cache's bandwidth. Two chains of sums a slice gained
 * nothing, nor ands in place of the shifts (5%), nor multiplies (slower).
 *
 * Two groups at a time. A row's sum takes its entries one fused
 * multiply-add after the other, so a group alone keeps two chains in
 * flight (its two slices) and waits on their latency; the steps of two
 * groups interleaved keep four, every sum as it was. A codebook of 16
 * values or fewer (4 bits) is looked up in one register by vpermps rather
 * than two by vpermt2ps, the same value for less where a two-source
 * permute costs more (Zen 4). Both together, on an AMD EPYC (Zen 4), one
 * thread, alternated runs of bench_spmv against the kernel before them
 * and the 64-row form of an earlier release: Alex-7 (4096 x 4096, 9%,
 * 4 bits) best 173 -> 147 us (the earlier form 152), medians 213 -> 201
 * (184) on a host whose speed moved by 20% from run to run.
 *
 * Rounding. Each product is fused into its row's sum (one rounding per
 * entry, where the other kernels round the product and then the sum): a
 * fused multiply-add is one instruction where a multiply and an add are
 * two, on the ports the lookups need too. dcz_spmv_lanes_ref, the
 * specification, sums with fmaf in the same order (slice 0: the bias, then
 * the row's first entry of each step; slice 1: from 0, its second entries;
 * then the two sums added, and the fused activation applied), so the two
 * lane kernels agree bit for bit; against dcz_spmv_ref a row differs by at
 * most the rounding of its products (tests/unit/test_simd.c states the
 * bound it checks). The vector kernel adds w * 0 for an empty slot, which
 * only changes the sign of a zero sum.
 *
 * Checked by tests/unit/test_simd.c: the vector kernel against the scalar
 * one bit for bit, with and without a fused ReLU or CLIP, both against
 * dcz_spmv_ref within that bound, over an edge-case grid, and the
 * builder's bound.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/f32/lanes.h"
#include "runtime/model.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>

#include "runtime/cpu/f32/act_x86.h"
#define DCZ_X86 1
#endif

#define SLICES 2
#define LANES 16
#define COPIES DCZ_LANE_COPIES /* shifted copies of the input's panels */
#define PANEL 32               /* floats of a panel: a window and a 0 */
#define EMPTY DCZ_LANE_W       /* a slot with no entry: the panel's 0, index 0 */
/* Bytes of slots the vector kernel asks for ahead of its reads, with a
 * non-temporal hint: the stream then does not push the panels out of the
 * second-level cache (on 4096 x 25088 at 4%, 321 KB of panels: without
 * it the kernel took from 1.0 to 4 times as long from run to run). */
#define SLOT_PREFETCH 4096

/* whether a matrix of cols columns and k codebook values can have the form */
static int lanes_fit(uint32_t cols, uint32_t k)
{
    return k > 0 && k <= 32 && cols <= 65535;
}

/* panels of the input for a matrix of cols columns (three per W columns) */
static uint32_t lane_panels(uint32_t cols)
{
    return cols ? ((cols - 1) / DCZ_LANE_W + 1) * COPIES : 0;
}

static uint64_t lanes16_scratch_floats(uint32_t cols, uint32_t k)
{
    if (!lanes_fit(cols, k) || cols == 0) return 0;
    /* and 16 to align the first to 64 bytes */
    return (uint64_t)lane_panels(cols) * PANEL + 16;
}

static uint64_t lanes16_bytes(uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k)
{
    if (!lanes_fit(cols, k) || nnz == 0) return 0;
    const uint64_t groups = ((uint64_t)rows + DCZ_LANE_ROWS - 1) / DCZ_LANE_ROWS;
    const uint64_t steps = DCZ_LANE_STEPS_MAX(nnz, rows);
    return (groups + 1) * 4 + steps * 2 + 63 + steps * DCZ_LANE_SLOTS * 2;
}

/* A lane's place in its row of the row form: the next real entry e (e ==
 * end: none left) and its column. */
typedef struct lane {
    uint32_t e, end, col;
} lane;

/* One step of a group's 16 rows: its window (the latest to start at or
 * before the smallest column the rows need) and each row's two slots (row
 * l's first entry in the window at slot[2 l], its second at slot[2 l + 1]).
 * Returns 0, writing nothing, when no row has entries left. */
static int group_step(const dcz_sparse *s, lane *ln, uint16_t *base, uint16_t *slot)
{
    uint32_t b = UINT32_MAX;
    for (int l = 0; l < DCZ_LANE_ROWS; l++)
        if (ln[l].e < ln[l].end && ln[l].col < b) b = ln[l].col;
    if (b == UINT32_MAX) return 0;
    const uint32_t v = dcz_lanes_window_of(b), start = dcz_lanes_window_start(v);
    *base = (uint16_t)v;
    for (int l = 0; l < DCZ_LANE_ROWS; l++)
        for (int sl = 0; sl < SLICES; sl++) {
            uint16_t *q = slot + SLICES * l + sl;
            if (ln[l].e < ln[l].end && ln[l].col < start + DCZ_LANE_W) {
                *q = (uint16_t)((ln[l].col - start) | (uint32_t)s->idx[ln[l].e] << 8);
                ln[l].e++;
                dcz_steps_seek(s->step, &ln[l].e, ln[l].end, ln[l].col, &ln[l].col);
            } else {
                *q = EMPTY;
            }
        }
    return 1;
}

static void lanes16_build(dcz_sparse *s, uint32_t nnz, void *mem)
{
    s->lgroups = 0;
    if (!s->idx || lanes16_bytes(s->rows, s->cols, nnz, s->k) == 0) return;
    const uint32_t groups = (s->rows + DCZ_LANE_ROWS - 1) / DCZ_LANE_ROWS;
    const uint64_t cap = DCZ_LANE_STEPS_MAX(nnz, s->rows);
    uint32_t *start = mem;
    uint16_t *base = (uint16_t *)(start + groups + 1);
    uint16_t *slot = (uint16_t *)(((uintptr_t)(base + cap) + 63) & ~(uintptr_t)63);
    uint64_t t = 0;
    for (uint32_t g = 0; g < groups; g++) {
        lane ln[DCZ_LANE_ROWS];
        for (uint32_t i = 0; i < DCZ_LANE_ROWS; i++)
            dcz_steps_row(s->row_ptr, s->step, s->rows, g * DCZ_LANE_ROWS + i, &ln[i].e, &ln[i].end, &ln[i].col);
        start[g] = (uint32_t)t;
        for (;;) {
            uint16_t b, q[DCZ_LANE_SLOTS];
            if (!group_step(s, ln, &b, q)) break;
            if (t == cap) return; /* past the bound: no lane form */
            base[t] = b;
            memcpy(slot + t * DCZ_LANE_SLOTS, q, sizeof q);
            t++;
        }
    }
    start[groups] = (uint32_t)t;
    /* the column kernel visits the entries of the nonzero inputs, about nnz
     * times their share: lanes win past this many (DCZ_LANE_STEP_ENTRIES) */
    const uint64_t need = nnz ? t * DCZ_LANE_STEP_ENTRIES * s->cols / nnz : UINT32_MAX;
    s->lneed = need < UINT32_MAX ? (uint32_t)need : UINT32_MAX;
    s->lrows = DCZ_LANE_ROWS;
    s->lgroups = groups;
    s->lstart = start;
    s->lbase = base;
    s->lslot = slot;
}

static void lanes16_ref(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias, const dcz_act *act,
                        const float *x, float *y)
{
    for (uint32_t g = g0; g < g1; g++) {
        float acc[SLICES][DCZ_LANE_ROWS];
        const uint32_t r0 = g * DCZ_LANE_ROWS;
        for (uint32_t l = 0; l < DCZ_LANE_ROWS; l++) {
            acc[0][l] = bias && r0 + l < s->rows ? bias[r0 + l] : 0.0f;
            acc[1][l] = 0.0f;
        }
        for (uint32_t t = s->lstart[g]; t < s->lstart[g + 1]; t++) {
            const uint32_t b = dcz_lanes_window_start(s->lbase[t]);
            for (uint32_t l = 0; l < DCZ_LANE_ROWS; l++)
                for (uint32_t sl = 0; sl < SLICES; sl++) {
                    const uint32_t q = s->lslot[(size_t)t * DCZ_LANE_SLOTS + SLICES * l + sl];
                    if ((q & 0xFF) == EMPTY) continue;
                    acc[sl][l] = fmaf(s->codebook[q >> 8], x[b + (q & 0xFF)], acc[sl][l]);
                }
        }
        for (uint32_t l = 0; l < DCZ_LANE_ROWS && r0 + l < s->rows; l++)
            y[r0 + l] = dcz_act_one(act, acc[0][l] + acc[1][l]);
    }
}

/* ---- either form, by its rows a group ---- */

uint32_t dcz_lanes_rows(void)
{
#ifdef DCZ_X86
    return dcz_isa_supported(DCZ_ISA_AVX512) ? DCZ_LANE_ROWS : dcz_lanes8_variant() ? DCZ_LANE8_ROWS : 0;
#else
    return 0;
#endif
}

uint64_t dcz_lanes_bytes(uint32_t lrows, uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k)
{
    return lrows == DCZ_LANE8_ROWS ? dcz_lanes8_bytes(rows, cols, nnz)
           : lrows == DCZ_LANE_ROWS ? lanes16_bytes(rows, cols, nnz, k) : 0;
}

void dcz_lanes_build(dcz_sparse *s, uint32_t lrows, uint32_t nnz, void *mem)
{
    s->lgroups = 0;
    if (lrows == DCZ_LANE8_ROWS) dcz_lanes8_build(s, nnz, mem);
    else if (lrows == DCZ_LANE_ROWS) lanes16_build(s, nnz, mem);
}

uint64_t dcz_lanes_scratch_floats(uint32_t lrows, uint32_t cols, uint32_t k)
{
    return lrows == DCZ_LANE8_ROWS ? dcz_lanes8_scratch_floats(cols)
           : lrows == DCZ_LANE_ROWS ? lanes16_scratch_floats(cols, k) : 0;
}

void dcz_spmv_lanes_ref(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                        const dcz_act *act, const float *x, float *y)
{
    if (s->lrows == DCZ_LANE8_ROWS) dcz_spmv_lanes8_ref(s, g0, g1, bias, act, x, y);
    else lanes16_ref(s, g0, g1, bias, act, x, y);
}

#ifdef DCZ_X86

/* the lanes of rows [r0, r0 + 16) that exist */
static __mmask16 rows_mask(uint32_t rows, uint32_t r0)
{
    if (r0 >= rows) return 0;
    return rows - r0 >= LANES ? (__mmask16)0xFFFF : (__mmask16)((1u << (rows - r0)) - 1);
}

__attribute__((target("avx512f")))
const float *dcz_lanes_panels__avx512(const dcz_sparse *s, const float *x, float *scratch)
{
    float *p = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    const uint32_t cols = s->cols, n = lane_panels(cols);
    /* window v = 3 u + c starts at 31 u + 0, 10 or 20 (dcz_lanes_window_start):
     * whole loads, the last float cleared, while 32 inputs remain */
    uint32_t v = 0, u = 0;
    for (; u * DCZ_LANE_W + 2 * DCZ_LANE_W / COPIES + PANEL <= cols; u++, v += COPIES)
        for (uint32_t c = 0; c < COPIES; c++) {
            const float *src = x + u * DCZ_LANE_W + c * DCZ_LANE_W / COPIES;
            _mm512_store_ps(p + (size_t)(v + c) * PANEL, _mm512_loadu_ps(src));
            _mm512_store_ps(p + (size_t)(v + c) * PANEL + 16, _mm512_maskz_loadu_ps(0x7FFF, src + 16));
        }
    for (; v < n; v++) {
        const uint32_t st = dcz_lanes_window_start(v);
        const uint32_t left = st < cols ? cols - st : 0, take = left < DCZ_LANE_W ? left : DCZ_LANE_W;
        const uint32_t m = (1u << take) - 1;
        const float *src = x + (take ? st : 0);
        _mm512_store_ps(p + (size_t)v * PANEL, _mm512_maskz_loadu_ps((__mmask16)m, src));
        _mm512_store_ps(p + (size_t)v * PANEL + 16, _mm512_maskz_loadu_ps((__mmask16)(m >> 16), src + 16));
    }
    return p;
}

/* A slice's window lookup in the step's window (x0, x1; qx: its slots,
 * whose low five bits vpermt2ps reads) and codebook lookup (qw: its slots
 * shifted to the index byte), their product fused into A. A codebook of 16
 * values or fewer is looked up in one register (narrow: vpermps, one
 * source, reads the index's low four bits, the fifth being 0): the same
 * value as from two, by an instruction that costs less where a two-source
 * permute of 512 bits costs more than a one-source one (AMD's Zen 4). */
#define LANE_SLICE(A, qx, qw) \
    A = _mm512_fmadd_ps(narrow ? _mm512_permutexvar_ps(qw, cb0) : _mm512_permutex2var_ps(cb0, qw, cb1), \
                        _mm512_permutex2var_ps(x0, qx, x1), A)

/* Step t of a group into its sums a0 and a1. The slot vector is loaded once,
 * into a register: left to it, the compiler folds the load into each shift
 * that reads it, three more 64-byte loads a step (fc1 of LeNet-300-100:
 * 2.26 -> 1.78 us). */
#define LANE_STEP(a0, a1, t) do { \
    _mm_prefetch((const char *)(s->lslot + (size_t)(t) * DCZ_LANE_SLOTS) + SLOT_PREFETCH, _MM_HINT_NTA); \
    __m512i q = _mm512_load_si512((const void *)(s->lslot + (size_t)(t) * DCZ_LANE_SLOTS)); \
    __asm__("" : "+v"(q)); \
    const float *pw = panels + (size_t)s->lbase[t] * PANEL; \
    const __m512 x0 = _mm512_load_ps(pw), x1 = _mm512_load_ps(pw + 16); \
    LANE_SLICE(a0, q, _mm512_srli_epi32(q, 8)); \
    LANE_SLICE(a1, _mm512_srli_epi32(q, 16), _mm512_srli_epi32(q, 24)); \
} while (0)

/* Groups [g0, g1), two at a time: a row's sum takes its entries in order,
 * one fused multiply-add after the other, so a group alone waits on the
 * latency of two chains; the steps of two groups interleaved keep four in
 * flight, and each sum is the same. */
__attribute__((target("avx512f"), always_inline))
static inline void lanes_groups(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                                const dcz_act *act, const float *panels, float *y, __m512 cb0, __m512 cb1,
                                const int narrow)
{
    const dcz_act act_local = dcz_act_of(act);   /* read once (dcz_act_of) */
    act = &act_local;
    for (uint32_t g = g0; g < g1; g += 2) {
        const int pair = g + 1 < g1;
        const uint32_t r0 = g * DCZ_LANE_ROWS, r1 = r0 + DCZ_LANE_ROWS;
        const __mmask16 m = rows_mask(s->rows, r0), n = pair ? rows_mask(s->rows, r1) : 0;
        __m512 a0 = bias ? _mm512_maskz_loadu_ps(m, bias + r0) : _mm512_setzero_ps();
        __m512 b0 = bias && pair ? _mm512_maskz_loadu_ps(n, bias + r1) : _mm512_setzero_ps();
        __m512 a1 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
        uint32_t t = s->lstart[g], u = pair ? s->lstart[g + 1] : 0;
        const uint32_t tend = s->lstart[g + 1], uend = pair ? s->lstart[g + 2] : 0;
        for (; t < tend && u < uend; t++, u++) {
            LANE_STEP(a0, a1, t);
            LANE_STEP(b0, b1, u);
        }
        for (; t < tend; t++) LANE_STEP(a0, a1, t);
        for (; u < uend; u++) LANE_STEP(b0, b1, u);
        _mm512_mask_storeu_ps(y + r0, m, dcz_act__avx512(_mm512_add_ps(a0, a1), act));
        if (pair) _mm512_mask_storeu_ps(y + r1, n, dcz_act__avx512(_mm512_add_ps(b0, b1), act));
    }
}

__attribute__((target("avx512f")))
void dcz_spmv_lanes__avx512(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                            const dcz_act *act, const float *panels, float *y)
{
    const uint32_t k = s->k;
    const __m512 cb0 = _mm512_maskz_loadu_ps(k >= 16 ? 0xFFFF : (__mmask16)((1u << k) - 1),
                                             s->codebook);
    const __m512 cb1 = k > 16 ? _mm512_maskz_loadu_ps((__mmask16)((1u << (k - 16)) - 1),
                                                      s->codebook + 16)
                              : _mm512_setzero_ps();
    if (k <= 16) lanes_groups(s, g0, g1, bias, act, panels, y, cb0, cb1, 1);
    else lanes_groups(s, g0, g1, bias, act, panels, y, cb0, cb1, 0);
}

#endif /* DCZ_X86 */
