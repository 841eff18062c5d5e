/* ops.c: the operator table (ops.h): per operator its attribute checks and
 * shape inference, by the rules of docs/FORMAT.md.
 *
 * Checked by tests/unit/test_format.c.
 */
#include <string.h>

#include <math.h>

#include "runtime/model.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

uint64_t dcz_shape_count(const dcz_shape *s)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < s->rank && i < DCZ_MAX_RANK; i++) n *= s->dims[i];
    return n;
}

int dcz_shape_is(const dcz_shape *s, uint32_t rank, const uint32_t *dims)
{
    if (s->rank != rank) return 0;
    for (uint32_t i = 0; i < rank; i++)
        if (s->dims[i] != dims[i]) return 0;
    return 1;
}

float dcz_attr_f32(int32_t a) { return dcz_f32_from_bits((uint32_t)a); }
int32_t dcz_f32_attr(float f) { return (int32_t)dcz_f32_bits(f); }

/* ---- attribute checks ------------------------------------------------------ */

static int in_range(int32_t v, int32_t lo, int64_t hi) { return v >= lo && v <= hi; }

/* kernel 1..255, stride 1..255, 0 <= pad < kernel, in each direction */
static int window_ok(const int32_t *w)
{
    for (int d = 0; d < 2; d++)
        if (!in_range(w[d], 1, DCZ_MAX_WINDOW) || !in_range(w[2 + d], 1, DCZ_MAX_WINDOW) ||
            !in_range(w[4 + d], 0, w[d] - 1))
            return 0;
    return 1;
}

static dcz_status check_none(const int32_t *attr) { (void)attr; return DCZ_OK; }

static dcz_status check_dense(const int32_t *a)
{
    return in_range(a[0], 1, DCZ_MAX_DIM) && in_range(a[1], 1, DCZ_MAX_DIM) ? DCZ_OK : DCZ_ERR_FORMAT;
}

/* in_c, out_c, the window, group: a divisor of both channel counts */
static dcz_status check_conv(const int32_t *a)
{
    return in_range(a[0], 1, DCZ_MAX_DIM) && in_range(a[1], 1, DCZ_MAX_DIM) && window_ok(a + 2) &&
           in_range(a[8], 1, a[0]) && a[0] % a[8] == 0 && a[1] % a[8] == 0
        ? DCZ_OK : DCZ_ERR_FORMAT;
}

/* nattr float attributes, each finite */
static int finite_attrs(const int32_t *a, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(dcz_attr_f32(a[i]))) return 0;
    return 1;
}

static dcz_status check_clip(const int32_t *a)
{
    return finite_attrs(a, 2) && dcz_attr_f32(a[0]) <= dcz_attr_f32(a[1]) ? DCZ_OK : DCZ_ERR_FORMAT;
}

static dcz_status check_one_f32(const int32_t *a) { return finite_attrs(a, 1) ? DCZ_OK : DCZ_ERR_FORMAT; }
static dcz_status check_two_f32(const int32_t *a) { return finite_attrs(a, 2) ? DCZ_OK : DCZ_ERR_FORMAT; }

/* training only: BATCHNORM eps > 0 and momentum in [0, 1]; DROPOUT rate in [0, 1) */
static dcz_status check_batchnorm(const int32_t *a)
{
    const float eps = dcz_attr_f32(a[0]), m = dcz_attr_f32(a[1]);
    return finite_attrs(a, 2) && eps > 0.0f && m >= 0.0f && m <= 1.0f ? DCZ_OK : DCZ_ERR_FORMAT;
}
static dcz_status check_dropout(const int32_t *a)
{
    const float r = dcz_attr_f32(a[0]);
    return finite_attrs(a, 1) && r >= 0.0f && r < 1.0f ? DCZ_OK : DCZ_ERR_FORMAT;
}

/* CHANNEL_SHUFFLE: groups 1 .. 2^24 (dividing the channels: a shape rule);
 * SLICE: start 0 .. 2^24 - 1, count 1 .. 2^24 */
static dcz_status check_shuffle(const int32_t *a) { return in_range(a[0], 1, DCZ_MAX_DIM) ? DCZ_OK : DCZ_ERR_FORMAT; }
static dcz_status check_slice(const int32_t *a)
{
    return in_range(a[0], 0, DCZ_MAX_DIM - 1) && in_range(a[1], 1, DCZ_MAX_DIM) ? DCZ_OK : DCZ_ERR_FORMAT;
}

static dcz_status check_maxpool(const int32_t *a) { return window_ok(a) ? DCZ_OK : DCZ_ERR_FORMAT; }

static dcz_status check_avgpool(const int32_t *a)
{
    return window_ok(a) && in_range(a[6], 0, 1) ? DCZ_OK : DCZ_ERR_FORMAT;
}

/* ---- shapes ---------------------------------------------------------------- */

/* floor((in + 2 pad - k) / stride) + 1 output positions; 0 when the padded
 * input is shorter than the kernel */
static uint32_t window_out(uint32_t in, int32_t k, int32_t stride, int32_t pad)
{
    const uint64_t span = (uint64_t)in + 2 * (uint64_t)pad;
    return span < (uint64_t)k ? 0 : (uint32_t)((span - (uint64_t)k) / (uint64_t)stride + 1);
}

/* (C, H, W) -> (channels, out H, out W) through the window at w */
static dcz_status window_shape(const int32_t *w, uint32_t channels, const dcz_shape *in,
                               dcz_shape *out)
{
    if (in->rank != 3) return DCZ_ERR_SHAPE;
    out->rank = 3;
    out->dims[0] = channels;
    out->dims[1] = window_out(in->dims[1], w[0], w[2], w[4]);
    out->dims[2] = window_out(in->dims[2], w[1], w[3], w[5]);
    return out->dims[1] && out->dims[2] ? DCZ_OK : DCZ_ERR_SHAPE;
}

static dcz_status shape_same(const int32_t *attr, const dcz_shape *in, uint32_t nin,
                             dcz_shape *out)
{
    (void)attr; (void)nin;
    *out = *in;
    return DCZ_OK;
}

static dcz_status shape_dense(const int32_t *a, const dcz_shape *in, uint32_t nin, dcz_shape *out)
{
    (void)nin;
    if (dcz_shape_count(in) != (uint64_t)a[0]) return DCZ_ERR_SHAPE;
    out->rank = 1;
    out->dims[0] = (uint32_t)a[1];
    return DCZ_OK;
}

static dcz_status shape_conv(const int32_t *a, const dcz_shape *in, uint32_t nin, dcz_shape *out)
{
    (void)nin;
    if (in->rank != 3 || in->dims[0] != (uint32_t)a[0]) return DCZ_ERR_SHAPE;
    return window_shape(a + 2, (uint32_t)a[1], in, out);
}

static dcz_status shape_pool(const int32_t *a, const dcz_shape *in, uint32_t nin, dcz_shape *out)
{
    (void)nin;
    return window_shape(a, in->dims[0], in, out);
}

static dcz_status shape_global_avgpool(const int32_t *a, const dcz_shape *in, uint32_t nin,
                                       dcz_shape *out)
{
    (void)a; (void)nin;
    if (in->rank != 3) return DCZ_ERR_SHAPE;
    *out = (dcz_shape){ 3, { in->dims[0], 1, 1, 0 } };
    return DCZ_OK;
}

static dcz_status shape_flatten(const int32_t *a, const dcz_shape *in, uint32_t nin,
                                dcz_shape *out)
{
    (void)a; (void)nin;
    if (dcz_shape_count(in) > DCZ_MAX_ACT) return DCZ_ERR_SHAPE;
    out->rank = 1;
    out->dims[0] = (uint32_t)dcz_shape_count(in);
    return DCZ_OK;
}

/* two inputs of one shape */
static dcz_status shape_add(const int32_t *a, const dcz_shape *in, uint32_t nin, dcz_shape *out)
{
    (void)a; (void)nin;
    if (!dcz_shape_is(&in[1], in[0].rank, in[0].dims)) return DCZ_ERR_SHAPE;
    *out = in[0];
    return DCZ_OK;
}

/* x and its factors: of x's shape, or one per channel of x ((C) or (C, 1, 1)
 * for x (C, H, W), (C) for x (C)) */
static dcz_status shape_mul(const int32_t *a, const dcz_shape *in, uint32_t nin, dcz_shape *out)
{
    (void)a; (void)nin;
    const dcz_shape *x = &in[0], *f = &in[1];
    const uint32_t channels[3] = { x->dims[0], 1, 1 };
    if (!dcz_shape_is(f, x->rank, x->dims) && !dcz_shape_is(f, 1, channels) &&
        !(x->rank == 3 && dcz_shape_is(f, 3, channels)))
        return DCZ_ERR_SHAPE;
    *out = *x;
    return DCZ_OK;
}

/* inputs of rank 3 with one plane, or all of rank 1: channels added */
static dcz_status shape_concat(const int32_t *a, const dcz_shape *in, uint32_t nin, dcz_shape *out)
{
    (void)a;
    uint64_t c = 0;
    for (uint32_t i = 0; i < nin; i++) {
        if (in[i].rank != in[0].rank || (in[0].rank != 1 && in[0].rank != 3)) return DCZ_ERR_SHAPE;
        if (in[0].rank == 3 && (in[i].dims[1] != in[0].dims[1] || in[i].dims[2] != in[0].dims[2]))
            return DCZ_ERR_SHAPE;
        c += in[i].dims[0];
    }
    if (c > DCZ_MAX_DIM) return DCZ_ERR_SHAPE;
    *out = in[0];
    out->dims[0] = (uint32_t)c;
    return DCZ_OK;
}

/* (C, H, W) or (C) with C a multiple of groups, kept */
static dcz_status shape_shuffle(const int32_t *a, const dcz_shape *in, uint32_t nin, dcz_shape *out)
{
    (void)nin;
    if ((in->rank != 1 && in->rank != 3) || in->dims[0] % (uint32_t)a[0] != 0) return DCZ_ERR_SHAPE;
    *out = *in;
    return DCZ_OK;
}

/* (C, H, W) or (C) -> (count, H, W) or (count), start + count <= C */
static dcz_status shape_slice(const int32_t *a, const dcz_shape *in, uint32_t nin, dcz_shape *out)
{
    (void)nin;
    if ((in->rank != 1 && in->rank != 3) || (uint64_t)a[0] + (uint64_t)a[1] > in->dims[0]) return DCZ_ERR_SHAPE;
    *out = *in;
    out->dims[0] = (uint32_t)a[1];
    return DCZ_OK;
}

static void params_dense(const int32_t *a, dcz_shape *w, dcz_shape *b)
{
    *w = (dcz_shape){ 2, { (uint32_t)a[1], (uint32_t)a[0], 0, 0 } };
    *b = (dcz_shape){ 1, { (uint32_t)a[1], 0, 0, 0 } };
}

static void params_conv(const int32_t *a, dcz_shape *w, dcz_shape *b)
{
    *w = (dcz_shape){ 4, { (uint32_t)a[1], (uint32_t)(a[0] / a[8]), (uint32_t)a[2], (uint32_t)a[3] } };
    *b = (dcz_shape){ 1, { (uint32_t)a[1], 0, 0, 0 } };
}

/* ---- the table -------------------------------------------------------------- */

static const dcz_op_info ops[] = {
    /* op                    name            inputs nattr weighted train window
       check          shape          params          integer scale rule, in place
       (the kernels: plan.c and run.c, gpu.c) */
    { DCZ_OP_DENSE,          "DENSE", "dense",          1, 1, 2, 1, 0, -1,
      check_dense,   shape_dense,   params_dense,  DCZ_QS_WEIGHTED, 0 },
    { DCZ_OP_RELU,           "RELU", "relu",           1, 1, 0, 0, 0, -1,
      check_none,    shape_same,    NULL,          DCZ_QS_KEEP, 1 },
    { DCZ_OP_SOFTMAX,        "SOFTMAX", "softmax",        1, 1, 0, 0, 0, -1,
      check_none,    shape_same,    NULL,          DCZ_QS_NONE, 0 },
    { DCZ_OP_CONV2D,         "CONV2D", "conv2d",         1, 1, 9, 1, 0,  2,
      check_conv,    shape_conv,    params_conv,   DCZ_QS_WEIGHTED, 0 },
    { DCZ_OP_MAXPOOL,        "MAXPOOL", "maxpool",        1, 1, 6, 0, 0,  0,
      check_maxpool, shape_pool,    NULL,          DCZ_QS_KEEP, 0 },
    { DCZ_OP_AVGPOOL,        "AVGPOOL", "avgpool",        1, 1, 7, 0, 0,  0,
      check_avgpool, shape_pool,    NULL,          DCZ_QS_KEEP, 0 },
    { DCZ_OP_GLOBAL_AVGPOOL, "GLOBAL_AVGPOOL", "global_avgpool", 1, 1, 0, 0, 0, -1,
      check_none,    shape_global_avgpool, NULL,   DCZ_QS_MEAN, 0 },
    { DCZ_OP_FLATTEN,        "FLATTEN", "flatten",        1, 1, 0, 0, 0, -1,
      check_none,    shape_flatten, NULL,          DCZ_QS_KEEP, 0 },
    { DCZ_OP_ADD,            "ADD", "add",            2, 2, 0, 0, 0, -1,
      check_none,    shape_add,     NULL,          DCZ_QS_RESCALE, 1 },
    { DCZ_OP_MUL,            "MUL", "mul",            2, 2, 0, 0, 0, -1,
      check_none,    shape_mul,     NULL,          DCZ_QS_PRODUCT, 1 },
    { DCZ_OP_CONCAT,         "CONCAT", "concat",         2, DCZ_MAX_INPUTS, 0, 0, 0, -1,
      check_none,    shape_concat,  NULL,          DCZ_QS_RESCALE, 0 },
    { DCZ_OP_CLIP,           "CLIP", "clip",           1, 1, 2, 0, 0, -1,
      check_clip,    shape_same,    NULL,          DCZ_QS_TABLE, 1 },
    { DCZ_OP_LEAKY_RELU,     "LEAKY_RELU", "leaky_relu",     1, 1, 1, 0, 0, -1,
      check_one_f32, shape_same,    NULL,          DCZ_QS_TABLE, 1 },
    { DCZ_OP_SIGMOID,        "SIGMOID", "sigmoid",        1, 1, 0, 0, 0, -1,
      check_none,    shape_same,    NULL,          DCZ_QS_TABLE, 1 },
    { DCZ_OP_TANH,           "TANH", "tanh",           1, 1, 0, 0, 0, -1,
      check_none,    shape_same,    NULL,          DCZ_QS_TABLE, 1 },
    { DCZ_OP_HARD_SIGMOID,   "HARD_SIGMOID", "hard_sigmoid",   1, 1, 2, 0, 0, -1,
      check_two_f32, shape_same,    NULL,          DCZ_QS_TABLE, 1 },
    { DCZ_OP_HARD_SWISH,     "HARD_SWISH", "hard_swish",     1, 1, 0, 0, 0, -1,
      check_none,    shape_same,    NULL,          DCZ_QS_TABLE, 1 },
    { DCZ_OP_CHANNEL_SHUFFLE, "CHANNEL_SHUFFLE", "channel_shuffle", 1, 1, 1, 0, 0, -1,
      check_shuffle, shape_shuffle, NULL,          DCZ_QS_KEEP, 0 },
    { DCZ_OP_SLICE,          "SLICE", "slice",          1, 1, 2, 0, 0, -1,
      check_slice,   shape_slice,   NULL,          DCZ_QS_KEEP, 0 },
    { DCZ_OP_SILU,           "SILU", "silu",           1, 1, 0, 0, 0, -1,
      check_none,    shape_same,    NULL,          DCZ_QS_TABLE, 1 },
    { DCZ_OP_BATCHNORM,      "BATCHNORM", "batchnorm",      1, 1, 2, 0, 1, -1,
      check_batchnorm, shape_same,  NULL,          DCZ_QS_NONE, 0 },
    { DCZ_OP_DROPOUT,        "DROPOUT", "dropout",        1, 1, 1, 0, 1, -1,
      check_dropout, shape_same,    NULL,          DCZ_QS_NONE, 0 },
};

const dcz_op_info *dcz_op_get(uint32_t op)
{
    /* the stored ops are listed first, in the order of their codes */
    if (op >= 1 && op <= sizeof ops / sizeof ops[0] && ops[op - 1].op == op) return &ops[op - 1];
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op) return &ops[i];
    return NULL;
}

int dcz_op_gather(uint16_t op, const int32_t *attr, uint32_t *start, uint32_t *groups)
{
    if (op == DCZ_OP_CHANNEL_SHUFFLE) {
        *start = 0;
        *groups = (uint32_t)attr[0];
        return 1;
    }
    if (op == DCZ_OP_SLICE) {
        *start = (uint32_t)attr[0];
        *groups = 1;
        return 1;
    }
    return 0;
}

const char *dcz_op_name(uint32_t op)
{
    const dcz_op_info *o = dcz_op_get(op);
    return o ? o->name : "?";
}

dcz_status dcz_op_check(uint16_t op, const int32_t *attr, uint32_t nattr, int *has_params)
{
    const dcz_op_info *o = dcz_op_get(op);
    *has_params = 0;
    if (!o || o->train_only) return DCZ_ERR_UNSUPPORTED;
    *has_params = o->weighted;
    return nattr == o->nattr ? o->check(attr) : DCZ_ERR_FORMAT;
}

dcz_status dcz_op_shape(uint16_t op, const int32_t *attr, uint32_t nattr, const dcz_shape *in,
                        uint32_t nin, dcz_shape *out)
{
    const dcz_op_info *o = dcz_op_get(op);
    memset(out, 0, sizeof *out);
    if (!o) return DCZ_ERR_UNSUPPORTED;
    if (nattr < o->nattr) return DCZ_ERR_FORMAT;
    if (nin < o->min_in || nin > o->max_in) return DCZ_ERR_SHAPE;
    for (uint32_t i = 0; i < nin; i++)
        if (in[i].rank == 0 || in[i].rank > DCZ_MAX_RANK) return DCZ_ERR_SHAPE;
    TRY(o->shape(attr, in, nin, out));
    return dcz_shape_count(out) <= DCZ_MAX_ACT ? DCZ_OK : DCZ_ERR_SHAPE;
}

dcz_status dcz_op_param_shapes(uint16_t op, const int32_t *attr, dcz_shape *weight,
                               dcz_shape *bias)
{
    const dcz_op_info *o = dcz_op_get(op);
    memset(weight, 0, sizeof *weight);
    memset(bias, 0, sizeof *bias);
    if (!o || !o->param_shapes) return DCZ_ERR_UNSUPPORTED;
    o->param_shapes(attr, weight, bias);
    return DCZ_OK;
}

uint64_t dcz_op_work(uint16_t op, const int32_t *attr, uint32_t nin, const dcz_shape *out)
{
    const dcz_op_info *o = dcz_op_get(op);
    const uint64_t n = dcz_shape_count(out);
    if (!o) return n;
    if (o->weighted) {   /* every weight meets one input per output position */
        dcz_shape w, b;
        o->param_shapes(attr, &w, &b);
        const uint64_t plane = out->rank == 3 ? (uint64_t)out->dims[1] * out->dims[2] : 1;
        return dcz_shape_count(&w) * plane;
    }
    if (o->window_at >= 0)   /* each output reads its window */
        return n * (uint64_t)attr[o->window_at] * (uint64_t)attr[o->window_at + 1];
    return n * (nin ? nin : 1);
}
