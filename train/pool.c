/* pool.c: pooling layers of the training engine, forward and backward:
 * max pooling (the argmax of each window kept for the backward pass),
 * average pooling (padded cells counted in the divisor or not) and global
 * average pooling.
 *
 * A window of output (oh, ow) covers input rows oh*sh - ph .. + kh - 1 and
 * columns alike; cells outside the input are padding. Padding never wins a
 * max (only real cells are compared; every window holds at least one since
 * padding < window) and adds 0 to an average. Backward: max pooling sends
 * each output gradient to its argmax, average pooling spreads it evenly over
 * the real cells of the window (divided by the same divisor), global
 * average pooling over the whole plane.
 *
 * Checked by tests/unit/test_train.c (finite differences through a network,
 * both divisor modes).
 */
#include <stdint.h>
#include <string.h>

#include "train/internal.h"

/* g when keep is 1, +0 when it is 0, through a bit mask: compilers turn a
 * select into a branch, which mispredicts on three cells of four. */
static inline float masked(float g, uint32_t keep)
{
    uint32_t bits;
    memcpy(&bits, &g, sizeof bits);
    bits &= 0u - keep;
    memcpy(&g, &bits, sizeof g);
    return g;
}

/* Real rows [*lo, *hi) of the window starting at a (may be negative). */
static void window_rows(int a, int k, int n, int *lo, int *hi)
{
    *lo = a < 0 ? 0 : a;
    *hi = a + k < n ? a + k : n;
}

static void gap_forward(const dcz_tlayer *l, const float *x, float *y, int batch)
{
    size_t planes = (size_t)batch * l->in_c, hw = (size_t)l->in_h * l->in_w;
    float inv = 1.0f / (float)hw;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * hw;
        float s = 0.0f;
        for (size_t j = 0; j < hw; j++) s += xp[j];
        y[p] = s * inv;
    }
}

/* The common 2x2 stride 2 max pooling without padding, branch free: the
 * first maximum in row-major order wins, as in the general loop. */
static void max2x2_forward(const dcz_tlayer *l, const float *x, float *y, int32_t *arg,
                           int batch)
{
    const int W = l->in_w, OH = l->out_h, OW = l->out_w;
    size_t planes = (size_t)batch * l->in_c, hw = (size_t)l->in_h * W, ohw = (size_t)OH * OW;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * hw;
        float *yp = y + p * ohw;
        int32_t *ap = arg ? arg + p * ohw : NULL;
        for (int oh = 0; oh < OH; oh++) {
            const float *r0 = xp + (size_t)(2 * oh) * W, *r1 = r0 + W;
            float *yr = yp + (size_t)oh * OW;
            if (!ap) {
                for (int ow = 0; ow < OW; ow++) {
                    float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
                    float top = b > a ? b : a, bot = d > c ? d : c;
                    yr[ow] = bot > top ? bot : top;
                }
                continue;
            }
            int32_t *ar = ap + (size_t)oh * OW;
            for (int ow = 0; ow < OW; ow++) {
                int j = 2 * ow;
                float a = r0[j], b = r0[j + 1], c = r1[j], d = r1[j + 1];
                int tb = b > a, bb = d > c;
                float top = tb ? b : a, bot = bb ? d : c;
                int wb = bot > top;
                yr[ow] = wb ? bot : top;
                /* arithmetic, not a select: compilers turn a select into a
                 * branch that mispredicts on half the windows */
                ar[ow] = 2 * oh * W + j + tb + wb * (W + bb - tb);
            }
        }
    }
}

void dcz_pool_forward(dcz_tlayer *l, const float *x, float *y, int batch, int train)
{
    if (l->op == DCZ_OP_GLOBAL_AVGPOOL) {
        gap_forward(l, x, y, batch);
        return;
    }
    int32_t *arg = l->op == DCZ_OP_MAXPOOL && train ? l->cache : NULL;   /* (batch, out) */
    if (l->op == DCZ_OP_MAXPOOL && l->kh == 2 && l->kw == 2 && l->sh == 2 && l->sw == 2 &&
        l->ph == 0 && l->pw == 0) {
        max2x2_forward(l, x, y, arg, batch);
        return;
    }
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    const int is_max = l->op == DCZ_OP_MAXPOOL;
    size_t planes = (size_t)batch * l->in_c, hw = (size_t)H * W, ohw = (size_t)OH * OW;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * hw;
        float *yp = y + p * ohw;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            window_rows(oh * l->sh - l->ph, l->kh, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                window_rows(ow * l->sw - l->pw, l->kw, W, &w0, &w1);
                size_t o = (size_t)oh * OW + ow;
                if (is_max) {
                    int bi = h0 * W + w0;
                    float best = xp[bi];
                    for (int i = h0; i < h1; i++)
                        for (int j = w0; j < w1; j++)
                            if (xp[i * W + j] > best) { best = xp[i * W + j]; bi = i * W + j; }
                    yp[o] = best;
                    if (arg) arg[p * ohw + o] = bi;
                } else {
                    float s = 0.0f;
                    for (int i = h0; i < h1; i++)
                        for (int j = w0; j < w1; j++) s += xp[i * W + j];
                    int div = l->count_include_pad ? l->kh * l->kw : (h1 - h0) * (w1 - w0);
                    yp[o] = s / (float)div;
                }
            }
        }
    }
}

void dcz_pool_backward(const dcz_tlayer *l, const float *dy, float *dx, int batch)
{
    const int H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    size_t planes = (size_t)batch * l->in_c, hw = (size_t)H * W, ohw = (size_t)OH * OW;
    if (l->op == DCZ_OP_GLOBAL_AVGPOOL) {
        float inv = 1.0f / (float)hw;
        for (size_t p = 0; p < planes; p++) {
            float g = dy[p] * inv;
            for (size_t j = 0; j < hw; j++) dx[p * hw + j] = g;
        }
        return;
    }
    if (l->op == DCZ_OP_MAXPOOL && l->kh == 2 && l->kw == 2 && l->sh == 2 && l->sw == 2 &&
        l->ph == 0 && l->pw == 0 && H == 2 * OH && W == 2 * OW) {
        /* the windows tile the input: every cell is written, no memset */
        const int32_t *arg = l->cache;   /* (batch, out) */
        for (size_t p = 0; p < planes; p++) {
            float *xp = dx + p * hw;
            const float *yp = dy + p * ohw;
            const int32_t *ap = arg + p * ohw;
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    size_t o = (size_t)oh * OW + ow;
                    int base = 2 * oh * W + 2 * ow, a = ap[o] - base;
                    float g = yp[o];
                    xp[base] = masked(g, a == 0);
                    xp[base + 1] = masked(g, a == 1);
                    xp[base + W] = masked(g, a == W);
                    xp[base + W + 1] = masked(g, a == W + 1);
                }
        }
        return;
    }
    memset(dx, 0, planes * hw * sizeof(float));
    if (l->op == DCZ_OP_MAXPOOL) {
        const int32_t *arg = l->cache;   /* (batch, out) */
        for (size_t p = 0; p < planes; p++) {
            float *xp = dx + p * hw;
            const float *yp = dy + p * ohw;
            const int32_t *ap = arg + p * ohw;
            for (size_t o = 0; o < ohw; o++) xp[ap[o]] += yp[o];
        }
        return;
    }
    for (size_t p = 0; p < planes; p++) {
        float *xp = dx + p * hw;
        const float *yp = dy + p * ohw;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            window_rows(oh * l->sh - l->ph, l->kh, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                window_rows(ow * l->sw - l->pw, l->kw, W, &w0, &w1);
                int div = l->count_include_pad ? l->kh * l->kw : (h1 - h0) * (w1 - w0);
                float g = yp[(size_t)oh * OW + ow] / (float)div;
                for (int i = h0; i < h1; i++)
                    for (int j = w0; j < w1; j++) xp[i * W + j] += g;
            }
        }
    }
}
