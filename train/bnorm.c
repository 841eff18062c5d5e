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
 * A RELU or a CLIP that alone reads the output is applied here as the
 * output is written, into the buffer the activation's output shares, and
 * its forward pass skipped (act_after, set by dcz_net_reserve). The
 * backward passes need no values before it: the RELU masks its gradient
 * by its output, the CLIP by its input lo < x < hi, which holds of the
 * clipped values exactly where it holds of x (a clipped value is x, lo or
 * hi, and lo and hi fail the test; NaN fails it either way), and this
 * layer recomputes xhat from x. On a Xeon at 2 threads: a twentieth of an
 * epoch of the conv-heavy CNN 3.19 -> 2.87 s, a tenth of the ResNet-style
 * preset 4.20 -> 4.02 s. Masking the RELU's gradient here too (its pass
 * skipped, the two gradients in one buffer) gained nothing (2.89 against
 * 2.92 s): the sums and dx then read the output as well. The CLIP (ReLU6)
 * on an AMD EPYC (Zen 4), alternated runs
 * of a twentieth of an epoch of the MobileNetV2-style preset, whose ReLU6s
 * all follow batch norms: 6.10-6.72 -> 5.81-6.00 s at one thread,
 * 4.03-4.38 -> 3.79-4.30 s at two.
 *
 * Checked by tests/unit/test_train.c (finite differences of the training
 * loss, folding into the previous layer, the fused ReLU and Clip against
 * the two layers run apart).
 *
 * Channels are independent, so a pass splits them over the trainer's threads
 * (dcz_train_par); the sums of one channel stay on one thread, in one order.
 */
#include <math.h>

#include "train/internal.h"

/* The output of a plane: y = x scale + shift, through the activation
 * after the layer where it applies it (act_after). */
static void affine_out(const dcz_tlayer *l, float *y, const float *x, float scale, float shift, size_t n)
{
    if (l->act_after == DCZ_OP_RELU) dcz_vaffine_relu(y, x, scale, shift, n);
    else if (l->act_after == DCZ_OP_CLIP) dcz_vaffine_clip(y, x, scale, shift, l->act_lo, l->act_hi, n);
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

/* Channels a pass takes at a time: each phase of a pass goes over the
 * samples in turn, and over a block's channels within each, so that it
 * reads and writes each sample's channels as one run of memory, which the
 * prefetchers follow (a channel at a time over every sample jumped a
 * whole sample from plane to plane); the sums across samples wait in
 * arrays of a block. A channel's sums and outputs are the same: its
 * samples in the same order. */
#define BN_BLOCK 64

/* The outputs of block channels [c0, c0 + nb) of every sample, sample by
 * sample: y = x scale[i] + shift[i] (affine_out). */
static void block_out(const bn_job *j, const float *scale, const float *shift, size_t c0, size_t nb)
{
    const dcz_tlayer *l = j->l;
    const size_t C = (size_t)l->in_c, hw = (size_t)l->in_h * l->in_w;
    for (int n = 0; n < j->batch; n++)
        for (size_t i = 0; i < nb; i++) {
            const size_t o = ((size_t)n * C + c0 + i) * hw;
            affine_out(l, j->y + o, j->x + o, scale[i], shift[i], hw);
        }
}

static void infer_part(void *ctx, size_t lo, size_t hi)
{
    const bn_job *j = ctx;
    const dcz_tlayer *l = j->l;
    float scale[BN_BLOCK], shift[BN_BLOCK];
    for (size_t c0 = lo; c0 < hi; c0 += BN_BLOCK) {
        const size_t nb = hi - c0 < BN_BLOCK ? hi - c0 : BN_BLOCK;
        for (size_t i = 0; i < nb; i++) {
            const size_t c = c0 + i;
            scale[i] = l->w[c] / sqrtf(l->run_var[c] + l->eps);
            shift[i] = l->b[c] - l->run_mean[c] * scale[i];
        }
        block_out(j, scale, shift, c0, nb);
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
    double s[BN_BLOCK], v[BN_BLOCK];
    float scale[BN_BLOCK], shift[BN_BLOCK];
    for (size_t c0 = lo; c0 < hi; c0 += BN_BLOCK) {
        const size_t nb = hi - c0 < BN_BLOCK ? hi - c0 : BN_BLOCK;
        /* two passes (mean, then squared deviations): no cancellation */
        for (size_t i = 0; i < nb; i++) s[i] = v[i] = 0;
        for (int n = 0; n < j->batch; n++)
            for (size_t i = 0; i < nb; i++) s[i] += dcz_vsum(x + ((size_t)n * C + c0 + i) * hw, hw);
        for (size_t i = 0; i < nb; i++) mean[c0 + i] = (float)(s[i] / (double)M);
        for (int n = 0; n < j->batch; n++)
            for (size_t i = 0; i < nb; i++)
                v[i] += dcz_vec()->sumsq_dev(x + ((size_t)n * C + c0 + i) * hw, mean[c0 + i], hw);
        for (size_t i = 0; i < nb; i++) {
            const size_t c = c0 + i;
            v[i] /= (double)M;
            const float m = mean[c], is = (float)(1.0 / sqrt(v[i] + l->eps));
            istd[c] = is;
            scale[i] = l->w[c] * is;
            shift[i] = l->b[c] - m * scale[i];
            const double unbiased = M > 1 ? v[i] * (double)M / (double)(M - 1) : v[i];
            l->run_mean[c] = (1.0f - mom) * l->run_mean[c] + mom * m;
            l->run_var[c] = (1.0f - mom) * l->run_var[c] + mom * (float)unbiased;
        }
        block_out(j, scale, shift, c0, nb);
    }
}

static void backward_part(void *ctx, size_t lo, size_t hi)
{
    const bn_job *j = ctx;
    dcz_tlayer *l = j->l;
    const size_t C = (size_t)l->in_c, hw = (size_t)l->in_h * l->in_w, M = (size_t)j->batch * hw;
    const float *mean = l->cache, *istd = (const float *)l->cache + C;
    double sdy[BN_BLOCK], sdyx[BN_BLOCK];
    float k[BN_BLOCK], q[BN_BLOCK], r[BN_BLOCK];
    for (size_t c0 = lo; c0 < hi; c0 += BN_BLOCK) {
        const size_t nb = hi - c0 < BN_BLOCK ? hi - c0 : BN_BLOCK;
        for (size_t i = 0; i < nb; i++) sdy[i] = sdyx[i] = 0;
        for (int n = 0; n < j->batch; n++)
            for (size_t i = 0; i < nb; i++) {
                const size_t o = ((size_t)n * C + c0 + i) * hw;
                float a, b;
                dcz_vec()->sums_grad(j->dy + o, j->x + o, mean[c0 + i], hw, &a, &b);
                sdy[i] += a;
                sdyx[i] += b;
            }
        for (size_t i = 0; i < nb; i++) {
            const size_t c = c0 + i;
            const float m = mean[c], is = istd[c];
            sdyx[i] *= is;   /* sum of dy xhat */
            l->gb[c] = (float)sdy[i];
            l->gw[c] = (float)sdyx[i];
            /* dx = k (dy - a - xhat b) with k = gamma is, a = sdy / M, b = sdyx / M,
             * xhat = (x - m) is: dx = k dy + q x + r */
            const double kk = (double)l->w[c] * is, a = sdy[i] / (double)M, b = sdyx[i] / (double)M;
            k[i] = (float)kk;
            q[i] = (float)(-kk * is * b);
            r[i] = (float)(-kk * a + kk * is * b * m);
        }
        if (!j->dx) continue;
        for (int n = 0; n < j->batch; n++)
            for (size_t i = 0; i < nb; i++) {
                const size_t o = ((size_t)n * C + c0 + i) * hw;
                dcz_vlincomb(j->dx + o, j->dy + o, j->x + o, k[i], q[i], r[i], hw);
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
