/* shrink.c: removes the units of fully connected layers that nothing reads.
 *
 * A unit u of a DENSE layer feeds, through activations that act on each
 * element alone (the op table's in_place ops of one input, and FLATTEN),
 * column u of the one DENSE layer that reads it. When that column stores no
 * weight, the unit's value is multiplied by nothing: its row of weights,
 * its bias and the (empty) column can go, and every output of the model
 * stays the same, bit for bit. Pruning that learns which weights matter
 * (variational dropout) empties most of a unit's column and row together:
 * on LeNet-300-100 it leaves 67 of fc1's 300 units and 55 of fc2's 100
 * read. Gone, they cost no bias, no positions in the mask of either layer,
 * and no time.
 *
 * Tested by tests/cli/shrink.sh (the outputs of a model with dead units
 * before and after encode, bit for bit; the widths that change and those
 * that stay).
 */
#include <stdlib.h>
#include <string.h>

#include "model/doc.h"
#include "runtime/format/ops.h"

/* The one layer that reads tensor t (j + 1 the output of layer j), or -1
 * when none or several do. */
static int only_reader(const dcz_doc *d, uint32_t t)
{
    int r = -1;
    for (uint32_t i = 0; i < d->nlayers; i++)
        for (uint32_t k = 0; k < d->layers[i].nin; k++)
            if (d->layers[i].in[k] == t) {
                if (r >= 0 && (uint32_t)r != i) return -1;
                r = (int)i;
            }
    return r;
}

/* The DENSE layer that reads layer p's units one for one through
 * element-wise layers each read once, or -1. */
static int dense_consumer(const dcz_doc *d, uint32_t p)
{
    uint32_t at = p;
    for (;;) {
        const int r = only_reader(d, at + 1);
        if (r < 0) return -1;
        const dcz_doc_layer *l = &d->layers[r];
        if (l->op == DCZ_OP_DENSE) return l->nin == 1 ? r : -1;
        const dcz_op_info *o = dcz_op_get(l->op);
        if (!o || l->nin != 1 || !(o->in_place || l->op == DCZ_OP_FLATTEN)) return -1;
        at = (uint32_t)r;
    }
}

/* Nonzero when element i of weight tensor t stores nothing that is not 0 */
static int empty_at(const dcz_doc_tensor *t, size_t i)
{
    if (t->mask && !t->mask[i]) return 1;
    return t->values[i] == 0.0f;
}

/* Keeps the rows (keep_r, dims[0] entries; NULL: all) and columns (keep_c,
 * dims[1]; NULL: all) of rank-2 tensor t, or the entries (keep_r) of a
 * rank-1 one; per-row scales follow their rows. DCZ_ERR_NOMEM leaves t as
 * it was. */
static dcz_status slice(dcz_doc_tensor *t, const uint8_t *keep_r, const uint8_t *keep_c)
{
    const size_t rows = t->dims[0], cols = t->rank == 2 ? t->dims[1] : 1;
    size_t nr = 0, nc = 0;
    for (size_t r = 0; r < rows; r++) nr += !keep_r || keep_r[r];
    for (size_t c = 0; c < cols; c++) nc += !keep_c || keep_c[c];
    const size_t n = nr * nc;
    float *values = malloc((n ? n : 1) * sizeof *values);
    uint8_t *mask = t->mask ? malloc(n ? n : 1) : NULL, *assign = t->assign ? malloc(n ? n : 1) : NULL;
    float *scale = t->scale && t->nscale == rows && rows > 1 ? malloc(nr * sizeof *scale) : NULL;
    if (!values || (t->mask && !mask) || (t->assign && !assign) ||
        (t->scale && t->nscale == rows && rows > 1 && !scale)) {
        free(values); free(mask); free(assign); free(scale);
        return DCZ_ERR_NOMEM;
    }
    size_t j = 0, kr = 0;
    for (size_t r = 0; r < rows; r++) {
        if (keep_r && !keep_r[r]) continue;
        if (scale) scale[kr] = t->scale[r];
        kr++;
        for (size_t c = 0; c < cols; c++) {
            if (keep_c && !keep_c[c]) continue;
            const size_t i = r * cols + c;
            values[j] = t->values[i];
            if (mask) mask[j] = t->mask[i];
            if (assign) assign[j] = t->assign[i];
            j++;
        }
    }
    free(t->values); t->values = values;
    if (mask) { free(t->mask); t->mask = mask; }
    if (assign) { free(t->assign); t->assign = assign; }
    if (scale) { free(t->scale); t->scale = scale; t->nscale = (uint32_t)nr; }
    t->dims[0] = (uint32_t)nr;
    if (t->rank == 2) t->dims[1] = (uint32_t)nc;
    t->n = n;
    return DCZ_OK;
}

/* Removes the dead units of layer p (read by DENSE layer q): *removed the
 * count. At least one unit stays. */
static dcz_status shrink_pair(dcz_doc *d, uint32_t p, uint32_t q, uint32_t *removed)
{
    dcz_doc_layer *P = &d->layers[p], *Q = &d->layers[q];
    const uint32_t units = P->t[0].dims[0];
    if (P->ntensors != 2 || Q->ntensors != 2 || P->t[0].rank != 2 || Q->t[0].rank != 2 ||
        Q->t[0].dims[1] != units || P->t[1].dims[0] != units || !P->t[0].values || !Q->t[0].values)
        return DCZ_OK;   /* not the shapes this reads: left alone */
    const dcz_doc_tensor *w = &Q->t[0];
    uint8_t *keep = malloc(units);
    if (!keep) return DCZ_ERR_NOMEM;
    uint32_t kept = 0;
    for (uint32_t u = 0; u < units; u++) {
        keep[u] = 0;
        for (uint32_t o = 0; o < w->dims[0] && !keep[u]; o++) keep[u] = !empty_at(w, (size_t)o * units + u);
        kept += keep[u];
    }
    if (kept == 0) keep[0] = 1, kept = 1;
    dcz_status s = DCZ_OK;
    if (kept < units) {
        /* DCZ_ERR_NOMEM part way leaves the document unfit to write: the
         * caller drops it */
        s = slice(&P->t[0], keep, NULL);
        if (s == DCZ_OK) s = slice(&P->t[1], keep, NULL);
        if (s == DCZ_OK) s = slice(&Q->t[0], NULL, keep);
        if (s == DCZ_OK) {
            P->attr[1] = (int32_t)kept;   /* DENSE: in, out */
            Q->attr[0] = (int32_t)kept;
            *removed += units - kept;
        }
    }
    free(keep);
    return s;
}

dcz_status dcz_doc_shrink(dcz_doc *d, uint32_t *removed)
{
    *removed = 0;
    if (d->calib) return DCZ_OK;   /* its scales are of the tensors as they are */
    for (uint32_t p = 0; p + 1 < d->nlayers; p++) {
        if (d->layers[p].op != DCZ_OP_DENSE) continue;
        const int q = dense_consumer(d, p);
        if (q < 0) continue;
        const dcz_status s = shrink_pair(d, p, (uint32_t)q, removed);
        if (s != DCZ_OK) return s;
    }
    return DCZ_OK;
}
