/* doc.h: a .dcz file as an editable document, for the toolchain.
 *
 * The runtime loads files straight into execution form (load.c); the
 * toolchain instead needs every weight back as a number it can retrain and
 * re-encode. dcz_doc_read decodes a file into dense values plus the mask,
 * codebook and assignments that describe its compression; dcz_doc_write
 * encodes a document with the encodings its tensors ask for (Huffman coding
 * through huffman/), so these files are not part of libdcz.
 *
 * Checked by tests/unit/test_format.c (doc round trips for every encoding,
 * byte-identical rewrites, stream statistics).
 */
#ifndef DCZ_MODEL_DOC_H
#define DCZ_MODEL_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "runtime/format/format.h"

/* Limits of the STAGES section (docs/FORMAT.md) */
#define DCZ_MAX_STAGES 1024
#define DCZ_MAX_STAGE_TEXT (1u << 20)

/* What a tensor costs on disk, filled by dcz_doc_read and dcz_doc_write. */
typedef struct dcz_doc_stats {
    size_t record_bytes;      /* the whole tensor record */
    size_t value_bytes;       /* dense values, sparse fp32 values or codebook */
    size_t index_bytes;       /* index stream block (table included) */
    size_t gap_bytes;         /* gap stream block (table included) */
    uint32_t nnz;             /* stored weights */
    uint32_t gap_count;       /* gap symbols, fillers included */
} dcz_doc_stats;

/* A tensor of any rank; its elements (and so mask and assign) run over the
 * tensor flattened in C order: a CONV2D weight (out_c, in_c, kh, kw) has
 * element ((oc in_c + ic) kh + ky) kw + kx. */
typedef struct dcz_doc_tensor {
    uint32_t enc;             /* DCZ_ENC_*: as read, or to write */
    uint32_t rank, dims[DCZ_MAX_RANK];
    size_t n;                 /* product of dims */
    float *values;            /* (n) dense values; 0 where not stored; owned */
    uint8_t *mask;            /* (n) 1 where stored; NULL: all stored; owned */
    /* DCZ_ENC_CODEBOOK */
    uint32_t k;
    float *codebook;          /* (k), owned */
    uint8_t *assign;          /* (n) codebook index of each stored weight, owned */
    uint8_t index_bits;       /* 1..8, 2^index_bits >= k */
    /* sparse encodings */
    uint8_t gap_bits;         /* 1..8 (1 with gap_coding ARITH); 0: every position stored */
    uint8_t index_coding, gap_coding; /* DCZ_CODING_RAW, _HUFFMAN or _ARITH (a keep mask) */
    uint8_t codebook_f16;     /* CODEBOOK: the codebook stored as f16 (format 2.2); the
                                 writer rounds it, dcz_doc_tensor_codebook_f16 rounds
                                 the values too */
    /* DCZ_ENC_I8, DCZ_ENC_I16: values are integers times these scales (the
     * writer stores round(value / scale), clamped to the integer range) */
    uint32_t nscale;          /* 1 or dims[0] */
    float *scale;             /* (nscale), owned */
    dcz_doc_stats st;
} dcz_doc_tensor;

/* A layer reads nin tensors: 0 the model input, j + 1 the output of layer
 * j, always an earlier layer (the document is in a topological order); the
 * model's output is the last layer's, and every other layer is read by a
 * later one. dcz_doc_alloc starts every layer i reading tensor i (a chain).
 *
 * The document is also the trainer's model (train/): while a network
 * trains, its document may hold layers of the training-only ops, BATCHNORM
 * (attributes eps and momentum; tensors gamma, beta, running mean and
 * running variance) and DROPOUT (attribute rate), and a weighted layer
 * whose parameters are not yet set (ntensors 0). Such a document is in
 * training form: dcz_doc_fold makes it one that can be written, and the
 * writer refuses it before. */
typedef struct dcz_doc_layer {
    uint16_t op;              /* DCZ_OP_* */
    char name[DCZ_MAX_NAME + 1];
    uint32_t nin;
    uint32_t in[DCZ_MAX_INPUTS];
    uint32_t nattr;
    int32_t attr[DCZ_MAX_ATTRS];
    uint32_t ntensors;        /* DENSE, CONV2D: 2 (weight, bias); BATCHNORM 4; other ops 0 */
    dcz_doc_tensor t[DCZ_MAX_TENSORS];
    size_t section_bytes;     /* the LAYER section, filled by read/write */
} dcz_doc_layer;

/* The calibration table (CALIB section): one entry per DENSE or CONV2D
 * layer, in graph order. */
typedef struct dcz_doc_calib_entry {
    uint32_t layer;           /* graph index */
    float in_scale;           /* scale of the layer's input activations */
    uint32_t nw;              /* 1 or the layer's output channels */
    float *w_scale;           /* (nw), owned */
} dcz_doc_calib_entry;

typedef struct dcz_doc_calib {
    uint32_t scheme;          /* DCZ_SCHEME_* */
    uint64_t model_hash, data_hash;
    uint32_t count;
    dcz_doc_calib_entry *e;   /* (count), owned */
    uint32_t ntensors;        /* 0 (a table of format 1.2: scales follow the chain) or
                                 the graph's layers + 1 */
    float *t_scale;           /* (ntensors) the scale of each tensor (0 the input, j + 1
                                 layer j's output), 0 off the integer region; owned */
} dcz_doc_calib;

void dcz_doc_calib_free(dcz_doc_calib *c);

/* Where a file's bytes go (docs/FORMAT.md, Layout), filled by read and
 * write; the parts sum to the file's size (dcz_doc_parts_total). */
typedef struct dcz_doc_parts {
    size_t header;            /* the header and the section table */
    size_t graph;             /* the GRAPH section */
    size_t layers;            /* the LAYER sections, together */
    uint32_t nlayer_sections;
    size_t stages, calib, prep; /* STAGES, CALIB, PREPROCESS; 0 when absent */
    size_t other;             /* optional sections of types this reader does not know */
    size_t padding;           /* the zeros that start each section on a 64-byte boundary */
} dcz_doc_parts;

/* Counts a section of the given type and size in p. */
void dcz_doc_parts_add(dcz_doc_parts *p, uint32_t type, size_t size);
/* The sum of the parts: the size of the file they describe. */
size_t dcz_doc_parts_total(const dcz_doc_parts *p);

typedef struct dcz_doc {
    uint32_t input_rank, input_dims[DCZ_MAX_RANK];
    uint32_t nlayers;
    dcz_doc_layer *layers;    /* (nlayers), owned */
    uint32_t nstages;
    char **stages;            /* (nstages) "key = value" texts, owned, in order */
    dcz_doc_calib *calib;     /* NULL: the model runs in floating point; owned */
    int has_prep;             /* prep holds how an image becomes the input (PREPROCESS) */
    dcz_preprocess prep;
    size_t file_bytes;        /* filled by read/write */
    size_t overhead_bytes;    /* header, table, graph, stages, padding */
    dcz_doc_parts parts;      /* filled by read/write */
} dcz_doc;

/* Elements of the tensors a document read from a file of len bytes may
 * expand to, together: DCZ_DOC_ELEMENTS_PER_BYTE per byte plus 2^20, at
 * most 2^28 (doc_read.c says why). */
#define DCZ_DOC_ELEMENTS_PER_BYTE 256

/* Decodes buf into a new document. Same validation as the runtime: the
 * graph is in order and every layer's inputs fit it (dcz_op_shape),
 * parameter tensors fit their op's attributes, and a calibration table fits
 * the graph (dcz_doc_calib_check). A file of format 1.x becomes a document
 * of format 2 (dcz_graph_next). Tensors that would expand past the bound
 * above give DCZ_ERR_LIMIT before their memory is taken. */
dcz_status dcz_doc_read(const void *buf, size_t len, dcz_doc **out);

/* Encodes d into a new malloc'd buffer (*buf, *len), a file of format
 * DCZ_FMT_MAJOR.DCZ_FMT_MINOR, and fills the stats of every tensor and the
 * document. The output depends on d alone. A document the readers would
 * refuse is refused: DCZ_ERR_SHAPE when a layer's inputs do not fit it or a
 * parameter tensor does not fit its op's attributes, DCZ_ERR_ARG for
 * anything else out of the format's limits (a layer reading a later one, a
 * layer no one reads, a training-only op). */
dcz_status dcz_doc_write(dcz_doc *d, uint8_t **buf, size_t *len);

/* Drops the codebook entries of a CODEBOOK tensor that no stored weight
 * uses, renumbering the assignments (entries keep their order), and sets
 * index_bits to the fewest bits that hold what is left. Every weight keeps
 * its value. DCZ_ERR_ARG for an assignment out of the codebook. Other
 * encodings are left as they are. */
dcz_status dcz_doc_tensor_compact(dcz_doc_tensor *t);

/* The position width, 1 to 8, that stores the positions of sparse tensor t
 * (mask set) in the fewest bytes with t's gap coding: few bits cost
 * fillers, many bits cost raw width or a larger Huffman table. Ties go to
 * the wider. 1 when the coding is ARITH (a keep mask). 0 for a CODEBOOK
 * tensor that stores every position (no position stream: the caller drops
 * the mask). */
dcz_status dcz_doc_tensor_best_gap_bits(const dcz_doc_tensor *t, uint8_t *bits);

/* Packs a sparse tensor without changing a weight: its codebook compacted
 * (dcz_doc_tensor_compact), then its positions gap_bits wide (1 to 8), or
 * with gap_bits 0 as wide as stores them smallest
 * (dcz_doc_tensor_best_gap_bits; a codebook tensor that stores every
 * position then drops its mask and its position stream). Dense tensors are
 * left as they are; DCZ_ERR_ARG as those two functions. */
dcz_status dcz_doc_tensor_pack(dcz_doc_tensor *t, unsigned gap_bits);

/* Sets the codings of a packed sparse tensor to those that store it in
 * the fewest bytes, each stream on its own: the index stream raw, Huffman
 * or (arith nonzero) arithmetic-coded; the positions at every width 1 to 8
 * raw or Huffman, or (arith nonzero) as an arithmetic-coded keep mask, or
 * with gap_bits nonzero at that width only, raw or Huffman. Ties go to the
 * lower coding, then to the wider width, so the choice is deterministic.
 * Dense tensors and tensors without positions keep what they have there. */
dcz_status dcz_doc_tensor_choose_codings(dcz_doc_tensor *t, unsigned gap_bits, int arith);

/* Stores the codebook of a CODEBOOK tensor as f16 (format 2.2): every
 * entry, and so every stored weight, rounded to the nearest f16. Returns 0
 * and leaves t as it is when an entry lies past f16's range (65504) or
 * t is no CODEBOOK tensor, else 1. */
int dcz_doc_tensor_codebook_f16(dcz_doc_tensor *t);

/* Makes dense tensor t (a bias) I8 with one scale: the largest magnitude
 * over 127 (DCZ_SCALE_MIN for an all-zero tensor), every value rounded to
 * a multiple of it as the writer stores it. DCZ_ERR_NOMEM. */
dcz_status dcz_doc_tensor_to_i8(dcz_doc_tensor *t);

/* Removes the units that nothing reads (model/shrink.c): a unit of a
 * DENSE layer (an output) or of a CONV2D of one group (a filter) whose
 * block of columns in the one such layer that reads it (through
 * element-wise layers, pools and FLATTEN, each read once) stores no weight
 * goes, with its row and its bias entry, and that block; the attributes
 * follow. Every output of the model stays the same, bit for bit. *removed
 * gets the units gone. A document with a calibration table is left as it
 * is. DCZ_ERR_NOMEM leaves d unfit to write. */
dcz_status dcz_doc_shrink(dcz_doc *d, uint32_t *removed);

/* The fewest index bits (1 to 8) that address k codebook entries. */
unsigned dcz_doc_index_bits(uint32_t k);

/* Checks the tensors of l against its op and attributes (attributes already
 * checked by dcz_op_check): none for ops without parameters; for DENSE and
 * CONV2D a weight and a bias of the shapes dcz_op_param_shapes gives
 * (DCZ_ERR_SHAPE otherwise), the bias F32, F16 or I8. DCZ_ERR_FORMAT for a wrong
 * tensor count or bias encoding. */
dcz_status dcz_doc_layer_check_params(const dcz_doc_layer *l);

/* Checks d->calib (if any) against the graph: one entry per DENSE or
 * CONV2D layer in order, nw 1 or the layer's output channels, scales valid
 * for the scheme (dcz_scale_ok), no SOFTMAX between the first and the last
 * weighted layer, int tensor scales equal to the table's weight scales,
 * tensor scales for every tensor of the graph (or none) and each weighted
 * layer's in_scale that of the tensor it reads. DCZ_ERR_FORMAT otherwise.
 * The rules between the region's other ops and their scales are the
 * runtime's (dcz_open refuses a table that breaks them). */
dcz_status dcz_doc_calib_check(const dcz_doc *d);
/* The same checks of table c against d's graph; int_weights 0 leaves out
 * the comparison with the scales of I8 and I16 weights (for a table about
 * to replace them). */
dcz_status dcz_doc_calib_fits(const dcz_doc *d, const dcz_doc_calib *c, int int_weights);

/* The shapes of every tensor of d (0 the input, j + 1 layer j's output)
 * into shapes (nlayers + 1): DCZ_ERR_SHAPE when a layer's inputs do not fit
 * it, DCZ_ERR_ARG when the graph is out of order or an op's attributes
 * break its rules (dcz_op_check), DCZ_ERR_UNSUPPORTED for an unknown op. */
dcz_status dcz_doc_shapes(const dcz_doc *d, dcz_shape *shapes);

/* Appends a stage record (copied). */
dcz_status dcz_doc_add_stage(dcz_doc *d, const char *text);
/* Drops every stage record: d is then written without a STAGES section. */
void dcz_doc_clear_stages(dcz_doc *d);

/* Allocates a zeroed document with nlayers zeroed layers, layer i reading
 * tensor i (the output of the layer before, or the model input). */
dcz_status dcz_doc_alloc(uint32_t nlayers, dcz_doc **out);

/* Releases a tensor's arrays and zeroes it. */
void dcz_doc_tensor_clear(dcz_doc_tensor *t);

void dcz_doc_free(dcz_doc *d);

/* Parameters of the document: every tensor element. */
size_t dcz_doc_param_count(const dcz_doc *d);

/* Symbol streams of a sparse tensor as the writer would produce them:
 * the index symbols (nnz) and gap symbols (gap_count). Either may be NULL.
 * Arrays are malloc'd; the caller frees them. */
dcz_status dcz_doc_tensor_streams(const dcz_doc_tensor *t, uint8_t **idx, uint32_t *nnz,
                                  uint8_t **gaps, uint32_t *gap_count);

/* Folds a batch normalization (per output row o: gamma, beta, running
 * mean and variance, eps) into the weighted layer computing its input, w
 * (rows, cols) and b (rows): w' = w g, b' = (b - mean) g + beta with
 * g = gamma / sqrt(var + eps), computed in double (fold.c). The caller
 * checks that var + eps > 0 and, where its input is outside data, that
 * the results are finite. */
void dcz_fold_batchnorm(float *w, float *b, size_t rows, size_t cols, const float *gamma,
                        const float *beta, const float *mean, const float *var, float eps);

/* Makes a document in training form one that can be written: each
 * BATCHNORM layer folded (dcz_fold_batchnorm) into the weighted layer whose
 * output it reads, each DROPOUT dropped, the layers after them renumbered,
 * a calibration table (which no longer fits) freed. DCZ_ERR_UNSUPPORTED,
 * and d unchanged, when a batch norm cannot fold: it reads the model input
 * or a layer without weights, another layer reads that output too, the
 * weight is sparse or shared, or a variance + eps is not positive; or when
 * no layer would be left. */
dcz_status dcz_doc_fold(dcz_doc *d);

#endif /* DCZ_MODEL_DOC_H */
