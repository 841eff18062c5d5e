/* interop.h: ONNX import and export for the dcz toolchain.
 *
 * dcz_onnx_import reads an ONNX model (a serialized onnx.ModelProto, parsed
 * with protobuf-c bindings generated at build time from Debian's onnx.proto;
 * tensors kept as external data read from files beside the model) into a
 * .dcz document: a graph of DENSE, CONV2D (grouped and depthwise
 * too), pooling, FLATTEN, ADD, MUL, CONCAT, the activations and SOFTMAX
 * layers with dense fp32 weights, batch normalization folded into the layer
 * computing its input, and exact zeros of a layer that was pruned elsewhere
 * kept as its pruning mask (sparse fp32). dcz_onnx_export writes a document
 * of any stage back as a dense fp32 ONNX graph (codebooks and sparse
 * positions decoded). docs/CLI.md ("import", "export") lists the operators
 * and attributes each way.
 *
 * Nothing read from a file is trusted: the protobuf nesting depth is checked
 * before parsing, every tensor's size against its dims and data type, every
 * operator's attributes and the shapes of its inputs, and the graph's order
 * (a node reads only values made before it), and every external data
 * reference (a location inside the model's folder, a regular file holding
 * the bytes at offset and length, exactly the tensor's size). Failures
 * return a dcz_status and write a one-line reason to err (errlen bytes; err
 * may be NULL):
 *   DCZ_ERR_FORMAT       not a valid ONNX protobuf, or an inconsistent one
 *                        (a tensor whose data does not fit its dims, a value
 *                        used before it is produced, external data beyond
 *                        the end of its file or of another length, an
 *                        absolute location, ...)
 *   DCZ_ERR_UNSUPPORTED  valid ONNX dcz cannot represent: an opset outside
 *                        11..22, operators dcz lacks (each named once in one
 *                        message, with its count of nodes and the first),
 *                        unsupported attributes, batch norms or biases that
 *                        cannot be folded (counted per operator in one
 *                        message), external data with no folder given or
 *                        outside the model's folder ('..')
 *   DCZ_ERR_IO           an external data file cannot be opened or read
 *   DCZ_ERR_SHAPE        shapes that do not agree
 *   DCZ_ERR_NOMEM        an allocation failed
 *
 * The runtime (libdcz) never depends on this module.
 * Tested by tests/unit/test_onnx.c (PyTorch fixtures against PyTorch's
 * outputs, every operator and attribute, malformed models, export round
 * trips) and tests/cli/interop.sh; fuzzed by tests/fuzz/fuzz_onnx.c.
 */
#ifndef DCZ_INTEROP_H
#define DCZ_INTEROP_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "model/doc.h"

#define DCZ_ONNX_OPSET_MIN 11
#define DCZ_ONNX_OPSET_MAX 22
#define DCZ_ONNX_OPSET_DEFAULT 13   /* what export writes unless told (14 for a model
                                       with HARD_SWISH: dcz_onnx_export_opset) */

/* A layer of weights counts as pruned elsewhere when at least this fraction
 * of its weights is exactly zero. */
#define DCZ_ONNX_PRUNED_MIN 0.10

typedef struct dcz_onnx_import_opts {
    int keep_dense;      /* nonzero: store every weight dense, zeros included */
    const char *dir;     /* the folder of the model file, in which the
                            locations of its external data are resolved
                            ("." the current one); NULL: none (a model read
                            from a pipe), and a tensor kept as external data
                            is refused */
} dcz_onnx_import_opts;

/* Where each layer of an imported document came from. */
#define DCZ_ONNX_SOURCE_LEN 160
typedef struct dcz_onnx_info {
    int64_t ir_version;
    int64_t opset;                 /* of the default ONNX domain */
    char producer[64];             /* producer name and version (control
                                      characters replaced by '?') */
    uint32_t nodes;                /* nodes of the graph */
    uint32_t dropped;              /* nodes removed: Identity, Dropout,
                                      Constant, no-op Reshape/Flatten/Pad */
    uint32_t folded;               /* nodes folded into a layer: batch
                                      norm, bias Add, Pad, the Sigmoid
                                      of a SiLU */
    uint32_t nlayers;
    char (*source)[DCZ_ONNX_SOURCE_LEN]; /* (nlayers) the ONNX node(s) of each
                                      layer, "Conv '/c1/Conv' + BatchNor..."; owned */
} dcz_onnx_info;

/* Reads len bytes of an ONNX model into a new document (*out, freed with
 * dcz_doc_free), its external data from the files opt->dir holds (read, never
 * kept open). opt may be NULL (defaults); info may be NULL, else it is
 * filled on success and released with dcz_onnx_info_free. The document has
 * no stage record: the caller adds one. */
dcz_status dcz_onnx_import(const void *buf, size_t len, const dcz_onnx_import_opts *opt,
                           dcz_doc **out, dcz_onnx_info *info, char *err, size_t errlen);

/* Releases what info owns and zeroes it. NULL-safe. */
void dcz_onnx_info_free(dcz_onnx_info *info);

typedef struct dcz_onnx_export_opts {
    int opset;                /* 11..22; 0: dcz_onnx_export_opset's choice */
    const char *doc_string;   /* stored as the model's doc_string; may be NULL */
} dcz_onnx_export_opts;

/* Writes d as an ONNX model into a new malloc'd buffer (*buf, *len): input
 * "input" of shape (batch, input dims) with a symbolic batch dimension,
 * output "output", each layer one node (a few for some: a Flatten before a
 * Gemm whose input is not flat, a Reshape of per-channel factors before a
 * Mul) reading the values of the layer's inputs, weights as dense fp32
 * initializers named LAYER.weight and LAYER.bias. opt may be NULL.
 * DCZ_ERR_ARG for an opset outside 11..22, DCZ_ERR_UNSUPPORTED for a layer
 * the export cannot write, the status of dcz_doc_shapes for a graph whose
 * layers do not fit together. */
dcz_status dcz_onnx_export(const dcz_doc *d, const dcz_onnx_export_opts *opt, uint8_t **buf,
                           size_t *len, char *err, size_t errlen);

/* The opset dcz_onnx_export writes for d when asked for opset (0: the
 * default): opset itself when nonzero, else DCZ_ONNX_OPSET_DEFAULT, raised
 * to 14 when d holds a HARD_SWISH layer (ONNX's HardSwish). */
int dcz_onnx_export_opset(const dcz_doc *d, int opset);

/* Nonzero when buf holds what reads as an ONNX model (a protobuf
 * onnx.ModelProto with a graph): for a verb that expected a .dcz to say
 * so. Reads the whole message; never fails otherwise. */
int dcz_onnx_sniff(const void *buf, size_t len);

/* Nonzero when buf starts with the .dcz magic: for import to say that the
 * file needs no import. */
int dcz_onnx_is_dcz(const void *buf, size_t len);

#endif /* DCZ_INTEROP_H */
