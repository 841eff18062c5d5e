/* qlanes.h: the integer lane form of an 8-bit scheme's fully connected
 * layer (kernels_qlanes.c): its layout, builder and kernels. It shares the
 * windows of the float lane form (cpu/f32/lanes.h).
 *
 * Checked by tests/unit/test_qkernels.c (each kernel against the form's
 * specification and dcz_qspmm_ref).
 */
#ifndef DCZ_RUNTIME_CPU_Q8_QLANES_H
#define DCZ_RUNTIME_CPU_Q8_QLANES_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"

/* ---- the integer lane form (kernels_qlanes.c) -------------------------------
 * The float lane form's idea (cpu/f32/lanes.h) for the 8-bit schemes, where a weight
 * is a byte and two products fit one multiply-add of 16-bit pairs: sixteen
 * rows in the 32-bit lanes of one vector, each lane summing two entries of
 * its row a step, the input read from a window of it held in a register.
 *
 * The rows are cut into slices of 16 consecutive rows, lane l of slice s
 * being row 16 s + l; a slice is a sequence of steps, lstart[s] ..
 * lstart[s + 1] - 1. In step t, the slice reads window lbase[t] of
 * DCZ_LANE_W = 31 columns (window v covers dcz_lanes_window_start(v) ..
 * + 30: the windows start every 10 or 11 columns), and lane l the two
 * 16-bit slots of lslot[16 t + l], low one first: the next entry of its
 * row whose column lies in the window, as (column - start) | weight << 8,
 * the weight a signed byte, else 31, "no entry" (weight 0). The vector
 * kernel reads a window as one aligned panel of 32 inputs whose last is 0,
 * so an empty slot adds 0 x 0.
 *
 * Steps (dcz_qlanes_build, a greedy walk): the window is the latest to
 * start at or before the smallest column among the lanes' next entries;
 * every lane takes up to two of its next entries that lie in it.
 *
 * The form of byte quads (lbytes 1) has the same slices and walk, with
 * wider windows and four entries a lane a step, for CPUs that permute
 * bytes and multiply-add byte quads (AVX-512 VBMI and VNNI): window v
 * covers the DCZ_QLANE8_W = 64 columns from DCZ_QLANE8_STRIDE v, and step
 * t holds 32 words at lslot[32 t]: lane l's four column offsets in window
 * (bytes of word l, its next entries in column order, 0 where it has
 * none) and their weights (signed bytes of word 16 + l, 0 where none).
 * The kernel reads the inputs as unsigned bytes, x + 128 (an 8-bit scheme's
 * inputs lie within +-127), and starts each row's sum at lcorr, -128 times
 * its weights' sum, which takes the offset back out. On random entries at
 * 8% density (LeNet-300-100 fc1) a step fills 64% of its 64 slots against
 * 55% of 32 for the form of pairs: 457 steps against 1060.
 *
 * The form of 8-row quads (DCZ_QLANE_QUADS8) is the one of CPUs with AVX2
 * but not AVX-512, whose byte shuffle (vpshufb) reads 16 bytes: slices of
 * 8 rows, lane l of slice s being row 8 s + l; step t's window covers the
 * DCZ_QLANE_Q8_W = 32 columns from column lbase[t] itself (the smallest
 * column among the lanes' next entries; the kernel shuffles each half of
 * it and blends the two by bit 4 of the offset), and it holds 16 words at
 * lslot[16 t]: lane l's four column offsets in the window (bytes of word
 * l, 0 where none) and their weights (signed bytes of word 8 + l, 0 where
 * none). The kernel reads the inputs as signed bytes and multiplies their
 * magnitudes by the weights carrying their signs (vpmaddubsw: each pair
 * of products within 2 x 128 x 127, no saturation); no lcorr. On the same
 * 8% matrix a step fills 54% of its 32 slots: 1092 steps (16-column
 * windows: 1786).
 *
 * Each form is built for weights within +-127 and at most 65535 columns,
 * and given up when the walk needs more steps than DCZ_QLANE_STEPS_MAX
 * (each form takes 8 bytes a weight at most). Sums are exact in 32 bits (the
 * loader's bound; the byte form's are exact modulo 2^32, and so is its
 * offset), so the kernels give dcz_qspmm_ref's bits whatever the order.
 */
typedef enum dcz_qlane_form {
    DCZ_QLANE_PAIRS,    /* 16 rows, two entries a lane a step, 31-column windows (AVX-512 BW) */
    DCZ_QLANE_QUADS,    /* 16 rows, four entries, 64-column windows (AVX-512 VBMI and VNNI) */
    DCZ_QLANE_QUADS8,   /* 8 rows, four entries, 16-column windows (AVX2) */
    DCZ_QLANE_FORMS
} dcz_qlane_form;
#define DCZ_QLANE_ROWS(form) ((form) == DCZ_QLANE_QUADS8 ? 8u : 16u)
/* 8 bytes a weight at most: a step of pairs holds 64 bytes, of quads 128,
 * of the 8-row quads 64 */
#define DCZ_QLANE_STEPS_MAX(nnz, rows, form) \
    ((uint64_t)(nnz) / ((form) == DCZ_QLANE_QUADS ? 16 : 8) + \
     ((uint64_t)(rows) + DCZ_QLANE_ROWS(form) - 1) / DCZ_QLANE_ROWS(form))
#define DCZ_QLANE8_W 64
#define DCZ_QLANE8_STRIDE 16
#define DCZ_QLANE_Q8_W 32
/* Bytes of the lane form of a rows x cols matrix of nnz entries (its most:
 * the steps' bound, any form), 0 when it cannot have one. */
uint64_t dcz_qlanes_bytes(uint32_t rows, uint32_t cols, uint64_t nnz);
/* Builds s's lane form in mem (dcz_qlanes_bytes of its real entries,
 * DCZ_ARENA_ALIGN aligned) from its row form: the first of byte quads,
 * pairs and 8-row quads whose kernel this build and CPU run and whose
 * walk keeps within its bound; dcz_qlanes_build_form builds the form
 * asked for. Returns 0, leaving lslices 0, when there is none, a weight
 * is past a byte or the walk needs more steps than the bound. */
int dcz_qlanes_build(dcz_qsparse *s, uint64_t nnz, void *mem);
int dcz_qlanes_build_form(dcz_qsparse *s, uint64_t nnz, void *mem, dcz_qlane_form form);
/* Columns of a window of s's lane form. */
uint32_t dcz_qlanes_window_width(const dcz_qsparse *s);
/* Steps of s's lane form (0 without one). */
static inline uint32_t dcz_qlanes_steps(const dcz_qsparse *s)
{
    return s->lslices ? s->lstart[s->lslices] : 0;
}
/* acc (batch, rows) = x S^T + bias from the lane form, slot by slot: its
 * specification. */
void dcz_qlanes_ref(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, int64_t *acc);
/* Bytes of the panels the vector kernels read for a matrix of cols
 * columns (samples at a time included); the kernel's variant for s's form
 * where this build and CPU have one ("avx512vbmi byte quads" for quads;
 * "avx512vnni", else "avx512bw" for pairs; "avx2 byte quads" for 8-row
 * quads), else NULL; the instruction set of s's form's kernel; the kernel itself
 * on s's form, the best variant: 0 when s has none or nothing runs it;
 * dcz_qlanes_run_vnni runs the one with VNNI (vnni 1), the one without (0,
 * pairs only) or the best (-1), 0 where the CPU lacks it. */
uint64_t dcz_qlanes_scratch_bytes(uint32_t cols);
const char *dcz_qlanes_variant(const dcz_qsparse *s);
/* Whether this CPU runs a variant of some integer lane form (the loader
 * builds the form where it does). */
int dcz_qlanes_runs(void);
static inline dcz_isa dcz_qlanes_isa(const dcz_qsparse *s)
{
    return s->lform == DCZ_QLANE_QUADS8 ? DCZ_ISA_AVX2 : DCZ_ISA_AVX512;
}
int dcz_qlanes_run(const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch, void *scratch,
                   int64_t *acc);
int dcz_qlanes_run_vnni(int vnni, const dcz_qsparse *s, const int64_t *bias, const dcz_q *x, size_t batch,
                        void *scratch, int64_t *acc);

#endif /* DCZ_RUNTIME_CPU_Q8_QLANES_H */
