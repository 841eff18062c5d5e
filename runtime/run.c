/* run.c: executing a loaded model, layer by layer (runs of per-sample
 * layers a chunk of samples at a time: "segments" below), its activations
 * in the places the loader planned from their lifetimes. Dense layers with sparse
 * weights use the matrix-vector kernel at batch 1 and the matrix-matrix
 * kernel above; float convolutions run on the shift form where it pays
 * (kernels_shift.c; shift_form.c, dcz_conv2d_pick_shift), sparse ones otherwise on the
 * dense product when dense enough, else the direct sparse kernel, or im2col
 * and the matrix-matrix kernel on small output planes (the choice and the
 * measurements behind it: kernels_conv.c). The sparse kernels read the
 * compressed execution form. They are the vectorized kernels of
 * kernels_spmv.c, kernels_spmm.c and the others, or the references when the options force
 * them. The scratch of im2col, of the shift form and of dcz_spmm's tile is
 * sized and placed at load.
 *
 * A heap model grows its activation buffers to the largest batch it has
 * run; a static one (dcz_open_static) has them in its arena for act_batch
 * samples (its chunk block for the largest chunk, or act_batch when
 * fewer) and runs a larger batch that many samples at a time, so running
 * never allocates.
 *
 * A calibrated model runs its integer region (the layers from the first
 * weighted one to the last) on dcz_q activations: the input of the first
 * weighted layer is quantized, each weighted layer accumulates in int64 and
 * requantizes to its output's scale, Add, Mul and Concat rescale their
 * inputs, activations read a table, and the last weighted layer's
 * accumulators become floats again (qload.c has the constants,
 * kernels_int.c the kernels).
 *
 * A model placed on a GPU (gpu.h) runs there: dcz_run hands it to
 * dcz_gpu_run; dcz_run_tapped always runs the CPU form.
 *
 * Checked by tests/unit/test_format.c, tests/unit/test_kernels.c and
 * tests/unit/test_static.c (no allocation, chunks equal one heap run), and
 * end to end by tests/cli (dcz eval equals the accuracy each stage reports).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/f32/bands.h"
#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/dense.h"
#include "runtime/cpu/f32/elem.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/model.h"
#ifdef DCZ_CUDA
#include "runtime/cuda/gpu.h"
#endif

#if DCZ_HEAP
/* The integer accumulators of a heap model (qacc): a batch's, then room for
 * the region's quantized input, then, on a model with threads, each
 * thread's for its chunks (run_batch): int64s from the start. */
static size_t qacc_head(const dcz_model *m, size_t batch)
{
    return (batch * m->max_width * (sizeof(int64_t) + sizeof(dcz_q)) + sizeof(int64_t) - 1) / sizeof(int64_t);
}

static size_t qacc_chunk(const dcz_model *m, size_t cbatch)
{
    return m->pool ? (size_t)m->threads * cbatch * m->max_width : 0;
}

/* A heap model's blocks for batch samples, the chunk block for cbatch
 * (one for each thread of its pool, which may run a segment's chunks at
 * once: run_batch). */
static dcz_status ensure_act(dcz_model *m, size_t batch, size_t cbatch)
{
    const size_t was_head = qacc_head(m, m->act_batch), was_chunk = qacc_chunk(m, m->cact_batch);
    if (m->chunk_width && cbatch > m->cact_batch) {
        const size_t blocks = m->pool ? m->threads : 1;
        if (cbatch > SIZE_MAX / sizeof(float) / m->chunk_width / blocks ||
            cbatch > SIZE_MAX / sizeof(int64_t) / m->max_width / blocks)
            return DCZ_ERR_NOMEM;
        /* grown before a run, which writes every activation before it reads it */
        free(m->cact);
        m->cact_batch = 0;
        m->cact = dcz_walked_alloc(cbatch * m->chunk_width * blocks * sizeof(float));
        if (!m->cact) return DCZ_ERR_NOMEM;
        m->cact_batch = cbatch;
    }
    if (batch > m->act_batch) {
        if (batch > SIZE_MAX / 3 / sizeof(int64_t) / m->max_width ||
            batch > SIZE_MAX / sizeof(float) / m->act_width)
            return DCZ_ERR_NOMEM;
        free(m->act);
        m->act_batch = 0;
        m->act = dcz_walked_alloc(batch * m->act_width * sizeof(float));
        if (!m->act) return DCZ_ERR_NOMEM;
        m->act_batch = batch;
    }
    const size_t head = qacc_head(m, m->act_batch), chunk = qacc_chunk(m, m->cact_batch);
    if (m->scheme != DCZ_SCHEME_NONE && (!m->qacc || head != was_head || chunk != was_chunk)) {
        if (chunk > SIZE_MAX / sizeof(int64_t) - head) return DCZ_ERR_NOMEM;
        int64_t *q = realloc(m->qacc, (head + chunk) * sizeof(int64_t));
        if (!q) {   /* the blocks' sizes asked again at the next call */
            m->act_batch = m->cact_batch = 0;
            return DCZ_ERR_NOMEM;
        }
        m->qacc = q;
    }
    return DCZ_OK;
}
#endif

/* ---- integer layers ------------------------------------------------------ */

/* y (n) = the integers x (n) of scale s as floats: x s in double, rounded
 * once (what a tap sees of a tensor of the integer region) */
static void dequantize_q(const void *x, size_t n, float s, float *y)
{
    const dcz_q *q = x;
    for (size_t i = 0; i < n; i++) y[i] = (float)((double)q[i] * s);
}

/* ---- the kernels, by the plan's value --------------------------------------
 * Each function runs one kernel of plan.h; the table at the end of this
 * section maps the plan's value to it. A float kernel takes its layer, its
 * inputs xs (xs[0] the first) and batch samples into y; an integer kernel
 * its layer's index in the integer region, dcz_q inputs, and writes dcz_q
 * (float for the last weighted layer). */
typedef void (*run_fn)(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                       float *y);
typedef void (*qrun_fn)(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y);

/* The activation a float layer applies as it writes its output when the
 * run fuses (load.c), else NULL. */
static const dcz_act *fused_act(const dcz_model *m, const dcz_exec_layer *l)
{
    return m->fuse && l->act.op ? &l->act : NULL;
}

/* ---- float fully connected layers ------------------------------------------ */

static void run_fc_gemm(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                        float *y)
{
    /* act in the product's registers */
    dcz_gemm_f32_act(fused_act(m, l), batch, l->out, l->in, xs[0], l->in, l->wt, dcz_gemm_ldb(l->out), NULL,
                     l->bias, y, l->out);
}

static void run_fc_rows(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                        float *y)
{
    dcz_dense_f32(l->w, l->bias, xs[0], batch, l->in, l->out, y);
    dcz_act_apply(fused_act(m, l), y, batch * l->out);
}

static void run_fc_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                       float *y)
{
    dcz_dense_f32_ref(l->w, l->bias, xs[0], batch, l->in, l->out, y);
}

/* Compressed rows, split over the threads where the layer is worth it
 * (the loader sized the scratch for the spmm tile and, where a lane form
 * was built, for the input's panels): at batch 1 the lane, column or row
 * form, whichever visits less for this input, act in its stores; above,
 * the batch product. */
static void run_fc_sparse(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                          float *y)
{
    dcz_pool *pool = dcz_sparse_split(&l->sp) ? m->pool : NULL;
    const dcz_act *act = fused_act(m, l);
    if (batch == 1) {
        const dcz_spmv_kind kind = dcz_spmv_pick(&l->sp, xs[0]);
        dcz_spmv_pool(pool, &l->sp, kind, l->bias, act, dcz_spmv_input(&l->sp, kind, xs[0], m->scratch), y);
        return;
    }
    dcz_spmm_pool(pool, &l->sp, l->bias, xs[0], batch, y, m->scratch, m->scratch_floats);
    dcz_act_apply(act, y, batch * l->out);
}

static void run_fc_sparse_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                              size_t batch, float *y)
{
    if (batch == 1) dcz_spmv_ref(&l->sp, l->bias, xs[0], y);
    else dcz_spmm_ref(&l->sp, l->bias, xs[0], batch, y);
}

static void run_fc_stream_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                              size_t batch, float *y)
{
    dcz_fc_stream_ref(l->wv, l->sp.codebook, l->bias, xs[0], batch, y, m->scratch);
}

/* ---- float convolutions ------------------------------------------------------ */

/* A pointwise convolution l (dense weights w, or where w is NULL its shift
 * form) with the depthwise layer after it, by bands into that layer's
 * place (load.c: pair_bands) */
static void run_bands(const dcz_model *m, const dcz_exec_layer *l, dcz_pool *pool, const float *w,
                      const float *const *xs, size_t batch, float *y)
{
    const dcz_exec_layer *d = &m->layers[l->band];
    dcz_conv2d_bands_pool(pool, &l->geom, w, w ? NULL : &l->shift, l->bias, &l->act, &d->geom, &d->shift, d->bias,
                          &d->act, xs[0], batch, m->scratch, m->scratch_floats, y);
}

/* The shift form (its depthwise kernels too: the form holds which), with
 * the activation, and the ADD after it where it takes it (l->res, its
 * other input xs[1]), in its stores when the run fuses. */
static void run_conv_shift(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                           float *y)
{
    /* output channel blocks over the threads of a heap model (the bits of
     * one thread) */
    const dcz_act none = { 0, 0.0f, 0.0f };
    dcz_pool *pool = dcz_conv2d_shift_splits(&l->geom, &l->shift) ? m->pool : NULL;
    if (m->fuse && l->band) {
        run_bands(m, l, pool, NULL, xs, batch, y);
        return;
    }
    dcz_conv2d_shift_pool(pool, &l->geom, &l->shift, l->bias, xs[0], batch, m->fuse ? &l->act : &none,
                          m->fuse && l->res ? xs[1] : NULL, m->scratch, y);
}

static void run_conv_wino(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                          float *y)
{
    /* act in the output transform's registers */
    dcz_wino p;
    dcz_wino_init_geom(&p, &l->geom);
    /* its 16 products over the threads of a heap model (the bits of one thread) */
    dcz_wino_conv_pool(dcz_wino_splits(&p) ? m->pool : NULL, &p, l->wu, l->bias, fused_act(m, l), xs[0], batch, 0,
                       m->scratch, y);
}

/* Dense weights (or sparse ones expanded at load) times the patches, act
 * in the product's registers as its tiles store the sums (a pass over the
 * output took 5.5% of dense MobileNetV2-style at batch 64). */
static void run_conv_gemm(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                          float *y)
{
    /* over the threads of a heap model (the bits of one thread) */
    dcz_pool *pool = dcz_conv2d_dense_splits(&l->geom) ? m->pool : NULL;
    if (m->fuse && l->band) {
        run_bands(m, l, pool, l->w, xs, batch, y);
        return;
    }
    /* its output channels split */
    dcz_conv2d_dense_im2col_pool(pool, &l->geom, l->w, l->bias, xs[0], batch, 0, fused_act(m, l), m->scratch, y);
}

/* a 1x1 layer by pixel rows, split over the threads as the dense product */
static void run_conv_pixels(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                            float *y)
{
    dcz_pool *pool = dcz_conv2d_dense_splits(&l->geom) ? m->pool : NULL;
    dcz_conv2d_pixels_pool(pool, &l->geom, l->wt, l->bias, xs[0], batch, fused_act(m, l), m->scratch, y);
}

static void run_conv_gemm_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                              size_t batch, float *y)
{
    dcz_conv2d_dense_im2col_act(&l->geom, l->w, l->bias, xs[0], batch, 1, NULL, m->scratch, y);
}

/* The direct kernels: the vector rows give the scalar rows' bits, and a
 * geometry the vector rows do not take runs on the scalar ones. */
static void run_conv_direct(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                            float *y)
{
    if (!dcz_conv2d_dense_isa(dcz_isa_best(), &l->geom, l->w, l->bias, xs[0], batch, y))
        dcz_conv2d_dense_isa(DCZ_ISA_REF, &l->geom, l->w, l->bias, xs[0], batch, y);
    dcz_act_apply(fused_act(m, l), y, batch * l->out);
}

static void run_conv_direct_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                                size_t batch, float *y)
{
    dcz_conv2d_dense_isa(DCZ_ISA_REF, &l->geom, l->w, l->bias, xs[0], batch, y);
}

static void run_conv_sparse_im2col(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                                   size_t batch, float *y)
{
    dcz_conv2d_sparse_im2col(&l->geom, &l->sp, l->bias, xs[0], batch, 0, m->scratch, y);
    dcz_act_apply(fused_act(m, l), y, batch * l->out);
}

static void run_conv_sparse_im2col_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                                       size_t batch, float *y)
{
    dcz_conv2d_sparse_im2col(&l->geom, &l->sp, l->bias, xs[0], batch, 1, m->scratch, y);
}

static void run_conv_sparse_direct(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                                   size_t batch, float *y)
{
    if (!dcz_conv2d_sparse_direct_isa(dcz_isa_best(), &l->geom, &l->sp, l->bias, xs[0], batch, y))
        dcz_conv2d_sparse_direct_isa(DCZ_ISA_REF, &l->geom, &l->sp, l->bias, xs[0], batch, y);
    dcz_act_apply(fused_act(m, l), y, batch * l->out);
}

static void run_conv_sparse_direct_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                                       size_t batch, float *y)
{
    dcz_conv2d_sparse_direct_isa(DCZ_ISA_REF, &l->geom, &l->sp, l->bias, xs[0], batch, y);
}

/* ---- float layers without weights --------------------------------------------- */

static void run_maxpool(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                        float *y)
{
    dcz_maxpool_pool(m->pool, &l->geom, xs[0], batch, y);
}

static void run_maxpool_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                            size_t batch, float *y)
{
    dcz_maxpool_ref(&l->geom, xs[0], batch, y);
}

static void run_avgpool(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                        float *y)
{
    dcz_avgpool(&l->geom, l->count_include_pad, xs[0], batch, y);
}

static void run_avgpool_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                            size_t batch, float *y)
{
    dcz_avgpool_ref(&l->geom, l->count_include_pad, xs[0], batch, y);
}

static void run_global_avgpool(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                               size_t batch, float *y)
{
    dcz_global_avgpool(l->geom.in_c, l->geom.in_h * l->geom.in_w, xs[0], batch, y);
}

static void run_global_avgpool_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                                   size_t batch, float *y)
{
    dcz_global_avgpool_ref(l->geom.in_c, l->geom.in_h * l->geom.in_w, xs[0], batch, y);
}

/* FLATTEN: the data of (C, H, W) in C order is already flat */
static void run_copy(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                     float *y)
{
    memcpy(y, xs[0], batch * l->in * sizeof *y);
}

static void run_relu(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                     float *y)
{
    dcz_relu(xs[0], batch * l->in, y);
}

static void run_relu_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                         float *y)
{
    memmove(y, xs[0], batch * l->in * sizeof *y);   /* y may be x (in place) */
    dcz_relu_ref(y, batch * l->in);
}

static void run_softmax_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                            size_t batch, float *y)
{
    memcpy(y, xs[0], batch * l->in * sizeof *y);
    dcz_softmax_ref(y, batch, l->in);
}

static void run_add(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                    float *y)
{
    dcz_add_pool(m->pool, xs[0], xs[1], batch * l->in, m->fuse ? &l->act : NULL, y);
}

static void run_add_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                        float *y)
{
    dcz_add_ref(xs[0], xs[1], batch * l->in, y);
}

static void run_mul_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                        float *y)
{
    const uint32_t factors = m->tensors[l->tin[1]].width;
    dcz_mul_ref(xs[0], xs[1], batch, factors, l->in / factors, y);
}

static void run_mul(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch, float *y)
{
    const uint32_t factors = m->tensors[l->tin[1]].width;
    dcz_mul(xs[0], xs[1], batch, factors, l->in / factors, y);
}

/* The widths of layer l's inputs (a sample's elements each). */
static void input_widths(const dcz_model *m, const dcz_exec_layer *l, uint32_t width[DCZ_MAX_INPUTS])
{
    for (uint32_t k = 0; k < l->nin; k++) width[k] = m->tensors[l->tin[k]].width;
}

/* the inputs' copies split over the threads where the output is large
 * (dcz_concat_pool) */
static void run_concat(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch, float *y)
{
    uint32_t width[DCZ_MAX_INPUTS];
    input_widths(m, l, width);
    dcz_concat_pool(m->pool, xs, width, l->nin, batch, y);
}

static void run_concat_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                           size_t batch, float *y)
{
    uint32_t width[DCZ_MAX_INPUTS];
    input_widths(m, l, width);
    dcz_concat_ref(xs, width, l->nin, batch, y);
}

static void run_gather_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                           size_t batch, float *y)
{
    const dcz_conv_geom *g = &l->geom;
    dcz_gather_channels_ref(xs[0], sizeof *y, g->in_c, g->out_c, g->in_h * g->in_w, l->gather_start,
                            l->gather_groups, batch, y);
}

static void run_clip(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                     float *y)
{
    dcz_clip(l->param[0], l->param[1], xs[0], batch * l->in, y);
}

static void run_activation_ref(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs,
                               size_t batch, float *y)
{
    dcz_activation_ref(l->op, l->param, xs[0], batch * l->in, y);
}

static void run_activation(const dcz_model *m, const dcz_exec_layer *l, const float *const *xs, size_t batch,
                           float *y)
{
    dcz_activation(l->op, l->param, xs[0], batch * l->in, y);
}

/* ---- the integer region's weighted layers ---------------------------------- */

/* The accumulators of a weighted layer, by its kernel. */
static void qweights_shift(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                           int64_t *acc)
{
    dcz_qconv2d_shift(&l->geom, &l->qshift, l->qbias, x, batch, 0, m->scratch, acc);
}

static void qweights_gemm(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                          int64_t *acc)
{
    dcz_qconv2d_gemm(&l->geom, l->qw2, l->qbias, x, batch, (int32_t *)(void *)m->scratch, acc);
}

static void qweights_f32(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                         int64_t *acc)
{
    dcz_qconv2d_f32(m->pool, &l->geom, &l->shift, &l->qs, l->qover, l->qbias, x, batch, m->scratch, acc);
}

static void qweights_taps(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                          int64_t *acc)
{
    dcz_qconv2d_sparse_taps(&l->geom, &l->qs, l->qbias, x, batch, dcz_qtap_best(), acc);
}

/* (a geometry the depthwise kernel declines runs on the taps) */
static void qweights_depthwise(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                               int64_t *acc)
{
    if (!dcz_qconv2d_depthwise(&l->geom, &l->qs, l->qbias, x, batch, (dcz_q *)(void *)m->scratch, acc))
        qweights_taps(m, l, x, batch, acc);
}

static void qweights_taps_ref(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                              int64_t *acc)
{
    dcz_qconv2d_sparse_taps(&l->geom, &l->qs, l->qbias, x, batch, dcz_qtap_ref, acc);
}

static void qweights_fc8(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                         int64_t *acc)
{
    dcz_qspmm8(&l->qs, l->qbias, x, batch, (int16_t *)(void *)m->scratch, acc);
}

static void qweights_fc(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                        int64_t *acc)
{
    dcz_qspmm(&l->qs, l->qbias, x, batch, acc);
}

static void qweights_fc_ref(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                            int64_t *acc)
{
    dcz_qspmm_ref(&l->qs, l->qbias, x, batch, acc);
}

static void qweights_fc_stream_ref(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                                   int64_t *acc)
{
    dcz_qfc_stream_ref(l->wv, l->qs.qtab, l->qbias, x, batch, acc, m->scratch);
}

typedef void (*qweights_fn)(const dcz_model *m, const dcz_exec_layer *l, const dcz_q *x, size_t batch,
                            int64_t *acc);

/* A weighted layer of the integer region: its accumulators, then
 * requantized to its output's scale and clamped (to the activation fused
 * in: load.c), or as floats for the last weighted layer; ref: the
 * references' requantization and clamp. */
static void qrun_weighted(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y,
                          qweights_fn accumulate, int ref)
{
    const dcz_exec_layer *l = &m->layers[index];
    const uint32_t plane = l->out / l->channels;
    accumulate(m, l, xs[0], batch, m->qacc);
    if (index == m->q_last) {
        /* (the scale of channel c: s_in s_w[c]) */
        if (ref) dcz_dequantize_ref(m->qacc, batch, l->channels, plane, l->out_scale, y);
        else dcz_dequantize(m->qacc, batch, l->channels, plane, l->out_scale, m->qmax, y);
        return;
    }
    const int32_t lo = m->fuse ? l->qlo : -m->qmax, hi = m->fuse ? l->qhi : m->qmax;
    dcz_requant rq = { l->rq_mult, l->rq_shift, m->qmax, l->rq_pre };
    if (m->qmax == 127 && !ref) dcz_requant8(&rq, m->qacc, batch, l->channels, plane, y);
    else dcz_requant_ref(&rq, m->qacc, batch, l->channels, plane, y);
    if (lo != -m->qmax || hi != m->qmax) {
        if (ref) dcz_qclamp_ref(y, batch * l->out, lo, hi);
        else dcz_qclamp(y, batch * l->out, lo, hi);
    }
}

/* Whether integer activation l writes the byte planes of the depthwise
 * convolution after it in this run of batch samples, which then runs on
 * them (load.c, pair_table_planes) */
static int qtable_planes(const dcz_model *m, const dcz_exec_layer *l, size_t batch)
{
    return m->fuse && !m->keep_acc && batch == 1 && l->qplanes;
}

/* The integer shift form: requantized in its own registers (with the 2x2
 * max pool after it where it takes it) when nothing reads its
 * accumulators and its form runs so, else as the others. When the run
 * fuses, its channels without a weight are left to the next layer where
 * that takes them as constants, and it takes those the layer before left
 * (load.c, pair_constants). */
static void qrun_conv_shift(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    if (index != m->q_last && !m->keep_acc) {
        const int32_t lo = m->fuse ? l->qlo : -m->qmax, hi = m->fuse ? l->qhi : m->qmax;
        const dcz_requant rq = { l->rq_mult, l->rq_shift, m->qmax, l->rq_pre };
        dcz_pool *pool = dcz_qconv2d_shift_requant_splits(&l->geom, &l->qshift) ? m->pool : NULL;
        /* (the activation before wrote the byte planes: x NULL) */
        const int planes = index && qtable_planes(m, &m->layers[index - 1], batch);
        if (dcz_qconv2d_shift_requant(pool, &l->geom, &l->qshift, l->qbias, &rq, lo, hi, m->fuse && l->qpool,
                                      m->fuse && l->qskip, m->fuse && l->qin.none ? &l->qin : NULL,
                                      planes ? NULL : (const dcz_q *)xs[0], batch, m->scratch, y))
            return;
    }
    qrun_weighted(m, index, xs, batch, y, qweights_shift, 0);
}

/* The float shift form on integer weights: requantized as its sums are
 * converted back when nothing reads its accumulators, else as the others */
static void qrun_conv_f32(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    if (index != m->q_last && !m->keep_acc && m->qmax == 127) {
        const int32_t lo = m->fuse ? l->qlo : -m->qmax, hi = m->fuse ? l->qhi : m->qmax;
        const dcz_requant rq = { l->rq_mult, l->rq_shift, m->qmax, l->rq_pre };
        dcz_qconv2d_f32_requant(m->pool, &l->geom, &l->shift, &l->qs, l->qover, l->qbias, &rq, lo, hi, xs[0], batch,
                                m->scratch, y);
        return;
    }
    qrun_weighted(m, index, xs, batch, y, qweights_f32, 0);
}

/* ---- the integer region's layers without weights --------------------------- */

/* pooled already by the convolution before when the run fuses (load.c): a
 * sample's pooled planes lie at the start of its place */
static int qpool_fused(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    if (!m->fuse || l->fused != DCZ_FUSED_POOL) return 0;
    for (size_t b = 0; b < batch; b++)
        memcpy((dcz_q *)y + b * l->out, (const dcz_q *)xs[0] + b * l->in, l->out * sizeof(dcz_q));
    return 1;
}

static void qrun_maxpool(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    if (!qpool_fused(m, index, xs, batch, y)) dcz_qmaxpool(&m->layers[index].geom, xs[0], batch, y);
}

static void qrun_maxpool_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch,
                             void *y)
{
    dcz_qmaxpool_ref(&m->layers[index].geom, xs[0], batch, y);
}

static void qrun_avgpool(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    dcz_qavgpool(&l->geom, l->count_include_pad, xs[0], batch, y);
}

static void qrun_avgpool_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch,
                             void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    dcz_qavgpool_ref(&l->geom, l->count_include_pad, xs[0], batch, y);
}

static void qrun_mean_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    dcz_qglobal_avgpool_ref(l->geom.in_c, l->geom.in_h * l->geom.in_w, xs[0], batch, y);
}

static void qrun_mean_rescale(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch,
                              void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    dcz_qglobal_avgpool_rescale(l->geom.in_c, l->geom.in_h * l->geom.in_w, xs[0], batch, l->in_mult[0],
                                l->in_shift[0], m->qmax, y);
}

static void qrun_mean_rescale_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch,
                                  void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    dcz_qglobal_avgpool_rescale_ref(l->geom.in_c, l->geom.in_h * l->geom.in_w, xs[0], batch, l->in_mult[0],
                                    l->in_shift[0], m->qmax, y);
}

static void qrun_relu(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    memmove(y, xs[0], batch * l->in * sizeof(dcz_q));
    dcz_qrelu(y, batch * l->in);
}

static void qrun_relu_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    memmove(y, xs[0], batch * l->in * sizeof(dcz_q));
    dcz_qrelu_ref(y, batch * l->in);
}

static void qrun_copy(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    memmove(y, xs[0], batch * m->layers[index].in * sizeof(dcz_q));
}

/* the sum's bounds: the activation fused in when the run fuses (load.c);
 * its terms looked up where the loader made its tables (qload.c) */
static void qrun_add(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    if (m->fuse) dcz_qadd(xs[0], xs[1], batch * l->in, l->in_mult, l->in_shift, l->qlo, l->qhi, l->table, y);
    else dcz_qadd(xs[0], xs[1], batch * l->in, l->in_mult, l->in_shift, -m->qmax, m->qmax, l->table, y);
}

static void qrun_add_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    dcz_qadd_ref(xs[0], xs[1], batch * l->in, l->in_mult, l->in_shift, m->qmax, y);
}

static void qrun_mul(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    const uint32_t factors = m->tensors[l->tin[1]].width;
    dcz_qmul(xs[0], xs[1], batch, factors, l->in / factors, l->in_mult[0], l->in_shift[0], m->qmax, y);
}

static void qrun_mul_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    const uint32_t factors = m->tensors[l->tin[1]].width;
    dcz_qmul_ref(xs[0], xs[1], batch, factors, l->in / factors, l->in_mult[0], l->in_shift[0], m->qmax, y);
}

static void qrun_concat(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    uint32_t width[DCZ_MAX_INPUTS];
    input_widths(m, l, width);
    dcz_qconcat((const dcz_q *const *)xs, width, l->nin, batch, l->in_mult, l->in_shift, m->qmax, l->table, y);
}

static void qrun_concat_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch,
                            void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    uint32_t width[DCZ_MAX_INPUTS];
    input_widths(m, l, width);
    dcz_qconcat_ref((const dcz_q *const *)xs, width, l->nin, batch, l->in_mult, l->in_shift, m->qmax, y);
}

static void qrun_gather_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch,
                            void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    const dcz_conv_geom *g = &l->geom;
    dcz_gather_channels_ref(xs[0], sizeof(dcz_q), g->in_c, g->out_c, g->in_h * g->in_w, l->gather_start,
                            l->gather_groups, batch, y);
}

/* (when the run fuses, the planes the convolution before left unwritten
 * skipped: load.c, pair_constants) */
static void qrun_table(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    if (qtable_planes(m, l, batch)) {
        const dcz_exec_layer *d = &m->layers[index + 1];
        uint8_t tb[256];
        dcz_qtable_bytes(l->table, m->qmax, tb);
        dcz_qdw_planes_table(&d->geom, &d->qshift, d->qin.none ? &d->qin : NULL, xs[0], tb, (uint8_t *)m->scratch);
        return;
    }
    if (m->fuse && l->qin.none)
        dcz_qtable_planes(l->table, m->qmax, xs[0], batch, l->in_shape.dims[0], l->in / l->in_shape.dims[0],
                          l->qin.none, y);
    else dcz_qtable(l->table, m->qmax, xs[0], batch * l->in, y);
}

static void qrun_table_ref(const dcz_model *m, uint32_t index, const void *const *xs, size_t batch, void *y)
{
    const dcz_exec_layer *l = &m->layers[index];
    dcz_qtable_ref(l->table, m->qmax, xs[0], batch * l->in, y);
}

/* ---- the dispatch table ----------------------------------------------------- */

/* A kernel that a build of the references alone (cpu/isa.h) leaves out:
 * every kernel but the references, and the im2col references of float
 * convolutions (their direct ones compute every convolution). The plan
 * picks none of them there, the table names none of their functions, so
 * their code and that of the kernels they call drops out of it. */
#define FAST(fn) (DCZ_REF_ONLY ? NULL : (fn))

/* Kernel k of the plan: its float or its integer function, or the
 * accumulators of a weighted integer one; ref: a reference, whose integer
 * region quantizes its input, requantizes and clamps by the references
 * too. */
static const struct {
    run_fn f32;
    qrun_fn q;
    qweights_fn acc;   /* where q is NULL: a weighted integer kernel's accumulators,
                          which qrun_weighted requantizes */
    uint8_t ref;
} kernels[DCZ_K_COUNT] = {
    [DCZ_K_RELU] = { FAST(run_relu), NULL, NULL, 0 },
    [DCZ_K_RELU_REF] = { run_relu_ref, NULL, NULL, 1 },
    [DCZ_K_SOFTMAX_REF] = { run_softmax_ref, NULL, NULL, 1 },
    [DCZ_K_MAXPOOL] = { FAST(run_maxpool), NULL, NULL, 0 },
    [DCZ_K_MAXPOOL_REF] = { run_maxpool_ref, NULL, NULL, 1 },
    [DCZ_K_AVGPOOL] = { FAST(run_avgpool), NULL, NULL, 0 },
    [DCZ_K_AVGPOOL_REF] = { run_avgpool_ref, NULL, NULL, 1 },
    [DCZ_K_GLOBAL_AVGPOOL] = { FAST(run_global_avgpool), NULL, NULL, 0 },
    [DCZ_K_GLOBAL_AVGPOOL_REF] = { run_global_avgpool_ref, NULL, NULL, 1 },
    [DCZ_K_COPY] = { run_copy, NULL, NULL, 0 },
    [DCZ_K_ADD] = { FAST(run_add), NULL, NULL, 0 },
    [DCZ_K_ADD_REF] = { run_add_ref, NULL, NULL, 1 },
    [DCZ_K_MUL] = { FAST(run_mul), NULL, NULL, 0 },
    [DCZ_K_MUL_REF] = { run_mul_ref, NULL, NULL, 1 },
    [DCZ_K_CONCAT] = { FAST(run_concat), NULL, NULL, 0 },
    [DCZ_K_CONCAT_REF] = { run_concat_ref, NULL, NULL, 1 },
    [DCZ_K_GATHER_REF] = { run_gather_ref, NULL, NULL, 1 },
    [DCZ_K_CLIP] = { FAST(run_clip), NULL, NULL, 0 },
    [DCZ_K_ACTIVATION_REF] = { run_activation_ref, NULL, NULL, 1 },
    [DCZ_K_ACTIVATION] = { FAST(run_activation), NULL, NULL, 0 },
    [DCZ_K_FC_GEMM] = { FAST(run_fc_gemm), NULL, NULL, 0 },
    [DCZ_K_FC_ROWS] = { FAST(run_fc_rows), NULL, NULL, 0 },
    [DCZ_K_FC_REF] = { run_fc_ref, NULL, NULL, 1 },
    [DCZ_K_FC_CODEBOOK] = { FAST(run_fc_sparse), NULL, NULL, 0 },
    [DCZ_K_FC_SPARSE] = { FAST(run_fc_sparse), NULL, NULL, 0 },
    [DCZ_K_FC_SPARSE_REF] = { run_fc_sparse_ref, NULL, NULL, 1 },
    [DCZ_K_FC_STREAM_REF] = { run_fc_stream_ref, NULL, NULL, 1 },
    [DCZ_K_CONV_SHIFT] = { FAST(run_conv_shift), NULL, NULL, 0 },
    [DCZ_K_CONV_DEPTHWISE_LANES] = { FAST(run_conv_shift), NULL, NULL, 0 },
    [DCZ_K_CONV_DEPTHWISE_PLANE] = { FAST(run_conv_shift), NULL, NULL, 0 },
    [DCZ_K_CONV_DEPTHWISE_ROWS] = { FAST(run_conv_shift), NULL, NULL, 0 },
    [DCZ_K_CONV_WINO] = { FAST(run_conv_wino), NULL, NULL, 0 },
    [DCZ_K_CONV_GEMM] = { FAST(run_conv_gemm), NULL, NULL, 0 },
    [DCZ_K_CONV_GEMM_PIXELS] = { FAST(run_conv_pixels), NULL, NULL, 0 },
    [DCZ_K_CONV_GEMM_REF] = { FAST(run_conv_gemm_ref), NULL, NULL, 1 },
    [DCZ_K_CONV_EXPANDED] = { FAST(run_conv_gemm), NULL, NULL, 0 },
    [DCZ_K_CONV_DIRECT] = { FAST(run_conv_direct), NULL, NULL, 0 },
    [DCZ_K_CONV_DIRECT_REF] = { run_conv_direct_ref, NULL, NULL, 1 },
    [DCZ_K_CONV_SPARSE_IM2COL] = { FAST(run_conv_sparse_im2col), NULL, NULL, 0 },
    [DCZ_K_CONV_SPARSE_IM2COL_REF] = { FAST(run_conv_sparse_im2col_ref), NULL, NULL, 1 },
    [DCZ_K_CONV_SPARSE_DIRECT] = { FAST(run_conv_sparse_direct), NULL, NULL, 0 },
    [DCZ_K_CONV_SPARSE_DIRECT_REF] = { run_conv_sparse_direct_ref, NULL, NULL, 1 },
    [DCZ_K_QRELU] = { NULL, FAST(qrun_relu), NULL, 0 },
    [DCZ_K_QRELU_REF] = { NULL, qrun_relu_ref, NULL, 1 },
    [DCZ_K_QMAXPOOL] = { NULL, FAST(qrun_maxpool), NULL, 0 },
    [DCZ_K_QMAXPOOL_REF] = { NULL, qrun_maxpool_ref, NULL, 1 },
    [DCZ_K_QAVGPOOL] = { NULL, FAST(qrun_avgpool), NULL, 0 },
    [DCZ_K_QAVGPOOL_REF] = { NULL, qrun_avgpool_ref, NULL, 1 },
    [DCZ_K_QMEAN_REF] = { NULL, qrun_mean_ref, NULL, 1 },
    [DCZ_K_QMEAN_RESCALE] = { NULL, FAST(qrun_mean_rescale), NULL, 0 },
    [DCZ_K_QMEAN_RESCALE_REF] = { NULL, qrun_mean_rescale_ref, NULL, 1 },
    [DCZ_K_QCOPY] = { NULL, qrun_copy, NULL, 0 },
    [DCZ_K_QADD] = { NULL, FAST(qrun_add), NULL, 0 },
    [DCZ_K_QADD_REF] = { NULL, qrun_add_ref, NULL, 1 },
    [DCZ_K_QMUL] = { NULL, FAST(qrun_mul), NULL, 0 },
    [DCZ_K_QMUL_REF] = { NULL, qrun_mul_ref, NULL, 1 },
    [DCZ_K_QCONCAT] = { NULL, FAST(qrun_concat), NULL, 0 },
    [DCZ_K_QCONCAT_REF] = { NULL, qrun_concat_ref, NULL, 1 },
    [DCZ_K_QGATHER_REF] = { NULL, qrun_gather_ref, NULL, 1 },
    [DCZ_K_QTABLE] = { NULL, FAST(qrun_table), NULL, 0 },
    [DCZ_K_QTABLE_REF] = { NULL, qrun_table_ref, NULL, 1 },
    [DCZ_K_QFC8_LANES] = { NULL, NULL, FAST(qweights_fc8), 0 },
    [DCZ_K_QFC8] = { NULL, NULL, FAST(qweights_fc8), 0 },
    [DCZ_K_QFC] = { NULL, NULL, FAST(qweights_fc), 0 },
    [DCZ_K_QFC_REF] = { NULL, NULL, qweights_fc_ref, 1 },
    [DCZ_K_QFC_STREAM_REF] = { NULL, NULL, qweights_fc_stream_ref, 1 },
    [DCZ_K_QCONV_SHIFT] = { NULL, FAST(qrun_conv_shift), NULL, 0 },
    [DCZ_K_QCONV_SHIFT_DEPTHWISE] = { NULL, FAST(qrun_conv_shift), NULL, 0 },
    [DCZ_K_QCONV_DEPTHWISE_PAIRS] = { NULL, FAST(qrun_conv_shift), NULL, 0 },
    [DCZ_K_QCONV_AMX] = { NULL, FAST(qrun_conv_shift), NULL, 0 },
    [DCZ_K_QCONV_GEMM] = { NULL, NULL, FAST(qweights_gemm), 0 },
    [DCZ_K_QCONV_DEPTHWISE] = { NULL, NULL, FAST(qweights_depthwise), 0 },
    [DCZ_K_QCONV_TAPS] = { NULL, NULL, FAST(qweights_taps), 0 },
    [DCZ_K_QCONV_TAPS_REF] = { NULL, NULL, qweights_taps_ref, 1 },
    [DCZ_K_QCONV_F32] = { NULL, FAST(qrun_conv_f32), NULL, 0 },
};

/* Tensor t > 0 (a layer's output) from sample s0, in a run of samples s0 ..
 * s0 + n - 1 of a batch of batch (batch <= m->act_batch): in its place, or
 * in the chunk block for an inner tensor. The integer region's tensors but
 * its output hold dcz_q elements, in places planned in floats. */
static void *place_of(const dcz_model *m, uint32_t t, size_t batch, size_t s0, size_t n)
{
    const dcz_tensor *x = &m->tensors[t];
    /* at batch 1, in the place of the CONCAT that reads it (load.c,
     * place_concats; float tensors alone) */
    if (x->host && batch == 1 && m->fuse)
        return (char *)place_of(m, x->host, batch, s0, n) + (size_t)x->host_at * sizeof(float);
    if (x->inner) return m->cact + x->off * n;
    const size_t elem = m->layers[t - 1].q && t - 1 != m->q_last ? sizeof(dcz_q) : sizeof(float);
    return (char *)(m->act + x->off * batch) + s0 * x->width * elem;
}

/* Tensor t as a layer reads it: the caller's input, or place_of. */
static const void *tensor_at(const dcz_model *m, uint32_t t, const float *input, size_t batch, size_t s0,
                             size_t n)
{
    return t == 0 ? input + s0 * m->in_size : place_of(m, t, batch, s0, n);
}

/* Segments. A convolutional network's batch, run layer by layer, sends
 * each layer's whole output through memory when it outgrows the cache,
 * and reads it back for the next layer. The loader cuts the layer list into
 * segments (load.c, plan_segments): a run of float layers that compute a
 * sample from that sample alone and gain nothing from a batch goes through
 * the batch a chunk of samples at a time, each chunk through every layer of
 * the segment before the next, so that the activations stay in the cache;
 * fully connected layers, whose kernels share each weight among the
 * samples, and the integer region take the whole batch. The places are
 * planned for it (model.h, dcz_tensor): a tensor that lives within a
 * segment sits in the chunk block, which holds one chunk; in the
 * activation block a place is reused only once the segment of its
 * tenant's last reader is over. Measured at batch 64 on one core of an AMD EPYC
 * (Zen 4, 1 MB second-level cache), median ms, the whole batch -> chunks:
 * dense ResNet-style 15.0 -> 14.1, compressed 8.8 -> 8.5, dense
 * MobileNetV2-style 23.8 -> 21.0 (compressed 22.5 -> 19.1), dense
 * conv-heavy CNN 30.7 -> 29.7 (compressed 18.7 -> 17.9); the same from
 * chunks of one sample up to DCZ_CHUNK_BYTES, less of it above (2 MB:
 * dense ResNet-style 14.5). The LeNets run their fully connected layers on
 * the whole batch as before. Integer models take chunks too, but for the
 * readers of the region's input, which the first weighted layer quantizes
 * for the whole batch: with the integer kernels of today, int8
 * MobileNetV2-style at batch 64 10.91 -> 10.49 ms, ResNet-style 5.01 ->
 * 4.95 (LeNet-5 0.94 -> 0.95, within the noise; chunks of 2 MB or 512 KB
 * measured the same). A run with a tap sees each layer's whole batch, so it
 * takes no chunks. On a model with threads, a segment run by two chunks
 * or more runs them at once, each thread its chunks through the whole
 * segment with its own chunk block, slice of the scratch and integer
 * accumulators, its kernels splitting nothing (chunks_split). Two threads
 * of an AMD EPYC (Zen 4, two threads of one core), batch 8, torchvision's
 * dense networks, least of two alternated medians (ms, layers split ->
 * chunks at once):
 * MobileNetV3-Small 14.5 -> 7.5, SqueezeNet 1.1 36.5 -> 26.8, RegNetX-400MF
 * 49.7 -> 38.2, EfficientNet-B0 59.9 -> 48.0, ResNet-18 138 -> 111,
 * MobileNetV2 36.5 -> 30.2; int8 (pruned by blocks of 4) MobileNetV3-Small
 * 5.38 -> 3.11, MobileNetV2 17.2 -> 9.26. */

/* Layers first .. last on samples s0 .. s0 + n - 1 of a batch of batch
 * samples (s0 0 on the integer region). */
static void run_layers(dcz_model *m, uint32_t first, uint32_t last, const float *input, size_t batch,
                       size_t s0, size_t n, dcz_tap_fn tap, void *ctx, float *deq, dcz_q **qinp)
{
    for (uint32_t i = first; i <= last; i++) {
        const dcz_exec_layer *l = &m->layers[i];
        /* the layer before applied it, in this place, or computed it */
        if ((l->fused == DCZ_FUSED_ACT || l->fused == DCZ_FUSED_ADD || l->fused == DCZ_FUSED_BANDS ||
             (l->fused == DCZ_FUSED_CONCAT && batch == 1)) && m->fuse)
            continue;
        const uint64_t t0 = DCZ_HEAP && m->layer_ns ? dcz_now_ns() : 0;   /* a load that measures (load.c) */
        /* a convolution that takes the ADD after it writes the ADD's output
         * and reads its other input after its own (load.c) */
        const int res = m->fuse && l->res;
        /* one that runs a depthwise layer by bands writes that layer's place */
        float *y = place_of(m, m->fuse && l->band ? l->band + 1u : i + 1 + res, batch, s0, n);
        const void *xs[DCZ_MAX_INPUTS];
        for (uint32_t k = 0; k < l->nin; k++) xs[k] = tensor_at(m, l->tin[k], input, batch, s0, n);
        if (res) xs[l->nin] = tensor_at(m, l->res, input, batch, s0, n);
        if (!l->q) {
            kernels[l->kernel].f32(m, l, (const float *const *)xs, n, y);
            if (DCZ_HEAP && m->layer_ns) m->layer_ns[i] += dcz_now_ns() - t0;
            if (tap) tap(ctx, i, y, n, l->out);
            continue;
        }
        dcz_q *qin = *qinp;
        /* the region's one float input, the first weighted layer's (qload.c),
         * quantized once for the batch for every layer of the region that
         * reads it (each takes the whole batch, load.c) */
        if (i == m->q_first) {
            qin = *qinp = (dcz_q *)(m->qacc + batch * m->max_width);
            if (kernels[l->kernel].ref)
                dcz_quantize_ref(xs[0], batch * l->in, l->in_scale, m->qmax, qin);
            else
                dcz_quantize(xs[0], batch * l->in, l->in_scale, m->qmax, qin);
        }
        for (uint32_t k = 0; k < l->nin; k++)
            if (l->tin[k] == m->q_in) xs[k] = qin;
        if (kernels[l->kernel].q) kernels[l->kernel].q(m, i, xs, n, y);
        else qrun_weighted(m, i, xs, n, y, kernels[l->kernel].acc, kernels[l->kernel].ref);
        if (DCZ_HEAP && m->layer_ns) m->layer_ns[i] += dcz_now_ns() - t0;
        if (tap && l->w_scale) {   /* a run with a tap takes no chunks: n is batch */
            const uint32_t plane = l->out / l->channels;
            dcz_dequantize(m->qacc, n, l->channels, plane, l->out_scale, m->qmax, deq);
            tap(ctx, i, deq, n, l->out);
        } else if (tap && i != m->q_last) {
            dequantize_q(y, n * l->out, m->t_scale[i + 1], deq);
            tap(ctx, i, deq, n, l->out);
        }
    }
}

/* A segment's chunks split over the pool's threads, each running its
 * chunks through every layer of the segment alone: the model as seen by
 * one thread (no pool, so its kernels split nothing; its slice of the
 * scratch; its chunk block). */
typedef struct chunks_job {
    dcz_model *m;
    uint32_t first, last;
    const float *input;
    size_t batch, chunk, chunks;
    uint32_t parts;
    dcz_q *qin;   /* the integer region's quantized input, where quantized (read by no chunk) */
} chunks_job;

static void chunks_part(void *ctx, uint32_t part)
{
    const chunks_job *j = ctx;
    if (part >= j->parts) return;   /* a pool of more threads than chunks */
    uint32_t c0, c1;
    dcz_part_range((uint32_t)j->chunks, part, j->parts, &c0, &c1);
    if (c0 == c1) return;
    dcz_model one = *j->m;
    one.pool = NULL;
    one.scratch = j->m->scratch + (size_t)part * j->m->scratch_floats;
    one.cact = j->m->cact + (size_t)part * j->m->cact_batch * j->m->chunk_width;
#if DCZ_HEAP
    if (j->m->qacc)   /* its integer accumulators (ensure_act) */
        one.qacc = j->m->qacc + qacc_head(j->m, j->m->act_batch) + (size_t)part * j->m->cact_batch * j->m->max_width;
#endif
    dcz_q *qin = j->qin;
    for (size_t c = c0; c < c1; c++) {
        const size_t s0 = c * j->chunk;
        run_layers(&one, j->first, j->last, j->input, j->batch, s0, j->batch - s0 < j->chunk ? j->batch - s0 : j->chunk,
                   NULL, NULL, NULL, &qin);
    }
}

/* Whether a segment's chunks run at once over the pool's threads: two
 * chunks or more, no tap and no layer timed (a segment of chunks never
 * reads the integer region's quantized input: its readers take the whole
 * batch). Each sample's outputs are what one thread computes, so the bits
 * of one. */
static int chunks_split(const dcz_model *m, size_t chunks, int tap)
{
    return DCZ_HEAP && m->pool && chunks >= 2 && !tap && !m->layer_ns;
}

static void run_batch(dcz_model *m, const float *input, size_t batch, float *output,
                      dcz_tap_fn tap, void *ctx, float *deq)
{
    dcz_q *qin = NULL;
    for (uint32_t i = 0; i < m->nlayers;) {
        const dcz_tensor *seg = &m->tensors[i + 1];
        const size_t chunk = tap || !seg->chunk || seg->chunk > batch ? batch : seg->chunk;
        const size_t chunks = (batch + chunk - 1) / chunk;
        if (chunks_split(m, chunks, tap != NULL)) {
            const uint32_t threads = dcz_pool_threads(m->pool);
            chunks_job j = { m, i, seg->seg_last, input, batch, chunk, chunks,
                             chunks < threads ? (uint32_t)chunks : threads, qin };
            dcz_pool_run(m->pool, chunks_part, &j);
        } else {
            for (size_t s0 = 0; s0 < batch; s0 += chunk)
                run_layers(m, i, seg->seg_last, input, batch, s0, batch - s0 < chunk ? batch - s0 : chunk, tap,
                           ctx, deq, &qin);
        }
        i = seg->seg_last + 1;
    }
    memcpy(output, place_of(m, m->nlayers, batch, 0, batch), batch * m->out_size * sizeof *output);
}

/* The walk of dcz_run, calling tap (when set) after each layer; the
 * dequantized accumulators a tap sees on the integer segment live in a
 * buffer this call allocates. A static model runs the batch act_batch
 * samples at a time. */
dcz_status dcz_run_tapped(dcz_model *m, const float *input, size_t batch, float *output,
                          dcz_tap_fn tap, void *ctx)
{
    if (!m || (batch && (!input || !output))) return DCZ_ERR_ARG;
    if (batch == 0) return DCZ_OK;
    size_t chunk = m->fixed && batch > m->act_batch ? m->act_batch : batch;
    /* a tap sees each layer's whole run: the inner tensors of all of it in
     * the chunk block */
    if (m->fixed && tap && m->chunk_width && chunk > m->cact_batch) chunk = m->cact_batch;
    float *deq = NULL;
#if DCZ_HEAP
    if (!m->fixed) {
        const size_t cbatch = tap || batch < m->chunk_max ? batch : m->chunk_max;
        dcz_status s = ensure_act(m, batch, cbatch);
        if (s != DCZ_OK) return s;
    }
    if (tap && m->scheme != DCZ_SCHEME_NONE) {
        deq = malloc(chunk * m->max_width * sizeof *deq);
        if (!deq) return DCZ_ERR_NOMEM;
    }
#else
    /* every model is static; the taps of an integer model take a heap block */
    if (tap && m->scheme != DCZ_SCHEME_NONE) return DCZ_ERR_UNSUPPORTED;
#endif
    m->keep_acc = tap != NULL;
    m->fuse = tap == NULL && !m->opt.force_reference;
    const dcz_cpu *was = dcz_cpu_enter(&m->cpu);
    for (size_t done = 0; done < batch; done += chunk) {
        const size_t n = batch - done < chunk ? batch - done : chunk;
        run_batch(m, input + done * m->in_size, n, output + done * m->out_size, tap, ctx, deq);
    }
    dcz_cpu_leave(was);
    m->keep_acc = 0;
    m->fuse = 0;
#if DCZ_HEAP
    if (deq) free(deq); /* a static model calls no allocator at all */
#endif
    return DCZ_OK;
}

dcz_status dcz_run(dcz_model *m, const float *input, size_t batch, float *output)
{
#ifdef DCZ_CUDA
    if (m && m->gpu && batch) {
        if (!input || !output) return DCZ_ERR_ARG;
        return dcz_gpu_run(m, input, batch, output);
    }
#endif
    return dcz_run_tapped(m, input, batch, output, NULL, NULL);
}

void *dcz_host_alloc(const dcz_model *m, size_t bytes)
{
#ifdef DCZ_CUDA
    if (m && m->gpu) return dcz_gpu_host_alloc(bytes);
#endif
#if DCZ_HEAP
    (void)m;
    return malloc(bytes ? bytes : 1);
#else
    (void)m;
    (void)bytes;
    return NULL;
#endif
}

void dcz_host_free(const dcz_model *m, void *p)
{
    if (!p) return;
#ifdef DCZ_CUDA
    if (m && m->gpu) {
        dcz_gpu_host_free(p);
        return;
    }
#endif
#if DCZ_HEAP
    (void)m;
    free(p);
#else
    (void)m;
#endif
}
