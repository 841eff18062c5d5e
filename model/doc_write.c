/* doc_write.c: encoding a dcz_doc into .dcz bytes (docs/FORMAT.md).
 *
 * Sections are laid out in a fixed order (graph, one LAYER section per layer
 * with parameters, calibration table, preprocessing, stages), each at a
 * 64-byte boundary, padding zeroed, so the same document always gives the
 * same bytes; a document without stage records is written without a STAGES
 * section (dcz_doc_clear_stages: `--strip`). Sparse tensors become a
 * position stream (gaps, or a keep mask) and (codebook) an index stream,
 * each raw, Huffman- or arithmetic-coded; dcz_doc_tensor_choose_codings
 * picks the smallest.
 *
 * Checked by tests/unit/test_format.c and tests/unit/test_arith.c (the
 * choice of codings, files of coding 2).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "huffman/arith.h"
#include "huffman/huffman.h"
#include "model/doc.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
    int err;
} wbuf;

static uint8_t *wb_grow(wbuf *w, size_t n)
{
    if (w->err) return NULL;
    if (n > SIZE_MAX - w->len) { w->err = 1; return NULL; }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n) cap *= 2;
        uint8_t *p = realloc(w->p, cap);
        if (!p) { w->err = 1; return NULL; }
        w->p = p;
        w->cap = cap;
    }
    uint8_t *at = w->p + w->len;
    w->len += n;
    return at;
}

static void put_bytes(wbuf *w, const void *p, size_t n)
{
    uint8_t *at = wb_grow(w, n);
    if (at && n) memcpy(at, p, n);
}
static void put_zeros(wbuf *w, size_t n)
{
    uint8_t *at = wb_grow(w, n);
    if (at && n) memset(at, 0, n);
}
static void put8(wbuf *w, uint8_t v) { put_bytes(w, &v, 1); }
static void put16(wbuf *w, uint16_t v)
{
    uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    put_bytes(w, b, 2);
}
static void put32(wbuf *w, uint32_t v)
{
    uint8_t b[4];
    dcz_put32(b, v);
    put_bytes(w, b, 4);
}
static void put64(wbuf *w, uint64_t v)
{
    put32(w, (uint32_t)v);
    put32(w, (uint32_t)(v >> 32));
}
static void putf32(wbuf *w, float f) { put32(w, dcz_f32_bits(f)); }

/* ---- symbol streams ----------------------------------------------------- */

static int stored(const dcz_doc_tensor *t, size_t i) { return !t->mask || t->mask[i]; }

dcz_status dcz_doc_tensor_streams(const dcz_doc_tensor *t, uint8_t **idx_out, uint32_t *nnz_out,
                                  uint8_t **gaps_out, uint32_t *gap_count_out)
{
    uint64_t nnz = 0, gap_count = 0;
    const uint32_t filler = t->gap_bits ? (1u << t->gap_bits) - 1 : 0;
    int64_t prev = -1;
    for (size_t i = 0; i < t->n; i++) {
        if (!stored(t, i)) continue;
        nnz++;
        if (t->gap_bits) gap_count += (uint64_t)(i - prev - 1) / filler + 1;
        prev = (int64_t)i;
    }
    if (nnz > 0xFFFFFFFFu || gap_count > 0xFFFFFFFFu) return DCZ_ERR_ARG;
    if (!t->gap_bits && nnz != t->n) return DCZ_ERR_ARG;
    uint8_t *idx = NULL, *gaps = NULL;
    if (idx_out) {
        if (!t->assign) return DCZ_ERR_ARG;
        idx = malloc(nnz ? nnz : 1);
        if (!idx) return DCZ_ERR_NOMEM;
    }
    if (gaps_out) {
        gaps = malloc(gap_count ? gap_count : 1);
        if (!gaps) { free(idx); return DCZ_ERR_NOMEM; }
    }
    size_t e = 0, g = 0;
    prev = -1;
    for (size_t i = 0; i < t->n; i++) {
        if (!stored(t, i)) continue;
        if (idx) {
            if (t->assign[i] >= t->k) { free(idx); free(gaps); return DCZ_ERR_ARG; }
            idx[e] = t->assign[i];
        }
        e++;
        if (t->gap_bits) {
            uint64_t d = (uint64_t)(i - prev - 1);
            while (d >= filler) {
                if (gaps) gaps[g] = (uint8_t)filler;
                g++;
                d -= filler;
            }
            if (gaps) gaps[g] = (uint8_t)d;
            g++;
        }
        prev = (int64_t)i;
    }
    if (idx_out) *idx_out = idx;
    if (gaps_out) *gaps_out = gaps;
    if (nnz_out) *nnz_out = (uint32_t)nnz;
    if (gap_count_out) *gap_count_out = (uint32_t)gap_count;
    return DCZ_OK;
}

/* The sizes of a stream block's Huffman table (0 when raw or arithmetic)
 * and data, and the code lengths when Huffman-coded. */
static dcz_status stream_size(const uint8_t *sym, uint32_t count, unsigned bits, uint8_t coding,
                              uint8_t *len, size_t *table_bytes, size_t *data_bytes)
{
    const unsigned nsym = 1u << bits;
    *table_bytes = 0;
    if (coding == DCZ_CODING_HUFFMAN) {
        uint64_t freq[DCZ_HUFF_MAX_SYMBOLS] = { 0 };
        for (uint32_t i = 0; i < count; i++) freq[sym[i]]++;
        TRY(dcz_huff_lengths(freq, nsym, DCZ_HUFF_MAX_LEN, len));
        *table_bytes = dcz_huff_table_bytes(nsym);
        *data_bytes = (size_t)((dcz_huff_cost_bits(len, sym, count) + 7) / 8);
    } else if (coding == DCZ_CODING_RAW) {
        *data_bytes = (size_t)(((uint64_t)count * bits + 7) / 8);
    } else if (coding == DCZ_CODING_ARITH) {
        TRY(dcz_ac_encode_indices(sym, count, bits, NULL, 0, data_bytes));
    } else {
        return DCZ_ERR_ARG;
    }
    return *table_bytes + *data_bytes > 0xFFFFFFFFu ? DCZ_ERR_ARG : DCZ_OK;
}

/* A stream block: u32 bytes, Huffman table when coded, then the data. */
static dcz_status put_stream(wbuf *w, const uint8_t *sym, uint32_t count, unsigned bits,
                             uint8_t coding, size_t *block_bytes)
{
    const unsigned nsym = 1u << bits;
    size_t data_bytes, table_bytes, used;
    uint8_t len[DCZ_HUFF_MAX_SYMBOLS];
    TRY(stream_size(sym, count, bits, coding, len, &table_bytes, &data_bytes));
    put32(w, (uint32_t)(table_bytes + data_bytes));
    if (coding == DCZ_CODING_HUFFMAN) {
        uint8_t *tab = wb_grow(w, table_bytes);
        if (tab) dcz_huff_table_write(len, nsym, tab);
    }
    uint8_t *data = wb_grow(w, data_bytes);
    if (!data) return DCZ_ERR_NOMEM;
    if (coding == DCZ_CODING_HUFFMAN) {
        TRY(dcz_huff_encode(len, nsym, sym, count, data, data_bytes, &used));
    } else if (coding == DCZ_CODING_ARITH) {
        TRY(dcz_ac_encode_indices(sym, count, bits, data, data_bytes, &used));
    } else {
        TRY(dcz_bits_pack(sym, count, bits, data, data_bytes));
    }
    *block_bytes = 4 + table_bytes + data_bytes;
    return DCZ_OK;
}

/* The keep mask of t as flags (malloc'd), rows dims[0] by the rest. */
static dcz_status keep_flags(const dcz_doc_tensor *t, uint8_t **out)
{
    uint8_t *keep = malloc(t->n ? t->n : 1);
    if (!keep) return DCZ_ERR_NOMEM;
    for (size_t i = 0; i < t->n; i++) keep[i] = (uint8_t)stored(t, i);
    *out = keep;
    return DCZ_OK;
}

/* The keep mask of t arithmetic-coded: its bytes (out NULL: counted only). */
static dcz_status mask_code(const dcz_doc_tensor *t, uint8_t *out, size_t cap, size_t *used)
{
    uint8_t *keep;
    if (t->rank == 0 || t->dims[0] == 0 || t->n % t->dims[0] != 0 || t->n / t->dims[0] > 0xFFFFFFFFu)
        return DCZ_ERR_ARG;
    TRY(keep_flags(t, &keep));
    dcz_status s = dcz_ac_encode_mask(keep, t->dims[0], (uint32_t)(t->n / t->dims[0]), out, cap, used);
    free(keep);
    if (s == DCZ_OK && *used > 0xFFFFFFFFu) s = DCZ_ERR_ARG;
    return s;
}

/* The position block of a mask-coded tensor: u32 bytes, then the code. */
static dcz_status put_mask(wbuf *w, const dcz_doc_tensor *t, size_t *block_bytes)
{
    size_t bytes, used;
    TRY(mask_code(t, NULL, 0, &bytes));
    put32(w, (uint32_t)bytes);
    uint8_t *data = wb_grow(w, bytes);
    if (!data) return DCZ_ERR_NOMEM;
    TRY(mask_code(t, data, bytes, &used));
    *block_bytes = 4 + bytes;
    return used == bytes ? DCZ_OK : DCZ_ERR_INTERNAL;
}

unsigned dcz_doc_index_bits(uint32_t k)
{
    unsigned b = 1;
    while ((1u << b) < k) b++;
    return b;
}

dcz_status dcz_doc_tensor_compact(dcz_doc_tensor *t)
{
    if (t->enc != DCZ_ENC_CODEBOOK) return DCZ_OK;
    if (!t->codebook || !t->assign || t->k < 1 || t->k > 256) return DCZ_ERR_ARG;
    uint8_t used[256] = { 0 }, to[256];
    for (size_t i = 0; i < t->n; i++)
        if (stored(t, i)) {
            if (t->assign[i] >= t->k) return DCZ_ERR_ARG;
            used[t->assign[i]] = 1;
        }
    uint32_t k = 0;
    for (uint32_t c = 0; c < t->k; c++)
        if (used[c]) {
            t->codebook[k] = t->codebook[c];
            to[c] = (uint8_t)k++;
        }
    if (k == 0) k = 1;   /* no stored weight: one entry keeps the record valid */
    for (size_t i = 0; i < t->n; i++) t->assign[i] = stored(t, i) ? to[t->assign[i]] : 0;
    t->k = k;
    t->index_bits = (uint8_t)dcz_doc_index_bits(k);
    return DCZ_OK;
}

/* The bytes of t's position block gap_bits wide, raw (bytes[0]) and
 * Huffman-coded (bytes[1]), from one walk over its gaps. */
static dcz_status gap_blocks(const dcz_doc_tensor *t, unsigned gap_bits, size_t bytes[2])
{
    dcz_doc_tensor probe = *t;
    uint8_t *gaps = NULL, len[DCZ_HUFF_MAX_SYMBOLS];
    uint32_t count;
    size_t table, data;
    probe.gap_bits = (uint8_t)gap_bits;
    TRY(dcz_doc_tensor_streams(&probe, NULL, NULL, &gaps, &count));
    dcz_status s = DCZ_OK;
    for (uint8_t c = DCZ_CODING_RAW; c <= DCZ_CODING_HUFFMAN && s == DCZ_OK; c++) {
        s = stream_size(gaps, count, gap_bits, c, len, &table, &data);
        bytes[c] = 4 + table + data;
    }
    free(gaps);
    return s;
}

/* The bytes of t's position block as a keep mask, arithmetic-coded. */
static dcz_status mask_block(const dcz_doc_tensor *t, size_t *bytes)
{
    TRY(mask_code(t, NULL, 0, bytes));
    *bytes += 4;
    return DCZ_OK;
}

dcz_status dcz_doc_tensor_best_gap_bits(const dcz_doc_tensor *t, uint8_t *bits)
{
    if (!t->mask) return DCZ_ERR_ARG;
    if (t->enc == DCZ_ENC_CODEBOOK) {
        size_t kept = 0;
        for (size_t i = 0; i < t->n; i++) kept += t->mask[i] != 0;
        if (kept == t->n) {   /* nothing to locate: no position stream */
            *bits = 0;
            return DCZ_OK;
        }
    }
    if (t->gap_coding == DCZ_CODING_ARITH) {   /* a keep mask: one bit a flag */
        *bits = 1;
        return DCZ_OK;
    }
    size_t best = SIZE_MAX, bytes[2];
    for (unsigned b = 8; b >= 1; b--) {
        TRY(gap_blocks(t, b, bytes));
        if (bytes[t->gap_coding] < best) {
            best = bytes[t->gap_coding];
            *bits = (uint8_t)b;
        }
    }
    return DCZ_OK;
}

dcz_status dcz_doc_tensor_pack(dcz_doc_tensor *t, unsigned gap_bits)
{
    if (t->enc != DCZ_ENC_SPARSE_F32 && t->enc != DCZ_ENC_CODEBOOK) return DCZ_OK;
    if (gap_bits > 8) return DCZ_ERR_ARG;
    TRY(dcz_doc_tensor_compact(t));
    if (!t->gap_bits) return DCZ_OK;   /* every position stored already */
    if (gap_bits) {
        t->gap_bits = (uint8_t)gap_bits;
        return DCZ_OK;
    }
    TRY(dcz_doc_tensor_best_gap_bits(t, &t->gap_bits));
    if (t->gap_bits == 0) {   /* every weight stored: the mask says nothing */
        free(t->mask);
        t->mask = NULL;
    }
    return DCZ_OK;
}

dcz_status dcz_doc_tensor_choose_codings(dcz_doc_tensor *t, unsigned gap_bits, int arith)
{
    if (t->enc != DCZ_ENC_SPARSE_F32 && t->enc != DCZ_ENC_CODEBOOK) return DCZ_OK;
    if (gap_bits > 8) return DCZ_ERR_ARG;
    const uint8_t last = arith ? DCZ_CODING_ARITH : DCZ_CODING_HUFFMAN;
    size_t best = SIZE_MAX, bytes;
    if (t->enc == DCZ_ENC_CODEBOOK) {
        uint8_t *idx = NULL, len[DCZ_HUFF_MAX_SYMBOLS];
        uint32_t nnz;
        size_t table, data;
        if (t->index_bits < 1 || t->index_bits > 8) return DCZ_ERR_ARG;
        TRY(dcz_doc_tensor_streams(t, &idx, &nnz, NULL, NULL));
        dcz_status s = DCZ_OK;
        for (uint8_t c = DCZ_CODING_RAW; c <= last && s == DCZ_OK; c++) {
            s = stream_size(idx, nnz, t->index_bits, c, len, &table, &data);
            if (s == DCZ_OK && table + data < best) {
                best = table + data;
                t->index_coding = c;
            }
        }
        free(idx);
        TRY(s);
    }
    if (!t->gap_bits) return DCZ_OK;   /* every position stored: no position stream */
    best = SIZE_MAX;
    uint8_t bits = t->gap_bits, coding = t->gap_coding;
    const unsigned hi = gap_bits ? gap_bits : 8, lo = gap_bits ? gap_bits : 1;
    size_t sizes[9][2];   /* by width, raw and Huffman: the gaps walked once a width */
    for (unsigned b = hi; b >= lo; b--) TRY(gap_blocks(t, b, sizes[b]));
    for (uint8_t c = DCZ_CODING_RAW; c <= DCZ_CODING_HUFFMAN; c++)
        for (unsigned b = hi; b >= lo; b--)
            if (sizes[b][c] < best) {
                best = sizes[b][c];
                bits = (uint8_t)b;
                coding = c;
            }
    if (arith && !gap_bits) {
        TRY(mask_block(t, &bytes));
        if (bytes < best) {
            bits = 1;
            coding = DCZ_CODING_ARITH;
        }
    }
    t->gap_bits = bits;
    t->gap_coding = coding;
    return DCZ_OK;
}

static dcz_status put_sparse(wbuf *w, dcz_doc_tensor *t)
{
    uint8_t *idx = NULL, *gaps = NULL;
    uint32_t nnz, gap_count;
    const int cb = t->enc == DCZ_ENC_CODEBOOK;
    if (t->gap_bits > 8) return DCZ_ERR_ARG;
    if (cb && (t->index_bits < 1 || t->index_bits > 8 || t->k < 1 ||
               t->k > (1u << t->index_bits) || !t->codebook))
        return DCZ_ERR_ARG;
    /* a keep mask (coding 2) is n flags of one bit: gap_bits 1, gap_count n */
    const int mask = t->gap_bits && t->gap_coding == DCZ_CODING_ARITH;
    if (mask && (t->gap_bits != 1 || t->n > 0xFFFFFFFFu)) return DCZ_ERR_ARG;
    TRY(dcz_doc_tensor_streams(t, cb ? &idx : NULL, &nnz, mask ? NULL : &gaps, &gap_count));
    if (mask) gap_count = (uint32_t)t->n;
    dcz_status s = DCZ_OK;
    put32(w, nnz);
    put32(w, gap_count);
    put8(w, t->gap_bits);
    put8(w, t->gap_bits ? t->gap_coding : DCZ_CODING_RAW);
    t->st.nnz = nnz;
    t->st.gap_count = gap_count;
    t->st.index_bytes = t->st.gap_bytes = 0;
    if (cb) {
        put8(w, t->index_bits);
        put8(w, t->index_coding);
        put16(w, (uint16_t)t->k);
        put16(w, t->codebook_f16 ? DCZ_CODEBOOK_F16 : DCZ_CODEBOOK_F32);
        for (uint32_t i = 0; i < t->k; i++)
            if (t->codebook_f16) put16(w, dcz_f32_to_f16(t->codebook[i]));
            else putf32(w, t->codebook[i]);
        t->st.value_bytes = (size_t)t->k * (t->codebook_f16 ? 2 : 4);
        s = put_stream(w, idx, nnz, t->index_bits, t->index_coding, &t->st.index_bytes);
    } else {
        put16(w, 0);
        for (size_t i = 0; i < t->n; i++)
            if (stored(t, i)) putf32(w, t->values[i]);
        t->st.value_bytes = (size_t)nnz * 4;
    }
    if (s == DCZ_OK && mask)
        s = put_mask(w, t, &t->st.gap_bytes);
    else if (s == DCZ_OK && t->gap_bits)
        s = put_stream(w, gaps, gap_count, t->gap_bits, t->gap_coding, &t->st.gap_bytes);
    free(idx);
    free(gaps);
    return s;
}

int dcz_doc_tensor_codebook_f16(dcz_doc_tensor *t)
{
    if (t->enc != DCZ_ENC_CODEBOOK || !t->codebook) return 0;
    for (uint32_t k = 0; k < t->k; k++)
        if (!(fabsf(t->codebook[k]) <= 65504.0f)) return 0;
    for (uint32_t k = 0; k < t->k; k++) t->codebook[k] = dcz_f16_to_f32(dcz_f32_to_f16(t->codebook[k]));
    for (size_t i = 0; i < t->n && t->assign; i++)
        if (stored(t, i)) t->values[i] = t->codebook[t->assign[i]];
    t->codebook_f16 = 1;
    return 1;
}

dcz_status dcz_doc_tensor_to_i8(dcz_doc_tensor *t)
{
    double top = 0;
    for (size_t i = 0; i < t->n; i++)
        if (fabs((double)t->values[i]) > top) top = fabs((double)t->values[i]);
    float *scale = malloc(sizeof *scale);
    if (!scale) return DCZ_ERR_NOMEM;
    scale[0] = top > 0 ? (float)(top / 127) : DCZ_SCALE_MIN;
    if (scale[0] < DCZ_SCALE_MIN) scale[0] = DCZ_SCALE_MIN;
    if (scale[0] > DCZ_SCALE_MAX) scale[0] = DCZ_SCALE_MAX;
    for (size_t i = 0; i < t->n; i++) {   /* as put_int stores them */
        double q = (double)t->values[i] / scale[0];
        q = q >= 0 ? floor(q + 0.5) : -floor(-q + 0.5);
        if (!(q >= -127)) q = -127;
        if (q > 127) q = 127;
        t->values[i] = (float)(q * scale[0]);
    }
    free(t->scale);
    t->scale = scale;
    t->nscale = 1;
    t->enc = DCZ_ENC_I8;
    return DCZ_OK;
}

/* Dense integers: the scale count, the scales, then round(value / scale)
 * (half away from zero) clamped to the type's symmetric range. */
static dcz_status put_int(wbuf *w, dcz_doc_tensor *t)
{
    const int i8 = t->enc == DCZ_ENC_I8;
    const double qmax = i8 ? 127 : 32767;
    if (!t->scale || (t->nscale != 1 && t->nscale != t->dims[0])) return DCZ_ERR_ARG;
    put32(w, t->nscale);
    for (uint32_t i = 0; i < t->nscale; i++) {
        if (!(t->scale[i] >= DCZ_SCALE_MIN && t->scale[i] <= DCZ_SCALE_MAX)) return DCZ_ERR_ARG;
        putf32(w, t->scale[i]);
    }
    const size_t per_row = t->n / t->nscale;
    for (size_t i = 0; i < t->n; i++) {
        double q = (double)t->values[i] / t->scale[i / per_row];
        q = q >= 0 ? floor(q + 0.5) : -floor(-q + 0.5);
        if (!(q >= -qmax)) q = -qmax; /* NaN too */
        if (q > qmax) q = qmax;
        if (i8) put8(w, (uint8_t)(int8_t)q);
        else put16(w, (uint16_t)(int16_t)q);
    }
    t->st.value_bytes = t->n * (i8 ? 1 : 2) + (size_t)t->nscale * 4;
    t->st.nnz = (uint32_t)t->n;
    return DCZ_OK;
}

static dcz_status put_tensor(wbuf *w, dcz_doc_tensor *t)
{
    const size_t start = w->len;
    if (t->rank == 0 || t->rank > DCZ_MAX_RANK) return DCZ_ERR_ARG;
    size_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) n *= t->dims[i];
    if (n != t->n || n == 0 || !t->values) return DCZ_ERR_ARG;
    put32(w, t->enc);
    put32(w, t->rank);
    for (uint32_t i = 0; i < t->rank; i++) put32(w, t->dims[i]);
    const size_t size_at = w->len;
    put32(w, 0); /* payload bytes, patched below */
    const size_t payload_at = w->len;
    memset(&t->st, 0, sizeof t->st);
    switch (t->enc) {
    case DCZ_ENC_F32:
        for (size_t i = 0; i < n; i++) putf32(w, t->values[i]);
        t->st.value_bytes = n * 4;
        t->st.nnz = (uint32_t)n;
        break;
    case DCZ_ENC_F16:
        for (size_t i = 0; i < n; i++) put16(w, dcz_f32_to_f16(t->values[i]));
        t->st.value_bytes = n * 2;
        t->st.nnz = (uint32_t)n;
        break;
    case DCZ_ENC_I8:
    case DCZ_ENC_I16:
        TRY(put_int(w, t));
        break;
    case DCZ_ENC_SPARSE_F32:
    case DCZ_ENC_CODEBOOK:
        TRY(put_sparse(w, t));
        break;
    default:
        return DCZ_ERR_ARG;
    }
    if (w->err) return DCZ_ERR_NOMEM;
    const size_t payload = w->len - payload_at;
    if (payload > 0xFFFFFFFFu) return DCZ_ERR_ARG;
    dcz_put32(w->p + size_at, (uint32_t)payload);
    put_zeros(w, (4 - (w->len - start) % 4) % 4);
    t->st.record_bytes = w->len - start;
    return DCZ_OK;
}

static dcz_status put_graph(wbuf *w, const dcz_doc *d, const uint32_t *section_of_layer)
{
    put32(w, d->nlayers);
    put32(w, d->input_rank);
    for (uint32_t i = 0; i < d->input_rank; i++) put32(w, d->input_dims[i]);
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        size_t nl = strlen(l->name);
        if (nl == 0 || nl > DCZ_MAX_NAME || l->nattr > DCZ_MAX_ATTRS) return DCZ_ERR_ARG;
        put16(w, l->op);
        put16(w, (uint16_t)nl);
        put_bytes(w, l->name, nl);
        put32(w, l->nin);
        for (uint32_t j = 0; j < l->nin; j++) put32(w, l->in[j]);
        put32(w, l->nattr);
        for (uint32_t j = 0; j < l->nattr; j++) put32(w, (uint32_t)l->attr[j]);
        put32(w, section_of_layer[i]);
    }
    return w->err ? DCZ_ERR_NOMEM : DCZ_OK;
}

/* ---- checking the document ---------------------------------------------- */

/* The rules the readers apply (format.h, doc_read.c), so that no file is
 * written that they would refuse: the input shape, each op's attributes,
 * every layer's inputs (earlier tensors that fit it), no layer left unread
 * but the last, and parameter tensors fitting their op. */
static dcz_status check_doc(const dcz_doc *d)
{
    dcz_shape input = { d->input_rank, { 0 } };
    if (d->input_rank == 0 || d->input_rank > DCZ_MAX_RANK) return DCZ_ERR_ARG;
    for (uint32_t i = 0; i < d->input_rank; i++) {
        if (d->input_dims[i] == 0 || d->input_dims[i] > DCZ_MAX_DIM) return DCZ_ERR_ARG;
        input.dims[i] = d->input_dims[i];
    }
    if (dcz_shape_count(&input) > DCZ_MAX_ACT) return DCZ_ERR_ARG;
    if (d->nlayers == 0 || d->nlayers > DCZ_MAX_LAYERS) return DCZ_ERR_ARG;
    dcz_shape *shapes = malloc(((size_t)d->nlayers + 1) * sizeof *shapes);
    uint8_t *read = calloc(d->nlayers, 1);
    dcz_status s = shapes && read ? dcz_doc_shapes(d, shapes) : DCZ_ERR_NOMEM;
    if (s != DCZ_OK && s != DCZ_ERR_SHAPE && s != DCZ_ERR_NOMEM) s = DCZ_ERR_ARG;
    for (uint32_t i = 0; i < d->nlayers && s == DCZ_OK; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        for (uint32_t k = 0; k < l->nin; k++)
            if (l->in[k] > 0) read[l->in[k] - 1] = 1;
        s = dcz_doc_layer_check_params(l);
        if (s != DCZ_OK && s != DCZ_ERR_SHAPE) s = DCZ_ERR_ARG;
    }
    for (uint32_t i = 0; i + 1 < d->nlayers && s == DCZ_OK; i++)
        if (!read[i]) s = DCZ_ERR_ARG;
    free(shapes);
    free(read);
    TRY(s);
    return dcz_doc_calib_check(d) == DCZ_OK ? DCZ_OK : DCZ_ERR_ARG;
}

/* ---- assembling the file ------------------------------------------------ */

typedef struct wsec {
    uint32_t type, flags;
    wbuf body;
} wsec;

/* The CALIB section (calib.c has the layout). */
static void put_calib(wsec *sec, const dcz_doc_calib *c)
{
    sec->type = DCZ_SEC_CALIB;
    put32(&sec->body, c->scheme);
    put32(&sec->body, c->count);
    put64(&sec->body, c->model_hash);
    put64(&sec->body, c->data_hash);
    for (uint32_t i = 0; i < c->count; i++) {
        put32(&sec->body, c->e[i].layer);
        putf32(&sec->body, c->e[i].in_scale);
        put32(&sec->body, c->e[i].nw);
        for (uint32_t j = 0; j < c->e[i].nw; j++) putf32(&sec->body, c->e[i].w_scale[j]);
    }
    if (!c->ntensors) return;
    put32(&sec->body, c->ntensors);
    for (uint32_t t = 0; t < c->ntensors; t++) putf32(&sec->body, c->t_scale[t]);
}

/* The PREPROCESS section (docs/FORMAT.md), its rules checked as a reader
 * checks them: DCZ_ERR_ARG for a record a reader would refuse. */
static dcz_status put_prep(wsec *sec, const dcz_doc *d)
{
    const dcz_preprocess *p = &d->prep;
    sec->type = DCZ_SEC_PREP;
    put32(&sec->body, p->resize);
    put32(&sec->body, p->crop_h);
    put32(&sec->body, p->crop_w);
    put32(&sec->body, p->channels);
    for (uint32_t k = 0; k < p->channels && k < 3; k++) putf32(&sec->body, p->mean[k]);
    for (uint32_t k = 0; k < p->channels && k < 3; k++) putf32(&sec->body, p->std[k]);
    if (sec->body.err) return DCZ_ERR_NOMEM;
    dcz_preprocess back;
    const uint32_t *in = d->input_dims;
    if (dcz_prep_parse(sec->body.p, sec->body.len, &back) != DCZ_OK || d->input_rank != 3 ||
        in[0] != p->channels || (p->crop_h && (in[1] != p->crop_h || in[2] != p->crop_w)))
        return DCZ_ERR_ARG;
    return DCZ_OK;
}

/* The STAGES section: the record count, each record's file size as a u64
 * (taken out of its "file_bytes = N" line, so that the size of the file does
 * not depend on the number it states), then every record's text, in order,
 * as one zlib stream. */
static dcz_status put_stages(wsec *sec, const dcz_doc *d)
{
    wbuf text = { 0 };
    /* the reader's limits (doc_read.c): refuse rather than write a file it
     * would refuse */
    if (d->nstages > DCZ_MAX_STAGES) return DCZ_ERR_ARG;
    sec->type = DCZ_SEC_STAGE;
    put32(&sec->body, d->nstages);
    for (uint32_t i = 0; i < d->nstages; i++) {
        const char *r = d->stages[i];
        if (strncmp(r, "stage =", 7) != 0) { free(text.p); return DCZ_ERR_ARG; }
        uint64_t bytes = 0;
        for (const char *line = r; *line;) {
            const char *end = strchr(line, '\n');
            size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
            if (strncmp(line, "file_bytes = ", 13) == 0) bytes = strtoull(line + 13, NULL, 10);
            else put_bytes(&text, line, n);
            line += n;
        }
        if (text.len && text.p[text.len - 1] != '\n') put8(&text, '\n');
        put64(&sec->body, bytes);
    }
    if (text.err || sec->body.err) { free(text.p); return DCZ_ERR_NOMEM; }
    if (text.len > DCZ_MAX_STAGE_TEXT) { free(text.p); return DCZ_ERR_ARG; }
    uLongf zlen = compressBound((uLong)text.len);
    put32(&sec->body, (uint32_t)text.len);
    const size_t at = sec->body.len;
    uint8_t *z = wb_grow(&sec->body, zlen);
    dcz_status s = DCZ_ERR_NOMEM;
    if (z && compress2(z, &zlen, text.p, (uLong)text.len, 9) == Z_OK) {
        sec->body.len = at + zlen;
        s = DCZ_OK;
    }
    free(text.p);
    return s;
}

dcz_status dcz_doc_write(dcz_doc *d, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (!d) return DCZ_ERR_ARG;
    TRY(check_doc(d));
    uint32_t nparam = 0;
    for (uint32_t i = 0; i < d->nlayers; i++) nparam += d->layers[i].ntensors > 0;
    const uint32_t nsec = 1 + nparam + (d->calib ? 1 : 0) + (d->has_prep ? 1 : 0) + (d->nstages ? 1 : 0);
    wsec *secs = calloc(nsec, sizeof *secs);
    uint32_t *section_of_layer = malloc(d->nlayers * sizeof *section_of_layer);
    dcz_status s = DCZ_ERR_NOMEM;
    wbuf out = { 0 };
    if (!secs || !section_of_layer) goto done;

    /* parameter sections, in layer order, after the graph */
    uint32_t si = 1;
    size_t param_bytes = 0;
    for (uint32_t i = 0; i < d->nlayers; i++) {
        dcz_doc_layer *l = &d->layers[i];
        section_of_layer[i] = DCZ_NO_SECTION;
        if (l->ntensors == 0) continue;
        if (l->ntensors > DCZ_MAX_TENSORS) { s = DCZ_ERR_ARG; goto done; }
        wsec *sec = &secs[si];
        sec->type = DCZ_SEC_LAYER;
        sec->flags = DCZ_SECF_REQUIRED;
        put32(&sec->body, l->ntensors);
        for (uint32_t j = 0; j < l->ntensors; j++)
            if ((s = put_tensor(&sec->body, &l->t[j])) != DCZ_OK) goto done;
        l->section_bytes = sec->body.len;
        param_bytes += sec->body.len;
        section_of_layer[i] = si++;
    }
    secs[0].type = DCZ_SEC_GRAPH;
    secs[0].flags = DCZ_SECF_REQUIRED;
    if ((s = put_graph(&secs[0].body, d, section_of_layer)) != DCZ_OK) goto done;
    if (d->calib) put_calib(&secs[si++], d->calib);
    if (d->has_prep && (s = put_prep(&secs[si++], d)) != DCZ_OK) goto done;
    if (d->nstages && (s = put_stages(&secs[si], d)) != DCZ_OK) goto done;

    /* header and table, then sections at 64-byte boundaries */
    s = DCZ_ERR_NOMEM;
    uint64_t off = DCZ_HEADER_BYTES + (uint64_t)nsec * DCZ_SECTION_ENTRY_BYTES;
    uint64_t *offsets = malloc(nsec * sizeof *offsets);
    if (!offsets) goto done;
    dcz_doc_parts parts = { .header = (size_t)off };
    for (uint32_t i = 0; i < nsec; i++) {
        const uint64_t end = off;
        off = (off + DCZ_ALIGN - 1) / DCZ_ALIGN * DCZ_ALIGN;
        offsets[i] = off;
        parts.padding += (size_t)(off - end);
        dcz_doc_parts_add(&parts, secs[i].type, secs[i].body.len);
        off += secs[i].body.len;
        if (secs[i].body.err) { free(offsets); goto done; }
    }
    const uint64_t total = off;
    put_bytes(&out, dcz_magic, 8);
    put16(&out, DCZ_FMT_MAJOR);
    put16(&out, DCZ_FMT_MINOR);
    put32(&out, 0);           /* flags */
    put64(&out, total);
    put32(&out, nsec);
    put32(&out, 0);           /* header CRC, patched below */
    put_zeros(&out, DCZ_HEADER_BYTES - 32);
    for (uint32_t i = 0; i < nsec; i++) {
        put32(&out, secs[i].type);
        put32(&out, secs[i].flags);
        put64(&out, offsets[i]);
        put64(&out, secs[i].body.len);
        put32(&out, dcz_crc32(0, secs[i].body.p, secs[i].body.len));
        put32(&out, 0);
    }
    for (uint32_t i = 0; i < nsec; i++) {
        put_zeros(&out, (size_t)(offsets[i] - out.len));
        put_bytes(&out, secs[i].body.p, secs[i].body.len);
    }
    free(offsets);
    if (out.err || out.len != total) goto done;
    dcz_put32(out.p + 28, dcz_crc32(0, out.p, DCZ_HEADER_BYTES + (size_t)nsec * DCZ_SECTION_ENTRY_BYTES));
    d->file_bytes = out.len;
    d->overhead_bytes = out.len - param_bytes;
    d->parts = parts;
    *buf = out.p;
    *len = out.len;
    out.p = NULL;
    s = DCZ_OK;
done:
    free(out.p);
    if (secs)
        for (uint32_t i = 0; i < nsec; i++) free(secs[i].body.p);
    free(secs);
    free(section_of_layer);
    return s;
}
