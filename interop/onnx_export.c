/* onnx_export.c: a .dcz document as an ONNX model (dense fp32).
 *
 * The document's values are already dense numbers (dcz_doc_read decodes
 * codebooks, sparse positions and fp16 biases), so every layer becomes one
 * standard node (sometimes two or three) with float32 initializers. Its
 * graph carries over as it is: tensor 0 is the value "input", the last
 * layer's output "output", every other layer's output the value named after
 * the layer, and each node reads the values of its layer's inputs:
 *   DENSE           Gemm (transB 1), after a Flatten when its input is not flat
 *   CONV2D          Conv (group, dilations 1, symmetric pads)
 *   MAXPOOL         MaxPool; AVGPOOL AveragePool (count_include_pad);
 *   GLOBAL_AVGPOOL  GlobalAveragePool
 *   FLATTEN         Flatten (axis 1); CONCAT Concat (axis 1)
 *   ADD             Add; MUL Mul, factors (C) of an x (C, ...) reshaped to
 *                   (N, C, 1, ...) first
 *   RELU, SIGMOID,  Relu, Sigmoid, Tanh, LeakyRelu (alpha), HardSigmoid
 *   TANH, ...       (alpha, beta), Clip (min and max as scalar
 *                   initializers); HARD_SWISH HardSwish from opset 14,
 *                   before that x HardSigmoid(x) (alpha 1/6, beta 1/2)
 *   SLICE           Slice of axis 1 (starts, ends, axes as initializers)
 *   CHANNEL_SHUFFLE Reshape to (N, g, C / g, ...), Transpose (perm 0, 2, 1,
 *                   ...), Reshape to (N, C, ...)
 *   SILU            Sigmoid, then Mul of the input and the Sigmoid (the
 *                   importer reads the pair back as one SILU)
 *   SOFTMAX         Softmax (axis 1) over each whole sample: from opset 13 a
 *                   sample that is not flat goes through Flatten, Softmax and
 *                   a Reshape back
 * The opset is the caller's, else 13, or 14 for a model with HARD_SWISH
 * (dcz_onnx_export_opset). The input and output have a symbolic batch
 * dimension. The structures are built on a pool of allocations freed
 * together once protobuf-c has packed them.
 *
 * Checked by tests/unit/test_onnx.c (export, onnx import, equal outputs)
 * and tests/cli/interop.sh (onnx.checker when python3-onnx is present).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

#include "interop/interop.h"

/* ---- a pool of allocations ---------------------------------------------------- */

typedef struct pool {
    void **p;
    size_t n, cap;
    int oom;
} pool;

static void *palloc(pool *pl, size_t size)
{
    if (pl->oom) return NULL;
    if (pl->n == pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : 256;
        void **np = realloc(pl->p, cap * sizeof *np);
        if (!np) { pl->oom = 1; return NULL; }
        pl->p = np;
        pl->cap = cap;
    }
    void *q = calloc(1, size ? size : 1);
    if (!q) { pl->oom = 1; return NULL; }
    pl->p[pl->n++] = q;
    return q;
}

static char *pstr(pool *pl, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    char *s = palloc(pl, strlen(tmp) + 1);
    if (s) strcpy(s, tmp);
    return s;
}

static void pool_free(pool *pl)
{
    for (size_t k = 0; k < pl->n; k++) free(pl->p[k]);
    free(pl->p);
    memset(pl, 0, sizeof *pl);
}

/* ---- builders ------------------------------------------------------------------- */

typedef struct builder {
    pool pl;
    Onnx__NodeProto **nodes;
    size_t nnodes, capnodes;
    Onnx__TensorProto **inits;
    size_t ninits, capinits;
} builder;

/* A new attribute named name of type t, its value still to set. */
static Onnx__AttributeProto *attr_new(builder *b, const char *name, Onnx__AttributeProto__AttributeType t)
{
    Onnx__AttributeProto *a = palloc(&b->pl, sizeof *a);
    if (!a) return NULL;
    const Onnx__AttributeProto init = ONNX__ATTRIBUTE_PROTO__INIT;
    *a = init;
    a->name = pstr(&b->pl, "%s", name);
    a->has_type = 1;
    a->type = t;
    return a;
}

static Onnx__AttributeProto *attr_ints(builder *b, const char *name, const int64_t *v, size_t n)
{
    Onnx__AttributeProto *a = attr_new(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *copy = palloc(&b->pl, n * sizeof *copy);
    if (!a || !copy) return NULL;
    memcpy(copy, v, n * sizeof *copy);
    a->n_ints = n;
    a->ints = copy;
    return a;
}

static Onnx__AttributeProto *attr_int(builder *b, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr_new(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (!a) return NULL;
    a->has_i = 1;
    a->i = v;
    return a;
}

/* Appends a node op(inputs) -> output with the given attributes (NULL
 * entries of attrs mean an allocation failed). */
static void node(builder *b, const char *op, const char *name, const char *const *in, size_t nin,
                 const char *out, Onnx__AttributeProto **attrs, size_t nattrs)
{
    Onnx__NodeProto *n = palloc(&b->pl, sizeof *n);
    char **ins = palloc(&b->pl, nin * sizeof *ins), **outs = palloc(&b->pl, sizeof *outs);
    Onnx__AttributeProto **as = palloc(&b->pl, nattrs * sizeof *as);
    if (!n || !ins || !outs || !as || !name || !out || b->nnodes == b->capnodes) { b->pl.oom = 1; return; }
    for (size_t k = 0; k < nin; k++)
        if (!in[k]) { b->pl.oom = 1; return; }
    const Onnx__NodeProto init = ONNX__NODE_PROTO__INIT;
    *n = init;
    for (size_t k = 0; k < nin; k++) ins[k] = pstr(&b->pl, "%s", in[k]);
    outs[0] = pstr(&b->pl, "%s", out);
    for (size_t k = 0; k < nattrs; k++) {
        if (!attrs[k]) { b->pl.oom = 1; return; }
        as[k] = attrs[k];
    }
    n->n_input = nin;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    n->name = pstr(&b->pl, "%s", name);
    n->op_type = pstr(&b->pl, "%s", op);
    n->n_attribute = nattrs;
    n->attribute = as;
    b->nodes[b->nnodes++] = n;
}

/* An initializer of float32 values, stored little-endian in raw_data. */
static void init_f32(builder *b, const char *name, const uint32_t *dims, uint32_t rank, const float *v, size_t n)
{
    Onnx__TensorProto *t = palloc(&b->pl, sizeof *t);
    int64_t *d = palloc(&b->pl, rank * sizeof *d);
    uint8_t *raw = palloc(&b->pl, n * 4);
    if (!t || !d || !raw || b->ninits == b->capinits) { b->pl.oom = 1; return; }
    const Onnx__TensorProto init = ONNX__TENSOR_PROTO__INIT;
    *t = init;
    for (uint32_t k = 0; k < rank; k++) d[k] = dims[k];
    for (size_t k = 0; k < n; k++) dcz_put32(raw + 4 * k, dcz_f32_bits(v[k]));
    t->n_dims = rank;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->name = pstr(&b->pl, "%s", name);
    t->has_raw_data = 1;
    t->raw_data.len = n * 4;
    t->raw_data.data = raw;
    b->inits[b->ninits++] = t;
}

/* An initializer of int64 values (a Reshape's shape). */
static void init_i64(builder *b, const char *name, const int64_t *v, size_t n)
{
    Onnx__TensorProto *t = palloc(&b->pl, sizeof *t);
    int64_t *d = palloc(&b->pl, sizeof *d);
    uint8_t *raw = palloc(&b->pl, n * 8);
    if (!t || !d || !raw || b->ninits == b->capinits) { b->pl.oom = 1; return; }
    const Onnx__TensorProto init = ONNX__TENSOR_PROTO__INIT;
    *t = init;
    d[0] = (int64_t)n;
    for (size_t k = 0; k < n; k++) {
        dcz_put32(raw + 8 * k, (uint32_t)(uint64_t)v[k]);
        dcz_put32(raw + 8 * k + 4, (uint32_t)((uint64_t)v[k] >> 32));
    }
    t->n_dims = 1;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->name = pstr(&b->pl, "%s", name);
    t->has_raw_data = 1;
    t->raw_data.len = n * 8;
    t->raw_data.data = raw;
    b->inits[b->ninits++] = t;
}

/* A float tensor value of shape (batch, s) with a symbolic batch. */
static Onnx__ValueInfoProto *value_info(builder *b, const char *name, const dcz_shape *s)
{
    Onnx__ValueInfoProto *v = palloc(&b->pl, sizeof *v);
    Onnx__TypeProto *tp = palloc(&b->pl, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = palloc(&b->pl, sizeof *tt);
    Onnx__TensorShapeProto *sh = palloc(&b->pl, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims = palloc(&b->pl, (s->rank + 1) * sizeof *dims);
    if (!v || !tp || !tt || !sh || !dims) return NULL;
    for (uint32_t k = 0; k <= s->rank; k++) {
        Onnx__TensorShapeProto__Dimension *d = palloc(&b->pl, sizeof *d);
        if (!d) return NULL;
        const Onnx__TensorShapeProto__Dimension init = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        *d = init;
        if (k == 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = pstr(&b->pl, "batch");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = s->dims[k - 1];
        }
        dims[k] = d;
    }
    const Onnx__TensorShapeProto sinit = ONNX__TENSOR_SHAPE_PROTO__INIT;
    *sh = sinit;
    sh->n_dim = s->rank + 1;
    sh->dim = dims;
    const Onnx__TypeProto__Tensor tinit = ONNX__TYPE_PROTO__TENSOR__INIT;
    *tt = tinit;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    const Onnx__TypeProto tpinit = ONNX__TYPE_PROTO__INIT;
    *tp = tpinit;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    const Onnx__ValueInfoProto vinit = ONNX__VALUE_INFO_PROTO__INIT;
    *v = vinit;
    v->name = pstr(&b->pl, "%s", name);
    v->type = tp;
    return v;
}

/* The IR version that goes with an opset (onnx/helper.py's table). */
static int64_t ir_for_opset(int opset)
{
    if (opset <= 11) return 6;
    if (opset <= 14) return 7;
    if (opset <= 18) return 8;
    if (opset <= 20) return 9;
    return 10;
}

/* Layer names become value and initializer names when they are usable:
 * unique, non-empty, neither "input" nor "output", and without '_' or '.'
 * (which the names derived from them add: LAYER_flat, LAYER.weight). */
static int names_usable(const dcz_doc *d)
{
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const char *n = d->layers[i].name;
        if (!*n || strcmp(n, "input") == 0 || strcmp(n, "output") == 0 || strpbrk(n, "_.")) return 0;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(n, d->layers[j].name) == 0) return 0;
    }
    return 1;
}

/* One layer to write: the names of its node, its output and its inputs,
 * and the shapes of its inputs (one sample). */
typedef struct lay {
    builder *b;
    const dcz_doc_layer *l;
    const char *base;                           /* node name, prefix of its initializers */
    const char *out;
    const char *in[DCZ_MAX_INPUTS];
    const dcz_shape *shape[DCZ_MAX_INPUTS];
    int opset;
} lay;

static Onnx__AttributeProto *attr_float(builder *b, const char *name, float v)
{
    Onnx__AttributeProto *a = attr_new(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (!a) return NULL;
    a->has_f = 1;
    a->f = v;
    return a;
}

/* The weight and bias initializers of a DENSE or CONV2D layer. */
static void put_params(const lay *y, const char *wname, const char *bname)
{
    const dcz_doc_layer *l = y->l;
    init_f32(y->b, wname, l->t[0].dims, l->t[0].rank, l->t[0].values, l->t[0].n);
    init_f32(y->b, bname, l->t[1].dims, l->t[1].rank, l->t[1].values, l->t[1].n);
}

/* DENSE: Gemm (transB 1), after a Flatten when the input is not flat. */
static void put_dense(const lay *y)
{
    builder *b = y->b;
    const char *x = y->in[0], *wname = pstr(&b->pl, "%s.weight", y->base), *bname = pstr(&b->pl, "%s.bias", y->base);
    if (y->shape[0]->rank != 1) {   /* Gemm takes (batch, features) */
        const char *flat = pstr(&b->pl, "%s_flat", y->base);
        Onnx__AttributeProto *fa[1] = { attr_int(b, "axis", 1) };
        node(b, "Flatten", flat, &x, 1, flat, fa, 1);
        x = flat;
    }
    const char *in[3] = { x, wname, bname };
    Onnx__AttributeProto *ga[1] = { attr_int(b, "transB", 1) };
    node(b, "Gemm", y->base, in, 3, y->out, ga, 1);
    put_params(y, wname, bname);
}

/* CONV2D: Conv with its group, dilations 1 and symmetric pads. */
static void put_conv(const lay *y)
{
    builder *b = y->b;
    const int32_t *a = y->l->attr;
    const char *wname = pstr(&b->pl, "%s.weight", y->base), *bname = pstr(&b->pl, "%s.bias", y->base);
    const int64_t k[2] = { a[2], a[3] }, st[2] = { a[4], a[5] }, pads[4] = { a[6], a[7], a[6], a[7] };
    const int64_t one[2] = { 1, 1 };
    Onnx__AttributeProto *ca[5] = { attr_ints(b, "kernel_shape", k, 2), attr_ints(b, "strides", st, 2),
                                    attr_ints(b, "pads", pads, 4), attr_ints(b, "dilations", one, 2),
                                    attr_int(b, "group", a[8]) };
    const char *in[3] = { y->in[0], wname, bname };
    node(b, "Conv", y->base, in, 3, y->out, ca, 5);
    put_params(y, wname, bname);
}

static void put_pool(const lay *y)
{
    builder *b = y->b;
    const int32_t *a = y->l->attr;
    const int64_t k[2] = { a[0], a[1] }, st[2] = { a[2], a[3] }, pads[4] = { a[4], a[5], a[4], a[5] };
    Onnx__AttributeProto *pa[4] = { attr_ints(b, "kernel_shape", k, 2), attr_ints(b, "strides", st, 2),
                                    attr_ints(b, "pads", pads, 4), NULL };
    const int avg = y->l->op == DCZ_OP_AVGPOOL;
    if (avg) pa[3] = attr_int(b, "count_include_pad", a[6]);
    node(b, avg ? "AveragePool" : "MaxPool", y->base, y->in, 1, y->out, pa, avg ? 4 : 3);
}

/* SOFTMAX over each whole sample: Softmax (axis 1); from opset 13 a sample
 * that is not flat goes through Flatten, Softmax and a Reshape back. */
static void put_softmax(const lay *y)
{
    builder *b = y->b;
    const dcz_shape *shape = y->shape[0];
    Onnx__AttributeProto *sa[1] = { attr_int(b, "axis", 1) };
    if (shape->rank == 1 || y->opset < 13) {
        node(b, "Softmax", y->base, y->in, 1, y->out, sa, 1);
        return;
    }
    const char *flat = pstr(&b->pl, "%s_flat", y->base), *prob = pstr(&b->pl, "%s_flatprob", y->base);
    const char *sname = pstr(&b->pl, "%s.shape", y->base);
    Onnx__AttributeProto *fa[1] = { attr_int(b, "axis", 1) };
    node(b, "Flatten", flat, y->in, 1, flat, fa, 1);
    node(b, "Softmax", y->base, &flat, 1, prob, sa, 1);
    int64_t sh[1 + DCZ_MAX_RANK] = { -1 };
    for (uint32_t k = 0; k < shape->rank; k++) sh[k + 1] = shape->dims[k];
    init_i64(b, sname, sh, shape->rank + 1);
    const char *in[2] = { prob, sname };
    node(b, "Reshape", pstr(&b->pl, "%s_reshape", y->base), in, 2, y->out, NULL, 0);
}

/* MUL: Mul, factors (C) of an x (C, ...) reshaped to (N, C, 1, ...) first
 * so that ONNX broadcasting gives one factor per channel. */
static void put_mul(const lay *y)
{
    builder *b = y->b;
    const dcz_shape *x = y->shape[0], *f = y->shape[1];
    const char *in[2] = { y->in[0], y->in[1] };
    if (f->rank != x->rank) {
        const char *fname = pstr(&b->pl, "%s_factors", y->base), *sname = pstr(&b->pl, "%s.factor_shape", y->base);
        int64_t sh[1 + DCZ_MAX_RANK] = { -1, f->dims[0], 1, 1, 1 };
        init_i64(b, sname, sh, x->rank + 1);
        const char *rin[2] = { y->in[1], sname };
        node(b, "Reshape", fname, rin, 2, fname, NULL, 0);
        in[1] = fname;
    }
    node(b, "Mul", y->base, in, 2, y->out, NULL, 0);
}

/* CLIP: Clip with its bounds as scalar initializers (inputs from opset 11). */
static void put_clip(const lay *y)
{
    builder *b = y->b;
    const float lo = dcz_attr_f32(y->l->attr[0]), hi = dcz_attr_f32(y->l->attr[1]);
    const char *in[3] = { y->in[0], pstr(&b->pl, "%s.min", y->base), pstr(&b->pl, "%s.max", y->base) };
    init_f32(b, in[1], NULL, 0, &lo, 1);
    init_f32(b, in[2], NULL, 0, &hi, 1);
    node(b, "Clip", y->base, in, 3, y->out, NULL, 0);
}

/* HARD_SWISH: HardSwish from opset 14; before, x HardSigmoid(x) with alpha
 * 1/6 and beta 1/2. */
static void put_hard_swish(const lay *y)
{
    builder *b = y->b;
    if (y->opset >= 14) {
        node(b, "HardSwish", y->base, y->in, 1, y->out, NULL, 0);
        return;
    }
    const char *gate = pstr(&b->pl, "%s_gate", y->base);
    Onnx__AttributeProto *ha[2] = { attr_float(b, "alpha", 1.0f / 6.0f), attr_float(b, "beta", 0.5f) };
    node(b, "HardSigmoid", gate, y->in, 1, gate, ha, 2);
    const char *in[2] = { y->in[0], gate };
    node(b, "Mul", y->base, in, 2, y->out, NULL, 0);
}

/* SLICE: Slice of the channels (axis 1), its bounds as initializers. */
static void put_slice(const lay *y)
{
    builder *b = y->b;
    const int64_t start = y->l->attr[0], end = (int64_t)y->l->attr[0] + y->l->attr[1], axis = 1;
    const char *in[4] = { y->in[0], pstr(&b->pl, "%s.starts", y->base), pstr(&b->pl, "%s.ends", y->base),
                          pstr(&b->pl, "%s.axes", y->base) };
    init_i64(b, in[1], &start, 1);
    init_i64(b, in[2], &end, 1);
    init_i64(b, in[3], &axis, 1);
    node(b, "Slice", y->base, in, 4, y->out, NULL, 0);
}

/* CHANNEL_SHUFFLE of g groups: Reshape to (N, g, C / g, ...), Transpose of
 * the two channel axes, Reshape back to (N, C, ...): the form exporters
 * write for ShuffleNet, which the importer reads back as one layer. */
static void put_shuffle(const lay *y)
{
    builder *b = y->b;
    const dcz_shape *x = y->shape[0];
    const int64_t g = y->l->attr[0];
    int64_t split[2 + DCZ_MAX_RANK] = { -1, g, x->dims[0] / g }, back[1 + DCZ_MAX_RANK] = { -1 },
            perm[2 + DCZ_MAX_RANK] = { 0, 2, 1 };
    for (uint32_t k = 0; k < x->rank; k++) {
        back[k + 1] = x->dims[k];
        if (k) split[k + 2] = x->dims[k];
        if (k) perm[k + 2] = k + 2;
    }
    const char *groups = pstr(&b->pl, "%s_groups", y->base), *swapped = pstr(&b->pl, "%s_swapped", y->base);
    const char *sname = pstr(&b->pl, "%s.groups_shape", y->base), *bname = pstr(&b->pl, "%s.shape", y->base);
    init_i64(b, sname, split, x->rank + 2);
    init_i64(b, bname, back, x->rank + 1);
    const char *rin[2] = { y->in[0], sname }, *bin[2] = { swapped, bname };
    node(b, "Reshape", groups, rin, 2, groups, NULL, 0);
    Onnx__AttributeProto *ta[1] = { attr_ints(b, "perm", perm, x->rank + 2) };
    node(b, "Transpose", swapped, &groups, 1, swapped, ta, 1);
    node(b, "Reshape", y->base, bin, 2, y->out, NULL, 0);
}

/* SILU: x Sigmoid(x), a Sigmoid then a Mul, as exporters write SiLU (ONNX
 * has no operator of its own for it before opset 24). */
static void put_silu(const lay *y)
{
    builder *b = y->b;
    const char *gate = pstr(&b->pl, "%s_sigmoid", y->base);
    node(b, "Sigmoid", gate, y->in, 1, gate, NULL, 0);
    const char *in[2] = { y->in[0], gate };
    node(b, "Mul", y->base, in, 2, y->out, NULL, 0);
}

/* Operators that are one ONNX node with the same inputs and no attributes. */
static const struct { uint16_t op; const char *onnx; } plain_ops[] = {
    { DCZ_OP_RELU, "Relu" }, { DCZ_OP_SIGMOID, "Sigmoid" }, { DCZ_OP_TANH, "Tanh" }, { DCZ_OP_ADD, "Add" },
    { DCZ_OP_GLOBAL_AVGPOOL, "GlobalAveragePool" },
};

/* Writes one layer; DCZ_ERR_UNSUPPORTED for an operator with no ONNX form
 * here, DCZ_ERR_FORMAT for a weighted layer without its two tensors. */
static dcz_status put_layer(const lay *y)
{
    builder *b = y->b;
    const dcz_doc_layer *l = y->l;
    for (size_t k = 0; k < sizeof plain_ops / sizeof *plain_ops; k++)
        if (plain_ops[k].op == l->op) {
            node(b, plain_ops[k].onnx, y->base, y->in, l->nin, y->out, NULL, 0);
            return DCZ_OK;
        }
    Onnx__AttributeProto *a[2];
    switch (l->op) {
    case DCZ_OP_DENSE:
    case DCZ_OP_CONV2D:
        if (l->ntensors != 2) return DCZ_ERR_FORMAT;
        if (l->op == DCZ_OP_DENSE) put_dense(y);
        else put_conv(y);
        return DCZ_OK;
    case DCZ_OP_MAXPOOL:
    case DCZ_OP_AVGPOOL: put_pool(y); return DCZ_OK;
    case DCZ_OP_SOFTMAX: put_softmax(y); return DCZ_OK;
    case DCZ_OP_MUL: put_mul(y); return DCZ_OK;
    case DCZ_OP_CLIP: put_clip(y); return DCZ_OK;
    case DCZ_OP_HARD_SWISH: put_hard_swish(y); return DCZ_OK;
    case DCZ_OP_SLICE: put_slice(y); return DCZ_OK;
    case DCZ_OP_CHANNEL_SHUFFLE: put_shuffle(y); return DCZ_OK;
    case DCZ_OP_SILU: put_silu(y); return DCZ_OK;
    case DCZ_OP_FLATTEN:
    case DCZ_OP_CONCAT:
        a[0] = attr_int(b, "axis", 1);
        node(b, l->op == DCZ_OP_FLATTEN ? "Flatten" : "Concat", y->base, y->in, l->nin, y->out, a, 1);
        return DCZ_OK;
    case DCZ_OP_LEAKY_RELU:
        a[0] = attr_float(b, "alpha", dcz_attr_f32(l->attr[0]));
        node(b, "LeakyRelu", y->base, y->in, 1, y->out, a, 1);
        return DCZ_OK;
    case DCZ_OP_HARD_SIGMOID:
        a[0] = attr_float(b, "alpha", dcz_attr_f32(l->attr[0]));
        a[1] = attr_float(b, "beta", dcz_attr_f32(l->attr[1]));
        node(b, "HardSigmoid", y->base, y->in, 1, y->out, a, 2);
        return DCZ_OK;
    }
    return DCZ_ERR_UNSUPPORTED;
}

int dcz_onnx_export_opset(const dcz_doc *d, int opset)
{
    if (opset) return opset;
    for (uint32_t i = 0; d && i < d->nlayers; i++)
        if (d->layers[i].op == DCZ_OP_HARD_SWISH && DCZ_ONNX_OPSET_DEFAULT < 14) return 14;
    return DCZ_ONNX_OPSET_DEFAULT;
}

/* Packs the graph of b, with its input and output, into *buf. */
static dcz_status pack(builder *b, const dcz_onnx_export_opts *opt, int opset, const dcz_shape *in,
                       const dcz_shape *out, uint8_t **buf, size_t *len)
{
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    Onnx__ValueInfoProto *vin = value_info(b, "input", in), *vout = value_info(b, "output", out);
    Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    Onnx__OperatorSetIdProto *osp = &os;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    if (!vin || !vout || b->pl.oom) return DCZ_ERR_NOMEM;
    g.n_node = b->nnodes;
    g.node = b->nodes;
    g.name = "dcz";
    g.n_initializer = b->ninits;
    g.initializer = b->inits;
    g.n_input = 1;
    g.input = &vin;
    g.n_output = 1;
    g.output = &vout;
    os.domain = "";
    os.has_version = 1;
    os.version = opset;
    m.has_ir_version = 1;
    m.ir_version = ir_for_opset(opset);
    m.n_opset_import = 1;
    m.opset_import = &osp;
    m.producer_name = "dcz";
    m.producer_version = DCZ_VERSION_STRING;
    m.graph = &g;
    if (opt && opt->doc_string) m.doc_string = (char *)opt->doc_string;
    size_t n = onnx__model_proto__get_packed_size(&m);
    uint8_t *p = malloc(n ? n : 1);
    if (!p || onnx__model_proto__pack(&m, p) != n) {
        free(p);
        return DCZ_ERR_NOMEM;
    }
    *buf = p;
    *len = n;
    return DCZ_OK;
}

dcz_status dcz_onnx_export(const dcz_doc *d, const dcz_onnx_export_opts *opt, uint8_t **buf,
                           size_t *len, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!d || !buf || !len) return DCZ_ERR_ARG;
    *buf = NULL;
    *len = 0;
    const int opset = dcz_onnx_export_opset(d, opt ? opt->opset : 0);
    if (opset < DCZ_ONNX_OPSET_MIN || opset > DCZ_ONNX_OPSET_MAX) {
        if (err) snprintf(err, errlen, "opset %d: dcz writes opsets %d to %d", opset, DCZ_ONNX_OPSET_MIN,
                          DCZ_ONNX_OPSET_MAX);
        return DCZ_ERR_ARG;
    }
    if (d->nlayers == 0 || d->input_rank < 1 || d->input_rank > DCZ_MAX_RANK) {
        if (err) snprintf(err, errlen, "the model has no layers or no input shape");
        return DCZ_ERR_ARG;
    }
    dcz_shape *shapes = malloc(((size_t)d->nlayers + 1) * sizeof *shapes);   /* tensor t: 0 the input */
    if (!shapes) return DCZ_ERR_NOMEM;
    dcz_status s = dcz_doc_shapes(d, shapes);
    if (s != DCZ_OK) {
        if (err) snprintf(err, errlen, "the model's layers do not fit together (%s)", dcz_status_str(s));
        free(shapes);
        return s;
    }
    builder b;
    memset(&b, 0, sizeof b);
    b.capnodes = 3 * (size_t)d->nlayers;
    b.capinits = 2 * (size_t)d->nlayers + 1;
    b.nodes = palloc(&b.pl, b.capnodes * sizeof *b.nodes);
    b.inits = palloc(&b.pl, b.capinits * sizeof *b.inits);
    const char **bases = palloc(&b.pl, d->nlayers * sizeof *bases);
    const char **values = palloc(&b.pl, ((size_t)d->nlayers + 1) * sizeof *values);   /* by tensor */
    const int pretty = names_usable(d);
    for (uint32_t i = 0; bases && values && i < d->nlayers; i++) {
        const char *n = d->layers[i].name;
        bases[i] = pretty ? pstr(&b.pl, "%s", n) : pstr(&b.pl, "%s_%u", *n ? n : "layer", i);
        values[i + 1] = i + 1 == d->nlayers ? "output" : bases[i];
    }
    if (values) values[0] = "input";
    for (uint32_t i = 0; i < d->nlayers && s == DCZ_OK && !b.pl.oom; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        lay y = { &b, l, bases[i], values[i + 1], { NULL }, { NULL }, opset };
        for (uint32_t k = 0; k < l->nin; k++) {
            y.in[k] = values[l->in[k]];
            y.shape[k] = &shapes[l->in[k]];
        }
        s = put_layer(&y);
        if (s != DCZ_OK && err)
            snprintf(err, errlen, "layer %s: %s", l->name, s == DCZ_ERR_FORMAT ? "its weight or bias is missing" :
                     "its operator has no ONNX form here");
    }
    if (s == DCZ_OK) s = b.pl.oom ? DCZ_ERR_NOMEM : pack(&b, opt, opset, &shapes[0], &shapes[d->nlayers], buf, len);
    pool_free(&b.pl);
    free(shapes);
    return s;
}
