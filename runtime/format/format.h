/* format.h: the constants of the .dcz file format and the helpers that read
 * it field by field. docs/FORMAT.md is the normative description; every
 * number here is named there. Shared by the runtime loader (load.c,
 * load_layer.c), the toolchain's reader and writer (doc_read.c,
 * doc_write.c) and the tests.
 *
 * All multi-byte fields are little-endian and are read through dcz_rd_* on a
 * bounds-checked cursor; nothing is ever read by casting a struct.
 *
 * Tested by tests/unit/test_format.c (container round trip, every single-byte
 * corruption and every truncation) and fuzzed by tests/fuzz/fuzz_dcz.c.
 */
#ifndef DCZ_RUNTIME_FORMAT_H
#define DCZ_RUNTIME_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dcz.h"
#include "huffman/arith.h"
#include "huffman/huffman.h"
#include "runtime/format/ops.h"

/* the version written; readers take 1.x (chains) and 2.x */
#define DCZ_FMT_MAJOR 2
#define DCZ_FMT_MINOR 2

#define DCZ_HEADER_BYTES 64
#define DCZ_SECTION_ENTRY_BYTES 32
#define DCZ_ALIGN 64
#define DCZ_MAX_SECTIONS 4096
#define DCZ_MAX_LAYERS 1024
#define DCZ_MAX_ATTRS 16
#define DCZ_MAX_NAME 63
#define DCZ_MAX_TENSORS 4
#define DCZ_NO_SECTION 0xFFFFFFFFu
#define DCZ_MAX_DIM (1u << 24)      /* a dimension, a channel count, a DENSE width */
#define DCZ_MAX_ACT (1u << 24)      /* elements of one sample's activation */
#define DCZ_MAX_WINDOW 255          /* kernel and stride of CONV2D and the pools */

extern const uint8_t dcz_magic[8];

/* section types */
enum {
    DCZ_SEC_GRAPH = 1,   /* the layer chain; exactly one, required */
    DCZ_SEC_LAYER = 2,   /* the parameters of one layer */
    DCZ_SEC_STAGE = 3,   /* what one toolchain stage did (key = value text) */
    DCZ_SEC_CALIB = 4,   /* the calibration table: integer execution (at most one) */
    DCZ_SEC_PREP = 5,    /* how an image becomes the input (at most one) */
};
#define DCZ_SECF_REQUIRED 1u /* a reader that does not know the type must refuse */

/* tensor encodings */
enum {
    DCZ_ENC_F32 = 1,         /* dense float32 */
    DCZ_ENC_F16 = 2,         /* dense IEEE binary16 */
    DCZ_ENC_I8 = 3,          /* dense int8, symmetric scales per tensor or per row */
    DCZ_ENC_SPARSE_F32 = 4,  /* positions (gap stream) + float32 values */
    DCZ_ENC_CODEBOOK = 5,    /* positions (gap stream) + codebook indices */
    DCZ_ENC_I16 = 6,         /* dense int16, as DCZ_ENC_I8 */
};
#define DCZ_ENC_IS_INT(e) ((e) == DCZ_ENC_I8 || (e) == DCZ_ENC_I16)

/* stream codings inside a sparse tensor (ARITH: format 2.2; on the position
 * stream it codes a keep mask, and gap_bits is 1, gap_count n) */
enum { DCZ_CODING_RAW = 0, DCZ_CODING_HUFFMAN = 1, DCZ_CODING_ARITH = 2 };
/* A CODEBOOK's codebook format (the u16 after k; format 2.2) */
enum { DCZ_CODEBOOK_F32 = 0, DCZ_CODEBOOK_F16 = 1 };

/* ---- little-endian cursor --------------------------------------------- */

typedef struct dcz_cur {
    const uint8_t *p;
    size_t len, pos;
} dcz_cur;

static inline void dcz_cur_init(dcz_cur *c, const void *p, size_t len)
{
    c->p = (const uint8_t *)p; c->len = len; c->pos = 0;
}
static inline int dcz_cur_has(const dcz_cur *c, size_t n) { return c->len - c->pos >= n; }

dcz_status dcz_rd_u8(dcz_cur *c, uint8_t *v);
dcz_status dcz_rd_u16(dcz_cur *c, uint16_t *v);
dcz_status dcz_rd_u32(dcz_cur *c, uint32_t *v);
dcz_status dcz_rd_u64(dcz_cur *c, uint64_t *v);
dcz_status dcz_rd_f32(dcz_cur *c, float *v);
/* Points *p at the next n bytes and skips them. */
dcz_status dcz_rd_bytes(dcz_cur *c, size_t n, const uint8_t **p);

static inline uint32_t dcz_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void dcz_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
/* a float's bits and back, as the file stores them (inline: the operator
 * table reads its float attributes through them, and the container reads
 * the operator table) */
static inline float dcz_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint32_t dcz_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
float dcz_f16_to_f32(uint16_t h);
uint16_t dcz_f32_to_f16(float f); /* round to nearest even */

uint32_t dcz_crc32(uint32_t crc, const void *p, size_t n); /* start with crc 0 */

/* ---- container ---------------------------------------------------------- */

typedef struct dcz_section {
    uint32_t type, flags;
    uint64_t offset, size;
    uint32_t crc;
    uint32_t reserved;
} dcz_section;

typedef struct dcz_container {
    uint16_t major, minor;
    uint32_t flags;
    uint32_t nsections;
    const uint8_t *base;    /* the whole file */
    size_t len;
    const uint8_t *table;   /* section table, nsections entries */
} dcz_container;

/* Validates header, section table and every section's bounds, alignment,
 * overlap and CRC. Unknown optional section types are accepted (and later
 * skipped); an unknown required type gives DCZ_ERR_UNSUPPORTED. */
dcz_status dcz_container_open(const void *buf, size_t len, dcz_container *c);
/* Entry i (i < nsections) of an opened container. */
void dcz_container_section(const dcz_container *c, uint32_t i, dcz_section *s);

/* The PREPROCESS section's body (len bytes at p) into *out, every rule of
 * docs/FORMAT.md checked (DCZ_ERR_FORMAT otherwise). */
dcz_status dcz_prep_parse(const uint8_t *p, size_t len, dcz_preprocess *out);

/* The PREPROCESS section of c: *found 0 when there is none; DCZ_ERR_FORMAT
 * for two, a damaged one, or one whose channels or crop do not fit the
 * model's input shape. */
dcz_status dcz_prep_find(const dcz_container *c, const dcz_shape *input, dcz_preprocess *out, int *found);

/* ---- graph -------------------------------------------------------------- */

/* A graph record, read and checked. Tensors are numbered: 0 the model
 * input, j + 1 the output of layer j; a layer reads earlier tensors only,
 * so the records are in a topological order. The model's output is the
 * last layer's. A record of format 1.x reads the tensor before it, and its
 * CONV2D gets the group 1 that 1.x left implicit: the walk gives every
 * file the form of format 2. */
typedef struct dcz_graph_layer {
    uint16_t op;
    char name[DCZ_MAX_NAME + 1];
    uint32_t nin;
    uint32_t in[DCZ_MAX_INPUTS];
    uint32_t nattr;
    int32_t attr[DCZ_MAX_ATTRS];
    uint32_t param_section;     /* section index or DCZ_NO_SECTION */
} dcz_graph_layer;

typedef struct dcz_graph_walk {
    const dcz_container *c;
    dcz_cur cur;
    uint32_t nlayers;
    uint32_t next;              /* index of the next record */
    dcz_shape input;            /* one sample of the model input */
    uint32_t min_param;         /* lowest section index the next parameter section may have */
    uint8_t read[DCZ_MAX_LAYERS / 8]; /* bit j: layer j's output is read by a later layer */
} dcz_graph_walk;

/* Starts a walk over the GRAPH section of an opened container: the layer
 * count and the input shape. */
dcz_status dcz_graph_begin(const dcz_container *c, dcz_graph_walk *w);
/* Reads the next layer record and checks it against the container (the
 * parameter section exists, is a LAYER section, and comes after the one of
 * any earlier layer, so no section serves two layers), the op's rules
 * (dcz_op_check: attribute count and limits, parameter presence, input
 * count) and the order of the graph (inputs are earlier tensors). */
dcz_status dcz_graph_next(dcz_graph_walk *w, dcz_graph_layer *l);
/* After the last record: the section ends there, and every layer but the
 * last is read by a later one (no dead layers). */
dcz_status dcz_graph_end(const dcz_graph_walk *w);

/* ---- tensors ------------------------------------------------------------ */

/* A tensor record as found in a LAYER section, validated: counts fit the
 * shape, streams fit the section, tables are valid. Pointers point into the
 * file buffer. */
typedef struct dcz_tensor_view {
    uint32_t enc;
    uint32_t rank, dims[DCZ_MAX_RANK];
    uint64_t n;                  /* elements of the full (dense) shape */
    const uint8_t *payload;      /* F32 / F16 / I8 / I16: the n values */
    uint32_t nscale;             /* I8 / I16: 1 (per tensor) or dims[0] (per row) */
    const uint8_t *scales;       /* I8 / I16: nscale float32, finite and > 0 */
    /* sparse encodings */
    uint32_t nnz, gap_count;
    uint8_t gap_bits;            /* 0: every position present (no gap stream) */
    const uint8_t *values;       /* SPARSE_F32: nnz float32 */
    uint8_t index_bits;          /* CODEBOOK */
    uint32_t k;
    const uint8_t *codebook;     /* k float32, or k float16 when codebook_f16 */
    uint8_t codebook_f16;        /* the CODEBOOK's codebook format (format 2.2): 1 f16 */
    uint8_t index_coding, gap_coding;         /* DCZ_CODING_* */
    const uint8_t *index_stream, *gap_stream; /* after any Huffman table */
    size_t index_bytes, gap_bytes;            /* stream data bytes */
    const uint8_t *index_table, *gap_table;   /* Huffman tables or NULL */
    size_t record_bytes;         /* the whole record on disk */
} dcz_tensor_view;

/* Called for each stored weight with its number and flat position. */
typedef dcz_status (*dcz_pos_fn)(void *ctx, uint32_t entry, uint64_t pos);

/* Entry i of a CODEBOOK tensor's codebook, whichever its stored format. */
float dcz_tensor_codebook_at(const dcz_tensor_view *t, uint32_t i);

/* Reads the tensor count of a LAYER section. */
dcz_status dcz_layer_begin(const uint8_t *p, size_t len, dcz_cur *cur, uint32_t *ntensors);
/* Reads and validates the next tensor record. */
dcz_status dcz_tensor_next(dcz_cur *cur, dcz_tensor_view *t);

/* Decodes the index stream (nnz symbols) into idx. */
dcz_status dcz_tensor_decode_indices(const dcz_tensor_view *t, uint8_t *idx);

/* Bytes of scratch dcz_tensor_positions needs for t: the decoded gap
 * symbols, or the column counts of a keep mask (4-byte aligned). */
uint64_t dcz_tensor_positions_scratch(const dcz_tensor_view *t);

/* Decodes the positions of t, whatever their coding, and calls fn for each
 * stored weight in position order, with the checks of dcz_gaps_walk (gap
 * streams) or dcz_ac_decode_mask (keep masks). */
dcz_status dcz_tensor_positions(const dcz_tensor_view *t, void *scratch, dcz_pos_fn fn, void *ctx);

/* Walks a decoded gap stream: calls back for each entry with its flat
 * position. Checks that positions stay below n, that exactly nnz entries
 * appear and that the stream does not end in fillers. */
dcz_status dcz_gaps_walk(const uint8_t *gaps, uint32_t gap_count, unsigned gap_bits,
                         uint32_t nnz, uint64_t n, dcz_pos_fn fn, void *ctx);

/* A sparse tensor's stored weights read one at a time, in position order,
 * straight from its streams as stored (any coding): nothing is decoded
 * ahead, and no scratch is needed but the column counts of a keep mask
 * (dcz_entries_scratch_bytes). The path of a fully connected layer whose
 * weights stay in the file (dcz_options.stream_weights: entries.c);
 * dcz_tensor_positions and dcz_tensor_decode_indices decode a whole tensor
 * at once, faster, and tests/unit/test_format.c checks the two agree on
 * every coding. Plain data; t must outlive it. */
typedef struct dcz_entries {
    const dcz_tensor_view *t;
    uint32_t entry;                 /* entries read */
    uint32_t gaps_read;
    int64_t prev;                   /* the gap walk's last position (-1 before the first) */
    dcz_bitr gr, ir;                /* the gap and index streams: raw, */
    dcz_huff_reader ghr, ihr;       /* or Huffman-coded */
    union {
        dcz_huff_decoder h;
        dcz_ac_mask_reader m;       /* an arithmetic-coded keep mask */
    } gap;
    union {
        dcz_huff_decoder h;
        dcz_ac_index_reader a;
    } index;
} dcz_entries;

/* Bytes of scratch a reader of t needs (4-byte aligned; 0 for most). */
uint64_t dcz_entries_scratch_bytes(const dcz_tensor_view *t);
dcz_status dcz_entries_begin(dcz_entries *e, const dcz_tensor_view *t, void *scratch);
/* The next stored weight (at most t->nnz): its flat position and, for a
 * CODEBOOK tensor, its codebook index (checked below t->k; else 0). The
 * checks of dcz_gaps_walk, dcz_ac_decode_mask and the decoders; nothing is
 * read past the streams, whatever their bytes. */
dcz_status dcz_entries_next(dcz_entries *e, uint64_t *pos, uint32_t *idx);
/* After the last weight: the streams end as the whole decoders require. */
dcz_status dcz_entries_end(dcz_entries *e);

/* ---- calibration table -------------------------------------------------- */

/* schemes of integer execution: dcz_scheme in dcz.h */
/* Largest magnitude of a scheme's integers: 127 or 32767 (0 if unknown). */
int32_t dcz_scheme_qmax(uint32_t scheme);
/* Scales of a table lie in [DCZ_SCALE_MIN, DCZ_SCALE_MAX]. */
#define DCZ_SCALE_MIN 0x1p-40f
#define DCZ_SCALE_MAX 0x1p+40f

typedef struct dcz_calib_head {
    uint32_t scheme;             /* DCZ_SCHEME_* */
    uint32_t count;              /* entries, one per DENSE or CONV2D layer */
    uint64_t model_hash, data_hash;
} dcz_calib_head;

typedef struct dcz_calib_entry {
    uint32_t layer;              /* graph index of the layer */
    float in_scale;              /* scale of the activations the layer receives */
    uint32_t nw;                 /* weight scales: 1 or the layer's output channels */
    const uint8_t *w_scale;      /* nw float32 */
} dcz_calib_entry;

/* Nonzero when f is a valid scale of scheme (in range; a power of two for
 * the fixed-point schemes). */
int dcz_scale_ok(uint32_t scheme, float f);
/* Reads the head of a CALIB section (a known scheme, count <= DCZ_MAX_LAYERS)
 * and leaves *cur at the first entry. */
dcz_status dcz_calib_begin(const uint8_t *p, size_t len, dcz_cur *cur, dcz_calib_head *h);
/* Reads the next entry and checks its scales with dcz_scale_ok. Layer order
 * and layer kinds are checked by the caller, which knows the graph. */
dcz_status dcz_calib_next(dcz_cur *cur, uint32_t scheme, dcz_calib_entry *e);
/* Reads what may follow the entries: u32 count and count f32 tensor
 * scales, each 0 or valid for scheme (dcz_scale_ok), ending the section.
 * At the section's end already: *count 0, *scales NULL (a table of format
 * 1.2). Whether count fits the graph is checked by the caller. */
dcz_status dcz_calib_tensors(dcz_cur *cur, uint32_t scheme, uint32_t *count,
                             const uint8_t **scales);

#endif /* DCZ_RUNTIME_FORMAT_H */
