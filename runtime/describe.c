/* describe.c: which kernel libdcz runs each layer with, and why (tool.h),
 * for dcz info: the plan's kernel (plan.h) and the CUDA backend's, both
 * decided at load, named with the reason for them and the figures of the
 * forms the loader built. It decides nothing.
 *
 * Checked by tests/unit/test_format.c and tests/cli/conv.sh.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/cpu/f32/bands.h"
#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/dense.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/lanes.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/q8/qlanes.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/cuda/gpu.h"
#include "runtime/model.h"

/* The GPU kernel of layer l of m and why, in a few words. */
static void gpu_why(const dcz_model *m, const dcz_exec_layer *l, dcz_layer_desc *k)
{
    _Static_assert(DCZ_GPU_DIRECT_MIN_OUTPUTS == 1 << 17, "the direct kernels' reason says 2^17");
    static const struct { const char *name, *why; double arg; } kinds[] = {
        [DCZ_GK_ELEMENT] = { NULL, "", 0 },
        [DCZ_GK_DENSE_FC] = { "cublas gemv/gemm", "dense weights", 0 },
        [DCZ_GK_SPARSE_FC] = { "spmv/spmm_chunks__cuda", "8-entry chunks, %g lanes a row at batch 1", 0 },
        [DCZ_GK_SPARSE_FC_WIDE] = { "spmv_chunks__cuda|gemm", "%g%%+ dense: cublas above batch 1", DCZ_GPU_DENSE_DENSITY * 100 },
        [DCZ_GK_CONV_DENSE] = { "im2col+cublas gemm", "dense weights", 0 },
        [DCZ_GK_CONV_DENSE_DIRECT] = { "conv2d_dense__cuda", "grouped: a thread per output", 0 },
        [DCZ_GK_CONV_DIRECT] = { "conv2d_sparse__cuda", "grouped: a thread per output", 0 },
        [DCZ_GK_CONV_DIRECT_WIDE] = { "conv2d_dense__cuda", "grouped, %g%%+ dense: on a dense copy", DCZ_GPU_GROUPED_DENSE_DENSITY * 100 },
        [DCZ_GK_CONV_IM2COL] = { "im2col_t+spmm_chunks__cuda", "one group, under %g%% dense", DCZ_GPU_DENSE_DENSITY * 100 },
        [DCZ_GK_CONV_IM2COL_WIDE] = { "im2col_t+spmm_chunks__cuda|gemm", "%g%%+ dense: cublas at 2^17+ outputs", DCZ_GPU_DENSE_DENSITY * 100 },
        [DCZ_GK_QFC] = { "qspmm__cuda", "int8 rows: dp4a, int32 sums", 0 },
        [DCZ_GK_QCONV_DIRECT] = { "qconv2d__cuda", "int8, %g+ cell planes; patches < 2^17 outputs", DCZ_GPU_DIRECT_MIN_PLANE },
        [DCZ_GK_QCONV_IM2COL] = { "qim2col+qspmm__cuda", "int8, one group, planes under %g cells", DCZ_GPU_DIRECT_MIN_PLANE },
    };
    if (l->q && m->scheme == DCZ_SCHEME_FIXED16) {
        k->gpu_kernel = "none (CPU)";
        snprintf(k->gpu_why, sizeof k->gpu_why, "16-bit fixed point: 64-bit sums, CPU only");
        return;
    }
    const dcz_gpu_kernel g = (dcz_gpu_kernel)l->gpu_kernel;
    k->gpu_kernel = kinds[g].name ? kinds[g].name : k->kernel;
    /* an integer convolution runs direct whatever its planes when grouped */
    const int grouped = l->op == DCZ_OP_CONV2D && dcz_conv_groups(&l->geom) > 1;
    const char *why = grouped && l->q ? "int8, grouped: a thread per output" : kinds[g].why;
    if (g == DCZ_GK_CONV_DENSE && dcz_conv_pointwise(&l->geom)) {
        k->gpu_kernel = "cublas gemm";
        why = "dense weights, 1x1: its input as the patches";
    }
    if (g == DCZ_GK_CONV_IM2COL_WIDE && dcz_conv_pointwise(&l->geom)) {   /* its input as the patches */
        k->gpu_kernel = "spmm_chunks__cuda|gemm";
        why = "%g%%+ dense: cublas above batch 1";
    }
    double arg = kinds[g].arg;
    if (g == DCZ_GK_SPARSE_FC) {   /* the lanes gpu.c gives a row of the chunk form */
        const dcz_gsparse s = { l->sp.rows, l->sp.cols, l->sp.k, l->sp.row_ptr, l->sp.step, l->sp.idx, l->sp.val,
                                l->sp.codebook };
        arg = dcz_gk_chunk_group(s.rows, dcz_gk_chunk_count(&s));
    }
    snprintf(k->gpu_why, sizeof k->gpu_why, why, arg);
}

static const char *isa_name(void)
{
    return dcz_isa_supported(DCZ_ISA_AVX2) ? "avx2" : dcz_isa_supported(DCZ_ISA_NEON) ? "neon"
                                                                                     : "scalar reference";
}

/* A sparse fully connected layer: its batch-1 forms, batch kernel, threads. */
static void sparse_dense_why(const dcz_sparse *s, dcz_layer_desc *k)
{
    char cols[96] = "by rows (over 65535 rows: no column form)", lanes[160] = "";
    if (s->col_ptr)
        snprintf(cols, sizeof cols, "by columns, skipping zero inputs (%d-bit entries)", s->cent16 ? 16 : 32);
    const int eight = s->lrows == DCZ_LANE8_ROWS;
    if (s->lgroups)
        snprintf(lanes, sizeof lanes, "%s by lanes (%s, %u rows per vector, %s of each a step, %u-column windows)%s",
                 s->col_ptr ? " or" : "; instead", eight ? "avx2" : "avx512", s->lrows,
                 eight ? "one entry" : "two entries", eight ? DCZ_LANE8_W : DCZ_LANE_W,
                 s->col_ptr ? ", whichever visits less for the input at hand" : "");
    /* (the longest sentence fits: a cut one would still be a reason) */
    const int n = snprintf(k->why, sizeof k->why,
                           "compressed (libdcz runs every sparse layer compressed); batch 1 %s%s; batches: %s spmm, "
                           "32 samples per decoded entry; %s",
                           cols, lanes, isa_name(),
                           dcz_sparse_split(s) ? "rows split over the threads" : "one thread (too small to split)");
    if (n >= (int)sizeof k->why) k->why[sizeof k->why - 2] = '.';
}

void dcz_backend_describe(char *buf, size_t len)
{
#ifdef DCZ_CUDA
    dcz_gpu_build_info(buf, len);
#else
    snprintf(buf, len, "CUDA backend: not built (built without nvcc; make CUDA=1 with the CUDA toolkit)");
#endif
}

uint32_t dcz_model_layer_count(const dcz_model *m) { return m ? m->nlayers : 0; }

uint32_t dcz_model_threads(const dcz_model *m) { return m && m->pool ? m->threads : 1; }

static dcz_status describe_viewed(const dcz_model *m, uint32_t layer, dcz_layer_desc *k)
{
    const dcz_exec_layer *l = &m->layers[layer];
    const dcz_op_info *o = dcz_op_get(l->op);
    k->name = l->name;
    k->op = l->op;
    k->weighted = o && o->weighted;
    k->width = l->out;
    k->why[0] = '\0';
    k->kernel = dcz_kernel_name((dcz_kernel)l->kernel);
    k->seg_first = m->tensors[layer + 1].seg_first;
    _Static_assert(DCZ_DESC_TIMED == DCZ_PLAN_CANDIDATES, "every candidate described");
    const dcz_measured *t = m->measured ? &m->measured[layer] : NULL;
    k->timed = t ? t->n : 0;
    k->timed_pick = t ? t->pick : 0;
    for (uint32_t c = 0; c < k->timed; c++) {
        k->timed_kernel[c] = dcz_kernel_name((dcz_kernel)t->kernel[c]);
        k->timed_us[c] = (double)t->ns[c] / 1000.0;
    }
    k->chunk = m->tensors[k->seg_first + 1].chunk;
    gpu_why(m, l, k);
    if (l->fused == DCZ_FUSED_BANDS && !m->opt.force_reference) {
        /* by the pointwise convolution before it, or before its activation */
        const uint32_t by = m->layers[layer - 1].band == layer ? layer - 1 : layer - 2;
        dcz_bands p;
        dcz_conv2d_bands_of(&l->geom, &p);
        k->kernel = "fused";
        snprintf(k->why, sizeof k->why, "run by %s with it, by bands of %u output rows (runs with taps run it "
                 "here, apart)", m->layers[by].name, p.rows);
        return DCZ_OK;
    }
    if (l->fused == DCZ_FUSED_CONCAT && !m->opt.force_reference) {
        snprintf(k->why, sizeof k->why, "on the CPU at batch 1 its inputs are written in its place and it copies "
                 "nothing (other batches, runs with taps and a GPU copy them)");
        return DCZ_OK;
    }
    if (l->fused && !m->opt.force_reference) {
        /* a pool: by the convolution before, or the one before its activation */
        const int pool = l->fused == DCZ_FUSED_POOL;
        const uint32_t by = pool && !m->layers[layer - 1].qpool ? layer - 2 : layer - 1;
        k->kernel = "fused";
        snprintf(k->why, sizeof k->why, "applied by %s as it writes its output (%s)", m->layers[by].name,
                 pool ? "a copy here; runs with taps pool here" : "runs with taps apply it here");
    }
    if (!k->weighted && l->q && l->qin.none && !m->opt.force_reference) {   /* a table between a pair's layers */
        uint32_t skipped = 0;
        for (uint32_t c = 0; c < l->in_shape.dims[0]; c++) skipped += l->qin.none[c];
        snprintf(k->why, sizeof k->why, "skips the %u planes the convolution before leaves unwritten", skipped);
    }
    if (!k->weighted && l->q && l->qplanes && !m->opt.force_reference)   /* load.c, pair_table_planes */
        snprintf(k->why, sizeof k->why, "at batch 1 writes the byte planes of %s, each value looked up as it is "
                 "placed, and not its output (other batches and runs with taps write it)", m->layers[layer + 1].name);
    if (!k->weighted) return DCZ_OK;
    const dcz_kernel kern = (dcz_kernel)l->kernel;
    k->kernel = dcz_kernel_name(kern);
    const char *cisa = dcz_conv2d_variant();   /* the rows of the direct convolutions */
    const char *gisa = dcz_gemm_f32_variant();
    const char *scheme = m->scheme == DCZ_SCHEME_INT8 ? "calibrated int8" : "calibrated fixed point";
    const char *weights = l->sparse ? "sparse weights" : "dense weights";
    const char *act = l->act.op ? dcz_op_get(l->act.op)->label : "";
    /* the amx tiles' forms (DCZ_QAMX_TAPS, _ROWS, _COPIES, _COLUMNS) */
    static const char *const amx_at[4] = { "tap", "window row of a quad", "window row", "column quad" };
    static const char *const amx_of[4] = { "16 output cells' inputs", "its taps' inputs of 16 output cells",
                                           "16 cells' inputs at up to 16 taps and quads (planes copied)",
                                           "its window rows' inputs of 16 output cells" };
    /* a pointwise convolution that runs the depthwise one after it by bands */
    char bands[256] = "";
    if (l->band && !m->opt.force_reference) {
        dcz_bands p;
        dcz_conv2d_bands_of(&m->layers[l->band].geom, &p);
        snprintf(bands, sizeof bands, "; with %s, by bands of %u of its output rows from a ring of %u input rows a "
                 "channel (the tensor between them never written whole)", m->layers[l->band].name, p.rows, p.ring);
    }
    switch (kern) {
    case DCZ_K_QCONV_SHIFT_DEPTHWISE:
        snprintf(k->why, sizeof k->why, "%s: each channel's padded plane as bytes, 16 outputs a vector gathering "
                 "the four inputs of each window row's quad of weights by byte permutes (vpermt2b) of a "
                 "128-byte window, vpdpbusd 32-bit sums, requantized in registers (avx512 vbmi vnni)", scheme);
        break;
    case DCZ_K_QCONV_DEPTHWISE_PAIRS:
        snprintf(k->why, sizeof k->why, "%s: each channel's plane as it lies (16-bit; at stride 1 a padded copy), "
                 "two columns of a window row a 32-bit lane times two weights by vpdpwssd, 32 outputs a vector at "
                 "stride 1 (the even and the odd ones), 16 at stride 2, the pairs of two zeros skipped, "
                 "requantized in registers (avx512 vnni)", scheme);
        break;
    case DCZ_K_QCONV_AMX:
        snprintf(k->why, sizeof k->why, "%s: 8-bit activations of four %s per 32-bit cell of the "
                 "padded input split by stride phase; at each %s, tiles of 16 channels' weights times tiles "
                 "of %s by AMX tdpbsud, 32-bit sums (the dense tiles cost less than the quad taps here)%s",
                 scheme, l->qshift.amx_run == DCZ_QAMX_COLUMNS ? "columns of the input" : "input channels",
                 amx_at[l->qshift.amx_run], amx_of[l->qshift.amx_run],
                 l->qpool ? ", then the 2x2 max pool after it on the sums" : "");
        break;
    case DCZ_K_QCONV_SHIFT:
        snprintf(k->why, sizeof k->why, "%s: 8-bit activations of four input channels per 32-bit cell of the "
                 "padded input split by stride phase, shifted by each quad of weights, vpdpbusd 32-bit sums "
                 "(%s)%s", scheme, dcz_qshift_variant() ? dcz_qshift_variant() : "?",
                 l->qpool ? ", then the 2x2 max pool after it on the sums" : "");
        break;
    case DCZ_K_QCONV_GEMM:
        snprintf(k->why, sizeof k->why, "%s: weights expanded to int16 pairs at load, times the patches by "
                 "qgemm in %s (pair products, 32-bit sums)", scheme, dcz_qgemm_variant() ? dcz_qgemm_variant() : "?");
        break;
    case DCZ_K_QCONV_F32:
        snprintf(k->why, sizeof k->why, "%s: its integer weights on the float shift form (%s, %u output "
                 "channels a block), each sample's integers converted to floats, sums exact in floats "
                 "(a channel's |w| sum times 127 within 2^24) and converted back%s", scheme,
                 dcz_conv2d_shift_variant() ? dcz_conv2d_shift_variant() : "scalar", l->shift.ob,
                 l->qover ? "; the channels past 2^24 by the integer taps" : "");
        break;
    case DCZ_K_QCONV_DEPTHWISE:
        snprintf(k->why, sizeof k->why, "%s: each channel's stored weights scale its input plane shifted, "
                 "32-bit sums in registers, avx2 vectors of 8 outputs", scheme);
        break;
    case DCZ_K_QCONV_TAPS:
    case DCZ_K_QCONV_TAPS_REF:
        snprintf(k->why, sizeof k->why, "%s: each stored integer weight scales a shifted input plane, "
                 "64-bit sums, %s rows", scheme, kern == DCZ_K_QCONV_TAPS && cisa ? cisa : "scalar");
        break;
    case DCZ_K_QFC8_LANES: {
        uint64_t real = 0;
        for (uint32_t r = 0; r < l->qs.rows; r++)
            for (uint32_t e = l->qs.row_ptr[r]; e < l->qs.row_ptr[r + 1]; e++) real += l->qs.step[e] != DCZ_STEP_FILLER;
        const uint32_t steps = dcz_qlanes_steps(&l->qs);
        const int quads = l->qs.lform != DCZ_QLANE_PAIRS, lanes = (int)DCZ_QLANE_ROWS(l->qs.lform);
        const unsigned width = dcz_qlanes_window_width(&l->qs);
        snprintf(k->why, sizeof k->why, "%s: 8-bit weights and activations, %d rows in the lanes of a vector "
                 "(%s), %s of each a step from a %u-column window, %s multiply-adds, 32-bit sums; "
                 "%u steps, %.0f%% of the slots filled", scheme, lanes, dcz_qlanes_variant(&l->qs),
                 quads ? "four entries" : "two entries", width, quads ? "byte quad" : "pair", steps,
                 steps ? 100.0 * (double)real / ((quads ? 4.0 : 2.0) * lanes * steps) : 0.0);
        break;
    }
    case DCZ_K_QFC8: {
        const char *isa = dcz_qspmm8_variant();
        snprintf(k->why, sizeof k->why, "%s: 8-bit weights and activations, 32-bit sums; batches of half a tile or "
                 "more %s%s", scheme, isa ? "in " : "by scalar rows", isa ? isa : "");
        break;
    }
    case DCZ_K_QFC:
    case DCZ_K_QFC_REF:
        snprintf(k->why, sizeof k->why, "%s: integer multiply, add and shift only, 64-bit sums", scheme);
        break;
    case DCZ_K_CONV_DEPTHWISE_LANES:
        snprintf(k->why, sizeof k->why, "%s, one channel a group: 8 channels in the lanes of a vector, the input "
                 "and output planes transposed into cells of them, a multiply-add a tap, avx2%s%s", weights,
                 l->act.op ? ", then " : "", act);
        break;
    case DCZ_K_CONV_DEPTHWISE_PLANE:
    case DCZ_K_CONV_DEPTHWISE_ROWS:
        snprintf(k->why, sizeof k->why, "%s, one channel a group: %s the sum of its taps over the input, "
                 "masked at the edges, %s%s%s", weights,
                 kern == DCZ_K_CONV_DEPTHWISE_PLANE ? "each output plane held in registers,"
                 : dcz_shift_dw_scale_takes(&l->geom, &l->shift) ? "each output plane as one run of vectors (a 1x1 window),"
                                                    : "each output row, 4 to 8 at a time (on avx512 a channel that keeps "
                                                      "its whole 3x3 or 5x5 window: each input row loaded once for "
                                                      "every output row that reads it),",
                 dcz_conv2d_shift_variant(), l->act.op ? ", then " : "", act);
        break;
    case DCZ_K_CONV_SHIFT: {
        const char *sisa = dcz_conv2d_shift_variant();
        snprintf(k->why, sizeof k->why, "%s: each output plane the sum of the padded input, split by stride "
                 "phase, shifted by each weight, %u output channel%s a block, %s%s%.64s%s%s%s", weights, l->shift.ob,
                 l->shift.ob > 1 ? "s" : "", sisa ? sisa : "scalar", l->res ? ", then the add of " : "",
                 l->res ? m->layers[layer + 1].name : "", l->act.op ? ", then " : "", act, bands);
        break;
    }
    case DCZ_K_CONV_WINO:
        snprintf(k->why, sizeof k->why, "dense weights, 3x3 at stride 1: Winograd's F(2x2, 3x3), 16 channels a "
                 "vector, 16 products of the transforms by gemm_f32 in %s", gisa);
        break;
    case DCZ_K_CONV_GEMM:
    case DCZ_K_CONV_GEMM_REF:
        snprintf(k->why, sizeof k->why, "dense weights: the weights times the patches by gemm_f32%s%s%s",
                 kern == DCZ_K_CONV_GEMM && gisa ? " in " : "_ref", kern == DCZ_K_CONV_GEMM && gisa ? gisa : "", bands);
        break;
    case DCZ_K_CONV_GEMM_PIXELS:
        snprintf(k->why, sizeof k->why, "dense 1x1 weights, transposed at load: the input's pixel rows%s times them "
                 "by gemm_f32 in %s, output channels in the vectors",
                 l->geom.sh > 1 || l->geom.sw > 1 ? " (at the stride)" : "", gisa ? gisa : "?");
        break;
    case DCZ_K_CONV_EXPANDED:
        snprintf(k->why, sizeof k->why, "sparse weights at %g%%+ density, expanded at load: the weights times the "
                 "patches by gemm_f32 in %s%s", DCZ_CONV_DENSE_MIN_DENSITY * 100, gisa ? gisa : "?", bands);
        break;
    case DCZ_K_CONV_DIRECT:
    case DCZ_K_CONV_DIRECT_REF:
        snprintf(k->why, sizeof k->why, "dense weights, grouped or patches past the scratch cap: direct "
                 "convolution, %s rows", kern == DCZ_K_CONV_DIRECT && cisa ? cisa : "scalar");
        break;
    case DCZ_K_CONV_SPARSE_IM2COL:
    case DCZ_K_CONV_SPARSE_IM2COL_REF:
        snprintf(k->why, sizeof k->why, "output rows shorter than 8: im2col patches times the compressed rows");
        break;
    case DCZ_K_CONV_SPARSE_DIRECT:
    case DCZ_K_CONV_SPARSE_DIRECT_REF:
        snprintf(k->why, sizeof k->why, "each stored weight scales a shifted input plane into its output plane, "
                 "%s rows", kern == DCZ_K_CONV_SPARSE_DIRECT && cisa ? cisa : "scalar");
        break;
    case DCZ_K_FC_GEMM:
        snprintf(k->why, sizeof k->why, "dense weights, transposed at load: the samples times them by gemm_f32 "
                 "in %s", gisa ? gisa : "?");
        break;
    case DCZ_K_FC_ROWS: {
        const char *isa = dcz_dense_f32_variant();
        if (!isa) snprintf(k->why, sizeof k->why, "dense weights: the scalar reference");
        else snprintf(k->why, sizeof k->why, "dense weights: %s, each row's dot product over the vector lanes, four "
                      "rows per pass over a sample", isa);
        break;
    }
    case DCZ_K_FC_REF:
        snprintf(k->why, sizeof k->why, "dense weights: the scalar reference");
        break;
    case DCZ_K_FC_SPARSE_REF:
        snprintf(k->why, sizeof k->why, "compressed (libdcz runs every sparse layer compressed): the scalar "
                 "references, row by row");
        break;
    default:   /* DCZ_K_FC_CODEBOOK, DCZ_K_FC_SPARSE */
        sparse_dense_why(&l->sp, k);
        break;
    }
    /* the activation the kernels apply as they write (the shift forms say
     * it in their own words) */
    if (!dcz_kernel_shifts(kern) && !l->q && l->act.op && !m->opt.force_reference) {
        const size_t used = strlen(k->why);
        snprintf(k->why + used, sizeof k->why - used, "; then %s", act);
    }
    /* the integer shift form's constant channels (load.c, pair_constants) */
    if (l->q && dcz_kernel_shifts(kern) && (l->qskip || l->qin.none) && !m->opt.force_reference) {
        uint32_t left = 0, taken = 0, to = layer;
        for (uint32_t c = 0; l->qskip && c < l->geom.out_c; c++) left += l->qshift.none[c];
        for (uint32_t c = 0; l->qin.none && c < l->geom.in_c; c++) taken += l->qin.none[c];
        for (uint32_t j = layer + 1; l->qskip && j < m->nlayers && to == layer; j++)
            to = m->layers[j].qin.value && m->layers[j].qin.none == l->qshift.none ? j : to;
        size_t used = strlen(k->why);
        if (taken) snprintf(k->why + used, sizeof k->why - used, "; %u input channels constants", taken);
        used = strlen(k->why);
        if (left)
            snprintf(k->why + used, sizeof k->why - used, "; %u channels without a weight unwritten, constants to "
                     "%.64s", left, m->layers[to].name);
    }
    return DCZ_OK;
}

/* described as the model runs: under its view of the CPU (cpu/isa.h) */
dcz_status dcz_describe_layer(const dcz_model *m, uint32_t layer, dcz_layer_desc *k)
{
    if (!m || !k || layer >= m->nlayers) return DCZ_ERR_ARG;
    const dcz_cpu *was = dcz_cpu_enter(&m->cpu);
    const dcz_status s = describe_viewed(m, layer, k);
    dcz_cpu_leave(was);
    return s;
}
