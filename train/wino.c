/* wino.c: the forward pass of a 3x3 convolution of stride 1 and its
 * input's gradient by Winograd's F(2x2, 3x3) (libdcz's kernels_wino.c
 * computes it), over the trainer's threads.
 *
 * The input's gradient is a convolution of the same kind (plan_of): at
 * stride 1 the adjoint of the layer's convolution reads dy padded by
 * 2 - p with the weights turned by 180 degrees and input and output
 * channels exchanged, and writes every pixel of dx (OH + 2 (2 - p) - 2 = H
 * when OH = H + 2 p - 2). The weights' gradient
 * stays with the columns (conv.c).
 *
 * The scratch: U (the weights' transform, made once a pass, which every
 * slot reads), then a slot per thread of dcz_wino's scratch; a slot takes
 * whole samples.
 */
#include <string.h>

#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/wino.h"
#include "train/internal.h"

/* The convolution the transforms run: the layer's (grad 0), or the one
 * that takes dy to dx (grad 1; a padding past 2 wraps to one the rule
 * declines). */
static dcz_conv_geom geom_of(const dcz_tlayer *l, int grad)
{
    const uint32_t ic = (uint32_t)l->in_c, ih = (uint32_t)l->in_h, iw = (uint32_t)l->in_w;
    const uint32_t oc = (uint32_t)l->out_c, oh = (uint32_t)l->out_h, ow = (uint32_t)l->out_w;
    const dcz_conv_geom f = { ic, ih, iw, oc, oh, ow, (uint32_t)l->kh, (uint32_t)l->kw, (uint32_t)l->sh,
                              (uint32_t)l->sw, (uint32_t)l->ph, (uint32_t)l->pw, (uint32_t)dcz_tlayer_groups(l) };
    const dcz_conv_geom b = { oc, oh, ow, ic, ih, iw, f.kh, f.kw, f.sh, f.sw, 2 - f.ph, 2 - f.pw, f.group };
    return grad ? b : f;
}

static dcz_wino plan_of(const dcz_tlayer *l, int grad)
{
    const dcz_conv_geom g = geom_of(l, grad);
    dcz_wino p;
    dcz_wino_init_geom(&p, &g);
    return p;
}

int dcz_wino_fits(const dcz_tlayer *l)
{
    const dcz_conv_geom f = geom_of(l, 0), b = geom_of(l, 1);
    return dcz_wino_fits_geom(&f) && dcz_wino_fits_geom(&b);
}

static size_t work_floats_of(const dcz_wino *g)
{
    return dcz_wino_weights_floats(g) + (size_t)dcz_train_threads() * g->scratch;
}

size_t dcz_wino_work_floats(const dcz_tlayer *l)
{
    const dcz_wino f = plan_of(l, 0), b = plan_of(l, 1);
    const size_t a = work_floats_of(&f), c = work_floats_of(&b);
    return a > c ? a : c;
}

typedef struct wino_job {
    const float *x, *bias;   /* bias NULL: none */
    float *y, *work;
    dcz_wino g;
    size_t slots;
    int batch, ref;
} wino_job;

static void wino_slots(void *ctx, size_t k0, size_t k1)
{
    const wino_job *j = ctx;
    const size_t shared = dcz_wino_weights_floats(&j->g);
    for (size_t k = k0; k < k1; k++) {
        const size_t n0 = (size_t)j->batch * k / j->slots, n1 = (size_t)j->batch * (k + 1) / j->slots;
        dcz_wino_conv(&j->g, j->work, j->bias, NULL, j->x + n0 * j->g.in, n1 - n0, j->ref,
                      j->work + shared + k * j->g.scratch, j->y + n0 * j->g.out);
    }
}

static int wino_run(const dcz_tlayer *l, int grad, const float *x, float *y, int batch, float *work,
                    size_t work_floats, int ref)
{
    wino_job j = { .x = x, .bias = grad ? NULL : l->b, .y = y, .work = work, .g = plan_of(l, grad),
                   .batch = batch, .ref = ref };
    const size_t shared = dcz_wino_weights_floats(&j.g);
    size_t s = work_floats > shared ? (work_floats - shared) / j.g.scratch : 0;
    const size_t t = (size_t)dcz_train_threads();
    if (s > t) s = t;
    if (s > (size_t)batch) s = (size_t)batch;
    if (s == 0 || batch <= 0) return 0;
    j.slots = s;
    /* through the first slot's scratch, unused yet */
    dcz_wino_weights(&j.g, l->w, grad, work, work + shared);
    dcz_train_par(j.slots, 1, wino_slots, &j);
    return 1;
}

int dcz_wino_forward(const dcz_tlayer *l, const float *x, float *y, int batch, float *work, size_t work_floats)
{
    return wino_run(l, 0, x, y, batch, work, work_floats, 0);
}

int dcz_wino_forward_ref(const dcz_tlayer *l, const float *x, float *y, int batch, float *work,
                         size_t work_floats)
{
    return wino_run(l, 0, x, y, batch, work, work_floats, 1);
}

int dcz_wino_input_grad(const dcz_tlayer *l, const float *dy, float *dx, int batch, float *work,
                        size_t work_floats)
{
    return wino_run(l, 1, dy, dx, batch, work, work_floats, 0);
}

int dcz_wino_input_grad_ref(const dcz_tlayer *l, const float *dy, float *dx, int batch, float *work,
                            size_t work_floats)
{
    return wino_run(l, 1, dy, dx, batch, work, work_floats, 1);
}
