/* shrink.c: removes the units that no layer reads.
 *
 * A unit of a fully connected layer (an output) or of a convolution of one
 * group (a filter) feeds, through layers that keep units apart (element-wise
 * activations, pools, FLATTEN), its block of columns in the one such layer
 * that reads it: one column of a fully connected layer, a channel's plane
 * after FLATTEN, a channel's window in a convolution. When that block
 * stores no weight, the unit's value is multiplied by nothing: its row of
 * weights, its bias and the (empty) block can go, and every output of the
 * model stays the same, bit for bit. Pruning that learns which weights
 * matter (variational dropout) empties most of a unit's block and row
 * together: on LeNet-300-100 it leaves 67 of fc1's 300 units and 55 of
 * fc2's 100 read. Gone, they cost no bias, no positions in the mask of
 * either layer, and no time.
 *
 * Tested by tests/cli/shrink.sh (the outputs of models with dead units
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

/* Nonzero for the layers whose outputs a unit of a layer before owns as it
 * owned their inputs: element-wise ops of one input (the op table's
 * in_place), pools (each channel on its own) and FLATTEN (channels in
 * order). */
static int keeps_units(const dcz_doc_layer *l)
{
    const dcz_op_info *o = dcz_op_get(l->op);
    if (!o || l->nin != 1) return 0;
    return o->in_place || l->op == DCZ_OP_MAXPOOL || l->op == DCZ_OP_AVGPOOL || l->op == DCZ_OP_GLOBAL_AVGPOOL ||
           l->op == DCZ_OP_FLATTEN;
}

/* A DENSE layer, or a CONV2D of one group: the layers whose units (outputs,
 * output channels) this removes, and that read them. */
static int plain_weighted(const dcz_doc_layer *l)
{
    return l->op == DCZ_OP_DENSE || (l->op == DCZ_OP_CONV2D && l->attr[8] == 1);
}

/* The layer that reads layer p's units through layers that keep them, each
 * read once, when it is plain_weighted; else -1. */
static int unit_consumer(const dcz_doc *d, uint32_t p)
{
    uint32_t at = p;
    for (;;) {
        const int r = only_reader(d, at + 1);
        if (r < 0) return -1;
        const dcz_doc_layer *l = &d->layers[r];
        if (plain_weighted(l)) return l->nin == 1 ? r : -1;
        if (!keeps_units(l)) return -1;
        at = (uint32_t)r;
    }
}

/* Nonzero when element i of weight tensor t stores nothing that is not 0 */
static int empty_at(const dcz_doc_tensor *t, size_t i)
{
    if (t->mask && !t->mask[i]) return 1;
    return t->values[i] == 0.0f;
}

/* Keeps the rows of tensor t seen as (dims[0], n / dims[0]) whose keep_r
 * entry is set (NULL: all), and the columns whose block (block columns
 * each) keep_c sets (NULL: all); per-row scales follow their rows; dims[0]
 * becomes the rows kept and dims[1] shrinks with the blocks. DCZ_ERR_NOMEM
 * leaves t as it was. */
static dcz_status slice(dcz_doc_tensor *t, const uint8_t *keep_r, const uint8_t *keep_c, size_t block)
{
    const size_t rows = t->dims[0], cols = t->n / rows;
    size_t nr = 0, nc = 0;
    for (size_t r = 0; r < rows; r++) nr += !keep_r || keep_r[r];
    for (size_t c = 0; c < cols; c++) nc += !keep_c || keep_c[c / block];
    const size_t n = nr * nc;
    const int row_scales = t->scale && t->nscale == rows && rows > 1;
    float *values = malloc((n ? n : 1) * sizeof *values);
    uint8_t *mask = t->mask ? malloc(n ? n : 1) : NULL, *assign = t->assign ? malloc(n ? n : 1) : NULL;
    float *scale = row_scales ? malloc(nr * sizeof *scale) : NULL;
    if (!values || (t->mask && !mask) || (t->assign && !assign) || (row_scales && !scale)) {
        free(values); free(mask); free(assign); free(scale);
        return DCZ_ERR_NOMEM;
    }
    size_t j = 0, kr = 0;
    for (size_t r = 0; r < rows; r++) {
        if (keep_r && !keep_r[r]) continue;
        if (scale) scale[kr] = t->scale[r];
        kr++;
        for (size_t c = 0; c < cols; c++) {
            if (keep_c && !keep_c[c / block]) continue;
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
    if (t->rank >= 2) t->dims[1] = (uint32_t)((size_t)t->dims[1] * nc / cols);
    t->dims[0] = (uint32_t)nr;
    t->n = n;
    return DCZ_OK;
}

/* Removes the units of layer p that layer q does not read: *removed the
 * count. At least one unit stays. */
static dcz_status shrink_pair(dcz_doc *d, uint32_t p, uint32_t q, uint32_t *removed)
{
    dcz_doc_layer *P = &d->layers[p], *Q = &d->layers[q];
    if (P->ntensors != 2 || Q->ntensors != 2 || !P->t[0].values || !Q->t[0].values || P->t[0].rank < 2 ||
        Q->t[0].rank < 2)
        return DCZ_OK;   /* not the tensors this reads: left alone */
    const uint32_t units = P->t[0].dims[0];
    const dcz_doc_tensor *w = &Q->t[0];
    const size_t rows = w->dims[0], cols = w->n / rows;
    if (P->t[1].dims[0] != units || cols % units) return DCZ_OK;
    const size_t block = cols / units;   /* the columns of one unit: a channel's plane after FLATTEN, its window */
    uint8_t *keep = malloc(units);
    if (!keep) return DCZ_ERR_NOMEM;
    uint32_t kept = 0;
    for (uint32_t u = 0; u < units; u++) {
        keep[u] = 0;
        for (size_t o = 0; o < rows && !keep[u]; o++)
            for (size_t c = (size_t)u * block; c < (size_t)(u + 1) * block && !keep[u]; c++)
                keep[u] = !empty_at(w, o * cols + c);
        kept += keep[u];
    }
    if (kept == 0) keep[0] = 1, kept = 1;
    dcz_status s = DCZ_OK;
    if (kept < units) {
        /* DCZ_ERR_NOMEM part way leaves the document unfit to write: the
         * caller drops it */
        s = slice(&P->t[0], keep, NULL, 1);
        if (s == DCZ_OK) s = slice(&P->t[1], keep, NULL, 1);
        if (s == DCZ_OK) s = slice(&Q->t[0], NULL, keep, block);
        if (s == DCZ_OK) {
            P->attr[1] = (int32_t)kept;   /* DENSE: in, out; CONV2D: in_c, out_c, ... */
            Q->attr[0] = Q->op == DCZ_OP_DENSE ? (int32_t)(kept * block) : (int32_t)kept;
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
    /* from the output back, so that a layer's rows are gone before the
     * units of the layer it reads are weighed */
    for (uint32_t p = d->nlayers; p-- > 0;) {
        if (!plain_weighted(&d->layers[p])) continue;
        const int q = unit_consumer(d, p);
        if (q < 0) continue;
        const dcz_status s = shrink_pair(d, p, (uint32_t)q, removed);
        if (s != DCZ_OK) return s;
    }
    return DCZ_OK;
}
