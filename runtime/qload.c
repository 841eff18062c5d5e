/* qload.c: the integer form of a calibrated model (docs/FORMAT.md, "CALIB
 * section"; model.h, "integer execution").
 *
 * Weights become integers of the scheme's range: per output channel c with
 * scale s_c, q = round(w / s_c) (half away from zero), clamped to +-qmax.
 * Dense weights take the sparse execution form with every entry present, so
 * one family of integer kernels serves dense, pruned and codebook layers; a
 * codebook becomes one integer table per row (a row's scale is its own).
 * Integer tensors (I8, I16) are used as stored, after checking their scales
 * are the table's.
 *
 * Between weighted layers j and j' the accumulators of j (units s_in(j) *
 * s_c) are requantized to the input scale of j' by M_c = s_in(j) s_c /
 * s_in(j'), written as an integer multiplier and a rounding shift; for the
 * fixed-point schemes M_c is a power of two and becomes a pure shift. The
 * floating-point work here happens once, at load; the kernels that run
 * (kernels_int.c) only multiply, add and shift integers.
 *
 * Checked by tests/unit/test_calibrate.c (integer execution against float
 * and against a fixed-point model computed by hand, requantization
 * constants, refusals), tests/unit/test_static.c and tests/fuzz/fuzz_dcz.c.
 */
#include <math.h>
#include <string.h>

#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qrequant.h"
#include "runtime/model.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

/* round(v / s) half away from zero, clamped to +-qmax (NaN gives 0) */
static int32_t quantize(double v, double s, int32_t qmax)
{
    double q = v / s;
    if (q != q) return 0;
    q = q >= 0 ? floor(q + 0.5) : -floor(-q + 0.5);
    if (q > qmax) return qmax;
    if (q < -qmax) return -qmax;
    return (int32_t)q;
}

static float le_f32(const uint8_t *p, uint32_t i) { return dcz_f32_from_bits(dcz_le32(p + (size_t)i * 4)); }

dcz_status dcz_qload_weights(dcz_arena *a, uint32_t scheme, const dcz_tensor_view *w,
                             const dcz_calib_entry *e, dcz_exec_layer *l)
{
    const int32_t qmax = dcz_scheme_qmax(scheme);
    const uint32_t rows = w->dims[0], cols = (uint32_t)(w->n / w->dims[0]);
    if (e->nw != 1 && e->nw != rows) return DCZ_ERR_FORMAT;
    if (DCZ_ENC_IS_INT(w->enc)) {
        /* an 8-bit scheme takes I8 weights only (docs/FORMAT.md) */
        if (w->nscale != e->nw || (qmax == 127 && w->enc == DCZ_ENC_I16)) return DCZ_ERR_FORMAT;
        for (uint32_t i = 0; i < e->nw; i++)
            if (dcz_le32(w->scales + (size_t)i * 4) != dcz_le32(e->w_scale + (size_t)i * 4))
                return DCZ_ERR_FORMAT;
    }
    const int dense = w->enc == DCZ_ENC_F32 || w->enc == DCZ_ENC_F16 || DCZ_ENC_IS_INT(w->enc);
    const uint64_t entries = dense ? w->n : l->sp.entries;
    float *ws = dcz_arena_take(a, (uint64_t)rows * 4);
    int64_t *qbias = dcz_arena_take(a, (uint64_t)rows * 8);
    int32_t *mult = dcz_arena_take(a, (uint64_t)rows * 4);
    uint8_t *shift = dcz_arena_take(a, rows), *pre = dcz_arena_take(a, rows);
    double *out_scale = dcz_arena_take(a, (uint64_t)rows * 8);
    uint32_t *row_ptr = NULL;
    uint8_t *step = NULL;
    int16_t *qval = NULL, *qtab = NULL;
    if (dense) {
        row_ptr = dcz_arena_take(a, ((uint64_t)rows + 1) * 4);
        step = dcz_arena_take(a, entries);
    }
    if (w->enc == DCZ_ENC_CODEBOOK) qtab = dcz_arena_take(a, (uint64_t)rows * w->k * 2);
    else qval = dcz_arena_take(a, entries * 2);
    if (!a->base) return DCZ_OK;

    for (uint32_t r = 0; r < rows; r++) ws[r] = le_f32(e->w_scale, e->nw == 1 ? 0 : r);
    dcz_qsparse *qs = &l->qs;
    memset(qs, 0, sizeof *qs);
    qs->rows = rows;
    qs->cols = cols;
    qs->entries = (uint32_t)entries;
    if (dense) {
        for (uint32_t r = 0; r <= rows; r++) row_ptr[r] = r * cols;
        for (uint64_t i = 0; i < entries; i++) {
            const uint32_t r = (uint32_t)(i / cols);
            step[i] = i % cols ? 1 : 0;
            int32_t q;
            if (w->enc == DCZ_ENC_I8) {
                q = (int8_t)w->payload[i];
            } else if (w->enc == DCZ_ENC_I16) {
                q = (int16_t)(uint16_t)(w->payload[i * 2] | w->payload[i * 2 + 1] << 8);
            } else {
                q = quantize(l->w[i], ws[r], qmax);
            }
            if (q > qmax || q < -qmax) return DCZ_ERR_FORMAT;
            qval[i] = (int16_t)q;
        }
        qs->row_ptr = row_ptr;
        qs->step = step;
        qs->qval = qval;
        l->w = NULL; /* the float copy is not used on integers */
    } else {
        qs->row_ptr = l->sp.row_ptr;
        qs->step = l->sp.step;
        if (qtab) {
            for (uint32_t r = 0; r < rows; r++)
                for (uint32_t k = 0; k < w->k; k++)
                    qtab[(size_t)r * w->k + k] = (int16_t)quantize(l->sp.codebook[k], ws[r], qmax);
            qs->idx = l->sp.idx;
            qs->qtab = qtab;
            qs->k = w->k;
        } else {
            for (uint32_t r = 0; r < rows; r++)
                for (uint32_t i = l->sp.row_ptr[r]; i < l->sp.row_ptr[r + 1]; i++)
                    qval[i] = l->sp.step[i] == DCZ_STEP_FILLER
                        ? 0 : (int16_t)quantize(l->sp.val[i], ws[r], qmax);
            qs->qval = qval;
        }
    }
    l->channels = rows;
    l->w_scale = ws;
    l->in_scale = e->in_scale;
    l->qbias = qbias;
    l->rq_mult = mult;
    l->rq_shift = shift;
    l->rq_pre = pre;
    l->out_scale = out_scale;
    return DCZ_OK;
}

dcz_status dcz_requant_params(double M, int32_t *mult, uint8_t *shift)
{
    *mult = 0;
    *shift = 0;
    if (!(M > 0)) return M == 0 ? DCZ_OK : DCZ_ERR_FORMAT;
    int e;
    const double f = frexp(M, &e);           /* M = f 2^e, f in [0.5, 1) */
    int64_t m = (int64_t)floor(f * 2147483648.0 + 0.5);
    if (m == 2147483648LL) { m >>= 1; e++; }
    int sh = 31 - e;
    while (sh > 0 && (m & 1) == 0) { m >>= 1; sh--; }
    if (sh > 62) {                           /* tiny M: drop precision to fit */
        m >>= (sh - 62 < 63 ? sh - 62 : 62);
        sh = 62;
    }
    if (sh < 0) return DCZ_ERR_UNSUPPORTED;  /* M >= 2^31 */
    *mult = (int32_t)m;
    *shift = (uint8_t)sh;
    return DCZ_OK;
}

/* The largest |accumulator| each output channel c of l can produce: each
 * entry meets one input of at most qmax (a conv output pixel meets each tap
 * once), plus the bias; in double, so the bound itself cannot overflow.
 * *fits: every channel's bound is below limit; *mult_fits (where mult is
 * given): every channel whose shift is not 0 keeps its bound times its
 * multiplier below 2^62; pre (where given): each channel's pre-shift from
 * its bound (dcz_requant_pre; 0 without mult). One pass over the weights: the stream form's
 * streams (cpu/ref/stream.c) are read once, in row order, with the model's
 * scratch for their reader (0 in both where they cannot be). */
static void bounds(const dcz_exec_layer *l, int32_t qmax, double limit, const int32_t *mult, uint8_t *pre,
                   void *scratch, int *fits, int *mult_fits)
{
    const dcz_qsparse *qs = &l->qs;
    const dcz_tensor_view *wv = l->wv;
    const uint32_t rows = l->channels;
    const uint64_t cols = wv ? wv->n / rows : 0;
    *fits = *mult_fits = 0;
    dcz_entries e;
    if (wv && dcz_entries_begin(&e, wv, scratch) != DCZ_OK) return;
    uint64_t pos = 0;
    uint32_t idx = 0;
    int have = 0, below = 1, mult_below = 1;   /* have: the stream form's entry read and not yet summed */
    for (uint32_t c = 0; c < rows; c++) {
        double sum = 0;
        if (!wv) {
            for (uint32_t i = qs->row_ptr[c]; i < qs->row_ptr[c + 1]; i++)
                if (qs->step[i] != DCZ_STEP_FILLER) sum += fabs((double)dcz_qsparse_weight(qs, c, i));
        }
        while (wv) {
            if (!have) {
                if (e.entry == wv->nnz) break;
                if (dcz_entries_next(&e, &pos, &idx) != DCZ_OK) return;
                have = 1;
            }
            if (pos / cols != c) break;
            sum += fabs((double)qs->qtab[(size_t)c * qs->k + idx]);
            have = 0;
        }
        const double b = sum * qmax + fabs((double)l->qbias[c]);
        below &= b < limit;
        if (mult) mult_below &= !(l->rq_shift[c] > 0) || b * mult[c] < 0x1p62;
        if (pre) pre[c] = mult ? dcz_requant_pre(l->rq_shift[c], b) : 0;
    }
    *fits = below;
    *mult_fits = mult_below;
}

/* A weighted layer's biases in accumulator units and the float scale of
 * each accumulator; but for the last (last), the requantization of its
 * accumulators to the scale of its output, s_out; and the range checks of
 * model.h: every sum of an 8-bit scheme within 32 bits, of fixed16 within
 * 62 bits, and a multiplier that is not a pure power of two keeping |acc *
 * mult| below 2^62. Refused in that order; the bounds of both checks are
 * taken in one pass over the weights. */
static dcz_status finish_weighted(dcz_exec_layer *l, int32_t qmax, int last, float s_out, void *scratch)
{
    for (uint32_t c = 0; c < l->channels; c++) {
        const double unit = (double)l->in_scale * l->w_scale[c];
        const double b = l->bias ? l->bias[c] / unit : 0;
        const double qb = b >= 0 ? floor(b + 0.5) : -floor(-b + 0.5);
        if (!(fabs(qb) < 0x1p46)) return DCZ_ERR_UNSUPPORTED;
        l->qbias[c] = (int64_t)qb;
        l->out_scale[c] = unit;
    }
    dcz_status linked = DCZ_OK;
    for (uint32_t c = 0; !last && linked == DCZ_OK && c < l->channels; c++) {
        const double M = (double)l->in_scale * l->w_scale[c] / s_out;
        linked = dcz_requant_params(M, &l->rq_mult[c], &l->rq_shift[c]);
    }
    int fits, mult_fits;
    /* the pre-shifts for the 8-bit schemes' vector kernels alone */
    if (qmax != 127) l->rq_pre = NULL;
    bounds(l, qmax, qmax == 127 ? 0x1p31 : 0x1p62, last || linked != DCZ_OK ? NULL : l->rq_mult, l->rq_pre, scratch,
           &fits, &mult_fits);
    if (!fits) return DCZ_ERR_UNSUPPORTED;
    TRY(linked);
    return mult_fits ? DCZ_OK : DCZ_ERR_UNSUPPORTED;
}

/* The scales of a table without tensor scales (format 1.2, or a chain):
 * walking back from the last weighted layer, a weighted layer's input has
 * its in_scale and any other layer's input its output's scale. Only chains
 * of one-input ops have such a table. */
static dcz_status chain_scales(dcz_model *m)
{
    for (uint32_t i = m->q_last + 1; i-- > m->q_first;) {
        const dcz_exec_layer *l = &m->layers[i];
        if (l->nin != 1 || l->tin[0] != i) return DCZ_ERR_UNSUPPORTED;
        m->t_scale[i] = l->w_scale ? l->in_scale : m->t_scale[i + 1];
    }
    return DCZ_OK;
}

static int same_bits(float a, float b) { return dcz_f32_bits(a) == dcz_f32_bits(b); }

/* The table of an activation: every input integer v, as the float v s_in,
 * through the float kernel, back to integers of scale s_out. */
static void fill_table(dcz_exec_layer *l, float s_in, float s_out, int32_t qmax)
{
    for (int32_t v = -qmax; v <= qmax; v++) {
        const float x = (float)((double)v * s_in);
        float y;
        dcz_activation_ref(l->op, l->param, &x, 1, &y);
        l->table[v + qmax] = (dcz_q)quantize(y, s_out, qmax);
    }
}

/* The integer constants of region layer i from the tensors' scales. */
static dcz_status finish_layer(dcz_model *m, uint32_t i)
{
    dcz_exec_layer *l = &m->layers[i];
    const dcz_op_info *o = dcz_op_get(l->op);
    const float *ts = m->t_scale;
    const float s_out = ts[i + 1], s_in = ts[l->tin[0]];
    switch (o->qscale) {
    case DCZ_QS_WEIGHTED:
        if (!same_bits(l->in_scale, s_in)) return DCZ_ERR_FORMAT;
        return finish_weighted(l, m->qmax, i == m->q_last, s_out, m->scratch);
    case DCZ_QS_KEEP:
        return same_bits(s_in, s_out) ? DCZ_OK : DCZ_ERR_FORMAT;
    case DCZ_QS_RESCALE:
        for (uint32_t k = 0; k < l->nin; k++)
            TRY(dcz_requant_params((double)ts[l->tin[k]] / s_out, &l->in_mult[k], &l->in_shift[k]));
        if (l->op == DCZ_OP_CONCAT && l->table) dcz_qconcat_tables(l->nin, l->in_mult, l->in_shift, m->qmax, l->table);
        /* an ADD's terms past its tables' range: rescaled by multiplies */
        if (l->op == DCZ_OP_ADD && l->table && !dcz_qadd_tables(l->in_mult, l->in_shift, m->qmax, l->table))
            l->table = NULL;
        return DCZ_OK;
    case DCZ_QS_PRODUCT:
        return dcz_requant_params((double)s_in * ts[l->tin[1]] / s_out, &l->in_mult[0],
                                  &l->in_shift[0]);
    case DCZ_QS_MEAN:
        if (same_bits(s_in, s_out)) return DCZ_OK;
        return dcz_requant_params((double)s_in / ((double)s_out * l->geom.in_h * l->geom.in_w),
                                  &l->in_mult[0], &l->in_shift[0]);
    case DCZ_QS_TABLE:
        if (!l->table) return DCZ_ERR_UNSUPPORTED;
        fill_table(l, s_in, s_out, m->qmax);
        return DCZ_OK;
    case DCZ_QS_NONE:
        break;
    }
    return DCZ_ERR_UNSUPPORTED;
}

dcz_status dcz_qload_finish(dcz_model *m, const uint8_t *tscales, uint32_t ntscales)
{
    uint32_t first = UINT32_MAX, last = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        if (!m->layers[i].w_scale) continue;
        if (first == UINT32_MAX) first = i;
        last = i;
    }
    if (first == UINT32_MAX) return DCZ_ERR_FORMAT;
    m->q_first = first;
    m->q_last = last;
    m->q_in = m->layers[first].tin[0];
    /* the count first: the scales are read only when there are that many */
    if (tscales && ntscales != m->nlayers + 1) return DCZ_ERR_FORMAT;
    for (uint32_t t = 0; t <= m->nlayers; t++)
        m->t_scale[t] = tscales ? dcz_f32_from_bits(dcz_le32(tscales + (size_t)t * 4)) : 0.0f;
    if (!tscales) TRY(chain_scales(m));
    for (uint32_t i = first; i <= last; i++) {
        dcz_exec_layer *l = &m->layers[i];
        if (l->op == DCZ_OP_SOFTMAX) return DCZ_ERR_FORMAT;
        /* the region reads one float tensor: the first weighted layer's input */
        for (uint32_t k = 0; k < l->nin; k++) {
            if (l->tin[k] <= first && l->tin[k] != m->q_in) return DCZ_ERR_UNSUPPORTED;
            if (!dcz_scale_ok(m->scheme, m->t_scale[l->tin[k]])) return DCZ_ERR_FORMAT;
        }
        if (i != last && !dcz_scale_ok(m->scheme, m->t_scale[i + 1])) return DCZ_ERR_FORMAT;
        l->q = 1;
        TRY(finish_layer(m, i));
    }
    /* and only the last weighted layer's output leaves it */
    for (uint32_t i = last + 1; i < m->nlayers; i++)
        for (uint32_t k = 0; k < m->layers[i].nin; k++)
            if (m->layers[i].tin[k] > first && m->layers[i].tin[k] <= last) return DCZ_ERR_UNSUPPORTED;
    /* the tables the walk took for layers outside it are never filled:
     * none (float layers read none) */
    for (uint32_t i = 0; i < m->nlayers; i++)
        if (!m->layers[i].q) m->layers[i].table = NULL;
    return DCZ_OK;
}
