/* tkern.h: the bodies of the trainer's GPU kernels that compute one output
 * element each, written once for the device and the host, as the
 * runtime's gpu_kern.h does for inference. Forward passes need little
 * here: the runtime's bodies compute them (gpu_elem.h: the direct
 * convolutions, im2col, pools, the mean, activations, Concat's and the
 * channel gathers' element maps); what training adds is here: the maximum
 * pool's argmax, batch norm with batch statistics, every backward pass,
 * the loss and the step. The loss's body is the CPU trainer's own: sgd.c
 * calls dcz_tk_xent_row.
 *
 * Each function computes one element of one training pass: an input's
 * gradient, a parameter's gradient or update, a row's loss. Where a sum
 * has one order on the CPU (sgd.c, layers.c, pool.c), the body keeps it,
 * and gives the CPU's bits: the loss's gradient, dense bias gradients,
 * the pools' gradients (each input's contributions added in the order of
 * the outputs that make them, as the CPU's scatter adds them), Mul's and
 * the centroids' gradients (in double), the SGD step. Where the CPU splits
 * a sum its own way (batch norm's 16 partial sums, the convolutions' tiles
 * and Winograd), the body sums over a channel in parts (below), in double,
 * and agrees within rounding. No body adds into memory another body
 * writes: each output is one thread's, so a pass gives the same bits
 * every run (no atomics).
 *
 * tests/unit/test_train_emu.c runs every body here on the host over every
 * output of random layers and compares it with the trainer's CPU pass
 * (train/layers.c's operator table), exact where the orders agree and
 * within a stated tolerance where they do not.
 */
#ifndef DCZ_TRAIN_TKERN_H
#define DCZ_TRAIN_TKERN_H

#include <math.h>
#include <stdint.h>

#include "runtime/cuda/gpu_elem.h"

/* ---- activations ---------------------------------------------------------- */

/* dx of one element of an activation layer (train/layers.c's table: RELU
 * and the ones of dcz_activation_ref) from its input x, output y and
 * output gradient dy; a, c: the op's two float attributes (CLIP min and
 * max, LEAKY_RELU alpha, HARD_SIGMOID alpha and beta). */
DCZ_HD float dcz_tk_act_grad(uint16_t op, float a, float c, float x, float y, float dy)
{
    switch (op) {
    case DCZ_OP_RELU: return y > 0.0f ? dy : 0.0f;
    case DCZ_OP_CLIP: return x > a && x < c ? dy : 0.0f;
    case DCZ_OP_LEAKY_RELU: return x > 0.0f ? dy : a * dy;
    case DCZ_OP_SIGMOID: return dy * y * (1.0f - y);
    case DCZ_OP_TANH: return dy * (1.0f - y * y);
    case DCZ_OP_HARD_SIGMOID: {
        const float t = a * x + c;
        return t > 0.0f && t < 1.0f ? a * dy : 0.0f;
    }
    case DCZ_OP_SILU: {
        /* s and 1 - s both through e^-|x|, as the forward pass */
        const float e = expf(-fabsf(x)), p = 1.0f / (1.0f + e), q = e * p;
        const float s = x >= 0.0f ? p : q, t = x >= 0.0f ? q : p;
        return dy * (s + x * s * t);
    }
    default: /* HARD_SWISH */
        return x <= -3.0f ? 0.0f : x >= 3.0f ? dy : dy * (2.0f * x + 3.0f) / 6.0f;
    }
}

/* ---- the loss ----------------------------------------------------------------- */

/* log of the sum of exp(z[j] / T) over n logits, shifted by their maximum. */
DCZ_HD double dcz_tk_lse(const float *z, uint32_t n, double T)
{
    float m = z[0];
    for (uint32_t j = 1; j < n; j++) if (z[j] > m) m = z[j];
    double s = 0;
    for (uint32_t j = 0; j < n; j++) s += exp(((double)z[j] - m) / T);
    return m / T + log(s);
}

/* Row r of a batch of B: softmax cross-entropy of its n logits z against
 * label, fused and shifted by the row maximum: writes dz =
 * (softmax(z) - onehot(label)) / B and returns the row's loss lse(z) -
 * z[label]. With a teacher's logits t of the row (not NULL; distillation,
 * a share a of the loss at temperature T), the labels' term is weighted 1
 * - a and the teacher's added: T^2 KL(softmax(t / T) || softmax(z / T)),
 * whose gradient a T (softmax(z / T) - softmax(t / T)) / B is added to dz
 * as a float. The CPU trainer (sgd.c) and both devices run this body. */
DCZ_HD double dcz_tk_xent_row(const float *z, uint32_t n, uint32_t label, uint32_t B, const float *t, double a,
                              double T, float *dz)
{
    if (!t) a = 0;
    const double lse = dcz_tk_lse(z, n, 1);
    for (uint32_t j = 0; j < n; j++) {
        const double p = exp((double)z[j] - lse) - (j == label ? 1.0 : 0.0);
        dz[j] = (float)((1 - a) * p / B);
    }
    const double ce = (1 - a) * (lse - z[label]);
    if (!t) return ce;
    const double zl = dcz_tk_lse(z, n, T), tl = dcz_tk_lse(t, n, T);
    double kl = 0;
    for (uint32_t j = 0; j < n; j++) {
        const double lq = t[j] / T - tl, lp = z[j] / T - zl, q = exp(lq);
        kl += q * (lq - lp);
        dz[j] += (float)(a * T * (exp(lp) - q) / B);
    }
    return ce + a * T * T * kl;
}

/* ---- parameters ---------------------------------------------------------------- */

/* One SGD step of one parameter w with its momentum v and gradient g
 * (sgd.c): v = mom v + (g + wd w), w -= lr v; a pruned weight (kept 0)
 * stays 0 with its momentum. Biases and batch-norm parameters take wd 0. */
DCZ_HD void dcz_tk_sgd(float *w, float *v, float g, float lr, float mom, float wd, int kept)
{
    *v = mom * *v + (g + wd * *w);
    *w -= lr * *v;
    if (!kept) *w = *v = 0.0f;
}

/* A shared layer's weight after its centroids moved: its centroid, 0
 * where pruned. */
DCZ_HD float dcz_tk_shared_weight(const float *codebook, uint32_t k, uint8_t assign, int kept)
{
    return kept && assign < k ? codebook[assign] : 0.0f;
}

/* A centroid's gradient: the sum of the gradients of the kept weights
 * assigned to it, members[lo, hi) their indices in ascending order, in
 * double (Deep Compression, section 3.2; sgd.c sums them in that order). */
DCZ_HD float dcz_tk_centroid_grad(const float *gw, const uint32_t *members, uint32_t lo, uint32_t hi)
{
    double s = 0;
    for (uint32_t e = lo; e < hi; e++) s += gw[members[e]];
    return (float)s;
}

/* ---- sums over a batch's planes, in parts --------------------------------------
 * A channel's sum over a batch of large planes (a convolution's bias
 * gradient, batch norm's statistics and gradients, a grouped
 * convolution's weight gradient) is cut into parts of the channel's
 * values in sample order, each summed in double, and the parts are added
 * in order: the GPU sums the parts a thread each, then adds them in
 * another pass; the host and these bodies do the same one part after
 * another. So the bits are the same whichever runs them, and the work
 * spreads over channels times parts threads. A sum of n values has
 * dcz_tk_parts(n) parts (a grouped convolution's weight gradient counts
 * its sum in output rows, not values): 64 up to 64 runs of
 * DCZ_TK_PART_LEN, then a part every DCZ_TK_PART_LEN (at most
 * DCZ_TK_PARTS_MAX), so that the few channels of a large plane still make
 * threads enough to fill a GPU (64 parts of each of 64 channels of 64 x
 * 112 x 112 values: 4,096 threads, each summing 3,136 values alone, read
 * a bias gradient at 140 GB/s on an H200). */
#define DCZ_TK_PARTS 64         /* the fewest parts */
#define DCZ_TK_PART_LEN 256     /* values a part, past 64 parts */
#define DCZ_TK_PARTS_MAX 8192

/* The parts a sum of n values is cut into. */
DCZ_HD uint32_t dcz_tk_parts(uint64_t n)
{
    const uint64_t p = n / DCZ_TK_PART_LEN;
    return p <= DCZ_TK_PARTS ? DCZ_TK_PARTS : p >= DCZ_TK_PARTS_MAX ? DCZ_TK_PARTS_MAX : (uint32_t)p;
}

/* Part p's first value of n values. */
DCZ_HD uint64_t dcz_tk_part_lo(uint64_t n, uint32_t p)
{
    return n * p / dcz_tk_parts(n);
}

/* Part p of channel c's values of x (batch, C, hw): the sum of x - shift,
 * or of (x - shift)^2 (sq 1), in double. */
DCZ_HD double dcz_tk_chan_part(const float *x, uint32_t batch, uint32_t C, uint32_t hw, uint32_t c, uint32_t p,
                               float shift, int sq)
{
    const uint64_t M = (uint64_t)batch * hw, hi = dcz_tk_part_lo(M, p + 1);
    double s = 0;
    for (uint64_t m = dcz_tk_part_lo(M, p); m < hi; m++) {
        const double d = (double)x[(m / hw * C + c) * hw + m % hw] - shift;
        s += sq ? d * d : d;
    }
    return s;
}

/* The sum of n parts, in order. */
DCZ_HD double dcz_tk_parts_sum(const double *part, uint32_t n)
{
    double s = 0;
    for (uint32_t p = 0; p < n; p++) s += part[p];
    return s;
}

/* The bias gradient of output row o of a layer whose output dy is (batch,
 * rows, plane): the sum of its values over the batch. A fully connected
 * layer's (plane 1) in float, sample after sample: the CPU's order; a
 * convolution's in parts. */
DCZ_HD float dcz_tk_bias_grad(const float *dy, uint32_t batch, uint32_t rows, uint32_t plane, uint32_t o)
{
    if (plane > 1) {
        double s = 0;
        const uint32_t parts = dcz_tk_parts((uint64_t)batch * plane);
        for (uint32_t p = 0; p < parts; p++) s += dcz_tk_chan_part(dy, batch, rows, plane, o, p, 0.0f, 0);
        return (float)s;
    }
    float s = 0.0f;
    for (uint32_t b = 0; b < batch; b++) s += dy[(uint64_t)b * rows + o];
    return s;
}

/* ---- pools ------------------------------------------------------------------- */

/* Outputs [*lo, *hi) along an axis of n outputs whose windows (stride,
 * pad, k) hold input cell c. */
DCZ_HD void dcz_tk_windows_of(uint32_t c, uint32_t stride, uint32_t pad, uint32_t k, uint32_t n, uint32_t *lo,
                              uint32_t *hi)
{
    const int64_t last = ((int64_t)c + pad) / stride;              /* the last window starting at or before c */
    const int64_t first = (int64_t)c + pad - (int64_t)k + 1;       /* windows end after c from here */
    const int64_t f = first <= 0 ? 0 : (first + stride - 1) / stride;
    *lo = (uint32_t)f;
    *hi = last + 1 < (int64_t)n ? (uint32_t)(last + 1) : n;
    if (*hi < *lo) *hi = *lo;
}

/* Output i (of in_c out_h out_w) of one sample of a max pool: the cell of
 * its channel's plane holding the window's first maximum in row-major
 * order (pool.c: padding never wins, every window holds a real cell). */
DCZ_HD uint32_t dcz_tk_maxpool_arg(const dcz_conv_geom *g, const float *x, uint32_t i)
{
    const uint32_t plane = g->out_h * g->out_w, c = i / plane, p = i % plane;
    uint32_t y0, y1, x0, x1;
    dcz_gk_window(p / g->out_w, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
    dcz_gk_window(p % g->out_w, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
    const float *xp = x + (uint64_t)c * g->in_h * g->in_w;
    uint32_t best = y0 * g->in_w + x0;
    for (uint32_t iy = y0; iy < y1; iy++)
        for (uint32_t ix = x0; ix < x1; ix++)
            if (xp[iy * g->in_w + ix] > xp[best]) best = iy * g->in_w + ix;
    return best;
}

/* dx of input cell i (of in_c in_h in_w) of one sample of a max pool: the
 * gradients of the outputs whose argmax (arg, of the cell in the plane) it
 * is, added in the order of the outputs. */
DCZ_HD float dcz_tk_maxpool_grad(const dcz_conv_geom *g, const float *dy, const int32_t *arg, uint32_t i)
{
    const uint32_t hw = g->in_h * g->in_w, c = i / hw, cell = i % hw, ohw = g->out_h * g->out_w;
    uint32_t oy0, oy1, ox0, ox1;
    dcz_tk_windows_of(cell / g->in_w, g->sh, g->ph, g->kh, g->out_h, &oy0, &oy1);
    dcz_tk_windows_of(cell % g->in_w, g->sw, g->pw, g->kw, g->out_w, &ox0, &ox1);
    float s = 0.0f;
    for (uint32_t oy = oy0; oy < oy1; oy++)
        for (uint32_t ox = ox0; ox < ox1; ox++) {
            const uint64_t o = (uint64_t)c * ohw + oy * g->out_w + ox;
            if (arg[o] == (int32_t)cell) s += dy[o];
        }
    return s;
}

/* dx of input cell i of one sample of an average pool: each window's
 * gradient over its divisor (count_include_pad as AVGPOOL's attribute),
 * added in the order of the windows. */
DCZ_HD float dcz_tk_avgpool_grad(const dcz_conv_geom *g, int count_include_pad, const float *dy, uint32_t i)
{
    const uint32_t hw = g->in_h * g->in_w, c = i / hw, cell = i % hw, ohw = g->out_h * g->out_w;
    uint32_t oy0, oy1, ox0, ox1;
    dcz_tk_windows_of(cell / g->in_w, g->sh, g->ph, g->kh, g->out_h, &oy0, &oy1);
    dcz_tk_windows_of(cell % g->in_w, g->sw, g->pw, g->kw, g->out_w, &ox0, &ox1);
    float s = 0.0f;
    for (uint32_t oy = oy0; oy < oy1; oy++) {
        uint32_t y0, y1;
        dcz_gk_window(oy, g->sh, g->ph, g->kh, g->in_h, &y0, &y1);
        for (uint32_t ox = ox0; ox < ox1; ox++) {
            uint32_t x0, x1;
            dcz_gk_window(ox, g->sw, g->pw, g->kw, g->in_w, &x0, &x1);
            const uint32_t div = count_include_pad ? g->kh * g->kw : (y1 - y0) * (x1 - x0);
            s += dy[(uint64_t)c * ohw + oy * g->out_w + ox] / (float)div;
        }
    }
    return s;
}

/* dx of element i of a global average pool's input (planes of plane). */
DCZ_HD float dcz_tk_gap_grad(const float *dy, uint32_t plane, uint64_t i)
{
    return dy[i / plane] * (1.0f / (float)plane);
}

/* ---- graph layers ------------------------------------------------------------ */

/* MUL's factor gradient of (sample, channel) t: the sum over the channel's
 * plane of dy x, in double (layers.c). */
DCZ_HD float dcz_tk_mul_factor_grad(const float *dy, const float *x, uint32_t plane, uint64_t t)
{
    double s = 0;
    for (uint32_t p = 0; p < plane; p++) s += (double)dy[t * plane + p] * x[t * plane + p];
    return (float)s;
}

/* Where element t of input k of a CONCAT (batch, width) sits in the
 * output (batch, out): at offset `at` of its row (the widths of the inputs
 * before k). */
DCZ_HD uint64_t dcz_tk_concat_index(uint32_t out, uint32_t at, uint32_t width, uint64_t t)
{
    return t / width * out + at + t % width;
}

/* Input k's gradient element t of a CONCAT: its part of the output's
 * gradient. */
DCZ_HD float dcz_tk_concat_grad(const float *dy, uint32_t out, uint32_t at, uint32_t width, uint64_t t)
{
    return dy[dcz_tk_concat_index(out, at, width, t)];
}

/* MUL: element t of x (batch, C, plane) times its channel's factor (f:
 * (batch, C)); also the planes' gradient, dy for x. */
DCZ_HD float dcz_tk_mul(const float *x, const float *f, uint32_t plane, uint64_t t)
{
    return x[t] * f[t / plane];
}

/* Element t of x (batch, rows, plane) laid out by rows, (rows, batch,
 * plane), t counted in the latter: a batch's output gradient as the
 * product over its patches takes it. */
DCZ_HD float dcz_tk_by_rows(const float *x, uint64_t batch, uint32_t rows, uint32_t plane, uint64_t t)
{
    const uint64_t p = t % plane, b = t / plane % batch, r = t / plane / batch;
    return x[(b * rows + r) * plane + p];
}

/* dx of element t of a CHANNEL_SHUFFLE's or SLICE's input (batch, in_c,
 * plane): the gradient of the output channel that took its channel (from,
 * the inverse of dcz_gather_source: from[ci] that channel, or -1 for one
 * a SLICE leaves out, whose gradient is 0). */
DCZ_HD float dcz_tk_gather_grad(const dcz_conv_geom *g, const int32_t *from, const float *dy, uint64_t t)
{
    const uint64_t plane = (uint64_t)g->in_h * g->in_w, p = t % plane, ci = t / plane % g->in_c,
                   b = t / plane / g->in_c;
    const int32_t c = from[ci];
    return c < 0 ? 0.0f : dy[(b * g->out_c + (uint32_t)c) * plane + p];
}

/* Whether dropout keeps element i of a step (rate in [0, 1)): a draw of
 * splitmix64 of the step's key and i, the same on any device and any
 * thread count. */
DCZ_HD int dcz_tk_dropout_keep(uint64_t key, uint64_t i, float rate)
{
    uint64_t z = key + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f) >= rate;
}

/* Dropout's dx of one element kept (keep 1) or dropped, scaled as the
 * forward pass (layers.c). */
DCZ_HD float dcz_tk_dropout_grad(float dy, int keep, float rate)
{
    const float g = dy * (1.0f / (1.0f - rate));
    return keep ? g : 0.0f;
}

/* ---- batch norm (bnorm.c) -------------------------------------------------------- */

/* Channel c's training statistics from its sums over the batch of M
 * values: the mean, 1 / sqrt(var + eps) and the unbiased variance the
 * running statistics move toward, var the sum of squared deviations from
 * the float mean over M. */
DCZ_HD float dcz_tk_bn_mean(double sum, uint64_t M)
{
    return (float)(sum / (double)M);
}
DCZ_HD void dcz_tk_bn_var(double sumsq, uint64_t M, float eps, float *istd, float *unbiased)
{
    const double v = sumsq / (double)M;
    *istd = (float)(1.0 / sqrt(v + eps));
    *unbiased = (float)(M > 1 ? v * (double)M / (double)(M - 1) : v);
}

/* Channel c's training statistics over the batch of x (batch, C, hw): two
 * passes in parts (the mean, then squared deviations from the float
 * mean). */
DCZ_HD void dcz_tk_bn_stats(const float *x, uint32_t batch, uint32_t C, uint32_t hw, uint32_t c, float eps,
                            float *mean, float *istd, float *unbiased)
{
    const uint64_t M = (uint64_t)batch * hw;
    const uint32_t parts = dcz_tk_parts(M);
    double s = 0;
    for (uint32_t p = 0; p < parts; p++) s += dcz_tk_chan_part(x, batch, C, hw, c, p, 0.0f, 0);
    const float m = dcz_tk_bn_mean(s, M);
    double v = 0;
    for (uint32_t p = 0; p < parts; p++) v += dcz_tk_chan_part(x, batch, C, hw, c, p, m, 1);
    *mean = m;
    dcz_tk_bn_var(v, M, eps, istd, unbiased);
}

/* A running statistic moved toward the batch's by momentum mom (bnorm.c). */
DCZ_HD float dcz_tk_bn_running(float run, float batch_stat, float mom)
{
    return (1.0f - mom) * run + mom * batch_stat;
}

/* One element of a channel's training output: x scale + shift with scale
 * = gamma istd and shift = beta - mean scale (bnorm.c's form), through the
 * ReLU after the layer where it applies it (relu nonzero). */
DCZ_HD float dcz_tk_bn_out(float x, float gamma, float beta, float mean, float istd, int relu)
{
    const float scale = gamma * istd, shift = beta - mean * scale, y = x * scale + shift;
    return relu && !(y > 0.0f) ? 0.0f : y;
}

/* One element of a channel's output in inference, by its running
 * statistics (a teacher's pass; bnorm.c's infer_part): x scale + shift
 * with scale = gamma / sqrt(run_var + eps), shift = beta - run_mean scale. */
DCZ_HD float dcz_tk_bn_infer(float x, float gamma, float beta, float run_mean, float run_var, float eps)
{
    const float scale = gamma / sqrtf(run_var + eps), shift = beta - run_mean * scale;
    return x * scale + shift;
}

/* Part p of channel c's gradient sums: of dy (*a) and of dy (x - mean)
 * (*b), in double. */
DCZ_HD void dcz_tk_bn_grad_part(const float *x, const float *dy, uint32_t batch, uint32_t C, uint32_t hw, uint32_t c,
                                uint32_t p, float mean, double *a, double *b)
{
    const uint64_t M = (uint64_t)batch * hw, hi = dcz_tk_part_lo(M, p + 1);
    double sa = 0, sb = 0;
    for (uint64_t m = dcz_tk_part_lo(M, p); m < hi; m++) {
        const uint64_t o = (m / hw * C + c) * hw + m % hw;
        sa += dy[o];
        sb += (double)dy[o] * ((double)x[o] - mean);
    }
    *a = sa;
    *b = sb;
}

/* Channel c's parameter gradients: dbeta = sum dy, dgamma = sum dy xhat
 * with xhat = (x - mean) istd, over the batch in parts. */
DCZ_HD void dcz_tk_bn_param_grads(const float *x, const float *dy, uint32_t batch, uint32_t C, uint32_t hw,
                                  uint32_t c, float mean, float istd, double *sdy, double *sdyx)
{
    double a = 0, b = 0;
    const uint32_t parts = dcz_tk_parts((uint64_t)batch * hw);
    for (uint32_t p = 0; p < parts; p++) {
        double pa, pb;
        dcz_tk_bn_grad_part(x, dy, batch, C, hw, c, p, mean, &pa, &pb);
        a += pa;
        b += pb;
    }
    *sdy = a;
    *sdyx = b * istd;
}

/* dx of one element of channel c: gamma istd (dy - dbeta / M - xhat dgamma
 * / M), M = batch hw, from the channel's sums (dcz_tk_bn_param_grads). */
DCZ_HD float dcz_tk_bn_dx(float dy, float x, float gamma, float mean, float istd, double sdy, double sdyx,
                          uint64_t M)
{
    const double k = (double)gamma * istd, a = sdy / (double)M, b = sdyx / (double)M;
    return (float)(k * ((double)dy - a - ((double)x - mean) * istd * b));
}

/* ---- convolution --------------------------------------------------------------- */

/* dx of input cell i (of in_c in_h in_w) of sample b of a convolution of
 * one group run as a product over its patches: the gradient of the
 * patches transposed, dcolt (in_c kh kw, batch out_h out_w) as cuBLAS
 * writes it (dcz_gk_patch_taps's layout), summed over every patch entry
 * that copied the cell, taps in order. */
DCZ_HD float dcz_tk_col2im(const dcz_conv_geom *g, const float *dcolt, uint32_t batch, uint32_t b, uint32_t i)
{
    const uint32_t hw = g->in_h * g->in_w, ic = i / hw, iy = i % hw / g->in_w, ix = i % g->in_w;
    const uint64_t ohw = (uint64_t)g->out_h * g->out_w, stride = (uint64_t)batch * ohw;
    float s = 0.0f;
    for (uint32_t ky = 0; ky < g->kh; ky++) {
        const int64_t ty = (int64_t)iy + g->ph - ky;   /* oy sh */
        if (ty < 0 || ty % g->sh || ty / g->sh >= g->out_h) continue;
        for (uint32_t kx = 0; kx < g->kw; kx++) {
            const int64_t tx = (int64_t)ix + g->pw - kx;
            if (tx < 0 || tx % g->sw || tx / g->sw >= g->out_w) continue;
            const uint64_t row = ((uint64_t)ic * g->kh + ky) * g->kw + kx;
            s += dcolt[row * stride + b * ohw + (uint64_t)(ty / g->sh) * g->out_w + (uint64_t)(tx / g->sw)];
        }
    }
    return s;
}

/* dx of input cell i of one sample of a convolution with weights w
 * (out_c, in_c / groups, kh, kw) run directly (grouped and depthwise
 * layers): over the output channels of the cell's group, then the taps
 * that read it. */
DCZ_HD float dcz_tk_conv_dx(const dcz_conv_geom *g, const float *w, const float *dy, uint32_t i)
{
    const uint32_t hw = g->in_h * g->in_w, ic = i / hw, iy = i % hw / g->in_w, ix = i % g->in_w;
    const uint32_t groups = g->group ? g->group : 1, gin = g->in_c / groups, gout = g->out_c / groups;
    const uint32_t grp = ic / gin, c = ic % gin, ohw = g->out_h * g->out_w;
    float s = 0.0f;
    for (uint32_t oc = grp * gout; oc < (grp + 1) * gout; oc++) {
        const float *row = w + ((uint64_t)oc * gin + c) * g->kh * g->kw;
        for (uint32_t ky = 0; ky < g->kh; ky++) {
            const int64_t ty = (int64_t)iy + g->ph - ky;
            if (ty < 0 || ty % g->sh || ty / g->sh >= g->out_h) continue;
            for (uint32_t kx = 0; kx < g->kw; kx++) {
                const int64_t tx = (int64_t)ix + g->pw - kx;
                if (tx < 0 || tx % g->sw || tx / g->sw >= g->out_w) continue;
                s += row[ky * g->kw + kx] * dy[(uint64_t)oc * ohw + (uint64_t)(ty / g->sh) * g->out_w + tx / g->sw];
            }
        }
    }
    return s;
}

/* Part p of the gradient of weight j (oc, c, ky, kx) of a convolution run
 * directly: over the rows (b, oy) of the batch's output planes in part p,
 * each output that reads through the weight, dy x in double. */
DCZ_HD double dcz_tk_conv_dw_part(const dcz_conv_geom *g, const float *x, const float *dy, uint32_t batch, uint64_t j,
                                  uint32_t p)
{
    const uint32_t groups = g->group ? g->group : 1, gin = g->in_c / groups, taps = g->kh * g->kw;
    const uint32_t oc = (uint32_t)(j / ((uint64_t)gin * taps)), c = (uint32_t)(j / taps % gin);
    const uint32_t ky = (uint32_t)(j % taps) / g->kw, kx = (uint32_t)(j % taps) % g->kw;
    const uint32_t ic = oc / (g->out_c / groups) * gin + c, hw = g->in_h * g->in_w, ohw = g->out_h * g->out_w;
    const uint64_t rows = (uint64_t)batch * g->out_h, hi = dcz_tk_part_lo(rows, p + 1);
    double s = 0;
    for (uint64_t r = dcz_tk_part_lo(rows, p); r < hi; r++) {
        const uint32_t b = (uint32_t)(r / g->out_h), oy = (uint32_t)(r % g->out_h);
        const int64_t iy = (int64_t)oy * g->sh - g->ph + ky;
        if (iy < 0 || iy >= g->in_h) continue;
        const float *xr = x + ((uint64_t)b * g->in_c + ic) * hw + (uint64_t)iy * g->in_w;
        const float *dr = dy + ((uint64_t)b * g->out_c + oc) * ohw + (uint64_t)oy * g->out_w;
        for (uint32_t ox = 0; ox < g->out_w; ox++) {
            const int64_t ix = (int64_t)ox * g->sw - g->pw + kx;
            if (ix >= 0 && ix < g->in_w) s += (double)dr[ox] * xr[ix];
        }
    }
    return s;
}

/* The gradient of weight j of a convolution run directly: its parts'
 * sum. */
DCZ_HD float dcz_tk_conv_dw(const dcz_conv_geom *g, const float *x, const float *dy, uint32_t batch, uint64_t j)
{
    double s = 0;
    const uint32_t parts = dcz_tk_parts((uint64_t)batch * g->out_h);
    for (uint32_t p = 0; p < parts; p++) s += dcz_tk_conv_dw_part(g, x, dy, batch, j, p);
    return (float)s;
}

#endif /* DCZ_TRAIN_TKERN_H */
