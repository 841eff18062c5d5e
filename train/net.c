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
        for (int i = 0; i <= net->nlayers; i++) free(net->act[i]);
    if (net->dact)
        for (int i = 0; i <= net->nlayers; i++) free(net->dact[i]);
    free(net->act);
    free(net->dact);
    net->act = NULL;
    net->dact = NULL;
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

void dcz_net_reset_state(dcz_net *net)
{
    if (!net || !net->layers) return;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        free(l->gw); free(l->gb);
        free(l->vw); free(l->vb);
        free(l->gcb); free(l->vcb);
        l->gw = l->gb = l->vw = l->vb = l->gcb = l->vcb = NULL;
    }
}

/* Frees the parameters and statistics of one layer (not its training state). */
static void free_params(dcz_tlayer *l)
{
    free(l->w); free(l->b); free(l->mask);
    free(l->codebook); free(l->assign);
    free(l->run_mean); free(l->run_var);
    l->w = l->b = l->codebook = l->run_mean = l->run_var = NULL;
    l->mask = l->assign = NULL;
}

void dcz_net_free(dcz_net *net)
{
    if (!net) return;
    dcz_net_reset_state(net);
    if (net->layers) {
        free_acts(net);
        for (int i = 0; i < net->nlayers; i++) free_params(&net->layers[i]);
    }
    free(net->layers);
    free(net);
}

/* ---- shapes ----------------------------------------------------------------- */

static int is_spatial(dcz_op k)
{
    return k == DCZ_OP_CONV2D || k == DCZ_OP_MAXPOOL || k == DCZ_OP_AVGPOOL || k == DCZ_OP_GLOBAL_AVGPOOL;
}

/* Kinds whose geometry fields are used (and checked). */
static int has_geometry(dcz_op k)
{
    return is_spatial(k) || k == DCZ_OP_FLATTEN || k == DCZ_OP_BATCHNORM;
}

static int64_t chw_count(dcz_chw s)
{
    return s.c * s.h * s.w;
}

/* One output dimension of a window: floor((n + 2 pad - k) / stride) + 1, or
 * -1 when the window does not fit. */
static int64_t window_out(int64_t n, int k, int stride, int pad)
{
    if (k < 1 || stride < 1 || pad < 0 || pad >= k) return -1;
    int64_t span = n + 2 * (int64_t)pad - k;
    return span < 0 ? -1 : span / stride + 1;
}

dcz_status dcz_tlayer_out_shape(const dcz_tlayer *l, dcz_chw in, dcz_chw *out)
{
    switch (l->op) {
    case DCZ_OP_DENSE:
        if (l->out <= 0) return DCZ_ERR_SHAPE;
        *out = (dcz_chw){ l->out, 1, 1 };
        return DCZ_OK;
    case DCZ_OP_RELU:
    case DCZ_OP_SOFTMAX:
    case DCZ_OP_DROPOUT:
    case DCZ_OP_BATCHNORM:
        *out = in;
        return DCZ_OK;
    case DCZ_OP_FLATTEN:
        *out = (dcz_chw){ chw_count(in), 1, 1 };
        return DCZ_OK;
    case DCZ_OP_GLOBAL_AVGPOOL:
        *out = (dcz_chw){ in.c, 1, 1 };
        return DCZ_OK;
    case DCZ_OP_CONV2D:
    case DCZ_OP_MAXPOOL:
    case DCZ_OP_AVGPOOL: {
        int64_t oh = window_out(in.h, l->kh, l->sh, l->ph);
        int64_t ow = window_out(in.w, l->kw, l->sw, l->pw);
        if (oh < 1 || ow < 1) return DCZ_ERR_SHAPE;
        int64_t oc = l->op == DCZ_OP_CONV2D ? l->out_c : in.c;
        if (oc < 1) return DCZ_ERR_SHAPE;
        *out = (dcz_chw){ oc, oh, ow };
        return DCZ_OK;
    }
    default:              /* ops the trainer does not run yet */
        break;
    }
    return DCZ_ERR_ARG;
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

dcz_status dcz_net_infer_shapes(dcz_net *net)
{
    if (!net || !net->layers || net->nlayers < 1) return DCZ_ERR_ARG;
    dcz_chw cur;
    dcz_status st = rank_shape(net, &cur);
    if (st != DCZ_OK) return st;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        dcz_chw next;
        st = dcz_tlayer_out_shape(l, cur, &next);
        if (st != DCZ_OK) return st;
        if (chw_count(next) > INT_MAX) return DCZ_ERR_SHAPE;
        l->in = (int)chw_count(cur);
        l->out = (int)chw_count(next);
        if (has_geometry(l->op)) {
            l->in_c = (int)cur.c; l->in_h = (int)cur.h; l->in_w = (int)cur.w;
            l->out_c = (int)next.c; l->out_h = (int)next.h; l->out_w = (int)next.w;
        }
        cur = next;
    }
    return DCZ_OK;
}

/* Codebook consistency of a layer with weights (see dcz_net_validate). */
static dcz_status check_codebook(const dcz_tlayer *l)
{
    int shared = l->codebook || l->assign || l->k;
    if (!shared) return DCZ_OK;
    if (!l->codebook || !l->assign || l->k < 1 || l->k > 256) return DCZ_ERR_ARG;
    size_t nw = dcz_tlayer_nweights(l);
    for (size_t j = 0; j < nw; j++)
        if ((!l->mask || l->mask[j]) && l->assign[j] >= l->k) return DCZ_ERR_ARG;
    return DCZ_OK;
}

/* Buffers and settings of one layer, apart from its shapes. */
static dcz_status check_layer(const dcz_net *net, int i)
{
    const dcz_tlayer *l = &net->layers[i];
    if (!dcz_tlayer_has_weights(l) && (l->mask || l->codebook || l->assign || l->k))
        return DCZ_ERR_ARG;
    switch (l->op) {
    case DCZ_OP_DENSE:
    case DCZ_OP_CONV2D:
        if (!l->w || !l->b) return DCZ_ERR_ARG;
        return check_codebook(l);
    case DCZ_OP_SOFTMAX:
        /* the loss is fused with it */
        return i == net->nlayers - 1 ? DCZ_OK : DCZ_ERR_ARG;
    case DCZ_OP_BATCHNORM:
        if (!l->w || !l->b || !l->run_mean || !l->run_var) return DCZ_ERR_ARG;
        if (!(l->eps > 0.0f) || !isfinite(l->eps)) return DCZ_ERR_ARG;
        if (!(l->bn_momentum >= 0.0f && l->bn_momentum <= 1.0f)) return DCZ_ERR_ARG;
        return DCZ_OK;
    case DCZ_OP_DROPOUT:
        return l->rate >= 0.0f && l->rate < 1.0f ? DCZ_OK : DCZ_ERR_ARG;
    case DCZ_OP_RELU:
    case DCZ_OP_MAXPOOL:
    case DCZ_OP_AVGPOOL:
    case DCZ_OP_GLOBAL_AVGPOOL:
    case DCZ_OP_FLATTEN:
        return DCZ_OK;
    default:              /* ops the trainer does not run yet */
        break;
    }
    return DCZ_ERR_ARG;
}

dcz_status dcz_net_validate(dcz_net *net)
{
    if (!net || !net->layers || net->nlayers < 1) return DCZ_ERR_ARG;
    const dcz_tlayer *first = &net->layers[0];
    dcz_chw cur;
    if (net->in_rank != 0) {
        dcz_status st = rank_shape(net, &cur);
        if (st != DCZ_OK) return st;
    } else if (has_geometry(first->op)) {
        cur = (dcz_chw){ first->in_c, first->in_h, first->in_w };
    } else {
        cur = (dcz_chw){ first->in, 1, 1 };
    }
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (l->in <= 0 || l->out <= 0) return DCZ_ERR_SHAPE;
        if (chw_count(cur) != l->in) return DCZ_ERR_SHAPE;
        dcz_status st = check_layer(net, i);
        if (st != DCZ_OK) return st;
        if (has_geometry(l->op) && (l->in_c != cur.c || l->in_h != cur.h || l->in_w != cur.w))
            return DCZ_ERR_SHAPE;
        dcz_chw next;
        st = dcz_tlayer_out_shape(l, cur, &next);
        if (st != DCZ_OK) return st;
        if (has_geometry(l->op) &&
            (l->out_c != next.c || l->out_h != next.h || l->out_w != next.w))
            return DCZ_ERR_SHAPE;
        if (chw_count(next) != l->out) return DCZ_ERR_SHAPE;
        cur = next;
    }
    /* shapes may have changed since the buffers were sized: regrow on demand */
    free_acts(net);
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
    net->in_dim = first->in;
    net->classes = net->layers[net->nlayers - 1].out;
    return DCZ_OK;
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
            /* He et al. 2015: N(0, 2 / fan_in) for layers followed by ReLU */
            float sd = (float)sqrt(2.0 / (double)cols);
            for (size_t j = 0; j < nw; j++) l->w[j] = sd * dcz_rng_normal(rng);
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
            if (l->eps == 0.0f) l->eps = 1e-5f;
            if (l->bn_momentum == 0.0f) l->bn_momentum = 0.1f;
        }
    }
    return DCZ_OK;
}

/* ---- buffers ----------------------------------------------------------------- */

static int act_dim(const dcz_net *net, int i)
{
    return i < net->nlayers ? net->layers[i].in : net->layers[net->nlayers - 1].out;
}

size_t dcz_tlayer_cache_bytes(const dcz_tlayer *l, int batch)
{
    switch (l->op) {
    case DCZ_OP_MAXPOOL: return (size_t)batch * (size_t)l->out * sizeof(int32_t);
    case DCZ_OP_BATCHNORM: return 2 * (size_t)l->in_c * sizeof(float);
    case DCZ_OP_DROPOUT: return (size_t)batch * (size_t)l->in;
    case DCZ_OP_CONV2D: return dcz_conv_cache_floats(l, batch) * sizeof(float);
    default: return 0;
    }
}

/* Sizes the caches of the layers for cap_batch samples, for training. */
static dcz_status reserve_caches(dcz_net *net)
{
    size_t kept = 0;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        size_t bytes = dcz_tlayer_cache_bytes(l, net->cap_batch);
        if (l->op == DCZ_OP_CONV2D) {
            kept += bytes / sizeof(float);
            if (kept > DCZ_CONV_KEEP_TOTAL) bytes = 0;   /* rebuilds its columns */
        }
        if (bytes <= l->cache_bytes) continue;
        free(l->cache);
        l->cache = malloc(bytes);
        l->cache_bytes = l->cache ? bytes : 0;
        if (!l->cache) return DCZ_ERR_NOMEM;
    }
    return DCZ_OK;
}

dcz_status dcz_net_reserve(dcz_net *net, int batch, int train)
{
    if (!net->act || batch > net->cap_batch) {
        free_acts(net);
        net->act = calloc((size_t)net->nlayers + 1, sizeof *net->act);
        net->dact = calloc((size_t)net->nlayers + 1, sizeof *net->dact);
        if (!net->act || !net->dact) goto nomem;
        for (int i = 0; i <= net->nlayers; i++) {
            size_t dim = (size_t)act_dim(net, i);
            if ((size_t)batch > SIZE_MAX / sizeof(float) / dim) goto nomem;
            net->act[i] = malloc((size_t)batch * dim * sizeof(float));    /* (batch, dim) */
            if (!net->act[i]) goto nomem;
        }
        size_t work = 0;
        for (int i = 0; i < net->nlayers; i++)
            if (net->layers[i].op == DCZ_OP_CONV2D) {
                size_t wf = dcz_conv_work_floats(&net->layers[i], batch);
                if (wf > work) work = wf;
            }
        if (work) {
            net->work = malloc(work * sizeof(float));
            if (!net->work) goto nomem;
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

/* y = x W^T + b for a (batch, in) x and (out, in) W. */
static void dense_forward(const dcz_tlayer *l, const float *x, float *y, int batch)
{
    for (int r = 0; r < batch; r++)
        memcpy(y + (size_t)r * l->out, l->b, (size_t)l->out * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, l->out, l->in,
                1.0f, x, l->in, l->w, l->in, 1.0f, y, l->out);
}

/* Row-wise softmax, shifted by the row maximum so exp never overflows. */
static void softmax_rows(const float *x, float *y, int batch, int n)
{
    for (int r = 0; r < batch; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n;
        float m = xr[0];
        for (int j = 1; j < n; j++) if (xr[j] > m) m = xr[j];
        double s = 0;
        for (int j = 0; j < n; j++) {
            yr[j] = expf(xr[j] - m);
            s += yr[j];
        }
        float inv = (float)(1.0 / s);
        for (int j = 0; j < n; j++) yr[j] *= inv;
    }
}

/* Inverted dropout: in training each unit is kept with probability 1 - rate
 * (mask in l->cache) and scaled by 1 / (1 - rate); the identity otherwise. */
static void dropout_forward(dcz_net *net, dcz_tlayer *l, const float *x, float *y,
                            int batch, int train)
{
    size_t n = (size_t)batch * (size_t)l->in;
    if (!train || l->rate <= 0.0f) {
        memcpy(y, x, n * sizeof(float));
        return;
    }
    uint8_t *m = l->cache;   /* (batch, in) 1 kept */
    float scale = 1.0f / (1.0f - l->rate);
    for (size_t j = 0; j < n; j++) {
        m[j] = dcz_rng_uniform(&net->rng) >= l->rate;
        y[j] = m[j] ? x[j] * scale : 0.0f;
    }
}

void dcz_net_run_layers(dcz_net *net, int batch, unsigned flags)
{
    int train = (flags & DCZ_RUN_TRAIN) != 0;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        const float *x = net->act[i];   /* (batch, in) */
        float *y = net->act[i + 1];     /* (batch, out) */
        size_t n = (size_t)batch * (size_t)l->out;
        switch (l->op) {
        case DCZ_OP_DENSE:
            dense_forward(l, x, y, batch);
            break;
        case DCZ_OP_RELU:
            dcz_vrelu(y, x, n);
            break;
        case DCZ_OP_SOFTMAX:
            if (flags & DCZ_RUN_PROBS) softmax_rows(x, y, batch, l->out);
            else memcpy(y, x, n * sizeof(float));
            break;
        case DCZ_OP_CONV2D:
            dcz_conv_forward(l, x, y, batch, net->work, train);
            break;
        case DCZ_OP_MAXPOOL:
        case DCZ_OP_AVGPOOL:
        case DCZ_OP_GLOBAL_AVGPOOL:
            dcz_pool_forward(l, x, y, batch, train);
            break;
        case DCZ_OP_FLATTEN:
            memcpy(y, x, n * sizeof(float));
            break;
        case DCZ_OP_BATCHNORM:
            dcz_bn_forward(l, x, y, batch, train);
            break;
        case DCZ_OP_DROPOUT:
            dropout_forward(net, l, x, y, batch, train);
            break;
        default:              /* refused by dcz_net_validate */
            break;
        }
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

/* Checks that the BATCHNORM layer i can be folded into layer i - 1. */
static dcz_status foldable(const dcz_net *net, int i)
{
    const dcz_tlayer *bn = &net->layers[i];
    if (i == 0) return DCZ_ERR_UNSUPPORTED;
    const dcz_tlayer *p = &net->layers[i - 1];
    if (!dcz_tlayer_has_weights(p) || p->mask || p->codebook || p->assign) return DCZ_ERR_UNSUPPORTED;
    if (!p->w || !p->b || !bn->w || !bn->b || !bn->run_mean || !bn->run_var) return DCZ_ERR_ARG;
    if (dcz_tlayer_nbias(p) != (size_t)bn->in_c || (size_t)bn->in_c * dcz_tlayer_wcols(p) == 0)
        return DCZ_ERR_SHAPE;
    return DCZ_OK;
}

dcz_status dcz_net_fold_for_inference(dcz_net *net)
{
    if (!net || !net->layers || net->nlayers < 1) return DCZ_ERR_ARG;
    int kept = 0;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_op k = net->layers[i].op;
        if (k == DCZ_OP_BATCHNORM) {
            dcz_status st = foldable(net, i);
            if (st != DCZ_OK) return st;
        } else if (k != DCZ_OP_DROPOUT) {
            kept++;
        }
    }
    if (kept == 0) return DCZ_ERR_UNSUPPORTED;
    dcz_net_reset_state(net);
    free_acts(net);
    int n = 0;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (l->op == DCZ_OP_BATCHNORM) {
            /* w' = w g, b' = (b - mean) g + beta, g = gamma / sqrt(var + eps) */
            dcz_tlayer *p = &net->layers[i - 1];
            size_t cols = dcz_tlayer_wcols(p);
            for (int c = 0; c < l->in_c; c++) {
                double g = (double)l->w[c] / sqrt((double)l->run_var[c] + (double)l->eps);
                float *row = p->w + (size_t)c * cols;
                for (size_t j = 0; j < cols; j++) row[j] = (float)(row[j] * g);
                p->b[c] = (float)(((double)p->b[c] - l->run_mean[c]) * g + l->b[c]);
            }
        }
    }
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (l->op == DCZ_OP_BATCHNORM || l->op == DCZ_OP_DROPOUT) {
            free_params(l);
            continue;
        }
        if (n != i) net->layers[n] = *l;
        n++;
    }
    for (int i = n; i < net->nlayers; i++) memset(&net->layers[i], 0, sizeof net->layers[i]);
    net->nlayers = n;
    return dcz_net_validate(net);
}
