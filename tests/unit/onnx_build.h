/* onnx_build.h: building small ONNX models in C for the tests, with the
 * protobuf-c bindings generated from onnx.proto. A builder owns every
 * allocation and frees them together (ob_free). */
#ifndef DCZ_TESTS_ONNX_BUILD_H
#define DCZ_TESTS_ONNX_BUILD_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "runtime/format/format.h"

#define OB_MAX 64

typedef struct ob {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto os, *osp;
    Onnx__NodeProto *nodes[OB_MAX];
    Onnx__TensorProto *inits[OB_MAX];
    Onnx__ValueInfoProto *ins[4], *outs[4];
    void **allocs;
    size_t nallocs, capallocs;
} ob;

static inline void *ob_alloc(ob *b, size_t size)
{
    if (b->nallocs == b->capallocs) {
        b->capallocs = b->capallocs ? b->capallocs * 2 : 256;
        b->allocs = realloc(b->allocs, b->capallocs * sizeof *b->allocs);
        if (!b->allocs) abort();
    }
    void *p = calloc(1, size ? size : 1);
    if (!p) abort();
    return b->allocs[b->nallocs++] = p;
}

static inline char *ob_str(ob *b, const char *s)
{
    char *c = ob_alloc(b, strlen(s) + 1);
    strcpy(c, s);
    return c;
}

/* A model of the given opset (0: no opset import), IR version 8. */
static inline void ob_init(ob *b, int opset)
{
    memset(b, 0, sizeof *b);
    const Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    const Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    const Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    b->m = m;
    b->g = g;
    b->os = os;
    b->os.domain = "";
    b->os.has_version = 1;
    b->os.version = opset;
    b->osp = &b->os;
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.n_opset_import = opset ? 1 : 0;
    b->m.opset_import = &b->osp;
    b->m.producer_name = "test";
    b->m.graph = &b->g;
    b->g.node = b->nodes;
    b->g.initializer = b->inits;
    b->g.input = b->ins;
    b->g.output = b->outs;
}

/* A float value of rank dims; a negative dim is symbolic ("N"); rank -1:
 * no shape. */
static inline Onnx__ValueInfoProto *ob_value(ob *b, const char *name, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = ob_alloc(b, sizeof *v);
    const Onnx__ValueInfoProto vi = ONNX__VALUE_INFO_PROTO__INIT;
    *v = vi;
    v->name = ob_str(b, name);
    Onnx__TypeProto *tp = ob_alloc(b, sizeof *tp);
    const Onnx__TypeProto tpi = ONNX__TYPE_PROTO__INIT;
    *tp = tpi;
    Onnx__TypeProto__Tensor *tt = ob_alloc(b, sizeof *tt);
    const Onnx__TypeProto__Tensor tti = ONNX__TYPE_PROTO__TENSOR__INIT;
    *tt = tti;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    if (rank < 0) return v;
    Onnx__TensorShapeProto *sh = ob_alloc(b, sizeof *sh);
    const Onnx__TensorShapeProto shi = ONNX__TENSOR_SHAPE_PROTO__INIT;
    *sh = shi;
    sh->n_dim = (size_t)rank;
    sh->dim = ob_alloc(b, (size_t)rank * sizeof *sh->dim);
    for (int k = 0; k < rank; k++) {
        Onnx__TensorShapeProto__Dimension *d = ob_alloc(b, sizeof *d);
        const Onnx__TensorShapeProto__Dimension di = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        *d = di;
        if (dims[k] < 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = ob_str(b, "N");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[k];
        }
        sh->dim[k] = d;
    }
    tt->shape = sh;
    return v;
}

static inline void ob_input(ob *b, const char *name, int rank, const int64_t *dims)
{
    b->ins[b->g.n_input++] = ob_value(b, name, rank, dims);
}

static inline void ob_output(ob *b, const char *name)
{
    b->outs[b->g.n_output++] = ob_value(b, name, -1, NULL);
}

/* Splits "a,b,,c" into strings (empty ones kept). */
static inline size_t ob_split(ob *b, const char *csv, char ***out)
{
    size_t n = *csv ? 1 : 0;
    for (const char *p = csv; *p; p++) n += *p == ',';
    char **v = ob_alloc(b, n * sizeof *v);
    const char *p = csv;
    for (size_t k = 0; k < n; k++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        v[k] = ob_alloc(b, len + 1);
        memcpy(v[k], p, len);
        p = e ? e + 1 : p + len;
    }
    *out = v;
    return n;
}

/* A node op(inputs) -> outputs, inputs and outputs as comma-separated
 * names; name may be NULL. */
static inline Onnx__NodeProto *ob_node(ob *b, const char *op, const char *name, const char *in, const char *out)
{
    Onnx__NodeProto *n = ob_alloc(b, sizeof *n);
    const Onnx__NodeProto ni = ONNX__NODE_PROTO__INIT;
    *n = ni;
    n->op_type = ob_str(b, op);
    if (name) n->name = ob_str(b, name);
    n->n_input = ob_split(b, in, &n->input);
    n->n_output = ob_split(b, out, &n->output);
    n->attribute = ob_alloc(b, 16 * sizeof *n->attribute);
    b->nodes[b->g.n_node++] = n;
    return n;
}

static inline Onnx__AttributeProto *ob_attr(ob *b, Onnx__NodeProto *n, const char *name,
                                            Onnx__AttributeProto__AttributeType t)
{
    Onnx__AttributeProto *a = ob_alloc(b, sizeof *a);
    const Onnx__AttributeProto ai = ONNX__ATTRIBUTE_PROTO__INIT;
    *a = ai;
    a->name = ob_str(b, name);
    a->has_type = 1;
    a->type = t;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static inline void ob_attr_i(ob *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static inline void ob_attr_f(ob *b, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static inline void ob_attr_s(ob *b, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)ob_str(b, v);
    a->s.len = strlen(v);
}

/* A list of count integers given after count. */
static inline void ob_attr_ints(ob *b, Onnx__NodeProto *n, const char *name, int count, ...)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->ints = ob_alloc(b, (size_t)count * sizeof *a->ints);
    a->n_ints = (size_t)count;
    va_list ap;
    va_start(ap, count);
    for (int k = 0; k < count; k++) a->ints[k] = va_arg(ap, int);
    va_end(ap);
}

static inline void ob_attr_floats(ob *b, Onnx__NodeProto *n, const char *name, const float *v, size_t count)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->floats = ob_alloc(b, count * sizeof *a->floats);
    memcpy(a->floats, v, count * sizeof *v);
    a->n_floats = count;
}

/* A tensor (not yet placed anywhere) of float32 in raw_data. */
static inline Onnx__TensorProto *ob_tensor_f(ob *b, const char *name, int rank, const int64_t *dims, const float *v)
{
    Onnx__TensorProto *t = ob_alloc(b, sizeof *t);
    const Onnx__TensorProto ti = ONNX__TENSOR_PROTO__INIT;
    *t = ti;
    if (name) t->name = ob_str(b, name);
    t->n_dims = (size_t)rank;
    t->dims = ob_alloc(b, (size_t)rank * sizeof *t->dims);
    size_t n = 1;
    for (int k = 0; k < rank; k++) {
        t->dims[k] = dims[k];
        n *= (size_t)(dims[k] > 0 ? dims[k] : 0);
    }
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->has_raw_data = 1;
    t->raw_data.len = n * 4;
    t->raw_data.data = ob_alloc(b, n * 4);
    for (size_t k = 0; k < n; k++) dcz_put32(t->raw_data.data + 4 * k, dcz_f32_bits(v[k]));
    return t;
}

static inline Onnx__TensorProto *ob_tensor_i64(ob *b, const char *name, size_t n, const int64_t *v)
{
    Onnx__TensorProto *t = ob_alloc(b, sizeof *t);
    const Onnx__TensorProto ti = ONNX__TENSOR_PROTO__INIT;
    *t = ti;
    if (name) t->name = ob_str(b, name);
    t->n_dims = 1;
    t->dims = ob_alloc(b, sizeof *t->dims);
    t->dims[0] = (int64_t)n;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->int64_data = ob_alloc(b, n * sizeof *v);
    memcpy(t->int64_data, v, n * sizeof *v);
    t->n_int64_data = n;
    return t;
}

static inline Onnx__TensorProto *ob_init_f(ob *b, const char *name, int rank, const int64_t *dims, const float *v)
{
    return b->inits[b->g.n_initializer++] = ob_tensor_f(b, name, rank, dims, v);
}

static inline Onnx__TensorProto *ob_init_i64(ob *b, const char *name, size_t n, const int64_t *v)
{
    return b->inits[b->g.n_initializer++] = ob_tensor_i64(b, name, n, v);
}

/* Moves tensor t's data out of the model: data_location EXTERNAL, no
 * raw_data, and the external_data entries given as count pairs of strings
 * (key, value). */
static inline void ob_external(ob *b, Onnx__TensorProto *t, int count, ...)
{
    t->has_raw_data = 0;
    t->raw_data.len = 0;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    t->n_external_data = (size_t)count;
    t->external_data = ob_alloc(b, (size_t)count * sizeof *t->external_data);
    va_list ap;
    va_start(ap, count);
    for (int k = 0; k < count; k++) {
        Onnx__StringStringEntryProto *e = ob_alloc(b, sizeof *e);
        const Onnx__StringStringEntryProto ei = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
        *e = ei;
        e->key = ob_str(b, va_arg(ap, const char *));
        e->value = ob_str(b, va_arg(ap, const char *));
        t->external_data[k] = e;
    }
    va_end(ap);
}

/* The serialized model (malloc'd). */
static inline uint8_t *ob_pack(ob *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *p = malloc(*len ? *len : 1);
    if (!p) abort();
    onnx__model_proto__pack(&b->m, p);
    return p;
}

static inline void ob_free(ob *b)
{
    for (size_t k = 0; k < b->nallocs; k++) free(b->allocs[k]);
    free(b->allocs);
    memset(b, 0, sizeof *b);
}

#endif /* DCZ_TESTS_ONNX_BUILD_H */
