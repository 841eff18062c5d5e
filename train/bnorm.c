/* bnorm.c: batch normalization of the training engine (Ioffe and Szegedy,
 * 2015), per channel c over the M = batch*H*W values of the channel:
 *   training:  mean = sum x / M, var = sum (x - mean)^2 / M (biased),
 *              xhat = (x - mean) / sqrt(var + eps), y = gamma xhat + beta;
 *              running mean and variance move by bn_momentum toward mean and
 *              the unbiased variance var * M / (M - 1);
 *   inference: the same with the running statistics.
 * Backward (training): dbeta = sum dy, dgamma = sum dy xhat,
 *   dx = gamma / sqrt(var + eps) (dy - dbeta / M - xhat dgamma / M).
 * The forward pass keeps mean and 1 / sqrt(var + eps) in l->cache; xhat is
 * recomputed from x. Sums run in float within a sample's plane (16
 * partial sums, vec.c) and in double across samples.
 *
 * A RELU that alone reads the output is applied here as the output is
 * written, into the buffer the RELU's output shares, and its forward pass
 * skipped (relu_after, set by dcz_net_reserve). The backward passes need
 * no values before the ReLU (the RELU masks its gradient by its output,
 * this layer recomputes xhat from x). On a Xeon at 2 threads: a twentieth
 * of an epoch of the conv-heavy CNN 3.19 -> 2.87 s, a tenth of the
 * ResNet-style preset 4.20 -> 4.02 s. Masking the RELU's gradient here too
 * (its pass skipped, the two gradients in one buffer) gained nothing
 * (2.89 against 2.92 s): the sums and dx then read the output as well.
 *
 * Checked by tests/unit/test_train.c (finite differences of the training
 * loss, folding into the previous layer, the fused ReLU against the two
 * layers run apart).
 *
 * Channels are independent, so a pass splits them over the trainer's threads
 * (dcz_train_par); the sums of one channel stay on one thread, in one order.
 */
#include <math.h>

#include "train/internal.h"

/* The output of a plane: y = x scale + shift, through the ReLU after the
 * layer where it applies it (relu_after). */
static void affine_out(const dcz_tlayer *l, float *y, const float *x, float scale, float shift, size_t n)
{
    if (l->relu_after) dcz_vaffine_relu(y, x, scale, shift, n);
    else dcz_vaffine(y, x, scale, shift, n);
}

/* Floats of a channel range a thread takes at least. */
#define BN_GRAIN_FLOATS 16384

/* One pass over channels [lo, hi) of a batch: every channel's statistics,
 * output and gradients are its own, so the channels split over the threads. */
typedef struct bn_job {
    dcz_tlayer *l;
    const float *x, *dy;
    float *y, *dx;
    int batch;
} bn_job;

static void infer_part(void *ctx, size_t lo, size_t hi)
{
    const bn_job *j = ctx;
    const dcz_tlayer *l = j->l;
    const size_t C = (size_t)l->in_c, hw = (size_t)l->in_h * l->in_w;
    for (size_t c = lo; c < hi; c++) {
        float scale = l->w[c] / sqrtf(l->run_var[c] + l->eps);
        float shift = l->b[c] - l->run_mean[c] * scale;
        for (int n = 0; n < j->batch; n++) {
            size_t o = ((size_t)n * C + c) * hw;
            affine_out(l, j->y + o, j->x + o, scale, shift, hw);
        }
    }
}

static void train_part(void *ctx, size_t lo, size_t hi)
{
    const bn_job *j = ctx;
    dcz_tlayer *l = j->l;
    const size_t C = (size_t)l->in_c, hw = (size_t)l->in_h * l->in_w, M = (size_t)j->batch * hw;
    const float *x = j->x;
    float *mean = l->cache, *istd = (float *)l->cache + C;   /* (c) each */
    const float mom = l->bn_momentum;
    for (size_t c = lo; c < hi; c++) {
        /* two passes (mean, then squared deviations): no cancellation */
        double s = 0;
        for (int n = 0; n < j->batch; n++) s += dcz_vsum(x + ((size_t)n * C + c) * hw, hw);
        double mu = s / (double)M, v = 0;
        float m = (float)mu;
        for (int n = 0; n < j->batch; n++) v += dcz_vec()->sumsq_dev(x + ((size_t)n * C + c) * hw, m, hw);
        v /= (double)M;
        float is = (float)(1.0 / sqrt(v + l->eps));
        mean[c] = m;
        istd[c] = is;
        float scale = l->w[c] * is, shift = l->b[c] - m * scale;
        for (int n = 0; n < j->batch; n++) {
            size_t o = ((size_t)n * C + c) * hw;
            affine_out(l, j->y + o, x + o, scale, shift, hw);
        }
        double unbiased = M > 1 ? v * (double)M / (double)(M - 1) : v;
        l->run_mean[c] = (1.0f - mom) * l->run_mean[c] + mom * m;
        l->run_var[c] = (1.0f - mom) * l->run_var[c] + mom * (float)unbiased;
    }
}

static void backward_part(void *ctx, size_t lo, size_t hi)
{
    const bn_job *j = ctx;
    dcz_tlayer *l = j->l;
    const size_t C = (size_t)l->in_c, hw = (size_t)l->in_h * l->in_w, M = (size_t)j->batch * hw;
    const float *mean = l->cache, *istd = (const float *)l->cache + C;
    for (size_t c = lo; c < hi; c++) {
        const float m = mean[c], is = istd[c];
        double sdy = 0, sdyx = 0;
        for (int n = 0; n < j->batch; n++) {
            size_t o = ((size_t)n * C + c) * hw;
            float a, b;
            dcz_vec()->sums_grad(j->dy + o, j->x + o, m, hw, &a, &b);
            sdy += a;
            sdyx += b;
        }
        sdyx *= is;   /* sum of dy xhat */
        l->gb[c] = (float)sdy;
        l->gw[c] = (float)sdyx;
        if (!j->dx) continue;
        /* dx = k (dy - a - xhat b) with k = gamma is, a = sdy / M, b = sdyx / M,
         * xhat = (x - m) is: dx = k dy + q x + r */
        const double k = (double)l->w[c] * is, a = sdy / (double)M, b = sdyx / (double)M;
        const float q = (float)(-k * is * b), r = (float)(-k * a + k * is * b * m);
        for (int n = 0; n < j->batch; n++) {
            size_t o = ((size_t)n * C + c) * hw;
            dcz_vlincomb(j->dx + o, j->dy + o, j->x + o, (float)k, q, r, hw);
        }
    }
}

/* Channels a part takes at least for a batch. */
static size_t grain(const dcz_tlayer *l, int batch)
{
    size_t per = (size_t)batch * (size_t)l->in_h * (size_t)l->in_w;
    return (BN_GRAIN_FLOATS + per - 1) / (per ? per : 1);
}

void dcz_bn_forward(dcz_tlayer *l, const float *x, float *y, int batch, int train)
{
    bn_job j = { .l = l, .x = x, .y = y, .batch = batch };
    dcz_train_par((size_t)l->in_c, grain(l, batch), train ? train_part : infer_part, &j);
}

void dcz_bn_backward(dcz_tlayer *l, const float *x, const float *dy, float *dx, int batch)
{
    bn_job j = { .l = l, .x = x, .dy = dy, .dx = dx, .batch = batch };
    dcz_train_par((size_t)l->in_c, grain(l, batch), backward_part, &j);
}
