/* entries.c: a sparse tensor's stored weights read one at a time from its
 * streams as the file holds them (format.h, dcz_entries; docs/FORMAT.md,
 * "Positions" and "Arithmetic coding").
 *
 * The gap walk is dcz_gaps_walk's, a symbol at a time: a symbol s below
 * the filler F = 2^gap_bits - 1 is a weight at prev + 1 + s, F moves prev
 * on by F. Raw streams are read by the bit reader, Huffman-coded ones by
 * dcz_huff_next, arithmetic-coded ones by arith.h's readers, a symbol at a
 * time (decoding 32 ahead into the reader took 1.6 times as long). The checks are
 * those of the whole decoders, so a tensor read to its end by this reader
 * is one dcz_tensor_positions and dcz_tensor_decode_indices accept.
 *
 * Checked by tests/unit/test_format.c (the two paths agree on every coding,
 * corruptions refused alike) and tests/unit/test_static.c.
 */
#include "runtime/format/format.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

uint64_t dcz_entries_scratch_bytes(const dcz_tensor_view *t)
{
    return t->gap_bits && t->gap_coding == DCZ_CODING_ARITH ? dcz_ac_mask_scratch_bytes((uint32_t)(t->n / t->dims[0]))
                                                            : 0;
}

/* A raw or Huffman-coded stream's reader, its decoder built from its table. */
static dcz_status stream_begin(dcz_bitr *r, dcz_huff_reader *hr, dcz_huff_decoder *h, const uint8_t *table,
                               const uint8_t *data, size_t bytes, unsigned bits)
{
    dcz_bitr_init(r, data, bytes);
    dcz_huff_reader_init(hr, data, bytes);
    if (!table) return DCZ_OK;
    uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
    const unsigned nsym = 1u << bits;
    TRY(dcz_huff_table_read(table, dcz_huff_table_bytes(nsym), nsym, len));
    return dcz_huff_decoder_init(h, len, nsym);
}

static dcz_status stream_next(dcz_bitr *r, dcz_huff_reader *hr, const dcz_huff_decoder *h, const uint8_t *table,
                              unsigned bits, unsigned *v)
{
    if (table) return dcz_huff_next(h, hr, v);
    uint32_t u;
    TRY(dcz_bitr_read(r, bits, &u));
    *v = u;
    return DCZ_OK;
}

dcz_status dcz_entries_begin(dcz_entries *e, const dcz_tensor_view *t, void *scratch)
{
    memset(e, 0, sizeof *e);
    e->t = t;
    e->prev = -1;
    if (t->enc == DCZ_ENC_CODEBOOK && (t->nnz || t->index_coding == DCZ_CODING_ARITH)) {
        if (t->index_coding == DCZ_CODING_ARITH)
            TRY(dcz_ac_indices_begin(&e->index.a, t->index_stream, t->index_bytes, t->index_bits));
        else TRY(stream_begin(&e->ir, &e->ihr, &e->index.h, t->index_table, t->index_stream, t->index_bytes,
                              t->index_bits));
    }
    if (t->gap_bits && t->gap_coding == DCZ_CODING_ARITH)
        return dcz_ac_mask_begin(&e->gap.m, t->gap_stream, t->gap_bytes, t->dims[0], (uint32_t)(t->n / t->dims[0]),
                                 t->nnz, (uint32_t *)scratch);
    if (t->gap_bits && t->gap_count)
        return stream_begin(&e->gr, &e->ghr, &e->gap.h, t->gap_table, t->gap_stream, t->gap_bytes, t->gap_bits);
    return DCZ_OK;
}

static dcz_status next_position(dcz_entries *e, uint64_t *pos)
{
    const dcz_tensor_view *t = e->t;
    if (t->gap_bits == 0) {
        if (t->nnz != t->n) return DCZ_ERR_FORMAT;
        *pos = e->entry;
        return DCZ_OK;
    }
    if (t->gap_coding == DCZ_CODING_ARITH) return dcz_ac_mask_next(&e->gap.m, pos);
    const unsigned filler = (1u << t->gap_bits) - 1;
    while (e->gaps_read < t->gap_count) {
        unsigned s;
        TRY(stream_next(&e->gr, &e->ghr, &e->gap.h, t->gap_table, t->gap_bits, &s));
        e->gaps_read++;
        if (s == filler) {
            e->prev += filler;
            continue;
        }
        const uint64_t p = (uint64_t)(e->prev + 1 + s);
        if (p >= t->n) return DCZ_ERR_FORMAT;
        e->prev = (int64_t)p;
        *pos = p;
        return DCZ_OK;
    }
    return DCZ_ERR_FORMAT;   /* the stream holds fewer than nnz weights */
}

dcz_status dcz_entries_next(dcz_entries *e, uint64_t *pos, uint32_t *idx)
{
    const dcz_tensor_view *t = e->t;
    if (e->entry >= t->nnz) return DCZ_ERR_FORMAT;
    TRY(next_position(e, pos));
    unsigned v = 0;
    if (t->enc == DCZ_ENC_CODEBOOK) {
        if (t->index_coding == DCZ_CODING_ARITH) TRY(dcz_ac_indices_next(&e->index.a, &v));
        else TRY(stream_next(&e->ir, &e->ihr, &e->index.h, t->index_table, t->index_bits, &v));
        if (v >= t->k) return DCZ_ERR_FORMAT;
    }
    *idx = v;
    e->entry++;
    return DCZ_OK;
}

dcz_status dcz_entries_end(dcz_entries *e)
{
    const dcz_tensor_view *t = e->t;
    if (e->entry != t->nnz) return DCZ_ERR_FORMAT;
    if (t->enc == DCZ_ENC_CODEBOOK && t->index_coding == DCZ_CODING_ARITH) TRY(dcz_ac_indices_end(&e->index.a));
    if (t->gap_bits && t->gap_coding == DCZ_CODING_ARITH) return dcz_ac_mask_end(&e->gap.m);
    /* the gap walk ends on its last weight: no filler after it */
    return t->gap_bits == 0 || e->gaps_read == t->gap_count ? DCZ_OK : DCZ_ERR_FORMAT;
}
