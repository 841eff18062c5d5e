/* load.c: turning a .dcz buffer into an executable dcz_model.
 *
 * Every layer becomes an exec layer (model.h) that knows its input and
 * output shapes and, for convolutions and pools, its geometry; shapes chain
 * by the rules of docs/FORMAT.md (dcz_op_shape).
 *
 * Loading runs the same walk twice over the validated container: a sizing
 * pass that only measures, then a filling pass into one allocation of
 * exactly that size (the model, its layers, weights in execution form, and
 * the scratch used to decode streams). Huffman and raw streams are decoded
 * once, straight into the execution form of model.h.
 *
 * Checked by tests/unit/test_format.c (round trips through the toolchain's
 * writer, corruptions, truncations) and tests/fuzz/fuzz_dcz.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/model.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

typedef dcz_arena arena;
#define arena_take dcz_arena_take

void *dcz_arena_take(dcz_arena *a, uint64_t bytes)
{
    size_t off = (a->used + 15) & ~(size_t)15;
    if (off < a->used || bytes > SIZE_MAX - off) { a->overflow = 1; return NULL; }
    a->used = off + (size_t)bytes;
    return a->base ? a->base + off : NULL;
}

void dcz_options_init(dcz_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->device = DCZ_DEVICE_AUTO;
}

static dcz_status load_dense(const dcz_tensor_view *t, arena *a, const float **out)
{
    float *dst = arena_take(a, t->n * 4);
    if (!a->base) return DCZ_OK;
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

typedef struct scratch {
    uint8_t *gaps;   /* gap symbols of one tensor */
    uint8_t *idx;    /* index symbols of one tensor, in stream order */
    uint64_t gaps_cap, idx_cap;
} scratch;

/* A sparse tensor of any rank as a matrix: rows = dims[0], columns = the
 * rest flattened (a conv weight (out_c, in_c, kh, kw) gives out_c rows of
 * in_c kh kw columns). */
static dcz_status load_sparse(const dcz_tensor_view *t, arena *a, scratch *sc, dcz_sparse *sp)
{
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
        if (t->gap_count > sc->gaps_cap) sc->gaps_cap = t->gap_count;
        if (t->nnz > sc->idx_cap) sc->idx_cap = t->nnz;
        return DCZ_OK;
    }
    TRY(dcz_tensor_decode_streams(t, t->enc == DCZ_ENC_CODEBOOK ? sc->idx : NULL, sc->gaps));
    for (uint32_t i = 0; i < t->k; i++) cb[i] = dcz_f32_from_bits(dcz_le32(t->codebook + i * 4));

    dcz_sparse_builder b;
    memset(&b, 0, sizeof b);
    b.rows = rows; b.cols = cols; b.row_ptr = row_ptr; b.step = step; b.cap = (uint32_t)cap;
    b.idx_dst = idx; b.idx_src = sc->idx;
    b.val_dst = val; b.val_src = t->values;
    row_ptr[0] = 0;
    TRY(dcz_gaps_walk(sc->gaps, t->gap_count, t->gap_bits, t->nnz, t->n,
                      dcz_sparse_builder_add, &b));
    dcz_sparse_builder_finish(&b);

    sp->rows = rows; sp->cols = cols; sp->entries = b.entries;
    sp->row_ptr = row_ptr; sp->step = step; sp->idx = idx; sp->val = val;
    sp->codebook = cb; sp->k = t->k;
    return DCZ_OK;
}

/* The kernel a layer with parameters runs, by op and weight encoding. */
static dcz_kernel param_kernel(uint16_t op, uint32_t enc)
{
    const int conv = op == DCZ_OP_CONV2D;
    switch (enc) {
    case DCZ_ENC_SPARSE_F32: return conv ? DCZ_K_CONV_SPARSE_F32 : DCZ_K_SPARSE_F32;
    case DCZ_ENC_CODEBOOK: return conv ? DCZ_K_CONV_SPARSE_CB : DCZ_K_SPARSE_CB;
    default: return conv ? DCZ_K_CONV_DENSE_F32 : DCZ_K_DENSE_F32;
    }
}

/* What the walk knows of the calibration table: the scheme, and a cursor
 * on the next entry. NULL when the model runs in float. */
typedef struct calib_walk {
    uint32_t scheme;
    dcz_cur cur;
    uint32_t count, read;
} calib_walk;

/* The weight and bias of a DENSE or CONV2D layer: shapes checked against
 * the attributes (dcz_op_param_shapes), then loaded into execution form,
 * and into integer form when the model is calibrated (cw). */
static dcz_status load_params(const dcz_container *c, const dcz_graph_layer *g, uint32_t index,
                              arena *a, scratch *sc, calib_walk *cw, dcz_exec_layer *l)
{
    dcz_section s;
    dcz_cur cur;
    uint32_t ntensors;
    dcz_tensor_view w, b;
    dcz_shape ws, bs;
    TRY(dcz_op_param_shapes(g->op, g->attr, &ws, &bs));
    dcz_container_section(c, g->param_section, &s);
    TRY(dcz_layer_begin(c->base + s.offset, (size_t)s.size, &cur, &ntensors));
    if (ntensors != 2) return DCZ_ERR_FORMAT;
    TRY(dcz_tensor_next(&cur, &w));
    TRY(dcz_tensor_next(&cur, &b));
    if (!dcz_shape_is(&ws, w.rank, w.dims) || !dcz_shape_is(&bs, b.rank, b.dims))
        return DCZ_ERR_SHAPE;
    if (b.enc != DCZ_ENC_F32 && b.enc != DCZ_ENC_F16) return DCZ_ERR_FORMAT;

    const float *bias = NULL, *wd = NULL;
    dcz_sparse sp;
    memset(&sp, 0, sizeof sp);
    TRY(load_dense(&b, a, &bias));
    switch (w.enc) {
    case DCZ_ENC_F32:
    case DCZ_ENC_F16:
    case DCZ_ENC_I8:
    case DCZ_ENC_I16:
        TRY(load_dense(&w, a, &wd));
        break;
    case DCZ_ENC_SPARSE_F32:
    case DCZ_ENC_CODEBOOK:
        TRY(load_sparse(&w, a, sc, &sp));
        break;
    default:
        return DCZ_ERR_UNSUPPORTED;
    }
    l->kernel = param_kernel(g->op, w.enc);
    l->w = wd;
    l->sp = sp;
    l->bias = bias;
    if (!cw) return DCZ_OK;
    dcz_calib_entry e;
    if (cw->read == cw->count) return DCZ_ERR_FORMAT;
    TRY(dcz_calib_next(&cw->cur, cw->scheme, &e));
    cw->read++;
    if (e.layer != index) return DCZ_ERR_FORMAT;
    return dcz_qload_weights(a, cw->scheme, &w, &e, l);
}

/* Everything of one exec layer but its name, given the shape it receives. */
static dcz_status load_layer(const dcz_container *c, const dcz_graph_layer *g, uint32_t index,
                             const dcz_shape *in, arena *a, scratch *sc, calib_walk *cw,
                             dcz_exec_layer *l)
{
    l->in_shape = *in;
    TRY(dcz_op_shape(g->op, g->attr, g->nattr, in, &l->out_shape));
    l->in = (uint32_t)dcz_shape_count(in);
    l->out = (uint32_t)dcz_shape_count(&l->out_shape);
    switch (g->op) {
    case DCZ_OP_DENSE:
        return load_params(c, g, index, a, sc, cw, l);
    case DCZ_OP_CONV2D:
        TRY(dcz_conv_geom_init(&l->geom, g->op, g->attr, g->nattr, in));
        TRY(load_params(c, g, index, a, sc, cw, l));
        l->im2col = l->kernel != DCZ_K_CONV_DENSE_F32 && dcz_conv2d_pick_im2col(&l->geom);
        return DCZ_OK;
    case DCZ_OP_MAXPOOL:
    case DCZ_OP_AVGPOOL:
        TRY(dcz_conv_geom_init(&l->geom, g->op, g->attr, g->nattr, in));
        l->kernel = g->op == DCZ_OP_MAXPOOL ? DCZ_K_MAXPOOL : DCZ_K_AVGPOOL;
        l->count_include_pad = g->op == DCZ_OP_AVGPOOL && g->attr[6];
        return DCZ_OK;
    case DCZ_OP_GLOBAL_AVGPOOL:
        l->geom.in_c = l->geom.out_c = in->dims[0];
        l->geom.in_h = in->dims[1];
        l->geom.in_w = in->dims[2];
        l->geom.out_h = l->geom.out_w = 1;
        l->kernel = DCZ_K_GLOBAL_AVGPOOL;
        return DCZ_OK;
    case DCZ_OP_FLATTEN:
        l->kernel = DCZ_K_FLATTEN;
        return DCZ_OK;
    case DCZ_OP_RELU:
        l->kernel = DCZ_K_RELU;
        return DCZ_OK;
    case DCZ_OP_SOFTMAX:
        l->kernel = DCZ_K_SOFTMAX;
        return DCZ_OK;
    default:
        return DCZ_ERR_UNSUPPORTED;
    }
}

/* One walk over the graph: sizes everything while a->base is NULL, fills
 * the model when it is set. Shapes chain by dcz_op_shape from the input
 * shape; the activation buffers are sized by the largest activation. */
/* The CALIB section of c, when the options let the model run on integers:
 * *found 0 when there is none (or precision is FP32). At most one. */
static dcz_status find_calib(const dcz_container *c, const dcz_options *o, calib_walk *cw,
                             int *found)
{
    *found = 0;
    if (o->precision == DCZ_PRECISION_FP32) return DCZ_OK; /* the table is skipped */
    for (uint32_t i = 0; i < c->nsections; i++) {
        dcz_section s;
        dcz_container_section(c, i, &s);
        if (s.type != DCZ_SEC_CALIB) continue;
        if (*found) return DCZ_ERR_FORMAT;
        dcz_calib_head h;
        TRY(dcz_calib_begin(c->base + s.offset, (size_t)s.size, &cw->cur, &h));
        cw->scheme = h.scheme;
        cw->count = h.count;
        cw->read = 0;
        *found = 1;
    }
    return DCZ_OK;
}

static dcz_status load_walk(const dcz_container *c, const dcz_options *o, arena *a,
                            scratch *sc, dcz_model **out)
{
    dcz_section gs;
    dcz_cur cur;
    dcz_shape shape;
    uint32_t nlayers = 0;
    uint32_t gi = 0;
    for (; gi < c->nsections; gi++) {
        dcz_container_section(c, gi, &gs);
        if (gs.type == DCZ_SEC_GRAPH) break;
    }
    memset(&shape, 0, sizeof shape);
    TRY(dcz_graph_begin(c->base + gs.offset, (size_t)gs.size, &cur, &nlayers, &shape.rank,
                        shape.dims));
    const uint64_t in_size = dcz_shape_count(&shape);
    if (in_size > DCZ_MAX_ACT) return DCZ_ERR_FORMAT;

    calib_walk cw;
    int quant;
    TRY(find_calib(c, o, &cw, &quant));

    dcz_model *m = arena_take(a, sizeof *m);
    dcz_exec_layer *layers = arena_take(a, (uint64_t)nlayers * sizeof *layers);
    uint64_t max_width = in_size, scratch_floats = 0;
    uint32_t min_param = 0;
    if (m) {
        memset(m, 0, sizeof *m);
        memset(layers, 0, (size_t)nlayers * sizeof *layers);
        m->in_rank = shape.rank;
        memcpy(m->in_dims, shape.dims, sizeof m->in_dims);
        m->nlayers = nlayers;
        m->layers = layers;
    }
    for (uint32_t i = 0; i < nlayers; i++) {
        dcz_graph_layer g;
        TRY(dcz_graph_next(&cur, c, &g, &min_param));
        dcz_exec_layer tmp, *l = layers ? &layers[i] : &tmp;
        memset(l, 0, sizeof *l);
        memcpy(l->name, g.name, sizeof l->name);
        TRY(load_layer(c, &g, i, &shape, a, sc, quant ? &cw : NULL, l));
        shape = l->out_shape;
        if (l->out > max_width) max_width = l->out;
        if (l->im2col && dcz_conv2d_im2col_floats(&l->geom) > scratch_floats)
            scratch_floats = dcz_conv2d_im2col_floats(&l->geom);
    }
    if (cur.pos != cur.len) return DCZ_ERR_FORMAT;
    if (quant && (cw.read != cw.count || cw.cur.pos != cw.cur.len)) return DCZ_ERR_FORMAT;
    float *conv_scratch = arena_take(a, scratch_floats * sizeof(float));
    if (m) {
        m->scratch = conv_scratch;
        m->scratch_floats = scratch_floats;
        m->in_size = (uint32_t)in_size;
        m->out_size = (uint32_t)dcz_shape_count(&shape);
        m->max_width = (uint32_t)max_width;
        if (quant) {
            m->scheme = (dcz_scheme)cw.scheme;
            m->qmax = dcz_scheme_qmax(cw.scheme);
            TRY(dcz_qload_finish(m));
        }
        *out = m;
    }
    return DCZ_OK;
}

dcz_status dcz_open_memory(const void *buf, size_t len, const dcz_options *opt,
                           dcz_model **out)
{
    dcz_container c;
    dcz_options o;
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (opt) o = *opt; else dcz_options_init(&o);
    if (o.device == DCZ_DEVICE_GPU) return DCZ_ERR_DEVICE; /* no GPU backend in this build */
    if (o.device != DCZ_DEVICE_AUTO && o.device != DCZ_DEVICE_CPU) return DCZ_ERR_ARG;
    TRY(dcz_container_open(buf, len, &c));

    /* sizing pass; the decode scratch goes after everything the walk takes */
    arena a = { NULL, 0, 0 };
    scratch sc;
    memset(&sc, 0, sizeof sc);
    TRY(load_walk(&c, &o, &a, &sc, NULL));
    const size_t walk_bytes = a.used;
    (void)arena_take(&a, sc.gaps_cap);
    (void)arena_take(&a, sc.idx_cap);
    if (a.overflow) return DCZ_ERR_NOMEM;

    uint8_t *block = malloc(a.used ? a.used : 1);
    if (!block) return DCZ_ERR_NOMEM;
    arena tail = { block, walk_bytes, 0 };
    sc.gaps = arena_take(&tail, sc.gaps_cap);
    sc.idx = arena_take(&tail, sc.idx_cap);
    a.base = block;
    a.used = 0;
    dcz_model *m = NULL;
    dcz_status s = load_walk(&c, &o, &a, &sc, &m);
    if (s != DCZ_OK) {
        free(block);
        return s;
    }
    m->block = block;
    m->opt = o;
    *out = m;
    return DCZ_OK;
}

dcz_status dcz_open_file(const char *path, const dcz_options *opt, dcz_model **out)
{
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (!path) return DCZ_ERR_ARG;
    FILE *f = fopen(path, "rb");
    if (!f) return DCZ_ERR_IO;
    dcz_status s = DCZ_ERR_IO;
    uint8_t *buf = NULL;
    long size;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) goto done;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        goto done;
    buf = malloc(size ? (size_t)size : 1);
    if (!buf) { s = DCZ_ERR_NOMEM; goto done; }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) goto done;
    s = dcz_open_memory(buf, (size_t)size, opt, out);
done:
    free(buf);
    fclose(f);
    return s;
}

void dcz_close(dcz_model *m)
{
    if (!m) return;
    free(m->act);
    free(m->qacc);
    free(m->block); /* m itself lives inside block */
}

size_t dcz_input_size(const dcz_model *m) { return m ? m->in_size : 0; }
size_t dcz_output_size(const dcz_model *m) { return m ? m->out_size : 0; }

int dcz_input_shape(const dcz_model *m, uint32_t *dims, int max_rank)
{
    if (!m) return 0;
    for (int i = 0; i < (int)m->in_rank && i < max_rank; i++) dims[i] = m->in_dims[i];
    return (int)m->in_rank;
}

dcz_scheme dcz_model_scheme(const dcz_model *m) { return m ? m->scheme : DCZ_SCHEME_NONE; }
