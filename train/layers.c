/* layers.c: the trainer's side of the operator table: per op its forward
 * and backward pass over a batch, how its settings map to the op's
 * attributes (so shapes come from the runtime's rules and a net opens over
 * its document and describes a new one without a switch), its buffer
 * checks and its cache
 * (the runtime's table, runtime/format/ops.c, has the shapes, attribute checks and
 * inference kernels). Dense layers run through
 * OpenBLAS sgemm; convolutions (conv.c), pooling (pool.c) and batch norm
 * (bnorm.c) have files of their own; the graph ops and the activations are
 * here.
 *
 * Backward functions take the forward inputs xs and output y and the
 * gradient dy of the output, and write (never accumulate) the gradient of
 * each input k to dxs[k] when it is not NULL, and their parameters'
 * gradients to gw, gb. dcz_net_grad (sgd.c) sums the gradients of a tensor
 * several layers read.
 *
 *   ADD          y = a + b:              da = db = dy
 *   MUL          y = x f (f per channel or per element):
 *                                        dx = dy f, df = sum over the plane of dy x
 *   CONCAT       y = (x_0, x_1, ...):    dx_k = its part of dy
 *   CHANNEL_SHUFFLE, SLICE   y[c] = x[source of c] (whole channel planes):
 *                                        dx[source of c] = dy[c], 0 elsewhere
 *   CLIP         dx = dy where min < x < max
 *   LEAKY_RELU   dx = dy (x > 0), alpha dy (x <= 0)
 *   SIGMOID      dx = dy y (1 - y);  TANH: dx = dy (1 - y^2)
 *   HARD_SIGMOID dx = alpha dy where 0 < alpha x + beta < 1
 *   HARD_SWISH   dx = 0 (x <= -3), dy (x >= 3), dy (2 x + 3) / 6 between
 *   SILU         y = x s, s = sigmoid(x): dx = dy (s + x s (1 - s))
 *
 * Tested by tests/unit/test_train.c: finite-difference gradient checks in
 * double for every op, a residual and a squeeze-and-excitation network
 * against the runtime's forward pass.
 */
#include <math.h>
#include <string.h>

#include "runtime/cpu/f32/elem.h"
#include "train/internal.h"

/* y = x W^T + b for a (batch, in) x and (out, in) W. */
static void dense_forward(const dcz_tlayer *l, const float *x, float *y, int batch)
{
    for (int r = 0; r < batch; r++)
        memcpy(y + (size_t)r * l->out, l->b, (size_t)l->out * sizeof(float));
    dcz_train_sgemm(0, 1, batch, l->out, l->in, 1.0f, x, l->in, l->w, l->in, 1.0f, y, l->out);
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
static void dropout_fwd(dcz_net *net, dcz_tlayer *l, const float *x, float *y,
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

/* Masked gradients to 0; the centroid gradients of a codebook layer. */
static void constrain_grads(dcz_tlayer *l)
{
    size_t nw = dcz_tlayer_nweights(l);
    if (l->mask)
        for (size_t j = 0; j < nw; j++)
            if (!l->mask[j]) l->gw[j] = 0.0f;
    if (l->codebook) {
        double acc[256] = { 0 };
        for (size_t j = 0; j < nw; j++)
            if (!l->mask || l->mask[j]) acc[l->assign[j]] += l->gw[j];
        for (int c = 0; c < l->k; c++) l->gcb[c] = (float)acc[c];
    }
}

static void dense_backward(dcz_tlayer *l, const float *x, const float *dy, float *dx,
                           int batch)
{
    /* gW (out, in) = dy^T (out, batch) x (batch, in) */
    dcz_train_sgemm(1, 0, l->out, l->in, batch, 1.0f, dy, l->out, x, l->in, 0.0f, l->gw, l->in);
    for (int j = 0; j < l->out; j++) l->gb[j] = 0.0f;
    for (int r = 0; r < batch; r++) {
        const float *dr = dy + (size_t)r * l->out;
        for (int j = 0; j < l->out; j++) l->gb[j] += dr[j];
    }
    /* dx (batch, in) = dy (batch, out) W (out, in) */
    if (dx)
        dcz_train_sgemm(0, 0, batch, l->in, l->out, 1.0f, dy, l->out, l->w, l->in, 0.0f, dx, l->in);
}

/* dx = dy where the forward pass kept the unit, scaled alike. */
static void dropout_backward(const dcz_tlayer *l, const float *dy, float *dx, size_t n)
{
    if (l->rate <= 0.0f) {
        memcpy(dx, dy, n * sizeof(float));
        return;
    }
    const uint8_t *m = l->cache;   /* (batch, in) */
    float scale = 1.0f / (1.0f - l->rate);
    for (size_t j = 0; j < n; j++) {
        float g = dy[j] * scale;   /* computed first: a mask, not a branch */
        dx[j] = m[j] ? g : 0.0f;
    }
}

/* ---- sparse variational dropout (prune/variational.c) ---------------------
 * A DENSE or CONV layer with vd_s2 set draws its training output through the
 * local reparameterization trick: y = (the layer's own product) + sqrt(v +
 * 1e-8) eps, the variances v the same product of x * x with sigma^2 for
 * weights and no bias (its twin below). Its cache holds, batch major, eps
 * (batch, out), the deviations (batch, out), x * x (batch, in), the twin's
 * input gradient (batch, in), then its zero bias and bias gradient (nbias
 * each). */

static size_t cache_vd(const dcz_tlayer *l, int batch)
{
    if (!l->vd_s2) return 0;
    return ((size_t)batch * 2 * ((size_t)l->out + (size_t)l->in) + 2 * dcz_tlayer_nbias(l)) * sizeof(float);
}

/* The cache's parts for batch samples */
typedef struct vd_parts { float *eps, *sd, *x2, *dx2, *zero_b, *gb; } vd_parts;

static vd_parts vd_parts_of(const dcz_tlayer *l, int batch)
{
    const size_t no = (size_t)batch * (size_t)l->out, ni = (size_t)batch * (size_t)l->in;
    vd_parts p;
    p.eps = l->cache;
    p.sd = p.eps + no;
    p.x2 = p.sd + no;
    p.dx2 = p.x2 + ni;
    p.zero_b = p.dx2 + ni;
    p.gb = p.zero_b + dcz_tlayer_nbias(l);
    return p;
}

/* The twin: sigma^2 for weights, no bias; its weight gradient (d loss /
 * d sigma^2) goes to vd_gls */
static dcz_tlayer vd_twin(const dcz_tlayer *l, const vd_parts *p)
{
    dcz_tlayer t = *l;
    t.w = l->vd_s2;
    t.b = p->zero_b;
    t.gw = l->vd_gls;
    t.gb = p->gb;
    t.mask = NULL;
    t.codebook = NULL;
    t.vd_s2 = NULL;
    return t;
}

/* dcz_vd_noise's pairs [lo, hi) */
typedef struct noise_job { uint64_t key; float *eps; size_t n; } noise_job;

static void noise_part(void *ctx, size_t lo, size_t hi)
{
    const noise_job *j = ctx;
    for (size_t p = lo; p < hi; p++) {
        const uint64_t h = dcz_rng_mix64(j->key + (uint64_t)p * 0x9e3779b97f4a7c15ull);
        const float u1 = ((float)(h >> 40) + 1.0f) * (1.0f / 16777216.0f);   /* (0, 1] */
        const float u2 = (float)((h >> 16) & 0xffffff) * (1.0f / 16777216.0f);
        const float r = sqrtf(-2.0f * logf(u1)), a = 6.2831853f * u2;
        j->eps[2 * p] = r * cosf(a);
        if (2 * p + 1 < j->n) j->eps[2 * p + 1] = r * sinf(a);
    }
}

void dcz_vd_noise(uint64_t key, size_t n, float *eps)
{
    noise_job j = { key, eps, n };
    dcz_train_par((n + 1) / 2, 4096, noise_part, &j);
}

static void vd_forward(dcz_net *net, dcz_tlayer *l, const float *x, float *y, int batch)
{
    const size_t no = (size_t)batch * (size_t)l->out, ni = (size_t)batch * (size_t)l->in;
    const vd_parts p = vd_parts_of(l, batch);
    memset(p.zero_b, 0, dcz_tlayer_nbias(l) * sizeof(float));
    for (size_t j = 0; j < ni; j++) p.x2[j] = x[j] * x[j];
    const dcz_tlayer t = vd_twin(l, &p);
    if (l->op == DCZ_OP_CONV2D) dcz_conv_forward(&t, p.x2, p.sd, batch, net->work, net->work_floats);
    else dense_forward(&t, p.x2, p.sd, batch);
    dcz_vd_noise(dcz_rng_u64(l->vd_rng), no, p.eps);
    for (size_t j = 0; j < no; j++) {
        p.sd[j] = sqrtf(p.sd[j] + 1e-8f);
        y[j] += p.sd[j] * p.eps[j];
    }
}

/* After the layer's own backward pass: with ds = dy eps / (2 sd) (the
 * gradient of the variances), the twin's backward pass gives d loss /
 * d sigma^2, times sigma^2 for d loss / d log sigma^2, and the gradient of
 * x * x, 2 x times which joins dx. Uses the cache up (eps becomes ds). */
static void vd_backward(dcz_net *net, dcz_tlayer *l, const float *x, const float *dy, float *dx, int batch)
{
    const size_t no = (size_t)batch * (size_t)l->out, ni = (size_t)batch * (size_t)l->in;
    const vd_parts p = vd_parts_of(l, batch);
    for (size_t j = 0; j < no; j++) p.eps[j] = dy[j] * p.eps[j] / (2.0f * p.sd[j]);
    dcz_tlayer t = vd_twin(l, &p);
    float *dx2 = dx ? p.dx2 : NULL;
    if (l->op == DCZ_OP_CONV2D) dcz_conv_backward(&t, p.x2, p.eps, dx2, batch, net->work, net->work_floats);
    else dense_backward(&t, p.x2, p.eps, dx2, batch);
    for (size_t j = 0, nw = dcz_tlayer_nweights(l); j < nw; j++) l->vd_gls[j] *= l->vd_s2[j];
    if (dx)
        for (size_t j = 0; j < ni; j++) dx[j] += 2.0f * x[j] * dx2[j];
}

/* ---- the table's entries ---------------------------------------------------- */

static void fwd_dense(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                      unsigned flags)
{
    dense_forward(l, xs[0], y, batch);
    if (l->vd_s2 && flags & DCZ_RUN_TRAIN) vd_forward(net, l, xs[0], y, batch);
}

static void bwd_dense(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                      const float *dy, float *const *dxs, int batch)
{
    dense_backward(l, xs[0], dy, dxs[0], batch);
    if (l->vd_s2) vd_backward(net, l, xs[0], dy, dxs[0], batch);
    constrain_grads(l);
}

static void fwd_conv(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                     unsigned flags)
{
    dcz_conv_forward(l, xs[0], y, batch, net->work, net->work_floats);
    if (l->vd_s2 && flags & DCZ_RUN_TRAIN) vd_forward(net, l, xs[0], y, batch);
}

static void bwd_conv(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                     const float *dy, float *const *dxs, int batch)
{
    dcz_conv_backward(l, xs[0], dy, dxs[0], batch, net->work, net->work_floats);
    if (l->vd_s2) vd_backward(net, l, xs[0], dy, dxs[0], batch);
    constrain_grads(l);
}

static void fwd_relu(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                     unsigned flags)
{
    if (l->act_fused) return;   /* the batch norm before wrote it (bnorm.c) */
    dcz_vrelu(y, xs[0], (size_t)batch * (size_t)l->out);
}

static void bwd_relu(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                     const float *dy, float *const *dxs, int batch)
{
    if (dxs[0]) dcz_vrelu_grad(dxs[0], dy, y, (size_t)batch * (size_t)l->in);
}

/* SOFTMAX is the identity while training (the loss holds it); with
 * DCZ_RUN_PROBS it computes probabilities */
static void fwd_softmax(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                        unsigned flags)
{
    if (flags & DCZ_RUN_PROBS) softmax_rows(xs[0], y, batch, l->out);
    else memcpy(y, xs[0], (size_t)batch * (size_t)l->out * sizeof(float));
}

static void fwd_copy(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                     unsigned flags)
{
    memcpy(y, xs[0], (size_t)batch * (size_t)l->out * sizeof(float));
}

static void bwd_copy(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                     const float *dy, float *const *dxs, int batch)
{
    if (dxs[0]) memcpy(dxs[0], dy, (size_t)batch * (size_t)l->in * sizeof(float));
}

static void fwd_pool(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                     unsigned flags)
{
    dcz_pool_forward(l, xs[0], y, batch, (flags & DCZ_RUN_TRAIN) != 0);
}

static void bwd_pool(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                     const float *dy, float *const *dxs, int batch)
{
    if (dxs[0]) dcz_pool_backward(l, dy, dxs[0], batch);
}

static void fwd_bn(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                   unsigned flags)
{
    dcz_bn_forward(l, xs[0], y, batch, (flags & DCZ_RUN_TRAIN) != 0);
}

static void bwd_bn(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                   const float *dy, float *const *dxs, int batch)
{
    dcz_bn_backward(l, xs[0], dy, dxs[0], batch);
}

static void fwd_dropout(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                        unsigned flags)
{
    dropout_fwd(net, l, xs[0], y, batch, (flags & DCZ_RUN_TRAIN) != 0);
}

static void bwd_dropout(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                        const float *dy, float *const *dxs, int batch)
{
    if (dxs[0]) dropout_backward(l, dy, dxs[0], (size_t)batch * (size_t)l->in);
}

static void fwd_add(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                    unsigned flags)
{
    dcz_vec()->sum2(y, xs[0], xs[1], (size_t)batch * (size_t)l->out);
}

static void bwd_add(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                    const float *dy, float *const *dxs, int batch)
{
    for (int k = 0; k < 2; k++)
        if (dxs[k]) memcpy(dxs[k], dy, (size_t)batch * (size_t)l->out * sizeof(float));
}

/* MUL: the factors of a sample are (C) over planes of out / C values */
static void fwd_mul(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                    unsigned flags)
{
    const size_t C = net->twidth[l->tin[1]], plane = (size_t)l->out / C;
    for (size_t b = 0; b < (size_t)batch; b++)
        for (size_t c = 0; c < C; c++) {
            const float f = xs[1][b * C + c];
            const size_t at = (b * C + c) * plane;
            for (size_t p = 0; p < plane; p++) y[at + p] = xs[0][at + p] * f;
        }
}

static void bwd_mul(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                    const float *dy, float *const *dxs, int batch)
{
    const size_t C = net->twidth[l->tin[1]], plane = (size_t)l->out / C;
    for (size_t b = 0; b < (size_t)batch; b++)
        for (size_t c = 0; c < C; c++) {
            const float f = xs[1][b * C + c];
            const size_t at = (b * C + c) * plane;
            double df = 0;
            for (size_t p = 0; p < plane; p++) {
                if (dxs[0]) dxs[0][at + p] = dy[at + p] * f;
                df += (double)dy[at + p] * xs[0][at + p];
            }
            if (dxs[1]) dxs[1][b * C + c] = (float)df;
        }
}

static void fwd_concat(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                       unsigned flags)
{
    for (size_t b = 0; b < (size_t)batch; b++)
        for (uint32_t k = 0; k < l->nin; k++) {
            const size_t w = net->twidth[l->tin[k]];
            memcpy(y, xs[k] + b * w, w * sizeof(float));
            y += w;
        }
}

static void bwd_concat(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                       const float *dy, float *const *dxs, int batch)
{
    for (size_t b = 0; b < (size_t)batch; b++)
        for (uint32_t k = 0; k < l->nin; k++) {
            const size_t w = net->twidth[l->tin[k]];
            if (dxs[k]) memcpy(dxs[k] + b * w, dy, w * sizeof(float));
            dy += w;
        }
}

/* CHANNEL_SHUFFLE, SLICE: the runtime's reference moves the planes, and
 * the gradient goes back to where each plane came from */
static void gather_of(const dcz_tlayer *l, uint32_t *start, uint32_t *groups)
{
    *start = l->op == DCZ_OP_SLICE ? (uint32_t)l->start : 0;
    *groups = l->op == DCZ_OP_CHANNEL_SHUFFLE ? (uint32_t)l->group : 1;
}

static void fwd_gather(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                       unsigned flags)
{
    uint32_t start, groups;
    gather_of(l, &start, &groups);
    dcz_gather_channels_ref(xs[0], sizeof *y, (uint32_t)l->in_c, (uint32_t)l->out_c,
                            (uint32_t)(l->in_h * l->in_w), start, groups, (size_t)batch, y);
}

static void bwd_gather(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                       const float *dy, float *const *dxs, int batch)
{
    if (!dxs[0]) return;
    uint32_t start, groups;
    gather_of(l, &start, &groups);
    const size_t plane = (size_t)l->in_h * (size_t)l->in_w;
    if (l->out_c != l->in_c) memset(dxs[0], 0, (size_t)batch * (size_t)l->in * sizeof(float));
    for (size_t b = 0; b < (size_t)batch; b++)
        for (uint32_t c = 0; c < (uint32_t)l->out_c; c++) {
            const uint32_t from = dcz_gather_source(c, (uint32_t)l->out_c, start, groups);
            memcpy(dxs[0] + (b * (size_t)l->in_c + from) * plane, dy + (b * (size_t)l->out_c + c) * plane,
                   plane * sizeof(float));
        }
}

/* the activations: y from x elementwise, by the runtime's vectors (the
 * bits of its reference formulas) */
static void fwd_activation(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                           unsigned flags)
{
    if (l->act_fused) return;   /* a CLIP the batch norm before wrote (bnorm.c) */
    dcz_activation((uint16_t)l->op, l->param, xs[0], (size_t)batch * (size_t)l->out, y);
}

/* one loop per op, as dcz_activation_ref: the choice made once, the loops
 * free to vectorize */
static void bwd_activation(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                           const float *dy, float *const *dxs, int batch)
{
    float *dx = dxs[0];
    if (!dx) return;
    const float *x = xs[0], a = l->param[0], c = l->param[1];
    const size_t n = (size_t)batch * (size_t)l->in;
    switch (l->op) {
    case DCZ_OP_CLIP: dcz_vclip_grad(dx, dy, x, a, c, n); break;
    case DCZ_OP_LEAKY_RELU:
        for (size_t j = 0; j < n; j++) {
            const float g = dy[j], ag = a * g;
            dx[j] = x[j] > 0.0f ? g : ag;
        }
        break;
    case DCZ_OP_SIGMOID:
        for (size_t j = 0; j < n; j++) dx[j] = dy[j] * y[j] * (1.0f - y[j]);
        break;
    case DCZ_OP_TANH:
        for (size_t j = 0; j < n; j++) dx[j] = dy[j] * (1.0f - y[j] * y[j]);
        break;
    case DCZ_OP_HARD_SIGMOID:
        for (size_t j = 0; j < n; j++) {
            const float t = a * x[j] + c, ag = a * dy[j];
            dx[j] = t > 0.0f && t < 1.0f ? ag : 0.0f;
        }
        break;
    case DCZ_OP_SILU:
        /* s and 1 - s = sigmoid(-x) both through e^-|x|, as the forward
         * pass: no overflow, and no cancellation in 1 - s */
        for (size_t j = 0; j < n; j++) {
            const float v = x[j], e = expf(-fabsf(v)), p = 1.0f / (1.0f + e), q = e * p;
            const float s = v >= 0.0f ? p : q, t = v >= 0.0f ? q : p;
            dx[j] = dy[j] * (s + v * s * t);
        }
        break;
    default: /* HARD_SWISH */
        for (size_t j = 0; j < n; j++) {
            const float v = x[j], g = dy[j];
            dx[j] = v <= -3.0f ? 0.0f : v >= 3.0f ? g : g * (2.0f * v + 3.0f) / 6.0f;
        }
    }
}

/* ---- settings as attributes, buffers, caches ------------------------------ */

static int32_t attr_of(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX ? (int32_t)v : -1; }

static void put_window(const dcz_tlayer *l, int32_t *a)
{
    a[0] = l->kh; a[1] = l->kw;
    a[2] = l->sh; a[3] = l->sw;
    a[4] = l->ph; a[5] = l->pw;
}

static void set_window(dcz_tlayer *l, const int32_t *a)
{
    l->kh = a[0]; l->kw = a[1];
    l->sh = a[2]; l->sw = a[3];
    l->ph = a[4]; l->pw = a[5];
}

static void attrs_none(const dcz_tlayer *l, dcz_chw in, int32_t *a) { (void)l; (void)in; (void)a; }
static void settings_none(dcz_tlayer *l, const int32_t *a) { (void)l; (void)a; }

/* DENSE: in, out */
static void attrs_dense(const dcz_tlayer *l, dcz_chw in, int32_t *a)
{
    a[0] = attr_of(in.c * in.h * in.w);
    a[1] = l->out;
}
static void settings_dense(dcz_tlayer *l, const int32_t *a) { l->out = a[1]; }

/* CONV2D: in_c, out_c, the window, group */
static void attrs_conv(const dcz_tlayer *l, dcz_chw in, int32_t *a)
{
    a[0] = attr_of(in.c);
    a[1] = l->out_c;
    put_window(l, a + 2);
    a[8] = dcz_tlayer_groups(l);
}
static void settings_conv(dcz_tlayer *l, const int32_t *a)
{
    l->out_c = a[1];
    set_window(l, a + 2);
    l->group = a[8];
}

static void attrs_maxpool(const dcz_tlayer *l, dcz_chw in, int32_t *a) { (void)in; put_window(l, a); }
static void settings_maxpool(dcz_tlayer *l, const int32_t *a) { set_window(l, a); }

/* AVGPOOL: the window, count_include_pad */
static void attrs_avgpool(const dcz_tlayer *l, dcz_chw in, int32_t *a)
{
    (void)in;
    put_window(l, a);
    a[6] = l->count_include_pad ? 1 : 0;
}
static void settings_avgpool(dcz_tlayer *l, const int32_t *a)
{
    set_window(l, a);
    l->count_include_pad = a[6];
}

/* CHANNEL_SHUFFLE: groups; SLICE: start, count */
static void attrs_shuffle(const dcz_tlayer *l, dcz_chw in, int32_t *a) { (void)in; a[0] = l->group; }
static void settings_shuffle(dcz_tlayer *l, const int32_t *a) { l->group = a[0]; }
static void attrs_slice(const dcz_tlayer *l, dcz_chw in, int32_t *a)
{
    (void)in;
    a[0] = l->start;
    a[1] = l->out_c;
}
static void settings_slice(dcz_tlayer *l, const int32_t *a)
{
    l->start = a[0];
    l->out_c = a[1];
}

/* the activations: their float attributes, kept in param */
static void attrs_floats(const dcz_tlayer *l, dcz_chw in, int32_t *a)
{
    (void)in;
    for (uint32_t k = 0; k < dcz_op_get(l->op)->nattr && k < 2; k++) a[k] = dcz_f32_attr(l->param[k]);
}
static void settings_floats(dcz_tlayer *l, const int32_t *a)
{
    for (uint32_t k = 0; k < dcz_op_get(l->op)->nattr && k < 2; k++) l->param[k] = dcz_attr_f32(a[k]);
}

/* BATCHNORM: eps and momentum (0: the defaults); DROPOUT: its rate */
static void attrs_bn(const dcz_tlayer *l, dcz_chw in, int32_t *a)
{
    (void)in;
    a[0] = dcz_f32_attr(l->eps != 0.0f ? l->eps : DCZ_BN_EPS);
    a[1] = dcz_f32_attr(l->bn_momentum != 0.0f ? l->bn_momentum : DCZ_BN_MOMENTUM);
}
static void settings_bn(dcz_tlayer *l, const int32_t *a)
{
    l->eps = dcz_attr_f32(a[0]);
    l->bn_momentum = dcz_attr_f32(a[1]);
}
static void attrs_dropout(const dcz_tlayer *l, dcz_chw in, int32_t *a) { (void)in; a[0] = dcz_f32_attr(l->rate); }
static void settings_dropout(dcz_tlayer *l, const int32_t *a) { l->rate = dcz_attr_f32(a[0]); }

/* DENSE and CONV: weights and bias, and a codebook that fits them */
static dcz_status check_weighted(const dcz_tlayer *l)
{
    if (!l->w || !l->b) return DCZ_ERR_ARG;
    if (!l->codebook && !l->assign && !l->k) return DCZ_OK;
    if (!l->codebook || !l->assign || l->k < 1 || l->k > 256) return DCZ_ERR_ARG;
    const size_t nw = dcz_tlayer_nweights(l);
    for (size_t j = 0; j < nw; j++)
        if ((!l->mask || l->mask[j]) && l->assign[j] >= l->k) return DCZ_ERR_ARG;
    return DCZ_OK;
}

static dcz_status check_bn(const dcz_tlayer *l)
{
    if (!l->w || !l->b || !l->run_mean || !l->run_var) return DCZ_ERR_ARG;
    if (!(l->eps > 0.0f) || !isfinite(l->eps)) return DCZ_ERR_ARG;
    return l->bn_momentum >= 0.0f && l->bn_momentum <= 1.0f ? DCZ_OK : DCZ_ERR_ARG;
}

static dcz_status check_dropout(const dcz_tlayer *l)
{
    return l->rate >= 0.0f && l->rate < 1.0f ? DCZ_OK : DCZ_ERR_ARG;
}

/* MAXPOOL: the int32 argmax of each output; BATCHNORM: mean and 1 /
 * sqrt(var + eps) per channel; DROPOUT: its uint8 mask; DENSE and CONV
 * under variational dropout: cache_vd above */
static size_t cache_maxpool(const dcz_tlayer *l, int batch) { return (size_t)batch * (size_t)l->out * sizeof(int32_t); }
static size_t cache_bn(const dcz_tlayer *l, int batch) { (void)batch; return 2 * (size_t)l->in_c * sizeof(float); }
static size_t cache_dropout(const dcz_tlayer *l, int batch) { return (size_t)batch * (size_t)l->in; }

/* op, forward, backward, attributes from settings, settings from
 * attributes, buffer checks, cache bytes, keeps geometry, per sample */
#define PLAIN attrs_none, settings_none
#define ACTIVATION fwd_activation, bwd_activation, attrs_floats, settings_floats, NULL, NULL, 0, 1
static const dcz_train_op train_ops[] = {
    { DCZ_OP_DENSE, fwd_dense, bwd_dense, attrs_dense, settings_dense, check_weighted, cache_vd, 0, 0 },
    { DCZ_OP_RELU, fwd_relu, bwd_relu, PLAIN, NULL, NULL, 0, 1 },
    { DCZ_OP_SOFTMAX, fwd_softmax, bwd_copy, PLAIN, NULL, NULL, 0, 1 },
    { DCZ_OP_CONV2D, fwd_conv, bwd_conv, attrs_conv, settings_conv, check_weighted, cache_vd, 1, 0 },
    { DCZ_OP_MAXPOOL, fwd_pool, bwd_pool, attrs_maxpool, settings_maxpool, NULL, cache_maxpool, 1, 1 },
    { DCZ_OP_AVGPOOL, fwd_pool, bwd_pool, attrs_avgpool, settings_avgpool, NULL, NULL, 1, 1 },
    { DCZ_OP_GLOBAL_AVGPOOL, fwd_pool, bwd_pool, PLAIN, NULL, NULL, 1, 1 },
    { DCZ_OP_FLATTEN, fwd_copy, bwd_copy, PLAIN, NULL, NULL, 1, 1 },
    { DCZ_OP_ADD, fwd_add, bwd_add, PLAIN, NULL, NULL, 0, 1 },
    { DCZ_OP_MUL, fwd_mul, bwd_mul, PLAIN, NULL, NULL, 0, 1 },
    { DCZ_OP_CONCAT, fwd_concat, bwd_concat, PLAIN, NULL, NULL, 0, 1 },
    { DCZ_OP_CLIP, ACTIVATION },
    { DCZ_OP_LEAKY_RELU, ACTIVATION },
    { DCZ_OP_SIGMOID, ACTIVATION },
    { DCZ_OP_TANH, ACTIVATION },
    { DCZ_OP_HARD_SIGMOID, ACTIVATION },
    { DCZ_OP_HARD_SWISH, ACTIVATION },
    { DCZ_OP_CHANNEL_SHUFFLE, fwd_gather, bwd_gather, attrs_shuffle, settings_shuffle, NULL, NULL, 1, 1 },
    { DCZ_OP_SLICE, fwd_gather, bwd_gather, attrs_slice, settings_slice, NULL, NULL, 1, 1 },
    { DCZ_OP_SILU, ACTIVATION },
    { DCZ_OP_BATCHNORM, fwd_bn, bwd_bn, attrs_bn, settings_bn, check_bn, cache_bn, 1, 0 },
    { DCZ_OP_DROPOUT, fwd_dropout, bwd_dropout, attrs_dropout, settings_dropout, check_dropout, cache_dropout, 0, 0 },
};
#undef PLAIN
#undef ACTIVATION

const dcz_train_op *dcz_train_op_get(dcz_op op)
{
    for (size_t i = 0; i < sizeof train_ops / sizeof train_ops[0]; i++)
        if (train_ops[i].op == op) return &train_ops[i];
    return NULL;
}

/* Floats a part of a per-sample split reads and writes at least: below
 * it the hand-over costs more than a second thread saves. */
#define SPLIT_GRAIN_FLOATS 32768

/* One pass of a per-sample layer over samples [lo, hi): its tensors from
 * sample lo on, its cache from that sample's slice on. */
typedef struct split_job {
    dcz_net *net;
    dcz_tlayer *l;
    const dcz_train_op *t;
    const float *const *xs;
    float *y;                /* forward: written */
    const float *yk, *dy;    /* backward: read */
    float *const *dxs;       /* backward: written (entries may be NULL) */
    unsigned flags;
} split_job;

static void split_part(void *ctx, size_t lo, size_t hi)
{
    const split_job *j = ctx;
    const dcz_tlayer *l = j->l;
    dcz_tlayer part = *l;
    const float *xs[DCZ_MAX_INPUTS];
    float *dxs[DCZ_MAX_INPUTS];
    for (uint32_t k = 0; k < l->nin; k++) {
        const size_t w = j->net->twidth[l->tin[k]];
        xs[k] = j->xs[k] + lo * w;
        dxs[k] = j->dxs && j->dxs[k] ? j->dxs[k] + lo * w : NULL;
    }
    if (j->t->cache_bytes && part.cache) part.cache = (uint8_t *)part.cache + j->t->cache_bytes(l, (int)lo);
    const size_t o = lo * (size_t)l->out;
    if (j->dxs) j->t->backward(j->net, &part, xs, j->yk + o, j->dy + o, dxs, (int)(hi - lo));
    else j->t->forward(j->net, &part, xs, j->y + o, (int)(hi - lo), j->flags);
}

/* Samples a part of layer l's split takes at least. */
static size_t split_grain(const dcz_net *net, const dcz_tlayer *l)
{
    size_t w = (size_t)l->out;
    for (uint32_t k = 0; k < l->nin; k++) w += net->twidth[l->tin[k]];
    return (SPLIT_GRAIN_FLOATS + w - 1) / (w ? w : 1);
}

void dcz_train_forward(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                       unsigned flags)
{
    const dcz_train_op *t = dcz_train_op_get(l->op);
    if (!t->per_sample) {
        t->forward(net, l, xs, y, batch, flags);
        return;
    }
    split_job j = { .net = net, .l = l, .t = t, .xs = xs, .y = y, .flags = flags };
    dcz_train_par((size_t)batch, split_grain(net, l), split_part, &j);
}

void dcz_train_backward(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                        const float *dy, float *const *dxs, int batch)
{
    const dcz_train_op *t = dcz_train_op_get(l->op);
    if (!t->per_sample) {
        t->backward(net, l, xs, y, dy, dxs, batch);
        return;
    }
    split_job j = { .net = net, .l = l, .t = t, .xs = xs, .yk = y, .dy = dy, .dxs = dxs };
    dcz_train_par((size_t)batch, split_grain(net, l), split_part, &j);
}

uint32_t dcz_tlayer_attrs(const dcz_tlayer *l, dcz_chw in, int32_t *attr)
{
    const dcz_train_op *t = dcz_train_op_get(l->op);
    const dcz_op_info *o = dcz_op_get(l->op);
    memset(attr, 0, DCZ_MAX_ATTRS * sizeof *attr);
    if (!t || !o) return 0;
    t->attrs(l, in, attr);
    return o->nattr;
}
