/* plan.c: each layer's kernel, decided once at load (plan.h), and the
 * CUDA backend's choice beside it (gpu.h: dcz_gpu_pick).
 *
 * The rules read the layer's geometry and weights and the measured rules
 * of the kernel families (dcz_conv2d_pick_*, dcz_qconv2d_pick_shift, ...:
 * each beside the kernels whose speed it weighs); the loader builds the
 * form the chosen kernel reads (load_layer.c), the runner dispatches
 * through its table (run.c), dcz info names it (describe.c).
 *
 * Checked by tests/unit/test_format.c and tests/unit/test_calibrate.c (the
 * kernels the test models get, through dcz info) and by the unit tests of
 * the GPU's choice (tests/unit/test_gpu_emu.c).
 */
#include "runtime/plan.h"

#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/cuda/gpu.h"
#include "runtime/model.h"

static const char *const names[DCZ_K_COUNT] = {
    [DCZ_K_NONE] = "?",
    [DCZ_K_RELU] = "relu",
    [DCZ_K_RELU_REF] = "relu_ref",
    [DCZ_K_SOFTMAX_REF] = "softmax_ref",
    [DCZ_K_MAXPOOL] = "maxpool",
    [DCZ_K_MAXPOOL_REF] = "maxpool_ref",
    [DCZ_K_AVGPOOL] = "avgpool",
    [DCZ_K_AVGPOOL_REF] = "avgpool_ref",
    [DCZ_K_GLOBAL_AVGPOOL] = "global_avgpool",
    [DCZ_K_GLOBAL_AVGPOOL_REF] = "global_avgpool_ref",
    [DCZ_K_COPY] = "copy",
    [DCZ_K_ADD] = "add",
    [DCZ_K_ADD_REF] = "add_ref",
    [DCZ_K_MUL] = "mul",
    [DCZ_K_MUL_REF] = "mul_ref",
    [DCZ_K_CONCAT] = "concat",
    [DCZ_K_CONCAT_REF] = "concat_ref",
    [DCZ_K_GATHER_REF] = "gather_channels_ref",
    [DCZ_K_CLIP] = "clip",
    [DCZ_K_ACTIVATION_REF] = "activation_ref",
    [DCZ_K_ACTIVATION] = "activation",
    [DCZ_K_FC_GEMM] = "dense_gemm_f32",
    [DCZ_K_FC_ROWS] = "dense_f32",
    [DCZ_K_FC_REF] = "dense_f32_ref",
    [DCZ_K_FC_CODEBOOK] = "spmv / spmm (codebook)",
    [DCZ_K_FC_SPARSE] = "spmv_csc / spmm (fp32 values)",
    [DCZ_K_FC_SPARSE_REF] = "spmv_ref / spmm_ref",
    [DCZ_K_FC_STREAM_REF] = "fc_stream_ref (weights read as stored)",
    [DCZ_K_CONV_SHIFT] = "conv2d_shift",
    [DCZ_K_CONV_DEPTHWISE_LANES] = "conv2d_depthwise_lanes",
    [DCZ_K_CONV_DEPTHWISE_PLANE] = "conv2d_depthwise_plane",
    [DCZ_K_CONV_DEPTHWISE_ROWS] = "conv2d_depthwise_rows",
    [DCZ_K_CONV_WINO] = "conv2d_dense_wino",
    [DCZ_K_CONV_GEMM] = "conv2d_dense_im2col",
    [DCZ_K_CONV_GEMM_PIXELS] = "conv2d_dense_pixels",
    [DCZ_K_CONV_GEMM_REF] = "conv2d_dense_im2col_ref",
    [DCZ_K_CONV_EXPANDED] = "conv2d_expanded_im2col",
    [DCZ_K_CONV_DIRECT] = "conv2d_dense",
    [DCZ_K_CONV_DIRECT_REF] = "conv2d_dense_ref",
    [DCZ_K_CONV_SPARSE_IM2COL] = "conv2d_sparse_im2col",
    [DCZ_K_CONV_SPARSE_IM2COL_REF] = "conv2d_sparse_im2col_ref",
    [DCZ_K_CONV_SPARSE_DIRECT] = "conv2d_sparse_direct",
    [DCZ_K_CONV_SPARSE_DIRECT_REF] = "conv2d_sparse_direct_ref",
    [DCZ_K_QRELU] = "qrelu",
    [DCZ_K_QRELU_REF] = "qrelu_ref",
    [DCZ_K_QMAXPOOL] = "qmaxpool",
    [DCZ_K_QMAXPOOL_REF] = "qmaxpool_ref",
    [DCZ_K_QAVGPOOL] = "qavgpool",
    [DCZ_K_QAVGPOOL_REF] = "qavgpool_ref",
    [DCZ_K_QMEAN_REF] = "qglobal_avgpool_ref",
    [DCZ_K_QMEAN_RESCALE] = "qglobal_avgpool_rescale",
    [DCZ_K_QMEAN_RESCALE_REF] = "qglobal_avgpool_rescale_ref",
    [DCZ_K_QCOPY] = "qcopy",
    [DCZ_K_QADD] = "qadd",
    [DCZ_K_QADD_REF] = "qadd_ref",
    [DCZ_K_QMUL] = "qmul",
    [DCZ_K_QMUL_REF] = "qmul_ref",
    [DCZ_K_QCONCAT] = "qconcat",
    [DCZ_K_QCONCAT_REF] = "qconcat_ref",
    [DCZ_K_QGATHER_REF] = "qgather_channels_ref",
    [DCZ_K_QTABLE] = "qtable",
    [DCZ_K_QTABLE_REF] = "qtable_ref",
    [DCZ_K_QFC8_LANES] = "qspmm8_lanes (integers)",
    [DCZ_K_QFC8] = "qspmm8 (integers)",
    [DCZ_K_QFC] = "qspmm (integers)",
    [DCZ_K_QFC_REF] = "qspmm_ref (integers)",
    [DCZ_K_QFC_STREAM_REF] = "qfc_stream_ref (integers, weights read as stored)",
    [DCZ_K_QCONV_SHIFT] = "qconv2d_shift (integers)",
    [DCZ_K_QCONV_SHIFT_DEPTHWISE] = "qconv2d_shift_depthwise (integers)",
    [DCZ_K_QCONV_DEPTHWISE_PAIRS] = "qconv2d_depthwise_pairs (integers)",
    [DCZ_K_QCONV_AMX] = "qconv2d_amx (integers)",
    [DCZ_K_QCONV_GEMM] = "qconv2d_gemm (integers)",
    [DCZ_K_QCONV_DEPTHWISE] = "qconv2d_depthwise (integers)",
    [DCZ_K_QCONV_TAPS] = "qconv2d_sparse (integers)",
    [DCZ_K_QCONV_TAPS_REF] = "qconv2d_sparse_ref (integers)",
    [DCZ_K_QCONV_F32] = "qconv2d_shift_f32 (integers)",
};

const char *dcz_kernel_name(dcz_kernel k)
{
    return (unsigned)k < DCZ_K_COUNT && names[k] ? names[k] : "?";
}

/* The kernels of the operators without weights, by precision: the vector
 * kernel and its reference (the same where the op has only a reference). */
typedef struct element_kernels {
    dcz_kernel f32, f32_ref, q, q_ref;
} element_kernels;

static const element_kernels elements[] = {
    [DCZ_OP_RELU] = { DCZ_K_RELU, DCZ_K_RELU_REF, DCZ_K_QRELU, DCZ_K_QRELU_REF },
    [DCZ_OP_SOFTMAX] = { DCZ_K_SOFTMAX_REF, DCZ_K_SOFTMAX_REF, DCZ_K_NONE, DCZ_K_NONE },
    [DCZ_OP_MAXPOOL] = { DCZ_K_MAXPOOL, DCZ_K_MAXPOOL_REF, DCZ_K_QMAXPOOL, DCZ_K_QMAXPOOL_REF },
    [DCZ_OP_AVGPOOL] = { DCZ_K_AVGPOOL, DCZ_K_AVGPOOL_REF, DCZ_K_QAVGPOOL, DCZ_K_QAVGPOOL_REF },
    /* on integers: by the scales (dcz_plan_finish) */
    [DCZ_OP_GLOBAL_AVGPOOL] = { DCZ_K_GLOBAL_AVGPOOL, DCZ_K_GLOBAL_AVGPOOL_REF, DCZ_K_QMEAN_RESCALE,
                                DCZ_K_QMEAN_RESCALE_REF },
    [DCZ_OP_FLATTEN] = { DCZ_K_COPY, DCZ_K_COPY, DCZ_K_QCOPY, DCZ_K_QCOPY },
    [DCZ_OP_ADD] = { DCZ_K_ADD, DCZ_K_ADD_REF, DCZ_K_QADD, DCZ_K_QADD_REF },
    [DCZ_OP_MUL] = { DCZ_K_MUL, DCZ_K_MUL_REF, DCZ_K_QMUL, DCZ_K_QMUL_REF },
    [DCZ_OP_CONCAT] = { DCZ_K_CONCAT, DCZ_K_CONCAT_REF, DCZ_K_QCONCAT, DCZ_K_QCONCAT_REF },
    [DCZ_OP_CLIP] = { DCZ_K_CLIP, DCZ_K_ACTIVATION_REF, DCZ_K_QTABLE, DCZ_K_QTABLE_REF },
    [DCZ_OP_LEAKY_RELU] = { DCZ_K_ACTIVATION_REF, DCZ_K_ACTIVATION_REF, DCZ_K_QTABLE, DCZ_K_QTABLE_REF },
    [DCZ_OP_SIGMOID] = { DCZ_K_ACTIVATION, DCZ_K_ACTIVATION_REF, DCZ_K_QTABLE, DCZ_K_QTABLE_REF },
    [DCZ_OP_TANH] = { DCZ_K_ACTIVATION_REF, DCZ_K_ACTIVATION_REF, DCZ_K_QTABLE, DCZ_K_QTABLE_REF },
    [DCZ_OP_HARD_SIGMOID] = { DCZ_K_ACTIVATION, DCZ_K_ACTIVATION_REF, DCZ_K_QTABLE, DCZ_K_QTABLE_REF },
    [DCZ_OP_HARD_SWISH] = { DCZ_K_ACTIVATION, DCZ_K_ACTIVATION_REF, DCZ_K_QTABLE, DCZ_K_QTABLE_REF },
    [DCZ_OP_CHANNEL_SHUFFLE] = { DCZ_K_GATHER_REF, DCZ_K_GATHER_REF, DCZ_K_QGATHER_REF, DCZ_K_QGATHER_REF },
    [DCZ_OP_SLICE] = { DCZ_K_GATHER_REF, DCZ_K_GATHER_REF, DCZ_K_QGATHER_REF, DCZ_K_QGATHER_REF },
    [DCZ_OP_SILU] = { DCZ_K_ACTIVATION, DCZ_K_ACTIVATION_REF, DCZ_K_QTABLE, DCZ_K_QTABLE_REF },
};

/* c's candidates: the rule's pick first, then those of the list that
 * run (runs) in its order, at most DCZ_PLAN_CANDIDATES. */
static void candidates(dcz_candidates *c, dcz_kernel rule, const dcz_kernel *list, size_t n, const int *runs)
{
    c->n = 1;
    c->k[0] = rule;
    for (size_t i = 0; i < n && c->n < DCZ_PLAN_CANDIDATES; i++)
        if (runs[i] && list[i] != rule) c->k[c->n++] = list[i];
}

int dcz_plan_streams(int asked, uint16_t op, uint32_t enc)
{
    return asked && op == DCZ_OP_DENSE && enc == DCZ_ENC_CODEBOOK;
}

void dcz_plan_fc(int sparse, int codebook, int stream, int forms, int force_reference, dcz_candidates *c)
{
    force_reference |= DCZ_REF_ONLY;   /* a build of the references alone (cpu/isa.h) */
    /* a compressed layer's batch-1 form is chosen by its input (run.c) */
    if (sparse) {
        c->n = 1;
        c->k[0] = stream ? DCZ_K_FC_STREAM_REF : force_reference ? DCZ_K_FC_SPARSE_REF
                : codebook ? DCZ_K_FC_CODEBOOK : DCZ_K_FC_SPARSE;
        return;
    }
    if (force_reference) {
        c->n = 1;
        c->k[0] = DCZ_K_FC_REF;
        return;
    }
    /* the transposed weights (load_layer.c) where the dense product runs */
    static const dcz_kernel list[] = { DCZ_K_FC_GEMM, DCZ_K_FC_ROWS };
    const int runs[] = { (forms & DCZ_FORM_DENSE) != 0, 1 };
    candidates(c, runs[0] ? DCZ_K_FC_GEMM : DCZ_K_FC_ROWS, list, 2, runs);
}

int dcz_plan_conv_as_fc(const dcz_conv_geom *g)
{
    return dcz_conv_pointwise(g) && g->in_h == 1 && g->in_w == 1 && dcz_conv_groups(g) == 1;
}

int dcz_plan_fc_layer(uint16_t op, const dcz_conv_geom *g)
{
    return op == DCZ_OP_DENSE || (op == DCZ_OP_CONV2D && dcz_plan_conv_as_fc(g));
}

void dcz_plan_conv(const dcz_conv_geom *g, int sparse, int codebook, uint64_t kept, int forms,
                   int force_reference, dcz_candidates *c)
{
    /* a build of the references alone: the direct ones, which compute
     * every convolution (the im2col references are faster ones, left out) */
    if (DCZ_REF_ONLY) {
        c->n = 1;
        c->k[0] = sparse ? DCZ_K_CONV_SPARSE_DIRECT_REF : DCZ_K_CONV_DIRECT_REF;
        return;
    }
    /* a 1 x 1 convolution of one input cell (squeeze-and-excitation's two,
     * after the global mean) is a fully connected layer: its kernels, whose
     * vectors hold output channels, where the convolutions' hold output
     * cells, of which it has one (the shift form spent a lane of 16 on each
     * multiply-add: MobileNetV3-Small's dense 576 -> 144 and 144 -> 576
     * took 28.5 and 29 us on one core of an AMD EPYC, Zen 4). Dense, each
     * output is its bias and its products in input order, the
     * convolution's bits; compressed, the fully connected layers' batch-1
     * forms (load_layer.c builds them for it), whose sums may differ from
     * the shift form's in their last bits. */
    if (!force_reference && dcz_plan_conv_as_fc(g)) {
        dcz_plan_fc(sparse, codebook, 0, forms, 0, c);
        return;
    }
    static const dcz_kernel list[] = { DCZ_K_CONV_WINO, DCZ_K_CONV_SHIFT, DCZ_K_CONV_EXPANDED, DCZ_K_CONV_GEMM,
                                       DCZ_K_CONV_SPARSE_IM2COL, DCZ_K_CONV_SPARSE_DIRECT, DCZ_K_CONV_GEMM_PIXELS,
                                       DCZ_K_CONV_DIRECT };
    /* what can run g here: each kernel's form built and its scratch within the cap */
    const int runs[] = {
        !sparse && (forms & DCZ_FORM_WINO) && dcz_conv2d_pick_wino(g),
        (forms & DCZ_FORM_SHIFT) && dcz_conv2d_shift_fits(g),
        sparse && (forms & DCZ_FORM_DENSE) && dcz_conv2d_pick_dense_im2col(g),
        !sparse && dcz_conv2d_pick_dense_im2col(g),
        sparse && dcz_conv2d_im2col_fits(g),
        sparse,
        !sparse && (forms & DCZ_FORM_DENSE) && dcz_conv2d_pick_pixels(g),
        !sparse,
    };
    /* the rules: a dense 3x3 convolution of stride 1 whose channels are
     * multiples of 16 by Winograd's F(2x2, 3x3) where its rule takes it,
     * else by the shift form (dcz_conv2d_wino_rule); the shift kernel where it
     * runs faster than the others; else a sparse one dense enough for the
     * dense product to beat its sparse kernels; the dense product of a 1x1
     * layer by pixel rows where its plane fills few vectors or it narrows
     * over a small plane (dcz_conv2d_pixels_rule) */
    const int wino_rule = runs[0] && (dcz_conv2d_wino_rule(g) || !runs[1]);
    dcz_kernel rule;
    if (wino_rule) rule = DCZ_K_CONV_WINO;
    else if (runs[1] && (runs[0] || dcz_conv2d_pick_shift(g, kept))) rule = DCZ_K_CONV_SHIFT;
    else if (runs[2] && dcz_conv2d_pick_expand(g, kept)) rule = DCZ_K_CONV_EXPANDED;
    else if (runs[4] && dcz_conv2d_pick_im2col(g))
        rule = force_reference ? DCZ_K_CONV_SPARSE_IM2COL_REF : DCZ_K_CONV_SPARSE_IM2COL;
    else if (sparse) rule = force_reference ? DCZ_K_CONV_SPARSE_DIRECT_REF : DCZ_K_CONV_SPARSE_DIRECT;
    else if (runs[3]) rule = force_reference ? DCZ_K_CONV_GEMM_REF
                              : runs[6] && dcz_conv2d_pixels_rule(g) ? DCZ_K_CONV_GEMM_PIXELS : DCZ_K_CONV_GEMM;
    else rule = force_reference ? DCZ_K_CONV_DIRECT_REF : DCZ_K_CONV_DIRECT;
    /* the references are the one kernel of a forced load */
    candidates(c, rule, list, force_reference ? 0 : sizeof list / sizeof *list, runs);
}

dcz_kernel dcz_plan_conv_shift(const dcz_conv_geom *g, const dcz_shift *f)
{
    const char *dw = dcz_conv2d_shift_depthwise(g, f);
    if (!dw) return DCZ_K_CONV_SHIFT;
    return dw[0] == 'l' ? DCZ_K_CONV_DEPTHWISE_LANES : dw[0] == 'p' ? DCZ_K_CONV_DEPTHWISE_PLANE
                                                                     : DCZ_K_CONV_DEPTHWISE_ROWS;
}

void dcz_plan_qconv(const dcz_conv_geom *g, uint64_t kept, int32_t qmax, int forms, int force_reference,
                    int declined, int f32_exact, dcz_candidates *c)
{
    force_reference |= DCZ_REF_ONLY;
    if (DCZ_REF_ONLY) forms = 0;
    const int q8 = qmax == 127;
    static const dcz_kernel list[] = { DCZ_K_QCONV_SHIFT, DCZ_K_QCONV_GEMM, DCZ_K_QCONV_DEPTHWISE,
                                       DCZ_K_QCONV_TAPS, DCZ_K_QCONV_F32 };
    /* a form that declined leaves out both the shift form and the int16
     * pairs */
    const int runs[] = {
        !declined && q8 && (forms & DCZ_FORM_QSHIFT) && dcz_qconv2d_pick_shift(g),
        !declined && q8 && (forms & DCZ_FORM_QDENSE) && dcz_conv2d_pick_dense_im2col(g),
        !force_reference && q8 && dcz_qconv2d_depthwise_runs(g),
        1,
        !force_reference && q8 && f32_exact && (forms & DCZ_FORM_SHIFT) && dcz_conv2d_shift_fits(g),
    };
    /* the rules: the integer shift form where this CPU runs it; else the
     * float shift form on the integer weights where the float rule would
     * take it against a dense product twice as fast as the float one (the
     * int16 pairs' two multiply-adds a lane), but for a depthwise layer the
     * integer depthwise kernel runs; else an ungrouped convolution dense
     * enough for the integer product gets its weights as dense int16
     * pairs */
    dcz_kernel rule;
    if (runs[0]) rule = DCZ_K_QCONV_SHIFT;
    else if (runs[4] && !runs[2] && dcz_conv2d_pick_shift(g, 2 * kept)) rule = DCZ_K_QCONV_F32;
    else if (runs[1] && dcz_conv2d_pick_expand(g, kept)) rule = DCZ_K_QCONV_GEMM;
    else if (runs[2]) rule = DCZ_K_QCONV_DEPTHWISE;
    else rule = force_reference ? DCZ_K_QCONV_TAPS_REF : DCZ_K_QCONV_TAPS;
    candidates(c, rule, list, force_reference ? 0 : sizeof list / sizeof *list, runs);
}

dcz_kernel dcz_plan_qconv_shift(const dcz_qshift *f)
{
    switch (dcz_qshift_depthwise(f)) {
    case DCZ_QDW_BYTES: return DCZ_K_QCONV_SHIFT_DEPTHWISE;
    case DCZ_QDW_PAIRS: return DCZ_K_QCONV_DEPTHWISE_PAIRS;
    default: break;
    }
    return f->amx_pick ? DCZ_K_QCONV_AMX : DCZ_K_QCONV_SHIFT;
}

void dcz_plan_qfc(int32_t qmax, int lanes, int stream, int force_reference, dcz_candidates *c)
{
    force_reference |= DCZ_REF_ONLY;
    static const dcz_kernel list[] = { DCZ_K_QFC8_LANES, DCZ_K_QFC8 };
    const int runs[] = { lanes, 1 };
    c->n = 1;
    if (stream) c->k[0] = DCZ_K_QFC_STREAM_REF;
    else if (force_reference) c->k[0] = DCZ_K_QFC_REF;
    else if (qmax != 127) c->k[0] = DCZ_K_QFC;
    else candidates(c, lanes ? DCZ_K_QFC8_LANES : DCZ_K_QFC8, list, 2, runs);
}

int dcz_kernel_shifts(dcz_kernel k)
{
    return k == DCZ_K_CONV_SHIFT || k == DCZ_K_CONV_DEPTHWISE_LANES || k == DCZ_K_CONV_DEPTHWISE_PLANE ||
           k == DCZ_K_CONV_DEPTHWISE_ROWS || k == DCZ_K_QCONV_SHIFT || k == DCZ_K_QCONV_SHIFT_DEPTHWISE ||
           k == DCZ_K_QCONV_DEPTHWISE_PAIRS ||
           k == DCZ_K_QCONV_AMX;
}

int dcz_kernel_patches(dcz_kernel k)
{
    return k == DCZ_K_CONV_GEMM || k == DCZ_K_CONV_GEMM_REF || k == DCZ_K_CONV_EXPANDED || k == DCZ_K_CONV_GEMM_PIXELS ||
           k == DCZ_K_CONV_SPARSE_IM2COL || k == DCZ_K_CONV_SPARSE_IM2COL_REF || k == DCZ_K_QCONV_GEMM;
}

/* Real entries of s (its entries less the fillers). */
static uint64_t real_entries(const dcz_sparse *s)
{
    uint64_t n = 0;
    for (uint32_t e = 0; e < s->entries; e++) n += s->step[e] != DCZ_STEP_FILLER;
    return n;
}

dcz_gpu_kernel dcz_gpu_pick(const dcz_exec_layer *l)
{
    const dcz_op_info *o = dcz_op_get(l->op);
    if (!o || !o->weighted) return DCZ_GK_ELEMENT;
    const int conv = l->op == DCZ_OP_CONV2D, grouped = conv && dcz_conv_groups(&l->geom) > 1;
    if (l->q) {
        const int direct = grouped || l->geom.out_h * l->geom.out_w >= DCZ_GPU_DIRECT_MIN_PLANE;
        return !conv ? DCZ_GK_QFC : direct ? DCZ_GK_QCONV_DIRECT : DCZ_GK_QCONV_IM2COL;
    }
    if (!l->sparse) return !conv ? DCZ_GK_DENSE_FC : grouped ? DCZ_GK_CONV_DENSE_DIRECT : DCZ_GK_CONV_DENSE;
    const double cells = (double)l->sp.rows * l->sp.cols, kept = (double)real_entries(&l->sp);
    if (grouped) return cells > 0 && kept >= DCZ_GPU_GROUPED_DENSE_DENSITY * cells ? DCZ_GK_CONV_DIRECT_WIDE
                                                                                   : DCZ_GK_CONV_DIRECT;
    const int wide = cells > 0 && kept >= DCZ_GPU_DENSE_DENSITY * cells;
    if (conv) return wide ? DCZ_GK_CONV_IM2COL_WIDE : DCZ_GK_CONV_IM2COL;
    return wide ? DCZ_GK_SPARSE_FC_WIDE : DCZ_GK_SPARSE_FC;
}

int dcz_gpu_dense_copy(const dcz_exec_layer *l, dcz_gpu_kernel k, size_t batch)
{
    switch (k) {
    case DCZ_GK_SPARSE_FC_WIDE: return batch > 1;
    case DCZ_GK_CONV_DIRECT_WIDE: return 1;
    case DCZ_GK_CONV_IM2COL_WIDE:
        return (batch > 1 && dcz_conv_pointwise(&l->geom)) ||
               (double)batch * l->geom.out_c * l->geom.out_h * l->geom.out_w >= DCZ_GPU_DIRECT_MIN_OUTPUTS;
    default: return 0;
    }
}

int dcz_gpu_by_patches(const dcz_exec_layer *l, dcz_gpu_kernel k, size_t batch)
{
    switch (k) {
    case DCZ_GK_QCONV_IM2COL: return 1;
    case DCZ_GK_CONV_DENSE: return !dcz_conv_pointwise(&l->geom);
    case DCZ_GK_CONV_IM2COL:
    case DCZ_GK_CONV_IM2COL_WIDE:
        return !dcz_conv_pointwise(&l->geom) || (batch > 1 && !dcz_gpu_dense_copy(l, k, batch));
    case DCZ_GK_QCONV_DIRECT:
        return dcz_conv_groups(&l->geom) == 1 &&
               (double)batch * l->geom.out_c * l->geom.out_h * l->geom.out_w < DCZ_GPU_DIRECT_MIN_OUTPUTS;
    default: return 0;
    }
}

dcz_status dcz_plan_finish(dcz_model *m)
{
    const int ref = DCZ_REF_ONLY || m->opt.force_reference;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        dcz_exec_layer *l = &m->layers[i];
#if DCZ_HEAP || defined(DCZ_CUDA)   /* what the CUDA backend runs and dcz info shows (describe.c) */
        l->gpu_kernel = (uint8_t)dcz_gpu_pick(l);
#endif
        if (dcz_op_get(l->op)->weighted || l->op >= sizeof elements / sizeof *elements) continue;
        const element_kernels *e = &elements[l->op];
        if (!l->q) l->kernel = (uint8_t)(ref ? e->f32_ref : e->f32);
        /* a mean whose output keeps its input's scale is the integer mean */
        else if (l->op == DCZ_OP_GLOBAL_AVGPOOL &&
                 dcz_f32_bits(m->t_scale[l->tin[0]]) == dcz_f32_bits(m->t_scale[i + 1]))
            l->kernel = DCZ_K_QMEAN_REF;
        else l->kernel = (uint8_t)(ref ? e->q_ref : e->q);
    }
    /* (the loader refuses the layers that have no kernel before this) */
    for (uint32_t i = 0; i < m->nlayers; i++)
        if (m->layers[i].kernel == DCZ_K_NONE) return DCZ_ERR_UNSUPPORTED;
    return DCZ_OK;
}
