/* calibrate.h: the calibrate stage. From a float model and calibration
 * data it makes the table that lets the runtime run the model on integers
 * (INT8, or dynamic fixed point of 8 or 16 bits), and installs it.
 *
 * 1. dcz_cal_collect: the float model (run by libdcz) over the calibration
 *    samples, twice: the range, then the histogram of |x| of every tensor
 *    (calstats.h). The result depends on the set of
 *    samples only, not on batch size or order.
 * 2. dcz_cal_apply: the scale of every tensor of the integer region by the
 *    chosen method (tensors joined by ops that keep the scale, such as ReLU
 *    and pooling, share one, taken from the statistics of the last of them
 *    a weighted layer reads), per weighted layer the weight scales (per
 *    output channel or per tensor; powers of two for fixed point), then
 *    dcz_cal_install.
 * 3. dcz_cal_install: the table goes into the document (CALIB section) and
 *    dense weights become integers on disk (I8, or I16 for fixed16); sparse
 *    and codebook weights keep their encoding, the runtime makes them
 *    integers at load.
 *
 * The table is keyed by a hash of the model it was made for, the method and
 * a hash of the calibration samples; dcz_cal_table_format and
 * dcz_cal_table_parse move it to and from a readable text file.
 *
 * Checked by tests/unit/test_calibrate.c and tests/cli/calibrate.sh.
 */
#ifndef DCZ_CALIBRATE_H
#define DCZ_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "calibrate/calstats.h"
#include "model/doc.h"
#include "train/train.h"

/* How one weighted layer is calibrated. */
typedef struct dcz_cal_layer_cfg {
    dcz_cal_method method;
    double percentile;        /* DCZ_CAL_PERCENTILE, in (0, 100] */
    int per_channel;          /* weight scales per output channel, else per tensor */
} dcz_cal_layer_cfg;

/* The statistics of a model over a calibration set. */
typedef struct dcz_cal_collect {
    uint32_t count;           /* weighted layers */
    uint32_t *layer;          /* (count) graph index of each */
    uint32_t ntensors;        /* the graph's tensors: its layers + 1 */
    dcz_cal_stats *stats;     /* (ntensors) of each tensor: 0 the input, j + 1 layer j's
                                 output */
    uint64_t model_hash, data_hash;
    size_t samples;
} dcz_cal_collect;

/* A hash of the model d describes (graph and weights as the writer encodes
 * them, without stage records or calibration table). */
dcz_status dcz_cal_model_hash(dcz_doc *d, uint64_t *hash);
/* A hash of samples idx[0 .. n) of data (their floats and labels), the
 * same in any order, into *hash. Fails as dcz_dataset_samples when a
 * streaming set's files cannot be read (the reason in dcz_dataset_error),
 * DCZ_ERR_NOMEM. */
dcz_status dcz_cal_data_hash(const dcz_dataset *data, const size_t *idx, size_t n, uint64_t *hash);

/* Statistics of every tensor of d, run in float by
 * libdcz on samples idx[0 .. n) in batches of `batch`. progress (may be
 * NULL) counts 2 n samples. DCZ_ERR_UNSUPPORTED when d has no weighted
 * layer or a SOFTMAX lies between two, DCZ_ERR_SHAPE when the samples do
 * not fit the model. */
dcz_status dcz_cal_collect_stats(dcz_doc *d, const dcz_dataset *data, const size_t *idx,
                                 size_t n, size_t batch, dcz_progress_fn progress, void *pctx,
                                 dcz_cal_collect *out);
void dcz_cal_collect_free(dcz_cal_collect *c);

/* What calibration chose for one weighted layer. */
typedef struct dcz_cal_result {
    uint32_t layer;
    dcz_cal_choice act;       /* the input's threshold, scale (fl), clipped fraction */
    uint32_t nw;              /* weight scales */
    double w_scale_min, w_scale_max;
    int w_fl_min, w_fl_max;   /* fixed point: fractional lengths of the weights */
    double sqnr_db;           /* dcz_cal_sqnr: output against float, dB */
} dcz_cal_result;

/* Chooses the table for scheme (DCZ_SCHEME_*) from c, weighted layer i
 * configured by cfg[i] (its input's method; a tensor no weighted layer
 * reads takes the method of the next weighted layer), fills res[i]
 * (c->count each), and installs it into d with the scale of every tensor.
 * d must be the document c was collected on. */
dcz_status dcz_cal_apply(dcz_doc *d, uint32_t scheme, const dcz_cal_collect *c,
                         const dcz_cal_layer_cfg *cfg, dcz_cal_result *res);

/* Installs table t into d (t is taken, also on failure): replaces any
 * earlier table and re-encodes dense weights as integers on the table's
 * weight scales. Every check comes first: DCZ_ERR_FORMAT when t does not fit
 * d's graph (dcz_doc_calib_fits), and d is then unchanged. A table that fits
 * may still be one the runtime refuses to run (sums beyond the accumulator's
 * range, docs/FORMAT.md); writers load their output once to find out. */
dcz_status dcz_cal_install(dcz_doc *d, dcz_doc_calib *t);

/* Signal-to-quantization-noise ratio of each weighted layer's output,
 * in dB: the integer model in qbuf against the float model in fbuf, on
 * samples idx[0 .. n). sqnr receives c->count values (the order of the
 * weighted layers); infinity where the outputs are equal. */
dcz_status dcz_cal_sqnr(const uint8_t *fbuf, size_t flen, const uint8_t *qbuf, size_t qlen,
                        const dcz_dataset *data, const size_t *idx, size_t n, size_t batch,
                        uint32_t count, double *sqnr);

/* ---- the table as text ----------------------------------------------------
 * "key = value" lines: scheme, method, model_hash, data_hash, samples, then
 * per weighted layer a "[name]" line followed by index, in_scale and
 * w_scale (scales as C hexadecimal floats, exact; decimal in comments). */

/* A malloc'd text of d's table; method names how it was made. */
dcz_status dcz_cal_table_format(const dcz_doc *d, const char *method, size_t samples,
                                char **text);
/* Parses text into a new table for d: layer names and indexes must be d's
 * weighted layers. method (mlen bytes) receives the method line, *samples
 * (may be NULL) the samples line (0 if absent). A '#' starts a comment at
 * the start of a line or after a space or tab. On failure err says which
 * line is wrong; DCZ_ERR_DATA. */
dcz_status dcz_cal_table_parse(const char *text, const dcz_doc *d, dcz_doc_calib **out,
                               char *method, size_t mlen, size_t *samples, char *err,
                               size_t errlen);

/* Names: "int8", "fixed8", "fixed16" and the methods ("percentile" alone
 * for any percentile). */
const char *dcz_cal_scheme_name(uint32_t scheme);
uint32_t dcz_cal_scheme_parse(const char *name);   /* 0 if unknown */
const char *dcz_cal_method_name(dcz_cal_method m);

#endif /* DCZ_CALIBRATE_H */
