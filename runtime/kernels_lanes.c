/* kernels_lanes.c: the lane form of a sparse codebook matrix (model.h, "the
 * lane form"), its builder and its batch-1 kernels.
 *
 * Why: at batch 1 the column kernel (kernels_simd.c) adds each entry to its
 * row of y in memory, a scalar read-modify-write that costs a cycle or more
 * per entry whatever the vector width. Here a vector lane owns a row and
 * keeps its sum in a register; the input a lane needs comes from a window
 * of 15 (or 7) columns held in a register and looked up by a permute, so
 * nothing is gathered or scattered. The price is the empty slots of lanes
 * whose row has no entry in the window: the builder's greedy walk keeps
 * about half the slots full at 9% density (a third at 4%).
 *
 * dcz_spmv_lanes_ref walks the slots one by one in plain C: the
 * specification. dcz_spmv_lanes__avx512 does a step (64 slots) in four
 * window lookups, four codebook lookups, four multiplies and four adds.
 * Both sum each row in the references' order (bias, then products in
 * column order, not fused), so both give dcz_spmv_ref's bits; the vector
 * kernel adds w * 0 for an empty slot, which only changes the sign of a
 * zero sum.
 *
 * Checked by tests/unit/test_simd.c: both kernels against dcz_spmv_ref over
 * an edge-case grid, bit for bit, and the builder's bound.
 */
#include <string.h>

#include "runtime/model.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DCZ_X86 1
#endif

#define SLICES 4
#define LANES 16

/* bits of a slot's column offset for a codebook of k values */
static uint32_t lane_xbits(uint32_t k)
{
    return k <= 16 ? 4 : 3;
}

uint64_t dcz_lanes_bytes(uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k)
{
    if (k == 0 || k > 32 || cols > 65535 || nnz == 0) return 0;
    const uint64_t groups = ((uint64_t)rows + DCZ_LANE_ROWS - 1) / DCZ_LANE_ROWS;
    const uint64_t steps = DCZ_LANE_STEPS_MAX(nnz, rows);
    return (groups + 1) * 4 + steps * SLICES * 2 + steps * DCZ_LANE_ROWS;
}

/* A lane's place in its row of the row form: the next real entry e (e ==
 * end: none left) and its column. */
typedef struct lane {
    uint32_t e, end, col;
} lane;

/* Moves ln to the first real entry at or after ln->e, the column cursor
 * standing at cur before ln->e. */
static void lane_seek(const dcz_sparse *s, lane *ln, uint32_t cur)
{
    for (; ln->e < ln->end; ln->e++) {
        cur += s->step[ln->e];
        if (s->step[ln->e] != DCZ_STEP_FILLER) {
            ln->col = cur;
            return;
        }
    }
}

/* One step of a slice of 16 lanes: its window's base and each lane's slot
 * (slot[4 l]). Returns 0, writing an empty step, when no lane has entries
 * left. */
static int slice_step(const dcz_sparse *s, lane *ln, uint32_t xbits, uint16_t *base,
                      uint8_t *slot)
{
    const uint32_t w = (1u << xbits) - 1;
    uint32_t b = UINT32_MAX;
    for (int l = 0; l < LANES; l++)
        if (ln[l].e < ln[l].end && ln[l].col < b) b = ln[l].col;
    if (b == UINT32_MAX) {
        *base = 0;
        for (int l = 0; l < LANES; l++) slot[4 * l] = (uint8_t)w;
        return 0;
    }
    /* the window stays inside x; a matrix narrower than it reads from 0 */
    if (s->cols <= w) b = 0;
    else if (b > s->cols - w) b = s->cols - w;
    *base = (uint16_t)b;
    for (int l = 0; l < LANES; l++) {
        if (ln[l].e < ln[l].end && ln[l].col < b + w) {
            slot[4 * l] = (uint8_t)((ln[l].col - b) | (uint32_t)s->idx[ln[l].e] << xbits);
            ln[l].e++;
            lane_seek(s, &ln[l], ln[l].col);
        } else {
            slot[4 * l] = (uint8_t)w;
        }
    }
    return 1;
}

void dcz_lanes_build(dcz_sparse *s, uint32_t nnz, void *mem)
{
    s->lgroups = 0;
    if (!s->idx || dcz_lanes_bytes(s->rows, s->cols, nnz, s->k) == 0) return;
    const uint32_t groups = (s->rows + DCZ_LANE_ROWS - 1) / DCZ_LANE_ROWS;
    const uint64_t cap = DCZ_LANE_STEPS_MAX(nnz, s->rows);
    const uint32_t xbits = lane_xbits(s->k);
    uint32_t *start = mem;
    uint16_t *base = (uint16_t *)(start + groups + 1);
    uint8_t *slot = (uint8_t *)(base + cap * SLICES);
    uint64_t t = 0;
    for (uint32_t g = 0; g < groups; g++) {
        lane ln[DCZ_LANE_ROWS];
        for (uint32_t i = 0; i < DCZ_LANE_ROWS; i++) {
            const uint32_t r = g * DCZ_LANE_ROWS + i;
            ln[i].e = ln[i].end = 0;
            if (r < s->rows) {
                ln[i].e = s->row_ptr[r];
                ln[i].end = s->row_ptr[r + 1];
                lane_seek(s, &ln[i], 0);
            }
        }
        start[g] = (uint32_t)t;
        for (;;) {
            int left = 0;
            for (uint32_t i = 0; i < DCZ_LANE_ROWS; i++) left |= ln[i].e < ln[i].end;
            if (!left) break;
            if (t == cap) return; /* past the bound: no lane form */
            for (int sl = 0; sl < SLICES; sl++)
                slice_step(s, ln + LANES * sl, xbits, base + t * SLICES + sl,
                           slot + t * DCZ_LANE_ROWS + sl);
            t++;
        }
    }
    start[groups] = (uint32_t)t;
    s->lgroups = groups;
    s->lxbits = xbits;
    s->lstart = start;
    s->lbase = base;
    s->lslot = slot;
}

void dcz_spmv_lanes_ref(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                        const float *x, float *y)
{
    const uint32_t xbits = s->lxbits, w = (1u << xbits) - 1;
    for (uint32_t g = g0; g < g1; g++) {
        float acc[DCZ_LANE_ROWS];
        const uint32_t r0 = g * DCZ_LANE_ROWS;
        for (uint32_t i = 0; i < DCZ_LANE_ROWS; i++)
            acc[i] = bias && r0 + i < s->rows ? bias[r0 + i] : 0.0f;
        for (uint32_t t = s->lstart[g]; t < s->lstart[g + 1]; t++) {
            for (uint32_t sl = 0; sl < SLICES; sl++) {
                const uint32_t b = s->lbase[(size_t)t * SLICES + sl];
                for (uint32_t l = 0; l < LANES; l++) {
                    const uint32_t q = s->lslot[(size_t)t * DCZ_LANE_ROWS + 4 * l + sl];
                    if ((q & w) == w) continue;
                    acc[LANES * sl + l] += s->codebook[q >> xbits] * x[b + (q & w)];
                }
            }
        }
        for (uint32_t i = 0; i < DCZ_LANE_ROWS && r0 + i < s->rows; i++) y[r0 + i] = acc[i];
    }
}

#ifdef DCZ_X86

/* Slice sl's window lookup and codebook lookup for the slots in byte sl
 * of q's 32-bit lanes, times each other, added to A. xbits is a constant
 * at every call: 4, a codebook of 16 in cb0 and the offset in the slot's
 * low four bits (vpermps reads just those); 3, a codebook of 32 in cb0 and
 * cb1 (vpermt2ps reads five bits) and a three-bit offset. */
#define LANE_SLICE(A, sl) do { \
    const __m512i qs_ = (sl) ? _mm512_srli_epi32(q, 8 * (sl)) : q; \
    const __m512 xw_ = _mm512_maskz_loadu_ps(wmask, x + b[sl]); \
    __m512 xv_, wv_; \
    if (xbits == 4) { \
        xv_ = _mm512_permutexvar_ps(qs_, xw_); \
        wv_ = _mm512_permutexvar_ps(_mm512_srli_epi32(qs_, 4), cb0); \
    } else { \
        xv_ = _mm512_permutexvar_ps(_mm512_and_si512(qs_, seven), xw_); \
        wv_ = _mm512_permutex2var_ps(cb0, _mm512_srli_epi32(qs_, 3), cb1); \
    } \
    A = _mm512_add_ps(A, _mm512_mul_ps(wv_, xv_)); \
} while (0)

/* the lanes of rows [r0, r0 + 16) that exist */
static __mmask16 rows_mask(uint32_t rows, uint32_t r0)
{
    if (r0 >= rows) return 0;
    return rows - r0 >= LANES ? (__mmask16)0xFFFF : (__mmask16)((1u << (rows - r0)) - 1);
}

__attribute__((target("avx512f"), always_inline))
static inline void lanes_groups__avx512(const dcz_sparse *s, uint32_t g0, uint32_t g1,
                                        const float *bias, const float *x, float *y,
                                        const uint32_t xbits)
{
    const uint32_t w = (1u << xbits) - 1, k = s->k;
    /* the window's lanes 0 .. w - 1 that lie inside x; lane w reads 0 */
    uint32_t wm = (1u << w) - 1;
    if (s->cols < w) wm &= (1u << s->cols) - 1;
    const __mmask16 wmask = (__mmask16)wm;
    const __m512 cb0 = _mm512_maskz_loadu_ps(k >= 16 ? 0xFFFF : (__mmask16)((1u << k) - 1),
                                             s->codebook);
    const __m512 cb1 = k > 16 ? _mm512_maskz_loadu_ps((__mmask16)((1u << (k - 16)) - 1),
                                                      s->codebook + 16)
                              : _mm512_setzero_ps();
    const __m512i seven = _mm512_set1_epi32(7);
    for (uint32_t g = g0; g < g1; g++) {
        const uint32_t r0 = g * DCZ_LANE_ROWS;
        const __mmask16 m0 = rows_mask(s->rows, r0), m1 = rows_mask(s->rows, r0 + 16);
        const __mmask16 m2 = rows_mask(s->rows, r0 + 32), m3 = rows_mask(s->rows, r0 + 48);
        __m512 a0 = bias ? _mm512_maskz_loadu_ps(m0, bias + r0) : _mm512_setzero_ps();
        __m512 a1 = bias ? _mm512_maskz_loadu_ps(m1, bias + r0 + 16) : _mm512_setzero_ps();
        __m512 a2 = bias ? _mm512_maskz_loadu_ps(m2, bias + r0 + 32) : _mm512_setzero_ps();
        __m512 a3 = bias ? _mm512_maskz_loadu_ps(m3, bias + r0 + 48) : _mm512_setzero_ps();
        for (uint32_t t = s->lstart[g]; t < s->lstart[g + 1]; t++) {
            const __m512i q = _mm512_loadu_si512(s->lslot + (size_t)t * DCZ_LANE_ROWS);
            const uint16_t *b = s->lbase + (size_t)t * SLICES;
            LANE_SLICE(a0, 0);
            LANE_SLICE(a1, 1);
            LANE_SLICE(a2, 2);
            LANE_SLICE(a3, 3);
        }
        _mm512_mask_storeu_ps(y + r0, m0, a0);
        _mm512_mask_storeu_ps(y + r0 + 16, m1, a1);
        _mm512_mask_storeu_ps(y + r0 + 32, m2, a2);
        _mm512_mask_storeu_ps(y + r0 + 48, m3, a3);
    }
}

__attribute__((target("avx512f")))
void dcz_spmv_lanes__avx512(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                            const float *x, float *y)
{
    if (s->lxbits == 4) lanes_groups__avx512(s, g0, g1, bias, x, y, 4);
    else lanes_groups__avx512(s, g0, g1, bias, x, y, 3);
}

#endif /* DCZ_X86 */
