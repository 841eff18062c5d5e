/* net.c: the training network: allocation, the shape rules that make a
 * caller-filled network safe to run (dcz_net_validate) and that fill in its
 * sizes (dcz_net_infer_shapes), parameter initialization, activation buffers
 * and layer caches, the forward pass (dense layers through OpenBLAS sgemm,
 * batch-major activations; the other kinds in conv.c, pool.c, bnorm.c), the
 * mask / codebook constraints on weights and the folding of batch norm for
 * inference. Architectures by name are built in arch.c.
 *
 * Tested by tests/unit/test_train.c (validation errors, shapes, forward
 * probabilities, constraints, folding).
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/doc.h"
#include "train/internal.h"

#define NET_MAX_LAYERS (1 << 16)
#define FORWARD_CHUNK 1024
/* floats of activations (act and dact) a chunked inference run may hold */
#define ACT_BUDGET ((size_t)1 << 24)

void dcz_train_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

dcz_status dcz_net_alloc(int nlayers, dcz_net **out)
{
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (nlayers < 1 || nlayers > NET_MAX_LAYERS) return DCZ_ERR_ARG;
    dcz_net *net = calloc(1, sizeof *net);
    if (!net) return DCZ_ERR_NOMEM;
    net->layers = calloc((size_t)nlayers, sizeof *net->layers);
    if (!net->layers) {
        free(net);
        return DCZ_ERR_NOMEM;
    }
    net->nlayers = nlayers;
    dcz_rng_seed(&net->rng, 0);
    *out = net;
    return DCZ_OK;
}

static void free_acts(dcz_net *net)
{
    if (net->act)
        for (int i = 0; i <= net->nlayers; i++)
            if (i == 0 || !net->layers[i - 1].act_fused) free(net->act[i]);   /* not a fused activation's alias */
    if (net->dact)
        for (int i = 0; i <= net->nlayers; i++) free(net->dact[i]);
    free(net->act);
    free(net->dact);
    free(net->gsum);
    net->act = NULL;
    net->dact = NULL;
    net->gsum = NULL;
    net->gsum_floats = 0;
    net->cap_batch = 0;
    for (int i = 0; i < net->nlayers; i++) {
        free(net->layers[i].cache);
        net->layers[i].cache = NULL;
        net->layers[i].cache_bytes = 0;
    }
    free(net->work);
    net->work = NULL;
    net->work_floats = 0;
}

/* ---- flat parameter state -------------------------------------------------- */

static float **flat_buf(dcz_net *net, dcz_flat_kind kind, size_t **count)
{
    *count = kind == DCZ_FLAT_PARAM ? &net->param_count : kind == DCZ_FLAT_GRAD ? &net->grad_count
                                                                               : &net->mom_count;
    return kind == DCZ_FLAT_PARAM ? &net->param : kind == DCZ_FLAT_GRAD ? &net->grad : &net->mom;
}

/* Layer l's three slots in a flat buffer of kind (weights, bias, codebook;
 * NULL where the kind has none) and their sizes. */
static void flat_slots(dcz_tlayer *l, dcz_flat_kind kind, float **slot[3], size_t n[3])
{
    slot[0] = kind == DCZ_FLAT_PARAM ? &l->w : kind == DCZ_FLAT_GRAD ? &l->gw : &l->vw;
    slot[1] = kind == DCZ_FLAT_PARAM ? &l->b : kind == DCZ_FLAT_GRAD ? &l->gb : &l->vb;
    slot[2] = kind == DCZ_FLAT_PARAM ? NULL : kind == DCZ_FLAT_GRAD ? &l->gcb : &l->vcb;
    n[0] = kind == DCZ_FLAT_MOM && l->codebook ? 0 : dcz_tlayer_nweights(l); /* shared: centroids move */
    n[1] = dcz_tlayer_nbias(l);
    n[2] = kind != DCZ_FLAT_PARAM && l->codebook ? (size_t)l->k : 0;
}

static int inside(const float *p, const float *buf, size_t n)
{
    return p && buf && (uintptr_t)p >= (uintptr_t)buf && (uintptr_t)p < (uintptr_t)(buf + n);
}

/* The slots of kind in layout order: every layer's weights and bias, then
 * every codebook. Calls fn(slot, n, at, ctx) for each with its offset;
 * stops at the first nonzero return and returns it. */
typedef int (*slot_fn)(float **slot, size_t n, size_t at, void *ctx);
static int each_slot(dcz_net *net, dcz_flat_kind kind, slot_fn fn, void *ctx, size_t *total)
{
    size_t at = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < net->nlayers; i++) {
            dcz_tlayer *l = &net->layers[i];
            if (!dcz_tlayer_has_params(l)) continue;
            float **slot[3];
            size_t n[3];
            flat_slots(l, kind, slot, n);
            for (int j = pass ? 2 : 0; j < (pass ? 3 : 2); j++) {
                if (!slot[j]) continue;
                const int r = fn(slot[j], n[j], at, ctx);
                if (r) return r;
                at += n[j];
            }
        }
    *total = at;
    return 0;
}

typedef struct flat_ctx { float *buf, *old; size_t old_count; dcz_flat_kind kind; } flat_ctx;

/* off the layout of c->buf (is_flat), or a parameter missing (size pass) */
static int slot_off(float **slot, size_t n, size_t at, void *ctx)
{
    const flat_ctx *c = ctx;
    if (!c->buf) return c->kind == DCZ_FLAT_PARAM && n && !*slot;
    return n ? *slot != c->buf + at : *slot != NULL;
}

/* moves the slot's values into c->buf at its offset */
static int slot_move(float **slot, size_t n, size_t at, void *ctx)
{
    const flat_ctx *c = ctx;
    float *old = *slot;
    if (old && n) memcpy(c->buf + at, old, n * sizeof *old);
    if (!inside(old, c->old, c->old_count)) free(old);
    *slot = n ? c->buf + at : NULL;
    return 0;
}

dcz_status dcz_net_flatten(dcz_net *net, dcz_flat_kind kind)
{
    size_t *count, total;
    float **buf = flat_buf(net, kind, &count);
    flat_ctx c = { *buf, *buf, *count, kind };
    if (c.buf && !each_slot(net, kind, slot_off, &c, &total) && total == *count) return DCZ_OK;
    c.buf = NULL;
    if (each_slot(net, kind, slot_off, &c, &total)) return DCZ_ERR_ARG;   /* w or b missing */
    if (!(c.buf = calloc(total ? total : 1, sizeof *c.buf))) return DCZ_ERR_NOMEM;
    each_slot(net, kind, slot_move, &c, &total);
    free(*buf);
    *buf = c.buf;
    *count = total;
    return DCZ_OK;
}

void dcz_net_reset_state(dcz_net *net)
{
    if (!net || !net->layers) return;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        l->gw = l->gb = l->vw = l->vb = l->gcb = l->vcb = NULL;
    }
    free(net->grad);
    free(net->mom);
    net->grad = net->mom = NULL;
    net->grad_count = net->mom_count = 0;
}

/* Frees the parameters and statistics of one layer (not its training
 * state); those in the flat buffer stay there. */
static void free_params(const dcz_net *net, dcz_tlayer *l)
{
    if (!inside(l->w, net->param, net->param_count)) free(l->w);
    if (!inside(l->b, net->param, net->param_count)) free(l->b);
    free(l->mask);
    free(l->codebook); free(l->assign);
    free(l->run_mean); free(l->run_var);
    l->w = l->b = l->codebook = l->run_mean = l->run_var = NULL;
    l->mask = l->assign = NULL;
}

/* Frees everything the net holds but its document and rng, and zeroes it. */
static void release(dcz_net *net)
{
    dcz_net_reset_state(net);
    if (net->layers) {
        free_acts(net);
        for (int i = 0; i < net->nlayers; i++) free_params(net, &net->layers[i]);
    }
    free(net->layers);
    free(net->param);
    free(net->tshape);
    free(net->twidth);
    dcz_doc *doc = net->doc;
    const int own = net->own_doc;
    const dcz_rng rng = net->rng;
    memset(net, 0, sizeof *net);
    net->doc = doc;
    net->own_doc = own;
    net->rng = rng;
}

void dcz_net_free(dcz_net *net)
{
    if (!net) return;
    release(net);
    if (net->own_doc) dcz_doc_free(net->doc);
    free(net);
}

/* ---- shapes ----------------------------------------------------------------- */

/* Kinds whose geometry fields are used (and checked). */
static int has_geometry(dcz_op k)
{
    const dcz_train_op *t = dcz_train_op_get(k);
    return t && t->geometry;
}

static int64_t chw_count(dcz_chw s)
{
    return s.c * s.h * s.w;
}

/* The input shape recorded in net->in_rank/in_dims, as (c, h, w). */
static dcz_status rank_shape(const dcz_net *net, dcz_chw *s)
{
    uint32_t r = net->in_rank;
    const uint32_t *d = net->in_dims;
    if (r < 1 || r > 4) return DCZ_ERR_SHAPE;
    int64_t total = 1;
    for (uint32_t i = 0; i < r; i++) {
        if (d[i] == 0) return DCZ_ERR_SHAPE;
        total *= d[i];
        if (total > INT_MAX) return DCZ_ERR_SHAPE;
    }
    if (r == 1) *s = (dcz_chw){ d[0], 1, 1 };
    else if (r == 2) *s = (dcz_chw){ 1, d[0], d[1] };
    else if (r == 3) *s = (dcz_chw){ d[0], d[1], d[2] };
    else *s = (dcz_chw){ (int64_t)d[0] * d[1], d[2], d[3] };
    return DCZ_OK;
}

dcz_status dcz_tlayer_shape(const dcz_tlayer *l, const dcz_chw *t, dcz_chw *out)
{
    const dcz_op_info *o = dcz_op_get(l->op);
    dcz_shape in[DCZ_MAX_INPUTS], y;
    for (uint32_t k = 0; k < l->nin; k++) {
        const dcz_chw c = t[l->tin[k]];
        if (c.c < 1 || c.h < 1 || c.w < 1 || c.c > UINT32_MAX || c.h > UINT32_MAX || c.w > UINT32_MAX)
            return DCZ_ERR_SHAPE;
        in[k] = (dcz_shape){ 3, { (uint32_t)c.c, (uint32_t)c.h, (uint32_t)c.w, 0 } };
    }
    int32_t attr[DCZ_MAX_ATTRS];
    const uint32_t nattr = dcz_tlayer_attrs(l, t[l->tin[0]], attr);
    if (!o || !dcz_train_op_get(l->op)) return DCZ_ERR_ARG;
    if (o->check(attr) != DCZ_OK) return DCZ_ERR_SHAPE;   /* settings out of the rules */
    dcz_status st = dcz_op_shape(l->op, attr, nattr, in, l->nin, &y);
    if (st != DCZ_OK) return st == DCZ_ERR_SHAPE ? st : DCZ_ERR_ARG;
    *out = y.rank == 3 ? (dcz_chw){ y.dims[0], y.dims[1], y.dims[2] } : (dcz_chw){ y.dims[0], 1, 1 };
    return DCZ_OK;
}

/* Every layer's inputs (nin 0: the layer before), each an earlier tensor
 * that fits the op's input count, and every layer but the last read. */
static dcz_status check_graph(dcz_net *net)
{
    uint8_t *read = calloc((size_t)net->nlayers, 1);
    if (!read) return DCZ_ERR_NOMEM;
    dcz_status st = DCZ_OK;
    for (int i = 0; i < net->nlayers && st == DCZ_OK; i++) {
        dcz_tlayer *l = &net->layers[i];
        const dcz_op_info *o = dcz_op_get(l->op);
        if (l->nin == 0) {
            l->nin = 1;
            l->tin[0] = (uint32_t)i;
        }
        if (!o || !dcz_train_op_get(l->op) || l->nin < o->min_in || l->nin > o->max_in) st = DCZ_ERR_ARG;
        for (uint32_t k = 0; k < l->nin && st == DCZ_OK; k++) {
            if (l->tin[k] > (uint32_t)i) st = DCZ_ERR_ARG;
            else if (l->tin[k] > 0) read[l->tin[k] - 1] = 1;
        }
    }
    for (int i = 0; i + 1 < net->nlayers && st == DCZ_OK; i++)
        if (!read[i]) st = DCZ_ERR_ARG;
    free(read);
    return st;
}

dcz_status dcz_net_infer_shapes(dcz_net *net)
{
    if (!net || !net->layers || net->nlayers < 1) return DCZ_ERR_ARG;
    dcz_status st = check_graph(net);
    if (st != DCZ_OK) return st;
    dcz_chw *t = malloc(((size_t)net->nlayers + 1) * sizeof *t);
    if (!t) return DCZ_ERR_NOMEM;
    st = rank_shape(net, &t[0]);
    for (int i = 0; i < net->nlayers && st == DCZ_OK; i++) {
        dcz_tlayer *l = &net->layers[i];
        const dcz_chw cur = t[l->tin[0]];
        st = dcz_tlayer_shape(l, t, &t[i + 1]);
        if (st != DCZ_OK) break;
        const dcz_chw next = t[i + 1];
        if (chw_count(next) > INT_MAX) st = DCZ_ERR_SHAPE;
        l->in = (int)chw_count(cur);
        l->out = (int)chw_count(next);
        if (has_geometry(l->op)) {
            l->in_c = (int)cur.c; l->in_h = (int)cur.h; l->in_w = (int)cur.w;
            l->out_c = (int)next.c; l->out_h = (int)next.h; l->out_w = (int)next.w;
        }
    }
    free(t);
    return st;
}

/* Buffers and settings of one layer, apart from its shapes. */
static dcz_status check_layer(const dcz_net *net, int i)
{
    const dcz_tlayer *l = &net->layers[i];
    const dcz_train_op *t = dcz_train_op_get(l->op);
    if (!t) return DCZ_ERR_ARG;
    if (!dcz_tlayer_has_weights(l) && (l->mask || l->codebook || l->assign || l->k))
        return DCZ_ERR_ARG;
    /* the loss is fused with the softmax */
    if (l->op == DCZ_OP_SOFTMAX && i != net->nlayers - 1) return DCZ_ERR_ARG;
    return t->check ? t->check(l) : DCZ_OK;
}

/* net->tshape and twidth sized for the net's tensors. */
static dcz_status alloc_tensors(dcz_net *net)
{
    const size_t n = (size_t)net->nlayers + 1;
    free(net->tshape);
    free(net->twidth);
    net->tshape = malloc(n * sizeof *net->tshape);
    net->twidth = malloc(n * sizeof *net->twidth);
    return net->tshape && net->twidth ? DCZ_OK : DCZ_ERR_NOMEM;
}

/* The parameters into their flat buffer once every layer has them. */
static dcz_status pack_params(dcz_net *net)
{
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (dcz_tlayer_has_params(l) && (!l->w || !l->b)) return DCZ_OK;
    }
    return dcz_net_flatten(net, DCZ_FLAT_PARAM);
}

/* The document of a net built by hand (validated shapes): each layer's
 * op, name, inputs and attributes from its settings; parameters are written
 * by dcz_net_store. The net owns it. */
static dcz_status describe(dcz_net *net)
{
    dcz_doc *d = NULL;
    dcz_status st = dcz_doc_alloc((uint32_t)net->nlayers, &d);
    if (st != DCZ_OK) return st;
    d->input_rank = net->in_rank;
    memcpy(d->input_dims, net->in_dims, sizeof net->in_dims);
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        dcz_doc_layer *dl = &d->layers[i];
        const uint32_t *in = net->tshape[l->tin[0]];
        dl->op = (uint16_t)l->op;
        snprintf(dl->name, sizeof dl->name, "%s", l->name);
        dl->nin = l->nin;
        memcpy(dl->in, l->tin, sizeof dl->in);
        dl->nattr = dcz_tlayer_attrs(l, (dcz_chw){ in[0], in[1], in[2] }, dl->attr);
    }
    net->doc = d;
    net->own_doc = 1;
    return DCZ_OK;
}

dcz_status dcz_net_validate(dcz_net *net)
{
    if (!net || !net->layers || net->nlayers < 1) return DCZ_ERR_ARG;
    dcz_status st = check_graph(net);
    if (st != DCZ_OK) return st;
    const dcz_tlayer *first = &net->layers[0];
    dcz_chw *t = malloc(((size_t)net->nlayers + 1) * sizeof *t);
    if (!t) return DCZ_ERR_NOMEM;
    if (net->in_rank != 0) st = rank_shape(net, &t[0]);
    else if (has_geometry(first->op)) t[0] = (dcz_chw){ first->in_c, first->in_h, first->in_w };
    else t[0] = (dcz_chw){ first->in, 1, 1 };
    for (int i = 0; i < net->nlayers && st == DCZ_OK; i++) {
        const dcz_tlayer *l = &net->layers[i];
        const dcz_chw cur = t[l->tin[0]];
        if (l->in <= 0 || l->out <= 0 || chw_count(cur) != l->in) { st = DCZ_ERR_SHAPE; break; }
        if ((st = check_layer(net, i)) != DCZ_OK) break;
        if (has_geometry(l->op) && (l->in_c != cur.c || l->in_h != cur.h || l->in_w != cur.w)) {
            st = DCZ_ERR_SHAPE;
            break;
        }
        if ((st = dcz_tlayer_shape(l, t, &t[i + 1])) != DCZ_OK) break;
        const dcz_chw next = t[i + 1];
        if ((has_geometry(l->op) && (l->out_c != next.c || l->out_h != next.h || l->out_w != next.w)) ||
            chw_count(next) != l->out)
            st = DCZ_ERR_SHAPE;
    }
    /* shapes may have changed since the buffers were sized: regrow on demand */
    free_acts(net);
    if (st == DCZ_OK) st = alloc_tensors(net);
    for (int i = 0; i <= net->nlayers && st == DCZ_OK; i++) {
        net->tshape[i][0] = (uint32_t)t[i].c;
        net->tshape[i][1] = (uint32_t)t[i].h;
        net->tshape[i][2] = (uint32_t)t[i].w;
        net->twidth[i] = (uint32_t)chw_count(t[i]);
    }
    free(t);
    if (st != DCZ_OK) return st;
    if (net->in_rank == 0) {
        if (has_geometry(first->op)) {
            net->in_rank = 3;
            net->in_dims[0] = (uint32_t)first->in_c;
            net->in_dims[1] = (uint32_t)first->in_h;
            net->in_dims[2] = (uint32_t)first->in_w;
        } else {
            net->in_rank = 1;
            net->in_dims[0] = (uint32_t)first->in;
        }
    }
    net->in_dim = (int)net->twidth[0];
    net->classes = net->layers[net->nlayers - 1].out;
    if (!net->doc && (st = describe(net)) != DCZ_OK) return st;
    return pack_params(net);
}

size_t dcz_net_param_count(const dcz_net *net)
{
    if (!net || !net->layers) return 0;
    size_t n = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (dcz_tlayer_has_weights(l)) n += dcz_tlayer_nweights(l) + dcz_tlayer_nbias(l);
        else if (l->op == DCZ_OP_BATCHNORM) n += 2 * dcz_tlayer_nbias(l);
    }
    return n;
}

static dcz_status fill_tensor(dcz_doc_tensor *t, uint32_t enc, uint32_t rank, const uint32_t *dims,
                              const float *values);

/* He et al. 2015: N(0, 2 / fan_in) for layers followed by ReLU */
static void he_normal(dcz_rng *rng, float *w, size_t nw, size_t cols)
{
    const float sd = (float)sqrt(2.0 / (double)cols);
    for (size_t j = 0; j < nw; j++) w[j] = sd * dcz_rng_normal(rng);
}

dcz_status dcz_doc_new_head(dcz_doc *d, uint32_t outputs, uint64_t seed, uint32_t *was_outputs, char *err,
                            size_t errlen)
{
    if (!d || outputs < 1 || outputs > DCZ_MAX_DIM) return DCZ_ERR_ARG;
    uint32_t last = UINT32_MAX;
    for (uint32_t i = 0; i < d->nlayers; i++)
        if (dcz_op_get(d->layers[i].op) && dcz_op_get(d->layers[i].op)->weighted) last = i;
    if (last == UINT32_MAX) {
        dcz_train_err(err, errlen, "the model has no weighted layer to replace");
        return DCZ_ERR_SHAPE;
    }
    dcz_doc_layer *l = &d->layers[last];
    if (l->op != DCZ_OP_DENSE) {
        dcz_train_err(err, errlen, "the last weighted layer, %s, is a %s; a new head replaces a fully connected "
                      "one", l->name, dcz_op_get(l->op)->label);
        return DCZ_ERR_UNSUPPORTED;
    }
    const int32_t was = l->attr[1];
    if (was_outputs) *was_outputs = (uint32_t)was;
    l->attr[1] = (int32_t)outputs;
    dcz_shape ws, bs;
    dcz_shape *shapes = malloc(((size_t)d->nlayers + 1) * sizeof *shapes);
    dcz_status s = shapes ? dcz_doc_shapes(d, shapes) : DCZ_ERR_NOMEM;
    free(shapes);
    if (s == DCZ_OK) s = dcz_op_param_shapes(l->op, l->attr, &ws, &bs);
    if (s != DCZ_OK) {
        l->attr[1] = was;
        dcz_train_err(err, errlen, "the layers after %s do not take %u values in place of %d", l->name, outputs,
                      (int)was);
        return s;
    }
    const size_t rows = ws.dims[0], cols = ws.dims[1];
    float *w = malloc(rows * cols * sizeof *w), *b = calloc(rows, sizeof *b);
    if (!w || !b) {
        free(w);
        free(b);
        l->attr[1] = was;
        return DCZ_ERR_NOMEM;
    }
    dcz_rng rng;
    dcz_rng_seed(&rng, seed);
    he_normal(&rng, w, rows * cols, cols);
    s = fill_tensor(&l->t[0], DCZ_ENC_F32, ws.rank, ws.dims, w);
    if (s == DCZ_OK) s = fill_tensor(&l->t[1], DCZ_ENC_F32, bs.rank, bs.dims, b);
    free(w);
    free(b);
    l->ntensors = 2;
    /* a calibration table is of the old weights */
    if (s == DCZ_OK && d->calib) {
        dcz_doc_calib_free(d->calib);
        d->calib = NULL;
    }
    return s;
}

dcz_status dcz_net_init_params(dcz_net *net, dcz_rng *rng)
{
    if (!net || !net->layers || !rng) return DCZ_ERR_ARG;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (l->w) continue;
        if (dcz_tlayer_has_weights(l)) {
            size_t nw = dcz_tlayer_nweights(l), cols = dcz_tlayer_wcols(l);
            if (nw == 0) return DCZ_ERR_ARG;
            l->w = malloc(nw * sizeof(float));                          /* (rows, cols) */
            if (!l->b) l->b = calloc(dcz_tlayer_nbias(l), sizeof(float));   /* (rows) */
            if (!l->w || !l->b) return DCZ_ERR_NOMEM;
            he_normal(rng, l->w, nw, cols);
        } else if (l->op == DCZ_OP_BATCHNORM) {
            size_t c = dcz_tlayer_nbias(l);
            if (c == 0) return DCZ_ERR_ARG;
            l->w = malloc(c * sizeof(float));                           /* gamma (c) */
            if (!l->b) l->b = calloc(c, sizeof(float));                 /* beta (c) */
            if (!l->run_mean) l->run_mean = calloc(c, sizeof(float));   /* (c) */
            if (!l->run_var) {
                l->run_var = malloc(c * sizeof(float));                 /* (c) */
                if (l->run_var) for (size_t j = 0; j < c; j++) l->run_var[j] = 1.0f;
            }
            if (!l->w || !l->b || !l->run_mean || !l->run_var) return DCZ_ERR_NOMEM;
            for (size_t j = 0; j < c; j++) l->w[j] = 1.0f;
            if (l->eps == 0.0f) l->eps = DCZ_BN_EPS;
            if (l->bn_momentum == 0.0f) l->bn_momentum = DCZ_BN_MOMENTUM;
        }
    }
    return pack_params(net);
}

/* ---- buffers ----------------------------------------------------------------- */

static int act_dim(const dcz_net *net, int t)
{
    return (int)net->twidth[t];
}

size_t dcz_tlayer_cache_bytes(const dcz_tlayer *l, int batch)
{
    const dcz_train_op *t = dcz_train_op_get(l->op);
    return t && t->cache_bytes ? t->cache_bytes(l, batch) : 0;
}

/* Sizes the caches of the layers for cap_batch samples, for training. */
static dcz_status reserve_caches(dcz_net *net)
{
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        size_t bytes = dcz_tlayer_cache_bytes(l, net->cap_batch);
        if (bytes <= l->cache_bytes) continue;
        free(l->cache);
        l->cache = malloc(bytes);
        l->cache_bytes = l->cache ? bytes : 0;
        if (!l->cache) return DCZ_ERR_NOMEM;
    }
    return DCZ_OK;
}

/* A BATCHNORM whose output a RELU or a CLIP alone reads (one before the
 * last layer) applies the activation itself and the activation's output
 * aliases its own (bnorm.c): sets act_after and act_fused, clears them
 * elsewhere. */
static void fuse_bn_act(dcz_net *net)
{
    for (int i = 0; i < net->nlayers; i++) {
        net->layers[i].act_after = 0;
        net->layers[i].act_fused = 0;
    }
    for (int i = 1; i < net->nlayers - 1; i++) {
        dcz_tlayer *r = &net->layers[i];
        const uint32_t t = r->tin[0];   /* the tensor it reads: layer t - 1's output */
        if ((r->op != DCZ_OP_RELU && r->op != DCZ_OP_CLIP) || r->nin != 1 || t == 0 ||
            net->layers[t - 1].op != DCZ_OP_BATCHNORM)
            continue;
        int readers = 0;
        for (int j = 0; j < net->nlayers; j++)
            for (uint32_t k = 0; k < net->layers[j].nin; k++) readers += net->layers[j].tin[k] == t;
        if (readers != 1) continue;
        dcz_tlayer *bn = &net->layers[t - 1];
        bn->act_after = (uint16_t)r->op;
        bn->act_lo = r->op == DCZ_OP_CLIP ? r->param[0] : 0.0f;
        bn->act_hi = r->op == DCZ_OP_CLIP ? r->param[1] : 0.0f;
        r->act_fused = 1;
    }
}

dcz_status dcz_net_reserve(dcz_net *net, int batch, int train)
{
    if (!net->act || batch > net->cap_batch) {
        free_acts(net);
        net->act = calloc((size_t)net->nlayers + 1, sizeof *net->act);
        net->dact = calloc((size_t)net->nlayers + 1, sizeof *net->dact);
        if (!net->act || !net->dact) goto nomem;
        fuse_bn_act(net);
        for (int i = 0; i <= net->nlayers; i++) {
            size_t dim = (size_t)act_dim(net, i);
            if ((size_t)batch > SIZE_MAX / sizeof(float) / dim) goto nomem;
            if (i > 0 && net->layers[i - 1].act_fused) {   /* the batch norm's output, activation applied */
                net->act[i] = net->act[net->layers[i - 1].tin[0]];
                continue;
            }
            net->act[i] = malloc((size_t)batch * dim * sizeof(float));    /* (batch, dim) */
            if (!net->act[i]) goto nomem;
        }
        size_t work = 0;
        for (int i = 0; i < net->nlayers; i++)
            if (net->layers[i].op == DCZ_OP_CONV2D) {
                size_t wf = dcz_conv_work_floats(&net->layers[i]);
                if (wf > work) work = wf;
            }
        if (work) {
            /* on a cache line, zeroed (finite: products read past rows) */
            if (work > (SIZE_MAX - 63) / sizeof(float)) goto nomem;
            const size_t bytes = (work * sizeof(float) + 63) & ~(size_t)63;
            net->work = aligned_alloc(64, bytes);
            if (!net->work) goto nomem;
            memset(net->work, 0, bytes);
            net->work_floats = work;
        }
        net->cap_batch = batch;
    }
    if (!train) return DCZ_OK;
    for (int i = 0; i <= net->nlayers; i++) {
        if (net->dact[i]) continue;
        size_t dim = (size_t)act_dim(net, i);
        net->dact[i] = malloc((size_t)net->cap_batch * dim * sizeof(float));   /* (cap, dim) */
        if (!net->dact[i]) goto nomem;
    }
    /* room for the gradients a layer adds to a tensor that another read
     * already has (sgd.c): its inputs read more than once */
    uint32_t *readers = calloc((size_t)(unsigned)net->nlayers + 1, sizeof *readers);
    if (!readers) goto nomem;
    for (int i = 0; i < net->nlayers; i++)
        for (uint32_t k = 0; k < net->layers[i].nin; k++) readers[net->layers[i].tin[k]]++;
    size_t gsum = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        size_t per = 0;
        for (uint32_t k = 0; k < l->nin; k++)
            if (readers[l->tin[k]] > 1) per += net->twidth[l->tin[k]];
        if (per > gsum) gsum = per;
    }
    free(readers);
    gsum *= (size_t)net->cap_batch;
    if (gsum > net->gsum_floats) {
        free(net->gsum);
        net->gsum = malloc(gsum * sizeof(float));   /* (cap, widths of a layer's inputs) */
        if (!net->gsum) goto nomem;
        net->gsum_floats = gsum;
    }
    if (reserve_caches(net) == DCZ_OK) return DCZ_OK;
nomem:
    free_acts(net);
    return DCZ_ERR_NOMEM;
}

int dcz_net_chunk(const dcz_net *net, int max)
{
    size_t per = 0;
    for (int i = 0; i <= net->nlayers; i++) per += 2 * (size_t)act_dim(net, i);
    size_t c = ACT_BUDGET / (per ? per : 1);
    if (c < 1) c = 1;
    return c < (size_t)max ? (int)c : max;
}

/* ---- forward ------------------------------------------------------------------ */

void dcz_net_run_layers(dcz_net *net, int batch, unsigned flags)
{
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        const float *xs[DCZ_MAX_INPUTS];   /* (batch, width of each input) */
        for (uint32_t k = 0; k < l->nin; k++) xs[k] = net->act[l->tin[k]];
        dcz_train_forward(net, l, xs, net->act[i + 1], batch, flags);
    }
}

dcz_status dcz_net_forward(dcz_net *net, const float *x, int batch, float *out)
{
    if (!net || !net->layers || net->in_dim <= 0 || batch < 0) return DCZ_ERR_ARG;
    if (batch == 0) return DCZ_OK;
    if (!x || !out) return DCZ_ERR_ARG;
    int max = dcz_net_chunk(net, FORWARD_CHUNK);
    int chunk = batch < max ? batch : max;
    if (net->cap_batch > chunk && batch > chunk)
        chunk = net->cap_batch < batch ? net->cap_batch : batch;
    dcz_status st = dcz_net_reserve(net, chunk, 0);
    if (st != DCZ_OK) return st;
    size_t in = (size_t)net->in_dim, classes = (size_t)net->classes;
    for (int start = 0; start < batch; start += chunk) {
        int bs = batch - start < chunk ? batch - start : chunk;
        memcpy(net->act[0], x + (size_t)start * in, (size_t)bs * in * sizeof(float));
        dcz_net_run_layers(net, bs, DCZ_RUN_PROBS);
        memcpy(out + (size_t)start * classes, net->act[net->nlayers],
               (size_t)bs * classes * sizeof(float));
    }
    return DCZ_OK;
}

/* ---- constraints and folding -------------------------------------------------------- */

void dcz_net_apply_constraints(dcz_net *net)
{
    if (!net || !net->layers) return;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (!dcz_tlayer_has_weights(l) || !l->w) continue;
        size_t nw = dcz_tlayer_nweights(l);
        if (l->codebook && l->assign && l->k > 0) {
            /* an out-of-range assignment (dcz_net_validate reports it) gives
             * 0 here rather than a read outside the codebook */
            for (size_t j = 0; j < nw; j++) {
                int kept = !l->mask || l->mask[j];
                l->w[j] = kept && l->assign[j] < l->k ? l->codebook[l->assign[j]] : 0.0f;
            }
        } else if (l->mask) {
            for (size_t j = 0; j < nw; j++)
                if (!l->mask[j]) l->w[j] = 0.0f;
        }
    }
}


/* ---- the model: opening a net over its document, storing into it ----------- */

static void *dup_mem(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

static float *dup_values(const dcz_doc_tensor *t, size_t n)
{
    return t->n == n && t->values ? dup_mem(t->values, n * sizeof(float)) : NULL;
}

/* The parameters of doc layer l into t (shapes already inferred): weight
 * and bias with the mask and codebook that describe their compression;
 * BATCHNORM's gamma, beta and running statistics. */
static dcz_status params_from_doc(const dcz_doc_layer *l, dcz_tlayer *t)
{
    if (t->op == DCZ_OP_BATCHNORM) {
        const size_t c = dcz_tlayer_nbias(t);
        if (l->ntensors != 4) return DCZ_ERR_SHAPE;
        t->w = dup_values(&l->t[0], c);
        t->b = dup_values(&l->t[1], c);
        t->run_mean = dup_values(&l->t[2], c);
        t->run_var = dup_values(&l->t[3], c);
        return t->w && t->b && t->run_mean && t->run_var ? DCZ_OK : DCZ_ERR_SHAPE;
    }
    if (!dcz_tlayer_has_weights(t)) return DCZ_OK;
    const dcz_doc_tensor *w = &l->t[0], *b = &l->t[1];
    if (l->ntensors != 2 || w->n != dcz_tlayer_nweights(t) || b->n != dcz_tlayer_nbias(t))
        return DCZ_ERR_SHAPE;
    t->w = dup_values(w, w->n);
    t->b = dup_values(b, b->n);
    if (!t->w || !t->b) return DCZ_ERR_NOMEM;
    if (w->mask && !(t->mask = dup_mem(w->mask, w->n))) return DCZ_ERR_NOMEM;
    if (w->enc == DCZ_ENC_CODEBOOK) {
        t->k = (int)w->k;
        t->codebook = dup_mem(w->codebook, w->k * sizeof(float));
        t->assign = dup_mem(w->assign, w->n);
        if (!t->codebook || !t->assign) return DCZ_ERR_NOMEM;
    }
    return DCZ_OK;
}

/* Fills the empty net (no layers) as the view of d: layer i of the net is
 * layer i of d, its settings read from d's attributes by the trainer's
 * entry of its op, its parameters copied into the net's flat buffer. */
static dcz_status attach(dcz_net *net, dcz_doc *d)
{
    if (d->nlayers < 1 || d->nlayers > NET_MAX_LAYERS || d->input_rank == 0 ||
        d->input_rank > 4)
        return DCZ_ERR_FORMAT;
    if (!(net->layers = calloc(d->nlayers, sizeof *net->layers))) return DCZ_ERR_NOMEM;
    net->nlayers = (int)d->nlayers;
    net->doc = d;
    net->in_rank = d->input_rank;
    memcpy(net->in_dims, d->input_dims, d->input_rank * sizeof *d->input_dims);
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        dcz_tlayer *t = &net->layers[i];
        const dcz_train_op *o = dcz_train_op_get((dcz_op)l->op);
        const dcz_op_info *info = dcz_op_get(l->op);
        if (!o || !info || l->nattr != info->nattr) return DCZ_ERR_UNSUPPORTED;
        snprintf(t->name, sizeof t->name, "%s", l->name);
        t->op = (dcz_op)l->op;
        t->nin = l->nin;
        memcpy(t->tin, l->in, sizeof t->tin);
        o->settings(t, l->attr);
    }
    dcz_status s = dcz_net_infer_shapes(net);
    for (uint32_t i = 0; i < d->nlayers && s == DCZ_OK; i++)
        s = params_from_doc(&d->layers[i], &net->layers[i]);
    return s == DCZ_OK ? dcz_net_validate(net) : s;
}

dcz_status dcz_net_open(dcz_doc *d, dcz_net **out)
{
    if (!d || !out) return DCZ_ERR_ARG;
    *out = NULL;
    dcz_net *net = calloc(1, sizeof *net);
    if (!net) return DCZ_ERR_NOMEM;
    dcz_rng_seed(&net->rng, 0);
    dcz_status s = attach(net, d);
    if (s != DCZ_OK) {
        dcz_net_free(net);
        return s;
    }
    *out = net;
    return DCZ_OK;
}

static dcz_status fill_tensor(dcz_doc_tensor *t, uint32_t enc, uint32_t rank, const uint32_t *dims,
                              const float *values)
{
    dcz_doc_tensor_clear(t);
    t->enc = enc;
    t->rank = rank;
    t->n = 1;
    for (uint32_t i = 0; i < rank; i++) {
        t->dims[i] = dims[i];
        t->n *= dims[i];
    }
    t->values = dup_mem(values, t->n * sizeof(float));
    return t->values ? DCZ_OK : DCZ_ERR_NOMEM;
}

/* The weight and bias of a DENSE or CONV layer, of the shapes its op's
 * attributes give, encoded as its compression state and e ask (e NULL: raw
 * streams, an f32 bias, the weight packed by dcz_doc_tensor_pack: unused
 * codebook entries dropped, positions as wide as stores them smallest, no
 * positions for a codebook layer that keeps every weight). */
static dcz_status weights_to_doc(const dcz_tlayer *t, const dcz_layer_encoding *e, dcz_doc_layer *l)
{
    dcz_shape ws, bs;
    if (dcz_op_param_shapes(l->op, l->attr, &ws, &bs) != DCZ_OK) return DCZ_ERR_ARG;
    l->ntensors = 2;
    dcz_doc_tensor *w = &l->t[0];
    uint32_t enc = t->codebook ? DCZ_ENC_CODEBOOK : t->mask ? DCZ_ENC_SPARSE_F32 : DCZ_ENC_F32;
    dcz_status s = fill_tensor(w, enc, ws.rank, ws.dims, t->w);
    if (s == DCZ_OK)
        s = fill_tensor(&l->t[1], e && e->bias_f16 ? DCZ_ENC_F16 : DCZ_ENC_F32, bs.rank, bs.dims, t->b);
    if (s != DCZ_OK || enc == DCZ_ENC_F32) return s;
    const uint8_t coding = e && e->huffman ? DCZ_CODING_HUFFMAN : DCZ_CODING_RAW;
    w->gap_coding = coding;
    if (t->mask && !(w->mask = dup_mem(t->mask, w->n))) return DCZ_ERR_NOMEM;
    if (enc == DCZ_ENC_CODEBOOK) {
        w->k = (uint32_t)t->k;
        w->index_bits = (uint8_t)(e && e->index_bits ? e->index_bits : dcz_doc_index_bits((uint32_t)t->k));
        w->index_coding = coding;
        w->codebook = dup_mem(t->codebook, (size_t)t->k * sizeof(float));
        w->assign = dup_mem(t->assign, w->n);
        if (!w->codebook || !w->assign) return DCZ_ERR_NOMEM;
    }
    if (!e) {   /* packed as encode packs by default */
        w->gap_bits = t->mask ? 8 : 0;
        return dcz_doc_tensor_pack(w, 0);
    }
    if (t->mask) w->gap_bits = e->gap_bits;   /* in range: store_fits checked it */
    return DCZ_OK;
}

/* BATCHNORM's gamma, beta, running mean and variance as four f32 tensors. */
static dcz_status bn_to_doc(const dcz_tlayer *t, dcz_doc_layer *l)
{
    const uint32_t c = (uint32_t)dcz_tlayer_nbias(t);
    const float *v[4] = { t->w, t->b, t->run_mean, t->run_var };
    l->ntensors = 4;
    for (int j = 0; j < 4; j++) {
        if (!v[j]) return DCZ_ERR_ARG;
        if (fill_tensor(&l->t[j], DCZ_ENC_F32, 1, &c, v[j]) != DCZ_OK) return DCZ_ERR_NOMEM;
    }
    return DCZ_OK;
}

/* Whether the net's layers still are its document's (the same op, weights
 * of the shapes the document's attributes give) and enc fits them, checked
 * before a store changes anything. */
static dcz_status store_fits(const dcz_net *net, const dcz_layer_encoding *enc)
{
    const dcz_doc *d = net->doc;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *t = &net->layers[i];
        const dcz_doc_layer *l = &d->layers[i];
        if (l->op != (uint16_t)t->op) return DCZ_ERR_ARG;
        if (!dcz_tlayer_has_weights(t)) continue;
        dcz_shape ws, bs;
        if (dcz_op_param_shapes(l->op, l->attr, &ws, &bs) != DCZ_OK ||
            dcz_shape_count(&ws) != dcz_tlayer_nweights(t) || dcz_shape_count(&bs) != dcz_tlayer_nbias(t) ||
            !t->w || !t->b)
            return DCZ_ERR_ARG;
        if (enc && t->mask && (enc[i].gap_bits < 1 || enc[i].gap_bits > 8)) return DCZ_ERR_ARG;
        if (enc && t->codebook && enc[i].index_bits && (enc[i].index_bits > 8 || (1 << enc[i].index_bits) < t->k))
            return DCZ_ERR_ARG;
    }
    return DCZ_OK;
}

dcz_status dcz_net_store(dcz_net *net, const dcz_layer_encoding *enc)
{
    if (!net || !net->doc || !net->tshape || net->doc->nlayers != (uint32_t)net->nlayers) return DCZ_ERR_ARG;
    dcz_doc *d = net->doc;
    dcz_status fit = store_fits(net, enc);
    if (fit != DCZ_OK) return fit;
    dcz_doc_calib_free(d->calib);   /* made for other weights */
    d->calib = NULL;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *t = &net->layers[i];
        dcz_doc_layer *l = &d->layers[i];
        dcz_status s = DCZ_OK;
        if (t->op == DCZ_OP_BATCHNORM) s = bn_to_doc(t, l);
        else if (dcz_tlayer_has_weights(t)) s = weights_to_doc(t, enc ? &enc[i] : NULL, l);
        if (s != DCZ_OK) return s;   /* out of memory: the layers before hold the new state */
    }
    return DCZ_OK;
}

dcz_status dcz_net_fold_for_inference(dcz_net *net)
{
    if (!net || !net->layers || net->nlayers < 1) return DCZ_ERR_ARG;
    dcz_status s = dcz_net_store(net, NULL);
    if (s == DCZ_OK) s = dcz_doc_fold(net->doc);
    if (s != DCZ_OK) return s;
    /* the view of the folded document, built beside the net and swapped in */
    dcz_net *fresh = calloc(1, sizeof *fresh);
    if (!fresh) return DCZ_ERR_NOMEM;
    if ((s = attach(fresh, net->doc)) != DCZ_OK) {
        dcz_net_free(fresh);   /* it does not own the document */
        return s;
    }
    fresh->own_doc = net->own_doc;
    fresh->rng = net->rng;
    release(net);
    *net = *fresh;
    free(fresh);
    return DCZ_OK;
}
