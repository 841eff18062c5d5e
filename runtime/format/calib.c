/* calib.c: reading the CALIB section, the calibration table of a model
 * that runs on integers (docs/FORMAT.md, "CALIB section").
 *
 * Layout: u32 scheme, u32 count, u64 model hash, u64 data hash, then count
 * entries of u32 layer, f32 input scale, u32 weight-scale count nw, nw f32
 * weight scales; from format 2.0 on, u32 tensor count and as many f32
 * tensor scales (0 off the integer region). Every scale is checked here; whether entries match the
 * graph (one per weighted layer, in order, nw fitting the layer) is checked
 * by the loader (qload.c) and the toolchain's reader.
 *
 * Checked by tests/unit/test_format.c (round trips, corruption loops) and
 * tests/fuzz/fuzz_dcz.c (calibrated models in the corpus).
 */
#include "runtime/format/format.h"

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

int32_t dcz_scheme_qmax(uint32_t scheme)
{
    switch (scheme) {
    case DCZ_SCHEME_INT8:
    case DCZ_SCHEME_FIXED8: return 127;
    case DCZ_SCHEME_FIXED16: return 32767;
    default: return 0;
    }
}

int dcz_scale_ok(uint32_t scheme, float f)
{
    if (!(f >= DCZ_SCALE_MIN && f <= DCZ_SCALE_MAX)) return 0;
    /* a normal float is a power of two when its 23 mantissa bits are zero */
    return scheme == DCZ_SCHEME_INT8 || (dcz_f32_bits(f) & 0x7FFFFFu) == 0;
}

dcz_status dcz_calib_begin(const uint8_t *p, size_t len, dcz_cur *cur, dcz_calib_head *h)
{
    dcz_cur_init(cur, p, len);
    TRY(dcz_rd_u32(cur, &h->scheme));
    TRY(dcz_rd_u32(cur, &h->count));
    TRY(dcz_rd_u64(cur, &h->model_hash));
    TRY(dcz_rd_u64(cur, &h->data_hash));
    if (dcz_scheme_qmax(h->scheme) == 0) return DCZ_ERR_UNSUPPORTED;
    if (h->count == 0 || h->count > DCZ_MAX_LAYERS) return DCZ_ERR_FORMAT;
    return DCZ_OK;
}

dcz_status dcz_calib_next(dcz_cur *cur, uint32_t scheme, dcz_calib_entry *e)
{
    TRY(dcz_rd_u32(cur, &e->layer));
    TRY(dcz_rd_f32(cur, &e->in_scale));
    TRY(dcz_rd_u32(cur, &e->nw));
    if (!dcz_scale_ok(scheme, e->in_scale) || e->nw == 0 || e->nw > DCZ_MAX_DIM)
        return DCZ_ERR_FORMAT;
    TRY(dcz_rd_bytes(cur, (size_t)e->nw * 4, &e->w_scale));
    for (uint32_t i = 0; i < e->nw; i++)
        if (!dcz_scale_ok(scheme, dcz_f32_from_bits(dcz_le32(e->w_scale + (size_t)i * 4))))
            return DCZ_ERR_FORMAT;
    return DCZ_OK;
}

dcz_status dcz_calib_tensors(dcz_cur *cur, uint32_t scheme, uint32_t *count,
                             const uint8_t **scales)
{
    *count = 0;
    *scales = NULL;
    if (cur->pos == cur->len) return DCZ_OK;
    TRY(dcz_rd_u32(cur, count));
    if (*count == 0 || *count > DCZ_MAX_LAYERS + 1) return DCZ_ERR_FORMAT;
    TRY(dcz_rd_bytes(cur, (size_t)*count * 4, scales));
    for (uint32_t i = 0; i < *count; i++) {
        const float f = dcz_f32_from_bits(dcz_le32(*scales + (size_t)i * 4));
        if (f != 0.0f && !dcz_scale_ok(scheme, f)) return DCZ_ERR_FORMAT;
    }
    return cur->pos == cur->len ? DCZ_OK : DCZ_ERR_FORMAT;
}
