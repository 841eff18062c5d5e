/* run.c: executing a loaded model, layer by layer, between two activation
 * buffers sized by the model's largest activation. Dense layers with sparse
 * weights use the matrix-vector kernel at batch 1 and the matrix-matrix
 * kernel above; sparse convolutions use the direct sparse kernel, or im2col
 * and the matrix-matrix kernel on small output planes (the choice and the
 * measurements behind it: kernels_conv.c). All of them read the compressed
 * execution form. The im2col scratch is sized and placed at load.
 *
 * Checked by tests/unit/test_format.c and tests/unit/test_kernels.c, and
 * end to end by tests/cli (dcz eval equals the accuracy each stage reports).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"

static dcz_status ensure_act(dcz_model *m, size_t batch)
{
    if (batch <= m->act_batch) return DCZ_OK;
    if (batch > SIZE_MAX / 2 / sizeof(float) / m->max_width) return DCZ_ERR_NOMEM;
    float *a = realloc(m->act, 2 * batch * m->max_width * sizeof(float));
    if (!a) return DCZ_ERR_NOMEM;
    m->act = a;
    m->act_batch = batch;
    return DCZ_OK;
}

static void run_layer(const dcz_model *m, const dcz_exec_layer *l, const float *x, size_t batch,
                      float *y)
{
    switch (l->kernel) {
    case DCZ_K_DENSE_F32:
        dcz_dense_f32_ref(l->w, l->bias, x, batch, l->in, l->out, y);
        break;
    case DCZ_K_SPARSE_F32:
    case DCZ_K_SPARSE_CB:
        if (batch == 1) dcz_spmv_ref(&l->sp, l->bias, x, y);
        else dcz_spmm_ref(&l->sp, l->bias, x, batch, y);
        break;
    case DCZ_K_CONV_DENSE_F32:
        dcz_conv2d_dense(&l->geom, l->w, l->bias, x, batch, y);
        break;
    case DCZ_K_CONV_SPARSE_F32:
    case DCZ_K_CONV_SPARSE_CB:
        if (l->im2col) dcz_conv2d_sparse_im2col(&l->geom, &l->sp, l->bias, x, batch, m->scratch, y);
        else dcz_conv2d_sparse_direct(&l->geom, &l->sp, l->bias, x, batch, y);
        break;
    case DCZ_K_MAXPOOL:
        dcz_maxpool_ref(&l->geom, x, batch, y);
        break;
    case DCZ_K_AVGPOOL:
        dcz_avgpool_ref(&l->geom, l->count_include_pad, x, batch, y);
        break;
    case DCZ_K_GLOBAL_AVGPOOL:
        dcz_global_avgpool_ref(l->geom.in_c, l->geom.in_h * l->geom.in_w, x, batch, y);
        break;
    case DCZ_K_FLATTEN: /* the data of (C, H, W) in C order is already flat */
        memcpy(y, x, batch * l->in * sizeof *y);
        break;
    case DCZ_K_RELU:
        memcpy(y, x, batch * l->in * sizeof *y);
        dcz_relu_ref(y, batch * l->in);
        break;
    case DCZ_K_SOFTMAX:
        memcpy(y, x, batch * l->in * sizeof *y);
        dcz_softmax_ref(y, batch, l->in);
        break;
    }
}

dcz_status dcz_run(dcz_model *m, const float *input, size_t batch, float *output)
{
    if (!m || (batch && (!input || !output))) return DCZ_ERR_ARG;
    if (batch == 0) return DCZ_OK;
    dcz_status s = ensure_act(m, batch);
    if (s != DCZ_OK) return s;
    float *buf[2] = { m->act, m->act + batch * m->max_width };
    const float *x = input;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        float *y = buf[i & 1];
        run_layer(m, &m->layers[i], x, batch, y);
        x = y;
    }
    memcpy(output, x, batch * m->out_size * sizeof *output);
    return DCZ_OK;
}
