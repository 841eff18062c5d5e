/* onnx_export.c: a .dcz document as an ONNX model (dense fp32).
 *
 * The document's values are already dense numbers (dcz_doc_read decodes
 * codebooks, sparse positions and fp16 biases), so every layer becomes one
 * standard node with float32 initializers:
 *   DENSE           Gemm (transB 1), after a Flatten when its input is not flat
 *   CONV2D          Conv (group 1, dilations 1, symmetric pads)
 *   MAXPOOL         MaxPool; AVGPOOL AveragePool (count_include_pad);
 *   GLOBAL_AVGPOOL  GlobalAveragePool
 *   FLATTEN         Flatten (axis 1); RELU Relu
 *   SOFTMAX         Softmax (axis 1) over each whole sample: from opset 13 a
 *                   sample that is not flat goes through Flatten, Softmax and
 *                   a Reshape back
 * The input is "input" (batch, input dims) with a symbolic batch dimension,
 * the output "output". The structures are built on a pool of allocations
 * freed together once protobuf-c has packed them.
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

static Onnx__AttributeProto *attr_ints(builder *b, const char *name, const int64_t *v, size_t n)
{
    Onnx__AttributeProto *a = palloc(&b->pl, sizeof *a);
    int64_t *copy = palloc(&b->pl, n * sizeof *copy);
    if (!a || !copy) return NULL;
    const Onnx__AttributeProto init = ONNX__ATTRIBUTE_PROTO__INIT;
    *a = init;
    a->name = pstr(&b->pl, "%s", name);
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    memcpy(copy, v, n * sizeof *copy);
    a->n_ints = n;
    a->ints = copy;
    return a;
}

static Onnx__AttributeProto *attr_int(builder *b, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = palloc(&b->pl, sizeof *a);
    if (!a) return NULL;
    const Onnx__AttributeProto init = ONNX__ATTRIBUTE_PROTO__INIT;
    *a = init;
    a->name = pstr(&b->pl, "%s", name);
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
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
    return 8;
}

/* Layer names become value and initializer names when they are usable:
 * unique, non-empty, and neither "input" nor "output". */
static int names_usable(const dcz_doc *d)
{
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const char *n = d->layers[i].name;
        if (!*n || strcmp(n, "input") == 0 || strcmp(n, "output") == 0) return 0;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(n, d->layers[j].name) == 0) return 0;
    }
    return 1;
}

dcz_status dcz_onnx_export(const dcz_doc *d, const dcz_onnx_export_opts *opt, uint8_t **buf,
                           size_t *len, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!d || !buf || !len) return DCZ_ERR_ARG;
    *buf = NULL;
    *len = 0;
    const int opset = opt && opt->opset ? opt->opset : DCZ_ONNX_OPSET_DEFAULT;
    if (opset < DCZ_ONNX_OPSET_MIN || opset > DCZ_ONNX_OPSET_MAX) {
        if (err) snprintf(err, errlen, "opset %d: dcz writes opsets %d to %d", opset, DCZ_ONNX_OPSET_MIN,
                          DCZ_ONNX_OPSET_MAX);
        return DCZ_ERR_ARG;
    }
    if (d->nlayers == 0 || d->input_rank < 1 || d->input_rank > DCZ_MAX_RANK) {
        if (err) snprintf(err, errlen, "the model has no layers or no input shape");
        return DCZ_ERR_ARG;
    }
    builder b;
    memset(&b, 0, sizeof b);
    b.capnodes = 3 * (size_t)d->nlayers;
    b.capinits = 2 * (size_t)d->nlayers + 1;
    b.nodes = palloc(&b.pl, b.capnodes * sizeof *b.nodes);
    b.inits = palloc(&b.pl, b.capinits * sizeof *b.inits);
    const int pretty = names_usable(d);
    dcz_status s = DCZ_OK;
    dcz_shape shape = { d->input_rank, { 0 } };
    memcpy(shape.dims, d->input_dims, sizeof shape.dims);
    const dcz_shape input_shape = shape;
    const char *cur = "input";
    for (uint32_t i = 0; i < d->nlayers && s == DCZ_OK && !b.pl.oom; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        const int32_t *a = l->attr;
        dcz_shape next;
        if (l->nin != 1 || l->in[0] != i) {
            if (err) snprintf(err, errlen, "layer %s: export takes a chain of layers, each reading the one "
                              "before it", l->name);
            s = DCZ_ERR_UNSUPPORTED;
            break;
        }
        if (dcz_op_shape(l->op, l->attr, l->nattr, &shape, 1, &next) != DCZ_OK) {
            if (err) snprintf(err, errlen, "layer %s does not fit its input", l->name);
            s = DCZ_ERR_SHAPE;
            break;
        }
        const int last = i + 1 == d->nlayers;
        char base[96];
        if (pretty) snprintf(base, sizeof base, "%s", l->name);
        else snprintf(base, sizeof base, "%s_%u", *l->name ? l->name : "layer", i);
        const char *out = last ? "output" : pstr(&b.pl, "%s", base);
        const char *wname = pstr(&b.pl, "%s.weight", base), *bname = pstr(&b.pl, "%s.bias", base);
        if (!out || !wname || !bname) break;
        switch (l->op) {
        case DCZ_OP_DENSE: {
            if (l->ntensors != 2) { s = DCZ_ERR_FORMAT; break; }
            if (shape.rank != 1) {   /* Gemm takes (batch, features) */
                const char *flat = pstr(&b.pl, "%s_flat", base);
                Onnx__AttributeProto *fa[1] = { attr_int(&b, "axis", 1) };
                node(&b, "Flatten", flat, &cur, 1, flat, fa, 1);
                cur = flat;
            }
            const char *in[3] = { cur, wname, bname };
            Onnx__AttributeProto *ga[1] = { attr_int(&b, "transB", 1) };
            node(&b, "Gemm", base, in, 3, out, ga, 1);
            init_f32(&b, wname, l->t[0].dims, l->t[0].rank, l->t[0].values, l->t[0].n);
            init_f32(&b, bname, l->t[1].dims, l->t[1].rank, l->t[1].values, l->t[1].n);
            break;
        }
        case DCZ_OP_CONV2D: {
            if (l->ntensors != 2) { s = DCZ_ERR_FORMAT; break; }
            const int64_t k[2] = { a[2], a[3] }, st[2] = { a[4], a[5] }, pads[4] = { a[6], a[7], a[6], a[7] };
            const int64_t one[2] = { 1, 1 };
            Onnx__AttributeProto *ca[5] = { attr_ints(&b, "kernel_shape", k, 2), attr_ints(&b, "strides", st, 2),
                                            attr_ints(&b, "pads", pads, 4), attr_ints(&b, "dilations", one, 2),
                                            attr_int(&b, "group", 1) };
            const char *in[3] = { cur, wname, bname };
            node(&b, "Conv", base, in, 3, out, ca, 5);
            init_f32(&b, wname, l->t[0].dims, l->t[0].rank, l->t[0].values, l->t[0].n);
            init_f32(&b, bname, l->t[1].dims, l->t[1].rank, l->t[1].values, l->t[1].n);
            break;
        }
        case DCZ_OP_MAXPOOL:
        case DCZ_OP_AVGPOOL: {
            const int64_t k[2] = { a[0], a[1] }, st[2] = { a[2], a[3] }, pads[4] = { a[4], a[5], a[4], a[5] };
            Onnx__AttributeProto *pa[4] = { attr_ints(&b, "kernel_shape", k, 2), attr_ints(&b, "strides", st, 2),
                                            attr_ints(&b, "pads", pads, 4), NULL };
            const int avg = l->op == DCZ_OP_AVGPOOL;
            if (avg) pa[3] = attr_int(&b, "count_include_pad", a[6]);
            node(&b, avg ? "AveragePool" : "MaxPool", base, &cur, 1, out, pa, avg ? 4 : 3);
            break;
        }
        case DCZ_OP_GLOBAL_AVGPOOL:
            node(&b, "GlobalAveragePool", base, &cur, 1, out, NULL, 0);
            break;
        case DCZ_OP_FLATTEN: {
            Onnx__AttributeProto *fa[1] = { attr_int(&b, "axis", 1) };
            node(&b, "Flatten", base, &cur, 1, out, fa, 1);
            break;
        }
        case DCZ_OP_RELU:
            node(&b, "Relu", base, &cur, 1, out, NULL, 0);
            break;
        case DCZ_OP_SOFTMAX: {
            Onnx__AttributeProto *sa[1] = { attr_int(&b, "axis", 1) };
            if (shape.rank == 1 || opset < 13) {   /* axis 1: the whole sample */
                node(&b, "Softmax", base, &cur, 1, out, sa, 1);
                break;
            }
            const char *flat = pstr(&b.pl, "%s_flat", base), *prob = pstr(&b.pl, "%s_flatprob", base);
            const char *sname = pstr(&b.pl, "%s.shape", base);
            Onnx__AttributeProto *fa[1] = { attr_int(&b, "axis", 1) };
            node(&b, "Flatten", flat, &cur, 1, flat, fa, 1);
            node(&b, "Softmax", base, &flat, 1, prob, sa, 1);
            int64_t sh[1 + DCZ_MAX_RANK] = { -1 };
            for (uint32_t k = 0; k < shape.rank; k++) sh[k + 1] = shape.dims[k];
            init_i64(&b, sname, sh, shape.rank + 1);
            const char *in[2] = { prob, sname };
            node(&b, "Reshape", pstr(&b.pl, "%s_reshape", base), in, 2, out, NULL, 0);
            break;
        }
        default:
            if (err) snprintf(err, errlen, "layer %s: operator %u has no ONNX form here", l->name, l->op);
            s = DCZ_ERR_UNSUPPORTED;
        }
        cur = out;
        shape = next;
    }
    if (s == DCZ_OK && !b.pl.oom) {
        Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
        Onnx__ValueInfoProto *vin = value_info(&b, "input", &input_shape), *vout = value_info(&b, "output", &shape);
        Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT;
        Onnx__OperatorSetIdProto *osp = &os;
        Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
        g.n_node = b.nnodes;
        g.node = b.nodes;
        g.name = "dcz";
        g.n_initializer = b.ninits;
        g.initializer = b.inits;
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
        if (vin && vout && !b.pl.oom) {
            size_t n = onnx__model_proto__get_packed_size(&m);
            uint8_t *p = malloc(n ? n : 1);
            if (p && onnx__model_proto__pack(&m, p) == n) {
                *buf = p;
                *len = n;
            } else {
                free(p);
                s = DCZ_ERR_NOMEM;
            }
        } else s = DCZ_ERR_NOMEM;
    } else if (s == DCZ_OK) s = DCZ_ERR_NOMEM;
    pool_free(&b.pl);
    return s;
}
