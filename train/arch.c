/* arch.c: networks built from an architecture name (dcz_net_create_arch):
 * lenet300, mlp:W0-..-Wn, lenet5, the layer-spec form cnn:T1-..-Tn whose
 * syntax train.h documents, and the presets resnet and mobilenetv2 (cnn:
 * specs). Residual and inverted residual blocks make graphs: their layers
 * name the tensors they read.
 *
 * A name is turned into a list of layers holding only their kind, name and
 * settings; the shape of every layer is computed as the list grows, so a
 * token that does not fit its input is reported with its position. Then the
 * net gets its sizes (dcz_net_infer_shapes), its parameters in layer order
 * from one rng seeded by the seed (dcz_net_init_params) and is validated.
 *
 * Tested by tests/unit/test_train.c (parameter counts, layer names and
 * shapes, malformed names refused with a message).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/internal.h"

#define ARCH_MAX_WIDTHS 64
#define ARCH_MAX_WIDTH 65536
#define CNN_MAX_TOKENS 64
#define CNN_MAX_DIM 4096             /* C, H, W of the input; conv filters */
#define CNN_MAX_KERNEL 32            /* windows and strides */
#define CNN_MAX_FLOATS ((int64_t)1 << 24)   /* activation floats per sample */
#define CNN_MAX_WEIGHTS ((int64_t)1 << 28)  /* weights of one layer */
/* layers of a spec: up to fifteen per token (an inverted residual block
 * with squeeze-and-excitation), a flatten and the softmax */
#define CNN_MAX_LAYERS (15 * CNN_MAX_TOKENS + 2)

/* ---- mlp ---------------------------------------------------------------------- */

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

/* ---- layer lists ------------------------------------------------------------------ */

/* Layers of a name being built, with the shape of every tensor so far
 * (t[0] the input, t[j + 1] the output of layer j). */
typedef struct layer_list {
    dcz_tlayer l[CNN_MAX_LAYERS];
    dcz_chw t[CNN_MAX_LAYERS + 1];
    int n;
    const char *arch;   /* for messages */
    char *err;
    size_t errlen;
} layer_list;

/* Appends a layer (kind and settings from proto, its name) reading the
 * tensors proto->tin[0 .. nin) (nin 0: the layer before, as a chain), and
 * records its output shape. what names the token for messages. */
static dcz_status push_named(layer_list *L, const dcz_tlayer *proto, const char *what,
                             const char *name)
{
    if (L->n == CNN_MAX_LAYERS) {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": too many layers", L->arch);
        return DCZ_ERR_ARG;
    }
    dcz_tlayer *l = &L->l[L->n];
    *l = *proto;
    snprintf(l->name, sizeof l->name, "%s", name);
    dcz_tlayer resolved = *l;
    if (resolved.nin == 0) {
        resolved.nin = 1;
        resolved.tin[0] = (uint32_t)L->n;
    }
    const dcz_chw in = L->t[resolved.tin[0]];
    dcz_chw out;
    if (dcz_tlayer_shape(&resolved, L->t, &out) != DCZ_OK) {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s (%s) does not fit its "
                      "%lldx%lldx%lld input", L->arch, what, l->name, (long long)in.c,
                      (long long)in.h, (long long)in.w);
        return DCZ_ERR_ARG;
    }
    int64_t floats = out.c * out.h * out.w;
    if (floats > CNN_MAX_FLOATS) {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s (%s) gives %lld values per "
                      "sample (limit %lld)", L->arch, what, l->name, (long long)floats,
                      (long long)CNN_MAX_FLOATS);
        return DCZ_ERR_ARG;
    }
    int64_t weights = 0;
    if (l->op == DCZ_OP_DENSE) weights = (int64_t)l->out * (in.c * in.h * in.w);
    if (l->op == DCZ_OP_CONV2D)
        weights = (int64_t)l->out_c * (in.c / (l->group > 1 ? l->group : 1)) * l->kh * l->kw;
    if (weights > CNN_MAX_WEIGHTS) {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s (%s) would have %lld weights "
                      "(limit %lld)", L->arch, what, l->name, (long long)weights,
                      (long long)CNN_MAX_WEIGHTS);
        return DCZ_ERR_ARG;
    }
    L->n++;
    L->t[L->n] = out;
    return DCZ_OK;
}

/* push_named with the name fmt formatted with num. */
static dcz_status push(layer_list *L, const dcz_tlayer *proto, const char *what,
                       const char *fmt, int num)
{
    char name[64];
    snprintf(name, sizeof name, fmt, num);
    return push_named(L, proto, what, name);
}

/* push_named reading the tensors in[0 .. nin), its name "block.part". */
static dcz_status push_in(layer_list *L, dcz_tlayer proto, const char *what, const char *block,
                          const char *part, int nin, const int *in)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", block, part);
    proto.nin = (uint32_t)nin;
    for (int k = 0; k < nin; k++) proto.tin[k] = (uint32_t)in[k];
    return push_named(L, &proto, what, name);
}

/* push_in reading the layer before. */
static dcz_status push_next(layer_list *L, dcz_tlayer proto, const char *what, const char *block,
                            const char *part)
{
    const int prev = L->n;
    return push_in(L, proto, what, block, part, 1, &prev);
}

/* Builds the net of a finished list: sizes, parameters from seed, checks. */
static dcz_status build(const layer_list *L, uint64_t seed, dcz_net **out)
{
    dcz_net *net = NULL;
    dcz_status st = dcz_net_alloc(L->n, &net);
    if (st != DCZ_OK) {
        dcz_train_err(L->err, L->errlen, "out of memory");
        return st;
    }
    memcpy(net->layers, L->l, (size_t)L->n * sizeof *net->layers);
    const dcz_chw in = L->t[0];
    if (in.h == 1 && in.w == 1) {
        net->in_rank = 1;
        net->in_dims[0] = (uint32_t)in.c;
    } else {
        net->in_rank = 3;
        net->in_dims[0] = (uint32_t)in.c;
        net->in_dims[1] = (uint32_t)in.h;
        net->in_dims[2] = (uint32_t)in.w;
    }
    dcz_rng rng;
    dcz_rng_seed(&rng, seed);
    dcz_rng_seed(&net->rng, seed ^ 0x6a09e667f3bcc909ULL);   /* dropout: its own stream */
    st = dcz_net_infer_shapes(net);
    if (st == DCZ_OK) {
        st = dcz_net_init_params(net, &rng);
        if (st != DCZ_OK) {
            dcz_train_err(L->err, L->errlen, "out of memory for the parameters of \"%s\"",
                          L->arch);
            goto fail;
        }
        st = dcz_net_validate(net);
    }
    if (st != DCZ_OK) {
        dcz_train_err(L->err, L->errlen, "internal: built network does not validate");
        goto fail;
    }
    *out = net;
    return DCZ_OK;
fail:
    dcz_net_free(net);
    return st;
}

static dcz_status build_mlp(const int *widths, int nw, layer_list *L)
{
    L->t[0] = (dcz_chw){ widths[0], 1, 1 };
    for (int d = 0; d + 1 < nw; d++) {
        dcz_tlayer fc = { .op = DCZ_OP_DENSE, .out = widths[d + 1] };
        dcz_status st = push(L, &fc, "layer", "fc%d", d + 1);
        if (st != DCZ_OK) return st;
        dcz_tlayer act = { .op = d + 2 < nw ? DCZ_OP_RELU : DCZ_OP_SOFTMAX };
        st = push(L, &act, "layer", d + 2 < nw ? "relu%d" : "prob", d + 1);
        if (st != DCZ_OK) return st;
    }
    return DCZ_OK;
}

static dcz_status build_lenet5(layer_list *L)
{
    static const struct { dcz_tlayer proto; const char *name; } layers[] = {
        { { .op = DCZ_OP_CONV2D, .out_c = 20, .kh = 5, .kw = 5, .sh = 1, .sw = 1 }, "conv1" },
        { { .op = DCZ_OP_MAXPOOL, .kh = 2, .kw = 2, .sh = 2, .sw = 2 }, "pool1" },
        { { .op = DCZ_OP_CONV2D, .out_c = 50, .kh = 5, .kw = 5, .sh = 1, .sw = 1 }, "conv2" },
        { { .op = DCZ_OP_MAXPOOL, .kh = 2, .kw = 2, .sh = 2, .sw = 2 }, "pool2" },
        { { .op = DCZ_OP_FLATTEN }, "flatten" },
        { { .op = DCZ_OP_DENSE, .out = 500 }, "fc1" },
        { { .op = DCZ_OP_RELU }, "relu1" },
        { { .op = DCZ_OP_DENSE, .out = 10 }, "fc2" },
        { { .op = DCZ_OP_SOFTMAX }, "prob" },
    };
    L->t[0] = (dcz_chw){ 1, 28, 28 };
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        dcz_status st = push(L, &layers[i].proto, "layer", layers[i].name, 0);
        if (st != DCZ_OK) return st;
    }
    return DCZ_OK;
}

/* ---- cnn: specs ---------------------------------------------------------------------- */

/* Reads a decimal number of at most max at *p; advances *p. 0 when there is
 * no digit or the number exceeds max. */
static int read_num(const char **p, long max, long *v)
{
    if (**p < '0' || **p > '9') return 0;
    long x = 0;
    while (**p >= '0' && **p <= '9') {
        x = x * 10 + (**p - '0');
        if (x > max) return 0;
        (*p)++;
    }
    *v = x;
    return 1;
}

/* Reads letter then a number in [lo, hi] at *p. */
static int read_field(const char **p, char letter, long lo, long hi, long *v)
{
    if (**p != letter) return 0;
    (*p)++;
    return read_num(p, hi, v) && *v >= lo;
}

/* Per-spec counters for layer names. */
typedef struct cnn_counts { int conv, relu, pool, gap, drop, fc, res, inv, spatial, flattened; } cnn_counts;

/* Settings of the block tokens. */
#define CNN_MAX_EXPAND 8

/* A residual block of n filters, stride s, after He et al. 2016 (basic
 * block): conv1 3x3 (stride s) bn1 relu1 conv2 3x3 bn2, plus a shortcut
 * that is the block's input, or a 1x1 convolution of stride s and batch
 * norm (proj, projbn) when the shape changes; add, then relu. */
static dcz_status res_block(layer_list *L, long n, long s, const char *what, cnn_counts *k)
{
    char b[16];
    snprintf(b, sizeof b, "res%d", ++k->res);
    const int x = L->n;
    const dcz_tlayer c3 = { .op = DCZ_OP_CONV2D, .out_c = (int)n, .kh = 3, .kw = 3, .sh = (int)s,
                            .sw = (int)s, .ph = 1, .pw = 1 };
    const dcz_tlayer c3b = { .op = DCZ_OP_CONV2D, .out_c = (int)n, .kh = 3, .kw = 3, .sh = 1,
                             .sw = 1, .ph = 1, .pw = 1 };
    const dcz_tlayer bn = { .op = DCZ_OP_BATCHNORM }, relu = { .op = DCZ_OP_RELU };
    dcz_status st;
    if ((st = push_next(L, c3, what, b, "conv1")) != DCZ_OK ||
        (st = push_next(L, bn, what, b, "bn1")) != DCZ_OK ||
        (st = push_next(L, relu, what, b, "relu1")) != DCZ_OK ||
        (st = push_next(L, c3b, what, b, "conv2")) != DCZ_OK ||
        (st = push_next(L, bn, what, b, "bn2")) != DCZ_OK)
        return st;
    int sum[2] = { L->n, x };
    if (s != 1 || L->t[x].c != n) {
        const dcz_tlayer proj = { .op = DCZ_OP_CONV2D, .out_c = (int)n, .kh = 1, .kw = 1,
                                  .sh = (int)s, .sw = (int)s };
        if ((st = push_in(L, proj, what, b, "proj", 1, &x)) != DCZ_OK ||
            (st = push_next(L, bn, what, b, "projbn")) != DCZ_OK)
            return st;
        sum[1] = L->n;
    }
    const dcz_tlayer add = { .op = DCZ_OP_ADD };
    if ((st = push_in(L, add, what, b, "add", 2, sum)) != DCZ_OK) return st;
    return push_next(L, relu, what, b, "relu");
}

/* An inverted residual block of n outputs, expansion e, stride s, after
 * MobileNetV2 (Sandler et al. 2018): expand (1x1 to e times the input's
 * channels; left out when e is 1) bn1 relu1, dw (depthwise 3x3, stride s)
 * bn2 relu2, then with se a squeeze-and-excitation gate (se.pool, se.fc1
 * to a quarter of the channels (at least 8), se.relu, se.fc2, se.gate a
 * hard sigmoid, se.scale multiplying the channels), project (1x1 to n,
 * linear) bn3, and add of the block's input when the shape is kept. The
 * ReLUs are ReLU6 (clip to [0, 6]). */
static dcz_status inv_block(layer_list *L, long n, long e, long s, int se, const char *what,
                            cnn_counts *k)
{
    char b[16];
    snprintf(b, sizeof b, "inv%d", ++k->inv);
    const int x = L->n;
    const int hid = (int)(L->t[x].c * e);
    const dcz_tlayer expand = { .op = DCZ_OP_CONV2D, .out_c = hid, .kh = 1, .kw = 1, .sh = 1, .sw = 1 };
    const dcz_tlayer dw = { .op = DCZ_OP_CONV2D, .out_c = hid, .kh = 3, .kw = 3, .sh = (int)s,
                            .sw = (int)s, .ph = 1, .pw = 1, .group = hid };
    const dcz_tlayer project = { .op = DCZ_OP_CONV2D, .out_c = (int)n, .kh = 1, .kw = 1, .sh = 1, .sw = 1 };
    const dcz_tlayer bn = { .op = DCZ_OP_BATCHNORM };
    const dcz_tlayer relu6 = { .op = DCZ_OP_CLIP, .param = { 0.0f, 6.0f } };
    dcz_status st;
    if (e > 1 && ((st = push_next(L, expand, what, b, "expand")) != DCZ_OK ||
                  (st = push_next(L, bn, what, b, "bn1")) != DCZ_OK ||
                  (st = push_next(L, relu6, what, b, "relu1")) != DCZ_OK))
        return st;
    if ((st = push_next(L, dw, what, b, "dw")) != DCZ_OK ||
        (st = push_next(L, bn, what, b, "bn2")) != DCZ_OK ||
        (st = push_next(L, relu6, what, b, "relu2")) != DCZ_OK)
        return st;
    if (se) {
        int gate[2] = { L->n, 0 };
        const dcz_tlayer pool = { .op = DCZ_OP_GLOBAL_AVGPOOL };
        const dcz_tlayer fc1 = { .op = DCZ_OP_DENSE, .out = hid / 4 > 8 ? hid / 4 : 8 };
        const dcz_tlayer fc2 = { .op = DCZ_OP_DENSE, .out = hid };
        const dcz_tlayer relu = { .op = DCZ_OP_RELU };
        const dcz_tlayer hsig = { .op = DCZ_OP_HARD_SIGMOID, .param = { 1.0f / 6.0f, 0.5f } };
        const dcz_tlayer mul = { .op = DCZ_OP_MUL };
        if ((st = push_next(L, pool, what, b, "se.pool")) != DCZ_OK ||
            (st = push_next(L, fc1, what, b, "se.fc1")) != DCZ_OK ||
            (st = push_next(L, relu, what, b, "se.relu")) != DCZ_OK ||
            (st = push_next(L, fc2, what, b, "se.fc2")) != DCZ_OK ||
            (st = push_next(L, hsig, what, b, "se.gate")) != DCZ_OK)
            return st;
        gate[1] = L->n;
        if ((st = push_in(L, mul, what, b, "se.scale", 2, gate)) != DCZ_OK) return st;
    }
    if ((st = push_next(L, project, what, b, "project")) != DCZ_OK ||
        (st = push_next(L, bn, what, b, "bn3")) != DCZ_OK)
        return st;
    if (s != 1 || L->t[x].c != n) return DCZ_OK;
    int sum[2] = { x, L->n };
    const dcz_tlayer add = { .op = DCZ_OP_ADD };
    return push_in(L, add, what, b, "add", 2, sum);
}

static dcz_status cnn_token(layer_list *L, const char *tok, int index, int last,
                            cnn_counts *k)
{
    const char *p = tok + 1;
    char what[48];
    snprintf(what, sizeof what, "token %d \"%.20s\"", index + 1, tok);
    long n = 0, kk = 0, s = 1, pad = -1, g = 1, e = 6;
    dcz_status st;
    int spatial = (tok[0] && strchr("cparm", tok[0]) != NULL) || strcmp(tok, "gap") == 0;
    if (spatial && k->fc) {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s: convolution and pooling "
                      "must come before the first fully connected layer", L->arch, what);
        return DCZ_ERR_ARG;
    }
    if (last && tok[0] != 'f') {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": must end with a fully "
                      "connected layer fN, not %s", L->arch, what);
        return DCZ_ERR_ARG;
    }
    if (strcmp(tok, "gap") == 0) {
        dcz_tlayer gap = { .op = DCZ_OP_GLOBAL_AVGPOOL };
        k->spatial = 1;
        return push(L, &gap, what, "gap%d", ++k->gap);
    }
    switch (tok[0]) {
    case 'c':
        if (!read_num(&p, CNN_MAX_DIM, &n) || n < 1) goto bad_number;
        if (!read_field(&p, 'k', 1, CNN_MAX_KERNEL, &kk)) goto bad_number;
        if (*p == 's' && !read_field(&p, 's', 1, CNN_MAX_KERNEL, &s)) goto bad_number;
        if (*p == 'p' && !read_field(&p, 'p', 0, CNN_MAX_KERNEL, &pad)) goto bad_number;
        if (*p == 'g' && !read_field(&p, 'g', 1, CNN_MAX_DIM, &g)) goto bad_number;
        if (*p != '\0') goto bad_syntax;
        if (pad < 0) pad = kk / 2;
        if (L->t[L->n].c % g || n % g) {
            dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s: %ld groups must divide "
                          "the %lld input channels and the %ld filters", L->arch, what, g,
                          (long long)L->t[L->n].c, n);
            return DCZ_ERR_ARG;
        }
        if (pad >= kk) {
            dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s: padding %ld must be "
                          "smaller than the kernel %ld", L->arch, what, pad, kk);
            return DCZ_ERR_ARG;
        }
        {
            dcz_tlayer c = { .op = DCZ_OP_CONV2D, .out_c = (int)n, .kh = (int)kk, .kw = (int)kk,
                             .sh = (int)s, .sw = (int)s, .ph = (int)pad, .pw = (int)pad,
                             .group = (int)g };
            dcz_tlayer bn = { .op = DCZ_OP_BATCHNORM };
            dcz_tlayer relu = { .op = DCZ_OP_RELU };
            k->spatial = 1;
            k->conv++;
            if ((st = push(L, &c, what, "conv%d", k->conv)) != DCZ_OK) return st;
            if ((st = push(L, &bn, what, "bn%d", k->conv)) != DCZ_OK) return st;
            return push(L, &relu, what, "relu%d", ++k->relu);
        }
    case 'r':
        if (!read_num(&p, CNN_MAX_DIM, &n) || n < 1) goto bad_number;
        if (*p == 's' && !read_field(&p, 's', 1, CNN_MAX_KERNEL, &s)) goto bad_number;
        if (*p != '\0') goto bad_syntax;
        k->spatial = 1;
        return res_block(L, n, s, what, k);
    case 'm': {
        if (!read_num(&p, CNN_MAX_DIM, &n) || n < 1) goto bad_number;
        if (*p == 'e' && !read_field(&p, 'e', 1, CNN_MAX_EXPAND, &e)) goto bad_number;
        if (*p == 's' && !read_field(&p, 's', 1, CNN_MAX_KERNEL, &s)) goto bad_number;
        int se = *p == 'q';
        p += se;
        if (*p != '\0') goto bad_syntax;
        k->spatial = 1;
        return inv_block(L, n, e, s, se, what, k);
    }
    case 'p':
    case 'a':
        if (!read_num(&p, CNN_MAX_KERNEL, &kk) || kk < 1) goto bad_number;
        if (*p != '\0') goto bad_syntax;
        {
            dcz_tlayer pl = { .op = tok[0] == 'p' ? DCZ_OP_MAXPOOL : DCZ_OP_AVGPOOL,
                              .kh = (int)kk, .kw = (int)kk, .sh = (int)kk, .sw = (int)kk,
                              .count_include_pad = 1 };
            k->spatial = 1;
            return push(L, &pl, what, "pool%d", ++k->pool);
        }
    case 'd':
        if (!read_num(&p, 99, &n)) goto bad_number;
        if (*p != '\0') goto bad_syntax;
        {
            dcz_tlayer d = { .op = DCZ_OP_DROPOUT, .rate = (float)n / 100.0f };
            return push(L, &d, what, "drop%d", ++k->drop);
        }
    case 'f':
        if (!read_num(&p, ARCH_MAX_WIDTH, &n) || n < 1) goto bad_number;
        if (*p != '\0') goto bad_syntax;
        if (k->fc) {
            /* the ReLU after the previous fc goes before any dropout since */
            int at = L->n;
            while (at > 0 && L->l[at - 1].op == DCZ_OP_DROPOUT) at--;
            if (L->n == CNN_MAX_LAYERS) {
                dcz_train_err(L->err, L->errlen, "architecture \"%s\": too many layers", L->arch);
                return DCZ_ERR_ARG;
            }
            memmove(&L->l[at + 1], &L->l[at], (size_t)(L->n - at) * sizeof L->l[0]);
            memmove(&L->t[at + 2], &L->t[at + 1], (size_t)(L->n - at) * sizeof L->t[0]);
            L->t[at + 1] = L->t[at];   /* a ReLU keeps the shape */
            L->l[at] = (dcz_tlayer){ .op = DCZ_OP_RELU };
            snprintf(L->l[at].name, sizeof L->l[at].name, "relu%d", ++k->relu);
            L->n++;
        }
        if (k->spatial && !k->flattened) {
            dcz_tlayer fl = { .op = DCZ_OP_FLATTEN };
            k->flattened = 1;
            if ((st = push(L, &fl, what, "flatten", 0)) != DCZ_OK) return st;
        }
        {
            dcz_tlayer fc = { .op = DCZ_OP_DENSE, .out = (int)n };
            return push(L, &fc, what, "fc%d", ++k->fc);
        }
    default:
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s: unknown layer (expected "
                      "cNkK[sS][pP][gG], rN[sS], mN[eE][sS][q], pK, aK, gap, dR or fN)", L->arch, what);
        return DCZ_ERR_ARG;
    }
bad_number:
    dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s: a number is missing or out "
                  "of range (filters 1..%d, kernel and stride 1..%d, padding below the "
                  "kernel, groups 1..%d, expansion 1..%d, dropout 0..99, fc 1..%d)", L->arch,
                  what, CNN_MAX_DIM, CNN_MAX_KERNEL, CNN_MAX_DIM, CNN_MAX_EXPAND, ARCH_MAX_WIDTH);
    return DCZ_ERR_ARG;
bad_syntax:
    dcz_train_err(L->err, L->errlen, "architecture \"%s\": %s: unexpected '%c'", L->arch,
                  what, *p);
    return DCZ_ERR_ARG;
}

/* Parses the input token iCxHxW. */
static dcz_status cnn_input(layer_list *L, const char *tok)
{
    const char *p = tok + 1;
    long c, h, w;
    if (!read_num(&p, CNN_MAX_DIM, &c) || c < 1 || !read_field(&p, 'x', 1, CNN_MAX_DIM, &h) ||
        !read_field(&p, 'x', 1, CNN_MAX_DIM, &w) || *p != '\0') {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": input \"%.20s\" is not iCxHxW "
                      "with C, H and W in 1..%d", L->arch, tok, CNN_MAX_DIM);
        return DCZ_ERR_ARG;
    }
    if ((int64_t)c * h * w > CNN_MAX_FLOATS) {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": input %ldx%ldx%ld has more "
                      "than %lld values", L->arch, c, h, w, (long long)CNN_MAX_FLOATS);
        return DCZ_ERR_ARG;
    }
    L->t[0] = (dcz_chw){ c, h, w };
    return DCZ_OK;
}

static dcz_status build_cnn(layer_list *L)
{
    const char *spec = L->arch + 4;
    char tok[64];
    cnn_counts k = { 0 };
    L->t[0] = (dcz_chw){ 1, 28, 28 };
    if (*spec == '\0') {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": no layers (e.g. "
                      "cnn:c32k3-p2-c64k3-gap-f10)", L->arch);
        return DCZ_ERR_ARG;
    }
    int ntok = 1;
    for (const char *q = spec; *q; q++) ntok += *q == '-';
    if (ntok > CNN_MAX_TOKENS) {
        dcz_train_err(L->err, L->errlen, "architecture \"%s\": more than %d tokens", L->arch,
                      CNN_MAX_TOKENS);
        return DCZ_ERR_ARG;
    }
    const char *p = spec;
    for (int i = 0; i < ntok; i++) {
        size_t len = strcspn(p, "-");
        if (len == 0 || len >= sizeof tok) {
            dcz_train_err(L->err, L->errlen, "architecture \"%s\": token %d is %s", L->arch,
                          i + 1, len == 0 ? "empty" : "too long");
            return DCZ_ERR_ARG;
        }
        memcpy(tok, p, len);
        tok[len] = '\0';
        p += len + (p[len] == '-');
        dcz_status st;
        if (tok[0] == 'i') {
            if (i != 0) {
                dcz_train_err(L->err, L->errlen, "architecture \"%s\": the input shape "
                              "\"%s\" must be the first token", L->arch, tok);
                return DCZ_ERR_ARG;
            }
            if (ntok == 1) {
                dcz_train_err(L->err, L->errlen, "architecture \"%s\": no layers after the "
                              "input shape", L->arch);
                return DCZ_ERR_ARG;
            }
            st = cnn_input(L, tok);
        } else {
            st = cnn_token(L, tok, i, i == ntok - 1, &k);
        }
        if (st != DCZ_OK) return st;
    }
    dcz_tlayer prob = { .op = DCZ_OP_SOFTMAX };
    return push(L, &prob, "the output", "prob", 0);
}

int dcz_arch_warmup_epochs(const char *arch)
{
    return arch && strcmp(arch, "lenet5") == 0;
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
    layer_list *L = calloc(1, sizeof *L);
    if (!L) {
        dcz_train_err(err, errlen, "out of memory");
        return DCZ_ERR_NOMEM;
    }
    L->arch = arch;
    L->err = err;
    L->errlen = errlen;
    /* the presets are cnn: specs (train.h) */
    static const struct { const char *name, *spec; } presets[] = {
        { "resnet", DCZ_ARCH_RESNET },
        { "mobilenetv2", DCZ_ARCH_MOBILENETV2 },
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(arch, presets[i].name) == 0) arch = L->arch = presets[i].spec;
    dcz_status st;
    if (strcmp(arch, "lenet300") == 0) {
        static const int lenet[] = { 784, 300, 100, 10 };
        st = build_mlp(lenet, 4, L);
    } else if (strncmp(arch, "mlp:", 4) == 0) {
        int widths[ARCH_MAX_WIDTHS], nw = 0;
        st = parse_mlp(arch, widths, &nw, err, errlen);
        if (st == DCZ_OK) st = build_mlp(widths, nw, L);
    } else if (strcmp(arch, "lenet5") == 0) {
        st = build_lenet5(L);
    } else if (strncmp(arch, "cnn:", 4) == 0) {
        st = build_cnn(L);
    } else {
        dcz_train_err(err, errlen, "unknown architecture \"%s\" (expected lenet300, lenet5, resnet, "
                      "mobilenetv2, mlp:IN-H1-...-OUT or cnn:TOKENS)", arch);
        st = DCZ_ERR_ARG;
    }
    if (st == DCZ_OK) st = build(L, seed, out);
    free(L);
    return st;
}
