/* load_layer.c: one layer of a .dcz in execution form, for the loader's
 * walk (load.c): its weight and bias read, dense tensors as floats (in
 * place where the file allows), sparse ones decoded from their streams
 * into model.h's execution form; the extra forms the plan's kernel reads
 * built beside them (the column and lane forms of fully connected layers,
 * the shift forms, Winograd's transform, weights transposed for the dense
 * product or expanded for it); on a calibrated model, its integer form
 * (qload.c). Sized while the arena's base is NULL, filled by the second
 * pass, as the rest of the walk. Apart from the model-level load, which
 * only hands it each layer and the tensors it reads.
 *
 * Checked through the loader by tests/unit/test_format.c (round trips,
 * corruptions, truncations), tests/unit/test_static.c (the arena's size is
 * exact, weights are used in place) and tests/fuzz/fuzz_dcz.c.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/lanes.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qlanes.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/load.h"
#include "runtime/model.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

typedef dcz_arena arena;

#define arena_take dcz_arena_take

/* A dense tensor as floats: the payload itself for an aligned F32 tensor
 * when ld->in_place, else a converted copy in the arena, or with
 * transient in the decoding scratch (*copied then says so), which the
 * next layer reuses. */
static dcz_status load_dense_to(const dcz_tensor_view *t, loader *ld, int transient, const float **out,
                                int *copied)
{
    if (copied) *copied = 0;
    if (ld->in_place && t->enc == DCZ_ENC_F32 && ((uintptr_t)t->payload & 3) == 0) {
        *out = (const float *)(const void *)t->payload;
        return DCZ_OK;
    }
    float *dst;
    if (transient) {
        if (t->n * 4 > ld->sc.dense_cap && !ld->a.base) ld->sc.dense_cap = t->n * 4;
        if (!ld->a.base) return DCZ_OK;
        if (t->n * 4 > ld->sc.dense_cap) return DCZ_ERR_INTERNAL;   /* the sizing pass saw it */
        dst = (float *)(void *)ld->sc.dense;
        if (copied) *copied = 1;
    } else {
        dst = arena_take(&ld->a, t->n * 4);
        if (!ld->a.base) return DCZ_OK;
    }
    const uint64_t per_scale = t->nscale ? t->n / t->nscale : 1;
    for (uint64_t i = 0; i < t->n; i++) {
        const uint8_t *p = t->payload;
        switch (t->enc) {
        case DCZ_ENC_F32: dst[i] = dcz_f32_from_bits(dcz_le32(p + i * 4)); break;
        case DCZ_ENC_F16: dst[i] = dcz_f16_to_f32((uint16_t)(p[i * 2] | p[i * 2 + 1] << 8)); break;
        default: { /* I8, I16: integer times the scale of its row */
            const int32_t q = t->enc == DCZ_ENC_I8
                ? (int8_t)p[i] : (int16_t)(uint16_t)(p[i * 2] | p[i * 2 + 1] << 8);
            dst[i] = (float)q * dcz_f32_from_bits(dcz_le32(t->scales + i / per_scale * 4));
        }
        }
    }
    *out = dst;
    return DCZ_OK;
}

static dcz_status load_dense(const dcz_tensor_view *t, loader *ld, const float **out)
{
    return load_dense_to(t, ld, 0, out, NULL);
}

/* A sparse tensor of any rank as a matrix: rows = dims[0], columns = the
 * rest flattened (a conv weight (out_c, in_c, kh, kw) gives out_c rows of
 * in_c kh kw columns). */
static dcz_status load_sparse(const dcz_tensor_view *t, loader *ld, dcz_sparse *sp)
{
    arena *a = &ld->a;
    scratch *sc = &ld->sc;
    const uint32_t rows = t->dims[0], cols = (uint32_t)(t->n / t->dims[0]);
    const uint64_t cap = dcz_sparse_max_entries(t->nnz, rows, cols);
    if (cap > 0xFFFFFFFFu) return DCZ_ERR_FORMAT;
    uint32_t *row_ptr = arena_take(a, ((uint64_t)rows + 1) * 4);
    uint8_t *step = arena_take(a, cap);
    uint8_t *idx = NULL;
    float *val = NULL, *cb = NULL;
    if (t->enc == DCZ_ENC_CODEBOOK) {
        idx = arena_take(a, cap);
        cb = arena_take(a, (uint64_t)t->k * 4);
    } else {
        val = arena_take(a, cap * 4);
    }
    if (!a->base) {
        const uint64_t pos_scratch = dcz_tensor_positions_scratch(t);
        if (pos_scratch > sc->gaps_cap) sc->gaps_cap = pos_scratch;
        if (t->nnz > sc->idx_cap) sc->idx_cap = t->nnz;
        /* the entries are known once decoded: until then their bound, which
         * the integer form (qload.c) is sized by as well */
        sp->entries = (uint32_t)cap;
        return DCZ_OK;
    }
    TRY(dcz_tensor_decode_indices(t, sc->idx));
    for (uint32_t i = 0; i < t->k; i++) cb[i] = dcz_tensor_codebook_at(t, i);

    dcz_sparse_builder b;
    memset(&b, 0, sizeof b);
    b.rows = rows; b.cols = cols; b.row_ptr = row_ptr; b.step = step; b.cap = (uint32_t)cap;
    b.idx_dst = idx; b.idx_src = sc->idx;
    b.val_dst = val; b.val_src = t->values;
    row_ptr[0] = 0;
    TRY(dcz_tensor_positions(t, sc->gaps, dcz_sparse_builder_add, &b));
    dcz_sparse_builder_finish(&b);

    sp->rows = rows; sp->cols = cols; sp->entries = b.entries;
    sp->row_ptr = row_ptr; sp->step = step; sp->idx = idx; sp->val = val;
    sp->codebook = cb; sp->k = t->k;
    return DCZ_OK;
}

/* The stream form of a CODEBOOK tensor (dcz_plan_streams): its record
 * kept (*wv) to be read as stored at every run, its codebook as floats in
 * sp, and nothing else: the streams are read once here to their end, so
 * that a model that loads never meets a bad stream as it runs. */
static dcz_status load_stream(const dcz_tensor_view *t, loader *ld, dcz_sparse *sp, const dcz_tensor_view **wv)
{
    arena *a = &ld->a;
    dcz_tensor_view *v = arena_take(a, sizeof *v);
    float *cb = arena_take(a, (uint64_t)t->k * 4);
    const uint64_t counts = dcz_entries_scratch_bytes(t);
    if (counts > ld->sc.gaps_cap) ld->sc.gaps_cap = counts;
    if ((counts + 3) / 4 > ld->stream_floats) ld->stream_floats = (counts + 3) / 4;
    sp->rows = t->dims[0];
    sp->cols = (uint32_t)(t->n / t->dims[0]);
    sp->k = t->k;
    if (!a->base) return DCZ_OK;
    *v = *t;
    for (uint32_t i = 0; i < t->k; i++) cb[i] = dcz_tensor_codebook_at(t, i);
    dcz_entries e;
    TRY(dcz_entries_begin(&e, v, ld->sc.gaps));
    for (uint32_t i = 0; i < t->nnz; i++) {
        uint64_t pos;
        uint32_t idx;
        TRY(dcz_entries_next(&e, &pos, &idx));
    }
    TRY(dcz_entries_end(&e));
    sp->codebook = cb;
    *wv = v;
    return DCZ_OK;
}

void dcz_sparse_expand(const dcz_sparse *s, float *w)
{
    memset(w, 0, (size_t)s->rows * s->cols * sizeof *w);
    for (uint32_t r = 0; r < s->rows; r++) {
        uint32_t col = 0;
        for (uint32_t e = s->row_ptr[r]; e < s->row_ptr[r + 1]; e++) {
            col += s->step[e];
            if (s->step[e] != DCZ_STEP_FILLER) w[(size_t)r * s->cols + col] = dcz_sparse_weight(s, e);
        }
    }
}

/* Layer index's kernel among its candidates c: the one the load's choice
 * names (the rules' when none, or past the list), recorded for a load
 * that measures. */
static dcz_kernel take(loader *ld, uint32_t index, const dcz_candidates *c)
{
    const uint32_t i = ld->choice && ld->choice[index] < c->n ? ld->choice[index] : 0;
    if (ld->ran && ld->a.base) {
        dcz_measured *r = &ld->ran[index];
        r->n = (uint8_t)c->n;
        r->pick = (uint8_t)i;
        for (uint32_t k = 0; k < c->n; k++) r->kernel[k] = (uint8_t)c->k[k];
    }
    return c->k[i];
}

/* The weight and bias of a DENSE or CONV2D layer: shapes checked against
 * the attributes (dcz_op_param_shapes), then loaded into execution form,
 * and into integer form when the model is calibrated (cw). */
static dcz_status load_params(const dcz_container *c, const dcz_graph_layer *g, uint32_t index,
                              loader *ld, calib_walk *cw, dcz_exec_layer *l)
{
    dcz_section s;
    dcz_cur cur;
    uint32_t ntensors;
    dcz_tensor_view w, b;
    dcz_shape ws, bs;
    /* the extra forms this load builds: none in a build of the references
     * alone (cpu/isa.h), where the code of every form then drops out */
    const int forms = DCZ_REF_ONLY ? 0 : ld->forms;
    TRY(dcz_op_param_shapes(g->op, g->attr, &ws, &bs));
    dcz_container_section(c, g->param_section, &s);
    TRY(dcz_layer_begin(c->base + s.offset, (size_t)s.size, &cur, &ntensors));
    if (ntensors != 2) return DCZ_ERR_FORMAT;
    TRY(dcz_tensor_next(&cur, &w));
    TRY(dcz_tensor_next(&cur, &b));
    if (!dcz_shape_is(&ws, w.rank, w.dims) || !dcz_shape_is(&bs, b.rank, b.dims))
        return DCZ_ERR_SHAPE;
    if (b.enc != DCZ_ENC_F32 && b.enc != DCZ_ENC_F16 && b.enc != DCZ_ENC_I8) return DCZ_ERR_FORMAT;

    const float *bias = NULL, *wd = NULL;
    int dense_later = 0;   /* a float convolution's dense weights, read once its kernel is known */
    dcz_sparse sp;
    memset(&sp, 0, sizeof sp);
    const int stream = dcz_plan_streams(ld->stream, g->op, w.enc);
    TRY(load_dense(&b, ld, &bias));
    switch (w.enc) {
    case DCZ_ENC_F32:
    case DCZ_ENC_F16:
    case DCZ_ENC_I8:
    case DCZ_ENC_I16:
        /* on integers, int tensors are read as stored (qload.c): no float
         * copy; a float convolution's after its plan (below) */
        if (!cw && g->op == DCZ_OP_CONV2D) dense_later = 1;
        else if (!(cw && DCZ_ENC_IS_INT(w.enc))) TRY(load_dense(&w, ld, &wd));
        break;
    case DCZ_ENC_SPARSE_F32:
    case DCZ_ENC_CODEBOOK:
        TRY(stream ? load_stream(&w, ld, &sp, &l->wv) : load_sparse(&w, ld, &sp));
        break;
    default:
        return DCZ_ERR_UNSUPPORTED;
    }
    /* fully connected float layers (and convolutions the plan takes as
     * such) also get the column form for batch 1 (which the references do
     * not read) */
    const int as_fc = dcz_plan_fc_layer(g->op, &l->geom);
    if (!DCZ_REF_ONLY && !cw && !stream && as_fc &&
        (w.enc == DCZ_ENC_SPARSE_F32 || w.enc == DCZ_ENC_CODEBOOK)) {
        /* (while sizing, sp holds only its entry bound) */
        const uint32_t rows = w.dims[0], cols = (uint32_t)(w.n / w.dims[0]);
        /* one block per thread where the layer is split (run.c), else one */
        const uint32_t blocks = w.nnz >= DCZ_PARALLEL_MIN_ENTRIES ? ld->cblocks : 1;
        const uint64_t bytes = dcz_sparse_columns_bytes(
            rows, cols, w.nnz, w.enc == DCZ_ENC_CODEBOOK ? w.k : 0, blocks);
        void *mem = bytes ? arena_take(&ld->a, bytes) : NULL;
        if (mem) {
            uint32_t real = 0;
            for (uint32_t e = 0; e < sp.entries; e++) real += sp.step[e] != DCZ_STEP_FILLER;
            if (real != w.nnz) return DCZ_ERR_FORMAT;
            dcz_sparse_build_columns(&sp, blocks, mem);
        }
        /* codebook layers also get a lane form where this CPU runs one
         * (its fused sums may differ in their last bits from a batch's:
         * float layers keep the same bits at every batch) */
        const uint32_t lr = forms & DCZ_FORM_LANES ? DCZ_LANE_ROWS : forms & DCZ_FORM_LANES8 ? DCZ_LANE8_ROWS : 0;
        const uint64_t lbytes = lr && w.enc == DCZ_ENC_CODEBOOK ? dcz_lanes_bytes(lr, rows, cols, w.nnz, w.k) : 0;
        void *lmem = lbytes ? arena_take(&ld->a, lbytes) : NULL;
        if (lmem) dcz_lanes_build(&sp, lr, w.nnz, lmem);
        const uint64_t panels = lbytes ? dcz_lanes_scratch_floats(lr, cols, w.k) : 0;
        if (panels > ld->lane_floats) ld->lane_floats = panels;
    }
    l->sparse = w.enc == DCZ_ENC_SPARSE_F32 || w.enc == DCZ_ENC_CODEBOOK;
    const uint64_t kept = l->sparse ? w.nnz : w.n;
    /* the plan's kernel, then the form it reads (the same in both passes:
     * the scratch depends on it) */
    dcz_candidates cand;
    if (!cw && g->op == DCZ_OP_CONV2D) {
        dcz_plan_conv(&l->geom, l->sparse, w.enc == DCZ_ENC_CODEBOOK, kept, forms, ld->reference, &cand);
        l->kernel = (uint8_t)take(ld, index, &cand);
    } else if (!cw) {
        dcz_plan_fc(l->sparse, w.enc == DCZ_ENC_CODEBOOK, stream, forms, ld->reference, &cand);
        l->kernel = (uint8_t)take(ld, index, &cand);
    }
    /* a float convolution's dense weights: in the decoding scratch where
     * its kernel reads only the form built from them (loader.forms_only) */
    int transient = 0;
    if (dense_later) {
        const int form_only = !DCZ_REF_ONLY && ld->forms_only &&
                              (l->kernel == DCZ_K_CONV_SHIFT || l->kernel == DCZ_K_CONV_WINO ||
                               l->kernel == DCZ_K_CONV_GEMM_PIXELS);
        TRY(load_dense_to(&w, ld, form_only, &wd, &transient));
    }
    /* Winograd's F(2x2, 3x3): the weights' transform (16 C K floats)
     * beside them */
    if (!DCZ_REF_ONLY && l->kernel == DCZ_K_CONV_WINO) {
        dcz_wino p;
        dcz_wino_init_geom(&p, &l->geom);
        float *u = dcz_arena_take_line(&ld->a, dcz_wino_weights_floats(&p) * sizeof *u);
        if (u && wd) dcz_wino_weights(&p, wd, 0, u, NULL);
        l->wu = u;
    }
    /* the shift form, whose build says which of its kernels runs it; or
     * sparse weights expanded for the dense product */
    if (!DCZ_REF_ONLY && l->kernel == DCZ_K_CONV_SHIFT) {
        const uint32_t ob = dcz_shift_pick_block(&l->geom, kept);
        void *mem = arena_take(&ld->a, dcz_shift_bytes(&l->geom, kept, ob));
        if (mem) {
            dcz_shift_build(&l->geom, l->sparse ? &sp : NULL, wd, ob, mem, &l->shift);
            l->kernel = (uint8_t)dcz_plan_conv_shift(&l->geom, &l->shift);
        }
    } else if (!DCZ_REF_ONLY && l->kernel == DCZ_K_CONV_EXPANDED) {
        float *dense = arena_take(&ld->a, w.n * sizeof *dense);
        if (dense) dcz_sparse_expand(&sp, dense);
        wd = dense;
    }
    /* a dense fully connected float layer, or a 1x1 convolution by pixel
     * rows, also gets its weights transposed (in, out padded to
     * DCZ_GEMM_PAD; the convolution's by panels of output channels,
     * dcz_conv_weights_by_panel), which the dense product reads, a row of
     * 64 columns at a time from a cache line's boundary: rows 16 bytes off
     * one took a load across two lines for every vector (dense
     * LeNet-300-100 on AVX-512: batch 1 12.1 -> 7.1 us, batch 64 259 -> 217
     * us) */
    if (!DCZ_REF_ONLY && (l->kernel == DCZ_K_FC_GEMM || l->kernel == DCZ_K_CONV_GEMM_PIXELS)) {
        const uint32_t out = w.dims[0], in = (uint32_t)(w.n / w.dims[0]);
        float *wt = dcz_arena_take_line(&ld->a, (uint64_t)in * dcz_gemm_ldb(out) * sizeof *wt);
        if (wt && wd) {
            if (l->kernel == DCZ_K_CONV_GEMM_PIXELS) dcz_conv_weights_by_panel(wd, out, in, wt);
            else dcz_conv_weights_by_column(wd, out, in, wt);
        }
        l->wt = wt;
    }
    l->w = transient ? NULL : wd;
    l->sp = sp;
    l->bias = bias;
    if (!cw) return DCZ_OK;
    dcz_calib_entry e;
    if (cw->read == cw->count) return DCZ_ERR_FORMAT;
    TRY(dcz_calib_next(&cw->cur, cw->scheme, &e));
    cw->read++;
    if (e.layer != index) return DCZ_ERR_FORMAT;
    TRY(dcz_qload_weights(&ld->a, cw->scheme, &w, &e, l));
    const int32_t qmax = dcz_scheme_qmax(cw->scheme);
    /* a fully connected layer of an 8-bit scheme (or a convolution the
     * plan takes as one) gets the integer lane form where this CPU runs one
     * (a weight past a byte leaves it without) */
    if (as_fc) {
        if ((forms & DCZ_FORM_QLANES) && qmax == 127 && !stream) {
            void *mem = arena_take(&ld->a, dcz_qlanes_bytes(w.dims[0], (uint32_t)(w.n / w.dims[0]), kept));
            if (mem) dcz_qlanes_build(&l->qs, kept, mem);
        }
        dcz_plan_qfc(qmax, !DCZ_REF_ONLY && l->qs.lslices && dcz_qlanes_variant(&l->qs), stream, ld->reference,
                     &cand);
        l->kernel = (uint8_t)take(ld, index, &cand);
        return DCZ_OK;
    }
    /* a convolution's integer shift form, whose build says which of its
     * kernels runs it (a weight past a byte declines it: the plan's next
     * choice, which needs no scratch); or its weights as dense int16 pairs
     * for the integer product */
    /* (the float shift form on the integer weights is planned before the
     * weights are read, as the sizing pass does; a layer whose sums floats
     * would not hold declines it here, to a kernel that needs no arena) */
    dcz_plan_qconv(&l->geom, kept, qmax, forms, ld->reference, 0, 1, &cand);
    l->kernel = (uint8_t)take(ld, index, &cand);
    if (!DCZ_REF_ONLY && l->kernel == DCZ_K_QCONV_SHIFT) {
        const int amx = (forms & DCZ_FORM_AMX) != 0;
        void *mem = arena_take(&ld->a, dcz_qshift_bytes(&l->geom, kept, amx));
        if (mem && !dcz_qshift_build(&l->geom, &l->qs, amx, mem, &l->qshift)) {
            dcz_plan_qconv(&l->geom, kept, qmax, forms, ld->reference, 1, 0, &cand);
            l->kernel = (uint8_t)cand.k[0];
        } else if (mem)
            l->kernel = (uint8_t)dcz_plan_qconv_shift(&l->qshift);
    } else if (!DCZ_REF_ONLY && l->kernel == DCZ_K_QCONV_GEMM) {
        const uint32_t k = l->geom.in_c * l->geom.kh * l->geom.kw;
        int32_t *w2 = arena_take(&ld->a, (uint64_t)l->geom.out_c * ((k + 1) / 2) * sizeof *w2);
        if (w2) dcz_qexpand_pairs(&l->qs, k, w2);
        l->qw2 = w2;
    } else if (!DCZ_REF_ONLY && l->kernel == DCZ_K_QCONV_F32) {
        /* the channels whose sums floats would not hold run by the integer
         * taps beside the form (ungrouped convolutions; a grouped one with
         * any declines the form, to a kernel that needs no arena, as the
         * integer shift form declines) */
        const uint32_t ob = dcz_shift_pick_block(&l->geom, kept);
        void *mem = arena_take(&ld->a, dcz_shift_bytes(&l->geom, kept, ob));
        uint8_t *over = dcz_conv_groups(&l->geom) == 1 ? arena_take(&ld->a, l->geom.out_c) : NULL;
        const uint32_t n = mem ? dcz_qconv2d_f32_rows(&l->qs, qmax, over) : 0;
        if (mem && n && !over) {
            dcz_plan_qconv(&l->geom, kept, qmax, forms, ld->reference, 1, 0, &cand);
            l->kernel = (uint8_t)cand.k[0];
        } else if (mem) {
            dcz_shift_build_int(&l->geom, &l->qs, n ? over : NULL, ob, mem, &l->shift);
            l->qover = n ? over : NULL;
        }
    }
    return DCZ_OK;
}

/* Everything of one exec layer but its name, given the tensors it reads. */
dcz_status dcz_load_layer(const dcz_container *c, const dcz_graph_layer *g, uint32_t index,
                          const dcz_tensor *tensors, loader *ld, calib_walk *cw, dcz_exec_layer *l)
{
    dcz_shape in[DCZ_MAX_INPUTS];
    l->nin = g->nin;
    for (uint32_t k = 0; k < g->nin; k++) {
        l->tin[k] = (uint16_t)g->in[k];
        in[k] = tensors[g->in[k]].shape;
    }
    l->in_shape = in[0];
    TRY(dcz_op_shape(g->op, g->attr, g->nattr, in, g->nin, &l->out_shape));
    l->in = (uint32_t)dcz_shape_count(&in[0]);
    l->out = (uint32_t)dcz_shape_count(&l->out_shape);
    l->op = g->op;
    const dcz_op_info *o = dcz_op_get(g->op);
    if (o->train_only) return DCZ_ERR_UNSUPPORTED;
    if (o->weighted && g->op != DCZ_OP_CONV2D) return load_params(c, g, index, ld, cw, l);
    if (o->window_at >= 0) TRY(dcz_conv_geom_init(&l->geom, g->op, g->attr, g->nattr, &in[0]));
    for (uint32_t k = 0; k < 2 && k < g->nattr; k++) l->param[k] = dcz_attr_f32(g->attr[k]);
    /* an activation on integers runs by its table (qload.c fills it) */
    if (cw && o->qscale == DCZ_QS_TABLE)
        /* (one entry more, never read as one: dcz_qtable reads 32 bits at each) */
        l->table = arena_take(&ld->a, (2 * (uint64_t)dcz_scheme_qmax(cw->scheme) + 2) * sizeof(dcz_q));
    /* a CONCAT or an ADD on integers looks its rescaled inputs up (qload.c
     * fills the tables; a build of the references alone takes none) */
    const int tables = !DCZ_REF_ONLY && !ld->reference && cw;
    const uint64_t entries = !tables ? 0
                             : g->op == DCZ_OP_CONCAT ? dcz_qconcat_table_entries(g->nin, dcz_scheme_qmax(cw->scheme))
                             : g->op == DCZ_OP_ADD ? dcz_qadd_table_entries(dcz_scheme_qmax(cw->scheme)) : 0;
    if (entries) l->table = arena_take(&ld->a, entries * sizeof(dcz_q));
    switch (g->op) {
    case DCZ_OP_CONV2D:
        return load_params(c, g, index, ld, cw, l);
    case DCZ_OP_AVGPOOL:
        l->count_include_pad = g->attr[6];
        return DCZ_OK;
    case DCZ_OP_GLOBAL_AVGPOOL:
        l->geom.in_c = l->geom.out_c = in[0].dims[0];
        l->geom.in_h = in[0].dims[1];
        l->geom.in_w = in[0].dims[2];
        l->geom.out_h = l->geom.out_w = 1;
        return DCZ_OK;
    case DCZ_OP_CHANNEL_SHUFFLE:
    case DCZ_OP_SLICE:
        dcz_op_gather(g->op, g->attr, &l->gather_start, &l->gather_groups);
        l->geom.in_c = in[0].dims[0];
        l->geom.out_c = l->out_shape.dims[0];
        l->geom.in_h = l->geom.out_h = in[0].rank == 3 ? in[0].dims[1] : 1;
        l->geom.in_w = l->geom.out_w = in[0].rank == 3 ? in[0].dims[2] : 1;
        return DCZ_OK;
    default:
        return DCZ_OK;
    }
}
