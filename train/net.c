/* net.c: the training network: creation from an architecture name, the
 * checks that make a caller-filled network safe to run, activation buffers,
 * the forward pass (dense layers through OpenBLAS sgemm, row-major, batch
 * major activations) and the mask / codebook constraints on weights.
 *
 * Tested by tests/unit/test_train.c (architecture parsing, parameter count,
 * validation errors, forward probabilities, constraints).
 */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/internal.h"

#define ARCH_MAX_WIDTHS 64
#define ARCH_MAX_WIDTH 65536
#define NET_MAX_LAYERS (1 << 16)
#define FORWARD_CHUNK 1024

void dcz_train_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

dcz_status dcz_net_alloc(int nlayers, dcz_net **out)
{
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (nlayers < 1 || nlayers > NET_MAX_LAYERS) return DCZ_ERR_ARG;
    dcz_net *net = calloc(1, sizeof *net);
    if (!net) return DCZ_ERR_NOMEM;
    net->layers = calloc((size_t)nlayers, sizeof *net->layers);
    if (!net->layers) {
        free(net);
        return DCZ_ERR_NOMEM;
    }
    net->nlayers = nlayers;
    *out = net;
    return DCZ_OK;
}

static void free_acts(dcz_net *net)
{
    if (net->act)
        for (int i = 0; i <= net->nlayers; i++) free(net->act[i]);
    if (net->dact)
        for (int i = 0; i <= net->nlayers; i++) free(net->dact[i]);
    free(net->act);
    free(net->dact);
    net->act = NULL;
    net->dact = NULL;
    net->cap_batch = 0;
}

void dcz_net_reset_state(dcz_net *net)
{
    if (!net || !net->layers) return;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        free(l->gw); free(l->gb);
        free(l->vw); free(l->vb);
        free(l->gcb); free(l->vcb);
        l->gw = l->gb = l->vw = l->vb = l->gcb = l->vcb = NULL;
    }
}

void dcz_net_free(dcz_net *net)
{
    if (!net) return;
    dcz_net_reset_state(net);
    if (net->layers) {
        for (int i = 0; i < net->nlayers; i++) {
            dcz_tlayer *l = &net->layers[i];
            free(l->w); free(l->b); free(l->mask);
            free(l->codebook); free(l->assign);
        }
    }
    free_acts(net);
    free(net->layers);
    free(net);
}

dcz_status dcz_net_validate(dcz_net *net)
{
    if (!net || !net->layers || net->nlayers < 1) return DCZ_ERR_ARG;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (l->in <= 0 || l->out <= 0) return DCZ_ERR_SHAPE;
        if (i > 0 && net->layers[i - 1].out != l->in) return DCZ_ERR_SHAPE;
        switch (l->kind) {
        case DCZ_TL_DENSE: {
            if (!l->w || !l->b) return DCZ_ERR_ARG;
            int shared = l->codebook || l->assign || l->k;
            if (!shared) break;
            if (!l->codebook || !l->assign || l->k < 1 || l->k > 256) return DCZ_ERR_ARG;
            size_t nw = dcz_tlayer_nweights(l);
            for (size_t j = 0; j < nw; j++)
                if ((!l->mask || l->mask[j]) && l->assign[j] >= l->k) return DCZ_ERR_ARG;
            break;
        }
        case DCZ_TL_RELU:
            if (l->in != l->out) return DCZ_ERR_SHAPE;
            break;
        case DCZ_TL_SOFTMAX:
            if (l->in != l->out) return DCZ_ERR_SHAPE;
            if (i != net->nlayers - 1) return DCZ_ERR_ARG;   /* the loss is fused with it */
            break;
        default:
            return DCZ_ERR_ARG;
        }
    }
    /* shapes may have changed since the buffers were sized: regrow on demand */
    free_acts(net);
    net->in_dim = net->layers[0].in;
    net->classes = net->layers[net->nlayers - 1].out;
    return DCZ_OK;
}

size_t dcz_net_param_count(const dcz_net *net)
{
    if (!net || !net->layers) return 0;
    size_t n = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        if (l->kind == DCZ_TL_DENSE) n += dcz_tlayer_nweights(l) + (size_t)l->out;
    }
    return n;
}

static int act_dim(const dcz_net *net, int i)
{
    return i < net->nlayers ? net->layers[i].in : net->layers[net->nlayers - 1].out;
}

dcz_status dcz_net_reserve(dcz_net *net, int batch)
{
    if (batch <= net->cap_batch && net->act) return DCZ_OK;
    free_acts(net);
    net->act = calloc((size_t)net->nlayers + 1, sizeof *net->act);
    net->dact = calloc((size_t)net->nlayers + 1, sizeof *net->dact);
    if (!net->act || !net->dact) goto nomem;
    for (int i = 0; i <= net->nlayers; i++) {
        size_t dim = (size_t)act_dim(net, i);
        if ((size_t)batch > SIZE_MAX / sizeof(float) / dim) goto nomem;
        net->act[i] = malloc((size_t)batch * dim * sizeof(float));    /* (batch, dim) */
        net->dact[i] = malloc((size_t)batch * dim * sizeof(float));   /* (batch, dim) */
        if (!net->act[i] || !net->dact[i]) goto nomem;
    }
    net->cap_batch = batch;
    return DCZ_OK;
nomem:
    free_acts(net);
    return DCZ_ERR_NOMEM;
}

/* y = x W^T + b for a (batch, in) x and (out, in) W. */
static void dense_forward(const dcz_tlayer *l, const float *x, float *y, int batch)
{
    for (int r = 0; r < batch; r++)
        memcpy(y + (size_t)r * l->out, l->b, (size_t)l->out * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, l->out, l->in,
                1.0f, x, l->in, l->w, l->in, 1.0f, y, l->out);
}

/* Row-wise softmax, shifted by the row maximum so exp never overflows. */
static void softmax_rows(const float *x, float *y, int batch, int n)
{
    for (int r = 0; r < batch; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n;
        float m = xr[0];
        for (int j = 1; j < n; j++) if (xr[j] > m) m = xr[j];
        double s = 0;
        for (int j = 0; j < n; j++) {
            yr[j] = expf(xr[j] - m);
            s += yr[j];
        }
        float inv = (float)(1.0 / s);
        for (int j = 0; j < n; j++) yr[j] *= inv;
    }
}

void dcz_net_run_layers(dcz_net *net, int batch, int infer)
{
    for (int i = 0; i < net->nlayers; i++) {
        const dcz_tlayer *l = &net->layers[i];
        const float *x = net->act[i];   /* (batch, in) */
        float *y = net->act[i + 1];     /* (batch, out) */
        size_t n = (size_t)batch * (size_t)l->out;
        switch (l->kind) {
        case DCZ_TL_DENSE:
            dense_forward(l, x, y, batch);
            break;
        case DCZ_TL_RELU:
            for (size_t j = 0; j < n; j++) y[j] = x[j] > 0.0f ? x[j] : 0.0f;
            break;
        case DCZ_TL_SOFTMAX:
            if (infer) softmax_rows(x, y, batch, l->out);
            else memcpy(y, x, n * sizeof(float));
            break;
        }
    }
}

dcz_status dcz_net_forward(dcz_net *net, const float *x, int batch, float *out)
{
    if (!net || !net->layers || net->in_dim <= 0 || batch < 0) return DCZ_ERR_ARG;
    if (batch == 0) return DCZ_OK;
    if (!x || !out) return DCZ_ERR_ARG;
    int chunk = batch < FORWARD_CHUNK ? batch : FORWARD_CHUNK;
    if (net->cap_batch > chunk && batch > chunk)
        chunk = net->cap_batch < batch ? net->cap_batch : batch;
    dcz_status st = dcz_net_reserve(net, chunk);
    if (st != DCZ_OK) return st;
    size_t in = (size_t)net->in_dim, classes = (size_t)net->classes;
    for (int start = 0; start < batch; start += chunk) {
        int bs = batch - start < chunk ? batch - start : chunk;
        memcpy(net->act[0], x + (size_t)start * in, (size_t)bs * in * sizeof(float));
        dcz_net_run_layers(net, bs, 1);
        memcpy(out + (size_t)start * classes, net->act[net->nlayers],
               (size_t)bs * classes * sizeof(float));
    }
    return DCZ_OK;
}

void dcz_net_apply_constraints(dcz_net *net)
{
    if (!net || !net->layers) return;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (l->kind != DCZ_TL_DENSE || !l->w) continue;
        size_t nw = dcz_tlayer_nweights(l);
        if (l->codebook && l->assign && l->k > 0) {
            /* an out-of-range assignment (dcz_net_validate reports it) gives
             * 0 here rather than a read outside the codebook */
            for (size_t j = 0; j < nw; j++) {
                int kept = !l->mask || l->mask[j];
                l->w[j] = kept && l->assign[j] < l->k ? l->codebook[l->assign[j]] : 0.0f;
            }
        } else if (l->mask) {
            for (size_t j = 0; j < nw; j++)
                if (!l->mask[j]) l->w[j] = 0.0f;
        }
    }
}

/* Parses "mlp:784-300-10" widths (strictly: digits and single dashes). */
static dcz_status parse_mlp(const char *arch, int *widths, int *nw, char *err, size_t errlen)
{
    const char *p = arch + 4;
    int n = 0;
    for (;;) {
        if (*p < '0' || *p > '9') {
            dcz_train_err(err, errlen, "architecture \"%s\": expected a width at offset %d "
                          "(e.g. mlp:784-300-100-10)", arch, (int)(p - arch));
            return DCZ_ERR_ARG;
        }
        long v = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p - '0');
            if (v > ARCH_MAX_WIDTH) break;
            p++;
        }
        if (v < 1 || v > ARCH_MAX_WIDTH) {
            dcz_train_err(err, errlen, "architecture \"%s\": widths must be 1..%d",
                          arch, ARCH_MAX_WIDTH);
            return DCZ_ERR_ARG;
        }
        if (n == ARCH_MAX_WIDTHS) {
            dcz_train_err(err, errlen, "architecture \"%s\": more than %d widths",
                          arch, ARCH_MAX_WIDTHS);
            return DCZ_ERR_ARG;
        }
        widths[n++] = (int)v;
        if (*p == '\0') break;
        if (*p != '-') {
            dcz_train_err(err, errlen, "architecture \"%s\": unexpected '%c' at offset %d",
                          arch, *p, (int)(p - arch));
            return DCZ_ERR_ARG;
        }
        p++;
    }
    if (n < 2) {
        dcz_train_err(err, errlen, "architecture \"%s\": needs at least an input and an "
                      "output width (e.g. mlp:784-10)", arch);
        return DCZ_ERR_ARG;
    }
    *nw = n;
    return DCZ_OK;
}

dcz_status dcz_net_create_arch(const char *arch, uint64_t seed, dcz_net **out,
                               char *err, size_t errlen)
{
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (!arch) {
        dcz_train_err(err, errlen, "no architecture given");
        return DCZ_ERR_ARG;
    }
    int widths[ARCH_MAX_WIDTHS], nw = 0;
    if (strcmp(arch, "lenet300") == 0) {
        static const int lenet[] = { 784, 300, 100, 10 };
        memcpy(widths, lenet, sizeof lenet);
        nw = 4;
    } else if (strncmp(arch, "mlp:", 4) == 0) {
        dcz_status st = parse_mlp(arch, widths, &nw, err, errlen);
        if (st != DCZ_OK) return st;
    } else {
        dcz_train_err(err, errlen, "unknown architecture \"%s\" (expected lenet300 or "
                      "mlp:IN-H1-...-OUT)", arch);
        return DCZ_ERR_ARG;
    }

    int ndense = nw - 1;
    dcz_net *net = NULL;
    dcz_status st = dcz_net_alloc(2 * ndense, &net);
    if (st != DCZ_OK) {
        dcz_train_err(err, errlen, "out of memory");
        return st;
    }
    dcz_rng rng;
    dcz_rng_seed(&rng, seed);
    int li = 0;
    for (int d = 0; d < ndense; d++) {
        dcz_tlayer *l = &net->layers[li++];
        l->kind = DCZ_TL_DENSE;
        snprintf(l->name, sizeof l->name, "fc%d", d + 1);
        l->in = widths[d];
        l->out = widths[d + 1];
        size_t nwt = dcz_tlayer_nweights(l);
        l->w = malloc(nwt * sizeof(float));              /* (out, in) */
        l->b = calloc((size_t)l->out, sizeof(float));    /* (out) */
        if (!l->w || !l->b) {
            dcz_train_err(err, errlen, "out of memory for layer %s (%d x %d)",
                          l->name, l->out, l->in);
            st = DCZ_ERR_NOMEM;
            goto fail;
        }
        /* He et al. 2015: N(0, 2 / fan_in) for layers followed by ReLU */
        float sd = (float)sqrt(2.0 / l->in);
        for (size_t j = 0; j < nwt; j++) l->w[j] = sd * dcz_rng_normal(&rng);
        l = &net->layers[li++];
        if (d < ndense - 1) {
            l->kind = DCZ_TL_RELU;
            snprintf(l->name, sizeof l->name, "relu%d", d + 1);
        } else {
            l->kind = DCZ_TL_SOFTMAX;
            snprintf(l->name, sizeof l->name, "prob");
        }
        l->in = l->out = widths[d + 1];
    }
    st = dcz_net_validate(net);
    if (st != DCZ_OK) {
        dcz_train_err(err, errlen, "internal: built network does not validate");
        goto fail;
    }
    *out = net;
    return DCZ_OK;
fail:
    dcz_net_free(net);
    return st;
}
