/* lanes.h: the lane forms of a sparse fully connected codebook layer, for
 * batch 1 without scatter: the 16-row form (kernels_lanes.c, AVX-512) and
 * the 8-row one (kernels_lanes8.c, AVX2), their builders, costs and
 * kernels, and the windows the integer lane form (cpu/q8/qlanes.h) shares.
 * The execution form they extend is model.h's dcz_sparse.
 *
 * Checked by tests/unit/test_simd.c (each kernel against its scalar
 * specification, the forms against the references).
 */
#ifndef DCZ_RUNTIME_CPU_F32_LANES_H
#define DCZ_RUNTIME_CPU_F32_LANES_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

/* ---- the lane form (kernels_lanes.c) ---------------------------------------
 * Batch 1 without scatter: sixteen rows in the lanes of one vector, each
 * lane summing its own row, the input read from a window of it held in
 * registers. For fully connected codebook layers of at most 32 values.
 *
 * The rows are cut into groups of DCZ_LANE_ROWS (16) consecutive rows,
 * lane l being row 16 g + l. A group is a sequence of steps. In a step,
 * the group reads a window of DCZ_LANE_W = 31 columns, and each lane two
 * 16-bit slots, one a slice: its row's next two entries whose columns lie
 * in the window, each as (column - start) | codebook index << 8, else 31,
 * "no entry" (index 0). The windows start every 10 or 11 columns: window v
 * covers columns dcz_lanes_window_start(v) .. + 30 (the vector kernel reads
 * it as one aligned panel of 32 inputs whose last is 0). A row's entries
 * come in column order; slice 0 sums the bias and each step's first entry,
 * slice 1 each step's second, each product fused into its sum, and the row
 * is the two sums added.
 *
 * Steps of a group (dcz_lanes_build, a greedy walk): the window is the
 * latest to start at or before the smallest column among the 16 rows'
 * next entries; every row takes its next entries that lie in it, two at
 * most. Step t of the layer: lbase[t] its window, and lslot[32 t + 2 l + s]
 * the slot of lane l in slice s, so one 64-byte vector holds both slices'
 * slots as the two halves of its 32-bit lanes, and a step loads that
 * vector and one panel (kernels_lanes.c: what a step costs).
 *
 * The form is built where it pays: at most 32 codebook values, at most
 * 65535 columns, and no more steps than DCZ_LANE_STEPS_MAX allows (a
 * quarter of the slots filled); dcz_spmv_pick chooses it or the column
 * kernel per call from their measured costs. The integer lane form
 * (cpu/q8/qlanes.h) has the same windows.
 */
#define DCZ_LANE_ROWS 16
#define DCZ_LANE_SLOTS 32   /* slots of a step: two per row */
#define DCZ_LANE_W 31
/* Steps a matrix of nnz entries may take, with rows rows. */
#define DCZ_LANE_STEPS_MAX(nnz, rows) ((uint64_t)(nnz) / 8 + ((uint64_t)(rows) + 15) / 16)
/* The lane form a load builds on this CPU, whose vector kernel it runs:
 * DCZ_LANE_ROWS (AVX-512), DCZ_LANE8_ROWS (AVX2 and FMA: "the 8-row lane
 * form" below), or 0. The functions below take a form by its rows a group,
 * lrows, and run the one s holds (s->lrows). */
uint32_t dcz_lanes_rows(void);
/* Bytes of lane form lrows of a rows x cols codebook matrix of nnz
 * entries and k values (its most: the steps' bound), 0 when it is not
 * built. */
uint64_t dcz_lanes_bytes(uint32_t lrows, uint32_t rows, uint32_t cols, uint32_t nnz, uint32_t k);
/* Builds s's lane form lrows in mem (dcz_lanes_bytes bytes for its nnz
 * real entries, 4-byte aligned) from its row form, setting s->lrows;
 * leaves lgroups 0 (no lane form) for fp32 values or when the walk needs
 * more steps than the bound. */
void dcz_lanes_build(dcz_sparse *s, uint32_t lrows, uint32_t nnz, void *mem);
/* Steps of s's lane form (0 without one). */
static inline uint32_t dcz_lanes_steps(const dcz_sparse *s)
{
    return s->lgroups ? s->lstart[s->lgroups] : 0;
}
/* Windows of the lane forms per DCZ_LANE_W columns (three shifted copies
 * of the input), and the first column of window v. */
#define DCZ_LANE_COPIES 3
static inline uint32_t dcz_lanes_window_start_w(uint32_t w, uint32_t v)
{
    return v / DCZ_LANE_COPIES * w + v % DCZ_LANE_COPIES * w / DCZ_LANE_COPIES;
}
static inline uint32_t dcz_lanes_window_start(uint32_t v)
{
    return dcz_lanes_window_start_w(DCZ_LANE_W, v);
}
/* The latest window of w columns to start at or before column b (the
 * builders' choice for a step whose lanes need b first). */
static inline uint32_t dcz_lanes_window_of_w(uint32_t w, uint32_t b)
{
    uint32_t c = DCZ_LANE_COPIES - 1;
    while (c * w / DCZ_LANE_COPIES > b % w) c--;
    return b / w * DCZ_LANE_COPIES + c;
}
static inline uint32_t dcz_lanes_window_of(uint32_t b)
{
    return dcz_lanes_window_of_w(DCZ_LANE_W, b);
}
/* Floats of the scratch the vector kernel of lane form lrows takes for
 * the panels of the input of a matrix of cols columns and k codebook
 * values (0 without a lane form). */
uint64_t dcz_lanes_scratch_floats(uint32_t lrows, uint32_t cols, uint32_t k);
/* y rows of groups g0 .. g1 - 1 = act(S x + bias) (act NULL or op 0:
 * none), slot by slot, scalar, with fmaf: the specification of s's lane
 * form (the 8-row one: dcz_spmv_lanes8_ref). */
void dcz_spmv_lanes_ref(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                        const dcz_act *act, const float *x, float *y);
#if DCZ_BUILD_F32_X86
/* The panels of x for s's lane form, in scratch (dcz_lanes_scratch_floats
 * floats): returns the first, 64-byte aligned. */
const float *dcz_lanes_panels__avx512(const dcz_sparse *s, const float *x, float *scratch);
/* dcz_spmv_lanes_ref with AVX-512, from x's panels: per step, one panel
 * loaded, two 16-lane window lookups in it (vpermt2ps), two codebook
 * lookups, two fused multiply-adds into two slices' sums; act applied as
 * the group's rows are stored. */
void dcz_spmv_lanes__avx512(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                            const dcz_act *act, const float *panels, float *y);
#endif

/* ---- the 8-row lane form (kernels_lanes8.c) --------------------------------
 * The lane form of CPUs with AVX2 and FMA but not AVX-512, for fully
 * connected codebook layers (any codebook size): eight rows in the lanes
 * of a vector, the weights held as floats (AVX2 has no one-instruction
 * lookup of 32 values).
 *
 * The rows are cut into groups of DCZ_LANE8_ROWS (8) consecutive rows. A
 * step of a group reads a window of DCZ_LANE8_W = 15 columns (window v
 * covers dcz_lanes_window_start_w(15, v) .. + 14: three shifted copies as
 * the 16-row form's) and gives each lane one slot: its row's next entry,
 * if its column lies in the window, as a weight lw[8 t + l] and a window
 * lane loff[8 t + l] (bits 0-2 the lane's low three bits, bit 7 its bit
 * 3), else weight 0 and lane 15, the panel's 0. Steps as the 16-row form's
 * greedy walk. Step j of a group is fused into the row's chain j mod 4,
 * chain 0 starting from the bias, and the row is (c0 + c1) + (c2 + c3).
 * Built where it pays: at most 65535 columns, no more steps than
 * DCZ_LANE8_STEPS_MAX (a quarter of the slots filled). */
#define DCZ_LANE8_ROWS 8
#define DCZ_LANE8_W 15
#define DCZ_LANE8_STEPS_MAX(nnz, rows) ((uint64_t)(nnz) / 2 + ((uint64_t)(rows) + 7) / 8)
/* The 8-row form's dcz_lanes_bytes, dcz_lanes_build and
 * dcz_lanes_scratch_floats, which call them. */
uint64_t dcz_lanes8_bytes(uint32_t rows, uint32_t cols, uint32_t nnz);
void dcz_lanes8_build(dcz_sparse *s, uint32_t nnz, void *mem);
uint64_t dcz_lanes8_scratch_floats(uint32_t cols);
/* "avx2" where this CPU runs dcz_spmv_lanes8__avx2 (AVX2 and FMA), else
 * NULL. */
const char *dcz_lanes8_variant(void);
/* y rows of groups g0 .. g1 - 1 = act(S x + bias), slot by slot, scalar,
 * with fmaf: the specification of the 8-row form. */
void dcz_spmv_lanes8_ref(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                         const dcz_act *act, const float *x, float *y);
#if DCZ_BUILD_F32_X86
/* The panels of x for the 8-row form, in scratch: returns the first,
 * 32-byte aligned. */
const float *dcz_lanes8_panels__avx2(const dcz_sparse *s, const float *x, float *scratch);
/* dcz_spmv_lanes8_ref with AVX2 and FMA, from x's panels: per step a
 * window lookup (two vpermps and a blend) and a multiply-add into one of
 * four chains; act applied as the group's rows are stored. */
void dcz_spmv_lanes8__avx2(const dcz_sparse *s, uint32_t g0, uint32_t g1, const float *bias,
                           const dcz_act *act, const float *panels, float *y);
#endif

/* Cost of one lane-form step in column-kernel entries (an entry whose
 * input is nonzero), as bench/bench_spmv.c measures the two kernels: a step
 * fills 32 slots with one panel and two lookups of each kind, the column
 * kernel pays a read-modify-write of y per entry (LeNet-300-100 fc1, 1110
 * steps: 1.7 us by lanes, 13.0 us by columns with every input nonzero, a
 * step 2.2 entries; fc2 1.7, fc3 1.3, where fewer rows make an entry
 * dearer). */
#define DCZ_LANE_STEP_ENTRIES 2
/* The same for a step of the 8-row form, in eighths of an entry. */
#define DCZ_LANE8_STEP_EIGHTHS 12

#endif /* DCZ_RUNTIME_CPU_F32_LANES_H */
