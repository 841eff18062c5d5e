/* layers.c: the trainer's side of the operator table: per op its forward
 * and backward pass over a batch (the runtime's table, runtime/ops.c, has
 * the shapes, attributes and inference kernels). Dense layers run through
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
 *   CLIP         dx = dy where min < x < max
 *   LEAKY_RELU   dx = dy (x > 0), alpha dy (x <= 0)
 *   SIGMOID      dx = dy y (1 - y);  TANH: dx = dy (1 - y^2)
 *   HARD_SIGMOID dx = alpha dy where 0 < alpha x + beta < 1
 *   HARD_SWISH   dx = 0 (x <= -3), dy (x >= 3), dy (2 x + 3) / 6 between
 *
 * Tested by tests/unit/test_train.c: finite-difference gradient checks in
 * double for every op, a residual and a squeeze-and-excitation network
 * against the runtime's forward pass.
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "train/internal.h"

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
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, l->out, l->in, batch,
                1.0f, dy, l->out, x, l->in, 0.0f, l->gw, l->in);
    for (int j = 0; j < l->out; j++) l->gb[j] = 0.0f;
    for (int r = 0; r < batch; r++) {
        const float *dr = dy + (size_t)r * l->out;
        for (int j = 0; j < l->out; j++) l->gb[j] += dr[j];
    }
    /* dx (batch, in) = dy (batch, out) W (out, in) */
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, l->in, l->out,
                    1.0f, dy, l->out, l->w, l->in, 0.0f, dx, l->in);
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

/* ---- the table's entries ---------------------------------------------------- */

static void fwd_dense(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                      unsigned flags)
{
    dense_forward(l, xs[0], y, batch);
}

static void bwd_dense(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                      const float *dy, float *const *dxs, int batch)
{
    dense_backward(l, xs[0], dy, dxs[0], batch);
    constrain_grads(l);
}

static void fwd_conv(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                     unsigned flags)
{
    dcz_conv_forward(l, xs[0], y, batch, net->work, (flags & DCZ_RUN_TRAIN) != 0);
}

static void bwd_conv(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                     const float *dy, float *const *dxs, int batch)
{
    dcz_conv_backward(l, xs[0], dy, dxs[0], batch, net->work);
    constrain_grads(l);
}

static void fwd_relu(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                     unsigned flags)
{
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
    const size_t n = (size_t)batch * (size_t)l->out;
    for (size_t j = 0; j < n; j++) y[j] = xs[0][j] + xs[1][j];
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

/* the activations: y from x elementwise, the runtime's reference formulas */
static void fwd_activation(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                           unsigned flags)
{
    dcz_activation_ref((uint16_t)l->op, l->param, xs[0], (size_t)batch * (size_t)l->out, y);
}

static void bwd_activation(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                           const float *dy, float *const *dxs, int batch)
{
    float *dx = dxs[0];
    if (!dx) return;
    const float *x = xs[0], a = l->param[0], c = l->param[1];
    const size_t n = (size_t)batch * (size_t)l->in;
    for (size_t j = 0; j < n; j++) {
        const float v = x[j], g = dy[j];
        float d;
        switch (l->op) {
        case DCZ_OP_CLIP: d = v > a && v < c ? g : 0.0f; break;
        case DCZ_OP_LEAKY_RELU: d = v > 0.0f ? g : a * g; break;
        case DCZ_OP_SIGMOID: d = g * y[j] * (1.0f - y[j]); break;
        case DCZ_OP_TANH: d = g * (1.0f - y[j] * y[j]); break;
        case DCZ_OP_HARD_SIGMOID: {
            const float t = a * v + c;
            d = t > 0.0f && t < 1.0f ? a * g : 0.0f;
            break;
        }
        default: /* HARD_SWISH */
            d = v <= -3.0f ? 0.0f : v >= 3.0f ? g : g * (2.0f * v + 3.0f) / 6.0f;
        }
        dx[j] = d;
    }
}

static const dcz_train_op train_ops[] = {
    { DCZ_OP_DENSE, fwd_dense, bwd_dense },
    { DCZ_OP_RELU, fwd_relu, bwd_relu },
    { DCZ_OP_SOFTMAX, fwd_softmax, bwd_copy },
    { DCZ_OP_CONV2D, fwd_conv, bwd_conv },
    { DCZ_OP_MAXPOOL, fwd_pool, bwd_pool },
    { DCZ_OP_AVGPOOL, fwd_pool, bwd_pool },
    { DCZ_OP_GLOBAL_AVGPOOL, fwd_pool, bwd_pool },
    { DCZ_OP_FLATTEN, fwd_copy, bwd_copy },
    { DCZ_OP_ADD, fwd_add, bwd_add },
    { DCZ_OP_MUL, fwd_mul, bwd_mul },
    { DCZ_OP_CONCAT, fwd_concat, bwd_concat },
    { DCZ_OP_CLIP, fwd_activation, bwd_activation },
    { DCZ_OP_LEAKY_RELU, fwd_activation, bwd_activation },
    { DCZ_OP_SIGMOID, fwd_activation, bwd_activation },
    { DCZ_OP_TANH, fwd_activation, bwd_activation },
    { DCZ_OP_HARD_SIGMOID, fwd_activation, bwd_activation },
    { DCZ_OP_HARD_SWISH, fwd_activation, bwd_activation },
    { DCZ_OP_BATCHNORM, fwd_bn, bwd_bn },
    { DCZ_OP_DROPOUT, fwd_dropout, bwd_dropout },
};

const dcz_train_op *dcz_train_op_get(dcz_op op)
{
    for (size_t i = 0; i < sizeof train_ops / sizeof train_ops[0]; i++)
        if (train_ops[i].op == op) return &train_ops[i];
    return NULL;
}
