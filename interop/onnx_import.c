/* onnx_import.c: an ONNX model (onnx.ModelProto) into a .dcz document.
 *
 * The graph is walked once in its node order, which ONNX makes topological
 * (a node reading a value no earlier node produced is refused). Every
 * activation value lives in a dcz tensor: 0 the graph input, j + 1 the
 * output of layer j; a value may feed any number of nodes, and a node may
 * read several activations. A node's data inputs are activations, all its
 * other inputs constants (initializers or Constant nodes). Nodes map to
 * layers (one table, ops[], from op_type to handler):
 *   Gemm, MatMul            DENSE (weight (out, in) = alpha B^T or B^T)
 *   Conv                    CONV2D, grouped and depthwise too (group;
 *                           weight (out_c, in_c / group, kh, kw)); no bias:
 *                           a zero bias
 *   Add                     of two activations of one shape: ADD; of an
 *                           activation and a constant: added to the bias of
 *                           the DENSE or CONV2D computing the activation
 *   Mul                     of two activations: MUL, one of the other's
 *                           shape or (N, C, 1, 1) for (N, C, H, W)
 *   Concat                  axis 1 (-3 of rank 4, -1 of rank 2): CONCAT, a
 *                           chain of them for more than 16 values
 *   BatchNormalization      folded into the DENSE or CONV2D computing its
 *                           input: w' = w g, b' = (b - mean) g + beta,
 *                           g = scale / sqrt(var + epsilon); where it cannot
 *                           fold, a per-channel affine: the depthwise 1 x 1
 *                           CONV2D of weight g, bias beta - mean g
 *   Split, Slice            SLICE of the channels, one per output read
 *   Transpose               of the two channel axes a Reshape to (N, g,
 *                           C / g, H, W) made: CHANNEL_SHUFFLE (the Reshape
 *                           back to (N, C, H, W) ends the view)
 *   MaxPool, AveragePool    MAXPOOL, AVGPOOL; GlobalAveragePool GLOBAL_AVGPOOL
 *   ReduceMean              over the two spatial axes of (N, C, H, W):
 *                           GLOBAL_AVGPOOL, then FLATTEN without keepdims
 *   Flatten, Reshape        FLATTEN when they flatten each sample; removed
 *                           when they change nothing; a Reshape that alone
 *                           reads the input sets the input shape, one that
 *                           only the graph output or a Mul follows shapes the
 *                           output (dcz's is flat) or the Mul's factors
 *   Pad (constant zeros)    removed when all pads are 0, else added to the
 *                           padding of the Conv or AveragePool reading it
 *                           (from opset 18 pads may name their axes)
 *   Relu, Sigmoid, Tanh,    RELU, SIGMOID, TANH, HARD_SWISH,
 *   HardSwish, LeakyRelu,   LEAKY_RELU (alpha 0.01), HARD_SIGMOID (alpha 0.2,
 *   HardSigmoid, Clip       beta 0.5), CLIP (min, max: optional constant
 *                           inputs; absent: -FLT_MAX, FLT_MAX)
 *   Sigmoid, then Mul       SILU, one layer, when the Mul multiplies the
 *                           Sigmoid's input by its output and the Sigmoid's
 *                           output is read by that Mul alone (SiLU, x
 *                           sigmoid(x), as exporters write it)
 *   HardSigmoid (alpha 1/6, HARD_SWISH, one layer, the same way (HardSwish
 *   beta 1/2), then Mul     as exporters write it before opset 14)
 *   Softmax                 SOFTMAX (the last layer only)
 *   Identity, Dropout       removed; Constant gives a constant
 *   Shape, Gather,          evaluated for the model's fixed input shape
 *   Unsqueeze, Squeeze,     (shapes folded): constants later nodes read, no
 *   Cast, Sub, Div; Add,    layer
 *   Mul, Concat, Slice of
 *   constants
 * A removed or folded node gives its output its input's tensor. Folding
 * needs the folded-into layer's output to be read by the folding node
 * alone: every value's reads are counted before the walk (tensor_info). The
 * layers the graph output does not depend on are dropped, so the output is
 * the last layer and every other layer is read by a later one, as the .dcz
 * writer requires. Every attribute a node carries must be known for its
 * operator at the model's opset, and its value supported; anything else is
 * refused with the node's name. A batch norm of a flat value or a constant
 * Add with nothing to fold into is refused without stopping the walk
 * (defer): one message
 * counts such nodes per operator.
 *
 * Opsets 11 to 22: where a later opset moved an attribute to an input
 * (ReduceMean's axes in 18, Pad's axes in 18) or added one (AveragePool's
 * dilations in 19), the model's opset says which form a node must use. The
 * other changes of 18 to 22 to the operators above add data types only.
 *
 * A tensor may keep its bytes in an external file (data_location EXTERNAL;
 * external_data: location, offset, length, checksum), read from the folder
 * the caller names: the location must be relative and have no '..'
 * component, the file must be a regular one, and offset and length must lie
 * inside it and give exactly the tensor's size (ext_read).
 *
 * Before protobuf-c parses the bytes, wire_check walks them and refuses a
 * message nesting deeper than WIRE_MAX_DEPTH (protobuf-c's parser recurses
 * once per level with no limit of its own).
 *
 * Tested by tests/unit/test_onnx.c and tests/cli/interop.sh; fuzzed by
 * tests/fuzz/fuzz_onnx.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"

#include "interop/interop.h"

#define WIRE_MAX_DEPTH 32             /* protobuf message nesting */
#define TENSOR_MAX_RANK 8
#define TENSOR_MAX_ELEMS ((uint64_t)1 << 28)
#define MAX_GRAPH_NODES 100000
#define FOLD_MAX 8                       /* values of a shape folded at import */
#define BATCH_MARK INT64_MIN             /* the batch size in a folded shape, unknown */
#define CONCAT_MAX_VALUES 1024           /* values one Concat joins (in a chain of layers) */

/* ---- errors ---------------------------------------------------------------- */

typedef struct errbuf {
    char *p;
    size_t len;
} errbuf;

/* Names come from the file: control characters become '?' before they
 * reach a terminal or a stage record. */
static void printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static dcz_status fail(const errbuf *e, dcz_status s, const char *fmt, ...)
{
    if (e->p && e->len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->p, e->len, fmt, ap);
        va_end(ap);
        printable(e->p);
    }
    return s;
}

static const char *str(const char *s) { return s ? s : ""; }

/* ---- protobuf nesting depth --------------------------------------------- */

static int wire_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*pos >= len) return -1;
        uint8_t b = p[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* Walks a message of descriptor d; -1 when the bytes are not wire format or
 * nest messages deeper than WIRE_MAX_DEPTH. Unknown fields are skipped as
 * protobuf-c skips them. */
static int wire_check(const uint8_t *p, size_t len, const ProtobufCMessageDescriptor *d, int depth)
{
    if (depth > WIRE_MAX_DEPTH) return -1;
    size_t pos = 0;
    while (pos < len) {
        uint64_t key, v;
        if (wire_varint(p, len, &pos, &key) != 0) return -1;
        switch (key & 7) {
        case 0:
            if (wire_varint(p, len, &pos, &v) != 0) return -1;
            break;
        case 1:
            if (len - pos < 8) return -1;
            pos += 8;
            break;
        case 5:
            if (len - pos < 4) return -1;
            pos += 4;
            break;
        case 2: {
            if (wire_varint(p, len, &pos, &v) != 0 || v > len - pos) return -1;
            const ProtobufCFieldDescriptor *f =
                key >> 3 <= 0xffffffffu ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3)) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                wire_check(p + pos, (size_t)v, f->descriptor, depth + 1) != 0)
                return -1;
            pos += (size_t)v;
            break;
        }
        default:
            return -1;   /* groups (3, 4) are not used by onnx.proto */
        }
    }
    return 0;
}

/* ---- external data ---------------------------------------------------------- */

/* Where a model's external data is read: the model's folder, and the file
 * read last, kept open for the next tensor (exporters put every tensor in
 * one file). */
typedef struct extdata {
    const char *dir;        /* NULL: none known */
    char *location;         /* the open file's location, owned */
    int fd;                 /* -1: none open */
    uint64_t size;          /* its bytes */
} extdata;

static void ext_close(extdata *x)
{
    if (x->fd >= 0) close(x->fd);
    free(x->location);
    x->location = NULL;
    x->fd = -1;
}

/* A byte count of external_data: decimal digits only, below 2^64. */
static int parse_count(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        const uint64_t d = (uint64_t)(*s - '0');
        if (x > (UINT64_MAX - d) / 10) return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

/* Opens the file location names inside x->dir, unless it is open already. */
static dcz_status ext_open(const errbuf *e, extdata *x, const char *location, const char *nm)
{
    if (x->location && strcmp(x->location, location) == 0) return DCZ_OK;
    ext_close(x);
    char path[4096];
    const int n = snprintf(path, sizeof path, "%s/%s", x->dir, location);
    if (n < 0 || (size_t)n >= sizeof path)
        return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s': the path of its external data file '%.80s' is longer "
                    "than %zu bytes", nm, location, sizeof path - 1);
    /* O_NONBLOCK: a FIFO opens at once, and is refused below */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        return fail(e, DCZ_ERR_IO, "tensor '%s': cannot open its external data file '%s' in %s: %s (keep the "
                    "data file beside the .onnx file, under the name the model gives it)", nm, location, x->dir,
                    strerror(err));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
        close(fd);
        return fail(e, DCZ_ERR_IO, "tensor '%s': its external data file '%s' in %s is not a regular file (a "
                    "folder, a device or a FIFO)", nm, location, x->dir);
    }
    if (!(x->location = malloc(strlen(location) + 1))) {
        close(fd);
        return DCZ_ERR_NOMEM;
    }
    strcpy(x->location, location);
    x->fd = fd;
    x->size = (uint64_t)st.st_size;
    return DCZ_OK;
}

/* Reads the need bytes of tensor t (named nm), kept in an external file,
 * into *bytes (malloc'd). The entries: location (required; relative,
 * without a '..' component), offset (default 0), length (default: to the
 * end of the file), checksum (not checked); the range must lie inside the
 * file and hold exactly need bytes. */
static dcz_status ext_read(const errbuf *e, extdata *x, const Onnx__TensorProto *t, const char *nm, uint64_t need,
                           uint8_t **bytes)
{
    const char *location = NULL, *offset_s = NULL, *length_s = NULL;
    *bytes = NULL;
    for (size_t k = 0; k < t->n_external_data; k++) {
        const char *key = str(t->external_data[k]->key), *value = str(t->external_data[k]->value);
        const char **slot = strcmp(key, "location") == 0 ? &location
                          : strcmp(key, "offset") == 0   ? &offset_s
                          : strcmp(key, "length") == 0   ? &length_s : NULL;
        if (strcmp(key, "checksum") == 0) continue;   /* a SHA-1 of the file: not checked */
        if (!slot)
            return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s': external_data key '%.40s' is not one dcz knows "
                        "(location, offset, length, checksum)", nm, key);
        if (*slot) return fail(e, DCZ_ERR_FORMAT, "tensor '%s': external_data key '%s' is given twice", nm, key);
        *slot = value;
    }
    if (!location || !*location)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s' keeps its data in an external file but names none (no "
                    "'location' in its external_data)", nm);
    if (location[0] == '/')
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s': its external data location '%.200s' is an absolute path; "
                    "ONNX locations are relative to the model's folder (save the model again with its data file "
                    "beside it)", nm, location);
    for (const char *p = location; *p;) {
        const size_t len = strcspn(p, "/");
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s': its external data location '%.200s' has a '..' "
                        "component; dcz reads external data only inside the model's folder, named without '..' "
                        "(move the data file there and save the model again)", nm, location);
        p += len;
        if (*p) p++;
    }
    uint64_t offset = 0, length = need;
    if (offset_s && parse_count(offset_s, &offset) != 0)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s': its external data offset '%.40s' is not a byte count", nm,
                    offset_s);
    if (length_s && parse_count(length_s, &length) != 0)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s': its external data length '%.40s' is not a byte count", nm,
                    length_s);
    if (length != need)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s': its external data is %llu bytes long, its dims and type need "
                    "%llu (the model and its data file do not belong together)", nm, (unsigned long long)length,
                    (unsigned long long)need);
    if (!x->dir)
        return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s' keeps its data in the external file '%.200s', and the "
                    "model came without the folder that holds it (as from standard input): import the .onnx "
                    "file by its path, with its data file beside it", nm, location);
    dcz_status s = ext_open(e, x, location, nm);
    if (s != DCZ_OK) return s;
    if (!length_s && offset <= x->size && x->size - offset != need)   /* no length: to the end of the file */
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s': its external data, from offset %llu to the end of '%s', is "
                    "%llu bytes long, its dims and type need %llu (the model and its data file do not belong "
                    "together)", nm, (unsigned long long)offset, location, (unsigned long long)(x->size - offset),
                    (unsigned long long)need);
    if (offset > x->size || length > x->size - offset)   /* offset + length without overflow */
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s': its external data (%llu bytes at offset %llu) lies beyond "
                    "the end of '%s' (%llu bytes): the data file is truncated or belongs to another model", nm,
                    (unsigned long long)length, (unsigned long long)offset, location,
                    (unsigned long long)x->size);
    uint8_t *b = malloc(need ? (size_t)need : 1);
    if (!b) return DCZ_ERR_NOMEM;
    for (size_t got = 0; got < need;) {
        const ssize_t r = pread(x->fd, b + got, (size_t)need - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            const int err = r < 0 ? errno : 0;
            free(b);
            return fail(e, DCZ_ERR_IO, "tensor '%s': reading its external data from '%s' failed: %s", nm, location,
                        err ? strerror(err) : "the file ended early (was it changed while dcz read it?)");
        }
        got += (size_t)r;
    }
    *bytes = b;
    return DCZ_OK;
}

/* ---- constants -------------------------------------------------------------- */

enum { WANT_FLOATS = 1, WANT_INTS = 2,
       WANT_SHAPE = 6 };   /* integers, a folded batch size (BATCH_MARK) among them: a Reshape's shape */

/* A constant tensor decoded into floats or 64-bit integers. */
typedef struct cten {
    uint32_t rank;
    int64_t dims[TENSOR_MAX_RANK];
    size_t n;
    float *f;       /* (n) with WANT_FLOATS, owned */
    int64_t *i;     /* (n) with WANT_INTS, owned */
} cten;

static void cten_free(cten *c)
{
    free(c->f);
    free(c->i);
    memset(c, 0, sizeof *c);
}

static const char *dtype_name(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return "float32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return "uint8";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return "int8";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return "uint16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return "int16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return "int32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return "int64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING: return "string";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return "bool";
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return "float16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return "float64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return "uint32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return "uint64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return "bfloat16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64: return "complex64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128: return "complex128";
    /* added after Debian's onnx.proto: opsets 19 to 23 */
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    }
    return "unknown";
}

static uint64_t le64(const uint8_t *p) { return dcz_le32(p) | (uint64_t)dcz_le32(p + 4) << 32; }

/* The values of tensor t (named nm) as floats or integers into out, from
 * raw little-endian bytes r or, r NULL, from its typed field; floats must
 * be finite. */
static dcz_status tensor_values(const errbuf *e, const Onnx__TensorProto *t, const uint8_t *r, int want,
                                const char *nm, cten *out)
{
    const int32_t dt = t->data_type;
    const size_t n = out->n;
    if (want == WANT_INTS) {
        out->i = malloc((n ? n : 1) * sizeof *out->i);
        if (!out->i) return DCZ_ERR_NOMEM;
        for (size_t k = 0; k < n; k++) {
            if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
                out->i[k] = r ? (int64_t)le64(r + 8 * k) : t->int64_data[k];
            else
                out->i[k] = r ? (int64_t)(int32_t)dcz_le32(r + 4 * k) : t->int32_data[k];
        }
        return DCZ_OK;
    }
    out->f = malloc((n ? n : 1) * sizeof *out->f);
    if (!out->f) return DCZ_ERR_NOMEM;
    for (size_t k = 0; k < n; k++) {
        float v;
        switch (dt) {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
            v = r ? dcz_f32_from_bits(dcz_le32(r + 4 * k)) : t->float_data[k];
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: {
            uint32_t h;
            if (r) h = (uint32_t)r[2 * k] | (uint32_t)r[2 * k + 1] << 8;
            else if (t->int32_data[k] < 0 || t->int32_data[k] > 0xffff)
                return fail(e, DCZ_ERR_FORMAT, "tensor '%s': %s value %d out of range", nm, dtype_name(dt),
                            (int)t->int32_data[k]);
            else h = (uint32_t)t->int32_data[k];
            v = dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ? dcz_f16_to_f32((uint16_t)h)
                                                              : dcz_f32_from_bits(h << 16);
            break;
        }
        default: {   /* float64: rounded to the nearest float32 */
            double d;
            if (r) {
                uint64_t u = le64(r + 8 * k);
                memcpy(&d, &u, sizeof d);
            } else d = t->double_data[k];
            if (!(fabs(d) <= FLT_MAX))
                return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s': float64 value %g is outside the float32 range",
                            nm, d);
            v = (float)d;
            break;
        }
        }
        if (!isfinite(v)) return fail(e, DCZ_ERR_FORMAT, "tensor '%s' holds a non-finite value (element %zu)", nm, k);
        out->f[k] = v;
    }
    return DCZ_OK;
}

/* Decodes tensor t (named what in messages) as floats or integers. Checks
 * the dims, the data type, that exactly one data field (raw_data, the
 * type's own field, or an external file, read through x) holds exactly the
 * element count, and that floats are finite. */
static dcz_status tensor_decode(const errbuf *e, extdata *x, const Onnx__TensorProto *t, int want, const char *what,
                                cten *out)
{
    memset(out, 0, sizeof *out);
    const char *nm = t->name && *t->name ? t->name : what;
    const int external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (t->segment)
        return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s' is stored in segments (not supported)", nm);
    if (t->n_external_data && !external)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s' has external_data entries, but its data_location is not "
                    "EXTERNAL", nm);
    if (t->n_dims > TENSOR_MAX_RANK)
        return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s' has rank %zu (at most %d)", nm, t->n_dims, TENSOR_MAX_RANK);
    uint64_t n = 1;
    for (size_t k = 0; k < t->n_dims; k++) {
        if (t->dims[k] < 0)
            return fail(e, DCZ_ERR_FORMAT, "tensor '%s' has a negative dimension (%lld)", nm, (long long)t->dims[k]);
        if (t->dims[k] > 0 && n > TENSOR_MAX_ELEMS / (uint64_t)t->dims[k])
            return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s' has more than %llu elements", nm,
                        (unsigned long long)TENSOR_MAX_ELEMS);
        n *= (uint64_t)t->dims[k];
        out->dims[k] = t->dims[k];
    }
    out->rank = (uint32_t)t->n_dims;
    out->n = (size_t)n;
    if (!t->has_data_type)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s' has no data type", nm);
    const int32_t dt = t->data_type;
    size_t elem;   /* bytes of one element in raw_data */
    size_t typed;  /* elements in the typed field the type uses */
    int is_float = 1;
    switch (dt) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: elem = 4; typed = t->n_float_data; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: elem = 2; typed = t->n_int32_data; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: elem = 8; typed = t->n_double_data; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: elem = 8; typed = t->n_int64_data; is_float = 0; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: elem = 4; typed = t->n_int32_data; is_float = 0; break;
    default:
        return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s' has data type %s (%d): dcz reads float32, float16, "
                    "bfloat16 and float64 values, and int32 or int64 shapes", nm, dtype_name(dt), (int)dt);
    }
    if (want == WANT_FLOATS && !is_float)
        return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s' holds %s, not floating-point values", nm, dtype_name(dt));
    if (want == WANT_INTS && is_float)
        return fail(e, DCZ_ERR_UNSUPPORTED, "tensor '%s' holds %s, not integers", nm, dtype_name(dt));
    /* exactly one field holds the data: raw_data, the type's own field, or an external file */
    const size_t fields = (t->n_float_data > 0) + (t->n_int32_data > 0) + (t->n_int64_data > 0) +
                          (t->n_double_data > 0) + (t->n_uint64_data > 0) + (t->n_string_data > 0) +
                          (t->has_raw_data && t->raw_data.len > 0);
    const int raw = t->has_raw_data && t->raw_data.len > 0;
    if (external) {
        if (fields)
            return fail(e, DCZ_ERR_FORMAT, "tensor '%s' keeps its data both in an external file and in the model",
                        nm);
        uint8_t *bytes;
        dcz_status s = ext_read(e, x, t, nm, n * elem, &bytes);
        if (s == DCZ_OK) s = tensor_values(e, t, bytes, want, nm, out);
        free(bytes);
        if (s != DCZ_OK) cten_free(out);
        return s;
    }
    if (fields > 1)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s' holds data in more than one field", nm);
    if (fields == 1 && !raw && typed == 0)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s' of type %s holds its data in a field of another type", nm,
                    dtype_name(dt));
    if (raw && t->raw_data.len != n * elem)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s': raw_data holds %zu bytes, its dims need %llu (%llu x %zu)", nm,
                    t->raw_data.len, (unsigned long long)(n * elem), (unsigned long long)n, elem);
    if (!raw && typed != n)
        return fail(e, DCZ_ERR_FORMAT, "tensor '%s' holds %zu values, its dims need %llu", nm, typed,
                    (unsigned long long)n);
    dcz_status s = tensor_values(e, t, raw ? t->raw_data.data : NULL, want, nm, out);
    if (s != DCZ_OK) cten_free(out);
    return s;
}

/* ---- the values of the graph ------------------------------------------- */

enum { V_CONST = 1, V_ACT, V_DEAD };

/* A value of the graph. An activation lives in a dcz tensor (0 the model
 * input, j + 1 the output of layer j); a node that makes no layer (Identity,
 * Dropout, a no-op Reshape or Flatten, Pad, a folded batch norm or bias)
 * gives its output the tensor of its input. */
typedef struct val {
    const char *name;
    int kind;
    const Onnx__TensorProto *t;     /* V_CONST: a tensor */
    const Onnx__AttributeProto *a;  /* V_CONST: a Constant's value_* attribute */
    uint32_t tensor;                /* V_ACT: where it lives */
    uint32_t pad_h, pad_w;          /* V_ACT: zero padding of a Pad, for the Conv or
                                       AveragePool that reads the value */
    long pad_node;                  /* that Pad, or -1 */
    long tail_node;                 /* a Reshape only the graph's end or a Mul may
                                       follow, or -1 */
    dcz_shape view;                 /* with tail_node: the shape it gives the value */
    long gate_x;                    /* the output of a Sigmoid (or a HardSigmoid of
                                       HardSwish's constants) of value gate_x that
                                       only a Mul of gate_x reads (that Mul makes
                                       the SILU or HARD_SWISH layer), or -1 */
    long gate_node;                 /* with gate_x: that node */
    uint16_t gate_op;               /* with gate_x: DCZ_OP_SILU or DCZ_OP_HARD_SWISH */
    int fold_rank;                  /* V_CONST computed at import (shapes folded): rank 0
                                       or 1, -1 for any other value */
    uint32_t nfold;
    int64_t fold[FOLD_MAX];         /* its values; the batch size, where the input's is
                                       not fixed, as BATCH_MARK */
} val;

/* How often a name is read: node inputs and graph outputs, counted before
 * the walk (open addressing by name). */
typedef struct use {
    const char *name;
    uint32_t n;
    size_t node;                    /* the last node reading it, + 1 (0: none) */
} use;

/* A dcz tensor: one sample's shape, and its reads in the whole graph (the
 * node inputs naming a value that lives in it, less the reads of nodes that
 * make no layer). A batch norm or a constant Add folds into a DENSE or
 * CONV2D layer only when it is the one read of that layer's output. */
typedef struct tensor_info {
    dcz_shape shape;
    uint64_t readers;
} tensor_info;

#define NAME_PREFIXES 24
#define DEFER_TYPES 4

/* Nodes of one operator refused by defer: how many, and why the first was. */
typedef struct deferral {
    const char *op;
    uint32_t n;
    char why[384];
} deferral;

typedef struct imp {
    errbuf e;
    const Onnx__GraphProto *g;
    int64_t opset;
    extdata ext;                    /* where external data is read */
    /* values, with an open-addressing index by name */
    val *vals;
    size_t nvals, capvals;
    uint32_t *slot;                 /* index + 1; 0: empty */
    size_t nslots;
    use *uses;                      /* (nuses), a power of 2 */
    size_t nuses;
    /* the document being built */
    tensor_info *tens;              /* (caplayers + 1) */
    dcz_shape input_shape;
    int batch_fixed;                /* the input's batch dimension is a number */
    int64_t batch;
    dcz_doc_layer *layers;
    char (*source)[DCZ_ONNX_SOURCE_LEN];
    uint32_t nlayers, caplayers;
    struct { const char *prefix; uint32_t n; } names[NAME_PREFIXES];   /* layer name counters */
    uint32_t dropped, folded;
    deferral deferred[DEFER_TYPES];
    uint32_t ndeferred;
} imp;

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static long val_find(const imp *im, const char *name)
{
    if (!name || !*name) return -1;
    for (size_t k = name_hash(name) & (im->nslots - 1);; k = (k + 1) & (im->nslots - 1)) {
        uint32_t s = im->slot[k];
        if (!s) return -1;
        if (strcmp(im->vals[s - 1].name, name) == 0) return (long)(s - 1);
    }
}


/* Adds a value; DCZ_ERR_FORMAT when the name is empty or taken. */
static dcz_status val_add(imp *im, const char *name, int kind, const char *by, long *index)
{
    if (!name || !*name) return fail(&im->e, DCZ_ERR_FORMAT, "%s produces a value without a name", by);
    if (val_find(im, name) >= 0)
        return fail(&im->e, DCZ_ERR_FORMAT, "value '%s' is defined twice (again by %s)", name, by);
    if (im->nvals == im->capvals) return fail(&im->e, DCZ_ERR_INTERNAL, "value table full");
    val *v = &im->vals[im->nvals];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    v->pad_node = -1;
    v->tail_node = -1;
    v->fold_rank = -1;
    v->gate_x = -1;
    size_t k = name_hash(name) & (im->nslots - 1);
    while (im->slot[k]) k = (k + 1) & (im->nslots - 1);
    im->slot[k] = (uint32_t)(++im->nvals);
    if (index) *index = (long)im->nvals - 1;
    return DCZ_OK;
}

/* The slot of name in the table of reads, or the empty one where it goes. */
static use *use_slot(const imp *im, const char *name)
{
    for (size_t k = name_hash(name) & (im->nuses - 1);; k = (k + 1) & (im->nuses - 1))
        if (!im->uses[k].name || strcmp(im->uses[k].name, name) == 0) return &im->uses[k];
}

static uint32_t uses_of(const imp *im, const char *name)
{
    const use *u = use_slot(im, name);
    return u->name ? u->n : 0;
}

/* Counts a read of name by node (its index + 1; 0: a graph output). */
static void use_count(imp *im, const char *name, size_t node)
{
    if (!name || !*name) return;
    use *u = use_slot(im, name);
    u->name = name;
    if (u->n < UINT32_MAX) u->n++;
    if (node) u->node = node;
}

/* The index of the one node that reads the value named name, or -1 (read
 * by several, by none, or by the graph's output). */
static long sole_reader(const imp *im, const char *name)
{
    if (!name || !*name) return -1;
    const use *u = use_slot(im, name);
    return u->name && u->n == 1 && u->node ? (long)u->node - 1 : -1;
}

/* Counts the reads of every name: node inputs, then the graph outputs. */
static dcz_status count_uses(imp *im)
{
    const Onnx__GraphProto *g = im->g;
    size_t total = g->n_output;
    for (size_t k = 0; k < g->n_node; k++) total += g->node[k]->n_input;
    im->nuses = 16;
    while (im->nuses < 2 * total + 2) im->nuses *= 2;
    im->uses = calloc(im->nuses, sizeof *im->uses);
    if (!im->uses) return DCZ_ERR_NOMEM;
    for (size_t k = 0; k < g->n_node; k++)
        for (size_t i = 0; i < g->node[k]->n_input; i++) use_count(im, g->node[k]->input[i], k + 1);
    for (size_t k = 0; k < g->n_output; k++) use_count(im, g->output[k]->name, 0);
    return DCZ_OK;
}

/* "Conv '/conv1/Conv'", or "Conv (node 4)" for a node without a name */
static void node_label(const Onnx__NodeProto *n, size_t index, char *buf, size_t len)
{
    if (n->name && *n->name) snprintf(buf, len, "%s '%s'", str(n->op_type), n->name);
    else snprintf(buf, len, "%s (node %zu)", str(n->op_type), index);
    printable(buf);
}

/* ---- attributes ------------------------------------------------------------- */

struct opdef;

typedef struct nodectx {
    imp *im;
    const Onnx__NodeProto *n;
    const struct opdef *def;        /* its entry of ops[] */
    size_t index;
    char label[96];
} nodectx;

static const Onnx__AttributeProto *attr_find(const nodectx *c, const char *name)
{
    for (size_t k = 0; k < c->n->n_attribute; k++)
        if (c->n->attribute[k]->name && strcmp(c->n->attribute[k]->name, name) == 0) return c->n->attribute[k];
    return NULL;
}

/* Checks the node's attributes: every name known for the op (known, a NULL
 * terminated list), no name twice, a type set. */
static dcz_status attrs_known(const nodectx *c, const char *const *known)
{
    for (size_t k = 0; k < c->n->n_attribute; k++) {
        const Onnx__AttributeProto *a = c->n->attribute[k];
        if (!a->name || !*a->name) return fail(&c->im->e, DCZ_ERR_FORMAT, "%s has an attribute without a name", c->label);
        if (a->ref_attr_name && *a->ref_attr_name)
            return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: attribute '%s' refers to a function attribute",
                        c->label, a->name);
        int ok = 0;
        for (const char *const *q = known; *q && !ok; q++) ok = strcmp(*q, a->name) == 0;
        if (!ok)
            return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: attribute '%s' is not supported", c->label, a->name);
        for (size_t j = 0; j < k; j++)
            if (c->n->attribute[j]->name && strcmp(c->n->attribute[j]->name, a->name) == 0)
                return fail(&c->im->e, DCZ_ERR_FORMAT, "%s: attribute '%s' given twice", c->label, a->name);
    }
    return DCZ_OK;
}

static dcz_status attr_type(const nodectx *c, const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t,
                            const char *tname)
{
    if (a->has_type && a->type != t)
        return fail(&c->im->e, DCZ_ERR_FORMAT, "%s: attribute '%s' is not %s", c->label, a->name, tname);
    return DCZ_OK;
}

static dcz_status attr_int(const nodectx *c, const char *name, int64_t dflt, int64_t *v)
{
    const Onnx__AttributeProto *a = attr_find(c, name);
    *v = dflt;
    if (!a) return DCZ_OK;
    dcz_status s = attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, "an integer");
    if (s != DCZ_OK) return s;
    if (!a->has_i && a->has_type) return fail(&c->im->e, DCZ_ERR_FORMAT, "%s: attribute '%s' has no value", c->label, name);
    *v = a->i;
    return DCZ_OK;
}

static dcz_status attr_float(const nodectx *c, const char *name, float dflt, float *v)
{
    const Onnx__AttributeProto *a = attr_find(c, name);
    *v = dflt;
    if (!a) return DCZ_OK;
    dcz_status s = attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "a float");
    if (s != DCZ_OK) return s;
    if (!a->has_f) return fail(&c->im->e, DCZ_ERR_FORMAT, "%s: attribute '%s' has no value", c->label, name);
    if (!isfinite(a->f)) return fail(&c->im->e, DCZ_ERR_FORMAT, "%s: attribute '%s' is not finite", c->label, name);
    *v = a->f;
    return DCZ_OK;
}

/* A list of integers of exactly count entries (when count > 0); absent:
 * *v NULL. */
static dcz_status attr_ints(const nodectx *c, const char *name, size_t count, const int64_t **v)
{
    const Onnx__AttributeProto *a = attr_find(c, name);
    *v = NULL;
    if (!a) return DCZ_OK;
    dcz_status s = attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "a list of integers");
    if (s != DCZ_OK) return s;
    if (count && a->n_ints != count)
        return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: attribute '%s' has %zu values, expected %zu (2-D only)",
                    c->label, name, a->n_ints, count);
    *v = a->ints;
    return DCZ_OK;
}

/* A string attribute compared against the accepted values (NULL-terminated
 * list, the first being the default); *which gets the index. */
static dcz_status attr_choice(const nodectx *c, const char *name, const char *const *values, int *which)
{
    const Onnx__AttributeProto *a = attr_find(c, name);
    *which = 0;
    if (!a) return DCZ_OK;
    dcz_status s = attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, "a string");
    if (s != DCZ_OK) return s;
    if (!a->has_s) return fail(&c->im->e, DCZ_ERR_FORMAT, "%s: attribute '%s' has no value", c->label, name);
    for (int k = 0; values[k]; k++)
        if (strlen(values[k]) == a->s.len && memcmp(values[k], a->s.data, a->s.len) == 0) {
            *which = k;
            return DCZ_OK;
        }
    return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: %s '%.*s' is not supported", c->label, name,
                (int)(a->s.len > 40 ? 40 : a->s.len), (const char *)a->s.data);
}


/* ---- node inputs and outputs ------------------------------------------------ */

/* What a node does with the marks an activation may carry. */
enum { F_PAD = 1,    /* takes the padding of a Pad before it in (Conv, AveragePool, Pad) */
       F_PASS = 2,   /* passes the value on unchanged, marks included (Identity, Dropout) */
       F_VIEW = 4 }; /* reads the shape a Reshape gave a value (Mul: its factors) */

typedef struct opdef {
    const char *name;                       /* the ONNX op_type */
    dcz_status (*run)(const nodectx *c);
    uint16_t op;                            /* the dcz op made, for handlers of several */
    const char *layer;                      /* its layers are named layer1, layer2, ... */
    int flags;                              /* F_* */
} opdef;

static const opdef *op_find(const Onnx__NodeProto *n);

static const char *input_name(const nodectx *c, size_t k)
{
    return k < c->n->n_input && c->n->input[k] ? c->n->input[k] : "";
}

/* Looks up input k (which must be present); *v gets its index. */
static dcz_status input_val(const nodectx *c, size_t k, long *v)
{
    const char *name = input_name(c, k);
    if (!*name) return fail(&c->im->e, DCZ_ERR_FORMAT, "%s lacks its input %zu", c->label, k + 1);
    *v = val_find(c->im, name);
    if (*v < 0)
        return fail(&c->im->e, DCZ_ERR_FORMAT, "%s reads '%s', which is no initializer, no graph input and no "
                    "output of an earlier node", c->label, name);
    if (c->im->vals[*v].kind == V_DEAD)
        return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s reads '%s', an extra output (mask, indices or "
                    "statistics) that dcz does not compute", c->label, name);
    return DCZ_OK;
}

/* Input k as an activation; *v gets its value. Refused: a constant, a
 * padded value where the node cannot take the padding in, and the output
 * of a Reshape that only the graph's end or a Mul may follow. */
static dcz_status input_act(const nodectx *c, size_t k, long *v)
{
    imp *im = c->im;
    dcz_status s = input_val(c, k, v);
    if (s != DCZ_OK) return s;
    const val *x = &im->vals[*v];
    char other[96];
    if (x->kind == V_CONST)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s reads the constant '%s' where dcz needs a computed value "
                    "(folding constants is not supported; export with do_constant_folding=True)", c->label,
                    x->name);
    if (x->tail_node >= 0 && !(c->def->flags & (F_PASS | F_VIEW))) {
        node_label(im->g->node[x->tail_node], (size_t)x->tail_node, other, sizeof other);
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s changes the shape of each sample other than by flattening "
                    "it, and %s follows it (supported: flattening, a reshape of the model input, one at the end, "
                    "or one giving a Mul its factors)", other, c->label);
    }
    if (x->pad_node >= 0 && !(c->def->flags & (F_PAD | F_PASS))) {
        node_label(im->g->node[x->pad_node], (size_t)x->pad_node, other, sizeof other);
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s is followed by %s: dcz folds zero padding only into the "
                    "Conv or AveragePool right after it", other, c->label);
    }
    return DCZ_OK;
}

static const dcz_shape *act_shape(const imp *im, long v) { return &im->tens[im->vals[v].tensor].shape; }

/* "(16, 28, 28)" */
static void shape_text(const dcz_shape *s, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "(");
    for (uint32_t k = 0; k < s->rank && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%s%u", k ? ", " : "", s->dims[k]);
    if (n < len) snprintf(buf + n, len - n, ")");
}

/* Input k as a constant decoded into out; optional inputs that are absent
 * leave out empty and set *present 0 (present may be NULL for required). */
static dcz_status input_const(const nodectx *c, size_t k, int want, const char *what, cten *out, int *present)
{
    memset(out, 0, sizeof *out);
    if (present) {
        *present = 0;
        if (!*input_name(c, k)) return DCZ_OK;
        *present = 1;
    }
    long v;
    dcz_status s = input_val(c, k, &v);
    if (s != DCZ_OK) return s;
    const val *x = &c->im->vals[v];
    if (x->kind != V_CONST)
        return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: its %s ('%s') is computed by the graph; dcz needs "
                    "a constant (an initializer or a Constant node)", c->label, what, x->name);
    const int batch_ok = want == WANT_SHAPE;
    if (batch_ok) want = WANT_INTS;
    if (x->fold_rank >= 0) {   /* a shape folded on the way */
        out->rank = (uint32_t)x->fold_rank;
        out->dims[0] = x->nfold;
        out->n = x->nfold;
        if (want == WANT_INTS ? !(out->i = malloc(FOLD_MAX * sizeof *out->i))
                              : !(out->f = malloc(FOLD_MAX * sizeof *out->f)))
            return DCZ_ERR_NOMEM;
        for (uint32_t j = 0; j < x->nfold; j++) {
            if (x->fold[j] == BATCH_MARK && !batch_ok) {
                cten_free(out);
                return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: its %s ('%s') depends on the batch size, which "
                            "the model leaves open (dcz folds it into a Reshape's first dimension only)", c->label,
                            what, x->name);
            }
            if (want == WANT_INTS) out->i[j] = x->fold[j];
            else out->f[j] = (float)x->fold[j];
        }
        return DCZ_OK;
    }
    char lbl[160];
    snprintf(lbl, sizeof lbl, "%s of %s", what, c->label);
    if (x->t) return tensor_decode(&c->im->e, &c->im->ext, x->t, want, lbl, out);
    /* a Constant's value_float(s) / value_int(s) */
    const Onnx__AttributeProto *a = x->a;
    const int is_float = a->has_f || a->n_floats;
    if ((want == WANT_FLOATS) != is_float)
        return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: its %s ('%s') holds %s", c->label, what, x->name,
                    is_float ? "floats, not integers" : "integers, not floats");
    const size_t n = a->has_f || a->has_i ? 1 : is_float ? a->n_floats : a->n_ints;
    out->rank = a->has_f || a->has_i ? 0 : 1;
    out->dims[0] = (int64_t)n;
    out->n = n;
    if (is_float) {
        if (!(out->f = malloc((n ? n : 1) * sizeof *out->f))) return DCZ_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            out->f[i] = a->has_f ? a->f : a->floats[i];
            if (!isfinite(out->f[i])) {
                cten_free(out);
                return fail(&c->im->e, DCZ_ERR_FORMAT, "%s: constant '%s' is not finite", c->label, x->name);
            }
        }
    } else {
        if (!(out->i = malloc((n ? n : 1) * sizeof *out->i))) return DCZ_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) out->i[i] = a->has_i ? a->i : a->ints[i];
    }
    return DCZ_OK;
}

/* Defines the node's outputs: output 0 an activation living in tensor t,
 * with the marks of value from (-1: none); every other output is an extra
 * one dcz does not compute. *out (may be NULL) gets output 0's value. */
static dcz_status outputs(const nodectx *c, uint32_t t, long from, long *out)
{
    imp *im = c->im;
    if (c->n->n_output == 0 || !c->n->output[0] || !*c->n->output[0])
        return fail(&im->e, DCZ_ERR_FORMAT, "%s has no output", c->label);
    long v;
    dcz_status s = val_add(im, c->n->output[0], V_ACT, c->label, &v);
    for (size_t k = 1; k < c->n->n_output && s == DCZ_OK; k++)
        if (c->n->output[k] && *c->n->output[k]) s = val_add(im, c->n->output[k], V_DEAD, c->label, NULL);
    if (s != DCZ_OK) return s;
    val *x = &im->vals[v];
    x->tensor = t;
    if (from >= 0) {
        const val *f = &im->vals[from];
        x->pad_h = f->pad_h;
        x->pad_w = f->pad_w;
        x->pad_node = f->pad_node;
        x->tail_node = f->tail_node;
        x->view = f->view;
    }
    im->tens[t].readers += uses_of(im, x->name);
    if (out) *out = v;
    return DCZ_OK;
}

/* Node c makes no layer: its output is activation v under a new name (the
 * same tensor, the same marks), and its own read of v was no real read. */
static dcz_status alias(const nodectx *c, long v, long *out)
{
    tensor_info *t = &c->im->tens[c->im->vals[v].tensor];
    if (t->readers) t->readers--;
    return outputs(c, c->im->vals[v].tensor, v, out);
}

/* Nodes with inputs beyond max. */
static dcz_status max_inputs(const nodectx *c, size_t min, size_t max)
{
    size_t n = c->n->n_input;
    while (n > 0 && !*input_name(c, n - 1)) n--;   /* trailing optional inputs left out */
    if (n < min || n > max)
        return fail(&c->im->e, DCZ_ERR_FORMAT, "%s has %zu inputs, expected %zu to %zu", c->label, n, min, max);
    return DCZ_OK;
}

/* ---- layers ------------------------------------------------------------------ */

/* The next name of a prefix: conv1, conv2, ...; "flatten" and "prob" go
 * without a number the first time, as dcz train names them. */
static void layer_name(imp *im, const char *prefix, char *buf, size_t len)
{
    size_t k = 0;
    while (k + 1 < NAME_PREFIXES && im->names[k].prefix && strcmp(im->names[k].prefix, prefix) != 0) k++;
    im->names[k].prefix = prefix;
    const uint32_t n = ++im->names[k].n;
    if (n == 1 && (strcmp(prefix, "flatten") == 0 || strcmp(prefix, "prob") == 0)) snprintf(buf, len, "%s", prefix);
    else snprintf(buf, len, "%s%u", prefix, n);
}

static dcz_status grow_layers(imp *im)
{
    if (im->nlayers < im->caplayers) return DCZ_OK;
    const uint32_t cap = im->caplayers ? im->caplayers * 2 : 16;
    dcz_doc_layer *nl = realloc(im->layers, cap * sizeof *nl);
    if (!nl) return DCZ_ERR_NOMEM;
    im->layers = nl;
    char (*ns)[DCZ_ONNX_SOURCE_LEN] = realloc(im->source, cap * sizeof *ns);
    if (!ns) return DCZ_ERR_NOMEM;
    im->source = ns;
    tensor_info *nt = realloc(im->tens, ((size_t)cap + 1) * sizeof *nt);
    if (!nt) return DCZ_ERR_NOMEM;
    im->tens = nt;
    im->caplayers = cap;
    return DCZ_OK;
}

/* Appends a layer of op named after prefix reading the nin tensors in,
 * after checking its attributes and its inputs' shapes; its output is
 * tensor im->nlayers, read by no one yet. *out (may be NULL) gets the
 * layer, to fill its tensors. */
static dcz_status push_layer(const nodectx *c, const char *prefix, uint16_t op, const int32_t *attr,
                             uint32_t nattr, const uint32_t *in, uint32_t nin, dcz_doc_layer **out)
{
    imp *im = c->im;
    if (im->nlayers >= DCZ_MAX_LAYERS)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "more than %d layers", DCZ_MAX_LAYERS);
    int has_params;
    if (dcz_op_check(op, attr, nattr, &has_params) != DCZ_OK)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: its sizes are outside what a .dcz layer holds "
                    "(windows and strides 1..%d, padding smaller than the window, sizes up to %u)", c->label,
                    DCZ_MAX_WINDOW, DCZ_MAX_DIM);
    dcz_shape ins[DCZ_MAX_INPUTS], next;
    for (uint32_t k = 0; k < nin; k++) ins[k] = im->tens[in[k]].shape;
    if (dcz_op_shape(op, attr, nattr, ins, nin, &next) != DCZ_OK) {
        char txt[256] = "";
        size_t n = 0;
        for (uint32_t k = 0; k < nin && n < sizeof txt; k++) {
            if (k) n += (size_t)snprintf(txt + n, sizeof txt - n, " and ");
            if (n < sizeof txt) shape_text(&ins[k], txt + n, sizeof txt - n);
            n = strlen(txt);
        }
        return fail(&im->e, DCZ_ERR_SHAPE, "%s does not fit its input%s %s (or its output is empty or too "
                    "large)", c->label, nin > 1 ? "s" : "", txt);
    }
    if (grow_layers(im) != DCZ_OK) return DCZ_ERR_NOMEM;
    dcz_doc_layer *l = &im->layers[im->nlayers];
    memset(l, 0, sizeof *l);
    l->op = op;
    l->nin = nin;
    memcpy(l->in, in, nin * sizeof *in);
    layer_name(im, prefix, l->name, sizeof l->name);
    l->nattr = nattr;
    if (nattr) memcpy(l->attr, attr, nattr * sizeof *attr);
    snprintf(im->source[im->nlayers], DCZ_ONNX_SOURCE_LEN, "%s", c->label);
    im->nlayers++;
    im->tens[im->nlayers].shape = next;
    im->tens[im->nlayers].readers = 0;
    if (out) *out = l;
    return DCZ_OK;
}

/* A layer of op (push_layer) named after the node's operator; node c's
 * output becomes its output. */
static dcz_status add_layer(const nodectx *c, uint16_t op, const int32_t *attr, uint32_t nattr,
                            const uint32_t *in, uint32_t nin, dcz_doc_layer **out)
{
    dcz_status s = push_layer(c, c->def->layer, op, attr, nattr, in, nin, out);
    return s == DCZ_OK ? outputs(c, c->im->nlayers, -1, NULL) : s;
}

/* One input activation in, one layer out. */
static dcz_status add_layer1(const nodectx *c, uint16_t op, const int32_t *attr, uint32_t nattr, long x,
                             dcz_doc_layer **out)
{
    const uint32_t in = c->im->vals[x].tensor;
    return add_layer(c, op, attr, nattr, &in, 1, out);
}

/* Refuses node c, whose output has the shape of its input activation v,
 * without stopping the walk: the reason (fmt) is counted under the node's
 * operator, the first one kept, and the output takes v's tensor, so that
 * the nodes after it are checked too. The import fails at the end of the
 * walk with one message for all of them (deferred_report). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static dcz_status defer(const nodectx *c, long v, const char *fmt, ...)
{
    imp *im = c->im;
    uint32_t k = 0;
    while (k < im->ndeferred && strcmp(im->deferred[k].op, c->def->name) != 0) k++;
    if (k == im->ndeferred && k < DEFER_TYPES) {
        deferral *d = &im->deferred[im->ndeferred++];
        d->op = c->def->name;
        d->n = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->why, sizeof d->why, fmt, ap);
        va_end(ap);
        printable(d->why);
    }
    if (k < DEFER_TYPES) im->deferred[k].n++;
    return alias(c, v, NULL);
}

/* The message for the nodes defer refused: per operator, the reason of the
 * first, and how many there are. */
static dcz_status deferred_report(imp *im)
{
    char msg[1024];
    size_t len = 0;
    msg[0] = '\0';
    for (uint32_t k = 0; k < im->ndeferred && len < sizeof msg; k++) {
        const deferral *d = &im->deferred[k];
        if (d->n == 1)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", k ? "; " : "", d->why);
        else
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%u %s nodes cannot be folded into a layer; "
                                    "the first: %s", k ? "; " : "", d->n, d->op, d->why);
    }
    return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s", msg);
}

#define NO_LAYER UINT32_MAX

/* The DENSE or CONV2D layer that computes activation v, for node c (what:
 * "batch normalization", "a constant it adds") to fold into: the layer's
 * output must be read by c alone. *layer gets it, or NO_LAYER when there
 * is none: then node c is refused (defer), its output given v's tensor. */
static dcz_status fold_target(const nodectx *c, long v, const char *what, uint32_t *layer)
{
    imp *im = c->im;
    const uint32_t t = im->vals[v].tensor;
    *layer = NO_LAYER;
    if (t == 0 || !dcz_op_get(im->layers[t - 1].op)->weighted)
        return defer(c, v, "%s follows no Conv, Gemm or MatMul: dcz folds %s into the layer that computes its "
                     "input, and supports it nowhere else", c->label, what);
    if (im->tens[t].readers != 1)
        return defer(c, v, "%s: the output of %s is read by other nodes too, so %s cannot be folded into it (dcz "
                     "folds it only into a Conv, Gemm or MatMul whose output it alone reads)", c->label,
                     im->source[t - 1], what);
    *layer = t - 1;
    return DCZ_OK;
}

/* Notes that node c was folded into layer k. */
static void note_folded(const nodectx *c, uint32_t k)
{
    imp *im = c->im;
    char *s = im->source[k];
    size_t n = strlen(s);
    if (n + 4 < DCZ_ONNX_SOURCE_LEN) snprintf(s + n, DCZ_ONNX_SOURCE_LEN - n, " + %s", c->label);
    im->folded++;
}

static dcz_status tensor_alloc(dcz_doc_tensor *t, uint32_t rank, const uint32_t *dims)
{
    t->enc = DCZ_ENC_F32;
    t->rank = rank;
    t->n = 1;
    for (uint32_t k = 0; k < rank; k++) {
        t->dims[k] = dims[k];
        t->n *= dims[k];
    }
    t->values = calloc(t->n ? t->n : 1, sizeof *t->values);
    return t->values ? DCZ_OK : DCZ_ERR_NOMEM;
}

/* ---- operators --------------------------------------------------------------- */

static int fits_i32(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

/* A per-output bias b (rank/dims of a constant) that broadcasts to one value
 * per output unit (DENSE: (N, M); CONV2D: (N, M, H, W)): 1 (scalar) or M
 * values, in a shape that keeps the output's. *per_unit gets 0 for a
 * scalar, 1 for one value per unit. */
static int bias_shape_ok(const cten *b, uint32_t m, int conv, int *per_unit)
{
    uint64_t ones = 0, big = 0;
    int big_at = -1;
    for (uint32_t k = 0; k < b->rank; k++) {
        if (b->dims[k] == 1) ones++;
        else { big++; big_at = (int)k; }
    }
    if (big == 0) { *per_unit = 0; return b->n == 1; }
    if (big > 1 || b->dims[big_at] != (int64_t)m) return 0;
    *per_unit = 1;
    if (!conv) return big_at == (int)b->rank - 1 && b->rank <= 2;       /* [M], [1, M] */
    return b->rank >= 3 && b->rank <= 4 && big_at == (int)b->rank - 3;  /* [M,1,1], [1,M,1,1] */
}

static dcz_status dense(const nodectx *c, int matmul)
{
    imp *im = c->im;
    static const char *const known_gemm[] = { "alpha", "beta", "transA", "transB", NULL };
    static const char *const none[] = { NULL };
    dcz_status s = attrs_known(c, matmul ? none : known_gemm);
    if (s == DCZ_OK) s = max_inputs(c, 2, matmul ? 2 : 3);
    int64_t ta = 0, tb = 0;
    float alpha = 1, beta = 1;
    if (s == DCZ_OK && !matmul) s = attr_int(c, "transA", 0, &ta);
    if (s == DCZ_OK && !matmul) s = attr_int(c, "transB", 0, &tb);
    if (s == DCZ_OK && !matmul) s = attr_float(c, "alpha", 1.0f, &alpha);
    if (s == DCZ_OK && !matmul) s = attr_float(c, "beta", 1.0f, &beta);
    if (s != DCZ_OK) return s;
    if (ta != 0) return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: transA %lld is not supported (only 0)", c->label, (long long)ta);
    long x;
    if ((s = input_act(c, 0, &x)) != DCZ_OK) return s;
    const dcz_shape *shape = act_shape(im, x);
    if (shape->rank != 1)
        return fail(&im->e, DCZ_ERR_SHAPE, "%s takes a %u-d activation per sample; %s needs a flat one "
                    "(add a Flatten before it)", c->label, shape->rank, matmul ? "MatMul" : "Gemm");
    cten w, b;
    int has_b = 0;
    memset(&b, 0, sizeof b);
    if ((s = input_const(c, 1, WANT_FLOATS, "weight", &w, NULL)) != DCZ_OK) return s;
    if (!matmul) s = input_const(c, 2, WANT_FLOATS, "bias", &b, &has_b);
    const uint32_t in = shape->dims[0];
    int64_t k_dim = w.rank == 2 ? w.dims[tb ? 1 : 0] : -1, m_dim = w.rank == 2 ? w.dims[tb ? 0 : 1] : -1;
    int per_unit = 0;
    dcz_doc_layer *l = NULL;
    if (s != DCZ_OK) goto done;
    if (w.rank != 2) {
        s = fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: the weight has rank %u; dcz needs a matrix", c->label, w.rank);
        goto done;
    }
    if (k_dim != (int64_t)in || m_dim < 1 || m_dim > DCZ_MAX_DIM) {
        s = fail(&im->e, DCZ_ERR_SHAPE, "%s: weight %lld x %lld does not fit an input of %u features", c->label,
                 (long long)w.dims[0], (long long)w.dims[1], in);
        goto done;
    }
    const uint32_t out = (uint32_t)m_dim;
    if (has_b && !bias_shape_ok(&b, out, 0, &per_unit)) {
        s = fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: bias of %zu values does not broadcast to one per output "
                 "(%u)", c->label, b.n, out);
        goto done;
    }
    const int32_t attr[2] = { (int32_t)in, (int32_t)out };
    if ((s = add_layer1(c, DCZ_OP_DENSE, attr, 2, x, &l)) != DCZ_OK) goto done;
    const uint32_t wd[2] = { out, in }, bd[1] = { out };
    l->ntensors = 2;
    if ((s = tensor_alloc(&l->t[0], 2, wd)) != DCZ_OK || (s = tensor_alloc(&l->t[1], 1, bd)) != DCZ_OK) goto done;
    float *W = l->t[0].values;   /* (out, in) */
    for (uint32_t o = 0; o < out; o++)
        for (uint32_t k = 0; k < in; k++) {
            float v = tb ? w.f[(size_t)o * in + k] : w.f[(size_t)k * out + o];
            W[(size_t)o * in + k] = alpha == 1.0f ? v : alpha * v;
        }
    if (has_b)
        for (uint32_t o = 0; o < out; o++) {
            float v = b.f[per_unit ? o : 0];
            l->t[1].values[o] = beta == 1.0f ? v : beta * v;
        }
done:
    cten_free(&w);
    cten_free(&b);
    return s;
}

static dcz_status op_gemm(const nodectx *c) { return dense(c, 0); }
static dcz_status op_matmul(const nodectx *c) { return dense(c, 1); }

/* A constant added to the bias of the DENSE or CONV2D layer computing the
 * other input. */
static dcz_status add_bias(const nodectx *c, size_t act, size_t konst)
{
    imp *im = c->im;
    long x;
    uint32_t k;
    dcz_status s = input_act(c, act, &x);
    if (s == DCZ_OK) s = fold_target(c, x, "a constant it adds", &k);
    if (s != DCZ_OK || k == NO_LAYER) return s;
    dcz_doc_layer *l = &im->layers[k];
    const int conv = l->op == DCZ_OP_CONV2D;
    const uint32_t m = (uint32_t)l->attr[1];
    cten b;
    if ((s = input_const(c, konst, WANT_FLOATS, "addend", &b, NULL)) != DCZ_OK) return s;
    int per_unit;
    if (!bias_shape_ok(&b, m, conv, &per_unit)) {
        cten_free(&b);
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: the constant does not broadcast as a bias (one value, or "
                    "one per output channel: %u)", c->label, m);
    }
    for (uint32_t o = 0; o < m; o++) l->t[1].values[o] += b.f[per_unit ? o : 0];
    cten_free(&b);
    note_folded(c, k);
    return alias(c, x, NULL);
}

/* The shape ONNX sees for activation v: the one a Reshape gave it, else
 * its tensor's. */
static const dcz_shape *onnx_shape(const imp *im, long v)
{
    return im->vals[v].tail_node >= 0 ? &im->vals[v].view : act_shape(im, v);
}

/* ---- shapes folded at import -------------------------------------------------
 *
 * For the model's fixed input shape, the nodes that compute shapes (Shape
 * of an activation, then Gather, Unsqueeze, Squeeze, Concat, Slice, Cast,
 * Add, Sub, Mul and Div of such integers and constants) are evaluated as
 * the walk meets them: their outputs are constants of rank 0 or 1 (at most
 * FOLD_MAX values) that later nodes read like initializers, and they leave
 * no layer. The batch size, unknown where the input's batch dimension is
 * not a number, may be moved (Gather, Unsqueeze, Concat, ...) but not
 * computed with, and ends as a Reshape's first dimension. */

/* Node c's one output: the folded constant of rank 0 or 1 holding v (n
 * values). */
static dcz_status fold_out(const nodectx *c, int rank, const int64_t *v, size_t n)
{
    imp *im = c->im;
    if (n > FOLD_MAX)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s computes %zu values (dcz folds shapes of at most %d values)",
                    c->label, n, FOLD_MAX);
    if (c->n->n_output != 1) return fail(&im->e, DCZ_ERR_FORMAT, "%s must have one output", c->label);
    long o;
    dcz_status s = val_add(im, c->n->output[0], V_CONST, c->label, &o);
    if (s != DCZ_OK) return s;
    val *x = &im->vals[o];
    x->fold_rank = rank;
    x->nfold = (uint32_t)n;
    if (n) memcpy(x->fold, v, n * sizeof *v);
    im->dropped++;
    return DCZ_OK;
}

/* Input k of node c (what, in messages) as the integers of a constant of
 * rank 0 or 1: folded on the way, an initializer or a Constant. */
static dcz_status fold_in(const nodectx *c, size_t k, const char *what, int64_t *v, size_t *n, int *rank)
{
    long x;
    dcz_status s = input_val(c, k, &x);
    if (s != DCZ_OK) return s;
    if (c->im->vals[x].kind != V_CONST)
        return fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s reads the computed value '%s' as its %s: dcz evaluates %s "
                    "on shapes and constants only", c->label, c->im->vals[x].name, what, c->def->name);
    cten t;
    if ((s = input_const(c, k, WANT_SHAPE, what, &t, NULL)) != DCZ_OK) return s;
    if (t.rank > 1 || t.n > FOLD_MAX)
        s = fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: its %s has %zu values of rank %u (dcz folds shapes: rank 0 "
                 "or 1, at most %d values)", c->label, what, t.n, t.rank, FOLD_MAX);
    else {
        if (t.n) memcpy(v, t.i, t.n * sizeof *v);
        *n = t.n;
        *rank = (int)t.rank;
    }
    cten_free(&t);
    return s;
}

/* Whether every input of node c is a constant (so the node folds). */
static int all_const(const nodectx *c)
{
    for (size_t k = 0; k < c->n->n_input; k++) {
        if (!*input_name(c, k)) continue;
        const long v = val_find(c->im, input_name(c, k));
        if (v < 0 || c->im->vals[v].kind != V_CONST) return 0;
    }
    return c->n->n_input > 0;
}

/* Shape (start and end from opset 15): the batch size, then the
 * dimensions of one sample as ONNX sees it. Its read of the activation is
 * no real read (a batch norm may still fold into the layer computing it). */
static dcz_status op_shape(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known15[] = { "start", "end", NULL };
    static const char *const known[] = { NULL };
    dcz_status s = attrs_known(c, im->opset >= 15 ? known15 : known);
    int64_t start = 0, end = INT64_MAX;
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 1, 1);
    if (s == DCZ_OK) s = attr_int(c, "start", 0, &start);
    if (s == DCZ_OK) s = attr_int(c, "end", INT64_MAX, &end);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    const dcz_shape *sh = onnx_shape(im, x);
    const int64_t r = (int64_t)sh->rank + 1;
    int64_t d[1 + DCZ_MAX_RANK];
    d[0] = im->batch_fixed ? im->batch : BATCH_MARK;
    for (uint32_t k = 0; k < sh->rank; k++) d[k + 1] = sh->dims[k];
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < start ? start : end > r ? r : end;
    tensor_info *t = &im->tens[im->vals[x].tensor];
    if (t->readers) t->readers--;
    return fold_out(c, 1, d + start, (size_t)(end - start));
}

/* Gather on axis 0 of a folded shape: its values at the indices (negative
 * ones from the end). */
static dcz_status op_gather(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "axis", NULL };
    dcz_status s = attrs_known(c, known);
    int64_t axis = 0, data[FOLD_MAX], idx[FOLD_MAX], out[FOLD_MAX];
    size_t nd = 0, ni = 0;
    int rd = 0, ri = 0;
    if (s == DCZ_OK) s = max_inputs(c, 2, 2);
    if (s == DCZ_OK) s = attr_int(c, "axis", 0, &axis);
    if (s == DCZ_OK) s = fold_in(c, 0, "data", data, &nd, &rd);
    if (s == DCZ_OK) s = fold_in(c, 1, "indices", idx, &ni, &ri);
    if (s != DCZ_OK) return s;
    if (rd != 1 || (axis != 0 && axis != -1))
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s gathers on axis %lld of a rank-%d value (dcz folds Gather of a "
                    "shape: axis 0 of rank 1)", c->label, (long long)axis, rd);
    for (size_t k = 0; k < ni; k++) {
        const int64_t i = idx[k] < 0 ? idx[k] + (int64_t)nd : idx[k];
        if (i < 0 || i >= (int64_t)nd)
            return fail(&im->e, DCZ_ERR_FORMAT, "%s: index %lld of %zu values", c->label, (long long)idx[k], nd);
        out[k] = data[i];
    }
    return fold_out(c, ri, out, ni);
}

/* Unsqueeze of a scalar to (1) and Squeeze of (1) to a scalar, on axis 0
 * (axes an attribute before opset 13, an input from 13). */
static dcz_status op_squeeze(const nodectx *c)
{
    imp *im = c->im;
    const int un = strcmp(c->def->name, "Unsqueeze") == 0, axes_input = im->opset >= 13;
    static const char *const known_attr[] = { "axes", NULL };
    static const char *const known[] = { NULL };
    dcz_status s = attrs_known(c, axes_input ? known : known_attr);
    int64_t v[FOLD_MAX], axes[FOLD_MAX];
    size_t n = 0, na = 0;
    int r = 0, ra = 0;
    if (s == DCZ_OK) s = max_inputs(c, un && axes_input ? 2 : 1, axes_input ? 2 : 1);
    if (s == DCZ_OK) s = fold_in(c, 0, "data", v, &n, &r);
    if (s == DCZ_OK && axes_input && *input_name(c, 1)) s = fold_in(c, 1, "axes", axes, &na, &ra);
    if (s == DCZ_OK && !axes_input) {
        const int64_t *a;
        if ((s = attr_ints(c, "axes", 0, &a)) == DCZ_OK && a) {
            na = attr_find(c, "axes")->n_ints;
            if (na > FOLD_MAX) na = FOLD_MAX + 1;
            else memcpy(axes, a, na * sizeof *a);
        }
    }
    if (s != DCZ_OK) return s;
    const int fits = un ? r == 0 && na == 1 && (axes[0] == 0 || axes[0] == -1)
                        : r == 1 && n == 1 && (na == 0 || (na == 1 && (axes[0] == 0 || axes[0] == -1)));
    if (!fits)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s of a rank-%d value of %zu values (dcz folds %s of shapes "
                    "only: a scalar to (1) and back)", c->label, r, n, c->def->name);
    return fold_out(c, un ? 1 : 0, v, n);
}

/* Cast of folded integers to an integer type, values kept. */
static dcz_status op_cast(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "to", "saturate", NULL };
    dcz_status s = attrs_known(c, known);
    int64_t to = 0, v[FOLD_MAX];
    size_t n = 0;
    int r = 0;
    if (s == DCZ_OK) s = max_inputs(c, 1, 1);
    if (s == DCZ_OK) s = attr_int(c, "to", 0, &to);
    if (s == DCZ_OK) s = fold_in(c, 0, "input", v, &n, &r);
    if (s != DCZ_OK) return s;
    int64_t lo, hi;
    switch (to) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: lo = INT64_MIN; hi = INT64_MAX; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: lo = 0; hi = UINT32_MAX; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: lo = 0; hi = INT64_MAX; break;
    default:
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s casts a shape to %s (dcz folds casts of shapes to int32, "
                    "int64, uint32 and uint64)", c->label, dtype_name((int32_t)to));
    }
    for (size_t k = 0; k < n; k++)
        if (v[k] != BATCH_MARK && (v[k] < lo || v[k] > hi))
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: %lld does not fit %s", c->label, (long long)v[k],
                        dtype_name((int32_t)to));
    return fold_out(c, r, v, n);
}

/* Add, Sub, Mul, Div of two folded shapes or integer constants, one of a
 * single value broadcast; Div truncates (ONNX's integer division). */
static dcz_status fold_arith(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { NULL };
    dcz_status s = attrs_known(c, known);
    int64_t a[FOLD_MAX], b[FOLD_MAX], y[FOLD_MAX];
    size_t na = 0, nb = 0;
    int ra = 0, rb = 0;
    if (s == DCZ_OK) s = max_inputs(c, 2, 2);
    if (s == DCZ_OK) s = fold_in(c, 0, "first input", a, &na, &ra);
    if (s == DCZ_OK) s = fold_in(c, 1, "second input", b, &nb, &rb);
    if (s != DCZ_OK) return s;
    if (na != nb && na != 1 && nb != 1)
        return fail(&im->e, DCZ_ERR_SHAPE, "%s: %zu and %zu values do not broadcast", c->label, na, nb);
    const size_t n = na > nb ? na : nb;
    const char op = c->def->name[0];   /* Add, Sub, Mul, Div */
    for (size_t k = 0; k < n; k++) {
        const int64_t u = a[na == 1 ? 0 : k], w = b[nb == 1 ? 0 : k];
        if (u == BATCH_MARK || w == BATCH_MARK)
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s computes with the batch size, which the model leaves open "
                        "(export with a fixed batch size, or reshape with -1)", c->label);
        if ((u > INT32_MAX || u < INT32_MIN || w > INT32_MAX || w < INT32_MIN) && op != 'D')
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: values beyond 32 bits (not a shape)", c->label);
        if (op == 'D' && w == 0) return fail(&im->e, DCZ_ERR_FORMAT, "%s divides by zero", c->label);
        y[k] = op == 'A' ? u + w : op == 'S' ? u - w : op == 'M' ? u * w : u / w;
    }
    return fold_out(c, ra > rb ? ra : rb, y, n);
}

/* Concat on axis 0 of folded shapes and integer constants. */
static dcz_status fold_concat(const nodectx *c)
{
    imp *im = c->im;
    int64_t axis, y[FOLD_MAX], v[FOLD_MAX];
    size_t n = 0;
    dcz_status s = attr_int(c, "axis", 0, &axis);
    if (s != DCZ_OK) return s;
    if (axis != 0 && axis != -1)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s joins shapes on axis %lld (of rank 1: axis 0)", c->label,
                    (long long)axis);
    for (size_t k = 0; k < c->n->n_input; k++) {
        size_t nk = 0;
        int r = 0;
        if ((s = fold_in(c, k, "input", v, &nk, &r)) != DCZ_OK) return s;
        if (r != 1 || n + nk > FOLD_MAX)
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s joins a rank-%d value or more than %d values (dcz folds "
                        "shapes)", c->label, r, FOLD_MAX);
        memcpy(y + n, v, nk * sizeof *v);
        n += nk;
    }
    return fold_out(c, 1, y, n);
}

/* Slice of a folded shape (axis 0, step 1). */
static dcz_status fold_slice(const nodectx *c)
{
    imp *im = c->im;
    int64_t v[FOLD_MAX], p[4][FOLD_MAX];
    size_t n = 0, np[4] = { 0 };
    int r = 0, rp;
    static const char *const what[4] = { "starts", "ends", "axes", "steps" };
    dcz_status s = fold_in(c, 0, "data", v, &n, &r);
    for (int j = 0; j < 4 && s == DCZ_OK; j++)
        if (j < 2 || *input_name(c, (size_t)j + 1)) s = fold_in(c, (size_t)j + 1, what[j], p[j], &np[j], &rp);
    if (s != DCZ_OK) return s;
    const int64_t dim = (int64_t)n;
    if (r != 1 || np[0] != 1 || np[1] != 1 || (np[2] && p[2][0] != 0 && p[2][0] != -1) || (np[3] && p[3][0] != 1))
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s slices a shape other than on axis 0 with step 1", c->label);
    int64_t a = p[0][0], b = p[1][0];
    if (a < 0) a += dim;
    if (b < 0) b += dim;
    a = a < 0 ? 0 : a > dim ? dim : a;
    b = b < a ? a : b > dim ? dim : b;
    return fold_out(c, 1, v + a, (size_t)(b - a));
}

/* The opening of a two-input node without attributes (Add, Mul): its
 * values a and b. */
static dcz_status two_inputs(const nodectx *c, long *a, long *b)
{
    static const char *const none[] = { NULL };
    dcz_status s = attrs_known(c, none);
    if (s == DCZ_OK) s = max_inputs(c, 2, 2);
    if (s == DCZ_OK) s = input_val(c, 0, a);
    if (s == DCZ_OK) s = input_val(c, 1, b);
    return s;
}

/* Add: of two activations of one shape an ADD layer (a residual
 * connection); of an activation and a constant a bias folded. */
static dcz_status op_add(const nodectx *c)
{
    imp *im = c->im;
    long a, b;
    dcz_status s = two_inputs(c, &a, &b);
    if (s != DCZ_OK) return s;
    const int a_act = im->vals[a].kind == V_ACT, b_act = im->vals[b].kind == V_ACT;
    if (!a_act && !b_act) return fold_arith(c);   /* a shape computed */
    if (!a_act || !b_act) return add_bias(c, a_act ? 0 : 1, a_act ? 1 : 0);
    if ((s = input_act(c, 0, &a)) != DCZ_OK || (s = input_act(c, 1, &b)) != DCZ_OK) return s;
    const dcz_shape *sa = act_shape(im, a), *sb = act_shape(im, b);
    if (!dcz_shape_is(sa, sb->rank, sb->dims)) {
        char ta[64], tb[64];
        shape_text(sa, ta, sizeof ta);
        shape_text(sb, tb, sizeof tb);
        return fail(&im->e, DCZ_ERR_SHAPE, "%s adds values of shapes %s and %s per sample (dcz adds values of "
                    "one shape)", c->label, ta, tb);
    }
    const uint32_t in[2] = { im->vals[a].tensor, im->vals[b].tensor };
    return add_layer(c, DCZ_OP_ADD, NULL, 0, in, 2, NULL);
}

/* Whether Mul(x, f) is dcz's MUL of x by factors f: x as it is, f of x's
 * shape or (C, 1, 1) for x (C, H, W) as ONNX sees them (equal ranks: then
 * ONNX broadcasting means what MUL does), and the tensors fit MUL. */
static int mul_fits(const imp *im, long x, long f)
{
    const dcz_shape *vx = onnx_shape(im, x), *vf = onnx_shape(im, f);
    const uint32_t channels[3] = { vx->dims[0], 1, 1 };
    if (im->vals[x].tail_node >= 0) return 0;
    if (!dcz_shape_is(vf, vx->rank, vx->dims) && !(vx->rank == 3 && dcz_shape_is(vf, 3, channels))) return 0;
    const dcz_shape in[2] = { *act_shape(im, x), *act_shape(im, f) };
    dcz_shape out;
    return dcz_op_shape(DCZ_OP_MUL, NULL, 0, in, 2, &out) == DCZ_OK;
}

/* Mul of x and the output (gate) of a Sigmoid of x, or of a HardSigmoid of
 * x with HardSwish's constants, that this Mul alone reads (op_activation
 * made no layer of it): one SILU layer, x sigmoid(x), or one HARD_SWISH,
 * reading x once where the Mul read it twice. */
static dcz_status mul_gate(const nodectx *c, long x, long gate)
{
    imp *im = c->im;
    const uint32_t t = im->vals[x].tensor;
    if (im->tens[t].readers) im->tens[t].readers--;
    const uint16_t op = im->vals[gate].gate_op;
    dcz_status s = push_layer(c, op == DCZ_OP_SILU ? "silu" : "hswish", op, NULL, 0, &t, 1, NULL);
    if (s != DCZ_OK) return s;
    const size_t k = (size_t)im->vals[gate].gate_node;
    char sig[96];
    node_label(im->g->node[k], k, sig, sizeof sig);
    snprintf(im->source[im->nlayers - 1], DCZ_ONNX_SOURCE_LEN, "%.72s + %.72s", sig, c->label);
    im->folded++;
    return outputs(c, im->nlayers, -1, NULL);
}

/* Mul of two activations: MUL, the factors either of the other's shape or
 * one per channel ((N, C, 1, 1) for (N, C, H, W)), in either order; SILU
 * or HARD_SWISH for x times a Sigmoid or a HardSigmoid of x (mul_gate). */
static dcz_status op_mul(const nodectx *c)
{
    imp *im = c->im;
    long a, b;
    dcz_status s = two_inputs(c, &a, &b);
    if (s != DCZ_OK) return s;
    if (im->vals[a].kind == V_CONST && im->vals[b].kind == V_CONST) return fold_arith(c);   /* a shape */
    if (im->vals[a].kind != V_ACT || im->vals[b].kind != V_ACT)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s multiplies by a constant (dcz's Mul takes two computed "
                    "values)", c->label);
    if ((s = input_act(c, 0, &a)) != DCZ_OK || (s = input_act(c, 1, &b)) != DCZ_OK) return s;
    if (im->vals[b].gate_x == a) return mul_gate(c, a, b);
    if (im->vals[a].gate_x == b) return mul_gate(c, b, a);
    if (!mul_fits(im, a, b)) {
        const long t = a;
        a = b;
        b = t;
    }
    if (!mul_fits(im, a, b)) {
        char ta[64], tb[64];
        shape_text(onnx_shape(im, b), ta, sizeof ta);
        shape_text(onnx_shape(im, a), tb, sizeof tb);
        return fail(&im->e, DCZ_ERR_SHAPE, "%s multiplies values of shapes %s and %s per sample (dcz multiplies "
                    "values of one shape, or (C, H, W) by one factor per channel, (C, 1, 1))", c->label, ta, tb);
    }
    const uint32_t in[2] = { im->vals[a].tensor, im->vals[b].tensor };
    return add_layer(c, DCZ_OP_MUL, NULL, 0, in, 2, NULL);
}

/* Concat on the channels (axis 1 of (N, C, H, W) or (N, D)): CONCAT. */
static dcz_status op_concat(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "axis", NULL };
    dcz_status s = attrs_known(c, known);
    if (s != DCZ_OK) return s;
    if (all_const(c)) return fold_concat(c);   /* a shape */
    if (c->n->n_input > CONCAT_MAX_VALUES)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s joins %zu values (dcz joins at most %d)", c->label,
                    c->n->n_input, CONCAT_MAX_VALUES);
    if ((s = max_inputs(c, 1, CONCAT_MAX_VALUES)) != DCZ_OK) return s;
    if (!attr_find(c, "axis")) return fail(&im->e, DCZ_ERR_FORMAT, "%s has no axis", c->label);
    int64_t axis;
    if ((s = attr_int(c, "axis", 1, &axis)) != DCZ_OK) return s;
    uint32_t in[CONCAT_MAX_VALUES];
    long x = -1;
    for (size_t k = 0; k < c->n->n_input; k++) {
        if ((s = input_act(c, k, &x)) != DCZ_OK) return s;
        in[k] = im->vals[x].tensor;
    }
    const int64_t r = (int64_t)act_shape(im, x)->rank + 1;
    if (axis < 0) axis += r;
    if (axis != 1)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: axis %lld of rank-%lld values (dcz joins channels: "
                    "axis 1)", c->label, (long long)axis, (long long)r);
    if (c->n->n_input == 1) {
        im->dropped++;
        return alias(c, x, NULL);
    }
    /* more values than a layer reads (DenseNet's later blocks): a chain of
     * CONCAT layers, each joining the one before and the next values
     * (joining channels is associative) */
    uint32_t n = (uint32_t)c->n->n_input, *first = in;
    while (n > DCZ_MAX_INPUTS) {
        if ((s = push_layer(c, c->def->layer, DCZ_OP_CONCAT, NULL, 0, first, DCZ_MAX_INPUTS, NULL)) != DCZ_OK)
            return s;
        im->tens[im->nlayers].readers = 1;
        first += DCZ_MAX_INPUTS - 1;
        n -= DCZ_MAX_INPUTS - 1;
        first[0] = im->nlayers;
    }
    return add_layer(c, DCZ_OP_CONCAT, NULL, 0, first, n, NULL);
}

/* A bound of Clip (input k): absent, or a constant scalar. */
static dcz_status clip_bound(const nodectx *c, size_t k, const char *what, float *v)
{
    cten b;
    int present;
    dcz_status s = input_const(c, k, WANT_FLOATS, what, &b, &present);
    if (s != DCZ_OK || !present) return s;
    if (b.n != 1 || b.rank > 1) s = fail(&c->im->e, DCZ_ERR_UNSUPPORTED, "%s: its %s has %zu values (a scalar "
                                         "is needed)", c->label, what, b.n);
    else *v = b.f[0];
    cten_free(&b);
    return s;
}

/* Clip: bounds as optional constant inputs (opset 11 on); an absent bound
 * is the largest float. */
static dcz_status op_clip(const nodectx *c)
{
    imp *im = c->im;
    static const char *const none[] = { NULL };
    dcz_status s = attrs_known(c, none);
    float lo = -FLT_MAX, hi = FLT_MAX;
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 1, 3);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s == DCZ_OK) s = clip_bound(c, 1, "minimum", &lo);
    if (s == DCZ_OK) s = clip_bound(c, 2, "maximum", &hi);
    if (s != DCZ_OK) return s;
    if (!(lo <= hi))
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: its minimum %g is above its maximum %g", c->label,
                    (double)lo, (double)hi);
    const int32_t attr[2] = { dcz_f32_attr(lo), dcz_f32_attr(hi) };
    return add_layer1(c, DCZ_OP_CLIP, attr, 2, x, NULL);
}

/* Whether node c (a Sigmoid, or a HardSigmoid) is half of a SiLU, or of
 * a HardSwish, as exporters write them: its output read by one later node
 * alone, a Mul of c's input and that output (in either order). */
static int mul_gate_of(const nodectx *c)
{
    const imp *im = c->im;
    const char *x = input_name(c, 0), *y = c->n->n_output ? c->n->output[0] : NULL;
    const long k = sole_reader(im, y);
    if (k <= (long)c->index) return 0;
    const Onnx__NodeProto *m = im->g->node[k];
    const opdef *d = op_find(m);
    if (!d || strcmp(d->name, "Mul") != 0 || m->n_input != 2 || !m->input[0] || !m->input[1]) return 0;
    return (strcmp(m->input[0], x) == 0 && strcmp(m->input[1], y) == 0) ||
           (strcmp(m->input[0], y) == 0 && strcmp(m->input[1], x) == 0);
}

/* One activation in, one out, with float attributes: Relu, Sigmoid, Tanh,
 * HardSwish, LeakyRelu (alpha 0.01), HardSigmoid (alpha 0.2, beta 0.5), and
 * GlobalAveragePool. A Sigmoid that is half of a SiLU, or a HardSigmoid
 * of alpha 1/6 and beta 1/2 half of a HardSwish (mul_gate_of), makes no
 * layer: its output is its input's tensor, marked for the Mul (mul_gate),
 * which makes the SILU or HARD_SWISH (whose t = x / 6 + 1/2 may differ
 * from the HardSigmoid's x 1/6 + 1/2 in its last bit). */
static dcz_status op_activation(const nodectx *c)
{
    static const char *const none[] = { NULL }, *const leaky[] = { "alpha", NULL },
                             *const hard[] = { "alpha", "beta", NULL };
    const uint16_t op = c->def->op;
    dcz_status s = attrs_known(c, op == DCZ_OP_LEAKY_RELU ? leaky : op == DCZ_OP_HARD_SIGMOID ? hard : none);
    if (s == DCZ_OK) s = max_inputs(c, 1, 1);
    float alpha = 0, beta = 0;
    uint32_t nattr = 0;
    if (s == DCZ_OK && op == DCZ_OP_LEAKY_RELU) {
        s = attr_float(c, "alpha", 0.01f, &alpha);
        nattr = 1;
    }
    if (s == DCZ_OK && op == DCZ_OP_HARD_SIGMOID) {
        s = attr_float(c, "alpha", 0.2f, &alpha);
        if (s == DCZ_OK) s = attr_float(c, "beta", 0.5f, &beta);
        nattr = 2;
    }
    long x;
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    const int hswish = op == DCZ_OP_HARD_SIGMOID && alpha == 1.0f / 6.0f && beta == 0.5f;
    if ((op == DCZ_OP_SIGMOID || hswish) && mul_gate_of(c)) {
        long gate;
        if ((s = alias(c, x, &gate)) != DCZ_OK) return s;
        c->im->vals[gate].gate_x = x;
        c->im->vals[gate].gate_node = (long)c->index;
        c->im->vals[gate].gate_op = hswish ? DCZ_OP_HARD_SWISH : DCZ_OP_SILU;
        return DCZ_OK;
    }
    const int32_t attr[2] = { dcz_f32_attr(alpha), dcz_f32_attr(beta) };
    return add_layer1(c, op, attr, nattr, x, NULL);
}

/* Window attributes of Conv and the pools on an input of shape in:
 * kernel, strides, symmetric pads (after auto_pad), dilations 1, ceil_mode
 * (pools) only when it gives the floor size. win gets kh, kw, sh, sw, ph,
 * pw. */
static dcz_status window(const nodectx *c, const dcz_shape *in, const int64_t *kernel_from_w, int pool,
                         int32_t win[6])
{
    imp *im = c->im;
    const int64_t *ks, *st, *pads, *dil;
    int64_t ceil_mode = 0;
    int auto_pad;
    static const char *const pads_modes[] = { "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER", NULL };
    dcz_status s = attr_ints(c, "kernel_shape", 2, &ks);
    if (s == DCZ_OK) s = attr_ints(c, "strides", 2, &st);
    if (s == DCZ_OK) s = attr_ints(c, "pads", 4, &pads);
    if (s == DCZ_OK) s = attr_ints(c, "dilations", 2, &dil);
    if (s == DCZ_OK) s = attr_choice(c, "auto_pad", pads_modes, &auto_pad);
    if (s == DCZ_OK && pool) s = attr_int(c, "ceil_mode", 0, &ceil_mode);
    if (s != DCZ_OK) return s;
    if (in->rank != 3)
        return fail(&im->e, DCZ_ERR_SHAPE, "%s needs a (C, H, W) activation per sample, not rank %u", c->label,
                    in->rank);
    int64_t k[2], sd[2] = { 1, 1 }, p[2] = { 0, 0 };
    if (!ks && !kernel_from_w) return fail(&im->e, DCZ_ERR_FORMAT, "%s has no kernel_shape", c->label);
    for (int d = 0; d < 2; d++) {
        k[d] = ks ? ks[d] : kernel_from_w[d];
        if (kernel_from_w && k[d] != kernel_from_w[d])
            return fail(&im->e, DCZ_ERR_FORMAT, "%s: kernel_shape does not match the weight", c->label);
        if (st) sd[d] = st[d];
        if (dil && dil[d] != 1)
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: dilations %lld x %lld are not supported (only 1)", c->label,
                        (long long)dil[0], (long long)dil[1]);
        if (!fits_i32(k[d], 1, DCZ_MAX_WINDOW) || !fits_i32(sd[d], 1, DCZ_MAX_WINDOW))
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: kernel %lld and stride %lld must be 1..%d", c->label,
                        (long long)k[d], (long long)sd[d], DCZ_MAX_WINDOW);
    }
    if (auto_pad == 0 && pads) {
        for (int d = 0; d < 2; d++) {
            if (pads[d] != pads[d + 2])
                return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: asymmetric pads (%lld, %lld, %lld, %lld) are not "
                            "supported", c->label, (long long)pads[0], (long long)pads[1], (long long)pads[2],
                            (long long)pads[3]);
            if (!fits_i32(pads[d], 0, DCZ_MAX_WINDOW))
                return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: pad %lld out of range", c->label, (long long)pads[d]);
            p[d] = pads[d];
        }
    } else if (auto_pad >= 2) {   /* SAME: output ceil(in / stride), padding split evenly */
        for (int d = 0; d < 2; d++) {
            int64_t n = in->dims[1 + d], o = (n + sd[d] - 1) / sd[d];
            int64_t total = (o - 1) * sd[d] + k[d] - n;
            if (total < 0) total = 0;
            if (total % 2)
                return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: auto_pad SAME needs uneven padding here (not supported)",
                            c->label);
            p[d] = total / 2;
        }
    } else if (pads && auto_pad == 1) {
        return fail(&im->e, DCZ_ERR_FORMAT, "%s: both pads and auto_pad VALID", c->label);
    }
    if (ceil_mode) {
        for (int d = 0; d < 2; d++) {
            int64_t span = in->dims[1 + d] + 2 * p[d] - k[d];
            if (span >= 0 && span % sd[d] != 0)
                return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: ceil_mode 1 gives a larger output than dcz's pooling "
                            "here (only ceil_mode 0, or sizes where both agree)", c->label);
        }
    } else if (ceil_mode != 0) {
        return fail(&im->e, DCZ_ERR_FORMAT, "%s: ceil_mode %lld", c->label, (long long)ceil_mode);
    }
    win[0] = (int32_t)k[0]; win[1] = (int32_t)k[1];
    win[2] = (int32_t)sd[0]; win[3] = (int32_t)sd[1];
    win[4] = (int32_t)p[0]; win[5] = (int32_t)p[1];
    return DCZ_OK;
}

/* Takes the padding of a Pad before input value x into win; count_include_pad
 * of an AveragePool (cip, NULL for Conv) must allow it. */
static dcz_status use_pad(const nodectx *c, long x, int32_t win[6], int64_t *cip)
{
    imp *im = c->im;
    const val *v = &im->vals[x];
    if (v->pad_node < 0) return DCZ_OK;
    char pad[96];
    node_label(im->g->node[v->pad_node], (size_t)v->pad_node, pad, sizeof pad);
    if (cip && *cip == 0 && (win[4] || win[5]))
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: its own padding (not counted) and %s before it cannot be "
                    "combined", c->label, pad);
    if ((uint64_t)win[4] + v->pad_h > DCZ_MAX_WINDOW || (uint64_t)win[5] + v->pad_w > DCZ_MAX_WINDOW)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: padding too large", c->label);
    win[4] += (int32_t)v->pad_h;
    win[5] += (int32_t)v->pad_w;
    if (cip) *cip = 1;     /* explicit zero padding counts in the mean */
    return DCZ_OK;
}

/* Conv, grouped and depthwise too: CONV2D, weight (out_c, in_c / group, kh,
 * kw) as ONNX stores it; no bias gives a zero bias. */
static dcz_status op_conv(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", NULL };
    dcz_status s = attrs_known(c, known);
    int64_t group = 1;
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 2, 3);
    if (s == DCZ_OK) s = attr_int(c, "group", 1, &group);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    const dcz_shape *shape = act_shape(im, x);
    cten w, b;
    int has_b = 0;
    memset(&b, 0, sizeof b);
    if ((s = input_const(c, 1, WANT_FLOATS, "weight", &w, NULL)) != DCZ_OK) return s;
    s = input_const(c, 2, WANT_FLOATS, "bias", &b, &has_b);
    int32_t win[6];
    dcz_doc_layer *l = NULL;
    if (s != DCZ_OK) goto done;
    if (w.rank != 4) {
        s = fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: a weight of rank %u (only 2-D convolution: rank 4)", c->label, w.rank);
        goto done;
    }
    if ((s = window(c, shape, &w.dims[2], 0, win)) != DCZ_OK || (s = use_pad(c, x, win, NULL)) != DCZ_OK) goto done;
    const uint32_t in_c = shape->dims[0];
    if (group < 1 || group > in_c || in_c % group != 0 || w.dims[0] % group != 0) {
        s = fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: group %lld does not divide its %u input and %lld output "
                 "channels", c->label, (long long)group, in_c, (long long)w.dims[0]);
        goto done;
    }
    if (w.dims[1] * group != (int64_t)in_c || !fits_i32(w.dims[0], 1, DCZ_MAX_DIM)) {
        s = fail(&im->e, DCZ_ERR_SHAPE, "%s: weight %lld x %lld x %lld x %lld does not fit an input of %u channels "
                 "in %lld group%s", c->label, (long long)w.dims[0], (long long)w.dims[1], (long long)w.dims[2],
                 (long long)w.dims[3], in_c, (long long)group, group == 1 ? "" : "s");
        goto done;
    }
    const uint32_t out_c = (uint32_t)w.dims[0];
    if (has_b && (b.rank != 1 || b.dims[0] != (int64_t)out_c)) {
        s = fail(&im->e, DCZ_ERR_FORMAT, "%s: bias of %zu values for %u output channels", c->label, b.n, out_c);
        goto done;
    }
    int32_t attr[9] = { (int32_t)in_c, (int32_t)out_c };
    memcpy(attr + 2, win, sizeof win);
    attr[8] = (int32_t)group;
    if ((s = add_layer1(c, DCZ_OP_CONV2D, attr, 9, x, &l)) != DCZ_OK) goto done;
    const uint32_t wd[4] = { out_c, in_c / (uint32_t)group, (uint32_t)win[0], (uint32_t)win[1] }, bd[1] = { out_c };
    l->ntensors = 2;
    if ((s = tensor_alloc(&l->t[0], 4, wd)) != DCZ_OK || (s = tensor_alloc(&l->t[1], 1, bd)) != DCZ_OK) goto done;
    memcpy(l->t[0].values, w.f, w.n * sizeof *w.f);   /* same layout: (out_c, in_c / group, kh, kw) */
    if (has_b) memcpy(l->t[1].values, b.f, out_c * sizeof *b.f);
done:
    cten_free(&w);
    cten_free(&b);
    return s;
}

/* MaxPool, AveragePool: MAXPOOL, AVGPOOL (c->def->op). AveragePool takes
 * dilations from opset 19 (1 only, as every window here). */
static dcz_status op_pool(const nodectx *c)
{
    imp *im = c->im;
    const int avg = c->def->op == DCZ_OP_AVGPOOL;
    static const char *const known_max[] = { "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                                             "storage_order", "strides", NULL };
    static const char *const known_avg[] = { "auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads",
                                             "strides", NULL };
    static const char *const known_avg19[] = { "auto_pad", "ceil_mode", "count_include_pad", "dilations",
                                               "kernel_shape", "pads", "strides", NULL };
    dcz_status s = attrs_known(c, !avg ? known_max : im->opset >= 19 ? known_avg19 : known_avg);
    int64_t cip = 0, order = 0;
    if (s == DCZ_OK) s = max_inputs(c, 1, 1);
    if (s == DCZ_OK && avg) s = attr_int(c, "count_include_pad", 0, &cip);
    if (s == DCZ_OK && !avg) s = attr_int(c, "storage_order", 0, &order);
    if (s != DCZ_OK) return s;
    if (cip != 0 && cip != 1) return fail(&im->e, DCZ_ERR_FORMAT, "%s: count_include_pad %lld", c->label, (long long)cip);
    long x;
    if ((s = input_act(c, 0, &x)) != DCZ_OK) return s;
    int32_t win[6];
    if ((s = window(c, act_shape(im, x), NULL, 1, win)) != DCZ_OK) return s;
    if ((s = use_pad(c, x, win, &cip)) != DCZ_OK) return s;
    int32_t attr[7];
    memcpy(attr, win, sizeof win);
    attr[6] = (int32_t)cip;
    return add_layer1(c, c->def->op, attr, avg ? 7 : 6, x, NULL);
}

/* ReduceMean over the two spatial axes of (N, C, H, W) is global average
 * pooling: GLOBAL_AVGPOOL, then FLATTEN when keepdims is 0 ((N, C)). The
 * axes are an attribute before opset 18, an optional constant input from 18
 * on, which also brings noop_with_empty_axes; no axes means all of them, or
 * with noop_with_empty_axes none: then the node changes nothing. */
static dcz_status op_reduce_mean(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known_attr[] = { "axes", "keepdims", NULL };
    static const char *const known_input[] = { "keepdims", "noop_with_empty_axes", NULL };
    const int axes_input = im->opset >= 18;
    int64_t keepdims = 1, noop = 0, axes[TENSOR_MAX_RANK];
    size_t naxes = 0;
    long x;
    dcz_status s = attrs_known(c, axes_input ? known_input : known_attr);
    if (s == DCZ_OK) s = max_inputs(c, 1, axes_input ? 2 : 1);
    if (s == DCZ_OK) s = attr_int(c, "keepdims", 1, &keepdims);
    if (s == DCZ_OK && axes_input) s = attr_int(c, "noop_with_empty_axes", 0, &noop);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    if ((keepdims != 0 && keepdims != 1) || (noop != 0 && noop != 1))
        return fail(&im->e, DCZ_ERR_FORMAT, "%s: keepdims %lld, noop_with_empty_axes %lld (each 0 or 1)", c->label,
                    (long long)keepdims, (long long)noop);
    const int64_t r = (int64_t)act_shape(im, x)->rank + 1;
    if (axes_input) {
        cten a;
        int present;
        if ((s = input_const(c, 1, WANT_INTS, "axes", &a, &present)) != DCZ_OK) return s;
        if (present && (a.rank > 1 || a.n > (size_t)r))
            s = fail(&im->e, DCZ_ERR_FORMAT, "%s: %zu axes for a rank-%lld tensor", c->label, a.n, (long long)r);
        else if (present)
            memcpy(axes, a.i, (naxes = a.n) * sizeof *axes);
        cten_free(&a);
        if (s != DCZ_OK) return s;
    } else {
        const int64_t *v;
        if ((s = attr_ints(c, "axes", 0, &v)) != DCZ_OK) return s;
        const size_t n = v ? attr_find(c, "axes")->n_ints : 0;
        if (n > (size_t)r)
            return fail(&im->e, DCZ_ERR_FORMAT, "%s: %zu axes for a rank-%lld tensor", c->label, n, (long long)r);
        if (n) memcpy(axes, v, (naxes = n) * sizeof *axes);
    }
    if (naxes == 0 && noop) {
        im->dropped++;
        return alias(c, x, NULL);
    }
    uint32_t seen = 0;
    char text[64] = "";
    for (size_t k = 0, len = 0; k < naxes; k++) {
        int64_t ax = axes[k];
        if (ax < -r || ax >= r)
            return fail(&im->e, DCZ_ERR_FORMAT, "%s: axis %lld of a rank-%lld tensor", c->label, (long long)ax,
                        (long long)r);
        if (ax < 0) ax += r;
        if (seen & 1u << ax) return fail(&im->e, DCZ_ERR_FORMAT, "%s: axis %lld given twice", c->label, (long long)ax);
        seen |= 1u << ax;
        if (len < sizeof text)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%lld", k ? ", " : "", (long long)ax);
    }
    if (naxes == 0 || r != 4 || seen != (1u << 2 | 1u << 3))
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s takes the mean over %s%s%s of a rank-%lld tensor (dcz takes "
                    "the mean over the two spatial axes of (N, C, H, W) only: 2 and 3, global average pooling)",
                    c->label, naxes ? "axes (" : "every axis", text, naxes ? ")" : "", (long long)r);
    if (keepdims) return add_layer1(c, DCZ_OP_GLOBAL_AVGPOOL, NULL, 0, x, NULL);
    const uint32_t in = im->vals[x].tensor;
    if ((s = push_layer(c, c->def->layer, DCZ_OP_GLOBAL_AVGPOOL, NULL, 0, &in, 1, NULL)) != DCZ_OK) return s;
    const uint32_t pooled = im->nlayers;
    im->tens[pooled].readers = 1;
    if ((s = push_layer(c, "flatten", DCZ_OP_FLATTEN, NULL, 0, &pooled, 1, NULL)) != DCZ_OK) return s;
    return outputs(c, im->nlayers, -1, NULL);
}

/* BatchNormalization folded into the DENSE or CONV2D layer computing its
 * input (which it alone reads). */
static dcz_status op_batchnorm(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "epsilon", "momentum", "training_mode", "spatial", NULL };
    dcz_status s = attrs_known(c, known);
    float eps = 1e-5f, momentum;
    int64_t training = 0, spatial = 1;
    if (s == DCZ_OK) s = max_inputs(c, 5, 5);
    if (s == DCZ_OK) s = attr_float(c, "epsilon", 1e-5f, &eps);
    if (s == DCZ_OK) s = attr_float(c, "momentum", 0.9f, &momentum);
    if (s == DCZ_OK) s = attr_int(c, "training_mode", 0, &training);
    if (s == DCZ_OK) s = attr_int(c, "spatial", 1, &spatial);
    if (s != DCZ_OK) return s;
    if (training != 0 || spatial != 1)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: training_mode %lld, spatial %lld (only inference batch "
                    "norm: 0 and 1)", c->label, (long long)training, (long long)spatial);
    if (!(eps >= 0)) return fail(&im->e, DCZ_ERR_FORMAT, "%s: negative epsilon", c->label);
    long x;
    uint32_t k;
    if ((s = input_act(c, 0, &x)) != DCZ_OK) return s;
    const uint32_t tx = im->vals[x].tensor;
    const dcz_shape *shape = act_shape(im, x);
    const int folds = tx > 0 && dcz_op_get(im->layers[tx - 1].op)->weighted && im->tens[tx].readers == 1;
    if (!folds && shape->rank == 3) {
        /* nothing to fold into: a per-channel affine, the depthwise 1 x 1
         * CONV2D of weight 1 and bias 0 with the batch norm folded in */
        const uint32_t ch = shape->dims[0];
        const int32_t attr[9] = { (int32_t)ch, (int32_t)ch, 1, 1, 1, 1, 0, 0, (int32_t)ch };
        const uint32_t wd[4] = { ch, 1, 1, 1 }, bd[1] = { ch };
        dcz_doc_layer *a;
        if ((s = push_layer(c, "bn", DCZ_OP_CONV2D, attr, 9, &tx, 1, &a)) != DCZ_OK) return s;
        a->ntensors = 2;
        if ((s = tensor_alloc(&a->t[0], 4, wd)) != DCZ_OK || (s = tensor_alloc(&a->t[1], 1, bd)) != DCZ_OK) return s;
        for (uint32_t o = 0; o < ch; o++) a->t[0].values[o] = 1.0f;
        k = im->nlayers - 1;
    } else if (!folds) {
        return defer(c, x, "%s normalizes a flat value that no Gemm or MatMul it alone reads computes (dcz folds "
                     "such a batch norm into that layer, and keeps one per channel only of (N, C, H, W) values)",
                     c->label);
    } else if ((s = fold_target(c, x, "batch normalization", &k)) != DCZ_OK || k == NO_LAYER) {
        return s;
    }
    dcz_doc_layer *l = &im->layers[k];
    const uint32_t m = (uint32_t)l->attr[1];
    cten p[4];
    static const char *const what[4] = { "scale", "bias", "mean", "variance" };
    memset(p, 0, sizeof p);
    for (int j = 0; j < 4 && s == DCZ_OK; j++) {
        s = input_const(c, (size_t)j + 1, WANT_FLOATS, what[j], &p[j], NULL);
        if (s == DCZ_OK && (p[j].rank != 1 || p[j].n != m))
            s = fail(&im->e, DCZ_ERR_SHAPE, "%s: %s has %zu values for %u channels", c->label, what[j], p[j].n, m);
    }
    for (uint32_t o = 0; o < m && s == DCZ_OK; o++)
        if (!((double)p[3].f[o] + eps > 0))
            s = fail(&im->e, DCZ_ERR_FORMAT, "%s: variance + epsilon is not positive (channel %u)", c->label, o);
    if (s == DCZ_OK) {
        dcz_fold_batchnorm(l->t[0].values, l->t[1].values, m, l->t[0].n / m, p[0].f, p[1].f, p[2].f,
                           p[3].f, eps);
        for (size_t i = 0; i < l->t[0].n && s == DCZ_OK; i++)
            if (!isfinite(l->t[0].values[i]))
                s = fail(&im->e, DCZ_ERR_FORMAT, "%s: folding gives non-finite weights", c->label);
        for (uint32_t o = 0; o < m && s == DCZ_OK; o++)
            if (!isfinite(l->t[1].values[o]))
                s = fail(&im->e, DCZ_ERR_FORMAT, "%s: folding gives non-finite biases", c->label);
    }
    for (int j = 0; j < 4; j++) cten_free(&p[j]);
    if (s != DCZ_OK) return s;
    if (k == im->nlayers - 1 && im->layers[k].in[0] == tx && !folds) return outputs(c, im->nlayers, -1, NULL);
    note_folded(c, k);
    return alias(c, x, NULL);
}

/* A FLATTEN layer, unless activation x is flat already. */
static dcz_status flatten(const nodectx *c, long x)
{
    if (act_shape(c->im, x)->rank == 1) {
        c->im->dropped++;
        return alias(c, x, NULL);
    }
    return add_layer1(c, DCZ_OP_FLATTEN, NULL, 0, x, NULL);
}

static dcz_status op_flatten(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "axis", NULL };
    dcz_status s = attrs_known(c, known);
    int64_t axis;
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 1, 1);
    if (s == DCZ_OK) s = attr_int(c, "axis", 1, &axis);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    const int64_t r = (int64_t)act_shape(im, x)->rank + 1;
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r) return fail(&im->e, DCZ_ERR_FORMAT, "%s: axis out of range", c->label);
    if (axis != 1)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: axis %lld merges the batch dimension (only axis 1)", c->label,
                    (long long)axis);
    return flatten(c, x);
}

/* The shape a Reshape gives one sample of shape in (its shape input t,
 * allowzero), into out. */
static dcz_status reshape_to(const nodectx *c, const dcz_shape *in, const cten *t, int64_t allowzero,
                             dcz_shape *out)
{
    imp *im = c->im;
    const uint64_t count = dcz_shape_count(in);
    int64_t d[TENSOR_MAX_RANK];
    size_t r = t->n;
    int minus = -1, bad = t->rank != 1 || r < 1 || r > 1 + DCZ_MAX_RANK;
    for (size_t k = 0; k < r && !bad; k++) {
        d[k] = t->i[k];
        if (d[k] == BATCH_MARK) {   /* the batch size, folded from a Shape: the batch */
            bad = k != 0;
            d[k] = -2;
        } else if (d[k] == 0 && !allowzero) {   /* copy the input's dimension; index 0 is the batch */
            if (k > in->rank) bad = 1;
            else d[k] = k == 0 ? -2 : (int64_t)in->dims[k - 1];
        } else if (d[k] == -1) {
            if (minus >= 0) bad = 1;
            minus = (int)k;
        } else if (d[k] < 1) bad = 1;
    }
    if (bad) return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: its shape is not one dcz can use (a batch dimension, "
                         "then the dimensions of one sample; at most one -1)", c->label);
    /* first entry: the batch (-2 copied, -1 inferred, or the input's fixed size) */
    if (!(d[0] == -2 || d[0] == -1 || (im->batch_fixed && d[0] == im->batch)))
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s fixes the batch size to %lld; export with a dynamic batch "
                    "(-1) or keep the batch dimension first", c->label, (long long)d[0]);
    *out = (dcz_shape){ (uint32_t)(r > 1 ? r - 1 : 1), { 1, 1, 1, 1 } };
    uint64_t known_count = 1;
    for (size_t k = 1; k < r; k++)
        if ((int)k != minus) {
            if ((uint64_t)d[k] > DCZ_MAX_ACT) return fail(&im->e, DCZ_ERR_SHAPE, "%s: dimension too large", c->label);
            known_count *= (uint64_t)d[k];
            if (known_count > DCZ_MAX_ACT) return fail(&im->e, DCZ_ERR_SHAPE, "%s: shape too large", c->label);
        }
    if (minus > 0) {
        if (count % known_count) return fail(&im->e, DCZ_ERR_SHAPE, "%s: %llu values per sample do not fill its "
                                             "shape", c->label, (unsigned long long)count);
        d[minus] = (int64_t)(count / known_count);
        known_count = count;
    }
    if (known_count != count)
        return fail(&im->e, DCZ_ERR_SHAPE, "%s: %llu values per sample, its shape holds %llu", c->label,
                    (unsigned long long)count, (unsigned long long)known_count);
    for (size_t k = 1; k < r; k++) out->dims[k - 1] = (uint32_t)d[k];
    return DCZ_OK;
}

/* Reshape: removed when it changes nothing; the new shape of the model
 * input when it alone reads the input; FLATTEN when it flattens; else only
 * the graph's end (dcz's output is flat) or a Mul (its factors, (C) seen as
 * (C, 1, 1)) may follow it. */
static dcz_status op_reshape(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "allowzero", NULL };
    dcz_status s = attrs_known(c, known);
    int64_t allowzero = 0;
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 2, 2);
    if (s == DCZ_OK) s = attr_int(c, "allowzero", 0, &allowzero);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    cten t;
    dcz_shape out;
    if ((s = input_const(c, 1, WANT_SHAPE, "shape", &t, NULL)) != DCZ_OK) return s;
    s = reshape_to(c, act_shape(im, x), &t, allowzero, &out);
    cten_free(&t);
    if (s != DCZ_OK) return s;
    const uint32_t tx = im->vals[x].tensor;
    long o;
    if (dcz_shape_is(&out, im->tens[tx].shape.rank, im->tens[tx].shape.dims)) {
        im->dropped++;   /* the tensor's own shape again: no view any more */
        if ((s = alias(c, x, &o)) == DCZ_OK) im->vals[o].tail_node = -1;
        return s;
    }
    const long next = sole_reader(im, c->n->n_output ? c->n->output[0] : NULL);
    const int shuffle = next >= 0 && im->g->node[next]->op_type && strcmp(im->g->node[next]->op_type, "Transpose") == 0;
    if (tx == 0 && im->tens[0].readers == 1 && !shuffle) {
        /* a new view of the input (but a channel shuffle's split channels) */
        im->tens[0].shape = out;
        im->input_shape = out;
        im->dropped++;
        return alias(c, x, NULL);
    }
    if (out.rank == 1) return flatten(c, x);
    im->dropped++;
    if ((s = alias(c, x, &o)) != DCZ_OK) return s;
    im->vals[o].tail_node = (long)c->index;
    im->vals[o].view = out;
    return DCZ_OK;
}

/* The channel axis of a rank-r value (1, or 1 - r): nonzero when axis is it. */
static int channel_axis(int64_t axis, int64_t r) { return axis == 1 || axis == 1 - r; }

/* A SLICE of channels [start, start + count) of activation x as output k of
 * node c (count the whole of x: no layer, x itself). */
static dcz_status slice_out(const nodectx *c, long x, size_t k, uint32_t start, uint32_t count)
{
    imp *im = c->im;
    const uint32_t tx = im->vals[x].tensor;
    uint32_t t = tx;
    if (count != act_shape(im, x)->dims[0]) {
        const int32_t attr[2] = { (int32_t)start, (int32_t)count };
        dcz_status s = push_layer(c, c->def->layer, DCZ_OP_SLICE, attr, 2, &tx, 1, NULL);
        if (s != DCZ_OK) return s;
        t = im->nlayers;
        im->tens[tx].readers++;   /* the SLICE reads x */
    } else {
        im->dropped++;
    }
    long v;
    dcz_status s = val_add(im, c->n->output[k], V_ACT, c->label, &v);
    if (s != DCZ_OK) return s;
    im->vals[v].tensor = t;
    im->tens[t].readers += uses_of(im, c->n->output[k]);
    return DCZ_OK;
}

/* Split on the channels (axis 1): a SLICE for each output that is read. Its
 * sizes from the split attribute (opsets 11, 12) or input (13 on), else
 * equal parts, num_outputs of them from opset 18 (the last smaller when
 * they do not divide). */
static dcz_status op_split(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known11[] = { "axis", "split", NULL };
    static const char *const known13[] = { "axis", NULL };
    static const char *const known18[] = { "axis", "num_outputs", NULL };
    dcz_status s = attrs_known(c, im->opset >= 18 ? known18 : im->opset >= 13 ? known13 : known11);
    int64_t axis = 0, num = 0;
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 1, im->opset >= 13 ? 2 : 1);
    if (s == DCZ_OK) s = attr_int(c, "axis", 0, &axis);
    if (s == DCZ_OK && im->opset >= 18) s = attr_int(c, "num_outputs", 0, &num);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    const dcz_shape *shape = act_shape(im, x);
    const uint32_t ch = shape->dims[0];
    const size_t nout = c->n->n_output;
    if (!channel_axis(axis, (int64_t)shape->rank + 1))
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s splits axis %lld (dcz splits the channels: axis 1)", c->label,
                    (long long)axis);
    if (nout < 1 || nout > DCZ_MAX_INPUTS * 16)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s has %zu outputs", c->label, nout);
    int64_t size[DCZ_MAX_INPUTS * 16];
    cten sp;
    int present = 0;
    memset(&sp, 0, sizeof sp);
    if (im->opset >= 13) {
        if ((s = input_const(c, 1, WANT_INTS, "split", &sp, &present)) != DCZ_OK) return s;
    } else {
        const int64_t *v;
        if ((s = attr_ints(c, "split", 0, &v)) != DCZ_OK) return s;
        if (v) {
            present = 1;
            sp.n = attr_find(c, "split")->n_ints;
            if (!(sp.i = malloc((sp.n ? sp.n : 1) * sizeof *sp.i))) return DCZ_ERR_NOMEM;
            memcpy(sp.i, v, sp.n * sizeof *sp.i);
        }
    }
    if (present && num)
        s = fail(&im->e, DCZ_ERR_FORMAT, "%s has both split and num_outputs", c->label);
    else if (present && sp.n != nout)
        s = fail(&im->e, DCZ_ERR_FORMAT, "%s: %zu sizes for %zu outputs", c->label, sp.n, nout);
    else if (num && num != (int64_t)nout)
        s = fail(&im->e, DCZ_ERR_FORMAT, "%s: num_outputs %lld, %zu outputs", c->label, (long long)num, nout);
    int64_t total = 0;
    for (size_t k = 0; k < nout && s == DCZ_OK; k++) {
        const int64_t part = (ch + (int64_t)nout - 1) / (int64_t)nout;   /* opset 18: ceil, the last smaller */
        size[k] = present ? sp.i[k] : im->opset >= 18 ? (k + 1 < nout ? part : (int64_t)ch - part * (int64_t)k)
                                                      : (int64_t)ch / (int64_t)nout;
        if (!present && im->opset < 18 && ch % nout)
            s = fail(&im->e, DCZ_ERR_SHAPE, "%s: %u channels do not split into %zu equal parts", c->label, ch, nout);
        else if (size[k] < 1 || size[k] > (int64_t)ch)
            s = fail(&im->e, size[k] < 1 ? DCZ_ERR_UNSUPPORTED : DCZ_ERR_SHAPE, "%s: output %zu would have %lld "
                     "channels of %u", c->label, k + 1, (long long)size[k], ch);
        else total += size[k];   /* at most nout x ch: no overflow */
    }
    cten_free(&sp);
    if (s == DCZ_OK && total != (int64_t)ch)
        s = fail(&im->e, DCZ_ERR_SHAPE, "%s: its parts hold %lld channels, its input %u", c->label, (long long)total,
                 ch);
    if (s != DCZ_OK) return s;
    im->tens[im->vals[x].tensor].readers--;   /* the node's read: each SLICE counts its own */
    for (size_t k = 0, at = 0; k < nout && s == DCZ_OK; at += (size_t)size[k], k++) {
        if (!c->n->output[k] || !*c->n->output[k]) continue;
        if (uses_of(im, c->n->output[k]) == 0) {   /* never read: no layer */
            s = val_add(im, c->n->output[k], V_DEAD, c->label, NULL);
            continue;
        }
        s = slice_out(c, x, k, (uint32_t)at, (uint32_t)size[k]);
    }
    return s;
}

/* Slice (starts, ends, axes, steps as constant inputs): SLICE of the
 * channels; every other axis it names must keep its whole range, step 1. */
static dcz_status op_slice(const nodectx *c)
{
    imp *im = c->im;
    static const char *const none[] = { NULL };
    dcz_status s = attrs_known(c, none);
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 3, 5);
    if (s == DCZ_OK && (s = input_val(c, 0, &x)) == DCZ_OK && im->vals[x].kind == V_CONST)
        return fold_slice(c);   /* of a shape */
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    const dcz_shape *shape = act_shape(im, x);
    const int64_t r = (int64_t)shape->rank + 1;
    cten in[4];
    int present[4] = { 1, 1, 0, 0 };
    static const char *const what[4] = { "starts", "ends", "axes", "steps" };
    memset(in, 0, sizeof in);
    for (int j = 0; j < 4 && s == DCZ_OK; j++) {
        s = input_const(c, (size_t)j + 1, WANT_INTS, what[j], &in[j], j < 2 ? NULL : &present[j]);
        if (s == DCZ_OK && (in[j].rank > 1 || (present[j] && in[j].n != in[0].n)))
            s = fail(&im->e, DCZ_ERR_FORMAT, "%s: its %s do not match its %zu starts", c->label, what[j], in[0].n);
    }
    int64_t lo = 0, hi = shape->dims[0];
    uint32_t seen = 0;
    for (size_t k = 0; k < in[0].n && s == DCZ_OK; k++) {
        int64_t ax = present[2] ? in[2].i[k] : (int64_t)k;
        if (ax < 0) ax += r;
        if (ax < 0 || ax >= r || seen & 1u << ax) {
            s = fail(&im->e, DCZ_ERR_FORMAT, "%s: an axis out of range or repeated", c->label);
            break;
        }
        seen |= 1u << ax;
        const int64_t dim = ax == 0 ? -1 : (int64_t)shape->dims[ax - 1];   /* the batch: not sliced */
        const int64_t step = present[3] ? in[3].i[k] : 1;
        int64_t a = in[0].i[k], b = in[1].i[k];
        if (dim > 0) {   /* ONNX's clamping, for step 1 */
            if (a < 0) a += dim;
            if (b < 0) b += dim;
            a = a < 0 ? 0 : a > dim ? dim : a;
            b = b < 0 ? 0 : b > dim ? dim : b;
        }
        if (step != 1 || dim < 0 || (ax != 1 && (a != 0 || b != dim)))
            s = fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s slices axis %lld other than in whole channels (dcz slices "
                     "axis 1 of (N, C, H, W) or (N, C), step 1)", c->label, (long long)ax);
        else if (ax == 1) {
            lo = a;
            hi = b;
        }
    }
    for (int j = 0; j < 4; j++) cten_free(&in[j]);
    if (s == DCZ_OK && hi <= lo)
        s = fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s keeps no channel", c->label);
    if (s != DCZ_OK) return s;
    if (c->n->n_output != 1) return fail(&im->e, DCZ_ERR_FORMAT, "%s has %zu outputs", c->label, c->n->n_output);
    im->tens[im->vals[x].tensor].readers--;   /* the node's read: a SLICE counts its own */
    return slice_out(c, x, 0, (uint32_t)lo, (uint32_t)(hi - lo));
}

/* Transpose: the identity, or a channel shuffle: the channels of (N, C, H,
 * W) (or (N, C)) seen by a Reshape as (N, g, C / g, ...) with the two
 * channel axes swapped (perm 0, 2, 1, 3, ...), which the Reshape after it
 * reads back as (N, C, H, W): CHANNEL_SHUFFLE of g groups. */
static dcz_status op_transpose(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "perm", NULL };
    dcz_status s = attrs_known(c, known);
    const int64_t *perm;
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 1, 1);
    if (s == DCZ_OK) s = attr_ints(c, "perm", 0, &perm);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    const val *v = &im->vals[x];
    const dcz_shape *view = v->tail_node >= 0 ? &v->view : act_shape(im, x);
    const size_t r = (size_t)view->rank + 1, n = perm ? attr_find(c, "perm")->n_ints : 0;
    int identity = 1, swap = r >= 3;
    for (size_t k = 0; k < r; k++) {
        const int64_t p = n ? (k < n ? perm[k] : -1) : (int64_t)(r - 1 - k);
        identity &= p == (int64_t)k;
        swap &= p == (int64_t)(k == 1 ? 2 : k == 2 ? 1 : k);
    }
    if (n != 0 && n != r) return fail(&im->e, DCZ_ERR_FORMAT, "%s: perm of %zu axes for rank %zu", c->label, n, r);
    if (identity) {
        im->dropped++;
        return alias(c, x, NULL);
    }
    const dcz_shape *t = act_shape(im, x);
    int fits = swap && v->tail_node >= 0 && t->rank + 1 == view->rank &&
               (uint64_t)view->dims[0] * view->dims[1] == t->dims[0];
    for (uint32_t k = 2; fits && k < view->rank; k++) fits = view->dims[k] == t->dims[k - 1];
    if (!fits)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s permutes axes other than as a channel shuffle (dcz transposes "
                    "only the two channel axes of a Reshape to (N, g, C / g, H, W): perm 0, 2, 1, 3, 4)", c->label);
    const int32_t attr[1] = { (int32_t)view->dims[0] };
    const uint32_t in = v->tensor;
    dcz_shape shuffled = *view;
    shuffled.dims[0] = view->dims[1];
    shuffled.dims[1] = view->dims[0];
    long o;
    if ((s = push_layer(c, c->def->layer, DCZ_OP_CHANNEL_SHUFFLE, attr, 1, &in, 1, NULL)) != DCZ_OK ||
        (s = outputs(c, im->nlayers, -1, &o)) != DCZ_OK)
        return s;
    im->vals[o].tail_node = (long)c->index;   /* the Reshape after it ends the view */
    im->vals[o].view = shuffled;
    return DCZ_OK;
}

static dcz_status op_softmax(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "axis", NULL };
    dcz_status s = attrs_known(c, known);
    int64_t axis;
    long x;
    if (s == DCZ_OK) s = max_inputs(c, 1, 1);
    if (s == DCZ_OK) s = attr_int(c, "axis", im->opset < 13 ? 1 : -1, &axis);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    const int64_t r = (int64_t)act_shape(im, x)->rank + 1;
    if (axis < 0) axis += r;
    /* before opset 13, softmax over axis 1 of a 2-D coercion: the whole sample */
    if (!(axis == 1 && (r == 2 || im->opset < 13)))
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: axis %lld of a rank-%lld tensor (dcz takes the softmax of "
                    "each whole sample)", c->label, (long long)axis, (long long)r);
    return add_layer1(c, DCZ_OP_SOFTMAX, NULL, 0, x, NULL);
}

/* The pads of Pad as (begin of each axis, end of each axis) of a rank-r
 * tensor into pads (2 r): from the pads input p alone, or (opset 18) for
 * the axes it names (a, when present), the others 0. */
static dcz_status pad_axes(const nodectx *c, const cten *p, const cten *a, int has_a, size_t r, int64_t *pads)
{
    imp *im = c->im;
    if (!has_a) {
        if (p->rank != 1 || p->n != 2 * r)
            return fail(&im->e, DCZ_ERR_FORMAT, "%s: %zu pads for a rank-%zu tensor", c->label, p->n, r);
        memcpy(pads, p->i, 2 * r * sizeof *pads);
        return DCZ_OK;
    }
    if (a->rank != 1 || a->n > r || p->rank != 1 || p->n != 2 * a->n)
        return fail(&im->e, DCZ_ERR_FORMAT, "%s: %zu pads for %zu axes of a rank-%zu tensor", c->label, p->n,
                    a->n, r);
    memset(pads, 0, 2 * r * sizeof *pads);
    uint32_t seen = 0;
    for (size_t k = 0; k < a->n; k++) {
        int64_t ax = a->i[k];
        if (ax < -(int64_t)r || ax >= (int64_t)r)
            return fail(&im->e, DCZ_ERR_FORMAT, "%s: axis %lld of a rank-%zu tensor", c->label, (long long)ax, r);
        if (ax < 0) ax += (int64_t)r;
        if (seen & 1u << ax) return fail(&im->e, DCZ_ERR_FORMAT, "%s: axis %lld given twice", c->label, (long long)ax);
        seen |= 1u << ax;
        pads[ax] = p->i[k];
        pads[ax + (int64_t)r] = p->i[k + a->n];
    }
    return DCZ_OK;
}

/* Pad: removed when all pads are 0; symmetric zero padding of H and W is
 * kept on its output value, for the Conv or AveragePool that reads it. From
 * opset 18 a fourth input may name the axes the pads are for. */
static dcz_status op_pad(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "mode", NULL };
    static const char *const modes[] = { "constant", NULL };
    int mode;
    long x;
    dcz_status s = attrs_known(c, known);
    if (s == DCZ_OK) s = max_inputs(c, 2, im->opset >= 18 ? 4 : 3);
    if (s == DCZ_OK) s = attr_choice(c, "mode", modes, &mode);
    if (s == DCZ_OK) s = input_act(c, 0, &x);
    if (s != DCZ_OK) return s;
    cten p, v, a;
    int has_v = 0, has_a = 0;
    memset(&v, 0, sizeof v);
    memset(&a, 0, sizeof a);
    if ((s = input_const(c, 1, WANT_INTS, "pads", &p, NULL)) != DCZ_OK) return s;
    s = input_const(c, 2, WANT_FLOATS, "constant value", &v, &has_v);
    if (s == DCZ_OK && im->opset >= 18) s = input_const(c, 3, WANT_INTS, "axes", &a, &has_a);
    const size_t r = (size_t)act_shape(im, x)->rank + 1;
    int64_t pads[2 * (1 + DCZ_MAX_RANK)];
    if (s == DCZ_OK && has_v && (v.n != 1 || v.f[0] != 0.0f))
        s = fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s pads with a value other than 0", c->label);
    if (s == DCZ_OK) s = pad_axes(c, &p, &a, has_a, r, pads);
    int zero = 1, ok = 1;
    for (size_t k = 0; s == DCZ_OK && k < r; k++) {
        const int64_t b = pads[k], e = pads[k + r];
        zero &= b == 0 && e == 0;
        /* only symmetric zero padding of H and W folds into a window */
        ok &= b == e && b >= 0 && b <= DCZ_MAX_WINDOW && (k >= 2 || b == 0);
    }
    if (s == DCZ_OK && !zero && (!ok || r != 4))
        s = fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: only symmetric zero padding of height and width is supported "
                 "(folded into the Conv or AveragePool after it)", c->label);
    const int64_t ph = s == DCZ_OK && !zero ? pads[2] : 0, pw = s == DCZ_OK && !zero ? pads[3] : 0;
    cten_free(&p);
    cten_free(&v);
    cten_free(&a);
    if (s != DCZ_OK) return s;
    if (zero) {
        im->dropped++;
        return alias(c, x, NULL);
    }
    if ((uint64_t)im->vals[x].pad_h + (uint64_t)ph > DCZ_MAX_WINDOW ||
        (uint64_t)im->vals[x].pad_w + (uint64_t)pw > DCZ_MAX_WINDOW)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: padding too large", c->label);
    long o;
    if ((s = alias(c, x, &o)) != DCZ_OK) return s;
    im->vals[o].pad_h += (uint32_t)ph;
    im->vals[o].pad_w += (uint32_t)pw;
    im->vals[o].pad_node = (long)c->index;
    im->folded++;
    return DCZ_OK;
}

/* A Constant node: its value becomes a constant of the graph. */
static dcz_status op_constant(const nodectx *c)
{
    imp *im = c->im;
    static const char *const known[] = { "value", "value_float", "value_floats", "value_int", "value_ints",
                                         "value_string", "value_strings", "sparse_value", NULL };
    dcz_status s = attrs_known(c, known);
    if (s == DCZ_OK) s = max_inputs(c, 0, 0);
    if (s != DCZ_OK) return s;
    if (c->n->n_attribute != 1)
        return fail(&im->e, DCZ_ERR_FORMAT, "%s must have exactly one value attribute", c->label);
    const Onnx__AttributeProto *a = c->n->attribute[0];
    const char *nm = a->name;
    int ok = 0;
    if (strcmp(nm, "value") == 0) ok = a->t != NULL && attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR, "a tensor") == DCZ_OK;
    else if (strcmp(nm, "value_float") == 0) ok = a->has_f && attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "a float") == DCZ_OK;
    else if (strcmp(nm, "value_int") == 0) ok = a->has_i && attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, "an integer") == DCZ_OK;
    else if (strcmp(nm, "value_floats") == 0) ok = attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, "floats") == DCZ_OK;
    else if (strcmp(nm, "value_ints") == 0) ok = attr_type(c, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "integers") == DCZ_OK;
    else return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: a %s constant is not supported", c->label, nm);
    if (!ok) return fail(&im->e, DCZ_ERR_FORMAT, "%s: attribute '%s' holds no value of its type", c->label, nm);
    if (a->has_f && a->n_floats) return fail(&im->e, DCZ_ERR_FORMAT, "%s: ambiguous value", c->label);
    if (c->n->n_output != 1) return fail(&im->e, DCZ_ERR_FORMAT, "%s must have one output", c->label);
    long v;
    if ((s = val_add(im, c->n->output[0], V_CONST, c->label, &v)) != DCZ_OK) return s;
    if (a->t) im->vals[v].t = a->t;
    else im->vals[v].a = a;
    im->dropped++;
    return DCZ_OK;
}

/* Identity and Dropout: the value goes on unchanged (an Identity of a
 * constant is that constant). */
static dcz_status passthrough(const nodectx *c, int dropout)
{
    imp *im = c->im;
    static const char *const known_id[] = { NULL };
    static const char *const known_drop[] = { "seed", "ratio", NULL };
    dcz_status s = attrs_known(c, dropout ? known_drop : known_id);
    if (s == DCZ_OK) s = max_inputs(c, 1, dropout ? 3 : 1);
    if (s != DCZ_OK) return s;
    if (dropout && *input_name(c, 2)) {   /* training_mode must be a constant false */
        long v;
        if ((s = input_val(c, 2, &v)) != DCZ_OK) return s;
        const val *x = &im->vals[v];
        int off = 0;
        if (x->kind == V_CONST && x->t && x->t->has_data_type && x->t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
            const Onnx__TensorProto *t = x->t;
            off = t->n_dims == 0 && ((t->has_raw_data && t->raw_data.len == 1 && t->raw_data.data[0] == 0) ||
                                     (t->n_int32_data == 1 && t->int32_data[0] == 0));
        }
        if (!off)
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s: training_mode is not a constant false", c->label);
    }
    long v;
    if ((s = input_val(c, 0, &v)) != DCZ_OK) return s;
    if (im->vals[v].kind == V_CONST) {
        if (c->n->n_output < 1) return fail(&im->e, DCZ_ERR_FORMAT, "%s has no output", c->label);
        long o;
        if ((s = val_add(im, c->n->output[0], V_CONST, c->label, &o)) != DCZ_OK) return s;
        im->vals[o].t = im->vals[v].t;
        im->vals[o].a = im->vals[v].a;
        im->vals[o].fold_rank = im->vals[v].fold_rank;
        im->vals[o].nfold = im->vals[v].nfold;
        memcpy(im->vals[o].fold, im->vals[v].fold, sizeof im->vals[o].fold);
        for (size_t k = 1; k < c->n->n_output && s == DCZ_OK; k++)
            if (c->n->output[k] && *c->n->output[k]) s = val_add(im, c->n->output[k], V_DEAD, c->label, NULL);
        im->dropped++;
        return s;
    }
    if ((s = input_act(c, 0, &v)) != DCZ_OK) return s;
    im->dropped++;
    return alias(c, v, NULL);
}

static dcz_status op_identity(const nodectx *c) { return passthrough(c, 0); }
static dcz_status op_dropout(const nodectx *c) { return passthrough(c, 1); }

/* Every ONNX operator dcz imports, in alphabetical order. */
static const opdef ops[] = {
    { "Add", op_add, DCZ_OP_ADD, "add", 0 },
    { "AveragePool", op_pool, DCZ_OP_AVGPOOL, "pool", F_PAD },
    { "BatchNormalization", op_batchnorm, 0, "", 0 },
    { "Clip", op_clip, DCZ_OP_CLIP, "clip", 0 },
    { "Cast", op_cast, 0, "", 0 },
    { "Concat", op_concat, DCZ_OP_CONCAT, "concat", 0 },
    { "Constant", op_constant, 0, "", 0 },
    { "Conv", op_conv, DCZ_OP_CONV2D, "conv", F_PAD },
    { "Div", fold_arith, 0, "", 0 },
    { "Dropout", op_dropout, 0, "", F_PASS },
    { "Flatten", op_flatten, DCZ_OP_FLATTEN, "flatten", 0 },
    { "Gather", op_gather, 0, "", 0 },
    { "Gemm", op_gemm, DCZ_OP_DENSE, "fc", 0 },
    { "GlobalAveragePool", op_activation, DCZ_OP_GLOBAL_AVGPOOL, "gap", 0 },
    { "HardSigmoid", op_activation, DCZ_OP_HARD_SIGMOID, "hsigmoid", 0 },
    { "HardSwish", op_activation, DCZ_OP_HARD_SWISH, "hswish", 0 },
    { "Identity", op_identity, 0, "", F_PASS },
    { "LeakyRelu", op_activation, DCZ_OP_LEAKY_RELU, "lrelu", 0 },
    { "MatMul", op_matmul, DCZ_OP_DENSE, "fc", 0 },
    { "MaxPool", op_pool, DCZ_OP_MAXPOOL, "pool", 0 },
    { "Mul", op_mul, DCZ_OP_MUL, "mul", F_VIEW },
    { "Pad", op_pad, 0, "", F_PAD },
    { "ReduceMean", op_reduce_mean, DCZ_OP_GLOBAL_AVGPOOL, "gap", 0 },
    { "Relu", op_activation, DCZ_OP_RELU, "relu", 0 },
    { "Reshape", op_reshape, DCZ_OP_FLATTEN, "flatten", F_VIEW },
    { "Shape", op_shape, 0, "", F_VIEW },
    { "Sigmoid", op_activation, DCZ_OP_SIGMOID, "sigmoid", 0 },
    { "Slice", op_slice, DCZ_OP_SLICE, "slice", 0 },
    { "Softmax", op_softmax, DCZ_OP_SOFTMAX, "prob", 0 },
    { "Split", op_split, DCZ_OP_SLICE, "slice", 0 },
    { "Squeeze", op_squeeze, 0, "", 0 },
    { "Sub", fold_arith, 0, "", 0 },
    { "Tanh", op_activation, DCZ_OP_TANH, "tanh", 0 },
    { "Transpose", op_transpose, DCZ_OP_CHANNEL_SHUFFLE, "shuffle", F_VIEW },
    { "Unsqueeze", op_squeeze, 0, "", 0 },
};

static const opdef *op_find(const Onnx__NodeProto *n)
{
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0) return NULL;
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (n->op_type && strcmp(n->op_type, ops[k].name) == 0) return &ops[k];
    return NULL;
}

static dcz_status node_run(imp *im, size_t index)
{
    nodectx c = { im, im->g->node[index], op_find(im->g->node[index]), index, "" };
    node_label(c.n, index, c.label, sizeof c.label);
    if (!c.def) return fail(&im->e, DCZ_ERR_INTERNAL, "%s: no handler", c.label);
    return c.def->run(&c);
}

/* ---- the graph ----------------------------------------------------------------- */

/* One message naming every operator dcz lacks: each type once, in the
 * order of its first node, with how many nodes use it and the first of
 * them ("Softplus '/Softplus'", "Shape (120 nodes, the first '/Shape')"),
 * so that a model of hundreds of such nodes gets a short line. */
static dcz_status unsupported_ops(imp *im)
{
    enum { MAX_TYPES = 24 };
    struct { const Onnx__NodeProto *first; size_t index, count; } types[MAX_TYPES];
    size_t bad = 0, ntypes = 0, more_types = 0;
    for (size_t k = 0; k < im->g->n_node; k++) {
        const Onnx__NodeProto *n = im->g->node[k];
        if (op_find(n)) continue;
        bad++;
        size_t t = 0;
        for (; t < ntypes; t++)
            if (strcmp(str(types[t].first->op_type), str(n->op_type)) == 0 &&
                strcmp(str(types[t].first->domain), str(n->domain)) == 0)
                break;
        if (t < ntypes) { types[t].count++; continue; }
        if (ntypes == MAX_TYPES) { more_types++; continue; }
        types[ntypes].first = n;
        types[ntypes].index = k;
        types[ntypes].count = 1;
        ntypes++;
    }
    if (!bad) return DCZ_OK;
    char list[1024];
    size_t len = 0;
    list[0] = '\0';
    for (size_t t = 0; t < ntypes && len < sizeof list; t++) {
        const Onnx__NodeProto *n = types[t].first;
        const int dom = n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0;
        char who[160];
        if (n->name && *n->name) snprintf(who, sizeof who, "'%.120s'", n->name);
        else snprintf(who, sizeof who, "(node %zu)", types[t].index);
        if (types[t].count == 1)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s%s%.64s %s", t ? ", " : "",
                                    dom ? n->domain : "", dom ? "." : "", str(n->op_type), who);
        else
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s%s%.64s (%zu nodes, the first %s)",
                                    t ? ", " : "", dom ? n->domain : "", dom ? "." : "", str(n->op_type),
                                    types[t].count, who);
    }
    if (more_types && len < sizeof list)
        snprintf(list + len, sizeof list - len, " and %zu more operator types", more_types);
    char known[512];
    size_t n = 0;
    for (size_t k = 0; k < sizeof ops / sizeof *ops && n < sizeof known; k++)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", k ? ", " : "", ops[k].name);
    if (bad == ntypes)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%zu unsupported operator%s: %s (dcz imports %s)", bad,
                    bad == 1 ? "" : "s", list, known);
    return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%zu nodes of %zu unsupported operator%s: %s (dcz imports %s)", bad,
                ntypes + more_types, ntypes + more_types == 1 ? "" : "s", list, known);
}

/* A value's type as a float tensor of known shape: its dims (dims[0] -1 for
 * a symbolic or missing batch size); the rank is returned, -1 if absent. */
static int tensor_type(const Onnx__ValueInfoProto *v, int64_t *dims, int max)
{
    const Onnx__TypeProto *t = v->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type) return -2;
    if (!t->tensor_type->has_elem_type || t->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) return -2;
    const Onnx__TensorShapeProto *s = t->tensor_type->shape;
    if (!s) return -1;
    if (s->n_dim > (size_t)max) return -3;
    for (size_t k = 0; k < s->n_dim; k++) {
        const Onnx__TensorShapeProto__Dimension *d = s->dim[k];
        dims[k] = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? d->dim_value : -1;
    }
    return (int)s->n_dim;
}

static dcz_status graph_input(imp *im)
{
    const Onnx__GraphProto *g = im->g;
    const Onnx__ValueInfoProto *in = NULL;
    size_t real = 0;
    for (size_t k = 0; k < g->n_input; k++) {
        const char *name = g->input[k]->name;
        long v = val_find(im, name);
        if (v >= 0 && im->vals[v].kind == V_CONST) continue;   /* an initializer listed as input */
        real++;
        in = g->input[k];
    }
    if (real != 1)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "the graph has %zu inputs besides its initializers (dcz models "
                    "take one)", real);
    int64_t d[1 + DCZ_MAX_RANK];
    const int r = tensor_type(in, d, 1 + DCZ_MAX_RANK);
    if (r == -2) return fail(&im->e, DCZ_ERR_UNSUPPORTED, "input '%s' is not a float32 tensor", str(in->name));
    if (r == -1) return fail(&im->e, DCZ_ERR_UNSUPPORTED, "input '%s' has no shape", str(in->name));
    if (r < 2)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "input '%s' has %s dimensions (dcz takes a batch dimension, "
                    "then 1 to %d)", str(in->name), r == -3 ? "too many" : "too few", DCZ_MAX_RANK);
    const Onnx__TensorShapeProto__Dimension *b = in->type->tensor_type->shape->dim[0];
    if (b && b->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
        if (b->dim_value < 1) return fail(&im->e, DCZ_ERR_FORMAT, "input '%s': batch size %lld", str(in->name),
                                          (long long)b->dim_value);
        im->batch_fixed = 1;
        im->batch = b->dim_value;
    }
    dcz_shape s = { (uint32_t)(r - 1), { 0 } };
    for (int k = 1; k < r; k++) {
        if (d[k] < 1 || d[k] > DCZ_MAX_DIM)
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "input '%s': dimension %d is %s (dcz needs fixed sizes 1..%u "
                        "after the batch dimension)", str(in->name), k, d[k] < 0 ? "symbolic" : "out of range",
                        DCZ_MAX_DIM);
        s.dims[k - 1] = (uint32_t)d[k];
    }
    if (dcz_shape_count(&s) > DCZ_MAX_ACT)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "input '%s' is larger than %u values per sample", str(in->name),
                    DCZ_MAX_ACT);
    im->input_shape = s;
    im->tens[0].shape = s;
    long v;
    dcz_status st = val_add(im, in->name, V_ACT, "the graph input", &v);
    if (st == DCZ_OK) im->tens[0].readers = uses_of(im, in->name);   /* tensor 0 */
    return st;
}

/* Keeps the layers that tensor out (the graph output) depends on, in their
 * order and with their inputs renumbered; the others compute values no one
 * reads, and are dropped. */
static dcz_status keep_live(imp *im, uint32_t out)
{
    uint8_t *live = calloc(im->nlayers, 1);
    uint32_t *map = malloc(((size_t)im->nlayers + 1) * sizeof *map);   /* old tensor -> new */
    if (!live || !map) {
        free(live);
        free(map);
        return DCZ_ERR_NOMEM;
    }
    live[out - 1] = 1;
    for (uint32_t j = out; j-- > 0;)
        for (uint32_t k = 0; live[j] && k < im->layers[j].nin; k++)
            if (im->layers[j].in[k] > 0) live[im->layers[j].in[k] - 1] = 1;
    uint32_t n = 0;
    map[0] = 0;
    for (uint32_t j = 0; j < im->nlayers; j++) {
        dcz_doc_layer *l = &im->layers[j];
        if (!live[j]) {
            for (uint32_t t = 0; t < l->ntensors; t++) dcz_doc_tensor_clear(&l->t[t]);
            im->dropped++;
            continue;
        }
        for (uint32_t k = 0; k < l->nin; k++) l->in[k] = map[l->in[k]];
        map[j + 1] = ++n;
        if (n - 1 != j) {
            im->layers[n - 1] = *l;
            memcpy(im->source[n - 1], im->source[j], DCZ_ONNX_SOURCE_LEN);
        }
    }
    im->nlayers = n;
    free(live);
    free(map);
    return DCZ_OK;
}

/* The end of the walk: the graph's one output must be an activation the
 * layers compute; the layers it does not depend on are dropped. */
static dcz_status graph_output(imp *im)
{
    const Onnx__GraphProto *g = im->g;
    if (g->n_output != 1)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "the graph has %zu outputs (dcz models have one)", g->n_output);
    const Onnx__ValueInfoProto *o = g->output[0];
    const long v = val_find(im, o->name);
    if (v < 0)
        return fail(&im->e, DCZ_ERR_FORMAT, "the graph output '%s' is computed by no node", str(o->name));
    const val *x = &im->vals[v];
    if (x->kind != V_ACT)
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "the graph output '%s' is %s", x->name,
                    x->kind == V_CONST ? "a constant" : "an extra output that dcz does not compute");
    if (x->pad_node >= 0) {
        char pad[96];
        node_label(g->node[x->pad_node], (size_t)x->pad_node, pad, sizeof pad);
        return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s ends the graph: nothing to fold its padding into", pad);
    }
    if (x->tensor == 0) return fail(&im->e, DCZ_ERR_UNSUPPORTED, "the graph computes nothing dcz holds as a layer");
    const dcz_shape *shape = &im->tens[x->tensor].shape;
    int64_t d[1 + DCZ_MAX_RANK];
    const int r = tensor_type(o, d, 1 + DCZ_MAX_RANK);
    if (r == -2) return fail(&im->e, DCZ_ERR_UNSUPPORTED, "output '%s' is not a float32 tensor", o->name);
    if (r >= 2) {   /* a declared shape must agree with the one computed */
        uint64_t n = 1;   /* saturates above DCZ_MAX_ACT */
        int known = 1;
        for (int k = 1; k < r; k++) {
            if (d[k] < 0) known = 0;
            else if (n <= DCZ_MAX_ACT) n = d[k] > DCZ_MAX_ACT ? DCZ_MAX_ACT + 1ull : n * (uint64_t)d[k];
        }
        if (known && n != dcz_shape_count(shape))
            return fail(&im->e, DCZ_ERR_SHAPE, "output '%s' is declared with %llu values per sample; the graph "
                        "computes %llu", o->name, (unsigned long long)n, (unsigned long long)dcz_shape_count(shape));
    }
    dcz_status s = keep_live(im, x->tensor);
    if (s != DCZ_OK) return s;
    /* scaling (alpha, beta), added biases and folding may overflow */
    for (uint32_t k = 0; k < im->nlayers; k++)
        for (uint32_t t = 0; t < im->layers[k].ntensors; t++)
            for (size_t i = 0; i < im->layers[k].t[t].n; i++)
                if (!isfinite(im->layers[k].t[t].values[i]))
                    return fail(&im->e, DCZ_ERR_FORMAT, "%s: its %s overflow to infinity", im->source[k],
                                t ? "biases" : "weights");
    for (uint32_t k = 0; k + 1 < im->nlayers; k++)
        if (im->layers[k].op == DCZ_OP_SOFTMAX)
            return fail(&im->e, DCZ_ERR_UNSUPPORTED, "%s is not the last operator (dcz supports softmax at the "
                        "end only)", im->source[k]);
    return DCZ_OK;
}

/* Weights with at least DCZ_ONNX_PRUNED_MIN exact zeros: pruned elsewhere;
 * the zeros become the mask and the tensor is stored sparse. */
static void mark_pruned(imp *im)
{
    for (uint32_t k = 0; k < im->nlayers; k++) {
        dcz_doc_layer *l = &im->layers[k];
        if (l->op != DCZ_OP_DENSE && l->op != DCZ_OP_CONV2D) continue;
        dcz_doc_tensor *w = &l->t[0];
        size_t zeros = 0;
        for (size_t i = 0; i < w->n; i++) zeros += w->values[i] == 0.0f;
        if (zeros == 0 || (double)zeros < DCZ_ONNX_PRUNED_MIN * (double)w->n) continue;
        uint8_t *mask = malloc(w->n);
        if (!mask) continue;   /* stays dense: still correct */
        for (size_t i = 0; i < w->n; i++) {
            mask[i] = w->values[i] != 0.0f;
            if (!mask[i]) w->values[i] = 0.0f;   /* -0 too */
        }
        w->mask = mask;
        w->enc = DCZ_ENC_SPARSE_F32;
        w->gap_bits = l->op == DCZ_OP_DENSE ? 5 : 8;   /* the paper's widths, as dcz prune */
        w->gap_coding = DCZ_CODING_RAW;
    }
}

static int default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

void dcz_onnx_info_free(dcz_onnx_info *info)
{
    if (!info) return;
    free(info->source);
    memset(info, 0, sizeof *info);
}

int dcz_onnx_sniff(const void *buf, size_t len)
{
    if (!buf || len < 4 || dcz_onnx_is_dcz(buf, len)) return 0;
    if (wire_check(buf, len, &onnx__model_proto__descriptor, 0) != 0) return 0;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) return 0;
    const int yes = m->graph != NULL && (m->n_opset_import > 0 || m->graph->n_node > 0);
    onnx__model_proto__free_unpacked(m, NULL);
    return yes;
}

int dcz_onnx_is_dcz(const void *buf, size_t len)
{
    static const uint8_t magic[8] = { 0x89, 'D', 'C', 'Z', '\r', '\n', 0x1a, '\n' };
    return buf && len >= sizeof magic && memcmp(buf, magic, sizeof magic) == 0;
}

dcz_status dcz_onnx_import(const void *buf, size_t len, const dcz_onnx_import_opts *opt,
                           dcz_doc **out, dcz_onnx_info *info, char *err, size_t errlen)
{
    imp im;
    memset(&im, 0, sizeof im);
    im.ext.dir = opt ? opt->dir : NULL;
    im.ext.fd = -1;
    im.e.p = err;
    im.e.len = errlen;
    if (err && errlen) err[0] = '\0';
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (info) memset(info, 0, sizeof *info);
    if (!buf && len) return DCZ_ERR_ARG;
    if (len == 0) return fail(&im.e, DCZ_ERR_FORMAT, "an empty file is no ONNX model");
    if (wire_check(buf, len, &onnx__model_proto__descriptor, 0) != 0)
        return fail(&im.e, DCZ_ERR_FORMAT, "not an ONNX model: the bytes are not a valid protobuf message "
                    "(truncated or damaged?) or nest more than %d levels", WIRE_MAX_DEPTH);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) return fail(&im.e, DCZ_ERR_FORMAT, "not an ONNX model: the protobuf message does not parse "
                        "(truncated or damaged?)");
    dcz_status s = DCZ_OK;
    dcz_doc *d = NULL;
    const Onnx__GraphProto *g = m->graph;
    if (!g) { s = fail(&im.e, DCZ_ERR_FORMAT, "not an ONNX model: no graph"); goto done; }
    im.g = g;
    im.opset = -1;
    for (size_t k = 0; k < m->n_opset_import; k++)
        if (default_domain(m->opset_import[k]->domain) && m->opset_import[k]->has_version)
            im.opset = m->opset_import[k]->version;
    if (im.opset < 0) { s = fail(&im.e, DCZ_ERR_FORMAT, "the model imports no ONNX opset"); goto done; }
    if (im.opset < DCZ_ONNX_OPSET_MIN || im.opset > DCZ_ONNX_OPSET_MAX) {
        s = fail(&im.e, DCZ_ERR_UNSUPPORTED, "opset %lld: dcz imports opsets %d to %d (re-export, e.g. "
                 "torch.onnx.export(..., opset_version=%d))", (long long)im.opset, DCZ_ONNX_OPSET_MIN,
                 DCZ_ONNX_OPSET_MAX, DCZ_ONNX_OPSET_DEFAULT);
        goto done;
    }
    if (g->n_node > MAX_GRAPH_NODES) { s = fail(&im.e, DCZ_ERR_UNSUPPORTED, "more than %d nodes", MAX_GRAPH_NODES); goto done; }
    if (g->n_sparse_initializer) {
        s = fail(&im.e, DCZ_ERR_UNSUPPORTED, "sparse initializers are not supported");
        goto done;
    }
    if ((s = unsupported_ops(&im)) != DCZ_OK) goto done;
    if ((s = count_uses(&im)) != DCZ_OK || (s = grow_layers(&im)) != DCZ_OK) goto done;

    /* the value table: initializers, the input, every node output */
    size_t cap = g->n_initializer + g->n_input + 1;
    for (size_t k = 0; k < g->n_node; k++) cap += g->node[k]->n_output;
    im.capvals = cap;
    im.nslots = 16;
    while (im.nslots < 2 * cap) im.nslots *= 2;
    im.vals = malloc(cap * sizeof *im.vals);
    im.slot = calloc(im.nslots, sizeof *im.slot);
    if (!im.vals || !im.slot) { s = DCZ_ERR_NOMEM; goto done; }
    for (size_t k = 0; k < g->n_initializer && s == DCZ_OK; k++) {
        long v;
        s = val_add(&im, g->initializer[k]->name, V_CONST, "an initializer", &v);
        if (s == DCZ_OK) im.vals[v].t = g->initializer[k];
    }
    if (s == DCZ_OK) s = graph_input(&im);
    for (size_t k = 0; k < g->n_node && s == DCZ_OK; k++) s = node_run(&im, k);
    /* nodes refused on the way come first in the graph: their message wins */
    if (im.ndeferred && s != DCZ_ERR_NOMEM && s != DCZ_ERR_INTERNAL) s = deferred_report(&im);
    if (s == DCZ_OK) s = graph_output(&im);
    if (s != DCZ_OK) goto done;

    if (!(opt && opt->keep_dense)) mark_pruned(&im);
    if ((s = dcz_doc_alloc(im.nlayers, &d)) != DCZ_OK) goto done;
    d->input_rank = im.input_shape.rank;
    memcpy(d->input_dims, im.input_shape.dims, sizeof d->input_dims);
    memcpy(d->layers, im.layers, im.nlayers * sizeof *im.layers);
    im.nlayers = 0;   /* the document owns the tensors now */
    if (info) {
        info->ir_version = m->has_ir_version ? m->ir_version : 0;
        info->opset = im.opset;
        snprintf(info->producer, sizeof info->producer, "%s%s%s", str(m->producer_name),
                 m->producer_version && *m->producer_version ? " " : "", str(m->producer_version));
        printable(info->producer);
        info->nodes = (uint32_t)g->n_node;
        info->dropped = im.dropped;
        info->folded = im.folded;
        info->nlayers = d->nlayers;
        info->source = im.source;
        im.source = NULL;
    }
    *out = d;
done:
    for (uint32_t k = 0; k < im.nlayers; k++)
        for (uint32_t t = 0; t < im.layers[k].ntensors; t++) dcz_doc_tensor_clear(&im.layers[k].t[t]);
    free(im.layers);
    free(im.source);
    free(im.vals);
    free(im.slot);
    free(im.uses);
    free(im.tens);
    ext_close(&im.ext);
    onnx__model_proto__free_unpacked(m, NULL);
    return s;
}
