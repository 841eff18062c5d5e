/* container.c: reading the .dcz container (docs/FORMAT.md): header, section
 * table, graph records, tensor records and their streams, all validated
 * before use. Nothing here allocates; everything points into the caller's
 * buffer.
 *
 * The operator rules (attribute limits, shape chaining, parameter shapes)
 * live here too, so the loader and the toolchain's reader and writer apply
 * the same ones.
 *
 * Checked by tests/unit/test_format.c (round trips, shape errors, every
 * single-byte corruption and every truncation of a dense and a conv file)
 * and tests/fuzz/fuzz_dcz.c.
 */
#include <math.h>
#include <string.h>

#include "huffman/arith.h"
#include "huffman/huffman.h"
#include "runtime/format/format.h"

#ifndef DCZ_SMALL
#include "runtime/format/crc32_table.h"
#endif

const uint8_t dcz_magic[8] = { 0x89, 'D', 'C', 'Z', 0x0D, 0x0A, 0x1A, 0x0A };

/* ---- scalars ------------------------------------------------------------ */

dcz_status dcz_rd_u8(dcz_cur *c, uint8_t *v)
{
    if (!dcz_cur_has(c, 1)) return DCZ_ERR_FORMAT;
    *v = c->p[c->pos++];
    return DCZ_OK;
}

dcz_status dcz_rd_u16(dcz_cur *c, uint16_t *v)
{
    if (!dcz_cur_has(c, 2)) return DCZ_ERR_FORMAT;
    *v = (uint16_t)(c->p[c->pos] | c->p[c->pos + 1] << 8);
    c->pos += 2;
    return DCZ_OK;
}

dcz_status dcz_rd_u32(dcz_cur *c, uint32_t *v)
{
    if (!dcz_cur_has(c, 4)) return DCZ_ERR_FORMAT;
    *v = dcz_le32(c->p + c->pos);
    c->pos += 4;
    return DCZ_OK;
}

dcz_status dcz_rd_u64(dcz_cur *c, uint64_t *v)
{
    if (!dcz_cur_has(c, 8)) return DCZ_ERR_FORMAT;
    *v = (uint64_t)dcz_le32(c->p + c->pos) | (uint64_t)dcz_le32(c->p + c->pos + 4) << 32;
    c->pos += 8;
    return DCZ_OK;
}

dcz_status dcz_rd_f32(dcz_cur *c, float *v)
{
    uint32_t u;
    dcz_status s = dcz_rd_u32(c, &u);
    if (s == DCZ_OK) *v = dcz_f32_from_bits(u);
    return s;
}

dcz_status dcz_rd_bytes(dcz_cur *c, size_t n, const uint8_t **p)
{
    if (!dcz_cur_has(c, n)) return DCZ_ERR_FORMAT;
    *p = c->p + c->pos;
    c->pos += n;
    return DCZ_OK;
}

float dcz_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return dcz_f32_from_bits(sign | 0x7f800000u | man << 13);
    if (exp == 0) {
        if (man == 0) return dcz_f32_from_bits(sign);
        /* subnormal: normalize */
        int e = -1;
        do { man <<= 1; e++; } while (!(man & 0x400));
        man &= 0x3ff;
        return dcz_f32_from_bits(sign | (uint32_t)(127 - 15 - e) << 23 | man << 13);
    }
    return dcz_f32_from_bits(sign | (exp + 127 - 15) << 23 | man << 13);
}

uint16_t dcz_f32_to_f16(float f)
{
    uint32_t u = dcz_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t absu = u & 0x7fffffffu;
    if (absu >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0));
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to inf */
    if (absu < 0x38800000u) { /* subnormal or zero in half */
        if (absu < 0x33000000u) return sign;
        uint32_t man = (absu & 0x7fffff) | 0x800000;
        int shift = 126 - (int)(absu >> 23); /* 14 .. 24 */
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = ((absu >> 13) - ((127 - 15) << 10));
    uint32_t rem = absu & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

#ifndef DCZ_SMALL
/* Eight bytes a step (slicing by 8): the CRC's four bytes folded into the
 * first four of the step, then each of the eight bytes looked up in the
 * table of what it becomes with the bytes after it in the step shifted in
 * (crc32_table.h), the eight words XORed; the bytes before and after by
 * the byte table. The same CRC as a byte at a time (tests/unit/test_format.c
 * checks it against the polynomial bit by bit), about five times faster
 * (0.45 -> 2.4 GB/s over 64 MB, one core of an AMD EPYC): loading a file
 * checks every section's CRC, and the CRC was 40% of loading torchvision's
 * ResNet-50 (102 MB, 440 ms). The
 * words are assembled from bytes, so the result does not depend on the
 * host's byte order. */
uint32_t dcz_crc32(uint32_t crc, const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    const uint32_t(*t)[256] = dcz_crc32_table;
    crc = ~crc;
    for (; n && ((uintptr_t)b & 7); n--, b++) crc = t[0][(crc ^ *b) & 0xff] ^ (crc >> 8);
    for (; n >= 8; n -= 8, b += 8) {
        const uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
        crc = t[7][lo & 0xff] ^ t[6][lo >> 8 & 0xff] ^ t[5][lo >> 16 & 0xff] ^ t[4][lo >> 24] ^ t[3][b[4]] ^
              t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]];
    }
    for (; n; n--, b++) crc = t[0][(crc ^ *b) & 0xff] ^ (crc >> 8);
    return ~crc;
}
#else
/* A build for size (DCZ_SMALL, make mcu): the same CRC four bits at a
 * time, from a table of 16 words (every 16th of the byte table: entry 16 i
 * is the CRC of the nibble i shifted in), not 256. */
uint32_t dcz_crc32(uint32_t crc, const void *p, size_t n)
{
    static const uint32_t nib[16] = {
        0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
        0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu, 0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
    };
    const uint8_t *b = (const uint8_t *)p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= b[i];
        crc = nib[crc & 15] ^ (crc >> 4);
        crc = nib[crc & 15] ^ (crc >> 4);
    }
    return ~crc;
}
#endif

/* ---- container ---------------------------------------------------------- */

void dcz_container_section(const dcz_container *c, uint32_t i, dcz_section *s)
{
    const uint8_t *e = c->table + (size_t)i * DCZ_SECTION_ENTRY_BYTES;
    dcz_cur cur;
    dcz_cur_init(&cur, e, DCZ_SECTION_ENTRY_BYTES);
    /* cannot fail: the entry lies inside the validated table */
    (void)dcz_rd_u32(&cur, &s->type);
    (void)dcz_rd_u32(&cur, &s->flags);
    (void)dcz_rd_u64(&cur, &s->offset);
    (void)dcz_rd_u64(&cur, &s->size);
    (void)dcz_rd_u32(&cur, &s->crc);
    (void)dcz_rd_u32(&cur, &s->reserved);
}

static int known_section(uint32_t type)
{
    return type == DCZ_SEC_GRAPH || type == DCZ_SEC_LAYER || type == DCZ_SEC_STAGE;
}

dcz_status dcz_container_open(const void *buf, size_t len, dcz_container *c)
{
    const uint8_t *b = (const uint8_t *)buf;
    memset(c, 0, sizeof *c);
    if (!buf || len < DCZ_HEADER_BYTES || memcmp(b, dcz_magic, 8) != 0) return DCZ_ERR_FORMAT;
    dcz_cur cur;
    dcz_cur_init(&cur, b, len);
    cur.pos = 8;
    uint64_t file_size;
    uint32_t header_crc;
    (void)dcz_rd_u16(&cur, &c->major);
    (void)dcz_rd_u16(&cur, &c->minor);
    (void)dcz_rd_u32(&cur, &c->flags);
    (void)dcz_rd_u64(&cur, &file_size);
    (void)dcz_rd_u32(&cur, &c->nsections);
    (void)dcz_rd_u32(&cur, &header_crc);
    if (c->major != 1 && c->major != DCZ_FMT_MAJOR) return DCZ_ERR_VERSION;
    if (file_size != len) return DCZ_ERR_FORMAT;
    if (c->nsections == 0 || c->nsections > DCZ_MAX_SECTIONS) return DCZ_ERR_FORMAT;
    size_t table_end = DCZ_HEADER_BYTES + (size_t)c->nsections * DCZ_SECTION_ENTRY_BYTES;
    if (table_end > len) return DCZ_ERR_FORMAT;

    /* header CRC: bytes 0..63 with the CRC field zeroed, then the table */
    uint8_t head[DCZ_HEADER_BYTES];
    memcpy(head, b, DCZ_HEADER_BYTES);
    memset(head + 28, 0, 4);
    uint32_t crc = dcz_crc32(0, head, DCZ_HEADER_BYTES);
    crc = dcz_crc32(crc, b + DCZ_HEADER_BYTES, table_end - DCZ_HEADER_BYTES);
    if (crc != header_crc) return DCZ_ERR_CRC;

    c->base = b;
    c->len = len;
    c->table = b + DCZ_HEADER_BYTES;
    uint64_t prev_end = table_end;
    uint32_t graphs = 0;
    for (uint32_t i = 0; i < c->nsections; i++) {
        dcz_section s;
        dcz_container_section(c, i, &s);
        if (s.offset % DCZ_ALIGN != 0 || s.offset < prev_end) return DCZ_ERR_FORMAT;
        if ((s.flags & ~DCZ_SECF_REQUIRED) != 0 || s.reserved != 0) return DCZ_ERR_FORMAT;
        if (s.offset > len || s.size > len - s.offset) return DCZ_ERR_FORMAT;
        /* padding before a section is zero and under no CRC: check it */
        for (uint64_t p = prev_end; p < s.offset; p++)
            if (b[p] != 0) return DCZ_ERR_FORMAT;
        prev_end = s.offset + s.size;
        if (dcz_crc32(0, b + s.offset, (size_t)s.size) != s.crc) return DCZ_ERR_CRC;
        if (!known_section(s.type) && (s.flags & DCZ_SECF_REQUIRED)) return DCZ_ERR_UNSUPPORTED;
        if (s.type == DCZ_SEC_GRAPH) graphs++;
    }
    if (prev_end != len || graphs != 1) return DCZ_ERR_FORMAT;
    return DCZ_OK;
}

/* ---- graph -------------------------------------------------------------- */

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

/* ---- the PREPROCESS section ----------------------------------------------- */

dcz_status dcz_prep_parse(const uint8_t *p, size_t len, dcz_preprocess *out)
{
    dcz_cur c = { p, len, 0 };
    memset(out, 0, sizeof *out);
    out->std[0] = out->std[1] = out->std[2] = 1.0f;   /* channels it does not have: as is */
    TRY(dcz_rd_u32(&c, &out->resize));
    TRY(dcz_rd_u32(&c, &out->crop_h));
    TRY(dcz_rd_u32(&c, &out->crop_w));
    TRY(dcz_rd_u32(&c, &out->channels));
    if (out->resize > 65535 || out->crop_h > 65535 || out->crop_w > 65535 || (out->crop_h == 0) != (out->crop_w == 0) ||
        (out->channels != 1 && out->channels != 3))
        return DCZ_ERR_FORMAT;
    for (uint32_t k = 0; k < out->channels; k++) TRY(dcz_rd_f32(&c, &out->mean[k]));
    for (uint32_t k = 0; k < out->channels; k++) {
        TRY(dcz_rd_f32(&c, &out->std[k]));
        if (!isfinite(out->mean[k]) || !isfinite(out->std[k]) || !(out->std[k] > 0.0f))
            return DCZ_ERR_FORMAT;
    }
    return c.pos == len ? DCZ_OK : DCZ_ERR_FORMAT;
}

dcz_status dcz_prep_find(const dcz_container *c, const dcz_shape *input, dcz_preprocess *out, int *found)
{
    *found = 0;
    for (uint32_t i = 0; i < c->nsections; i++) {
        dcz_section s;
        dcz_container_section(c, i, &s);
        if (s.type != DCZ_SEC_PREP) continue;
        if (*found) return DCZ_ERR_FORMAT;
        TRY(dcz_prep_parse(c->base + s.offset, (size_t)s.size, out));
        if (input->rank != 3 || input->dims[0] != out->channels ||
            (out->crop_h && (input->dims[1] != out->crop_h || input->dims[2] != out->crop_w)))
            return DCZ_ERR_FORMAT;
        *found = 1;
    }
    return DCZ_OK;
}

dcz_status dcz_graph_begin(const dcz_container *c, dcz_graph_walk *w)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    for (uint32_t i = 0; i < c->nsections; i++) {
        dcz_section s;
        dcz_container_section(c, i, &s);
        if (s.type != DCZ_SEC_GRAPH) continue;
        dcz_cur_init(&w->cur, c->base + s.offset, (size_t)s.size);
        break;
    }
    TRY(dcz_rd_u32(&w->cur, &w->nlayers));
    TRY(dcz_rd_u32(&w->cur, &w->input.rank));
    if (w->nlayers == 0 || w->nlayers > DCZ_MAX_LAYERS) return DCZ_ERR_FORMAT;
    if (w->input.rank == 0 || w->input.rank > DCZ_MAX_RANK) return DCZ_ERR_FORMAT;
    for (uint32_t i = 0; i < w->input.rank; i++) {
        TRY(dcz_rd_u32(&w->cur, &w->input.dims[i]));
        if (w->input.dims[i] == 0 || w->input.dims[i] > DCZ_MAX_DIM) return DCZ_ERR_FORMAT;
    }
    return dcz_shape_count(&w->input) <= DCZ_MAX_ACT ? DCZ_OK : DCZ_ERR_FORMAT;
}

static int name_char_ok(uint8_t ch)
{
    return ch > 0x20 && ch < 0x7f && ch != '=' && ch != ',';
}

/* The inputs of a record of format 2: each an earlier tensor (0 the model
 * input, j + 1 the output of layer j < this one), marked as read. */
static dcz_status read_inputs(dcz_graph_walk *w, dcz_graph_layer *l)
{
    TRY(dcz_rd_u32(&w->cur, &l->nin));
    if (l->nin == 0 || l->nin > DCZ_MAX_INPUTS) return DCZ_ERR_FORMAT;
    for (uint32_t i = 0; i < l->nin; i++) {
        TRY(dcz_rd_u32(&w->cur, &l->in[i]));
        if (l->in[i] > w->next) return DCZ_ERR_FORMAT;
    }
    return DCZ_OK;
}

dcz_status dcz_graph_next(dcz_graph_walk *w, dcz_graph_layer *l)
{
    const dcz_container *c = w->c;
    uint16_t name_len;
    const uint8_t *name;
    memset(l, 0, sizeof *l);
    if (w->next >= w->nlayers) return DCZ_ERR_FORMAT;
    TRY(dcz_rd_u16(&w->cur, &l->op));
    TRY(dcz_rd_u16(&w->cur, &name_len));
    if (name_len == 0 || name_len > DCZ_MAX_NAME) return DCZ_ERR_FORMAT;
    TRY(dcz_rd_bytes(&w->cur, name_len, &name));
    for (uint16_t i = 0; i < name_len; i++)
        if (!name_char_ok(name[i])) return DCZ_ERR_FORMAT;
    memcpy(l->name, name, name_len);
    if (c->major == 1) {
        /* a chain of the ops 1.x knew: each layer reads the one before */
        if (l->op > DCZ_OP_FLATTEN) return DCZ_ERR_UNSUPPORTED;
        l->nin = 1;
        l->in[0] = w->next;
    } else {
        TRY(read_inputs(w, l));
    }
    TRY(dcz_rd_u32(&w->cur, &l->nattr));
    if (l->nattr > DCZ_MAX_ATTRS) return DCZ_ERR_FORMAT;
    for (uint32_t i = 0; i < l->nattr; i++) {
        uint32_t u;
        TRY(dcz_rd_u32(&w->cur, &u));
        l->attr[i] = (int32_t)u;
    }
    /* 1.x convolutions have no group: one */
    if (c->major == 1 && l->op == DCZ_OP_CONV2D && l->nattr == 8) l->attr[l->nattr++] = 1;
    TRY(dcz_rd_u32(&w->cur, &l->param_section));
    int want_params;
    TRY(dcz_op_check(l->op, l->attr, l->nattr, &want_params));
    const dcz_op_info *o = dcz_op_get(l->op);
    if (l->nin < o->min_in || l->nin > o->max_in) return DCZ_ERR_FORMAT;
    for (uint32_t i = 0; i < l->nin; i++)
        if (l->in[i] > 0) w->read[(l->in[i] - 1) / 8] |= (uint8_t)(1u << ((l->in[i] - 1) % 8));
    w->next++;
    if (!want_params) return l->param_section == DCZ_NO_SECTION ? DCZ_OK : DCZ_ERR_FORMAT;
    if (l->param_section >= c->nsections || l->param_section < w->min_param) return DCZ_ERR_FORMAT;
    w->min_param = l->param_section + 1;
    dcz_section s;
    dcz_container_section(c, l->param_section, &s);
    return s.type == DCZ_SEC_LAYER ? DCZ_OK : DCZ_ERR_FORMAT;
}

dcz_status dcz_graph_end(const dcz_graph_walk *w)
{
    if (w->next != w->nlayers || w->cur.pos != w->cur.len) return DCZ_ERR_FORMAT;
    for (uint32_t j = 0; j + 1 < w->nlayers; j++)
        if (!(w->read[j / 8] >> (j % 8) & 1)) return DCZ_ERR_FORMAT;
    return DCZ_OK;
}

/* ---- tensors ------------------------------------------------------------ */

dcz_status dcz_layer_begin(const uint8_t *p, size_t len, dcz_cur *cur, uint32_t *ntensors)
{
    dcz_cur_init(cur, p, len);
    TRY(dcz_rd_u32(cur, ntensors));
    if (*ntensors == 0 || *ntensors > DCZ_MAX_TENSORS) return DCZ_ERR_FORMAT;
    return DCZ_OK;
}

/* A stream block: u32 total bytes, then (Huffman) the length table, then data
 * whose size must match count symbols of width bits exactly when raw; an
 * arithmetic-coded stream has at least its four opening bytes. Codings
 * this reader does not know make the file unsupported. */
static dcz_status read_stream(dcz_cur *cur, unsigned bits, uint8_t coding, uint64_t count,
                              const uint8_t **table, const uint8_t **data, size_t *data_bytes)
{
    uint32_t bytes;
    const uint8_t *p;
    TRY(dcz_rd_u32(cur, &bytes));
    TRY(dcz_rd_bytes(cur, bytes, &p));
    *table = NULL;
    *data = p;
    *data_bytes = bytes;
    switch (coding) {
    case DCZ_CODING_RAW:
        return (uint64_t)bytes == (count * bits + 7) / 8 ? DCZ_OK : DCZ_ERR_FORMAT;
    case DCZ_CODING_ARITH:
        return bytes >= 4 ? DCZ_OK : DCZ_ERR_FORMAT;
    case DCZ_CODING_HUFFMAN:
        break;
    default:
        return DCZ_ERR_UNSUPPORTED;
    }
    size_t tb = dcz_huff_table_bytes(1u << bits);
    if (bytes < tb) return DCZ_ERR_FORMAT;
    /* a symbol costs at least one bit */
    if ((uint64_t)(bytes - tb) * 8 < count) return DCZ_ERR_FORMAT;
    *table = p;
    *data = p + tb;
    *data_bytes = bytes - tb;
    return DCZ_OK;
}

static dcz_status read_sparse_head(dcz_cur *cur, dcz_tensor_view *t)
{
    TRY(dcz_rd_u32(cur, &t->nnz));
    TRY(dcz_rd_u32(cur, &t->gap_count));
    TRY(dcz_rd_u8(cur, &t->gap_bits));
    TRY(dcz_rd_u8(cur, &t->gap_coding));
    if (t->nnz > t->n || t->gap_bits > 8) return DCZ_ERR_FORMAT;
    if (t->gap_bits == 0) {
        if (t->nnz != t->n || t->gap_count != 0) return DCZ_ERR_FORMAT;
    } else if (t->gap_coding == DCZ_CODING_ARITH) {
        /* a keep mask: one flag of one bit per position */
        if (t->gap_bits != 1 || t->gap_count != t->n) return DCZ_ERR_FORMAT;
    } else {
        /* every symbol is an entry or a filler advancing >= 1 position */
        if (t->gap_count < t->nnz || (uint64_t)t->gap_count > (uint64_t)t->nnz + t->n)
            return DCZ_ERR_FORMAT;
    }
    return DCZ_OK;
}

static dcz_status read_gap_stream(dcz_cur *cur, dcz_tensor_view *t)
{
    if (t->gap_bits == 0) return t->gap_coding == DCZ_CODING_RAW ? DCZ_OK : DCZ_ERR_FORMAT;
    return read_stream(cur, t->gap_bits, t->gap_coding, t->gap_count, &t->gap_table,
                       &t->gap_stream, &t->gap_bytes);
}

dcz_status dcz_tensor_next(dcz_cur *cur, dcz_tensor_view *t)
{
    size_t start = cur->pos;
    uint32_t payload_bytes;
    const uint8_t *payload;
    memset(t, 0, sizeof *t);
    TRY(dcz_rd_u32(cur, &t->enc));
    TRY(dcz_rd_u32(cur, &t->rank));
    if (t->rank == 0 || t->rank > DCZ_MAX_RANK) return DCZ_ERR_FORMAT;
    t->n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        TRY(dcz_rd_u32(cur, &t->dims[i]));
        if (t->dims[i] == 0) return DCZ_ERR_FORMAT;
        t->n *= t->dims[i];
        if (t->n > 0xFFFFFFFFu) return DCZ_ERR_FORMAT;
    }
    TRY(dcz_rd_u32(cur, &payload_bytes));
    TRY(dcz_rd_bytes(cur, payload_bytes, &payload));
    /* records are padded with zeros to a multiple of 4 bytes */
    size_t pad = (4 - (cur->pos - start) % 4) % 4;
    const uint8_t *padp;
    TRY(dcz_rd_bytes(cur, pad, &padp));
    for (size_t i = 0; i < pad; i++)
        if (padp[i] != 0) return DCZ_ERR_FORMAT;
    t->record_bytes = cur->pos - start;

    dcz_cur pc;
    dcz_cur_init(&pc, payload, payload_bytes);
    switch (t->enc) {
    case DCZ_ENC_F32:
        if (payload_bytes != t->n * 4) return DCZ_ERR_FORMAT;
        t->payload = payload;
        return DCZ_OK;
    case DCZ_ENC_F16:
        if (payload_bytes != t->n * 2) return DCZ_ERR_FORMAT;
        t->payload = payload;
        return DCZ_OK;
    case DCZ_ENC_I8:
    case DCZ_ENC_I16: {
        /* u32 scale count (1 or dims[0]), the scales, then the integers */
        const unsigned width = t->enc == DCZ_ENC_I8 ? 1 : 2;
        TRY(dcz_rd_u32(&pc, &t->nscale));
        if (t->nscale != 1 && t->nscale != t->dims[0]) return DCZ_ERR_FORMAT;
        TRY(dcz_rd_bytes(&pc, (size_t)t->nscale * 4, &t->scales));
        for (uint32_t i = 0; i < t->nscale; i++) {
            float f = dcz_f32_from_bits(dcz_le32(t->scales + (size_t)i * 4));
            if (!(f >= DCZ_SCALE_MIN && f <= DCZ_SCALE_MAX)) return DCZ_ERR_FORMAT;
        }
        TRY(dcz_rd_bytes(&pc, (size_t)t->n * width, &t->payload));
        /* symmetric ranges: -128 and -32768 are not values of the format */
        for (uint64_t i = 0; i < t->n; i++)
            if (width == 1 ? t->payload[i] == 0x80
                           : t->payload[2 * i] == 0 && t->payload[2 * i + 1] == 0x80)
                return DCZ_ERR_FORMAT;
        break;
    }
    case DCZ_ENC_SPARSE_F32: {
        uint16_t reserved;
        TRY(read_sparse_head(&pc, t));
        TRY(dcz_rd_u16(&pc, &reserved));
        if (reserved != 0) return DCZ_ERR_FORMAT;
        TRY(dcz_rd_bytes(&pc, (size_t)t->nnz * 4, &t->values));
        TRY(read_gap_stream(&pc, t));
        break;
    }
    case DCZ_ENC_CODEBOOK: {
        uint16_t k, cb_format;
        TRY(read_sparse_head(&pc, t));
        TRY(dcz_rd_u8(&pc, &t->index_bits));
        TRY(dcz_rd_u8(&pc, &t->index_coding));
        TRY(dcz_rd_u16(&pc, &k));
        TRY(dcz_rd_u16(&pc, &cb_format));   /* 0 f32, 1 f16 (format 2.2) */
        if (cb_format > DCZ_CODEBOOK_F16) return DCZ_ERR_FORMAT;
        if (t->index_bits == 0 || t->index_bits > 8) return DCZ_ERR_FORMAT;
        if (k == 0 || k > (1u << t->index_bits)) return DCZ_ERR_FORMAT;
        t->k = k;
        t->codebook_f16 = (uint8_t)cb_format;
        TRY(dcz_rd_bytes(&pc, (size_t)k * (cb_format ? 2 : 4), &t->codebook));
        TRY(read_stream(&pc, t->index_bits, t->index_coding, t->nnz, &t->index_table,
                        &t->index_stream, &t->index_bytes));
        TRY(read_gap_stream(&pc, t));
        break;
    }
    default:
        return DCZ_ERR_UNSUPPORTED;
    }
    return pc.pos == pc.len ? DCZ_OK : DCZ_ERR_FORMAT;
}

float dcz_tensor_codebook_at(const dcz_tensor_view *t, uint32_t i)
{
    const uint8_t *p = t->codebook;
    return t->codebook_f16 ? dcz_f16_to_f32((uint16_t)(p[i * 2] | p[i * 2 + 1] << 8))
                           : dcz_f32_from_bits(dcz_le32(p + i * 4));
}

static dcz_status decode_stream(uint8_t coding, const uint8_t *table, const uint8_t *data, size_t bytes,
                                unsigned bits, uint8_t *out, size_t count)
{
    if (coding == DCZ_CODING_ARITH) return dcz_ac_decode_indices(data, bytes, bits, out, count);
    if (!table) return dcz_bits_unpack(data, bytes, bits, out, count);
    dcz_huff_decoder d;
    uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
    unsigned nsym = 1u << bits;
    TRY(dcz_huff_table_read(table, dcz_huff_table_bytes(nsym), nsym, len));
    TRY(dcz_huff_decoder_init(&d, len, nsym));
    return dcz_huff_decode(&d, data, bytes, out, count);
}

dcz_status dcz_tensor_decode_indices(const dcz_tensor_view *t, uint8_t *idx)
{
    if (t->enc != DCZ_ENC_CODEBOOK) return DCZ_OK;
    /* an arithmetic-coded stream of no index still has its opening bytes */
    if (t->nnz == 0 && t->index_coding != DCZ_CODING_ARITH) return DCZ_OK;
    TRY(decode_stream(t->index_coding, t->index_table, t->index_stream, t->index_bytes, t->index_bits,
                      idx, t->nnz));
    for (uint32_t i = 0; i < t->nnz; i++)
        if (idx[i] >= t->k) return DCZ_ERR_FORMAT;
    return DCZ_OK;
}

uint64_t dcz_tensor_positions_scratch(const dcz_tensor_view *t)
{
    if (t->gap_bits == 0) return 0;
    if (t->gap_coding == DCZ_CODING_ARITH) return dcz_ac_mask_scratch_bytes((uint32_t)(t->n / t->dims[0]));
    return t->gap_count;
}

dcz_status dcz_tensor_positions(const dcz_tensor_view *t, void *scratch, dcz_pos_fn fn, void *ctx)
{
    if (t->gap_bits && t->gap_coding == DCZ_CODING_ARITH)
        return dcz_ac_decode_mask(t->gap_stream, t->gap_bytes, t->dims[0], (uint32_t)(t->n / t->dims[0]),
                                  t->nnz, (uint32_t *)scratch, fn, ctx);
    if (t->gap_bits && t->gap_count)
        TRY(decode_stream(t->gap_coding, t->gap_table, t->gap_stream, t->gap_bytes, t->gap_bits,
                          (uint8_t *)scratch, t->gap_count));
    return dcz_gaps_walk((const uint8_t *)scratch, t->gap_count, t->gap_bits, t->nnz, t->n, fn, ctx);
}

/* Gap semantics (FORMAT.md, "Positions"): prev starts at -1; a symbol
 * s < F = 2^bits - 1 is an entry at prev + 1 + s; s == F is a filler that
 * advances prev by F without an entry. */
dcz_status dcz_gaps_walk(const uint8_t *gaps, uint32_t gap_count, unsigned gap_bits,
                         uint32_t nnz, uint64_t n, dcz_pos_fn fn, void *ctx)
{
    if (gap_bits == 0) {
        if (nnz != n) return DCZ_ERR_FORMAT;
        for (uint32_t i = 0; i < nnz; i++) TRY(fn(ctx, i, i));
        return DCZ_OK;
    }
    const uint32_t filler = (1u << gap_bits) - 1;
    int64_t prev = -1;
    uint32_t entry = 0;
    int trailing_filler = 0;
    for (uint32_t i = 0; i < gap_count; i++) {
        if (gaps[i] == filler) {
            prev += filler;
            trailing_filler = 1;
            continue;
        }
        uint64_t pos = (uint64_t)(prev + 1 + gaps[i]);
        if (pos >= n || entry >= nnz) return DCZ_ERR_FORMAT;
        TRY(fn(ctx, entry, pos));
        entry++;
        prev = (int64_t)pos;
        trailing_filler = 0;
    }
    return entry == nnz && !trailing_filler ? DCZ_OK : DCZ_ERR_FORMAT;
}
