/* fold.c: batch normalization folded into the weighted layer that computes
 * its input, the one formula that the ONNX importer (an inference
 * BatchNormalization) and the trainer apply, and the document's
 * training-only layers folded or dropped (dcz_doc_fold).
 *
 * Checked by tests/unit/test_train.c (a folded net gives the outputs of
 * the net with batch norm; what cannot fold is refused) and
 * tests/unit/test_onnx.c (an imported Conv + BatchNormalization gives
 * PyTorch's outputs).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/doc.h"

void dcz_fold_batchnorm(float *w, float *b, size_t rows, size_t cols, const float *gamma,
                        const float *beta, const float *mean, const float *var, float eps)
{
    /* w' = w g, b' = (b - mean) g + beta, g = gamma / sqrt(var + eps), in double */
    for (size_t o = 0; o < rows; o++) {
        const double g = (double)gamma[o] / sqrt((double)var[o] + (double)eps);
        float *row = w + o * cols;
        for (size_t i = 0; i < cols; i++) row[i] = (float)((double)row[i] * g);
        b[o] = (float)(((double)b[o] - mean[o]) * g + beta[o]);
    }
}

/* The layer BATCHNORM layer i folds into: the weighted layer whose output
 * it reads, read by nothing else, its weight dense F32 with a row per
 * channel; every statistic usable. DCZ_ERR_UNSUPPORTED otherwise. */
static dcz_status fold_target(const dcz_doc *d, uint32_t i, const uint32_t *readers, uint32_t *p_out)
{
    const dcz_doc_layer *bn = &d->layers[i];
    const uint32_t t = bn->in[0];
    if (bn->nin != 1 || t == 0 || readers[t] != 1 || bn->ntensors != 4) return DCZ_ERR_UNSUPPORTED;
    const dcz_doc_layer *p = &d->layers[t - 1];
    const dcz_op_info *o = dcz_op_get(p->op);
    const dcz_doc_tensor *w = &p->t[0], *b = &p->t[1];
    const size_t c = bn->t[0].n;
    if (!o || !o->weighted || p->ntensors != 2 || w->enc != DCZ_ENC_F32 || w->mask || !w->values ||
        !b->values || b->n != c || c == 0 || w->n % c != 0)
        return DCZ_ERR_UNSUPPORTED;
    const float eps = dcz_attr_f32(bn->attr[0]);
    for (uint32_t j = 0; j < 4; j++)
        if (bn->t[j].n != c || !bn->t[j].values) return DCZ_ERR_UNSUPPORTED;
    for (size_t k = 0; k < c; k++)
        if (!((double)bn->t[3].values[k] + eps > 0)) return DCZ_ERR_UNSUPPORTED;
    *p_out = t - 1;
    return DCZ_OK;
}

dcz_status dcz_doc_fold(dcz_doc *d)
{
    if (!d || d->nlayers == 0) return DCZ_ERR_ARG;
    const uint32_t n = d->nlayers;
    uint32_t *readers = calloc((size_t)n + 1, sizeof *readers);
    uint32_t *target = malloc((size_t)n * sizeof *target);
    uint32_t *alias = malloc(((size_t)n + 1) * sizeof *alias);   /* taken before anything changes */
    dcz_status st = readers && target && alias ? DCZ_OK : DCZ_ERR_NOMEM;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n && st == DCZ_OK; i++)
        for (uint32_t k = 0; k < d->layers[i].nin; k++)
            if (d->layers[i].in[k] > i) st = DCZ_ERR_ARG;
            else readers[d->layers[i].in[k]]++;
    for (uint32_t i = 0; i < n && st == DCZ_OK; i++) {
        const uint16_t op = d->layers[i].op;
        if (op == DCZ_OP_BATCHNORM) st = fold_target(d, i, readers, &target[i]);
        else if (op != DCZ_OP_DROPOUT) kept++;
    }
    if (st == DCZ_OK && kept == 0) st = DCZ_ERR_UNSUPPORTED;
    free(readers);
    if (st != DCZ_OK) {
        free(target);
        free(alias);
        return st;
    }
    for (uint32_t i = 0; i < n; i++) {
        dcz_doc_layer *bn = &d->layers[i];
        if (bn->op != DCZ_OP_BATCHNORM) continue;
        dcz_doc_layer *p = &d->layers[target[i]];
        const size_t c = bn->t[0].n;
        dcz_fold_batchnorm(p->t[0].values, p->t[1].values, c, p->t[0].n / c, bn->t[0].values,
                           bn->t[1].values, bn->t[2].values, bn->t[3].values,
                           dcz_attr_f32(bn->attr[0]));
    }
    free(target);
    /* a folded or dropped layer's output is its input; the others are
     * numbered anew */
    uint32_t m = 0;
    alias[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        dcz_doc_layer *l = &d->layers[i];
        for (uint32_t k = 0; k < l->nin; k++) l->in[k] = alias[l->in[k]];
        if (l->op == DCZ_OP_BATCHNORM || l->op == DCZ_OP_DROPOUT) {
            alias[i + 1] = l->in[0];
            for (uint32_t j = 0; j < DCZ_MAX_TENSORS; j++) dcz_doc_tensor_clear(&l->t[j]);
            continue;
        }
        alias[i + 1] = m + 1;
        if (m != i) d->layers[m] = *l;
        m++;
    }
    free(alias);
    memset(&d->layers[m], 0, (size_t)(n - m) * sizeof *d->layers);
    d->nlayers = m;
    dcz_doc_calib_free(d->calib);   /* the weights changed */
    d->calib = NULL;
    return DCZ_OK;
}
