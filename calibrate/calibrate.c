/* calibrate.c: the calibrate stage (calibrate.h): statistics of a float
 * model over calibration samples, the table chosen from them, and its
 * installation into a document.
 *
 * Checked by tests/unit/test_calibrate.c (identical tables whatever the
 * batch order and size, integer execution close to float, table text round
 * trips and refusals) and tests/cli/calibrate.sh.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "runtime/tool.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

/* the layers that get weight scales: the table's weighted ops */
static int weighted(uint16_t op)
{
    const dcz_op_info *o = dcz_op_get(op);
    return o && o->weighted;
}

const char *dcz_cal_scheme_name(uint32_t scheme)
{
    switch (scheme) {
    case DCZ_SCHEME_INT8: return "int8";
    case DCZ_SCHEME_FIXED8: return "fixed8";
    case DCZ_SCHEME_FIXED16: return "fixed16";
    }
    return "fp32";
}

uint32_t dcz_cal_scheme_parse(const char *name)
{
    for (uint32_t s = DCZ_SCHEME_INT8; s <= DCZ_SCHEME_FIXED16; s++)
        if (strcmp(name, dcz_cal_scheme_name(s)) == 0) return s;
    return 0;
}

const char *dcz_cal_method_name(dcz_cal_method m)
{
    switch (m) {
    case DCZ_CAL_MINMAX: return "minmax";
    case DCZ_CAL_PERCENTILE: return "percentile";
    case DCZ_CAL_MSE: return "mse";
    case DCZ_CAL_ENTROPY: return "entropy";
    }
    return "?";
}

/* ---- hashes ---------------------------------------------------------------- */

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

dcz_status dcz_cal_model_hash(dcz_doc *d, uint64_t *hash)
{
    /* the writer's bytes of the graph and weights alone */
    dcz_doc_calib *calib = d->calib;
    char **stages = d->stages;
    uint32_t nstages = d->nstages;
    size_t file_bytes = d->file_bytes, overhead = d->overhead_bytes;
    const dcz_doc_parts parts = d->parts;
    d->calib = NULL;
    d->stages = NULL;
    d->nstages = 0;
    uint8_t *buf;
    size_t len;
    dcz_status s = dcz_doc_write(d, &buf, &len);
    d->calib = calib;
    d->stages = stages;
    d->nstages = nstages;
    d->file_bytes = file_bytes;
    d->overhead_bytes = overhead;
    d->parts = parts;
    if (s != DCZ_OK) return s;
    *hash = fnv(FNV_OFFSET, buf, len);
    free(buf);
    return DCZ_OK;
}

/* Samples read at a time to hash them. */
#define HASH_CHUNK 64

/* One sample's hash: its floats, then its label. The data hash is the sum
 * of those of its samples (which does not depend on their order), then
 * their count. */
static uint64_t sample_hash(const float *x, size_t size, uint8_t label)
{
    return fnv(fnv(FNV_OFFSET, x, size * sizeof(float)), &label, 1);
}

dcz_status dcz_cal_data_hash(const dcz_dataset *data, const size_t *idx, size_t n, uint64_t *hash)
{
    /* a sum of per-sample hashes does not depend on their order */
    const size_t size = (size_t)data->c * data->h * data->w;
    float *x = malloc(HASH_CHUNK * (size ? size : 1) * sizeof *x);   /* (HASH_CHUNK, size) */
    if (!x) return DCZ_ERR_NOMEM;
    uint64_t sum = 0;
    dcz_status s = DCZ_OK;
    for (size_t from = 0; from < n && s == DCZ_OK; from += HASH_CHUNK) {
        const size_t b = n - from < HASH_CHUNK ? n - from : HASH_CHUNK;
        if ((s = dcz_dataset_samples(data, idx, from, b, x, NULL, 0)) != DCZ_OK) break;
        for (size_t i = 0; i < b; i++) sum += sample_hash(x + i * size, size, data->y[idx[from + i]]);
    }
    free(x);
    if (s == DCZ_OK) *hash = fnv(sum, &n, sizeof n);
    return s;
}

/* ---- statistics ------------------------------------------------------------- */

typedef struct tap_ctx {
    const dcz_cal_collect *c;
    int hist;                 /* pass 2 */
} tap_ctx;

/* Tensor t's n values into its statistics, by pass. */
static void observe(const dcz_cal_collect *c, int hist, uint32_t t, const float *y, size_t n)
{
    if (hist) dcz_cal_observe_hist(&c->stats[t], y, n);
    else dcz_cal_observe_range(&c->stats[t], y, n);
}

/* The tap after layer i: tensor i + 1. */
static void tap_stats(void *ctx, uint32_t layer, const float *y, size_t batch, uint32_t width)
{
    tap_ctx *t = ctx;
    observe(t->c, t->hist, layer + 1, y, batch * width);
}

static dcz_status open_doc(dcz_doc *d, dcz_precision precision, dcz_model **m)
{
    uint8_t *buf;
    size_t len;
    dcz_options o;
    dcz_options_init(&o);
    o.precision = precision;
    o.device = DCZ_DEVICE_CPU;
    TRY(dcz_doc_write(d, &buf, &len));
    dcz_status s = dcz_open_memory(buf, len, &o, m);
    free(buf);
    return s;
}

void dcz_cal_collect_free(dcz_cal_collect *c)
{
    if (!c) return;
    free(c->layer);
    free(c->stats);
    memset(c, 0, sizeof *c);
}

/* Weighted layers of d, checked: at least one, no SOFTMAX between. */
static dcz_status weighted_layers(const dcz_doc *d, uint32_t *count, uint32_t *layer)
{
    uint32_t n = 0;
    int softmax_after = 0;
    for (uint32_t i = 0; i < d->nlayers; i++) {
        if (d->layers[i].op == DCZ_OP_SOFTMAX && n) softmax_after = 1;
        if (!weighted(d->layers[i].op)) continue;
        if (softmax_after) return DCZ_ERR_UNSUPPORTED;
        if (layer) layer[n] = i;
        n++;
    }
    *count = n;
    return n ? DCZ_OK : DCZ_ERR_UNSUPPORTED;
}

dcz_status dcz_cal_collect_stats(dcz_doc *d, const dcz_dataset *data, const size_t *idx,
                                 size_t n, size_t batch, dcz_progress_fn progress, void *pctx,
                                 dcz_cal_collect *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0 || batch == 0) return DCZ_ERR_ARG;
    uint32_t count;
    TRY(weighted_layers(d, &count, NULL));
    const size_t size = (size_t)data->c * data->h * data->w;
    dcz_shape in = { d->input_rank, { 0 } };
    memcpy(in.dims, d->input_dims, sizeof in.dims);
    if (dcz_shape_count(&in) != size) return DCZ_ERR_SHAPE;
    for (size_t i = 0; i < n; i++)
        if (idx[i] >= data->n) return DCZ_ERR_ARG;

    dcz_model *m = NULL;
    float *x = NULL, *y = NULL;
    dcz_status s = DCZ_ERR_NOMEM;
    out->layer = malloc(count * sizeof *out->layer);
    out->stats = malloc(((size_t)d->nlayers + 1) * sizeof *out->stats);
    if (!out->layer || !out->stats) goto fail;
    out->count = count;
    out->ntensors = d->nlayers + 1;
    weighted_layers(d, &count, out->layer);
    for (uint32_t t = 0; t < out->ntensors; t++) dcz_cal_stats_init(&out->stats[t]);
    if ((s = dcz_cal_model_hash(d, &out->model_hash)) != DCZ_OK) goto fail;
    out->samples = n;   /* the data hash: summed by the first pass, which reads every sample */
    if ((s = open_doc(d, DCZ_PRECISION_FP32, &m)) != DCZ_OK) goto fail;
    s = DCZ_ERR_NOMEM;
    x = malloc(batch * size * sizeof *x);
    y = malloc(batch * dcz_output_size(m) * sizeof *y);
    if (!x || !y) goto fail;
    uint64_t sum = 0;
    for (int pass = 0; pass < 2; pass++) {
        tap_ctx t = { out, pass };
        for (size_t from = 0; from < n; from += batch) {
            const size_t b = n - from < batch ? n - from : batch;
            if ((s = dcz_dataset_samples(data, idx, from, b, x, NULL, 0)) != DCZ_OK) goto fail;
            for (size_t i = 0; pass == 0 && i < b; i++) sum += sample_hash(x + i * size, size, data->y[idx[from + i]]);
            observe(out, pass, 0, x, b * size);
            if ((s = dcz_run_tapped(m, x, b, y, tap_stats, &t)) != DCZ_OK) goto fail;
            if (progress) progress(pctx, pass * n + from + b, 2 * n);
        }
    }
    out->data_hash = fnv(sum, &n, sizeof n);
    s = DCZ_OK;
fail:
    dcz_close(m);
    free(x);
    free(y);
    if (s != DCZ_OK) dcz_cal_collect_free(out);
    return s;
}

/* ---- choosing and installing the table -------------------------------------- */

/* A scale inside the format's range; fixed point keeps a power of two. */
static float clamp_scale(double s)
{
    if (!(s > 0)) return 1.0f;
    if (s < DCZ_SCALE_MIN) return DCZ_SCALE_MIN;
    if (s > DCZ_SCALE_MAX) return DCZ_SCALE_MAX;
    return (float)s;
}

/* Weight scale of a group whose largest |w| is amax: symmetric amax / qmax
 * for int8; for fixed point Ristretto's rule for parameters, integer length
 * ceil(log2 amax) + 1 and fl = bits - that, so the scale is 2^-fl. */
static float weight_scale(double amax, int32_t qmax, int fixed, int *fl)
{
    *fl = 0;
    if (!(amax > 0)) return 1.0f;
    if (!fixed) return clamp_scale(amax / qmax);
    const int bits = qmax == 127 ? 8 : 16;
    int f = bits - ((int)ceil(log2(amax)) + 1);
    if (f > 40) f = 40;
    if (f < -40) f = -40;
    *fl = f;
    return (float)ldexp(1.0, -f);
}

/* The scale of an activation choice: a power of two 2^-fl for fixed point. */
static float act_scale(const dcz_cal_choice *c, int fixed)
{
    return fixed ? (float)ldexp(1.0, -(c->fl > 40 ? 40 : c->fl < -40 ? -40 : c->fl))
                 : clamp_scale(c->scale);
}

static uint32_t find_root(uint32_t *parent, uint32_t t)
{
    while (parent[t] != t) t = parent[t] = parent[parent[t]];
    return t;
}

/* Whether the group of tensor x (the groups of the layers before the one
 * reading x formed, so its tensors are x and tensors before it) is read by
 * that layer alone: each of its tensors read once, none the region's input
 * q_in (which the region's first layer reads too, and which may lie before
 * it). */
static int read_once(uint32_t *parent, const uint32_t *readers, uint32_t q_in, uint32_t x)
{
    const uint32_t r = find_root(parent, x);
    for (uint32_t t = 0; t <= x; t++)
        if (find_root(parent, t) == r && (readers[t] != 1 || t == q_in)) return 0;
    return 1;
}

/* The scale of every tensor of the integer region (layers first .. last)
 * into ts (ntensors, 0 off the region), and the choice behind it into
 * pick (ntensors). Tensors joined by an op that keeps the scale share one,
 * chosen from the statistics of the group's last tensor that a weighted
 * layer reads (else its last tensor) by the method of that reader (else of
 * the next weighted layer); min-max for a group that an Add, Concat or Mul
 * reads. A CLIP that alone reads a weighted layer's output joins it too:
 * the layer's sums are requantized straight to the range the CLIP keeps,
 * which then is a clamp of integers that the runtime fuses into the
 * layer's requantization (load.c), and the range past it, which the CLIP
 * drops, costs no resolution. A Concat's input whose group nothing else
 * reads (each of its tensors read once, the last by the Concat; not the
 * region's input) joins the Concat's group: its layer requantizes its
 * sums straight to the scale the Concat writes, once, where the Concat
 * would rescale them a second time, and the runtime copies it. */
static dcz_status tensor_scales(const dcz_doc *d, const dcz_cal_collect *c,
                                const dcz_cal_layer_cfg *cfg, int32_t qmax, int fixed,
                                float *ts, dcz_cal_choice *pick)
{
    const uint32_t T = c->ntensors, first = c->layer[0], last = c->layer[c->count - 1];
    uint32_t *parent = malloc(T * sizeof *parent), *rep = malloc(T * sizeof *rep);
    int32_t *reader = malloc(T * sizeof *reader);   /* the weighted slot reading t, or -1 */
    uint8_t *in = calloc(T, 1), *summed = calloc(T, 1);
    uint32_t *readers = calloc(T, sizeof *readers);   /* layers reading t */
    dcz_status s = DCZ_ERR_NOMEM;
    if (!parent || !rep || !reader || !in || !summed || !readers) goto done;
    for (uint32_t i = 0; i < d->nlayers; i++)
        for (uint32_t k = 0; k < d->layers[i].nin; k++)
            if (d->layers[i].in[k] < T) readers[d->layers[i].in[k]]++;
    for (uint32_t t = 0; t < T; t++) {
        parent[t] = t;
        reader[t] = -1;
        ts[t] = 0;
    }
    for (uint32_t j = 0; j < c->count; j++) reader[d->layers[c->layer[j]].in[0]] = (int32_t)j;
    for (uint32_t i = first; i <= last; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        const dcz_qscale q = dcz_op_get(l->op)->qscale;
        for (uint32_t k = 0; k < l->nin; k++) {
            in[l->in[k]] = 1;
            summed[l->in[k]] |= q == DCZ_QS_RESCALE || q == DCZ_QS_PRODUCT;
        }
        if (i != last) in[i + 1] = 1;
        const uint32_t x = l->in[0];
        const int clamp = l->op == DCZ_OP_CLIP && x > first && readers[x] == 1 &&
                          dcz_op_get(d->layers[x - 1].op)->qscale == DCZ_QS_WEIGHTED;
        if ((dcz_op_get(l->op)->qscale == DCZ_QS_KEEP || clamp) && i != last)
            parent[find_root(parent, i + 1)] = find_root(parent, x);
        if (l->op == DCZ_OP_CONCAT)   /* never the region's last layer, a weighted one */
            for (uint32_t k = 0; k < l->nin; k++)
                if (read_once(parent, readers, d->layers[first].in[0], l->in[k]))
                    parent[find_root(parent, l->in[k])] = find_root(parent, i + 1);
    }
    /* each group's representative: the last tensor a weighted layer reads,
     * else its last one */
    for (uint32_t t = 0; t < T; t++) rep[t] = UINT32_MAX;
    for (uint32_t t = 0; t < T; t++) {
        if (!in[t]) continue;
        const uint32_t r = find_root(parent, t);
        if (rep[r] == UINT32_MAX || reader[t] >= 0 || reader[rep[r]] < 0) rep[r] = t;
        summed[r] |= summed[t];
    }
    for (uint32_t t = 0; t < T; t++) {
        if (!in[t] || find_root(parent, t) != t) continue;
        const uint32_t r = rep[t];
        uint32_t j = 0;
        if (reader[r] >= 0) j = (uint32_t)reader[r];
        else while (j + 1 < c->count && c->layer[j] < r) j++;
        /* a residual path keeps its range: clipping it loses what the sum carries */
        const dcz_cal_method method = summed[t] ? DCZ_CAL_MINMAX : cfg[j].method;
        if ((s = dcz_cal_choose(&c->stats[r], method, cfg[j].percentile, qmax, fixed,
                                &pick[t])) != DCZ_OK)
            goto done;
        ts[t] = act_scale(&pick[t], fixed);
    }
    for (uint32_t t = 0; t < T; t++) {
        if (!in[t]) continue;
        const uint32_t r = find_root(parent, t);
        ts[t] = ts[r];
        pick[t] = pick[r];
    }
    s = DCZ_OK;
done:
    free(parent);
    free(rep);
    free(reader);
    free(in);
    free(summed);
    free(readers);
    return s;
}

dcz_status dcz_cal_apply(dcz_doc *d, uint32_t scheme, const dcz_cal_collect *c,
                         const dcz_cal_layer_cfg *cfg, dcz_cal_result *res)
{
    const int32_t qmax = dcz_scheme_qmax(scheme);
    const int fixed = scheme != DCZ_SCHEME_INT8;
    if (qmax == 0 || c->count == 0 || c->ntensors != d->nlayers + 1) return DCZ_ERR_ARG;
    for (uint32_t j = 0; j < c->count; j++)
        if (c->layer[j] >= d->nlayers || !weighted(d->layers[c->layer[j]].op)) return DCZ_ERR_ARG;
    dcz_doc_calib *t = calloc(1, sizeof *t);
    dcz_cal_choice *pick = malloc(c->ntensors * sizeof *pick);
    if (t) t->t_scale = malloc(c->ntensors * sizeof *t->t_scale);
    if (t) t->e = calloc(c->count, sizeof *t->e);
    if (!t || !pick || !t->t_scale || !t->e) {
        free(pick);
        dcz_doc_calib_free(t);
        return DCZ_ERR_NOMEM;
    }
    t->scheme = scheme;
    t->model_hash = c->model_hash;
    t->data_hash = c->data_hash;
    t->ntensors = c->ntensors;
    dcz_status s = tensor_scales(d, c, cfg, qmax, fixed, t->t_scale, pick);
    for (uint32_t j = 0; j < c->count && s == DCZ_OK; j++) {
        const uint32_t L = c->layer[j];
        const dcz_doc_tensor *w = &d->layers[L].t[0];
        dcz_cal_result *r = &res[j];
        memset(r, 0, sizeof *r);
        r->layer = L;
        r->act = pick[d->layers[L].in[0]];
        dcz_doc_calib_entry *e = &t->e[t->count];
        const uint32_t rows = w->dims[0];
        const size_t per_row = w->n / rows;
        e->nw = cfg[j].per_channel ? rows : 1;
        e->w_scale = malloc(e->nw * sizeof *e->w_scale);
        if (!e->w_scale) { s = DCZ_ERR_NOMEM; break; }
        t->count++;
        e->layer = L;
        e->in_scale = t->t_scale[d->layers[L].in[0]];
        r->w_scale_min = INFINITY;
        r->w_fl_min = INT32_MAX;
        r->w_fl_max = INT32_MIN;
        for (uint32_t g = 0; g < e->nw; g++) {
            const size_t from = e->nw == 1 ? 0 : g * per_row;
            const size_t to = e->nw == 1 ? w->n : from + per_row;
            double amax = 0;
            for (size_t i = from; i < to; i++)
                if (fabs(w->values[i]) > amax) amax = fabs(w->values[i]);
            int fl;
            e->w_scale[g] = weight_scale(amax, qmax, fixed, &fl);
            if (e->w_scale[g] < r->w_scale_min) r->w_scale_min = e->w_scale[g];
            if (e->w_scale[g] > r->w_scale_max) r->w_scale_max = e->w_scale[g];
            if (fl < r->w_fl_min) r->w_fl_min = fl;
            if (fl > r->w_fl_max) r->w_fl_max = fl;
        }
        r->nw = e->nw;
    }
    free(pick);
    if (s != DCZ_OK) {
        dcz_doc_calib_free(t);
        return s;
    }
    return dcz_cal_install(d, t);
}

dcz_status dcz_cal_install(dcz_doc *d, dcz_doc_calib *t)
{
    /* every check first: on failure d is left as it was */
    dcz_status s = dcz_doc_calib_fits(d, t, 0);
    if (s != DCZ_OK) {
        dcz_doc_calib_free(t);
        return s;
    }
    const int32_t qmax = dcz_scheme_qmax(t->scheme);
    float **scales = calloc(t->count, sizeof *scales);
    if (!scales) { dcz_doc_calib_free(t); return DCZ_ERR_NOMEM; }
    for (uint32_t j = 0; j < t->count; j++) {
        scales[j] = malloc(t->e[j].nw * sizeof **scales);
        if (!scales[j]) {
            for (uint32_t k = 0; k < j; k++) free(scales[k]);
            free(scales);
            dcz_doc_calib_free(t);
            return DCZ_ERR_NOMEM;
        }
        memcpy(scales[j], t->e[j].w_scale, t->e[j].nw * sizeof **scales);
    }
    for (uint32_t j = 0; j < t->count; j++) {
        const dcz_doc_calib_entry *e = &t->e[j];
        dcz_doc_tensor *w = &d->layers[e->layer].t[0];
        if (w->enc != DCZ_ENC_F32 && w->enc != DCZ_ENC_F16 && !DCZ_ENC_IS_INT(w->enc)) {
            free(scales[j]);
            continue;
        }
        /* dense weights: integers on disk, values exactly what is stored */
        free(w->scale);
        w->scale = scales[j];
        w->nscale = e->nw;
        w->enc = qmax == 127 ? DCZ_ENC_I8 : DCZ_ENC_I16;
        const size_t per = w->n / e->nw;
        for (size_t i = 0; i < w->n; i++) {
            double q = (double)w->values[i] / w->scale[i / per];
            q = q >= 0 ? floor(q + 0.5) : -floor(-q + 0.5);
            if (!(q >= -qmax)) q = -qmax;
            if (q > qmax) q = qmax;
            w->values[i] = (float)q * w->scale[i / per];
        }
    }
    free(scales);
    dcz_doc_calib_free(d->calib);
    d->calib = t;
    return dcz_doc_calib_check(d);
}

/* ---- SQNR ---------------------------------------------------------------------- */

typedef struct sqnr_ctx {
    uint32_t count;
    const uint32_t *layer;
    float **ref;              /* (count) float outputs of the batch */
    double *sig, *noise;      /* (count) */
    int compare;              /* 0: keep the float outputs; 1: compare */
} sqnr_ctx;

static void tap_sqnr(void *ctx, uint32_t layer, const float *y, size_t batch, uint32_t width)
{
    sqnr_ctx *q = ctx;
    for (uint32_t j = 0; j < q->count; j++) {
        if (q->layer[j] != layer) continue;
        const size_t n = batch * width;
        if (!q->compare) {
            memcpy(q->ref[j], y, n * sizeof *y);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            const double r = q->ref[j][i], e = r - y[i];
            q->sig[j] += r * r;
            q->noise[j] += e * e;
        }
    }
}

dcz_status dcz_cal_sqnr(const uint8_t *fbuf, size_t flen, const uint8_t *qbuf, size_t qlen,
                        const dcz_dataset *data, const size_t *idx, size_t n, size_t batch,
                        uint32_t count, double *sqnr)
{
    dcz_options fo, qo;
    dcz_options_init(&fo);
    fo.device = DCZ_DEVICE_CPU;
    fo.precision = DCZ_PRECISION_FP32;
    qo = fo;
    qo.precision = DCZ_PRECISION_AUTO;
    dcz_model *fm = NULL, *qm = NULL;
    TRY(dcz_open_memory(fbuf, flen, &fo, &fm));
    dcz_status s = dcz_open_memory(qbuf, qlen, &qo, &qm);
    uint32_t *layer = calloc(count ? count : 1, sizeof *layer);
    float **ref = calloc(count ? count : 1, sizeof *ref);
    double *sig = calloc(count ? count : 1, sizeof *sig), *noise = calloc(count ? count : 1, sizeof *noise);
    const size_t size = (size_t)data->c * data->h * data->w;
    float *x = malloc(batch * size * sizeof *x), *y = NULL;
    if (s != DCZ_OK) goto done;
    s = DCZ_ERR_NOMEM;
    if (!layer || !ref || !sig || !noise || !x) goto done;
    y = malloc(batch * dcz_output_size(fm) * sizeof *y);
    if (!y) goto done;
    uint32_t k = 0;
    for (uint32_t i = 0; i < dcz_model_layer_count(fm) && k < count; i++) {
        dcz_layer_desc ld;
        if (dcz_describe_layer(fm, i, &ld) != DCZ_OK || !ld.weighted) continue;
        layer[k] = i;
        ref[k] = malloc(batch * ld.width * sizeof(float));
        if (!ref[k++]) goto done;
    }
    s = DCZ_ERR_ARG;
    if (k != count) goto done;
    sqnr_ctx q = { count, layer, ref, sig, noise, 0 };
    for (size_t from = 0; from < n; from += batch) {
        const size_t b = n - from < batch ? n - from : batch;
        if ((s = dcz_dataset_samples(data, idx, from, b, x, NULL, 0)) != DCZ_OK) goto done;
        q.compare = 0;
        if ((s = dcz_run_tapped(fm, x, b, y, tap_sqnr, &q)) != DCZ_OK) goto done;
        q.compare = 1;
        if ((s = dcz_run_tapped(qm, x, b, y, tap_sqnr, &q)) != DCZ_OK) goto done;
    }
    for (uint32_t j = 0; j < count; j++)
        sqnr[j] = noise[j] > 0 ? 10 * log10(sig[j] / noise[j]) : INFINITY;
    s = DCZ_OK;
done:
    for (uint32_t j = 0; ref && j < count; j++) free(ref[j]);
    free(ref);
    free(layer);
    free(sig);
    free(noise);
    free(x);
    free(y);
    dcz_close(fm);
    dcz_close(qm);
    return s;
}
