/* doc_read.c: decoding a .dcz into an editable dcz_doc (see doc.h), and the
 * document's memory management.
 *
 * Checked by tests/unit/test_format.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "model/doc.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

dcz_status dcz_doc_alloc(uint32_t nlayers, dcz_doc **out)
{
    *out = NULL;
    dcz_doc *d = calloc(1, sizeof *d);
    if (!d) return DCZ_ERR_NOMEM;
    d->layers = calloc(nlayers ? nlayers : 1, sizeof *d->layers);
    if (!d->layers) { free(d); return DCZ_ERR_NOMEM; }
    d->nlayers = nlayers;
    for (uint32_t i = 0; i < nlayers; i++) {
        d->layers[i].nin = 1;
        d->layers[i].in[0] = i;
    }
    *out = d;
    return DCZ_OK;
}

dcz_status dcz_doc_shapes(const dcz_doc *d, dcz_shape *shapes)
{
    if (d->input_rank == 0 || d->input_rank > DCZ_MAX_RANK) return DCZ_ERR_ARG;
    memset(&shapes[0], 0, sizeof shapes[0]);
    shapes[0].rank = d->input_rank;
    memcpy(shapes[0].dims, d->input_dims, d->input_rank * sizeof d->input_dims[0]);
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        dcz_shape in[DCZ_MAX_INPUTS];
        int has_params;
        if (l->nattr > DCZ_MAX_ATTRS || l->nin > DCZ_MAX_INPUTS) return DCZ_ERR_ARG;
        dcz_status s = dcz_op_check(l->op, l->attr, l->nattr, &has_params);
        if (s != DCZ_OK) return s == DCZ_ERR_UNSUPPORTED ? s : DCZ_ERR_ARG;
        for (uint32_t k = 0; k < l->nin; k++) {
            if (l->in[k] > i) return DCZ_ERR_ARG;
            in[k] = shapes[l->in[k]];
        }
        TRY(dcz_op_shape(l->op, l->attr, l->nattr, in, l->nin, &shapes[i + 1]));
    }
    return DCZ_OK;
}

void dcz_doc_tensor_clear(dcz_doc_tensor *t)
{
    free(t->values);
    free(t->mask);
    free(t->codebook);
    free(t->assign);
    free(t->scale);
    memset(t, 0, sizeof *t);
}

void dcz_doc_clear_stages(dcz_doc *d)
{
    for (uint32_t i = 0; i < d->nstages; i++) free(d->stages[i]);
    free(d->stages);
    d->stages = NULL;
    d->nstages = 0;
}

void dcz_doc_free(dcz_doc *d)
{
    if (!d) return;
    for (uint32_t i = 0; i < d->nlayers; i++)
        for (uint32_t j = 0; j < DCZ_MAX_TENSORS; j++) dcz_doc_tensor_clear(&d->layers[i].t[j]);
    dcz_doc_clear_stages(d);
    free(d->layers);
    dcz_doc_calib_free(d->calib);
    free(d);
}

void dcz_doc_calib_free(dcz_doc_calib *c)
{
    if (!c) return;
    for (uint32_t i = 0; i < c->count; i++) free(c->e[i].w_scale);
    free(c->e);
    free(c->t_scale);
    free(c);
}

dcz_status dcz_doc_add_stage(dcz_doc *d, const char *text)
{
    char **s = realloc(d->stages, (d->nstages + 1) * sizeof *s);
    if (!s) return DCZ_ERR_NOMEM;
    d->stages = s;
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    if (!copy) return DCZ_ERR_NOMEM;
    memcpy(copy, text, n + 1);
    d->stages[d->nstages++] = copy;
    return DCZ_OK;
}

void dcz_doc_parts_add(dcz_doc_parts *p, uint32_t type, size_t size)
{
    switch (type) {
    case DCZ_SEC_GRAPH: p->graph += size; break;
    case DCZ_SEC_LAYER: p->layers += size; p->nlayer_sections++; break;
    case DCZ_SEC_STAGE: p->stages += size; break;
    case DCZ_SEC_CALIB: p->calib += size; break;
    case DCZ_SEC_PREP: p->prep += size; break;
    default: p->other += size; break;
    }
}

size_t dcz_doc_parts_total(const dcz_doc_parts *p)
{
    return p->header + p->graph + p->layers + p->stages + p->calib + p->prep + p->other + p->padding;
}

size_t dcz_doc_param_count(const dcz_doc *d)
{
    size_t n = 0;
    for (uint32_t i = 0; i < d->nlayers; i++)
        for (uint32_t j = 0; j < d->layers[i].ntensors; j++) n += d->layers[i].t[j].n;
    return n;
}

/* ---- decoding ------------------------------------------------------------- */

typedef struct place_ctx {
    dcz_doc_tensor *t;
    const dcz_tensor_view *v;
    const uint8_t *idx;
} place_ctx;

static dcz_status place(void *ctx, uint32_t weight, uint64_t pos)
{
    place_ctx *p = (place_ctx *)ctx;
    p->t->mask[pos] = 1;
    if (p->idx) {
        p->t->assign[pos] = p->idx[weight];
        p->t->values[pos] = p->t->codebook[p->idx[weight]];
    } else {
        p->t->values[pos] = dcz_f32_from_bits(dcz_le32(p->v->values + (size_t)weight * 4));
    }
    return DCZ_OK;
}

/* The toolchain expands every tensor to dense arrays (9 bytes an element
 * with mask and assignments). A file may claim a huge sparse shape in a few
 * bytes, so expansion is bounded, over the whole document: at most 2^28
 * elements, and at most DCZ_DOC_ELEMENTS_PER_BYTE per byte of the file
 * (plus 2^20). Deep Compression's ratios need about 12 (VGG-16 at 49x:
 * 0.65 bits a weight); 256 is 20 times that, and bounds the memory of a
 * 66 KB file at 150 MB instead of 2.6 GB. */
#define DCZ_DOC_MAX_ELEMENTS (1ull << 28)

/* Takes n elements from the budget of the document (*left). */
static dcz_status take_elements(uint64_t n, uint64_t *left)
{
    if (n > *left) return DCZ_ERR_LIMIT;
    *left -= n;
    return DCZ_OK;
}

static dcz_status read_tensor(const dcz_tensor_view *v, dcz_doc_tensor *t, uint64_t *left)
{
    TRY(take_elements(v->n, left));
    t->enc = v->enc;
    t->rank = v->rank;
    memcpy(t->dims, v->dims, sizeof t->dims);
    t->n = (size_t)v->n;
    t->values = calloc(t->n, sizeof *t->values);
    if (!t->values) return DCZ_ERR_NOMEM;
    t->st.record_bytes = v->record_bytes;
    t->st.nnz = (uint32_t)v->n;
    if (v->enc == DCZ_ENC_F32 || v->enc == DCZ_ENC_F16) {
        for (size_t i = 0; i < t->n; i++)
            t->values[i] = v->enc == DCZ_ENC_F32
                ? dcz_f32_from_bits(dcz_le32(v->payload + i * 4))
                : dcz_f16_to_f32((uint16_t)(v->payload[i * 2] | v->payload[i * 2 + 1] << 8));
        t->st.value_bytes = t->n * (v->enc == DCZ_ENC_F32 ? 4 : 2);
        return DCZ_OK;
    }
    if (DCZ_ENC_IS_INT(v->enc)) {
        const size_t per_row = t->n / v->nscale;
        t->nscale = v->nscale;
        t->scale = malloc(v->nscale * sizeof *t->scale);
        if (!t->scale) return DCZ_ERR_NOMEM;
        for (uint32_t i = 0; i < v->nscale; i++)
            t->scale[i] = dcz_f32_from_bits(dcz_le32(v->scales + (size_t)i * 4));
        for (size_t i = 0; i < t->n; i++) {
            int32_t q = v->enc == DCZ_ENC_I8
                ? (int8_t)v->payload[i]
                : (int16_t)(uint16_t)(v->payload[i * 2] | v->payload[i * 2 + 1] << 8);
            t->values[i] = (float)q * t->scale[i / per_row];
        }
        t->st.value_bytes = t->n * (v->enc == DCZ_ENC_I8 ? 1 : 2) + (size_t)v->nscale * 4;
        return DCZ_OK;
    }
    t->gap_bits = v->gap_bits;
    t->gap_coding = v->gap_coding;
    t->st.nnz = v->nnz;
    t->st.gap_count = v->gap_count;
    t->st.gap_bytes = v->gap_bits ? 4 + v->gap_bytes + (v->gap_table ? (size_t)(v->gap_stream - v->gap_table) : 0) : 0;
    t->mask = calloc(t->n, 1);
    const uint64_t pos_scratch = dcz_tensor_positions_scratch(v);
    uint8_t *gaps = malloc(pos_scratch ? (size_t)pos_scratch : 1);
    uint8_t *idx = NULL;
    dcz_status s = DCZ_ERR_NOMEM;
    if (!t->mask || !gaps) goto done;
    if (v->enc == DCZ_ENC_CODEBOOK) {
        t->k = v->k;
        t->index_bits = v->index_bits;
        t->index_coding = v->index_coding;
        t->codebook_f16 = v->codebook_f16;
        t->codebook = malloc(v->k * sizeof *t->codebook);
        t->assign = calloc(t->n, 1);
        idx = malloc(v->nnz ? v->nnz : 1);
        if (!t->codebook || !t->assign || !idx) goto done;
        for (uint32_t i = 0; i < v->k; i++)
            t->codebook[i] = dcz_tensor_codebook_at(v, (uint32_t)i);
        t->st.value_bytes = (size_t)v->k * (v->codebook_f16 ? 2 : 4);
        t->st.index_bytes = 4 + v->index_bytes + (v->index_table ? (size_t)(v->index_stream - v->index_table) : 0);
    } else {
        t->st.value_bytes = (size_t)v->nnz * 4;
    }
    s = dcz_tensor_decode_indices(v, idx);
    if (s != DCZ_OK) goto done;
    place_ctx pc = { t, v, idx };
    s = dcz_tensor_positions(v, gaps, place, &pc);
done:
    free(gaps);
    free(idx);
    return s;
}

static dcz_status read_layer_params(const dcz_container *c, const dcz_graph_layer *g,
                                    dcz_doc_layer *l, uint64_t *left)
{
    dcz_section s;
    dcz_cur cur;
    dcz_container_section(c, g->param_section, &s);
    l->section_bytes = (size_t)s.size;
    TRY(dcz_layer_begin(c->base + s.offset, (size_t)s.size, &cur, &l->ntensors));
    for (uint32_t j = 0; j < l->ntensors; j++) {
        dcz_tensor_view v;
        TRY(dcz_tensor_next(&cur, &v));
        TRY(read_tensor(&v, &l->t[j], left));
    }
    if (cur.pos != cur.len) return DCZ_ERR_FORMAT;
    return dcz_doc_layer_check_params(l);
}

dcz_status dcz_doc_layer_check_params(const dcz_doc_layer *l)
{
    dcz_shape ws, bs;
    if (dcz_op_param_shapes(l->op, l->attr, &ws, &bs) != DCZ_OK)
        return l->ntensors == 0 ? DCZ_OK : DCZ_ERR_FORMAT;
    if (l->ntensors != 2) return DCZ_ERR_FORMAT;
    const dcz_doc_tensor *w = &l->t[0], *b = &l->t[1];
    if (!dcz_shape_is(&ws, w->rank, w->dims) || !dcz_shape_is(&bs, b->rank, b->dims))
        return DCZ_ERR_SHAPE;
    return b->enc == DCZ_ENC_F32 || b->enc == DCZ_ENC_F16 || b->enc == DCZ_ENC_I8 ? DCZ_OK : DCZ_ERR_FORMAT;
}

/* ---- calibration table ---------------------------------------------------- */

static dcz_status read_calib(const uint8_t *p, size_t len, dcz_doc *d)
{
    dcz_cur cur;
    dcz_calib_head h;
    TRY(dcz_calib_begin(p, len, &cur, &h));
    dcz_doc_calib *c = calloc(1, sizeof *c);
    if (!c) return DCZ_ERR_NOMEM;
    d->calib = c;
    c->e = calloc(h.count, sizeof *c->e);
    if (!c->e) return DCZ_ERR_NOMEM;
    c->scheme = h.scheme;
    c->model_hash = h.model_hash;
    c->data_hash = h.data_hash;
    for (uint32_t i = 0; i < h.count; i++) {
        dcz_calib_entry e;
        TRY(dcz_calib_next(&cur, h.scheme, &e));
        dcz_doc_calib_entry *o = &c->e[c->count];
        o->w_scale = malloc(e.nw * sizeof *o->w_scale);
        if (!o->w_scale) return DCZ_ERR_NOMEM;
        c->count++;
        o->layer = e.layer;
        o->in_scale = e.in_scale;
        o->nw = e.nw;
        for (uint32_t j = 0; j < e.nw; j++)
            o->w_scale[j] = dcz_f32_from_bits(dcz_le32(e.w_scale + (size_t)j * 4));
    }
    const uint8_t *ts;
    TRY(dcz_calib_tensors(&cur, h.scheme, &c->ntensors, &ts));
    if (c->ntensors) {
        c->t_scale = malloc(c->ntensors * sizeof *c->t_scale);
        if (!c->t_scale) return DCZ_ERR_NOMEM;
        for (uint32_t t = 0; t < c->ntensors; t++)
            c->t_scale[t] = dcz_f32_from_bits(dcz_le32(ts + (size_t)t * 4));
    }
    return dcz_doc_calib_check(d);
}

dcz_status dcz_doc_calib_check(const dcz_doc *d)
{
    return d->calib ? dcz_doc_calib_fits(d, d->calib, 1) : DCZ_OK;
}

dcz_status dcz_doc_calib_fits(const dcz_doc *d, const dcz_doc_calib *c, int int_weights)
{
    if (dcz_scheme_qmax(c->scheme) == 0 || c->count == 0) return DCZ_ERR_FORMAT;
    if (c->ntensors && (c->ntensors != d->nlayers + 1 || !c->t_scale)) return DCZ_ERR_FORMAT;
    for (uint32_t t = 0; t < c->ntensors; t++)
        if (c->t_scale[t] != 0.0f && !dcz_scale_ok(c->scheme, c->t_scale[t])) return DCZ_ERR_FORMAT;
    uint32_t next = 0, first = UINT32_MAX, last = 0;
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        if (l->op != DCZ_OP_DENSE && l->op != DCZ_OP_CONV2D) continue;
        if (next >= c->count) return DCZ_ERR_FORMAT;
        const dcz_doc_calib_entry *e = &c->e[next++];
        if (e->layer != i || (e->nw != 1 && e->nw != l->t[0].dims[0])) return DCZ_ERR_FORMAT;
        if (!dcz_scale_ok(c->scheme, e->in_scale)) return DCZ_ERR_FORMAT;
        if (c->ntensors && dcz_f32_bits(c->t_scale[l->in[0]]) != dcz_f32_bits(e->in_scale))
            return DCZ_ERR_FORMAT;
        for (uint32_t j = 0; j < e->nw; j++)
            if (!dcz_scale_ok(c->scheme, e->w_scale[j])) return DCZ_ERR_FORMAT;
        const dcz_doc_tensor *w = &l->t[0];
        if (int_weights && DCZ_ENC_IS_INT(w->enc)) {
            if (w->nscale != e->nw) return DCZ_ERR_FORMAT;
            if (dcz_scheme_qmax(c->scheme) == 127 && w->enc == DCZ_ENC_I16) return DCZ_ERR_FORMAT;
            for (uint32_t j = 0; j < e->nw; j++)
                if (dcz_f32_bits(w->scale[j]) != dcz_f32_bits(e->w_scale[j])) return DCZ_ERR_FORMAT;
        }
        if (first == UINT32_MAX) first = i;
        last = i;
    }
    if (next != c->count) return DCZ_ERR_FORMAT;
    for (uint32_t i = first; i < last; i++)
        if (d->layers[i].op == DCZ_OP_SOFTMAX) return DCZ_ERR_FORMAT;
    return DCZ_OK;
}

/* The STAGES section (doc_write.c): u32 record count, u64 file size of each
 * record, u32 text length, then the records' text as one zlib stream, each
 * record starting with a "stage =" line. */

static dcz_status read_stages(const uint8_t *p, size_t len, dcz_doc *d)
{
    dcz_cur cur;
    uint32_t count, text_len;
    uint64_t bytes[DCZ_MAX_STAGES];
    dcz_cur_init(&cur, p, len);
    TRY(dcz_rd_u32(&cur, &count));
    if (count == 0 || count > DCZ_MAX_STAGES) return DCZ_ERR_FORMAT;
    for (uint32_t i = 0; i < count; i++) TRY(dcz_rd_u64(&cur, &bytes[i]));
    TRY(dcz_rd_u32(&cur, &text_len));
    if (text_len == 0 || text_len > DCZ_MAX_STAGE_TEXT) return DCZ_ERR_FORMAT;
    char *text = malloc((size_t)text_len + 1);
    if (!text) return DCZ_ERR_NOMEM;
    uLongf got = text_len;
    uLong zlen = (uLong)(len - cur.pos);
    dcz_status s = DCZ_OK;
    /* the zlib stream must fill the rest of the section exactly */
    if (uncompress2((Bytef *)text, &got, p + cur.pos, &zlen) != Z_OK || got != text_len ||
        zlen != (uLong)(len - cur.pos) ||
        memchr(text, 0, text_len) || strncmp(text, "stage =", 7) != 0)
        s = DCZ_ERR_FORMAT;
    text[text_len] = 0;
    uint32_t i = 0;
    for (const char *r = text; s == DCZ_OK && *r; i++) {
        const char *next = strstr(r + 1, "\nstage =");
        size_t n = next ? (size_t)(next + 1 - r) : strlen(r);
        if (i == count) { s = DCZ_ERR_FORMAT; break; }
        char *rec = malloc(n + 48);
        if (!rec) { s = DCZ_ERR_NOMEM; break; }
        memcpy(rec, r, n);
        rec[n] = 0;
        if (bytes[i]) snprintf(rec + n, 48, "file_bytes = %llu\n", (unsigned long long)bytes[i]);
        s = dcz_doc_add_stage(d, rec);
        free(rec);
        r += n;
    }
    if (s == DCZ_OK && i != count) s = DCZ_ERR_FORMAT;
    free(text);
    return s;
}

dcz_status dcz_doc_read(const void *buf, size_t len, dcz_doc **out)
{
    dcz_container c;
    dcz_graph_walk w;
    *out = NULL;
    TRY(dcz_container_open(buf, len, &c));
    TRY(dcz_graph_begin(&c, &w));
    dcz_doc *d;
    dcz_shape *shapes = malloc(((size_t)w.nlayers + 1) * sizeof *shapes);
    if (!shapes) return DCZ_ERR_NOMEM;
    dcz_status s = dcz_doc_alloc(w.nlayers, &d);
    if (s != DCZ_OK) { free(shapes); return s; }
    d->input_rank = w.input.rank;
    memcpy(d->input_dims, w.input.dims, sizeof w.input.dims);
    d->file_bytes = len;
    shapes[0] = w.input;
    size_t param_bytes = 0;
    const uint64_t by_size = (uint64_t)len * DCZ_DOC_ELEMENTS_PER_BYTE + (1u << 20);
    uint64_t left = by_size < DCZ_DOC_MAX_ELEMENTS ? by_size : DCZ_DOC_MAX_ELEMENTS;
    for (uint32_t i = 0; i < w.nlayers && s == DCZ_OK; i++) {
        dcz_graph_layer g;
        dcz_doc_layer *l = &d->layers[i];
        s = dcz_graph_next(&w, &g);
        if (s != DCZ_OK) break;
        /* the same shape rules as the runtime (load_layer.c) */
        dcz_shape in[DCZ_MAX_INPUTS];
        for (uint32_t k = 0; k < g.nin; k++) in[k] = shapes[g.in[k]];
        s = dcz_op_shape(g.op, g.attr, g.nattr, in, g.nin, &shapes[i + 1]);
        if (s != DCZ_OK) break;
        l->op = g.op;
        memcpy(l->name, g.name, sizeof l->name);
        l->nin = g.nin;
        memcpy(l->in, g.in, sizeof l->in);
        l->nattr = g.nattr;
        memcpy(l->attr, g.attr, sizeof l->attr);
        if (g.param_section != DCZ_NO_SECTION) {
            s = read_layer_params(&c, &g, l, &left);
            param_bytes += l->section_bytes;
        }
    }
    free(shapes);
    if (s == DCZ_OK) s = dcz_graph_end(&w);
    int stage_sections = 0, calib_sections = 0;
    /* the parts from the section table: each section's size, and the zeros
     * between the end of the one before (or of the table) and its offset */
    memset(&d->parts, 0, sizeof d->parts);
    d->parts.header = DCZ_HEADER_BYTES + (size_t)c.nsections * DCZ_SECTION_ENTRY_BYTES;
    uint64_t end = d->parts.header;
    for (uint32_t i = 0; i < c.nsections && s == DCZ_OK; i++) {
        dcz_section sec;
        dcz_container_section(&c, i, &sec);
        dcz_doc_parts_add(&d->parts, sec.type, (size_t)sec.size);
        d->parts.padding += (size_t)(sec.offset - end);   /* the container checked offset >= end */
        end = sec.offset + sec.size;
        if (sec.type == DCZ_SEC_STAGE)
            s = stage_sections++ ? DCZ_ERR_FORMAT
                                 : read_stages(c.base + sec.offset, (size_t)sec.size, d);
        else if (sec.type == DCZ_SEC_CALIB)
            s = calib_sections++ ? DCZ_ERR_FORMAT
                                 : read_calib(c.base + sec.offset, (size_t)sec.size, d);
    }
    if (s == DCZ_OK) {
        const dcz_shape in = { d->input_rank, { d->input_dims[0], d->input_dims[1], d->input_dims[2],
                                                d->input_dims[3] } };
        s = dcz_prep_find(&c, &in, &d->prep, &d->has_prep);
    }
    if (s != DCZ_OK) {
        dcz_doc_free(d);
        return s;
    }
    d->overhead_bytes = len - param_bytes;
    *out = d;
    return DCZ_OK;
}
