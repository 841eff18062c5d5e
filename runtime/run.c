/* run.c: executing a loaded model, layer by layer, between two activation
 * buffers. Batch 1 uses the sparse matrix-vector kernel, larger batches the
 * matrix-matrix kernel; both read the compressed execution form.
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

static void run_layer(const dcz_exec_layer *l, const float *x, size_t batch, float *y)
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
        run_layer(&m->layers[i], x, batch, y);
        x = y;
    }
    memcpy(output, x, batch * m->out_size * sizeof *output);
    return DCZ_OK;
}
