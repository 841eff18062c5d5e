/* kernels_qlanes.c: the integer lane form (qlanes.h, "the integer lane
 * form"), its builder, its specification and its AVX-512 and AVX2 kernels.
 *
 * Why: the 8-bit fully connected kernels of kernels_qspmm.c either gather
 * each entry's input (batch 1: 16 entries a step, a gather and a 32-bit
 * multiply each, then a sum across the lanes per row) or decode each entry
 * in scalar code per tile of samples. Here a lane owns a row and keeps its
 * sum in a register, as in the float lane form, and a step is three
 * instructions for 32 entries: a word permute (vpermw) of the window by
 * the slots' low bits, which are the column offsets, an arithmetic shift
 * of the slots that leaves their weights as 16-bit values, and a multiply-
 * add of pairs into the row sums (vpdpwssd with VNNI, else vpmaddwd and
 * vpaddd). The windows are the float form's, 31 columns.
 *
 * Where the CPU permutes bytes (VBMI) and multiply-adds byte quads (VNNI
 * vpdpbusd), the form of byte quads (qlanes.h) halves the steps again: a
 * step is a byte permute (vpermb) of a 64-column window and one vpdpbusd
 * for 64 slots, four entries a lane, the inputs read as x + 128 (unsigned
 * bytes, straight from one copy of the sample: aligned panels of each
 * window, as the pairs read, measured slower) and the offset taken out of
 * each row's starting sum. LeNet-300-100 int8 on an AMD EPYC (Zen 4), one
 * thread: batch 64 67.0 -> 43.8 us, batch 1 1.76 -> 1.42 us.
 *
 * Where the CPU has AVX2 but not AVX-512 (no word or byte permute across
 * a vector, no VNNI), the form of 8-row quads: a lane owns a row as
 * above, a step is two 16-byte shuffles (vpshufb) of a 32-column window,
 * one blend, vpmaddubsw and vpmaddwd by ones into 32-bit sums: 32 slots,
 * four entries a lane. vpmaddubsw multiplies unsigned bytes by signed
 * ones; inputs with a negative value are read as magnitudes, the weights
 * given their signs (vpabsb, vpsignb), two instructions a step that a
 * sample without negative inputs (after a ReLU) skips. On an AMD EPYC
 * (Zen 3), one thread, LeNet-300-100 int8 batch 1: 24.2 -> 2.8 us (the
 * scalar rows before); its fc1 (300 x 784, 8%) 19.9 -> 1.4-1.6 us. A step
 * takes about 4 cycles whatever its shuffles: it waits on its five loads
 * (this CPU ran about 1.3 loads of 32 bytes a cycle). 16-column windows
 * (one shuffle, no blend) need 1786 steps against 1092 and ran 5-20%
 * slower; windows at multiples of 8 columns read from panels by plain
 * loads, no faster.
 *
 * Samples: the kernel takes up to four samples at a time over the same
 * steps (the quads' kernel eight), the slots loaded and their weights
 * shifted out once for all; each sample has its own panels (copies of its
 * input, window by window, aligned). A batch of one alternates two sums,
 * so the multiply-adds of consecutive steps overlap.
 *
 * Checked by tests/unit/test_qkernels.c: dcz_qlanes_ref and dcz_qspmm8
 * with the form, bit for bit against dcz_qspmm_ref on the matrix grid
 * (8-bit weights, codebooks and per-entry values, fillers, batches across
 * and inside the kernel's four samples, inputs with negative values and
 * without), each form and variant called by name.
 */
#include <stdint.h>
#include <string.h>

#include "runtime/cpu/f32/lanes.h"
#include "runtime/cpu/q8/qlanes.h"
#include "runtime/model.h"

#if DCZ_BUILD_Q8_X86
#include <immintrin.h>
#define DCZ_X86 1
#endif

#define QL_LANES 16
#define Q8_LANES 8                /* rows of a slice of the 8-row quads */
#define Q8_SAMPLES 4              /* samples their kernel takes at a time */
#define QL_EMPTY DCZ_LANE_W      /* a slot's offset with no entry: the panel's 0 */
#define QL_COPIES DCZ_LANE_COPIES /* windows per DCZ_LANE_W columns */
#define QL_PANEL 32               /* int16 inputs of a panel: 64 bytes */
#define QL_SAMPLES 4              /* samples the vector kernel takes at a time */
#define QL8_SAMPLES 8             /* the same, of the byte quads' kernel */

static uint64_t slices_of(uint32_t rows, dcz_qlane_form form)
{
    return ((uint64_t)rows + DCZ_QLANE_ROWS(form) - 1) / DCZ_QLANE_ROWS(form);
}

static uint32_t panels_of(uint32_t cols)
{
    return cols ? ((cols - 1) / DCZ_LANE_W + 1) * QL_COPIES : 0;
}

/* Words a step's slots take in each form. */
static uint32_t step_words(dcz_qlane_form form)
{
    return form == DCZ_QLANE_PAIRS ? QL_LANES : 2 * DCZ_QLANE_ROWS(form);
}

uint64_t dcz_qlanes_bytes(uint32_t rows, uint32_t cols, uint64_t nnz)
{
    if (nnz == 0 || rows == 0 || cols == 0 || cols > 65535) return 0;
    uint64_t most = 0;
    for (int f = 0; f < DCZ_QLANE_FORMS; f++) {   /* starts, windows, slots, the quads' row offsets */
        const dcz_qlane_form form = (dcz_qlane_form)f;
        const uint64_t cap = DCZ_QLANE_STEPS_MAX(nnz, rows, form), slices = slices_of(rows, form);
        const uint64_t n = (slices + 1) * 4 + cap * 2 + 63 + cap * step_words(form) * 4 +
                           (form == DCZ_QLANE_QUADS ? slices * QL_LANES * 4 : 0);
        if (n > most) most = n;
    }
    return most;
}

/* A lane's place in its row: the next real entry e (e == end: none left)
 * and its column. */
typedef struct qlane {
    uint32_t row, e, end, col;
} qlane;

/* The windows of each form: the first column of window v, the latest
 * window to start at or before column b, and the columns of one. */
static uint32_t window_start(dcz_qlane_form form, uint32_t v)
{
    return form == DCZ_QLANE_QUADS ? v * DCZ_QLANE8_STRIDE : form == DCZ_QLANE_QUADS8 ? v : dcz_lanes_window_start(v);
}
static uint32_t window_of(dcz_qlane_form form, uint32_t b)
{
    return form == DCZ_QLANE_QUADS ? b / DCZ_QLANE8_STRIDE : form == DCZ_QLANE_QUADS8 ? b : dcz_lanes_window_of(b);
}
static uint32_t window_width(dcz_qlane_form form)
{
    return form == DCZ_QLANE_QUADS ? DCZ_QLANE8_W : form == DCZ_QLANE_QUADS8 ? DCZ_QLANE_Q8_W : DCZ_LANE_W;
}

/* Takes ln's next entry if it lies in the window of width columns from
 * start: its column offset in the window to *off and weight to *w;
 * 0 (nothing taken) otherwise. */
static int qlane_take(const dcz_qsparse *s, qlane *ln, uint32_t start, uint32_t width, uint32_t *off, int32_t *w)
{
    if (ln->e == ln->end || ln->col >= start + width) return 0;
    *off = ln->col - start;
    *w = dcz_qsparse_weight(s, ln->row, ln->e);
    ln->e++;
    dcz_steps_seek(s->step, &ln->e, ln->end, ln->col, &ln->col);
    return 1;
}

/* Lane ln's slots of a step in the window from start: the pair's word
 * (two 16-bit slots, (column - start) | weight << 8, else QL_EMPTY), or
 * the quads' two words (offsets, weights: a byte each, 0 where none). */
static void qlane_slots(const dcz_qsparse *s, qlane *ln, uint32_t start, dcz_qlane_form form, uint32_t *word,
                        uint32_t *weights)
{
    const int bytes = form != DCZ_QLANE_PAIRS;
    uint32_t off;
    int32_t w;
    *word = 0;
    *weights = 0;
    for (unsigned h = 0; h < (bytes ? 4u : 2u); h++) {
        if (bytes) {
            if (!qlane_take(s, ln, start, window_width(form), &off, &w)) return;
            *word |= off << (8 * h);
            *weights |= (uint32_t)(uint8_t)(int8_t)w << (8 * h);
            continue;
        }
        const uint32_t slot = qlane_take(s, ln, start, window_width(form), &off, &w)
                                  ? off | (uint32_t)(uint8_t)(int8_t)w << 8 : QL_EMPTY;
        *word |= slot << (16 * h);
    }
}

int dcz_qlanes_build_form(dcz_qsparse *s, uint64_t nnz, void *mem, dcz_qlane_form form)
{
    s->lslices = 0;
    if (!mem || dcz_qlanes_bytes(s->rows, s->cols, nnz) == 0) return 0;
    for (uint32_t r = 0; r < s->rows; r++)
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
            const int32_t w = dcz_qsparse_weight(s, r, e);
            if (w > 127 || w < -127) return 0;
        }
    const uint32_t lanes = DCZ_QLANE_ROWS(form), slices = (uint32_t)slices_of(s->rows, form), words = step_words(form);
    const uint64_t cap = DCZ_QLANE_STEPS_MAX(nnz, s->rows, form);
    const int corrected = form == DCZ_QLANE_QUADS;
    uint32_t *start = mem;
    uint16_t *base = (uint16_t *)(start + slices + 1);
    uint32_t *slot = (uint32_t *)(((uintptr_t)(base + cap) + 63) & ~(uintptr_t)63);
    int32_t *corr = (int32_t *)(slot + cap * words);
    uint64_t t = 0;
    for (uint32_t sl = 0; sl < slices; sl++) {
        qlane ln[QL_LANES];
        for (uint32_t l = 0; l < lanes; l++) {
            ln[l].row = sl * lanes + l;
            dcz_steps_row(s->row_ptr, s->step, s->rows, ln[l].row, &ln[l].e, &ln[l].end, &ln[l].col);
            int64_t sum = 0;   /* of the real entries (no fillers): within 127 * 65535 */
            for (uint32_t e = ln[l].e; corrected && e < ln[l].end; e++)
                if (s->step[e] != DCZ_STEP_FILLER) sum += dcz_qsparse_weight(s, ln[l].row, e);
            if (corrected) corr[sl * QL_LANES + l] = (int32_t)(-128 * sum);
        }
        start[sl] = (uint32_t)t;
        for (;;) {
            uint32_t b = UINT32_MAX;
            for (uint32_t l = 0; l < lanes; l++)
                if (ln[l].e < ln[l].end && ln[l].col < b) b = ln[l].col;
            if (b == UINT32_MAX) break;
            if (t == cap) return 0; /* past the bound: no lane form */
            const uint32_t v = window_of(form, b), st = window_start(form, v);
            base[t] = (uint16_t)v;
            for (uint32_t l = 0; l < lanes; l++)
                qlane_slots(s, &ln[l], st, form, &slot[t * words + l],
                            &slot[t * words + (form != DCZ_QLANE_PAIRS ? lanes + l : l)]);
            t++;
        }
    }
    start[slices] = (uint32_t)t;
    s->lslices = slices;
    s->lform = (uint32_t)form;
    s->lstart = start;
    s->lbase = base;
    s->lslot = slot;
    s->lcorr = corrected ? corr : NULL;
    return 1;
}

uint32_t dcz_qlanes_window_width(const dcz_qsparse *s) { return window_width((dcz_qlane_form)s->lform); }

/* Nonzero where this build and CPU run the kernel of byte quads. */
static int quads_run(void)
{
#ifdef DCZ_X86
    return dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw &&
           dcz_cpu_features()->avx512vl && dcz_cpu_features()->avx512vbmi && dcz_cpu_features()->avx512vnni;
#else
    return 0;
#endif
}

/* Nonzero where this build and CPU run the kernels of pairs, and of the
 * 8-row quads. */
static int pairs_run(void)
{
#ifdef DCZ_X86
    return dcz_isa_supported(DCZ_ISA_AVX512) && dcz_cpu_features()->avx512bw;
#else
    return 0;
#endif
}

static int quads8_run(void)
{
#ifdef DCZ_X86
    return dcz_isa_supported(DCZ_ISA_AVX2);
#else
    return 0;
#endif
}

int dcz_qlanes_build(dcz_qsparse *s, uint64_t nnz, void *mem)
{
    if (quads_run() && dcz_qlanes_build_form(s, nnz, mem, DCZ_QLANE_QUADS)) return 1;
    if (pairs_run()) return dcz_qlanes_build_form(s, nnz, mem, DCZ_QLANE_PAIRS);
    return quads8_run() && dcz_qlanes_build_form(s, nnz, mem, DCZ_QLANE_QUADS8);
}

void dcz_qlanes_ref(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, int64_t *acc)
{
    const dcz_qlane_form form = (dcz_qlane_form)s->lform;
    const int bytes = form != DCZ_QLANE_PAIRS;
    const uint32_t words = step_words(form), lanes = DCZ_QLANE_ROWS(form);
    for (size_t b = 0; b < batch; b++) {
        const dcz_q *xb = x + b * s->cols;
        for (uint32_t sl = 0; sl < s->lslices; sl++) {
            int64_t sum[QL_LANES];
            for (uint32_t l = 0; l < lanes; l++) {
                const uint32_t r = sl * lanes + l;
                sum[l] = bias && r < s->rows ? bias[r] : 0;
            }
            for (uint32_t t = s->lstart[sl]; t < s->lstart[sl + 1]; t++) {
                const uint32_t st = window_start(form, s->lbase[t]);
                const uint32_t *word = s->lslot + (size_t)t * words;
                for (uint32_t l = 0; l < lanes; l++)
                    for (unsigned h = 0; h < (bytes ? 4u : 2u); h++) {
                        uint32_t off;
                        int32_t w;
                        if (bytes) {
                            off = word[l] >> (8 * h) & 0xFF;
                            w = (int8_t)(uint8_t)(word[lanes + l] >> (8 * h));
                        } else {
                            const uint16_t q = (uint16_t)(word[l] >> (16 * h));
                            off = q & 0xFF;
                            w = off == QL_EMPTY ? 0 : (int8_t)(q >> 8);
                        }
                        if (w) sum[l] += (int64_t)w * xb[st + off];
                    }
            }
            for (uint32_t l = 0; l < lanes && sl * lanes + l < s->rows; l++)
                acc[b * s->rows + sl * lanes + l] = sum[l];
        }
    }
}

/* Bytes of one sample's inputs as the quads' kernel reads them: cols
 * bytes, then a window's worth that the last windows may read past them. */
static uint64_t quad_input_bytes(uint32_t cols)
{
    return ((uint64_t)cols + DCZ_QLANE8_W + 63) & ~(uint64_t)63;
}

/* The same for the 8-row quads: cols signed bytes, then a window's worth
 * of zeros. */
static uint64_t q8_input_bytes(uint32_t cols)
{
    return ((uint64_t)cols + DCZ_QLANE_Q8_W + 31) & ~(uint64_t)31;
}

uint64_t dcz_qlanes_scratch_bytes(uint32_t cols)
{
    const uint64_t pairs = (uint64_t)panels_of(cols) * QL_PANEL * sizeof(dcz_q) * QL_SAMPLES,
                   quads = quad_input_bytes(cols) * QL8_SAMPLES, quads8 = q8_input_bytes(cols) * Q8_SAMPLES;
    const uint64_t most = pairs > quads ? pairs : quads;
    return (most > quads8 ? most : quads8) + 64;
}

#ifdef DCZ_X86

/* The panels of sample x (cols inputs) at p: panel v holds the window's 31
 * inputs (0 past the last column) and a 0. */
__attribute__((target("avx512f,avx512bw")))
static void qlanes_panels__avx512(const dcz_q *x, uint32_t cols, dcz_q *p)
{
    /* window v = 3 u + c starts at 31 u + 0, 10 or 20 (dcz_lanes_window_start);
     * whole loads with the last word cleared while 32 inputs remain */
    const uint32_t n = panels_of(cols);
    const __mmask32 first31 = 0x7FFFFFFF;
    uint32_t v = 0, u = 0;
    for (; u * DCZ_LANE_W + 2 * DCZ_LANE_W / QL_COPIES + QL_PANEL <= cols; u++, v += QL_COPIES)
        for (uint32_t c = 0; c < QL_COPIES; c++) {
            const dcz_q *src = x + u * DCZ_LANE_W + c * DCZ_LANE_W / QL_COPIES;
            _mm512_store_si512((void *)(p + (size_t)(v + c) * QL_PANEL), _mm512_maskz_mov_epi16(first31, _mm512_loadu_si512((const void *)src)));
        }
    for (; v < n; v++) {
        const uint32_t st = dcz_lanes_window_start(v);
        const uint32_t left = st < cols ? cols - st : 0, take = left < DCZ_LANE_W ? left : DCZ_LANE_W;
        const __m512i w = _mm512_maskz_loadu_epi16((__mmask32)((1u << take) - 1), x + (take ? st : 0));
        _mm512_store_si512((void *)(p + (size_t)v * QL_PANEL), w);
    }
}

/* Slice sums (int32 lanes) to acc (int64) for the rows that exist. */
__attribute__((target("avx512f")))
static inline void qlanes_store(__m512i sum, uint32_t rows, uint32_t r0, int64_t *acc)
{
    const uint32_t n = rows - r0 < QL_LANES ? rows - r0 : QL_LANES;
    const __mmask8 lo = (__mmask8)(n >= 8 ? 0xFF : (1u << n) - 1), hi = (__mmask8)(n > 8 ? (1u << (n - 8)) - 1 : 0);
    _mm512_mask_storeu_epi64(acc + r0, lo, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(sum)));
    _mm512_mask_storeu_epi64(acc + r0 + 8, hi, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(sum, 1)));
}

/* a + the pair products of x and w in one VNNI vpdpwssd (b64 LeNet-300-100
 * fc1: 92 -> 82 us against vpmaddwd and vpaddd). Written as an instruction
 * because the kernel's body is shared with the variant for CPUs without
 * VNNI, which must not be compiled for it (GCC would fuse multiply-adds). */
__attribute__((target("avx512f"), always_inline))
static inline __m512i dpwssd(__m512i a, __m512i x, __m512i w)
{
    __asm__("vpdpwssd %2, %1, %0" : "+v"(a) : "v"(x), "v"(w));
    return a;
}

/* One step of sample j: its window permuted by the slots q, times the
 * weights wq, added pair by pair into A. */
#define QL_STEP(A, j) do { \
    const __m512i xv_ = _mm512_permutexvar_epi16( \
        q, _mm512_load_si512((const void *)(pan[j] + (size_t)s->lbase[t] * QL_PANEL))); \
    A = VNNI ? dpwssd(A, xv_, wq) : _mm512_add_epi32(A, _mm512_madd_epi16(xv_, wq)); \
} while (0)

/* The rows of s on NB samples, their panels at pan[0 .. NB - 1], sums to
 * acc[j * stride ..]. */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void qlanes_samples__avx512(const dcz_qsparse *s, const int64_t *bias, const dcz_q *const *pan,
                                          int64_t *acc, size_t stride, const int NB, const int VNNI)
{
    for (uint32_t sl = 0; sl < s->lslices; sl++) {
        const uint32_t r0 = sl * QL_LANES;
        int32_t b32[QL_LANES];
        for (uint32_t l = 0; l < QL_LANES; l++) b32[l] = bias && r0 + l < s->rows ? (int32_t)bias[r0 + l] : 0;
        const __m512i b0 = _mm512_loadu_si512((const void *)b32), zero = _mm512_setzero_si512();
        __m512i a0 = b0, a1 = b0, a2 = b0, a3 = b0, e0 = zero;
        uint32_t t = s->lstart[sl];
        const uint32_t t1 = s->lstart[sl + 1];
        if (NB == 1)
            for (; t + 1 < t1; t++) {
                __m512i q = _mm512_load_si512((const void *)(s->lslot + (size_t)t * QL_LANES));
                __m512i wq = _mm512_srai_epi16(q, 8);
                QL_STEP(a0, 0);
                t++;
                q = _mm512_load_si512((const void *)(s->lslot + (size_t)t * QL_LANES));
                wq = _mm512_srai_epi16(q, 8);
                QL_STEP(e0, 0);
            }
        for (; t < t1; t++) {
            const __m512i q = _mm512_load_si512((const void *)(s->lslot + (size_t)t * QL_LANES));
            const __m512i wq = _mm512_srai_epi16(q, 8);
            QL_STEP(a0, 0);
            if (NB > 1) QL_STEP(a1, 1);
            if (NB > 2) QL_STEP(a2, 2);
            if (NB > 3) QL_STEP(a3, 3);
        }
        if (NB == 1) a0 = _mm512_add_epi32(a0, e0);
        qlanes_store(a0, s->rows, r0, acc);
        if (NB > 1) qlanes_store(a1, s->rows, r0, acc + stride);
        if (NB > 2) qlanes_store(a2, s->rows, r0, acc + 2 * stride);
        if (NB > 3) qlanes_store(a3, s->rows, r0, acc + 3 * stride);
    }
}

__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void qlanes_batch__avx512(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                                        void *scratch, int64_t *acc, const int VNNI)
{
    dcz_q *p = (dcz_q *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    const size_t per = (size_t)panels_of(s->cols) * QL_PANEL;
    const dcz_q *pan[QL_SAMPLES];
    for (size_t b0 = 0; b0 < batch; b0 += QL_SAMPLES) {
        const size_t nb = batch - b0 < QL_SAMPLES ? batch - b0 : QL_SAMPLES;
        for (size_t j = 0; j < nb; j++) {
            qlanes_panels__avx512(x + (b0 + j) * s->cols, s->cols, p + j * per);
            pan[j] = p + j * per;
        }
        int64_t *a = acc + b0 * s->rows;
        if (nb == 4) qlanes_samples__avx512(s, bias, pan, a, s->rows, 4, VNNI);
        else if (nb == 3) qlanes_samples__avx512(s, bias, pan, a, s->rows, 3, VNNI);
        else if (nb == 2) qlanes_samples__avx512(s, bias, pan, a, s->rows, 2, VNNI);
        else qlanes_samples__avx512(s, bias, pan, a, s->rows, 1, VNNI);
    }
}

__attribute__((target("avx512f,avx512bw")))
static void qlanes__avx512vnni(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                               void *scratch, int64_t *acc)
{
    qlanes_batch__avx512(s, bias, x, batch, scratch, acc, 1);
}

__attribute__((target("avx512f,avx512bw")))
static void qlanes__avx512(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                           void *scratch, int64_t *acc)
{
    qlanes_batch__avx512(s, bias, x, batch, scratch, acc, 0);
}

/* Sample x (cols inputs) as the quads' kernel reads it: x + 128 as
 * unsigned bytes at p, then DCZ_QLANE8_W zeros. */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void quad_inputs__avx512(const dcz_q *x, uint32_t cols, uint8_t *p)
{
    const __m512i offset = _mm512_set1_epi16(128);
    for (uint32_t i = 0; i < cols; i += 32) {
        const __mmask32 m = cols - i >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << (cols - i)) - 1);
        const __m512i v = _mm512_add_epi16(_mm512_maskz_loadu_epi16(m, x + i), offset);
        _mm256_mask_storeu_epi8(p + i, m, _mm512_cvtepi16_epi8(v));
    }
    _mm512_storeu_si512((void *)(p + cols), _mm512_setzero_si512());
}

/* One step of sample j in the quads' form: its window permuted by the
 * offsets q, times the weights wq, added quad by quad into A. */
#define QL8_STEP(A, j) \
    A = _mm512_dpbusd_epi32(A, _mm512_permutexvar_epi8(q, _mm512_loadu_si512((const void *)(in[j] + (size_t)s->lbase[t] * DCZ_QLANE8_STRIDE))), wq)

/* The rows of s's quads on NB samples, their inputs at in[0 .. NB - 1],
 * sums to acc[j * stride ..]. Eight samples at a time load each step's
 * offsets and weights half as often as four (LeNet-300-100 int8, batch 64:
 * 47.1 -> 43.8 us). */
__attribute__((target("avx512f,avx512bw,avx512vbmi,avx512vnni"), always_inline))
static inline void quads_samples(const dcz_qsparse *s, const int64_t *bias, const uint8_t *const *in, int64_t *acc,
                                 size_t stride, const int NB)
{
    for (uint32_t sl = 0; sl < s->lslices; sl++) {
        const uint32_t r0 = sl * QL_LANES;
        uint32_t b32[QL_LANES];   /* modulo 2^32: the sum is exact there */
        for (uint32_t l = 0; l < QL_LANES; l++)
            b32[l] = (bias && r0 + l < s->rows ? (uint32_t)bias[r0 + l] : 0) + (uint32_t)s->lcorr[r0 + l];
        const __m512i b0 = _mm512_loadu_si512((const void *)b32), zero = _mm512_setzero_si512();
        __m512i a[QL8_SAMPLES], e0 = zero;   /* registers: NB is a constant, the loops unrolled */
        for (int j = 0; j < NB; j++) a[j] = b0;
        uint32_t t = s->lstart[sl];
        const uint32_t t1 = s->lstart[sl + 1];
        const uint32_t *word = s->lslot + (size_t)t * 2 * QL_LANES;
        if (NB == 1)
            for (; t + 1 < t1; t++, word += 2 * QL_LANES) {
                __m512i q = _mm512_load_si512((const void *)word), wq = _mm512_load_si512((const void *)(word + QL_LANES));
                QL8_STEP(a[0], 0);
                t++;
                word += 2 * QL_LANES;
                q = _mm512_load_si512((const void *)word);
                wq = _mm512_load_si512((const void *)(word + QL_LANES));
                QL8_STEP(e0, 0);
            }
        for (; t < t1; t++, word += 2 * QL_LANES) {
            const __m512i q = _mm512_load_si512((const void *)word), wq = _mm512_load_si512((const void *)(word + QL_LANES));
#pragma GCC unroll 8
            for (int j = 0; j < NB; j++) QL8_STEP(a[j], j);
        }
        if (NB == 1) a[0] = _mm512_add_epi32(a[0], e0);
        for (int j = 0; j < NB; j++) qlanes_store(a[j], s->rows, r0, acc + (size_t)j * stride);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni")))
static void quads__avx512vbmi(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                              void *scratch, int64_t *acc)
{
    uint8_t *p = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    const size_t per = (size_t)quad_input_bytes(s->cols);
    const uint8_t *in[QL8_SAMPLES];
    for (size_t b0 = 0, nb; b0 < batch; b0 += nb) {
        nb = batch - b0 >= QL8_SAMPLES ? QL8_SAMPLES : batch - b0 >= 4 ? 4 : batch - b0;
        for (size_t j = 0; j < nb; j++) {
            quad_inputs__avx512(x + (b0 + j) * s->cols, s->cols, p + j * per);
            in[j] = p + j * per;
        }
        int64_t *a = acc + b0 * s->rows;
        if (nb == 8) quads_samples(s, bias, in, a, s->rows, 8);
        else if (nb == 4) quads_samples(s, bias, in, a, s->rows, 4);
        else if (nb == 3) quads_samples(s, bias, in, a, s->rows, 3);
        else if (nb == 2) quads_samples(s, bias, in, a, s->rows, 2);
        else quads_samples(s, bias, in, a, s->rows, 1);
    }
}

/* Sample x (cols inputs) as the 8-row quads' kernel reads it: signed
 * bytes at p (an 8-bit scheme's inputs lie within +-127: the packing
 * keeps them), then DCZ_QLANE_Q8_W zeros. Returns nonzero when an input
 * is negative. */
__attribute__((target("avx2")))
static int q8_inputs__avx2(const dcz_q *x, uint32_t cols, int8_t *p)
{
    __m256i any = _mm256_setzero_si256();
    uint32_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        const __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)(x + i));
        const __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(x + i + 16));
        const __m256i v = _mm256_permute4x64_epi64(_mm256_packs_epi16(lo, hi), 0xD8);
        any = _mm256_or_si256(any, v);
        _mm256_storeu_si256((__m256i *)(void *)(p + i), v);
    }
    int neg = !_mm256_testz_si256(any, _mm256_set1_epi8((char)0x80));
    for (; i < cols; i++) {
        p[i] = (int8_t)x[i];
        neg |= x[i] < 0;
    }
    memset(p + cols, 0, DCZ_QLANE_Q8_W);
    return neg;
}

/* One step of sample j in the 8-row quads: the window from column COL
 * shuffled by the offsets q; where inputs may be negative, their
 * magnitudes times the weights given their signs (vpsignb), else the
 * inputs times the weights; byte pairs (vpmaddubsw: within 2 x 128 x 127),
 * then quads (vpmaddwd by ones) added into A. */
#define Q8_STEP(A, j, COL) do { \
    const int8_t *w_ = in[j] + (COL); \
    __m256i xv_ = _mm256_blendv_epi8( \
        _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)w_)), q), \
        _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(w_ + 16))), q), \
        _mm256_slli_epi16(q, 3)); \
    __m256i wv_ = wq; \
    if (SIGNED) { \
        wv_ = _mm256_sign_epi8(wq, xv_); \
        xv_ = _mm256_abs_epi8(xv_); \
    } \
    A = _mm256_add_epi32(A, _mm256_madd_epi16(_mm256_maddubs_epi16(xv_, wv_), ones)); \
} while (0)

/* Slice sums (int32 lanes, exact) plus the bias to acc for the rows that
 * exist. */
__attribute__((target("avx2")))
static inline void q8_store(__m256i sum, const int64_t *bias, uint32_t rows, uint32_t r0, int64_t *acc)
{
    int32_t v[Q8_LANES];
    _mm256_storeu_si256((__m256i *)(void *)v, sum);
    for (uint32_t l = 0; l < Q8_LANES && r0 + l < rows; l++) acc[r0 + l] = (int64_t)v[l] + (bias ? bias[r0 + l] : 0);
}

/* The rows of s's 8-row quads on NB samples, their inputs at in[0 ..
 * NB - 1], sums to acc[j * stride ..]; SIGNED where an input is negative.
 * A batch of one alternates two sums, so consecutive steps overlap. */
__attribute__((target("avx2"), always_inline))
static inline void q8_samples(const dcz_qsparse *s, const int64_t *bias, const int8_t *const *in, int64_t *acc,
                              size_t stride, const int NB, const int SIGNED)
{
    const __m256i ones = _mm256_set1_epi16(1), zero = _mm256_setzero_si256();
    for (uint32_t sl = 0; sl < s->lslices; sl++) {
        __m256i a[Q8_SAMPLES], e0 = zero;   /* registers: NB is a constant, the loops unrolled */
        for (int j = 0; j < NB; j++) a[j] = zero;
        uint32_t t = s->lstart[sl];
        const uint32_t t1 = s->lstart[sl + 1];
        const uint32_t *word = s->lslot + (size_t)t * 2 * Q8_LANES;
        if (NB == 1)
            for (; t + 1 < t1; t += 2, word += 4 * Q8_LANES) {
                __m256i q = _mm256_load_si256((const __m256i *)(const void *)word);
                __m256i wq = _mm256_load_si256((const __m256i *)(const void *)(word + Q8_LANES));
                Q8_STEP(a[0], 0, s->lbase[t]);
                q = _mm256_load_si256((const __m256i *)(const void *)(word + 2 * Q8_LANES));
                wq = _mm256_load_si256((const __m256i *)(const void *)(word + 3 * Q8_LANES));
                Q8_STEP(e0, 0, s->lbase[t + 1]);
            }
        for (; t < t1; t++, word += 2 * Q8_LANES) {
            const __m256i q = _mm256_load_si256((const __m256i *)(const void *)word);
            const __m256i wq = _mm256_load_si256((const __m256i *)(const void *)(word + Q8_LANES));
#pragma GCC unroll 4
            for (int j = 0; j < NB; j++) Q8_STEP(a[j], j, s->lbase[t]);
        }
        if (NB == 1) a[0] = _mm256_add_epi32(a[0], e0);
        for (int j = 0; j < NB; j++) q8_store(a[j], bias, s->rows, sl * Q8_LANES, acc + (size_t)j * stride);
    }
}

__attribute__((target("avx2")))
static void quads8__avx2(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, void *scratch,
                         int64_t *acc)
{
    int8_t *p = (int8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    const size_t per = (size_t)q8_input_bytes(s->cols);
    const int8_t *in[Q8_SAMPLES];
    for (size_t b0 = 0, nb; b0 < batch; b0 += nb) {
        nb = batch - b0 < Q8_SAMPLES ? batch - b0 : Q8_SAMPLES;
        int neg = 0;
        for (size_t j = 0; j < nb; j++) {
            neg |= q8_inputs__avx2(x + (b0 + j) * s->cols, s->cols, p + j * per);
            in[j] = p + j * per;
        }
        int64_t *a = acc + b0 * s->rows;
        if (nb == 4) neg ? q8_samples(s, bias, in, a, s->rows, 4, 1) : q8_samples(s, bias, in, a, s->rows, 4, 0);
        else if (nb == 3) neg ? q8_samples(s, bias, in, a, s->rows, 3, 1) : q8_samples(s, bias, in, a, s->rows, 3, 0);
        else if (nb == 2) neg ? q8_samples(s, bias, in, a, s->rows, 2, 1) : q8_samples(s, bias, in, a, s->rows, 2, 0);
        else neg ? q8_samples(s, bias, in, a, s->rows, 1, 1) : q8_samples(s, bias, in, a, s->rows, 1, 0);
    }
}

#endif /* DCZ_X86 */

int dcz_qlanes_runs(void) { return quads_run() || pairs_run() || quads8_run(); }

const char *dcz_qlanes_variant(const dcz_qsparse *s)
{
    if (s->lslices && s->lform == DCZ_QLANE_QUADS) return quads_run() ? "avx512vbmi byte quads" : NULL;
    if (s->lslices && s->lform == DCZ_QLANE_QUADS8) return quads8_run() ? "avx2 byte quads" : NULL;
#ifdef DCZ_X86
    if (pairs_run()) return dcz_cpu_features()->avx512vnni ? "avx512vnni" : "avx512bw";
#endif
    return NULL;
}

int dcz_qlanes_run_vnni(int vnni, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                        void *scratch, int64_t *acc)
{
    if (!s->lslices || !dcz_qlanes_variant(s)) return 0;
#ifdef DCZ_X86
    if (s->lform == DCZ_QLANE_QUADS8) {   /* one variant, without VNNI */
        if (vnni > 0) return 0;
        quads8__avx2(s, bias, x, batch, scratch, acc);
        return 1;
    }
    const int has = dcz_cpu_features()->avx512vnni != 0;
    if (vnni < 0) vnni = has;
    if (vnni && !has) return 0;
    if (s->lform == DCZ_QLANE_QUADS) {
        if (!vnni) return 0;
        quads__avx512vbmi(s, bias, x, batch, scratch, acc);
    } else if (vnni) qlanes__avx512vnni(s, bias, x, batch, scratch, acc);
    else qlanes__avx512(s, bias, x, batch, scratch, acc);
    return 1;
#else
    (void)vnni; (void)bias; (void)x; (void)batch; (void)scratch; (void)acc;
    return 0;
#endif
}

int dcz_qlanes_run(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, void *scratch,
                   int64_t *acc)
{
    return dcz_qlanes_run_vnni(-1, s, bias, x, batch, scratch, acc);
}
